"""soak.py MODELFS EXAMPLES CLIENTS REQUESTS RELOADS [KILLS]

Soak test (issue 17): mount a copy of EXAMPLES with the daemon MODELFS,
run CLIENTS client processes of REQUESTS add_sub requests each, half
through request directories and half through `infer`, every result
checked (OUTPUT0 = a + b, OUTPUT1 = a - b); meanwhile reload add_sub
RELOADS times (its config rewritten) and SIGKILL KILLS clients mid-run
(each is replaced by a fresh one, so CLIENTS x REQUESTS checked results
are still required).  The daemon's RSS and open fds are taken after a
warm-up and at the end: they must stay flat (RSS within 64 MiB, fds
within 16).  Ends with "N passed, M failed" (one check per line).
`make soak` runs 16 x 10000 with 100 reloads; tests/run-all.sh 16 x 200
with 5."""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

modelfs, examples, n_clients, n_req, n_reloads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
n_kills = int(sys.argv[6]) if len(sys.argv) > 6 else max(1, n_clients // 4)
# Kills happen every 5 s while clients run: a short run gets fewer.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_lib  # noqa: E402  (the client, the tally, the daemon's status)

LIB = os.path.abspath(soak_lib.__file__)
tally = soak_lib.Tally()
result, status = tally.result, soak_lib.daemon_status

# SIGTERM (make interrupted, a CI timeout): run the finally below, which
# stops the clients and unmounts.
signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
clients = {}
tmp = tempfile.mkdtemp(prefix="soak.")
repo, mnt = os.path.join(tmp, "repo"), os.path.join(tmp, "mnt")
os.mkdir(repo)
os.mkdir(mnt)
shutil.copytree(os.path.join(examples, "add_sub"), os.path.join(repo, "add_sub"))
log_path = os.path.join(tmp, "daemon.log")
daemon = soak_lib.start_daemon(modelfs, ["--reload-quiet-ms=50"], repo, mnt, log_path)
try:
    result(os.path.ismount(mnt), "mounted")
    warm = subprocess.run([sys.executable, LIB, mnt, "999", "20"], capture_output=True, text=True)
    result(warm.returncode == 0 and '"bad": 0' in warm.stdout, "warm-up: 20 requests")
    rss0, fds0 = status(daemon.pid)

    def spawn(cid):
        return subprocess.Popen([sys.executable, LIB, mnt, str(cid), str(n_req)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    clients = {c: spawn(c) for c in range(n_clients)}
    cfg = os.path.join(repo, "add_sub", "config.pbtxt")
    original = open(cfg).read()
    rng = random.Random(17)
    # Spread over the run: a reload every ~REQUESTS/20/RELOADS s (a
    # client does about 20 requests a second here, 16 at once), a kill
    # every 5 s while clients run.
    reload_every = max(0.3, n_req / 20.0 / max(n_reloads, 1))
    t0 = time.time()
    reloads = kills = 0
    next_reload, next_kill = t0 + reload_every, t0 + 2.0
    while any(p.poll() is None for p in clients.values()) or reloads < n_reloads:
        time.sleep(0.1)
        now = time.time()
        if reloads < n_reloads and now >= next_reload:
            reloads += 1
            next_reload = now + reload_every
            with open(cfg, "w") as f:   # same model, new config bytes: a reload
                f.write(original + "\n# reload %d\n" % reloads)
        running = [c for c, p in clients.items() if p.poll() is None]
        if kills < n_kills and running and now >= next_kill:
            kills += 1
            next_kill = now + 5.0
            c = rng.choice(running)
            clients[c].send_signal(signal.SIGKILL)
            clients[c].wait()
            clients[c] = spawn(c + 1000 * kills)   # a fresh client, full count
    checked = bad = 0
    for c, p in clients.items():
        out, err = p.communicate()
        try:
            r = json.loads(out.strip().splitlines()[-1])
            checked += r["done"]
            bad += r["bad"]
        except (ValueError, IndexError):
            bad += 1
            print("client %d: exit %s, %s" % (c, p.returncode, err[-400:]))
    secs = time.time() - t0
    result(checked >= n_clients * n_req and bad == 0,
           "%d results checked, %d wrong (%d clients x %d, %d killed and replaced), %.1f s"
           % (checked, bad, n_clients, n_req, kills, secs))
    metrics = open(os.path.join(mnt, ".metrics")).read()
    loads = sum(float(l.split()[-1]) for l in metrics.splitlines()
                if l.startswith("nv_model_load_total "))
    result(loads >= 1 + n_reloads // 2, "add_sub loaded %d times for %d config rewrites" % (loads, n_reloads))
    time.sleep(1.5)   # abandoned request directories of killed clients stay until the TTL
    rss1, fds1 = status(daemon.pid)
    result(rss1 - rss0 < 64 * 1024, "RSS %d KiB after warm-up, %d KiB at the end" % (rss0, rss1))
    result(fds1 - fds0 <= 16, "open fds %d after warm-up, %d at the end" % (fds0, fds1))
finally:
    for p in clients.values():
        if p.poll() is None:
            p.kill()
            p.wait()
    soak_lib.stop_daemon(daemon, mnt, log_path, tally)
    shutil.rmtree(tmp, ignore_errors=True)
tally.finish()

"""hostile_soak.py MODELFS EXAMPLES FAULT_LIB DURATION [CLIENTS]

Hostile soak (issue 32), as root: for DURATION seconds a mount with
`-o allow_other --model-control=explicit` serves
  add_sub     (examples/add_sub) to CLIENTS normal clients (root), half
              through request directories, half through `infer`;
  fault       a custom backend, FAULT_LIB (tests/backends/fault.c), to a
              hostile client that cycles through its fault modes (crash,
              segfault, hang, a child left holding the socket, shared
              memory shrunk under the daemon, truncated, oversized and
              forged messages, exit mid-run, death between requests):
              each of those must end, within the backend time limits
              (--backend-exec-timeout=2 --backend-init-timeout=5), with
              an errno (or, for the modes that answer first, the right
              answer), and the normal request on `fault` that follows
              each must succeed;
  fault_hang  the same backend with an init that never returns: the
              hostile client's `echo load` must fail within the limit;
  add_sub_b   a second add_sub that a loader loads and unloads through
              its control file all along, one checked request while
              loaded;
and a client of uid 65534 (a forked child that drops to it) fills its
share of add_sub's request directories (--max-requests-per-uid: the next
mkdir is ENOSPC, while root's clients go on), links inputs into /proc
(refused, EACCES) and does normal checked requests.  Every normal
request (root's and uid 65534's) must succeed with the right result.
The daemon's RSS and open fds are taken after a warm-up (60 s, less in
a short run) and every minute: at the end RSS is within 64 MiB and fds
within 16 of the warm values.  No worker process outlives the unmount.
Ends with "N passed, M failed" (one check a line).  `make soak-hostile`
runs 1800 s; DURATION=60 is a quick try."""
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak_lib  # noqa: E402

modelfs, examples, fault_lib, duration = sys.argv[1:5]
modelfs, duration = os.path.abspath(modelfs), float(duration)
n_clients = int(sys.argv[5]) if len(sys.argv) > 5 else 4
MAX_REQUESTS, PER_UID = 64, 8
EXEC_TIMEOUT, INIT_TIMEOUT = 2, 5
# A hostile request or load must be over within this (the limits, a
# worker's restart and its backoff, on a loaded 2-core machine).
HOSTILE_BOUND = 30
NOBODY = 65534
tally = soak_lib.Tally()
result = tally.result

# X[0] of a request on `fault` -> what its read must give: an errno name,
# "2X" (the right answer) or "2X|EIO" (either).  Not -1's text, checked
# by tests/e2e/backends.bats; here only that it fails cleanly.
MODES = [(-1, "EIO"), (-2, "EIO"), (-3, "EIO"), (-4, "EIO"), (-5, "EIO"), (-6, "ETIMEDOUT"),
         (-7, "EIO"), (-8, "2X|EIO"), (-9, "EIO"), (-10, "EIO"), (-11, "EIO"), (-12, "EIO"),
         (-13, "EIO"), (-14, "2X")]


def fault_config(params):
    text = ('backend: "fault"\n'
            'input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]\n'
            'output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]\n')
    for p in params:
        text += 'parameters { key: "%s" value { string_value: "1" } }\n' % p
    return text


def make_repo(repo):
    os.mkdir(repo)
    for name in ("add_sub", "add_sub_b"):
        shutil.copytree(os.path.join(examples, "add_sub"), os.path.join(repo, name))
    cfg = os.path.join(repo, "add_sub_b", "config.pbtxt")
    text = open(cfg).read().replace('name: "add_sub"', 'name: "add_sub_b"', 1)
    with open(cfg, "w") as f:
        f.write(text)
    for name, params in (("fault", []), ("fault_hang", ["hang_init"])):
        os.makedirs(os.path.join(repo, name, "1"))
        with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
            f.write(fault_config(params))
        shutil.copy(fault_lib, os.path.join(repo, name, "1"))


def workers(pid):
    """The daemon's children that are backend workers (their pids),
    those that died and wait for the daemon's reap included."""
    found = []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % p).read()
            cmd = open("/proc/%s/cmdline" % p, "rb").read()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        # An exiting worker has no command line left (its memory is
        # gone before it is a zombie): still a worker to wait for.
        if int(ppid) == pid and (b"--backend-worker" in cmd or not cmd or state == "Z"):
            found.append(int(p))
    return found


def dead(pid):
    """pid has exited, every thread of it (a zombie whose threads are
    gone, or reaped): what the daemon's pidfd reports as an exit."""
    try:
        state = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
        return state == "Z" and len(os.listdir("/proc/%d/task" % pid)) <= 1
    except OSError:
        return True


def shrunk(pid):
    """Worker pid's shared memory is cut to nothing (-8 has acted), or
    the worker is gone."""
    try:
        for fd in os.listdir("/proc/%d/fd" % pid):
            path = "/proc/%d/fd/%s" % (pid, fd)
            if "memfd:modelfs-backend" in os.readlink(path) and os.stat(path).st_size > 0:
                return False
    except OSError:
        pass
    return True


def ours(pids):
    """Those of PIDS still running this modelfs (not a zombie, not a reused pid)."""
    alive = []
    for p in pids:
        try:
            state = open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[0]
            cmd = open("/proc/%d/cmdline" % p, "rb").read().split(b"\0")[0]
        except OSError:
            continue
        if state != "Z" and os.path.realpath(cmd.decode()) == modelfs:
            alive.append(p)
    return alive


def leftovers():
    """Processes still running this modelfs with a backend of this soak's
    repository mapped (a worker, or a child a backend forked; not those
    of another soak or test): none may outlive the daemon."""
    found = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.path.realpath("/proc/%s/exe" % p) == modelfs and \
                    repo + "/" in open("/proc/%s/maps" % p).read():
                found.append(int(p))
        except OSError:
            pass
    return ours(found)


def read_errno(path):
    """PATH's text, or the errno name its read failed with."""
    try:
        return open(path).read().strip()
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))


def forked(fn, *args, uid=None):
    """Run fn(*args) in a child (as UID when given); returns (pid, read
    end of a pipe that gets fn's JSON result)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            out = fn(*args)
        except BaseException as e:   # a child reports, never returns to the parent's code
            out, code = {"crashed": repr(e)}, 1
        os.write(w, json.dumps(out).encode())
        os._exit(code)
    os.close(w)
    return pid, r


def collect(pid, r):
    data = soak_lib.read_all(r)
    os.close(r)
    os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        return {"crashed": "no result"}


def normal_client(mnt, cid, until):
    return soak_lib.client(mnt, cid, 0, until)


def fault_request(mnt, x0, n):
    """X = [x0, 1, 2.., n-1] on `fault`: (Y's text or errno name, seconds)."""
    d = os.path.join(mnt, "fault", "requests", "h%d_%d" % (os.getpid(), time.monotonic_ns()))
    os.mkdir(d)
    t0 = time.time()
    try:
        with open(os.path.join(d, "X.txt"), "w") as f:
            f.write(" ".join(str(v) for v in [x0] + list(range(1, n))))
        # A read that hangs is cut by the alarm, and counted as a hang.
        signal.alarm(HOSTILE_BOUND + 30)
        out = read_errno(os.path.join(d, "Y.txt"))
        signal.alarm(0)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return out, time.time() - t0


def alarmed(*_):
    raise TimeoutError("hung")


def hostile_client(mnt, daemon_pid, until):
    """Fault modes in turn, each followed by a normal request on `fault`;
    every 7th turn a load of fault_hang."""
    signal.signal(signal.SIGALRM, alarmed)
    st = {"hostile": 0, "hostile_bad": 0, "normal": 0, "normal_bad": 0, "loads": 0,
          "loads_bad": 0, "slowest": 0.0, "errors": []}

    def bad(kind, what):
        st[kind] += 1
        if len(st["errors"]) < 20:
            st["errors"].append(what)
        print("hostile client:", what, file=sys.stderr, flush=True)
    turn = 0
    while time.time() < until:
        x0, want = MODES[turn % len(MODES)]
        try:
            out, secs = fault_request(mnt, x0, 4)
        except (OSError, TimeoutError) as e:
            out, secs = "raised %r" % e, HOSTILE_BOUND + 1
        st["hostile"] += 1
        st["slowest"] = max(st["slowest"], secs)
        answer = " ".join("%g" % (2 * v) for v in [x0, 1, 2, 3])
        ok = out in [answer if w == "2X" else w for w in want.split("|")]
        if not ok or secs > HOSTILE_BOUND:
            bad("hostile_bad", "X[0] = %d: %r after %.1f s, expected %s" % (x0, out, secs, want))
        # -14's worker dies just after its answer, -8's cuts its shared
        # memory: a request sent before that happened would meet it (the
        # backend failing its own next request, -2's or -5's case).  Let
        # it act first.  (A zombie leader whose other threads still exit
        # is not yet an exit to the daemon's pidfd: wait for all.)
        t0, answered = time.time(), workers(daemon_pid)
        done = {-14: dead, -8: shrunk}.get(x0)
        while done and not all(done(p) for p in answered) and time.time() < t0 + 10:
            time.sleep(0.05)
        try:
            out, secs = fault_request(mnt, turn % 50, 4)
        except (OSError, TimeoutError) as e:
            out = "raised %r" % e
        st["normal"] += 1
        want_y = " ".join("%g" % (2 * v) for v in [turn % 50, 1, 2, 3])
        if out != want_y:
            bad("normal_bad", "normal request on fault after X[0] = %d: %r, expected %r" % (x0, out, want_y))
        if turn % 7 == 6:
            t0 = time.time()
            try:
                signal.alarm(HOSTILE_BOUND + 30)
                with open(os.path.join(mnt, "fault_hang", "control"), "w") as f:
                    f.write("load\n")
                signal.alarm(0)
                loaded = "the load of fault_hang succeeded"
            except (OSError, TimeoutError) as e:
                signal.alarm(0)
                loaded = None if isinstance(e, OSError) else "the load of fault_hang hung"
            st["loads"] += 1
            secs = time.time() - t0
            if loaded or secs > HOSTILE_BOUND:
                bad("loads_bad", "%s after %.1f s" % (loaded or "the load failed", secs))
        turn += 1
    return st


def loader(mnt, until):
    """Load add_sub_b, one checked request, unload; again."""
    st = {"cycles": 0, "bad": 0, "errors": []}
    control = os.path.join(mnt, "add_sub_b", "control")
    k = 0
    while time.time() < until:
        why = None
        try:
            with open(control, "w") as f:
                f.write("load\n")
            why = soak_lib.add_sub_request(mnt, "add_sub_b", 500, k)
            with open(control, "w") as f:
                f.write("unload\n")
        except OSError as e:
            why = "load/unload of add_sub_b: %s" % e
        k += 1
        st["cycles"] += 1
        if why:
            st["bad"] += 1
            if len(st["errors"]) < 20:
                st["errors"].append(why)
            print("loader:", why, file=sys.stderr, flush=True)
            time.sleep(0.5)   # not a storm of failures in the log
    return st


def nobody_client(mnt, daemon_pid, until):
    """uid 65534: its share of request directories (the next is ENOSPC),
    inputs linked into /proc (EACCES), and normal checked requests."""
    st = {"normal": 0, "normal_bad": 0, "share_rounds": 0, "share_bad": 0,
          "proc_links": 0, "proc_bad": 0, "errors": []}

    def bad(kind, what):
        st[kind] += 1
        if len(st["errors"]) < 20:
            st["errors"].append(what)
        print("uid %d:" % NOBODY, what, file=sys.stderr, flush=True)
    reqs = os.path.join(mnt, "add_sub", "requests")
    k = 0
    while time.time() < until:
        # The share: PER_UID directories, then ENOSPC.
        made = []
        try:
            for i in range(PER_UID):
                d = os.path.join(reqs, "share%d_%d" % (k, i))
                os.mkdir(d)
                made.append(d)
            try:
                os.mkdir(os.path.join(reqs, "share%d_over" % k))
                made.append(os.path.join(reqs, "share%d_over" % k))
                bad("share_bad", "mkdir %d of --max-requests-per-uid=%d succeeded" % (PER_UID + 1, PER_UID))
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    bad("share_bad", "mkdir past the share: %s, expected ENOSPC" % e)
            # Links into /proc, while holding the share: refused.
            for target in ("/proc/self/status", "/proc/self/fd/%d" % (3 + k % 20), "/dev/fd/5",
                           "/proc/%d/maps" % daemon_pid):
                st["proc_links"] += 1
                try:
                    os.symlink(target, os.path.join(made[0], "INPUT0.txt"))
                    bad("proc_bad", "link to %s accepted" % target)
                except OSError as e:
                    # ENOENT: a descriptor the daemon has not open at that
                    # moment (refused too, but the errno tells the client
                    # which descriptors the daemon has: counted apart).
                    if e.errno == errno.ENOENT and "/fd/" in target:
                        st["proc_enoent"] = st.get("proc_enoent", 0) + 1
                    elif e.errno != errno.EACCES:
                        bad("proc_bad", "link to %s: %s, expected EACCES" % (target, e))
        except OSError as e:
            bad("share_bad", "mkdir %d of the share: %s" % (len(made) + 1, e))
        for d in made:
            shutil.rmtree(d, ignore_errors=True)
        st["share_rounds"] += 1
        # Normal requests, with the share given back.
        for _ in range(10):
            why = soak_lib.add_sub_request(mnt, "add_sub", 700, k)
            k += 1
            st["normal"] += 1
            if why:
                bad("normal_bad", why)
    return st


def sample(daemon, samples):
    rss, fds = soak_lib.daemon_status(daemon.pid)
    samples.append((round(time.time() - T0), rss, fds, len(workers(daemon.pid))))
    print("sample: %4d s  RSS %d KiB  fds %d  workers %d" % samples[-1], flush=True)


# SIGTERM (make interrupted): run the finally below, which stops the
# children and unmounts.
signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
tmp = tempfile.mkdtemp(prefix="hsoak.")
os.chmod(tmp, 0o755)   # uid 65534 must reach the mountpoint
repo, mnt = os.path.join(tmp, "repo"), os.path.join(tmp, "mnt")
os.mkdir(mnt)
make_repo(repo)
log_path = os.path.join(tmp, "daemon.log")
daemon = soak_lib.start_daemon(modelfs, [
    "-o", "allow_other", "--model-control=explicit", "--load-model=add_sub", "--load-model=fault",
    "--max-requests=%d" % MAX_REQUESTS, "--max-requests-per-uid=%d" % PER_UID,
    "--backend-exec-timeout=%d" % EXEC_TIMEOUT, "--backend-init-timeout=%d" % INIT_TIMEOUT],
    repo, mnt, log_path)
children = []
seen_workers = set()
T0 = time.time()
try:
    result(os.path.ismount(mnt), "mounted")
    until = T0 + duration
    warm_at = T0 + min(60.0, duration / 4)
    every = min(60.0, duration / 6)
    children = [("client %d" % c, forked(normal_client, mnt, c, until)) for c in range(n_clients)]
    children.append(("hostile", forked(hostile_client, mnt, daemon.pid, until)))
    children.append(("loader", forked(loader, mnt, until)))
    children.append(("uid 65534", forked(nobody_client, mnt, daemon.pid, until, uid=NOBODY)))
    samples = []
    next_sample = warm_at
    while time.time() < until:
        time.sleep(1)
        seen_workers.update(workers(daemon.pid))
        if time.time() >= next_sample and daemon.poll() is None:
            sample(daemon, samples)
            next_sample += every
    outs = {name: collect(pid, r) for name, (pid, r) in children}
    children = []
    checked = bad = 0
    for name, o in outs.items():
        if name.startswith("client"):
            checked += o.get("done", 0)
            bad += o.get("bad", 0) + ("crashed" in o)
    result(bad == 0 and checked > 0,
           "root: %d add_sub results checked (%d clients), %d wrong or failed" % (checked, n_clients, bad))
    h = outs["hostile"]
    result("crashed" not in h and h["hostile"] >= len(MODES) and h["hostile_bad"] == 0,
           "hostile: %d fault-mode requests, %d not failed cleanly (slowest %.1f s) %s"
           % (h.get("hostile", 0), h.get("hostile_bad", 0), h.get("slowest", 0), h.get("crashed", "")))
    result("crashed" not in h and h["normal_bad"] == 0,
           "hostile: %d normal requests on the fault backend, %d wrong or failed"
           % (h.get("normal", 0), h.get("normal_bad", 0)))
    result("crashed" not in h and h["loads"] > 0 and h["loads_bad"] == 0,
           "hostile: %d loads of a backend whose init hangs, %d not failed within %d s"
           % (h.get("loads", 0), h.get("loads_bad", 0), HOSTILE_BOUND))
    ld = outs["loader"]
    result("crashed" not in ld and ld["cycles"] > 0 and ld["bad"] == 0,
           "loader: %d load / checked request / unload cycles of add_sub_b, %d failed %s"
           % (ld.get("cycles", 0), ld.get("bad", 0), ld.get("crashed", "")))
    nb = outs["uid 65534"]
    result("crashed" not in nb and nb["normal"] > 0 and nb["normal_bad"] == 0,
           "uid 65534: %d add_sub results checked, %d wrong or failed %s"
           % (nb.get("normal", 0), nb.get("normal_bad", 0), nb.get("crashed", "")))
    result("crashed" not in nb and nb["share_rounds"] > 0 and nb["share_bad"] == 0,
           "uid 65534: %d times its share of %d request directories, then ENOSPC; %d wrong"
           % (nb.get("share_rounds", 0), PER_UID, nb.get("share_bad", 0)))
    result("crashed" not in nb and nb["proc_links"] > 0 and nb["proc_bad"] == 0,
           "uid 65534: %d inputs linked into /proc refused (EACCES; ENOENT for %d links to a "
           "descriptor the daemon had not open), %d not"
           % (nb.get("proc_links", 0), nb.get("proc_enoent", 0), nb.get("proc_bad", 0)))
    for o in outs.values():
        for e in o.get("errors", []):
            print("  ", e)
    time.sleep(2)
    sample(daemon, samples)
    (_, rss0, fds0, _), (_, rss1, fds1, _) = samples[0], samples[-1]
    result(rss1 - rss0 < 64 * 1024, "RSS %d KiB after warm-up, %d KiB at the end (max %d)"
           % (rss0, rss1, max(s[1] for s in samples)))
    result(fds1 - fds0 <= 16, "open fds %d after warm-up, %d at the end (max %d)"
           % (fds0, fds1, max(s[2] for s in samples)))
    result(True, "%d worker processes seen over the run, %d alive before the unmount"
           % (len(seen_workers), len(workers(daemon.pid))))
    seen_workers.update(workers(daemon.pid))
finally:
    for name, (pid, r) in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        collect(pid, r)
    soak_lib.stop_daemon(daemon, mnt, log_path, tally)
    t0 = time.time()
    while leftovers() and time.time() < t0 + 10:
        time.sleep(0.1)
    left = leftovers()
    result(not left, "no worker left after the unmount %s" % (left or ""))
    if tally.failed:
        print("daemon log kept:", log_path)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
tally.finish()

"""soak_lib.py: what the soaks share (tests/soak/soak.py, hostile_soak.py):
add_sub requests with every result checked, the pass/fail tally, the
daemon's RSS and open fds, starting and stopping the daemon.

Run as a script it is a soak client:
    soak_lib.py MOUNT CID N [UNTIL]
does N add_sub requests (and more until the epoch time UNTIL, when
given), odd ones through a request directory, even ones through `infer`,
each result checked (OUTPUT0 = a + b, OUTPUT1 = a - b), and prints
{"done": D, "bad": B} as its last line; what went wrong goes to stderr."""
import json
import os
import shutil
import subprocess
import sys
import time


def operands(cid, k):
    """Request k of client cid: 16 values each, different per client."""
    a = [float((cid * 7 + k + i) % 97) for i in range(16)]
    b = [float((k * 3 + i) % 89) / 4 for i in range(16)]
    return a, b


def right(a, b, o0, o1):
    return [round(x, 3) for x in o0] == [round(x + y, 3) for x, y in zip(a, b)] and \
        [round(x, 3) for x in o1] == [round(x - y, 3) for x, y in zip(a, b)]


def via_directory(mnt, model, name, a, b):
    """One run through MOUNT/MODEL/requests/NAME: its (OUTPUT0, OUTPUT1)."""
    d = os.path.join(mnt, model, "requests", name)
    os.mkdir(d)
    try:
        with open(os.path.join(d, "INPUT0.txt"), "w") as f:
            f.write(" ".join(map(str, a)))
        with open(os.path.join(d, "INPUT1.txt"), "w") as f:
            f.write(" ".join(map(str, b)))
        o0 = [float(x) for x in open(os.path.join(d, "OUTPUT0.txt")).read().split()]
        o1 = [float(x) for x in open(os.path.join(d, "OUTPUT1.txt")).read().split()]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return o0, o1


def read_all(fd):
    """What fd gives until its end."""
    chunks = []
    while True:
        c = os.read(fd, 1 << 16)
        if not c:
            return b"".join(chunks)
        chunks.append(c)


def via_infer(mnt, model, a, b):
    """One run through MOUNT/MODEL/infer: its (OUTPUT0, OUTPUT1); an error
    object raises RuntimeError with its text."""
    req = json.dumps({"inputs": [
        {"name": "INPUT0", "shape": [16], "datatype": "FP32", "data": a},
        {"name": "INPUT1", "shape": [16], "datatype": "FP32", "data": b}]}).encode()
    fd = os.open(os.path.join(mnt, model, "infer"), os.O_RDWR)
    try:
        os.write(fd, req)
        r = json.loads(read_all(fd))
    finally:
        os.close(fd)
    if "error" in r:
        raise RuntimeError("infer error: %s" % r["error"])
    outs = {o["name"]: o["data"] for o in r["outputs"]}
    return outs["OUTPUT0"], outs["OUTPUT1"]


def add_sub_request(mnt, model, cid, k):
    """Request k of client cid on MODEL (an add_sub): None when its result
    is right, else what went wrong."""
    a, b = operands(cid, k)
    how = "request directory" if k % 2 else "infer"
    try:
        if k % 2:
            o0, o1 = via_directory(mnt, model, "c%d_%d" % (cid, k), a, b)
        else:
            o0, o1 = via_infer(mnt, model, a, b)
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        return "%s via %s: %s" % (model, how, e)
    if not right(a, b, o0, o1):
        return "%s: wrong result via %s: %s %s" % (model, how, o0[:3], o1[:3])
    return None


def client(mnt, cid, n, until=None, model="add_sub"):
    """Requests 0.. of client cid: n of them, and more until UNTIL."""
    done = bad = 0
    while done < n or (until is not None and time.time() < until):
        why = add_sub_request(mnt, model, cid, done)
        done += 1
        if why:
            bad += 1
            print(why, file=sys.stderr)
    return {"done": done, "bad": bad}


class Tally:
    """One check a line ("ok: ..." or "FAILED: ..."), and the summary."""

    def __init__(self):
        self.passed = self.failed = 0

    def result(self, ok, what):
        if ok:
            self.passed += 1
            print("ok:", what, flush=True)
        else:
            self.failed += 1
            print("FAILED:", what, flush=True)

    def finish(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed else 0)


def daemon_status(pid):
    """The daemon's RSS in KiB and its number of open fds."""
    vals = {}
    for line in open("/proc/%d/status" % pid):
        k, _, v = line.partition(":")
        vals[k] = v.split()
    return int(vals["VmRSS"][0]), len(os.listdir("/proc/%d/fd" % pid))


def start_daemon(modelfs, args, repo, mnt, log_path):
    """modelfs -f ARGS REPO MNT, its stderr to LOG_PATH; waits (15 s at
    most) for the mount, then (300 s at most) for the first load to end:
    the mount is there before the models have loaded.  Under ASan, freed memory waits in a quarantine
    (256 MiB by default) before reuse: kept small, so that "RSS flat"
    still means something."""
    env = dict(os.environ, ASAN_OPTIONS="quarantine_size_mb=16:" + os.environ.get("ASAN_OPTIONS", ""))
    with open(log_path, "w") as log:
        daemon = subprocess.Popen([modelfs, "-f"] + args + [repo, mnt], stderr=log, env=env)
    for _ in range(300):
        if os.path.ismount(mnt):
            break
        time.sleep(0.05)
    for _ in range(6000):
        try:
            if '"LOADING"' not in open(os.path.join(mnt, ".index.json")).read():
                break
        except OSError:
            break
        time.sleep(0.05)
    return daemon


def stop_daemon(daemon, mnt, log_path, tally):
    """Unmount, wait for the daemon (30 s at most) and check it exited 0
    without a sanitizer report; prints the log's tail on any failure."""
    subprocess.run(["fusermount3", "-u", mnt])
    try:
        rc = daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        rc = -9
    text = open(log_path).read()
    tally.result(rc == 0 and "Sanitizer" not in text and "runtime error" not in text,
                 "daemon exited %d without a sanitizer report" % rc)
    if tally.failed:
        print(text[-3000:])


if __name__ == "__main__":
    until = float(sys.argv[4]) if len(sys.argv) > 4 else None
    print(json.dumps(client(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), until)))

"""The filesystem's own cost, measured from a client: round trips on the
tiny add_sub model's tree (or the bare baseline's, bench/bare_fs.c).

usage: /usr/bin/python3 bench/bench_fs.py DIR [N]
       /usr/bin/python3 bench/bench_fs.py --pair DIR_A DIR_B [N]
DIR holds `infer` and `requests/` (MOUNT/add_sub for modelfs, MOUNT for
bare_fs).  Prints one JSON object: median microseconds of
  infer_us        write a KServe JSON request, read the answer, read EOF
                  (one fd kept open)
  reqdir_us       a reused request directory: open-write-close INPUT0.npy
                  and INPUT1.npy, open-read-close OUTPUT0.npy
--pair times N cycles of each on two trees in blocks of 25 that
alternate (A B B A A B ...), so that both see the same drift of the
machine's speed, and prints {"a": {...}, "b": {...}} (make bench-fs).
bench/fs-profile.sh imports the two cycles (cycles())."""
import io
import json
import os
import sys
import time

import numpy as np


def cycles(d, what):
    """One cycle of `what` ("infer" or "reqdir") on DIR d, as a function
    (its file descriptor or request directory made here), and a closer."""
    a = np.arange(16, dtype=np.float32)
    if what == "infer":
        req = json.dumps({"inputs": [
            {"name": "INPUT0", "shape": [16], "datatype": "FP32", "data": a.tolist()},
            {"name": "INPUT1", "shape": [16], "datatype": "FP32", "data": a.tolist()}]}).encode()
        fd = os.open(d + "/infer", os.O_RDWR)

        def infer():
            os.write(fd, req)
            os.read(fd, 65536)
            os.read(fd, 65536)
        return infer, lambda: os.close(fd)
    rdir = d + "/requests/bench%d" % os.getpid()
    os.mkdir(rdir)
    buf = io.BytesIO()
    np.save(buf, a)
    npy = buf.getvalue()

    def reqdir():
        for n in ("INPUT0.npy", "INPUT1.npy"):
            f = os.open(rdir + "/" + n, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.write(f, npy)
            os.close(f)
        f = os.open(rdir + "/OUTPUT0.npy", os.O_RDONLY)
        os.read(f, 1 << 16)
        os.close(f)
    return reqdir, lambda: os.rmdir(rdir) if not os.listdir(rdir) else None


def median_us(fn, n):
    for _ in range(min(50, n)):
        fn()
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts) * 1e6)


def pair_us(fa, fb, n, block=25):
    """Medians (us) of n cycles of fa and of fb, timed in alternating
    blocks."""
    for _ in range(min(50, n)):
        fa()
        fb()
    ta, tb = [], []
    k = 0
    while len(ta) < n:
        order = ((fa, ta), (fb, tb)) if k % 2 == 0 else ((fb, tb), (fa, ta))
        for fn, ts in order:
            for _ in range(block):
                t = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t)
        k += 1
    return float(np.median(ta) * 1e6), float(np.median(tb) * 1e6)


if __name__ == "__main__" and sys.argv[1] == "--pair":
    a, b = sys.argv[2], sys.argv[3]
    N = int(sys.argv[4]) if len(sys.argv) > 4 else 2000
    res = {"a": {}, "b": {}}
    for what in ("infer", "reqdir"):
        fa, ca = cycles(a, what)
        fb, cb = cycles(b, what)
        ma, mb = pair_us(fa, fb, N)
        res["a"][what + "_us"] = round(ma, 1)
        res["b"][what + "_us"] = round(mb, 1)
        ca()
        cb()
    print(json.dumps(res))
elif __name__ == "__main__":
    d = sys.argv[1]
    N = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    res = {}
    for what in ("infer", "reqdir"):
        fn, close = cycles(d, what)
        res[what + "_us"] = round(median_us(fn, N), 1)
        close()
    print(json.dumps(res))

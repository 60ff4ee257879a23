"""Random file operations from many processes on a few shared request
names, colliding on purpose: mkdir, rmdir, rm -r, inputs good and bad,
outputs in every format, unlink, rename, listings, infer sessions,
interrupted reads.  Any errno is fine; the daemon must stay up and
correct (the bats test checks that afterwards).  argv: MOUNT SEED OPS"""
import errno
import os
import random
import shutil
import signal
import sys

mnt, seed, ops = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
names = ["c%d" % i for i in range(6)]
good = " ".join(str(i) for i in range(16))
payloads = [good, "1 2 3", "", "x" * 5000, "\x93NUMPY\x01\x00\xff\xff", "[1,2,3]",
            '{"shape":[16],"datatype":"FP32","data":[' + ",".join(["1"] * 16) + "]}"]
exts = ["txt", "json", "npy", "raw", "pb", "bin"]
bodies = ['{"inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[%s]},'
          '{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[%s]}]}' % (",".join(["1"] * 16), ",".join(["2"] * 16)),
          "{", '{"inputs":[]}', "[" * 10000]


def model():
    return rng.choice(["add_sub", "add_sub/1", "mlp"])


def req():
    return "%s/%s/requests/%s" % (mnt, model(), rng.choice(names))


def step():
    k = rng.randrange(12)
    if k == 0:
        os.mkdir(req())
    elif k == 1:
        os.rmdir(req())
    elif k == 2:
        shutil.rmtree(req())
    elif k in (3, 4):
        with open("%s/%s.%s" % (req(), rng.choice(["INPUT0", "INPUT1", "input", "NOPE", ".tmp"]),
                                rng.choice(exts)), "w") as f:
            f.write(rng.choice(payloads))
    elif k == 5:
        signal.setitimer(signal.ITIMER_REAL, rng.choice([0.001, 0.01, 0.05]))
        try:
            with open("%s/%s.%s" % (req(), rng.choice(["OUTPUT0", "OUTPUT1", "probabilities"]),
                                    rng.choice(exts))) as f:
                f.read()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    elif k == 6:
        os.unlink("%s/%s" % (req(), rng.choice(["INPUT0.txt", "status", "error", "OUTPUT0.npy", ".tmp.txt"])))
    elif k == 7:
        r = req()
        os.rename(r + "/.tmp.txt", r + "/" + rng.choice(["INPUT0.txt", "INPUT1.txt", "OUTPUT0.txt", ".x"]))
    elif k == 8:
        r = req()
        for n in os.listdir(r):
            with open(r + "/" + n, "rb") as f:
                f.read(100)
    elif k == 9:
        fd = os.open("%s/%s/infer" % (mnt, model()), os.O_RDWR)
        try:
            for _ in range(rng.randrange(1, 3)):
                os.write(fd, rng.choice(bodies).encode())
                os.read(fd, 1 << 16)
        finally:
            os.close(fd)
    elif k == 10:
        for f in (".index.json", ".metrics", "add_sub/stats.json", "mlp/status"):
            with open(mnt + "/" + f) as fh:
                fh.read()
    else:
        os.stat(req() + "/" + rng.choice(["status", "trace.json", "INPUT0.txt", "nope"]))


def on_alarm(sig, frame):
    raise InterruptedError()


signal.signal(signal.SIGALRM, on_alarm)
for _ in range(ops):
    try:
        step()
    except (OSError, InterruptedError, UnicodeDecodeError):
        pass
print("ok")

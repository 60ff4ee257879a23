"""Round-trip latency through a mount (the filesystem's own cost on the
tiny add_sub model): the infer file (write, read, EOF read on one fd) and a
reused request directory (two .npy inputs written, one output read).
usage: /usr/bin/python3 bench/bench_fs.py MOUNT   (modelfs examples MOUNT)"""
import os, sys, time, json, numpy as np
mnt = sys.argv[1]
a = np.arange(16, dtype=np.float32)
# infer file: one session, N transactions
req = json.dumps({"inputs": [{"name": "INPUT0", "shape": [16], "datatype": "FP32", "data": a.tolist()},
                             {"name": "INPUT1", "shape": [16], "datatype": "FP32", "data": a.tolist()}]}).encode()
fd = os.open(mnt + "/add_sub/infer", os.O_RDWR)
N = 2000
for i in range(50):
    os.write(fd, req); os.read(fd, 65536); os.read(fd, 65536)
t = time.perf_counter()
for i in range(N):
    os.write(fd, req)
    r = os.read(fd, 65536)
    os.read(fd, 65536)
dt = (time.perf_counter() - t) / N
os.close(fd)
print("infer: %.1f us per request (write + read + EOF read)" % (dt * 1e6))
# request dir reused: write 2 npy inputs, read 1 output
d = mnt + "/add_sub/requests/bench%d" % os.getpid()
os.mkdir(d)
import io
buf = io.BytesIO(); np.save(buf, a); b = buf.getvalue()
def one():
    for n in ("INPUT0.npy", "INPUT1.npy"):
        f = os.open(d + "/" + n, os.O_WRONLY | os.O_CREAT | os.O_TRUNC); os.write(f, b); os.close(f)
    f = os.open(d + "/OUTPUT0.npy", os.O_RDONLY); os.read(f, 1 << 16); os.close(f)
for i in range(50): one()
M = 1000
t = time.perf_counter()
for i in range(M): one()
dt = (time.perf_counter() - t) / M
print("request dir (reuse): %.1f us per request (2 inputs written, 1 output read)" % (dt * 1e6))


import shutil; shutil.rmtree(d)

"""A 100 MB input handed over by symlink against cp into the request
directory (SPEC.md section 4, "Inputs by symlink"), same run, rounds
alternating.  Model: bench/make_fs_models.py's big (y = Identity(x),
x FP32 [-1]).  Prints per method the median over the rounds of
  in   the hand-over: `cp FILE $req/x.npy` or `ln -s FILE $req/x.npy`
       until it returns (the input decoded and the run queued)
  all  the hand-over plus `cat $req/y.npy > /dev/null` (the whole request)
and the ratios cp / symlink.  Run as root (FUSE), after `make`:

    /usr/bin/python3 bench/bench_zero_copy.py [ROUNDS]      # default 7
MODELFS picks the daemon binary (default ./modelfs)."""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
tmp = tempfile.mkdtemp(prefix="modelfs-zero-copy.")
repo, mnt = os.path.join(tmp, "repo"), os.path.join(tmp, "mnt")
os.mkdir(mnt)
subprocess.run(["/usr/bin/python3", os.path.join(top, "bench", "make_fs_models.py"),
                repo, os.path.join(top, "examples"), "-"], check=True)
shm = tempfile.mkdtemp(prefix="modelfs-zero-copy.", dir="/dev/shm")
src = os.path.join(shm, "x.npy")
np.save(src, np.random.default_rng(1).random(25 * 1024 * 1024, dtype=np.float32))
daemon = subprocess.Popen([os.environ.get("MODELFS", os.path.join(top, "modelfs")), "-f",
                           "--max-request-bytes=256M", repo, mnt], stderr=subprocess.DEVNULL)
try:
    for _ in range(300):
        if os.path.ismount(mnt) and os.path.exists(os.path.join(mnt, "big", "requests")):
            break
        time.sleep(0.1)
    results = {"cp": {"in": [], "all": []}, "symlink": {"in": [], "all": []}}
    for r in range(rounds):
        for method in ("cp", "symlink") if r % 2 == 0 else ("symlink", "cp"):
            req = os.path.join(mnt, "big", "requests", "%s%d" % (method, r))
            os.mkdir(req)
            t0 = time.perf_counter()
            if method == "cp":
                subprocess.run(["cp", src, os.path.join(req, "x.npy")], check=True)
            else:
                subprocess.run(["ln", "-s", src, os.path.join(req, "x.npy")], check=True)
            t1 = time.perf_counter()
            subprocess.run("cat '%s' > /dev/null" % os.path.join(req, "y.npy"), shell=True, check=True)
            t2 = time.perf_counter()
            results[method]["in"].append((t1 - t0) * 1e3)
            results[method]["all"].append((t2 - t0) * 1e3)
            shutil.rmtree(req)
    med = {m: {k: statistics.median(v) for k, v in d.items()} for m, d in results.items()}
    print("100 MB .npy input, %d rounds, median ms" % rounds)
    print("| method | hand-over ms | whole request ms |")
    print("| --- | --- | --- |")
    for m in ("cp", "symlink"):
        print("| %s | %.1f | %.1f |" % (m, med[m]["in"], med[m]["all"]))
    print("| cp / symlink | %.2fx | %.2fx |" % (med["cp"]["in"] / med["symlink"]["in"],
                                              med["cp"]["all"] / med["symlink"]["all"]))
finally:
    subprocess.run(["fusermount3", "-u", mnt])
    daemon.wait()
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(shm, ignore_errors=True)

"""Throughput through a modelfs mount of bench/make_fs_models.py's
repository: large tensors, dynamic batching, many clients, and the
daemon's own compute time (stats.json) for models that bench_engine also
times.  Prints one JSON object.
usage: /usr/bin/python3 bench/bench_fs_load.py MOUNT"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench_fs_files import npy, pool_rate, read, write

mnt = sys.argv[1]


def io_names(model):
    """The first output's name and every input's name."""
    cfg = json.loads(read("%s/%s/config.json" % (mnt, model)))
    return cfg["output"][0]["name"], [i["name"] for i in cfg["input"]]


def cycle(d, inputs, data, out):
    """One request in a reused directory: every input written, one output read."""
    for name in inputs:
        write("%s/%s.npy" % (d, name), data)
    return read("%s/%s.npy" % (d, out))


def compute_us(model, x, n):
    """The daemon's mean compute_infer (us) over n requests, and how long
    the model sat idle between two runs (us: the cycle's time less the
    run's), for bench_engine --gap-us: one client's requests leave the
    caches and cores as cold as that gap does."""
    out, inputs = io_names(model)
    d = "%s/%s/requests/c%d" % (mnt, model, os.getpid())
    os.mkdir(d)
    data = npy(x)
    for _ in range(20):
        cycle(d, inputs, data, out)
    s0 = json.loads(read("%s/%s/stats.json" % (mnt, model)))
    t = time.perf_counter()
    for _ in range(n):
        cycle(d, inputs, data, out)
    per_cycle = (time.perf_counter() - t) / n * 1e6
    s1 = json.loads(read("%s/%s/stats.json" % (mnt, model)))
    st0 = s0["model_stats"][0]["inference_stats"]["compute_infer"]
    st1 = s1["model_stats"][0]["inference_stats"]["compute_infer"]
    us = (st1["ns"] - st0["ns"]) / max(1, st1["count"] - st0["count"]) / 1e3
    return us, max(0.0, per_cycle - us)


def big_gbps():
    n = 25 * 1000 * 1000                      # 100 MB of FP32
    x = np.arange(n, dtype=np.float32)
    src = tempfile.NamedTemporaryFile(dir="/dev/shm", suffix=".npy", delete=False)
    src.write(npy(x))
    src.close()
    d = "%s/big/requests/b%d" % (mnt, os.getpid())
    os.mkdir(d)
    best_in = best_out = 0
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run(["cp", src.name, d + "/x.npy"], check=True)
        t_in = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run("cat %s/y.npy > /dev/null" % d, shell=True, check=True)
        t_out = time.perf_counter() - t
        size = os.path.getsize(src.name)
        best_in = max(best_in, size / t_in / 1e9)
        best_out = max(best_out, size / t_out / 1e9)
    os.unlink(src.name)
    return best_in, best_out


def client(args):
    model, x, n, k = args
    out, inputs = io_names(model)
    d = "%s/%s/requests/l%d_%d_%d" % (mnt, model, os.getpid(), k, time.monotonic_ns())
    os.mkdir(d)
    data = npy(x)
    for _ in range(n):
        cycle(d, inputs, data, out)
    return n


def rate(model, x, clients, n):
    """Requests per second with `clients` processes each sending n."""
    return pool_rate(client, (model, x), clients, n)


res = {}
mlp_x = np.load(os.path.join(os.path.dirname(__file__), "..", "examples", "mlp", "samples", "input.npy"))
img = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
for name, x, n in (("mlp", mlp_x, 500), ("resnet18", img, 30)):
    us, idle = compute_us(name, x, n)
    res[name + "_daemon_compute_us"] = round(us, 1)
    res[name + "_idle_us"] = round(idle)
res["big_in_gbps"], res["big_out_gbps"] = (round(v, 2) for v in big_gbps())
# 1 and 8 clients, with dynamic batching (resnet18) and without
# (resnet18_nb), two rounds in turn; means of the rounds.
rps = {}
for _ in range(2):
    for m in ("resnet18", "resnet18_nb"):
        for c, n in ((1, 24), (8, 6)):
            rps.setdefault((m, c), []).append(rate(m, img, c, n))
one, eight = (float(np.mean(rps[("resnet18", c)])) for c in (1, 8))
res["resnet18_1client_rps"] = round(one, 1)
res["resnet18_8clients_rps"] = round(eight, 1)
res["batching_speedup"] = round(eight / one, 2)
one_nb, eight_nb = (float(np.mean(rps[("resnet18_nb", c)])) for c in (1, 8))
res["resnet18_nb_1client_rps"] = round(one_nb, 1)
res["resnet18_nb_8clients_rps"] = round(eight_nb, 1)
res["nb_speedup"] = round(eight_nb / one_nb, 2)
# The batch sizes the batcher ran: each size's first run after another
# rebuilds the convolutions' oneDNN primitives (MFS_PROFILE=1 counts
# them), which is what made 8 clients slower than one on 2 cores.
st = json.loads(read("%s/resnet18/stats.json" % mnt))["model_stats"][0]
res["resnet18_batches"] = " ".join("b%d x%d" % (b["batch_size"], b["compute_infer"]["count"])
                                   for b in st.get("batch_stats", []))
ab = np.arange(16, dtype=np.float32)
res["add_sub_1client_rps"] = round(rate("add_sub", ab, 1, 1000), 1)
res["add_sub_16clients_rps"] = round(rate("add_sub", ab, 16, 200), 1)
print(json.dumps(res))

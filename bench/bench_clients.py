"""Requests per second through a mount: CLIENTS processes, each in its
own request directory, writing every input and reading the first output
N times (after one warm-up request each).  The input is a seeded random tensor
of the model's config shape (a batch of 1 where it is batched).
usage: /usr/bin/python3 bench/bench_clients.py MOUNT MODEL CLIENTS N"""
import io
import json
import multiprocessing as mp
import os
import sys
import time

import numpy as np

mnt, model, clients, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open("%s/%s/config.json" % (mnt, model)) as f:
    cfg = json.load(f)
batched = cfg.get("max_batch_size", 0) > 0
DT = {"TYPE_FP32": np.float32}


def npy(inp):
    shape = ([1] if batched else []) + [int(d) for d in inp["dims"]]
    a = np.random.default_rng(1).standard_normal(shape).astype(DT[inp["data_type"]])
    b = io.BytesIO()
    np.save(b, a)
    return b.getvalue()


def client(args):
    k, count = args
    d = "%s/%s/requests/c%d_%d_%d" % (mnt, model, os.getpid(), k, time.monotonic_ns())
    os.mkdir(d)
    data = [(i["name"], npy(i)) for i in cfg["input"]]
    out = cfg["output"][0]["name"]
    for _ in range(count):
        for name, b in data:
            with open("%s/%s.npy" % (d, name), "wb") as f:
                f.write(b)
        with open("%s/%s.npy" % (d, out), "rb") as f:
            f.read()
    return count


with mp.Pool(clients) as p:
    p.map(client, [(k, 1) for k in range(clients)])   # warm
    t = time.perf_counter()
    done = sum(p.map(client, [(k, n) for k in range(clients)]))
    print(round(done / (time.perf_counter() - t), 1))

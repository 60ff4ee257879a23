"""ResNet-18's 8 clients against 1 through two mounts of the same
repository (bench/make_fs_models.py's) served by two daemons, A and B,
timed in alternating rounds so both see the same load (this VM's speed
drifts within seconds: only same-run ratios count).  Prints one line per
round and the means, with and without dynamic batching.
usage: /usr/bin/python3 bench/ab_clients.py MOUNT_A MOUNT_B [ROUNDS]"""
import json
import os
import sys
import time

import numpy as np

from bench_fs_files import npy, pool_rate, read, write

mnts = {"A": sys.argv[1], "B": sys.argv[2]}
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
img = np.random.default_rng(1).standard_normal((1, 3, 224, 224), dtype=np.float32)
data = npy(img)


def client(args):
    mnt, model, n, k = args
    d = "%s/%s/requests/ab%d_%d_%d" % (mnt, model, os.getpid(), k, time.monotonic_ns())
    os.mkdir(d)
    cfg = json.loads(read("%s/%s/config.json" % (mnt, model)))
    inp, out = cfg["input"][0]["name"], cfg["output"][0]["name"]
    for _ in range(n):
        write("%s/%s.npy" % (d, inp), data)
        read("%s/%s.npy" % (d, out))
    return n


def rate(mnt, model, clients, n):
    return pool_rate(client, (mnt, model), clients, n)


res = {}
for r in range(rounds):
    for side, mnt in mnts.items():
        for model in ("resnet18", "resnet18_nb"):
            one = rate(mnt, model, 1, 24)
            eight = rate(mnt, model, 8, 6)
            res.setdefault((side, model), []).append((one, eight))
            print("round %d %s %-12s 1 client %6.1f req/s, 8 clients %6.1f req/s, %.2fx"
                  % (r, side, model, one, eight, eight / one), flush=True)
for (side, model), v in sorted(res.items()):
    one, eight = np.mean([a for a, _ in v]), np.mean([b for _, b in v])
    ratios = " ".join("%.2f" % (b / a) for a, b in v)
    print("mean %s %-12s 1 client %6.1f, 8 clients %6.1f, %.2fx (rounds: %s)"
          % (side, model, one, eight, eight / one, ratios))

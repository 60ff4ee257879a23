#!/usr/bin/python3
"""bench_ensemble.py MOUNT [N]: the example pipeline ensemble against its
three steps called one after the other by the client, through the infer
file of a mount of examples/ (same run, same daemon: the ratio is what
counts on a loaded machine).  Each round times N requests of each kind
and checks that both give the same probabilities.

    ./modelfs examples mnt && /usr/bin/python3 bench/bench_ensemble.py mnt
"""
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
mnt = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200
x = np.load(os.path.join(HERE, "..", "examples", "pipeline", "samples", "pixels.npy"))


def infer(model, name, arr, datatype):
    req = json.dumps({"inputs": [{"name": name, "shape": list(arr.shape), "datatype": datatype,
                                  "data": arr.reshape(-1).tolist()}]}).encode()
    fd = os.open(os.path.join(mnt, model, "infer"), os.O_RDWR)
    try:
        os.write(fd, req)
        body = b""
        while True:
            d = os.read(fd, 1 << 16)
            if not d:
                break
            body += d
    finally:
        os.close(fd)
    r = json.loads(body)
    return {t["name"]: np.array(t["data"], dtype=np.float32).reshape(t["shape"])
            for t in r["outputs"]}


for rnd in range(2):
    t0 = time.perf_counter()
    for _ in range(N):
        p = infer("pipeline", "pixels", x, "UINT8")["probabilities"]
    t1 = time.perf_counter()
    for _ in range(N):
        image = infer("pipeline_preprocess", "pixels", x, "UINT8")["image"]
        logits = infer("cnn", "image", image, "FP32")["logits"]
        q = infer("pipeline_softmax", "logits", logits, "FP32")["probabilities"]
    t2 = time.perf_counter()
    assert np.allclose(p, q), (p, q)
    print("round %d: ensemble %.3f ms/request, the three steps from the client %.3f ms/request,"
          " ratio %.2f" % (rnd, (t1 - t0) / N * 1e3, (t2 - t1) / N * 1e3, (t2 - t1) / (t1 - t0)))

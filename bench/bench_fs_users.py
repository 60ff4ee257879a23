"""What a user sees (issue 35): one model's whole request through a
modelfs mount, one client, batch 1, against ONNX Runtime in-process on
the same input and the bare FUSE server (bench/bare_fs.c) moving the same
file sizes; and the daemon's own compute (stats.json compute_infer)
against bench_engine on the same model and threads, back to back and with
the idle gap the daemon's model had between the client's requests.

usage: /usr/bin/python3 bench/bench_fs_users.py MOUNT MODEL ONNX BARE N ROUNDS
  MOUNT/MODEL  the model served (one instance, no dynamic batching)
  ONNX         its model.onnx (for ONNX Runtime and bench_engine)
  BARE         a bare_fs mount
Env: BENCH_ENGINE (build/bench/bench_engine), THREADS (2), NODE (node;
"" skips ONNX Runtime, as where bench/node_modules is missing).

One client writes every input as .npy (the data ort_bench.js makes:
sin(i) for floats, i % 7 for integers) into a reused request directory
and reads the first output.  Each round times, in turn, N requests
through the mount, N bare cycles (the same input files written, a file
of the output's size read back), ONNX Runtime (N runs) and bench_engine
(N runs back to back, then N with the gap); the median of the rounds'
figures is printed, one JSON object, milliseconds."""
import json
import os
import subprocess
import sys
import time

import numpy as np

from bench_fs_files import npy, read, write

mnt, model, onnx_path, bare = sys.argv[1:5]
N, ROUNDS = int(sys.argv[5]), int(sys.argv[6])
ENGINE = os.environ.get("BENCH_ENGINE", "build/bench/bench_engine")
THREADS = os.environ.get("THREADS", "2")
NODE = os.environ.get("NODE", "node")
DT = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32,
      "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}


def inputs(desc):
    """name -> .npy bytes: the tensors ort_bench.js feeds"""
    out = {}
    for d in desc:
        n = int(np.prod(d["shape"]))
        i = np.arange(n)
        dt = DT[d["dtype"]]
        a = np.sin(i) if dt in (np.float32, np.float64) else i % 7
        out[d["name"]] = npy(a.astype(dt).reshape(d["shape"]))
    return out


def compute(m):
    s = json.loads(read("%s/%s/stats.json" % (mnt, m)))
    c = s["model_stats"][0]["inference_stats"]["compute_infer"]
    return c["ns"], c["count"]


def cycles(d, files, out, n):
    """Median ms of n cycles in d: every file written, out read."""
    ts = []
    for _ in range(n):
        t = time.perf_counter()
        for name, data in files:
            write("%s/%s" % (d, name), data)
        read("%s/%s" % (d, out))
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)) * 1e3, float(np.mean(ts)) * 1e3


def field(text, key):
    return json.loads(text.strip().splitlines()[-1])[key]


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


desc_text = run([ENGINE, "--describe", onnx_path, "--batch", "1"])
desc = json.loads(desc_text)
data = inputs(desc)
cfg = json.loads(read("%s/%s/config.json" % (mnt, model)))
out = cfg["output"][0]["name"] + ".npy"
files = [(i["name"] + ".npy", data[i["name"]]) for i in cfg["input"]]
d = "%s/%s/requests/u%d" % (mnt, model, os.getpid())
os.mkdir(d)
cycles(d, files, out, 3)   # warm
out_size = len(read("%s/%s" % (d, out)))
bd = "%s/requests/u%d" % (bare, os.getpid())
os.mkdir(bd)
write(bd + "/out.npy", b"\0" * out_size)
cycles(bd, files, "out.npy", 3)

rows = {k: [] for k in ("mount_ms", "bare_ms", "ort_ms", "compute_ms", "engine_ms",
                        "engine_gap_ms", "gap_us")}
for _ in range(ROUNDS):
    ns0, c0 = compute(model)
    med, mean = cycles(d, files, out, N)
    ns1, c1 = compute(model)
    comp = (ns1 - ns0) / max(1, c1 - c0) / 1e6
    rows["mount_ms"].append(med)
    rows["compute_ms"].append(comp)
    gap = max(0.0, mean - comp) * 1e3
    rows["gap_us"].append(gap)
    rows["bare_ms"].append(cycles(bd, files, "out.npy", N)[0])
    if NODE:
        rows["ort_ms"].append(field(run([NODE, "bench/ort_bench.js", onnx_path, desc_text.strip(),
                                         str(N), THREADS]), "median_ms"))
    eng = [ENGINE, onnx_path, "--batch", "1", "--iters", str(N), "--threads", THREADS]
    rows["engine_ms"].append(field(run(eng), "mean_ms"))
    rows["engine_gap_ms"].append(field(run(eng + ["--gap-us", str(int(gap))]), "mean_ms"))
res = {"out_bytes": out_size, "in_bytes": sum(len(b) for _, b in files)}
for k, v in rows.items():
    res[k] = round(float(np.median(v)), 4) if v else None
print(json.dumps(res))

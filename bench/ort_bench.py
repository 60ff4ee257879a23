"""ort_bench.py - time one model with ONNX Runtime's Python package (CPU),
for machines where the npm peer (ort_bench.js) is not installed, such as
the device tool's 16-core host.  Same inputs and output as ort_bench.js:
  python3 ort_bench.py MODEL.onnx INPUTS_JSON ITERS THREADS
INPUTS_JSON as printed by `bench_engine --describe`; prints
{"median_ms": ..., "min_ms": ...}."""
import json
import sys
import time

import numpy as np
import onnxruntime as ort

path, inputs_json, iters, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
so = ort.SessionOptions()
so.intra_op_num_threads = threads
so.inter_op_num_threads = 1
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
feeds = {}
for spec in json.loads(inputs_json):
    n = int(np.prod(spec["shape"]))
    i = np.arange(n)
    if spec["dtype"] in ("float32", "float64"):
        data = np.sin(i).astype(spec["dtype"])
    else:
        data = (i % 7).astype(spec["dtype"] if spec["dtype"] != "bool" else "uint8")
    feeds[spec["name"]] = data.reshape(spec["shape"])
for _ in range(3):
    sess.run(None, feeds)
times = []
for _ in range(iters):
    t = time.perf_counter()
    sess.run(None, feeds)
    times.append((time.perf_counter() - t) * 1e3)
times.sort()
print(json.dumps({"median_ms": times[len(times) // 2], "min_ms": times[0]}))

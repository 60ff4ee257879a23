"""ort_generate.py - ort_generate.js's batched loop with ONNX Runtime's
Python package (CPU), for hosts without the npm peer (the device tool's
16-core host, scripts/gpu-generate.sh):
  python3 ort_generate.py MODEL.onnx PROMPT NEW BATCH THREADS [ROUNDS]
One loop over BATCH rows (prompt ids (7 j + 13 b) % 1000), each step's
present.N.* fed back as past_key_values.N.*, greedy; after a warm-up of 2
tokens prints one JSON line as ort_generate.js does (best of ROUNDS)."""
import json
import sys
import time

import numpy as np
import onnxruntime as ort


def generate(sess, batch, prompt, n_new):
    names = [i.name for i in sess.get_inputs()]
    cache = {i.name: np.zeros((batch, i.shape[1], 0, i.shape[3]), np.float32)
             for i in sess.get_inputs() if i.name.startswith("past_key_values.")}
    tokens = np.array([[(7 * j + 13 * b) % 1000 for j in range(prompt)] for b in range(batch)],
                      np.int64)
    past, ids, t0, ttft = 0, [], time.perf_counter(), 0.0
    outs = [o.name for o in sess.get_outputs()]
    for step in range(n_new):
        seq = tokens.shape[1]
        feed = dict(cache)
        feed["input_ids"] = tokens
        feed["attention_mask"] = np.ones((batch, past + seq), np.int64)
        if "position_ids" in names:
            feed["position_ids"] = np.tile(np.arange(past, past + seq, dtype=np.int64), (batch, 1))
        res = dict(zip(outs, sess.run(None, feed)))
        nxt = res["logits"][:, -1, :].argmax(-1)
        ids.append(int(nxt[0]))
        for n, v in res.items():
            if n.startswith("present."):
                cache["past_key_values." + n[8:]] = v
        past += seq
        tokens = nxt.reshape(batch, 1).astype(np.int64)
        if step == 0:
            ttft = time.perf_counter() - t0
    return time.perf_counter() - t0, ttft, ids


def main():
    path, prompt, n_new, batch, threads = sys.argv[1], *map(int, sys.argv[2:6])
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    generate(sess, batch, prompt, 2)
    best = min((generate(sess, batch, prompt, n_new) for _ in range(rounds)), key=lambda r: r[0])
    total, ttft, ids = best
    print(json.dumps({"ttft_ms": round(ttft * 1e3, 2), "total_ms": round(total * 1e3, 2),
                      "tokens_per_s": round(batch * n_new / total, 2), "ids": ids}))


if __name__ == "__main__":
    main()

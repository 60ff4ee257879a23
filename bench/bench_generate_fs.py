#!/usr/bin/python3
"""Greedy text generation through a mount's generate file (SPEC.md,
text generation): STREAMS clients at once, each writing
{"input_ids": [...], "max_tokens": NEW, "stream": true} on one fd of
MOUNT/MODEL/generate and reading the answer on the same fd, one
{"token": ID} line per token, to end of file.  Prompt ids of client b:
(7 j + 13 b) % 1000 for j < PROMPT, as bench/bench_generate.c and
bench/ort_generate.js.  One warm-up generation first (of 2 tokens).

usage: /usr/bin/python3 bench/bench_generate_fs.py MOUNT MODEL PROMPT NEW STREAMS [ROUNDS]

Prints one JSON line, the best of ROUNDS (default 1): {"ttft_ms" (mean
over clients, from the common start to each one's first token line),
"total_ms" (until the last client's end of file), "tokens_per_s" (all
clients' new tokens over total_ms), "ids" (client 0's)}."""
import json
import os
import sys
import threading
import time


def generate(path, prompt, n_new, t0, res, k):
    fd = os.open(path, os.O_RDWR)
    try:
        os.write(fd, json.dumps({"input_ids": prompt, "max_tokens": n_new, "stream": True}).encode())
        buf, ids, first = b"", [], None
        while True:
            b = os.read(fd, 65536)
            if not b:
                break
            if first is None:
                first = time.perf_counter() - t0
            buf += b
        for line in buf.decode().splitlines():
            msg = json.loads(line)
            if "token" in msg:
                ids.append(msg["token"])
            elif "error" in msg:
                raise RuntimeError(msg["error"])
        res[k] = (first, ids)
    finally:
        os.close(fd)


def one_round(path, prompt_len, n_new, streams):
    prompts = [[(7 * j + 13 * b) % 1000 for j in range(prompt_len)] for b in range(streams)]
    res = [None] * streams
    t0 = time.perf_counter()
    th = [threading.Thread(target=generate, args=(path, prompts[k], n_new, t0, res, k))
          for k in range(streams)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    total = time.perf_counter() - t0
    if any(r is None for r in res):
        sys.exit("bench_generate_fs: a generation failed")
    for first, ids in res:
        if len(ids) != n_new:
            sys.exit("bench_generate_fs: %d ids, not %d" % (len(ids), n_new))
    return total, sum(r[0] for r in res) / streams, res[0][1]


def main():
    if len(sys.argv) < 6:
        sys.exit(__doc__)
    mnt, model = sys.argv[1], sys.argv[2]
    prompt_len, n_new, streams = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    rounds = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    path = os.path.join(mnt, model, "generate")
    one_round(path, prompt_len, 2, 1)   # warm-up: load, first runs
    best = None
    for _ in range(rounds):
        r = one_round(path, prompt_len, n_new, streams)
        if best is None or r[0] < best[0]:
            best = r
    total, ttft, ids = best
    print(json.dumps({"ttft_ms": round(ttft * 1e3, 2), "total_ms": round(total * 1e3, 2),
                      "tokens_per_s": round(streams * n_new / total, 2), "ids": ids}))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""A GPT-2-small-shaped decoder with its key/value cache, in the Hugging
Face / Optimum convention (issue 30's generation benchmark): 12 layers,
768 wide, 12 heads, vocabulary 50257, 1024 positions, seeded random
weights (tests/models/export_models.py's Gpt2, made GPT-2 small's size).

  inputs   input_ids [batch, seq] int64
           attention_mask [batch, past + seq] int64 (1: attend)
           position_ids [batch, seq] int64
           past_key_values.N.key|value [batch, 12, past, 64] float32
  outputs  logits [batch, seq, 50257]
           present.N.key|value [batch, 12, past + seq, 64]

Past length 0 is the first step (the prompt).  The causal mask is
Hugging Face's: the rows past..past+seq of a lower-triangular buffer,
applied with Where, and the padding mask added as (1 - mask) * -1e4.

  gpt2_kv.py export PATH       write the ONNX model (opset 13)
  gpt2_kv.py bench [--device cuda|cpu] [--prompt 128] [--new 128]
               [--batch 1] [--rounds 3]
                               the GPU peer (scripts/gpu-generate.sh):
                               PyTorch eager greedy decoding with its
                               key/value cache, FP32 (TF32 off), the same
                               weights and prompt ids as bench_generate;
                               one JSON line as bench_generate prints"""
import argparse
import json
import math
import os
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))

LAYERS, D, HEADS, VOCAB, CTX = 12, 768, 12, 50257, 1024


def make_model():
    for name in ("onnx", "torchvision"):   # imported there, not needed here
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    import export_models   # the project's GPT-2-like blocks
    torch.manual_seed(0)

    class Gpt2Kv(export_models.Gpt2):
        def forward(self, input_ids, attention_mask, position_ids, *past):
            b, s = input_ids.shape[0], input_ids.shape[1]
            dh = self.d // self.heads
            p = past[0].shape[2]
            x = self.wte(input_ids) + self.wpe(position_ids)
            causal = self.bias[:, :, p:p + s, :p + s]               # Slice
            pad = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -1e4
            neg = torch.tensor(-1e4, dtype=torch.float32)
            presents = []
            for i, m in enumerate(self.blocks):
                h = m.ln1(x)
                q, k, v = m.attn(h).split(self.d, dim=2)
                q = q.reshape(b, s, self.heads, dh).transpose(1, 2)
                k = torch.cat([past[2 * i], k.reshape(b, s, self.heads, dh).transpose(1, 2)], dim=2)
                v = torch.cat([past[2 * i + 1], v.reshape(b, s, self.heads, dh).transpose(1, 2)], dim=2)
                presents += [k, v]
                att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh)
                att = torch.softmax(torch.where(causal, att, neg) + pad, dim=-1)
                ctx = torch.matmul(att, v).transpose(1, 2).reshape(b, s, self.d)
                x = x + m.proj(ctx)
                x = x + m.fc2(torch.nn.functional.gelu(m.fc(m.ln2(x)), approximate="tanh"))
            return (torch.matmul(self.lnf(x), self.wte.weight.t()), *presents)

    return Gpt2Kv(vocab=VOCAB, d=D, heads=HEADS, layers=LAYERS, ctx=CTX).eval()


def names():
    past, present = [], []
    for i in range(LAYERS):
        past += ["past_key_values.%d.key" % i, "past_key_values.%d.value" % i]
        present += ["present.%d.key" % i, "present.%d.value" % i]
    return ["input_ids", "attention_mask", "position_ids"] + past, ["logits"] + present, past, present


def export(path):
    model = make_model()
    ins, outs, past, present = names()
    b, s, p = 1, 4, 3   # nonzero past: the trace keeps its length symbolic
    args = (torch.zeros(b, s, dtype=torch.long), torch.ones(b, p + s, dtype=torch.long),
            torch.arange(p, p + s).unsqueeze(0)) + \
        tuple(torch.zeros(b, HEADS, p, D // HEADS) for _ in past)
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
           "position_ids": {0: "batch", 1: "seq"}, "logits": {0: "batch", 1: "seq"}}
    for n in past:
        dyn[n] = {0: "batch", 2: "past"}
    for n in present:
        dyn[n] = {0: "batch", 2: "total"}
    kw = dict(opset_version=13, input_names=ins, output_names=outs, dynamic_axes=dyn,
              do_constant_folding=True)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with torch.no_grad():
        try:
            torch.onnx.export(model, args, tmp, dynamo=False, **kw)
        except TypeError:   # Debian's torch, without the dynamo argument
            torch.onnx.export(model, args, tmp, **kw)
    os.replace(tmp, path)


def greedy(model, prompt, new, batch=1):
    """PyTorch eager greedy decoding with the cache: row 0's ids, and the
    seconds to the first token and in all.  prompt: one list for every
    row, or a list of rows."""
    import time
    rows = prompt if isinstance(prompt[0], list) else [prompt] * batch
    batch = len(rows)
    ids = torch.tensor(rows, dtype=torch.long)
    dev = next(model.parameters()).device
    ids = ids.to(dev)
    past = tuple(torch.zeros(batch, HEADS, 0, D // HEADS, device=dev) for _ in range(2 * LAYERS))
    mask = torch.ones(batch, ids.shape[1], dtype=torch.long, device=dev)
    pos = torch.arange(ids.shape[1], device=dev).unsqueeze(0).expand(batch, -1)
    out, t0, ttft = [], time.perf_counter(), None
    with torch.no_grad():
        for step in range(new):
            r = model(ids, mask, pos, *past)
            nxt = r[0][:, -1, :].argmax(-1)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            if ttft is None:
                ttft = time.perf_counter() - t0
            out.append(nxt)
            past = r[1:]
            ids = nxt.unsqueeze(1)
            pos = pos[:, -1:] + 1
            mask = torch.cat([mask, torch.ones(batch, 1, dtype=torch.long, device=dev)], dim=1)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return torch.stack(out, 1).tolist(), ttft, time.perf_counter() - t0


def bench(argv):
    ap = argparse.ArgumentParser(prog="gpt2_kv.py bench")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = make_model().to(a.device)
    rows = [[(7 * j + 13 * b) % 1000 for j in range(a.prompt)] for b in range(a.batch)]
    greedy(model, rows, 2)   # warm-up, as bench_generate's
    best = None
    for _ in range(a.rounds):
        r = greedy(model, rows, a.new)
        if best is None or r[2] < best[2]:
            best = r
    ids, ttft, total = best
    print(json.dumps({"engine": "torch-" + a.device, "batch": a.batch,
                      "ttft_ms": round(ttft * 1e3, 2), "total_ms": round(total * 1e3, 2),
                      "tokens_per_s": round(a.batch * a.new / total, 2), "ids": ids[0]}))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "export":
        export(sys.argv[2])
    elif len(sys.argv) >= 2 and sys.argv[1] == "bench":
        bench(sys.argv[2:])
    else:
        sys.exit(__doc__)

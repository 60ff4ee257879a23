#!/usr/bin/python3
"""A GPT-2-like decoder exported with its key/value cache in the Hugging
Face / Optimum convention, shared by the generation tests
(tests/e2e/generate.bats) and the benchmarks:

  inputs   input_ids [B,S] int64, attention_mask [B,P+S] int64,
           position_ids [B,S] int64 (unless position_ids=False: then
           positions are P..P+S-1, the same for every row),
           past_key_values.N.key / .value [B,H,P,D] float32
  outputs  logits [B,S,V] float32, present.N.key / .value [B,H,P+S,D]

The first step is fed an empty past (P = 0).  Pre-LN blocks, tanh GELU,
causal attention that also masks the keys whose attention_mask is 0 (left
padding of a batch); the blocks are tests/models/export_models.py's
Gpt2's, with an LM head of its own (a tied one makes random weights
repeat the last token).  Seeded random weights.

As a module: KvDecoder, export(model, path), greedy(model, ids, n, stop)
(the model stepped by hand with its cache: the reference for greedy
decoding).  As a script:

  kv_decoder.py DIR [--vocab 50] [--d 32] [--heads 2] [--layers 2]
                [--no-position-ids] [--seed 0] [--ctx 1024]

writes DIR/model.onnx; with --greedy "1 2 3" N it prints instead the N
greedy ids after that prompt (the same seeded weights)."""
import argparse
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import Gpt2  # noqa: E402  (the blocks and their weights)


class KvDecoder(Gpt2):
    """export_models.Gpt2's blocks and weights, with the cache in and out
    and an LM head of its own."""

    def __init__(self, vocab=50, d=32, heads=2, layers=2, ctx=1024, position_ids=True):
        super().__init__(vocab, d, heads, layers, ctx)
        del self.bias   # the causal mask is made from positions here
        self.vocab, self.n_layers = vocab, layers
        self.with_position_ids = position_ids
        self.head = torch.nn.Linear(d, vocab, bias=False)

    def input_names(self):
        names = ["input_ids", "attention_mask"]
        if self.with_position_ids:
            names.append("position_ids")
        for i in range(self.n_layers):
            names += ["past_key_values.%d.key" % i, "past_key_values.%d.value" % i]
        return names

    def output_names(self):
        names = ["logits"]
        for i in range(self.n_layers):
            names += ["present.%d.key" % i, "present.%d.value" % i]
        return names

    def forward(self, input_ids, attention_mask, *rest):
        if self.with_position_ids:
            position_ids, past = rest[0], rest[1:]
        else:
            position_ids, past = None, rest
        b, s = input_ids.shape[0], input_ids.shape[1]
        p = past[0].shape[2]
        h, dh = self.heads, self.d // self.heads
        if position_ids is None:
            position_ids = torch.arange(p, p + s, dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        # query i (absolute p+i) sees key j when j <= p+i and the key is not padding
        kj = torch.arange(0, p + s, dtype=torch.long).unsqueeze(0)
        qi = torch.arange(p, p + s, dtype=torch.long).unsqueeze(1)
        allowed = (kj <= qi).unsqueeze(0).unsqueeze(0) & \
            (attention_mask > 0).unsqueeze(1).unsqueeze(2)
        neg = torch.tensor(-1e4, dtype=torch.float32)
        present = []
        for li, m in enumerate(self.blocks):
            y = m.ln1(x)
            q, k, v = m.attn(y).split(self.d, dim=2)
            q = q.reshape(b, s, h, dh).transpose(1, 2)
            k = torch.cat([past[2 * li], k.reshape(b, s, h, dh).transpose(1, 2)], dim=2)
            v = torch.cat([past[2 * li + 1], v.reshape(b, s, h, dh).transpose(1, 2)], dim=2)
            present += [k, v]
            a = q @ k.transpose(2, 3) / math.sqrt(dh)
            a = torch.softmax(torch.where(allowed, a, neg), dim=-1)
            o = (a @ v).transpose(1, 2).reshape(b, s, self.d)
            x = x + m.proj(o)
            y = m.ln2(x)
            x = x + m.fc2(torch.nn.functional.gelu(m.fc(y), approximate="tanh"))
        logits = self.head(self.lnf(x))
        return (logits, *present)

    def empty_past(self, b=1):
        dh = self.d // self.heads
        return [torch.zeros(b, self.heads, 0, dh) for _ in range(2 * self.n_layers)]


def export(model, path, opset=13):
    """Export with every dim but the widths dynamic (a past of 3 traced)."""
    model.eval()
    b, s, p = 1, 2, 3
    dh = model.d // model.heads
    ids = torch.zeros(b, s, dtype=torch.long)
    args = [ids, torch.ones(b, p + s, dtype=torch.long)]
    if model.with_position_ids:
        args.append(torch.arange(p, p + s, dtype=torch.long).unsqueeze(0))
    args += [torch.randn(b, model.heads, p, dh) for _ in range(2 * model.n_layers)]
    dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "total"},
           "logits": {0: "batch", 1: "seq"}}
    if model.with_position_ids:
        dyn["position_ids"] = {0: "batch", 1: "seq"}
    for n in model.input_names()[len(args) - 2 * model.n_layers:]:
        dyn[n] = {0: "batch", 2: "past"}
    for n in model.output_names()[1:]:
        dyn[n] = {0: "batch", 2: "total"}
    with torch.no_grad():
        torch.onnx.export(model, tuple(args), path, opset_version=opset,
                          input_names=model.input_names(), output_names=model.output_names(),
                          dynamic_axes=dyn)


def greedy(model, prompt, n, stop=()):
    """The model stepped by hand: the prompt with an empty past, then one
    token per step with the cache fed back; n new ids (fewer at a stop id,
    which is included)."""
    out = []
    with torch.no_grad():
        ids = torch.tensor([prompt], dtype=torch.long)
        past = model.empty_past()
        total = 0
        while len(out) < n:
            s = ids.shape[1]
            args = [ids, torch.ones(1, total + s, dtype=torch.long)]
            if model.with_position_ids:
                args.append(torch.arange(total, total + s, dtype=torch.long).unsqueeze(0))
            res = model(*args, *past)
            past = list(res[1:])
            total += s
            tok = int(torch.argmax(res[0][0, -1]))
            out.append(tok)
            if tok in stop:
                break
            ids = torch.tensor([[tok]], dtype=torch.long)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--vocab", type=int, default=50)
    ap.add_argument("--d", type=int, default=32)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--no-position-ids", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ctx", type=int, default=1024, help="positions the model embeds")
    ap.add_argument("--greedy", nargs=2, metavar=("PROMPT", "N"))
    ap.add_argument("--stop", default="")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    model = KvDecoder(a.vocab, a.d, a.heads, a.layers, ctx=a.ctx, position_ids=not a.no_position_ids)
    model.eval()
    if a.greedy:
        prompt = [int(t) for t in a.greedy[0].split()]
        stop = [int(t) for t in a.stop.split()]
        print(" ".join(str(t) for t in greedy(model, prompt, int(a.greedy[1]), stop)))
        return
    os.makedirs(a.dir, exist_ok=True)
    export(model, os.path.join(a.dir, "model.onnx"))


if __name__ == "__main__":
    sys.exit(main())

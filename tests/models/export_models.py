#!/usr/bin/python3
"""Exports the real-model check set into a model repository (default
build/models/; not committed: large, regenerated at test time):

  resnet18/     torchvision ResNet-18, random weights
  mobilenet_v2/ torchvision MobileNetV2, random weights
  encoder/      4-layer transformer encoder, d=256, 4 heads, seq 128, with
                token + position embedding, attention, GELU and layer norm
                written out as plain ops (MatMul, Softmax, Erf, ReduceMean,
                Sqrt ...), not PyTorch's fused paths

Each at ONNX opset 13 with a dynamic batch dim, weights from a fixed seed,
eval mode; no config.pbtxt (auto-complete from the graph).  Beside the
model, <model>/ref/inputs/<NAME>.npy is a reference input and
<model>/ref/expected/<OUTPUT>.npy PyTorch's output for it; check_models.sh
compares `modelfs run` with those.  (ref/ is not a version directory, so
the repository scan ignores it.)

Run: /usr/bin/python3 tests/models/export_models.py [OUTDIR] [MODEL...]
Prints how long each model took."""
import math
import os
import sys
import time

import numpy as np
import onnx
import torch
import torchvision

OPSET = 13


class Encoder(torch.nn.Module):
    """A BERT-like post-LN encoder, every piece spelled out."""

    def __init__(self, vocab=1000, d=256, heads=4, layers=4, ff=1024, seq=128):
        super().__init__()
        self.d, self.heads = d, heads
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.1)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            m = torch.nn.Module()
            m.q = torch.nn.Linear(d, d)
            m.k = torch.nn.Linear(d, d)
            m.v = torch.nn.Linear(d, d)
            m.o = torch.nn.Linear(d, d)
            m.ff1 = torch.nn.Linear(d, ff)
            m.ff2 = torch.nn.Linear(ff, d)
            m.g1 = torch.nn.Parameter(1 + 0.1 * torch.randn(d))
            m.b1 = torch.nn.Parameter(0.1 * torch.randn(d))
            m.g2 = torch.nn.Parameter(1 + 0.1 * torch.randn(d))
            m.b2 = torch.nn.Parameter(0.1 * torch.randn(d))
            self.layers.append(m)

    @staticmethod
    def layer_norm(x, g, b):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) * (x - mu)).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * g + b

    @staticmethod
    def gelu(x):
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))

    def attention(self, m, x):
        b, s = x.shape[0], x.shape[1]
        dh = self.d // self.heads

        def split(t):  # [B,S,D] -> [B,H,S,Dh]
            return t.reshape(b, s, self.heads, dh).transpose(1, 2)

        q, k, v = split(m.q(x)), split(m.k(x)), split(m.v(x))
        p = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh), dim=-1)
        ctx = torch.matmul(p, v).transpose(1, 2).reshape(b, s, self.d)
        return m.o(ctx)

    def forward(self, ids):
        x = self.tok(ids) + self.pos
        for m in self.layers:
            x = self.layer_norm(x + self.attention(m, x), m.g1, m.b1)
            x = self.layer_norm(x + m.ff2(self.gelu(m.ff1(x))), m.g2, m.b2)
        return x


def calibrate_batchnorm(m, rng):
    """Fresh BatchNorm layers (mean 0, var 1) let a deep random network's
    activations shrink to nothing (MobileNetV2's logits come out ~1e-9),
    which makes a numeric check meaningless.  One training-mode pass over a
    random batch with momentum 1 sets the running statistics to real ones,
    as a trained model has."""
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.momentum = 1.0
    m.train()
    with torch.no_grad():
        m(torch.from_numpy(rng.standard_normal((4, 3, 224, 224), dtype=np.float32)))
    m.eval()


def build(name):
    """(module, input name, example input, output name)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name == "resnet18":
        m = torchvision.models.resnet18(weights=None)
        calibrate_batchnorm(m, rng)
        x = rng.standard_normal((1, 3, 224, 224), dtype=np.float32)
        return m, "input", x, "logits"
    if name == "mobilenet_v2":
        m = torchvision.models.mobilenet_v2(weights=None)
        calibrate_batchnorm(m, rng)
        x = rng.standard_normal((1, 3, 224, 224), dtype=np.float32)
        return m, "input", x, "logits"
    if name == "encoder":
        m = Encoder()
        x = rng.integers(0, 1000, (1, 128), dtype=np.int64)
        return m, "input_ids", x, "hidden"
    raise SystemExit("unknown model %s" % name)


def export(outdir, name):
    t0 = time.monotonic()
    model, in_name, x, out_name = build(name)
    model.eval()
    d = os.path.join(outdir, name)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    os.makedirs(os.path.join(d, "ref", "inputs"), exist_ok=True)
    os.makedirs(os.path.join(d, "ref", "expected"), exist_ok=True)
    path = os.path.join(d, "1", "model.onnx")
    xt = torch.from_numpy(x)
    with torch.no_grad():
        torch.onnx.export(model, (xt,), path, opset_version=OPSET,
                          input_names=[in_name], output_names=[out_name],
                          dynamic_axes={in_name: {0: "batch"}, out_name: {0: "batch"}},
                          do_constant_folding=True)
        y = model(xt).numpy()
    m = onnx.load(path)
    onnx.checker.check_model(m)
    np.save(os.path.join(d, "ref", "inputs", in_name + ".npy"), x)
    np.save(os.path.join(d, "ref", "expected", out_name + ".npy"), y)
    ops = sorted({n.op_type for n in m.graph.node})
    dt = time.monotonic() - t0
    print("%-13s %6.1f s  %5.1f MB  %s" % (name, dt, os.path.getsize(path) / 1e6,
                                           " ".join(ops)), flush=True)
    return dt


def main(argv):
    outdir = argv[1] if len(argv) > 1 else "build/models"
    names = argv[2:] or ["resnet18", "mobilenet_v2", "encoder"]
    torch.set_num_threads(2)
    t0 = time.monotonic()
    for n in names:
        export(outdir, n)
    print("export total  %6.1f s" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

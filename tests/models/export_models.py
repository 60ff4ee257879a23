#!/usr/bin/python3
"""Exports the real-model check set into a model repository (default
build/models/; not committed: large, regenerated at test time):

  resnet18/     torchvision ResNet-18, random weights
  mobilenet_v2/ torchvision MobileNetV2, random weights
  encoder/      4-layer transformer encoder, d=256, 4 heads, seq 128, with
                token + position embedding, attention, GELU and layer norm
                written out as plain ops (MatMul, Softmax, Erf, ReduceMean,
                Sqrt ...), not PyTorch's fused paths
  resnet50/     torchvision ResNet-50, random weights
  bert/         BERT-like encoder (nn.LayerNorm, 4 layers, d=256, seq 128)
                with an int64 attention_mask input: the mask is Cast,
                compared with 0 (Equal), broadcast over heads and queries
                (Expand) and applied with Where; batch 2, the two rows
                padded differently
  gpt2/         GPT-2-like decoder (pre-LN blocks, tanh GELU, tied LM head),
                dynamic batch and sequence; causal mask sliced from a
                lower-triangular buffer (Slice) and applied with Where,
                positions from Range
  greedy/       greedy decoding with a small GPT-2-like decoder (d=64, 2
                layers): torch.jit.script's loop over 8 new tokens becomes
                a Loop (trip count: the max_new input) whose body runs
                the scripted decoder on the growing token sequence (a
                carried value) and reads the weights from the outer graph;
                output: the prompt and its 8 new tokens
  branch/       torch.jit.script's data-dependent `if` (If): a ReLU MLP
                or a scaled linear layer by the sign of the input's sum,
                both branches reading outer-graph weights

The names above are exported at ONNX opset 13; NAME_op17 is the same model
(same weights, same input) at opset 17, where nn.LayerNorm becomes
LayerNormalization.  Dynamic batch dim (and sequence for gpt2), weights
from a fixed seed, eval mode; no config.pbtxt (auto-complete from the
graph).  CNN BatchNorm layers get seeded non-trivial affine parameters and
running statistics calibrated on a random batch, so that the logits are
O(1) and a scale/shift bug cannot hide.  Beside the
model, <model>/ref/inputs/<NAME>.npy is a reference input and
<model>/ref/expected/<OUTPUT>.npy PyTorch's output for it; check_models.sh
compares `modelfs run` with those.  (ref/ is not a version directory, so
the repository scan ignores it.)

Run: /usr/bin/python3 tests/models/export_models.py [OUTDIR] [MODEL...|all]
(default: the quick set of `make check-models`: resnet18 mobilenet_v2
encoder bert_op17 gpt2_op17).  Prints how long
each model took, its size, max|reference| and its operator types."""
import math
import copy
import os
import sys
import time

import numpy as np
import onnx
import torch
import torchvision

QUICK = ["resnet18", "mobilenet_v2", "encoder", "bert_op17", "gpt2_op17"]
BASE = ["resnet18", "mobilenet_v2", "encoder", "resnet50", "bert", "gpt2"]
ALL = BASE + [n + "_op17" for n in BASE]
# control flow (torch.jit.script); exported at opset 13 only
SCRIPTED = ["greedy", "branch"]


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


class Bert(torch.nn.Module):
    """BERT-like encoder: token + position + segment-free embedding,
    post-LN layers built from nn.LayerNorm (LayerNormalization at opset
    17), and the HuggingFace-style additive-free masking: padded keys are
    excluded with Where on an Expand-ed boolean mask."""

    def __init__(self, vocab=1000, d=256, heads=4, layers=4, ff=1024, seq=128):
        super().__init__()
        self.d, self.heads = d, heads
        self.tok = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.randn(seq, d) * 0.1)
        self.ln0 = torch.nn.LayerNorm(d)
        self.layers = torch.nn.ModuleList()
        for _ in range(layers):
            m = torch.nn.Module()
            m.qkv = torch.nn.Linear(d, 3 * d)
            m.o = torch.nn.Linear(d, d)
            m.ln1 = torch.nn.LayerNorm(d)
            m.ff1 = torch.nn.Linear(d, ff)
            m.ff2 = torch.nn.Linear(ff, d)
            m.ln2 = torch.nn.LayerNorm(d)
            self.layers.append(m)
        for mod in self.modules():  # non-trivial LayerNorm affine params
            if isinstance(mod, torch.nn.LayerNorm):
                mod.weight.data = 1 + 0.1 * torch.randn(d)
                mod.bias.data = 0.1 * torch.randn(d)

    def forward(self, ids, mask):
        b, s = ids.shape[0], ids.shape[1]
        dh = self.d // self.heads
        x = self.ln0(self.tok(ids) + self.pos)
        pad = mask.to(torch.int32) == 0                           # Cast, Equal
        pad = pad.reshape(b, 1, 1, s).expand(b, self.heads, s, s)  # Expand
        neg = torch.tensor(-1e4, dtype=torch.float32)
        for m in self.layers:
            q, k, v = m.qkv(x).reshape(b, s, 3, self.heads, dh).permute(2, 0, 3, 1, 4)
            att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh)
            att = torch.softmax(torch.where(pad, neg, att), dim=-1)  # Where
            ctx = torch.matmul(att, v).transpose(1, 2).reshape(b, s, self.d)
            x = m.ln1(x + m.o(ctx))
            x = m.ln2(x + m.ff2(torch.nn.functional.gelu(m.ff1(x))))
        return x


class Gpt2(torch.nn.Module):
    """GPT-2-like decoder: pre-LN blocks, tanh-approximated GELU, causal
    self-attention masked with Where from a sliced lower-triangular
    buffer, final LayerNorm and an LM head tied to the token embedding."""

    def __init__(self, vocab=1000, d=256, heads=4, layers=4, ctx=256):
        super().__init__()
        self.d, self.heads = d, heads
        self.wte = torch.nn.Embedding(vocab, d)
        self.wte.weight.data *= 0.1  # logits O(1-10), as in a trained model
        self.wpe = torch.nn.Embedding(ctx, d)
        self.register_buffer("bias", torch.tril(torch.ones(ctx, ctx, dtype=torch.bool))
                             .reshape(1, 1, ctx, ctx))
        self.blocks = torch.nn.ModuleList()
        for _ in range(layers):
            m = torch.nn.Module()
            m.ln1 = torch.nn.LayerNorm(d)
            m.attn = torch.nn.Linear(d, 3 * d)
            m.proj = torch.nn.Linear(d, d)
            m.ln2 = torch.nn.LayerNorm(d)
            m.fc = torch.nn.Linear(d, 4 * d)
            m.fc2 = torch.nn.Linear(4 * d, d)
            self.blocks.append(m)
        self.lnf = torch.nn.LayerNorm(d)
        for mod in self.modules():
            if isinstance(mod, torch.nn.LayerNorm):
                mod.weight.data = 1 + 0.1 * torch.randn(d)
                mod.bias.data = 0.1 * torch.randn(d)

    def forward(self, ids):
        b, s = ids.shape[0], ids.shape[1]
        dh = self.d // self.heads
        pos = torch.arange(0, s, dtype=torch.long, device=ids.device).unsqueeze(0)  # Range
        x = self.wte(ids) + self.wpe(pos)
        causal = self.bias[:, :, :s, :s]                           # Slice
        neg = torch.tensor(-1e4, dtype=torch.float32)
        for m in self.blocks:
            h = m.ln1(x)
            q, k, v = m.attn(h).reshape(b, s, 3, self.heads, dh).permute(2, 0, 3, 1, 4)
            att = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh)
            att = torch.softmax(torch.where(causal, att, neg), dim=-1)  # Where
            ctx = torch.matmul(att, v).transpose(1, 2).reshape(b, s, self.d)
            x = x + m.proj(ctx)
            x = x + m.fc2(torch.nn.functional.gelu(m.fc(m.ln2(x)), approximate="tanh"))
        return torch.matmul(self.lnf(x), self.wte.weight.t())


class ScriptedGpt2(Gpt2):
    """Gpt2 as torch.jit.script takes it (no unpacking of a tensor).
    Scripted, not traced: a traced decoder inside the loop would carry
    its traced sequence length into the export (positions, mask and
    reshapes fixed to it)."""

    def forward(self, ids):
        b, s = ids.size(0), ids.size(1)
        dh = self.d // self.heads
        pos = torch.arange(0, s, dtype=torch.long).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        causal = self.bias[:, :, :s, :s]
        neg = torch.tensor(-1e4, dtype=torch.float32)
        for m in self.blocks:
            h = m.ln1(x)
            qkv = m.attn(h).reshape(b, s, 3, self.heads, dh).permute(2, 0, 3, 1, 4)
            att = torch.matmul(qkv[0], qkv[1].transpose(2, 3)) / math.sqrt(dh)
            att = torch.softmax(torch.where(causal, att, neg), dim=-1)
            ctx = torch.matmul(att, qkv[2]).transpose(1, 2).reshape(b, s, self.d)
            x = x + m.proj(ctx)
            x = x + m.fc2(torch.nn.functional.gelu(m.fc(m.ln2(x)), approximate="tanh"))
        return torch.matmul(self.lnf(x), self.wte.weight.t())


class Greedy(torch.nn.Module):
    """Greedy decoding: max_new tokens, each the argmax of the decoder's
    last logits, appended to the sequence.  The loop runs over an input
    count, so it exports as an ONNX Loop (a constant count would be
    unrolled)."""
    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, ids, max_new):
        for _ in range(int(max_new)):
            logits = self.decoder(ids)
            nxt = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
            ids = torch.cat([ids, nxt], dim=1)
        return ids


class Branch(torch.nn.Module):
    """A data-dependent branch (ONNX If) between two small networks."""

    def __init__(self):
        super().__init__()
        self.a1 = torch.nn.Linear(32, 64)
        self.a2 = torch.nn.Linear(64, 16)
        self.b = torch.nn.Linear(32, 16)

    def forward(self, x):
        if bool(x.sum() > 0):
            y = self.a2(torch.relu(self.a1(x)))
        else:
            y = self.b(x) * 2.0
        return y


def build_scripted(name, rng):
    """(script module, {input name: example input}, output name)."""
    if name == "greedy":
        dec = ScriptedGpt2(vocab=100, d=64, heads=2, layers=2, ctx=64)
        dec.wte.weight.data *= 10  # sharper logits: no near-ties in argmax
        dec.eval()
        ids = rng.integers(0, 100, (1, 8), dtype=np.int64)
        return (torch.jit.script(Greedy(dec)),
                {"input_ids": ids, "max_new": np.array(8, dtype=np.int64)}, "tokens")
    m = Branch().eval()
    x = rng.standard_normal((4, 32), dtype=np.float32) + 0.5   # sum > 0
    return torch.jit.script(m), {"x": x}, "y"


def calibrate_batchnorm(m, rng):
    """Fresh BatchNorm layers (mean 0, var 1) let a deep random network's
    activations shrink to nothing (MobileNetV2's logits come out ~1e-9),
    which makes a numeric check meaningless.  One training-mode pass over a
    random batch with momentum 1 sets the running statistics to real ones,
    as a trained model has.  The affine parameters get seeded values
    around 1 and 0 (fresh ones are exactly 1 and 0, so a kernel that
    ignored them would still match)."""
    g = torch.Generator().manual_seed(1)
    for mod in m.modules():
        if isinstance(mod, torch.nn.BatchNorm2d):
            mod.momentum = 1.0
            c = mod.num_features
            mod.weight.data = 0.5 + torch.rand(c, generator=g)
            mod.bias.data = 0.2 * torch.randn(c, generator=g)
    m.train()
    with torch.no_grad():
        m(torch.from_numpy(rng.standard_normal((4, 3, 224, 224), dtype=np.float32)))
    m.eval()


def build(name):
    """(module, {input name: example input}, output name)."""
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    if name in ("resnet18", "resnet50", "mobilenet_v2"):
        m = getattr(torchvision.models, name)(weights=None)
        calibrate_batchnorm(m, rng)
        x = rng.standard_normal((1, 3, 224, 224), dtype=np.float32)
        return m, {"input": x}, "logits"
    if name == "encoder":
        m = Encoder()
        x = rng.integers(0, 1000, (1, 128), dtype=np.int64)
        return m, {"input_ids": x}, "hidden"
    if name == "bert":
        m = Bert()
        ids = rng.integers(0, 1000, (2, 128), dtype=np.int64)
        mask = np.ones((2, 128), dtype=np.int64)
        mask[0, 100:] = 0
        mask[1, 37:] = 0
        return m, {"input_ids": ids, "attention_mask": mask}, "hidden"
    if name == "gpt2":
        m = Gpt2()
        x = rng.integers(0, 1000, (1, 64), dtype=np.int64)
        return m, {"input_ids": x}, "logits"
    if name in SCRIPTED:
        return build_scripted(name, rng)
    raise SystemExit("unknown model %s" % name)


def to_fp16(m):
    """FLOAT initializers, Constant values, inputs, outputs and value infos
    of m become FLOAT16 (values rounded once, as a converter does)."""
    from onnx import numpy_helper, TensorProto
    F, H = TensorProto.FLOAT, TensorProto.FLOAT16

    def conv(t):
        if t.data_type == F:
            a = numpy_helper.to_array(t).astype(np.float16)
            t.CopyFrom(numpy_helper.from_array(a, t.name))
    g = m.graph
    for t in g.initializer:
        conv(t)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                conv(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == F:
                a.i = H
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == F:
            vi.type.tensor_type.elem_type = H


def export(outdir, name):
    t0 = time.monotonic()
    # <model>_fp16: weights and input stored as FP16 (modelfs computes the
    # FP32-only operators in FP32, issue 6).  PyTorch's CPU half kernels are
    # not what modelfs computes, so the reference is the FP32 model run on
    # the FP16-rounded weights and input; check_models.sh compares it with
    # an FP16-sized tolerance.
    half = name.endswith("_fp16")
    if half:
        name_base = name[:-5]
    else:
        name_base = name
    base, opset = (name_base[:-5], 17) if name_base.endswith("_op17") else (name_base, 13)
    model, inputs, out_name = build(base)
    model.eval()
    if half:
        with torch.no_grad():
            for p in model.parameters():
                p.data = p.data.half().float()
            for b in model.buffers():
                if b.dtype == torch.float32:
                    b.data = b.data.half().float()
        inputs = {n: x.astype(np.float16) if x.dtype == np.float32 else x
                  for n, x in inputs.items()}
    d = os.path.join(outdir, name)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    os.makedirs(os.path.join(d, "ref", "inputs"), exist_ok=True)
    os.makedirs(os.path.join(d, "ref", "expected"), exist_ok=True)
    path = os.path.join(d, "1", "model.onnx")
    xs = tuple(torch.from_numpy(x) for x in inputs.values())
    if half:
        # torch's CPU has no half convolution to trace: export in FP32,
        # then store the ONNX file's float tensors as FP16 (to_fp16).
        xs = ref_xs = tuple(x.float() if x.dtype == torch.float16 else x
                            for x in xs)
    else:
        ref_xs = xs
    dyn = {n: {0: "batch"} for n in inputs}
    dyn[out_name] = {0: "batch"}
    if base == "greedy":
        # a fixed prompt length would let the exporter fold the loop
        # body's positions and shapes to the first iteration's
        dyn = {"input_ids": {0: "batch", 1: "seq"}, out_name: {0: "batch", 1: "seq"}}
    if base == "gpt2":
        dyn = {"input_ids": {0: "batch", 1: "seq"}, out_name: {0: "batch", 1: "seq"}}
    args = dict(opset_version=opset, input_names=list(inputs), output_names=[out_name],
                dynamic_axes=dyn, do_constant_folding=True)
    with torch.no_grad():
        try:
            # the TorchScript exporter: newer torch (the device tool's
            # host) defaults to dynamo, which cannot write opset 13
            torch.onnx.export(model, xs, path, dynamo=False, **args)
        except TypeError:   # Debian's torch, without the dynamo argument
            torch.onnx.export(model, xs, path, **args)
        y = model(*ref_xs).numpy()
        if half:
            y = y.astype(np.float16)
    m = onnx.load(path)
    if half:
        to_fp16(m)
        onnx.save(m, path)
    onnx.checker.check_model(m)
    for n, x in inputs.items():
        np.save(os.path.join(d, "ref", "inputs", n + ".npy"), x)
    np.save(os.path.join(d, "ref", "expected", out_name + ".npy"), y)
    ops = sorted({n.op_type for n in m.graph.node})
    dt = time.monotonic() - t0
    print("%-17s %6.1f s  %5.1f MB  max|ref| %.3g  %s"
          % (name, dt, os.path.getsize(path) / 1e6, float(np.max(np.abs(y))),
             " ".join(ops)), flush=True)
    return dt


def main(argv):
    outdir = argv[1] if len(argv) > 1 else "build/models"
    names = argv[2:] or QUICK
    if names == ["all"]:
        names = ALL + SCRIPTED
    torch.set_num_threads(2)
    t0 = time.monotonic()
    for n in names:
        export(outdir, n)
    print("export total      %6.1f s" % (time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

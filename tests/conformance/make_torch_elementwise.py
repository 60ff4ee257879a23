#!/usr/bin/python3
# make_torch_elementwise.py - regenerate tests/conformance/torch-elementwise:
# small PyTorch modules (attention masks, every activation PyTorch exports
# as elementwise ops, integer and float math, a conv block with per-channel
# PRelu/Mul/Add that the engine keeps NHWC) exported at opsets 13 and 17,
# each written as an ONNX backend test case (model.onnx and
# test_data_set_0/{input,output}_N.pb holding PyTorch's own results).
#
#   /usr/bin/python3 tests/conformance/make_torch_elementwise.py tests/conformance/torch-elementwise
#   build/tools/conformance tests/conformance/torch-elementwise
import os, sys, torch, numpy as np, onnx
from onnx import numpy_helper
torch.manual_seed(0)
out = sys.argv[1]

def case(name, mod, inputs, opset=13, names=None):
    d = os.path.join(out, f"test_{name}_op{opset}")
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    mod.eval()
    in_names = names or [f"x{i}" for i in range(len(inputs))]
    with torch.no_grad():
        res = mod(*inputs)
    if not isinstance(res, tuple):
        res = (res,)
    out_names = [f"y{i}" for i in range(len(res))]
    torch.onnx.export(mod, tuple(inputs), os.path.join(d, "model.onnx"), opset_version=opset,
                      input_names=in_names, output_names=out_names)
    for i, t in enumerate(inputs):
        tp = numpy_helper.from_array(t.numpy(), in_names[i])
        open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb").write(tp.SerializeToString())
    for i, t in enumerate(res):
        tp = numpy_helper.from_array(t.numpy(), out_names[i])
        open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb").write(tp.SerializeToString())

class Mask(torch.nn.Module):
    def forward(self, scores, ids):
        m = (ids != 0)
        add = (1.0 - m[:, None, None, :].to(torch.float32)) * -10000.0
        s = scores + add
        r = torch.arange(scores.shape[-1]); causal = r[None, :] <= r[:, None]
        s2 = torch.where(causal, scores, torch.tensor(-1e9))
        return s, s2, m.to(torch.int64).sum(-1)

class Acts(torch.nn.Module):
    def forward(self, x):
        f = torch.nn.functional
        return (f.gelu(x), f.gelu(x, approximate="tanh"), f.hardswish(x), f.hardsigmoid(x),
                f.silu(x), f.mish(x), f.softplus(x), f.elu(x, 0.7), f.selu(x), f.celu(x, 1.3),
                f.leaky_relu(x, 0.2), f.relu6(x), torch.clamp(x, min=-0.5), f.softsign(x),
                torch.tanh(x), torch.sigmoid(x), torch.erf(x))

class Math(torch.nn.Module):
    def forward(self, x, y, i, j):
        return (torch.floor(x), torch.ceil(x), torch.round(x), torch.sign(x), torch.abs(x),
                torch.sqrt(torch.abs(x)), torch.exp(x), torch.log(torch.abs(x) + 1e-3),
                torch.reciprocal(y), x.pow(2), x.pow(y), torch.abs(x).pow(0.5),
                torch.remainder(x, y), torch.fmod(x, y), torch.remainder(i, j), torch.fmod(i, j),
                torch.div(i, j, rounding_mode="trunc"), torch.div(i, j, rounding_mode="floor"),
                torch.maximum(x, y), torch.minimum(x, y), x > y, x <= y, x == y,
                torch.isnan(x / (x - x)), torch.isinf(1 / (x - x)), (x > 0) & (y > 0), (x > 0) ^ (y > 0),
                ~(x > 0), torch.sin(x), torch.cos(x), torch.atan(x), 
                i * j - i + j, i.clamp(-3, 3), torch.neg(i))

class ConvChan(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.p = torch.nn.PReLU(8)
        self.s = torch.nn.Parameter(torch.randn(8, 1, 1))
        self.b = torch.nn.Parameter(torch.randn(1, 8, 1, 1))
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
    def forward(self, x):
        y = self.p(self.c1(x))
        y = y * self.s + self.b
        z = self.c2(y)
        z = torch.nn.functional.hardswish(z) + y
        w = z * torch.sigmoid(z.mean((2, 3), keepdim=True))
        return torch.clamp(w, 0, 6) - 1.5

x = torch.randn(2, 3, 5, 7)
y = torch.rand(2, 3, 5, 7) + 0.5
i = torch.randint(-20, 20, (2, 3, 5, 7))
j = torch.randint(1, 7, (2, 3, 5, 7)) * (torch.randint(0, 2, (2, 3, 5, 7)) * 2 - 1)
for op in (13, 17):
    case("mask", Mask(), [torch.randn(2, 4, 6, 6), torch.tensor([[5, 3, 0, 0, 0, 0], [1, 2, 3, 4, 5, 6]])], op)
    case("acts", Acts(), [torch.randn(4, 5, 6) * 4], op)
    case("math", Math(), [x, y, i, j], op)
    case("convchan", ConvChan(), [torch.randn(2, 3, 9, 9)], op)

#!/usr/bin/python3
"""Models only the benchmark needs (the test models come from
tests/models/export_models.py): ResNet-50, a 1024x1024x1024 MatMul and
GPT-2 small's shape with its key/value cache (gpt2_kv.py), in
build/bench-models/.  Seeded random weights; nothing is downloaded."""
import os
import sys

import torch
import torchvision

out = sys.argv[1] if len(sys.argv) > 1 else "build/bench-models"
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)


def export(name, model, args, **kw):
    path = os.path.join(out, name + ".onnx")
    if os.path.exists(path):
        return
    model.eval()
    with torch.no_grad():
        torch.onnx.export(model, args, path, opset_version=13, **kw)
    print("exported", path)


class MatMul(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1024, 1024))

    def forward(self, x):
        return x @ self.w


export("matmul1024", MatMul(), (torch.randn(1024, 1024),), input_names=["x"], output_names=["y"])
export("resnet50", torchvision.models.resnet50(weights=None), (torch.randn(1, 3, 224, 224),),
       input_names=["input"], output_names=["logits"])

# GPT-2 small's shape with its key/value cache (bench/gpt2_kv.py): the
# text generation rows of bench/run-bench-generate.sh.
if not os.path.exists(os.path.join(out, "gpt2_kv.onnx")):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpt2_kv
    gpt2_kv.export(os.path.join(out, "gpt2_kv.onnx"))
    print("exported", os.path.join(out, "gpt2_kv.onnx"))

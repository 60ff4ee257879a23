#!/usr/bin/python3
"""Models only the benchmark needs (the test models come from
tests/models/export_models.py): ResNet-50 and a 1024x1024x1024 MatMul, in
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

#!/usr/bin/python3
"""PyTorch's side of scripts/gpu-bench.sh: the same models as the
engines run, seeded random weights, eval mode, FP32: ResNet-50,
MobileNetV2 (torchvision's; skipped without torchvision), the 4-layer
d=256 encoder, the BERT-like encoder with an attention mask and the
GPT-2-like decoder of tests/models/export_models.py (sequence 128).

  torch_bench.py export DIR     write DIR/<model>/1/model.onnx (dynamic
                                batch, opset 13) for the modelfs engines
  torch_bench.py inputs DIR     write DIR/<model>/<input>.npy (batch 1)
                                and DIR/<model>/output (the output's name)
                                for the request through the mount
  torch_bench.py bench [--device cuda|cpu] [--iters N]
                                time eager PyTorch at batch 1 and 32; one
                                JSON line per (model, batch): median ms

TF32 is off (cuBLAS and cuDNN): every engine compared computes in FP32.
torchvision and onnx are optional: without torchvision, ResNet-50 is the
definition below (same architecture); the transformers come from
tests/models/export_models.py with its optional imports stubbed."""
import json
import os
import sys
import time
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))


def export_models():
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "models"))
    for name in ("onnx", "torchvision"):   # imported there, not needed here
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
    import export_models
    return export_models


class Bottleneck(torch.nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        nn = torch.nn
        cout = width * 4
        self.c1 = nn.Conv2d(cin, width, 1, bias=False)
        self.b1 = nn.BatchNorm2d(width)
        self.c2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.b2 = nn.BatchNorm2d(width)
        self.c3 = nn.Conv2d(width, cout, 1, bias=False)
        self.b3 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        r = torch.relu
        y = r(self.b1(self.c1(x)))
        y = r(self.b2(self.c2(y)))
        y = self.b3(self.c3(y))
        return r(y + (self.down(x) if self.down is not None else x))


class ResNet50(torch.nn.Module):
    """torchvision's resnet50 architecture, for machines without it."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.MaxPool2d(3, 2, 1))
        layers, cin = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = width * 4
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def resnet50():
    try:
        import torchvision
        return torchvision.models.resnet50(weights=None)
    except ImportError:
        return ResNet50()


def mobilenetv2():
    try:
        import torchvision
        return torchvision.models.mobilenet_v2(weights=None)
    except ImportError:
        return None


def models():
    """name -> (module, {input name: maker(batch)}, output name)"""
    em = export_models()
    torch.manual_seed(0)
    image = {"input": lambda b: torch.randn(b, 3, 224, 224)}
    ids = lambda b: torch.randint(0, 1000, (b, 128))
    mask = lambda b: (torch.arange(128) < 100).long().expand(b, 128).contiguous()
    out = {"resnet50": (resnet50().eval(), image, "logits")}
    mn = mobilenetv2()
    if mn is not None:
        out["mobilenetv2"] = (mn.eval(), image, "logits")
    out["encoder"] = (em.Encoder().eval(), {"input_ids": ids}, "hidden")
    out["bert"] = (em.Bert().eval(), {"input_ids": ids, "attention_mask": mask}, "hidden")
    out["gpt2"] = (em.Gpt2().eval(), {"input_ids": ids}, "logits")
    return out


def export(outdir):
    for name, (m, ins, oname) in models().items():
        d = os.path.join(outdir, name, "1")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "model.onnx")
        if os.path.exists(path):
            continue
        dyn = {n: {0: "batch"} for n in ins}
        dyn[oname] = {0: "batch"}
        args = dict(opset_version=13, input_names=list(ins), output_names=[oname],
                    do_constant_folding=True, dynamic_axes=dyn)
        xs = tuple(make(1) for make in ins.values())
        with torch.no_grad():
            try:   # the TorchScript exporter, as tests/models/export_models.py
                torch.onnx.export(m, xs, path, dynamo=False, **args)
            except TypeError:   # a torch without the dynamo argument
                torch.onnx.export(m, xs, path, **args)
        print("exported %s (%.1f MB)" % (path, os.path.getsize(path) / 1e6), flush=True)


def inputs(outdir):
    import numpy as np
    for name, (_, ins, oname) in models().items():
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        torch.manual_seed(1)
        for iname, make in ins.items():
            np.save(os.path.join(d, iname + ".npy"), make(1).numpy())
        with open(os.path.join(d, "output"), "w") as f:
            f.write(oname + "\n")


def bench(device, iters):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    cuda = device == "cuda"
    for name, (m, ins, _) in models().items():
        m = m.to(device)
        for b in (1, 32):
            xs = [make(b).to(device) for make in ins.values()]
            times = []
            with torch.no_grad():
                for i in range(iters + 5):
                    if cuda:
                        torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    m(*xs)
                    if cuda:
                        torch.cuda.synchronize()
                    if i >= 5:
                        times.append((time.perf_counter() - t0) * 1e3)
            times.sort()
            print(json.dumps({"engine": "pytorch-" + device, "model": name, "batch": b,
                              "median_ms": round(times[len(times) // 2], 4),
                              "device": torch.cuda.get_device_name() if cuda else "cpu"}),
                  flush=True)


def main(argv):
    if len(argv) >= 3 and argv[1] == "export":
        export(argv[2])
        return 0
    if len(argv) >= 3 and argv[1] == "inputs":
        inputs(argv[2])
        return 0
    if len(argv) >= 2 and argv[1] == "bench":
        device = "cuda" if torch.cuda.is_available() else "cpu"
        iters = 20
        for i, a in enumerate(argv):
            if a == "--device" and i + 1 < len(argv):
                device = argv[i + 1]
            if a == "--iters" and i + 1 < len(argv):
                iters = int(argv[i + 1])
        bench(device, iters)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

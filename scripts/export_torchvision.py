"""Export torchvision classifiers (random weights, offline: Debian's
python3-torchvision) as a model repository, for timing a daemon start
with many real models (scripts/bench-load.sh).

  /usr/bin/python3 scripts/export_torchvision.py REPO [NAME...]

Each NAME becomes REPO/NAME/1/model.onnx (input "input" 1x3x224x224 with a
variable batch dim, output "logits") and REPO/NAME/config.pbtxt with
max_batch_size 8 and no instance_group (KIND_AUTO).  Default: 20 models.
Also by name (make bench's torchvision rows): inception_v3 (299x299),
lraspp_mobilenet_v3_large (segmentation, output "out" [N, 21, 224, 224])
and ssdlite320_mobilenet_v3_large (detection: input "input" [3, 320, 320],
one image, no batch dim; outputs "boxes", "scores", "labels"; its
post-processing runs NonMaxSuppression inside an If).
"""
import os
import sys
import time

import torch
import torchvision

DEFAULT = ["resnet18", "resnet34", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
           "mobilenet_v3_large", "squeezenet1_0", "squeezenet1_1", "shufflenet_v2_x0_5",
           "shufflenet_v2_x1_0", "mnasnet0_5", "mnasnet1_0", "efficientnet_b0",
           "regnet_x_400mf", "regnet_y_400mf", "alexnet", "googlenet", "densenet121",
           "resnext50_32x4d", "efficientnet_b1"]


class Seg(torch.nn.Module):
    """A segmentation model's dict output as its one tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def build(name):
    """(module, example input, output names, batched?) for NAME."""
    torch.manual_seed(0)
    if name == "ssdlite320_mobilenet_v3_large":
        m = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
            weights=None, weights_backbone=None).eval()
        return m, ([torch.rand(3, 320, 320)],), ["boxes", "scores", "labels"], False
    if name == "lraspp_mobilenet_v3_large":
        m = torchvision.models.segmentation.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None).eval()
        return Seg(m), torch.randn(1, 3, 224, 224), ["out"], True
    kw = {"aux_logits": False, "init_weights": True} if name in ("googlenet", "inception_v3") else {}
    m = getattr(torchvision.models, name)(weights=None, **kw).eval()
    side = 299 if name == "inception_v3" else 224
    return m, torch.randn(1, 3, side, side), ["logits"], True


def export(repo, name):
    path = os.path.join(repo, name, "1", "model.onnx")
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    m, x, outs, batched = build(name)
    axes = {n: {0: "batch"} for n in ["input"] + outs} if batched else None
    torch.onnx.export(m, x, path, input_names=["input"], output_names=outs,
                      dynamic_axes=axes, opset_version=13)
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write('name: "%s"\nmax_batch_size: %d\n' % (name, 8 if batched else 0))


def main(argv):
    repo, names = argv[1], argv[2:] or DEFAULT
    torch.set_num_threads(2)
    for n in names:
        t0 = time.monotonic()
        export(repo, n)
        print("%-20s %5.1f s" % (n, time.monotonic() - t0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

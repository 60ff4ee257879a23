"""The repository `make bench-fs` mounts (argv[1]): the examples' add_sub
and mlp, plus
  big        y = Identity(x), x FP32 [-1]: 100 MB in and out through files
  resnet18   build/models/resnet18 (make models) with dynamic batching up
             to 8 and a 2 ms window, one instance (left out when MODELS
             is "-")
  resnet18_nb  the same model, max_batch_size 8, no dynamic batching:
             8 clients against 1 without batching (issue 35)
usage: /usr/bin/python3 bench/make_fs_models.py REPO EXAMPLES MODELS|-"""
import os
import shutil
import sys

import onnx
from onnx import TensorProto, helper

repo, examples, models = sys.argv[1:4]
shutil.rmtree(repo, ignore_errors=True)
os.makedirs(repo)
for name in ("add_sub", "mlp"):
    shutil.copytree(os.path.join(examples, name), os.path.join(repo, name))

os.makedirs(os.path.join(repo, "big", "1"))
g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "big",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [-1])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [-1])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]),
          os.path.join(repo, "big", "1", "model.onnx"))
with open(os.path.join(repo, "big", "config.pbtxt"), "w") as f:
    f.write('name: "big"\nmax_batch_size: 0\ninstance_group [ { kind: KIND_CPU count: 1 } ]\n')

if models == "-":
    sys.exit(0)
os.makedirs(os.path.join(repo, "resnet18", "1"))
shutil.copy(os.path.join(models, "resnet18", "1", "model.onnx"),
            os.path.join(repo, "resnet18", "1", "model.onnx"))
with open(os.path.join(repo, "resnet18", "config.pbtxt"), "w") as f:
    f.write('name: "resnet18"\nmax_batch_size: 8\n'
            'instance_group [ { count: 1, kind: KIND_CPU } ]\n'
            'dynamic_batching { max_queue_delay_microseconds: 2000 }\n')
os.makedirs(os.path.join(repo, "resnet18_nb", "1"))
shutil.copy(os.path.join(models, "resnet18", "1", "model.onnx"),
            os.path.join(repo, "resnet18_nb", "1", "model.onnx"))
with open(os.path.join(repo, "resnet18_nb", "config.pbtxt"), "w") as f:
    f.write('name: "resnet18_nb"\nmax_batch_size: 8\n'
            'instance_group [ { count: 1, kind: KIND_CPU } ]\n')

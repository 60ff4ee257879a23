"""Models the end-to-end tests need beyond examples/ (written at test time
into the directory given as argv[1], a repository):

  slow       y = x @ I repeated: a run long enough (~0.1 s idle, 13 GFLOP) that
             readers wait; one instance, max_queue_size 2
  batcher    the examples' mlp with a 100 ms batching window, max 8
  varlen     out = a + b with variable lengths: mismatched lengths make
             the run fail (EIO)
  broken     a model.onnx that is not ONNX (UNAVAILABLE, EAGAIN)
  scale_shift y = x * 2 + shift, x [N,8], shift [8]
"""
import os
import shutil
import sys

import numpy as np
import onnx
import onnx.numpy_helper as nh
from onnx import TensorProto, helper

root = sys.argv[1]
examples = sys.argv[2]


def save(name, graph, config=None):
    os.makedirs(os.path.join(root, name, "1"), exist_ok=True)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, os.path.join(root, name, "1", "model.onnx"))
    if config is not None:
        with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
            f.write(config)


# slow: 24 products of [B,256,1024] by the 1024x1024 identity.
n = 24
eye = nh.from_array(np.eye(1024, dtype=np.float32), "I")
nodes = []
prev = "x"
for i in range(n):
    out = "y" if i == n - 1 else "h%d" % i
    nodes.append(helper.make_node("MatMul", [prev, "I"], [out]))
    prev = out
save("slow", helper.make_graph(
    nodes, "slow",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", 256, 1024])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 256, 1024])],
    [eye]),
    'max_batch_size: 4\n'
    'instance_group [ { count: 1, kind: KIND_CPU } ]\n'
    'dynamic_batching { max_queue_size: 2 }\n')

# batcher: the mlp, merging requests that arrive within 100 ms.
os.makedirs(os.path.join(root, "batcher", "1"), exist_ok=True)
shutil.copy(os.path.join(examples, "mlp", "1", "model.onnx"),
            os.path.join(root, "batcher", "1", "model.onnx"))
with open(os.path.join(root, "batcher", "config.pbtxt"), "w") as f:
    f.write('max_batch_size: 8\n'
            'dynamic_batching { max_queue_delay_microseconds: 100000 }\n')

# varlen: a + b, any lengths; broadcasting [3] and [4] fails at run time.
save("varlen", helper.make_graph(
    [helper.make_node("Add", ["a", "b"], ["out"])], "varlen",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N"]),
     helper.make_tensor_value_info("b", TensorProto.FLOAT, ["M"])],
    [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["K"])]),
    # Every first dim is variable: without this, auto-complete would make
    # the length a batch dim of at most 4 (Triton's default).
    "max_batch_size: 0\n")

# broken: not an ONNX file at all.
os.makedirs(os.path.join(root, "broken", "1"), exist_ok=True)
with open(os.path.join(root, "broken", "1", "model.onnx"), "wb") as f:
    f.write(b"this is not a model\n")

# scale_shift: y = x * 2 + shift, x [N, 8]; two inputs, so a test can
# write x alone and measure what decoding it costs (hardening.bats).
two = nh.from_array(np.array(2.0, dtype=np.float32), "two")
save("scale_shift", helper.make_graph(
    [helper.make_node("Mul", ["x", "two"], ["x2"]),
     helper.make_node("Add", ["x2", "shift"], ["y"])], "scale_shift",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8]),
     helper.make_tensor_value_info("shift", TensorProto.FLOAT, [8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
    [two]))

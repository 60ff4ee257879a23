#!/usr/bin/python3
"""Builds the example model repository in this directory (examples/):

  add_sub/  Triton's classic example: INPUT0, INPUT1 FP32[16] ->
            OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1.
            max_batch_size 0: the shapes are exactly [16], so a shell user
            can write 16 numbers to INPUT0.txt.
  mlp/      784-512-512-10 classifier (Gemm, Relu, Softmax): "input"
            FP32[784] -> "probabilities" FP32[10].  max_batch_size 64 with
            dynamic_batching, so files carry a leading batch dim: [N,784].
  cnn/      small CNN on 1x28x28 images (Conv, BatchNormalization, Relu,
            MaxPool, Flatten, Gemm): "image" FP32[1,28,28] -> "logits"
            FP32[10].  max_batch_size 16.
  pipeline/ an ensemble (platform "ensemble") of three steps:
            pipeline_preprocess ("pixels" UINT8[28,28] -> "image"
            FP32[1,28,28], scaled to [-1, 1]: the example custom backend
            examples/backends/preprocess.c, built by the Makefile as
            build/examples/libmodelfs_preprocess.so), cnn, pipeline_softmax
            ("logits" -> "probabilities"), with labels.txt naming the
            ten classes (probabilities.top1.txt says "score index label").  max_batch_size 16 everywhere.
  running_mean/ a stateful model (sequence_batching): "chunk" FP32[16]
            -> "mean" FP32[1], the mean of every sample of the sequence so
            far; the daemon keeps [sum, count] between the chunks
            (implicit state).  examples/stream_chunks.sh feeds it.

Each ONNX model gets config.pbtxt, 1/model.onnx (opset 13) and samples/ with
input files in several formats plus the PyTorch/NumPy reference outputs
(samples/expected/).  Weights are random with fixed seeds, so a rerun gives
the same files.  The .onnx files are committed: `make run` needs no Python.

Run: /usr/bin/python3 examples/make_examples.py   (Debian's python3-torch,
python3-onnx, python3-numpy)."""
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 13


def write(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


def save_txt(path, a):
    """Last dim per line, as modelfs writes .txt."""
    a = np.asarray(a)
    rows = a.reshape(-1, a.shape[-1]) if a.ndim else a.reshape(1, 1)
    fmt = "%d" if a.dtype.kind in "iub" else "%.9g"
    write(path, "".join(" ".join(fmt % v for v in r) + "\n" for r in rows))


def save_json(path, name, a):
    a = np.asarray(a)
    kserve = {"float32": "FP32", "int64": "INT64"}[str(a.dtype)]
    write(path, json.dumps({"name": name, "shape": list(a.shape),
                            "datatype": kserve,
                            "data": a.reshape(-1).tolist()}) + "\n")


def save_npy(path, a):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, a)


def export(model, args, path, in_names, out_names, dynamic_batch):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    axes = None
    if dynamic_batch:
        axes = {n: {0: "batch"} for n in in_names + out_names}
    # PRESERVE keeps BatchNormalization as its own node (EVAL would fold it
    # into the Conv); the module is in eval mode, so it exports inference.
    torch.onnx.export(model, args, path, opset_version=OPSET,
                      input_names=in_names, output_names=out_names,
                      dynamic_axes=axes,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=True)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    m.producer_name = "modelfs examples/make_examples.py"
    onnx.save(m, path)


def add_sub():
    d = os.path.join(HERE, "add_sub")
    x0 = helper.make_tensor_value_info("INPUT0", TensorProto.FLOAT, [16])
    x1 = helper.make_tensor_value_info("INPUT1", TensorProto.FLOAT, [16])
    y0 = helper.make_tensor_value_info("OUTPUT0", TensorProto.FLOAT, [16])
    y1 = helper.make_tensor_value_info("OUTPUT1", TensorProto.FLOAT, [16])
    g = helper.make_graph(
        [helper.make_node("Add", ["INPUT0", "INPUT1"], ["OUTPUT0"]),
         helper.make_node("Sub", ["INPUT0", "INPUT1"], ["OUTPUT1"])],
        "add_sub", [x0, x1], [y0, y1])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="modelfs examples/make_examples.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    onnx.save(m, os.path.join(d, "1", "model.onnx"))
    write(os.path.join(d, "config.pbtxt"), """\
# Triton's classic add_sub example, served by modelfs.
name: "add_sub"
backend: "onnxruntime"
max_batch_size: 0
input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    dims: [ 16 ]
  },
  {
    name: "INPUT1"
    data_type: TYPE_FP32
    dims: [ 16 ]
  }
]
output [
  {
    name: "OUTPUT0"
    data_type: TYPE_FP32
    dims: [ 16 ]
  },
  {
    name: "OUTPUT1"
    data_type: TYPE_FP32
    dims: [ 16 ]
  }
]
instance_group [ { count: 1, kind: KIND_CPU } ]
""")
    s = os.path.join(d, "samples")
    a = np.arange(1, 17, dtype=np.float32)
    b = np.full(16, 0.5, dtype=np.float32)
    save_txt(os.path.join(s, "INPUT0.txt"), a)
    save_npy(os.path.join(s, "INPUT0.npy"), a)
    save_json(os.path.join(s, "INPUT0.json"), "INPUT0", a)
    save_txt(os.path.join(s, "INPUT1.txt"), b)
    save_npy(os.path.join(s, "INPUT1.npy"), b)
    save_json(os.path.join(s, "INPUT1.json"), "INPUT1", b)
    save_npy(os.path.join(s, "expected", "OUTPUT0.npy"), a + b)
    save_npy(os.path.join(s, "expected", "OUTPUT1.npy"), a - b)
    save_txt(os.path.join(s, "expected", "OUTPUT0.txt"), a + b)
    save_txt(os.path.join(s, "expected", "OUTPUT1.txt"), a - b)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(784, 512)
        self.fc2 = torch.nn.Linear(512, 512)
        self.fc3 = torch.nn.Linear(512, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return torch.softmax(self.fc3(x), dim=1)


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16 * 7 * 7, 10)
        # Random running statistics, so BatchNormalization does something.
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.2, 0.2)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.max_pool2d(torch.relu(self.bn2(self.conv2(x))), 2)
        return self.fc(torch.flatten(x, 1))


def mlp():
    d = os.path.join(HERE, "mlp")
    torch.manual_seed(1)
    model = MLP().eval()
    export(model, torch.zeros(1, 784), os.path.join(d, "1", "model.onnx"),
           ["input"], ["probabilities"], True)
    write(os.path.join(d, "config.pbtxt"), """\
# A 784-512-512-10 classifier (random weights, seed 1).
name: "mlp"
backend: "onnxruntime"
max_batch_size: 64
input [
  {
    name: "input"
    data_type: TYPE_FP32
    dims: [ 784 ]
  }
]
output [
  {
    name: "probabilities"
    data_type: TYPE_FP32
    dims: [ 10 ]
  }
]
dynamic_batching {
  max_queue_delay_microseconds: 200
}
""")
    s = os.path.join(d, "samples")
    rng = np.random.default_rng(1)
    x = rng.random((1, 784), dtype=np.float32)
    x4 = rng.random((4, 784), dtype=np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
        y4 = model(torch.from_numpy(x4)).numpy()
    save_npy(os.path.join(s, "input.npy"), x)
    save_txt(os.path.join(s, "input.txt"), x)
    save_npy(os.path.join(s, "input_batch4.npy"), x4)
    save_npy(os.path.join(s, "expected", "probabilities.npy"), y)
    save_npy(os.path.join(s, "expected", "probabilities_batch4.npy"), y4)


def cnn():
    d = os.path.join(HERE, "cnn")
    torch.manual_seed(2)
    model = CNN().eval()
    export(model, torch.zeros(1, 1, 28, 28), os.path.join(d, "1", "model.onnx"),
           ["image"], ["logits"], True)
    write(os.path.join(d, "config.pbtxt"), """\
# A small CNN on 1x28x28 images (random weights, seed 2).
name: "cnn"
backend: "onnxruntime"
max_batch_size: 16
input [
  {
    name: "image"
    data_type: TYPE_FP32
    dims: [ 1, 28, 28 ]
  }
]
output [
  {
    name: "logits"
    data_type: TYPE_FP32
    dims: [ 10 ]
  }
]
""")
    s = os.path.join(d, "samples")
    rng = np.random.default_rng(2)
    x = rng.random((1, 1, 28, 28), dtype=np.float32)
    with torch.no_grad():
        y = model(torch.from_numpy(x)).numpy()
    save_npy(os.path.join(s, "image.npy"), x)
    save_json(os.path.join(s, "image.json"), "image", x)
    save_npy(os.path.join(s, "expected", "logits.npy"), y)


def save_onnx(d, nodes, inputs, outputs, initializers=()):
    g = helper.make_graph(nodes, os.path.basename(d), inputs, outputs,
                          initializer=list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="modelfs examples/make_examples.py")
    m.ir_version = 7
    onnx.checker.check_model(m)
    os.makedirs(os.path.join(d, "1"), exist_ok=True)
    onnx.save(m, os.path.join(d, "1", "model.onnx"))


def pipeline():
    """The ensemble: its custom-backend and ONNX steps beside cnn, its
    config and labels."""
    pre = os.path.join(HERE, "pipeline_preprocess")
    # The backend's library is found through --backend-dir (the version
    # directory holds nothing); git keeps the directory through .keep.
    write(os.path.join(pre, "1", ".keep"), "")
    write(os.path.join(pre, "config.pbtxt"), """\
# The pipeline's first step: 8-bit grey pixels to the CNN's input,
# scaled to [-1, 1] with a channel dim, by the example custom backend
# (examples/backends/preprocess.c; serve with --backend-dir build/examples).
name: "pipeline_preprocess"
backend: "preprocess"
max_batch_size: 16
dynamic_batching { }
input [ { name: "pixels", data_type: TYPE_UINT8, dims: [ 28, 28 ] } ]
output [ { name: "image", data_type: TYPE_FP32, dims: [ 1, 28, 28 ] } ]
parameters { key: "mean" value { string_value: "0.5" } }
parameters { key: "std" value { string_value: "0.5" } }
""")
    post = os.path.join(HERE, "pipeline_softmax")
    save_onnx(post, [helper.make_node("Softmax", ["logits"], ["probabilities"], axis=-1)],
              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
              [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", 10])])
    write(os.path.join(post, "config.pbtxt"), """\
# The pipeline's last step: the CNN's logits to probabilities.
name: "pipeline_softmax"
max_batch_size: 16
dynamic_batching { }
input [ { name: "logits", data_type: TYPE_FP32, dims: [ 10 ] } ]
output [ { name: "probabilities", data_type: TYPE_FP32, dims: [ 10 ] } ]
""")
    d = os.path.join(HERE, "pipeline")
    # An ensemble's version directory is empty (Triton's layout); git
    # keeps it through this file, which the repository scan ignores.
    write(os.path.join(d, "1", ".keep"), "")
    write(os.path.join(d, "config.pbtxt"), """\
# preprocess -> cnn -> softmax, run inside the daemon: the intermediate
# tensors ("image", "logits") never leave it.  Triton's ensemble fields.
name: "pipeline"
platform: "ensemble"
max_batch_size: 16
input [ { name: "pixels", data_type: TYPE_UINT8, dims: [ 28, 28 ] } ]
output [
  { name: "probabilities", data_type: TYPE_FP32, dims: [ 10 ], label_filename: "labels.txt" },
  { name: "logits", data_type: TYPE_FP32, dims: [ 10 ] }
]
ensemble_scheduling {
  step [
    {
      model_name: "pipeline_preprocess"
      model_version: -1
      input_map { key: "pixels" value: "pixels" }
      output_map { key: "image" value: "image" }
    },
    {
      model_name: "cnn"
      model_version: -1
      input_map { key: "image" value: "image" }
      output_map { key: "logits" value: "logits" }
    },
    {
      model_name: "pipeline_softmax"
      model_version: -1
      input_map { key: "logits" value: "logits" }
      output_map { key: "probabilities" value: "probabilities" }
    }
  ]
}
""")
    write(os.path.join(d, "labels.txt"), "".join(
        w + "\n" for w in ("zero", "one", "two", "three", "four", "five", "six",
                           "seven", "eight", "nine")))
    s = os.path.join(d, "samples")
    rng = np.random.default_rng(12)
    px = rng.integers(0, 256, size=(1, 28, 28), dtype=np.uint8)
    save_npy(os.path.join(s, "pixels.npy"), px)
    save_txt(os.path.join(s, "pixels.txt"), px)
    torch.manual_seed(2)
    model = CNN().eval()
    # What the backend computes: (pixel / 255 - mean) / std, in float32.
    x = ((px.astype(np.float32) * np.float32(1.0 / 255.0) - np.float32(0.5))
         * np.float32(1.0 / 0.5))[:, None]
    with torch.no_grad():
        logits = model(torch.from_numpy(x)).numpy()
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    save_npy(os.path.join(s, "expected", "logits.npy"), logits)
    save_npy(os.path.join(s, "expected", "probabilities.npy"), e / e.sum(axis=1, keepdims=True))


def running_mean():
    d = os.path.join(HERE, "running_mean")
    f = TensorProto.FLOAT
    save_onnx(d, [
        helper.make_node("Constant", [], ["axes"],
                         value=helper.make_tensor("axes", TensorProto.INT64, [1], [1])),
        helper.make_node("ReduceSum", ["chunk", "axes"], ["sum"], keepdims=1),
        helper.make_node("Constant", [], ["zero"], value=helper.make_tensor("zero", f, [], [0.0])),
        helper.make_node("Pow", ["chunk", "zero"], ["ones"]),
        helper.make_node("ReduceSum", ["ones", "axes"], ["count"], keepdims=1),
        helper.make_node("Concat", ["sum", "count"], ["step"], axis=1),
        helper.make_node("Add", ["total_in", "step"], ["total_out"]),
        helper.make_node("Split", ["total_out"], ["s", "n"], axis=1),
        helper.make_node("Div", ["s", "n"], ["mean"]),
    ], [helper.make_tensor_value_info("chunk", f, ["batch", 16]),
        helper.make_tensor_value_info("total_in", f, ["batch", 2])],
       [helper.make_tensor_value_info("mean", f, ["batch", 1]),
        helper.make_tensor_value_info("total_out", f, ["batch", 2])])
    write(os.path.join(d, "config.pbtxt"), """\
# A stateful model: each request is one chunk of a longer signal, and
# "mean" is the mean of every sample of the sequence so far.  The daemon
# keeps [sum, count] between a sequence's chunks (Triton's implicit
# state); a client only names the sequence (.sequence_id,
# .sequence_start, .sequence_end: examples/stream_chunks.sh).
name: "running_mean"
max_batch_size: 8
input [ { name: "chunk", data_type: TYPE_FP32, dims: [ 16 ] } ]
output [ { name: "mean", data_type: TYPE_FP32, dims: [ 1 ] } ]
sequence_batching {
  oldest { max_candidate_sequences: 64 max_queue_delay_microseconds: 200 }
  max_sequence_idle_microseconds: 10000000
  state [
    {
      input_name: "total_in"
      output_name: "total_out"
      data_type: TYPE_FP32
      dims: [ 2 ]
      initial_state { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true }
    }
  ]
}
""")


def main():
    torch.use_deterministic_algorithms(True)
    add_sub()
    mlp()
    cnn()
    pipeline()
    running_mean()
    for m in ("add_sub", "mlp", "cnn", "pipeline_softmax"):
        g = onnx.load(os.path.join(HERE, m, "1", "model.onnx")).graph
        print("%-8s %s" % (m, " ".join(sorted({n.op_type for n in g.node}))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""sequence_repo.py REPO - stateful models for sequence_batching.bats.

acc (direct) and acc_old (oldest): OUTPUT = STATE_IN + INPUT and
STATE_OUT = OUTPUT, so each sequence's OUTPUT is the running sum of its
inputs; CTRL = [START, END, READY, CORRID] (as floats), from control
inputs of four data types.  Idle limits: 60 s for acc and acc_old (a
loaded machine must not free their sequences mid-test), 300 ms for
acc_idle, Triton's default (1 s) for acc_reload."""
import os
import sys

import onnx
from onnx import TensorProto, helper

ACC = """
name: "{name}"
max_batch_size: 4
sequence_batching {{
  {strategy}
  max_sequence_idle_microseconds: {idle}
  control_input [
    {{ name: "START" control [{{ kind: CONTROL_SEQUENCE_START int32_false_true: [0, 1] }}] }},
    {{ name: "END" control [{{ kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1] }}] }},
    {{ name: "READY" control [{{ kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] }}] }},
    {{ name: "CORRID" control [{{ kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 }}] }}
  ]
  state [{{ input_name: "STATE_IN" output_name: "STATE_OUT" data_type: TYPE_FP32 dims: [2]
            initial_state {{ data_type: TYPE_FP32 dims: [2] zero_data: true }} }}]
}}
"""


def acc_model():
    def inp(name, t, d):
        return helper.make_tensor_value_info(name, t, ["b", d])
    nodes = [
        helper.make_node("Add", ["STATE_IN", "INPUT"], ["OUTPUT"]),
        helper.make_node("Identity", ["OUTPUT"], ["STATE_OUT"]),
        helper.make_node("Cast", ["START"], ["s"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["READY"], ["r"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["CORRID"], ["c"], to=TensorProto.FLOAT),
        helper.make_node("Concat", ["s", "END", "r", "c"], ["CTRL"], axis=1),
    ]
    g = helper.make_graph(
        nodes, "acc",
        [inp("INPUT", TensorProto.FLOAT, 2), inp("STATE_IN", TensorProto.FLOAT, 2),
         inp("START", TensorProto.INT32, 1), inp("END", TensorProto.FLOAT, 1),
         inp("READY", TensorProto.BOOL, 1), inp("CORRID", TensorProto.UINT64, 1)],
        [inp("OUTPUT", TensorProto.FLOAT, 2), inp("STATE_OUT", TensorProto.FLOAT, 2),
         inp("CTRL", TensorProto.FLOAT, 4)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def main():
    repo = sys.argv[1]
    models = {
        "acc": ("direct { }", 60000000),
        "acc_old": ("oldest { max_candidate_sequences: 3 preferred_batch_size: [2] "
                    "max_queue_delay_microseconds: 1000 }", 60000000),
        "acc_idle": ("direct { }", 300000),
        "acc_reload": ("direct { }", 0),
    }
    m = acc_model()
    for name, (strategy, idle) in models.items():
        os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
        onnx.save(m, os.path.join(repo, name, "1", "model.onnx"))
        with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
            f.write(ACC.format(name=name, strategy=strategy, idle=idle))


main()

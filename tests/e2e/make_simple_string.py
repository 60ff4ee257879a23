"""Triton's simple_string example as an ONNX model: INPUT0, INPUT1
[-1, 16] TYPE_STRING (integers as decimal text) -> OUTPUT0 = INPUT0 +
INPUT1, OUTPUT1 = INPUT0 - INPUT1, [-1, 16] TYPE_STRING, built as
Cast(string -> int32), Add/Sub, Cast(int32 -> string).  Also a text model
`upper` (StringNormalizer UPPER on a [-1] string) for .txt round trips,
`is_url` (RegexFullMatch, opset 20, the ONNX specification's pattern:
TEXT [-1] string -> MATCH [-1] bool) and `bad_regex` (a pattern PCRE2
cannot compile: refused at load).

usage: make_simple_string.py REPO"""
import os
import sys

import onnx
from onnx import TensorProto as TP, helper as h

repo = sys.argv[1]


def save(name, graph, config, opset=13):
    os.makedirs(os.path.join(repo, name, "1"), exist_ok=True)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, os.path.join(repo, name, "1", "model.onnx"))
    with open(os.path.join(repo, name, "config.pbtxt"), "w") as f:
        f.write(config)


io = [h.make_tensor_value_info(n, TP.STRING, ["N", 16]) for n in
      ("INPUT0", "INPUT1", "OUTPUT0", "OUTPUT1")]
nodes = [h.make_node("Cast", ["INPUT0"], ["a"], to=TP.INT32),
         h.make_node("Cast", ["INPUT1"], ["b"], to=TP.INT32),
         h.make_node("Add", ["a", "b"], ["sum"]),
         h.make_node("Sub", ["a", "b"], ["diff"]),
         h.make_node("Cast", ["sum"], ["OUTPUT0"], to=TP.STRING),
         h.make_node("Cast", ["diff"], ["OUTPUT1"], to=TP.STRING)]
save("simple_string", h.make_graph(nodes, "simple_string", io[:2], io[2:]), """name: "simple_string"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_STRING dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_STRING dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_STRING dims: [ 16 ] }
]
""")

x = h.make_tensor_value_info("TEXT", TP.STRING, ["C"])
y = h.make_tensor_value_info("OUT", TP.STRING, ["C"])
save("upper", h.make_graph([h.make_node("StringNormalizer", ["TEXT"], ["OUT"],
                                        case_change_action="UPPER")], "upper", [x], [y]),
     """name: "upper"
platform: "onnxruntime_onnx"
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] } ]
""", opset=13)


def regex_model(name, pattern):
    x = h.make_tensor_value_info("TEXT", TP.STRING, ["C"])
    y = h.make_tensor_value_info("MATCH", TP.BOOL, ["C"])
    node = h.make_node("RegexFullMatch", ["TEXT"], ["MATCH"], name="match", pattern=pattern)
    save(name, h.make_graph([node], name, [x], [y]), """name: "%s"
platform: "onnxruntime_onnx"
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "MATCH" data_type: TYPE_BOOL dims: [ -1 ] } ]
""" % name, opset=20)


regex_model("is_url", r"www\.[\w.-]+\.\bcom\b")
regex_model("bad_regex", "(ab")

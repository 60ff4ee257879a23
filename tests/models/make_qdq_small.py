#!/usr/bin/python3
"""make_qdq_small.py DIR - a small static-QDQ INT8 CNN in the form ONNX
Runtime's quantize_static writes (uint8 activations per tensor, int8
weights per output channel, int32 biases, Relu folded into zero points 0),
with fixed quantization parameters and seeded weights, for the INT8
accuracy test (tests/e2e/qdq_int8.bats).

Writes DIR/qdq_small/1/model.onnx, DIR/qdq_small/config.pbtxt and
DIR/input.npy (x [1, 3, 16, 16] = sin(i), the input bench/qdq_calib.js
gives run 0).  tests/models/qdq_small_ort.npy is ONNX Runtime 1.30's output
on that input (made once with `node bench/qdq_calib.js MODEL '[{"name":
"x","dtype":"float32","shape":[1,3,16,16]}]' 0`), the test's reference.

The graph: Q/DQ(x) -> Conv 3->8 3x3 -> Q/DQ -> MaxPool 2x2 -> Q/DQ ->
Conv 8->8 3x3 -> Q/DQ -> Add(pool) -> Q/DQ -> GlobalAveragePool ->
Flatten -> Q/DQ -> Gemm 8->10 -> y [1, 10].
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

RNG = np.random.default_rng(33)
inits, nodes = [], []


def const(name, arr):
    inits.append(numpy_helper.from_array(arr, name))
    return name


def qdq(x, out, scale, zp):
    s = const(out + '_s', np.array(scale, np.float32))
    z = const(out + '_z', np.array(zp, np.uint8))
    nodes.append(helper.make_node('QuantizeLinear', [x, s, z], [out + '_q']))
    nodes.append(helper.make_node('DequantizeLinear', [out + '_q', s, z], [out]))
    return out


def weight(name, shape, axis, x_scale, with_bias=True):
    w = RNG.normal(0, 0.3, shape).astype(np.float32)
    red = tuple(i for i in range(len(shape)) if i != axis)
    ws = (np.abs(w).max(axis=red) / 127).astype(np.float32)
    sh = [1] * len(shape)
    sh[axis] = -1
    wq = np.clip(np.round(w / ws.reshape(sh)), -127, 127).astype(np.int8)
    nodes.append(helper.make_node('DequantizeLinear', [const(name + '_q', wq), const(name + '_s', ws),
                                                       const(name + '_z', np.zeros(ws.shape, np.int8))],
                                  [name], axis=axis))
    if not with_bias:
        return name, None
    bs = (np.float32(x_scale) * ws).astype(np.float32)
    bq = np.round(RNG.normal(0, 0.1, ws.shape) / bs).astype(np.int32)
    nodes.append(helper.make_node('DequantizeLinear', [const(name + 'b_q', bq), const(name + 'b_s', bs),
                                                       const(name + 'b_z', np.zeros(bs.shape, np.int32))],
                                  [name + 'b'], axis=0))
    return name, name + 'b'


def main():
    d = os.path.join(sys.argv[1], 'qdq_small')
    os.makedirs(os.path.join(d, '1'), exist_ok=True)
    xd = qdq('x', 'xd', 2.0 / 255, 128)
    w1, b1 = weight('w1', (8, 3, 3, 3), 0, 2.0 / 255)
    nodes.append(helper.make_node('Conv', [xd, w1, b1], ['c1'], pads=[1, 1, 1, 1]))
    c1 = qdq('c1', 'c1d', 0.02, 0)
    nodes.append(helper.make_node('MaxPool', [c1], ['p'], kernel_shape=[2, 2], strides=[2, 2]))
    p = qdq('p', 'pd', 0.02, 0)
    w2, b2 = weight('w2', (8, 8, 3, 3), 0, 0.02)
    nodes.append(helper.make_node('Conv', [p, w2, b2], ['c2'], pads=[1, 1, 1, 1]))
    c2 = qdq('c2', 'c2d', 0.03, 100)
    nodes.append(helper.make_node('Add', [p, c2], ['s']))
    s = qdq('s', 'sd', 0.03, 90)
    nodes.append(helper.make_node('GlobalAveragePool', [s], ['g']))
    g = qdq('g', 'gd', 0.01, 100)
    nodes.append(helper.make_node('Flatten', [g], ['f']))
    f = qdq('f', 'fd', 0.01, 100)
    w3, b3 = weight('w3', (10, 8), 0, 0.01)
    nodes.append(helper.make_node('Gemm', [f, w3, b3], ['y'], transB=1))
    graph = helper.make_graph(nodes, 'qdq_small',
                              [helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid('', 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(d, '1', 'model.onnx'))
    with open(os.path.join(d, 'config.pbtxt'), 'w') as fh:
        fh.write('max_batch_size: 0\n')
    x = np.sin(np.arange(3 * 16 * 16, dtype=np.float64)).astype(np.float32).reshape(1, 3, 16, 16)
    np.save(os.path.join(sys.argv[1], 'input.npy'), x)


if __name__ == '__main__':
    main()

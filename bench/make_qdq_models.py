#!/usr/bin/python3
"""make_qdq_models.py - static QDQ INT8 versions of FP32 ONNX models, the
form ONNX Runtime's quantize_static writes by default (QuantFormat.QDQ,
per_channel=True, activations QUInt8, weights QInt8, MinMax calibration),
built with the onnx package alone (onnxruntime's Python quantization tool is
not a Debian package; make bench's peer is onnxruntime-node).

    make_qdq_models.py SRC.onnx DST.onnx [--ops Conv,Gemm,...] [--batch N]

What it writes, as quantize_static does:
- every float activation read by a quantized operator gets
  QuantizeLinear -> DequantizeLinear (uint8, per tensor, asymmetric:
  range [min(lo, 0), max(hi, 0)] over the calibration runs, scale =
  range / 255, zero point = round(-lo / scale)), and every reader of the
  value reads the DequantizeLinear's output;
- Conv/Gemm/MatMul constant weights: int8, symmetric, per output channel
  (Conv axis 0, Gemm with transB axis 0, MatMul axis 1), scale = max|w|/127;
  biases int32 with scale x_scale * w_scale[c], zero point 0;
- a Relu whose input is a quantized operator's only output is removed (its
  range, which starts at 0, quantizes that output: zero point 0 clamps
  what Relu would), as QDQRemovableActivation does;
- MaxPool and Flatten outputs reuse their input's scale and zero point.
--ops picks the operators (default Conv,Gemm,MatMul,Add,MaxPool,
GlobalAveragePool,Flatten,Relu); MatMuls whose B is not a constant are
left in float (--ops for a transformer: MatMul).
--dynamic writes quantize_dynamic's form instead: DynamicQuantizeLinear ->
MatMulInteger -> Cast -> Mul for each MatMul with a constant B (weights
int8 per tensor), no calibration.
Calibration: bench/qdq_calib.js runs the model in ONNX Runtime (node) on
4 generated inputs of batch --batch (default 1).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = {'MaxPool', 'Flatten'}
WEIGHTED = {'Conv', 'Gemm', 'MatMul'}


def input_specs(g, inits, batch):
    specs = []
    names = {TensorProto.FLOAT: 'float32', TensorProto.INT64: 'int64', TensorProto.INT32: 'int32'}
    for i in g.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = [d.dim_value if d.dim_value else batch for d in t.shape.dim]
        specs.append({'name': i.name, 'dtype': names[t.elem_type], 'shape': shape})
    return specs


def calibrate(model, specs, runs=4):
    """{value: (lo, hi)} over every float value of the graph."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    m = onnx.shape_inference.infer_shapes(m)
    floats = {v.name for v in list(m.graph.value_info) + list(m.graph.input)
              if v.type.tensor_type.elem_type == TensorProto.FLOAT}
    have = {o.name for o in m.graph.output}
    for n in m.graph.node:
        for o in n.output:
            if o in floats and o not in have:
                m.graph.output.append(helper.make_tensor_value_info(o, TensorProto.FLOAT, None))
                have.add(o)
    for i in m.graph.input:
        if i.name in floats and i.name not in have:
            # an input as an output: through an Identity
            m.graph.node.append(helper.make_node('Identity', [i.name], [i.name + '_calib']))
            m.graph.output.append(helper.make_tensor_value_info(i.name + '_calib', TensorProto.FLOAT, None))
    with tempfile.NamedTemporaryFile(suffix='.onnx', delete=False) as f:
        f.write(m.SerializeToString())
        tmp = f.name
    try:
        out = subprocess.run(['node', os.path.join(HERE, 'qdq_calib.js'), tmp, json.dumps(specs), str(runs)],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(tmp)
    r = json.loads(out)
    for k in list(r):
        if k.endswith('_calib'):
            r[k[:-6]] = r.pop(k)
    return r


def act_params(lo, hi):
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = np.float32((hi - lo) / 255.0)
    if scale == 0:
        return np.float32(1.0), 0
    zp = int(np.clip(np.round(-lo / scale), 0, 255))
    return scale, zp


def quantize(model, ranges, ops):
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    readers = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}

    def is_q(n):
        if n.op_type not in ops:
            return False
        return n.op_type != 'MatMul' or n.input[1] in inits

    # Relu after a quantized operator's only output: removed (the Relu's
    # output name and range go to that operator).
    keep = []
    for n in g.node:
        p = producer.get(n.input[0]) if n.op_type == "Relu" and "Relu" in ops else None
        if p is not None and is_q(p) and p.op_type != 'MaxPool' and len(readers[n.input[0]]) == 1 \
                and n.input[0] not in outputs:
            p.output[0] = n.output[0]
            producer[n.output[0]] = p
            continue
        keep.append(n)
    del g.node[:]
    g.node.extend(keep)
    readers = {}
    for n in g.node:
        for i in n.input:
            readers.setdefault(i, []).append(n)

    params = {}  # value -> (scale, zp)
    order = [i.name for i in g.input] + [o for n in g.node for o in n.output]
    want = set()
    for n in g.node:
        if not is_q(n):
            continue
        acts = [n.input[0]] if n.op_type in WEIGHTED else [i for i in n.input if i and i not in inits]
        want.update(acts)
    for v in order:
        if v not in want or v not in ranges:
            continue
        p = producer.get(v)
        if p is not None and p.op_type in SHARED and p.input[0] in params:
            params[v] = params[p.input[0]]
        else:
            params[v] = act_params(*ranges[v])

    new_nodes, new_inits = [], []

    def const(name, arr):
        new_inits.append(numpy_helper.from_array(arr, name))
        return name

    def add_qdq(v):
        s, z = params[v]
        sn = const(v + '_scale', np.array(s, np.float32))
        zn = const(v + '_zero_point', np.array(z, np.uint8))
        new_nodes.append(helper.make_node('QuantizeLinear', [v, sn, zn], [v + '_QuantizeLinear_Output'],
                                          name=v + '_QuantizeLinear'))
        new_nodes.append(helper.make_node('DequantizeLinear', [v + '_QuantizeLinear_Output', sn, zn],
                                          [v + '_DequantizeLinear_Output'], name=v + '_DequantizeLinear'))

    for v in [i.name for i in g.input]:
        if v in params:
            add_qdq(v)
    for n in g.node:
        x_scale = params.get(n.input[0], (None,))[0] if n.input else None
        if is_q(n) and n.op_type in WEIGHTED and x_scale is not None and n.input[1] in inits:
            w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
            axis = 1 if n.op_type == 'MatMul' else 0
            if n.op_type == 'Gemm' and not any(a.name == 'transB' and a.i for a in n.attribute):
                axis = 1
            red = tuple(i for i in range(w.ndim) if i != axis)
            ws = (np.abs(w).max(axis=red) / 127.0).astype(np.float32)
            ws[ws == 0] = 1.0
            shp = [1] * w.ndim
            shp[axis] = -1
            wq = np.clip(np.round(w / ws.reshape(shp)), -127, 127).astype(np.int8)
            wn = n.input[1]
            const(wn + '_quantized', wq)
            const(wn + '_scale', ws)
            const(wn + '_zero_point', np.zeros(ws.shape, np.int8))
            new_nodes.append(helper.make_node('DequantizeLinear', [wn + '_quantized', wn + '_scale', wn + '_zero_point'],
                                              [wn + '_DequantizeLinear_Output'], axis=axis))
            n.input[1] = wn + '_DequantizeLinear_Output'
            bi = 2 if n.op_type in ('Conv', 'Gemm') else None
            if bi is not None and len(n.input) > 2 and n.input[2] in inits:
                b = numpy_helper.to_array(inits[n.input[2]]).astype(np.float32)
                if b.ndim == 1 and b.shape[0] == ws.shape[0]:
                    bs = (np.float32(x_scale) * ws).astype(np.float32)
                    bq = np.round(b / bs).astype(np.int32)
                    bn = n.input[2]
                    const(bn + '_quantized', bq)
                    const(bn + '_scale', bs)
                    const(bn + '_zero_point', np.zeros(bs.shape, np.int32))
                    new_nodes.append(helper.make_node('DequantizeLinear', [bn + '_quantized', bn + '_scale', bn + '_zero_point'],
                                                      [bn + '_DequantizeLinear_Output'], axis=0))
                    n.input[2] = bn + '_DequantizeLinear_Output'
        new_nodes.append(n)
        for o in n.output:
            if o in params:
                add_qdq(o)
    # every reader of a quantized value reads its DequantizeLinear
    for n in new_nodes:
        if n.op_type in ('QuantizeLinear',):
            continue
        for k, i in enumerate(n.input):
            if i in params:
                n.input[k] = i + '_DequantizeLinear_Output'
    used = set(i for n in new_nodes for i in n.input)
    g.initializer.extend(new_inits)
    kept = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept)
    del g.node[:]
    g.node.extend(new_nodes)
    for o in model.opset_import:
        if o.domain in ('', 'ai.onnx') and o.version < 13:
            o.version = 13
    return model


def dynamic(model):
    """ONNX Runtime's quantize_dynamic form (weights QInt8 per tensor): each
    MatMul with a constant B -> DynamicQuantizeLinear(A) -> MatMulInteger
    -> Cast -> Mul(a_scale * b_scale)."""
    g = model.graph
    inits = {t.name: t for t in g.initializer}
    out, extra = [], []
    for n in g.node:
        if n.op_type != 'MatMul' or n.input[1] not in inits:
            out.append(n)
            continue
        w = numpy_helper.to_array(inits[n.input[1]]).astype(np.float32)
        ws = np.float32(max(np.abs(w).max(), 1e-8) / 127.0)
        wq = np.clip(np.round(w / ws), -127, 127).astype(np.int8)
        b, a, y = n.input[1], n.input[0], n.output[0]
        extra += [numpy_helper.from_array(wq, b + '_quantized'),
                  numpy_helper.from_array(np.array(ws, np.float32), b + '_scale'),
                  numpy_helper.from_array(np.array(0, np.int8), b + '_zero_point')]
        out += [helper.make_node('DynamicQuantizeLinear', [a], [y + '_aq', y + '_as', y + '_az']),
                helper.make_node('MatMulInteger', [y + '_aq', b + '_quantized', y + '_az', b + '_zero_point'],
                                 [y + '_acc']),
                helper.make_node('Cast', [y + '_acc'], [y + '_accf'], to=TensorProto.FLOAT),
                helper.make_node('Mul', [y + '_as', b + '_scale'], [y + '_sc']),
                helper.make_node('Mul', [y + '_accf', y + '_sc'], [y])]
    del g.node[:]
    g.node.extend(out)
    g.initializer.extend(extra)
    used = set(i for n in g.node for i in n.input)
    kept = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(kept)
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('src')
    ap.add_argument('dst')
    ap.add_argument('--ops', default='Conv,Gemm,MatMul,Add,MaxPool,GlobalAveragePool,Flatten,Relu')
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--dynamic', action='store_true',
                    help='quantize_dynamic\'s form instead (MatMuls with a constant B)')
    a = ap.parse_args()
    model = onnx.load(a.src)
    inits = {t.name for t in model.graph.initializer}
    if a.dynamic:
        model = dynamic(model)
    else:
        ranges = calibrate(model, input_specs(model.graph, inits, a.batch))
        model = quantize(model, ranges, set(a.ops.split(',')))
    onnx.checker.check_model(model)
    onnx.save(model, a.dst)
    print(a.dst)


if __name__ == '__main__':
    sys.exit(main())

"""Run ONNX backend test cases through `modelfs run`, the path users take,
and compare every output with the case's expected .pb.

usage: run_backend_cases.py MODELFS DATA_DIR CASE_LIST
CASE_LIST has one case a line, relative to DATA_DIR ("node/test_reshape_...").
Prints one line per failing case and ends with "N passed, M failed";
exits non-zero when any case failed (a load error, a run error, an output
that differs, or a case missing from DATA_DIR)."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper


def run_case(modelfs, case_dir, tmp):
    model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    outputs = [o.name for o in model.graph.output]
    data = os.path.join(case_dir, "test_data_set_0")
    repo = os.path.join(tmp, "repo")
    out = os.path.join(tmp, "out")
    shutil.rmtree(repo, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(repo, "m", "1"))
    os.symlink(os.path.join(case_dir, "model.onnx"), os.path.join(repo, "m", "1", "model.onnx"))
    args = [modelfs, "run", os.path.join(repo, "m"), "--out", out, "--format", "pb"]
    for k, name in enumerate(inputs):
        path = os.path.join(data, "input_%d.pb" % k)
        if os.path.exists(path):   # an optional input may be left out
            args.append("%s=%s" % (name, path))
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        return "exit %d: %s" % (r.returncode, r.stderr.strip())
    for k, o in enumerate(model.graph.output):
        # a sequence or an optional is its ONNX message (SPEC.md section 6)
        kind = o.type.WhichOneof("value")
        w = read_value(os.path.join(data, "output_%d.pb" % k), kind)
        g = read_value(os.path.join(out, o.name + ".pb"), kind)
        why = differs(w, g)
        if why:
            return "output %s: %s" % (o.name, why)
    return None


def read_value(path, kind):
    """A .pb file as a numpy array, a list of them (a sequence), or
    ("optional", value or None)."""
    msg = {"sequence_type": onnx.SequenceProto,
           "optional_type": onnx.OptionalProto}.get(kind, onnx.TensorProto)()
    with open(path, "rb") as f:
        msg.ParseFromString(f.read())
    if kind == "sequence_type":
        return numpy_helper.to_list(msg)
    if kind == "optional_type":
        return ("optional", numpy_helper.to_optional(msg))
    return numpy_helper.to_array(msg)


def differs(w, g):
    if isinstance(w, tuple):
        if (w[1] is None) != (g[1] is None):
            return "optional %s a value, expected %s" % (
                "without" if g[1] is None else "with",
                "none" if w[1] is None else "one")
        return differs(w[1], g[1]) if w[1] is not None else None
    if isinstance(w, list):
        if len(w) != len(g):
            return "sequence of %d tensors, expected %d" % (len(g), len(w))
        for i, (wi, gi) in enumerate(zip(w, g)):
            why = differs(wi, gi)
            if why:
                return "tensor %d: %s" % (i, why)
        return None
    if w.shape != g.shape:
        return "shape %s, expected %s" % (g.shape, w.shape)
    if w.dtype.kind in "fc":
        ok = np.allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True)
    else:
        ok = np.array_equal(g, w)
    return None if ok else "differs"


def main():
    modelfs, data_dir, case_list = sys.argv[1:4]
    cases = [l.strip() for l in open(case_list) if l.strip() and not l.startswith("#")]
    tmp = tempfile.mkdtemp()
    passed = failed = 0
    try:
        for case in cases:
            case_dir = os.path.join(data_dir, case)
            why = "missing" if not os.path.isdir(case_dir) else run_case(modelfs, case_dir, tmp)
            if why:
                print("FAIL %s: %s" % (case, why))
                failed += 1
            else:
                passed += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


main()

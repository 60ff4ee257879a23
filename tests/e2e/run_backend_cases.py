"""Run ONNX backend test cases through `modelfs run`, the path users take,
and compare every output with the case's expected .pb.

usage: run_backend_cases.py MODELFS DATA_DIR CASE_LIST [--jobs N] [--device D]
       run_backend_cases.py MODELFS DATA_DIR --expected CASE_LIST [--jobs N] [--device D]

CASE_LIST has one case a line, "folder/case" as in the conformance runner's
lists (tests/conformance/expected-pass.txt); a case is looked up in
DATA_DIR/folder, then in tests/conformance/folder (torch-elementwise).
Every test_data_set_N of a case runs, one `modelfs run --device D`
process each (D: cpu unless given; the CPU engine is the one the runner's
expected-pass.txt is for, while auto would time both engines and keep the
faster, a choice that varies from run to run, and costs loading the
OpenCL runtime, 5 times the CPU time of a small case); --jobs runs that
many cases at once.

The comparison is the conformance runner's (tests/tools/conformance.c,
compare(); docs/OPERATORS.md, "Conformance"), so both judge a case alike:
the output's data type and shape exactly; FLOAT and DOUBLE within
|got - want| <= 1e-5 + 1e-3 |want|, FLOAT16 within 1e-3 + 4e-3 |want|,
BFLOAT16 within 1e-3 + 8e-3 |want|; NaN matches NaN, infinities exactly;
integers and booleans exactly.  As there, a UINT16 tensor of the data where
the model declares BFLOAT16 is bfloat16 bits (ONNX's generator wrote them
so); `modelfs run` reads such an input .pb the same way (SPEC section 6).
A sequence or optional output is its ONNX message (SequenceProto,
OptionalProto: SPEC section 6): the same kind, count and presence, and
each tensor by the rule above.

Prints one line per failing case, then per folder "node: X/T passed (L
listed, F failed)" (T: the cases in the folder), and ends with "N passed,
M failed"; exits non-zero when any case failed (a load error, a run error,
an output that differs, or a case missing)."""
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TP = onnx.TensorProto
# (atol, rtol) by the expected tensor's type: tests/tools/conformance.c.
TOLERANCE = {TP.FLOAT: (1e-5, 1e-3), TP.DOUBLE: (1e-5, 1e-3),
             TP.FLOAT16: (1e-3, 4e-3), TP.BFLOAT16: (1e-3, 8e-3)}
CASE_TIMEOUT = 60


def bf16_values(t):
    """A BFLOAT16 (or UINT16 holding bfloat16 bits) tensor as float32."""
    a = numpy_helper.to_array(t)
    if a.dtype == np.uint16:
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def compare(name, got, want, declared):
    """None when got matches want, else why not."""
    if want.data_type == TP.UINT16 and declared == TP.BFLOAT16:
        want.data_type = TP.BFLOAT16   # the generator's bfloat16 bits
    if got.data_type != want.data_type:
        return "output %s: type %s, expected %s" % (
            name, TP.DataType.Name(got.data_type), TP.DataType.Name(want.data_type))
    if want.data_type == TP.BFLOAT16:
        g, w = bf16_values(got), bf16_values(want)
    else:
        g, w = numpy_helper.to_array(got), numpy_helper.to_array(want)
    if g.shape != w.shape:
        return "output %s: shape %s, expected %s" % (name, g.shape, w.shape)
    tol = TOLERANCE.get(want.data_type)
    if tol:
        ok = np.allclose(g, w, rtol=tol[1], atol=tol[0], equal_nan=True)
    elif w.dtype.kind == "c":
        ok = np.allclose(g, w, rtol=1e-3, atol=1e-5, equal_nan=True)
    else:
        ok = np.array_equal(g, w)
    if not ok:
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        bad = np.flatnonzero(~np.isclose(g64, w64, rtol=tol[1] if tol else 0,
                                         atol=tol[0] if tol else 0, equal_nan=True))
        i = bad[0] if len(bad) else 0
        return "output %s: element %d is %.9g, expected %.9g" % (
            name, i, g64.flat[i], w64.flat[i])
    return None


def compare_value(name, kind, got_path, want_path, declared):
    """compare() for an output of any kind (ONNX type oneof name)."""
    msg = {"sequence_type": onnx.SequenceProto,
           "optional_type": onnx.OptionalProto}.get(kind, TP)
    got, want = msg(), msg()
    with open(got_path, "rb") as f:
        got.ParseFromString(f.read())
    with open(want_path, "rb") as f:
        want.ParseFromString(f.read())
    return compare_message(name, got, want, declared)


def compare_message(name, got, want, declared):
    if isinstance(want, TP):
        return compare(name, got, want, declared)
    if isinstance(want, onnx.SequenceProto):
        w = list(want.tensor_values) or list(want.sequence_values)
        g = list(got.tensor_values) or list(got.sequence_values)
        if len(g) != len(w):
            return "output %s: a sequence of %d, expected %d" % (name, len(g), len(w))
        for i, (gi, wi) in enumerate(zip(g, w)):
            why = compare_message("%s[%d]" % (name, i), gi, wi, None)
            if why:
                return why
        return None
    # OptionalProto: with a value or without, as expected
    fields = ("tensor_value", "sequence_value", "optional_value")
    w = [getattr(want, f) for f in fields if want.HasField(f)]
    g = [getattr(got, f) for f in fields if got.HasField(f)]
    if len(g) != len(w):
        return "output %s: an optional %s a value, expected %s" % (
            name, "with" if g else "without", "one" if w else "none")
    return compare_message(name, g[0], w[0], None) if w else None


def run_case(modelfs, device, case_dir, tmp):
    model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in inits]
    outputs = [(o.name, o.type.WhichOneof("value"), o.type.tensor_type.elem_type)
               for o in model.graph.output]
    repo = os.path.join(tmp, "repo")
    shutil.rmtree(repo, ignore_errors=True)
    os.makedirs(os.path.join(repo, "m", "1"))
    os.symlink(os.path.join(case_dir, "model.onnx"), os.path.join(repo, "m", "1", "model.onnx"))
    sets = sorted((d for d in os.listdir(case_dir) if d.startswith("test_data_set_")),
                  key=lambda d: int(d.rsplit("_", 1)[1]))
    if not sets:
        return "no test_data_set_N"
    for s in sets:
        data = os.path.join(case_dir, s)
        out = os.path.join(tmp, "out")
        shutil.rmtree(out, ignore_errors=True)
        args = [modelfs, "run", os.path.join(repo, "m"), "--device", device,
                "--out", out, "--format", "pb"]
        for k, name in enumerate(inputs):
            path = os.path.join(data, "input_%d.pb" % k)
            if os.path.exists(path):   # an optional input may be left out
                args.append("%s=%s" % (name, path))
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=CASE_TIMEOUT)
        except subprocess.TimeoutExpired:
            return "%s: timed out after %ds" % (s, CASE_TIMEOUT)
        if r.returncode != 0:
            return "%s: exit %d: %s" % (s, r.returncode, r.stderr.strip())
        for k, (name, kind, declared) in enumerate(outputs):
            path = os.path.join(out, name + ".pb")
            if not os.path.exists(path):
                return "%s: no output %s" % (s, name)
            why = compare_value(name, kind, path, os.path.join(data, "output_%d.pb" % k),
                                declared)
            if why:
                return "%s: %s" % (s, why)
    return None


def find_case(data_dir, case):
    for base in (data_dir, os.path.join(ROOT, "tests", "conformance")):
        d = os.path.join(base, case)
        if os.path.isfile(os.path.join(d, "model.onnx")):
            return d
    return None


def main():
    argv = sys.argv[1:]
    jobs, device, case_list, pos = 1, "cpu", None, []
    while argv:
        a = argv.pop(0)
        if a == "--jobs":
            jobs = int(argv.pop(0))
        elif a == "--device":
            device = argv.pop(0)
        elif a == "--expected":
            case_list = argv.pop(0)
        else:
            pos.append(a)
    if len(pos) == 3 and case_list is None:
        case_list = pos.pop()
    if len(pos) != 2 or case_list is None:
        sys.exit(__doc__)
    modelfs, data_dir = pos
    cases = [l.strip() for l in open(case_list) if l.strip() and not l.startswith("#")]
    start = time.time()
    tmp = tempfile.mkdtemp()

    def one(k):
        case_dir = find_case(data_dir, cases[k])
        if not case_dir:
            return "missing"
        work = os.path.join(tmp, str(k))
        os.makedirs(work)
        try:
            return run_case(modelfs, device, case_dir, work)
        except Exception as e:   # a broken .pb, an unreadable model: that case fails
            return "%s: %s" % (type(e).__name__, e)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(one, range(len(cases))))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    folders = {}
    for case, why in zip(cases, results):
        f = folders.setdefault(case.split("/")[0], [0, 0])
        if why:
            print("FAIL %s: %s" % (case, why))
            f[1] += 1
        else:
            f[0] += 1
    for name, (p, f) in folders.items():
        base = data_dir if os.path.isdir(os.path.join(data_dir, name)) \
            else os.path.join(ROOT, "tests", "conformance")
        d = os.path.join(base, name)
        total = len([c for c in os.listdir(d) if os.path.isdir(os.path.join(d, c))]) \
            if os.path.isdir(d) else 0
        print("%s: %d/%d passed (%d listed, %d failed)" % (name, p, total, p + f, f))
    passed = sum(p for p, _ in folders.values())
    failed = sum(f for _, f in folders.values())
    print("%d cases in %.0fs with %d jobs" % (len(cases), time.time() - start, jobs))
    print("%d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


main()

#!/usr/bin/python3
"""Triton's model-configuration cases (qa/L0_model_config, and the config of
qa/L0_initializer_as_input) against modelfs.

    /usr/bin/python3 tests/triton_config/run.py MODELFS [DIFFERENCES-FILE]

Every case folder under cases/ (README.md) is a model repository: its
models get a small ONNX model written here (from model.json, else from the
config's inputs and outputs; an ensemble gets an empty version folder),
the repository is mounted with `modelfs -f --model-control=none`, and the
case's model is accepted (READY) or refused (UNAVAILABLE), as Triton did
(case.json).  An accepted autofill case also compares the fields Triton's
expected config gives (max_batch_size, dynamic batching, inputs, outputs,
KIND_CPU instance counts) with config.json.

A case whose outcome differs from Triton's passes only when
known-differences.txt lists it with the reason; a listed case that now
matches Triton fails (the list is stale).  Every differing case and its
reason go to DIFFERENCES-FILE (build/test-logs/triton-config-differences.txt).
The last line is "N passed, M failed".
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases")
TYPES = {"BOOL": TensorProto.BOOL, "UINT8": TensorProto.UINT8, "UINT16": TensorProto.UINT16,
         "UINT32": TensorProto.UINT32, "UINT64": TensorProto.UINT64, "INT8": TensorProto.INT8,
         "INT16": TensorProto.INT16, "INT32": TensorProto.INT32, "INT64": TensorProto.INT64,
         "FP16": TensorProto.FLOAT16, "FP32": TensorProto.FLOAT, "FP64": TensorProto.DOUBLE}


# ---- a config's inputs and outputs, enough to write a model of them ----

def tokens(text):
    text = re.sub(r"#[^\n]*", "", text)
    return re.findall(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+', text)


def parse_message(toks, i):
    """Fields of one message from toks[i] up to '}' or the end: name -> list of values."""
    fields = {}
    while i < len(toks) and toks[i] != "}":
        name = toks[i]
        i += 1
        if toks[i] == ":":
            i += 1
        if toks[i] == "[":
            i += 1
            while toks[i] != "]":
                v, i = parse_value(toks, i)
                fields.setdefault(name, []).append(v)
                if toks[i] == ",":
                    i += 1
            i += 1
        else:
            v, i = parse_value(toks, i)
            fields.setdefault(name, []).append(v)
        if i < len(toks) and toks[i] in (",", ";"):
            i += 1
    return fields, i


def parse_value(toks, i):
    if toks[i] == "{":
        v, i = parse_message(toks, i + 1)
        return v, i + 1
    t = toks[i]
    return (t[1:-1] if t.startswith('"') else t), i + 1


def config_io(config_text):
    """(inputs, outputs) as [name, type, dims] with the batch dim, from a config."""
    cfg, _ = parse_message(tokens(config_text), 0)
    mbs = int(cfg.get("max_batch_size", ["0"])[0])
    sides = []
    for side in ("input", "output"):
        ios = []
        for io in cfg.get(side, []):
            shape = io.get("reshape", [{}])[0].get("shape") if "reshape" in io else None
            dims = [max(int(d), 1) if int(d) != -1 else -1
                    for d in (shape if shape is not None else io.get("dims", []))]
            dt = io.get("data_type", ["TYPE_FP32"])[0].replace("TYPE_", "")
            ios.append([io.get("name", ["x"])[0], dt if dt in TYPES else "FP32",
                        (["B"] if mbs > 0 else []) + dims])
        sides.append(ios)
    return sides


def write_onnx(path, inputs, outputs, initializers=None):
    """Output k is input (k mod n) cast to its type: loads, runs where shapes agree.
    initializers: {input name: value}, inputs that are also initializers
    holding that value (Triton's L0_initializer_as_input)."""
    def info(io):
        dims = ["d%d" % k if d == -1 else d for k, d in enumerate(io[2])]
        return helper.make_tensor_value_info(io[0], TYPES[io[1]], dims)
    nodes = []
    for k, out in enumerate(outputs):
        src = inputs[k % len(inputs)][0]
        nodes.append(helper.make_node("Cast", [src], [out[0]], to=TYPES[out[1]]))
    inits = []
    for io in inputs:
        if io[0] in (initializers or {}):
            n = 1
            for d in io[2]:
                n *= d
            inits.append(helper.make_tensor(io[0], TYPES[io[1]], io[2], [initializers[io[0]]] * n))
    graph = helper.make_graph(nodes, "case", [info(i) for i in inputs], [info(o) for o in outputs],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    onnx.save(model, path)


def prepare_model(src, dst):
    shutil.copytree(src, dst)
    cfg_path = os.path.join(dst, "config.pbtxt")
    cfg = open(cfg_path).read() if os.path.exists(cfg_path) else ""
    os.makedirs(os.path.join(dst, "1"), exist_ok=True)
    if re.search(r'^\s*platform:\s*"ensemble"', cfg, re.M):
        return
    spec = os.path.join(dst, "model.json")
    if os.path.exists(spec):
        io = json.load(open(spec))
        inputs, outputs = io["inputs"], io["outputs"]
        initializers = io.get("initializers")
        os.unlink(spec)
    else:
        inputs, outputs = config_io(cfg)
        initializers = None
    if inputs and outputs:
        write_onnx(os.path.join(dst, "1", "model.onnx"), inputs, outputs, initializers)


# ---- mounting a repository and reading what it says ----

def wait_for(cond, secs):
    end = time.time() + secs
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError as e:
        return "(%s)" % e.strerror


def mount_and_read(modelfs, repo, models):
    """{model: (status, config.json dict or None)} for models of repo."""
    mnt = tempfile.mkdtemp(prefix="triton-config-mnt.")
    log = open(mnt + ".log", "w")
    d = subprocess.Popen([modelfs, "-f", "--model-control=none", repo, mnt],
                         stdout=log, stderr=log)
    out = {}
    try:
        if not wait_for(lambda: os.path.ismount(mnt) or d.poll() is not None, 30) or d.poll() is not None:
            raise RuntimeError("modelfs did not mount %s: %s" % (repo, read(mnt + ".log")[-500:]))
        for m in models:
            st = os.path.join(mnt, m, "status")
            wait_for(lambda: not read(st).startswith(("LOADING", "(")), 30)
            status = read(st).strip()
            cfg = None
            if status.startswith("READY"):
                try:
                    cfg = json.loads(read(os.path.join(mnt, m, "config.json")))
                except ValueError:
                    pass
            out[m] = (status, cfg)
    finally:
        subprocess.run(["fusermount3", "-u", mnt], stderr=subprocess.DEVNULL)
        try:
            d.wait(timeout=30)
        except subprocess.TimeoutExpired:
            d.kill()
            d.wait()
        log.close()
        os.unlink(mnt + ".log")
        os.rmdir(mnt)
    return out


# ---- judging ----

def field_diffs(expect, cfg):
    diffs = []
    if cfg.get("max_batch_size", 0) != expect["max_batch_size"]:
        diffs.append("max_batch_size %s, Triton's %s" % (cfg.get("max_batch_size"), expect["max_batch_size"]))
    if ("dynamic_batching" in cfg) != expect["dynamic_batching"]:
        diffs.append("dynamic_batching %s, Triton's %s" % ("dynamic_batching" in cfg, expect["dynamic_batching"]))
    for side in ("input", "output"):
        got = sorted(({"name": io["name"], "data_type": io["data_type"], "dims": io["dims"]}
                      for io in cfg.get(side, [])), key=lambda x: x["name"])
        if got != expect[side]:
            diffs.append("%s %s, Triton's %s" % (side, json.dumps(got), json.dumps(expect[side])))
    for want in expect.get("instance_group", []):
        got = [g for g in cfg.get("instance_group", []) if g.get("kind") == want["kind"]]
        if [g.get("count") for g in got] != [want["count"]]:
            diffs.append("%s count %s, Triton's %d" % (want["kind"], [g.get("count") for g in got], want["count"]))
    return diffs


def known_differences():
    known = {}
    path = os.path.join(HERE, "known-differences.txt")
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            name, _, why = line.partition(" ")
            known[name] = why.strip()
    return known


def main():
    modelfs = os.path.abspath(sys.argv[1])
    diff_path = sys.argv[2] if len(sys.argv) > 2 else "build/test-logs/triton-config-differences.txt"
    known = known_differences()
    tmp = tempfile.mkdtemp(prefix="triton-config.")
    cases = sorted(os.listdir(CASES))
    shared = os.path.join(tmp, "single")
    os.makedirs(shared)
    repos = {shared: []}
    info = {}
    for c in cases:
        meta = json.load(open(os.path.join(CASES, c, "case.json")))
        models = sorted(m for m in os.listdir(os.path.join(CASES, c))
                        if os.path.isdir(os.path.join(CASES, c, m)))
        if len(models) == 1 and not os.path.exists(os.path.join(shared, models[0])):
            repo = shared
        else:
            repo = os.path.join(tmp, c)
            repos[repo] = []
        for m in models:
            prepare_model(os.path.join(CASES, c, m), os.path.join(repo, m))
        repos[repo].append(meta["model"])
        info[c] = (repo, meta)
    seen = {}
    for repo, models in repos.items():
        for m, r in mount_and_read(modelfs, repo, models).items():
            seen[(repo, m)] = r
    passed = failed = 0
    differences = []
    for c in cases:
        repo, meta = info[c]
        status, cfg = seen[(repo, meta["model"])]
        outcome = "accept" if status.startswith("READY") else "refuse"
        why = status.split(" - ", 1)[1] if " - " in status else status
        diffs = []
        if outcome != meta["triton"]:
            diffs.append("modelfs %ss (%s), Triton %ss" % (outcome, why[:300], meta["triton"]))
        elif outcome == "accept" and "expect" in meta:
            diffs = field_diffs(meta["expect"], cfg or {})
        if diffs:
            differences.append("%s: %s\n    reason: %s" % (c, "; ".join(diffs), known.get(c, "NOT LISTED")))
        ok = bool(diffs) == (c in known)
        verdict = ("ok" if not diffs else "known difference") if ok else \
                  ("FAIL (listed in known-differences.txt, but now matches Triton)" if not diffs else "FAIL")
        print("%-70s triton %-6s modelfs %-6s %s" % (c, meta["triton"], outcome, verdict))
        if not ok and diffs:
            print("    " + "; ".join(diffs))
        if outcome == "refuse" and ok:
            print("    modelfs: " + why[:300])
        passed += ok
        failed += not ok
    os.makedirs(os.path.dirname(os.path.abspath(diff_path)), exist_ok=True)
    with open(diff_path, "w") as f:
        f.write("# Cases of Triton's qa/L0_model_config whose outcome in modelfs differs, with the reason\n")
        f.write("\n".join(differences) + "\n")
    shutil.rmtree(tmp)
    print("differences from Triton: %d (listed in %s)" % (len(differences), diff_path))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


sys.exit(main())

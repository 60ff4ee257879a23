#!/usr/bin/python3
"""Write tests/triton_config/cases/ from Triton's qa/L0_model_config/.

Run once by hand, not at test time (the suite runs on the committed
cases):

    git --git-dir=MIRROR archive HEAD qa/L0_model_config | tar -x -C /tmp/t
    /usr/bin/python3 tests/triton_config/import_triton.py /tmp/t/qa/L0_model_config

Each case becomes cases/<group>.<case>/: a model repository (one folder per
model with Triton's config.pbtxt, adapted as README.md says) and case.json:

    {"model": the model whose outcome is compared,
     "triton": "accept" | "refuse",
     "triton_error": Triton's expected message (refusals),
     "expect": {field: value} from Triton's expected config (acceptances),
     "source": the Triton case it comes from}

A folder may hold model.json, the I/O of the ONNX model run.py generates
for it where the config does not give them all (Triton's own model.onnx
files are not copied: run.py writes a small model of the same I/O).
"""
import json
import os
import re
import shutil
import sys

SRC = sys.argv[1]
HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "cases")

# Triton's qa_model_repository models the onnx cases use: INPUT0/INPUT1
# int32 [B,16] -> OUTPUT0/OUTPUT1 int8 (sum and difference).
def add_sub(batch):
    d = ["B", 16] if batch else [16]
    return {"inputs": [["INPUT0", "INT32", d], ["INPUT1", "INT32", d]],
            "outputs": [["OUTPUT0", "INT8", d], ["OUTPUT1", "INT8", d]]}

MODEL_IO = {
    "autofill_noplatform/onnx/bad_max_batch_size": add_sub(False),
    "autofill_noplatform_success/onnx/no_config_no_batch": add_sub(False),
    # qa_identity_model_repository/onnx_zero_1_float16
    "autofill_noplatform_success/onnx/cpu_instance": {
        "inputs": [["INPUT0", "FP16", ["B", "N", "M"]]], "outputs": [["OUTPUT0", "FP16", ["B", "N", "M"]]]},
}
DEFAULT_IO = add_sub(True)

# Cases left out, by prefix, with the reason (README.md lists them).
SKIP = {
    "noautofill_platform/batch_input": "batch_input: modelfs has no batch inputs",
    "noautofill_platform/batch_output": "batch_output: modelfs has no batch outputs",
    "noautofill_platform/control_": "sequence_batching control tensors (not modelfs's yet)",
    "autofill_noplatform/ensemble/invalid_decoupled_branching": "decoupled models (the repeat backend)",
}


def text(path):
    with open(path) as f:
        return f.read()


def strip_license(t):
    return "".join(l for l in t.splitlines(True) if not l.startswith("#")).lstrip("\n")


def expected_texts(d):
    names = sorted(n for n in os.listdir(d) if n.startswith("expected") and
                   "unsupported" not in n and "ensemble" not in n)
    return [text(os.path.join(d, n)).strip() for n in names]


def write_model(dst, name, config, io=None, drop_backend=False):
    md = os.path.join(dst, name)
    os.makedirs(md, exist_ok=True)
    if config is not None:
        config = strip_license(config)
        if drop_backend:
            # Triton's "identity" backend: an ONNX model of the same I/O
            # stands in for it (run.py writes it from the config).
            config = re.sub(r'^\s*backend:\s*"identity"\s*\n', "", config, flags=re.M)
        with open(os.path.join(md, "config.pbtxt"), "w") as f:
            f.write(config)
    if io is not None:
        with open(os.path.join(md, "model.json"), "w") as f:
            json.dump(io, f)


# Triton's expected config (text format) -> the fields the suite checks.
def expect_fields(exp):
    e = {}
    m = re.search(r"^max_batch_size: (\d+)", exp, re.M)
    e["max_batch_size"] = int(m.group(1)) if m else 0
    e["dynamic_batching"] = bool(re.search(r"^dynamic_batching", exp, re.M))
    ios = {"input": [], "output": []}
    for kind, body in re.findall(r"^(input|output) \{\n(.*?)^\}", exp, re.M | re.S):
        name = re.search(r'name: "([^"]*)"', body).group(1)
        dt = re.search(r"data_type: (\w+)", body).group(1)
        dims = [int(x) for x in re.findall(r"dims: (-?\d+)", body)]
        ios[kind].append({"name": name, "data_type": dt, "dims": dims})
    for k in ("input", "output"):
        e[k] = sorted(ios[k], key=lambda x: x["name"])
    groups = []
    for body in re.findall(r"^instance_group \{\n(.*?)^\}", exp, re.M | re.S):
        kind = re.search(r"kind: (\w+)", body).group(1)
        count = int(re.search(r"count: (\d+)", body).group(1))
        if kind == "KIND_CPU":
            groups.append({"kind": kind, "count": count})
    if groups:
        e["instance_group"] = groups
    return e


def skipped(rel):
    return next((why for p, why in SKIP.items() if rel.startswith(p)), None)


def case(rel, model, triton, dst_id, **extra):
    c = {"model": model, "triton": triton, "source": "qa/L0_model_config/" + rel}
    c.update(extra)
    with open(os.path.join(OUT, dst_id, "case.json"), "w") as f:
        json.dump(c, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    n = 0
    # Config checks: Triton adds each platform in turn; modelfs's is
    # onnxruntime_onnx.  run.py writes a model of the config's I/O.
    grp = "noautofill_platform"
    for t in sorted(os.listdir(os.path.join(SRC, grp))):
        rel = grp + "/" + t
        if skipped(rel):
            continue
        dst = os.path.join(OUT, grp + "." + t)
        cfg = re.sub(r"^platform:.*\n", "", strip_license(text(os.path.join(SRC, rel, "config.pbtxt"))),
                     flags=re.M)
        write_model(dst, t, cfg.rstrip("\n") + '\nplatform: "onnxruntime_onnx"\n')
        case(rel, t, "refuse", grp + "." + t, triton_error=expected_texts(os.path.join(SRC, rel)))
        n += 1
    for grp, verdict in (("autofill_noplatform", "refuse"), ("autofill_noplatform_success", "accept")):
        for sub in ("onnx", "ensemble"):
            for t in sorted(os.listdir(os.path.join(SRC, grp, sub))):
                rel = "%s/%s/%s" % (grp, sub, t)
                src = os.path.join(SRC, rel)
                if skipped(rel):
                    continue
                cid = "%s.%s.%s" % (grp, sub, t)
                dst = os.path.join(OUT, cid)
                if sub == "onnx":
                    cfg = os.path.join(src, "config.pbtxt")
                    write_model(dst, t, text(cfg) if os.path.exists(cfg) else None,
                                MODEL_IO.get(rel, DEFAULT_IO))
                elif os.path.exists(os.path.join(src, "config.pbtxt")):
                    # one model: the case folder is the model
                    write_model(dst, t, text(os.path.join(src, "config.pbtxt")), drop_backend=True)
                else:
                    for m in sorted(os.listdir(src)):
                        if os.path.isdir(os.path.join(src, m)):
                            write_model(dst, m, text(os.path.join(src, m, "config.pbtxt")),
                                        drop_backend=True)
                extra = {}
                if verdict == "refuse":
                    extra["triton_error"] = expected_texts(src)
                elif sub == "onnx":
                    extra["expect"] = expect_fields(text(os.path.join(src, "expected")))
                case(rel, t, verdict, cid, **extra)
                n += 1
    grp = "special_cases"
    for t in sorted(os.listdir(os.path.join(SRC, grp))):
        rel = grp + "/" + t
        cid = grp + "." + t
        cfg = text(os.path.join(SRC, rel, "config.pbtxt"))
        write_model(os.path.join(OUT, cid), t, cfg, None if "input" in cfg else DEFAULT_IO)
        case(rel, t, "refuse", cid, triton_error=expected_texts(os.path.join(SRC, rel)))
        n += 1
    print("%d cases written to %s" % (n, OUT))


main()

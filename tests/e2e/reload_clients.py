"""reload_clients.py MNT MODEL CLIENTS STOPFILE OUT [--allow-enoent]
                   [--pipeline PIXELS EXPECTED]

CLIENTS threads send add_sub requests through MNT/MODEL/infer without
pause until STOPFILE exists, check every result, and write a JSON summary
to OUT: ok, fail, versions (model_version -> count), enoent, errors (the
first few).  With --allow-enoent a request refused with ENOENT (the model
was removed) is counted apart, not as a failure.  With --pipeline the
requests are the example pipeline ensemble's instead: PIXELS (.npy, UINT8
[1,28,28]) in, "probabilities" checked against EXPECTED (.npy) within
1e-5.  Used by reload.bats and ensemble.bats."""
import errno
import json
import os
import sys
import threading

from infer_session import infer

mnt, model, n, stop, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
allow_enoent = "--allow-enoent" in sys.argv
lock = threading.Lock()
summary = {"ok": 0, "fail": 0, "enoent": 0, "versions": {}, "errors": []}


pipeline = None
if "--pipeline" in sys.argv:
    import numpy as np
    at = sys.argv.index("--pipeline")
    pixels = np.load(sys.argv[at + 1])
    pipeline = (json.dumps({"inputs": [{"name": "pixels", "shape": list(pixels.shape),
                                        "datatype": "UINT8",
                                        "data": pixels.reshape(-1).tolist()}]}).encode(),
                np.load(sys.argv[at + 2]).reshape(-1))


def transact(req):
    """One infer transaction: the answer, or an exception with its error."""
    r = infer(os.path.join(mnt, model, "infer"), req)
    if "error" in r:
        if allow_enoent and "no model named" in r["error"]:
            # opened just before the model was removed: refused like ENOENT
            raise OSError(errno.ENOENT, r["error"])
        raise RuntimeError(r["error"])
    return r


def one(c, k):
    if pipeline:
        r = transact(pipeline[0])
        p = [t["data"] for t in r["outputs"] if t["name"] == "probabilities"][0]
        if np.max(np.abs(np.array(p, dtype=np.float32) - pipeline[1])) > 1e-5:
            raise RuntimeError("wrong probabilities: %s" % p)
        return r["model_version"]
    a = [float((c + i) % 50) for i in range(16)]
    b = [float((k + i) % 50) for i in range(16)]
    r = transact(json.dumps({"inputs": [
        {"name": "INPUT0", "shape": [16], "datatype": "FP32", "data": a},
        {"name": "INPUT1", "shape": [16], "datatype": "FP32", "data": b}]}).encode())
    o = {t["name"]: t["data"] for t in r["outputs"]}
    if o["OUTPUT0"] != [x + y for x, y in zip(a, b)] or o["OUTPUT1"] != [x - y for x, y in zip(a, b)]:
        raise RuntimeError("wrong result from version %s" % r.get("model_version"))
    return r["model_version"]


def client(c):
    k = 0
    while not os.path.exists(stop):
        k += 1
        try:
            v = one(c, k)
            with lock:
                summary["ok"] += 1
                summary["versions"][v] = summary["versions"].get(v, 0) + 1
        except OSError as e:
            with lock:
                if allow_enoent and e.errno == errno.ENOENT:
                    summary["enoent"] += 1
                else:
                    summary["fail"] += 1
                    if len(summary["errors"]) < 5:
                        summary["errors"].append("client %d: %s" % (c, e))
        except Exception as e:  # noqa: BLE001 - every failure is counted and shown
            with lock:
                summary["fail"] += 1
                if len(summary["errors"]) < 5:
                    summary["errors"].append("client %d: %s" % (c, e))


ts = [threading.Thread(target=client, args=(c,)) for c in range(n)]
for t in ts:
    t.start()
for t in ts:
    t.join()
with open(out, "w") as f:
    json.dump(summary, f)

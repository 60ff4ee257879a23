"""Clients for queue.bats: put requests in a model's queue behind a
running one and report the order in which they finished.

  queue_clients.py MODEL_DIR BLOCKER NAME[:infer][:priority=P][:timeout=T]...

BLOCKER is a request directory name: it gets an 8-row input and must be
RUNNING before the others are written.  Each NAME is a request directory
(made here) or, with ':infer', a session on MODEL_DIR/infer; priority and
timeout go to .priority/.timeout or the infer parameters.  Prints the
names in the order their results arrived, one line; a failed one prints
NAME=ERRNO (the errno's name) or NAME=error:<message> for infer.
"""
import errno
import io
import json
import os
import sys
import threading
import time

import numpy as np

from infer_session import infer

model_dir, blocker, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
rng = np.random.default_rng(7)
finished = []
lock = threading.Lock()


def done(label):
    with lock:
        finished.append(label)


def tree_request(name, x, priority, timeout):
    req = os.path.join(model_dir, "requests", name)
    os.mkdir(req)
    if priority is not None:
        with open(os.path.join(req, ".priority"), "w") as f:
            f.write("%d\n" % priority)
    if timeout is not None:
        with open(os.path.join(req, ".timeout"), "w") as f:
            f.write("%d\n" % timeout)
    # Not np.save(path): it writes through a dup()ed descriptor and does
    # not report that descriptor's close(), where the input is committed.
    buf = io.BytesIO()
    np.save(buf, x)
    fd = os.open(os.path.join(req, "x.npy"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        os.write(fd, buf.getvalue())
    finally:
        os.close(fd)
    return req


def read_tree(name, req, x):
    try:
        y = np.load(os.path.join(req, "y.npy"))
        assert np.array_equal(y, x), name
        done(name)
    except OSError as e:
        done("%s=%s" % (name, errno.errorcode[e.errno]))


def infer_body(x, priority, timeout):
    params = {}
    if priority is not None:
        params["priority"] = priority
    if timeout is not None:
        params["timeout"] = timeout
    body = {"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                        "data": x.ravel().tolist()}], "parameters": params}
    return json.dumps(body).encode()


def run_infer(name, x, body):
    r = infer(os.path.join(model_dir, "infer"), body)
    if "error" in r:
        done("%s=error:%s" % (name, r["error"]))
    else:
        y = np.array(r["outputs"][0]["data"], dtype=np.float32).reshape(x.shape)
        assert np.array_equal(y, x), name
        done(name)


def wait_running(req):
    for _ in range(1500):
        with open(os.path.join(req, "status")) as f:
            if f.read().startswith("RUNNING"):
                return
        time.sleep(0.01)
    sys.exit("the blocker never ran")


# Everything is made before the blocker runs, so that the requests reach
# the queue while it runs.
clients = []
for spec in specs:
    parts = spec.split(":")
    c = {"name": parts[0], "infer": False, "priority": None, "timeout": None,
         "x": rng.random((1, 256, 1024), dtype=np.float32)}
    for p in parts[1:]:
        if p == "infer":
            c["infer"] = True
        elif p.startswith("priority="):
            c["priority"] = int(p[9:])
        elif p.startswith("timeout="):
            c["timeout"] = int(p[8:])
    if c["infer"]:
        c["body"] = infer_body(c["x"], c["priority"], c["timeout"])
    clients.append(c)
xb = rng.random((8, 256, 1024), dtype=np.float32)
breq = tree_request(blocker, xb, None, None)
wait_running(breq)
threads = [threading.Thread(target=read_tree, args=(blocker, breq, xb))]
threads[0].start()
for c in clients:
    if c["infer"]:
        t = threading.Thread(target=run_infer, args=(c["name"], c["x"], c["body"]))
        t.start()
        # The session is queued once its first read went in.
        time.sleep(0.3)
    else:
        try:
            req = tree_request(c["name"], c["x"], c["priority"], c["timeout"])
        except OSError as e:
            done("%s=%s" % (c["name"], errno.errorcode[e.errno]))
            continue
        t = threading.Thread(target=read_tree, args=(c["name"], req, c["x"]))
        t.start()
    threads.append(t)
for t in threads:
    t.join()
print(" ".join(finished))

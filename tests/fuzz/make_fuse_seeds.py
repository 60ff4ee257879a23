"""make_fuse_seeds.py - write the seeds of the fuse_requests and fuse_infer
libFuzzer targets (tests/fuzz/corpus/fuse_*/): programs in the byte
language those targets read (fuzz_fuse_requests.c, fuzz_fuse_infer.c).
Run from the top of the tree; the files are committed."""
import json
import os

# Indices into fuzz_fuse_requests.c's names[] (a byte b with b & 7 == 7
# means raw bytes, so such indices are given as index + 21).
R, Q, IN0_TXT, IN1_TXT, IN0_JSON, IN1_NPY = 0, 1, 2, 3, 4, 5
OUT0_TXT, OUT1_JSON, TMP, STATUS, ERROR = 8, 9, 11, 12, 13
# Node table after the prelude: 0 root, 1 add_sub, 2 requests.
MKDIR, LOOKUP, CREATE, OPEN, WRITE, FLUSH, RELEASE, READ = 0, 1, 2, 3, 4, 5, 6, 7
UNLINK, RMDIR, RENAME, GETATTR, SETATTR, READDIR, FORGET, FSYNC = 8, 9, 10, 11, 12, 13, 14, 15


def chunk(b):
    return bytes([len(b) & 255, len(b) >> 8]) + b


def op(code, node, name, *rest):
    return bytes([code, node, name]) + b"".join(rest)


def write(node, data, fh=0):
    return op(WRITE, node, 0, chunk(data), bytes([fh, 0]))


def one_request(fmt_a, a, fmt_b, b, out_name, out_node):
    return b"".join([
        op(MKDIR, 2, R),                                  # node 3: r
        op(CREATE, 3, fmt_a, b"\x01"),                    # node 4, fh 0
        write(4, a), op(RELEASE, 4, 0, b"\x00"),
        op(CREATE, 3, fmt_b, b"\x01"),                    # node 5, fh 0
        write(5, b), op(RELEASE, 5, 0, b"\x00"),
        op(LOOKUP, 3, out_name),                          # node 6
        op(OPEN, 6, 0, b"\x00\x00"),                      # fh 0
        op(READ, 6, 0, b"\x00\x00\x10"),
        op(READDIR, 3, 0, b"\x00"),
        op(RELEASE, 6, 0, b"\x00"),
        op(LOOKUP, 3, STATUS), op(GETATTR, 7, 0),
        op(UNLINK, 3, fmt_a), op(RMDIR, 2, R),
    ])


seq = " ".join(str(i) for i in range(1, 17)).encode()
seeds = {
    "txt_request": one_request(IN0_TXT, seq, IN1_TXT, seq, OUT0_TXT, 6),
    "json_request": one_request(IN0_JSON, json.dumps(list(range(16))).encode(),
                                IN1_TXT, seq, OUT1_JSON, 6),
    # A temporary renamed into place, a truncate, an fsync, a forget.
    "rename_tmp": b"".join([
        op(MKDIR, 2, Q), op(CREATE, 3, TMP, b"\x00"), write(4, seq),
        op(FSYNC, 4, 0, b"\x00"), op(RELEASE, 4, 0, b"\x00"),
        op(RENAME, 3, TMP, b"\x03", bytes([IN0_TXT])),
        op(SETATTR, 3, 0, b"\x00\x00"), op(LOOKUP, 3, ERROR),
        op(FORGET, 0, 0, b"\x00"),
    ]),
}
os.makedirs("tests/fuzz/corpus/fuse_requests", exist_ok=True)
for name, data in seeds.items():
    with open("tests/fuzz/corpus/fuse_requests/" + name, "wb") as f:
        f.write(data)


def infer_chunk(text, read=True, off=0):
    if (len(text) & 1) != read:
        text += b" "
    return chunk(text) + bytes([off])


req = json.dumps({"id": "s", "inputs": [
    {"name": "INPUT0", "shape": [16], "datatype": "FP32", "data": list(range(16))},
    {"name": "INPUT1", "shape": [16], "datatype": "FP32", "data": [[1] * 16]}]}).encode()
bad = b'{"inputs":[{"name":"INPUT0","data":[1,2]}],"outputs":[{"name":"OUTPUT1"}]}'
infer = {
    "one": infer_chunk(req),
    "split": infer_chunk(req[:40], read=False) + infer_chunk(req[40:]),
    "error_then_ok": infer_chunk(bad) + infer_chunk(req),
    "two_sessions": infer_chunk(req) + infer_chunk(req, off=7),
}
os.makedirs("tests/fuzz/corpus/fuse_infer", exist_ok=True)
for name, data in infer.items():
    with open("tests/fuzz/corpus/fuse_infer/" + name, "wb") as f:
        f.write(data)

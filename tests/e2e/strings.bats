#!/usr/bin/env bats
# String tensors (TYPE_STRING / BYTES, SPEC.md section 6): Triton's
# simple_string (two INT32s as text in, their sum and difference as text
# out) through request directories in every format and through `infer`,
# and a text model written from the shell.

load helpers

make_shared_repo() {
	REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	"$PY" "$TOP/tests/e2e/make_simple_string.py" "$REPO"
}

use_shared_mount own

@test "simple_string from the shell: .txt in, .txt out" {
	req=$(new_request simple_string)
	seq 0 15 > "$req/INPUT0.txt"
	yes 1 | head -16 > "$req/INPUT1.txt"
	[ "$(cat "$req/OUTPUT0.txt" | tr '\n' ' ')" = "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 " ]
	[ "$(cat "$req/OUTPUT1.txt" | tr '\n' ' ')" = "-1 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 " ]
	[ "$(cat "$req/status")" = "DONE" ]
}

@test "simple_string in .json, .raw and .pb" {
	"$PY" - "$MNT" "$T" <<'PYEOF'
import json, os, struct, sys
import numpy as np, onnx
from onnx import numpy_helper
mnt, tmp = sys.argv[1], sys.argv[2]
a = [str(i) for i in range(16)]
b = [str(2 * i) for i in range(16)]
want0 = [str(3 * i) for i in range(16)]
want1 = [str(-i) for i in range(16)]

def raw(vals):
    return b"".join(struct.pack("<I", len(v)) + v for v in (x.encode() for x in vals))

def unraw(data):
    out, i = [], 0
    while i < len(data):
        n = struct.unpack_from("<I", data, i)[0]
        out.append(data[i + 4:i + 4 + n].decode())
        i += 4 + n
    return out

def request(name, fmt, write):
    req = os.path.join(mnt, "simple_string", "requests", name)
    os.mkdir(req)
    for inp, vals in (("INPUT0", a), ("INPUT1", b)):
        with open(os.path.join(req, inp + "." + fmt), "wb") as f:
            f.write(write(vals))
    return req

# .json: a KServe tensor object, nested by the batch dim
req = request("j", "json", lambda v: json.dumps({"datatype": "BYTES", "shape": [1, 16], "data": [v]}).encode())
o = json.load(open(os.path.join(req, "OUTPUT0.json")))
assert o["datatype"] == "BYTES" and o["shape"] == [1, 16] and o["data"] == want0, o
# .raw: Triton's 4-byte length prefixes
req = request("r", "raw", raw)
assert unraw(open(os.path.join(req, "OUTPUT1.raw"), "rb").read()) == want1
# .pb: ONNX TensorProto string_data
req = os.path.join(mnt, "simple_string", "requests", "p")
os.mkdir(req)
for inp, vals in (("INPUT0", a), ("INPUT1", b)):
    t = numpy_helper.from_array(np.array([vals], dtype=object), inp)
    open(os.path.join(req, inp + ".pb"), "wb").write(t.SerializeToString())
t = onnx.TensorProto()
t.ParseFromString(open(os.path.join(req, "OUTPUT1.pb"), "rb").read())
got = [x.decode() if isinstance(x, bytes) else x for x in numpy_helper.to_array(t).ravel()]
assert got == want1, got
print("ok")
PYEOF
}

@test "simple_string through infer with BYTES" {
	exec 7<>"$MNT/simple_string/infer"
	printf '{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"BYTES","data":[%s]},{"name":"INPUT1","shape":[1,16],"datatype":"BYTES","data":[%s]}]}' \
		"$(seq -s, 0 15 | sed 's/[0-9]\+/"&"/g')" "$(yes '"1"' | head -16 | paste -sd,)" >&7
	resp=$(cat <&7)
	exec 7>&-
	run "$PY" -c "
import json, sys; r = json.loads(sys.argv[1])
o = {t['name']: t for t in r['outputs']}
assert o['OUTPUT0']['datatype'] == 'BYTES' and o['OUTPUT0']['shape'] == [1, 16], o
assert o['OUTPUT0']['data'] == [str(i + 1) for i in range(16)], o
assert o['OUTPUT1']['data'] == [str(i - 1) for i in range(16)], o
print('ok')" "$resp"
	[ "$output" = ok ]
}

@test "a word that is no number fails that request with the element named" {
	req=$(new_request simple_string)
	seq 0 15 | sed 's/^7$/seven/' > "$req/INPUT0.txt"
	seq 0 15 > "$req/INPUT1.txt"
	run cat "$req/OUTPUT0.txt"
	[ "$status" -ne 0 ]
	grep -q "element 7 ('seven') is not a int32" "$req/error"
}

@test "text from echo: the newline ends the element; escapes carry newlines" {
	req=$(new_request upper)
	echo "some text" > "$req/TEXT.txt"
	[ "$(cat "$req/OUT.txt")" = "SOME TEXT" ]
	req=$(new_request upper)
	printf 'two\\nlines \\\\ back\nstraße\n' > "$req/TEXT.txt"
	[ "$(cat "$req/OUT.txt")" = "$(printf 'TWO\\nLINES \\\\ BACK\nSTRASSE')" ] ||
	[ "$(cat "$req/OUT.txt")" = "$(printf 'TWO\\nLINES \\\\ BACK\nSTRAßE')" ]
	run "$PY" -c "import json; print(json.load(open('$req/OUT.json'))['data'])"
	[[ "$output" == *"'TWO\\nLINES \\\\ BACK'"* ]]
}

@test ".npy strings: numpy's U array in, np.load of the output; S when not UTF-8" {
	req=$(new_request upper)
	"$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.array(['héllo', 'wörld', '']))" "$req/TEXT.npy"
	run "$PY" -c "
import numpy as np, sys
a = np.load(sys.argv[1])
assert a.dtype == np.dtype('<U5'), a.dtype
assert a.tolist() == ['HÉLLO', 'WÖRLD', ''], a
print('ok')" "$req/OUT.npy"
	echo "$output"
	[ "$output" = ok ]
	# bytes that are no UTF-8 come back as numpy's 'S'
	req=$(new_request upper)
	printf '\\xffab\n' > "$req/TEXT.txt"
	run "$PY" -c "
import numpy as np, sys
a = np.load(sys.argv[1])
assert a.dtype == np.dtype('S3') and a.tolist() == [b'\xffAB'], (a.dtype, a)
print('ok')" "$req/OUT.npy"
	echo "$output"
	[ "$output" = ok ]
}

@test ".npy object arrays (pickles) are refused by name" {
	req=$(new_request upper)
	run "$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.array(['a', 'b'], dtype=object), allow_pickle=True)" "$req/TEXT.npy"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Invalid argument"* ]]
	grep -q "object arrays ('|O', pickled Python objects) are not supported" "$req/error"
}

@test "RegexFullMatch through the mount; a pattern PCRE2 cannot read is refused at load" {
	req=$(new_request is_url)
	printf 'www.google.com\nwww.bbc.co.uk\nxwww.a.com\n' > "$req/TEXT.txt"
	[ "$(cat "$req/MATCH.txt" | tr '\n' ' ')" = "1 0 0 " ]
	run cat "$MNT/bad_regex/status"
	echo "$output"
	[[ "$output" == "UNAVAILABLE"*"RegexFullMatch 'match': pattern '(ab' is not supported"* ]]
}

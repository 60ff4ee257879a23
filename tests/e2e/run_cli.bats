#!/usr/bin/env bats
# `modelfs run` end to end on examples/add_sub (INPUT0, INPUT1 FP32[16] ->
# OUTPUT0 = sum, OUTPUT1 = difference): every input format, the outputs'
# values, and the one-line errors and exit codes.  $MODELFS names the
# binary (tests/run-all.sh sets it); default ./modelfs.

setup() {
	ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
	MODELFS="${MODELFS:-$ROOT/modelfs}"
	EX="${MODELFS_EXAMPLES:-$ROOT/examples}"
	S="$EX/add_sub/samples"
	OUT="$BATS_TEST_TMPDIR/out"
	PY=/usr/bin/python3
	if [ ! -f "$EX/add_sub/1/model.onnx" ]; then
		echo "no $EX/add_sub (examples/ not built?)" >&2
		return 1
	fi
}

# The 16 numbers of a .txt output, one per line.
values() { tr ' ' '\n' < "$1" | sed '/^$/d'; }

@test "run: .npy inputs give NumPy's reference outputs byte for byte" {
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.npy" INPUT1="$S/INPUT1.npy" --out "$OUT"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	cmp "$OUT/OUTPUT0.npy" "$S/expected/OUTPUT0.npy"
	cmp "$OUT/OUTPUT1.npy" "$S/expected/OUTPUT1.npy"
}

@test "run: .txt inputs, outputs as .txt by default" {
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.txt" INPUT1="$S/INPUT1.txt" --out "$OUT"
	[ "$status" -eq 0 ]
	[ "$(values "$OUT/OUTPUT0.txt")" = "$(values "$S/expected/OUTPUT0.txt")" ]
	[ "$(values "$OUT/OUTPUT1.txt")" = "$(values "$S/expected/OUTPUT1.txt")" ]
	[ ! -e "$OUT/OUTPUT0.npy" ]
}

@test "run: .json inputs; computed values are the sum and the difference" {
	printf '%s' '{"shape": [16], "datatype": "FP32", "data": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}' > "$BATS_TEST_TMPDIR/a.json"
	printf '%s' '[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2]' > "$BATS_TEST_TMPDIR/b.json"
	run "$MODELFS" run "$EX/add_sub" INPUT0="$BATS_TEST_TMPDIR/a.json" INPUT1="$BATS_TEST_TMPDIR/b.json" --out "$OUT"
	[ "$status" -eq 0 ]
	run $PY -c 'import json,sys; o=json.load(open(sys.argv[1])); print(o["datatype"], o["shape"], float(o["data"][0]), float(o["data"][15]))' "$OUT/OUTPUT0.json"
	[ "$output" = "FP32 [16] 3.0 18.0" ]
	run $PY -c 'import json,sys; o=json.load(open(sys.argv[1])); print(float(o["data"][0]), float(o["data"][15]))' "$OUT/OUTPUT1.json"
	[ "$output" = "-1.0 14.0" ]
}

@test "run: mixed formats, --format picks the output format, --out is created" {
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.txt" INPUT1="$S/INPUT1.npy" --out="$OUT/new" --format npy --threads 1
	[ "$status" -eq 0 ]
	cmp "$OUT/new/OUTPUT0.npy" "$S/expected/OUTPUT0.npy"
	cmp "$OUT/new/OUTPUT1.npy" "$S/expected/OUTPUT1.npy"
}

@test "run: --version picks a version; outputs go to the current directory by default" {
	cd "$BATS_TEST_TMPDIR"
	run "$MODELFS" run "$EX/add_sub/" --version 1 INPUT0="$S/INPUT0.npy" INPUT1="$S/INPUT1.npy"
	[ "$status" -eq 0 ]
	cmp OUTPUT0.npy "$S/expected/OUTPUT0.npy"
}

@test "run: a missing model is one line and exit 1" {
	run "$MODELFS" run "$EX/no_such_model" INPUT0="$S/INPUT0.npy"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[ "$output" = "modelfs run: no_such_model: no such model in $EX" ]
}

@test "run: an unknown input name is named, with the model's inputs" {
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.npy" INPUT7="$S/INPUT1.npy"
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: unknown input 'INPUT7' (inputs: INPUT0, INPUT1)" ]
}

@test "run: a bad input (wrong shape, wrong datatype, garbage) fails naming the file and the input" {
	seq 15 > "$BATS_TEST_TMPDIR/short.txt"
	run "$MODELFS" run "$EX/add_sub" INPUT0="$BATS_TEST_TMPDIR/short.txt" INPUT1="$S/INPUT1.npy" --out "$OUT"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "modelfs run: add_sub: $BATS_TEST_TMPDIR/short.txt: "*"INPUT0"* ]]

	$PY -c 'import numpy as np; np.save("'"$BATS_TEST_TMPDIR"'/i64.npy", np.arange(16, dtype=np.int64))'
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.npy" INPUT1="$BATS_TEST_TMPDIR/i64.npy" --out "$OUT"
	[ "$status" -eq 1 ]
	[[ "$output" == "modelfs run: add_sub: $BATS_TEST_TMPDIR/i64.npy: "*"INPUT1"* ]]

	echo "not a tensor" > "$BATS_TEST_TMPDIR/bad.npy"
	run "$MODELFS" run "$EX/add_sub" INPUT0="$BATS_TEST_TMPDIR/bad.npy" INPUT1="$S/INPUT1.npy" --out "$OUT"
	[ "$status" -eq 1 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "modelfs run: add_sub: $BATS_TEST_TMPDIR/bad.npy: "* ]]
	# Nothing half-written.
	[ ! -e "$OUT/OUTPUT0.npy" ]
}

@test "run: a missing input, a missing file, an unknown format, an absent version" {
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.npy"
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: missing input 'INPUT1' (give INPUT1=FILE)" ]
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.npy" INPUT1=/nonexistent/x.npy
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: /nonexistent/x.npy: No such file or directory" ]
	run "$MODELFS" run "$EX/add_sub" INPUT0="$S/INPUT0.npy" INPUT1=x.csv
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: x.csv: unknown format '.csv' (npy, json, txt, raw, pb)" ]
	run "$MODELFS" run "$EX/add_sub" --version 9 INPUT0="$S/INPUT0.npy" INPUT1="$S/INPUT1.npy"
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: add_sub: no version 9 (versions: 1)" ]
}

@test "run: a config error names the file and line" {
	mkdir -p "$BATS_TEST_TMPDIR/repo/m/1"
	cp "$EX/add_sub/1/model.onnx" "$BATS_TEST_TMPDIR/repo/m/1/"
	printf 'name: "m"\ninput { name: "INPUT0" colour: 3 }\n' > "$BATS_TEST_TMPDIR/repo/m/config.pbtxt"
	run "$MODELFS" run "$BATS_TEST_TMPDIR/repo/m" INPUT0="$S/INPUT0.npy" INPUT1="$S/INPUT1.npy"
	[ "$status" -eq 1 ]
	[ "$output" = "modelfs run: m: config.pbtxt:2: unknown field 'colour' in input" ]
	# Without a config the graph gives everything.
	rm "$BATS_TEST_TMPDIR/repo/m/config.pbtxt"
	run "$MODELFS" run "$BATS_TEST_TMPDIR/repo/m" INPUT0="$S/INPUT0.npy" INPUT1="$S/INPUT1.npy" --out "$OUT"
	[ "$status" -eq 0 ]
	cmp "$OUT/OUTPUT0.npy" "$S/expected/OUTPUT0.npy"
}

@test "run: bad command lines exit 2; --help exits 0" {
	run "$MODELFS" run
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "modelfs run: no REPOSITORY/MODEL given" ]
	run "$MODELFS" run "$EX/add_sub" --bogus
	[ "$status" -eq 2 ]
	run "$MODELFS" run "$EX/add_sub" INPUT0
	[ "$status" -eq 2 ]
	run "$MODELFS" run "$EX/add_sub" --format csv
	[ "$status" -eq 2 ]
	run "$MODELFS" run "$EX/add_sub" --threads 0
	[ "$status" -eq 2 ]
	run "$MODELFS" run --help
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == "usage: modelfs run [OPTIONS] REPOSITORY/MODEL NAME=FILE..." ]]
}

@test "run: models whose inputs are shapes, indices or counts load (the warm-up never fails a load)" {
	# Every ONNX backend test case that the engine passes and that the
	# made-up KIND_AUTO warm-up input used to refuse ("cannot reshape",
	# "do not broadcast"): each must load, run and match its expected output.
	run "$PY" "$ROOT/tests/e2e/run_backend_cases.py" "$MODELFS" \
		/usr/share/libonnx-testdata/data "$ROOT/tests/e2e/shape-input-cases.txt" \
		--device auto
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"34 passed, 0 failed"* ]]
}

@test "run: models with If, Loop and Scan (bodies reading outer values) match the backend data" {
	run "$PY" "$ROOT/tests/e2e/run_backend_cases.py" "$MODELFS" \
		/usr/share/libonnx-testdata/data "$ROOT/tests/e2e/control-flow-cases.txt" \
		--device auto
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"6 passed, 0 failed"* ]]
}

@test "run: an ensemble is refused with one line saying to mount the repository" {
	run "$MODELFS" run "$EX/pipeline" pixels="$EX/pipeline/samples/pixels.npy" --out "$OUT"
	[ "$status" -ne 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"pipeline"*"is an ensemble"*"mount the repository"* ]]
	[ ! -e "$OUT/probabilities.npy" ]
}

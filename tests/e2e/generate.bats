#!/usr/bin/env bats
# Text generation (SPEC.md section 5b): a tiny decoder with its cache in
# the Optimum naming (tests/models/kv_decoder.py), generating through the
# generate file and through a request directory; the ids must be those of
# the same model stepped by hand (torch, kv_decoder.py --greedy).

load helpers
load gen_helpers

setup_file() {
	gen_repo
	# the config says: not a generator; a generator that is not one
	mkdir -p "$GEN_REPO/gen_off/1"
	cp "$GEN_REPO/gen/1/model.onnx" "$GEN_REPO/gen_off/1/"
	echo 'parameters { key: "generator" value: { string_value: "false" } }' > "$GEN_REPO/gen_off/config.pbtxt"
	cp -r "$EXAMPLES/add_sub" "$GEN_REPO/forced"
	sed -i 's/^name: "add_sub"/name: "forced"/' "$GEN_REPO/forced/config.pbtxt"
	echo 'parameters { key: "generator" value: { string_value: "true" } }' >> "$GEN_REPO/forced/config.pbtxt"
	# 65536 positions: a generation of 60000 ids runs for many seconds on
	# any machine, so a test sees it running without winning a race, and
	# ends it by removing its request directory.
	"$PY" "$KV" "$GEN_REPO/genlong/1" --ctx 65536 2>/dev/null
}

LONG=60000

setup() {
	mount_repo "$GEN_REPO"
}

teardown() {
	unmount_repo
}

@test "a decoder in the Optimum convention is a generator: it has a generate file" {
	[ -e "$MNT/gen/generate" ]
	ls "$MNT/gen" | grep -qx generate
	grep -q "a generator (2 layers" "$DAEMON_LOG"
}

@test "the config's generator parameter: false hides it, true on a non-decoder fails the load" {
	[ ! -e "$MNT/gen_off/generate" ]
	! ls "$MNT/gen_off" | grep -qx generate
	[ -e "$MNT/gen_off/infer" ]
	st=$(cat "$MNT/forced/status")
	[[ "$st" == UNAVAILABLE*'parameter generator is "true" but no input named past_key_values'* ]]
}

@test "greedy through the generate file equals the model stepped by hand" {
	want=$("$PY" "$KV" x --greedy "1 2 3" 12)
	got=$(gen_file '{"input_ids": [1, 2, 3], "max_tokens": 12}')
	[[ "$got" == *'"finish_reason":"length"'* ]]
	[ "$(echo "$got" | ids_of)" = "$want" ]
}

@test "stream: one token line per id, then the output_ids line" {
	want=$("$PY" "$KV" x --greedy "4 5" 6)
	got=$(gen_file '{"input_ids": [4, 5], "max_tokens": 6, "stream": true}')
	[ "$(echo "$got" | wc -l)" -eq 7 ]
	toks=$(echo "$got" | head -6 | "$PY" -c 'import json,sys; print(" ".join(str(json.loads(l)["token"]) for l in sys.stdin))')
	[ "$toks" = "$want" ]
	[ "$(echo "$got" | ids_of)" = "$want" ]
}

@test "a stop id ends the generation and is kept" {
	all=$("$PY" "$KV" x --greedy "1 2 3" 12)
	stop=$(echo "$all" | cut -d' ' -f4)
	want=$("$PY" "$KV" x --greedy "1 2 3" 12 --stop "$stop")
	got=$(gen_file "{\"input_ids\": [1, 2, 3], \"max_tokens\": 12, \"stop\": [$stop]}")
	[[ "$got" == *'"finish_reason":"stop"'* ]]
	[ "$(echo "$got" | ids_of)" = "$want" ]
}

@test "a seeded sample is reproducible, another seed differs" {
	q='"input_ids": [7, 8], "max_tokens": 24, "temperature": 1.5, "top_k": 20, "top_p": 0.95'
	a=$(gen_file "{$q, \"seed\": 11}" | ids_of)
	b=$(gen_file "{$q, \"seed\": 11}" | ids_of)
	c=$(gen_file "{$q, \"seed\": 12}" | ids_of)
	[ "$a" = "$b" ]
	[ "$a" != "$c" ]
	[ "$(echo "$a" | wc -w)" -eq 24 ]
}

@test "bad requests answer an error line that names the problem" {
	run gen_file '{"input_ids": [], "max_tokens": 3}'
	[[ "$output" == *'"error"'*'input_ids'* ]]
	run gen_file '{"input_ids": [1], "max_tokens": 0}'
	[[ "$output" == *'max_tokens'* ]]
	run gen_file '{"input_ids": [1], "temprature": 1}'
	[[ "$output" == *'unknown key'* ]]
	run gen_file '{"input_ids": [1000], "max_tokens": 2}'
	[[ "$output" == *'"error"'* ]]
	# the daemon serves on
	want=$("$PY" "$KV" x --greedy "1 2 3" 3)
	[ "$(gen_file '{"input_ids": [1, 2, 3], "max_tokens": 3}' | ids_of)" = "$want" ]
}

@test "a request directory: input_ids.txt and dot files in, output_ids.txt out" {
	want=$("$PY" "$KV" x --greedy "3 1 4 1 5" 9)
	req=$(new_request gen)
	echo 9 > "$req/.max_tokens"
	echo "3 1 4 1 5" > "$req/input_ids.txt"
	[ "$(cat "$req/output_ids.txt" | tr '\n' ' ' | sed 's/ $//')" = "$want" ]
	[ "$(cat "$req/status")" = "DONE 9 length" ]
	ls "$req" | grep -qx output_ids.txt
	! ls "$req" | grep -q logits
	# one id a line is the same prompt
	printf '3\n1\n4\n1\n5\n' > "$req/input_ids.txt"
	[ "$(cat "$req/output_ids.txt" | tr '\n' ' ' | sed 's/ $//')" = "$want" ]
}

@test "8 concurrent generations of different lengths each get their own ids" {
	gen_concurrent_8
}

@test "cat of output_ids.txt prints the first ids while the generation still runs" {
	req=$(new_request genlong)
	echo "$LONG" > "$req/.max_tokens"
	echo "1 2 3" > "$req/input_ids.txt"
	exec 4< "$req/output_ids.txt"
	read -r first <&4
	# The first id was read; the generation has not produced its last.
	st=$(cat "$req/status")
	[[ "$st" == GENERATING* ]]
	n=${st#GENERATING }
	[ "${n%/*}" -lt "$LONG" ]
	[ "$first" = "$("$PY" "$KV" x --ctx 65536 --greedy "1 2 3" 1)" ]
	rmdir "$req"
	exec 4<&-
	# A whole generation: every id arrives, then EOF after the last.
	req=$(new_request gen)
	echo 1000 > "$req/.max_tokens"
	echo "1 2 3" > "$req/input_ids.txt"
	[ "$(wc -l < "$req/output_ids.txt")" -eq 1000 ]
	[ "$(cat "$req/status")" = "DONE 1000 length" ]
}

@test "removing a request directory stops its generation" {
	req=$(new_request genlong)
	echo "$LONG" > "$req/.max_tokens"
	echo "1 2 3" > "$req/input_ids.txt"
	exec 4< "$req/output_ids.txt"
	read -r first <&4
	rmdir "$req"
	n=$(cat <&4 | wc -l)
	exec 4<&-
	[ "$n" -lt $((LONG - 1)) ]
}

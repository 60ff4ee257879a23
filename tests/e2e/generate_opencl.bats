#!/usr/bin/env bats
# Text generation on the OpenCL engine (PoCL's CPU device here, a GPU on
# the device host): the daemon keeps the key/value cache in the engine's
# device memory between steps (engine.h, "Resident tensors") and re-packs
# it through the host when rows join or leave; the ids must still be
# those of the tiny decoder stepped by hand (tests/models/kv_decoder.py).

load helpers
load gen_helpers

setup_file() {
	gen_repo
}

setup() {
	mount_repo "$GEN_REPO" --device=opencl
}

teardown() {
	unmount_repo
}

@test "the generator runs on the OpenCL engine and greedy equals the model stepped by hand" {
	[[ "$(cat "$MNT/gen/status")" == "READY 1 opencl"* ]]
	want=$("$PY" "$KV" x --greedy "1 2 3" 20)
	got=$(gen_file '{"input_ids": [1, 2, 3], "max_tokens": 20}')
	[[ "$got" == *'"finish_reason":"length"'* ]]
	[ "$(echo "$got" | ids_of)" = "$want" ]
}

@test "OpenCL: 8 concurrent generations of different lengths each get their own ids" {
	gen_concurrent_8
}

@test "OpenCL: a stop id ends the generation, and the next one starts from an empty cache" {
	all=$("$PY" "$KV" x --greedy "1 2 3" 12)
	stop=$(echo "$all" | cut -d' ' -f4)
	want=$("$PY" "$KV" x --greedy "1 2 3" 12 --stop "$stop")
	got=$(gen_file "{\"input_ids\": [1, 2, 3], \"max_tokens\": 12, \"stop\": [$stop]}")
	[ "$(echo "$got" | ids_of)" = "$want" ]
	[ "$(gen_file '{"input_ids": [4, 5], "max_tokens": 6}' | ids_of)" = "$("$PY" "$KV" x --greedy "4 5" 6)" ]
}

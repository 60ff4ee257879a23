# gen_helpers.bash - what the text generation suites (generate.bats,
# generate_opencl.bats) share: the tiny decoder and the generate file.

KV="$TOP/tests/models/kv_decoder.py"

# A repository in GEN_REPO (exported for the tests) with the tiny
# decoder as model gen.
gen_repo() {
	export GEN_REPO
	GEN_REPO=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/genrepo.XXXXXX")
	mkdir -p "$GEN_REPO/gen/1"
	"$PY" "$KV" "$GEN_REPO/gen/1" 2>/dev/null
}

# generate JSON: write it on one fd and read the answer on the same fd.
gen_file() {
	"$PY" - "$MNT/gen/generate" "$1" <<'PYEOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.write(fd, sys.argv[2].encode())
out = b""
while True:
    b = os.read(fd, 65536)
    if not b:
        break
    out += b
sys.stdout.write(out.decode())
PYEOF
}

ids_of() {
	"$PY" -c 'import json,sys; print(" ".join(map(str, json.loads(sys.stdin.read().splitlines()[-1])["output_ids"])))'
}

# 8 generations at once, prompts and lengths of their own: each must get
# the ids of the model stepped by hand (rows join and leave the batch).
gen_concurrent_8() {
	local pids=() i prompt json
	for i in 1 2 3 4 5 6 7 8; do
		prompt=$(seq -s ' ' "$i" $((2 * i)))
		"$PY" "$KV" x --greedy "$prompt" $((10 + i)) > "$BATS_TEST_TMPDIR/want$i"
		json=$(echo "$prompt" | tr ' ' ',')
		gen_file "{\"input_ids\": [$json], \"max_tokens\": $((10 + i))}" | ids_of > "$BATS_TEST_TMPDIR/got$i" &
		pids+=($!)
	done
	# not a bare wait: the daemon is a child of this shell too
	for i in "${pids[@]}"; do wait "$i"; done
	for i in 1 2 3 4 5 6 7 8; do
		diff "$BATS_TEST_TMPDIR/want$i" "$BATS_TEST_TMPDIR/got$i" || return 1
	done
}

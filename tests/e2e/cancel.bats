#!/usr/bin/env bats
# Cancellation (issue 32, case 5; docs/SPEC.md "Removing a request
# directory ... cancels its run"): a run that would never end is stopped
# when its request directory goes, and at SIGTERM after the drain.

load helpers

teardown() {
	unmount_repo
}

# A repository with `forever`: a Loop of M iterations (M from the
# request) adding 1 to v each time; one instance, so a run that never
# ends holds the model.
forever_repo() {
	local dir
	dir=$(mktemp -d "${BATS_RUN_TMPDIR:-/tmp}/repo.XXXXXX")
	mkdir -p "$dir/forever/1"
	"$PY" - "$dir/forever/1/model.onnx" <<'PYEOF'
import sys
import onnx
from onnx import TensorProto, helper
body = helper.make_graph(
    [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Constant", [], ["one"], value=helper.make_tensor("c", TensorProto.FLOAT, [1], [1.0])),
     helper.make_node("Add", ["v_in", "one"], ["v_out"])],
    "body",
    [helper.make_tensor_value_info("i", TensorProto.INT64, []),
     helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
     helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])])
graph = helper.make_graph(
    [helper.make_node("Constant", [], ["t"], value=helper.make_tensor("t", TensorProto.BOOL, [], [True])),
     helper.make_node("Loop", ["M", "t", "v"], ["y"], body=body)],
    "forever",
    [helper.make_tensor_value_info("M", TensorProto.INT64, []),
     helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
PYEOF
	printf 'instance_group [ { count: 1, kind: KIND_CPU } ]\n' > "$dir/forever/config.pbtxt"
	echo "$dir"
}

status_is() { [ "$(cat "$1/status")" = "$2" ]; }

# Start a run of 2^62 iterations in request $1 (a name); prints its path.
start_endless() {
	local req
	req=$(new_request forever "$1") || return 1
	echo 0 > "$req/v.txt"
	echo 4611686018427387904 > "$req/M.txt"
	wait_until 30 status_is "$req" RUNNING || return 1
	echo "$req"
}

@test "removing the request directory of a run that never ends frees the model" {
	repo=$(forever_repo)
	mount_repo "$repo" --device cpu
	endless=$(start_endless long)
	rm -r "$endless"
	# The next request runs: the instance was given back.
	req=$(new_request forever next)
	echo 1 > "$req/v.txt"
	echo 3 > "$req/M.txt"
	run timeout 60 cat "$req/y.txt"
	[ "$status" -eq 0 ]
	[ "$output" = 4 ]
}

@test "SIGTERM stops a daemon whose run never ends, after the drain" {
	repo=$(forever_repo)
	mount_repo "$repo" --device cpu
	start_endless long > /dev/null
	kill -TERM "$DAEMON_PID"
	# The drain is 10 s; then the run is cancelled and the daemon exits.
	daemon_finished_cleanly
	! mountpoint -q "$MNT"
}

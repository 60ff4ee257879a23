#!/usr/bin/env bats
# Queue policy and priorities (SPEC.md section 4, "The queue"): a full
# queue refuses with EAGAIN at the last input's close, a request that
# waits past its timeout fails with ETIMEDOUT (REJECT) or waits behind
# the others (DELAY), and priority level 1 runs first.  One instance of a
# slow model is held busy by an 8-row request while the others queue
# (queue_repo.py, queue_clients.py).

load helpers

make_shared_repo() {
	REPO=$(make_test_repo) || return 1
	"$PY" "$TOP/tests/e2e/queue_repo.py" "$REPO" || return 1
}
# Two compute threads: one runs, the other is idle and notices a
# deadline while the instance is busy.
use_shared_mount own --threads=2

clients() {
	"$PY" "$TOP/tests/e2e/queue_clients.py" "$MNT/$1" "${@:2}"
}

@test "priorities: level 1 runs before the default level, each level in order" {
	run clients qprio pb1 l1 l2 h1:priority=1 h2:priority=1
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "pb1 h1 h2 l1 l2" ]
	grep -q '"priority_levels": 2' "$MNT/qprio/config.json"
}

@test "priorities through infer: a session with priority 1 goes ahead" {
	# f1 widens the window: if the session reaches the queue only after
	# the blocker ended, f1 is running then, and i1 still goes before m1.
	run clients qprio pb2 f1 m1 m2 i1:infer:priority=1
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "pb2 i1 f1 m1 m2" ] || [ "${lines[-1]}" = "pb2 f1 i1 m1 m2" ]
}

@test "DELAY: a request past its own .timeout waits behind the punctual ones" {
	run clients qprio pb3 late:timeout=1000 ontime
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "pb3 ontime late" ]
	[ "$(cat "$MNT/qprio/requests/late/status")" = DONE ]
}

@test "REJECT: a request past its timeout fails with ETIMEDOUT and says so" {
	run clients qreject rb1 t1 t2:infer
	echo "$output"
	[ "$status" -eq 0 ]
	# Both fail while the blocker still runs.
	[[ "${lines[-1]}" == "t1=ETIMEDOUT t2=error:"*"timed out in the queue after"*" rb1" ]]
	run cat "$MNT/qreject/requests/t1/y.npy"
	[ "$status" -ne 0 ]
	[[ "$output" == *"timed out"* ]]
	grep -q "timed out in the queue after" "$MNT/qreject/requests/t1/error"
	[[ "$(cat "$MNT/qreject/requests/t1/status")" == "FAILED"*"timed out"* ]]
	grep -q "model 'qreject' version 1.*request 't1'.*timed out in the queue" "$DAEMON_LOG"
	grep -qx 'nv_inference_request_timeout{model="qreject",version="1"} 2' "$MNT/.metrics"
	"$PY" -c "
import json; s = json.load(open('$MNT/qreject/stats.json'))['model_stats'][0]['inference_stats']
assert s['timed_out']['count'] == 2 and s['fail']['count'] == 2 and s['success']['count'] == 1, s"
}

@test "EAGAIN: a full queue refuses the last input's close; error, log and metrics say so" {
	run clients qfull fb1 ok1 full1
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "full1=EAGAIN fb1 ok1" ]
	grep -q "model 'qfull' version 1: queue full (1 requests waiting, max_queue_size)" \
		"$MNT/qfull/requests/full1/error"
	grep -q "model 'qfull' version 1 request 'full1':.*queue full" "$DAEMON_LOG"
	grep -qx 'nv_inference_request_rejected{model="qfull",version="1"} 1' "$MNT/.metrics"
	"$PY" -c "
import json; s = json.load(open('$MNT/qfull/stats.json'))['model_stats'][0]['inference_stats']
assert s['rejected']['count'] == 1, s"
}

@test "bad .priority and .timeout fail at echo's write with EINVAL and a reason" {
	req=$(new_request qprio badparams)
	run bash -c "echo 3 > '$req/.priority'"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Invalid argument"* ]]
	grep -q "'.priority': model 'qprio': priority 3 is not one of its levels 1..2" "$req/error"
	run bash -c "echo soon > '$req/.timeout'"
	[ "$status" -ne 0 ]
	grep -q "'.timeout' (µs): expected a whole number" "$req/error"
	echo 1 > "$req/.priority"
	[ "$(cat "$req/.priority")" = 1 ]
	# qreject does not let a request choose its timeout.
	req2=$(new_request qreject noverride)
	run bash -c "echo 5000 > '$req2/.timeout'"
	[ "$status" -ne 0 ]
	grep -q "may not set its own timeout (the queue policy of the model has allow_timeout_override false)" "$req2/error"
	run bash -c "echo 1 > '$req2/.priority'"
	[ "$status" -ne 0 ]
	grep -q "model 'qreject' has no priority levels" "$req2/error"
	rm -r "$req" "$req2"
}

@test "bad infer priority and timeout are answered with an error" {
	exec 7<>"$MNT/qreject/infer"
	printf '{"inputs":[],"parameters":{"timeout":5000}}' >&7
	resp=$(cat <&7)
	exec 7>&-
	[[ "$resp" == *"may not set its own timeout"* ]]
	exec 7<>"$MNT/qprio/infer"
	printf '{"inputs":[],"parameters":{"priority":-1}}' >&7
	resp=$(cat <&7)
	exec 7>&-
	[[ "$resp" == *'parameter \"priority\" must be a whole number'* ]]
}

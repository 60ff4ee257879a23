#!/usr/bin/env bats
# MOUNT/.metrics as Triton's /metrics (SPEC.md section 7): every failed
# request moves nv_inference_request_failure with its reason (a bad
# infer, a bad request directory: OTHER; a full queue, a timeout in the
# queue: REJECTED; a request removed while queued: CANCELED); the
# pending-request gauge; the summaries of --metrics-config
# summary_latencies=true; the load time from load start to READY (the
# warm-up included); CPU and memory gauges; and promtool finds no error
# in the page, only its lint on Triton's own names.

load helpers

make_shared_repo() {
	REPO=$(make_test_repo) || return 1
	"$PY" "$TOP/tests/e2e/queue_repo.py" "$REPO" || return 1
	# a warm-up of a few runs of the slow model: part of its load
	mkdir -p "$REPO/warm/1"
	cp "$REPO/slow/1/model.onnx" "$REPO/warm/1/"
	cat > "$REPO/warm/config.pbtxt" <<'EOF2'
max_batch_size: 8
instance_group [ { count: 1, kind: KIND_CPU } ]
model_warmup { name: "w" count: 3 batch_size: 1
  inputs { key: "x" value { data_type: TYPE_FP32 dims: [256, 1024] random_data: true } } }
EOF2
}
use_shared_mount own --threads=2 --metrics-config summary_latencies=true

clients() {
	"$PY" "$TOP/tests/e2e/queue_clients.py" "$MNT/$1" "${@:2}"
}

# metric NAME LABELS: its value on the page ("" when absent).
metric() {
	grep -F "$1{$2} " "$MNT/.metrics" | awk '{print $2}'
}

failures() { # model reason
	metric nv_inference_request_failure "model=\"$1\",reason=\"$2\",version=\"1\""
}

@test "a failed infer (wrong shape) counts one failure, reason OTHER" {
	before=$(failures add_sub OTHER)
	ok_before=$(metric nv_inference_request_success 'model="add_sub",version="1"')
	exec 7<>"$MNT/add_sub/infer"
	printf '%s' '{"inputs":[{"name":"INPUT0","shape":[3],"datatype":"FP32","data":[1,2,3]},{"name":"INPUT1","shape":[3],"datatype":"FP32","data":[1,2,3]}]}' >&7
	resp=$(cat <&7)
	exec 7>&-
	echo "$resp"
	[[ "$resp" == *'"error"'* ]]
	[ "$(failures add_sub OTHER)" -eq $((before + 1)) ]
	[ "$(metric nv_inference_request_success 'model="add_sub",version="1"')" -eq "$ok_before" ]
	[ "$(failures add_sub BACKEND)" -eq 0 ]
}

@test "a failed request directory counts once per attempt, reason OTHER" {
	before=$(failures mlp OTHER)
	req=$(new_request mlp)
	# a wrong shape (3 values for 784), twice: one failed attempt (the
	# close fails; bash's redirection does not report it)
	echo 1 2 3 > "$req/input.txt"
	grep -q "3 values given, not a multiple of 784" "$req/error"
	echo 4 5 6 > "$req/input.txt"
	[ "$(failures mlp OTHER)" -eq $((before + 1)) ]
	# then right: it runs, and the failure stays one
	"$PY" -c "import numpy as np; np.save('$T/x.npy', np.full((1, 784), 0.5, np.float32))"
	cp "$T/x.npy" "$req/input.npy"
	cat "$req/probabilities.txt" > /dev/null
	[ "$(failures mlp OTHER)" -eq $((before + 1)) ]
	[ "$(metric nv_inference_request_success 'model="mlp",version="1"')" -ge 1 ]
}

@test "a full queue: reason REJECTED, and nv_inference_request_rejected" {
	run clients qfull fb1 ok1 full1
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[-1]}" = "full1=EAGAIN fb1 ok1" ]
	[ "$(failures qfull REJECTED)" -eq 1 ]
	[ "$(failures qfull OTHER)" -eq 0 ]
	[ "$(metric nv_inference_request_rejected 'model="qfull",version="1"')" -eq 1 ]
}

@test "timed out in the queue: reason REJECTED, and nv_inference_request_timeout" {
	run clients qreject rb1 t1 t2:infer
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(failures qreject REJECTED)" -eq 2 ]
	[ "$(failures qreject OTHER)" -eq 0 ]
	[ "$(failures qreject BACKEND)" -eq 0 ]
	[ "$(metric nv_inference_request_timeout 'model="qreject",version="1"')" -eq 2 ]
}

@test "pending requests: the gauge counts what waits, not what runs; removed while queued: CANCELED" {
	slow_input "$T/big.npy"
	"$PY" -c "import numpy as np; np.save('$T/big.npy', np.random.default_rng(1).random((8, 256, 1024), dtype=np.float32))"
	slow_input "$T/one.npy" 2
	[ "$(metric nv_inference_pending_request_count 'model="qprio",version="1"')" -eq 0 ]
	blocker=$(new_request qprio)
	cp "$T/big.npy" "$blocker/x.npy"
	wait_until 20 grep -q '^RUNNING' "$blocker/status"
	waiting=$(new_request qprio)
	cp "$T/one.npy" "$waiting/x.npy"
	# the run holds the one instance: this one waits
	[ "$(cat "$waiting/status" | cut -d' ' -f1)" = QUEUED ]
	[ "$(metric nv_inference_pending_request_count 'model="qprio",version="1"')" -eq 1 ]
	cancelled_before=$(failures qprio CANCELED)
	rm -r "$waiting"
	cat "$blocker/y.npy" > /dev/null
	wait_until 20 test "$(failures qprio CANCELED)" -eq $((cancelled_before + 1))
	wait_until 20 test "$(metric nv_inference_pending_request_count 'model="qprio",version="1"')" -eq 0
}

@test "summaries: quantiles of the latencies, _count and _sum like the counters" {
	add_sub_answers
	grep -q '^# TYPE nv_inference_request_summary_us summary$' "$MNT/.metrics"
	n=$(metric nv_inference_request_success 'model="add_sub",version="1"')
	[ "$n" -ge 1 ]
	[ "$(metric nv_inference_request_summary_us_count 'model="add_sub",version="1"')" -eq "$n" ]
	for q in 0.5 0.9 0.95 0.99 0.999; do
		v=$(metric nv_inference_request_summary_us "model=\"add_sub\",version=\"1\",quantile=\"$q\"")
		[[ "$v" =~ ^[0-9]+$ ]]
	done
	for s in queue compute_input compute_infer compute_output; do
		grep -q "^nv_inference_${s}_summary_us{model=\"add_sub\",version=\"1\",quantile=\"0.5\"} [0-9]" "$MNT/.metrics"
	done
}

@test "load duration: from the load's start to READY, the warm-up included" {
	warm=$(sed -n "s/.*model 'warm' version 1: warm-up: [0-9]* sample(s) ran on 1 instance(s) in \([0-9.]*\) s.*/\1/p" "$DAEMON_LOG")
	[ -n "$warm" ]
	load=$(metric nv_model_load_duration_secs 'model="warm",version="1"')
	echo "warm-up $warm s, load $load s"
	"$PY" -c "assert $load >= $warm, ($load, $warm)"
	grep -q "model 'warm' version 1: READY on cpu (loaded in $(printf '%.3f' "$load") s" "$DAEMON_LOG"
}

@test "CPU and memory gauges as Triton's" {
	u=$(grep '^nv_cpu_utilization ' "$MNT/.metrics" | awk '{print $2}')
	"$PY" -c "assert 0.0 <= $u <= 1.0, $u"
	total=$(grep '^nv_cpu_memory_total_bytes ' "$MNT/.metrics" | awk '{print $2}')
	used=$(grep '^nv_cpu_memory_used_bytes ' "$MNT/.metrics" | awk '{print $2}')
	[ "$total" -eq $(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) * 1024)) ]
	[ "$used" -gt 0 ] && [ "$used" -lt "$total" ]
}

@test "promtool check metrics: no error; only the lint on Triton's own names" {
	command -v promtool || skip "promtool (Debian's prometheus) is not installed"
	add_sub_answers
	cat "$MNT/.metrics" > "$T/metrics"
	# the page carries failures of every kind by now
	grep -q 'reason="REJECTED",version="1"} [1-9]' "$T/metrics"
	grep -q 'reason="OTHER",version="1"} [1-9]' "$T/metrics"
	run promtool check metrics < "$T/metrics"
	echo "$output"
	# 0: clean; 3: lint problems only; 1: the text does not parse.
	[ "$status" -eq 0 ] || [ "$status" -eq 3 ]
	# What is left after the accepted lines (exact texts) is a finding.
	accepted="$T/accepted"
	for n in request_success request_failure request_rejected request_timeout count exec_count; do
		echo "nv_inference_$n counter metrics should have \"_total\" suffix"
	done > "$accepted"
	for n in count exec_count pending_request_count; do
		echo "nv_inference_$n non-histogram and non-summary metrics should not have \"_count\" suffix"
	done >> "$accepted"
	for n in request queue compute_input compute_infer compute_output; do
		echo "nv_inference_${n}_duration_us counter metrics should have \"_total\" suffix"
		echo "nv_inference_${n}_duration_us metric names should not contain abbreviated units"
		echo "nv_inference_${n}_summary_us metric name should not include type 'summary'"
		echo "nv_inference_${n}_summary_us metric names should not contain abbreviated units"
	done >> "$accepted"
	for n in num_hits num_misses hit_duration miss_duration; do
		echo "nv_cache_${n}_per_model counter metrics should have \"_total\" suffix"
	done >> "$accepted"
	left=$(echo "$output" | grep -v -x -F -f "$accepted" || true)
	echo "left: $left"
	[ -z "$left" ]
}

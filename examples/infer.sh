#!/bin/bash
# The low-latency path: one open file, KServe v2 JSON in, JSON out.
#   usage: examples/infer.sh [MOUNT]
set -e
mnt=${1:-mnt}

exec 3<>"$mnt/add_sub/infer"                   # one session on one open file
for k in 1 2 3; do
	a=$(seq -s, "$k" $((k + 15)))
	b=$(seq -s, 1 16)
	printf '{"id":"%s","inputs":[{"name":"INPUT0","shape":[16],"datatype":"FP32","data":[%s]},{"name":"INPUT1","shape":[16],"datatype":"FP32","data":[%s]}]}' \
		"req$k" "$a" "$b" >&3                  # write the request...
	cat <&3                                    # ...read the response (runs the model)
done
exec 3>&-

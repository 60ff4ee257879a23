#!/bin/sh
# The layering rule of the Makefile, tried: for each layer, a file that
# includes a header of the layer above must fail to compile with that
# layer's include paths, and the same file must compile with the upper
# layer's paths (so a renamed header cannot make the probe pass vacuously).
# The engine's rooms are tried the same way: the ONNX reader sees nothing
# of the graph, the shared rooms nothing of either engine, and the CPU and
# OpenCL engines nothing of each other.
# Also refuses an #include that climbs out of its folder ("../"), the one
# way around the include paths.
# Usage: check-layers.sh  (run from the repository root; `make check-layers`)
set -u
CC=${CC:-cc}
flags() { make --no-print-directory -s print-layer-flags LAYER="$1"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0

probe() { # lower-layer upper-layer header
	printf '#include "%s"\nint mfs_layer_probe;\n' "$3" > "$tmp/probe.c"
	if $CC $(flags "$1") -fsyntax-only -MMD -MF /dev/null "$tmp/probe.c" 2>"$tmp/err"; then
		echo "FAIL: $1 may include $3 (a header of $2): the include paths let it through"
		fail=$((fail + 1))
	elif ! grep -q "$3" "$tmp/err"; then
		echo "FAIL: $1 including $3 failed for another reason:"; cat "$tmp/err"
		fail=$((fail + 1))
	elif ! $CC $(flags "$2") -fsyntax-only -MMD -MF /dev/null "$tmp/probe.c" 2>"$tmp/err"; then
		echo "FAIL: $3 does not compile even in its own layer $2:"; cat "$tmp/err"
		fail=$((fail + 1))
	else
		echo "ok: $1 cannot include $3 ($2)"
		pass=$((pass + 1))
	fi
}

probe base exec engine.h
probe onnx engine graph.h
probe engine cpu node_threads.h
probe engine opencl ocl_internal.h
probe cpu opencl ocl_internal.h
probe opencl cpu node_threads.h
probe opencl cpu dense_util.h
probe exec core registry.h
probe core fs fs.h
probe fs cli options.h

climb=$(grep -rn '#include *"\.\./' src exec fs 2>/dev/null)
if [ -n "$climb" ]; then
	echo "FAIL: includes that climb out of their folder:"; echo "$climb"
	fail=$((fail + 1))
else
	echo "ok: no #include \"../...\" in src, exec, fs"
	pass=$((pass + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/usr/bin/env bats
# Installing (issue 15, docs/DEPLOY.md): make install/uninstall with
# PREFIX and DESTDIR, the man pages, the systemd units, bash completion,
# and .metrics read by Prometheus's own parser.  Run once by
# tests/run-all.sh (suite "install"), against the plain build.

load ../e2e/helpers

setup() {
	T="$BATS_TEST_TMPDIR"
}

teardown() {
	unmount_repo
}

# make install/uninstall quietly, from the top of the tree.
mk() { make --no-print-directory -s -C "$TOP" "$@" > "$T/make.log" 2>&1 || { cat "$T/make.log"; return 1; }; }

@test "make install DESTDIR=... PREFIX=/usr: the tree; make uninstall removes it" {
	mk install DESTDIR="$T/root" PREFIX=/usr
	cd "$T/root"
	for f in usr/bin/modelfs usr/share/man/man1/modelfs.1 \
		usr/share/man/man5/modelfs-repository.5 \
		usr/lib/systemd/system/modelfs.service usr/lib/systemd/system/modelfs@.service \
		usr/share/bash-completion/completions/modelfs \
		usr/include/modelfs_backend.h usr/lib/modelfs/backends/libmodelfs_preprocess.so \
		usr/share/doc/modelfs/README.md usr/share/doc/modelfs/SPEC.md \
		usr/share/doc/modelfs/DEPLOY.md \
		usr/share/doc/modelfs/examples/add_sub/1/model.onnx \
		usr/share/doc/modelfs/examples/add_sub/config.pbtxt \
		usr/share/doc/modelfs/examples/default-modelfs etc/default/modelfs; do
		[ -f "$f" ] || { echo "missing: $f"; return 1; }
	done
	[ -x usr/bin/modelfs ] && [ -x usr/share/doc/modelfs/examples/infer.sh ]
	[ "$(stat -c %a usr/share/man/man1/modelfs.1)" = 644 ]
	# Nothing else: no mount helper link, no kernels (they are embedded).
	[ -z "$(find . -path ./usr/share/doc -prune -o -type f -print | grep -v -e modelfs -e default)" ]
	# The installed binary runs, and the units point at it.
	usr/bin/modelfs --version | grep -q '^modelfs '
	grep -q '^ExecStart=/usr/bin/modelfs -f ' usr/lib/systemd/system/modelfs.service
	grep -q '^ExecStart=/usr/bin/modelfs -f ' usr/lib/systemd/system/modelfs@.service
	! grep -q '@' usr/lib/systemd/system/modelfs.service
	# The installed binary finds the installed example backend without
	# --backend-dir: the installed pipeline's first step runs.
	usr/bin/modelfs run usr/share/doc/modelfs/examples/pipeline_preprocess \
		pixels="$TOP/examples/pipeline/samples/pixels.npy" --out "$T/out"
	[ -s "$T/out/image.npy" ]
	# The source tree's binary has no default.
	run "$MODELFS" run usr/share/doc/modelfs/examples/pipeline_preprocess \
		pixels="$TOP/examples/pipeline/samples/pixels.npy" --out "$T/out2"
	[[ "$output" == *"libmodelfs_preprocess.so is not in "*" and no --backend-dir is set"* ]]
	# The installed backend header is all a custom backend needs.
	cc -std=c99 -Wall -Werror -shared -fPIC -I usr/include "$TOP/examples/backends/preprocess.c" \
		-o "$T/libmodelfs_preprocess.so" -lm
	# An /etc/default/modelfs the admin changed is neither replaced nor removed.
	echo 'MOUNTPOINT=/mine' >> etc/default/modelfs
	mk install DESTDIR="$T/root" PREFIX=/usr
	grep -q '^MOUNTPOINT=/mine' etc/default/modelfs
	mk uninstall DESTDIR="$T/root" PREFIX=/usr
	[ "$(find . -type f)" = ./etc/default/modelfs ]
	rm etc/default/modelfs
	mk install DESTDIR="$T/root" PREFIX=/usr
	mk uninstall DESTDIR="$T/root" PREFIX=/usr
	[ -z "$(find . -type f)" ]
}

@test "make install: PREFIX defaults to /usr/local" {
	mk install DESTDIR="$T/root"
	[ -x "$T/root/usr/local/bin/modelfs" ]
	[ -f "$T/root/usr/local/lib/systemd/system/modelfs.service" ]
	grep -q '^ExecStart=/usr/local/bin/modelfs ' "$T/root/usr/local/lib/systemd/system/modelfs.service"
	mk uninstall DESTDIR="$T/root"
	[ -z "$(find "$T/root" -type f)" ]
}

@test "make install then make uninstall leave a Debian /usr/local as it was, folders too" {
	# What a fresh Debian 12 has under /usr/local and /etc (base-files):
	# none of the folders install makes (docs/FRESH.md found them left).
	# The FHS's /usr/local folders exist, empty, and must stay.
	for d in bin etc games include lib man sbin share/man src; do
		mkdir -p "$T/root/usr/local/$d"
	done
	mkdir -p "$T/root/etc/default"
	(cd "$T/root" && find . | sort) > "$T/before"
	mk install DESTDIR="$T/root"
	[ -d "$T/root/usr/local/share/man/man5" ] && [ -d "$T/root/usr/local/lib/systemd/system" ]
	mk uninstall DESTDIR="$T/root"
	(cd "$T/root" && find . | sort) > "$T/after"
	diff "$T/before" "$T/after"
	# A folder that holds something else stays.
	mkdir -p "$T/root/usr/local/share/man/man1"
	touch "$T/root/usr/local/share/man/man1/other.1"
	mk install DESTDIR="$T/root"
	mk uninstall DESTDIR="$T/root"
	[ -f "$T/root/usr/local/share/man/man1/other.1" ]
}

@test "man pages: mandoc -T lint clean" {
	run mandoc -T lint -W warning "$TOP/man/modelfs.1" "$TOP/man/modelfs-repository.5"
	echo "$output"
	[ "$status" -eq 0 ] && [ -z "$output" ]
}

@test "every option of modelfs --help and modelfs run --help is in modelfs(1)" {
	mandoc -T ascii "$TOP/man/modelfs.1" | col -b > "$T/man.txt"
	{ "$MODELFS" --help; "$MODELFS" run --help; } |
		grep -E '^ +-' | grep -oE '(^|[ ,])(-[a-zA-Z]|--[a-z][a-z-]*)' | tr -d ' ,' | sort -u > "$T/opts"
	[ "$(wc -l < "$T/opts")" -ge 14 ]
	while read -r opt; do
		grep -qE -- "(^|[^-a-z])$opt([^-a-z]|$)" "$T/man.txt" || { echo "not in modelfs.1: $opt"; return 1; }
	done < "$T/opts"
}

@test "systemd-analyze verify: both units as installed" {
	command -v systemd-analyze || skip "systemd-analyze is not installed"
	# Installed for real into a folder, so that ExecStart's binary exists.
	mk install PREFIX="$T/usr" SYSCONFDIR="$T/etc"
	units="$T/usr/lib/systemd/system"
	cp "$units/modelfs@.service" "$units/modelfs@models.service"
	run env MANPATH="$T/usr/share/man" systemd-analyze verify \
		"$units/modelfs.service" "$units/modelfs@models.service"
	echo "$output"
	[ "$status" -eq 0 ] && [ -z "$output" ]
	grep -q '^Type=notify$' "$units/modelfs.service"
	grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$units/modelfs.service"
	# The check is real: a misspelt setting is reported.
	sed 's/^Type=notify$/Type=notfy/' "$units/modelfs.service" > "$T/bad.service"
	run env MANPATH="$T/usr/share/man" systemd-analyze verify "$T/bad.service"
	[[ "$output" == *"Failed to parse service type"* ]]
}

@test "the package depends on what every program its units run comes from" {
	# A fresh Debian 12 root showed it: procps (/bin/kill, for reload) is
	# not there, and systemd-analyze verify refused the unit.
	command -v dpkg-query || skip "not a Debian system"
	mk install DESTDIR="$T/root" PREFIX=/usr UNITDIR=/lib/systemd/system
	depends=$(awk '/^Depends:/ { on = 1; sub(/^Depends:/, ""); print; next }
		on && /^[ \t]/ { print; next } { on = 0 }' "$TOP/debian/control" |
		tr ',' '\n' | sed -e 's/\${[^}]*}//g' -e 's/(.*//' -e 's/[ \t]//g' | grep .)
	echo "Depends: $depends"
	programs=$(sed -nE 's/^Exec[A-Za-z]+=[-@+!:]*(\/[^ ]+).*/\1/p' \
		"$T/root"/lib/systemd/system/*.service | sort -u)
	[ "$(echo "$programs" | wc -l)" -ge 4 ]
	for p in $programs; do
		[ "$p" = /usr/bin/modelfs ] && continue
		pkg=$(dpkg -S "$p" | cut -d: -f1)
		[ "$(dpkg-query -W -f='${Essential}' "$pkg")" = yes ] && continue
		echo "$depends" | grep -qx "$pkg" || { echo "$p is in $pkg, which Depends lacks"; return 1; }
	done
}

# comp WORDS...: what _modelfs completes for the last word.
comp() {
	COMP_WORDS=("$@") COMP_CWORD=$(($# - 1)) COMP_LINE="$*" COMP_POINT=${#COMP_LINE}
	COMPREPLY=()
	_modelfs "$MODELFS" "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
	printf '%s\n' "${COMPREPLY[@]}"
}

@test "bash completion: options, their values, models under a mount" {
	[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
	. /usr/share/bash-completion/bash_completion
	. "$TOP/dist/bash-completion/modelfs"
	compopt() { :; }    # only valid inside a real completion
	[ "$(comp modelfs --poll)" = --poll-secs= ]
	[ "$(comp modelfs --device o)" = opencl ]
	[ "$(comp modelfs --log-level=d)" = debug ]
	[ "$(comp modelfs --model-control=ex)" = explicit ]
	[ "$(comp modelfs --log-format=I)" = ISO8601 ]
	[ "$(comp modelfs --strict-readiness=f)" = false ]
	[ "$(comp modelfs --exit-on)" = --exit-on-error= ]
	[ "$(comp modelfs --model-load)" = --model-load-thread-count= ]
	[ "$(comp modelfs -o model_con)" = model_control= ]
	[ -z "$(comp modelfs --threads "")" ]
	[ "$(comp modelfs -o allow_other,pol)" = allow_other,poll_secs= ]
	[ "$(comp modelfs -o max_request_b)" = max_request_bytes= ]
	[ "$(comp modelfs -o max_req | sort | tr '\n' ' ')" = "max_request_bytes= max_requests= max_requests_per_uid= " ]
	[ "$(comp modelfs run --fo)" = --format= ]
	[ "$(comp modelfs --cache | sort | tr '\n' ' ')" = "--cache-config= --cache-dir= --cache-size= " ]
	[ "$(comp modelfs run --cache)" = --cache-dir= ]
	[ "$(comp modelfs --metrics-config summary_l | tr '\n' ' ')" = "summary_latencies=true summary_latencies=false " ]
	[ "$(comp modelfs -o metrics)" = metrics_config= ]
	[ -z "$(comp modelfs run --metrics)" ]
	# run offers the daemon's options that apply to it, and not the others
	[ "$(comp modelfs run --log)" = --log-level= ]
	[ -z "$(comp modelfs run --poll)" ]
	[ "$(comp modelfs run x --format n)" = npy ]
	[ -z "$(comp modelfs run x --version "")" ]
	# Every option of --help, from the binary itself.
	[ "$(comp modelfs - | wc -l)" -eq "$("$MODELFS" --help | grep -c '^ *-')" ]
	mount_repo "$EXAMPLES"
	[ "$(comp modelfs run "$MNT/" | sort | tr '\n' ' ')" = "$MNT/add_sub $MNT/cnn $MNT/mlp $MNT/pipeline $MNT/pipeline_preprocess $MNT/pipeline_softmax $MNT/running_mean " ]
	[ "$(comp modelfs run "$MNT/m")" = "$MNT/mlp" ]
}

@test ".metrics parses with promtool; only Triton's names break its naming lint" {
	command -v promtool || skip "promtool (Debian's prometheus) is not installed"
	mount_repo "$EXAMPLES"
	req="$MNT/add_sub/requests/p1"
	mkdir "$req"
	cp "$EXAMPLES"/add_sub/samples/INPUT[01].npy "$req/"
	cat "$req/OUTPUT0.txt" > /dev/null
	cat "$MNT/.metrics" > "$T/metrics"
	grep -q '^nv_inference_request_success{model="add_sub",version="1"} 1$' "$T/metrics"
	run promtool check metrics < "$T/metrics"
	echo "$output"
	# 0: clean; 3: lint problems only; 1: the text does not parse.
	[ "$status" -eq 0 ] || [ "$status" -eq 3 ]
	# The names are Triton's (the contract): their units and suffixes are
	# the only complaints.
	! echo "$output" | grep -v -E '^nv_[a-z_]+ (counter metrics should have "_total" suffix|metric names should not contain abbreviated units|non-histogram and non-summary metrics should not have "_count" suffix)$' | grep .
}

@test "a fresh machine: make asks pkg-config nothing before deps has installed the packages" {
	# On a machine without libfuse3-dev, `make run` parses the Makefile
	# before its deps step installs the package: flags computed at parse
	# time are empty for the whole run.  A pkg-config that only records
	# its calls must not be called by parsing or by `make -n deps`.
	mkdir -p "$T/bin"
	printf '#!/bin/sh\necho "$*" >> "%s/calls"\nexit 1\n' "$T" > "$T/bin/pkg-config"
	chmod +x "$T/bin/pkg-config"
	: > "$T/calls"
	PATH="$T/bin:$PATH" make --no-print-directory -n -C "$TOP" deps > /dev/null
	[ ! -s "$T/calls" ] || { echo "pkg-config called at parse time:"; cat "$T/calls"; return 1; }
	# ...and the build itself does ask it (the check can see a call).
	PATH="$T/bin:$PATH" make --no-print-directory -s -C "$TOP" print-layer-flags LAYER=base > /dev/null
	[ -s "$T/calls" ]
}

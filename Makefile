# modelfs - see README.md.  `make run`, `make test`; everything else is
# for developers.  Sources are found by wildcard, so a new module or
# operator file needs no edit here.
#
# Layers (docs/ARCHITECTURE.md), lowest first; each may include only the
# headers of its own layer and the layers below it:
#
#   src/base   error, log, tensor, files              (nothing)
#   exec       the engine, in rooms:                  (base)
#     exec/onnx      the ONNX model: reader, tensors  (base)
#     exec/op, exec/graph, exec/runtime
#                    the operator contract, the graph
#                    and its rewrites, the runtime
#                    both engines share               (base, onnx)
#     exec/cpu       the CPU engine and its operators (the shared rooms)
#     exec/opencl    the OpenCL engine                (the shared rooms)
#   src/core   codecs, configs, repository, requests,
#              scheduler, registry, reload, metrics,
#              custom backends (worker processes)     (base, exec, include/)
#   fs         the FUSE layer                          (base, exec, core)
#   src/cli    main, the commands, options             (everything)
#
# Each layer and room is compiled with the include paths of the layers
# below it only, so an #include that points upward (or from one engine
# into the other) fails the build (`make check-layers` proves it with one
# probe per boundary).

CC       ?= cc
BUILD    ?= build
SAN      ?=
OPT      ?= -O2

PKGS      := fuse3 jansson libsystemd libpcre2-8
# Asked of pkg-config when first used, never at parse time: on a fresh
# machine `make run` parses this file before `deps` has installed the
# packages (the -dev packages' flags would be empty for the whole run).
PKG_CFLAGS = $(eval PKG_CFLAGS := $$(shell pkg-config --cflags $(PKGS) 2>/dev/null))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $$(shell pkg-config --libs $(PKGS) 2>/dev/null))$(PKG_LIBS)

CFLAGS   = -std=gnu11 -Wall -Wextra -Werror -Wno-format-truncation $(OPT) -g -fopenmp -pthread \
            -D_GNU_SOURCE -DFUSE_USE_VERSION=314 \
            $(PKG_CFLAGS) \
            -I/usr/include/x86_64-linux-gnu/openblas-pthread \
            -MMD -MP $(EXTRA_CFLAGS)
LDLIBS   = $(PKG_LIBS) -linotifytools -lopenblas -ldnnl -lclblast -lOpenCL \
            -lm -ldl -lpthread -fopenmp

# SAN=fuzz: the library built by clang for libFuzzer targets (make fuzz).
# gcc's -Werror build is the warning gate; clang's extra diagnostics (e.g.
# "loop not vectorized" on omp simd) must not break the fuzz build.
ifeq ($(SAN),fuzz)
CFLAGS   += -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
            -fno-sanitize-recover=undefined -Wno-error -Wno-unknown-warning-option \
            -Wno-pass-failed
LDFLAGS  += -fsanitize=address,undefined
endif

ifeq ($(SAN),1)
CFLAGS   += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS  += -fsanitize=address,undefined
endif

BASE_INC   := -Isrc/base
ONNX_INC   := $(BASE_INC) -Iexec/onnx
# The rooms both engines share: the operator contract, the graph, the runtime.
ENGINE_INC := $(ONNX_INC) -Iexec/op -Iexec/graph -Iexec/runtime -I$(BUILD)/gen
CPU_INC    := $(ENGINE_INC) -Iexec/cpu -Iexec/cpu/ops
OCL_INC    := $(ENGINE_INC) -Iexec/opencl
# What the layers above the engine see of it: the shared rooms and each
# engine's public header (mfs_backend_opencl_new, the thread policy).
EXEC_INC   := $(ENGINE_INC) -Iexec/cpu -Iexec/opencl
CORE_INC := $(EXEC_INC) -Iinclude -Isrc/core -Isrc/core/backend -Isrc/core/codec -Isrc/core/config \
            -Isrc/core/reload
FS_INC   := $(CORE_INC) -Ifs
CLI_INC  := $(FS_INC) -Isrc/cli
# The include paths for a source file, by the layer (and room) its folder is in.
layer_inc = $(strip \
  $(if $(filter src/base/%,$1),$(BASE_INC), \
  $(if $(filter exec/onnx/%,$1),$(ONNX_INC), \
  $(if $(filter exec/cpu/%,$1),$(CPU_INC), \
  $(if $(filter exec/opencl/% $(BUILD)/gen/kernels%,$1),$(OCL_INC), \
  $(if $(filter exec/% $(BUILD)/gen/%,$1),$(ENGINE_INC), \
  $(if $(filter src/core/%,$1),$(CORE_INC), \
  $(if $(filter fs/%,$1),$(FS_INC), \
  $(CLI_INC)))))))))
# The flags of one layer or room by name (check-layers.sh asks for them).
layer_flags = $(if $(filter base,$1),$(BASE_INC),$(if $(filter onnx,$1),$(ONNX_INC),$(if $(filter engine,$1),$(ENGINE_INC),$(if $(filter cpu,$1),$(CPU_INC),$(if $(filter opencl,$1),$(OCL_INC),$(if $(filter exec,$1),$(EXEC_INC),$(if $(filter core,$1),$(CORE_INC),$(if $(filter fs,$1),$(FS_INC),$(CLI_INC)))))))))

LIB_SRC  := $(wildcard src/base/*.c exec/*/*.c exec/cpu/ops/*.c src/core/*.c \
              src/core/*/*.c fs/*.c src/cli/*.c)
LIB_SRC  := $(filter-out src/cli/main.c,$(LIB_SRC))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/kernels_embedded.o
OP_SRC   := $(wildcard exec/cpu/ops/*.c)
KERNELS  := $(wildcard kernels/*.cl)

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BIN := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)

.PHONY: all deps run test unit conformance e2e asan clean bench fuzz models check-models check-models-all docs check-layers check-cycles check-size print-layer-flags bench-fs bench-bins backends
all: modelfs backends

# Custom backends (docs/BACKENDS.md): shared libraries built against the
# public header alone, as a user's would be.  The example is what
# examples/preprocess/ serves; fault.c is the tests' (fails and crashes on
# demand), built a second time declaring an ABI version modelfs does not
# speak.  No sanitizer flags: a user's library is not instrumented either.
BACKEND_CFLAGS = -std=gnu11 -Wall -Wextra -Werror $(OPT) -g -fPIC -shared -Iinclude
BACKEND_LIBS := $(BUILD)/examples/libmodelfs_preprocess.so \
                $(BUILD)/tests/backends/libmodelfs_fault.so \
                $(BUILD)/tests/backends/libmodelfs_badabi.so
backends: $(BACKEND_LIBS)

$(BUILD)/examples/libmodelfs_%.so: examples/backends/%.c include/modelfs_backend.h
	@mkdir -p $(dir $@)
	$(CC) $(BACKEND_CFLAGS) -o $@ $< -lm

$(BUILD)/tests/backends/libmodelfs_fault.so: tests/backends/fault.c include/modelfs_backend.h
	@mkdir -p $(dir $@)
	$(CC) $(BACKEND_CFLAGS) -o $@ $<

$(BUILD)/tests/backends/libmodelfs_badabi.so: tests/backends/fault.c include/modelfs_backend.h
	@mkdir -p $(dir $@)
	$(CC) $(BACKEND_CFLAGS) -DFAULT_ABI_VERSION=99 -o $@ $<

# The binary lives at the top for `make run`; sanitizer builds stay in
# their own tree.
ifeq ($(BUILD),build)
MODELFS := modelfs
else
MODELFS := $(BUILD)/modelfs
endif

ifneq ($(MODELFS),modelfs)
modelfs: $(MODELFS)
endif

$(MODELFS): $(BUILD)/obj/src/cli/main.o $(BUILD)/libmodelfs.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libmodelfs.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/obj/%.o: %.c | $(BUILD)/gen/op_table.inc
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(call layer_inc,$<) -c -o $@ $<

# Operator registry: every `MFS_OP(Name, version, ...)` line in exec/cpu/ops/.
$(BUILD)/gen/op_table.inc: $(OP_SRC) Makefile
	@mkdir -p $(dir $@)
	@sed -n 's/^MFS_OP(\([A-Za-z0-9_]*\), *\([0-9]*\),.*/MFS_OP_ENTRY(\1, \2)/p; s/^MFS_OP_DOMAIN("[^"]*", *\([A-Za-z0-9_]*\), *\([0-9]*\),.*/MFS_OP_ENTRY(\1, \2)/p' $(OP_SRC) > $@.tmp
	@cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@

# OpenCL sources embedded as C strings (kernels/*.cl -> one table).
$(BUILD)/gen/kernels_embedded.c: $(KERNELS) scripts/embed-kernels.sh
	@mkdir -p $(dir $@)
	sh scripts/embed-kernels.sh $(KERNELS) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/kernels_embedded.o: $(BUILD)/gen/kernels_embedded.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(OCL_INC) -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(BUILD)/libmodelfs.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CLI_INC) $(LDFLAGS) -o $@ $< $(BUILD)/libmodelfs.a -lcmocka $(LDLIBS)

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libmodelfs.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CLI_INC) $(LDFLAGS) -o $@ $< $(BUILD)/libmodelfs.a $(LDLIBS)

unit-bins: $(UNIT_BIN) $(TOOL_BIN) $(BACKEND_LIBS)

# The benchmark programs, built by make test too so that they cannot rot.
bench-bins: $(BUILD)/bench/bench_engine $(BUILD)/bench/bench_generate $(BUILD)/bench/bare_fs

# The layering rule, tried (tests/layers/check-layers.sh, run by make test).
check-layers: | $(BUILD)/gen/op_table.inc
	sh tests/layers/check-layers.sh

# The size rule: no file over 900 lines, no function over 120
# (tests/layers/check-size.sh, run by make test; prints the longest five).
check-size:
	sh tests/layers/check-size.sh

# No call cycles between object files (tests/layers/check-cycles.sh, run
# by make test over every object of the library).
CYCLES_IN ?= $(BUILD)/obj
check-cycles: $(LIB_OBJ)
	sh tests/layers/check-cycles.sh $(CYCLES_IN)

print-layer-flags:
	@echo $(CFLAGS) $(call layer_flags,$(LAYER))

$(BUILD)/bench/%: bench/%.c $(BUILD)/libmodelfs.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CLI_INC) $(LDFLAGS) -o $@ $< $(BUILD)/libmodelfs.a $(LDLIBS)

# `make bench`: ratios against ONNX Runtime and raw OpenBLAS, same run;
# torchvision rows at batch 1 (BENCH_TV=0 skips; TV_MODELS, TV_ITERS) and
# text generation (BENCH_GEN=0 skips): bench/run-bench.sh.
bench: deps
	$(MAKE) all $(BUILD)/bench/bench_engine $(BUILD)/bench/bench_generate $(BUILD)/bench/bare_fs
	sh bench/run-bench.sh
	sh bench/run-bench-fs.sh

# `make bench-fs`: the filesystem path alone (bench/run-bench-fs.sh).
bench-fs: deps
	$(MAKE) all $(BUILD)/bench/bench_engine $(BUILD)/bench/bench_generate $(BUILD)/bench/bare_fs
	sh bench/run-bench-fs.sh

# The bare FUSE baseline: libfuse alone, nothing of modelfs.
$(BUILD)/bench/bare_fs: bench/bare_fs.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(PKG_LIBS) -lpthread

deps:
	@sh scripts/install-deps.sh

# `make run`: set up, build, mount the examples at ./mnt.
run: deps
	@$(MAKE) --no-print-directory all
	@sh scripts/run-examples.sh

# `make test`: set up, build (plain and ASan+UBSan), run every suite and
# print one summary line.
test: deps
	$(MAKE) -j$(shell nproc) all unit-bins bench-bins
	$(MAKE) -j$(shell nproc) BUILD=build/asan SAN=1 OPT=-O1 unit-bins build/asan/modelfs
	sh tests/run-all.sh

# Fuzzing (libFuzzer, clang).  Every tests/fuzz/fuzz_<name>.c defines
# LLVMFuzzerTestOneInput and is linked with the library built by clang in
# build/fuzz.  Seeds: tests/fuzz/corpus/<name>/ (committed, small); the
# growing corpus lives in build/fuzz/corpus/<name>/; crashers are written
# to tests/fuzz/regressions/<name>/ and replayed by every fuzz-smoke.
#   make fuzz [FUZZ_SECS=600] [FUZZ_TARGETS="onnx_model ..."]
#   make fuzz-smoke [FUZZ_SMOKE_RUNS=100000] (replay regressions and seeds,
#                   then that many inputs from a fixed seed: deterministic)
FUZZ_CC     ?= clang
FUZZ_SECS   ?= 600
FUZZ_SMOKE_RUNS ?= 100000
FUZZ_SRC    := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_TARGETS ?= $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
FUZZ_BIN    := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: fuzz fuzz-smoke fuzz-bins fuzz-targets
fuzz-bins:
	$(MAKE) --no-print-directory BUILD=build/fuzz CC=$(FUZZ_CC) SAN=fuzz OPT=-O1 fuzz-targets

fuzz-targets: $(FUZZ_BIN)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(BUILD)/libmodelfs.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(CLI_INC) -Itests/fuzz -fsanitize=fuzzer,address,undefined \
		-o $@ $< $(BUILD)/libmodelfs.a $(LDLIBS)

fuzz: fuzz-bins
	sh tests/fuzz/run-fuzz.sh run $(FUZZ_SECS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-bins
	sh tests/fuzz/run-fuzz.sh smoke $(FUZZ_SMOKE_RUNS) $(FUZZ_TARGETS)

# Fresh Debian 12 roots (mmdebstrap): the README's first run, make
# install/uninstall and the .deb used as a user would (scripts/fresh-check.sh,
# docs/FRESH.md; FRESH_STEPS="make-install ..." reruns steps on the kept
# roots, FRESH_FULL=1 adds make test).  Not in make test.
.PHONY: fresh-check
fresh-check:
	sh scripts/fresh-check.sh

# Soak (tests/soak/soak.py): 16 clients x 10000 requests through request
# directories and infer, 100 reloads of add_sub, clients killed; every
# result checked, the daemon's RSS and fds flat.  Not in `make test`
# (tests/run-all.sh runs 16 x 200 with 5 reloads).
SOAK_CLIENTS ?= 16
SOAK_REQUESTS ?= 10000
SOAK_RELOADS ?= 100
.PHONY: soak
soak: modelfs
	/usr/bin/python3 tests/soak/soak.py $(PWD)/modelfs examples $(SOAK_CLIENTS) $(SOAK_REQUESTS) $(SOAK_RELOADS)

# Hostile soak (tests/soak/hostile_soak.py, root): SOAK_SECS with 4
# normal clients on add_sub, a client cycling through every fault of the
# hostile backend (tests/backends/fault.c), a second add_sub loaded and
# unloaded all along (--model-control=explicit), and uid 65534 filling
# its share of request directories and linking inputs into /proc; every
# normal request checked, RSS and fds flat, no worker left.  Not in
# `make test`.  Last run (2026-11-28, 1800 s, 2-core VM, loaded): 14 passed,
# 0 failed; 1.1 M normal requests checked, 2219 hostile ones, 81745
# load/unload cycles; RSS 18.0 -> 18.4 MiB, fds 20 -> 19 (docs/SECURITY.md "Soak").
SOAK_SECS ?= 1800
.PHONY: soak-hostile
soak-hostile: modelfs $(BUILD)/tests/backends/libmodelfs_fault.so
	/usr/bin/python3 tests/soak/hostile_soak.py $(PWD)/modelfs examples $(BUILD)/tests/backends/libmodelfs_fault.so $(SOAK_SECS)

# Real models against PyTorch (tests/models/), exported into build/models/
# (needs Debian's python3-torch) and run by `modelfs run`, each within
# max|diff| <= 1e-3 * max|ref|.  check-models: the quick set (ResNet-18,
# MobileNetV2, a transformer encoder at opset 13; BERT-like and GPT-2-like
# at opset 17), run by `make test`.
# check-models-all: also ResNet-50, a BERT-like encoder with an attention
# mask and a GPT-2-like decoder, every model at opsets 13 and 17, and two
# torch.jit.script exports with control flow (a greedy decoder's Loop, an
# If).
# Timings: docs/PERFORMANCE.md.
models:
	/usr/bin/python3 tests/models/export_models.py build/models all

check-models: modelfs
	sh tests/models/check_models.sh

check-models-all: modelfs
	sh tests/models/check_models.sh all

# Everything an operator change makes stale, regenerated in one step
# (exec/OPERATORS-HOWTO.md):
#  - the conformance pass lists tests/conformance/expected-pass.txt (CPU)
#    and expected-pass-opencl.txt (the first-set cases on OpenCL, PoCL
#    here): new passes are added; a case on the list that no longer passes
#    fails the target and leaves the list as it was (make test would fail
#    on it too), so a regression is never written in by accident;
#  - docs/OPERATORS.md from the operator registry (tests/tools/list_ops)
#    and the conformance runner's verbose output, and the same list's
#    cases through `modelfs run` (tests/e2e/run_backend_cases.py).
# make test fails on a regression against either list and on a stale
# docs/OPERATORS.md.
docs: $(BUILD)/tools/list_ops $(BUILD)/tools/conformance modelfs
	sh scripts/update-pass-list.sh tests/conformance/expected-pass.txt $(BUILD)/tools/conformance
	sh scripts/update-pass-list.sh tests/conformance/expected-pass-opencl.txt $(BUILD)/tools/conformance \
		--device opencl --first-set
	sh scripts/gen-operators-doc.sh $(BUILD)/tools/list_ops $(BUILD)/tools/conformance > docs/OPERATORS.md.tmp
	mv docs/OPERATORS.md.tmp docs/OPERATORS.md

# `make install` / `make uninstall` (GNU conventions: PREFIX, DESTDIR;
# docs/DEPLOY.md).  No mount helper link: mount(8) runs mount.fuse3 for
# type fuse.modelfs, and that runs `modelfs` found on PATH.  The OpenCL
# kernels are inside the binary.  /etc/default/modelfs is installed only
# when missing and removed only when unchanged.
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
DATADIR     ?= $(PREFIX)/share
MANDIR      ?= $(DATADIR)/man
DOCDIR      ?= $(DATADIR)/doc/modelfs
UNITDIR     ?= $(PREFIX)/lib/systemd/system
COMPLETIONDIR ?= $(DATADIR)/bash-completion/completions
INCLUDEDIR  ?= $(PREFIX)/include
# The example backend goes where the binary looks without --backend-dir:
# BINDIR/../lib/modelfs/backends (src/cli/installed_backends.h).
BACKENDDIR  ?= $(PREFIX)/lib/modelfs/backends
SYSCONFDIR  ?= /etc
INSTALL     ?= install
UNITS       := modelfs.service modelfs@.service
DOC_FILES   := README.md CHANGELOG.md $(wildcard docs/*.md)
EXAMPLE_FILES := $(shell find examples -type f 2>/dev/null)

# The folders install may have made that are not modelfs's own (on a
# fresh Debian, /usr/local has none of them): uninstall removes those left
# empty, children before parents, so that it leaves the tree as it was.
# Not BINDIR or INCLUDEDIR: /usr/local/bin and /usr/local/include are
# the FHS's and exist, empty, on a fresh Debian.
parent = $(patsubst %/,%,$(dir $(1)))
INSTALLED_DIRS := $(BACKENDDIR) $(call parent,$(BACKENDDIR)) \
	$(MANDIR)/man1 $(MANDIR)/man5 $(UNITDIR) $(call parent,$(UNITDIR)) \
	$(COMPLETIONDIR) $(call parent,$(COMPLETIONDIR)) $(call parent,$(DOCDIR))

.PHONY: install uninstall
install: $(MODELFS) $(BUILD)/examples/libmodelfs_preprocess.so
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(BACKENDDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(COMPLETIONDIR) $(DESTDIR)$(DOCDIR) \
		$(DESTDIR)$(SYSCONFDIR)/default $(DESTDIR)$(INCLUDEDIR)
	$(INSTALL) -m 755 $(MODELFS) $(DESTDIR)$(BINDIR)/modelfs
	$(INSTALL) -m 644 include/modelfs_backend.h $(DESTDIR)$(INCLUDEDIR)/
	$(INSTALL) -m 644 $(BUILD)/examples/libmodelfs_preprocess.so $(DESTDIR)$(BACKENDDIR)/
	$(INSTALL) -m 644 man/modelfs.1 $(DESTDIR)$(MANDIR)/man1/
	$(INSTALL) -m 644 man/modelfs-repository.5 $(DESTDIR)$(MANDIR)/man5/
	for u in $(UNITS); do \
		sed -e '/@service_body@/{r dist/systemd/service-body.in' -e 'd;}' \
		    dist/systemd/$$u.in | sed 's|@bindir@|$(BINDIR)|g' > $(DESTDIR)$(UNITDIR)/$$u && \
		chmod 644 $(DESTDIR)$(UNITDIR)/$$u || exit 1; \
	done
	$(INSTALL) -m 644 dist/bash-completion/modelfs $(DESTDIR)$(COMPLETIONDIR)/modelfs
	$(INSTALL) -m 644 $(DOC_FILES) $(DESTDIR)$(DOCDIR)/
	for f in $(EXAMPLE_FILES); do \
		$(INSTALL) -D -m $$(test -x $$f && echo 755 || echo 644) $$f $(DESTDIR)$(DOCDIR)/$$f || exit 1; \
	done
	$(INSTALL) -m 644 dist/default-modelfs $(DESTDIR)$(DOCDIR)/examples/default-modelfs
	test -e $(DESTDIR)$(SYSCONFDIR)/default/modelfs || \
		$(INSTALL) -m 644 dist/default-modelfs $(DESTDIR)$(SYSCONFDIR)/default/modelfs

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/modelfs $(DESTDIR)$(MANDIR)/man1/modelfs.1 \
		$(DESTDIR)$(INCLUDEDIR)/modelfs_backend.h \
		$(DESTDIR)$(BACKENDDIR)/libmodelfs_preprocess.so \
		$(DESTDIR)$(MANDIR)/man5/modelfs-repository.5 \
		$(UNITS:%=$(DESTDIR)$(UNITDIR)/%) $(DESTDIR)$(COMPLETIONDIR)/modelfs
	rm -rf $(DESTDIR)$(DOCDIR)
	! cmp -s dist/default-modelfs $(DESTDIR)$(SYSCONFDIR)/default/modelfs || \
		rm -f $(DESTDIR)$(SYSCONFDIR)/default/modelfs
	for d in $(INSTALLED_DIRS); do \
		[ ! -d $(DESTDIR)$$d ] || rmdir --ignore-fail-on-non-empty $(DESTDIR)$$d || exit 1; \
	done

# `make deb`: the Debian package (debian/), built from a copy of the tree
# in $(BUILD)/deb so that this build is not cleaned; lintian must find no
# error.  Needs dpkg-dev, debhelper, lintian and the build dependencies.
.PHONY: deb
deb:
	@sh scripts/install-deps.sh deb
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/modelfs
	tar --anchored --exclude=./build --exclude=./modelfs --exclude=./mnt --exclude=./.git \
		-cf - . | tar -xf - -C $(BUILD)/deb/modelfs
	cd $(BUILD)/deb/modelfs && dpkg-buildpackage -us -uc -b
	lintian --fail-on error $(BUILD)/deb/modelfs_*.changes

clean:
	rm -rf build modelfs

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

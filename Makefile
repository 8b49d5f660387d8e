# alk - build, test, replay, fuzz. `make help` lists the targets.
#
# The user's CC, CXX, CFLAGS, CPPFLAGS and LDFLAGS are honoured; the
# project's warnings and sanitizers live in their own variables.

CC       ?= cc
CXX      ?= c++
CLANG    ?= clang
CLANGXX  ?= clang++
CFLAGS   ?= -O1 -g
PREFIX   ?= /usr/local
B        ?= build
GREATEST_DIR ?= tests

WARN     = -std=c99 -Wall -Wextra -Wpedantic -Werror -Wshadow \
           -Wstrict-prototypes -Wmissing-prototypes -Wconversion
WARNXX   = -std=c++11 -Wall -Wextra -Wpedantic -Werror -Wshadow
SAN      = -fsanitize=address,undefined -fno-sanitize-recover=all \
           -fno-omit-frame-pointer
# The project's runner is checked with every warning; a real greatest.h
# given by GREATEST_DIR is a system header to us (its own warnings are not
# ours to fix).
ifeq ($(GREATEST_DIR),tests)
GREATEST_INC = -Itests
else
GREATEST_INC = -isystem $(GREATEST_DIR)
endif

HEADERS      := $(wildcard alkcodec.h alksim.h alktunnel.h qcow2w.h)
# Every fuzz/<target>.c that defines LLVMFuzzerTestOneInput is a target, as
# the OSS-Fuzz build (.clusterfuzzlite/build.sh) finds them: a new harness
# is replayed, soaked, seeded and fuzzed without a list to edit.
FUZZ_TARGETS := $(sort $(basename $(notdir $(shell grep -l '^int LLVMFuzzerTestOneInput' fuzz/*.c))))
UNIT_TESTS   := $(patsubst tests/test_%.c,%,$(wildcard tests/test_*.c))
EXAMPLES     := $(patsubst examples/%.c,%,$(wildcard examples/*.c))
BENCHES      := $(patsubst tests/bench_%.c,%,$(wildcard tests/bench_*.c))
# the replays through alktunnel.h's portable primitives (see replay below)
REPLAY_PORTABLE := $(if $(filter session,$(FUZZ_TARGETS)),session_portable) \
                   $(if $(filter params,$(FUZZ_TARGETS)),params_portable)

# Fuzz engine builds (make fuzz) amplify the codec attack to 64 KiB instead
# of 16 MiB so that exec/s stays high; the replay gate uses the full size.
FUZZ_DEFS = -DCODEC_AMPLIFY_BYTES=65536

.PHONY: all demo test gate fast-gate unit replay replay-runs conformance compile-matrix seeds diff-qemu diff-qemu-jobs \
        crash-qemu crash-qemu-jobs json-qemu compress-qemu measure-qemu map-qemu amend-qemu crash-soak soak \
        seeds-check fuzz fuzz-status fuzz-stop fuzz-merge \
        mutants coverage bench bench-vs install install-check uninstall oss-fuzz-check \
        firmware-check valgrind deps clean help planted-bug-check tunnel-process \
        ctgrind crypto-portable gate-build planted-programs FORCE

all: $(UNIT_TESTS:%=$(B)/test_%) $(FUZZ_TARGETS:%=$(B)/replay_%) \
     $(REPLAY_PORTABLE:%=$(B)/replay_%) $(EXAMPLES:%=$(B)/%)

help:
	@echo "alk targets:"
	@echo "  make demo            build every example and run its demo"
	@echo "  make test            the gate (tests/gate.sh): compile matrix, unit tests"
	@echo "                       (ASan+UBSan), replay, JSON conformance, seed stability,"
	@echo "                       planted bugs, demo, install, OSS-Fuzz, qemu, firmware;"
	@echo "                       ends with 'N passed, N failed'"
	@echo "  make unit            unit tests only (GREATEST_DIR=dir: real greatest.h)"
	@echo "  make replay          every corpus/<target>/ file through its harness"
	@echo "  make conformance     tests/json_conformance/ vs the reference and alktunnel.h"
	@echo "  make diff-qemu [ITER=n] [SEED=s]   qcow2w.h against qemu-img / qemu-io"
	@echo "  make diff-qemu-jobs [JOBS_ITER=n] [SEED=s]   commit / rebase against qemu-img"
	@echo "  make crash-soak [RUNS=n] [SEED=s]  qcow2w.h power-loss scenarios, distinct points"
	@echo "  make soak [TARGET=t] [SEED=s] [RUNS=n]  harnesses in seed mode on seeds no corpus came from"
	@echo "  make crash-qemu [RUNS=n] [SEED=s]  crashed images judged by qemu-img check"
	@echo "  make crash-qemu-jobs [RUNS=n] [SEED=s]  crashed commits / rebases judged by qemu-img check"
	@echo "  make json-qemu                     qcow2w's JSON output against qemu-img's"
	@echo "  make compress-qemu                 compressed images both ways against qemu-img"
	@echo "  make measure-qemu                  qcow2w measure against qemu-img measure"
	@echo "  make map-qemu                      qcow2w map against qemu-img map (both forms)"
	@echo "  make amend-qemu                    qcow2w amend -o compat= against qemu-img amend"
	@echo "  make fast-gate       unit + replay (what mutants are judged by)"
	@echo "  make tunnel-process  the alktunnel tool as processes: relay killed"
	@echo "                       mid-transfer, revocation by SIGHUP"
	@echo "  make compile-matrix  gcc/clang C99 pedantic, g++ plain/impl, _STATIC,"
	@echo "                       include orders, licence texts, quick starts"
	@echo "  make seeds           regenerate the generated seeds in corpus/"
	@echo "  make fuzz [TARGET=x] [SECONDS=n] [ENGINE=honggfuzz|libfuzzer|afl]"
	@echo "                       build every harness; with TARGET a detached"
	@echo "                       campaign (fuzz-status, fuzz-stop)"
	@echo "  make fuzz-merge TARGET=x   stage new coverage for corpus/x/"
	@echo "  make mutants [HEADER=x] [COUNT=n] [SEED=n]   mutation testing"
	@echo "  make coverage        line/branch coverage per header (lcov HTML)"
	@echo "  make bench           benchmark ratios measured in one run"
	@echo "  make bench YYJSON_DIR=dir   ... with alktunnel.h's JSON reader vs yyjson"
	@echo "  make install PREFIX=dir   headers + pkg-config file (install-check)"
	@echo "  make oss-fuzz-check  run .clusterfuzzlite/build.sh locally"
	@echo "  make firmware-check  freestanding Cortex-M4 build and sizes"
	@echo "  make valgrind        unit tests under valgrind (no sanitizers)"
	@echo "  make planted-bug-check  every tests/planted/*.patch applied to a copy of its"
	@echo "                       header must fail what its Caught-by lines name"
	@echo "  make gate-build      every program make test runs, -j\$$(nproc)"
	@echo "  make deps            install the Debian packages the tests use (.ci/packages)"
	@echo "  Engines: TARGETS=$(FUZZ_TARGETS)  HEADERS=$(HEADERS)"

$(B):
	@mkdir -p $(B)

# ---- how the test programs are built ------------------------------------------
# Each header's implementation is compiled once per flavour, from
# fuzz/impl_<header>.c, into $(B)/<flavour>/libalk.a; every harness, replay
# program, drill and test tool links that archive instead of compiling the
# 10,000-line implementation into itself. (The unit tests are white-box:
# they include their header's implementation and call its static
# internals, so each unit test program is its own flavour. The examples
# stay one file each, as a user copies them.) Harnesses reach the few
# internals they check through testkit/<header>_internal.h.
#   asan      -O1 -g, the project warnings, ASan+UBSan: replay, conformance,
#             diff-qemu
#   portable  asan with alktunnel.h's portable primitives (no SIMD, no
#             SHA-NI, no 128-bit products): the paths this CPU does not take
#   plain     -O1 -g, no sanitizers: the planted-bug drills (their oracles
#             abort on their own)
#   planted/<header>-<bug>  plain, with <header>.h replaced by the copy a
#             tests/planted/ patch made
# Dependencies on headers come from the compiler (-MMD), so a change to one
# header - or one mutant of it - rebuilds what includes it and nothing else.
IMPLS     := alkcodec alksim alktunnel qcow2w
ALKT_PORTABLE = -DALKTUNNEL_PORTABLE
FL_asan     = $(CFLAGS) $(WARN) $(SAN)
FL_portable = $(FL_asan) $(ALKT_PORTABLE)
FL_plain    = -O1 -g -std=c99
FL_planted  = $(FL_plain) -I$(@D)
# the flavour of a target under $(B)/<flavour>/
flavour   = $(word 2,$(subst /, ,$(patsubst $(B)/%,x/%,$@)))
DEPFLAGS  = -MMD -MP -MF $@.d -MT $@
# harness-only switches (not the header's): set per object below
HARNESS_DEFS =

# a recipe that fails leaves no half-made target behind
.DELETE_ON_ERROR:
.SECONDEXPANSION:
# An implementation object; in a planted flavour, its header is the patched
# copy in the same directory when the bug is in that header.
$(B)/%.o: fuzz/$$(notdir $$*).c $$(call patched_header,$$@) | $$(@D)/.dir
	$(CC) $(CPPFLAGS) $(FL_$(flavour)) $(HARNESS_DEFS) -I. $(DEPFLAGS) -c $< -o $@
$(B)/%.o: tests/$$(notdir $$*).c | $$(@D)/.dir
	$(CC) $(CPPFLAGS) $(FL_$(flavour)) $(HARNESS_DEFS) -I. $(DEPFLAGS) -c $< -o $@
$(B)/%/.dir:
	@mkdir -p $(@D) && touch $@
.PRECIOUS: $(B)/%/.dir $(B)/%.o $(B)/%/libalk.a $(B)/planted/%.h

# A flavour that differs from another in some headers only builds those
# and links the other's objects for the rest: portable builds alktunnel.h
# and takes asan's; a planted flavour builds its patched header and takes
# plain's. $(call impl_obj,FLAVOUR,HEADER) is the object a flavour links;
# $(call patched_header,OBJECT) the patched header a planted object is
# built against.
BASE_portable  = asan
OWN_portable   = alktunnel
planted_header = $(firstword $(subst -, ,$(notdir $(1))))
patched_header = $(if $(filter $(B)/planted/%,$(1)),$(dir $(1))$(call planted_header,$(patsubst %/,%,$(dir $(1)))).h)
base_of  = $(if $(filter planted/%,$(1)),plain,$(BASE_$(1)))
own_of   = $(if $(filter planted/%,$(1)),$(call planted_header,$(1)),$(OWN_$(1)))
impl_obj = $(B)/$(if $(and $(call base_of,$(1)),$(filter-out $(call own_of,$(1)),$(2))),$(call base_of,$(1)),$(1))/impl_$(2).o
$(B)/%/libalk.a: $$(foreach h,$(IMPLS),$$(call impl_obj,$$*,$$(h)))
	@rm -f $@ && ar rcs $@ $^

# A planted bug's header: the shipping header with the patch applied, no
# fuzz allowed (-F0). A patch that no longer applies fails the build and
# removes the bug's directory - programs built from an earlier header go
# too - so the drill finds nothing to run and fails.
$(B)/planted/%.h: tests/planted/$$(*D).patch \
                 $$(notdir $$*).h | $$(@D)/.dir
	@cp $(notdir $*).h $@.tmp && \
	    patch -s -F0 --no-backup-if-mismatch -r - $@.tmp < $< && \
	    ! cmp -s $@.tmp $(notdir $*).h && mv $@.tmp $@ || \
	    { rm -rf $(@D); echo "$<: does not apply to $(notdir $*).h"; exit 1; }

-include $(wildcard $(B)/*.d $(B)/*/*.d $(B)/planted/*/*.d)

# ---- unit tests -------------------------------------------------------------
# tests/test_X.c tests X.h (a test split into parts includes
# tests/test_X_*.h); each program includes its header's implementation.
$(B)/test_%: tests/test_%.c | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) $(GREATEST_INC) -I. $(DEPFLAGS) \
	    $< -o $@ $(LDFLAGS)

# The same tests compiled as C++ prove the headers are usable from C++.
$(B)/test_%_cxx: tests/test_%.c | $(B)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -O1 -g $(WARNXX) $(SAN) $(GREATEST_INC) -I. \
	    $(DEPFLAGS) -x c++ $< -x none -o $@ $(LDFLAGS)

# The crypto and encrypted-session suites built the portable way: the
# ten-limb X25519 field (no 128-bit products), ChaCha20 and SHA-256
# without SIMD - what a 32-bit target or another compiler runs.
$(B)/test_alktunnel_portable: tests/test_alktunnel.c | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) $(ALKT_PORTABLE) $(GREATEST_INC) -I. \
	    $(DEPFLAGS) $< -o $@ $(LDFLAGS)

unit: $(UNIT_TESTS:%=$(B)/test_%) $(UNIT_TESTS:%=$(B)/test_%_cxx)
	@rc=0; for t in $(UNIT_TESTS); do \
	    for v in "" _cxx; do \
	        echo "== $(B)/test_$$t$$v"; \
	        ./$(B)/test_$$t$$v || rc=1; \
	    done; \
	done; echo "gate: $(words $(UNIT_TESTS)) headers' unit tests, as C and as C++"; exit $$rc

crypto-portable: $(B)/test_alktunnel_portable
	@./$(B)/test_alktunnel_portable -s alkt_crypto_suite && \
	    ./$(B)/test_alktunnel_portable -s alkt_sealed_suite

# ---- replay gate ------------------------------------------------------------
# replay_<target>: fuzz/<target>.c + tests/replay_main.c + the asan library.
$(B)/replay_%: $(B)/asan/%.o $(B)/asan/replay_main.o $(B)/asan/libalk.a
	$(CC) $(CFLAGS) $(SAN) $^ -o $@ $(LDFLAGS) $(LDLIBS_$*)

# The gate's world asks every question its steps skip and checks the answer
# is the one it had (TW_CHECK_QUIET in testkit/tunnel_world.h: no event, output
# or deadline appears in a role nobody called); the campaigns skip them.
$(B)/asan/roles.o $(B)/asan/tunnel_sim.o: HARNESS_DEFS = -DTW_CHECK_QUIET
# The inflater is checked against zlib whenever zlib.h and -lz are there
# (Debian: zlib1g-dev); without them only its own properties are checked.
ZLIB_OK := $(shell printf '\043include <zlib.h>\nint main(void){return zlibVersion()[0] == 0;}\n' | \
             $(CC) -x c - -lz -o /dev/null 2>/dev/null && echo 1)
$(B)/asan/inflate.o $(B)/plain/inflate.o: HARNESS_DEFS = $(if $(ZLIB_OK),-DALK_HAVE_ZLIB)
LDLIBS_inflate = $(if $(ZLIB_OK),-lz)
# (and the compressor's streams are read back by zlib as qemu reads them)
$(B)/asan/deflate.o $(B)/plain/deflate.o: HARNESS_DEFS = $(if $(ZLIB_OK),-DALK_HAVE_ZLIB)
LDLIBS_deflate = $(if $(ZLIB_OK),-lz)

# The session's corpus runs a second time through the portable primitives
# (the primitives' checks only, SS_PRIMITIVES_ONLY), and the params corpus
# through the JSON reader's word-at-a-time scan instead of SSE2: a mutant
# of the paths this CPU does not take is judged by the replay too, not only
# by crypto-portable.
$(B)/portable/session.o: HARNESS_DEFS = -DSS_PRIMITIVES_ONLY
$(B)/replay_session_portable: $(B)/portable/session.o $(B)/asan/replay_main.o \
                              $(B)/portable/libalk.a
	$(CC) $(CFLAGS) $(SAN) $^ -o $@ $(LDFLAGS)
$(B)/replay_params_portable: $(B)/asan/params.o $(B)/asan/replay_main.o \
                             $(B)/portable/libalk.a
	$(CC) $(CFLAGS) $(SAN) $^ -o $@ $(LDFLAGS)

# Targets run REPLAY_JOBS at a time (the slowest first), each into its own
# log; the logs are printed in a fixed order once all have ended.
REPLAY_JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
REPLAY_SLOW  := qcow2_crash qcow2_write codec qcow2_growth
REPLAY_ORDER := $(foreach t,$(REPLAY_SLOW),$(filter $(t),$(FUZZ_TARGETS))) \
                $(filter-out $(REPLAY_SLOW),$(FUZZ_TARGETS))
# The JSON conformance collection also goes through the params oracle.
REPLAY_RUNS  := $(foreach t,$(REPLAY_ORDER),$(t):corpus/$(t)) \
                $(if $(filter params,$(FUZZ_TARGETS)),params:tests/json_conformance) \
                $(if $(filter session,$(FUZZ_TARGETS)),session_portable:corpus/session) \
                $(if $(filter params,$(FUZZ_TARGETS)),params_portable:corpus/params)
# (what `make replay` runs, target:directory, for tests/mutants.py)
replay-runs:
	@echo $(REPLAY_RUNS)

replay: $(FUZZ_TARGETS:%=$(B)/replay_%) $(REPLAY_PORTABLE:%=$(B)/replay_%)
	@rm -rf $(B)/replay-logs; mkdir -p $(B)/replay-logs; \
	printf '%s\n' $(REPLAY_RUNS) | xargs -P $(REPLAY_JOBS) -I{} sh -c \
	    't=$${1%%:*}; d=$${1#*:}; log=$(B)/replay-logs/$$(echo "$$1" | tr "/:" "__"); \
	     ./$(B)/replay_$$t -q "$$d" > "$$log" 2>&1; echo $$? > "$$log.rc"' sh {}; \
	rc=0; for r in $(REPLAY_RUNS); do \
	    log=$(B)/replay-logs/$$(echo "$$r" | tr "/:" "__"); \
	    cat "$$log"; [ "$$(cat "$$log.rc" 2>/dev/null)" = 0 ] || rc=1; \
	done; \
	echo "gate: $(words $(REPLAY_RUNS)) runs of $(words $(FUZZ_TARGETS)) harnesses," \
	    "$$(cat $$(ls -d $(B)/replay-logs/* | grep -v '\.rc$$') | sed -n 's/^[a-z_0-9]*: \([0-9]*\) files,.*/\1/p' | \
	        awk '{s += $$1} END {print s + 0}') inputs"; \
	$(if $(ZLIB_OK),,echo "replay_inflate: the comparison with zlib" \
	    "SKIPPED (no zlib.h or -lz: apt-get install zlib1g-dev)";) exit $$rc

# ---- JSON conformance -------------------------------------------------------
# tests/json_conformance/: y_ must be accepted, n_ rejected, i_accept_/
# i_reject_ are the documented implementation choices. Checked against the
# reference validator (testkit/json_ref.h) and against alktunnel.h's reader.
$(B)/json_conformance: tests/json_conformance_main.c | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) -I. $(DEPFLAGS) $< -o $@ $(LDFLAGS)
$(B)/asan/json_conformance_impl.o: tests/json_conformance_main.c | $$(@D)/.dir
	$(CC) $(CPPFLAGS) $(FL_asan) -DALKT_CONFORMANCE_IMPL -I. $(DEPFLAGS) -c $< -o $@
$(B)/json_conformance_impl: $(B)/asan/json_conformance_impl.o $(B)/asan/libalk.a
	$(CC) $(CFLAGS) $(SAN) $^ -o $@ $(LDFLAGS)

conformance: $(B)/json_conformance $(B)/json_conformance_impl
	@rc=0; ./$(B)/json_conformance tests/json_conformance | \
	    sed 's/^conformance:/conformance (reference):/' || rc=1; \
	./$(B)/json_conformance_impl tests/json_conformance --impl | \
	    sed 's/^conformance:/conformance (alktunnel.h):/' || rc=1; \
	exit $$rc

fast-gate: unit replay $(if $(filter alktunnel,$(UNIT_TESTS)),crypto-portable)

# ---- seeds ------------------------------------------------------------------
# corpus/codec/ comes from a hand-written generator; the simulation and qcow2
# targets' generated seeds are seed-mode inputs written by their replay
# driver. Both are byte-stable: seeds-check regenerates them and compares.
SEEDED_TARGETS := sim_core sim_arq qcow2_write qcow2_growth qcow2_crash qcow2_jobs qcow2_compress deflate session pump roles \
                  tunnel_sim
SEED_ARGS = --seed 1 --runs 32 --max-len 2048

$(B)/codec_seeds: fuzz/codec_seeds.c | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -I. $(DEPFLAGS) $< -o $@ $(LDFLAGS)
$(B)/params_seeds: fuzz/params_seeds.c | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -I. $(DEPFLAGS) $< -o $@ $(LDFLAGS)

seeds: $(B)/codec_seeds $(B)/params_seeds $(SEEDED_TARGETS:%=$(B)/replay_%)
	./$(B)/codec_seeds corpus/codec
	@mkdir -p corpus/params && ./$(B)/params_seeds corpus/params
	@for t in $(SEEDED_TARGETS); do mkdir -p corpus/$$t && \
	    ./$(B)/replay_$$t $(SEED_ARGS) --write corpus/$$t || exit 1; done

seeds-check: $(B)/codec_seeds $(B)/params_seeds $(SEEDED_TARGETS:%=$(B)/replay_%)
	@rm -rf $(B)/seeds-check && mkdir -p $(B)/seeds-check/codec \
	    $(B)/seeds-check/params
	@./$(B)/codec_seeds $(B)/seeds-check/codec >/dev/null
	@./$(B)/params_seeds $(B)/seeds-check/params >/dev/null
	@for t in $(SEEDED_TARGETS); do mkdir -p $(B)/seeds-check/$$t && \
	    ./$(B)/replay_$$t $(SEED_ARGS) --write $(B)/seeds-check/$$t \
	    >/dev/null || exit 1; done
	@rc=0; n=0; for f in $(B)/seeds-check/*/*; do \
	    t=$${f#$(B)/seeds-check/}; n=$$((n + 1)); \
	    cmp -s "$$f" "corpus/$$t" || \
	        { echo "seed differs or missing: corpus/$$t"; rc=1; }; \
	done; \
	kinds=$$(sed -n '/^#define TS_KIND_LIST/,/^[^ ]/p' fuzz/tunnel_sim.h | \
	         grep -o 'X(K_[A-Z_]*, "[^"]*")' | sed 's/.*"\(.*\)")/\1/'); \
	if [ "$$kinds" != "$$(cat fuzz/tunnel_sim.kinds)" ]; then \
	    echo "tunnel_sim's kind table differs from fuzz/tunnel_sim.kinds: every committed"; \
	    echo "  input replays differently now - see THE RULE at TS_KIND_LIST in fuzz/tunnel_sim.h"; \
	    rc=1; fi; \
	echo "gate: $$n generated seeds regenerated and compared with corpus/, tunnel_sim's" \
	    "$$(printf '%s\n' "$$kinds" | wc -l) transition kinds with fuzz/tunnel_sim.kinds"; exit $$rc

# ---- the whole gate ---------------------------------------------------------
test gate:
	@MAKE="$(MAKE)" B="$(B)" GREATEST_DIR="$(GREATEST_DIR)" \
	    sh tests/gate.sh

compile-matrix:
	@CC="$(CC)" CLANG="$(CLANG)" CXX="$(CXX)" CLANGXX="$(CLANGXX)" B="$(B)" \
	    sh tests/compile_matrix.sh $(HEADERS)

# ---- planted bugs -------------------------------------------------------------
# tests/planted/<header>-<bug>.patch: a realistic bug, as a patch to the
# shipping header (which carries no planted-bug switch). Its "Caught-by:"
# lines name the programs that must fail with it; tests/planted.sh applies
# each patch to a copy under $(B)/planted/<header>-<bug>/, builds just
# those programs against the copy (the harness objects are the plain
# flavour's, shared by every bug) and checks each fails.
PLANTED := $(patsubst tests/planted/%.patch,%,$(wildcard tests/planted/*.patch))
define PLANTED_PROGRAMS
$(B)/planted/%/replay_$(1): $(B)/plain/$(1).o $(B)/plain/replay_main.o $(B)/planted/%/libalk.a
	$$(CC) $$^ -o $$@ $$(LDFLAGS) $$(LDLIBS_$(1))
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call PLANTED_PROGRAMS,$(t))))
# a unit test and ctgrind include the implementation: built with the
# patched header's directory searched first
$(B)/planted/%/test_alktunnel: tests/test_alktunnel.c $(B)/planted/%/alktunnel.h
	$(CC) $(CPPFLAGS) $(FL_plain) -I$(@D) -I. $(GREATEST_INC) $(DEPFLAGS) $< -o $@ $(LDFLAGS)
$(B)/planted/%/ctgrind: tests/ctgrind.c $(B)/planted/%/alktunnel.h
	$(CC) $(CPPFLAGS) -O2 -g -std=c99 -I$(@D) -I. $(DEPFLAGS) $< -o $@ $(LDFLAGS)

# The worked example with its planted bug, for the demo and the drill.
$(B)/arq_demo_bug: examples/arq_demo.c examples/arq.h examples/arq_scenario.h \
                   alksim.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DARQ_PLANTED_BUG $< -o $@ $(LDFLAGS)
# The committed corpus must catch the ARQ tutorial's planted bug.
$(B)/plain/sim_arq_bug.o: fuzz/sim_arq.c examples/arq.h examples/arq_scenario.h | $$(@D)/.dir
	$(CC) $(CPPFLAGS) $(FL_plain) -DARQ_PLANTED_BUG -I. $(DEPFLAGS) -c $< -o $@
$(B)/replay_sim_arq_bug: $(B)/plain/sim_arq_bug.o $(B)/plain/replay_main.o $(B)/plain/libalk.a
	$(CC) $^ -o $@ $(LDFLAGS)

# every program the drill runs (what the patches' Caught-by lines name)
PLANTED_PROGRAMS := $(foreach b,$(PLANTED),$(addprefix $(B)/planted/$(b)/,$(shell \
    sed -n 's/^Caught-by: \(valgrind \)\{0,1\}\([^ ]*\).*/\2/p' tests/planted/$(b).patch)))
planted-programs: $(PLANTED_PROGRAMS) $(B)/replay_sim_arq_bug

planted-bug-check:
	@MAKE="$(MAKE)" B="$(B)" sh tests/planted.sh $(PLANTED)

# ---- examples ---------------------------------------------------------------
# Each example is one file that includes the implementations it uses, as a
# user copies it, and is built as a user builds it: -O2 -g unless CFLAGS is
# given (the project's own -O1 default is for the test programs; the tool
# at -O1 moved 0.55x the bytes a second of the -O2 one).
EXAMPLE_CFLAGS = $(if $(filter command line environment,$(origin CFLAGS)),$(CFLAGS),-O2 -g)
$(B)/%: examples/%.c $(HEADERS) | $(B)
	$(CC) $(CPPFLAGS) $(EXAMPLE_CFLAGS) $(WARN) $< -o $@ $(LDFLAGS)

$(B)/arq_demo: examples/arq.h examples/arq_scenario.h

# Everything make test's stages run, built up front $(nproc) at a time
# (tests/gate.sh); the stages then find it built.
gate-build: $(UNIT_TESTS:%=$(B)/test_%) $(UNIT_TESTS:%=$(B)/test_%_cxx) \
            $(if $(filter alktunnel,$(UNIT_TESTS)),$(B)/test_alktunnel_portable) \
            $(FUZZ_TARGETS:%=$(B)/replay_%) $(REPLAY_PORTABLE:%=$(B)/replay_%) \
            $(B)/json_conformance $(B)/json_conformance_impl \
            $(B)/codec_seeds $(B)/params_seeds planted-programs \
            $(EXAMPLES:%=$(B)/%) $(B)/arq_demo_bug $(B)/diff_qemu $(B)/ctgrind

demo: $(EXAMPLES:%=$(B)/%) $(B)/arq_demo_bug
	@rc=0; for e in $(EXAMPLES); do \
	    echo "== demo: $$e"; \
	    B="$(B)" sh examples/$$e.demo.sh || { echo "demo $$e FAILED"; rc=1; }; \
	done; exit $$rc

# The tunnel tool as real processes on 127.0.0.1: relay killed mid-transfer,
# revocation by SIGHUP (tests/tunnel_process.sh).
tunnel-process: $(B)/alktunnel
	@B="$(B)" sh tests/tunnel_process.sh

# ---- fuzzing ----------------------------------------------------------------
# `make fuzz` builds every target for the engine; with TARGET=x it then
# starts a detached campaign on x.
TARGET  ?=
SECONDS ?= 600
ENGINE  ?=
T        = $(or $(TARGET),codec)
fuzz:
	@TARGET="$(T)" SECONDS_LIMIT="$(SECONDS)" ENGINE="$(ENGINE)" \
	    CLANG="$(CLANG)" FUZZ_DEFS="$(FUZZ_DEFS)" \
	    sh fuzz/campaign.sh $(if $(TARGET),start,build-all)

fuzz-status:
	@TARGET="$(T)" sh fuzz/campaign.sh status

fuzz-stop:
	@TARGET="$(T)" sh fuzz/campaign.sh stop

fuzz-merge: $(B)/replay_$(T)
	@TARGET="$(T)" CLANG="$(CLANG)" FUZZ_DEFS="$(FUZZ_DEFS)" \
	    sh fuzz/campaign.sh merge

# ---- differential tests against qemu ------------------------------------------
# Seeded iterations, each replayable alone from its printed seed; the gate
# runs a bounded number (DIFF_ITER, default 100).
ITER ?= 200
$(B)/diff_qemu: $(B)/asan/diff_qemu.o $(B)/asan/libalk.a
	$(CC) $(CFLAGS) $(SAN) $^ -o $@ $(LDFLAGS)

diff-qemu: $(B)/diff_qemu
	./$(B)/diff_qemu --iter $(ITER) --seed $(SEED)

# Commit, rebase (safe, unsafe, flatten) and a write burst over snapshot-
# shared clusters: the qcow2w tool against qemu-img on snapshot-bearing
# fixtures (tests/diff_qemu_jobs.h), JOBS_ITER seeded iterations.
JOBS_ITER ?= 100
diff-qemu-jobs: $(B)/diff_qemu $(B)/qcow2w
	./$(B)/diff_qemu --jobs $(B)/qcow2w --iter $(JOBS_ITER) --seed $(SEED)

# ---- soak ---------------------------------------------------------------------
# Every harness (or TARGET=) in seed mode on seeds no corpus file came from
# (SOAK_SEEDS, or SEED=), RUNS= runs a seed; without RUNS the gate's bounded
# amounts (tests/soak.sh). A failing input is saved under $(B)/soak/<target>/.
SOAK_SEEDS := 1001 2002 3003
soak: $(FUZZ_TARGETS:%=$(B)/replay_%)
	@B="$(B)" TARGETS="$(or $(TARGET),$(FUZZ_TARGETS))" \
	    SEEDS="$(if $(filter command line environment,$(origin SEED)),$(SEED),$(SOAK_SEEDS))" \
	    RUNS="$(if $(filter command line environment,$(origin RUNS)),$(RUNS))" \
	    sh tests/soak.sh

# ---- crash consistency (qcow2_crash harness) ----------------------------------
# crash-qemu: RUNS seeded power losses / I/O errors, every crashed image
# judged by qemu-img check (and check -r leaks); the gate runs 120.
# crash-soak: RUNS scenarios through the harness's own oracle, and how many
# distinct places the power went (operation, batch within it, fixture,
# cluster size, metadata growth).
RUNS ?= 10000
crash-qemu: $(B)/replay_qcow2_crash
	sh tests/crash_qemu.sh ./$(B)/replay_qcow2_crash $(SEED) $(RUNS)

# json-qemu: qcow2w info/check --output=json against qemu-img's on the
# images qemu made (corpus/qcow2_open/qemu-*): every common key equal.
json-qemu: $(B)/qcow2w
	python3 tests/json_qemu.py ./$(B)/qcow2w corpus/qcow2_open/qemu-*

# compress-qemu: qcow2w import -c against qemu-img convert -c, both ways
# (tests/compress_qemu.sh).
compress-qemu: $(B)/qcow2w
	sh tests/compress_qemu.sh ./$(B)/qcow2w

# measure-qemu: qcow2w measure against qemu-img measure (tests/measure_qemu.sh).
measure-qemu: $(B)/qcow2w
	sh tests/measure_qemu.sh ./$(B)/qcow2w

# map-qemu: qcow2w map against qemu-img map, JSON and human, byte for byte
# (tests/map_qemu.sh).
map-qemu: $(B)/qcow2w
	sh tests/map_qemu.sh ./$(B)/qcow2w

# amend-qemu: qcow2w amend -o compat= against qemu-img amend, both ways
# (tests/amend_qemu.sh).
amend-qemu: $(B)/qcow2w
	sh tests/amend_qemu.sh ./$(B)/qcow2w

# crash-qemu-jobs: commits and rebases cut by a power loss (qcow2_jobs in
# seed mode, a failing batch in every run), the files judged by qemu-img
# check (tests/crash_qemu_jobs.sh).
crash-qemu-jobs: $(B)/replay_qcow2_jobs
	sh tests/crash_qemu_jobs.sh ./$(B)/replay_qcow2_jobs $(SEED) $(RUNS)

crash-soak: $(B)/replay_qcow2_crash
	@rm -f $(B)/crash-points.txt
	QCOW2_CRASH_POINTS=$(B)/crash-points.txt ./$(B)/replay_qcow2_crash \
	    --seed $(SEED) --runs $(RUNS) --max-len 4096
	@sed 's/\[audited [0-9]*\] //' $(B)/crash-points.txt | sort -u \
	    > $(B)/crash-points-distinct.txt
	@echo "crash-soak: $$(wc -l < $(B)/crash-points.txt) scenarios," \
	    "$$(wc -l < $(B)/crash-points-distinct.txt) distinct crash points" \
	    "($$(grep -c 'power in' $(B)/crash-points.txt) inside an operation," \
	    "$$(grep -c ': .*error-' $(B)/crash-points.txt) with an injected I/O error;" \
	    "$$(grep -c ' block-growth' $(B)/crash-points.txt) grew refcount blocks," \
	    "$$(grep -c ' table-growth' $(B)/crash-points.txt) the refcount table," \
	    "$$(grep -c 'inside-table-growth' $(B)/crash-points.txt) ended inside table growth);" \
	    "ordering audit: $$(sed -n 's/.*\[audited \([0-9]*\)\].*/\1/p' \
	        $(B)/crash-points.txt | awk '{s += $$1} END {print s + 0}') crash states judged"

# ---- mutation testing -------------------------------------------------------
HEADER ?= alkcodec.h
COUNT  ?= 60
SEED   ?= 1
GATE   ?= fast
# HEADER=all: each of the four; GATE=replay: judged by the corpus replay
# alone; BASELINE=tests/mutants_baseline.txt fails on a drop in kill rate.
mutants:
	python3 tests/mutants.py --header $(HEADER) --count $(COUNT) \
	    --seed $(SEED) --gate $(GATE) $(if $(BASELINE),--baseline $(BASELINE)) \
	    $(if $(NO_SCHEMATA),--no-schemata) $(if $(FAMILIES),--families $(FAMILIES))

# ---- coverage ---------------------------------------------------------------
coverage:
	@B="$(B)" sh tests/coverage.sh $(HEADERS)

# ---- benchmarks -------------------------------------------------------------
$(B)/bench_%: tests/bench_%.c tests/bench_common.h $(HEADERS) examples/arq.h examples/arq_scenario.h | $(B)
	$(CC) $(CPPFLAGS) -O2 -g -DNDEBUG $(WARN) $< -o $@ $(LDFLAGS)

# bench_alktunnel compares alktunnel.h's JSON reader with yyjson when
# YYJSON_DIR names a yyjson checkout (make bench YYJSON_DIR=/tmp/yyjson);
# without it those figures print SKIPPED. yyjson.c is built -O2 by the same
# compiler but apart, without our warnings (its code is not ours to fix).
# The stamp holds the YYJSON_DIR the bench was built with, so switching it
# on or off rebuilds the bench.
ifneq ($(YYJSON_DIR),)
BENCH_YYJSON_DEFS = -DALK_HAVE_YYJSON -I$(YYJSON_DIR)/src
BENCH_YYJSON_OBJ  = $(B)/yyjson.o
$(B)/yyjson.o: $(YYJSON_DIR)/src/yyjson.c $(YYJSON_DIR)/src/yyjson.h \
               $(B)/bench_alktunnel.yyjson-dir | $(B)
	$(CC) $(CPPFLAGS) -O2 -g -DNDEBUG -w -c $< -o $@
endif
$(B)/bench_alktunnel.yyjson-dir: FORCE | $(B)
	@echo '$(YYJSON_DIR)' | cmp -s - $@ || echo '$(YYJSON_DIR)' > $@
$(B)/bench_alktunnel: tests/bench_alktunnel.c tests/bench_common.h alktunnel.h \
                      $(B)/bench_alktunnel.yyjson-dir $(BENCH_YYJSON_OBJ) | $(B)
	$(CC) $(CPPFLAGS) -O2 -g -DNDEBUG $(WARN) $(BENCH_YYJSON_DEFS) $< \
	    $(BENCH_YYJSON_OBJ) -o $@ $(LDFLAGS)
FORCE:

# The qcow2w bench times the CLI's import as a process, built -O2 too.
$(B)/bench_qcow2w_cli: examples/qcow2w.c qcow2w.h | $(B)
	$(CC) $(CPPFLAGS) -O2 -g -DNDEBUG $(WARN) $< -o $@ $(LDFLAGS)
$(B)/bench_qcow2w: $(B)/bench_qcow2w_cli

# tests/bench_tunnel.sh: the alktunnel tool's processes against socat and
# ssh -L with the same hops (SKIPPED rows when they are not installed); the
# tool built -O2 like the other benches (socat is Debian's optimized build).
$(B)/bench_alktunnel_cli: examples/alktunnel.c alktunnel.h | $(B)
	$(CC) $(CPPFLAGS) -O2 -g -DNDEBUG $(WARN) $< -o $@ $(LDFLAGS)

# The AEAD bench compares with libsodium and OpenSSL when their development
# packages are here (comparison only; SKIPPED rows otherwise).
SODIUM_OK = $(shell printf '\043include <sodium.h>\nint main(void){return sodium_init() < 0;}\n' | \
               $(CC) -x c - -lsodium -o /dev/null 2>/dev/null && echo 1)
OPENSSL_OK = $(shell printf '\043include <openssl/evp.h>\nint main(void){return EVP_chacha20_poly1305() == 0;}\n' | \
               $(CC) -x c - -lcrypto -o /dev/null 2>/dev/null && echo 1)
$(B)/bench_aead: tests/bench_aead.c tests/bench_common.h alktunnel.h | $(B)
	$(CC) $(CPPFLAGS) -O2 -g -DNDEBUG $(WARN) $(if $(SODIUM_OK),-DALK_HAVE_SODIUM) \
	    $(if $(OPENSSL_OK),-DALK_HAVE_OPENSSL) $< -o $@ $(LDFLAGS) \
	    $(if $(SODIUM_OK),-lsodium) $(if $(OPENSSL_OK),-lcrypto)

bench: $(BENCHES:%=$(B)/bench_%) $(B)/bench_alktunnel_cli
	@missed=""; for b in $(BENCHES); do \
	    B=$(B) ./$(B)/bench_$$b || missed="$$missed $$b"; done; \
	B=$(B) ALKTUNNEL=$(B)/bench_alktunnel_cli sh tests/bench_tunnel.sh || \
	    missed="$$missed tunnel"; \
	if [ -n "$$missed" ]; then echo "bench: targets missed in:$$missed"; exit 1; fi

# One bench program, this checkout against a git revision, run in turn:
# make bench-vs REV=<rev> [BENCH=session] [ROUNDS=5] (tests/bench_vs.py).
bench-vs: | $(B)
	B=$(B) CC="$(CC)" REV="$(REV)" BENCH="$(BENCH)" ROUNDS="$(ROUNDS)" \
	    python3 tests/bench_vs.py

# ---- install ----------------------------------------------------------------
install:
	mkdir -p $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig
	cp $(HEADERS) $(DESTDIR)$(PREFIX)/include/
	sed -e 's|@PREFIX@|$(PREFIX)|' alk.pc.in \
	    > $(DESTDIR)$(PREFIX)/lib/pkgconfig/alk.pc

# An outside program compiled against the installed header via pkg-config.
install-check:
	@rm -rf $(B)/install-check && mkdir -p $(B)/install-check
	@$(MAKE) -s install PREFIX=$(CURDIR)/$(B)/install-check/prefix >/dev/null
	@printf '%s\n' '#define ALKCODEC_IMPLEMENTATION' '#include <alkcodec.h>' \
	    '#include <stdio.h>' 'int main(void) {' \
	    '    unsigned char f[8]; alkc_datagram dg; alkc_decoder d;' \
	    '    static unsigned char mem[ALKC_DECODER_MEM_SIZE(16)];' \
	    '    alkc_decoder_config cfg = {16};' \
	    '    if (alkc_encode(f, sizeof f, "hi", 2, 16, NULL) != 4) return 1;' \
	    '    alkc_decoder_init(&d, &cfg, mem, sizeof mem);' \
	    '    alkc_decoder_feed(&d, f, 4);' \
	    '    if (alkc_decoder_next(&d, &dg) != ALKC_OK || dg.len != 2) return 1;' \
	    '    puts("installed alkcodec.h works via pkg-config"); return 0; }' \
	    > $(B)/install-check/outside.c
	@cd $(B)/install-check && $(CC) -std=c99 -Wall -Wextra -Werror \
	    $$(PKG_CONFIG_PATH=$(CURDIR)/$(B)/install-check/prefix/lib/pkgconfig \
	       pkg-config --cflags alk) outside.c -o outside && ./outside

uninstall:
	rm -f $(HEADERS:%=$(DESTDIR)$(PREFIX)/include/%) \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig/alk.pc

# ---- OSS-Fuzz / ClusterFuzzLite contract ------------------------------------
oss-fuzz-check:
	@B="$(B)" CLANG="$(CLANG)" CLANGXX="$(CLANGXX)" \
	    sh tests/oss_fuzz_check.sh $(FUZZ_TARGETS)

# ---- firmware ---------------------------------------------------------------
ARM_CC ?= arm-none-eabi-gcc
firmware-check:
	@ARM_CC="$(ARM_CC)" B="$(B)" sh tests/firmware_check.sh

# ---- constant time, valgrind ------------------------------------------------
# Constant time, under valgrind: the secrets of every primitive marked
# undefined, a branch or index on them reported (tests/ctgrind.c), at -O2
# as users build it.
# as users build it. (That it sees an early-exit tag comparison is a
# planted-bug drill: tests/planted/alktunnel-tag-compare-early-exit.patch.)
$(B)/ctgrind: tests/ctgrind.c | $(B)
	$(CC) $(CPPFLAGS) -O2 -g $(WARN) -I. $(DEPFLAGS) $< -o $@ $(LDFLAGS)

ctgrind: $(B)/ctgrind
	@valgrind -q --log-file=$(B)/ctgrind.vg ./$(B)/ctgrind

valgrind: | $(B)
	@rc=0; for t in $(UNIT_TESTS); do \
	    $(CC) $(CPPFLAGS) -O1 -g $(WARN) $(GREATEST_INC) -I. tests/test_$$t.c \
	        -o $(B)/vg_$$t $(LDFLAGS) && \
	    ALK_UNDER_VALGRIND=1 valgrind -q --error-exitcode=99 \
	        --leak-check=full ./$(B)/vg_$$t || rc=1; \
	done; exit $$rc

# The Debian packages the gate uses, from the one list CI installs too.
deps:
	sh .ci/install-deps

clean:
	rm -rf $(B)

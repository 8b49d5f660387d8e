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
FUZZ_TARGETS := codec sim_core sim_arq params qcow2_write qcow2_open qcow2_growth qcow2_crash \
                inflate session pump roles tunnel_sim
UNIT_TESTS   := $(patsubst tests/test_%.c,%,$(wildcard tests/test_*.c))
EXAMPLES     := $(patsubst examples/%.c,%,$(wildcard examples/*.c))
BENCHES      := $(patsubst tests/bench_%.c,%,$(wildcard tests/bench_*.c))

# Fuzz engine builds (make fuzz) amplify the codec attack to 64 KiB instead
# of 16 MiB so that exec/s stays high; the replay gate uses the full size.
FUZZ_DEFS = -DCODEC_AMPLIFY_BYTES=65536

.PHONY: all demo test gate fast-gate unit replay replay-runs conformance compile-matrix seeds diff-qemu \
        crash-qemu crash-soak \
        seeds-check fuzz fuzz-status fuzz-stop fuzz-merge \
        mutants coverage bench install install-check uninstall oss-fuzz-check \
        firmware-check valgrind deps clean help planted-bug-check tunnel-process \
        ctgrind crypto-portable FORCE

all: $(UNIT_TESTS:%=$(B)/test_%) $(FUZZ_TARGETS:%=$(B)/replay_%) \
     $(REPLAY_PORTABLE:%=$(B)/replay_%) $(EXAMPLES:%=$(B)/%)

help:
	@echo "alk targets:"
	@echo "  make demo            build every example and run its demo"
	@echo "  make test            compile matrix, unit tests (ASan+UBSan), replay, JSON"
	@echo "                       conformance, seed"
	@echo "                       stability, planted bug, demo, install, OSS-Fuzz and"
	@echo "                       firmware checks; ends with 'N passed, N failed'"
	@echo "  make unit            unit tests only (GREATEST_DIR=dir: real greatest.h)"
	@echo "  make replay          every corpus/<target>/ file through its harness"
	@echo "  make conformance     tests/json_conformance/ vs the reference and alktunnel.h"
	@echo "  make diff-qemu [ITER=n] [SEED=s]   qcow2w.h against qemu-img / qemu-io"
	@echo "  make crash-soak [RUNS=n] [SEED=s]  qcow2w.h power-loss scenarios, distinct points"
	@echo "  make crash-qemu [RUNS=n] [SEED=s]  crashed images judged by qemu-img check"
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
	@echo "  make planted-bug-check  corpus/sim_arq must catch the ARQ planted bug, corpus/qcow2_crash qcow2w.h's planted ordering bugs"
	@echo "  make deps            install the Debian packages the tests use"
	@echo "  Engines: TARGETS=$(FUZZ_TARGETS)  HEADERS=$(HEADERS)"

$(B):
	@mkdir -p $(B)

# ---- unit tests -------------------------------------------------------------
# Each unit test and harness depends on the header it tests (tests/test_X.c
# tests X.h; replay deps are listed per target below), so a change to one
# header - or one mutant of it - rebuilds only what uses it.
.SECONDEXPANSION:
# A test split into parts includes tests/test_<header>_*.h.
$(B)/test_%: tests/test_%.c $$(wildcard $$*.h) $$(wildcard tests/test_$$*_*.h) \
             tests/alk_test.h alksim.h $(wildcard tests/greatest.h) | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) $(GREATEST_INC) $< -o $@ \
	    $(LDFLAGS)

# The same tests compiled as C++ prove the headers are usable from C++.
$(B)/test_%_cxx: tests/test_%.c $$(wildcard $$*.h) $$(wildcard tests/test_$$*_*.h) \
                 tests/alk_test.h alksim.h $(wildcard tests/greatest.h) | $(B)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -O1 -g $(WARNXX) $(SAN) $(GREATEST_INC) \
	    -x c++ $< -x none -o $@ $(LDFLAGS)

$(B)/test_qcow2w $(B)/test_qcow2w_cxx: fuzz/qcow2_harness.h fuzz/alk_check.h alksim.h
$(B)/test_alktunnel $(B)/test_alktunnel_cxx: fuzz/tunnel_world.h fuzz/alk_check.h \
                                          fuzz/alkt_equal.h \
                                          tests/aead_ref.h

unit: $(UNIT_TESTS:%=$(B)/test_%) $(UNIT_TESTS:%=$(B)/test_%_cxx)
	@rc=0; for t in $(UNIT_TESTS); do \
	    for v in "" _cxx; do \
	        echo "== $(B)/test_$$t$$v"; \
	        ./$(B)/test_$$t$$v || rc=1; \
	    done; \
	done; exit $$rc

# ---- replay gate ------------------------------------------------------------
$(B)/replay_%: fuzz/%.c tests/replay_main.c alksim.h fuzz/alk_check.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) -DALK_TARGET='"replay_$*"' \
	    fuzz/$*.c tests/replay_main.c -o $@ $(LDFLAGS)

$(B)/replay_codec: alkcodec.h fuzz/codec_layout.h
$(B)/replay_sim_core: alksim.h
$(B)/replay_sim_arq: alksim.h examples/arq.h examples/arq_scenario.h
$(B)/replay_params: alktunnel.h fuzz/json_ref.h fuzz/alkt_equal.h fuzz/addr_ref.h
$(B)/replay_qcow2_write: qcow2w.h alksim.h fuzz/qcow2_harness.h
$(B)/replay_qcow2_growth: qcow2w.h alksim.h fuzz/qcow2_harness.h
$(B)/replay_qcow2_open: qcow2w.h fuzz/qcow2_harness.h
$(B)/replay_qcow2_crash: qcow2w.h alksim.h fuzz/qcow2_harness.h
# The inflater is checked against zlib whenever zlib.h and -lz are there
# (Debian: zlib1g-dev); without them only its own properties are checked.
ZLIB_OK := $(shell printf '\043include <zlib.h>\nint main(void){return zlibVersion()[0] == 0;}\n' | \
             $(CC) -x c - -lz -o /dev/null 2>/dev/null && echo 1)
$(B)/replay_inflate: qcow2w.h
$(B)/replay_session: alktunnel.h alksim.h tests/aead_ref.h fuzz/sha256_ref.h fuzz/x25519_ref.h
$(B)/replay_session_portable: fuzz/session.c tests/replay_main.c alktunnel.h alksim.h \
                              tests/aead_ref.h fuzz/sha256_ref.h fuzz/x25519_ref.h fuzz/alk_check.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) -DALKTUNNEL_NO_INT128 -DALKTUNNEL_NO_SIMD \
	    -DALKTUNNEL_NO_SHA_NI -DSS_PRIMITIVES_ONLY -DALK_TARGET='"replay_session_portable"' \
	    fuzz/session.c tests/replay_main.c -o $@ $(LDFLAGS)
# The params corpus once more with ALKTUNNEL_NO_SIMD: the JSON reader's
# word-at-a-time string scan and the host-name byte rule, not SSE2 and words.
$(B)/replay_params_portable: fuzz/params.c tests/replay_main.c alktunnel.h \
                             fuzz/json_ref.h fuzz/alkt_equal.h fuzz/addr_ref.h \
                             fuzz/alk_check.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) -DALKTUNNEL_NO_SIMD \
	    -DALK_TARGET='"replay_params_portable"' fuzz/params.c tests/replay_main.c \
	    -o $@ $(LDFLAGS)
$(B)/replay_pump: alktunnel.h alksim.h
$(B)/replay_roles: alktunnel.h alksim.h alkcodec.h fuzz/tunnel_world.h
$(B)/replay_tunnel_sim: alktunnel.h alksim.h fuzz/tunnel_world.h fuzz/tunnel_sim.h
# The gate's world asks every question its steps skip and checks the answer
# is the one it had (TW_CHECK_QUIET in fuzz/tunnel_world.h: no event, output
# or deadline appears in a role nobody called); the campaigns skip them.
$(B)/replay_roles $(B)/replay_tunnel_sim: override CPPFLAGS += -DTW_CHECK_QUIET
# override: tests/mutants.py sets CPPFLAGS on the command line, which would
# otherwise drop the define and judge the inflater without its zlib oracle
$(B)/replay_inflate: override CPPFLAGS += $(if $(ZLIB_OK),-DALK_HAVE_ZLIB)
$(B)/replay_inflate: LDFLAGS += $(if $(ZLIB_OK),-lz)

# The JSON conformance collection also goes through the params oracle.
# Targets run REPLAY_JOBS at a time (the slowest first), each into its own
# log; the logs are printed in a fixed order once all have ended.
REPLAY_JOBS  ?= $(shell nproc 2>/dev/null || echo 2)
REPLAY_SLOW  := qcow2_crash qcow2_write codec qcow2_growth
REPLAY_ORDER := $(foreach t,$(REPLAY_SLOW),$(filter $(t),$(FUZZ_TARGETS))) \
                $(filter-out $(REPLAY_SLOW),$(FUZZ_TARGETS))
# The session's corpus runs a second time through the portable primitives
# (no SIMD, no SHA-NI, no 128-bit products; the primitives' checks only):
# a mutant of the paths this CPU does not take is judged by the replay too,
# not only by crypto-portable.
REPLAY_PORTABLE := $(if $(filter session,$(FUZZ_TARGETS)),session_portable) \
                   $(if $(filter params,$(FUZZ_TARGETS)),params_portable)
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
	$(if $(ZLIB_OK),,echo "replay_inflate: the comparison with zlib" \
	    "SKIPPED (no zlib.h or -lz: apt-get install zlib1g-dev)";) exit $$rc

# ---- JSON conformance -------------------------------------------------------
# tests/json_conformance/: y_ must be accepted, n_ rejected, i_accept_/
# i_reject_ are the documented implementation choices. Checked against the
# reference validator (fuzz/json_ref.h) and against alktunnel.h's reader.
$(B)/json_conformance: tests/json_conformance_main.c fuzz/json_ref.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) $< -o $@ $(LDFLAGS)
$(B)/json_conformance_impl: tests/json_conformance_main.c fuzz/json_ref.h \
                            alktunnel.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) -DALKT_CONFORMANCE_IMPL $< \
	    -o $@ $(LDFLAGS)

conformance: $(B)/json_conformance $(B)/json_conformance_impl
	@rc=0; ./$(B)/json_conformance tests/json_conformance | \
	    sed 's/^conformance:/conformance (reference):/' || rc=1; \
	./$(B)/json_conformance_impl tests/json_conformance --impl | \
	    sed 's/^conformance:/conformance (alktunnel.h):/' || rc=1; \
	exit $$rc

fast-gate: unit replay $(if $(filter alktunnel,$(UNIT_TESTS)),crypto-portable)

# ---- seeds ------------------------------------------------------------------
# corpus/codec/ comes from a hand-written generator; the simulation and qcow2
# targets'
# generated seeds are seed-mode inputs written by their replay driver. Both
# are byte-stable: seeds-check regenerates them and compares.
SEEDED_TARGETS := sim_core sim_arq qcow2_write qcow2_growth qcow2_crash session pump roles \
                  tunnel_sim
SEED_ARGS = --seed 1 --runs 32 --max-len 2048

$(B)/codec_seeds: fuzz/codec_seeds.c fuzz/codec_layout.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $< -o $@ $(LDFLAGS)
$(B)/params_seeds: fuzz/params_seeds.c | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $< -o $@ $(LDFLAGS)

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
	@rc=0; for f in $(B)/seeds-check/*/*; do \
	    t=$${f#$(B)/seeds-check/}; \
	    cmp -s "$$f" "corpus/$$t" || \
	        { echo "seed differs or missing: corpus/$$t"; rc=1; }; \
	done; exit $$rc

# ---- the whole gate ---------------------------------------------------------
test gate:
	@MAKE="$(MAKE)" B="$(B)" GREATEST_DIR="$(GREATEST_DIR)" \
	    sh tests/gate.sh

compile-matrix:
	@CC="$(CC)" CLANG="$(CLANG)" CXX="$(CXX)" CLANGXX="$(CLANGXX)" B="$(B)" \
	    sh tests/compile_matrix.sh $(HEADERS)

# ---- examples ---------------------------------------------------------------
$(B)/%: examples/%.c $(HEADERS) | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $< -o $@ $(LDFLAGS)

$(B)/arq_demo: examples/arq.h examples/arq_scenario.h
# The worked example with its planted bug, for the demo and the gate.
$(B)/arq_demo_bug: examples/arq_demo.c examples/arq.h examples/arq_scenario.h \
                   alksim.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DARQ_PLANTED_BUG $< -o $@ $(LDFLAGS)

# The committed corpus must catch the planted bug: replay with the bug on
# has to fail (the finding-* seed), replay with it off passes (make replay).
$(B)/replay_sim_arq_bug: fuzz/sim_arq.c tests/replay_main.c examples/arq.h \
                         examples/arq_scenario.h alksim.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) -DARQ_PLANTED_BUG \
	    -DALK_TARGET='"replay_sim_arq_bug"' fuzz/sim_arq.c \
	    tests/replay_main.c -o $@ $(LDFLAGS)

# The same for qcow2w.h's crash ordering: each planted ordering bug
# (QCOW2W_ORDER_MUTANT, see qcow2w.h) must fail corpus/qcow2_crash - the
# harness's ordering audit is what catches them. No sanitizers: the
# oracle aborts on its own, and the build is quick.
ORDER_MUTANTS := 1 3 7
$(B)/replay_qcow2_crash_order%: fuzz/qcow2_crash.c tests/replay_main.c \
                                qcow2w.h alksim.h fuzz/qcow2_harness.h | $(B)
	$(CC) $(CPPFLAGS) -O1 -g -std=c99 -DQCOW2W_ORDER_MUTANT=$* \
	    -DALK_TARGET='"replay_qcow2_crash_order$*"' fuzz/qcow2_crash.c \
	    tests/replay_main.c -o $@ $(LDFLAGS)

# And for alktunnel.h's session: each ALKTUNNEL_PLANTED_BUG (a duplicate
# open destroys the live channel, poll_timeout ignores queued output, EOF
# as an empty data frame, the window not enforced, a resume resends an
# acknowledged frame, a resume keeps the old keys and counts nonces from 0
# again) must fail corpus/session.
SESSION_BUGS := 1 2 3 4 5 6
# The AEAD's planted bugs (the tag compared with an early exit, plaintext
# written before the tag is checked) must fail the crypto unit suites.
CRYPTO_BUGS := 7 8
$(B)/replay_session_bug%: fuzz/session.c tests/replay_main.c alktunnel.h \
                          alksim.h fuzz/alk_check.h | $(B)
	$(CC) $(CPPFLAGS) -O1 -g -std=c99 -DALKTUNNEL_PLANTED_BUG=$* \
	    -DALK_TARGET='"replay_session_bug$*"' fuzz/session.c \
	    tests/replay_main.c -o $@ $(LDFLAGS)

# The whole-tunnel simulation must catch the session's bugs 1-5 and the
# roles' bugs 9-11 (revocation not applied to open channels, relays never
# tried after the direct path fails, offers that never expire).
SIM_BUGS := 1 2 3 4 5 9 10 11
$(B)/replay_tunnel_sim_bug%: fuzz/tunnel_sim.c fuzz/tunnel_sim.h fuzz/tunnel_world.h \
                             tests/replay_main.c alktunnel.h alksim.h fuzz/alk_check.h | $(B)
	$(CC) $(CPPFLAGS) -O1 -g -std=c99 -DALKTUNNEL_PLANTED_BUG=$* \
	    -DALK_TARGET='"replay_tunnel_sim_bug$*"' fuzz/tunnel_sim.c \
	    tests/replay_main.c -o $@ $(LDFLAGS)

$(B)/test_alktunnel_bug%: tests/test_alktunnel.c alktunnel.h \
                          $(wildcard tests/test_alktunnel_*.h) tests/aead_ref.h | $(B)
	$(CC) $(CPPFLAGS) -O1 -g -std=c99 -DALKTUNNEL_PLANTED_BUG=$* \
	    $(GREATEST_INC) $< -o $@ $(LDFLAGS)

planted-bug-check: $(SIM_BUGS:%=$(B)/replay_tunnel_sim_bug%) \
                   $(B)/replay_sim_arq_bug \
                   $(ORDER_MUTANTS:%=$(B)/replay_qcow2_crash_order%) \
                   $(SESSION_BUGS:%=$(B)/replay_session_bug%) \
                   $(CRYPTO_BUGS:%=$(B)/test_alktunnel_bug%)
	@for m in $(SIM_BUGS); do \
	    if ./$(B)/replay_tunnel_sim_bug$$m -q corpus/tunnel_sim \
	        > $(B)/planted-sim.log 2>&1; \
	    then echo "corpus/tunnel_sim does not catch planted bug $$m"; \
	        exit 1; \
	    else echo "planted bug $$m caught by corpus/tunnel_sim:" \
	        "$$(grep -c '^FAIL' $(B)/planted-sim.log) failing inputs"; \
	    fi; \
	done
	@if ./$(B)/replay_sim_arq_bug -q corpus/sim_arq > $(B)/planted.log 2>&1; \
	then echo "corpus/sim_arq does not catch the planted bug"; exit 1; \
	else grep -c '^FAIL' $(B)/planted.log | \
	    sed 's/^/planted bug caught by corpus\/sim_arq: failing inputs: /'; \
	fi
	@for m in $(ORDER_MUTANTS); do \
	    if ./$(B)/replay_qcow2_crash_order$$m -q corpus/qcow2_crash \
	        > $(B)/planted-order.log 2>&1; \
	    then echo "corpus/qcow2_crash does not catch ordering bug $$m"; \
	        exit 1; \
	    else echo "ordering bug $$m caught by corpus/qcow2_crash:" \
	        "$$(grep -c '^FAIL' $(B)/planted-order.log) failing inputs"; \
	    fi; \
	done
	@for m in $(SESSION_BUGS); do \
	    if ./$(B)/replay_session_bug$$m -q corpus/session \
	        > $(B)/planted-session.log 2>&1; \
	    then echo "corpus/session does not catch session bug $$m"; \
	        exit 1; \
	    else echo "session bug $$m caught by corpus/session:" \
	        "$$(grep -c '^FAIL' $(B)/planted-session.log) failing inputs"; \
	    fi; \
	done
	@for m in $(CRYPTO_BUGS); do \
	    if ./$(B)/test_alktunnel_bug$$m -s alkt_crypto_suite \
	        > $(B)/planted-crypto.log 2>&1 && \
	       ./$(B)/test_alktunnel_bug$$m -s alkt_sealed_suite \
	        >> $(B)/planted-crypto.log 2>&1; \
	    then echo "the crypto suites do not catch AEAD bug $$m"; exit 1; \
	    else echo "AEAD bug $$m caught by the crypto suites:" \
	        "$$(grep -c '^FAIL' $(B)/planted-crypto.log) failing tests"; \
	    fi; \
	done

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
$(B)/diff_qemu: tests/diff_qemu.c qcow2w.h alksim.h fuzz/qcow2_harness.h \
                fuzz/alk_check.h | $(B)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(SAN) $< -o $@ $(LDFLAGS)

diff-qemu: $(B)/diff_qemu
	./$(B)/diff_qemu --iter $(ITER) --seed $(SEED)

# ---- crash consistency (qcow2_crash harness) ----------------------------------
# crash-qemu: RUNS seeded power losses / I/O errors, every crashed image
# judged by qemu-img check (and check -r leaks); the gate runs 120.
# crash-soak: RUNS scenarios through the harness's own oracle, and how many
# distinct places the power went (operation, batch within it, fixture,
# cluster size, metadata growth).
RUNS ?= 10000
crash-qemu: $(B)/replay_qcow2_crash
	sh tests/crash_qemu.sh ./$(B)/replay_qcow2_crash $(SEED) $(RUNS)

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
	    $(if $(NO_SCHEMATA),--no-schemata)

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

bench: $(BENCHES:%=$(B)/bench_%) $(B)/bench_alktunnel_cli
	@missed=""; for b in $(BENCHES); do \
	    B=$(B) ./$(B)/bench_$$b || missed="$$missed $$b"; done; \
	B=$(B) ALKTUNNEL=$(B)/bench_alktunnel_cli sh tests/bench_tunnel.sh || \
	    missed="$$missed tunnel"; \
	if [ -n "$$missed" ]; then echo "bench: targets missed in:$$missed"; exit 1; fi

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

# ---- valgrind ---------------------------------------------------------------
# The crypto and encrypted-session suites built the portable way: the
# ten-limb X25519 field (no 128-bit products), ChaCha20 and SHA-256
# without SIMD - what a 32-bit target or another compiler runs.
$(B)/test_alktunnel_portable: tests/test_alktunnel.c alktunnel.h \
                              $(wildcard tests/test_alktunnel_*.h) tests/aead_ref.h | $(B)
	$(CC) $(CPPFLAGS) -O1 -g $(WARN) $(SAN) -DALKTUNNEL_NO_INT128 \
	    -DALKTUNNEL_NO_SIMD -DALKTUNNEL_NO_SHA_NI $(GREATEST_INC) $< -o $@ $(LDFLAGS)

crypto-portable: $(B)/test_alktunnel_portable
	@./$(B)/test_alktunnel_portable -s alkt_crypto_suite && \
	    ./$(B)/test_alktunnel_portable -s alkt_sealed_suite

# Constant time, under valgrind: the secrets of every primitive marked
# undefined, a branch or index on them reported (tests/ctgrind.c), at -O2
# as users build it.
$(B)/ctgrind: tests/ctgrind.c alktunnel.h | $(B)
	$(CC) $(CPPFLAGS) -O2 -g $(WARN) $< -o $@ $(LDFLAGS)
$(B)/ctgrind_bug7: tests/ctgrind.c alktunnel.h | $(B)
	$(CC) $(CPPFLAGS) -O2 -g -std=c99 -DALKTUNNEL_PLANTED_BUG=7 $< -o $@ $(LDFLAGS)

ctgrind: $(B)/ctgrind $(B)/ctgrind_bug7
	@valgrind -q --log-file=$(B)/ctgrind.vg ./$(B)/ctgrind
	@if valgrind -q --log-file=$(B)/ctgrind_bug7.vg ./$(B)/ctgrind_bug7 \
	        > $(B)/ctgrind_bug7.log; \
	then echo "ctgrind does not see the early-exit tag compare (bug 7)"; exit 1; \
	else echo "planted early-exit tag compare: $$(grep -c '^FAIL' $(B)/ctgrind_bug7.log) checks fail, as they must"; fi

valgrind: | $(B)
	@rc=0; for t in $(UNIT_TESTS); do \
	    $(CC) $(CPPFLAGS) -O1 -g $(WARN) $(GREATEST_INC) tests/test_$$t.c \
	        -o $(B)/vg_$$t $(LDFLAGS) && \
	    ALK_UNDER_VALGRIND=1 valgrind -q --error-exitcode=99 \
	        --leak-check=full ./$(B)/vg_$$t || rc=1; \
	done; exit $$rc

deps:
	apt-get install -y clang lcov gcc-arm-none-eabi libclang-rt-14-dev \
	    valgrind zip pkg-config python3 qemu-utils zlib1g-dev

clean:
	rm -rf $(B)

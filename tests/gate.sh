#!/bin/sh
# gate.sh - `make test`: every stage of the gate, one summary line at the end.
#
# First every program the stages run is built, $(nproc) compiles at a time
# (make gate-build); then the stages run in turn, each even when an earlier
# one failed, so one run reports everything. Each stage prints its output
# and its wall time when it ends, and a line every 30 s while it runs. A
# stage's counts are read from its output (greatest's "Pass: P, fail: F,
# skip: S." line, or "... P passed, F failed" lines: the replay driver, the
# compile matrix, the drills, the checks); a stage that fails without
# printing counts - it did not build, it crashed - counts as one failure,
# and a stage whose exit status disagrees with its counts counts one more.
# A stage may print a "gate: ..." line saying what it judged (20 planted
# bugs, 120 crashed images); the summary shows it beside the counts.
# A stage that cannot run here (a tool missing) is SKIPPED, and the summary
# says which and why. The last line is "N passed, N failed"; the exit status
# is 1 if anything failed.
set -u
MAKE=${MAKE:-make}
B=${B:-build}
GREATEST_DIR=${GREATEST_DIR:-tests}
jobs=$(nproc 2>/dev/null || echo 2)
mkdir -p "$B"
log="$B/gate.log"
: > "$log"
total_pass=0
total_fail=0
failed_stages=""
skipped=""
gate_t0=$(date +%s)
# What make test must leave in the checkout: what was there before it.
git_before=""
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git_before=$(git status --porcelain --untracked-files=all 2>/dev/null)
    in_git=1
else
    in_git=0
fi

# stage NAME RULE COMMAND... - RULE picks the counting rule.
stage() {
    name=$1; rule=$2; shift 2
    out="$B/gate-$name.out"
    echo "=== $name: $*"
    t0=$(date +%s)
    "$@" > "$out" 2>&1 &
    pid=$!
    # a line every 30 s while it runs (the last line it printed)
    ( n=0; while kill -0 "$pid" 2>/dev/null; do
          sleep 1; n=$((n + 1))
          if [ $((n % 30)) -eq 0 ] && kill -0 "$pid" 2>/dev/null; then
              last=$(tail -n 1 "$out" 2>/dev/null | cut -c1-100)
              [ -n "$last" ] || last="$(find "$B" -type f -newer "$out" | wc -l) files written under $B/ so far"
              echo "... $name: running for ${n} s: $last"
          fi
      done ) &
    ticker=$!
    wait "$pid"
    rc=$?
    kill "$ticker" 2>/dev/null; wait "$ticker" 2>/dev/null
    secs=$(( $(date +%s) - t0 ))
    cat "$out"
    case $rule in
    greatest)
        p=$(sed -n 's/^Pass: \([0-9]*\), fail: \([0-9]*\), skip: [0-9]*\.$/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
        f=$(sed -n 's/^Pass: \([0-9]*\), fail: \([0-9]*\), skip: [0-9]*\.$/\2/p' "$out" | awk '{s+=$1} END {print s+0}')
        seen=$(grep -c '^Pass: [0-9]*, fail: ' "$out") ;;
    counts)
        p=$(sed -n 's/.* \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\1/p' "$out" | awk '{s+=$1} END {print s+0}')
        f=$(sed -n 's/.* \([0-9][0-9]*\) passed, \([0-9][0-9]*\) failed.*/\2/p' "$out" | awk '{s+=$1} END {print s+0}')
        seen=$(grep -c ' [0-9][0-9]* passed, [0-9][0-9]* failed' "$out") ;;
    single)
        seen=1
        if [ $rc -eq 0 ]; then p=1; f=0; else p=0; f=1; fi ;;
    esac
    if [ "$seen" -eq 0 ]; then
        f=$((f + 1))
        echo "!!! $name: printed no counts (exit $rc)"
    elif [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        echo "!!! $name: exit $rc although no test reported a failure"
    fi
    echo "--- $name: $p passed, $f failed ($secs s)"
    # the summary's line: what was judged, in the stage's own words (its
    # "gate: " line)
    what=$(sed -n 's/^gate: //p' "$out" | tail -n 1)
    printf '%-16s %5s passed %3s failed %4s s  %s\n' "$name" "$p" "$f" "$secs" "$what" >> "$log"
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    [ "$f" -eq 0 ] || failed_stages="$failed_stages $name"
}

# skip NAME WHY - a stage that cannot run here, said loudly and summed up.
skip() {
    echo "!!! SKIPPED $1: $2"
    printf '%-16s SKIPPED: %s\n' "$1" "$2" >> "$log"
    skipped="$skipped $1"
}

have() { command -v "$1" >/dev/null 2>&1; }

stage build single $MAKE -s -k -j"$jobs" gate-build B="$B" GREATEST_DIR="$GREATEST_DIR"
stage compile-matrix counts $MAKE -s compile-matrix B="$B"
stage unit greatest $MAKE -s unit B="$B" GREATEST_DIR="$GREATEST_DIR"
stage crypto-portable greatest $MAKE -s crypto-portable B="$B" GREATEST_DIR="$GREATEST_DIR"
stage replay counts $MAKE -s replay B="$B"
stage soak counts $MAKE -s soak B="$B"
stage conformance counts $MAKE -s conformance B="$B"
stage seeds-stable single $MAKE -s seeds-check B="$B"
stage planted-bug counts $MAKE -s planted-bug-check B="$B"
stage demo single $MAKE -s demo B="$B"
stage tunnel-process counts $MAKE -s tunnel-process B="$B"
stage install single $MAKE -s install-check B="$B"
if have "${CLANG:-clang}"; then
    stage oss-fuzz counts $MAKE -s oss-fuzz-check B="$B"
else
    skip oss-fuzz "${CLANG:-clang} is not installed (apt-get install clang): the ClusterFuzzLite build was NOT checked"
fi
# qcow2w.h against qemu: a bounded seeded run (make diff-qemu for more).
if have qemu-img && have qemu-io; then
    stage differential counts $MAKE -s diff-qemu B="$B" ITER="${DIFF_ITER:-100}" SEED=1
    stage differential-jobs counts $MAKE -s diff-qemu-jobs B="$B" JOBS_ITER="${JOBS_ITER:-60}" SEED=1
    stage crash-qemu counts $MAKE -s crash-qemu B="$B" RUNS="${CRASH_RUNS:-120}" SEED=1
    if have python3; then
        stage json-qemu counts $MAKE -s json-qemu B="$B"
    else
        skip json-qemu "python3 is not installed: qcow2w's JSON was NOT compared with qemu-img's"
    fi
    stage compress-qemu counts $MAKE -s compress-qemu B="$B"
    stage measure-qemu counts $MAKE -s measure-qemu B="$B"
    stage map-qemu counts $MAKE -s map-qemu B="$B"
    stage amend-qemu counts $MAKE -s amend-qemu B="$B"
    stage crash-qemu-jobs counts $MAKE -s crash-qemu-jobs B="$B" RUNS="${CRASH_JOBS_RUNS:-120}" SEED=1
else
    skip differential "qemu-img / qemu-io are not installed (apt-get install qemu-utils): qcow2w.h was NOT checked against qemu"
    skip crash-qemu "qemu-img is not installed: crashed images were NOT judged by qemu"
fi
if have valgrind; then
    stage ctgrind counts $MAKE -s ctgrind B="$B"
else
    skip ctgrind "valgrind is not installed (apt-get install valgrind): constant time was NOT checked"
fi
if have "${ARM_CC:-arm-none-eabi-gcc}"; then
    stage firmware single $MAKE -s firmware-check B="$B"
else
    skip firmware "${ARM_CC:-arm-none-eabi-gcc} is not installed (apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi)"
fi
# Nothing the gate ran may have written into the checkout.
if [ "$in_git" -eq 1 ]; then
    checkout_clean() {
        now=$(git status --porcelain --untracked-files=all 2>/dev/null)
        if [ "$now" = "$git_before" ]; then
            echo "checkout: git status unchanged by make test; 1 passed, 0 failed"
        else
            echo "checkout: make test changed the checkout:"
            printf '%s\n' "$now" | grep -vxF -e "$git_before" | sed 's/^/  /' | head -20
            echo "checkout: 0 passed, 1 failed"
            return 1
        fi
    }
    stage checkout-clean counts checkout_clean
else
    skip checkout-clean "not a git checkout: nothing to compare git status with"
fi

echo
echo "stages (wall time $(( $(date +%s) - gate_t0 )) s on $jobs cores):"
sed 's/^/  /' "$log"
[ -z "$failed_stages" ] || echo "failed stages:$failed_stages"
[ -z "$skipped" ] || echo "SKIPPED stages:$skipped (see above why)"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]

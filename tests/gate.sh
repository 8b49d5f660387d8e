#!/bin/sh
# gate.sh - `make test`: every stage of the gate, one summary line at the end.
#
# Each stage runs even when an earlier one failed, so one run reports
# everything. A stage's own counts are read from its output (greatest's
# "Pass: P, fail: F, skip: S." line, the replay driver's "N files, P passed,
# F failed", the compile matrix's "P passed, F failed"); a stage that fails
# without printing counts - it did not build, it crashed - counts as one
# failure, and a stage whose exit status disagrees with its counts counts
# one more. The last line is "N passed, N failed"; the exit status is 1 if
# anything failed.
set -u
MAKE=${MAKE:-make}
B=${B:-build}
GREATEST_DIR=${GREATEST_DIR:-tests}
mkdir -p "$B"
log="$B/gate.log"
: > "$log"
total_pass=0
total_fail=0
failed_stages=""

# stage NAME PATTERN COMMAND...  - PATTERN picks the counting rule.
stage() {
    name=$1; rule=$2; shift 2
    out="$B/gate-$name.out"
    echo "=== $name: $*"
    "$@" > "$out" 2>&1
    rc=$?
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
    echo "--- $name: $p passed, $f failed"
    echo "$name $p $f" >> "$log"
    total_pass=$((total_pass + p))
    total_fail=$((total_fail + f))
    [ "$f" -eq 0 ] || failed_stages="$failed_stages $name"
}

stage compile-matrix counts $MAKE -s compile-matrix B="$B"
stage unit greatest $MAKE -s unit B="$B" GREATEST_DIR="$GREATEST_DIR"
stage crypto-portable greatest $MAKE -s crypto-portable B="$B" GREATEST_DIR="$GREATEST_DIR"
stage replay counts $MAKE -s replay B="$B"
stage conformance counts $MAKE -s conformance B="$B"
stage seeds-stable single $MAKE -s seeds-check B="$B"
stage planted-bug single $MAKE -s planted-bug-check B="$B"
stage demo single $MAKE -s demo B="$B"
stage tunnel-process counts $MAKE -s tunnel-process B="$B"
stage install single $MAKE -s install-check B="$B"
if command -v "${CLANG:-clang}" >/dev/null 2>&1; then
    stage oss-fuzz counts $MAKE -s oss-fuzz-check B="$B"
else
    echo "!!! SKIPPED oss-fuzz-check: clang is not installed"
fi
# qcow2w.h against qemu: a bounded seeded run (make diff-qemu for more).
if command -v qemu-img >/dev/null 2>&1 && command -v qemu-io >/dev/null 2>&1
then
    stage differential counts $MAKE -s diff-qemu B="$B" ITER="${DIFF_ITER:-100}" SEED=1
    stage crash-qemu counts $MAKE -s crash-qemu B="$B" RUNS="${CRASH_RUNS:-120}" SEED=1
else
    echo "!!! SKIPPED differential tests: qemu-img / qemu-io not installed" \
         "(apt-get install qemu-utils); qcow2w.h was NOT checked against qemu"
fi
if command -v valgrind >/dev/null 2>&1; then
    stage ctgrind counts $MAKE -s ctgrind B="$B"
else
    echo "!!! SKIPPED ctgrind: valgrind is not installed (apt-get install" \
         "valgrind); constant time was NOT checked"
fi
if command -v "${ARM_CC:-arm-none-eabi-gcc}" >/dev/null 2>&1; then
    stage firmware single $MAKE -s firmware-check B="$B"
else
    echo "!!! SKIPPED firmware-check: ${ARM_CC:-arm-none-eabi-gcc} is not" \
         "installed (apt-get install gcc-arm-none-eabi)"
fi

echo
echo "stages:"
sed 's/^/  /' "$log"
[ -z "$failed_stages" ] || echo "failed stages:$failed_stages"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]

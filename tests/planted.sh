#!/bin/sh
# planted.sh BUG... - the planted-bug drill (make planted-bug-check, in
# make test): every planted bug must be caught by the tests that claim it.
#
# A bug is tests/planted/<header>-<name>.patch, a unified diff against the
# shipping header (which carries no test switch), with one "Caught-by:"
# line per program that must fail with it:
#   Caught-by: replay_<target> <corpus dir>   the committed corpus
#   Caught-by: test_<header> -s <suite>       a unit suite
#   Caught-by: valgrind <program>             under valgrind (ctgrind)
# Each program is built against a copy of the header with the patch applied
# ($B/planted/<bug>/, by the Makefile: `patch -F0`, so a patch that no
# longer applies exactly fails the drill, it never passes silently), from
# the plain flavour's harness objects: only the patched implementation and
# the programs the patch names are compiled. Then each must fail; the
# failing inputs (or tests) are counted, as a measure of how firmly the
# corpus holds the bug. Lastly corpus/sim_arq must catch the ARQ
# tutorial's planted bug (examples/arq.h: a switch of the example, not of
# a shipping header).
#
# Prints one line per check and "planted: P passed, F failed" (a check is
# one bug against one program that must catch it).
set -u
MAKE=${MAKE:-make}
B=${B:-build}

# judge BUG CATCHER... - prints one verdict: pass/fail/skip BUG: what
judge() {
    bug=$1; shift
    dir=$B/planted/$bug
    catcher="$*"
    wrap=""
    if [ "$1" = valgrind ]; then
        if ! command -v valgrind >/dev/null 2>&1; then
            echo "skip $bug: $catcher (valgrind is not installed)"; return
        fi
        wrap="valgrind -q --log-file=$dir/$2.vg"; shift
    fi
    prog=$1; shift
    log=$dir/$prog$(echo " $*" | tr -c 'a-zA-Z0-9_\n' _).log
    if [ ! -x "$dir/$prog" ]; then
        echo "fail $bug: $prog was not built (a patch that no longer applies," \
             "or a build error: $B/planted-build.log)"
    # shellcheck disable=SC2086
    elif $wrap "./$dir/$prog" "$@" > "$log" 2>&1; then
        echo "fail $bug: NOT caught by $catcher"
    else
        echo "pass $bug: caught by $catcher ($(grep -c '^FAIL' "$log") failing)"
    fi
}
if [ "${1:-}" = --judge ]; then shift; judge "$@"; exit 0; fi

pass=0
fail=0
skipped=""
ok() { echo "ok    $1"; pass=$((pass + 1)); }
bad() { echo "FAIL  $1"; fail=$((fail + 1)); }
jobs=$(nproc 2>/dev/null || echo 2)
[ $# -gt 0 ] || bad "no tests/planted/*.patch found"

for bug in "$@"; do
    grep -q '^Caught-by: ' "tests/planted/$bug.patch" ||
        bad "$bug: no Caught-by line in tests/planted/$bug.patch"
done
# Every program every bug names (make planted-programs), in one parallel make.
# A build that failed anywhere fails the drill: a program left from an
# earlier build must not stand in for one that no longer builds.
if ! $MAKE -s -k -j"$jobs" B="$B" planted-programs > "$B/planted-build.log" 2>&1; then
    sed 's/^/      /' "$B/planted-build.log" | tail -30
    bad "the planted programs did not all build ($B/planted-build.log)"
fi

# Every (bug, catcher) pair, judged $jobs at a time, reported in order.
for bug in "$@"; do
    sed -n "s/^Caught-by: /$bug /p" "tests/planted/$bug.patch"
done | xargs -P "$jobs" -L 1 sh tests/planted.sh --judge > "$B/planted.verdicts.tmp"
for bug in "$@"; do grep "^[a-z]* $bug: " "$B/planted.verdicts.tmp"; done \
    > "$B/planted.verdicts"
while read -r verdict rest; do
    case $verdict in
    pass) ok "$rest" ;;
    fail) bad "$rest" ;;
    skip) echo "SKIPPED $rest"; skipped="$skipped ${rest%%:*}" ;;
    esac
done < "$B/planted.verdicts"

if [ ! -x "$B/replay_sim_arq_bug" ]; then
    bad "arq-window-edge: replay_sim_arq_bug was not built"
elif ./"$B"/replay_sim_arq_bug -q corpus/sim_arq > "$B/planted-arq.log" 2>&1; then
    bad "arq-window-edge: NOT caught by replay_sim_arq corpus/sim_arq"
else
    ok "arq-window-edge (examples/arq.h): caught by replay_sim_arq corpus/sim_arq ($(grep -c '^FAIL' "$B/planted-arq.log") failing)"
fi
echo "gate: $# planted bugs (tests/planted/) and the ARQ tutorial's, each against" \
     "every program that must catch it${skipped:+ (SKIPPED:$skipped)}"
echo "planted: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/sh
# soak.sh - every harness in seed mode on seeds no corpus file came from
# (`make soak`, and the gate's soak stage).
#
# The replay gate runs the committed corpus only, so a harness that fails on
# a drawn input the corpus never held (a fixture that cannot take a drawn
# geometry, an oracle that is wrong on a rare path) passes it. This runs
# each target's seed mode (tests/replay_main.c: run i of seed S is
# alksim_seed_input(S, i, MAX_LEN)) on SEEDS, two targets at a time.
#
#   B=build TARGETS="codec ..." SEEDS="1001 2002" [RUNS=n] [MAX_LEN=n] \
#       sh tests/soak.sh
#
# RUNS unset: the gate's bounded amounts, about two minutes in all on 2
# cores (SOAK_RUNS runs a seed, SOAK_RUNS_SLOW for the qcow2 writers, which
# run 2-40 inputs a second under the sanitizers; 1,000 and 100 took over
# five minutes on a slow 2-core machine, half the gate's time budget). A failing run prints how to
# reproduce it, and its input is saved under $B/soak/<target>/ with the
# command that promotes it into corpus/<target>/.
#
# The fixture lanes (gate amounts only): qcow2_crash with ALK_FIXTURES_ONLY
# set builds and checks each drawn fixture and runs no operation, so a
# fixture that cannot take a drawn geometry (1 run in 300, before it was
# fixed) is seen without minutes of full runs.
#
# Output: each target and seed's line "replay_T: seed S: R runs, P passed,
# F failed (T s)" (the gate sums runs), then "gate: ..." and the exit
# status (non-zero on any failure).
set -u
: "${B:=build}" "${TARGETS:?}" "${SEEDS:=1001 2002 3003}" "${MAX_LEN:=4096}"
: "${SOAK_RUNS:=400}" "${SOAK_RUNS_SLOW:=40}" "${SOAK_FIXTURE_RUNS:=400}" "${JOBS:=2}"
SLOW="qcow2_write qcow2_growth qcow2_crash qcow2_jobs"
FIXTURE_TARGETS="qcow2_crash"

runs_for() {
    if [ -n "${RUNS:-}" ]; then echo "$RUNS"; return; fi
    case " $SLOW " in *" $1 "*) echo "$SOAK_RUNS_SLOW" ;; *) echo "$SOAK_RUNS" ;; esac
}

logs=$B/soak/logs
rm -rf "$B/soak"   # (a finding of an earlier soak is in its own output)
mkdir -p "$logs"
jobs=""
# the slow targets first, so the two lanes finish together
for t in $SLOW $TARGETS; do
    case " $TARGETS " in *" $t "*) ;; *) continue ;; esac
    case "$jobs " in *" $t:"*) continue ;; esac
    for s in $SEEDS; do jobs="$jobs $t:$s:$(runs_for "$t")"; done
done
# the fixture lanes: qcow2_crash's fixtures only (ALK_FIXTURES_ONLY, see
# testkit/alk_check.h), SOAK_FIXTURE_RUNS a seed - a fixture that cannot take
# a drawn geometry shows in about 1 run in 300, too rare for 100 full runs
if [ -z "${RUNS:-}" ]; then
    fjobs=""
    for t in $FIXTURE_TARGETS; do
        case " $TARGETS " in *" $t "*) ;; *) continue ;; esac
        for s in $SEEDS; do fjobs="$fjobs $t+fixtures:$s:$SOAK_FIXTURE_RUNS"; done
    done
    jobs="$fjobs $jobs"
fi
[ -n "$jobs" ] || { echo "soak: no target of '$TARGETS' is built here"; exit 1; }

t0=$(date +%s)
printf '%s\n' $jobs | xargs -P "$JOBS" -I{} sh -c '
    j=$1; B=$2; max=$3
    t=${j%%:*}; j=${j#*:}; s=${j%%:*}; n=${j#*:}
    log="$B/soak/logs/$t-$s"
    fx=; case $t in *+fixtures) fx=1; t=${t%+fixtures} ;; esac
    mkdir -p "$B/soak/$t"
    ALK_FIXTURES_ONLY=$fx ./"$B"/replay_"$t" --seed "$s" --runs "$n" \
        --max-len "$max" --save "$B/soak/$t" > "$log" 2>&1
    echo $? > "$log.rc"' sh {} "$B" "$MAX_LEN"

rc=0; runs=0; nt=0; seen=""
for j in $jobs; do
    t=${j%%:*}; r=${j#*:}; s=${r%%:*}; n=${r#*:}
    log="$logs/$t-$s"
    # the progress lines are for a watching user, not the log
    case $t in
    *+fixtures) t=${t%+fixtures}
        sed "s/^replay_$t: seed/replay_$t (fixtures only): seed/" "$log" |
            grep -v ': seed [0-9]*: [0-9]*/[0-9]* runs, ' ;;
    *)  grep -v ': seed [0-9]*: [0-9]*/[0-9]* runs, ' "$log" ;;
    esac
    if [ "$(cat "$log.rc" 2>/dev/null)" != 0 ]; then
        rc=1
        grep -q ' passed, [0-9]* failed' "$log" ||
            echo "replay_$t: seed $s: 0 passed, 1 failed (it printed no result)"
        for f in "$B/soak/$t"/seed-"$s"-run-*; do
            [ -f "$f" ] || continue
            echo "  promote (after the fix): cp $f corpus/$t/<what-it-shows>"
        done
    fi
    runs=$((runs + n))
    case " $seen " in *" $t "*) ;; *) seen="$seen $t"; nt=$((nt + 1)) ;; esac
done
set -- $SEEDS
echo "gate: $nt harnesses in seed mode on seeds $(echo $SEEDS | tr ' ' ','), $runs runs (no corpus file came from these seeds) in $(( $(date +%s) - t0 )) s"
exit $rc

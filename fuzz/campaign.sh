#!/bin/sh
# campaign.sh - detached, bounded fuzz campaigns (DESIGN §2.5).
#
#   TARGET=codec [ENGINE=honggfuzz|libfuzzer|afl] [SECONDS_LIMIT=600] \
#     sh fuzz/campaign.sh start     build, then start detached; prints the pid
#   sh fuzz/campaign.sh status      running?, elapsed, exec/s, coverage, crashes
#   sh fuzz/campaign.sh stop        signal the recorded supervisor pid; it stops
#                                   its own session and records `finished`
#   sh fuzz/campaign.sh merge       minimise the campaign corpus against
#                                   corpus/<target>/, stage new coverage
#   sh fuzz/campaign.sh build-all   build every target for the chosen engine
#
# Everything of a campaign lives in fuzz/out/<target>/ (git-ignored):
#   pid          the supervisor's pid = its session and process-group id
#   engine       which engine runs; bin: the instrumented binary
#   log          the engine's own output; supervisor.log: limits enforced
#   corpus/      the growing corpus (seeded from corpus/<target>/)
#   crashes/     crashing inputs, counted by file (exit codes are not trusted:
#                honggfuzz and AFL++ exit 0 after crashes)
#   status       the last status snapshot; finished: exit code + summary
#
# Limits: wall time SECONDS_LIMIT (engine flag, and the supervisor kills the
# group at SECONDS_LIMIT + 60 s); per-input timeout TIMEOUT (10 s); memory
# MAX_RSS_MB (4096) enforced by the supervisor summing the RSS of the whole
# session every 5 s (an ASan build ignores soft RSS limits), plus the engine's
# own rss/malloc limits; one fuzzing process (the machine has 2 cores).
# Nothing is ever killed by name: only the recorded process group.
set -u
TARGET=${TARGET:-codec}
SECONDS_LIMIT=${SECONDS_LIMIT:-600}
TIMEOUT=${TIMEOUT:-10}
MAX_RSS_MB=${MAX_RSS_MB:-4096}
CLANG=${CLANG:-clang}
FUZZ_DEFS=${FUZZ_DEFS:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR="$ROOT/fuzz/out/$TARGET"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
# Targets built without comparison tracing (trace-cmp): scenario generators
# whose input bytes are draws - ranges, picks, weights - so the operands
# their code compares are seldom bytes of the input, and the hooks cost
# more than they give. tunnel_sim under ASan+UBSan, 8 minutes from the
# same 20 seeds on one core each: 3.6x the exec/s without them, and more
# edges and features (the figures are in the README).
NO_CMP_TARGETS="tunnel_sim"
# Targets whose coverage feedback comes from the library alone: a file
# fuzz/<target>.cov (a sanitizer-coverage allowlist) names the functions
# instrumented for the engine. tunnel_sim's model and world are most of
# its branches; left out, the same 6,000 runs take 15% less time (the
# figures are in the README).

die() { echo "campaign: $*" >&2; exit 1; }

find_honggfuzz() {
    if [ -n "${HFUZZ_DIR:-}" ] && [ -x "$HFUZZ_DIR/honggfuzz" ]; then
        HF="$HFUZZ_DIR/honggfuzz"; HFCC="$HFUZZ_DIR/hfuzz_cc/hfuzz-clang"
        return 0
    fi
    if command -v honggfuzz >/dev/null 2>&1 &&
       command -v hfuzz-clang >/dev/null 2>&1; then
        HF=$(command -v honggfuzz); HFCC=$(command -v hfuzz-clang)
        return 0
    fi
    return 1
}

pick_engine() {
    if [ -z "${ENGINE:-}" ]; then
        if find_honggfuzz; then ENGINE=honggfuzz; else ENGINE=libfuzzer; fi
    fi
    case $ENGINE in
    honggfuzz) find_honggfuzz ||
        die "honggfuzz not found: put honggfuzz and hfuzz-clang on PATH or set HFUZZ_DIR" ;;
    libfuzzer) command -v "$CLANG" >/dev/null 2>&1 || die "$CLANG not found" ;;
    afl) command -v afl-clang-fast >/dev/null 2>&1 ||
        die "afl-clang-fast not found (apt-get install afl++)" ;;
    *) die "unknown ENGINE '$ENGINE' (honggfuzz, libfuzzer, afl)" ;;
    esac
}

# engine_cc ENGINE - the engine's compiler command, with its instrumentation
engine_cc() {
    case $1 in
    honggfuzz) echo "$HFCC" ;;
    libfuzzer) echo "$CLANG -fsanitize=fuzzer" ;;
    afl) echo "afl-clang-fast -fsanitize=fuzzer" ;;
    esac
}

# impl_lib ENGINE - each header's implementation (fuzz/impl_<header>.c)
# built once for the engine with the default instrumentation, into
# fuzz/out/lib-ENGINE/libalk.a (rebuilt when a header or impl file is
# newer); prints the archive's path.
impl_lib() {
    lib="$ROOT/fuzz/out/lib-$1"
    mkdir -p "$lib"
    if [ ! -f "$lib/libalk.a" ] || [ -n "$(find "$ROOT"/*.h "$ROOT"/fuzz/impl_*.c \
            "$ROOT"/testkit/*_internal.h -newer "$lib/libalk.a" 2>/dev/null)" ]; then
        for impl in "$ROOT"/fuzz/impl_*.c; do
            # shellcheck disable=SC2046
            $(engine_cc "$1") -c -O1 -g $SAN -I"$ROOT" "$impl" \
                -o "$lib/$(basename "$impl" .c).o" >&2 || return 1
        done
        rm -f "$lib/libalk.a"
        ar rcs "$lib/libalk.a" "$lib"/impl_*.o || return 1
    fi
    echo "$lib/libalk.a"
}

# build ENGINE TARGET OUT
build() {
    src="$ROOT/fuzz/$2.c"
    [ -f "$src" ] || die "no harness fuzz/$2.c"
    # the inflater's target checks against zlib when it links (the
    # Makefile's ZLIB_OK test, for the same compiler)
    zdef=""; zlib=""
    if { [ "$2" = inflate ] || [ "$2" = deflate ]; } &&
       printf '#include <zlib.h>\nint main(void){return zlibVersion()[0] == 0;}\n' |
           "$CLANG" -x c - -lz -o /dev/null 2>/dev/null; then
        zdef="-DALK_HAVE_ZLIB"; zlib="-lz"
    fi
    cov=""
    case " $NO_CMP_TARGETS " in *" $2 "*) cov="-fno-sanitize-coverage=trace-cmp" ;; esac
    # (honggfuzz and libFuzzer builds: AFL++ instruments with its own pass)
    allow=""
    [ -f "$ROOT/fuzz/$2.cov" ] && [ "$1" != afl ] &&
        allow="-fsanitize-coverage-allowlist=$ROOT/fuzz/$2.cov"
    # The implementations: the engine's shared build, or - for a target
    # instrumented its own way - compiled with the harness.
    if [ -z "$cov$allow" ]; then
        impls=$(impl_lib "$1") || return 1
    else
        impls="$ROOT/fuzz/impl_*.c"
    fi
    # shellcheck disable=SC2086
    $(engine_cc "$1") -O1 -g $SAN $cov $allow $FUZZ_DEFS $zdef -I"$ROOT" "$src" $impls \
        -o "$3" $zlib
}

running_pid() {
    [ -f "$DIR/pid" ] || return 1
    p=$(cat "$DIR/pid")
    kill -0 "$p" 2>/dev/null || return 1
    # Guard against a recycled pid: it must still be our supervisor.
    tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | grep -q "campaign.sh supervise" ||
        return 1
    echo "$p"
}

cmd_start() {
    pick_engine
    if p=$(running_pid); then die "a $TARGET campaign is already running (pid $p)"; fi
    [ -d "$ROOT/corpus/$TARGET" ] || die "no corpus/$TARGET/"
    rm -rf "$DIR"
    mkdir -p "$DIR/corpus" "$DIR/crashes"
    echo "$ENGINE" > "$DIR/engine"
    echo "building $TARGET for $ENGINE..."
    build "$ENGINE" "$TARGET" "$DIR/bin" > "$DIR/build.log" 2>&1 ||
        { cat "$DIR/build.log"; die "build failed"; }
    cp "$ROOT/corpus/$TARGET/"* "$DIR/corpus/" 2>/dev/null
    date +%s > "$DIR/started"
    echo "$SECONDS_LIMIT" > "$DIR/seconds"
    ENGINE=$ENGINE TARGET=$TARGET SECONDS_LIMIT=$SECONDS_LIMIT TIMEOUT=$TIMEOUT \
        MAX_RSS_MB=$MAX_RSS_MB HF=${HF:-} \
        setsid nohup sh "$ROOT/fuzz/campaign.sh" supervise \
        > "$DIR/supervisor.log" 2>&1 < /dev/null &
    i=0
    while [ ! -s "$DIR/pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
    [ -s "$DIR/pid" ] || die "supervisor did not start (see $DIR/supervisor.log)"
    echo "started $ENGINE campaign on $TARGET for ${SECONDS_LIMIT}s: pid $(cat "$DIR/pid")"
    echo "  log:     $DIR/log"
    echo "  crashes: $DIR/crashes/"
    echo "  poll:    make fuzz-status TARGET=$TARGET   stop: make fuzz-stop TARGET=$TARGET"
}

# Runs inside the new session: start the engine, enforce limits, record.
cmd_supervise() {
    echo $$ > "$DIR/pid"
    cd "$DIR" || exit 1
    dict="$ROOT/fuzz/$TARGET.dict"
    hf_dict=""; lf_dict=""; afl_dict=""
    if [ -f "$dict" ]; then
        hf_dict="--dict $dict"; lf_dict="-dict=$dict"; afl_dict="-x $dict"
    fi
    # shellcheck disable=SC2086
    case $ENGINE in
    honggfuzz)
        "$HF" -i corpus --crashdir crashes -W "$DIR" -n 1 \
            --run_time "$SECONDS_LIMIT" --timeout "$TIMEOUT" \
            --rlimit_rss 2048 --statsfile "$DIR/hf-stats" \
            --logfile "$DIR/log" $hf_dict -- ./bin > "$DIR/engine.out" 2>&1 &
        ;;
    libfuzzer)
        ./bin -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
            -max_total_time="$SECONDS_LIMIT" -timeout="$TIMEOUT" \
            -rss_limit_mb=2048 -malloc_limit_mb=2048 \
            -artifact_prefix=crashes/ -print_final_stats=1 $lf_dict \
            corpus > "$DIR/log" 2>&1 &
        ;;
    afl)
        AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
            afl-fuzz -i corpus -o afl -V "$SECONDS_LIMIT" \
            -t $((TIMEOUT * 1000)) -m none $afl_dict -- ./bin > "$DIR/log" 2>&1 &
        ;;
    esac
    engine_pid=$!
    start=$(date +%s)
    reason=""
    # fuzz-stop signals this supervisor; it then stops the whole session
    # itself, so the campaign still gets its `finished` record.
    trap 'reason="stopped by fuzz-stop"' TERM
    while [ -z "$reason" ] && kill -0 "$engine_pid" 2>/dev/null; do
        sleep 5 &
        wait $! 2>/dev/null
        [ -n "$reason" ] && break
        now=$(date +%s)
        rss=$(ps -o rss= --sid $$ 2>/dev/null | awk '{s+=$1} END {print int(s/1024)}')
        if [ "${rss:-0}" -gt "$MAX_RSS_MB" ]; then
            reason="session RSS ${rss} MiB > ${MAX_RSS_MB} MiB"
        elif [ $((now - start)) -gt $((SECONDS_LIMIT + 60)) ]; then
            reason="over time: $((now - start)) s"
        fi
    done
    if [ -n "$reason" ]; then
        echo "supervisor: stopping the campaign: $reason"
        trap '' TERM
        kill -TERM "-$$" 2>/dev/null   # the whole session, this shell immune
        sleep 5
        for p in $(ps -o pid= --sid $$); do
            [ "$p" = "$$" ] || kill -KILL "$p" 2>/dev/null
        done
    fi
    wait "$engine_pid"
    rc=$?
    [ "$ENGINE" = afl ] && cp afl/default/crashes/id* crashes/ 2>/dev/null
    crashes=$(find crashes -type f ! -name 'README*' ! -name '*.fuzz.txt' 2>/dev/null | wc -l)
    {
        echo "engine_exit=$rc"
        echo "crashes=$crashes"
        echo "stopped_by_supervisor=${reason:-no}"
        echo "elapsed=$(( $(date +%s) - start ))"
    } > finished
    sh "$ROOT/fuzz/campaign.sh" status > status 2>&1
}

cmd_status() {
    [ -d "$DIR" ] || die "no campaign for $TARGET in fuzz/out/"
    engine=$(cat "$DIR/engine" 2>/dev/null)
    now=$(date +%s)
    started=$(cat "$DIR/started" 2>/dev/null || echo "$now")
    if [ -f "$DIR/finished" ]; then state="finished"
    elif p=$(running_pid); then state="running (pid $p)"
    else state="not running (no finished record: killed?)"; fi
    crashes=$(find "$DIR/crashes" -type f ! -name '*.txt' 2>/dev/null | wc -l)
    [ "$engine" = afl ] && crashes=$((crashes + $(find "$DIR/afl/default/crashes" -name 'id*' 2>/dev/null | wc -l)))
    corpus=$(find "$DIR/corpus" -type f 2>/dev/null | wc -l)
    execs="?"; cov="?"
    case $engine in
    libfuzzer)
        line=$(grep -E '^#[0-9]+: cov: ' "$DIR/log" 2>/dev/null | tail -1)
        execs=$(echo "$line" | sed -n 's/.*exec\/s:* *\([0-9]*\).*/\1/p')
        cov=$(echo "$line" | sed -n 's/.*cov: \([0-9]*\) ft: \([0-9]*\).*/edges \1, features \2/p')
        ;;
    honggfuzz)
        line=$(tail -1 "$DIR/hf-stats" 2>/dev/null)
        execs=$(echo "$line" | awk -F', ' '{print $4}')
        cov=$(echo "$line" | awk -F', ' '{print "edges " $8 ", blocks " $9}')
        sum=$(grep -o 'Summary iterations:.*' "$DIR/log" 2>/dev/null | tail -1)
        [ -n "$sum" ] && execs="$(echo "$sum" | sed -n 's/.*speed:\([0-9]*\).*/\1/p') ($sum)"
        ;;
    afl)
        st="$DIR/afl/default/fuzzer_stats"
        execs=$(sed -n 's/^execs_per_sec *: *//p' "$st" 2>/dev/null)
        cov=$(sed -n 's/^bitmap_cvg *: *//p' "$st" 2>/dev/null)
        ;;
    esac
    echo "campaign $TARGET: $state"
    echo "  engine:   $engine"
    echo "  elapsed:  $((now - started)) s of $(cat "$DIR/seconds" 2>/dev/null) s"
    echo "  exec/s:   ${execs:-?}"
    echo "  coverage: ${cov:-?}"
    echo "  corpus:   $corpus files"
    echo "  crashes:  $crashes (in $DIR/crashes/)"
    [ -f "$DIR/finished" ] && sed 's/^/  /' "$DIR/finished"
    [ -s "$DIR/supervisor.log" ] && sed 's/^/  supervisor: /' "$DIR/supervisor.log"
    return 0
}

cmd_stop() {
    if p=$(running_pid); then
        kill -TERM "$p" || die "could not signal pid $p"
        echo "asked the $TARGET supervisor (pid $p) to stop its session"
        i=0
        while [ ! -f "$DIR/finished" ] && [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done
        if [ -f "$DIR/finished" ]; then sed 's/^/  /' "$DIR/finished"
        else echo "  not finished after 30 s: kill -KILL -$p stops the group"; fi
    else
        echo "no running $TARGET campaign"
    fi
}

# Minimise the campaign corpus against the committed one with a libFuzzer
# build (inputs are engine-neutral); stage only what adds coverage.
cmd_merge() {
    [ -d "$DIR/corpus" ] || die "no campaign corpus in $DIR/corpus"
    if running_pid >/dev/null; then die "campaign still running; make fuzz-stop first"; fi
    mbin="$DIR/merge-bin"
    build libfuzzer "$TARGET" "$mbin" > "$DIR/merge-build.log" 2>&1 ||
        { cat "$DIR/merge-build.log"; die "merge build failed"; }
    work="$DIR/merge-work"
    staged="$DIR/staged"
    rm -rf "$work" "$staged"
    mkdir -p "$work" "$staged"
    cp "$ROOT/corpus/$TARGET/"* "$work/"
    "$mbin" -merge=1 -use_counters=0 -timeout="$TIMEOUT" -rss_limit_mb=2048 "$work" "$DIR/corpus" \
        > "$DIR/merge.log" 2>&1 || { tail -20 "$DIR/merge.log"; die "merge failed"; }
    n=0
    for f in "$work"/*; do
        b=$(basename "$f")
        [ -e "$ROOT/corpus/$TARGET/$b" ] && continue
        cp "$f" "$staged/cov-$b"
        n=$((n + 1))
    done
    rm -rf "$work"
    echo "merge: $n coverage-increasing inputs staged in $staged/"
    if [ "$n" -gt 0 ]; then
        "$ROOT/build/replay_$TARGET" -q "$staged" ||
            die "a staged input fails the replay gate: fix the bug first"
        echo "review them, then: cp $staged/* corpus/$TARGET/ && make replay"
    fi
}

cmd_build_all() {
    pick_engine
    mkdir -p "$ROOT/fuzz/out/bin"
    rc=0
    for src in "$ROOT"/fuzz/*.c; do
        t=$(basename "$src" .c)
        grep -q LLVMFuzzerTestOneInput "$src" || continue
        if build "$ENGINE" "$t" "$ROOT/fuzz/out/bin/$t-$ENGINE" > "$ROOT/fuzz/out/bin/$t.log" 2>&1; then
            echo "built fuzz/out/bin/$t-$ENGINE"
        else
            cat "$ROOT/fuzz/out/bin/$t.log"; rc=1
        fi
    done
    return $rc
}

case ${1:-} in
start) cmd_build_all && cmd_start ;;
supervise) cmd_supervise ;;
status) cmd_status ;;
stop) cmd_stop ;;
merge) cmd_merge ;;
build-all) cmd_build_all ;;
*) die "usage: campaign.sh start|status|stop|merge|build-all" ;;
esac

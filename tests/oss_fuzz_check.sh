#!/bin/sh
# oss_fuzz_check.sh TARGET... - run .clusterfuzzlite/build.sh the way the
# OSS-Fuzz base image does (bash -eu, $SRC/$WORK/$OUT, libFuzzer with
# ASan+UBSan), since no Docker engine runs here, then check its outputs:
# each fuzzer exists, the seed zip holds exactly corpus/<target>/, the
# .options (and the .dict, for targets that have one) are there, and the
# fuzzer, run from its seeds with the .options' limits, runs them (whole:
# no max_len) and then fuzzes until OSS_FUZZ_SECONDS (default 3) have gone,
# clean. It runs OSS_FUZZ_SEEDS of them (default 24, every k-th by name, so
# the sample spans the corpus): the replay stage runs every seed under
# ASan+UBSan already, and all of them here took the slow targets a minute
# each. (A slow target's seeds take longer than the seconds: it runs them
# all, and fuzzes no further.) Targets
# run $(nproc) at a time. Everything the fuzzers write (crash and slow-input
# artifacts, their corpora) stays under $B/oss-fuzz/: they run there, with
# -artifact_prefix there, never in the checkout.
set -u
B=${B:-build}
SECS=${OSS_FUZZ_SECONDS:-3}
NSEEDS=${OSS_FUZZ_SEEDS:-24}
root=$(pwd)
base="$root/$B/oss-fuzz"
SAN="-fsanitize=address,undefined -fsanitize-address-use-after-scope"
pass=0; fail=0
check() { if eval "$2"; then echo "ok    $1"; pass=$((pass + 1)); else echo "FAIL  $1"; fail=$((fail + 1)); fi; }

# one_target T - the checks of one fuzzer, into $base/run/T.report
one_target() {
    t=$1; out="$base/out"; run="$base/run/$t"
    mkdir -p "$run/seeds" "$run/new" "$run/artifacts"
    pass=0; fail=0
    {
        check "$t: fuzzer built" '[ -x "$out/$t" ]'
        check "$t: seed zip matches corpus/$t" \
            '[ "$(unzip -Z1 "$out/${t}_seed_corpus.zip" | sort)" = "$(ls "corpus/$t" | sort)" ]'
        dict=""
        if [ -f "fuzz/$t.dict" ]; then
            check "$t: dict present" '[ -s "$out/$t.dict" ]'
            dict="-dict=$out/$t.dict"
        fi
        check "$t: options present" '[ -s "$out/$t.options" ]'
        # the [libfuzzer] options as flags, but max_len: every seed runs whole
        opts=$(sed -n 's/^\([a-z_]*\) *= *\(.*\)$/-\1=\2/p' "$out/$t.options" 2>/dev/null |
               grep -v '^-dict=\|^-max_len=' | tr '\n' ' ')
        (cd "$run/seeds" && unzip -q "$out/${t}_seed_corpus.zip")
        all=$(ls "$run/seeds" | wc -l)
        # every k-th seed by name, NSEEDS of them: the rest aside
        k=$(( (all + NSEEDS - 1) / NSEEDS ))
        if [ "$k" -gt 1 ]; then
            mkdir -p "$run/aside"
            ls "$run/seeds" | awk -v k="$k" 'NR % k != 1' |
                while IFS= read -r f; do mv "$run/seeds/$f" "$run/aside/"; done
        fi
        n=$(ls "$run/seeds" | wc -l)
        # libFuzzer runs every seed before it fuzzes, whatever the time limit
        # shellcheck disable=SC2086
        check "$t: runs $n of its $all seeds, then fuzzes until ${SECS} s, clean" \
            '(cd "$run" && "$out/$t" -max_total_time="$SECS" $opts -artifact_prefix="$run/artifacts/" $dict new seeds > fuzz.log 2>&1) || { tail -20 "$run/fuzz.log"; false; }'
        runs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\1/p' "$run/fuzz.log")
        secs=$(sed -n 's/^Done \([0-9]*\) runs in \([0-9]*\) second.*/\2/p' "$run/fuzz.log")
        cov=$(sed -n 's/^#[0-9]*.*DONE *cov: \([0-9]*\).*/\1/p' "$run/fuzz.log")
        inited=$(sed -n 's/^#\([0-9]*\).*INITED.*/\1/p' "$run/fuzz.log")
        check "$t: every seed of the $n ran (INITED after $n inputs or more)" '[ "${inited:-0}" -ge "$n" ]'
        echo "      ($t: ${runs:-?} runs in ${secs:-?} s, $(( ${runs:-0} - ${inited:-0} )) after the seeds; cov ${cov:-?})"
        echo "counts $pass $fail"
    } > "$base/run/$t.report" 2>&1
}
if [ "${1:-}" = --one ]; then one_target "$2"; exit 0; fi

rm -rf "$base"
mkdir -p "$base/src" "$base/work" "$base/out" "$base/run"
ln -sfn "$root" "$base/src/alk"
t0=$(date +%s)
SRC="$base/src" WORK="$base/work" OUT="$base/out" \
    CC=${CLANG:-clang} CXX=${CLANGXX:-clang++} \
    CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only $SAN -fsanitize=fuzzer-no-link" \
    CXXFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only $SAN -fsanitize=fuzzer-no-link" \
    LIB_FUZZING_ENGINE="-fsanitize=fuzzer" \
    bash -eu "$root/.clusterfuzzlite/build.sh" > "$base/build.log" 2>&1
build_rc=$?
check "build.sh exits 0 ($(( $(date +%s) - t0 )) s)" '[ $build_rc -eq 0 ] || { tail -30 "$base/build.log"; false; }'

ntargets=$#
printf '%s\n' "$@" | xargs -P "$(nproc 2>/dev/null || echo 2)" -I{} \
    env B="$B" OSS_FUZZ_SECONDS="$SECS" sh tests/oss_fuzz_check.sh --one {}
for t in "$@"; do
    if [ -f "$base/run/$t.report" ]; then
        grep -v '^counts ' "$base/run/$t.report"
        set -- $(sed -n 's/^counts //p' "$base/run/$t.report") 0 0
        pass=$((pass + $1)); fail=$((fail + $2))
    else
        echo "FAIL  $t: no report"; fail=$((fail + 1))
    fi
done
echo "gate: $ntargets fuzzers built by .clusterfuzzlite/build.sh as ClusterFuzzLite builds them, each ran up to $NSEEDS of its seeds and fuzzed"
echo "oss-fuzz-check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

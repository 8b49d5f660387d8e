#!/bin/sh
# oss_fuzz_check.sh TARGET... - run .clusterfuzzlite/build.sh the way the
# OSS-Fuzz base image does (libFuzzer, ASan+UBSan), since no Docker engine
# runs here, then check its outputs: each fuzzer exists and runs its seed
# corpus clean, the seed zip holds exactly corpus/<target>/, the .options
# (and the .dict, for targets that have one) are there.
set -u
B=${B:-build}
root=$(pwd)
base="$root/$B/oss-fuzz"
rm -rf "$base"
mkdir -p "$base/src" "$base/work" "$base/out"
ln -s "$root" "$base/src/alk"
SAN="-fsanitize=address,undefined -fsanitize-address-use-after-scope"
pass=0; fail=0
check() { if eval "$2"; then echo "ok    $1"; pass=$((pass + 1)); else echo "FAIL  $1"; fail=$((fail + 1)); fi; }
SRC="$base/src" WORK="$base/work" OUT="$base/out" \
    CC=${CLANG:-clang} CXX=${CLANGXX:-clang++} \
    CFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only $SAN -fsanitize=fuzzer-no-link" \
    CXXFLAGS="-O1 -fno-omit-frame-pointer -gline-tables-only $SAN -fsanitize=fuzzer-no-link" \
    LIB_FUZZING_ENGINE="-fsanitize=fuzzer" \
    bash "$root/.clusterfuzzlite/build.sh" > "$base/build.log" 2>&1
build_rc=$?
check "build.sh exits 0" '[ $build_rc -eq 0 ] || { cat "$base/build.log"; false; }'
for t in "$@"; do
    out="$base/out"
    check "$t: fuzzer built" '[ -x "$out/$t" ]'
    check "$t: seed zip matches corpus/$t" \
        '[ "$(unzip -Z1 "$out/${t}_seed_corpus.zip" | sort)" = "$(ls "corpus/$t" | sort)" ]'
    dict=""
    if [ -f "fuzz/$t.dict" ]; then
        check "$t: dict present" '[ -s "$out/$t.dict" ]'
        dict="-dict=$out/$t.dict"
    fi
    check "$t: options present" '[ -s "$out/$t.options" ]'
    rm -rf "$base/seeds-$t" && mkdir -p "$base/seeds-$t"
    (cd "$base/seeds-$t" && unzip -q "$out/${t}_seed_corpus.zip")
    check "$t: runs its seed corpus" \
        '"$out/$t" -runs=0 $dict "$base/seeds-$t" > "$base/run-$t.log" 2>&1 || { tail -20 "$base/run-$t.log"; false; }'
    # 2000 iterations, or 15 s for the slow (disk-image) targets.
    check "$t: runs 2000 fuzz iterations (at most 15 s) clean" \
        '"$out/$t" -runs=2000 -max_total_time=15 $dict "$base/seeds-$t" > "$base/fuzz-$t.log" 2>&1 || { tail -20 "$base/fuzz-$t.log"; false; }'
done
echo "oss-fuzz-check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

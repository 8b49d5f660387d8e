#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build: one fuzzer per fuzz/<target>.c that
# defines LLVMFuzzerTestOneInput. Each header's implementation is compiled
# once (fuzz/impl_<header>.c, $CC $CFLAGS) into $WORK/libalk.a; each
# harness is compiled with $CC $CFLAGS and linked with $CXX $CXXFLAGS
# $LIB_FUZZING_ENGINE against it. Writes to $OUT:
#   <target>                   the fuzzer
#   <target>_seed_corpus.zip   the committed corpus/<target>/
#   <target>.dict, .options    from fuzz/ when present
# Compiles run in parallel, $(nproc) at a time. `make oss-fuzz-check` runs
# this script locally with libFuzzer settings.
cd "$SRC/alk"
ncpu=$(nproc 2>/dev/null || echo 2)

# run_all - the commands on stdin (one a line), $ncpu at a time;
# fails if any failed
run_all() {
    local pids=() rc=0 line
    while IFS= read -r line; do
        while [ "$(jobs -rp | wc -l)" -ge "$ncpu" ]; do sleep 0.2; done
        bash -euc "$line" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    return $rc
}

for h in alkcodec alksim alktunnel qcow2w; do
    echo "$CC $CFLAGS -I. -c fuzz/impl_$h.c -o $WORK/impl_$h.o"
done | run_all
rm -f "$WORK/libalk.a"
ar rcs "$WORK/libalk.a" "$WORK"/impl_*.o

targets=()
for src in fuzz/*.c; do
    grep -q LLVMFuzzerTestOneInput "$src" || continue
    targets+=("$(basename "$src" .c)")
done
# Same amplification bound as `make fuzz` (see fuzz/codec_layout.h).
for t in "${targets[@]}"; do
    echo "$CC $CFLAGS -I. -DCODEC_AMPLIFY_BYTES=65536 -c fuzz/$t.c -o $WORK/$t.o && $CXX $CXXFLAGS $WORK/$t.o $WORK/libalk.a -o $OUT/$t $LIB_FUZZING_ENGINE"
done | run_all

for t in "${targets[@]}"; do
    if [ -d "corpus/$t" ]; then
        rm -f "$OUT/${t}_seed_corpus.zip"
        (cd "corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    fi
    if [ -f "fuzz/$t.dict" ]; then cp "fuzz/$t.dict" "$OUT/$t.dict"; fi
    if [ -f "fuzz/$t.options" ]; then cp "fuzz/$t.options" "$OUT/$t.options"; fi
done

#!/bin/bash -eu
# OSS-Fuzz / ClusterFuzzLite build: one fuzzer per fuzz/<target>.c that
# defines LLVMFuzzerTestOneInput. Compiles with $CC $CFLAGS, links with
# $CXX $CXXFLAGS $LIB_FUZZING_ENGINE, and writes to $OUT:
#   <target>                   the fuzzer
#   <target>_seed_corpus.zip   the committed corpus/<target>/
#   <target>.dict, .options    from fuzz/ when present
# `make oss-fuzz-check` runs this script locally with libFuzzer settings.
cd "$SRC/alk"
for src in fuzz/*.c; do
    grep -q LLVMFuzzerTestOneInput "$src" || continue
    t=$(basename "$src" .c)
    # Same amplification bound as `make fuzz` (see fuzz/codec_layout.h).
    $CC $CFLAGS -DCODEC_AMPLIFY_BYTES=65536 -c "$src" -o "$WORK/$t.o"
    $CXX $CXXFLAGS "$WORK/$t.o" -o "$OUT/$t" $LIB_FUZZING_ENGINE
    if [ -d "corpus/$t" ]; then
        rm -f "$OUT/${t}_seed_corpus.zip"
        (cd "corpus/$t" && zip -q -r "$OUT/${t}_seed_corpus.zip" .)
    fi
    if [ -f "fuzz/$t.dict" ]; then cp "fuzz/$t.dict" "$OUT/$t.dict"; fi
    if [ -f "fuzz/$t.options" ]; then cp "fuzz/$t.options" "$OUT/$t.options"; fi
done

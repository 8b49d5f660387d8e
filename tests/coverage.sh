#!/bin/sh
# coverage.sh HEADER... - line and branch coverage of each header from the
# unit tests plus the corpus replay (gcc --coverage, lcov, genhtml).
# Writes build/coverage/html/index.html and prints one summary line per
# header: "<header>: lines L% (hit/total), branches B% (hit/total)".
set -eu
B=${B:-build}
CC=${CC:-gcc}
dir="$B/coverage"
rm -rf "$dir"
mkdir -p "$dir"
RC="--rc lcov_branch_coverage=1"
COV="-O0 -g --coverage -std=c99"

# the unit tests run in $dir (their scratch files stay there) and read
# fixtures under corpus/ by relative path
ln -s "$(pwd)/corpus" "$dir/corpus"
for t in tests/test_*.c; do
    name=$(basename "$t" .c)
    $CC $COV -Itests -I. "$t" -o "$dir/$name"
    (cd "$dir" && "./$name" > "$name.out" 2>&1) ||
        { cat "$dir/$name.out"; echo "coverage: $name failed"; exit 1; }
done
# the harnesses link each implementation built once (as make test does):
# every replay's counts add up in the same .gcda files
for impl in fuzz/impl_*.c; do
    $CC $COV -I. -c "$impl" -o "$dir/$(basename "$impl" .c).o"
done
ar rcs "$dir/libalk.a" "$dir"/impl_*.o
zlib=$(printf '#include <zlib.h>\nint main(void){return 0;}\n' |
       $CC -x c - -lz -o /dev/null 2>/dev/null && echo 1)
for h in fuzz/*.c; do
    grep -q LLVMFuzzerTestOneInput "$h" || continue
    t=$(basename "$h" .c)
    [ -d "corpus/$t" ] || continue
    zdef=""; zlib_ld=""
    if { [ "$t" = inflate ] || [ "$t" = deflate ]; } && [ -n "$zlib" ]; then zdef=-DALK_HAVE_ZLIB; zlib_ld=-lz; fi
    $CC $COV -I. $zdef "$h" tests/replay_main.c "$dir/libalk.a" -o "$dir/replay_$t" $zlib_ld
    "$dir/replay_$t" -q "corpus/$t"
done

# (lcov 1.16 with this gcc prints Perl "redefined" noise; drop only that)
lcov $RC --quiet --capture --directory "$dir" --output-file "$dir/all.info" \
    2>&1 | grep -v 'redefined at' >&2 || true
root=$(pwd)
for h in "$@"; do
    lcov $RC --quiet --extract "$dir/all.info" "$root/$h" \
        --output-file "$dir/$(basename "$h" .h).info"
done
genhtml $RC --quiet --output-directory "$dir/html" \
    $(for h in "$@"; do echo "$dir/$(basename "$h" .h).info"; done)
for h in "$@"; do
    info="$dir/$(basename "$h" .h).info"
    awk -v h="$h" -F: '
        /^LH:/ { lh += $2 } /^LF:/ { lf += $2 }
        /^BRH:/ { bh += $2 } /^BRF:/ { bf += $2 }
        END {
            printf "%s: lines %.1f%% (%d/%d), branches %.1f%% (%d/%d)\n", h,
                lf ? 100 * lh / lf : 0, lh, lf, bf ? 100 * bh / bf : 0, bh, bf
        }' "$info"
done
echo "HTML report: $dir/html/index.html"

#!/bin/sh
# quickstarts.sh HEADER... - every QUICK START in the headers' top comments
# is a program: cut out of the comment (the lines after "QUICK START" up to
# the next heading, less their " *   " margin) and compiled as C99 with gcc
# and clang and as C++11 with g++ and clang++, -Wall -Wextra -Wpedantic
# -Werror, so the docs cannot drift from the API. Prints one line per
# build and "quickstart: P passed, F failed".
set -u
B=${B:-build}
dir="$B/quickstart"
mkdir -p "$dir"
pass=0
fail=0
for h in "$@"; do
    n=0
    for start in $(grep -n '^ \* \(SESSION \)\{0,1\}QUICK START' "$h" | cut -d: -f1); do
        n=$((n + 1))
        src="$dir/$(basename "$h" .h)-$n.c"
        awk -v s="$start" 'NR > s && /^ \* [A-Z][A-Z][A-Z]/ { exit }
            NR > s { if (!sub(/^ \*   /, "")) sub(/^ \* *$/, ""); print }' "$h" > "$src"
        if [ "$(grep -c . "$src")" -lt 3 ]; then
            echo "FAIL  $h quick start $n  (nothing to compile)"
            fail=$((fail + 1))
            continue
        fi
        for cc in "${CC:-cc} -std=c99" "${CLANG:-clang} -std=c99" \
                  "${CXX:-c++} -std=c++11 -x c++" "${CLANGXX:-clang++} -std=c++11 -x c++"; do
            # shellcheck disable=SC2086
            if $cc -Wall -Wextra -Wpedantic -Werror -I. -c "$src" \
                   -o "$src.o" > "$src.log" 2>&1; then
                echo "ok    $h quick start $n: $cc"
                pass=$((pass + 1))
            else
                echo "FAIL  $h quick start $n: $cc"
                sed 's/^/      /' "$src.log" | head -20
                fail=$((fail + 1))
            fi
        done
    done
done
echo "quickstart: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

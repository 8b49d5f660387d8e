#!/bin/sh
# compile_matrix.sh HEADER... - every header, every way a user builds it.
#
# For each header (its macro prefix is its upper-cased base name:
# alkcodec.h -> ALKCODEC_IMPLEMENTATION, ALKCODEC_STATIC):
#   gcc and clang, C99 pedantic with the project warnings:
#     declarations only / implementation / _STATIC implementation /
#     implementation included twice (the double-implementation guard) /
#     implementation with NDEBUG (asserts compiled out)
#   g++ (C++11): declarations only / implementation
#   all present headers together under ALK_IMPLEMENTATION (gcc, g++)
# Prints one line per combination and "compile: P passed, F failed".
set -u
CC=${CC:-cc}
CLANG=${CLANG:-clang}
CXX=${CXX:-c++}
B=${B:-build}
WARN="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wconversion"
WARNXX="-std=c++11 -Wall -Wextra -Wpedantic -Werror -Wshadow"
dir="$B/compile"
mkdir -p "$dir"
pass=0
fail=0

# try LABEL COMPILER FLAGS LANG SOURCE-TEXT
try() {
    label=$1; cc=$2; flags=$3; lang=$4; text=$5
    src="$dir/$(echo "$label" | tr ' /+.' '____').$lang"
    printf '%s\n' "$text" > "$src"
    if ! command -v "$cc" >/dev/null 2>&1; then
        echo "FAIL  $label  ($cc not found)"
        fail=$((fail + 1))
        return
    fi
    # shellcheck disable=SC2086
    if "$cc" $flags -I. -c "$src" -o "$src.o" > "$src.log" 2>&1; then
        echo "ok    $label"
        pass=$((pass + 1))
    else
        echo "FAIL  $label"
        sed 's/^/      /' "$src.log" | head -20
        fail=$((fail + 1))
    fi
}

# refused LABEL COMPILER FLAGS LANG EXPECTED SOURCE-TEXT - the build must
# fail with EXPECTED in its messages (a promised #error), and without an
# implicit declaration (what a guard that never fires gives instead).
refused() {
    label=$1; cc=$2; flags=$3; lang=$4; expect=$5; text=$6
    src="$dir/$(echo "$label" | tr ' /+.<>' '______').$lang"
    printf '%s\n' "$text" > "$src"
    # shellcheck disable=SC2086
    if "$cc" $flags -I. -c "$src" -o "$src.o" > "$src.log" 2>&1; then
        echo "FAIL  $label  (compiled; expected: $expect)"
        fail=$((fail + 1))
    elif grep -q "$expect" "$src.log" && ! grep -q "implicit declaration" "$src.log"; then
        echo "ok    $label  (refused as documented)"
        pass=$((pass + 1))
    else
        echo "FAIL  $label  (failed otherwise than with: $expect)"
        sed 's/^/      /' "$src.log" | head -20
        fail=$((fail + 1))
    fi
}

use='int alk_compile_check(void); int alk_compile_check(void) { return 0; }'
all_includes=""
for h in "$@"; do
    m=$(basename "$h" .h | tr 'a-z' 'A-Z')
    inc="#include \"$h\""
    all_includes="$all_includes
$inc"
    for c in "$CC" "$CLANG"; do
        try "$h $c c99 declarations" "$c" "$WARN" c "$inc
$use"
        try "$h $c c99 implementation" "$c" "$WARN" c "#define ${m}_IMPLEMENTATION
$inc
$use"
        try "$h $c c99 static" "$c" "$WARN" c "#define ${m}_STATIC
#define ${m}_IMPLEMENTATION
$inc
$use"
        try "$h $c c99 included twice" "$c" "$WARN" c "#define ${m}_IMPLEMENTATION
$inc
$inc
$use"
        # release builds: a variable used only by an assert must not warn
        try "$h $c c99 implementation NDEBUG" "$c" "$WARN -DNDEBUG" c "#define ${m}_IMPLEMENTATION
$inc
$use"
    done
    try "$h $CXX c++11 declarations" "$CXX" "$WARNXX" cc "$inc
$use"
    try "$h $CXX c++11 implementation" "$CXX" "$WARNXX" cc "#define ${m}_IMPLEMENTATION
$inc
$use"
done
# qcow2w.h's POSIX executor needs pread/fdatasync: a strict C99 file that
# includes other headers first asks for POSIX itself, as documented.
try "all headers $CC ALK_IMPLEMENTATION" "$CC" "$WARN" c "#define _POSIX_C_SOURCE 200809L
#define ALK_IMPLEMENTATION
$all_includes
$use"
try "all headers $CXX ALK_IMPLEMENTATION" "$CXX" "$WARNXX" cc "#define ALK_IMPLEMENTATION
$all_includes
$use"
# Include orders (qcow2w.h's POSIX executor under strict C99, no -D): a
# libc header first is too late for qcow2w.h to ask for POSIX, so the
# documented #error must fire; qcow2w.h first, or Q2W_NO_STDIO, builds.
case " $* " in *" qcow2w.h "*)
    posix_error="the POSIX executor needs _POSIX_C_SOURCE"
    for c in "$CC" "$CLANG"; do
        refused "qcow2w.h after <stdio.h> $c c99" "$c" "$WARN" c "$posix_error" \
            "#include <stdio.h>
#define QCOW2W_IMPLEMENTATION
#include \"qcow2w.h\"
$use"
        refused "all headers alphabetical $c c99 ALK_IMPLEMENTATION" "$c" "$WARN" c \
            "$posix_error" "#define ALK_IMPLEMENTATION
$all_includes
$use"
        try "qcow2w.h first then <stdio.h> $c c99" "$c" "$WARN" c "#define QCOW2W_IMPLEMENTATION
#include \"qcow2w.h\"
#include <stdio.h>
$use"
        try "qcow2w.h after <stdio.h> $c c99 Q2W_NO_STDIO" "$c" "$WARN" c "#include <stdio.h>
#define Q2W_NO_STDIO
#define QCOW2W_IMPLEMENTATION
#include \"qcow2w.h\"
$use"
        try "qcow2w.h after <stdio.h> $c gnu99" "$c" "-std=gnu99 -Wall -Wextra -Werror" c "#include <stdio.h>
#define QCOW2W_IMPLEMENTATION
#include \"qcow2w.h\"
$use"
    done ;;
esac
# Each header stands alone: the same full licence text in every one.
first=""
for h in "$@"; do
    sed -n '/^ \* LICENCE:/,/^ \*\//p' "$h" > "$dir/licence-$(basename "$h")"
    if [ ! -s "$dir/licence-$(basename "$h")" ]; then
        echo "FAIL  $h licence text  (missing)"; fail=$((fail + 1))
    elif [ -n "$first" ] && ! cmp -s "$dir/licence-$(basename "$first")" "$dir/licence-$(basename "$h")"; then
        echo "FAIL  $h licence text  (differs from $first)"; fail=$((fail + 1))
    else
        echo "ok    $h licence text"; pass=$((pass + 1))
        [ -n "$first" ] || first=$h
    fi
done
echo "compile: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/sh
# compile_matrix.sh HEADER... - every header, every way a user builds it.
#
# For each header (its macro prefix is its upper-cased base name:
# alkcodec.h -> ALKCODEC_IMPLEMENTATION, ALKCODEC_STATIC):
#   gcc and clang, C99 pedantic with the project warnings:
#     declarations only / implementation / _STATIC implementation /
#     implementation included twice (the double-implementation guard) /
#     implementation with NDEBUG (asserts compiled out) / at -O2
#   g++ (C++11): declarations only / implementation / at -O1
#   all present headers together under ALK_IMPLEMENTATION (gcc, g++)
#   include orders for qcow2w.h's POSIX executor; every QUICK START
#   compiled (C and C++, gcc and clang), and one that is a whole program
#   linked (against its implementation compiled apart when it includes the
#   declarations only) and run, as C and as C++; alktunnel.h's layer and
#   optimisation switches; the licence text in every header
# Prints one line per combination and "compile: P passed, F failed".
set -u
CC=${CC:-cc}
CLANG=${CLANG:-clang}
CXX=${CXX:-c++}
CLANGXX=${CLANGXX:-clang++}
B=${B:-build}
WARN="-std=c99 -Wall -Wextra -Wpedantic -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wconversion"
WARNXX="-std=c++11 -Wall -Wextra -Wpedantic -Werror -Wshadow"
dir="$B/compile"
mkdir -p "$dir"
pass=0
fail=0

# compile LABEL COMPILER FLAGS LANG SOURCE-TEXT - writes the source and
# builds it; the compiler's messages go to $src.log, its status is returned.
compile() {
    src="$dir/$(echo "$1" | tr ' /+.<>' '______').$4"
    printf '%s\n' "$5" > "$src"
    # shellcheck disable=SC2086
    "$2" $3 -I. -c "$src" -o "$src.o" > "$src.log" 2>&1
}

# passed LABEL [NOTE] / failed LABEL [NOTE] [LOG] - one line and the count;
# a failure shows the head of the compiler's messages.
passed() {
    echo "ok    $1${2:+  ($2)}"
    pass=$((pass + 1))
}
failed() {
    echo "FAIL  $1${2:+  ($2)}"
    [ -z "${3:-}" ] || sed 's/^/      /' "$3" | head -20
    fail=$((fail + 1))
}

# try LABEL COMPILER FLAGS LANG SOURCE-TEXT - the build must succeed. It
# runs in the background, JOBS at a time; settle reports the builds in the
# order they were started, so the output is the same at any JOBS.
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
jobs_q=""   # numbers of the builds started and not yet reported, oldest first
njob=0
try() {
    if ! command -v "$2" >/dev/null 2>&1; then
        settle 0
        failed "$1" "$2 not found"
        return
    fi
    njob=$((njob + 1))
    src="$dir/$(echo "$1" | tr ' /+.<>' '______').$4"
    printf '%s\n' "$5" > "$src"
    printf '%s\n' "$1" > "$dir/job-$njob.label"
    printf '%s\n' "$src" > "$dir/job-$njob.src"
    # shellcheck disable=SC2086
    "$2" $3 -I. -c "$src" -o "$src.o" > "$src.log" 2>&1 &
    eval "pid_$njob=\$!"
    jobs_q="$jobs_q $njob"
    settle $((JOBS - 1))
}
# settle N - wait for the oldest builds and report them until N or fewer run
settle() {
    keep=$1
    while :; do
        # shellcheck disable=SC2086
        set -- $jobs_q
        [ $# -gt "$keep" ] || return 0
        j=$1
        shift
        jobs_q=$*
        eval "pid=\$pid_$j"
        if wait "$pid"; then
            passed "$(cat "$dir/job-$j.label")"
        else
            failed "$(cat "$dir/job-$j.label")" "" "$(cat "$dir/job-$j.src").log"
        fi
    done
}

# refused LABEL COMPILER FLAGS LANG EXPECTED SOURCE-TEXT - the build must
# fail with EXPECTED in its messages (a promised #error), and without an
# implicit declaration (what a guard that never fires gives instead).
refused() {
    settle 0
    if compile "$1" "$2" "$3" "$4" "$6"; then
        failed "$1" "compiled; expected: $5"
    elif grep -q "$5" "$src.log" && ! grep -q "implicit declaration" "$src.log"; then
        passed "$1" "refused as documented"
    else
        failed "$1" "failed otherwise than with: $5" "$src.log"
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
        # optimised, as users build: some warnings come only with the
        # optimiser's analysis (gcc's maybe-uninitialized through an
        # intrinsic's undefined vector reached the C++ unit test at -O1)
        try "$h $c c99 implementation -O2" "$c" "$WARN -O2" c "#define ${m}_IMPLEMENTATION
$inc
$use"
    done
    try "$h $CXX c++11 implementation -O1" "$CXX" "$WARNXX -O1" cc "#define ${m}_IMPLEMENTATION
$inc
$use"
    try "$h $CXX c++11 declarations" "$CXX" "$WARNXX" cc "$inc
$use"
    try "$h $CXX c++11 implementation" "$CXX" "$WARNXX" cc "#define ${m}_IMPLEMENTATION
$inc
$use"
done
# alktunnel.h's documented switches (the CONFIGURATION table in its top
# comment): each layer left out, each optimisation family off, and all of
# them at once - every combination the table lists, with gcc, clang and g++
if [ -f alktunnel.h ] && echo " $* " | grep -q " alktunnel.h "; then
    for sw in "ALKTUNNEL_NO_ROLES" "ALKTUNNEL_NO_PUMPS" \
              "ALKTUNNEL_NO_ROLES ALKTUNNEL_NO_PUMPS" \
              "ALKTUNNEL_NO_FAST_DECODE" "ALKTUNNEL_NO_SIMD" "ALKTUNNEL_NO_SIMD_CRYPTO" \
              "ALKTUNNEL_NO_SIMD_JSON" "ALKTUNNEL_NO_INT128" "ALKTUNNEL_NO_SHA_NI" \
              "ALKTUNNEL_PORTABLE" \
              "ALKTUNNEL_NO_ROLES ALKTUNNEL_NO_PUMPS ALKTUNNEL_NO_FAST_DECODE ALKTUNNEL_NO_SIMD ALKTUNNEL_NO_INT128 ALKTUNNEL_NO_SHA_NI"; do
        defs=$(for d in $sw; do printf '#define %s\n' "$d"; done)
        for c in "$CC" "$CLANG"; do
            try "alktunnel.h $c c99 $sw" "$c" "$WARN" c "$defs
#define ALKTUNNEL_IMPLEMENTATION
#include \"alktunnel.h\"
$use"
        done
        try "alktunnel.h $CXX c++11 $sw" "$CXX" "$WARNXX" cc "$defs
#define ALKTUNNEL_IMPLEMENTATION
#include \"alktunnel.h\"
$use"
    done
    # a layer left out is gone from the API, not only from the code
    refused "alktunnel.h $CC ALKTUNNEL_NO_ROLES: no alkt_relay_server" "$CC" "$WARN" c \
        "alkt_relay_server" "#define ALKTUNNEL_NO_ROLES
#include \"alktunnel.h\"
alkt_relay_server alk_r;"
    refused "alktunnel.h $CC ALKTUNNEL_NO_PUMPS: no alkt_pump" "$CC" "$WARN" c \
        "alkt_pump" "#define ALKTUNNEL_NO_PUMPS
#include \"alktunnel.h\"
alkt_pump alk_p;"
fi
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
# Every QUICK START in the top comments is a program: cut out of the comment
# (the lines after "QUICK START" up to the next heading, less their " *   "
# margin) and built as C99 by gcc and clang and as C++11 by g++ and
# clang++, so the docs cannot drift from the API.
QSWARN="-Wall -Wextra -Wpedantic -Werror"
for h in "$@"; do
    n=0
    for start in $(grep -n '^ \* \(SESSION \)\{0,1\}QUICK START' "$h" | cut -d: -f1); do
        n=$((n + 1))
        text=$(awk -v s="$start" 'NR > s && /^ \* [A-Z][A-Z][A-Z]/ { exit }
            NR > s { if (!sub(/^ \*   /, "")) sub(/^ \* *$/, ""); print }' "$h")
        if [ "$(printf '%s\n' "$text" | grep -c .)" -lt 3 ]; then
            settle 0
            failed "$h quick start $n" "nothing to compile"
            continue
        fi
        try "$h quick start $n $CC c99" "$CC" "-std=c99 $QSWARN" c "$text"
        try "$h quick start $n $CLANG c99" "$CLANG" "-std=c99 $QSWARN" c "$text"
        try "$h quick start $n $CXX c++11" "$CXX" "-std=c++11 $QSWARN" cc "$text"
        try "$h quick start $n $CLANGXX c++11" "$CLANGXX" "-std=c++11 $QSWARN" cc "$text"
        # a whole program is linked and run too: against the implementation
        # compiled apart (as C) when it includes the declarations only
        case $text in *"int main("*) ;; *) continue ;; esac
        settle 0
        m=$(basename "$h" .h | tr 'a-z' 'A-Z')
        impl=""
        case $text in *"#define ${m}_IMPLEMENTATION"*) ;; *)
            printf '#define _POSIX_C_SOURCE 200809L\n#define %s_IMPLEMENTATION\n#include "%s"\n' \
                "$m" "$h" > "$dir/qs_impl_$m.c"
            "$CC" -std=c99 $QSWARN -I. -c "$dir/qs_impl_$m.c" -o "$dir/qs_impl_$m.o" ||
                { failed "$h quick start $n: its implementation object"; continue; }
            impl="$dir/qs_impl_$m.o" ;;
        esac
        for lang in c cc; do
            src="$dir/qs_run_${m}_$n.$lang"
            printf '%s\n' "$text" > "$src"
            if [ $lang = c ]; then cc_=$CC; std=-std=c99; else cc_=$CXX; std=-std=c++11; fi
            # shellcheck disable=SC2086
            if "$cc_" $std $QSWARN -I. "$src" $impl -o "$src.bin" > "$src.log" 2>&1 &&
               out=$(timeout 20 "./$src.bin" 2>&1); then
                passed "$h quick start $n runs ($cc_): $(printf '%s' "$out" | head -1)"
            else
                failed "$h quick start $n runs ($cc_)" "" "$src.log"
            fi
        done
    done
done

settle 0

# The test tree's one shape: what both fuzz/ and tests/ use (the assertion
# machinery, reference models, simulated worlds, the internals headers)
# lives in testkit/; neither folder includes the other's files.
for d in fuzz tests testkit; do
    bad=$(grep -l '#include "\.\./\(fuzz\|tests\)/' $d/*.c $d/*.h 2>/dev/null)
    if [ -n "$bad" ]; then
        failed "$d/ includes across folders (only through testkit/): $(echo $bad)"
    else
        passed "$d/ includes nothing from fuzz/ or tests/ but through testkit/"
    fi
done

# Each header stands alone: the same full licence text in every one.
first=""
for h in "$@"; do
    sed -n '/^ \* LICENCE:/,/^ \*\//p' "$h" > "$dir/licence-$(basename "$h")"
    if [ ! -s "$dir/licence-$(basename "$h")" ]; then
        failed "$h licence text" "missing"
    elif [ -n "$first" ] && ! cmp -s "$dir/licence-$(basename "$first")" "$dir/licence-$(basename "$h")"; then
        failed "$h licence text" "differs from $first"
    else
        passed "$h licence text"
        [ -n "$first" ] || first=$h
    fi
done
echo "compile: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

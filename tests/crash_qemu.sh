#!/bin/sh
# crash_qemu.sh - crashed images from the qcow2_crash harness, judged by
# qemu-img (issue: crash consistency). Usage:
#   sh tests/crash_qemu.sh REPLAY_BINARY SEED RUNS
# Runs the harness in seed mode with QCOW2_CRASH_SAVE set (every run's image
# right after the power loss, before any repair; the backing-file fixture is
# left out: its backing file lives in memory), then for each image:
#   qemu-img check          exit 0 or 3 (clean, or leaks only) - except for
#                           images cut inside a snapshot create or delete
#                           ("-snapshot-window"), where 2 is allowed when
#                           every error is an OFLAG_COPIED one (updated in
#                           place, COPIED and a refcount cannot switch at
#                           once; qemu's own writer leaves the same state)
#   qemu-img check -r leaks exit 0 (for the window images after qemu also
#                           set COPIED right)
# and prints "crash_qemu: N images, P passed, F failed".
set -u
bin=$1; seed=$2; runs=$3
. "$(dirname "$0")/qemu_dir.sh"
qemu_dir crash_qemu
QCOW2_CRASH_SAVE=$dir QCOW2_CRASH_POINTS=$dir/points "$bin" --seed "$seed" --runs "$runs" \
    >"$dir/harness.log" 2>&1 || {
    tail -20 "$dir/harness.log"; echo "crash_qemu: the harness failed"; exit 1; }
# Every run leaves an image but those on the backing-file fixture.
ran=$(wc -l < "$dir/points")
backing=$(grep -c ' backing-file ' "$dir/points")
n=0; pass=0; fail=0; window=0; clean=0; leaky=0; copied=0
for img in "$dir"/*.qcow2; do
    [ -e "$img" ] || continue
    n=$((n + 1))
    out=$(qemu-img check "$img" 2>&1); rc=$?
    ok=1
    case $rc in 0) clean=$((clean + 1)) ;; 3) leaky=$((leaky + 1)) ;;
                2) copied=$((copied + 1)) ;; esac
    case "$img" in
    *-snapshot-window.qcow2)
        window=$((window + 1))
        if [ $rc -eq 2 ] && echo "$out" | grep '^ERROR' | grep -qv 'OFLAG_COPIED'; then ok=0; fi
        [ $rc -eq 0 ] || [ $rc -eq 2 ] || [ $rc -eq 3 ] || ok=0 ;;
    *)
        [ $rc -eq 0 ] || [ $rc -eq 3 ] || ok=0 ;;
    esac
    if [ $ok -eq 1 ]; then
        qemu-img check -r leaks "$img" >/dev/null 2>&1 || ok=0
        qemu-img check "$img" >/dev/null 2>&1 || ok=0
    fi
    if [ $ok -eq 1 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "crash_qemu: $(basename "$img"): check exit $rc"
        echo "$out" | head -5
    fi
done
echo "crash_qemu: qemu-img check exit 0 (clean) $clean, 3 (leaks only) $leaky, 2 (allowed inside a snapshot operation, OFLAG_COPIED only) $copied"
echo "gate: $ran runs, $n crashed images judged by qemu-img check ($backing runs on the backing-file fixture leave none: its backing file lives in memory)"
if [ $((n + backing)) -ne "$ran" ]; then
    echo "crash_qemu: $ran runs but $n images and $backing backing-file runs: $((ran - n - backing)) images missing"
    fail=$((fail + 1))
fi
echo "crash_qemu: $n images ($window cut inside a snapshot operation), $pass passed, $fail failed"
[ $fail -eq 0 ] && [ $n -gt 0 ]

#!/bin/sh
# crash_qemu_jobs.sh - commits and rebases cut by a power loss, judged by
# qemu-img. Usage: sh tests/crash_qemu_jobs.sh REPLAY_BINARY SEED RUNS
# Runs the qcow2_jobs harness in seed mode with a failing batch in every
# run (QCOW2_JOBS_CRASH) and QCOW2_JOBS_SAVE set: each power loss leaves
# the files as they were then (the overlay, its base, a nested root, the
# new backing file). For each qcow2 file among them:
#   qemu-img check          exit 0 or 3 (clean, or leaks only)
#   qemu-img check -r leaks exit 0, then check exit 0
# (the harness itself judges the views after each power loss: the
# overlay's through the file its header names, the snapshots').
# Prints "crash_qemu_jobs: N images, P passed, F failed".
set -u
bin=$1; seed=$2; runs=$3
. "$(dirname "$0")/qemu_dir.sh"
qemu_dir crash_qemu_jobs
QCOW2_JOBS_CRASH=1 QCOW2_JOBS_SAVE=$dir "$bin" --seed "$seed" --runs "$runs" \
    >"$dir/harness.log" 2>&1 || {
    tail -20 "$dir/harness.log"; echo "crash_qemu_jobs: the harness failed"; exit 1; }
n=0; pass=0; fail=0; clean=0; leaky=0; crashes=0
for run in "$dir"/run-*; do
    [ -d "$run" ] || continue
    crashes=$((crashes + 1))
    for img in "$run/top.qcow2" "$run/base.img" "$run/new.img"; do
        [ -e "$img" ] || continue
        [ "$(od -An -c -N 3 "$img" | tr -d ' ')" = "QFI" ] || continue
        n=$((n + 1))
        out=$(qemu-img check -f qcow2 "$img" 2>&1); rc=$?
        case $rc in 0) clean=$((clean + 1)) ;; 3) leaky=$((leaky + 1)) ;; esac
        ok=1
        [ $rc -eq 0 ] || [ $rc -eq 3 ] || ok=0
        if [ $ok -eq 1 ]; then
            qemu-img check -q -f qcow2 -r leaks "$img" >/dev/null 2>&1 || ok=0
            qemu-img check -q -f qcow2 "$img" >/dev/null 2>&1 || ok=0
        fi
        if [ $ok -eq 1 ]; then pass=$((pass + 1)); else
            fail=$((fail + 1))
            echo "crash_qemu_jobs: $(basename "$run")/$(basename "$img"): check exit $rc"
            echo "$out" | head -5
        fi
    done
done
echo "crash_qemu_jobs: qemu-img check exit 0 (clean) $clean, 3 (leaks only) $leaky"
echo "gate: $runs runs, $crashes cut by a power loss (the others ended before their failing batch), $n crashed qcow2 files judged by qemu-img check"
echo "crash_qemu_jobs: $n images, $pass passed, $fail failed"
[ $fail -eq 0 ]

#!/bin/sh
# Demo of the alksim worked example: the ARQ protocol passes a batch of
# simulated transfers over a lossy, duplicating, reordering network; the
# same harness built with the planted bug finds it and shrinks it to a small
# input whose trace shows the failure.
set -eu
B=${B:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
"$B/arq_demo" --seed 1 --runs 300
if "$B/arq_demo_bug" --seed 1 --runs 300 --save "$tmp/min" > "$tmp/out.txt"; then
    echo "the planted bug was not found"; exit 1
fi
head -3 "$tmp/out.txt"
grep -E 'FAILED|transfer' "$tmp/out.txt" | tail -2
size=$(wc -c < "$tmp/min")
echo "planted bug found and shrunk to $size bytes"
[ "$size" -le 64 ] || { echo "shrunk input larger than 64 bytes"; exit 1; }
echo "arq_demo demo: ok"

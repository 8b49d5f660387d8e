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
# docs/alksim.md quotes this run's "shrunk N -> M bytes: ..." line: it must
# be what the demo prints (a changed search or shrinker updates the doc)
line=$(grep '^shrunk ' "$tmp/out.txt" | head -1)
if [ -f docs/alksim.md ] && ! grep -qxF "$line" docs/alksim.md; then
    echo "docs/alksim.md does not quote the demo's line: $line"; exit 1
fi
echo "arq_demo demo: ok"

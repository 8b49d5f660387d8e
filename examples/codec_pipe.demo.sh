#!/bin/sh
# Demo of codec_pipe: real data framed and unframed through pipes, read in
# awkward chunk sizes, compared byte for byte; then the limit refusing a
# line instead of truncating it.
set -eu
B=${B:-build}
bin="$B/codec_pipe"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# Real data: this project's own header, empty lines and all.
cp alkcodec.h "$tmp/in.txt"
for k in 4096 7 1; do
    "$bin" frame < "$tmp/in.txt" | "$bin" unframe --chunk $k > "$tmp/out.txt"
    cmp "$tmp/in.txt" "$tmp/out.txt"
    echo "round trip with $k-byte reads: identical ($(wc -c < "$tmp/in.txt") bytes)"
done

# A firmware-sized limit: a 100-byte line against --max 64 is refused.
awk 'BEGIN { s = ""; for (i = 0; i < 100; i++) s = s "x"; print "short"; print s }' \
    > "$tmp/long.txt"
if "$bin" frame --max 64 < "$tmp/long.txt" > /dev/null 2> "$tmp/err.txt"; then
    echo "expected a refusal"; exit 1
fi
cat "$tmp/err.txt"
grep -q '100 > 64' "$tmp/err.txt"
# And the receiving side refuses a declared length above its own limit.
if "$bin" frame < "$tmp/long.txt" | "$bin" unframe --max 64 > /dev/null 2> "$tmp/err.txt"; then
    echo "expected a refusal"; exit 1
fi
cat "$tmp/err.txt"
grep -q 'declared 100 > max 64 at offset 7' "$tmp/err.txt"
echo "codec_pipe demo: ok"

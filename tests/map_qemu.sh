#!/bin/sh
# map_qemu.sh QCOW2W - `qcow2w map` against `qemu-img map` on the same
# images, both output forms, byte for byte: chains built here (a qcow2
# overlay on a sparse raw file shorter than it, an overlay on a qcow2
# image on a raw file, zero flags with and without a cluster under them,
# compressed clusters, 512 B and 2 MiB clusters, a snapshot applied) and
# every qemu-made image of corpus/qcow2_open. An image one side cannot
# open (qemu: a missing backing file; qcow2w: a feature it refuses as
# documented) is counted, not compared. Prints "map_qemu: N passed, F
# failed".
set -u
tool=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
corpus=$(pwd)/corpus/qcow2_open
. "$(dirname "$0")/qemu_dir.sh"
qemu_dir map_qemu
cd "$dir" || exit 1
truncate -s 6M base.raw
printf 'x' | dd of=base.raw bs=1 seek=1500000 conv=notrunc 2>/dev/null
head -c 1048576 /dev/urandom | dd of=base.raw bs=1M seek=3 conv=notrunc 2>/dev/null
qemu-img create -q -f qcow2 -b base.raw -F raw top.qcow2 10M
qio top.qcow2 "write -P 2 0 64k" "write -z 2M 128k" "write -P 3 4M 192k" "write -z 4160k 64k" \
   "write -P 5 8M 1M" "write -z -u 8448k 64k"
qemu-img create -q -f qcow2 -b base.raw -F raw mid.qcow2 8M
qio mid.qcow2 "write -P 7 1M 512k" "write -z 5M 64k"
qemu-img create -q -f qcow2 -b mid.qcow2 -F qcow2 up.qcow2 12M
qio up.qcow2 "write -P 9 1280k 64k" "write -z 7M 1M" "write -P 4 11M 4k"
qemu-img create -q -f qcow2 -o cluster_size=512 small.qcow2 3M
qio small.qcow2 "write -P 1 0 1M" "write -z 100k 3k" "write -P 2 2M 7k" "write -z -u 2050k 1k"
qemu-img create -q -f qcow2 -o cluster_size=2M big.qcow2 64M
qio big.qcow2 "write -P 1 3M 1k" "write -z 10M 4M" "write -P 6 40M 6M"
head -c 4194304 "$tool" > text.raw
qemu-img convert -q -c -O qcow2 -o cluster_size=4096 text.raw packed.qcow2
qemu-img create -q -f qcow2 -b packed.qcow2 -F qcow2 onpacked.qcow2
qio onpacked.qcow2 "write -P 8 1M 8k"
qemu-img create -q -f qcow2 snap.qcow2 16M
qio snap.qcow2 "write -P 1 0 2M" "write -z 4M 1M"
qemu-img snapshot -c one snap.qcow2
qio snap.qcow2 "write -P 2 512k 64k" "write -P 3 9M 1M"
cp snap.qcow2 snapq.qcow2
"$tool" snapshot apply snap.qcow2 one >/dev/null
qemu-img snapshot -a one snapq.qcow2
pass=0; fail=0; skipped=0
for f in base.raw top.qcow2 mid.qcow2 up.qcow2 small.qcow2 big.qcow2 packed.qcow2 \
         onpacked.qcow2 snap.qcow2 snapq.qcow2 "$corpus"/qemu-*; do
    for out in json human; do
        if ! qemu-img map --output=$out "$f" > q.out 2>/dev/null; then
            # qemu prints no human map of compressed clusters: neither may we
            if [ $out = human ] && ! "$tool" map "$f" > /dev/null 2>&1; then
                pass=$((pass + 1))
            else
                skipped=$((skipped + 1))
            fi
            continue
        fi
        if ! "$tool" map --output=$out "$f" > o.out 2> o.err; then
            if grep -q "unsupported feature" o.err; then skipped=$((skipped + 1)); continue; fi
            fail=$((fail + 1)); echo "map_qemu: $out $f: qcow2w failed: $(cat o.err)"; continue
        fi
        if cmp -s q.out o.out; then pass=$((pass + 1)); else
            fail=$((fail + 1)); echo "map_qemu: $out $f differs (< qemu, > qcow2w):"
            diff q.out o.out | head -8
        fi
    done
done
echo "gate: $((pass + fail)) maps compared, $skipped refused by one side"
echo "map_qemu: $pass passed, $fail failed"
[ $fail -eq 0 ]

#!/bin/sh
# measure_qemu.sh QCOW2W - `qcow2w measure` against `qemu-img measure -O
# qcow2`: --size at several sizes and option sets, and files - a sparse raw
# file, an overlay on it with data and zeroes, every qemu-made image of
# corpus/qcow2_open - each at three cluster sizes. The JSON figures must be
# equal (qemu's "bitmaps" aside); a case one side refuses (qemu cannot open
# the image, or qcow2w refuses it as documented) is counted, not compared.
# Prints "measure_qemu: N passed, F failed".
set -u
tool=$1
. "$(dirname "$0")/qemu_dir.sh"
qemu_dir measure_qemu
truncate -s 100M "$dir/sparse.raw"
printf 'x' | dd of="$dir/sparse.raw" bs=1 seek=5000000 conv=notrunc 2>/dev/null
head -c 3145728 qcow2w.h | dd of="$dir/sparse.raw" bs=1M seek=50 conv=notrunc 2>/dev/null
qemu-img create -q -f qcow2 -b sparse.raw -F raw "$dir/top.qcow2"
qemu-io -f qcow2 "$dir/top.qcow2" -c "write -P 1 70M 1M" -c "write -z 90M 2M" > /dev/null
pass=0; fail=0; skipped=0
one() {   # one OPTS ARGS...: both tools, the same words
    o=$1; shift
    a=$("$tool" measure $o --output=json "$@" 2>/dev/null | tr -d ' \n')
    b=$(qemu-img measure -O qcow2 $o --output=json "$@" 2>/dev/null | tr -d ' \n' |
        sed 's/"bitmaps":[0-9]*,//')
    if [ -z "$a" ] || [ -z "$b" ]; then skipped=$((skipped + 1)); return; fi
    if [ "$a" = "$b" ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "measure_qemu: [$o] $*: qcow2w $a, qemu $b"
    fi
}
for o in "" "-o cluster_size=4096" "-o cluster_size=512,refcount_bits=64" "-o compat=0.10" \
         "-o cluster_size=2M,refcount_bits=1"; do
    for sz in 0 1 1G 100G 1234567; do one "$o" --size "$sz"; done
done
for f in "$dir/sparse.raw" "$dir/top.qcow2" corpus/qcow2_open/qemu-*; do
    for o in "" "-o cluster_size=4096" "-o cluster_size=512"; do one "$o" "$f"; done
done
echo "gate: $((pass + fail)) cases compared, $skipped refused by one side"
echo "measure_qemu: $pass passed, $fail failed"
[ $fail -eq 0 ]

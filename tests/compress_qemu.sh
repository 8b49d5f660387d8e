#!/bin/sh
# compress_qemu.sh QCOW2W - compressed images both ways against qemu-img:
# for each cluster size (512 B, 4 KiB, 64 KiB, 2 MiB), a raw file of text,
# random bytes, runs and zeros (and a short last cluster) is imported with
# `qcow2w import -c` and converted with `qemu-img convert -c`; then
#   qemu-img check of ours clean, qemu-img compare of ours with the raw file,
#   qcow2w export of qemu's image equal to the raw file (we read its
#   compressed clusters), qcow2w check of qemu's clean,
#   and the size of ours against qemu's (printed; a failure over 1.05x).
# Then qcow2w convert and convert -c of a chain (an overlay with data and
# zeroes over the raw file) against qemu-img convert [-c]: checked, equal to
# the chain's view, no backing file, sizes.
# Prints "compress_qemu: N passed, F failed" (one test a case).
set -u
tool=$1
. "$(dirname "$0")/qemu_dir.sh"
qemu_dir compress_qemu
src=$dir/src.raw
# text (the headers), 1 MiB random, 2 MiB of runs, 1 MiB of zeros, a tail
cat qcow2w.h alktunnel.h > "$src"
head -c 1048576 /dev/urandom >> "$src"
awk 'BEGIN { for (i = 0; i < 32768; i++) printf "%c%63s", 65 + i % 26, "" }' >> "$src"
head -c 1048576 /dev/zero >> "$src"
printf 'a short last cluster' >> "$src"
pass=0; fail=0
for cs in 512 4096 65536 2M; do
    bad=""
    "$tool" import -q -c -o cluster_size=$cs "$src" "$dir/ours.qcow2" > /dev/null || bad="$bad import"
    qemu-img convert -c -f raw -O qcow2 -o cluster_size=$cs "$src" "$dir/qemu.qcow2" || bad="$bad convert"
    qemu-img check -q "$dir/ours.qcow2" || bad="$bad check"
    qemu-img compare -q -f raw -F qcow2 "$src" "$dir/ours.qcow2" || bad="$bad compare"
    "$tool" check "$dir/qemu.qcow2" > /dev/null || bad="$bad our-check-of-qemu"
    # (the image's size is the file's rounded up to 512: zeros after it)
    "$tool" export -q "$dir/qemu.qcow2" "$dir/back.raw" > /dev/null &&
        cmp -s -n "$(stat -c %s "$src")" "$dir/back.raw" "$src" &&
        [ "$(tail -c +$(($(stat -c %s "$src") + 1)) "$dir/back.raw" | tr -d '\0' | wc -c)" -eq 0 ] ||
        bad="$bad our-read-of-qemu"
    o=$(stat -c %s "$dir/ours.qcow2"); q=$(stat -c %s "$dir/qemu.qcow2")
    ratio=$(awk -v o="$o" -v q="$q" 'BEGIN { printf "%.3f", o / q }')
    awk -v r="$ratio" 'BEGIN { exit !(r <= 1.05) }' || bad="$bad size"
    echo "compress_qemu: cluster $cs: ours $o bytes, qemu $q bytes ($ratio x)${bad:+ FAILED:$bad}"
    if [ -z "$bad" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    rm -f "$dir/ours.qcow2" "$dir/qemu.qcow2" "$dir/back.raw"
done
# qcow2w convert [-c] of a chain (an overlay with data and zeroes over the
# raw file) against qemu-img convert [-c]: one flat image, the same view
qemu-img create -q -f qcow2 -o cluster_size=4096 -b src.raw -F raw "$dir/top.qcow2"
qemu-io -f qcow2 "$dir/top.qcow2" -c "write -P 7 100k 300k" -c "write -z 1M 256k" \
    -c "write -P 9 4000k 96k" > /dev/null
for c in "" -c; do
    bad=""
    "$tool" convert -q $c "$dir/top.qcow2" "$dir/ours.qcow2" > /dev/null || bad="$bad convert"
    qemu-img convert $c -O qcow2 "$dir/top.qcow2" "$dir/qemu.qcow2" || bad="$bad qemu-convert"
    qemu-img check -q "$dir/ours.qcow2" || bad="$bad check"
    qemu-img compare -q "$dir/top.qcow2" "$dir/ours.qcow2" || bad="$bad compare"
    [ -z "$(qemu-img info "$dir/ours.qcow2" | grep '^backing file')" ] || bad="$bad still-backed"
    o=$(stat -c %s "$dir/ours.qcow2"); q=$(stat -c %s "$dir/qemu.qcow2")
    ratio=$(awk -v o="$o" -v q="$q" 'BEGIN { printf "%.3f", o / q }')
    awk -v r="$ratio" 'BEGIN { exit !(r <= 1.05) }' || bad="$bad size"
    echo "compress_qemu: convert ${c:-(plain)} of a chain: ours $o bytes, qemu $q bytes ($ratio x)${bad:+ FAILED:$bad}"
    if [ -z "$bad" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    rm -f "$dir/ours.qcow2" "$dir/qemu.qcow2"
done
# convert -B: a new overlay holding only what the source itself holds
# (its data, its zeros as zeros), on the source's own backing file - and on
# a middle layer of a longer chain (zero flags over data there, a cluster
# size 8 times the source's): it must read as the source, as qemu-img
# convert -B's does; checked by qemu-img; the sizes compared
qemu-img create -q -f qcow2 -o cluster_size=512 -b top.qcow2 -F qcow2 "$dir/up.qcow2"
qemu-io -f qcow2 "$dir/up.qcow2" -c "write -z 150k 3k" -c "write -P 5 1100k 1k" \
    -c "write -z 4010k 9k" > /dev/null
for case in "top.qcow2 src.raw raw" "up.qcow2 top.qcow2 qcow2" "up.qcow2 src.raw raw"; do
    set -- $case
    for c in "" -c; do
        bad=""
        "$tool" convert -q $c -B "$2" -F "$3" "$dir/$1" "$dir/ours.qcow2" > /dev/null ||
            bad="$bad convert"
        qemu-img convert $c -O qcow2 -B "$2" -F "$3" "$dir/$1" "$dir/qemu.qcow2" ||
            bad="$bad qemu-convert"
        qemu-img check -q "$dir/ours.qcow2" || bad="$bad check"
        if [ "$1 $2" = "up.qcow2 src.raw" ]; then
            # on another backing file: what up itself holds over src.raw, as
            # qemu-img's (whose -c copies up's whole view, backing and all)
            [ -n "$c" ] || qemu-img compare -q "$dir/qemu.qcow2" "$dir/ours.qcow2" ||
                bad="$bad compare-qemu"
        else
            qemu-img compare -q "$dir/$1" "$dir/ours.qcow2" || bad="$bad compare"
        fi
        [ "$(qemu-img info "$dir/ours.qcow2" | sed -n 's/^backing file: \([^ ]*\).*/\1/p')" = "$2" ] ||
            bad="$bad backing-name"
        o=$(stat -c %s "$dir/ours.qcow2"); q=$(stat -c %s "$dir/qemu.qcow2")
        ratio=$(awk -v o="$o" -v q="$q" 'BEGIN { printf "%.3f", o / q }')
        echo "compress_qemu: convert ${c:-(plain)} -B $2 of $1: ours $o bytes, qemu $q bytes ($ratio x)${bad:+ FAILED:$bad}"
        if [ -z "$bad" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
        rm -f "$dir/ours.qcow2" "$dir/qemu.qcow2"
    done
done
echo "compress_qemu: $pass passed, $fail failed"
[ $fail -eq 0 ]

#!/bin/sh
# amend_qemu.sh QCOW2W - `qcow2w amend -o compat=` against `qemu-img amend`
# on the same images: chains with zero flags (with and without a cluster
# under them) over raw and qcow2 backing files, snapshots whose tables hold
# zero flags, compressed clusters, 512 B and 2 MiB clusters, and every
# qemu-made image of corpus/qcow2_open; each taken to the other version
# and back. Both tools must agree on refusing; what qcow2w makes must pass
# qemu-img check and qcow2w check, read (qemu-img compare) as the source
# and carry the version qemu-img's copy has; its snapshots listed as in
# qemu's copy, each one's view the source's. A source qemu-img check does
# not pass, and what qcow2w refuses as documented (extended L2 entries,
# persistent bitmaps on a downgrade, a dirty image), are counted, not
# compared.
# Prints "amend_qemu: N passed, F failed".
set -u
tool=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
corpus=$(pwd)/corpus/qcow2_open
. "$(dirname "$0")/qemu_dir.sh"
qemu_dir amend_qemu
cd "$dir" || exit 1
truncate -s 6M base.raw
head -c 1048576 /dev/urandom | dd of=base.raw bs=1M seek=3 conv=notrunc 2>/dev/null
qemu-img create -q -f qcow2 -b base.raw -F raw top.qcow2 10M
qio top.qcow2 "write -P 2 0 64k" "write -z 2M 128k" "write -P 3 4M 192k" "write -z 4160k 64k" \
   "write -z -u 3M 64k" "write -z 8448k 64k"
qemu-img create -q -f qcow2 -b top.qcow2 -F qcow2 up.qcow2
qio up.qcow2 "write -z 4M 64k" "write -P 9 5M 4k"
qemu-img create -q -f qcow2 -o cluster_size=512 small.qcow2 3M
qio small.qcow2 "write -P 1 0 1M" "write -z 100k 3k" "write -z -u 2050k 1k"
qemu-img create -q -f qcow2 -o cluster_size=2M big.qcow2 64M
qio big.qcow2 "write -P 1 3M 1k" "write -z 10M 4M" "write -P 6 40M 6M"
qemu-img create -q -f qcow2 snap.qcow2 16M
qio snap.qcow2 "write -P 1 0 2M" "write -z 4M 1M" "write -z 64k 128k"
qemu-img snapshot -c one snap.qcow2
qio snap.qcow2 "write -z 512k 64k" "write -P 3 9M 1M" "write -z 1M 64k"
qemu-img create -q -f qcow2 -b base.raw -F raw snapb.qcow2
qio snapb.qcow2 "write -z 3M 128k" "write -z 0 64k"
qemu-img snapshot -c one snapb.qcow2
qio snapb.qcow2 "write -z 3200k 64k"
head -c 2097152 "$tool" > text.raw
qemu-img convert -q -c -O qcow2 text.raw packed.qcow2
qemu-img create -q -f qcow2 -o compat=0.10 old.qcow2 8M
qio old.qcow2 "write -P 5 1M 1M" "write -z 3M 1M"
qemu-img create -q -f qcow2 -o refcount_bits=64 wide.qcow2 8M
pass=0; fail=0; skipped=0
one() {   # one IMG VERSION: both tools on copies of IMG
    src=$1; v=$2
    cp "$src" a.qcow2; cp "$src" b.qcow2
    qemu-img amend -f qcow2 -o compat="$v" a.qcow2 >/dev/null 2>&1; qa=$?
    "$tool" amend -o compat="$v" b.qcow2 > out 2>&1; qb=$?
    # documented refusals: what qcow2w does not open, persistent bitmaps
    # on a downgrade, a dirty (lazy refcounts) image it must not write
    if grep -q "unsupported feature (extended\|persistent bitmaps\|image is dirty" out; then
        skipped=$((skipped + 1)); return 1
    fi
    if [ $qa -ne 0 ] || [ $qb -ne 0 ]; then
        if [ $qa -ne 0 ] && [ $qb -ne 0 ]; then pass=$((pass + 1)); return 1; fi
        fail=$((fail + 1)); echo "amend_qemu: $src -> $v: qemu-img exit $qa, qcow2w exit $qb: $(cat out)"
        return 1
    fi
    bad=
    qemu-img check -q -f qcow2 b.qcow2 >/dev/null 2>&1 || bad="$bad qemu-img-check"
    "$tool" check b.qcow2 >/dev/null 2>&1 || bad="$bad qcow2w-check"
    qemu-img compare -q -f qcow2 -F qcow2 "$src" b.qcow2 2>/dev/null || bad="$bad compare"
    [ "$(qemu-img info b.qcow2 | grep compat)" = "$(qemu-img info a.qcow2 | grep compat)" ] ||
        bad="$bad version"
    # the snapshots: listed as qemu's copy lists them, each one's view as
    # the source's
    [ "$(qemu-img snapshot -l b.qcow2)" = "$(qemu-img snapshot -l a.qcow2)" ] ||
        bad="$bad snapshot-list"
    for sn in $(qemu-img snapshot -l "$src" | awk 'NR > 2 { print $2 }'); do
        qemu-img convert -l snapshot.name="$sn" -O raw "$src" s1.raw 2>/dev/null
        qemu-img convert -l snapshot.name="$sn" -O raw b.qcow2 s2.raw 2>/dev/null
        cmp -s s1.raw s2.raw || bad="$bad snapshot-$sn"
        rm -f s1.raw s2.raw
    done
    if [ -n "$bad" ]; then fail=$((fail + 1)); echo "amend_qemu: $src -> $v:$bad"; return 1; fi
    pass=$((pass + 1))
}
for f in top.qcow2 up.qcow2 small.qcow2 big.qcow2 snap.qcow2 snapb.qcow2 packed.qcow2 old.qcow2 \
         wide.qcow2 "$corpus"/qemu-*; do
    # (a source qemu-img check does not pass cleanly is not judged)
    qemu-img check -q "$f" >/dev/null 2>&1 || { skipped=$((skipped + 1)); continue; }
    case $(qemu-img info "$f" | sed -n 's/.*compat: //p') in
        0.10) there=1.1 back=0.10 ;;
        *) there=0.10 back=1.1 ;;
    esac
    if one "$f" $there; then
        cp b.qcow2 there.qcow2
        one there.qcow2 $back
    fi
done
echo "gate: $((pass + fail)) amends compared, $skipped refused by one side"
echo "amend_qemu: $pass passed, $fail failed"
[ $fail -eq 0 ]

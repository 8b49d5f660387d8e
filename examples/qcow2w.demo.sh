#!/bin/sh
# Demo of qcow2w: an image is created, written at an odd offset and read
# back; a raw disk with holes is imported and exported unchanged; overlays
# on a qcow2 and on a raw backing file read through to it; a planted leak
# is found and repaired; internal snapshots keep their view while the disk
# is overwritten, export and delete cleanly; a commit and a rebase keep
# what the disk reads; qcow2w io runs a qemu-io
# command stream (and qemu-io, when installed, the same stream on its own
# image, which must come out equal); every image is clean for qcow2w check
# and, when it is installed, for qemu-img check and compare (and qemu-img
# reads our snapshots as we do).
set -eu
B=${B:-build}
bin="$B/qcow2w"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# patch FILE DATA OFFSET: DATA's bytes over FILE at OFFSET (1-byte blocks,
# for short DATA only; the seek itself is one lseek).
# zeros FILE SECTORS: a new file of 512-byte sectors, all a hole.
patch() { dd if="$2" of="$1" bs=1 seek="$3" conv=notrunc 2> /dev/null; }
zeros() { dd if=/dev/null of="$1" bs=512 seek="$2" 2> /dev/null; }

# 1. 64 MiB, 4 KiB clusters; 15 bytes at offset 1000000 (inside a cluster).
"$bin" create "$tmp/a.qcow2" 64M -o cluster_size=4K
printf 'qcow2w was here' > "$tmp/msg"
"$bin" write "$tmp/a.qcow2" 1000000 "$tmp/msg"
"$bin" info "$tmp/a.qcow2"
"$bin" export "$tmp/a.qcow2" "$tmp/a.raw"
dd if="$tmp/a.raw" bs=1 skip=1000000 count=15 2> /dev/null | cmp - "$tmp/msg"
zeros "$tmp/a.want" 131072
patch "$tmp/a.want" "$tmp/msg" 1000000
cmp "$tmp/a.raw" "$tmp/a.want"
echo "export of a.qcow2: 64 MiB of zeros and the message at 1000000"

# 2. A 5 MiB + 512 raw disk: data at 0, at an unaligned offset and in the
# last sector, holes between. Imported (twice: v3 64K, v2 16K clusters)
# and exported back, byte for byte.
zeros "$tmp/r.raw" 10241
dd if=qcow2w.h of="$tmp/r.raw" conv=notrunc 2> /dev/null
dd if=qcow2w.h of="$tmp/r.raw" bs=100 seek=31457 conv=notrunc 2> /dev/null
printf 'the last sector' | dd of="$tmp/r.raw" bs=512 seek=10240 conv=notrunc \
    2> /dev/null
"$bin" import -q "$tmp/r.raw" "$tmp/r.qcow2"
"$bin" import -q "$tmp/r.raw" "$tmp/r2.qcow2" -o compat=0.10,cluster_size=16K
for f in r r2; do
    "$bin" export "$tmp/$f.qcow2" "$tmp/$f.out" > /dev/null
    cmp "$tmp/r.raw" "$tmp/$f.out"
done
echo "import/export round trip: identical ($(wc -c < "$tmp/r.raw") bytes)"

# 3. Overlays: on r.qcow2 (size and format taken from it) and on the raw
# file; the message straddles a cluster boundary, so the rest of both
# clusters is copied up from the backing file.
"$bin" create "$tmp/o.qcow2" -o backing=r.qcow2
"$bin" create "$tmp/o2.qcow2" -b r.raw
"$bin" info "$tmp/o.qcow2" | grep backing
cp "$tmp/r.raw" "$tmp/o.want"
patch "$tmp/o.want" "$tmp/msg" 3211259
for f in o o2; do
    "$bin" write "$tmp/$f.qcow2" 3211259 "$tmp/msg" > /dev/null
    "$bin" export "$tmp/$f.qcow2" "$tmp/$f.raw" > /dev/null
    cmp "$tmp/o.want" "$tmp/$f.raw"
done
echo "overlays read as base + write"

# 4. A leak planted in a.qcow2: one more cluster at the end of the file and
# a refcount of 1 for it in the (first, 16-bit) refcount block.
rt=$("$bin" info "$tmp/a.qcow2" |
    sed -n 's/^refcount table: .* offset \([0-9]*\) .*/\1/p')
rb=$(od -An -tu1 -j "$rt" -N 8 "$tmp/a.qcow2" |
    awk '{ for (i = 1; i <= NF; i++) v = v * 256 + $i } END { print v }')
n=$(( ($(wc -c < "$tmp/a.qcow2") + 4095) / 4096 ))
dd if=/dev/zero of="$tmp/a.qcow2" bs=4096 seek="$n" count=1 conv=notrunc \
    2> /dev/null
printf '\000\001' > "$tmp/one"
patch "$tmp/a.qcow2" "$tmp/one" $((rb + 2 * n))
rc=0
"$bin" check "$tmp/a.qcow2" || rc=$?
test $rc -eq 3
"$bin" check --repair "$tmp/a.qcow2"

# 5. Internal snapshots on a copy of r.qcow2: "before" is taken, the
# message is written over a shared cluster boundary, "after" is taken, more
# is written. Each snapshot exports as the disk was when it was taken, the
# active view as it is now; then the snapshots are deleted.
cp "$tmp/r.qcow2" "$tmp/s.qcow2"
"$bin" snapshot create "$tmp/s.qcow2" before
"$bin" write "$tmp/s.qcow2" 3211259 "$tmp/msg" > /dev/null
"$bin" snapshot create "$tmp/s.qcow2" after > /dev/null
printf 'written after "after"' > "$tmp/msg2"
"$bin" write "$tmp/s.qcow2" 100 "$tmp/msg2" > /dev/null
cp "$tmp/o.want" "$tmp/s.want"
patch "$tmp/s.want" "$tmp/msg2" 100
"$bin" snapshot list "$tmp/s.qcow2"
"$bin" info "$tmp/s.qcow2" | grep '^snapshots: 2$' > /dev/null
"$bin" export "$tmp/s.qcow2" "$tmp/s.before" --snapshot before
"$bin" export "$tmp/s.qcow2" "$tmp/s.after" -s after > /dev/null
"$bin" export "$tmp/s.qcow2" "$tmp/s.now" > /dev/null
cmp "$tmp/r.raw" "$tmp/s.before"     # the export from before the writes
cmp "$tmp/o.want" "$tmp/s.after"
cmp "$tmp/s.want" "$tmp/s.now"
# the active view differs from "before", and only where it was written
# (cmp -l counts bytes from 1)
d=$(cmp -l "$tmp/s.before" "$tmp/s.now" | awk '
    ($1 > 100 && $1 <= 121) || ($1 > 3211259 && $1 <= 3211274) { w++; next }
    { o++ } END { print (w > 0 && o == 0) ? "ok" : "bad" }')
test "$d" = ok
"$bin" check "$tmp/s.qcow2" > /dev/null
rc=0
"$bin" snapshot delete "$tmp/s.qcow2" nosuch 2> /dev/null || rc=$?
test $rc -eq 1
rc=0
"$bin" snapshot create "$tmp/s.qcow2" before 2> /dev/null || rc=$?
test $rc -eq 1
if command -v qemu-img > /dev/null 2>&1; then
    qemu-img snapshot -l "$tmp/s.qcow2"
    for n in before after; do
        qemu-img convert -f qcow2 -l snapshot.name=$n -O raw "$tmp/s.qcow2" \
            "$tmp/s.$n.qemu"
        cmp "$tmp/s.$n" "$tmp/s.$n.qemu"
    done
    qemu-img check -q "$tmp/s.qcow2"
fi
"$bin" snapshot delete "$tmp/s.qcow2" before
"$bin" export "$tmp/s.qcow2" "$tmp/s.after2" -s after > /dev/null
cmp "$tmp/o.want" "$tmp/s.after2"
"$bin" snapshot delete "$tmp/s.qcow2" after
test -z "$("$bin" snapshot list "$tmp/s.qcow2")"
"$bin" info "$tmp/s.qcow2" | grep '^snapshots: 0$' > /dev/null
"$bin" export "$tmp/s.qcow2" "$tmp/s.end" > /dev/null
cmp "$tmp/s.want" "$tmp/s.end"
echo "snapshots: each exports as taken, the active view as written; deleted"

# 6. qcow2w io: a qemu-io command stream on stdin (patterns, a file's bytes
# repeated, zeros over part of a cluster and over a whole one, a discard, a
# flush; reads that check every byte), then more commands with -c. A wrong
# pattern fails with exit 1 and names its line; the image stays clean.
printf 'qcow2w io' > "$tmp/io.src"
cat > "$tmp/io.cmds" << CMDS
write -P 0xaa 0 64k
write -q -P 0x55 65536 4k
write -P 17 100000 3000
write -s $tmp/io.src 200000 10000
write -z 4096 8192
write -P 0x33 1M 256k
write -z 0x120000 64k
discard 1M 64k
flush
write 2M 4k
read -P 0xaa 0 4k
read -q -P 0 4096 8192
read -P 0xaa 12288 53248
read -P 0x55 65536 4k
read -P 17 100000 3000
read -P 0 1M 64k
read -P 0x33 0x110000 64k
read -P 0 0x120000 64k
read -P 0x33 0x130000 64k
read -P 0xcd 2M 4k
CMDS
"$bin" create "$tmp/io.qcow2" 4M > /dev/null
"$bin" io "$tmp/io.qcow2" < "$tmp/io.cmds"
"$bin" export "$tmp/io.qcow2" "$tmp/io.raw" > /dev/null
printf 'qcow2w ioqcow2w io' > "$tmp/io.want"
dd if="$tmp/io.raw" bs=1 skip=200000 count=18 2> /dev/null |
    cmp - "$tmp/io.want"
if command -v qemu-io > /dev/null 2>&1; then
    # the same stream through qemu-io on an image qemu-img made: its own
    # pattern checks pass, and the two images read the same
    qemu-img create -q -f qcow2 "$tmp/io-qemu.qcow2" 4M
    qemu-io -f qcow2 "$tmp/io-qemu.qcow2" < "$tmp/io.cmds" > "$tmp/io-qemu.out"
    if grep -i 'fail\|error\|not found' "$tmp/io-qemu.out"; then exit 1; fi
    qemu-img compare -q -f qcow2 -F qcow2 "$tmp/io.qcow2" "$tmp/io-qemu.qcow2"
fi
"$bin" io -q "$tmp/io.qcow2" -c 'write -P 0x11 3M 4k' -c flush \
    -c 'read -P 0x11 3M 4k' -c 'write -zq 3M 1000' -c 'read -P 0 3M 1000' \
    -c 'read -P 0x11 3146728 3096'
"$bin" io -n "$tmp/io.qcow2" -c 'write -P 0x22 0x380000 1k' -c flush |
    grep '^io: 2 commands: 1 writes (1 KiB), 0 reads (0 B), 0 zeroes,' \
        > /dev/null
rc=0
printf 'read -P 0xaa 0 4k\n\n# a comment\nread -P 0xab 0 4k\nread 0 1\n' |
    "$bin" io "$tmp/io.qcow2" > "$tmp/io.out" 2> "$tmp/io.err" || rc=$?
test $rc -eq 1
grep '^qcow2w: io: line 4: pattern verification failed at offset 0 ' \
    "$tmp/io.err" > /dev/null
test ! -s "$tmp/io.out"
rc=0
"$bin" io "$tmp/io.qcow2" -c 'read -P 0 3M 1' -c 'read -P 0x33 3M 1' \
    2> "$tmp/io.err" || rc=$?
test $rc -eq 1
grep '^qcow2w: io: -c 2: pattern verification failed' "$tmp/io.err" \
    > /dev/null
"$bin" check "$tmp/io.qcow2" > /dev/null
if command -v qemu-io > /dev/null 2>&1; then
    for c in 'read -P 0xaa 0 4k' 'read -P 0 0x1000 0x2000' \
             'read -P 0x11 3146728 3096' 'read -P 0x22 0x380000 1k'; do
        out=$(qemu-io -f qcow2 -c "$c" "$tmp/io.qcow2")
        case $out in *"Pattern verification failed"*) exit 1 ;; esac
    done
    # and qemu-io does see a wrong one
    rc=0
    out=$(qemu-io -f qcow2 -c 'read -P 0xab 0 4k' "$tmp/io.qcow2") || rc=$?
    case $out in *"Pattern verification failed"*) ;; *) exit 1 ;; esac
    test $rc -ne 0
fi
echo "io: a qemu-io command stream, read back with every byte checked"

# 7. Commit and rebase. An overlay on a copy of r.qcow2 gets the message
# and is committed: the base then exports as base + message, and so does
# the emptied overlay (it reads through). o2 (on r.raw) is rebased onto a
# raw file of zeros - what differs is copied in first, so it still exports
# the same - and then flattened: no backing file, the same bytes.
cp "$tmp/r.qcow2" "$tmp/cb.qcow2"
"$bin" create "$tmp/c.qcow2" -b cb.qcow2 -F qcow2 > /dev/null
"$bin" write "$tmp/c.qcow2" 3211259 "$tmp/msg" > /dev/null
"$bin" commit "$tmp/c.qcow2"
for f in cb c; do
    "$bin" export "$tmp/$f.qcow2" "$tmp/$f.raw" > /dev/null
    cmp "$tmp/o.want" "$tmp/$f.raw"
done
cp "$tmp/o2.qcow2" "$tmp/rb.qcow2"
zeros "$tmp/zero.raw" 10241
"$bin" rebase -q -b zero.raw -F raw "$tmp/rb.qcow2"
"$bin" info "$tmp/rb.qcow2" | grep '^backing file: zero.raw' > /dev/null
"$bin" export "$tmp/rb.qcow2" "$tmp/rb.raw" > /dev/null
cmp "$tmp/o.want" "$tmp/rb.raw"
"$bin" rebase -b "" "$tmp/rb.qcow2"
if "$bin" info "$tmp/rb.qcow2" | grep '^backing file' > /dev/null; then exit 1; fi
"$bin" export "$tmp/rb.qcow2" "$tmp/rb.flat" > /dev/null
cmp "$tmp/o.want" "$tmp/rb.flat"
echo "commit: base and overlay read as base + write; rebase and flatten: the same bytes"
# grown by 1 MiB (qemu-img resize's spelling): the new megabyte reads as
# zeros, the rest as before; a shrink is refused
"$bin" resize "$tmp/rb.qcow2" +1M > /dev/null
"$bin" info --output=json "$tmp/rb.qcow2" | grep '"virtual-size": 6291968,' > /dev/null
"$bin" export "$tmp/rb.qcow2" "$tmp/rb.big" > /dev/null
cmp -n 5243392 "$tmp/o.want" "$tmp/rb.big"
test "$(tail -c 1048576 "$tmp/rb.big" | tr -d '\0' | wc -c)" -eq 0
if "$bin" resize "$tmp/rb.qcow2" 1M 2> /dev/null; then exit 1; fi
echo "resize: grown by 1 MiB of zeros; a shrink refused"

for f in a r r2 o o2 s io cb c rb; do
    "$bin" check "$tmp/$f.qcow2" > /dev/null
done
echo "qcow2w check: every image clean"

if command -v qemu-img > /dev/null 2>&1; then
    for f in a r r2 o o2 s io cb c rb; do
        qemu-img check -q "$tmp/$f.qcow2"
    done
    test -z "$(qemu-img snapshot -l "$tmp/s.qcow2")"
    qemu-img compare -q -f qcow2 -F raw "$tmp/r.qcow2" "$tmp/r.raw"
    qemu-img compare -q -f qcow2 -F raw "$tmp/o.qcow2" "$tmp/o.raw"
    qemu-img compare -q -f qcow2 -F raw "$tmp/o2.qcow2" "$tmp/o.want"
    echo "qemu-img check: every image clean; compare: images equal exports"
else
    echo "qemu-img is absent: its check and compare were skipped"
fi
echo "qcow2w demo: ok"

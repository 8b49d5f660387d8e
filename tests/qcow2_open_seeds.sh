#!/bin/sh
# Regenerates corpus/qcow2_open/qemu-*: small images made by qemu-img and
# qemu-io (qemu 7.2) with a spread of options, as seeds for the qcow2_open
# target. Each is cut to 256 KiB (the target's input limit) and gets 8 tail
# bytes that steer the target's small write. Not run by the gate (qemu's
# output may change between versions); the committed files are the seeds.
set -eu
out=${1:-corpus/qcow2_open}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$out"
n=0
mk() { # name, create options, size, qemu-io commands...
    name=$1; opts=$2; size=$3; shift 3
    img="$tmp/$name.qcow2"
    qemu-img create -q -f qcow2 -o "$opts" "$img" "$size"
    for c in "$@"; do qemu-io -f qcow2 -c "$c" "$img" > /dev/null; done
    head -c 262136 "$img" > "$out/qemu-$name"
    printf '\001\002\003\004\005\006\007\010' >> "$out/qemu-$name"
    n=$((n + 1))
}
mk v3-64k cluster_size=65536 1M
mk v3-64k-data cluster_size=65536 1M 'write -P 0x5a 4096 8192'
mk v2-64k compat=0.10 1M 'write -P 0x11 0 512'
mk v3-512 cluster_size=512 256K 'write -P 0x22 1000 3000' 'write -z 8192 4096'
mk v3-512-rc1 cluster_size=512,refcount_bits=1 128K 'write -P 0x33 0 4096'
# no data: a snapshot can be made at 1-bit refcounts, and after the write
# its delete sees clusters at the largest refcount there is
mk v3-512-rc1-empty cluster_size=512,refcount_bits=1 128K
mk v3-512-rc64 cluster_size=512,refcount_bits=64 128K 'write -P 0x44 512 2048'
mk v3-4k-rc8 cluster_size=4096,refcount_bits=8 1M 'write -P 0x55 0 12288' 'discard 4096 4096'
mk v2-4k cluster_size=4096,compat=0.10 1M 'write -P 0x66 8192 4096'
mk v3-4k-lazy cluster_size=4096,lazy_refcounts=on 1M 'write -P 0x77 0 4096'
mk v3-4k-zeroalloc cluster_size=4096 1M 'write -P 0x12 0 16384' 'write -z 4096 8192'
mk v3-extl2 cluster_size=65536,extended_l2=on 1M
mk v3-2m cluster_size=2097152 4M
# an L1 of 69 entries (552 bytes: two 512-byte clusters, one if counted
# 7 bytes an entry), and a one-cluster hole between used clusters
mk v3-512-l1-two-clusters cluster_size=512 2200K 'write -P 0x13 0 4096'
mk v3-512-hole cluster_size=512 256K 'write -P 0x14 0 1536' 'discard 512 512'
# a disk of no bytes: every range but the empty one is outside it
mk v3-64k-size-0 cluster_size=65536 0
# an L1 of nine 512-byte clusters (more than 16 ops copy at once)
mk v3-512-l1-nine-clusters cluster_size=512 18M 'write -P 0x15 0 4096' 'write -P 0x16 17825792 4096'
qemu-img create -q -f raw "$tmp/base.raw" 1M
mk v3-backing-raw cluster_size=4096,backing_file="$tmp/base.raw",backing_fmt=raw 1M 'write -P 0x21 512 512'
qemu-img create -q -f qcow2 -o cluster_size=4096 "$tmp/c.qcow2" 1M
qemu-io -f qcow2 -c 'write -P 0x31 0 65536' "$tmp/c.qcow2" > /dev/null
qemu-img snapshot -c s1 "$tmp/c.qcow2"
qemu-io -f qcow2 -c 'write -P 0x32 0 4096' "$tmp/c.qcow2" > /dev/null
head -c 262136 "$tmp/c.qcow2" > "$out/qemu-v3-4k-snapshot"
printf '\001\002\003\004\005\006\007\010' >> "$out/qemu-v3-4k-snapshot"
qemu-img convert -q -c -f raw -O qcow2 -o cluster_size=4096 "$tmp/base.raw" "$tmp/comp.qcow2" 2>/dev/null || true
dd if=/dev/zero bs=4096 count=4 2>/dev/null | tr '\0' 'x' > "$tmp/x.raw"
qemu-img convert -q -c -f raw -O qcow2 -o cluster_size=4096 "$tmp/x.raw" "$tmp/comp.qcow2"
head -c 262136 "$tmp/comp.qcow2" > "$out/qemu-v3-4k-compressed"
printf '\001\002\003\004\005\006\007\010' >> "$out/qemu-v3-4k-compressed"
# Images qcow2w must not damage (tests/test_qcow2w.c reads these too):
# persistent bitmaps with data clusters (the bitmap is enabled, so the
# writes after it set bits), compressed clusters held by a snapshot and
# written over afterwards, a lazy-refcount image left dirty by an abort,
# a v2 image with snapshots, zstd compression.
seed() { # name, image
    head -c 262136 "$2" > "$out/qemu-$1"
    printf '\001\002\003\004\005\006\007\010' >> "$out/qemu-$1"
    n=$((n + 1))
}
qemu-img create -q -f qcow2 -o cluster_size=4096 "$tmp/bm.qcow2" 1M
qemu-io -f qcow2 -c 'write -P 0x41 0 8192' "$tmp/bm.qcow2" > /dev/null
qemu-img bitmap --add "$tmp/bm.qcow2" bm0
qemu-io -f qcow2 -c 'write -P 0x42 65536 4096' -c 'write -P 0x43 524288 4096' \
    "$tmp/bm.qcow2" > /dev/null
qemu-img bitmap --add -g 65536 "$tmp/bm.qcow2" bm1
seed v3-4k-bitmaps "$tmp/bm.qcow2"
dd if=/dev/zero bs=4096 count=16 2>/dev/null | tr '\0' 'c' > "$tmp/c.raw"
printf 'hello' | dd of="$tmp/c.raw" bs=1 seek=20000 conv=notrunc 2>/dev/null
qemu-img convert -q -c -f raw -O qcow2 -o cluster_size=4096 "$tmp/c.raw" "$tmp/cs.qcow2"
qemu-img resize -q "$tmp/cs.qcow2" 1M
qemu-img snapshot -c s1 "$tmp/cs.qcow2"
qemu-io -f qcow2 -c 'write -P 0x35 4096 1024' "$tmp/cs.qcow2" > /dev/null
seed v3-4k-compressed-snapshot "$tmp/cs.qcow2"
qemu-img create -q -f qcow2 -o cluster_size=4096,lazy_refcounts=on "$tmp/lz.qcow2" 1M
qemu-io -f qcow2 -c 'write -P 0x51 0 16384' -c 'write -P 0x52 262144 4096' \
    -c abort "$tmp/lz.qcow2" > /dev/null 2>&1 || true
seed v3-4k-lazy-dirty "$tmp/lz.qcow2"
qemu-img create -q -f qcow2 -o cluster_size=4096,compat=0.10 "$tmp/v2s.qcow2" 1M
qemu-io -f qcow2 -c 'write -P 0x61 0 8192' "$tmp/v2s.qcow2" > /dev/null
qemu-img snapshot -c s1 "$tmp/v2s.qcow2"
qemu-io -f qcow2 -c 'write -P 0x62 4096 4096' "$tmp/v2s.qcow2" > /dev/null
qemu-img snapshot -c s2 "$tmp/v2s.qcow2"
seed v2-4k-snapshots "$tmp/v2s.qcow2"
if qemu-img convert -q -c -f raw -O qcow2 -o cluster_size=4096,compression_type=zstd \
        "$tmp/c.raw" "$tmp/z.qcow2" 2>/dev/null; then
    seed v3-4k-zstd "$tmp/z.qcow2"
fi
# Text compressed cluster by cluster: streams of hundreds of bytes packed
# one after another, so their descriptors span several sectors.
python3 -c "
import random
random.seed(3)
w = ['alpha', 'beta', 'gamma', 'delta', 'qcow2', 'cluster', 'refcount', 'table',
     'snapshot', 'zlib']
s = ' '.join(random.choice(w) + str(random.randint(0, 999)) for _ in range(9000))
open('$tmp/t.raw', 'wb').write(s.encode()[:65536].ljust(65536, b' '))
"
for cs in 512 4096; do
    qemu-img convert -q -c -f raw -O qcow2 -o cluster_size=$cs "$tmp/t.raw" "$tmp/t$cs.qcow2"
    seed v3-$cs-compressed-text "$tmp/t$cs.qcow2"
done
# The v2 snapshots rewritten with 8 bytes of extra data (the 64-bit VM
# state size alone; the first snapshot's 5, the 32-bit field 0): qemu
# writes 24, but reads 8 as the 64-bit size. The table is repacked in
# place, zeros after it.
python3 - "$out/qemu-v2-4k-snapshots" "$out/qemu-v2-4k-snapshots-extra-8" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
nb, off = struct.unpack('>IQ', b[60:72])
pos, out = off, bytearray()
for i in range(nb):
    e = b[pos:]
    extra = struct.unpack('>I', e[36:40])[0]
    idl, nml = struct.unpack('>HH', e[12:16])
    head = bytearray(e[:40])
    head[32:36] = bytes(4)
    head[36:40] = struct.pack('>I', 8)
    body = bytes(head) + struct.pack('>Q', 5 if i == 0 else 0) + \
        bytes(e[40 + extra:40 + extra + idl + nml])
    out += body + bytes(-len(body) % 8)
    pos += (40 + extra + idl + nml + 7) & ~7
b[off:off + len(out)] = out
b[off + len(out):pos] = bytes(pos - off - len(out))
open(sys.argv[2], 'wb').write(b)
PY
n=$((n + 1))
echo "wrote $((n + 2)) seeds to $out"

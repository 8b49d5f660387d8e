#!/bin/bash
# Regenerates the qcow2_open seeds that reach snapshot create/delete edges
# (stop 36): made by qemu-img / qemu-io 7.2, one edited by the Python step
# below. Not run by the gate (snapshot dates differ run to run; the layout
# does not): the committed files are the seeds. Usage: $0 OUTDIR
set -e
W=${1:?usage: $0 OUTDIR}; mkdir -p "$W"; cd "$W"
nm(){ printf 'snap%02d-%0380d' $1 0 | cut -c1-255; }
# 1. undo-bump after eviction: 10 L2 regions with one incompressible cluster each, then 8 clusters
#    of 440 random bytes + zeros compressed by convert -c with refcount_bits=2: the streams
#    (~450 B) cross host clusters so each host cluster holds exactly 2 descriptors (refcount 2 < 3,
#    CHECK passes; the BUMP meets the 2nd descriptor at 3 -> LIMIT after the 8-slot cache evicted the
#    first L2 tables: UNBUMP must reload them -> Q2W_PENDING inside q2w__snap_create_undo_bump).
python3 - <<'PY'
import random
r=random.Random(7); cs=512; reg=64*cs; buf=bytearray(11*reg)
for i in range(10): buf[i*reg:i*reg+cs]=bytes(r.getrandbits(8) for _ in range(cs))
for j in range(8):
    o=10*reg+j*cs; buf[o:o+440]=bytes(r.getrandbits(8) for _ in range(440))
open('raw.img','wb').write(buf)
PY
qemu-img convert -c -f raw -O qcow2 -o cluster_size=512,refcount_bits=2 raw.img snapshot-undo-bump-after-eviction
# 2. a snapshot named "fz" first in a 21-entry table (255-byte names, 6.5 KiB): the harness creates
#    another "fz" and deletes "fz" - the first one - so the AFTER copy is 13 chunks > 16 ops.
qemu-img create -q -f qcow2 -o cluster_size=512 f.qcow2 64K
qemu-io -c 'write -P 0x5a 0 4k' f.qcow2 >/dev/null
qemu-img snapshot -c fz f.qcow2
for i in $(seq 1 20); do qemu-img snapshot -c "$(nm $i)" f.qcow2; done
mv f.qcow2 snapshot-delete-duplicate-name-first-after-copy-past-op-buffer
# 3. 240 KiB of data, 512 B clusters, 64-bit refcounts (64 clusters per block), one snapshot:
#    no free cluster in the first 8 refcount blocks' ranges; the delete's table run (searched from
#    free_hint 0 after the reopen) passes more blocks than the 8-slot cache holds.
qemu-img create -q -f qcow2 -o cluster_size=512,refcount_bits=64 g.qcow2 240K
qemu-io -c 'write -P 0x33 0 240k' g.qcow2 >/dev/null
qemu-img snapshot -c base g.qcow2
mv g.qcow2 snapshot-delete-table-run-after-eight-full-refcount-blocks
# 4. (bonus) 24 snapshots, the first 6 deleted by qemu, then the live table moved to the end of the
#    file and its old clusters freed and filled with 0xa5 (reloc.py): the delete's new table lands
#    on that stale hole, BEFORE copy 12 chunks > 16 ops.
qemu-img create -q -f qcow2 -o cluster_size=512 t.qcow2 64K
qemu-io -c 'write -P 0x5a 0 4k' t.qcow2 >/dev/null
for i in $(seq 1 24); do qemu-img snapshot -c "$(nm $i)" t.qcow2; done
for k in $(seq 1 6); do qemu-img snapshot -d "$(nm $k)" t.qcow2; done
python3 - t.qcow2 snapshot-delete-before-copy-past-op-buffer-onto-stale-hole <<'PY'
# the live snapshot table moved to the file's end, its old clusters freed
# (refcount 0, 16-bit refcounts) and filled with 0xa5
import struct,sys
src,dst=sys.argv[1:3]
d=bytearray(open(src,'rb').read())
cs=1<<struct.unpack('>I',d[20:24])[0]
rt=struct.unpack('>Q',d[48:56])[0]; rb=struct.unpack('>Q',d[rt:rt+8])[0]
off=struct.unpack('>Q',d[64:72])[0]; nb=struct.unpack('>I',d[60:64])[0]
p=off
for i in range(nb):
    l1o,l1s,idl,nl=struct.unpack('>QIHH',d[p:p+16]); ex=struct.unpack('>I',d[p+36:p+40])[0]
    p+= (40+ex+idl+nl+7)&~7
m=(p-off+cs-1)//cs
n=(len(d)+cs-1)//cs
d+= b'\0'*(n*cs-len(d))
T=bytes(d[off:off+m*cs]) if off+m*cs<=len(d) else bytes(d[off:])+b'\0'*(off+m*cs-len(d))
# T' at EOF
d+=T
for c in range(n,n+m): struct.pack_into('>H',d,rb+2*c,1)
for c in range(off//cs,off//cs+m):
    struct.pack_into('>H',d,rb+2*c,0)
    d[c*cs:(c+1)*cs]=b'\xa5'*cs
struct.pack_into('>Q',d,64,n*cs)
open(dst,'wb').write(d)
print('moved table of',m,'clusters from',off//cs,'to',n)
PY
for f in snapshot-*; do qemu-img check -q "$f"; done
echo "seeds in $W"

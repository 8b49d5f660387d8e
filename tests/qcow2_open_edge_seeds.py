#!/usr/bin/env python3
"""Seeds for corpus/qcow2_open (the input is the image file itself)."""
import struct, sys, os
out = sys.argv[1] if len(sys.argv) > 1 else '.'

def header(cb, size, l1_size, l1_off, rt_off, rt_clusters, autoclear=0, order=4):
    h = b'QFI\xfb' + struct.pack('>IQIIQIIQQIIQQQQII', 3, 0, 0, cb, size, 0,
                                 l1_size, l1_off, rt_off, rt_clusters, 0, 0,
                                 0, 0, autoclear, order, 112)
    return h + bytes(112 - len(h))

def put(buf, off, b):
    buf[off:off + len(b)] = b

# 1. A clean v3 image (512-byte clusters, 16-bit refcounts) whose refcount
#    block is on an odd cluster: header 0, refcount table 1, L1 2, block 3.
cs = 512
img = bytearray(4 * cs)
put(img, 0, header(9, 32768, 1, 2 * cs, cs, 1))
put(img, cs, struct.pack('>Q', 3 * cs))
for c in range(4):
    put(img, 3 * cs + 2 * c, struct.pack('>H', 1))
open(os.path.join(out, 'refcount-block-on-an-odd-cluster'), 'wb').write(img)

# 2. v3, 32 KiB clusters, bitmaps current (autoclear bit 0): header 0,
#    refcount table 1, block 2, bitmap directory 3 (only its first entry in
#    the file). The one entry has 512 KiB + 8 bytes of extra data (allowed
#    up to 1 MiB) and a one-byte name; the directory is exactly that long.
cb = 15; cs = 1 << cb
extra = (1 << 19) + 8
dlen = (24 + extra + 1 + 7) & ~7
img = bytearray(3 * cs + 24)
put(img, 0, header(cb, 0, 0, 0, cs, 1, autoclear=1))
put(img, 112, struct.pack('>II', 0x23852875, 24) + struct.pack('>IIQQ', 1, 0, dlen, 3 * cs))
put(img, cs, struct.pack('>Q', 2 * cs))
for c in range(4):
    put(img, 2 * cs + 2 * c, struct.pack('>H', 1))
put(img, 3 * cs, struct.pack('>QIIBBHI', 0, 0, 0, 1, 16, 1, extra))
open(os.path.join(out, 'bitmap-entry-extra-data-over-512-KiB'), 'wb').write(img)

# 3. Bitmap directory entries with extra data (the spec's entry: 24 bytes,
#    extra_data_size bytes of extra data, the name, zero padding to 8;
#    qemu writes none and refuses any, qcow2w's checker steps over up to
#    1 MiB). v3, 512-byte clusters, bitmaps current: header 0, refcount
#    table 1, block 2 (16-bit), the directory from cluster 3, then per
#    entry its one-entry table and the data cluster that names; every
#    refcount 1, so an image whose directory is walked right checks clean
#    and one walked wrong misses a table (a leak) or reads a bad entry.
#    `short`: the directory's size minus that many bytes (negative: more);
#    the entries are laid out whole either way, the clusters the directory
#    does not cover unreferenced (refcount 0). `in_file`: how many of the
#    directory's clusters the file holds (the tables then follow them).
def bitmap_entry_len(extra, name):
    return (24 + extra + len(name) + 7) & ~7

def bitmap_image(entries, short=0, fill=0, in_file=None):
    cs = 512
    total = sum(bitmap_entry_len(x, n) for x, n in entries)
    dsize = total - short
    dcl = (dsize + cs - 1) // cs            # the directory's clusters
    room = (max(total, dsize) + cs - 1) // cs
    if in_file is not None:
        room = in_file
    first = 3 + room                        # the first table
    nclusters = first + 2 * len(entries)
    img = bytearray(nclusters * cs)
    put(img, 0, header(9, 0, 0, 0, cs, 1, autoclear=1))
    put(img, 112, struct.pack('>II', 0x23852875, 24) +
        struct.pack('>IIQQ', len(entries), 0, dsize, 3 * cs))
    put(img, cs, struct.pack('>Q', 2 * cs))
    used = list(range(3 + min(dcl, room))) + list(range(first, nclusters))
    for c in used:
        put(img, 2 * cs + 2 * c, struct.pack('>H', 1))
    pos = 3 * cs
    for i, (extra, name) in enumerate(entries):
        tab = (first + 2 * i) * cs
        e = struct.pack('>QIIBBHI', tab, 1, 2, 1, 16, len(name), extra)
        e += bytes([fill]) * extra + name
        e += bytes(bitmap_entry_len(extra, name) - len(e))
        e = e[:max(0, first * cs - pos)]    # (only what the file holds)
        put(img, pos, e)
        pos += bitmap_entry_len(extra, name)
        put(img, tab, struct.pack('>Q', tab + cs))
        img[tab + cs] = 0x80 | i
    assert len(img) == nclusters * cs
    return img

def bitmap_seed(name, img):
    open(os.path.join(out, 'bitmap-' + name), 'wb').write(img)

# each extra data size 0..8 on two entries (one-byte and five-byte names:
# 24 + extra + name crosses a multiple of 8 at different sizes), then an
# entry without extra data
for x in range(9):
    bitmap_seed('extra-data-%d-bytes-then-another-entry' % x,
                bitmap_image([(x, b'a'), (x, b'bmfiv'), (0, b'last')]))
# a large one, odd and spanning directory clusters, then two more
bitmap_seed('extra-data-4099-bytes-then-another-entry',
            bitmap_image([(4099, b'big'), (3, b'b'), (0, b'last')]))
# every size in one directory, the extra data not zero (a walk that lands
# inside it reads no valid entry); the directory exactly long enough, one
# byte longer (allowed: its tail is no entry), one byte short (the last
# entry runs past it: reported)
every = [(x, b'n' * (x % 5 + 1)) for x in (0, 1, 2, 3, 4, 5, 6, 7, 8, 4099, 13)]
bitmap_seed('extra-data-every-size-in-one-directory', bitmap_image(every, fill=0xa5))
bitmap_seed('extra-data-every-size-directory-one-byte-longer',
            bitmap_image(every, short=-1, fill=0xa5))
bitmap_seed('extra-data-every-size-directory-one-byte-short',
            bitmap_image(every, short=1, fill=0xa5))
# the directory ends inside the second entry's extra data: its header fits
# (24 + name), its extra data does not
runs_past = [(0, b'a'), (4099, b'big')]
bitmap_seed('extra-data-runs-past-the-directory-end',
            bitmap_image(runs_past, short=sum(bitmap_entry_len(x, n) for x, n in runs_past)
                         - (32 + 64)))
# extra data at the limit (1 MiB: walked) and one byte over it (reported):
# 64 KiB clusters, the directory at cluster 3 with only its entry's head in
# the file (its other 16 clusters past the end: 16 findings, room for the
# one that matters), an entry without a table
cb = 16; cs = 1 << cb
for x, nm in (((1 << 20), '1-MiB'), ((1 << 20) + 1, '1-MiB-and-1-byte')):
    img = bytearray(3 * cs + 32)
    put(img, 0, header(cb, 0, 0, 0, cs, 1, autoclear=1))
    put(img, 112, struct.pack('>II', 0x23852875, 24) +
        struct.pack('>IIQQ', 1, 0, bitmap_entry_len(x, b'm'), 3 * cs))
    put(img, cs, struct.pack('>Q', 2 * cs))
    for c in range(4):
        put(img, 2 * cs + 2 * c, struct.pack('>H', 1))
    put(img, 3 * cs, struct.pack('>QIIBBHI', 0, 0, 0, 1, 16, 1, x))
    bitmap_seed('extra-data-%s' % nm, img)

# 4. Edges of the snapshot table, the header extensions and the repair's
#    header write (issue 41's mutants). v3 with every field of the header
#    given; `base` is a clean image: header 0, refcount table 1, L1 2 (one
#    entry, no L2), block 3 (16-bit), then `extra` more clusters counted.
def header_full(cb, size, l1_size, l1_off, rt_off, rt_clusters, nb_snap=0, snap_off=0,
                incompat=0, compat=0, autoclear=0, order=4, backing=(0, 0)):
    h = b'QFI\xfb' + struct.pack('>IQIIQIIQQIIQQQQII', 3, backing[0], backing[1], cb, size, 0,
                                 l1_size, l1_off, rt_off, rt_clusters, nb_snap, snap_off,
                                 incompat, compat, autoclear, order, 112)
    return h + bytes(112 - len(h))

def base(cb, counted, **kw):
    cs = 1 << cb
    img = bytearray(counted * cs)
    put(img, 0, header_full(cb, 32768, 1, 2 * cs, cs, 1, **kw))
    put(img, cs, struct.pack('>Q', 3 * cs))
    for c in range(counted):
        put(img, 3 * cs + 2 * c, struct.pack('>H', 1))
    return img

def snapshot_entry(l1_off, l1_size, sid, name, extra):
    e = struct.pack('>QIHHIIQII', l1_off, l1_size, len(sid), len(name), 0, 0, 0, 0, len(extra))
    e += extra + sid + name
    return e + bytes(((len(e) + 7) & ~7) - len(e))

def edge_seed(name, img):
    open(os.path.join(out, name), 'wb').write(img)

# a snapshot entry with 1024 bytes of extra data, the most the spec (and
# qemu) allows: 4 KiB clusters, the table at cluster 4, its L1 at 5; the
# open accepts it, so the checker must too
cs = 4096
img = base(12, 6, nb_snap=1, snap_off=4 * cs)
put(img, 4 * cs, snapshot_entry(5 * cs, 1, b'1', b's',
                                struct.pack('>QQ', 0, 32768) + bytes(1024 - 16)))
edge_seed('snapshot-extra-data-1024-bytes', img)
# snapshot ids of 63 bytes (listed) and 64 (q2w_snapshot's id holds 63:
# a get refuses it, Q2W_ERR_LIMIT); 512-byte clusters, table 4, L1 5
cs = 512
for n in (63, 64):
    img = base(9, 6, nb_snap=1, snap_off=4 * cs)
    put(img, 4 * cs, snapshot_entry(5 * cs, 1, b'a' * n, b's', struct.pack('>QQ', 0, 32768)))
    edge_seed('snapshot-id-%d-bytes' % n, img)
# a bitmaps extension of 16 bytes (the spec's is 24; bitmaps current): a
# finding that names no directory (offset 0) and counts no bitmaps, whatever
# the 16 bytes say (here 1 bitmap, a 24-byte directory)
img = base(9, 4, autoclear=1)
put(img, 112, struct.pack('>II', 0x23852875, 16) + struct.pack('>IIQ', 1, 0, 24) +
    struct.pack('>II', 0x6803f857, 48) + struct.pack('>BB46s', 0, 0, b'dirty bit'))
edge_seed('bitmaps-extension-16-bytes', img)
# a backing format of one byte ("r"): the format extension at 112, the end
# of the extensions at 128, the name "b" at 136
img = base(9, 4, backing=(136, 1))
put(img, 112, struct.pack('>II', 0xe2792aca, 1) + b'r' + bytes(7) + bytes(8) + b'b')
edge_seed('backing-format-one-byte', img)
# dirty (incompatible bit 0) with zstd compression (bit 3, compression type
# 1 at byte 104) and a leaked cluster 4: -r all repairs the leak and clears
# the dirty bit only, the compression bit stays
img = base(9, 5, incompat=9)
img[104] = 1
edge_seed('dirty-zstd-with-a-leak', img)
# snapshot tables of 8 and 16 whole 512-byte clusters (one 512-byte entry
# each, no L1): the harness's snapshot create copies the table through
# scratch, two ops a cluster, from the start of a 16-op batch; the copy
# fills its last batch exactly, so the new entry's write must wait for the
# next batch
cs = 512
for n in (8, 16):
    img = base(9, 4 + n, nb_snap=n, snap_off=4 * cs)
    for i in range(n):
        sid = b'%d' % (i + 1); nm = b's%d' % (i + 1)
        ent = snapshot_entry(0, 0, sid, nm, struct.pack('>QQ', 0, 32768) +
                             bytes(512 - 40 - 16 - len(sid) - len(nm)))
        assert len(ent) == 512
        put(img, (4 + i) * cs, ent)
    edge_seed('snapshot-table-of-%d-clusters' % n, img)
# an L2 entry with a reserved bit (bit 1): the read refuses it and the
# check must name it (L2 table at cluster 4, the data at 5)
img = base(9, 6)
put(img, 2 * cs, struct.pack('>Q', 4 * cs | 1 << 63))
put(img, 4 * cs, struct.pack('>Q', 5 * cs | 1 << 63 | 2))
edge_seed('l2-entry-reserved-bit-1', img)
# unsure twice over - an unknown compatible bit (1), then a bitmaps
# extension that does not validate (16 bytes, bitmaps current) - with a
# leaked cluster 4: a repair refuses, naming the first cause (offset 80)
img = base(9, 5, compat=2, autoclear=1)
put(img, 112, struct.pack('>II', 0x23852875, 16) + struct.pack('>IIQ', 1, 0, 24))
edge_seed('unknown-compatible-bit-then-bitmaps-and-a-leak', img)
# 4 KiB clusters: an L1 entry naming an L2 table 512 bytes into cluster 4,
# and an L2 entry (table at 4) naming data 512 bytes into cluster 5 (at
# 512-byte clusters no offset the entries can hold is unaligned): the read
# refuses each and the check must have an UNALIGNED finding at that entry
cs = 4096
img = base(12, 6)
put(img, 2 * cs, struct.pack('>Q', (4 * cs + 512) | 1 << 63))
edge_seed('l1-entry-unaligned-by-512', img)
img = base(12, 6)
put(img, 2 * cs, struct.pack('>Q', 4 * cs | 1 << 63))
put(img, 4 * cs, struct.pack('>Q', (5 * cs + 512) | 1 << 63))
edge_seed('l2-entry-unaligned-by-512', img)
# an L1 entry without COPIED on an L2 table of refcount 1 (512-byte
# clusters, table at 4, data at 5): a repair sets the flag by writing the
# L1 back - and with that write failing, stops there
cs = 512
img = base(9, 6)
put(img, 2 * cs, struct.pack('>Q', 4 * cs))
put(img, 4 * cs, struct.pack('>Q', 5 * cs | 1 << 63))
edge_seed('l1-entry-copied-flag-missing', img)
# no refcount block at all (the table's one entry 0, as a lazy-refcount
# crash can leave it) and cluster 1 unused: header 0, table 2, L1 3 (one
# empty entry); -r all makes the block on cluster 1, the first free one
img = bytearray(4 * cs)
put(img, 0, header_full(9, 32768, 1, 3 * cs, 2 * cs, 1))
edge_seed('no-refcount-block-cluster-1-free', img)
# a snapshot "s" whose L1 table (65 entries, all empty) spans clusters 5
# and 6, and cluster 6 has refcount 0: deleting it must be refused
img = base(9, 7, nb_snap=1, snap_off=4 * cs)
put(img, 4 * cs, snapshot_entry(5 * cs, 65, b'1', b's', struct.pack('>QQ', 0, 32768)))
put(img, 3 * cs + 2 * 6, struct.pack('>H', 0))
edge_seed('snapshot-l1-second-cluster-refcount-0', img)

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

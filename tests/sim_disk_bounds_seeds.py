#!/usr/bin/env python3
"""Seeds for corpus/sim_core: disk geometries and accesses for the disk
bounds check (check_disk_bounds in fuzz/sim_core.c).

Control values are drawn from the end of the input, one byte per small
draw and eight (most significant first) per u64, so a seed is its draws
reversed. The draws: sector size 64 << (0..3), sectors 1..32, cache 1..8,
the number of accesses 0..8, then per access: write (bit 0), length
(0: 0, 1: 1, 2: 2, 3: a sector, 4: size - 1, 5: size, 6: size + 1,
7: SIZE_MAX, 8: a drawn u64), base offset (0: UINT64_MAX - len,
1: UINT64_MAX, 2: size - len, 3: size, 4: size + 1, 5: 0, 6: a drawn u64)
and a step 0..2 (-1, 0, +1) added to it. The sweep every input runs comes
first; these add the geometry and a few wrapped sums of their own.
Usage: sim_disk_bounds_seeds.py OUTDIR"""
import os, sys

out = sys.argv[1] if len(sys.argv) > 1 else '.'
M = (1 << 64) - 1


def seed(name, shift, sectors, pending, accesses):
    draws = bytearray([shift, sectors - 1, pending - 1, len(accesses)])
    for write, which_len, which_base, step, *u64s in accesses:
        draws += bytes([write, which_len, which_base, step + 1])
        for v in u64s:
            draws += (v & M).to_bytes(8, 'big')
    # a payload byte in front keeps the control bytes at the end whatever
    # the core scenario takes from the front
    data = b'\0' + bytes(reversed(draws))
    open(os.path.join(out, 'disk-bounds-' + name), 'wb').write(data)


# one 64-byte sector: size - 1, size and size + 1 are 63, 64, 65
seed('one-sector-of-64-bytes', 0, 1, 1, [
    (1, 2, 2, 1),            # write 2 bytes at size - 2 + 1 = 63: past the end
    (0, 4, 5, 1),            # read size - 1 bytes at 1: exactly to the end
    (1, 1, 1, 0),            # write 1 byte at UINT64_MAX
])
# 16 KiB of 512-byte sectors, sums that wrap past 2^64 to small values
seed('wrapped-sums-on-16-KiB', 3, 32, 8, [
    (1, 8, 6, 0, 16, M - 7),          # 16 at 2^64 - 8: the sum wraps to 8
    (0, 8, 6, 0, 1 << 63, 1 << 63),   # 2^63 at 2^63: the sum wraps to 0
    (1, 8, 6, 0, 16384 + 512, M - 511),  # the sum wraps to exactly the size
    (0, 8, 6, 0, 16384 + 512, M - 510),  # one past it
    (1, 7, 5, 1),                     # SIZE_MAX bytes at 1
    (1, 5, 5, 0),                     # the whole disk at 0
    (0, 6, 5, 0),                     # size + 1 bytes at 0
    (0, 3, 2, -1),                    # a sector ending one byte early
])
# one 512-byte sector: a sector is the whole disk
seed('one-sector-of-512-bytes', 3, 1, 1, [
    (1, 3, 0, 1),            # a sector at UINT64_MAX - 511: sums to 0
    (0, 3, 2, 0),            # a sector at size - 512 = 0: inside
    (1, 0, 4, -1),           # nothing at size: inside
    (0, 0, 4, 0),            # nothing at size + 1: outside
])
# 5 sectors of 128 bytes (640): the other lengths around the end
seed('640-bytes-lengths-around-the-end', 1, 5, 3, [
    (1, 4, 3, -1),           # size - 1 bytes at size - 1: past the end
    (1, 4, 5, 1),            # size - 1 bytes at 1: exactly to the end
    (0, 6, 1, 0),            # size + 1 bytes at UINT64_MAX
    (1, 8, 6, 1, M, 0),      # UINT64_MAX bytes at 1: the sum wraps to 0
    (0, 8, 0, 0, 3),         # 3 bytes at UINT64_MAX - 3
])

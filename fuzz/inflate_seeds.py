#!/usr/bin/env python3
"""inflate_seeds.py - writes corpus/inflate/: raw deflate streams (zlib,
wbits -15, the format of qemu's compressed clusters) for the inflate
target, each preceded by the target's two size bytes. Text, runs, random
bytes and the all-zero cluster, at levels 0, 1, 6, 9 and with the
filtered, Huffman-only, RLE and fixed strategies; cluster-sized outputs
and a few short ones (the output full before the stream ends). Not run by
the gate (zlib's output may change between versions); the committed files
are the seeds."""
import os
import random
import sys
import zlib

out = sys.argv[1] if len(sys.argv) > 1 else "corpus/inflate"
os.makedirs(out, exist_ok=True)
rnd = random.Random(7)
text = (b"qcow2 compressed clusters are raw deflate streams; " * 2000)
# every distance code (1..30) with extra bits that vary, and many match
# lengths: random bytes, then copies from drawn distances inside each
# code's range, random bytes between (so each copy has one source)
bases = (1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257,
         385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289,
         16385, 24577, 32769)
far = bytearray(rnd.getrandbits(8) for _ in range(33000))
while len(far) < 65536:
    code = rnd.randrange(30)
    d = rnd.randrange(bases[code], bases[code + 1])
    length = rnd.choice((3, 4, 7, 10, 11, 18, 19, 34, 35, 66, 67, 130, 131,
                         200, 257, 258))
    start = len(far) - d
    for i in range(length):
        far.append(far[start + i])
    far.extend(rnd.getrandbits(8) for _ in range(7))
datas = {
    "distances": bytes(far[:65536]),
    "text": text[:65536],
    "runs": b"".join(bytes([i % 251]) * (1 + i % 300) for i in range(400))[:65536],
    "random": bytes(rnd.getrandbits(8) for _ in range(4096)),
    "zeros": bytes(65536),
    "mixed": (text[:3000] + bytes(rnd.getrandbits(8) for _ in range(600)) +
              bytes(496))[:4096],
}
strategies = {"default": zlib.Z_DEFAULT_STRATEGY, "filtered": zlib.Z_FILTERED,
              "huffman": zlib.Z_HUFFMAN_ONLY, "rle": zlib.Z_RLE,
              "fixed": zlib.Z_FIXED}


def size_bytes(n):
    """The target's two bytes: bit 15 picks a cluster size (v % 4)."""
    clusters = {512: 0, 4096: 1, 65536: 2, 2 << 20: 3}
    if n in clusters:
        v = 0x8000 | clusters[n]
    else:
        assert n < 0x8000
        v = n
    return bytes([v & 0xff, v >> 8])


n = 0
for name, data in sorted(datas.items()):
    for level in (0, 1, 6, 9):
        for sname, strat in sorted(strategies.items()):
            # level 0: stored blocks - one for the small data, several
            # (zlib cuts them) for a whole 64 KiB of text
            if level == 0 and (sname != "default" or
                               (len(data) > 4096 and name != "text")):
                continue
            if name == "distances" and (level, sname) not in (
                    (1, "fixed"), (6, "default"), (9, "filtered")):
                continue
            c = zlib.compressobj(level, zlib.DEFLATED, -15, 9, strat)
            stream = c.compress(data) + c.flush()
            for want in {len(data), min(len(data), 1000)}:
                if want != len(data) and (level, sname) != (6, "default"):
                    continue
                if want not in (512, 4096, 65536) and want >= 0x8000:
                    continue
                fn = "%s-l%d-%s-%d" % (name, level, sname, want)
                with open(os.path.join(out, fn), "wb") as f:
                    f.write(size_bytes(want) + stream)
                n += 1
print("wrote %d seeds to %s" % (n, out))

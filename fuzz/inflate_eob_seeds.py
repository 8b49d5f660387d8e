#!/usr/bin/env python3
"""inflate_eob_seeds.py - writes the end-of-block seeds of corpus/inflate/
(inflate-eob-*): deflate blocks built bit by bit, each file preceded by the
target's two size bytes, each stream decoded with output lengths one short
of its literals, exactly them and one more. Byte-stable (no zlib involved);
rerun it with the output directory to regenerate them.

A Huffman block ends with its end-of-block code (symbol 256). The seeds:
  missing  - a dynamic block whose literal/length code gives symbol 256 no
             length: zlib refuses the header ("invalid code -- missing
             end-of-block"), whatever the output length; later in a second
             block too, and in a code that also has a length code (257);
  present  - the same block with symbol 256 in its code and the code at its
             end (the neighbour that must decode);
  cut      - that block with the stream ending right before the end-of-
             block code, on a byte boundary (no padding bits that could
             decode as one more symbol): a full output is a success, one
             byte more is "the input ran out";
  after    - the end-of-block code, then the stream ends on a byte boundary
             in a block that is not the last (the next header is missing);
  fixed-*  - cut and after with the fixed code (RFC 1951 3.2.6), whose
             end-of-block code is always there.
The harness compares every one with zlib (inflate, Z_FINISH, as qemu reads
a compressed cluster): same verdict, same kind of failure, same bytes."""
import heapq
import os
import sys


class Bits:
    """LSB-first bit writer (RFC 1951 3.1.1)."""

    def __init__(self):
        self.bits = []

    def put(self, value, n):
        for i in range(n):
            self.bits.append((value >> i) & 1)

    def code(self, code, n):
        """A Huffman code: its most significant bit first."""
        for i in range(n - 1, -1, -1):
            self.bits.append((code >> i) & 1)

    def aligned(self):
        return len(self.bits) % 8 == 0

    def data(self):
        b = self.bits + [0] * (-len(self.bits) % 8)
        return bytes(sum(b[8 * i + j] << j for j in range(8))
                     for i in range(len(b) // 8))


def huffman_lengths(freq, limit):
    """Code lengths for the symbols with a count (a complete code: at least
    two of them); the caller's alphabets are small enough to stay under
    `limit` bits."""
    heap = [(f, i, (s,)) for i, (s, f) in enumerate(sorted(freq.items())) if f]
    assert len(heap) >= 2
    heapq.heapify(heap)
    depth = {s: 0 for _, _, group in heap for s in group}
    n = len(heap)
    while len(heap) > 1:
        f1, _, g1 = heapq.heappop(heap)
        f2, _, g2 = heapq.heappop(heap)
        for s in g1 + g2:
            depth[s] += 1
        heapq.heappush(heap, (f1 + f2, n, g1 + g2))
        n += 1
    assert max(depth.values()) <= limit
    return depth


def canonical(lengths, n):
    """Canonical codes (RFC 1951 3.2.2) for lengths[0..n)."""
    count = [0] * 16
    for s in range(n):
        count[lengths.get(s, 0)] += 1
    count[0] = 0
    code, nxt = 0, [0] * 16
    for bits in range(1, 16):
        code = (code + count[bits - 1]) << 1
        nxt[bits] = code
    out = {}
    for s in range(n):
        ln = lengths.get(s, 0)
        if ln:
            out[s] = (nxt[ln], ln)
            nxt[ln] += 1
    return out


def dynamic_header(w, lit_len, dist_len, nlit, ndist):
    """HLIT, HDIST, HCLEN and the code lengths, zero runs as codes 17/18."""
    seq = [lit_len.get(s, 0) for s in range(nlit)] + \
          [dist_len.get(s, 0) for s in range(ndist)]
    items, i = [], 0
    while i < len(seq):
        run = 1
        while i + run < len(seq) and seq[i + run] == seq[i] and run < 138:
            run += 1
        if seq[i] == 0 and run >= 11:
            items.append((18, run - 11, 7))
        elif seq[i] == 0 and run >= 3:
            items.append((17, run - 3, 3))
        else:
            run = 1
            items.append((seq[i], None, 0))
        i += run
    freq = {}
    for sym, _, _ in items:
        freq[sym] = freq.get(sym, 0) + 1
    cl_len = huffman_lengths(freq, 7)
    order = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)
    hclen = max(4, max(k + 1 for k, s in enumerate(order) if cl_len.get(s)))
    w.put(nlit - 257, 5)
    w.put(ndist - 1, 5)
    w.put(hclen - 4, 4)
    for k in range(hclen):
        w.put(cl_len.get(order[k], 0), 3)
    cl = canonical(cl_len, 19)
    for sym, extra, nbits in items:
        w.code(*cl[sym])
        if nbits:
            w.put(extra, nbits)


def fixed_code(sym):
    if sym < 144:
        return 0x30 + sym, 8
    if sym < 256:
        return 0x190 + sym - 144, 9
    if sym < 280:
        return sym - 256, 7
    return 0xc0 + sym - 280, 8


# (bytes from 0xc0 up take 9 bits in the fixed code, the rest 8: a mix
# reaches a byte boundary)
TEXT = b"end \xc0of block:\xc1 the code\xc2 that ends\xc3 a Huffman block"


def block(w, final, dynamic, with_eob, write_eob, literals, aligned,
          with_match=False):
    """One Huffman block of `literals` bytes of TEXT (fewer or more so that,
    when `aligned`, the stream is on a byte boundary right before the
    end-of-block code); with_match adds a length/distance pair first (a
    copy of the byte before: length 3, distance 1). Returns the bytes the
    block makes."""
    out = bytearray()
    w.put(1 if final else 0, 1)
    w.put(2 if dynamic else 1, 2)
    if dynamic:
        freq = {c: 1 + TEXT.count(bytes([c])) for c in set(TEXT)}
        if with_eob:
            freq[256] = 1
        if with_match:
            freq[257] = 1
        lit_len = huffman_lengths(freq, 15)
        dist_len = {0: 1}              # one distance code of one bit
        nlit = max(257, max(lit_len) + 1)
        dynamic_header(w, lit_len, dist_len, nlit, 1)
        lit = canonical(lit_len, nlit)
        dist = canonical(dist_len, 1)
    else:
        lit = {s: fixed_code(s) for s in range(288)}
        dist = {0: (0, 5)}
    if with_match:
        w.code(*lit[TEXT[0]])
        w.code(*lit[257])
        w.code(*dist[0])
        out += bytes([TEXT[0]]) * 4
    i = 0
    while len(out) < literals or (aligned and not w.aligned()):
        c = TEXT[i % len(TEXT)]
        w.code(*lit[c])
        out.append(c)
        i += 1
        assert len(out) < literals + 64, "no byte boundary found"
    if write_eob:
        w.code(*lit[256])
    return bytes(out)


def size_bytes(n):
    assert n < 0x8000
    return bytes([n & 0xff, n >> 8])


def write(outdir, name, stream, made, lengths=None):
    """The stream with each output length: one byte short of what it makes,
    exactly that, one byte more."""
    lengths = lengths or (("short", made - 1), ("exact", made),
                          ("long", made + 1))
    for tag, n in lengths:
        with open(os.path.join(outdir, "inflate-eob-%s-out-%s" % (name, tag)),
                  "wb") as f:
            f.write(size_bytes(n) + stream)


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "corpus/inflate"
    os.makedirs(outdir, exist_ok=True)
    # missing: no end-of-block code in the literal/length code
    w = Bits()
    made = block(w, True, True, False, False, 40, False)
    write(outdir, "missing", w.data(), len(made))
    w = Bits()
    made = block(w, True, True, False, False, 40, False, with_match=True)
    write(outdir, "missing-with-length-code", w.data(), len(made))
    w = Bits()
    made = block(w, False, True, True, True, 24, False)
    made += block(w, True, True, False, False, 24, False)
    write(outdir, "missing-in-second-block", w.data(), len(made))
    # present: the same block with its end-of-block code, the last block
    w = Bits()
    made = block(w, True, True, True, True, 40, False)
    write(outdir, "present", w.data(), len(made))
    w = Bits()
    made = block(w, True, True, True, True, 40, False, with_match=True)
    write(outdir, "present-with-length-code", w.data(), len(made))
    # cut: the stream ends right before the end-of-block code
    w = Bits()
    made = block(w, True, True, True, False, 40, True)
    write(outdir, "cut-before", w.data(), len(made))
    w = Bits()
    made = block(w, True, False, True, False, 40, True)
    write(outdir, "fixed-cut-before", w.data(), len(made))
    # after: the end-of-block code of a block that is not the last, then
    # the stream ends (padding bits, fewer than a block header's 3, or none)
    for dynamic, name in ((True, "after"), (False, "fixed-after")):
        w = Bits()
        made = block(w, False, dynamic, True, True, 40, False)
        write(outdir, name, w.data(), len(made))
    print("wrote the end-of-block seeds to %s" % outdir)


main()

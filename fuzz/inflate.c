/* inflate.c - fuzz target `inflate`: qcow2w.h's raw-deflate decoder (the
 * one that reads qemu's compressed clusters) on arbitrary bytes.
 *
 * Input: two bytes choose the output size (bit 15 set: 512, 4096, 65536
 * or 2 MiB - the cluster sizes qemu compresses - else 0..32767 bytes),
 * the rest is the stream. Invariants:
 *   - the result is 0 (exactly out_len bytes made), -1 (the stream ended
 *     short), -2 (the input ran out) or -3 (malformed); no byte is written
 *     past out_len (a guard zone after the output must stay untouched) and
 *     nothing is read past the input (ASan, the input copied to a buffer
 *     of its exact size);
 *   - the same call again gives the same result and bytes;
 *   - a success stays a success with the same prefix for any shorter
 *     output; with bytes appended to the input (qemu reads whole sectors:
 *     what follows the stream is garbage) it gives the same bytes, or -3
 *     when the decoder, which reads on to the next symbol once the output
 *     is full as zlib does, meets a bad header there - never -1 or -2;
 *   - with zlib at hand (ALK_HAVE_ZLIB, set by the Makefile when zlib.h
 *     is found), zlib's inflate decides exactly as qemu reads a compressed
 *     cluster (Z_FINISH; success = Z_STREAM_END or Z_BUF_ERROR with the
 *     output full), and both agree on success and on every byte, and on
 *     the kind of a failure (Z_STREAM_END short: -1, Z_BUF_ERROR: -2,
 *     Z_DATA_ERROR: -3) (not
 *     for an empty output: qemu never asks for one, zlib still reads
 *     block headers there, the decoder returns at once). */
#include "qcow2w.h"
#include "../testkit/qcow2w_internal.h"
#include "../testkit/alk_check.h"

#include <stdlib.h>
#include <string.h>
#ifdef ALK_HAVE_ZLIB
#include <zlib.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define GUARD 64u

static int inflate_guarded(const unsigned char *in, size_t n,
                           unsigned char *out, size_t out_len)
{
    size_t i;
    int rc;
    memset(out + out_len, 0xee, GUARD);
    rc = q2w__inflate(in, n, out, out_len);
    for (i = 0; i < GUARD; i++)
        ALK_CHECK(out[out_len + i] == 0xee, "wrote past out_len %zu", out_len);
    ALK_CHECK(rc == 0 || rc == -1 || rc == -2 || rc == -3, "result %d", rc);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t clusters[] = {512, 4096, 65536, 2u << 20};
    unsigned char *in, *out, *again;
    size_t n, out_len;
    unsigned v;
    int rc, rc2;
    if (size < 2) return 0;
    alk_trace_reset();
    v = (unsigned)data[0] | (unsigned)data[1] << 8;
    out_len = (v & 0x8000u) ? clusters[v % 4] : (size_t)(v & 0x7fffu);
    n = size - 2;
    alk_trace("stream of %zu bytes into %zu", n, out_len);
    in = (unsigned char *)malloc(n + 256 + 1);
    out = (unsigned char *)malloc(out_len + GUARD);
    again = (unsigned char *)malloc(out_len + GUARD);
    ALK_CHECK(in && out && again, "out of memory");
    memcpy(in, data + 2, n);

    rc = inflate_guarded(in, n, out, out_len);
    alk_trace("result %d", rc);
    rc2 = inflate_guarded(in, n, again, out_len);
    ALK_CHECK(rc == rc2, "second call: %d, first %d", rc2, rc);
    ALK_CHECK(rc != 0 || memcmp(out, again, out_len) == 0,
              "second call made other bytes");
    if (rc == 0) {
        size_t k = out_len ? (size_t)data[0] * out_len / 256 : 0;
        rc2 = inflate_guarded(in, n, again, k);
        ALK_CHECK(rc2 == 0, "prefix of %zu bytes: %d", k, rc2);
        ALK_CHECK(memcmp(out, again, k) == 0, "prefix of %zu differs", k);
        memset(in + n, data[1], 256);
        rc2 = inflate_guarded(in, n + 256, again, out_len);
        ALK_CHECK(rc2 == 0 || rc2 == -3, "with bytes appended: %d", rc2);
        ALK_CHECK(rc2 != 0 || memcmp(out, again, out_len) == 0,
                  "bytes appended changed the output");
    }
#ifdef ALK_HAVE_ZLIB
    if (out_len) {
        z_stream z;
        int zr, zok;
        memset(&z, 0, sizeof z);
        ALK_CHECK(inflateInit2(&z, -15) == Z_OK, "inflateInit2");
        z.next_in = in;
        z.avail_in = (uInt)n;
        z.next_out = again;
        z.avail_out = (uInt)out_len;
        zr = inflate(&z, Z_FINISH);
        zok = (zr == Z_STREAM_END || zr == Z_BUF_ERROR) && z.avail_out == 0;
        inflateEnd(&z);
        alk_trace("zlib %d, avail_out %u", zr, z.avail_out);
        ALK_CHECK(zok == (rc == 0), "zlib %s (%d), qcow2w %d",
                  zok ? "reads it" : "refuses it", zr, rc);
        ALK_CHECK(!zok || memcmp(out, again, out_len) == 0,
                  "zlib and qcow2w made other bytes");
        /* and on why a failure failed: the stream ended short
         * (Z_STREAM_END) is -1, the input ran out (Z_BUF_ERROR) is -2,
         * a malformed stream (Z_DATA_ERROR) is -3 */
        ALK_CHECK(zok || rc == (zr == Z_STREAM_END ? -1 : zr == Z_BUF_ERROR ? -2 : -3),
                  "zlib fails with %d, qcow2w with %d", zr, rc);
        ALK_CHECK(zok || zr == Z_STREAM_END || zr == Z_BUF_ERROR ||
                      zr == Z_DATA_ERROR, "zlib %d", zr);
    }
#endif
    free(in);
    free(out);
    free(again);
    return 0;
}

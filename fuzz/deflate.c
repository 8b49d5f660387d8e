/* deflate.c - fuzz target `deflate`: qcow2w.h's compressor (q2w_deflate,
 * what a compressed cluster write stores) on arbitrary bytes.
 *
 * Who sends this input: anyone whose disk is imported or converted with
 * -c - the bytes of a guest's disk, chosen by whoever controls the guest.
 * The first byte chooses the output room: 0 (or a short input) as much as
 * any stream can need, else that many 256ths of the input length; the
 * second, with bit 7 set, repeats the input to a cluster size (512, 4096,
 * 65536 or 2 MiB: the long, repetitive runs real clusters hold). The rest
 * is the data. Invariants:
 *   - with room for the worst case (stored blocks: the input plus 5 bytes
 *     a 65535 and one more) a stream always comes back, never longer;
 *   - whatever comes back fits the room, and inflates (the header's own
 *     inflater, which reads qemu's clusters) to exactly the input, with
 *     nothing left over in the stream's last byte but padding;
 *   - 0 only when no stream fits, and then a larger room gives one;
 *   - the same call again gives the same bytes (deterministic);
 *   - with zlib at hand (ALK_HAVE_ZLIB), zlib's inflate with a 4 KiB
 *     window - as qemu reads a compressed cluster (windowBits -12) - gives
 *     the input back: no back-reference reaches further than qemu keeps. */
#include "qcow2w.h"
#include "../testkit/qcow2w_internal.h"
#include "../testkit/alk_check.h"

#include <stdlib.h>
#include <string.h>
#ifdef ALK_HAVE_ZLIB
#include <zlib.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t worst(size_t n)
{
    return n + 5 * (n / 65535 + 1) + 1;
}

#ifdef ALK_HAVE_ZLIB
/* qemu's reading: raw inflate, windowBits -12, Z_FINISH into len bytes. */
static void zlib_reads(const unsigned char *z, size_t zn, const unsigned char *want, size_t len,
                       unsigned char *out)
{
    z_stream s;
    int rc;
    memset(&s, 0, sizeof s);
    ALK_CHECK(inflateInit2(&s, -12) == Z_OK, "inflateInit2");
    s.next_in = (Bytef *)(uintptr_t)z;
    s.avail_in = (uInt)zn;
    s.next_out = out;
    s.avail_out = (uInt)len;
    rc = inflate(&s, Z_FINISH);
    inflateEnd(&s);
    ALK_CHECK(rc == Z_STREAM_END && s.total_out == len && memcmp(out, want, len) == 0,
              "zlib (windowBits -12) reads the stream otherwise: %d, %lu of %zu bytes", rc,
              (unsigned long)s.total_out, len);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t clusters[] = {512, 4096, 65536, 2u << 20};
    static unsigned char work[Q2W_DEFLATE_WORK];
    unsigned char *in, *z, *z2, *back;
    size_t len, cap, n, n2;
    if (size < 3) return 0;
    len = size - 2;
    if (data[1] & 0x80) {
        size_t k;
        len = clusters[data[1] & 3];
        in = (unsigned char *)malloc(len);
        ALK_CHECK(in != NULL, "out of memory");
        for (k = 0; k < len; k += size - 2)
            memcpy(in + k, data + 2, len - k < size - 2 ? len - k : size - 2);
    } else {
        in = (unsigned char *)malloc(len);
        ALK_CHECK(in != NULL, "out of memory");
        memcpy(in, data + 2, len);
    }
    cap = data[0] == 0 ? worst(len) : len * data[0] / 256;
    z = (unsigned char *)malloc(worst(len) + 1);
    z2 = (unsigned char *)malloc(worst(len) + 1);
    back = (unsigned char *)malloc(len + 1);
    ALK_CHECK(z && z2 && back, "out of memory");
    memset(z, 0xee, worst(len) + 1);
    n = q2w_deflate(in, len, z, cap, work);
    ALK_CHECK(n <= cap, "%zu bytes written into room for %zu", n, cap);
    ALK_CHECK(cap >= worst(len) ? n > 0 : 1, "no stream in the worst case's room");
    ALK_CHECK(z[cap < worst(len) ? cap : worst(len)] == 0xee || cap >= worst(len),
              "a byte written past the room");
    if (n == 0) {
        /* nothing fits: the worst case's room does */
        n = q2w_deflate(in, len, z, worst(len), work);
        ALK_CHECK(n > 0, "no stream even in the worst case's room");
        ALK_CHECK(n > cap, "refused a room of %zu, yet the stream takes %zu", cap, n);
    }
    n2 = q2w_deflate(in, len, z2, worst(len), work);
    ALK_CHECK(n2 == n && memcmp(z, z2, n) == 0, "not deterministic (%zu, %zu bytes)", n, n2);
    memset(back, 0xa5, len + 1);
    ALK_CHECK(q2w__inflate(z, n, back, len) == 0 && memcmp(back, in, len) == 0,
              "the stream of %zu bytes does not inflate to the %zu input bytes", n, len);
    ALK_CHECK(back[len] == 0xa5, "inflate wrote past the output");
#ifdef ALK_HAVE_ZLIB
    zlib_reads(z, n, in, len, back);
#endif
    free(in);
    free(z);
    free(z2);
    free(back);
    return 0;
}

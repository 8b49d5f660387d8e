/* codec_layout.h - how a `codec` fuzz input is laid out, written once for
 * the harness (parse) and the seed generator (build).
 *
 * Control bytes are taken from the END of the input, stream bytes are the
 * front (the FuzzedDataProvider split): a mutation of the stream never moves
 * a control decision and vice versa. Reading backwards from the last byte:
 *
 *   [-1] [-2]  max datagram, u16 big-endian (0 = default 65535)
 *   [-3]       amplify: CODEC_AMPLIFY_MAGIC repeats the stream (or `00 00`
 *              pairs if it is empty) to CODEC_AMPLIFY_BYTES in one chunk
 *   [-4]       K, the number of split-pattern bytes that follow
 *   [-5 ..]    K split-pattern bytes, cycled over the stream:
 *                0x00       the whole remaining stream in one chunk
 *                0x01-0x7f  a chunk of that many bytes
 *                0x80-0xfe  a chunk of (b & 0x7f) * 64 + 1 bytes
 *                0xff       an empty chunk, then a 1-byte chunk
 *   stream     every byte before the control region
 *
 * A short input runs out of control bytes first: missing bytes read as zero
 * (default max, no amplification, one chunk), so every prefix of an input
 * is itself a valid, smaller scenario. */
#ifndef CODEC_LAYOUT_H
#define CODEC_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define CODEC_AMPLIFY_MAGIC 0xA5u
/* 16 MiB for the replay gate and seed mode. Fuzzing builds (make fuzz)
 * pass -DCODEC_AMPLIFY_BYTES=262144: the oracle is the same, but an engine
 * that finds the magic byte would otherwise spend its time on 16 MiB runs. */
#ifndef CODEC_AMPLIFY_BYTES
#define CODEC_AMPLIFY_BYTES ((size_t)16 << 20)
#endif
#define CODEC_CTL_FIXED 4u

typedef struct codec_scenario {
    size_t max_datagram;     /* as configured: 0 means the default */
    int amplify;
    const uint8_t *pattern;  /* split pattern, pattern[0] nearest the end */
    size_t pattern_len;
    const uint8_t *stream;
    size_t stream_len;
} codec_scenario;

/* Tail byte i (0 = last byte of the input), zero once exhausted. */
static inline uint8_t codec_tail(const uint8_t *data, size_t size, size_t i)
{
    return i < size ? data[size - 1 - i] : 0;
}

static inline void codec_parse(const uint8_t *data, size_t size,
                               codec_scenario *sc)
{
    size_t k, used;
    sc->max_datagram = ((size_t)codec_tail(data, size, 0) << 8) |
                       codec_tail(data, size, 1);
    sc->amplify = codec_tail(data, size, 2) == CODEC_AMPLIFY_MAGIC;
    k = codec_tail(data, size, 3);
    used = size < CODEC_CTL_FIXED ? size : CODEC_CTL_FIXED;
    if (k > size - used)
        k = size - used;
    /* The pattern is read backwards; keep a pointer to its first byte in
     * memory and index it in reverse in codec_pattern_byte(). */
    sc->pattern_len = k;
    sc->pattern = data + (size - used - k);
    sc->stream = data;
    sc->stream_len = size - used - k;
}

static inline uint8_t codec_pattern_byte(const codec_scenario *sc, size_t i)
{
    return sc->pattern[sc->pattern_len - 1 - (i % sc->pattern_len)];
}

/* Chunk size for pattern byte b with `left` stream bytes remaining. Sets
 * *empty_first when an empty chunk must be fed before it. */
static inline size_t codec_chunk_size(uint8_t b, size_t left, int *empty_first)
{
    size_t n;
    *empty_first = 0;
    if (b == 0x00)
        n = left;
    else if (b < 0x80)
        n = b;
    else if (b < 0xff)
        n = (size_t)(b & 0x7f) * 64 + 1;
    else {
        *empty_first = 1;
        n = 1;
    }
    return n < left ? n : left;
}

/* Builder for the seed generator: writes stream + control region into out
 * (capacity cap) and returns the total size, or 0 if it does not fit. The
 * pattern is given in the order chunks use it. */
static inline size_t codec_build(uint8_t *out, size_t cap,
                                 const uint8_t *stream, size_t stream_len,
                                 unsigned max_datagram, int amplify,
                                 const uint8_t *pattern, size_t pattern_len)
{
    size_t total = stream_len + pattern_len + CODEC_CTL_FIXED, i;
    if (pattern_len > 255 || total > cap)
        return 0;
    for (i = 0; i < stream_len; i++)
        out[i] = stream[i];
    /* pattern byte j sits at tail index CODEC_CTL_FIXED + j */
    for (i = 0; i < pattern_len; i++)
        out[total - 1 - (CODEC_CTL_FIXED + i)] = pattern[i];
    out[total - 1] = (uint8_t)(max_datagram >> 8);
    out[total - 2] = (uint8_t)(max_datagram & 0xff);
    out[total - 3] = (uint8_t)(amplify ? CODEC_AMPLIFY_MAGIC : 0);
    out[total - 4] = (uint8_t)pattern_len;
    return total;
}

#endif /* CODEC_LAYOUT_H */

/* test_alkcodec.c - unit tests for alkcodec.h (greatest API).
 *
 * Built as C and, from the same file, as C++ (test_alkcodec_cxx). The
 * property tests draw from a PRNG seeded by ALK_SEED (default 1) and print
 * the seed when they fail. */
#define ALKCODEC_IMPLEMENTATION
#include "alkcodec.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alk_test.h"


/* Builds `count` frames with lengths len_of(i) into buf; returns bytes. */
static size_t build_stream(uint8_t *buf, size_t cap, size_t count,
                           const size_t *lens)
{
    size_t at = 0, i, j;
    for (i = 0; i < count; i++) {
        ptrdiff_t w;
        uint8_t payload[2048];
        for (j = 0; j < lens[i] && j < sizeof payload; j++)
            payload[j] = (uint8_t)(i * 31 + j);
        w = alkc_encode(buf + at, cap - at, payload, lens[i], 0, NULL);
        if (w < 0)
            return 0;
        at += (size_t)w;
    }
    return at;
}

typedef struct collected {
    size_t count;
    size_t lens[64];
    uint8_t bytes[64 * 2048];
    size_t total;
    size_t copied;
} collected;

/* Feeds `s` in chunks chosen by `chunk_of` and collects the datagrams. */
static int decode_chunked(const uint8_t *s, size_t n, size_t max,
                          uint64_t split_seed, collected *out)
{
    static uint8_t mem[ALKC_MAX_DATAGRAM];
    alkc_decoder dec;
    alkc_decoder_config cfg;
    uint64_t st = split_seed;
    size_t fed = 0;
    int rc = ALKC_NEED_MORE;
    cfg.max_datagram = max;
    memset(out, 0, sizeof *out);
    if (alkc_decoder_init(&dec, &cfg, mem, sizeof mem) != ALKC_OK)
        return ALKC_ERR_INVALID_ARGUMENT;
    while (fed < n) {
        size_t len = split_seed ? 1 + (size_t)(alksim_splitmix64(&st) % 97) : n;
        alkc_datagram dg;
        if (len > n - fed)
            len = n - fed;
        rc = alkc_decoder_feed(&dec, s + fed, len);
        if (rc != ALKC_OK)
            return rc;
        fed += len;
        while ((rc = alkc_decoder_next(&dec, &dg)) == ALKC_OK) {
            memcpy(out->bytes + out->total, dg.data, dg.len);
            out->lens[out->count++] = dg.len;
            out->total += dg.len;
            out->copied += (size_t)dg.copied;
        }
        if (rc != ALKC_NEED_MORE)
            return rc;
    }
    return rc;
}

/* A decoder whose maximum datagram is exactly the size of `mem`. */
static int open_decoder(alkc_decoder *dec, uint8_t *mem, size_t max)
{
    alkc_decoder_config cfg;
    cfg.max_datagram = max;
    return alkc_decoder_init(dec, &cfg, mem, max);
}

TEST encode_whole_frame(void)
{
    uint8_t out[16];
    alkc_error_info info;
    ptrdiff_t n = alkc_encode(out, sizeof out, "hello", 5, 0, &info);
    static const uint8_t want[] = {0x00, 0x05, 'h', 'e', 'l', 'l', 'o'};
    ASSERT_EQ((ptrdiff_t)sizeof want, n);
    ASSERT_MEM_EQ(want, out, sizeof want);
    ASSERT_EQ(ALKC_OK, info.code);
    ASSERT_EQ(5, info.length);
    ASSERT_EQ(ALKC_MAX_DATAGRAM, info.limit);
    ASSERT_EQ(0, info.offset);
    n = alkc_encode(out, 2, NULL, 0, 0, NULL);
    ASSERT_EQ(2, n);
    ASSERT_EQ(0, out[0]);
    ASSERT_EQ(0, out[1]);
    PASS();
}

TEST encode_header_is_big_endian(void)
{
    uint8_t hdr[2];
    ASSERT_EQ(ALKC_OK, alkc_encode_header(hdr, 0x1234, 0, NULL));
    ASSERT_EQ(0x12, hdr[0]);
    ASSERT_EQ(0x34, hdr[1]);
    ASSERT_EQ(ALKC_OK, alkc_encode_header(hdr, 65535, 0, NULL));
    ASSERT_EQ(0xff, hdr[0]);
    ASSERT_EQ(0xff, hdr[1]);
    ASSERT_EQ(ALKC_OK, alkc_encode_header(hdr, 1500, 1500, NULL));
    PASS();
}

TEST encode_errors_write_nothing(void)
{
    static uint8_t payload[70000];
    uint8_t out[32], hdr[2] = {0xaa, 0xbb};
    alkc_error_info info;
    memset(out, 0xee, sizeof out);

    ASSERT_EQ(ALKC_ERR_PAYLOAD_TOO_LARGE,
              alkc_encode(out, sizeof out, payload, 11, 10, &info));
    ASSERT_EQ(ALKC_ERR_PAYLOAD_TOO_LARGE, info.code);
    ASSERT_EQ(11, info.length);
    ASSERT_EQ(10, info.limit);
    ASSERT_EQ(0, info.offset);
    ASSERT_EQ(0xee, out[0]);

    ASSERT_EQ(ALKC_ERR_PAYLOAD_TOO_LARGE,
              alkc_encode(out, sizeof out, payload, 65536, 0, &info));
    ASSERT_EQ(65536, info.length);
    ASSERT_EQ(65535, info.limit);

    ASSERT_EQ(ALKC_ERR_BUFFER_TOO_SMALL,
              alkc_encode(out, 6, payload, 5, 0, &info));
    ASSERT_EQ(7, info.length);
    ASSERT_EQ(6, info.limit);
    ASSERT_EQ(0, info.offset);
    ASSERT_EQ(0xee, out[0]);
    ASSERT_EQ(0xee, out[5]);

    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_encode(NULL, 8, payload, 1, 0, &info));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT, info.code);
    ASSERT_EQ(1, info.length);
    ASSERT_EQ(8, info.limit);
    ASSERT_EQ(0, info.offset);
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_encode(out, 8, NULL, 1, 0, &info));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_encode(out, sizeof out, payload, 1, 65536, &info));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_encode_header(NULL, 1, 0, &info));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT, info.code);
    ASSERT_EQ(1, info.length);
    ASSERT_EQ(0, info.offset);
    ASSERT_EQ(ALKC_ERR_PAYLOAD_TOO_LARGE,
              alkc_encode_header(hdr, 1501, 1500, &info));
    ASSERT_EQ(0xaa, hdr[0]);
    ASSERT_EQ(0xbb, hdr[1]);
    /* NULL info is allowed everywhere. */
    ASSERT_EQ(ALKC_ERR_BUFFER_TOO_SMALL,
              alkc_encode(out, 1, payload, 0, 0, NULL));
    PASS();
}

TEST init_validates(void)
{
    static uint8_t mem[ALKC_MAX_DATAGRAM];
    alkc_decoder dec;
    alkc_decoder_config cfg;
    cfg.max_datagram = 1500;
    ASSERT_EQ(ALKC_OK, alkc_decoder_init(&dec, &cfg, mem, 1500));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_decoder_init(&dec, &cfg, mem, 1499));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_decoder_init(NULL, &cfg, mem, 1500));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_decoder_init(&dec, &cfg, NULL, 1500));
    cfg.max_datagram = 65536;
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_decoder_init(&dec, &cfg, mem, sizeof mem));
    /* NULL config and zero max both mean 65535. */
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT,
              alkc_decoder_init(&dec, NULL, mem, 65534));
    ASSERT_EQ(ALKC_OK, alkc_decoder_init(&dec, NULL, mem, sizeof mem));
    ASSERT_EQ(ALKC_MAX_DATAGRAM, ALKC_DECODER_MEM_SIZE(0));
    ASSERT_EQ(1500, ALKC_DECODER_MEM_SIZE(1500));
    PASS();
}

TEST decode_all_at_once_is_zero_copy(void)
{
    static uint8_t s[4096];
    static collected got;
    const size_t lens[] = {5, 0, 300, 1, 0, 0, 1024};
    size_t n = build_stream(s, sizeof s, 7, lens), i;
    ASSERT(n > 0);
    ASSERT_EQ(ALKC_NEED_MORE, decode_chunked(s, n, 0, 0, &got));
    ASSERT_EQ(7, got.count);
    for (i = 0; i < 7; i++)
        ASSERT_EQ(lens[i], got.lens[i]);
    ASSERT_EQ(0, got.copied);
    PASS();
}

TEST decode_byte_by_byte(void)
{
    static uint8_t s[4096], mem[ALKC_MAX_DATAGRAM];
    const size_t lens[] = {3, 0, 17};
    size_t n = build_stream(s, sizeof s, 3, lens), i, count = 0;
    alkc_decoder dec;
    ASSERT_EQ(ALKC_OK, alkc_decoder_init(&dec, NULL, mem, sizeof mem));
    for (i = 0; i < n; i++) {
        alkc_datagram dg;
        int rc;
        ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s + i, 1));
        while ((rc = alkc_decoder_next(&dec, &dg)) == ALKC_OK) {
            ASSERT_EQ(lens[count], dg.len);
            /* The empty datagram completes with its header's last byte,
             * zero-copy; the others straddle and are assembled. */
            ASSERT_EQ(dg.len > 1 ? 1 : 0, dg.copied);
            count++;
        }
        ASSERT_EQ(ALKC_NEED_MORE, rc);
        ASSERT_EQ(0, alkc_decoder_pending_input(&dec));
    }
    ASSERT_EQ(3, count);
    ASSERT_EQ(0, alkc_decoder_retained_bytes(&dec));
    ASSERT_FALSE(alkc_decoder_is_mid_datagram(&dec));
    ASSERT_EQ((uint64_t)n, alkc_decoder_stream_offset(&dec));
    PASS();
}

TEST decode_random_splits_match_whole(void)
{
    static uint8_t s[64 * 2100];
    static collected whole, split;
    size_t lens[64], i, n;
    uint64_t st = test_seed, round;
    for (round = 0; round < 50; round++) {
        for (i = 0; i < 64; i++)
            lens[i] = (size_t)(alksim_splitmix64(&st) % 2048);
        n = build_stream(s, sizeof s, 64, lens);
        ASSERT(n > 0);
        ASSERT_EQ(ALKC_NEED_MORE, decode_chunked(s, n, 0, 0, &whole));
        ASSERT_EQ(ALKC_NEED_MORE,
                  decode_chunked(s, n, 0, alksim_splitmix64(&st) | 1, &split));
        if (whole.count != 64 || split.count != 64 ||
            whole.total != split.total ||
            memcmp(whole.bytes, split.bytes, whole.total) != 0) {
            fprintf(stderr, "split mismatch: ALK_SEED=%llu round %llu\n",
                    (unsigned long long)test_seed, (unsigned long long)round);
            FAIL();
        }
        ASSERT(split.copied > 0);
    }
    PASS();
}

TEST straddled_payload_uses_mem_and_header_straddle_stays_zero_copy(void)
{
    static uint8_t mem[64];
    const uint8_t s[] = {0x00, 0x03, 'a', 'b', 'c', 0x00, 0x02, 'x', 'y'};
    alkc_decoder dec;
    alkc_datagram dg;
    ASSERT_EQ(ALKC_OK, open_decoder(&dec, mem, sizeof mem));
    /* Chunk 1 ends inside the payload of frame 1. */
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, 4));
    ASSERT_EQ(ALKC_NEED_MORE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(4, alkc_decoder_retained_bytes(&dec));
    ASSERT(alkc_decoder_is_mid_datagram(&dec));
    /* Chunk 2 completes frame 1 and holds the first header byte of 2. */
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s + 4, 2));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(1, dg.copied);
    ASSERT_EQ(mem, dg.data);
    ASSERT_MEM_EQ("abc", dg.data, 3);
    ASSERT_EQ(ALKC_NEED_MORE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(1, alkc_decoder_retained_bytes(&dec));
    /* Chunk 3 finishes the header and holds the whole payload. */
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s + 6, 3));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(0, dg.copied);
    ASSERT_EQ(s + 7, dg.data);
    ASSERT_EQ(2, dg.len);
    ASSERT_EQ(ALKC_NEED_MORE, alkc_decoder_next(&dec, &dg));
    PASS();
}

TEST header_completed_at_chunk_end_then_whole_payload_is_zero_copy(void)
{
    static uint8_t mem[64];
    const uint8_t s[] = {0x00, 0x03, 'a', 'b', 'c'};
    alkc_decoder dec;
    alkc_datagram dg;
    ASSERT_EQ(ALKC_OK, open_decoder(&dec, mem, sizeof mem));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, 2));
    ASSERT_EQ(ALKC_NEED_MORE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(2, alkc_decoder_retained_bytes(&dec));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s + 2, 3));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(0, dg.copied);
    ASSERT_EQ(s + 2, dg.data);
    PASS();
}

TEST empty_datagram_is_not_eof(void)
{
    static uint8_t mem[16];
    const uint8_t s[] = {0, 0, 0, 0, 0, 1, 'z', 0, 0};
    alkc_decoder dec;
    alkc_datagram dg;
    size_t lens[8], count = 0;
    int rc;
    ASSERT_EQ(ALKC_OK, open_decoder(&dec, mem, sizeof mem));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, sizeof s));
    while ((rc = alkc_decoder_next(&dec, &dg)) == ALKC_OK) {
        ASSERT(dg.data != NULL);
        lens[count++] = dg.len;
    }
    ASSERT_EQ(ALKC_NEED_MORE, rc);
    ASSERT_EQ(4, count);
    ASSERT_EQ(0, lens[0]);
    ASSERT_EQ(0, lens[1]);
    ASSERT_EQ(1, lens[2]);
    ASSERT_EQ(0, lens[3]);
    PASS();
}

TEST oversize_is_sticky_with_context(void)
{
    static uint8_t mem[1500];
    uint8_t s[1600], payload[1500];
    alkc_decoder dec;
    alkc_decoder_config cfg;
    alkc_datagram dg;
    alkc_error_info info;
    size_t n = 0;
    ptrdiff_t w;
    cfg.max_datagram = 1500;
    memset(payload, 7, sizeof payload);
    w = alkc_encode(s, sizeof s, payload, 1500, 1500, NULL);
    ASSERT_EQ(1502, w);
    n = (size_t)w;
    s[n] = 0x05; /* 1501 = 0x05dd */
    s[n + 1] = 0xdd;
    ASSERT_EQ(ALKC_OK, alkc_decoder_init(&dec, &cfg, mem, sizeof mem));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, n + 2));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(1500, dg.len);
    ASSERT_EQ(ALKC_ERR_DATAGRAM_TOO_LARGE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(ALKC_ERR_DATAGRAM_TOO_LARGE, alkc_decoder_error(&dec, &info));
    ASSERT_EQ(1501, info.length);
    ASSERT_EQ(1500, info.limit);
    ASSERT_EQ((uint64_t)n, info.offset);
    ASSERT(alkc_error_is_fatal(info.code));
    /* Sticky until reset. */
    ASSERT_EQ(ALKC_ERR_DATAGRAM_TOO_LARGE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(ALKC_ERR_DATAGRAM_TOO_LARGE, alkc_decoder_feed(&dec, s, 2));
    alkc_decoder_reset(&dec);
    memset(&info, 0x5a, sizeof info);
    ASSERT_EQ(ALKC_OK, alkc_decoder_error(&dec, &info));
    ASSERT_EQ(ALKC_OK, info.code);
    ASSERT_EQ(0, info.length);
    ASSERT_EQ(0, info.limit);
    ASSERT_EQ(0, info.offset);
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, n));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(1500, dg.len);
    PASS();
}

TEST oversize_header_split_across_chunks(void)
{
    static uint8_t mem[10];
    const uint8_t s[] = {0x00, 0x0b};
    alkc_decoder dec;
    alkc_datagram dg;
    alkc_error_info info;
    ASSERT_EQ(ALKC_OK, open_decoder(&dec, mem, sizeof mem));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, 1));
    ASSERT_EQ(ALKC_NEED_MORE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s + 1, 1));
    ASSERT_EQ(ALKC_ERR_DATAGRAM_TOO_LARGE, alkc_decoder_next(&dec, &dg));
    alkc_decoder_error(&dec, &info);
    ASSERT_EQ(11, info.length);
    ASSERT_EQ(0, info.offset);
    PASS();
}

TEST feed_while_pending_is_refused(void)
{
    static uint8_t mem[64];
    const uint8_t s[] = {0, 1, 'a', 0, 1, 'b'};
    alkc_decoder dec;
    alkc_datagram dg;
    ASSERT_EQ(ALKC_OK, open_decoder(&dec, mem, sizeof mem));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, sizeof s));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(3, alkc_decoder_pending_input(&dec));
    ASSERT_EQ(ALKC_ERR_INPUT_PENDING, alkc_decoder_feed(&dec, s, 3));
    ASSERT_FALSE(alkc_error_is_fatal(ALKC_ERR_INPUT_PENDING));
    ASSERT_EQ(ALKC_OK, alkc_decoder_error(&dec, NULL));
    ASSERT_EQ(3, alkc_decoder_pending_input(&dec));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ('b', dg.data[0]);
    ASSERT_EQ(ALKC_NEED_MORE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, NULL, 0));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT, alkc_decoder_feed(&dec, NULL, 1));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT, alkc_decoder_feed(NULL, s, 1));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT, alkc_decoder_next(&dec, NULL));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT, alkc_decoder_next(NULL, &dg));
    ASSERT_EQ(ALKC_ERR_INVALID_ARGUMENT, alkc_decoder_error(NULL, NULL));
    ASSERT_EQ(0, alkc_decoder_retained_bytes(NULL));
    ASSERT_EQ(0, alkc_decoder_is_mid_datagram(NULL));
    ASSERT_EQ(0, alkc_decoder_pending_input(NULL));
    ASSERT_EQ(0, alkc_decoder_stream_offset(NULL));
    alkc_decoder_reset(NULL);
    PASS();
}

TEST reset_drops_partial_frame_and_keeps_offset(void)
{
    static uint8_t mem[64];
    const uint8_t s[] = {0, 5, 'a', 'b', 0, 1, 'c'};
    alkc_decoder dec;
    alkc_datagram dg;
    ASSERT_EQ(ALKC_OK, open_decoder(&dec, mem, sizeof mem));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, 4));
    ASSERT_EQ(ALKC_NEED_MORE, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ(4, alkc_decoder_retained_bytes(&dec));
    alkc_decoder_reset(&dec);
    ASSERT_EQ(0, alkc_decoder_retained_bytes(&dec));
    ASSERT_FALSE(alkc_decoder_is_mid_datagram(&dec));
    ASSERT_EQ(4, alkc_decoder_stream_offset(&dec));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s + 4, 3));
    ASSERT_EQ(ALKC_OK, alkc_decoder_next(&dec, &dg));
    ASSERT_EQ('c', dg.data[0]);
    PASS();
}

TEST amplification_16MiB_of_zero_pairs_retains_nothing(void)
{
    size_t n = (size_t)16 << 20, count = 0;
    uint8_t *s = (uint8_t *)calloc(n, 1);
    static uint8_t mem[ALKC_MAX_DATAGRAM];
    alkc_decoder dec;
    alkc_datagram dg;
    int rc;
    ASSERT(s != NULL);
    ASSERT_EQ(ALKC_OK, alkc_decoder_init(&dec, NULL, mem, sizeof mem));
    ASSERT_EQ(ALKC_OK, alkc_decoder_feed(&dec, s, n));
    while ((rc = alkc_decoder_next(&dec, &dg)) == ALKC_OK) {
        if (dg.len != 0 || dg.copied ||
            alkc_decoder_retained_bytes(&dec) != 0) {
            free(s);
            FAILm("a 00 00 pair decoded wrongly or left state behind");
        }
        count++;
    }
    free(s);
    ASSERT_EQ(ALKC_NEED_MORE, rc);
    ASSERT_EQ(n / 2, count);
    ASSERT_EQ(0, alkc_decoder_retained_bytes(&dec));
    PASS();
}

TEST strerror_covers_every_code(void)
{
    const int codes[] = {ALKC_OK,
                         ALKC_NEED_MORE,
                         ALKC_ERR_INVALID_ARGUMENT,
                         ALKC_ERR_PAYLOAD_TOO_LARGE,
                         ALKC_ERR_BUFFER_TOO_SMALL,
                         ALKC_ERR_DATAGRAM_TOO_LARGE,
                         ALKC_ERR_INPUT_PENDING};
    size_t i, j, n = sizeof codes / sizeof codes[0];
    const char *unknown = alkc_strerror(-999);
    ASSERT(unknown != NULL && unknown[0] != '\0');
    for (i = 0; i < n; i++) {
        const char *t = alkc_strerror(codes[i]);
        ASSERT(t != NULL && t[0] != '\0');
        ASSERT(strcmp(t, unknown) != 0);
        for (j = 0; j < i; j++)
            ASSERT(strcmp(t, alkc_strerror(codes[j])) != 0);
        ASSERT_EQ(codes[i] == ALKC_ERR_DATAGRAM_TOO_LARGE,
                  alkc_error_is_fatal(codes[i]));
    }
    PASS();
}

SUITE(encoder)
{
    RUN_TEST(encode_whole_frame);
    RUN_TEST(encode_header_is_big_endian);
    RUN_TEST(encode_errors_write_nothing);
    RUN_TEST(strerror_covers_every_code);
}

SUITE(decoder)
{
    RUN_TEST(init_validates);
    RUN_TEST(decode_all_at_once_is_zero_copy);
    RUN_TEST(decode_byte_by_byte);
    RUN_TEST(decode_random_splits_match_whole);
    RUN_TEST(straddled_payload_uses_mem_and_header_straddle_stays_zero_copy);
    RUN_TEST(header_completed_at_chunk_end_then_whole_payload_is_zero_copy);
    RUN_TEST(empty_datagram_is_not_eof);
    RUN_TEST(oversize_is_sticky_with_context);
    RUN_TEST(oversize_header_split_across_chunks);
    RUN_TEST(feed_while_pending_is_refused);
    RUN_TEST(reset_drops_partial_frame_and_keeps_offset);
    RUN_TEST(amplification_16MiB_of_zero_pairs_retains_nothing);
}

GREATEST_MAIN_DEFS();

int main(int argc, char **argv)
{
    ALK_TEST_MAIN_BEGIN();
    RUN_SUITE(encoder);
    RUN_SUITE(decoder);
    GREATEST_MAIN_END();
}

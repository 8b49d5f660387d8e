/* bench_alkcodec.c - decoder throughput against memcpy, in one run.
 *
 * For each datagram size (16, 200, 1400, 65535) and chunk size (64 KiB,
 * 1 byte) a stream of frames is decoded chunk by chunk; the reference is
 * memcpy of the same bytes in the same chunk sizes, measured in the same
 * run. Each figure is the median of REPS repetitions. The consumer reads
 * each datagram's length and first byte, so nothing is optimised away; a
 * zero-copy decoder never has to touch the rest of the payload, which is
 * why it can beat memcpy.
 *
 * Targets (exit 1 if missed): 1400-byte datagrams in 64 KiB chunks at
 * >= 0.8x memcpy throughput; 16-byte datagrams >= 50 million/s. */
#define _POSIX_C_SOURCE 200809L
#define ALKCODEC_IMPLEMENTATION
#include "../alkcodec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_common.h"

#define REPS 7

static volatile uint64_t sink;
static uint8_t mem[ALKC_MAX_DATAGRAM];

/* Decodes s[0..n) in chunks; returns the datagram count. */
static size_t decode_all(const uint8_t *s, size_t n, size_t chunk)
{
    alkc_decoder dec;
    alkc_datagram dg;
    size_t at = 0, count = 0;
    uint64_t acc = 0;
    alkc_decoder_init(&dec, NULL, mem, sizeof mem);
    while (at < n) {
        size_t len = n - at < chunk ? n - at : chunk;
        alkc_decoder_feed(&dec, s + at, len);
        while (alkc_decoder_next(&dec, &dg) == ALKC_OK) {
            acc += dg.len + (dg.len ? dg.data[0] : 0);
            count++;
        }
        at += len;
    }
    sink += acc;
    return count;
}

static void copy_all(uint8_t *dst, const uint8_t *s, size_t n, size_t chunk)
{
    size_t at = 0;
    while (at < n) {
        size_t len = n - at < chunk ? n - at : chunk;
        memcpy(dst + at, s + at, len);
        at += len;
    }
    sink += dst[n / 2];
}

int main(void)
{
    static const size_t sizes[] = {16, 200, 1400, 65535};
    static const size_t chunks[] = {65536, 1};
    const size_t big = (size_t)32 << 20, small = (size_t)2 << 20;
    uint8_t *s = (uint8_t *)malloc(big), *dst = (uint8_t *)malloc(big);
    uint8_t payload[ALKC_MAX_DATAGRAM];
    int failed = 0;
    size_t i, j;
    double ratio_1400 = 0, rate_16 = 0;

    if (!s || !dst)
        return 1;
    for (i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);
    printf("alkcodec decode vs memcpy (median of %d runs, same process)\n",
           REPS);
    printf("%9s %7s %9s %12s %12s %14s %8s\n", "datagram", "chunk", "stream",
           "decode MB/s", "memcpy MB/s", "datagrams/s", "ratio");
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (j = 0; j < sizeof chunks / sizeof chunks[0]; j++) {
            size_t limit = chunks[j] == 1 ? small : big, n = 0, count = 0;
            double td[REPS], tm[REPS], d, m;
            int r;
            while (n + ALKC_FRAME_SIZE(sizes[i]) <= limit) {
                ptrdiff_t w = alkc_encode(s + n, limit - n, payload, sizes[i],
                                          0, NULL);
                n += (size_t)w;
                count++;
            }
            for (r = 0; r < REPS; r++) {
                double t0 = bench_now();
                size_t got = decode_all(s, n, chunks[j]);
                double t1 = bench_now();
                copy_all(dst, s, n, chunks[j]);
                tm[r] = bench_now() - t1;
                td[r] = t1 - t0;
                if (got != count) {
                    printf("decoded %zu of %zu datagrams\n", got, count);
                    return 1;
                }
            }
            d = bench_median(td, REPS);
            m = bench_median(tm, REPS);
            printf("%9zu %7zu %8.1fM %12.0f %12.0f %14.3g %7.2fx\n", sizes[i],
                   chunks[j], (double)n / 1e6, (double)n / d / 1e6,
                   (double)n / m / 1e6, (double)count / d, m / d);
            if (sizes[i] == 1400 && chunks[j] == 65536)
                ratio_1400 = m / d;
            if (sizes[i] == 16 && chunks[j] == 65536)
                rate_16 = (double)count / d;
        }
    }
    printf("target: 1400 B datagrams, 64 KiB chunks >= 0.80x memcpy: %.2fx %s\n",
           ratio_1400, ratio_1400 >= 0.8 ? "met" : "MISSED");
    printf("target: 16 B datagrams >= 50 million/s: %.1f million/s %s\n",
           rate_16 / 1e6, rate_16 >= 50e6 ? "met" : "MISSED");
    failed = ratio_1400 < 0.8 || rate_16 < 50e6;
    free(s);
    free(dst);
    return failed;
}

/* bench_session.c - alktunnel.h's session, measured against a reference in
 * the same run (make bench). Two sessions in this process, joined by a
 * buffer: what one transmits the other takes as input, every frame
 * encoded, decoded, windowed and acknowledged as on a socket.
 *
 *   1. Bulk: 64 KiB writes on one channel with the default window and
 *      log, moved by transmit_peek/done and read in place with
 *      channel_peek/consume, vs memcpy of the same bytes (one copy of each
 *      write). Target >= 0.5x memcpy. Each byte is copied twice on this
 *      path (into the sender's resend log, which a resume needs, and into
 *      the receiver's ring, which here stands for the socket read), so
 *      0.5x is its ceiling with no other cost at all; the figure says how
 *      close the session's own work comes to it.
 *   2. Small frames: 64-byte writes, each sent, transmitted, taken in and
 *      read: frames per second. Target >= 5 million/s.
 *   3. Handshakes: two fresh sessions from connect to established (both
 *      HELLOs, both AUTHs, the MACs and the transcript hash): per second.
 *      Target >= 200 thousand/s.
 * 1-3 run plaintext sessions (config plaintext = 1: the session's own
 * work, nothing else). Then the encrypted session, the default:
 *   4. The AEAD alone: ChaCha20-Poly1305 seal of 64 KiB records, GB/s and
 *      cycles per byte (the time-stamp counter, x86-64 only), and open.
 *   5. Bulk as 1, encrypted: target >= 0.5x the plaintext session's bulk
 *      measured just before in the same run.
 *   6. Small frames and handshakes as 2 and 3, encrypted (each handshake
 *      is four X25519 scalar multiplications): reported, no target.
 * Every figure is the median of RUNS timed repetitions. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"
#include "bench_common.h"

#define RUNS 7

static const unsigned char secret[32] = "bench secret of thirty-two bytes";
static unsigned char *mem[2];
static alkt_session s[2];
static volatile size_t sink;

static void setup(uint32_t window, uint32_t log, int plain)
{
    int k;
    for (k = 0; k < 2; k++) {
        alkt_session_config c;
        size_t need;
        memset(&c, 0, sizeof c);
        c.is_server = k;
        c.secret = secret;
        c.secret_len = sizeof secret;
        c.identity = k ? "server" : "client";
        c.identity_len = 6;
        c.max_channels = 2;
        c.channel_window = window;
        c.log_size = log;
        c.plaintext = plain;
        need = alkt_session_mem_size(&c);
        free(mem[k]);
        mem[k] = (unsigned char *)malloc(need);
        if (!mem[k] || alkt_session_init(&s[k], &c, mem[k], need, 0) != ALKT_OK) {
            fprintf(stderr, "bench: session init failed\n");
            exit(1);
        }
    }
}


/* Everything side k has queued, into the other side: the in-memory
 * stream. Zero-copy: the receiver takes its input from the sender's log. */
static void move(int k)
{
    const void *p;
    size_t n;
    while ((n = alkt_session_transmit_peek(&s[k], &p)) > 0) {
        alkt_session_handle_input(&s[1 - k], p, n, 0);
        alkt_session_transmit_done(&s[k], n);
    }
}

static void handshake(void)
{
    unsigned char n0[ALKT_NONCE_SIZE], n1[ALKT_NONCE_SIZE];
    memset(n0, 1, sizeof n0);
    memset(n1, 2, sizeof n1);
    alkt_session_connect(&s[1], 0, n1);
    alkt_session_connect(&s[0], 0, n0);
    move(0);
    move(1);
    move(0);
}

static uint32_t open_channel(void)
{
    alkt_open_params p;
    alkt_event ev;
    uint32_t id;
    if (alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, "bench", 5, 9) != ALKT_OK ||
        alkt_channel_open(&s[0], &p, &id) != ALKT_OK)
        exit(1);
    move(0);
    while (alkt_session_poll_event(&s[1], &ev))
        if (ev.type == ALKT_EV_OPEN_REQUEST) alkt_channel_accept(&s[1], id, NULL);
    move(1);
    move(0);
    while (alkt_session_poll_event(&s[0], &ev)) {
    }
    return id;
}

/* Sends total bytes in writes of `chunk`, reading as it goes: with recv
 * (a copy into dst) or, zero_copy, with peek and consume (the bytes read
 * in place, each piece's first and last byte summed). */
static void stream(uint32_t id, const unsigned char *src, unsigned char *dst,
                   size_t chunk, size_t total, int zero_copy)
{
    size_t sent = 0, got = 0;
    while (got < total) {
        ptrdiff_t r;
        int eof;
        while (sent < total) {
            size_t want = total - sent < chunk ? total - sent : chunk;
            r = alkt_channel_send(&s[0], id, src + sent % chunk, want);
            if (r <= 0) break;
            sent += (size_t)r;
        }
        move(0);
        if (zero_copy) {
            const void *p;
            while ((r = alkt_channel_peek(&s[1], id, &p, &eof)) > 0) {
                const unsigned char *b = (const unsigned char *)p;
                sink += b[0] + b[r - 1];
                alkt_channel_consume(&s[1], id, (size_t)r, &eof);
                got += (size_t)r;
            }
        } else {
            while ((r = alkt_channel_recv(&s[1], id, dst, chunk, &eof)) > 0)
                got += (size_t)r;
        }
        move(1);   /* credit and acks back */
    }
    sink += dst[0];
}

/* One write of n bytes arrives intact (checked before timing). */
static void verify(uint32_t id, const unsigned char *src, unsigned char *dst,
                   size_t n)
{
    size_t sent = 0, got = 0;
    while (got < n) {
        ptrdiff_t r;
        int eof;
        const void *p;
        if (sent < n && (r = alkt_channel_send(&s[0], id, src + sent, n - sent)) > 0)
            sent += (size_t)r;
        move(0);
        while ((r = alkt_channel_peek(&s[1], id, &p, &eof)) > 0) {
            memcpy(dst + got, p, (size_t)r);
            alkt_channel_consume(&s[1], id, (size_t)r, &eof);
            got += (size_t)r;
        }
        move(1);
    }
    if (memcmp(src, dst, n) != 0) {
        fprintf(stderr, "bench: bytes changed on the way\n");
        exit(1);
    }
}

static uint64_t cycles(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    return __builtin_ia32_rdtsc();
#else
    return 0;
#endif
}

/* Two fresh sessions with the default window and log, one channel open. */
static uint32_t fresh_channel(int plain)
{
    setup(0, 0, plain);
    handshake();
    return open_channel();
}

/* Bulk through two sessions (plaintext or not): bytes per second. */
static double bulk_run(const unsigned char *src, unsigned char *dst, size_t total,
                       int plain)
{
    double t[RUNS];
    uint32_t id = fresh_channel(plain);
    int r;
    verify(id, src, dst, 65536);
    for (r = 0; r < RUNS; r++) {
        double t0 = bench_now();
        stream(id, src, dst, 65536, total, 1);
        t[r] = bench_now() - t0;
    }
    return (double)total / bench_median(t, RUNS);
}

static double small_run(const unsigned char *src, unsigned char *dst, int plain)
{
    double t[RUNS];
    uint32_t id = fresh_channel(plain);
    int r;
    for (r = 0; r < RUNS; r++) {
        const size_t frames = plain ? 200000 : 50000;
        double t0 = bench_now();
        stream(id, src, dst, 64, frames * 64, 0);
        t[r] = (bench_now() - t0) / (double)frames;
    }
    return 1.0 / bench_median(t, RUNS);
}

static double handshake_run(int plain)
{
    double t[RUNS];
    int r;
    for (r = 0; r < RUNS; r++) {
        const int n = plain ? 2000 : 200;
        int j;
        double t0 = bench_now();
        for (j = 0; j < n; j++) {
            setup(4096, 131072, plain);
            handshake();
            if (!alkt_session_is_established(&s[1])) {
                fprintf(stderr, "bench: handshake failed\n");
                exit(1);
            }
        }
        t[r] = (bench_now() - t0) / n;
    }
    return 1.0 / bench_median(t, RUNS);
}

int main(void)
{
    static unsigned char src[65536], dst[65536];
    double t[RUNS], tm[RUNS], bulk, ref, small, hs;
    const size_t total = (size_t)64 << 20;
    int r, ok = 1;
    size_t k;
    uint32_t id;
    for (k = 0; k < sizeof src; k++) src[k] = (unsigned char)(k * 31);

    printf("alktunnel session (median of %d runs, same process)\n", RUNS);
    id = fresh_channel(1);   /* the defaults: 64 KiB window, 256 KiB log */
    verify(id, src, dst, sizeof src);
    for (r = 0; r < RUNS; r++) {
        double t0 = bench_now();
        stream(id, src, dst, sizeof src, total, 1);
        t[r] = bench_now() - t0;
        t0 = bench_now();
        for (k = 0; k < total / sizeof src; k++) {
            memcpy(dst, src, sizeof src);
            sink += dst[k & 0xffff];
        }
        tm[r] = bench_now() - t0;
    }
    bulk = (double)total / bench_median(t, RUNS);
    ref = (double)total / bench_median(tm, RUNS);
    printf("bulk: 64 KiB writes %.0f MB/s through two plaintext sessions, memcpy "
           "%.0f MB/s\n", bulk / 1e6, ref / 1e6);
    printf("target: >= 0.50x memcpy: %.2fx %s\n", bulk / ref,
           bulk / ref >= 0.5 ? "met" : "MISSED");
    ok &= bulk / ref >= 0.5;

    small = small_run(src, dst, 1);
    printf("small: 64-byte frames %.2f million/s (send, transmit, take in, "
           "read)\n", small / 1e6);
    printf("target: >= 5 million/s: %.2f million/s %s\n", small / 1e6,
           small >= 5e6 ? "met" : "MISSED");
    ok &= small >= 5e6;

    hs = handshake_run(1);
    printf("handshakes: %.0f thousand/s (HELLO both ways, AUTH both ways)\n",
           hs / 1e3);
    printf("target: >= 200 thousand/s: %.0f thousand/s %s\n", hs / 1e3,
           hs >= 2e5 ? "met" : "MISSED");
    ok &= hs >= 2e5;

    /* 4. the AEAD alone */
    {
        static unsigned char rec[65536 + 16];
        unsigned char key[32], nonce[12];
        double tc[RUNS], gbs, cpb;
        const int n = 400;
        memset(key, 0x42, sizeof key);
        memset(nonce, 0, sizeof nonce);
        for (r = 0; r < RUNS; r++) {
            int j;
            uint64_t c0 = cycles();
            double t0 = bench_now();
            for (j = 0; j < n; j++) {
                nonce[0] = (unsigned char)j;
                alkt_aead_seal(rec, key, nonce, NULL, 0, src, 65536);
            }
            t[r] = (bench_now() - t0) / (n * 65536.0);
            tc[r] = (double)(cycles() - c0) / (n * 65536.0);
            sink += rec[r];
        }
        gbs = 1.0 / bench_median(t, RUNS) / 1e9;
        cpb = bench_median(tc, RUNS);
        if (cpb > 0)
            printf("aead: ChaCha20-Poly1305 seal of 64 KiB records %.2f GB/s, "
                   "%.2f cycles/byte (time-stamp counter)\n", gbs, cpb);
        else
            printf("aead: ChaCha20-Poly1305 seal of 64 KiB records %.2f GB/s "
                   "(cycles/byte: no time-stamp counter here)\n", gbs);
        for (r = 0; r < RUNS; r++) {
            int j;
            double t0 = bench_now();
            for (j = 0; j < n; j++)
                if (alkt_aead_open(dst, key, nonce, NULL, 0, rec, sizeof rec) != ALKT_OK) {
                    fprintf(stderr, "bench: open failed\n");
                    return 1;
                }
            t[r] = (bench_now() - t0) / (n * 65536.0);
        }
        printf("aead: open (tag checked, then decrypted) %.2f GB/s\n",
               1.0 / bench_median(t, RUNS) / 1e9);
    }

    /* 5. bulk, encrypted, against the plaintext session of this run */
    {
        double plain_bulk = bulk_run(src, dst, total, 1);
        double sealed_bulk = bulk_run(src, dst, total, 0);
        printf("bulk: 64 KiB writes through two encrypted sessions %.0f MB/s, "
               "plaintext %.0f MB/s\n", sealed_bulk / 1e6, plain_bulk / 1e6);
        printf("target: encrypted >= 0.50x plaintext: %.2fx %s\n",
               sealed_bulk / plain_bulk,
               sealed_bulk / plain_bulk >= 0.5 ? "met" : "MISSED");
        ok &= sealed_bulk / plain_bulk >= 0.5;
    }

    /* 6. small frames and handshakes, encrypted: reported */
    printf("small: 64-byte frames, encrypted: %.2f million/s (a record each)\n",
           small_run(src, dst, 0) / 1e6);
    printf("handshakes, encrypted: %.1f thousand/s (X25519 both ways)\n",
           handshake_run(0) / 1e3);
    free(mem[0]);
    free(mem[1]);
    return ok ? 0 : 1;
}

/* pump.c - fuzz target `pump`: alktunnel.h's two-way pump (alkt_pump).
 *
 * Two sessions joined by two bounded byte pipes carry one channel; at each
 * end an alkt_pump joins it to a model endpoint (a socket the app owns)
 * with a drawn buffer size (1..4096 bytes) and a drawn amount to send
 * (0..96 KiB). The opener's pump starts on the channel still OPENING (an
 * app does not wait for the answer to start pumping), and an opener that
 * sends less than its buffer and 256 bytes hands the pump all of it and
 * its EOF before the open is answered: the bytes and the EOF must wait for
 * the open, not be lost to it. The input draws the config (windows, frame
 * size, resend log) and then the steps: an endpoint reads into its pump (a drawn
 * amount, or its EOF once its bytes are out), writes what the pump offers
 * (a drawn part), shuts its write side when told, stalls; bytes cross the
 * pipes in drawn segments; the connection drops (what is in flight is
 * lost) and the session resumes; time passes; rarely, an endpoint fails.
 * After every step, for both ends:
 *   - the bytes an endpoint receives are the far endpoint's, in order, at
 *     their offset, never more than the far endpoint has read;
 *   - SHUT_WRITE only after the far endpoint's last byte arrived and its
 *     EOF was given; DONE only when both directions ended; ABORT only
 *     after a failure;
 *   - the pump holds what it took from the endpoint and did not give the
 *     channel (from_endpoint - to_channel), never more than its buffer, and
 *     READ is off when that buffer is full (backpressure);
 *   - to_endpoint counts exactly what the endpoint took.
 * At the end (no stalls, everything moves until quiet): without a failure
 * both pumps are DONE, every byte arrived both ways, both ends were told to
 * shut once; after a failure both pumps abort. */
#include "alktunnel.h"
#include "alksim.h"
#include "../testkit/alk_check.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PP_PIPE 8192u
#define PP_MAX_DATA (96u << 10)
#define PP_SEC 1000000000ull

typedef struct pp_pipe {
    unsigned char buf[PP_PIPE];
    size_t head, len;
} pp_pipe;

typedef struct pp_end {
    alkt_pump p;
    unsigned char buf[4096];
    uint64_t src_len, src_at;   /* what this endpoint sends; read so far */
    uint64_t got;               /* bytes it took from its pump */
    int eof_given, shut, done, aborted;
} pp_end;

typedef struct pp {
    alksim_source src;
    alkt_session s[2];          /* 0 client, 1 server */
    void *mem[2];
    pp_pipe pipe[2];            /* pipe[k]: what side k sent */
    pp_end e[2];
    uint32_t id;
    uint64_t now;
    unsigned char nonce;
    int failed;                 /* an endpoint failed: both must abort */
} pp;

static const unsigned char pp_secret[32] = "pump harness secret, 32 bytes..";

/* Byte i of what endpoint k sends. */
static unsigned char pp_byte(int k, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(unsigned)(k + 1) * 0xbf58476d1ce4e5b9ull;
    return (unsigned char)(x >> 29);
}

static void pp_events(pp *t, int k)
{
    alkt_event ev;
    while (alkt_session_poll_event(&t->s[k], &ev)) {
        if (ev.type == ALKT_EV_CLOSED)
            ALK_CHECK(0, "side %d: the session closed (%s)", k,
                      alkt_strerror(ev.code));
        if (ev.type == ALKT_EV_RESET)
            ALK_CHECK(t->failed, "side %d: channel reset without a failure", k);
        if (ev.type == ALKT_EV_OPEN_REQUEST)
            ALK_CHECK(k == 1 && alkt_channel_accept(&t->s[1], ev.channel, NULL) ==
                                    ALKT_OK, "side %d: accept", k);
    }
}

/* Up to n bytes of side k's output into its pipe, through transmit_peek. */
static void pp_transmit(pp *t, int k, size_t n)
{
    pp_pipe *q = &t->pipe[k];
    while (n) {
        const void *d;
        size_t m = alkt_session_transmit_peek(&t->s[k], &d), i;
        if (m == 0) break;
        if (m > n) m = n;
        if (m > PP_PIPE - q->len) m = PP_PIPE - q->len;
        if (m == 0) break;
        for (i = 0; i < m; i++)
            q->buf[(q->head + q->len + i) % PP_PIPE] = ((const unsigned char *)d)[i];
        q->len += m;
        ALK_CHECK(alkt_session_transmit_done(&t->s[k], m) == ALKT_OK,
                  "transmit_done(%zu) refused", m);
        n -= m;
    }
}

/* Up to n bytes of side k's pipe into the other side, in pieces of seg. */
static void pp_deliver(pp *t, int k, size_t n, size_t seg)
{
    pp_pipe *q = &t->pipe[k];
    unsigned char b[PP_PIPE];
    if (!seg) seg = 1;
    while (n && q->len) {
        size_t m = n < seg ? n : seg, i;
        if (m > q->len) m = q->len;
        for (i = 0; i < m; i++) b[i] = q->buf[(q->head + i) % PP_PIPE];
        q->head = (q->head + m) % PP_PIPE;
        q->len -= m;
        n -= m;
        (void)alkt_session_handle_input(&t->s[1 - k], b, m, t->now);
        pp_events(t, 1 - k);
    }
}

static void pp_flow(pp *t)
{
    int k, i;
    for (i = 0; i < 64; i++) {
        size_t moved = 0;
        for (k = 0; k < 2; k++) {
            pp_transmit(t, k, PP_PIPE);
            moved += t->pipe[k].len;
            pp_deliver(t, k, PP_PIPE, PP_PIPE);
        }
        if (!moved) break;
    }
}

/* A new connection: both connect, the handshake runs (resuming the
 * session after the first). */
static void pp_connect(pp *t)
{
    unsigned char n[ALKT_NONCE_SIZE];
    int k;
    for (k = 1; k >= 0; k--) {
        memset(n, ++t->nonce, sizeof n);
        ALK_CHECK(alkt_session_connect(&t->s[k], t->now, n) == ALKT_OK,
                  "connect %d", k);
    }
    pp_flow(t);
    for (k = 0; k < 2; k++) {
        pp_events(t, k);
        ALK_CHECK(alkt_session_is_established(&t->s[k]), "side %d: no session", k);
    }
}

static void pp_drop(pp *t)
{
    int k;
    alk_trace("drop the connection (%zu + %zu bytes in flight), resume",
              t->pipe[0].len, t->pipe[1].len);
    for (k = 0; k < 2; k++) {
        t->pipe[k].head = t->pipe[k].len = 0;
        alkt_session_handle_disconnected(&t->s[k], t->now);
        pp_events(t, k);
    }
    pp_connect(t);
}

/* Endpoint k's turn: read, write, shut, as the pump asks. */
static void pp_turn(pp *t, int k, size_t rd, size_t wr, int stall)
{
    pp_end *e = &t->e[k];
    unsigned want = alkt_pump_poll(&e->p);
    /* DONE is final: every later poll says DONE again */
    ALK_CHECK(!e->done || want == ALKT_PUMP_DONE, "end %d: poll %u after DONE",
              k, want);
    if (want & ALKT_PUMP_DONE) { e->done = 1; return; }
    if (want & ALKT_PUMP_ABORT) { e->aborted = 1; return; }
    if ((want & ALKT_PUMP_READ) && rd) {
        void *b;
        size_t room = alkt_pump_read_buffer(&e->p, &b), i;
        ALK_CHECK(room > 0 && b, "side %d: READ with no room", k);
        if (e->src_at < e->src_len) {
            size_t m = rd < room ? rd : room;
            if (m > e->src_len - e->src_at) m = (size_t)(e->src_len - e->src_at);
            for (i = 0; i < m; i++)
                ((unsigned char *)b)[i] = pp_byte(k, e->src_at + i);
            e->src_at += m;
            ALK_CHECK(alkt_pump_endpoint_read(&e->p, m) == ALKT_OK, "endpoint_read");
        } else if (!e->eof_given) {
            e->eof_given = 1;
            ALK_CHECK(alkt_pump_endpoint_eof(&e->p) == ALKT_OK, "endpoint_eof");
        }
    }
    /* (an odd amount peeks even without WRITE, as an app may: then it
     * must see nothing, and no early EOF) */
    if (((want & ALKT_PUMP_WRITE) || (wr & 1)) && wr && !stall) {
        const void *d;
        size_t n = alkt_pump_write_peek(&e->p, &d), i, m;
        if (n) {
            const unsigned char *b = (const unsigned char *)d;
            m = wr < n ? wr : n;
            for (i = 0; i < m; i++)
                ALK_CHECK(b[i] == pp_byte(1 - k, e->got + i),
                          "side %d: byte %llu reads %02x, sent %02x", k,
                          (unsigned long long)(e->got + i), b[i],
                          pp_byte(1 - k, e->got + i));
            e->got += m;
            ALK_CHECK(alkt_pump_endpoint_wrote(&e->p, m) == ALKT_OK, "endpoint_wrote");
        }
    }
    if (want & ALKT_PUMP_SHUT_WRITE) {
        ALK_CHECK(!e->shut, "side %d: told to shut twice", k);
        e->shut = 1;
        ALK_CHECK(alkt_pump_endpoint_shut(&e->p) == ALKT_OK, "endpoint_shut");
    }
}

static void pp_check(pp *t)
{
    int k;
    for (k = 0; k < 2; k++) {
        pp_end *e = &t->e[k], *far = &t->e[1 - k];
        unsigned want = alkt_pump_poll(&e->p);
        uint64_t held = e->p.from_endpoint - e->p.to_channel;
        ALK_CHECK(!(want & ALKT_PUMP_ABORT) || t->failed,
                  "side %d: ABORT (%d) without a failure", k, e->p.code);
        if (want & ALKT_PUMP_ABORT) {
            /* an aborted pump takes no more: every endpoint call is
             * ALKT_ERR_RESET, and there is nothing to read or write */
            void *vb;
            const void *cd;
            ALK_CHECK(alkt_pump_endpoint_wrote(&e->p, 0) == ALKT_ERR_RESET &&
                          alkt_pump_endpoint_read(&e->p, 0) == ALKT_ERR_RESET &&
                          alkt_pump_endpoint_eof(&e->p) == ALKT_ERR_RESET &&
                          alkt_pump_read_buffer(&e->p, &vb) == 0 &&
                          alkt_pump_write_peek(&e->p, &cd) == 0,
                      "side %d: an aborted pump took a call", k);
        }
        ALK_CHECK(e->p.from_endpoint == e->src_at, "side %d: from_endpoint %llu, "
                  "read %llu", k, (unsigned long long)e->p.from_endpoint,
                  (unsigned long long)e->src_at);
        ALK_CHECK(held <= e->p.cap && held == e->p.len,
                  "side %d: the pump holds %llu (len %zu, cap %zu)", k,
                  (unsigned long long)held, e->p.len, e->p.cap);
        ALK_CHECK(!(want & ALKT_PUMP_READ) || e->p.len < e->p.cap,
                  "side %d: READ with a full buffer", k);
        ALK_CHECK(e->p.to_endpoint == e->got, "side %d: to_endpoint %llu, took %llu",
                  k, (unsigned long long)e->p.to_endpoint, (unsigned long long)e->got);
        ALK_CHECK(e->got <= far->src_at, "side %d: got %llu, the far end read %llu",
                  k, (unsigned long long)e->got, (unsigned long long)far->src_at);
        if (t->failed) continue;
        if ((want & ALKT_PUMP_SHUT_WRITE) || e->shut)
            ALK_CHECK(far->eof_given && e->got == far->src_len,
                      "side %d: told to shut after %llu of %llu bytes", k,
                      (unsigned long long)e->got, (unsigned long long)far->src_len);
        if (want & ALKT_PUMP_DONE)
            ALK_CHECK(e->shut && e->eof_given && e->p.to_channel == e->src_len,
                      "side %d: DONE before both directions ended", k);
    }
}

/* Every pump and session call without its object, and every pump call
 * on a pump never set up (no session), refuses - ALKT_ERR_ARG, ABORT from
 * the polls, 0 from the size queries - without touching anything; so do
 * the calls that fill an output given none. Once per process, on a live
 * session and channel. */
static void pp_null_args(pp *t)
{
    static int done;
    alkt_pump zp;
    alkt_dgram_pump zd;
    const void *cd;
    void *vd;
    alkt_channel_info info;
    alkt_open_params op;
    uint32_t id;
    alkt_session *s = &t->s[0];
    if (done) return;
    done = 1;
    memset(&zp, 0, sizeof zp);
    memset(&zd, 0, sizeof zd);
    memset(&op, 0, sizeof op);
    ALK_CHECK(alkt_pump_poll(NULL) == ALKT_PUMP_ABORT && alkt_pump_poll(&zp) == ALKT_PUMP_ABORT &&
                  alkt_pump_read_buffer(NULL, &vd) == 0 && alkt_pump_read_buffer(&zp, &vd) == 0 &&
                  alkt_pump_read_buffer(&t->e[0].p, NULL) == 0 &&
                  alkt_pump_endpoint_read(NULL, 0) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_read(&zp, 0) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_eof(NULL) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_eof(&zp) == ALKT_ERR_ARG &&
                  alkt_pump_write_peek(NULL, &cd) == 0 && alkt_pump_write_peek(&zp, &cd) == 0 &&
                  alkt_pump_write_peek(&t->e[0].p, NULL) == 0 &&
                  alkt_pump_endpoint_wrote(NULL, 0) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_wrote(&zp, 0) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_shut(NULL) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_shut(&zp) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_failed(NULL, 1) == ALKT_ERR_ARG &&
                  alkt_pump_endpoint_failed(&zp, 1) == ALKT_ERR_ARG &&
                  alkt_pump_init(NULL, s, t->id, t->e[0].buf, 1) == ALKT_ERR_ARG,
              "a pump call without a pump, or on one never set up");
    ALK_CHECK(alkt_dgram_pump_poll(NULL) == ALKT_PUMP_ABORT &&
                  alkt_dgram_pump_poll(&zd) == ALKT_PUMP_ABORT &&
                  alkt_dgram_pump_send(NULL, "x", 1) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_send(&zd, "x", 1) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_recv(NULL, &cd) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_recv(&zd, &cd) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_delivered(&zd) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_endpoint_eof(NULL) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_endpoint_eof(&zd) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_endpoint_failed(NULL, 1) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_endpoint_failed(&zd, 1) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_init(NULL, s, t->id, t->e[0].buf, 64, 16) == ALKT_ERR_ARG,
              "a datagram pump call without a pump, or on one never set up");
    ALK_CHECK(alkt_session_poll_transmit(NULL, t->e[0].buf, 1) == 0 &&
                  alkt_session_poll_transmit(s, NULL, 1) == 0 &&
                  alkt_session_transmit_peek(NULL, &cd) == 0 &&
                  alkt_session_transmit_peek(s, NULL) == 0 &&
                  alkt_session_close(NULL, 0) == ALKT_ERR_ARG &&
                  alkt_session_handle_input(NULL, "x", 1, 0) == ALKT_ERR_ARG &&
                  alkt_session_handle_input(s, NULL, 1, 0) == ALKT_ERR_ARG &&
                  alkt_channel_info_get(NULL, t->id, &info) == ALKT_ERR_ARG &&
                  alkt_channel_info_get(s, t->id, NULL) == ALKT_ERR_ARG &&
                  alkt_channel_open(NULL, &op, &id) == ALKT_ERR_ARG &&
                  alkt_channel_open(s, NULL, &id) == ALKT_ERR_ARG &&
                  alkt_channel_open(s, &op, NULL) == ALKT_ERR_ARG,
              "a session call without its session or output");
    alkt_session_handle_disconnected(NULL, t->now);   /* (returns, touching nothing) */
    {
        /* a datagram pump whose channel is gone: its endpoint's failure
         * still aborts it with that code, and is fine */
        alkt_dgram_pump dp;
        unsigned char dm[2 * (16 + 2)];
        ALK_CHECK(alkt_dgram_pump_init(&dp, s, 0x7ffffffdu, dm, sizeof dm, 16) == ALKT_OK &&
                      alkt_dgram_pump_endpoint_failed(&dp, 9) == ALKT_OK &&
                      alkt_dgram_pump_poll(&dp) == ALKT_PUMP_ABORT && dp.code == 9,
                  "a datagram pump's endpoint failure on a gone channel: code %d", dp.code);
    }
    {
        /* a read of a channel there is not clears what it fills */
        int eof = 1;
        cd = "x";
        ALK_CHECK(alkt_channel_peek(s, 0x7fffffffu, &cd, &eof) == ALKT_ERR_NO_CHANNEL &&
                      cd == NULL && eof == 0,
                  "peek of no channel left its outputs");
        eof = 1;
        ALK_CHECK(alkt_channel_consume(s, 0x7fffffffu, 1, &eof) == ALKT_ERR_NO_CHANNEL &&
                      eof == 0,
                  "consume of no channel left its eof");
        cd = "x";
        ALK_CHECK(alkt_dgram_pump_recv(&zd, &cd) == ALKT_ERR_ARG && cd == NULL,
                  "a datagram pump never set up left recv's output");
    }
}

static void pp_setup(pp *t)
{
    int k;
    uint32_t window = (uint32_t)alksim_range(&t->src, 256, 65536);
    uint32_t frame = (uint32_t)alksim_range(&t->src, 256, ALKT_FRAME_PAYLOAD_MAX);
    uint32_t log = (uint32_t)alksim_range(&t->src, 4 * (8 + frame), 8 * (8 + frame) + 65536);
    alkt_open_params o;
    alkt_channel_info info;
    alk_trace("window %u, frame %u, log %u", window, frame, log);
    t->now = PP_SEC;
    for (k = 0; k < 2; k++) {
        alkt_session_config c;
        size_t need;
        memset(&c, 0, sizeof c);
        c.is_server = k;
        c.secret = pp_secret;
        c.secret_len = sizeof pp_secret;
        c.identity = k ? "gateway" : "client";
        c.identity_len = strlen(c.identity);
        c.max_channels = k ? 1 : 2; /* the server allows the client one */
        c.channel_window = window;
        c.max_frame = frame;
        c.log_size = log;
        need = alkt_session_mem_size(&c);
        ALK_CHECK(need > 0, "config refused");
        t->mem[k] = malloc(need);
        /* one byte short of the size asked is refused */
        ALK_CHECK(t->mem[k] && alkt_session_init(&t->s[k], &c, t->mem[k], need - 1,
                                                 t->now) == ALKT_ERR_NOMEM &&
                      alkt_session_init(&t->s[k], &c, t->mem[k], need, t->now) == ALKT_OK,
                  "init");
        /* no peer identity before one was proved */
        ALK_CHECK(alkt_session_peer_identity(&t->s[k], NULL) == NULL,
                  "a peer identity before the handshake");
    }
    pp_connect(t);
    ALK_CHECK(alkt_open_params_direct(&o, ALKT_SUBSTRATE_TCP, "target", 6, 7) == ALKT_OK &&
                  alkt_channel_open(&t->s[0], &o, &t->id) == ALKT_OK,
              "open");
    {
        /* the client has room for two, the server's HELLO said one */
        uint32_t id2 = 12345;
        ALK_CHECK(alkt_channel_open(&t->s[0], &o, &id2) == ALKT_ERR_CHANNELS_FULL,
                  "a second channel past the peer's limit of one");
    }
    for (k = 0; k < 2; k++) {
        /* the opener's pump starts on the channel still OPENING (as an app
         * does: the pump waits for the answer); the server's once it has
         * accepted the open */
        size_t cap = (size_t)alksim_range(&t->src, 1, sizeof t->e[k].buf);
        t->e[k].src_len = alksim_range(&t->src, 0, PP_MAX_DATA);
        alk_trace("end %d: buffer %zu, sends %llu bytes", k, cap,
                  (unsigned long long)t->e[k].src_len);
        if (k == 1) {
            pp_flow(t);   /* (pp_events accepts the open on the server) */
            pp_flow(t);
            pp_events(t, 0);
            pp_events(t, 1);
            ALK_CHECK(alkt_channel_info_get(&t->s[1], t->id, &info) == ALKT_OK &&
                          info.state == ALKT_CHANNEL_OPEN, "the channel did not open");
        }
        ALK_CHECK(alkt_pump_init(&t->e[k].p, &t->s[k], t->id, t->e[k].buf, cap) ==
                      ALKT_OK, "pump init");
        if (k == 0 && t->e[0].src_len < 256 && t->e[0].src_len < cap) {
            /* a short sender hands the pump all it has and its EOF before
             * the channel is open: both must wait for the open, not be
             * lost to it (the end-of-run check wants every byte and the
             * EOF across) */
            ALK_CHECK(alkt_channel_info_get(&t->s[0], t->id, &info) == ALKT_OK &&
                          info.state == ALKT_CHANNEL_OPENING, "the channel is not opening");
            alk_trace("end 0: its bytes and EOF before the channel is open");
            pp_turn(t, 0, (size_t)t->e[0].src_len, 0, 0);
            pp_turn(t, 0, 1, 0, 0);
            ALK_CHECK(t->e[0].src_at == t->e[0].src_len && t->e[0].eof_given,
                      "end 0: the pump took %llu of %llu bytes and %s EOF while opening",
                      (unsigned long long)t->e[0].src_at,
                      (unsigned long long)t->e[0].src_len, t->e[0].eof_given ? "its" : "no");
        }
    }
    pp_null_args(t);
}

static size_t pp_amount(pp *t)
{
    /* mostly small, sometimes a whole buffer or more */
    return alksim_chance(&t->src, 1, 4) ? (size_t)alksim_range(&t->src, 1, 20000)
                                        : (size_t)alksim_range(&t->src, 1, 300);
}

static void pp_run(pp *t)
{
    unsigned step;
    int k, stall[2] = {0, 0};
    pp_setup(t);
    for (step = 0; step < 400 && !alksim_source_done(&t->src); step++) {
        unsigned kind = (unsigned)alksim_range(&t->src, 0, 9);
        k = alksim_bool(&t->src);
        switch (kind) {
        case 0: case 1: case 2: {
            /* (one draw per statement, in the order gcc drew them: C
             * leaves a call's argument order open, and clang's other
             * order made an input another scenario in the campaigns) */
            size_t back = pp_amount(t);
            pp_turn(t, k, pp_amount(t), back, stall[k]);
            break;
        }
        case 3: case 4:
            pp_transmit(t, k, pp_amount(t));
            break;
        case 5: case 6: {
            size_t seg = (size_t)alksim_range(&t->src, 1, 3000);   /* (gcc's order) */
            pp_deliver(t, k, pp_amount(t), seg);
            break;
        }
        case 7:
            stall[k] = !stall[k];
            alk_trace("end %d %s", k, stall[k] ? "stalls" : "writes again");
            break;
        case 8:
            if (alksim_chance(&t->src, 1, 3)) {
                pp_drop(t);
            } else {
                t->now += alksim_range(&t->src, 1, 20) * PP_SEC;
                for (k = 0; k < 2; k++) alkt_session_handle_timeout(&t->s[k], t->now);
                pp_flow(t);   /* (the idle timeout must not fire: keep talking) */
            }
            break;
        case 9:
            if (alksim_chance(&t->src, 1, 16) && !t->failed) {
                unsigned was = alkt_pump_poll(&t->e[k].p);
                alk_trace("end %d fails", k);
                ALK_CHECK(alkt_pump_endpoint_failed(&t->e[k].p, 42) == ALKT_OK,
                          "endpoint_failed");
                /* (a pump already done has nothing left to fail) */
                if (!(was & ALKT_PUMP_DONE)) {
                    t->failed = 1;
                    ALK_CHECK(alkt_pump_poll(&t->e[k].p) == ALKT_PUMP_ABORT &&
                                  t->e[k].p.code == 42, "end %d: no ABORT(42)", k);
                    /* an aborted pump takes no more from its endpoint */
                    ALK_CHECK(alkt_pump_endpoint_wrote(&t->e[k].p, 0) == ALKT_ERR_RESET,
                              "end %d: endpoint_wrote after the abort", k);
                } else {
                    ALK_CHECK(alkt_pump_poll(&t->e[k].p) == ALKT_PUMP_DONE,
                              "end %d: a done pump failed", k);
                }
            }
            break;
        }
        for (k = 0; k < 2; k++) pp_events(t, k);
        pp_check(t);
    }
    /* heal: no stalls, everything moves until both pumps end */
    alk_trace("heal");
    for (step = 0; step < 100000 && !(t->e[0].done + t->e[0].aborted &&
                                     t->e[1].done + t->e[1].aborted); step++) {
        for (k = 0; k < 2; k++)
            if (!t->e[k].done && !t->e[k].aborted) pp_turn(t, k, 4096, 4096, 0);
        pp_flow(t);
        for (k = 0; k < 2; k++) pp_events(t, k);
        pp_check(t);
    }
    for (k = 0; k < 2; k++) {
        pp_end *e = &t->e[k];
        if (t->failed && e->aborted) continue;
        /* after a failure the far pump may have finished first: then it
         * had everything, as without one */
        if (t->failed)
            ALK_CHECK(e->done, "side %d: neither ABORT nor DONE after the failure", k);
        ALK_CHECK(e->done, "side %d: the pump never ended (got %llu of %llu)", k,
                  (unsigned long long)e->got, (unsigned long long)t->e[1 - k].src_len);
        ALK_CHECK(e->got == t->e[1 - k].src_len && e->shut,
                  "side %d: %llu of %llu bytes, shut %d", k,
                  (unsigned long long)e->got,
                  (unsigned long long)t->e[1 - k].src_len, e->shut);
        ALK_CHECK(e->p.from_endpoint == e->p.to_channel, "side %d: in %llu, out %llu",
                  k, (unsigned long long)e->p.from_endpoint,
                  (unsigned long long)e->p.to_channel);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pp t;
    alk_trace_reset();
    memset(&t, 0, sizeof t);
    alksim_source_init_bytes(&t.src, data, size);
    pp_run(&t);
    if (getenv("PUMP_TRACE")) alk_trace_dump(stderr);
    free(t.mem[0]);
    free(t.mem[1]);
    return 0;
}

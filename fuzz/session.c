/* session.c - fuzz target `session`: alktunnel.h's channel-mux session.
 *
 * The first input byte picks the mode (bits 0 and 7), the rest drives it through
 * alksim's byte source.
 *
 * Mode 0, two sessions back to back: a client and a server joined by two
 * bounded byte pipes, and a drawn config (channel and session windows,
 * resend log, frame size, channel count). Transitions, drawn per step:
 * open from either side, send, receive, move bytes across in drawn
 * segments, transmit, shut down a direction, reset, answer opens (accept,
 * with or without a listen reply, or refuse), let time pass (pings, idle
 * timeouts, resume expiry), drop the connection (everything in flight is
 * lost), reconnect (the session resumes), close. After every step the
 * model says:
 *   - every byte read is the sender's byte at that offset of that channel
 *     and direction: in order, exactly once, uncorrupted, across drops and
 *     resumes; nobody reads past what the sender's send() took;
 *   - EOF only after every byte the sender wrote before shutting down;
 *     an empty read is never EOF;
 *   - every open has at most one outcome (OPENED, OPEN_FAILED, or the
 *     channel reset); no event for a channel after its CHANNEL_DONE;
 *   - buffered bytes within the channel window, credit outstanding within
 *     the session window; poll_timeout never before now;
 *   - the resume window runs from the loss of a working connection: a
 *     connection lost while still in its handshake leaves it where it was
 *     (failed attempts do not extend it).
 * At the end (heal, reconnect, pump until quiet): unless the session or
 * the channel ended, every byte sent arrived, every EOF arrived, every
 * open got its outcome.
 *
 * Mode 2 (first byte 0x80 set, bit 0 clear), a handshake with bytes changed
 * on the path: both HELLOs and both AUTHs go through a drawn number of
 * byte changes and cuts; the server may end up established exactly when
 * nothing was changed, and it drains its output and keeps its deadlines.
 *
 * Mode 3 (first byte 0x70 with bits 2-3 free), records changed on the path:
 * mode 0, encrypted, with one more transition that changes the records in
 * flight to one side - a byte flipped, a range cut out, a record replayed
 * later, two records swapped. The receiver must never take the record
 * that held the first changed byte (once it is past it, between records,
 * it is closed), must end with ALKT_ERR_DECRYPT or wait for a record that
 * will not come (the connection is then dropped and resumed), and every
 * byte read is still the sender's.
 *
 * In every mode, the first byte's bit 1 makes the sessions plaintext and
 * bits 2-3 pick the records per key (the default, 2, 3, 7: rekeying all
 * the time), and after every step the nonce oracle says: under one key the
 * record counter only grows, and a key once replaced never seals again.
 *
 * Mode 4 (first byte 0x30 with bits 2-3 free), an off-path attacker: mode
 * 0 with one more transition, a party without the secret injecting bytes:
 * a HELLO that proves nothing (its MAC broken, or a HELLO recorded from an
 * earlier connection replayed) as the first bytes of a fresh connection
 * to the server; a cleartext GOAWAY, or a REFUSE with a made-up MAC, into
 * the client while it handshakes; or drawn bytes into either side at any
 * time (not in plaintext: past its handshake nothing protects it).
 * With first byte 0x50 (bits 2-3 free) also: drawn bytes in the place of
 * the client's AUTH, after the server's HELLO and AUTH reached the client.
 * It may cost a connection, never the session: the server says nothing
 * to a HELLO that proves nothing (not a byte, and its freshness floor does
 * not move), no injection ends a session (no CLOSED but a close, the peer
 * app's GOAWAY, or a resume window passing), and at the end everything
 * arrived once as in mode 0.
 *
 * Mode 1, a hostile peer: a real client handshakes with the server
 * session, then the input's bytes go to the server as frames from the
 * peer (forged types, bad lengths, window overruns, data after EOF,
 * duplicate opens, frames for unknown ids, GOAWAY...). No crash, no
 * unbounded anything; after each chunk: poll_timeout never before now,
 * the output drains, memory stays within the windows, and a refusal ends
 * the connection or the session with a code. */
#include "alktunnel.h"
#include "../testkit/alktunnel_internal.h"
#include "alksim.h"
#include "../testkit/alk_check.h"
#include "../testkit/aead_ref.h"
#include "sha256_ref.h"
#include "x25519_ref.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SS_PIPE (1u << 16)
#define SS_MODEL_MAX 64u
#define SS_STEPS 400u
#define SEC 1000000000ull

typedef struct ss_pipe {
    unsigned char buf[SS_PIPE];
    size_t head, len;
    int tamper;          /* mode 3: bytes were changed on this pipe ... */
    size_t tamper_at;    /* ... the first changed one this far from head */
    int injected;        /* mode 4: an attacker's drawn bytes went in after
                            what was in flight (until the connection drops) */
} ss_pipe;

typedef struct ss_dir {
    uint64_t accepted, delivered, eof_at;
    int eof_sent, eof_seen;
} ss_dir;

/* One channel as the application sees it; d[0] flows from the opener. */
typedef struct ss_chan {
    uint32_t id;
    int opener;        /* side that opened it */
    int outcome;       /* 0 none yet, 1 opened, 2 refused */
    int answered;      /* the peer's app accepted or refused */
    int refused_by_reset;   /* the peer's app reset it unanswered: the
                               opener hears OPEN_FAILED, not RESET */
    int reset;         /* either side reset it, or a session ended */
    int done[2];       /* CHANNEL_DONE seen by that side */
    int known[2];      /* that side has it (opened it / saw the request) */
    ss_dir d[2];
} ss_chan;

typedef struct ss_side {
    alkt_session s;
    void *mem;
    int established, closed, connected;
    unsigned tx_turn, rx_turn;  /* every other call takes the zero-copy
                                   path (no draw: inputs keep meaning) */
    /* the nonce oracle: the sending key's fingerprint and its counter,
     * and the keys retired before it */
    unsigned char key_fp[8], retired[64][8];
    uint64_t key_ctr;
    unsigned n_retired;
    int tampered;                /* its input was changed on the path */
} ss_side;

typedef struct ss {
    alksim_source src;
    ss_side side[2];
    ss_pipe pipe[2];     /* pipe[i]: bytes side i sent, for side 1 - i */
    ss_chan ch[SS_MODEL_MAX];
    size_t n_ch;
    uint64_t now;
    uint32_t window, session_window;
    unsigned char nonce_ctr;
    int hostile;         /* mode 1: side 0 is the peer's vehicle only */
    int plaintext;       /* first byte, bit 1: no encryption */
    uint64_t rekey;      /* first byte, bits 2-3: records per key */
    uint32_t seal_batch[2]; /* the same bits: records sealed at a time */
    int tamper;          /* mode 3: records changed on the path */
    int attack;          /* mode 4: an off-path party injects bytes (2:
                            into the client's AUTH's place too) */
    int pair;            /* ss_pair: both ends are sessions of one config */
    unsigned hs_kept;    /* ss_pair: drops and reconnects a handshake was spared */
    unsigned char hello[2][ALKT_FRAME_HEADER + ALKT__HELLO_MAX];   /* the
                            client's HELLOs: this connection's, the last */
    size_t hello_len[2];
} ss;

static unsigned char ss_byte(uint32_t id, int dir, uint64_t off)
{
    uint64_t x = ((uint64_t)id * 2 + (uint64_t)dir) * 0x9e3779b97f4a7c15ull +
                 off * 0xbf58476d1ce4e5b9ull;
    return (unsigned char)(x >> 56);
}

static ss_chan *ss_find(ss *t, uint32_t id)
{
    size_t i;
    for (i = 0; i < t->n_ch; i++)
        if (t->ch[i].id == id) return &t->ch[i];
    return NULL;
}

static void ss_nonce(ss *t, unsigned char n[ALKT_NONCE_SIZE])
{
    size_t i;
    t->nonce_ctr++;
    for (i = 0; i < ALKT_NONCE_SIZE; i++)
        n[i] = (unsigned char)(t->nonce_ctr * 31u + i * 7u);
}

static size_t ss_pipe_room(const ss_pipe *p);
static void ss_transmit(ss *t, int k);

/* ---- invariants after every step ---- */
/* No (key, nonce) pair seals twice: under one key the record counter only
 * grows; a key once replaced (rekey, a new connection) never comes back. */
static void ss_check_nonces(ss *t, int k)
{
    ss_side *sd = &t->side[k];
    const alkt_session *s = &sd->s;
    static const unsigned char none[8] = {0};
    unsigned i;
    if (s->plaintext || memcmp(s->tx_key, none, 8) == 0) return;
    if (memcmp(s->tx_key, sd->key_fp, 8) == 0) {
        ALK_CHECK(s->tx_ctr >= sd->key_ctr,
                  "side %d: the record counter went back from %llu to %llu "
                  "under the same key: nonces used twice", k,
                  (unsigned long long)sd->key_ctr,
                  (unsigned long long)s->tx_ctr);
    } else {
        for (i = 0; i < sd->n_retired && i < 64; i++)
            ALK_CHECK(memcmp(s->tx_key, sd->retired[i], 8) != 0,
                      "side %d: a key retired before seals again", k);
        if (memcmp(sd->key_fp, none, 8) != 0)
            memcpy(sd->retired[sd->n_retired++ % 64], sd->key_fp, 8);
        memcpy(sd->key_fp, s->tx_key, 8);
    }
    sd->key_ctr = s->tx_ctr;
}

static void ss_check_side(ss *t, int k)
{
    alkt_session *s = &t->side[k].s;
    uint64_t d = alkt_session_poll_timeout(s);
    uint32_t i;
    ss_check_nonces(t, k);
    ALK_CHECK(d >= s->now, "side %d: deadline %llu before now %llu", k,
              (unsigned long long)d, (unsigned long long)s->now);
    if (d > s->now && ss_pipe_room(&t->pipe[k]) > 0 && t->side[k].connected) {
        /* a later deadline promises nothing is queued: a driver sleeping
         * until then would hold back output (what is found goes on) */
        size_t was = t->pipe[k].len;
        ss_transmit(t, k);
        ALK_CHECK(t->pipe[k].len == was,
                  "side %d: %zu bytes queued behind a deadline %llu ns ahead",
                  k, t->pipe[k].len - was,
                  (unsigned long long)(d - s->now));
    }
    ALK_CHECK(s->budget_used <= s->session_window,
              "side %d: %llu bytes of credit and buffer, session window %u", k,
              (unsigned long long)s->budget_used, s->session_window);
    for (i = 0; i < s->max_channels; i++) {
        const alkt__chan *c = &s->chans[i];
        if (c->state == ALKT_CHANNEL_NONE) continue;
        /* (a frame still arriving is inside the credit it uses) */
        ALK_CHECK(c->rcv_partial <= c->rcv_granted,
                  "side %d channel %u: %u bytes arriving, %u granted", k, c->id,
                  c->rcv_partial, c->rcv_granted);
        ALK_CHECK((uint64_t)c->rcv_len + c->rcv_granted <= s->channel_window,
                  "side %d channel %u: %u buffered + %u granted past the "
                  "window %u", k, c->id, c->rcv_len, c->rcv_granted,
                  s->channel_window);
        {
            /* credit is what the peer lets us send: none on a channel
             * that ended or that we shut down, none before the peer
             * answered our OPEN (an INCOMING one shows what the opener
             * granted, for once it is accepted) */
            alkt_channel_info info;
            ALK_CHECK(alkt_channel_info_get(s, c->id, &info) == ALKT_OK,
                      "side %d channel %u: no info", k, c->id);
            ALK_CHECK(info.send_credit == 0 ||
                          ((info.state == ALKT_CHANNEL_OPEN ||
                            info.state == ALKT_CHANNEL_INCOMING) &&
                           !info.write_closed),
                      "side %d channel %u: %llu bytes of send credit in state %d "
                      "(write closed %d)", k, c->id,
                      (unsigned long long)info.send_credit, (int)info.state,
                      info.write_closed);
        }
    }
    ALK_CHECK(s->log_tail - s->log_head <= s->log_size, "side %d: log over",
              k);
    /* what the peer's HELLO said is what the peer was configured with */
    if (t->pair && alkt_session_is_established(s)) {
        const alkt_session *o = &t->side[1 - k].s;
        ALK_CHECK(s->peer_max_frame == o->max_frame && s->peer_log_size == o->log_size &&
                      s->peer_max_channels == o->max_channels,
                  "side %d: the peer's HELLO read as frame %u, log %u, channels %u "
                  "(it has %u, %u, %u)", k, s->peer_max_frame, s->peer_log_size,
                  s->peer_max_channels, o->max_frame, o->log_size, o->max_channels);
    }
}

/* ---- the pipes ---- */
static size_t ss_pipe_room(const ss_pipe *p)
{
    return SS_PIPE - p->len;
}

/* Into the pipe: with poll_transmit, or with transmit_peek/done taking
 * only what fits (a part of a frame, on a full pipe). */
static void ss_transmit(ss *t, int k)
{
    ss_pipe *p = &t->pipe[k];
    alkt_session *s = &t->side[k].s;
    unsigned char buf[4096];
    int zero_copy = (t->side[k].tx_turn++ & 1) != 0;
    for (;;) {
        size_t room = ss_pipe_room(p), n, i;
        const unsigned char *src = buf;
        const void *q;
        if (room > sizeof buf) room = sizeof buf;
        if (!room) break;
        if (zero_copy) {
            n = alkt_session_transmit_peek(s, &q);
            if (!n) {
                ALK_CHECK(q == NULL, "side %d: peek of nothing gave a pointer", k);
                break;
            }
            ALK_CHECK(alkt_session_transmit_done(s, n + 1) == ALKT_ERR_ARG,
                      "side %d: transmit_done took more than the peek gave", k);
            if (!t->plaintext) {   /* at most seal_batch records, and a REKEY */
                size_t b = t->seal_batch[k] ? t->seal_batch[k] : 4;
                size_t rec = 2 + ALKT_AEAD_TAG + ALKT_FRAME_HEADER;   /* and a payload */
                size_t cap = b * (rec + s->max_frame) + rec;
                ALK_CHECK(n <= cap, "side %d: a peek of %zu bytes, past %zu records "
                          "sealed at a time", k, n, b);
            }
            if (n > room) n = room;
            src = (const unsigned char *)q;
        } else {
            n = alkt_session_poll_transmit(s, buf, room);
            if (!n) break;
        }
        if (t->side[k].connected)   /* else nowhere to go */
            for (i = 0; i < n; i++)
                p->buf[(p->head + p->len + i) % SS_PIPE] = src[i];
        if (zero_copy) {
            ALK_CHECK(alkt_session_transmit_done(s, n) == ALKT_OK,
                      "side %d: transmit_done(%zu) refused", k, n);
            ALK_CHECK(alkt_session_transmit_done(s, 1) == ALKT_ERR_ARG,
                      "side %d: a second transmit_done was taken", k);
        }
        if (t->side[k].connected) p->len += n;
    }
}

static void ss_events(ss *t, int k);

/* Up to n bytes from side k's pipe into the other side, in pieces. */
static void ss_deliver(ss *t, int k, size_t n, size_t seg)
{
    ss_pipe *p = &t->pipe[k];
    static unsigned char buf[32768];
    if (!seg) seg = 1;
    if (seg > sizeof buf) seg = sizeof buf;
    while (n && p->len) {
        size_t m = n < seg ? n : seg, i;
        if (m > p->len) m = p->len;
        int passed = 0;
        alkt_session *r = &t->side[1 - k].s;
        for (i = 0; i < m; i++) buf[i] = p->buf[(p->head + i) % SS_PIPE];
        p->head = (p->head + m) % SS_PIPE;
        p->len -= m;
        n -= m;
        if (p->tamper) {
            passed = p->tamper_at < m;
            p->tamper_at = passed ? 0 : p->tamper_at - m;
        }
        {
            int up = r->conn == ALKT__C_UP, rc = alkt_session_handle_input(r, buf, m, t->now);
            /* on a working connection an error is the connection's only for
             * a record no key of ours sealed (DECRYPT, from the path); any
             * other is the proven peer breaking a rule (or its GOAWAY):
             * the session is over */
            ALK_CHECK(!up || rc == ALKT_OK || rc == ALKT_ERR_DECRYPT ||
                          r->state == ALKT__S_CLOSED,
                      "side %d: input refused with %s on a working connection, and the "
                      "session goes on", 1 - k, alkt_strerror(rc));
        }
        ss_events(t, 1 - k);
        if (passed && !t->side[1 - k].closed && r->conn == ALKT__C_UP)
            /* at a record boundary past the changed byte: the record that
             * held it went through */
            ALK_CHECK(r->rec_in_len != 0,
                      "side %d took a record changed on the path", 1 - k);
    }
}

/* The connection is gone for both (what was in flight is lost). */
static void ss_drop(ss *t)
{
    int k;
    alk_trace("drop the connection");
    for (k = 0; k < 2; k++) {
        alkt_session *s = &t->side[k].s;
        /* the resume window runs from this moment when a working
         * connection is lost */
        int window = s->state == ALKT__S_ACTIVE && s->conn != ALKT__C_NONE && s->conn_was_up;
        int none = s->conn == ALKT__C_NONE;
        /* a connection still in its handshake never worked (once up, a
         * connection is never in a handshake again): losing it leaves the
         * window where it was - a failed attempt does not extend it */
        int failed = s->state == ALKT__S_ACTIVE && s->conn == ALKT__C_HANDSHAKE;
        uint64_t until = s->deadline_resume;
        unsigned events = s->session_events;
        t->pipe[k].head = t->pipe[k].len = 0;
        t->pipe[k].tamper = 0;
        t->pipe[k].injected = 0;
        t->side[k].tampered = 0;
        t->side[k].connected = 0;
        alkt_session_handle_disconnected(s, t->now);
        /* no connection, nothing lost: no second DISCONNECTED */
        ALK_CHECK(!none || s->session_events == events,
                  "side %d: a disconnect without a connection made an event", k);
        ALK_CHECK(!window || s->deadline_resume == t->now + s->resume_ns,
                  "side %d: the resume window runs to %llu, lost at %llu", k,
                  (unsigned long long)s->deadline_resume, (unsigned long long)t->now);
        ALK_CHECK(!failed || s->deadline_resume == until,
                  "side %d: a connection lost in its handshake moved the resume window "
                  "from %llu to %llu (now %llu)", k, (unsigned long long)until,
                  (unsigned long long)s->deadline_resume, (unsigned long long)t->now);
    }
    ss_events(t, 0);
    ss_events(t, 1);
}

static void ss_connect(ss *t)
{
    unsigned char n[ALKT_NONCE_SIZE];
    int k, rc;
    ss_drop(t);   /* (which may end a session whose window has passed) */
    if (t->side[0].closed || t->side[1].closed) return;
    alk_trace("connect");
    for (k = 1; k >= 0; k--) {
        ss_nonce(t, n);
        ALK_CHECK(alkt_session_connect(&t->side[k].s, t->now, NULL) == ALKT_ERR_ARG &&
                      alkt_session_connect(NULL, t->now, n) == ALKT_ERR_ARG,
                  "connect without a nonce or a session");
        rc = alkt_session_connect(&t->side[k].s, t->now, n);
        ALK_CHECK(rc == ALKT_OK, "side %d connect: %s", k, alkt_strerror(rc));
        t->side[k].connected = 1;
    }
    /* (what an observer on the path records: the client's HELLO, before
     * anything of it is sent) */
    memcpy(t->hello[1], t->hello[0], t->hello_len[0]);
    t->hello_len[1] = t->hello_len[0];
    t->hello_len[0] = t->side[0].s.ctl_len;
    memcpy(t->hello[0], t->side[0].s.ctl, t->hello_len[0]);
}

/* ---- events into the model ---- */
static void ss_session_over(ss *t, int k)
{
    size_t i;
    (void)k;
    for (i = 0; i < t->n_ch; i++) t->ch[i].reset = 1;
}

static void ss_events(ss *t, int k)
{
    alkt_event ev;
    int got;
    /* 1 and an event, or 0 when there is none: no other value */
    while ((got = alkt_session_poll_event(&t->side[k].s, &ev)) != 0) {
        ss_chan *c = ev.channel ? ss_find(t, ev.channel) : NULL;
        ALK_CHECK(got == 1, "poll_event returned %d", got);
        if (t->hostile && k == 0) continue;   /* the peer: not judged */
        if (t->hostile && ev.type == ALKT_EV_OPEN_REQUEST && !c &&
            t->n_ch < SS_MODEL_MAX) {
            /* an open the hostile peer made up */
            c = &t->ch[t->n_ch++];
            memset(c, 0, sizeof *c);
            c->id = ev.channel;
            c->opener = 1 - k;
        }
        if (t->hostile && ev.type == ALKT_EV_OPEN_REQUEST && c && !c->known[k]) {
            /* the server takes what the peer opens: its data is judged */
            c->known[k] = 1;
            c->answered = 1;
            (void)alkt_channel_accept(&t->side[k].s, c->id, NULL);
            continue;
        }
        alk_trace("side %d event %d channel %u code %d", k, (int)ev.type,
                  ev.channel, ev.code);
        if (ev.channel) {
            if (ev.type == ALKT_EV_OPEN_REQUEST) {
                /* exactly one request per open the peer made */
                ALK_CHECK(c && c->opener == 1 - k && !c->known[k],
                          "side %d: open request for channel %u, which the "
                          "peer %s", k, ev.channel,
                          !c ? "never opened" : "had requested already");
                c->known[k] = 1;
                continue;
            }
            ALK_CHECK(c != NULL, "side %d: event %d for unknown channel %u", k,
                      (int)ev.type, ev.channel);
            ALK_CHECK(!c->done[k], "side %d: event %d for channel %u after "
                      "its CHANNEL_DONE", k, (int)ev.type, ev.channel);
        }
        /* a code only where the type says there is one */
        ALK_CHECK(ev.code == 0 || ev.type == ALKT_EV_DISCONNECTED || ev.type == ALKT_EV_CLOSED ||
                      ev.type == ALKT_EV_OPEN_FAILED || ev.type == ALKT_EV_RESET ||
                      ev.type == ALKT_EV_CHANNEL_DONE,
                  "side %d: event %d for channel %u has code %d", k, (int)ev.type, ev.channel,
                  ev.code);
        switch (ev.type) {
        case ALKT_EV_ESTABLISHED:
            ALK_CHECK(!t->side[k].established, "side %d established twice", k);
            t->side[k].established = 1;
            break;
        case ALKT_EV_RESUMED:
            ALK_CHECK(t->side[k].established, "side %d resumed unestablished",
                      k);
            break;
        case ALKT_EV_DISCONNECTED:
            /* the other end learns it from the pipe: both drop */
            if (t->side[k].connected) ss_drop(t);
            break;
        case ALKT_EV_CLOSED:
            /* between two correct sessions only these end one: a close
             * (ours, or the peer app's: its GOAWAY carries the app's code
             * 0x1234, never a library code - a correct peer breaks no
             * rule), or the resume window passing - not a record changed
             * on the path (that costs the connection), not an off-path
             * party's bytes (the campaign found a server that answered
             * bytes put in place of the client's AUTH with a sealed
             * GOAWAY, ending the session at the client) */
            ALK_CHECK(t->hostile || ev.code == ALKT_ERR_CLOSED ||
                          (ev.code == ALKT_ERR_GOAWAY && t->side[k].s.peer_goaway == 0x1234) ||
                          ev.code == ALKT_ERR_RESUME_EXPIRED,
                      "side %d: the session ended with %s (the peer's GOAWAY code %d)", k,
                      alkt_strerror(ev.code), t->side[k].s.peer_goaway);
            t->side[k].closed = 1;
            ss_session_over(t, k);
            break;
        case ALKT_EV_OPENED:
            {
                /* a forwarded open's answer says where it listens: the
                 * address and port the accepting side gave (10.0.0.0:4242) */
                alkt_channel_info oi;
                if (alkt_channel_info_get(&t->side[k].s, ev.channel, &oi) == ALKT_OK &&
                    oi.params.kind == ALKT_OPEN_FORWARDED)
                    ALK_CHECK(oi.reply.address.family == 4 && oi.reply.address.bytes[0] == 10 &&
                                  oi.reply.port == 4242,
                              "side %d: forwarded channel %u opened with reply family %d "
                              "port %u", k, ev.channel, oi.reply.address.family,
                              (unsigned)oi.reply.port);
            }
            ALK_CHECK(c->opener == k && c->outcome == 0,
                      "side %d: OPENED for channel %u (outcome %d)", k, c->id,
                      c->outcome);
            c->outcome = 1;
            break;
        case ALKT_EV_OPEN_FAILED:
            ALK_CHECK(c->opener == k && c->outcome == 0,
                      "side %d: OPEN_FAILED for channel %u (outcome %d)", k,
                      c->id, c->outcome);
            c->outcome = 2;
            break;
        case ALKT_EV_RESET:
            ALK_CHECK(!(c->refused_by_reset && c->opener == k && c->outcome == 0 &&
                        ev.code == 99),
                      "side %d: channel %u reset unanswered by the peer came as a RESET, "
                      "not OPEN_FAILED", k, c->id);
            c->reset = 1;
            break;
        case ALKT_EV_CHANNEL_DONE:
            c->done[k] = 1;
            break;
        default:
            break;
        }
    }
}

/* ---- transitions ---- */
static int ss_live(ss *t, int k, ss_chan *c)
{
    alkt_channel_info info;
    return c && c->known[k] && !c->done[k] &&
           alkt_channel_info_get(&t->side[k].s, c->id, &info) == ALKT_OK;
}

static ss_chan *ss_pick(ss *t, int k)
{
    size_t i, n = 0, want;
    if (!t->n_ch) return NULL;
    want = alksim_pick(&t->src, t->n_ch);
    for (i = 0; i < t->n_ch; i++) {
        ss_chan *c = &t->ch[(want + i) % t->n_ch];
        if (ss_live(t, k, c)) return c;
        n++;
    }
    return NULL;
}

/* Direct open params: tcp to a named host. */
static alkt_open_params ss_params(const char *host, uint16_t port)
{
    alkt_open_params p;
    ALK_CHECK(alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, host, strlen(host), port) ==
                  ALKT_OK,
              "direct open params to %s:%u", host, (unsigned)port);
    return p;
}

static void ss_open(ss *t, int k)
{
    alkt_open_params p = ss_params("target.example",
                                   (uint16_t)(1 + alksim_range(&t->src, 0, 65534)));
    uint32_t id;
    int rc;
    if (alksim_chance(&t->src, 1, 4)) {
        p.kind = ALKT_OPEN_FORWARDED;
        p.listen = p.port;
        p.port = 0;
        memset(&p.host, 0, sizeof p.host);
    }
    rc = alkt_channel_open(&t->side[k].s, &p, &id);
    alk_trace("side %d open: %s id %u", k, alkt_strerror(rc), rc ? 0 : id);
    if (rc != ALKT_OK) {
        ALK_CHECK(rc == ALKT_ERR_CHANNELS_FULL || rc == ALKT_ERR_WOULD_BLOCK ||
                      rc == ALKT_ERR_NOT_CONNECTED || rc == ALKT_ERR_CLOSED,
                  "open: %s", alkt_strerror(rc));
        return;
    }
    ALK_CHECK(!ss_find(t, id), "side %d: id %u reused", k, id);
    ALK_CHECK(t->n_ch < SS_MODEL_MAX, "model full");
    {
        ss_chan *c = &t->ch[t->n_ch++];
        memset(c, 0, sizeof *c);
        c->id = id;
        c->opener = k;
        c->known[k] = 1;
    }
}

static void ss_answer(ss *t, int k)
{
    size_t i;
    for (i = 0; i < t->n_ch; i++) {
        ss_chan *c = &t->ch[i];
        alkt_channel_info info;
        int rc;
        if (c->opener == k || c->answered || !ss_live(t, k, c)) continue;
        if (alkt_channel_info_get(&t->side[k].s, c->id, &info) != ALKT_OK ||
            info.state != ALKT_CHANNEL_INCOMING)
            continue;
        c->answered = 1;
        if (alksim_chance(&t->src, 1, 5)) {
            /* a reason with a control byte, DEL and a byte past ASCII:
             * what goes out (and what the channel keeps) is printable,
             * each of those made '?' */
            rc = alkt_channel_refuse(&t->side[k].s, c->id, 7, "no\x01\x7f\xc3.");
            if (alkt_channel_info_get(&t->side[k].s, c->id, &info) == ALKT_OK)
                ALK_CHECK(strcmp(info.reason, "no???.") == 0,
                          "side %d: channel %u refused with reason '%s'", k, c->id,
                          info.reason);
            c->reset = 1;
        } else {
            alkt_listen_reply r;
            memset(&r, 0, sizeof r);
            r.address.family = 4;
            r.address.bytes[0] = 10;
            r.port = 4242;
            rc = alkt_channel_accept(&t->side[k].s, c->id,
                                     info.params.kind == ALKT_OPEN_FORWARDED
                                         ? &r : NULL);
        }
        alk_trace("side %d answers %u: %s", k, c->id, alkt_strerror(rc));
        ALK_CHECK(rc == ALKT_OK, "answer: %s", alkt_strerror(rc));
        /* a channel is answered once: accepting or refusing an accepted
         * channel again is refused */
        if (!c->reset)
            ALK_CHECK(alkt_channel_accept(&t->side[k].s, c->id, NULL) == ALKT_ERR_STATE &&
                          alkt_channel_refuse(&t->side[k].s, c->id, 7, "no") ==
                              ALKT_ERR_STATE,
                      "side %d: channel %u answered twice", k, c->id);
    }
}

static void ss_send(ss *t, int k)
{
    ss_chan *c = ss_pick(t, k);
    unsigned char buf[20000];
    size_t n = (size_t)alksim_range(&t->src, 0, sizeof buf), i;
    ss_dir *d;
    ptrdiff_t r;
    if (!c) return;
    d = &c->d[c->opener == k ? 0 : 1];
    for (i = 0; i < n; i++) buf[i] = ss_byte(c->id, c->opener == k ? 0 : 1,
                                             d->accepted + i);
    r = alkt_channel_send(&t->side[k].s, c->id, buf, n);
    alk_trace("side %d send %zu on %u: %td", k, n, c->id, r);
    if (r < 0) {
        ALK_CHECK(r == ALKT_ERR_STATE || r == ALKT_ERR_RESET,
                  "send: %s", alkt_strerror((int)r));
        return;
    }
    ALK_CHECK(!d->eof_sent || r == 0, "sent after shutdown");
    ALK_CHECK(alkt_channel_send(&t->side[k].s, c->id, NULL, 1) == ALKT_ERR_ARG,
              "send of one byte from NULL on %u", c->id);
    d->accepted += (uint64_t)r;
}

static void ss_recv(ss *t, int k, size_t cap)
{
    ss_chan *c = ss_pick(t, k);
    unsigned char buf[20000];
    ss_dir *d;
    ptrdiff_t r;
    int eof = 0, dir;
    size_t i;
    if (!c) return;
    if (cap > sizeof buf) cap = sizeof buf;
    dir = c->opener == k ? 1 : 0;
    d = &c->d[dir];
    if (t->side[k].rx_turn++ & 1) {
        /* in place: the first run, consumed up to cap */
        const void *q;
        alkt_channel_info info;
        int have = alkt_channel_info_get(&t->side[k].s, c->id, &info) == ALKT_OK;
        r = alkt_channel_peek(&t->side[k].s, c->id, &q, &eof);
        if (r > 0) {
            ALK_CHECK(have && (size_t)r <= info.readable,
                      "peek on %u gave %td of %zu buffered", c->id, r,
                      have ? info.readable : 0);
            if ((size_t)r > cap) r = (ptrdiff_t)cap;
            memcpy(buf, q, (size_t)r);
            ALK_CHECK(alkt_channel_consume(&t->side[k].s, c->id,
                                           info.readable + 1, NULL) == ALKT_ERR_ARG,
                      "consume on %u took more than was buffered", c->id);
            ALK_CHECK(alkt_channel_consume(&t->side[k].s, c->id, (size_t)r,
                                           &eof) == r,
                      "consume on %u refused", c->id);
        }
    } else {
        r = alkt_channel_recv(&t->side[k].s, c->id, buf, cap, &eof);
    }
    if (r < 0) {
        ALK_CHECK(r == ALKT_ERR_RESET && c->reset, "recv on %u: %s", c->id,
                  alkt_strerror((int)r));
        return;
    }
    ALK_CHECK((size_t)r <= cap, "recv gave %td of %zu", r, cap);
    if (t->hostile) return;   /* (the peer made the bytes up) */
    for (i = 0; i < (size_t)r; i++)
        ALK_CHECK(buf[i] == ss_byte(c->id, dir, d->delivered + i),
                  "side %d channel %u: byte %llu reads %02x, sent %02x", k,
                  c->id, (unsigned long long)(d->delivered + i), buf[i],
                  ss_byte(c->id, dir, d->delivered + i));
    d->delivered += (uint64_t)r;
    ALK_CHECK(d->delivered <= d->accepted,
              "side %d channel %u: %llu bytes read, %llu sent", k, c->id,
              (unsigned long long)d->delivered,
              (unsigned long long)d->accepted);
    if (eof) {
        ALK_CHECK(d->eof_sent && d->delivered == d->eof_at,
                  "side %d channel %u: EOF after %llu bytes (sent %llu, "
                  "EOF %s)", k, c->id, (unsigned long long)d->delivered,
                  (unsigned long long)d->accepted,
                  d->eof_sent ? "sent" : "never sent");
        d->eof_seen = 1;
    }
}

static void ss_shutdown(ss *t, int k)
{
    ss_chan *c = ss_pick(t, k);
    ss_dir *d;
    int rc;
    if (!c) return;
    d = &c->d[c->opener == k ? 0 : 1];
    rc = alkt_channel_shutdown_write(&t->side[k].s, c->id);
    alk_trace("side %d shutdown %u: %s", k, c->id, alkt_strerror(rc));
    if (rc == ALKT_OK && !d->eof_sent) {
        d->eof_sent = 1;
        d->eof_at = d->accepted;
    }
    /* nothing is sent after one's own EOF: an error, not "no room now" */
    if (rc == ALKT_OK) {
        ptrdiff_t n = alkt_channel_send(&t->side[k].s, c->id, "x", 1);
        ALK_CHECK(n == ALKT_ERR_STATE || n == ALKT_ERR_RESET,
                  "side %d: a send after shutdown_write of %u gave %ld", k, c->id, (long)n);
    }
}

static void ss_reset(ss *t, int k)
{
    ss_chan *c = ss_pick(t, k);
    int rc;
    alkt_channel_info info;
    int incoming;
    if (!c) return;
    incoming = alkt_channel_info_get(&t->side[k].s, c->id, &info) == ALKT_OK &&
               info.state == ALKT_CHANNEL_INCOMING;
    rc = alkt_channel_reset(&t->side[k].s, c->id, 99);
    alk_trace("side %d reset %u: %s", k, c->id, alkt_strerror(rc));
    if (rc == ALKT_OK) c->reset = 1;
    if (rc == ALKT_OK && incoming) c->refused_by_reset = 1;
}

static void ss_time(ss *t, uint64_t dt)
{
    int k;
    t->now += dt;
    alk_trace("time +%llu ms", (unsigned long long)(dt / 1000000));
    for (k = 0; k < 2; k++) {
        alkt_session_handle_timeout(&t->side[k].s, t->now);
        ss_events(t, k);
    }
}

/* ---- setup ---- */
static void ss_setup(ss *t, alkt_session_config *cfg, int k)
{
    static const unsigned char secret[32] = "a shared secret of 32 bytes ...";
    size_t need;
    int rc;
    cfg->is_server = k;
    cfg->secret = secret;
    cfg->secret_len = sizeof secret;
    cfg->identity = k ? "gateway-1" : "client-7";
    cfg->identity_len = strlen(cfg->identity);
    cfg->plaintext = t->plaintext;
    cfg->rekey_records = t->rekey;
    cfg->seal_batch = t->seal_batch[k];
    need = alkt_session_mem_size(cfg);
    ALK_CHECK(need > 0, "config refused");
    t->side[k].mem = malloc(need);
    ALK_CHECK(t->side[k].mem != NULL, "out of memory");
    rc = alkt_session_init(&t->side[k].s, cfg, t->side[k].mem, need, t->now);
    ALK_CHECK(rc == ALKT_OK, "init: %s", alkt_strerror(rc));
    /* records per key as configured; 0 is the documented 2^32 */
    ALK_CHECK(t->side[k].s.rekey_records == (t->rekey ? t->rekey : (uint64_t)1 << 32),
              "side %d: %llu records per key, configured %llu", k,
              (unsigned long long)t->side[k].s.rekey_records,
              (unsigned long long)t->rekey);
}

/* Whether n bytes equal to secret (not all zero) are anywhere in m. */
static int ss_holds(const void *m, size_t len, const unsigned char *secret, size_t n)
{
    const unsigned char *b = (const unsigned char *)m;
    size_t i, zero = 0;
    for (i = 0; i < n; i++) zero += secret[i] == 0;
    if (zero == n || len < n) return 0;
    for (i = 0; i + n <= len; i++) {
        const unsigned char *q = (const unsigned char *)memchr(b + i, secret[0], len - n + 1 - i);
        if (!q) return 0;
        i = (size_t)(q - b);
        if (memcmp(q, secret, n) == 0) return 1;
    }
    return 0;
}

/* alkt_session_wipe leaves no key behind: the traffic keys, the AUTH
 * key, the resume token and the secret's HMAC state, taken as they are
 * now, are nowhere in the struct after it. (The session's memory - its
 * rings and log, a megabyte - holds no key to begin with; the unit test
 * sealed_close_and_wipe_forget_every_key searches it too.) */
static void ss_wipe_check(ss *t, int k)
{
    alkt_session *s = &t->side[k].s;
    unsigned char keys[6][48];
    int i;
    memset(keys, 0, sizeof keys);
    memcpy(keys[0], s->tx_key, sizeof s->tx_key);
    memcpy(keys[1], s->rx_key, sizeof s->rx_key);
    memcpy(keys[2], s->auth_key, sizeof s->auth_key);
    if (s->token_ready) memcpy(keys[3], s->token, sizeof s->token);
    memcpy(keys[4], (const unsigned char *)&s->key, 48);
    memcpy(keys[5], (const unsigned char *)&s->key + 48, 48);
    {
        /* and nothing of what went through: every channel's ring and the
         * resend log are zero after it */
        const unsigned char *ring[64], *log = s->log;
        uint32_t nch = s->chans ? (s->max_channels < 64 ? s->max_channels : 64) : 0, c;
        size_t win = s->channel_window, loglen = s->log_size, j;
        for (c = 0; c < nch; c++) ring[c] = s->chans[c].ring;
        alkt_session_wipe(s);
        for (c = 0; c < nch; c++)
            for (j = 0; ring[c] && j < win; j++)
                ALK_CHECK(ring[c][j] == 0, "side %d: channel slot %u's ring keeps byte %zu after "
                          "alkt_session_wipe", k, c, j);
        for (j = 0; log && j < loglen; j++)
            ALK_CHECK(log[j] == 0, "side %d: the resend log keeps byte %zu after "
                      "alkt_session_wipe", k, j);
    }
    for (i = 0; i < 6; i++) {
        size_t n = i < 4 ? 32 : 48;
        ALK_CHECK(!ss_holds(s, sizeof *s, keys[i], n),
                  "side %d: key %d is still there after alkt_session_wipe", k, i);
    }
}

static void ss_free(ss *t)
{
    ss_wipe_check(t, 0);
    ss_wipe_check(t, 1);
    free(t->side[0].mem);
    free(t->side[1].mem);
}

/* Heal, reconnect, and move everything until nothing moves. */
static void ss_quiesce(ss *t)
{
    int round, k;
    size_t i;
    if (t->side[0].closed || t->side[1].closed) return;
    for (k = 0; k < 2; k++)
        if (t->pipe[k].tamper || t->pipe[k].injected) {
            /* the changed (mode 3) or injected (mode 4) bytes go in: the
             * connection ends (ALKT_ERR_DECRYPT: what was in flight behind
             * them is lost with it), or waits for the rest of a record that
             * will not come - a dead connection, which the idle timeout
             * would find. Either way it is dropped here, and the reconnect
             * below resumes the session: the checks at the end judge what
             * a healed path delivers, not the connection the attack cost */
            ss_deliver(t, k, SS_PIPE, 4096);
            if (t->side[0].closed || t->side[1].closed) return;
            if (t->side[1 - k].s.rec_in_len) ss_drop(t);
        }
    if (!alkt_session_is_established(&t->side[0].s) ||
        !alkt_session_is_established(&t->side[1].s))
        ss_connect(t);
    for (round = 0; round < 2000; round++) {
        size_t before = t->pipe[0].len + t->pipe[1].len;
        uint64_t moved = 0;
        for (k = 0; k < 2; k++) {
            ss_answer(t, k);
            ss_transmit(t, k);
        }
        for (k = 0; k < 2; k++) {
            moved += t->pipe[k].len;
            ss_deliver(t, k, SS_PIPE, 4096);
        }
        for (k = 0; k < 2; k++)
            for (i = 0; i < t->n_ch; i++) {
                ss_chan *c = &t->ch[i];
                alkt_channel_info info;
                if (!ss_live(t, k, c)) continue;
                if (alkt_channel_info_get(&t->side[k].s, c->id, &info) ==
                        ALKT_OK && (info.readable || info.peer_eof)) {
                    size_t j;
                    for (j = 0; j < t->n_ch; j++)
                        if (&t->ch[j] == c) break;
                    /* read that one channel: pick it deterministically */
                    {
                        unsigned char buf[20000];
                        int eof = 0, dir = c->opener == k ? 1 : 0;
                        ptrdiff_t r = alkt_channel_recv(&t->side[k].s, c->id,
                                                        buf, sizeof buf, &eof);
                        ss_dir *d = &c->d[dir];
                        size_t b;
                        if (r < 0) continue;
                        for (b = 0; b < (size_t)r; b++)
                            ALK_CHECK(buf[b] == ss_byte(c->id, dir,
                                                        d->delivered + b),
                                      "channel %u byte %llu corrupt", c->id,
                                      (unsigned long long)(d->delivered + b));
                        d->delivered += (uint64_t)r;
                        ALK_CHECK(d->delivered <= d->accepted,
                                  "read past what was sent");
                        moved += (uint64_t)r;
                        if (eof) {
                            ALK_CHECK(d->eof_sent && d->delivered == d->eof_at,
                                      "channel %u: early EOF", c->id);
                            moved += !d->eof_seen;
                            d->eof_seen = 1;
                        }
                    }
                }
                ss_events(t, k);
            }
        (void)before;
        if (!moved && !t->pipe[0].len && !t->pipe[1].len &&
            alkt_session_poll_timeout(&t->side[0].s) > t->side[0].s.now &&
            alkt_session_poll_timeout(&t->side[1].s) > t->side[1].s.now)
            break;
        if (t->side[0].closed || t->side[1].closed) return;
    }
    ALK_CHECK(round < 2000, "no quiescence after 2000 rounds");
    for (i = 0; i < t->n_ch; i++) {
        ss_chan *c = &t->ch[i];
        int dir;
        if (c->reset || c->outcome == 2) continue;
        ALK_CHECK(c->outcome == 1, "channel %u: open never answered", c->id);
        for (dir = 0; dir < 2; dir++) {
            ss_dir *d = &c->d[dir];
            ALK_CHECK(d->delivered == d->accepted,
                      "channel %u dir %d: %llu of %llu bytes arrived", c->id,
                      dir, (unsigned long long)d->delivered,
                      (unsigned long long)d->accepted);
            ALK_CHECK(d->eof_seen == d->eof_sent,
                      "channel %u dir %d: EOF %s", c->id, dir,
                      d->eof_sent ? "lost" : "from nowhere");
        }
    }
}

/* Mode 3: the bytes in flight from side k, when they are whole records
 * from a record boundary (the receiver is between records), changed the
 * way a path can: a byte flipped, a range cut out (not the very end), a
 * record replayed later, two records swapped. */
static void ss_tamper(ss *t, int k)
{
    static unsigned char lin[SS_PIPE];
    ss_pipe *p = &t->pipe[k];
    const alkt_session *r = &t->side[1 - k].s;
    size_t at[65], nrec = 0, off = 0, len = p->len, first = 0, i, j, n;
    if (p->tamper || r->conn != ALKT__C_UP || !r->rx_sealed ||
        r->rec_in_len != 0 || t->side[1 - k].closed || len < 3)
        return;
    for (i = 0; i < len; i++) lin[i] = p->buf[(p->head + i) % SS_PIPE];
    while (off + 2 <= len && nrec < 64) {
        size_t rl = 2 + ((size_t)lin[off] << 8 | lin[off + 1]) + ALKT_AEAD_TAG;
        if (off + rl > len) break;
        at[nrec++] = off;
        off += rl;
    }
    at[nrec] = off;
    switch (alksim_pick(&t->src, 4)) {
    case 0:
        first = (size_t)alksim_range(&t->src, 0, len - 1);
        lin[first] ^= (unsigned char)alksim_range(&t->src, 1, 255);
        alk_trace("tamper %d: byte %zu of %zu changed", k, first, len);
        break;
    case 1:
        first = (size_t)alksim_range(&t->src, 0, len - 2);
        j = (size_t)alksim_range(&t->src, first + 1, len - 1);
        memmove(lin + first, lin + j, len - j);
        alk_trace("tamper %d: bytes %zu..%zu of %zu cut", k, first, j, len);
        len -= j - first;
        break;
    case 2:
        if (!nrec) return;
        i = alksim_pick(&t->src, nrec);
        j = (size_t)alksim_range(&t->src, i, nrec - 1);
        n = at[i + 1] - at[i];
        if (len + n > SS_PIPE) return;
        first = at[j + 1];
        memmove(lin + first + n, lin + first, len - first);
        memcpy(lin + first, lin + at[i], n);
        len += n;
        alk_trace("tamper %d: record %zu replayed after record %zu", k, i, j);
        break;
    default:
        if (nrec < 2) return;
        i = alksim_pick(&t->src, nrec - 1);
        {
            static unsigned char tmp[SS_PIPE];
            size_t a = at[i + 1] - at[i], b = at[i + 2] - at[i + 1];
            memcpy(tmp, lin + at[i], a + b);
            memcpy(lin + at[i], tmp + a, b);
            memcpy(lin + at[i] + b, tmp, a);
        }
        first = at[i];
        alk_trace("tamper %d: records %zu and %zu swapped", k, i, i + 1);
        break;
    }
    memcpy(p->buf, lin, len);
    p->head = 0;
    p->len = len;
    p->tamper = 1;
    p->tamper_at = first;
    t->side[1 - k].tampered = 1;
}

/* Mode 4: an off-path party's bytes (see the top comment). */
static void ss_attack(ss *t)
{
    alkt_session *cl = &t->side[0].s, *sv = &t->side[1].s;
    unsigned char b[ALKT_FRAME_HEADER + ALKT__HELLO_MAX];
    size_t n;
    unsigned kind = (unsigned)alksim_pick(&t->src, t->attack == 2 ? 4 : 3);
    if (t->side[0].closed || t->side[1].closed) return;
    if (kind == 3) {
        /* bytes in the place of the client's AUTH: a fresh connection, the
         * client's HELLO to the server and the server's HELLO and AUTH to
         * the client (up now, the server proven), then the attacker's
         * bytes ahead of the client's AUTH. The server must not answer
         * them with a sealed GOAWAY: the client would take it as the
         * server's word and end the session (found by the tunnel_sim
         * campaign) */
        ss_pipe *p = &t->pipe[0];
        size_t i;
        ss_connect(t);
        if (t->side[0].closed || t->side[1].closed) return;
        ss_transmit(t, 0);
        ss_deliver(t, 0, SS_PIPE, SS_PIPE);
        ss_transmit(t, 1);
        ss_deliver(t, 1, SS_PIPE, SS_PIPE);
        n = (size_t)alksim_range(&t->src, 1, 64);
        if (p->len + n > SS_PIPE) return;
        alksim_bytes(&t->src, b, n);
        for (i = 0; i < n; i++) p->buf[(p->head + p->len + i) % SS_PIPE] = b[i];
        p->len += n;
        alk_trace("attack: %zu drawn bytes before the client's AUTH", n);
        /* they reach the server, and what it says the client */
        ss_deliver(t, 0, SS_PIPE, SS_PIPE);
        ss_transmit(t, 1);
        ss_deliver(t, 1, SS_PIPE, SS_PIPE);
        ALK_CHECK(!t->side[0].closed && !t->side[1].closed,
                  "bytes in the place of the client's AUTH ended the session");
        return;
    }
    if (kind == 0) {
        /* a fresh connection; before the client's HELLO, the attacker's */
        int replay = t->hello_len[1] && alksim_bool(&t->src), silent;
        uint64_t floor, fresh;
        ss_connect(t);
        if (replay) {
            n = t->hello_len[1];
            memcpy(b, t->hello[1], n);
        } else {
            n = t->hello_len[0];
            memcpy(b, t->hello[0], n);
            b[alksim_range(&t->src, 0, n - 1)] ^= (unsigned char)alksim_range(&t->src, 1, 255);
        }
        floor = alkt_session_peer_freshness(sv);
        fresh = n >= ALKT_FRAME_HEADER + ALKT__HELLO_FRESH + 8
                    ? alkt__get64(b + ALKT_FRAME_HEADER + ALKT__HELLO_FRESH) : 0;
        /* proves nothing: changed, or seen already (a replay the server
         * never saw - its connection dropped first - is a fair HELLO) */
        silent = !replay || fresh <= floor;
        alk_trace("attack: %s HELLO (%zu bytes) into a fresh connection",
                  replay ? "a replayed" : "a changed", n);
        (void)alkt_session_handle_input(sv, b, n, t->now);
        if (!silent) {
            /* a fair HELLO: what the server says starts with a whole
             * frame - its HELLO, or a REFUSE of exactly its length */
            const void *d;
            size_t m = alkt_session_transmit_peek(sv, &d);
            const unsigned char *o = (const unsigned char *)d;
            ALK_CHECK(m == 0 || o[0] == ALKT_FRAME_HELLO ||
                          (o[0] == ALKT_FRAME_REFUSE && m == ALKT_FRAME_HEADER + ALKT__REFUSE_LEN &&
                           o[3] == ALKT__REFUSE_LEN),
                      "the server answered a fair HELLO with %zu bytes starting %02x", m,
                      m ? o[0] : 0);
        }
        if (silent) {
            unsigned char out[64];
            ALK_CHECK(alkt_session_poll_transmit(sv, out, sizeof out) == 0,
                      "the server answered a HELLO that proves nothing");
            ALK_CHECK(alkt_session_peer_freshness(sv) == floor,
                      "a HELLO that proves nothing moved the freshness floor");
            /* (over, or still waiting for a HELLO a changed length made
             * longer: nothing proven either way) */
            ALK_CHECK(sv->conn == ALKT__C_NONE ||
                          (sv->conn == ALKT__C_HANDSHAKE && !sv->hs_proven),
                      "the server took a HELLO that proved nothing");
        }
        ss_events(t, 1);
        ss_drop(t);   /* (its app closes that connection) */
        return;
    }
    if (kind == 1) {
        /* into the client's handshake: a GOAWAY, or a REFUSE whose MAC is
         * made up, saying the resume is refused or expired, or more */
        static const int codes[] = {ALKT_ERR_RESUME_REFUSED, ALKT_ERR_RESUME_EXPIRED,
                                    ALKT_ERR_BUSY, ALKT_ERR_AUTH, ALKT_ERR_CLOSED};
        int refuse = alksim_bool(&t->src);
        int code = codes[alksim_pick(&t->src, 5)];
        int state;
        if (cl->conn != ALKT__C_HANDSHAKE || cl->hs_step != 0) ss_connect(t);
        /* (the drop before it may end a session whose window passed) */
        if (t->side[0].closed || t->side[1].closed) return;
        state = cl->state;
        b[0] = refuse ? ALKT_FRAME_REFUSE : ALKT_FRAME_GOAWAY;
        b[1] = 0;
        n = refuse ? ALKT__REFUSE_LEN : 2;
        b[2] = 0;
        b[3] = (unsigned char)n;
        memset(b + 4, 0, 4);
        b[8] = (unsigned char)((unsigned)-code >> 8);
        b[9] = (unsigned char)-code;
        if (refuse) alksim_bytes(&t->src, b + 10, 32);
        alk_trace("attack: a %s (%s) into the client's handshake",
                  refuse ? "REFUSE" : "GOAWAY", alkt_strerror(code));
        (void)alkt_session_handle_input(cl, b, ALKT_FRAME_HEADER + n, t->now);
        ALK_CHECK(cl->state == state || cl->state == ALKT__S_ACTIVE,
                  "an unproven %s ended the client's session", refuse ? "REFUSE" : "GOAWAY");
        ss_events(t, 0);
        return;
    }
    {
        /* drawn bytes after what side k sent (not in plaintext: past the
         * handshake nothing protects it, and bytes after a HELLO and AUTH
         * in flight would land there) */
        int k = (int)alksim_pick(&t->src, 2);
        ss_pipe *p = &t->pipe[k];
        size_t i;
        if (t->plaintext) return;
        n = (size_t)alksim_range(&t->src, 1, 64);
        if (p->len + n > SS_PIPE) return;
        alksim_bytes(&t->src, b, n);
        for (i = 0; i < n; i++) p->buf[(p->head + p->len + i) % SS_PIPE] = b[i];
        p->len += n;
        p->injected = 1;   /* (ss_quiesce heals the connection they cost) */
        alk_trace("attack: %zu drawn bytes toward side %d", n, 1 - k);
    }
}

static void ss_pair(ss *t)
{
    static const uint32_t weights[] = {
        6,  /* open */
        14, /* send */
        10, /* recv */
        16, /* deliver */
        12, /* transmit */
        3,  /* shutdown */
        2,  /* reset */
        6,  /* answer */
        5,  /* time */
        2,  /* drop */
        3,  /* reconnect */
        1,  /* close (only in the last tenth of the steps) */
    };
    static const uint32_t tamper_weights[] = {6, 14, 10, 16, 12, 3, 2, 6, 5,
                                              2, 3, 1, 8 /* tamper */};
    static const uint32_t attack_weights[] = {6, 14, 10, 16, 12, 3, 2, 6, 5,
                                              2, 3, 1, 0, 8 /* attack */};
    alkt_session_config cfg;
    unsigned step;
    int k;
    t->pair = 1;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_channels = (uint32_t)alksim_range(&t->src, 1, 8);
    cfg.channel_window = (uint32_t)alksim_range(&t->src, 1, 64) * 256;
    cfg.session_window = alksim_bool(&t->src)
                             ? 0 : (uint32_t)alksim_range(&t->src, 1, 64) * 256;
    cfg.max_frame = (uint32_t)alksim_range(&t->src, 1, 16) * 256;
    cfg.log_size = 4 * (ALKT_FRAME_HEADER + cfg.max_frame) +
                   (uint32_t)alksim_range(&t->src, 0, 64) * 1024;
    cfg.ping_interval_ns = 1 * SEC;
    cfg.idle_timeout_ns = 5 * SEC;
    cfg.handshake_timeout_ns = 2 * SEC;
    cfg.resume_window_ns = 30 * SEC;
    alk_trace("channels %u window %u session window %u frame %u log %u",
              cfg.max_channels, cfg.channel_window, cfg.session_window,
              cfg.max_frame, cfg.log_size);
    t->now = 1000 * SEC;
    ss_setup(t, &cfg, 0);
    ss_setup(t, &cfg, 1);
    ss_connect(t);
    for (step = 0; step < SS_STEPS && !alksim_source_done(&t->src); step++) {
        size_t op = t->tamper   ? alksim_weighted(&t->src, tamper_weights, 13)
                    : t->attack ? alksim_weighted(&t->src, attack_weights, 14)
                                : alksim_weighted(&t->src, weights,
                                                  sizeof weights / sizeof weights[0]);
        if (op == 11 && step < SS_STEPS - SS_STEPS / 10) op = 4;
        /* a drop or a reconnect while a handshake is under way: three in
         * four are a transmit instead (no draw, so an input's draws stay
         * where they were). At the plain weights a handshake's few
         * flights rarely beat the next drop: seed mode got about 1 pair
         * run in 7 up and moved no byte of data in 400 runs. */
        if ((op == 9 || op == 10) &&
            (t->side[0].s.conn == ALKT__C_HANDSHAKE ||
             t->side[1].s.conn == ALKT__C_HANDSHAKE) &&
            (t->hs_kept++ & 3) != 3)
            op = 4;
        k = (int)alksim_pick(&t->src, 2);
        switch (op) {
        case 0: ss_open(t, k); break;
        case 1: ss_send(t, k); break;
        case 2: ss_recv(t, k, (size_t)alksim_range(&t->src, 0, 20000)); break;
        case 3: {
            /* (one draw per statement, in the order gcc drew them: C
             * leaves a call's argument order open) */
            size_t seg = (size_t)alksim_range(&t->src, 1, 4096);
            /* the upper half of the draw: 8 KiB..32 KiB at a time, so
             * whole records (and runs of them) arrive in one input, as
             * from a large recv - the path that reads a record where it
             * lies, into a ring that may wrap inside it */
            if (seg > 2048) seg = 8192 + (seg - 2049) * 12;
            ss_deliver(t, k, (size_t)alksim_range(&t->src, 1, SS_PIPE), seg);
            break;
        }
        case 4: ss_transmit(t, k); break;
        case 5: ss_shutdown(t, k); break;
        case 6: ss_reset(t, k); break;
        case 7: ss_answer(t, k); break;
        case 8:
            ss_time(t, alksim_chance(&t->src, 1, 16)
                           ? alksim_range(&t->src, 1, 40) * SEC
                           : alksim_range(&t->src, 0, 1500) * 1000000ull);
            break;
        case 9: ss_drop(t); break;
        case 10: ss_connect(t); break;
        case 12:
            ss_transmit(t, k);   /* what the sender has queued, in flight */
            ss_tamper(t, k);
            break;
        case 13: ss_attack(t); break;
        default: {
            /* a close between two sessions that are up reaches the peer
             * as a GOAWAY with the app's code: the peer's session ends
             * with ALKT_ERR_GOAWAY (an empty pipe: nothing before it can
             * be cut off) */
            alkt_session *me = &t->side[k].s, *peer = &t->side[1 - k].s;
            int tell = t->side[k].connected && me->conn == ALKT__C_UP &&
                       peer->conn == ALKT__C_UP && !t->side[k].closed &&
                       !t->side[1 - k].closed && !t->pipe[k].tamper &&
                       t->pipe[k].len == 0;
            int was_closed = me->state == ALKT__S_CLOSED;
            int rc = alkt_session_close(me, 0x1234);
            /* it ends the session here and now: once */
            ALK_CHECK(rc == (was_closed ? ALKT_ERR_CLOSED : ALKT_OK) &&
                          alkt_session_close(me, 0x1234) == ALKT_ERR_CLOSED,
                      "side %d: close gave %s, then a second close did not refuse", k,
                      alkt_strerror(rc));
            ss_events(t, k);
            ALK_CHECK(t->side[k].closed, "side %d: closed without its CLOSED event", k);
            ss_transmit(t, k);
            ss_deliver(t, k, SS_PIPE, 4096);
            if (tell) {
                const void *q;
                ALK_CHECK(t->side[1 - k].closed && peer->peer_goaway == 0x1234 &&
                              peer->close_code == ALKT_ERR_GOAWAY,
                          "side %d closed: the peer %s (its GOAWAY code %d)", k,
                          t->side[1 - k].closed ? "ended" : "did not end",
                          peer->peer_goaway);
                /* and says nothing more on that connection, nor asks to be
                 * woken for it now (a driver would spin) */
                ALK_CHECK(alkt_session_transmit_peek(peer, &q) == 0,
                          "side %d: still sending after the peer's GOAWAY", 1 - k);
                ALK_CHECK(alkt_session_poll_timeout(peer) > t->now,
                          "side %d: due now after the peer's GOAWAY, with nothing to send",
                          1 - k);
            }
            break;
        }
        }
        ss_events(t, 0);
        ss_events(t, 1);
        ss_check_side(t, 0);
        ss_check_side(t, 1);
    }
    ss_quiesce(t);
    ss_check_side(t, 0);
    ss_check_side(t, 1);
}

/* ---- mode 1: a hostile peer after a real handshake ----
 * The peer is a real client session whose resend log also gets frames the
 * input makes up (so the frame count both ends keep still agrees, and the
 * server judges each frame on its merits), plus raw bytes on the wire now
 * and then, and its own legitimate opens and sends. */
static uint32_t ss_hostile_id(ss *t)
{
    alkt_session *b = &t->side[1].s;
    uint32_t i, n = 0, live[16];
    for (i = 0; i < b->max_channels && n < 16; i++)
        if (b->chans[i].state != ALKT_CHANNEL_NONE) live[n++] = b->chans[i].id;
    switch (alksim_pick(&t->src, 4)) {
    case 0: return n ? live[alksim_pick(&t->src, n)] : 1;
    case 1: return (uint32_t)alksim_range(&t->src, 0, 12);
    case 2: return t->side[0].s.next_id;
    default: return alksim_u32(&t->src);
    }
}

static void ss_hostile_frame(ss *t)
{
    static const unsigned types[] = {
        ALKT_FRAME_OPEN, ALKT_FRAME_OPEN_OK, ALKT_FRAME_OPEN_ERR,
        ALKT_FRAME_DATA, ALKT_FRAME_EOF, ALKT_FRAME_RESET, ALKT_FRAME_WINDOW,
        ALKT_FRAME_HELLO, ALKT_FRAME_ACK, ALKT_FRAME_GOAWAY, 0x17, 0xff};
    alkt_session *a = &t->side[0].s, *b = &t->side[1].s;
    unsigned char payload[1200];
    unsigned type = types[alksim_pick(&t->src, sizeof types / sizeof types[0])];
    uint32_t id = ss_hostile_id(t);
    size_t n = alksim_len(&t->src, 1100);
    alkt_channel_info before, after;
    unsigned repeat = 1;
    int had, dup;
    if (type == ALKT_FRAME_OPEN && alksim_chance(&t->src, 3, 4)) {
        alkt_open_params p = ss_params("x.example", 80);
        alkt_error err;
        ptrdiff_t m;
        m = alkt_open_params_encode(&p, (char *)payload, sizeof payload, &err);
        n = m > 0 ? (size_t)m : 0;
    } else if (type == ALKT_FRAME_WINDOW && alksim_bool(&t->src)) {
        n = 4;
        alksim_bytes(&t->src, payload, 4);
    } else if ((type == ALKT_FRAME_RESET || type == ALKT_FRAME_OPEN_ERR) &&
               alksim_bool(&t->src)) {
        n = 2;
        alksim_bytes(&t->src, payload, 2);
    } else {
        alksim_bytes(&t->src, payload, n);
    }
    if (n > a->max_frame) n = a->max_frame;
    if (type == ALKT_FRAME_DATA) repeat = (unsigned)alksim_range(&t->src, 1, 6);
    /* what the peer had queued goes first: the made-up frame is then the
     * only thing the server sees change */
    ss_transmit(t, 0);
    ss_deliver(t, 0, SS_PIPE, SS_PIPE);
    if (b->state != ALKT__S_ACTIVE) return;
    had = alkt_channel_info_get(b, id, &before) == ALKT_OK;
    dup = type == ALKT_FRAME_OPEN && had && before.state != ALKT_CHANNEL_FINISHED;
    while (repeat-- > 1) (void)alkt__log_frame(a, type, id, payload, n, NULL, 0);
    if (!alkt__log_frame(a, type, id, payload, n, NULL, 0)) return;
    /* the vehicle takes a made-up open of its own ids as used */
    if (type == ALKT_FRAME_OPEN && (id & 1) && id >= a->next_id &&
        id < 0xfffffff0u)
        a->next_id = id + 2;
    alk_trace("hostile frame type %#x channel %u, %zu bytes%s", type, id, n,
              dup ? " (a live id)" : "");
    ss_transmit(t, 0);
    ss_deliver(t, 0, SS_PIPE, SS_PIPE);
    if (dup && b->state == ALKT__S_ACTIVE) {
        /* a second open of a live id leaves that channel as it was */
        ALK_CHECK(alkt_channel_info_get(b, id, &after) == ALKT_OK &&
                      after.state == before.state && !after.reset &&
                      after.readable == before.readable,
                  "a duplicate open of channel %u changed it", id);
    }
}

static void ss_hostile(ss *t)
{
    alkt_session_config cfg;
    unsigned step;
    memset(&cfg, 0, sizeof cfg);
    t->hostile = 1;
    cfg.max_channels = 4;
    cfg.channel_window = (uint32_t)alksim_range(&t->src, 1, 16) * 256;
    cfg.max_frame = 1024;
    cfg.log_size = 16384;
    t->now = 1000 * SEC;
    ss_setup(t, &cfg, 0);
    ss_setup(t, &cfg, 1);
    ss_connect(t);
    ss_transmit(t, 0);
    ss_deliver(t, 0, SS_PIPE, SS_PIPE);
    ss_transmit(t, 1);
    ss_deliver(t, 1, SS_PIPE, SS_PIPE);
    ss_transmit(t, 0);
    ss_deliver(t, 0, SS_PIPE, SS_PIPE);
    ALK_CHECK(alkt_session_is_established(&t->side[1].s), "handshake");
    for (step = 0; step < SS_STEPS && !alksim_source_done(&t->src) &&
                   t->side[1].s.state == ALKT__S_ACTIVE; step++) {
        switch (alksim_pick(&t->src, 8)) {
        case 0:
        case 1:
        case 2:
            ss_hostile_frame(t);
            break;
        case 3: {
            /* raw bytes on the wire, between whole frames */
            unsigned char raw[64];
            size_t n = alksim_len(&t->src, sizeof raw);
            int rc;
            alksim_bytes(&t->src, raw, n);
            rc = alkt_session_handle_input(&t->side[1].s, raw, n, t->now);
            alk_trace("hostile %zu raw bytes: %s", n, alkt_strerror(rc));
            ALK_CHECK(rc <= 0 && rc >= ALKT__RESULT_LOWEST, "result %d", rc);
            break;
        }
        case 4: ss_open(t, 0); break;
        case 5: ss_send(t, 0); break;
        case 6:
            ss_time(t, alksim_range(&t->src, 0, 3000) * 1000000ull);
            break;
        default:
            ss_answer(t, 1);
            ss_recv(t, 1, 4096);
            ss_transmit(t, 1);
            ss_deliver(t, 1, SS_PIPE, SS_PIPE);
            ss_transmit(t, 0);
            ss_deliver(t, 0, SS_PIPE, SS_PIPE);
            break;
        }
        ss_events(t, 0);
        ss_events(t, 1);
        ss_check_side(t, 1);
    }
}

/* ---- mode 2: a handshake with bytes changed on the path ----
 * Every byte of both HELLOs is bound by the MACs, and so is each AUTH: the
 * server may end up established exactly when no byte was changed. */
/* Up to three byte changes, then perhaps a cut; 1 when what goes on
 * differs from what was sent (two changes of one byte can cancel). */
static int ss_mangle(ss *t, unsigned char *b, size_t *n)
{
    unsigned char orig[1024];
    unsigned k, count = (unsigned)alksim_range(&t->src, 0, 3);
    size_t was = *n;
    memcpy(orig, b, was);
    for (k = 0; k < count && was; k++) {
        size_t at = (size_t)alksim_range(&t->src, 0, was - 1);
        b[at] ^= alksim_u8(&t->src);
    }
    if (alksim_chance(&t->src, 1, 8) && was)
        *n = (size_t)alksim_range(&t->src, 0, was - 1);
    return *n != was || memcmp(orig, b, was) != 0;
}

static void ss_handshake_on_path(ss *t)
{
    alkt_session_config cfg;
    unsigned char buf[1024];
    size_t n;
    int k, step, changed = 0;
    memset(&cfg, 0, sizeof cfg);
    cfg.max_frame = 1024;
    cfg.log_size = 16384;
    t->hostile = 1;
    t->now = 1000 * SEC;
    ss_setup(t, &cfg, 0);
    ss_setup(t, &cfg, 1);
    ss_connect(t);
    /* HELLO, HELLO + AUTH, AUTH: each hop's bytes may be changed, and cut
     * into pieces */
    for (step = 0; step < 3; step++) {
        k = step == 1;
        n = alkt_session_poll_transmit(&t->side[k].s, buf, sizeof buf);
        changed |= ss_mangle(t, buf, &n);
        alk_trace("hop %d: %zu bytes%s", step, n, changed ? ", changed" : "");
        (void)alkt_session_handle_input(&t->side[1 - k].s, buf, n, t->now);
        ss_events(t, 1 - k);
    }
    ss_check_side(t, 1);
    if (changed)
        ALK_CHECK(!alkt_session_is_established(&t->side[1].s),
                  "a handshake with changed bytes got through");
    /* whatever happened, the server drains and keeps its deadlines */
    for (k = 0; k < 8 && alkt_session_poll_transmit(&t->side[1].s, buf,
                                                    sizeof buf); k++) {
    }
    ALK_CHECK(k < 8, "server output does not drain");
    ss_time(t, 11 * SEC);
    ss_check_side(t, 1);
}

/* The primitives against second implementations written apart
 * (testkit/aead_ref.h, fuzz/sha256_ref.h), on pieces of the input: a
 * mutant of the library's SHA-256, HMAC, HKDF, ChaCha20 or Poly1305 is the
 * same at both peers, so no handshake notices it - these do. X25519 has no
 * second implementation here: its check is the exchange's agreement,
 * a*(b*9) == b*(a*9) from drawn scalars, one public key made through the
 * base-point entry and the other through the generic one. With
 * SS_PRIMITIVES_ONLY (the portable build's replay) nothing else runs: the
 * session logic is the same in both builds, the primitives are not. */
static void ss_primitives(const uint8_t *data, size_t size)
{
    unsigned char key[32], nonce[12], a[32], b[32], got[32], want[32];
    unsigned char sealed[256 + 16], ref[256 + 16], okm[100], okm_ref[100];
    static const unsigned char nine[32] = {9};
    size_t n = size > 256 ? 256 : size, aad = n / 3, i, klen;
    alkt_hmac_sha256_ctx m;
    for (i = 0; i < 32; i++) {
        key[i] = data[(i * 7) % size];
        a[i] = data[(i * 13 + 1) % size] ^ 0x5a;
        b[i] = data[(i * 5 + 2) % size] ^ 0xa5;
    }
    for (i = 0; i < 12; i++) nonce[i] = data[(i * 3 + 5) % size];
    alkt_sha256(data, size, got);
    sref_sha256(data, size, want);
    ALK_CHECK(memcmp(got, want, 32) == 0, "SHA-256 of %zu bytes differs from the reference",
              size);
    klen = size > 80 ? size - 10 : n / 2;   /* (past 64 bytes: the key is hashed) */
    alkt_hmac_sha256(data, klen, data + n / 2, size - n / 2, got);
    sref_hmac(data, klen, data + n / 2, size - n / 2, want);
    ALK_CHECK(memcmp(got, want, 32) == 0, "HMAC-SHA-256 differs from the reference");
    alkt_hmac_sha256_init(&m, key, sizeof key);   /* streamed, in two pieces */
    alkt_hmac_sha256_update(&m, data, n / 3);
    alkt_hmac_sha256_update(&m, data + n / 3, size - n / 3);
    alkt_hmac_sha256_final(&m, got);
    sref_hmac(key, sizeof key, data, size, want);
    ALK_CHECK(memcmp(got, want, 32) == 0, "streamed HMAC-SHA-256 differs from the reference");
    alkt_hkdf_extract(got, key, (size_t)(data[0] % 33), data, n);
    ALK_CHECK(alkt_hkdf_expand(okm, sizeof okm - (size % 40), got, data + aad, n - aad) ==
                  ALKT_OK,
              "hkdf_expand refused");
    sref_hkdf(okm_ref, sizeof okm - (size % 40), key, (size_t)(data[0] % 33), data, n,
              data + aad, n - aad);   /* (n - aad <= 171: within the reference's 255) */
    ALK_CHECK(memcmp(okm, okm_ref, sizeof okm - (size % 40)) == 0,
              "HKDF differs from the reference");
    alkt_aead_seal(sealed, key, nonce, data, aad, data + aad, n - aad);
    aref_seal(ref, key, nonce, data, aad, data + aad, n - aad);
    ALK_CHECK(memcmp(sealed, ref, n - aad + 16) == 0, "AEAD seal of %zu bytes differs from "
              "the reference", n - aad);
    ALK_CHECK(alkt_aead_open(ref, key, nonce, data, aad, sealed, n - aad + 16) == ALKT_OK &&
                  memcmp(ref, data + aad, n - aad) == 0,
              "AEAD open of its own seal");
    {   /* any one tag bit wrong: refused (every byte of the tag compared) */
        size_t at = n - aad + (size_t)data[size - 1] % 16;
        unsigned char bit = (unsigned char)(1u << (data[0] % 8));
        sealed[at] ^= bit;
        ALK_CHECK(alkt_aead_open(ref, key, nonce, data, aad, sealed, n - aad + 16) ==
                      ALKT_ERR_AUTH,
                  "AEAD open took a tag with byte %zu changed", at - (n - aad));
        sealed[at] ^= bit;
    }
    {   /* the wire's integers: big-endian, each byte where the format
         * says (sequence numbers and counters pass 2^32 only in a long
         * life, so the sessions here never show the high word) */
        unsigned char w[8];
        uint64_t v = 0;
        for (i = 0; i < 8; i++) v = v << 8 | data[(i * 11 + 3) % size];
        v ^= (uint64_t)size << 40;
        alkt__put64(w, v);
        for (i = 0; i < 8; i++)
            ALK_CHECK(w[i] == (unsigned char)(v >> (56 - 8 * i)),
                      "put64: byte %zu of %016llx", i, (unsigned long long)v);
        ALK_CHECK(alkt__get64(w) == v, "get64 of put64(%016llx)", (unsigned long long)v);
    }
    {   /* a longer message, 600..2599 bytes: ChaCha20 sixteen blocks at a
         * time (AVX-512F), eight (AVX2), four (SSE2), then one and a part,
         * and Poly1305 eight blocks at once (AVX-512 IFMA lanes, and
         * AVX-512F lanes as well where the CPU has IFMA: from 512 bytes)
         * or four (AVX2 lanes or 44-bit limbs), then single ones - each
         * way the CPU has, against the reference (peers with the same
         * wrong keystream or tag still agree) */
        static unsigned char msg[2600], big[2600 + 16], big_ref[2600 + 16];
        unsigned char t1[16], t2[16];
        size_t len = 600 + size % 2000;
        for (i = 0; i < len; i++) msg[i] = (unsigned char)(data[i % size] ^ (i >> 6));
        alkt_aead_seal(big, key, nonce, data, aad, msg, len);
        aref_seal(big_ref, key, nonce, data, aad, msg, len);
        ALK_CHECK(memcmp(big, big_ref, len + 16) == 0,
                  "AEAD seal of %zu bytes differs from the reference", len);
        ALK_CHECK(alkt_aead_open(big_ref, key, nonce, data, aad, big, len + 16) == ALKT_OK &&
                      memcmp(big_ref, msg, len) == 0,
                  "AEAD open of %zu bytes of its own seal", len);
        alkt_poly1305(t1, msg, len, key);
        aref_poly1305(t2, msg, len, key);
        ALK_CHECK(memcmp(t1, t2, 16) == 0,
                  "Poly1305 of %zu bytes differs from the reference", len);
#ifdef ALKT__CHACHA_AVX2
        alkt__poly_no_ifma = 1;
        alkt_poly1305(t1, msg, len, key);
        alkt__poly_no_ifma = 0;
        ALK_CHECK(memcmp(t1, t2, 16) == 0,
                  "Poly1305 of %zu bytes without IFMA differs from the reference", len);
#endif
    }
    {   /* the one-shot Poly1305 the header offers, against the reference */
        unsigned char t1[16], t2[16];
        alkt_poly1305(t1, data, size, key);
        aref_poly1305(t2, data, size, key);
        ALK_CHECK(memcmp(t1, t2, 16) == 0,
                  "Poly1305 of %zu bytes differs from the reference", size);
    }
    {   /* small-order points give the all-zero secret the handshake
         * refuses: 0, 1, p - 1, p and p + 1 (the last two non-canonical) */
        static const unsigned char pts[5][32] = {
            {0},
            {1},
            {0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
            {0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
            {0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
             0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}};
        static const unsigned char zero[32];
        unsigned char o[32];
        size_t k = size % 5;
        alkt_x25519(o, a, pts[k]);
        ALK_CHECK(memcmp(o, zero, 32) == 0,
                  "X25519 with small-order point %zu is not all zero", k);
    }
    {   /* the key schedule's next key: HKDF-Expand(key, "alkt1 rekey", 32),
         * which is one HMAC block: HMAC(key, "alkt1 rekey" || 0x01) */
        static const unsigned char info[12] = "alkt1 rekey\001";
        unsigned char next[32];
        memcpy(next, key, 32);
        alkt__next_key(next);
        sref_hmac(key, 32, info, sizeof info, want);
        ALK_CHECK(memcmp(next, want, 32) == 0, "the rekey derivation differs from the "
                                              "header's HKDF-Expand(key, \"alkt1 rekey\")");
    }
    {   /* a's public key the generic way, b's by the base-point path */
        unsigned char pa[32], pb[32], sa[32], sb[32];
        alkt_x25519(pa, a, nine);
        alkt_x25519_base(pb, b);
        alkt_x25519(sa, a, pb);
        alkt_x25519(sb, b, pa);
        ALK_CHECK(memcmp(sa, sb, 32) == 0, "X25519: the two ends of an exchange disagree");
        /* agreeing is not enough: a wrong ladder can be a commutative
         * function too (x25519_ref.h) */
        xref_x25519(sa, a, nine);
        ALK_CHECK(memcmp(pa, sa, 32) == 0, "X25519 differs from the reference");
        xref_x25519(sb, b, nine);
        ALK_CHECK(memcmp(pb, sb, 32) == 0, "X25519 of the base point differs from the reference");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static ss t;
    alk_trace_reset();
    memset(&t, 0, sizeof t);
    if (size == 0) return 0;
    ss_primitives(data, size);
#ifdef SS_PRIMITIVES_ONLY
    return 0;
#endif
    alksim_source_init_bytes(&t.src, data + 1, size - 1);
    /* the first byte's other bits: plaintext (bit 1), records per key
     * (bits 2-3: the default, 2, 3, 7), mode 3 (bits 4-6 all set in mode 0) */
    {
        static const uint64_t rekey[4] = {0, 2, 3, 7};
        static const uint32_t batch[4] = {0, 1, 16, 2};   /* 0: the default 4 */
        t.plaintext = (data[0] >> 1) & 1;
        t.rekey = rekey[(data[0] >> 2) & 3];
        t.seal_batch[0] = batch[(data[0] >> 2) & 3];
        t.seal_batch[1] = batch[((data[0] >> 2) + 1) & 3];
        t.tamper = (data[0] & 0xf1) == 0x70;
        t.attack = (data[0] & 0xf1) == 0x30 ? 1 : (data[0] & 0xf1) == 0x50 ? 2 : 0;
        if (t.tamper) t.plaintext = 0;
    }
    alk_trace("%s, %llu records per key", t.plaintext ? "plaintext" : "encrypted",
              (unsigned long long)t.rekey);
    if ((data[0] & 0x81) == 0x80) {
        alk_trace("mode: handshake with changed bytes");
        ss_handshake_on_path(&t);
    } else if (data[0] & 1) {
        alk_trace("mode: hostile peer");
        ss_hostile(&t);
    } else {
        alk_trace(t.tamper   ? "mode: two sessions, records changed on the path"
                  : t.attack ? "mode: two sessions and an off-path attacker"
                             : "mode: two sessions");
        ss_pair(&t);
    }
    if (getenv("SESSION_TRACE")) alk_trace_dump(stderr);
    ss_free(&t);
    return 0;
}

/* roles.c - fuzz target `roles`: alktunnel.h's relay, client and gateway.
 *
 * The first input byte picks the mode (its low two bits); the rest drives it.
 *
 * Mode 0, a hostile relay: connections come and go sending drawn bytes -
 * well-formed requests with drawn kinds, tokens and ids, refreshes, or
 * noise - and read drawn amounts; time jumps. After every step:
 *   - a connection is joined only to one whose request had the other kind,
 *     a token the relay serves and the same id (the model parses every
 *     request itself);
 *   - the first byte a connection gets is its status (0 joined, 1..4),
 *     and the status agrees with the model: a malformed request 1, an
 *     unknown token 2; after status 0, what it gets is exactly what its
 *     partner sent after its own request (an offer's 'R' and 'S' excepted),
 *     in order, never more;
 *   - the relay never holds more connections than max_conns, and its next
 *     deadline is never in the past after handle_timeout.
 *
 * Mode 1, authorization: drawn resources (IPv4/IPv6 networks, port ranges,
 * protocols, two gateways), authorizations (two clients, expiries around
 * now) and open params (direct or forwarded, tcp/udp/unix, IP, name or no
 * host). alkt_gateway_authorize must agree with the reference below,
 * written bit by bit and separately from the header's rule - for the
 * drawn opens, and then for every address one bit away from each
 * resource's network (each bit of it, both clients, direct and
 * forwarded), so a prefix that ends inside a byte is judged on both sides
 * of its edge whatever the draws.
 *
 * Mode 2, the world of testkit/tunnel_world.h: channels opened, bytes sent,
 * echoes read, half-closes and resets, the relay killed and restarted, the
 * direct path partitioned and healed, the authorization revoked and given
 * back, the client roaming, segment sizes and time changing. After every
 * step each channel's echo is a prefix of what it sent; a channel's EOF
 * comes only after its whole echo; a channel ends with a reset only when
 * the model allows one (revocation: ALKT_CODE_REVOKED; our own reset).
 * Liveness at the end: heal, authorize, run - every live channel's echo
 * is complete.
 *
 * Mode 3, datagrams: an alkt_dgram_pump on a world channel sends drawn
 * datagrams (0..max bytes, empty ones often) through the echo target,
 * with drawn segment sizes and a relay death on the way. The bytes the
 * target receives are decoded by alkcodec.h - an independent decoder of
 * the same wire format - and must give exactly the datagrams sent, in
 * order; the pump hands back exactly those datagrams, an empty one as an
 * empty datagram, and DONE only after both EOFs. */
#include "alktunnel.h"
#include "alksim.h"
#include "alkcodec.h"
#include "../testkit/alk_check.h"
#include "../testkit/tunnel_world.h"

#include <stdlib.h>
#include <string.h>


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- mode 0: a hostile relay ---- */
#define RR_CONNS 6
#define RR_STREAM 2048

static const char *const rr_tokens[] = {"tok-a", "tok-b"};
static const char *const rr_token_pool[] = {"tok-a", "tok-b", "tok-c", "tok-", "t"};
static const char *const rr_id_pool[] = {"gw1", "gw2", "g", "bad/id"};
/* the gateways the relay takes offers from, and their offer keys */
static const char *const rr_gateways[] = {"gw1", "gw2"};
static const unsigned char rr_keys[3][16] = {"gw1's offer key", "gw2's offer key",
                                             "a key no one has"};
#define RR_LIFETIME 30000000000ull   /* offer_lifetime_ns, the default */

typedef struct rr_conn {
    uint32_t h;                /* 0: none */
    unsigned char req[ALKT_RELAY_REQUEST_MAX];
    size_t req_len;            /* request bytes sent so far (model) */
    int parsed;                /* request complete in the model */
    int valid, kind, token_ok; /* the model's reading of it */
    char id[ALKT_ID_MAX + 1];
    int token;
    int status;                /* -1: none yet */
    int proven;                /* offer: its MAC and freshness held */
    int ended;                 /* offer: the relay let it go (bound, age) */
    uint64_t fresh;            /* offer: its freshness */
    uint64_t refreshed_at;     /* offer: its request or last 'R' */
    int after_s;               /* offer: its 'S' sent (what follows is data) */
    int bad_byte;              /* offer: sent something but 'R' unjoined */
    int partner;               /* model index + 1 once joined */
    unsigned char sent[RR_STREAM];   /* data it sent after joining */
    size_t sent_len;
    size_t got;                /* data it received after its status */
    int gone;
} rr_conn;

typedef struct rr {
    alksim_source *src;
    alkt_relay_server r;
    alkt_relay_config cfg;
    void *mem;
    uint64_t now;
    rr_conn c[RR_CONNS];
    uint64_t seen_status[6];   /* status bytes read, by value */
    uint64_t seen_spliced;     /* SPLICED events */
    uint64_t gw_fresh[2];      /* per gateway: the freshest offer taken */
    uint64_t fresh_next;       /* the freshness the next offer draws from */
    const char *last_tok, *last_id;   /* of the last request */
    unsigned last_kind;
    uint32_t handles[256];     /* every handle the relay gave, in order */
    unsigned n_handles;
} rr;

static int rr_find(rr *t, uint32_t h)
{
    int i;
    for (i = 0; i < RR_CONNS; i++)
        if (t->c[i].h == h && h) return i;
    return -1;
}

/* The model's reading of a whole request; an offer's proof judged, and a
 * proven one taken as the relay takes it: the freshness moves, and the
 * gateway's stalest live offer goes when it has `bound` already. */
static void rr_parse(rr *t, rr_conn *c, unsigned bound)
{
    size_t tl = c->req[6], il;
    size_t i;
    int ok = memcmp(c->req, "ALKR", 4) == 0 && c->req[4] == 2 &&
             (c->req[5] == 1 || c->req[5] == 2) && tl >= 1 && tl <= ALKT_TOKEN_MAX;
    il = c->req[7 + tl];
    ok = ok && il >= 1 && il <= ALKT_ID_MAX;
    for (i = 0; ok && i < tl; i++) ok = c->req[7 + i] >= 0x21 && c->req[7 + i] <= 0x7e;
    for (i = 0; ok && i < il; i++) {
        unsigned char b = c->req[8 + tl + i];
        ok = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') ||
             b == '.' || b == '_' || b == ':' || b == '-';
    }
    c->valid = ok;
    c->kind = c->req[5];
    c->token = -1;
    for (i = 0; ok && i < 2; i++)
        if (strlen(rr_tokens[i]) == tl && memcmp(rr_tokens[i], c->req + 7, tl) == 0)
            c->token = (int)i;
    c->token_ok = c->token >= 0;
    if (ok) {
        memcpy(c->id, c->req + 8 + tl, il);
        c->id[il] = 0;
    }
    c->parsed = 1;
    c->refreshed_at = t->now;
    if (ok && c->token_ok && c->kind == 2) {
        int gw = -1, j;
        for (j = 0; j < 2; j++)
            if (strcmp(c->id, rr_gateways[j]) == 0) gw = j;
        c->fresh = alkt__get64(c->req + 8 + tl + il);
        if (gw >= 0) {
            alkt_hmac_sha256_ctx k;
            unsigned char mac[32];
            alkt_hmac_sha256_init(&k, rr_keys[gw], sizeof rr_keys[gw]);
            alkt_hmac_sha256_update(&k, "alkr2 offer", 11);
            alkt_hmac_sha256_update(&k, c->req, 8 + tl + il + 8);
            alkt_hmac_sha256_final(&k, mac);
            c->proven = memcmp(mac, c->req + 8 + tl + il + 8, 32) == 0 &&
                        c->fresh > t->gw_fresh[gw];
        }
        if (c->proven) {
            rr_conn *stalest = NULL;
            unsigned live = 0;
            t->gw_fresh[gw] = c->fresh;
            for (j = 0; j < RR_CONNS; j++) {
                rr_conn *o = &t->c[j];
                if (o == c || !o->h || !o->proven || o->partner || o->ended ||
                    o->status >= 0 || strcmp(o->id, c->id) != 0)
                    continue;
                live++;
                if (!stalest || o->fresh < stalest->fresh) stalest = o;
            }
            if (live >= bound && stalest) stalest->ended = 1;
        }
    }
}

/* Bytes the model's connection i sends. */
static void rr_send(rr *t, int i, const unsigned char *b, size_t n)
{
    rr_conn *c = &t->c[i];
    size_t k;
    ptrdiff_t took;
    if (!c->h || c->gone) return;
    took = alkt_relay_handle_input(&t->r, c->h, b, n, t->now);
    ALK_CHECK(took >= 0 && (size_t)took <= n, "relay took %ld of %zu", (long)took, n);
    for (k = 0; k < (size_t)took; k++) {
        if (!c->parsed) {
            if (c->req_len < sizeof c->req) c->req[c->req_len++] = b[k];
            /* (an offer's request ends after its freshness and MAC) */
            if (c->req_len >= 8 && c->req_len >= 8u + c->req[6] && c->req[7 + c->req[6]] &&
                c->req_len == 8u + c->req[6] + c->req[7 + c->req[6]] +
                                  (c->req[5] == 2 ? 40u : 0u))
                rr_parse(t, c, t->cfg.offers_per_gateway);
        } else if (c->kind == 2 && !c->partner) {
            /* an offer says only 'R'; after anything else the relay has
             * refused it (status 1) and takes nothing more from it */
            if (b[k] != 'R') c->bad_byte = 1;
            else if (c->status < 0 && !c->ended && !c->bad_byte) c->refreshed_at = t->now;
        } else if (c->kind == 2 && c->partner && !c->after_s) {
            if (b[k] == 'S') c->after_s = 1;   /* (its 'R's are not data) */
        } else if (c->partner && c->sent_len < RR_STREAM) {
            c->sent[c->sent_len++] = b[k];
        }
    }
}

static void rr_drain(rr *t, int i, size_t max)
{
    rr_conn *c = &t->c[i];
    while (c->h && max) {
        const void *d;
        size_t n = alkt_relay_transmit_peek(&t->r, c->h, &d), k;
        const unsigned char *p = (const unsigned char *)d;
        if (n == 0) break;
        if (n > max) n = max;
        for (k = 0; k < n; k++) {
            if (c->status < 0) {
                c->status = p[k];
                ALK_CHECK(c->status <= 5, "status %d", c->status);
                t->seen_status[c->status]++;
                ALK_CHECK(c->parsed || c->status == 1 || c->req_len >= 4,
                          "a status before a whole request: %d", c->status);
                if (c->status == 1)
                    ALK_CHECK(!c->parsed || !c->valid || c->bad_byte,
                              "a valid request refused as malformed");
                if (c->status == 2) ALK_CHECK(c->parsed && c->valid && !c->token_ok, "token status");
                /* 5: an offer that did not prove itself - and only that */
                ALK_CHECK((c->status == 5) == (c->parsed && c->valid && c->token_ok &&
                                               c->kind == 2 && !c->proven),
                          "status %d for an offer %s proven", c->status,
                          c->proven ? "that was" : "not");
                /* 4: an offer the relay let go, whose end the model saw
                 * coming (its gateway's bound, or its age) */
                if (c->status == 4)
                    ALK_CHECK(c->kind == 2 && c->proven && c->ended,
                              "an offer ended that was neither over its gateway's "
                              "bound nor past its lifetime");
                if (c->status == 0)   /* (the match itself: at SPLICED) */
                    ALK_CHECK(c->parsed && c->valid && c->token_ok && c->partner &&
                                  (c->kind != 2 || c->proven),
                              "status 0 without a good request and a partner");
            } else {
                rr_conn *o = c->partner ? &t->c[c->partner - 1] : NULL;
                ALK_CHECK(c->status == 0 && o, "data to a connection that is not joined");
                ALK_CHECK(c->got < o->sent_len, "more data than the partner sent");
                ALK_CHECK(p[k] == o->sent[c->got], "byte %zu differs", c->got);
                c->got++;
            }
        }
        ALK_CHECK(alkt_relay_transmit_done(&t->r, c->h, n) == ALKT_OK, "tx done");
        max -= n;
    }
}

static void rr_events(rr *t)
{
    alkt_role_event ev;
    int guard = 0;
    while (alkt_relay_poll_event(&t->r, &ev)) {
        int a, b;
        ALK_CHECK(++guard < 1000, "endless relay events");
        if (ev.type == ALKT_REV_SPLICED) {
            a = rr_find(t, ev.conn);
            b = rr_find(t, ev.conn2);
            ALK_CHECK(a >= 0 && b >= 0, "spliced unknown connections");
            ALK_CHECK(t->c[a].parsed && t->c[b].parsed && t->c[a].valid && t->c[b].valid &&
                          t->c[a].token_ok && t->c[a].token == t->c[b].token &&
                          t->c[a].kind == 1 && t->c[b].kind == 2 && t->c[b].proven &&
                          !t->c[b].ended && strcmp(t->c[a].id, t->c[b].id) == 0,
                      "a join the rules do not allow");
            {
                /* the offer refreshed last (then the freshest) of those
                 * that could have been joined */
                int j;
                for (j = 0; j < RR_CONNS; j++) {
                    const rr_conn *o = &t->c[j];
                    if (j == b || !o->h || o->kind != 2 || !o->proven || o->ended ||
                        o->bad_byte || o->partner || o->status >= 0 ||
                        o->token != t->c[b].token ||
                        strcmp(o->id, t->c[b].id) != 0)
                        continue;
                    ALK_CHECK(o->refreshed_at < t->c[b].refreshed_at ||
                                  (o->refreshed_at == t->c[b].refreshed_at &&
                                   o->fresh <= t->c[b].fresh),
                              "joined offer %d (refreshed %llu) over %d (refreshed %llu)", b,
                              (unsigned long long)t->c[b].refreshed_at, j,
                              (unsigned long long)o->refreshed_at);
                }
            }
            t->c[a].partner = b + 1;
            t->c[b].partner = a + 1;
            t->seen_spliced++;
            alk_trace("joined %d and %d", a, b);
        } else {
            ALK_CHECK(ev.type == ALKT_REV_CLOSE, "relay event %d", (int)ev.type);
            a = rr_find(t, ev.conn);
            ALK_CHECK(a >= 0, "close of an unknown connection");
            t->c[a].h = 0;
            alk_trace("relay closed %d", a);
        }
    }
}

/* A request: drawn token, id and kind; an offer with its freshness (the
 * next, or an old one: a replay) and its MAC (under its gateway's key, or
 * one nobody holds); then perhaps a bit flipped anywhere. */
static void rr_request(rr *t, int i)
{
    unsigned char b[ALKT_RELAY_REQUEST_MAX + 8];
    /* mostly the token and id of the request before: offers and clients
     * that meet, and offers that compete for one client */
    int again = t->last_tok && alksim_chance(t->src, 3, 4);
    int good = alksim_chance(t->src, 3, 4);   /* a token and gateway that exist */
    const char *tok = again ? t->last_tok
                            : good ? rr_tokens[alksim_pick(t->src, 2)]
                                   : rr_token_pool[alksim_pick(t->src, 5)];
    const char *id = again ? t->last_id
                           : good ? rr_gateways[alksim_pick(t->src, 2)]
                                  : rr_id_pool[alksim_pick(t->src, 4)];
    size_t tl = strlen(tok), il = strlen(id), n;
    t->last_tok = tok;
    t->last_id = id;
    memcpy(b, "ALKR", 4);
    b[4] = 2;
    b[5] = (unsigned char)(alksim_chance(t->src, 1, 16) ? 3 : alksim_range(t->src, 1, 2));
    if (again && t->last_kind == 2 && b[5] != 3)   /* after an offer: another, or its client */
        b[5] = (unsigned char)(alksim_bool(t->src) ? 2 : 1);
    t->last_kind = b[5];
    b[6] = (unsigned char)tl;
    memcpy(b + 7, tok, tl);
    b[7 + tl] = (unsigned char)il;
    memcpy(b + 8 + tl, id, il);
    n = 8 + tl + il;
    if (b[5] == 2) {
        alkt_hmac_sha256_ctx k;
        unsigned key = strcmp(id, "gw2") == 0 ? 1u : 0u;
        uint64_t fresh = ++t->fresh_next;
        if (alksim_chance(t->src, 1, 6)) fresh = alksim_range(t->src, 0, fresh);  /* old */
        if (alksim_chance(t->src, 1, 6)) key = 2;                              /* forged */
        alkt__put64(b + n, fresh);
        alkt_hmac_sha256_init(&k, rr_keys[key], sizeof rr_keys[key]);
        alkt_hmac_sha256_update(&k, "alkr2 offer", 11);
        alkt_hmac_sha256_update(&k, b, n + 8);
        alkt_hmac_sha256_final(&k, b + n + 8);
        n += 40;
    }
    if (alksim_chance(t->src, 1, 8)) {   /* (the bit first, as both compilers drew it) */
        unsigned bit = (unsigned)alksim_pick(t->src, 8);
        b[alksim_pick(t->src, n)] ^= (unsigned char)(1u << bit);
    }
    rr_send(t, i, b, n);
}

static void rr_run(alksim_source *src)
{
    static const char *tokens[2] = {"tok-a", "tok-b"};
    alkt_relay_gateway gws[2];
    rr t;
    int step, g;
    memset(&t, 0, sizeof t);
    t.src = src;
    t.cfg.tokens = tokens;
    t.cfg.token_count = 2;
    t.cfg.max_conns = 4;
    t.cfg.buffer_size = (uint32_t)alksim_range(src, 1, 512);
    for (g = 0; g < 2; g++) {
        gws[g].id = rr_gateways[g];
        gws[g].key = rr_keys[g];
        gws[g].key_len = sizeof rr_keys[g];
    }
    t.cfg.gateways = gws;
    t.cfg.gateway_count = 2;
    t.cfg.offers_per_gateway = (uint32_t)alksim_range(src, 1, 3);
    t.mem = malloc(alkt_relay_mem_size(&t.cfg));
    ALK_CHECK(t.mem != NULL, "out of memory");
    /* init takes memory as it comes: zeros or not (no draw: the buffer
     * size's low bit) */
    memset(t.mem, (t.cfg.buffer_size & 1) ? 0 : 0xA5, alkt_relay_mem_size(&t.cfg));
    ALK_CHECK(alkt_relay_init(&t.r, &t.cfg, t.mem, alkt_relay_mem_size(&t.cfg), 0) == ALKT_OK,
              "relay init");
    alk_trace("relay: buffer %u", t.cfg.buffer_size);
    for (step = 0; step < 200 && !alksim_source_done(src); step++) {
        int i = (int)alksim_pick(src, RR_CONNS);
        rr_conn *c = &t.c[i];
        unsigned op = (unsigned)alksim_pick(src, 8);
        int referenced = 0, j;
        for (j = 0; j < RR_CONNS; j++)
            referenced |= t.c[j].h && t.c[j].partner == i + 1;
        if (op == 0 && !c->h && !referenced) {
            uint32_t h;
            alkt_relay_stats st, was;
            int rc;
            alkt_relay_stats_get(&t.r, &was);
            rc = alkt_relay_accept(&t.r, t.now, &h);
            alkt_relay_stats_get(&t.r, &st);
            ALK_CHECK(st.conns == was.conns + (rc == ALKT_OK) && (rc == ALKT_OK) == (h != 0),
                      "accept: %d, connections %u -> %u, handle %u", rc, (unsigned)was.conns,
                      (unsigned)st.conns, h);
            if (rc == ALKT_OK) {
                unsigned hj;
                /* a handle is never given twice (its generation moves
                 * on when its slot is taken again): a stale handle can
                 * never reach the connection that took its slot */
                for (hj = 0; hj < t.n_handles; hj++)
                    ALK_CHECK(t.handles[hj] != h, "accept gave handle %08x again", (unsigned)h);
                if (t.n_handles < 256) t.handles[t.n_handles++] = h;
                memset(c, 0, sizeof *c);
                c->h = h;
                c->status = -1;
            } else {
                ALK_CHECK(rc == ALKT_ERR_CHANNELS_FULL && st.conns == t.cfg.max_conns,
                          "accept refused below the limit");
            }
            alk_trace("accept %d -> %d", i, rc);
        } else if (op == 1 && c->h) {
            rr_request(&t, i);
        } else if (op == 2 && c->h) {
            unsigned char b[300];
            size_t n = alksim_len(src, sizeof b);
            alksim_bytes(src, b, n);
            if (c->parsed && c->kind == 2 && c->status < 0 && alksim_bool(src)) memset(b, 'R', n);
            if (c->parsed && c->kind == 2 && c->status == 0 && !c->after_s && n && alksim_bool(src))
                b[0] = 'S';
            rr_send(&t, i, b, n);
            alk_trace("send %d: %zu bytes", i, n);
        } else if (op == 3 && c->h) {
            rr_drain(&t, i, alksim_range(src, 1, 600));
        } else if (op == 6 && c->h && c->parsed && c->kind == 2 && c->status < 0) {
            rr_send(&t, i, (const unsigned char *)"R", 1);   /* a refresh */
            alk_trace("refresh %d", i);
        } else if (op == 4 && c->h && alksim_chance(src, 1, 3)) {
            /* (what it sent still reaches its partner: its model stays) */
            alkt_relay_handle_closed(&t.r, c->h, t.now);
            alk_trace("closed %d", i);
            c->h = 0;
        } else if (op == 5) {
            uint64_t dl = alkt_relay_poll_timeout(&t.r);
            t.now += alksim_range(src, 0, 3) * 2000000000ull;
            if (dl != UINT64_MAX && dl > t.now && alksim_bool(src)) t.now = dl;
            alkt_relay_handle_timeout(&t.r, t.now);
            /* offers not refreshed for their lifetime are let go - and are
             * told so (status 4) now, not later: a refresh extends an offer
             * by a lifetime, no more */
            for (g = 0; g < RR_CONNS; g++)
                if (t.c[g].h && t.c[g].proven && !t.c[g].partner && t.c[g].status < 0 &&
                    !t.c[g].bad_byte && t.now >= t.c[g].refreshed_at + RR_LIFETIME) {
                    const void *d = NULL;
                    size_t n = alkt_relay_transmit_peek(&t.r, t.c[g].h, &d);
                    const alkt__rconn *rc = &t.r.conns[(t.c[g].h & 0xffffu) - 1];
                    t.c[g].ended = 1;
                    /* status 4 waiting, or sent, or dropped with the
                     * connection for want of a reader (its CLOSE says 4) */
                    ALK_CHECK((n >= 1 && *(const unsigned char *)d == 4) ||
                                  (rc->handle == t.c[g].h && rc->closing && rc->status == 4),
                              "offer %d, refreshed at %llu, is not let go at %llu", g,
                              (unsigned long long)t.c[g].refreshed_at,
                              (unsigned long long)t.now);
                }
            alk_trace("time %llu", (unsigned long long)t.now);
        } else {
            int k;
            for (k = 0; k < RR_CONNS; k++)
                if (t.c[k].h) rr_drain(&t, k, 4096);
        }
        rr_events(&t);
        {
            alkt_relay_stats st;
            alkt_relay_stats_get(&t.r, &st);
            ALK_CHECK(st.conns <= t.cfg.max_conns, "%u connections", st.conns);
            ALK_CHECK(alkt_relay_poll_timeout(&t.r) >= t.now, "a deadline in the past");
            /* the counters count at least what the connections were told:
             * every join (its event), every offer let go unjoined (status
             * 4), every request refused (status 1, 2, 3) */
            ALK_CHECK(st.spliced >= t.seen_spliced && st.expired >= t.seen_status[4] &&
                          st.refused >= t.seen_status[1] + t.seen_status[2] +
                                            t.seen_status[3] + t.seen_status[5],
                      "relay stats: %llu spliced, %llu expired, %llu refused; seen "
                      "%llu joins, %llu expiries, %llu refusals",
                      (unsigned long long)st.spliced, (unsigned long long)st.expired,
                      (unsigned long long)st.refused, (unsigned long long)t.seen_spliced,
                      (unsigned long long)t.seen_status[4],
                      (unsigned long long)(t.seen_status[1] + t.seen_status[2] +
                                           t.seen_status[3]));
        }
    }
    {
        /* alkt_relay_wipe, for callers that keep the memory: nothing that
         * went through is left - no 16 bytes of any connection's data in
         * the relay's memory - and the struct is zero (its memory also
         * holds slack the relay never writes, and the gateways'
         * freshness, which is no secret) */
        size_t i, k, len = alkt_relay_mem_size(&t.cfg), nz = 0;
        const unsigned char *m = (const unsigned char *)t.mem, *rs = (const unsigned char *)&t.r;
        size_t mc = t.r.cfg.max_conns, bs = t.r.cfg.buffer_size;   /* (as the relay took them) */
        alkt_relay_wipe(&t.r);
        for (i = 0; i < sizeof t.r; i++) nz += rs[i] != 0;
        ALK_CHECK(nz == 0, "alkt_relay_wipe left %zu bytes of the struct that are not zero", nz);
        {
            /* the connections and their rings, as alkt_relay_init lays
             * them out from the first 8-byte boundary: all zero */
            const unsigned char *p = (const unsigned char *)(((uintptr_t)t.mem + 7u) &
                                                               ~(uintptr_t)7u);
            size_t span = ((mc * sizeof(alkt__rconn) + 7u) & ~(size_t)7u) + mc * bs;
            for (i = 0; i < span; i++) nz += p[i] != 0;
            ALK_CHECK(nz == 0, "alkt_relay_wipe left %zu bytes of the connections and their "
                      "rings that are not zero", nz);
        }
        for (k = 0; k < RR_CONNS; k++) {
            const rr_conn *c = &t.c[k];
            size_t at;
            static const unsigned char zero[16];
            for (at = 0; at + 16 <= c->sent_len; at += 16)
                for (i = 0; i + 16 <= len && memcmp(c->sent + at, zero, 16) != 0; i++)
                    ALK_CHECK(m[i] != c->sent[at] || memcmp(m + i, c->sent + at, 16) != 0,
                              "alkt_relay_wipe left bytes %zu..%zu that connection %zu sent, at "
                              "%zu of its memory", at, at + 15, k, i);
        }
    }
    free(t.mem);
}

/* ---- mode 1: authorization against a reference ---- */
static int ra_bit(const unsigned char *b, unsigned i)
{
    return (b[i / 8] >> (7 - i % 8)) & 1;
}

/* The reference: what a user reads in the docs, nothing shared with the
 * header's code. */
static int ra_allowed(const alkt_resource *res, size_t nres, const alkt_authorization *au,
                      size_t nau, const char *gw, const char *client,
                      const alkt_open_params *p, uint64_t unix_s)
{
    size_t i, j, k;
    for (i = 0; i < nres; i++) {
        const alkt_resource *r = &res[i];
        alkt_ip ip;
        unsigned proto, port, b;
        int in = 1, port_ok, auth_ok = 0;
        if (strcmp(r->gateway, gw) != 0) continue;
        if (p->substrate == ALKT_SUBSTRATE_TCP) proto = ALKT_PROTO_TCP;
        else if (p->substrate == ALKT_SUBSTRATE_UDP) proto = ALKT_PROTO_UDP;
        else continue;
        if (p->kind == ALKT_OPEN_DIRECT) {
            if (p->host.kind != ALKT_HOST_IP) continue;
            ip = p->host.ip;
            port = p->port;
        } else {
            if (p->host.kind == ALKT_HOST_IP) ip = p->host.ip;
            else {
                memset(&ip, 0, sizeof ip);
                ip.family = 4;
            }
            port = p->listen;
        }
        if (ip.family != r->network.family) continue;
        for (b = 0; b < r->prefix_len; b++)
            if (ra_bit(ip.bytes, b) != ra_bit(r->network.bytes, b)) in = 0;
        if (!in) continue;
        if (r->protocols != 0 && (r->protocols & proto) == 0) continue;
        port_ok = r->port_range_count == 0;
        for (k = 0; k < r->port_range_count; k++)
            if (r->port_ranges[k].from <= port && port <= r->port_ranges[k].to) port_ok = 1;
        if (!port_ok) continue;
        for (j = 0; j < nau; j++)
            if (!strcmp(au[j].client, client) && !strcmp(au[j].resource, r->id) &&
                unix_s < au[j].expires)
                auth_ok = 1;
        if (auth_ok) return 1;
    }
    return 0;
}

/* Every address one bit away from each resource's network, and the
 * network itself: the gateway's answer is the reference's. The port is
 * the resource's first range's start (or 1), the substrate one its
 * protocols allow. */
static void ra_sweep(alkt_gateway *g, const alkt_resource *res, size_t nres,
                     const alkt_authorization *au, size_t nau, const char *const *clients,
                     uint64_t now)
{
    size_t i;
    for (i = 0; i < nres; i++) {
        const alkt_resource *r = &res[i];
        unsigned bits = r->network.family == 4 ? 32 : 128, b;
        for (b = 0; b <= bits; b++) {
            int c, fwd;
            for (c = 0; c < 2; c++)
                for (fwd = 0; fwd < 2; fwd++) {
                    alkt_open_params p;
                    size_t which = 99;
                    int got, want;
                    memset(&p, 0, sizeof p);
                    p.kind = fwd ? ALKT_OPEN_FORWARDED : ALKT_OPEN_DIRECT;
                    p.substrate = r->protocols && !(r->protocols & ALKT_PROTO_TCP)
                                      ? ALKT_SUBSTRATE_UDP : ALKT_SUBSTRATE_TCP;
                    p.host.kind = ALKT_HOST_IP;
                    p.host.ip = r->network;
                    if (b < bits) p.host.ip.bytes[b / 8] ^= (unsigned char)(0x80u >> (b % 8));
                    if (fwd) p.listen = r->port_range_count ? r->port_ranges[0].from : 1;
                    else p.port = r->port_range_count ? r->port_ranges[0].from : 1;
                    want = ra_allowed(res, nres, au, nau, "gw1", clients[c], &p,
                                      (1700000000ull * 1000000000ull + now) / 1000000000ull);
                    got = alkt_gateway_authorize(g, clients[c], &p, now, &which);
                    ALK_CHECK((got == 0) == want,
                              "resource %zu (/%u): bit %u flipped, %s %s: authorize says %d, "
                              "the reference %d", i, (unsigned)r->prefix_len, b, clients[c],
                              fwd ? "forwarded" : "direct", got, want);
                }
        }
    }
}

static void ra_ip(alksim_source *src, alkt_ip *ip, int family)
{
    static const unsigned char pool[4] = {0, 10, 0xff, 0x80};
    int i;
    memset(ip, 0, sizeof *ip);
    ip->family = (unsigned char)family;
    for (i = 0; i < (family == 4 ? 4 : 16); i++)
        ip->bytes[i] = alksim_bool(src) ? pool[alksim_pick(src, 4)] : alksim_u8(src);
}

static void ra_run(alksim_source *src)
{
    static const unsigned char seed[32] = "authorization mode seed 32 bytes";
    static const char *const ids[] = {"web", "db", "any"};
    static const char *const clients[] = {"laptop", "phone"};
    alkt_node_config cfg;
    alkt_gateway g;
    alkt_resource res[3];
    alkt_authorization au[3];
    alkt_control ctl;
    void *mem;
    size_t nres = alksim_range(src, 0, 3), nau = alksim_range(src, 0, 3), i, k;
    uint64_t now = alksim_range(src, 0, 4) * 1000000000ull;
    int round;
    tw_node_config(&cfg, "gw1", seed);
    mem = malloc(alkt_node_mem_size(&cfg));
    ALK_CHECK(mem != NULL, "gateway memory");
    tw_check_config_rules(&cfg, mem, alkt_node_mem_size(&cfg));
    ALK_CHECK(alkt_gateway_init(&g, &cfg, mem, alkt_node_mem_size(&cfg), 0) == ALKT_OK,
              "gateway init");
    memset(res, 0, sizeof res);
    memset(au, 0, sizeof au);
    for (i = 0; i < nres; i++) {
        alkt_resource *r = &res[i];
        unsigned b;
        strcpy(r->id, ids[alksim_pick(src, 3)]);
        ra_ip(src, &r->network, alksim_chance(src, 1, 4) ? 6 : 4);
        r->prefix_len = (unsigned char)alksim_range(src, 0, r->network.family == 4 ? 32 : 128);
        for (b = r->prefix_len; b < (r->network.family == 4 ? 32u : 128u); b++)
            r->network.bytes[b / 8] &= (unsigned char)~(0x80u >> (b % 8));
        r->port_range_count = alksim_range(src, 0, 3);
        for (k = 0; k < r->port_range_count; k++) {
            uint16_t a = (uint16_t)alksim_range(src, 1, 100), z = (uint16_t)alksim_range(src, 1, 100);
            r->port_ranges[k].from = a < z ? a : z;
            r->port_ranges[k].to = a < z ? z : a;
        }
        r->protocols = (unsigned)alksim_range(src, 0, 7);
        strcpy(r->gateway, alksim_chance(src, 1, 4) ? "gw2" : "gw1");
    }
    for (i = 0; i < nau; i++) {
        strcpy(au[i].client, clients[alksim_pick(src, 2)]);
        strcpy(au[i].resource, ids[alksim_pick(src, 3)]);
        au[i].secret_len = 16;
        au[i].expires = 1700000000ull + alksim_range(src, 0, 5);
    }
    memset(&ctl, 0, sizeof ctl);
    ctl.has_resources = ctl.has_authorizations = 1;
    ctl.resources = res;
    ctl.resource_count = nres;
    ctl.authorizations = au;
    ctl.authorization_count = nau;
    ALK_CHECK(alkt_node_control(&g, &ctl, 0) == ALKT_OK, "control");
    alk_trace("%zu resources, %zu authorizations, now %llu", nres, nau, (unsigned long long)now);
    for (round = 0; round < 16 && !alksim_source_done(src); round++) {
        alkt_open_params p;
        const char *client = clients[alksim_pick(src, 2)];
        size_t which = 99;
        int got, want;
        memset(&p, 0, sizeof p);
        p.kind = alksim_chance(src, 1, 4) ? ALKT_OPEN_FORWARDED : ALKT_OPEN_DIRECT;
        p.substrate = (alkt_substrate)alksim_range(src, 1, 3);
        switch (alksim_pick(src, 4)) {
        case 0:
            p.host.kind = ALKT_HOST_NAME;
            strcpy(p.host.name, "web.internal");
            break;
        case 1:
            p.host.kind = ALKT_HOST_NONE;
            break;
        default:
            p.host.kind = ALKT_HOST_IP;
            if (nres && alksim_bool(src)) {   /* near a resource's network */
                unsigned bit;
                p.host.ip = res[alksim_pick(src, nres)].network;
                bit = (unsigned)alksim_pick(src, 8);   /* (first, as both compilers drew it) */
                p.host.ip.bytes[alksim_pick(src, p.host.ip.family == 4 ? 4 : 16)] ^=
                    (unsigned char)(1u << bit);
                if (alksim_bool(src)) p.host.ip = res[alksim_pick(src, nres)].network;
            } else {
                ra_ip(src, &p.host.ip, alksim_chance(src, 1, 4) ? 6 : 4);
            }
        }
        p.port = (uint16_t)alksim_range(src, 1, 101);
        if (p.kind == ALKT_OPEN_FORWARDED) {
            p.listen = p.port;
            p.port = 0;
        }
        want = ra_allowed(res, nres, au, nau, "gw1", client, &p,
                          (1700000000ull * 1000000000ull + now) / 1000000000ull);
        got = alkt_gateway_authorize(&g, client, &p, now, &which);
        alk_trace("open kind %d sub %d host %d port %u listen %u client %s: want %d got %d",
                  (int)p.kind, (int)p.substrate, (int)p.host.kind, p.port, p.listen, client,
                  want, got);
        ALK_CHECK((got == 0) == want, "authorize says %d, the reference %d", got, want);
        if (got == 0) {
            ALK_CHECK(which < nres && strcmp(res[which].gateway, "gw1") == 0,
                      "the resource named is not ours");
        } else {
            ALK_CHECK(got == (int)ALKT_CODE_UNAUTHORIZED, "refusal code %d", got);
        }
    }
    ra_sweep(&g, res, nres, au, nau, clients, now);
    free(mem);
}

/* ---- mode 2: the world ---- */
#define RW_CH 4
#define RW_MAX 6000

typedef struct rw_ch {
    int used, open, eof_sent, eof_got, reset, done;
    uint32_t peer, id;
    size_t sent, got;
} rw_ch;

static unsigned char rw_byte(uint32_t id, size_t at)
{
    return (unsigned char)(id * 131u + at * 7u + (at >> 8));
}

static void rw_read(tw_world *w, rw_ch *c)
{
    alkt_session *s = alkt_node_session(&w->node[TW_CLIENT], c->peer);
    unsigned char b[512];
    int eof = 0;
    ptrdiff_t n;
    size_t i;
    if (!c->open || c->done) return;
    if (!s) {
        c->done = 1;
        return;
    }
    for (;;) {
        n = alkt_channel_recv(s, c->id, b, sizeof b, &eof);
        if (n <= 0) break;
        for (i = 0; i < (size_t)n; i++)
            ALK_CHECK(b[i] == rw_byte(c->id, c->got + i), "channel %u: echo byte %zu differs",
                      c->id, c->got + i);
        c->got += (size_t)n;
        ALK_CHECK(c->got <= c->sent, "channel %u: more echo (%zu) than sent (%zu)", c->id,
                  c->got, c->sent);
    }
    if (n < 0) {
        c->done = 1;   /* reset or gone: the events say why */
        return;
    }
    if (eof && !c->eof_got) {
        c->eof_got = 1;
        ALK_CHECK(c->eof_sent && c->got == c->sent, "channel %u: EOF before the whole echo",
                  c->id);
    }
}

static void rw_run(alksim_source *src)
{
    tw_world w;
    rw_ch ch[RW_CH];
    int step, revoked = 0, i, k;
    unsigned resets_seen = 0, own_resets = 0, revocations = 0;
    tw_init(&w, alksim_bool(src), 4102444800ull);
    w.segment = (size_t)alksim_range(src, 1, 2000);
    memset(ch, 0, sizeof ch);
    alk_trace("world: relay_first %d segment %zu", w.node[TW_CLIENT].cfg.relay_first, w.segment);
    for (step = 0; step < 120 && !alksim_source_done(src); step++) {
        rw_ch *c = &ch[alksim_pick(src, RW_CH)];
        unsigned op = (unsigned)alksim_pick(src, 12);
        if (op == 0 && !c->used) {
            alkt_open_params p;
            int rc, code;
            uint32_t peer = 0, id = 0;
            memset(&p, 0, sizeof p);
            p.kind = ALKT_OPEN_DIRECT;
            p.substrate = ALKT_SUBSTRATE_TCP;
            p.host.kind = ALKT_HOST_IP;
            tw_ip4(&p.host.ip, 10, 1, 0, (unsigned)alksim_range(src, 1, 9));
            p.port = 80;
            rc = alkt_client_open(&w.node[TW_CLIENT], &p, w.now, &peer, &id, &code);
            alk_trace("open -> %d (%u/%u)", rc, peer, id);
            if (rc == ALKT_OK) {
                memset(c, 0, sizeof *c);
                c->used = c->open = 1;
                c->peer = peer;
                c->id = id;
            } else {
                ALK_CHECK(rc == ALKT_ERR_NOT_CONNECTED || rc == ALKT_ERR_CHANNELS_FULL ||
                              rc == ALKT_ERR_WOULD_BLOCK,
                          "open: %d", rc);
            }
        } else if (op <= 3 && c->used && c->open && !c->done && !c->eof_sent) {
            alkt_session *s = alkt_node_session(&w.node[TW_CLIENT], c->peer);
            unsigned char b[1024];
            size_t n = alksim_len(src, sizeof b), j;
            ptrdiff_t took;
            if (c->sent + n > RW_MAX) n = RW_MAX - c->sent;
            for (j = 0; j < n; j++) b[j] = rw_byte(c->id, c->sent + j);
            took = s ? alkt_channel_send(s, c->id, b, n) : -1;
            if (took > 0) c->sent += (size_t)took;
            alk_trace("send %u: %zu -> %ld", c->id, n, (long)took);
        } else if (op == 4 && c->used && c->open && !c->done && !c->eof_sent) {
            alkt_session *s = alkt_node_session(&w.node[TW_CLIENT], c->peer);
            if (s && alkt_channel_shutdown_write(s, c->id) == ALKT_OK) c->eof_sent = 1;
            alk_trace("shutdown %u", c->id);
        } else if (op == 5 && c->used && c->open && !c->done && alksim_chance(src, 1, 4)) {
            alkt_session *s = alkt_node_session(&w.node[TW_CLIENT], c->peer);
            if (s && alkt_channel_reset(s, c->id, 7) == ALKT_OK) {
                c->done = c->reset = 1;
                own_resets++;
            }
            alk_trace("reset %u", c->id);
        } else if (op == 6) {
            switch (alksim_pick(src, 6)) {
            case 0:
                if (!w.relay_down[0]) tw_kill_relay(&w);
                break;
            case 1:
                if (w.relay_down[0]) {
                    tw_relay_restart(&w);
                    w.relay_down[0] = 0;
                    alk_trace("relay restarted");
                }
                break;
            case 2:
                tw_partition_direct(&w, !w.direct_down[0]);
                break;
            case 3:
                alk_trace("client roamed");
                tw_roam(&w, TW_CLIENT);
                break;
            case 4:
                tw_revoke(&w, "web", revoked);
                revoked = !revoked;
                revocations += (unsigned)revoked;
                alk_trace("authorization %s", revoked ? "revoked" : "given back");
                break;
            default:
                w.segment = (size_t)alksim_range(src, 1, 2000);
                break;
            }
        } else if (op == 7) {
            tw_run(&w, w.now + alksim_range(src, 1, 40) * (TW_SEC / 10));
        } else {
            tw_step(&w);
        }
        tw_step(&w);
        for (i = 0; i < RW_CH; i++) rw_read(&w, &ch[i]);
        if (w.channel_events[TW_CLIENT][ALKT_EV_RESET] > resets_seen) {
            resets_seen = w.channel_events[TW_CLIENT][ALKT_EV_RESET];
            /* (a reset may still be in flight when the authorization is
             * given back: any revocation so far allows one) */
            ALK_CHECK(revocations && w.last_reset_code[TW_CLIENT] == (int)ALKT_CODE_REVOKED,
                      "a reset the model did not expect (code %d)",
                      w.last_reset_code[TW_CLIENT]);
        }
        ALK_CHECK(alkt_node_poll_timeout(&w.node[TW_CLIENT]) >= w.now &&
                      alkt_node_poll_timeout(&w.node[TW_GATEWAY]) >= w.now,
                  "a deadline in the past");
        ALK_CHECK(w.peer_down[TW_CLIENT] == 0, "the client's session ended (%d)",
                  w.last_code[TW_CLIENT]);
    }
    /* liveness: heal everything, authorize, let it settle */
    if (w.direct_down[0]) tw_partition_direct(&w, 0);
    if (w.relay_down[0]) {
        tw_relay_restart(&w);
        w.relay_down[0] = 0;
    }
    if (revoked) tw_revoke(&w, "web", 1);
    w.segment = 1500;
    for (k = 0; k < 40; k++) {
        tw_run(&w, w.now + TW_SEC / 2);
        for (i = 0; i < RW_CH; i++) rw_read(&w, &ch[i]);
    }
    for (i = 0; i < RW_CH; i++) {
        rw_ch *c = &ch[i];
        if (!c->used || c->done) continue;
        ALK_CHECK(c->got == c->sent, "channel %u: %zu of %zu echoed after healing", c->id,
                  c->got, c->sent);
        if (c->eof_sent) ALK_CHECK(c->eof_got, "channel %u: no EOF after healing", c->id);
    }
    (void)own_resets;
    tw_wipe_check(&w);
    tw_free(&w);
}


/* ---- mode 3: datagrams ---- */
#define RD_MAX 600
#define RD_COUNT 48

typedef struct rd {
    size_t len[RD_COUNT];
    unsigned seed[RD_COUNT];
    size_t sent, got, tapped;
    alkc_decoder dec;
    unsigned char dec_mem[ALKC_DECODER_MEM_SIZE(RD_MAX)];
} rd;

static unsigned char rd_byte(unsigned seed, size_t i)
{
    return (unsigned char)(seed * 29u + i * 13u + (i >> 5));
}

static void rd_check(const rd *t, size_t k, const unsigned char *d, size_t n, const char *who)
{
    size_t i;
    ALK_CHECK(k < t->sent, "%s: datagram %zu never sent", who, k);
    ALK_CHECK(n == t->len[k], "%s: datagram %zu is %zu bytes, sent %zu", who, k, n, t->len[k]);
    for (i = 0; i < n; i++)
        ALK_CHECK(d[i] == rd_byte(t->seed[k], i), "%s: datagram %zu byte %zu", who, k, i);
}

static void rd_tap(void *ctx, const tw_target *target, const unsigned char *d, size_t n)
{
    rd *t = (rd *)ctx;
    (void)target;
    alkc_datagram dg;
    int rc;
    ALK_CHECK(alkc_decoder_feed(&t->dec, d, n) == ALKC_OK, "alkcodec feed");
    while ((rc = alkc_decoder_next(&t->dec, &dg)) == ALKC_OK) {
        rd_check(t, t->tapped, dg.data, dg.len, "on the wire (alkcodec)");
        t->tapped++;
    }
    ALK_CHECK(rc == ALKC_NEED_MORE, "alkcodec: %s", alkc_strerror(rc));
}

static void rd_run(alksim_source *src)
{
    unsigned char *mem;   /* exactly the size the rule asks (ASan sees past it) */
    tw_world w;
    rd t;
    alkt_dgram_pump d;
    alkc_decoder_config dc;
    uint32_t peer = 0, ch = 0;
    alkt_open_params p;
    size_t count = alksim_range(src, 0, RD_COUNT), max = alksim_range(src, 0, RD_MAX), k;
    int step, rc, eof_given = 0, killed = 0;
    memset(&t, 0, sizeof t);
    for (k = 0; k < count; k++) {
        t.len[k] = alksim_chance(src, 1, 3) ? 0 : alksim_range(src, 0, max);
        t.seed[k] = (unsigned)k;
    }
    dc.max_datagram = RD_MAX;
    ALK_CHECK(alkc_decoder_init(&t.dec, &dc, t.dec_mem, sizeof t.dec_mem) == ALKC_OK,
              "alkcodec init");
    tw_init(&w, alksim_bool(src), 4102444800ull);
    w.segment = (size_t)alksim_range(src, 1, 1500);
    w.tap = rd_tap;
    w.tap_ctx = &t;
    alk_trace("datagrams: %zu, max %zu, segment %zu", count, max, w.segment);
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_DIRECT;
    p.substrate = ALKT_SUBSTRATE_TCP;   /* (the echo target speaks bytes) */
    p.host.kind = ALKT_HOST_IP;
    tw_ip4(&p.host.ip, 10, 1, 0, 1);
    p.port = 80;
    tw_run(&w, TW_SEC);
    rc = alkt_client_open(&w.node[TW_CLIENT], &p, w.now, &peer, &ch, NULL);
    if (rc == ALKT_ERR_NOT_CONNECTED) {
        tw_run(&w, w.now + 2 * TW_SEC);
        rc = alkt_client_open(&w.node[TW_CLIENT], &p, w.now, &peer, &ch, NULL);
    }
    ALK_CHECK(rc == ALKT_OK, "open: %d", rc);
    mem = (unsigned char *)malloc(2 * (max + 2));
    ALK_CHECK(mem != NULL, "out of memory");
    ALK_CHECK(alkt_dgram_pump_init(&d, alkt_node_session(&w.node[TW_CLIENT], peer), ch, mem,
                                   2 * (max + 2) - 1, max) == ALKT_ERR_ARG &&
                  alkt_dgram_pump_init(&d, alkt_node_session(&w.node[TW_CLIENT], peer), ch, mem,
                                       2 * (max + 2), max) == ALKT_OK,
              "dgram pump init (a byte short is refused)");
    for (step = 0; step < 4000; step++) {
        unsigned bits = alkt_dgram_pump_poll(&d);
        int live;
        ALK_CHECK(!(bits & ALKT_PUMP_ABORT), "the datagram pump aborted (%d)", d.code);
        /* the echo ends only after us: never a "peer done" before that */
        ALK_CHECK(!(bits & ALKT_PUMP_SHUT_WRITE), "SHUT_WRITE before the echo's EOF");
        if (bits & ALKT_PUMP_DONE) break;
        live = alksim_source_done(src);   /* out of input: no more stalls */
        if (live) w.segment = 1500;
        if ((bits & ALKT_PUMP_READ) && t.sent < count && (live || alksim_chance(src, 3, 4))) {
            unsigned char b[RD_MAX];
            size_t i;
            for (i = 0; i < t.len[t.sent]; i++) b[i] = rd_byte(t.seed[t.sent], i);
            ALK_CHECK(alkt_dgram_pump_send(&d, b, t.len[t.sent]) == ALKT_OK, "send");
            t.sent++;
        }
        if (t.sent == count && !eof_given && !(alkt_dgram_pump_poll(&d) & ALKT_PUMP_WRITE) &&
            alkt_dgram_pump_poll(&d) & ALKT_PUMP_READ) {
            ALK_CHECK(alkt_dgram_pump_endpoint_eof(&d) == ALKT_OK, "eof");
            eof_given = 1;
        }
        if ((bits & ALKT_PUMP_WRITE) && (live || alksim_chance(src, 3, 4))) {
            const void *dp;
            ptrdiff_t n = alkt_dgram_pump_recv(&d, &dp);
            ALK_CHECK(n >= 0, "WRITE but no datagram (%ld)", (long)n);
            rd_check(&t, t.got, (const unsigned char *)dp, (size_t)n, "handed back");
            ALK_CHECK(alkt_dgram_pump_delivered(&d) == ALKT_OK, "delivered");
            t.got++;
        }
        if (!killed && w.node[TW_CLIENT].cfg.relay_first && t.sent > count / 2 && alksim_chance(src, 1, 8)) {
            tw_kill_relay(&w);
            killed = 1;
        }
        if (alksim_chance(src, 1, 16)) w.segment = (size_t)alksim_range(src, 1, 1500);
        tw_step(&w);
        if (alksim_source_done(src) || step % 8 == 0) tw_advance(&w, w.now + TW_SEC / 50);
        ALK_CHECK(t.got <= t.sent && t.tapped <= t.sent, "more datagrams than sent");
    }
    ALK_CHECK(alkt_dgram_pump_poll(&d) == ALKT_PUMP_DONE, "not DONE after %d steps (%zu/%zu/%zu)",
              step, t.sent, t.tapped, t.got);
    ALK_CHECK(t.got == count && t.tapped == count, "%zu handed back, %zu on the wire, of %zu",
              t.got, t.tapped, count);
    free(mem);
    tw_wipe_check(&w);
    tw_free(&w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    alksim_source src;
    if (size < 1) return 0;
    alk_trace_reset();
    alksim_source_init_bytes(&src, data + 1, size - 1);
    switch (data[0] & 3) {
    case 0:
        alk_trace("mode: hostile relay");
        rr_run(&src);
        break;
    case 1:
        alk_trace("mode: authorization");
        ra_run(&src);
        break;
    case 2:
        alk_trace("mode: world");
        rw_run(&src);
        break;
    default:
        alk_trace("mode: datagrams");
        rd_run(&src);
        break;
    }
    return 0;
}

/* test_alktunnel_roles.h - the relay, client and gateway roles in the
 * in-process world of testkit/tunnel_world.h: paths, fallback, backoff,
 * authorization, revocation, expiry, the relay's rules. Included by
 * test_alktunnel.c. */
#include "../testkit/tunnel_world.h"

#define TR_FAR 4102444800ull   /* 2100-01-01: an authorization that stays */

static void tr_params(alkt_open_params *p, unsigned a, unsigned b, unsigned c,
                      unsigned d, uint16_t port)
{
    memset(p, 0, sizeof *p);
    p->kind = ALKT_OPEN_DIRECT;
    p->substrate = ALKT_SUBSTRATE_TCP;
    p->host.kind = ALKT_HOST_IP;
    tw_ip4(&p->host.ip, a, b, c, d);
    p->port = port;
}

/* Opens 10.1.2.3:80 through the world's client: the first try starts the
 * session, the second (once it is up) opens. */
static int tr_open(tw_world *w, uint32_t *peer, uint32_t *ch)
{
    alkt_open_params p;
    int code, rc;
    tr_params(&p, 10, 1, 2, 3, 80);
    rc = alkt_client_open(&w->node[TW_CLIENT], &p, w->now, peer, ch, &code);
    if (rc == ALKT_ERR_NOT_CONNECTED) {
        tw_run(w, w->now + TW_SEC);
        rc = alkt_client_open(&w->node[TW_CLIENT], &p, w->now, peer, ch, &code);
    }
    if (rc == ALKT_OK) tw_run(w, w->now + TW_SEC / 10);
    return rc;
}

/* Sends len bytes of a pattern from `from` on, runs the world, reads the
 * echo back; 1 when every byte came back in order. */
static int tr_echo(tw_world *w, uint32_t peer, uint32_t ch, size_t from, size_t len,
                   void (*midway)(tw_world *))
{
    alkt_session *s = alkt_node_session(&w->node[TW_CLIENT], peer);
    size_t sent = 0, got = 0;
    int rounds = 0, eof = 0, mid = 0;
    while (got < len && rounds++ < 20000) {
        unsigned char b[700];
        ptrdiff_t n;
        size_t i, k = len - sent < sizeof b ? len - sent : sizeof b;
        for (i = 0; i < k; i++) b[i] = (unsigned char)((from + sent + i) * 7 + 3);
        if (!s) return 0;
        n = k ? alkt_channel_send(s, ch, b, k) : 0;
        if (n < 0) return 0;
        sent += (size_t)n;
        if (midway && !mid && sent > len / 2) {
            mid = 1;
            midway(w);
        }
        tw_step(w);
        tw_advance(w, w->now + TW_SEC / 100);
        s = alkt_node_session(&w->node[TW_CLIENT], peer);
        for (;;) {
            n = s ? alkt_channel_recv(s, ch, b, sizeof b, &eof) : -1;
            if (n <= 0) break;
            for (i = 0; i < (size_t)n; i++)
                if (b[i] != (unsigned char)((from + got + i) * 7 + 3)) return 0;
            got += (size_t)n;
        }
        if (n < 0) return 0;
    }
    return got == len;
}

TEST roles_direct_echo_and_half_close(void)
{
    tw_world w;
    uint32_t peer, ch;
    alkt_session *s;
    unsigned char b[16];
    int eof = 0, i;
    tw_init(&w, 0, TR_FAR);
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT_EQ(1u, w.peer_up[TW_CLIENT]);
    ASSERT_EQ(1u, w.peer_up[TW_GATEWAY]);
    ASSERT_EQ(0u, w.spliced);                 /* direct: no relay */
    ASSERT_EQ(1u, w.channel_events[TW_CLIENT][ALKT_EV_OPENED]);
    ASSERT(tr_echo(&w, peer, ch, 0, 20000, NULL));
    s = alkt_node_session(&w.node[TW_CLIENT], peer);
    ASSERT_EQ(ALKT_OK, alkt_channel_shutdown_write(s, ch));
    for (i = 0; i < 50 && !eof; i++) {
        tw_run(&w, w.now + TW_SEC / 10);
        ASSERT_EQ(0, (int)alkt_channel_recv(s, ch, b, sizeof b, &eof));
    }
    ASSERT(eof);                              /* the echo's EOF came back */
    tw_run(&w, w.now + TW_SEC);
    ASSERT(w.channel_events[TW_CLIENT][ALKT_EV_CHANNEL_DONE] >= 1);
    ASSERT_EQ(0, w.last_code[TW_CLIENT]);     /* two EOFs, no reset */
    tw_free(&w);
    PASS();
}

TEST roles_authorization_decides_every_open(void)
{
    tw_world w;
    alkt_open_params p;
    uint32_t peer, ch;
    size_t res;
    int code;
    tw_init(&w, 0, TR_FAR);
    /* inside: the CIDR's edges, both port ranges' edges */
    tr_params(&p, 10, 1, 0, 0, 80);
    ASSERT_EQ(0, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, &res));
    ASSERT_EQ((size_t)0, res);
    tr_params(&p, 10, 1, 255, 255, 8000);
    ASSERT_EQ(0, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    tr_params(&p, 10, 1, 255, 255, 8100);
    ASSERT_EQ(0, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    /* outside: one address past each edge, ports beside the ranges, udp,
     * another client, a host name, a unix socket */
    tr_params(&p, 10, 0, 255, 255, 80);
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    tr_params(&p, 10, 2, 0, 0, 80);
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    tr_params(&p, 10, 1, 0, 1, 81);
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    tr_params(&p, 10, 1, 0, 1, 7999);
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    tr_params(&p, 10, 1, 0, 1, 8101);
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    tr_params(&p, 10, 1, 0, 1, 80);
    p.substrate = ALKT_SUBSTRATE_UDP;
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    tr_params(&p, 10, 1, 0, 1, 80);
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop2", &p, 0, NULL));
    p.host.kind = ALKT_HOST_NAME;
    strcpy(p.host.name, "web.internal");
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    /* expiry: live one second before, not at the second itself */
    tr_params(&p, 10, 1, 0, 1, 80);
    w.auth[0].expires = 1700000100ull;
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_GATEWAY], &w.ctl, 0));
    ASSERT_EQ(0, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 99 * TW_SEC, NULL));
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED,
              alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 100 * TW_SEC, NULL));
    /* a resource of another gateway does not count on this one */
    strcpy(w.res[0].gateway, "gw2");
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_GATEWAY], &w.ctl, 0));
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, alkt_gateway_authorize(&w.node[TW_GATEWAY], "laptop", &p, 0, NULL));
    /* the client applies the same rule before it opens */
    tr_params(&p, 10, 2, 0, 0, 80);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, alkt_client_open(&w.node[TW_CLIENT], &p, 0, &peer, &ch, &code));
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, code);
    tw_free(&w);
    PASS();
}

/* A client that skips its own check meets the gateway's. */
TEST roles_gateway_refuses_what_the_client_should_not_open(void)
{
    tw_world w;
    alkt_open_params p;
    uint32_t peer, ch, rogue;
    tw_init(&w, 0, TR_FAR);
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    tr_params(&p, 10, 9, 9, 9, 22);
    ASSERT_EQ(ALKT_OK, alkt_channel_open(alkt_node_session(&w.node[TW_CLIENT], peer), &p, &rogue));
    tw_run(&w, w.now + TW_SEC);
    ASSERT_EQ(1u, w.channel_events[TW_CLIENT][ALKT_EV_OPEN_FAILED]);
    ASSERT_EQ(0u, (unsigned)w.channel_events[TW_GATEWAY][ALKT_EV_OPENED]);
    /* and the gateway's app hears of it, for its log */
    ASSERT_EQ(1u, w.opens_refused[TW_GATEWAY]);
    /* nothing reached a target: only the authorized channel has one */
    ASSERT(tw_target_find(&w, 1, ch) != NULL || tw_target_find(&w, 2, ch) != NULL);
    ASSERT_EQ(NULL, (void *)tw_target_find(&w, 1, rogue));
    ASSERT(tr_echo(&w, peer, ch, 0, 3000, NULL));   /* the live one goes on */
    tw_free(&w);
    PASS();
}

TEST roles_revocation_resets_live_channels_at_once(void)
{
    tw_world w;
    uint32_t peer, ch, ch2;
    alkt_open_params p;
    alkt_channel_info info;
    tw_init(&w, 0, TR_FAR);
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT(tr_echo(&w, peer, ch, 0, 5000, NULL));
    tw_revoke(&w, "web", 0);   /* only the gateway hears of it */
    tw_run(&w, w.now + TW_SEC);
    ASSERT_EQ(1u, w.channel_events[TW_CLIENT][ALKT_EV_RESET]);
    ASSERT_EQ((int)ALKT_CODE_REVOKED, w.last_code[TW_CLIENT]);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL,
              alkt_channel_info_get(alkt_node_session(&w.node[TW_CLIENT], peer), ch, &info));
    /* a new open (the client still believes it may) is refused */
    tr_params(&p, 10, 1, 2, 3, 80);
    ASSERT_EQ(ALKT_OK, alkt_client_open(&w.node[TW_CLIENT], &p, w.now, &peer, &ch2, NULL));
    tw_run(&w, w.now + TW_SEC);
    ASSERT_EQ(1u, w.channel_events[TW_CLIENT][ALKT_EV_OPEN_FAILED]);
    ASSERT_EQ((int)ALKT_CODE_UNAUTHORIZED, w.last_code[TW_CLIENT]);
    tw_free(&w);
    PASS();
}

TEST roles_expiry_resets_live_channels(void)
{
    tw_world w;
    uint32_t peer, ch;
    uint64_t expires_at = 1700000000ull + 300;   /* 300 s after now == 0 */
    tw_init(&w, 0, expires_at);
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT(tr_echo(&w, peer, ch, 0, 2000, NULL));
    tw_run(&w, 299 * TW_SEC);
    ASSERT_EQ(0u, w.channel_events[TW_CLIENT][ALKT_EV_RESET]);
    tw_run(&w, 301 * TW_SEC);
    ASSERT_EQ(1u, w.channel_events[TW_CLIENT][ALKT_EV_RESET]);
    ASSERT_EQ((int)ALKT_CODE_REVOKED, w.last_code[TW_CLIENT]);
    tw_free(&w);
    PASS();
}

static void tr_kill_relay(tw_world *w)
{
    tw_kill_relay(w);
}

/* The relay dies mid-transfer: the session resumes on the direct path and
 * every byte arrives once, in order. */
TEST roles_relay_death_resumes_on_the_direct_path(void)
{
    tw_world w;
    uint32_t peer, ch;
    tw_init(&w, 1, TR_FAR);
    tw_run(&w, TW_SEC);                        /* the gateway's offer is in */
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT_EQ(1u, w.spliced);                  /* through the relay */
    ASSERT(tr_echo(&w, peer, ch, 0, 60000, tr_kill_relay));
    ASSERT(w.peer_up[TW_CLIENT] >= 2);         /* established, then resumed */
    ASSERT_EQ(0u, w.peer_down[TW_CLIENT]);
    ASSERT_EQ(0u, w.channel_events[TW_CLIENT][ALKT_EV_RESET]);
    tw_free(&w);
    PASS();
}

/* The direct path is blocked: the client falls back to the relay. */
TEST roles_direct_failure_falls_back_to_the_relay(void)
{
    tw_world w;
    uint32_t peer, ch;
    tw_init(&w, 0, TR_FAR);
    tw_partition_direct(&w, 1);
    tw_run(&w, TW_SEC);
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT(w.connects_refused >= 1);
    ASSERT_EQ(1u, w.spliced);
    ASSERT(tr_echo(&w, peer, ch, 0, 10000, NULL));
    tw_free(&w);
    PASS();
}

/* The gateway's spare at the relay is lost on the way without a word (a
 * NAT forgets it): the gateway replaces it after 4 refresh periods, so a
 * client that can only come through the relay gets in (it never did). */
TEST roles_gateway_replaces_a_spare_lost_silently(void)
{
    tw_world w;
    uint32_t peer, ch;
    int i, dropped = 0;
    tw_init(&w, 0, TR_FAR);
    tw_partition_direct(&w, 1);
    tw_run(&w, TW_SEC);
    for (i = 0; i < TW_LINKS; i++)
        if (w.links[i].used && w.links[i].side[0] == TW_GATEWAY &&
            w.links[i].side[1] == TW_RELAY) {
            tw_drop_link(&w, i);
            dropped++;
        }
    ASSERT_EQ(1, dropped);
    tw_run(&w, w.now + 35 * TW_SEC);   /* the relay let it go at 30 s */
    ASSERT_EQ(0u, w.spliced);
    tw_run(&w, w.now + 10 * TW_SEC);   /* the gateway at 40 s */
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT_EQ(1u, w.spliced);
    ASSERT(tr_echo(&w, peer, ch, 0, 3000, NULL));
    tw_free(&w);
    PASS();
}

/* Every path down: attempts come in rounds (direct, relay), the gap
 * between rounds doubles from backoff_min up to backoff_max, each drawn
 * in [b/2, b]. */
TEST roles_backoff_is_bounded_and_grows(void)
{
    tw_world w;
    alkt_open_params p;
    uint32_t peer, ch;
    uint64_t last_round = 0, b = 100000000ull;
    unsigned rounds = 0, seen_refused = 0;
    int code;
    tw_init(&w, 0, TR_FAR);
    tw_partition_direct(&w, 1);
    tw_kill_relay(&w);
    tr_params(&p, 10, 1, 2, 3, 80);
    ASSERT_EQ(ALKT_ERR_NOT_CONNECTED, alkt_client_open(&w.node[TW_CLIENT], &p, 0, &peer, &ch, &code));
    while (w.now < 120 * TW_SEC && rounds < 14) {
        tw_step(&w);
        if (w.connects_refused >= seen_refused + 2) {   /* a round: both paths */
            seen_refused = w.connects_refused;
            if (rounds > 0) {
                uint64_t gap = w.now - last_round;
                ASSERTm("gap below half the backoff", gap >= b / 2);
                ASSERTm("gap above the backoff", gap <= b);
                if (b < 10000000000ull) b *= 2;
                if (b > 10000000000ull) b = 10000000000ull;
            }
            last_round = w.now;
            rounds++;
        }
        tw_advance(&w, 200 * TW_SEC);
    }
    ASSERT_EQ(14u, rounds);
    ASSERT_EQ(10000000000ull, b);   /* it reached the ceiling and stayed */
    /* every round is heard of (failures between two polls are told once,
     * with the latest code) */
    ASSERT(w.path_failures >= rounds && w.path_failures <= w.connects_refused);
    /* the paths heal: the next round gets in */
    tw_partition_direct(&w, 0);
    tw_run(&w, w.now + 11 * TW_SEC);
    ASSERT_EQ(1u, w.peer_up[TW_CLIENT]);
    tw_free(&w);
    PASS();
}

/* ---- the relay alone ---- */
typedef struct tr_relay {
    alkt_relay_server r;
    alkt_relay_config cfg;
    const char *tokens[2];
    alkt_relay_gateway gws[2];
    void *mem;
} tr_relay;

/* the offer keys of gw1 and gw2; and the freshness of the next offer */
static const unsigned char tr_offer_key[2][16] = {"gw1's offer key", "gw2's offer key"};
static uint64_t tr_fresh = 1000;

static void tr_relay_init(tr_relay *t)
{
    size_t need;
    memset(t, 0, sizeof *t);
    t->tokens[0] = "tok-one";
    t->tokens[1] = "tok-two";
    t->cfg.tokens = t->tokens;
    t->cfg.token_count = 2;
    t->cfg.max_conns = 4;
    t->cfg.buffer_size = 64;
    t->gws[0].id = "gw1";
    t->gws[1].id = "gw2";
    t->gws[0].key = tr_offer_key[0];
    t->gws[1].key = tr_offer_key[1];
    t->gws[0].key_len = t->gws[1].key_len = sizeof tr_offer_key[0];
    t->cfg.gateways = t->gws;
    t->cfg.gateway_count = 2;
    need = alkt_relay_mem_size(&t->cfg);
    t->mem = malloc(need);
    ALK_CHECK(t->mem && alkt_relay_init(&t->r, &t->cfg, t->mem, need, 0) == ALKT_OK,
              "relay init");
}

/* A request as the format says, written out here; an offer (kind 2) ends
 * with the next freshness and HMAC(key, "alkr2 offer" || what comes
 * before the MAC), key: the one of id (gw1 / gw2), or gw1's for another. */
static size_t tr_req(unsigned char *b, unsigned kind, const char *tok, const char *id)
{
    size_t tl = strlen(tok), il = strlen(id), n;
    memcpy(b, "ALKR", 4);
    b[4] = 2;
    b[5] = (unsigned char)kind;
    b[6] = (unsigned char)tl;
    memcpy(b + 7, tok, tl);
    b[7 + tl] = (unsigned char)il;
    memcpy(b + 8 + tl, id, il);
    n = 8 + tl + il;
    if (kind == 2) {
        alkt_hmac_sha256_ctx k;
        alkt__put64(b + n, ++tr_fresh);
        alkt_hmac_sha256_init(&k, tr_offer_key[strcmp(id, "gw2") == 0], 16);
        alkt_hmac_sha256_update(&k, "alkr2 offer", 11);
        alkt_hmac_sha256_update(&k, b, n + 8);
        alkt_hmac_sha256_final(&k, b + n + 8);
        n += 8 + 32;
    }
    return n;
}

static int tr_last_status;   /* the last status tr_status read (0: none) */

/* The status byte the relay sends on conn, or -1 when none is due. */
static int tr_status(tr_relay *t, uint32_t conn)
{
    const void *d;
    size_t n = alkt_relay_transmit_peek(&t->r, conn, &d);
    int st;
    tr_last_status = 0;
    if (n == 0) return -1;
    st = *(const unsigned char *)d;
    ALK_CHECK(alkt_relay_transmit_done(&t->r, conn, 1) == ALKT_OK, "status done");
    tr_last_status = st;
    return st;
}

static int tr_closes(tr_relay *t, uint32_t conn)
{
    alkt_role_event ev;
    while (alkt_relay_poll_event(&t->r, &ev))
        if (ev.type == ALKT_REV_CLOSE && ev.conn == conn)
            return ev.code == tr_last_status;   /* the CLOSE tells the status */
    return 0;
}

TEST relay_refuses_bad_requests_with_a_status(void)
{
    tr_relay t;
    unsigned char b[256];
    uint32_t c;
    size_t n;
    tr_relay_init(&t);
    /* not a relay request at all: refused at the fourth byte */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    ASSERT_EQ((ptrdiff_t)9, alkt_relay_handle_input(&t.r, c, "GET / HTT", 9, 0));
    ASSERT_EQ(1, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    /* an unknown token (a prefix of a good one too) */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 1, "tok-on", "gw1");
    ASSERT_EQ((ptrdiff_t)n, alkt_relay_handle_input(&t.r, c, b, n, 0));
    ASSERT_EQ(2, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    /* a bad kind, a bad id */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 3, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, c, b, n, 0);
    ASSERT_EQ(1, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 1, "tok-one", "gw/1");
    alkt_relay_handle_input(&t.r, c, b, n, 0);
    ASSERT_EQ(1, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    /* lengths: a token of 0 bytes is refused at its length byte, an id of
     * 65 at its length byte, before any byte of it arrives */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    ASSERT_EQ((ptrdiff_t)7, alkt_relay_handle_input(&t.r, c, "ALKR\2\1\0", 7, 0));
    ASSERT_EQ(1, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 1, "tok-one", "gw1");
    b[7 + 7] = 65;
    ASSERT_EQ((ptrdiff_t)(8 + 7), alkt_relay_handle_input(&t.r, c, b, 8 + 7, 0));
    ASSERT_EQ(1, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    b[7 + 7] = 64;   /* 64 is fine: the request goes on */
    ASSERT_EQ((ptrdiff_t)(8 + 7), alkt_relay_handle_input(&t.r, c, b, 8 + 7, 0));
    ASSERT_EQ(-1, tr_status(&t, c));
    alkt_relay_handle_closed(&t.r, c, 0);
    /* the version before (1): refused at its byte */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 1, "tok-one", "gw1");
    b[4] = 1;
    alkt_relay_handle_input(&t.r, c, b, 5, 0);
    ASSERT_EQ(1, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    /* silence: the request timeout closes without a status */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    ASSERT_EQ(5000000000ull, alkt_relay_poll_timeout(&t.r));
    alkt_relay_handle_timeout(&t.r, 5000000000ull);
    ASSERT_EQ(-1, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    free(t.mem);
    PASS();
}

TEST relay_joins_by_token_and_id_and_expires_offers(void)
{
    tr_relay t;
    unsigned char b[256];
    uint32_t g, g2, cl, cl2, spare;
    size_t n;
    alkt_relay_stats st;
    tr_relay_init(&t);
    /* an offer for gw1 under tok-two; a client for gw1 under tok-one does
     * not meet it, and gives up after wait_ns */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g));
    {   /* not joined: no room to read into, and no pointer either */
        void *room = &t;
        ASSERT_EQ((size_t)0, alkt_relay_read_buffer(&t.r, g, &room));
        ASSERT_EQ(NULL, room);
    }
    n = tr_req(b, 2, "tok-two", "gw1");
    alkt_relay_handle_input(&t.r, g, b, n, 0);
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &cl));
    n = tr_req(b, 1, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, cl, b, n, 2000000000ull);   /* at 2 s */
    ASSERT_EQ(-1, tr_status(&t, cl));
    alkt_relay_stats_get(&t.r, &st);
    ASSERT_EQ(1u, st.offers);
    ASSERT_EQ(1u, st.waiting);
    /* waiting is timed from the request, not from the accept */
    alkt_relay_handle_timeout(&t.r, 6999999999ull);
    ASSERT_EQ(-1, tr_status(&t, cl));
    alkt_relay_handle_timeout(&t.r, 7000000000ull);
    ASSERT_EQ(3, tr_status(&t, cl));
    ASSERT(tr_closes(&t, cl));
    /* refreshes keep the offer past its lifetime; silence ends it */
    ASSERT_EQ((ptrdiff_t)1, alkt_relay_handle_input(&t.r, g, "R", 1, 20000000000ull));
    alkt_relay_handle_timeout(&t.r, 40000000000ull);
    ASSERT_EQ(-1, tr_status(&t, g));
    alkt_relay_handle_timeout(&t.r, 50000000000ull);
    ASSERT_EQ(4, tr_status(&t, g));
    ASSERT(tr_closes(&t, g));
    /* a matching pair joins; bytes cross, the offer's late refreshes and
     * its 'S' are not passed on */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g2));
    n = tr_req(b, 2, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, g2, b, n, 50000000000ull);
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &spare));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &cl2));
    n = tr_req(b, 1, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, cl2, b, n, 50000000000ull);
    ASSERT_EQ(0, tr_status(&t, cl2));
    ASSERT_EQ(0, tr_status(&t, g2));
    ASSERT_EQ((ptrdiff_t)4, alkt_relay_handle_input(&t.r, g2, "RRSx", 4, 50000000000ull));
    ASSERT_EQ((ptrdiff_t)5, alkt_relay_handle_input(&t.r, cl2, "hello", 5, 50000000000ull));
    {
        const void *d;
        ASSERT_EQ((size_t)1, alkt_relay_transmit_peek(&t.r, cl2, &d));
        ASSERT_EQ('x', *(const char *)d);
        ASSERT_EQ(ALKT_OK, alkt_relay_transmit_done(&t.r, cl2, 1));
        ASSERT_EQ((size_t)5, alkt_relay_transmit_peek(&t.r, g2, &d));
        ASSERT_EQ(0, memcmp(d, "hello", 5));
        ASSERT_EQ(ALKT_OK, alkt_relay_transmit_done(&t.r, g2, 5));
    }
    /* backpressure: 64 bytes of room toward the gateway, no more */
    memset(b, 'z', sizeof b);
    ASSERT_EQ((ptrdiff_t)64, alkt_relay_handle_input(&t.r, cl2, b, 200, 50000000000ull));
    ASSERT_EQ((ptrdiff_t)0, alkt_relay_handle_input(&t.r, cl2, b, 200, 50000000000ull));
    /* the client goes: what it sent still reaches the gateway, then the
     * gateway's connection is closed too */
    alkt_relay_handle_closed(&t.r, cl2, 52000000000ull);
    ASSERT_EQ(0, tr_closes(&t, g2));
    /* it may take until request_timeout after the close (52 s + 5 s) */
    alkt_relay_handle_timeout(&t.r, 56000000000ull);
    {
        const void *d;
        ASSERT_EQ((size_t)64, alkt_relay_transmit_peek(&t.r, g2, &d));
        ASSERT_EQ(ALKT_OK, alkt_relay_transmit_done(&t.r, g2, 64));
    }
    ASSERT(tr_closes(&t, g2));
    /* a full relay refuses */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g));
    ASSERT_EQ(ALKT_ERR_CHANNELS_FULL, alkt_relay_accept(&t.r, 0, &g));
    /* stale handles are refused */
    ASSERT_EQ(ALKT_ERR_ARG, (int)alkt_relay_handle_input(&t.r, cl2, "a", 1, 0));
    free(t.mem);
    PASS();
}


/* Only a gateway offers: an offer request carries a MAC under the key the
 * relay holds for that gateway id (clients do not hold it) and a freshness
 * above the last offer taken from that gateway. A forged one, one from a
 * gateway the relay does not know and a replayed one get status 5; a
 * gateway's live offers are bounded (a new one ends its stalest); a client
 * joins the offer refreshed last. */
TEST relay_offers_are_proven_fresh_and_bounded(void)
{
    tr_relay t;
    unsigned char b[256], rec[256];
    uint32_t c, g[3], cl;
    size_t n, rn;
    alkt_relay_stats st;
    int k;
    tr_relay_init(&t);
    free(t.mem);
    t.cfg.max_conns = 8;
    t.cfg.offers_per_gateway = 2;
    t.mem = malloc(alkt_relay_mem_size(&t.cfg));
    ASSERT(t.mem);
    ASSERT_EQ(ALKT_OK, alkt_relay_init(&t.r, &t.cfg, t.mem, alkt_relay_mem_size(&t.cfg), 0));
    /* a forged MAC; a gateway the relay does not know (MACed under gw1's
     * key: a token holder who guessed nothing better) */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 2, "tok-one", "gw1");
    b[n - 1] ^= 1;
    alkt_relay_handle_input(&t.r, c, b, n, 0);
    ASSERT_EQ(5, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 2, "tok-one", "gw9");
    alkt_relay_handle_input(&t.r, c, b, n, 0);
    ASSERT_EQ(5, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    /* a proven offer, recorded; the same bytes again, and an older one */
    rn = tr_req(rec, 2, "tok-one", "gw1");
    n = tr_req(b, 2, "tok-one", "gw1");   /* fresher, not sent yet */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g[0]));
    alkt_relay_handle_input(&t.r, g[0], b, n, 0);
    ASSERT_EQ(-1, tr_status(&t, g[0]));   /* waiting: an offer */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    alkt_relay_handle_input(&t.r, c, b, n, 0);   /* replayed */
    ASSERT_EQ(5, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    alkt_relay_handle_input(&t.r, c, rec, rn, 0);   /* older than the last */
    ASSERT_EQ(5, tr_status(&t, c));
    ASSERT(tr_closes(&t, c));
    alkt_relay_stats_get(&t.r, &st);
    ASSERT_EQ(1u, st.offers);
    /* two more offers of gw1: the bound is 2, so the stalest (the first)
     * ends with status 4 */
    for (k = 1; k < 3; k++) {
        ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g[k]));
        n = tr_req(b, 2, "tok-one", "gw1");
        alkt_relay_handle_input(&t.r, g[k], b, n, k == 1 ? 1000000000ull : 2000000000ull);
    }
    ASSERT_EQ(4, tr_status(&t, g[0]));
    ASSERT(tr_closes(&t, g[0]));
    alkt_relay_stats_get(&t.r, &st);
    ASSERT_EQ(2u, st.offers);
    /* the older of the two refreshed last: a client joins it */
    ASSERT_EQ((ptrdiff_t)1, alkt_relay_handle_input(&t.r, g[1], "R", 1, 3000000000ull));
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &cl));
    n = tr_req(b, 1, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, cl, b, n, 3000000000ull);
    ASSERT_EQ(0, tr_status(&t, cl));
    ASSERT_EQ(0, tr_status(&t, g[1]));
    ASSERT_EQ(-1, tr_status(&t, g[2]));
    /* a client request never becomes an offer, whatever its id: another
     * client for gw1 now waits (g[2] is there for it) and joins g[2] */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &c));
    n = tr_req(b, 1, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, c, b, n, 3000000000ull);
    ASSERT_EQ(0, tr_status(&t, c));
    ASSERT_EQ(0, tr_status(&t, g[2]));
    free(t.mem);
    PASS();
}

/* A slot a joined spare used keeps nothing for the next connection: a
 * client landing there is joined and its bytes cross (the spare's "drop
 * refreshes until 'S'" flag once stayed and cut it off at its first byte). */
TEST relay_slot_reuse_keeps_nothing(void)
{
    tr_relay t;
    unsigned char b[256];
    uint32_t g, cl, cl2, g2;
    size_t n;
    tr_relay_init(&t);
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &g));    /* slot 0: a spare */
    n = tr_req(b, 2, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, g, b, n, 0);
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 0, &cl));   /* slot 1: a client */
    n = tr_req(b, 1, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, cl, b, n, 0);
    ASSERT_EQ(0, tr_status(&t, cl));
    ASSERT_EQ(0, tr_status(&t, g));
    /* the pair ends before the spare's 'S' came */
    alkt_relay_handle_closed(&t.r, g, 0);
    alkt_relay_handle_closed(&t.r, cl, 0);
    alkt_relay_handle_timeout(&t.r, 6000000000ull);
    while (tr_closes(&t, 0)) {
    }
    /* now a client takes slot 0 and a spare slot 1 */
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 6000000000ull, &cl2));
    ASSERT_EQ(g & 0xffffu, cl2 & 0xffffu);
    n = tr_req(b, 1, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, cl2, b, n, 6000000000ull);
    ASSERT_EQ(ALKT_OK, alkt_relay_accept(&t.r, 6000000000ull, &g2));
    n = tr_req(b, 2, "tok-one", "gw1");
    alkt_relay_handle_input(&t.r, g2, b, n, 6000000000ull);
    ASSERT_EQ(0, tr_status(&t, cl2));
    ASSERT_EQ(0, tr_status(&t, g2));
    ASSERT_EQ((ptrdiff_t)5, alkt_relay_handle_input(&t.r, cl2, "hello", 5, 6000000000ull));
    ASSERT_EQ(0, tr_closes(&t, cl2));
    {
        const void *d;
        ASSERT_EQ((size_t)5, alkt_relay_transmit_peek(&t.r, g2, &d));
        ASSERT_EQ(0, memcmp(d, "hello", 5));
    }
    free(t.mem);
    PASS();
}

/* ssh -R: the client asks the gateway to listen; each connection there
 * comes back as a channel the client accepts; revoking the listen's
 * resource ends the listen and what came through it. */
TEST roles_forwarded_listen_opens_channels_back(void)
{
    tw_world w;
    alkt_open_params p;
    alkt_channel_info info;
    alkt_ip origin;
    uint32_t peer = 0, lch = 0, back = 0, rogue;
    alkt_session *gs, *cs;
    unsigned char b[64];
    size_t got = 0;
    int code, i, eof = 0;
    tw_init(&w, 0, TR_FAR);
    w.accept_listens = w.accept_incoming = 1;
    /* a resource for the listen: bind 0.0.0.0 (absent host), port 8080 */
    strcpy(w.res[1].id, "fwd");
    tw_ip4(&w.res[1].network, 0, 0, 0, 0);
    w.res[1].prefix_len = 32;
    w.res[1].port_range_count = 1;
    w.res[1].port_ranges[0].from = w.res[1].port_ranges[0].to = 8080;
    strcpy(w.res[1].gateway, "gw1");
    w.auth[1] = w.auth[0];
    strcpy(w.auth[1].resource, "fwd");
    w.ctl.resource_count = w.ctl.authorization_count = 2;
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_CLIENT], &w.ctl, 0));
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_GATEWAY], &w.ctl, 0));
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_FORWARDED;
    p.substrate = ALKT_SUBSTRATE_TCP;
    p.listen = 8081;   /* not covered */
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, alkt_client_open(&w.node[TW_CLIENT], &p, 0, &peer, &lch, &code));
    p.listen = 8080;
    ASSERT_EQ(ALKT_ERR_NOT_CONNECTED, alkt_client_open(&w.node[TW_CLIENT], &p, 0, &peer, &lch, &code));
    tw_run(&w, TW_SEC);
    ASSERT_EQ(ALKT_OK, alkt_client_open(&w.node[TW_CLIENT], &p, w.now, &peer, &lch, &code));
    tw_run(&w, w.now + TW_SEC);
    cs = alkt_node_session(&w.node[TW_CLIENT], peer);
    ASSERT_EQ(ALKT_OK, alkt_channel_info_get(cs, lch, &info));
    ASSERT_EQ(ALKT_CHANNEL_OPEN, info.state);
    ASSERT_EQ(8080, info.reply.port);          /* where the gateway listens */
    ASSERT_EQ(lch, w.listen_channel);
    /* a connection at the listener: a channel back, accepted by the client */
    tw_ip4(&origin, 203, 0, 113, 5);
    gs = alkt_node_session(&w.node[TW_GATEWAY], w.listen_peer);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, alkt_gateway_forward(&w.node[TW_GATEWAY], w.listen_peer, 999,
                                                        &origin, &back));
    ASSERT_EQ(ALKT_OK, alkt_gateway_forward(&w.node[TW_GATEWAY], w.listen_peer, lch, &origin, &back));
    tw_run(&w, w.now + TW_SEC);
    ASSERT(tw_target_find_on(&w, TW_CLIENT, peer, back) != NULL);
    ASSERT_EQ((ptrdiff_t)5, alkt_channel_send(gs, back, "hello", 5));
    for (i = 0; i < 50 && got < 5; i++) {
        ptrdiff_t n;
        tw_run(&w, w.now + TW_SEC / 10);
        n = alkt_channel_recv(gs, back, b + got, sizeof b - got, &eof);
        ASSERT(n >= 0);
        got += (size_t)n;
    }
    ASSERT_EQ((size_t)5, got);
    ASSERT_EQ(0, memcmp(b, "hello", 5));
    /* the gateway may open back only for a listen the client asked for */
    p.listen = 9999;
    p.host.kind = ALKT_HOST_IP;
    p.host.ip = origin;
    ASSERT_EQ(ALKT_OK, alkt_channel_open(gs, &p, &rogue));
    tw_run(&w, w.now + TW_SEC);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, alkt_channel_info_get(gs, rogue, &info));
    ASSERT_EQ(NULL, (void *)tw_target_find_on(&w, TW_CLIENT, peer, rogue));
    /* the listen's resource goes: listen and forwarded channel reset */
    tw_revoke(&w, "fwd", 0);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, alkt_gateway_forward(&w.node[TW_GATEWAY], w.listen_peer, lch,
                                                        &origin, &back));
    tw_run(&w, w.now + TW_SEC);
    ASSERT_EQ(2u, w.channel_events[TW_CLIENT][ALKT_EV_RESET]);
    ASSERT_EQ((int)ALKT_CODE_REVOKED, w.last_reset_code[TW_CLIENT]);
    tw_free(&w);
    PASS();
}

/* A client that crashes and starts again, over and over, opens a new
 * session each time: its old one, waiting without a connection, is over
 * (the owner started again - proven by its fresh HELLO), so each new
 * session closes the one before it and the client is never locked out. */
TEST roles_restarting_client_is_not_locked_out(void)
{
    static const unsigned char seeds[2][32] = {"another client seed, 32 bytes!",
                                               "and a third client seed, 32 b."};
    tw_world w;
    alkt_node_config cc;
    uint32_t peer, ch;
    int round;
    tw_init(&w, 0, TR_FAR);
    for (round = 0; round < 5; round++) {
        unsigned before = w.peer_up[TW_GATEWAY];
        ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
        ASSERT_EQ(before + 1, w.peer_up[TW_GATEWAY]);   /* a new session got in */
        ASSERT_EQ((unsigned)round, w.peer_down[TW_GATEWAY]);   /* the old one went */
        ASSERT(tr_echo(&w, peer, ch, 0, 1000, NULL));
        /* the crash: its connection is reset, its state is gone */
        tw_partition_direct(&w, 1);
        tw_partition_direct(&w, 0);
        tw_node_config(&cc, "laptop", seeds[round % 2]);
        ASSERT_EQ(ALKT_OK, alkt_client_init(&w.node[TW_CLIENT], &cc, w.mem[TW_CLIENT], alkt_node_mem_size(&cc),
                                            w.now));
        ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_CLIENT], &w.ctl, w.now));
        ASSERT_EQ(ALKT_OK, alkt_client_add_gateway(&w.node[TW_CLIENT], "gw1", &w.gw_ip[0], w.gw_port));
    }
    ASSERT_EQ(4u, w.peer_down[TW_GATEWAY]);
    tw_free(&w);
    PASS();
}

/* Other clients' sessions waiting for their resume keep their slots: a
 * new client finds the gateway full and is told so (ALKT_ERR_BUSY, MACed:
 * it proved its secret), nobody's session is taken, and once those
 * windows have passed the new client gets in. */
TEST roles_others_sessions_keep_their_slots(void)
{
    static const char *const ids[3] = {"c1", "c2", "c3"};
    static const unsigned char seed[32] = "a seed for clients one two thre";
    tw_world w;
    alkt_node_config cc;
    uint32_t peer, ch;
    size_t na;
    int k;
    tw_init(&w, 0, TR_FAR);
    na = w.ctl.authorization_count;
    for (k = 0; k < 3; k++) {
        w.auth[na + (size_t)k] = w.auth[0];
        strcpy(w.auth[na + (size_t)k].client, ids[k]);
    }
    w.ctl.authorization_count = na + 3;
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_GATEWAY], &w.ctl, w.now));
    for (k = 0; k < 3; k++) {
        unsigned up = w.peer_up[TW_GATEWAY];
        /* client k, one that vanishes without a word (partitioned, then its
         * node gone) after its session came up */
        tw_node_config(&cc, ids[k], seed);
        ASSERT_EQ(ALKT_OK, alkt_client_init(&w.node[TW_CLIENT], &cc, w.mem[TW_CLIENT],
                                            alkt_node_mem_size(&cc), w.now));
        ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_CLIENT], &w.ctl, w.now));
        ASSERT_EQ(ALKT_OK, alkt_client_add_gateway(&w.node[TW_CLIENT], "gw1", &w.gw_ip[0],
                                                   w.gw_port));
        w.path_failures = 0;
        if (k < 2) {
            ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
            ASSERT_EQ(up + 1, w.peer_up[TW_GATEWAY]);
            tw_partition_direct(&w, 1);
            tw_partition_direct(&w, 0);
        } else {
            /* max_peers is 2, both held by c1 and c2's sessions */
            (void)tr_open(&w, &peer, &ch);
            ASSERT_EQ(up, w.peer_up[TW_GATEWAY]);
            ASSERT(w.path_failures >= 1);
            ASSERT_EQ(ALKT_ERR_BUSY, w.last_path_code);
            ASSERT_EQ(0u, w.peer_down[TW_GATEWAY]);   /* nobody was evicted */
        }
    }
    /* their resume windows (600 s from when the gateway saw each
     * connection gone: its idle timeout, 60 s) end: their slots come free,
     * and c3, still trying, gets in */
    tw_run(&w, w.now + 700 * TW_SEC);
    ASSERT_EQ(2u, w.peer_down[TW_GATEWAY]);
    ASSERT_EQ(3u, w.peer_up[TW_GATEWAY]);
    tw_free(&w);
    PASS();
}

/* 1 when a 16-byte run of pat[0..n) is in mem[0..len). */
static int tr_holds(const void *mem, size_t len, const void *pat, size_t n)
{
    const unsigned char *m = (const unsigned char *)mem, *q = (const unsigned char *)pat;
    size_t i, j;
    for (j = 0; j + 16 <= n; j += 8)
        for (i = 0; i + 16 <= len; i++)
            if (memcmp(m + i, q + j, 16) == 0) return 1;
    return 0;
}

/* A stranger gets silence: a recorded HELLO replayed, its MAC changed,
 * its freshness raised (the MAC no longer fits), its name changed to one
 * the gateway does not know, bytes that are no HELLO - each connection is
 * closed with not one byte sent back, no session made or ended, no
 * freshness taken; the live session goes on. (Unknown names are checked
 * under a decoy key like known ones: the same work, the same answer.) */
TEST roles_gateway_is_silent_to_strangers(void)
{
    tw_world w;
    alkt_node *g;
    uint32_t peer, ch;
    unsigned char h[ALKT_FRAME_HEADER + ALKT__HELLO_MAX], fresh_before[64 * 64];
    size_t hl, i, fresh_len;
    unsigned up, down;
    int v;
    tw_init(&w, 0, TR_FAR);
    g = &w.node[TW_GATEWAY];
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT(tr_echo(&w, peer, ch, 0, 1000, NULL));
    ASSERT(w.n_recorded >= 1);
    hl = w.recorded_len[(w.n_recorded - 1) % TW_RECORDED];
    memcpy(h, w.recorded[(w.n_recorded - 1) % TW_RECORDED], hl);
    ASSERT_EQ('l', h[ALKT_FRAME_HEADER + ALKT__HELLO_FIXED]);   /* "laptop/..." */
    up = w.peer_up[TW_GATEWAY];
    down = w.peer_down[TW_GATEWAY];
    fresh_len = g->fresh_count * sizeof *g->fresh;
    ASSERT(fresh_len > 0 && fresh_len <= sizeof fresh_before);
    memcpy(fresh_before, g->fresh, fresh_len);
    for (v = 0; v < 5; v++) {
        unsigned char m[sizeof h];
        size_t ml = hl;
        tw_link *l;
        memcpy(m, h, hl);
        if (v == 1) m[hl - 1] ^= 1;                                         /* MAC */
        if (v == 2) m[ALKT_FRAME_HEADER + ALKT__HELLO_FRESH + 7] ^= 0x80;  /* fresher */
        if (v == 3) m[ALKT_FRAME_HEADER + ALKT__HELLO_FIXED] = 'q';        /* unknown name */
        if (v == 4)
            for (i = 0; i < ml; i++) m[i] = (unsigned char)(i * 37 + 11);
        l = tw_outsider_connect(&w, 0);
        ASSERT(l != NULL);
        tw_outsider_send(&w, l, m, ml);
        tw_run(&w, w.now + TW_SEC);
        ASSERT_EQm("the gateway answered a stranger", 0ull, (unsigned long long)l->out[1]);
        ASSERT_EQm("the gateway kept the stranger's connection", 0u, l->h[1]);
    }
    ASSERT_EQ(up, w.peer_up[TW_GATEWAY]);
    ASSERT_EQ(down, w.peer_down[TW_GATEWAY]);
    ASSERT_EQ(0, memcmp(fresh_before, g->fresh, fresh_len));
    ASSERT(tr_echo(&w, peer, ch, 1000, 1000, NULL));
    tw_free(&w);
    PASS();
}

/* A second party with the client's name and secret (a duplicate install,
 * misconfigured: plaintext) proves its HELLO, but its handshake fails: the
 * client's working session is not ended for it - a new session takes the
 * place of the client's old ones only once it is established. */
TEST roles_failed_new_session_ends_nothing(void)
{
    tw_world w;
    alkt_session dup;
    alkt_session_config dc;
    unsigned char *dm, nonce[32], hello[ALKT_FRAME_HEADER + ALKT__HELLO_MAX];
    char ident[ALKT_IDENTITY_MAX + 1];
    uint32_t peer, ch;
    size_t hl, il;
    tw_link *l;
    unsigned down;
    tw_init(&w, 0, TR_FAR);
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT(tr_echo(&w, peer, ch, 0, 1000, NULL));
    hl = w.recorded_len[(w.n_recorded - 1) % TW_RECORDED];
    memcpy(hello, w.recorded[(w.n_recorded - 1) % TW_RECORDED], hl);
    il = hello[ALKT_FRAME_HEADER + ALKT__HELLO_IDLEN];
    memcpy(ident, hello + ALKT_FRAME_HEADER + ALKT__HELLO_FIXED, il);
    /* the duplicate: same name and secret, plaintext, its clock ahead */
    memset(&dc, 0, sizeof dc);
    dc.secret = w.auth[0].secret;
    dc.secret_len = w.auth[0].secret_len;
    dc.identity = ident;
    dc.identity_len = il;
    dc.plaintext = 1;
    dc.epoch_ns = w.ncfg[TW_CLIENT].epoch_ns + 5 * TW_SEC;
    dm = (unsigned char *)malloc(alkt_session_mem_size(&dc));
    ASSERT(dm != NULL);
    ASSERT_EQ(ALKT_OK, alkt_session_init(&dup, &dc, dm, alkt_session_mem_size(&dc), w.now));
    memset(nonce, 0x77, sizeof nonce);
    ASSERT_EQ(ALKT_OK, alkt_session_connect(&dup, w.now, nonce));
    hl = alkt_session_poll_transmit(&dup, hello, sizeof hello);
    ASSERT(hl > ALKT_FRAME_HEADER + ALKT__HELLO_FIXED);
    down = w.peer_down[TW_GATEWAY];
    l = tw_outsider_connect(&w, 0);
    ASSERT(l != NULL);
    tw_outsider_send(&w, l, hello, hl);
    tw_run(&w, w.now + TW_SEC);
    ASSERT(l->out[1] > 0);   /* proven: the gateway answered (and gave up) */
    ASSERT_EQm("a failed handshake ended the client's session", down,
               w.peer_down[TW_GATEWAY]);
    ASSERT(tr_echo(&w, peer, ch, 1000, 1000, NULL));
    free(dm);
    tw_free(&w);
    PASS();
}

/* A gateway that starts again has forgotten the freshness it took: a
 * recorded HELLO is fresh to it once, and gets a handshake that cannot
 * finish. Such half sessions, their connections gone, give their slots to
 * any proven client's new session: two replays into a gateway of two
 * slots do not keep a third client out. */
TEST roles_replays_after_a_gateway_restart_keep_no_one_out(void)
{
    static const char *const ids[3] = {"c1", "c2", "c3"};
    static const unsigned char seed[32] = "a seed for clients one two thre";
    unsigned char rec[2][ALKT_FRAME_HEADER + ALKT__HELLO_MAX];
    size_t rl[2], na;
    tw_world w;
    alkt_node_config cc;
    uint32_t peer, ch;
    int k;
    tw_init(&w, 0, TR_FAR);
    na = w.ctl.authorization_count;
    for (k = 0; k < 3; k++) {
        w.auth[na + (size_t)k] = w.auth[0];
        strcpy(w.auth[na + (size_t)k].client, ids[k]);
    }
    w.ctl.authorization_count = na + 3;
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_GATEWAY], &w.ctl, w.now));
    for (k = 0; k < 3; k++) {
        tw_node_config(&cc, ids[k], seed);
        ASSERT_EQ(ALKT_OK, alkt_client_init(&w.node[TW_CLIENT], &cc, w.mem[TW_CLIENT],
                                            alkt_node_mem_size(&cc), w.now));
        ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_CLIENT], &w.ctl, w.now));
        ASSERT_EQ(ALKT_OK, alkt_client_add_gateway(&w.node[TW_CLIENT], "gw1", &w.gw_ip[0],
                                                   w.gw_port));
        if (k == 2) break;
        ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
        rl[k] = w.recorded_len[(w.n_recorded - 1) % TW_RECORDED];
        memcpy(rec[k], w.recorded[(w.n_recorded - 1) % TW_RECORDED], rl[k]);
        ASSERT_EQ(ALKT_FRAME_HELLO, rec[k][0]);
        ASSERT_EQ(0, rec[k][ALKT_FRAME_HEADER + 7] & 1);   /* a new session's */
        tw_partition_direct(&w, 1);
        tw_partition_direct(&w, 0);
    }
    /* the gateway starts again; the replays */
    tw_crash_node(&w, TW_GATEWAY);
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_GATEWAY], &w.ctl, w.now));
    for (k = 0; k < 2; k++) {
        tw_link *l = tw_outsider_connect(&w, 0);
        ASSERT(l != NULL);
        tw_outsider_send(&w, l, rec[k], rl[k]);
        tw_run(&w, w.now + TW_SEC / 10);
        ASSERT(l->out[1] > 0);   /* fresh to it: answered */
    }
    tw_run(&w, w.now + 20 * TW_SEC);   /* their handshakes time out */
    /* c3 gets in */
    {
        unsigned up = w.peer_up[TW_GATEWAY];
        w.path_failures = 0;
        ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
        ASSERT_EQ(up + 1, w.peer_up[TW_GATEWAY]);
        ASSERT(tr_echo(&w, peer, ch, 0, 500, NULL));
    }
    tw_free(&w);
    PASS();
}

/* Unproven connections hold no session and give way: strangers that
 * open connection after connection and send half a HELLO never fill the
 * gateway (each new one closes the oldest unproven one), a client still
 * gets in; from one address at most pending_per_source wait at a time.
 * Then alkt_node_wipe and alkt_relay_wipe leave no secret, offer key or
 * token in the node's or relay's memory. */
TEST roles_unproven_connections_make_room(void)
{
    static const unsigned char half[] = {ALKT_FRAME_HELLO, 0, 0, 200, 0, 0, 0, 0, 'A', 'L'};
    static const char req[] = "\x0brelay-token\x03gw1";   /* in an offer's request */
    tw_world w;
    alkt_node *g;
    alkt_role_event ev;
    alkt_ip a, b;
    uint32_t peer, ch, hs[6];
    unsigned closed;
    int k;
    tw_init(&w, 0, TR_FAR);
    g = &w.node[TW_GATEWAY];
    for (k = 0; k < 40; k++) {
        tw_link *l = tw_outsider_connect(&w, 0);
        ASSERTm("a stranger's connection was refused, not one of its own replaced", l != NULL);
        tw_outsider_send(&w, l, half, sizeof half);
        tw_run(&w, w.now + TW_SEC / 100);
    }
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT_EQ(1u, w.peer_up[TW_GATEWAY]);
    ASSERT(tr_echo(&w, peer, ch, 0, 1000, NULL));
    /* per source (a gateway with room): the fifth from a takes the place
     * of a's first; b's own is not touched */
    {
        alkt_node_config gc;
        alkt_gateway fg;
        void *m;
        tw_node_config(&gc, "gw9", w.seed[TW_GATEWAY]);
        gc.max_peers = 8;
        m = malloc(alkt_node_mem_size(&gc));
        ASSERT(m != NULL);
        ASSERT_EQ(ALKT_OK, alkt_gateway_init(&fg, &gc, m, alkt_node_mem_size(&gc), 0));
        tw_ip4(&a, 192, 0, 2, 1);
        tw_ip4(&b, 192, 0, 2, 2);
        ASSERT_EQ(ALKT_OK, alkt_node_accept_from(&fg, 1, &b, &hs[5]));
        for (k = 0; k < 5; k++) ASSERT_EQ(ALKT_OK, alkt_node_accept_from(&fg, 2 + (uint64_t)k, &a, &hs[k]));
        closed = 0;
        while (alkt_node_poll_event(&fg, &ev))
            if (ev.type == ALKT_REV_CLOSE) {
                closed++;
                ASSERT_EQ(hs[0], ev.conn);
                ASSERT_EQ(ALKT_ERR_BUSY, ev.code);
            }
        ASSERT_EQ(1u, closed);
        free(m);
    }
    /* the wipes */
    ASSERT(tr_holds(w.mem[TW_GATEWAY], w.mem_len[TW_GATEWAY], w.offer_key, sizeof w.offer_key));
    ASSERT(tr_holds(w.mem[TW_GATEWAY], w.mem_len[TW_GATEWAY], w.auth[0].secret,
                    w.auth[0].secret_len));
    ASSERT(tr_holds(w.rmem[0], w.rmem_len, req, 16));   /* the gateway's offer */
    alkt_node_wipe(g);
    alkt_relay_wipe(&w.relay[0]);
    ASSERT(!tr_holds(w.rmem[0], w.rmem_len, req, 16));
    ASSERT(!tr_holds(w.mem[TW_GATEWAY], w.mem_len[TW_GATEWAY], w.offer_key, sizeof w.offer_key));
    ASSERT(!tr_holds(w.mem[TW_GATEWAY], w.mem_len[TW_GATEWAY], w.auth[0].secret,
                     w.auth[0].secret_len));
    ASSERT(!tr_holds(g, sizeof *g, w.auth[0].secret, w.auth[0].secret_len));
    w.node_used[TW_GATEWAY] = 0;
    tw_free(&w);
    PASS();
}

/* What can go wrong on the way, and what the app is told. */
TEST roles_failures_are_refused_and_reported(void)
{
    static unsigned char mem[2 * (100 + 2)];
    tw_world w;
    alkt_open_params p;
    alkt_dgram_pump d;
    uint32_t peer, ch;
    int code, k;
    tw_init(&w, 0, TR_FAR);
    /* a gateway the client has no address for */
    strcpy(w.res[1].id, "far");
    tw_ip4(&w.res[1].network, 10, 9, 0, 0);
    w.res[1].prefix_len = 16;
    strcpy(w.res[1].gateway, "gw9");
    w.auth[1] = w.auth[0];
    strcpy(w.auth[1].resource, "far");
    /* a relay known by name only: never tried */
    w.relays[1] = w.relays[0];
    strcpy(w.relays[1].id, "r2");
    w.relays[1].address.kind = ALKT_HOST_NAME;
    strcpy(w.relays[1].address.name, "relay.example");
    w.ctl.resource_count = w.ctl.authorization_count = w.ctl.relay_count = 2;
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_CLIENT], &w.ctl, 0));
    tr_params(&p, 10, 9, 1, 1, 80);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, alkt_client_open(&w.node[TW_CLIENT], &p, 0, &peer, &ch, &code));
    ASSERT_EQ((int)ALKT_CODE_NO_PATH, code);
    /* the client's secret differs from the gateway's: every handshake
     * fails; each attempt is reported with the code */
    w.auth[0].secret[0] ^= 1;
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_CLIENT], &w.ctl, 0));
    tr_params(&p, 10, 1, 2, 3, 80);
    ASSERT_EQ(ALKT_ERR_NOT_CONNECTED, alkt_client_open(&w.node[TW_CLIENT], &p, 0, &peer, &ch, &code));
    tw_run(&w, 3 * TW_SEC);
    ASSERT_EQ(0u, w.peer_up[TW_CLIENT]);
    ASSERT(w.path_failures >= 2);
    /* the gateway said nothing to our HELLO: that much the client can tell */
    ASSERT(w.path_unanswered >= 1);
    /* a new address for the gateway is taken at the next attempt; with the
     * right secret the session comes up (a fresh one: nothing to resume) */
    ASSERT_EQ(ALKT_OK, alkt_client_add_gateway(&w.node[TW_CLIENT], "gw1", &w.gw_ip[0], w.gw_port));
    w.auth[0].secret[0] ^= 1;
    ASSERT_EQ(ALKT_OK, alkt_node_control(&w.node[TW_CLIENT], &w.ctl, w.now));
    tw_run(&w, w.now + 12 * TW_SEC);
    ASSERT_EQ(1u, w.peer_up[TW_CLIENT]);
    /* a target that refuses, a listen that fails: refusals with codes */
    w.refuse_targets = 1;
    ASSERT_EQ(ALKT_OK, alkt_client_open(&w.node[TW_CLIENT], &p, w.now, &peer, &ch, &code));
    tw_run(&w, w.now + TW_SEC);
    ASSERT_EQ(1u, w.channel_events[TW_CLIENT][ALKT_EV_OPEN_FAILED]);
    ASSERT_EQ((int)ALKT_CODE_TARGET_REFUSED, w.last_code[TW_CLIENT]);
    w.refuse_targets = 0;
    /* a datagram pump whose endpoint fails resets the channel */
    ASSERT_EQ(ALKT_OK, alkt_client_open(&w.node[TW_CLIENT], &p, w.now, &peer, &ch, &code));
    tw_run(&w, w.now + TW_SEC);
    ASSERT_EQ(ALKT_OK, alkt_dgram_pump_init(&d, alkt_node_session(&w.node[TW_CLIENT], peer), ch, mem,
                                            sizeof mem, 100));
    ASSERT_EQ(ALKT_OK, alkt_dgram_pump_send(&d, "x", 1));
    ASSERT_EQ(ALKT_OK, alkt_dgram_pump_endpoint_failed(&d, 9));
    ASSERT_EQ((unsigned)ALKT_PUMP_ABORT, alkt_dgram_pump_poll(&d));
    ASSERT_EQ(ALKT_OK, alkt_dgram_pump_endpoint_failed(&d, 9));   /* once is enough */
    ASSERT_EQ(ALKT_ERR_RESET, alkt_dgram_pump_send(&d, "x", 1));
    for (k = 0; k < 10; k++) tw_step(&w);
    ASSERT_EQ(1u, w.channel_events[TW_GATEWAY][ALKT_EV_RESET]);
    ASSERT_EQ(9, w.last_reset_code[TW_GATEWAY]);
    tw_free(&w);
    PASS();
}

/* The gateway's offers back off while a relay is down, and start from the
 * bottom again once one got through and was kept a refresh period: a
 * relay that comes back and dies again is retried within backoff_min, not
 * after the old long wait. */
TEST roles_offer_backoff_resets_when_the_relay_is_back(void)
{
    tw_world w;
    unsigned before;
    tw_init(&w, 0, TR_FAR);
    tw_run(&w, TW_SEC);                 /* an offer is at the relay */
    tw_kill_relay(&w);
    tw_run(&w, w.now + 20 * TW_SEC);    /* many failed offers: long backoff */
    ASSERT(w.connects_refused >= 6);
    w.relay_down[0] = 0;                   /* back */
    tw_run(&w, w.now + 22 * TW_SEC);       /* in, and refreshed once */
    {
        alkt_relay_stats st;
        alkt_relay_stats_get(&w.relay[0], &st);
        ASSERT_EQ(1u, st.offers);       /* the offer got in again */
    }
    before = w.connects_refused;
    tw_kill_relay(&w);
    tw_run(&w, w.now + 350000000ull);   /* 0.35 s: retries at 0.1 and 0.3 s */
    ASSERT_EQ(before + 2, w.connects_refused);
    tw_free(&w);
    PASS();
}

/* A relay that refuses the gateway's offers (it holds another key for
 * that gateway: status 5) is offered to ever more slowly - a connect that
 * works is no success when the offer is turned down at once: about 8 tries
 * in 20 s (0.1 s doubling to 10 s), not one every backoff_min. */
TEST roles_refused_offers_back_off(void)
{
    static const unsigned char other[32] = "not the key the gateway offers.";
    tw_world w;
    alkt_relay_stats st;
    tw_init(&w, 0, TR_FAR);
    w.rgw[0].key = other;
    tw_run(&w, 20 * TW_SEC);
    alkt_relay_stats_get(&w.relay[0], &st);
    ASSERT_EQ(0u, st.offers);
    ASSERT(st.refused >= 5);
    ASSERTm("refused offers are retried without backoff", st.refused <= 10);
    tw_free(&w);
    PASS();
}

/* Every call refuses what it cannot use, and changes nothing. */
TEST roles_refuse_bad_arguments(void)
{
    static const unsigned char seed[32] = "0123456789abcdef0123456789abcde";
    static unsigned char mem[1 << 16];
    alkt_node_config c;
    alkt_relay_config rc;
    alkt_relay_server r;
    alkt_node n;
    alkt_role_event ev;
    alkt_ip ip;
    alkt_control ctl;
    const char *bad_tokens[1] = {"has space"};
    const char *good_tokens[1] = {"ok"};
    const void *d;
    uint32_t h, peer, ch;
    tw_world w;
    tw_node_config(&c, "laptop", seed);
    c.id = "bad/id";
    ASSERT_EQ((size_t)0, alkt_node_mem_size(&c));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_client_init(&n, &c, mem, sizeof mem, 0));
    c.id = "laptop";
    c.seed_len = 31;
    ASSERT_EQ((size_t)0, alkt_node_mem_size(&c));
    c.seed_len = 32;
    c.session.max_frame = 100;   /* the session template is checked too */
    ASSERT_EQ((size_t)0, alkt_node_mem_size(&c));
    c.session.max_frame = 1024;
    c.backoff_min_ns = 2;
    c.backoff_max_ns = 1;
    ASSERT_EQ((size_t)0, alkt_node_mem_size(&c));
    c.backoff_min_ns = c.backoff_max_ns = 0;
    {   /* every limit: taken at its edge, refused one past it */
        int past;
        for (past = 0; past < 2; past++) {
            uint32_t one = (uint32_t)past;
            alkt_node_config e;
#define TN_LIMIT(field, edge)                                                 \
    do {                                                                      \
        e = c;                                                                \
        e.field = (edge) + one;                                               \
        ASSERTm(#field, (alkt_node_mem_size(&e) > 0) == !past);               \
    } while (0)
            TN_LIMIT(max_peers, 1024u);
            TN_LIMIT(max_resources, 65535u);
            TN_LIMIT(max_authorizations, 65535u);
            TN_LIMIT(max_relays, 64u);
            TN_LIMIT(offers_per_relay, 16u);
#undef TN_LIMIT
        }
    }
    ASSERT_EQ(ALKT_ERR_NOMEM, alkt_client_init(&n, &c, mem, 16, 0));
    ASSERT_EQ(ALKT_ERR_NOMEM, alkt_client_init(&n, &c, mem, alkt_node_mem_size(&c) - 1, 0));
    memset(&rc, 0, sizeof rc);
    ASSERT_EQ((size_t)0, alkt_relay_mem_size(&rc));
    rc.tokens = bad_tokens;
    rc.token_count = 1;
    ASSERT_EQ((size_t)0, alkt_relay_mem_size(&rc));
    rc.tokens = good_tokens;
    ASSERT_EQ(ALKT_ERR_NOMEM, alkt_relay_init(&r, &rc, mem, 64, 0));
    /* stale and foreign handles; calls that are not this role's */
    tw_init(&w, 0, TR_FAR);
    ASSERT_EQ(ALKT_ERR_ARG, (int)alkt_node_handle_input(&w.node[TW_CLIENT], 0x10001u, "x", 1, 0));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_node_handle_connected(&w.node[TW_CLIENT], 0x10001u, 0));
    ASSERT_EQ((size_t)0, alkt_node_transmit_peek(&w.node[TW_CLIENT], 0x10001u, &d));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_node_transmit_done(&w.node[TW_CLIENT], 0x10001u, 0));
    alkt_node_handle_closed(&w.node[TW_CLIENT], 0x10001u, 0);   /* nothing happens */
    ASSERT_EQ(ALKT_ERR_STATE, alkt_node_accept(&w.node[TW_CLIENT], 0, &h));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_client_add_gateway(&w.node[TW_GATEWAY], "gw1", &w.gw_ip[0], 443));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_client_add_gateway(&w.node[TW_CLIENT], "gw 1", &w.gw_ip[0], 443));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_client_add_gateway(&w.node[TW_CLIENT], "gw1", &w.gw_ip[0], 0));
    memset(&ip, 0, sizeof ip);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_client_add_gateway(&w.node[TW_CLIENT], "gw1", &ip, 443));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_gateway_target_result(&w.node[TW_GATEWAY], 1, 1, 1, 0));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_gateway_listen_result(&w.node[TW_GATEWAY], 1, 1, NULL, 1));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_client_answer(&w.node[TW_CLIENT], 1, 1, 1, 0));
    ASSERT_EQ(NULL, (void *)alkt_node_session(&w.node[TW_CLIENT], 0));
    ASSERT_EQ(NULL, (void *)alkt_node_session(&w.node[TW_CLIENT], 99));
    /* a control message over the capacity changes nothing */
    memset(&ctl, 0, sizeof ctl);
    ctl.has_resources = 1;
    ctl.resources = w.res;
    ctl.resource_count = 33;
    ASSERT_EQ(ALKT_ERR_TOO_MANY, alkt_node_control(&w.node[TW_GATEWAY], &ctl, 0));
    ctl.resource_count = 1;
    ctl.resources = NULL;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_node_control(&w.node[TW_GATEWAY], &ctl, 0));
    ASSERT(tr_open(&w, &peer, &ch) == ALKT_OK);   /* the old view stands */
    ASSERT_EQ(0, alkt_node_poll_event(NULL, &ev));
    ASSERT_EQ(UINT64_MAX, alkt_node_poll_timeout(NULL));
    tw_free(&w);
    PASS();
}

/* ---- datagram pumps (through the echo target: framed bytes come back) */
TEST dgram_pump_carries_empty_and_full_datagrams_in_order(void)
{
    static unsigned char mem[2 * (300 + 2)];
    tw_world w;
    alkt_dgram_pump d;
    uint32_t peer, ch;
    size_t sizes[] = {0, 1, 0, 300, 2, 0, 299, 17}, next = 0, got = 0, i;
    int rounds;
    tw_init(&w, 0, TR_FAR);
    ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
    ASSERT_EQ(ALKT_OK, alkt_dgram_pump_init(&d, alkt_node_session(&w.node[TW_CLIENT], peer), ch,
                                            mem, sizeof mem, 300));
    ASSERT_EQ(ALKT_ERR_TOO_LARGE, alkt_dgram_pump_send(&d, mem, 301));
    for (rounds = 0; rounds < 2000 && got < 8; rounds++) {
        unsigned bits = alkt_dgram_pump_poll(&d);
        unsigned char b[300];
        ASSERT_FALSE(bits & (ALKT_PUMP_ABORT | ALKT_PUMP_DONE));
        if ((bits & ALKT_PUMP_READ) && next < 8) {
            for (i = 0; i < sizes[next]; i++) b[i] = (unsigned char)(next * 31 + i);
            ASSERT_EQ(ALKT_OK, alkt_dgram_pump_send(&d, b, sizes[next]));
            next++;
            /* one at a time: the next waits until this one is in */
            if (!(alkt_dgram_pump_poll(&d) & ALKT_PUMP_READ))
                ASSERT_EQ(ALKT_ERR_WOULD_BLOCK, alkt_dgram_pump_send(&d, b, 1));
        }
        if (bits & ALKT_PUMP_WRITE) {
            const void *p;
            ptrdiff_t n = alkt_dgram_pump_recv(&d, &p);
            ASSERT_EQ((ptrdiff_t)sizes[got], n);   /* empty ones too, as datagrams */
            for (i = 0; i < (size_t)n; i++)
                ASSERT_EQ((unsigned char)(got * 31 + i), ((const unsigned char *)p)[i]);
            ASSERT_EQ(ALKT_OK, alkt_dgram_pump_delivered(&d));
            got++;
        }
        tw_step(&w);
    }
    ASSERT_EQ((size_t)8, got);
    {
        const void *none;
        ASSERT_EQ(ALKT_ERR_WOULD_BLOCK, (int)alkt_dgram_pump_recv(&d, &none));
    }
    /* our EOF after the last one; the echo's EOF ends the other way: DONE */
    ASSERT_FALSE(alkt_dgram_pump_poll(&d) & ALKT_PUMP_SHUT_WRITE);   /* the peer goes on */
    ASSERT_EQ(ALKT_OK, alkt_dgram_pump_endpoint_eof(&d));
    ASSERT_EQ(ALKT_ERR_STATE, alkt_dgram_pump_send(&d, mem, 1));
    for (rounds = 0; rounds < 200 && alkt_dgram_pump_poll(&d) != ALKT_PUMP_DONE; rounds++)
        tw_step(&w);
    ASSERT_EQ((unsigned)ALKT_PUMP_DONE, alkt_dgram_pump_poll(&d));
    ASSERT_EQ((uint64_t)8, d.to_channel);
    ASSERT_EQ((uint64_t)8, d.to_endpoint);
    tw_free(&w);
    PASS();
}

/* A frame that declares more than the limit, or that the EOF cuts, is
 * never handed out: the channel is reset. */
TEST dgram_pump_refuses_oversize_and_cut_frames(void)
{
    static unsigned char mem[2 * (100 + 2)];
    int cut;
    for (cut = 0; cut < 2; cut++) {
        tw_world w;
        alkt_dgram_pump d;
        uint32_t peer, ch;
        alkt_session *s;
        unsigned char hdr[3] = {0, 101, 'x'};   /* 101 > 100 */
        const void *p;
        int rounds;
        tw_init(&w, 0, TR_FAR);
        ASSERT_EQ(ALKT_OK, tr_open(&w, &peer, &ch));
        s = alkt_node_session(&w.node[TW_CLIENT], peer);
        ASSERT_EQ(ALKT_OK, alkt_dgram_pump_init(&d, s, ch, mem, sizeof mem, 100));
        if (cut) {
            hdr[1] = 5;   /* 5 declared, 1 sent, then the EOF */
            ASSERT_EQ((ptrdiff_t)3, alkt_channel_send(s, ch, hdr, 3));
            ASSERT_EQ(ALKT_OK, alkt_channel_shutdown_write(s, ch));
        } else {
            ASSERT_EQ((ptrdiff_t)3, alkt_channel_send(s, ch, hdr, 3));
        }
        for (rounds = 0; rounds < 200 && !(alkt_dgram_pump_poll(&d) & ALKT_PUMP_ABORT); rounds++) {
            ASSERT_EQ(ALKT_ERR_WOULD_BLOCK, (int)alkt_dgram_pump_recv(&d, &p));
            tw_step(&w);
        }
        ASSERT_EQ((unsigned)ALKT_PUMP_ABORT, alkt_dgram_pump_poll(&d));
        ASSERT_EQ((int)ALKT_CODE_BAD_DATAGRAM, d.code);
        ASSERT_EQ((uint64_t)0, d.to_endpoint);
        tw_free(&w);
    }
    PASS();
}

SUITE(alkt_roles_suite)
{
    RUN_TEST(roles_direct_echo_and_half_close);
    RUN_TEST(roles_authorization_decides_every_open);
    RUN_TEST(roles_gateway_refuses_what_the_client_should_not_open);
    RUN_TEST(roles_revocation_resets_live_channels_at_once);
    RUN_TEST(roles_expiry_resets_live_channels);
    RUN_TEST(roles_relay_death_resumes_on_the_direct_path);
    RUN_TEST(roles_direct_failure_falls_back_to_the_relay);
    RUN_TEST(roles_backoff_is_bounded_and_grows);
    RUN_TEST(roles_forwarded_listen_opens_channels_back);
    RUN_TEST(roles_refuse_bad_arguments);
    RUN_TEST(roles_offer_backoff_resets_when_the_relay_is_back);
    RUN_TEST(roles_refused_offers_back_off);
    RUN_TEST(roles_failures_are_refused_and_reported);
    RUN_TEST(roles_restarting_client_is_not_locked_out);
    RUN_TEST(roles_others_sessions_keep_their_slots);
    RUN_TEST(roles_gateway_is_silent_to_strangers);
    RUN_TEST(roles_unproven_connections_make_room);
    RUN_TEST(roles_failed_new_session_ends_nothing);
    RUN_TEST(roles_replays_after_a_gateway_restart_keep_no_one_out);
    RUN_TEST(relay_refuses_bad_requests_with_a_status);
    RUN_TEST(relay_joins_by_token_and_id_and_expires_offers);
    RUN_TEST(relay_slot_reuse_keeps_nothing);
    RUN_TEST(relay_offers_are_proven_fresh_and_bounded);
    RUN_TEST(roles_gateway_replaces_a_spare_lost_silently);
    RUN_TEST(dgram_pump_carries_empty_and_full_datagrams_in_order);
    RUN_TEST(dgram_pump_refuses_oversize_and_cut_frames);
}

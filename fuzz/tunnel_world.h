/* tunnel_world.h - an in-process world for alktunnel.h's roles: one client,
 * one gateway and one relay (alkt_node, alkt_node, alkt_relay_server)
 * joined by model TCP connections, with echo targets behind the gateway.
 * Deterministic and single-threaded: the unit tests and the `roles` fuzz
 * target drive the same world and check the same properties.
 *
 * Connections: a CONNECT from the client (to the gateway's address or the
 * relay's) or from the gateway (to the relay) makes a link whose far end is
 * accepted by the gateway (alkt_node_accept) or the relay
 * (alkt_relay_accept), unless that path is down (the relay killed, the
 * direct path partitioned): then the connect fails (handle_closed). Bytes
 * cross a link in segments of at most tw.segment bytes through bounded
 * pipes; a side's CLOSE delivers what it sent, then the other side sees
 * the end (handle_closed). Killing the relay or partitioning the direct
 * path resets its links at once (what was in flight is lost).
 *
 * Targets: the gateway's TARGET_CONNECT is answered by an echo endpoint
 * behind an alkt_pump (or refused when tw.refuse_targets is set); the echo
 * returns every byte and, after the client's EOF, its own EOF. */
#ifndef TUNNEL_WORLD_H
#define TUNNEL_WORLD_H

#include "alk_check.h"
#include <string.h>

#define TW_LINKS 24
#define TW_PIPE 8192u
#define TW_TARGETS 16
#define TW_SEC 1000000000ull
enum { TW_CLIENT = 0, TW_GATEWAY = 1, TW_RELAY = 2 };

typedef struct tw_pipe {
    unsigned char buf[TW_PIPE];
    size_t head, len;
} tw_pipe;

typedef struct tw_link {
    int used;
    int side[2];           /* TW_CLIENT / TW_GATEWAY / TW_RELAY */
    uint32_t h[2];         /* each side's handle (0: that side is gone) */
    int closed[2];         /* side k closed: its pipe drains, then the end */
    tw_pipe pipe[2];       /* pipe[k]: what side k sent */
} tw_link;

typedef struct tw_target {
    int used, side;            /* behind the gateway, or the client (-R) */
    uint32_t peer, channel;
    alkt_pump p;
    unsigned char buf[2048];
    unsigned char echo[4096];  /* bytes written to the endpoint, to echo */
    size_t echo_len;
    int eof_seen, shut, done, aborted;
} tw_target;

typedef struct tw_world {
    alkt_client client;
    alkt_gateway gateway;
    alkt_relay_server relay;
    void *cmem, *gmem, *rmem;
    size_t rmem_len;
    alkt_relay_config rcfg;
    const char *tokens[1];
    uint64_t now;
    size_t segment;          /* bytes per crossing, >= 1 */
    int relay_down, direct_down, refuse_targets;
    int accept_listens;        /* gateway: LISTEN answered "listening" */
    int accept_incoming;       /* client: INCOMING gets an echo behind it */
    uint32_t listen_peer, listen_channel;   /* the last listen granted */
    tw_link links[TW_LINKS];
    tw_target targets[TW_TARGETS];
    alkt_ip gw_ip, relay_ip;
    uint16_t gw_port, relay_port;
    /* what happened, for the checks */
    unsigned peer_up[2], peer_down[2], spliced, connects_refused, path_failures;
    unsigned channel_events[2][16];
    int last_code[2];          /* of the last RESET / OPEN_FAILED / DONE */
    int last_reset_code[2];    /* of the last RESET */
    uint32_t last_event_channel[2];
    alkt_control ctl;          /* the control plane's view, both nodes */
    alkt_resource res[4];
    alkt_authorization auth[4];
    alkt_relay relays[2];
    alkt_revocation revs[2];
    /* optional: every byte the echo targets take, in order */
    void (*tap)(void *ctx, const unsigned char *d, size_t n);
    void *tap_ctx;
} tw_world;

static ALK_UNUSED void tw_ip4(alkt_ip *ip, unsigned a, unsigned b, unsigned c, unsigned d)
{
    memset(ip, 0, sizeof *ip);
    ip->family = 4;
    ip->bytes[0] = (unsigned char)a;
    ip->bytes[1] = (unsigned char)b;
    ip->bytes[2] = (unsigned char)c;
    ip->bytes[3] = (unsigned char)d;
}

/* The standard view: resource "web" = 10.1.0.0/16, tcp ports 80 and
 * 8000..8100, on gateway "gw1"; client "laptop" authorized until
 * `expires` (Unix seconds); one relay with token "relay-token". */
static ALK_UNUSED void tw_default_control(tw_world *w, uint64_t expires)
{
    alkt_resource *r = &w->res[0];
    alkt_authorization *a = &w->auth[0];
    size_t i;
    memset(&w->ctl, 0, sizeof w->ctl);
    memset(w->res, 0, sizeof w->res);
    memset(w->auth, 0, sizeof w->auth);
    memset(w->relays, 0, sizeof w->relays);
    strcpy(r->id, "web");
    tw_ip4(&r->network, 10, 1, 0, 0);
    r->prefix_len = 16;
    r->port_range_count = 2;
    r->port_ranges[0].from = r->port_ranges[0].to = 80;
    r->port_ranges[1].from = 8000;
    r->port_ranges[1].to = 8100;
    r->protocols = ALKT_PROTO_TCP;
    strcpy(r->gateway, "gw1");
    strcpy(a->client, "laptop");
    strcpy(a->resource, "web");
    a->secret_len = 32;
    for (i = 0; i < 32; i++) a->secret[i] = (unsigned char)(0xA0 + i);
    a->expires = expires;
    strcpy(w->relays[0].id, "r1");
    w->relays[0].address.kind = ALKT_HOST_IP;
    w->relays[0].address.ip = w->relay_ip;
    w->relays[0].port = w->relay_port;
    strcpy(w->relays[0].token, "relay-token");
    w->ctl.has_resources = w->ctl.has_authorizations = w->ctl.has_relays = 1;
    w->ctl.resources = w->res;
    w->ctl.resource_count = 1;
    w->ctl.authorizations = w->auth;
    w->ctl.authorization_count = 1;
    w->ctl.relays = w->relays;
    w->ctl.relay_count = 1;
}

static ALK_UNUSED void tw_node_config(alkt_node_config *c, const char *id,
                                      const unsigned char *seed)
{
    memset(c, 0, sizeof *c);
    c->id = id;
    c->seed = seed;
    c->seed_len = 32;
    c->epoch_ns = 1700000000ull * TW_SEC;   /* Unix time at now == 0 */
    c->max_peers = 2;
    c->max_relays = 2;
    c->offers_per_relay = 1;
    c->session.max_channels = 8;
    c->session.channel_window = 4096;
    c->session.max_frame = 1024;
    c->session.log_size = 16384;
    c->session.resume_window_ns = 600 * TW_SEC;   /* longer than a scenario */
}

static ALK_UNUSED void tw_relay_restart(tw_world *w)
{
    ALK_CHECK(alkt_relay_init(&w->relay, &w->rcfg, w->rmem, w->rmem_len, w->now) == ALKT_OK,
              "relay init");
}

/* relay_first: the client tries the relay before the direct path. */
static ALK_UNUSED void tw_init(tw_world *w, int relay_first, uint64_t expires)
{
    static const unsigned char cseed[32] = "client seed, 32 bytes of it....";
    static const unsigned char gseed[32] = "gateway seed, 32 bytes of it...";
    alkt_node_config cc, gc;
    size_t need;
    memset(w, 0, sizeof *w);
    w->segment = 1500;
    tw_ip4(&w->gw_ip, 192, 0, 2, 10);
    w->gw_port = 443;
    tw_ip4(&w->relay_ip, 198, 51, 100, 7);
    w->relay_port = 3478;
    tw_node_config(&cc, "laptop", cseed);
    cc.relay_first = relay_first;
    tw_node_config(&gc, "gw1", gseed);
    need = alkt_node_mem_size(&cc);
    ALK_CHECK(need > 0, "client config");
    w->cmem = malloc(need);
    ALK_CHECK(w->cmem && alkt_client_init(&w->client, &cc, w->cmem, need, 0) == ALKT_OK,
              "client init");
    need = alkt_node_mem_size(&gc);
    w->gmem = malloc(need);
    ALK_CHECK(w->gmem && alkt_gateway_init(&w->gateway, &gc, w->gmem, need, 0) == ALKT_OK,
              "gateway init");
    w->tokens[0] = "relay-token";
    w->rcfg.tokens = w->tokens;
    w->rcfg.token_count = 1;
    w->rcfg.max_conns = 8;
    w->rcfg.buffer_size = 4096;
    w->rmem_len = alkt_relay_mem_size(&w->rcfg);
    w->rmem = malloc(w->rmem_len);
    ALK_CHECK(w->rmem != NULL, "relay memory");
    tw_relay_restart(w);
    tw_default_control(w, expires);
    ALK_CHECK(alkt_node_control(&w->client, &w->ctl, 0) == ALKT_OK, "client control");
    ALK_CHECK(alkt_node_control(&w->gateway, &w->ctl, 0) == ALKT_OK, "gateway control");
    ALK_CHECK(alkt_client_add_gateway(&w->client, "gw1", &w->gw_ip, w->gw_port) == ALKT_OK,
              "add gateway");
}

static ALK_UNUSED void tw_free(tw_world *w)
{
    free(w->cmem);
    free(w->gmem);
    free(w->rmem);
}

static ALK_UNUSED alkt_node *tw_node(tw_world *w, int side)
{
    return side == TW_CLIENT ? &w->client : &w->gateway;
}

static ALK_UNUSED tw_link *tw_link_of(tw_world *w, int side, uint32_t h, int *k)
{
    int i, j;
    for (i = 0; i < TW_LINKS; i++)
        for (j = 0; j < 2; j++)
            if (w->links[i].used && w->links[i].side[j] == side && w->links[i].h[j] == h) {
                *k = j;
                return &w->links[i];
            }
    return NULL;
}

/* side's socket for h saw the end: tell the role. */
static ALK_UNUSED void tw_tell_closed(tw_world *w, int side, uint32_t h)
{
    if (side == TW_RELAY) alkt_relay_handle_closed(&w->relay, h, w->now);
    else alkt_node_handle_closed(tw_node(w, side), h, w->now);
}

static ALK_UNUSED void tw_connect(tw_world *w, int side, uint32_t h, const alkt_ip *ip,
                                  uint16_t port)
{
    int to_relay = memcmp(ip, &w->relay_ip, sizeof *ip) == 0 && port == w->relay_port;
    int to_gw = memcmp(ip, &w->gw_ip, sizeof *ip) == 0 && port == w->gw_port &&
                side == TW_CLIENT;
    uint32_t far = 0;
    int i, rc;
    tw_link *l = NULL;
    for (i = 0; i < TW_LINKS && !l; i++)
        if (!w->links[i].used) l = &w->links[i];
    if (to_relay && !w->relay_down) {
        rc = alkt_relay_accept(&w->relay, w->now, &far);
        if (rc != ALKT_OK) far = 0;
    } else if (to_gw && !w->direct_down) {
        rc = alkt_node_accept(&w->gateway, w->now, &far);
        if (rc != ALKT_OK) far = 0;
    }
    if (!far || !l) {
        if (far) tw_tell_closed(w, to_relay ? TW_RELAY : TW_GATEWAY, far);
        w->connects_refused++;
        alk_trace("connect side %d h %08x refused", side, (unsigned)h);
        alkt_node_handle_closed(tw_node(w, side), h, w->now);
        return;
    }
    memset(l, 0, sizeof *l);
    l->used = 1;
    l->side[0] = side;
    l->h[0] = h;
    l->side[1] = to_relay ? TW_RELAY : TW_GATEWAY;
    l->h[1] = far;
    alk_trace("connect side %d h %08x -> side %d h %08x", side, (unsigned)h,
              l->side[1], (unsigned)far);
    ALK_CHECK(alkt_node_handle_connected(tw_node(w, side), h, w->now) == ALKT_OK,
              "handle_connected");
}

/* Reset every link with a side of this kind (relay) or the direct links. */
static ALK_UNUSED void tw_reset_links(tw_world *w, int relay)
{
    int i, k;
    for (i = 0; i < TW_LINKS; i++) {
        tw_link *l = &w->links[i];
        int hit;
        if (!l->used) continue;
        hit = relay ? (l->side[1] == TW_RELAY) : (l->side[0] == TW_CLIENT && l->side[1] == TW_GATEWAY);
        if (!hit) continue;
        for (k = 0; k < 2; k++)
            if (l->h[k] && !(relay && l->side[k] == TW_RELAY)) tw_tell_closed(w, l->side[k], l->h[k]);
        l->used = 0;
    }
}

static ALK_UNUSED void tw_kill_relay(tw_world *w)
{
    alk_trace("relay killed");
    tw_reset_links(w, 1);
    w->relay_down = 1;
    tw_relay_restart(w);   /* a dead relay keeps nothing */
}

static ALK_UNUSED void tw_partition_direct(tw_world *w, int down)
{
    alk_trace("direct path %s", down ? "partitioned" : "healed");
    if (down) tw_reset_links(w, 0);
    w->direct_down = down;
}

/* The control plane revokes (client "laptop", resource) at the gateway
 * only; back = 1 gives the standard authorization back instead. */
static ALK_UNUSED void tw_revoke(tw_world *w, const char *resource, int back)
{
    alkt_control c;
    memset(&c, 0, sizeof c);
    if (back) {
        c.has_authorizations = 1;
        c.authorizations = w->auth;
        c.authorization_count = 1;
    } else {
        strcpy(w->revs[0].client, "laptop");
        strcpy(w->revs[0].resource, resource);
        c.has_revocations = 1;
        c.revocations = w->revs;
        c.revocation_count = 1;
    }
    ALK_CHECK(alkt_node_control(&w->gateway, &c, w->now) == ALKT_OK, "control");
}

/* ---- targets (echo behind a pump) ---- */
static ALK_UNUSED tw_target *tw_target_find_on(tw_world *w, int side, uint32_t peer,
                                                uint32_t channel)
{
    int i;
    for (i = 0; i < TW_TARGETS; i++)
        if (w->targets[i].used && w->targets[i].side == side && w->targets[i].peer == peer &&
            w->targets[i].channel == channel)
            return &w->targets[i];
    return NULL;
}

static ALK_UNUSED tw_target *tw_target_find(tw_world *w, uint32_t peer, uint32_t channel)
{
    return tw_target_find_on(w, TW_GATEWAY, peer, channel);
}

/* An echo endpoint behind (side, peer, channel) once the open is
 * accepted; NULL when all are used. */
static ALK_UNUSED tw_target *tw_target_new(tw_world *w, int side, uint32_t peer,
                                           uint32_t channel)
{
    int i;
    for (i = 0; i < TW_TARGETS; i++) {
        tw_target *t = &w->targets[i];
        if (t->used) continue;
        memset(t, 0, sizeof *t);
        t->used = 1;
        t->side = side;
        t->peer = peer;
        t->channel = channel;
        return t;
    }
    return NULL;
}

static ALK_UNUSED void tw_target_step(tw_world *w, tw_target *t)
{
    unsigned bits;
    int rounds;
    if (t->done || t->aborted) return;
    for (rounds = 0; rounds < 4; rounds++) {
        bits = alkt_pump_poll(&t->p);
        if (bits & ALKT_PUMP_ABORT) {
            t->aborted = 1;
            return;
        }
        if (bits & ALKT_PUMP_DONE) {
            t->done = 1;
            return;
        }
        if (bits & ALKT_PUMP_WRITE) {
            const void *d;
            size_t n = alkt_pump_write_peek(&t->p, &d);
            if (n > sizeof t->echo - t->echo_len) n = sizeof t->echo - t->echo_len;
            if (n) {
                if (w->tap) w->tap(w->tap_ctx, (const unsigned char *)d, n);
                memcpy(t->echo + t->echo_len, d, n);
                t->echo_len += n;
                ALK_CHECK(alkt_pump_endpoint_wrote(&t->p, n) == ALKT_OK, "target wrote");
            }
        }
        if (bits & ALKT_PUMP_SHUT_WRITE) {
            /* the client's EOF: echo what is left, then ours */
            t->eof_seen = 1;
            ALK_CHECK(alkt_pump_endpoint_shut(&t->p) == ALKT_OK, "target shut");
        }
        if ((bits & ALKT_PUMP_READ) && t->echo_len) {
            void *b;
            size_t room = alkt_pump_read_buffer(&t->p, &b);
            if (room > t->echo_len) room = t->echo_len;
            if (room) {
                memcpy(b, t->echo, room);
                memmove(t->echo, t->echo + room, t->echo_len - room);
                t->echo_len -= room;
                ALK_CHECK(alkt_pump_endpoint_read(&t->p, room) == ALKT_OK, "target read");
            }
        }
        if (t->eof_seen && t->echo_len == 0 && !t->shut) {
            t->shut = 1;
            ALK_CHECK(alkt_pump_endpoint_eof(&t->p) == ALKT_OK, "target eof");
        }
    }
}

/* ---- events ---- */
static ALK_UNUSED void tw_node_events(tw_world *w, int side)
{
    alkt_node *n = tw_node(w, side);
    alkt_role_event ev;
    int guard = 0;
    while (alkt_node_poll_event(n, &ev)) {
        ALK_CHECK(++guard < 10000, "side %d: endless events", side);
        switch (ev.type) {
        case ALKT_REV_CONNECT:
            tw_connect(w, side, ev.conn, &ev.ip, ev.port);
            break;
        case ALKT_REV_CLOSE: {
            int k;
            tw_link *l = tw_link_of(w, side, ev.conn, &k);
            alk_trace("side %d closes h %08x", side, (unsigned)ev.conn);
            if (l) {
                l->h[k] = 0;
                l->closed[k] = 1;
                l->pipe[1 - k].len = 0;   /* nothing more reaches it */
            }
            break;
        }
        case ALKT_REV_PEER_UP:
            w->peer_up[side]++;
            alk_trace("side %d peer %u up (%s)", side, ev.peer, ev.code ? "resumed" : "new");
            break;
        case ALKT_REV_PEER_DOWN:
            w->peer_down[side]++;
            w->last_code[side] = ev.code;
            alk_trace("side %d peer %u down %d", side, ev.peer, ev.code);
            break;
        case ALKT_REV_TARGET_CONNECT:
        case ALKT_REV_INCOMING: {
            int incoming = ev.type == ALKT_REV_INCOMING;
            int want = incoming ? w->accept_incoming : !w->refuse_targets;
            tw_target *t = want ? tw_target_new(w, side, ev.peer, ev.channel) : NULL;
            int ok = t != NULL;
            uint16_t code = ok ? 0 : (uint16_t)ALKT_CODE_TARGET_REFUSED;
            ALK_CHECK(!incoming || ev.params.kind == ALKT_OPEN_FORWARDED,
                      "incoming: not a forwarded open");
            {
                int rc = incoming ? alkt_client_answer(n, ev.peer, ev.channel, ok, code)
                                  : alkt_gateway_target_result(n, ev.peer, ev.channel, ok, code);
                /* (withdrawn by the opener: the endpoint goes) */
                ALK_CHECK(rc == ALKT_OK || rc == ALKT_ERR_RESET,
                          "answer to the open of %u on side %d: %s", ev.channel, side,
                          alkt_strerror(rc));
                if (rc == ALKT_ERR_RESET && t) {
                    t->used = 0;
                    t = NULL;
                }
            }
            if (t)
                ALK_CHECK(alkt_pump_init(&t->p, alkt_node_session(n, ev.peer), ev.channel,
                                         t->buf, sizeof t->buf) == ALKT_OK, "target pump");
            break;
        }
        case ALKT_REV_LISTEN:
            {
                alkt_listen_reply r;
                int rc;
                memset(&r, 0, sizeof r);
                tw_ip4(&r.address, 192, 0, 2, 10);
                r.port = ev.params.listen;
                rc = alkt_gateway_listen_result(n, ev.peer, ev.channel,
                                                w->accept_listens ? &r : NULL,
                                                ALKT_CODE_LISTEN_FAILED);
                ALK_CHECK(rc == ALKT_OK || rc == ALKT_ERR_RESET, "answer a listen: %s",
                          alkt_strerror(rc));
                if (w->accept_listens && rc == ALKT_OK) {
                    w->listen_peer = ev.peer;
                    w->listen_channel = ev.channel;
                }
            }
            break;
        case ALKT_REV_PATH_FAILED:
            /* a real path, a library code saying why */
            w->path_failures++;
            ALK_CHECK(side == TW_CLIENT && ev.peer == 1, "path failure on side %d", side);
            ALK_CHECK(ev.code < 0 && ev.code >= ALKT__RESULT_LOWEST, "path failure code %d",
                      ev.code);
            ALK_CHECK((memcmp(&ev.ip, &w->gw_ip, sizeof ev.ip) == 0 && ev.port == w->gw_port) ||
                          (memcmp(&ev.ip, &w->relay_ip, sizeof ev.ip) == 0 &&
                           ev.port == w->relay_port),
                      "path failure at an address no path has");
            alk_trace("path failed: port %u, %s", ev.port, alkt_strerror(ev.code));
            break;
        case ALKT_REV_CHANNEL:
            if ((unsigned)ev.channel_event < 16) w->channel_events[side][ev.channel_event]++;
            w->last_event_channel[side] = ev.channel;
            if (ev.channel_event == ALKT_EV_RESET || ev.channel_event == ALKT_EV_OPEN_FAILED ||
                ev.channel_event == ALKT_EV_CHANNEL_DONE)
                w->last_code[side] = ev.code;
            if (ev.channel_event == ALKT_EV_RESET) w->last_reset_code[side] = ev.code;
            if (ev.channel_event == ALKT_EV_CHANNEL_DONE) {
                tw_target *t = tw_target_find_on(w, side, ev.peer, ev.channel);
                if (t) t->used = 0;
            }
            break;
        default:
            ALK_CHECK(0, "side %d: unexpected event %d", side, (int)ev.type);
        }
    }
}

static ALK_UNUSED void tw_relay_events(tw_world *w)
{
    alkt_role_event ev;
    int guard = 0;
    while (alkt_relay_poll_event(&w->relay, &ev)) {
        int k;
        tw_link *l;
        ALK_CHECK(++guard < 10000, "relay: endless events");
        if (ev.type == ALKT_REV_SPLICED) {
            w->spliced++;
            continue;
        }
        ALK_CHECK(ev.type == ALKT_REV_CLOSE, "relay event %d", (int)ev.type);
        l = tw_link_of(w, TW_RELAY, ev.conn, &k);
        if (l) {
            l->h[k] = 0;
            l->closed[k] = 1;
            l->pipe[1 - k].len = 0;
        }
    }
}

/* One side of a link sends what it can into its pipe. */
static ALK_UNUSED void tw_send(tw_world *w, tw_link *l, int k)
{
    tw_pipe *p = &l->pipe[k];
    const void *d;
    size_t n, room, at;
    if (!l->h[k]) return;
    if (l->side[k] == TW_RELAY) n = alkt_relay_transmit_peek(&w->relay, l->h[k], &d);
    else n = alkt_node_transmit_peek(tw_node(w, l->side[k]), l->h[k], &d);
    room = TW_PIPE - p->len;
    if (n > room) n = room;
    if (n > w->segment) n = w->segment;
    if (n == 0) return;
    at = (p->head + p->len) % TW_PIPE;
    {
        size_t first = TW_PIPE - at < n ? TW_PIPE - at : n;
        memcpy(p->buf + at, d, first);
        memcpy(p->buf, (const unsigned char *)d + first, n - first);
    }
    if (!l->closed[1 - k]) p->len += n;   /* (into a closed socket: lost) */
    if (l->side[k] == TW_RELAY) ALK_CHECK(alkt_relay_transmit_done(&w->relay, l->h[k], n) == ALKT_OK, "relay tx done");
    else ALK_CHECK(alkt_node_transmit_done(tw_node(w, l->side[k]), l->h[k], n) == ALKT_OK, "node tx done");
}

/* The other side reads from pipe k. */
static ALK_UNUSED void tw_recv(tw_world *w, tw_link *l, int k)
{
    tw_pipe *p = &l->pipe[k];
    int r = 1 - k;
    while (p->len && l->h[r]) {
        size_t n = TW_PIPE - p->head < p->len ? TW_PIPE - p->head : p->len;
        ptrdiff_t took;
        if (n > w->segment) n = w->segment;
        if (l->side[r] == TW_RELAY)
            took = alkt_relay_handle_input(&w->relay, l->h[r], p->buf + p->head, n, w->now);
        else
            took = alkt_node_handle_input(tw_node(w, l->side[r]), l->h[r], p->buf + p->head, n,
                                          w->now);
        ALK_CHECK(took >= 0 && (size_t)took <= n, "input took %ld of %zu", (long)took, n);
        if (l->side[r] != TW_RELAY) ALK_CHECK((size_t)took == n, "a node takes everything");
        p->head = (p->head + (size_t)took) % TW_PIPE;
        p->len -= (size_t)took;
        if ((size_t)took < n) break;   /* backpressure */
    }
    /* the sender closed and everything arrived: the end */
    if (l->closed[k] && p->len == 0 && l->h[r]) {
        uint32_t h = l->h[r];
        l->h[r] = 0;
        tw_tell_closed(w, l->side[r], h);
    }
    if (!l->h[0] && !l->h[1]) l->used = 0;
}

/* Everything moves once: events, targets, bytes. */
static ALK_UNUSED void tw_step(tw_world *w)
{
    int i, k;
    tw_node_events(w, TW_CLIENT);
    tw_node_events(w, TW_GATEWAY);
    tw_relay_events(w);
    for (i = 0; i < TW_TARGETS; i++)
        if (w->targets[i].used) tw_target_step(w, &w->targets[i]);
    for (i = 0; i < TW_LINKS; i++) {
        tw_link *l = &w->links[i];
        if (!l->used) continue;
        for (k = 0; k < 2; k++) tw_send(w, l, k);
        for (k = 0; k < 2 && l->used; k++) tw_recv(w, l, k);
    }
    tw_node_events(w, TW_CLIENT);
    tw_node_events(w, TW_GATEWAY);
    tw_relay_events(w);
}

/* Time moves to the earliest deadline (at most to `limit`); every role's
 * deadline is checked to be in the future afterwards. */
static ALK_UNUSED void tw_advance(tw_world *w, uint64_t limit)
{
    uint64_t t = alkt_node_poll_timeout(&w->client), u;
    u = alkt_node_poll_timeout(&w->gateway);
    if (u < t) t = u;
    u = alkt_relay_poll_timeout(&w->relay);
    if (u < t) t = u;
    if (t > limit) t = limit;
    if (t > w->now) w->now = t;
    alkt_node_handle_timeout(&w->client, w->now);
    alkt_node_handle_timeout(&w->gateway, w->now);
    alkt_relay_handle_timeout(&w->relay, w->now);
}

/* Bytes in flight or waiting to be sent: the world is not quiet. */
static ALK_UNUSED int tw_busy(tw_world *w)
{
    int i, k;
    for (i = 0; i < TW_LINKS; i++) {
        tw_link *l = &w->links[i];
        if (!l->used) continue;
        for (k = 0; k < 2; k++) {
            const void *d;
            if (l->pipe[k].len && l->h[1 - k]) return 1;
            if (!l->h[k] || l->closed[1 - k]) continue;
            if (l->side[k] == TW_RELAY ? alkt_relay_transmit_peek(&w->relay, l->h[k], &d) > 0
                                       : alkt_node_transmit_peek(tw_node(w, l->side[k]), l->h[k],
                                                                 &d) > 0)
                return 1;
        }
    }
    return 0;
}

/* Run until quiet or `until`: steps, and time jumps when nothing moves. */
static ALK_UNUSED void tw_run(tw_world *w, uint64_t until)
{
    int guard = 0;
    while (w->now < until) {
        uint64_t t;
        ALK_CHECK(++guard < 200000, "the world does not settle by %llu",
                  (unsigned long long)until);
        tw_step(w);
        t = alkt_node_poll_timeout(&w->client);
        if (alkt_node_poll_timeout(&w->gateway) < t) t = alkt_node_poll_timeout(&w->gateway);
        if (alkt_relay_poll_timeout(&w->relay) < t) t = alkt_relay_poll_timeout(&w->relay);
        if (guard > 199990)
            alk_trace("busy: client %llu gateway %llu relay %llu now %llu",
                      (unsigned long long)alkt_node_poll_timeout(&w->client),
                      (unsigned long long)alkt_node_poll_timeout(&w->gateway),
                      (unsigned long long)alkt_relay_poll_timeout(&w->relay),
                      (unsigned long long)w->now);
        if (t <= w->now || tw_busy(w)) {
            /* something due now: run the timeouts, step again (bounded by
             * the guard: a deadline stuck at now is a busy loop) */
            alkt_node_handle_timeout(&w->client, w->now);
            alkt_node_handle_timeout(&w->gateway, w->now);
            alkt_relay_handle_timeout(&w->relay, w->now);
            continue;
        }
        tw_advance(w, until);
    }
    tw_step(w);
}

#endif

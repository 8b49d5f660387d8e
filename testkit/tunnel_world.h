/* tunnel_world.h - an in-process world for alktunnel.h's roles: clients,
 * gateways and relays (alkt_node, alkt_node, alkt_relay_server) joined by
 * model TCP connections, with targets behind the gateways. Deterministic
 * and single-threaded: the unit tests, the `roles` fuzz target and the
 * `tunnel_sim` fuzz target drive the same world.
 *
 * Hosts: up to TW_MAX_CLIENTS clients (node 0..), TW_MAX_GATEWAYS gateways
 * (node TW_GATEWAY + g) and TW_MAX_RELAYS relays. tw_init makes the small
 * world (one of each: client "laptop", gateway "gw1", relay "r1");
 * tw_init_shape any other. Gateway g listens at 192.0.2.(10+g):443, relay k
 * at 198.51.100.(7+k):3478. Resource "web" (10.1.0.0/16) is on gw1, "db"
 * (10.2.0.0/16) on gw2; every client is authorized to every resource.
 *
 * Connections: a CONNECT from a node makes a link whose far end is
 * accepted by the gateway (alkt_node_accept) or the relay
 * (alkt_relay_accept), unless that path is down - the relay killed, the
 * gateway's direct path partitioned, the gateway behind a NAT that takes
 * no inbound connection (tw_world.nat), the gateway crashed - then the
 * connect fails (handle_closed). Bytes cross a link in segments of at most
 * tw.segment bytes through bounded pipes; a side's CLOSE delivers what it
 * sent, then the other side sees the end (handle_closed). Killing a relay
 * or partitioning a direct path resets its links at once (what was in
 * flight is lost, both ends are told). A silent link (tw_drop_link) loses
 * every byte both ways and nobody is told; a crashed node's links go
 * silent for the far ends (tw_crash_node), the node starts again empty.
 *
 * Targets: the gateway's TARGET_CONNECT is answered by an echo endpoint
 * behind an alkt_pump (or refused when tw.refuse_targets is set). With
 * tw.behaviours set the target's kind comes from the last byte B of the
 * destination IP 10.x.y.B: B % 8 == 3 refuses, 4 is a slow reader (64
 * bytes a step), 5 ends early (echoes the first 16*y+1 bytes, then its
 * EOF, and discards the rest), 6 never answers, 7 fails (echoes until
 * the read that brings its byte 16*y+1, then the endpoint reports an
 * error: alkt_pump_endpoint_failed, ALKT_CODE_ENDPOINT_ERROR); the rest
 * echo. An echo returns every byte and, after the client's EOF, its own
 * EOF. Datagram (UDP) targets echo, or fail (kind 7) at their datagram
 * 1 + y % 4; they refuse and never answer as stream targets do.
 *
 * Steps: tw_step moves everything once (events, targets, bytes). Inside
 * tw_run a step asks only what something happened to: a role is polled
 * when it was called since its last poll (input, a timeout that was due,
 * transmit_done, an accept, a close, an answer, its targets' pumps), a
 * target whose last round moved nothing waits for its node to be called,
 * a link end whose last peek was empty is not peeked again until then,
 * and a role's poll_timeout is kept until then (tw_world.gen). That is
 * the API's own rule - poll after every input, timeout or command - and
 * the scenarios are the same as when everything was asked every step
 * (the tunnel_sim corpus and 1,200 fuzzed inputs replay to the same
 * fingerprint). tw_step and tw_run count every role as called on entry:
 * their caller may have called any. Built with TW_CHECK_QUIET (the replay
 * gate's build) each skipped question is asked anyway and must have the
 * answer it had: no event without a call, no output appearing in an empty
 * peek, the same poll_timeout, a target that moves nothing again. */
#ifndef TUNNEL_WORLD_H
#define TUNNEL_WORLD_H

#include "alk_check.h"
#include "alktunnel_internal.h"
#include <stddef.h>
#include <string.h>

#define TW_MAX_CLIENTS 3
#define TW_MAX_GATEWAYS 2
#define TW_MAX_RELAYS 2
#define TW_NODES (TW_MAX_CLIENTS + TW_MAX_GATEWAYS)
#define TW_LINKS 40
#define TW_PIPE 8192u
#define TW_TARGETS 48
#define TW_SEC 1000000000ull
#ifdef TW_CHECK_QUIET
#define TW__CHECK_QUIET 1
#else
#define TW__CHECK_QUIET 0
#endif
/* Link ends: nodes 0..TW_NODES-1 (clients, then gateways), relay k is
 * TW_RELAY + k. */
enum { TW_CLIENT = 0, TW_GATEWAY = TW_MAX_CLIENTS, TW_RELAY = TW_NODES };
/* An outsider: a party with no secret and no role of ours, whose bytes the
 * world writes straight into a link (tw_outsider_*); what is sent to it is
 * counted (tw_link.out) and dropped. */
#define TW_OUTSIDER (TW_RELAY + TW_MAX_RELAYS)
#define TW_RECORDED 4   /* client HELLOs an observer kept (tw_world.recorded) */
#define TW_BO_PEERS 4   /* peer slots the backoff model follows (max_peers is 2) */
/* How a gateway is reached: public or a NAT with a port forward take a
 * direct connection; a full-cone NAT (EIM/EIF in alksim's terms) has no
 * mapping for an inbound first packet, a symmetric one (EDM/APDF) neither. */
enum { TW_NAT_PUBLIC, TW_NAT_FORWARDED, TW_NAT_CONE, TW_NAT_SYMMETRIC, TW_NAT_KINDS };
/* Target kinds (tw.behaviours) */
enum { TW_T_ECHO, TW_T_REFUSE, TW_T_SLOW, TW_T_EARLY_EOF, TW_T_NEVER, TW_T_FAIL };

typedef struct tw_pipe {
    size_t head, len;
    unsigned char buf[TW_PIPE];
} tw_pipe;

typedef struct tw_link {
    int used;
    int side[2];           /* node index, or TW_RELAY + k */
    uint32_t h[2];         /* each side's handle (0: that side is gone) */
    int closed[2];         /* side k closed: its pipe drains, then the end */
    int silent;            /* bytes are lost both ways, no end is seen */
    uint64_t last_in[2];   /* when side k last took input (or connected) */
    uint64_t out[2];       /* bytes side k has sent */
    unsigned dry_gen[2];   /* side k's last peek was empty at its end's gen
                              dry_gen[k] (0: it was not) */
    tw_pipe pipe[2];       /* pipe[k]: what side k sent (last: a new link
                              clears what comes before and the pipes'
                              counters, not their bytes) */
} tw_link;

typedef struct tw_target {
    int used, side;            /* the node it is behind */
    uint32_t peer, channel;
    int kind;                  /* TW_T_* */
    uint32_t tag;              /* tw.grant_tag when it was made */
    size_t limit;              /* TW_T_EARLY_EOF: bytes echoed; TW_T_FAIL:
                                  the byte (datagram) it fails at */
    uint64_t received;         /* bytes the endpoint took */
    alkt_open_params params;
    alkt_pump p;
    int dgram;                 /* a UDP open: a datagram pump, and every
                                  datagram echoed as it came */
    alkt_dgram_pump dp;
    size_t echo_len;
    int eof_seen, shut, done, aborted;
    unsigned idle_gen;         /* its last step ended on a round that moved
                                  nothing, its node's gen then (0: it did not) */
    unsigned char buf[2048];   /* (the buffers last: not cleared) */
    unsigned char echo[4096];  /* bytes written to the endpoint, to echo */
} tw_target;

typedef struct tw_world tw_world;
struct tw_world {
    alkt_node node[TW_NODES];
    int node_used[TW_NODES];
    alkt_relay_server relay[TW_MAX_RELAYS];
    void *mem[TW_NODES], *rmem[TW_MAX_RELAYS];
    size_t mem_len[TW_NODES], rmem_len, rmem_cap[TW_MAX_RELAYS];
    alkt_node_config ncfg[TW_NODES];
    unsigned char seed[TW_NODES][32];
    char ids[TW_NODES][16];
    alkt_relay_config rcfg;
    const char *tokens[1];
    alkt_relay_gateway rgw[TW_MAX_GATEWAYS];   /* whose offers relays take */
    unsigned char recorded[TW_RECORDED][ALKT_FRAME_HEADER + ALKT__HELLO_MAX];
    size_t recorded_len[TW_RECORDED];          /* the last client HELLOs */
    unsigned n_recorded;                       /* sent on direct links */
    unsigned char offer_key[32];               /* (every gateway's, at every
                                                  relay) */
    int n_clients, n_gateways, n_relays;
    int plaintext;             /* sessions without encryption (speed) */
    uint64_t now;
    size_t segment;            /* bytes per crossing, >= 1 */
    int relay_down[TW_MAX_RELAYS];
    int direct_down[TW_MAX_GATEWAYS];   /* partitioned */
    int nat[TW_MAX_GATEWAYS];           /* TW_NAT_* */
    int refuse_targets, behaviours;
    int accept_listens;        /* gateway: LISTEN answered "listening" */
    int accept_incoming;       /* client: INCOMING gets an echo behind it */
    uint32_t listen_peer, listen_channel;   /* the last listen granted */
    alkt_ip gw_ip[TW_MAX_GATEWAYS], relay_ip[TW_MAX_RELAYS];
    uint16_t gw_port, relay_port;
    /* what happened, for the checks */
    unsigned peer_up[TW_NODES], peer_down[TW_NODES], spliced, connects_refused,
        path_failures;
    unsigned channel_events[TW_NODES][16];
    int last_code[TW_NODES];          /* of the last RESET / OPEN_FAILED / DONE */
    int last_path_code;               /* of the last PATH_FAILED */
    /* the backoff model, per client and peer slot: failed rounds since the
     * session was last up (or the client roamed, or started), counted by
     * the backoffs seen start (tw_check_backoff), and the last one seen */
    uint32_t bo_rounds[TW_NODES][TW_BO_PEERS];
    uint64_t bo_seen[TW_NODES][TW_BO_PEERS];
    unsigned path_unanswered;         /* PATH_FAILED with ALKT_ERR_UNANSWERED */
    unsigned opens_refused[TW_NODES]; /* gateway: OPEN_REFUSED events */
    int last_reset_code[TW_NODES];    /* of the last RESET */
    uint32_t last_event_channel[TW_NODES];
    alkt_control ctl;          /* the control plane's view, every node */
    alkt_resource res[4];
    alkt_authorization auth[TW_MAX_CLIENTS * TW_MAX_GATEWAYS + 2];
    alkt_relay relays[TW_MAX_RELAYS];
    alkt_revocation revs[2];
    /* optional: every byte a target takes, in order, and every datagram
     * (whole) a datagram target takes */
    void (*tap)(void *ctx, const tw_target *t, const unsigned char *d, size_t n);
    void (*dtap)(void *ctx, const tw_target *t, const unsigned char *d, size_t n);
    void *tap_ctx;
    /* optional: every node event, before the world handles it */
    void (*watch)(void *ctx, int node, const alkt_role_event *ev);
    void *watch_ctx;           /* (a watch calls no role: the world
                                  would not know to poll it) */
    uint32_t grant_tag;        /* the watch may name the next target */
    unsigned targets_exhausted;   /* opens refused for want of a target */
    int n_links, n_targets;    /* slots used so far (loops stop there) */
    unsigned node_starts;      /* tw_node_start calls (a node's state anew) */
    /* What moved since a role last had nothing to say: gen[e] counts the
     * calls into end e (a node, or relay TW_RELAY + k) that may give it
     * events - input, a timeout that was due, transmit_done, an accept,
     * a close, an answer, a target's pump moving. polled[e] is gen[e]
     * when e was last polled to its last event: until gen[e] moves, a
     * poll would find nothing (the API: poll after every input, timeout
     * or command), so tw_run's steps skip it. tw_step and tw_run count
     * every end as moved on entry: the caller may have called anything,
     * so a gen read is never 0 and a recorded gen of 0 means none. */
    unsigned gen[TW_OUTSIDER + 1], polled[TW_RELAY + TW_MAX_RELAYS];
    /* each end's poll_timeout at gen dl_gen[e]: the same until gen moves,
     * but for a node's clock (a deadline due stays due) */
    uint64_t dl[TW_RELAY + TW_MAX_RELAYS];
    unsigned dl_gen[TW_RELAY + TW_MAX_RELAYS];
    /* last, and cleared field by field (a world is made per fuzz input) */
    tw_link links[TW_LINKS];
    tw_target targets[TW_TARGETS];
};

static ALK_UNUSED void tw_ip4(alkt_ip *ip, unsigned a, unsigned b, unsigned c, unsigned d)
{
    memset(ip, 0, sizeof *ip);
    ip->family = 4;
    ip->bytes[0] = (unsigned char)a;
    ip->bytes[1] = (unsigned char)b;
    ip->bytes[2] = (unsigned char)c;
    ip->bytes[3] = (unsigned char)d;
}

static ALK_UNUSED int tw_is_client(int node) { return node >= 0 && node < TW_GATEWAY; }
static ALK_UNUSED int tw_is_gateway(int node) { return node >= TW_GATEWAY && node < TW_NODES; }
static ALK_UNUSED alkt_node *tw_node(tw_world *w, int side) { return &w->node[side]; }
/* end e (node, or TW_RELAY + k) was called: it may have events */
static ALK_UNUSED void tw_touch(tw_world *w, int e) { w->gen[e]++; }
static ALK_UNUSED void tw_touch_all(tw_world *w)
{
    int e;
    for (e = 0; e < TW_RELAY + TW_MAX_RELAYS; e++) w->gen[e]++;
}

/* The standard view: resource "web" = 10.1.0.0/16 (and "db" = 10.2.0.0/16
 * with a second gateway), tcp and udp ports 80 and 8000..8100; every client
 * authorized to every resource until `expires` (Unix seconds); every relay
 * with token "relay-token" and the gateways' offer key (the relays hold it
 * for every gateway). Authorization i*n_gateways+g is client i's to
 * gateway g's resource. */
static ALK_UNUSED void tw_default_control(tw_world *w, uint64_t expires)
{
    int g, i, k;
    size_t j, na = 0;
    memset(&w->ctl, 0, sizeof w->ctl);
    memset(w->res, 0, sizeof w->res);
    memset(w->auth, 0, sizeof w->auth);
    memset(w->relays, 0, sizeof w->relays);
    for (j = 0; j < sizeof w->offer_key; j++) w->offer_key[j] = (unsigned char)(0x5a ^ j);
    for (g = 0; g < w->n_gateways; g++) {
        alkt_resource *r = &w->res[g];
        strcpy(r->id, g == 0 ? "web" : "db");
        tw_ip4(&r->network, 10, (unsigned)g + 1, 0, 0);
        r->prefix_len = g ? 15 : 16;   /* db: 10.2.0.0/15, a prefix inside a byte */
        r->port_range_count = 2;
        r->port_ranges[0].from = r->port_ranges[0].to = 80;
        r->port_ranges[1].from = 8000;
        r->port_ranges[1].to = 8100;
        r->protocols = ALKT_PROTO_TCP | (g ? ALKT_PROTO_UDP : 0);
        strcpy(r->gateway, w->ids[TW_GATEWAY + g]);
    }
    for (i = 0; i < w->n_clients; i++)
        for (g = 0; g < w->n_gateways; g++) {
            alkt_authorization *a = &w->auth[na++];
            strcpy(a->client, w->ids[i]);
            strcpy(a->resource, w->res[g].id);
            a->secret_len = 32;
            for (j = 0; j < 32; j++) a->secret[j] = (unsigned char)(0xA0u + j + 16u * (unsigned)i + 5u * (unsigned)g);
            a->expires = expires;
        }
    for (k = 0; k < w->n_relays; k++) {
        w->relays[k].id[0] = 'r';
        w->relays[k].id[1] = (char)('1' + k);
        w->relays[k].address.kind = ALKT_HOST_IP;
        w->relays[k].address.ip = w->relay_ip[k];
        w->relays[k].port = w->relay_port;
        strcpy(w->relays[k].token, "relay-token");
        memcpy(w->relays[k].offer_key, w->offer_key, sizeof w->offer_key);
        w->relays[k].offer_key_len = sizeof w->offer_key;
    }
    w->ctl.has_resources = w->ctl.has_authorizations = w->ctl.has_relays = 1;
    w->ctl.resources = w->res;
    w->ctl.resource_count = (size_t)w->n_gateways;
    w->ctl.authorizations = w->auth;
    w->ctl.authorization_count = na;
    w->ctl.relays = w->relays;
    w->ctl.relay_count = (size_t)w->n_relays;
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
    /* a template filled for the wrong role, and a secret and identity
     * that are not the node's: the node sets those itself, per session */
    c->session.is_server = 1;
    c->session.secret = (const unsigned char *)"not the node's secret, 32 bytes.";
    c->session.secret_len = 32;
    c->session.identity = "nobody/nothing";
    c->session.identity_len = 14;
}

static ALK_UNUSED void tw_relay_restart(tw_world *w)
{
    int k;
    w->rmem_len = alkt_relay_mem_size(&w->rcfg);
    for (k = 0; k < w->n_relays; k++)
        if (!w->rmem[k] || w->rmem_cap[k] < w->rmem_len) {
            free(w->rmem[k]);
            w->rmem[k] = malloc(w->rmem_len);
            w->rmem_cap[k] = w->rmem_len;
            ALK_CHECK(w->rmem[k] != NULL, "relay memory");
        }
    for (k = 0; k < w->n_relays; k++)
        ALK_CHECK(alkt_relay_init(&w->relay[k], &w->rcfg, w->rmem[k], w->rmem_len, w->now) ==
                      ALKT_OK,
                  "relay init");
}

/* A zeroed world but for the pipes' and targets' bytes (nothing reads
 * them before writing); keep_mem: the roles' memory of the last world
 * stays allocated (a world made again per fuzz input). */
static ALK_UNUSED void tw_clear(tw_world *w, int keep_mem)
{
    void *mem[TW_NODES], *rmem[TW_MAX_RELAYS];
    size_t mem_len[TW_NODES], rmem_cap[TW_MAX_RELAYS];
    int i;
    if (keep_mem) {
        memcpy(mem, w->mem, sizeof mem);
        memcpy(rmem, w->rmem, sizeof rmem);
        memcpy(mem_len, w->mem_len, sizeof mem_len);
        memcpy(rmem_cap, w->rmem_cap, sizeof rmem_cap);
    }
    memset(w, 0, offsetof(tw_world, links));
    if (keep_mem) {
        memcpy(w->mem, mem, sizeof mem);
        memcpy(w->rmem, rmem, sizeof rmem);
        memcpy(w->mem_len, mem_len, sizeof mem_len);
        memcpy(w->rmem_cap, rmem_cap, sizeof rmem_cap);
    }
    for (i = 0; i < TW_LINKS; i++) memset(&w->links[i], 0, offsetof(tw_link, pipe[0].buf));
    for (i = 0; i < TW_TARGETS; i++) memset(&w->targets[i], 0, offsetof(tw_target, buf));
}

/* The node config's documented rules, each broken alone from a good
 * config: an id (1..ALKT_ID_MAX of [A-Za-z0-9._:-]) and a seed of at least
 * 32 bytes are required; the limits are bounded. Each broken config has
 * no memory size and no init; each limit at its bound still has both. */
static ALK_UNUSED void tw_check_config_rules(const alkt_node_config *good, void *mem,
                                             size_t mem_len)
{
    static const char long_id[] = "a123456789012345678901234567890123456789"
                                  "01234567890123456789012345"; /* 66 */
    alkt_node_config c;
    alkt_gateway g;
    int k;
    for (k = 0; k < 12; k++) {
        c = *good;
        switch (k) {
        case 0: c.id = NULL; break;
        case 1: c.seed = NULL; break;
        case 2: c.seed_len = 31; break;
        case 3: c.id = ""; break;
        case 4: c.id = "gw 1"; break;
        case 5: c.id = long_id + 1; break;             /* 65 bytes */
        case 6: c.max_peers = 1025; break;
        case 7: c.max_resources = 65536; break;
        case 8: c.max_authorizations = 65536; break;
        case 9: c.max_relays = 65; break;
        case 10: c.offers_per_relay = 17; break;
        default: c.backoff_min_ns = 2; c.backoff_max_ns = 1; break;
        }
        ALK_CHECK(alkt_node_mem_size(&c) == 0, "broken node config %d has a memory size", k);
        ALK_CHECK(alkt_gateway_init(&g, &c, mem, mem_len, 0) == ALKT_ERR_ARG,
                  "broken node config %d: init did not refuse it", k);
    }
    c = *good;
    c.id = long_id + 2; /* 64 bytes: the longest id */
    c.offers_per_relay = 16;
    c.max_relays = 64;
    c.backoff_min_ns = c.backoff_max_ns = 5;
    ALK_CHECK(alkt_node_mem_size(&c) > 0, "a node config at its bounds refused");
}

/* A control message to node `side`, which takes it. A new relay list
 * starts afresh: a gateway keeps no backoff from the old one (each of its
 * relays is offered at once). */
static ALK_UNUSED void tw_control(tw_world *w, int side, const alkt_control *c)
{
    alkt_node *n = tw_node(w, side);
    uint32_t k;
    ALK_CHECK(alkt_node_control(n, c, w->now) == ALKT_OK, "control to node %d", side);
    for (k = 0; c->has_relays && n->is_gateway && k < n->cfg.max_relays; k++)
        ALK_CHECK(n->relay_retry_at[k] == 0 && n->relay_failures[k] == 0,
                  "gateway %d: relay %u keeps its old backoff", side, k);
}

/* Node i (re)starts empty from its config, with the current view. */
static ALK_UNUSED void tw_node_start(tw_world *w, int i)
{
    int g;
    size_t need = alkt_node_mem_size(&w->ncfg[i]);
    ALK_CHECK(need > 0, "node %d config", i);
    if (!w->mem[i] || w->mem_len[i] < need) {
        free(w->mem[i]);
        w->mem[i] = malloc(need);
        w->mem_len[i] = need;
    }
    ALK_CHECK(w->mem[i] != NULL, "node memory");
    w->node_starts++;
    memset(w->bo_rounds[i], 0, sizeof w->bo_rounds[i]);
    memset(w->bo_seen[i], 0, sizeof w->bo_seen[i]);
    if (tw_is_client(i))
        ALK_CHECK(alkt_client_init(&w->node[i], &w->ncfg[i], w->mem[i], need, w->now) == ALKT_OK,
                  "client init");
    else
        ALK_CHECK(alkt_gateway_init(&w->node[i], &w->ncfg[i], w->mem[i], need, w->now) ==
                      ALKT_OK,
                  "gateway init");
    tw_control(w, i, &w->ctl);
    if (tw_is_client(i))
        for (g = 0; g < w->n_gateways; g++)
            ALK_CHECK(alkt_client_add_gateway(&w->node[i], w->ids[TW_GATEWAY + g], &w->gw_ip[g],
                                              w->gw_port) == ALKT_OK,
                      "add gateway");
}

/* tw_init_shape flags */
#define TW_KEEP_MEM 1u  /* w is a world made before: its memory is used
                           again (else w is uninitialized) */
#define TW_NO_START 2u  /* the caller edits w->ncfg, then starts the nodes
                           (tw_node_start) */

static void tw_null_args(tw_world *w);

/* Any world: clients, gateways, relays (1..TW_MAX_*); relay_first for
 * every client; plaintext sessions or encrypted ones. */
static ALK_UNUSED void tw_init_shape(tw_world *w, int clients, int gateways, int relays,
                                     int relay_first, int plaintext, uint64_t expires,
                                     unsigned flags)
{
    static const char *const cids[TW_MAX_CLIENTS] = {"laptop", "phone", "tower"};
    static const char *const gids[TW_MAX_GATEWAYS] = {"gw1", "gw2"};
    int i, k;
    tw_clear(w, (flags & TW_KEEP_MEM) != 0);
    w->n_clients = clients;
    w->n_gateways = gateways;
    w->n_relays = relays;
    w->plaintext = plaintext;
    w->segment = 1500;
    w->gw_port = 443;
    w->relay_port = 3478;
    for (i = 0; i < gateways; i++) tw_ip4(&w->gw_ip[i], 192, 0, 2, 10 + (unsigned)i);
    for (k = 0; k < relays; k++) tw_ip4(&w->relay_ip[k], 198, 51, 100, 7 + (unsigned)k);
    for (i = 0; i < TW_NODES; i++) {
        int client = tw_is_client(i);
        int idx = client ? i : i - TW_GATEWAY;
        if (client ? idx >= clients : idx >= gateways) continue;
        w->node_used[i] = 1;
        strcpy(w->ids[i], client ? cids[idx] : gids[idx]);
        memcpy(w->seed[i], client ? "client seed, 32 bytes of it...." :
                                    "gateway seed, 32 bytes of it...", 32);
        if (idx) w->seed[i][31] = (unsigned char)('0' + idx);
        tw_node_config(&w->ncfg[i], w->ids[i], w->seed[i]);
        w->ncfg[i].relay_first = client && relay_first;
        w->ncfg[i].session.plaintext = plaintext;
    }
    {
        /* a token past ALKT_TOKEN_MAX, unterminated, in a buffer of just
         * the bytes the rule looks at (one past the limit): invalid, and
         * read within those bytes (ASan sees the heap block's end) */
        static int checked;
        if (!checked) {
            char *t = (char *)malloc(ALKT_TOKEN_MAX + 2);
            alkt_relay_config rc;
            const char *toks[1];
            ALK_CHECK(t != NULL, "out of memory");
            memset(t, 'a', ALKT_TOKEN_MAX + 2);
            toks[0] = t;
            memset(&rc, 0, sizeof rc);
            rc.tokens = toks;
            rc.token_count = 1;
            ALK_CHECK(alkt_relay_mem_size(&rc) == 0, "an over-long token was taken");
            free(t);
            checked = 1;
        }
    }
    w->tokens[0] = "relay-token";
    w->rcfg.tokens = w->tokens;
    w->rcfg.token_count = 1;
    w->rcfg.max_conns = 8;
    w->rcfg.buffer_size = 4096;
    for (i = 0; i < w->n_gateways; i++) {
        w->rgw[i].id = w->ids[TW_GATEWAY + i];
        w->rgw[i].key = w->offer_key;
        w->rgw[i].key_len = sizeof w->offer_key;
    }
    w->rcfg.gateways = w->rgw;
    w->rcfg.gateway_count = (size_t)w->n_gateways;
    {
        /* the relay config's rules, each broken alone: no tokens, none
         * counted, more than 65535 connections, buffers past 1 GiB: no
         * memory size and no init; 65535 connections have both (once per
         * process) */
        static int checked;
        int r;
        for (r = 0; r < 5 && !checked; r++) {
            alkt_relay_config b = w->rcfg;
            alkt_relay_server zr;
            void *m;
            size_t need;
            if (r == 0) b.tokens = NULL;
            else if (r == 1) b.token_count = 0;
            else if (r == 2) b.max_conns = 65536;
            else if (r == 3) b.buffer_size = (1u << 30) + 1;
            else b.max_conns = 65535, b.buffer_size = 1;
            need = alkt_relay_mem_size(&b);
            if (r < 4) {
                ALK_CHECK(need == 0 && alkt_relay_init(&zr, &b, &zr, sizeof zr, 0) ==
                                           ALKT_ERR_ARG,
                          "a broken relay config (%d) taken", r);
                continue;
            }
            m = malloc(need ? need : 1);
            ALK_CHECK(need > 0 && m && alkt_relay_init(&zr, &b, m, need, 0) == ALKT_OK,
                      "65535 relay connections refused");
            free(m);
        }
        checked = 1;
    }
    tw_relay_restart(w);
    tw_default_control(w, expires);
    for (i = 0; i < TW_NODES && !(flags & TW_NO_START); i++)
        if (w->node_used[i]) tw_node_start(w, i);
    if (w->node_used[TW_CLIENT] && w->node_used[TW_GATEWAY]) tw_null_args(w);
}

/* Every node and relay call without its object, on one never set up (no
 * tables), or without its output refuses - ALKT_ERR_ARG, 0, UINT64_MAX or
 * nothing - and touches nothing. Once per process, with live nodes. */
static void tw_null_args(tw_world *w)
{
    static int done;
    alkt_node zn;
    alkt_relay_server zr;
    alkt_role_event ev;
    alkt_control ctl;
    alkt_open_params op;
    alkt_ip ip;
    const void *cd;
    void *vd;
    uint32_t h = 0;
    size_t res = 0;
    alkt_node *c = &w->node[TW_CLIENT], *g = &w->node[TW_GATEWAY];
    if (done) return;
    {
        /* a gateway with one far authorization and nothing else to do
         * wakes for its expiry, to the nanosecond, however far - and for
         * none past 2^64 ns */
        static const uint64_t far[2] = {18000000000ull, UINT64_MAX / 1000000000u + 1};
        alkt_gateway fg;
        alkt_control fc;
        alkt_authorization a = w->auth[0];
        alkt_node_config c0 = w->ncfg[TW_GATEWAY];
        const alkt_node_config *nc = &c0;
        size_t need = alkt_node_mem_size(nc);
        void *m = malloc(need ? need : 1);
        int k;
        for (k = 0; k < 2; k++) {
            uint64_t want;
            c0.epoch_ns = k ? 0 : w->ncfg[TW_GATEWAY].epoch_ns; /* (0: a wrap would show) */
            want = k ? UINT64_MAX : far[0] * 1000000000ull - nc->epoch_ns;
            memset(&fc, 0, sizeof fc);
            fc.has_resources = fc.has_authorizations = fc.has_relays = 1;
            fc.resources = w->res;
            fc.resource_count = 1;
            a.expires = far[k];
            fc.authorizations = &a;
            fc.authorization_count = 1;
            ALK_CHECK(m && alkt_gateway_init(&fg, nc, m, need, 0) == ALKT_OK &&
                          alkt_node_control(&fg, &fc, 0) == ALKT_OK &&
                          alkt_node_poll_timeout(&fg) == want,
                      "a gateway whose one authorization expires at %llu s wakes at "
                      "%llu, not %llu", (unsigned long long)far[k],
                      (unsigned long long)alkt_node_poll_timeout(&fg),
                      (unsigned long long)want);
        }
        free(m);
    }
    {
        /* a fresh gateway takes exactly the connections its table holds */
        alkt_gateway fg;
        const alkt_node_config *nc = &w->ncfg[TW_GATEWAY];
        size_t need = alkt_node_mem_size(nc);
        void *m = malloc(need ? need : 1);
        uint32_t hh = 0, k = 0;
        uint32_t holds = 2 * (nc->max_peers ? nc->max_peers : 8) +
                         (nc->max_relays ? nc->max_relays : 4) *
                             (nc->offers_per_relay ? nc->offers_per_relay : 2);
        int rc = ALKT_OK;
        ALK_CHECK(m && alkt_gateway_init(&fg, nc, m, need, 0) == ALKT_OK,
                  "a fresh gateway");
        /* a connection accepted at 7 s (the gateway's first news of that
         * time) has until 7 s + connect_timeout_ns for its handshake */
        ALK_CHECK(alkt_node_accept(&fg, 7 * TW_SEC, &hh) == ALKT_OK && hh &&
                      alkt_node_poll_timeout(&fg) ==
                          7 * TW_SEC + (nc->connect_timeout_ns ? nc->connect_timeout_ns
                                                               : 5 * TW_SEC),
                  "a connection accepted at 7 s is due at %llu",
                  (unsigned long long)alkt_node_poll_timeout(&fg));
        /* once full, each new one takes the place of the oldest unproven
         * one (its CLOSE owed), until as many CLOSEs wait as it holds: then
         * it refuses until the app polls its events */
        k = 1;
        while (k < 100000 && (rc = alkt_node_accept(&fg, 7 * TW_SEC, &hh)) == ALKT_OK) k++;
        ALK_CHECK(rc == ALKT_ERR_CHANNELS_FULL && hh == 0 && k == 2 * holds,
                  "a fresh gateway took %u connections (%s), its table holds %u", k,
                  alkt_strerror(rc), holds);
        {
            alkt_role_event fe;
            uint32_t closes = 0;
            while (alkt_node_poll_event(&fg, &fe))
                closes += fe.type == ALKT_REV_CLOSE && fe.code == ALKT_ERR_BUSY;
            ALK_CHECK(closes == holds, "%u CLOSEs for %u connections evicted", closes, holds);
            ALK_CHECK(alkt_node_accept(&fg, 7 * TW_SEC, &hh) == ALKT_OK,
                      "no room made after the CLOSEs were polled");
        }
        free(m);
    }
    {
        /* a client told of no gateway: an authorized open has no path
         * (NO_CHANNEL, code NO_PATH) */
        alkt_client fc;
        size_t need = alkt_node_mem_size(&w->ncfg[TW_CLIENT]);
        void *m = malloc(need ? need : 1);
        alkt_open_params o;
        uint32_t pr = 7, chn = 7;
        int code = 0, rc = -1;
        memset(&o, 0, sizeof o);
        o.kind = ALKT_OPEN_DIRECT;
        o.substrate = ALKT_SUBSTRATE_TCP;
        o.host.kind = ALKT_HOST_IP;
        tw_ip4(&o.host.ip, 10, 1, 0, 1);
        o.port = 80;
        ALK_CHECK(m && alkt_client_init(&fc, &w->ncfg[TW_CLIENT], m, need, w->now) == ALKT_OK &&
                      alkt_node_control(&fc, &w->ctl, w->now) == ALKT_OK,
                  "a fresh client");
        if (w->auth[0].expires * 1000000000ull > w->now + w->ncfg[TW_CLIENT].epoch_ns)
            ALK_CHECK((rc = alkt_client_open(&fc, &o, w->now, &pr, &chn, &code)) ==
                              ALKT_ERR_NO_CHANNEL &&
                          code == (int)ALKT_CODE_NO_PATH,
                      "an open to a gateway never added: %s, code %d", alkt_strerror(rc),
                      code);
        free(m);
    }
    done = 1;
    memset(&zn, 0, sizeof zn);
    memset(&zr, 0, sizeof zr);
    memset(&ctl, 0, sizeof ctl);
    memset(&op, 0, sizeof op);
    memset(&ip, 0, sizeof ip);
    ALK_CHECK(alkt_node_control(NULL, &ctl, 0) == ALKT_ERR_ARG &&
                  alkt_node_control(c, NULL, 0) == ALKT_ERR_ARG &&
                  alkt_node_control(&zn, &ctl, 0) == ALKT_ERR_ARG &&
                  alkt_node_handle_input(NULL, 1, "x", 1, 0) == ALKT_ERR_ARG &&
                  alkt_node_handle_input(c, 1, NULL, 1, 0) == ALKT_ERR_ARG &&
                  alkt_node_poll_event(NULL, &ev) == 0 && alkt_node_poll_event(c, NULL) == 0 &&
                  alkt_node_poll_event(&zn, &ev) == 0 &&
                  alkt_node_poll_timeout(NULL) == UINT64_MAX &&
                  alkt_node_poll_timeout(&zn) == UINT64_MAX &&
                  alkt_node_transmit_peek(NULL, 1, &cd) == 0 &&
                  alkt_node_transmit_peek(c, 1, NULL) == 0 &&
                  alkt_node_transmit_done(NULL, 1, 0) == ALKT_ERR_ARG &&
                  alkt_node_transmit_done(c, 0, 0) == ALKT_ERR_ARG &&   /* no such handle */
                  alkt_node_handle_connected(NULL, 1, 0) == ALKT_ERR_ARG &&
                  alkt_node_accept(NULL, 0, &h) == ALKT_ERR_ARG &&
                  alkt_node_accept(g, 0, NULL) == ALKT_ERR_ARG &&
                  alkt_node_accept(&zn, 0, &h) == ALKT_ERR_ARG &&
                  alkt_node_session(NULL, 1) == NULL && alkt_node_session(&zn, 1) == NULL &&
                  alkt_node_session(c, 0) == NULL,
              "a node call without its node, on one never set up, or without output");
    ALK_CHECK(alkt_client_add_gateway(NULL, "gw", &ip, 1) == ALKT_ERR_ARG &&
                  alkt_client_add_gateway(c, NULL, &ip, 1) == ALKT_ERR_ARG &&
                  alkt_client_add_gateway(c, "gw", NULL, 1) == ALKT_ERR_ARG &&
                  alkt_client_add_gateway(c, "gw", &ip, 0) == ALKT_ERR_ARG &&
                  alkt_client_add_gateway(g, "gw", &ip, 1) == ALKT_ERR_ARG &&
                  alkt_client_add_gateway(&zn, "gw", &ip, 1) == ALKT_ERR_ARG &&
                  alkt_gateway_authorize(NULL, "c", &op, 0, &res) == ALKT_ERR_ARG &&
                  alkt_gateway_authorize(g, NULL, &op, 0, &res) == ALKT_ERR_ARG &&
                  alkt_gateway_authorize(g, "c", NULL, 0, &res) == ALKT_ERR_ARG,
              "a client or gateway call without its arguments");
    ALK_CHECK(alkt_relay_accept(NULL, 0, &h) == ALKT_ERR_ARG &&
                  alkt_relay_accept(&zr, 0, &h) == ALKT_ERR_ARG &&
                  alkt_relay_accept(&w->relay[0], 0, NULL) == ALKT_ERR_ARG &&
                  alkt_relay_handle_input(NULL, 1, "x", 1, 0) == ALKT_ERR_ARG &&
                  alkt_relay_poll_event(NULL, &ev) == 0 &&
                  alkt_relay_poll_event(&w->relay[0], NULL) == 0 &&
                  alkt_relay_poll_event(&zr, &ev) == 0 &&
                  alkt_relay_poll_timeout(NULL) == UINT64_MAX &&
                  alkt_relay_poll_timeout(&zr) == UINT64_MAX &&
                  alkt_relay_transmit_peek(NULL, 1, &cd) == 0 &&
                  alkt_relay_transmit_done(NULL, 1, 0) == ALKT_ERR_ARG &&
                  alkt_relay_read_buffer(NULL, 1, &vd) == 0 &&
                  alkt_relay_handle_read(NULL, 1, 0, 0) == ALKT_ERR_ARG &&
                  alkt_relay_init(NULL, &w->rcfg, &zr, 8, 0) == ALKT_ERR_ARG &&
                  alkt_relay_init(&zr, NULL, &zr, 8, 0) == ALKT_ERR_ARG &&
                  alkt_relay_init(&zr, &w->rcfg, NULL, 8, 0) == ALKT_ERR_ARG,
              "a relay call without its relay, on one never set up, or without output");
}

/* relay_first: the client tries the relay before the direct path. */
static ALK_UNUSED void tw_init(tw_world *w, int relay_first, uint64_t expires)
{
    tw_init_shape(w, 1, 1, 1, relay_first, 0, expires, 0);
}

/* Whether n bytes equal to secret (not all zero) are anywhere in m. */
static ALK_UNUSED int tw_holds(const void *m, size_t len, const unsigned char *secret, size_t n)
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

/* alkt_node_wipe leaves no session key behind: every live peer's traffic
 * keys, resume token and secret's HMAC state, taken now, are nowhere in
 * the node or its memory after it (the world's end: the nodes are made
 * again before they are used). */
static ALK_UNUSED void tw_wipe_check(tw_world *w)
{
    int i;
    uint32_t k;
    for (i = 0; i < TW_NODES; i++) {
        alkt_node *n = &w->node[i];
        unsigned char keys[2 * 8][48];
        int nk = 0, j;
        if (!w->node_used[i] || !n->peers || !w->mem[i]) continue;
        memset(keys, 0, sizeof keys);
        for (k = 0; k < n->cfg.max_peers && nk + 5 <= 16; k++) {
            const alkt_session *ss = &n->peers[k].session;
            if (n->peers[k].state != ALKT__P_LIVE) continue;
            memcpy(keys[nk++], ss->tx_key, sizeof ss->tx_key);
            memcpy(keys[nk++], ss->rx_key, sizeof ss->rx_key);
            if (ss->token_ready) memcpy(keys[nk], ss->token, sizeof ss->token);
            nk++;
            memcpy(keys[nk++], (const unsigned char *)&ss->key, 48);
            memcpy(keys[nk++], (const unsigned char *)&ss->key + 48, 48);
        }
        alkt_node_wipe(n);
        for (j = 0; j < nk; j++) {
            size_t len = j % 5 < 3 ? 32 : 48;
            ALK_CHECK(!tw_holds(n, sizeof *n, keys[j], len) &&
                          !tw_holds(w->mem[i], w->mem_len[i], keys[j], len),
                      "node %d: a session key (%d) is still there after alkt_node_wipe", i, j % 5);
        }
    }
}

static ALK_UNUSED void tw_free(tw_world *w)
{
    int i;
    for (i = 0; i < TW_NODES; i++) free(w->mem[i]);
    for (i = 0; i < TW_MAX_RELAYS; i++) free(w->rmem[i]);
}

static ALK_UNUSED tw_link *tw_link_of(tw_world *w, int side, uint32_t h, int *k)
{
    int i, j;
    for (i = 0; i < w->n_links; i++)
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
    tw_touch(w, side);
    if (side == TW_OUTSIDER) return;
    if (side >= TW_RELAY) alkt_relay_handle_closed(&w->relay[side - TW_RELAY], h, w->now);
    else alkt_node_handle_closed(tw_node(w, side), h, w->now);
}

/* Which end a connect to ip:port reaches: a relay (TW_RELAY + k), a
 * gateway (node), or -1. Only clients dial gateways. */
static ALK_UNUSED int tw_dialled(tw_world *w, int side, const alkt_ip *ip, uint16_t port)
{
    int k;
    for (k = 0; k < w->n_relays; k++)
        if (memcmp(ip, &w->relay_ip[k], sizeof *ip) == 0 && port == w->relay_port)
            return TW_RELAY + k;
    for (k = 0; k < w->n_gateways; k++)
        if (memcmp(ip, &w->gw_ip[k], sizeof *ip) == 0 && port == w->gw_port && tw_is_client(side))
            return TW_GATEWAY + k;
    return -1;
}

/* May a direct connection reach gateway g now? */
static ALK_UNUSED int tw_direct_ok(const tw_world *w, int g)
{
    return !w->direct_down[g] && (w->nat[g] == TW_NAT_PUBLIC || w->nat[g] == TW_NAT_FORWARDED);
}

static ALK_UNUSED void tw_connect(tw_world *w, int side, uint32_t h, const alkt_ip *ip,
                                  uint16_t port)
{
    int to = tw_dialled(w, side, ip, port);
    uint32_t far = 0;
    int i, rc;
    tw_link *l = NULL;
    tw_touch(w, side);
    if (to >= 0) tw_touch(w, to);
    for (i = 0; i < TW_LINKS && !l; i++)
        if (!w->links[i].used) l = &w->links[i];
    /* (a failed accept leaves the handle 0, as documented; a client does
     * not accept) */
    if (to >= TW_RELAY && !w->relay_down[to - TW_RELAY]) {
        alkt_relay_stats before, after;
        alkt_relay_stats_get(&w->relay[to - TW_RELAY], &before);
        far = 0xA5A5A5A5u;
        rc = alkt_relay_accept(&w->relay[to - TW_RELAY], w->now, &far);
        ALK_CHECK(rc == ALKT_OK ? far != 0 : far == 0, "relay accept: %d, handle %u",
                  rc, far);
        /* an accepted connection is one more of its max_conns */
        alkt_relay_stats_get(&w->relay[to - TW_RELAY], &after);
        ALK_CHECK(after.conns == before.conns + (rc == ALKT_OK) &&
                      (rc == ALKT_OK || before.conns == w->rcfg.max_conns),
                  "relay accept: %d with %u of %u connections, %u after", rc, before.conns,
                  w->rcfg.max_conns, after.conns);
    } else if (to >= 0 && to < TW_RELAY && tw_direct_ok(w, to - TW_GATEWAY)) {
        far = 0xA5A5A5A5u;
        if (!tw_node(w, side)->is_gateway)
            ALK_CHECK(alkt_node_accept(tw_node(w, side), w->now, &far) ==
                              ALKT_ERR_STATE && far == 0,
                      "a client accepted a connection (handle %u)", far);
        far = 0xA5A5A5A5u;
        rc = alkt_node_accept(&w->node[to], w->now, &far);
        ALK_CHECK(rc == ALKT_OK ? far != 0 : far == 0, "node accept: %d, handle %u",
                  rc, far);
    }
    if (!far || !l) {
        if (far) tw_tell_closed(w, to, far);
        w->connects_refused++;
        alk_trace("connect node %d h %08x refused", side, (unsigned)h);
        alkt_node_handle_closed(tw_node(w, side), h, w->now);
        return;
    }
    memset(l, 0, offsetof(tw_link, pipe[0].buf));
    l->pipe[1].head = l->pipe[1].len = 0;
    if (l - w->links >= w->n_links) w->n_links = (int)(l - w->links) + 1;
    l->used = 1;
    l->side[0] = side;
    l->h[0] = h;
    l->side[1] = to;
    l->h[1] = far;
    l->last_in[0] = l->last_in[1] = w->now;
    alk_trace("connect node %d h %08x -> %d h %08x", side, (unsigned)h, to, (unsigned)far);
    ALK_CHECK(alkt_node_handle_connected(tw_node(w, side), h, w->now) == ALKT_OK,
              "handle_connected");
}

/* An outsider connects to gateway g where a direct path reaches it: the
 * link (its side 0 the outsider), or NULL when the connect fails. */
static ALK_UNUSED tw_link *tw_outsider_connect(tw_world *w, int g)
{
    tw_link *l = NULL;
    uint32_t far = 0;
    int i;
    if (!tw_direct_ok(w, g)) return NULL;
    for (i = 0; i < TW_LINKS && !l; i++)
        if (!w->links[i].used) l = &w->links[i];
    if (!l || alkt_node_accept(&w->node[TW_GATEWAY + g], w->now, &far) != ALKT_OK) return NULL;
    tw_touch(w, TW_GATEWAY + g);
    memset(l, 0, offsetof(tw_link, pipe[0].buf));
    l->pipe[1].head = l->pipe[1].len = 0;
    if (l - w->links >= w->n_links) w->n_links = (int)(l - w->links) + 1;
    l->used = 1;
    l->side[0] = TW_OUTSIDER;
    l->h[0] = 0xffff0000u | (uint32_t)(l - w->links + 1);
    l->side[1] = TW_GATEWAY + g;
    l->h[1] = far;
    l->last_in[0] = l->last_in[1] = w->now;
    alk_trace("outsider connects to gateway %d (h %08x)", g, (unsigned)far);
    return l;
}

/* Bytes from the outsider of l, in order after what it sent before. */
static ALK_UNUSED void tw_outsider_send(tw_world *w, tw_link *l, const void *d, size_t n)
{
    tw_pipe *p = &l->pipe[0];
    size_t i;
    (void)w;
    if (!l->used || !l->h[0] || l->closed[0] || p->len + n > TW_PIPE) return;
    for (i = 0; i < n; i++) p->buf[(p->head + p->len + i) % TW_PIPE] = ((const unsigned char *)d)[i];
    p->len += n;
    l->out[0] += n;
}

/* Reset (both ends told) every link that touches end `who`; with `from`
 * >= 0 only those between `from` and `who`. */
static ALK_UNUSED void tw_reset_links_of(tw_world *w, int who, int from, int tell_who)
{
    int i, k;
    for (i = 0; i < w->n_links; i++) {
        tw_link *l = &w->links[i];
        int hit;
        if (!l->used) continue;
        hit = (l->side[0] == who || l->side[1] == who) &&
              (from < 0 || l->side[0] == from || l->side[1] == from);
        if (!hit) continue;
        for (k = 0; k < 2; k++)
            if (l->h[k] && (tell_who || l->side[k] != who)) tw_tell_closed(w, l->side[k], l->h[k]);
        l->used = 0;
    }
}

/* Relay k dies (its links reset) and stays down until tw_relay_up. */
static ALK_UNUSED void tw_kill_relay_k(tw_world *w, int k)
{
    alk_trace("relay %d killed", k);
    tw_reset_links_of(w, TW_RELAY + k, -1, 0);
    w->relay_down[k] = 1;
    ALK_CHECK(alkt_relay_init(&w->relay[k], &w->rcfg, w->rmem[k], w->rmem_len, w->now) == ALKT_OK,
              "relay init");   /* a dead relay keeps nothing */
}

static ALK_UNUSED void tw_kill_relay(tw_world *w) { tw_kill_relay_k(w, 0); }

/* The direct path to gateway g partitioned (its direct links reset) or
 * healed. */
static ALK_UNUSED void tw_partition_gateway(tw_world *w, int g, int down)
{
    int c;
    alk_trace("direct path to gateway %d %s", g, down ? "partitioned" : "healed");
    if (down)
        for (c = 0; c < w->n_clients; c++) tw_reset_links_of(w, TW_GATEWAY + g, c, 1);
    w->direct_down[g] = down;
}

static ALK_UNUSED void tw_partition_direct(tw_world *w, int down)
{
    tw_partition_gateway(w, 0, down);
}

/* Link i goes silent: what is in flight and everything after is lost, and
 * neither end is told. */
static ALK_UNUSED void tw_drop_link(tw_world *w, int i)
{
    tw_link *l = &w->links[i];
    if (!l->used) return;
    alk_trace("link %d (%d-%d) goes silent", i, l->side[0], l->side[1]);
    l->silent = 1;
    l->pipe[0].len = l->pipe[1].len = 0;
}

/* Node i crashes and starts again empty: its links go silent for the far
 * ends (no FIN, no RST reaches them), its targets are gone. */
static ALK_UNUSED void tw_crash_node(tw_world *w, int i)
{
    int j, k;
    alk_trace("node %d crashes and restarts", i);
    for (j = 0; j < w->n_links; j++) {
        tw_link *l = &w->links[j];
        if (!l->used) continue;
        for (k = 0; k < 2; k++)
            if (l->side[k] == i) {
                l->h[k] = 0;
                l->silent = 1;
                l->pipe[0].len = l->pipe[1].len = 0;
            }
        if (!l->h[0] && !l->h[1]) l->used = 0;
    }
    for (j = 0; j < w->n_targets; j++)
        if (w->targets[j].used && w->targets[j].side == i) w->targets[j].used = 0;
    /* a node that starts again draws new entropy, as a real one must: the
     * same seed would repeat its nonces, and a HELLO recorded before the
     * crash, replayed, would make the very session it came from, token
     * and all (the tunnel_sim campaign's outsider did just that) */
    for (k = 16; k < 24 && ++w->seed[i][k] == 0; k++) {}
    tw_node_start(w, i);
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
    tw_control(w, TW_GATEWAY, &c);
}

/* ---- names ---- */
/* Every result code the tunnel reports has its own message (an unknown
 * code the unknown one), and the substrates have their JSON names: what a
 * user prints of the events and errors these worlds produce. */
static ALK_UNUSED void tw_check_names(void)
{
    static const struct {
        int code;
        const char *name;
    } codes[] = {
#define TW__ROW(name, value, text) {name, #name},
        ALKT_RESULT_LIST(TW__ROW)
#undef TW__ROW
    };
    const char *unknown = alkt_strerror(ALKT__RESULT_LOWEST - 1);
    size_t i, j;
    ALK_CHECK(unknown && *unknown && !strcmp(alkt_strerror(1000), unknown),
              "unknown codes have no message of their own");
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *t = alkt_strerror(codes[i].code);
        ALK_CHECK(t && *t && strcmp(t, unknown) != 0, "%s has no message", codes[i].name);
        for (j = 0; j < i; j++)
            ALK_CHECK(strcmp(t, alkt_strerror(codes[j].code)) != 0, "%s and %s share a message",
                      codes[i].name, codes[j].name);
    }
    ALK_CHECK(!strcmp(alkt_substrate_name(ALKT_SUBSTRATE_TCP), "tcp") &&
                  !strcmp(alkt_substrate_name(ALKT_SUBSTRATE_UDP), "udp") &&
                  !strcmp(alkt_substrate_name(ALKT_SUBSTRATE_UNIX), "unix") &&
                  alkt_substrate_name((alkt_substrate)(ALKT_SUBSTRATE_UNIX + 1)) == NULL,
              "substrate names");
}

/* ---- targets (echo behind a pump) ---- */
static ALK_UNUSED tw_target *tw_target_find_on(tw_world *w, int side, uint32_t peer,
                                                uint32_t channel)
{
    int i;
    for (i = 0; i < w->n_targets; i++)
        if (w->targets[i].used && w->targets[i].side == side && w->targets[i].peer == peer &&
            w->targets[i].channel == channel)
            return &w->targets[i];
    return NULL;
}

static ALK_UNUSED tw_target *tw_target_find(tw_world *w, uint32_t peer, uint32_t channel)
{
    return tw_target_find_on(w, TW_GATEWAY, peer, channel);
}

/* The kind of target an open reaches (tw.behaviours). */
static ALK_UNUSED int tw_target_kind(const tw_world *w, const alkt_open_params *p, size_t *limit)
{
    unsigned b;
    *limit = 0;
    if (!w->behaviours || p->host.kind != ALKT_HOST_IP || p->host.ip.family != 4)
        return TW_T_ECHO;
    b = p->host.ip.bytes[3] % 8u;
    *limit = 16u * p->host.ip.bytes[2] + 1u;
    if (p->substrate == ALKT_SUBSTRATE_UDP) {   /* datagrams: echo or fail */
        *limit = 1u + p->host.ip.bytes[2] % 4u;
        return b == 3 ? TW_T_REFUSE : b == 6 ? TW_T_NEVER : b == 7 ? TW_T_FAIL : TW_T_ECHO;
    }
    return b == 3 ? TW_T_REFUSE : b == 4 ? TW_T_SLOW : b == 5 ? TW_T_EARLY_EOF
         : b == 6 ? TW_T_NEVER : b == 7 ? TW_T_FAIL : TW_T_ECHO;
}

/* An endpoint behind (side, peer, channel) once the open is accepted;
 * NULL when all are used. */
static ALK_UNUSED tw_target *tw_target_new(tw_world *w, int side, uint32_t peer,
                                           uint32_t channel)
{
    int i;
    for (i = 0; i < TW_TARGETS; i++) {
        tw_target *t = &w->targets[i];
        if (t->used) continue;
        memset(t, 0, offsetof(tw_target, buf));
        if (i >= w->n_targets) w->n_targets = i + 1;
        t->used = 1;
        t->side = side;
        t->peer = peer;
        t->channel = channel;
        return t;
    }
    return NULL;
}

#define TW_DGRAM_MAX 600   /* the datagram targets' largest */

/* What a target's step can move: its pumps (bytes, padding included:
 * memcpy) and its endpoint. */
typedef struct tw__target_state {
    unsigned char p[sizeof(alkt_pump)], dp[sizeof(alkt_dgram_pump)];
    size_t echo_len;
    uint64_t received;
    int eof_seen, shut, done, aborted;
} tw__target_state;

static ALK_UNUSED void tw__target_mark(const tw_target *t, tw__target_state *m)
{
    memcpy(m->p, &t->p, sizeof m->p);
    memcpy(m->dp, &t->dp, sizeof m->dp);
    m->echo_len = t->echo_len;
    m->received = t->received;
    m->eof_seen = t->eof_seen;
    m->shut = t->shut;
    m->done = t->done;
    m->aborted = t->aborted;
}

static ALK_UNUSED int tw__target_moved(const tw_target *t, const tw__target_state *m)
{
    return memcmp(m->p, &t->p, sizeof m->p) != 0 || memcmp(m->dp, &t->dp, sizeof m->dp) != 0 ||
           m->echo_len != t->echo_len || m->received != t->received ||
           m->eof_seen != t->eof_seen || m->shut != t->shut || m->done != t->done ||
           m->aborted != t->aborted;
}

/* A datagram target: each datagram the channel brings is echoed back
 * whole (queued framed in t->echo while the pump is busy); the client's
 * EOF is answered with ours once the queue is empty. */
static ALK_UNUSED int tw_dgram_target_step(tw_world *w, tw_target *t)
{
    unsigned bits;
    int rounds;
    for (rounds = 0; rounds < 8; rounds++) {
        tw__target_state before;
        tw__target_mark(t, &before);
        bits = alkt_dgram_pump_poll(&t->dp);
        if (bits & ALKT_PUMP_ABORT) {
            t->aborted = 1;
            return 0;
        }
        if (bits & ALKT_PUMP_DONE) {
            t->done = 1;
            return 0;
        }
        if ((bits & ALKT_PUMP_WRITE) && t->echo_len + 2 + TW_DGRAM_MAX <= sizeof t->echo) {
            const void *d;
            ptrdiff_t n = alkt_dgram_pump_recv(&t->dp, &d);
            if (n >= 0) {
                if (w->dtap) w->dtap(w->tap_ctx, t, (const unsigned char *)d, (size_t)n);
                t->echo[t->echo_len] = (unsigned char)(n >> 8);
                t->echo[t->echo_len + 1] = (unsigned char)n;
                memcpy(t->echo + t->echo_len + 2, d, (size_t)n);
                t->echo_len += 2 + (size_t)n;
                t->received++;
                ALK_CHECK(alkt_dgram_pump_delivered(&t->dp) == ALKT_OK, "delivered");
                if (t->kind == TW_T_FAIL && t->received >= t->limit) {
                    ALK_CHECK(alkt_dgram_pump_endpoint_failed(&t->dp, ALKT_CODE_ENDPOINT_ERROR) ==
                                  ALKT_OK, "dgram target failed");
                    t->aborted = 1;
                    return 0;
                }
            }
        }
        if (bits & ALKT_PUMP_SHUT_WRITE) t->eof_seen = 1;
        if ((bits & ALKT_PUMP_READ) && t->echo_len && !t->shut) {
            size_t n = ((size_t)t->echo[0] << 8) | t->echo[1];
            int rc = alkt_dgram_pump_send(&t->dp, t->echo + 2, n);
            ALK_CHECK(rc == ALKT_OK || rc == ALKT_ERR_WOULD_BLOCK, "dgram echo: %d", rc);
            if (rc == ALKT_OK) {
                memmove(t->echo, t->echo + 2 + n, t->echo_len - 2 - n);
                t->echo_len -= 2 + n;
            }
        }
        if (!t->shut && t->echo_len == 0 && t->eof_seen) {
            t->shut = 1;
            ALK_CHECK(alkt_dgram_pump_endpoint_eof(&t->dp) == ALKT_OK, "dgram target eof");
            {   /* as for a stream target: the call moved what it could */
                alkt_dgram_pump was = t->dp;
                (void)alkt_dgram_pump_poll(&t->dp);
                ALK_CHECK(memcmp(&was, &t->dp, sizeof was) == 0,
                          "a poll right after dgram endpoint_eof still had work to do");
            }
        }
        /* a round that moved nothing: the next ones would not either */
        if (!tw__target_moved(t, &before)) return 1;
    }
    return 0;
}

/* A target's rounds; 1 when they ended on one that moved nothing. */
static ALK_UNUSED int tw__target_rounds(tw_world *w, tw_target *t)
{
    unsigned bits;
    int rounds;
    if (t->dgram) return tw_dgram_target_step(w, t);
    for (rounds = 0; rounds < 4; rounds++) {
        tw__target_state before;
        tw__target_mark(t, &before);
        bits = alkt_pump_poll(&t->p);
        if (bits & ALKT_PUMP_ABORT) {
            t->aborted = 1;
            return 0;
        }
        if (bits & ALKT_PUMP_DONE) {
            t->done = 1;
            return 0;
        }
        if (bits & ALKT_PUMP_WRITE) {
            const void *d;
            size_t n = alkt_pump_write_peek(&t->p, &d), keep;
            if (n > sizeof t->echo - t->echo_len) n = sizeof t->echo - t->echo_len;
            if (t->kind == TW_T_SLOW && n > 64) n = 64;
            if (n) {
                if (w->tap) w->tap(w->tap_ctx, t, (const unsigned char *)d, n);
                keep = n;
                if (t->kind == TW_T_FAIL && t->received + n >= t->limit)
                    keep = 0;                    /* the read it fails at */
                else if (t->kind == TW_T_EARLY_EOF)   /* echoes up to its limit only */
                    keep = t->received >= t->limit ? 0
                         : n < t->limit - t->received ? n : (size_t)(t->limit - t->received);
                memcpy(t->echo + t->echo_len, d, keep);
                t->echo_len += keep;
                t->received += n;
                ALK_CHECK(alkt_pump_endpoint_wrote(&t->p, n) == ALKT_OK, "target wrote");
                if (t->kind == TW_T_FAIL && t->received >= t->limit) {
                    ALK_CHECK(alkt_pump_endpoint_failed(&t->p, ALKT_CODE_ENDPOINT_ERROR) ==
                                  ALKT_OK, "target failed");
                    t->aborted = 1;
                    return 0;
                }
            }
        }
        if (bits & ALKT_PUMP_SHUT_WRITE) {
            /* the client's EOF: echo what is left, then ours */
            t->eof_seen = 1;
            ALK_CHECK(alkt_pump_endpoint_shut(&t->p) == ALKT_OK, "target shut");
        }
        if ((bits & ALKT_PUMP_READ) && t->echo_len && !t->shut) {
            void *b;
            size_t room = alkt_pump_read_buffer(&t->p, &b);
            /* more than it offered is refused, and changes nothing */
            ALK_CHECK(alkt_pump_endpoint_read(&t->p, room + 1) == ALKT_ERR_ARG &&
                          alkt_pump_read_buffer(&t->p, &b) == room,
                      "the pump took %zu bytes more than the %zu it offered", room + 1, room);
            if (room > t->echo_len) room = t->echo_len;
            if (room) {
                memcpy(b, t->echo, room);
                memmove(t->echo, t->echo + room, t->echo_len - room);
                t->echo_len -= room;
                ALK_CHECK(alkt_pump_endpoint_read(&t->p, room) == ALKT_OK, "target read");
            }
        }
        if (!t->shut && t->echo_len == 0 &&
            (t->eof_seen || (t->kind == TW_T_EARLY_EOF && t->received >= t->limit))) {
            t->shut = 1;
            ALK_CHECK(alkt_pump_endpoint_eof(&t->p) == ALKT_OK, "target eof");
            {   /* the call moved what it could: a poll right after it
                 * (nothing came in between) changes nothing */
                alkt_pump was = t->p;
                (void)alkt_pump_poll(&t->p);
                ALK_CHECK(memcmp(&was, &t->p, sizeof was) == 0,
                          "a poll right after endpoint_eof still had work to do");
            }
        }
        /* a round that moved nothing: the next ones would not either */
        if (!tw__target_moved(t, &before)) return 1;
    }
    return 0;
}

/* A target moves: its pump, its endpoint. One that moved nothing at its
 * last step, with nothing called on its node since, would move nothing
 * again and is skipped; one that moved makes its node one to poll. */
static ALK_UNUSED void tw_target_step(tw_world *w, tw_target *t)
{
    tw__target_state before;
    int was_idle, idle, moved;
    if (t->done || t->aborted) return;
    was_idle = t->idle_gen == w->gen[t->side];
    if (was_idle && !TW__CHECK_QUIET) return;
    tw__target_mark(t, &before);
    idle = tw__target_rounds(w, t);
    moved = tw__target_moved(t, &before);
    ALK_CHECK(!was_idle || !moved, "node %d: a target moved with no call on its node since it "
                                  "last moved nothing", t->side);
    if (moved) tw_touch(w, t->side);
    t->idle_gen = idle ? w->gen[t->side] : 0;
}

/* ---- events ---- */
static ALK_UNUSED void tw_node_events(tw_world *w, int side)
{
    alkt_node *n = tw_node(w, side);
    alkt_role_event ev;
    int guard = 0;
    while (alkt_node_poll_event(n, &ev)) {
        ALK_CHECK(++guard < 10000, "node %d: endless events", side);
        tw_touch(w, side);   /* (answers: its targets may move) */
        if (w->watch && ev.type != ALKT_REV_TARGET_CONNECT && ev.type != ALKT_REV_INCOMING)
            w->watch(w->watch_ctx, side, &ev);
        switch (ev.type) {
        case ALKT_REV_CONNECT:
            tw_connect(w, side, ev.conn, &ev.ip, ev.port);
            break;
        case ALKT_REV_CLOSE: {
            int k;
            tw_link *l = tw_link_of(w, side, ev.conn, &k);
            alk_trace("node %d closes h %08x (%s)", side, (unsigned)ev.conn,
                      alkt_strerror(ev.code));
            /* only a handle it still had: one it was told is closed (or
             * whose connect failed) is gone already */
            ALK_CHECK(l != NULL, "node %d closes h %08x, which is gone", side,
                      (unsigned)ev.conn);
            if (l) {
                l->h[k] = 0;
                l->closed[k] = 1;
                l->pipe[1 - k].len = 0;   /* nothing more reaches it */
                if (!l->h[1 - k]) l->used = 0;
            }
            break;
        }
        case ALKT_REV_PEER_UP:
            w->peer_up[side]++;
            if (ev.peer && ev.peer <= TW_BO_PEERS) w->bo_rounds[side][ev.peer - 1] = 0;
            alk_trace("node %d peer %u (%s) up (%s)", side, ev.peer,
                      ev.peer ? tw_node(w, side)->peers[ev.peer - 1].id : "?",
                      ev.code ? "resumed" : "new");
            break;
        case ALKT_REV_PEER_DOWN:
            w->peer_down[side]++;
            w->last_code[side] = ev.code;
            alk_trace("node %d peer %u (%s) down %d", side, ev.peer,
                      ev.peer ? tw_node(w, side)->peers[ev.peer - 1].id : "?", ev.code);
            break;
        case ALKT_REV_TARGET_CONNECT:
        case ALKT_REV_INCOMING: {
            int incoming = ev.type == ALKT_REV_INCOMING;
            size_t limit;
            int kind = incoming ? TW_T_ECHO : tw_target_kind(w, &ev.params, &limit);
            int want = incoming ? w->accept_incoming : !w->refuse_targets && kind != TW_T_REFUSE;
            w->grant_tag = 0;
            if (w->watch) w->watch(w->watch_ctx, side, &ev);   /* (may set grant_tag) */
            tw_target *t;
            int ok, rc;
            uint16_t code;
            if (kind == TW_T_NEVER) break;   /* no answer, ever */
            t = want ? tw_target_new(w, side, ev.peer, ev.channel) : NULL;
            ok = t != NULL;
            if (want && !t) w->targets_exhausted++;
            code = ok ? 0 : (uint16_t)ALKT_CODE_TARGET_REFUSED;
            ALK_CHECK(!incoming || ev.params.kind == ALKT_OPEN_FORWARDED,
                      "incoming: not a forwarded open");
            if (t) {
                t->tag = w->grant_tag;
                t->kind = kind;
                t->limit = limit;
                t->params = ev.params;
            }
            /* (each role answers its own way: a gateway does not answer
             * as a client does) */
            if (!incoming)
                ALK_CHECK(alkt_client_answer(n, ev.peer, ev.channel, ok, code) ==
                              ALKT_ERR_ARG,
                          "a gateway answered as a client");
            rc = incoming ? alkt_client_answer(n, ev.peer, ev.channel, ok, code)
                          : alkt_gateway_target_result(n, ev.peer, ev.channel, ok, code);
            /* (withdrawn by the opener: the endpoint goes) */
            ALK_CHECK(rc == ALKT_OK || rc == ALKT_ERR_RESET,
                      "answer to the open of %u on node %d: %s", ev.channel, side,
                      alkt_strerror(rc));
            if (rc == ALKT_ERR_RESET && t) {
                t->used = 0;
                t = NULL;
            }
            /* a refused open leaves no grant behind */
            if (!incoming && !ok && rc == ALKT_OK)
                ALK_CHECK(alkt__grant_find(&n->peers[ev.peer - 1], ev.channel) == NULL,
                          "gateway %d: the refused open %u keeps its grant", side, ev.channel);
            if (t && ev.params.substrate == ALKT_SUBSTRATE_UDP) {
                t->dgram = 1;   /* (echo or fail: tw_target_kind) */
                ALK_CHECK(alkt_dgram_pump_init(&t->dp, alkt_node_session(n, ev.peer),
                                               ev.channel, t->buf, sizeof t->buf,
                                               TW_DGRAM_MAX) == ALKT_OK, "datagram pump");
            } else if (t) {
                ALK_CHECK(alkt_pump_init(&t->p, alkt_node_session(n, ev.peer), ev.channel,
                                         t->buf, sizeof t->buf) == ALKT_OK, "target pump");
            }
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
        case ALKT_REV_PATH_FAILED: {
            /* a real path, a library code saying why */
            int to = tw_dialled(w, side, &ev.ip, ev.port);
            w->path_failures++;
            w->last_path_code = ev.code;
            w->path_unanswered += ev.code == ALKT_ERR_UNANSWERED;
            ALK_CHECK(tw_is_client(side) && ev.peer >= 1, "path failure on node %d", side);
            ALK_CHECK(ev.code < 0 && ev.code >= ALKT__RESULT_LOWEST, "path failure code %d",
                      ev.code);
            ALK_CHECK(to >= 0, "path failure at an address no path has");
            alk_trace("node %d: path to %d failed: %s", side, to, alkt_strerror(ev.code));
            break;
        }
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
                /* an answer that comes after the channel's end is a
                 * normal outcome: RESET, nothing else */
                if (alkt_node_session(n, ev.peer))
                    ALK_CHECK((tw_is_client(side)
                                   ? alkt_client_answer(n, ev.peer, ev.channel, 0, 1)
                                   : alkt_gateway_target_result(n, ev.peer, ev.channel, 0,
                                                                1)) == ALKT_ERR_RESET,
                              "node %d: a late answer to done channel %u", side,
                              ev.channel);
            }
            break;
        case ALKT_REV_OPEN_REFUSED:
            ALK_CHECK(tw_is_gateway(side) && ev.peer >= 1 &&
                          (ev.code == (int)ALKT_CODE_UNAUTHORIZED ||
                           ev.code == (int)ALKT__CODE_FULL),
                      "node %d: open refused (%d)", side, ev.code);
            w->opens_refused[side]++;
            break;
        default:
            ALK_CHECK(0, "node %d: unexpected event %d", side, (int)ev.type);
        }
    }
}

static ALK_UNUSED void tw_relay_events(tw_world *w, int k)
{
    alkt_role_event ev;
    int guard = 0;
    while (alkt_relay_poll_event(&w->relay[k], &ev)) {
        int j;
        tw_link *l;
        ALK_CHECK(++guard < 10000, "relay: endless events");
        tw_touch(w, TW_RELAY + k);
        /* a relay's event names connections only, and a CLOSE the status
         * it refused with (1..5, else 0): the rest is zero */
        ALK_CHECK(ev.peer == 0 && ev.channel == 0 && ev.port == 0 &&
                      (ev.type == ALKT_REV_CLOSE ? ev.code >= 0 && ev.code <= 5 : ev.code == 0),
                  "relay %d: event %d with peer %u channel %u code %d", k, (int)ev.type,
                  ev.peer, ev.channel, ev.code);
        if (ev.type == ALKT_REV_SPLICED) {
            w->spliced++;
            continue;
        }
        ALK_CHECK(ev.type == ALKT_REV_CLOSE, "relay event %d", (int)ev.type);
        alk_trace("relay %d closes h %08x", k, (unsigned)ev.conn);
        l = tw_link_of(w, TW_RELAY + k, ev.conn, &j);
        if (l) {
            l->h[j] = 0;
            l->closed[j] = 1;
            l->pipe[1 - j].len = 0;
            if (!l->h[1 - j]) l->used = 0;
        }
    }
}

static ALK_UNUSED size_t tw_peek(tw_world *w, int side, uint32_t h, const void **d)
{
    if (side == TW_OUTSIDER) return 0;   /* (its bytes go in by hand) */
    if (side >= TW_RELAY) return alkt_relay_transmit_peek(&w->relay[side - TW_RELAY], h, d);
    return alkt_node_transmit_peek(tw_node(w, side), h, d);
}

/* Side k's last peek was empty and nothing called it since: it has no
 * output (TW_CHECK_QUIET: asked anyway, it must say so). */
static ALK_UNUSED int tw__dry(tw_world *w, tw_link *l, int k)
{
    const void *d;
    if (l->dry_gen[k] != w->gen[l->side[k]]) return 0;
    if (TW__CHECK_QUIET)
        ALK_CHECK(tw_peek(w, l->side[k], l->h[k], &d) == 0,
                  "end %d h %08x: output with no call since its last empty peek", l->side[k],
                  (unsigned)l->h[k]);
    return 1;
}

/* One side of a link sends what it can into its pipe (not asked again
 * while its last peek was empty and nothing was called on it since). */
static ALK_UNUSED void tw__send(tw_world *w, tw_link *l, int k)
{
    tw_pipe *p = &l->pipe[k];
    const void *d;
    size_t n, room, at;
    if (!l->h[k]) return;
    if (tw__dry(w, l, k)) return;   /* (nothing new) */
    n = tw_peek(w, l->side[k], l->h[k], &d);
    l->dry_gen[k] = n ? 0 : w->gen[l->side[k]];
    if (l->out[k] == 0 && n >= ALKT_FRAME_HEADER && tw_is_client(l->side[k]) &&
        tw_is_gateway(l->side[1 - k])) {
        /* an observer on the path keeps the client's HELLO */
        const unsigned char *f = (const unsigned char *)d;
        size_t fl = ALKT_FRAME_HEADER + ((size_t)f[2] << 8 | f[3]);
        if (f[0] == ALKT_FRAME_HELLO && fl <= n && fl <= sizeof w->recorded[0]) {
            unsigned r = w->n_recorded++ % TW_RECORDED;
            memcpy(w->recorded[r], f, fl);
            w->recorded_len[r] = fl;
        }
    }
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
    /* (into a closed socket, or a silent link: lost) */
    if (!l->closed[1 - k] && !l->silent) p->len += n;
    l->out[k] += n;
    tw_touch(w, l->side[k]);
    if (l->side[k] >= TW_RELAY) {
        alkt_relay_server *r = &w->relay[l->side[k] - TW_RELAY];
        ALK_CHECK(alkt_relay_transmit_done(r, l->h[k], n) == ALKT_OK,
                  "relay tx done");
        /* misuse: another done with no peek between is refused, and
         * changes nothing */
        ALK_CHECK(alkt_relay_transmit_done(r, l->h[k], 1) == ALKT_ERR_ARG,
                  "relay: a second transmit_done without a peek accepted");
    } else
        ALK_CHECK(alkt_node_transmit_done(tw_node(w, l->side[k]), l->h[k], n) == ALKT_OK,
                  "node tx done");
}

/* ... asked in any case (the caller may have called the role) */
static ALK_UNUSED void tw_send(tw_world *w, tw_link *l, int k)
{
    l->dry_gen[k] = 0;
    tw__send(w, l, k);
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
        if (l->side[r] == TW_OUTSIDER)
            took = (ptrdiff_t)n;   /* (read and dropped: counted in out[k]) */
        else if (l->side[r] >= TW_RELAY)
            took = alkt_relay_handle_input(&w->relay[l->side[r] - TW_RELAY], l->h[r],
                                           p->buf + p->head, n, w->now);
        else
            took = alkt_node_handle_input(tw_node(w, l->side[r]), l->h[r], p->buf + p->head, n,
                                          w->now);
        tw_touch(w, l->side[r]);
        ALK_CHECK(took >= 0 && (size_t)took <= n, "input took %ld of %zu", (long)took, n);
        if (l->side[r] < TW_RELAY || l->side[r] == TW_OUTSIDER)
            ALK_CHECK((size_t)took == n, "a node takes everything");
        if (took) l->last_in[r] = w->now;
        p->head = (p->head + (size_t)took) % TW_PIPE;
        p->len -= (size_t)took;
        if ((size_t)took < n) break;   /* backpressure */
    }
    /* the sender closed and everything arrived: the end */
    if (l->closed[k] && p->len == 0 && l->h[r] && !l->silent) {
        uint32_t h = l->h[r];
        l->h[r] = 0;
        tw_tell_closed(w, l->side[r], h);
    }
    if (!l->h[0] && !l->h[1]) l->used = 0;
}

/* Every end polled to its last event; with `moved` only those called
 * since their last poll (tw_world.gen). */
static ALK_UNUSED void tw__events(tw_world *w, int moved)
{
    int e;
    for (e = 0; e < TW_RELAY + w->n_relays; e++) {   /* (nodes, then relays) */
        alkt_role_event ev;
        int relay = e >= TW_RELAY;
        if (!relay && !w->node_used[e]) continue;
        if (moved && w->polled[e] == w->gen[e]) {   /* nothing called it since */
            if (TW__CHECK_QUIET)
                ALK_CHECK(!(relay ? alkt_relay_poll_event(&w->relay[e - TW_RELAY], &ev)
                                  : alkt_node_poll_event(&w->node[e], &ev)),
                          "end %d: event %d with no call since its last poll", e,
                          (int)ev.type);
            continue;
        }
        if (relay) tw_relay_events(w, e - TW_RELAY);
        else tw_node_events(w, e);
        tw_touch(w, e);   /* (a poll does work too: output, a deadline) */
        w->polled[e] = w->gen[e];
    }
}

static ALK_UNUSED void tw_all_events(tw_world *w) { tw__events(w, 0); }

/* The most a retry may wait after f failed rounds: backoff_min doubling
 * per round up to backoff_max (the documented rule). */
static ALK_UNUSED uint64_t tw_backoff_bound(const alkt_node *n, uint32_t f)
{
    uint64_t b = n->cfg.backoff_min_ns;
    while (f-- > 1 && b < n->cfg.backoff_max_ns) b *= 2;
    return b < n->cfg.backoff_max_ns ? b : n->cfg.backoff_max_ns;
}

/* No retry waits longer than its rule: a client's next round to a
 * gateway, a gateway's next offer at a relay (each was set at or before
 * now, to at most that moment plus the bound). */
static ALK_UNUSED void tw_check_backoff(tw_world *w)
{
    int i;
    uint32_t k;
    for (i = 0; i < TW_NODES; i++) {
        alkt_node *n = &w->node[i];
        if (!w->node_used[i]) continue;
        if (n->is_gateway) {
            /* a client keeps one session per gateway: its new session,
             * once established, ends every older one of its own there */
            for (k = 0; k < n->cfg.max_peers; k++) {
                const alkt__peer *p = &n->peers[k], *q;
                uint32_t j;
                if (p->state != ALKT__P_LIVE || !p->session.established_once ||
                    p->session.state != ALKT__S_ACTIVE)
                    continue;
                for (j = k + 1; j < n->cfg.max_peers; j++) {
                    q = &n->peers[j];
                    ALK_CHECK(q->state != ALKT__P_LIVE || !q->session.established_once ||
                                  q->session.state != ALKT__S_ACTIVE || strcmp(q->id, p->id) != 0,
                              "gateway %d: client %s has two established sessions (slots %u and "
                              "%u)", i, p->id, k + 1, j + 1);
                }
            }
            for (k = 0; k < n->cfg.max_relays; k++)
                ALK_CHECK(n->relay_failures[k] == 0 ||
                              n->relay_retry_at[k] <=
                                  w->now + tw_backoff_bound(n, n->relay_failures[k]),
                          "gateway %d: relay %u retried at %llu after %u failures (now %llu)",
                          i, k, (unsigned long long)n->relay_retry_at[k],
                          n->relay_failures[k], (unsigned long long)w->now);
            continue;
        }
        for (k = 0; k < n->cfg.max_peers; k++) {
            const alkt__peer *p = &n->peers[k];
            if (k < TW_BO_PEERS && p->state != ALKT__P_LIVE) {
                w->bo_rounds[i][k] = 0;   /* (a slot taken again starts afresh) */
                w->bo_seen[i][k] = 0;
            }
            if (p->state != ALKT__P_LIVE || p->conn) continue;
            /* a wait in the future is a backoff after a failed round (a
             * failed path, or a connection that worked, retries now):
             * the model counts the rounds itself, and a working session
             * starts the count again - so a count not reset by success
             * waits longer than its rule and is seen */
            if (k < TW_BO_PEERS && p->retry_at > w->now && p->retry_at != w->bo_seen[i][k]) {
                w->bo_seen[i][k] = p->retry_at;
                w->bo_rounds[i][k]++;
                ALK_CHECK(p->retry_at <= w->now + tw_backoff_bound(n, w->bo_rounds[i][k]),
                          "client %d: peer %u waits until %llu (now %llu) after %u failed "
                          "rounds since it was last up (backoff %llu ns at most)",
                          i, k + 1, (unsigned long long)p->retry_at,
                          (unsigned long long)w->now, w->bo_rounds[i][k],
                          (unsigned long long)tw_backoff_bound(n, w->bo_rounds[i][k]));
            }
            if (p->failures == 0) continue;
            ALK_CHECK(p->retry_at <= w->now + tw_backoff_bound(n, p->failures),
                      "client %d: peer %u retried at %llu after %u failed rounds (now %llu)",
                      i, k + 1, (unsigned long long)p->retry_at, p->failures,
                      (unsigned long long)w->now);
        }
    }
}

/* A client on a new address: every gateway it knows is tried again at
 * once, from its preferred path, with no backoff left (and its old
 * connections are gone). */
static ALK_UNUSED void tw_roam(tw_world *w, int side)
{
    alkt_node *n = tw_node(w, side);
    uint32_t k;
    int live = 0;
    alkt_client_roamed(n, w->now);
    memset(w->bo_rounds[side], 0, sizeof w->bo_rounds[side]);   /* no backoff left */
    for (k = 0; k < n->cfg.max_peers; k++) {
        const alkt__peer *p = &n->peers[k];
        if (p->state != ALKT__P_LIVE) continue;
        live = 1;
        ALK_CHECK(p->conn == 0 && p->failures == 0 && p->path == 0 && p->retry_at <= w->now,
                  "client %d roamed: peer %u keeps conn %u, %u failures, path %u, retry at "
                  "%llu (now %llu)", side, k + 1, p->conn, p->failures, p->path,
                  (unsigned long long)p->retry_at, (unsigned long long)w->now);
    }
    ALK_CHECK(!live || alkt_node_poll_timeout(n) <= w->now,
              "client %d roamed: it sleeps until %llu (now %llu)", side,
              (unsigned long long)alkt_node_poll_timeout(n), (unsigned long long)w->now);
}

/* Everything moves once: events, targets, bytes (ends that nothing
 * called since their last poll are not polled again: tw_world.gen). */
static ALK_UNUSED void tw__step(tw_world *w)
{
    int i, k;
    tw__events(w, 1);
    for (i = 0; i < w->n_targets; i++)
        if (w->targets[i].used) tw_target_step(w, &w->targets[i]);
    for (i = 0; i < w->n_links; i++) {
        tw_link *l = &w->links[i];
        if (!l->used) continue;
        for (k = 0; k < 2; k++) tw__send(w, l, k);
        for (k = 0; k < 2 && l->used; k++) tw_recv(w, l, k);
    }
    tw__events(w, 1);
    tw_check_backoff(w);
}

static ALK_UNUSED void tw_step(tw_world *w)
{
    tw_touch_all(w);   /* (the caller may have called any role) */
    tw__step(w);
}

/* The earliest deadline of any role. */
static ALK_UNUSED uint64_t tw_next_deadline(tw_world *w)
{
    uint64_t t = UINT64_MAX, u;
    int i;
    for (i = 0; i < TW_NODES; i++)
        if (w->node_used[i] && (u = alkt_node_poll_timeout(&w->node[i])) < t) t = u;
    for (i = 0; i < w->n_relays; i++)
        if ((u = alkt_relay_poll_timeout(&w->relay[i])) < t) t = u;
    return t;
}

/* End e's poll_timeout, from tw_world.dl while nothing was called on
 * it: a node's answer is its deadline, or its clock once that passed. */
static ALK_UNUSED uint64_t tw__deadline(tw_world *w, int e)
{
    uint64_t t;
    uint64_t u;
    if (w->dl_gen[e] == w->gen[e]) {
        t = w->dl[e];
        if (e < TW_RELAY && t < w->node[e].now) t = w->node[e].now;
        if (!TW__CHECK_QUIET) return t;
        u = e < TW_RELAY ? alkt_node_poll_timeout(&w->node[e])
                         : alkt_relay_poll_timeout(&w->relay[e - TW_RELAY]);
        ALK_CHECK(u == t, "end %d: poll_timeout went from %llu to %llu with no call", e,
                  (unsigned long long)t, (unsigned long long)u);
        return t;
    }
    t = e < TW_RELAY ? alkt_node_poll_timeout(&w->node[e])
                     : alkt_relay_poll_timeout(&w->relay[e - TW_RELAY]);
    w->dl[e] = t;
    w->dl_gen[e] = w->gen[e];
    return t;
}

/* The earliest deadline of any role (tw__deadline's). */
static ALK_UNUSED uint64_t tw__next_deadline(tw_world *w)
{
    uint64_t t = UINT64_MAX, u;
    int i;
    for (i = 0; i < TW_NODES; i++)
        if (w->node_used[i] && (u = tw__deadline(w, i)) < t) t = u;
    for (i = 0; i < w->n_relays; i++)
        if ((u = tw__deadline(w, TW_RELAY + i)) < t) t = u;
    return t;
}

/* Every role's handle_timeout (each learns the time); those whose
 * deadline was due may have events. */
static ALK_UNUSED void tw__timeouts(tw_world *w)
{
    int i;
    for (i = 0; i < TW_NODES; i++)
        if (w->node_used[i]) {
            if (tw__deadline(w, i) <= w->now) tw_touch(w, i);
            alkt_node_handle_timeout(&w->node[i], w->now);
        }
    for (i = 0; i < w->n_relays; i++) {
        if (tw__deadline(w, TW_RELAY + i) <= w->now) tw_touch(w, TW_RELAY + i);
        alkt_relay_handle_timeout(&w->relay[i], w->now);
    }
}

/* Time moves to the earliest deadline (at most to `limit`). */
static ALK_UNUSED void tw__advance(tw_world *w, uint64_t limit)
{
    uint64_t t = tw__next_deadline(w);
    if (t > limit) t = limit;
    if (t > w->now) w->now = t;
    tw__timeouts(w);
}

/* ... called from outside: the caller may have called any role */
static ALK_UNUSED void tw_timeouts(tw_world *w)
{
    tw_touch_all(w);
    tw__timeouts(w);
}

static ALK_UNUSED void tw_advance(tw_world *w, uint64_t limit)
{
    tw_touch_all(w);
    tw__advance(w, limit);
}

/* Bytes in flight or waiting to be sent: the world is not quiet (tw_run's
 * question, between its steps). */
static ALK_UNUSED int tw__busy(tw_world *w)
{
    int i, k;
    for (i = 0; i < w->n_links; i++) {
        tw_link *l = &w->links[i];
        if (!l->used) continue;
        for (k = 0; k < 2; k++) {
            const void *d;
            if (l->pipe[k].len && l->h[1 - k]) return 1;
            /* a close still to reach the other end (a silent one too: a
             * gateway says nothing to a HELLO that proves nothing) */
            if (l->closed[k] && l->h[1 - k] && !l->silent) return 1;
            if (!l->h[k] || l->closed[1 - k]) continue;
            if (tw__dry(w, l, k)) continue;
            if (tw_peek(w, l->side[k], l->h[k], &d) > 0) return 1;
        }
    }
    return 0;
}

/* Run until quiet or `until`: steps, and time jumps when nothing moves. */
static ALK_UNUSED void tw_run(tw_world *w, uint64_t until)
{
    int guard = 0;
    tw_touch_all(w);   /* (the caller may have called any role) */
    while (w->now < until) {
        uint64_t t;
        ALK_CHECK(++guard < 200000, "the world does not settle by %llu",
                  (unsigned long long)until);
        tw__step(w);
        t = tw__next_deadline(w);
        if (guard > 199990)
            alk_trace("busy: next deadline %llu now %llu", (unsigned long long)t,
                      (unsigned long long)w->now);
        if (t <= w->now || tw__busy(w)) {
            /* something due now: run the timeouts, step again (bounded by
             * the guard: a deadline stuck at now is a busy loop) */
            tw__timeouts(w);
            continue;
        }
        tw__advance(w, until);
    }
    tw__step(w);
}

#endif

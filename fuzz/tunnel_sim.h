/* tunnel_sim.h - the whole tunnel under deterministic simulation: the
 * clients, gateways and relays of testkit/tunnel_world.h driven through
 * random transitions by alksim's scenario runner, beside a reference model
 * of what a user expects. One scenario, one driver: fuzz/tunnel_sim.c (the
 * engines, the replay gate, seed mode); a failing input is shrunk with
 * alksim_shrink on the same ts_scenario.
 *
 * World (drawn by setup): 1-3 clients, 1-2 gateways, 1-2 relays; each
 * gateway public, port-forwarded, or behind a full-cone or symmetric NAT
 * (then only a relay reaches it); relays tried first or last; plaintext or
 * encrypted sessions; segment sizes; targets behind the gateways chosen by
 * the destination address (echo, refuse, slow reader, early EOF, never
 * answers).
 *
 * The model knows no protocol: two views of the control plane (what the
 * gateways were told, what the clients were told: resource port filters
 * widened, tightened or removed, authorizations given, revoked, expiring),
 * which gateways crashed, and per channel the bytes sent, what the echo
 * must be, and which outcomes are allowed and why.
 *
 * Transitions (kinds, weighted, swarm mode draws a subset): open, send,
 * shutdown_write, reset, step, run a while, idle long (expiries,
 * keepalives, offer lifetimes), relay killed / restarted, direct path
 * partitioned / healed, a connection dropped silently, a client roams, a
 * gateway or a client crashes and restarts, revoke (at the gateways only
 * or everywhere), authorize again (new expiry), edit a resource (widen,
 * tighten, remove, restore), segment size, targets refusing for a while,
 * an outsider (no secret: recorded HELLOs replayed or changed, drawn
 * bytes at a gateway, GOAWAY / REFUSE / drawn bytes into a live
 * connection).
 *
 * Invariants after every transition:
 *   - an open the client's view does not cover is refused at once
 *     (ALKT_CODE_UNAUTHORIZED), one it covers is not;
 *   - every open has exactly one outcome, one the model allows: OPENED
 *     only after a target took it; refused with TARGET_REFUSED only by a
 *     refusing target; UNAUTHORIZED only when the gateways' view stopped
 *     covering it; a reset only with REVOKED after the gateways' view
 *     stopped covering it, or after a crash;
 *   - a target is granted only inside the gateways' view; a target takes
 *     no byte past what the client sent, and none after a revocation that
 *     covers it;
 *   - bytes arrive in order, exactly once, unchanged, both ways; the EOF
 *     only after every byte; an early-EOF target's EOF exactly at its
 *     limit;
 *   - a session is lost only after its gateway crashed or its
 *     authorization went away; a gateway ends a session only for its
 *     client (its new session, or a protocol it broke), never to make
 *     room for another and never for an outsider;
 *   - a gateway says nothing to an outsider's HELLO that proves nothing,
 *     and gives it no session slot;
 *   - a resume is given only to the client whose secret proves the HELLO
 *     and with the session's token: after an outsider's replay, one made
 *     under another client's name of the same length (its own secret, the
 *     session's token) and one with the client's secret and a wrong token
 *     never get the session nor touch its connection;
 *   - no role's deadline is in the past after handle_timeout; a node with
 *     output queued says so in poll_timeout (a loop sleeping until the
 *     deadline would hold it back);
 *   - a relay holds no gateway offer past its lifetime without a refresh;
 *   - a client's wait after a failed round is at most backoff_min doubled
 *     per failed round since its session with that gateway was last up
 *     (or it roamed or started) - rounds the world counts itself, by the
 *     backoffs it sees start, so success must reset the count.
 * Liveness: heal everything, give every authorization back, then within
 * 300 s of virtual time every channel still open has its whole echo and
 * its EOF, every open is answered (but the never-answering targets), and
 * every client reaches every gateway (an echo probe through each pair). */
#ifndef TUNNEL_SIM_H
#define TUNNEL_SIM_H

#include "../testkit/alk_check.h"
#include "../testkit/tunnel_world.h"

#define TS_CH 64   /* more than every session's channels at once */
#define TS_MAX_SEND 6000u
#define TS_UNIX0 1700000000ull   /* Unix seconds at now == 0 */

enum { TS_FREE, TS_OPENING, TS_OPEN, TS_ENDED };
/* resource port filters */
enum { TS_V_DEFAULT, TS_V_TIGHT, TS_V_WIDE, TS_V_HIGH, TS_V_REMOVED, TS_VARIANTS };

typedef struct ts_ch {
    int state;
    int client, gw;            /* node index; gateway index */
    uint32_t peer, id;         /* the client's */
    uint32_t tpeer;            /* the gateway's peer slot, once granted */
    uint32_t cpeer;            /* fwd: the client's peer slot of the gateway
                                  (two gateways number their channels
                                  alike) */
    uint16_t port;
    int kind;                  /* TW_T_* */
    size_t limit;
    uint32_t tag;              /* the byte pattern */
    size_t sent, got;
    uint64_t taken;            /* bytes the target took */
    uint64_t frozen;           /* ... at most, after a revocation */
    int frozen_set;
    int eof_sent, eof_got, granted, probe;
    int overrun;               /* a hostile client wrote past its window:
                                  the gateway must end the session */
    int udp;                   /* datagrams through a pump each end */
    int listen;                /* a forwarded open (ssh -R): the gateway
                                  listens, nothing flows on it */
    int fwd;                   /* a connection that came to a listen: the
                                  gateway opened it, an echo behind the
                                  client answers */
    int node;                  /* whose session the model writes and reads
                                  (the client's; the gateway's for fwd) */
    uint64_t dsent, dgot, dtaken;   /* datagrams sent, echoed, at the target */
    alkt_dgram_pump dp;
    unsigned char dmem[2 * (TW_DGRAM_MAX + 2)];
    int deny_ok, revoke_ok, refuse_ok, lost_ok;
    int full_ok;               /* a channel of the session had ended at our
                                  end: the gateway's app may hold it still
                                  (not read its EOF yet), so "no free
                                  channel" is an outcome a user can get */
} ts_ch;

typedef struct ts_view {
    int variant[TW_MAX_GATEWAYS];
    int auth[TW_MAX_CLIENTS][TW_MAX_GATEWAYS];
    uint64_t expires[TW_MAX_CLIENTS][TW_MAX_GATEWAYS];   /* Unix seconds */
} ts_view;

typedef struct ts_sim {
    alksim_ctx *ctx;
    tw_world w;
    ts_ch ch[TS_CH];
    ts_view vg, vc;            /* the gateways' and the clients' views */
    int gw_crashed[TW_MAX_GATEWAYS];
    int shaky[TW_MAX_CLIENTS][TW_MAX_GATEWAYS];  /* authorization gone once */
    int hostile[TW_MAX_CLIENTS][TW_MAX_GATEWAYS];   /* its session must end */
    int restarted[TW_MAX_CLIENTS];  /* the client crashed and started again:
                                       its new session ends its old ones */
    int dups[TW_MAX_CLIENTS][TW_MAX_GATEWAYS];      /* duplicate opens sent */
    int forwarded[TW_MAX_CLIENTS][TW_MAX_GATEWAYS]; /* the gateway opened one */
    int any_crash;             /* a gateway crashed: its sessions' channel
                                  ids come again in new sessions, and the
                                  model may not tell an old channel from a
                                  new one with the same id */
    uint32_t tags;
    int healed;
    uint64_t heal_at;
    int small_log;             /* logs of four frames */
    uint64_t rekey;            /* records per key (0: the default) */
    int probed[TW_MAX_CLIENTS][TW_MAX_GATEWAYS];
    alkt_resource res[TW_MAX_GATEWAYS];
    alkt_authorization auth[TW_MAX_CLIENTS * TW_MAX_GATEWAYS + 1];
    alkt_revocation revs[TW_MAX_CLIENTS];
    /* the gateway-decision check: the inputs of the last whole check */
    int grid_valid;
    unsigned grid_starts, grid_turn;
    uint64_t grid_until;       /* the next expiry threshold (w.now scale) */
    ts_view grid_vg;
} ts_sim;

/* The transition kinds: one table, the enum and the names made from it.
 * THE RULE: a new kind goes at the end, and its case in ts_step; nothing
 * else lists kinds. Adding, removing or reordering one changes how every
 * committed input replays (the runner draws one swarm weight per kind from
 * each input and picks a kind by its index), so the committed corpus then
 * tests other scenarios than the ones it was minimised for: `make
 * seeds-check` (a gate stage) fails until fuzz/tunnel_sim.kinds lists the
 * new table, which is updated after corpus/tunnel_sim/ is checked again -
 * make replay clean, make coverage's line coverage of alktunnel.h from the
 * corpus not lower, seeds regenerated (make seeds). */
#define TS_KIND_LIST(X)                                                        \
    X(K_OPEN, "open") X(K_SEND, "send") X(K_SHUT, "shutdown")                   \
    X(K_RESET, "reset") X(K_STEP, "step") X(K_RUN, "run") X(K_IDLE, "idle")    \
    X(K_KILL_RELAY, "kill-relay") X(K_RESTART_RELAY, "restart-relay")          \
    X(K_PARTITION, "partition") X(K_HEAL, "heal") X(K_DROP, "drop-link")       \
    X(K_ROAM, "roam") X(K_CRASH_GW, "crash-gateway")                          \
    X(K_CRASH_CLIENT, "crash-client") X(K_REVOKE, "revoke")                   \
    X(K_AUTHORIZE, "authorize") X(K_EDIT, "edit-resource")                    \
    X(K_SEGMENT, "segment") X(K_REFUSE, "targets-refuse")                     \
    X(K_HOSTILE, "hostile-client") X(K_FORWARD, "forward")                    \
    X(K_OUTSIDER, "outsider")
#define TS_KIND_ENUM(k, name) k,
#define TS_KIND_NAME(k, name) name,
enum { TS_KIND_LIST(TS_KIND_ENUM) K_COUNT };
static const char *const ts_kinds[] = {TS_KIND_LIST(TS_KIND_NAME)};
#undef TS_KIND_ENUM
#undef TS_KIND_NAME

static ts_sim ts__state;

/* A failure seen in a callback: recorded for the runner (first one wins);
 * the verbose rerun also shows the world's own trace. */
#define TS_FAIL(s, ...)                                                        \
    do {                                                                       \
        if (!(s)->ctx->failed && ((s)->ctx->flags & ALKSIM_RUN_VERBOSE))        \
            alk_trace_dump(stderr);                                            \
        (void)alksim_fail((s)->ctx, __VA_ARGS__);                              \
    } while (0)

static unsigned char ts_byte(uint32_t tag, size_t at)
{
    return (unsigned char)(tag * 131u + at * 7u + (at >> 8));
}

static int ts_covers(int variant, uint16_t port)
{
    int high = port >= 8000 && port <= 8100;
    switch (variant) {
    case TS_V_DEFAULT: return port == 80 || high;
    case TS_V_TIGHT: return port == 80;
    case TS_V_WIDE: return 1;
    case TS_V_HIGH: return high;
    default: return 0;
    }
}

/* 1 covered, 0 not, 2 too close to the expiry second to tell. */
static int ts_allowed_udp(const ts_sim *s, const ts_view *v, int c, int g, uint16_t port,
                          int udp)
{
    uint64_t now_ns = TS_UNIX0 * TW_SEC + s->w.now, exp_ns;
    if (!v->auth[c][g] || !ts_covers(v->variant[g], port)) return 0;
    if (udp && !(s->w.res[g].protocols & ALKT_PROTO_UDP)) return 0;
    exp_ns = v->expires[c][g] * TW_SEC;
    if (now_ns + TW_SEC < exp_ns) return 1;
    return now_ns >= exp_ns + TW_SEC ? 0 : 2;
}

/* The first w.now after the current one at which ts_allowed_udp's answer
 * may change by time alone: an authorized pair's expiry less or plus a
 * second (UINT64_MAX: none). */
static uint64_t ts_next_threshold(const ts_sim *s)
{
    uint64_t base = TS_UNIX0 * TW_SEC, best = UINT64_MAX;
    int c, g, k;
    for (g = 0; g < s->w.n_gateways; g++)
        for (c = 0; c < s->w.n_clients; c++) {
            uint64_t exp_ns = s->vg.expires[c][g] * TW_SEC;
            if (!s->vg.auth[c][g]) continue;
            for (k = 0; k < 2; k++) {
                uint64_t t = k ? exp_ns + TW_SEC : exp_ns - TW_SEC;
                if (t < base) continue;
                t -= base;
                if (t > s->w.now && t < best) best = t;
            }
        }
    return best;
}

/* The same for a channel of the model. */
#define ts_allowed(s, v, c, g, port) ts_allowed_udp(s, v, c, g, port, 0)
#define ts_allowed_ch(s, v, h) ts_allowed_udp(s, v, (h)->client, (h)->gw, (h)->port, (h)->udp)

/* Datagram i of a channel: its length (a fifth of them empty) and bytes. */
static size_t ts_dlen(uint32_t tag, uint64_t i)
{
    uint32_t x = tag * 2654435761u + (uint32_t)i * 40503u;
    return (x >> 7) % 5 == 0 ? 0 : (size_t)((x >> 11) % (TW_DGRAM_MAX + 1));
}

static unsigned char ts_dbyte(uint32_t tag, uint64_t i, size_t at)
{
    return ts_byte(tag ^ (uint32_t)(i * 977u), at);
}

/* 1 when d is datagram i of the channel, whole. */
static int ts_dgram_is(const ts_ch *h, uint64_t i, const unsigned char *d, size_t n)
{
    size_t k;
    if (n != ts_dlen(h->tag, i)) return 0;
    for (k = 0; k < n; k++)
        if (d[k] != ts_dbyte(h->tag, i, k)) return 0;
    return 1;
}

/* A view as a control message: every section present. */
static void ts_push(ts_sim *s, const ts_view *v, int to_gateways, int to_clients)
{
    alkt_control c;
    int g, i, n;
    size_t nr = 0, na = 0;
    memset(&c, 0, sizeof c);
    for (g = 0; g < s->w.n_gateways; g++) {
        alkt_resource *r = &s->res[nr];
        if (v->variant[g] == TS_V_REMOVED) continue;
        *r = s->w.res[g];
        r->port_range_count = 0;
        if (v->variant[g] != TS_V_WIDE && v->variant[g] != TS_V_HIGH) {
            r->port_ranges[r->port_range_count].from = 80;
            r->port_ranges[r->port_range_count++].to = 80;
        }
        if (v->variant[g] == TS_V_DEFAULT || v->variant[g] == TS_V_HIGH) {
            r->port_ranges[r->port_range_count].from = 8000;
            r->port_ranges[r->port_range_count++].to = 8100;
        }
        nr++;
    }
    for (i = 0; i < s->w.n_clients; i++)
        for (g = 0; g < s->w.n_gateways; g++) {
            if (!v->auth[i][g]) continue;
            s->auth[na] = s->w.auth[i * s->w.n_gateways + g];
            s->auth[na++].expires = v->expires[i][g];
        }
    c.has_resources = c.has_authorizations = c.has_relays = 1;
    c.resources = s->res;
    c.resource_count = nr;
    c.authorizations = s->auth;
    c.authorization_count = na;
    c.relays = s->w.relays;
    c.relay_count = (size_t)s->w.n_relays;
    for (n = 0; n < TW_NODES; n++)
        if (s->w.node_used[n] && (tw_is_gateway(n) ? to_gateways : to_clients))
            tw_control(&s->w, n, &c);
}

/* Before a revocation of (c, g): the same authorizations again, but that
 * pair's twice and last - where a removal that moves the last entry into
 * the removed one's place must look at the moved entry too. Only the
 * authorizations section: nothing else changes. */
static void ts_push_twice(ts_sim *s, const ts_view *v, int c, int g, int to_gateways,
                          int to_clients)
{
    alkt_control ctl;
    int i, k, n;
    size_t na = 0;
    if (!v->auth[c][g]) return;
    for (i = 0; i < s->w.n_clients; i++)
        for (k = 0; k < s->w.n_gateways; k++) {
            if (!v->auth[i][k] || (i == c && k == g)) continue;
            s->auth[na] = s->w.auth[i * s->w.n_gateways + k];
            s->auth[na++].expires = v->expires[i][k];
        }
    for (k = 0; k < 2; k++) {
        s->auth[na] = s->w.auth[c * s->w.n_gateways + g];
        s->auth[na++].expires = v->expires[c][g];
    }
    memset(&ctl, 0, sizeof ctl);
    ctl.has_authorizations = 1;
    ctl.authorizations = s->auth;
    ctl.authorization_count = na;
    for (n = 0; n < TW_NODES; n++)
        if (s->w.node_used[n] && (tw_is_gateway(n) ? to_gateways : to_clients))
            tw_control(&s->w, n, &ctl);
}

/* The gateways' view changed: what it no longer covers may be reset, and
 * its target may take no more bytes. */
static void ts_gateway_view_changed(ts_sim *s)
{
    int i;
    for (i = 0; i < TS_CH; i++) {
        ts_ch *h = &s->ch[i];
        int allowed;
        if (h->state != TS_OPENING && h->state != TS_OPEN) continue;
        allowed = ts_allowed_ch(s, &s->vg, h);
        if (allowed == 1) continue;
        s->shaky[h->client][h->gw] = 1;
        h->deny_ok = h->revoke_ok = 1;
        /* (within a second of an expiry: it may still go either way) */
        if (allowed == 0 && h->granted && !h->frozen_set && !h->fwd) {
            h->frozen_set = 1;
            h->frozen = h->taken;
        }
    }
}

static ts_ch *ts_find(ts_sim *s, int client, uint32_t peer, uint32_t id)
{
    ts_ch *best = NULL;
    int i;
    for (i = 0; i < TS_CH; i++) {   /* the newest (ids come again) */
        ts_ch *h = &s->ch[i];
        if ((h->state == TS_OPENING || h->state == TS_OPEN) && h->node == client &&
            h->peer == peer && h->id == id && (!best || h->tag > best->tag))
            best = h;
    }
    return best;
}

/* The channel a target was made for (its tag). */
static ts_ch *ts_find_granted(ts_sim *s, uint32_t tag)
{
    int i;
    for (i = 0; i < TS_CH; i++) {
        ts_ch *h = &s->ch[i];
        if (h->state != TS_FREE && h->granted && h->tag == tag) return h;
    }
    return NULL;
}

/* Every byte a target takes. */
static void ts_tap(void *ctx, const tw_target *t, const unsigned char *d, size_t n)
{
    ts_sim *s = (ts_sim *)ctx;
    ts_ch *h = ts_find_granted(s, t->tag);
    size_t i;
    if (!h && s->any_crash) return;
    if (!h) {
        TS_FAIL(s, "a target behind gateway %d took %zu bytes of no open", t->side - TW_GATEWAY,
                n);
        return;
    }
    if (h->taken + n > h->sent)
        TS_FAIL(s, "channel %u: the target took %llu bytes, %zu were sent", h->id,
                (unsigned long long)(h->taken + n), h->sent);
    /* (a forwarded channel's bytes come from the gateway's side, which
     * checks them as they go; what was in flight at a revocation lands) */
    if (ts_allowed_ch(s, &s->vg, h) == 0 && !h->fwd)
        TS_FAIL(s, "channel %u: the target took bytes outside the gateways' view", h->id);
    if (h->frozen_set && h->taken + n > h->frozen)
        TS_FAIL(s, "channel %u: the target took bytes after its authorization went (%llu > %llu)",
                h->id, (unsigned long long)(h->taken + n), (unsigned long long)h->frozen);
    for (i = 0; i < n; i++)
        if (d[i] != ts_byte(h->tag, (size_t)h->taken + i)) {
            TS_FAIL(s, "channel %u: target byte %llu differs", h->id,
                    (unsigned long long)(h->taken + i));
            break;
        }
    h->taken += n;
}

/* Every datagram a datagram target takes: the next one sent, whole. */
static void ts_dtap(void *ctx, const tw_target *t, const unsigned char *d, size_t n)
{
    ts_sim *s = (ts_sim *)ctx;
    ts_ch *h = ts_find_granted(s, t->tag);
    if (!h || !h->udp) {
        TS_FAIL(s, "a datagram target took a datagram of no datagram open");
        return;
    }
    if (h->dtaken >= h->dsent || !ts_dgram_is(h, h->dtaken, d, n))
        TS_FAIL(s, "channel %u: datagram %llu at the target (%zu bytes) is not the one sent "
                   "(%llu sent)", h->id, (unsigned long long)h->dtaken, n,
                (unsigned long long)h->dsent);
    if (ts_allowed_ch(s, &s->vg, h) == 0)
        TS_FAIL(s, "channel %u: a datagram taken outside the gateways' view", h->id);
    h->dtaken++;
}

/* No endpoint left for a new target. */
static int ts_targets_full(const ts_sim *s)
{
    int i;
    for (i = 0; i < TW_TARGETS; i++)
        if (!s->w.targets[i].used) return 0;
    return 1;
}

/* A hostile client on (c, g): its session must end, so any outcome is
 * allowed for the channels on it (but keep's). */
static void ts_session_hostile(ts_sim *s, int c, int g, const ts_ch *keep)
{
    int i;
    s->shaky[c][g] = s->hostile[c][g] = 1;
    for (i = 0; i < TS_CH; i++)
        if (s->ch[i].client == c && s->ch[i].gw == g && &s->ch[i] != keep)
            s->ch[i].lost_ok = 1;
}

static int ts_client_of_id(ts_sim *s, const char *id)
{
    int i;
    for (i = 0; i < s->w.n_clients; i++)
        if (strcmp(id, s->w.ids[i]) == 0) return i;
    return -1;
}

static int ts_client_of(ts_sim *s, const char *ident, size_t len)
{
    int i;
    for (i = 0; i < s->w.n_clients; i++) {
        size_t n = strlen(s->w.ids[i]);
        if (len > n && memcmp(ident, s->w.ids[i], n) == 0 && ident[n] == '/') return i;
    }
    return -1;
}

/* A failing target's channel once the client sent what makes it fail: the
 * target's endpoint error must reset the channel; nothing more is due. */
static int ts_failing(const ts_ch *h)
{
    return h->kind == TW_T_FAIL && (h->udp ? h->dsent : (uint64_t)h->sent) >= h->limit;
}

/* The most echo bytes the client may get back: an early-EOF target's
 * limit; a failing target echoes nothing of the read it fails at. */
static size_t ts_most(const ts_ch *h)
{
    if (h->kind == TW_T_EARLY_EOF && h->limit < h->sent) return h->limit;
    if (h->kind == TW_T_FAIL && h->sent >= h->limit) return h->limit - 1;
    return h->sent;
}

/* Every node event, before the world answers it. */
static void ts_watch(void *ctx, int node, const alkt_role_event *ev)
{
    ts_sim *s = (ts_sim *)ctx;
    ts_ch *h;
    int i;
    if (tw_is_client(node) && ev->type == ALKT_REV_INCOMING) {
        /* (the gateway may have given it up since it sent the open: an
         * ended one matches after any still opening) */
        {
            int k, best = -1;
            for (k = 0; k < 2 * TS_CH && best < 0; k += TS_CH)
                for (i = 0; i < TS_CH; i++) {
                    h = &s->ch[i];
                    if (h->fwd && h->state == (k ? TS_ENDED : TS_OPENING) &&
                        h->client == node && h->cpeer == ev->peer &&
                        h->id == ev->channel && !h->granted &&
                        (best < 0 || h->tag > s->ch[best].tag))
                        best = i;
                }
            i = best < 0 ? TS_CH : best;
            h = &s->ch[i < TS_CH ? i : 0];
        }
        if (i == TS_CH && s->any_crash) return;   /* (ids of a lost session) */
        if (i == TS_CH) {
            TS_FAIL(s, "client %d: a forwarded channel %u nobody made", node, ev->channel);
            return;
        }
        h->granted = 1;
        s->w.grant_tag = h->tag;
        if (ts_targets_full(s)) h->refuse_ok = 1;   /* a refusal is what a user gets */
        alksim_log(s->ctx, "client %d: echo for forwarded channel %u", node, ev->channel);
        return;
    }
    if (tw_is_gateway(node) && (ev->type == ALKT_REV_TARGET_CONNECT || ev->type == ALKT_REV_LISTEN)) {
        int g = node - TW_GATEWAY, c;
        size_t len = 0;
        const char *ident = alkt_session_peer_identity(alkt_node_session(&s->w.node[node],
                                                                        ev->peer), &len);
        c = ident ? ts_client_of(s, ident, len) : -1;
        if (c < 0) {
            TS_FAIL(s, "gateway %d: an open from an unknown client", g);
            return;
        }
        /* (an open the client gave up on may still reach the gateway: an
         * ended one matches after any still opening) */
        {   /* (the newest: a session made again reuses channel ids) */
            int k, best = -1;
            for (k = 0; k < 2 * TS_CH && best < 0; k += TS_CH)
                for (i = 0; i < TS_CH; i++) {
                    h = &s->ch[i];
                    if (h->state == (k ? TS_ENDED : TS_OPENING) && h->client == c &&
                        h->gw == g && h->id == ev->channel && !h->granted && !h->fwd &&
                        h->listen == (ev->type == ALKT_REV_LISTEN) &&
                        (best < 0 || h->tag > s->ch[best].tag))
                        best = i;
                }
            i = best < 0 ? TS_CH : best;
            h = &s->ch[i < TS_CH ? i : 0];
        }
        if (i == TS_CH) {
            TS_FAIL(s, "gateway %d: an open of channel %u nobody is waiting for", g, ev->channel);
            return;
        }
        if (ts_allowed_ch(s, &s->vg, h) == 0)
            TS_FAIL(s, "gateway %d granted channel %u of client %d outside its view", g,
                    ev->channel, c);
        h->granted = 1;
        h->tpeer = ev->peer;
        s->w.grant_tag = h->tag;
        if (h->listen) return;
        if (ts_targets_full(s)) h->refuse_ok = 1;   /* a refusal is what a user gets */
        alksim_log(s->ctx, "gateway %d: target for channel %u of client %d (kind %d)", g,
                   ev->channel, c, h->kind);
        return;
    }
    if (tw_is_gateway(node) && ev->type == ALKT_REV_PEER_DOWN) {
        /* A gateway ends a client's session only for the client: its
         * own new session (it started again), or the client broke the
         * protocol - never to make room for another, never for anyone
         * without the secret. */
        int g = node - TW_GATEWAY, c;
        const alkt__peer *p = ev->peer >= 1 && ev->peer <= s->w.node[node].cfg.max_peers
                                  ? &s->w.node[node].peers[ev->peer - 1] : NULL;
        c = p ? ts_client_of_id(s, p->id) : -1;
        if (c < 0) return;
        if (!s->restarted[c] && !s->hostile[c][g])
            TS_FAIL(s, "gateway %d ended client %d's session (%d) with no reason", g, c,
                    ev->code);
        s->shaky[c][g] = 1;
        for (i = 0; i < TS_CH; i++)
            if (s->ch[i].gw == g && s->ch[i].client == c) s->ch[i].lost_ok = 1;
        return;
    }
    if (tw_is_client(node) && ev->type == ALKT_REV_PEER_DOWN) {
        for (i = 0; i < TS_CH; i++) {
            h = &s->ch[i];
            if ((h->state != TS_OPENING && h->state != TS_OPEN) || h->node != node ||
                h->peer != ev->peer)
                continue;
            if (!h->lost_ok && !h->overrun && !s->shaky[node][h->gw] && !s->gw_crashed[h->gw])
                TS_FAIL(s, "client %d lost its session to gateway %d (%d) with channel %u open",
                        node, h->gw, ev->code, h->id);
            h->state = TS_ENDED;
        }
        return;
    }
    if (ev->type != ALKT_REV_CHANNEL) return;
    h = ts_find(s, node, ev->peer, ev->channel);
    if (!h) return;
    /* (an expiry passed since the last transition) */
    if (ts_allowed_ch(s, &s->vg, h) != 1) h->deny_ok = h->revoke_ok = 1;
    switch (ev->channel_event) {
    case ALKT_EV_OPENED:
        if ((h->state != TS_OPENING || !h->granted || h->kind == TW_T_REFUSE ||
             h->kind == TW_T_NEVER) && !(h->fwd && s->gw_crashed[h->gw]))
            TS_FAIL(s, "channel %u opened (state %d, granted %d, target kind %d)", h->id,
                    h->state, h->granted, h->kind);
        h->state = TS_OPEN;
        break;
    case ALKT_EV_OPEN_FAILED: {
        /* both ends opening at once (a forwarded channel the gateway
         * opened crossing ours) may fill the session's table */
        int crossing = s->forwarded[h->client][h->gw];
        if (ev->code == (int)ALKT__CODE_FULL &&
            (crossing || h->fwd || h->full_ok || s->gw_crashed[h->gw])) {
            h->state = TS_ENDED;
            break;
        }
        if (!(h->lost_ok || (ev->code == (int)ALKT_CODE_TARGET_REFUSED &&
                             (h->kind == TW_T_REFUSE || h->refuse_ok)) ||
              (ev->code == (int)ALKT_CODE_UNAUTHORIZED && h->deny_ok) ||
              (ev->code == (int)ALKT_CODE_REVOKED && h->revoke_ok && h->granted)))
            TS_FAIL(s, "channel %u: open refused with %d (target kind %d, denied %d)", h->id,
                    ev->code, h->kind, h->deny_ok);
        h->state = TS_ENDED;
        break;
    }
    case ALKT_EV_CHANNEL_DONE:
        /* a forwarded channel the gateway itself reset (its listen's
         * authorization went) ends here, with no RESET from the peer */
        if (h->fwd && !(h->lost_ok || h->revoke_ok || (h->eof_sent && h->eof_got)))
            TS_FAIL(s, "forwarded channel %u ended (%d) with no reason", h->id, ev->code);
        h->state = TS_ENDED;   /* (two EOFs, or the gateway's own reset) */
        break;
    case ALKT_EV_RESET:
        /* (a session the gateway let go - out of slots, or its
         * authorization gone - is refused when the client resumes it:
         * every channel on it ends so, also those opened after the
         * gateway let it go and before the client heard) */
        if (!(h->lost_ok || h->overrun || (ev->code == (int)ALKT_CODE_REVOKED && h->revoke_ok) ||
              (ev->code == (int)ALKT_CODE_ENDPOINT_ERROR && ts_failing(h)) ||
              (ev->code == ALKT_ERR_RESUME_REFUSED && s->shaky[h->client][h->gw])))
            TS_FAIL(s, "channel %u: reset with %d the model did not expect", h->id, ev->code);
        h->state = TS_ENDED;
        break;
    default:
        break;
    }
}

/* The client reads what is there; the echo is checked byte by byte. */
/* A datagram channel's pump moves; each datagram back is the next one
 * sent, whole, an empty one included; the EOF only after the last. */
static void ts_read_dgrams(ts_sim *s, ts_ch *h)
{
    int rounds;
    for (rounds = 0; rounds < 8; rounds++) {
        unsigned bits = alkt_dgram_pump_poll(&h->dp);
        const void *d;
        ptrdiff_t n;
        if (bits & ALKT_PUMP_ABORT) {
            /* an aborted pump takes nothing more */
            if (alkt_dgram_pump_send(&h->dp, "", 0) != ALKT_ERR_RESET)
                TS_FAIL(s, "channel %u: an aborted datagram pump took a datagram", h->id);
            return;
        }
        /* (DONE: both directions ended, so the peer's EOF came too) */
        if ((bits & (ALKT_PUMP_SHUT_WRITE | ALKT_PUMP_DONE)) && !h->eof_got) {
            h->eof_got = 1;
            if ((!h->eof_sent || h->dgot != h->dsent || ts_failing(h)) &&
                !s->hostile[h->client][h->gw])
                TS_FAIL(s, "channel %u: EOF after %llu of %llu datagrams (our EOF sent: %d)",
                        h->id, (unsigned long long)h->dgot, (unsigned long long)h->dsent,
                        h->eof_sent);
        }
        if (!(bits & ALKT_PUMP_WRITE) || (bits & ALKT_PUMP_DONE)) return;
        n = alkt_dgram_pump_recv(&h->dp, &d);
        if (n < 0) return;
        if (h->dgot >= h->dsent || !ts_dgram_is(h, h->dgot, (const unsigned char *)d, (size_t)n))
            TS_FAIL(s, "channel %u: datagram %llu back (%ld bytes) is not the one sent", h->id,
                    (unsigned long long)h->dgot, (long)n);
        h->dgot++;
        ALK_CHECK(alkt_dgram_pump_delivered(&h->dp) == ALKT_OK &&
                      alkt_dgram_pump_delivered(NULL) == ALKT_ERR_ARG,
                  "delivered");
    }
}

static void ts_read(ts_sim *s, ts_ch *h)
{
    alkt_session *ss = alkt_node_session(&s->w.node[h->node], h->peer);
    unsigned char b[512];
    int eof = 0;
    ptrdiff_t n;
    size_t i, most = ts_most(h);
    if (h->state != TS_OPEN || !ss || h->listen) return;
    if (h->udp) {
        ts_read_dgrams(s, h);
        return;
    }
    for (;;) {
        n = alkt_channel_recv(ss, h->id, b, sizeof b, &eof);
        if (n <= 0) break;
        for (i = 0; i < (size_t)n; i++)
            if (b[i] != ts_byte(h->tag, h->got + i)) {
                TS_FAIL(s, "channel %u: echo byte %zu differs", h->id, h->got + i);
                return;
            }
        h->got += (size_t)n;
        if (h->got > most)
            TS_FAIL(s, "channel %u: %zu echo bytes, at most %zu expected", h->id, h->got, most);
    }
    if (eof && !h->eof_got) {
        int early = h->kind == TW_T_EARLY_EOF && h->sent >= h->limit;
        h->eof_got = 1;
        /* (a hostile client's made-up EOF is an EOF of ours) */
        if ((h->got != most || !(early || h->eof_sent) || ts_failing(h)) &&
            !(h->lost_ok && s->gw_crashed[h->gw]) &&
            !s->hostile[h->client][h->gw])
            TS_FAIL(s, "channel %u: EOF after %zu of %zu echo bytes (our EOF sent: %d)", h->id,
                    h->got, most, h->eof_sent);
    }
}

static void ts_read_all(ts_sim *s)
{
    int i;
    for (i = 0; i < TS_CH; i++) ts_read(s, &s->ch[i]);
}

static int ts_gateway_node(int g) { return TW_GATEWAY + g; }

/* ---- setup ---- */
static void *ts_setup(alksim_ctx *ctx)
{
    ts_sim *s = &ts__state;
    alksim_source *src = ctx->src;
    int clients = (int)alksim_range(src, 1, TW_MAX_CLIENTS);
    int gateways = (int)alksim_range(src, 1, TW_MAX_GATEWAYS);
    int relays = (int)alksim_range(src, 1, TW_MAX_RELAYS);
    int relay_first = alksim_chance(src, 1, 4);
    /* (encrypted worlds cost an X25519 exchange per connection; the
     * session target and the unit suites are where the cipher is tried) */
    int plaintext = !alksim_chance(src, 1, 32);
    int c, g, n;
    tw_check_names();
    memset(s, 0, offsetof(ts_sim, w));
    memset(&s->ch, 0, sizeof *s - offsetof(ts_sim, ch));
    s->ctx = ctx;
    /* (the world's memory is kept from the last input) */
    tw_init_shape(&s->w, clients, gateways, relays, relay_first, plaintext, 4102444800ull,
                  TW_KEEP_MEM | TW_NO_START);
    s->w.behaviours = 1;
    s->w.accept_listens = s->w.accept_incoming = 1;
    s->w.tap = ts_tap;
    s->w.dtap = ts_dtap;
    s->w.tap_ctx = s;
    s->w.watch = ts_watch;
    s->w.watch_ctx = s;
    s->w.segment = alksim_chance(src, 1, 3) ? (size_t)alksim_range(src, 1, 200)
                                             : (size_t)alksim_range(src, 200, 4000);
    /* from the segment size, without a draw of their own: a log with room
     * for four frames (senders wait for acks: the log's waiters) in one
     * world of four, and in encrypted worlds a new key every 2..14
     * records (REKEY both ways), and 1..16 records sealed at a time
     * (each node its own) */
    s->small_log = s->w.segment % 4 == 0;
    s->rekey = plaintext ? 0 : 2 + s->w.segment % 13;
    /* sessions survive any partition of a scenario: a lost one is a bug */
    for (n = 0; n < TW_NODES; n++) {
        if (!s->w.node_used[n]) continue;
        if (s->small_log)
            s->w.ncfg[n].session.log_size =
                4 * (ALKT_FRAME_HEADER + s->w.ncfg[n].session.max_frame);
        s->w.ncfg[n].session.rekey_records = s->rekey;
        s->w.ncfg[n].session.seal_batch = 1u << ((s->w.segment / 4 + (size_t)n) % 5);
        s->w.ncfg[n].session.resume_window_ns = 100000 * TW_SEC;
        s->w.ncfg[n].max_peers = tw_is_gateway(n) ? 2u * (uint32_t)clients : (uint32_t)gateways;
    }
    for (g = 0; g < gateways; g++) {
        s->w.nat[g] = (int)alksim_weighted(src, (const uint32_t[]){4, 2, 2, 2}, TW_NAT_KINDS);
        s->vg.variant[g] = s->vc.variant[g] = TS_V_DEFAULT;
        for (c = 0; c < clients; c++) {
            s->vg.auth[c][g] = s->vc.auth[c][g] = 1;
            s->vg.expires[c][g] = s->vc.expires[c][g] = 4102444800ull;
        }
    }
    for (n = 0; n < TW_NODES; n++)
        if (s->w.node_used[n]) tw_node_start(&s->w, n);
    /* room at a relay for every pair and spare, and for pairs dropped
     * silently until their idle timeout */
    s->w.rcfg.max_conns = 24;
    s->w.rcfg.idle_timeout_ns = 120 * TW_SEC;
    tw_relay_restart(&s->w);
    /* send-heavy: the drawn weights of opens and sends count more */
    ctx->weights[K_SEND] *= 4;
    ctx->weights[K_OPEN] *= 2;
    alksim_log(ctx, "world: %d clients, %d gateways (nat %d %d), %d relays, relay_first %d, "
                    "plaintext %d, segment %zu, small log %d, rekey every %llu",
               clients, gateways, s->w.nat[0], s->w.nat[1], relays, relay_first, plaintext,
               s->w.segment, s->small_log, (unsigned long long)s->rekey);
    return s;
}

/* A fresh channel slot, or NULL. */
static ts_ch *ts_slot(ts_sim *s)
{
    int i;
    for (i = 0; i < TS_CH; i++)   /* a free one first */
        if (s->ch[i].state == TS_FREE) return &s->ch[i];
    for (i = 0; i < TS_CH; i++) {
        ts_ch *h = &s->ch[i];
        /* an ended one whose target may still take bytes is kept */
        int j, live = 0;
        for (j = 0; h->state == TS_ENDED && h->granted && j < s->w.n_targets; j++)
            live |= s->w.targets[j].used && s->w.targets[j].tag == h->tag;
        if (h->state == TS_FREE || (h->state == TS_ENDED && !live)) return h;
    }
    return NULL;
}

/* Client c opens a channel to gateway g's target; 1 when it is open(ing). */
static int ts_open(ts_sim *s, int c, int g, unsigned last, unsigned third, uint16_t port,
                   int udp, int listen, int probe, int *rc_out)
{
    alkt_open_params p;
    ts_ch *h = ts_slot(s);
    uint32_t peer = 0, id = 0;
    int rc, code = 0, allowed;
    if (rc_out) *rc_out = ALKT_ERR_WOULD_BLOCK;
    if (!h) return 0;
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_DIRECT;
    p.substrate = udp ? ALKT_SUBSTRATE_UDP : ALKT_SUBSTRATE_TCP;
    p.host.kind = ALKT_HOST_IP;
    tw_ip4(&p.host.ip, 10, (unsigned)g + 1, third, last);
    p.port = port;
    if (listen) {   /* the gateway listens on port at bind address host */
        p.kind = ALKT_OPEN_FORWARDED;
        p.listen = port;
        p.port = 0;
        p.host.ip.bytes[3] = 1;
    }
    allowed = ts_allowed_udp(s, &s->vc, c, g, port, udp);
    rc = alkt_client_open(&s->w.node[c], &p, s->w.now, &peer, &id, &code);
    if (rc_out) *rc_out = rc;
    /* (the trace names the substrate as the library does) */
    ALK_CHECK(alkt_substrate_name(p.substrate) &&
                  !strcmp(alkt_substrate_name(p.substrate), udp ? "udp" : "tcp"),
              "alkt_substrate_name(%d)", (int)p.substrate);
    alksim_log(s->ctx, "client %d opens %s 10.%d.%u.%u:%u -> %s (%u/%u)", c,
               alkt_substrate_name(p.substrate), g + 1, third, last, port, alkt_strerror(rc), peer,
               id);
    if (rc == ALKT_ERR_NO_CHANNEL) {
        if (allowed == 1 || code != (int)ALKT_CODE_UNAUTHORIZED)
            TS_FAIL(s, "client %d: open to gateway %d refused (%d) though its view covers it", c,
                    g, code);
        return 0;
    }
    if (allowed == 0)
        TS_FAIL(s, "client %d: open to gateway %d not refused (%s) though its view does not "
                   "cover it", c, g, alkt_strerror(rc));
    if (rc != ALKT_OK) {
        if (rc != ALKT_ERR_NOT_CONNECTED && rc != ALKT_ERR_CHANNELS_FULL &&
            rc != ALKT_ERR_WOULD_BLOCK)
            TS_FAIL(s, "client %d: open gave %s", c, alkt_strerror(rc));
        return 0;
    }
    memset(h, 0, sizeof *h);
    h->state = TS_OPENING;
    h->client = h->node = c;
    h->listen = listen;
    h->gw = g;
    h->peer = peer;
    h->id = id;
    h->port = port;
    h->probe = probe;
    h->tag = ++s->tags;
    h->kind = tw_target_kind(&s->w, &p, &h->limit);
    h->udp = udp;
    if (udp) {
        ALK_CHECK(alkt_dgram_pump_init(&h->dp, alkt_node_session(&s->w.node[c], peer), id,
                                       h->dmem, sizeof h->dmem, TW_DGRAM_MAX) == ALKT_OK,
                  "client datagram pump");
    }
    h->refuse_ok = s->w.refuse_targets;
    if (ts_allowed_ch(s, &s->vg, h) != 1) h->deny_ok = h->revoke_ok = 1;
    {
        int j;
        for (j = 0; j < TS_CH; j++)
            h->full_ok |= &s->ch[j] != h && s->ch[j].state == TS_ENDED && s->ch[j].granted &&
                          s->ch[j].client == c && s->ch[j].gw == g;
    }
    if (s->gw_crashed[g] || s->hostile[c][g]) h->lost_ok = 1;
    return 1;
}

static void ts_send(ts_sim *s, ts_ch *h, size_t n)
{
    alkt_session *ss = alkt_node_session(&s->w.node[h->node], h->peer);
    unsigned char b[1024];
    size_t j;
    ptrdiff_t took;
    if (h->state != TS_OPEN || h->eof_sent || !ss) return;
    if (h->udp) {   /* n datagrams, while the pump takes them */
        uint64_t k;
        for (k = 0; k < n % 6 + 1; k++) {
            size_t len = ts_dlen(h->tag, h->dsent), q;
            int rc;
            for (q = 0; q < len; q++) b[q] = ts_dbyte(h->tag, h->dsent, q);
            (void)alkt_dgram_pump_poll(&h->dp);
            rc = alkt_dgram_pump_send(&h->dp, b, len);
            alksim_log(s->ctx, "client %d sends datagram %llu (%zu bytes) on %u -> %s", h->client,
                       (unsigned long long)h->dsent, len, h->id, alkt_strerror(rc));
            if (rc != ALKT_OK) break;
            h->dsent++;
        }
        return;
    }
    if (n > sizeof b) n = sizeof b;
    if (h->sent + n > TS_MAX_SEND) n = TS_MAX_SEND - h->sent;
    for (j = 0; j < n; j++) b[j] = ts_byte(h->tag, h->sent + j);
    took = alkt_channel_send(ss, h->id, b, n);
    if (took > 0) h->sent += (size_t)took;
    alksim_log(s->ctx, "client %d sends %zu on %u -> %ld", h->client, n, h->id, (long)took);
}

/* An authenticated client that breaks the protocol on a live channel:
 * a second OPEN of its id (the gateway refuses it and leaves the channel
 * as it was), or DATA frames beyond any window the gateway can have
 * granted, delivered in one read (the gateway must end the session: no
 * byte past its credit is ever taken). */
static void ts_hostile(ts_sim *s, ts_ch *h, int overrun)
{
    tw_world *w = &s->w;
    alkt_session *ss = alkt_node_session(&w->node[h->node], h->peer);
    unsigned char b[1024];
    size_t total = 0, want = 4097, i;
    if (!ss || !alkt_session_is_established(ss) || h->udp || h->fwd) return;
    if (!overrun) {
        alkt_open_params p;
        alkt_error err;
        ptrdiff_t n;
        memset(&p, 0, sizeof p);
        p.kind = ALKT_OPEN_DIRECT;
        p.substrate = ALKT_SUBSTRATE_TCP;
        p.host.kind = ALKT_HOST_IP;
        tw_ip4(&p.host.ip, 10, (unsigned)h->gw + 1, 0, 1);
        p.port = 80;
        n = alkt_open_params_encode(&p, (char *)b, sizeof b, &err);
        if (n > 0 && alkt__log_frame(ss, ALKT_FRAME_OPEN, h->id, b, (size_t)n, NULL, 0)) {
            alksim_log(s->ctx, "client %d opens its live channel %u again", h->client, h->id);
            /* each is refused later, from a queue of max_channels (8 here)
             * refusals: more of them in one read than it holds (a silent
             * link, then the resume resending them all) ends the session
             * (found by the campaign: 20 of them, then RESUME_REFUSED). The
             * first few are judged exactly - the live channel survives */
            if (++s->dups[h->client][h->gw] >= 4) ts_session_hostile(s, h->client, h->gw, NULL);
        }
        return;
    }
    if (h->eof_sent || alkt__log_room(ss) < want + 64 || h->sent + want > TS_MAX_SEND ||
        ss->conn != ALKT__C_UP)
        return;
    while (total < want) {
        size_t k = want - total < ss->max_frame ? want - total : ss->max_frame;
        for (i = 0; i < k; i++) b[i] = ts_byte(h->tag, h->sent + total + i);
        ALK_CHECK(alkt__log_frame(ss, ALKT_FRAME_DATA, h->id, b, k, NULL, 0), "log room");
        total += k;
    }
    h->sent += total;
    ts_session_hostile(s, h->client, h->gw, h);
    {   /* all of it in one read: no endpoint reads (and gives credit)
         * while it crosses */
        size_t seg = w->segment;
        int j, k, round;
        w->segment = TW_PIPE;
        for (round = 0; round < 4; round++)
            for (j = 0; j < w->n_links; j++)
                for (k = 0; k < 2; k++)
                    if (w->links[j].used) tw_send(w, &w->links[j], k);
        for (j = 0; j < w->n_links; j++)
            for (k = 0; k < 2; k++)
                if (w->links[j].used) tw_recv(w, &w->links[j], k);
        w->segment = seg;
        /* judged only when it all crossed at once (a silent link, a path
         * being made, a full pipe, or a connection gone on the way - an
         * outsider's bytes end one - then any outcome is allowed): the
         * gateway's session of this client ended, or it still has the
         * connection it all came on */
        h->overrun = 0;
        {
            const alkt_node *gn = &w->node[TW_GATEWAY + h->gw];
            uint32_t q;
            for (q = 0; q < gn->cfg.max_peers; q++) {
                const alkt__peer *gp = &gn->peers[q];
                if (gp->state == ALKT__P_LIVE && gp->session.established_once &&
                    strcmp(gp->id, w->ids[h->client]) == 0 &&
                    (gp->session.state == ALKT__S_CLOSED || (gp->conn && gp->session.conn == ALKT__C_UP)))
                    h->overrun = 1;
            }
        }
        for (j = 0; j < w->n_links; j++)
            for (k = 0; k < 2; k++) {
                tw_link *l = &w->links[j];
                const void *d;
                if (l->used && l->side[k] == h->client && l->h[k] &&
                    (l->silent || l->pipe[k].len || tw_peek(w, h->client, l->h[k], &d)))
                    h->overrun = 0;
            }
        if (!h->overrun) h->lost_ok = 1;
    }
    alksim_log(s->ctx, "client %d writes %zu bytes past its window on channel %u%s", h->client,
               total, h->id, h->overrun ? "" : " (not in one read)");
}

/* Any frame at all from an authenticated client: a made-up type, an id
 * of a live channel or none, drawn bytes. The gateway may end the session
 * (any outcome is allowed on it from then on); its memory stays its own
 * and no byte reaches a target that the client did not send. */
static void ts_hostile_frame(ts_sim *s, ts_ch *h, alksim_source *src)
{
    /* each type with the payload length it wants (-1: any), used half the
     * time, so that made-up frames also pass the size checks. The frames go
     * through the client's own log, which counts them as sequenced: a
     * well-formed frame of a type outside the log (PING, PONG, ACK) that
     * the gateway takes would put the client's resend count off by one
     * and make the client itself send wrong bytes after a resume, so those
     * come only ill-formed (the gateway ends the session); GOAWAY ends it
     * either way. (No DATA: a made-up DATA frame within the window is
     * bytes the client sent, and reaches the target as it should.) */
    static const struct {
        unsigned type;
        int len;
    } types[] = {{ALKT_FRAME_OPEN, -1},   {ALKT_FRAME_OPEN_OK, 0}, {ALKT_FRAME_OPEN_ERR, 2},
                 {ALKT_FRAME_EOF, 0},     {ALKT_FRAME_RESET, 2},   {ALKT_FRAME_WINDOW, 4},
                 {ALKT_FRAME_HELLO, -1},  {ALKT_FRAME_ACK, -1},    {ALKT_FRAME_GOAWAY, 2},
                 {0x17, -1},              {0xff, -1}};
    alkt_session *ss = h->fwd ? NULL : alkt_node_session(&s->w.node[h->node], h->peer);
    unsigned char b[64];
    size_t k = alksim_pick(src, sizeof types / sizeof types[0]);
    unsigned type = types[k].type;
    uint32_t id = alksim_bool(src) ? h->id : (uint32_t)alksim_range(src, 0, 40);
    size_t n = alksim_len(src, sizeof b);
    int fresh = type == ALKT_FRAME_OPEN && alksim_bool(src);
    if (types[k].len >= 0 && alksim_bool(src)) n = (size_t)types[k].len;
    if (type == ALKT_FRAME_ACK && n == 8) n = 7;   /* (ill-formed, as said) */
    /* an OPEN under a new id of the client's (so past the duplicate check,
     * and refused for its drawn params), and perhaps its RESET behind it
     * in the same read, before the refusal went out */
    if (fresh) id = h->id + 2u * (1u + (uint32_t)alksim_range(src, 0, 30));
    if (!ss || !alkt_session_is_established(ss)) return;
    alksim_bytes(src, b, n);
    if (!alkt__log_frame(ss, type, id, b, n, NULL, 0)) return;
    alksim_log(s->ctx, "client %d sends a made-up frame %#x for channel %u (%zu bytes)",
               h->client, type, id, n);
    if (fresh && alksim_bool(src)) {
        b[0] = 0;
        b[1] = 1;
        if (alkt__log_frame(ss, ALKT_FRAME_RESET, id, b, 2, NULL, 0))
            alksim_log(s->ctx, "  and resets channel %u in the same read", id);
    }
    ts_session_hostile(s, h->client, h->gw, NULL);
}

/* A resume of client `victim`'s live session at gateway g that the
 * gateway must refuse, made by a party holding a secret: its name and
 * secret are client `who`'s; the proof is under the session's token
 * (token = 1) or under a token of zeros (0: a token never taken would be
 * that). From a HELLO recorded on the path (the layout):
 * that session's id, a freshness past `who`'s last HELLO there, MACed
 * under `who`'s secret. The gateway must not give it the session - never
 * take the connection into a session, nor touch the victim's connection.
 * (No draws and no time pass: an input means what it meant before.) */
static void ts_false_resume(ts_sim *s, int g, const unsigned char *rec, int victim, int who,
                            int token)
{
    tw_world *w = &s->w;
    alkt_node *gw = &w->node[TW_GATEWAY + g];
    unsigned char b[ALKT_FRAME_HEADER + ALKT__HELLO_MAX], *h = b + ALKT_FRAME_HEADER;
    const alkt_authorization *a;
    alkt_session *cs = NULL;
    const alkt__peer *q = NULL;
    alkt_hmac_sha256_ctx m;
    const alkt__nconn *c;
    uint64_t fresh;
    size_t len = strlen(w->ids[who]), rl = strlen(w->res[g].id), i, n;
    int step;
    uint32_t far, conn;
    uint64_t out0;
    tw_link *l;
    n = ALKT_FRAME_HEADER + ALKT__HELLO_FIXED + len + 1 + rl + ALKT__HELLO_MAC;
    if (n > sizeof b) return;
    for (i = 0; i < gw->cfg.max_peers && !q; i++)
        if (gw->peers[i].state == ALKT__P_LIVE && gw->peers[i].session.established_once &&
            gw->peers[i].session.state == ALKT__S_ACTIVE &&
            strcmp(gw->peers[i].id, w->ids[victim]) == 0)
            q = &gw->peers[i];
    for (i = 0; q && i < w->node[victim].cfg.max_peers && !cs; i++) {
        alkt_session *t = &w->node[victim].peers[i].session;
        if (w->node[victim].peers[i].state == ALKT__P_LIVE && t->established_once &&
            t->state == ALKT__S_ACTIVE &&
            memcmp(t->session_id, q->session.session_id, ALKT_SESSION_ID_SIZE) == 0)
            cs = t;
    }
    if (!cs) return;
    fresh = alkt__get64(rec + ALKT_FRAME_HEADER + ALKT__HELLO_FRESH);
    for (i = 0; i < gw->fresh_count; i++)
        if (strcmp(gw->fresh[i].client, w->ids[who]) == 0 &&
            strcmp(gw->fresh[i].resource, w->res[g].id) == 0 && gw->fresh[i].last >= fresh)
            fresh = gw->fresh[i].last;
    fresh++;
    memcpy(b, rec, ALKT_FRAME_HEADER + ALKT__HELLO_FIXED);   /* the layout */
    b[2] = (unsigned char)((n - ALKT_FRAME_HEADER) >> 8);
    b[3] = (unsigned char)(n - ALKT_FRAME_HEADER);
    h[7] |= 1;                                                    /* a resume */
    memcpy(h + 40, q->session.session_id, ALKT_SESSION_ID_SIZE);  /* of that session */
    alkt__put64(h + 56, q->session.seq_head);                     /* what it has */
    if (token) {
        alkt__resume_proof(cs, h + 8, fresh, h + 64);             /* under its token */
    } else {
        /* under a token of zeros, the proof's rule written out: HMAC(token,
         * "alkt2 resume" || nonce || session id || freshness) */
        static const unsigned char zero[32];
        unsigned char tail[ALKT_SESSION_ID_SIZE + 8];
        memcpy(tail, q->session.session_id, ALKT_SESSION_ID_SIZE);
        alkt__put64(tail + ALKT_SESSION_ID_SIZE, fresh);
        alkt_hmac_sha256_init(&m, zero, sizeof zero);
        alkt_hmac_sha256_update(&m, "alkt2 resume", 12);
        alkt_hmac_sha256_update(&m, h + 8, ALKT_NONCE_SIZE);
        alkt_hmac_sha256_update(&m, tail, sizeof tail);
        alkt_hmac_sha256_final(&m, h + 64);
    }
    alkt__put64(h + ALKT__HELLO_FRESH, fresh);
    h[ALKT__HELLO_IDLEN] = (unsigned char)(len + 1 + rl);
    memcpy(h + ALKT__HELLO_FIXED, w->ids[who], len);
    h[ALKT__HELLO_FIXED + len] = '/';
    memcpy(h + ALKT__HELLO_FIXED + len + 1, w->res[g].id, rl);
    /* the MAC: HMAC(secret, "alkt2 hello" || frame header || the payload
     * up to the MAC), as the header's top comment describes the HELLO */
    a = &w->auth[(size_t)who * (size_t)w->n_gateways + (size_t)g];
    alkt_hmac_sha256_init(&m, a->secret, a->secret_len);
    alkt_hmac_sha256_update(&m, "alkt2 hello", 11);
    alkt_hmac_sha256_update(&m, b, n - ALKT__HELLO_MAC);
    alkt_hmac_sha256_final(&m, b + n - ALKT__HELLO_MAC);
    conn = q->conn;
    if ((l = tw_outsider_connect(w, g)) == NULL) return;
    far = l->h[1];
    out0 = l->out[1];
    tw_outsider_send(w, l, b, n);
    alksim_log(s->ctx, "client %d's session at gateway %d resumed with client %d's secret and "
               "%s token", victim, g, who, token ? "the session's" : "a wrong");
    for (step = 0; step < 8; step++) tw_step(w);
    c = alkt__nfind(gw, far);
    if (c && c->state == ALKT__N_SESSION)
        TS_FAIL(s, "gateway %d gave client %d's session to a resume %s", g, victim,
                who != victim ? "under another name of the same length" : "with a wrong token");
    if (conn && q->state == ALKT__P_LIVE && q->conn != conn)
        TS_FAIL(s, "gateway %d: a resume %s took client %d's connection", g,
                who != victim ? "under another name" : "with a wrong token", victim);
    /* its answer: one whole REFUSE (or silence, when the gateway no
     * longer holds that authorization) - never more, never a cut frame
     * (with segments of 64 bytes or more the whole frame is across) */
    if (l->out[1] - out0 > ALKT_FRAME_HEADER + ALKT__REFUSE_LEN ||
        (w->segment >= 64 && l->out[1] - out0 != 0 &&
         l->out[1] - out0 != ALKT_FRAME_HEADER + ALKT__REFUSE_LEN))
        TS_FAIL(s, "gateway %d answered a resume it must refuse with %llu bytes (a REFUSE is "
                "%u)", g, (unsigned long long)(l->out[1] - out0),
                (unsigned)(ALKT_FRAME_HEADER + ALKT__REFUSE_LEN));
}

/* Resumes the gateway must refuse, after an outsider's replay: of client
 * "phone"'s or "tower"'s session (a recorded HELLO's last byte picks;
 * with fewer clients, any client's),
 * by the other of the two - a name of the same length - with its own
 * secret and the session's token (a token leaked, or one party with two
 * names: a resume is matched to the session of the very client whose
 * secret proves the HELLO, not to a name that looks alike); and by the
 * client itself with a wrong token (the secret alone does not resume a
 * session: a new session it may make, this one's channels it may not
 * take over). */
static void ts_false_resumes(ts_sim *s, int g, const unsigned char *rec, size_t n)
{
    int victim;
    if (n < ALKT_FRAME_HEADER + ALKT__HELLO_FIXED) return;
    if (s->w.n_clients < 3) {
        ts_false_resume(s, g, rec, (int)(rec[n - 1] % (unsigned)s->w.n_clients),
                        (int)(rec[n - 1] % (unsigned)s->w.n_clients), 0);
        return;
    }
    victim = 1 + (int)(rec[n - 1] & 1);
    if (strlen(s->w.ids[1]) == strlen(s->w.ids[2]))
        ts_false_resume(s, g, rec, victim, 3 - victim, 1);
    ts_false_resume(s, g, rec, victim, victim, 0);
}

/* An outsider - no secret, no role: at a gateway a direct path reaches, a
 * client HELLO an observer recorded, replayed as it was or with a byte
 * changed, or drawn bytes; or, in encrypted worlds, bytes into a live
 * connection between a client and a gateway (a GOAWAY or a REFUSE in
 * clear, or drawn bytes), either way. It may cost a connection, never a
 * session (ts_watch: no client loses one, and a gateway ends one only
 * for its client), and the gateway says nothing and keeps nothing for a
 * HELLO that proves nothing. The moment that counts most: a client's
 * connection cut, and the outsider's GOAWAY or REFUSE reaching its new
 * connection before the gateway's answer. */
static void ts_outsider(ts_sim *s, alksim_source *src, int g)
{
    tw_world *w = &s->w;
    alkt_node *gw = &w->node[TW_GATEWAY + g];
    unsigned char b[ALKT_FRAME_HEADER + ALKT__HELLO_MAX];
    size_t n = 0, i;
    unsigned how = (unsigned)alksim_pick(src, 6);
    if (how < 3) {
        unsigned r = w->n_recorded ? (unsigned)alksim_pick(src, TW_RECORDED < w->n_recorded
                                                                     ? TW_RECORDED : w->n_recorded)
                                   : 0;
        int stale = 1;
        uint32_t far;
        uint64_t out0;
        tw_link *l;
        if (how < 2 && w->n_recorded) {
            n = w->recorded_len[r];
            memcpy(b, w->recorded[r], n);
            if (how == 1) b[alksim_pick(src, n)] ^= (unsigned char)alksim_range(src, 1, 255);
            else {
                /* a replay is stale once the gateway took a fresher HELLO
                 * under that name (one never delivered is a fair HELLO) */
                const unsigned char *h = b + ALKT_FRAME_HEADER;
                size_t idl = h[ALKT__HELLO_IDLEN], cut;
                uint64_t fresh = alkt__get64(h + ALKT__HELLO_FRESH);
                char client[ALKT_ID_MAX + 1], res[ALKT_ID_MAX + 1];
                stale = 0;
                for (cut = 0; cut < idl && h[ALKT__HELLO_FIXED + cut] != '/'; cut++) {}
                if (cut > 0 && cut <= ALKT_ID_MAX && idl - cut - 1 <= ALKT_ID_MAX) {
                    memcpy(client, h + ALKT__HELLO_FIXED, cut);
                    client[cut] = 0;
                    memcpy(res, h + ALKT__HELLO_FIXED + cut + 1, idl - cut - 1);
                    res[idl - cut - 1] = 0;
                    for (i = 0; i < gw->fresh_count; i++)
                        if (strcmp(gw->fresh[i].client, client) == 0 &&
                            strcmp(gw->fresh[i].resource, res) == 0 && gw->fresh[i].last >= fresh)
                            stale = 1;
                }
            }
        } else {
            n = alksim_len(src, sizeof b);
            alksim_bytes(src, b, n);
            if (n >= ALKT_FRAME_HEADER && alksim_bool(src)) {
                b[0] = ALKT_FRAME_HELLO;   /* a HELLO's header, for a while */
                b[1] = 0;
                b[2] = (unsigned char)((n - ALKT_FRAME_HEADER) >> 8);
                b[3] = (unsigned char)(n - ALKT_FRAME_HEADER);
                memset(b + 4, 0, 4);
            }
        }
        if ((l = tw_outsider_connect(w, g)) == NULL) return;
        far = l->h[1];
        out0 = l->out[1];
        tw_outsider_send(w, l, b, n);
        alksim_log(s->ctx, "outsider: %s (%zu bytes) at gateway %d",
                   how == 0 ? "a recorded HELLO" : how == 1 ? "a recorded HELLO changed"
                                                          : "drawn bytes",
                   n, g);
        tw_run(w, w->now + TW_SEC / 10);
        if (stale && l->used && l->side[0] == TW_OUTSIDER) {
            const alkt__nconn *c = alkt__nfind(gw, far);
            if (l->out[1] != out0)
                TS_FAIL(s, "gateway %d answered an outsider's HELLO that proves nothing", g);
            if (c && (c->state != ALKT__N_ROUTE || c->route_wait))
                TS_FAIL(s, "gateway %d took an outsider's HELLO that proves nothing (state %d)",
                        g, c->state);
        }
        if (how == 0 && w->n_recorded) ts_false_resumes(s, g, b, n);
        return;
    }
    {
        /* bytes into a live client-gateway connection, to either end */
        static const int codes[] = {ALKT_ERR_RESUME_REFUSED, ALKT_ERR_RESUME_EXPIRED,
                                    ALKT_ERR_BUSY, ALKT_ERR_GOAWAY};
        int start = (int)alksim_pick(src, TW_LINKS), k = (int)alksim_pick(src, 2);
        unsigned what = (unsigned)alksim_pick(src, 3);
        int code = codes[alksim_pick(src, 4)];
        tw_link *l = NULL;
        if (how < 5 || w->plaintext) {
            /* the moment a resume's handshake is under way: a client's
             * connection to g is cut (both ends told), and while its new
             * one waits for the gateway's answer, the outsider's bytes
             * reach it first */
            int cl = -1, step;
            for (i = 0; i < TW_LINKS && cl < 0; i++) {
                tw_link *c = &w->links[((size_t)start + i) % TW_LINKS];
                if (c->used && c->h[0] && c->h[1] && tw_is_client(c->side[0]) &&
                    c->side[1] == TW_GATEWAY + g)
                    cl = c->side[0];
            }
            if (cl < 0) return;
            tw_reset_links_of(w, TW_GATEWAY + g, cl, 1);
            for (step = 0; step < 40 && !l; step++) {
                tw_timeouts(w);
                tw_step(w);
                for (i = 0; i < TW_LINKS && !l; i++) {
                    tw_link *c = &w->links[i];
                    const alkt__nconn *nc;
                    const alkt_session *cs;
                    if (!c->used || !c->h[0] || !c->h[1] || c->side[0] != cl ||
                        c->side[1] != TW_GATEWAY + g || c->pipe[1].len)
                        continue;
                    nc = alkt__nfind(&w->node[cl], c->h[0]);
                    cs = nc && nc->peer ? &w->node[cl].peers[nc->peer - 1].session : NULL;
                    if (cs && cs->conn == ALKT__C_HANDSHAKE && cs->state == ALKT__S_ACTIVE &&
                        c->out[0])
                        l = c;
                }
            }
            k = 1;   /* (toward the client) */
        } else {
            /* (encrypted only: past its handshake nothing protects a
             * plaintext session) */
            for (i = 0; i < TW_LINKS && !l; i++) {
                tw_link *c = &w->links[((size_t)start + i) % TW_LINKS];
                if (c->used && c->h[0] && c->h[1] && !c->closed[0] && !c->closed[1] &&
                    tw_is_client(c->side[0]) && tw_is_gateway(c->side[1]))
                    l = c;
            }
        }
        if (!l) return;
        if (what < 2) {
            n = ALKT_FRAME_HEADER + (what ? ALKT__REFUSE_LEN : 2u);
            memset(b, 0, n);
            b[0] = what ? ALKT_FRAME_REFUSE : ALKT_FRAME_GOAWAY;
            b[3] = (unsigned char)(n - ALKT_FRAME_HEADER);
            b[8] = (unsigned char)((unsigned)-code >> 8);
            b[9] = (unsigned char)-code;
            if (what) alksim_bytes(src, b + 10, 32);
        } else {
            n = (size_t)alksim_range(src, 1, 64);
            alksim_bytes(src, b, n);
        }
        {   /* (after what that end sent: the pipe is the path) */
            tw_pipe *p = &l->pipe[k];
            if (p->len + n > TW_PIPE) return;
            for (i = 0; i < n; i++) p->buf[(p->head + p->len + i) % TW_PIPE] = b[i];
            p->len += n;
        }
        alksim_log(s->ctx, "outsider: %zu bytes (%s) into the connection of client %d and "
                   "gateway %d, toward the %s", n,
                   what == 0 ? "a GOAWAY" : what == 1 ? "a REFUSE" : "drawn",
                   l->side[0], l->side[1] - TW_GATEWAY, k ? "client" : "gateway");
    }
}

/* An open channel: listens = 0 one that carries data, 1 a listen. */
static ts_ch *ts_pick(ts_sim *s, alksim_source *src, int listens)
{
    int i, start = (int)alksim_pick(src, TS_CH);
    for (i = 0; i < TS_CH; i++) {
        ts_ch *h = &s->ch[(start + i) % TS_CH];
        if (h->state == TS_OPEN && h->listen == listens) return h;
    }
    return NULL;
}

#define ts_pick_open(s, src) ts_pick(s, src, 0)

/* A connection comes to the gateway's listener of listen channel l: the
 * gateway opens a channel back to the client, the model writes and reads
 * it at the gateway's end (the client's echo answers). */
static void ts_forward(ts_sim *s, ts_ch *l)
{
    ts_ch *h = ts_slot(s);
    alkt_ip origin;
    uint32_t fch = 0;
    int rc;
    if (!h) return;
    tw_ip4(&origin, 203, 0, 113, 9);
    /* without an origin or an output, or on a client: refused, and the
     * output (when there is one) cleared */
    fch = 77;
    ALK_CHECK(alkt_gateway_forward(&s->w.node[TW_GATEWAY + l->gw], l->tpeer, l->id, NULL,
                                   &fch) == ALKT_ERR_ARG &&
                  alkt_gateway_forward(&s->w.node[TW_GATEWAY + l->gw], l->tpeer, l->id,
                                       &origin, NULL) == ALKT_ERR_ARG &&
                  alkt_gateway_forward(&s->w.node[l->client], l->peer, l->id, &origin,
                                       &fch) == ALKT_ERR_ARG,
              "gateway_forward without its arguments, or on a client");
    fch = 77;
    rc = alkt_gateway_forward(&s->w.node[TW_GATEWAY + l->gw], l->tpeer, l->id, &origin, &fch);
    ALK_CHECK(rc == ALKT_OK || rc == ALKT_ERR_ARG || fch == 0,
              "gateway_forward failed (%s) and left its output %u", alkt_strerror(rc), fch);
    alksim_log(s->ctx, "gateway %d: a connection to the listen of channel %u -> %s (%u)", l->gw,
               l->id, alkt_strerror(rc), fch);
    {
        /* the gateway's answer is the model's: a listen its view no longer
         * covers forwards nothing; one it covers, while the gateway still
         * holds the listen, is not turned away as unauthorized */
        alkt_node *gw = &s->w.node[TW_GATEWAY + l->gw];
        int allowed = ts_allowed_ch(s, &s->vg, l);
        const alkt__grant *lg = l->tpeer && l->tpeer <= gw->cfg.max_peers &&
                                        gw->peers[l->tpeer - 1].state == ALKT__P_LIVE
                                    ? alkt__grant_find(&gw->peers[l->tpeer - 1], l->id)
                                    : NULL;
        if (rc == ALKT_OK && allowed == 0)
            TS_FAIL(s, "gateway %d forwarded a connection to the listen of channel %u, which "
                    "its view does not cover (client %d, port %u)", l->gw, l->id, l->client,
                    (unsigned)l->port);
        if (rc == ALKT_ERR_NO_CHANNEL && allowed == 1 && lg &&
            lg->params.kind == ALKT_OPEN_FORWARDED)
            TS_FAIL(s, "gateway %d refused a connection to the listen of channel %u, which its "
                    "view covers (client %d, port %u)", l->gw, l->id, l->client,
                    (unsigned)l->port);
    }
    if (rc != ALKT_OK) return;
    memset(h, 0, sizeof *h);
    h->state = TS_OPENING;
    h->fwd = 1;
    h->node = TW_GATEWAY + l->gw;
    h->client = l->client;
    h->gw = l->gw;
    h->peer = l->tpeer;
    h->cpeer = l->peer;
    h->id = fch;
    h->port = l->port;
    h->kind = TW_T_ECHO;
    h->tag = ++s->tags;
    s->forwarded[h->client][h->gw] = 1;
    if (ts_allowed_ch(s, &s->vg, h) != 1) h->deny_ok = h->revoke_ok = 1;
    if (l->lost_ok || l->revoke_ok || s->gw_crashed[h->gw] || s->hostile[h->client][h->gw])
        h->lost_ok = 1;
}

static void ts_settle(ts_sim *s)
{
    tw_step(&s->w);
    ts_read_all(s);
    tw_timeouts(&s->w);
}

static int ts_step(alksim_ctx *ctx, void *state, unsigned kind)
{
    ts_sim *s = (ts_sim *)state;
    tw_world *w = &s->w;
    alksim_source *src = ctx->src;
    int c = (int)alksim_pick(src, (uint64_t)w->n_clients);
    int g = (int)alksim_pick(src, (uint64_t)w->n_gateways);
    ts_ch *h;
    int i;
    switch (kind) {
    case K_OPEN: {
        static const uint16_t ports[] = {80, 80, 8000, 8042, 22};
        unsigned last = (unsigned)alksim_range(src, 1, 254);
        int how = (int)alksim_pick(src, 6);   /* tcp, udp, listen */
        /* (one draw per statement: C leaves the order of a call's
         * arguments open, and the same input was another scenario under
         * clang, which the campaigns build with, than under gcc, which
         * replays the corpus; this is the order gcc drew them in) */
        uint16_t port = ports[alksim_pick(src, 5)];
        unsigned third = (unsigned)alksim_range(src, 0, 40);
        ts_open(s, c, g, last, third, port, how == 4, how == 5, 0, NULL);
        break;
    }
    case K_SEND:
        if ((h = ts_pick_open(s, src)) != NULL) ts_send(s, h, alksim_len(src, 1024));
        break;
    case K_SHUT:
        if ((h = ts_pick_open(s, src)) != NULL && !h->eof_sent) {
            alkt_session *ss = alkt_node_session(&w->node[h->node], h->peer);
            if (h->udp) h->eof_sent = alkt_dgram_pump_endpoint_eof(&h->dp) == ALKT_OK;
            else if (ss && alkt_channel_shutdown_write(ss, h->id) == ALKT_OK) h->eof_sent = 1;
            alksim_log(ctx, "client %d shuts channel %u", h->client, h->id);
        }
        break;
    case K_RESET:
        if ((h = ts_pick_open(s, src)) != NULL) {
            alkt_session *ss = alkt_node_session(&w->node[h->node], h->peer);
            if (h->udp) {
                int was = (h->dp.flags & ALKT__DF_ABORT) != 0;
                if (alkt_dgram_pump_endpoint_failed(&h->dp, 7) == ALKT_OK) h->state = TS_ENDED;
                /* the pump it aborts keeps the endpoint's code */
                if (!was && (h->dp.flags & ALKT__DF_ABORT))
                    ALKSIM_CHECK(ctx, h->dp.code == 7, "channel %u: aborted with %d, not 7",
                                 h->id, h->dp.code);
            } else if (ss && alkt_channel_reset(ss, h->id, 7) == ALKT_OK) {
                h->state = TS_ENDED;
            }
            alksim_log(ctx, "client %d resets channel %u", h->client, h->id);
        }
        break;
    case K_STEP:
        break;
    case K_RUN:
        tw_run(w, w->now + alksim_range(src, 1, 30) * (TW_SEC / 10));
        break;
    case K_IDLE:
        alksim_log(ctx, "idle");
        tw_run(w, w->now + alksim_range(src, 5, 70) * TW_SEC);
        break;
    case K_KILL_RELAY: {
        int k = (int)alksim_pick(src, (uint64_t)w->n_relays);
        if (!w->relay_down[k]) tw_kill_relay_k(w, k);
        break;
    }
    case K_RESTART_RELAY: {
        int k = (int)alksim_pick(src, (uint64_t)w->n_relays);
        if (w->relay_down[k]) alksim_log(ctx, "relay %d restarted", k);
        w->relay_down[k] = 0;
        break;
    }
    case K_PARTITION:
        if (!w->direct_down[g]) tw_partition_gateway(w, g, 1);
        break;
    case K_HEAL:
        if (w->direct_down[g]) tw_partition_gateway(w, g, 0);
        break;
    case K_DROP: {
        int start = (int)alksim_pick(src, TW_LINKS);
        for (i = 0; i < TW_LINKS; i++)
            if (w->links[(start + i) % TW_LINKS].used && !w->links[(start + i) % TW_LINKS].silent) {
                tw_drop_link(w, (start + i) % TW_LINKS);
                break;
            }
        break;
    }
    case K_ROAM:
        alksim_log(ctx, "client %d roams", c);
        for (i = 0; i < w->n_links; i++)
            if (w->links[i].used && (w->links[i].side[0] == c || w->links[i].side[1] == c))
                tw_drop_link(w, i);
        tw_roam(w, c);
        break;
    case K_CRASH_GW:
        s->gw_crashed[g] = s->any_crash = 1;
        for (i = 0; i < TS_CH; i++) {
            if (s->ch[i].gw == g) s->ch[i].lost_ok = 1;
            /* the gateway's own ends (forwarded channels) are gone */
            if (s->ch[i].gw == g && s->ch[i].fwd && s->ch[i].state != TS_FREE)
                s->ch[i].state = TS_ENDED;
        }
        tw_crash_node(w, ts_gateway_node(g));
        ts_push(s, &s->vg, 1, 0);   /* it starts with the control plane's view */
        break;
    case K_CRASH_CLIENT:
        s->restarted[c] = 1;
        for (i = 0; i < TS_CH; i++)
            if (s->ch[i].client == c && s->ch[i].state != TS_FREE) s->ch[i].state = TS_ENDED;
        tw_crash_node(w, c);
        ts_push(s, &s->vc, 0, 1);
        break;
    case K_REVOKE: {
        int everywhere = alksim_bool(src);
        alkt_control ctl;
        int n;
        alksim_log(ctx, "revoke client %d at gateway %d (%s)", c, g,
                   everywhere ? "everywhere" : "gateways only");
        ts_push_twice(s, &s->vg, c, g, 1, 0);
        if (everywhere) ts_push_twice(s, &s->vc, c, g, 0, 1);
        memset(&ctl, 0, sizeof ctl);
        strcpy(s->revs[0].client, w->ids[c]);
        strcpy(s->revs[0].resource, w->res[g].id);
        ctl.has_revocations = 1;
        ctl.revocations = s->revs;
        ctl.revocation_count = 1;
        s->vg.auth[c][g] = 0;
        if (everywhere) s->vc.auth[c][g] = 0;
        for (n = 0; n < TW_NODES; n++)
            if (w->node_used[n] && (tw_is_gateway(n) || everywhere))
                tw_control(w, n, &ctl);
        ts_gateway_view_changed(s);
        break;
    }
    case K_AUTHORIZE: {
        uint64_t secs = alksim_chance(src, 1, 2) ? 4102444800ull
                      : TS_UNIX0 + w->now / TW_SEC + alksim_range(src, 3, 120);
        alksim_log(ctx, "authorize client %d at gateway %d until %llu", c, g,
                   (unsigned long long)secs);
        s->vg.auth[c][g] = s->vc.auth[c][g] = 1;
        s->vg.expires[c][g] = s->vc.expires[c][g] = secs;
        ts_push(s, &s->vg, 1, 0);
        ts_push(s, &s->vc, 0, 1);
        ts_gateway_view_changed(s);
        break;
    }
    case K_EDIT: {
        int v = (int)alksim_pick(src, TS_VARIANTS), everywhere = alksim_bool(src);
        alksim_log(ctx, "resource of gateway %d: filter %d (%s)", g, v,
                   everywhere ? "everywhere" : "gateways only");
        s->vg.variant[g] = v;
        if (everywhere) s->vc.variant[g] = v;
        ts_push(s, &s->vg, 1, 0);
        if (everywhere) ts_push(s, &s->vc, 0, 1);
        ts_gateway_view_changed(s);
        break;
    }
    case K_SEGMENT:
        w->segment = (size_t)alksim_range(src, 1, 4000);
        alksim_log(ctx, "segment %zu", w->segment);
        break;
    case K_FORWARD:
        if ((h = ts_pick(s, src, 1)) != NULL) ts_forward(s, h);
        break;
    case K_OUTSIDER:
        ts_outsider(s, src, g);
        break;
    case K_HOSTILE:
        if ((h = ts_pick_open(s, src)) != NULL) {
            int how = (int)alksim_pick(src, 3);
            if (how < 2) ts_hostile(s, h, how);
            else ts_hostile_frame(s, h, src);
        }
        break;
    case K_REFUSE:
        w->refuse_targets = !w->refuse_targets;
        alksim_log(ctx, "targets %s", w->refuse_targets ? "refuse" : "accept");
        if (w->refuse_targets)
            for (i = 0; i < TS_CH; i++)
                if (s->ch[i].state == TS_OPENING) s->ch[i].refuse_ok = 1;
        break;
    default:
        break;
    }
    ts_settle(s);
    /* what expired meanwhile at the gateways may be reset */
    ts_gateway_view_changed(s);
    ctx->now = w->now;
    return ctx->failed ? ALKSIM_ERR_FAILED : 0;
}

/* ---- invariants ---- */
static int ts_check(alksim_ctx *ctx, void *state)
{
    ts_sim *s = (ts_sim *)state;
    tw_world *w = &s->w;
    int n, i, k;
    if (ctx->failed) return ALKSIM_ERR_FAILED;
    ALKSIM_CHECK(ctx, tw_next_deadline(w) >= w->now, "a deadline in the past (%llu < %llu)",
                 (unsigned long long)tw_next_deadline(w), (unsigned long long)w->now);
    /* queued output is a deadline of now */
    for (n = 0; n < TW_NODES; n++) {
        uint64_t t;
        if (!w->node_used[n]) continue;
        t = alkt_node_poll_timeout(&w->node[n]);
        for (i = 0; i < w->n_links; i++)
            for (k = 0; k < 2; k++) {
                tw_link *l = &w->links[i];
                const void *d;
                if (!l->used || l->side[k] != n || !l->h[k]) continue;
                ALKSIM_CHECK(ctx, t <= w->now || tw_peek(w, n, l->h[k], &d) == 0,
                             "node %d has output queued but sleeps until %llu (now %llu)", n,
                             (unsigned long long)t, (unsigned long long)w->now);
            }
    }
    /* each gateway's own decision on an open (alkt_gateway_authorize, no
     * side effects) is the model's, for every client, port and protocol
     * (except within a second of an expiry): inside the gateway's network
     * as the model says, outside it (10.(g+5).x) never, a unix socket
     * never (no resource covers one). Every pair is checked whenever what
     * the model decides from may have changed - its view, a node started
     * anew, an expiry threshold passed - and otherwise one (gateway,
     * client) pair per step in turn, so a decision that drifts by itself
     * is still seen within a few steps (the whole grid each step was a
     * fifth of the target's time) */
    {
        static const uint16_t ports[] = {80, 22, 8000, 8042, 8100, 8101};
        int c, g, sub, outside, pairs = w->n_gateways * w->n_clients;
        int all = !s->grid_valid || s->grid_starts != w->node_starts ||
                  w->now >= s->grid_until || memcmp(&s->grid_vg, &s->vg, sizeof s->vg) != 0;
        int turn = all ? -1 : (int)(s->grid_turn++ % (unsigned)pairs);
        size_t pi;
        alkt_open_params p;
        memset(&p, 0, sizeof p);
        p.kind = ALKT_OPEN_DIRECT;
        p.host.kind = ALKT_HOST_IP;
        if (all) {
            s->grid_valid = 1;
            s->grid_starts = w->node_starts;
            memcpy(&s->grid_vg, &s->vg, sizeof s->vg);
            s->grid_until = ts_next_threshold(s);
        }
        for (g = 0; g < w->n_gateways; g++)
            for (c = 0; c < w->n_clients; c++)
                for (pi = 0; pi < sizeof ports / sizeof ports[0] &&
                             (turn < 0 || turn == g * w->n_clients + c);
                     pi++)
                    for (sub = 0; sub < 4; sub++) {
                        int udp = sub == 1, unix_socket = sub == 2, rc;
                        int want = ts_allowed_udp(s, &s->vg, c, g, ports[pi], udp);
                        size_t res = 99;
                        outside = sub == 3;
                        if (want == 2) continue;
                        if (unix_socket || outside) want = 0;
                        p.substrate = udp ? ALKT_SUBSTRATE_UDP
                                    : unix_socket ? ALKT_SUBSTRATE_UNIX : ALKT_SUBSTRATE_TCP;
                        tw_ip4(&p.host.ip, 10, (unsigned)g + (outside ? 5u : 1u), (unsigned)pi, 1);
                        p.port = ports[pi];
                        rc = alkt_gateway_authorize(&w->node[ts_gateway_node(g)], w->ids[c], &p,
                                                    w->now, &res);
                        ALKSIM_CHECK(ctx, (rc == 0) == (want == 1),
                                     "gateway %d decides %d (resource %zu) on client %d's %s "
                                     "open to port %u%s; the model says %s",
                                     g, rc, res, c, alkt_substrate_name(p.substrate), ports[pi],
                                     outside ? " outside its network" : "",
                                     want ? "covered" : "not covered");
                    }
    }
    /* a relay stays within its configured connections */
    for (i = 0; i < w->n_relays; i++) {
        alkt_relay_stats st;
        alkt_relay_stats_get(&w->relay[i], &st);
        ALKSIM_CHECK(ctx, st.conns <= w->rcfg.max_conns &&
                              st.offers + st.waiting + 2 * st.pairs <= st.conns,
                     "relay %d: %u connections (%u offers, %u waiting, %u pairs), at most %u",
                     i, st.conns, st.offers, st.waiting, st.pairs, w->rcfg.max_conns);
    }
    /* a relay lets an offer go once its lifetime passed without a refresh */
    for (i = 0; i < w->n_links; i++)
        for (k = 0; k < 2; k++) {
            tw_link *l = &w->links[i];
            if (!l->used || l->side[k] < TW_RELAY || l->side[k] == TW_OUTSIDER || !l->h[k] ||
                l->out[k] ||
                !tw_is_gateway(l->side[1 - k]))
                continue;
            ALKSIM_CHECK(ctx, w->now <= l->last_in[k] + 30 * TW_SEC + TW_SEC / 1000,
                         "relay %d holds a gateway's offer %llu ms after its last refresh",
                         l->side[k] - TW_RELAY,
                         (unsigned long long)((w->now - l->last_in[k]) / 1000000));
        }
    return 0;
}

/* ---- liveness ---- */
static void ts_heal(alksim_ctx *ctx, void *state)
{
    ts_sim *s = (ts_sim *)state;
    tw_world *w = &s->w;
    int g, c, k;
    alksim_log(ctx, "heal: paths, relays, targets, every authorization");
    for (g = 0; g < w->n_gateways; g++) {
        if (w->direct_down[g]) tw_partition_gateway(w, g, 0);
        s->vg.variant[g] = s->vc.variant[g] = TS_V_DEFAULT;
        for (c = 0; c < w->n_clients; c++) {
            s->vg.auth[c][g] = s->vc.auth[c][g] = 1;
            s->vg.expires[c][g] = s->vc.expires[c][g] = 4102444800ull;
        }
    }
    for (k = 0; k < w->n_relays; k++) w->relay_down[k] = 0;
    w->refuse_targets = 0;
    w->segment = 1500;
    ts_push(s, &s->vg, 1, 1);
    s->healed = 1;
    s->heal_at = w->now;
}

static int ts_quiesce(alksim_ctx *ctx, void *state)
{
    ts_sim *s = (ts_sim *)state;
    tw_world *w = &s->w;
    int i, c, g, rc, pending = 0;
    /* an echo probe through every client-gateway pair */
    for (c = 0; c < w->n_clients; c++)
        for (g = 0; g < w->n_gateways; g++) {
            if (s->probed[c][g]) continue;
            /* (a channel the user keeps open, and which completes below,
             * proves the path as well: the session may have no free one) */
            if (ts_open(s, c, g, 1, 0, 80, 0, 0, 1, &rc)) {
                s->probed[c][g] = 1;
                continue;
            }
            pending = 1;
            if (rc != ALKT_ERR_CHANNELS_FULL) continue;
            /* every channel taken: the probe goes over one the user keeps
             * open (or, with none that echoes, the full session is proof
             * enough) */
            s->probed[c][g] = 1;
            for (i = 0; i < TS_CH; i++) {
                ts_ch *h = &s->ch[i];
                if (h->state == TS_OPEN && h->client == c && h->gw == g && !h->lost_ok &&
                    !h->eof_sent && !h->udp && !h->listen && !h->fwd &&
                    (h->kind == TW_T_ECHO || h->kind == TW_T_SLOW)) {
                    h->probe = 1;
                    break;
                }
            }
        }
    for (i = 0; i < TS_CH; i++) {
        ts_ch *h = &s->ch[i];
        if (h->state == TS_OPEN && h->probe && !h->eof_sent) {
            if (h->sent < 300) ts_send(s, h, 300 - h->sent);
            if (h->sent >= 300 || h->sent == TS_MAX_SEND) {
                alkt_session *ss = alkt_node_session(&w->node[h->node], h->peer);
                if (ss && alkt_channel_shutdown_write(ss, h->id) == ALKT_OK) h->eof_sent = 1;
            }
        }
    }
    tw_run(w, w->now + 2 * TW_SEC);
    ts_read_all(s);
    ctx->now = w->now;
    if (ctx->failed) return ALKSIM_ERR_FAILED;
    for (i = 0; i < TS_CH; i++) {
        ts_ch *h = &s->ch[i];
        size_t most = ts_most(h);
        int early = h->kind == TW_T_EARLY_EOF && h->sent >= h->limit;
        if (h->lost_ok || h->state == TS_FREE || h->state == TS_ENDED) continue;
        if (h->overrun || ts_failing(h)) {   /* open still: not ended yet */
            pending = 1;
            continue;
        }
        if (h->state == TS_OPENING && h->kind != TW_T_NEVER) pending = 1;
        if (h->state == TS_OPEN &&
            (h->got < most || h->dgot < h->dsent || ((h->eof_sent || early) && !h->eof_got) ||
             (h->probe && !h->eof_got)))
            pending = 1;
    }
    if (!pending) {
        alksim_log(ctx, "quiet %llu ms after healing",
                   (unsigned long long)((w->now - s->heal_at) / 1000000));
        return 0;
    }
    if (w->now - s->heal_at > 300 * TW_SEC) {
        for (i = 0; i < w->n_relays; i++) {
            alkt_relay_stats st;
            alkt_relay_stats_get(&w->relay[i], &st);
            alksim_log(ctx, "relay %d: %u connections, %u offers, %u waiting, %u pairs", i,
                       st.conns, st.offers, st.waiting, st.pairs);
        }
        if (ctx->flags & ALKSIM_RUN_VERBOSE) alk_trace_dump(stderr);
        for (c = 0; c < w->n_clients; c++)
            for (g = 0; g < w->n_gateways; g++)
                ALKSIM_CHECK(ctx, s->probed[c][g],
                             "client %d never reached gateway %d after healing (nat %d)", c, g,
                             w->nat[g]);
        for (i = 0; i < TS_CH; i++) {
            ts_ch *h = &s->ch[i];
            size_t most = ts_most(h);
            if (h->lost_ok || (h->state != TS_OPEN && h->state != TS_OPENING)) continue;
            ALKSIM_CHECK(ctx, !h->overrun,
                         "channel %u of client %d: the gateway took a write past its window "
                         "and kept the session", h->id, h->client);
            ALKSIM_CHECK(ctx, !(h->state == TS_OPEN && ts_failing(h)),
                         "channel %u of client %d: its target failed (%s %zu of limit %zu) "
                         "and the channel stays open", h->id, h->client, h->udp ? "datagram" : "byte",
                         h->udp ? (size_t)h->dsent : h->sent, h->limit);
            ALKSIM_CHECK(ctx, h->state == TS_OPEN || h->kind == TW_T_NEVER,
                         "channel %u of client %d never answered (target kind %d)", h->id,
                         h->client, h->kind);
            ALKSIM_CHECK(ctx, h->state != TS_OPEN || h->dgot == h->dsent,
                         "channel %u of client %d: %llu of %llu datagrams back after healing",
                         h->id, h->client, (unsigned long long)h->dgot,
                         (unsigned long long)h->dsent);
            ALKSIM_CHECK(ctx, h->state != TS_OPEN || (h->got == most && (h->eof_got || !h->eof_sent)),
                         "channel %u of client %d: %zu of %zu echo bytes, EOF %d/%d after "
                         "healing",
                         h->id, h->client, h->got, most, h->eof_sent, h->eof_got);
        }
        return alksim_fail(ctx, "not quiet 300 s after healing");
    }
    return 1;
}

/* The run's end: alkt_node_wipe must leave no session key (the next
 * run makes every node again). */
static void ts_teardown(void *state)
{
    tw_wipe_check(&((ts_sim *)state)->w);
}

static const alksim_scenario ts_scenario = {
    "tunnel_sim", ts_kinds, K_COUNT, ts_setup, ts_step, ts_check,
    ts_heal, ts_quiesce, ts_teardown, 120, 200, 1};

#endif

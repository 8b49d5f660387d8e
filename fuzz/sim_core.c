/* sim_core.c - fuzz target `sim_core`: alksim.h checked against reference
 * models, driven by alksim's own scenario runner.
 *
 * Transitions mix the network, the disk and the event queue. Invariants
 * after every transition:
 *   network - conservation (sent + duplicated == delivered + lost + drops +
 *     in flight); a delivered datagram carries exactly the bytes sent under
 *     its id, arrives no earlier than the link latency and no later than the
 *     latency + jitter bound, is never delivered more often than the copies
 *     the network drew, never across a partition in force at arrival; loss,
 *     duplication and MTU drops happen only on links configured for them;
 *   disk - reads return the model's newest data; after a crash every sector
 *     holds its durable content or one of its cached versions; data flushed
 *     before the crash always survives; injected errors hit exactly the
 *     operation they were armed for and change nothing;
 *   queue - pops come out in (time, insertion) order, matching a sorted
 *     reference;
 *   streams - each direction delivers exactly the bytes written, in order,
 *     none twice; EOF only after all of them and only after a shutdown;
 *     nothing after a reset; ACCEPTED before CONNECTED; a refusal only when
 *     nobody listened, refusal was configured, or a partition stood.
 * Liveness: after healing, everything in flight is delivered or accounted
 * for, every stream byte written is delivered, every shutdown reaches its
 * EOF, and the queue drains.
 *
 * The same input then drives four narrower checks, each reading the bytes
 * its own way (the core scenario's reading is unchanged, so its corpus
 * keeps its coverage):
 *   byte source - every draw function against a reference reader: value,
 *     bytes consumed and `done`, at the ends of ranges and once exhausted;
 *     every one-byte input exhaustively;
 *   NAT - a scenario on exact links where a reference model predicts every
 *     delivery and drop through a NAT (mapping, filtering, expiry, LRU);
 *   ring - one stream over a tiny buffer, wrapped dozens of times, and
 *     stalled now and then: no delivery before the stall ends;
 *   shrinker - alksim_shrink on a toy scenario keeps the failure it was
 *     given, only removes or zeroes bytes, and stops 1-minimal;
 *   disk bounds - accesses on both sides of the device's end and of
 *     2^64 (offset + len wrapping): refused with nothing changed exactly
 *     when they do not lie inside (check_disk_bounds). */
#define _POSIX_C_SOURCE 200809L /* check_fuzz_one: fork, mkdtemp, setenv */
#include "alksim.h"
#include "../testkit/alk_check.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HOSTS 3
#define MAX_IDS 512
#define SECTOR 64
#define SECTORS 32
#define DISK_BYTES (SECTOR * SECTORS)
#define MAX_PENDING_WRITES 64
#define QCAP 32
#define CONNS 4
#define STREAM_BUF 512
#define STREAM_MODEL 4096

typedef struct stream_model {
    int state; /* 0 none, 1 connecting, 2 accepted, 3 connected, 4 dead */
    int may_refuse, may_accept;
    uint32_t from, to;
    uint8_t written[2][STREAM_MODEL];
    size_t n_written[2], n_delivered[2];
    int shut[2], eof[2];
    uint64_t connect_at, reset_at; /* when asked: events come a latency or */
    int reset_side;                /* two after (the peer hears a reset)  */
    int reset_pending;             /* reset asked, the peer's RESET due   */
    uint64_t sched_at[2]; /* a direction's next segment (or EOF) leaves: at
                           * the write or shutdown that found it empty, or
                           * at its previous delivery */
} stream_model;

typedef struct sent_record {
    uint32_t from, to, len;
    uint64_t sent_at, hash;
    unsigned copies_allowed, copies_seen;
    unsigned originals_seen; /* copies delivered with duplicate == 0 */
    uint64_t delay[2];       /* the original's and the copy's, as drawn */
} sent_record;

typedef struct pending_write {
    uint32_t offset, len;
    uint8_t data[SECTOR * 4];
} pending_write;

typedef struct core_state {
    alksim_net net;
    alksim_link link[HOSTS][HOSTS];
    sent_record ids[MAX_IDS];
    uint64_t n_ids;
    alksim_disk disk;
    uint8_t durable_model[DISK_BYTES];  /* what a crash may fall back to */
    uint8_t visible_model[DISK_BYTES];  /* what reads must return */
    pending_write pending[MAX_PENDING_WRITES];
    unsigned n_pending;
    uint64_t countdown[3];              /* the model's copy of injections */
    alksim_disk_stats dstats;           /* the disk's counters, as modelled */
    uint32_t max_pending;               /* the cache: one entry per sector */
    uint32_t cached[64], n_cached;      /* piece of a write, oldest first */
    alksim_queue q;
    alksim_event qmem[QCAP];
    alksim_event qmodel[QCAP];
    size_t qmodel_len;
    alksim_streams streams;
    alksim_stream_params sparams;
    stream_model sm[CONNS];
    alksim_stream_stats smodel;  /* the streams' counters, as modelled */
    uint8_t part[HOSTS][HOSTS];  /* the model's partitions: from -> to */
    uint8_t listens[HOSTS];      /* the model's listeners */
    uint32_t ip[HOSTS];          /* each host's own address (roaming) */
    int natted[HOSTS];           /* behind its NAT, public 0xc0000200 + h */
} core_state;

static core_state the_state;
static uint8_t net_mem[1 << 16];
static uint8_t disk_mem[DISK_BYTES + 64 * SECTOR + 1024];
static uint8_t *stream_mem; /* exactly alksim_streams_mem_size: ASan sees past it */

static const char *const kinds[] = {
    "send", "advance", "partition", "heal", "roam", "nat",
    "disk-write", "disk-flush", "disk-crash", "disk-read", "disk-inject",
    "queue-push", "queue-pop", "stream-connect", "stream-write",
    "stream-shutdown", "stream-reset", "stream-listen"};
enum {
    K_SEND, K_ADVANCE, K_PARTITION, K_HEAL, K_ROAM, K_NAT, K_WRITE, K_FLUSH,
    K_CRASH, K_READ, K_INJECT, K_PUSH, K_POP, K_SCONNECT, K_SWRITE,
    K_SSHUT, K_SRESET, K_SLISTEN, K_COUNT
};

/* FNV-1a from h over n bytes (the trace hash and failure sites use it). */
static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3u;
    }
    return h;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    return fnv1a(0xcbf29ce484222325u, (const char *)p, n) ^ n;
}

static void *core_setup(alksim_ctx *ctx)
{
    core_state *st = &the_state;
    alksim_net_config ncfg = {HOSTS, 64, 256, 4};
    alksim_disk_config dcfg = {SECTOR, SECTORS, 0};
    uint32_t a, b;
    memset(st, 0, sizeof *st);
    if (alksim_net_init(&st->net, &ncfg, net_mem, sizeof net_mem) != ALKSIM_OK)
        return NULL;
    for (a = 0; a < HOSTS; a++)
        st->ip[a] = 0x0a000001u + a; /* the documented first addresses */
    for (a = 0; a < HOSTS; a++)
        for (b = 0; b < HOSTS; b++) {
            alksim_link *l = &st->link[a][b];
            l->latency_ns = 1000 * alksim_range(ctx->src, 1, 50);
            l->jitter_ns = 1000 * alksim_range(ctx->src, 0, 20);
            l->loss = (uint32_t)alksim_range(ctx->src, 0, 4) * 8192;
            l->dup = (uint32_t)alksim_range(ctx->src, 0, 2) * 8192;
            l->reorder = (uint32_t)alksim_range(ctx->src, 0, 2) * 8192;
            l->mtu = (uint32_t)alksim_range(ctx->src, 64, 256);
            ALK_CHECK(alksim_net_set_link(&st->net, a, b, l) == ALKSIM_OK &&
                          alksim_net_set_link(&st->net, a, HOSTS, l) ==
                              ALKSIM_ERR_INVALID_ARGUMENT &&
                          alksim_net_set_link(&st->net, HOSTS, b, l) ==
                              ALKSIM_ERR_INVALID_ARGUMENT &&
                          alksim_net_set_link(&st->net, a, b, NULL) ==
                              ALKSIM_ERR_INVALID_ARGUMENT,
                      "set_link: a host past the net's, or no link, was taken");
            alksim_log(ctx, "link %u->%u: latency %llu jitter %llu loss %u "
                            "dup %u reorder %u mtu %u",
                       a, b, (unsigned long long)l->latency_ns,
                       (unsigned long long)l->jitter_ns, l->loss, l->dup,
                       l->reorder, l->mtu);
        }
    dcfg.max_pending = (uint32_t)alksim_range(ctx->src, 1, 64);
    st->max_pending = dcfg.max_pending;
    alksim_log(ctx, "disk: %u sectors of %u bytes, cache %u sectors",
               SECTORS, SECTOR, dcfg.max_pending);
    if (alksim_disk_init(&st->disk, &dcfg, disk_mem, sizeof disk_mem) !=
        ALKSIM_OK)
        return NULL;
    alksim_queue_init(&st->q, st->qmem, QCAP);
    {
        alksim_streams_config scfg = {CONNS, STREAM_BUF, HOSTS, NULL};
        size_t need;
        scfg.net = &st->net;
        need = alksim_streams_mem_size(&scfg);
        if (!stream_mem && !(stream_mem = (uint8_t *)malloc(need)))
            return NULL;
        if (alksim_streams_init(&st->streams, &scfg, stream_mem, need) != ALKSIM_OK)
            return NULL;
    }
    for (a = 0; a < HOSTS; a++) { /* everyone listens until told not to */
        alksim_stream_listen(&st->streams, a, 1);
        st->listens[a] = 1;
    }
    st->sparams.latency_ns = 1000 * alksim_range(ctx->src, 1, 50);
    st->sparams.bytes_per_sec = 1000000 * alksim_range(ctx->src, 0, 100);
    st->sparams.max_segment = (uint32_t)alksim_range(ctx->src, 0, STREAM_BUF);
    st->sparams.refuse = (uint32_t)alksim_range(ctx->src, 0, 1) * 16384;
    alksim_log(ctx, "streams: latency %llu bandwidth %llu B/s max segment %u "
                    "refuse %u",
               (unsigned long long)st->sparams.latency_ns,
               (unsigned long long)st->sparams.bytes_per_sec,
               st->sparams.max_segment, st->sparams.refuse);
    return st;
}

/* Check one delivered datagram against what was sent. */
static int check_delivery(alksim_ctx *ctx, core_state *st,
                          const alksim_datagram *dg)
{
    sent_record *r;
    const alksim_link *l;
    ALKSIM_CHECK(ctx, dg->id < st->n_ids, "delivered unknown id %llu",
                 (unsigned long long)dg->id);
    r = &st->ids[dg->id];
    l = &st->link[r->from][r->to];
    alksim_log(ctx, "  deliver id %llu %u->%u len %zu at %llu%s",
               (unsigned long long)dg->id, r->from, dg->to_host, dg->len,
               (unsigned long long)dg->delivered_at,
               dg->duplicate ? " (dup)" : "");
    ALKSIM_CHECK(ctx, dg->len == r->len && hash_bytes(dg->data, dg->len) ==
                                               r->hash,
                 "id %llu: payload differs from what was sent",
                 (unsigned long long)dg->id);
    ALKSIM_CHECK(ctx, dg->delivered_at >= r->sent_at + l->latency_ns,
                 "id %llu arrived before its latency",
                 (unsigned long long)dg->id);
    ALKSIM_CHECK(ctx,
                 dg->delivered_at <=
                     r->sent_at + 2 * (l->latency_ns + l->jitter_ns) + 1,
                 "id %llu arrived after every drawn delay",
                 (unsigned long long)dg->id);
    ALKSIM_CHECK(ctx, dg->delivered_at <= ctx->now,
                 "id %llu delivered before its time",
                 (unsigned long long)dg->id);
    ALKSIM_CHECK(ctx, (dg->duplicate == 0 || dg->duplicate == 1) &&
                          dg->delivered_at == r->sent_at + r->delay[dg->duplicate],
                 "id %llu (copy %d) arrived at %llu, drawn for %llu",
                 (unsigned long long)dg->id, dg->duplicate,
                 (unsigned long long)dg->delivered_at,
                 (unsigned long long)(r->sent_at + r->delay[dg->duplicate & 1]));
    ALKSIM_CHECK(ctx, !alksim_net_blocked(&st->net, r->from, dg->to_host),
                 "id %llu crossed a partition", (unsigned long long)dg->id);
    /* one copy is the original, any other says it is the duplicate */
    r->originals_seen += dg->duplicate == 0;
    ALKSIM_CHECK(ctx, (dg->duplicate == 0 || dg->duplicate == 1) && r->originals_seen <= 1 &&
                          (dg->duplicate == 0 || r->copies_allowed > 1),
                 "datagram %llu: duplicate flag %d (%u originals, %u copies allowed)",
                 (unsigned long long)dg->id, dg->duplicate, r->originals_seen,
                 r->copies_allowed);
    ALKSIM_CHECK(ctx, ++r->copies_seen <= r->copies_allowed,
                 "id %llu delivered %u times, %u copies drawn",
                 (unsigned long long)dg->id, r->copies_seen,
                 r->copies_allowed);
    return ALKSIM_OK;
}

static int check_stream_event(alksim_ctx *ctx, core_state *st,
                              const alksim_stream_event *ev)
{
    stream_model *m = &st->sm[ev->conn];
    int dir = 1 - ev->side; /* the direction that carried data to ev->side */
    alksim_log(ctx, "  stream %u event %d to side %d (%zu B)", ev->conn,
               ev->type, ev->side, ev->len);
    ALKSIM_CHECK(ctx, m->state != 0, "event for unknown connection %u",
                 ev->conn);
    ALKSIM_CHECK(ctx, ev->time <= ctx->now, "stream event from the future");
    /* the documented sides: CONNECTED and REFUSED to the connector (0),
     * ACCEPTED to the listener (1) */
    ALKSIM_CHECK(ctx, ev->type == ALKSIM_STREAM_ACCEPTED ? ev->side == 1
                 : ev->type == ALKSIM_STREAM_CONNECTED || ev->type == ALKSIM_STREAM_REFUSED
                     ? ev->side == 0
                     : ev->side == 0 || ev->side == 1,
                 "stream %u: event %d to side %d", ev->conn, ev->type, ev->side);
    {
        /* the handshake's events a latency (ACCEPTED) or a round trip after
         * the connect, a reset's a latency after it, to the other side */
        uint64_t lat = st->sparams.latency_ns;
        uint64_t want = ev->type == ALKSIM_STREAM_ACCEPTED ? m->connect_at + lat
                        : ev->type == ALKSIM_STREAM_CONNECTED ||
                                ev->type == ALKSIM_STREAM_REFUSED
                            ? m->connect_at + 2 * lat
                        : ev->type == ALKSIM_STREAM_RESET ? m->reset_at + lat
                                                          : ev->time;
        ALKSIM_CHECK(ctx, ev->time == want &&
                              (ev->type != ALKSIM_STREAM_RESET ||
                               ev->side == 1 - m->reset_side),
                     "stream %u: event %d to side %d at %llu, want %llu",
                     ev->conn, ev->type, ev->side,
                     (unsigned long long)ev->time, (unsigned long long)want);
    }
    switch (ev->type) {
    case ALKSIM_STREAM_ACCEPTED:
        ALKSIM_CHECK(ctx, m->state == 1, "accepted twice or late");
        ALKSIM_CHECK(ctx, m->may_accept,
                     "stream %u accepted: nobody listened or a partition stood",
                     ev->conn);
        m->state = 2;
        break;
    case ALKSIM_STREAM_CONNECTED:
        ALKSIM_CHECK(ctx, m->state == 2 || m->state == 4,
                     "connected before accepted");
        if (m->state == 2)
            m->state = 3;
        break;
    case ALKSIM_STREAM_REFUSED:
        ALKSIM_CHECK(ctx, m->state == 1 && m->may_refuse,
                     "refused although listening, reachable and not drawn");
        st->smodel.refused++;
        m->state = 4;
        break;
    case ALKSIM_STREAM_RESET:
        ALKSIM_CHECK(ctx, m->reset_pending, "stream %u: a RESET nobody asked for",
                     ev->conn);
        m->reset_pending = 0;
        m->state = 4;
        break;
    case ALKSIM_STREAM_DATA:
        ALKSIM_CHECK(ctx, m->state != 4, "data after a reset");
        {
            /* a segment takes the latency and its bytes' time on the wire */
            uint64_t bps = st->sparams.bytes_per_sec;
            uint64_t want = m->sched_at[dir] + st->sparams.latency_ns +
                            (bps ? (uint64_t)ev->len * 1000000000u / bps : 0);
            ALKSIM_CHECK(ctx, ev->time >= want,
                         "stream %u: %zu bytes at %llu, left at %llu: due no "
                         "earlier than %llu", ev->conn, ev->len,
                         (unsigned long long)ev->time,
                         (unsigned long long)m->sched_at[dir], (unsigned long long)want);
            m->sched_at[dir] = ev->time;
        }
        /* a partition holds a direction's bytes back until it heals */
        ALKSIM_CHECK(ctx, !alksim_net_blocked(&st->net, dir == 0 ? m->from : m->to,
                                              dir == 0 ? m->to : m->from),
                     "stream %u: data from host %u through a partition", ev->conn,
                     dir == 0 ? m->from : m->to);
        ALKSIM_CHECK(ctx, !m->eof[dir], "data after EOF");
        ALKSIM_CHECK(ctx, m->n_delivered[dir] + ev->len <= m->n_written[dir] &&
                              !memcmp(ev->data,
                                      m->written[dir] + m->n_delivered[dir],
                                      ev->len),
                     "stream %u: delivered bytes [%zu, +%zu) differ from the "
                     "written ones (%zu written)",
                     ev->conn, m->n_delivered[dir], ev->len, m->n_written[dir]);
        m->n_delivered[dir] += ev->len;
        st->smodel.delivered += ev->len;
        break;
    case ALKSIM_STREAM_EOF:
        ALKSIM_CHECK(ctx, ev->time >= m->sched_at[dir] + st->sparams.latency_ns,
                     "stream %u: EOF at %llu, sent at %llu", ev->conn,
                     (unsigned long long)ev->time, (unsigned long long)m->sched_at[dir]);
        ALKSIM_CHECK(ctx, m->shut[dir] && !m->eof[dir] &&
                              m->n_delivered[dir] == m->n_written[dir],
                     "EOF before all bytes or without shutdown");
        m->eof[dir] = 1;
        st->smodel.eofs++;
        break;
    default:
        return alksim_fail(ctx, "unknown stream event %d", ev->type);
    }
    return ALKSIM_OK;
}

static int deliver_due(alksim_ctx *ctx, core_state *st)
{
    alksim_datagram dg;
    alksim_stream_event ev;
    int rc;
    while (alksim_net_deliver(&st->net, ctx->now, &dg) == ALKSIM_OK)
        if ((rc = check_delivery(ctx, st, &dg)) != ALKSIM_OK)
            return rc;
    while (alksim_stream_poll(&st->streams, ctx->src, ctx->now, &ev) ==
           ALKSIM_OK)
        if ((rc = check_stream_event(ctx, st, &ev)) != ALKSIM_OK)
            return rc;
    return ALKSIM_OK;
}

static int do_stream(alksim_ctx *ctx, core_state *st, unsigned kind)
{
    uint32_t c = (uint32_t)alksim_pick(ctx->src, CONNS);
    stream_model *m = &st->sm[c];
    int side = alksim_bool(ctx->src);
    if (kind == K_SLISTEN) {
        uint32_t h = (uint32_t)alksim_pick(ctx->src, HOSTS);
        int on = alksim_bool(ctx->src);
        alksim_log(ctx, "  host %u %s", h, on ? "listens" : "stops listening");
        st->listens[h] = (uint8_t)on;
        ALKSIM_CHECK(ctx, alksim_stream_listen(&st->streams, h, on) == ALKSIM_OK &&
                              alksim_stream_listen(&st->streams, HOSTS, on) ==
                                  ALKSIM_ERR_INVALID_ARGUMENT,
                     "listen on host %u refused, or on host %d (of %d) taken", h,
                     HOSTS, HOSTS);
        return ALKSIM_OK;
    }
    if (kind == K_SCONNECT) {
        uint32_t from = (uint32_t)alksim_pick(ctx->src, HOSTS);
        uint32_t to = (uint32_t)alksim_pick(ctx->src, HOSTS), id;
        int reachable = !st->part[from][to] && !st->part[to][from];
        int rc, may_refuse = !st->listens[to] || st->sparams.refuse || !reachable;
        /* a dead or ended connection's slot is released - and now and then
         * an open one's, abandoned with bytes still in flight */
        if (m->state == 4 ||
            (m->state == 3 && ((m->eof[0] && m->eof[1]) || alksim_bool(ctx->src)))) {
            /* what is still buffered is discarded with the slot */
            st->smodel.discarded += m->n_written[0] - m->n_delivered[0] +
                                    m->n_written[1] - m->n_delivered[1];
            ALKSIM_CHECK(ctx, alksim_stream_release(&st->streams, c) == ALKSIM_OK,
                         "release of stream %u refused", c);
            memset(m, 0, sizeof *m);
        }
        /* a free slot, or one past the last, is no connection to release */
        ALKSIM_CHECK(ctx, m->state != 0 || alksim_stream_release(&st->streams, c) ==
                                               ALKSIM_ERR_INVALID_ARGUMENT,
                     "release of the free slot %u accepted", c);
        ALKSIM_CHECK(ctx, alksim_stream_release(&st->streams, CONNS) ==
                              ALKSIM_ERR_INVALID_ARGUMENT,
                     "release of slot %d (of %d) accepted", CONNS, CONNS);
        /* a host past the last (at the count) on either end is refused
         * before anything is drawn or taken */
        ALKSIM_CHECK(ctx, alksim_stream_connect(&st->streams, ctx->src, ctx->now, from,
                                                HOSTS, &st->sparams, &id) ==
                                  ALKSIM_ERR_INVALID_ARGUMENT &&
                              alksim_stream_connect(&st->streams, ctx->src, ctx->now,
                                                    HOSTS, to, &st->sparams, &id) ==
                                  ALKSIM_ERR_INVALID_ARGUMENT,
                     "connect with host %d (of %d) accepted", HOSTS, HOSTS);
        rc = alksim_stream_connect(&st->streams, ctx->src, ctx->now, from, to,
                                   &st->sparams, &id);
        if (rc == ALKSIM_ERR_FULL)
            return ALKSIM_OK;
        st->smodel.connects += rc == ALKSIM_OK;
        ALKSIM_CHECK(ctx, rc == ALKSIM_OK && st->sm[id].state == 0,
                     "connect: %d into a used slot %u", rc, id);
        st->sm[id].state = 1;
        st->sm[id].may_refuse = may_refuse;
        st->sm[id].may_accept = st->listens[to] && reachable;
        st->sm[id].from = from;
        st->sm[id].to = to;
        st->sm[id].connect_at = ctx->now;
        alksim_log(ctx, "  stream %u: connect %u->%u", id, from, to);
        return ALKSIM_OK;
    }
    /* a side other than 0 and 1 is refused, on any slot */
    ALKSIM_CHECK(ctx, alksim_stream_write(&st->streams, ctx->src, ctx->now, c, 2, "x", 1) ==
                              ALKSIM_ERR_INVALID_ARGUMENT &&
                          alksim_stream_shutdown(&st->streams, ctx->now, c, -1) ==
                              ALKSIM_ERR_INVALID_ARGUMENT &&
                          alksim_stream_reset(&st->streams, ctx->now, c, 2) ==
                              ALKSIM_ERR_INVALID_ARGUMENT,
                 "stream %u: an operation on side 2 or -1 accepted", c);
    if (m->state != 3 && !(m->state == 2 && side == 1)) {
        /* not open on that side: the operation is refused (a slot never
         * connected or released is no connection: INVALID_ARGUMENT) and
         * draws nothing; the counters (core_check) stay the model's */
        int want = m->state == 0 ? ALKSIM_ERR_INVALID_ARGUMENT : ALKSIM_ERR_CLOSED;
        int rc = kind == K_SWRITE
                     ? (int)alksim_stream_write(&st->streams, ctx->src, ctx->now, c,
                                                side, "x", 1)
                 : kind == K_SSHUT
                     ? alksim_stream_shutdown(&st->streams, ctx->now, c, side)
                     : alksim_stream_reset(&st->streams, ctx->now, c, side);
        ALKSIM_CHECK(ctx, rc == want,
                     "stream %u (model state %d) side %d: kind %u gave %d, want %d", c,
                     m->state, side, kind, rc, want);
        return ALKSIM_OK;
    }
    if (kind == K_SWRITE) {
        uint8_t buf[STREAM_BUF];
        size_t len = alksim_len(ctx->src, STREAM_BUF);
        ptrdiff_t w;
        if (m->shut[side]) {
            /* a shut direction takes no more bytes */
            w = alksim_stream_write(&st->streams, ctx->src, ctx->now, c, side, "x", 1);
            ALKSIM_CHECK(ctx, w == ALKSIM_ERR_CLOSED,
                         "stream %u side %d: a write after shutdown gave %td", c, side,
                         w);
            return ALKSIM_OK;
        }
        if (len > STREAM_MODEL - m->n_written[side])
            len = STREAM_MODEL - m->n_written[side];
        alksim_bytes(ctx->src, buf, len);
        if (m->n_written[side] == m->n_delivered[side])
            m->sched_at[side] = ctx->now; /* empty: this write schedules */
        w = alksim_stream_write(&st->streams, ctx->src, ctx->now, c, side, buf,
                                len);
        ALKSIM_CHECK(ctx, w >= 0 && (size_t)w <= len, "write returned %td", w);
        ALKSIM_CHECK(ctx, alksim_stream_buffered(&st->streams, c, side) <=
                              STREAM_BUF,
                     "buffered beyond the window");
        memcpy(m->written[side] + m->n_written[side], buf, (size_t)w);
        m->n_written[side] += (size_t)w;
        st->smodel.written += (uint64_t)w;
        alksim_log(ctx, "  stream %u side %d wrote %td of %zu", c, side, w,
                   len);
    } else if (kind == K_SSHUT) {
        if (m->shut[side]) {
            int rc = alksim_stream_shutdown(&st->streams, ctx->now, c, side);
            ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CLOSED,
                         "stream %u side %d: a second shutdown gave %d", c, side, rc);
            return ALKSIM_OK;
        }
        ALKSIM_CHECK(ctx, alksim_stream_shutdown(&st->streams, ctx->now, c,
                                                 side) == ALKSIM_OK,
                     "shutdown refused");
        m->shut[side] = 1;
        if (m->n_written[side] == m->n_delivered[side])
            m->sched_at[side] = ctx->now; /* empty: the EOF leaves now */
        alksim_log(ctx, "  stream %u side %d shuts down", c, side);
    } else {
        ALKSIM_CHECK(ctx, alksim_stream_reset(&st->streams, ctx->now, c,
                                              side) == ALKSIM_OK,
                     "reset refused");
        m->state = 4;
        st->smodel.resets++;
        st->smodel.discarded += m->n_written[0] - m->n_delivered[0] +
                                m->n_written[1] - m->n_delivered[1];
        m->n_written[0] = m->n_delivered[0];  /* gone: never delivered */
        m->n_written[1] = m->n_delivered[1];
        m->reset_at = ctx->now;
        m->reset_side = side;
        m->reset_pending = 1;
        alksim_log(ctx, "  stream %u side %d resets", c, side);
    }
    return ALKSIM_OK;
}

/* A delay as alksim_net_send documents its draws. */
static uint64_t send_delay(alksim_source *src, const alksim_link *l)
{
    uint64_t d = l->latency_ns;
    if (l->jitter_ns)
        d += alksim_range(src, 0, l->jitter_ns);
    if (alksim_chance(src, l->reorder, 65536))
        d += l->latency_ns + l->jitter_ns + 1;
    return d;
}

static int do_send(alksim_ctx *ctx, core_state *st)
{
    uint32_t from = (uint32_t)alksim_pick(ctx->src, HOSTS);
    uint32_t to = (uint32_t)alksim_pick(ctx->src, HOSTS);
    size_t len = alksim_len(ctx->src, 256);
    uint8_t buf[256];
    alksim_net_stats before = alksim_net_get_stats(&st->net), after;
    const alksim_link *l = &st->link[from][to];
    alksim_addr dst;
    alksim_source pre;
    sent_record *r;
    int lost = 0, dup = 0;
    if (st->n_ids == MAX_IDS)
        return ALKSIM_OK;
    alksim_bytes(ctx->src, buf, len);
    dst.ip = alksim_net_ip(&st->net, to);
    dst.port = 9;
    r = &st->ids[st->n_ids++];
    r->from = from;
    r->to = to;
    r->len = (uint32_t)len;
    r->sent_at = ctx->now;
    r->hash = hash_bytes(buf, len);
    pre = *ctx->src; /* the send's draws, replayed on a copy below */
    ALKSIM_CHECK(ctx, alksim_net_send(&st->net, ctx->src, ctx->now, from, 7,
                                      dst, buf, len) == ALKSIM_OK,
                 "send refused");
    after = alksim_net_get_stats(&st->net);
    r->copies_allowed = (unsigned)(after.duplicated - before.duplicated) + 1;
    alksim_log(ctx, "  send id %llu %u->%u len %zu: lost %d dup %d mtu-drop %d",
               (unsigned long long)(st->n_ids - 1), from, to, len,
               after.lost != before.lost, r->copies_allowed > 1,
               after.dropped_mtu != before.dropped_mtu);
    ALKSIM_CHECK(ctx, l->loss || after.lost == before.lost,
                 "loss on a loss-free link");
    ALKSIM_CHECK(ctx, l->dup || r->copies_allowed == 1,
                 "duplicate on a dup-free link");
    ALKSIM_CHECK(ctx, (after.dropped_mtu != before.dropped_mtu) ==
                          (len > l->mtu),
                 "MTU drop iff len %zu > mtu %u", len, l->mtu);
    /* the documented draws: loss, the original's delay, dup, the copy's */
    if (after.dropped_mtu == before.dropped_mtu &&
        after.dropped_no_route == before.dropped_no_route) {
        lost = alksim_chance(&pre, l->loss, 65536);
        if (!lost)
            r->delay[0] = send_delay(&pre, l);
        dup = alksim_chance(&pre, l->dup, 65536);
        if (dup)
            r->delay[1] = send_delay(&pre, l);
    }
    ALKSIM_CHECK(ctx, lost == (after.lost != before.lost) &&
                          dup == (r->copies_allowed > 1) &&
                          pre.front == ctx->src->front && pre.back == ctx->src->back &&
                          pre.done == ctx->src->done && pre.draws == ctx->src->draws &&
                          !memcmp(&pre.rng, &ctx->src->rng, sizeof pre.rng),
                 "send's draws: lost %d dup %d, drawn %d %d; source at %zu/%zu, "
                 "replayed %zu/%zu",
                 after.lost != before.lost, r->copies_allowed > 1, lost, dup,
                 ctx->src->front, ctx->src->back, pre.front, pre.back);
    return ALKSIM_OK;
}

/* The model's version of a disk operation's injected failure. */
static int model_injected(core_state *st, int op)
{
    int hit = st->countdown[op] && --st->countdown[op] == 0;
    st->dstats.injected_errors += (uint64_t)hit;
    return hit;
}

/* The cache as the model sees it: each sector a write touches is an entry;
 * a full cache writes its oldest entry back first; a flush writes them all
 * back; a crash decides once per distinct cached sector. */
static void model_cache_write(core_state *st, uint32_t off, uint32_t len)
{
    uint32_t s;
    st->dstats.writes++;
    for (s = off / SECTOR; len && s <= (off + len - 1) / SECTOR; s++) {
        if (st->n_cached == st->max_pending) {
            memmove(st->cached, st->cached + 1,
                    (st->n_cached - 1) * sizeof st->cached[0]);
            st->n_cached--;
            st->dstats.writebacks++;
        }
        st->cached[st->n_cached++] = s;
    }
}

static void model_cache_flush(core_state *st)
{
    st->dstats.flushes++;
    st->dstats.writebacks += st->n_cached;
    st->n_cached = 0;
}

static uint64_t model_cache_crash(core_state *st)
{
    uint64_t distinct = 0;
    uint32_t i, j;
    for (i = 0; i < st->n_cached; i++) {
        for (j = 0; j < i && st->cached[j] != st->cached[i]; j++)
            ;
        distinct += j == i;
    }
    st->dstats.crashes++;
    st->n_cached = 0;
    return distinct;
}

static int do_write(alksim_ctx *ctx, core_state *st)
{
    uint32_t off = (uint32_t)alksim_range(ctx->src, 0, DISK_BYTES - 1);
    uint32_t len = (uint32_t)alksim_range(ctx->src, 1, SECTOR * 4);
    int expect_fail, rc;
    pending_write *w;
    if (len > DISK_BYTES - off)
        len = DISK_BYTES - off;
    if (st->n_pending == MAX_PENDING_WRITES) {
        alksim_log(ctx, "  (model full: flush first)");
        if (!model_injected(st, ALKSIM_DISK_FLUSH)) {
            ALKSIM_CHECK(ctx, alksim_disk_flush(&st->disk) == ALKSIM_OK,
                         "flush failed");
            model_cache_flush(st);
            memcpy(st->durable_model, st->visible_model, DISK_BYTES);
            st->n_pending = 0;
        } else {
            ALKSIM_CHECK(ctx, alksim_disk_flush(&st->disk) == ALKSIM_ERR_IO,
                         "armed flush did not fail");
            return ALKSIM_OK;
        }
    }
    /* Only now is a write issued: the model's countdown moves with the
     * device's (a fuzzer found them apart when the flush above failed). */
    expect_fail = model_injected(st, ALKSIM_DISK_WRITE);
    w = &st->pending[st->n_pending];
    w->offset = off;
    w->len = len;
    alksim_bytes(ctx->src, w->data, len);
    rc = alksim_disk_write(&st->disk, off, w->data, len);
    alksim_log(ctx, "  write [%u, +%u): %s", off, len, alksim_strerror(rc));
    ALKSIM_CHECK(ctx, rc == (expect_fail ? ALKSIM_ERR_IO : ALKSIM_OK),
                 "write returned %d, model expected %s", rc,
                 expect_fail ? "EIO" : "ok");
    if (!expect_fail) {
        memcpy(st->visible_model + off, w->data, len);
        st->n_pending++;
        model_cache_write(st, off, len);
    }
    return ALKSIM_OK;
}

static int do_read(alksim_ctx *ctx, core_state *st)
{
    uint8_t got[DISK_BYTES];
    int expect_fail = model_injected(st, ALKSIM_DISK_READ);
    int rc;
    /* past the end is refused before anything (no injected failure used) */
    ALKSIM_CHECK(ctx, alksim_disk_read(&st->disk, DISK_BYTES - 1, got, 2) ==
                          ALKSIM_ERR_RANGE &&
                          alksim_disk_write(&st->disk, DISK_BYTES, got, 1) ==
                              ALKSIM_ERR_RANGE,
                 "a disk access past the end (%d bytes) not refused", DISK_BYTES);
    /* so is a byte to read into or write from NULL (nothing counted) */
    ALKSIM_CHECK(ctx, alksim_disk_read(&st->disk, 0, NULL, 1) ==
                              ALKSIM_ERR_INVALID_ARGUMENT &&
                          alksim_disk_write(&st->disk, 0, NULL, 1) ==
                              ALKSIM_ERR_INVALID_ARGUMENT,
                 "a disk access of one byte at NULL not refused");
    rc = alksim_disk_read(&st->disk, 0, got, DISK_BYTES);
    ALKSIM_CHECK(ctx, rc == (expect_fail ? ALKSIM_ERR_IO : ALKSIM_OK),
                 "read returned %d, model expected %s", rc,
                 expect_fail ? "EIO" : "ok");
    if (!expect_fail)
        ALKSIM_CHECK(ctx, memcmp(got, st->visible_model, DISK_BYTES) == 0,
                     "read differs from the newest writes");
    st->dstats.reads += (uint64_t)!expect_fail;
    return ALKSIM_OK;
}

/* Is `got` (one sector) the durable content or a state the sector passed
 * through while the cached writes were applied in order? */
static int sector_candidate(const core_state *st, unsigned s,
                            const uint8_t *got)
{
    uint8_t version[SECTOR];
    unsigned i;
    uint32_t lo = s * SECTOR, hi = lo + SECTOR;
    memcpy(version, st->durable_model + lo, SECTOR);
    if (!memcmp(version, got, SECTOR))
        return 1;
    for (i = 0; i < st->n_pending; i++) {
        const pending_write *w = &st->pending[i];
        uint32_t a = w->offset > lo ? w->offset : lo;
        uint32_t b = w->offset + w->len < hi ? w->offset + w->len : hi;
        if (a >= b)
            continue;
        memcpy(version + (a - lo), w->data + (a - w->offset), b - a);
        if (!memcmp(version, got, SECTOR))
            return 1;
    }
    return 0;
}

static int do_crash(alksim_ctx *ctx, core_state *st)
{
    uint8_t got[DISK_BYTES];
    unsigned s;
    uint64_t decided = st->disk.stats.crash_kept + st->disk.stats.crash_dropped +
                       st->disk.stats.crash_reordered;
    alksim_disk_stats before = st->disk.stats;
    uint64_t want[3] = {0, 0, 0}; /* kept, dropped, reordered */
    uint64_t distinct;
    alksim_source pre = *ctx->src;
    uint32_t i, j;
    /* the documented draws: one pick of versions + 1 per cached sector, in
     * the order of its oldest cached write (0 the durable content, k the
     * k-th oldest cached version) */
    for (i = 0; i < st->n_cached; i++) {
        uint32_t versions = 0, chosen;
        for (j = 0; j < i && st->cached[j] != st->cached[i]; j++)
            ;
        if (j < i)
            continue;
        for (j = i; j < st->n_cached; j++)
            versions += st->cached[j] == st->cached[i];
        chosen = (uint32_t)alksim_pick(&pre, (size_t)versions + 1);
        want[chosen == 0 ? 1 : chosen == versions ? 0 : 2]++;
    }
    distinct = model_cache_crash(st);
    alksim_disk_crash(&st->disk, ctx->src);
    ALKSIM_CHECK(ctx, st->disk.stats.crash_kept - before.crash_kept == want[0] &&
                          st->disk.stats.crash_dropped - before.crash_dropped == want[1] &&
                          st->disk.stats.crash_reordered - before.crash_reordered ==
                              want[2] &&
                          pre.front == ctx->src->front && pre.back == ctx->src->back &&
                          pre.draws == ctx->src->draws &&
                          !memcmp(&pre.rng, &ctx->src->rng, sizeof pre.rng),
                 "crash: kept %llu dropped %llu reordered %llu; drawn %llu %llu %llu",
                 (unsigned long long)(st->disk.stats.crash_kept - before.crash_kept),
                 (unsigned long long)(st->disk.stats.crash_dropped - before.crash_dropped),
                 (unsigned long long)(st->disk.stats.crash_reordered -
                                      before.crash_reordered),
                 (unsigned long long)want[0], (unsigned long long)want[1],
                 (unsigned long long)want[2]);
    ALKSIM_CHECK(ctx, st->disk.stats.crash_kept + st->disk.stats.crash_dropped +
                              st->disk.stats.crash_reordered ==
                          decided + distinct,
                 "the crash decided %llu sectors; %llu distinct were cached",
                 (unsigned long long)(st->disk.stats.crash_kept +
                                      st->disk.stats.crash_dropped +
                                      st->disk.stats.crash_reordered - decided),
                 (unsigned long long)distinct);
    alksim_disk_inject(&st->disk, ALKSIM_DISK_READ, 0);
    st->countdown[ALKSIM_DISK_READ] = 0;
    ALKSIM_CHECK(ctx, alksim_disk_read(&st->disk, 0, got, DISK_BYTES) ==
                          ALKSIM_OK,
                 "read after crash failed");
    st->dstats.reads++;
    for (s = 0; s < SECTORS; s++)
        ALKSIM_CHECK(ctx, sector_candidate(st, s, got + s * SECTOR),
                     "sector %u after crash is neither durable nor a cached "
                     "version (%u writes were cached)",
                     s, st->n_pending);
    alksim_log(ctx, "  crash: kept %llu dropped %llu reordered %llu",
               (unsigned long long)st->disk.stats.crash_kept,
               (unsigned long long)st->disk.stats.crash_dropped,
               (unsigned long long)st->disk.stats.crash_reordered);
    memcpy(st->durable_model, got, DISK_BYTES);
    memcpy(st->visible_model, got, DISK_BYTES);
    st->n_pending = 0;
    return ALKSIM_OK;
}

static int queue_pop_check(alksim_ctx *ctx, core_state *st)
{
    alksim_event ev;
    size_t i, best = 0;
    int rc = alksim_queue_pop(&st->q, &ev);
    if (!st->qmodel_len) {
        ALKSIM_CHECK(ctx, rc == ALKSIM_NONE, "pop from an empty queue");
        return ALKSIM_OK;
    }
    for (i = 1; i < st->qmodel_len; i++)
        if (st->qmodel[i].time < st->qmodel[best].time ||
            (st->qmodel[i].time == st->qmodel[best].time &&
             st->qmodel[i].seq < st->qmodel[best].seq))
            best = i;
    ALKSIM_CHECK(ctx, rc == ALKSIM_OK && ev.time == st->qmodel[best].time &&
                          ev.seq == st->qmodel[best].seq &&
                          ev.arg == st->qmodel[best].arg &&
                          ev.kind == (uint32_t)(ev.seq * 3 + 1) &&
                          ev.target == (uint32_t)(ev.seq ^ 0x55u),
                 "queue popped (%llu, %llu), model (%llu, %llu)",
                 (unsigned long long)ev.time, (unsigned long long)ev.seq,
                 (unsigned long long)st->qmodel[best].time,
                 (unsigned long long)st->qmodel[best].seq);
    st->qmodel[best] = st->qmodel[--st->qmodel_len];
    return ALKSIM_OK;
}

static int core_step(alksim_ctx *ctx, void *state, unsigned kind)
{
    core_state *st = (core_state *)state;
    switch (kind) {
    case K_SEND:
        return do_send(ctx, st);
    case K_ADVANCE:
        ctx->now += 1000 * alksim_range(ctx->src, 0, 100);
        return deliver_due(ctx, st);
    case K_PARTITION: {
        uint32_t a = (uint32_t)alksim_pick(ctx->src, HOSTS);
        uint32_t b = (uint32_t)alksim_pick(ctx->src, HOSTS);
        int both = alksim_bool(ctx->src);
        ALKSIM_CHECK(ctx, alksim_net_partition(&st->net, a, b, 1) == ALKSIM_OK,
                     "partition %u->%u refused", a, b);
        st->part[a][b] = 1;
        if (both) {
            alksim_net_partition(&st->net, b, a, 1);
            st->part[b][a] = 1;
        }
        /* a host past the network's is refused, and changes nothing */
        ALKSIM_CHECK(ctx, alksim_net_partition(&st->net, HOSTS, a, 0) ==
                              ALKSIM_ERR_INVALID_ARGUMENT &&
                              alksim_net_partition(&st->net, a, HOSTS, 0) ==
                              ALKSIM_ERR_INVALID_ARGUMENT,
                     "a partition naming host %d (of %d) accepted", HOSTS, HOSTS);
        alksim_log(ctx, "  partition %u->%u%s", a, b, both ? " both ways" : "");
        return ALKSIM_OK;
    }
    case K_HEAL:
        alksim_net_heal(&st->net);
        memset(st->part, 0, sizeof st->part);
        return ALKSIM_OK;
    case K_ROAM: {
        /* Each host roams within its own range: addresses stay unique, so
         * the model's idea of the destination host stays right. */
        uint32_t h = (uint32_t)alksim_pick(ctx->src, HOSTS);
        uint32_t ip = 0x0a000100u + h * 256 + (uint32_t)alksim_u8(ctx->src);
        alksim_log(ctx, "  host %u roams to %08x", h, ip);
        ALKSIM_CHECK(ctx, alksim_net_set_ip(&st->net, h, ip) == ALKSIM_OK &&
                              alksim_net_set_ip(&st->net, HOSTS, ip) ==
                                  ALKSIM_ERR_INVALID_ARGUMENT,
                     "set_ip of host %u refused, or of host %d (of %d) taken", h,
                     HOSTS, HOSTS);
        st->ip[h] = ip;
        return ALKSIM_OK;
    }
    case K_NAT: {
        alksim_nat_config nat;
        uint32_t h = (uint32_t)alksim_pick(ctx->src, HOSTS);
        int on = alksim_bool(ctx->src);
        nat.public_ip = 0xc0000200u + h;
        nat.mapping = (int)alksim_pick(ctx->src, 2);
        nat.filtering = (int)alksim_pick(ctx->src, 3);
        nat.expiry_ns = 1000 * alksim_range(ctx->src, 0, 200);
        alksim_log(ctx, "  host %u NAT %s", h, on ? "on" : "off");
        alksim_net_set_nat(&st->net, h, on ? &nat : NULL);
        st->natted[h] = on;
        return ALKSIM_OK;
    }
    case K_WRITE:
        return do_write(ctx, st);
    case K_FLUSH: {
        int expect_fail = model_injected(st, ALKSIM_DISK_FLUSH);
        int rc = alksim_disk_flush(&st->disk);
        ALKSIM_CHECK(ctx, rc == (expect_fail ? ALKSIM_ERR_IO : ALKSIM_OK),
                     "flush returned %d", rc);
        if (!expect_fail) {
            memcpy(st->durable_model, st->visible_model, DISK_BYTES);
            st->n_pending = 0;
            model_cache_flush(st);
        }
        return ALKSIM_OK;
    }
    case K_CRASH:
        return do_crash(ctx, st);
    case K_READ:
        return do_read(ctx, st);
    case K_INJECT: {
        int op = (int)alksim_pick(ctx->src, 3);
        uint64_t nth = alksim_range(ctx->src, 0, 4);
        alksim_log(ctx, "  inject op %d nth %llu", op, (unsigned long long)nth);
        alksim_disk_inject(&st->disk, op, nth);
        st->countdown[op] = nth;
        /* an operation past the three is refused, and arms nothing */
        ALKSIM_CHECK(ctx, alksim_disk_inject(&st->disk, ALKSIM_DISK_FLUSH + 1, 1) ==
                              ALKSIM_ERR_INVALID_ARGUMENT &&
                              alksim_disk_inject(&st->disk, -1, 1) ==
                                  ALKSIM_ERR_INVALID_ARGUMENT,
                     "a disk operation %d or -1 was armed", ALKSIM_DISK_FLUSH + 1);
        return ALKSIM_OK;
    }
    case K_PUSH: {
        uint64_t t = ctx->now + alksim_range(ctx->src, 0, 3);
        /* kind, target and arg follow from the sequence number: each event
         * popped must carry its own */
        uint64_t seq = st->q.next_seq;
        int rc = alksim_queue_push(&st->q, t, (uint32_t)(seq * 3 + 1),
                                   (uint32_t)(seq ^ 0x55u), seq * 7);
        if (st->qmodel_len == QCAP) {
            ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_FULL, "push into a full queue");
            return ALKSIM_OK;
        }
        ALKSIM_CHECK(ctx, rc == ALKSIM_OK, "push failed");
        st->qmodel[st->qmodel_len].time = t;
        st->qmodel[st->qmodel_len].seq = st->q.next_seq - 1;
        st->qmodel[st->qmodel_len].arg = (st->q.next_seq - 1) * 7;
        st->qmodel_len++;
        return ALKSIM_OK;
    }
    case K_POP:
        return queue_pop_check(ctx, st);
    case K_SCONNECT:
    case K_SWRITE:
    case K_SSHUT:
    case K_SRESET:
    case K_SLISTEN:
        return do_stream(ctx, st, kind);
    }
    return alksim_fail(ctx, "unknown kind %u", kind);
}

static int core_check(alksim_ctx *ctx, void *state)
{
    core_state *st = (core_state *)state;
    ALKSIM_CHECK(ctx, alksim_net_check(&st->net) == ALKSIM_OK,
                 "network conservation violated");
    {
        /* the check must see a broken structure: a free slot listed twice,
         * the last delivered slot also free, an arrival whose time is not
         * its slot's - each made for one call and undone */
        alksim_net *n = &st->net;
        int rc;
        if (n->free_len >= 2) {
            uint32_t keep = n->free_slots[0];
            n->free_slots[0] = n->free_slots[n->free_len - 1];
            rc = alksim_net_check(n);
            n->free_slots[0] = keep;
            ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CONSERVATION,
                         "net_check: a free slot listed twice passed (%d)", rc);
        }
        {
            /* the counters: a datagram counted lost too; one more in
             * flight than the queue holds (sent with it: still balanced);
             * a slot neither free, queued nor delivered */
            alksim_net_stats keep = n->stats;
            uint32_t keep_free = n->free_len;
            n->stats.lost++;
            rc = alksim_net_check(n);
            n->stats = keep;
            ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CONSERVATION,
                         "net_check: one more lost than sent passed (%d)", rc);
            n->stats.sent++;
            n->stats.in_flight++;
            rc = alksim_net_check(n);
            n->stats = keep;
            ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CONSERVATION,
                         "net_check: more in flight than queued passed (%d)", rc);
            if (n->free_len) {
                n->free_len--;
                rc = alksim_net_check(n);
                n->free_len = keep_free;
                ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CONSERVATION,
                             "net_check: a slot lost from the free list passed (%d)", rc);
            }
        }
        if (n->free_len) {
            /* a free slot index at the slot count (just past the last slot)
             * and far past it; max - 1 stands in the list as it is */
            uint32_t keep = n->free_slots[0], bad[2];
            unsigned b;
            bad[0] = n->cfg.max_in_flight;
            bad[1] = UINT32_MAX;
            for (b = 0; b < 2; b++) {
                n->free_slots[0] = bad[b];
                rc = alksim_net_check(n);
                n->free_slots[0] = keep;
                ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CONSERVATION,
                             "net_check: free slot index %u of %u passed (%d)", bad[b],
                             n->cfg.max_in_flight, rc);
            }
        }
        if (n->free_len && n->last_delivered >= 0) {
            int32_t keep = n->last_delivered;
            n->last_delivered = (int32_t)n->free_slots[0];
            rc = alksim_net_check(n);
            n->last_delivered = keep;
            ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CONSERVATION,
                         "net_check: the delivered slot also free passed (%d)", rc);
        }
        if (n->arrivals.len) {
            uint64_t keep = n->arrivals.heap[0].time;
            n->arrivals.heap[0].time = keep ? keep - 1 : 1;
            rc = alksim_net_check(n);
            n->arrivals.heap[0].time = keep;
            ALKSIM_CHECK(ctx, rc == ALKSIM_ERR_CONSERVATION,
                         "net_check: an arrival at another time than its slot's "
                         "passed (%d)", rc);
        }
    }
    ALKSIM_CHECK(ctx, st->q.len == st->qmodel_len, "queue length %zu, model %zu",
                 st->q.len, st->qmodel_len);
    {
        /* a refusal is counted at the connect, seen at its event: the
         * model's count may lag until quiescence */
        const alksim_stream_stats *g = &st->streams.stats, *m = &st->smodel;
        ALKSIM_CHECK(ctx, g->written == m->written && g->delivered == m->delivered &&
                              g->discarded == m->discarded &&
                              g->connects == m->connects && g->refused >= m->refused &&
                              g->resets == m->resets && g->eofs == m->eofs,
                     "stream counters w%llu d%llu x%llu c%llu r%llu R%llu e%llu; "
                     "the model's w%llu d%llu x%llu c%llu r%llu R%llu e%llu",
                     (unsigned long long)g->written, (unsigned long long)g->delivered,
                     (unsigned long long)g->discarded, (unsigned long long)g->connects,
                     (unsigned long long)g->refused, (unsigned long long)g->resets,
                     (unsigned long long)g->eofs, (unsigned long long)m->written,
                     (unsigned long long)m->delivered, (unsigned long long)m->discarded,
                     (unsigned long long)m->connects, (unsigned long long)m->refused,
                     (unsigned long long)m->resets, (unsigned long long)m->eofs);
    }
    {
        const alksim_disk_stats *d = &st->disk.stats, *m = &st->dstats;
        ALKSIM_CHECK(ctx, d->reads == m->reads && d->writes == m->writes &&
                              d->flushes == m->flushes && d->crashes == m->crashes &&
                              d->writebacks == m->writebacks &&
                              d->injected_errors == m->injected_errors &&
                              alksim_disk_pending(&st->disk) == st->n_cached,
                     "disk counters r%llu w%llu f%llu c%llu wb%llu inj%llu "
                     "pending %u; the model's r%llu w%llu f%llu c%llu wb%llu "
                     "inj%llu pending %u",
                     (unsigned long long)d->reads, (unsigned long long)d->writes,
                     (unsigned long long)d->flushes, (unsigned long long)d->crashes,
                     (unsigned long long)d->writebacks,
                     (unsigned long long)d->injected_errors,
                     alksim_disk_pending(&st->disk), (unsigned long long)m->reads,
                     (unsigned long long)m->writes, (unsigned long long)m->flushes,
                     (unsigned long long)m->crashes, (unsigned long long)m->writebacks,
                     (unsigned long long)m->injected_errors, st->n_cached);
    }
    {
        /* partitions and addresses as the model set them; a host past the
         * network's is never blocked and has no address */
        uint32_t a, b;
        for (a = 0; a < HOSTS; a++) {
            uint32_t want = st->natted[a] ? 0xc0000200u + a : st->ip[a];
            ALKSIM_CHECK(ctx, alksim_net_ip(&st->net, a) == want,
                         "host %u's address %08x, the model's %08x", a,
                         alksim_net_ip(&st->net, a), want);
            for (b = 0; b < HOSTS; b++)
                ALKSIM_CHECK(ctx, alksim_net_blocked(&st->net, a, b) == st->part[a][b],
                             "partition %u->%u is %d, the model's %d", a, b,
                             alksim_net_blocked(&st->net, a, b), st->part[a][b]);
            ALKSIM_CHECK(ctx, !alksim_net_blocked(&st->net, a, HOSTS) &&
                                  !alksim_net_blocked(&st->net, HOSTS, a),
                         "a partition with host %d (of %d)", HOSTS, HOSTS);
        }
        ALKSIM_CHECK(ctx, alksim_net_ip(&st->net, HOSTS) == 0,
                     "host %d (of %d) has an address", HOSTS, HOSTS);
    }
    return ALKSIM_OK;
}

static void core_heal(alksim_ctx *ctx, void *state)
{
    core_state *st = (core_state *)state;
    (void)ctx;
    alksim_net_heal(&st->net);
    memset(st->part, 0, sizeof st->part);
}

static int core_quiesce(alksim_ctx *ctx, void *state)
{
    core_state *st = (core_state *)state;
    uint64_t next = alksim_net_next_time(&st->net);
    uint64_t snext = alksim_stream_next_time(&st->streams, ctx->now);
    unsigned c;
    int rc, d;
    if (snext < next)
        next = snext;
    if (next != ALKSIM_NEVER) {
        if (next > ctx->now)
            ctx->now = next;
        rc = deliver_due(ctx, st);
        return rc != ALKSIM_OK ? rc : 1;
    }
    if (st->qmodel_len) {
        rc = queue_pop_check(ctx, st);
        return rc != ALKSIM_OK ? rc : 1;
    }
    ALKSIM_CHECK(ctx, alksim_net_get_stats(&st->net).in_flight == 0,
                 "datagrams in flight at quiescence");
    ALKSIM_CHECK(ctx, st->streams.stats.refused == st->smodel.refused,
                 "%llu refusals counted, %llu seen at quiescence",
                 (unsigned long long)st->streams.stats.refused,
                 (unsigned long long)st->smodel.refused);
    for (c = 0; c < CONNS; c++) {
        const stream_model *m = &st->sm[c];
        /* every connect has its outcome: connected, refused or reset */
        ALKSIM_CHECK(ctx, m->state != 1 && m->state != 2,
                     "stream %u: the connect is still %s at quiescence", c,
                     m->state == 1 ? "unanswered" : "accepted, not connected");
        /* every reset reached the other side */
        ALKSIM_CHECK(ctx, !m->reset_pending,
                     "stream %u: reset by side %d at %llu, no RESET by quiescence", c,
                     m->reset_side, (unsigned long long)m->reset_at);
        if (m->state != 3)
            continue;
        for (d = 0; d < 2; d++) {
            ALKSIM_CHECK(ctx, m->n_delivered[d] == m->n_written[d],
                         "stream %u direction %d: %zu of %zu bytes delivered "
                         "after healing",
                         c, d, m->n_delivered[d], m->n_written[d]);
            ALKSIM_CHECK(ctx, !m->shut[d] || m->eof[d],
                         "stream %u direction %d: shutdown without EOF", c, d);
        }
    }
    return 0;
}

static const alksim_scenario core_scenario = {
    "sim_core", kinds, K_COUNT, core_setup, core_step, core_check,
    core_heal,  core_quiesce, NULL, 300, 10000, 1};

/* ---- byte source: every draw against a reference reader -------------------
 * The reference is the documented contract written out plainly: control
 * draws take bytes from the end, big-endian in reading order, the fewest of
 * 1/2/4/8 that cover the span; payload from the front; once the cursors meet
 * every missing byte reads as zero and `done` is set; a decision with one
 * possible answer (range with hi <= lo, pick(0|1)... ) draws nothing. Each
 * draw is compared on its value and on the cursors it leaves (front, back,
 * done, draws), so a draw that takes one byte too many or too few, maps the
 * end of a range wrong or answers differently once exhausted is caught. */
typedef struct ref_source {
    const uint8_t *data;
    size_t size, front, back;
    int done;
    uint64_t draws;
    uint64_t *rng; /* seeded: xoshiro256**'s state (size SIZE_MAX, no data) */
} ref_source;

static uint64_t ref_rot(uint64_t v, unsigned by);
static void ref_xoshiro_step(uint64_t st[4]);
static uint64_t ref_weyl_mix(uint64_t *x);

static uint64_t ref_take(ref_source *r, unsigned width)
{
    uint64_t v = 0;
    unsigned i;
    r->draws++;
    if (r->rng) { /* seeded: an output each, its low 8 * width bits */
        v = ref_rot(r->rng[1] * 5, 7) * 9;
        ref_xoshiro_step(r->rng);
        return width >= 8 ? v : v & ((UINT64_C(1) << (8 * width)) - 1);
    }
    for (i = 0; i < width; i++) {
        unsigned b = 0;
        if (r->size - r->front - r->back > 0)
            b = r->data[r->size - 1 - r->back++];
        else
            r->done = 1;
        v = v * 256 + b;
    }
    return v;
}

static unsigned ref_width(uint64_t span)
{
    unsigned w = 1;
    while (w < 8 && (span >> (8 * w)) != 0)
        w *= 2;
    return w;
}

static uint64_t ref_range(ref_source *r, uint64_t lo, uint64_t hi)
{
    uint64_t v;
    if (hi <= lo)
        return lo;
    v = ref_take(r, ref_width(hi - lo));
    if (lo == 0 && hi == UINT64_MAX)
        return v;
    return lo + v % (hi - lo + 1);
}

static size_t ref_weighted(ref_source *r, const uint32_t *w, size_t n)
{
    uint64_t total = 0, cum = 0, x;
    size_t i;
    for (i = 0; i < n; i++)
        total += w[i];
    if (!total)
        return 0;
    x = ref_range(r, 0, total - 1);
    for (i = 0; i < n; i++) {
        cum += w[i];
        if (x < cum)
            return i;
    }
    return SIZE_MAX; /* unreachable: x < total */
}

static int ref_chance(ref_source *r, uint32_t num, uint32_t den)
{
    if (!num || !den)
        return 0;
    if (num >= den)
        return 1;
    return ref_range(r, 0, den - 1) + num >= den; /* the top num values */
}

static void ref_bytes(ref_source *r, uint8_t *out, size_t n)
{
    size_t left = r->size - r->front - r->back, i;
    if (r->rng) { /* seeded: an output per 8 bytes, low byte first */
        uint64_t t = 0;
        for (i = 0; i < n; i++) {
            if (i % 8 == 0) {
                t = ref_rot(r->rng[1] * 5, 7) * 9;
                ref_xoshiro_step(r->rng);
            }
            out[i] = (uint8_t)(t >> (8 * (i % 8)));
        }
        return;
    }
    for (i = 0; i < n; i++)
        out[i] = i < left ? r->data[r->front + i] : 0;
    r->front += n < left ? n : left;
    if (n > left)
        r->done = 1;
}

/* Range ends worth hitting: byte-width boundaries and the top of 64 bits. */
static const uint64_t edge_values[] = {
    0, 1, 2, 0x7f, 0xfe, 0xff, 0x100, 0x101, 0xfffe, 0xffff, 0x10000,
    0xfffffffeu, 0xffffffffu, UINT64_C(0x100000000), UINT64_C(0x100000001),
    UINT64_MAX / 2, UINT64_MAX - 1, UINT64_MAX};
#define N_EDGES (sizeof edge_values / sizeof edge_values[0])

enum {
    OP_U8, OP_U16, OP_U32, OP_U64, OP_BOOL, OP_RANGE, OP_PICK, OP_WEIGHTED,
    OP_LEN, OP_CHANCE, OP_BYTES, OP_COUNT
};
static const char *const op_names[] = {"u8",    "u16",  "u32",   "u64",
                                       "bool",  "range", "pick", "weighted",
                                       "len",   "chance", "bytes"};

/* One draw of `op` with parameters from `pick` on both readers; compares. */
static void source_op(alksim_source *src, ref_source *ref, unsigned op,
                      uint64_t *param)
{
    uint64_t got = 0, want = 0, a = param[0], b = param[1];
    uint8_t gbuf[64], wbuf[64];
    uint32_t w[6];
    size_t i, nw = (size_t)(a % 7);
    memset(w, 0, sizeof w);
    switch (op) {
    case OP_U8:
        got = alksim_u8(src), want = ref_take(ref, 1);
        break;
    case OP_U16:
        got = alksim_u16(src), want = ref_take(ref, 2);
        break;
    case OP_U32:
        got = alksim_u32(src), want = ref_take(ref, 4);
        break;
    case OP_U64:
        got = alksim_u64(src), want = ref_take(ref, 8);
        break;
    case OP_BOOL:
        got = (uint64_t)alksim_bool(src), want = ref_take(ref, 1) & 1;
        break;
    case OP_RANGE:
        got = alksim_range(src, a, b), want = ref_range(ref, a, b);
        ALK_CHECK(got >= a || b < a, "range(%llu, %llu) = %llu below lo",
                  (unsigned long long)a, (unsigned long long)b,
                  (unsigned long long)got);
        ALK_CHECK(got <= b || b < a, "range(%llu, %llu) = %llu above hi",
                  (unsigned long long)a, (unsigned long long)b,
                  (unsigned long long)got);
        break;
    case OP_PICK:
        got = alksim_pick(src, (size_t)a);
        want = a ? ref_range(ref, 0, a - 1) : 0;
        break;
    case OP_WEIGHTED:
        for (i = 0; i < nw; i++) /* zeros, small, and huge (sum > 2^32) */
            w[i] = (uint32_t)(b >> (i * 10)) % 4 == 0
                       ? 0
                       : (b >> (i * 10 + 2)) % 3 == 0 ? UINT32_MAX
                                                       : (uint32_t)(b >> (i * 5)) % 9;
        got = alksim_weighted(src, w, nw), want = ref_weighted(ref, w, nw);
        ALK_CHECK(!nw || got < nw, "weighted answered %llu of %zu",
                  (unsigned long long)got, nw);
        ALK_CHECK(!nw || w[got] || (want == 0 && got == 0),
                  "weighted chose index %llu of weight 0",
                  (unsigned long long)got);
        break;
    case OP_LEN:
        got = alksim_len(src, (size_t)a), want = ref_range(ref, 0, a);
        break;
    case OP_CHANCE:
        got = (uint64_t)alksim_chance(src, (uint32_t)a, (uint32_t)b);
        want = (uint64_t)ref_chance(ref, (uint32_t)a, (uint32_t)b);
        break;
    case OP_BYTES:
        a %= sizeof gbuf + 1;
        memset(gbuf, 0xa5, sizeof gbuf);
        alksim_bytes(src, gbuf, (size_t)a);
        ref_bytes(ref, wbuf, (size_t)a);
        ALK_CHECK(!memcmp(gbuf, wbuf, (size_t)a),
                  "bytes(%llu): payload differs from the front of the input",
                  (unsigned long long)a);
        for (i = (size_t)a; i < sizeof gbuf; i++)
            ALK_CHECK(gbuf[i] == 0xa5, "bytes(%llu) wrote past n",
                      (unsigned long long)a);
        break;
    }
    ALK_CHECK(got == want,
              "%s(%llu, %llu) = %llu, reference %llu (back %zu front %zu of "
              "%zu)",
              op_names[op], (unsigned long long)a, (unsigned long long)b,
              (unsigned long long)got, (unsigned long long)want, ref->back,
              ref->front, ref->size);
    ALK_CHECK(src->front == ref->front && src->back == ref->back &&
                  !!src->done == ref->done && src->draws == ref->draws,
              "%s(%llu, %llu): cursors front %zu back %zu done %d draws %llu, "
              "reference %zu %zu %d %llu",
              op_names[op], (unsigned long long)a, (unsigned long long)b,
              src->front, src->back, src->done,
              (unsigned long long)src->draws, ref->front, ref->back,
              ref->done, (unsigned long long)ref->draws);
    ALK_CHECK(alksim_source_remaining(src) ==
                  ref->size - ref->front - ref->back &&
                  alksim_source_done(src) == src->done,
              "%s: remaining %zu / done %d disagree with the cursors",
              op_names[op], alksim_source_remaining(src),
              alksim_source_done(src));
}

/* Parameters: mostly edges (lo, hi, hi - lo at byte-width boundaries, the
 * whole 64-bit range, hi < lo), otherwise raw. */
static void draw_params(uint64_t *rng, unsigned op, uint64_t *param)
{
    uint64_t r = alksim_splitmix64(rng), s = alksim_splitmix64(rng);
    uint64_t base = edge_values[r % N_EDGES];
    switch ((r >> 8) % 4) {
    case 0: /* lo = edge, hi = lo + edge span */
        param[0] = base;
        param[1] = base + edge_values[(r >> 16) % N_EDGES];
        break;
    case 1: /* both edges: covers hi == lo, hi < lo, the full range */
        param[0] = base;
        param[1] = edge_values[(r >> 16) % N_EDGES];
        break;
    case 2:
        param[0] = s % 1000;
        param[1] = s >> 20;
        break;
    default:
        param[0] = s;
        param[1] = alksim_splitmix64(rng);
        break;
    }
    if (op == OP_PICK || op == OP_LEN)
        param[0] = (size_t)param[0];
    if (op == OP_CHANCE && (r >> 40) % 2) { /* ratios near 0, 1 and 1/2 */
        param[1] = edge_values[(r >> 24) % 8] + 1;
        param[0] = param[1] - (r >> 32) % 3;
    }
}

static void check_source(const uint8_t *data, size_t size)
{
    alksim_source src;
    ref_source ref;
    uint64_t rng = 0x5eed, param[2];
    size_t i, extra = 0, ops = 0;
    unsigned op, e, k;
    /* Exact distribution: every one-byte input through every one-byte
     * decision at the edges, then the same with nothing left (zeros). */
    for (k = 0; k <= 256; k++) {
        uint8_t byte = (uint8_t)k;
        for (op = 0; op < OP_COUNT; op++)
            for (e = 0; e < 4; e++) {
                static const uint64_t small[4][2] = {
                    {0, 255}, {3, 3}, {7, 9}, {1, 200}};
                param[0] = small[e][0];
                param[1] = small[e][1];
                if (op == OP_CHANCE)
                    param[0] += 1, param[1] += 2;
                alksim_source_init_bytes(&src, &byte, k < 256);
                memset(&ref, 0, sizeof ref);
                ref.data = &byte;
                ref.size = k < 256;
                source_op(&src, &ref, op, param);
                source_op(&src, &ref, op, param); /* exhausted now */
            }
    }
    /* No data is an empty source, whatever size comes with it. */
    alksim_source_init_bytes(&src, NULL, 9);
    ALK_CHECK(alksim_source_remaining(&src) == 0 && alksim_u8(&src) == 0 &&
                  alksim_source_done(&src),
              "a source of no data with size 9 has %zu bytes",
              alksim_source_remaining(&src));
    /* Every pair of edges as (lo, hi), on the largest, the smallest and a
     * short (partly exhausted) draw of every width. */
    for (e = 0; e < N_EDGES; e++)
        for (k = 0; k < N_EDGES; k++) {
            static const uint8_t ones[9] = {0xff, 0xff, 0xff, 0xff, 0xff,
                                            0xff, 0xff, 0xff, 0xff};
            static const uint8_t zeros[9] = {0};
            static const uint8_t three[3] = {0x80, 0x01, 0xfe};
            const uint8_t *bufs[3] = {ones, zeros, three};
            size_t lens[3] = {9, 9, 3};
            unsigned v;
            param[0] = edge_values[e];
            param[1] = edge_values[k];
            for (v = 0; v < 3; v++)
                for (op = OP_RANGE; op <= OP_LEN; op++) {
                    alksim_source_init_bytes(&src, bufs[v], lens[v]);
                    memset(&ref, 0, sizeof ref);
                    ref.data = bufs[v];
                    ref.size = lens[v];
                    source_op(&src, &ref, op, param);
                    source_op(&src, &ref, op, param);
                }
        }
    /* The input itself: a drawn sequence of draws until well past the
     * point where the source is exhausted. */
    for (i = 0; i < size; i++)
        rng = (rng ^ data[i]) * 0x100000001b3u;
    alksim_source_init_bytes(&src, data, size);
    memset(&ref, 0, sizeof ref);
    ref.data = data;
    ref.size = size;
    while (extra < 16 && ops++ < 4 * size + 64) {
        op = (unsigned)(alksim_splitmix64(&rng) % OP_COUNT);
        draw_params(&rng, op, param);
        source_op(&src, &ref, op, param);
        if (ref.done)
            extra++;
    }
    ALK_CHECK(ref.done && src.done, "source never exhausted (%zu ops)", ops);
    /* A seeded source: every draw from xoshiro256** seeded with the
     * input's hash, never exhausted. */
    {
        uint64_t st4[4], x = rng;
        for (k = 0; k < 4; k++) st4[k] = ref_weyl_mix(&x);
        alksim_source_init_rng(&src, rng);
        memset(&ref, 0, sizeof ref);
        ref.size = SIZE_MAX;
        ref.rng = st4;
        for (k = 0; k < 48; k++) {
            op = (unsigned)(alksim_splitmix64(&rng) % OP_COUNT);
            draw_params(&rng, op, param);
            source_op(&src, &ref, op, param);
        }
    }
}

/* ---- NAT: mapping, filtering and expiry against a reference model ---------
 * Links here are exact (no loss, duplication, jitter, reordering or MTU
 * drops) and sends happen at distinct instants, so the model knows when
 * every datagram arrives, in what order, and what each NAT must do with it:
 *   mapping   - a NATed sender's datagram leaves from (public IP, external
 *     port). EIM: one external port per internal port while any of its
 *     permissions lives; EDM: one per (internal port, destination). New
 *     external ports count up from 20000 per host (wrapping to 20000), and
 *     keep counting when the NAT is reconfigured;
 *   permissions - a send records or refreshes (internal port, destination)
 *     at the send time; a full table (4 here) evicts the least recently
 *     used; a reconfiguration drops them all;
 *   expiry - a permission lives while arrival/send time - last use <=
 *     expiry_ns (0 = forever); expired ones are gone at the next send;
 *   filtering - an arriving datagram for a NATed host passes iff a live
 *     permission holds its external port and admits the sender: EIF anyone,
 *     ADF the same remote IP, APDF the same remote IP and port. It is then
 *     delivered to (private IP, internal port).
 * Every delivery is compared (id, to_host, src, dst, order) and every drop
 * is counted (NAT, no route) against the model's. */
#define NAT_HOSTS 3
#define NAT_MAPS 4
#define NAT_FLIGHT 48

typedef struct nat_perm {
    uint16_t internal_port, external_port;
    alksim_addr remote;
    uint64_t last_used;
} nat_perm;

typedef struct nat_host_model {
    uint32_t ip;
    int natted;
    alksim_nat_config cfg;
    unsigned next_port; /* the next external port handed out */
    nat_perm perm[NAT_MAPS];
    unsigned n_perm;
    alksim_addr last_src; /* the last sender seen: replies go there */
    int have_src;
} nat_host_model;

typedef struct nat_flight {
    uint64_t at, id;
    uint32_t from;
    alksim_addr src, dst;
} nat_flight;

typedef struct nat_state {
    alksim_net net;
    uint64_t latency[NAT_HOSTS][NAT_HOSTS];
    nat_host_model h[NAT_HOSTS];
    nat_flight fl[NAT_FLIGHT]; /* in send order */
    size_t n_fl;
    uint64_t last_send, delivered, drop_nat, drop_route;
} nat_state;

static nat_state the_nat;
static uint64_t nat_net_mem[(1 << 15) / 8];

static const char *const nat_kinds[] = {"send", "advance", "nat", "roam",
                                         "reply"};

static uint32_t nat_public_ip(uint32_t h)
{
    return 0xc0000200u + h;
}

static int nat_live(const nat_host_model *m, const nat_perm *p, uint64_t t)
{
    return !m->cfg.expiry_ns || t < p->last_used ||
           t - p->last_used <= m->cfg.expiry_ns;
}

static void nat_forget(nat_host_model *m, unsigned i)
{
    m->perm[i] = m->perm[--m->n_perm];
}

/* The model's external port for a datagram host m sends now. */
static uint16_t nat_model_out(nat_host_model *m, uint16_t sport,
                              alksim_addr dst, uint64_t now)
{
    unsigned i, lru = 0;
    uint16_t ext = 0;
    nat_perm *p;
    for (i = m->n_perm; i-- > 0;)
        if (!nat_live(m, &m->perm[i], now))
            nat_forget(m, i);
    for (i = 0; i < m->n_perm; i++) {
        p = &m->perm[i];
        if (p->internal_port == sport && p->remote.ip == dst.ip &&
            p->remote.port == dst.port) {
            p->last_used = now;
            return p->external_port;
        }
    }
    if (m->cfg.mapping == ALKSIM_NAT_EIM)
        for (i = 0; i < m->n_perm; i++)
            if (m->perm[i].internal_port == sport)
                ext = m->perm[i].external_port;
    if (m->n_perm == NAT_MAPS) {
        for (i = 1; i < m->n_perm; i++)
            if (m->perm[i].last_used < m->perm[lru].last_used)
                lru = i;
        nat_forget(m, lru);
    }
    if (!ext) {
        ext = (uint16_t)m->next_port;
        m->next_port = m->next_port == 65535 ? 20000 : m->next_port + 1;
    }
    p = &m->perm[m->n_perm++];
    p->internal_port = sport;
    p->external_port = ext;
    p->remote = dst;
    p->last_used = now;
    return ext;
}

/* May src reach external port `port` of host m at time t? */
static int nat_model_in(const nat_host_model *m, alksim_addr src,
                        uint16_t port, uint64_t t, uint16_t *internal)
{
    unsigned i;
    for (i = 0; i < m->n_perm; i++) {
        const nat_perm *p = &m->perm[i];
        int admits;
        if (p->external_port != port || !nat_live(m, p, t))
            continue;
        switch (m->cfg.filtering) {
        case ALKSIM_NAT_EIF:
            admits = 1;
            break;
        case ALKSIM_NAT_ADF:
            admits = p->remote.ip == src.ip;
            break;
        default:
            admits = p->remote.ip == src.ip && p->remote.port == src.port;
            break;
        }
        if (admits) {
            *internal = p->internal_port;
            return 1;
        }
    }
    return 0;
}

static int nat_route(const nat_state *st, uint32_t ip, uint32_t *host)
{
    uint32_t h;
    for (h = 0; h < NAT_HOSTS; h++)
        if ((st->h[h].natted ? nat_public_ip(h) : st->h[h].ip) == ip) {
            *host = h;
            return 1;
        }
    return 0;
}

static void *nat_setup(alksim_ctx *ctx)
{
    nat_state *st = &the_nat;
    alksim_net_config cfg = {NAT_HOSTS, 64, 64, NAT_MAPS};
    uint32_t a, b;
    memset(st, 0, sizeof *st);
    if (alksim_net_init(&st->net, &cfg, nat_net_mem, sizeof nat_net_mem) !=
        ALKSIM_OK)
        return NULL;
    for (a = 0; a < NAT_HOSTS; a++) {
        st->h[a].ip = 0x0a000001u + a;
        st->h[a].next_port = 20000;
        for (b = 0; b < NAT_HOSTS; b++) {
            alksim_link l;
            memset(&l, 0, sizeof l);
            l.latency_ns = st->latency[a][b] =
                1000 * alksim_range(ctx->src, 1, 30);
            alksim_net_set_link(&st->net, a, b, &l);
            alksim_log(ctx, "link %u->%u: latency %llu", a, b,
                       (unsigned long long)l.latency_ns);
        }
    }
    st->last_send = UINT64_MAX;
    return st;
}

/* reply: a host that has heard from someone answers to the address it saw,
 * from either port (the same one or not: what APDF tells apart). */
static int nat_send(alksim_ctx *ctx, nat_state *st, int reply)
{
    uint32_t from = (uint32_t)alksim_pick(ctx->src, NAT_HOSTS);
    uint32_t to = (uint32_t)alksim_pick(ctx->src, NAT_HOSTS), host;
    uint16_t sport = (uint16_t)(9 + alksim_pick(ctx->src, 2));
    unsigned how = reply ? 2 : (unsigned)alksim_pick(ctx->src, 4);
    nat_host_model *m;
    if (reply)
        for (host = 0; host < NAT_HOSTS && !st->h[from].have_src; host++)
            from = (from + 1) % NAT_HOSTS;
    m = &st->h[from];
    alksim_net_stats before = alksim_net_get_stats(&st->net), after;
    alksim_addr dst;
    uint8_t payload[4];
    nat_flight *f;
    dst.ip = alksim_net_ip(&st->net, to);
    dst.port = (uint16_t)(9 + how % 2);
    if (how == 2 && m->have_src) /* a reply to the last sender */
        dst = m->last_src;
    else if (how == 3) /* a guess at one of the NAT's external ports */
        dst.port = (uint16_t)(20000 + alksim_pick(ctx->src, 6));
    if (st->n_fl == NAT_FLIGHT)
        return ALKSIM_OK;
    /* Distinct send instants keep least-recently-used unambiguous. */
    if (st->last_send != UINT64_MAX && ctx->now <= st->last_send)
        ctx->now = st->last_send + 1;
    st->last_send = ctx->now;
    memcpy(payload, &st->n_fl, sizeof payload);
    ALKSIM_CHECK(ctx, alksim_net_send(&st->net, ctx->src, ctx->now, from,
                                      sport, dst, payload, sizeof payload) ==
                          ALKSIM_OK,
                 "nat: send refused");
    after = alksim_net_get_stats(&st->net);
    alksim_log(ctx, "  send %u:%u -> %08x:%u", from, sport, dst.ip, dst.port);
    if (!nat_route(st, dst.ip, &host)) {
        st->drop_route++;
        ALKSIM_CHECK(ctx, after.dropped_no_route == before.dropped_no_route + 1,
                     "nat: a send to %08x that no host owns was not dropped",
                     dst.ip);
        return ALKSIM_OK;
    }
    ALKSIM_CHECK(ctx, after.in_flight == before.in_flight + 1,
                 "nat: a send to host %u is not in flight", host);
    f = &st->fl[st->n_fl++];
    f->at = ctx->now + st->latency[from][host];
    f->id = after.sent - 1;
    f->from = from;
    f->dst = dst;
    f->src.ip = m->natted ? nat_public_ip(from) : m->ip;
    f->src.port = m->natted ? nat_model_out(m, sport, dst, ctx->now) : sport;
    return ALKSIM_OK;
}

/* Deliver everything due by now, the model's list against the network's. */
static int nat_deliver(alksim_ctx *ctx, nat_state *st)
{
    alksim_datagram dg;
    for (;;) {
        int got = alksim_net_deliver(&st->net, ctx->now, &dg) == ALKSIM_OK;
        nat_flight f;
        size_t i, best = SIZE_MAX;
        uint32_t to = 0;
        alksim_addr dst;
        int admitted = 0;
        memset(&f, 0, sizeof f);
        /* The model's next arrival that gets through, dropping the rest. */
        while (!admitted) {
            best = SIZE_MAX;
            for (i = 0; i < st->n_fl; i++)
                if (st->fl[i].at <= ctx->now &&
                    (best == SIZE_MAX || st->fl[i].at < st->fl[best].at))
                    best = i; /* ties: the earlier send (lower index) */
            if (best == SIZE_MAX)
                break;
            f = st->fl[best];
            memmove(&st->fl[best], &st->fl[best + 1],
                    (st->n_fl - best - 1) * sizeof f);
            st->n_fl--;
            dst = f.dst;
            if (!nat_route(st, f.dst.ip, &to)) {
                st->drop_route++;
            } else if (st->h[to].natted &&
                       !nat_model_in(&st->h[to], f.src, f.dst.port, f.at,
                                     &dst.port)) {
                st->drop_nat++;
                alksim_log(ctx, "  model: id %llu %08x:%u -> %08x:%u filtered",
                           (unsigned long long)f.id, f.src.ip, f.src.port,
                           f.dst.ip, f.dst.port);
            } else {
                if (st->h[to].natted)
                    dst.ip = st->h[to].ip;
                admitted = 1;
            }
        }
        ALKSIM_CHECK(ctx, got == admitted,
                     "nat: the network %s, the model %s (id %llu)",
                     got ? "delivered a datagram" : "delivered nothing",
                     admitted ? "admits one" : "admits none",
                     (unsigned long long)(got ? dg.id : f.id));
        if (!got)
            break;
        alksim_log(ctx, "  deliver id %llu to %u: %08x:%u -> %08x:%u",
                   (unsigned long long)dg.id, dg.to_host, dg.src.ip,
                   dg.src.port, dg.dst.ip, dg.dst.port);
        ALKSIM_CHECK(ctx, dg.id == f.id && dg.to_host == to &&
                              dg.delivered_at == f.at,
                     "nat: delivered id %llu to host %u at %llu, model id "
                     "%llu to host %u at %llu",
                     (unsigned long long)dg.id, dg.to_host,
                     (unsigned long long)dg.delivered_at,
                     (unsigned long long)f.id, to, (unsigned long long)f.at);
        ALKSIM_CHECK(ctx, dg.src.ip == f.src.ip && dg.src.port == f.src.port,
                     "nat: id %llu arrived from %08x:%u, model (mapping) "
                     "%08x:%u",
                     (unsigned long long)dg.id, dg.src.ip, dg.src.port,
                     f.src.ip, f.src.port);
        ALKSIM_CHECK(ctx, dg.dst.ip == dst.ip && dg.dst.port == dst.port,
                     "nat: id %llu delivered to %08x:%u, model %08x:%u",
                     (unsigned long long)dg.id, dg.dst.ip, dg.dst.port, dst.ip,
                     dst.port);
        st->delivered++;
        st->h[to].last_src = dg.src;
        st->h[to].have_src = 1;
    }
    return ALKSIM_OK;
}

static int nat_step(alksim_ctx *ctx, void *state, unsigned kind)
{
    nat_state *st = (nat_state *)state;
    uint32_t h;
    switch (kind) {
    case 0:
    case 4:
        return nat_send(ctx, st, kind == 4);
    case 1:
        ctx->now += 1000 * alksim_range(ctx->src, 0, 60);
        return nat_deliver(ctx, st);
    case 2: {
        alksim_nat_config cfg;
        int on = (int)alksim_pick(ctx->src, 4) != 0;
        h = (uint32_t)alksim_pick(ctx->src, NAT_HOSTS);
        memset(&cfg, 0, sizeof cfg);
        cfg.public_ip = nat_public_ip(h);
        cfg.mapping = (int)alksim_pick(ctx->src, 2);
        cfg.filtering = (int)alksim_pick(ctx->src, 3);
        cfg.expiry_ns = 1000 * alksim_range(ctx->src, 0, 300);
        alksim_log(ctx, "  host %u NAT %s: %s %s expiry %llu", h,
                   on ? "on" : "off", cfg.mapping ? "EDM" : "EIM",
                   cfg.filtering == 0 ? "EIF"
                                      : cfg.filtering == 1 ? "ADF" : "APDF",
                   (unsigned long long)cfg.expiry_ns);
        alksim_net_set_nat(&st->net, h, on ? &cfg : NULL);
        st->h[h].natted = on;
        st->h[h].cfg = cfg;
        st->h[h].n_perm = 0;
        return ALKSIM_OK;
    }
    default:
        h = (uint32_t)alksim_pick(ctx->src, NAT_HOSTS);
        st->h[h].ip = 0x0a000100u + h * 256 + alksim_u8(ctx->src);
        alksim_net_set_ip(&st->net, h, st->h[h].ip);
        alksim_log(ctx, "  host %u roams to %08x", h, st->h[h].ip);
        return ALKSIM_OK;
    }
}

static int nat_check(alksim_ctx *ctx, void *state)
{
    nat_state *st = (nat_state *)state;
    alksim_net_stats s = alksim_net_get_stats(&st->net);
    ALKSIM_CHECK(ctx, s.dropped_nat == st->drop_nat &&
                          s.dropped_no_route == st->drop_route &&
                          s.delivered == st->delivered &&
                          s.in_flight == st->n_fl,
                 "nat: stats nat-drops %llu no-route %llu delivered %llu in "
                 "flight %llu, model %llu %llu %llu %zu",
                 (unsigned long long)s.dropped_nat,
                 (unsigned long long)s.dropped_no_route,
                 (unsigned long long)s.delivered,
                 (unsigned long long)s.in_flight,
                 (unsigned long long)st->drop_nat,
                 (unsigned long long)st->drop_route,
                 (unsigned long long)st->delivered, st->n_fl);
    return ALKSIM_OK;
}

static int nat_quiesce(alksim_ctx *ctx, void *state)
{
    nat_state *st = (nat_state *)state;
    uint64_t next = alksim_net_next_time(&st->net);
    int rc;
    if (next == ALKSIM_NEVER)
        return 0;
    if (next > ctx->now)
        ctx->now = next;
    rc = nat_deliver(ctx, st);
    return rc != ALKSIM_OK ? rc : 1;
}

static const alksim_scenario nat_scenario = {
    "sim_core/nat", nat_kinds, 5,           nat_setup, nat_step,
    nat_check,      NULL,      nat_quiesce, NULL,      300,
    10000,          1};

/* ---- streams across the ring's wrap-around --------------------------------
 * One connection over a small buffer of drawn size (1..61 bytes, so a
 * direction wraps dozens of times per run), both directions written with
 * drawn sizes (also larger than the free space: the write takes what fits)
 * and read with drawn segment limits. Byte i of direction d is a function
 * of (d, i), so every delivered segment is checked against the position it
 * claims: in order, none lost, none twice, across every wrap; buffered()
 * is always written - delivered. After the run both sides shut down and
 * everything must arrive, then the EOF. */
#define RING_MAX 61

typedef struct ring_state {
    alksim_streams streams;
    uint64_t mem[(2 * RING_MAX + 1024) / 8];
    alksim_stream_params p;
    uint32_t conn, buffer;
    int open, shut[2], eof[2];
    uint64_t written[2], delivered[2], wraps[2];
    uint64_t stall_until; /* no delivery before it (alksim_stream_stall) */
} ring_state;

static ring_state the_ring;

static uint8_t ring_byte(int dir, uint64_t i)
{
    return (uint8_t)((i * 131 + (i >> 8) * 7 + (uint64_t)dir * 89) & 0xff);
}

static const char *const ring_kinds[] = {"write", "advance", "stall"};

static void *ring_setup(alksim_ctx *ctx)
{
    ring_state *r = &the_ring;
    alksim_streams_config cfg;
    memset(r, 0, sizeof *r);
    memset(&cfg, 0, sizeof cfg);
    cfg.max_conns = 1;
    cfg.hosts = 2;
    cfg.buffer = (uint32_t)alksim_range(ctx->src, 1, RING_MAX);
    r->buffer = cfg.buffer;
    if (alksim_streams_init(&r->streams, &cfg, r->mem, sizeof r->mem) !=
        ALKSIM_OK)
        return NULL;
    alksim_stream_listen(&r->streams, 1, 1);
    r->p.latency_ns = 1000 * alksim_range(ctx->src, 0, 10);
    r->p.max_segment = (uint32_t)alksim_range(ctx->src, 0, cfg.buffer);
    r->p.bytes_per_sec = 1000000 * alksim_range(ctx->src, 0, 3);
    alksim_log(ctx, "ring: buffer %u latency %llu max segment %u bandwidth "
                    "%llu",
               cfg.buffer, (unsigned long long)r->p.latency_ns,
               r->p.max_segment, (unsigned long long)r->p.bytes_per_sec);
    if (alksim_stream_connect(&r->streams, ctx->src, ctx->now, 0, 1, &r->p,
                              &r->conn) != ALKSIM_OK)
        return NULL;
    return r;
}

static int ring_poll(alksim_ctx *ctx, ring_state *r)
{
    alksim_stream_event ev;
    while (alksim_stream_poll(&r->streams, ctx->src, ctx->now, &ev) ==
           ALKSIM_OK) {
        int dir = 1 - ev.side;
        uint64_t i;
        if (ev.type == ALKSIM_STREAM_ACCEPTED ||
            ev.type == ALKSIM_STREAM_CONNECTED) {
            r->open += ev.type == ALKSIM_STREAM_CONNECTED;
            continue;
        }
        ALKSIM_CHECK(ctx, ev.time <= ctx->now &&
                              ((ev.type != ALKSIM_STREAM_DATA &&
                                ev.type != ALKSIM_STREAM_EOF) ||
                               ev.time >= r->stall_until),
                     "ring: event %d at %llu, now %llu, stalled until %llu",
                     ev.type, (unsigned long long)ev.time,
                     (unsigned long long)ctx->now,
                     (unsigned long long)r->stall_until);
        if (ev.type == ALKSIM_STREAM_EOF) {
            ALKSIM_CHECK(ctx, r->shut[dir] && !r->eof[dir] &&
                                  r->delivered[dir] == r->written[dir],
                         "ring: EOF in direction %d after %llu of %llu bytes",
                         dir, (unsigned long long)r->delivered[dir],
                         (unsigned long long)r->written[dir]);
            r->eof[dir] = 1;
            continue;
        }
        ALKSIM_CHECK(ctx, ev.type == ALKSIM_STREAM_DATA,
                     "ring: unexpected event %d", ev.type);
        ALKSIM_CHECK(ctx, ev.len > 0 &&
                              ev.len <= r->written[dir] - r->delivered[dir],
                     "ring: direction %d delivered %zu bytes, %llu pending",
                     dir, ev.len,
                     (unsigned long long)(r->written[dir] - r->delivered[dir]));
        ALKSIM_CHECK(ctx, !r->p.max_segment || ev.len <= r->p.max_segment,
                     "ring: segment of %zu over the limit %u", ev.len,
                     r->p.max_segment);
        for (i = 0; i < ev.len; i++)
            ALKSIM_CHECK(ctx, ev.data[i] == ring_byte(dir, r->delivered[dir] + i),
                         "ring: direction %d byte %llu (wrap %llu, buffer %u) "
                         "is %02x, written %02x",
                         dir, (unsigned long long)(r->delivered[dir] + i),
                         (unsigned long long)((r->delivered[dir] + i) /
                                              r->buffer),
                         r->buffer, ev.data[i],
                         ring_byte(dir, r->delivered[dir] + i));
        r->delivered[dir] += ev.len;
        r->wraps[dir] = r->delivered[dir] / r->buffer;
        alksim_log(ctx, "  dir %d: %zu bytes, %llu delivered", dir, ev.len,
                   (unsigned long long)r->delivered[dir]);
    }
    return ALKSIM_OK;
}

static int ring_step(alksim_ctx *ctx, void *state, unsigned kind)
{
    ring_state *r = (ring_state *)state;
    if (kind == 0 && r->open) {
        int side = alksim_bool(ctx->src);
        size_t len = alksim_len(ctx->src, 2 * r->buffer), i;
        uint8_t buf[2 * RING_MAX];
        size_t before = alksim_stream_buffered(&r->streams, r->conn, side);
        ptrdiff_t w;
        for (i = 0; i < len; i++)
            buf[i] = ring_byte(side, r->written[side] + i);
        w = alksim_stream_write(&r->streams, ctx->src, ctx->now, r->conn, side,
                                buf, len);
        ALKSIM_CHECK(ctx, w >= 0 && (size_t)w == (len < r->buffer - before
                                                      ? len
                                                      : r->buffer - before),
                     "ring: write of %zu with %zu of %u buffered took %td",
                     len, before, r->buffer, w);
        r->written[side] += (uint64_t)w;
        alksim_log(ctx, "  side %d writes %td of %zu", side, w, len);
    } else if (kind == 1) {
        ctx->now += 1000 * alksim_range(ctx->src, 0, 20);
    } else if (kind == 2) {
        /* a stall may end before now: then it holds nothing back */
        uint64_t until = ctx->now + 1000 * alksim_range(ctx->src, 0, 30);
        until = until > 10000 ? until - 10000 : 0;
        ALKSIM_CHECK(ctx, alksim_stream_stall(&r->streams, r->conn, until) ==
                              ALKSIM_OK &&
                              alksim_stream_stall(&r->streams, 1, until) ==
                                  ALKSIM_ERR_INVALID_ARGUMENT,
                     "ring: stall refused, or a stall of no connection taken");
        r->stall_until = until;
        alksim_log(ctx, "  stall until %llu", (unsigned long long)until);
    }
    return ring_poll(ctx, r);
}

static int ring_check(alksim_ctx *ctx, void *state)
{
    ring_state *r = (ring_state *)state;
    int d;
    for (d = 0; d < 2; d++)
        ALKSIM_CHECK(ctx, alksim_stream_buffered(&r->streams, r->conn, d) ==
                              r->written[d] - r->delivered[d],
                     "ring: direction %d buffers %zu, %llu written - %llu "
                     "delivered",
                     d, alksim_stream_buffered(&r->streams, r->conn, d),
                     (unsigned long long)r->written[d],
                     (unsigned long long)r->delivered[d]);
    return ALKSIM_OK;
}

static int ring_quiesce(alksim_ctx *ctx, void *state)
{
    ring_state *r = (ring_state *)state;
    uint64_t next;
    int d, rc;
    for (d = 0; d < 2; d++)
        if (r->open && !r->shut[d]) {
            ALKSIM_CHECK(ctx, alksim_stream_shutdown(&r->streams, ctx->now,
                                                     r->conn, d) == ALKSIM_OK,
                         "ring: shutdown refused");
            r->shut[d] = 1;
        }
    next = alksim_stream_next_time(&r->streams, ctx->now);
    if (next != ALKSIM_NEVER) {
        if (next > ctx->now)
            ctx->now = next;
        rc = ring_poll(ctx, r);
        return rc != ALKSIM_OK ? rc : 1;
    }
    /* listening, no partition, no refusal drawn: it must have connected */
    ALKSIM_CHECK(ctx, r->open == 1, "ring: connected %d times", r->open);
    for (d = 0; d < 2; d++)
        ALKSIM_CHECK(ctx, r->eof[d] && r->delivered[d] == r->written[d],
                     "ring: direction %d ended with %llu of %llu bytes, "
                     "eof %d",
                     d, (unsigned long long)r->delivered[d],
                     (unsigned long long)r->written[d], r->eof[d]);
    alksim_log(ctx, "ring: %llu + %llu bytes, %llu + %llu wraps",
               (unsigned long long)r->delivered[0],
               (unsigned long long)r->delivered[1],
               (unsigned long long)r->wraps[0],
               (unsigned long long)r->wraps[1]);
    return 0;
}

static const alksim_scenario ring_scenario = {
    "sim_core/ring", ring_kinds, 3,           ring_setup, ring_step,
    ring_check,      NULL,       ring_quiesce, NULL,       400,
    100000,          0};

/* ---- streams: events in time order whatever order they were made in ------
 * A connection's ACCEPTED is polled, then side 1 resets it with a `now` of
 * the caller's choosing - before, at or after the time the CONNECTED is due
 * - so the RESET may be due before the CONNECTED made earlier. Each event
 * comes at its own time (the CONNECTED at two latencies after the connect,
 * the RESET one latency after the reset), and the earlier first. */
static uint64_t order_mem[4096 / 8];

static void check_stream_order(const uint8_t *data, size_t size)
{
    alksim_streams st;
    alksim_streams_config cfg;
    alksim_stream_params p;
    alksim_stream_event ev;
    alksim_source none;
    uint64_t t0 = 1000, lat, reset_at, last = 0;
    uint32_t conn;
    unsigned seen = 0, got_c = 0, got_r = 0;
    memset(&cfg, 0, sizeof cfg);
    memset(&p, 0, sizeof p);
    cfg.max_conns = 1;
    cfg.buffer = 16;
    cfg.hosts = 2;
    lat = 1 + (size ? data[0] % 50u : 0);
    reset_at = (size > 1 ? data[1] : 0) * (t0 + 2 * lat + 2) / 255;
    p.latency_ns = lat;
    alksim_source_init_bytes(&none, NULL, 0);
    ALK_CHECK(alksim_streams_init(&st, &cfg, order_mem, sizeof order_mem) == ALKSIM_OK &&
                  alksim_stream_listen(&st, 1, 1) == ALKSIM_OK &&
                  alksim_stream_connect(&st, &none, t0, 0, 1, &p, &conn) == ALKSIM_OK,
              "order: connect refused");
    ALK_CHECK(alksim_stream_poll(&st, &none, t0 + lat, &ev) == ALKSIM_OK &&
                  ev.type == ALKSIM_STREAM_ACCEPTED && ev.time == t0 + lat,
              "order: no ACCEPTED at %llu", (unsigned long long)(t0 + lat));
    ALK_CHECK(alksim_stream_reset(&st, reset_at, conn, 1) == ALKSIM_OK,
              "order: reset refused");
    while (alksim_stream_poll(&st, &none, UINT64_MAX - 1, &ev) == ALKSIM_OK) {
        ALK_CHECK(seen++ < 2 && ev.time >= last && ev.side == 0,
                  "order: event %u (type %d, side %d) at %llu after %llu", seen,
                  ev.type, ev.side, (unsigned long long)ev.time,
                  (unsigned long long)last);
        last = ev.time;
        if (ev.type == ALKSIM_STREAM_CONNECTED) {
            got_c++;
            ALK_CHECK(ev.time == t0 + 2 * lat, "order: CONNECTED at %llu, due %llu",
                      (unsigned long long)ev.time, (unsigned long long)(t0 + 2 * lat));
        } else {
            got_r++;
            ALK_CHECK(ev.type == ALKSIM_STREAM_RESET && ev.time == reset_at + lat,
                      "order: event %d at %llu; the RESET is due %llu", ev.type,
                      (unsigned long long)ev.time, (unsigned long long)(reset_at + lat));
        }
    }
    ALK_CHECK(got_c == 1 && got_r == 1, "order: %u CONNECTED, %u RESET", got_c, got_r);
}

/* ---- the shrinker on a toy scenario ---------------------------------------
 * A toy with three ways to fail (two invariants and a liveness failure),
 * each remembered with the kind of step it happened in. The first bytes of
 * the input are the toy's input; when it fails, alksim_shrink (bounded)
 * must return an input that is no longer, is the original with bytes
 * removed or zeroed (the only edits it makes), and fails the same way: the
 * same code, the same invariant, in the same kind of step. When the
 * shrinker stopped on its own (not on its run budget), the result must be
 * 1-minimal: removing any one byte, or zeroing any non-zero byte, no
 * longer fails that way. A passing input must be reported as passing. */
#define TOY_INPUT 64
#define TOY_RUNS 1500

typedef struct toy_state {
    unsigned odd_run, held, last_kind;
    uint64_t total, ticks;
} toy_state;

static toy_state the_toy;
static int toy_invariant, toy_kind; /* the failure: 0 none, 1..3 */
static unsigned toy_runs;

static const char *const toy_kinds[] = {"add", "tick", "hold"};

static void *toy_setup(alksim_ctx *ctx)
{
    (void)ctx;
    memset(&the_toy, 0, sizeof the_toy);
    toy_invariant = 0;
    toy_kind = -1;
    toy_runs++;
    return &the_toy;
}

static int toy_step(alksim_ctx *ctx, void *state, unsigned kind)
{
    toy_state *t = (toy_state *)state;
    (void)ctx;
    t->last_kind = kind;
    if (kind == 0) {
        uint64_t v = alksim_range(ctx->src, 0, 9);
        t->total += v;
        t->odd_run = v % 2 ? t->odd_run + 1 : 0;
    } else if (kind == 1) {
        t->odd_run = 0;
        t->ticks++;
    } else {
        t->held += (unsigned)alksim_bool(ctx->src);
    }
    return ALKSIM_OK;
}

/* Invariant 2 can break after an "add" or after a "tick": the same
 * invariant in two kinds of step. (The formats are named: a failure's
 * site is the FNV-1a hash of its format, which check_trace recomputes.) */
#define TOY_FMT1 "toy: three odd adds in a row"
#define TOY_FMT2 "toy: total %llu after %llu ticks"
static int toy_check(alksim_ctx *ctx, void *state)
{
    toy_state *t = (toy_state *)state;
    if (t->odd_run >= 3) {
        toy_invariant = 1, toy_kind = (int)t->last_kind;
        return alksim_fail(ctx, TOY_FMT1);
    }
    if (t->ticks >= 2 && t->total % 7 == 5) {
        toy_invariant = 2, toy_kind = (int)t->last_kind;
        return alksim_fail(ctx, TOY_FMT2,
                           (unsigned long long)t->total,
                           (unsigned long long)t->ticks);
    }
    return ALKSIM_OK;
}

static int toy_quiesce(alksim_ctx *ctx, void *state)
{
    toy_state *t = (toy_state *)state;
    (void)ctx;
    if (t->held >= 3) { /* never done: a liveness failure */
        toy_invariant = 3;
        toy_kind = -1;
        return 1;
    }
    return 0;
}

static const alksim_scenario toy_scenario = {
    "sim_core/toy", toy_kinds, 3,           toy_setup, toy_step,
    toy_check,      NULL,      toy_quiesce, NULL,      40,
    8,              0};

/* Setups that give no state: quietly (a scenario that cannot start from
 * these bytes) or failing a check. */
static void *toy_no_setup(alksim_ctx *ctx)
{
    (void)ctx;
    return NULL;
}

static void *toy_failed_setup(alksim_ctx *ctx)
{
    /* a failure says so, the first time and after */
    ALK_CHECK(alksim_fail(ctx, "toy: setup %s", "refused") == ALKSIM_ERR_FAILED &&
                  alksim_fail(ctx, "toy: again") == ALKSIM_ERR_FAILED,
              "alksim_fail did not return ALKSIM_ERR_FAILED");
    return NULL;
}

/* Swarm: the setup sees the kinds the run drew and their weights. */
static uint32_t toy_swarm_mask, toy_swarm_weights[3];

static void *toy_swarm_setup(alksim_ctx *ctx)
{
    toy_swarm_mask = ctx->swarm_mask;
    memcpy(toy_swarm_weights, ctx->weights, sizeof toy_swarm_weights);
    return toy_setup(ctx);
}

/* The toy with swarm on, against the documented draws read by the
 * reference reader: a 4-byte mask of the kinds (none drawn: all of them),
 * then for each kind in it, in order, a weight 1 + range(0, 7); a kind
 * outside it has weight 0 and no draw. */
static void check_swarm(const uint8_t *in, size_t n)
{
    alksim_scenario sc = toy_scenario;
    ref_source ref;
    uint32_t mask, w[3];
    unsigned k;
    sc.swarm = 1;
    sc.setup = toy_swarm_setup;
    memset(&ref, 0, sizeof ref);
    ref.data = in;
    ref.size = n;
    mask = (uint32_t)ref_take(&ref, 4) & 7u;
    if (!mask)
        mask = 7u;
    for (k = 0; k < 3; k++)
        w[k] = mask & (1u << k) ? 1 + (uint32_t)ref_range(&ref, 0, 7) : 0;
    toy_swarm_mask = 0xdeadu;
    alksim_run(&sc, in, n, 0, NULL, NULL);
    ALK_CHECK(toy_swarm_mask == mask && !memcmp(toy_swarm_weights, w, sizeof w),
              "swarm: mask %x weights %u %u %u; drawn %x, %u %u %u", toy_swarm_mask,
              toy_swarm_weights[0], toy_swarm_weights[1], toy_swarm_weights[2], mask,
              w[0], w[1], w[2]);
}

typedef struct toy_outcome {
    int code, invariant, kind;
} toy_outcome;

static toy_outcome toy_run(const uint8_t *in, size_t n)
{
    toy_outcome o;
    o.code = alksim_run(&toy_scenario, in, n, 0, NULL, NULL);
    o.invariant = o.code == ALKSIM_OK ? 0 : toy_invariant;
    o.kind = o.code == ALKSIM_OK ? -1 : toy_kind;
    return o;
}

static int toy_same(toy_outcome a, toy_outcome b)
{
    return a.code == b.code && a.invariant == b.invariant && a.kind == b.kind;
}

/* The run's result against its own verbose trace: lines numbered from 0,
 * as many as trace_lines; trace_hash the FNV-1a of every line's text and
 * its newline; a passing run's failure fields 0 / -1 / -1; a failing
 * one's site the FNV-1a of the failing check's format, its phase (1 for an
 * invariant, 2 for liveness), the step kind in the safety phase, and a
 * "FAILED: " line saying which. */
static void check_trace(const uint8_t *in, size_t n, toy_outcome want)
{
    FILE *f = tmpfile();
    alksim_run_result r;
    char line[1024], failed[1024] = "";
    uint64_t h = 0xcbf29ce484222325u;
    unsigned long lines = 0;
    unsigned steps = 0, kinds_line = 0;
    int last_done = 0; /* the last line says where a passing run ended */
    int rc;
    ALK_CHECK(f != NULL, "tmpfile() failed");
    memset(&r, 0x5a, sizeof r);
    rc = alksim_run(&toy_scenario, in, n, ALKSIM_RUN_VERBOSE | ALKSIM_RUN_HASH, f, &r);
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        char *text;
        size_t len;
        unsigned long num = strtoul(line, &text, 10);
        ALK_CHECK(num == lines && text[0] == ' ' && text[1] == ' ',
                  "trace line %lu is numbered %lu: %s", lines, num, line);
        text += 2;
        len = strlen(text);
        ALK_CHECK(len && text[len - 1] == '\n', "trace line %lu unterminated", lines);
        h = fnv1a(h, text, len);   /* the text and its newline */
        if (!strncmp(text, "FAILED: ", 8))
            memcpy(failed, text, len + 1);
        last_done = !strncmp(text, "done at ", 8);
        /* a line per step; the toy (no swarm) runs every kind at weight 1 */
        steps += !strncmp(text, "step ", 5);
        kinds_line += !strcmp(text, "kinds (weight): add:1 tick:1 hold:1\n");
        lines++;
    }
    fclose(f);
    ALK_CHECK(rc == want.code && r.code == rc, "verbose run: %d (result %d), quiet %d",
              rc, r.code, want.code);
    {
        /* alksim_run_seed is alksim_run on alksim_seed_input's bytes */
        uint8_t a[TOY_INPUT], b[TOY_INPUT];
        size_t len = 12345, m = alksim_seed_input(n, 1, a, TOY_INPUT);
        int quiet = alksim_run(&toy_scenario, a, m, 0, NULL, NULL);
        ALK_CHECK(alksim_run_seed(&toy_scenario, n, 1, b, TOY_INPUT, &len, 0, NULL, NULL) ==
                          quiet &&
                      len == m && !memcmp(a, b, m),
                  "run_seed(%zu, 1) differs from a run on its input", n);
        memset(b, 0, sizeof b); /* len may be NULL */
        ALK_CHECK(alksim_run_seed(&toy_scenario, n, 1, b, TOY_INPUT, NULL, 0, NULL, NULL) ==
                          quiet &&
                      !memcmp(a, b, m),
                  "run_seed(%zu, 1) without len differs from a run on its input", n);
    }
    ALK_CHECK(kinds_line == 1 && steps == r.steps,
              "trace: %u kinds lines, %u step lines for %u steps", kinds_line, steps,
              r.steps);
    ALK_CHECK(r.trace_lines == lines && r.trace_hash == h,
              "trace: %lu lines hashed %016llx; the result says %lu, %016llx", lines,
              (unsigned long long)h, r.trace_lines, (unsigned long long)r.trace_hash);
    {
        /* the same run quiet (lines only counted) and hashed but not
         * verbose (nothing printed to `out`): every field as the verbose
         * run's, but a quiet run's hash (not filled in) */
        FILE *g = tmpfile();
        alksim_run_result q[2];
        unsigned k;
        ALK_CHECK(g != NULL, "tmpfile() failed");
        for (k = 0; k < 2; k++) {
            unsigned flags = k ? ALKSIM_RUN_HASH : 0;
            memset(&q[k], 0xa5, sizeof q[k]);
            ALK_CHECK(alksim_run(&toy_scenario, in, n, flags, g, &q[k]) == rc,
                      "run with flags %u: another code", flags);
            ALK_CHECK(q[k].code == r.code && q[k].steps == r.steps &&
                          q[k].quiesce_steps == r.quiesce_steps &&
                          q[k].trace_lines == lines && q[k].end_time == r.end_time &&
                          q[k].failure_site == r.failure_site &&
                          q[k].failure_phase == r.failure_phase &&
                          q[k].failure_kind == r.failure_kind &&
                          (!k || q[k].trace_hash == h),
                      "run with flags %u: %lu lines hash %016llx steps %u; verbose "
                      "%lu lines hash %016llx steps %u",
                      flags, q[k].trace_lines, (unsigned long long)q[k].trace_hash,
                      q[k].steps, lines, (unsigned long long)h, r.steps);
        }
        ALK_CHECK(ftell(g) == 0, "a run without ALKSIM_RUN_VERBOSE printed %ld bytes",
                  ftell(g));
        fclose(g);
    }
    if (rc == ALKSIM_OK) {
        ALK_CHECK(r.failure_site == 0 && r.failure_phase == -1 && r.failure_kind == -1 &&
                      !failed[0] && last_done,
                  "a passing run has failure %016llx phase %d kind %d (%s)",
                  (unsigned long long)r.failure_site, r.failure_phase, r.failure_kind,
                  failed);
    } else if (want.invariant == 3) {
        ALK_CHECK(rc == ALKSIM_ERR_LIVENESS && r.failure_phase == 2 &&
                      r.failure_kind == -1 && r.failure_site != 0 &&
                      !strncmp(failed, "FAILED: liveness", 16),
                  "a liveness failure: code %d phase %d kind %d (%s)", rc,
                  r.failure_phase, r.failure_kind, failed);
    } else {
        const char *fmt = want.invariant == 1 ? TOY_FMT1 : TOY_FMT2;
        ALK_CHECK(rc == ALKSIM_ERR_FAILED && r.failure_phase == 1 &&
                      r.failure_kind == want.kind &&
                      r.failure_site == fnv1a(0xcbf29ce484222325u, fmt, strlen(fmt)) &&
                      !strncmp(failed, "FAILED: toy: ", 13),
                  "invariant %d: code %d phase %d kind %d (want %d) site %016llx (%s)",
                  want.invariant, rc, r.failure_phase, r.failure_kind, want.kind,
                  (unsigned long long)r.failure_site, failed);
    }
}

/* The search alksim_shrink documents, written here from its comment: the
 * output and the number of runs must be the header's exactly. */
typedef toy_outcome (*toy_runner)(const uint8_t *in, size_t n);

static size_t ref_shrink_with(toy_runner run, const uint8_t *in, size_t size,
                              uint8_t *out, unsigned max_runs, unsigned *runs_out)
{
    uint8_t work[TOY_INPUT];
    toy_outcome target = run(in, size);
    size_t n = size;
    unsigned runs = 1;
    *runs_out = runs;
    if (target.code == ALKSIM_OK)
        return ALKSIM_SHRINK_PASSES;
    memcpy(out, in, size);
    for (;;) {
        size_t before = n, chunk = n / 2 ? n / 2 : 1, i;
        int zeroed = 0;
        while (n && runs < max_runs) { /* (1) chunks */
            size_t start = 0;
            int removed = 0;
            while (start < n && runs < max_runs) {
                size_t len = n - start < chunk ? n - start : chunk;
                memcpy(work, out, start);
                memcpy(work + start, out + start + len, n - start - len);
                runs++;
                if (toy_same(run(work, n - len), target)) {
                    memcpy(out, work, n - len);
                    n -= len;
                    removed = 1;
                } else {
                    start += len;
                }
            }
            if (!removed) {
                if (chunk == 1)
                    break;
                chunk /= 2;
            }
        }
        for (i = 0; i < n && runs < max_runs; i++) { /* (2) zeroes */
            uint8_t keep = out[i];
            if (!keep)
                continue;
            out[i] = 0;
            runs++;
            if (toy_same(run(out, n), target))
                zeroed = 1;
            else
                out[i] = keep;
        }
        if ((n == before && !zeroed) || runs >= max_runs)
            break;
    }
    *runs_out = runs;
    return n;
}

static size_t ref_shrink(const uint8_t *in, size_t size, uint8_t *out,
                         unsigned max_runs, unsigned *runs_out)
{
    return ref_shrink_with(toy_run, in, size, out, max_runs, runs_out);
}

/* A scenario one byte can fail: its one step draws a byte and fails when
 * it is not 0. The toy needs several; this one takes the search down to
 * a one-byte input (a chunk of n / 2 there would be 0 bytes). */
static void *byte_setup(alksim_ctx *ctx)
{
    (void)ctx;
    toy_runs++;
    return &the_toy;
}

static int byte_step(alksim_ctx *ctx, void *state, unsigned kind)
{
    unsigned v = (unsigned)alksim_u8(ctx->src);
    (void)state;
    (void)kind;
    return v ? alksim_fail(ctx, "byte: %u", v) : ALKSIM_OK;
}

static const char *const byte_kinds[] = {"byte"};
static const alksim_scenario byte_scenario = {
    "sim_core/byte", byte_kinds, 1, byte_setup, byte_step, NULL, NULL, NULL, NULL,
    1,               0,          0};

static toy_outcome byte_run(const uint8_t *in, size_t n)
{
    toy_outcome o;
    o.code = alksim_run(&byte_scenario, in, n, 0, NULL, NULL);
    o.invariant = o.code != ALKSIM_OK;
    o.kind = o.code == ALKSIM_OK ? -1 : 0;
    return o;
}

/* alksim_shrink on the byte scenario: the input with its last byte (the
 * one the step reads) made odd, so it fails, against the documented
 * search - it ends at that byte alone. */
static void check_shrink_byte(const uint8_t *data, size_t size)
{
    uint8_t in[TOY_INPUT], out[TOY_INPUT], work[TOY_INPUT], ref[TOY_INPUT];
    size_t n = size < TOY_INPUT ? size : TOY_INPUT, k, rk;
    unsigned used, ref_runs;
    if (!n)
        return;
    memcpy(in, data + size - n, n);
    in[n - 1] |= 1;
    toy_runs = 0;
    k = alksim_shrink(&byte_scenario, in, n, out, work, TOY_RUNS);
    used = toy_runs;
    rk = ref_shrink_with(byte_run, in, n, ref, TOY_RUNS, &ref_runs);
    ALK_CHECK(rk == k && used == ref_runs && k == 1 && out[0] == in[n - 1] &&
                  used < TOY_RUNS,
              "shrink (byte): %zu bytes in %u runs; the documented search gives %zu "
              "in %u, and the byte %02x alone",
              k, used, rk, ref_runs, in[n - 1]);
}

/* alksim_fuzz_one on a failing input, once per process, in a child (it
 * aborts): with $ALKSIM_REPRO_DIR the input is written there as
 * <scenario>-<trace hash>; without it nothing is written anywhere - the
 * child runs in an empty directory holding one "(null)" directory, where a
 * NULL directory printed with %s would put it. */
static void check_fuzz_one(void)
{
    static int done;
    static const uint8_t in[] = {0x2a, 0x31};
    char dir[] = "/tmp/sim_core-repro-XXXXXX", path[600], nulldir[64];
    uint8_t back[8];
    alksim_scenario sc = byte_scenario;
    alksim_run_result r;
    unsigned with_dir;
    if (done)
        return;
    done = 1;
    sc.name = "sim_core_byte";
    ALK_CHECK(alksim_run(&sc, in, sizeof in, ALKSIM_RUN_HASH, NULL, &r) ==
                  ALKSIM_ERR_FAILED,
              "the byte scenario passed on a nonzero byte");
    ALK_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
    snprintf(nulldir, sizeof nulldir, "%s/(null)", dir);
    ALK_CHECK(mkdir(nulldir, 0700) == 0, "mkdir %s failed", nulldir);
    for (with_dir = 0; with_dir < 2; with_dir++) {
        int status = 0;
        size_t got = 0;
        FILE *f;
        pid_t pid;
        fflush(NULL);
        pid = fork();
        ALK_CHECK(pid >= 0, "fork failed");
        if (pid == 0) {
            if (!freopen("/dev/null", "w", stderr) || chdir(dir) != 0)
                _exit(3);
            /* libFuzzer's own SIGABRT handler reports a crash and exits
             * with a status; the check wants abort()'s own death */
            signal(SIGABRT, SIG_DFL);
            if (with_dir)
                setenv("ALKSIM_REPRO_DIR", dir, 1);
            else
                unsetenv("ALKSIM_REPRO_DIR");
            unsetenv("ALKSIM_VERBOSE");
            alksim_fuzz_one(&sc, in, sizeof in);
            _exit(0); /* not reached: a failing run aborts */
        }
        ALK_CHECK(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) &&
                      WTERMSIG(status) == SIGABRT,
                  "fuzz_one on a failing input (repro dir %s): status %#x",
                  with_dir ? "set" : "unset", status);
        snprintf(path, sizeof path, "%s/sim_core_byte-%016llx",
                 with_dir ? dir : nulldir, (unsigned long long)r.trace_hash);
        f = fopen(path, "rb");
        if (f) {
            got = fread(back, 1, sizeof back, f);
            fclose(f);
            remove(path);
        }
        ALK_CHECK(with_dir ? f && got == sizeof in && !memcmp(back, in, got) : !f,
                  "fuzz_one with the repro dir %s: %s %s (%zu bytes)",
                  with_dir ? "set" : "unset", path, f ? "written" : "missing", got);
    }
    rmdir(nulldir);
    rmdir(dir);
}

static void check_shrink(const uint8_t *data, size_t size)
{
    uint8_t in[TOY_INPUT], out[TOY_INPUT], work[TOY_INPUT], probe[TOY_INPUT];
    size_t n = size < TOY_INPUT ? size : TOY_INPUT, k, i, j;
    toy_outcome want, got;
    unsigned used;
    memcpy(in, data, n);
    {
        /* no state: the run says why, and runs no step */
        alksim_scenario sc = toy_scenario;
        alksim_run_result r;
        int rc;
        sc.setup = toy_no_setup;
        rc = alksim_run(&sc, in, n, 0, NULL, &r);
        ALK_CHECK(rc == ALKSIM_ERR_INVALID_ARGUMENT && r.code == rc && r.steps == 0,
                  "a setup without state: %d (result %d, %u steps)", rc, r.code,
                  r.steps);
        sc.setup = toy_failed_setup;
        rc = alksim_run(&sc, in, n, 0, NULL, &r);
        ALK_CHECK(rc == ALKSIM_ERR_FAILED && r.code == rc && r.steps == 0,
                  "a failed setup: %d (result %d, %u steps)", rc, r.code, r.steps);
        /* the first failure wins: its site, in the setup phase, and one
         * FAILED line after the scenario and kinds lines */
        ALK_CHECK(r.failure_site == fnv1a(0xcbf29ce484222325u, "toy: setup %s", 13) &&
                      r.failure_phase == 0 && r.failure_kind == -1 &&
                      r.trace_lines == 3,
                  "a failed setup: site %016llx phase %d kind %d, %lu trace lines",
                  (unsigned long long)r.failure_site, r.failure_phase, r.failure_kind,
                  r.trace_lines);
        sc.setup = toy_no_setup; /* the runner's own failure: "%s" */
        rc = alksim_run(&sc, in, n, 0, NULL, &r);
        ALK_CHECK(r.failure_site == fnv1a(0xcbf29ce484222325u, "%s", 2) &&
                      r.failure_phase == 0 && r.failure_kind == -1 &&
                      r.trace_lines == 3,
                  "a setup without state: site %016llx phase %d kind %d, %lu lines",
                  (unsigned long long)r.failure_site, r.failure_phase, r.failure_kind,
                  r.trace_lines);
    }
    want = toy_run(in, n);
    check_trace(in, n, want);
    check_swarm(in, n);
    check_shrink_byte(data, size);
    check_fuzz_one();
    toy_runs = 0;
    k = alksim_shrink(&toy_scenario, in, n, out, work, TOY_RUNS);
    used = toy_runs;
    ALK_CHECK(used <= TOY_RUNS, "shrink: %u runs, budget %u", used, TOY_RUNS);
    {
        uint8_t ref[TOY_INPUT];
        unsigned ref_runs;
        size_t rk;
        rk = ref_shrink(in, n, ref, TOY_RUNS, &ref_runs);
        ALK_CHECK(rk == k && used == ref_runs &&
                      (k == ALKSIM_SHRINK_PASSES || !memcmp(ref, out, k)),
                  "shrink: %zu bytes in %u runs; the documented search gives %zu in %u",
                  k, used, rk, ref_runs);
    }
    if (want.code == ALKSIM_OK) {
        ALK_CHECK(k == ALKSIM_SHRINK_PASSES,
                  "shrink: a passing input shrank to %zu bytes", k);
        return;
    }
    ALK_CHECK(k <= n, "shrink: %zu bytes out of %zu in", k, n);
    for (i = j = 0; i < n && j < k; i++) /* out: in minus bytes, or zeroed */
        if (out[j] == in[i] || out[j] == 0)
            j++;
    ALK_CHECK(j == k, "shrink: the output is not the input with bytes "
                      "removed or zeroed (%zu of %zu matched)", j, k);
    got = toy_run(out, k);
    ALK_CHECK(toy_same(got, want),
              "shrink: %zu -> %zu bytes changed the failure: code %d "
              "invariant %d kind %d, was %d %d %d",
              n, k, got.code, got.invariant, got.kind, want.code,
              want.invariant, want.kind);
    {
        /* a small budget: the search stops where the runs reach it */
        uint8_t ref[TOY_INPUT];
        unsigned budget = 1 + (n ? in[0] % 48u : 0), ref_runs, sused;
        size_t rk, sk;
        toy_runs = 0;
        sk = alksim_shrink(&toy_scenario, in, n, probe, work, budget);
        sused = toy_runs;
        ALK_CHECK(sused <= budget, "shrink: %u runs, budget %u", sused, budget);
        rk = ref_shrink(in, n, ref, budget, &ref_runs);
        ALK_CHECK(rk == sk && sused == ref_runs &&
                      (sk == ALKSIM_SHRINK_PASSES || !memcmp(ref, probe, sk)),
                  "shrink with %u runs: %zu bytes in %u runs; the documented search "
                  "gives %zu in %u", budget, sk, sused, rk, ref_runs);
    }
    if (used >= TOY_RUNS)
        return; /* stopped by the budget: no minimality promised */
    for (i = 0; i < k; i++) {
        memcpy(probe, out, i);
        memcpy(probe + i, out + i + 1, k - i - 1);
        got = toy_run(probe, k - 1);
        ALK_CHECK(!toy_same(got, want),
                  "shrink: not 1-minimal: byte %zu of %zu can go (%u runs)",
                  i, k, used);
        if (out[i]) {
            memcpy(probe, out, k);
            probe[i] = 0;
            got = toy_run(probe, k);
            ALK_CHECK(!toy_same(got, want),
                      "shrink: not 1-minimal: byte %zu of %zu can be zero "
                      "(%u runs)",
                      i, k, used);
        }
    }
}

/* Every input drives each scenario and check in turn, each reading the
 * bytes its own way (the core scenario's reading is unchanged). */
/* ---- the PRNG, seed mode and result texts against their definitions ----
 * Written here from the published algorithms, apart from the header:
 * splitmix64 (a Weyl step of 0x9e3779b97f4a7c15, then two xor-shift-
 * multiplies and a final xor-shift), xoshiro256** (output rotl(s1 * 5, 7)
 * * 9; state step t = s1 << 17, s2 ^= s0, s3 ^= s1, s1 ^= s2, s0 ^= s3,
 * s2 ^= t, s3 = rotl(s3, 45)) seeded with four splitmix64 outputs, and
 * seed mode's input (the header's comment: a splitmix64 stream from
 * seed ^ run * 0xd1b54a32d192ed03, its first output the length modulo
 * max_len + 1, then the bytes, eight per output, low byte first). A
 * mutant of any of them makes other scenarios from the same bytes - which
 * no scenario's invariant can tell. */
static uint64_t ref_weyl_mix(uint64_t *x)
{
    uint64_t z;
    *x += 0x9e3779b97f4a7c15ull;
    z = *x;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t ref_rot(uint64_t v, unsigned by)
{
    return (v << by) | (v >> (64u - by));
}

static void ref_xoshiro_step(uint64_t st[4])
{
    uint64_t t = st[1] << 17;
    st[2] ^= st[0];
    st[3] ^= st[1];
    st[1] ^= st[2];
    st[0] ^= st[3];
    st[2] ^= t;
    st[3] = ref_rot(st[3], 45);
}

/* The state whose splitmix64 output is `want`: each step of the mix
 * undone (x ^ x >> k by repeated substitution, the odd multipliers by
 * their inverses mod 2^64), then the Weyl increment taken back. */
static uint64_t ref_unxorshift(uint64_t y, unsigned k)
{
    uint64_t x = y;
    unsigned i;
    for (i = 0; i < 64 / k + 1; i++)
        x = y ^ (x >> k);
    return x;
}

static uint64_t ref_inverse(uint64_t c)
{
    uint64_t inv = c; /* Newton: each step doubles the correct low bits */
    unsigned i;
    for (i = 0; i < 6; i++)
        inv *= 2 - c * inv;
    return inv;
}

static uint64_t ref_state_for(uint64_t want)
{
    uint64_t z = ref_unxorshift(want, 31);
    z = ref_unxorshift(z * ref_inverse(0x94d049bb133111ebull), 27);
    z = ref_unxorshift(z * ref_inverse(0xbf58476d1ce4e5b9ull), 30);
    return z - 0x9e3779b97f4a7c15ull;
}

static void check_prng(const uint8_t *data, size_t size)
{
    uint64_t seed = 0, x, st[4], run, t = 0;
    alksim_rng rng;
    uint8_t got[300], want[300];
    size_t i, n, max_len;
    int k;
    for (i = 0; i < 8 && i < size; i++) seed = seed << 8 | data[i];
    x = seed;
    for (k = 0; k < 4; k++) st[k] = ref_weyl_mix(&x);
    alksim_rng_seed(&rng, seed);
    for (k = 0; k < 16; k++) {
        uint64_t out = ref_rot(st[1] * 5, 7) * 9, v = alksim_rng_next(&rng);
        ref_xoshiro_step(st);
        ALK_CHECK(v == out, "xoshiro256** output %d of seed %016llx: %016llx, not %016llx",
                  k, (unsigned long long)seed, (unsigned long long)v,
                  (unsigned long long)out);
    }
    /* below(n) is the next output mod n, and 0 for n = 0 without drawing;
     * chance(num, den) is below(den) < num, and 0 for den = 0 */
    for (k = 0; k < 8; k++) {
        uint64_t bound = k == 0 ? 0
                         : 1 + (uint64_t)(size > (size_t)k ? data[k] : (unsigned)k) *
                                   (uint64_t)k * 977u;
        uint64_t out = ref_rot(st[1] * 5, 7) * 9, v = alksim_rng_below(&rng, bound);
        if (bound)
            ref_xoshiro_step(st);
        ALK_CHECK(v == (bound ? out % bound : 0), "rng_below(%llu) = %llu, not %llu",
                  (unsigned long long)bound, (unsigned long long)v,
                  (unsigned long long)(bound ? out % bound : 0));
        out = ref_rot(st[1] * 5, 7) * 9;
        v = (uint64_t)alksim_rng_chance(&rng, (uint32_t)k * 3, (uint32_t)(bound & 31));
        if (bound & 31)
            ref_xoshiro_step(st);
        ALK_CHECK(v == (uint64_t)((bound & 31) && out % (bound & 31) < (uint64_t)k * 3),
                  "rng_chance(%d, %llu) = %llu", k * 3,
                  (unsigned long long)(bound & 31), (unsigned long long)v);
    }
    /* a seeded byte source: alksim_bytes takes a fresh output per 8 bytes
     * (little-endian), starting afresh at every call */
    {
        alksim_source src;
        size_t m = 1 + (size > 10 ? data[10] % 40 : 13), j;
        x = seed;
        for (k = 0; k < 4; k++) st[k] = ref_weyl_mix(&x);
        alksim_source_init_rng(&src, seed);
        for (j = 0; j < 3; j++, m = m * 3 % 41 + 1) {
            alksim_bytes(&src, got, m);
            for (i = 0; i < m; i++) {
                if (i % 8 == 0) {
                    t = ref_rot(st[1] * 5, 7) * 9;
                    ref_xoshiro_step(st);
                }
                want[i] = (uint8_t)(t >> (8 * (i % 8)));
            }
            ALK_CHECK(memcmp(got, want, m) == 0 && !alksim_source_done(&src),
                      "alksim_bytes(%zu) of a source seeded %016llx is not the "
                      "generator's stream", m, (unsigned long long)seed);
        }
        /* the integer draws: an output each, its low 8/16/32/64 bits; a
         * seeded source never runs out */
        for (k = 0; k < 4; k++) {
            uint64_t v = k == 0   ? alksim_u8(&src)
                         : k == 1 ? alksim_u16(&src)
                         : k == 2 ? alksim_u32(&src)
                                  : alksim_u64(&src);
            uint64_t mask = k == 3 ? ~0ull : (1ull << (8u << k)) - 1;
            t = ref_rot(st[1] * 5, 7) * 9;
            ref_xoshiro_step(st);
            ALK_CHECK(v == (t & mask), "seeded draw of %u bits: %llx, not %llx",
                      8u << k, (unsigned long long)v, (unsigned long long)(t & mask));
        }
        ALK_CHECK(alksim_source_remaining(&src) == SIZE_MAX && !alksim_source_done(&src),
                  "a seeded source has %zu bytes left", alksim_source_remaining(&src));
    }
    run = size > 8 ? data[8] : 0;
    max_len = size > 9 ? data[9] + 1u : 40;
    x = seed ^ (run * 0xd1b54a32d192ed03ull);
    n = (size_t)(ref_weyl_mix(&x) % (max_len + 1));
    for (i = 0; i < n; i++) {
        if (i % 8 == 0) t = ref_weyl_mix(&x);
        want[i] = (uint8_t)(t >> (8 * (i % 8)));
    }
    memset(got, 0xEE, sizeof got);
    ALK_CHECK(alksim_seed_input(seed, run, got, max_len) == n && memcmp(got, want, n) == 0,
              "seed mode's input %llu of seed %016llx is not the documented stream",
              (unsigned long long)run, (unsigned long long)seed);
    for (i = n; i < max_len; i++) /* the rest of the buffer untouched */
        ALK_CHECK(got[i] == 0xEE, "seed mode's input of %zu bytes wrote byte %zu", n, i);
    {
        /* max_len SIZE_MAX: no bound, the first output is the length - a
         * seed chosen so that it is small (0..299) */
        uint64_t len = (seed ^ run) % 300, s0 = ref_state_for(len);
        x = s0;
        ALK_CHECK(ref_weyl_mix(&x) == len, "splitmix64 not undone for %llu",
                  (unsigned long long)len);
        for (i = 0; i < len; i++) {
            if (i % 8 == 0) t = ref_weyl_mix(&x);
            want[i] = (uint8_t)(t >> (8 * (i % 8)));
        }
        memset(got, 0xEE, sizeof got);
        n = alksim_seed_input(s0 ^ (run * 0xd1b54a32d192ed03ull), run, got, SIZE_MAX);
        ALK_CHECK(n == len && !memcmp(got, want, n),
                  "seed mode without a bound: %zu bytes, want %llu", n,
                  (unsigned long long)len);
    }
    /* every result code has its own text; an unknown code still has one */
    {
        static const int codes[] = {
#define CODE_OF(name, value, text) value,
            ALKSIM_RESULT_LIST(CODE_OF)
#undef CODE_OF
        };
        size_t a, b;
        for (a = 0; a < sizeof codes / sizeof codes[0]; a++) {
            const char *ta = alksim_strerror(codes[a]);
            ALK_CHECK(ta && *ta && strcmp(ta, alksim_strerror(12345)) != 0,
                      "result %d has no text of its own", codes[a]);
            for (b = 0; b < a; b++)
                ALK_CHECK(strcmp(ta, alksim_strerror(codes[b])) != 0,
                          "results %d and %d read alike", codes[a], codes[b]);
        }
        ALK_CHECK(alksim_strerror(12345) && *alksim_strerror(12345),
                  "an unknown result has no text");
    }
}

/* ---- a sans-IO node's timers (alksim_node) --------------------------------
 * A toy node whose deadline and queued output the input sets, driven by
 * alksim_node_deadline and alksim_node_fire at times the input picks,
 * against a model of the documented rules: queued output is due now; a
 * deadline before now is reported (and still returned); fire calls the
 * node only when its deadline is due, and more than spin_limit (0 = 64)
 * fires at one instant return ALKSIM_ERR_SPIN without calling it. The
 * node starts as garbage: init sets every field. */
typedef struct toy_node {
    uint64_t deadline;
    int output;
    unsigned calls;
    uint64_t called_at;
} toy_node;

static uint64_t toy_node_poll(void *ctx) { return ((toy_node *)ctx)->deadline; }
static int toy_node_output(void *ctx) { return ((toy_node *)ctx)->output; }
static void toy_node_fire(void *ctx, uint64_t now)
{
    toy_node *t = (toy_node *)ctx;
    t->calls++;
    t->called_at = now;
}

static void check_node(const uint8_t *data, size_t size)
{
    alksim_node node;
    toy_node t;
    alksim_source src;
    uint64_t now = 1000, last = 0;
    unsigned count = 0, limit, step;
    int (*hout)(void *);
    alksim_source_init_bytes(&src, data, size);
    hout = alksim_bool(&src) ? toy_node_output : NULL;
    memset(&t, 0, sizeof t);
    t.deadline = ALKSIM_NEVER;
    memset(&node, 0xA5, sizeof node);
    alksim_node_init(&node, &t, toy_node_poll, hout, toy_node_fire);
    ALK_CHECK(node.ctx == &t && node.poll_timeout == toy_node_poll &&
                  node.has_output == hout &&
                  node.handle_timeout == toy_node_fire && node.spin_limit == 0 &&
                  node.fires_at_same_time == 0,
              "alksim_node_init left a field unset");
    node.spin_limit = (unsigned)alksim_range(&src, 0, 3);
    limit = node.spin_limit ? node.spin_limit : 64;
    for (step = 0; step < 64 && !alksim_source_done(&src); step++) {
        unsigned op = (unsigned)alksim_pick(&src, 5), k, n;
        if (op == 0) {
            uint64_t d = alksim_range(&src, 0, 4);
            t.deadline = d == 4 ? ALKSIM_NEVER : now + d - 2;
        } else if (op == 1) {
            t.output = alksim_bool(&src);
        } else if (op == 2) {
            now += alksim_range(&src, 0, 2);
        } else if (op == 3) {
            int err = 12345;
            uint64_t got = alksim_node_deadline(&node, now, &err);
            int out = hout && t.output;
            uint64_t want = out ? now : t.deadline;
            int want_err = !out && t.deadline != ALKSIM_NEVER && t.deadline < now
                               ? ALKSIM_ERR_DEADLINE_PAST
                               : ALKSIM_OK;
            ALK_CHECK(got == want && err == want_err &&
                          alksim_node_deadline(&node, now, NULL) == want,
                      "node_deadline at %llu: %llu (err %d), want %llu (%d)",
                      (unsigned long long)now, (unsigned long long)got, err,
                      (unsigned long long)want, want_err);
        } else {
            n = 1 + (unsigned)alksim_range(&src, 0, 69);
            for (k = 0; k < n; k++) {
                unsigned before = t.calls;
                int rc = alksim_node_fire(&node, now), want;
                if (t.deadline == ALKSIM_NEVER || t.deadline > now) {
                    want = ALKSIM_NONE;
                } else if (count && last == now) {
                    want = ++count > limit ? ALKSIM_ERR_SPIN : ALKSIM_OK;
                } else {
                    last = now;
                    count = 1;
                    want = ALKSIM_OK;
                }
                ALK_CHECK(rc == want && t.calls == before + (want == ALKSIM_OK) &&
                              (want != ALKSIM_OK || t.called_at == now),
                          "node_fire at %llu (deadline %llu, fire %u at this "
                          "instant, limit %u): %d, want %d",
                          (unsigned long long)now, (unsigned long long)t.deadline,
                          count, limit, rc, want);
            }
        }
    }
}

/* ---- init refusals ---------------------------------------------------------
 * Each init, on a configuration drawn from the input, given no memory,
 * memory off 8-byte alignment, or fewer bytes than its *_mem_size(), must
 * refuse with ALKSIM_ERR_INVALID_ARGUMENT and say why in the object's error
 * field: a rule (non-NULL text), the offending value and the bound - 0 and
 * the size for NULL, the address's low bits and 8 for misalignment, the
 * bytes given and the size for too few. Given exactly the size it must
 * succeed with the error field zero, however the object was left before. */
static uint64_t init_mem[(1 << 17) / 8 + 1];
static int null_config_checked;

static void check_refusal(const char *obj, int rc, const alksim_error_info *e,
                          int want_ok, uint64_t value, uint64_t limit)
{
    if (want_ok) {
        ALK_CHECK(rc == ALKSIM_OK && e->code == ALKSIM_OK && !e->what &&
                      !e->value && !e->limit,
                  "%s init: %d, error {%d, %s, %llu, %llu} after a success",
                  obj, rc, e->code, e->what ? e->what : "NULL",
                  (unsigned long long)e->value, (unsigned long long)e->limit);
        return;
    }
    ALK_CHECK(rc == ALKSIM_ERR_INVALID_ARGUMENT && e->code == rc && e->what &&
                  e->value == value && e->limit == limit,
              "%s init: %d, error {%d, %s, %llu, %llu}; want value %llu "
              "bound %llu",
              obj, rc, e->code, e->what ? e->what : "NULL",
              (unsigned long long)e->value, (unsigned long long)e->limit,
              (unsigned long long)value, (unsigned long long)limit);
}

/* Configurations whose memory size overflows size_t: mem_size 0 and the
 * init refuses them; the disk's exact largest size at the top of size_t. */
/* Configurations whose memory size overflows size_t: mem_size 0 and the
 * init refuses them; the disk's exact largest size at the top of size_t. */
static void check_init_overflow(alksim_net *net, alksim_streams *st, alksim_disk *disk,
                                const alksim_net_config *nc, const alksim_streams_config *sc,
                                const alksim_disk_config *dc, uint8_t *mem)
{
    /* a configuration whose size overflows size_t: mem_size 0, and init
     * refuses it saying so (value and bound 0) */
    {
        alksim_net_config bn = *nc;
        alksim_streams_config bs = *sc;
        alksim_disk_config bd = *dc;
        bn.hosts = UINT32_MAX;
        bs.max_conns = UINT32_MAX;
        bs.buffer = UINT32_MAX;
        bd.sectors = UINT64_MAX / 2;
        ALK_CHECK(alksim_net_mem_size(&bn) == 0 && alksim_streams_mem_size(&bs) == 0 &&
                      alksim_disk_mem_size(&bd) == 0,
                  "an overflowing configuration has a size: %zu %zu %zu",
                  alksim_net_mem_size(&bn), alksim_streams_mem_size(&bs),
                  alksim_disk_mem_size(&bd));
        check_refusal("net", alksim_net_init(net, &bn, mem, sizeof init_mem), &net->error,
                      0, 0, 0);
        check_refusal("streams", alksim_streams_init(st, &bs, mem, sizeof init_mem),
                      &st->error, 0, 0, 0);
        check_refusal("disk", alksim_disk_init(disk, &bd, mem, sizeof init_mem),
                      &disk->error, 0, 0, 0);
    }
    {
        /* the disk's size at the top of size_t: the most sectors whose
         * total (device, cache, cache index, each rounded up to 8) fits is
         * that total; one sector more overflows (0) - where the device
         * piece alone is far from the top, the cache's piece pushes the
         * total over it */
        alksim_disk_config td = *dc;
        uint64_t ss = dc->sector_size ? dc->sector_size : 512;
        uint64_t mp = dc->max_pending ? dc->max_pending : 64;
        uint64_t rest = ((mp * ss + 7) & ~(uint64_t)7) + mp * 8, s_max;
        s_max = ((uint64_t)SIZE_MAX - rest) / ss;
        while (((s_max * ss + 7) & ~(uint64_t)7) > (uint64_t)SIZE_MAX - rest)
            s_max--;
        td.sectors = s_max;
        ALK_CHECK(alksim_disk_mem_size(&td) == ((s_max * ss + 7) & ~(uint64_t)7) + rest,
                  "disk of %llu sectors of %llu: mem_size %zu", (unsigned long long)s_max,
                  (unsigned long long)ss, alksim_disk_mem_size(&td));
        td.sectors = s_max + 1;
        ALK_CHECK(alksim_disk_mem_size(&td) == 0,
                  "disk of %llu sectors of %llu: mem_size %zu past size_t",
                  (unsigned long long)(s_max + 1), (unsigned long long)ss,
                  alksim_disk_mem_size(&td));
    }
}

/* The queue's init: no queue, or no memory for a capacity, is refused; one
 * set up again starts afresh. */
static void check_queue_init(void)
{
    /* the queue: no queue, or no memory for a capacity, is refused */
    {
        alksim_queue q;
        alksim_event ev[2];
        ALK_CHECK(alksim_queue_init(NULL, ev, 2) == ALKSIM_ERR_INVALID_ARGUMENT &&
                      alksim_queue_init(&q, NULL, 2) == ALKSIM_ERR_INVALID_ARGUMENT &&
                      alksim_queue_init(&q, NULL, 0) == ALKSIM_OK &&
                      alksim_queue_push(&q, 1, 0, 0, 0) == ALKSIM_ERR_FULL,
                  "queue_init's arguments");
    }
    {
        /* a queue set up again starts afresh: after one that pushed (here
         * as if 2^64 - 1 times) two events at the same time come out in
         * insertion order, numbered from 0 */
        alksim_queue q;
        alksim_event ev[2], a, b;
        ALK_CHECK(alksim_queue_init(&q, ev, 2) == ALKSIM_OK &&
                      alksim_queue_push(&q, 7, 1, 0, 0) == ALKSIM_OK &&
                      alksim_queue_pop(&q, &a) == ALKSIM_OK,
                  "queue: one push and pop");
        q.next_seq = UINT64_MAX;
        ALK_CHECK(alksim_queue_init(&q, ev, 2) == ALKSIM_OK &&
                      alksim_queue_push(&q, 5, 1, 0, 0) == ALKSIM_OK &&
                      alksim_queue_push(&q, 5, 2, 0, 0) == ALKSIM_OK &&
                      alksim_queue_pop(&q, &a) == ALKSIM_OK &&
                      alksim_queue_pop(&q, &b) == ALKSIM_OK,
                  "queue: two pushes and pops after a second init");
        ALK_CHECK(a.kind == 1 && b.kind == 2 && a.seq == 0 && b.seq == 1,
                  "queue set up again: kinds %u then %u, seq %llu then %llu", a.kind,
                  b.kind, (unsigned long long)a.seq, (unsigned long long)b.seq);
    }
}

/* No configuration at all is every default (the same for every input:
 * checked once per process). */
static void check_null_config(void)
{
    if (!null_config_checked) {
        static uint64_t big[(1 << 22) / 8];
        static alksim_net dnet;
        static alksim_streams dst;
        static alksim_disk ddisk;
        alksim_net_config znc;
        alksim_streams_config zsc;
        alksim_disk_config zdc;
        null_config_checked = 1;
        memset(&znc, 0, sizeof znc);
        memset(&zsc, 0, sizeof zsc);
        memset(&zdc, 0, sizeof zdc);
        ALK_CHECK(alksim_net_mem_size(NULL) == alksim_net_mem_size(&znc) &&
                      alksim_streams_mem_size(NULL) == alksim_streams_mem_size(&zsc) &&
                      alksim_disk_mem_size(NULL) == alksim_disk_mem_size(&zdc),
                  "a NULL configuration's size is not the defaults'");
        ALK_CHECK(alksim_net_init(&dnet, NULL, big, sizeof big) == ALKSIM_OK &&
                      dnet.cfg.hosts == 2 && dnet.cfg.max_in_flight == 256 &&
                      dnet.cfg.slot_size == 1500 && dnet.cfg.nat_mappings == 16,
                  "a NULL net configuration is not the defaults");
        ALK_CHECK(alksim_streams_init(&dst, NULL, big, sizeof big) == ALKSIM_OK &&
                      dst.max_conns == 16 && dst.buffer == 65536 && dst.hosts == 2,
                  "a NULL streams configuration is not the defaults");
        ALK_CHECK(alksim_disk_init(&ddisk, NULL, big, sizeof big) == ALKSIM_OK &&
                      ddisk.cfg.sector_size == 512 && ddisk.cfg.sectors == 2048 &&
                      ddisk.cfg.max_pending == 64,
                  "a NULL disk configuration is not the defaults");
    }
}

static void check_init(const uint8_t *data, size_t size)
{
    static alksim_net net;
    static alksim_streams st;
    static alksim_disk disk;
    alksim_source src;
    alksim_net_config nc;
    alksim_streams_config sc;
    alksim_disk_config dc;
    uint8_t *mem = (uint8_t *)init_mem;
    size_t need[3], i;
    alksim_source_init_bytes(&src, data, size);
    nc.hosts = (uint32_t)alksim_range(&src, 0, 6);
    nc.max_in_flight = (uint32_t)alksim_range(&src, 1, 40);
    nc.slot_size = (uint32_t)alksim_range(&src, 0, 600);
    nc.nat_mappings = (uint32_t)alksim_range(&src, 0, 20);
    sc.max_conns = (uint32_t)alksim_range(&src, 0, 8);
    sc.buffer = (uint32_t)alksim_range(&src, 1, 700);
    sc.hosts = (uint32_t)alksim_range(&src, 0, 6);
    sc.net = NULL;
    dc.sector_size = 64u << alksim_range(&src, 0, 3);
    dc.sectors = alksim_range(&src, 1, 32);
    dc.max_pending = (uint32_t)alksim_range(&src, 0, 32);
    need[0] = alksim_net_mem_size(&nc);
    need[1] = alksim_streams_mem_size(&sc);
    need[2] = alksim_disk_mem_size(&dc);
    for (i = 0; i < 3; i++)
        ALK_CHECK(need[i] > 0 && need[i] <= sizeof init_mem - 8,
                  "mem_size %zu of object %zu", need[i], i);
    /* each case on each object: NULL, misaligned by 1..7, one byte to all
     * but one short, exact - then exact again after a refusal */
    for (i = 0; i < 5; i++) {
        size_t off = 1 + (size_t)alksim_range(&src, 0, 6);
        size_t cut[3], k;
        for (k = 0; k < 3; k++)
            cut[k] = 1 + (size_t)alksim_range(&src, 0, need[k] - 1);
#define INIT_CASE(obj, init, e, k, o, cfg)                                       \
        if (i == 0)                                                            \
            check_refusal(obj, init(o, cfg, NULL, need[k]), e, 0, 0, need[k]);   \
        else if (i == 1)                                                       \
            check_refusal(obj, init(o, cfg, mem + off, need[k]), e, 0, off, 8);  \
        else if (i == 2)                                                       \
            check_refusal(obj, init(o, cfg, mem, need[k] - cut[k]), e, 0,        \
                          need[k] - cut[k], need[k]);                          \
        else {                                                                 \
            memset(o, 0xA5, sizeof *(o));  /* init sets every field */          \
            check_refusal(obj, init(o, cfg, mem, need[k]), e, 1, 0, 0);         \
        }
        INIT_CASE("net", alksim_net_init, &net.error, 0, &net, &nc);
        INIT_CASE("streams", alksim_streams_init, &st.error, 1, &st, &sc);
        INIT_CASE("disk", alksim_disk_init, &disk.error, 2, &disk, &dc);
#undef INIT_CASE
    }
    /* a fresh object (made from garbage) counts nothing and holds nothing;
     * each is set up again first: the three share init_mem */
    {
        alksim_net_stats ns, zero_ns;
        alksim_stream_stats zero_ss;
        alksim_disk_stats zero_ds;
        memset(&zero_ns, 0, sizeof zero_ns);
        memset(&zero_ss, 0, sizeof zero_ss);
        memset(&zero_ds, 0, sizeof zero_ds);
        memset(&net, 0xA5, sizeof net);
        ALK_CHECK(alksim_net_init(&net, &nc, mem, need[0]) == ALKSIM_OK, "net init");
        ns = alksim_net_get_stats(&net);
        ALK_CHECK(!memcmp(&ns, &zero_ns, sizeof ns) &&
                      alksim_net_next_time(&net) == ALKSIM_NEVER &&
                      alksim_net_check(&net) == ALKSIM_OK,
                  "a fresh net counts or holds something");
        /* the size asked is the size used: the last table (the free list)
         * ends within the last 8 bytes */
        {
            const uint8_t *end = (const uint8_t *)(net.free_slots + net.cfg.max_in_flight);
            ALK_CHECK(end <= mem + need[0] && end + 8 > mem + need[0],
                      "the net's tables end at byte %td of %zu", end - mem, need[0]);
        }
        /* a host past the net's: never blocked, and no NAT for it */
        for (i = 0; i < net.cfg.hosts; i++)
            ALK_CHECK(!alksim_net_blocked(&net, net.cfg.hosts, (uint32_t)i) &&
                          !alksim_net_blocked(&net, (uint32_t)i, net.cfg.hosts),
                      "host %u of %u: blocked with host %zu", net.cfg.hosts,
                      net.cfg.hosts, i);
        ALK_CHECK(alksim_net_set_nat(&net, net.cfg.hosts, NULL) ==
                      ALKSIM_ERR_INVALID_ARGUMENT,
                  "a NAT for host %u of %u taken", net.cfg.hosts, net.cfg.hosts);
        memset(&st, 0xA5, sizeof st);
        ALK_CHECK(alksim_streams_init(&st, &sc, mem, need[1]) == ALKSIM_OK, "streams init");
        ALK_CHECK(!memcmp(&st.stats, &zero_ss, sizeof zero_ss) &&
                      alksim_stream_next_time(&st, 0) == ALKSIM_NEVER,
                  "fresh streams count or hold something");
        ALK_CHECK(st.listening + st.hosts <= mem + need[1] &&
                      st.listening + st.hosts + 8 > mem + need[1],
                  "the streams' tables end at byte %td of %zu",
                  st.listening + st.hosts - mem, need[1]);
        /* what is not there buffers nothing */
        ALK_CHECK(alksim_stream_buffered(&st, st.max_conns, 0) == 0 &&
                      alksim_stream_buffered(&st, 0, 2) == 0 &&
                      alksim_stream_buffered(&st, 0, -1) == 0 &&
                      alksim_stream_buffered(NULL, 0, 0) == 0,
                  "a connection past %u, or a side other than 0 and 1, buffers "
                  "something", st.max_conns);
        memset(&disk, 0xA5, sizeof disk);
        ALK_CHECK(alksim_disk_init(&disk, &dc, mem, need[2]) == ALKSIM_OK, "disk init");
        ALK_CHECK(!memcmp(&disk.stats, &zero_ds, sizeof zero_ds) &&
                      alksim_disk_pending(&disk) == 0,
                  "a fresh disk counts or holds something");
        {
            const uint8_t *end =
                (const uint8_t *)(disk.pending_sector + disk.cfg.max_pending);
            ALK_CHECK(end <= mem + need[2] && end + 8 > mem + need[2],
                      "the disk's tables end at byte %td of %zu", end - mem, need[2]);
        }
        {
            /* empty accesses: fine up to the end, a range error past it */
            uint64_t end = (uint64_t)dc.sectors * dc.sector_size;
            uint8_t b[1] = {0};
            ALK_CHECK(alksim_disk_read(&disk, end, b, 0) == ALKSIM_OK &&
                          alksim_disk_write(&disk, end, b, 0) == ALKSIM_OK &&
                          alksim_disk_read(&disk, end + 1, b, 0) == ALKSIM_ERR_RANGE &&
                          alksim_disk_write(&disk, end + 1, b, 0) == ALKSIM_ERR_RANGE,
                      "empty accesses at the end (%llu) and past it",
                      (unsigned long long)end);
        }
    }
    /* the configurations as used: each zero field its documented default */
    ALK_CHECK(net.cfg.hosts == (nc.hosts ? nc.hosts : 2) &&
                  net.cfg.max_in_flight == nc.max_in_flight &&
                  net.cfg.slot_size == (nc.slot_size ? nc.slot_size : 1500) &&
                  net.cfg.nat_mappings == (nc.nat_mappings ? nc.nat_mappings : 16),
              "the net's configuration as used: %u %u %u %u from %u %u %u %u",
              net.cfg.hosts, net.cfg.max_in_flight, net.cfg.slot_size,
              net.cfg.nat_mappings, nc.hosts, nc.max_in_flight, nc.slot_size,
              nc.nat_mappings);
    ALK_CHECK(st.max_conns == (sc.max_conns ? sc.max_conns : 16) &&
                  st.buffer == sc.buffer && st.hosts == (sc.hosts ? sc.hosts : 2),
              "the streams' configuration as used: %u %u %u from %u %u %u",
              st.max_conns, st.buffer, st.hosts, sc.max_conns, sc.buffer, sc.hosts);
    ALK_CHECK(disk.cfg.sector_size == dc.sector_size && disk.cfg.sectors == dc.sectors &&
                  disk.cfg.max_pending == (dc.max_pending ? dc.max_pending : 64),
              "the disk's configuration as used: %u %llu %u from %u %llu %u",
              disk.cfg.sector_size, (unsigned long long)disk.cfg.sectors,
              disk.cfg.max_pending, dc.sector_size, (unsigned long long)dc.sectors,
              dc.max_pending);
    check_init_overflow(&net, &st, &disk, &nc, &sc, &dc, mem);
    /* no object to set up is refused */
    ALK_CHECK(alksim_net_init(NULL, &nc, mem, need[0]) == ALKSIM_ERR_INVALID_ARGUMENT &&
                  alksim_streams_init(NULL, &sc, mem, need[1]) ==
                      ALKSIM_ERR_INVALID_ARGUMENT &&
                  alksim_disk_init(NULL, &dc, mem, need[2]) == ALKSIM_ERR_INVALID_ARGUMENT,
              "an init without its object");
    check_queue_init();
    check_null_config();
}

/* ---- the disk's bounds ------------------------------------------------------
 * A disk of `size` bytes takes an access of len bytes at offset exactly
 * when it lies inside: len <= size and offset <= size - len (the rule,
 * written here without the sum offset + len, which wraps past 2^64).
 * Everything else is refused with ALKSIM_ERR_RANGE before any effect: no
 * byte of the disk changes, nothing is cached, no counter moves, a read's
 * buffer is not touched. Each input gets a geometry (control bytes from the
 * end: sector size, sectors, cache) and first the sweep: lengths 0, 1, 2,
 * a sector, size - 1, size, size + 1 and SIZE_MAX (ascending, so a wrapped
 * sum is first taken for one byte) at offsets UINT64_MAX - len, UINT64_MAX,
 * size - len, size, size + 1 and 0, each one below, at and one above, read
 * and write; then up to 8 accesses the input draws (op, one of those bases
 * or a drawn offset, a step -1/0/+1, one of those lengths or a drawn one).
 * After every access the whole disk reads back as the model says. */
#define BOUNDS_MAX_SIZE (32u * 512u)
static uint64_t bounds_mem[(BOUNDS_MAX_SIZE + 8u * 512u + 8u * 8u + 256u) / 8];
static uint8_t bounds_model[BOUNDS_MAX_SIZE];
static uint8_t bounds_buf[BOUNDS_MAX_SIZE + 64];
static uint8_t bounds_back[BOUNDS_MAX_SIZE];

static void bounds_access(alksim_disk *disk, int write, uint64_t offset, uint64_t len,
                          uint64_t size, unsigned serial)
{
    alksim_disk_stats before = disk->stats;
    uint32_t pending = alksim_disk_pending(disk);
    int inside = len <= size && offset <= size - len, rc;
    size_t i;
    if ((uint64_t)(size_t)len != len) return; /* (a narrower size_t) */
    for (i = 0; i < sizeof bounds_buf; i++)
        bounds_buf[i] = (uint8_t)(write ? serial * 7u + i : 0xA5u);
    alk_trace("%s [%llu, +%llu) on %llu bytes: %s", write ? "write" : "read",
              (unsigned long long)offset, (unsigned long long)len,
              (unsigned long long)size, inside ? "inside" : "outside");
    rc = write ? alksim_disk_write(disk, offset, bounds_buf, (size_t)len)
               : alksim_disk_read(disk, offset, bounds_buf, (size_t)len);
    ALK_CHECK(rc == (inside ? ALKSIM_OK : ALKSIM_ERR_RANGE),
              "disk %s of %llu bytes at %llu (disk of %llu bytes): %s, want %s",
              write ? "write" : "read", (unsigned long long)len,
              (unsigned long long)offset, (unsigned long long)size, alksim_strerror(rc),
              inside ? "ok" : "a range error");
    if (!inside) {
        ALK_CHECK(!memcmp(&before, &disk->stats, sizeof before) &&
                      alksim_disk_pending(disk) == pending,
                  "a refused %s (%llu bytes at %llu) counted or cached something",
                  write ? "write" : "read", (unsigned long long)len,
                  (unsigned long long)offset);
        for (i = 0; !write && i < sizeof bounds_buf; i++)
            ALK_CHECK(bounds_buf[i] == 0xA5u, "a refused read (%llu bytes at %llu) "
                      "wrote byte %zu of its buffer", (unsigned long long)len,
                      (unsigned long long)offset, i);
    } else if (write) {
        memcpy(bounds_model + offset, bounds_buf, (size_t)len);
    } else {
        ALK_CHECK(!memcmp(bounds_buf, bounds_model + offset, (size_t)len),
                  "a read of %llu bytes at %llu differs from the writes",
                  (unsigned long long)len, (unsigned long long)offset);
    }
    /* the whole disk, as the model has it */
    ALK_CHECK(alksim_disk_read(disk, 0, bounds_back, (size_t)size) == ALKSIM_OK &&
                  !memcmp(bounds_back, bounds_model, (size_t)size),
              "after a %s of %llu bytes at %llu the disk differs from the model",
              write ? "write" : "read", (unsigned long long)len,
              (unsigned long long)offset);
}

/* The offsets around which the bounds are tried, for an access of len. */
static uint64_t bounds_base(unsigned which, uint64_t len, uint64_t size)
{
    switch (which) {
    case 0: return UINT64_MAX - len;
    case 1: return UINT64_MAX;
    case 2: return size - len;
    case 3: return size;
    case 4: return size + 1;
    default: return 0;
    }
}

static uint64_t bounds_len(unsigned which, uint64_t ss, uint64_t size)
{
    switch (which) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 2;
    case 3: return ss;
    case 4: return size - 1;
    case 5: return size;
    case 6: return size + 1;
    default: return SIZE_MAX;
    }
}

static void check_disk_bounds(const uint8_t *data, size_t size)
{
    static alksim_disk disk;
    alksim_source src;
    alksim_disk_config dc;
    uint64_t dsize;
    unsigned l, b, step, n, serial = 0;
    int w;
    alksim_source_init_bytes(&src, data, size);
    dc.sector_size = 64u << alksim_range(&src, 0, 3);
    dc.sectors = alksim_range(&src, 1, 32);
    dc.max_pending = (uint32_t)alksim_range(&src, 1, 8);
    dsize = dc.sectors * dc.sector_size;
    ALK_CHECK(alksim_disk_mem_size(&dc) <= sizeof bounds_mem &&
                  alksim_disk_init(&disk, &dc, bounds_mem, sizeof bounds_mem) == ALKSIM_OK,
              "bounds disk: %u sectors of %u", (unsigned)dc.sectors, dc.sector_size);
    memset(bounds_model, 0, sizeof bounds_model);
    alk_trace("bounds: %llu sectors of %u bytes, cache %u", (unsigned long long)dc.sectors,
              dc.sector_size, dc.max_pending);
    for (l = 0; l < 8; l++)
        for (b = 0; b < 6; b++)
            for (step = 0; step < 3; step++)
                for (w = 0; w < 2; w++) {
                    uint64_t len = bounds_len(l, dc.sector_size, dsize);
                    bounds_access(&disk, w, bounds_base(b, len, dsize) + step - 1, len,
                                  dsize, serial++);
                }
    n = (unsigned)alksim_range(&src, 0, 8);
    while (n--) {
        int write = alksim_bool(&src);
        unsigned which_len = (unsigned)alksim_pick(&src, 9);
        unsigned which_base = (unsigned)alksim_pick(&src, 7);
        uint64_t s = alksim_range(&src, 0, 2), len, off;
        len = which_len == 8 ? alksim_u64(&src) : bounds_len(which_len, dc.sector_size, dsize);
        off = which_base == 6 ? alksim_u64(&src) : bounds_base(which_base, len, dsize);
        bounds_access(&disk, write, off + s - 1, len, dsize, serial++);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_prng(data, size);
    alksim_fuzz_one(&core_scenario, data, size);
    check_source(data, size);
    alksim_fuzz_one(&nat_scenario, data, size);
    alksim_fuzz_one(&ring_scenario, data, size);
    check_shrink(data, size);
    check_stream_order(data, size);
    check_init(data, size);
    check_node(data, size);
    check_disk_bounds(data, size);
    return 0;
}

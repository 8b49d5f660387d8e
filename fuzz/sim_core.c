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
 * EOF, and the queue drains. */
#define ALKSIM_IMPLEMENTATION
#include "../alksim.h"

#include <stdint.h>
#include <string.h>

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
    int may_refuse;
    uint32_t from, to;
    uint8_t written[2][STREAM_MODEL];
    size_t n_written[2], n_delivered[2];
    int shut[2], eof[2];
} stream_model;

typedef struct sent_record {
    uint32_t from, to, len;
    uint64_t sent_at, hash;
    unsigned copies_allowed, copies_seen;
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
    alksim_queue q;
    alksim_event qmem[QCAP];
    alksim_event qmodel[QCAP];
    size_t qmodel_len;
    alksim_streams streams;
    alksim_stream_params sparams;
    stream_model sm[CONNS];
} core_state;

static core_state the_state;
static uint8_t net_mem[1 << 16];
static uint8_t disk_mem[DISK_BYTES + 64 * SECTOR + 1024];
static uint8_t stream_mem[CONNS * 2 * STREAM_BUF + 8192];

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

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3u;
    }
    return h ^ n;
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
        for (b = 0; b < HOSTS; b++) {
            alksim_link *l = &st->link[a][b];
            l->latency_ns = 1000 * alksim_range(ctx->src, 1, 50);
            l->jitter_ns = 1000 * alksim_range(ctx->src, 0, 20);
            l->loss = (uint32_t)alksim_range(ctx->src, 0, 4) * 8192;
            l->dup = (uint32_t)alksim_range(ctx->src, 0, 2) * 8192;
            l->reorder = (uint32_t)alksim_range(ctx->src, 0, 2) * 8192;
            l->mtu = (uint32_t)alksim_range(ctx->src, 64, 256);
            alksim_net_set_link(&st->net, a, b, l);
            alksim_log(ctx, "link %u->%u: latency %llu jitter %llu loss %u "
                            "dup %u reorder %u mtu %u",
                       a, b, (unsigned long long)l->latency_ns,
                       (unsigned long long)l->jitter_ns, l->loss, l->dup,
                       l->reorder, l->mtu);
        }
    dcfg.max_pending = (uint32_t)alksim_range(ctx->src, 1, 64);
    alksim_log(ctx, "disk: %u sectors of %u bytes, cache %u sectors",
               SECTORS, SECTOR, dcfg.max_pending);
    if (alksim_disk_init(&st->disk, &dcfg, disk_mem, sizeof disk_mem) !=
        ALKSIM_OK)
        return NULL;
    alksim_queue_init(&st->q, st->qmem, QCAP);
    {
        alksim_streams_config scfg = {CONNS, STREAM_BUF, HOSTS, NULL};
        scfg.net = &st->net;
        if (alksim_streams_init(&st->streams, &scfg, stream_mem,
                                sizeof stream_mem) != ALKSIM_OK)
            return NULL;
    }
    for (a = 0; a < HOSTS; a++) /* everyone listens until told not to */
        alksim_stream_listen(&st->streams, a, 1);
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
    ALKSIM_CHECK(ctx, !alksim_net_blocked(&st->net, r->from, dg->to_host),
                 "id %llu crossed a partition", (unsigned long long)dg->id);
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
    switch (ev->type) {
    case ALKSIM_STREAM_ACCEPTED:
        ALKSIM_CHECK(ctx, m->state == 1, "accepted twice or late");
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
        m->state = 4;
        break;
    case ALKSIM_STREAM_RESET:
        m->state = 4;
        break;
    case ALKSIM_STREAM_DATA:
        ALKSIM_CHECK(ctx, m->state != 4, "data after a reset");
        ALKSIM_CHECK(ctx, !m->eof[dir], "data after EOF");
        ALKSIM_CHECK(ctx, m->n_delivered[dir] + ev->len <= m->n_written[dir] &&
                              !memcmp(ev->data,
                                      m->written[dir] + m->n_delivered[dir],
                                      ev->len),
                     "stream %u: delivered bytes [%zu, +%zu) differ from the "
                     "written ones (%zu written)",
                     ev->conn, m->n_delivered[dir], ev->len, m->n_written[dir]);
        m->n_delivered[dir] += ev->len;
        break;
    case ALKSIM_STREAM_EOF:
        ALKSIM_CHECK(ctx, m->shut[dir] && !m->eof[dir] &&
                              m->n_delivered[dir] == m->n_written[dir],
                     "EOF before all bytes or without shutdown");
        m->eof[dir] = 1;
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
        alksim_stream_listen(&st->streams, h, on);
        return ALKSIM_OK;
    }
    if (kind == K_SCONNECT) {
        uint32_t from = (uint32_t)alksim_pick(ctx->src, HOSTS);
        uint32_t to = (uint32_t)alksim_pick(ctx->src, HOSTS), id;
        int rc, may_refuse = !st->streams.listening[to] ||
                             st->sparams.refuse ||
                             alksim_net_blocked(&st->net, from, to) ||
                             alksim_net_blocked(&st->net, to, from);
        if (m->state == 4 || (m->state == 3 && m->eof[0] && m->eof[1]))
            alksim_stream_release(&st->streams, c), memset(m, 0, sizeof *m);
        rc = alksim_stream_connect(&st->streams, ctx->src, ctx->now, from, to,
                                   &st->sparams, &id);
        if (rc == ALKSIM_ERR_FULL)
            return ALKSIM_OK;
        ALKSIM_CHECK(ctx, rc == ALKSIM_OK && st->sm[id].state == 0,
                     "connect: %d into a used slot %u", rc, id);
        st->sm[id].state = 1;
        st->sm[id].may_refuse = may_refuse;
        st->sm[id].from = from;
        st->sm[id].to = to;
        alksim_log(ctx, "  stream %u: connect %u->%u", id, from, to);
        return ALKSIM_OK;
    }
    if (m->state != 3 && !(m->state == 2 && side == 1))
        return ALKSIM_OK; /* not open on that side: nothing to do */
    if (kind == K_SWRITE) {
        uint8_t buf[STREAM_BUF];
        size_t len = alksim_len(ctx->src, STREAM_BUF);
        ptrdiff_t w;
        if (m->shut[side])
            return ALKSIM_OK;
        if (len > STREAM_MODEL - m->n_written[side])
            len = STREAM_MODEL - m->n_written[side];
        alksim_bytes(ctx->src, buf, len);
        w = alksim_stream_write(&st->streams, ctx->src, ctx->now, c, side, buf,
                                len);
        ALKSIM_CHECK(ctx, w >= 0 && (size_t)w <= len, "write returned %td", w);
        ALKSIM_CHECK(ctx, alksim_stream_buffered(&st->streams, c, side) <=
                              STREAM_BUF,
                     "buffered beyond the window");
        memcpy(m->written[side] + m->n_written[side], buf, (size_t)w);
        m->n_written[side] += (size_t)w;
        alksim_log(ctx, "  stream %u side %d wrote %td of %zu", c, side, w,
                   len);
    } else if (kind == K_SSHUT) {
        if (m->shut[side])
            return ALKSIM_OK;
        ALKSIM_CHECK(ctx, alksim_stream_shutdown(&st->streams, ctx->now, c,
                                                 side) == ALKSIM_OK,
                     "shutdown refused");
        m->shut[side] = 1;
        alksim_log(ctx, "  stream %u side %d shuts down", c, side);
    } else {
        ALKSIM_CHECK(ctx, alksim_stream_reset(&st->streams, ctx->now, c,
                                              side) == ALKSIM_OK,
                     "reset refused");
        m->state = 4;
        alksim_log(ctx, "  stream %u side %d resets", c, side);
    }
    return ALKSIM_OK;
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
    sent_record *r;
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
    return ALKSIM_OK;
}

/* The model's version of a disk operation's injected failure. */
static int model_injected(core_state *st, int op)
{
    return st->countdown[op] && --st->countdown[op] == 0;
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
    }
    return ALKSIM_OK;
}

static int do_read(alksim_ctx *ctx, core_state *st)
{
    uint8_t got[DISK_BYTES];
    int expect_fail = model_injected(st, ALKSIM_DISK_READ);
    int rc = alksim_disk_read(&st->disk, 0, got, DISK_BYTES);
    ALKSIM_CHECK(ctx, rc == (expect_fail ? ALKSIM_ERR_IO : ALKSIM_OK),
                 "read returned %d, model expected %s", rc,
                 expect_fail ? "EIO" : "ok");
    if (!expect_fail)
        ALKSIM_CHECK(ctx, memcmp(got, st->visible_model, DISK_BYTES) == 0,
                     "read differs from the newest writes");
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
    alksim_disk_crash(&st->disk, ctx->src);
    alksim_disk_inject(&st->disk, ALKSIM_DISK_READ, 0);
    st->countdown[ALKSIM_DISK_READ] = 0;
    ALKSIM_CHECK(ctx, alksim_disk_read(&st->disk, 0, got, DISK_BYTES) ==
                          ALKSIM_OK,
                 "read after crash failed");
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
                          ev.arg == st->qmodel[best].arg,
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
        alksim_net_partition(&st->net, a, b, 1);
        if (both)
            alksim_net_partition(&st->net, b, a, 1);
        alksim_log(ctx, "  partition %u->%u%s", a, b, both ? " both ways" : "");
        return ALKSIM_OK;
    }
    case K_HEAL:
        alksim_net_heal(&st->net);
        return ALKSIM_OK;
    case K_ROAM: {
        /* Each host roams within its own range: addresses stay unique, so
         * the model's idea of the destination host stays right. */
        uint32_t h = (uint32_t)alksim_pick(ctx->src, HOSTS);
        uint32_t ip = 0x0a000100u + h * 256 + (uint32_t)alksim_u8(ctx->src);
        alksim_log(ctx, "  host %u roams to %08x", h, ip);
        alksim_net_set_ip(&st->net, h, ip);
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
        return ALKSIM_OK;
    }
    case K_PUSH: {
        uint64_t t = ctx->now + alksim_range(ctx->src, 0, 3);
        int rc = alksim_queue_push(&st->q, t, 1, 0, st->q.next_seq * 7);
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
    ALKSIM_CHECK(ctx, st->q.len == st->qmodel_len, "queue length %zu, model %zu",
                 st->q.len, st->qmodel_len);
    return ALKSIM_OK;
}

static void core_heal(alksim_ctx *ctx, void *state)
{
    core_state *st = (core_state *)state;
    (void)ctx;
    alksim_net_heal(&st->net);
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
    for (c = 0; c < CONNS; c++) {
        const stream_model *m = &st->sm[c];
        if (m->state != 3 && m->state != 2)
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return alksim_fuzz_one(&core_scenario, data, size);
}

/* sim_network.c - alksim's network in a few lines: two hosts, a lossy link,
 * a fixed seed, a trace hash.
 *
 *   sim_network [--seed N] [--runs M] [--trace]
 *
 * Host 0 and host 1 swap numbered datagrams over links whose latency,
 * jitter, loss, duplication and reordering are drawn from the scenario's
 * input. The check after every step: each datagram that arrives is one
 * that was sent, to the host it was sent to, with its bytes unchanged, and
 * at most twice (the original and one duplicate); the network's books
 * balance (alksim_net_check). The input is seed mode's run I of seed N
 * (alksim_run_seed), so the same seed gives the same run, bit for bit: the
 * printed trace hash says so, and --trace prints the trace it hashes.
 *
 * It prints, per run, what was sent, delivered, lost and duplicated and the
 * trace hash; it exits 1 on the first failed run. */
#define ALKSIM_IMPLEMENTATION
#include "../alksim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SENT 512     /* datagrams per run: the model's records */
#define MAX_LEN 1000     /* bytes per datagram */
#define MS 1000000ull    /* virtual nanoseconds */

typedef struct world {
    alksim_net net;
    uint32_t sent_to[MAX_SENT]; /* the model: who each datagram was for, */
    uint16_t sent_len[MAX_SENT]; /* its length (its bytes follow from its */
    uint8_t seen[MAX_SENT];      /* number), and how often it arrived */
    uint32_t sent;
} world;

static world the_world;
static uint64_t net_mem[65536]; /* 512 KiB, 8-byte aligned */
static const char *const kinds[] = {"send", "reply", "advance"};

static uint8_t byte_of(uint32_t id, size_t i)
{
    return (uint8_t)(id * 31u + i * 7u);
}

static void *setup(alksim_ctx *ctx)
{
    world *w = &the_world;
    alksim_net_config cfg; /* zeroed: 2 hosts, 256 slots of 1500 bytes */
    uint32_t a;
    memset(w, 0, sizeof *w);
    memset(&cfg, 0, sizeof cfg);
    if (alksim_net_init(&w->net, &cfg, net_mem, sizeof net_mem) != ALKSIM_OK) {
        alksim_fail(ctx, "alksim_net_init: %s (%llu, limit %llu)",
                    w->net.error.what, (unsigned long long)w->net.error.value,
                    (unsigned long long)w->net.error.limit);
        return NULL;
    }
    for (a = 0; a < 2; a++) {
        alksim_link l;
        memset(&l, 0, sizeof l);
        l.latency_ns = alksim_range(ctx->src, 1, 20) * MS;
        l.jitter_ns = alksim_range(ctx->src, 0, 5) * MS;
        l.loss = (uint32_t)alksim_range(ctx->src, 0, 16384);   /* <= 25% */
        l.dup = (uint32_t)alksim_range(ctx->src, 0, 3276);     /* <= 5% */
        l.reorder = (uint32_t)alksim_range(ctx->src, 0, 6553); /* <= 10% */
        alksim_net_set_link(&w->net, a, 1 - a, &l);
        alksim_log(ctx, "link %u->%u: latency %llu ms, jitter %llu ms, loss "
                        "%u/65536, dup %u/65536, reorder %u/65536",
                   a, 1 - a, (unsigned long long)(l.latency_ns / MS),
                   (unsigned long long)(l.jitter_ns / MS), l.loss, l.dup,
                   l.reorder);
    }
    return w;
}

/* Everything due by now arrives and is checked against the model. */
static int deliver_due(alksim_ctx *ctx, world *w)
{
    alksim_datagram dg;
    while (alksim_net_deliver(&w->net, ctx->now, &dg) == ALKSIM_OK) {
        uint32_t id;
        size_t i;
        ALKSIM_CHECK(ctx, dg.len >= 4, "a %zu-byte datagram nobody sent",
                     dg.len);
        id = (uint32_t)dg.data[0] << 24 | (uint32_t)dg.data[1] << 16 |
             (uint32_t)dg.data[2] << 8 | dg.data[3];
        ALKSIM_CHECK(ctx, id < w->sent, "datagram %u was never sent", id);
        ALKSIM_CHECK(ctx, dg.to_host == w->sent_to[id] &&
                              dg.len == w->sent_len[id],
                     "datagram %u: at host %u with %zu bytes, sent to %u "
                     "with %u", id, dg.to_host, dg.len, w->sent_to[id],
                     w->sent_len[id]);
        for (i = 4; i < dg.len; i++)
            ALKSIM_CHECK(ctx, dg.data[i] == byte_of(id, i),
                         "datagram %u: byte %zu changed", id, i);
        ALKSIM_CHECK(ctx, ++w->seen[id] <= 2, "datagram %u arrived %u times",
                     id, w->seen[id]);
        alksim_log(ctx, "  t=%llu ms: #%u (%zu bytes) at host %u%s",
                   (unsigned long long)(ctx->now / MS), id, dg.len,
                   dg.to_host, dg.duplicate ? " (duplicate)" : "");
    }
    return ALKSIM_OK;
}

static int step(alksim_ctx *ctx, void *st, unsigned kind)
{
    world *w = (world *)st;
    if (kind < 2 && w->sent < MAX_SENT) { /* send: 0 -> 1, reply: 1 -> 0 */
        static uint8_t buf[MAX_LEN];
        uint32_t from = kind, id = w->sent++;
        size_t len = 4 + alksim_len(ctx->src, MAX_LEN - 4), i;
        alksim_addr to;
        buf[0] = (uint8_t)(id >> 24);
        buf[1] = (uint8_t)(id >> 16);
        buf[2] = (uint8_t)(id >> 8);
        buf[3] = (uint8_t)id;
        for (i = 4; i < len; i++)
            buf[i] = byte_of(id, i);
        w->sent_to[id] = 1 - from;
        w->sent_len[id] = (uint16_t)len;
        to.ip = alksim_net_ip(&w->net, 1 - from);
        to.port = 9;
        alksim_log(ctx, "  t=%llu ms: host %u sends #%u (%zu bytes)",
                   (unsigned long long)(ctx->now / MS), from, id, len);
        if (alksim_net_send(&w->net, ctx->src, ctx->now, from, 9, to, buf,
                            len) != ALKSIM_OK)
            return alksim_fail(ctx, "send #%u refused", id);
    } else if (kind == 2) {
        ctx->now += alksim_range(ctx->src, 0, 30) * MS;
    }
    return deliver_due(ctx, w);
}

static int check(alksim_ctx *ctx, void *st)
{
    world *w = (world *)st;
    ALKSIM_CHECK(ctx, alksim_net_check(&w->net) == ALKSIM_OK,
                 "the network's books do not balance");
    return ALKSIM_OK;
}

/* Liveness: everything in flight arrives or is counted lost. */
static int quiesce(alksim_ctx *ctx, void *st)
{
    world *w = (world *)st;
    uint64_t next = alksim_net_next_time(&w->net);
    int rc;
    if (next == ALKSIM_NEVER)
        return 0;
    if (next > ctx->now)
        ctx->now = next;
    rc = deliver_due(ctx, w);
    return rc == ALKSIM_OK ? 1 : rc;
}

int main(int argc, char **argv)
{
    static uint8_t input[4096];
    alksim_scenario sc;
    uint64_t seed = 42, runs = 1, i;
    unsigned flags = ALKSIM_RUN_HASH;
    int a;
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--seed") && a + 1 < argc)
            seed = strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--runs") && a + 1 < argc)
            runs = strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--trace"))
            flags |= ALKSIM_RUN_VERBOSE;
        else {
            fprintf(stderr, "usage: sim_network [--seed N] [--runs M] "
                            "[--trace]\n");
            return 2;
        }
    }
    memset(&sc, 0, sizeof sc);
    sc.name = "sim_network";
    sc.kinds = kinds;
    sc.kind_count = 3;
    sc.setup = setup;
    sc.step = step;
    sc.check = check;
    sc.quiesce = quiesce;
    for (i = 0; i < runs; i++) {
        alksim_run_result r;
        alksim_net_stats s;
        size_t len;
        int rc = alksim_run_seed(&sc, seed, i, input, sizeof input, &len,
                                 flags, stdout, &r);
        s = alksim_net_get_stats(&the_world.net);
        printf("seed %llu run %llu (%zu input bytes): %u steps, %llu sent, "
               "%llu delivered, %llu lost, %llu duplicated, trace hash "
               "%016llx: %s\n",
               (unsigned long long)seed, (unsigned long long)i, len, r.steps,
               (unsigned long long)s.sent, (unsigned long long)s.delivered,
               (unsigned long long)s.lost, (unsigned long long)s.duplicated,
               (unsigned long long)r.trace_hash,
               rc == ALKSIM_OK ? "ok" : alksim_strerror(rc));
        if (rc != ALKSIM_OK)
            return 1;
    }
    return 0;
}

/* arq_scenario.h - the alksim scenario that tests examples/arq.h: the
 * worked example of writing a harness (README, "Testing your own protocol").
 *
 * World: host 0 runs an arq_sender, host 1 an arq_receiver, joined by an
 * alksim network whose links lose, duplicate, delay and reorder datagrams
 * as the input decides. The reference model is the simplest possible one -
 * what a user expects of a reliable transfer:
 *
 *   safety   (after every transition) the bytes delivered so far are
 *            exactly a prefix of the message: in order, none twice, none
 *            corrupted; the sender never believes more was received than
 *            was; no timer deadline lies in the past; the network conserves
 *            datagrams;
 *   liveness (after healing every fault) the transfer completes: the whole
 *            message is delivered and acknowledged, nothing left in flight.
 *
 * Included by fuzz/sim_arq.c (the fuzz target and replay gate) and by
 * examples/arq_demo.c (seed mode and shrinking): one oracle, three drivers. */
#ifndef ARQ_SCENARIO_H
#define ARQ_SCENARIO_H

#include "../alksim.h"
#include "arq.h"

#define ARQ_MSG_MAX 1024

typedef struct arq_world {
    alksim_net net;
    alksim_link link[2][2];
    arq_config cfg;
    arq_sender snd;
    arq_receiver rcv;
    alksim_node timer;
    uint8_t msg[ARQ_MSG_MAX], out[ARQ_MSG_MAX];
    size_t len;
    uint64_t datagrams;
} arq_world;

static arq_world arq_the_world;
static uint8_t arq_net_mem[1 << 17];

static uint64_t arq__poll(void *w)
{
    return arq_sender_poll_timeout(&((arq_world *)w)->snd);
}

static int arq__has_output(void *w)
{
    return arq_sender_has_output(&((arq_world *)w)->snd) ||
           arq_receiver_has_output(&((arq_world *)w)->rcv);
}

static void arq__fire(void *w, uint64_t now)
{
    arq_sender_handle_timeout(&((arq_world *)w)->snd, now);
}

static alksim_addr arq__addr(const arq_world *w, uint32_t host)
{
    alksim_addr a;
    a.ip = alksim_net_ip(&w->net, host);
    a.port = 7000;
    return a;
}

static void *arq_setup(alksim_ctx *ctx)
{
    arq_world *w = &arq_the_world;
    alksim_net_config ncfg = {2, 256, ARQ_MAX_PACKET, 0};
    unsigned a, b;
    memset(w, 0, sizeof *w);
    w->cfg.mss = (uint32_t)alksim_range(ctx->src, 1, 64);
    w->cfg.send_window = (uint32_t)alksim_range(ctx->src, 1, 8);
    w->cfg.recv_window = (uint32_t)alksim_range(ctx->src, 1, 8);
    w->cfg.rto_ns = 1000000 * alksim_range(ctx->src, 5, 200);
    w->len = alksim_len(ctx->src, ARQ_MSG_MAX);
    {
        /* The content comes from a drawn seed, not from input bytes: any
         * distinct bytes expose reordering or corruption, and small inputs
         * shrink better. */
        alksim_rng rng;
        uint16_t seed = alksim_u16(ctx->src);
        size_t i;
        alksim_rng_seed(&rng, seed);
        for (i = 0; i < w->len; i++)
            w->msg[i] = (uint8_t)alksim_rng_next(&rng);
        alksim_log(ctx, "arq: message %zu bytes (content seed %u), mss %u, "
                        "send window %u, receive window %u, rto %llu ms",
                   w->len, seed, w->cfg.mss, w->cfg.send_window,
                   w->cfg.recv_window,
                   (unsigned long long)(w->cfg.rto_ns / 1000000));
    }
    if (alksim_net_init(&w->net, &ncfg, arq_net_mem, sizeof arq_net_mem) !=
        ALKSIM_OK)
        return NULL;
    for (a = 0; a < 2; a++)
        for (b = 0; b < 2; b++) {
            alksim_link *l = &w->link[a][b];
            l->latency_ns = 1000000 * alksim_range(ctx->src, 1, 50);
            l->jitter_ns = 1000000 * alksim_range(ctx->src, 0, 20);
            l->loss = (uint32_t)alksim_range(ctx->src, 0, 3) * 8192;
            l->dup = (uint32_t)alksim_range(ctx->src, 0, 2) * 4096;
            l->reorder = (uint32_t)alksim_range(ctx->src, 0, 2) * 8192;
            alksim_net_set_link(&w->net, a, b, l);
            if (a != b)
                alksim_log(ctx, "link %u->%u: latency %llu ms jitter %llu ms "
                                "loss %u/65536 dup %u/65536 reorder %u/65536",
                           a, b,
                           (unsigned long long)(l->latency_ns / 1000000),
                           (unsigned long long)(l->jitter_ns / 1000000),
                           l->loss, l->dup, l->reorder);
        }
    arq_sender_init(&w->snd, &w->cfg, w->msg, w->len);
    arq_receiver_init(&w->rcv, &w->cfg, w->out, sizeof w->out);
    alksim_node_init(&w->timer, w, arq__poll, arq__has_output, arq__fire);
    return w;
}

/* Hand every queued datagram of both ends to the network. */
static int arq__pump(alksim_ctx *ctx, arq_world *w)
{
    uint8_t pkt[ARQ_MAX_PACKET];
    size_t n;
    while ((n = arq_sender_poll_transmit(&w->snd, ctx->now, pkt,
                                         sizeof pkt)) > 0) {
        alksim_log(ctx, "  0->1 DATA seq %u (%zu B)",
                   (unsigned)((pkt[1] << 24) | (pkt[2] << 16) |
                              (pkt[3] << 8) | pkt[4]),
                   n - ARQ_HEADER);
        alksim_net_send(&w->net, ctx->src, ctx->now, 0, 7000, arq__addr(w, 1),
                        pkt, n);
        w->datagrams++;
    }
    while ((n = arq_receiver_poll_transmit(&w->rcv, pkt, sizeof pkt)) > 0) {
        alksim_log(ctx, "  1->0 ACK %u", w->rcv.expected);
        alksim_net_send(&w->net, ctx->src, ctx->now, 1, 7000, arq__addr(w, 0),
                        pkt, n);
        w->datagrams++;
    }
    return ALKSIM_OK;
}

/* The next instant anything happens: a datagram arrives, the timer fires,
 * or output is waiting (then: now). */
static uint64_t arq__next_event(alksim_ctx *ctx, arq_world *w, int *err)
{
    uint64_t t = alksim_node_deadline(&w->timer, ctx->now, err);
    uint64_t n = alksim_net_next_time(&w->net);
    return n < t ? n : t;
}

/* Process everything due at ctx->now. */
static int arq__process(alksim_ctx *ctx, arq_world *w)
{
    alksim_datagram dg;
    int rc;
    arq__pump(ctx, w);
    while (alksim_net_deliver(&w->net, ctx->now, &dg) == ALKSIM_OK) {
        if (dg.to_host == 1) {
            alksim_log(ctx, "  DATA seq %u arrives (receiver expects %u)",
                       (unsigned)((dg.data[1] << 24) | (dg.data[2] << 16) |
                                  (dg.data[3] << 8) | dg.data[4]),
                       w->rcv.expected);
            arq_receiver_handle_data(&w->rcv, dg.data, dg.len);
        } else {
            alksim_log(ctx, "  ack %u arrives",
                       (unsigned)((dg.data[1] << 24) | (dg.data[2] << 16) |
                                  (dg.data[3] << 8) | dg.data[4]));
            arq_sender_handle_ack(&w->snd, ctx->now, dg.data, dg.len);
        }
        arq__pump(ctx, w);
    }
    rc = alksim_node_fire(&w->timer, ctx->now);
    if (rc == ALKSIM_OK) {
        alksim_log(ctx, "  timeout: resend from segment %u", w->snd.base);
        arq__pump(ctx, w);
    } else if (rc < 0) {
        return alksim_fail(ctx, "sender timer: %s", alksim_strerror(rc));
    }
    return ALKSIM_OK;
}

/* Run every event up to `until`, in time order. */
static int arq__advance(alksim_ctx *ctx, arq_world *w, uint64_t until)
{
    unsigned rounds;
    for (rounds = 0;; rounds++) {
        int err, rc;
        uint64_t t = arq__next_event(ctx, w, &err);
        ALKSIM_CHECK(ctx, rounds < 100000,
                     "no progress: 100000 events without time passing %llu",
                     (unsigned long long)until);
        ALKSIM_CHECK(ctx, err == ALKSIM_OK,
                     "sender deadline %llu is before now %llu",
                     (unsigned long long)t, (unsigned long long)ctx->now);
        if (t > until)
            break;
        if (t > ctx->now)
            ctx->now = t;
        if ((rc = arq__process(ctx, w)) != ALKSIM_OK)
            return rc;
    }
    if (until > ctx->now && until != ALKSIM_NEVER)
        ctx->now = until;
    return ALKSIM_OK;
}

static const char *const arq_kinds[] = {"next-event", "wait", "cut", "mend"};

static int arq_step(alksim_ctx *ctx, void *state, unsigned kind)
{
    arq_world *w = (arq_world *)state;
    switch (kind) {
    case 0: { /* the next thing that happens */
        int err;
        uint64_t t = arq__next_event(ctx, w, &err);
        return arq__advance(ctx, w, t == ALKSIM_NEVER ? ctx->now : t);
    }
    case 1: /* let time pass */
        return arq__advance(ctx, w,
                            ctx->now + 1000000 * alksim_range(ctx->src, 1, 500));
    case 2: { /* a one-way partition */
        uint32_t from = (uint32_t)alksim_pick(ctx->src, 2);
        alksim_log(ctx, "  cut %u->%u", from, 1 - from);
        alksim_net_partition(&w->net, from, 1 - from, 1);
        return ALKSIM_OK;
    }
    default:
        alksim_net_heal(&w->net);
        return ALKSIM_OK;
    }
}

static int arq_check(alksim_ctx *ctx, void *state)
{
    arq_world *w = (arq_world *)state;
    ALKSIM_CHECK(ctx, w->rcv.delivered <= w->len,
                 "receiver delivered %zu bytes of a %zu-byte message",
                 w->rcv.delivered, w->len);
    ALKSIM_CHECK(ctx, memcmp(w->out, w->msg, w->rcv.delivered) == 0,
                 "delivered bytes are not a prefix of the message "
                 "(%zu delivered)",
                 w->rcv.delivered);
    ALKSIM_CHECK(ctx, w->snd.base <= w->rcv.expected,
                 "sender thinks %u segments arrived, receiver has %u",
                 w->snd.base, w->rcv.expected);
    ALKSIM_CHECK(ctx, alksim_net_check(&w->net) == ALKSIM_OK,
                 "network conservation");
    return ALKSIM_OK;
}

static void arq_heal(alksim_ctx *ctx, void *state)
{
    arq_world *w = (arq_world *)state;
    unsigned a, b;
    alksim_net_heal(&w->net);
    for (a = 0; a < 2; a++)
        for (b = 0; b < 2; b++) {
            w->link[a][b].loss = 0;
            alksim_net_set_link(&w->net, a, b, &w->link[a][b]);
        }
    alksim_log(ctx, "  healed: partitions lifted, loss off");
}

static int arq_quiesce(alksim_ctx *ctx, void *state)
{
    arq_world *w = (arq_world *)state;
    int err, rc;
    uint64_t t = arq__next_event(ctx, w, &err);
    if (t == ALKSIM_NEVER) {
        ALKSIM_CHECK(ctx, arq_sender_done(&w->snd) && arq_receiver_done(&w->rcv) &&
                              w->rcv.delivered == w->len,
                     "stuck: nothing scheduled, sender at %u of %u segments, "
                     "receiver delivered %zu of %zu bytes",
                     w->snd.base, w->snd.segments, w->rcv.delivered, w->len);
        alksim_log(ctx, "transfer complete: %zu bytes, %llu datagrams, %llu "
                        "retransmissions",
                   w->len, (unsigned long long)w->datagrams,
                   (unsigned long long)w->snd.retransmissions);
        return 0;
    }
    rc = arq__advance(ctx, w, t);
    return rc != ALKSIM_OK ? rc : 1;
}

static const alksim_scenario arq_scenario = {
    "sim_arq", arq_kinds, 4, arq_setup, arq_step, arq_check,
    arq_heal,  arq_quiesce, NULL, 200, 200000, 1};

#endif /* ARQ_SCENARIO_H */

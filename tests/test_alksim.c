/* test_alksim.c - unit tests for alksim.h (greatest API). */
#define _POSIX_C_SOURCE 200809L
#define ALKSIM_IMPLEMENTATION
#include "alksim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alk_test.h"


/* ---- byte source ---------------------------------------------------------- */

TEST control_from_the_end_payload_from_the_front(void)
{
    const uint8_t in[] = {1, 2, 3, 4, 5, 6, 7, 8};
    alksim_source s;
    uint8_t buf[3];
    alksim_source_init_bytes(&s, in, sizeof in);
    ASSERT_EQ(8, alksim_u8(&s));
    ASSERT_EQ(0x0706, alksim_u16(&s));
    alksim_bytes(&s, buf, 3);
    ASSERT_EQ(1, buf[0]);
    ASSERT_EQ(3, buf[2]);
    ASSERT_EQ(2, alksim_source_remaining(&s));
    ASSERT_FALSE(alksim_source_done(&s));
    ASSERT_EQ(0x0504, alksim_u16(&s));
    ASSERT_FALSE(alksim_source_done(&s));
    ASSERT_EQ(0, alksim_u8(&s));
    ASSERT(alksim_source_done(&s));
    PASS();
}

TEST exhaustion_gives_safe_defaults(void)
{
    alksim_source s;
    uint8_t buf[4] = {9, 9, 9, 9};
    const uint32_t w[3] = {0, 5, 1};
    alksim_source_init_bytes(&s, NULL, 0);
    ASSERT_EQ(0, alksim_u64(&s));
    ASSERT_EQ(17, alksim_range(&s, 17, 1000));
    ASSERT_EQ(0, alksim_pick(&s, 9));
    ASSERT_EQ(0, alksim_len(&s, 100));
    ASSERT_EQ(0, alksim_chance(&s, 65535, 65536));
    {
        /* chance(1, 4) over every byte value: exactly a quarter say yes */
        uint8_t every[256];
        alksim_source q;
        int yes = 0, k;
        for (k = 0; k < 256; k++)
            every[k] = (uint8_t)k;
        alksim_source_init_bytes(&q, every, sizeof every);
        for (k = 0; k < 256; k++)
            yes += alksim_chance(&q, 1, 4);
        ASSERT_EQ(64, yes);
    }
    ASSERT_EQ(1, alksim_chance(&s, 7, 7));
    ASSERT_EQ(1, alksim_weighted(&s, w, 3)); /* first non-zero weight */
    {
        const uint32_t none[2] = {0, 0};
        ASSERT_EQ(0, alksim_weighted(&s, none, 2));
    }
    alksim_bytes(&s, buf, sizeof buf);
    ASSERT_EQ(0, buf[0]);
    ASSERT_EQ(0, buf[3]);
    ASSERT(alksim_source_done(&s));
    PASS();
}

TEST range_uses_the_fewest_bytes(void)
{
    const uint8_t in[] = {0xaa, 0x01, 0x02, 0x03, 0x04, 0x05};
    alksim_source s;
    alksim_source_init_bytes(&s, in, sizeof in);
    ASSERT_EQ(5, alksim_range(&s, 0, 255));           /* one byte: 0x05 */
    ASSERT_EQ(10 + 0x0403 % 1001, alksim_range(&s, 10, 1010)); /* two */
    ASSERT_EQ(3, alksim_range(&s, 3, 3));             /* no decision */
    ASSERT_EQ(3, alksim_source_remaining(&s));
    {
        /* fixed widths: u32 takes 4 bytes, a 32-bit span takes 4 */
        uint8_t ten[10] = {0};
        alksim_source_init_bytes(&s, ten, sizeof ten);
        alksim_u32(&s);
        ASSERT_EQ(6, alksim_source_remaining(&s));
        alksim_range(&s, 0, 0xffffffffu);
        ASSERT_EQ(2, alksim_source_remaining(&s));
    }
    PASS();
}

TEST weighted_never_picks_zero_weights(void)
{
    const uint32_t w[4] = {0, 3, 0, 1};
    uint8_t in[256];
    alksim_source s;
    size_t i, hits[4] = {0, 0, 0, 0};
    for (i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)i;
    alksim_source_init_bytes(&s, in, sizeof in);
    for (i = 0; i < 256; i++)
        hits[alksim_weighted(&s, w, 4)]++;
    ASSERT_EQ(0, hits[0]);
    ASSERT_EQ(0, hits[2]);
    ASSERT_EQ(192, hits[1]); /* byte b -> b % 4: 0,1,2 pick index 1 */
    ASSERT_EQ(64, hits[3]);
    PASS();
}

/* The decisions of a small generator, as numbers. */
static size_t generate(const uint8_t *in, size_t n, uint64_t *out)
{
    alksim_source s;
    const uint32_t w[3] = {1, 2, 3};
    size_t k = 0;
    alksim_source_init_bytes(&s, in, n);
    out[k++] = alksim_u8(&s);
    out[k++] = alksim_range(&s, 100, 5000);
    out[k++] = (uint64_t)alksim_bool(&s);
    out[k++] = alksim_pick(&s, 7);
    out[k++] = alksim_u32(&s);
    out[k++] = alksim_weighted(&s, w, 3);
    out[k++] = (uint64_t)alksim_chance(&s, 1, 3);
    out[k++] = alksim_len(&s, 64);
    return k;
}

TEST one_byte_flip_changes_at_most_one_decision(void)
{
    uint8_t in[32];
    uint64_t base[16], flipped[16];
    uint64_t st = test_seed;
    size_t i, k, n;
    for (i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)alksim_splitmix64(&st);
    n = generate(in, sizeof in, base);
    for (i = 0; i < sizeof in; i++) {
        size_t changed = 0;
        in[i] ^= 0x5a;
        generate(in, sizeof in, flipped);
        for (k = 0; k < n; k++)
            changed += base[k] != flipped[k];
        in[i] ^= 0x5a;
        if (changed > 1) {
            fprintf(stderr, "byte %zu changed %zu decisions (ALK_SEED=%llu)\n",
                    i, changed, (unsigned long long)test_seed);
            FAIL();
        }
    }
    PASS();
}

TEST rng_is_seeded_and_deterministic(void)
{
    alksim_rng a, b;
    uint64_t st = 0;
    size_t i, below[10] = {0}, heads = 0;
    /* splitmix64's published first output for state 0 */
    ASSERT_EQ_FMT(0xe220a8397b1dcdafull, (unsigned long long)alksim_splitmix64(&st),
                  "%llx");
    /* xoshiro256** known answers for the state {1, 2, 3, 4} */
    a.s[0] = 1;
    a.s[1] = 2;
    a.s[2] = 3;
    a.s[3] = 4;
    ASSERT_EQ_FMT(11520ull, (unsigned long long)alksim_rng_next(&a), "%llu");
    ASSERT_EQ_FMT(0ull, (unsigned long long)alksim_rng_next(&a), "%llu");
    ASSERT_EQ_FMT(1509978240ull, (unsigned long long)alksim_rng_next(&a),
                  "%llu");
    ASSERT_EQ_FMT(1215971899390074240ull,
                  (unsigned long long)alksim_rng_next(&a), "%llu");
    alksim_rng_seed(&a, 42);
    alksim_rng_seed(&b, 42);
    for (i = 0; i < 1000; i++)
        ASSERT_EQ(alksim_rng_next(&a), alksim_rng_next(&b));
    alksim_rng_seed(&b, 43);
    ASSERT(alksim_rng_next(&a) != alksim_rng_next(&b));
    for (i = 0; i < 10000; i++) {
        below[alksim_rng_below(&a, 10)]++;
        heads += (size_t)alksim_rng_chance(&a, 1, 4);
    }
    for (i = 0; i < 10; i++)
        ASSERT_IN_RANGE(1000, below[i], 150);
    ASSERT_IN_RANGE(2500, heads, 250);
    ASSERT_EQ(0, alksim_rng_below(&a, 0));
    ASSERT_EQ(0, alksim_rng_chance(&a, 1, 0));
    PASS();
}

TEST seeded_source_never_exhausts(void)
{
    alksim_source a, b;
    uint8_t x[64], y[64];
    size_t i;
    alksim_source_init_rng(&a, 7);
    alksim_source_init_rng(&b, 7);
    for (i = 0; i < 1000; i++)
        ASSERT_EQ(alksim_range(&a, 0, 99), alksim_range(&b, 0, 99));
    alksim_bytes(&a, x, sizeof x);
    alksim_bytes(&b, y, sizeof y);
    ASSERT_MEM_EQ(x, y, sizeof x);
    {
        unsigned odd = 0, high = 0;
        for (i = 0; i < 100; i++) {
            odd += alksim_u8(&a) & 1u;
            high += (unsigned)(alksim_u64(&a) >> 63);
        }
        ASSERT(odd > 20 && high > 20); /* every bit of a draw is live */
    }
    ASSERT_FALSE(alksim_source_done(&a));
    ASSERT_EQ(SIZE_MAX, alksim_source_remaining(&a));
    PASS();
}

/* ---- event queue ------------------------------------------------------------ */

TEST queue_orders_by_time_then_insertion(void)
{
    alksim_event mem[8], ev;
    alksim_queue q;
    const uint64_t times[] = {50, 10, 50, 30, 10, 50, 0};
    uint64_t last_time = 0, last_seq = 0;
    size_t i;
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_queue_init(NULL, mem, 7));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_queue_init(&q, NULL, 7));
    ASSERT_EQ(ALKSIM_OK, alksim_queue_init(&q, mem, 7));
    for (i = 0; i < 7; i++)
        ASSERT_EQ(ALKSIM_OK, alksim_queue_push(&q, times[i], 1, (uint32_t)i,
                                               i * 100));
    ASSERT_EQ(ALKSIM_ERR_FULL, alksim_queue_push(&q, 1, 1, 1, 1));
    ASSERT_EQ(0, alksim_queue_peek(&q)->time);
    for (i = 0; i < 7; i++) {
        ASSERT_EQ(ALKSIM_OK, alksim_queue_pop(&q, &ev));
        ASSERT(ev.time >= last_time);
        if (i && ev.time == last_time)
            ASSERT(ev.seq > last_seq);
        ASSERT_EQ(times[ev.target], ev.time);
        ASSERT_EQ(ev.target * 100, ev.arg);
        last_time = ev.time;
        last_seq = ev.seq;
    }
    ASSERT_EQ(ALKSIM_NONE, alksim_queue_pop(&q, &ev));
    ASSERT_EQ(NULL, alksim_queue_peek(&q));
    PASS();
}

/* ---- node driving ----------------------------------------------------------- */

typedef struct toy_node {
    uint64_t deadline;
    int queued;
    unsigned fired;
    int rearm_in_place; /* bug: leaves the deadline where it was */
} toy_node;

static uint64_t toy_poll(void *ctx)
{
    return ((toy_node *)ctx)->deadline;
}

static int toy_has_output(void *ctx)
{
    return ((toy_node *)ctx)->queued;
}

static void toy_fire(void *ctx, uint64_t now)
{
    toy_node *t = (toy_node *)ctx;
    t->fired++;
    if (!t->rearm_in_place)
        t->deadline = now + 1000;
}

TEST node_queued_output_is_due_now(void)
{
    toy_node t = {5000, 0, 0, 0};
    alksim_node n;
    int err;
    memset(&n, 0xff, sizeof n);
    alksim_node_init(&n, &t, toy_poll, toy_has_output, toy_fire);
    ASSERT_EQ(0, n.spin_limit); /* init clears the bookkeeping */
    ASSERT_EQ(0, n.fires_at_same_time);
    ASSERT_EQ(0, n.last_fire_time);
    ASSERT_EQ(5000, alksim_node_deadline(&n, 100, &err));
    ASSERT_EQ(ALKSIM_OK, err);
    t.queued = 1;
    ASSERT_EQ(100, alksim_node_deadline(&n, 100, &err));
    t.queued = 0;
    ASSERT_EQ(5000, alksim_node_deadline(&n, 5000, &err));
    ASSERT_EQ(ALKSIM_OK, err); /* due now is not in the past */
    ASSERT_EQ(5000, alksim_node_deadline(&n, 6000, &err));
    ASSERT_EQ(ALKSIM_ERR_DEADLINE_PAST, err);
    ASSERT_EQ(ALKSIM_NONE, alksim_node_fire(&n, 4999));
    ASSERT_EQ(ALKSIM_OK, alksim_node_fire(&n, 5000));
    ASSERT_EQ(1, t.fired);
    ASSERT_EQ(6000, t.deadline);
    PASS();
}

TEST node_default_spin_limit_is_64(void)
{
    toy_node t = {10, 0, 0, 1};
    alksim_node n;
    int rc = ALKSIM_OK;
    unsigned i;
    alksim_node_init(&n, &t, toy_poll, NULL, toy_fire);
    for (i = 0; i < 100 && rc == ALKSIM_OK; i++)
        rc = alksim_node_fire(&n, 10);
    ASSERT_EQ(ALKSIM_ERR_SPIN, rc);
    ASSERT_EQ(64, t.fired);
    PASS();
}

TEST node_spinning_is_detected(void)
{
    toy_node t = {10, 0, 0, 1};
    alksim_node n;
    int rc = ALKSIM_OK;
    unsigned i;
    alksim_node_init(&n, &t, toy_poll, NULL, toy_fire);
    n.spin_limit = 5;
    for (i = 0; i < 10 && rc == ALKSIM_OK; i++)
        rc = alksim_node_fire(&n, 10);
    ASSERT_EQ(ALKSIM_ERR_SPIN, rc);
    ASSERT_EQ(5, t.fired);
    PASS();
}

/* ---- network ---------------------------------------------------------------- */

static uint8_t net_mem[1 << 20];

/* Simulator memory of exactly the documented size, on the heap, so ASan
 * sees any access past what *_mem_size() promised. The last block of each
 * kind stays reachable through `slot` (no leak report). */
static void *exact_block(void **slot, size_t n)
{
    free(*slot);
    *slot = malloc(n);
    if (!*slot)
        abort();
    return *slot;
}

static void *net_block, *disk_block, *stream_block;

static void net_open(alksim_net *net, uint32_t hosts, const alksim_link *l)
{
    alksim_net_config cfg;
    uint32_t a, b;
    cfg.hosts = hosts;
    cfg.max_in_flight = 256;
    cfg.slot_size = 1500;
    cfg.nat_mappings = 8;
    if (alksim_net_init(net, &cfg,
                        exact_block(&net_block, alksim_net_mem_size(&cfg)),
                        alksim_net_mem_size(&cfg)) != ALKSIM_OK)
        abort();
    for (a = 0; a < hosts; a++)
        for (b = 0; b < hosts; b++)
            alksim_net_set_link(net, a, b, l);
}

static alksim_addr addr_of(const alksim_net *net, uint32_t host, uint16_t port)
{
    alksim_addr a;
    a.ip = alksim_net_ip(net, host);
    a.port = port;
    return a;
}

TEST net_perfect_link_delivers_each_once_after_latency(void)
{
    alksim_net net;
    alksim_link l = {1000, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    uint8_t payload[100];
    unsigned i, got = 0;
    net_open(&net, 2, &l);
    ASSERT_EQ(0x0a000001u, alksim_net_ip(&net, 0)); /* documented default */
    ASSERT_EQ(0x0a000002u, alksim_net_ip(&net, 1));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_net_set_link(&net, 0, 2, &l));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_net_set_link(&net, 2, 0, &l));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_net_partition(&net, 2, 0, 1));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_net_partition(&net, 0, 2, 1));
    alksim_net_partition(&net, 1, 0, 1); /* the cell 0*2+2 would alias */
    ASSERT_EQ(0, alksim_net_blocked(&net, 0, 2)); /* out of range: open */
    alksim_net_heal(&net);
    ASSERT_EQ(0, alksim_net_blocked(&net, 2, 0));
    alksim_net_partition(&net, 0, 1, 1);
    ASSERT_EQ(1, alksim_net_blocked(&net, 0, 1));
    ASSERT_EQ(0, alksim_net_blocked(&net, 1, 0));
    alksim_net_heal(&net);
    alksim_source_init_rng(&faults, test_seed);
    for (i = 0; i < 50; i++) {
        payload[0] = (uint8_t)i;
        ASSERT_EQ(ALKSIM_OK, alksim_net_send(&net, &faults, i * 10, 0, 7,
                                             addr_of(&net, 1, 9), payload,
                                             1 + i));
        ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    }
    ASSERT_EQ(1000, alksim_net_next_time(&net));
    ASSERT_EQ(ALKSIM_NONE, alksim_net_deliver(&net, 999, &dg));
    while (alksim_net_deliver(&net, 100000, &dg) == ALKSIM_OK) {
        ASSERT_EQ(got, dg.data[0]);
        ASSERT_EQ(got + 1, dg.len);
        ASSERT_EQ(got * 10 + 1000, dg.delivered_at);
        ASSERT_EQ(1, dg.to_host);
        ASSERT_EQ(alksim_net_ip(&net, 0), dg.src.ip);
        ASSERT_EQ(7, dg.src.port);
        ASSERT_EQ(9, dg.dst.port);
        ASSERT_EQ(0, dg.duplicate);
        got++;
        ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    }
    ASSERT_EQ(50, got);
    ASSERT_EQ(ALKSIM_NEVER, alksim_net_next_time(&net));
    PASS();
}

TEST net_simultaneous_arrivals_keep_send_order(void)
{
    alksim_net net;
    alksim_link l = {500, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    uint8_t k;
    net_open(&net, 2, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    for (k = 0; k < 10; k++)
        alksim_net_send(&net, &faults, 0, 0, 1, addr_of(&net, 1, 1), &k, 1);
    for (k = 0; k < 10; k++) {
        ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 500, &dg));
        ASSERT_EQ(k, dg.data[0]); /* ties broken by send order */
    }
    PASS();
}

TEST net_faults_are_counted_and_conserved(void)
{
    alksim_net net;
    alksim_link l = {5000, 3000, 16384, 8192, 8192, 1000};
    alksim_source faults;
    alksim_datagram dg;
    alksim_net_stats st;
    static uint8_t payload[1500];
    static unsigned copies[2000];
    uint64_t now = 0;
    unsigned i;
    net_open(&net, 3, &l);
    alksim_source_init_rng(&faults, test_seed);
    for (i = 0; i < 2000; i++) {
        size_t len = (size_t)alksim_rng_below(&faults.rng, 1200);
        uint32_t from = (uint32_t)(i % 3), to = (uint32_t)((i + 1) % 3);
        ASSERT_EQ(ALKSIM_OK, alksim_net_send(&net, &faults, now, from, 1,
                                             addr_of(&net, to, 2), payload,
                                             len));
        now += 100;
        while (alksim_net_deliver(&net, now, &dg) == ALKSIM_OK) {
            ASSERT(dg.delivered_at >= dg.sent_at + l.latency_ns);
            ASSERT(dg.delivered_at <=
                   dg.sent_at + 2 * (l.latency_ns + l.jitter_ns) + 1);
            ASSERT(dg.len <= l.mtu);
            copies[dg.id]++;
        }
        ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    }
    while (alksim_net_deliver(&net, ALKSIM_NEVER - 1, &dg) == ALKSIM_OK)
        copies[dg.id]++;
    st = alksim_net_get_stats(&net);
    ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    ASSERT_EQ(0, st.in_flight);
    ASSERT(st.lost > 0 && st.duplicated > 0 && st.dropped_mtu > 0);
    for (i = 0; i < 2000; i++)
        ASSERT(copies[i] <= 2);
    PASS();
}

TEST net_reorder_delay_is_exact(void)
{
    alksim_net net;
    alksim_link l = {1000, 0, 0, 0, 65536, 0}; /* always reordered */
    alksim_source faults;
    alksim_datagram dg;
    net_open(&net, 2, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    alksim_net_send(&net, &faults, 0, 0, 1, addr_of(&net, 1, 1), "x", 1);
    /* latency + (latency + jitter + 1): strictly after any unreordered
     * datagram sent at the same instant */
    ASSERT_EQ(2001, alksim_net_next_time(&net));
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 2001, &dg));
    /* 65535/65536 is a chance, not a certainty: exhausted means no */
    l.reorder = 65535;
    alksim_net_set_link(&net, 0, 1, &l);
    alksim_net_send(&net, &faults, 5000, 0, 1, addr_of(&net, 1, 1), "y", 1);
    ASSERT_EQ(6000, alksim_net_next_time(&net));
    PASS();
}

TEST net_partition_one_way_and_heal(void)
{
    alksim_net net;
    alksim_link l = {100, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    net_open(&net, 2, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    ASSERT_EQ(ALKSIM_OK, alksim_net_partition(&net, 0, 1, 1));
    alksim_net_send(&net, &faults, 0, 0, 1, addr_of(&net, 1, 1), "a", 1);
    alksim_net_send(&net, &faults, 0, 1, 1, addr_of(&net, 0, 1), "b", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 100, &dg));
    ASSERT_EQ('b', dg.data[0]); /* the other direction still works */
    ASSERT_EQ(ALKSIM_NONE, alksim_net_deliver(&net, 100, &dg));
    ASSERT_EQ(1, alksim_net_get_stats(&net).dropped_partition);
    /* In flight when the partition starts: dropped on arrival. */
    alksim_net_heal(&net);
    alksim_net_send(&net, &faults, 200, 0, 1, addr_of(&net, 1, 1), "c", 1);
    alksim_net_partition(&net, 0, 1, 1);
    ASSERT_EQ(ALKSIM_NONE, alksim_net_deliver(&net, 300, &dg));
    alksim_net_heal(&net);
    alksim_net_send(&net, &faults, 400, 0, 1, addr_of(&net, 1, 1), "d", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 500, &dg));
    ASSERT_EQ('d', dg.data[0]);
    ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    PASS();
}

TEST net_roaming_drops_in_flight_to_old_address(void)
{
    alksim_net net;
    alksim_link l = {100, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    alksim_addr old;
    net_open(&net, 2, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    old = addr_of(&net, 1, 5);
    alksim_net_send(&net, &faults, 0, 0, 1, old, "x", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_set_ip(&net, 1, 0x0b000001u));
    ASSERT_EQ(ALKSIM_NONE, alksim_net_deliver(&net, 100, &dg));
    ASSERT_EQ(1, alksim_net_get_stats(&net).dropped_no_route);
    alksim_net_send(&net, &faults, 100, 0, 1, addr_of(&net, 1, 5), "y", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 200, &dg));
    ASSERT_EQ(0x0b000001u, dg.dst.ip);
    PASS();
}

TEST net_nat_mapping_filtering_and_expiry(void)
{
    alksim_net net;
    alksim_link l = {10, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    alksim_nat_config nat = {0xc6336401u, ALKSIM_NAT_EIM, ALKSIM_NAT_ADF,
                             1000};
    uint16_t ext_to_1, ext_to_2;
    net_open(&net, 3, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    ASSERT_EQ(ALKSIM_OK, alksim_net_set_nat(&net, 0, &nat));
    ASSERT_EQ(0xc6336401u, alksim_net_ip(&net, 0));
    /* Host 0 (behind the NAT) sends to host 1 and host 2 from port 40. */
    alksim_net_send(&net, &faults, 0, 0, 40, addr_of(&net, 1, 80), "a", 1);
    alksim_net_send(&net, &faults, 0, 0, 40, addr_of(&net, 2, 80), "b", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 10, &dg));
    ASSERT_EQ(0xc6336401u, dg.src.ip);
    ext_to_1 = dg.src.port;
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 10, &dg));
    ext_to_2 = dg.src.port;
    ASSERT_EQ(ext_to_1, ext_to_2); /* endpoint-independent mapping */
    ASSERT_EQ(20000, ext_to_1);    /* ports are allocated from 20000 */
    /* Host 1 answers to the mapped port: admitted, rewritten inside. */
    alksim_net_send(&net, &faults, 20, 1, 80, dg.src, "c", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 30, &dg));
    ASSERT_EQ(0, dg.to_host);
    ASSERT_EQ(40, dg.dst.port);
    ASSERT_EQ(alksim_net_get_stats(&net).dropped_nat, 0);
    /* Outbound traffic refreshes the mapping: at 900 host 0 talks to host
     * 1 again, so an answer at 1500 (> 1000 after the first send) passes. */
    alksim_net_send(&net, &faults, 900, 0, 40, addr_of(&net, 1, 80), "r", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 910, &dg));
    alksim_net_send(&net, &faults, 1500, 1, 80, dg.src, "s", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 1510, &dg));
    ASSERT_EQ(0, dg.to_host);
    /* A mapping made late starts its idle clock when it is made. */
    alksim_net_send(&net, &faults, 5000, 0, 41, addr_of(&net, 2, 80), "n", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 5010, &dg));
    alksim_net_send(&net, &faults, 5500, 2, 80, dg.src, "o", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 5510, &dg));
    ASSERT_EQ(41, dg.dst.port);
    /* After the idle expiry (inbound traffic does not refresh it) the
     * mapping is gone: filtered. */
    {
        alksim_addr to_nat;
        to_nat.ip = 0xc6336401u;
        to_nat.port = ext_to_1;
        alksim_net_send(&net, &faults, 8000, 1, 80, to_nat, "e", 1);
    }
    ASSERT_EQ(ALKSIM_NONE, alksim_net_deliver(&net, 9000, &dg));
    ASSERT_EQ(1, alksim_net_get_stats(&net).dropped_nat);
    ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    PASS();
}

TEST net_nat_filters_at_arrival_not_at_delivery_call(void)
{
    alksim_net net;
    alksim_link l = {1000, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    alksim_nat_config nat = {0xc6336404u, ALKSIM_NAT_EIM, ALKSIM_NAT_EIF,
                             10000};
    net_open(&net, 2, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    alksim_net_set_nat(&net, 0, &nat);
    alksim_net_send(&net, &faults, 0, 0, 40, addr_of(&net, 1, 80), "q", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 1000, &dg));
    /* The reply arrives at 2000, well inside the 10 us idle lifetime; the
     * driver only gets round to delivering at 50000. */
    alksim_net_send(&net, &faults, 1000, 1, 80, dg.src, "a", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 50000, &dg));
    ASSERT_EQ(0, dg.to_host);
    ASSERT_EQ(0, alksim_net_get_stats(&net).dropped_nat);
    /* Exactly the idle lifetime after the last outbound use still admits. */
    alksim_net_send(&net, &faults, 100000, 0, 40, addr_of(&net, 1, 80), "q", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 101000, &dg));
    alksim_net_send(&net, &faults, 109000, 1, 80, dg.src, "b", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 110000, &dg)); /* +10000 */
    ASSERT_EQ(0, dg.to_host);
    PASS();
}

TEST net_nat_full_table_evicts_least_recently_used(void)
{
    alksim_net net;
    alksim_link l = {10, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    alksim_nat_config nat = {0xc6336403u, ALKSIM_NAT_EDM, ALKSIM_NAT_APDF, 0};
    alksim_addr mapped[9], remote;
    unsigned i, admitted = 0;
    net_open(&net, 2, &l); /* 8 NAT entries per host */
    alksim_source_init_bytes(&faults, NULL, 0);
    alksim_net_set_nat(&net, 0, &nat);
    /* Nine remotes (ports of host 1): the ninth evicts the first, which is
     * the least recently used. */
    for (i = 0; i < 9; i++) {
        remote = addr_of(&net, 1, (uint16_t)(100 + i));
        alksim_net_send(&net, &faults, 10 * i, 0, 40, remote, "m", 1);
        ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 10 * i + 10, &dg));
        mapped[i] = dg.src;
    }
    for (i = 0; i < 9; i++) {
        alksim_net_send(&net, &faults, 1000, 1, (uint16_t)(100 + i),
                        mapped[i], "r", 1);
        if (alksim_net_deliver(&net, 1010, &dg) == ALKSIM_OK) {
            admitted++;
            ASSERT(i != 0);
        }
    }
    ASSERT_EQ(8, admitted);
    PASS();
}

TEST net_nat_dependent_mapping_and_port_filtering(void)
{
    alksim_net net;
    alksim_link l = {10, 0, 0, 0, 0, 0};
    alksim_source faults;
    alksim_datagram dg;
    alksim_nat_config nat = {0xc6336402u, ALKSIM_NAT_EDM, ALKSIM_NAT_APDF, 0};
    alksim_addr m1;
    uint16_t p1;
    net_open(&net, 3, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    alksim_net_set_nat(&net, 0, &nat);
    alksim_net_send(&net, &faults, 0, 0, 40, addr_of(&net, 1, 80), "a", 1);
    alksim_net_send(&net, &faults, 0, 0, 40, addr_of(&net, 2, 80), "b", 1);
    alksim_net_deliver(&net, 10, &dg);
    m1 = dg.src;
    p1 = dg.src.port;
    alksim_net_deliver(&net, 10, &dg);
    ASSERT(p1 != dg.src.port); /* endpoint-dependent: one port per remote */
    /* Host 2 may not use host 1's mapping, nor may host 1 from port 81. */
    alksim_net_send(&net, &faults, 20, 2, 80, m1, "x", 1);
    alksim_net_send(&net, &faults, 20, 1, 81, m1, "y", 1);
    alksim_net_send(&net, &faults, 20, 1, 80, m1, "z", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 30, &dg));
    ASSERT_EQ('z', dg.data[0]);
    ASSERT_EQ(ALKSIM_NONE, alksim_net_deliver(&net, 30, &dg));
    ASSERT_EQ(2, alksim_net_get_stats(&net).dropped_nat);
    PASS();
}

TEST net_check_detects_corruption(void)
{
    alksim_net net;
    alksim_link l = {1000, 500, 0, 0, 0, 0};
    alksim_source f;
    alksim_datagram dg;
    uint32_t saved;
    unsigned i;
    net_open(&net, 2, &l);
    alksim_source_init_rng(&f, test_seed);
    for (i = 0; i < 20; i++)
        alksim_net_send(&net, &f, i * 7, 0, 1, addr_of(&net, 1, 1), "x", 1);
    ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 1700, &dg));
    ASSERT(net.arrivals.len >= 2);
    ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    /* arrival order broken */
    {
        alksim_event first = net.arrivals.heap[0];
        size_t last = net.arrivals.len - 1;
        net.arrivals.heap[0] = net.arrivals.heap[last];
        net.arrivals.heap[last] = first;
        ASSERT_EQ(ALKSIM_ERR_CONSERVATION, alksim_net_check(&net));
        net.arrivals.heap[last] = net.arrivals.heap[0];
        net.arrivals.heap[0] = first;
    }
    ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    /* a slot both free and in flight (the first and a later entry) */
    saved = net.free_slots[0];
    net.free_slots[0] = net.arrivals.heap[1].target;
    ASSERT_EQ(ALKSIM_ERR_CONSERVATION, alksim_net_check(&net));
    net.free_slots[0] = net.arrivals.heap[0].target;
    ASSERT_EQ(ALKSIM_ERR_CONSERVATION, alksim_net_check(&net));
    net.free_slots[0] = saved;
    /* the delivered slot also listed free */
    saved = net.free_slots[0];
    net.free_slots[0] = (uint32_t)net.last_delivered;
    ASSERT_EQ(ALKSIM_ERR_CONSERVATION, alksim_net_check(&net));
    net.free_slots[0] = saved;
    /* the books */
    net.stats.lost++;
    ASSERT_EQ(ALKSIM_ERR_CONSERVATION, alksim_net_check(&net));
    net.stats.lost--;
    ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
    PASS();
}

TEST net_misuse_is_an_error_not_a_drop(void)
{
    alksim_net net;
    alksim_link l = {10, 0, 0, 0, 0, 0};
    alksim_source faults;
    static uint8_t big[1501];
    alksim_net_config cfg = {2, 4, 1500, 0};
    net_open(&net, 2, &l);
    alksim_source_init_bytes(&faults, NULL, 0);
    ASSERT_EQ(ALKSIM_ERR_TOO_LARGE,
              alksim_net_send(&net, &faults, 0, 0, 1, addr_of(&net, 1, 1),
                              big, sizeof big));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_send(&net, &faults, 0, 5, 1, addr_of(&net, 1, 1),
                              big, 1));
    ASSERT_EQ(0, alksim_net_get_stats(&net).sent);
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_init(&net, &cfg, net_mem, 16));
    ASSERT_EQ(ALKSIM_OK, alksim_net_set_nat(&net, 0, NULL));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_net_set_nat(&net, 9, NULL));
    PASS();
}

/* ---- disk ------------------------------------------------------------------- */

static uint8_t disk_mem[1 << 16];

static void disk_open(alksim_disk *d, uint32_t max_pending)
{
    alksim_disk_config cfg;
    cfg.sector_size = 512;
    cfg.sectors = 64;
    cfg.max_pending = max_pending;
    if (alksim_disk_init(d, &cfg,
                         exact_block(&disk_block, alksim_disk_mem_size(&cfg)),
                         alksim_disk_mem_size(&cfg)) != ALKSIM_OK)
        abort();
}

TEST disk_flushed_data_survives_any_crash(void)
{
    alksim_disk d;
    alksim_source src;
    uint8_t a[1000], b[1000], got[1000];
    unsigned round;
    memset(a, 0xaa, sizeof a);
    memset(b, 0xbb, sizeof b);
    for (round = 0; round < 50; round++) {
        disk_open(&d, 32);
        alksim_source_init_rng(&src, test_seed + round);
        ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 100, a, sizeof a));
        ASSERT_EQ(ALKSIM_OK, alksim_disk_flush(&d));
        ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 5000, b, sizeof b));
        ASSERT_EQ(ALKSIM_OK, alksim_disk_crash(&d, &src));
        ASSERT_EQ(0, alksim_disk_pending(&d));
        ASSERT_EQ(ALKSIM_OK, alksim_disk_read(&d, 100, got, sizeof got));
        ASSERT_MEM_EQ(a, got, sizeof a);
    }
    PASS();
}

TEST disk_unflushed_sectors_are_old_or_new_never_garbage(void)
{
    alksim_disk d;
    alksim_source src;
    uint8_t v1[1536], v2[1536], got[512];
    unsigned round, s;
    int torn_seen = 0, reorder_seen = 0;
    memset(v1, 0x11, sizeof v1);
    memset(v2, 0x22, sizeof v2);
    for (round = 0; round < 200; round++) {
        alksim_disk_stats st;
        unsigned kinds = 0;
        disk_open(&d, 32);
        alksim_source_init_rng(&src, test_seed * 1000 + round);
        alksim_disk_write(&d, 0, v1, sizeof v1);
        alksim_disk_write(&d, 0, v2, sizeof v2);
        alksim_disk_crash(&d, &src);
        for (s = 0; s < 3; s++) {
            alksim_disk_read(&d, s * 512u, got, 512);
            ASSERT(got[0] == 0 || got[0] == 0x11 || got[0] == 0x22);
            ASSERT(got[511] == got[0]); /* sector-atomic */
            kinds |= 1u << (got[0] >> 4);
        }
        st = d.stats;
        torn_seen |= (kinds & (kinds - 1)) != 0;
        reorder_seen |= st.crash_reordered > 0;
    }
    ASSERT(torn_seen);
    ASSERT(reorder_seen);
    PASS();
}

TEST disk_crash_accounting_is_exact(void)
{
    alksim_disk d;
    alksim_source src;
    uint8_t a = 0xaa, b = 0xbb, got = 0;
    uint8_t pick;
    /* Two cached versions of sector 0; the crash draws one byte from the
     * end: 0 = durable, 1 = the older version, 2 = the newer. */
    for (pick = 0; pick < 3; pick++) {
        disk_open(&d, 8);
        alksim_disk_write(&d, 0, &a, 1);
        alksim_disk_write(&d, 0, &b, 1);
        alksim_source_init_bytes(&src, &pick, 1);
        alksim_disk_crash(&d, &src);
        alksim_disk_read(&d, 0, &got, 1);
        ASSERT_EQ(pick == 0 ? 0 : pick == 1 ? 0xaa : 0xbb, got);
        ASSERT_EQ(pick == 0, d.stats.crash_dropped);
        ASSERT_EQ(pick == 1, d.stats.crash_reordered);
        ASSERT_EQ(pick == 2, d.stats.crash_kept);
    }
    PASS();
}

TEST disk_reads_see_writes_and_writeback_when_cache_full(void)
{
    alksim_disk d;
    alksim_source none;
    uint8_t buf[600], got[600];
    size_t i;
    for (i = 0; i < sizeof buf; i++)
        buf[i] = (uint8_t)i;
    disk_open(&d, 2);
    alksim_source_init_bytes(&none, NULL, 0);
    ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 300, buf, sizeof buf));
    ASSERT_EQ(1, d.stats.writes);
    ASSERT_EQ(ALKSIM_OK, alksim_disk_read(&d, 300, got, sizeof got));
    ASSERT_EQ(1, d.stats.reads);
    ASSERT_MEM_EQ(buf, got, sizeof buf);
    ASSERT_EQ(2, alksim_disk_pending(&d));
    ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 2048, buf, 10));
    ASSERT_EQ(2, alksim_disk_pending(&d));
    ASSERT_EQ(1, d.stats.writebacks);
    /* An exhausted source drops every cached write: the written-back
     * sector 0 survives, sectors 1 and 4 do not. */
    alksim_disk_crash(&d, &none);
    ASSERT_EQ(2, d.stats.crash_dropped); /* sectors 1 and 4 */
    ASSERT_EQ(0, d.stats.crash_kept + d.stats.crash_reordered);
    alksim_disk_read(&d, 300, got, 212);
    ASSERT_MEM_EQ(buf, got, 212);
    alksim_disk_read(&d, 512, got, 10);
    ASSERT_EQ(0, got[0]);
    ASSERT_EQ(ALKSIM_ERR_RANGE, alksim_disk_read(&d, 64 * 512 - 1, got, 2));
    ASSERT_EQ(ALKSIM_OK, alksim_disk_read(&d, 64 * 512, got, 0)); /* at end */
    ASSERT_EQ(ALKSIM_ERR_RANGE, alksim_disk_read(&d, 64 * 512 + 1, got, 0));
    ASSERT_EQ(ALKSIM_ERR_RANGE, alksim_disk_write(&d, 64 * 512, buf, 1));
    PASS();
}

/* The write cache is a ring: rounds of writes well past its size,
 * flushes and crashes, against a plain-array model of the same rules
 * (oldest written back first; at a crash each sector picks the durable
 * content or one of its cached versions, decided in the order of first
 * caching, from an identical source). */
TEST disk_cache_ring_matches_a_plain_model(void)
{
    enum { SS = 512, NS = 64, CAP = 5 };
    static uint8_t dur[NS * SS], pend[CAP][SS];
    uint64_t psec[CAP];
    uint32_t n = 0;
    alksim_disk d;
    alksim_source ops, c1, c2;
    uint8_t buf[1500], got[NS * SS];
    unsigned step;
    uint64_t writebacks = 0;
    disk_open(&d, CAP);
    memset(dur, 0, sizeof dur);
    alksim_source_init_rng(&ops, test_seed + 77);
    alksim_source_init_rng(&c1, test_seed + 78);
    alksim_source_init_rng(&c2, test_seed + 78);
    for (step = 0; step < 3000; step++) {
        unsigned what = (unsigned)alksim_pick(&ops, 10);
        if (what < 8) { /* write */
            uint64_t off = alksim_pick(&ops, NS * SS - sizeof buf);
            size_t len = 1 + (size_t)alksim_pick(&ops, sizeof buf), k;
            for (k = 0; k < len; k++) buf[k] = (uint8_t)(step * 7 + k);
            ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, off, buf, len));
            for (k = 0; k < len;) {
                uint64_t sec = (off + k) / SS;
                size_t in = (size_t)((off + k) % SS), m = SS - in;
                uint32_t i;
                uint8_t cur[SS];
                if (m > len - k) m = len - k;
                memcpy(cur, dur + sec * SS, SS);
                for (i = n; i-- > 0;)
                    if (psec[i] == sec) { memcpy(cur, pend[i], SS); break; }
                if (n == CAP) { /* write back the oldest */
                    memcpy(dur + psec[0] * SS, pend[0], SS);
                    memmove(pend, pend + 1, (CAP - 1) * SS);
                    memmove(psec, psec + 1, (CAP - 1) * sizeof *psec);
                    n--;
                    writebacks++;
                }
                memcpy(pend[n], cur, SS);
                memcpy(pend[n] + in, buf + k, m);
                psec[n++] = sec;
                k += m;
            }
        } else if (what == 8) {
            ASSERT_EQ(ALKSIM_OK, alksim_disk_flush(&d));
            for (; n; n--, writebacks++) {
                memcpy(dur + psec[0] * SS, pend[0], SS);
                memmove(pend, pend + 1, (CAP - 1) * SS);
                memmove(psec, psec + 1, (CAP - 1) * sizeof *psec);
            }
        } else {
            uint32_t i, j;
            ASSERT_EQ(ALKSIM_OK, alksim_disk_crash(&d, &c1));
            for (i = 0; i < n; i++) {
                uint32_t versions = 0, chosen, seen = 0;
                for (j = 0; j < i; j++) seen |= psec[j] == psec[i];
                if (seen) continue;
                for (j = i; j < n; j++) versions += psec[j] == psec[i];
                chosen = (uint32_t)alksim_pick(&c2, versions + 1);
                if (!chosen) continue;
                for (j = i; j < n; j++)
                    if (psec[j] == psec[i] && --chosen == 0) break;
                memcpy(dur + psec[i] * SS, pend[j], SS);
            }
            n = 0;
        }
        ASSERT_EQ(n, alksim_disk_pending(&d));
        ASSERT_EQ(writebacks, d.stats.writebacks);
        if (n == 0) ASSERT_MEM_EQ(dur, d.durable, sizeof dur);
        if (step % 16 == 0) {
            uint32_t i;
            static uint8_t want[NS * SS];
            memcpy(want, dur, sizeof want);
            for (i = 0; i < n; i++) memcpy(want + psec[i] * SS, pend[i], SS);
            ASSERT_EQ(ALKSIM_OK, alksim_disk_read(&d, 0, got, sizeof got));
            ASSERT_MEM_EQ(want, got, sizeof got);
        }
    }
    ASSERT(writebacks > 1000);
    PASS();
}

TEST disk_injected_errors_have_no_effect(void)
{
    alksim_disk d;
    uint8_t x = 0x77, got = 0;
    disk_open(&d, 8);
    ASSERT_EQ(ALKSIM_OK, alksim_disk_inject(&d, ALKSIM_DISK_WRITE, 2));
    ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 0, &x, 1));
    x = 0x88;
    ASSERT_EQ(ALKSIM_ERR_IO, alksim_disk_write(&d, 0, &x, 1));
    alksim_disk_read(&d, 0, &got, 1);
    ASSERT_EQ(0x77, got);
    ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 0, &x, 1));
    ASSERT_EQ(ALKSIM_OK, alksim_disk_flush(&d));
    ASSERT_EQ(1, d.stats.flushes);
    ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 0, &x, 1));
    ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&d, 1, &x, 1));
    alksim_disk_inject(&d, ALKSIM_DISK_FLUSH, 1);
    ASSERT_EQ(ALKSIM_ERR_IO, alksim_disk_flush(&d));
    ASSERT_EQ(1, d.stats.flushes); /* the failed flush did nothing */
    ASSERT_EQ(2, alksim_disk_pending(&d));
    alksim_disk_inject(&d, ALKSIM_DISK_READ, 1);
    ASSERT_EQ(ALKSIM_ERR_IO, alksim_disk_read(&d, 0, &got, 1));
    ASSERT_EQ(3, d.stats.injected_errors);
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_disk_inject(&d, 7, 1));
    PASS();
}

/* ---- streams ---------------------------------------------------------------- */

static uint8_t stream_mem[1 << 16];

static void streams_open(alksim_streams *st, const alksim_net *net,
                         uint32_t buffer)
{
    alksim_streams_config cfg = {4, 0, 3, NULL};
    size_t n;
    cfg.buffer = buffer;
    cfg.net = net;
    n = alksim_streams_mem_size(&cfg);
    if (alksim_streams_init(st, &cfg, exact_block(&stream_block, n), n) !=
        ALKSIM_OK)
        abort();
}

/* Polls until `until`, appending DATA for `side` to out; returns the events
 * seen as a bit set of types. */
static unsigned stream_drain(alksim_streams *st, alksim_source *f,
                             uint64_t until, int side, uint8_t *out,
                             size_t *got, uint64_t *last_time)
{
    alksim_stream_event ev;
    unsigned seen = 0;
    while (alksim_stream_poll(st, f, until, &ev) == ALKSIM_OK) {
        seen |= 1u << ev.type;
        if (last_time) {
            if (ev.time < *last_time)
                seen |= 1u << 15; /* out of order */
            *last_time = ev.time;
        }
        if (ev.type == ALKSIM_STREAM_DATA && ev.side == side) {
            memcpy(out + *got, ev.data, ev.len);
            *got += ev.len;
        }
    }
    return seen;
}

TEST stream_connect_refuse_and_accept(void)
{
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {1000, 0, 0, 0};
    alksim_stream_event ev;
    uint32_t c;
    streams_open(&st, NULL, 64);
    alksim_source_init_bytes(&f, NULL, 0);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_connect(&st, &f, 0, 0, 1, &p, &c));
    ASSERT_EQ(2000, alksim_stream_next_time(&st, 0));
    ASSERT_EQ(ALKSIM_NONE, alksim_stream_poll(&st, &f, 1999, &ev));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_poll(&st, &f, 2000, &ev));
    ASSERT_EQ(ALKSIM_STREAM_REFUSED, ev.type); /* nobody listening */
    ASSERT_EQ(1, st.stats.refused);
    ASSERT_EQ(0, ev.side);
    ASSERT_EQ(ALKSIM_ERR_CLOSED, alksim_stream_write(&st, &f, 2000, c, 0, "x", 1));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_release(&st, c));
    alksim_stream_listen(&st, 1, 1);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_connect(&st, &f, 0, 0, 1, &p, &c));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_poll(&st, &f, 5000, &ev));
    ASSERT_EQ(ALKSIM_STREAM_ACCEPTED, ev.type);
    ASSERT_EQ(1, ev.side);
    ASSERT_EQ(1, ev.host);
    ASSERT_EQ(NULL, ev.data); /* only DATA carries bytes */
    ASSERT_EQ(0, ev.len);
    ASSERT_EQ(1000, ev.time);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_poll(&st, &f, 5000, &ev));
    ASSERT_EQ(ALKSIM_STREAM_CONNECTED, ev.type);
    ASSERT_EQ(0, ev.host);
    ASSERT_EQ(2000, ev.time);
    ASSERT_EQ(0, alksim_stream_write(&st, &f, 5000, c, 0, NULL, 0));
    ASSERT_EQ(ALKSIM_NEVER, alksim_stream_next_time(&st, 5000));
    ASSERT_EQ(1, alksim_stream_write(&st, &f, 5000, c, 0, "x", 1));
    ASSERT_EQ(2, alksim_stream_write(&st, &f, 5000, c, 1, "yz", 2));
    ASSERT_EQ(1, alksim_stream_buffered(&st, c, 0));
    ASSERT_EQ(2, alksim_stream_buffered(&st, c, 1));
    ASSERT_EQ(0, alksim_stream_buffered(&st, 99, 0));
    ASSERT_EQ(0, alksim_stream_buffered(&st, c, 2));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_release(&st, c));
    ASSERT_EQ(3, st.stats.discarded);
    PASS();
}

static uint32_t stream_pair(alksim_streams *st, alksim_source *f,
                            const alksim_stream_params *p)
{
    uint32_t c;
    alksim_stream_event ev;
    alksim_stream_listen(st, 1, 1);
    if (alksim_stream_connect(st, f, 0, 0, 1, p, &c) != ALKSIM_OK)
        abort();
    while (alksim_stream_poll(st, f, 10 * p->latency_ns, &ev) == ALKSIM_OK)
        ;
    return c;
}

TEST stream_bytes_arrive_in_order_exactly_once_any_segmentation(void)
{
    static uint8_t sent[20000], got[20000];
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {500, 0, 0, 0};
    uint64_t now = 10000, last = 0;
    size_t at = 0, n = 0, i;
    unsigned seen = 0;
    uint32_t c;
    streams_open(&st, NULL, 1024);
    alksim_source_init_rng(&f, test_seed);
    c = stream_pair(&st, &f, &p);
    for (i = 0; i < sizeof sent; i++)
        sent[i] = (uint8_t)(i * 13 + 7);
    while (at < sizeof sent) {
        ptrdiff_t w = alksim_stream_write(&st, &f, now, c, 0, sent + at,
                                          sizeof sent - at);
        ASSERT(w >= 0);
        ASSERT(alksim_stream_buffered(&st, c, 0) <= 1024);
        at += (size_t)w;
        now += 300;
        seen |= stream_drain(&st, &f, now, 1, got, &n, &last);
    }
    ASSERT_EQ(ALKSIM_OK, alksim_stream_shutdown(&st, now, c, 0));
    ASSERT_EQ(ALKSIM_ERR_CLOSED, alksim_stream_write(&st, &f, now, c, 0, "x", 1));
    seen |= stream_drain(&st, &f, ALKSIM_NEVER - 1, 1, got, &n, &last);
    ASSERT_EQ(sizeof sent, n);
    ASSERT_MEM_EQ(sent, got, sizeof sent);
    ASSERT(seen & (1u << ALKSIM_STREAM_EOF));
    ASSERT_FALSE(seen & (1u << 15));
    ASSERT_EQ(st.stats.written, st.stats.delivered);
    PASS();
}

TEST stream_half_close_each_direction_on_its_own(void)
{
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {100, 0, 0, 0};
    alksim_stream_event ev;
    uint32_t c;
    int eof_to_1 = 0, data_to_0 = 0;
    streams_open(&st, NULL, 64);
    alksim_source_init_bytes(&f, NULL, 0);
    c = stream_pair(&st, &f, &p);
    ASSERT_EQ(3, alksim_stream_write(&st, &f, 1000, c, 0, "abc", 3));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_shutdown(&st, 1000, c, 0));
    /* Side 1 can still write after side 0 shut its direction. */
    ASSERT_EQ(2, alksim_stream_write(&st, &f, 1000, c, 1, "zz", 2));
    while (alksim_stream_poll(&st, &f, 5000, &ev) == ALKSIM_OK) {
        if (ev.type == ALKSIM_STREAM_EOF) {
            ASSERT_EQ(1, ev.side);
            eof_to_1++;
        }
        if (ev.type == ALKSIM_STREAM_DATA && ev.side == 1)
            ASSERT_EQ(0, eof_to_1); /* EOF only after all the bytes */
        if (ev.type == ALKSIM_STREAM_DATA && ev.side == 0)
            data_to_0 += (int)ev.len;
    }
    ASSERT_EQ(1, eof_to_1);
    ASSERT_EQ(2, data_to_0);
    ASSERT_EQ(1, st.stats.eofs);
    PASS();
}

TEST stream_partition_stalls_without_loss(void)
{
    alksim_net net;
    alksim_link l = {10, 0, 0, 0, 0, 0};
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {100, 0, 0, 0};
    uint8_t got[16];
    size_t n = 0;
    uint32_t c;
    net_open(&net, 3, &l);
    streams_open(&st, &net, 64);
    alksim_source_init_bytes(&f, NULL, 0);
    c = stream_pair(&st, &f, &p);
    alksim_net_partition(&net, 0, 1, 1);
    ASSERT_EQ(5, alksim_stream_write(&st, &f, 1000, c, 0, "hello", 5));
    ASSERT_EQ(ALKSIM_NEVER, alksim_stream_next_time(&st, 1000));
    stream_drain(&st, &f, 100000, 1, got, &n, NULL);
    ASSERT_EQ(0, n);
    alksim_net_heal(&net);
    stream_drain(&st, &f, 100000, 1, got, &n, NULL);
    ASSERT_EQ(5, n);
    ASSERT_MEM_EQ("hello", got, 5);
    PASS();
}

TEST stream_bandwidth_and_stall_delay_delivery(void)
{
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {1000, 1000000, 100, 0}; /* 1 MB/s, 100 B */
    alksim_stream_event ev;
    static uint8_t buf[1000];
    uint32_t c;
    streams_open(&st, NULL, 1000);
    alksim_source_init_bytes(&f, NULL, 0); /* largest segments */
    c = stream_pair(&st, &f, &p);
    ASSERT_EQ(1000, alksim_stream_write(&st, &f, 10000, c, 0, buf, 1000));
    /* 100 bytes at 1 MB/s take 100 us, after 1 us of latency. */
    ASSERT_EQ(10000 + 1000 + 100000, alksim_stream_next_time(&st, 10000));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_stall(&st, c, 500000));
    ASSERT_EQ(500000, alksim_stream_next_time(&st, 10000));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_poll(&st, &f, 500000, &ev));
    ASSERT_EQ(100, ev.len);
    PASS();
}

TEST stream_reset_discards_and_tells_the_peer(void)
{
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {100, 0, 0, 0};
    alksim_stream_event ev;
    uint32_t c;
    int resets = 0, data = 0;
    streams_open(&st, NULL, 64);
    alksim_source_init_bytes(&f, NULL, 0);
    c = stream_pair(&st, &f, &p);
    ASSERT_EQ(4, alksim_stream_write(&st, &f, 1000, c, 0, "lost", 4));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_stream_reset(&st, 1000, c, 2));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_reset(&st, 1000, c, 0));
    ASSERT_EQ(0, alksim_stream_buffered(&st, c, 0));
    ASSERT_EQ(ALKSIM_ERR_CLOSED, alksim_stream_write(&st, &f, 1000, c, 1, "x", 1));
    ASSERT_EQ(ALKSIM_ERR_CLOSED, alksim_stream_reset(&st, 1000, c, 1));
    while (alksim_stream_poll(&st, &f, 10000, &ev) == ALKSIM_OK) {
        resets += ev.type == ALKSIM_STREAM_RESET;
        data += ev.type == ALKSIM_STREAM_DATA;
        if (ev.type == ALKSIM_STREAM_RESET)
            ASSERT_EQ(1, ev.side);
    }
    ASSERT_EQ(1, resets);
    ASSERT_EQ(0, data);
    ASSERT_EQ(4, st.stats.discarded);
    ASSERT_EQ(1, st.stats.resets);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_release(&st, c));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_stream_release(&st, c));
    PASS();
}

TEST stream_reset_leaves_other_connections_alone(void)
{
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {100, 0, 0, 0};
    uint8_t got[16];
    size_t n = 0;
    uint32_t a, b;
    streams_open(&st, NULL, 64);
    alksim_source_init_bytes(&f, NULL, 0);
    a = stream_pair(&st, &f, &p);
    b = stream_pair(&st, &f, &p);
    ASSERT(a != b);
    ASSERT_EQ(3, alksim_stream_write(&st, &f, 5000, b, 0, "two", 3));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_reset(&st, 5000, a, 0));
    ASSERT_EQ(3, alksim_stream_buffered(&st, b, 0));
    {
        alksim_stream_event ev;
        while (alksim_stream_poll(&st, &f, 100000, &ev) == ALKSIM_OK) {
            ASSERT_EQ(ev.side == 0 ? 0u : 1u, ev.host);
            if (ev.type == ALKSIM_STREAM_DATA) {
                ASSERT_EQ(b, ev.conn);
                memcpy(got + n, ev.data, ev.len);
                n += ev.len;
            }
        }
    }
    ASSERT_EQ(3, n);
    ASSERT_MEM_EQ("two", got, 3);
    ASSERT_EQ(2, alksim_stream_write(&st, &f, 100000, b, 1, "ok", 2));
    PASS();
}

TEST stream_reset_before_connected_keeps_side_0_closed(void)
{
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {100, 0, 0, 0};
    alksim_stream_event ev;
    uint32_t c;
    int connected = 0, reset = 0;
    streams_open(&st, NULL, 64);
    alksim_source_init_bytes(&f, NULL, 0);
    alksim_stream_listen(&st, 1, 1);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_connect(&st, &f, 0, 0, 1, &p, &c));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_poll(&st, &f, 100, &ev));
    ASSERT_EQ(ALKSIM_STREAM_ACCEPTED, ev.type);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_reset(&st, 100, c, 1));
    while (alksim_stream_poll(&st, &f, 1000, &ev) == ALKSIM_OK) {
        connected += ev.type == ALKSIM_STREAM_CONNECTED;
        reset += ev.type == ALKSIM_STREAM_RESET && ev.side == 0;
    }
    ASSERT_EQ(1, connected);
    ASSERT_EQ(1, reset);
    ASSERT_EQ(ALKSIM_ERR_CLOSED, alksim_stream_write(&st, &f, 1000, c, 0, "x", 1));
    ASSERT_EQ(ALKSIM_ERR_CLOSED, alksim_stream_shutdown(&st, 1000, c, 0));
    PASS();
}

TEST stream_refusal_is_drawn_and_exhaustion_accepts(void)
{
    alksim_streams st;
    alksim_source none, all;
    alksim_stream_params p = {100, 0, 0, 65535};
    alksim_stream_event ev;
    const uint8_t top[2] = {0xff, 0xff};
    uint32_t c;
    streams_open(&st, NULL, 64);
    alksim_stream_listen(&st, 1, 1);
    alksim_source_init_bytes(&none, NULL, 0);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_connect(&st, &none, 0, 0, 1, &p, &c));
    ASSERT_EQ(ALKSIM_OK, alksim_stream_poll(&st, &none, 1000, &ev));
    ASSERT_EQ(ALKSIM_STREAM_ACCEPTED, ev.type); /* no draw: no refusal */
    alksim_source_init_bytes(&all, top, sizeof top);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_connect(&st, &all, 0, 0, 1, &p, &c));
    ASSERT_EQ(1, st.stats.refused);
    PASS();
}

TEST stream_slots_run_out(void)
{
    alksim_streams st;
    alksim_source f;
    alksim_stream_params p = {100, 0, 0, 0};
    uint32_t c, i;
    streams_open(&st, NULL, 64);
    alksim_source_init_bytes(&f, NULL, 0);
    for (i = 0; i < 4; i++)
        ASSERT_EQ(ALKSIM_OK, alksim_stream_connect(&st, &f, 0, 0, 1, &p, &c));
    ASSERT_EQ(ALKSIM_ERR_FULL, alksim_stream_connect(&st, &f, 0, 0, 1, &p, &c));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_stream_connect(&st, &f, 0, 0, 9, &p, &c));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_stream_connect(&st, &f, 0, 0, 3, &p, &c)); /* 3 hosts */
    PASS();
}

/* ---- runner and shrinking --------------------------------------------------- */

/* A counter scenario with a planted bug: it fails when three "add" steps
 * with an odd value follow each other. */
typedef struct counter_state {
    unsigned odd_run;
    uint64_t total, pending;
    unsigned kind_seen[32];
} counter_state;

static counter_state the_counter;

static unsigned counter_setups;

static void *counter_setup(alksim_ctx *ctx)
{
    counter_setups++;
    memset(&the_counter, 0, sizeof the_counter);
    alksim_log(ctx, "counter: start");
    return &the_counter;
}

static int counter_step(alksim_ctx *ctx, void *st, unsigned kind)
{
    counter_state *c = (counter_state *)st;
    ALKSIM_CHECK(ctx, ctx->phase == 1, "step outside the safety phase");
    c->kind_seen[kind]++;
    if (kind == 0) {
        uint64_t v = alksim_range(ctx->src, 0, 9);
        alksim_log(ctx, "  add %llu", (unsigned long long)v);
        c->total += v;
        c->odd_run = v % 2 ? c->odd_run + 1 : 0;
        c->pending++;
    } else {
        ctx->now += 10;
        c->odd_run = 0;
    }
    return ALKSIM_OK;
}

static int counter_check(alksim_ctx *ctx, void *st)
{
    counter_state *c = (counter_state *)st;
    ALKSIM_CHECK(ctx, c->odd_run < 3, "three odd adds in a row (total %llu)",
                 (unsigned long long)c->total);
    return ALKSIM_OK;
}

static int counter_quiesce(alksim_ctx *ctx, void *st)
{
    counter_state *c = (counter_state *)st;
    ALKSIM_CHECK(ctx, ctx->phase == 2, "quiesce outside the liveness phase");
    if (!c->pending)
        return 0;
    c->pending--;
    ctx->now += 1;
    return 1;
}

static const char *const counter_kinds[] = {"add", "tick"};
static const alksim_scenario counter_sc = {
    "counter", counter_kinds, 2,  counter_setup, counter_step, counter_check,
    NULL,      counter_quiesce,   NULL,          0,            0,
    0};

TEST run_is_deterministic_in_and_across_processes(void)
{
    uint8_t in[200];
    alksim_run_result a, b;
    int fds[2];
    pid_t pid;
    uint64_t st = test_seed, child_hash = 0;
    size_t i;
    for (i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(alksim_splitmix64(&st) & 0xfe); /* even: passes */
    alksim_run(&counter_sc, in, sizeof in, ALKSIM_RUN_HASH, NULL, &a);
    alksim_run(&counter_sc, in, sizeof in, ALKSIM_RUN_HASH, NULL, &b);
    ASSERT_EQ(ALKSIM_OK, a.code);
    ASSERT_EQ_FMT((unsigned long long)a.trace_hash, (unsigned long long)b.trace_hash, "%llx");
    ASSERT(a.steps > 10);
    ASSERT_EQ(0, pipe(fds));
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        alksim_run_result c;
        alksim_run(&counter_sc, in, sizeof in, ALKSIM_RUN_HASH, NULL, &c);
        if (write(fds[1], &c.trace_hash, sizeof c.trace_hash) < 0)
            _exit(1);
        _exit(0);
    }
    ASSERT_EQ((ssize_t)sizeof child_hash,
              read(fds[0], &child_hash, sizeof child_hash));
    waitpid(pid, NULL, 0);
    close(fds[0]);
    close(fds[1]);
    ASSERT_EQ_FMT((unsigned long long)a.trace_hash, (unsigned long long)child_hash, "%llx");
    in[100] ^= 2; /* a different input gives a different trace */
    alksim_run(&counter_sc, in, sizeof in, ALKSIM_RUN_HASH, NULL, &b);
    ASSERT(a.trace_hash != b.trace_hash);
    PASS();
}

TEST shrinker_finds_a_small_failing_input(void)
{
    static uint8_t in[400], out[400], work[400];
    alksim_run_result r;
    uint64_t st = test_seed;
    size_t i, n;
    unsigned seed_try;
    /* Find a failing random input first (odd adds happen often). */
    for (seed_try = 0; seed_try < 100; seed_try++) {
        for (i = 0; i < sizeof in; i++)
            in[i] = (uint8_t)alksim_splitmix64(&st);
        if (alksim_run(&counter_sc, in, sizeof in, 0, NULL, &r) != ALKSIM_OK)
            break;
    }
    ASSERT(seed_try < 100);
    n = alksim_shrink(&counter_sc, in, sizeof in, out, work, 5000);
    /* 1-minimal: three adds, each a kind byte and an odd value byte; read
     * from the end, kind bytes are zero (add) once simplified. */
    ASSERT_EQ(6, n);
    ASSERT_EQ(0, out[5]);
    ASSERT_EQ(0, out[3]);
    ASSERT_EQ(0, out[1]);
    ASSERT(out[4] % 2 == 1 && out[2] % 2 == 1 && out[0] % 2 == 1);
    ASSERT_EQ(ALKSIM_ERR_FAILED,
              alksim_run(&counter_sc, out, n, 0, NULL, &r));
    /* The run budget is a hard bound, whatever phase it runs out in. */
    for (seed_try = 2; seed_try < 60; seed_try++) {
        counter_setups = 0;
        alksim_shrink(&counter_sc, in, sizeof in, out, work, seed_try);
        ASSERT(counter_setups <= seed_try);
        if (seed_try < 12)
            ASSERT_EQ(seed_try, counter_setups);
    }
    /* A passing input does not shrink. */
    memset(in, 0, sizeof in);
    ASSERT_EQ(ALKSIM_SHRINK_PASSES,
              alksim_shrink(&counter_sc, in, sizeof in, out, work, 100));
    PASS();
}

/* Two invariants, the second reachable in two kinds of step. A shrinker
 * that compared only the result code slipped from the failure it was given
 * to another one (to "b before any a", or to the same invariant in the other
 * kind of step) - the shrunk input then explained a different bug. */
static unsigned slip_a, slip_b;

static void *slip_setup(alksim_ctx *ctx)
{
    (void)ctx;
    slip_a = slip_b = 0;
    return &slip_a;
}

static int slip_step(alksim_ctx *ctx, void *st, unsigned kind)
{
    (void)st;
    if (kind == 0)
        slip_a++;
    else if (kind == 1)
        slip_b++;
    else
        slip_a += (unsigned)alksim_range(ctx->src, 0, 2);
    return ALKSIM_OK;
}

static int slip_check(alksim_ctx *ctx, void *st)
{
    (void)st;
    ALKSIM_CHECK(ctx, slip_a || !slip_b, "b before any a");
    ALKSIM_CHECK(ctx, slip_a < 3 || slip_b < 2, "%u a and %u b", slip_a,
                 slip_b);
    return ALKSIM_OK;
}

static const char *const slip_kinds[] = {"a", "b", "c"};
static const alksim_scenario slip_sc = {
    "slip", slip_kinds, 3, slip_setup, slip_step, slip_check,
    NULL,   NULL,       NULL, 0,      0,         0};

TEST shrinker_keeps_the_failure_it_was_given(void)
{
    static uint8_t in[48], out[48], work[48];
    alksim_run_result want, got;
    uint64_t st = test_seed;
    unsigned tries, shrunk = 0;
    size_t i, n;
    for (tries = 0; tries < 300; tries++) {
        for (i = 0; i < sizeof in; i++)
            in[i] = (uint8_t)alksim_splitmix64(&st);
        if (alksim_run(&slip_sc, in, sizeof in, 0, NULL, &want) == ALKSIM_OK)
            continue;
        ASSERT(want.failure_site != 0);
        ASSERT_EQ(1, want.failure_phase);
        ASSERT(want.failure_kind >= 0 && want.failure_kind < 3);
        n = alksim_shrink(&slip_sc, in, sizeof in, out, work, 2000);
        ASSERT(n <= sizeof in);
        ASSERT_EQ(want.code, alksim_run(&slip_sc, out, n, 0, NULL, &got));
        ASSERT_EQ_FMT((unsigned long long)want.failure_site,
                      (unsigned long long)got.failure_site, "%llx");
        ASSERT_EQ(want.failure_phase, got.failure_phase);
        ASSERT_EQ(want.failure_kind, got.failure_kind);
        shrunk++;
    }
    ASSERT(shrunk > 50);
    /* A passing run names no failure. */
    memset(in, 0, sizeof in);
    ASSERT_EQ(ALKSIM_OK, alksim_run(&slip_sc, in, 0, 0, NULL, &got));
    ASSERT_EQ(0, got.failure_site);
    ASSERT_EQ(-1, got.failure_phase);
    ASSERT_EQ(-1, got.failure_kind);
    PASS();
}

static unsigned stuck_calls;

static int stuck_quiesce(alksim_ctx *ctx, void *st)
{
    (void)st;
    ctx->now += 1000;
    stuck_calls++;
    return 1; /* never quiescent */
}

static int failing_quiesce(alksim_ctx *ctx, void *st)
{
    (void)ctx;
    (void)st;
    return ALKSIM_ERR_IO; /* a code of its own, without alksim_fail */
}

TEST default_liveness_bound_is_100000(void)
{
    alksim_scenario sc = counter_sc;
    alksim_run_result r;
    const uint8_t in[] = {1, 1};
    sc.quiesce = stuck_quiesce;
    sc.max_quiesce = 0;
    stuck_calls = 0;
    ASSERT_EQ(ALKSIM_ERR_LIVENESS, alksim_run(&sc, in, sizeof in, 0, NULL, &r));
    ASSERT_EQ(100000, stuck_calls);
    PASS();
}

TEST quiesce_error_code_is_the_result(void)
{
    alksim_scenario sc = counter_sc;
    alksim_run_result r;
    const uint8_t in[] = {1, 1};
    sc.quiesce = failing_quiesce;
    ASSERT_EQ(ALKSIM_ERR_IO, alksim_run(&sc, in, sizeof in, 0, NULL, &r));
    ASSERT_EQ(ALKSIM_ERR_IO, r.code);
    PASS();
}

TEST exact_memory_sizes_are_enough_and_needed(void)
{
    alksim_net net;
    alksim_net_config ncfg = {3, 8, 100, 2};
    alksim_disk disk;
    alksim_disk_config dcfg = {512, 4, 2};
    alksim_streams st;
    alksim_streams_config scfg = {2, 64, 3, NULL};
    size_t n = alksim_net_mem_size(&ncfg), d = alksim_disk_mem_size(&dcfg);
    size_t s = alksim_streams_mem_size(&scfg);
    ASSERT(n <= sizeof net_mem && d <= sizeof disk_mem &&
           s <= sizeof stream_mem);
    ASSERT_EQ(ALKSIM_OK, alksim_net_init(&net, &ncfg, net_mem, n));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_init(&net, &ncfg, net_mem, n - 1));
    ASSERT_EQ(ALKSIM_OK, alksim_disk_init(&disk, &dcfg, disk_mem, d));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_disk_init(&disk, &dcfg, disk_mem, d - 1));
    ASSERT_EQ(ALKSIM_OK, alksim_streams_init(&st, &scfg, stream_mem, s));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_streams_init(&st, &scfg, stream_mem, s - 1));
    /* misaligned memory is refused */
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_init(&net, &ncfg, net_mem + 1, n));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_disk_init(&disk, &dcfg, disk_mem + 4, d));
    /* sizes that overflow are 0, and init refuses them */
    {
        alksim_disk_config huge = {1, UINT64_MAX, 1};
        alksim_net_config wide = {UINT32_MAX, 1, 1, 0};
        ASSERT_EQ(0, alksim_disk_mem_size(&huge));
        ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
                  alksim_disk_init(&disk, &huge, disk_mem, 16));
        ASSERT_EQ(0, alksim_net_mem_size(&wide));
        alksim_streams_config many = {UINT32_MAX, UINT32_MAX, UINT32_MAX,
                                      NULL};
        ASSERT_EQ(0, alksim_streams_mem_size(&many));
    }
    PASS();
}

/* A zeroed (or NULL) configuration is the documented defaults, and
 * mem_size is non-zero exactly for what init accepts. */
TEST zeroed_configs_mean_the_defaults(void)
{
    alksim_net net;
    alksim_disk disk;
    alksim_streams st;
    alksim_net_config nz, nd = {ALKSIM_NET_DEFAULT_HOSTS,
                                ALKSIM_NET_DEFAULT_IN_FLIGHT,
                                ALKSIM_NET_DEFAULT_SLOT_SIZE,
                                ALKSIM_NET_DEFAULT_NAT_MAPPINGS};
    alksim_disk_config dz, dd = {ALKSIM_DISK_DEFAULT_SECTOR_SIZE,
                                 ALKSIM_DISK_DEFAULT_SECTORS,
                                 ALKSIM_DISK_DEFAULT_PENDING};
    alksim_streams_config sz, sd = {ALKSIM_STREAMS_DEFAULT_CONNS,
                                    ALKSIM_STREAMS_DEFAULT_BUFFER, 64, NULL};
    size_t n, d, s;
    void *nm, *dm, *sm;
    memset(&nz, 0, sizeof nz);
    memset(&dz, 0, sizeof dz);
    memset(&sz, 0, sizeof sz);
    n = alksim_net_mem_size(&nz);
    d = alksim_disk_mem_size(&dz);
    ASSERT(n > 0 && d > 0);
    ASSERT_EQ(n, alksim_net_mem_size(NULL));
    ASSERT_EQ(n, alksim_net_mem_size(&nd));
    ASSERT_EQ(d, alksim_disk_mem_size(NULL));
    ASSERT_EQ(d, alksim_disk_mem_size(&dd));
    nm = malloc(n);
    dm = malloc(d);
    ASSERT(nm && dm);
    ASSERT_EQ(ALKSIM_OK, alksim_net_init(&net, &nz, nm, n));
    ASSERT_EQ(0, memcmp(&net.cfg, &nd, sizeof nd));
    ASSERT_EQ(ALKSIM_OK, net.error.code);
    ASSERT_EQ(ALKSIM_OK, alksim_net_init(&net, NULL, nm, n));
    ASSERT_EQ(0, memcmp(&net.cfg, &nd, sizeof nd));
    ASSERT_EQ(ALKSIM_OK, alksim_disk_init(&disk, &dz, dm, d));
    ASSERT_EQ(dd.sector_size, disk.cfg.sector_size);
    ASSERT_EQ(dd.sectors, disk.cfg.sectors);
    ASSERT_EQ(dd.max_pending, disk.cfg.max_pending);
    /* the defaults work: a datagram across, a sector written and read */
    {
        alksim_source f;
        alksim_addr to;
        alksim_datagram dg;
        uint8_t sector[512], back[512];
        alksim_source_init_bytes(&f, NULL, 0);
        to.ip = alksim_net_ip(&net, 1);
        to.port = 9;
        ASSERT_EQ(ALKSIM_OK, alksim_net_send(&net, &f, 0, 0, 7, to, "hi", 2));
        ASSERT_EQ(ALKSIM_OK, alksim_net_deliver(&net, 0, &dg));
        ASSERT_EQ(1, dg.to_host);
        ASSERT_EQ(2, dg.len);
        memset(sector, 0x5a, sizeof sector);
        ASSERT_EQ(ALKSIM_OK, alksim_disk_write(&disk, (uint64_t)2047 * 512,
                                               sector, sizeof sector));
        ASSERT_EQ(ALKSIM_OK, alksim_disk_read(&disk, (uint64_t)2047 * 512,
                                              back, sizeof back));
        ASSERT_EQ(0, memcmp(sector, back, sizeof back));
        ASSERT_EQ(ALKSIM_ERR_RANGE,
                  alksim_disk_read(&disk, (uint64_t)2048 * 512, back, 1));
    }
    /* streams: zero hosts means the net's (here 2), or 2 without a net */
    s = alksim_streams_mem_size(&sz);
    ASSERT(s > 0);
    ASSERT_EQ(s, alksim_streams_mem_size(NULL));
    sz.net = &net;
    ASSERT_EQ(s, alksim_streams_mem_size(&sz));
    sm = malloc(alksim_streams_mem_size(&sd));
    ASSERT(sm);
    ASSERT_EQ(ALKSIM_OK, alksim_streams_init(&st, &sz, sm, s));
    ASSERT_EQ(ALKSIM_STREAMS_DEFAULT_CONNS, st.max_conns);
    ASSERT_EQ(ALKSIM_STREAMS_DEFAULT_BUFFER, st.buffer);
    ASSERT_EQ(2, st.hosts);
    ASSERT(st.net == &net);
    sd.hosts = 64;
    ASSERT(alksim_streams_mem_size(&sd) > s);
    ASSERT_EQ(ALKSIM_OK, alksim_streams_init(&st, &sd, sm,
                                             alksim_streams_mem_size(&sd)));
    ASSERT_EQ(64, st.hosts);
    ASSERT_EQ(ALKSIM_OK, alksim_stream_listen(&st, 63, 1));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, alksim_stream_listen(&st, 64, 1));
    free(nm);
    free(dm);
    free(sm);
    PASS();
}

/* Every refusal says why: the rule, the value and the bound. */
TEST init_refusals_say_why(void)
{
    alksim_net net;
    alksim_disk disk;
    alksim_streams st;
    alksim_net_config ncfg = {3, 8, 100, 2};
    alksim_disk_config huge = {1, UINT64_MAX, 1};
    alksim_streams_config many = {UINT32_MAX, UINT32_MAX, 1, NULL};
    size_t n = alksim_net_mem_size(&ncfg);
    ASSERT(n <= sizeof net_mem);
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_init(&net, &ncfg, net_mem, n - 1));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT, net.error.code);
    ASSERT(net.error.what && strstr(net.error.what, "mem_len"));
    ASSERT_EQ(n - 1, net.error.value);
    ASSERT_EQ(n, net.error.limit);
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_init(&net, &ncfg, net_mem + 4, n));
    ASSERT(strstr(net.error.what, "aligned"));
    ASSERT_EQ(4, net.error.value);
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_init(&net, &ncfg, NULL, n));
    ASSERT(strstr(net.error.what, "NULL"));
    ASSERT_EQ(n, net.error.limit);
    /* and a success clears the reason */
    ASSERT_EQ(ALKSIM_OK, alksim_net_init(&net, &ncfg, net_mem, n));
    ASSERT_EQ(ALKSIM_OK, net.error.code);
    ASSERT(net.error.what == NULL);
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_disk_init(&disk, &huge, disk_mem, sizeof disk_mem));
    ASSERT(strstr(disk.error.what, "overflows"));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_streams_init(&st, &many, stream_mem, sizeof stream_mem));
    ASSERT(strstr(st.error.what, "overflows"));
    ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
              alksim_net_init(NULL, &ncfg, net_mem, n));
    PASS();
}

/* mem_size is 0 exactly for the configurations init refuses, whatever the
 * fields (drawn small enough to allocate, or at the overflow edge). */
TEST mem_size_agrees_with_init(void)
{
    uint64_t st = test_seed;
    int i;
    for (i = 0; i < 300; i++) {
        alksim_net_config nc;
        alksim_disk_config dc;
        alksim_streams_config sc;
        alksim_net net;
        alksim_disk disk;
        alksim_streams streams;
        size_t n, d, s;
        void *m;
        int edge = i % 10 == 9;
        nc.hosts = (uint32_t)(alksim_splitmix64(&st) % 5);
        nc.max_in_flight = (uint32_t)(alksim_splitmix64(&st) % 5);
        nc.slot_size = (uint32_t)(alksim_splitmix64(&st) % 300);
        nc.nat_mappings = (uint32_t)(alksim_splitmix64(&st) % 5);
        dc.sector_size = (uint32_t)(alksim_splitmix64(&st) % 600);
        dc.sectors = alksim_splitmix64(&st) % 9;
        dc.max_pending = (uint32_t)(alksim_splitmix64(&st) % 5);
        sc.max_conns = (uint32_t)(alksim_splitmix64(&st) % 5);
        sc.buffer = (uint32_t)(alksim_splitmix64(&st) % 700);
        sc.hosts = (uint32_t)(alksim_splitmix64(&st) % 5);
        sc.net = NULL;
        if (edge) { /* sizes near SIZE_MAX: overflow, never an allocation */
            nc.hosts = UINT32_MAX;
            dc.sectors = UINT64_MAX / (dc.sector_size ? dc.sector_size : 512);
            sc.max_conns = UINT32_MAX;
            sc.buffer = UINT32_MAX;
        }
        n = alksim_net_mem_size(&nc);
        d = alksim_disk_mem_size(&dc);
        s = alksim_streams_mem_size(&sc);
        if (edge) {
            ASSERT_EQ(0, n);
            ASSERT_EQ(0, s);
            ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
                      alksim_net_init(&net, &nc, net_mem, sizeof net_mem));
            ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
                      alksim_streams_init(&streams, &sc, stream_mem,
                                          sizeof stream_mem));
            if (!d)
                ASSERT_EQ(ALKSIM_ERR_INVALID_ARGUMENT,
                          alksim_disk_init(&disk, &dc, disk_mem,
                                           sizeof disk_mem));
            continue;
        }
        ASSERT(n > 0 && d > 0 && s > 0);
        m = malloc(n > d ? (n > s ? n : s) : (d > s ? d : s));
        ASSERT(m);
        ASSERT_EQ(ALKSIM_OK, alksim_net_init(&net, &nc, m, n));
        ASSERT(net.cfg.hosts && net.cfg.max_in_flight && net.cfg.slot_size &&
               net.cfg.nat_mappings);
        ASSERT_EQ(ALKSIM_OK, alksim_net_check(&net));
        ASSERT_EQ(ALKSIM_OK, alksim_disk_init(&disk, &dc, m, d));
        ASSERT(disk.cfg.sector_size && disk.cfg.sectors &&
               disk.cfg.max_pending);
        ASSERT_EQ(ALKSIM_OK, alksim_streams_init(&streams, &sc, m, s));
        ASSERT(streams.max_conns && streams.buffer && streams.hosts);
        free(m);
    }
    PASS();
}

/* Seed mode: the same (seed, run) gives the same input; lengths cover
 * 0..max_len; alksim_run_seed runs exactly that input. */
TEST seed_inputs_are_reproducible_and_run(void)
{
    static uint8_t a[600], b[600];
    unsigned seen_len[11];
    size_t la, lb, i;
    uint64_t run;
    alksim_run_result r1, r2;
    int code;
    memset(seen_len, 0, sizeof seen_len);
    for (run = 0; run < 400; run++) {
        la = alksim_seed_input(test_seed, run, a, 10);
        lb = alksim_seed_input(test_seed, run, b, 10);
        ASSERT(la <= 10);
        ASSERT_EQ(la, lb);
        ASSERT_EQ(0, memcmp(a, b, la));
        seen_len[la]++;
    }
    for (i = 0; i <= 10; i++)
        ASSERT(seen_len[i] > 10); /* about 36 each */
    ASSERT_EQ(0, alksim_seed_input(test_seed, 5, a, 0));
    /* runs and seeds differ */
    la = alksim_seed_input(test_seed, 1, a, sizeof a);
    lb = alksim_seed_input(test_seed, 2, b, sizeof b);
    ASSERT(la != lb || memcmp(a, b, la) != 0);
    lb = alksim_seed_input(test_seed + 1, 1, b, sizeof b);
    ASSERT(la != lb || memcmp(a, b, la) != 0);
    /* the bytes are not all alike */
    for (i = 1; i < la && a[i] == a[0]; i++)
        ;
    ASSERT(la < 16 || i < la);
    code = alksim_run_seed(&counter_sc, test_seed, 1, b, sizeof b, &lb,
                           ALKSIM_RUN_HASH, NULL, &r1);
    ASSERT_EQ(la, lb);
    ASSERT_EQ(0, memcmp(a, b, la));
    ASSERT_EQ(code, alksim_run(&counter_sc, a, la, ALKSIM_RUN_HASH, NULL, &r2));
    ASSERT(r1.steps > 0);
    ASSERT_EQ_FMT((unsigned long long)r2.trace_hash,
                  (unsigned long long)r1.trace_hash, "%llx");
    /* a soak finds the counter's failure (three odd adds in a row) */
    for (run = 0; run < 1000; run++)
        if (alksim_run_seed(&counter_sc, test_seed, run, a, sizeof a, &la, 0,
                            NULL, &r1) != ALKSIM_OK)
            break;
    ASSERT(run < 1000);
    ASSERT_EQ(ALKSIM_ERR_FAILED, r1.code);
    ASSERT_EQ(ALKSIM_ERR_FAILED, alksim_run(&counter_sc, a, la, 0, NULL, &r2));
    PASS();
}

static const char *const many_kinds[32] = {
    "k0",  "k1",  "k2",  "k3",  "k4",  "k5",  "k6",  "k7",
    "k8",  "k9",  "k10", "k11", "k12", "k13", "k14", "k15",
    "k16", "k17", "k18", "k19", "k20", "k21", "k22", "k23",
    "k24", "k25", "k26", "k27", "k28", "k29", "k30", "k31"};

static int many_step(alksim_ctx *ctx, void *st, unsigned kind)
{
    (void)ctx;
    ((counter_state *)st)->kind_seen[kind]++;
    return ALKSIM_OK;
}

TEST thirty_two_kinds_swarm(void)
{
    alksim_scenario sc = counter_sc;
    uint8_t in[512];
    alksim_run_result r;
    size_t i, used = 0;
    sc.kinds = many_kinds;
    sc.kind_count = 32;
    sc.step = many_step;
    sc.check = NULL;
    sc.swarm = 1;
    sc.max_steps = 400;
    for (i = 0; i < sizeof in; i++)
        in[i] = (uint8_t)(i * 101 + 7);
    in[511] = in[510] = in[509] = in[508] = 0xff; /* every kind enabled */
    ASSERT_EQ(ALKSIM_OK, alksim_run(&sc, in, sizeof in, 0, NULL, &r));
    for (i = 0; i < 32; i++)
        used += the_counter.kind_seen[i] > 0;
    ASSERT(used > 16);
    ASSERT(the_counter.kind_seen[31] > 0);
    PASS();
}

TEST max_steps_and_trace_lines(void)
{
    alksim_scenario sc = counter_sc;
    uint8_t in[300];
    alksim_run_result quiet, hashed;
    size_t i;
    for (i = 0; i < sizeof in; i++)
        in[i] = 1; /* every step a tick */
    sc.max_steps = 5;
    ASSERT_EQ(ALKSIM_OK, alksim_run(&sc, in, sizeof in, 0, NULL, &quiet));
    ASSERT_EQ(5, quiet.steps);
    ASSERT_EQ(50, quiet.end_time); /* five ticks of 10 ns */
    ASSERT_EQ(ALKSIM_OK,
              alksim_run(&sc, in, sizeof in, ALKSIM_RUN_HASH, NULL, &hashed));
    ASSERT_EQ(quiet.trace_lines, hashed.trace_lines);
    ASSERT(quiet.trace_lines > 5);
    PASS();
}

TEST fail_records_the_first_reason(void)
{
    static alksim_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ASSERT_EQ(ALKSIM_ERR_FAILED, alksim_fail(&ctx, "first %d", 1));
    ASSERT_EQ(ALKSIM_ERR_FAILED, alksim_fail(&ctx, "second"));
    ASSERT_EQ(1, ctx.failed);
    ASSERT_STR_EQ("first 1", ctx.failure);
    PASS();
}

TEST passing_run_logs_no_failure(void)
{
    uint8_t in[60];
    alksim_run_result r;
    FILE *f = tmpfile();
    char line[256];
    int failed_lines = 0, done_lines = 0;
    size_t i;
    ASSERT(f != NULL);
    for (i = 0; i < sizeof in; i++)
        in[i] = 1; /* ticks only: passes */
    ASSERT_EQ(ALKSIM_OK, alksim_run(&counter_sc, in, sizeof in,
                                    ALKSIM_RUN_VERBOSE, f, &r));
    rewind(f);
    while (fgets(line, sizeof line, f)) {
        failed_lines += strstr(line, "FAILED") != NULL;
        done_lines += strstr(line, "done at") != NULL;
    }
    fclose(f);
    ASSERT_EQ(0, failed_lines);
    ASSERT_EQ(1, done_lines); /* the liveness phase ended by quiescence */
    PASS();
}

TEST fuzz_one_writes_the_reproducer_and_aborts(void)
{
    static uint8_t in[64], back[128];
    char dir[] = "/tmp/alksim-repro-XXXXXX", path[512];
    uint64_t st = test_seed;
    alksim_run_result r;
    pid_t pid;
    int status, found = 0;
    size_t i, n;
    FILE *f;
    /* a failing input */
    do {
        for (i = 0; i < sizeof in; i++)
            in[i] = (uint8_t)alksim_splitmix64(&st);
    } while (alksim_run(&counter_sc, in, sizeof in, ALKSIM_RUN_HASH, NULL,
                        &r) == ALKSIM_OK);
    ASSERT(mkdtemp(dir) != NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stderr))
            _exit(3);
        setenv("ALKSIM_REPRO_DIR", dir, 1);
        alksim_fuzz_one(&counter_sc, in, sizeof in);
        _exit(0); /* not reached */
    }
    waitpid(pid, &status, 0);
    ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    snprintf(path, sizeof path, "%s/counter-%016llx", dir,
             (unsigned long long)r.trace_hash);
    f = fopen(path, "rb");
    if (f) {
        n = fread(back, 1, sizeof back, f);
        fclose(f);
        found = n == sizeof in && memcmp(back, in, n) == 0;
        remove(path);
    }
    rmdir(dir);
    ASSERT(found);
    PASS();
}

TEST liveness_bound_is_enforced(void)
{
    alksim_scenario sc = counter_sc;
    alksim_run_result r;
    const uint8_t in[] = {1, 1};
    sc.quiesce = stuck_quiesce;
    sc.max_quiesce = 50;
    stuck_calls = 0;
    ASSERT_EQ(ALKSIM_ERR_LIVENESS, alksim_run(&sc, in, sizeof in, 0, NULL, &r));
    ASSERT_EQ(50, r.quiesce_steps);
    ASSERT_EQ(50, stuck_calls);
    PASS();
}

static uint32_t seen_weights[2];

static void *weights_setup(alksim_ctx *ctx)
{
    seen_weights[0] = ctx->weights[0];
    seen_weights[1] = ctx->weights[1];
    return counter_setup(ctx);
}

TEST swarm_draws_a_subset(void)
{
    alksim_scenario sc = counter_sc;
    uint8_t in[64];
    alksim_run_result r;
    size_t i;
    /* Read from the end: add (kind 0), value 2, tick (kind 1), ... */
    for (i = 0; i < sizeof in; i++)
        in[sizeof in - 1 - i] = (uint8_t)(i % 3 == 0 ? 0 : i % 3 == 1 ? 2 : 1);
    /* Without swarm both kinds run. */
    ASSERT_EQ(ALKSIM_OK, alksim_run(&sc, in, sizeof in, 0, NULL, &r));
    ASSERT(the_counter.kind_seen[0] > 0 && the_counter.kind_seen[1] > 0);
    /* With swarm the drawn mask (the last four bytes) rules. */
    sc.swarm = 1;
    in[63] = 0;
    in[62] = 0;
    in[61] = 0;
    in[60] = 2; /* mask: only "tick" */
    ASSERT_EQ(ALKSIM_OK, alksim_run(&sc, in, sizeof in, 0, NULL, &r));
    ASSERT(r.steps > 0);
    ASSERT_EQ(0, the_counter.kind_seen[0]);
    ASSERT_EQ(r.steps, the_counter.kind_seen[1]);
    /* Weights: 1 + (byte % 8), one byte per enabled kind after the mask. */
    in[60] = 3; /* both kinds */
    in[59] = 0;
    in[58] = 7;
    sc.setup = weights_setup;
    ASSERT_EQ(ALKSIM_OK, alksim_run(&sc, in, sizeof in, 0, NULL, &r));
    ASSERT_EQ(1, seen_weights[0]);
    ASSERT_EQ(8, seen_weights[1]);
    ASSERT_STR_EQ("unknown alksim result code", alksim_strerror(12345));
    ASSERT_STR_EQ("ok", alksim_strerror(ALKSIM_OK));
    PASS();
}

SUITE(source)
{
    RUN_TEST(control_from_the_end_payload_from_the_front);
    RUN_TEST(exhaustion_gives_safe_defaults);
    RUN_TEST(range_uses_the_fewest_bytes);
    RUN_TEST(weighted_never_picks_zero_weights);
    RUN_TEST(one_byte_flip_changes_at_most_one_decision);
    RUN_TEST(rng_is_seeded_and_deterministic);
    RUN_TEST(seeded_source_never_exhausts);
}

SUITE(time_and_nodes)
{
    RUN_TEST(queue_orders_by_time_then_insertion);
    RUN_TEST(node_queued_output_is_due_now);
    RUN_TEST(node_spinning_is_detected);
    RUN_TEST(node_default_spin_limit_is_64);
}

SUITE(network)
{
    RUN_TEST(net_perfect_link_delivers_each_once_after_latency);
    RUN_TEST(net_simultaneous_arrivals_keep_send_order);
    RUN_TEST(net_faults_are_counted_and_conserved);
    RUN_TEST(net_reorder_delay_is_exact);
    RUN_TEST(net_partition_one_way_and_heal);
    RUN_TEST(net_roaming_drops_in_flight_to_old_address);
    RUN_TEST(net_nat_mapping_filtering_and_expiry);
    RUN_TEST(net_nat_filters_at_arrival_not_at_delivery_call);
    RUN_TEST(net_nat_full_table_evicts_least_recently_used);
    RUN_TEST(net_nat_dependent_mapping_and_port_filtering);
    RUN_TEST(net_check_detects_corruption);
    RUN_TEST(net_misuse_is_an_error_not_a_drop);
}

SUITE(streams)
{
    RUN_TEST(stream_connect_refuse_and_accept);
    RUN_TEST(stream_bytes_arrive_in_order_exactly_once_any_segmentation);
    RUN_TEST(stream_half_close_each_direction_on_its_own);
    RUN_TEST(stream_partition_stalls_without_loss);
    RUN_TEST(stream_bandwidth_and_stall_delay_delivery);
    RUN_TEST(stream_reset_discards_and_tells_the_peer);
    RUN_TEST(stream_reset_leaves_other_connections_alone);
    RUN_TEST(stream_reset_before_connected_keeps_side_0_closed);
    RUN_TEST(stream_refusal_is_drawn_and_exhaustion_accepts);
    RUN_TEST(stream_slots_run_out);
}

SUITE(disk)
{
    RUN_TEST(disk_flushed_data_survives_any_crash);
    RUN_TEST(disk_unflushed_sectors_are_old_or_new_never_garbage);
    RUN_TEST(disk_crash_accounting_is_exact);
    RUN_TEST(disk_reads_see_writes_and_writeback_when_cache_full);
    RUN_TEST(disk_cache_ring_matches_a_plain_model);
    RUN_TEST(disk_injected_errors_have_no_effect);
}

SUITE(runner)
{
    RUN_TEST(run_is_deterministic_in_and_across_processes);
    RUN_TEST(shrinker_finds_a_small_failing_input);
    RUN_TEST(shrinker_keeps_the_failure_it_was_given);
    RUN_TEST(liveness_bound_is_enforced);
    RUN_TEST(quiesce_error_code_is_the_result);
    RUN_TEST(default_liveness_bound_is_100000);
    RUN_TEST(thirty_two_kinds_swarm);
    RUN_TEST(max_steps_and_trace_lines);
    RUN_TEST(passing_run_logs_no_failure);
    RUN_TEST(fail_records_the_first_reason);
    RUN_TEST(fuzz_one_writes_the_reproducer_and_aborts);
    RUN_TEST(exact_memory_sizes_are_enough_and_needed);
    RUN_TEST(zeroed_configs_mean_the_defaults);
    RUN_TEST(init_refusals_say_why);
    RUN_TEST(mem_size_agrees_with_init);
    RUN_TEST(seed_inputs_are_reproducible_and_run);
    RUN_TEST(swarm_draws_a_subset);
}

GREATEST_MAIN_DEFS();

int main(int argc, char **argv)
{
    ALK_TEST_MAIN_BEGIN();
    RUN_SUITE(source);
    RUN_SUITE(time_and_nodes);
    RUN_SUITE(network);
    RUN_SUITE(streams);
    RUN_SUITE(disk);
    RUN_SUITE(runner);
    GREATEST_MAIN_END();
}

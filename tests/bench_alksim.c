/* bench_alksim.c - simulation throughput, measured in one run.
 *
 *   network events/s  datagram sends and deliveries on a 3-host network
 *                     with latency, jitter, loss, duplication and reordering
 *                     drawn from a PRNG source (each send and each delivery
 *                     is one event); target >= 5 million/s
 *   queue events/s    alksim_queue push + pop pairs
 *   stream bytes/s    bytes through one simulated stream connection
 *   sim_arq runs/s    whole ARQ scenarios (examples/arq_scenario.h) in seed
 *                     mode on one core, inputs of up to 600 bytes
 * Medians of REPS repetitions. Exit 1 if the network target is missed. */
#define _POSIX_C_SOURCE 200809L
#define ALKSIM_IMPLEMENTATION
#include "../examples/arq_scenario.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_common.h"

#define REPS 5

static uint8_t net_mem[1 << 20];
static volatile uint64_t sink;

static double bench_network(void)
{
    double rate[REPS];
    int r;
    for (r = 0; r < REPS; r++) {
        alksim_net net;
        alksim_net_config cfg = {3, 1024, 256, 0};
        alksim_link l = {20000, 10000, 2000, 1000, 2000, 0};
        alksim_source f;
        alksim_datagram dg;
        uint8_t payload[200] = {0};
        uint64_t now = 0, events = 0, i;
        uint32_t a, b;
        double t0;
        if (alksim_net_init(&net, &cfg, net_mem, sizeof net_mem) != ALKSIM_OK)
            exit(1);
        for (a = 0; a < 3; a++)
            for (b = 0; b < 3; b++)
                alksim_net_set_link(&net, a, b, &l);
        alksim_source_init_rng(&f, 1);
        t0 = bench_now();
        for (i = 0; i < 2000000; i++) {
            alksim_addr dst;
            dst.ip = alksim_net_ip(&net, (uint32_t)((i + 1) % 3));
            dst.port = 1;
            alksim_net_send(&net, &f, now, (uint32_t)(i % 3), 1, dst, payload,
                            64 + (i & 127));
            events++;
            now += 50;
            while (alksim_net_deliver(&net, now, &dg) == ALKSIM_OK) {
                sink += dg.len;
                events++;
            }
        }
        rate[r] = (double)events / (bench_now() - t0);
    }
    return bench_median(rate, REPS);
}

static double bench_queue(void)
{
    static alksim_event mem[4096];
    double rate[REPS];
    int r;
    for (r = 0; r < REPS; r++) {
        alksim_queue q;
        alksim_event ev;
        alksim_rng rng;
        uint64_t i;
        double t0;
        alksim_queue_init(&q, mem, 4096);
        alksim_rng_seed(&rng, 2);
        for (i = 0; i < 1024; i++)
            alksim_queue_push(&q, alksim_rng_below(&rng, 1000000), 0, 0, i);
        t0 = bench_now();
        for (i = 0; i < 4000000; i++) {
            alksim_queue_pop(&q, &ev);
            alksim_queue_push(&q, ev.time + alksim_rng_below(&rng, 1000), 0,
                              0, i);
        }
        sink += q.len;
        rate[r] = 4000000.0 / (bench_now() - t0);
    }
    return bench_median(rate, REPS);
}

static uint8_t stream_mem[1 << 19];

static double bench_stream(void)
{
    double rate[REPS];
    int r;
    for (r = 0; r < REPS; r++) {
        alksim_streams st;
        alksim_source f;
        alksim_stream_params p = {10000, 0, 1460, 0};
        alksim_stream_event ev;
        static uint8_t chunk[8192];
        uint64_t now = 0, bytes = 0;
        uint32_t c;
        double t0;
        alksim_streams_config scfg = {2, 65536, 2, NULL};
        if (alksim_streams_init(&st, &scfg, stream_mem, sizeof stream_mem) !=
            ALKSIM_OK)
            exit(1);
        alksim_stream_listen(&st, 1, 1);
        alksim_source_init_rng(&f, 3);
        alksim_stream_connect(&st, &f, 0, 0, 1, &p, &c);
        while (alksim_stream_poll(&st, &f, 100000, &ev) == ALKSIM_OK)
            ;
        now = 100000;
        t0 = bench_now();
        while (bytes < (uint64_t)256 << 20) {
            alksim_stream_write(&st, &f, now, c, 0, chunk, sizeof chunk);
            now += 20000;
            while (alksim_stream_poll(&st, &f, now, &ev) == ALKSIM_OK)
                bytes += ev.len;
        }
        rate[r] = (double)bytes / (bench_now() - t0);
    }
    return bench_median(rate, REPS);
}

static double bench_arq(unsigned long long *datagrams)
{
    static uint8_t input[600];
    double rate[REPS];
    int r;
    for (r = 0; r < REPS; r++) {
        unsigned i, runs = 300;
        double t0 = bench_now();
        *datagrams = 0;
        for (i = 0; i < runs; i++) {
            alksim_rng rng;
            alksim_run_result res;
            size_t len, k;
            alksim_rng_seed(&rng, 1000 + i);
            len = (size_t)alksim_rng_below(&rng, sizeof input + 1);
            for (k = 0; k < len; k++)
                input[k] = (uint8_t)alksim_rng_next(&rng);
            if (alksim_run(&arq_scenario, input, len, 0, NULL, &res) !=
                ALKSIM_OK) {
                printf("sim_arq run %u failed\n", i);
                exit(1);
            }
            *datagrams += arq_the_world.datagrams;
        }
        rate[r] = runs / (bench_now() - t0);
    }
    return bench_median(rate, REPS);
}

int main(void)
{
    unsigned long long datagrams = 0;
    double net = bench_network(), q = bench_queue(), s = bench_stream();
    double arq = bench_arq(&datagrams);
    printf("alksim (median of %d runs, one core)\n", REPS);
    printf("  network events/s        %12.3g  (sends + deliveries, faults on)\n",
           net);
    printf("  queue push+pop/s        %12.3g\n", q);
    printf("  stream bytes/s          %12.3g\n", s);
    printf("  sim_arq scenarios/s     %12.3g  (%llu datagrams per 300 runs)\n",
           arq, datagrams);
    printf("target: network events >= 5 million/s: %.1f million/s %s\n",
           net / 1e6, net >= 5e6 ? "met" : "MISSED");
    return net < 5e6;
}

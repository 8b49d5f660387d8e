/* arq_demo.c - seed mode and shrinking for the ARQ worked example.
 *
 *   arq_demo [--seed N] [--runs M] [--max-len L] [--trace] [--save FILE]
 *
 * Runs M scenarios of examples/arq_scenario.h, each on seed mode's input
 * (alksim_run_seed: seed N, run i - the input replay_sim_arq --seed N --run
 * i replays). Without a failure it prints a summary (and with
 * --trace the full trace of the first run). On the first failure it shrinks
 * the input by delta debugging (alksim_shrink), prints the minimal input in
 * hex and its whole trace, writes it to FILE with --save (ready to commit
 * under corpus/sim_arq/), and exits 1.
 *
 * Built twice by `make demo`: as is, and with -DARQ_PLANTED_BUG
 * (build/arq_demo_bug), to show the planted bug being found and shrunk. */
#define ALKSIM_IMPLEMENTATION
#include "arq_scenario.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t input[4096], shrunk[4096], work[4096];

int main(int argc, char **argv)
{
    uint64_t seed = 1, runs = 200, i;
    size_t max_len = 600;
    int trace = 0, a;
    const char *save = NULL;
    unsigned long long datagrams = 0, retrans = 0;

    for (a = 1; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (!strcmp(argv[a], "--seed") && v)
            seed = strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--runs") && v)
            runs = strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--max-len") && v)
            max_len = (size_t)strtoull(argv[++a], NULL, 0);
        else if (!strcmp(argv[a], "--save") && v)
            save = argv[++a];
        else if (!strcmp(argv[a], "--trace"))
            trace = 1;
        else {
            fprintf(stderr, "usage: arq_demo [--seed N] [--runs M] "
                            "[--max-len L] [--trace] [--save FILE]\n");
            return 2;
        }
    }
    if (max_len > sizeof input)
        max_len = sizeof input;
#ifdef ARQ_PLANTED_BUG
    printf("arq_demo: built with ARQ_PLANTED_BUG (receive window edge off "
           "by one)\n");
#endif
    for (i = 0; i < runs; i++) {
        alksim_run_result r;
        size_t len, k;
        if (alksim_run_seed(&arq_scenario, seed, i, input, max_len, &len,
                            trace && i == 0 ? ALKSIM_RUN_VERBOSE : 0u, stdout,
                            &r) == ALKSIM_OK) {
            datagrams += arq_the_world.datagrams;
            retrans += arq_the_world.snd.retransmissions;
            continue;
        }
        printf("run %llu (seed %llu, %zu input bytes) failed: %s\n",
               (unsigned long long)i, (unsigned long long)seed, len,
               alksim_strerror(r.code));
        k = alksim_shrink(&arq_scenario, input, len, shrunk, work, 20000);
        printf("shrunk %zu -> %zu bytes:", len, k);
        for (len = 0; len < k; len++)
            printf(" %02x", shrunk[len]);
        printf("\nminimal trace:\n");
        alksim_run(&arq_scenario, shrunk, k, ALKSIM_RUN_VERBOSE, stdout, &r);
        if (save) {
            FILE *f = fopen(save, "wb");
            if (!f || fwrite(shrunk, 1, k, f) != k || fclose(f) != 0) {
                perror(save);
                return 2;
            }
            printf("saved to %s\n", save);
        }
        return 1;
    }
    printf("arq_demo: %llu scenarios passed (seed %llu): %llu datagrams, "
           "%llu retransmissions, every byte delivered once and in order\n",
           (unsigned long long)runs, (unsigned long long)seed, datagrams,
           retrans);
    return 0;
}

/* bench_alktunnel.c - parse throughput of alktunnel.h's params, measured
 * against a reference in the same run (make bench).
 *
 *   1. A ~1 MiB control-plane message (thousands of resources with port
 *      ranges and protocols, authorizations, revocations, relays) decoded
 *      fully into typed structs, vs a memchr scan of the same bytes for '"'
 *      (every quote found, one memchr call per quote). Target >= 0.6x.
 *   2. The same message scaled 10x: decode time must grow <= 11x (linear).
 *   3. ~200-byte open params decoded into alkt_open_params: messages/s,
 *      target >= 4 million/s (the memchr scan of those bytes beside it).
 * Every figure is the median of RUNS timed repetitions. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"
#include "bench_common.h"

#define RUNS 9

static size_t build_control(char *buf, size_t cap, size_t resources)
{
    size_t o = 0, i;
#define PUT(...) (o += (size_t)snprintf(buf + o, cap - o, __VA_ARGS__))
    PUT("{\"resources\":[");
    for (i = 0; i < resources; i++) {
        PUT("%s{\"id\":\"res-%zu\",\"cidr\":\"10.%zu.%zu.0/24\","
            "\"ports\":[{\"from\":%zu,\"to\":%zu},{\"from\":8443,\"to\":8443}],"
            "\"protocols\":[\"tcp\",\"udp\"],\"gateway\":\"gw-%zu\"}",
            i ? "," : "", i, (i >> 8) & 255, i & 255, 1 + i % 1000,
            1024 + i % 1000, i % 16);
    }
    PUT("],\"authorizations\":[");
    for (i = 0; i < resources / 4; i++)
        PUT("%s{\"client\":\"client-%zu\",\"resource\":\"res-%zu\","
            "\"secret\":\"00112233445566778899aabbccddeeff0123456789abcdef\","
            "\"expires\":%zu}",
            i ? "," : "", i, i, 1893456000 + i);
    PUT("],\"revocations\":[");
    for (i = 0; i < resources / 16; i++)
        PUT("%s{\"client\":\"client-%zu\",\"resource\":\"res-%zu\"}",
            i ? "," : "", i + 7, i);
    PUT("],\"relays\":[");
    for (i = 0; i < 64; i++)
        PUT("%s{\"id\":\"relay-%zu\",\"address\":\"relay%zu.example.net\","
            "\"port\":3478,\"token\":\"tok-%zu-abcdef\"}",
            i ? "," : "", i, i, i);
    PUT("]}");
#undef PUT
    if (o >= cap) {
        fprintf(stderr, "bench: control message does not fit\n");
        exit(1);
    }
    return o;
}

static size_t quote_scan(const char *buf, size_t len)
{
    size_t count = 0;
    const char *p = buf, *end = buf + len;
    while ((p = (const char *)memchr(p, '"', (size_t)(end - p))) != NULL) {
        count++;
        p++;
    }
    return count;
}

typedef struct control_arrays {
    alkt_resource *resources;
    alkt_authorization *authorizations;
    alkt_revocation *revocations;
    alkt_relay *relays;
    size_t cap;
} control_arrays;

static void control_arrays_init(control_arrays *a, size_t cap)
{
    a->cap = cap;
    a->resources = (alkt_resource *)calloc(cap, sizeof *a->resources);
    a->authorizations =
        (alkt_authorization *)calloc(cap, sizeof *a->authorizations);
    a->revocations = (alkt_revocation *)calloc(cap, sizeof *a->revocations);
    a->relays = (alkt_relay *)calloc(cap, sizeof *a->relays);
    if (!a->resources || !a->authorizations || !a->revocations ||
        !a->relays) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
}

static double time_control(const char *doc, size_t len, control_arrays *a,
                           size_t reps)
{
    double t[RUNS];
    alkt_json_limits lim = {0, (size_t)1 << 30};
    int r;
    size_t k;
    for (r = 0; r < RUNS; r++) {
        double t0 = bench_now();
        for (k = 0; k < reps; k++) {
            alkt_control c;
            alkt_error err;
            memset(&c, 0, sizeof c);
            c.resources = a->resources;
            c.authorizations = a->authorizations;
            c.revocations = a->revocations;
            c.relays = a->relays;
            c.resource_cap = c.authorization_cap = a->cap;
            c.revocation_cap = c.relay_cap = a->cap;
            if (alkt_control_decode(doc, len, &lim, &c, &err) != ALKT_OK) {
                fprintf(stderr, "bench: decode failed: %s at %zu '%s'\n",
                        alkt_strerror(err.code), err.offset, err.path);
                exit(1);
            }
        }
        t[r] = (bench_now() - t0) / (double)reps;
    }
    return bench_median(t, RUNS);
}

static volatile size_t sink;

static double time_scan(const char *doc, size_t len, size_t reps)
{
    double t[RUNS];
    int r;
    size_t k;
    for (r = 0; r < RUNS; r++) {
        double t0 = bench_now();
        for (k = 0; k < reps; k++)
            sink += quote_scan(doc, len);
        t[r] = (bench_now() - t0) / (double)reps;
    }
    return bench_median(t, RUNS);
}

int main(void)
{
    /* ~200 bytes each, as a control plane would send them */
    static const char small[] =
        "{\n    \"substrate\": \"tcp\",\n    \"host\": \"postgres-primary-"
        "replica-03.analytics-cluster-blue.eu-west-1.db.internal.corp."
        "example.com\",\n    \"port\": 5432\n}\n";
    static const char small_fwd[] =
        "{\n    \"substrate\": \"unix\",\n    \"path\": \"/var/run/"
        "analytics/pgbouncer/transaction-pool-03/.s.PGSQL.6432\"\n}\n"
        "                                                            ";
    size_t cap = (size_t)12 << 20, len1, len10, n_res1 = 0;
    char *doc1 = (char *)malloc(cap), *doc10 = (char *)malloc(cap);
    control_arrays arrays;
    double t_dec1, t_scan1, t_dec10, t_small, t_small_scan;
    double ratio, growth, small_rate;
    int ok = 1, r;
    size_t k, reps_small = 200000;
    if (!doc1 || !doc10)
        return 1;
    /* about 1 MiB: find the resource count that gets there */
    for (n_res1 = 3000;; n_res1 += 100) {
        len1 = build_control(doc1, cap, n_res1);
        if (len1 >= ((size_t)1 << 20))
            break;
    }
    len10 = build_control(doc10, cap, n_res1 * 10);
    control_arrays_init(&arrays, n_res1 * 10);

    printf("alktunnel params (median of %d runs, same process)\n", RUNS);
    t_scan1 = time_scan(doc1, len1, 20);
    t_dec1 = time_control(doc1, len1, &arrays, 5);
    ratio = t_scan1 / t_dec1;
    printf("control message %zu B (%zu resources): typed decode %.1f MB/s, "
           "memchr '\"' scan %.1f MB/s\n",
           len1, n_res1, (double)len1 / t_dec1 / 1e6,
           (double)len1 / t_scan1 / 1e6);
    printf("target: 1 MiB document >= 0.60x the memchr scan: %.2fx %s\n", ratio,
           ratio >= 0.6 ? "met" : "MISSED");
    ok &= ratio >= 0.6;

    t_dec10 = time_control(doc10, len10, &arrays, 1);
    growth = t_dec10 / t_dec1;
    printf("control message %zu B (%zu resources): typed decode %.1f MB/s\n",
           len10, n_res1 * 10, (double)len10 / t_dec10 / 1e6);
    printf("target: %.1fx the bytes in <= %.1fx the time: %.2fx %s\n",
           (double)len10 / (double)len1, 1.1 * (double)len10 / (double)len1,
           growth,
           growth <= 1.1 * (double)len10 / (double)len1 ? "met" : "MISSED");
    ok &= growth <= 1.1 * (double)len10 / (double)len1;

    {
        double t[RUNS], ts[RUNS];
        const char *msgs[2];
        size_t lens[2];
        msgs[0] = small;
        msgs[1] = small_fwd;
        lens[0] = sizeof small - 1;
        lens[1] = sizeof small_fwd - 1;
        for (r = 0; r < RUNS; r++) {
            double t0 = bench_now();
            for (k = 0; k < reps_small; k++) {
                alkt_open_params p;
                alkt_error err;
                if (alkt_open_params_decode(msgs[k & 1], lens[k & 1], NULL, &p,
                                            &err) != ALKT_OK) {
                    fprintf(stderr, "bench: small decode failed\n");
                    return 1;
                }
                sink += p.port;
            }
            t[r] = (bench_now() - t0) / (double)reps_small;
            t0 = bench_now();
            for (k = 0; k < reps_small; k++)
                sink += quote_scan(msgs[k & 1], lens[k & 1]);
            ts[r] = (bench_now() - t0) / (double)reps_small;
        }
        t_small = bench_median(t, RUNS);
        t_small_scan = bench_median(ts, RUNS);
    }
    small_rate = 1.0 / t_small / 1e6;
    printf("open params (%zu/%zu B): %.2f million/s typed (memchr scan of "
           "the same bytes: %.1f million/s)\n",
           sizeof small - 1, sizeof small_fwd - 1, small_rate,
           1.0 / t_small_scan / 1e6);
    printf("target: small open params >= 4 million/s: %.2f million/s %s\n",
           small_rate, small_rate >= 4.0 ? "met" : "MISSED");
    ok &= small_rate >= 4.0;
    free(doc1);
    free(doc10);
    free(arrays.resources);
    free(arrays.authorizations);
    free(arrays.revocations);
    free(arrays.relays);
    return ok ? 0 : 1; /* like every bench: exit 1 when a target is missed */
}

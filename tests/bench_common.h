/* bench_common.h - the clock and the median every benchmark reports. */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdlib.h>
#include <time.h>

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int bench__cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place and returns its median. */
static double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench__cmp);
    return v[n / 2];
}

#endif /* BENCH_COMMON_H */

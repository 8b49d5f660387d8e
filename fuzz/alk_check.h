/* alk_check.h - the assertion and trace machinery every harness shares.
 *
 * ALK_CHECK(cond, fmt, ...) is the harness-level invariant: it cannot be
 * compiled out (no NDEBUG), and on failure it prints the condition, the
 * message and the scenario trace (the parameters derived from the input and
 * the last ALK_TRACE_LINES steps), then abort()s so that every driver - the
 * replay gate, seed mode, honggfuzz, libFuzzer - records a crash.
 *
 * Harnesses call alk_trace_reset() at the start of each input and
 * alk_trace(fmt, ...) for each step worth seeing. Lines are formatted into a
 * fixed ring, so tracing costs no allocation. */
#ifndef ALK_CHECK_H
#define ALK_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__GNUC__) || defined(__clang__)
#define ALK_UNUSED __attribute__((unused))
#else
#define ALK_UNUSED
#endif

#define ALK_TRACE_LINES 64
#define ALK_TRACE_WIDTH 160

static char alk__trace_ring[ALK_TRACE_LINES][ALK_TRACE_WIDTH];
static unsigned long alk__trace_count;

static ALK_UNUSED void alk_trace_reset(void)
{
    alk__trace_count = 0;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static ALK_UNUSED void alk_trace(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(alk__trace_ring[alk__trace_count % ALK_TRACE_LINES],
              ALK_TRACE_WIDTH, fmt, ap);
    va_end(ap);
    alk__trace_count++;
}

static ALK_UNUSED void alk_trace_dump(FILE *f)
{
    unsigned long first = alk__trace_count > ALK_TRACE_LINES
                              ? alk__trace_count - ALK_TRACE_LINES
                              : 0;
    unsigned long i;
    fprintf(f, "--- trace (%lu lines, last %lu shown) ---\n", alk__trace_count,
            alk__trace_count - first);
    for (i = first; i < alk__trace_count; i++)
        fprintf(f, "%6lu  %s\n", i, alk__trace_ring[i % ALK_TRACE_LINES]);
    fprintf(f, "--- end of trace ---\n");
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn, format(printf, 4, 5)))
#endif
static ALK_UNUSED void alk_check_fail(const char *file, int line,
                                      const char *cond, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "\nALK_CHECK failed at %s:%d: %s\n  ", file, line, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    alk_trace_dump(stderr);
    fflush(stderr);
    abort();
}

#define ALK_CHECK(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond))                                                           \
            alk_check_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);           \
    } while (0)

#endif /* ALK_CHECK_H */

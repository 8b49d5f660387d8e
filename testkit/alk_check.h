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

/* ALK_FIXTURES_ONLY set (tests/soak.sh's fixture lanes): a harness whose
 * fixtures are costly to run operations on builds each input's fixture,
 * checks it as it always does, and stops there - thousands of drawn
 * geometries a second instead of tens, so a fixture that cannot take one
 * is seen by a short soak. */
static ALK_UNUSED int alk_fixtures_only(void)
{
    static int on = -1;
    if (on < 0) {
        const char *v = getenv("ALK_FIXTURES_ONLY");
        on = v != NULL && *v != '\0' && *v != '0';
    }
    return on;
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


/* ---- large buffers kept across inputs ------------------------------------
 * The replay gate and the engines run many inputs in one process. A harness
 * that mallocs and frees buffers of megabytes per input pays a page fault
 * per 4 KiB every time (the sanitizer's allocator maps and unmaps them), and
 * that, not the checking, was most of the qcow2 harnesses' time. alk_malloc
 * / alk_calloc / alk_realloc / alk_free keep blocks of ALK_POOL_MIN bytes
 * or more in a small table instead of unmapping them. Under AddressSanitizer
 * the bytes past the requested size, and a whole block while it is free, are
 * poisoned, so an overflow or a use after free is still reported as with
 * malloc. Smaller requests are plain malloc. */
#if defined(__SANITIZE_ADDRESS__)
#define ALK__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALK__ASAN 1
#endif
#endif
#ifdef ALK__ASAN
#include <sanitizer/asan_interface.h>
#define ALK__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define ALK__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define ALK__POISON(p, n) ((void)(p), (void)(n))
#define ALK__UNPOISON(p, n) ((void)(p), (void)(n))
#endif
#include <string.h>

#define ALK_POOL_MIN ((size_t)256 << 10)
#define ALK_POOL_SLOTS 24
/* Free blocks are given back once the pool would hold more than this. */
#define ALK_POOL_KEEP ((size_t)256 << 20)

typedef struct alk__block {
    unsigned char *p;
    size_t cap, len;
    int live;
} alk__block;
static alk__block alk__pool[ALK_POOL_SLOTS];

static ALK_UNUSED alk__block *alk__pool_find(const void *p)
{
    int i;
    for (i = 0; p && i < ALK_POOL_SLOTS; i++)
        if (alk__pool[i].p == p && alk__pool[i].live)
            return &alk__pool[i];
    return NULL;
}

static ALK_UNUSED void alk__pool_hand_out(alk__block *b, size_t n)
{
    b->live = 1;
    b->len = n;
    ALK__UNPOISON(b->p, n);
    ALK__POISON(b->p + n, b->cap - n);
}

static ALK_UNUSED void *alk_malloc(size_t n)
{
    alk__block *fit = NULL, *empty = NULL, *small = NULL;
    int i;
    if (n < ALK_POOL_MIN)
        return malloc(n ? n : 1);
    for (i = 0; i < ALK_POOL_SLOTS; i++) {
        alk__block *b = &alk__pool[i];
        if (!b->p) {
            if (!empty) empty = b;
        } else if (!b->live) {
            if (b->cap >= n && (!fit || b->cap < fit->cap)) fit = b;
            else if (b->cap < n && !small) small = b;
        }
    }
    if (!fit) {
        size_t held = n;
        for (i = 0; i < ALK_POOL_SLOTS; i++)
            held += alk__pool[i].cap;
        for (i = 0; i < ALK_POOL_SLOTS && held > ALK_POOL_KEEP; i++) {
            alk__block *b = &alk__pool[i];
            if (b->p && !b->live && b != empty && b != small) {
                held -= b->cap;
                ALK__UNPOISON(b->p, b->cap);
                free(b->p);
                b->p = NULL;
                b->cap = 0;
            }
        }
    }
    if (!fit && (empty || small)) {
        fit = empty ? empty : small;
        if (fit->p) {
            ALK__UNPOISON(fit->p, fit->cap);
            free(fit->p);
        }
        fit->p = (unsigned char *)malloc(n);
        fit->cap = n;
        if (!fit->p) {
            fit->cap = 0;
            return NULL;
        }
    }
    if (!fit)
        return malloc(n); /* every slot holds a live block */
    alk__pool_hand_out(fit, n);
    return fit->p;
}

static ALK_UNUSED void *alk_calloc(size_t count, size_t size)
{
    size_t n = count * size;
    void *p;
    if (size && n / size != count)
        return NULL;
    p = alk_malloc(n);
    if (p)
        memset(p, 0, n);
    return p;
}

static ALK_UNUSED void alk_free(void *p)
{
    alk__block *b = alk__pool_find(p);
    int i;
    if (!b) {
        for (i = 0; p && i < ALK_POOL_SLOTS; i++)
            if (alk__pool[i].p == p)
                alk_check_fail(__FILE__, __LINE__, "alk_free",
                               "double free of a pooled %zu-byte block",
                               alk__pool[i].cap);
        free(p);
        return;
    }
    b->live = 0;
    ALK__POISON(b->p, b->cap);
}

static ALK_UNUSED void *alk_realloc(void *p, size_t n)
{
    alk__block *b = alk__pool_find(p);
    void *q;
    size_t keep;
    if (!p)
        return alk_malloc(n);
    if (b && n <= b->cap && n >= ALK_POOL_MIN) {
        alk__pool_hand_out(b, n);
        return p;
    }
    if (!b && n < ALK_POOL_MIN)
        return realloc(p, n ? n : 1);
    q = alk_malloc(n);
    if (!q)
        return NULL;
    /* an unpooled block's old size is unknown here: its owner asked for
     * growth, and plain realloc keeps min(old, n) bytes - do the same for
     * the pooled ones and copy the old block's length otherwise */
    keep = b ? (b->len < n ? b->len : n) : n;
    if (!b) {
        void *grown = realloc(p, n);
        if (!grown) {
            alk_free(q);
            return NULL;
        }
        memcpy(q, grown, n);
        free(grown);
        return q;
    }
    memcpy(q, p, keep);
    alk_free(p);
    return q;
}

#endif /* ALK_CHECK_H */

/*
 * tests/greatest.h -- the alk project's OWN minimal test runner.
 *
 * THIS IS NOT greatest. It is a small, independently written
 * implementation of a SUBSET of the public API of the "greatest" C unit
 * testing library (https://github.com/silentbicycle/greatest, by Scott
 * Vokes), written from that library's documented behaviour so that alk's
 * unit tests can be built and run where the real greatest.h is not
 * available.  No code from greatest is included here.
 *
 * To build the very same tests against the real greatest instead, run:
 *
 *     make test GREATEST_DIR=/path/to/greatest
 *
 * (GREATEST_DIR is the directory that contains the real greatest.h.)
 * The closing "Pass: P, fail: F, skip: S." line has the same form in
 * both, and the exit status is the same (0 = no failures, 1 = failures).
 *
 * Supported (everything else from greatest is intentionally absent):
 *
 *   Definitions:  TEST name(...)              (static enum greatest_test_res)
 *                 SUITE(name)                 (void name(void), external)
 *                 SUITE_EXTERN(name)
 *                 GREATEST_MAIN_DEFS()
 *                 GREATEST_MAIN_BEGIN()       (parses argc/argv)
 *                 GREATEST_MAIN_END()         (prints report, returns 0/1)
 *   Running:      RUN_SUITE(s)  RUN_TEST(t)  RUN_TEST1(t, arg)
 *                 RUN_TESTp(t, ...)           (C99 / C++11 only)
 *                 IGNORE_TEST(t)
 *   Results:      PASS() PASSm(msg) FAIL() FAILm(msg) SKIP() SKIPm(msg)
 *                 CHECK_CALL(call)
 *   Assertions (each also has an "m" form taking a message first):
 *                 ASSERT(c)  ASSERT_FALSE(c)
 *                 ASSERT_EQ(e,g)  ASSERT_NEQ  ASSERT_GT  ASSERT_GTE
 *                 ASSERT_LT  ASSERT_LTE
 *                 ASSERT_EQ_FMT(e,g,fmt)
 *                 ASSERT_IN_RANGE(e,g,tol)
 *                 ASSERT_STR_EQ(e,g)  ASSERT_STRN_EQ(e,g,n)
 *                 ASSERT_MEM_EQ(e,g,size)
 *   Hooks:        GREATEST_SET_SETUP_CB(cb, udata)    (alias SET_SETUP)
 *                 GREATEST_SET_TEARDOWN_CB(cb, udata) (alias SET_TEARDOWN)
 *                 GREATEST_IS_VERBOSE()
 *   Options:      GREATEST_DEFAULT_WIDTH, GREATEST_STDOUT,
 *                 GREATEST_FLOAT / GREATEST_FLOAT_FMT (may be #defined
 *                 before inclusion, as in greatest)
 *
 * Command-line flags (handled by GREATEST_MAIN_BEGIN, as in greatest):
 *   -h, --help    usage, exit 0
 *   -l            list suites and tests that would run, run nothing
 *   -v            verbose: one "PASS/FAIL/SKIP name: msg (ticks)" line
 *   -f            stop after the first failing test
 *   -a            abort() on the first failure
 *   -s SUITE      only suites whose name contains SUITE
 *   -t TEST       only tests whose name contains TEST
 *   -x EXCLUDE    skip tests whose name contains EXCLUDE (tests only)
 *   -e            -s / -t must match the whole name exactly
 *   --            ignore all remaining arguments
 *   Any other argument starting with '-' is an error (usage, exit 1);
 *   arguments not starting with '-' are ignored.
 *
 * Not supported: ASSERT_ENUM_EQ, ASSERT_EQUAL_T, ASSERT_OR_LONGJMP,
 * SHUFFLE_SUITES / SHUFFLE_TESTS, greatest_set_test_suffix,
 * GREATEST_INIT / GREATEST_PRINT_REPORT, the GREATEST_-prefixed long
 * forms of the abbreviated macros, GREATEST_USE_ABBREVS=0.
 *
 * Requires C99 (or C++11); uses only the C library, no dynamic memory.
 */
#ifndef GREATEST_H
#define GREATEST_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Lets code tell this runner apart from the real greatest.h. */
#define GREATEST_ALK_MINIMAL 1

#ifndef GREATEST_DEFAULT_WIDTH
#define GREATEST_DEFAULT_WIDTH 72
#endif

#ifndef GREATEST_STDOUT
#define GREATEST_STDOUT stdout
#endif

#ifndef GREATEST_FLOAT
#define GREATEST_FLOAT double
#define GREATEST_FLOAT_FMT "%g"
#endif

#if defined(__cplusplus) || \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define ALKGT_INLINE inline
#elif defined(__GNUC__)
#define ALKGT_INLINE __inline__
#else
#define ALKGT_INLINE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Result of one test function (values as in greatest). */
typedef enum greatest_test_res {
    GREATEST_TEST_RES_PASS = 0,
    GREATEST_TEST_RES_FAIL = -1,
    GREATEST_TEST_RES_SKIP = 1
} greatest_test_res;

typedef void greatest_setup_cb(void *udata);
typedef void greatest_teardown_cb(void *udata);

/* Tally of test outcomes: one for the suite in progress, one overall. */
struct alkgt_tally {
    unsigned int run, passed, failed, skipped;
};

/* All runner state lives in this one object, defined by
 * GREATEST_MAIN_DEFS() in the test program's main file. */
struct alkgt_state {
    struct alkgt_tally cur;     /* current suite / loose tests */
    struct alkgt_tally all;     /* folded in when a suite starts, at end */
    unsigned int assertions;
    unsigned int verbosity;
    unsigned int column;        /* result characters on this line */
    unsigned int width;

    int list_only, stop_first_fail, abort_on_fail, exact_match;
    int in_test;                /* guards against RUN_TEST inside a test */
    const char *want_suite, *want_test, *skip_test;

    const char *test_name;      /* test currently running */
    const char *msg;            /* message of the latest PASS/FAIL/SKIP */
    const char *fail_file;
    unsigned int fail_line;

    greatest_setup_cb *setup;
    void *setup_udata;
    greatest_teardown_cb *teardown;
    void *teardown_udata;

    clock_t run_start, suite_start, suite_stop, test_start, test_stop;
};

extern struct alkgt_state alkgt_st;

/*********************************************************************
 * Runner internals (static inline, so any number of translation
 * units may include this header; they share alkgt_st).
 *********************************************************************/

static ALKGT_INLINE clock_t alkgt_now(void) {
    clock_t c = clock();
    return c == (clock_t)-1 ? (clock_t)0 : c;
}

static ALKGT_INLINE void alkgt_print_elapsed(clock_t from, clock_t to) {
    fprintf(GREATEST_STDOUT, " (%lu ticks, %.3f sec)",
        (unsigned long)to - (unsigned long)from,
        (double)(to - from) / (double)CLOCKS_PER_SEC);
}

/* Does FILTER select NAME?  An absent or empty filter answers
 * IF_NO_FILTER; otherwise substring match, or whole-name match
 * under -e. */
static ALKGT_INLINE int alkgt_selects(const char *filter, const char *name,
        int if_no_filter) {
    if (filter == NULL || filter[0] == '\0') { return if_no_filter; }
    if (alkgt_st.exact_match) { return strcmp(filter, name) == 0; }
    return strstr(name, filter) != NULL;
}

/* Move the current suite's tally into the overall one and forget the
 * setup/teardown hooks (greatest does this when a suite starts and
 * before the final report). */
static ALKGT_INLINE void alkgt_fold_suite(void) {
    struct alkgt_state *s = &alkgt_st;
    s->all.run += s->cur.run;
    s->all.passed += s->cur.passed;
    s->all.failed += s->cur.failed;
    s->all.skipped += s->cur.skipped;
    memset(&s->cur, 0, sizeof s->cur);
    s->setup = NULL;
    s->setup_udata = NULL;
    s->teardown = NULL;
    s->teardown_udata = NULL;
    s->column = 0;
}

/* Has -f been given and has something failed already? */
static ALKGT_INLINE int alkgt_halted(void) {
    return alkgt_st.stop_first_fail &&
        (alkgt_st.cur.failed > 0 || alkgt_st.all.failed > 0);
}

static ALKGT_INLINE void alkgt_run_suite(void (*suite_fn)(void),
        const char *name) {
    struct alkgt_state *s = &alkgt_st;
    if (!alkgt_selects(s->want_suite, name, 1) || alkgt_halted()) {
        return;
    }
    alkgt_fold_suite();
    fprintf(GREATEST_STDOUT, "\n* Suite %s:\n", name);
    s->suite_start = alkgt_now();
    suite_fn();
    s->suite_stop = alkgt_now();
    if (s->cur.run > 0) {
        fprintf(GREATEST_STDOUT,
            "\n%u test%s - %u passed, %u failed, %u skipped",
            s->cur.run, s->cur.run == 1 ? "" : "s",
            s->cur.passed, s->cur.failed, s->cur.skipped);
        alkgt_print_elapsed(s->suite_start, s->suite_stop);
        fputc('\n', GREATEST_STDOUT);
    }
}

/* Decide whether test NAME runs now; if so start its clock and call
 * the setup hook.  Under -l, print the name instead. */
static ALKGT_INLINE int alkgt_test_begin(const char *name) {
    struct alkgt_state *s = &alkgt_st;
    int chosen = alkgt_selects(s->want_test, name, 1) &&
        !alkgt_selects(s->skip_test, name, 0);
    if (s->list_only) {
        if (chosen) { fprintf(GREATEST_STDOUT, "  %s\n", name); }
        return 0;
    }
    if (!chosen) { return 0; }
    if (s->stop_first_fail && s->cur.failed > 0) { return 0; }
    if (s->in_test) {
        fprintf(stderr, "greatest (alk): RUN_TEST of %s inside another "
            "test ignored\n", name);
        return 0;
    }
    s->test_name = name;
    s->test_start = alkgt_now();
    if (s->setup != NULL) { s->setup(s->setup_udata); }
    s->in_test = 1;
    return 1;
}

/* Record and print the outcome of the test started by test_begin. */
static ALKGT_INLINE void alkgt_test_end(enum greatest_test_res res) {
    struct alkgt_state *s = &alkgt_st;
    FILE *out = GREATEST_STDOUT;
    const char *msg;
    s->test_stop = alkgt_now();
    if (s->teardown != NULL) { s->teardown(s->teardown_udata); }
    s->in_test = 0;
    msg = s->msg != NULL ? s->msg : "";

    if (res < GREATEST_TEST_RES_PASS) {
        s->cur.failed++;
        if (s->verbosity > 0) {
            fprintf(out, "FAIL %s: %s (%s:%u)", s->test_name, msg,
                s->fail_file != NULL ? s->fail_file : "?", s->fail_line);
        } else {
            /* 'F' ends the row of dots; the reason goes on its own line */
            fprintf(out, "F\nFAIL %s: %s (%s:%u)\n", s->test_name, msg,
                s->fail_file != NULL ? s->fail_file : "?", s->fail_line);
            s->column = 0;
        }
    } else if (res > GREATEST_TEST_RES_PASS) {
        s->cur.skipped++;
        if (s->verbosity > 0) {
            fprintf(out, "SKIP %s: %s", s->test_name, msg);
        } else {
            fputc('s', out);
        }
    } else {
        s->cur.passed++;
        if (s->verbosity > 0) {
            fprintf(out, "PASS %s: %s", s->test_name, msg);
        } else {
            fputc('.', out);
        }
    }
    s->cur.run++;

    if (s->verbosity > 0) {
        alkgt_print_elapsed(s->test_start, s->test_stop);
        fputc('\n', out);
    } else if (++s->column >= s->width) {
        fputc('\n', out);
        s->column = 0;
    }
    fflush(out);
}

static ALKGT_INLINE int alkgt_assert_ok(int ok) {
    alkgt_st.assertions++;
    return ok;
}

static ALKGT_INLINE enum greatest_test_res alkgt_pass(const char *msg) {
    alkgt_st.msg = msg;
    return GREATEST_TEST_RES_PASS;
}

static ALKGT_INLINE enum greatest_test_res alkgt_skip(const char *msg) {
    alkgt_st.msg = msg;
    return GREATEST_TEST_RES_SKIP;
}

static ALKGT_INLINE enum greatest_test_res alkgt_fail(const char *msg,
        const char *file, unsigned int line) {
    alkgt_st.msg = msg;
    alkgt_st.fail_file = file;
    alkgt_st.fail_line = line;
    if (alkgt_st.abort_on_fail) { abort(); }
    return GREATEST_TEST_RES_FAIL;
}

/* strcmp / strncmp equality; prints both strings when they differ.
 * (NULL equals only NULL here rather than crashing.) */
static ALKGT_INLINE int alkgt_str_eq(const char *exp, const char *got,
        int bounded, size_t n) {
    int same;
    if (exp == NULL || got == NULL) {
        same = (exp == got);
    } else {
        same = bounded ? strncmp(exp, got, n) == 0 : strcmp(exp, got) == 0;
    }
    if (!same) {
        fprintf(GREATEST_STDOUT, "\nExpected: %s\n     Got: %s\n",
            exp != NULL ? exp : "(null)", got != NULL ? got : "(null)");
    }
    return same;
}

static ALKGT_INLINE int alkgt_in_range(GREATEST_FLOAT exp,
        GREATEST_FLOAT got, GREATEST_FLOAT tol) {
    /* Same rule as greatest: fail only if the distance provably
     * exceeds TOL (so comparisons involving NaN do not fail). */
    int far = (exp > got && exp - got > tol) ||
        (got > exp && got - exp > tol);
    if (far) {
        fprintf(GREATEST_STDOUT, "\nExpected: " GREATEST_FLOAT_FMT
            " +/- " GREATEST_FLOAT_FMT "\n     Got: " GREATEST_FLOAT_FMT
            "\n", exp, tol, got);
    }
    return !far;
}

/* One 16-byte hexdump row of BYTES[from, from+16) clipped to SIZE. */
static ALKGT_INLINE void alkgt_hex_row(const char *label,
        const unsigned char *bytes, size_t from, size_t size) {
    FILE *out = GREATEST_STDOUT;
    size_t i;
    fprintf(out, "  %-8s %04lx: ", label, (unsigned long)from);
    for (i = from; i < from + 16; i++) {
        if (i < size) { fprintf(out, "%02x ", bytes[i]); }
        else { fputs("   ", out); }
    }
    fputc('|', out);
    for (i = from; i < from + 16 && i < size; i++) {
        fputc(bytes[i] >= 0x20 && bytes[i] < 0x7f ? (int)bytes[i] : '.',
            out);
    }
    fputs("|\n", out);
}

/* memcmp equality; on mismatch show the region around the first
 * difference: up to 4 rows of 16 bytes, expected above got, with
 * "^^" under every byte that differs. */
static ALKGT_INLINE int alkgt_mem_eq(const void *exp_p, const void *got_p,
        size_t size) {
    const unsigned char *exp = (const unsigned char *)exp_p;
    const unsigned char *got = (const unsigned char *)got_p;
    FILE *out = GREATEST_STDOUT;
    size_t first, row, end, i;
    if (size == 0 || memcmp(exp, got, size) == 0) { return 1; }
    for (first = 0; exp[first] == got[first]; first++) {}
    fprintf(out, "\nMemory differs: %lu byte%s compared, first difference "
        "at offset %lu (0x%lx)\n", (unsigned long)size,
        size == 1 ? "" : "s", (unsigned long)first, (unsigned long)first);
    row = first - first % 16;
    end = row + 4 * 16;
    if (end > size) { end = size; }
    for (; row < end; row += 16) {
        size_t stop = row + 16 < size ? row + 16 : size;
        size_t last = row;          /* one past the last differing byte */
        alkgt_hex_row("expected", exp, row, size);
        alkgt_hex_row("got", got, row, size);
        for (i = row; i < stop; i++) {
            if (exp[i] != got[i]) { last = i + 1; }
        }
        if (last == row) { continue; }
        fputs("                 ", out);
        for (i = row; i < last; i++) {
            fputs(exp[i] != got[i] ? "^^" : "  ", out);
            if (i + 1 < last) { fputc(' ', out); }
        }
        fputc('\n', out);
    }
    if (end < size) {
        fprintf(out, "  ... %lu more byte%s not shown\n",
            (unsigned long)(size - end), size - end == 1 ? "" : "s");
    }
    return 0;
}

static ALKGT_INLINE void alkgt_set_setup(greatest_setup_cb *cb, void *ud) {
    alkgt_st.setup = cb;
    alkgt_st.setup_udata = ud;
}

static ALKGT_INLINE void alkgt_set_teardown(greatest_teardown_cb *cb,
        void *ud) {
    alkgt_st.teardown = cb;
    alkgt_st.teardown_udata = ud;
}

static ALKGT_INLINE void alkgt_usage(const char *prog) {
    fprintf(GREATEST_STDOUT,
        "Usage: %s [-hlfavex] [-s SUITE] [-t TEST] [-x EXCLUDE]\n"
        "  -h, --help  show this help and exit\n"
        "  -l          list the suites and tests, run nothing\n"
        "  -f          stop after the first failing test\n"
        "  -a          abort() on the first failure (implies -f)\n"
        "  -v          verbose: one result line per test\n"
        "  -s SUITE    run only suites whose name contains SUITE\n"
        "  -t TEST     run only tests whose name contains TEST\n"
        "  -e          -s/-t must match the whole name exactly\n"
        "  -x EXCLUDE  skip tests whose name contains EXCLUDE\n"
        "  --          ignore the remaining arguments\n"
        "(alk's minimal greatest-compatible runner)\n",
        prog);
}

static ALKGT_INLINE void alkgt_begin(int argc, char **argv) {
    struct alkgt_state *s = &alkgt_st;
    const char *prog = (argc > 0 && argv[0] != NULL) ? argv[0] : "test";
    int i;
    memset(s, 0, sizeof *s);
    s->width = GREATEST_DEFAULT_WIDTH > 0 ? GREATEST_DEFAULT_WIDTH : 72;
    s->run_start = alkgt_now();

    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        char opt;
        if (arg[0] != '-') { continue; }   /* plain words are ignored */
        opt = arg[1];                       /* only this letter counts */
        if (opt == 's' || opt == 't' || opt == 'x') {
            if (i + 1 >= argc) { alkgt_usage(prog); exit(EXIT_FAILURE); }
            i++;
            if (opt == 's') { s->want_suite = argv[i]; }
            else if (opt == 't') { s->want_test = argv[i]; }
            else { s->skip_test = argv[i]; }
        } else if (opt == 'e') { s->exact_match = 1;
        } else if (opt == 'f') { s->stop_first_fail = 1;
        } else if (opt == 'a') { s->abort_on_fail = 1;
        } else if (opt == 'l') { s->list_only = 1;
        } else if (opt == 'v') { s->verbosity++;
        } else if (opt == 'h' || strncmp(arg, "--help", 6) == 0) {
            alkgt_usage(prog);
            exit(EXIT_SUCCESS);
        } else if (strcmp(arg, "--") == 0) {
            break;
        } else {
            fprintf(GREATEST_STDOUT, "Unknown argument '%s'\n", arg);
            alkgt_usage(prog);
            exit(EXIT_FAILURE);
        }
    }
}

/* Final report (skipped under -l); returns main's exit status. */
static ALKGT_INLINE int alkgt_end(void) {
    struct alkgt_state *s = &alkgt_st;
    if (!s->list_only) {
        clock_t stop;
        alkgt_fold_suite();
        stop = alkgt_now();
        fprintf(GREATEST_STDOUT, "\nTotal: %u test%s", s->all.run,
            s->all.run == 1 ? "" : "s");
        alkgt_print_elapsed(s->run_start, stop);
        fprintf(GREATEST_STDOUT, ", %u assertion%s\n", s->assertions,
            s->assertions == 1 ? "" : "s");
        fprintf(GREATEST_STDOUT, "Pass: %u, fail: %u, skip: %u.\n",
            s->all.passed, s->all.failed, s->all.skipped);
    }
    fflush(GREATEST_STDOUT);
    return (s->all.failed + s->cur.failed) == 0 ? EXIT_SUCCESS
                                                : EXIT_FAILURE;
}

#ifdef __cplusplus
}
#endif

/*********************************************************************
 * Public macros
 *********************************************************************/

#define GREATEST_MAIN_DEFS() struct alkgt_state alkgt_st
#define GREATEST_MAIN_BEGIN() alkgt_begin(argc, argv)
#define GREATEST_MAIN_END() return alkgt_end()

#define TEST static enum greatest_test_res
/* Declared first so -Wmissing-prototypes stays quiet; external linkage
 * so SUITE_EXTERN works from other files. */
#define SUITE(NAME) void NAME(void); void NAME(void)
#define SUITE_EXTERN(NAME) void NAME(void)

#define RUN_SUITE(S) alkgt_run_suite(S, #S)
#define RUN_TEST(T)                                                     \
    do { if (alkgt_test_begin(#T)) { alkgt_test_end(T()); } } while (0)
#define RUN_TEST1(T, ARG)                                               \
    do { if (alkgt_test_begin(#T)) { alkgt_test_end(T(ARG)); } }   \
    while (0)
#if defined(__cplusplus) || \
    (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
#define RUN_TESTp(T, ...)                                               \
    do {                                                                \
        if (alkgt_test_begin(#T)) { alkgt_test_end(T(__VA_ARGS__)); } \
    } while (0)
#endif
#define IGNORE_TEST(T) (void)T

#define GREATEST_IS_VERBOSE() (alkgt_st.verbosity > 0)
#define GREATEST_SET_SETUP_CB(CB, UDATA) alkgt_set_setup(CB, UDATA)
#define GREATEST_SET_TEARDOWN_CB(CB, UDATA) alkgt_set_teardown(CB, UDATA)
#define SET_SETUP GREATEST_SET_SETUP_CB
#define SET_TEARDOWN GREATEST_SET_TEARDOWN_CB

/* Outcomes: each returns from the test function. */
#define PASSm(MSG) do { return alkgt_pass(MSG); } while (0)
#define SKIPm(MSG) do { return alkgt_skip(MSG); } while (0)
#define FAILm(MSG)                                                      \
    do { return alkgt_fail(MSG, __FILE__, (unsigned int)__LINE__); } while (0)
#define PASS() PASSm(NULL)
#define SKIP() SKIPm(NULL)
#define FAIL() FAILm(NULL)

/* Propagate a non-PASS result of a helper returning greatest_test_res. */
#define CHECK_CALL(CALL)                                                \
    do {                                                                \
        enum greatest_test_res alkgt_call_res_ = (CALL);                \
        if (alkgt_call_res_ != GREATEST_TEST_RES_PASS) {                \
            return alkgt_call_res_;                                     \
        }                                                               \
    } while (0)

/* Core: count the assertion, fail with MSG unless OK. */
#define ALKGT_CHECK(MSG, OK)                                            \
    do { if (!alkgt_assert_ok((OK) ? 1 : 0)) { FAILm(MSG); } } while (0)

#define ASSERTm(MSG, C)         ALKGT_CHECK(MSG, (C))
#define ASSERT_FALSEm(MSG, C)   ALKGT_CHECK(MSG, !(C))
#define ASSERT_EQm(MSG, E, G)   ALKGT_CHECK(MSG, (E) == (G))
#define ASSERT_NEQm(MSG, E, G)  ALKGT_CHECK(MSG, (E) != (G))
#define ASSERT_GTm(MSG, E, G)   ALKGT_CHECK(MSG, (E) > (G))
#define ASSERT_GTEm(MSG, E, G)  ALKGT_CHECK(MSG, (E) >= (G))
#define ASSERT_LTm(MSG, E, G)   ALKGT_CHECK(MSG, (E) < (G))
#define ASSERT_LTEm(MSG, E, G)  ALKGT_CHECK(MSG, (E) <= (G))

/* E and G are evaluated again (for printing) only on failure. */
#define ASSERT_EQ_FMTm(MSG, E, G, FMT)                                  \
    do {                                                                \
        if (!alkgt_assert_ok((E) == (G))) {                             \
            fputs("\nExpected: ", GREATEST_STDOUT);                     \
            fprintf(GREATEST_STDOUT, FMT, E);                           \
            fputs("\n     Got: ", GREATEST_STDOUT);                     \
            fprintf(GREATEST_STDOUT, FMT, G);                           \
            fputc('\n', GREATEST_STDOUT);                               \
            FAILm(MSG);                                                 \
        }                                                               \
    } while (0)

#define ASSERT_IN_RANGEm(MSG, E, G, TOL)                                \
    ALKGT_CHECK(MSG, alkgt_in_range((GREATEST_FLOAT)(E),                \
        (GREATEST_FLOAT)(G), (GREATEST_FLOAT)(TOL)))
#define ASSERT_STR_EQm(MSG, E, G)                                       \
    ALKGT_CHECK(MSG, alkgt_str_eq((E), (G), 0, 0))
#define ASSERT_STRN_EQm(MSG, E, G, N)                                   \
    ALKGT_CHECK(MSG, alkgt_str_eq((E), (G), 1, (size_t)(N)))
#define ASSERT_MEM_EQm(MSG, E, G, SIZE)                                 \
    ALKGT_CHECK(MSG, alkgt_mem_eq((const void *)(E), (const void *)(G), \
        (size_t)(SIZE)))

/* Message-less forms: the message is the failed relation, as text,
 * exactly as greatest words it (e.g. ASSERT_EQ(1, x) -> "1 != x"). */
#define ASSERT(C)               ASSERTm(#C, C)
#define ASSERT_FALSE(C)         ASSERT_FALSEm(#C, C)
#define ASSERT_EQ(E, G)         ASSERT_EQm(#E " != " #G, E, G)
#define ASSERT_NEQ(E, G)        ASSERT_NEQm(#E " == " #G, E, G)
#define ASSERT_GT(E, G)         ASSERT_GTm(#E " <= " #G, E, G)
#define ASSERT_GTE(E, G)        ASSERT_GTEm(#E " < " #G, E, G)
#define ASSERT_LT(E, G)         ASSERT_LTm(#E " >= " #G, E, G)
#define ASSERT_LTE(E, G)        ASSERT_LTEm(#E " > " #G, E, G)
#define ASSERT_EQ_FMT(E, G, FMT) ASSERT_EQ_FMTm(#E " != " #G, E, G, FMT)
#define ASSERT_IN_RANGE(E, G, TOL)                                      \
    ASSERT_IN_RANGEm(#E " != " #G " +/- " #TOL, E, G, TOL)
#define ASSERT_STR_EQ(E, G)     ASSERT_STR_EQm(#E " != " #G, E, G)
#define ASSERT_STRN_EQ(E, G, N) ASSERT_STRN_EQm(#E " != " #G, E, G, N)
#define ASSERT_MEM_EQ(E, G, N)  ASSERT_MEM_EQm(#E " != " #G, E, G, N)

#endif /* GREATEST_H */

/* bench_alktunnel.c - alktunnel.h's JSON reader and typed decoders against
 * yyjson, like with like, in one run (make bench).
 *
 * Documents. Look-alikes of the usual JSON benchmark files, generated here
 * from a fixed seed (no third-party file is read or committed), so every
 * run parses the same bytes:
 *   twitter  ~630 KB  "statuses": tweets indented by 2, long texts mostly
 *                     Japanese UTF-8 with \n, \/, \u3042 and surrogate-pair
 *                     escapes, nested "user" objects of strings, bools,
 *                     nulls and numbers, "entities" arrays of small
 *                     objects, a retweeted status in some; "search_metadata"
 *   citm     ~1.7 MB  objects keyed by numeric-string ids (areaNames,
 *                     events, ...), "performances" with arrays of prices
 *                     and seat categories; indented by 4, mostly ASCII,
 *                     short keys, integers, many nulls
 *   canada   ~2.2 MB  a GeoJSON FeatureCollection: one Polygon of many
 *                     rings of [lon, lat] doubles printed with 17
 *                     significant digits (-65.613616999999977), almost no
 *                     whitespace
 *   control  ~1 MiB   a control-plane message (resources with port ranges
 *                     and protocols, authorizations, revocations, relays)
 * Each is printed with its size and must pass alkt_json_validate (and
 * yyjson's parse); a refusal fails the bench.
 *
 * Figures. RUNS rounds; in each round ours and yyjson run back to back
 * (order alternating), so load on the machine hits both alike. Printed:
 * medians with the min-max spread, and the ratio (our throughput /
 * yyjson's) as the median of the per-round ratios.
 *   1. validate: alkt_json_validate vs a yyjson DOM parse
 *      (yyjson_read_opts, flags 0, then yyjson_doc_free) of each document.
 *      Targets: ratio >= 0.8 on twitter, citm, control; >= 1.0 on canada.
 *   2. typed decode: the control message decoded into alktunnel's structs
 *      (alkt_control_decode) vs yyjson's DOM parse of it. Target >= 0.7.
 *   3. linear growth: the control message scaled 10x is decoded in at
 *      most 1.1x the linear time (timed in the same rounds as the 1x one,
 *      the per-round time ratios' median judged).
 *   4. small messages: two ~150-byte open params decoded by
 *      alkt_open_params_decode, alternately: target >= 8 million/s;
 *      yyjson's parse rate of the same messages printed beside it.
 * Each target prints "met" or "MISSED"; the exit status is 1 when any was
 * missed, after everything is printed. /proc/loadavg is printed at the
 * start and the end.
 *
 * yyjson. Compiled in only with -DALK_HAVE_YYJSON: fetch a checkout (the
 * figures so far are against 0.12.0: git clone --branch 0.12.0
 * https://github.com/ibireme/yyjson /tmp/yyjson) and run
 * `make bench YYJSON_DIR=/tmp/yyjson`, which builds its src/yyjson.c at -O2
 * with the bench's compiler and links it. Without it the yyjson figures
 * print SKIPPED and their targets are not judged; 3 and 4 still are. */
#define _POSIX_C_SOURCE 199309L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"
#include "bench_common.h"
#ifdef ALK_HAVE_YYJSON
#include "yyjson.h"
#endif

#define RUNS 11 /* odd: the median is one of the rounds */
#define SEED 0x616c6b74756e6e6cULL /* "alktunnl" */
/* bytes of input per timed batch: long enough for the clock, short enough
 * that RUNS rounds of everything stay well under a minute */
#define BATCH_BYTES 32000000.0
#define SKIPPED "SKIPPED (set YYJSON_DIR to a yyjson checkout)"

static volatile size_t sink;

static void die(const char *what)
{
    fprintf(stderr, "bench: %s\n", what);
    exit(1);
}

/* ---- generated text ---------------------------------------------------- */
typedef struct text {
    char *buf;
    size_t len, cap;
} text;

static void text_reserve(text *t, size_t more)
{
    if (t->cap - t->len > more)
        return;
    while (t->cap - t->len <= more)
        t->cap = t->cap ? t->cap * 2 : 4096;
    t->buf = (char *)realloc(t->buf, t->cap);
    if (!t->buf)
        die("out of memory");
}

static void text_put(text *t, const char *s, size_t n)
{
    text_reserve(t, n);
    memcpy(t->buf + t->len, s, n);
    t->len += n;
}

static void text_puts(text *t, const char *s)
{
    text_put(t, s, strlen(s));
}

static void text_vprintf(text *t, const char *fmt, va_list ap)
{
    va_list again;
    int n;
    va_copy(again, ap);
    n = vsnprintf(NULL, 0, fmt, again);
    va_end(again);
    if (n < 0)
        die("vsnprintf failed");
    text_reserve(t, (size_t)n + 1);
    vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    t->len += (size_t)n;
}

static void text_printf(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    text_vprintf(t, fmt, ap);
    va_end(ap);
}

static void text_utf8(text *t, unsigned long cp)
{
    char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3f));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        n = 3;
    } else {
        b[0] = (char)(0xf0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        n = 4;
    }
    text_put(t, b, n);
}

/* xorshift64*: the documents only need to be the same on every run */
typedef struct rng {
    uint64_t state;
} rng;

static uint64_t rng_next(rng *r)
{
    r->state ^= r->state >> 12;
    r->state ^= r->state << 25;
    r->state ^= r->state >> 27;
    return r->state * 0x2545f4914f6cdd1dULL;
}

static size_t rng_below(rng *r, size_t n)
{
    return (size_t)((rng_next(r) >> 11) % n);
}

static int rng_chance(rng *r, unsigned percent)
{
    return rng_below(r, 100) < percent;
}

/* ---- a JSON writer: indent 0 writes no whitespace, else ": " and
 * one value per line, like the pretty-printed originals ------------------ */
#define JW_DEPTH 32
typedef struct jw {
    text out;
    size_t indent, depth;
    unsigned char has_items[JW_DEPTH];
} jw;

static void jw_newline(jw *w)
{
    size_t n = w->depth * w->indent;
    if (!w->indent)
        return;
    text_reserve(&w->out, n + 1);
    w->out.buf[w->out.len++] = '\n';
    memset(w->out.buf + w->out.len, ' ', n);
    w->out.len += n;
}

/* The comma and line break before a value, and its key inside an object
 * (key NULL inside an array or at the top). */
static void jw_value(jw *w, const char *key)
{
    if (w->depth) {
        if (w->has_items[w->depth])
            text_put(&w->out, ",", 1);
        w->has_items[w->depth] = 1;
        jw_newline(w);
    }
    if (key) {
        text_put(&w->out, "\"", 1);
        text_puts(&w->out, key);
        text_puts(&w->out, w->indent ? "\": " : "\":");
    }
}

static void jw_open(jw *w, const char *key, char bracket)
{
    jw_value(w, key);
    text_put(&w->out, &bracket, 1);
    if (++w->depth >= JW_DEPTH)
        die("generator nests too deep");
    w->has_items[w->depth] = 0;
}

static void jw_close(jw *w, char bracket)
{
    int had_items = w->has_items[w->depth];
    w->depth--;
    if (had_items)
        jw_newline(w);
    text_put(&w->out, &bracket, 1);
}

/* s is already JSON string contents (escaped where it needs to be) */
static void jw_str(jw *w, const char *key, const char *s)
{
    jw_value(w, key);
    text_put(&w->out, "\"", 1);
    text_puts(&w->out, s);
    text_put(&w->out, "\"", 1);
}

/* a number, true, false or null, printf-formatted */
static void jw_lit(jw *w, const char *key, const char *fmt, ...)
{
    va_list ap;
    jw_value(w, key);
    va_start(ap, fmt);
    text_vprintf(&w->out, fmt, ap);
    va_end(ap);
}

static void jw_bool(jw *w, const char *key, int value)
{
    jw_lit(w, key, "%s", value ? "true" : "false");
}

static void jw_null(jw *w, const char *key)
{
    jw_lit(w, key, "%s", "null");
}

static void jw_u64(jw *w, const char *key, uint64_t value)
{
    jw_lit(w, key, "%llu", (unsigned long long)value);
}

/* ---- twitter look-alike ------------------------------------------------ */
/* Tweet-like text of `chars` characters as JSON string contents: mostly
 * kana and kanji (3-byte UTF-8), some ASCII and full-width punctuation,
 * with the escapes the original carries. */
static void jp_text(text *t, rng *r, size_t chars)
{
    static const unsigned long punct[] = {0x3001, 0x3002, 0xff01, 0xff1f,
                                          0x300c, 0x300d, 0x30fc, 0x2026};
    static const char ascii[] = "abcdefghijklmnopqrstuvwxyz0123456789 @#:_";
    size_t i;
    for (i = 0; i < chars; i++) {
        size_t roll = rng_below(r, 1000);
        if (roll < 380)
            text_utf8(t, 0x3041 + rng_below(r, 83)); /* hiragana */
        else if (roll < 560)
            text_utf8(t, 0x30a1 + rng_below(r, 83)); /* katakana */
        else if (roll < 760)
            text_utf8(t, 0x4e00 + rng_below(r, 0x51a6)); /* CJK ideographs */
        else if (roll < 820)
            text_utf8(t, punct[rng_below(r, sizeof punct / sizeof punct[0])]);
        else if (roll < 940)
            text_put(t, &ascii[rng_below(r, sizeof ascii - 1)], 1);
        else if (roll < 970)
            text_puts(t, "\\n");
        else if (roll < 982)
            text_printf(t, "\\u%04lx",
                        0x3041 + (unsigned long)rng_below(r, 83));
        else if (roll < 990)
            text_puts(t, "\\/");
        else if (roll < 994)
            text_puts(t, "\\\"");
        else if (roll < 997) /* an emoji as a surrogate pair */
            text_printf(t, "\\ud83d\\ude%02lx",
                        (unsigned long)rng_below(r, 0x50));
        else
            text_utf8(t, 0x1f300 + rng_below(r, 0x100)); /* literal emoji */
    }
}

static const char *jp_string(text *scratch, rng *r, size_t chars)
{
    scratch->len = 0;
    jp_text(scratch, r, chars);
    text_put(scratch, "", 1);
    return scratch->buf;
}

static void tw_date(jw *w, const char *key, rng *r)
{
    static const char *const days[] = {"Sun", "Mon", "Tue", "Wed",
                                       "Thu", "Fri", "Sat"};
    static const char *const months[] = {"Jan", "Feb", "Mar", "Apr",
                                         "May", "Jun", "Jul", "Aug",
                                         "Sep", "Oct", "Nov", "Dec"};
    jw_lit(w, key, "\"%s %s %02zu %02zu:%02zu:%02zu +0000 %zu\"",
           days[rng_below(r, 7)], months[rng_below(r, 12)],
           1 + rng_below(r, 28), rng_below(r, 24), rng_below(r, 60),
           rng_below(r, 60), 2008 + rng_below(r, 7));
}

static void tw_id(jw *w, const char *key, const char *key_str, uint64_t id)
{
    char s[32];
    jw_u64(w, key, id);
    snprintf(s, sizeof s, "%llu", (unsigned long long)id);
    jw_str(w, key_str, s);
}

static void tw_indices(jw *w, rng *r)
{
    size_t from = rng_below(r, 100);
    jw_open(w, "indices", '[');
    jw_lit(w, NULL, "%zu", from);
    jw_lit(w, NULL, "%zu", from + 5 + rng_below(r, 20));
    jw_close(w, ']');
}

static void tw_url(jw *w, rng *r)
{
    char s[96];
    size_t n = rng_below(r, 100000000);
    jw_open(w, NULL, '{');
    snprintf(s, sizeof s, "http:\\/\\/t.co\\/%08zu", n);
    jw_str(w, "url", s);
    snprintf(s, sizeof s, "http:\\/\\/example.jp\\/blog\\/entry-%zu.html", n);
    jw_str(w, "expanded_url", s);
    snprintf(s, sizeof s, "example.jp\\/blog\\/entry-%zu\\u2026", n % 1000);
    jw_str(w, "display_url", s);
    tw_indices(w, r);
    jw_close(w, '}');
}

static void tw_user(jw *w, rng *r, text *scratch)
{
    static const char *const colours[] = {"C0DEED", "0084B4", "FFFFFF",
                                          "333333", "DDEEF6", "F5ABB5"};
    char s[160];
    uint64_t id = 100000000 + rng_below(r, 2800000000u);
    size_t img = 400000000 + rng_below(r, 99999999);
    jw_open(w, "user", '{');
    tw_id(w, "id", "id_str", id);
    jw_str(w, "name", jp_string(scratch, r, 2 + rng_below(r, 10)));
    snprintf(s, sizeof s, "user_%llx", (unsigned long long)id);
    jw_str(w, "screen_name", s);
    jw_str(w, "location", jp_string(scratch, r, rng_below(r, 8)));
    jw_str(w, "description", jp_string(scratch, r, 20 + rng_below(r, 140)));
    if (rng_chance(r, 40))
        jw_null(w, "url");
    else {
        snprintf(s, sizeof s, "http:\\/\\/t.co\\/%08zu",
                 rng_below(r, 99999999));
        jw_str(w, "url", s);
    }
    jw_open(w, "entities", '{');
    jw_open(w, "description", '{');
    jw_open(w, "urls", '[');
    if (rng_chance(r, 20))
        tw_url(w, r);
    jw_close(w, ']');
    jw_close(w, '}');
    jw_close(w, '}');
    jw_bool(w, "protected", rng_chance(r, 3));
    jw_lit(w, "followers_count", "%zu", rng_below(r, 20000));
    jw_lit(w, "friends_count", "%zu", rng_below(r, 5000));
    jw_lit(w, "listed_count", "%zu", rng_below(r, 300));
    tw_date(w, "created_at", r);
    jw_lit(w, "favourites_count", "%zu", rng_below(r, 30000));
    if (rng_chance(r, 50))
        jw_null(w, "utc_offset");
    else
        jw_lit(w, "utc_offset", "%d", 32400);
    if (rng_chance(r, 50))
        jw_null(w, "time_zone");
    else
        jw_str(w, "time_zone", "Tokyo");
    jw_bool(w, "geo_enabled", rng_chance(r, 30));
    jw_bool(w, "verified", 0);
    jw_lit(w, "statuses_count", "%zu", rng_below(r, 100000));
    jw_str(w, "lang", "ja");
    jw_bool(w, "contributors_enabled", 0);
    jw_bool(w, "is_translator", 0);
    jw_bool(w, "is_translation_enabled", 0);
    jw_str(w, "profile_background_color", colours[rng_below(r, 6)]);
    jw_str(w, "profile_background_image_url",
           "http:\\/\\/abs.twimg.com\\/images\\/themes\\/theme1\\/bg.png");
    jw_str(w, "profile_background_image_url_https",
           "https:\\/\\/abs.twimg.com\\/images\\/themes\\/theme1\\/bg.png");
    jw_bool(w, "profile_background_tile", rng_chance(r, 10));
    snprintf(s, sizeof s,
             "http:\\/\\/pbs.twimg.com\\/profile_images\\/%zu\\/"
             "img%04zu_normal.jpeg", img, rng_below(r, 10000));
    jw_str(w, "profile_image_url", s);
    snprintf(s, sizeof s,
             "https:\\/\\/pbs.twimg.com\\/profile_images\\/%zu\\/"
             "img%04zu_normal.jpeg", img, rng_below(r, 10000));
    jw_str(w, "profile_image_url_https", s);
    if (rng_chance(r, 50)) {
        snprintf(s, sizeof s,
                 "https:\\/\\/pbs.twimg.com\\/profile_banners\\/%llu\\/%zu",
                 (unsigned long long)id, 1400000000 + rng_below(r, 9999999));
        jw_str(w, "profile_banner_url", s);
    }
    jw_str(w, "profile_link_color", colours[rng_below(r, 6)]);
    jw_str(w, "profile_sidebar_border_color", colours[rng_below(r, 6)]);
    jw_str(w, "profile_sidebar_fill_color", colours[rng_below(r, 6)]);
    jw_str(w, "profile_text_color", colours[rng_below(r, 6)]);
    jw_bool(w, "profile_use_background_image", 1);
    jw_bool(w, "default_profile", rng_chance(r, 50));
    jw_bool(w, "default_profile_image", 0);
    jw_bool(w, "following", 0);
    jw_bool(w, "follow_request_sent", 0);
    jw_bool(w, "notifications", 0);
    jw_close(w, '}');
}

static void tw_status(jw *w, rng *r, text *scratch, uint64_t id, int nested)
{
    size_t i, n;
    int reply = rng_chance(r, 15);
    jw_open(w, nested ? "retweeted_status" : NULL, '{');
    jw_open(w, "metadata", '{');
    jw_str(w, "result_type", "recent");
    jw_str(w, "iso_language_code", "ja");
    jw_close(w, '}');
    tw_date(w, "created_at", r);
    tw_id(w, "id", "id_str", id);
    jw_str(w, "text", jp_string(scratch, r, 30 + rng_below(r, 110)));
    jw_str(w, "source",
           "<a href=\\\"http:\\/\\/twitter.com\\/download\\/iphone\\\" "
           "rel=\\\"nofollow\\\">Twitter for iPhone<\\/a>");
    jw_bool(w, "truncated", 0);
    if (reply) {
        uint64_t to = id - rng_below(r, 1000000000);
        uint64_t user = 100000000 + rng_below(r, 2800000000u);
        char s[32];
        tw_id(w, "in_reply_to_status_id", "in_reply_to_status_id_str", to);
        tw_id(w, "in_reply_to_user_id", "in_reply_to_user_id_str", user);
        snprintf(s, sizeof s, "user_%llx", (unsigned long long)user);
        jw_str(w, "in_reply_to_screen_name", s);
    } else {
        jw_null(w, "in_reply_to_status_id");
        jw_null(w, "in_reply_to_status_id_str");
        jw_null(w, "in_reply_to_user_id");
        jw_null(w, "in_reply_to_user_id_str");
        jw_null(w, "in_reply_to_screen_name");
    }
    tw_user(w, r, scratch);
    jw_null(w, "geo");
    jw_null(w, "coordinates");
    jw_null(w, "place");
    jw_null(w, "contributors");
    if (!nested && rng_chance(r, 30))
        tw_status(w, r, scratch, id - 1000000 - rng_below(r, 100000000), 1);
    jw_lit(w, "retweet_count", "%zu", rng_below(r, 100) ? rng_below(r, 60)
                                                        : rng_below(r, 90000));
    jw_lit(w, "favorite_count", "%zu", rng_below(r, 40));
    jw_open(w, "entities", '{');
    jw_open(w, "hashtags", '[');
    n = rng_chance(r, 20) ? 1 + rng_below(r, 3) : 0;
    for (i = 0; i < n; i++) {
        jw_open(w, NULL, '{');
        jw_str(w, "text", jp_string(scratch, r, 2 + rng_below(r, 8)));
        tw_indices(w, r);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_open(w, "symbols", '[');
    jw_close(w, ']');
    jw_open(w, "urls", '[');
    n = rng_chance(r, 25) ? 1 + rng_below(r, 2) : 0;
    for (i = 0; i < n; i++)
        tw_url(w, r);
    jw_close(w, ']');
    jw_open(w, "user_mentions", '[');
    n = reply || nested ? 1 + rng_below(r, 2) : 0;
    for (i = 0; i < n; i++) {
        uint64_t user = 100000000 + rng_below(r, 2800000000u);
        char s[32];
        jw_open(w, NULL, '{');
        snprintf(s, sizeof s, "user_%llx", (unsigned long long)user);
        jw_str(w, "screen_name", s);
        jw_str(w, "name", jp_string(scratch, r, 2 + rng_below(r, 10)));
        tw_id(w, "id", "id_str", user);
        tw_indices(w, r);
        jw_close(w, '}');
    }
    jw_close(w, ']');
    jw_close(w, '}');
    jw_bool(w, "favorited", 0);
    jw_bool(w, "retweeted", 0);
    if (rng_chance(r, 20))
        jw_bool(w, "possibly_sensitive", 0);
    jw_str(w, "lang", "ja");
    jw_close(w, '}');
}

static text gen_twitter(rng *r, size_t target, size_t *statuses)
{
    jw w;
    text scratch = {NULL, 0, 0};
    uint64_t id = 505874924095815681ULL, first = id;
    memset(&w, 0, sizeof w);
    w.indent = 2;
    *statuses = 0;
    jw_open(&w, NULL, '{');
    jw_open(&w, "statuses", '[');
    while (w.out.len + 700 < target) {
        tw_status(&w, r, &scratch, id, 0);
        id -= 1 + rng_below(r, 30000000);
        ++*statuses;
    }
    jw_close(&w, ']');
    jw_open(&w, "search_metadata", '{');
    jw_lit(&w, "completed_in", "%.3f", 0.087);
    tw_id(&w, "max_id", "max_id_str", first);
    jw_lit(&w, "next_results",
           "\"?max_id=%llu&q=%%E4%%B8%%80&count=%zu&include_entities=1\"",
           (unsigned long long)id, *statuses);
    jw_str(&w, "query", "%E4%B8%80");
    jw_lit(&w, "refresh_url",
           "\"?since_id=%llu&q=%%E4%%B8%%80&include_entities=1\"",
           (unsigned long long)first);
    jw_lit(&w, "count", "%zu", *statuses);
    tw_id(&w, "since_id", "since_id_str", 0);
    jw_close(&w, '}');
    jw_close(&w, '}');
    free(scratch.buf);
    return w.out;
}

/* ---- citm_catalog look-alike ------------------------------------------- */
static void citm_names(jw *w, rng *r, const char *key, uint64_t base,
                       size_t count, const char *const *words, size_t nwords)
{
    size_t i;
    jw_open(w, key, '{');
    for (i = 0; i < count; i++) {
        char k[24], v[96];
        snprintf(k, sizeof k, "%llu",
                 (unsigned long long)(base + i * 4 + rng_below(r, 4)));
        snprintf(v, sizeof v, "%s %s %zu", words[rng_below(r, nwords)],
                 words[rng_below(r, nwords)], 1 + rng_below(r, 12));
        jw_str(w, k, v);
    }
    jw_close(w, '}');
}

static void citm_ids(jw *w, rng *r, const char *key, uint64_t base,
                     size_t count)
{
    size_t i;
    jw_open(w, key, '[');
    for (i = 0; i < count; i++)
        jw_u64(w, NULL, base + rng_below(r, 200));
    jw_close(w, ']');
}

static text gen_citm(rng *r, size_t target, size_t *performances)
{
    /* the original's area and category names are French (UTF-8 in octal
     * escapes, which unlike \x stop after three digits) */
    static const char *const words[] = {
        "Arri\303\250re-sc\303\250ne", "central", "1er balcon",
        "2\303\250me balcon",
        "Parterre", "c\303\264t\303\251 jardin", "c\303\264t\303\251 cour",
        "Loge", "Cat\303\251gorie", "Abonn\303\251", "Orchestre", "Concert",
        "Symphonique", "Musique de chambre", "R\303\251cital", "Jeune public"};
    const size_t nwords = sizeof words / sizeof words[0];
    const size_t nevents = 184;
    const uint64_t area0 = 205705993, event0 = 138586341, perf0 = 339887544;
    const uint64_t cat0 = 338937235, topic0 = 107888604, sub0 = 337184262;
    size_t i, j, k;
    jw w;
    memset(&w, 0, sizeof w);
    w.indent = 4;
    *performances = 0;
    jw_open(&w, NULL, '{');
    citm_names(&w, r, "areaNames", area0, 17, words, nwords);
    jw_open(&w, "audienceSubCategoryNames", '{');
    jw_str(&w, "337100890", "Abonn\303\251");
    jw_close(&w, '}');
    jw_open(&w, "blockNames", '{');
    jw_close(&w, '}');
    jw_open(&w, "events", '{');
    for (i = 0; i < nevents; i++) {
        char k_id[24], name[96];
        uint64_t id = event0 + i * 37;
        snprintf(k_id, sizeof k_id, "%llu", (unsigned long long)id);
        jw_open(&w, k_id, '{');
        jw_null(&w, "description");
        jw_u64(&w, "id", id);
        if (rng_chance(r, 60))
            jw_null(&w, "logo");
        else {
            snprintf(name, sizeof name, "/images/UE0AAAAA%08zuAAAAVDSVRN",
                     rng_below(r, 100000000));
            jw_str(&w, "logo", name);
        }
        snprintf(name, sizeof name, "%s %s", words[rng_below(r, nwords)],
                 words[rng_below(r, nwords)]);
        jw_str(&w, "name", name);
        citm_ids(&w, r, "subTopicIds", sub0, 1 + rng_below(r, 4));
        jw_null(&w, "subjectCode");
        jw_null(&w, "subtitle");
        citm_ids(&w, r, "topicIds", topic0, 1 + rng_below(r, 3));
        jw_close(&w, '}');
    }
    jw_close(&w, '}');
    jw_open(&w, "performances", '[');
    while (w.out.len + 12000 < target) {
        size_t ncat = 1 + rng_below(r, 5);
        jw_open(&w, NULL, '{');
        jw_u64(&w, "eventId", event0 + rng_below(r, nevents) * 37);
        jw_u64(&w, "id", perf0 + *performances * 11);
        jw_null(&w, "logo");
        jw_null(&w, "name");
        jw_open(&w, "prices", '[');
        for (j = 0; j < ncat; j++) {
            jw_open(&w, NULL, '{');
            jw_lit(&w, "amount", "%zu", 5000 + 250 * rng_below(r, 400));
            jw_u64(&w, "audienceSubCategoryId", 337100890);
            jw_u64(&w, "seatCategoryId", cat0 + j * 6);
            jw_close(&w, '}');
        }
        jw_close(&w, ']');
        jw_open(&w, "seatCategories", '[');
        for (j = 0; j < ncat; j++) {
            size_t nareas = 1 + rng_below(r, 12);
            jw_open(&w, NULL, '{');
            jw_open(&w, "areas", '[');
            for (k = 0; k < nareas; k++) {
                jw_open(&w, NULL, '{');
                jw_u64(&w, "areaId", area0 + rng_below(r, 17) * 4);
                jw_open(&w, "blockIds", '[');
                jw_close(&w, ']');
                jw_close(&w, '}');
            }
            jw_close(&w, ']');
            jw_u64(&w, "seatCategoryId", cat0 + j * 6);
            jw_close(&w, '}');
        }
        jw_close(&w, ']');
        jw_null(&w, "seatMapImage");
        jw_lit(&w, "start", "%llu",
               1372701600000ULL + 3600000ULL * rng_below(r, 8000));
        jw_str(&w, "venueCode", "PLEYEL_PLEYEL");
        jw_close(&w, '}');
        ++*performances;
    }
    jw_close(&w, ']');
    citm_names(&w, r, "seatCategoryNames", cat0, 64, words, nwords);
    citm_names(&w, r, "subTopicNames", sub0, 19, words, nwords);
    jw_open(&w, "subjectNames", '{');
    jw_close(&w, '}');
    citm_names(&w, r, "topicNames", topic0, 4, words, nwords);
    jw_open(&w, "topicSubTopics", '{');
    for (i = 0; i < 4; i++) {
        char k_id[24];
        snprintf(k_id, sizeof k_id, "%llu",
                 (unsigned long long)(topic0 + i * 4));
        citm_ids(&w, r, k_id, sub0, 2 + rng_below(r, 6));
    }
    jw_close(&w, '}');
    jw_open(&w, "venueNames", '{');
    jw_str(&w, "PLEYEL_PLEYEL", "Salle Pleyel");
    jw_close(&w, '}');
    jw_close(&w, '}');
    return w.out;
}

/* ---- canada look-alike ------------------------------------------------- */
/* A coordinate held as integer micro-degrees, printed the way the
 * original's were: the double nearest to it with 17 significant digits
 * (-65.613617 becomes -65.613616999999977). */
static void canada_coord(text *t, long micro)
{
    text_printf(t, "%.17g", (double)micro / 1e6);
}

static text gen_canada(rng *r, size_t target, size_t *rings, size_t *points)
{
    text t = {NULL, 0, 0};
    *rings = *points = 0;
    text_puts(&t, "{\"type\":\"FeatureCollection\",\n\"features\":[\n"
                  "{\"type\":\"Feature\",\"properties\":{\"name\":\"Canada\"},"
                  "\"geometry\":{\"type\":\"Polygon\",\"coordinates\":[\n");
    while (t.len + 200 < target) {
        /* an island's coast: a closed random walk */
        size_t n = 4 + rng_below(r, 220), i;
        long lon0 = -141000000 + (long)rng_below(r, 88000000);
        long lat0 = 42000000 + (long)rng_below(r, 41000000);
        long lon = lon0, lat = lat0;
        text_puts(&t, *rings ? ",\n[" : "[");
        for (i = 0; i <= n && t.len + 64 < target; i++) {
            text_puts(&t, i ? ",[" : "[");
            canada_coord(&t, lon);
            text_put(&t, ",", 1);
            canada_coord(&t, lat);
            text_put(&t, "]", 1);
            ++*points;
            if (i + 1 == n) {
                lon = lon0; /* rings close on their first point */
                lat = lat0;
            } else {
                lon += (long)rng_below(r, 20001) - 10000;
                lat += (long)rng_below(r, 20001) - 10000;
            }
        }
        text_put(&t, "]", 1);
        ++*rings;
    }
    text_puts(&t, "]}}\n]}\n");
    return t;
}

/* ---- control message --------------------------------------------------- */
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
    if (o >= cap)
        die("control message does not fit");
    return o;
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
        !a->relays)
        die("out of memory");
}

/* ---- what is timed ----------------------------------------------------- */
typedef struct doc {
    const char *name;
    char *buf;
    size_t len;
    control_arrays *arrays; /* for the typed control decode */
} doc;

/* One operation on a document; k counts the repetitions of a batch (the
 * small-message ops take doc[k & 1]). */
typedef void (*op_fn)(const doc *d, size_t k);

static const alkt_json_limits big_limits = {0, (size_t)1 << 30};

static void op_validate(const doc *d, size_t k)
{
    alkt_error err;
    (void)k;
    if (alkt_json_validate(d->buf, d->len, &big_limits, &err) != ALKT_OK) {
        fprintf(stderr, "bench: %s refused: %s at %zu (line %zu col %zu)\n",
                d->name, alkt_strerror(err.code), err.offset, err.line,
                err.column);
        exit(1);
    }
}

static void op_control(const doc *d, size_t k)
{
    const control_arrays *a = d->arrays;
    alkt_control c;
    alkt_error err;
    (void)k;
    memset(&c, 0, sizeof c);
    c.resources = a->resources;
    c.authorizations = a->authorizations;
    c.revocations = a->revocations;
    c.relays = a->relays;
    c.resource_cap = c.authorization_cap = a->cap;
    c.revocation_cap = c.relay_cap = a->cap;
    if (alkt_control_decode(d->buf, d->len, &big_limits, &c, &err) !=
        ALKT_OK) {
        fprintf(stderr, "bench: decode failed: %s at %zu '%s'\n",
                alkt_strerror(err.code), err.offset, err.path);
        exit(1);
    }
    sink += c.resource_count;
}

static void op_small(const doc *d, size_t k)
{
    const doc *m = &d[k & 1];
    alkt_open_params p;
    alkt_error err;
    if (alkt_open_params_decode(m->buf, m->len, NULL, &p, &err) != ALKT_OK) {
        fprintf(stderr, "bench: %s refused: %s at %zu\n", m->name,
                alkt_strerror(err.code), err.offset);
        exit(1);
    }
    sink += p.port;
}

#ifdef ALK_HAVE_YYJSON
static void yyjson_parse(const doc *d)
{
    yyjson_read_err err;
    /* flags 0 never writes to the input; the cast is the API's */
    yyjson_doc *y = yyjson_read_opts(d->buf, d->len, 0, NULL, &err);
    if (!y) {
        fprintf(stderr, "bench: yyjson refused %s: %s at %zu\n", d->name,
                err.msg, err.pos);
        exit(1);
    }
    sink += yyjson_doc_get_val_count(y);
    yyjson_doc_free(y);
}

static void op_yyjson(const doc *d, size_t k)
{
    (void)k;
    yyjson_parse(d);
}

static void op_yyjson_small(const doc *d, size_t k)
{
    yyjson_parse(&d[k & 1]);
}
#endif

typedef struct spread {
    double median, min, max;
} spread;

static spread spread_of(double *v)
{
    spread s;
    s.median = bench_median(v, RUNS); /* sorts v */
    s.min = v[0];
    s.max = v[RUNS - 1];
    return s;
}

typedef struct pair {
    spread ours, theirs; /* seconds per operation */
    spread ratio;        /* their time / ours = our throughput / theirs */
    int have_theirs;
} pair;

/* One side of a comparison: reps operations on a document per round. */
typedef struct side {
    op_fn op; /* NULL: this side is not run */
    const doc *d;
    size_t reps;
} side;

/* RUNS rounds, ours and theirs back to back within a round, the first to
 * go alternating, so a change of load on the machine hits both alike. */
static pair time_sides(side ours, side theirs)
{
    double t[2][RUNS], ratio[RUNS];
    const side *sides[2];
    pair p;
    int r, i;
    size_t k;
    sides[0] = &ours;
    sides[1] = &theirs;
    memset(&p, 0, sizeof p);
    for (i = 0; i < 2; i++) /* warm caches and page the documents in */
        if (sides[i]->op)
            sides[i]->op(sides[i]->d, 0);
    for (r = 0; r < RUNS; r++) {
        for (i = 0; i < 2; i++) {
            int which = i ^ (r & 1);
            const side *s = sides[which];
            double t0;
            if (!s->op)
                continue;
            t0 = bench_now();
            for (k = 0; k < s->reps; k++)
                s->op(s->d, k);
            t[which][r] = (bench_now() - t0) / (double)s->reps;
        }
        if (theirs.op)
            ratio[r] = t[1][r] / t[0][r];
    }
    p.ours = spread_of(t[0]);
    if (theirs.op) {
        p.theirs = spread_of(t[1]);
        p.ratio = spread_of(ratio);
        p.have_theirs = 1;
    }
    return p;
}

/* the same document and repetitions on both sides */
static pair time_pair(op_fn ours, op_fn theirs, const doc *d, size_t reps)
{
    side a, b;
    a.op = ours;
    b.op = theirs;
    a.d = b.d = d;
    a.reps = b.reps = reps;
    return time_sides(a, b);
}

static size_t reps_for(size_t len)
{
    size_t reps = (size_t)(BATCH_BYTES / (double)len);
    return reps ? reps : 1;
}

/* throughput: MB/s, the spread's slowest time giving the lower bound */
static void print_rate(const char *who, size_t len, spread s)
{
    printf("  %-8s %8.1f MB/s (%.1f-%.1f)\n", who, (double)len / s.median / 1e6,
           (double)len / s.max / 1e6, (double)len / s.min / 1e6);
}

static int judge(const char *what, double value, double target, int at_most)
{
    int met = at_most ? value <= target : value >= target;
    printf("  target: %s %s %.2f: %.2f %s\n", what, at_most ? "<=" : ">=",
           target, value, met ? "met" : "MISSED");
    return met;
}

/* Prints ours, yyjson's and the ratio; judges the ratio when yyjson ran.
 * Returns 0 when a judged target was missed. */
static int report_pair(const char *title, const doc *d, pair p,
                       double target)
{
    printf("%s: %s, %zu B\n", title, d->name, d->len);
    print_rate("ours", d->len, p.ours);
    if (!p.have_theirs) {
        printf("  yyjson   %s\n", SKIPPED);
        printf("  target: ratio to yyjson >= %.2f: not judged\n", target);
        return 1;
    }
    print_rate("yyjson", d->len, p.theirs);
    printf("  ratio    %.2f (%.2f-%.2f)\n", p.ratio.median, p.ratio.min,
           p.ratio.max);
    return judge("ratio to yyjson", p.ratio.median, target, 0);
}

static void print_loadavg(const char *when)
{
    char line[128] = "unavailable";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(line, sizeof line, f))
            strcpy(line, "unreadable");
        fclose(f);
    }
    line[strcspn(line, "\n")] = '\0';
    printf("load average at %s: %s\n", when, line);
}

static void check_document(const doc *d)
{
    op_validate(d, 0); /* exits on a refusal */
}

int main(void)
{
    /* ~150 bytes each, as a control plane would send them */
    static char small[] =
        "{\n    \"substrate\": \"tcp\",\n    \"host\": \"postgres-primary-"
        "replica-03.analytics-cluster-blue.eu-west-1.db.internal.corp."
        "example.com\",\n    \"port\": 5432\n}\n";
    static char small_fwd[] =
        "{\n    \"substrate\": \"unix\",\n    \"path\": \"/var/run/"
        "analytics/pgbouncer/transaction-pool-03/.s.PGSQL.6432\"\n}\n"
        "                                                            ";
    op_fn yy = NULL, yy_small = NULL;
    rng r;
    text twitter, citm, canada;
    size_t statuses, performances, rings, points, n_res1, len1, len10, i;
    size_t cap = (size_t)12 << 20;
    char *doc1 = (char *)malloc(cap), *doc10 = (char *)malloc(cap);
    control_arrays arrays;
    doc docs[4], control10, smalls[2];
    pair p, p10;
    double growth, limit, rate;
    int ok = 1;
#ifdef ALK_HAVE_YYJSON
    yy = op_yyjson;
    yy_small = op_yyjson_small;
#endif
    if (!doc1 || !doc10)
        die("out of memory");

    printf("alktunnel JSON reader vs yyjson (medians of %d interleaved "
           "rounds, min-max in brackets)\n", RUNS);
#ifdef ALK_HAVE_YYJSON
    printf("yyjson %s, DOM parse with flags 0\n", YYJSON_VERSION_STRING);
#else
    printf("yyjson %s\n", SKIPPED);
#endif
    print_loadavg("start");

    r.state = SEED;
    twitter = gen_twitter(&r, 630000, &statuses);
    citm = gen_citm(&r, 1727000, &performances);
    canada = gen_canada(&r, 2251000, &rings, &points);
    /* about 1 MiB: find the resource count that gets there */
    for (n_res1 = 3000;; n_res1 += 100) {
        len1 = build_control(doc1, cap, n_res1);
        if (len1 >= ((size_t)1 << 20))
            break;
    }
    len10 = build_control(doc10, cap, n_res1 * 10);
    control_arrays_init(&arrays, n_res1 * 10);

    docs[0].name = "twitter-like";
    docs[0].buf = twitter.buf;
    docs[0].len = twitter.len;
    docs[1].name = "citm-like";
    docs[1].buf = citm.buf;
    docs[1].len = citm.len;
    docs[2].name = "canada-like";
    docs[2].buf = canada.buf;
    docs[2].len = canada.len;
    docs[3].name = "control";
    docs[3].buf = doc1;
    docs[3].len = len1;
    for (i = 0; i < 4; i++)
        docs[i].arrays = &arrays;
    control10 = docs[3];
    control10.name = "control x10";
    control10.buf = doc10;
    control10.len = len10;
    smalls[0].name = "open params (tcp)";
    smalls[0].buf = small;
    smalls[0].len = sizeof small - 1;
    smalls[1].name = "open params (unix)";
    smalls[1].buf = small_fwd;
    smalls[1].len = sizeof small_fwd - 1;
    smalls[0].arrays = smalls[1].arrays = NULL;

    printf("documents (seed %#llx), each validated by alkt_json_validate%s:\n",
           (unsigned long long)SEED, yy ? " and yyjson" : "");
    printf("  twitter-like %zu B, %zu statuses\n", twitter.len, statuses);
    printf("  citm-like    %zu B, %zu performances\n", citm.len, performances);
    printf("  canada-like  %zu B, %zu rings, %zu points\n", canada.len, rings,
           points);
    printf("  control      %zu B, %zu resources (x10: %zu B)\n", len1, n_res1,
           len10);
    for (i = 0; i < 4; i++) {
        check_document(&docs[i]);
        if (yy)
            yy(&docs[i], 0);
    }

    printf("\n1. validate: alkt_json_validate vs yyjson DOM parse\n");
    for (i = 0; i < 4; i++) {
        p = time_pair(op_validate, yy, &docs[i], reps_for(docs[i].len));
        ok &= report_pair("validate", &docs[i], p, i == 2 ? 1.0 : 0.8);
    }

    printf("\n2. typed decode: alkt_control_decode vs yyjson DOM parse\n");
    p = time_pair(op_control, yy, &docs[3], reps_for(docs[3].len));
    ok &= report_pair("typed decode", &docs[3], p, 0.7);

    printf("\n3. linear growth of the typed decode\n");
    {
        /* the 10x document against the 1x one in the same rounds */
        side big, one;
        big.op = one.op = op_control;
        big.d = &control10;
        big.reps = 1;
        one.d = &docs[3];
        one.reps = 3;
        p10 = time_sides(big, one);
    }
    growth = 1.0 / p10.ratio.median; /* RUNS is odd: 1/median = median of 1/x */
    limit = 1.1 * (double)len10 / (double)len1;
    printf("typed decode: %s, %zu B (%zu resources), interleaved with %s\n",
           control10.name, len10, n_res1 * 10, docs[3].name);
    print_rate("x10", len10, p10.ours);
    print_rate("x1", len1, p10.theirs);
    printf("  %.1fx the bytes in %.2fx the time (%.2f-%.2f)\n",
           (double)len10 / (double)len1, growth, 1.0 / p10.ratio.max,
           1.0 / p10.ratio.min);
    ok &= judge("time ratio", growth, limit, 1);

    printf("\n4. small messages: alkt_open_params_decode, the two "
           "alternately\n");
    p = time_pair(op_small, yy_small, smalls, 200000);
    rate = 1.0 / p.ours.median / 1e6;
    printf("open params: %zu B and %zu B\n", smalls[0].len, smalls[1].len);
    printf("  ours     %8.2f million/s (%.2f-%.2f)\n", rate,
           1.0 / p.ours.max / 1e6, 1.0 / p.ours.min / 1e6);
    if (p.have_theirs)
        printf("  yyjson   %8.2f million/s (%.2f-%.2f), DOM parse only, for "
               "context\n", 1.0 / p.theirs.median / 1e6,
               1.0 / p.theirs.max / 1e6, 1.0 / p.theirs.min / 1e6);
    else
        printf("  yyjson   %s\n", SKIPPED);
    ok &= judge("million messages/s", rate, 8.0, 0);

    printf("\n");
    print_loadavg("end");
    printf("%s\n", ok ? "all targets met" : "targets MISSED");
    free(twitter.buf);
    free(citm.buf);
    free(canada.buf);
    free(doc1);
    free(doc10);
    free(arrays.resources);
    free(arrays.authorizations);
    free(arrays.revocations);
    free(arrays.relays);
    return ok ? 0 : 1; /* like every bench: exit 1 when a target is missed */
}

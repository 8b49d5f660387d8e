/* params.c - fuzz target `params`: alktunnel.h's JSON reader and every typed
 * decoder, on the same bytes.
 *
 * The whole input is one document. It goes through:
 *   1. alkt_json_validate, compared with the independent reference validator
 *      in json_ref.h (accept/reject and the offset of the first bad byte), at
 *      the default depth limit and at a depth limit of 3;
 *   2. a token walk with alkt_json_next, checking each token against the
 *      structure (offsets inside the input and increasing, depth, keys only
 *      where an object expects one, strings quoted, numbers converted the
 *      same way as strtoull/strtoll) and every string through
 *      alkt_json_unescape (valid UTF-8 out, no unpaired surrogate, exact
 *      capacity behaviour);
 *   3. alkt_open_params_decode, alkt_listen_reply_decode (+ the lenient
 *      projection) and alkt_control_decode. A rejection must carry a code,
 *      an offset inside the input, the right line/column and a terminated
 *      path; a reader-level code must be exactly the reader's own verdict.
 *      An acceptance must be valid JSON, re-encode to canonical JSON that
 *      decodes to the identical struct and re-encodes to the same bytes
 *      (encode(decode(s)) is a fixed point), and the encoders' size query,
 *      too-small and NULL buffers (and an open of no kind) must behave. The control decoder's fast path
 *      must agree with its token-based reference wherever it accepts, and
 *      must accept every canonical document without escapes. Accepted
 *      hosts, addresses and CIDRs must be what addr_ref.h accepts, and
 *      print in RFC 5952 form;
 *   4. the typed values against addr_ref.h (an independent reference
 *      written from the RFCs and the header's SCHEMAS): every string and
 *      number token of the input is planted into each host / IP / CIDR /
 *      integer / key position of an otherwise valid document, and each
 *      decoder - the control fast path too - must give the reference's
 *      verdict (code, offset, path, value) and encode the reference's
 *      canonical text; and RFC 5952 formatting over every zero pattern.
 * Any broken invariant aborts via ALK_CHECK with the trace. */
#include <errno.h>
#include <float.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alktunnel.h"
#include "../testkit/alktunnel_internal.h"
#include "../testkit/alk_check.h"
#include "../testkit/alkt_equal.h"
#include "addr_ref.h"
#include "../testkit/json_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PARAMS_CAP 3 /* small section capacities: reach ALKT_ERR_TOO_MANY */

static void check_format(const char *what, const alkt_ip *ip);
static void check_host_value(const char *what, const alkt_host *h);
static void check_cidr_value(const char *what, const alkt_resource *r);

static int is_reader_code(int rc)
{
    return rc <= ALKT_ERR_TOO_LARGE && rc >= ALKT_ERR_TRAILING_DATA;
}

static void check_error(const char *what, int rc, const alkt_error *e,
                        const uint8_t *data, size_t size)
{
    size_t i, line = 1, col = 1;
    ALK_CHECK(rc < 0 && rc >= ALKT__RESULT_LOWEST, "%s: code %d", what, rc);
    ALK_CHECK(e->code == rc, "%s: err.code %d != returned %d", what, e->code,
              rc);
    ALK_CHECK(strcmp(alkt_strerror(rc), "unknown alktunnel result code") != 0,
              "%s: code %d has no text", what, rc);
    ALK_CHECK(e->offset <= size, "%s: offset %zu past the input (%zu)", what,
              e->offset, size);
    ALK_CHECK(memchr(e->path, 0, sizeof e->path) != NULL,
              "%s: path not terminated", what);
    if (rc == ALKT_ERR_TOO_LARGE) { /* refused unread: not counted */
        ALK_CHECK(e->line == 0 && e->column == 0,
                  "%s: too large, yet located at %zu:%zu", what, e->line,
                  e->column);
        return;
    }
    for (i = 0; i < e->offset; i++) {
        col++;
        if (data[i] == '\n') {
            line++;
            col = 1;
        }
    }
    ALK_CHECK(e->line == line && e->column == col,
              "%s: line/col %zu:%zu, expected %zu:%zu", what, e->line,
              e->column, line, col);
}

/* An independent UTF-8 check: decode code points, refuse what RFC 3629
 * refuses. */
static int utf8_ok(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = (unsigned char)s[i], cp, len, k;
        if (c < 0x80) {
            i++;
            continue;
        }
        len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
        if (!len || i + len > n)
            return 0;
        cp = c & (0x7Fu >> len);
        for (k = 1; k < len; k++) {
            unsigned b = (unsigned char)s[i + k];
            if ((b & 0xC0) != 0x80)
                return 0;
            cp = cp << 6 | (b & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
            (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

static void check_string_token(const alkt_json_token *t, const uint8_t *data,
                               size_t size)
{
    static char out[1 << 16], want[sizeof out];   /* ours, and the reference's */
    size_t n = 0, bad = 0, n2 = 0, wn = 0, wbad = 0;
    int rc;
    ALK_CHECK(t->offset < size && data[t->offset] == '"',
              "string token at %zu is not at a quote", t->offset);
    ALK_CHECK(t->ptr == (const char *)data + t->offset + 1 &&
                  t->offset + 1 + t->len < size &&
                  data[t->offset + 1 + t->len] == '"',
              "string token at %zu: bad span", t->offset);
    ALK_CHECK(((t->flags & ALKT_JSON_ESCAPED) != 0) ==
                  (memchr(t->ptr, '\\', t->len) != NULL),
              "string at %zu: escaped flag wrong", t->offset);
    if (t->len > sizeof out)
        return;
    /* unescaping never grows: \uXXXX (6) -> <= 3, a pair (12) -> 4 */
    rc = alkt_json_unescape(t->ptr, t->len, out, t->len, &n, &bad);
    ALK_CHECK(rc == ALKT_OK || rc == ALKT_ERR_BAD_SURROGATE,
              "unescape of string at %zu: %d", t->offset, rc);
    if (rc) {
        ALK_CHECK(addr_ref_unescape(t->ptr, t->len, want, sizeof want, &wn, &wbad) == 0,
                  "unescape of string at %zu: a surrogate the reference pairs", t->offset);
        ALK_CHECK(bad + 6 <= t->len && t->ptr[bad] == '\\' &&
                      t->ptr[bad + 1] == 'u',
                  "bad surrogate offset %zu in string at %zu", bad, t->offset);
        return;
    }
    ALK_CHECK(n <= t->len, "unescape grew %zu -> %zu", t->len, n);
    /* the same bytes as addr_ref.h's unescape (RFC 8259 section 7) */
    ALK_CHECK(addr_ref_unescape(t->ptr, t->len, want, sizeof want, &wn, &wbad) == 1 &&
                  wn == n && memcmp(out, want, n) == 0,
              "unescape of string at %zu: %zu bytes, the reference's %zu", t->offset, n, wn);
    ALK_CHECK(utf8_ok(out, n), "unescape of string at %zu gave bad UTF-8",
              t->offset);
    if (!(t->flags & ALKT_JSON_ESCAPED))
        ALK_CHECK(n == t->len && memcmp(out, t->ptr, n) == 0,
                  "plain string at %zu changed", t->offset);
    /* the escape-aware comparison agrees with the unescaped bytes, and
     * tells them from a copy one byte shorter or with its last byte
     * changed */
    ALK_CHECK(alkt_json_string_equal(t, out, n) == 1,
              "string at %zu: not equal to its own unescaped text", t->offset);
    if (n > 0) {
        ALK_CHECK(alkt_json_string_equal(t, out, n - 1) == 0,
                  "string at %zu: equal to its text cut short", t->offset);
        out[n - 1] ^= 0x20;
        ALK_CHECK(alkt_json_string_equal(t, out, n) == 0,
                  "string at %zu: equal to its text with a byte changed",
                  t->offset);
        out[n - 1] ^= 0x20;
    }
    if (n > 0) {
        rc = alkt_json_unescape(t->ptr, t->len, out, n - 1, &n2, NULL);
        ALK_CHECK(rc == ALKT_ERR_STRING_TOO_LONG && n2 < n,
                  "unescape into %zu bytes: %d (%zu)", n - 1, rc, n2);
    }
}

/* alkt_json_number_double against the C library's strtod of the same
 * text (the "C" locale: '.' is the point), bit for bit. */
static void check_number_double(const alkt_json_token *t)
{
    static char text[ALKT_JSON_NUMBER_TEXT_MAX + 1];
    double got = 0, want;
    int rc = alkt_json_number_double(t, &got);
    if (t->len > ALKT_JSON_NUMBER_TEXT_MAX) {
        ALK_CHECK(rc == ALKT_ERR_TOO_LARGE, "%zu-byte number: %d", t->len, rc);
        return;
    }
    memcpy(text, t->ptr, t->len);
    text[t->len] = '\0';
    want = strtod(text, NULL);
    if (want > DBL_MAX || want < -DBL_MAX) {
        ALK_CHECK(rc == ALKT_ERR_OUT_OF_RANGE, "number %s: %d, strtod inf",
                  text, rc);
        return;
    }
    ALK_CHECK(rc == ALKT_OK && memcmp(&got, &want, sizeof got) == 0,
              "number %s: %d, %.17g, strtod %.17g", text, rc, got, want);
}

static void check_number_token(const alkt_json_token *t)
{
    char text[64];
    uint64_t u = 0;
    int64_t s = 0;
    int ru = alkt_json_number_u64(t, &u), rs = alkt_json_number_i64(t, &s);
    check_number_double(t);
    if (t->flags & (ALKT_JSON_FRACTION | ALKT_JSON_EXPONENT)) {
        ALK_CHECK(ru == ALKT_ERR_NOT_INTEGER && rs == ALKT_ERR_NOT_INTEGER,
                  "non-integer number at %zu converted", t->offset);
        return;
    }
    ALK_CHECK(memchr(t->ptr, '.', t->len) == NULL &&
                  memchr(t->ptr, 'e', t->len) == NULL &&
                  memchr(t->ptr, 'E', t->len) == NULL,
              "number at %zu: flags miss a fraction/exponent", t->offset);
    if (t->len >= sizeof text) {
        ALK_CHECK(ru == ALKT_ERR_OUT_OF_RANGE && rs == ALKT_ERR_OUT_OF_RANGE,
                  "%zu-digit number at %zu converted", t->len, t->offset);
        return;
    }
    memcpy(text, t->ptr, t->len);
    text[t->len] = '\0';
    {
        int negative = text[0] == '-';
        int zero = strspn(text + negative, "0") == strlen(text + negative);
        unsigned long long ull;
        long long ll;
        int u_range, s_range;
        errno = 0;
        ull = strtoull(text + negative, NULL, 10);
        u_range = errno == ERANGE || (negative && !zero);
        errno = 0;
        ll = strtoll(text, NULL, 10);
        s_range = errno == ERANGE;
        ALK_CHECK(u_range ? ru == ALKT_ERR_OUT_OF_RANGE
                          : ru == ALKT_OK && u == (uint64_t)ull,
                  "u64 of '%s': rc %d value %llu", text, ru,
                  (unsigned long long)u);
        ALK_CHECK(s_range ? rs == ALKT_ERR_OUT_OF_RANGE
                          : rs == ALKT_OK && s == (int64_t)ll,
                  "i64 of '%s': rc %d value %lld", text, rs, (long long)s);
    }
}

/* The token walk: returns the reader's final code and offset. */
static int walk_tokens(const uint8_t *data, size_t size, size_t *err_offset)
{
    static unsigned char is_obj[ALKT_JSON_DEPTH_LIMIT + 1];
    static int expect_key[ALKT_JSON_DEPTH_LIMIT + 1];
    alkt_json_parser p;
    alkt_json_token t;
    alkt_error e;
    size_t depth = 0, last_end = 0, tokens = 0;
    int rc = alkt_json_init(&p, (const char *)data, size, NULL);
    memset(&t, 0, sizeof t);
    while (rc == ALKT_OK) {
        rc = alkt_json_next(&p, &t);
        if (rc)
            break;
        tokens++;
        ALK_CHECK(t.depth == depth - (t.type == ALKT_JSON_OBJECT_END ||
                                      t.type == ALKT_JSON_ARRAY_END),
                  "token %zu at %zu: depth %zu, walk says %zu", tokens,
                  t.offset, t.depth, depth);
        if (t.type == ALKT_JSON_END) {
            ALK_CHECK(depth == 0 && tokens > 1, "END at depth %zu", depth);
            break;
        }
        ALK_CHECK(t.offset >= last_end && t.offset < size,
                  "token at %zu overlaps the previous (ended %zu)", t.offset,
                  last_end);
        last_end = t.offset + 1;
        if (depth > 0 && is_obj[depth] && t.type != ALKT_JSON_OBJECT_END) {
            ALK_CHECK((t.type == ALKT_JSON_KEY) == expect_key[depth],
                      "token %d at %zu: key expected %d", (int)t.type,
                      t.offset, expect_key[depth]);
            expect_key[depth] = !expect_key[depth];
        } else {
            ALK_CHECK(t.type != ALKT_JSON_KEY, "key at %zu outside an object",
                      t.offset);
        }
        switch (t.type) {
        case ALKT_JSON_OBJECT:
        case ALKT_JSON_ARRAY:
            ALK_CHECK(depth < ALKT_JSON_DEPTH_DEFAULT, "depth past the limit");
            depth++;
            is_obj[depth] = t.type == ALKT_JSON_OBJECT;
            expect_key[depth] = 1;
            break;
        case ALKT_JSON_OBJECT_END:
        case ALKT_JSON_ARRAY_END:
            ALK_CHECK(depth > 0 && is_obj[depth] ==
                                       (t.type == ALKT_JSON_OBJECT_END),
                      "close at %zu does not match", t.offset);
            ALK_CHECK(!is_obj[depth] || expect_key[depth],
                      "object closed after a key at %zu", t.offset);
            depth--;
            break;
        case ALKT_JSON_KEY:
        case ALKT_JSON_STRING:
            check_string_token(&t, data, size);
            last_end = t.offset + t.len + 2;
            break;
        case ALKT_JSON_NUMBER:
            ALK_CHECK(t.ptr == (const char *)data + t.offset && t.len > 0,
                      "number span at %zu", t.offset);
            check_number_token(&t);
            last_end = t.offset + t.len;
            break;
        case ALKT_JSON_TRUE:
        case ALKT_JSON_FALSE:
        case ALKT_JSON_NULL:
            ALK_CHECK(memcmp(data + t.offset,
                             t.type == ALKT_JSON_TRUE    ? "true"
                             : t.type == ALKT_JSON_FALSE ? "false"
                                                         : "null",
                             t.len) == 0,
                      "literal at %zu", t.offset);
            last_end = t.offset + t.len;
            break;
        default:
            ALK_CHECK(0, "token type %d", (int)t.type);
        }
    }
    /* (the reader knows no path: it reports "", whatever e held) */
    memset(&e, 0x5a, sizeof e);
    ALK_CHECK(alkt_json_error(&p, &e) == rc && e.path[0] == '\0' && e.code == rc,
              "sticky error differs, or a path or code left over");
    /* without somewhere to put the details: the code alone (err may be NULL) */
    ALK_CHECK(alkt_json_error(&p, NULL) == rc, "sticky error without err differs");
    if (rc) {
        check_error("walk", rc, &e, data, size);
        ALK_CHECK(alkt_json_next(&p, &t) == rc, "error not sticky");
        *err_offset = e.offset;
    } else {
        ALK_CHECK(alkt_json_next(&p, &t) == ALKT_OK &&
                      t.type == ALKT_JSON_END,
                  "END not repeated");
    }
    return rc;
}

/* The walking calls on an accepted document, against plain token walks:
 * skipping the top value leaves END; in a top-level object, find_key on
 * the last key's (unescaped) name stops at the first key equal to it,
 * before its value; a name no key can have ends the object. */
static void check_walker(const uint8_t *data, size_t size)
{
    static char name[1 << 12];
    alkt_json_parser p;
    alkt_json_token t, x, last, k;
    size_t nkeys = 0, nlen = 0, want = 0;
    const char *doc = (const char *)data;
    int rc;
    memset(&last, 0, sizeof last);
    alkt_json_init(&p, doc, size, NULL);
    ALK_CHECK(alkt_json_next(&p, &t) == ALKT_OK, "walker: first token");
    ALK_CHECK(alkt_json_skip(&p, &t) == ALKT_OK &&
                  alkt_json_next(&p, &x) == ALKT_OK && x.type == ALKT_JSON_END,
              "walker: skipping the top value does not leave END");
    if (t.type != ALKT_JSON_OBJECT)
        return;
    alkt_json_init(&p, doc, size, NULL);
    while (alkt_json_next(&p, &x) == ALKT_OK && x.type != ALKT_JSON_END)
        if (x.type == ALKT_JSON_KEY && x.depth == 1) {
            last = x;
            nkeys++;
        }
    if (nkeys && (last.len > sizeof name ||
                  alkt_json_unescape(last.ptr, last.len, name, sizeof name,
                                     &nlen, NULL) != ALKT_OK))
        return; /* a key that does not decode cannot be asked for */
    if (nkeys) {
        alkt_json_init(&p, doc, size, NULL);
        while (alkt_json_next(&p, &x) == ALKT_OK && x.type != ALKT_JSON_END)
            if (x.type == ALKT_JSON_KEY && x.depth == 1 &&
                alkt_json_string_equal(&x, name, nlen)) {
                want = x.offset;
                break;
            }
        alkt_json_init(&p, doc, size, NULL);
        alkt_json_next(&p, &t);
        rc = alkt_json_find_key(&p, name, nlen, &k);
        ALK_CHECK(rc == ALKT_OK && k.offset == want && k.depth == 1,
                  "walker: find_key gave %d at %zu, the first such key is at "
                  "%zu", rc, k.offset, want);
        ALK_CHECK(alkt_json_next(&p, &x) == ALKT_OK && x.depth == 1 &&
                      x.offset > k.offset && x.type != ALKT_JSON_KEY,
                  "walker: after find_key, not the key's value");
    }
    alkt_json_init(&p, doc, size, NULL);
    alkt_json_next(&p, &t);
    rc = alkt_json_find_key(&p, "\xff", 1, &k); /* no key is bad UTF-8 */
    ALK_CHECK(rc == ALKT_ERR_MISSING_FIELD &&
                  alkt_json_next(&p, &x) == ALKT_OK && x.type == ALKT_JSON_END,
              "walker: find_key of an absent name: %d, then type %d", rc,
              (int)x.type);
}

/* The fast path reads 64-byte blocks: the same document after 1..63 spaces
 * (which change no verdict) puts each of its bytes at every place in a
 * block, so what carries from block to block - a string, an escape, a
 * number, a UTF-8 character - is crossed at every byte. Small documents
 * take every shift, larger ones one drawn from their bytes. */
static void check_shifted(const uint8_t *data, size_t size, int valid)
{
    static uint8_t shifted[ALKT_JSON_SIZE_DEFAULT + 64];
    size_t pad, first = 1, last = 63;
    if (size > ALKT_JSON_SIZE_DEFAULT)
        return;
    if (size > 4096)
        first = last = 1 + (size_t)data[size / 2] % 63;
    memset(shifted, ' ', last);
    memcpy(shifted + last, data, size);
    for (pad = first; pad <= last; pad++) {
        const uint8_t *doc = shifted + last - pad;
        ALK_CHECK(alkt__json_fast_valid(doc, size + pad,
                                        ALKT_JSON_DEPTH_DEFAULT) == valid,
                  "fast path %s the document after %zu spaces, the token "
                  "walk %s it", valid ? "refuses" : "accepts", pad,
                  valid ? "accepts" : "refuses");
    }
}

static int check_reader(const uint8_t *data, size_t size, size_t *offset)
{
    alkt_error e;
    alkt_json_limits shallow = {3, 0};
    size_t ref_off = 0, walk_off = 0;
    int ref = json_ref_validate(data, size, ALKT_JSON_DEPTH_DEFAULT, &ref_off);
    int rc = (memset(&e, 0xA5, sizeof e), alkt_json_validate((const char *)data, size, NULL, &e));
    int walk = walk_tokens(data, size, &walk_off);
    /* a valid document is reported as alkt_json_error reports one: no
     * code, offset 0 at line 1 column 1, no path */
    if (rc == ALKT_OK)
        ALK_CHECK(e.code == 0 && e.offset == 0 && e.line == 1 && e.column == 1 && !e.path[0],
                  "validate's success: %d at %zu (%zu:%zu) '%.8s'", e.code, e.offset, e.line,
                  e.column, e.path);
    alk_trace("reader: rc %d (%s) at %zu; reference %s at %zu", rc,
              alkt_strerror(rc), e.offset, ref ? "accepts" : "rejects",
              ref_off);
    ALK_CHECK((rc == ALKT_OK) == (ref == 1),
              "reader %s, the reference %s (offset %zu vs %zu)",
              rc ? "rejects" : "accepts", ref ? "accepts" : "rejects",
              e.offset, ref_off);
    ALK_CHECK(walk == rc && (rc == ALKT_OK || walk_off == e.offset),
              "token walk %d at %zu, validate %d at %zu", walk, walk_off, rc,
              e.offset);
    /* validate's fast path (the SSE2 block pass where there is SSE2)
     * accepts exactly what the token walk accepts (a document it wrongly
     * refused would only be slow; one it wrongly accepted, wrong) */
    if (size <= ALKT_JSON_SIZE_DEFAULT) {
        ALK_CHECK(alkt__json_fast_valid(data, size, ALKT_JSON_DEPTH_DEFAULT) ==
                      (walk == ALKT_OK),
                  "fast path %s, the token walk %s",
                  walk == ALKT_OK ? "refuses" : "accepts",
                  walk == ALKT_OK ? "accepts" : "refuses");
        check_shifted(data, size, walk == ALKT_OK);
        /* the portable one-pass path too, where SSE2 takes the above */
        ALK_CHECK(alkt__json_scan_valid(data, size, ALKT_JSON_DEPTH_DEFAULT) ==
                      (walk == ALKT_OK),
                  "portable fast path %s, the token walk %s",
                  walk == ALKT_OK ? "refuses" : "accepts",
                  walk == ALKT_OK ? "accepts" : "refuses");
    }
    if (rc) {
        check_error("validate", rc, &e, data, size);
        ALK_CHECK(e.offset == ref_off,
                  "first bad byte: reader %zu, reference %zu (%s)", e.offset,
                  ref_off, alkt_strerror(rc));
    }
    *offset = e.offset;
    if (rc == ALKT_OK)
        check_walker(data, size);
    {
        /* over max_size: refused unread - offset max_size, line and column 0 */
        alkt_json_limits tiny = {0, 8};
        int big = alkt_json_validate((const char *)data, size, &tiny, &e);
        ALK_CHECK(size <= 8 ? big != ALKT_ERR_TOO_LARGE
                            : big == ALKT_ERR_TOO_LARGE && e.code == big && e.offset == 8 &&
                                  e.line == 0 && e.column == 0 && e.path[0] == '\0',
                  "validate of %zu bytes with max_size 8: %d at %zu (%zu:%zu)", size, big,
                  e.offset, e.line, e.column);
    }
    rc = alkt_json_validate((const char *)data, size, &shallow, &e);
    ref = json_ref_validate(data, size, 3, &ref_off);
    ALK_CHECK((rc == ALKT_OK) == (ref == 1) && (ref || e.offset == ref_off),
              "depth 3: reader %d at %zu, reference %d at %zu", rc, e.offset,
              ref, ref_off);
    if (size <= ALKT_JSON_SIZE_DEFAULT) {
        ALK_CHECK(alkt__json_fast_valid(data, size, 3) == (ref == 1),
                  "depth 3: fast path %d, reference %d", alkt__json_fast_valid(data, size, 3), ref);
        ALK_CHECK(alkt__json_scan_valid(data, size, 3) == (ref == 1),
                  "depth 3: portable fast path %d, reference %d", alkt__json_scan_valid(data, size, 3), ref);
    }
    return walk;
}

/* A typed rejection: context well-formed; a reader-level code is exactly
 * what the reader says of the same bytes. */
static void check_typed_error(const char *what, int rc, const alkt_error *e,
                              const uint8_t *data, size_t size, int reader,
                              size_t reader_off)
{
    check_error(what, rc, e, data, size);
    if (is_reader_code(rc))
        ALK_CHECK(rc == reader && e->offset == reader_off,
                  "%s: reader-level %d at %zu, the reader says %d at %zu",
                  what, rc, e->offset, reader, reader_off);
}

static char enc1[1 << 17], enc2[1 << 17], spaced[1 << 18];

/* doc with insignificant whitespace: before it, after every { [ : , and
 * before every } ] outside strings, after it - still plain, so still for
 * the fast path. Returns the new length (0: no room). */
static size_t space_out(const char *doc, size_t n)
{
    size_t i, o = 0;
    int in_str = 0;
    if (2 * n + 8 > sizeof spaced) return 0;
    spaced[o++] = ' ';
    for (i = 0; i < n; i++) {
        char ch = doc[i];
        if (!in_str && (ch == '}' || ch == ']')) spaced[o++] = '\n';
        spaced[o++] = ch;
        if (ch == '"' && (i == 0 || doc[i - 1] != '\\')) in_str = !in_str;
        if (!in_str && (ch == '{' || ch == '[' || ch == ':' || ch == ','))
            spaced[o++] = ch == ',' ? '\t' : ' ';
    }
    spaced[o++] = '\r';
    spaced[o++] = '\n';
    return o;
}

/* Encoding contract for one accepted value: size query, exact buffer,
 * short buffer, canonical JSON. Returns the length. */
#define CHECK_ENCODE(what, encode_call_buf, encode_call_null,                  \
                     encode_call_short, out_len)                               \
    do {                                                                       \
        alkt_error ee;                                                         \
        ptrdiff_t need = encode_call_null;                                     \
        ptrdiff_t got;                                                         \
        ALK_CHECK(need > 0 && (size_t)need <= sizeof enc1,                     \
                  "%s: size query %td", what, need);                           \
        got = encode_call_buf;                                                 \
        ALK_CHECK(got == need, "%s: encoded %td, size query %td", what, got,   \
                  need);                                                       \
        ALK_CHECK(encode_call_short == ALKT_ERR_BUFFER_TOO_SMALL &&           \
                      ee.code == ALKT_ERR_BUFFER_TOO_SMALL,                    \
                  "%s: short buffer not refused", what);                       \
        ALK_CHECK(json_ref_validate((const uint8_t *)enc1, (size_t)got,        \
                                    ALKT_JSON_DEPTH_DEFAULT, NULL),            \
                  "%s: encoding is not JSON: %.*s", what, (int)got, enc1);     \
        out_len = (size_t)got;                                                 \
    } while (0)

/* The open-params fast path accepts only what the token-based decoder
 * (the reference) accepts, with the identical struct; the public decoder
 * answers exactly as the reference does, error included. */
static void check_open_paths(const char *what, const char *doc, size_t n,
                             const alkt_open_params *pub, int pub_rc,
                             const alkt_error *pub_err)
{
    alkt_open_params pf, ps;
    alkt_error es;
    int fast = alkt__open_fast(doc, n, NULL, &pf);
    int slow = alkt__open_slow(doc, n, NULL, &ps, &es);
    ALK_CHECK(!fast || (slow == ALKT_OK && memcmp(&pf, &ps, sizeof pf) == 0),
              "%s: the open fast path accepted what the reference says %d to, "
              "or differs: %.*s", what, slow, (int)n, doc);
    ALK_CHECK(pub_rc == slow && (slow != ALKT_OK || memcmp(pub, &ps, sizeof ps) == 0),
              "%s: public open decode %d, reference %d", what, pub_rc, slow);
    if (slow)
        ALK_CHECK(pub_err->code == es.code && pub_err->offset == es.offset &&
                      strcmp(pub_err->path, es.path) == 0,
                  "%s: public open error differs from the reference's", what);
}

static int plain_ascii(const char *s, size_t n);

static void check_open_params(const uint8_t *data, size_t size, int reader,
                              size_t reader_off)
{
    alkt_open_params p, p2, p3, zero;
    alkt_error e;
    size_t n = 0;
    int rc = alkt_open_params_decode((const char *)data, size, NULL, &p, &e);
    check_open_paths("open params", (const char *)data, size, &p, rc, &e);
    memset(&zero, 0, sizeof zero);
    alk_trace("open params: %d (%s) at %zu path '%s'", rc, alkt_strerror(rc),
              e.offset, e.path);
    if (rc) {
        check_typed_error("open params", rc, &e, data, size, reader,
                          reader_off);
        ALK_CHECK(memcmp(&p, &zero, sizeof p) == 0,
                  "open params: out not zeroed on error");
        return;
    }
    ALK_CHECK(reader == ALKT_OK, "open params accepted invalid JSON");
    check_host_value("open params host", &p.host);
    CHECK_ENCODE("open params", alkt_open_params_encode(&p, enc1, sizeof enc1, &ee),
                 alkt_open_params_encode(&p, NULL, 0, &ee),
                 alkt_open_params_encode(&p, enc2, (size_t)need - 1, &ee), n);
    rc = alkt_open_params_decode(enc1, n, NULL, &p2, &e);
    ALK_CHECK(rc == ALKT_OK, "open params: encoding refused: %s at %zu: %.*s",
              alkt_strerror(rc), e.offset, (int)n, enc1);
    ALK_CHECK(memcmp(&p, &p2, sizeof p) == 0,
              "open params: decode(encode(p)) != p: %.*s", (int)n, enc1);
    /* canonical documents take the fast path unless a string needs an
     * escape or holds non-ASCII bytes */
    ALK_CHECK(alkt__open_fast(enc1, n, NULL, &p3) == plain_ascii(enc1, n),
              "open fast path on a canonical document: %.*s", (int)n, enc1);
    if (plain_ascii(enc1, n)) {
        /* and with whitespace between its tokens */
        alkt_open_params p4;
        size_t sn = space_out(enc1, (size_t)n);
        ALK_CHECK(sn && alkt__open_fast(spaced, sn, NULL, &p4) &&
                      memcmp(&p4, &p, sizeof p) == 0,
                  "open fast path on a spaced canonical document: %.*s", (int)sn, spaced);
    }
    ALK_CHECK(alkt_open_params_encode(&p2, enc2, sizeof enc2, &e) ==
                      (ptrdiff_t)n &&
                  memcmp(enc1, enc2, n) == 0,
              "open params: encoding not a fixed point");
}

static void check_listen_reply(const uint8_t *data, size_t size, int reader,
                               size_t reader_off)
{
    alkt_listen_reply r, r2, lenient, zero;
    alkt_error e;
    size_t n = 0;
    int rc = alkt_listen_reply_decode((const char *)data, size, NULL, &r, &e);
    int projected = alkt_listen_reply_project((const char *)data, size,
                                              &lenient);
    memset(&zero, 0, sizeof zero);
    alk_trace("listen reply: %d (%s) at %zu path '%s'; lenient %d", rc,
              alkt_strerror(rc), e.offset, e.path, projected);
    ALK_CHECK(projected == (rc == ALKT_OK),
              "lenient projection %d, strict %d", projected, rc);
    if (rc) {
        check_typed_error("listen reply", rc, &e, data, size, reader,
                          reader_off);
        ALK_CHECK(memcmp(&r, &zero, sizeof r) == 0 &&
                      memcmp(&lenient, &zero, sizeof r) == 0,
                  "listen reply: out not zeroed on error");
        return;
    }
    ALK_CHECK(memcmp(&r, &lenient, sizeof r) == 0,
              "lenient projection differs from the strict value");
    ALK_CHECK(reader == ALKT_OK, "listen reply accepted invalid JSON");
    check_format("listen reply address", &r.address);
    CHECK_ENCODE("listen reply",
                 alkt_listen_reply_encode(&r, enc1, sizeof enc1, &ee),
                 alkt_listen_reply_encode(&r, NULL, 0, &ee),
                 alkt_listen_reply_encode(&r, enc2, (size_t)need - 1, &ee), n);
    rc = alkt_listen_reply_decode(enc1, n, NULL, &r2, &e);
    ALK_CHECK(rc == ALKT_OK && memcmp(&r, &r2, sizeof r) == 0,
              "listen reply: decode(encode(r)) != r: %.*s", (int)n, enc1);
    ALK_CHECK(alkt_listen_reply_encode(&r2, enc2, sizeof enc2, &e) ==
                      (ptrdiff_t)n &&
                  memcmp(enc1, enc2, n) == 0,
              "listen reply: encoding not a fixed point");
}

/* The listen-reply encoder on a struct made of the input's first bytes
 * (mostly not a valid reply): it refuses with a well-formed error naming
 * the field, or writes JSON that decodes back to the same address and
 * port. An encoder that lets a bad value through - or reports success
 * without writing - is seen here, where decoded structs never go. */
static void check_listen_encode_raw(const uint8_t *data, size_t size)
{
    alkt_listen_reply r, r2;
    alkt_error e;
    ptrdiff_t n;
    int rc;
    memset(&r, 0, sizeof r);
    memcpy(&r.address, data, size < sizeof r.address ? size : sizeof r.address);
    if (size >= 2) {
        /* a family of 4 or 6 half the time, a port of 0 one time in four */
        if (data[size - 1] & 1)
            r.address.family = (data[size - 1] & 2) ? 6 : 4;
        r.port = (data[size - 1] & 12) == 0
                     ? 0
                     : (uint16_t)((unsigned)data[size - 2] << 8 | data[size - 1]);
    }
    n = alkt_listen_reply_encode(&r, enc1, sizeof enc1, &e);
    alk_trace("listen encode of raw bytes: %ld (%s) '%s'", (long)n,
              n < 0 ? alkt_strerror((int)n) : "ok", n < 0 ? e.path : "");
    if (n < 0) {
        ALK_CHECK(e.code == (int)n, "listen encode returned %ld, error %d", (long)n, e.code);
        if (strcmp(e.path, "port") == 0)
            ALK_CHECK(r.port == 0 && e.code == ALKT_ERR_OUT_OF_RANGE,
                      "listen encode: port %u refused with %d", (unsigned)r.port, e.code);
        else
            ALK_CHECK(strcmp(e.path, "address") == 0 && e.code == ALKT_ERR_BAD_ADDRESS,
                      "listen encode: refused with %d at '%s'", e.code, e.path);
        return;
    }
    ALK_CHECK(r.port != 0, "listen encode wrote port 0: %.*s", (int)n, enc1);
    rc = alkt_listen_reply_decode(enc1, (size_t)n, NULL, &r2, &e);
    ALK_CHECK(rc == ALKT_OK && memcmp(&r.address, &r2.address, sizeof r.address) == 0 &&
                  r.port == r2.port,
              "listen encode wrote %.*s for a struct it does not decode back to (%d)",
              (int)n, enc1, rc);
}

/* An open struct made from raw bytes (kind, substrate and host kind from
 * the first byte; port, listen and lengths from the second; address, name
 * and path bytes from the rest, cut at their first NUL), encoded: either
 * refused for a reason the struct shows - a port or listen of 0, an empty
 * or non-UTF-8 path, a host the reference calls no name, an address of no
 * family or an IPv4 one with bytes past its four, a name where only an
 * address may stand - or written as a document that decodes back to the
 * same struct. */
static void check_open_encode_raw(const uint8_t *data, size_t size)
{
    alkt_open_params p, p2;
    alkt_error e;
    ptrdiff_t n;
    size_t len, room = size > 2 ? size - 2 : 0, i;
    unsigned b0, b1, hk;
    int rc, bad_ip;
    if (size < 2) return;
    b0 = data[0];
    b1 = data[1];
    memset(&p, 0, sizeof p);
    p.kind = (b0 & 1) ? ALKT_OPEN_FORWARDED : ALKT_OPEN_DIRECT;
    p.substrate = (alkt_substrate)(1 + (b0 >> 1) % 3);
    hk = (b0 >> 3) % 3;
    if (p.kind == ALKT_OPEN_DIRECT && p.substrate == ALKT_SUBSTRATE_UNIX)
        hk = 0; /* (the fields in use only: a path, no host or port) */
    if (p.kind == ALKT_OPEN_FORWARDED)
        p.listen = (uint16_t)((b0 & 0x40) ? b1 : b1 * 257u);
    else if (p.substrate != ALKT_SUBSTRATE_UNIX)
        p.port = (uint16_t)((b0 & 0x40) ? b1 : b1 * 257u);
    if (hk == 1) {
        memcpy(&p.host.ip, data + 2, room < sizeof p.host.ip ? room : sizeof p.host.ip);
        if (b0 & 0x80) p.host.ip.family = (b1 & 1) ? 6 : 4;
    }
    len = b1 % ((room < ALKT_HOST_MAX ? room : ALKT_HOST_MAX) + 1);
    if (hk == 2) {
        memcpy(p.host.name, data + 2, len);
        len = strlen(p.host.name);
        memset(p.host.name + len, 0, sizeof p.host.name - len);
    }
    p.host.kind = (alkt_host_kind)hk;
    if (p.kind == ALKT_OPEN_DIRECT && p.substrate == ALKT_SUBSTRATE_UNIX) {
        len = b1 % ((room < ALKT_UNIX_PATH_MAX ? room : ALKT_UNIX_PATH_MAX) + 1);
        memcpy(p.path, data + 2, len);
        len = strlen(p.path);
        memset(p.path + len, 0, sizeof p.path - len);
    }
    bad_ip = hk == 1 && p.host.ip.family != 4 && p.host.ip.family != 6;
    for (i = 4; hk == 1 && p.host.ip.family == 4 && i < 16; i++)
        bad_ip |= p.host.ip.bytes[i] != 0;
    n = alkt_open_params_encode(&p, enc1, sizeof enc1, &e);
    alk_trace("open encode of raw bytes: %ld (%s) '%s'", (long)n,
              n < 0 ? alkt_strerror((int)n) : "ok", n < 0 ? e.path : "");
    if (n < 0) {
        ALK_CHECK(e.code == (int)n, "open encode returned %ld, error %d", (long)n, e.code);
        if (!strcmp(e.path, "path"))
            ALK_CHECK(!p.path[0] || !utf8_ok(p.path, strlen(p.path)),
                      "open encode refused the path '%s'", p.path);
        else if (!strcmp(e.path, "port") || !strcmp(e.path, "listen"))
            ALK_CHECK((!strcmp(e.path, "port") ? p.port : p.listen) == 0,
                      "open encode refused %s %u", e.path, (unsigned)p.port);
        else if (!strcmp(e.path, "substrate"))
            ALK_CHECK(p.kind == ALKT_OPEN_FORWARDED && p.substrate == ALKT_SUBSTRATE_UNIX,
                      "open encode refused substrate %d (kind %d)", (int)p.substrate,
                      (int)p.kind);
        else if (!strcmp(e.path, "host"))
            ALK_CHECK((hk == 0 && p.kind == ALKT_OPEN_DIRECT) || bad_ip ||
                          (hk == 2 && (p.kind == ALKT_OPEN_FORWARDED ||
                                       !addr_ref_hostname(p.host.name,
                                                          strlen(p.host.name)))),
                      "open encode refused the host (kind %u)", hk);
        else
            ALK_CHECK(0, "open encode refused with %d at '%s'", e.code, e.path);
        return;
    }
    ALK_CHECK(n > 0, "open encode wrote nothing and said OK");
    rc = alkt_open_params_decode(enc1, (size_t)n, NULL, &p2, &e);
    ALK_CHECK(rc == ALKT_OK && memcmp(&p, &p2, sizeof p) == 0,
              "open encode wrote %.*s for a struct it does not decode back to (%d)",
              (int)n, enc1, rc);
}

/* An open struct of no kind (ALKT_OPEN_NONE, or past the enum) is refused
 * with ALKT_ERR_BAD_ENUM at "kind" - its other fields those of a valid
 * direct TCP or UDP open, or of a valid unix one - not written as if it
 * were one of the kinds: no document decodes to it. Once per process. */
static void check_open_encode_kind(void)
{
    static int done;
    static const int kinds[] = {ALKT_OPEN_NONE, ALKT_OPEN_FORWARDED + 1, 255};
    alkt_open_params p;
    alkt_error e;
    ptrdiff_t n;
    size_t k;
    if (done) return;
    done = 1;
    for (k = 0; k < 3 * (sizeof kinds / sizeof kinds[0]); k++) {
        memset(&p, 0, sizeof p);
        p.kind = (alkt_open_kind)kinds[k / 3];
        p.substrate = (alkt_substrate)(ALKT_SUBSTRATE_TCP + k % 3);
        if (p.substrate == ALKT_SUBSTRATE_UNIX) {
            memcpy(p.path, "/s", 2);
        } else {
            p.host.kind = ALKT_HOST_NAME;
            memcpy(p.host.name, "a", 1);
            p.port = 1;
        }
        memset(&e, 0xA5, sizeof e);
        n = alkt_open_params_encode(&p, enc1, sizeof enc1, &e);
        ALK_CHECK(n == ALKT_ERR_BAD_ENUM && e.code == ALKT_ERR_BAD_ENUM &&
                      strcmp(e.path, "kind") == 0,
                  "open encode of kind %d (substrate %d): %td at '%.20s', not "
                  "ALKT_ERR_BAD_ENUM at \"kind\"", kinds[k / 3], (int)p.substrate, n,
                  n < 0 ? e.path : "");
        ALK_CHECK(alkt_open_params_encode(&p, NULL, 0, &e) == ALKT_ERR_BAD_ENUM,
                  "open encode of kind %d: the size query does not refuse it",
                  kinds[k / 3]);
    }
}

typedef struct control_mem {
    alkt_resource resources[PARAMS_CAP];
    alkt_authorization authorizations[PARAMS_CAP];
    alkt_revocation revocations[PARAMS_CAP];
    alkt_relay relays[PARAMS_CAP];
} control_mem;

static void control_setup(alkt_control *c, control_mem *m)
{
    memset(c, 0, sizeof *c);
    memset(m, 0, sizeof *m);
    c->resources = m->resources;
    c->authorizations = m->authorizations;
    c->revocations = m->revocations;
    c->relays = m->relays;
    c->resource_cap = c->authorization_cap = PARAMS_CAP;
    c->revocation_cap = c->relay_cap = PARAMS_CAP;
}

/* The fast path may decline anything, but what it accepts the reference
 * (token-based) decoder accepts with the identical result; the public
 * decoder answers exactly as the reference does. */
static void check_control_paths(const uint8_t *data, size_t size,
                                const alkt_control *pub, int pub_rc,
                                const alkt_error *pub_err)
{
    static control_mem mf, ms;
    alkt_control cf, cs;
    alkt_error es;
    int fast, slow;
    control_setup(&cf, &mf);
    control_setup(&cs, &ms);
    fast = alkt__control_fast((const char *)data, size, NULL, &cf);
    slow = alkt__control_slow((const char *)data, size, NULL, &cs, &es);
    alk_trace("control paths: fast %s, reference %d", fast ? "accepts" : "declines",
              slow);
    ALK_CHECK(!fast || (slow == ALKT_OK && control_equal(&cf, &cs)),
              "fast path accepted what the reference says %d to, or differs",
              slow);
    ALK_CHECK(pub_rc == slow && (slow != ALKT_OK || control_equal(pub, &cs)),
              "public decode %d, reference %d", pub_rc, slow);
    if (slow)
        ALK_CHECK(pub_err->code == es.code && pub_err->offset == es.offset &&
                      strcmp(pub_err->path, es.path) == 0,
                  "public error differs from the reference's");
}

static void check_control(const uint8_t *data, size_t size, int reader,
                          size_t reader_off)
{
    static control_mem m1, m2, m3;
    alkt_control c, c2, c3;
    alkt_error e;
    size_t n = 0;
    int rc;
    control_setup(&c, &m1);
    rc = alkt_control_decode((const char *)data, size, NULL, &c, &e);
    check_control_paths(data, size, &c, rc, &e);
    alk_trace("control: %d (%s) at %zu path '%s'", rc, alkt_strerror(rc),
              e.offset, e.path);
    ALK_CHECK(c.resources == m1.resources && c.resource_cap == PARAMS_CAP &&
                  c.relays == m1.relays && c.relay_cap == PARAMS_CAP,
              "control: caller arrays not kept");
    if (rc) {
        check_typed_error("control", rc, &e, data, size, reader, reader_off);
        ALK_CHECK(!c.has_resources && !c.has_authorizations &&
                      !c.has_revocations && !c.has_relays &&
                      c.resource_count == 0 && c.relay_count == 0 &&
                      c.authorization_count == 0 && c.revocation_count == 0,
                  "control: sections left set on error");
        return;
    }
    ALK_CHECK(reader == ALKT_OK, "control accepted invalid JSON");
    ALK_CHECK(c.resource_count <= PARAMS_CAP &&
                  c.authorization_count <= PARAMS_CAP &&
                  c.revocation_count <= PARAMS_CAP &&
                  c.relay_count <= PARAMS_CAP,
              "control: count past capacity");
    for (n = 0; n < c.resource_count; n++)
        check_cidr_value("control resource", &c.resources[n]);
    for (n = 0; n < c.relay_count; n++)
        check_host_value("control relay", &c.relays[n].address);
    n = 0;
    CHECK_ENCODE("control", alkt_control_encode(&c, enc1, sizeof enc1, &ee),
                 alkt_control_encode(&c, NULL, 0, &ee),
                 alkt_control_encode(&c, enc2, (size_t)need - 1, &ee), n);
    control_setup(&c2, &m2);
    rc = alkt_control_decode(enc1, n, NULL, &c2, &e);
    ALK_CHECK(rc == ALKT_OK, "control: encoding refused: %s at %zu '%s'",
              alkt_strerror(rc), e.offset, e.path);
    ALK_CHECK(control_equal(&c, &c2), "control: decode(encode(c)) != c: %.*s",
              (int)n, enc1);
    /* canonical documents take the fast path unless a token needs escapes */
    control_setup(&c3, &m3);
    ALK_CHECK(alkt__control_fast(enc1, n, NULL, &c3) ==
                  (memchr(enc1, '\\', n) == NULL),
              "fast path on a canonical document: %.*s", (int)n, enc1);
    if (memchr(enc1, '\\', n) == NULL) {
        /* and with whitespace between its tokens */
        size_t sn = space_out(enc1, (size_t)n);
        control_setup(&c3, &m3);
        ALK_CHECK(sn && alkt__control_fast(spaced, sn, NULL, &c3) && control_equal(&c, &c3),
                  "fast path on a spaced canonical document: %.*s", (int)sn, spaced);
    }
    ALK_CHECK(alkt_control_encode(&c2, enc2, sizeof enc2, &e) ==
                      (ptrdiff_t)n &&
                  memcmp(enc1, enc2, n) == 0,
              "control: encoding not a fixed point");
}

/* ---- the typed values against addr_ref.h ------------------------------------
 * Every string and number token of the input is planted into each position
 * of the schemas that takes a host, an IP, a CIDR, an integer or a key, in
 * an otherwise valid document, and the decoders' verdict (code, offset,
 * path, decoded value) must be the reference's; accepted values must
 * encode to the reference's canonical text. So one corpus string such as
 * "010.0.0.1" is tried as a direct host, a bind address, a listen reply,
 * a relay address and a CIDR, through the control fast path too. */
#define PLANT_STRINGS 48
#define PLANT_NUMBERS 12
#define PLANT_RAW_MAX 1024 /* raw string bytes planted (host max 253) */

typedef struct planted_values {
    size_t str_off[PLANT_STRINGS], str_len[PLANT_STRINGS], nstr;
    size_t num_off[PLANT_NUMBERS], num_len[PLANT_NUMBERS], nnum;
} planted_values;

static int seen_before(const uint8_t *data, const size_t *off,
                       const size_t *len, size_t count, size_t o, size_t n)
{
    size_t k;
    for (k = 0; k < count; k++) {
        if (len[k] == n && memcmp(data + off[k], data + o, n) == 0)
            return 1;
    }
    return 0;
}

/* Raw spans (a string with its quotes) of the tokens the reader gives
 * before its END or first error, each distinct one once. */
static void gather_values(const uint8_t *data, size_t size, planted_values *v)
{
    alkt_json_parser p;
    alkt_json_token t;
    v->nstr = v->nnum = 0;
    if (alkt_json_init(&p, (const char *)data, size, NULL) != ALKT_OK)
        return;
    while (alkt_json_next(&p, &t) == ALKT_OK && t.type != ALKT_JSON_END) {
        if ((t.type == ALKT_JSON_STRING || t.type == ALKT_JSON_KEY) &&
            t.len <= PLANT_RAW_MAX && v->nstr < PLANT_STRINGS &&
            !seen_before(data, v->str_off, v->str_len, v->nstr, t.offset,
                         t.len + 2)) {
            v->str_off[v->nstr] = t.offset;
            v->str_len[v->nstr++] = t.len + 2;
        } else if (t.type == ALKT_JSON_NUMBER && t.len <= 40 &&
                   v->nnum < PLANT_NUMBERS &&
                   !seen_before(data, v->num_off, v->num_len, v->nnum,
                                t.offset, t.len)) {
            v->num_off[v->nnum] = t.offset;
            v->num_len[v->nnum++] = t.len;
        }
    }
}

/* The verdict the reference expects: code, offset and path, or for a
 * value the reader refuses, whatever json_ref says (READER). alt_code: a
 * second acceptable verdict where two rules meet and the header does not
 * order them. */
#define EXPECT_READER 1
typedef struct expect {
    int code;
    size_t offset;
    char path[ALKT_PATH_MAX];
    int alt_code;
    size_t alt_offset;
} expect;

static void expect_set(expect *x, int code, size_t offset, const char *path)
{
    memset(x, 0, sizeof *x);
    x->code = code;
    x->offset = offset;
    snprintf(x->path, sizeof x->path, "%s", path);
}

static void check_verdict(const char *what, const char *doc, size_t n, int rc,
                          const alkt_error *e, const expect *x)
{
    alk_trace("%s: %.*s -> %d (%s) at %zu '%s'", what, (int)(n > 100 ? 100 : n),
              doc, rc, alkt_strerror(rc), e->offset, e->path);
    if (x->code == EXPECT_READER) {
        size_t ref_off = 0;
        ALK_CHECK(!json_ref_validate((const uint8_t *)doc, n,
                                     ALKT_JSON_DEPTH_DEFAULT, &ref_off),
                  "%s: the reference calls the value malformed JSON, "
                  "json_ref accepts %.*s", what, (int)n, doc);
        ALK_CHECK(is_reader_code(rc) && e->offset == ref_off,
                  "%s: %d (%s) at %zu, the reader's error at %zu expected: "
                  "%.*s", what, rc, alkt_strerror(rc), e->offset, ref_off,
                  (int)n, doc);
        return;
    }
    if (rc == ALKT_OK) /* a success leaves no error behind */
        ALK_CHECK(e->code == 0 && e->offset == 0 && e->line == 0 && e->column == 0 &&
                      !e->path[0],
                  "%s: accepted, yet the error says %d at %zu (%zu:%zu) '%s'", what,
                  e->code, e->offset, e->line, e->column, e->path);
    if (x->alt_code && rc == x->alt_code && e->offset == x->alt_offset)
        return;
    ALK_CHECK(rc == x->code, "%s: %d (%s), the reference says %d (%s): %.*s",
              what, rc, alkt_strerror(rc), x->code, alkt_strerror(x->code),
              (int)n, doc);
    if (rc)
        ALK_CHECK(e->offset == x->offset && strcmp(e->path, x->path) == 0,
                  "%s: %s at %zu '%s', the reference says at %zu '%s': %.*s",
                  what, alkt_strerror(rc), e->offset, e->path, x->offset,
                  x->path, (int)n, doc);
}

/* doc = before + value + after; *at = the value's offset. */
static size_t plant(char *doc, size_t cap, const char *before,
                    const char *value, size_t value_len, const char *after,
                    size_t *at)
{
    size_t b = strlen(before), a = strlen(after);
    ALK_CHECK(b + value_len + a <= cap, "planted document too long");
    memcpy(doc, before, b);
    memcpy(doc + b, value, value_len);
    memcpy(doc + b + value_len, after, a);
    *at = b;
    return b + value_len + a;
}

/* A string field of at most cap bytes, raw (with quotes) at offset at:
 * 1 with the text in text/len, or 0 with the error in *x. A value over
 * cap is too_long_code; an unpaired surrogate is reported at its escape -
 * or, when the text before it already fills the field, as too long. */
static int string_field(const char *raw, size_t raw_len, size_t cap,
                        int too_long_code, size_t at, const char *path,
                        char *text, size_t text_cap, size_t *len, expect *x)
{
    size_t bad = 0, before = 0, unused = 0;
    if (!addr_ref_unescape(raw + 1, raw_len - 2, text, text_cap, len, &bad)) {
        expect_set(x, ALKT_ERR_BAD_SURROGATE, at + 1 + bad, path);
        addr_ref_unescape(raw + 1, bad, text, text_cap, &before, &unused);
        if (before + 4 > cap) {
            x->alt_code = too_long_code;
            x->alt_offset = at;
        }
        return 0;
    }
    if (*len > cap) {
        expect_set(x, too_long_code, at, path);
        return 0;
    }
    if (memchr(text, 0, *len)) {
        expect_set(x, ALKT_ERR_NUL_IN_STRING, at, path);
        return 0;
    }
    text[*len] = '\0';
    return 1;
}

/* What a HOST field (names allowed) says of the text. */
static int host_verdict(const char *text, size_t len, addr_ref_ip_t *ip)
{
    switch (addr_ref_host(text, len, ip)) {
    case ADDR_REF_HOST_IP:
    case ADDR_REF_HOST_NAME: return ALKT_OK;
    case ADDR_REF_HOST_EMPTY: return ALKT_ERR_EMPTY;
    case ADDR_REF_HOST_BAD_ADDRESS: return ALKT_ERR_BAD_ADDRESS;
    default: return ALKT_ERR_BAD_HOSTNAME;
    }
}

static int ip_equal(const alkt_ip *ip, const addr_ref_ip_t *ref)
{
    return ip->family == ref->family &&
           memcmp(ip->bytes, ref->bytes, sizeof ip->bytes) == 0;
}

/* alkt_ip_format against the RFC 5952 formatter; the text parses back to
 * the same address by both parsers. */
static void check_format(const char *what, const alkt_ip *ip)
{
    char got[ALKT_IP_TEXT_MAX], want[64];
    addr_ref_ip_t ref, back;
    alkt_ip again;
    size_t n;
    memset(&ref, 0, sizeof ref);
    ref.family = ip->family;
    memcpy(ref.bytes, ip->bytes, sizeof ref.bytes);
    n = alkt_ip_format(ip, got);
    addr_ref_format(&ref, want);
    ALK_CHECK(n == strlen(got) && strcmp(got, want) == 0,
              "%s: formatted '%s', RFC 5952 says '%s'", what, got, want);
    ALK_CHECK(addr_ref_ip(want, strlen(want), &back) &&
                  back.family == ref.family &&
                  memcmp(back.bytes, ref.bytes, 16) == 0,
              "%s: the reference does not read back '%s'", what, want);
    ALK_CHECK(alkt_ip_parse(got, n, &again) == ALKT_OK &&
                  memcmp(&again, ip, sizeof again) == 0,
              "%s: '%s' does not parse back", what, got);
    ALK_CHECK(alkt_ip_parse(NULL, n, &again) == ALKT_ERR_ARG &&
                  alkt_ip_parse(got, n, NULL) == ALKT_ERR_ARG,
              "%s: alkt_ip_parse took a NULL text or a NULL out", what);
}

/* The encoding holds `"key":"value"` or `"key":value` exactly. */
static void check_encoded(const char *what, const char *enc, ptrdiff_t n,
                          const char *needle)
{
    size_t k, m = strlen(needle);
    int found = 0;
    ALK_CHECK(n > 0, "%s: encoding failed: %td", what, n);
    for (k = 0; k + m <= (size_t)n && !found; k++)
        found = memcmp(enc + k, needle, m) == 0 &&
                (k + m == (size_t)n || enc[k + m] == ',' || enc[k + m] == '}');
    ALK_CHECK(found, "%s: %s not in the encoding %.*s", what, needle, (int)n,
              enc);
}

/* A control document through the public decoder, the token-based decoder
 * and the fast path: the public and the slow verdict are the reference's;
 * the fast path accepts only what the reference accepts, identically, and
 * accepts it whenever `plain` (no escapes, ASCII, a canonical value). */
static int control_planted(const char *what, const char *doc, size_t n,
                           const expect *x, int plain, alkt_control *out)
{
    static control_mem mp, ms, mf;
    alkt_control cs, cf;
    alkt_error e, es;
    int rc, slow, fast;
    control_setup(out, &mp);
    control_setup(&cs, &ms);
    control_setup(&cf, &mf);
    rc = alkt_control_decode(doc, n, NULL, out, &e);
    check_verdict(what, doc, n, rc, &e, x);
    slow = alkt__control_slow(doc, n, NULL, &cs, &es);
    check_verdict(what, doc, n, slow, &es, x);
    fast = alkt__control_fast(doc, n, NULL, &cf);
    ALK_CHECK(!fast || (rc == ALKT_OK && control_equal(&cf, &cs)),
              "%s: the fast path accepts what the reference refuses (%s), or "
              "differs: %.*s", what, alkt_strerror(x->code), (int)n, doc);
    ALK_CHECK(fast || !plain || x->code != ALKT_OK,
              "%s: the fast path declines a plain valid document: %.*s", what,
              (int)n, doc);
    return rc;
}

static int plain_ascii(const char *s, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) {
        if (s[k] < 0x20 || s[k] > 0x7E || s[k] == '\\')
            return 0;
    }
    return 1;
}

/* One string in every host / IP / CIDR position. */
static void plant_address(const char *raw, size_t raw_len)
{
    static char doc[PLANT_RAW_MAX + 256], enc[512];
    char text[PLANT_RAW_MAX + 1], want[PLANT_RAW_MAX + 32];
    alkt_open_params p;
    alkt_listen_reply r;
    alkt_control c;
    alkt_error e;
    addr_ref_ip_t ip;
    expect x;
    size_t n, at, len;
    unsigned prefix = 0;
    int rc, have, plain = plain_ascii(raw + 1, raw_len - 2);

    /* a direct open's host: an IP or a name */
    n = plant(doc, sizeof doc, "{\"substrate\":\"tcp\",\"host\":", raw,
              raw_len, ",\"port\":1}", &at);
    have = string_field(raw, raw_len, ALKT_HOST_MAX, ALKT_ERR_STRING_TOO_LONG, at,
                        "host", text, sizeof text, &len, &x);
    if (have) {
        expect_set(&x, host_verdict(text, len, &ip), at, "host");
        /* the public name rule: exactly 1 or 0, as the reference */
        ALK_CHECK(alkt_hostname_valid(text, len) == addr_ref_hostname(text, len),
                  "alkt_hostname_valid('%.*s') = %d, the reference %d", (int)len, text,
                  alkt_hostname_valid(text, len), addr_ref_hostname(text, len));
    }
    rc = alkt_open_params_decode(doc, n, NULL, &p, &e);
    check_open_paths("planted", doc, n, &p, rc, &e);
    check_verdict("host", doc, n, rc, &e, &x);
    if (have) { /* the builder says of the same text what the decoder says */
        alkt_open_params q;
        int rq = alkt_open_params_direct(&q, ALKT_SUBSTRATE_TCP, text, len, 1);
        ALK_CHECK(rq == rc && memcmp(&q, &p, sizeof q) == 0,
                  "alkt_open_params_direct('%s') = %d (%s), the decoder %d (%s)%s", text, rq,
                  alkt_strerror(rq), rc, alkt_strerror(rc),
                  rq == rc ? ", other params" : "");
    }
    if (rc == ALKT_OK) {
        if (ip.family) {
            ALK_CHECK(p.host.kind == ALKT_HOST_IP && ip_equal(&p.host.ip, &ip),
                      "host: '%s' decoded to another address", text);
            check_format("host", &p.host.ip);
            addr_ref_format(&ip, text);
        } else {
            ALK_CHECK(p.host.kind == ALKT_HOST_NAME &&
                          strcmp(p.host.name, text) == 0,
                      "host: the name '%s' decoded as '%s'", text, p.host.name);
        }
        snprintf(want, sizeof want, "\"host\":\"%s\"", text);
        check_encoded("host", enc, alkt_open_params_encode(&p, enc, sizeof enc,
                                                          &e), want);
    }

    /* a forwarded open's bind address: an IP literal only */
    n = plant(doc, sizeof doc, "{\"listen\":1,\"substrate\":\"tcp\",\"host\":",
              raw, raw_len, "}", &at);
    if (string_field(raw, raw_len, ALKT_HOST_MAX, ALKT_ERR_STRING_TOO_LONG,
                     at, "host", text, sizeof text, &len, &x)) {
        rc = host_verdict(text, len, &ip);
        expect_set(&x, rc == ALKT_OK && !ip.family ? ALKT_ERR_BAD_ADDRESS : rc,
                   at, "host");
    }
    rc = alkt_open_params_decode(doc, n, NULL, &p, &e);
    check_open_paths("planted", doc, n, &p, rc, &e);
    check_verdict("bind address", doc, n, rc, &e, &x);
    if (rc == ALKT_OK) {
        ALK_CHECK(p.host.kind == ALKT_HOST_IP && ip_equal(&p.host.ip, &ip),
                  "bind address: '%s' decoded to another address", text);
        addr_ref_format(&ip, text);
        snprintf(want, sizeof want, "\"host\":\"%s\"", text);
        check_encoded("bind address", enc,
                      alkt_open_params_encode(&p, enc, sizeof enc, &e), want);
    }

    /* a listen reply's address: an IP literal, malformed whatever it is */
    n = plant(doc, sizeof doc, "{\"address\":", raw, raw_len, ",\"port\":1}",
              &at);
    if (string_field(raw, raw_len, ALKT_IP_TEXT_MAX - 1, ALKT_ERR_BAD_ADDRESS,
                     at, "address", text, sizeof text, &len, &x))
        expect_set(&x, addr_ref_ip(text, len, &ip) ? ALKT_OK
                                                   : ALKT_ERR_BAD_ADDRESS,
                   at, "address");
    rc = alkt_listen_reply_decode(doc, n, NULL, &r, &e);
    check_verdict("listen address", doc, n, rc, &e, &x);
    if (rc == ALKT_OK) {
        ALK_CHECK(ip_equal(&r.address, &ip),
                  "listen address: '%s' decoded to another address", text);
        check_format("listen address", &r.address);
        addr_ref_format(&ip, text);
        snprintf(want, sizeof want, "\"address\":\"%s\"", text);
        check_encoded("listen address", enc,
                      alkt_listen_reply_encode(&r, enc, sizeof enc, &e), want);
    }

    /* a relay's address: a HOST, through the fast path too */
    n = plant(doc, sizeof doc, "{\"relays\":[{\"id\":\"x\",\"address\":", raw,
              raw_len, ",\"port\":1,\"token\":\"t\"}]}", &at);
    if (string_field(raw, raw_len, ALKT_HOST_MAX, ALKT_ERR_STRING_TOO_LONG,
                     at, "relays[0].address", text, sizeof text, &len, &x))
        expect_set(&x, host_verdict(text, len, &ip), at, "relays[0].address");
    rc = control_planted("relay address", doc, n, &x, plain, &c);
    if (rc == ALKT_OK) {
        const alkt_host *h = &c.relays[0].address;
        ALK_CHECK(ip.family ? h->kind == ALKT_HOST_IP && ip_equal(&h->ip, &ip)
                            : h->kind == ALKT_HOST_NAME &&
                                  strcmp(h->name, text) == 0,
                  "relay address: '%s' decoded to another host", text);
        if (ip.family)
            addr_ref_format(&ip, text);
        snprintf(want, sizeof want, "\"address\":\"%s\"", text);
        check_encoded("relay address", enc,
                      alkt_control_encode(&c, enc, sizeof enc, &e), want);
    }

    /* a resource's CIDR, through the fast path too */
    n = plant(doc, sizeof doc, "{\"resources\":[{\"id\":\"r\",\"cidr\":", raw,
              raw_len, ",\"gateway\":\"g\"}]}", &at);
    if (string_field(raw, raw_len, ALKT_IP_TEXT_MAX + 3, ALKT_ERR_BAD_CIDR,
                     at, "resources[0].cidr", text, sizeof text, &len, &x))
        expect_set(&x, addr_ref_cidr(text, len, &ip, &prefix)
                           ? ALKT_OK
                           : ALKT_ERR_BAD_CIDR,
                   at, "resources[0].cidr");
    rc = control_planted("cidr", doc, n, &x, plain, &c);
    if (rc == ALKT_OK) {
        ALK_CHECK(ip_equal(&c.resources[0].network, &ip) &&
                      c.resources[0].prefix_len == prefix,
                  "cidr: '%s' decoded to another network", text);
        check_format("cidr", &c.resources[0].network);
        addr_ref_format(&ip, text);
        snprintf(want, sizeof want, "\"cidr\":\"%s/%u\"", text, prefix);
        check_encoded("cidr", enc, alkt_control_encode(&c, enc, sizeof enc, &e),
                      want);
    }
}

/* What an ID (1..64 bytes of [A-Za-z0-9._:-]) or a TOKEN (1..128 bytes of
 * 0x21..0x7E) field says of the text, from the SCHEMAS in the header's
 * top comment - not from its character tables. */
static int id_verdict(const char *text, size_t len)
{
    size_t k;
    if (len == 0)
        return ALKT_ERR_EMPTY;
    for (k = 0; k < len; k++) {
        char ch = text[k];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
              (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == ':' || ch == '-'))
            return ALKT_ERR_BAD_VALUE;
    }
    return ALKT_OK;
}

static int token_verdict(const char *text, size_t len)
{
    size_t k;
    if (len == 0)
        return ALKT_ERR_EMPTY;
    for (k = 0; k < len; k++)
        if ((unsigned char)text[k] < 0x21 || (unsigned char)text[k] > 0x7e)
            return ALKT_ERR_BAD_VALUE;
    return ALKT_OK;
}

/* The decoded text of the planted field (a resource's id, a relay's token). */
static const char *field_resource_id(const alkt_control *c) { return c->resources[0].id; }
static int proto_verdict(const char *t, size_t n)
{
    return (n == 3 && (!memcmp(t, "tcp", 3) || !memcmp(t, "udp", 3))) ||
                   (n == 4 && !memcmp(t, "icmp", 4))
               ? ALKT_OK
               : ALKT_ERR_BAD_ENUM;
}
static const char *field_proto(const alkt_control *c)
{
    unsigned b = c->resources[0].protocols;
    return b == ALKT_PROTO_TCP ? "tcp" : b == ALKT_PROTO_UDP ? "udp"
                                     : b == ALKT_PROTO_ICMP ? "icmp" : "?";
}
static const char *field_relay_token(const alkt_control *c) { return c->relays[0].token; }

/* One string planted into a string field of a control message: the
 * decoders' verdict is the rule's (verdict), and what they accept decodes
 * to the text itself. */
static void plant_string_field(const char *what, const char *before, const char *after,
                               const char *path, size_t cap, int too_long_code,
                               int (*verdict)(const char *, size_t),
                               const char *(*field)(const alkt_control *),
                               const char *raw, size_t raw_len)
{
    static char doc[PLANT_RAW_MAX + 256];
    char text[PLANT_RAW_MAX + 1];
    alkt_control c;
    expect x;
    size_t n, at, len;
    int rc;
    n = plant(doc, sizeof doc, before, raw, raw_len, after, &at);
    if (string_field(raw, raw_len, cap, too_long_code, at, path, text, sizeof text, &len,
                     &x))
        expect_set(&x, verdict(text, len), at, path);
    rc = control_planted(what, doc, n, &x, plain_ascii(raw + 1, raw_len - 2), &c);
    if (rc == ALKT_OK)
        ALK_CHECK(strcmp(field(&c), text) == 0, "%s: '%s' decoded as '%s'", what, text,
                  field(&c));
}

/* One string in an ID position (a resource's id) and a TOKEN position (a
 * relay's token), through the fast path too. */
static void plant_id_token(const char *raw, size_t raw_len)
{
    plant_string_field("id", "{\"resources\":[{\"id\":",
                       ",\"cidr\":\"10.0.0.0/8\",\"gateway\":\"g\"}]}", "resources[0].id",
                       ALKT_ID_MAX, ALKT_ERR_STRING_TOO_LONG, id_verdict, field_resource_id,
                       raw, raw_len);
    plant_string_field("token",
                       "{\"relays\":[{\"id\":\"r\",\"address\":\"10.0.0.1\",\"port\":1,"
                       "\"token\":",
                       "}]}", "relays[0].token", ALKT_TOKEN_MAX, ALKT_ERR_STRING_TOO_LONG,
                       token_verdict, field_relay_token, raw, raw_len);
    /* and as a protocol: one of three names, anything else (longer than
     * 15 bytes too) BAD_ENUM */
    plant_string_field("protocol",
                       "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\","
                       "\"protocols\":[",
                       "],\"gateway\":\"g\"}]}", "resources[0].protocols[0]", 15,
                       ALKT_ERR_BAD_ENUM, proto_verdict, field_proto, raw, raw_len);
}

/* One string as the last key of every schema's object (each field of the
 * schema already present): a key that means a schema name - escapes
 * decoded - is a duplicate, any other unknown, at the key. */
typedef struct key_schema {
    const char *before, *after; /* the document around the key */
    const char *path;           /* the object's path ("" at the top) */
    const char *names[6];
} key_schema;

static const key_schema key_schemas[] = {
    {"{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1,\"path\":\"/p\","
     "\"listen\":1,", ":1}", "",
     {"substrate", "host", "port", "path", "listen", NULL}},
    {"{\"address\":\"192.0.2.1\",\"port\":1,", ":1}", "",
     {"address", "port", NULL}},
    {"{\"resources\":[],\"authorizations\":[],\"revocations\":[],"
     "\"relays\":[],", ":[]}", "",
     {"resources", "authorizations", "revocations", "relays", NULL}},
    {"{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
     "[{\"from\":1,\"to\":2}],\"protocols\":[\"tcp\"],\"gateway\":\"g\",",
     ":1}]}", "resources[0]",
     {"id", "cidr", "ports", "protocols", "gateway", NULL}},
    {"{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
     "[{\"from\":1,\"to\":2,", ":1}],\"gateway\":\"g\"}]}",
     "resources[0].ports[0]", {"from", "to", NULL}},
    {"{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\",\"secret\":"
     "\"000102030405060708090a0b0c0d0e0f\",\"expires\":1,", ":1}]}",
     "authorizations[0]", {"client", "resource", "secret", "expires", NULL}},
    {"{\"revocations\":[{\"client\":\"c\",\"resource\":\"r\",", ":1}]}",
     "revocations[0]", {"client", "resource", NULL}},
    /* every name is in the document before the plant, so a planted name is
     * a duplicate (offer_key was listed and not written: planted, it was
     * a first offer_key of the wrong type, and the oracle said duplicate) */
    {"{\"relays\":[{\"id\":\"x\",\"address\":\"a\",\"port\":1,\"token\":"
     "\"t\",\"offer_key\":\"000102030405060708090a0b0c0d0e0f\",", ":1}]}",
     "relays[0]", {"id", "address", "port", "token", "offer_key", NULL}},
};

/* The path the header promises for an unknown key: raw bytes, those
 * outside 0x21..0x7E as '?', cut after 32 with "...", "" shown quoted. */
static void unknown_key_path(char *out, size_t cap, const char *object,
                             const char *raw, size_t raw_len)
{
    size_t o = 0, k, n = raw_len - 2;
    o += (size_t)snprintf(out, cap, "%s%s", object, *object ? "." : "");
    if (n == 0) {
        snprintf(out + o, cap - o, "\"\"");
        return;
    }
    for (k = 0; k < n && k < 32; k++) {
        unsigned char ch = (unsigned char)raw[1 + k];
        out[o++] = (char)(ch < 0x21 || ch > 0x7E ? '?' : ch);
    }
    out[o] = '\0';
    if (n > 32)
        snprintf(out + o, cap - o, "...");
}

static void plant_key(const char *raw, size_t raw_len)
{
    static char doc[PLANT_RAW_MAX + 512];
    size_t s, k, n, at, bad = 0, before = 0, unused = 0;
    char text[64];
    for (s = 0; s < sizeof key_schemas / sizeof key_schemas[0]; s++) {
        const key_schema *ks = &key_schemas[s];
        alkt_open_params p;
        alkt_listen_reply r;
        alkt_control c;
        alkt_error e;
        expect x;
        int rc, match = 0;
        n = plant(doc, sizeof doc, ks->before, raw, raw_len, ks->after, &at);
        for (k = 0; ks->names[k] && !match; k++) {
            match = addr_ref_key_is(raw + 1, raw_len - 2, ks->names[k], &bad);
            if (match == 1) {
                char path[ALKT_PATH_MAX];
                snprintf(path, sizeof path, "%s%s%s", ks->path,
                         *ks->path ? "." : "", ks->names[k]);
                expect_set(&x, ALKT_ERR_DUPLICATE_FIELD, at, path);
            }
        }
        if (match < 0) {
            expect_set(&x, ALKT_ERR_BAD_SURROGATE, at + 1 + bad, ks->path);
            /* a key longer than every name may be judged unknown first */
            addr_ref_unescape(raw + 1, bad, text, sizeof text, &before,
                              &unused);
            if (before + 4 > 32) {
                x.alt_code = ALKT_ERR_UNKNOWN_FIELD;
                x.alt_offset = at;
            }
        } else if (!match) {
            expect_set(&x, ALKT_ERR_UNKNOWN_FIELD, at, "");
            unknown_key_path(x.path, sizeof x.path, ks->path, raw, raw_len);
        }
        if (s == 0) {
            rc = alkt_open_params_decode(doc, n, NULL, &p, &e);
            check_open_paths("planted", doc, n, &p, rc, &e);
            check_verdict("open params key", doc, n, rc, &e, &x);
        } else if (s == 1) {
            rc = alkt_listen_reply_decode(doc, n, NULL, &r, &e);
            check_verdict("listen reply key", doc, n, rc, &e, &x);
        } else {
            control_planted("control key", doc, n, &x, 0, &c);
        }
    }
}

/* Integer positions: the document around the value, its path and range. */
typedef struct int_position {
    const char *before, *after, *path;
    uint64_t min, max;
    int kind; /* 0 open params, 1 listen reply, 2 control */
} int_position;

static const int_position int_positions[] = {
    {"{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":", "}", "port", 1,
     65535, 0},
    {"{\"listen\":", ",\"substrate\":\"tcp\"}", "listen", 1, 65535, 0},
    {"{\"address\":\"192.0.2.1\",\"port\":", "}", "port", 1, 65535, 1},
    {"{\"relays\":[{\"id\":\"x\",\"address\":\"a\",\"port\":",
     ",\"token\":\"t\"}]}", "relays[0].port", 1, 65535, 2},
    {"{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
     "[{\"from\":", ",\"to\":65535}],\"gateway\":\"g\"}]}",
     "resources[0].ports[0].from", 1, 65535, 2},
    {"{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
     "[{\"from\":1,\"to\":", "}],\"gateway\":\"g\"}]}",
     "resources[0].ports[0].to", 1, 65535, 2},
    {"{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\",\"secret\":"
     "\"000102030405060708090a0b0c0d0e0f\",\"expires\":", "}]}",
     "authorizations[0].expires", 0, ALKT_EXPIRES_MAX, 2},
};

static uint64_t int_field(const alkt_open_params *p, const alkt_listen_reply *r,
                          const alkt_control *c, size_t position)
{
    switch (position) {
    case 0: return p->port;
    case 1: return p->listen;
    case 2: return r->port;
    case 3: return c->relays[0].port;
    case 4: return c->resources[0].port_ranges[0].from;
    case 5: return c->resources[0].port_ranges[0].to;
    default: return c->authorizations[0].expires;
    }
}

/* One number text in every integer position. */
static void plant_integer(const char *num, size_t len)
{
    static char doc[256], enc[512];
    char want[64];
    size_t k, n, at;
    /* canonical: digits, no leading zero - the fast path must take it */
    int canonical = len > 0 && (len == 1 || num[0] != '0');
    for (k = 0; k < len; k++)
        canonical &= num[k] >= '0' && num[k] <= '9';
    for (k = 0; k < sizeof int_positions / sizeof int_positions[0]; k++) {
        const int_position *ip = &int_positions[k];
        alkt_open_params p;
        alkt_listen_reply r;
        alkt_control c;
        alkt_error e;
        expect x;
        uint64_t v = 0;
        ptrdiff_t m = 0;
        int rc, verdict = addr_ref_integer(num, len, ip->min, ip->max, &v);
        n = plant(doc, sizeof doc, ip->before, num, len, ip->after, &at);
        expect_set(&x,
                   verdict == ADDR_REF_INT_OK            ? ALKT_OK
                   : verdict == ADDR_REF_INT_NOT_NUMBER  ? EXPECT_READER
                   : verdict == ADDR_REF_INT_NOT_INTEGER ? ALKT_ERR_NOT_INTEGER
                                                         : ALKT_ERR_OUT_OF_RANGE,
                   at, ip->path);
        memset(&c, 0, sizeof c);
        if (ip->kind == 0) {
            rc = alkt_open_params_decode(doc, n, NULL, &p, &e);
            check_open_paths("planted", doc, n, &p, rc, &e);
            check_verdict(ip->path, doc, n, rc, &e, &x);
            if (rc == ALKT_OK)
                m = alkt_open_params_encode(&p, enc, sizeof enc, &e);
        } else if (ip->kind == 1) {
            rc = alkt_listen_reply_decode(doc, n, NULL, &r, &e);
            check_verdict(ip->path, doc, n, rc, &e, &x);
            if (rc == ALKT_OK)
                m = alkt_listen_reply_encode(&r, enc, sizeof enc, &e);
        } else {
            rc = control_planted(ip->path, doc, n, &x, canonical, &c);
            if (rc == ALKT_OK)
                m = alkt_control_encode(&c, enc, sizeof enc, &e);
        }
        if (rc != ALKT_OK)
            continue;
        ALK_CHECK(int_field(&p, &r, &c, k) == v,
                  "%s: %.*s decoded as %llu, the reference reads %llu",
                  ip->path, (int)len, num,
                  (unsigned long long)int_field(&p, &r, &c, k),
                  (unsigned long long)v);
        snprintf(want, sizeof want, "\"%s\":%llu",
                 strrchr(ip->path, '.') ? strrchr(ip->path, '.') + 1
                                        : ip->path,
                 (unsigned long long)v);
        check_encoded(ip->path, enc, m, want);
    }
}

/* A number token and its neighbours: one more and one less, a leading
 * zero, a minus sign, a fraction and an exponent appended. */
static void plant_number_variants(const char *num, size_t len)
{
    char text[64];
    uint64_t v = 0;
    int n;
    plant_integer(num, len);
    if (addr_ref_integer(num, len, 0, (uint64_t)1 << 59, &v) ==
        ADDR_REF_INT_OK) {
        n = snprintf(text, sizeof text, "%llu", (unsigned long long)v + 1);
        plant_integer(text, (size_t)n);
        if (v > 0) {
            n = snprintf(text, sizeof text, "%llu", (unsigned long long)v - 1);
            plant_integer(text, (size_t)n);
        }
    }
    if (len + 3 > sizeof text)
        return;
    n = snprintf(text, sizeof text, "0%.*s", (int)len, num);
    plant_integer(text, (size_t)n);
    n = snprintf(text, sizeof text, "-%.*s", (int)len, num);
    plant_integer(text, (size_t)n);
    n = snprintf(text, sizeof text, "%.*s.0", (int)len, num);
    plant_integer(text, (size_t)n);
    n = snprintf(text, sizeof text, "%.*sE0", (int)len, num);
    plant_integer(text, (size_t)n);
}

/* RFC 5952 over zero patterns: for each of the 256 ways eight groups can
 * be zero or not, an address with the input's bytes in the non-zero
 * groups (1 to 4 hex digits), formatted both ways; and IPv4, IPv4-mapped
 * and nearly mapped addresses. */
static void check_formats(const uint8_t *data, size_t size)
{
    uint64_t h = 0xcbf29ce484222325u;
    unsigned mask, k;
    alkt_ip ip;
    for (k = 0; k < size; k++)
        h = (h ^ data[k]) * 0x100000001b3u;
    for (mask = 0; mask < 256 + 4; mask++) {
        memset(&ip, 0, sizeof ip);
        ip.family = 6;
        for (k = 0; k < 8; k++) {
            uint64_t x = (h + (uint64_t)(mask * 8 + k) * 0x9e3779b97f4a7c15u);
            unsigned g;
            x ^= x >> 29;
            x *= 0xbf58476d1ce4e5b9u;
            x ^= x >> 32;
            g = (unsigned)(x & 0xFFFF) >> (4 * (unsigned)((x >> 16) & 3));
            if (!(mask & (1u << k)))
                continue;
            g = g ? g : 1 + (unsigned)((x >> 20) & 0xF);
            ip.bytes[2 * k] = (unsigned char)(g >> 8);
            ip.bytes[2 * k + 1] = (unsigned char)(g & 0xFF);
        }
        if (mask >= 256) { /* ::ffff:a.b.c.d, ::fffe:..., ::1:ffff:..., v4 */
            memset(ip.bytes, 0, 12);
            ip.bytes[10] = 0xFF;
            ip.bytes[11] = mask == 257 ? 0xFE : 0xFF;
            ip.bytes[9] = mask == 258 ? 1 : 0;
            if (mask == 259) {
                memmove(ip.bytes, ip.bytes + 12, 4);
                memset(ip.bytes + 4, 0, 12);
                ip.family = 4;
            }
        }
        check_format("format", &ip);
    }
}

/* Accepted structs hold only what the reference accepts. */
static void check_host_value(const char *what, const alkt_host *h)
{
    if (h->kind == ALKT_HOST_IP)
        check_format(what, &h->ip);
    else if (h->kind == ALKT_HOST_NAME)
        ALK_CHECK(addr_ref_hostname(h->name, strlen(h->name)),
                  "%s: accepted the name '%s' RFC 1123 refuses", what,
                  h->name);
}

static void check_cidr_value(const char *what, const alkt_resource *r)
{
    char text[80];
    addr_ref_ip_t ip;
    unsigned prefix = 0;
    size_t n = alkt_ip_format(&r->network, text);
    check_format(what, &r->network);
    n += (size_t)snprintf(text + n, sizeof text - n, "/%u",
                          (unsigned)r->prefix_len);
    ALK_CHECK(addr_ref_cidr(text, n, &ip, &prefix) &&
                  ip_equal(&r->network, &ip) && prefix == r->prefix_len,
              "%s: accepted the CIDR %s the reference refuses", what, text);
}

/* A resource's port ranges, 1 to ALKT_PORT_RANGES_MAX of them (each from
 * == to), all decode (the fast path takes them); one more is
 * ALKT_ERR_TOO_MANY at its '{'; after j good ones, a range with "from" 0 is
 * refused at that 0, and one with from > to - "to" written second or first
 * - is ALKT_ERR_BAD_RANGE at the "to" value. Each with the path the header
 * prints, the index in decimal: "ports[16]", "ports[9].from", "ports[9].to"
 * (every index up to the largest). And an item that is no JSON value (none
 * good before it too: "ports":[x]) is the reader's error, not an end of
 * the array. Once per process. */
static void check_port_range_paths(void)
{
    static int done;
    static const char *const shapes[] = {"{\"from\":%u,\"to\":%u}",
                                         "{\"to\":%u,\"from\":%u}"};
    static char doc[2048];
    alkt_control c;
    expect x;
    char path[64];
    size_t n, k, j, at = 0, start = 0;
    int bad;
    if (done) return;
    done = 1;
    for (bad = 0; bad < 5; bad++) {
        for (j = bad ? 0 : 1; j <= ALKT_PORT_RANGES_MAX; j++) {
            n = (size_t)snprintf(doc, sizeof doc, "{\"resources\":[{\"id\":\"r\","
                                 "\"cidr\":\"10.0.0.0/8\",\"ports\":[");
            for (k = 0; k < j + (size_t)(bad != 0); k++) {
                unsigned port = (unsigned)k + 1;
                if (k)
                    doc[n++] = ',';
                start = n;
                if (k < j || bad == 1) /* from 0 (OUT_OF_RANGE) or from == to */
                    n += (size_t)snprintf(doc + n, sizeof doc - n, shapes[0],
                                          k < j ? port : 0u, port);
                else if (bad == 4) /* no value */
                    doc[n++] = 'x';
                else if (bad == 2) /* from > to, "to" second */
                    n += (size_t)snprintf(doc + n, sizeof doc - n, shapes[0], port + 1,
                                          port);
                else /* from > to, "to" first */
                    n += (size_t)snprintf(doc + n, sizeof doc - n, shapes[1], port,
                                          port + 1);
            }
            n += (size_t)snprintf(doc + n, sizeof doc - n, "],\"gateway\":\"g\"}]}");
            if (bad == 4) {
                expect_set(&x, EXPECT_READER, 0, "");
            } else if (bad && j == ALKT_PORT_RANGES_MAX) { /* one too many */
                snprintf(path, sizeof path, "resources[0].ports[%zu]", j);
                expect_set(&x, ALKT_ERR_TOO_MANY, start, path);
            } else if (bad == 1) {
                snprintf(path, sizeof path, "resources[0].ports[%zu].from", j);
                expect_set(&x, ALKT_ERR_OUT_OF_RANGE, start + 8, path);
            } else if (bad) {
                at = (size_t)(strstr(doc + start, "\"to\":") - doc) + 5;
                snprintf(path, sizeof path, "resources[0].ports[%zu].to", j);
                expect_set(&x, ALKT_ERR_BAD_RANGE, at, path);
            } else {
                expect_set(&x, ALKT_OK, 0, "");
            }
            if (control_planted("port ranges", doc, n, &x, 1, &c) == ALKT_OK)
                ALK_CHECK(c.resources[0].port_range_count == j &&
                              c.resources[0].port_ranges[j - 1].to == j,
                          "port ranges: %zu decoded as %zu", j,
                          c.resources[0].port_range_count);
        }
    }
}

/* The control encoder on a resource whose range j (after j good ones,
 * from == to) is bad: from 0 is OUT_OF_RANGE at "resources[0].ports[j].from"
 * (to 0 too, or not), to 0 with from 1 the same at ".to", from > to
 * BAD_RANGE at ".to"; more ranges than ALKT_PORT_RANGES_MAX are TOO_MANY at
 * "resources[0].ports"; the good ones alone encode. Once per process. */
static void check_port_range_encode(void)
{
    static int done;
    static const uint16_t bad_ranges[][2] = {{0, 5}, {0, 0}, {1, 0}, {3, 2}};
    static alkt_resource res;
    alkt_control c;
    alkt_error e;
    char want[64];
    ptrdiff_t n;
    size_t j, b;
    if (done) return;
    done = 1;
    memset(&c, 0, sizeof c);
    c.has_resources = 1;
    c.resources = &res;
    c.resource_count = c.resource_cap = 1;
    memcpy(res.id, "r", 1);
    memcpy(res.gateway, "g", 1);
    res.network.family = 4;
    res.network.bytes[0] = 10;
    res.prefix_len = 8;
    for (j = 0; j < ALKT_PORT_RANGES_MAX; j++) {
        res.port_ranges[j].from = res.port_ranges[j].to = (uint16_t)(j + 1);
        for (b = 0; b < sizeof bad_ranges / sizeof bad_ranges[0]; b++) {
            res.port_range_count = j + 1;
            res.port_ranges[j].from = bad_ranges[b][0];
            res.port_ranges[j].to = bad_ranges[b][1];
            snprintf(want, sizeof want, "resources[0].ports[%zu].%s", j,
                     bad_ranges[b][0] == 0 ? "from" : "to");
            memset(&e, 0xA5, sizeof e);
            n = alkt_control_encode(&c, enc1, sizeof enc1, &e);
            ALK_CHECK(n == (b == 3 ? ALKT_ERR_BAD_RANGE : ALKT_ERR_OUT_OF_RANGE) &&
                          e.code == (int)n && strcmp(e.path, want) == 0,
                      "control encode of range %u..%u at %zu: %td at '%s', %s at '%s' "
                      "expected", (unsigned)bad_ranges[b][0], (unsigned)bad_ranges[b][1],
                      j, n, n < 0 ? e.path : "",
                      alkt_strerror(b == 3 ? ALKT_ERR_BAD_RANGE : ALKT_ERR_OUT_OF_RANGE),
                      want);
        }
        res.port_ranges[j].from = res.port_ranges[j].to = (uint16_t)(j + 1);
        n = alkt_control_encode(&c, enc1, sizeof enc1, &e);
        ALK_CHECK(n > 0, "control encode of %zu good ranges: %td at '%s'", j + 1, n,
                  e.path);
    }
    res.port_range_count = ALKT_PORT_RANGES_MAX + 1;
    n = alkt_control_encode(&c, enc1, sizeof enc1, &e);
    ALK_CHECK(n == ALKT_ERR_TOO_MANY && strcmp(e.path, "resources[0].ports") == 0,
              "control encode of %d ranges: %td at '%s'", ALKT_PORT_RANGES_MAX + 1, n,
              n < 0 ? e.path : "");
}

static void check_typed_values(const uint8_t *data, size_t size)
{
    planted_values v;
    size_t k;
    check_formats(data, size);
    check_port_range_paths();
    check_port_range_encode();
    gather_values(data, size, &v);
    for (k = 0; k < v.nstr; k++) {
        plant_address((const char *)data + v.str_off[k], v.str_len[k]);
        plant_id_token((const char *)data + v.str_off[k], v.str_len[k]);
        plant_key((const char *)data + v.str_off[k], v.str_len[k]);
    }
    for (k = 0; k < v.nnum; k++)
        plant_number_variants((const char *)data + v.num_off[k], v.num_len[k]);
}

/* A decoder called without somewhere to put its result (or, for the
 * control decoder, with a capacity and no array) refuses with ALKT_ERR_ARG
 * and still fills err as an error at the top: offset 0, line 1 column 1,
 * no path - whatever err held before; without err it only refuses. */
static void check_arg_error(const char *what, int rc, const alkt_error *e)
{
    ALK_CHECK(rc == ALKT_ERR_ARG, "%s without its output: %d, not ALKT_ERR_ARG",
              what, rc);
    ALK_CHECK(e->code == ALKT_ERR_ARG && e->offset == 0 && e->line == 1 &&
                  e->column == 1 && e->path[0] == '\0',
              "%s's argument error left err as code %d offset %zu at %zu:%zu "
              "path \"%.20s\"", what, e->code, e->offset, e->line, e->column,
              e->path);
}

/* Each encoder, given a valid struct and a NULL buffer with a capacity
 * (only NULL with 0 asks for the length), refuses with ALKT_ERR_ARG, err
 * saying so at the top. */
static void check_encode_null_buf(void)
{
    alkt_open_params p;
    alkt_listen_reply r;
    alkt_control c;
    alkt_error e;
    ALK_CHECK(alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, "a", 1, 1) == ALKT_OK,
              "direct open params to a:1");
    memset(&r, 0, sizeof r);
    r.address.family = 4;
    r.port = 1;
    memset(&c, 0, sizeof c);
    c.has_relays = 1;
    ALK_CHECK(alkt_open_params_encode(&p, NULL, 0, &e) > 0 &&
                  alkt_listen_reply_encode(&r, NULL, 0, &e) > 0 &&
                  alkt_control_encode(&c, NULL, 0, &e) > 0,
              "an encoder's size query refused a valid struct: %d '%s'", e.code, e.path);
    memset(&e, 0xA5, sizeof e);
    check_arg_error("alkt_open_params_encode into NULL",
                    (int)alkt_open_params_encode(&p, NULL, 1, &e), &e);
    memset(&e, 0xA5, sizeof e);
    check_arg_error("alkt_listen_reply_encode into NULL",
                    (int)alkt_listen_reply_encode(&r, NULL, 64, &e), &e);
    memset(&e, 0xA5, sizeof e);
    check_arg_error("alkt_control_encode into NULL",
                    (int)alkt_control_encode(&c, NULL, 4096, &e), &e);
}

static void check_arg_errors(const uint8_t *data, size_t size)
{
    const char *doc = (const char *)data;
    alkt_error e;
    alkt_control c;
    memset(&e, 0xA5, sizeof e);
    check_arg_error("alkt_open_params_decode",
                    alkt_open_params_decode(doc, size, NULL, NULL, &e), &e);
    ALK_CHECK(alkt_open_params_decode(doc, size, NULL, NULL, NULL) == ALKT_ERR_ARG,
              "alkt_open_params_decode without output or err");
    memset(&e, 0x5A, sizeof e);
    check_arg_error("alkt_listen_reply_decode",
                    alkt_listen_reply_decode(doc, size, NULL, NULL, &e), &e);
    ALK_CHECK(alkt_listen_reply_decode(doc, size, NULL, NULL, NULL) == ALKT_ERR_ARG,
              "alkt_listen_reply_decode without output or err");
    ALK_CHECK(!alkt_listen_reply_project(doc, size, NULL),
              "alkt_listen_reply_project without its output said yes");
    check_encode_null_buf();
    memset(&c, 0, sizeof c);
    c.relay_cap = 1; /* and no array for it */
    memset(&e, 0xA5, sizeof e);
    check_arg_error("alkt_control_decode",
                    alkt_control_decode(doc, size, NULL, &c, &e), &e);
    ALK_CHECK(alkt_control_decode(doc, size, NULL, &c, NULL) == ALKT_ERR_ARG,
              "alkt_control_decode with a capacity and no array, no err");
}

/* Every \uXXXX escape of the basic plane (upper and lower case hex), and
 * the surrogate pairs at the edges of the astral planes, unescape to the
 * reference's bytes: the UTF-8 encoder's every boundary. And a \u with a
 * byte that is no hex digit - the ones just outside '0'-'9', 'A'-'F' and
 * 'a'-'f' - in each of its four places, alone or as a pair's second half
 * (raw the reader never gives, which the unescaper refuses as
 * ALKT_ERR_BAD_ESCAPE at that \u, as the reference does). Once per
 * process. */
static void check_unescape_all(void)
{
    static int done;
    static const char *const pairs[] = {"\\ud800\\udc00", "\\udbff\\udfff",
                                        "\\uD800\\uDFFF", "\\uDBFF\\uDC00"};
    static const char not_hex[] = "/:@G`g \"";
    char raw[20], o[8], w[8];
    size_t n, b, wn, wb, k;
    unsigned cp;
    if (done) return;
    done = 1;
    for (cp = 0; cp < 0x10000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        snprintf(raw, sizeof raw, (cp & 1) ? "\\u%04X" : "\\u%04x", cp);
        ALK_CHECK(alkt_json_unescape(raw, 6, o, sizeof o, &n, &b) == ALKT_OK &&
                      addr_ref_unescape(raw, 6, w, sizeof w, &wn, &wb) == 1 && n == wn &&
                      !memcmp(o, w, n),
                  "\\u%04x unescapes to other bytes than the reference's", cp);
    }
    for (k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
        ALK_CHECK(alkt_json_unescape(pairs[k], 12, o, sizeof o, &n, &b) == ALKT_OK &&
                      addr_ref_unescape(pairs[k], 12, w, sizeof w, &wn, &wb) == 1 &&
                      n == wn && !memcmp(o, w, n),
                  "%s unescapes to other bytes than the reference's", pairs[k]);
    for (k = 0; k < 4 * (sizeof not_hex - 1); k++) {
        size_t at = k / (sizeof not_hex - 1);
        char bad = not_hex[k % (sizeof not_hex - 1)];
        memcpy(raw, "\\u0041\\uD800\\uDC00", 18);
        raw[2 + at] = bad;
        ALK_CHECK(alkt_json_unescape(raw, 6, o, sizeof o, &n, &b) == ALKT_ERR_BAD_ESCAPE &&
                      b == 0 && addr_ref_unescape(raw, 6, w, sizeof w, &wn, &wb) == 0,
                  "%.6s: unescaped (%zu bytes) or refused elsewhere than at 0", raw, n);
        raw[2 + at] = "0041"[at];
        raw[14 + at] = bad;
        ALK_CHECK(alkt_json_unescape(raw + 6, 12, o, sizeof o, &n, &b) ==
                          ALKT_ERR_BAD_ESCAPE &&
                      b == 6 && addr_ref_unescape(raw + 6, 12, w, sizeof w, &wn, &wb) == 0,
                  "%.12s: unescaped (%zu bytes) or refused elsewhere than at 6", raw + 6,
                  n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t reader_off = 0;
    int reader;
    alk_trace_reset();
    alk_trace("input: %zu bytes", size);
    if (size > ALKT_JSON_SIZE_DEFAULT)
        return 0; /* the size limit itself is a unit test */
    check_unescape_all();
    reader = check_reader(data, size, &reader_off);
    check_open_params(data, size, reader, reader_off);
    check_listen_reply(data, size, reader, reader_off);
    check_listen_encode_raw(data, size);
    check_open_encode_raw(data, size);
    check_open_encode_kind();
    check_control(data, size, reader, reader_off);
    check_typed_values(data, size);
    check_arg_errors(data, size);
    return 0;
}

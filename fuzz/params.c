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
 *      (encode(decode(s)) is a fixed point), and the encoders' size query
 *      and too-small buffers must behave. The control decoder's fast path
 *      must agree with its token-based reference wherever it accepts, and
 *      must accept every canonical document without escapes.
 * Any broken invariant aborts via ALK_CHECK with the trace. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"
#include "alk_check.h"
#include "alkt_equal.h"
#include "json_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PARAMS_CAP 3 /* small section capacities: reach ALKT_ERR_TOO_MANY */

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
    ALK_CHECK(memchr(e->path, 0, sizeof e->path) != NULL,
              "%s: path not terminated", what);
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
    static char out[1 << 16];
    size_t n = 0, bad = 0, n2 = 0;
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
        ALK_CHECK(bad + 6 <= t->len && t->ptr[bad] == '\\' &&
                      t->ptr[bad + 1] == 'u',
                  "bad surrogate offset %zu in string at %zu", bad, t->offset);
        return;
    }
    ALK_CHECK(n <= t->len, "unescape grew %zu -> %zu", t->len, n);
    ALK_CHECK(utf8_ok(out, n), "unescape of string at %zu gave bad UTF-8",
              t->offset);
    if (!(t->flags & ALKT_JSON_ESCAPED))
        ALK_CHECK(n == t->len && memcmp(out, t->ptr, n) == 0,
                  "plain string at %zu changed", t->offset);
    if (n > 0) {
        rc = alkt_json_unescape(t->ptr, t->len, out, n - 1, &n2, NULL);
        ALK_CHECK(rc == ALKT_ERR_STRING_TOO_LONG && n2 < n,
                  "unescape into %zu bytes: %d (%zu)", n - 1, rc, n2);
    }
}

static void check_number_token(const alkt_json_token *t)
{
    char text[64];
    uint64_t u = 0;
    int64_t s = 0;
    int ru = alkt_json_number_u64(t, &u), rs = alkt_json_number_i64(t, &s);
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
    ALK_CHECK(alkt_json_error(&p, &e) == rc, "sticky error differs");
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

static int check_reader(const uint8_t *data, size_t size, size_t *offset)
{
    alkt_error e;
    alkt_json_limits shallow = {3, 0};
    size_t ref_off = 0, walk_off = 0;
    int ref = json_ref_validate(data, size, ALKT_JSON_DEPTH_DEFAULT, &ref_off);
    int rc = alkt_json_validate((const char *)data, size, NULL, &e);
    int walk = walk_tokens(data, size, &walk_off);
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
    if (rc) {
        check_error("validate", rc, &e, data, size);
        ALK_CHECK(e.offset == ref_off,
                  "first bad byte: reader %zu, reference %zu (%s)", e.offset,
                  ref_off, alkt_strerror(rc));
    }
    *offset = e.offset;
    rc = alkt_json_validate((const char *)data, size, &shallow, &e);
    ref = json_ref_validate(data, size, 3, &ref_off);
    ALK_CHECK((rc == ALKT_OK) == (ref == 1) && (ref || e.offset == ref_off),
              "depth 3: reader %d at %zu, reference %d at %zu", rc, e.offset,
              ref, ref_off);
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

static char enc1[1 << 17], enc2[1 << 17];

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

static void check_open_params(const uint8_t *data, size_t size, int reader,
                              size_t reader_off)
{
    alkt_open_params p, p2, zero;
    alkt_error e;
    size_t n = 0;
    int rc = alkt_open_params_decode((const char *)data, size, NULL, &p, &e);
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
    CHECK_ENCODE("open params", alkt_open_params_encode(&p, enc1, sizeof enc1, &ee),
                 alkt_open_params_encode(&p, NULL, 0, &ee),
                 alkt_open_params_encode(&p, enc2, (size_t)need - 1, &ee), n);
    rc = alkt_open_params_decode(enc1, n, NULL, &p2, &e);
    ALK_CHECK(rc == ALKT_OK, "open params: encoding refused: %s at %zu: %.*s",
              alkt_strerror(rc), e.offset, (int)n, enc1);
    ALK_CHECK(memcmp(&p, &p2, sizeof p) == 0,
              "open params: decode(encode(p)) != p: %.*s", (int)n, enc1);
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
    ALK_CHECK(alkt_control_encode(&c2, enc2, sizeof enc2, &e) ==
                      (ptrdiff_t)n &&
                  memcmp(enc1, enc2, n) == 0,
              "control: encoding not a fixed point");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t reader_off = 0;
    int reader;
    alk_trace_reset();
    alk_trace("input: %zu bytes", size);
    if (size > ALKT_JSON_SIZE_DEFAULT)
        return 0; /* the size limit itself is a unit test */
    reader = check_reader(data, size, &reader_off);
    check_open_params(data, size, reader, reader_off);
    check_listen_reply(data, size, reader, reader_off);
    check_control(data, size, reader, reader_off);
    return 0;
}

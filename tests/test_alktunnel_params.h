/* test_alktunnel_params.h - unit tests for the typed params of alktunnel.h:
 * open params, listen replies, control messages and their encoders.
 *
 * #included by test_alktunnel.c after ALKTUNNEL_IMPLEMENTATION, alktunnel.h
 * and greatest.h. Every error check asserts the exact code, byte offset,
 * line/column and field path; every encoding the exact canonical text. */
#include <stdint.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------- */

/* Offset of the first occurrence of needle in s ((size_t)-1 if absent). */
static size_t tp_at(const char *s, const char *needle)
{
    const char *p = strstr(s, needle);
    return p ? (size_t)(p - s) : (size_t)-1;
}

/* Offset of the n-th (0-based) occurrence of needle in s. */
static size_t tp_nth(const char *s, const char *needle, int n)
{
    const char *p = strstr(s, needle);
    while (p && n-- > 0)
        p = strstr(p + 1, needle);
    return p ? (size_t)(p - s) : (size_t)-1;
}

/* Independent line/column of an offset (1-based, column in bytes). */
static void tp_linecol(const char *s, size_t off, size_t *line, size_t *col)
{
    size_t i, ln = 1, start = 0;
    for (i = 0; i < off && s[i]; i++) {
        if (s[i] == '\n') {
            ln++;
            start = i + 1;
        }
    }
    *line = ln;
    *col = off - start + 1;
}

static enum greatest_test_res tp_check_err(const char *json,
                                           const alkt_error *e, int code,
                                           size_t offset, const char *path)
{
    size_t line, col;
    ASSERT_EQ_FMT(code, e->code, "%d");
    ASSERT_EQ_FMT(offset, e->offset, "%lu");
    tp_linecol(json, offset, &line, &col);
    ASSERT_EQ_FMT(line, e->line, "%lu");
    ASSERT_EQ_FMT(col, e->column, "%lu");
    ASSERT_STR_EQ(path, e->path);
    PASS();
}

/* Open params decode must fail with exactly this error, out zeroed. */
static enum greatest_test_res tp_open_err(const char *json, int code,
                                          size_t offset, const char *path)
{
    alkt_open_params p, zero;
    alkt_error e;
    int rc;
    memset(&p, 0x5A, sizeof p);
    memset(&zero, 0, sizeof zero);
    memset(&e, 0x5A, sizeof e);
    rc = alkt_open_params_decode(json, strlen(json), NULL, &p, &e);
    ASSERT_EQ_FMT(code, rc, "%d");
    CHECK_CALL(tp_check_err(json, &e, code, offset, path));
    ASSERT_MEM_EQ(&zero, &p, sizeof p);
    PASS();
}

static int tp_open(const char *json, alkt_open_params *p)
{
    alkt_error e;
    memset(p, 0x5A, sizeof *p);
    return alkt_open_params_decode(json, strlen(json), NULL, p, &e);
}

static enum greatest_test_res tp_reply_err(const char *json, int code,
                                           size_t offset, const char *path)
{
    alkt_listen_reply r, zero;
    alkt_error e;
    int rc;
    memset(&r, 0x5A, sizeof r);
    memset(&zero, 0, sizeof zero);
    rc = alkt_listen_reply_decode(json, strlen(json), NULL, &r, &e);
    ASSERT_EQ_FMT(code, rc, "%d");
    CHECK_CALL(tp_check_err(json, &e, code, offset, path));
    ASSERT_MEM_EQ(&zero, &r, sizeof r);
    /* the lenient projection agrees: nothing */
    memset(&r, 0x5A, sizeof r);
    ASSERT_EQ(0, alkt_listen_reply_project(json, strlen(json), &r));
    ASSERT_MEM_EQ(&zero, &r, sizeof r);
    PASS();
}

/* Caller arrays for control messages. */
#define TP_CAP 4
typedef struct tp_ctl {
    alkt_control c;
    alkt_resource res[TP_CAP];
    alkt_authorization auth[TP_CAP];
    alkt_revocation rev[TP_CAP];
    alkt_relay rel[TP_CAP];
} tp_ctl;

static tp_ctl tp_ctl_buf; /* large: kept off the stack */

static alkt_control *tp_ctl_init(size_t cap)
{
    tp_ctl *t = &tp_ctl_buf;
    memset(t, 0x5A, sizeof *t);
    memset(&t->c, 0, sizeof t->c);
    t->c.has_resources = t->c.has_authorizations = 7;
    t->c.has_revocations = t->c.has_relays = 7;
    t->c.resource_count = t->c.authorization_count = 9;
    t->c.revocation_count = t->c.relay_count = 9;
    t->c.resources = t->res;
    t->c.authorizations = t->auth;
    t->c.revocations = t->rev;
    t->c.relays = t->rel;
    t->c.resource_cap = t->c.authorization_cap = cap;
    t->c.revocation_cap = t->c.relay_cap = cap;
    return &t->c;
}

static tp_ctl tp_ctl_buf2;
static char tp_variant[8192];

/* Decodes json into c. When json starts with `{"` and a lowercase letter,
 * the same document with that letter as a \u escape (which the one-pass
 * fast path declines, so the token decoder reads it) must decode to the
 * identical result: both decoders are checked on every valid document. */
static int tp_ctl_decode(const char *json, alkt_control *c)
{
    alkt_error e;
    size_t n = strlen(json);
    int rc;
    memset(&e, 0x5A, sizeof e);
    rc = alkt_control_decode(json, n, NULL, c, &e);
    if (rc == ALKT_OK && (e.code != 0 || e.offset != 0 || e.path[0]))
        return -1000; /* success must clear err */
    if (n > 3 && n + 6 < sizeof tp_variant && json[0] == '{' &&
        json[1] == '"' && json[2] >= 'a' && json[2] <= 'z') {
        tp_ctl *v = &tp_ctl_buf2;
        alkt_control *d = &v->c;
        size_t k;
        int rc2;
        memcpy(tp_variant, json, 2);
        sprintf(tp_variant + 2, "\\u%04x", (unsigned)json[2]);
        memcpy(tp_variant + 8, json + 3, n - 3);
        memset(v, 0x5A, sizeof *v);
        memset(d, 0, sizeof *d);
        d->resources = c->resources ? v->res : NULL;
        d->authorizations = c->authorizations ? v->auth : NULL;
        d->revocations = c->revocations ? v->rev : NULL;
        d->relays = c->relays ? v->rel : NULL;
        d->resource_cap = c->resource_cap;
        d->authorization_cap = c->authorization_cap;
        d->revocation_cap = c->revocation_cap;
        d->relay_cap = c->relay_cap;
        rc2 = alkt_control_decode(tp_variant, n + 5, NULL, d, &e);
        if (rc2 != rc)
            return -1001;
        if (rc == ALKT_OK && (e.code != 0 || e.offset != 0 || e.path[0]))
            return -1002;
        if (d->has_resources != c->has_resources ||
            d->has_authorizations != c->has_authorizations ||
            d->has_revocations != c->has_revocations ||
            d->has_relays != c->has_relays ||
            d->resource_count != c->resource_count ||
            d->authorization_count != c->authorization_count ||
            d->revocation_count != c->revocation_count ||
            d->relay_count != c->relay_count)
            return -1003;
        for (k = 0; k < c->resource_count; k++)
            if (memcmp(&c->resources[k], &d->resources[k], sizeof v->res[0]))
                return -1004;
        for (k = 0; k < c->authorization_count; k++)
            if (memcmp(&c->authorizations[k], &d->authorizations[k],
                       sizeof v->auth[0]))
                return -1005;
        for (k = 0; k < c->revocation_count; k++)
            if (memcmp(&c->revocations[k], &d->revocations[k],
                       sizeof v->rev[0]))
                return -1006;
        for (k = 0; k < c->relay_count; k++)
            if (memcmp(&c->relays[k], &d->relays[k], sizeof v->rel[0]))
                return -1007;
    }
    return rc;
}

/* Control decode must fail: exact error; flags and counts zero, the
 * caller's pointers and capacities kept. */
static enum greatest_test_res tp_ctl_err_cap(const char *json, size_t cap,
                                             int code, size_t offset,
                                             const char *path)
{
    alkt_control *c = tp_ctl_init(cap);
    alkt_error e;
    int rc = alkt_control_decode(json, strlen(json), NULL, c, &e);
    ASSERT_EQ_FMT(code, rc, "%d");
    CHECK_CALL(tp_check_err(json, &e, code, offset, path));
    ASSERT_EQ(0, c->has_resources);
    ASSERT_EQ(0, c->has_authorizations);
    ASSERT_EQ(0, c->has_revocations);
    ASSERT_EQ(0, c->has_relays);
    ASSERT_EQ(0, c->resource_count);
    ASSERT_EQ(0, c->authorization_count);
    ASSERT_EQ(0, c->revocation_count);
    ASSERT_EQ(0, c->relay_count);
    ASSERT(c->resources == tp_ctl_buf.res);
    ASSERT(c->authorizations == tp_ctl_buf.auth);
    ASSERT(c->revocations == tp_ctl_buf.rev);
    ASSERT(c->relays == tp_ctl_buf.rel);
    ASSERT_EQ(cap, c->resource_cap);
    ASSERT_EQ(cap, c->authorization_cap);
    ASSERT_EQ(cap, c->revocation_cap);
    ASSERT_EQ(cap, c->relay_cap);
    PASS();
}

static enum greatest_test_res tp_ctl_err(const char *json, int code,
                                         size_t offset, const char *path)
{
    return tp_ctl_err_cap(json, TP_CAP, code, offset, path);
}

/* Encoder adapters with one signature. */
typedef ptrdiff_t (*tp_enc_fn)(const void *obj, char *buf, size_t cap,
                               alkt_error *err);
static ptrdiff_t tp_enc_open(const void *obj, char *buf, size_t cap,
                             alkt_error *err)
{
    return alkt_open_params_encode((const alkt_open_params *)obj, buf, cap,
                                   err);
}
static ptrdiff_t tp_enc_reply(const void *obj, char *buf, size_t cap,
                              alkt_error *err)
{
    return alkt_listen_reply_encode((const alkt_listen_reply *)obj, buf, cap,
                                    err);
}
static ptrdiff_t tp_enc_ctl(const void *obj, char *buf, size_t cap,
                            alkt_error *err)
{
    return alkt_control_encode((const alkt_control *)obj, buf, cap, err);
}

static char tp_out[16384];

/* The exact canonical text: size query, exact-size buffer, one byte short,
 * NULL buffer with a capacity. */
static enum greatest_test_res tp_enc(tp_enc_fn enc, const void *obj,
                                     const char *expect)
{
    size_t n = strlen(expect);
    alkt_error e;
    ptrdiff_t r;
    memset(&e, 0x5A, sizeof e);
    r = enc(obj, NULL, 0, &e);
    ASSERT_EQ_FMT((long)n, (long)r, "%ld");
    ASSERT_EQ(ALKT_OK, e.code);
    ASSERT_STR_EQ("", e.path);
    memset(tp_out, '#', sizeof tp_out);
    r = enc(obj, tp_out, n, &e);
    ASSERT_EQ_FMT((long)n, (long)r, "%ld");
    ASSERT_EQ('#', tp_out[n]);
    tp_out[n] = '\0';
    ASSERT_STR_EQ(expect, tp_out);
    r = enc(obj, tp_out, sizeof tp_out, NULL); /* err NULL is fine */
    ASSERT_EQ_FMT((long)n, (long)r, "%ld");
    memset(tp_out, '#', sizeof tp_out);
    r = enc(obj, tp_out, n - 1, &e);
    ASSERT_EQ_FMT((long)ALKT_ERR_BUFFER_TOO_SMALL, (long)r, "%ld");
    ASSERT_EQ(ALKT_ERR_BUFFER_TOO_SMALL, e.code);
    ASSERT_EQ(0, e.offset);
    ASSERT_EQ(1, e.line);
    ASSERT_EQ(1, e.column);
    ASSERT_STR_EQ("", e.path);
    ASSERT_EQ('#', tp_out[n - 1]); /* nothing written past the capacity */
    r = enc(obj, NULL, 5, &e);
    ASSERT_EQ_FMT((long)ALKT_ERR_ARG, (long)r, "%ld");
    ASSERT_EQ(ALKT_ERR_ARG, e.code);
    PASS();
}

/* The encoder refuses obj with exactly this code and path (offset 0). */
static enum greatest_test_res tp_enc_err(tp_enc_fn enc, const void *obj,
                                         int code, const char *path)
{
    alkt_error e;
    ptrdiff_t r;
    memset(&e, 0x5A, sizeof e);
    r = enc(obj, tp_out, sizeof tp_out, &e);
    ASSERT_EQ_FMT((long)code, (long)r, "%ld");
    ASSERT_EQ_FMT(code, e.code, "%d");
    ASSERT_EQ(0, e.offset);
    ASSERT_EQ(1, e.line);
    ASSERT_EQ(1, e.column);
    ASSERT_STR_EQ(path, e.path);
    memset(&e, 0x5A, sizeof e);
    r = enc(obj, NULL, 0, &e); /* the size query refuses it too */
    ASSERT_EQ_FMT((long)code, (long)r, "%ld");
    ASSERT_STR_EQ(path, e.path);
    PASS();
}

static void tp_repeat(char *out, char c, size_t n)
{
    memset(out, c, n);
    out[n] = '\0';
}

/* ---- open params: valid shapes ------------------------------------------ */

TEST open_direct_tcp_name(void)
{
    alkt_open_params p;
    ASSERT_EQ(ALKT_OK,
              tp_open("{\"substrate\":\"tcp\",\"host\":\"db.example.com\","
                      "\"port\":5432}",
                      &p));
    ASSERT_EQ(ALKT_OPEN_DIRECT, p.kind);
    ASSERT_EQ(ALKT_SUBSTRATE_TCP, p.substrate);
    ASSERT_EQ(ALKT_HOST_NAME, p.host.kind);
    ASSERT_STR_EQ("db.example.com", p.host.name);
    ASSERT_EQ(0, p.host.ip.family);
    ASSERT_EQ(5432, p.port);
    ASSERT_EQ(0, p.listen);
    ASSERT_EQ('\0', p.path[0]);
    PASS();
}

TEST open_direct_udp_ipv4(void)
{
    alkt_open_params p;
    static const unsigned char want[16] = {192, 0, 2, 1};
    ASSERT_EQ(ALKT_OK, tp_open("{\"substrate\":\"udp\",\"host\":\"192.0.2.1\","
                               "\"port\":53}",
                               &p));
    ASSERT_EQ(ALKT_OPEN_DIRECT, p.kind);
    ASSERT_EQ(ALKT_SUBSTRATE_UDP, p.substrate);
    ASSERT_EQ(ALKT_HOST_IP, p.host.kind);
    ASSERT_EQ(4, p.host.ip.family);
    ASSERT_MEM_EQ(want, p.host.ip.bytes, 16);
    ASSERT_EQ('\0', p.host.name[0]);
    ASSERT_EQ(53, p.port);
    ASSERT_EQ(0, p.listen);
    ASSERT_STR_EQ("udp", alkt_substrate_name(p.substrate));
    {   /* the name of every substrate is the JSON's spelling */
        alkt_result r = ALKT_OK;            /* the result enum has a name */
        ASSERT_STR_EQ("tcp", alkt_substrate_name(ALKT_SUBSTRATE_TCP));
        ASSERT_STR_EQ("unix", alkt_substrate_name(ALKT_SUBSTRATE_UNIX));
        ASSERT_EQ(NULL, alkt_substrate_name((alkt_substrate)0));
        ASSERT_EQ(NULL, alkt_substrate_name((alkt_substrate)99));
        ASSERT_EQ(0, r);
        /* every code is within [ALKT__RESULT_LOWEST, 0] */
#define T_CODE_IN_RANGE(name, value, text)                                    \
    ASSERTm(#name, (name) >= ALKT__RESULT_LOWEST && (name) <= 0);
        ALKT_RESULT_LIST(T_CODE_IN_RANGE)
#undef T_CODE_IN_RANGE
    }
    PASS();
}

TEST open_direct_tcp_ipv6_and_mapped(void)
{
    alkt_open_params p;
    static const unsigned char v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                         0,    0,    0,    0,    0, 0, 0, 1};
    static const unsigned char mapped[16] = {0, 0, 0, 0,    0,    0, 0, 0,
                                             0, 0, 0xff, 0xff, 192, 0, 2, 1};
    ASSERT_EQ(ALKT_OK, tp_open("{\"substrate\":\"tcp\",\"host\":"
                               "\"2001:DB8::1\",\"port\":65535}",
                               &p));
    ASSERT_EQ(ALKT_OPEN_DIRECT, p.kind);
    ASSERT_EQ(ALKT_SUBSTRATE_TCP, p.substrate);
    ASSERT_EQ(ALKT_HOST_IP, p.host.kind);
    ASSERT_EQ(6, p.host.ip.family);
    ASSERT_MEM_EQ(v6, p.host.ip.bytes, 16);
    ASSERT_EQ(65535, p.port);
    ASSERT_EQ(ALKT_OK, tp_open("{\"substrate\":\"tcp\",\"host\":"
                               "\"::ffff:192.0.2.1\",\"port\":1}",
                               &p));
    ASSERT_EQ(6, p.host.ip.family);
    ASSERT_MEM_EQ(mapped, p.host.ip.bytes, 16);
    ASSERT_EQ(1, p.port);
    PASS();
}

TEST open_direct_unix(void)
{
    alkt_open_params p;
    ASSERT_EQ(ALKT_OK,
              tp_open("{\"substrate\":\"unix\",\"path\":\"/run/a.sock\"}", &p));
    ASSERT_EQ(ALKT_OPEN_DIRECT, p.kind);
    ASSERT_EQ(ALKT_SUBSTRATE_UNIX, p.substrate);
    ASSERT_EQ(ALKT_HOST_NONE, p.host.kind);
    ASSERT_EQ(0, p.port);
    ASSERT_EQ(0, p.listen);
    ASSERT_STR_EQ("/run/a.sock", p.path);
    /* escapes are decoded into the path; a surrogate pair into UTF-8 */
    ASSERT_EQ(ALKT_OK,
              tp_open("{\"substrate\":\"unix\",\"path\":"
                      "\"/t\\\"b\\\\c\\u00e9\\t\\ud83d\\ude00\\/\"}",
                      &p));
    ASSERT_STR_EQ("/t\"b\\c\xc3\xa9\t\xf0\x9f\x98\x80/", p.path);
    PASS();
}

TEST open_forwarded(void)
{
    alkt_open_params p;
    ASSERT_EQ(ALKT_OK, tp_open("{\"listen\":8080,\"substrate\":\"tcp\"}", &p));
    ASSERT_EQ(ALKT_OPEN_FORWARDED, p.kind);
    ASSERT_EQ(ALKT_SUBSTRATE_TCP, p.substrate);
    ASSERT_EQ(ALKT_HOST_NONE, p.host.kind);
    ASSERT_EQ(0, p.host.ip.family);
    ASSERT_EQ(8080, p.listen);
    ASSERT_EQ(0, p.port);
    ASSERT_EQ(ALKT_OK, tp_open("{\"substrate\":\"udp\",\"host\":\"127.0.0.1\","
                               "\"listen\":65535}",
                               &p));
    ASSERT_EQ(ALKT_OPEN_FORWARDED, p.kind);
    ASSERT_EQ(ALKT_SUBSTRATE_UDP, p.substrate);
    ASSERT_EQ(ALKT_HOST_IP, p.host.kind);
    ASSERT_EQ(4, p.host.ip.family);
    ASSERT_EQ(127, p.host.ip.bytes[0]);
    ASSERT_EQ(1, p.host.ip.bytes[3]);
    ASSERT_EQ(65535, p.listen);
    ASSERT_EQ(ALKT_OK, tp_open("{\"listen\":1,\"substrate\":\"tcp\","
                               "\"host\":\"::\"}",
                               &p));
    ASSERT_EQ(ALKT_HOST_IP, p.host.kind);
    ASSERT_EQ(6, p.host.ip.family);
    ASSERT_EQ(1, p.listen);
    PASS();
}

TEST open_whitespace_order_and_escaped_keys(void)
{
    alkt_open_params a, b;
    ASSERT_EQ(ALKT_OK, tp_open(" \n\t{ \"port\" : 22 ,\r\n \"host\" : \"a\" ,"
                               " \"substrate\" : \"tcp\" }\n",
                               &a));
    ASSERT_EQ(ALKT_OK, tp_open("{\"\\u0073ubstrate\":\"tcp\",\"ho\\u0073t\":"
                               "\"a\",\"p\\u006Frt\":22}",
                               &b));
    ASSERT_EQ(ALKT_HOST_NAME, a.host.kind);
    ASSERT_STR_EQ("a", a.host.name);
    ASSERT_EQ(22, a.port);
    ASSERT_MEM_EQ(&a, &b, sizeof a); /* equal documents, equal structs */
    PASS();
}

/* ---- open params: errors ------------------------------------------------ */

TEST open_port_boundaries(void)
{
    alkt_open_params p;
    const char *j0 = "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":0}";
    const char *j1 = "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":65536}";
    ASSERT_EQ(ALKT_OK,
              tp_open("{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1}", &p));
    ASSERT_EQ(1, p.port);
    CHECK_CALL(tp_open_err(j0, ALKT_ERR_OUT_OF_RANGE, 37, "port"));
    CHECK_CALL(tp_open_err(j1, ALKT_ERR_OUT_OF_RANGE, 37, "port"));
    CHECK_CALL(tp_open_err("{\"listen\":0,\"substrate\":\"tcp\"}",
                           ALKT_ERR_OUT_OF_RANGE, 10, "listen"));
    CHECK_CALL(tp_open_err("{\"listen\":65536,\"substrate\":\"tcp\"}",
                           ALKT_ERR_OUT_OF_RANGE, 10, "listen"));
    CHECK_CALL(tp_open_err("{\"listen\": 0, \"substrate\": \"tcp\"}",
                           ALKT_ERR_OUT_OF_RANGE, 11, "listen"));
    PASS();
}

TEST open_numbers_not_integer_negative_overflow(void)
{
    CHECK_CALL(tp_open_err("{\"port\":1.0}", ALKT_ERR_NOT_INTEGER, 8, "port"));
    CHECK_CALL(tp_open_err("{\"port\":1e3}", ALKT_ERR_NOT_INTEGER, 8, "port"));
    CHECK_CALL(tp_open_err("{\"port\":22E0}", ALKT_ERR_NOT_INTEGER, 8, "port"));
    CHECK_CALL(tp_open_err("{\"listen\":-1}", ALKT_ERR_OUT_OF_RANGE, 10,
                           "listen"));
    CHECK_CALL(tp_open_err("{\"listen\":-0}", ALKT_ERR_OUT_OF_RANGE, 10,
                           "listen"));
    CHECK_CALL(tp_open_err("{\"port\":18446744073709551616}",
                           ALKT_ERR_OUT_OF_RANGE, 8, "port"));
    CHECK_CALL(tp_open_err("{\"port\":99999999999999999999}",
                           ALKT_ERR_OUT_OF_RANGE, 8, "port"));
    CHECK_CALL(tp_open_err("{\"port\":18446744073709551615}",
                           ALKT_ERR_OUT_OF_RANGE, 8, "port"));
    CHECK_CALL(tp_open_err("{\"port\":4294967297}", ALKT_ERR_OUT_OF_RANGE, 8,
                           "port"));
    CHECK_CALL(tp_open_err("{\"port\":65537}", ALKT_ERR_OUT_OF_RANGE, 8,
                           "port"));
    PASS();
}

TEST open_wrong_types(void)
{
    CHECK_CALL(tp_open_err("{\"port\":\"22\"}", ALKT_ERR_WRONG_TYPE, 8,
                           "port"));
    CHECK_CALL(tp_open_err("{\"listen\":true}", ALKT_ERR_WRONG_TYPE, 10,
                           "listen"));
    CHECK_CALL(tp_open_err("{\"substrate\":null}", ALKT_ERR_WRONG_TYPE, 13,
                           "substrate"));
    CHECK_CALL(tp_open_err("{\"host\":1}", ALKT_ERR_WRONG_TYPE, 8, "host"));
    CHECK_CALL(tp_open_err("{\"path\":[]}", ALKT_ERR_WRONG_TYPE, 8, "path"));
    CHECK_CALL(tp_open_err("{\"host\":{}}", ALKT_ERR_WRONG_TYPE, 8, "host"));
    CHECK_CALL(tp_open_err("[]", ALKT_ERR_WRONG_TYPE, 0, ""));
    CHECK_CALL(tp_open_err("  null", ALKT_ERR_WRONG_TYPE, 2, ""));
    CHECK_CALL(tp_open_err("\"tcp\"", ALKT_ERR_WRONG_TYPE, 0, ""));
    PASS();
}

TEST open_missing_fields(void)
{
    CHECK_CALL(tp_open_err("{}", ALKT_ERR_MISSING_FIELD, 0, "substrate"));
    CHECK_CALL(tp_open_err("  {\"host\":\"a\",\"port\":1}",
                           ALKT_ERR_MISSING_FIELD, 2, "substrate"));
    CHECK_CALL(tp_open_err("\n {\"substrate\":\"tcp\",\"host\":\"a\"}",
                           ALKT_ERR_MISSING_FIELD, 2, "port"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"udp\",\"port\":1}",
                           ALKT_ERR_MISSING_FIELD, 0, "host"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"tcp\"}", ALKT_ERR_MISSING_FIELD,
                           0, "host"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"unix\"}", ALKT_ERR_MISSING_FIELD,
                           0, "path"));
    CHECK_CALL(tp_open_err("{\"listen\":5}", ALKT_ERR_MISSING_FIELD, 0,
                           "substrate"));
    PASS();
}

TEST open_fields_not_allowed(void)
{
    const char *j;
    j = "{\"substrate\":\"unix\",\"path\":\"/s\",\"host\":\"a\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"host"),
                           "host"));
    j = "{\"substrate\":\"unix\",\"port\":1,\"path\":\"/s\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"port"),
                           "port"));
    /* not allowed comes before missing; schema order host before port */
    j = "{\"port\":1,\"substrate\":\"unix\",\"host\":\"a\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"host"),
                           "host"));
    j = "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1,\"path\":\"/s\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"path"),
                           "path"));
    j = "{\"substrate\":\"udp\",\"path\":\"/s\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"path"),
                           "path"));
    j = "{\"listen\":9,\"substrate\":\"tcp\",\"port\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"port"),
                           "port"));
    j = "{\"listen\":9,\"substrate\":\"tcp\",\"path\":\"/s\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"path"),
                           "path"));
    j = "{\"path\":\"/s\",\"port\":2,\"listen\":9,\"substrate\":\"udp\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_FIELD_NOT_ALLOWED, tp_at(j, "\"port"),
                           "port"));
    PASS();
}

TEST open_listen_unix_and_forwarded_name(void)
{
    const char *j;
    j = "{\"listen\":9,\"substrate\":\"unix\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_BAD_ENUM, tp_at(j, "\"unix"),
                           "substrate"));
    j = "{\"substrate\" : \"unix\",\"path\":\"/s\",\"listen\":9}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_BAD_ENUM, tp_at(j, "\"unix"),
                           "substrate"));
    j = "{\"listen\":9,\"substrate\":\"tcp\",\"host\": \"gw.example\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_BAD_ADDRESS, tp_at(j, "\"gw"), "host"));
    PASS();
}

TEST open_substrate_enum(void)
{
    CHECK_CALL(tp_open_err("{\"substrate\":\"TCP\"}", ALKT_ERR_BAD_ENUM, 13,
                           "substrate"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"sctp\"}", ALKT_ERR_BAD_ENUM, 13,
                           "substrate"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"\"}", ALKT_ERR_BAD_ENUM, 13,
                           "substrate"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"tc\"}", ALKT_ERR_BAD_ENUM, 13,
                           "substrate"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"tcpx\"}", ALKT_ERR_BAD_ENUM, 13,
                           "substrate"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"unixunixunixunix\"}",
                           ALKT_ERR_BAD_ENUM, 13, "substrate"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"icmp\"}", ALKT_ERR_BAD_ENUM, 13,
                           "substrate"));
    CHECK_CALL(tp_open_err("{\"substrate\":\"tcp\\u0000\"}",
                           ALKT_ERR_NUL_IN_STRING, 13, "substrate"));
    PASS();
}

TEST open_duplicate_and_unknown_keys(void)
{
    const char *j;
    j = "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":9,\"port\":9}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_DUPLICATE_FIELD, 39, "port"));
    j = "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":9,\"p\\u006frt\":9}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_DUPLICATE_FIELD, 39, "port"));
    j = "{\"substrate\":\"tcp\",\"\\u0073ubstrate\":\"udp\"}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_DUPLICATE_FIELD, 19, "substrate"));
    j = "{\"substrate\":\"tcp\",\"bogus\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 19, "bogus"));
    j = "{\"a b\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1, "a?b"));
    j = "{\"\xc3\xa9\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1, "??"));
    j = "{\"\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1, "\"\""));
    j = "{\"Port\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1, "Port"));
    j = "{\"por\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1, "por"));
    j = "{\"ports\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1, "ports"));
    /* an escaped unknown key is shown raw */
    j = "{\"x\\n\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1, "x\\n"));
    /* a key of 40 bytes is cut to 32 and marked */
    j = "{\"abcdefghijklmnopqrstuvwxyz0123456789ABCD\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1,
                           "abcdefghijklmnopqrstuvwxyz012345..."));
    /* an escaped key too long for any field is unknown, not an error */
    j = "{\"\\u0070ort_and_a_lot_more_text_beyond_32\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNKNOWN_FIELD, 1,
                           "\\u0070ort_and_a_lot_more_text_be..."));
    j = "{\"\\ud800x\":1}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_BAD_SURROGATE, 2, ""));
    PASS();
}

TEST open_strings_nul_surrogate_path_limits(void)
{
    char j[400], path[200];
    const char *s;
    alkt_open_params p;
    s = "{\"substrate\":\"tcp\",\"host\":\"a\\u0000b\",\"port\":1}";
    CHECK_CALL(tp_open_err(s, ALKT_ERR_NUL_IN_STRING, 26, "host"));
    s = "{\"substrate\":\"unix\",\"path\":\"/a\\ud800\"}";
    CHECK_CALL(tp_open_err(s, ALKT_ERR_BAD_SURROGATE, 30, "path"));
    s = "{\"substrate\":\"unix\",\"path\":\"/a\\udc00\\ud800\"}";
    CHECK_CALL(tp_open_err(s, ALKT_ERR_BAD_SURROGATE, 30, "path"));
    s = "{\"substrate\":\"unix\",\"path\":\"/\\ud800\\u0041\"}";
    CHECK_CALL(tp_open_err(s, ALKT_ERR_BAD_SURROGATE, 29, "path"));
    s = "{\"substrate\":\"unix\",\"path\":\"\"}";
    CHECK_CALL(tp_open_err(s, ALKT_ERR_EMPTY, 27, "path"));
    s = "{\"substrate\":\"unix\",\"path\":\"\\u0000\"}";
    CHECK_CALL(tp_open_err(s, ALKT_ERR_NUL_IN_STRING, 27, "path"));
    /* 107 bytes fit, 108 do not (raw and escaped) */
    tp_repeat(path, 'p', 107);
    sprintf(j, "{\"substrate\":\"unix\",\"path\":\"%s\"}", path);
    ASSERT_EQ(ALKT_OK, tp_open(j, &p));
    ASSERT_EQ(107, strlen(p.path));
    ASSERT_STR_EQ(path, p.path);
    tp_repeat(path, 'p', 108);
    sprintf(j, "{\"substrate\":\"unix\",\"path\":\"%s\"}", path);
    CHECK_CALL(tp_open_err(j, ALKT_ERR_STRING_TOO_LONG, 27, "path"));
    tp_repeat(path, 'p', 106);
    sprintf(j, "{\"substrate\":\"unix\",\"path\":\"%s\\n\"}", path);
    ASSERT_EQ(ALKT_OK, tp_open(j, &p));
    ASSERT_EQ(107, strlen(p.path));
    tp_repeat(path, 'p', 107);
    sprintf(j, "{\"substrate\":\"unix\",\"path\":\"%s\\n\"}", path);
    CHECK_CALL(tp_open_err(j, ALKT_ERR_STRING_TOO_LONG, 27, "path"));
    PASS();
}

TEST open_host_classification(void)
{
    static const struct {
        const char *host;
        int code;
    } cases[] = {
        {"1.2.3.256", ALKT_ERR_BAD_ADDRESS},
        {"01.2.3.4", ALKT_ERR_BAD_ADDRESS},
        {"1.2.3", ALKT_ERR_BAD_ADDRESS},
        {"123", ALKT_ERR_BAD_ADDRESS},
        {"1.2.3.4.", ALKT_ERR_BAD_ADDRESS},
        {"fe80::1%eth0", ALKT_ERR_BAD_ADDRESS},
        {"1:2:3:4:5:6:7:8:9", ALKT_ERR_BAD_ADDRESS},
        {"a:b", ALKT_ERR_BAD_ADDRESS},
        {"-a.example", ALKT_ERR_BAD_HOSTNAME},
        {"a-.example", ALKT_ERR_BAD_HOSTNAME},
        {"a..b", ALKT_ERR_BAD_HOSTNAME},
        {"example.com.", ALKT_ERR_BAD_HOSTNAME},
        {"a_b", ALKT_ERR_BAD_HOSTNAME},
        {"a.123", ALKT_ERR_BAD_HOSTNAME},
        {"a b", ALKT_ERR_BAD_HOSTNAME},
        {"1.2.3.4_", ALKT_ERR_BAD_HOSTNAME},
        {"1.2.3.4:", ALKT_ERR_BAD_ADDRESS},
    };
    size_t i;
    char j[600];
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sprintf(j, "{\"substrate\":\"tcp\",\"port\":1,\"host\":\"%s\"}",
                cases[i].host);
        CHECK_CALL(tp_open_err(j, cases[i].code, 35, "host"));
    }
    CHECK_CALL(tp_open_err("{\"substrate\":\"tcp\",\"port\":1,\"host\":\"\"}",
                           ALKT_ERR_EMPTY, 35, "host"));
    PASS();
}

TEST open_host_length_limits(void)
{
    char host[300], j[600];
    alkt_open_params p;
    /* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 */
    tp_repeat(host, 'a', 63);
    host[63] = '.';
    tp_repeat(host + 64, 'b', 63);
    host[127] = '.';
    tp_repeat(host + 128, 'c', 63);
    host[191] = '.';
    tp_repeat(host + 192, 'd', 61);
    ASSERT_EQ(253, strlen(host));
    sprintf(j, "{\"substrate\":\"tcp\",\"host\":\"%s\",\"port\":7}", host);
    ASSERT_EQ(ALKT_OK, tp_open(j, &p));
    ASSERT_EQ(ALKT_HOST_NAME, p.host.kind);
    ASSERT_STR_EQ(host, p.host.name);
    host[253] = 'd';
    host[254] = '\0';
    sprintf(j, "{\"substrate\":\"tcp\",\"host\":\"%s\",\"port\":7}", host);
    CHECK_CALL(tp_open_err(j, ALKT_ERR_STRING_TOO_LONG, 26, "host"));
    /* a 64-byte label */
    tp_repeat(host, 'a', 64);
    sprintf(j, "{\"substrate\":\"tcp\",\"host\":\"%s\",\"port\":7}", host);
    CHECK_CALL(tp_open_err(j, ALKT_ERR_BAD_HOSTNAME, 26, "host"));
    tp_repeat(host, 'a', 63);
    sprintf(j, "{\"substrate\":\"tcp\",\"host\":\"%s\",\"port\":7}", host);
    ASSERT_EQ(ALKT_OK, tp_open(j, &p));
    PASS();
}

TEST open_reader_errors_carry_path_and_position(void)
{
    const char *j;
    j = "{\"substrate\":\"tcp\",\n \"port\":}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_SYNTAX, 28, "port"));
    j = "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1} x";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_TRAILING_DATA, 40, ""));
    j = "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1,}";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_SYNTAX, 39, ""));
    j = "{\"substrate\":\"tcp\"";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_UNEXPECTED_END, 18, ""));
    CHECK_CALL(tp_open_err("", ALKT_ERR_UNEXPECTED_END, 0, ""));
    /* a missing field is found only after the whole document is valid */
    j = "{\"substrate\":\"tcp\"} {";
    CHECK_CALL(tp_open_err(j, ALKT_ERR_TRAILING_DATA, 20, ""));
    PASS();
}

TEST open_line_column_and_limits(void)
{
    const char *j = "{\n  \"substrate\": \"tcp\",\n  \"host\": \"a\",\n"
                    "  \"port\": 70000\n}";
    alkt_open_params p, zero;
    alkt_error e;
    alkt_json_limits lim;
    ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE,
              alkt_open_params_decode(j, strlen(j), NULL, &p, &e));
    ASSERT_EQ(tp_at(j, "70000"), e.offset);
    ASSERT_EQ(4, e.line);
    ASSERT_EQ(11, e.column);
    ASSERT_STR_EQ("port", e.path);
    ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE,
              alkt_open_params_decode(j, strlen(j), NULL, &p, NULL));
    ASSERT_EQ(ALKT_ERR_ARG,
              alkt_open_params_decode(j, strlen(j), NULL, NULL, &e));
    /* limits reach the reader: a size limit below the input's length */
    memset(&lim, 0, sizeof lim);
    memset(&zero, 0, sizeof zero);
    lim.max_size = 10;
    memset(&p, 0x5A, sizeof p);
    ASSERT_EQ(ALKT_ERR_TOO_LARGE,
              alkt_open_params_decode(j, strlen(j), &lim, &p, &e));
    ASSERT_EQ(ALKT_ERR_TOO_LARGE, e.code);
    ASSERT_EQ(10, e.offset);
    ASSERT_EQ(0, e.line);
    ASSERT_EQ(0, e.column);
    ASSERT_STR_EQ("", e.path);
    ASSERT_MEM_EQ(&zero, &p, sizeof p);
    lim.max_size = strlen(j);
    ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE,
              alkt_open_params_decode(j, strlen(j), &lim, &p, &e));
    /* NULL json with length 0 is an (empty) document */
    ASSERT_EQ(ALKT_ERR_UNEXPECTED_END,
              alkt_open_params_decode(NULL, 0, NULL, &p, &e));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_open_params_decode(NULL, 3, NULL, &p, &e));
    ASSERT_EQ(ALKT_ERR_ARG, e.code);
    PASS();
}

/* alkt_open_params_direct builds what the decoder reads from the same
 * fields, and refuses what it refuses, leaving *p zeroed. */
TEST open_direct_helper(void)
{
    static const struct { const char *host; int sub; unsigned port; int rc; } cases[] = {
        {"db.internal", ALKT_SUBSTRATE_TCP, 5432, ALKT_OK},
        {"192.0.2.1", ALKT_SUBSTRATE_UDP, 53, ALKT_OK},
        {"::ffff:192.0.2.1", ALKT_SUBSTRATE_TCP, 1, ALKT_OK},
        {"2001:db8::1", ALKT_SUBSTRATE_TCP, 65535, ALKT_OK},
        {"", ALKT_SUBSTRATE_TCP, 1, ALKT_ERR_EMPTY},
        {"-a", ALKT_SUBSTRATE_TCP, 1, ALKT_ERR_BAD_HOSTNAME},
        {"1.2.3.256", ALKT_SUBSTRATE_TCP, 1, ALKT_ERR_BAD_ADDRESS},
        {"a:b", ALKT_SUBSTRATE_TCP, 1, ALKT_ERR_BAD_ADDRESS},
        {"a", ALKT_SUBSTRATE_TCP, 0, ALKT_ERR_OUT_OF_RANGE},
        {"a", ALKT_SUBSTRATE_UNIX, 1, ALKT_ERR_ARG},
        {"a", ALKT_SUBSTRATE_NONE, 1, ALKT_ERR_ARG},
    };
    alkt_open_params p, q, zero;
    char doc[600], name[ALKT_HOST_MAX + 2];
    size_t k;
    memset(&zero, 0, sizeof zero);
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        memset(&p, 0x5A, sizeof p);
        ASSERT_EQ_FMT(cases[k].rc,
                      alkt_open_params_direct(&p, (alkt_substrate)cases[k].sub, cases[k].host,
                                              strlen(cases[k].host), (uint16_t)cases[k].port),
                      "%d");
        if (cases[k].rc != ALKT_OK) {
            ASSERT_MEM_EQ(&zero, &p, sizeof p);
            continue;
        }
        snprintf(doc, sizeof doc, "{\"substrate\":\"%s\",\"host\":\"%s\",\"port\":%u}",
                 alkt_substrate_name(p.substrate), cases[k].host, cases[k].port);
        ASSERT_EQ(ALKT_OK, tp_open(doc, &q));
        ASSERT_MEM_EQ(&q, &p, sizeof p);
    }
    /* the length is the caller's: a longer buffer's tail is not read */
    ASSERT_EQ(ALKT_OK, alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, "web:80", 3, 80));
    ASSERT_STR_EQ("web", p.host.name);
    /* the longest name, and one byte more */
    memset(name, 'a', sizeof name);
    for (k = 63; k < ALKT_HOST_MAX; k += 64)
        name[k] = '.';
    ASSERT_EQ(ALKT_OK, alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, name, ALKT_HOST_MAX, 1));
    ASSERT_EQ(ALKT_ERR_STRING_TOO_LONG,
              alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, name, ALKT_HOST_MAX + 1, 1));
    ASSERT_MEM_EQ(&zero, &p, sizeof p);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, NULL, 0, 1));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_open_params_direct(NULL, ALKT_SUBSTRATE_TCP, "a", 1, 1));
    PASS();
}

SUITE(alkt_open_suite)
{
    RUN_TEST(open_direct_tcp_name);
    RUN_TEST(open_direct_udp_ipv4);
    RUN_TEST(open_direct_tcp_ipv6_and_mapped);
    RUN_TEST(open_direct_unix);
    RUN_TEST(open_forwarded);
    RUN_TEST(open_whitespace_order_and_escaped_keys);
    RUN_TEST(open_port_boundaries);
    RUN_TEST(open_numbers_not_integer_negative_overflow);
    RUN_TEST(open_wrong_types);
    RUN_TEST(open_missing_fields);
    RUN_TEST(open_fields_not_allowed);
    RUN_TEST(open_listen_unix_and_forwarded_name);
    RUN_TEST(open_substrate_enum);
    RUN_TEST(open_duplicate_and_unknown_keys);
    RUN_TEST(open_strings_nul_surrogate_path_limits);
    RUN_TEST(open_host_classification);
    RUN_TEST(open_host_length_limits);
    RUN_TEST(open_reader_errors_carry_path_and_position);
    RUN_TEST(open_line_column_and_limits);
    RUN_TEST(open_direct_helper);
}

/* ---- listen reply ------------------------------------------------------- */

TEST reply_valid_and_project_agree(void)
{
    static const char *docs[] = {
        "{\"address\":\"192.0.2.7\",\"port\":40000}",
        "{\"port\":1,\"address\":\"2001:0db8:0000:0000:0000:0000:0000:0001\"}",
        " {\"address\" : \"::\" , \"port\" : 65535 } ",
    };
    static const unsigned char v4[16] = {192, 0, 2, 7};
    static const unsigned char v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                         0,    0,    0,    0,    0, 0, 0, 1};
    static const unsigned char any[16] = {0};
    alkt_listen_reply r, q;
    alkt_error e;
    size_t i;
    for (i = 0; i < 3; i++) {
        memset(&r, 0x5A, sizeof r);
        memset(&e, 0x5A, sizeof e);
        ASSERT_EQ(ALKT_OK, alkt_listen_reply_decode(docs[i], strlen(docs[i]),
                                                    NULL, &r, &e));
        ASSERT_EQ(ALKT_OK, e.code);
        ASSERT_EQ(0, e.offset);
        ASSERT_STR_EQ("", e.path);
        memset(&q, 0x5A, sizeof q);
        ASSERT_EQ(1, alkt_listen_reply_project(docs[i], strlen(docs[i]), &q));
        ASSERT_MEM_EQ(&r, &q, sizeof r);
    }
    ASSERT_EQ(ALKT_OK,
              alkt_listen_reply_decode(docs[0], strlen(docs[0]), NULL, &r, &e));
    ASSERT_EQ(4, r.address.family);
    ASSERT_MEM_EQ(v4, r.address.bytes, 16);
    ASSERT_EQ(40000, r.port);
    ASSERT_EQ(ALKT_OK,
              alkt_listen_reply_decode(docs[1], strlen(docs[1]), NULL, &r, &e));
    ASSERT_EQ(6, r.address.family);
    ASSERT_MEM_EQ(v6, r.address.bytes, 16);
    ASSERT_EQ(1, r.port);
    ASSERT_EQ(ALKT_OK,
              alkt_listen_reply_decode(docs[2], strlen(docs[2]), NULL, &r, &e));
    ASSERT_EQ(6, r.address.family);
    ASSERT_MEM_EQ(any, r.address.bytes, 16);
    ASSERT_EQ(65535, r.port);
    ASSERT_EQ(ALKT_OK,
              alkt_listen_reply_decode(docs[0], strlen(docs[0]), NULL, &r,
                                       NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_listen_reply_decode(docs[0], strlen(docs[0]),
                                                     NULL, NULL, &e));
    ASSERT_EQ(0, alkt_listen_reply_project(docs[0], strlen(docs[0]), NULL));
    PASS();
}

TEST reply_errors(void)
{
    char j[200], addr[80];
    CHECK_CALL(tp_reply_err("{\"address\":\"192.0.2.7\"}",
                            ALKT_ERR_MISSING_FIELD, 0, "port"));
    CHECK_CALL(tp_reply_err(" {\"port\":9}", ALKT_ERR_MISSING_FIELD, 1,
                            "address"));
    CHECK_CALL(tp_reply_err("{}", ALKT_ERR_MISSING_FIELD, 0, "address"));
    CHECK_CALL(tp_reply_err("{\"address\":\"a.example\",\"port\":9}",
                            ALKT_ERR_BAD_ADDRESS, 11, "address"));
    CHECK_CALL(tp_reply_err("{\"address\":\"\",\"port\":9}",
                            ALKT_ERR_BAD_ADDRESS, 11, "address"));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2.3.4\",\"port\":0}",
                            ALKT_ERR_OUT_OF_RANGE, 28, "port"));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2.3.4\",\"port\":65536}",
                            ALKT_ERR_OUT_OF_RANGE, 28, "port"));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2.3.4\",\"port\":8.0}",
                            ALKT_ERR_NOT_INTEGER, 28, "port"));
    CHECK_CALL(tp_reply_err("{\"address\":4,\"port\":9}", ALKT_ERR_WRONG_TYPE,
                            11, "address"));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2.3.4\",\"port\":\"9\"}",
                            ALKT_ERR_WRONG_TYPE, 28, "port"));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2.3.4\",\"port\":9,\"x\":1}",
                            ALKT_ERR_UNKNOWN_FIELD, 30, "x"));
    CHECK_CALL(tp_reply_err("{\"port\":9,\"port\":9}",
                            ALKT_ERR_DUPLICATE_FIELD, 10, "port"));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2.3.4\",\"port\":9",
                            ALKT_ERR_UNEXPECTED_END, 29, ""));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2.3.4\" \"port\":9}",
                            ALKT_ERR_SYNTAX, 21, ""));
    CHECK_CALL(tp_reply_err("[]", ALKT_ERR_WRONG_TYPE, 0, ""));
    CHECK_CALL(tp_reply_err("", ALKT_ERR_UNEXPECTED_END, 0, ""));
    CHECK_CALL(tp_reply_err("{\"address\":\"1.2\\u0000\",\"port\":9}",
                            ALKT_ERR_NUL_IN_STRING, 11, "address"));
    /* longer than any address text: still BAD_ADDRESS, not TOO_LONG */
    tp_repeat(addr, '1', 60);
    sprintf(j, "{\"address\":\"%s\",\"port\":9}", addr);
    CHECK_CALL(tp_reply_err(j, ALKT_ERR_BAD_ADDRESS, 11, "address"));
    sprintf(j, "{\"address\":\"1111:2222:3333:4444:5555:6666:7777:8888x\","
               "\"port\":9}");
    CHECK_CALL(tp_reply_err(j, ALKT_ERR_BAD_ADDRESS, 11, "address"));
    PASS();
}

SUITE(alkt_reply_suite)
{
    RUN_TEST(reply_valid_and_project_agree);
    RUN_TEST(reply_errors);
}

/* ---- control messages --------------------------------------------------- */

static const char tp_all_sections[] =
    "{\"resources\":[{\"id\":\"r1\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
    "[{\"from\":1,\"to\":1024},{\"from\":8080,\"to\":8080}],\"protocols\":"
    "[\"tcp\",\"udp\"],\"gateway\":\"gw-1\"},{\"id\":\"r2\",\"cidr\":"
    "\"2001:db8::/32\",\"gateway\":\"gw-2\"}],\"authorizations\":"
    "[{\"client\":\"c1\",\"resource\":\"r1\",\"secret\":"
    "\"000102030405060708090a0b0c0d0e0f\",\"expires\":1893456000}],"
    "\"revocations\":[{\"client\":\"c9\",\"resource\":\"r1\"}],\"relays\":"
    "[{\"id\":\"relay-a\",\"address\":\"relay.example.net\",\"port\":3478,"
    "\"token\":\"t0k3n!\"},{\"id\":\"relay-b\",\"address\":"
    "\"198.51.100.2\",\"port\":443,\"token\":\"x\"}]}";

TEST control_all_sections_field_by_field(void)
{
    alkt_control *c = tp_ctl_init(TP_CAP);
    const alkt_resource *r;
    const alkt_authorization *a;
    const alkt_relay *l;
    size_t k;
    static const unsigned char v6[16] = {0x20, 0x01, 0x0d, 0xb8};
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(tp_all_sections, c));
    ASSERT_EQ(1, c->has_resources);
    ASSERT_EQ(1, c->has_authorizations);
    ASSERT_EQ(1, c->has_revocations);
    ASSERT_EQ(1, c->has_relays);
    ASSERT_EQ(2, c->resource_count);
    ASSERT_EQ(1, c->authorization_count);
    ASSERT_EQ(1, c->revocation_count);
    ASSERT_EQ(2, c->relay_count);
    ASSERT(c->resources == tp_ctl_buf.res);
    ASSERT_EQ(TP_CAP, c->resource_cap);
    ASSERT_EQ(TP_CAP, c->relay_cap);
    r = &c->resources[0];
    ASSERT_STR_EQ("r1", r->id);
    ASSERT_EQ(4, r->network.family);
    ASSERT_EQ(10, r->network.bytes[0]);
    ASSERT_EQ(0, r->network.bytes[1]);
    ASSERT_EQ(8, r->prefix_len);
    ASSERT_EQ(2, r->port_range_count);
    ASSERT_EQ(1, r->port_ranges[0].from);
    ASSERT_EQ(1024, r->port_ranges[0].to);
    ASSERT_EQ(8080, r->port_ranges[1].from);
    ASSERT_EQ(8080, r->port_ranges[1].to);
    ASSERT_EQ(0, r->port_ranges[2].from); /* items are zeroed first */
    ASSERT_EQ(ALKT_PROTO_TCP | ALKT_PROTO_UDP, r->protocols);
    ASSERT_STR_EQ("gw-1", r->gateway);
    r = &c->resources[1];
    ASSERT_STR_EQ("r2", r->id);
    ASSERT_EQ(6, r->network.family);
    ASSERT_MEM_EQ(v6, r->network.bytes, 16);
    ASSERT_EQ(32, r->prefix_len);
    ASSERT_EQ(0, r->port_range_count);
    ASSERT_EQ(0, r->protocols);
    ASSERT_STR_EQ("gw-2", r->gateway);
    a = &c->authorizations[0];
    ASSERT_STR_EQ("c1", a->client);
    ASSERT_STR_EQ("r1", a->resource);
    ASSERT_EQ(16, a->secret_len);
    for (k = 0; k < 16; k++)
        ASSERT_EQ(k, a->secret[k]);
    ASSERT_EQ(0, a->secret[16]);
    ASSERT(a->expires == 1893456000u);
    ASSERT_STR_EQ("c9", c->revocations[0].client);
    ASSERT_STR_EQ("r1", c->revocations[0].resource);
    l = &c->relays[0];
    ASSERT_STR_EQ("relay-a", l->id);
    ASSERT_EQ(ALKT_HOST_NAME, l->address.kind);
    ASSERT_STR_EQ("relay.example.net", l->address.name);
    ASSERT_EQ(3478, l->port);
    ASSERT_STR_EQ("t0k3n!", l->token);
    l = &c->relays[1];
    ASSERT_STR_EQ("relay-b", l->id);
    ASSERT_EQ(ALKT_HOST_IP, l->address.kind);
    ASSERT_EQ(4, l->address.ip.family);
    ASSERT_EQ(198, l->address.ip.bytes[0]);
    ASSERT_EQ(2, l->address.ip.bytes[3]);
    ASSERT_EQ('\0', l->address.name[0]);
    ASSERT_EQ(443, l->port);
    ASSERT_STR_EQ("x", l->token);
    PASS();
}

TEST control_empty_and_single_sections(void)
{
    alkt_control *c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"resources\":[],\"authorizations\":[],"
                                     "\"revocations\":[],\"relays\":[]}",
                                     c));
    ASSERT_EQ(1, c->has_resources);
    ASSERT_EQ(1, c->has_authorizations);
    ASSERT_EQ(1, c->has_revocations);
    ASSERT_EQ(1, c->has_relays);
    ASSERT_EQ(0, c->resource_count);
    ASSERT_EQ(0, c->authorization_count);
    ASSERT_EQ(0, c->revocation_count);
    ASSERT_EQ(0, c->relay_count);
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"revocations\":[{\"client\":\"a\","
                                     "\"resource\":\"b\"}]}",
                                     c));
    ASSERT_EQ(0, c->has_resources);
    ASSERT_EQ(0, c->has_authorizations);
    ASSERT_EQ(1, c->has_revocations);
    ASSERT_EQ(0, c->has_relays);
    ASSERT_EQ(0, c->resource_count);
    ASSERT_EQ(0, c->authorization_count);
    ASSERT_EQ(1, c->revocation_count);
    ASSERT_EQ(0, c->relay_count);
    ASSERT_STR_EQ("a", c->revocations[0].client);
    ASSERT_STR_EQ("b", c->revocations[0].resource);
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"relays\":[]}", c));
    ASSERT_EQ(0, c->has_resources);
    ASSERT_EQ(1, c->has_relays);
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"authorizations\":[]}", c));
    ASSERT_EQ(1, c->has_authorizations);
    ASSERT_EQ(0, c->has_revocations);
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"resources\":[]}", c));
    ASSERT_EQ(1, c->has_resources);
    ASSERT_EQ(0, c->has_authorizations);
    PASS();
}

TEST control_top_level_errors(void)
{
    const char *j;
    CHECK_CALL(tp_ctl_err("{}", ALKT_ERR_MISSING_FIELD, 0, ""));
    CHECK_CALL(tp_ctl_err("\n  { }", ALKT_ERR_MISSING_FIELD, 3, ""));
    j = "{\"relays\":[],\"revocations\":[],\"relays\":[]}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_DUPLICATE_FIELD, tp_nth(j, "\"relays", 1),
                          "relays"));
    j = "{\"resources\":[],\"resources\":[]}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_DUPLICATE_FIELD, 16, "resources"));
    j = "{\"relays\":[],\"gateways\":[]}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_UNKNOWN_FIELD, 13, "gateways"));
    j = "{\"resources\":{}}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_WRONG_TYPE, 13, "resources"));
    j = "{\"authorizations\":null}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_WRONG_TYPE, 18, "authorizations"));
    j = "{\"revocations\":[1]}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_WRONG_TYPE, 16, "revocations[0]"));
    j = "{\"relays\":[{\"id\":\"a\",\"address\":\"b.c\",\"port\":1,\"token\":"
        "\"t\"},[]]}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_WRONG_TYPE, tp_at(j, "[]"),
                          "relays[1]"));
    CHECK_CALL(tp_ctl_err("[]", ALKT_ERR_WRONG_TYPE, 0, ""));
    j = "{\"revocations\":[]";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_UNEXPECTED_END, 17, ""));
    j = "{\"revocations\":[{\"client\":\"a\",\"resource\":\"b\"}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_UNEXPECTED_END, strlen(j),
                          "revocations"));
    j = "{\"revocations\":[]} []";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_TRAILING_DATA, 19, ""));
    PASS();
}

TEST control_capacity_limits(void)
{
    const char *rel = "{\"relays\":[{\"id\":\"a\",\"address\":\"1.2.3.4\","
                      "\"port\":1,\"token\":\"t\"},{\"id\":\"b\",\"address\":"
                      "\"1.2.3.4\",\"port\":2,\"token\":\"t\"},{\"id\":\"c\","
                      "\"address\":\"1.2.3.4\",\"port\":3,\"token\":\"t\"}]}";
    const char *rev = "{\"revocations\":[{\"client\":\"a\",\"resource\":\"b\"},"
                      "{\"client\":\"c\",\"resource\":\"d\"}]}";
    const char *res = "{\"resources\":[{\"id\":\"a\",\"cidr\":\"::/0\","
                      "\"gateway\":\"g\"},{\"id\":\"b\",\"cidr\":\"::/0\","
                      "\"gateway\":\"g\"}]}";
    const char *aut = "{\"authorizations\":[{\"client\":\"a\",\"resource\":"
                      "\"b\",\"secret\":\"00000000000000000000000000000000\","
                      "\"expires\":0}]}";
    alkt_control *c;
    CHECK_CALL(tp_ctl_err_cap(rel, 2, ALKT_ERR_TOO_MANY,
                              tp_nth(rel, "{\"id\"", 2), "relays[2]"));
    c = tp_ctl_init(3);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(rel, c));
    ASSERT_EQ(3, c->relay_count);
    ASSERT_EQ(3, c->relays[2].port);
    ASSERT_STR_EQ("c", c->relays[2].id);
    CHECK_CALL(tp_ctl_err_cap(rev, 1, ALKT_ERR_TOO_MANY,
                              tp_nth(rev, "{\"client\"", 1), "revocations[1]"));
    c = tp_ctl_init(2);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(rev, c));
    ASSERT_EQ(2, c->revocation_count);
    CHECK_CALL(tp_ctl_err_cap(res, 1, ALKT_ERR_TOO_MANY,
                              tp_nth(res, "{\"id\"", 1), "resources[1]"));
    c = tp_ctl_init(2);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(res, c));
    ASSERT_EQ(2, c->resource_count);
    ASSERT_STR_EQ("b", c->resources[1].id);
    CHECK_CALL(tp_ctl_err_cap(aut, 0, ALKT_ERR_TOO_MANY,
                              tp_at(aut, "[{") + 1, "authorizations[0]"));
    c = tp_ctl_init(1);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(aut, c));
    ASSERT_EQ(1, c->authorization_count);
    PASS();
}

TEST control_null_arrays(void)
{
    alkt_control c;
    alkt_resource one;
    alkt_error e;
    const char *ok = "{\"resources\":[],\"relays\":[]}";
    const char *j = "{\"relays\":[{\"id\":\"a\",\"address\":\"h\",\"port\":1,"
                    "\"token\":\"t\"}]}";
    memset(&c, 0, sizeof c);
    ASSERT_EQ(ALKT_OK, alkt_control_decode(ok, strlen(ok), NULL, &c, &e));
    ASSERT_EQ(1, c.has_resources);
    ASSERT_EQ(1, c.has_relays);
    memset(&c, 0, sizeof c);
    ASSERT_EQ(ALKT_ERR_TOO_MANY, alkt_control_decode(j, strlen(j), NULL, &c, &e));
    CHECK_CALL(tp_check_err(j, &e, ALKT_ERR_TOO_MANY, 11, "relays[0]"));
    ASSERT_EQ(0, c.has_relays);
    ASSERT_EQ(0, c.relay_count);
    /* a NULL array with a capacity is an argument error, out untouched */
    memset(&c, 0, sizeof c);
    c.resource_cap = 1;
    c.has_relays = 5;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_decode(ok, strlen(ok), NULL, &c, &e));
    ASSERT_EQ(5, c.has_relays);
    memset(&c, 0, sizeof c);
    c.resources = &one;
    c.resource_cap = 1;
    c.authorization_cap = 1;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_decode(ok, strlen(ok), NULL, &c, &e));
    memset(&c, 0, sizeof c);
    c.revocation_cap = 2;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_decode(ok, strlen(ok), NULL, &c, &e));
    memset(&c, 0, sizeof c);
    c.relay_cap = 3;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_decode(ok, strlen(ok), NULL, &c, &e));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_decode(ok, strlen(ok), NULL, NULL, &e));
    /* err may be NULL */
    memset(&c, 0, sizeof c);
    ASSERT_EQ(ALKT_OK, alkt_control_decode(ok, strlen(ok), NULL, &c, NULL));
    PASS();
}

TEST control_error_resets_after_partial_fill(void)
{
    /* a valid first section, then an error: flags and counts back to 0 */
    const char *j = "{\"revocations\":[{\"client\":\"a\",\"resource\":\"b\"}],"
                    "\"relays\":[{\"id\":\"a\",\"address\":\"h\",\"port\":0,"
                    "\"token\":\"t\"}]}";
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_OUT_OF_RANGE, tp_at(j, "0,"),
                          "relays[0].port"));
    PASS();
}

TEST control_ids(void)
{
    char j[400], id[80];
    alkt_control *c;
    tp_repeat(id, 'i', 64);
    sprintf(j, "{\"revocations\":[{\"client\":\"%s\",\"resource\":"
               "\"Az09._:-\"}]}", id);
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(j, c));
    ASSERT_STR_EQ(id, c->revocations[0].client);
    ASSERT_STR_EQ("Az09._:-", c->revocations[0].resource);
    tp_repeat(id, 'i', 65);
    sprintf(j, "{\"revocations\":[{\"client\":\"%s\",\"resource\":\"r\"}]}",
            id);
    CHECK_CALL(tp_ctl_err(j, ALKT_ERR_STRING_TOO_LONG, 26,
                          "revocations[0].client"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":\"a\","
                          "\"resource\":\"a b\"}]}",
                          ALKT_ERR_BAD_VALUE, 41, "revocations[0].resource"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":\"a/b\","
                          "\"resource\":\"r\"}]}",
                          ALKT_ERR_BAD_VALUE, 26, "revocations[0].client"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":\"\xc3\xa9\","
                          "\"resource\":\"r\"}]}",
                          ALKT_ERR_BAD_VALUE, 26, "revocations[0].client"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":\"\","
                          "\"resource\":\"r\"}]}",
                          ALKT_ERR_EMPTY, 26, "revocations[0].client"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":\"a\\u0000\","
                          "\"resource\":\"r\"}]}",
                          ALKT_ERR_NUL_IN_STRING, 26,
                          "revocations[0].client"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":\"a\"}]}",
                          ALKT_ERR_MISSING_FIELD, 16,
                          "revocations[0].resource"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":\"a\","
                          "\"resource\":\"r\",\"x\":1}]}",
                          ALKT_ERR_UNKNOWN_FIELD, 45, "revocations[0].x"));
    CHECK_CALL(tp_ctl_err("{\"revocations\":[{\"client\":7}]}",
                          ALKT_ERR_WRONG_TYPE, 26, "revocations[0].client"));
    PASS();
}

/* A resources section with one resource whose body is `body`. */
static enum greatest_test_res tp_res_err(const char *body, int code,
                                         const char *needle, int nth,
                                         size_t add, const char *path)
{
    char j[2048];
    sprintf(j, "{\"resources\":[{\"id\":\"r\",%s}]}", body);
    return tp_ctl_err(j, code, tp_nth(j, needle, nth) + add, path);
}

static int tp_res_ok(const char *body, alkt_resource *out)
{
    char j[2048];
    alkt_control *c = tp_ctl_init(TP_CAP);
    int rc;
    sprintf(j, "{\"resources\":[{\"id\":\"r\",%s}]}", body);
    rc = tp_ctl_decode(j, c);
    if (rc == ALKT_OK)
        *out = c->resources[0];
    return rc;
}

TEST control_resource_cidr(void)
{
    alkt_resource r;
    static const unsigned char v6[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0,
                                         0,    0,    0,    0,    0, 0, 0, 1};
    ASSERT_EQ(ALKT_OK, tp_res_ok("\"cidr\":\"0.0.0.0/0\",\"gateway\":\"g\"", &r));
    ASSERT_EQ(4, r.network.family);
    ASSERT_EQ(0, r.prefix_len);
    ASSERT_EQ(ALKT_OK,
              tp_res_ok("\"cidr\":\"255.255.255.255/32\",\"gateway\":\"g\"", &r));
    ASSERT_EQ(32, r.prefix_len);
    ASSERT_EQ(255, r.network.bytes[3]);
    ASSERT_EQ(ALKT_OK,
              tp_res_ok("\"cidr\":\"192.168.4.0/22\",\"gateway\":\"g\"", &r));
    ASSERT_EQ(22, r.prefix_len);
    ASSERT_EQ(4, r.network.bytes[2]);
    ASSERT_EQ(ALKT_OK,
              tp_res_ok("\"cidr\":\"2001:db8::1/128\",\"gateway\":\"g\"", &r));
    ASSERT_EQ(6, r.network.family);
    ASSERT_MEM_EQ(v6, r.network.bytes, 16);
    ASSERT_EQ(128, r.prefix_len);
    ASSERT_EQ(ALKT_OK, tp_res_ok("\"cidr\":\"::/0\",\"gateway\":\"g\"", &r));
    ASSERT_EQ(6, r.network.family);
    ASSERT_EQ(0, r.prefix_len);
    {
        static const char *bad[] = {
            "10.0.0.1/8",     "10.0.0.0/33",       "2001:db8::/129",
            "10.0.0.0/08",    "10.0.0.0",          "10.0.0.0/",
            "/8",             "10.0.0.0/x",        "10.0.0.0/1000",
            "10.0.0.0/0",     "2001:db8::1/127",   "10.0.0.0/8/8",
            "10.0.0/8",       "10.0.0.0/-1",       "a.b/8",
            "192.168.5.0/22", "::1/127",           "10.0.0.0/ 8",
            "1111:2222:3333:4444:5555:6666:7777:8888/128x",
        };
        size_t i;
        char body[200];
        for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            sprintf(body, "\"cidr\":\"%s\",\"gateway\":\"g\"", bad[i]);
            CHECK_CALL(tp_res_err(body, ALKT_ERR_BAD_CIDR, "\"cidr\":", 0, 7,
                                  "resources[0].cidr"));
        }
    }
    PASS();
}

TEST control_resource_ports(void)
{
    alkt_resource r;
    char body[1200];
    size_t k, o;
    ASSERT_EQ(ALKT_OK, tp_res_ok("\"ports\":[{\"to\":65535,\"from\":1},"
                                 "{\"from\":7,\"to\":7}],\"cidr\":\"::/0\","
                                 "\"gateway\":\"g\"",
                                 &r));
    ASSERT_EQ(2, r.port_range_count);
    ASSERT_EQ(1, r.port_ranges[0].from);
    ASSERT_EQ(65535, r.port_ranges[0].to);
    ASSERT_EQ(7, r.port_ranges[1].from);
    ASSERT_EQ(7, r.port_ranges[1].to);
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[],\"gateway\":\"g\"",
                          ALKT_ERR_EMPTY, "[]", 0, 0, "resources[0].ports"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"from\":5432,"
                          "\"to\":5431}],\"gateway\":\"g\"",
                          ALKT_ERR_BAD_RANGE, "5431", 0, 0,
                          "resources[0].ports[0].to"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"from\":1,\"to\":2},"
                          "{\"to\":3, \"from\":4}],\"gateway\":\"g\"",
                          ALKT_ERR_BAD_RANGE, "3,", 0, 0,
                          "resources[0].ports[1].to"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"from\":1}],"
                          "\"gateway\":\"g\"",
                          ALKT_ERR_MISSING_FIELD, "{\"from", 0, 0,
                          "resources[0].ports[0].to"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"to\":1}],"
                          "\"gateway\":\"g\"",
                          ALKT_ERR_MISSING_FIELD, "{\"to", 0, 0,
                          "resources[0].ports[0].from"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"from\":0,\"to\":1}],"
                          "\"gateway\":\"g\"",
                          ALKT_ERR_OUT_OF_RANGE, "0,", 0, 0,
                          "resources[0].ports[0].from"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"from\":1,"
                          "\"to\":65536}],\"gateway\":\"g\"",
                          ALKT_ERR_OUT_OF_RANGE, "65536", 0, 0,
                          "resources[0].ports[0].to"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"from\":1,\"to\":2,"
                          "\"by\":1}],\"gateway\":\"g\"",
                          ALKT_ERR_UNKNOWN_FIELD, "\"by", 0, 0,
                          "resources[0].ports[0].by"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[{\"from\":1,\"from\":2}"
                          "],\"gateway\":\"g\"",
                          ALKT_ERR_DUPLICATE_FIELD, "\"from", 1, 0,
                          "resources[0].ports[0].from"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":[80],\"gateway\":\"g\"",
                          ALKT_ERR_WRONG_TYPE, "80", 0, 0,
                          "resources[0].ports[0]"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"ports\":{},\"gateway\":\"g\"",
                          ALKT_ERR_WRONG_TYPE, "{}", 0, 0,
                          "resources[0].ports"));
    /* ALKT_PORT_RANGES_MAX ranges fit; one more is TOO_MANY at that item */
    o = (size_t)sprintf(body, "\"cidr\":\"::/0\",\"ports\":[");
    for (k = 0; k < ALKT_PORT_RANGES_MAX; k++)
        o += (size_t)sprintf(body + o, "%s{\"from\":%u,\"to\":%u}",
                             k ? "," : "", (unsigned)k + 1, (unsigned)k + 1);
    sprintf(body + o, "],\"gateway\":\"g\"");
    ASSERT_EQ(ALKT_OK, tp_res_ok(body, &r));
    ASSERT_EQ(ALKT_PORT_RANGES_MAX, r.port_range_count);
    ASSERT_EQ(16, r.port_ranges[15].from);
    ASSERT_EQ(16, r.port_ranges[15].to);
    sprintf(body + o, ",{\"from\":17,\"to\":17}],\"gateway\":\"g\"");
    CHECK_CALL(tp_res_err(body, ALKT_ERR_TOO_MANY, "{\"from\":17", 0, 0,
                          "resources[0].ports[16]"));
    PASS();
}

TEST control_resource_protocols_and_required(void)
{
    alkt_resource r;
    ASSERT_EQ(ALKT_OK, tp_res_ok("\"cidr\":\"::/0\",\"protocols\":[\"icmp\","
                                 "\"udp\",\"tcp\"],\"gateway\":\"g\"",
                                 &r));
    ASSERT_EQ(ALKT_PROTO_TCP | ALKT_PROTO_UDP | ALKT_PROTO_ICMP, r.protocols);
    ASSERT_EQ(7, r.protocols);
    ASSERT_EQ(ALKT_OK, tp_res_ok("\"cidr\":\"::/0\",\"protocols\":[\"icmp\"],"
                                 "\"gateway\":\"g\"",
                                 &r));
    ASSERT_EQ(ALKT_PROTO_ICMP, r.protocols);
    ASSERT_EQ(ALKT_OK, tp_res_ok("\"cidr\":\"::/0\",\"protocols\":[\"udp\"],"
                                 "\"gateway\":\"g\"",
                                 &r));
    ASSERT_EQ(ALKT_PROTO_UDP, r.protocols);
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"protocols\":[\"tcp\",\"udp\","
                          "\"tcp\"],\"gateway\":\"g\"",
                          ALKT_ERR_DUPLICATE_VALUE, "\"tcp", 1, 0,
                          "resources[0].protocols[2]"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"protocols\":[\"tcp\",\"sctp\"],"
                          "\"gateway\":\"g\"",
                          ALKT_ERR_BAD_ENUM, "\"sctp", 0, 0,
                          "resources[0].protocols[1]"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"protocols\":[\"unix\"],"
                          "\"gateway\":\"g\"",
                          ALKT_ERR_BAD_ENUM, "\"unix", 0, 0,
                          "resources[0].protocols[0]"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"protocols\":[],"
                          "\"gateway\":\"g\"",
                          ALKT_ERR_EMPTY, "[]", 0, 0,
                          "resources[0].protocols"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"protocols\":[6],"
                          "\"gateway\":\"g\"",
                          ALKT_ERR_WRONG_TYPE, "6]", 0, 0,
                          "resources[0].protocols[0]"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"protocols\":\"tcp\","
                          "\"gateway\":\"g\"",
                          ALKT_ERR_WRONG_TYPE, "\"tcp", 0, 0,
                          "resources[0].protocols"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\"", ALKT_ERR_MISSING_FIELD,
                          "{\"id", 0, 0, "resources[0].gateway"));
    CHECK_CALL(tp_res_err("\"gateway\":\"g\"", ALKT_ERR_MISSING_FIELD,
                          "{\"id", 0, 0, "resources[0].cidr"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"gateway\":\"g\",\"id\":\"x\"",
                          ALKT_ERR_DUPLICATE_FIELD, "\"id", 1, 0,
                          "resources[0].id"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"gateway\":\"g h\"",
                          ALKT_ERR_BAD_VALUE, "\"g h", 0, 0,
                          "resources[0].gateway"));
    CHECK_CALL(tp_res_err("\"cidr\":\"::/0\",\"gateway\":\"g\",\"name\":1",
                          ALKT_ERR_UNKNOWN_FIELD, "\"name", 0, 0,
                          "resources[0].name"));
    CHECK_CALL(tp_res_err("\"cidr\":1,\"gateway\":\"g\"", ALKT_ERR_WRONG_TYPE,
                          "1,", 0, 0, "resources[0].cidr"));
    CHECK_CALL(tp_ctl_err("{\"resources\":[{\"cidr\":\"::/0\",\"gateway\":"
                          "\"g\"}]}",
                          ALKT_ERR_MISSING_FIELD, 14, "resources[0].id"));
    PASS();
}

static enum greatest_test_res tp_auth_err(const char *secret,
                                          const char *expires, int code,
                                          const char *needle,
                                          const char *path)
{
    char j[600];
    sprintf(j, "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
               "\"secret\":\"%s\",\"expires\":%s}]}",
            secret, expires);
    return tp_ctl_err(j, code, tp_at(j, needle), path);
}

static int tp_auth_ok(const char *secret, const char *expires,
                      alkt_authorization *out)
{
    char j[600];
    alkt_control *c = tp_ctl_init(TP_CAP);
    int rc;
    sprintf(j, "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
               "\"secret\":\"%s\",\"expires\":%s}]}",
            secret, expires);
    rc = tp_ctl_decode(j, c);
    if (rc == ALKT_OK)
        *out = c->authorizations[0];
    return rc;
}

TEST control_authorization_secret_and_expires(void)
{
    char hex[200];
    alkt_authorization a;
    size_t k;
    for (k = 0; k < 128; k++)
        hex[k] = "0123456789abcdef"[(k * 7) % 16];
    hex[128] = '\0';
    ASSERT_EQ(ALKT_OK, tp_auth_ok(hex, "9007199254740991", &a));
    ASSERT_EQ(64, a.secret_len);
    for (k = 0; k < 64; k++)
        ASSERT_EQ((((2 * k * 7) % 16) << 4) | (((2 * k + 1) * 7) % 16),
                  a.secret[k]);
    ASSERT(a.expires == ALKT_EXPIRES_MAX);
    ASSERT_EQ(ALKT_OK, tp_auth_ok("ffeeddccbbaa99887766554433221100", "0", &a));
    ASSERT_EQ(16, a.secret_len);
    ASSERT_EQ(0xff, a.secret[0]);
    ASSERT_EQ(0xee, a.secret[1]);
    ASSERT_EQ(0x00, a.secret[15]);
    ASSERT_EQ(0, a.secret[16]);
    ASSERT(a.expires == 0);
    ASSERT_EQ(ALKT_OK, tp_auth_ok("0123456789abcdef0123456789abcdef01",
                                  "1893456000", &a));
    ASSERT_EQ(17, a.secret_len);
    ASSERT_EQ(0x01, a.secret[16]);
    hex[130] = '\0';
    hex[128] = 'a';
    hex[129] = 'b';
    CHECK_CALL(tp_auth_err(hex, "1", ALKT_ERR_STRING_TOO_LONG, "\"0",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("0123456789abcdef0123456789abcde", "1",
                           ALKT_ERR_BAD_VALUE, "\"0",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("0123456789abcdef0123456789abcdef0", "1",
                           ALKT_ERR_BAD_VALUE, "\"0",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("0123456789ABCDEF0123456789abcdef", "1",
                           ALKT_ERR_BAD_VALUE, "\"0",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("0123456789abcdef0123456789abcdeF", "1",
                           ALKT_ERR_BAD_VALUE, "\"0",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("0123456789abcdef0123456789abcdeg", "1",
                           ALKT_ERR_BAD_VALUE, "\"0",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("g123456789abcdef0123456789abcdef", "1",
                           ALKT_ERR_BAD_VALUE, "\"g",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("", "1", ALKT_ERR_BAD_VALUE, "\"\"",
                           "authorizations[0].secret"));
    CHECK_CALL(tp_auth_err("00000000000000000000000000000000",
                           "9007199254740992", ALKT_ERR_OUT_OF_RANGE,
                           "9007", "authorizations[0].expires"));
    CHECK_CALL(tp_auth_err("00000000000000000000000000000000", "-1",
                           ALKT_ERR_OUT_OF_RANGE, "-1",
                           "authorizations[0].expires"));
    CHECK_CALL(tp_auth_err("00000000000000000000000000000000", "1e3",
                           ALKT_ERR_NOT_INTEGER, "1e3",
                           "authorizations[0].expires"));
    CHECK_CALL(tp_auth_err("00000000000000000000000000000000", "1.5",
                           ALKT_ERR_NOT_INTEGER, "1.5",
                           "authorizations[0].expires"));
    CHECK_CALL(tp_auth_err("00000000000000000000000000000000",
                           "18446744073709551616", ALKT_ERR_OUT_OF_RANGE,
                           "1844", "authorizations[0].expires"));
    CHECK_CALL(tp_auth_err("00000000000000000000000000000000", "\"1\"",
                           ALKT_ERR_WRONG_TYPE, "\"1\"",
                           "authorizations[0].expires"));
    CHECK_CALL(tp_ctl_err("{\"authorizations\":[{\"client\":\"c\","
                          "\"resource\":\"r\",\"expires\":1}]}",
                          ALKT_ERR_MISSING_FIELD, 19,
                          "authorizations[0].secret"));
    CHECK_CALL(tp_ctl_err("{\"authorizations\":[{\"client\":\"c\","
                          "\"resource\":\"r\",\"secret\":"
                          "\"00000000000000000000000000000000\"}]}",
                          ALKT_ERR_MISSING_FIELD, 19,
                          "authorizations[0].expires"));
    CHECK_CALL(tp_ctl_err("{\"authorizations\":[{\"resource\":\"r\"}]}",
                          ALKT_ERR_MISSING_FIELD, 19,
                          "authorizations[0].client"));
    PASS();
}

static enum greatest_test_res tp_relay_err(const char *address,
                                           const char *port,
                                           const char *token, int code,
                                           const char *needle,
                                           const char *path)
{
    char j[800];
    sprintf(j, "{\"relays\":[{\"id\":\"x\",\"address\":\"%s\",\"port\":%s,"
               "\"token\":\"%s\"}]}",
            address, port, token);
    return tp_ctl_err(j, code, tp_at(j, needle), path);
}

TEST control_relay_fields(void)
{
    char tok[200], j[600];
    alkt_control *c;
    size_t k;
    for (k = 0; k < 128; k++)
        tok[k] = (char)(0x21 + (k % 94) == '"' || 0x21 + (k % 94) == '\\'
                            ? 'q'
                            : 0x21 + (k % 94));
    tok[128] = '\0';
    sprintf(j, "{\"relays\":[{\"token\":\"%s\",\"port\":65535,\"address\":"
               "\"2001:db8::7\",\"id\":\"r\"}]}",
            tok);
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(j, c));
    ASSERT_STR_EQ(tok, c->relays[0].token);
    ASSERT_EQ(65535, c->relays[0].port);
    ASSERT_EQ(ALKT_HOST_IP, c->relays[0].address.kind);
    ASSERT_EQ(6, c->relays[0].address.ip.family);
    ASSERT_EQ(7, c->relays[0].address.ip.bytes[15]);
    /* escapes in the token decode to printable ASCII */
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"relays\":[{\"id\":\"r\",\"address\":"
                                     "\"h\",\"port\":1,\"token\":"
                                     "\"a\\\"\\\\\\u0041~\"}]}",
                                     c));
    ASSERT_STR_EQ("a\"\\A~", c->relays[0].token);
    tok[128] = 'z';
    tok[129] = '\0';
    CHECK_CALL(tp_relay_err("h", "1", tok, ALKT_ERR_STRING_TOO_LONG,
                            "\"!", "relays[0].token"));
    CHECK_CALL(tp_relay_err("h", "1", "a b", ALKT_ERR_BAD_VALUE, "\"a b",
                            "relays[0].token"));
    CHECK_CALL(tp_relay_err("h", "1", "\xc3\xa9", ALKT_ERR_BAD_VALUE,
                            "\"\xc3", "relays[0].token"));
    CHECK_CALL(tp_relay_err("h", "1", "a\\u007f", ALKT_ERR_BAD_VALUE,
                            "\"a\\u", "relays[0].token"));
    CHECK_CALL(tp_relay_err("h", "1", "a\\t", ALKT_ERR_BAD_VALUE, "\"a\\t",
                            "relays[0].token"));
    CHECK_CALL(tp_relay_err("h", "1", "", ALKT_ERR_EMPTY, "\"\"",
                            "relays[0].token"));
    CHECK_CALL(tp_relay_err("h", "1", "a\\u0000", ALKT_ERR_NUL_IN_STRING,
                            "\"a\\u", "relays[0].token"));
    CHECK_CALL(tp_relay_err("h", "0", "t", ALKT_ERR_OUT_OF_RANGE, "0,",
                            "relays[0].port"));
    CHECK_CALL(tp_relay_err("1.2.3.999", "1", "t", ALKT_ERR_BAD_ADDRESS,
                            "\"1.2", "relays[0].address"));
    CHECK_CALL(tp_relay_err("bad_host", "1", "t", ALKT_ERR_BAD_HOSTNAME,
                            "\"bad", "relays[0].address"));
    CHECK_CALL(tp_relay_err("", "1", "t", ALKT_ERR_EMPTY, "\"\"",
                            "relays[0].address"));
    CHECK_CALL(tp_ctl_err("{\"relays\":[{\"id\":\"x\",\"address\":\"h\","
                          "\"port\":1}]}",
                          ALKT_ERR_MISSING_FIELD, 11, "relays[0].token"));
    CHECK_CALL(tp_ctl_err("{\"relays\":[{\"id\":\"x\",\"port\":1,\"token\":"
                          "\"t\"}]}",
                          ALKT_ERR_MISSING_FIELD, 11, "relays[0].address"));
    CHECK_CALL(tp_ctl_err("{\"relays\":[{\"id\":\"x\",\"address\":\"h\","
                          "\"token\":\"t\",\"port\":1,\"port\":1}]}",
                          ALKT_ERR_DUPLICATE_FIELD, 56, "relays[0].port"));
    /* offer_key: optional (a client's relays have none), HEX as a secret,
     * and left out again by the encoder when absent */
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"relays\":[{\"id\":\"r\",\"address\":\"h\","
                                     "\"port\":1,\"token\":\"t\",\"offer_key\":"
                                     "\"000102030405060708090a0b0c0d0eff\"}]}",
                                     c));
    ASSERT_EQ(16u, c->relays[0].offer_key_len);
    ASSERT_EQ(0xff, c->relays[0].offer_key[15]);
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"relays\":[{\"id\":\"r\",\"address\":\"h\","
                                     "\"port\":1,\"token\":\"t\"}]}",
                                     c));
    ASSERT_EQ(0u, c->relays[0].offer_key_len);
    {
        char out[256];
        ptrdiff_t n = alkt_control_encode(c, out, sizeof out - 1, NULL);
        ASSERT(n > 0);
        out[n] = 0;
        ASSERT_EQ(NULL, strstr(out, "offer_key"));
        c->relays[0].offer_key_len = 15;   /* too short: refused, as a secret */
        ASSERT_EQ(ALKT_ERR_BAD_VALUE, (int)alkt_control_encode(c, out, sizeof out, NULL));
    }
    CHECK_CALL(tp_ctl_err("{\"relays\":[{\"id\":\"x\",\"address\":\"h\",\"port\":1,"
                          "\"token\":\"t\",\"offer_key\":\"0001\"}]}",
                          ALKT_ERR_BAD_VALUE, 68, "relays[0].offer_key"));
    PASS();
}

SUITE(alkt_control_suite)
{
    RUN_TEST(control_all_sections_field_by_field);
    RUN_TEST(control_empty_and_single_sections);
    RUN_TEST(control_top_level_errors);
    RUN_TEST(control_capacity_limits);
    RUN_TEST(control_null_arrays);
    RUN_TEST(control_error_resets_after_partial_fill);
    RUN_TEST(control_ids);
    RUN_TEST(control_resource_cidr);
    RUN_TEST(control_resource_ports);
    RUN_TEST(control_resource_protocols_and_required);
    RUN_TEST(control_authorization_secret_and_expires);
    RUN_TEST(control_relay_fields);
}

/* ---- encoders ------------------------------------------------------------ */

static void tp_direct(alkt_open_params *p, alkt_substrate sub, const char *name,
                      uint16_t port)
{
    memset(p, 0, sizeof *p);
    p->kind = ALKT_OPEN_DIRECT;
    p->substrate = sub;
    p->host.kind = ALKT_HOST_NAME;
    strcpy(p->host.name, name);
    p->port = port;
}

/* decode(text) must give back exactly *p (memcmp), and encode it again. */
static enum greatest_test_res tp_open_roundtrip(const alkt_open_params *p,
                                                const char *text)
{
    alkt_open_params q;
    ASSERT_EQ(ALKT_OK, tp_open(text, &q));
    ASSERT_MEM_EQ(p, &q, sizeof q);
    CHECK_CALL(tp_enc(tp_enc_open, &q, text));
    PASS();
}

TEST encode_open_direct(void)
{
    alkt_open_params p;
    const char *t;
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "db.example.com", 5432);
    t = "{\"substrate\":\"tcp\",\"host\":\"db.example.com\",\"port\":5432}";
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    tp_direct(&p, ALKT_SUBSTRATE_UDP, "", 53);
    p.host.kind = ALKT_HOST_IP;
    p.host.ip.family = 4;
    p.host.ip.bytes[0] = 192;
    p.host.ip.bytes[3] = 1;
    t = "{\"substrate\":\"udp\",\"host\":\"192.0.2.1\",\"port\":53}";
    p.host.ip.bytes[2] = 2;
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "", 65535);
    p.host.kind = ALKT_HOST_IP;
    p.host.ip.family = 6;
    p.host.ip.bytes[0] = 0x20;
    p.host.ip.bytes[1] = 0x01;
    p.host.ip.bytes[2] = 0x0d;
    p.host.ip.bytes[3] = 0xb8;
    p.host.ip.bytes[15] = 1;
    t = "{\"substrate\":\"tcp\",\"host\":\"2001:db8::1\",\"port\":65535}";
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    PASS();
}

TEST encode_open_unix_and_forwarded(void)
{
    alkt_open_params p;
    const char *t;
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_DIRECT;
    p.substrate = ALKT_SUBSTRATE_UNIX;
    strcpy(p.path, "/run/a.sock");
    t = "{\"substrate\":\"unix\",\"path\":\"/run/a.sock\"}";
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_FORWARDED;
    p.substrate = ALKT_SUBSTRATE_TCP;
    p.listen = 8080;
    t = "{\"listen\":8080,\"substrate\":\"tcp\"}";
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    p.substrate = ALKT_SUBSTRATE_UDP;
    p.listen = 1;
    p.host.kind = ALKT_HOST_IP;
    p.host.ip.family = 6;
    t = "{\"listen\":1,\"substrate\":\"udp\",\"host\":\"::\"}";
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    p.host.ip.family = 4;
    p.host.ip.bytes[0] = 10;
    p.listen = 65535;
    t = "{\"listen\":65535,\"substrate\":\"udp\",\"host\":\"10.0.0.0\"}";
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    PASS();
}

TEST encode_string_escaping(void)
{
    alkt_open_params p;
    const char *t = "{\"substrate\":\"unix\",\"path\":\"/\\\"q\\\\\\u0001\\b"
                    "\\f\\n\\r\\t\\u001f\x7f\xc3\xa9\xf0\x9f\x98\x80/x\"}";
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_DIRECT;
    p.substrate = ALKT_SUBSTRATE_UNIX;
    strcpy(p.path, "/\"q\\\x01\b\f\n\r\t\x1f\x7f\xc3\xa9\xf0\x9f\x98\x80/x");
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    /* escapes only: */
    strcpy(p.path, "\x1a\x10\x0b");
    CHECK_CALL(tp_enc(tp_enc_open, &p,
                      "{\"substrate\":\"unix\",\"path\":"
                      "\"\\u001a\\u0010\\u000b\"}"));
    PASS();
}

TEST encode_canonicalises_decoded_text(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {" { \"port\" : 22 , \"host\" : \"DB.Example\" , \"substrate\" : "
         "\"tcp\" } ",
         "{\"substrate\":\"tcp\",\"host\":\"DB.Example\",\"port\":22}"},
        {"{\"substrate\":\"tcp\",\"host\":\"2001:0DB8:0:0:0:0:0:0001\","
         "\"port\":1}",
         "{\"substrate\":\"tcp\",\"host\":\"2001:db8::1\",\"port\":1}"},
        {"{\"substrate\":\"tcp\",\"host\":\"1:0:0:2:0:0:0:3\",\"port\":1}",
         "{\"substrate\":\"tcp\",\"host\":\"1:0:0:2::3\",\"port\":1}"},
        {"{\"substrate\":\"tcp\",\"host\":\"1:0:0:2:3:0:0:4\",\"port\":1}",
         "{\"substrate\":\"tcp\",\"host\":\"1::2:3:0:0:4\",\"port\":1}"},
        {"{\"substrate\":\"tcp\",\"host\":\"1:2:3:4:5:6:0:8\",\"port\":1}",
         "{\"substrate\":\"tcp\",\"host\":\"1:2:3:4:5:6:0:8\",\"port\":1}"},
        {"{\"substrate\":\"tcp\",\"host\":\"::ffff:c000:0201\",\"port\":1}",
         "{\"substrate\":\"tcp\",\"host\":\"::ffff:192.0.2.1\",\"port\":1}"},
        {"{\"substrate\":\"tcp\",\"host\":\"0:0:0:0:0:0:0:1\",\"port\":1}",
         "{\"substrate\":\"tcp\",\"host\":\"::1\",\"port\":1}"},
        {"{\"substrate\":\"tcp\",\"host\":\"fe80:0:0:0:0:0:0:0\",\"port\":1}",
         "{\"substrate\":\"tcp\",\"host\":\"fe80::\",\"port\":1}"},
        {"{\"substrate\":\"unix\",\"path\":\"\\/a\\u00e9\\ud83d\\ude00\"}",
         "{\"substrate\":\"unix\",\"path\":\"/a\xc3\xa9\xf0\x9f\x98\x80\"}"},
        {"{\"host\":\"::FFFF:1.2.3.4\",\"substrate\":\"udp\","
         "\"listen\":7}",
         "{\"listen\":7,\"substrate\":\"udp\",\"host\":\"::ffff:1.2.3.4\"}"},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        alkt_open_params p;
        ASSERT_EQ(ALKT_OK, tp_open(cases[i].in, &p));
        CHECK_CALL(tp_enc(tp_enc_open, &p, cases[i].out));
        CHECK_CALL(tp_open_roundtrip(&p, cases[i].out));
    }
    PASS();
}

TEST encode_open_refuses_invalid_structs(void)
{
    alkt_open_params p;
    size_t k;
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "a", 0);
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_OUT_OF_RANGE, "port"));
    tp_direct(&p, ALKT_SUBSTRATE_NONE, "a", 1);
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ENUM, "substrate"));
#ifndef __cplusplus /* out of the enum's range: UB in C++ */
    tp_direct(&p, (alkt_substrate)4, "a", 1);
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ENUM, "substrate"));
#endif
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "a", 1);
    p.kind = ALKT_OPEN_NONE;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ENUM, "kind"));
    p.kind = (alkt_open_kind)3;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ENUM, "kind"));
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "-a", 1);
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_HOSTNAME, "host"));
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "", 1);
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_EMPTY, "host"));
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "a", 1);
    memset(p.host.name, 'a', sizeof p.host.name); /* no NUL at all */
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_HOSTNAME, "host"));
    tp_direct(&p, ALKT_SUBSTRATE_TCP, "a", 1);
    p.host.kind = ALKT_HOST_NONE;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
    p.host.kind = (alkt_host_kind)3;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
    /* an IP host: name must be all zero, family 4 or 6, v4 bytes 4..15 0 */
    tp_direct(&p, ALKT_SUBSTRATE_UDP, "", 1);
    p.host.kind = ALKT_HOST_IP;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
    p.host.ip.family = 4;
    CHECK_CALL(tp_enc(tp_enc_open, &p,
                      "{\"substrate\":\"udp\",\"host\":\"0.0.0.0\",\"port\":1}"));
    for (k = 4; k < 16; k++) {
        p.host.ip.bytes[k] = 1;
        CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
        p.host.ip.bytes[k] = 0;
    }
    p.host.name[ALKT_HOST_MAX] = 'x';
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
    p.host.name[ALKT_HOST_MAX] = '\0';
    p.host.ip.family = 5;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
    /* forwarded */
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_FORWARDED;
    p.substrate = ALKT_SUBSTRATE_TCP;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_OUT_OF_RANGE, "listen"));
    p.listen = 9;
    p.substrate = ALKT_SUBSTRATE_UNIX;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ENUM, "substrate"));
    p.substrate = ALKT_SUBSTRATE_UDP;
    p.host.kind = ALKT_HOST_NAME;
    strcpy(p.host.name, "gw.example");
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
    p.host.kind = ALKT_HOST_IP;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_ADDRESS, "host"));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_open_params_encode(NULL, tp_out, 10, NULL));
    PASS();
}

TEST encode_open_unix_path_limits(void)
{
    alkt_open_params p;
    char t[300];
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_DIRECT;
    p.substrate = ALKT_SUBSTRATE_UNIX;
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_EMPTY, "path"));
    memset(p.path, 'p', sizeof p.path); /* 108 bytes, no NUL */
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_STRING_TOO_LONG, "path"));
    p.path[ALKT_UNIX_PATH_MAX] = '\0'; /* 107 bytes */
    sprintf(t, "{\"substrate\":\"unix\",\"path\":\"%s\"}", p.path);
    CHECK_CALL(tp_enc(tp_enc_open, &p, t));
    CHECK_CALL(tp_open_roundtrip(&p, t));
    strcpy(p.path, "/a\xff");
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_UTF8, "path"));
    strcpy(p.path, "/a\xc3");
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_UTF8, "path"));
    strcpy(p.path, "/\xed\xa0\x80");
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_UTF8, "path"));
    strcpy(p.path, "/\xc0\xaf");
    CHECK_CALL(tp_enc_err(tp_enc_open, &p, ALKT_ERR_BAD_UTF8, "path"));
    PASS();
}

TEST encode_reply(void)
{
    alkt_listen_reply r, q;
    const char *t = "{\"address\":\"2001:db8::1\",\"port\":40000}";
    ASSERT_EQ(ALKT_OK, alkt_listen_reply_decode(
                           "{\"address\":\"2001:0db8:0000:0000:0000:0000:0000:"
                           "0001\",\"port\":40000}",
                           66, NULL, &r, NULL));
    CHECK_CALL(tp_enc(tp_enc_reply, &r, t));
    memset(&q, 0x5A, sizeof q);
    ASSERT_EQ(1, alkt_listen_reply_project(t, strlen(t), &q));
    ASSERT_MEM_EQ(&r, &q, sizeof r);
    memset(&r, 0, sizeof r);
    r.address.family = 4;
    r.address.bytes[0] = 192;
    r.address.bytes[2] = 2;
    r.address.bytes[3] = 7;
    r.port = 1;
    CHECK_CALL(tp_enc(tp_enc_reply, &r, "{\"address\":\"192.0.2.7\",\"port\":1}"));
    r.port = 0;
    CHECK_CALL(tp_enc_err(tp_enc_reply, &r, ALKT_ERR_OUT_OF_RANGE, "port"));
    r.port = 9;
    r.address.bytes[4] = 1;
    CHECK_CALL(tp_enc_err(tp_enc_reply, &r, ALKT_ERR_BAD_ADDRESS, "address"));
    r.address.bytes[4] = 0;
    r.address.bytes[15] = 1;
    CHECK_CALL(tp_enc_err(tp_enc_reply, &r, ALKT_ERR_BAD_ADDRESS, "address"));
    memset(&r, 0, sizeof r);
    r.port = 9;
    CHECK_CALL(tp_enc_err(tp_enc_reply, &r, ALKT_ERR_BAD_ADDRESS, "address"));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_listen_reply_encode(NULL, NULL, 0, NULL));
    PASS();
}

TEST encode_control_all_sections_fixed_point(void)
{
    static alkt_resource res[TP_CAP];
    static alkt_authorization auth[TP_CAP];
    static alkt_revocation rev[TP_CAP];
    static alkt_relay rel[TP_CAP];
    alkt_control *c = tp_ctl_init(TP_CAP), d;
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(tp_all_sections, c));
    CHECK_CALL(tp_enc(tp_enc_ctl, c, tp_all_sections));
    /* decoding the encoding gives equal structs */
    memset(&d, 0, sizeof d);
    d.resources = res;
    d.authorizations = auth;
    d.revocations = rev;
    d.relays = rel;
    d.resource_cap = d.authorization_cap = TP_CAP;
    d.revocation_cap = d.relay_cap = TP_CAP;
    memset(res, 0x33, sizeof res);
    ASSERT_EQ(ALKT_OK, alkt_control_decode(tp_all_sections,
                                           strlen(tp_all_sections), NULL, &d,
                                           NULL));
    ASSERT_MEM_EQ(c->resources, res, 2 * sizeof res[0]);
    ASSERT_MEM_EQ(c->authorizations, auth, sizeof auth[0]);
    ASSERT_MEM_EQ(c->revocations, rev, sizeof rev[0]);
    ASSERT_MEM_EQ(c->relays, rel, 2 * sizeof rel[0]);
    PASS();
}

TEST encode_control_canonical_forms(void)
{
    alkt_control *c;
    const char *in =
        "{\"relays\":[{\"token\":\"t\",\"port\":1,\"address\":"
        "\"::FFFF:10.0.0.1\",\"id\":\"a\"}],\"resources\":[{\"gateway\":\"g\","
        "\"protocols\":[\"icmp\",\"tcp\"],\"cidr\":\"2001:DB8:0::/48\","
        "\"id\":\"r\",\"ports\":[{\"to\":9,\"from\":8}]}]}";
    const char *out =
        "{\"resources\":[{\"id\":\"r\",\"cidr\":\"2001:db8::/48\",\"ports\":"
        "[{\"from\":8,\"to\":9}],\"protocols\":[\"tcp\",\"icmp\"],"
        "\"gateway\":\"g\"}],\"relays\":[{\"id\":\"a\",\"address\":"
        "\"::ffff:10.0.0.1\",\"port\":1,\"token\":\"t\"}]}";
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(in, c));
    CHECK_CALL(tp_enc(tp_enc_ctl, c, out));
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(out, c));
    CHECK_CALL(tp_enc(tp_enc_ctl, c, out));
    /* empty sections, NULL arrays */
    c = tp_ctl_init(0);
    c->resources = NULL;
    c->relays = NULL;
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"relays\":[],\"resources\":[]}", c));
    CHECK_CALL(tp_enc(tp_enc_ctl, c, "{\"resources\":[],\"relays\":[]}"));
    c = tp_ctl_init(0);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode("{\"authorizations\":[],"
                                     "\"revocations\":[]}",
                                     c));
    CHECK_CALL(tp_enc(tp_enc_ctl, c,
                      "{\"authorizations\":[],\"revocations\":[]}"));
    PASS();
}

/* A zeroed control message with one valid item in each section. */
static alkt_control *tp_ctl_valid(void)
{
    alkt_control *c = tp_ctl_init(TP_CAP);
    tp_ctl *t = &tp_ctl_buf;
    memset(t->res, 0, sizeof t->res);
    memset(t->auth, 0, sizeof t->auth);
    memset(t->rev, 0, sizeof t->rev);
    memset(t->rel, 0, sizeof t->rel);
    c->has_resources = c->has_authorizations = 1;
    c->has_revocations = c->has_relays = 1;
    c->resource_count = c->authorization_count = 1;
    c->revocation_count = c->relay_count = 1;
    strcpy(t->res[0].id, "r");
    t->res[0].network.family = 4;
    t->res[0].network.bytes[0] = 10;
    t->res[0].prefix_len = 8;
    strcpy(t->res[0].gateway, "g");
    strcpy(t->auth[0].client, "c");
    strcpy(t->auth[0].resource, "r");
    t->auth[0].secret_len = 16;
    t->auth[0].secret[0] = 0xab;
    t->auth[0].secret[15] = 0x01;
    t->auth[0].expires = ALKT_EXPIRES_MAX;
    strcpy(t->rev[0].client, "c");
    strcpy(t->rev[0].resource, "r");
    strcpy(t->rel[0].id, "l");
    t->rel[0].address.kind = ALKT_HOST_NAME;
    strcpy(t->rel[0].address.name, "relay.example");
    t->rel[0].port = 443;
    strcpy(t->rel[0].token, "tok");
    return c;
}

static const char tp_valid_text[] =
    "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"gateway\":\"g\"}],"
    "\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\",\"secret\":"
    "\"ab000000000000000000000000000001\",\"expires\":9007199254740991}],"
    "\"revocations\":[{\"client\":\"c\",\"resource\":\"r\"}],\"relays\":"
    "[{\"id\":\"l\",\"address\":\"relay.example\",\"port\":443,\"token\":"
    "\"tok\"}]}";

TEST encode_control_built_struct_roundtrip(void)
{
    static tp_ctl built;
    alkt_control *c = tp_ctl_valid();
    tp_ctl *t = &tp_ctl_buf;
    CHECK_CALL(tp_enc(tp_enc_ctl, c, tp_valid_text));
    built = *t;
    c = tp_ctl_init(TP_CAP);
    ASSERT_EQ(ALKT_OK, tp_ctl_decode(tp_valid_text, c));
    ASSERT_MEM_EQ(&built.res[0], &t->res[0], sizeof t->res[0]);
    ASSERT_MEM_EQ(&built.auth[0], &t->auth[0], sizeof t->auth[0]);
    ASSERT_MEM_EQ(&built.rev[0], &t->rev[0], sizeof t->rev[0]);
    ASSERT_MEM_EQ(&built.rel[0], &t->rel[0], sizeof t->rel[0]);
    /* only sections with has_* are written */
    c = tp_ctl_valid();
    c->has_resources = c->has_authorizations = c->has_relays = 0;
    CHECK_CALL(tp_enc(tp_enc_ctl, c,
                      "{\"revocations\":[{\"client\":\"c\",\"resource\":"
                      "\"r\"}]}"));
    c = tp_ctl_valid();
    c->has_resources = c->has_authorizations = c->has_revocations = 0;
    c->relay_count = 2;
    tp_ctl_buf.rel[1] = tp_ctl_buf.rel[0];
    tp_ctl_buf.rel[1].address.kind = ALKT_HOST_IP;
    memset(tp_ctl_buf.rel[1].address.name, 0,
           sizeof tp_ctl_buf.rel[1].address.name);
    tp_ctl_buf.rel[1].address.ip.family = 6;
    tp_ctl_buf.rel[1].address.ip.bytes[15] = 1;
    CHECK_CALL(tp_enc(tp_enc_ctl, c,
                      "{\"relays\":[{\"id\":\"l\",\"address\":"
                      "\"relay.example\",\"port\":443,\"token\":\"tok\"},"
                      "{\"id\":\"l\",\"address\":\"::1\",\"port\":443,"
                      "\"token\":\"tok\"}]}"));
    PASS();
}

TEST encode_control_refuses_invalid_items(void)
{
    alkt_control *c;
    tp_ctl *t = &tp_ctl_buf;
    c = tp_ctl_valid();
    c->has_resources = c->has_authorizations = 0;
    c->has_revocations = c->has_relays = 0;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_MISSING_FIELD, ""));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_encode(NULL, NULL, 0, NULL));
    c = tp_ctl_valid();
    c->resources = NULL;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_ARG, "resources"));
    c = tp_ctl_valid();
    c->relays = NULL;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_ARG, "relays"));
    /* resources */
    c = tp_ctl_valid();
    t->res[0].id[0] = '\0';
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_EMPTY, "resources[0].id"));
    c = tp_ctl_valid();
    strcpy(t->res[0].id, "a b");
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_VALUE,
                          "resources[0].id"));
    c = tp_ctl_valid();
    memset(t->res[0].id, 'i', sizeof t->res[0].id); /* 65, no NUL */
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_STRING_TOO_LONG,
                          "resources[0].id"));
    t->res[0].id[ALKT_ID_MAX] = '\0'; /* 64 fit */
    ASSERT(tp_enc_ctl(c, NULL, 0, NULL) > 0);
    c = tp_ctl_valid();
    t->res[0].network.bytes[3] = 1;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_CIDR,
                          "resources[0].cidr"));
    c = tp_ctl_valid();
    t->res[0].prefix_len = 33;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_CIDR,
                          "resources[0].cidr"));
    t->res[0].network.family = 6;
    t->res[0].prefix_len = 129;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_CIDR,
                          "resources[0].cidr"));
    t->res[0].prefix_len = 128;
    ASSERT(tp_enc_ctl(c, NULL, 0, NULL) > 0);
    t->res[0].network.family = 0;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_CIDR,
                          "resources[0].cidr"));
    c = tp_ctl_valid();
    t->res[0].port_range_count = ALKT_PORT_RANGES_MAX + 1;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_TOO_MANY,
                          "resources[0].ports"));
    c = tp_ctl_valid();
    t->res[0].port_range_count = 2;
    t->res[0].port_ranges[0].from = 1;
    t->res[0].port_ranges[0].to = 1;
    t->res[0].port_ranges[1].from = 0;
    t->res[0].port_ranges[1].to = 5;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_OUT_OF_RANGE,
                          "resources[0].ports[1].from"));
    t->res[0].port_ranges[1].from = 5;
    t->res[0].port_ranges[1].to = 0;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_OUT_OF_RANGE,
                          "resources[0].ports[1].to"));
    t->res[0].port_ranges[1].to = 4;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_RANGE,
                          "resources[0].ports[1].to"));
    t->res[0].port_ranges[1].to = 5;
    t->res[0].protocols = 8;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_ENUM,
                          "resources[0].protocols"));
    t->res[0].protocols = 7;
    c->resource_count = 2;
    t->res[1] = t->res[0];
    t->res[1].gateway[0] = '\0';
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_EMPTY,
                          "resources[1].gateway"));
    c->resource_count = 1;
    CHECK_CALL(tp_enc(tp_enc_ctl, c,
                      "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\","
                      "\"ports\":[{\"from\":1,\"to\":1},{\"from\":5,\"to\":5}"
                      "],\"protocols\":[\"tcp\",\"udp\",\"icmp\"],"
                      "\"gateway\":\"g\"}],\"authorizations\":[{\"client\":"
                      "\"c\",\"resource\":\"r\",\"secret\":"
                      "\"ab000000000000000000000000000001\",\"expires\":"
                      "9007199254740991}],\"revocations\":[{\"client\":\"c\","
                      "\"resource\":\"r\"}],\"relays\":[{\"id\":\"l\","
                      "\"address\":\"relay.example\",\"port\":443,\"token\":"
                      "\"tok\"}]}"));
    PASS();
}

TEST encode_control_refuses_invalid_auth_rev_relay(void)
{
    alkt_control *c;
    tp_ctl *t = &tp_ctl_buf;
    size_t k;
    c = tp_ctl_valid();
    t->auth[0].secret_len = 15;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_VALUE,
                          "authorizations[0].secret"));
    t->auth[0].secret_len = 65;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_VALUE,
                          "authorizations[0].secret"));
    t->auth[0].secret_len = 64;
    for (k = 0; k < 64; k++)
        t->auth[0].secret[k] = (unsigned char)(k * 4 + 3);
    c->has_resources = c->has_revocations = c->has_relays = 0;
    {
        char want[400];
        size_t o = (size_t)sprintf(want, "{\"authorizations\":[{\"client\":"
                                         "\"c\",\"resource\":\"r\","
                                         "\"secret\":\"");
        for (k = 0; k < 64; k++)
            o += (size_t)sprintf(want + o, "%02x", (unsigned)(k * 4 + 3));
        sprintf(want + o, "\",\"expires\":9007199254740991}]}");
        CHECK_CALL(tp_enc(tp_enc_ctl, c, want));
    }
    t->auth[0].expires = ALKT_EXPIRES_MAX + 1;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_OUT_OF_RANGE,
                          "authorizations[0].expires"));
    c = tp_ctl_valid();
    t->auth[0].client[0] = '\0';
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_EMPTY,
                          "authorizations[0].client"));
    c = tp_ctl_valid();
    strcpy(t->auth[0].resource, "r/");
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_VALUE,
                          "authorizations[0].resource"));
    c = tp_ctl_valid();
    t->rev[0].resource[0] = '\0';
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_EMPTY,
                          "revocations[0].resource"));
    c = tp_ctl_valid();
    strcpy(t->rev[0].client, "\xc3\xa9");
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_VALUE,
                          "revocations[0].client"));
    /* relays */
    c = tp_ctl_valid();
    t->rel[0].id[0] = '\0';
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_EMPTY, "relays[0].id"));
    c = tp_ctl_valid();
    strcpy(t->rel[0].address.name, "bad_name");
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_HOSTNAME,
                          "relays[0].address"));
    c = tp_ctl_valid();
    t->rel[0].address.kind = ALKT_HOST_NONE;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_ADDRESS,
                          "relays[0].address"));
    c = tp_ctl_valid();
    t->rel[0].port = 0;
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_OUT_OF_RANGE,
                          "relays[0].port"));
    c = tp_ctl_valid();
    strcpy(t->rel[0].token, "a b");
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_VALUE,
                          "relays[0].token"));
    t->rel[0].token[0] = '\0';
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_EMPTY, "relays[0].token"));
    memset(t->rel[0].token, 'k', sizeof t->rel[0].token); /* 129, no NUL */
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_STRING_TOO_LONG,
                          "relays[0].token"));
    t->rel[0].token[ALKT_TOKEN_MAX] = '\0'; /* 128 fit */
    ASSERT(tp_enc_ctl(c, NULL, 0, NULL) > 0);
    strcpy(t->rel[0].token, "\"\\!~");
    c->has_resources = c->has_authorizations = c->has_revocations = 0;
    CHECK_CALL(tp_enc(tp_enc_ctl, c,
                      "{\"relays\":[{\"id\":\"l\",\"address\":"
                      "\"relay.example\",\"port\":443,\"token\":"
                      "\"\\\"\\\\!~\"}]}"));
    c->relay_count = 2;
    t->rel[1] = t->rel[0];
    t->rel[1].token[0] = ' ';
    CHECK_CALL(tp_enc_err(tp_enc_ctl, c, ALKT_ERR_BAD_VALUE,
                          "relays[1].token"));
    PASS();
}

SUITE(alkt_encode_suite)
{
    RUN_TEST(encode_open_direct);
    RUN_TEST(encode_open_unix_and_forwarded);
    RUN_TEST(encode_string_escaping);
    RUN_TEST(encode_canonicalises_decoded_text);
    RUN_TEST(encode_open_refuses_invalid_structs);
    RUN_TEST(encode_open_unix_path_limits);
    RUN_TEST(encode_reply);
    RUN_TEST(encode_control_all_sections_fixed_point);
    RUN_TEST(encode_control_canonical_forms);
    RUN_TEST(encode_control_built_struct_roundtrip);
    RUN_TEST(encode_control_refuses_invalid_items);
    RUN_TEST(encode_control_refuses_invalid_auth_rev_relay);
}

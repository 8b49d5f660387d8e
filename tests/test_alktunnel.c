/* test_alktunnel.c - unit tests for alktunnel.h (greatest API).
 *
 * Built as C and, from the same file, as C++ (test_alktunnel_cxx).
 *   test_alktunnel_reader.h  the JSON reader, unescaping, integers,
 *                            addresses and host names, error texts
 *   test_alktunnel_params.h  typed decoders and encoders, rule by rule
 *   test_alktunnel_session.h SHA-256 / HMAC vectors, the session: wire
 *                            format in hex, windows, duplicate opens,
 *                            forged handshakes, resumption, deadlines
 *   test_alktunnel_roles.h   relay, client and gateway in the world of
 *                            testkit/tunnel_world.h: paths, fallback, backoff,
 *                            authorization, revocation, expiry
 *   test_alktunnel_crypto.h  ChaCha20, Poly1305, the AEAD, X25519, SHA-256,
 *                            HMAC, HKDF against the RFCs' vectors; the AEAD
 *                            against testkit/aead_ref.h
 *   test_alktunnel_sealed.h  the encrypted session: frozen records, nothing
 *                            readable on the wire, changed / replayed /
 *                            reordered / cut records, rekeying, fresh keys
 *                            on resume, tag comparison in constant time
 *   this file                seeded round-trip properties over generated
 *                            valid structs (ALK_SEED=N, default 1; the seed
 *                            is printed on failure)
 */
/* tag bytes compared (a comparison that stops early compares fewer) */
static unsigned long t_ct_compared;
#define ALKTUNNEL_CT_COUNT(n) (t_ct_compared += (unsigned long)(n))
#define ALKTUNNEL_IMPLEMENTATION
#include "alktunnel.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alk_test.h"
#include "../testkit/alkt_equal.h"

#include "test_alktunnel_reader.h"
#include "test_alktunnel_params.h"
#include "test_alktunnel_session.h"
#include "test_alktunnel_roles.h"
#include "test_alktunnel_crypto.h"
#include "test_alktunnel_sealed.h"


static unsigned pick(uint64_t *st, unsigned n)
{
    return (unsigned)(alksim_splitmix64(st) % n);
}

static void gen_id(uint64_t *st, char *out)
{
    static const char chars[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-";
    unsigned n = 1 + pick(st, 3) * 21 + pick(st, 22), k; /* 1..64 */
    if (n > ALKT_ID_MAX)
        n = ALKT_ID_MAX;
    for (k = 0; k < n; k++)
        out[k] = chars[pick(st, (unsigned)sizeof chars - 1)];
    out[n] = '\0';
}

static void gen_ip(uint64_t *st, alkt_ip *ip)
{
    unsigned k;
    memset(ip, 0, sizeof *ip);
    ip->family = pick(st, 2) ? 4 : 6;
    for (k = 0; k < (ip->family == 4 ? 4u : 16u); k++) {
        /* many zero bytes so that "::" runs and mapped forms occur */
        ip->bytes[k] = pick(st, 3) ? 0 : (unsigned char)alksim_splitmix64(st);
    }
    if (ip->family == 6 && pick(st, 4) == 0) {
        memset(ip->bytes, 0, 10);
        ip->bytes[10] = ip->bytes[11] = 0xFF; /* IPv4-mapped */
    }
}

static void gen_host(uint64_t *st, alkt_host *h, int allow_name)
{
    memset(h, 0, sizeof *h);
    if (!allow_name || pick(st, 2)) {
        h->kind = ALKT_HOST_IP;
        gen_ip(st, &h->ip);
    } else {
        static const char label_chars[] = "abcxyzABZ019-";
        unsigned labels = 1 + pick(st, 4), l, o = 0, k;
        h->kind = ALKT_HOST_NAME;
        for (l = 0; l < labels; l++) {
            unsigned len = 1 + pick(st, l == 0 ? 63 : 12);
            if (l)
                h->name[o++] = '.';
            for (k = 0; k < len; k++) {
                char c = label_chars[pick(st, (unsigned)sizeof label_chars - 1)];
                if (c == '-' && (k == 0 || k == len - 1))
                    c = 'q';
                h->name[o++] = c;
            }
            if (l == labels - 1)
                h->name[o - 1] = 'z'; /* top label never all digits */
        }
        h->name[o] = '\0';
    }
}

static uint16_t gen_port(uint64_t *st)
{
    unsigned r = pick(st, 4);
    return (uint16_t)(r == 0 ? 1 : r == 1 ? 65535 : 1 + pick(st, 65535));
}

static void gen_open(uint64_t *st, alkt_open_params *p)
{
    memset(p, 0, sizeof *p);
    switch (pick(st, 3)) {
    case 0:
        p->kind = ALKT_OPEN_DIRECT;
        p->substrate = pick(st, 2) ? ALKT_SUBSTRATE_TCP : ALKT_SUBSTRATE_UDP;
        gen_host(st, &p->host, 1);
        p->port = gen_port(st);
        break;
    case 1: {
        /* a path with bytes that need escaping and multi-byte UTF-8 */
        static const char *const pieces[] = {"/", "run", "\"", "\\", "\t",
                                             "\x01", "\xc3\xa9", "\xe2\x82\xac",
                                             "\xf0\x9f\x98\x80", " ", "\x7f"};
        size_t o = 0;
        p->kind = ALKT_OPEN_DIRECT;
        p->substrate = ALKT_SUBSTRATE_UNIX;
        do {
            const char *piece = pieces[pick(st, 11)];
            size_t n = strlen(piece);
            if (o + n > ALKT_UNIX_PATH_MAX)
                break;
            memcpy(p->path + o, piece, n);
            o += n;
        } while (pick(st, 12));
        if (o == 0)
            p->path[o++] = '/';
        p->path[o] = '\0';
        break;
    }
    default:
        p->kind = ALKT_OPEN_FORWARDED;
        p->substrate = pick(st, 2) ? ALKT_SUBSTRATE_TCP : ALKT_SUBSTRATE_UDP;
        p->listen = gen_port(st);
        if (pick(st, 2))
            gen_host(st, &p->host, 0);
        break;
    }
}

static void gen_resource(uint64_t *st, alkt_resource *r)
{
    unsigned k, bits;
    memset(r, 0, sizeof *r);
    gen_id(st, r->id);
    gen_id(st, r->gateway);
    gen_ip(st, &r->network);
    bits = r->network.family == 4 ? 32u : 128u;
    r->prefix_len = (unsigned char)pick(st, bits + 1);
    for (k = r->prefix_len; k < bits; k++)
        r->network.bytes[k >> 3] &= (unsigned char)~(0x80u >> (k & 7));
    r->port_range_count = pick(st, 3) ? 0 : 1 + pick(st, ALKT_PORT_RANGES_MAX);
    for (k = 0; k < r->port_range_count; k++) {
        uint16_t a = gen_port(st), b = gen_port(st);
        r->port_ranges[k].from = a < b ? a : b;
        r->port_ranges[k].to = a < b ? b : a;
    }
    r->protocols = pick(st, 8);
}

static void gen_control(uint64_t *st, alkt_control *c)
{
    size_t k, j;
    c->has_resources = (int)pick(st, 2);
    c->has_authorizations = (int)pick(st, 2);
    c->has_revocations = (int)pick(st, 2);
    c->has_relays = (int)pick(st, 2);
    if (!c->has_resources && !c->has_authorizations && !c->has_revocations &&
        !c->has_relays)
        c->has_relays = 1;
    c->resource_count = c->has_resources ? pick(st, 4) : 0;
    c->authorization_count = c->has_authorizations ? pick(st, 4) : 0;
    c->revocation_count = c->has_revocations ? pick(st, 4) : 0;
    c->relay_count = c->has_relays ? pick(st, 4) : 0;
    for (k = 0; k < c->resource_count; k++)
        gen_resource(st, &c->resources[k]);
    for (k = 0; k < c->authorization_count; k++) {
        alkt_authorization *a = &c->authorizations[k];
        memset(a, 0, sizeof *a);
        gen_id(st, a->client);
        gen_id(st, a->resource);
        a->secret_len = ALKT_SECRET_MIN + pick(st, ALKT_SECRET_MAX -
                                                       ALKT_SECRET_MIN + 1);
        for (j = 0; j < a->secret_len; j++)
            a->secret[j] = (unsigned char)alksim_splitmix64(st);
        a->expires = pick(st, 3) ? alksim_splitmix64(st) & ALKT_EXPIRES_MAX
                                 : (pick(st, 2) ? 0 : ALKT_EXPIRES_MAX);
    }
    for (k = 0; k < c->revocation_count; k++) {
        memset(&c->revocations[k], 0, sizeof c->revocations[k]);
        gen_id(st, c->revocations[k].client);
        gen_id(st, c->revocations[k].resource);
    }
    for (k = 0; k < c->relay_count; k++) {
        alkt_relay *r = &c->relays[k];
        unsigned n = 1 + pick(st, ALKT_TOKEN_MAX);
        memset(r, 0, sizeof *r);
        gen_id(st, r->id);
        gen_host(st, &r->address, 1);
        r->port = gen_port(st);
        for (j = 0; j < n; j++)
            r->token[j] = (char)(0x21 + pick(st, 0x7E - 0x21 + 1));
        if (pick(st, 2)) {   /* a gateway's: with its offer key */
            r->offer_key_len = ALKT_SECRET_MIN + pick(st, ALKT_SECRET_MAX - ALKT_SECRET_MIN + 1);
            for (j = 0; j < r->offer_key_len; j++) r->offer_key[j] = (unsigned char)pick(st, 256);
        }
    }
}

#define PROPERTY_RUNS 2000
static char enc_a[1 << 16], enc_b[1 << 16];

/* A control struct over the caller's arrays, each of capacity cap. */
static void control_over(alkt_control *c, alkt_resource *rs,
                         alkt_authorization *au, alkt_revocation *rv,
                         alkt_relay *rl, size_t cap)
{
    memset(c, 0, sizeof *c);
    c->resources = rs;
    c->authorizations = au;
    c->revocations = rv;
    c->relays = rl;
    c->resource_cap = c->authorization_cap = cap;
    c->revocation_cap = c->relay_cap = cap;
}

TEST property_open_params_round_trip(void)
{
    uint64_t st = test_seed;
    int run;
    for (run = 0; run < PROPERTY_RUNS; run++) {
        alkt_open_params p, q;
        alkt_error err;
        ptrdiff_t n, m;
        gen_open(&st, &p);
        n = alkt_open_params_encode(&p, enc_a, sizeof enc_a, &err);
        if (n < 0)
            fprintf(stderr, "seed %llu run %d: encode %s '%s'\n",
                    (unsigned long long)test_seed, run, alkt_strerror(err.code),
                    err.path);
        ASSERT(n > 0);
        ASSERT_EQ(n, alkt_open_params_encode(&p, NULL, 0, &err));
        ASSERT_EQ(ALKT_OK, alkt_open_params_decode(enc_a, (size_t)n, NULL, &q,
                                                   &err));
        if (memcmp(&p, &q, sizeof p) != 0)
            fprintf(stderr, "seed %llu run %d: %.*s\n",
                    (unsigned long long)test_seed, run, (int)n, enc_a);
        ASSERT_EQ(0, memcmp(&p, &q, sizeof p));
        m = alkt_open_params_encode(&q, enc_b, sizeof enc_b, &err);
        ASSERT_EQ(n, m);
        ASSERT_EQ(0, memcmp(enc_a, enc_b, (size_t)n));
        ASSERT_EQ(ALKT_OK, alkt_json_validate(enc_a, (size_t)n, NULL, &err));
    }
    PASS();
}

TEST property_control_round_trip(void)
{
    static alkt_resource rs[2][4];
    static alkt_authorization au[2][4];
    static alkt_revocation rv[2][4];
    static alkt_relay rl[2][4];
    uint64_t st = test_seed ^ 0x5eed;
    int run;
    for (run = 0; run < PROPERTY_RUNS / 4; run++) {
        alkt_control c, d;
        alkt_error err;
        ptrdiff_t n;
        control_over(&c, rs[0], au[0], rv[0], rl[0], 0);
        gen_control(&st, &c);
        n = alkt_control_encode(&c, enc_a, sizeof enc_a, &err);
        if (n < 0)
            fprintf(stderr, "seed %llu run %d: encode %s '%s'\n",
                    (unsigned long long)test_seed, run, alkt_strerror(err.code),
                    err.path);
        ASSERT(n > 0);
        control_over(&d, rs[1], au[1], rv[1], rl[1], 4);
        ASSERT_EQ(ALKT_OK, alkt_control_decode(enc_a, (size_t)n, NULL, &d,
                                               &err));
        ASSERT(control_equal(&c, &d));
        ASSERT_EQ(n, alkt_control_encode(&d, enc_b, sizeof enc_b, &err));
        ASSERT_EQ(0, memcmp(enc_a, enc_b, (size_t)n));
        /* canonical text takes the fast path unless a token needs an
         * escape, and gives the reference decoder's result */
        control_over(&d, rs[1], au[1], rv[1], rl[1], 4);
        ASSERT_EQ(memchr(enc_a, '\\', (size_t)n) == NULL,
                  alkt__control_fast(enc_a, (size_t)n, NULL, &d));
        if (memchr(enc_a, '\\', (size_t)n) == NULL)
            ASSERT(control_equal(&c, &d));
    }
    PASS();
}

/* The fast path declines a depth limit it cannot honour, a size over the
 * limit and a full section; the public decoder then answers as the
 * reference does. */
TEST control_fast_path_limits(void)
{
    static const char doc[] =
        "{\"revocations\":[{\"client\":\"c\",\"resource\":\"r\"},"
        "{\"client\":\"d\",\"resource\":\"s\"}]}";
    alkt_revocation rv[2];
    alkt_control c;
    alkt_json_limits lim;
    alkt_error err;
    memset(&c, 0, sizeof c);
    c.revocations = rv;
    c.revocation_cap = 2;
    ASSERT_EQ(1, alkt__control_fast(doc, sizeof doc - 1, NULL, &c));
    ASSERT_EQ(2u, c.revocation_count);
    lim.max_size = 0;
    lim.max_depth = 5;
    ASSERT_EQ(1, alkt__control_fast(doc, sizeof doc - 1, &lim, &c));
    lim.max_depth = 4; /* enough for this document, not for every one */
    ASSERT_EQ(0, alkt__control_fast(doc, sizeof doc - 1, &lim, &c));
    ASSERT_EQ(ALKT_OK, alkt_control_decode(doc, sizeof doc - 1, &lim, &c, &err));
    ASSERT_EQ(2u, c.revocation_count);
    lim.max_depth = 0;
    lim.max_size = sizeof doc - 1;
    ASSERT_EQ(1, alkt__control_fast(doc, sizeof doc - 1, &lim, &c));
    lim.max_size = sizeof doc - 2;
    ASSERT_EQ(0, alkt__control_fast(doc, sizeof doc - 1, &lim, &c));
    ASSERT_EQ(ALKT_ERR_TOO_LARGE,
              alkt_control_decode(doc, sizeof doc - 1, &lim, &c, &err));
    c.revocation_cap = 1;
    ASSERT_EQ(0, alkt__control_fast(doc, sizeof doc - 1, NULL, &c));
    ASSERT_EQ(ALKT_ERR_TOO_MANY,
              alkt_control_decode(doc, sizeof doc - 1, NULL, &c, &err));
    ASSERT_STR_EQ("revocations[1]", err.path);
    PASS();
}

/* A reader-level error deep inside a control message carries the path of
 * where it struck (the error is sticky in the reader, so only the path
 * tells whether it was propagated from the right place). */
TEST control_reader_errors_carry_paths(void)
{
    static const struct {
        const char *doc;
        int code;
        size_t offset;
        const char *path;
    } cases[] = {
        {"{\"resources\":[{\"id\":\"r1\",", ALKT_ERR_UNEXPECTED_END, 25,
         "resources[0]"},
        {"{\"resources\":[{\"id\":\"r1\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
         "[{\"from\":1,",
         ALKT_ERR_UNEXPECTED_END, 64, "resources[0].ports[0]"},
        {"{\"relays\":[{\"id\":\"x\" \"address\"", ALKT_ERR_SYNTAX, 21,
         "relays[0]"},
        {"{\"resources\":[{\"id\":tru", ALKT_ERR_UNEXPECTED_END, 23,
         "resources[0].id"},
        {"{\"revocations\":[{\"client\":\"c\",\"resource\":\"r\"}}",
         ALKT_ERR_SYNTAX, 45, "revocations"},
        {"{\"resources\":[{\"id\":\"r\",\"cidr\":\"1.0.0.0/8\",\"protocols\":"
         "[\"tcp\",]}]}",
         ALKT_ERR_SYNTAX, 62, "resources[0].protocols"},
        {"{\"resources\":[{\"id\":\"r\",\"cidr\":\"1.0.0.0/8\",\"ports\":"
         "[{\"from\":1,\"to\":2,}]}]}",
         ALKT_ERR_SYNTAX, 69, "resources[0].ports[0]"},
        {"{\"authorizations\":[{\"client\":\"c\",\"secret\":\"0\\u00\"}]}",
         ALKT_ERR_BAD_ESCAPE, 48, "authorizations[0].secret"},
        {"{\"relays\":[]  x", ALKT_ERR_SYNTAX, 14, ""},
        {"{\"relays\":[]} x", ALKT_ERR_TRAILING_DATA, 14, ""},
    };
    alkt_resource rs[2];
    alkt_authorization au[2];
    alkt_revocation rv[2];
    alkt_relay rl[2];
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        alkt_control c;
        alkt_error err;
        control_over(&c, rs, au, rv, rl, 2);
        ASSERT_EQm(cases[i].doc, cases[i].code,
                   alkt_control_decode(cases[i].doc, strlen(cases[i].doc),
                                       NULL, &c, &err));
        ASSERT_EQm(cases[i].doc, cases[i].offset, err.offset);
        ASSERT_STR_EQm(cases[i].doc, cases[i].path, err.path);
    }
    PASS();
}

/* Names a resolver reads as IPv4 addresses are not host names; names that
 * only contain such labels among others are. */
TEST hostnames_that_resolvers_read_as_addresses(void)
{
    static const char *const refused[] = {
        "0x7f000001", "0x7f.0x1", "0X7F.1", "0x7f.0.0.1", "017.0x1",
        "0x", "1.0x1", "0xa.0xb.0xc.0xd.0xe"};
    static const char *const accepted[] = {
        "0x7g", "0x1.example", "a.0x1", "0x7f.0x1z", "x0x1", "0xz.1a",
        "017.1.1.1x1"};
    size_t i;
    for (i = 0; i < sizeof refused / sizeof refused[0]; i++)
        ASSERT_EQm(refused[i], 0,
                   alkt_hostname_valid(refused[i], strlen(refused[i])));
    for (i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
        ASSERT_EQm(accepted[i], 1,
                   alkt_hostname_valid(accepted[i], strlen(accepted[i])));
    PASS();
}

/* Secrets are lowercase hex only: an uppercase digit in either nibble of
 * a byte, 'A' and 'F' included, is refused; every lowercase one decodes. */
TEST secret_hex_case_edges(void)
{
    static const char *const refused[] = {
        "A00102030405060708090a0b0c0d0e0f", "0A0102030405060708090a0b0c0d0e0f",
        "F00102030405060708090a0b0c0d0e0f", "0F0102030405060708090a0b0c0d0e0f",
        "0g0102030405060708090a0b0c0d0e0f", "g00102030405060708090a0b0c0d0e0f"};
    alkt_authorization a;
    size_t i;
    for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        memset(&a, 0, sizeof a);
        ASSERT_EQm(refused[i], ALKT_ERR_BAD_VALUE,
                   alkt__parse_secret(refused[i], 32, a.secret, &a.secret_len));
    }
    memset(&a, 0, sizeof a);
    ASSERT_EQ(ALKT_OK,
              alkt__parse_secret("a0af0123456789abcdeffedcba98765432", 34, a.secret, &a.secret_len));
    ASSERT_EQ(17u, a.secret_len);
    ASSERT_EQ(0xa0, a.secret[0]);
    ASSERT_EQ(0xaf, a.secret[1]);
    ASSERT_EQ(0xcd, a.secret[8]);
    ASSERT_EQ(0xef, a.secret[9]);
    ASSERT_EQ(0x32, a.secret[16]);
    PASS();
}

/* An escaped key too long for the key buffer is unknown, even when what
 * fitted before the overflow spells a field ("port" + 40 more bytes). */
TEST escaped_key_too_long_is_unknown(void)
{
    alkt_open_params p;
    alkt_error err;
    char doc[160];
    snprintf(doc, sizeof doc,
             "{\"substrate\":\"tcp\",\"host\":\"a\",\"\\u0070\\u006f\\u0072"
             "\\u0074%s\":1}",
             "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX");
    ASSERT_EQ(ALKT_ERR_UNKNOWN_FIELD,
              alkt_open_params_decode(doc, strlen(doc), NULL, &p, &err));
    ASSERT_EQ(30u, err.offset);
    PASS();
}

/* Raw text ending in a lone backslash is read no further than its end
 * (an exactly sized buffer, so ASan sees any over-read). */
TEST unescape_lone_backslash_at_end(void)
{
    char *raw = (char *)malloc(3);
    char out[8];
    size_t n = 99, bad = 99;
    ASSERT(raw != NULL);
    memcpy(raw, "ab\\", 3);
    ASSERT_EQ(ALKT_ERR_BAD_ESCAPE, alkt_json_unescape(raw, 3, out, sizeof out,
                                                      &n, &bad));
    ASSERT_EQ(2u, n);
    ASSERT_EQ(2u, bad);
    free(raw);
    /* a \u escape cut short by the end: three hex digits, nothing after */
    raw = (char *)malloc(5);
    ASSERT(raw != NULL);
    memcpy(raw, "\\u123", 5);
    ASSERT_EQ(ALKT_ERR_BAD_ESCAPE, alkt_json_unescape(raw, 5, out, sizeof out,
                                                      &n, &bad));
    ASSERT_EQ(0u, n);
    ASSERT_EQ(0u, bad);
    free(raw);
    PASS();
}

/* An encoder refuses a section whose count promises items it has no
 * array for. */
TEST control_encode_null_section_array(void)
{
    alkt_control c;
    alkt_error err;
    char buf[64];
    int section;
    for (section = 0; section < 4; section++) {
        memset(&c, 0, sizeof c);
        if (section == 0) {
            c.has_resources = 1;
            c.resource_count = 1;
        } else if (section == 1) {
            c.has_authorizations = 1;
            c.authorization_count = 1;
        } else if (section == 2) {
            c.has_revocations = 1;
            c.revocation_count = 1;
        } else {
            c.has_relays = 1;
            c.relay_count = 1;
        }
        ASSERT_EQ(ALKT_ERR_ARG, alkt_control_encode(&c, buf, sizeof buf, &err));
        ASSERT_STR_EQ(section == 0   ? "resources"
                      : section == 1 ? "authorizations"
                      : section == 2 ? "revocations"
                                     : "relays",
                      err.path);
    }
    PASS();
}

/* The compile-time character classes against the rules written out. */
TEST character_classes_every_byte(void)
{
    unsigned c;
    for (c = 0; c < 256; c++) {
        int alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                    (c >= 'A' && c <= 'Z');
        int id = alnum || c == '.' || c == '_' || c == ':' || c == '-';
        int token = c >= 0x21 && c <= 0x7E;
        char s[2];
        s[0] = (char)c;
        s[1] = '\0';
        ASSERT_EQm("id class", id ? ALKT_OK : ALKT_ERR_BAD_VALUE,
                   alkt__check_id(s, 1));
        ASSERT_EQm("token class", token ? ALKT_OK : ALKT_ERR_BAD_VALUE,
                   alkt__check_token(s, 1));
    }
    PASS();
}

/* An argument error still fills the caller's error struct. */
TEST argument_errors_fill_err(void)
{
    alkt_error err;
    alkt_control c;
    memset(&err, 0x5A, sizeof err);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_open_params_decode("{}", 2, NULL, NULL, &err));
    ASSERT_EQ(ALKT_ERR_ARG, err.code);
    ASSERT_EQ(0u, err.offset);
    ASSERT_EQ(1u, err.line);
    ASSERT_EQ(1u, err.column);
    ASSERT_STR_EQ("", err.path);
    memset(&err, 0x5A, sizeof err);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_listen_reply_decode("{}", 2, NULL, NULL, &err));
    ASSERT_EQ(ALKT_ERR_ARG, err.code);
    ASSERT_STR_EQ("", err.path);
    memset(&c, 0, sizeof c);
    c.relay_cap = 1; /* and no array */
    memset(&err, 0x5A, sizeof err);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_decode("{}", 2, NULL, &c, &err));
    ASSERT_EQ(ALKT_ERR_ARG, err.code);
    ASSERT_EQ(0u, err.offset);
    ASSERT_STR_EQ("", err.path);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_control_decode("{}", 2, NULL, NULL, NULL));
    PASS();
}

/* A path is built complete, terminator included, whatever the buffer held. */
TEST path_built_into_dirty_buffer(void)
{
    alkt__dec d;
    char path[ALKT_PATH_MAX];
    memset(&d, 0, sizeof d);
    memset(path, 'x', sizeof path);
    alkt__build_path(&d, path);
    ASSERT_STR_EQ("", path);
    alkt__push_name(&d, "relays");
    alkt__push(&d, NULL, 0, (size_t)-1); /* the longest index */
    alkt__push_name(&d, "token");
    memset(path, 'x', sizeof path);
    alkt__build_path(&d, path);
    if (sizeof(size_t) == 8)
        ASSERT_STR_EQ("relays[18446744073709551615].token", path);
    PASS();
}

/* Decoders zero the whole out-struct, padding included, before filling it:
 * a decode into dirty memory equals one built from a zeroed struct. */
TEST decoders_zero_dirty_structs(void)
{
    alkt_listen_reply r, want_r;
    alkt_open_params p, want_p;
    alkt_error err;
    memset(&r, 0xAA, sizeof r);
    ASSERT_EQ(ALKT_OK, alkt_listen_reply_decode(
                           "{\"address\":\"10.0.0.1\",\"port\":9}", 31,
                           NULL, &r, &err));
    memset(&want_r, 0, sizeof want_r);
    want_r.address.family = 4;
    want_r.address.bytes[0] = 10;
    want_r.address.bytes[3] = 1;
    want_r.port = 9;
    ASSERT_EQ(0, memcmp(&r, &want_r, sizeof r));
    memset(&p, 0xAA, sizeof p);
    ASSERT_EQ(ALKT_OK,
              alkt_open_params_decode("{\"listen\":7,\"substrate\":\"udp\"}",
                                      30, NULL, &p, &err));
    memset(&want_p, 0, sizeof want_p);
    want_p.kind = ALKT_OPEN_FORWARDED;
    want_p.substrate = ALKT_SUBSTRATE_UDP;
    want_p.listen = 7;
    ASSERT_EQ(0, memcmp(&p, &want_p, sizeof p));
    PASS();
}

/* An unknown key appears in the path sanitised and, past 32 bytes, cut. */
TEST unknown_key_path_cut(void)
{
    alkt_open_params p;
    alkt_error err;
    char doc[128], want[64];
    const char *k32 = "abcdefghijklmnopqrstuvwxyz012345";
    snprintf(doc, sizeof doc, "{\"%s\":1}", k32);
    ASSERT_EQ(ALKT_ERR_UNKNOWN_FIELD,
              alkt_open_params_decode(doc, strlen(doc), NULL, &p, &err));
    ASSERT_STR_EQ(k32, err.path);
    snprintf(doc, sizeof doc, "{\"%s6\":1}", k32);
    ASSERT_EQ(ALKT_ERR_UNKNOWN_FIELD,
              alkt_open_params_decode(doc, strlen(doc), NULL, &p, &err));
    snprintf(want, sizeof want, "%s...", k32);
    ASSERT_STR_EQ(want, err.path);
    ASSERT_EQ(1u, err.offset);
    ASSERT_EQ(ALKT_ERR_UNKNOWN_FIELD,
              alkt_open_params_decode("{\"\":1}", 6, NULL, &p, &err));
    ASSERT_STR_EQ("\"\"", err.path);
    snprintf(doc, sizeof doc, "{\"\\n\xc3\xa9 x\":1}");
    ASSERT_EQ(ALKT_ERR_UNKNOWN_FIELD,
              alkt_open_params_decode(doc, strlen(doc), NULL, &p, &err));
    ASSERT_STR_EQ("\\n???x", err.path); /* raw key bytes, sanitised */
    /* the printable range 0x21..0x7E is kept as is, its edges included */
    ASSERT_EQ(ALKT_ERR_UNKNOWN_FIELD,
              alkt_open_params_decode("{\"!a~\\u007f\":1}", 16, NULL, &p,
                                      &err));
    ASSERT_STR_EQ("!a~\\u007f", err.path);
    ASSERT_EQ(ALKT_ERR_UNKNOWN_FIELD,
              alkt_open_params_decode("{\" a\x7f\":1}", 8, NULL, &p, &err));
    ASSERT_STR_EQ("?a?", err.path);
    PASS();
}

/* Encoders refuse fields the kind does not use (the decoder leaves them
 * zero, so such a struct could not round-trip). */
TEST open_encode_refuses_stray_fields(void)
{
    alkt_open_params p;
    alkt_error err;
    char buf[256];
    ASSERT_EQ(ALKT_OK, alkt_open_params_direct(&p, ALKT_SUBSTRATE_TCP, "a.example", 9, 80));
    ASSERT(alkt_open_params_encode(&p, buf, sizeof buf, &err) > 0);
    p.listen = 8080;
    ASSERT_EQ(ALKT_ERR_FIELD_NOT_ALLOWED,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    ASSERT_STR_EQ("listen", err.path);
    p.listen = 0;
    p.path[5] = 'x';
    ASSERT_EQ(ALKT_ERR_FIELD_NOT_ALLOWED,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    ASSERT_STR_EQ("path", err.path);
    p.path[5] = '\0';
    p.host.ip.bytes[3] = 1; /* a name with a stray address */
    ASSERT_EQ(ALKT_ERR_BAD_ADDRESS,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    p.host.ip.bytes[3] = 0;
    p.host.ip.family = 4;
    ASSERT_EQ(ALKT_ERR_BAD_ADDRESS,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    p.host.ip.family = 0;
    p.kind = ALKT_OPEN_FORWARDED;
    p.listen = 9;
    ASSERT_EQ(ALKT_ERR_FIELD_NOT_ALLOWED,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    ASSERT_STR_EQ("port", err.path);
    p.port = 0;
    ASSERT_EQ(ALKT_ERR_BAD_ADDRESS, /* a bind address is an IP */
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    memset(&p.host, 0, sizeof p.host);
    p.host.name[200] = 'z'; /* absent, but not zeroed */
    ASSERT_EQ(ALKT_ERR_BAD_ADDRESS,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    ASSERT_STR_EQ("host", err.path);
    p.host.name[200] = '\0';
    ASSERT_EQ(30, alkt_open_params_encode(&p, buf, sizeof buf, &err));
    ASSERT_EQ(0, memcmp(buf, "{\"listen\":9,\"substrate\":\"tcp\"}", 30));
    memset(&p, 0, sizeof p);
    p.kind = ALKT_OPEN_DIRECT;
    p.substrate = ALKT_SUBSTRATE_UNIX;
    strcpy(p.path, "/s");
    ASSERT(alkt_open_params_encode(&p, buf, sizeof buf, &err) > 0);
    p.port = 1;
    ASSERT_EQ(ALKT_ERR_FIELD_NOT_ALLOWED,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    ASSERT_STR_EQ("port", err.path);
    p.port = 0;
    p.host.kind = ALKT_HOST_IP;
    p.host.ip.family = 4;
    ASSERT_EQ(ALKT_ERR_FIELD_NOT_ALLOWED,
              alkt_open_params_encode(&p, buf, sizeof buf, &err));
    ASSERT_STR_EQ("host", err.path);
    PASS();
}

/* The typed decoders refuse every strict prefix of a valid document, and
 * a reader-level error there is the reader's own verdict. */
TEST property_prefixes_refused(void)
{
    uint64_t st = test_seed ^ 0xbeef;
    int run;
    for (run = 0; run < 200; run++) {
        alkt_open_params p, q;
        alkt_error err, rerr;
        ptrdiff_t n;
        size_t cut;
        gen_open(&st, &p);
        n = alkt_open_params_encode(&p, enc_a, sizeof enc_a, &err);
        ASSERT(n > 0);
        for (cut = 0; cut < (size_t)n; cut++) {
            int rc = alkt_open_params_decode(enc_a, cut, NULL, &q, &err);
            int rrc = alkt_json_validate(enc_a, cut, NULL, &rerr);
            ASSERT(rc < 0);
            ASSERT_EQ(ALKT_ERR_UNEXPECTED_END, rrc);
            ASSERT_EQ(cut, rerr.offset);
            if (rc == ALKT_ERR_UNEXPECTED_END)
                ASSERT_EQ(cut, err.offset);
        }
    }
    PASS();
}

/* The bit-by-bit 64-by-32 division the 32-bit builds use (64-bit hosts
 * divide natively, so it is checked here against the native one): edges
 * and a million drawn pairs, quotient and remainder. */
TEST divmod64_bits_matches_native(void)
{
    static const uint64_t vs[] = {0, 1, 9, 10, 0xffffffffull, 0x100000000ull,
                                  0x100000001ull, 0xfffffffffffffffeull, UINT64_MAX,
                                  1ull << 53, (1ull << 63) + 12345};
    static const uint32_t ds[] = {1, 2, 3, 10, 16, 255, 4096, 262144, 0x7fffffffu,
                                  0x80000000u, 0xfffffffeu, 0xffffffffu};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    size_t i, j;
    long k;
    for (i = 0; i < sizeof vs / sizeof vs[0]; i++)
        for (j = 0; j < sizeof ds / sizeof ds[0]; j++) {
            uint64_t v = vs[i];
            uint32_t r = alkt__divmod64_bits(&v, ds[j]);
            ASSERT_EQ(vs[i] / ds[j], v);
            ASSERT_EQ((uint32_t)(vs[i] % ds[j]), r);
        }
    for (k = 0; k < 1000000; k++) {
        uint64_t a, v;
        uint32_t d, r;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        a = x >> (x & 63);
        d = (uint32_t)(x >> 32) >> (x >> 59);
        if (!d) d = 7;
        v = a;
        r = alkt__divmod64_bits(&v, d);
        if (v != a / d || r != (uint32_t)(a % d)) FAILm("divmod64_bits differs from native");
    }
    PASS();
}

SUITE(alkt_properties)
{
    RUN_TEST(property_open_params_round_trip);
    RUN_TEST(property_control_round_trip);
    RUN_TEST(property_prefixes_refused);
    RUN_TEST(control_fast_path_limits);
    RUN_TEST(open_encode_refuses_stray_fields);
    RUN_TEST(unknown_key_path_cut);
    RUN_TEST(control_reader_errors_carry_paths);
    RUN_TEST(decoders_zero_dirty_structs);
    RUN_TEST(path_built_into_dirty_buffer);
    RUN_TEST(hostnames_that_resolvers_read_as_addresses);
    RUN_TEST(argument_errors_fill_err);
    RUN_TEST(secret_hex_case_edges);
    RUN_TEST(character_classes_every_byte);
    RUN_TEST(divmod64_bits_matches_native);
    RUN_TEST(escaped_key_too_long_is_unknown);
    RUN_TEST(unescape_lone_backslash_at_end);
    RUN_TEST(control_encode_null_section_array);
}

GREATEST_MAIN_DEFS();

int main(int argc, char **argv)
{
    ALK_TEST_MAIN_BEGIN();
    RUN_SUITE(alkt_reader_suite);
    RUN_SUITE(alkt_address_suite);
    RUN_SUITE(alkt_open_suite);
    RUN_SUITE(alkt_reply_suite);
    RUN_SUITE(alkt_control_suite);
    RUN_SUITE(alkt_encode_suite);
    RUN_SUITE(alkt_properties);
    RUN_SUITE(alkt_session_suite);
    RUN_SUITE(alkt_roles_suite);
    RUN_SUITE(alkt_crypto_suite);
    RUN_SUITE(alkt_sealed_suite);
    GREATEST_MAIN_END();
}

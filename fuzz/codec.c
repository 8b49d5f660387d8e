/* codec.c - fuzz target `codec`: generator + oracle for alkcodec.h.
 *
 * One input is one scenario (layout in codec_layout.h): a byte stream, a
 * maximum datagram size and a split pattern. The stream is decoded three
 * ways - as one chunk, split by the pattern (with empty chunks), and one
 * byte at a time - and every step of every pass is checked against a
 * reference model that walks the whole stream with plain indexing:
 *
 *   - a datagram is returned only once its `len` payload bytes have all been
 *     fed, with exactly the model's bytes, and never with len > max;
 *   - NEED_MORE is returned only when the frame at the model's cursor really
 *     is incomplete in what was fed; then the fed chunk is fully absorbed and
 *     retained_bytes equals the bytes of that partial frame (<= one frame);
 *   - zero-copy exactly when the payload lies in the current chunk;
 *   - re-framing each datagram (alternately alkc_encode and
 *     alkc_encode_header) reproduces the consumed input byte for byte;
 *   - oversize rejection iff the declared len > max: sticky, with the
 *     declared length and header offset; later feed/next give the same error;
 *   - feeding while input is pending is refused and changes nothing; empty
 *     chunks change nothing;
 *   - every pass yields the same datagram count, boundary and outcome;
 *   - decode(frame(x)) == [x] for x cut from the stream; the encoder's
 *     limit errors echo both sizes and write nothing.
 *
 * The amplification switch replays the `00 00` attack: up to 16 MiB in one
 * chunk, millions of empty datagrams, while the decoder retains nothing.
 * The same function runs under the replay gate, seed mode and the fuzzers. */
#include "alkcodec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../testkit/alk_check.h"
#include "codec_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reference model: the frame at `pos` of the whole stream. */
typedef struct ref_frame {
    int kind;        /* 1 complete, 0 incomplete, -1 oversize */
    size_t header_len;
    size_t declared; /* valid once two header bytes exist */
    size_t payload;  /* offset of the payload */
} ref_frame;

static ref_frame ref_at(const uint8_t *s, size_t n, size_t max, size_t pos)
{
    ref_frame f;
    f.header_len = n - pos < ALKC_HEADER_SIZE ? n - pos : ALKC_HEADER_SIZE;
    f.declared = 0;
    f.payload = pos + ALKC_HEADER_SIZE;
    if (f.header_len < ALKC_HEADER_SIZE) {
        f.kind = 0;
        return f;
    }
    f.declared = ((size_t)s[pos] << 8) | s[pos + 1];
    if (f.declared > max)
        f.kind = -1;
    else
        f.kind = n - f.payload >= f.declared ? 1 : 0;
    return f;
}

typedef struct pass_result {
    size_t datagrams;
    size_t boundary;    /* stream offset after the last datagram */
    int outcome;        /* ALKC_NEED_MORE at the end, or the sticky error */
    uint64_t digest;    /* over the datagram sequence */
} pass_result;

enum pass_kind { PASS_WHOLE, PASS_SPLIT, PASS_BYTEWISE };
static const char *const pass_names[] = {"whole", "split", "bytewise"};

typedef struct pass_ctx {
    const uint8_t *s;
    size_t n, max, fed, pos;
    const codec_scenario *sc;
    enum pass_kind kind;
    alkc_decoder dec;
    uint8_t *mem;
    size_t mem_len;
    pass_result res;
} pass_ctx;

static uint64_t digest_step(uint64_t h, const uint8_t *p, size_t n)
{
    size_t i;
    h ^= n + 0x9e3779b97f4a7c15u;
    h *= 0x100000001b3u;
    for (i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3u;
    }
    return h;
}

/* Re-frame a decoded datagram and compare with the bytes it came from. */
static void check_reframe(pass_ctx *c, const alkc_datagram *dg, size_t frame)
{
    uint8_t small[ALKC_FRAME_SIZE(64)];
    alkc_error_info info;
    if (c->res.datagrams % 2 == 0 && dg->len <= 64) {
        ptrdiff_t w = alkc_encode(small, sizeof small, dg->data, dg->len,
                                  c->max, &info);
        ALK_CHECK(w == (ptrdiff_t)ALKC_FRAME_SIZE(dg->len),
                  "re-encode of %zu bytes returned %td (%s)", dg->len, w,
                  alkc_strerror(info.code));
        ALK_CHECK(info.code == ALKC_OK && info.length == dg->len &&
                      info.limit == c->max && info.offset == 0,
                  "encode's info on success: code %d length %zu limit %zu "
                  "offset %llu", info.code, info.length, info.limit,
                  (unsigned long long)info.offset);
        ALK_CHECK(memcmp(small, c->s + frame, (size_t)w) == 0,
                  "re-framed datagram differs from input at offset %zu",
                  frame);
    } else {
        uint8_t hdr[ALKC_HEADER_SIZE];
        int rc = alkc_encode_header(hdr, dg->len, c->max, &info);
        ALK_CHECK(rc == ALKC_OK, "encode_header(%zu, max %zu): %s", dg->len,
                  c->max, alkc_strerror(rc));
        ALK_CHECK(info.code == ALKC_OK && info.length == dg->len &&
                      info.limit == c->max && info.offset == 0,
                  "encode_header's info on success: code %d length %zu "
                  "limit %zu offset %llu", info.code, info.length, info.limit,
                  (unsigned long long)info.offset);
        ALK_CHECK(memcmp(hdr, c->s + frame, ALKC_HEADER_SIZE) == 0,
                  "re-framed header differs from input at offset %zu", frame);
        ALK_CHECK(memcmp(dg->data, c->s + frame + ALKC_HEADER_SIZE,
                         dg->len) == 0,
                  "payload differs from input at offset %zu", frame);
    }
}

/* Pull datagrams until NEED_MORE or an error; check each step. Returns 0
 * when the pass must stop (sticky error seen). */
static int drain(pass_ctx *c, const uint8_t *chunk, size_t chunk_start)
{
    for (;;) {
        alkc_datagram dg;
        int rc = alkc_decoder_next(&c->dec, &dg);
        ref_frame f = ref_at(c->s, c->fed, c->max, c->pos);
        size_t retained = alkc_decoder_retained_bytes(&c->dec);

        if (rc == ALKC_OK) {
            ALK_CHECK(f.kind == 1,
                      "%s: datagram returned at %zu but the model's frame is "
                      "%s with %zu bytes fed",
                      pass_names[c->kind], c->pos,
                      f.kind ? "oversize" : "incomplete", c->fed);
            ALK_CHECK(dg.len == f.declared && dg.len <= c->max,
                      "%s: datagram at %zu has len %zu, model %zu (max %zu)",
                      pass_names[c->kind], c->pos, dg.len, f.declared, c->max);
            ALK_CHECK(dg.data != NULL, "datagram data is NULL");
            if (f.payload >= chunk_start) {
                ALK_CHECK(dg.copied == 0 && dg.data == chunk + (f.payload -
                                                             chunk_start),
                          "%s: payload at %zu lies in the chunk [%zu..) but "
                          "was not returned zero-copy",
                          pass_names[c->kind], f.payload, chunk_start);
            } else {
                ALK_CHECK(dg.copied == 1 && dg.data == c->mem,
                          "%s: straddling payload at %zu not assembled in mem",
                          pass_names[c->kind], f.payload);
            }
            check_reframe(c, &dg, c->pos);
            c->pos = f.payload + f.declared;
            ALK_CHECK(retained == 0 && !alkc_decoder_is_mid_datagram(&c->dec),
                      "%s: after a datagram retained=%zu mid=%d",
                      pass_names[c->kind], retained,
                      alkc_decoder_is_mid_datagram(&c->dec));
            ALK_CHECK(alkc_decoder_stream_offset(&c->dec) == c->pos,
                      "%s: stream offset %llu, model boundary %zu",
                      pass_names[c->kind],
                      (unsigned long long)alkc_decoder_stream_offset(&c->dec),
                      c->pos);
            ALK_CHECK(alkc_decoder_pending_input(&c->dec) == c->fed - c->pos,
                      "%s: pending %zu, expected %zu", pass_names[c->kind],
                      alkc_decoder_pending_input(&c->dec), c->fed - c->pos);
            c->res.datagrams++;
            c->res.digest = digest_step(c->res.digest, dg.data, dg.len);
            continue;
        }
        if (rc == ALKC_NEED_MORE) {
            ALK_CHECK(f.kind == 0,
                      "%s: NEED_MORE at %zu but the model's frame is %s "
                      "(declared %zu, %zu bytes fed)",
                      pass_names[c->kind], c->pos,
                      f.kind > 0 ? "complete" : "oversize", f.declared, c->fed);
            ALK_CHECK(alkc_decoder_pending_input(&c->dec) == 0,
                      "%s: NEED_MORE with %zu bytes pending",
                      pass_names[c->kind],
                      alkc_decoder_pending_input(&c->dec));
            ALK_CHECK(retained == c->fed - c->pos,
                      "%s: retained %zu, partial frame has %zu bytes",
                      pass_names[c->kind], retained, c->fed - c->pos);
            ALK_CHECK(retained <= ALKC_FRAME_SIZE(c->max),
                      "%s: retained %zu exceeds one frame (max %zu)",
                      pass_names[c->kind], retained, c->max);
            ALK_CHECK(alkc_decoder_is_mid_datagram(&c->dec) == (retained > 0),
                      "%s: mid=%d with %zu retained", pass_names[c->kind],
                      alkc_decoder_is_mid_datagram(&c->dec), retained);
            ALK_CHECK(alkc_decoder_stream_offset(&c->dec) == c->fed,
                      "%s: stream offset %llu after NEED_MORE, fed %zu",
                      pass_names[c->kind],
                      (unsigned long long)alkc_decoder_stream_offset(&c->dec),
                      c->fed);
            return 1;
        }
        if (rc == ALKC_ERR_DATAGRAM_TOO_LARGE) {
            alkc_error_info info, again;
            ALK_CHECK(f.kind == -1,
                      "%s: oversize error at %zu but model frame kind %d "
                      "declared %zu max %zu",
                      pass_names[c->kind], c->pos, f.kind, f.declared, c->max);
            ALK_CHECK(alkc_decoder_error(&c->dec, &info) == rc,
                      "sticky error not reported by alkc_decoder_error");
            ALK_CHECK(alkc_decoder_error(&c->dec, NULL) == rc,
                      "sticky error not reported by alkc_decoder_error without info");
            ALK_CHECK(info.code == rc && info.length == f.declared &&
                          info.limit == c->max && info.offset == c->pos,
                      "%s: error info len=%zu limit=%zu off=%llu, model "
                      "declared=%zu max=%zu off=%zu",
                      pass_names[c->kind], info.length, info.limit,
                      (unsigned long long)info.offset, f.declared, c->max,
                      c->pos);
            ALK_CHECK(alkc_error_is_fatal(rc), "oversize must be fatal");
            /* Sticky: nothing moves any more. */
            ALK_CHECK(alkc_decoder_next(&c->dec, &dg) == rc,
                      "next after the sticky error did not repeat it");
            ALK_CHECK(alkc_decoder_feed(&c->dec, c->s, 0) == rc,
                      "feed after the sticky error did not repeat it");
            alkc_decoder_error(&c->dec, &again);
            ALK_CHECK(again.code == info.code &&
                          again.length == info.length &&
                          again.limit == info.limit &&
                          again.offset == info.offset,
                      "error context changed after further calls");
            ALK_CHECK(alkc_decoder_retained_bytes(&c->dec) == retained,
                      "retained changed after the sticky error");
            c->res.outcome = rc;
            return 0;
        }
        ALK_CHECK(0, "%s: unexpected result %d (%s) at %zu",
                  pass_names[c->kind], rc, alkc_strerror(rc), c->pos);
    }
}

static int feed_chunk(pass_ctx *c, const uint8_t *chunk, size_t len)
{
    int rc = alkc_decoder_feed(&c->dec, chunk, len);
    size_t start = c->fed;
    ALK_CHECK(rc == ALKC_OK, "%s: feed of %zu bytes at %zu: %s",
              pass_names[c->kind], len, c->fed, alkc_strerror(rc));
    c->fed += len;
    if (len > 0) {
        /* Refused while pending, and the refusal changes nothing. */
        size_t pending = alkc_decoder_pending_input(&c->dec);
        size_t retained = alkc_decoder_retained_bytes(&c->dec);
        uint64_t offset = alkc_decoder_stream_offset(&c->dec);
        alkc_error_info info;
        rc = alkc_decoder_feed(&c->dec, chunk, len);
        ALK_CHECK(rc == ALKC_ERR_INPUT_PENDING,
                  "%s: second feed with %zu pending returned %d",
                  pass_names[c->kind], len, rc);
        ALK_CHECK(!alkc_error_is_fatal(rc), "INPUT_PENDING must not be fatal");
        ALK_CHECK(pending == len, "%zu pending after feeding %zu",
                  pending, len);
        ALK_CHECK(alkc_decoder_error(&c->dec, &info) == ALKC_OK,
                  "INPUT_PENDING became sticky");
        ALK_CHECK(alkc_decoder_pending_input(&c->dec) == pending &&
                      alkc_decoder_retained_bytes(&c->dec) == retained &&
                      alkc_decoder_stream_offset(&c->dec) == offset,
                  "refused feed changed decoder state");
    }
    return drain(c, chunk, start);
}

/* `mem` holds exactly ALKC_DECODER_MEM_SIZE(max) bytes (one allocation per
 * input, so ASan sees any overrun of the documented size). */
static pass_result run_pass(const codec_scenario *sc, const uint8_t *s,
                            size_t n, enum pass_kind kind, uint8_t *mem)
{
    pass_ctx c;
    alkc_decoder_config cfg;
    size_t i = 0;
    int go = 1;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.n = n;
    c.sc = sc;
    c.kind = kind;
    cfg.max_datagram = sc->max_datagram;
    c.max = ALKC_DECODER_MEM_SIZE(sc->max_datagram);
    c.mem_len = ALKC_DECODER_MEM_SIZE(sc->max_datagram);
    c.mem = mem;
    /* init sets every field: the decoder starts as garbage, not zeros */
    memset(&c.dec, 0xA5, sizeof c.dec);
    ALK_CHECK(alkc_decoder_init(&c.dec, &cfg, c.mem, c.mem_len) == ALKC_OK,
              "init with max %zu failed", sc->max_datagram);
    ALK_CHECK(alkc_decoder_init(&c.dec, &cfg, c.mem, c.mem_len - 1) ==
                  ALKC_ERR_INVALID_ARGUMENT,
              "init accepted %zu bytes of mem for max %zu", c.mem_len - 1,
              c.max);
    memset(&c.dec, 0xA5, sizeof c.dec);
    ALK_CHECK(alkc_decoder_init(&c.dec, &cfg, c.mem, c.mem_len) == ALKC_OK,
              "re-init failed");
    ALK_CHECK(alkc_decoder_stream_offset(&c.dec) == 0 &&
                  alkc_decoder_pending_input(&c.dec) == 0 &&
                  alkc_decoder_retained_bytes(&c.dec) == 0 &&
                  !alkc_decoder_is_mid_datagram(&c.dec),
              "a fresh decoder is not at offset 0 with nothing held");
    c.res.outcome = ALKC_NEED_MORE;
    c.res.digest = 0xcbf29ce484222325u;
    alk_trace("pass %s over %zu bytes", pass_names[kind], n);

    if (kind == PASS_WHOLE) {
        go = feed_chunk(&c, s, n);
    } else if (kind == PASS_BYTEWISE) {
        for (i = 0; go && i < n; i++)
            go = feed_chunk(&c, s + i, 1);
    } else {
        size_t k = 0;
        while (go && c.fed < n) {
            int empty_first;
            uint8_t b = sc->pattern_len ? codec_pattern_byte(sc, k++) : 0;
            size_t len = codec_chunk_size(b, n - c.fed, &empty_first);
            if (empty_first) {
                size_t r = alkc_decoder_retained_bytes(&c.dec);
                int mid = alkc_decoder_is_mid_datagram(&c.dec);
                go = feed_chunk(&c, s + c.fed, 0);
                ALK_CHECK(!go || (alkc_decoder_retained_bytes(&c.dec) == r &&
                                  alkc_decoder_is_mid_datagram(&c.dec) == mid),
                          "an empty chunk changed the decoder state");
                if (!go)
                    break;
            }
            if (k <= 8)
                alk_trace("  chunk [%zu, +%zu)", c.fed, len);
            go = feed_chunk(&c, s + c.fed, len);
        }
    }
    if (go) {
        /* An empty chunk (NULL allowed) at the end is a no-op too. */
        size_t r = alkc_decoder_retained_bytes(&c.dec);
        ALK_CHECK(alkc_decoder_feed(&c.dec, NULL, 0) == ALKC_OK,
                  "feed(NULL, 0) refused");
        go = drain(&c, NULL, c.fed);
        ALK_CHECK(go && alkc_decoder_retained_bytes(&c.dec) == r,
                  "empty feed at end changed the state");
        ALK_CHECK(ref_at(s, n, c.max, c.pos).kind == 0,
                  "%s: ended at %zu but a frame remains", pass_names[kind],
                  c.pos);
    }
    /* After a reset the decoder is clean and usable again, and the stream
     * offset keeps counting from where the decoder had read to: a fresh
     * frame decodes, and the offset moves by its size. */
    {
        static const uint8_t fresh[3] = {0, 1, 'x'};
        uint64_t at = alkc_decoder_stream_offset(&c.dec);
        alkc_datagram dg;
        alkc_error_info info;
        alkc_decoder_reset(&c.dec);
        /* (an error before the reset leaves no stale details behind) */
        memset(&info, 0x77, sizeof info);
        ALK_CHECK(alkc_decoder_error(&c.dec, &info) == ALKC_OK && info.code == ALKC_OK &&
                      info.length == 0 && info.limit == 0 && info.offset == 0,
                  "reset left the error's details behind");
        ALK_CHECK(alkc_decoder_error(&c.dec, NULL) == ALKC_OK &&
                      alkc_decoder_retained_bytes(&c.dec) == 0 &&
                      !alkc_decoder_is_mid_datagram(&c.dec) &&
                      alkc_decoder_pending_input(&c.dec) == 0,
                  "reset left state behind");
        ALK_CHECK(alkc_decoder_stream_offset(&c.dec) == at,
                  "%s: reset moved the stream offset from %llu to %llu",
                  pass_names[kind], (unsigned long long)at,
                  (unsigned long long)alkc_decoder_stream_offset(&c.dec));
        ALK_CHECK(alkc_decoder_feed(&c.dec, fresh, sizeof fresh) == ALKC_OK &&
                      alkc_decoder_next(&c.dec, &dg) == ALKC_OK &&
                      dg.len == 1 && dg.data[0] == 'x' &&
                      alkc_decoder_next(&c.dec, &dg) == ALKC_NEED_MORE,
                  "%s: a fresh frame after the reset did not decode",
                  pass_names[kind]);
        ALK_CHECK(alkc_decoder_stream_offset(&c.dec) == at + sizeof fresh,
                  "%s: the offset after a fresh frame is %llu, not %llu",
                  pass_names[kind],
                  (unsigned long long)alkc_decoder_stream_offset(&c.dec),
                  (unsigned long long)(at + sizeof fresh));
    }
    c.res.boundary = c.pos;
    return c.res;
}

static void check_same(const pass_result *a, const pass_result *b,
                       const char *what)
{
    ALK_CHECK(a->datagrams == b->datagrams && a->boundary == b->boundary &&
                  a->outcome == b->outcome && a->digest == b->digest,
              "%s differs from whole: %zu vs %zu datagrams, boundary %zu vs "
              "%zu, outcome %d vs %d",
              what, b->datagrams, a->datagrams, b->boundary, a->boundary,
              b->outcome, a->outcome);
}

/* Every result code has its own message, unknown codes the unknown one;
 * only a declared length over the limit is fatal; NULL arguments are
 * refused with nothing written, the observables of a NULL decoder are 0; a
 * clean decoder's error info is all zero. */
static void check_codes(void)
{
    static const struct {
        int code;
        const char *name;
    } codes[] = {
#define CODEC__ROW(name, value, text) {name, #name},
        ALKC_RESULT_LIST(CODEC__ROW)
#undef CODEC__ROW
    };
    const char *unknown = alkc_strerror(-1000);
    size_t i, j;
    ALK_CHECK(unknown && *unknown, "no text for an unknown code");
    for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        const char *t = alkc_strerror(codes[i].code);
        ALK_CHECK(t && *t && strcmp(t, unknown) != 0, "%s has no message",
                  codes[i].name);
        for (j = 0; j < i; j++)
            ALK_CHECK(strcmp(t, alkc_strerror(codes[j].code)) != 0,
                      "%s and %s share a message", codes[i].name, codes[j].name);
        ALK_CHECK(alkc_error_is_fatal(codes[i].code) ==
                      (codes[i].code == ALKC_ERR_DATAGRAM_TOO_LARGE),
                  "%s: fatal %d", codes[i].name,
                  alkc_error_is_fatal(codes[i].code));
    }
    /* NULL arguments are refused, with nothing written */
    {
        static uint8_t mem[ALKC_DECODER_MEM_SIZE(16)];
        alkc_decoder dec;
        alkc_decoder_config cfg;
        alkc_error_info info;
        uint8_t out[8] = {0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE};
        memset(&info, 0x77, sizeof info);
        ALK_CHECK(alkc_encode(NULL, 8, "ab", 2, 16, NULL) == ALKC_ERR_INVALID_ARGUMENT &&
                      alkc_encode(out, 1, "ab", 2, 16, NULL) == ALKC_ERR_BUFFER_TOO_SMALL,
                  "errors without an info to fill");
        ALK_CHECK(alkc_encode(NULL, 8, "ab", 2, 16, &info) == ALKC_ERR_INVALID_ARGUMENT &&
                      info.code == ALKC_ERR_INVALID_ARGUMENT && info.length == 2 &&
                      info.limit == 8 && info.offset == 0,
                  "encode to NULL");
        ALK_CHECK(alkc_encode(out, 8, NULL, 2, 16, &info) == ALKC_ERR_INVALID_ARGUMENT &&
                      out[0] == 0xEE,
                  "encode of a NULL payload of 2 bytes");
        ALK_CHECK(alkc_encode(out, 8, NULL, 0, 16, &info) == 2 && out[0] == 0 &&
                      out[1] == 0,
                  "encode of an empty NULL payload");
        ALK_CHECK(alkc_encode_header(NULL, 1, 16, &info) == ALKC_ERR_INVALID_ARGUMENT &&
                      info.code == ALKC_ERR_INVALID_ARGUMENT && info.length == 1 &&
                      info.limit == 16 && info.offset == 0,
                  "encode_header into NULL");
        ALK_CHECK(alkc_encode(out, 8, NULL, 2, 16, &info) == ALKC_ERR_INVALID_ARGUMENT &&
                      info.code == ALKC_ERR_INVALID_ARGUMENT && info.length == 2 &&
                      info.limit == 8 && info.offset == 0,
                  "encode of a NULL payload: error info");
        cfg.max_datagram = 16;
        ALK_CHECK(alkc_decoder_init(&dec, &cfg, mem, sizeof mem) == ALKC_OK, "init");
        memset(&info, 0x77, sizeof info);
        ALK_CHECK(alkc_decoder_error(&dec, &info) == ALKC_OK && info.code == ALKC_OK &&
                      info.length == 0 && info.limit == 0 && info.offset == 0,
                  "a clean decoder's error info is not all zero");
        ALK_CHECK(alkc_decoder_feed(NULL, out, 1) == ALKC_ERR_INVALID_ARGUMENT &&
                      alkc_decoder_feed(&dec, NULL, 1) == ALKC_ERR_INVALID_ARGUMENT &&
                      alkc_decoder_pending_input(&dec) == 0 &&
                      alkc_decoder_feed(&dec, NULL, 0) == ALKC_OK,
                  "feed of NULL");
        ALK_CHECK(alkc_decoder_error(NULL, &info) == ALKC_ERR_INVALID_ARGUMENT,
                  "error of a NULL decoder");
        {
            alkc_datagram dg;
            ALK_CHECK(alkc_decoder_next(NULL, &dg) == ALKC_ERR_INVALID_ARGUMENT &&
                          alkc_decoder_next(&dec, NULL) == ALKC_ERR_INVALID_ARGUMENT,
                      "next of a NULL decoder or into NULL");
        }
    }
    /* a NULL config means the wire maximum: 65535 is a length to wait for */
    {
        static uint8_t big[ALKC_DECODER_MEM_SIZE(ALKC_MAX_DATAGRAM)];
        static const uint8_t hdr[2] = {0xff, 0xff};
        alkc_decoder dec;
        alkc_datagram dg;
        ALK_CHECK(alkc_decoder_init(&dec, NULL, big, sizeof big - 1) ==
                          ALKC_ERR_INVALID_ARGUMENT &&
                      alkc_decoder_init(&dec, NULL, big, sizeof big) == ALKC_OK &&
                      alkc_decoder_feed(&dec, hdr, sizeof hdr) == ALKC_OK &&
                      alkc_decoder_next(&dec, &dg) == ALKC_NEED_MORE &&
                      alkc_decoder_retained_bytes(&dec) == 2,
                  "a NULL config is not the 65535-byte maximum");
    }
    ALK_CHECK(alkc_decoder_retained_bytes(NULL) == 0 &&
                  !alkc_decoder_is_mid_datagram(NULL) &&
                  alkc_decoder_pending_input(NULL) == 0 &&
                  alkc_decoder_stream_offset(NULL) == 0,
              "an observable of a NULL decoder is not 0");
    ALK_CHECK(!strcmp(alkc_strerror(2), unknown) &&
                  !strcmp(alkc_strerror(-6), unknown),
              "a code past the list has a message");
}

/* decode(frame(x)) == [x], and the encoder's limit errors. */
static void check_encoder(const codec_scenario *sc, uint8_t *mem)
{
    static uint8_t frame[ALKC_FRAME_SIZE(ALKC_MAX_DATAGRAM) + 1];
    size_t max = ALKC_DECODER_MEM_SIZE(sc->max_datagram);
    size_t len = sc->stream_len < max ? sc->stream_len : max;
    alkc_error_info info;
    codec_scenario one = *sc;
    pass_result whole, split;
    ptrdiff_t w;
    uint8_t hdr[2] = {0x5a, 0x5a};
    int rc;

    w = alkc_encode(frame, sizeof frame, sc->stream, len, sc->max_datagram,
                    &info);
    ALK_CHECK(w == (ptrdiff_t)ALKC_FRAME_SIZE(len) && info.code == ALKC_OK,
              "encode of %zu bytes returned %td", len, w);
    one.amplify = 0;
    whole = run_pass(&one, frame, (size_t)w, PASS_WHOLE, mem);
    split = run_pass(&one, frame, (size_t)w, PASS_SPLIT, mem);
    ALK_CHECK(whole.datagrams == 1 && whole.boundary == (size_t)w &&
                  whole.outcome == ALKC_NEED_MORE,
              "decode(frame(x)) gave %zu datagrams, boundary %zu of %td",
              whole.datagrams, whole.boundary, w);
    check_same(&whole, &split, "round trip split");
    ALK_CHECK(whole.digest == digest_step(0xcbf29ce484222325u, sc->stream,
                                          len),
              "decode(frame(x)) != x");

    /* One byte short of room: refused, both sizes echoed, nothing written. */
    memset(frame, 0xEE, sizeof frame);
    w = alkc_encode(frame, ALKC_FRAME_SIZE(len) - 1, sc->stream, len,
                    sc->max_datagram, &info);
    ALK_CHECK(w == ALKC_ERR_BUFFER_TOO_SMALL &&
                  info.length == ALKC_FRAME_SIZE(len) &&
                  info.limit == ALKC_FRAME_SIZE(len) - 1 && info.offset == 0,
              "short buffer: rc %td need %zu cap %zu", w, info.length,
              info.limit);
    ALK_CHECK(frame[0] == 0xEE && frame[1] == 0xEE && frame[2] == 0xEE,
              "encoder wrote into a too-small buffer");

    /* One byte over the limit (when the limit is below the wire maximum). */
    if (max < ALKC_MAX_DATAGRAM && sc->stream_len > max) {
        w = alkc_encode(frame, sizeof frame, sc->stream, max + 1,
                        sc->max_datagram, &info);
        ALK_CHECK(w == ALKC_ERR_PAYLOAD_TOO_LARGE && info.length == max + 1 &&
                      info.limit == max && info.offset == 0,
                  "oversize payload: rc %td length %zu limit %zu", w,
                  info.length, info.limit);
        ALK_CHECK(frame[0] == 0xEE, "encoder wrote an oversize frame");
    }
    rc = alkc_encode_header(hdr, max + 1, sc->max_datagram, &info);
    ALK_CHECK(rc == ALKC_ERR_PAYLOAD_TOO_LARGE && info.length == max + 1 &&
                  info.limit == max && info.offset == 0 && hdr[0] == 0x5a &&
                  hdr[1] == 0x5a,
              "encode_header(max+1) rc %d", rc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    codec_scenario sc;
    pass_result whole, split;
    const uint8_t *s;
    size_t n;
    uint8_t *amp = NULL, *mem;

    alk_trace_reset();
    codec_parse(data, size, &sc);
    alk_trace("codec: input %zu bytes: stream %zu, max %zu (%s), amplify %d, "
              "split pattern %zu bytes",
              size, sc.stream_len, ALKC_DECODER_MEM_SIZE(sc.max_datagram),
              sc.max_datagram ? "set" : "default", sc.amplify, sc.pattern_len);
    s = sc.stream;
    n = sc.stream_len;
    mem = (uint8_t *)alk_malloc(ALKC_DECODER_MEM_SIZE(sc.max_datagram));
    ALK_CHECK(mem != NULL, "out of memory");
    if (sc.amplify) {
        static const uint8_t zero_pair[2] = {0, 0};
        const uint8_t *unit = n ? sc.stream : zero_pair;
        size_t unit_len = n ? n : sizeof zero_pair, i;
        amp = (uint8_t *)alk_malloc(CODEC_AMPLIFY_BYTES);
        ALK_CHECK(amp != NULL, "out of memory");
        for (i = 0; i < CODEC_AMPLIFY_BYTES; i++)
            amp[i] = unit[i % unit_len];
        s = amp;
        n = CODEC_AMPLIFY_BYTES;
    }

    whole = run_pass(&sc, s, n, PASS_WHOLE, mem);
    split = run_pass(&sc, s, n, PASS_SPLIT, mem);
    check_same(&whole, &split, "split pass");
    if (n <= 4096) {
        pass_result bytewise = run_pass(&sc, s, n, PASS_BYTEWISE, mem);
        check_same(&whole, &bytewise, "bytewise pass");
    }
    check_codes();
    check_encoder(&sc, mem);
    alk_free(amp);
    alk_free(mem);
    return 0;
}

/* json_ref.h - a slow, plain reference validator for RFC 8259 JSON texts.
 *
 * The differential oracle for alktunnel.h's JSON pull parser. It is written
 * straight from the ABNF in RFC 8259 (JSON) and RFC 3629 section 4 (UTF-8),
 * one function per production, so that it can be checked by reading it next
 * to the RFC. Speed is not a goal; clarity is.
 *
 *   static int json_ref_validate(const unsigned char *buf, size_t len,
 *                                size_t max_depth, size_t *err_offset);
 *
 * Returns 1 if buf[0..len) is exactly one JSON text (ws value ws), else 0.
 * Arrays/objects nested deeper than max_depth are rejected: a scalar is
 * depth 0, `[]` is depth 1, `[[]]` is depth 2. If err_offset is not NULL it
 * receives the offset of the first byte that could not be accepted (len when
 * the input ended too early); on success it receives len.
 *
 * Project decisions, where RFC 8259 leaves a choice to the implementation:
 *   - a UTF-8 byte order mark at the start is rejected (it is not ws);
 *   - any magnitude and precision of number is accepted (no range check);
 *   - \u escapes of unpaired surrogates are accepted (the grammar allows
 *     any four hex digits; a typed layer may reject them later);
 *   - duplicate object member names are accepted;
 *   - raw bytes in strings must be well-formed UTF-8 per RFC 3629 (no
 *     overlongs, no encoded surrogates, nothing above U+10FFFF);
 *   - any value type is allowed at the top level.
 *
 * No allocation. Recursion depth is bounded by max_depth + 1 frames of
 * json_ref__value (containers deeper than max_depth are refused before
 * recursing). Private names use the json_ref__ prefix. */
#ifndef JSON_REF_H
#define JSON_REF_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define JSON_REF_UNUSED __attribute__((unused))
#else
#define JSON_REF_UNUSED
#endif

typedef struct json_ref__input {
    const unsigned char *buf;
    size_t len;
    size_t pos;       /* next unread byte */
    size_t max_depth;
    size_t err;       /* offset of the failure, valid once a function returned 0 */
} json_ref__input;

/* Every failure goes through here so the offset is recorded exactly once, at
 * the innermost point that knew what it expected. */
static JSON_REF_UNUSED int json_ref__fail(json_ref__input *in, size_t at)
{
    in->err = at;
    return 0;
}

/* -1 at end of input, so callers can compare without a separate bounds check. */
static JSON_REF_UNUSED int json_ref__peek(const json_ref__input *in)
{
    return in->pos < in->len ? (int)in->buf[in->pos] : -1;
}

/* ws = *( %x20 / %x09 / %x0A / %x0D ) */
static JSON_REF_UNUSED void json_ref__ws(json_ref__input *in)
{
    for (;;) {
        int c = json_ref__peek(in);
        if (c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D)
            in->pos++;
        else
            return;
    }
}

static JSON_REF_UNUSED int json_ref__is_digit(int c)
{
    return c >= '0' && c <= '9';
}

static JSON_REF_UNUSED int json_ref__is_hexdig(int c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Consume one exact byte or fail at the current position. */
static JSON_REF_UNUSED int json_ref__expect(json_ref__input *in, int byte)
{
    if (json_ref__peek(in) != byte)
        return json_ref__fail(in, in->pos);
    in->pos++;
    return 1;
}

/* false = %x66.61.6c.73.65   null = %x6e.75.6c.6c   true = %x74.72.75.65
 * The ABNF quotes them as %x values, so they are case-sensitive. A letter
 * right after a literal ("truex") is caught by the caller, which sees a byte
 * that no production accepts. */
static JSON_REF_UNUSED int json_ref__literal(json_ref__input *in, const char *word)
{
    for (; *word != '\0'; word++) {
        if (!json_ref__expect(in, (unsigned char)*word))
            return 0;
    }
    return 1;
}

/* number = [ minus ] int [ frac ] [ exp ]
 * int    = zero / ( digit1-9 *DIGIT )
 * frac   = decimal-point 1*DIGIT
 * exp    = e [ minus / plus ] 1*DIGIT
 * After int, a second digit can only follow a leading zero ("01"); the
 * grammar has no production for it, so the caller rejects it as trailing
 * input. */
static JSON_REF_UNUSED int json_ref__number(json_ref__input *in)
{
    int c;

    if (json_ref__peek(in) == '-')
        in->pos++;

    c = json_ref__peek(in);
    if (c == '0') {
        in->pos++;
    } else if (c >= '1' && c <= '9') {
        while (json_ref__is_digit(json_ref__peek(in)))
            in->pos++;
    } else {
        return json_ref__fail(in, in->pos);
    }

    if (json_ref__peek(in) == '.') {
        in->pos++;
        if (!json_ref__is_digit(json_ref__peek(in)))
            return json_ref__fail(in, in->pos);
        while (json_ref__is_digit(json_ref__peek(in)))
            in->pos++;
    }

    c = json_ref__peek(in);
    if (c == 'e' || c == 'E') {
        in->pos++;
        c = json_ref__peek(in);
        if (c == '-' || c == '+')
            in->pos++;
        if (!json_ref__is_digit(json_ref__peek(in)))
            return json_ref__fail(in, in->pos);
        while (json_ref__is_digit(json_ref__peek(in)))
            in->pos++;
    }
    return 1;
}

/* UTF8-tail = %x80-BF. Checks the byte at pos+k without consuming it. */
static JSON_REF_UNUSED int json_ref__tail_in(const json_ref__input *in, size_t k,
                                             unsigned lo, unsigned hi)
{
    size_t at = in->pos + k;
    return at < in->len && in->buf[at] >= lo && in->buf[at] <= hi;
}

/* One non-ASCII character, RFC 3629 section 4:
 *   UTF8-2 = %xC2-DF UTF8-tail
 *   UTF8-3 = %xE0 %xA0-BF UTF8-tail / %xE1-EC 2( UTF8-tail ) /
 *            %xED %x80-9F UTF8-tail / %xEE-EF 2( UTF8-tail )
 *   UTF8-4 = %xF0 %x90-BF 2( UTF8-tail ) / %xF1-F3 3( UTF8-tail ) /
 *            %xF4 %x80-8F 2( UTF8-tail )
 * The narrowed second-byte ranges exclude overlongs (E0, F0), UTF-16
 * surrogates (ED) and code points above U+10FFFF (F4); C0, C1 and F5-FF
 * appear in no rule. On failure the offset is the first byte that does not
 * fit its rule. */
static JSON_REF_UNUSED int json_ref__utf8_multibyte(json_ref__input *in)
{
    unsigned lead = in->buf[in->pos];
    unsigned second_lo = 0x80, second_hi = 0xBF;
    size_t count; /* total bytes in the sequence */
    size_t k;

    if (lead >= 0xC2 && lead <= 0xDF) {
        count = 2;
    } else if (lead == 0xE0) {
        count = 3; second_lo = 0xA0;
    } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
        count = 3;
    } else if (lead == 0xED) {
        count = 3; second_hi = 0x9F;
    } else if (lead == 0xF0) {
        count = 4; second_lo = 0x90;
    } else if (lead >= 0xF1 && lead <= 0xF3) {
        count = 4;
    } else if (lead == 0xF4) {
        count = 4; second_hi = 0x8F;
    } else {
        /* 80-BF (stray tail), C0-C1 (overlong lead), F5-FF (never valid) */
        return json_ref__fail(in, in->pos);
    }

    if (!json_ref__tail_in(in, 1, second_lo, second_hi))
        return json_ref__fail(in, in->pos + 1); /* == len when truncated */
    for (k = 2; k < count; k++) {
        if (!json_ref__tail_in(in, k, 0x80, 0xBF))
            return json_ref__fail(in, in->pos + k);
    }
    in->pos += count;
    return 1;
}

/* string     = quotation-mark *char quotation-mark
 * char       = unescaped / escape ( %x22 / %x5C / %x2F / %x62 / %x66 /
 *                                   %x6E / %x72 / %x74 / %x75 4HEXDIG )
 * unescaped  = %x20-21 / %x23-5B / %x5D-10FFFF
 * Any four hex digits are accepted after \u, including unpaired surrogates:
 * the grammar says nothing about pairing. */
static JSON_REF_UNUSED int json_ref__string(json_ref__input *in)
{
    if (!json_ref__expect(in, '"'))
        return 0;
    for (;;) {
        int c = json_ref__peek(in);
        if (c < 0)
            return json_ref__fail(in, in->len); /* unterminated */
        if (c == '"') {
            in->pos++;
            return 1;
        }
        if (c == '\\') {
            in->pos++;
            c = json_ref__peek(in);
            if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' ||
                c == 'n' || c == 'r' || c == 't') {
                in->pos++;
            } else if (c == 'u') {
                int i;
                in->pos++;
                for (i = 0; i < 4; i++) {
                    if (!json_ref__is_hexdig(json_ref__peek(in)))
                        return json_ref__fail(in, in->pos);
                    in->pos++;
                }
            } else {
                return json_ref__fail(in, in->pos); /* the byte after the backslash */
            }
        } else if (c < 0x20) {
            return json_ref__fail(in, in->pos); /* control characters must be escaped */
        } else if (c < 0x80) {
            in->pos++; /* %x20-21 / %x23-5B / %x5D-7F: quote and backslash handled above */
        } else if (!json_ref__utf8_multibyte(in)) {
            return 0;
        }
    }
}

static int json_ref__value(json_ref__input *in, size_t depth);

/* array = begin-array [ value *( value-separator value ) ] end-array
 * begin-array = ws %x5B ws, value-separator = ws %x2C ws, end-array = ws %x5D ws
 * depth is the nesting of the containers around this one. */
static JSON_REF_UNUSED int json_ref__array(json_ref__input *in, size_t depth)
{
    if (depth >= in->max_depth)
        return json_ref__fail(in, in->pos);
    if (!json_ref__expect(in, '['))
        return 0;
    json_ref__ws(in);
    if (json_ref__peek(in) == ']') {
        in->pos++;
        return 1;
    }
    for (;;) {
        if (!json_ref__value(in, depth + 1))
            return 0;
        json_ref__ws(in);
        if (json_ref__peek(in) == ',') {
            in->pos++;
            json_ref__ws(in);
            continue;
        }
        return json_ref__expect(in, ']');
    }
}

/* object = begin-object [ member *( value-separator member ) ] end-object
 * member = string name-separator value,  name-separator = ws %x3A ws
 * Member names are not compared: duplicates are accepted. */
static JSON_REF_UNUSED int json_ref__object(json_ref__input *in, size_t depth)
{
    if (depth >= in->max_depth)
        return json_ref__fail(in, in->pos);
    if (!json_ref__expect(in, '{'))
        return 0;
    json_ref__ws(in);
    if (json_ref__peek(in) == '}') {
        in->pos++;
        return 1;
    }
    for (;;) {
        if (!json_ref__string(in))
            return 0;
        json_ref__ws(in);
        if (!json_ref__expect(in, ':'))
            return 0;
        json_ref__ws(in);
        if (!json_ref__value(in, depth + 1))
            return 0;
        json_ref__ws(in);
        if (json_ref__peek(in) == ',') {
            in->pos++;
            json_ref__ws(in);
            continue;
        }
        return json_ref__expect(in, '}');
    }
}

/* value = false / null / true / object / array / number / string
 * Chosen by the first byte; surrounding ws belongs to the caller. */
static JSON_REF_UNUSED int json_ref__value(json_ref__input *in, size_t depth)
{
    int c = json_ref__peek(in);
    switch (c) {
    case '{': return json_ref__object(in, depth);
    case '[': return json_ref__array(in, depth);
    case '"': return json_ref__string(in);
    case 't': return json_ref__literal(in, "true");
    case 'f': return json_ref__literal(in, "false");
    case 'n': return json_ref__literal(in, "null");
    default:
        if (c == '-' || json_ref__is_digit(c))
            return json_ref__number(in);
        return json_ref__fail(in, c < 0 ? in->len : in->pos);
    }
}

/* JSON-text = ws value ws, and nothing after it. */
static JSON_REF_UNUSED int json_ref_validate(const unsigned char *buf, size_t len,
                                             size_t max_depth, size_t *err_offset)
{
    json_ref__input in;
    int ok;

    in.buf = buf;
    in.len = buf != NULL ? len : 0;
    in.pos = 0;
    in.max_depth = max_depth;
    in.err = 0;

    json_ref__ws(&in);
    ok = json_ref__value(&in, 0);
    if (ok) {
        json_ref__ws(&in);
        if (in.pos != in.len)
            ok = json_ref__fail(&in, in.pos); /* a second value or trailing garbage */
    }
    if (err_offset != NULL)
        *err_offset = ok ? in.len : in.err;
    return ok;
}

#endif /* JSON_REF_H */

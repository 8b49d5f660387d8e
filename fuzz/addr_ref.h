/* addr_ref.h - a slow, plain reference for the typed values of alktunnel.h's
 * params: host names, IP literals, CIDRs, canonical IPv6 text, integers and
 * the key comparison through JSON escapes.
 *
 * The differential oracle for the params typed layer (fuzz/params.c). Each
 * rule is one function written from its RFC and from alktunnel.h's SCHEMAS
 * comment (HOST, IP, CIDR, PORT, SECS), to be read next to them; none of it
 * comes from alktunnel.h's code. Speed is not a goal; clarity is. No
 * allocation, no dependency but <stddef.h>/<stdint.h>/<string.h>.
 *
 *   addr_ref_ipv4(s, n, out[4])            dotted quad
 *   addr_ref_ipv6(s, n, out[16])           RFC 4291 section 2.2 text
 *   addr_ref_ip(s, n, &ip)                 either (family 4 or 6)
 *   addr_ref_hostname(s, n)                RFC 1123 name, as HOST says
 *   addr_ref_host(s, n, &ip)               a HOST field: IP, name, or which
 *                                          error its look calls for
 *   addr_ref_cidr(s, n, &ip, &prefix)      IP "/" prefix, no host bits
 *   addr_ref_format(&ip, out)              RFC 5952 canonical text
 *   addr_ref_unescape(raw, n, out, cap, &len, &bad)   RFC 8259 section 7
 *   addr_ref_key_is(raw, n, name, &bad)    a raw key equal to a name
 *   addr_ref_integer(text, n, min, max, &v)   RFC 8259 section 6 number
 *                                          read as an integer field
 *
 * Project decisions (alktunnel.h's top comment), where an RFC leaves room:
 *   - IPv4 is the strict dotted quad: four decimal parts 0..255, no leading
 *     zeros ("010" is octal to inet_aton), no other inet_aton forms; the
 *     same rule for the dotted quad that ends an IPv6 text;
 *   - IPv6: hex digits of either case (RFC 4291), no zone id;
 *   - host names: RFC 1123 labels (letters, digits, inner hyphens, 1..63),
 *     total <= 253, no trailing dot, the last label not all digits, and
 *     not made only of labels some inet_aton reads as a number: all decimal
 *     digits (a leading 0 reads as octal: any digit string counts), or 0x/0X
 *     and hex digits (BSD's reads a bare "0x" as 0);
 *   - canonical text (RFC 5952 section 4): lowercase, no leading zeros, the
 *     longest run of two or more zero groups as "::" (the first on a tie),
 *     a single zero group never shortened; section 5: an IPv4-mapped
 *     address (::ffff:0:0/96) ends in its dotted quad, no other does;
 *   - CIDR: the prefix is decimal without leading zeros, 0..32 or 0..128,
 *     every bit past it zero;
 *   - integers: the JSON number grammar; a fraction or an exponent is not
 *     an integer (whatever its value: 1.0, 1e3, -1.5); "-0" is 0; another
 *     negative number, or one above max, is out of range. */
#ifndef ADDR_REF_H
#define ADDR_REF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define ADDR_REF_UNUSED __attribute__((unused))
#else
#define ADDR_REF_UNUSED
#endif

typedef struct addr_ref_ip_t {
    int family;               /* 4 or 6 */
    unsigned char bytes[16];  /* network order; IPv4 in the first 4 */
} addr_ref_ip_t;

/* Verdicts of addr_ref_integer. */
enum {
    ADDR_REF_INT_OK = 0,
    ADDR_REF_INT_NOT_NUMBER,   /* not an RFC 8259 number at all */
    ADDR_REF_INT_NOT_INTEGER,  /* a fraction or an exponent */
    ADDR_REF_INT_OUT_OF_RANGE  /* negative (but -0), or outside min..max */
};

static ADDR_REF_UNUSED int addr_ref__digit(char c)
{
    return c >= '0' && c <= '9';
}

static ADDR_REF_UNUSED int addr_ref__alpha(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* HEXDIG, either case: its value, or -1. */
static ADDR_REF_UNUSED int addr_ref__hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* ---- IPv4 -------------------------------------------------------------------
 * dec-octet as RFC 3986 section 3.2.2 writes it:
 *   "0"-"9" / "10"-"99" / "100"-"199" / "200"-"249" / "250"-"255"
 * i.e. 1 to 3 digits, no leading zero unless the octet is "0", <= 255. */
static ADDR_REF_UNUSED int addr_ref__dec_octet(const char *s, size_t n,
                                               unsigned char *out)
{
    unsigned value = 0;
    size_t k;
    if (n < 1 || n > 3)
        return 0;
    if (n > 1 && s[0] == '0')
        return 0;
    for (k = 0; k < n; k++) {
        if (!addr_ref__digit(s[k]))
            return 0;
        value = value * 10 + (unsigned)(s[k] - '0');
    }
    if (value > 255)
        return 0;
    *out = (unsigned char)value;
    return 1;
}

/* IPv4address = dec-octet "." dec-octet "." dec-octet "." dec-octet */
static ADDR_REF_UNUSED int addr_ref_ipv4(const char *s, size_t n,
                                         unsigned char out[4])
{
    size_t start = 0, k, part = 0;
    for (k = 0; k <= n; k++) {
        if (k < n && s[k] != '.')
            continue;
        if (part == 4 || !addr_ref__dec_octet(s + start, k - start, &out[part]))
            return 0;
        part++;
        start = k + 1;
    }
    return part == 4;
}

/* ---- IPv6 (RFC 4291 section 2.2) ----------------------------------------------
 * 1. x:x:x:x:x:x:x:x, each x one to four hex digits;
 * 2. "::" once, for one or more groups of zeros;
 * 3. the last two groups may be written as a dotted quad. */

/* h16 = 1*4HEXDIG */
static ADDR_REF_UNUSED int addr_ref__h16(const char *s, size_t n,
                                         unsigned *out)
{
    size_t k;
    unsigned value = 0;
    if (n < 1 || n > 4)
        return 0;
    for (k = 0; k < n; k++) {
        int h = addr_ref__hex(s[k]);
        if (h < 0)
            return 0;
        value = value * 16 + (unsigned)h;
    }
    *out = value;
    return 1;
}

/* A list of groups separated by single colons ("" is the empty list): the
 * 16-bit values into groups[], at most `room`; the last piece may be a
 * dotted quad when `quad_ok` (two groups). Returns the count or -1. */
static ADDR_REF_UNUSED int addr_ref__h16_list(const char *s, size_t n,
                                              unsigned *groups, int room,
                                              int quad_ok)
{
    size_t start = 0, k;
    int count = 0;
    if (n == 0)
        return 0;
    for (k = 0; k <= n; k++) {
        const char *piece = s + start;
        size_t len = k - start;
        if (k < n && s[k] != ':')
            continue;
        if (k == n && quad_ok && memchr(piece, '.', len)) {
            unsigned char q[4];
            if (count + 2 > room || !addr_ref_ipv4(piece, len, q))
                return -1;
            groups[count++] = (unsigned)q[0] << 8 | q[1];
            groups[count++] = (unsigned)q[2] << 8 | q[3];
            return count;
        }
        if (count == room || !addr_ref__h16(piece, len, &groups[count]))
            return -1;
        count++;
        start = k + 1;
    }
    return count;
}

static ADDR_REF_UNUSED int addr_ref_ipv6(const char *s, size_t n,
                                         unsigned char out[16])
{
    unsigned groups[8] = {0};
    unsigned head[8], tail[8];
    size_t gap, k;
    int nhead, ntail;
    /* where "::" stands, if anywhere; a second one is malformed */
    for (gap = 0; gap + 1 < n; gap++) {
        if (s[gap] == ':' && s[gap + 1] == ':')
            break;
    }
    if (gap + 1 >= n) {
        /* form 1 (or 3): exactly eight groups */
        if (addr_ref__h16_list(s, n, groups, 8, 1) != 8)
            return 0;
    } else {
        const char *rest = s + gap + 2;
        size_t rest_len = n - gap - 2;
        for (k = 0; k + 1 < rest_len; k++) {
            if (rest[k] == ':' && rest[k + 1] == ':')
                return 0;
        }
        /* "::" stands for at least one group: seven at most around it */
        nhead = addr_ref__h16_list(s, gap, head, 7, 0);
        if (nhead < 0)
            return 0;
        ntail = addr_ref__h16_list(rest, rest_len, tail, 7 - nhead, 1);
        if (ntail < 0)
            return 0;
        for (k = 0; k < (size_t)nhead; k++)
            groups[k] = head[k];
        for (k = 0; k < (size_t)ntail; k++)
            groups[8 - (size_t)ntail + k] = tail[k];
    }
    for (k = 0; k < 8; k++) {
        out[2 * k] = (unsigned char)(groups[k] >> 8);
        out[2 * k + 1] = (unsigned char)(groups[k] & 0xFF);
    }
    return 1;
}

/* IP = IPv4 dotted quad or IPv6 text; *ip zeroed first. */
static ADDR_REF_UNUSED int addr_ref_ip(const char *s, size_t n,
                                       addr_ref_ip_t *ip)
{
    memset(ip, 0, sizeof *ip);
    if (addr_ref_ipv4(s, n, ip->bytes)) {
        ip->family = 4;
        return 1;
    }
    if (addr_ref_ipv6(s, n, ip->bytes)) {
        ip->family = 6;
        return 1;
    }
    memset(ip, 0, sizeof *ip);
    return 0;
}

/* ---- host names (RFC 1123 section 2.1, RFC 952) --------------------------------
 * label = let-dig [ *61( let-dig / "-" ) let-dig ]  (RFC 1123 allows a
 * digit first) */
static ADDR_REF_UNUSED int addr_ref__label(const char *s, size_t n)
{
    size_t k;
    if (n < 1 || n > 63)
        return 0;
    for (k = 0; k < n; k++) {
        if (!addr_ref__alpha(s[k]) && !addr_ref__digit(s[k]) && s[k] != '-')
            return 0;
    }
    return s[0] != '-' && s[n - 1] != '-';
}

static ADDR_REF_UNUSED int addr_ref__all_digits(const char *s, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++) {
        if (!addr_ref__digit(s[k]))
            return 0;
    }
    return 1;
}

/* A label some inet_aton reads as a number: decimal/octal digits, or 0x
 * (0X) followed by hex digits (none: BSD's reads "0x" as 0). */
static ADDR_REF_UNUSED int addr_ref__numeric_label(const char *s, size_t n)
{
    size_t k;
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        for (k = 2; k < n; k++) {
            if (addr_ref__hex(s[k]) < 0)
                return 0;
        }
        return 1;
    }
    return addr_ref__all_digits(s, n);
}

static ADDR_REF_UNUSED int addr_ref_hostname(const char *s, size_t n)
{
    size_t start = 0, k, last_start = 0;
    int all_numeric = 1;
    if (n < 1 || n > 253)
        return 0;
    /* labels between dots: none empty, so no leading, doubled or trailing
     * dot */
    for (k = 0; k <= n; k++) {
        if (k < n && s[k] != '.')
            continue;
        if (!addr_ref__label(s + start, k - start))
            return 0;
        if (!addr_ref__numeric_label(s + start, k - start))
            all_numeric = 0;
        last_start = start;
        start = k + 1;
    }
    /* the top label is never all digits (RFC 1123 2.1) */
    if (addr_ref__all_digits(s + last_start, n - last_start))
        return 0;
    /* "0x7f.1", "0x7f000001": an address to inet_aton */
    return !all_numeric;
}

/* ---- a HOST field (alktunnel.h SCHEMAS) ------------------------------------
 * An IP literal or a name; "" is empty; a string that is neither is
 * classified by its look: a colon (an IPv6 attempt) or nothing but digits
 * and dots (an IPv4 attempt) is a bad address, anything else a bad name. */
enum {
    ADDR_REF_HOST_IP,
    ADDR_REF_HOST_NAME,
    ADDR_REF_HOST_EMPTY,
    ADDR_REF_HOST_BAD_ADDRESS,
    ADDR_REF_HOST_BAD_NAME
};

static ADDR_REF_UNUSED int addr_ref_host(const char *s, size_t n,
                                         addr_ref_ip_t *ip)
{
    size_t k;
    int digits_and_dots = 1;
    memset(ip, 0, sizeof *ip);
    if (n == 0)
        return ADDR_REF_HOST_EMPTY;
    if (addr_ref_ip(s, n, ip))
        return ADDR_REF_HOST_IP;
    if (addr_ref_hostname(s, n))
        return ADDR_REF_HOST_NAME;
    if (memchr(s, ':', n))
        return ADDR_REF_HOST_BAD_ADDRESS;
    for (k = 0; k < n; k++) {
        if (!addr_ref__digit(s[k]) && s[k] != '.')
            digits_and_dots = 0;
    }
    return digits_and_dots ? ADDR_REF_HOST_BAD_ADDRESS : ADDR_REF_HOST_BAD_NAME;
}

/* ---- CIDR ---------------------------------------------------------------------- */
static ADDR_REF_UNUSED int addr_ref_cidr(const char *s, size_t n,
                                         addr_ref_ip_t *ip, unsigned *prefix)
{
    const char *slash = (const char *)memchr(s, '/', n);
    size_t ip_len, k, digits, bits;
    unsigned value = 0;
    if (!slash)
        return 0;
    ip_len = (size_t)(slash - s);
    digits = n - ip_len - 1;
    if (!addr_ref_ip(s, ip_len, ip))
        return 0;
    bits = ip->family == 4 ? 32 : 128;
    if (digits < 1 || digits > 3 || (digits > 1 && slash[1] == '0'))
        return 0;
    for (k = 1; k <= digits; k++) {
        if (!addr_ref__digit(slash[k]))
            return 0;
        value = value * 10 + (unsigned)(slash[k] - '0');
    }
    if (value > bits)
        return 0;
    /* the host part: every bit from `value` on is zero */
    for (k = value; k < bits; k++) {
        if (ip->bytes[k / 8] & (0x80u >> (k % 8)))
            return 0;
    }
    *prefix = value;
    return 1;
}

/* ---- canonical text (RFC 5952) ----------------------------------------------- */
static ADDR_REF_UNUSED size_t addr_ref__put_dec(char *out, unsigned v)
{
    char tmp[12];
    size_t n = 0, k;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (k = 0; k < n; k++)
        out[k] = tmp[n - 1 - k];
    return n;
}

/* 4.1 no leading zeros, 4.3 lowercase */
static ADDR_REF_UNUSED size_t addr_ref__put_h16(char *out, unsigned v)
{
    static const char digits[] = "0123456789abcdef";
    size_t n = 0;
    int shift, started = 0;
    for (shift = 12; shift >= 0; shift -= 4) {
        unsigned d = (v >> shift) & 15u;
        if (d || started || shift == 0) {
            out[n++] = digits[d];
            started = 1;
        }
    }
    return n;
}

static ADDR_REF_UNUSED size_t addr_ref__put_quad(char *out,
                                                 const unsigned char *b)
{
    size_t n = 0, k;
    for (k = 0; k < 4; k++) {
        if (k)
            out[n++] = '.';
        n += addr_ref__put_dec(out + n, b[k]);
    }
    return n;
}

/* NUL-terminated text of *ip into out (>= 46 bytes); returns its length. */
static ADDR_REF_UNUSED size_t addr_ref_format(const addr_ref_ip_t *ip,
                                              char *out)
{
    static const unsigned char mapped_prefix[12] = {0, 0, 0, 0, 0,    0,
                                                    0, 0, 0, 0, 0xFF, 0xFF};
    unsigned groups[8];
    size_t n = 0, k, run_start = 8, run_len = 0;
    if (ip->family == 4) {
        n = addr_ref__put_quad(out, ip->bytes);
        out[n] = '\0';
        return n;
    }
    /* section 5: IPv4-mapped, mixed notation */
    if (memcmp(ip->bytes, mapped_prefix, 12) == 0) {
        memcpy(out, "::ffff:", 7);
        n = 7 + addr_ref__put_quad(out + 7, ip->bytes + 12);
        out[n] = '\0';
        return n;
    }
    for (k = 0; k < 8; k++)
        groups[k] = (unsigned)ip->bytes[2 * k] << 8 | ip->bytes[2 * k + 1];
    /* 4.2.1-4.2.3: the longest run of zero groups, the first of equals,
     * only if it is at least two groups long */
    for (k = 0; k < 8; k++) {
        size_t len = 0;
        while (k + len < 8 && groups[k + len] == 0)
            len++;
        if (len >= 2 && len > run_len) {
            run_start = k;
            run_len = len;
        }
    }
    for (k = 0; k < 8; k++) {
        if (k == run_start) {
            out[n++] = ':';
            out[n++] = ':';
            k += run_len - 1;
            continue;
        }
        if (k > 0 && k != run_start + run_len)
            out[n++] = ':';
        n += addr_ref__put_h16(out + n, groups[k]);
    }
    out[n] = '\0';
    return n;
}

/* ---- JSON string contents (RFC 8259 section 7) -------------------------------
 * raw: what is between the quotes. Writes the UTF-8 value into out (up to
 * cap bytes; *out_len is the full length even past cap). Returns 1, or 0
 * for an escape the grammar refuses or a \u surrogate without its other
 * half (*bad: the offset of that escape's backslash in raw). */
static ADDR_REF_UNUSED size_t addr_ref__put_utf8(char *out, size_t at,
                                                 size_t cap, unsigned long cp)
{
    unsigned char b[4];
    size_t n, k;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | cp >> 6);
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | cp >> 12);
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | cp >> 18);
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    for (k = 0; k < n; k++) {
        if (at + k < cap)
            out[at + k] = (char)b[k];
    }
    return n;
}

/* \uXXXX at raw[i]: its value, or -1 */
static ADDR_REF_UNUSED long addr_ref__u4(const char *raw, size_t n, size_t i)
{
    long v = 0;
    size_t k;
    if (i + 6 > n || raw[i] != '\\' || raw[i + 1] != 'u')
        return -1;
    for (k = 2; k < 6; k++) {
        int h = addr_ref__hex(raw[i + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

static ADDR_REF_UNUSED int addr_ref_unescape(const char *raw, size_t n,
                                             char *out, size_t cap,
                                             size_t *out_len, size_t *bad)
{
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned long cp;
        long u;
        if (raw[i] != '\\') {
            if (o < cap)
                out[o] = raw[i];
            o++;
            i++;
            continue;
        }
        *bad = i;
        if (i + 1 >= n)
            return 0;
        switch (raw[i + 1]) {
        case '"': cp = '"'; break;
        case '\\': cp = '\\'; break;
        case '/': cp = '/'; break;
        case 'b': cp = 0x08; break;
        case 'f': cp = 0x0C; break;
        case 'n': cp = 0x0A; break;
        case 'r': cp = 0x0D; break;
        case 't': cp = 0x09; break;
        case 'u':
            u = addr_ref__u4(raw, n, i);
            if (u < 0)
                return 0;
            if (u >= 0xDC00 && u <= 0xDFFF)
                return 0; /* a low half first */
            if (u >= 0xD800 && u <= 0xDBFF) {
                long low = addr_ref__u4(raw, n, i + 6);
                if (low < 0xDC00 || low > 0xDFFF)
                    return 0; /* a high half alone */
                cp = 0x10000 + ((unsigned long)(u - 0xD800) << 10) +
                     (unsigned long)(low - 0xDC00);
                i += 6;
            } else {
                cp = (unsigned long)u;
            }
            i += 4; /* the 4 hex digits; the 2 of "\u" below */
            break;
        default:
            return 0;
        }
        o += addr_ref__put_utf8(out, o, cap, cp);
        i += 2;
    }
    *out_len = o;
    return 1;
}

/* 1 if the raw key (escapes in) means exactly `name`, 0 if not, -1 if it
 * has an unpaired surrogate (*bad: its offset in raw). */
static ADDR_REF_UNUSED int addr_ref_key_is(const char *raw, size_t n,
                                           const char *name, size_t *bad)
{
    char value[64];
    size_t len = 0;
    if (!addr_ref_unescape(raw, n, value, sizeof value, &len, bad))
        return -1;
    return len == strlen(name) && memcmp(value, name, len) == 0;
}

/* ---- integers (RFC 8259 section 6) -----------------------------------------
 *   number = [ minus ] int [ frac ] [ exp ]
 *   int = zero / ( digit1-9 *DIGIT ); frac = "." 1*DIGIT;
 *   exp = ("e" / "E") [ "-" / "+" ] 1*DIGIT
 * then, as an integer field: no frac, no exp; minus only on zero; min..max
 * (max below 2^60, so value * 10 + 9 never wraps). */
static ADDR_REF_UNUSED int addr_ref_integer(const char *s, size_t n,
                                            uint64_t min, uint64_t max,
                                            uint64_t *value)
{
    size_t i = 0, int_start, int_end;
    int negative = 0, fraction = 0, exponent = 0, over = 0;
    uint64_t v = 0;
    if (i < n && s[i] == '-') {
        negative = 1;
        i++;
    }
    int_start = i;
    if (i < n && s[i] == '0') {
        i++;
    } else if (i < n && s[i] >= '1' && s[i] <= '9') {
        while (i < n && addr_ref__digit(s[i]))
            i++;
    } else {
        return ADDR_REF_INT_NOT_NUMBER;
    }
    int_end = i;
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || !addr_ref__digit(s[i]))
            return ADDR_REF_INT_NOT_NUMBER;
        while (i < n && addr_ref__digit(s[i]))
            i++;
        fraction = 1;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            i++;
        if (i >= n || !addr_ref__digit(s[i]))
            return ADDR_REF_INT_NOT_NUMBER;
        while (i < n && addr_ref__digit(s[i]))
            i++;
        exponent = 1;
    }
    if (i != n)
        return ADDR_REF_INT_NOT_NUMBER;
    if (fraction || exponent)
        return ADDR_REF_INT_NOT_INTEGER;
    for (i = int_start; i < int_end && !over; i++) {
        v = v * 10 + (uint64_t)(s[i] - '0');
        over = v > max;
    }
    if (over || (negative && v != 0) || v < min)
        return ADDR_REF_INT_OUT_OF_RANGE;
    *value = v;
    return ADDR_REF_INT_OK;
}

#endif /* ADDR_REF_H */

/* x25519_ref.h - a second X25519 (RFC 7748), for the oracles.
 *
 * Written from RFC 7748 section 5, one line per line of its pseudo-code,
 * over a deliberately plain field: sixteen 16-bit limbs in int64_t,
 * schoolbook products, the inverse as x^(p-2) by square-and-multiply. It
 * shares nothing with alktunnel.h's X25519 (51-bit or 25.5-bit limbs,
 * its own ladder and inversion chain). fuzz/session.c judges the library
 * against it on drawn keys: a mutant of the library's ladder that still
 * computes *some* commutative function - both ends of an exchange then
 * agree, and every handshake succeeds - is seen only by a second
 * implementation (or by known answers, which the unit tests hold).
 *
 *   xref_x25519(out[32], scalar[32], u[32])
 *
 * Slow (a few hundred thousand limb products): for oracles only. */
#ifndef X25519_REF_H
#define X25519_REF_H

#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define XREF_UNUSED __attribute__((unused))
#else
#define XREF_UNUSED
#endif

typedef int64_t xref_fe[16]; /* value = sum of l[i] * 2^(16 i) */

/* Each limb back to 0..65535; what overflows 2^256 comes back times 38
 * (2^256 = 2 * 2^255 = 2 * 19 = 38 mod p). Twice: the second pass takes
 * the top limb's carry of the first. */
static void xref_carry(xref_fe x)
{
    int pass, i;
    for (pass = 0; pass < 2; pass++)
        for (i = 0; i < 16; i++) {
            int64_t c = x[i] >> 16; /* (arithmetic shift: floor) */
            x[i] -= c * 65536;
            if (i < 15)
                x[i + 1] += c;
            else
                x[0] += 38 * c;
        }
}

static void xref_add(xref_fe r, const xref_fe a, const xref_fe b)
{
    int i;
    for (i = 0; i < 16; i++)
        r[i] = a[i] + b[i];
}

static void xref_sub(xref_fe r, const xref_fe a, const xref_fe b)
{
    int i;
    for (i = 0; i < 16; i++)
        r[i] = a[i] - b[i];
}

static void xref_mul(xref_fe r, const xref_fe a, const xref_fe b)
{
    int64_t t[31];
    int i, j;
    memset(t, 0, sizeof t);
    for (i = 0; i < 16; i++)
        for (j = 0; j < 16; j++)
            t[i + j] += a[i] * b[j];
    for (i = 0; i < 15; i++) /* limb 16 + i is 2^256 * 2^(16 i): 38 * limb i */
        t[i] += 38 * t[i + 16];
    for (i = 0; i < 16; i++)
        r[i] = t[i];
    xref_carry(r);
}

/* a^(p-2) = a^-1, p - 2 = 2^255 - 21: every bit from 254 down to 0 set
 * except bits 2 and 4. */
static void xref_invert(xref_fe r, const xref_fe a)
{
    xref_fe c;
    int i;
    memcpy(c, a, sizeof c);
    for (i = 253; i >= 0; i--) {
        xref_mul(c, c, c);
        if (i != 2 && i != 4)
            xref_mul(c, c, a);
    }
    memcpy(r, c, sizeof c);
}

static void xref_unpack(xref_fe r, const unsigned char s[32])
{
    int i;
    for (i = 0; i < 16; i++)
        r[i] = s[2 * i] + ((int64_t)s[2 * i + 1] << 8);
    r[15] &= 0x7fff; /* RFC 7748 5: the top bit of u is ignored */
}

/* The value mod p, little-endian: subtract p while it fits (at most
 * twice after a carry). */
static void xref_pack(unsigned char out[32], const xref_fe a)
{
    xref_fe t, m;
    int i, k;
    memcpy(t, a, sizeof t);
    xref_carry(t);
    xref_carry(t);
    for (k = 0; k < 2; k++) {
        int64_t borrow;
        m[0] = t[0] - 0xffed;
        for (i = 1; i < 15; i++) {
            m[i] = t[i] - 0xffff - ((m[i - 1] >> 16) & 1);
            m[i - 1] &= 0xffff;
        }
        m[15] = t[15] - 0x7fff - ((m[14] >> 16) & 1);
        borrow = (m[15] >> 16) & 1;
        m[14] &= 0xffff;
        if (!borrow) { /* t >= p: take t - p */
            m[15] &= 0xffff;
            memcpy(t, m, sizeof t);
        }
    }
    for (i = 0; i < 16; i++) {
        out[2 * i] = (unsigned char)(t[i] & 0xff);
        out[2 * i + 1] = (unsigned char)((t[i] >> 8) & 0xff);
    }
}

static XREF_UNUSED void xref_x25519(unsigned char out[32], const unsigned char scalar[32],
                                    const unsigned char u[32])
{
    static const xref_fe a24 = {121665};
    unsigned char k[32];
    xref_fe x1, x2, z2, x3, z3, A, AA, B, BB, E, C, D, DA, CB, t;
    int swap = 0, pos;
    memcpy(k, scalar, 32); /* RFC 7748 5: decodeScalar25519 */
    k[0] &= 248;
    k[31] &= 127;
    k[31] |= 64;
    xref_unpack(x1, u);
    memset(x2, 0, sizeof x2);
    x2[0] = 1;
    memset(z2, 0, sizeof z2);
    memcpy(x3, x1, sizeof x3);
    memset(z3, 0, sizeof z3);
    z3[0] = 1;
    for (pos = 254; pos >= 0; pos--) {
        int kt = (k[pos >> 3] >> (pos & 7)) & 1;
        swap ^= kt;
        if (swap) { /* (a branch: this reference need not be constant-time) */
            memcpy(t, x2, sizeof t); memcpy(x2, x3, sizeof t); memcpy(x3, t, sizeof t);
            memcpy(t, z2, sizeof t); memcpy(z2, z3, sizeof t); memcpy(z3, t, sizeof t);
        }
        swap = kt;
        xref_add(A, x2, z2);
        xref_mul(AA, A, A);
        xref_sub(B, x2, z2);
        xref_mul(BB, B, B);
        xref_sub(E, AA, BB);
        xref_add(C, x3, z3);
        xref_sub(D, x3, z3);
        xref_mul(DA, D, A);
        xref_mul(CB, C, B);
        xref_add(t, DA, CB);
        xref_mul(x3, t, t);
        xref_sub(t, DA, CB);
        xref_mul(t, t, t);
        xref_mul(z3, x1, t);
        xref_mul(x2, AA, BB);
        xref_mul(t, a24, E);
        xref_add(t, AA, t);
        xref_mul(z2, E, t);
    }
    if (swap) {
        memcpy(t, x2, sizeof t); memcpy(x2, x3, sizeof t); memcpy(x3, t, sizeof t);
        memcpy(t, z2, sizeof t); memcpy(z2, z3, sizeof t); memcpy(z3, t, sizeof t);
    }
    xref_invert(z2, z2);
    xref_mul(x2, x2, z2);
    xref_pack(out, x2);
}

#endif

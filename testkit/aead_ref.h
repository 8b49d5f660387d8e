/* aead_ref.h - a second ChaCha20-Poly1305 AEAD (RFC 8439), for the tests.
 *
 * Slow on purpose and written straight from the RFC text; it shares no
 * code with alktunnel.h and uses other methods:
 *   ChaCha20   the 16-word state and QUARTERROUND(x, y, z, w) of 2.1-2.3,
 *              one keystream byte at a time (2.4);
 *   Poly1305   schoolbook big numbers (2.5): little-endian byte arrays of
 *              AREF_W bytes, a full product, and the reduction modulo
 *              p = 2^130 - 5 by folding x = hi * 2^130 + lo into
 *              lo + 5 * hi until hi is 0, then subtracting p while x >= p;
 *   AEAD       2.8: one-time key from block 0, ciphertext from block 1,
 *              MAC over aad | pad16 | ciphertext | pad16 | le64 lengths.
 * Everything is static and prefixed aref_. C99 and C++. */
#ifndef AEAD_REF_H
#define AEAD_REF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define AREF_UNUSED __attribute__((unused))
#else
#define AREF_UNUSED
#endif

/* ---- ChaCha20 (RFC 8439 2.1 - 2.4) ---------------------------------- */

static uint32_t aref_rotl(uint32_t v, int n)
{
    return (uint32_t)((v << n) | (v >> (32 - n)));
}

static uint32_t aref_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

/* 2.2: QUARTERROUND(a, b, c, d) on the state, as 2.1 writes it. */
static void aref_quarter(uint32_t s[16], int a, int b, int c, int d)
{
    s[a] += s[b]; s[d] ^= s[a]; s[d] = aref_rotl(s[d], 16);
    s[c] += s[d]; s[b] ^= s[c]; s[b] = aref_rotl(s[b], 12);
    s[a] += s[b]; s[d] ^= s[a]; s[d] = aref_rotl(s[d], 8);
    s[c] += s[d]; s[b] ^= s[c]; s[b] = aref_rotl(s[b], 7);
}

/* 2.3: constants, key, block count, nonce; 10 x (column + diagonal
 * rounds); add the original state; serialize little-endian. */
static void aref_block(unsigned char out[64], const unsigned char key[32],
                       uint32_t counter, const unsigned char nonce[12])
{
    uint32_t init[16], s[16];
    int i;
    init[0] = 0x61707865u;
    init[1] = 0x3320646eu;
    init[2] = 0x79622d32u;
    init[3] = 0x6b206574u;
    for (i = 0; i < 8; i++)
        init[4 + i] = aref_le32(key + 4 * i);
    init[12] = counter;
    for (i = 0; i < 3; i++)
        init[13 + i] = aref_le32(nonce + 4 * i);
    memcpy(s, init, sizeof s);
    for (i = 0; i < 10; i++) {
        aref_quarter(s, 0, 4, 8, 12);
        aref_quarter(s, 1, 5, 9, 13);
        aref_quarter(s, 2, 6, 10, 14);
        aref_quarter(s, 3, 7, 11, 15);
        aref_quarter(s, 0, 5, 10, 15);
        aref_quarter(s, 1, 6, 11, 12);
        aref_quarter(s, 2, 7, 8, 13);
        aref_quarter(s, 3, 4, 9, 14);
    }
    for (i = 0; i < 16; i++) {
        uint32_t w = s[i] + init[i];
        out[4 * i + 0] = (unsigned char)(w & 0xffu);
        out[4 * i + 1] = (unsigned char)((w >> 8) & 0xffu);
        out[4 * i + 2] = (unsigned char)((w >> 16) & 0xffu);
        out[4 * i + 3] = (unsigned char)((w >> 24) & 0xffu);
    }
}

/* 2.4: out[i] = in[i] ^ keystream[i], the keystream starting at block
 * `counter`. Byte by byte, so out may equal in. */
static AREF_UNUSED void aref_chacha20(unsigned char *out,
                                      const unsigned char *in, size_t len,
                                      const unsigned char key[32],
                                      const unsigned char nonce[12],
                                      uint32_t counter)
{
    unsigned char ks[64];
    size_t i;
    for (i = 0; i < len; i++) {
        if (i % 64 == 0)
            aref_block(ks, key, (uint32_t)(counter + (uint32_t)(i / 64)), nonce);
        out[i] = (unsigned char)(in[i] ^ ks[i % 64]);
    }
}

/* ---- Big numbers: AREF_W bytes, little-endian ------------------------ */

/* Every value below stays under 2^256: the accumulator is < 2^131 before
 * a multiplication by r < 2^124. */
#define AREF_W 34

static void aref_num_zero(unsigned char x[AREF_W])
{
    memset(x, 0, AREF_W);
}

/* x = the n little-endian bytes at p (n <= AREF_W), zero above. */
static void aref_num_load(unsigned char x[AREF_W], const unsigned char *p,
                          size_t n)
{
    aref_num_zero(x);
    memcpy(x, p, n);
}

/* r = a + b (r may be a or b); the sum never reaches 2^(8 * AREF_W). */
static void aref_num_add(unsigned char r[AREF_W], const unsigned char a[AREF_W],
                         const unsigned char b[AREF_W])
{
    unsigned carry = 0;
    int i;
    for (i = 0; i < AREF_W; i++) {
        unsigned t = (unsigned)a[i] + (unsigned)b[i] + carry;
        r[i] = (unsigned char)(t & 0xffu);
        carry = t >> 8;
    }
}

/* r = a - b, for a >= b (r may be a or b). */
static void aref_num_sub(unsigned char r[AREF_W], const unsigned char a[AREF_W],
                         const unsigned char b[AREF_W])
{
    unsigned borrow = 0;
    int i;
    for (i = 0; i < AREF_W; i++) {
        unsigned t = (unsigned)a[i] + 256u - (unsigned)b[i] - borrow;
        r[i] = (unsigned char)(t & 0xffu);
        borrow = t < 256u ? 1u : 0u;
    }
}

/* -1, 0, 1 as a <, =, > b. */
static int aref_num_cmp(const unsigned char a[AREF_W],
                        const unsigned char b[AREF_W])
{
    int i;
    for (i = AREF_W - 1; i >= 0; i--) {
        if (a[i] != b[i])
            return a[i] < b[i] ? -1 : 1;
    }
    return 0;
}

static int aref_num_is_zero(const unsigned char a[AREF_W])
{
    int i;
    for (i = 0; i < AREF_W; i++) {
        if (a[i])
            return 0;
    }
    return 1;
}

/* r = a * b, schoolbook: every byte of a times every byte of b, summed
 * per column, then the carries; the product stays under 2^(8 * AREF_W). */
static void aref_num_mul(unsigned char r[AREF_W], const unsigned char a[AREF_W],
                         const unsigned char b[AREF_W])
{
    uint32_t col[2 * AREF_W];
    uint32_t carry = 0;
    int i, j;
    memset(col, 0, sizeof col);
    for (i = 0; i < AREF_W; i++)
        for (j = 0; j < AREF_W; j++)
            col[i + j] += (uint32_t)a[i] * (uint32_t)b[j];
    for (i = 0; i < AREF_W; i++) {
        uint32_t t = col[i] + carry;
        r[i] = (unsigned char)(t & 0xffu);
        carry = t >> 8;
    }
}

/* hi = x >> 130, lo = x mod 2^130 (bit 130 is bit 2 of byte 16). */
static void aref_num_split130(unsigned char hi[AREF_W], unsigned char lo[AREF_W],
                              const unsigned char x[AREF_W])
{
    int i;
    aref_num_zero(hi);
    for (i = 16; i < AREF_W; i++) {
        unsigned v = (unsigned)x[i] >> 2;
        if (i + 1 < AREF_W)
            v |= ((unsigned)x[i + 1] << 6) & 0xffu;
        hi[i - 16] = (unsigned char)v;
    }
    aref_num_zero(lo);
    memcpy(lo, x, 16);
    lo[16] = (unsigned char)(x[16] & 3u);
}

/* x = x mod (2^130 - 5): since 2^130 = 5 (mod p), x = hi * 2^130 + lo is
 * congruent to lo + 5 * hi; fold until hi is 0, then subtract p. */
static void aref_num_mod_p(unsigned char x[AREF_W])
{
    unsigned char hi[AREF_W], lo[AREF_W], five[AREF_W], p[AREF_W];
    aref_num_zero(five);
    five[0] = 5;
    aref_num_zero(p);
    p[0] = 0xfb;
    memset(p + 1, 0xff, 15);
    p[16] = 0x03;
    for (;;) {
        aref_num_split130(hi, lo, x);
        if (aref_num_is_zero(hi))
            break;
        aref_num_mul(hi, hi, five);
        aref_num_add(x, lo, hi);
    }
    while (aref_num_cmp(x, p) >= 0)
        aref_num_sub(x, x, p);
}

/* ---- Poly1305 (RFC 8439 2.5) ---------------------------------------- */

typedef struct aref_poly {
    unsigned char r[AREF_W], s[AREF_W], acc[AREF_W];
    unsigned char block[16];
    size_t used;
} aref_poly;

static void aref_poly_init(aref_poly *p, const unsigned char key[32])
{
    unsigned char r[16];
    memcpy(r, key, 16);
    /* clamp(r): r &= 0x0ffffffc0ffffffc0ffffffc0fffffff */
    r[3] &= 15; r[7] &= 15; r[11] &= 15; r[15] &= 15;
    r[4] &= 252; r[8] &= 252; r[12] &= 252;
    aref_num_load(p->r, r, 16);
    aref_num_load(p->s, key + 16, 16);
    aref_num_zero(p->acc);
    p->used = 0;
}

/* One block of n bytes (1..16): n = bytes | 0x01 above them;
 * acc = ((acc + n) * r) mod p. */
static void aref_poly_block(aref_poly *p, const unsigned char *m, size_t n)
{
    unsigned char num[AREF_W];
    aref_num_load(num, m, n);
    num[n] = 1;
    aref_num_add(p->acc, p->acc, num);
    aref_num_mul(p->acc, p->acc, p->r);
    aref_num_mod_p(p->acc);
}

static void aref_poly_update(aref_poly *p, const unsigned char *m, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        p->block[p->used++] = m[i];
        if (p->used == 16) {
            aref_poly_block(p, p->block, 16);
            p->used = 0;
        }
    }
}

/* tag = (acc + s) mod 2^128, little-endian. */
static void aref_poly_final(aref_poly *p, unsigned char tag[16])
{
    if (p->used)
        aref_poly_block(p, p->block, p->used);
    aref_num_add(p->acc, p->acc, p->s);
    memcpy(tag, p->acc, 16);
}

static AREF_UNUSED void aref_poly1305(unsigned char tag[16],
                                      const unsigned char *msg, size_t len,
                                      const unsigned char key[32])
{
    aref_poly p;
    aref_poly_init(&p, key);
    aref_poly_update(&p, msg, len);
    aref_poly_final(&p, tag);
}

/* ---- AEAD_CHACHA20_POLY1305 (RFC 8439 2.6, 2.8) ----------------------- */

static void aref_poly_pad16(aref_poly *p, size_t len)
{
    static const unsigned char zeros[16] = {0};
    if (len % 16)
        aref_poly_update(p, zeros, 16 - len % 16);
}

static void aref_poly_le64(aref_poly *p, size_t v)
{
    unsigned char b[8];
    uint64_t x = (uint64_t)v;
    int i;
    for (i = 0; i < 8; i++)
        b[i] = (unsigned char)((x >> (8 * i)) & 0xffu);
    aref_poly_update(p, b, 8);
}

/* out: len ciphertext bytes, then the 16-byte tag. out may equal plain. */
static AREF_UNUSED void aref_seal(unsigned char *out,
                                  const unsigned char key[32],
                                  const unsigned char nonce[12],
                                  const unsigned char *aad, size_t aad_len,
                                  const unsigned char *plain, size_t len)
{
    unsigned char block0[64];
    aref_poly p;
    /* 2.6: the one-time key is the first 32 bytes of block 0 */
    aref_block(block0, key, 0, nonce);
    /* 2.4: the ciphertext from block 1 on */
    aref_chacha20(out, plain, len, key, nonce, 1);
    aref_poly_init(&p, block0);
    aref_poly_update(&p, aad, aad_len);
    aref_poly_pad16(&p, aad_len);
    aref_poly_update(&p, out, len);
    aref_poly_pad16(&p, len);
    aref_poly_le64(&p, aad_len);
    aref_poly_le64(&p, len);
    aref_poly_final(&p, out + len);
}

#endif /* AEAD_REF_H */

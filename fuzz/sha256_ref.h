/* sha256_ref.h - a second SHA-256 (FIPS 180-4), HMAC (RFC 2104) and
 * HKDF (RFC 5869), for the oracles.
 *
 * Written straight from the standards, one step per line of FIPS 180-4
 * section 6.2.2, byte-at-a-time message handling and no speed tricks, so
 * that it can be read next to the text. alktunnel.h's own SHA-256 (block
 * functions, SHA-NI) is judged against it on drawn inputs by
 * fuzz/session.c: a mutant of the library's hash is symmetric between two
 * peers and a handshake alone never notices it.
 *
 *   sref_sha256(data, len, out[32])
 *   sref_hmac(key, key_len, data, len, out[32])
 *   sref_hkdf(okm, okm_len, salt, salt_len, ikm, ikm_len, info, info_len)
 *
 * okm_len <= 255 * 32, info_len <= 255 (longer: okm is filled with 0xEE,
 * never a silently shortened info). No allocation. */
#ifndef SHA256_REF_H
#define SHA256_REF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define SREF_UNUSED __attribute__((unused))
#else
#define SREF_UNUSED
#endif

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t sref_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u,
    0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
    0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u,
    0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,
    0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
    0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
    0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au,
    0x5b9cca4fu, 0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};

static uint32_t sref_rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* 6.2.2: one 64-byte block into the hash value h[0..7]. */
static void sref_block(uint32_t h[8], const unsigned char m[64])
{
    uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
    int t;
    for (t = 0; t < 16; t++)
        w[t] = (uint32_t)m[4 * t] << 24 | (uint32_t)m[4 * t + 1] << 16 |
               (uint32_t)m[4 * t + 2] << 8 | (uint32_t)m[4 * t + 3];
    for (t = 16; t < 64; t++) {
        uint32_t s0 = sref_rotr(w[t - 15], 7) ^ sref_rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = sref_rotr(w[t - 2], 17) ^ sref_rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = s1 + w[t - 7] + s0 + w[t - 16];
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3];
    e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (t = 0; t < 64; t++) {
        t1 = hh + (sref_rotr(e, 6) ^ sref_rotr(e, 11) ^ sref_rotr(e, 25)) +
             ((e & f) ^ (~e & g)) + sref_k[t] + w[t];
        t2 = (sref_rotr(a, 2) ^ sref_rotr(a, 13) ^ sref_rotr(a, 22)) +
             ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

/* SHA-256 of the concatenation of two pieces (HMAC needs pad || message). */
static void sref_sha256_2(const unsigned char *p1, size_t n1, const unsigned char *p2,
                          size_t n2, unsigned char out[32])
{
    /* 5.3.3 */
    uint32_t h[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                     0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    unsigned char block[64];
    uint64_t bits = ((uint64_t)n1 + n2) * 8u;
    size_t total = n1 + n2, i, fill = 0;
    int k;
    /* 5.1.1: the message, a 1 bit, zeros to 448 mod 512, the length */
    for (i = 0; i < total; i++) {
        block[fill++] = i < n1 ? p1[i] : p2[i - n1];
        if (fill == 64) {
            sref_block(h, block);
            fill = 0;
        }
    }
    block[fill++] = 0x80;
    if (fill > 56) {
        while (fill < 64) block[fill++] = 0;
        sref_block(h, block);
        fill = 0;
    }
    while (fill < 56) block[fill++] = 0;
    for (k = 7; k >= 0; k--) block[fill++] = (unsigned char)(bits >> (8 * k));
    sref_block(h, block);
    for (k = 0; k < 8; k++) {
        out[4 * k] = (unsigned char)(h[k] >> 24);
        out[4 * k + 1] = (unsigned char)(h[k] >> 16);
        out[4 * k + 2] = (unsigned char)(h[k] >> 8);
        out[4 * k + 3] = (unsigned char)h[k];
    }
}

static SREF_UNUSED void sref_sha256(const void *data, size_t len, unsigned char out[32])
{
    sref_sha256_2((const unsigned char *)data, len, NULL, 0, out);
}

/* RFC 2104 with B = 64, L = 32. */
static void sref_hmac(const void *key, size_t key_len, const void *data, size_t len,
                      unsigned char out[32])
{
    unsigned char k0[64], pad[64], inner[32];
    size_t i;
    memset(k0, 0, sizeof k0);
    if (key_len > 64)
        sref_sha256(key, key_len, k0);
    else if (key_len)
        memcpy(k0, key, key_len);
    for (i = 0; i < 64; i++) pad[i] = (unsigned char)(k0[i] ^ 0x36);
    sref_sha256_2(pad, 64, (const unsigned char *)data, len, inner);
    for (i = 0; i < 64; i++) pad[i] = (unsigned char)(k0[i] ^ 0x5c);
    sref_sha256_2(pad, 64, inner, 32, out);
}

/* RFC 5869 2.2 and 2.3. */
static SREF_UNUSED void sref_hkdf(unsigned char *okm, size_t okm_len, const void *salt,
                                  size_t salt_len, const void *ikm, size_t ikm_len,
                                  const void *info, size_t info_len)
{
    static const unsigned char zeros[32];
    unsigned char prk[32], t[32 + 255 + 1];
    size_t done = 0, tl = 0;
    unsigned char n = 1;
    if (!salt_len) {
        salt = zeros;
        salt_len = 32;
    }
    if (info_len > 255) {   /* past this reference's buffer: an answer no
                               library gives, so a caller's compare fails */
        memset(okm, 0xEE, okm_len);
        return;
    }
    sref_hmac(salt, salt_len, ikm, ikm_len, prk);
    while (done < okm_len) {
        unsigned char block[32];
        size_t m = tl, take;   /* T(n-1) is at the front already */
        memcpy(t + m, info, info_len);
        m += info_len;
        t[m++] = n++;
        sref_hmac(prk, 32, t, m, block);
        take = okm_len - done < 32 ? okm_len - done : 32;
        memcpy(okm + done, block, take);
        done += take;
        memcpy(t, block, 32);   /* T(n) leads the next input */
        tl = 32;
    }
}

#endif /* SHA256_REF_H */

/* bench_aead.c - alktunnel.h's ChaCha20-Poly1305 against the fastest C
 * libraries on this machine, in one process and one run (`make bench`).
 *
 * Seal and open of 1 KiB and 16 KiB messages (no aad, a fresh nonce per
 * seal), each library in turn, ROUNDS rounds of about 64 MiB; the median
 * and the range of the rounds in GB/s, and the ratios of the medians.
 * Compared, when their development packages are present (comparison only:
 * the headers never depend on them; the rows say SKIPPED otherwise):
 *   libsodium  crypto_aead_chacha20poly1305_ietf (ALK_HAVE_SODIUM)
 *   OpenSSL    EVP ChaCha20-Poly1305 and AES-128-GCM (ALK_HAVE_OPENSSL)
 * The same ciphertext from each (the ChaCha20-Poly1305 ones) is checked
 * once, so a ratio never compares unlike work.
 *
 * Targets (issue 42; exit 1 when one is missed): 16 KiB seal and open
 * >= 1.0x libsodium and >= 0.6x OpenSSL's ChaCha20-Poly1305; 1 KiB >= 1.0x
 * libsodium. A target whose library is missing is SKIPPED, not met. */
#define _POSIX_C_SOURCE 200809L
#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"
#include "bench_common.h"

#include <stdio.h>
#include <string.h>

#ifdef ALK_HAVE_SODIUM
#include <sodium.h>
#endif
#ifdef ALK_HAVE_OPENSSL
#include <openssl/evp.h>
#endif

#define ROUNDS 9
#define ROUND_BYTES ((size_t)64 << 20)
#define MAX_LEN 16384

static unsigned char plain[MAX_LEN], sealed[MAX_LEN + 16], back[MAX_LEN];
static const unsigned char key[32] = {
    0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a,
    0x8b, 0x8c, 0x8d, 0x8e, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94, 0x95,
    0x96, 0x97, 0x98, 0x99, 0x9a, 0x9b, 0x9c, 0x9d, 0x9e, 0x9f};

enum { LIB_ALK, LIB_SODIUM, LIB_OSSL_CHACHA, LIB_OSSL_GCM, LIBS };
static const char *const lib_name[LIBS] = {
    "alktunnel.h ChaCha20-Poly1305", "libsodium ChaCha20-Poly1305",
    "OpenSSL ChaCha20-Poly1305", "OpenSSL AES-128-GCM"};

/* One seal (open = 0) or open of len bytes with library lib; 0 when the
 * library is not here, -1 when an open failed. */
static int one(int lib, int open, size_t len, unsigned n)
{
    unsigned char nonce[12] = {0};
    nonce[0] = (unsigned char)n;
    nonce[1] = (unsigned char)(n >> 8);
    switch (lib) {
    case LIB_ALK:
        if (!open) {
            alkt_aead_seal(sealed, key, nonce, NULL, 0, plain, len);
            return 1;
        }
        return alkt_aead_open(back, key, nonce, NULL, 0, sealed, len + 16) ==
                       ALKT_OK ? 1 : -1;
#ifdef ALK_HAVE_SODIUM
    case LIB_SODIUM: {
        unsigned long long out_len;
        if (!open)
            return crypto_aead_chacha20poly1305_ietf_encrypt(
                       sealed, &out_len, plain, len, NULL, 0, NULL, nonce,
                       key) == 0 ? 1 : -1;
        return crypto_aead_chacha20poly1305_ietf_decrypt(
                   back, &out_len, NULL, sealed, len + 16, NULL, 0, nonce,
                   key) == 0 ? 1 : -1;
    }
#endif
#ifdef ALK_HAVE_OPENSSL
    case LIB_OSSL_CHACHA:
    case LIB_OSSL_GCM: {
        static EVP_CIPHER_CTX *ctx;
        const EVP_CIPHER *c = lib == LIB_OSSL_GCM ? EVP_aes_128_gcm()
                                                  : EVP_chacha20_poly1305();
        int l, ok;
        if (!ctx && !(ctx = EVP_CIPHER_CTX_new())) return -1;
        if (!open) {
            ok = EVP_EncryptInit_ex(ctx, c, NULL, key, nonce) &&
                 EVP_EncryptUpdate(ctx, sealed, &l, plain, (int)len) &&
                 EVP_EncryptFinal_ex(ctx, sealed + l, &l) &&
                 EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, 16,
                                     sealed + len);
        } else {
            ok = EVP_DecryptInit_ex(ctx, c, NULL, key, nonce) &&
                 EVP_DecryptUpdate(ctx, back, &l, sealed, (int)len) &&
                 EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, 16,
                                     sealed + len) &&
                 EVP_DecryptFinal_ex(ctx, back + l, &l);
        }
        return ok ? 1 : -1;
    }
#endif
    default:
        return 0;
    }
}

/* GB/s of ROUNDS rounds: median in *med, range in lo/hi; 0 when absent. */
static int measure(int lib, int open, size_t len, double *med, double *lo,
                   double *hi)
{
    double t[ROUNDS], g[ROUNDS];
    unsigned iters = (unsigned)(ROUND_BYTES / len), i;
    int r, rc = one(lib, 0, len, 0);
    if (rc <= 0) return rc;
    for (r = 0; r < ROUNDS; r++) {
        double t0 = bench_now();
        for (i = 0; i < iters; i++) {
            /* an open opens what the seal of nonce 0 made */
            rc = one(lib, open, len, open ? 0 : i);
            if (rc < 0) return -1;
        }
        t[r] = bench_now() - t0;
        g[r] = (double)len * iters / t[r] / 1e9;
    }
    *med = (double)len * iters / bench_median(t, ROUNDS) / 1e9;
    *lo = *hi = g[0];
    for (r = 1; r < ROUNDS; r++) {
        if (g[r] < *lo) *lo = g[r];
        if (g[r] > *hi) *hi = g[r];
    }
    return 1;
}

/* The ChaCha20-Poly1305 libraries seal the same bytes. */
static int same_output(void)
{
    static unsigned char first[MAX_LEN + 16];
    int lib, ok = 1;
    size_t i;
    for (i = 0; i < MAX_LEN; i++) plain[i] = (unsigned char)(i * 31 + 7);
    one(LIB_ALK, 0, MAX_LEN, 5);
    memcpy(first, sealed, sizeof first);
    for (lib = LIB_SODIUM; lib <= LIB_OSSL_CHACHA; lib++) {
        if (one(lib, 0, MAX_LEN, 5) <= 0) continue;
        if (memcmp(first, sealed, sizeof first)) {
            printf("aead: %s sealed other bytes than alktunnel.h\n",
                   lib_name[lib]);
            ok = 0;
        }
    }
    return ok;
}

int main(void)
{
    static const size_t lens[2] = {1024, MAX_LEN};
    double med[2][2][LIBS];
    int have[LIBS], ok = 1, l, o, lib;
#ifdef ALK_HAVE_SODIUM
    if (sodium_init() < 0) return 1;
#endif
    if (!same_output()) return 1;
    for (l = 0; l < 2; l++)
        for (o = 0; o < 2; o++)
            for (lib = 0; lib < LIBS; lib++) {
                double lo = 0, hi = 0;
                int rc = measure(lib, o, lens[l], &med[l][o][lib], &lo, &hi);
                if (rc < 0) {
                    printf("aead: %s failed\n", lib_name[lib]);
                    return 1;
                }
                have[lib] = rc;
                if (rc)
                    printf("aead: %5zu-byte %s %-31s %5.2f GB/s (%.2f-%.2f)\n",
                           lens[l], o ? "open" : "seal", lib_name[lib],
                           med[l][o][lib], lo, hi);
                else
                    printf("aead: %5zu-byte %s %-31s SKIPPED (no %s)\n",
                           lens[l], o ? "open" : "seal", lib_name[lib],
                           lib == LIB_SODIUM ? "sodium.h: apt-get install libsodium-dev"
                                             : "openssl/evp.h: apt-get install libssl-dev");
            }
    for (l = 0; l < 2; l++)
        for (o = 0; o < 2; o++) {
            const double *m = med[l][o];
            const char *what = o ? "open" : "seal";
            if (have[LIB_SODIUM]) {
                double x = m[LIB_ALK] / m[LIB_SODIUM];
                printf("target: %zu-byte %s >= 1.0x libsodium: %.2fx %s\n",
                       lens[l], what, x, x >= 1.0 ? "met" : "MISSED");
                ok &= x >= 1.0;
            } else {
                printf("target: %zu-byte %s >= 1.0x libsodium: SKIPPED\n",
                       lens[l], what);
            }
            if (lens[l] != MAX_LEN) continue;
            if (have[LIB_OSSL_CHACHA]) {
                double x = m[LIB_ALK] / m[LIB_OSSL_CHACHA];
                printf("target: %zu-byte %s >= 0.6x OpenSSL ChaCha20-Poly1305 "
                       "(goal 0.8x): %.2fx %s\n", lens[l], what, x,
                       x >= 0.6 ? "met" : "MISSED");
                ok &= x >= 0.6;
                printf("        against OpenSSL AES-128-GCM: %.2fx\n",
                       m[LIB_ALK] / m[LIB_OSSL_GCM]);
            } else {
                printf("target: %zu-byte %s >= 0.6x OpenSSL: SKIPPED\n",
                       lens[l], what);
            }
        }
    return ok ? 0 : 1;
}

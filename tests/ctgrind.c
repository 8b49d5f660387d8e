/* ctgrind.c - constant time, checked with valgrind's memcheck: every
 * secret input (keys, scalars, plaintext, tags) is marked undefined, so a
 * branch or a memory index that depends on one is reported as a use of an
 * uninitialised value. Run as `valgrind --error-exitcode=1 ctgrind`
 * (make ctgrind); it prints what it checked. The library marks where a
 * secret-made value becomes public (ALKTUNNEL_CT_PUBLIC: whether a tag
 * matched), and so does this program before it looks at an output.
 *
 * Checked: alkt_chacha20, alkt_poly1305, alkt_aead_seal, alkt_aead_open
 * (matching and not), alkt_x25519, alkt_x25519_base, alkt_sha256,
 * alkt_hmac_sha256, alkt_hkdf_extract / _expand, alkt_ct_equal - the
 * functions the header documents as constant time. A control run marks
 * the bytes of a deliberately secret-dependent branch, to show valgrind is
 * watching (it must report exactly that one). */
#include <valgrind/memcheck.h>
#define ALKTUNNEL_CT_PUBLIC(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#define ALKTUNNEL_NO_SHA_NI   /* the portable SHA-256 (the SHA-NI path too
                                 is branch-free, but valgrind may not know
                                 the instructions) */
#define ALKTUNNEL_IMPLEMENTATION
#include "alktunnel.h"

#include <stdio.h>
#include <string.h>

#define SECRET(p, n) ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
#define PUBLIC(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))

static unsigned long errors_now(void)
{
    return (unsigned long)VALGRIND_COUNT_ERRORS;
}

static int checked, failed;

static void check(const char *what, unsigned long before)
{
    unsigned long now = errors_now();
    checked++;
    if (now != before) {
        failed++;
        printf("FAIL %s: %lu secret-dependent branches or indexes\n", what,
               now - before);
    } else {
        printf("ok   %s\n", what);
    }
}

int main(void)
{
    static unsigned char key[32], nonce[12], msg[1000], out[1100], aad[20];
    static unsigned char scalar[32], point[32], shared[32], prk[32], okm[100];
    unsigned long e;
    int rc, i, on = (int)RUNNING_ON_VALGRIND;
    for (i = 0; i < 32; i++) key[i] = (unsigned char)(i * 7 + 1);
    for (i = 0; i < 12; i++) nonce[i] = (unsigned char)i;
    for (i = 0; i < (int)sizeof msg; i++) msg[i] = (unsigned char)(i * 13);
    for (i = 0; i < 32; i++) scalar[i] = (unsigned char)(i * 29 + 3);
    alkt_x25519_base(point, key);   /* a valid public point */

    e = errors_now();
    SECRET(key, sizeof key);
    SECRET(msg, sizeof msg);
    alkt_chacha20(out, msg, sizeof msg, key, nonce, 1);
    check("alkt_chacha20 (key, plaintext)", e);

    e = errors_now();
    alkt_poly1305(out, msg, 999, key);
    check("alkt_poly1305 (one-time key, message, partial block)", e);

    e = errors_now();
    alkt_aead_seal(out, key, nonce, aad, sizeof aad, msg, sizeof msg);
    check("alkt_aead_seal (key, plaintext)", e);

    e = errors_now();
    SECRET(out, sizeof msg + 16);   /* the tag is what an attacker tries */
    rc = alkt_aead_open(out, key, nonce, aad, sizeof aad, out, sizeof msg + 16);
    check("alkt_aead_open, matching tag (key, ciphertext, tag)", e);
    if (rc != ALKT_OK) { printf("FAIL open refused a good record\n"); failed++; }

    e = errors_now();
    alkt_aead_seal(out, key, nonce, aad, sizeof aad, msg, sizeof msg);
    out[sizeof msg + 3] ^= 1;
    SECRET(out, sizeof msg + 16);
    rc = alkt_aead_open(out, key, nonce, aad, sizeof aad, out, sizeof msg + 16);
    check("alkt_aead_open, wrong tag (key, ciphertext, tag)", e);
    if (rc != ALKT_ERR_AUTH) { printf("FAIL open took a bad record\n"); failed++; }

    e = errors_now();
    SECRET(scalar, sizeof scalar);
    alkt_x25519_base(shared, scalar);
    check("alkt_x25519_base (scalar)", e);

    e = errors_now();
    SECRET(point, sizeof point);   /* the peer's point: not secret, but
                                      nothing should branch on it either */
    alkt_x25519(shared, scalar, point);
    check("alkt_x25519 (scalar, point)", e);

    e = errors_now();
    alkt_sha256(msg, sizeof msg, out);
    alkt_hmac_sha256(key, sizeof key, msg, sizeof msg, out);
    check("alkt_sha256, alkt_hmac_sha256 (key, message)", e);

    e = errors_now();
    alkt_hkdf_extract(prk, key, sizeof key, shared, sizeof shared);
    (void)alkt_hkdf_expand(okm, sizeof okm, prk, "info", 4);
    check("alkt_hkdf_extract, alkt_hkdf_expand (salt, ikm, prk)", e);

    e = errors_now();
    rc = alkt_ct_equal(key, shared, 32);
    PUBLIC(&rc, sizeof rc);
    check("alkt_ct_equal (both inputs)", e);

    /* the control: a branch on a secret byte must be reported */
    e = errors_now();
    PUBLIC(out, 1);
    SECRET(out, 1);
    if (on) {
        volatile int sink = 0;
        if (out[0] == 0x5a) sink = 1;
        (void)sink;
    }
    if (on && errors_now() == e) {
        printf("FAIL the control branch on a secret was not reported: "
               "valgrind is not watching\n");
        failed++;
    } else {
        printf("ok   control: a branch on a secret byte is reported\n");
    }
    if (!on) {
        printf("not under valgrind: nothing was checked (run make ctgrind)\n");
        return 1;
    }
    printf("ctgrind: %d passed, %d failed\n", checked - failed, failed);
    return failed != 0;
}

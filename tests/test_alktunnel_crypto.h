/* test_alktunnel_crypto.h - the crypto primitives against their published
 * vectors, exactly as the documents print them:
 *   RFC 8439  ChaCha20 (2.3.2, 2.4.2, A.1, A.2), Poly1305 (2.5.2, A.3, all
 *             11), its key generation (2.6.2, A.4), AEAD_CHACHA20_POLY1305
 *             (2.8.2 sealed, A.5 opened, then every single bit flipped)
 *   RFC 7748  X25519 (5.2 and its iterations, 6.1 Diffie-Hellman)
 *   FIPS 180-2 SHA-256 examples, RFC 4231 HMAC-SHA-256, RFC 5869 HKDF
 * Every expected value was checked apart in Python: pure-Python ChaCha20,
 * Poly1305 and X25519 (pow() inversion), hashlib/hmac, and OpenSSL through
 * the cryptography package (the X25519 1,000,000 iterations too). Then
 * alkt_aead_seal against the independent, slow testkit/aead_ref.h on drawn
 * (key, nonce, aad, plaintext) cases. Helpers are prefixed ct_. */
#include "../testkit/aead_ref.h"

/* ---- helpers ---------------------------------------------------------- */

#define CT_MAX 512 /* the longest vector below is 375 bytes (A.2 #2) */

static unsigned ct_nibble(char c)
{
    if (c >= '0' && c <= '9') return (unsigned)(c - '0');
    if (c >= 'a' && c <= 'f') return (unsigned)(c - 'a' + 10);
    return (unsigned)(c - 'A' + 10);
}

static size_t ct_hexlen(const char *hex)
{
    return strlen(hex) / 2;
}

/* out = the ct_hexlen(hex) bytes the hex digits spell. */
static void ct_hex(unsigned char *out, const char *hex)
{
    size_t i, n = ct_hexlen(hex);
    for (i = 0; i < n; i++)
        out[i] = (unsigned char)(ct_nibble(hex[2 * i]) << 4 |
                                 ct_nibble(hex[2 * i + 1]));
}

static void ct_print_hex(const char *label, const unsigned char *p, size_t n)
{
    size_t i;
    printf("\n    %s ", label);
    for (i = 0; i < n; i++) printf("%02x", p[i]);
}

/* 1 when got's first ct_hexlen(want) bytes are the hex; else prints both. */
static int ct_eq_hex(const unsigned char *got, const char *want)
{
    unsigned char w[CT_MAX];
    size_t n = ct_hexlen(want);
    if (n > sizeof w) return 0;
    ct_hex(w, want);
    if (memcmp(got, w, n) == 0) return 1;
    ct_print_hex("expected", w, n);
    ct_print_hex("got     ", got, n);
    printf("\n");
    return 0;
}

/* 1 when all n bytes of p are c. */
static int ct_all(const unsigned char *p, size_t n, unsigned char c)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (p[i] != c) return 0;
    return 1;
}

/* ---- ChaCha20 --------------------------------------------------------- */

/* plain NULL: that many zero bytes, so cipher is the key stream itself. */
typedef struct ct_chacha_vec {
    const char *name, *key, *nonce;
    uint32_t counter;
    const char *plain, *cipher;
} ct_chacha_vec;

/* Each vector at once, in place, and split after the first block (the
 * rest from counter + 1). */
static enum greatest_test_res ct_run_chacha(const ct_chacha_vec *v,
                                            size_t count)
{
    size_t i;
    for (i = 0; i < count; i++) {
        unsigned char key[32], nonce[12], in[CT_MAX], out[CT_MAX], buf[CT_MAX];
        size_t n = ct_hexlen(v[i].cipher);
        ASSERTm(v[i].name, n <= CT_MAX);
        ct_hex(key, v[i].key);
        ct_hex(nonce, v[i].nonce);
        memset(in, 0, sizeof in);
        if (v[i].plain) {
            ASSERT_EQm(v[i].name, n, ct_hexlen(v[i].plain));
            ct_hex(in, v[i].plain);
        }
        alkt_chacha20(out, in, n, key, nonce, v[i].counter);
        ASSERTm(v[i].name, ct_eq_hex(out, v[i].cipher));
        memcpy(buf, in, n);
        alkt_chacha20(buf, buf, n, key, nonce, v[i].counter);
        ASSERT_MEM_EQm(v[i].name, out, buf, n);
        if (n > 64) {
            memset(buf, 0, sizeof buf);
            alkt_chacha20(buf, in, 64, key, nonce, v[i].counter);
            alkt_chacha20(buf + 64, in + 64, n - 64, key, nonce,
                          v[i].counter + 1u);
            ASSERT_MEM_EQm(v[i].name, out, buf, n);
        }
    }
    PASS();
}

/* RFC 8439 2.3.2: the block function, as the key stream of block 1 */
TEST crypto_chacha20_block_rfc8439_2_3_2(void)
{
    static const ct_chacha_vec v[] = {
        {"RFC 8439 2.3.2 serialized block",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "000000090000004a00000000",
            1,
            NULL,
            "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
            "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"}
    };
    CHECK_CALL(ct_run_chacha(v, sizeof v / sizeof v[0]));
    PASS();
}

/* RFC 8439 2.4.2: the sunscreen text, two blocks from counter 1 */
TEST crypto_chacha20_encrypt_rfc8439_2_4_2(void)
{
    static const ct_chacha_vec v[] = {
        {"RFC 8439 2.4.2 ciphertext sunscreen",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
            "000000000000004a00000000",
            1,
            "4c616469657320616e642047656e746c656d656e206f662074686520636c6173"
            "73206f66202739393a204966204920636f756c64206f6666657220796f75206f"
            "6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73"
            "637265656e20776f756c642062652069742e",
            "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
            "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
            "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
            "5af90bbf74a35be6b40b8eedf2785e42874d"}
    };
    CHECK_CALL(ct_run_chacha(v, sizeof v / sizeof v[0]));
    PASS();
}

/* RFC 8439 A.1: block function test vectors #1-#5 (the serialized key
 * stream of one block) */
TEST crypto_chacha20_block_rfc8439_a1(void)
{
    static const ct_chacha_vec v[] = {
        {"RFC 8439 A.1 #1",
            "0000000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000000",
            0,
            NULL,
            "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
            "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"},
        {"RFC 8439 A.1 #2",
            "0000000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000000",
            1,
            NULL,
            "9f07e7be5551387a98ba977c732d080dcb0f29a048e3656912c6533e32ee7aed"
            "29b721769ce64e43d57133b074d839d531ed1f28510afb45ace10a1f4b794d6f"},
        {"RFC 8439 A.1 #3",
            "0000000000000000000000000000000000000000000000000000000000000001",
            "000000000000000000000000",
            1,
            NULL,
            "3aeb5224ecf849929b9d828db1ced4dd832025e8018b8160b82284f3c949aa5a"
            "8eca00bbb4a73bdad192b5c42f73f2fd4e273644c8b36125a64addeb006c13a0"},
        {"RFC 8439 A.1 #4",
            "00ff000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000000",
            2,
            NULL,
            "72d54dfbf12ec44b362692df94137f328fea8da73990265ec1bbbea1ae9af0ca"
            "13b25aa26cb4a648cb9b9d1be65b2c0924a66c54d545ec1b7374f4872e99f096"},
        {"RFC 8439 A.1 #5",
            "0000000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000002",
            0,
            NULL,
            "c2c64d378cd536374ae204b9ef933fcd1a8b2288b3dfa49672ab765b54ee27c7"
            "8a970e0e955c14f3a88e741b97c286f75f8fc299e8148362fa198a39531bed6d"}
    };
    CHECK_CALL(ct_run_chacha(v, sizeof v / sizeof v[0]));
    PASS();
}

/* RFC 8439 A.2: encryption test vectors #1-#3 */
TEST crypto_chacha20_encrypt_rfc8439_a2(void)
{
    static const ct_chacha_vec v[] = {
        {"RFC 8439 A.2 #1",
            "0000000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000000",
            0,
            "0000000000000000000000000000000000000000000000000000000000000000"
            "0000000000000000000000000000000000000000000000000000000000000000",
            "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
            "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"},
        {"RFC 8439 A.2 #2",
            "0000000000000000000000000000000000000000000000000000000000000001",
            "000000000000000000000002",
            1,
            "416e79207375626d697373696f6e20746f20746865204945544620696e74656e"
            "6465642062792074686520436f6e7472696275746f7220666f72207075626c69"
            "636174696f6e20617320616c6c206f722070617274206f6620616e2049455446"
            "20496e7465726e65742d4472616674206f722052464320616e6420616e792073"
            "746174656d656e74206d6164652077697468696e2074686520636f6e74657874"
            "206f6620616e204945544620616374697669747920697320636f6e7369646572"
            "656420616e20224945544620436f6e747269627574696f6e222e205375636820"
            "73746174656d656e747320696e636c756465206f72616c2073746174656d656e"
            "747320696e20494554462073657373696f6e732c2061732077656c6c20617320"
            "7772697474656e20616e6420656c656374726f6e696320636f6d6d756e696361"
            "74696f6e73206d61646520617420616e792074696d65206f7220706c6163652c"
            "207768696368206172652061646472657373656420746f",
            "a3fbf07df3fa2fde4f376ca23e82737041605d9f4f4f57bd8cff2c1d4b7955ec"
            "2a97948bd3722915c8f3d337f7d370050e9e96d647b7c39f56e031ca5eb6250d"
            "4042e02785ececfa4b4bb5e8ead0440e20b6e8db09d881a7c6132f420e527950"
            "42bdfa7773d8a9051447b3291ce1411c680465552aa6c405b7764d5e87bea85a"
            "d00f8449ed8f72d0d662ab052691ca66424bc86d2df80ea41f43abf937d3259d"
            "c4b2d0dfb48a6c9139ddd7f76966e928e635553ba76c5c879d7b35d49eb2e62b"
            "0871cdac638939e25e8a1e0ef9d5280fa8ca328b351c3c765989cbcf3daa8b6c"
            "cc3aaf9f3979c92b3720fc88dc95ed84a1be059c6499b9fda236e7e818b04b0b"
            "c39c1e876b193bfe5569753f88128cc08aaa9b63d1a16f80ef2554d7189c411f"
            "5869ca52c5b83fa36ff216b9c1d30062bebcfd2dc5bce0911934fda79a86f6e6"
            "98ced759c3ff9b6477338f3da4f9cd8514ea9982ccafb341b2384dd902f3d1ab"
            "7ac61dd29c6f21ba5b862f3730e37cfdc4fd806c22f221"},
        {"RFC 8439 A.2 #3",
            "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0",
            "000000000000000000000002",
            42,
            "2754776173206272696c6c69672c20616e642074686520736c6974687920746f"
            "7665730a446964206779726520616e642067696d626c6520696e207468652077"
            "6162653a0a416c6c206d696d737920776572652074686520626f726f676f7665"
            "732c0a416e6420746865206d6f6d65207261746873206f757467726162652e",
            "62e6347f95ed87a45ffae7426f27a1df5fb69110044c0d73118effa95b01e5cf"
            "166d3df2d721caf9b21e5fb14c616871fd84c54f9d65b283196c7fe4f60553eb"
            "f39c6402c42234e32a356b3e764312a61a5532055716ead6962568f87d3f3f77"
            "04c6a8d1bcd1bf4d50d6154b6da731b187b58dfd728afa36757a797ac188d1"}
    };
    CHECK_CALL(ct_run_chacha(v, sizeof v / sizeof v[0]));
    PASS();
}

/* RFC 8439 2.6.2 and A.4: the Poly1305 one-time key is the first 32 bytes
 * of block 0 */
TEST crypto_poly1305_keygen_rfc8439_2_6_2_a4(void)
{
    static const ct_chacha_vec v[] = {
        {"RFC 8439 2.6.2 one-time key",
            "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
            "000000000001020304050607",
            0,
            NULL,
            "8ad5a08b905f81cc815040274ab29471a833b637e3fd0da508dbb8e2fdd1a646"},
        {"RFC 8439 A.4 #1",
            "0000000000000000000000000000000000000000000000000000000000000000",
            "000000000000000000000000",
            0,
            NULL,
            "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"},
        {"RFC 8439 A.4 #2",
            "0000000000000000000000000000000000000000000000000000000000000001",
            "000000000000000000000002",
            0,
            NULL,
            "ecfa254f845f647473d3cb140da9e87606cb33066c447b87bc2666dde3fbb739"},
        {"RFC 8439 A.4 #3",
            "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0",
            "000000000000000000000002",
            0,
            NULL,
            "965e3bc6f9ec7ed9560808f4d229f94b137ff275ca9b3fcbdd59deaad23310ae"}
    };
    CHECK_CALL(ct_run_chacha(v, sizeof v / sizeof v[0]));
    PASS();
}

/* ---- Poly1305 --------------------------------------------------------- */

typedef struct ct_poly_vec {
    const char *name, *key, *msg, *tag;
} ct_poly_vec;

/* Each vector, and again from an odd address. */
static enum greatest_test_res ct_run_poly(const ct_poly_vec *v,
                                          size_t count)
{
    size_t i;
    for (i = 0; i < count; i++) {
        unsigned char key[32], msg[CT_MAX + 1], tag[16];
        size_t n = ct_hexlen(v[i].msg);
        ASSERTm(v[i].name, n <= CT_MAX && ct_hexlen(v[i].tag) == 16);
        ct_hex(key, v[i].key);
        ct_hex(msg, v[i].msg);
        alkt_poly1305(tag, msg, n, key);
        ASSERTm(v[i].name, ct_eq_hex(tag, v[i].tag));
        memmove(msg + 1, msg, n);
        memset(tag, 0, sizeof tag);
        alkt_poly1305(tag, msg + 1, n, key);
        ASSERTm(v[i].name, ct_eq_hex(tag, v[i].tag));
    }
    PASS();
}

/* RFC 8439 2.5.2: "Cryptographic Forum Research Group" */
TEST crypto_poly1305_rfc8439_2_5_2(void)
{
    static const ct_poly_vec v[] = {
        {"RFC 8439 2.5.2",
            "85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b",
            "43727970746f6772617068696320466f72756d2052657365617263682047726f"
            "7570",
            "a8061dc1305136c6c22b8baf0c0127a9"}
    };
    CHECK_CALL(ct_run_poly(v, sizeof v / sizeof v[0]));
    PASS();
}

/* RFC 8439 A.3: test vectors #1-#11; key = r | s (for #5-#11 the RFC
 * prints R and S apart). #5-#11 are the edge cases: a partially reduced
 * result, s overflowing 2^128, carries, results at 2^130-5 and 2^130-6,
 * 131-bit intermediate and final values. */
TEST crypto_poly1305_rfc8439_a3(void)
{
    static const ct_poly_vec v[] = {
        {"RFC 8439 A.3 #1",
            "0000000000000000000000000000000000000000000000000000000000000000",
            "0000000000000000000000000000000000000000000000000000000000000000"
            "0000000000000000000000000000000000000000000000000000000000000000",
            "00000000000000000000000000000000"},
        {"RFC 8439 A.3 #2",
            "0000000000000000000000000000000036e5f6b5c5e06070f0efca96227a863e",
            "416e79207375626d697373696f6e20746f20746865204945544620696e74656e"
            "6465642062792074686520436f6e7472696275746f7220666f72207075626c69"
            "636174696f6e20617320616c6c206f722070617274206f6620616e2049455446"
            "20496e7465726e65742d4472616674206f722052464320616e6420616e792073"
            "746174656d656e74206d6164652077697468696e2074686520636f6e74657874"
            "206f6620616e204945544620616374697669747920697320636f6e7369646572"
            "656420616e20224945544620436f6e747269627574696f6e222e205375636820"
            "73746174656d656e747320696e636c756465206f72616c2073746174656d656e"
            "747320696e20494554462073657373696f6e732c2061732077656c6c20617320"
            "7772697474656e20616e6420656c656374726f6e696320636f6d6d756e696361"
            "74696f6e73206d61646520617420616e792074696d65206f7220706c6163652c"
            "207768696368206172652061646472657373656420746f",
            "36e5f6b5c5e06070f0efca96227a863e"},
        {"RFC 8439 A.3 #3",
            "36e5f6b5c5e06070f0efca96227a863e00000000000000000000000000000000",
            "416e79207375626d697373696f6e20746f20746865204945544620696e74656e"
            "6465642062792074686520436f6e7472696275746f7220666f72207075626c69"
            "636174696f6e20617320616c6c206f722070617274206f6620616e2049455446"
            "20496e7465726e65742d4472616674206f722052464320616e6420616e792073"
            "746174656d656e74206d6164652077697468696e2074686520636f6e74657874"
            "206f6620616e204945544620616374697669747920697320636f6e7369646572"
            "656420616e20224945544620436f6e747269627574696f6e222e205375636820"
            "73746174656d656e747320696e636c756465206f72616c2073746174656d656e"
            "747320696e20494554462073657373696f6e732c2061732077656c6c20617320"
            "7772697474656e20616e6420656c656374726f6e696320636f6d6d756e696361"
            "74696f6e73206d61646520617420616e792074696d65206f7220706c6163652c"
            "207768696368206172652061646472657373656420746f",
            "f3477e7cd95417af89a6b8794c310cf0"},
        {"RFC 8439 A.3 #4",
            "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0",
            "2754776173206272696c6c69672c20616e642074686520736c6974687920746f"
            "7665730a446964206779726520616e642067696d626c6520696e207468652077"
            "6162653a0a416c6c206d696d737920776572652074686520626f726f676f7665"
            "732c0a416e6420746865206d6f6d65207261746873206f757467726162652e",
            "4541669a7eaaee61e708dc7cbcc5eb62"},
        {"RFC 8439 A.3 #5",
            "0200000000000000000000000000000000000000000000000000000000000000",
            "ffffffffffffffffffffffffffffffff",
            "03000000000000000000000000000000"},
        {"RFC 8439 A.3 #6",
            "02000000000000000000000000000000ffffffffffffffffffffffffffffffff",
            "02000000000000000000000000000000",
            "03000000000000000000000000000000"},
        {"RFC 8439 A.3 #7",
            "0100000000000000000000000000000000000000000000000000000000000000",
            "fffffffffffffffffffffffffffffffff0ffffffffffffffffffffffffffffff"
            "11000000000000000000000000000000",
            "05000000000000000000000000000000"},
        {"RFC 8439 A.3 #8",
            "0100000000000000000000000000000000000000000000000000000000000000",
            "fffffffffffffffffffffffffffffffffbfefefefefefefefefefefefefefefe"
            "01010101010101010101010101010101",
            "00000000000000000000000000000000"},
        {"RFC 8439 A.3 #9",
            "0200000000000000000000000000000000000000000000000000000000000000",
            "fdffffffffffffffffffffffffffffff",
            "faffffffffffffffffffffffffffffff"},
        {"RFC 8439 A.3 #10",
            "0100000000000000040000000000000000000000000000000000000000000000",
            "e33594d7505e43b900000000000000003394d7505e4379cd0100000000000000"
            "0000000000000000000000000000000001000000000000000000000000000000",
            "14000000000000005500000000000000"},
        {"RFC 8439 A.3 #11",
            "0100000000000000040000000000000000000000000000000000000000000000",
            "e33594d7505e43b900000000000000003394d7505e4379cd0100000000000000"
            "00000000000000000000000000000000",
            "13000000000000000000000000000000"}
    };
    CHECK_CALL(ct_run_poly(v, sizeof v / sizeof v[0]));
    PASS();
}

/* ---- AEAD_CHACHA20_POLY1305 ------------------------------------------- */

/* RFC 8439 2.8.2 */
#define CT_A282_KEY \
    "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
/* nonce = the 32-bit fixed-common part 07000000 | IV 4041424344454647 */
#define CT_A282_NONCE "07000000" "4041424344454647"
#define CT_A282_AAD \
    "50515253c0c1c2c3c4c5c6c7"
#define CT_A282_PLAIN \
    "4c616469657320616e642047656e746c656d656e206f662074686520636c6173" \
    "73206f66202739393a204966204920636f756c64206f6666657220796f75206f" \
    "6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73" \
    "637265656e20776f756c642062652069742e"
#define CT_A282_CIPHER \
    "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6" \
    "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36" \
    "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc" \
    "3ff4def08e4b7a9de576d26586cec64b6116"
#define CT_A282_TAG \
    "1ae10b594f09e26a7e902ecbd0600691"

/* RFC 8439 2.8.2: seal, seal in place, and open both ways back */
TEST crypto_aead_seal_rfc8439_2_8_2(void)
{
    unsigned char key[32], nonce[12], aad[12], plain[114], out[114 + 16],
        buf[114 + 16], back[114];
    ASSERT_EQ(ct_hexlen(CT_A282_PLAIN), sizeof plain);
    ct_hex(key, CT_A282_KEY);
    ct_hex(nonce, CT_A282_NONCE);
    ct_hex(aad, CT_A282_AAD);
    ct_hex(plain, CT_A282_PLAIN);
    alkt_aead_seal(out, key, nonce, aad, sizeof aad, plain, sizeof plain);
    ASSERTm("2.8.2 ciphertext", ct_eq_hex(out, CT_A282_CIPHER));
    ASSERTm("2.8.2 tag", ct_eq_hex(out + 114, CT_A282_TAG));
    memcpy(buf, plain, sizeof plain);
    alkt_aead_seal(buf, key, nonce, aad, sizeof aad, buf, sizeof plain);
    ASSERT_MEM_EQm("2.8.2 sealed in place", out, buf, sizeof buf);
    ASSERT_EQ(ALKT_OK, alkt_aead_open(back, key, nonce, aad, sizeof aad,
                                      out, sizeof out));
    ASSERT_MEM_EQ(plain, back, sizeof plain);
    ASSERT_EQ(ALKT_OK, alkt_aead_open(buf, key, nonce, aad, sizeof aad,
                                      buf, sizeof buf));
    ASSERT_MEM_EQm("2.8.2 opened in place", plain, buf, sizeof plain);
    PASS();
}

/* RFC 8439 A.5 */
#define CT_A5_KEY \
    "1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0"
#define CT_A5_NONCE "000000000102030405060708"
#define CT_A5_AAD "f33388860000000000004e91"
#define CT_A5_CIPHER \
    "64a0861575861af460f062c79be643bd5e805cfd345cf389f108670ac76c8cb2" \
    "4c6cfc18755d43eea09ee94e382d26b0bdb7b73c321b0100d4f03b7f355894cf" \
    "332f830e710b97ce98c8a84abd0b948114ad176e008d33bd60f982b1ff37c855" \
    "9797a06ef4f0ef61c186324e2b3506383606907b6a7c02b0f9f6157b53c867e4" \
    "b9166c767b804d46a59b5216cde7a4e99040c5a40433225ee282a1b0a06c523e" \
    "af4534d7f83fa1155b0047718cbc546a0d072b04b3564eea1b422273f548271a" \
    "0bb2316053fa76991955ebd63159434ecebb4e466dae5a1073a6727627097a10" \
    "49e617d91d361094fa68f0ff77987130305beaba2eda04df997b714d6c6f2c29" \
    "a6ad5cb4022b02709b"
#define CT_A5_TAG \
    "eead9d67890cbb22392336fea1851f38"
#define CT_A5_PLAIN \
    "496e7465726e65742d4472616674732061726520647261667420646f63756d65" \
    "6e74732076616c696420666f722061206d6178696d756d206f6620736978206d" \
    "6f6e74687320616e64206d617920626520757064617465642c207265706c6163" \
    "65642c206f72206f62736f6c65746564206279206f7468657220646f63756d65" \
    "6e747320617420616e792074696d652e20497420697320696e617070726f7072" \
    "6961746520746f2075736520496e7465726e65742d4472616674732061732072" \
    "65666572656e6365206d6174657269616c206f7220746f206369746520746865" \
    "6d206f74686572207468616e206173202fe2809c776f726b20696e2070726f67" \
    "726573732e2fe2809d"
#define CT_A5_LEN 265
#define CT_CANARY 0xA5

/* out must be refused: ALKT_ERR_AUTH and not one byte of out written. */
static enum greatest_test_res ct_open_refused(const char *what,
    const unsigned char key[32], const unsigned char nonce[12],
    const unsigned char *aad, size_t aad_len,
    const unsigned char *sealed, size_t sealed_len)
{
    unsigned char out[CT_A5_LEN + 64];
    memset(out, CT_CANARY, sizeof out);
    ASSERT_EQm(what, ALKT_ERR_AUTH,
               alkt_aead_open(out, key, nonce, aad, aad_len, sealed,
                              sealed_len));
    ASSERTm(what, ct_all(out, sizeof out, CT_CANARY));
    PASS();
}

/* RFC 8439 A.5: the received message opens to the Internet-Draft text;
 * then every single bit flipped in the ciphertext, the tag, the AAD, the
 * nonce and the key, a truncated tag, a short AAD and every sealed_len
 * below 16 are refused with out untouched (in place too). */
TEST crypto_aead_open_rfc8439_a5(void)
{
    unsigned char key[32], nonce[12], aad[12], sealed[CT_A5_LEN + 16],
        out[CT_A5_LEN + 64], buf[CT_A5_LEN + 16];
    size_t bit, n;
    ASSERT_EQ((size_t)CT_A5_LEN, ct_hexlen(CT_A5_CIPHER));
    ct_hex(key, CT_A5_KEY);
    ct_hex(nonce, CT_A5_NONCE);
    ct_hex(aad, CT_A5_AAD);
    ct_hex(sealed, CT_A5_CIPHER);
    ct_hex(sealed + CT_A5_LEN, CT_A5_TAG);

    memset(out, CT_CANARY, sizeof out);
    ASSERT_EQ(ALKT_OK, alkt_aead_open(out, key, nonce, aad, sizeof aad,
                                      sealed, sizeof sealed));
    ASSERTm("A.5 plaintext", ct_eq_hex(out, CT_A5_PLAIN));
    ASSERTm("A.5 wrote past the plaintext",
            ct_all(out + CT_A5_LEN, sizeof out - CT_A5_LEN, CT_CANARY));
    memcpy(buf, sealed, sizeof buf);
    ASSERT_EQ(ALKT_OK, alkt_aead_open(buf, key, nonce, aad, sizeof aad,
                                      buf, sizeof buf));
    ASSERT_MEM_EQm("A.5 opened in place", out, buf, CT_A5_LEN);

    for (bit = 0; bit < 8 * sizeof sealed; bit++) {
        sealed[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        CHECK_CALL(ct_open_refused(bit < 8 * CT_A5_LEN ? "A.5 ciphertext bit"
                                                       : "A.5 tag bit",
                                   key, nonce, aad, sizeof aad,
                                   sealed, sizeof sealed));
        sealed[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    for (bit = 0; bit < 8 * sizeof aad; bit++) {
        aad[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        CHECK_CALL(ct_open_refused("A.5 aad bit", key, nonce, aad, sizeof aad,
                                   sealed, sizeof sealed));
        aad[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    for (bit = 0; bit < 8 * sizeof nonce; bit++) {
        nonce[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        CHECK_CALL(ct_open_refused("A.5 nonce bit", key, nonce, aad,
                                   sizeof aad, sealed, sizeof sealed));
        nonce[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    for (bit = 0; bit < 8 * sizeof key; bit++) {
        key[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        CHECK_CALL(ct_open_refused("A.5 key bit", key, nonce, aad, sizeof aad,
                                   sealed, sizeof sealed));
        key[bit / 8] ^= (unsigned char)(1u << (bit % 8));
    }
    CHECK_CALL(ct_open_refused("A.5 last byte cut", key, nonce, aad,
                               sizeof aad, sealed, sizeof sealed - 1));
    CHECK_CALL(ct_open_refused("A.5 aad cut", key, nonce, aad, sizeof aad - 1,
                               sealed, sizeof sealed));
    for (n = 0; n < 16; n++)
        CHECK_CALL(ct_open_refused("A.5 sealed_len < 16", key, nonce, aad,
                                   sizeof aad, sealed, n));
    /* in place: a refused open leaves the sealed bytes as they were */
    memcpy(buf, sealed, sizeof buf);
    buf[7] ^= 0x10;
    ASSERT_EQ(ALKT_ERR_AUTH, alkt_aead_open(buf, key, nonce, aad, sizeof aad,
                                            buf, sizeof buf));
    buf[7] ^= 0x10;
    ASSERT_MEM_EQm("A.5 refused in place", sealed, buf, sizeof buf);
    /* and the untouched message still opens */
    ASSERT_EQ(ALKT_OK, alkt_aead_open(out, key, nonce, aad, sizeof aad,
                                      sealed, sizeof sealed));
    ASSERTm("A.5 plaintext again", ct_eq_hex(out, CT_A5_PLAIN));
    PASS();
}

/* ---- X25519 (RFC 7748) ------------------------------------------------ */

/* RFC 7748 5.2: the two test vectors (the second u-coordinate has its top
 * bit set, which must be ignored) */
TEST crypto_x25519_rfc7748_5_2(void)
{
    static const struct { const char *scalar, *u, *out; } v[] = {
        {"a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
            "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
            "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"},
        {"4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
            "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
            "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"}
    };
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char k[32], u[32], out[32];
        ct_hex(k, v[i].scalar);
        ct_hex(u, v[i].u);
        alkt_x25519(out, k, u);
        ASSERTm("RFC 7748 5.2 X25519", ct_eq_hex(out, v[i].out));
    }
    PASS();
}

/* RFC 7748 5.2, iterated: k = u = 9; k = X25519(k, u), u = the old k.
 * After 1 and 1,000 iterations; 1,000,000 with ALKT_SLOW_TESTS. */
TEST crypto_x25519_iterated_rfc7748_5_2(void)
{
    static const char after_1[] =
        "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079";
    static const char after_1000[] =
        "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51";
    static const char after_1000000[] =
        "7c3911e0ab2586fd864497297e575e6f3bc601c0883c30df5f4dd2d24f665424";
    unsigned char k[32], u[32], next[32];
    unsigned long i, last = 1000;
#ifdef ALKT_SLOW_TESTS
    last = 1000000;
#endif
    memset(k, 0, sizeof k);
    k[0] = 9;
    memcpy(u, k, sizeof u);
    for (i = 1; i <= last; i++) {
        alkt_x25519(next, k, u);
        memcpy(u, k, sizeof u);
        memcpy(k, next, sizeof k);
        if (i == 1)
            ASSERTm("after one iteration", ct_eq_hex(k, after_1));
        if (i == 1000)
            ASSERTm("after 1,000 iterations", ct_eq_hex(k, after_1000));
        if (i == 1000000)
            ASSERTm("after 1,000,000 iterations",
                    ct_eq_hex(k, after_1000000));
    }
    PASS();
}

/* RFC 7748 6.1: Alice's and Bob's public keys X25519(a, 9), X25519(b, 9)
 * by alkt_x25519_base, and the shared secret K from both sides */
TEST crypto_x25519_dh_rfc7748_6_1(void)
{
    unsigned char a[32], b[32], pa[32], pb[32], k1[32], k2[32], nine[32];
    ct_hex(a, /* Alice's private key */
        "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    ct_hex(b, /* Bob's private key */
        "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
    alkt_x25519_base(pa, a);
    ASSERTm("Alice's public key", ct_eq_hex(pa,
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"));
    alkt_x25519_base(pb, b);
    ASSERTm("Bob's public key", ct_eq_hex(pb,
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"));
    memset(nine, 0, sizeof nine);
    nine[0] = 9;
    alkt_x25519(k1, a, nine);
    ASSERT_MEM_EQm("X25519(a, 9) = alkt_x25519_base(a)", pa, k1, 32);
    alkt_x25519(k1, a, pb);
    alkt_x25519(k2, b, pa);
    ASSERTm("shared secret, Alice's side", ct_eq_hex(k1,
        "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"));
    ASSERT_MEM_EQm("shared secret, Bob's side", k1, k2, 32);
    PASS();
}

/* ---- SHA-256, HMAC-SHA-256, HKDF ---------------------------------------- */

/* FIPS 180-2 appendix B: "abc", the 448-bit message, one million 'a' */
TEST crypto_sha256_fips180_2(void)
{
    static unsigned char million[1000000];
    static const char m448[] =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    unsigned char out[32];
    alkt_sha256("abc", 3, out);
    ASSERTm("SHA-256(\"abc\")", ct_eq_hex(out,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    ASSERT_EQ((size_t)56, strlen(m448));
    alkt_sha256(m448, 56, out);
    ASSERTm("SHA-256(448 bits)", ct_eq_hex(out,
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    memset(million, 'a', sizeof million);
    alkt_sha256(million, sizeof million, out);
    ASSERTm("SHA-256(one million 'a')", ct_eq_hex(out,
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    PASS();
}

/* RFC 4231 section 4: test cases 1-7 (case 5 truncated to 128 bits) */
TEST crypto_hmac_sha256_rfc4231(void)
{
    static const struct { const char *name, *key, *data, *mac; } v[] = {
        {"RFC 4231 test case 1",
            "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
            "4869205468657265",
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"RFC 4231 test case 2",
            "4a656665",
            "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {"RFC 4231 test case 3",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
            "dddddddddddddddddddddddddddddddddddd",
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {"RFC 4231 test case 4",
            "0102030405060708090a0b0c0d0e0f10111213141516171819",
            "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
            "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
            "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {"RFC 4231 test case 5 (truncated to 128 bits)",
            "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c",
            "546573742057697468205472756e636174696f6e",
            "a3b6167473100ee06e0c796c2955552b"},
        {"RFC 4231 test case 6",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaa",
            "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a"
            "65204b6579202d2048617368204b6579204669727374",
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {"RFC 4231 test case 7",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
            "aaaaaa",
            "5468697320697320612074657374207573696e672061206c6172676572207468"
            "616e20626c6f636b2d73697a65206b657920616e642061206c61726765722074"
            "68616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565"
            "647320746f20626520686173686564206265666f7265206265696e6720757365"
            "642062792074686520484d414320616c676f726974686d2e",
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"}
    };
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char key[CT_MAX], data[CT_MAX], mac[32];
        ct_hex(key, v[i].key);
        ct_hex(data, v[i].data);
        alkt_hmac_sha256(key, ct_hexlen(v[i].key), data, ct_hexlen(v[i].data),
                         mac);
        ASSERTm(v[i].name, ct_eq_hex(mac, v[i].mac));
    }
    PASS();
}

/* RFC 5869 appendix A: test cases 1-3 (SHA-256), PRK and OKM */
TEST crypto_hkdf_rfc5869(void)
{
    static const struct {
        const char *name, *ikm, *salt, *info;
        size_t len;
        const char *prk, *okm;
    } v[] = {
        {"RFC 5869 test case 1",
            "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
            "000102030405060708090a0b0c",
            "f0f1f2f3f4f5f6f7f8f9",
            42,
            "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5",
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
            "34007208d5b887185865"},
        {"RFC 5869 test case 2",
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
            "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
            "404142434445464748494a4b4c4d4e4f",
            "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
            "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
            "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
            "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf"
            "d0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeef"
            "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
            82,
            "06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244",
            "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
            "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
            "cc30c58179ec3e87c14c01d5c1f3434f1d87"},
        {"RFC 5869 test case 3",
            "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
            "",
            "",
            42,
            "19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04",
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
            "9d201395faa4b61a96c8"}
    };
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char ikm[CT_MAX], salt[CT_MAX], info[CT_MAX], prk[32],
            okm[CT_MAX];
        ASSERT_EQm(v[i].name, v[i].len, ct_hexlen(v[i].okm));
        ct_hex(ikm, v[i].ikm);
        ct_hex(salt, v[i].salt);
        ct_hex(info, v[i].info);
        alkt_hkdf_extract(prk, salt, ct_hexlen(v[i].salt), ikm,
                          ct_hexlen(v[i].ikm));
        ASSERTm(v[i].name, ct_eq_hex(prk, v[i].prk));
        memset(okm, CT_CANARY, sizeof okm);
        ASSERT_EQm(v[i].name, ALKT_OK, alkt_hkdf_expand(okm, v[i].len, prk,
                                          info, ct_hexlen(v[i].info)));
        ASSERTm(v[i].name, ct_eq_hex(okm, v[i].okm));
        ASSERTm(v[i].name, ct_all(okm + v[i].len, sizeof okm - v[i].len,
                                  CT_CANARY));
    }
    PASS();
}

/* RFC 5869 2.3: L <= 255 * HashLen. 255 * 32 bytes work (from test case
 * 1's PRK and info; the SHA-256 of all 8160 bytes computed apart with
 * Python's hmac and OpenSSL's HKDF), one more is ALKT_ERR_ARG with
 * nothing written. */
TEST crypto_hkdf_expand_length_limit(void)
{
    static unsigned char okm[255 * 32 + 1];
    unsigned char prk[32], info[10], digest[32];
    ct_hex(prk,
        "077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5");
    ct_hex(info, "f0f1f2f3f4f5f6f7f8f9");
    memset(okm, CT_CANARY, sizeof okm);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_hkdf_expand(okm, 255 * 32 + 1, prk, info,
                                             sizeof info));
    ASSERTm("refused expand wrote", ct_all(okm, sizeof okm, CT_CANARY));
    ASSERT_EQ(ALKT_OK, alkt_hkdf_expand(okm, 255 * 32, prk, info, sizeof info));
    ASSERTm("RFC 5869 test case 1 OKM as the prefix", ct_eq_hex(okm,
        "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
        "34007208d5b887185865"));
    ASSERTm("okm[8160] written", okm[255 * 32] == CT_CANARY);
    alkt_sha256(okm, 255 * 32, digest);
    ASSERTm("SHA-256 of the 8160 bytes", ct_eq_hex(digest,
        "06ce7419405a88a66ba5c9795579cb05130c85101924d187552a0f7f57deb091"));
    PASS();
}

/* ---- alkt_aead_seal against testkit/aead_ref.h ---------------------------- */

#define CT_DIFF_SEED 0x616c6b7463727970u /* "alktcryp" */
#define CT_DIFF_CASES 320
#define CT_DIFF_MAX 65536

static void ct_fill(uint64_t *s, unsigned char *p, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        p[i] = (unsigned char)(alksim_splitmix64(s) & 0xffu);
}

/* The reference itself against RFC 8439 2.8.2 and A.5 first, so that a
 * disagreement below is the library's. */
static enum greatest_test_res ct_check_reference(void)
{
    unsigned char key[32], nonce[12], aad[12], plain[CT_A5_LEN],
        out[CT_A5_LEN + 16];
    ct_hex(key, CT_A282_KEY);
    ct_hex(nonce, CT_A282_NONCE);
    ct_hex(aad, CT_A282_AAD);
    ct_hex(plain, CT_A282_PLAIN);
    aref_seal(out, key, nonce, aad, 12, plain, 114);
    ASSERTm("aead_ref.h: 2.8.2 ciphertext", ct_eq_hex(out, CT_A282_CIPHER));
    ASSERTm("aead_ref.h: 2.8.2 tag", ct_eq_hex(out + 114, CT_A282_TAG));
    ct_hex(key, CT_A5_KEY);
    ct_hex(nonce, CT_A5_NONCE);
    ct_hex(aad, CT_A5_AAD);
    ct_hex(plain, CT_A5_PLAIN);
    aref_seal(out, key, nonce, aad, 12, plain, CT_A5_LEN);
    ASSERTm("aead_ref.h: A.5 ciphertext", ct_eq_hex(out, CT_A5_CIPHER));
    ASSERTm("aead_ref.h: A.5 tag", ct_eq_hex(out + CT_A5_LEN, CT_A5_TAG));
    PASS();
}

/* CT_DIFF_CASES drawn (key, nonce, aad of 0..64 bytes, plaintext) with a
 * fixed seed: the lengths 0, 1, 15, 16, 17, 63, 64, 65, 4095 and 65536,
 * then random ones (some plaintexts all 0x00 or all 0xff). Each: seal ==
 * aref_seal; seal in place gives the same bytes; open (to another buffer,
 * writing exactly len bytes, and in place) gives the plaintext back; one
 * drawn bit flipped is refused with out untouched. */
TEST crypto_aead_matches_reference(void)
{
    static const size_t fixed_len[] = {0, 1, 15, 16, 17, 63, 64, 65, 4095,
                                       65536};
    static const size_t fixed_aad[] = {0, 64, 1, 16, 15, 17, 63, 0, 12, 64};
    static unsigned char plain[CT_DIFF_MAX], lib[CT_DIFF_MAX + 16],
        ref[CT_DIFF_MAX + 16], buf[CT_DIFF_MAX + 16], back[CT_DIFF_MAX + 16];
    static char msg[96];
    unsigned char key[32], nonce[12], aad[64];
    uint64_t s = CT_DIFF_SEED;
    size_t c;
    CHECK_CALL(ct_check_reference());
    for (c = 0; c < CT_DIFF_CASES; c++) {
        size_t len, aad_len, bit;
        uint64_t r = alksim_splitmix64(&s);
        if (c < sizeof fixed_len / sizeof fixed_len[0]) {
            len = fixed_len[c];
            aad_len = fixed_aad[c];
        } else {
            len = (size_t)(r % (r % 10 < 7 ? 301u : 3001u));
            aad_len = (size_t)((r >> 32) % 65u);
        }
        ct_fill(&s, key, sizeof key);
        ct_fill(&s, nonce, sizeof nonce);
        ct_fill(&s, aad, aad_len);
        switch ((r >> 48) % 8u) {
        case 0: memset(plain, 0x00, len); break;
        case 1: memset(plain, 0xff, len); break;
        default: ct_fill(&s, plain, len); break;
        }
        snprintf(msg, sizeof msg, "AEAD case %u: len %u, aad_len %u",
                 (unsigned)c, (unsigned)len, (unsigned)aad_len);

        alkt_aead_seal(lib, key, nonce, aad, aad_len, plain, len);
        aref_seal(ref, key, nonce, aad, aad_len, plain, len);
        ASSERT_MEM_EQm(msg, ref, lib, len + 16);
        memcpy(buf, plain, len);
        alkt_aead_seal(buf, key, nonce, aad, aad_len, buf, len);
        ASSERT_MEM_EQm(msg, ref, buf, len + 16);

        memset(back, CT_CANARY, len + 16);
        ASSERT_EQm(msg, ALKT_OK, alkt_aead_open(back, key, nonce, aad,
                                                aad_len, lib, len + 16));
        ASSERT_MEM_EQm(msg, plain, back, len);
        ASSERTm(msg, ct_all(back + len, 16, CT_CANARY));
        ASSERT_EQm(msg, ALKT_OK, alkt_aead_open(buf, key, nonce, aad, aad_len,
                                                buf, len + 16));
        ASSERT_MEM_EQm(msg, plain, buf, len);

        bit = (size_t)(alksim_splitmix64(&s) % (8u * (len + 16)));
        lib[bit / 8] ^= (unsigned char)(1u << (bit % 8));
        memset(back, CT_CANARY, len + 16);
        ASSERT_EQm(msg, ALKT_ERR_AUTH, alkt_aead_open(back, key, nonce, aad,
                                                      aad_len, lib, len + 16));
        ASSERTm(msg, ct_all(back, len + 16, CT_CANARY));
    }
    PASS();
}

/* The SIMD ChaCha20 (x86-64: 16 blocks at a time with AVX-512F, 8 with
 * AVX2, 4 with SSE2, whichever the CPU has, and the shorter ones for the
 * rest) against the portable code, on every length 0..2600 (so every mix
 * of the widths and a tail) and counters near the 32-bit wrap (a wide
 * step wraps inside its lanes as the portable counter does); where there
 * is no SIMD path both runs are the portable code. The portable build of
 * the whole suite is a gate stage (make crypto-portable). */
TEST crypto_chacha20_simd_matches_portable(void)
{
    static unsigned char in[2600], a[2600], b[2600];
    unsigned char key[32], nonce[12];
    uint64_t s = 7;
    size_t len;
    int c;
    ct_fill(&s, in, sizeof in);
    ct_fill(&s, key, sizeof key);
    ct_fill(&s, nonce, sizeof nonce);
    for (c = 0; c < 3; c++) {
        uint32_t counter = c == 0 ? 1u : c == 1 ? 0xfffffffeu : 0xfffffff0u;
        for (len = 0; len <= sizeof in; len++) {
            alkt_chacha20(a, in, len, key, nonce, counter);
#ifdef ALKT__CHACHA_SIMD
            alkt__chacha_portable_only = 1;
#endif
            alkt_chacha20(b, in, len, key, nonce, counter);
#ifdef ALKT__CHACHA_SIMD
            alkt__chacha_portable_only = 0;
#endif
            if (len) ASSERT_MEM_EQm("SIMD and portable ChaCha20 differ", a, b, len);
        }
    }
    PASS();
}

/* Poly1305 against aead_ref.h's schoolbook big numbers on every length
 * 0..1100 (the four-block steps start at 256 bytes, the eight-lane ones at
 * 512, then single blocks and the padded tail), with drawn keys, and with
 * the keys and messages that carry the most: r and s all ones (clamped),
 * messages all 0xff, and all zero. On x86-64 three times: the eight IFMA
 * lanes (when the CPU has AVX-512 IFMA) with AVX2 below 512 bytes, the
 * eight AVX-512F lanes (alkt__poly_no_ifma; when the CPU has AVX-512F),
 * and the scalar 44-bit limbs; the portable build (make crypto-portable)
 * runs the 26-bit limbs. */
static void poly_paths(int c)
{
#ifdef ALKT__CHACHA_SIMD
    alkt__chacha_portable_only = c >= 8;
#endif
#ifdef ALKT__CHACHA_AVX2
    alkt__poly_no_ifma = c >= 4 && c < 8;
#endif
    (void)c;
}

TEST crypto_poly1305_matches_reference(void)
{
    static unsigned char msg[1101];
    unsigned char key[32], tag[16], ref[16];
    uint64_t s = 0x706f6c79u; /* "poly" */
    size_t len;
    int c;
    for (c = 0; c < 12; c++) {
        poly_paths(c);
        switch (c % 4) {
        case 0: ct_fill(&s, key, sizeof key); ct_fill(&s, msg, sizeof msg); break;
        case 1: memset(key, 0xff, sizeof key); memset(msg, 0xff, sizeof msg); break;
        case 2: ct_fill(&s, key, sizeof key); memset(msg, 0xff, sizeof msg); break;
        default: memset(key, 0xff, sizeof key); memset(msg, 0, sizeof msg); break;
        }
        /* (without IFMA, only the lengths the eight lanes take) */
        for (len = c >= 4 && c < 8 ? 512 : 0; len < sizeof msg; len++) {
            alkt_poly1305(tag, msg, len, key);
            aref_poly1305(ref, msg, len, key);
            if (memcmp(ref, tag, 16)) {
                poly_paths(0);
                FAILm("Poly1305 differs from aead_ref.h");
            }
        }
    }
    poly_paths(0);
    PASS();
}

/* The field's encoding is canonical: values from p to 2^255 - 1 (what a
 * u-coordinate may be on the wire, and what a computation's last
 * reduction can leave) come out reduced by p. DH outputs that land there
 * are ~2^-250 rare, so no vector reaches this. */
TEST crypto_x25519_field_encoding_is_canonical(void)
{
    static const struct { const char *in, *out; } v[] = {
        /* p = 2^255 - 19 -> 0 */
        {"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
         "0000000000000000000000000000000000000000000000000000000000000000"},
        /* p + 1 -> 1 */
        {"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
         "0100000000000000000000000000000000000000000000000000000000000000"},
        /* 2^255 - 1 = p + 18 -> 18 */
        {"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
         "1200000000000000000000000000000000000000000000000000000000000000"},
        /* p - 1 stays */
        {"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
         "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"},
        /* bit 255 is not part of the value: 2^255 + 5 -> 5 */
        {"0500000000000000000000000000000000000000000000000000000000000080",
         "0500000000000000000000000000000000000000000000000000000000000000"},
    };
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; i++) {
        unsigned char in[32], want[32], got[32];
        alkt__fe f;
        ct_hex(in, v[i].in);
        ct_hex(want, v[i].out);
        alkt__fe_load(f, in);
        alkt__fe_store(got, f);
        ASSERT_MEM_EQm(v[i].in, want, got, 32);
    }
    PASS();
}

/* The same value with its limbs not carried - the top limb past its
 * width (its excess folded back as 19 per 2^255), or one limb a full
 * width over and the next one less - stores as the carried one does. */
TEST crypto_x25519_field_store_takes_uncarried_limbs(void)
{
#ifdef ALKT__FE51
    static const unsigned w[5] = {51, 51, 51, 51, 51};
#else
    static const unsigned w[10] = {26, 25, 26, 25, 26, 25, 26, 25, 26, 25};
#endif
    uint64_t s = 11;
    int round, i;
    for (round = 0; round < 64; round++) {
        unsigned char in[32], want[32], got[32];
        alkt__fe f, g;
        ct_fill(&s, in, sizeof in);
        in[31] &= 0x3f;   /* below p */
        if (round < 8) {  /* and near 2^255: p - 1 ... 2^255 - 1, carries
                             running through every limb */
            memset(in, 0xff, sizeof in);
            in[31] = 0x7f;
            in[0] = (unsigned char)(0xec + 2 * round);
        }
        in[0] |= 0x20;    /* limb 0 >= 32: room for the -19 below */
        alkt__fe_load(f, in);
        alkt__fe_store(want, f);
        if (round >= 8) ASSERT_MEM_EQ(in, want, 32);
        for (i = 0; i < ALKT__FE_LIMBS; i++) {
            memcpy(g, f, sizeof g);
            if (i == ALKT__FE_LIMBS - 1) {
                g[i] += (uint64_t)1 << w[i];   /* + 2^255 ... */
                g[0] -= 19;                    /* ... - 19: the same value */
            } else {
                if (g[i + 1] == 0) continue;
                g[i] += (uint64_t)1 << w[i];
                g[i + 1] -= 1;
            }
            alkt__fe_store(got, g);
            ASSERT_MEM_EQm("an uncarried limb changed the encoding", want, got, 32);
        }
    }
    PASS();
}

SUITE(alkt_crypto_suite)
{
    RUN_TEST(crypto_x25519_field_encoding_is_canonical);
    RUN_TEST(crypto_x25519_field_store_takes_uncarried_limbs);
    RUN_TEST(crypto_chacha20_simd_matches_portable);
    RUN_TEST(crypto_chacha20_block_rfc8439_2_3_2);
    RUN_TEST(crypto_chacha20_encrypt_rfc8439_2_4_2);
    RUN_TEST(crypto_poly1305_rfc8439_2_5_2);
    RUN_TEST(crypto_poly1305_keygen_rfc8439_2_6_2_a4);
    RUN_TEST(crypto_aead_seal_rfc8439_2_8_2);
    RUN_TEST(crypto_chacha20_block_rfc8439_a1);
    RUN_TEST(crypto_chacha20_encrypt_rfc8439_a2);
    RUN_TEST(crypto_poly1305_rfc8439_a3);
    RUN_TEST(crypto_poly1305_matches_reference);
    RUN_TEST(crypto_aead_open_rfc8439_a5);
    RUN_TEST(crypto_x25519_rfc7748_5_2);
    RUN_TEST(crypto_x25519_iterated_rfc7748_5_2);
    RUN_TEST(crypto_x25519_dh_rfc7748_6_1);
    RUN_TEST(crypto_sha256_fips180_2);
    RUN_TEST(crypto_hmac_sha256_rfc4231);
    RUN_TEST(crypto_hkdf_rfc5869);
    RUN_TEST(crypto_hkdf_expand_length_limit);
    RUN_TEST(crypto_aead_matches_reference);
}

/* test_alktunnel_session.h - SHA-256 / HMAC vectors and the session:
 * the wire format frozen in hex, flow control, duplicate opens, forged
 * and replayed handshakes, resumption, deadlines, the memory formula. */
/* The frozen handshakes below were computed apart from this code
 * (tests/session_vectors.py: Python's hashlib and hmac, X25519 and
 * ChaCha20-Poly1305 written out from RFC 7748 and RFC 8439; with --v1 it
 * gives the values of the format before, as frozen then).
 * Plaintext: the AUTH frames are HMAC-SHA-256 under the secret of "alkt1
 * server" / "alkt1 client" || SHA-256(client HELLO frame || server HELLO
 * frame). */
#define T_SERVER_AUTH "0200002000000000" \
    "0b4afb979ee0c73230af700fe92a082fdcc50dcaad41cb3680aa289978aff9ce"
#define T_CLIENT_AUTH "0200002000000000" \
    "b412d03c18827df1dcb7921c832a137595b5f42528823118fc5ce961a46e43c4"
/* Encrypted: HELLOs carry X25519 public keys of SHA-256("alkt1 ephemeral"
 * || the caller's random bytes); the AUTH key is the last 32 bytes of
 * HKDF-Expand(HMAC(secret, "alkt1 keys" || H || X25519 shared), "alkt1
 * session keys", 96), the client->server key the first 32; then the
 * client's first two records (ACK 0, PING 1) sealed under counters 0, 1. */
#define T_SEALED_SERVER_HELLO_EPH \
    "050ad6eb43bcd4fa2c6c42a93b44ebdf49181041fe5b7c3141a6c0b84999d76c"
#define T_SEALED_SERVER_AUTH "0200002000000000" \
    "1fa9a55eda8684d4e1d0110f2c4af7c2eecf9b8beb90ed3f09051f7865aa0694"
#define T_SEALED_CLIENT_AUTH "0200002000000000" \
    "83522c9b1927a4aeeacfe5fb0140ffb21298c011299251cb8d0c2e86ef6f665c"
#define T_SEALED_ACK0 \
    "0010e108522519f8b7559002cee6422f0a99db22738681963914cd001e521bfc4af8"
#define T_SEALED_PING1 \
    "0010f5bfe6c65cd0cf44ec0199db1daba8a1ae78e257afacbe03906ce21d51b8ed59"
/* FIPS 180-4 / NIST examples and RFC 4231 section 4, as published; keys
 * of 63, 64 and 65 bytes around the block size (only a longer key is
 * hashed first), computed apart with Python's hmac module. */
typedef struct sha_vector {
    const char *name, *key, *data, *expected;
    size_t repeat, mac_len;
} sha_vector;
static const sha_vector sha_vectors[] = {
    {"SHA-256 FIPS 180-4 example: empty string",
     NULL,
     "",
     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", 1, 32},
    {"SHA-256 FIPS 180-4 example: \"abc\" (one block)",
     NULL,
     "616263",
     "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", 1, 32},
    {"SHA-256 FIPS 180-4 example: 448-bit message (two blocks)",
     NULL,
     "6162636462636465636465666465666765666768666768696768696a68696a6b696a6b6c6a6b6c6d6b6c6d6e6c6d6e6f6d6e6f706e6f7071",
     "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1", 1, 32},
    {"SHA-256 NIST example: 896-bit message",
     NULL,
     "61626364656667686263646566676869636465666768696a6465666768696a6b65666768696a6b6c666768696a6b6c6d6768696a6b6c6d6e68696a6b6c6d6e6f696a6b6c6d6e6f706a6b6c6d6e6f70716b6c6d6e6f7071726c6d6e6f707172736d6e6f70717273746e6f707172737475",
     "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1", 1, 32},
    {"SHA-256 NIST example: one million 'a' (0x61)",
     NULL,
     "61",
     "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0", 1000000, 32},
    {"SHA-256 of 55 bytes 'a' (the padding edge; Python hashlib)", NULL,
     "61", "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318", 55, 32},
    {"SHA-256 of 56 bytes 'a' (the padding edge; Python hashlib)", NULL,
     "61", "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a", 56, 32},
    {"SHA-256 of 119 bytes 'a' (the padding edge; Python hashlib)", NULL,
     "61", "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb", 119, 32},
    {"HMAC-SHA-256, a 63-byte key (Python hmac)",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e",
     "61206b6579206f662065786163746c792074686520626c6f636b2073697a65",
     "1481e09753ca0e930c0e9602e3afc5d091a8e141e957de5c557fc02a7c059942", 1, 32},
    {"HMAC-SHA-256, a 64-byte key (Python hmac)",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f",
     "61206b6579206f662065786163746c792074686520626c6f636b2073697a65",
     "0f5adbdf4f41a2fa3fc805c46f93e12e2ffe7172e9fbec8278f60a0f5645f053", 1, 32},
    {"HMAC-SHA-256, a 65-byte key (Python hmac)",
     "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f40",
     "61206b6579206f662065786163746c792074686520626c6f636b2073697a65",
     "8018f48a690c77e540e63186ed8e43d4bcf88c44cc46b28d2a371e1df6c72c57", 1, 32},
    {"HMAC-SHA-256 RFC 4231 test case 1",
     "0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b0b",
     "4869205468657265",
     "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7", 1, 32},
    {"HMAC-SHA-256 RFC 4231 test case 2",
     "4a656665",
     "7768617420646f2079612077616e7420666f72206e6f7468696e673f",
     "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843", 1, 32},
    {"HMAC-SHA-256 RFC 4231 test case 3",
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd",
     "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe", 1, 32},
    {"HMAC-SHA-256 RFC 4231 test case 4",
     "0102030405060708090a0b0c0d0e0f10111213141516171819",
     "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
     "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b", 1, 32},
    {"HMAC-SHA-256 RFC 4231 test case 5 (truncated to 128 bits)",
     "0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c0c",
     "546573742057697468205472756e636174696f6e",
     "a3b6167473100ee06e0c796c2955552b", 1, 16},
    {"HMAC-SHA-256 RFC 4231 test case 6",
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "54657374205573696e67204c6172676572205468616e20426c6f636b2d53697a65204b6579202d2048617368204b6579204669727374",
     "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54", 1, 32},
    {"HMAC-SHA-256 RFC 4231 test case 7",
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "5468697320697320612074657374207573696e672061206c6172676572207468616e20626c6f636b2d73697a65206b657920616e642061206c6172676572207468616e20626c6f636b2d73697a6520646174612e20546865206b6579206e6565647320746f20626520686173686564206265666f7265206265696e6720757365642062792074686520484d414320616c676f726974686d2e",
     "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2", 1, 32},
};

static size_t hex_decode(const char *hex, unsigned char *out, size_t cap)
{
    size_t n = strlen(hex) / 2, i;
    for (i = 0; i < n && i < cap; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
    return n;
}

static void hex_encode(const unsigned char *p, size_t n, char *out)
{
    size_t i;
    for (i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", p[i]);
    out[2 * n] = 0;
}

static enum greatest_test_res t_sha_vectors(void)
{
    size_t i;
    for (i = 0; i < sizeof sha_vectors / sizeof sha_vectors[0]; i++) {
        const sha_vector *v = &sha_vectors[i];
        unsigned char key[256], data[256], out[32], split[32];
        char hex[65];
        size_t kn = v->key ? hex_decode(v->key, key, sizeof key) : 0;
        size_t dn = hex_decode(v->data, data, sizeof data), r, cut;
        if (!v->key) {
            alkt_sha256_ctx c;
            alkt_sha256_init(&c);
            for (r = 0; r < v->repeat; r++) alkt_sha256_update(&c, data, dn);
            alkt_sha256_final(&c, out);
            if (v->repeat == 1) {
                alkt_sha256(data, dn, split);
                ASSERT_MEM_EQ(out, split, 32);
            }
        } else {
            alkt_hmac_sha256(key, kn, data, dn, out);
            /* the streaming form, cut at every place */
            for (cut = 0; cut <= dn; cut++) {
                alkt_hmac_sha256_ctx m;
                alkt_hmac_sha256_init(&m, key, kn);
                alkt_hmac_sha256_update(&m, data, cut);
                alkt_hmac_sha256_update(&m, data + cut, dn - cut);
                alkt_hmac_sha256_final(&m, split);
                ASSERT_MEM_EQ(out, split, 32);
            }
        }
        hex_encode(out, v->mac_len, hex);
        ASSERT_STR_EQm(v->name, v->expected, hex);
    }
    PASS();
}

/* The vectors through the portable code and, when the CPU has them, the
 * SHA extensions; then both on 2,000 drawn messages, every length 0..1000
 * twice, compared with each other. */
TEST sha256_and_hmac_vectors(void)
{
    static unsigned char msg[1008];
    unsigned char a[32], b[32];
    uint32_t x = 12345;
    size_t n, i;
    int way;
    for (way = 0; way < 2; way++) {
#if ALKT__SHA_NI
        alkt__sha256_portable_only = way;
#else
        if (way) break;
#endif
        CHECK_CALL(t_sha_vectors());
    }
#if ALKT__SHA_NI
    for (i = 0; i < sizeof msg; i++) {
        x = x * 1103515245u + 12345u;
        msg[i] = (unsigned char)(x >> 16);
    }
    for (n = 0; n < 2000; n++) {
        alkt__sha256_portable_only = 1;
        alkt_sha256(msg + n % 7, n / 2, a);
        alkt__sha256_portable_only = 0;
        alkt_sha256(msg + n % 7, n / 2, b);
        ASSERT_MEM_EQ(a, b, 32);
    }
    printf("    (SHA-256 compared with the SHA extensions: %s)\n",
           alkt__sha256_have_ni() ? "present" : "absent, portable twice");
    {   /* the detection agrees with the kernel's view of the CPU */
        FILE *f = fopen("/proc/cpuinfo", "r");
        if (f) {
            static char line[8192];
            int flags_seen = 0, sha = 0;
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "flags", 5) == 0) {
                    flags_seen = 1;
                    sha = strstr(line, " sha_ni") != NULL;
                    break;
                }
            fclose(f);
            if (flags_seen && !getenv("ALK_UNDER_VALGRIND"))
                ASSERT_EQm("cpuid's SHA bit vs /proc/cpuinfo", sha,
                           alkt__sha256_have_ni());
        }
    }
#endif
    (void)a; (void)b; (void)x; (void)n; (void)i; (void)msg;
    PASS();
}

TEST ct_equal_compares_everything(void)
{
    unsigned char a[32], b[32];
    size_t i;
    memset(a, 0x5a, sizeof a);
    memcpy(b, a, sizeof b);
    ASSERT_EQ(1, alkt_ct_equal(a, b, 32));
    ASSERT_EQ(1, alkt_ct_equal(a, b, 0));
    for (i = 0; i < 32; i++) {
        b[i] ^= 0x80;
        ASSERT_EQ(0, alkt_ct_equal(a, b, 32));
        b[i] ^= 0x80;
    }
    PASS();
}

/* ---- session ---------------------------------------------------------------- */
static const unsigned char t_secret[32] = "the control plane's secret 32 b";

typedef struct t_pair {
    alkt_session s[2];           /* 0 client, 1 server */
    unsigned char *mem[2];
    uint64_t now;
    unsigned char nonce;
} t_pair;

/* 1: the next t_init makes plaintext sessions (tests that read frames on
 * the wire); t_init resets it */
static int t_plain;
static uint64_t t_rekey;   /* rekey_records of the next t_init; reset */

static void t_config(alkt_session_config *c, int server)
{
    memset(c, 0, sizeof *c);
    c->plaintext = t_plain;
    c->rekey_records = t_rekey;
    c->is_server = server;
    c->secret = t_secret;
    c->secret_len = sizeof t_secret;
    c->identity = server ? "gw" : "laptop";
    c->identity_len = server ? 2 : 6;
    c->max_channels = 4;
    c->channel_window = 4096;
    c->max_frame = 1024;
    c->log_size = 16384;
}

static int t_init(t_pair *p)
{
    int k;
    memset(p, 0, sizeof *p);
    p->now = 5000000000ull;
    for (k = 0; k < 2; k++) {
        alkt_session_config c;
        size_t need;
        t_config(&c, k);
        need = alkt_session_mem_size(&c);
        p->mem[k] = (unsigned char *)malloc(need);
        if (!p->mem[k] ||
            alkt_session_init(&p->s[k], &c, p->mem[k], need, p->now) != ALKT_OK) {
            t_plain = 0;
            t_rekey = 0;
            return 0;
        }
    }
    t_plain = 0;
    t_rekey = 0;
    return 1;
}

/* A plaintext pair: frames on the wire as they are. */
static int t_init_plain(t_pair *p)
{
    t_plain = 1;
    return t_init(p);
}

static void t_free(t_pair *p)
{
    free(p->mem[0]);
    free(p->mem[1]);
}

static void t_connect(t_pair *p)
{
    unsigned char n[ALKT_NONCE_SIZE];
    int k;
    for (k = 1; k >= 0; k--) {
        memset(n, ++p->nonce, sizeof n);
        alkt_session_connect(&p->s[k], p->now, n);
    }
}

/* Everything k has to send, into the other side. */
static size_t t_move(t_pair *p, int k)
{
    unsigned char buf[2048];
    size_t n, total = 0;
    while ((n = alkt_session_poll_transmit(&p->s[k], buf, sizeof buf)) > 0) {
        alkt_session_handle_input(&p->s[1 - k], buf, n, p->now);
        total += n;
    }
    return total;
}

static void t_settle(t_pair *p)
{
    int i;
    for (i = 0; i < 50; i++)
        if (!t_move(p, 0) + !t_move(p, 1) == 2) break;
}

static void t_drain(t_pair *p)
{
    alkt_event ev;
    while (alkt_session_poll_event(&p->s[0], &ev)) {
    }
    while (alkt_session_poll_event(&p->s[1], &ev)) {
    }
}

/* The next event of side k (ALKT_EV_NONE when there is none). */
static alkt_event t_event(t_pair *p, int k)
{
    alkt_event ev;
    if (!alkt_session_poll_event(&p->s[k], &ev)) memset(&ev, 0, sizeof ev);
    return ev;
}

static alkt_open_params t_params(uint16_t port)
{
    alkt_open_params o;
    (void)alkt_open_params_direct(&o, ALKT_SUBSTRATE_TCP, "db.internal", 11, port);
    return o;
}

/* Established pair with channel *id open from the client. */
static int t_open(t_pair *p, uint32_t *id)
{
    alkt_open_params o = t_params(5432);
    alkt_event ev;
    t_connect(p);
    t_settle(p);
    if (t_event(p, 0).type != ALKT_EV_ESTABLISHED) return 0;
    if (t_event(p, 1).type != ALKT_EV_ESTABLISHED) return 0;
    if (alkt_channel_open(&p->s[0], &o, id) != ALKT_OK) return 0;
    t_settle(p);
    ev = t_event(p, 1);
    if (ev.type != ALKT_EV_OPEN_REQUEST || ev.channel != *id) return 0;
    if (alkt_channel_accept(&p->s[1], *id, NULL) != ALKT_OK) return 0;
    t_settle(p);
    ev = t_event(p, 0);
    return ev.type == ALKT_EV_OPENED && ev.channel == *id;
}

/* Established pair with all four channels open from the client, events
 * drained: ids[0..3]. */
static int t_open_all(t_pair *p, uint32_t ids[4])
{
    alkt_event ev;
    int k;
    if (!t_open(p, &ids[0])) return 0;
    for (k = 1; k < 4; k++) {
        alkt_open_params o = t_params(5432);
        if (alkt_channel_open(&p->s[0], &o, &ids[k]) != ALKT_OK) return 0;
    }
    t_move(p, 0);
    while (alkt_session_poll_event(&p->s[1], &ev))
        if (ev.type == ALKT_EV_OPEN_REQUEST &&
            alkt_channel_accept(&p->s[1], ev.channel, NULL) != ALKT_OK)
            return 0;
    t_settle(p);
    t_drain(p);
    return 1;
}

/* The wire format, frozen: the first bytes each side sends with fixed
 * nonces and secret. A change here breaks every deployed peer. */
TEST session_handshake_bytes_are_frozen(void)
{
    t_pair p;
    unsigned char buf[512];
    char hex[1025];
    size_t n;
    ASSERT(t_init_plain(&p));
    ASSERT_EQ(NULL, alkt_session_peer_identity(NULL, NULL));
    ASSERT_EQ(NULL, alkt_session_peer_identity(&p.s[0], NULL));
    t_connect(&p);
    n = alkt_session_poll_transmit(&p.s[0], buf, sizeof buf);
    hex_encode(buf, n, hex);
    /* HELLO: type 01, flags 0, length 0x00bb, channel 0; "ALKT", versions
     * 2..2, role 1 (client), flags 2 (plaintext, no resume), nonce =
     * SHA-256("alkt1 nonce" || 32 x 02), session id 0, frames 0, proof 0,
     * max frame 1024, log 16384, 4 channels, no ephemeral key, freshness
     * 5 s (now, no epoch), identity "laptop", then HMAC(secret, "alkt2
     * hello" || the frame up to the MAC) */
    ASSERT_STR_EQ("010000bb00000000414c4b5402020102"
                  "ec4dda100844b15c3fc504e43c33117303368de8d42d132522662651acc9b674"
                  "00000000000000000000000000000000" "0000000000000000"
                  "0000000000000000000000000000000000000000000000000000000000000000"
                  "00000400" "00004000" "00000004"
                  "0000000000000000000000000000000000000000000000000000000000000000"
                  "000000012a05f200" "06" "6c6170746f70"
                  "b350f3c88f50e7c81d937e6478d229b4adaa8339e07d7e2f961dba70f8eb7457", hex);
    alkt_session_handle_input(&p.s[1], buf, n, p.now);
    n = alkt_session_poll_transmit(&p.s[1], buf, sizeof buf);
    ASSERT_EQ(8 + 151 + 8 + 32, n);
    hex_encode(buf + 8 + 151, 40, hex);
    /* AUTH: the server's MAC over SHA-256(client HELLO || server HELLO) */
    ASSERT_STR_EQ(T_SERVER_AUTH, hex);
    alkt_session_handle_input(&p.s[0], buf, n, p.now);
    n = alkt_session_poll_transmit(&p.s[0], buf, sizeof buf);
    hex_encode(buf, 40, hex);
    ASSERT_STR_EQ(T_CLIENT_AUTH, hex);
    /* the server's identity, proved: the client knows it; the server does
     * not know the client's until the client's AUTH is in */
    {
        size_t il = 0;
        const char *who = alkt_session_peer_identity(&p.s[0], &il);
        ASSERT(who != NULL);
        ASSERT_EQ(2, il);
        ASSERT_MEM_EQ("gw", who, 2);
        ASSERT_EQ(NULL, alkt_session_peer_identity(&p.s[1], &il));
        alkt_session_handle_input(&p.s[1], buf, n, p.now);
        who = alkt_session_peer_identity(&p.s[1], &il);
        ASSERT(who != NULL);
        ASSERT_EQ(6, il);
        ASSERT_MEM_EQ("laptop", who, 6);
    }
    t_free(&p);
    PASS();
}

TEST session_moves_bytes_and_half_closes(void)
{
    t_pair p;
    uint32_t id;
    unsigned char out[3000], in[3000];
    alkt_event ev;
    ptrdiff_t n;
    int eof = 7, i;
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    ASSERT_EQ(1u, id);                       /* the client's ids are odd */
    for (i = 0; i < 3000; i++) out[i] = (unsigned char)(i * 7);
    n = alkt_channel_send(&p.s[0], id, out, sizeof out);
    ASSERT_EQ(3000, n);
    /* an empty send is no EOF */
    ASSERT_EQ(0, alkt_channel_send(&p.s[0], id, out, 0));
    t_settle(&p);
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_READABLE, ev.type);
    n = alkt_channel_recv(&p.s[1], id, in, sizeof in, &eof);
    ASSERT_EQ(3000, n);
    ASSERT_EQ(0, eof);
    ASSERT_MEM_EQ(out, in, 3000);
    /* EOF one way; the other way still carries data */
    {
        alkt_channel_info info;
        ASSERT_EQ(ALKT_OK, alkt_channel_info_get(&p.s[0], id, &info));
        ASSERT_EQ(0, info.write_closed);
        ASSERT_EQ(ALKT_OK, alkt_channel_shutdown_write(&p.s[0], id));
        ASSERT_EQ(ALKT_OK, alkt_channel_info_get(&p.s[0], id, &info));
        ASSERT_EQ(1, info.write_closed);
        ASSERT_EQ(0, info.peer_eof);
        ASSERT_EQ(3000u, info.bytes_sent);
    }
    ASSERT_EQ(ALKT_ERR_STATE, (int)alkt_channel_send(&p.s[0], id, out, 1));
    t_settle(&p);
    n = alkt_channel_recv(&p.s[1], id, in, sizeof in, &eof);
    ASSERT_EQ(0, n);
    ASSERT_EQ(1, eof);
    ASSERT_EQ(5, (int)alkt_channel_send(&p.s[1], id, "reply", 5));
    ASSERT_EQ(ALKT_OK, alkt_channel_shutdown_write(&p.s[1], id));
    t_settle(&p);
    n = alkt_channel_recv(&p.s[0], id, in, sizeof in, &eof);
    ASSERT_EQ(5, n);
    ASSERT_EQ(1, eof);
    /* both directions over: the channel is done on both sides */
    do { ev = t_event(&p, 0); } while (ev.type == ALKT_EV_READABLE ||
                                       ev.type == ALKT_EV_WRITABLE);
    ASSERT_EQ(ALKT_EV_CHANNEL_DONE, ev.type);
    ASSERT_EQ(0, ev.code);                   /* two EOFs: no code */
    do { ev = t_event(&p, 1); } while (ev.type == ALKT_EV_READABLE ||
                                       ev.type == ALKT_EV_WRITABLE);
    ASSERT_EQ(ALKT_EV_CHANNEL_DONE, ev.type);
    ASSERT_EQ(0, ev.code);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, (int)alkt_channel_send(&p.s[0], id, out, 1));
    t_free(&p);
    PASS();
}

/* A refusal reaches the opener with its code and reason, once. */
TEST session_refusal_carries_code_and_reason(void)
{
    t_pair p;
    alkt_open_params o = t_params(25);
    alkt_channel_info info;
    alkt_event ev;
    uint32_t id;
    ASSERT(t_init_plain(&p));
    t_connect(&p);
    t_settle(&p);
    t_drain(&p);
    ASSERT_EQ(ALKT_OK, alkt_channel_open(&p.s[0], &o, &id));
    t_settle(&p);
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_OPEN_REQUEST, ev.type);
    ASSERT_EQ(ALKT_OK, alkt_channel_info_get(&p.s[1], id, &info));
    ASSERT_EQ(25, info.params.port);
    ASSERT_STR_EQ("db.internal", info.params.host.name);
    ASSERT_EQ(ALKT_OK, alkt_channel_refuse(&p.s[1], id, 403,
                                           "not authorized\nfor port 25\x1f\x7f ~"));
    ASSERT_EQ(ALKT_ERR_STATE, alkt_channel_accept(&p.s[1], id, NULL));
    {   /* on the wire: the reason in printable ASCII only */
        unsigned char w[1024];
        size_t wn = alkt_session_poll_transmit(&p.s[1], w, sizeof w), at = 0, k;
        int seen = 0;
        while (at + 8 <= wn) {
            size_t len = (size_t)w[at + 2] << 8 | w[at + 3];
            if (w[at] == ALKT_FRAME_OPEN_ERR) {
                seen = 1;
                ASSERT_EQ(2 + 30, len);
                for (k = 2; k < len; k++)
                    ASSERT(w[at + 8 + k] >= 0x20 && w[at + 8 + k] < 0x7f);
            }
            at += 8 + len;
        }
        ASSERT_EQ(1, seen);
        ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[0], w, wn, p.now));
    }
    t_settle(&p);
    ev = t_event(&p, 0);
    ASSERT_EQ(ALKT_EV_OPEN_FAILED, ev.type);
    ASSERT_EQ(403, ev.code);
    ASSERT_EQ(ALKT_OK, alkt_channel_info_get(&p.s[0], id, &info));
    /* every byte outside 0x20..0x7e is '?', on the wire already */
    ASSERT_STR_EQ("not authorized?for port 25?? ~", info.reason);
    ev = t_event(&p, 0);
    ASSERT_EQ(ALKT_EV_CHANNEL_DONE, ev.type);
    ASSERT_EQ(ALKT_EV_NONE, t_event(&p, 0).type);
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, alkt_channel_info_get(&p.s[0], id, &info));
    t_free(&p);
    PASS();
}

/* A peer can never make us hold more than the window: the sender stops at
 * its credit, and a frame past it ends the session with FLOW_CONTROL. */
TEST session_window_is_enforced(void)
{
    t_pair p;
    uint32_t id;
    unsigned char big[10000], frame[8 + 1000];
    alkt_event ev;
    int rc;
    ASSERT(t_init_plain(&p));
    ASSERT(t_open(&p, &id));
    memset(big, 1, sizeof big);
    ASSERT_EQ(4096, (int)alkt_channel_send(&p.s[0], id, big, sizeof big));
    ASSERT_EQ(0, (int)alkt_channel_send(&p.s[0], id, big, 1));
    t_settle(&p);
    /* nothing read on the server: no more credit, whatever is sent */
    ASSERT_EQ(0, (int)alkt_channel_send(&p.s[0], id, big, 1));
    {
        alkt_channel_info info;
        ASSERT_EQ(ALKT_OK, alkt_channel_info_get(&p.s[1], id, &info));
        ASSERT_EQ((size_t)4096, info.readable);
    }
    /* a forged DATA frame past the credit */
    frame[0] = ALKT_FRAME_DATA;
    frame[1] = 0;
    frame[2] = 0x03;
    frame[3] = 0xe8;
    frame[4] = frame[5] = frame[6] = 0;
    frame[7] = (unsigned char)id;
    memset(frame + 8, 2, 1000);
    rc = alkt_session_handle_input(&p.s[1], frame, sizeof frame, p.now);
    ASSERT_EQ(ALKT_ERR_FLOW_CONTROL, rc);
    do { ev = t_event(&p, 1); } while (ev.type != ALKT_EV_NONE &&
                                       ev.type != ALKT_EV_CLOSED);
    ASSERT_EQ(ALKT_EV_CLOSED, ev.type);
    ASSERT_EQ(ALKT_ERR_FLOW_CONTROL, ev.code);
    t_free(&p);
    PASS();
}

/* A second OPEN of a live id is refused and the live channel goes on.
 * The peer's own stream carries it (a frame pushed into its resend log,
 * so that the frame count both sides keep still agrees). */
TEST session_duplicate_open_keeps_the_live_channel(void)
{
    t_pair p;
    uint32_t id;
    unsigned char in[16];
    char json[128];
    alkt_open_params o = t_params(22);
    alkt_error err;
    ptrdiff_t n = alkt_open_params_encode(&o, json, sizeof json, &err);
    alkt_event ev;
    int eof;
    ASSERT(n > 0);
    ASSERT(t_init_plain(&p));
    ASSERT(t_open(&p, &id));
    t_drain(&p);
    ASSERT_EQ(1, alkt__log_frame(&p.s[0], ALKT_FRAME_OPEN, id, json,
                                 (size_t)n, NULL, 0));
    t_move(&p, 0);
    /* the server answers the duplicate with OPEN_ERR (duplicate) for it */
    {
        unsigned char w[1024];
        size_t wn = alkt_session_poll_transmit(&p.s[1], w, sizeof w), at = 0;
        int refused = 0;
        while (at + 8 <= wn) {
            size_t len = (size_t)w[at + 2] << 8 | w[at + 3];
            uint32_t ch = (uint32_t)w[at + 4] << 24 | (uint32_t)w[at + 5] << 16 |
                          (uint32_t)w[at + 6] << 8 | w[at + 7];
            if (w[at] == ALKT_FRAME_OPEN_ERR && ch == id && len >= 2 &&
                (w[at + 8] << 8 | w[at + 9]) == ALKT__CODE_DUPLICATE)
                refused++;
            at += 8 + len;
        }
        ASSERT_EQ(wn, at);
        ASSERT_EQ(1, refused);
        ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[0], w, wn, p.now));
    }
    t_settle(&p);
    /* no second request on the server, no event at all on the client */
    ASSERT_EQ(ALKT_EV_NONE, t_event(&p, 1).type);
    ASSERT_EQ(ALKT_EV_NONE, t_event(&p, 0).type);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
    ASSERT_EQ(4, (int)alkt_channel_send(&p.s[0], id, "live", 4));
    t_settle(&p);
    ASSERT_EQ(4, (int)alkt_channel_recv(&p.s[1], id, in, sizeof in, &eof));
    ASSERT_MEM_EQ("live", in, 4);
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_READABLE, ev.type);
    t_free(&p);
    PASS();
}

/* A frame slipped into the byte stream by someone on the path breaks the
 * frame count: the sender sees an ACK for more frames than it sent. */
TEST session_injected_frame_is_detected(void)
{
    t_pair p;
    uint32_t id;
    unsigned char frame[8 + 4] = {ALKT_FRAME_WINDOW, 0, 0, 4, 0, 0, 0, 1,
                                  0, 0, 1, 0};
    alkt_event ev;
    ASSERT(t_init_plain(&p));
    ASSERT(t_open(&p, &id));
    t_drain(&p);
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], frame, sizeof frame,
                                                 p.now));
    t_settle(&p);
    do { ev = t_event(&p, 0); } while (ev.type != ALKT_EV_NONE &&
                                       ev.type != ALKT_EV_CLOSED);
    ASSERT_EQ(ALKT_EV_CLOSED, ev.type);
    ASSERT_EQ(ALKT_ERR_PROTOCOL, ev.code);
    t_free(&p);
    PASS();
}

/* Every HELLO field is checked where it arrives. The server first checks
 * what it can without knowing anything: the shape (magic, role, lengths),
 * then the MAC and the freshness - and to a HELLO that fails those it says
 * nothing at all (the connection just ends). A HELLO that proves the
 * secret has its fields checked next, and a bad one is answered with a
 * GOAWAY and its code (the test MACs such a HELLO again, as a client that
 * holds the secret but speaks otherwise would). */
TEST session_hello_fields_are_checked(void)
{
    static const struct {
        size_t at;
        unsigned char value;
        int code, remac;
    } bad[] = {
        {8 + 0, 'X', ALKT_ERR_PROTOCOL, 0},    /* magic */
        {8 + 3, 'X', ALKT_ERR_PROTOCOL, 0},
        {8 + 6, 2, ALKT_ERR_PROTOCOL, 0},      /* a "server" talking to us */
        {8 + 148, 0, ALKT_ERR_PROTOCOL, 0},    /* identity of 0 bytes */
        {8 + 148, 7, ALKT_ERR_PROTOCOL, 0},    /* identity longer than sent */
        {8 + 10, 0, ALKT_ERR_AUTH, 0},         /* the nonce: the MAC fails */
        {8 + 143, 2, ALKT_ERR_AUTH, 0},        /* the freshness: the MAC */
        {8 + 155 + 31, 0, ALKT_ERR_AUTH, 0},   /* the MAC's last byte */
        {8 + 4, 3, ALKT_ERR_VERSION, 1},       /* only version 3 and up */
        {8 + 5, 1, ALKT_ERR_VERSION, 1},       /* only version 1 */
        {8 + 7, 6, ALKT_ERR_PROTOCOL, 1},      /* an unknown flag */
        {8 + 7, 0, ALKT_ERR_CIPHER, 1},        /* encrypted, to a plaintext
                                                  server */
        {8 + 98, 0, ALKT_ERR_PROTOCOL, 1},     /* max_frame 0x0000_0000+.. < 256 */
        {8 + 96, 1, ALKT_ERR_PROTOCOL, 1},     /* max_frame past 16384 */
        {8 + 102, 0, ALKT_ERR_PROTOCOL, 1},    /* log smaller than 4 frames */
        {8 + 107, 0, ALKT_ERR_PROTOCOL, 1},    /* 0 channels */
        {8 + 106, 0x10, ALKT_ERR_PROTOCOL, 1}, /* 4100 channels */
    };
    size_t i;
    for (i = 0; i <= sizeof bad / sizeof bad[0]; i++) {
        t_pair p;
        unsigned char hello[512], out[64];
        size_t hn, on;
        int rc, code = i < sizeof bad / sizeof bad[0] ? bad[i].code : ALKT_ERR_PROTOCOL;
        alkt_event ev;
        ASSERT(t_init_plain(&p));
        t_connect(&p);
        hn = alkt_session_poll_transmit(&p.s[0], hello, sizeof hello);
        ASSERT_EQ(8 + 149 + 6 + 32, hn);
        if (i < sizeof bad / sizeof bad[0]) {
            hello[bad[i].at] = bad[i].value;
            if (bad[i].at == 8 + 106) hello[8 + 107] = 4;   /* 0x1004 */
            if (bad[i].remac)
                alkt__hello_mac(&p.s[0].key, hello + 8, hn - 8, hello + hn - 32);
        } else {
            hn--;                                /* one byte short */
            hello[3] = (unsigned char)(hello[3] - 1);
        }
        rc = alkt_session_handle_input(&p.s[1], hello, hn, p.now);
        ASSERTm("a bad HELLO field", code == rc);
        ASSERT_EQ(0, alkt_session_is_established(&p.s[1]));
        on = alkt_session_poll_transmit(&p.s[1], out, sizeof out);
        if (i < sizeof bad / sizeof bad[0] && bad[i].remac) {
            /* proven: a GOAWAY with the code, then the connection ends */
            ASSERT_EQ(10, on);
            ASSERT_EQ(ALKT_FRAME_GOAWAY, out[0]);
            ASSERT_EQ((unsigned)-code, (unsigned)(out[8] << 8 | out[9]));
        } else {
            ASSERT_EQ(0, on);   /* silence */
        }
        ev = t_event(&p, 1);
        ASSERT_EQ(ALKT_EV_DISCONNECTED, ev.type);
        ASSERT_EQ(code, ev.code);
        /* the floor moves for a proven HELLO only */
        ASSERT_EQ(i < sizeof bad / sizeof bad[0] && bad[i].remac ? p.now : 0,
                  alkt_session_peer_freshness(&p.s[1]));
        t_free(&p);
    }
    PASS();
}

/* Freshness: a server takes a client's HELLO only when it is fresher than
 * every one it accepted under the secret; a recorded HELLO, given again,
 * gets silence and costs nothing. The client's HELLOs are fresher each
 * time, even at the same now and across a session object made again. */
TEST session_hello_freshness_stops_replays(void)
{
    t_pair p;
    unsigned char hello[512], again[512], out[64];
    size_t hn, an;
    uint64_t fresh;
    ASSERT(t_init_plain(&p));
    t_connect(&p);
    hn = alkt_session_poll_transmit(&p.s[0], hello, sizeof hello);
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], hello, hn, p.now));
    fresh = alkt_session_peer_freshness(&p.s[1]);
    ASSERT_EQ(p.now, fresh);   /* no epoch: now */
    t_settle(&p);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[1]));
    t_free(&p);
    /* a new server object with the last freshness as its floor: the same
     * HELLO again is stale - nothing said, nothing kept */
    ASSERT(t_init_plain(&p));
    {
        alkt_session_config c;
        t_config(&c, 1);
        c.plaintext = 1;
        c.freshness_floor = fresh;
        ASSERT_EQ(ALKT_OK, alkt_session_init(&p.s[1], &c, p.mem[1],
                                             alkt_session_mem_size(&c), p.now));
        ASSERT_EQ(fresh, alkt_session_peer_freshness(&p.s[1]));
    }
    t_connect(&p);
    ASSERT_EQ(ALKT_ERR_STALE_HELLO, alkt_session_handle_input(&p.s[1], hello, hn, p.now));
    ASSERT_EQ(0, alkt_session_poll_transmit(&p.s[1], out, sizeof out));
    ASSERT_EQ(ALKT_ERR_STALE_HELLO, t_event(&p, 1).code);
    /* the client's next HELLO, at the same now: one fresher, taken */
    alkt_session_handle_disconnected(&p.s[0], p.now);
    t_drain(&p);
    {
        unsigned char n[ALKT_NONCE_SIZE];
        memset(n, 9, sizeof n);
        alkt_session_connect(&p.s[0], p.now, n);
        memset(n, 8, sizeof n);
        alkt_session_connect(&p.s[1], p.now, n);
    }
    an = alkt_session_poll_transmit(&p.s[0], again, sizeof again);
    ASSERT_EQ(hn, an);
    ASSERT_EQ(fresh + 1, alkt__get64(again + 8 + 140));
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], again, an, p.now));
    t_settle(&p);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[1]));
    ASSERT_EQ(fresh + 1, alkt_session_peer_freshness(&p.s[1]));
    t_free(&p);
    PASS();
}

/* A frame longer than our max_frame ends the session at its header, before
 * a byte of its payload is taken (the frame buffer is max_frame bytes). */
TEST session_oversize_frame_is_refused_at_its_header(void)
{
    static const unsigned types[] = {ALKT_FRAME_OPEN, ALKT_FRAME_DATA,
                                     ALKT_FRAME_PING};
    size_t i;
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        t_pair p;
        uint32_t id;
        unsigned char h[8];
        ASSERT(t_init_plain(&p));
        ASSERT(t_open(&p, &id));
        h[0] = (unsigned char)types[i];
        h[1] = 0;
        h[2] = 1024 >> 8;
        h[3] = 1;                            /* 1025: max_frame + 1 */
        h[4] = h[5] = h[6] = 0;
        h[7] = types[i] == ALKT_FRAME_PING ? 0 : 9;
        ASSERT_EQ(ALKT_ERR_FRAME_TOO_LARGE,
                  alkt_session_handle_input(&p.s[1], h, sizeof h, p.now));
        t_free(&p);
    }
    PASS();
}

TEST session_refuses_forged_handshakes(void)
{
    t_pair p, q;
    unsigned char hello[512], reply[512], auth[64];
    size_t hn, rn, an;
    int rc;
    alkt_event ev;
    ASSERT(t_init(&p));
    t_connect(&p);
    hn = alkt_session_poll_transmit(&p.s[0], hello, sizeof hello);
    alkt_session_handle_input(&p.s[1], hello, hn, p.now);
    rn = alkt_session_poll_transmit(&p.s[1], reply, sizeof reply);
    alkt_session_handle_input(&p.s[0], reply, rn, p.now);
    an = alkt_session_poll_transmit(&p.s[0], auth, sizeof auth);
    ASSERT_EQ(40, an);
    /* the MAC with one bit flipped */
    auth[20] ^= 1;
    rc = alkt_session_handle_input(&p.s[1], auth, an, p.now);
    ASSERT_EQ(ALKT_ERR_AUTH, rc);
    ASSERT_EQ(0, alkt_session_is_established(&p.s[1]));
    /* not a word back: whoever sent that AUTH may not be the client (a
     * GOAWAY sealed now would end the session at the client, which has
     * checked the server's AUTH and is up) */
    ASSERT_EQ(0, alkt_session_poll_transmit(&p.s[1], reply, sizeof reply));
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_DISCONNECTED, ev.type);
    ASSERT_EQ(ALKT_ERR_AUTH, ev.code);
    ASSERT_EQ(ALKT_EV_NONE, t_event(&p, 1).type);
    /* the client goes on: a new connection, and the session resumes (its
     * proof stands for the AUTH that was lost) */
    ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
    alkt_session_handle_disconnected(&p.s[0], p.now);
    t_drain(&p);
    t_connect(&p);
    t_settle(&p);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
    ASSERT_EQ(1, alkt_session_is_established(&p.s[1]));
    auth[20] ^= 1;
    t_free(&p);
    /* a recorded handshake replayed to a server with a new nonce (and no
     * freshness floor: one that forgot everything): its HELLO is taken,
     * but the AUTH it recorded is for another transcript */
    ASSERT(t_init(&q));
    q.nonce = 5;
    t_connect(&q);
    alkt_session_handle_input(&q.s[1], hello, hn, q.now);
    (void)alkt_session_poll_transmit(&q.s[1], reply, sizeof reply);
    rc = alkt_session_handle_input(&q.s[1], auth, an, q.now);
    ASSERT_EQ(ALKT_ERR_AUTH, rc);
    ASSERT_EQ(0, alkt_session_is_established(&q.s[1]));
    t_free(&q);
    /* a client with another secret: its HELLO proves nothing, and the
     * server says nothing to it - no HELLO, no AUTH, no GOAWAY: the
     * client learns only that the connection ended */
    ASSERT(t_init(&p));
    {
        alkt_session_config c;
        unsigned char other[sizeof t_secret];
        memcpy(other, t_secret, sizeof other);
        other[0] ^= 1;
        t_config(&c, 0);
        c.secret = other;
        ASSERT_EQ(ALKT_OK, alkt_session_init(&p.s[0], &c, p.mem[0],
                                             alkt_session_mem_size(&c), p.now));
    }
    t_connect(&p);
    hn = alkt_session_poll_transmit(&p.s[0], hello, sizeof hello);
    ASSERT_EQ(ALKT_ERR_AUTH, alkt_session_handle_input(&p.s[1], hello, hn, p.now));
    ASSERT_EQ(0, alkt_session_poll_transmit(&p.s[1], reply, sizeof reply));
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_DISCONNECTED, ev.type);
    ASSERT_EQ(ALKT_ERR_AUTH, ev.code);
    ASSERT_EQ(0u, alkt_session_peer_freshness(&p.s[1]));   /* nothing kept */
    ASSERT_EQ(ALKT_EV_NONE, t_event(&p, 0).type);
    alkt_session_handle_disconnected(&p.s[0], p.now);   /* (its app closes) */
    ev = t_event(&p, 0);
    ASSERT_EQ(ALKT_EV_DISCONNECTED, ev.type);
    ASSERT_EQ(ALKT_ERR_NOT_CONNECTED, ev.code);
    ASSERT_EQ(0, alkt_session_is_established(&p.s[0]));
    ASSERT_EQ(0, alkt_session_is_established(&p.s[1]));
    t_free(&p);
    PASS();
}

/* A server's handshake that runs out of time says nothing: not to a
 * connection that proved nothing (half a HELLO), and not after its own
 * AUTH went out while the client's AUTH never came - a GOAWAY sealed then
 * would end the session at the client, which checked that AUTH and is up
 * (found by the session campaign). The client resumes on a new
 * connection. */
TEST session_server_handshake_timeout_is_silent(void)
{
    t_pair p;
    unsigned char hello[512], reply[512];
    size_t hn, rn;
    alkt_event ev;
    ASSERT(t_init(&p));
    t_connect(&p);
    hn = alkt_session_poll_transmit(&p.s[0], hello, sizeof hello);
    /* half a HELLO, then nothing */
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], hello, hn / 2, p.now));
    p.now += 11000000000ull;
    alkt_session_handle_timeout(&p.s[1], p.now);
    ASSERT_EQ(0, alkt_session_poll_transmit(&p.s[1], reply, sizeof reply));
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_DISCONNECTED, ev.type);
    ASSERT_EQ(ALKT_ERR_HANDSHAKE_TIMEOUT, ev.code);
    alkt_session_handle_disconnected(&p.s[0], p.now);
    t_drain(&p);
    /* the whole HELLO; the server's HELLO and AUTH reach the client, the
     * client's AUTH is lost */
    t_connect(&p);
    hn = alkt_session_poll_transmit(&p.s[0], hello, sizeof hello);
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], hello, hn, p.now));
    rn = alkt_session_poll_transmit(&p.s[1], reply, sizeof reply);
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[0], reply, rn, p.now));
    ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
    (void)alkt_session_poll_transmit(&p.s[0], hello, sizeof hello);   /* lost */
    p.now += 11000000000ull;
    alkt_session_handle_timeout(&p.s[1], p.now);
    ASSERTm("the server sent a GOAWAY after its AUTH",
            0 == alkt_session_poll_transmit(&p.s[1], reply, sizeof reply));
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_DISCONNECTED, ev.type);
    ASSERT_EQ(ALKT_ERR_HANDSHAKE_TIMEOUT, ev.code);
    /* the client notices the silence, and resumes */
    alkt_session_handle_disconnected(&p.s[0], p.now);
    t_drain(&p);
    t_connect(&p);
    t_settle(&p);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
    ASSERT_EQ(1, alkt_session_is_established(&p.s[1]));
    t_free(&p);
    PASS();
}

/* A drop mid-transfer: the client reconnects, the session resumes, every
 * byte arrives once; a wrong token or a late resume is refused. */
TEST session_resumes_exactly_once(void)
{
    t_pair p;
    uint32_t id;
    unsigned char out[3000], in[4000], buf[1500];
    size_t n, got = 0;
    ptrdiff_t r;
    int i, eof;
    alkt_event ev;
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    for (i = 0; i < 3000; i++) out[i] = (unsigned char)(i * 13 + 1);
    ASSERT_EQ(3000, (int)alkt_channel_send(&p.s[0], id, out, sizeof out));
    /* half of it reaches the server, then the path breaks */
    n = alkt_session_poll_transmit(&p.s[0], buf, sizeof buf);
    alkt_session_handle_input(&p.s[1], buf, n, p.now);
    alkt_session_handle_disconnected(&p.s[0], p.now);
    alkt_session_handle_disconnected(&p.s[1], p.now);
    r = alkt_channel_recv(&p.s[1], id, in, sizeof in, &eof);
    ASSERT(r >= 0);
    got = (size_t)r;
    p.now += 1000000000ull;
    t_connect(&p);
    t_settle(&p);
    while ((ev = t_event(&p, 0)).type != ALKT_EV_NONE)
        ASSERT(ev.type != ALKT_EV_CLOSED);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
    r = alkt_channel_recv(&p.s[1], id, in + got, sizeof in - got, &eof);
    ASSERT(r >= 0);
    got += (size_t)r;
    ASSERT_EQ((size_t)3000, got);
    ASSERT_MEM_EQ(out, in, 3000);
    /* a forged resume token: the server refuses; the session ends */
    alkt_session_handle_disconnected(&p.s[0], p.now);
    alkt_session_handle_disconnected(&p.s[1], p.now);
    p.s[0].token[3] ^= 1;
    t_connect(&p);
    t_settle(&p);
    ASSERT_EQ(0, alkt_session_is_established(&p.s[0]));
    do { ev = t_event(&p, 0); } while (ev.type != ALKT_EV_NONE &&
                                       ev.type != ALKT_EV_CLOSED);
    ASSERT_EQ(ALKT_EV_CLOSED, ev.type);
    ASSERT_EQ(ALKT_ERR_RESUME_REFUSED, ev.code);
    t_free(&p);
    /* past the resume window: the session is over on its own */
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    alkt_session_handle_disconnected(&p.s[0], p.now);
    ASSERT_EQ(p.now + 120000000000ull, alkt_session_poll_timeout(&p.s[0]));
    alkt_session_handle_timeout(&p.s[0], p.now + 120000000000ull);
    do { ev = t_event(&p, 0); } while (ev.type != ALKT_EV_NONE &&
                                       ev.type != ALKT_EV_CLOSED);
    ASSERT_EQ(ALKT_EV_CLOSED, ev.type);
    ASSERT_EQ(ALKT_ERR_RESUME_EXPIRED, ev.code);
    ASSERT_EQ(ALKT_ERR_CLOSED, alkt_session_connect(&p.s[0], p.now, buf));
    t_free(&p);
    PASS();
}

/* Queued output means "now"; otherwise the earliest timer, never one in
 * the past once handle_timeout ran. */
TEST session_deadlines_count_queued_output(void)
{
    t_pair p;
    uint32_t id;
    uint64_t d;
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    ASSERT_EQ(p.now + 15000000000ull, alkt_session_poll_timeout(&p.s[0]));
    ASSERT_EQ(3, (int)alkt_channel_send(&p.s[0], id, "abc", 3));
    ASSERT_EQ(p.now, alkt_session_poll_timeout(&p.s[0]));
    t_settle(&p);
    d = alkt_session_poll_timeout(&p.s[0]);
    ASSERT_EQ(p.now + 15000000000ull, d);
    /* the keepalive: due at d, and then output is queued (a PING) */
    alkt_session_handle_timeout(&p.s[0], d);
    ASSERT_EQ(d, alkt_session_poll_timeout(&p.s[0]));
    ASSERT(alkt_session_poll_timeout(&p.s[0]) >= d);
    t_free(&p);
    PASS();
}

/* The zero-copy paths give the same bytes as the copying ones: transmit
 * in pieces of any size through transmit_peek/done, and read in place
 * across the ring's wrap with channel_peek/consume; every misuse is
 * refused without a change. */
TEST session_zero_copy_paths_match_the_copying_ones(void)
{
    t_pair p;
    uint32_t id;
    unsigned char out[6000], in[6000], wire[4096];
    const void *q;
    const unsigned char *b;
    size_t n, got = 0, step = 1;
    ptrdiff_t r;
    int eof = 7, i;
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    /* nothing due: no bytes and no pointer; no done without a peek */
    q = out;
    ASSERT_EQ(0, alkt_session_transmit_peek(&p.s[0], &q));
    ASSERT_EQ(NULL, q);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_session_transmit_done(&p.s[0], 1));
    ASSERT_EQ(0, alkt_session_transmit_peek(&p.s[0], NULL));
    for (i = 0; i < 6000; i++) out[i] = (unsigned char)(i * 13 + 1);
    ASSERT_EQ(3000, alkt_channel_send(&p.s[0], id, out, 3000));
    /* pieces of 1, 2, 3, ... bytes: the peer sees one stream */
    n = alkt_session_transmit_peek(&p.s[0], &q);
    ASSERT(n > 8 + 1024);   /* the three frames of 3000 bytes in one run */
    while ((n = alkt_session_transmit_peek(&p.s[0], &q)) > 0) {
        size_t k = n < step ? n : step++;
        ASSERT(n <= 16384);                      /* within the log's ring */
        ASSERT_EQ(ALKT_ERR_ARG, alkt_session_transmit_done(&p.s[0], n + 1));
        memcpy(wire, q, k);
        ASSERT_EQ(ALKT_OK, alkt_session_transmit_done(&p.s[0], k));
        ASSERT_EQ(ALKT_ERR_ARG, alkt_session_transmit_done(&p.s[0], 1));
        ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], wire, k, p.now));
    }
    /* in place: the ring is 4096 bytes, so 3000 + 3000 wraps */
    ASSERT_EQ(ALKT_ERR_ARG, (int)alkt_channel_peek(&p.s[1], id, NULL, &eof));
    r = alkt_channel_peek(&p.s[1], id, &q, &eof);
    ASSERT_EQ(3000, r);
    ASSERT_EQ(0, eof);
    ASSERT_MEM_EQ(out, q, 3000);
    ASSERT_EQ(ALKT_ERR_ARG, (int)alkt_channel_consume(&p.s[1], id, 3001, &eof));
    ASSERT_EQ(3000, alkt_channel_consume(&p.s[1], id, 3000, &eof));
    t_settle(&p);
    ASSERT_EQ(3000, alkt_channel_send(&p.s[0], id, out + 3000, 3000));
    ASSERT_EQ(ALKT_OK, alkt_channel_shutdown_write(&p.s[0], id));
    t_settle(&p);
    while ((r = alkt_channel_peek(&p.s[1], id, &q, &eof)) > 0) {
        b = (const unsigned char *)q;
        ASSERT(got + (size_t)r <= 3000);
        ASSERT(r < 3000 || got);                 /* the wrap cuts a run */
        memcpy(in + got, b, (size_t)r);
        got += (size_t)r;
        ASSERT_EQ(r, alkt_channel_consume(&p.s[1], id, (size_t)r, &eof));
        ASSERT_EQ(got == 3000, eof);             /* EOF with the last byte */
    }
    ASSERT_EQ(0, r);
    ASSERT_EQ(3000, got);
    ASSERT_MEM_EQ(out + 3000, in, 3000);
    /* after the EOF was read a peek says EOF again, with no bytes */
    ASSERT_EQ(0, alkt_channel_peek(&p.s[1], id, &q, &eof));
    ASSERT_EQ(1, eof);
    /* a reset channel: peek and consume say so */
    ASSERT_EQ(ALKT_OK, alkt_channel_reset(&p.s[1], id, 9));
    ASSERT_EQ(ALKT_ERR_RESET, (int)alkt_channel_peek(&p.s[1], id, &q, &eof));
    ASSERT_EQ(ALKT_ERR_RESET, (int)alkt_channel_consume(&p.s[1], id, 0, &eof));
    ASSERT_EQ(ALKT_ERR_RESET, alkt_channel_shutdown_write(&p.s[1], id));
    ASSERT_EQ(ALKT_ERR_RESET, (int)alkt_channel_send(&p.s[1], id, "x", 1));
    ASSERT_EQ(ALKT_ERR_NO_CHANNEL, (int)alkt_channel_peek(&p.s[1], 99, &q, &eof));
    t_free(&p);
    PASS();
}

/* A DISCONNECTED not yet polled when the app starts the next connection
 * is about the old one: it is dropped, so an app that closes its socket on
 * that event does not close the new one (session_echo's server did). */
TEST session_connect_drops_a_stale_disconnect(void)
{
    t_pair p;
    uint32_t id;
    alkt_event ev;
    int k, resumed = 0;
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    t_drain(&p);
    for (k = 0; k < 2; k++) alkt_session_handle_disconnected(&p.s[k], p.now);
    t_connect(&p);                       /* before polling the events */
    for (k = 0; k < 2; k++) {
        while (alkt_session_poll_event(&p.s[k], &ev))
            ASSERT(ev.type != ALKT_EV_DISCONNECTED);
    }
    t_settle(&p);
    while (alkt_session_poll_event(&p.s[0], &ev)) {
        ASSERT(ev.type != ALKT_EV_DISCONNECTED);
        resumed += ev.type == ALKT_EV_RESUMED;
    }
    ASSERT_EQ(1, resumed);
    /* polled first, the event is there */
    alkt_session_handle_disconnected(&p.s[0], p.now);
    ev = t_event(&p, 0);
    ASSERT_EQ(ALKT_EV_DISCONNECTED, ev.type);
    t_free(&p);
    PASS();
}

/* Opens refused while the log is full wait in a queue of max_channels
 * entries; one more is a peer that ignores our max_channels: the session
 * ends with ALKT_ERR_CHANNELS_FULL, and nothing is written past the queue. */
TEST session_refusal_queue_is_bounded(void)
{
    t_pair p;
    uint32_t ids[4], extra;
    unsigned char blob[4096];
    int k, rc = ALKT_OK;
    ASSERT(t_init(&p));
    ASSERT(t_open_all(&p, ids));
    /* bytes waiting in the server's first ring while the queue fills: the
     * queue has its own memory */
    ASSERT_EQ(16, (int)alkt_channel_send(&p.s[0], ids[0], "ring bytes stay!", 16));
    t_settle(&p);
    t_drain(&p);
    /* the server fills its log with data the client never acknowledges */
    memset(blob, 'd', sizeof blob);
    for (k = 0; k < 4; k++)
        while (alkt_channel_send(&p.s[1], ids[k], blob, sizeof blob) > 0) {
        }
    ASSERT(alkt__log_room(&p.s[1]) < 8 + 2);
    /* four more opens from the client: all slots are taken, so each is a
     * refusal, and none fits the log: the queue holds them */
    extra = ids[3];
    for (k = 0; k < 4; k++) {
        extra += 2;
        ASSERT_EQ(1, alkt__log_frame(&p.s[0], ALKT_FRAME_OPEN, extra, "{}", 2,
                                     NULL, 0));
        p.s[0].next_id = extra + 2;
        t_move(&p, 0);
    }
    ASSERT_EQ(4u, p.s[1].n_refusals);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[1]));
    {
        unsigned char in[16];
        int eof;
        ASSERT_EQ(16, (int)alkt_channel_recv(&p.s[1], ids[0], in, sizeof in, &eof));
        ASSERT_MEM_EQ("ring bytes stay!", in, 16);
    }
    /* the fifth ends the session */
    extra += 2;
    ASSERT_EQ(1, alkt__log_frame(&p.s[0], ALKT_FRAME_OPEN, extra, "{}", 2,
                                 NULL, 0));
    {
        unsigned char w[64];
        size_t n;
        while ((n = alkt_session_poll_transmit(&p.s[0], w, sizeof w)) > 0) {
            int r = alkt_session_handle_input(&p.s[1], w, n, p.now);
            if (r != ALKT_OK) rc = r;
        }
    }
    ASSERT_EQ(ALKT_ERR_CHANNELS_FULL, rc);
    ASSERT_EQ(4u, p.s[1].n_refusals);
    t_free(&p);
    PASS();
}

/* The peer resets a channel and opens the next one in the same read,
 * before our app polled the first one's end: the open is within
 * max_channels for the peer, so it is accepted (the finished channel's
 * record is retired, its RESET and DONE still come, first). */
TEST session_reset_then_open_in_one_read_is_accepted(void)
{
    t_pair p;
    uint32_t ids[4], fresh = 0;
    alkt_open_params o = t_params(5432);
    alkt_event ev;
    ASSERT(t_init(&p));
    ASSERT(t_open_all(&p, ids));
    ASSERT_EQ(ALKT_OK, alkt_channel_reset(&p.s[0], ids[1], 9));
    while (alkt_session_poll_event(&p.s[0], &ev)) {   /* the client's side only */
    }
    ASSERT_EQ(ALKT_OK, alkt_channel_open(&p.s[0], &o, &fresh));
    t_move(&p, 0);   /* RESET and OPEN arrive together */
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_RESET, ev.type);
    ASSERT_EQ(ids[1], ev.channel);
    ASSERT_EQ(9, ev.code);
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_CHANNEL_DONE, ev.type);
    ASSERT_EQ(ids[1], ev.channel);
    ev = t_event(&p, 1);
    ASSERT_EQ(ALKT_EV_OPEN_REQUEST, ev.type);
    ASSERT_EQ(fresh, ev.channel);
    ASSERT_EQ(ALKT_OK, alkt_channel_accept(&p.s[1], fresh, NULL));
    t_settle(&p);
    ev = t_event(&p, 0);
    ASSERT_EQ(ALKT_EV_OPENED, ev.type);
    ASSERT_EQ(fresh, ev.channel);
    ASSERT_EQ(0u, p.s[1].n_retired);
    t_free(&p);
    PASS();
}

/* A send the resend log stopped (credit left, no room) is told when acks
 * make room: ALKT_EV_WRITABLE, not only when credit comes back. */
TEST session_writable_after_the_log_frees(void)
{
    t_pair p;
    uint32_t ids[4];
    unsigned char blob[4096];
    alkt_event ev;
    alkt_channel_info info;
    int k, writable = 0;
    ASSERT(t_init(&p));
    ASSERT(t_open_all(&p, ids));
    /* 4 x 4096 bytes of credit, 16384 bytes of log: the log stops the last */
    memset(blob, 'w', sizeof blob);
    for (k = 0; k < 4; k++)
        (void)alkt_channel_send(&p.s[0], ids[k], blob, sizeof blob);
    ASSERT_EQ(ALKT_OK, alkt_channel_info_get(&p.s[0], ids[3], &info));
    ASSERT(info.send_credit > 0);
    ASSERT_EQ(0, (int)alkt_channel_send(&p.s[0], ids[3], blob, 1));
    ASSERT_EQ(ALKT_EV_NONE, t_event(&p, 0).type);
    /* the server takes it all in and acknowledges (without reading) */
    t_move(&p, 0);
    t_move(&p, 1);
    while (alkt_session_poll_event(&p.s[0], &ev))
        if (ev.type == ALKT_EV_WRITABLE) {
            ASSERT_EQ(ids[3], ev.channel);
            writable++;
        }
    ASSERT_EQ(1, writable);
    ASSERT(alkt_channel_send(&p.s[0], ids[3], blob, 1) == 1);
    t_free(&p);
    PASS();
}

TEST session_memory_is_the_documented_formula(void)
{
    alkt_session_config c;
    alkt_session s;
    unsigned char *mem;
    size_t need;
    t_config(&c, 0);
    need = alkt_session_mem_size(&c);
    /* encrypted (the default): two record buffers more - four records of
     * 2 + 8 + 1024 + 16 bytes and a REKEY record out, one record in */
    ASSERT_EQ(((4 * sizeof(alkt__chan) + 7) & ~(size_t)7) + 4 * 24 + 4 * 4096 +
                  16384 + 1024 + 8 +
                  8 + ((4 * (18 + 8 + 1024) + 18 + 8 + 7) & ~(size_t)7) +
                  ((18 + 8 + 1024 + 7) & ~(size_t)7), need);
    c.plaintext = 1;
    ASSERT_EQ(((4 * sizeof(alkt__chan) + 7) & ~(size_t)7) + 4 * 24 + 4 * 4096 +
                  16384 + 1024 + 8, alkt_session_mem_size(&c));
    c.plaintext = 0;
    mem = (unsigned char *)malloc(need);
    ASSERT(mem != NULL);
    ASSERT_EQ(ALKT_ERR_NOMEM, alkt_session_init(&s, &c, mem, need - 1, 0));
    ASSERT_EQ(ALKT_OK, alkt_session_init(&s, &c, mem, need, 0));
    /* argument errors: refused, nothing touched */
    {
        unsigned char nonce[ALKT_NONCE_SIZE] = {0};
        uint32_t id;
        ASSERT_EQ(ALKT_ERR_ARG, alkt_session_connect(&s, 0, NULL));
        ASSERT_EQ(ALKT_ERR_ARG, alkt_session_connect(NULL, 0, nonce));
        ASSERT_EQ(ALKT_ERR_ARG, alkt_session_init(NULL, &c, mem, need, 0));
        ASSERT_EQ(ALKT_ERR_ARG, alkt_session_init(&s, &c, NULL, need, 0));
        ASSERT_EQ(ALKT_ERR_ARG, alkt_session_handle_input(&s, NULL, 1, 0));
        ASSERT_EQ(ALKT_ERR_ARG, alkt_channel_open(&s, NULL, &id));
        ASSERT_EQ(0, alkt_session_is_established(&s));
        ASSERT_EQ(ALKT_OK, alkt_session_init(&s, &c, mem, need, 0));
    }
    /* refused configurations size nothing */
    c.secret_len = 8;
    ASSERT_EQ((size_t)0, alkt_session_mem_size(&c));
    t_config(&c, 0);
    c.log_size = 100;
    ASSERT_EQ((size_t)0, alkt_session_mem_size(&c));
    /* every limit: taken at its edge, refused one past it */
    {
        static unsigned char big_secret[65];
        static char big_id[ALKT_IDENTITY_MAX + 1];
        int edge;
        memset(big_id, 'a', sizeof big_id);
        for (edge = 0; edge < 2; edge++) {
            uint32_t d = (uint32_t)edge;   /* 0: at the limit, 1: past it */
#define T_LIMIT(stmt)                                                         \
    do {                                                                      \
        t_config(&c, 0);                                                      \
        stmt;                                                                 \
        ASSERT_EQm(#stmt, edge == 0, alkt_session_mem_size(&c) > 0);          \
    } while (0)
            T_LIMIT((c.secret = big_secret, c.secret_len = 16 - d));
            T_LIMIT((c.secret = big_secret, c.secret_len = 64 + d));
            T_LIMIT((c.identity = big_id, c.identity_len = ALKT_IDENTITY_MAX + d));
            T_LIMIT(c.identity_len = 1 - d);
            T_LIMIT((c.max_channels = 4096 + d, c.channel_window = 256));
            T_LIMIT((c.max_frame = 256 - d, c.log_size = 4 * (8 + 256)));
            T_LIMIT((c.max_frame = 16384 + d, c.log_size = 1u << 20));
            T_LIMIT(c.channel_window = (1u << 30) + d);
            T_LIMIT(c.log_size = 4 * (8 + 1024) - d);
            T_LIMIT(c.log_size = (1u << 30) + d);
#undef T_LIMIT
        }
    }
    free(mem);
    PASS();
}

/* ---- pumps ---- */
typedef struct t_end {
    const unsigned char *src;    /* what the application side has to send */
    size_t src_len, src_at;
    unsigned char *sink;         /* what it received */
    size_t sink_len;
    int shut, done;
} t_end;

static uint32_t t_rand(uint32_t *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 8;
}

/* One turn of an endpoint: read some of its source into the pump, write
 * some of the channel's bytes out, shut when told. 1 while not done. */
static int t_end_turn(alkt_pump *p, t_end *e, uint32_t *x, int stall)
{
    unsigned want = alkt_pump_poll(p);
    if (want & (ALKT_PUMP_DONE | ALKT_PUMP_ABORT)) {
        e->done = (want & ALKT_PUMP_DONE) ? 1 : -1;
        return 0;
    }
    if (want & ALKT_PUMP_READ) {
        void *b;
        size_t room = alkt_pump_read_buffer(p, &b), k = 1 + t_rand(x) % 3000;
        if (room && e->src_at < e->src_len) {
            if (k > room) k = room;
            if (k > e->src_len - e->src_at) k = e->src_len - e->src_at;
            memcpy(b, e->src + e->src_at, k);
            e->src_at += k;
            if (alkt_pump_endpoint_read(p, k) != ALKT_OK) return -1;
        } else if (e->src_at == e->src_len) {
            if (alkt_pump_endpoint_eof(p) != ALKT_OK) return -1;
        }
    }
    if ((want & ALKT_PUMP_WRITE) && !stall) {
        const void *d;
        size_t n = alkt_pump_write_peek(p, &d), k = 1 + t_rand(x) % 2000;
        if (n) {
            if (k > n) k = n;
            memcpy(e->sink + e->sink_len, d, k);
            e->sink_len += k;
            if (alkt_pump_endpoint_wrote(p, k) != ALKT_OK) return -1;
        }
    }
    if (want & ALKT_PUMP_SHUT_WRITE) {
        if (e->shut) return -1;        /* told twice */
        e->shut = 1;
        if (alkt_pump_endpoint_shut(p) != ALKT_OK) return -1;
    }
    return 1;
}

/* Two endpoints joined through a channel by two pumps: every byte each
 * way arrives once, in order; each side is told to shut exactly once, after
 * the last byte; both pumps end DONE with bytes in == bytes out; a stalled
 * reader stops the far side's reads (backpressure) without losing a byte. */
TEST pump_moves_both_ways_and_half_closes(void)
{
    static unsigned char a_src[70000], b_src[70000], a_sink[70000], b_sink[70000];
    static const size_t sizes[][2] = {{0, 0}, {1, 0}, {0, 1}, {5000, 3},
                                      {70000, 20000}, {12345, 70000}};
    static const size_t bufs[] = {1, 7, 4096};
    size_t i, j;
    uint32_t x = 99;
    for (i = 0; i < sizeof a_src; i++) {
        a_src[i] = (unsigned char)t_rand(&x);
        b_src[i] = (unsigned char)t_rand(&x);
    }
    for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (j = 0; j < sizeof bufs / sizeof bufs[0]; j++) {
            t_pair p;
            uint32_t id;
            alkt_pump pa, pb;
            unsigned char ba[4096], bb[4096];
            t_end ea, eb;
            int turn, stalled_reads = 0;
            ASSERT(t_init(&p));
            ASSERT(t_open(&p, &id));
            t_drain(&p);
            ASSERT_EQ(ALKT_OK, alkt_pump_init(&pa, &p.s[0], id, ba, bufs[j]));
            ASSERT_EQ(ALKT_OK, alkt_pump_init(&pb, &p.s[1], id, bb, bufs[j]));
            memset(&ea, 0, sizeof ea);
            memset(&eb, 0, sizeof eb);
            ea.src = a_src; ea.src_len = sizes[i][0]; ea.sink = a_sink;
            eb.src = b_src; eb.src_len = sizes[i][1]; eb.sink = b_sink;
            for (turn = 0; turn < 100000 && (!ea.done || !eb.done); turn++) {
                /* the first 300 turns: b does not write (a stalled reader) */
                int stall = turn < 300;
                if (!ea.done) ASSERT(t_end_turn(&pa, &ea, &x, 0) >= 0);
                if (!eb.done) ASSERT(t_end_turn(&pb, &eb, &x, stall) >= 0);
                /* (with the big buffer 300 turns read far past the
                 * window: the reads must have stopped by then) */
                if (stall && turn == 299 && sizes[i][0] > 40000 && bufs[j] >= 4096)
                    stalled_reads = (alkt_pump_poll(&pa) & ALKT_PUMP_READ) == 0;
                t_move(&p, 0);
                t_move(&p, 1);
                t_drain(&p);
            }
            ASSERT_EQm("both pumps done", 1, ea.done);
            ASSERT_EQ(1, eb.done);
            ASSERT_EQ(sizes[i][1], ea.sink_len);
            ASSERT_EQ(sizes[i][0], eb.sink_len);
            ASSERT_MEM_EQ(b_src, a_sink, ea.sink_len);
            ASSERT_MEM_EQ(a_src, b_sink, eb.sink_len);
            ASSERT(ea.shut && eb.shut);
            ASSERT_EQ(pa.from_endpoint, pa.to_channel);
            ASSERT_EQ(pb.from_endpoint, pb.to_channel);
            ASSERT_EQ(pa.to_endpoint, (uint64_t)sizes[i][1]);
            ASSERT_EQ(pb.to_endpoint, (uint64_t)sizes[i][0]);
            if (sizes[i][0] > 40000 && bufs[j] >= 4096)
                ASSERTm("a stalled reader stops the far side's reads",
                        stalled_reads);
            t_free(&p);
        }
    PASS();
}

/* A reset from the far side aborts the pump with the reset's code; an
 * endpoint failure resets the channel for the far side. */
TEST pump_aborts_on_reset_both_ways(void)
{
    t_pair p;
    uint32_t id;
    alkt_pump pa, pb;
    unsigned char ba[64], bb[64];
    void *b;
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    t_drain(&p);
    ASSERT_EQ(ALKT_OK, alkt_pump_init(&pa, &p.s[0], id, ba, sizeof ba));
    ASSERT_EQ(ALKT_OK, alkt_pump_init(&pb, &p.s[1], id, bb, sizeof bb));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_init(&pb, &p.s[1], id, bb, 0));
    /* a pump init refused (zeroed) or none at all: ABORT, no crash */
    ASSERT_EQ((unsigned)ALKT_PUMP_ABORT, alkt_pump_poll(&pb));
    ASSERT_EQ((unsigned)ALKT_PUMP_ABORT, alkt_pump_poll(NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_endpoint_read(&pb, 0));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_endpoint_eof(NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_endpoint_shut(NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_endpoint_wrote(NULL, 0));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_endpoint_failed(NULL, 1));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_endpoint_read(NULL, 0));
    ASSERT_EQ(0, alkt_pump_read_buffer(NULL, &b));
    ASSERT_EQ(0, alkt_pump_write_peek(NULL, NULL));
    ASSERT_EQ(ALKT_OK, alkt_pump_init(&pb, &p.s[1], id, bb, sizeof bb));
    ASSERT(alkt_pump_read_buffer(&pa, &b) == sizeof ba);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_pump_endpoint_read(&pa, sizeof ba + 1));
    ASSERT_EQ(ALKT_ERR_STATE, alkt_pump_endpoint_shut(&pa));  /* no EOF yet */
    ASSERT_EQ(ALKT_OK, alkt_pump_endpoint_failed(&pb, 77));
    ASSERT_EQ((unsigned)ALKT_PUMP_ABORT, alkt_pump_poll(&pb));
    ASSERT_EQ(77, pb.code);
    t_settle(&p);
    ASSERT_EQ((unsigned)ALKT_PUMP_ABORT, alkt_pump_poll(&pa));
    ASSERT_EQ(ALKT_ERR_RESET, pa.code);
    ASSERT_EQ(0, alkt_pump_read_buffer(&pa, &b));
    ASSERT_EQ(NULL, b);
    {   /* the far side's events carry the reset's code to the end */
        alkt_event ev;
        int seen = 0;
        while (alkt_session_poll_event(&p.s[0], &ev)) {
            if (ev.type == ALKT_EV_RESET || ev.type == ALKT_EV_CHANNEL_DONE) {
                ASSERT_EQ(id, ev.channel);
                ASSERT_EQ(77, ev.code);
                seen |= ev.type == ALKT_EV_RESET ? 1 : 2;
            }
        }
        ASSERT_EQ(3, seen);
    }
    t_free(&p);
    PASS();
}

/* Keepalive: a side whose idle timeout is shorter than the peer's
 * keepalive interval stays up on its own pings (the peer's PONGs are
 * input); with its pings unanswered it would time out. */
TEST session_keepalive_pings_keep_a_quiet_link_up(void)
{
    t_pair p;
    int k, step;
    alkt_event ev;
    memset(&p, 0, sizeof p);
    p.now = 1000000000ull;
    for (k = 0; k < 2; k++) {
        alkt_session_config c;
        size_t need;
        t_config(&c, k);
        c.ping_interval_ns = k ? 60000000000ull : 1000000000ull;
        c.idle_timeout_ns = k ? 120000000000ull : 3000000000ull;
        need = alkt_session_mem_size(&c);
        p.mem[k] = (unsigned char *)malloc(need);
        ASSERT(p.mem[k] != NULL);
        ASSERT_EQ(ALKT_OK, alkt_session_init(&p.s[k], &c, p.mem[k], need, p.now));
    }
    t_connect(&p);
    t_settle(&p);
    ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
    t_drain(&p);
    for (step = 0; step < 40; step++) {     /* 20 s of silence */
        p.now += 500000000ull;
        for (k = 0; k < 2; k++) alkt_session_handle_timeout(&p.s[k], p.now);
        t_settle(&p);
        for (k = 0; k < 2; k++)
            while (alkt_session_poll_event(&p.s[k], &ev))
                ASSERT(ev.type != ALKT_EV_DISCONNECTED);
    }
    ASSERT(p.s[0].ping_counter >= 10);
    t_free(&p);
    PASS();
}

/* After the peer's GOAWAY nothing more goes out, not even the rest of a
 * connection frame half sent; the session is closed with ALKT_ERR_GOAWAY. */
TEST session_nothing_goes_out_after_the_peer_goaway(void)
{
    t_pair p;
    uint32_t id;
    const void *q;
    unsigned char w[256];
    size_t n;
    alkt_event ev;
    int closed = 0;
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    t_drain(&p);
    /* the client owes an ACK for data; one byte of it goes out */
    ASSERT_EQ(5, (int)alkt_channel_send(&p.s[1], id, "hello", 5));
    t_move(&p, 1);
    n = alkt_session_transmit_peek(&p.s[0], &q);
    ASSERT(n > 1);
    ASSERT_EQ(ALKT_OK, alkt_session_transmit_done(&p.s[0], 1));
    /* the server closes: its GOAWAY reaches the client */
    ASSERT_EQ(ALKT_OK, alkt_session_close(&p.s[1], 7));
    n = alkt_session_poll_transmit(&p.s[1], w, sizeof w);
    ASSERT(n > 0);
    ASSERT_EQ(ALKT_ERR_GOAWAY, alkt_session_handle_input(&p.s[0], w, n, p.now));
    ASSERT_EQ(0, alkt_session_poll_transmit(&p.s[0], w, sizeof w));
    ASSERT_EQ(0, alkt_session_transmit_peek(&p.s[0], &q));
    /* the connection is over too: no deadline "now" (no busy loop) */
    ASSERT(alkt_session_poll_timeout(&p.s[0]) > p.now);
    while (alkt_session_poll_event(&p.s[0], &ev))
        if (ev.type == ALKT_EV_CLOSED) {
            ASSERT_EQ(ALKT_ERR_GOAWAY, ev.code);
            closed = 1;
        }
    ASSERT_EQ(1, closed);
    t_free(&p);
    PASS();
}

SUITE(alkt_session_suite)
{
    RUN_TEST(sha256_and_hmac_vectors);
    RUN_TEST(ct_equal_compares_everything);
    RUN_TEST(session_handshake_bytes_are_frozen);
    RUN_TEST(session_moves_bytes_and_half_closes);
    RUN_TEST(session_refusal_carries_code_and_reason);
    RUN_TEST(session_window_is_enforced);
    RUN_TEST(session_duplicate_open_keeps_the_live_channel);
    RUN_TEST(session_injected_frame_is_detected);
    RUN_TEST(session_hello_fields_are_checked);
    RUN_TEST(session_hello_freshness_stops_replays);
    RUN_TEST(session_oversize_frame_is_refused_at_its_header);
    RUN_TEST(session_refuses_forged_handshakes);
    RUN_TEST(session_server_handshake_timeout_is_silent);
    RUN_TEST(session_resumes_exactly_once);
    RUN_TEST(session_deadlines_count_queued_output);
    RUN_TEST(session_zero_copy_paths_match_the_copying_ones);
    RUN_TEST(session_connect_drops_a_stale_disconnect);
    RUN_TEST(session_refusal_queue_is_bounded);
    RUN_TEST(session_reset_then_open_in_one_read_is_accepted);
    RUN_TEST(session_writable_after_the_log_frees);
    RUN_TEST(session_memory_is_the_documented_formula);
    RUN_TEST(session_keepalive_pings_keep_a_quiet_link_up);
    RUN_TEST(session_nothing_goes_out_after_the_peer_goaway);
    RUN_TEST(pump_moves_both_ways_and_half_closes);
    RUN_TEST(pump_aborts_on_reset_both_ways);
}

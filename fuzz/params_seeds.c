/* params_seeds.c - writes the generated seeds of corpus/params/.
 *
 *   params_seeds DIR     (make seeds)
 *
 * Every open-params shape and substrate, listen replies, each control-plane
 * message valid and broken, wrong shapes, limits just under and over, bad
 * UTF-8 and escapes, big numbers. Deterministic and byte-stable (make
 * seeds-check regenerates and compares). Promoted findings live beside
 * these under finding-* names and are never touched here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *out_dir;
static unsigned written;

static void seed_n(const char *name, const char *text, size_t n)
{
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s.json", out_dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    written++;
}

static void seed(const char *name, const char *text)
{
    seed_n(name, text, strlen(text));
}

/* Binary seeds: a literal with embedded bytes, length from sizeof. */
#define SEED_BIN(name, lit) seed_n(name, lit, sizeof(lit) - 1)

static void nested(const char *name, size_t depth, int objects)
{
    static char buf[8192];
    size_t i, o = 0;
    for (i = 0; i < depth; i++) {
        if (objects) {
            memcpy(buf + o, "{\"a\":", 5);
            o += 5;
        } else {
            buf[o++] = '[';
        }
    }
    buf[o++] = '1';
    for (i = 0; i < depth; i++)
        buf[o++] = objects ? '}' : ']';
    seed_n(name, buf, o);
}

static void open_params(void)
{
    seed("open-direct-tcp-name",
         "{\"substrate\":\"tcp\",\"host\":\"db.internal.example\",\"port\":5432}");
    seed("open-direct-udp-ipv4",
         "{\"substrate\":\"udp\",\"host\":\"10.1.2.3\",\"port\":53}");
    seed("open-direct-tcp-ipv6",
         "{\"port\":443,\"host\":\"2001:db8::1\",\"substrate\":\"tcp\"}");
    seed("open-direct-tcp-ipv4-mapped",
         "{\"substrate\":\"tcp\",\"host\":\"::ffff:192.0.2.1\",\"port\":1}");
    seed("open-direct-unix",
         "{\"substrate\":\"unix\",\"path\":\"/run/app/socket\"}");
    seed("open-direct-unix-escapes",
         "{\"substrate\":\"unix\",\"path\":\"/tmp/a\\\"b\\\\c\\u00e9\\t\"}");
    seed("open-forwarded-tcp", "{\"listen\":8080,\"substrate\":\"tcp\"}");
    seed("open-forwarded-udp-bind",
         "{\"listen\":65535,\"substrate\":\"udp\",\"host\":\"127.0.0.1\"}");
    seed("open-ws-everywhere",
         " \r\n\t{ \"substrate\" : \"tcp\" ,\n \"host\" : \"a\" , "
         "\"port\" : 22 }\n");
    seed("open-unknown-substrate",
         "{\"substrate\":\"sctp\",\"host\":\"a.example\",\"port\":9}");
    seed("open-missing-substrate", "{\"host\":\"a.example\",\"port\":9}");
    seed("open-missing-port", "{\"substrate\":\"tcp\",\"host\":\"a.example\"}");
    seed("open-missing-path", "{\"substrate\":\"unix\"}");
    seed("open-unknown-field",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":9,\"tls\":true}");
    seed("open-duplicate-port",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":9,\"port\":9}");
    seed("open-duplicate-escaped-key",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":9,\"p\\u006frt\":9}");
    seed("open-listen-zero", "{\"listen\":0,\"substrate\":\"tcp\"}");
    seed("open-listen-65536", "{\"listen\":65536,\"substrate\":\"tcp\"}");
    seed("open-listen-unix", "{\"listen\":80,\"substrate\":\"unix\"}");
    seed("open-listen-with-port",
         "{\"listen\":80,\"substrate\":\"tcp\",\"port\":81}");
    seed("open-listen-bind-name",
         "{\"listen\":80,\"substrate\":\"tcp\",\"host\":\"example.com\"}");
    seed("open-unix-with-host",
         "{\"substrate\":\"unix\",\"path\":\"/s\",\"host\":\"a\"}");
    seed("open-tcp-with-path",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1,\"path\":\"/s\"}");
    seed("open-port-zero", "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":0}");
    seed("open-port-float",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":80.0}");
    seed("open-port-exponent",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":8e1}");
    seed("open-port-negative",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":-80}");
    seed("open-port-string",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":\"80\"}");
    seed("open-port-u64-overflow",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":18446744073709551616}");
    seed("open-host-empty", "{\"substrate\":\"tcp\",\"host\":\"\",\"port\":1}");
    seed("open-host-bad-ipv4",
         "{\"substrate\":\"tcp\",\"host\":\"10.0.0.256\",\"port\":1}");
    seed("open-host-ipv4-leading-zero",
         "{\"substrate\":\"tcp\",\"host\":\"10.0.0.01\",\"port\":1}");
    seed("open-host-bad-ipv6",
         "{\"substrate\":\"tcp\",\"host\":\"1::2::3\",\"port\":1}");
    seed("open-host-ipv6-zone",
         "{\"substrate\":\"tcp\",\"host\":\"fe80::1%eth0\",\"port\":1}");
    seed("open-host-hyphen-label",
         "{\"substrate\":\"tcp\",\"host\":\"-a.example\",\"port\":1}");
    seed("open-host-trailing-dot",
         "{\"substrate\":\"tcp\",\"host\":\"a.example.\",\"port\":1}");
    seed("open-host-nul",
         "{\"substrate\":\"tcp\",\"host\":\"a\\u0000b\",\"port\":1}");
    seed("open-path-lone-surrogate",
         "{\"substrate\":\"unix\",\"path\":\"/a\\ud800\"}");
    seed("open-path-surrogate-pair",
         "{\"substrate\":\"unix\",\"path\":\"/\\ud83d\\ude00\"}");
    seed("open-not-object", "[\"tcp\",\"a\",1]");
    seed("open-null", "null");
    seed("open-trailing-garbage",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1} x");
    seed("open-trailing-comma",
         "{\"substrate\":\"tcp\",\"host\":\"a\",\"port\":1,}");
    {
        /* host of 253 bytes (valid) and 254 (too long) */
        char buf[400];
        char host[260];
        size_t i;
        for (i = 0; i < 253; i++)
            host[i] = (char)((i % 64 == 63) ? '.' : 'a');
        host[253] = '\0';
        snprintf(buf, sizeof buf,
                 "{\"substrate\":\"tcp\",\"host\":\"%s\",\"port\":1}", host);
        seed("open-host-253", buf);
        host[253] = 'b';
        host[254] = '\0';
        snprintf(buf, sizeof buf,
                 "{\"substrate\":\"tcp\",\"host\":\"%s\",\"port\":1}", host);
        seed("open-host-254", buf);
    }
}

static void listen_replies(void)
{
    seed("reply-ipv4", "{\"address\":\"203.0.113.7\",\"port\":40000}");
    seed("reply-ipv6", "{\"address\":\"2001:db8:0:0:1:0:0:1\",\"port\":1}");
    seed("reply-missing-port", "{\"address\":\"203.0.113.7\"}");
    seed("reply-port-zero", "{\"address\":\"203.0.113.7\",\"port\":0}");
    seed("reply-name-not-ip", "{\"address\":\"gw.example\",\"port\":9}");
    seed("reply-extra-field",
         "{\"address\":\"203.0.113.7\",\"port\":9,\"ttl\":3}");
    seed("reply-empty", "{}");
    seed("reply-not-object", "[\"203.0.113.7\",9]");
    seed("reply-port-string", "{\"address\":\"203.0.113.7\",\"port\":\"9\"}");
    seed("reply-address-number", "{\"address\":3405803783,\"port\":9}");
}

static const char valid_control[] =
    "{\"resources\":[{\"id\":\"r1\",\"cidr\":\"10.0.0.0/8\",\"ports\":["
    "{\"from\":1,\"to\":1024},{\"from\":8080,\"to\":8080}],"
    "\"protocols\":[\"tcp\",\"udp\"],\"gateway\":\"gw-1\"},"
    "{\"id\":\"r2\",\"cidr\":\"2001:db8::/32\",\"gateway\":\"gw-2\"}],"
    "\"authorizations\":[{\"client\":\"c1\",\"resource\":\"r1\","
    "\"secret\":\"000102030405060708090a0b0c0d0e0f\",\"expires\":1893456000}],"
    "\"revocations\":[{\"client\":\"c9\",\"resource\":\"r1\"}],"
    "\"relays\":[{\"id\":\"relay-a\",\"address\":\"relay.example.net\","
    "\"port\":3478,\"token\":\"t0k3n!\"},"
    "{\"id\":\"relay-b\",\"address\":\"198.51.100.2\",\"port\":443,"
    "\"token\":\"x\"}]}";

static void control(void)
{
    seed("control-all-sections", valid_control);
    seed("control-empty-sections",
         "{\"resources\":[],\"authorizations\":[],\"revocations\":[],"
         "\"relays\":[]}");
    seed("control-no-section", "{}");
    seed("control-unknown-section", "{\"routes\":[]}");
    seed("control-section-twice", "{\"relays\":[],\"relays\":[]}");
    seed("control-section-not-array", "{\"resources\":{}}");
    seed("control-too-many-resources",
         "{\"resources\":[{\"id\":\"a\",\"cidr\":\"0.0.0.0/0\",\"gateway\":"
         "\"g\"},{\"id\":\"b\",\"cidr\":\"0.0.0.0/0\",\"gateway\":\"g\"},"
         "{\"id\":\"c\",\"cidr\":\"0.0.0.0/0\",\"gateway\":\"g\"},"
         "{\"id\":\"d\",\"cidr\":\"0.0.0.0/0\",\"gateway\":\"g\"}]}");
    seed("resource-cidr-host-bits",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.1/8\",\"gateway\":"
         "\"g\"}]}");
    seed("resource-cidr-prefix-33",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/33\",\"gateway\":"
         "\"g\"}]}");
    seed("resource-cidr-v6-128",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"::1/128\",\"gateway\":"
         "\"g\"}]}");
    seed("resource-cidr-no-prefix",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0\",\"gateway\":"
         "\"g\"}]}");
    seed("resource-ports-empty",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":[],"
         "\"gateway\":\"g\"}]}");
    seed("resource-port-range-reversed",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":["
         "{\"from\":1,\"to\":2},{\"from\":9,\"to\":8}],\"gateway\":\"g\"}]}");
    seed("resource-port-range-missing-to",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":["
         "{\"from\":1}],\"gateway\":\"g\"}]}");
    seed("resource-protocol-unknown",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"protocols\":"
         "[\"sctp\"],\"gateway\":\"g\"}]}");
    seed("resource-protocol-twice",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"protocols\":"
         "[\"tcp\",\"icmp\",\"tcp\"],\"gateway\":\"g\"}]}");
    seed("resource-id-empty",
         "{\"resources\":[{\"id\":\"\",\"cidr\":\"10.0.0.0/8\",\"gateway\":"
         "\"g\"}]}");
    seed("resource-id-bad-char",
         "{\"resources\":[{\"id\":\"r 1\",\"cidr\":\"10.0.0.0/8\",\"gateway\":"
         "\"g\"}]}");
    seed("resource-missing-gateway",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\"}]}");
    {
        char buf[2048];
        size_t o, i;
        o = (size_t)snprintf(buf, sizeof buf,
                             "{\"resources\":[{\"id\":\"r\",\"cidr\":"
                             "\"10.0.0.0/8\",\"ports\":[");
        for (i = 0; i < 17; i++)
            o += (size_t)snprintf(buf + o, sizeof buf - o,
                                  "%s{\"from\":%u,\"to\":%u}", i ? "," : "",
                                  (unsigned)(i + 1), (unsigned)(i + 1));
        snprintf(buf + o, sizeof buf - o, "],\"gateway\":\"g\"}]}");
        seed("resource-17-port-ranges", buf);
    }
    seed("authorization-secret-short",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"00\",\"expires\":1}]}");
    seed("authorization-secret-uppercase",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"000102030405060708090A0B0C0D0E0F\",\"expires\":1}]}");
    seed("authorization-expires-2p53",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"000102030405060708090a0b0c0d0e0f\","
         "\"expires\":9007199254740992}]}");
    seed("authorization-expires-max",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"000102030405060708090a0b0c0d0e0f\","
         "\"expires\":9007199254740991}]}");
    seed("authorization-missing-secret",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"expires\":1}]}");
    seed("revocation-extra-field",
         "{\"revocations\":[{\"client\":\"c\",\"resource\":\"r\",\"at\":1}]}");
    seed("relay-token-space",
         "{\"relays\":[{\"id\":\"x\",\"address\":\"a.example\",\"port\":1,"
         "\"token\":\"a b\"}]}");
    seed("relay-address-bad",
         "{\"relays\":[{\"id\":\"x\",\"address\":\"a..example\",\"port\":1,"
         "\"token\":\"t\"}]}");
    seed("relay-port-zero",
         "{\"relays\":[{\"id\":\"x\",\"address\":\"a.example\",\"port\":0,"
         "\"token\":\"t\"}]}");
    seed("control-item-not-object", "{\"relays\":[1]}");
    seed("control-resource-not-object", "{\"resources\":[[]]}");
    seed("control-authorization-not-object", "{\"authorizations\":[null]}");
    seed("control-revocation-not-object", "{\"revocations\":[\"c\"]}");
    seed("control-not-object", "[{\"relays\":[]}]");
    seed("resource-ports-not-array",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
         "{\"from\":1,\"to\":2},\"gateway\":\"g\"}]}");
    seed("resource-protocols-not-strings",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\","
         "\"protocols\":[6],\"gateway\":\"g\"}]}");
    seed("authorization-expires-string",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"000102030405060708090a0b0c0d0e0f\",\"expires\":\"1\"}]}");
    /* a value missing before ',' or '}': the fast path must decline */
    seed("relay-port-missing",
         "{\"relays\":[{\"id\":\"x\",\"address\":\"a.example\",\"port\":,"
         "\"token\":\"t\"}]}");
    seed("range-from-missing",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"ports\":"
         "[{\"from\":,\"to\":2}],\"gateway\":\"g\"}]}");
    seed("resource-id-missing",
         "{\"resources\":[{\"id\":,\"cidr\":\"10.0.0.0/8\",\"gateway\":"
         "\"g\"}]}");
    seed("resource-cidr-missing",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":,\"gateway\":\"g\"}]}");
    seed("resource-protocol-missing",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\","
         "\"protocols\":[,\"tcp\"],\"gateway\":\"g\"}]}");
    seed("authorization-expires-missing",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"000102030405060708090a0b0c0d0e0f\",\"expires\":}]}");
    seed("authorization-secret-missing",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":,\"expires\":1}]}");
    seed("revocation-client-missing",
         "{\"revocations\":[{\"client\":,\"resource\":\"r\"}]}");
    seed("relay-token-missing",
         "{\"relays\":[{\"id\":\"x\",\"address\":\"a.example\",\"port\":1,"
         "\"token\":}]}");
    seed("relay-address-missing",
         "{\"relays\":[{\"id\":\"x\",\"address\":,\"port\":1,"
         "\"token\":\"t\"}]}");
    /* a broken range inside a resource, followed by text that reads as
     * further valid resources: the fast path must not resume there */
    seed("fast-path-broken-range-then-resource",
         "{\"resources\":[{\"id\":\"a\",\"cidr\":\"0.0.0.0/0\",\"ports\":"
         "[{\"from\":,{\"id\":\"b\",\"cidr\":\"0.0.0.0/0\",\"gateway\":"
         "\"g\"}]}");
    seed("fast-path-unknown-range-key-then-resource",
         "{\"resources\":[{\"id\":\"a\",\"cidr\":\"0.0.0.0/0\",\"ports\":"
         "[{\"x\":1,\"id\":\"b\",\"cidr\":\"0.0.0.0/0\",\"gateway\":"
         "\"g\"}]}");
    seed("control-escaped-strings",
         "{\"relays\":[{\"id\":\"r\\u0065lay\",\"address\":\"relay.example\","
         "\"port\":1,\"token\":\"a\\\"b\\\\c\"}]}");
    seed("control-truncated",
         "{\"resources\":[{\"id\":\"r1\",\"cidr\":\"10.0.0.0/8\",\"gate");
}

/* One seed per rule of the typed values, for the oracle of addr_ref.h:
 * fuzz/params.c plants every string and number of every input into each
 * host / IP / CIDR / integer / key position, so one value reaches them
 * all. Each is one mutant's counterexample (a leading zero, one past a
 * limit, a rule skipped). */
static void open_host(const char *name, const char *host)
{
    char buf[512];
    snprintf(buf, sizeof buf,
             "{\"substrate\":\"tcp\",\"host\":\"%s\",\"port\":1}", host);
    seed(name, buf);
}

static void resource_cidr(const char *name, const char *cidr)
{
    char buf[256];
    snprintf(buf, sizeof buf,
             "{\"resources\":[{\"id\":\"r\",\"cidr\":\"%s\",\"gateway\":"
             "\"g\"}]}", cidr);
    seed(name, buf);
}

static void addresses(void)
{
    char label[80];
    memset(label, 'a', 64);
    strcpy(label + 64, ".example");
    open_host("host-label-64", label);
    open_host("host-label-63", label + 1);
    open_host("host-label-trailing-hyphen", "db-.example");
    open_host("host-top-label-all-digits", "example.123");
    open_host("host-top-label-digits-then-letter", "example.123a");
    open_host("host-inet-aton-hex-label", "1.0x7f");
    open_host("host-inet-aton-uppercase-hex-label", "1.0X7F");
    open_host("host-inet-aton-bare-0x", "10.0x");
    open_host("host-hex-label-not-a-number", "1.0x7g");
    open_host("host-colon-after-letters", "db:5432");
    open_host("ipv4-three-parts", "10.1.2");
    open_host("ipv4-five-parts", "10.1.2.3.4");
    open_host("ipv4-empty-part", "10..2.3");
    open_host("ipv4-four-digit-octet", "10.1.2.0255");
    open_host("ipv4-255", "255.255.255.255");
    open_host("ipv6-five-hex-digits", "2001:db8::12345");
    open_host("ipv6-nine-groups-with-gap", "1:2:3:4::5:6:7:8");
    open_host("ipv6-gap-for-one-group-at-end", "1:2:3:4:5:6:7::");
    open_host("ipv6-gap-for-one-group-inside", "1::3:4:5:6:7:8");
    open_host("ipv6-triple-colon", "1:::2");
    open_host("ipv6-single-leading-colon", ":1:2:3:4:5:6:7");
    open_host("ipv6-quad-after-seven-groups", "1:2:3:4:5:6:7:1.2.3.4");
    open_host("ipv6-quad-after-six-groups", "1:2:3:4:5:6:1.2.3.4");
    open_host("ipv6-quad-leading-zero", "::ffff:1.2.3.04");
    open_host("ipv6-uppercase-hex", "2001:DB8::A:B");
    open_host("ipv6-leading-zeros-in-groups",
              "2001:0db8:0000:0000:0001:0000:0000:0001");
    resource_cidr("cidr-prefix-leading-zero", "10.0.0.0/08");
    resource_cidr("cidr-prefix-empty", "10.0.0.0/");
    resource_cidr("cidr-double-slash", "10.0.0.0//8");
    resource_cidr("cidr-v6-host-bits", "2001:db8::1/64");
    resource_cidr("cidr-v6-129", "::/129");
    resource_cidr("cidr-v4-32-host", "192.0.2.1/32");
    /* integers the fast path reads itself: 20 digits that wrap 64 bits
     * into range, the largest port, the smallest expiry */
    seed("relay-port-wraps-64-bits",
         "{\"relays\":[{\"id\":\"x\",\"address\":\"a.example\","
         "\"port\":18446744073709551696,\"token\":\"t\"}]}");
    seed("relay-port-65535",
         "{\"relays\":[{\"id\":\"x\",\"address\":\"a.example\","
         "\"port\":65535,\"token\":\"t\"}]}");
    seed("authorization-expires-wraps-64-bits",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"000102030405060708090a0b0c0d0e0f\","
         "\"expires\":18446744073709551617}]}");
    seed("authorization-expires-zero",
         "{\"authorizations\":[{\"client\":\"c\",\"resource\":\"r\","
         "\"secret\":\"000102030405060708090a0b0c0d0e0f\",\"expires\":0}]}");
    /* keys: a prefix or an extension of a name is unknown; an escaped
     * spelling of a name is that name */
    seed("key-prefix-of-name", "{\"substrate\":\"tcp\",\"hos\":\"a\",\"port\":1}");
    seed("key-name-extended",
         "{\"substrate\":\"tcp\",\"hostname\":\"a\",\"port\":1}");
    seed("key-escaped-in-relay",
         "{\"relays\":[{\"\\u0069d\":\"x\",\"addr\\u0065ss\":\"a.example\","
         "\"port\":1,\"t\\u006Fken\":\"t\"}]}");
    seed("key-escaped-solidus", "{\"address\":\"192.0.2.1\",\"p\\/rt\":1}");
    /* an escaped key that does not fit the decoder's 32-byte buffer is
     * unknown, even where the bytes that fit (up to an escape) spell a
     * name: "hos\u0074" then 29 bytes is 33 long; with 28, 32 (fits) */
    seed("key-escaped-name-then-too-long",
         "{\"substrate\":\"tcp\",\"hos\\u0074xxxxxxxxxxxxxxxxxxxxxxxxxxxxx\":\"a\","
         "\"port\":1,\"resource\\u0073xxxxxxxxxxxxxxxxxxxxxxxx\":[]}");
    seed("key-escaped-name-then-32-bytes",
         "{\"substrate\":\"tcp\",\"hos\\u0074xxxxxxxxxxxxxxxxxxxxxxxxxxxx\":\"a\","
         "\"port\":1}");
    /* the longest CIDR text (49 bytes: a full IPv6 with a dotted quad, /128),
     * the same with a \u0000 (NUL_IN_STRING, not too long), one byte more */
    resource_cidr("cidr-longest-text",
                  "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/128");
    resource_cidr("cidr-longest-text-with-nul",
                  "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.25\\u0000/128");
    resource_cidr("cidr-one-past-longest-text",
                  "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255/1280");
    /* a protocol of 15 bytes (the longest an enum reads) with a \u0000 is
     * NUL_IN_STRING; 16 bytes with one is BAD_ENUM */
    seed("protocol-15-bytes-with-nul",
         "{\"resources\":[{\"id\":\"r\",\"cidr\":\"10.0.0.0/8\",\"protocols\":"
         "[\"tcpxxxxxxxxxxx\\u0000\",\"tcpxxxxxxxxxxxx\\u0000\",\"tcpxxxxxxxxxxxx\","
         "\"tcpxxxxxxxxxxxxx\"],\"gateway\":\"g\"}]}");
}

static void json_level(void)
{
    nested("deep-array-64", 64, 0);
    nested("deep-array-65", 65, 0);
    nested("deep-object-64", 64, 1);
    nested("deep-object-65", 65, 1);
    nested("deep-array-3", 3, 0);
    nested("deep-array-4", 4, 0);
    SEED_BIN("utf8-overlong-in-string", "{\"a\":\"\xc0\xaf\"}");
    SEED_BIN("utf8-surrogate-in-string", "{\"a\":\"\xed\xa0\x80\"}");
    SEED_BIN("utf8-above-max-in-string", "{\"a\":\"\xf4\x90\x80\x80\"}");
    SEED_BIN("utf8-truncated-at-end", "\"\xe2\x82");
    /* DEL (0x7f) sits just below the continuation range, in every position */
    SEED_BIN("utf8-del-as-2nd-byte", "[\"\xc3\x7f\"]");
    SEED_BIN("utf8-del-as-3rd-byte", "[\"\xe2\x82\x7f\"]");
    SEED_BIN("utf8-del-as-4th-byte", "[\"\xf0\x9f\x98\x7f\"]");
    SEED_BIN("utf8-c0-as-3rd-byte", "[\"\xe2\x82\xc0\"]");
    SEED_BIN("utf8-valid-all-lengths", "[\"\xc2\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]");
    SEED_BIN("bom-then-object", "\xef\xbb\xbf{}");
    SEED_BIN("nul-in-string", "[\"a\x00\"]");
    seed("escape-bad", "[\"\\x41\"]");
    seed("escape-short-u", "[\"\\u12\"]");
    seed("escape-all", "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\ud834\\udd1e\"]");
    seed("number-big", "[123456789012345678901234567890,-9223372036854775809,"
                       "18446744073709551615,1e400,-0.0e-0]");
    seed("number-bad-leading-zero", "[01]");
    seed("number-bad-bare-dot", "[.5]");
    seed("number-bad-plus", "[+1]");
    seed("literals", "[true,false,null]");
    seed("literal-truncated", "[tru");
    seed("comment", "{} // no");
    seed("single-quotes", "{'a':1}");
    seed("two-values", "{} {}");
    seed("empty", "");
    /* strings ending within the last 8 bytes: the 8-byte scan must stop */
    seed("string-top-level-8-bytes", "\"abcdef\"");
    seed("string-unterminated-8-bytes", "\"abcdefg");
    seed("string-unterminated-9-bytes", "\"abcdefgh");
    seed("key-near-end", "{\"abcdefgh\":1}");
}

/* The validator checks UTF-8 64 bytes at a time, with a mask fast path for
 * two- and three-byte characters and a character that runs into the next
 * block checked whole: each kind of character - valid of every length,
 * and each way to be invalid - with its lead byte at the last positions
 * of a block and the first of the next, inside a string of an object (so
 * the decoders' fast paths meet it too). Values on both sides of the
 * block edge, not only the line that handles it. */
static void utf8_block_positions(void)
{
    static const struct {
        const char *name;
        const char *bytes;
    } kinds[] = {
        {"valid2", "\xc3\xa9"},          {"valid3", "\xe2\x82\xac"},
        {"valid4", "\xf0\x9f\x98\x80"},    {"valid3-e0", "\xe0\xa0\x80"},
        {"valid3-ed", "\xed\x9f\xbf"},     {"overlong2", "\xc1\xbf"},
        {"overlong3", "\xe0\x9f\xbf"},     {"surrogate", "\xed\xa0\x80"},
        {"overlong4", "\xf0\x8f\xbf\xbf"}, {"above-max", "\xf4\x90\x80\x80"},
        {"lead-f5", "\xf5\x80\x80\x80"},   {"lone-continuation", "\x80"},
        {"cut2", "\xc3\x41"},            {"cut3", "\xe2\x82\x41"},
        {"cut4", "\xf0\x9f\x98\x41"}};
    static const unsigned at[] = {60, 61, 62, 63, 64};
    size_t k, j;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (j = 0; j < sizeof at / sizeof at[0]; j++) {
            char doc[160], name[64];
            size_t n = 0, len = strlen(kinds[k].bytes);
            /* {"a":"xxx...<char>yyyyyyyy"} with the lead at offset at[j] */
            memcpy(doc, "{\"a\":\"", 6);
            n = 6;
            while (n < at[j]) doc[n++] = 'x';
            memcpy(doc + n, kinds[k].bytes, len);
            n += len;
            memcpy(doc + n, "yyyyyyyy\"}", 10);
            n += 10;
            snprintf(name, sizeof name, "utf8-block-%s-at-%u", kinds[k].name, at[j]);
            seed_n(name, doc, n);
        }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: params_seeds DIR\n");
        return 2;
    }
    out_dir = argv[1];
    open_params();
    listen_replies();
    control();
    addresses();
    json_level();
    utf8_block_positions();
    printf("params_seeds: wrote %u seeds to %s\n", written, out_dir);
    return 0;
}

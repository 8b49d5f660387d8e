/* impl_alktunnel.c - alktunnel.h's implementation as every harness, drill
 * and test tool links it: compiled once per flavour into
 * build/<flavour>/libalk.a (the Makefile, .clusterfuzzlite/build.sh and
 * fuzz/campaign.sh), plus the internals the harnesses check under external
 * names (testkit/alktunnel_internal.h says why). */
#define ALKTUNNEL_IMPLEMENTATION
#include "alktunnel.h"
#include "../testkit/alktunnel_internal.h"

/* Each constant the harnesses were given equals the implementation's. */
#define ALKT_INTERNAL_CHECK(name, value) \
    typedef char alkt_internal_check_##name[(name) == (value) ? 1 : -1];
ALKT_INTERNAL_CONSTANTS(ALKT_INTERNAL_CHECK)

int alkt_internal_json_scan_valid(const unsigned char *s, size_t n, size_t max_depth)
{
    return alkt__json_scan_valid(s, n, max_depth);
}
int alkt_internal_json_fast_valid(const unsigned char *s, size_t n, size_t max_depth)
{
    return alkt__json_fast_valid(s, n, max_depth);
}
int alkt_internal_open_slow(const char *json, size_t len, const alkt_json_limits *limits,
                            alkt_open_params *out, alkt_error *err)
{
    return alkt__open_slow(json, len, limits, out, err);
}
int alkt_internal_open_fast(const char *json, size_t len, const alkt_json_limits *limits,
                            alkt_open_params *out)
{
    return alkt__open_fast(json, len, limits, out);
}
int alkt_internal_control_slow(const char *json, size_t len, const alkt_json_limits *limits,
                               alkt_control *out, alkt_error *err)
{
    return alkt__control_slow(json, len, limits, out, err);
}
int alkt_internal_control_fast(const char *json, size_t len, const alkt_json_limits *limits,
                               alkt_control *out)
{
    return alkt__control_fast(json, len, limits, out);
}
void alkt_internal_put64(unsigned char *p, uint64_t v) { alkt__put64(p, v); }
uint64_t alkt_internal_get64(const unsigned char *p) { return alkt__get64(p); }
void alkt_internal_next_key(unsigned char key[ALKT_AEAD_KEY]) { alkt__next_key(key); }
uint64_t alkt_internal_log_room(const alkt_session *s) { return alkt__log_room(s); }
int alkt_internal_log_frame(alkt_session *s, unsigned type, uint32_t chan, const void *a,
                            size_t alen, const void *b, size_t blen)
{
    return alkt__log_frame(s, type, chan, a, alen, b, blen);
}
alkt__nconn *alkt_internal_nfind(const alkt_node *n, uint32_t h) { return alkt__nfind(n, h); }
alkt__grant *alkt_internal_grant_find(alkt__peer *p, uint32_t channel)
{
    return alkt__grant_find(p, channel);
}
void alkt_internal_resume_proof(alkt_session *s, const unsigned char *nonce, uint64_t fresh,
                                unsigned char out[32])
{
    alkt__resume_proof(s, nonce, fresh, out);
}

/* alktunnel_internal.h - the internals of alktunnel.h that the harnesses
 * check (white-box), for programs that link the implementation instead of
 * including it.
 *
 * The test programs link one build of each header's implementation per
 * flavour (build/<flavour>/libalk.a, made from fuzz/impl_<header>.c), so
 * the header's static functions and implementation-only constants are not
 * in a harness's translation unit. fuzz/impl_alktunnel.c defines each
 * internal a harness uses under an external name (alkt_internal_<name>);
 * here the harness gets the original name back, so it reads the same
 * whether the implementation is in its translation unit (the unit tests)
 * or linked. Drift cannot go unseen: impl_alktunnel.c includes this file
 * after the implementation, so a changed signature fails its build, and it
 * checks every constant below against the implementation's own. */
#ifndef ALKTUNNEL_INTERNAL_H
#define ALKTUNNEL_INTERNAL_H
#include "alktunnel.h"

/* Implementation-only constants the harnesses compare with: name, value. */
#define ALKT_INTERNAL_CONSTANTS(X)                                            \
    X(ALKT__S_ACTIVE, 1) X(ALKT__S_CLOSED, 2)          /* session state */     \
    X(ALKT__C_NONE, 0) X(ALKT__C_HANDSHAKE, 1) X(ALKT__C_UP, 2) /* its connection */ \
    X(ALKT__CODE_FULL, 0xff03) /* OPEN_ERR: no channel slot */                 \
    X(ALKT__DF_ABORT, 8)       /* datagram pump: aborted */                    \
    X(ALKT__P_LIVE, 2)         /* node peer slot in use */                      \
    X(ALKT__N_ROUTE, 4)        /* gateway connection reading a HELLO */        \
    X(ALKT__N_SESSION, 5)      /* a session's connection */

#ifdef __cplusplus
extern "C" {
#endif
int alkt_internal_json_scan_valid(const unsigned char *s, size_t n, size_t max_depth);
int alkt_internal_json_fast_valid(const unsigned char *s, size_t n, size_t max_depth);
int alkt_internal_open_slow(const char *json, size_t len, const alkt_json_limits *limits,
                            alkt_open_params *out, alkt_error *err);
int alkt_internal_open_fast(const char *json, size_t len, const alkt_json_limits *limits,
                            alkt_open_params *out);
int alkt_internal_control_slow(const char *json, size_t len, const alkt_json_limits *limits,
                               alkt_control *out, alkt_error *err);
int alkt_internal_control_fast(const char *json, size_t len, const alkt_json_limits *limits,
                               alkt_control *out);
void alkt_internal_put64(unsigned char *p, uint64_t v);
uint64_t alkt_internal_get64(const unsigned char *p);
void alkt_internal_next_key(unsigned char key[ALKT_AEAD_KEY]);
uint64_t alkt_internal_log_room(const alkt_session *s);
int alkt_internal_log_frame(alkt_session *s, unsigned type, uint32_t chan, const void *a,
                            size_t alen, const void *b, size_t blen);
alkt__nconn *alkt_internal_nfind(const alkt_node *n, uint32_t h);
alkt__grant *alkt_internal_grant_find(alkt__peer *p, uint32_t channel);
void alkt_internal_resume_proof(alkt_session *s, const unsigned char *nonce, uint64_t fresh,
                                unsigned char out[32]);
#ifdef __cplusplus
}
#endif

#ifndef ALKTUNNEL_IMPLEMENTATION_DONE
#define alkt__json_scan_valid alkt_internal_json_scan_valid
#define alkt__json_fast_valid alkt_internal_json_fast_valid
#define alkt__open_slow alkt_internal_open_slow
#define alkt__open_fast alkt_internal_open_fast
#define alkt__control_slow alkt_internal_control_slow
#define alkt__control_fast alkt_internal_control_fast
#define alkt__put64 alkt_internal_put64
#define alkt__get64 alkt_internal_get64
#define alkt__next_key alkt_internal_next_key
#define alkt__log_room alkt_internal_log_room
#define alkt__log_frame alkt_internal_log_frame
#define alkt__nfind alkt_internal_nfind
#define alkt__grant_find alkt_internal_grant_find
#define alkt__resume_proof alkt_internal_resume_proof
#define ALKT_INTERNAL_ENUM(name, value) name = value,
enum { ALKT_INTERNAL_CONSTANTS(ALKT_INTERNAL_ENUM) ALKT_INTERNAL_ENUM_END };
#undef ALKT_INTERNAL_ENUM
#endif

#endif /* ALKTUNNEL_INTERNAL_H */

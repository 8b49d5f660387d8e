/* impl_qcow2w.c - qcow2w.h's implementation as every harness and test tool
 * links it (build/<flavour>/libalk.a), plus the internals the harnesses use
 * under external names (testkit/qcow2w_internal.h). */
#define QCOW2W_IMPLEMENTATION
#include "qcow2w.h"
#include "../testkit/qcow2w_internal.h"

typedef char q2w_internal_check_sub[Q2W__SUB_GROW_RT == 1 ? 1 : -1];
typedef char q2w_internal_check_kinds[Q2W__K_RB == 1 && Q2W__K_L2 == 3 &&
                                      Q2W__S_VALID == 2 ? 1 : -1];

uint64_t q2w_internal_be64(const unsigned char *p) { return q2w__be64(p); }
uint32_t q2w_internal_be32(const unsigned char *p) { return q2w__be32(p); }
uint16_t q2w_internal_be16(const unsigned char *p) { return q2w__be16(p); }
void q2w_internal_put64(unsigned char *p, uint64_t v) { q2w__put64(p, v); }
void q2w_internal_put32(unsigned char *p, uint32_t v) { q2w__put32(p, v); }
void q2w_internal_put16(unsigned char *p, uint16_t v) { q2w__put16(p, v); }
uint64_t q2w_internal_rc_get(const unsigned char *blk, uint64_t i, uint32_t order)
{
    return q2w__rc_get(blk, i, order);
}
void q2w_internal_rc_set(unsigned char *blk, uint64_t i, uint32_t order, uint64_t v)
{
    q2w__rc_set(blk, i, order, v);
}
int q2w_internal_inflate(const unsigned char *in, size_t in_len, unsigned char *out,
                         size_t out_len)
{
    return q2w__inflate(in, in_len, out, out_len);
}
uint64_t q2w_internal_entry_len(const unsigned char *e) { return q2w__entry_len(e); }
int q2w_internal_resized(q2w_image *img) { return q2w__resized(img); }

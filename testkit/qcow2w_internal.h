/* qcow2w_internal.h - the internals of qcow2w.h that the harnesses use
 * (white-box), for programs that link the implementation instead of
 * including it: fuzz/impl_qcow2w.c defines each under an external name
 * (q2w_internal_<name>), this file gives the original name back. See
 * testkit/alktunnel_internal.h for the scheme and why drift cannot go unseen. */
#ifndef QCOW2W_INTERNAL_H
#define QCOW2W_INTERNAL_H
#include "qcow2w.h"

/* Table-entry bits, as the implementation defines them: a second identical
 * definition is allowed, a different one is an error in impl_qcow2w.c. */
#define Q2W__OFF_MASK 0x00fffffffffffe00ull /* bits 9..55 */
#define Q2W__COPIED (1ull << 63)
#define Q2W__COMPRESSED (1ull << 62)
#define Q2W__ZERO 1ull

#ifdef __cplusplus
extern "C" {
#endif
uint64_t q2w_internal_be64(const unsigned char *p);
uint32_t q2w_internal_be32(const unsigned char *p);
uint16_t q2w_internal_be16(const unsigned char *p);
void q2w_internal_put64(unsigned char *p, uint64_t v);
void q2w_internal_put32(unsigned char *p, uint32_t v);
void q2w_internal_put16(unsigned char *p, uint16_t v);
uint64_t q2w_internal_rc_get(const unsigned char *blk, uint64_t i, uint32_t order);
void q2w_internal_rc_set(unsigned char *blk, uint64_t i, uint32_t order, uint64_t v);
int q2w_internal_inflate(const unsigned char *in, size_t in_len, unsigned char *out,
                         size_t out_len);
uint64_t q2w_internal_entry_len(const unsigned char *e);
int q2w_internal_resized(q2w_image *img);
#ifdef __cplusplus
}
#endif

#ifndef QCOW2W_IMPLEMENTATION_DONE
#define q2w__be64 q2w_internal_be64
#define q2w__be32 q2w_internal_be32
#define q2w__be16 q2w_internal_be16
#define q2w__put64 q2w_internal_put64
#define q2w__put32 q2w_internal_put32
#define q2w__put16 q2w_internal_put16
#define q2w__rc_get q2w_internal_rc_get
#define q2w__rc_set q2w_internal_rc_set
#define q2w__inflate q2w_internal_inflate
#define q2w__entry_len q2w_internal_entry_len
#define q2w__resized q2w_internal_resized
enum { Q2W__SUB_GROW_RT = 1 }; /* the operation is inside refcount-table growth */
/* cache slot kinds (q2w__slot.kind) and the valid state */
enum { Q2W__K_RB = 1, Q2W__K_L2 = 3, Q2W__S_VALID = 2 };
#endif

#endif /* QCOW2W_INTERNAL_H */

/* arq.h - a small sans-IO reliable transfer over datagrams, the protocol
 * alksim's worked example tests (examples/arq_scenario.h).
 *
 * One sender moves one message to one receiver over a network that loses,
 * duplicates and reorders datagrams. The sender cuts the message into
 * segments of at most `mss` bytes, keeps up to `send_window` unacknowledged
 * segments in flight, and retransmits from the oldest unacknowledged one
 * (go-back-N) when its retransmission timer fires or after three duplicate
 * acknowledgements. The receiver keeps a ring of `recv_window` slots for
 * segments that arrive early, delivers in order, and acknowledges
 * cumulatively (the number of the next segment it needs).
 *
 * Like every alk component it is sans-IO: bytes and time go in
 * (handle_data / handle_ack / handle_timeout with `now`), datagrams and
 * deadlines come out (poll_transmit / poll_timeout). Memory is the
 * caller's: the message to send, and the receiver's output buffer.
 *
 * Wire format (big-endian):
 *   DATA  [1][seq: u32][segments: u32][len: u16][payload: len]
 *   ACK   [2][next expected seq: u32]
 *
 * ARQ_PLANTED_BUG (compile-time switch, for the tutorial) plants a realistic
 * off-by-one at the receive window's upper edge: a segment exactly
 * recv_window ahead is accepted into the ring, where it lands in the slot
 * of the segment the receiver is waiting for. */
#ifndef ARQ_H
#define ARQ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ARQ_NEVER UINT64_MAX
#define ARQ_MAX_WINDOW 16
#define ARQ_MAX_MSS 256
#define ARQ_HEADER 11
#define ARQ_MAX_PACKET (ARQ_HEADER + ARQ_MAX_MSS)

typedef struct arq_config {
    uint32_t mss;          /* 1..ARQ_MAX_MSS */
    uint32_t send_window;  /* 1..ARQ_MAX_WINDOW */
    uint32_t recv_window;  /* 1..ARQ_MAX_WINDOW */
    uint64_t rto_ns;       /* retransmission timeout */
} arq_config;

typedef struct arq_sender {
    arq_config cfg;
    const uint8_t *msg;
    size_t len;
    uint32_t segments;
    uint32_t base;        /* oldest unacknowledged segment */
    uint32_t next;        /* next segment to (re)send */
    uint32_t dup_acks;
    uint64_t rto_deadline;
    uint64_t retransmissions;
} arq_sender;

typedef struct arq_receiver {
    arq_config cfg;
    uint8_t *out;          /* delivered bytes, in order */
    size_t cap, delivered;
    uint32_t expected;     /* next segment to deliver */
    uint32_t segments;     /* 0 until the first DATA says */
    uint8_t slot_used[ARQ_MAX_WINDOW];
    uint32_t slot_seq[ARQ_MAX_WINDOW];
    uint16_t slot_len[ARQ_MAX_WINDOW];
    uint8_t slot_data[ARQ_MAX_WINDOW][ARQ_MAX_MSS];
    int ack_pending;
} arq_receiver;

static inline void arq__put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static inline uint32_t arq__get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | p[3];
}

static inline void arq_sender_init(arq_sender *s, const arq_config *cfg,
                                   const uint8_t *msg, size_t len)
{
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    s->msg = msg;
    s->len = len;
    s->segments = (uint32_t)((len + cfg->mss - 1) / cfg->mss);
    if (s->segments == 0)
        s->segments = 1; /* an empty message is one empty segment */
    s->rto_deadline = ARQ_NEVER;
}

static inline int arq_sender_done(const arq_sender *s)
{
    return s->base == s->segments;
}

/* The next datagram to send, or 0. Arms the timer with what it sends. */
static inline size_t arq_sender_poll_transmit(arq_sender *s, uint64_t now,
                                              uint8_t *out, size_t cap)
{
    size_t off, n;
    if (s->next >= s->segments || s->next >= s->base + s->cfg.send_window ||
        cap < ARQ_MAX_PACKET)
        return 0;
    off = (size_t)s->next * s->cfg.mss;
    n = s->len - off < s->cfg.mss ? s->len - off : s->cfg.mss;
    out[0] = 1;
    arq__put32(out + 1, s->next);
    arq__put32(out + 5, s->segments);
    out[9] = (uint8_t)(n >> 8);
    out[10] = (uint8_t)n;
    if (n)
        memcpy(out + ARQ_HEADER, s->msg + off, n);
    s->next++;
    if (s->rto_deadline == ARQ_NEVER)
        s->rto_deadline = now + s->cfg.rto_ns;
    return ARQ_HEADER + n;
}

static inline int arq_sender_has_output(const arq_sender *s)
{
    return s->next < s->segments && s->next < s->base + s->cfg.send_window;
}

static inline uint64_t arq_sender_poll_timeout(const arq_sender *s)
{
    return s->rto_deadline;
}

static inline void arq_sender_handle_timeout(arq_sender *s, uint64_t now)
{
    if (s->rto_deadline == ARQ_NEVER || now < s->rto_deadline)
        return;
    /* Go back to the oldest unacknowledged segment; the first resend arms
     * the timer again. */
    s->retransmissions += s->next - s->base;
    s->next = s->base;
    s->dup_acks = 0;
    s->rto_deadline = ARQ_NEVER;
}

/* Malformed or stale acknowledgements are ignored. */
static inline void arq_sender_handle_ack(arq_sender *s, uint64_t now,
                                         const uint8_t *p, size_t n)
{
    uint32_t ack;
    if (n != 5 || p[0] != 2)
        return;
    ack = arq__get32(p + 1);
    if (ack > s->segments || ack < s->base)
        return;
    if (ack > s->base) {
        s->base = ack;
        if (s->next < s->base)
            s->next = s->base;
        s->dup_acks = 0;
        s->rto_deadline = s->base == s->next ? ARQ_NEVER : now + s->cfg.rto_ns;
    } else if (s->next > s->base && ++s->dup_acks == 3) {
        s->retransmissions += s->next - s->base;
        s->next = s->base; /* fast retransmit */
        s->dup_acks = 0;
    }
}

static inline void arq_receiver_init(arq_receiver *r, const arq_config *cfg,
                                     uint8_t *out, size_t cap)
{
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    r->out = out;
    r->cap = cap;
}

static inline int arq_receiver_done(const arq_receiver *r)
{
    return r->segments && r->expected == r->segments;
}

static inline void arq_receiver_handle_data(arq_receiver *r, const uint8_t *p,
                                            size_t n)
{
    uint32_t seq, segs, slot;
    size_t len;
    if (n < ARQ_HEADER || p[0] != 1)
        return;
    seq = arq__get32(p + 1);
    segs = arq__get32(p + 5);
    len = ((size_t)p[9] << 8) | p[10];
    if (len != n - ARQ_HEADER || len > r->cfg.mss || segs == 0 ||
        seq >= segs || (r->segments && segs != r->segments))
        return;
    r->segments = segs;
    r->ack_pending = 1;
#ifdef ARQ_PLANTED_BUG
    if (seq < r->expected || seq - r->expected > r->cfg.recv_window)
        return;
#else
    if (seq < r->expected || seq - r->expected >= r->cfg.recv_window)
        return; /* old, or beyond the window: just acknowledge */
#endif
    slot = seq % r->cfg.recv_window;
    r->slot_used[slot] = 1;
    r->slot_seq[slot] = seq;
    r->slot_len[slot] = (uint16_t)len;
    memcpy(r->slot_data[slot], p + ARQ_HEADER, len);
    /* Deliver whatever is now in order. */
    for (;;) {
        uint32_t s = r->expected % r->cfg.recv_window;
        if (!r->slot_used[s] || r->expected >= r->segments)
            break;
        if (r->delivered + r->slot_len[s] > r->cap)
            break; /* the caller's buffer is full: stop delivering */
        memcpy(r->out + r->delivered, r->slot_data[s], r->slot_len[s]);
        r->delivered += r->slot_len[s];
        r->slot_used[s] = 0;
        r->expected++;
    }
}

static inline int arq_receiver_has_output(const arq_receiver *r)
{
    return r->ack_pending;
}

static inline size_t arq_receiver_poll_transmit(arq_receiver *r, uint8_t *out,
                                                size_t cap)
{
    if (!r->ack_pending || cap < 5)
        return 0;
    out[0] = 2;
    arq__put32(out + 1, r->expected);
    r->ack_pending = 0;
    return 5;
}

#endif /* ARQ_H */

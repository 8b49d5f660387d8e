/* alksim.h - deterministic simulation for sans-IO code
 * version 0.1.0 - single-header C99 library, part of alk
 *
 * Everything a sans-IO state machine needs to be driven through generated
 * scenarios and checked: a byte source that turns fuzzer input (or a seed)
 * into decisions, a PRNG, virtual time with an event queue, a datagram
 * network with faults and NAT, a block device with a volatile write cache
 * and crash semantics, and a scenario runner with trace, replay and
 * shrinking. It knows nothing about what it simulates.
 *
 * QUICK START
 *
 *   #define ALKSIM_IMPLEMENTATION     // in exactly one .c file
 *   #include "alksim.h"
 *
 *   // The system under test and its reference model: a counter and its double.
 *   typedef struct world { unsigned system, model; } world;
 *   static world w;
 *
 *   static void *setup(alksim_ctx *ctx) { (void)ctx; w.system = w.model = 0; return &w; }
 *   static int step(alksim_ctx *ctx, void *st, unsigned kind) {
 *       world *s = (world *)st;
 *       unsigned by = (unsigned)alksim_range(ctx->src, 1, 10);   // drawn
 *       if (kind == 0) { s->system += by; s->model += by; }      // "add"
 *       else { s->system = 0; s->model = 0; }                    // "reset"
 *       return 0;
 *   }
 *   static int check(alksim_ctx *ctx, void *st) {                // invariants
 *       const world *s = (const world *)st;
 *       (void)ctx;
 *       return s->system == s->model ? 0 : -1;
 *   }
 *   static const char *const kinds[] = {"add", "reset"};
 *
 *   int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
 *   int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) {
 *       static alksim_scenario sc;   // zeroed: no heal, quiesce or teardown,
 *       sc.name = "counter";         // the default step limits
 *       sc.kinds = kinds;
 *       sc.kind_count = 2;
 *       sc.setup = setup;
 *       sc.step = step;
 *       sc.check = check;
 *       return alksim_fuzz_one(&sc, d, n);   // aborts with a trace on failure
 *   }
 *
 * CONFIGURATION (define before including the implementation)
 *
 *   ALKSIM_IMPLEMENTATION   emit the implementation (ALK_IMPLEMENTATION: all)
 *   ALKSIM_STATIC           make every function static
 *   ALKSIM_ASSERT(c)        internal invariants; default assert(c)
 *   ALKSIM_NO_STDIO         leave out the parts that print or write files
 *                           (alksim_fuzz_one, alksim_print_trace, shrink
 *                           reports); the core never allocates or does I/O
 *
 * API OVERVIEW
 *
 *   Byte source   alksim_source_init_bytes / _init_rng, alksim_u8/u16/u32/
 *                 u64, alksim_bool, alksim_range, alksim_pick,
 *                 alksim_weighted, alksim_len, alksim_chance (control draws,
 *                 from the END of the input); alksim_bytes (payload, from
 *                 the FRONT); alksim_source_done.
 *   PRNG          alksim_rng_seed, alksim_rng_next, alksim_rng_below,
 *                 alksim_rng_chance (xoshiro256** seeded by splitmix64).
 *   Time, queue   alksim_queue_init/push/pop/peek: a binary heap ordered by
 *                 (time, seq) so ties break in insertion order.
 *   Nodes         alksim_node_init, alksim_node_deadline, alksim_node_fire:
 *                 drive a node's poll_timeout/handle_timeout loop; queued
 *                 output counts as due now, past deadlines and spinning are
 *                 errors.
 *   Network       alksim_net_*: hosts with addresses, directed links with
 *                 latency, jitter, loss, duplication, reordering, MTU and
 *                 partitions; roaming (address change); NAT with endpoint-
 *                 independent or -dependent mapping and filtering, expiry.
 *   Streams       alksim_stream_*: connect / refuse / accept, bounded
 *                 buffers (flow control), drawn segmentation, bandwidth,
 *                 stalls, partitions that hold bytes back, half-close per
 *                 direction, reset.
 *   Disk          alksim_disk_*: sectors, volatile write cache, flush
 *                 barrier, crash (drop / tear / reorder unflushed writes as
 *                 the source decides), injected EIO.
 *   Runner        alksim_run (safety phase, then heal + bounded liveness
 *                 phase), swarm testing, trace output and trace hash,
 *                 alksim_shrink (delta debugging over the input bytes),
 *                 alksim_fuzz_one (the LLVMFuzzerTestOneInput body),
 *                 alksim_run_seed / alksim_seed_input (seed mode: run I of
 *                 seed S, for soaks; a failure is an input to save and
 *                 shrink). examples/sim_network.c puts these together.
 *
 *   Configs: every zero field of alksim_net_config, alksim_streams_config
 *   and alksim_disk_config means its documented default
 *   (ALKSIM_*_DEFAULT_*), and a NULL config means all of them.
 *
 * DESIGN NOTES
 *
 *   Mutation locality: every decision is a fixed-width draw; ranges map
 *   with a modulo, never a rejection loop; lengths are drawn (from the end)
 *   before contents (from the front), so a byte flip changes one decision
 *   and every prefix of an input is a valid, shorter scenario. Exhausted
 *   draws return zero, which every API maps to its safe default (minimum
 *   of a range, "no" for alksim_chance: no loss, no fault, no crash tear).
 *   No floats anywhere in a decision: probabilities are integer ratios.
 *
 *   Determinism: nothing reads a clock or a global RNG; the same input gives
 *   the same trace, bit for bit (alksim_result.trace_hash).
 *
 *   Memory: every object works in caller memory sized by a *_mem_size()
 *   function (0 if the configuration's size overflows), 8-byte aligned;
 *   init refuses too little, misaligned or overflowing memory. No malloc.
 *   The size is what the object uses: its tables, each rounded up to 8
 *   bytes, with nothing unused past the last one.
 *   Threading: no globals; one object per thread.
 *
 *   Limits and model choices: hosts, datagram slots, NAT entries, stream
 *   connections and buffers, disk size and cache are fixed at init. A full
 *   datagram pool drops (counted as overflow), like a full router queue; a
 *   full NAT table evicts its least recently used entry; a full disk cache
 *   writes its oldest sector back, as a drive would. Datagram partitions,
 *   routes and NAT filters are checked on arrival (roaming strands what is
 *   in flight); link parameters are those at send time. A NAT's public
 *   address belongs to one host (no hairpinning); hosts behind a NAT are
 *   reached only through it. Stream connects are decided when requested
 *   (listening, reachable both ways, refusal drawn); a partition stalls a
 *   stream rather than breaking it; segments held back are due at once
 *   after the heal and keep their scheduled (earlier) event times. NAT
 *   external ports count up from 20000 and wrap without a collision check
 *   (after some 45,000 mappings). Reading a disk sector sees its newest
 *   cached version; a crash keeps, per sector, the durable content or any
 *   one cached version.
 *
 * ERRORS: negative alksim_result codes; alksim_strerror(code). An init that
 * refuses says why in the object's `error` field (alksim_error_info: the
 * rule, the value, the bound), e.g. "mem_len: less than *_mem_size()".
 *   ALKSIM_ERR_INVALID_ARGUMENT  NULL, out-of-range host, too little or
 *                                misaligned memory, a size that overflows
 *   ALKSIM_ERR_FULL              queue or connection slots exhausted
 *   ALKSIM_ERR_DEADLINE_PAST     alksim_node_deadline: a deadline before now
 *   ALKSIM_ERR_SPIN              alksim_node_fire: fired > spin_limit times
 *                                at one instant
 *   ALKSIM_ERR_TOO_LARGE         datagram larger than the network's slots
 *   ALKSIM_ERR_IO, _RANGE        disk: injected EIO; access past the end
 *   ALKSIM_ERR_CONSERVATION      alksim_net_check: the books do not balance
 *   ALKSIM_ERR_CLOSED            stream side not open, or already shut
 *   ALKSIM_ERR_FAILED, _LIVENESS alksim_run: an invariant failed; work was
 *                                still pending after the liveness bound
 *   ALKSIM_NONE (1) is a status: nothing due.
 */
#ifndef ALKSIM_H
#define ALKSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef ALKSIM_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define ALKSIMDEF static __attribute__((unused))
#else
#define ALKSIMDEF static
#endif
#else
#define ALKSIMDEF extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ALKSIM_NEVER UINT64_MAX

#define ALKSIM_RESULT_LIST(X)                                                  \
    X(ALKSIM_OK, 0, "ok")                                                      \
    X(ALKSIM_NONE, 1, "nothing due")                                           \
    X(ALKSIM_ERR_INVALID_ARGUMENT, -1, "invalid argument")                     \
    X(ALKSIM_ERR_FULL, -2, "caller-provided capacity exhausted")               \
    X(ALKSIM_ERR_DEADLINE_PAST, -3, "node reported a deadline in the past")   \
    X(ALKSIM_ERR_SPIN, -4, "node spins: fired without making progress")       \
    X(ALKSIM_ERR_TOO_LARGE, -5, "datagram larger than the network's slots")   \
    X(ALKSIM_ERR_IO, -6, "injected I/O error")                                 \
    X(ALKSIM_ERR_RANGE, -7, "access outside the device")                       \
    X(ALKSIM_ERR_CONSERVATION, -8, "network conservation violated")            \
    X(ALKSIM_ERR_FAILED, -9, "scenario invariant failed")                      \
    X(ALKSIM_ERR_LIVENESS, -10, "work still pending after the liveness bound") \
    X(ALKSIM_ERR_CLOSED, -11, "stream not open for this operation")

typedef enum alksim_result {
#define ALKSIM__ENUM(name, value, text) name = value,
    ALKSIM_RESULT_LIST(ALKSIM__ENUM)
#undef ALKSIM__ENUM
    ALKSIM_RESULT_END_
} alksim_result;

ALKSIMDEF const char *alksim_strerror(int code);

/* Why an init refused: kept in the `error` field of the object it was asked
 * to set up (net, streams, disk), as alkc_error_info and q2w_error do for
 * the other headers. After a refusal only that field is meaningful; after a
 * success it is zero (code ALKSIM_OK, what NULL). */
typedef struct alksim_error_info {
    int code;         /* the alksim_result init returned */
    const char *what; /* static text naming the argument and the rule */
    uint64_t value;   /* the offending value (bytes given, address bits) */
    uint64_t limit;   /* the bound it broke (bytes needed); 0 when none */
} alksim_error_info;

/* ---- PRNG: xoshiro256**, seeded through splitmix64 ---------------------- */
typedef struct alksim_rng {
    uint64_t s[4];
} alksim_rng;

ALKSIMDEF void alksim_rng_seed(alksim_rng *rng, uint64_t seed);
ALKSIMDEF uint64_t alksim_rng_next(alksim_rng *rng);
/* Uniform-ish in [0, n): a 64-bit modulo, bias below 2^-40 for n < 2^24. */
ALKSIMDEF uint64_t alksim_rng_below(alksim_rng *rng, uint64_t n);
/* 1 with probability num/den (integer ratio, den > 0). */
ALKSIMDEF int alksim_rng_chance(alksim_rng *rng, uint32_t num, uint32_t den);
ALKSIMDEF uint64_t alksim_splitmix64(uint64_t *state);

/* ---- Byte source ---------------------------------------------------------
 * Control draws (integers, bool, range, pick, weighted, len, chance) consume
 * bytes from the END of the input, moving backwards, multi-byte values
 * big-endian in that order. Payload draws (alksim_bytes) consume from the
 * FRONT. When the two cursors meet the source is exhausted: every further
 * draw yields zeros and `done` is set. A source made by _init_rng draws from
 * the PRNG instead and is never exhausted. */
typedef struct alksim_source {
    const uint8_t *data;
    size_t size;
    size_t front;   /* payload bytes consumed from the start */
    size_t back;    /* control bytes consumed from the end */
    int done;       /* a draw wanted more bytes than were left */
    int seeded;     /* PRNG-backed */
    alksim_rng rng;
    uint64_t draws; /* control decisions drawn */
} alksim_source;

ALKSIMDEF void alksim_source_init_bytes(alksim_source *src, const void *data,
                                        size_t size);
ALKSIMDEF void alksim_source_init_rng(alksim_source *src, uint64_t seed);
ALKSIMDEF int alksim_source_done(const alksim_source *src);
ALKSIMDEF size_t alksim_source_remaining(const alksim_source *src);

ALKSIMDEF uint8_t alksim_u8(alksim_source *src);
ALKSIMDEF uint16_t alksim_u16(alksim_source *src);
ALKSIMDEF uint32_t alksim_u32(alksim_source *src);
ALKSIMDEF uint64_t alksim_u64(alksim_source *src);
ALKSIMDEF int alksim_bool(alksim_source *src);
/* lo..hi inclusive; draws the fewest bytes that cover hi - lo. */
ALKSIMDEF uint64_t alksim_range(alksim_source *src, uint64_t lo, uint64_t hi);
/* 0..n-1 (0 when n == 0). */
ALKSIMDEF size_t alksim_pick(alksim_source *src, size_t n);
/* Index i with probability w[i] / sum(w); zero weights are never chosen
 * unless all are zero (then 0). */
ALKSIMDEF size_t alksim_weighted(alksim_source *src, const uint32_t *w,
                                 size_t n);
/* 0..max. */
ALKSIMDEF size_t alksim_len(alksim_source *src, size_t max);
/* 1 with probability num/den; an exhausted source answers 0 (no fault). */
ALKSIMDEF int alksim_chance(alksim_source *src, uint32_t num, uint32_t den);
/* n payload bytes from the front into out; zero-filled once exhausted. */
ALKSIMDEF void alksim_bytes(alksim_source *src, void *out, size_t n);

/* ---- Event queue: binary heap in caller memory -------------------------- */
typedef struct alksim_event {
    uint64_t time;
    uint64_t seq;   /* insertion order: the tie-breaker */
    uint32_t kind;  /* the caller's */
    uint32_t target;
    uint64_t arg;
} alksim_event;

typedef struct alksim_queue {
    alksim_event *heap;
    size_t cap, len;
    uint64_t next_seq;
} alksim_queue;

ALKSIMDEF int alksim_queue_init(alksim_queue *q, alksim_event *mem,
                                size_t cap);
ALKSIMDEF int alksim_queue_push(alksim_queue *q, uint64_t time, uint32_t kind,
                                uint32_t target, uint64_t arg);
/* ALKSIM_OK and the earliest event, or ALKSIM_NONE when empty. */
ALKSIMDEF int alksim_queue_pop(alksim_queue *q, alksim_event *out);
ALKSIMDEF const alksim_event *alksim_queue_peek(const alksim_queue *q);

/* ---- Driving a sans-IO node's timers ------------------------------------ */
typedef struct alksim_node {
    void *ctx;
    /* The node's next deadline, ALKSIM_NEVER for none. */
    uint64_t (*poll_timeout)(void *ctx);
    /* Non-zero while the node holds output it has not handed over yet. */
    int (*has_output)(void *ctx);
    void (*handle_timeout)(void *ctx, uint64_t now);
    /* bookkeeping for spin detection */
    uint64_t last_fire_time;
    unsigned fires_at_same_time;
    unsigned spin_limit; /* fires allowed at one instant; 0 = 64 */
} alksim_node;

ALKSIMDEF void alksim_node_init(alksim_node *node, void *ctx,
                                uint64_t (*poll_timeout)(void *),
                                int (*has_output)(void *),
                                void (*handle_timeout)(void *, uint64_t));
/* When must the driver look at the node next? Output already queued makes
 * it due now (a driver sleeping until the reported deadline would otherwise
 * delay those packets). A deadline before `now` is reported as
 * ALKSIM_ERR_DEADLINE_PAST in *err (the deadline is still returned). */
ALKSIMDEF uint64_t alksim_node_deadline(alksim_node *node, uint64_t now,
                                        int *err);
/* Calls handle_timeout if the node's own deadline is due; counts repeated
 * fires at the same instant and returns ALKSIM_ERR_SPIN past the limit. */
ALKSIMDEF int alksim_node_fire(alksim_node *node, uint64_t now);

/* ---- Network ------------------------------------------------------------ */
typedef struct alksim_addr {
    uint32_t ip;
    uint16_t port;
} alksim_addr;

/* A directed link's behaviour. Ratios are per 65536. */
typedef struct alksim_link {
    uint64_t latency_ns;
    uint64_t jitter_ns;  /* extra delay drawn in 0..jitter_ns per datagram */
    uint32_t loss;       /* chance of loss, /65536 */
    uint32_t dup;        /* chance of a duplicate copy, /65536 */
    uint32_t reorder;    /* chance of an extra latency_ns + jitter delay */
    uint32_t mtu;        /* larger datagrams are dropped; 0 = slot size */
} alksim_link;

enum alksim_nat_mapping { ALKSIM_NAT_EIM = 0, ALKSIM_NAT_EDM = 1 };
enum alksim_nat_filtering {
    ALKSIM_NAT_EIF = 0, /* endpoint-independent: anyone may send in */
    ALKSIM_NAT_ADF = 1, /* address-dependent: only IPs we sent to */
    ALKSIM_NAT_APDF = 2 /* address and port dependent */
};

typedef struct alksim_nat_config {
    uint32_t public_ip;
    int mapping;        /* alksim_nat_mapping */
    int filtering;      /* alksim_nat_filtering */
    uint64_t expiry_ns; /* idle mapping lifetime; 0 = never expires */
} alksim_nat_config;

/* A zero field means its default; a NULL config means every default. */
#define ALKSIM_NET_DEFAULT_HOSTS 2
#define ALKSIM_NET_DEFAULT_IN_FLIGHT 256
#define ALKSIM_NET_DEFAULT_SLOT_SIZE 1500
#define ALKSIM_NET_DEFAULT_NAT_MAPPINGS 16
typedef struct alksim_net_config {
    uint32_t hosts;         /* hosts 0..hosts-1 (0 = 2) */
    uint32_t max_in_flight; /* datagram slots (0 = 256) */
    uint32_t slot_size;     /* largest datagram carried (0 = 1500) */
    uint32_t nat_mappings;  /* mapping entries per NATed host (0 = 16) */
} alksim_net_config;

typedef struct alksim_net_stats {
    uint64_t sent, duplicated, delivered, lost;
    uint64_t dropped_partition, dropped_mtu, dropped_no_route;
    uint64_t dropped_overflow, dropped_nat;
    uint64_t in_flight;
} alksim_net_stats;

typedef struct alksim_datagram {
    alksim_addr src, dst; /* as the receiver sees them (after NAT) */
    uint32_t to_host;
    const uint8_t *data;
    size_t len;
    uint64_t sent_at, delivered_at;
    uint64_t id;          /* send sequence number; a duplicate shares it */
    int duplicate;        /* 1 for the extra copy */
} alksim_datagram;

typedef struct alksim_net_host alksim_net_host;
typedef struct alksim_net_slot alksim_net_slot;
typedef struct alksim_nat_entry alksim_nat_entry;

typedef struct alksim_net {
    alksim_net_config cfg;       /* as used: zero fields filled in */
    alksim_error_info error;     /* why init refused */
    alksim_link *links;          /* hosts x hosts */
    uint8_t *partitioned;        /* hosts x hosts, 1 = from cannot reach to */
    alksim_net_host *host;
    alksim_nat_entry *nat;       /* hosts x nat_mappings */
    alksim_net_slot *slots;
    uint8_t *payload;            /* max_in_flight x slot_size */
    alksim_queue arrivals;       /* slot index (target) by arrival time,
                                    ties in send order */
    uint32_t *free_slots;
    uint32_t free_len;
    uint64_t next_id;
    int32_t last_delivered;      /* slot to free at the next deliver call */
    uint32_t check_epoch;        /* alksim_net_check's marker */
    alksim_net_stats stats;
} alksim_net;

/* Bytes of caller memory for cfg (NULL = every default); 0 exactly when
 * init would refuse the configuration itself (its size overflows). */
ALKSIMDEF size_t alksim_net_mem_size(const alksim_net_config *cfg);
/* ALKSIM_ERR_INVALID_ARGUMENT with net->error saying why: NULL, misaligned
 * or too little memory, or a configuration too large to size. */
ALKSIMDEF int alksim_net_init(alksim_net *net, const alksim_net_config *cfg,
                              void *mem, size_t mem_len);
/* Host h starts with the address 0x0a000001 + h (10.0.0.h+1). A NAT hands
 * out external ports from 20000 up. */
ALKSIMDEF int alksim_net_set_link(alksim_net *net, uint32_t from, uint32_t to,
                                  const alksim_link *link);
ALKSIMDEF int alksim_net_set_ip(alksim_net *net, uint32_t host, uint32_t ip);
ALKSIMDEF uint32_t alksim_net_ip(const alksim_net *net, uint32_t host);
ALKSIMDEF int alksim_net_set_nat(alksim_net *net, uint32_t host,
                                 const alksim_nat_config *nat);
/* One-way: `from` can no longer reach `to`. Datagrams in flight are checked
 * when they arrive. Call both ways for a symmetric partition. */
ALKSIMDEF int alksim_net_partition(alksim_net *net, uint32_t from, uint32_t to,
                                   int blocked);
ALKSIMDEF void alksim_net_heal(alksim_net *net);
/* 1 while `from` cannot reach `to`. */
ALKSIMDEF int alksim_net_blocked(const alksim_net *net, uint32_t from,
                                 uint32_t to);
/* Send from host `from`, source port `sport`, to `dst`. Faults (loss, dup,
 * jitter, reorder) are drawn from `faults`. Drops are silent, as on a real
 * network, and counted in the stats; errors are for misuse only.
 * The draws, in this order (part of the replay contract: one input is one
 * scenario): none when the datagram has no route or exceeds the link's
 * MTU; else loss (alksim_chance(link->loss, 65536)), the original's delay
 * unless lost, dup (alksim_chance(link->dup, 65536)), the copy's delay if
 * duplicated. A delay is latency_ns, plus alksim_range(0, jitter_ns) when
 * jitter_ns > 0, plus latency_ns + jitter_ns + 1 when reordered
 * (alksim_chance(link->reorder, 65536)); the datagram arrives at now +
 * delay. A copy drawn while every slot is in flight is counted as
 * dropped_overflow after its draws. */
ALKSIMDEF int alksim_net_send(alksim_net *net, alksim_source *faults,
                              uint64_t now, uint32_t from, uint16_t sport,
                              alksim_addr dst, const void *data, size_t len);
/* Earliest arrival time, ALKSIM_NEVER when nothing is in flight. */
ALKSIMDEF uint64_t alksim_net_next_time(const alksim_net *net);
/* The next datagram arriving at or before `now` (ALKSIM_OK), or
 * ALKSIM_NONE. The view is valid until the next call. Datagrams that meet a
 * partition, an unknown address or a NAT filter on arrival are dropped and
 * counted, and the next one is tried. */
ALKSIMDEF int alksim_net_deliver(alksim_net *net, uint64_t now,
                                 alksim_datagram *out);
ALKSIMDEF alksim_net_stats alksim_net_get_stats(const alksim_net *net);
/* The books and the structure: sent + duplicated == delivered + lost +
 * every drop + in_flight; every slot is in exactly one place (in flight,
 * free, or the datagram just delivered); arrivals are in heap order.
 * O(max_in_flight); it marks slots, hence not const. */
ALKSIMDEF int alksim_net_check(alksim_net *net);

/* ---- Streams: reliable, ordered byte pipes between hosts -----------------
 * A connection is requested by one host (side 0) of a listening host
 * (side 1). Written bytes wait in a bounded per-direction buffer (a write
 * takes what fits: flow control) and arrive in segments whose sizes the
 * fault source draws, each no earlier than latency + size / bandwidth after
 * the previous one. A partition (alksim_net_partition) holds segments back
 * until it heals - a stream stalls, it does not lose bytes. shutdown is a
 * half-close: EOF reaches the peer after every byte written before it, each
 * direction on its own. reset discards what is buffered both ways and tells
 * the peer. Events (connected, refused, accepted, data, EOF, reset) are
 * polled in time order. */
enum alksim_stream_event_type {
    ALKSIM_STREAM_CONNECTED = 1, /* to side 0: the peer accepted */
    ALKSIM_STREAM_REFUSED,       /* to side 0: nobody listening, or refused */
    ALKSIM_STREAM_ACCEPTED,      /* to side 1: a new connection */
    ALKSIM_STREAM_DATA,
    ALKSIM_STREAM_EOF,
    ALKSIM_STREAM_RESET
};

typedef struct alksim_stream_params {
    uint64_t latency_ns;
    uint64_t bytes_per_sec;  /* 0 = unlimited */
    uint32_t max_segment;    /* largest delivery; 0 = the buffer size */
    uint32_t refuse;         /* chance the connect is refused, /65536 */
} alksim_stream_params;

typedef struct alksim_stream_event {
    int type;                /* alksim_stream_event_type */
    uint32_t conn;
    int side;                /* the side the event is for */
    uint32_t host;           /* that side's host */
    const uint8_t *data;     /* DATA: valid until the next poll or the next
                                write in that direction */
    size_t len;
    uint64_t time;
} alksim_stream_event;

typedef struct alksim_stream_stats {
    uint64_t written, delivered, discarded; /* bytes */
    uint64_t connects, refused, resets, eofs;
} alksim_stream_stats;

typedef struct alksim_stream_conn alksim_stream_conn;

/* A zero field means its default; a NULL config means every default. */
#define ALKSIM_STREAMS_DEFAULT_CONNS 16
#define ALKSIM_STREAMS_DEFAULT_BUFFER 65536
typedef struct alksim_streams_config {
    uint32_t max_conns;     /* connection slots (0 = 16) */
    uint32_t buffer;        /* bytes per direction per connection
                               (0 = 65536): what a write can queue */
    uint32_t hosts;         /* hosts 0..hosts-1 (0 = the net's hosts, or 2
                               without a net) */
    const alksim_net *net;  /* partitions stall streams; may be NULL */
} alksim_streams_config;

typedef struct alksim_streams {
    uint32_t max_conns, buffer, hosts; /* as used: defaults filled in */
    const alksim_net *net;   /* partitions; may be NULL */
    alksim_error_info error; /* why init refused */
    alksim_stream_conn *conns;
    uint8_t *bufs;           /* max_conns x 2 x buffer */
    uint8_t *listening;      /* per host */
    alksim_stream_stats stats;
} alksim_streams;

/* Bytes of caller memory for cfg (NULL = every default); 0 exactly when
 * the configuration's size overflows. */
ALKSIMDEF size_t alksim_streams_mem_size(const alksim_streams_config *cfg);
/* ALKSIM_ERR_INVALID_ARGUMENT with st->error saying why, as for the net. */
ALKSIMDEF int alksim_streams_init(alksim_streams *st,
                                  const alksim_streams_config *cfg, void *mem,
                                  size_t mem_len);
ALKSIMDEF int alksim_stream_listen(alksim_streams *st, uint32_t host, int on);
/* Starts a connection from host `from` to host `to`; *conn is its id. The
 * outcome arrives as events: ACCEPTED (side 1) after one latency and
 * CONNECTED (side 0) after two, or REFUSED (side 0) after two.
 * ALKSIM_ERR_FULL when every connection slot is in use. */
ALKSIMDEF int alksim_stream_connect(alksim_streams *st, alksim_source *faults,
                                    uint64_t now, uint32_t from, uint32_t to,
                                    const alksim_stream_params *params,
                                    uint32_t *conn);
/* Buffers what fits of data (returns the count, possibly 0), or
 * ALKSIM_ERR_CLOSED when the side is not open or has shut down. */
ALKSIMDEF ptrdiff_t alksim_stream_write(alksim_streams *st,
                                        alksim_source *faults, uint64_t now,
                                        uint32_t conn, int side,
                                        const void *data, size_t len);
ALKSIMDEF int alksim_stream_shutdown(alksim_streams *st, uint64_t now,
                                     uint32_t conn, int side);
ALKSIMDEF int alksim_stream_reset(alksim_streams *st, uint64_t now,
                                  uint32_t conn, int side);
/* No delivery on this connection before `until`. */
ALKSIMDEF int alksim_stream_stall(alksim_streams *st, uint32_t conn,
                                  uint64_t until);
/* Frees a connection slot once the application is done with it. */
ALKSIMDEF int alksim_stream_release(alksim_streams *st, uint32_t conn);
/* Earliest event time, ALKSIM_NEVER if none (held-back segments of a
 * partitioned direction do not count until it heals). */
ALKSIMDEF uint64_t alksim_stream_next_time(const alksim_streams *st,
                                           uint64_t now);
/* The next event due at or before `now` (ALKSIM_OK) or ALKSIM_NONE. */
ALKSIMDEF int alksim_stream_poll(alksim_streams *st, alksim_source *faults,
                                 uint64_t now, alksim_stream_event *ev);
/* Bytes buffered in one direction (written by `side`, not yet delivered). */
ALKSIMDEF size_t alksim_stream_buffered(const alksim_streams *st,
                                        uint32_t conn, int side);

/* ---- Disk: sectors with a volatile write cache -------------------------- */
/* A zero field means its default; a NULL config means every default. */
#define ALKSIM_DISK_DEFAULT_SECTOR_SIZE 512
#define ALKSIM_DISK_DEFAULT_SECTORS 2048
#define ALKSIM_DISK_DEFAULT_PENDING 64
typedef struct alksim_disk_config {
    uint32_t sector_size;  /* bytes (0 = 512) */
    uint64_t sectors;      /* (0 = 2048: 1 MiB of 512-byte sectors) */
    uint32_t max_pending;  /* cached sector writes before write-back
                              (0 = 64) */
} alksim_disk_config;

enum alksim_disk_op { ALKSIM_DISK_READ, ALKSIM_DISK_WRITE, ALKSIM_DISK_FLUSH };

typedef struct alksim_disk_stats {
    uint64_t reads, writes, flushes, crashes, writebacks;
    uint64_t crash_kept, crash_dropped, crash_reordered;
    uint64_t injected_errors;
} alksim_disk_stats;

typedef struct alksim_disk {
    alksim_disk_config cfg;  /* as used: zero fields filled in */
    alksim_error_info error; /* why init refused */
    uint8_t *durable;        /* what survives a crash */
    uint8_t *pending_data;   /* max_pending x sector_size, a ring */
    uint64_t *pending_sector;
    uint32_t pending_len;
    uint32_t pending_head;   /* the oldest cached write's slot */
    uint64_t fail_countdown[3]; /* per op: fail the n-th next (0 = off) */
    alksim_disk_stats stats;
} alksim_disk;

/* Bytes of caller memory for cfg (NULL = every default); 0 exactly when
 * the configuration's size overflows. init refuses as the net's does. */
ALKSIMDEF size_t alksim_disk_mem_size(const alksim_disk_config *cfg);
ALKSIMDEF int alksim_disk_init(alksim_disk *disk, const alksim_disk_config *cfg,
                               void *mem, size_t mem_len);
/* Reads see the newest write (cached or durable). */
ALKSIMDEF int alksim_disk_read(alksim_disk *disk, uint64_t offset, void *out,
                               size_t len);
/* Any offset and length; cached per sector until flush or write-back. */
ALKSIMDEF int alksim_disk_write(alksim_disk *disk, uint64_t offset,
                                const void *data, size_t len);
ALKSIMDEF int alksim_disk_flush(alksim_disk *disk);
/* Power loss: every sector with cached writes ends up holding its durable
 * content or one of its cached versions (not necessarily the newest), as
 * `src` decides; an exhausted source drops them all. Multi-sector writes
 * tear at sector boundaries. The cache is empty afterwards. The draws: one
 * alksim_pick(versions + 1) per sector, in the order of each sector's
 * oldest cached write; 0 keeps the durable content (crash_dropped), k the
 * k-th oldest cached version (crash_kept for the newest, else
 * crash_reordered). */
ALKSIMDEF int alksim_disk_crash(alksim_disk *disk, alksim_source *src);
/* Make the n-th next operation of kind `op` fail with ALKSIM_ERR_IO
 * without effect (n >= 1; 0 cancels). */
ALKSIMDEF int alksim_disk_inject(alksim_disk *disk, int op, uint64_t nth);
ALKSIMDEF uint32_t alksim_disk_pending(const alksim_disk *disk);

/* ---- Scenario runner ---------------------------------------------------- */
#define ALKSIM_TRACE_WIDTH 160
/* alksim_run flags */
#define ALKSIM_RUN_VERBOSE 1u /* print every trace line to `out` */
#define ALKSIM_RUN_HASH 2u    /* fingerprint the trace (trace_hash) */
#define ALKSIM_MAX_KINDS 32

typedef struct alksim_ctx {
    alksim_source *src;
    uint64_t now;           /* virtual time, ns; the scenario advances it */
    unsigned step;          /* transition number in the safety phase */
    int phase;              /* 0 setup, 1 safety, 2 liveness */
    int failed;
    char failure[256];
    uint32_t swarm_mask;    /* kinds enabled for this run */
    uint32_t weights[ALKSIM_MAX_KINDS];
    /* trace: lines are formatted only when printed or hashed, so a quiet
     * run (fuzzing) pays nothing for them */
    unsigned flags;         /* ALKSIM_RUN_* */
    void *out;              /* FILE * for verbose output (NULL: stderr) */
    uint64_t trace_hash;
    unsigned long trace_count;
    uint64_t failure_site;  /* the first failure's format string, hashed */
} alksim_ctx;

typedef struct alksim_scenario {
    const char *name;
    const char *const *kinds;   /* transition kind names */
    unsigned kind_count;        /* <= ALKSIM_MAX_KINDS */
    /* Draw parameters, build model and system; log every parameter. Returns
     * the scenario state (caller-owned storage) or NULL on failure. */
    void *(*setup)(alksim_ctx *ctx);
    /* Apply one transition of `kind` to model and system. 0 = ok. */
    int (*step)(alksim_ctx *ctx, void *state, unsigned kind);
    /* Invariants, after every transition and every liveness step. 0 = ok. */
    int (*check)(alksim_ctx *ctx, void *state);
    /* Liveness phase: heal faults (once). */
    void (*heal)(alksim_ctx *ctx, void *state);
    /* Advance the system by one event after healing; 1 = more pending,
     * 0 = quiescent, < 0 = failure. Quiescent must mean "all done". */
    int (*quiesce)(alksim_ctx *ctx, void *state);
    void (*teardown)(void *state);
    unsigned max_steps;         /* safety transitions (0 = 200) */
    unsigned max_quiesce;       /* liveness steps (0 = 100000) */
    int swarm;                  /* draw a subset + weights of kinds */
} alksim_scenario;

typedef struct alksim_run_result {
    int code;                /* ALKSIM_OK or the failure */
    unsigned steps, quiesce_steps;
    uint64_t trace_hash;
    unsigned long trace_lines;
    uint64_t end_time;
    /* Which failure (all 0 / -1 when the run passed): the invariant - the
     * FNV-1a hash of the failing check's format string, so numbers in the
     * message do not matter - the phase it failed in (0 setup, 1 safety,
     * 2 liveness) and, in the safety phase, the kind of the failing step.
     * alksim_shrink keeps an input only if all of them and code match. */
    uint64_t failure_site;
    int failure_phase;
    int failure_kind;
} alksim_run_result;

#if defined(__GNUC__) || defined(__clang__)
#define ALKSIM__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define ALKSIM__PRINTF(a, b)
#endif

/* Append a trace line: printed at once when verbose, hashed with
 * ALKSIM_RUN_HASH, otherwise only counted. */
ALKSIMDEF void alksim_log(alksim_ctx *ctx, const char *fmt, ...)
    ALKSIM__PRINTF(2, 3);
/* Record a failure (first one wins) and return ALKSIM_ERR_FAILED. */
ALKSIMDEF int alksim_fail(alksim_ctx *ctx, const char *fmt, ...)
    ALKSIM__PRINTF(2, 3);
#define ALKSIM_CHECK(ctx, cond, ...)                                           \
    do {                                                                       \
        if (!(cond))                                                           \
            return alksim_fail((ctx), __VA_ARGS__);                            \
    } while (0)

/* Runs one scenario on the input. flags: ALKSIM_RUN_VERBOSE prints every
 * trace line to `out` (a FILE *, NULL = stderr); ALKSIM_RUN_HASH fills
 * res->trace_hash. Returns ALKSIM_OK or the failure code. */
ALKSIMDEF int alksim_run(const alksim_scenario *sc, const uint8_t *data,
                         size_t size, unsigned flags, void *out,
                         alksim_run_result *res);
/* Seed mode: the input of run `run` of seed `seed` - a length drawn in
 * 0..max_len, then that many bytes, all from splitmix64 - into buf (max_len
 * bytes); returns the length. (The stream starts from seed ^ run *
 * 0xd1b54a32d192ed03; its first output modulo max_len + 1 is the length,
 * then each output gives eight bytes, low byte first.) A seed-mode failure is then an input like any
 * fuzzer's: save it, replay it with alksim_run, shrink it. The replay
 * driver's --seed mode uses the same inputs. */
ALKSIMDEF size_t alksim_seed_input(uint64_t seed, uint64_t run, uint8_t *buf,
                                   size_t max_len);
/* Runs the scenario on run `run` of seed `seed` (alksim_seed_input into buf,
 * then alksim_run); *len (if not NULL) gets the input's length. A soak:
 *     for (i = 0; i < runs; i++)
 *         if (alksim_run_seed(&sc, seed, i, buf, sizeof buf, &n, 0, NULL,
 *                             &r) != ALKSIM_OK)
 *             break;   // buf[0..n) is the failing input
 */
ALKSIMDEF int alksim_run_seed(const alksim_scenario *sc, uint64_t seed,
                              uint64_t run, uint8_t *buf, size_t max_len,
                              size_t *len, unsigned flags, void *out,
                              alksim_run_result *res);
/* Delta debugging over the bytes: writes the smallest input found that
 * fails the same way as `data` (the same code, invariant, phase and step
 * kind: alksim_run_result's failure fields) into `out` (capacity >= size)
 * and returns its size (0 when even the empty input fails), or
 * ALKSIM_SHRINK_PASSES if `data` does not fail. `work` needs `size` bytes.
 * At most max_runs scenario runs (at least one: the first tells whether
 * `data` fails). The search, so that its result can be predicted: rounds,
 * each (1) removing chunks: the chunk starts at half the current size
 * (at least 1); from the front, a chunk whose removal still fails the same
 * way is removed (the same start tried again), else the next chunk is
 * tried; a pass without a removal halves the chunk, and ends the step
 * when the chunk was 1; (2) zeroing: each nonzero byte in turn is set to 0
 * and kept zero if that still fails the same way. Rounds repeat until one
 * neither shrinks nor zeroes anything; every attempt counts as a run, and
 * the search stops wherever the runs reach max_runs. */
#define ALKSIM_SHRINK_PASSES SIZE_MAX
ALKSIMDEF size_t alksim_shrink(const alksim_scenario *sc, const uint8_t *data,
                               size_t size, uint8_t *out, uint8_t *work,
                               unsigned max_runs);
#ifndef ALKSIM_NO_STDIO
/* The body of a fuzz harness: run; on failure re-run verbosely (the full
 * trace to stderr), write the input to $ALKSIM_REPRO_DIR if set, abort().
 * With $ALKSIM_VERBOSE set every run prints its trace. Returns 0 (what
 * LLVMFuzzerTestOneInput returns for an input that passed). */
ALKSIMDEF int alksim_fuzz_one(const alksim_scenario *sc, const uint8_t *data,
                              size_t size);
#endif

#ifdef __cplusplus
}
#endif
#endif /* ALKSIM_H */

#if defined(ALK_IMPLEMENTATION) && !defined(ALKSIM_IMPLEMENTATION)
#define ALKSIM_IMPLEMENTATION
#endif

#if defined(ALKSIM_IMPLEMENTATION) && !defined(ALKSIM_IMPLEMENTATION_DONE)
#define ALKSIM_IMPLEMENTATION_DONE

#include <stdarg.h>
#include <stdio.h> /* vsnprintf for trace lines; FILE output unless NO_STDIO */
#include <string.h>
#ifndef ALKSIM_NO_STDIO
#include <stdlib.h>
#endif

#ifndef ALKSIM_ASSERT
#include <assert.h>
#define ALKSIM_ASSERT(c) assert(c)
#endif

#ifdef __cplusplus
extern "C" {
#endif

ALKSIMDEF const char *alksim_strerror(int code)
{
    switch (code) {
#define ALKSIM__CASE(name, value, text) case name: return text;
        ALKSIM_RESULT_LIST(ALKSIM__CASE)
#undef ALKSIM__CASE
    default:
        return "unknown alksim result code";
    }
}

/* ---- PRNG ---------------------------------------------------------------- */
ALKSIMDEF uint64_t alksim_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

ALKSIMDEF void alksim_rng_seed(alksim_rng *rng, uint64_t seed)
{
    uint64_t st = seed;
    int i;
    for (i = 0; i < 4; i++)
        rng->s[i] = alksim_splitmix64(&st);
}

static uint64_t alksim__rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

ALKSIMDEF uint64_t alksim_rng_next(alksim_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = alksim__rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = alksim__rotl(s[3], 45);
    return result;
}

ALKSIMDEF uint64_t alksim_rng_below(alksim_rng *rng, uint64_t n)
{
    return n ? alksim_rng_next(rng) % n : 0;
}

ALKSIMDEF int alksim_rng_chance(alksim_rng *rng, uint32_t num, uint32_t den)
{
    return den ? alksim_rng_below(rng, den) < num : 0;
}

/* ---- Byte source ---------------------------------------------------------- */
ALKSIMDEF void alksim_source_init_bytes(alksim_source *src, const void *data,
                                        size_t size)
{
    memset(src, 0, sizeof *src);
    src->data = (const uint8_t *)data;
    src->size = data ? size : 0;
}

ALKSIMDEF void alksim_source_init_rng(alksim_source *src, uint64_t seed)
{
    memset(src, 0, sizeof *src);
    src->seeded = 1;
    alksim_rng_seed(&src->rng, seed);
}

ALKSIMDEF int alksim_source_done(const alksim_source *src)
{
    return src->done;
}

ALKSIMDEF size_t alksim_source_remaining(const alksim_source *src)
{
    if (src->seeded)
        return SIZE_MAX;
    return src->size - src->front - src->back;
}

/* `width` control bytes from the end, big-endian as they are read. */
static uint64_t alksim__draw(alksim_source *src, unsigned width)
{
    uint64_t v = 0;
    unsigned i;
    src->draws++;
    if (src->seeded) {
        v = alksim_rng_next(&src->rng);
        return width >= 8 ? v : v & ((UINT64_C(1) << (8 * width)) - 1);
    }
    for (i = 0; i < width; i++) {
        uint8_t b = 0;
        if (src->front + src->back < src->size) {
            src->back++;
            b = src->data[src->size - src->back];
        } else {
            src->done = 1;
        }
        v = (v << 8) | b;
    }
    return v;
}

ALKSIMDEF uint8_t alksim_u8(alksim_source *src)
{
    return (uint8_t)alksim__draw(src, 1);
}

ALKSIMDEF uint16_t alksim_u16(alksim_source *src)
{
    return (uint16_t)alksim__draw(src, 2);
}

ALKSIMDEF uint32_t alksim_u32(alksim_source *src)
{
    return (uint32_t)alksim__draw(src, 4);
}

ALKSIMDEF uint64_t alksim_u64(alksim_source *src)
{
    return alksim__draw(src, 8);
}

ALKSIMDEF int alksim_bool(alksim_source *src)
{
    return (int)(alksim__draw(src, 1) & 1u);
}

ALKSIMDEF uint64_t alksim_range(alksim_source *src, uint64_t lo, uint64_t hi)
{
    uint64_t span, v;
    unsigned width;
    if (hi <= lo)
        return lo; /* a single value is no decision: nothing is drawn */
    span = hi - lo;
    width = span <= 0xffu ? 1 : span <= 0xffffu ? 2 : span <= 0xffffffffu ? 4 : 8;
    v = alksim__draw(src, width);
    return span == UINT64_MAX ? v : lo + v % (span + 1);
}

ALKSIMDEF size_t alksim_pick(alksim_source *src, size_t n)
{
    return n ? (size_t)alksim_range(src, 0, (uint64_t)n - 1) : 0;
}

ALKSIMDEF size_t alksim_weighted(alksim_source *src, const uint32_t *w,
                                 size_t n)
{
    uint64_t total = 0, r;
    size_t i;
    for (i = 0; i < n; i++)
        total += w[i];
    if (total == 0)
        return 0;
    r = alksim_range(src, 0, total - 1);
    for (i = 0; i + 1 < n; i++) {
        if (r < w[i])
            return i;
        r -= w[i];
    }
    return n - 1; /* r < total: what is left falls in the last weight */
}

ALKSIMDEF size_t alksim_len(alksim_source *src, size_t max)
{
    return (size_t)alksim_range(src, 0, max);
}

ALKSIMDEF int alksim_chance(alksim_source *src, uint32_t num, uint32_t den)
{
    if (num == 0 || den == 0)
        return 0;
    if (num >= den)
        return 1;
    /* The top of the range means "yes", so an exhausted source (zeros)
     * answers no: the safe default. */
    return alksim_range(src, 0, den - 1) >= den - num;
}

ALKSIMDEF void alksim_bytes(alksim_source *src, void *out, size_t n)
{
    uint8_t *o = (uint8_t *)out;
    size_t take, i;
    if (src->seeded) {
        for (i = 0; i < n; i += 8) {
            uint64_t r = alksim_rng_next(&src->rng);
            size_t k;
            for (k = 0; k < 8 && i + k < n; k++)
                o[i + k] = (uint8_t)(r >> (8 * k));
        }
        return;
    }
    take = alksim_source_remaining(src);
    if (take > n)
        take = n;
    if (take) {
        memcpy(o, src->data + src->front, take);
        src->front += take;
    }
    if (take < n) {
        memset(o + take, 0, n - take);
        src->done = 1;
    }
}

/* ---- Event queue ----------------------------------------------------------- */
static int alksim__event_before(const alksim_event *a, const alksim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

ALKSIMDEF int alksim_queue_init(alksim_queue *q, alksim_event *mem, size_t cap)
{
    if (!q || (!mem && cap))
        return ALKSIM_ERR_INVALID_ARGUMENT;
    q->heap = mem;
    q->cap = cap;
    q->len = 0;
    q->next_seq = 0;
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_queue_push(alksim_queue *q, uint64_t time, uint32_t kind,
                                uint32_t target, uint64_t arg)
{
    size_t i;
    alksim_event ev;
    if (q->len == q->cap)
        return ALKSIM_ERR_FULL;
    ev.time = time;
    ev.seq = q->next_seq++;
    ev.kind = kind;
    ev.target = target;
    ev.arg = arg;
    i = q->len++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!alksim__event_before(&ev, &q->heap[parent]))
            break;
        q->heap[i] = q->heap[parent];
        i = parent;
    }
    q->heap[i] = ev;
    return ALKSIM_OK;
}

ALKSIMDEF const alksim_event *alksim_queue_peek(const alksim_queue *q)
{
    return q->len ? &q->heap[0] : NULL;
}

ALKSIMDEF int alksim_queue_pop(alksim_queue *q, alksim_event *out)
{
    alksim_event last;
    size_t i = 0;
    if (!q->len)
        return ALKSIM_NONE;
    *out = q->heap[0];
    last = q->heap[--q->len];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= q->len)
            break;
        if (child + 1 < q->len &&
            alksim__event_before(&q->heap[child + 1], &q->heap[child]))
            child++;
        if (!alksim__event_before(&q->heap[child], &last))
            break;
        q->heap[i] = q->heap[child];
        i = child;
    }
    if (q->len)
        q->heap[i] = last;
    return ALKSIM_OK;
}

/* ---- Nodes ------------------------------------------------------------------ */
ALKSIMDEF void alksim_node_init(alksim_node *node, void *ctx,
                                uint64_t (*poll_timeout)(void *),
                                int (*has_output)(void *),
                                void (*handle_timeout)(void *, uint64_t))
{
    memset(node, 0, sizeof *node);
    node->ctx = ctx;
    node->poll_timeout = poll_timeout;
    node->has_output = has_output;
    node->handle_timeout = handle_timeout;
}

ALKSIMDEF uint64_t alksim_node_deadline(alksim_node *node, uint64_t now,
                                        int *err)
{
    uint64_t d;
    if (err)
        *err = ALKSIM_OK;
    if (node->has_output && node->has_output(node->ctx))
        return now;
    d = node->poll_timeout(node->ctx);
    if (d != ALKSIM_NEVER && d < now && err)
        *err = ALKSIM_ERR_DEADLINE_PAST;
    return d;
}

ALKSIMDEF int alksim_node_fire(alksim_node *node, uint64_t now)
{
    unsigned limit = node->spin_limit ? node->spin_limit : 64;
    uint64_t d = node->poll_timeout(node->ctx);
    if (d == ALKSIM_NEVER || d > now)
        return ALKSIM_NONE;
    if (node->fires_at_same_time && node->last_fire_time == now) {
        if (++node->fires_at_same_time > limit)
            return ALKSIM_ERR_SPIN;
    } else {
        node->last_fire_time = now;
        node->fires_at_same_time = 1;
    }
    node->handle_timeout(node->ctx, now);
    return ALKSIM_OK;
}

/* ---- Network ---------------------------------------------------------------- */
struct alksim_net_host {
    uint32_t ip;
    int natted;
    alksim_nat_config nat;
    uint16_t next_port;
};

/* One NAT permission: (internal port, remote) -> external port. With EIM
 * every entry of an internal port shares one external port; with EDM each
 * remote gets its own. Inbound filtering looks for an entry that admits
 * the sender. */
struct alksim_nat_entry {
    int used;
    uint16_t internal_port, external_port;
    alksim_addr remote;
    uint64_t last_used;
};

struct alksim_net_slot {
    uint64_t deliver_at, sent_at, id;
    alksim_addr src, dst;
    uint32_t from;
    uint32_t len;
    int duplicate;
    uint32_t mark; /* alksim_net_check: the epoch it was last seen in */
};

#define ALKSIM__ALIGN(n) (((n) + 7u) & ~(size_t)7u)

/* Overflow-checked sizes for the *_mem_size functions: an overflow makes
 * the total 0, which every *_init refuses. */
typedef struct alksim__size {
    size_t total;
    int bad;
} alksim__size;

static void alksim__size_add(alksim__size *s, uint64_t count, size_t each)
{
    size_t part;
    if (s->bad || !count || !each)
        return;
    if (count > SIZE_MAX / each) {
        s->bad = 1;
        return;
    }
    part = (size_t)count * each;
    if (part > SIZE_MAX - 7 || ALKSIM__ALIGN(part) > SIZE_MAX - s->total) {
        s->bad = 1;
        return;
    }
    s->total += ALKSIM__ALIGN(part);
}

static int alksim__refuse(alksim_error_info *e, const char *what,
                          uint64_t value, uint64_t limit)
{
    e->code = ALKSIM_ERR_INVALID_ARGUMENT;
    e->what = what;
    e->value = value;
    e->limit = limit;
    return ALKSIM_ERR_INVALID_ARGUMENT;
}

/* Caller memory must be 8-byte aligned (it holds 64-bit fields). `need` is
 * 0 when the configuration's size overflowed. */
static int alksim__check_mem(alksim_error_info *e, const void *mem,
                             size_t mem_len, size_t need)
{
    memset(e, 0, sizeof *e);
    if (!need)
        return alksim__refuse(e, "configuration: its memory size overflows "
                                 "size_t", 0, 0);
    if (!mem)
        return alksim__refuse(e, "mem: NULL", 0, need);
    if ((uintptr_t)mem & 7u)
        return alksim__refuse(e, "mem: not 8-byte aligned",
                              (uint64_t)((uintptr_t)mem & 7u), 8);
    if (mem_len < need)
        return alksim__refuse(e, "mem_len: less than *_mem_size()",
                              (uint64_t)mem_len, (uint64_t)need);
    return ALKSIM_OK;
}

static alksim_net_config alksim__net_config(const alksim_net_config *cfg)
{
    alksim_net_config c;
    memset(&c, 0, sizeof c);
    if (cfg)
        c = *cfg;
    if (!c.hosts)
        c.hosts = ALKSIM_NET_DEFAULT_HOSTS;
    if (!c.max_in_flight)
        c.max_in_flight = ALKSIM_NET_DEFAULT_IN_FLIGHT;
    if (!c.slot_size)
        c.slot_size = ALKSIM_NET_DEFAULT_SLOT_SIZE;
    if (!c.nat_mappings)
        c.nat_mappings = ALKSIM_NET_DEFAULT_NAT_MAPPINGS;
    return c;
}

ALKSIMDEF size_t alksim_net_mem_size(const alksim_net_config *config)
{
    alksim_net_config cfg = alksim__net_config(config);
    uint64_t h = cfg.hosts, m = cfg.max_in_flight;
    alksim__size s = {0, 0};
    alksim__size_add(&s, h * h, sizeof(alksim_link));
    alksim__size_add(&s, h * h, 1);
    alksim__size_add(&s, h, sizeof(alksim_net_host));
    alksim__size_add(&s, h * cfg.nat_mappings, sizeof(alksim_nat_entry));
    alksim__size_add(&s, m, sizeof(alksim_net_slot));
    alksim__size_add(&s, m, cfg.slot_size);
    alksim__size_add(&s, m, sizeof(alksim_event));
    alksim__size_add(&s, m, sizeof(uint32_t));
    return s.bad ? 0 : s.total;
}

ALKSIMDEF int alksim_net_init(alksim_net *net, const alksim_net_config *config,
                              void *mem, size_t mem_len)
{
    uint8_t *p = (uint8_t *)mem;
    alksim_net_config cfg_used = alksim__net_config(config);
    const alksim_net_config *cfg = &cfg_used;
    size_t h, m, i, need = alksim_net_mem_size(cfg);
    if (!net)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    if (alksim__check_mem(&net->error, mem, mem_len, need) != ALKSIM_OK)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    h = cfg->hosts;
    m = cfg->max_in_flight;
    memset(net, 0, sizeof *net);
    memset(mem, 0, need);
    net->cfg = *cfg;
    net->links = (alksim_link *)(void *)p;
    p += ALKSIM__ALIGN(h * h * sizeof(alksim_link));
    net->partitioned = p;
    p += ALKSIM__ALIGN(h * h);
    net->host = (alksim_net_host *)(void *)p;
    p += ALKSIM__ALIGN(h * sizeof(alksim_net_host));
    net->nat = (alksim_nat_entry *)(void *)p;
    p += ALKSIM__ALIGN(h * cfg->nat_mappings * sizeof(alksim_nat_entry));
    net->slots = (alksim_net_slot *)(void *)p;
    p += ALKSIM__ALIGN(m * sizeof(alksim_net_slot));
    net->payload = p;
    p += ALKSIM__ALIGN(m * (size_t)cfg->slot_size);
    alksim_queue_init(&net->arrivals, (alksim_event *)(void *)p, m);
    p += ALKSIM__ALIGN(m * sizeof(alksim_event));
    net->free_slots = (uint32_t *)(void *)p;
    for (i = 0; i < m; i++)
        net->free_slots[i] = (uint32_t)(m - 1 - i);
    net->free_len = (uint32_t)m;
    for (i = 0; i < h; i++) {
        net->host[i].ip = 0x0a000001u + (uint32_t)i;
        net->host[i].next_port = 20000;
    }
    net->last_delivered = -1;
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_net_set_link(alksim_net *net, uint32_t from, uint32_t to,
                                  const alksim_link *link)
{
    if (from >= net->cfg.hosts || to >= net->cfg.hosts || !link)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    net->links[from * net->cfg.hosts + to] = *link;
    return ALKSIM_OK;
}

static void alksim__nat_clear(alksim_net *net, uint32_t host)
{
    size_t k = net->cfg.nat_mappings;
    memset(net->nat + host * k, 0, k * sizeof(alksim_nat_entry));
}

ALKSIMDEF int alksim_net_set_ip(alksim_net *net, uint32_t host, uint32_t ip)
{
    if (host >= net->cfg.hosts)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    net->host[host].ip = ip;
    return ALKSIM_OK;
}

ALKSIMDEF uint32_t alksim_net_ip(const alksim_net *net, uint32_t host)
{
    if (host >= net->cfg.hosts)
        return 0;
    return net->host[host].natted ? net->host[host].nat.public_ip
                                  : net->host[host].ip;
}

ALKSIMDEF int alksim_net_set_nat(alksim_net *net, uint32_t host,
                                 const alksim_nat_config *nat)
{
    if (host >= net->cfg.hosts || (nat && !net->cfg.nat_mappings))
        return ALKSIM_ERR_INVALID_ARGUMENT;
    /* A new NAT (or a new public address) starts with no mappings. */
    alksim__nat_clear(net, host);
    net->host[host].natted = nat != NULL;
    if (nat)
        net->host[host].nat = *nat;
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_net_partition(alksim_net *net, uint32_t from, uint32_t to,
                                   int blocked)
{
    if (from >= net->cfg.hosts || to >= net->cfg.hosts)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    net->partitioned[from * net->cfg.hosts + to] = (uint8_t)(blocked != 0);
    return ALKSIM_OK;
}

ALKSIMDEF void alksim_net_heal(alksim_net *net)
{
    memset(net->partitioned, 0, (size_t)net->cfg.hosts * net->cfg.hosts);
}

ALKSIMDEF int alksim_net_blocked(const alksim_net *net, uint32_t from,
                                 uint32_t to)
{
    if (from >= net->cfg.hosts || to >= net->cfg.hosts)
        return 0;
    return net->partitioned[from * net->cfg.hosts + to];
}

static int alksim__nat_live(const alksim_net_host *h, const alksim_nat_entry *e,
                            uint64_t now)
{
    /* `now` may be an arrival time earlier than a later send's refresh. */
    return e->used && (h->nat.expiry_ns == 0 || now <= e->last_used ||
                       now - e->last_used <= h->nat.expiry_ns);
}

/* Outbound translation: the external port for (sport -> dst). */
static uint16_t alksim__nat_out(alksim_net *net, uint32_t host, uint16_t sport,
                                alksim_addr dst, uint64_t now)
{
    alksim_net_host *h = &net->host[host];
    alksim_nat_entry *tab = net->nat + (size_t)host * net->cfg.nat_mappings;
    alksim_nat_entry *slot = NULL, *oldest = NULL;
    uint16_t ext = 0;
    size_t i;
    for (i = 0; i < net->cfg.nat_mappings; i++) {
        alksim_nat_entry *e = &tab[i];
        if (!alksim__nat_live(h, e, now)) {
            e->used = 0;
            if (!slot)
                slot = e;
            continue;
        }
        if (e->internal_port != sport)
            continue;
        if (e->remote.ip == dst.ip && e->remote.port == dst.port) {
            e->last_used = now;
            return e->external_port;
        }
        if (h->nat.mapping == ALKSIM_NAT_EIM)
            ext = e->external_port;
    }
    if (!slot) { /* full: the least recently used permission goes */
        for (i = 0; i < net->cfg.nat_mappings; i++)
            if (!oldest || tab[i].last_used < oldest->last_used)
                oldest = &tab[i];
        slot = oldest;
    }
    if (!ext) {
        ext = h->next_port++;
        if (h->next_port < 20000)
            h->next_port = 20000;
    }
    slot->used = 1;
    slot->internal_port = sport;
    slot->external_port = ext;
    slot->remote = dst;
    slot->last_used = now;
    return ext;
}

/* Inbound: may `src` reach external port `port` of host's NAT? Gives the
 * internal port. */
static int alksim__nat_in(alksim_net *net, uint32_t host, alksim_addr src,
                          uint16_t port, uint64_t now, uint16_t *internal)
{
    alksim_net_host *h = &net->host[host];
    alksim_nat_entry *tab = net->nat + (size_t)host * net->cfg.nat_mappings;
    size_t i;
    for (i = 0; i < net->cfg.nat_mappings; i++) {
        alksim_nat_entry *e = &tab[i];
        if (!alksim__nat_live(h, e, now) || e->external_port != port)
            continue;
        if (h->nat.filtering == ALKSIM_NAT_EIF ||
            (h->nat.filtering == ALKSIM_NAT_ADF && e->remote.ip == src.ip) ||
            (e->remote.ip == src.ip && e->remote.port == src.port)) {
            *internal = e->internal_port;
            return 1;
        }
    }
    return 0;
}

/* Which host owns `ip` now? */
static int alksim__route(const alksim_net *net, uint32_t ip, uint32_t *host)
{
    uint32_t i;
    for (i = 0; i < net->cfg.hosts; i++) {
        const alksim_net_host *h = &net->host[i];
        if ((h->natted && h->nat.public_ip == ip) ||
            (!h->natted && h->ip == ip)) {
            *host = i;
            return 1;
        }
    }
    return 0;
}

static void alksim__enqueue(alksim_net *net, alksim_source *faults,
                            const alksim_link *link, uint64_t now,
                            uint32_t from, alksim_addr src, alksim_addr dst,
                            const void *data, size_t len, uint64_t id,
                            int duplicate)
{
    alksim_net_slot *s;
    uint32_t idx;
    uint64_t delay = link->latency_ns;
    if (link->jitter_ns)
        delay += alksim_range(faults, 0, link->jitter_ns);
    if (alksim_chance(faults, link->reorder, 65536))
        delay += link->latency_ns + link->jitter_ns + 1;
    if (!net->free_len) {
        net->stats.dropped_overflow++;
        return;
    }
    idx = net->free_slots[--net->free_len];
    s = &net->slots[idx];
    s->deliver_at = now + delay;
    s->sent_at = now;
    s->id = id;
    s->src = src;
    s->dst = dst;
    s->from = from;
    s->len = (uint32_t)len;
    s->duplicate = duplicate;
    if (len)
        memcpy(net->payload + (size_t)idx * net->cfg.slot_size, data, len);
    alksim_queue_push(&net->arrivals, s->deliver_at, 0, idx, 0); /* has room:
                                              one entry per slot */
    net->stats.in_flight++;
}

ALKSIMDEF int alksim_net_send(alksim_net *net, alksim_source *faults,
                              uint64_t now, uint32_t from, uint16_t sport,
                              alksim_addr dst, const void *data, size_t len)
{
    const alksim_link *link;
    alksim_addr src;
    uint32_t to, mtu;
    uint64_t id;
    if (!net || !faults || from >= net->cfg.hosts || (!data && len))
        return ALKSIM_ERR_INVALID_ARGUMENT;
    if (len > net->cfg.slot_size)
        return ALKSIM_ERR_TOO_LARGE;
    net->stats.sent++;
    id = net->next_id++;
    if (!alksim__route(net, dst.ip, &to)) {
        net->stats.dropped_no_route++;
        return ALKSIM_OK;
    }
    link = &net->links[from * net->cfg.hosts + to];
    mtu = link->mtu ? link->mtu : net->cfg.slot_size;
    if (len > mtu) {
        net->stats.dropped_mtu++;
        return ALKSIM_OK;
    }
    src.ip = net->host[from].ip;
    src.port = sport;
    if (net->host[from].natted) {
        src.ip = net->host[from].nat.public_ip;
        src.port = alksim__nat_out(net, from, sport, dst, now);
    }
    if (alksim_chance(faults, link->loss, 65536)) {
        net->stats.lost++;
    } else {
        alksim__enqueue(net, faults, link, now, from, src, dst, data, len, id,
                        0);
    }
    if (alksim_chance(faults, link->dup, 65536)) {
        net->stats.duplicated++;
        alksim__enqueue(net, faults, link, now, from, src, dst, data, len, id,
                        1);
    }
    return ALKSIM_OK;
}

ALKSIMDEF uint64_t alksim_net_next_time(const alksim_net *net)
{
    const alksim_event *next = alksim_queue_peek(&net->arrivals);
    return next ? next->time : ALKSIM_NEVER;
}

static void alksim__free_slot(alksim_net *net, uint32_t idx)
{
    net->free_slots[net->free_len++] = idx;
}

ALKSIMDEF int alksim_net_deliver(alksim_net *net, uint64_t now,
                                 alksim_datagram *out)
{
    if (net->last_delivered >= 0) {
        alksim__free_slot(net, (uint32_t)net->last_delivered);
        net->last_delivered = -1;
    }
    const alksim_event *next;
    while ((next = alksim_queue_peek(&net->arrivals)) != NULL &&
           next->time <= now) {
        alksim_event ev;
        uint32_t idx, to;
        alksim_net_slot *s;
        alksim_queue_pop(&net->arrivals, &ev);
        idx = ev.target;
        s = &net->slots[idx];
        alksim_addr dst = s->dst;
        net->stats.in_flight--;
        if (!alksim__route(net, s->dst.ip, &to)) {
            net->stats.dropped_no_route++;
        } else if (net->partitioned[s->from * net->cfg.hosts + to]) {
            net->stats.dropped_partition++;
        } else if (net->host[to].natted &&
                   !alksim__nat_in(net, to, s->src, s->dst.port,
                                   s->deliver_at, &dst.port)) {
            net->stats.dropped_nat++;
        } else {
            if (net->host[to].natted)
                dst.ip = net->host[to].ip;
            out->src = s->src;
            out->dst = dst;
            out->to_host = to;
            out->data = net->payload + (size_t)idx * net->cfg.slot_size;
            out->len = s->len;
            out->sent_at = s->sent_at;
            out->delivered_at = s->deliver_at;
            out->id = s->id;
            out->duplicate = s->duplicate;
            net->stats.delivered++;
            net->last_delivered = (int32_t)idx;
            return ALKSIM_OK;
        }
        alksim__free_slot(net, idx);
    }
    return ALKSIM_NONE;
}

ALKSIMDEF alksim_net_stats alksim_net_get_stats(const alksim_net *net)
{
    return net->stats;
}

/* Marks `idx` seen in this check; 0 if it was already seen (or invalid). */
static int alksim__net_mark(alksim_net *net, uint32_t idx)
{
    if (idx >= net->cfg.max_in_flight ||
        net->slots[idx].mark == net->check_epoch)
        return 0;
    net->slots[idx].mark = net->check_epoch;
    return 1;
}

ALKSIMDEF int alksim_net_check(alksim_net *net)
{
    const alksim_net_stats *s = &net->stats;
    uint64_t in = s->sent + s->duplicated;
    uint64_t out = s->delivered + s->lost + s->dropped_partition +
                   s->dropped_mtu + s->dropped_no_route + s->dropped_overflow +
                   s->dropped_nat + s->in_flight;
    uint32_t i;
    const alksim_queue *q = &net->arrivals;
    if (in != out || s->in_flight != q->len ||
        net->free_len + q->len + (net->last_delivered >= 0) !=
            net->cfg.max_in_flight)
        return ALKSIM_ERR_CONSERVATION;
    if (++net->check_epoch == 0)
        net->check_epoch = 1;
    for (i = 0; i < q->len; i++)
        if (!alksim__net_mark(net, q->heap[i].target) ||
            q->heap[i].time != net->slots[q->heap[i].target].deliver_at ||
            (i && alksim__event_before(&q->heap[i], &q->heap[(i - 1) / 2])))
            return ALKSIM_ERR_CONSERVATION;
    for (i = 0; i < net->free_len; i++)
        if (!alksim__net_mark(net, net->free_slots[i]))
            return ALKSIM_ERR_CONSERVATION;
    if (net->last_delivered >= 0 &&
        !alksim__net_mark(net, (uint32_t)net->last_delivered))
        return ALKSIM_ERR_CONSERVATION;
    return ALKSIM_OK;
}

/* ---- Streams ------------------------------------------------------------------ */
#define ALKSIM__STREAM_EVENTS 4

typedef struct alksim_stream_dir {
    uint32_t head, len;  /* ring of written, undelivered bytes */
    uint64_t next_at;    /* scheduled delivery, ALKSIM_NEVER if none */
    uint32_t seg;        /* its size; 0 = the EOF */
    uint64_t last_at;    /* previous delivery: segments stay in order */
    int shut, eof_done;
} alksim_stream_dir;

struct alksim_stream_conn {
    int state; /* 0 free, 1 connecting, 2 open, 3 closed */
    uint32_t host[2];
    alksim_stream_params p;
    int open_side[2];
    uint64_t stall_until;
    struct {
        uint64_t time;
        int type, side;
    } ev[ALKSIM__STREAM_EVENTS];
    unsigned nev;
    alksim_stream_dir dir[2];
};

static alksim_streams_config
alksim__streams_config(const alksim_streams_config *cfg)
{
    alksim_streams_config c;
    memset(&c, 0, sizeof c);
    if (cfg)
        c = *cfg;
    if (!c.max_conns)
        c.max_conns = ALKSIM_STREAMS_DEFAULT_CONNS;
    if (!c.buffer)
        c.buffer = ALKSIM_STREAMS_DEFAULT_BUFFER;
    if (!c.hosts)
        c.hosts = c.net ? c.net->cfg.hosts : 2;
    return c;
}

ALKSIMDEF size_t alksim_streams_mem_size(const alksim_streams_config *config)
{
    alksim_streams_config cfg = alksim__streams_config(config);
    alksim__size s = {0, 0};
    alksim__size_add(&s, cfg.max_conns, sizeof(alksim_stream_conn));
    alksim__size_add(&s, (uint64_t)cfg.max_conns * 2, cfg.buffer);
    alksim__size_add(&s, cfg.hosts, 1);
    return s.bad ? 0 : s.total;
}

ALKSIMDEF int alksim_streams_init(alksim_streams *st,
                                  const alksim_streams_config *config,
                                  void *mem, size_t mem_len)
{
    uint8_t *p = (uint8_t *)mem;
    alksim_streams_config cfg = alksim__streams_config(config);
    size_t need = alksim_streams_mem_size(&cfg), max_conns = cfg.max_conns;
    if (!st)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    if (alksim__check_mem(&st->error, mem, mem_len, need) != ALKSIM_OK)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    memset(st, 0, sizeof *st);
    memset(mem, 0, need);
    st->max_conns = cfg.max_conns;
    st->buffer = cfg.buffer;
    st->hosts = cfg.hosts;
    st->net = cfg.net;
    st->conns = (alksim_stream_conn *)(void *)p;
    p += ALKSIM__ALIGN((size_t)max_conns * sizeof(alksim_stream_conn));
    st->bufs = p;
    p += ALKSIM__ALIGN(max_conns * 2 * (size_t)cfg.buffer);
    st->listening = p;
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_stream_listen(alksim_streams *st, uint32_t host, int on)
{
    if (host >= st->hosts)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    st->listening[host] = (uint8_t)(on != 0);
    return ALKSIM_OK;
}

static void alksim__stream_event(alksim_stream_conn *c, uint64_t time,
                                 int type, int side)
{
    ALKSIM_ASSERT(c->nev < ALKSIM__STREAM_EVENTS);
    c->ev[c->nev].time = time;
    c->ev[c->nev].type = type;
    c->ev[c->nev].side = side;
    c->nev++;
}

static int alksim__stream_blocked(const alksim_streams *st,
                                  const alksim_stream_conn *c, int from_side)
{
    return st->net && alksim_net_blocked(st->net, c->host[from_side],
                                         c->host[1 - from_side]);
}

ALKSIMDEF int alksim_stream_connect(alksim_streams *st, alksim_source *faults,
                                    uint64_t now, uint32_t from, uint32_t to,
                                    const alksim_stream_params *params,
                                    uint32_t *conn)
{
    alksim_stream_conn *c = NULL;
    uint32_t i;
    uint64_t lat;
    int accept;
    if (!st || !faults || !params || !conn || from >= st->hosts ||
        to >= st->hosts)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    for (i = 0; i < st->max_conns && !c; i++)
        if (st->conns[i].state == 0)
            c = &st->conns[i];
    if (!c)
        return ALKSIM_ERR_FULL;
    /* A free slot is all zeros: init and release clear it. */
    *conn = (uint32_t)(c - st->conns);
    c->state = 1;
    c->host[0] = from;
    c->host[1] = to;
    c->p = *params;
    c->dir[0].next_at = c->dir[1].next_at = ALKSIM_NEVER;
    lat = params->latency_ns;
    st->stats.connects++;
    /* Decided when requested: listening, reachable both ways, not refused. */
    accept = st->listening[to] && !alksim__stream_blocked(st, c, 0) &&
             !alksim__stream_blocked(st, c, 1) &&
             !alksim_chance(faults, params->refuse, 65536);
    if (accept) {
        alksim__stream_event(c, now + lat, ALKSIM_STREAM_ACCEPTED, 1);
        alksim__stream_event(c, now + 2 * lat, ALKSIM_STREAM_CONNECTED, 0);
    } else {
        st->stats.refused++;
        alksim__stream_event(c, now + 2 * lat, ALKSIM_STREAM_REFUSED, 0);
    }
    return ALKSIM_OK;
}

static alksim_stream_conn *alksim__conn(alksim_streams *st, uint32_t conn)
{
    if (!st || conn >= st->max_conns || st->conns[conn].state == 0)
        return NULL;
    return &st->conns[conn];
}

/* Schedule the next segment (or the EOF) of direction `side`. */
static void alksim__stream_schedule(alksim_streams *st, alksim_stream_conn *c,
                                    int side, alksim_source *faults,
                                    uint64_t now)
{
    alksim_stream_dir *d = &c->dir[side];
    uint64_t start = now > d->last_at ? now : d->last_at;
    if (d->len) {
        uint32_t contiguous = st->buffer - d->head;
        uint32_t max = d->len < contiguous ? d->len : contiguous;
        if (c->p.max_segment && c->p.max_segment < max)
            max = c->p.max_segment;
        /* An exhausted source sends the largest segment: the fast path. */
        d->seg = max - (uint32_t)alksim_range(faults, 0, max - 1);
        d->next_at = start + c->p.latency_ns +
                     (c->p.bytes_per_sec
                          ? (uint64_t)d->seg * 1000000000u / c->p.bytes_per_sec
                          : 0);
    } else if (d->shut && !d->eof_done) {
        d->seg = 0;
        d->next_at = start + c->p.latency_ns;
    } else {
        d->next_at = ALKSIM_NEVER;
    }
}

ALKSIMDEF ptrdiff_t alksim_stream_write(alksim_streams *st,
                                        alksim_source *faults, uint64_t now,
                                        uint32_t conn, int side,
                                        const void *data, size_t len)
{
    alksim_stream_conn *c = alksim__conn(st, conn);
    alksim_stream_dir *d;
    uint8_t *buf;
    uint32_t take, tail, first;
    if (!c || (side != 0 && side != 1) || !faults || (!data && len))
        return ALKSIM_ERR_INVALID_ARGUMENT;
    d = &c->dir[side];
    if (c->state != 2 || !c->open_side[side] || d->shut)
        return ALKSIM_ERR_CLOSED;
    take = st->buffer - d->len;
    if (take > len)
        take = (uint32_t)len;
    if (!take)
        return 0; /* full, or nothing to write (data may be NULL) */
    buf = st->bufs + ((size_t)conn * 2 + (size_t)side) * st->buffer;
    tail = (d->head + d->len) % st->buffer;
    first = st->buffer - tail < take ? st->buffer - tail : take;
    memcpy(buf + tail, data, first);
    memcpy(buf, (const uint8_t *)data + first, take - first);
    d->len += take;
    st->stats.written += take;
    if (d->next_at == ALKSIM_NEVER)
        alksim__stream_schedule(st, c, side, faults, now);
    return (ptrdiff_t)take;
}

ALKSIMDEF int alksim_stream_shutdown(alksim_streams *st, uint64_t now,
                                     uint32_t conn, int side)
{
    alksim_stream_conn *c = alksim__conn(st, conn);
    alksim_stream_dir *d;
    if (!c || (side != 0 && side != 1))
        return ALKSIM_ERR_INVALID_ARGUMENT;
    d = &c->dir[side];
    if (c->state != 2 || !c->open_side[side] || d->shut)
        return ALKSIM_ERR_CLOSED;
    d->shut = 1;
    if (d->next_at == ALKSIM_NEVER)
        alksim__stream_schedule(st, c, side, NULL, now); /* the EOF: no draw */
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_stream_reset(alksim_streams *st, uint64_t now,
                                  uint32_t conn, int side)
{
    alksim_stream_conn *c = alksim__conn(st, conn);
    int s;
    if (!c || (side != 0 && side != 1))
        return ALKSIM_ERR_INVALID_ARGUMENT;
    if (c->state != 2 || !c->open_side[side])
        return ALKSIM_ERR_CLOSED;
    for (s = 0; s < 2; s++) {
        st->stats.discarded += c->dir[s].len;
        c->dir[s].len = 0;
        c->dir[s].next_at = ALKSIM_NEVER;
    }
    c->state = 3; /* closed: every operation but release is refused */
    st->stats.resets++;
    alksim__stream_event(c, now + c->p.latency_ns, ALKSIM_STREAM_RESET,
                         1 - side);
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_stream_stall(alksim_streams *st, uint32_t conn,
                                  uint64_t until)
{
    alksim_stream_conn *c = alksim__conn(st, conn);
    if (!c)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    c->stall_until = until;
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_stream_release(alksim_streams *st, uint32_t conn)
{
    alksim_stream_conn *c = alksim__conn(st, conn);
    if (!c)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    st->stats.discarded += c->dir[0].len + c->dir[1].len;
    memset(c, 0, sizeof *c);
    return ALKSIM_OK;
}

ALKSIMDEF size_t alksim_stream_buffered(const alksim_streams *st,
                                        uint32_t conn, int side)
{
    if (!st || conn >= st->max_conns || (side != 0 && side != 1))
        return 0;
    return st->conns[conn].dir[side].len;
}

/* The earliest due item of a connection: an event (index >= 0) or a
 * direction's delivery (-1 - side). */
static uint64_t alksim__stream_next(const alksim_streams *st,
                                    const alksim_stream_conn *c, int *which)
{
    uint64_t best = ALKSIM_NEVER;
    unsigned i;
    int s;
    for (i = 0; i < c->nev; i++)
        if (c->ev[i].time < best) {
            best = c->ev[i].time;
            *which = (int)i;
        }
    for (s = 0; s < 2; s++) {
        uint64_t t = c->dir[s].next_at;
        if (t == ALKSIM_NEVER || alksim__stream_blocked(st, c, s))
            continue;
        if (t < c->stall_until)
            t = c->stall_until;
        if (t < best) {
            best = t;
            *which = -1 - s;
        }
    }
    return best;
}

ALKSIMDEF uint64_t alksim_stream_next_time(const alksim_streams *st,
                                           uint64_t now)
{
    uint64_t best = ALKSIM_NEVER;
    uint32_t i;
    (void)now;
    for (i = 0; i < st->max_conns; i++) {
        int which;
        uint64_t t;
        if (!st->conns[i].state)
            continue;
        t = alksim__stream_next(st, &st->conns[i], &which);
        if (t < best)
            best = t;
    }
    return best;
}

ALKSIMDEF int alksim_stream_poll(alksim_streams *st, alksim_source *faults,
                                 uint64_t now, alksim_stream_event *ev)
{
    uint64_t best = ALKSIM_NEVER;
    uint32_t i, conn = 0;
    int which = 0;
    alksim_stream_conn *c;
    for (i = 0; i < st->max_conns; i++) {
        int w = 0;
        uint64_t t;
        if (!st->conns[i].state)
            continue;
        t = alksim__stream_next(st, &st->conns[i], &w);
        if (t < best) {
            best = t;
            conn = i;
            which = w;
        }
    }
    if (best == ALKSIM_NEVER || best > now)
        return ALKSIM_NONE;
    c = &st->conns[conn];
    memset(ev, 0, sizeof *ev);
    ev->conn = conn;
    ev->time = best;
    if (which >= 0) {
        ev->type = c->ev[which].type;
        ev->side = c->ev[which].side;
        c->ev[which] = c->ev[--c->nev];
        if (ev->type == ALKSIM_STREAM_ACCEPTED) {
            c->state = 2;
            c->open_side[1] = 1;
        } else if (ev->type == ALKSIM_STREAM_CONNECTED) {
            if (c->state == 2) /* not if side 1 reset meanwhile */
                c->open_side[0] = 1;
        } else if (ev->type == ALKSIM_STREAM_REFUSED) {
            c->state = 3;
        }
    } else {
        int s = -1 - which; /* written by s, read by 1 - s */
        alksim_stream_dir *d = &c->dir[s];
        ev->side = 1 - s;
        d->last_at = best;
        if (d->seg == 0) {
            ev->type = ALKSIM_STREAM_EOF;
            d->eof_done = 1;
            d->next_at = ALKSIM_NEVER;
            st->stats.eofs++;
        } else {
            ev->type = ALKSIM_STREAM_DATA;
            ev->data = st->bufs +
                       ((size_t)conn * 2 + (size_t)s) * st->buffer + d->head;
            ev->len = d->seg;
            d->head = (d->head + d->seg) % st->buffer;
            d->len -= d->seg;
            st->stats.delivered += d->seg;
            alksim__stream_schedule(st, c, s, faults, best);
        }
    }
    ev->host = c->host[ev->side];
    return ALKSIM_OK;
}

/* ---- Disk -------------------------------------------------------------------- */
static alksim_disk_config alksim__disk_config(const alksim_disk_config *cfg)
{
    alksim_disk_config c;
    memset(&c, 0, sizeof c);
    if (cfg)
        c = *cfg;
    if (!c.sector_size)
        c.sector_size = ALKSIM_DISK_DEFAULT_SECTOR_SIZE;
    if (!c.sectors)
        c.sectors = ALKSIM_DISK_DEFAULT_SECTORS;
    if (!c.max_pending)
        c.max_pending = ALKSIM_DISK_DEFAULT_PENDING;
    return c;
}

ALKSIMDEF size_t alksim_disk_mem_size(const alksim_disk_config *config)
{
    alksim_disk_config cfg = alksim__disk_config(config);
    alksim__size s = {0, 0};
    alksim__size_add(&s, cfg.sectors, cfg.sector_size);
    alksim__size_add(&s, cfg.max_pending, cfg.sector_size);
    alksim__size_add(&s, cfg.max_pending, sizeof(uint64_t));
    return s.bad ? 0 : s.total;
}

ALKSIMDEF int alksim_disk_init(alksim_disk *disk,
                               const alksim_disk_config *config, void *mem,
                               size_t mem_len)
{
    uint8_t *p = (uint8_t *)mem;
    alksim_disk_config cfg_used = alksim__disk_config(config);
    const alksim_disk_config *cfg = &cfg_used;
    size_t need = alksim_disk_mem_size(cfg);
    if (!disk)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    if (alksim__check_mem(&disk->error, mem, mem_len, need) != ALKSIM_OK)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    memset(disk, 0, sizeof *disk);
    memset(mem, 0, need);
    disk->cfg = *cfg;
    disk->durable = p;
    p += ALKSIM__ALIGN((size_t)(cfg->sectors * cfg->sector_size));
    disk->pending_data = p;
    p += ALKSIM__ALIGN((size_t)cfg->max_pending * cfg->sector_size);
    disk->pending_sector = (uint64_t *)(void *)p;
    return ALKSIM_OK;
}

static int alksim__disk_injected(alksim_disk *disk, int op)
{
    if (disk->fail_countdown[op] && --disk->fail_countdown[op] == 0) {
        disk->stats.injected_errors++;
        return 1;
    }
    return 0;
}

static int alksim__disk_bounds(const alksim_disk *disk, uint64_t offset,
                               size_t len)
{
    uint64_t size = disk->cfg.sectors * disk->cfg.sector_size;
    return offset <= size && len <= size - offset;
}

/* The ring slot of the k-th oldest cached write. */
static uint32_t alksim__disk_slot(const alksim_disk *disk, uint32_t k)
{
    uint32_t s = disk->pending_head + k;
    return s >= disk->cfg.max_pending ? s - disk->cfg.max_pending : s;
}

/* The newest content of `sector`: its latest cached version or durable. */
static const uint8_t *alksim__disk_sector(const alksim_disk *disk,
                                          uint64_t sector)
{
    uint32_t k = disk->pending_len;
    while (k-- > 0) {
        uint32_t i = alksim__disk_slot(disk, k);
        if (disk->pending_sector[i] == sector)
            return disk->pending_data + (size_t)i * disk->cfg.sector_size;
    }
    return disk->durable + (size_t)(sector * disk->cfg.sector_size);
}

ALKSIMDEF int alksim_disk_read(alksim_disk *disk, uint64_t offset, void *out,
                               size_t len)
{
    uint8_t *o = (uint8_t *)out;
    size_t ss = disk->cfg.sector_size;
    if (!out && len)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    if (!alksim__disk_bounds(disk, offset, len))
        return ALKSIM_ERR_RANGE;
    if (alksim__disk_injected(disk, ALKSIM_DISK_READ))
        return ALKSIM_ERR_IO;
    disk->stats.reads++;
    while (len) {
        uint64_t sector = offset / ss;
        size_t within = (size_t)(offset % ss), n = ss - within;
        if (n > len)
            n = len;
        memcpy(o, alksim__disk_sector(disk, sector) + within, n);
        o += n;
        offset += n;
        len -= n;
    }
    return ALKSIM_OK;
}

/* The cache is full: the oldest cached write goes to the medium, as a real
 * drive's write-back would. */
static void alksim__disk_writeback_oldest(alksim_disk *disk)
{
    size_t ss = disk->cfg.sector_size;
    uint32_t i = disk->pending_head;
    memcpy(disk->durable + (size_t)(disk->pending_sector[i] * ss),
           disk->pending_data + (size_t)i * ss, ss);
    disk->pending_head = alksim__disk_slot(disk, 1);
    disk->pending_len--;
    disk->stats.writebacks++;
}

ALKSIMDEF int alksim_disk_write(alksim_disk *disk, uint64_t offset,
                                const void *data, size_t len)
{
    const uint8_t *d = (const uint8_t *)data;
    size_t ss = disk->cfg.sector_size;
    if (!data && len)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    if (!alksim__disk_bounds(disk, offset, len))
        return ALKSIM_ERR_RANGE;
    if (alksim__disk_injected(disk, ALKSIM_DISK_WRITE))
        return ALKSIM_ERR_IO;
    disk->stats.writes++;
    while (len) {
        uint64_t sector = offset / ss;
        size_t within = (size_t)(offset % ss), n = ss - within;
        uint8_t *slot;
        uint32_t i;
        if (n > len)
            n = len;
        if (disk->pending_len == disk->cfg.max_pending)
            alksim__disk_writeback_oldest(disk);
        i = alksim__disk_slot(disk, disk->pending_len);
        slot = disk->pending_data + (size_t)i * ss;
        /* A cached version holds the whole sector as the writer saw it. */
        memcpy(slot, alksim__disk_sector(disk, sector), ss);
        memcpy(slot + within, d, n);
        disk->pending_sector[i] = sector;
        disk->pending_len++;
        d += n;
        offset += n;
        len -= n;
    }
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_disk_flush(alksim_disk *disk)
{
    if (alksim__disk_injected(disk, ALKSIM_DISK_FLUSH))
        return ALKSIM_ERR_IO;
    disk->stats.flushes++;
    while (disk->pending_len)
        alksim__disk_writeback_oldest(disk);
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_disk_crash(alksim_disk *disk, alksim_source *src)
{
    size_t ss = disk->cfg.sector_size;
    uint32_t i, j;
    disk->stats.crashes++;
    /* (i and j count cached writes from the oldest; _slot maps them) */
#define ALKSIM__PS(k) disk->pending_sector[alksim__disk_slot(disk, (k))]
    for (i = 0; i < disk->pending_len; i++) {
        uint64_t sector = ALKSIM__PS(i);
        uint32_t versions = 0, newest = i, chosen = 0, seen = 0;
        for (j = 0; j < i; j++)
            if (ALKSIM__PS(j) == sector)
                seen = 1;
        if (seen)
            continue; /* decided with the sector's first cached version */
        for (j = i; j < disk->pending_len; j++)
            if (ALKSIM__PS(j) == sector) {
                versions++;
                newest = j;
            }
        /* 0 = the durable content survives; k = the k-th cached version. */
        chosen = (uint32_t)alksim_pick(src, (size_t)versions + 1);
        if (chosen == 0) {
            disk->stats.crash_dropped++;
            continue;
        }
        for (j = i; j < disk->pending_len; j++)
            if (ALKSIM__PS(j) == sector && --chosen == 0)
                break;
        if (j == newest)
            disk->stats.crash_kept++;
        else
            disk->stats.crash_reordered++;
        memcpy(disk->durable + (size_t)(sector * ss),
               disk->pending_data + (size_t)alksim__disk_slot(disk, j) * ss,
               ss);
    }
#undef ALKSIM__PS
    disk->pending_len = 0;
    disk->pending_head = 0;
    return ALKSIM_OK;
}

ALKSIMDEF int alksim_disk_inject(alksim_disk *disk, int op, uint64_t nth)
{
    if (op < ALKSIM_DISK_READ || op > ALKSIM_DISK_FLUSH)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    disk->fail_countdown[op] = nth;
    return ALKSIM_OK;
}

ALKSIMDEF uint32_t alksim_disk_pending(const alksim_disk *disk)
{
    return disk->pending_len;
}

/* ---- Runner ------------------------------------------------------------------- */
static void alksim__vlog(alksim_ctx *ctx, const char *fmt, va_list ap)
{
    char line[ALKSIM_TRACE_WIDTH];
    const unsigned char *c;
    if (!(ctx->flags & (ALKSIM_RUN_VERBOSE | ALKSIM_RUN_HASH))) {
        ctx->trace_count++;
        return;
    }
    vsnprintf(line, sizeof line, fmt, ap);
    /* FNV-1a over every line: the determinism fingerprint of a run. */
    for (c = (const unsigned char *)line; *c; c++) {
        ctx->trace_hash ^= *c;
        ctx->trace_hash *= 0x100000001b3u;
    }
    ctx->trace_hash ^= '\n';
    ctx->trace_hash *= 0x100000001b3u;
#ifndef ALKSIM_NO_STDIO
    if (ctx->flags & ALKSIM_RUN_VERBOSE)
        fprintf(ctx->out ? (FILE *)ctx->out : stderr, "%6lu  %s\n",
                ctx->trace_count, line);
#endif
    ctx->trace_count++;
}

ALKSIMDEF void alksim_log(alksim_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    alksim__vlog(ctx, fmt, ap);
    va_end(ap);
}

ALKSIMDEF int alksim_fail(alksim_ctx *ctx, const char *fmt, ...)
{
    va_list ap;
    if (!ctx->failed) {
        const unsigned char *c;
        ctx->failed = 1;
        ctx->failure_site = 0xcbf29ce484222325u;
        for (c = (const unsigned char *)fmt; *c; c++) {
            ctx->failure_site ^= *c;
            ctx->failure_site *= 0x100000001b3u;
        }
        va_start(ap, fmt);
        vsnprintf(ctx->failure, sizeof ctx->failure, fmt, ap);
        va_end(ap);
        alksim_log(ctx, "FAILED: %s", ctx->failure);
    }
    return ALKSIM_ERR_FAILED;
}

/* Swarm testing: each run enables a drawn subset of the transition kinds
 * with drawn weights, so rare interleavings of a few kinds get explored. */
static void alksim__swarm(const alksim_scenario *sc, alksim_ctx *ctx)
{
    uint32_t all = sc->kind_count >= 32 ? 0xffffffffu
                                        : (UINT32_C(1) << sc->kind_count) - 1;
    unsigned k;
    char desc[ALKSIM_TRACE_WIDTH] = "";
    size_t at = 0;
    ctx->swarm_mask = all;
    if (sc->swarm) {
        ctx->swarm_mask = (uint32_t)alksim__draw(ctx->src, 4) & all;
        if (!ctx->swarm_mask)
            ctx->swarm_mask = all;
    }
    for (k = 0; k < sc->kind_count; k++) { /* weights start at 0 (memset) */
        if (ctx->swarm_mask & (UINT32_C(1) << k))
            ctx->weights[k] =
                sc->swarm ? 1 + (uint32_t)alksim_range(ctx->src, 0, 7) : 1;
        if (ctx->weights[k] && at < sizeof desc - 1) {
            int w = snprintf(desc + at, sizeof desc - at, " %s:%u",
                             sc->kinds[k], (unsigned)ctx->weights[k]);
            at += w > 0 ? (size_t)w : 0; /* snprintf keeps desc terminated */
        }
    }
    alksim_log(ctx, "kinds (weight):%s", desc);
}

ALKSIMDEF int alksim_run(const alksim_scenario *sc, const uint8_t *data,
                         size_t size, unsigned flags, void *out,
                         alksim_run_result *res)
{
    alksim_source src;
    alksim_ctx ctx;
    unsigned max_steps, max_quiesce, q = 0;
    void *state;
    int rc = ALKSIM_OK, step_kind = -1;

    if (!sc || !sc->setup || !sc->step || !sc->kind_count ||
        sc->kind_count > ALKSIM_MAX_KINDS)
        return ALKSIM_ERR_INVALID_ARGUMENT;
    max_steps = sc->max_steps ? sc->max_steps : 200;
    max_quiesce = sc->max_quiesce ? sc->max_quiesce : 100000;
    alksim_source_init_bytes(&src, data, size);
    memset(&ctx, 0, sizeof ctx);
    ctx.src = &src;
    ctx.flags = flags;
    ctx.out = out;
    ctx.trace_hash = 0xcbf29ce484222325u;
    alksim_log(&ctx, "scenario %s: input %zu bytes, max %u steps", sc->name,
               size, max_steps);
    alksim__swarm(sc, &ctx);
    state = sc->setup(&ctx);
    if (!state) {
        rc = ctx.failed ? ALKSIM_ERR_FAILED : ALKSIM_ERR_INVALID_ARGUMENT;
        goto done;
    }
    ctx.phase = 1;
    while (ctx.step < max_steps && !src.done) {
        unsigned kind =
            (unsigned)alksim_weighted(&src, ctx.weights, sc->kind_count);
        step_kind = (int)kind;
        ctx.step++;
        alksim_log(&ctx, "step %u @%llu ns: %s", ctx.step,
                   (unsigned long long)ctx.now, sc->kinds[kind]);
        rc = sc->step(&ctx, state, kind);
        if (rc == ALKSIM_OK && sc->check)
            rc = sc->check(&ctx, state);
        if (rc != ALKSIM_OK || ctx.failed)
            goto teardown;
    }
    ctx.phase = 2;
    alksim_log(&ctx, "liveness: heal at %llu ns", (unsigned long long)ctx.now);
    if (sc->heal)
        sc->heal(&ctx, state);
    if (sc->quiesce) {
        for (q = 0; q < max_quiesce; q++) {
            int more = sc->quiesce(&ctx, state);
            if (more < 0) {
                rc = more;
                goto teardown;
            }
            if (sc->check && (rc = sc->check(&ctx, state)) != ALKSIM_OK)
                goto teardown;
            if (ctx.failed)
                goto teardown;
            if (!more)
                break;
        }
        if (q == max_quiesce) {
            alksim_fail(&ctx, "liveness: still pending after %u steps (%llu ns)",
                        q, (unsigned long long)ctx.now);
            rc = ALKSIM_ERR_LIVENESS;
        }
    }
    alksim_log(&ctx, "done at %llu ns after %u steps, %u liveness steps",
               (unsigned long long)ctx.now, ctx.step, q);
teardown:
    if (sc->teardown)
        sc->teardown(state);
done:
    if (ctx.failed && rc == ALKSIM_OK)
        rc = ALKSIM_ERR_FAILED;
    if (rc != ALKSIM_OK && !ctx.failed)
        alksim_fail(&ctx, "%s", alksim_strerror(rc));
    if (res) {
        res->code = rc;
        res->steps = ctx.step;
        res->quiesce_steps = q;
        res->trace_hash = ctx.trace_hash;
        res->trace_lines = ctx.trace_count;
        res->end_time = ctx.now;
        res->failure_site = rc != ALKSIM_OK ? ctx.failure_site : 0;
        res->failure_phase = rc != ALKSIM_OK ? ctx.phase : -1;
        res->failure_kind = rc != ALKSIM_OK && ctx.phase == 1 ? step_kind : -1;
    }
    return rc;
}

ALKSIMDEF size_t alksim_seed_input(uint64_t seed, uint64_t run, uint8_t *buf,
                                   size_t max_len)
{
    uint64_t state = seed ^ (run * 0xd1b54a32d192ed03u);
    size_t len, i;
    if (!buf)
        return 0;
    len = (size_t)alksim_splitmix64(&state);
    if (max_len < SIZE_MAX)
        len %= max_len + 1;
    for (i = 0; i < len; i += 8) {
        uint64_t r = alksim_splitmix64(&state);
        size_t k;
        for (k = 0; k < 8 && i + k < len; k++)
            buf[i + k] = (uint8_t)(r >> (8 * k));
    }
    return len;
}

ALKSIMDEF int alksim_run_seed(const alksim_scenario *sc, uint64_t seed,
                              uint64_t run, uint8_t *buf, size_t max_len,
                              size_t *len, unsigned flags, void *out,
                              alksim_run_result *res)
{
    size_t n = alksim_seed_input(seed, run, buf, max_len);
    if (len)
        *len = n;
    return alksim_run(sc, buf, n, flags, out, res);
}

/* The same failure: a shrinker that accepts any failure slips from the bug
 * it was given to another one (the shrunk input then explains nothing). */
static int alksim__same_failure(const alksim_run_result *a,
                                const alksim_run_result *b)
{
    return a->code == b->code && a->failure_site == b->failure_site &&
           a->failure_phase == b->failure_phase &&
           a->failure_kind == b->failure_kind;
}

/* Delta debugging over the bytes (ddmin-style): remove ever smaller chunks
 * while the run still fails the same way, then zero single bytes (simpler
 * values) while it still fails; repeat until neither helps. */
ALKSIMDEF size_t alksim_shrink(const alksim_scenario *sc, const uint8_t *data,
                               size_t size, uint8_t *out, uint8_t *work,
                               unsigned max_runs)
{
    alksim_run_result r, target;
    size_t n = size, chunk, i;
    unsigned runs = 1;
    if (alksim_run(sc, data, size, 0, NULL, &target) == ALKSIM_OK)
        return ALKSIM_SHRINK_PASSES;
    if (size)
        memcpy(out, data, size);
    for (;;) {
        size_t before = n;
        int simpler = 0;
        chunk = n / 2 ? n / 2 : 1;
        while (n && runs < max_runs) {
            int progress = 0;
            size_t start = 0;
            while (start < n && runs < max_runs) {
                size_t len = chunk < n - start ? chunk : n - start;
                memcpy(work, out, start);
                memcpy(work + start, out + start + len, n - start - len);
                runs++;
                alksim_run(sc, work, n - len, 0, NULL, &r);
                if (alksim__same_failure(&r, &target)) {
                    memcpy(out, work, n - len);
                    n -= len;
                    progress = 1;
                } else {
                    start += len;
                }
            }
            if (!progress) {
                if (chunk == 1)
                    break;
                chunk /= 2;
            }
        }
        for (i = 0; i < n && runs < max_runs; i++) {
            uint8_t keep = out[i];
            if (!keep)
                continue;
            out[i] = 0;
            runs++;
            alksim_run(sc, out, n, 0, NULL, &r);
            if (!alksim__same_failure(&r, &target))
                out[i] = keep;
            else
                simpler = 1;
        }
        /* Zeroed bytes may make more chunks removable: go round again. */
        if ((n == before && !simpler) || runs >= max_runs)
            break;
    }
    return n;
}

#ifndef ALKSIM_NO_STDIO
ALKSIMDEF int alksim_fuzz_one(const alksim_scenario *sc, const uint8_t *data,
                              size_t size)
{
    alksim_run_result r;
    const char *dir;
    unsigned flags = getenv("ALKSIM_VERBOSE") ? ALKSIM_RUN_VERBOSE : 0;
    if (alksim_run(sc, data, size, flags, stderr, &r) == ALKSIM_OK)
        return 0;
    fprintf(stderr, "\nalksim: scenario %s failed (%s); full trace:\n",
            sc->name, alksim_strerror(r.code));
    alksim_run(sc, data, size, ALKSIM_RUN_VERBOSE | ALKSIM_RUN_HASH, stderr,
               &r);
    dir = getenv("ALKSIM_REPRO_DIR");
    if (dir) {
        char path[512];
        FILE *f;
        snprintf(path, sizeof path, "%s/%s-%016llx", dir, sc->name,
                 (unsigned long long)r.trace_hash);
        f = fopen(path, "wb");
        if (f) {
            fwrite(data, 1, size, f);
            fclose(f);
            fprintf(stderr, "alksim: reproducer written to %s\n", path);
        }
    }
    fflush(stderr);
    abort();
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* ALKSIM_IMPLEMENTATION */

/* REVISION HISTORY
 *   0.1.0 (2026-11-29)  byte source, PRNG, event queue, node driving,
 *                       datagram network with NAT, disk model, runner,
 *                       shrinking.
 *
 * LICENCE: this software is available under either of these licences, at
 * your choice.
 *
 * ALTERNATIVE A - MIT License
 * Copyright (c) 2026 the alk authors
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to
 * deal in the Software without restriction, including without limitation the
 * rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 * sell copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 * The above copyright notice and this permission notice shall be included in
 * all copies or substantial portions of the Software.
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 * FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
 * IN THE SOFTWARE.
 *
 * ALTERNATIVE B - Public Domain (www.unlicense.org)
 * This is free and unencumbered software released into the public domain.
 * Anyone is free to copy, modify, publish, use, compile, sell, or distribute
 * this software, either in source code form or as a compiled binary, for any
 * purpose, commercial or non-commercial, and by any means.
 * In jurisdictions that recognize copyright laws, the author or authors of
 * this software dedicate any and all copyright interest in the software to
 * the public domain. We make this dedication for the benefit of the public at
 * large and to the detriment of our heirs and successors. We intend this
 * dedication to be an overt act of relinquishment in perpetuity of all
 * present and future rights to this software under copyright law.
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
 * ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
 * CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
 */

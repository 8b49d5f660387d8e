/* alktunnel.c - a TCP and UDP tunnel tool on alktunnel.h's roles: relay,
 * gateway and client over real sockets, one poll() loop per process, no
 * threads; plus a plain echo server (TCP or UDP) for demos and tests.
 *
 * The roles are sans-IO state machines in alktunnel.h. This program is only
 * their I/O: it listens, accepts and connects when a role asks, feeds what
 * the sockets give, writes what the roles peek, runs their timers, and joins
 * every open channel to its local socket with an alkt_pump (TCP) or an
 * alkt_dgram_pump (UDP: the header frames the datagrams). Every tunnel
 * decision - paths and backoff, relay pairing, authorization, revocation -
 * is the header's.
 *
 * COMMAND LINE
 *
 *   alktunnel relay   --listen ADDR:PORT (--token TOKEN ... | --config relay.json)
 *                     [--offer-key GATEWAY_ID:HEX ...]
 *   alktunnel gateway --id ID --config gateway.json --listen ADDR:PORT
 *   alktunnel client  --id ID --config client.json --gateway GWID=ADDR:PORT
 *                     [-L [BIND:]PORT:HOST:HOSTPORT ...] [--connect-timeout SECS]
 *                     [-R [BIND:]PORT:LOCALHOST:LOCALPORT ...]
 *                     [-U [BIND:]PORT:HOST:HOSTPORT ...] [--udp-idle SECONDS]
 *                     [--udp-port-file FILE] [--via-relay] [--stats SECONDS]
 *   alktunnel echo    --listen ADDR:PORT [--udp]
 *   alktunnel --help
 *
 *   Sessions are encrypted (ChaCha20-Poly1305 records, keys from an X25519
 *   exchange bound to the authorization's secret): a relay on the path
 *   sees only sealed records. --plaintext (gateway and client, both or
 *   neither - they refuse each other otherwise) turns that off for links
 *   that are protected already.
 *
 *   Every subcommand also takes --port-file FILE (after binding, the actual
 *   port of its listen - the client's first -L, or without -L its first
 *   -U; a client with neither writes none - is written there, so tests can
 *   bind port 0) and -v (every connection in the log too); the client's
 *   --udp-port-file FILE gets its first -U's port. Relay, gateway and
 *   client take --stats SECONDS (throughput on stderr every SECONDS).
 *
 *   ADDR, HOST, BIND: IPv4 or IPv6 literals (IPv6 in brackets: [::1]:80);
 *   no names are resolved. -L listens on BIND (default 127.0.0.1) PORT (0:
 *   any free port) and opens a channel to HOST:HOSTPORT through the gateway
 *   whose resource covers it. A -L connection that is not carried within
 *   --connect-timeout SECS (default 10) - no session with that gateway, a
 *   session resuming, no room for its open there - is reset (SO_LINGER 0)
 *   and the log says why
 *   - the last failed attempt, e.g. the gateway closed the connection at
 *   our HELLO (it does not take our secret or name). -R asks that gateway
 *   to listen on BIND (default any: 0.0.0.0) PORT and sends each
 *   connection there to LOCALHOST:LOCALPORT; the gateway listens only when
 *   a live authorization of this client names a resource of that gateway
 *   whose CIDR covers the bind address and whose ports cover PORT (the
 *   client checks the same rule before it asks). --via-relay tries the
 *   config's relays before the direct path.
 *
 *   Relays. The relay serves the --token values, or with --config the
 *   tokens of the file's relays entries, and takes a spare connection (an
 *   offer) only from a gateway it holds a key for: --offer-key
 *   GATEWAY_ID:HEX, once per gateway (HEX: 32..128 lowercase hex digits,
 *   an even count - the format of a secret). That gateway's config names
 *   the same key in the relay's item, "offer_key":"HEX"; a gateway offers
 *   only at relays whose item has one, and clients never see it (leave it
 *   out of their configs). A relay without --offer-key joins nobody.
 *
 *   Strangers. A gateway answers nothing to a connection whose HELLO
 *   does not prove a secret it holds (an unknown name, a wrong MAC, a
 *   replayed HELLO): it resets it. At most 4 such unproven connections
 *   per source address are kept (a new one closes that address's
 *   oldest), and a full table closes the oldest unproven one. Work turned
 *   away or refused - those connections, refused opens (naming the
 *   client and the target), refused relay requests, a client's failed
 *   paths - is logged at most 5 lines per kind per 10 s, then one line
 *   with the count of the rest, so a flood does not fill the disk.
 *
 *   UDP. -U binds a UDP socket on BIND (default 127.0.0.1) PORT; each
 *   source address sending to it is a flow with its own channel (substrate
 *   udp to HOST:HOSTPORT - the resource's protocols must allow udp), its
 *   datagrams go through as datagrams (an empty one arrives empty) and the
 *   answers go back to that source. A flow with no datagram either way for
 *   --udp-idle SECONDS (default 60) ends with the channel's EOF; the next
 *   datagram from that source opens a new one. The gateway sends each
 *   udp channel's datagrams from a connected UDP socket of its own to the
 *   target, and ends the flow when the client does. Backpressure, not
 *   drops, where the wait is everyone's: a datagram the flow cannot take
 *   yet (the session with the gateway is not up - the client connects at
 *   its first open -, the flow's open is on its way, the channel's window
 *   is full) waits, and the -U socket is not read until it is in - the
 *   kernel's socket buffer queues behind it, and drops when full, as UDP
 *   may. Datagrams the tool itself drops are counted, and the count is in
 *   the flow's close line: those of a flow whose open finds no room (the
 *   session's channel table or resend log full: that may last while the
 *   other flows go on), the one waiting when the flow ended, those whose
 *   send to the source or target failed (an ICMP "port unreachable" from
 *   the target included). Datagrams that never got a flow (no free slot,
 *   the -U refused by our own config - then it drops every datagram until
 *   a reload, logging it once -, shutting down) are counted per -U and
 *   logged at exit. --udp-idle applies on the client (a flow still
 *   waiting for its open too); a gateway flow ends with the client's EOF
 *   or the session. echo --udp sends every datagram back to its sender.
 *
 *   Configs are control-plane documents (alkt_control: resources,
 *   authorizations, revocations, relays - SCHEMAS in alktunnel.h). The file
 *   is the node's whole view: a section left out is empty. A bad one is
 *   refused naming file, line, column and field, e.g.
 *     alktunnel: gateway.json:3:17: resources[0].cidr: malformed CIDR
 *   SIGHUP makes a gateway or client read its file again and apply it; a
 *   gateway then resets every channel no authorization covers any more
 *   (ALKT_CODE_REVOKED). A bad file on reload is logged, the old view kept.
 *
 *   SIGINT / SIGTERM: a gateway or client ends its channels with EOF, not
 *   a reset (every local endpoint is taken as read to its end; -U sockets
 *   are not read any more), waits until
 *   every pump is done or 3 s pass, says GOAWAY on its sessions and exits
 *   0. Relay and echo exit at once.
 *
 *   Exit status: 0 normal end, 1 runtime failure (a listen, memory), 2
 *   usage or config error.
 *
 * EXAMPLE SESSION (client.json: a resource 127.0.0.1/32 on gateway "gw1",
 * an authorization for "laptop" with its secret, and a relay
 * {"id":"r1","address":"127.0.0.1","port":7000,"token":"t0k"}; gateway.json
 * the same, its relay item with "offer_key":"KEYHEX" too)
 *
 *   alktunnel relay   --listen 127.0.0.1:7000 --token t0k --offer-key gw1:KEYHEX &
 *   alktunnel echo    --listen 127.0.0.1:9000 &
 *   alktunnel gateway --id gw1 --config gateway.json --listen 127.0.0.1:7100 &
 *   alktunnel client  --id laptop --config client.json --via-relay \
 *                     --gateway gw1=127.0.0.1:7100 -L 8080:127.0.0.1:9000 &
 *   echo hello | nc -N 127.0.0.1 8080       # hello: client, relay, gateway, echo
 *
 *   For UDP: "protocols":["tcp","udp"] in the resource, an
 *   `alktunnel echo --listen 127.0.0.1:9001 --udp` target and
 *   `-U 5353:127.0.0.1:9001` on the client; then
 *   echo hi | nc -u -w1 127.0.0.1 5353      # hi, back as one datagram
 *
 * LIMITS (compile-time; memory is allocated at start - only echo allocates
 * per connection)
 *
 *   sockets per process       1024 (listeners, connections, endpoints)
 *   channels with a pump      256 per process (TCP and UDP together), 256
 *                             KiB each (64 MiB reserved at start, touched
 *                             as used): a TCP pump reads up to 256 KiB at
 *                             a time, a datagram pump holds two datagrams
 *                             of up to 65535 bytes (every UDP payload
 *                             fits: no datagram is cut or refused for its
 *                             size)
 *   sessions                  client: one per --gateway (at most 8);
 *                             gateway: 8 clients at once; each session
 *                             64 channels x 256 KiB windows + 1 MiB resend
 *                             log (~17 MiB)
 *   -L, -R, -U                16 each; -U: one datagram waiting per -U
 *                             (64 KiB each)
 *   config sections           256 resources, authorizations, revocations;
 *                             64 relays; 1 MiB of JSON
 *   relay                     128 connections, 256 KiB held toward each;
 *                             64 --token, 64 --offer-key
 *   echo                      64 KiB buffered per connection; UDP: one
 *                             datagram held while its send would block
 *   substrates                tcp and udp direct opens; forwarded (-R)
 *                             listens TCP only; unix and host-name opens
 *                             are refused
 */
#define _POSIX_C_SOURCE 200809L
#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ---- limits ---- */
#define MAX_SOCKS 1024
#define MAX_TUNNELS 256
#define PUMP_BUF 262144u
#define UDP_MAX ALKT_DATAGRAM_MAX   /* every UDP payload fits (65507 on IPv4) */
#define TUNNEL_MEM PUMP_BUF        /* a TCP pump's buffer, or a datagram
                                      pump's 2 * (UDP_MAX + 2) */
#define UDP_IDLE_S 60u
#define UDP_BURST 64             /* datagrams read per socket per wakeup */
#define UDP_SOCK_BUF (1 << 20)   /* SO_RCVBUF / SO_SNDBUF asked for */
#define MAX_FORWARDS 16
#define MAX_GATEWAYS 8
#define MAX_TOKENS 64
#define MAX_OFFER_KEYS 64
#define CONTROL_CAP 256
#define RELAYS_CAP 64            /* alkt_node_config's max_relays limit */
#define CONFIG_MAX ((size_t)1 << 20)
#define IO_BUF ((size_t)256 * 1024)
#define RELAY_CONNS 128u
#define RELAY_BUF (256u * 1024u)
#define RELAY_HELD 512           /* relay: read before a connection is joined */
#define ECHO_BUF 65536u
#if TUNNEL_MEM < PUMP_BUF || TUNNEL_MEM < 2 * (UDP_MAX + 2)
#error "a tunnel's area must hold a TCP pump's buffer and a datagram pump's"
#endif
#define GATEWAY_PEERS 8u
#define SESSION_CHANNELS 64u
#define SESSION_WINDOW 262144u
#define SESSION_LOG (1u << 20)
#define SESSION_SEAL_BATCH 16u   /* records sealed per send: 256 KiB */

#define MS 1000000ull
#define SEC 1000000000ull
#define ENDPOINT_CONNECT_NS (10 * SEC) /* a target or -R local connect */
#define REMOTE_RETRY_NS (5 * SEC)      /* an -R listen that ended or failed */
#define STOP_GRACE_NS (3 * SEC)        /* SIGTERM: pumps get this long */
#define CONNECT_TIMEOUT_S 10u          /* -L: waiting for a session, at most */
#define LOG_BURST 5u                   /* lines per kind per window ... */
#define LOG_WINDOW_NS (10 * SEC)       /* ... then only a count */
#define POLL_MAX_MS 1000

/* ---- the command line ---- */
typedef struct forward_spec {
    int has_bind;
    alkt_ip bind;
    uint16_t port;
    alkt_ip host;
    uint16_t host_port;
} forward_spec;

typedef struct gateway_spec {
    char id[ALKT_ID_MAX + 1];
    alkt_ip ip;
    uint16_t port;
} gateway_spec;

/* Relay: a gateway whose offers it takes, and the key they are proven with. */
typedef struct offer_key_spec {
    char id[ALKT_ID_MAX + 1];
    unsigned char key[ALKT_SECRET_MAX];
    size_t key_len;
} offer_key_spec;

typedef struct options {
    const char *id, *config, *port_file;
    int has_listen;
    alkt_ip listen_ip;
    uint16_t listen_port;
    const char *tokens[MAX_TOKENS];
    size_t token_count;
    offer_key_spec offer_keys[MAX_OFFER_KEYS];
    size_t offer_key_count;
    unsigned connect_timeout_s;
    gateway_spec gateways[MAX_GATEWAYS];
    size_t gateway_count;
    forward_spec local[MAX_FORWARDS], remote[MAX_FORWARDS], udp[MAX_FORWARDS];
    size_t local_count, remote_count, udp_count;
    int via_relay, verbose, udp_echo, plaintext;
    unsigned stats_s, udp_idle_s;
    const char *udp_port_file;
} options;

/* ---- sockets and tunnels ---- */
enum sock_kind {
    K_FREE = 0,
    K_LISTEN,       /* the role's own --listen */
    K_LISTEN_L,     /* client: an -L listener (owner: the -L index) */
    K_LISTEN_FWD,   /* gateway: a forwarded open's listener (owner: tunnel) */
    K_NODE,         /* gateway, client: a node connection (handle) */
    K_RELAY,        /* relay: a connection (handle) */
    K_ENDPOINT,     /* a channel's local side (owner: tunnel) */
    K_ECHO,         /* echo: a connection */
    K_UDP_L,        /* client: a -U socket, shared by its flows (owner: the
                       -U index) */
    K_UDP_ECHO,     /* echo --udp: the socket */
    K_WAKE          /* the signal handler's pipe: poll wakes at once */
};

typedef struct sock {
    int fd;                     /* -1: free */
    enum sock_kind kind;
    int connecting;             /* a non-blocking connect not finished */
    int out_blocked;            /* the socket took less than was offered */
    uint32_t handle;            /* K_NODE, K_RELAY */
    int owner;
    uint32_t peer;              /* client K_NODE: the gateway it is for */
    int accepted;               /* K_NODE, K_RELAY: it came to our listen */
    int said;                   /* a byte went out on it: a gateway says
                                   nothing to a HELLO that proves nothing,
                                   so a K_NODE with none was never proven */
    int status_seen;            /* K_RELAY: the relay's first byte out is
                                   its status (0: joined) */
    unsigned char status;
    unsigned char req[ALKT_RELAY_REQUEST_MAX]; /* K_RELAY: the request's
                                   first bytes, to name it when refused */
    size_t req_len;
    char addr[64];              /* the far end, for the log */
    unsigned char held[RELAY_HELD]; /* relay: read, not taken by the role */
    size_t held_off, held_len;
    unsigned char *echo;        /* echo: bytes to send back */
    size_t echo_off, echo_len;
    int echo_eof;
} sock;

enum tunnel_state {
    T_FREE = 0,
    T_WAIT,         /* client: to open once the gateway's session is up */
    T_OPENING,      /* our open is out; OPENED not yet */
    T_CONNECTING,   /* the peer's open: our connect to its target runs */
    T_PUMP,         /* open: the pump joins channel and endpoint */
    T_LISTEN        /* a forwarded listen (client -R; gateway: its listener) */
};

typedef struct tunnel {
    enum tunnel_state state;
    int sock;                   /* endpoint or listener; -1: none */
    uint32_t peer, channel;
    int local, remote;          /* client: the -L / -R index, else -1 */
    int code;                   /* reset or refusal code from the events */
    int peer_reset;             /* ... and it was the peer's RESET */
    int want_read;              /* the pump's last poll asked for READ */
    int retry_soon;             /* T_WAIT: the open found the resend log
                                   or the channel table full: again after
                                   the next input, not at PEER_UP */
    int endpoint_errno;
    uint64_t started, deadline;
    alkt_pump pump;
    char what[160];             /* the endpoints, for the log */
    /* UDP flows (udp set): the datagram pump instead of the byte pump */
    int udp;
    int udp_index;              /* client: the -U (its socket is shared);
                                   gateway: -1 (tunnel.sock is the flow's own
                                   connected socket) */
    struct sockaddr_storage src;/* client: the flow's source */
    socklen_t src_len;
    int udp_eof;                /* our side ended it (idle, the peer's EOF,
                                   shutdown): no new datagram joins it */
    int udp_blocked;            /* client: sendto to the source would block */
    uint64_t last_active;       /* a datagram either way: for --udp-idle */
    uint64_t dgrams_in, bytes_in;   /* local -> tunnel */
    uint64_t dgrams_out, bytes_out; /* tunnel -> local */
    uint64_t dropped;
    alkt_dgram_pump dpump;
} tunnel;

/* Client: a -U socket's state; one datagram may wait for its flow. */
typedef struct udp_forward {
    int sock;
    int held;                   /* our own config refused its opens: every
                                   datagram is dropped until a reload */
    int pending;                /* a datagram waits in buf ... */
    int pending_flow;           /* ... for this tunnel */
    size_t pending_len;
    uint64_t turned_away;       /* datagrams that never got a flow */
    unsigned char buf[UDP_MAX];
} udp_forward;

typedef struct control_store {
    alkt_resource resources[CONTROL_CAP];
    alkt_authorization authorizations[CONTROL_CAP];
    alkt_revocation revocations[CONTROL_CAP];
    alkt_relay relays[RELAYS_CAP];
    alkt_control ctl;
} control_store;

/* Kinds of line a stranger can cause in numbers: each is rate-limited. */
enum log_kind {
    LOG_TURNED_AWAY,    /* gateway: connections closed unproven */
    LOG_OPEN_REFUSED,   /* gateway: opens no authorization covers */
    LOG_OFFER_FAILED,   /* gateway: offers a relay refused */
    LOG_RELAY_REFUSED,  /* relay: requests refused */
    LOG_PATH_FAILED,    /* client: failed attempts */
    LOG_CONN_CLOSED,    /* client: connections the node closed */
    LOG_LOCAL_RESET,    /* client: -L connections reset, no session */
    LOG_KINDS
};

/* Client: the last failure on one path to a gateway. */
#define PATHS_TOLD 4
typedef struct path_failure {
    char via[64];               /* empty: unused */
    char why[400];
} path_failure;

typedef struct log_limit {
    uint64_t window_end;        /* 0: no window open */
    unsigned printed;
    unsigned long long held;    /* lines not printed in this window */
} log_limit;

static struct app {
    const char *role;
    options opt;
    sock socks[MAX_SOCKS];
    int sock_high;              /* slots in use are below this */
    int tunnel_high;            /* tunnels not T_FREE are below this */
    tunnel tunnels[MAX_TUNNELS];
    unsigned char *pump_mem;    /* MAX_TUNNELS * TUNNEL_MEM */
    alkt_node *node;
    int is_gateway;
    int remote_tunnel[MAX_FORWARDS];      /* client: -R's tunnel or -1 */
    uint64_t remote_retry_at[MAX_FORWARDS];
    int remote_hold[MAX_FORWARDS];        /* refused by our own config */
    char peer_names[GATEWAY_PEERS + 1][ALKT_IDENTITY_MAX + 16]; /* at PEER_UP */
    /* client, per gateway: the resource whose secret keys the session,
     * why the last attempt on each path failed, why the last connection
     * ended */
    char key_resource[GATEWAY_PEERS + 1][ALKT_ID_MAX + 1];
    path_failure failures[GATEWAY_PEERS + 1][PATHS_TOLD];
    char conn_error[GATEWAY_PEERS + 1][96];
    const control_store *view;  /* the control document applied last */
    void *role_mem;             /* the node's or relay's memory */
    log_limit limits[LOG_KINDS];
    alkt_relay_server relay;
    int stopping;
    uint64_t stop_deadline;
    uint64_t done_from, done_to;          /* bytes of finished pumps */
    uint64_t stats_at, stats_from, stats_to, stats_t;
    int spins;
    unsigned char io[IO_BUF];
} A;

static control_store config_store, reload_store;
static udp_forward udp_fw[MAX_FORWARDS];
static volatile sig_atomic_t got_stop, got_hup;
static int wake_pipe[2] = {-1, -1};

/* ---- small helpers ---- */
static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * SEC + (uint64_t)t.tv_nsec;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 0)))
#endif
static void vsay(const char *fmt, va_list ap)
{
    char line[1024];
    int n = snprintf(line, sizeof line, "alktunnel %s: ", A.role);
    if (n > 0 && (size_t)n < sizeof line)
        vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    fprintf(stderr, "%s\n", line);
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 1, 2)))
#endif
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

/* Closes the windows that are over (all of them at exit: now ==
 * UINT64_MAX): each says how many of its lines were not printed. Called
 * every loop pass (at most POLL_MAX_MS apart), so a count comes within a
 * second of its window's end. */
static void log_tick(uint64_t now)
{
    static const char *const what[LOG_KINDS] = {
        "connections turned away", "opens refused", "offers refused by a relay",
        "relay requests refused", "path failures", "connections closed",
        "-L connections reset"};
    int k;
    for (k = 0; k < LOG_KINDS; k++) {
        log_limit *l = &A.limits[k];
        if (!l->window_end || now < l->window_end) continue;
        if (l->held)
            say("... and %llu more %s in the last %llu s", l->held, what[k],
                (unsigned long long)((now == UINT64_MAX ? now_ns() - l->window_end +
                                      LOG_WINDOW_NS : LOG_WINDOW_NS) / SEC));
        memset(l, 0, sizeof *l);
    }
}

/* A line a stranger can make us write as often as it likes: the first
 * LOG_BURST of its kind in a window are printed, the rest only counted. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void say_limited(enum log_kind kind, const char *fmt, ...)
{
    log_limit *l = &A.limits[kind];
    uint64_t now = now_ns();
    va_list ap;
    log_tick(now);
    if (!l->window_end) l->window_end = now + LOG_WINDOW_NS;
    if (l->printed >= LOG_BURST) {
        l->held++;
        return;
    }
    l->printed++;
    va_start(ap, fmt);
    vsay(fmt, ap);
    va_end(ap);
}

static void on_signal(int sig)
{
    int saved = errno;
    if (sig == SIGHUP) got_hup = 1;
    else got_stop = 1;
    /* a signal just before poll() would otherwise wait for its timeout */
    if (wake_pipe[1] >= 0) {
        ssize_t r = write(wake_pipe[1], "", 1);
        (void)r;
    }
    errno = saved;
}

static void random_bytes(unsigned char *out, size_t n)
{
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(out, 1, n, f) != n) {
        fprintf(stderr, "alktunnel: /dev/urandom: %s\n", strerror(errno));
        exit(1);
    }
    fclose(f);
}

/* An application or library code as text: names for the ALKT_CODE_* and
 * the session's own refusal codes, alkt_strerror for negative ones. */
static const char *code_text(int code, char *buf, size_t cap)
{
    static const struct { unsigned code; const char *name; } names[] = {
        {ALKT_CODE_UNAUTHORIZED, "unauthorized"},
        {ALKT_CODE_REVOKED, "revoked"},
        {ALKT_CODE_TARGET_REFUSED, "target refused"},
        {ALKT_CODE_LISTEN_FAILED, "listen failed"},
        {ALKT_CODE_ENDPOINT_ERROR, "endpoint error"},
        {ALKT_CODE_SHUTDOWN, "shutdown"},
        {ALKT_CODE_NO_PATH, "no path to the gateway"},
        {0xff01u, "duplicate channel id"},
        {0xff02u, "bad open params"},
        {0xff03u, "no free channel at the peer"},
    };
    size_t i;
    if (code < 0) return alkt_strerror(code);
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if ((int)names[i].code == code) {
            snprintf(buf, cap, "%s (0x%04x)", names[i].name, (unsigned)code);
            return buf;
        }
    snprintf(buf, cap, "code 0x%04x", (unsigned)code);
    return buf;
}

/* ---- addresses ---- */
static int parse_port(const char *s, size_t len, int allow_zero, uint16_t *port)
{
    unsigned long v = 0;
    size_t i;
    if (len == 0 || len > 5) return -1;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (v > 65535 || (v == 0 && !allow_zero)) return -1;
    *port = (uint16_t)v;
    return 0;
}

/* An IP literal, IPv6 optionally in brackets. */
static int parse_ip(const char *s, size_t len, alkt_ip *ip)
{
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        s++;
        len -= 2;
    }
    return alkt_ip_parse(s, len, ip) == ALKT_OK ? 0 : -1;
}

/* Splits at ':' outside brackets into at most max fields. */
static int split_fields(const char *s, const char **start, size_t *len, int max)
{
    int n = 0, depth = 0;
    const char *p = s;
    start[0] = s;
    for (;; p++) {
        if (*p == '[') depth++;
        if (*p == ']') depth--;
        if (*p == 0 || (*p == ':' && depth == 0)) {
            len[n] = (size_t)(p - start[n]);
            n++;
            if (*p == 0) break;
            if (n == max) return -1;
            start[n] = p + 1;
        }
    }
    return depth == 0 ? n : -1;
}

/* ADDR:PORT; IPv6 as [::1]:80. */
static int parse_addr_port(const char *s, int allow_zero, alkt_ip *ip, uint16_t *port)
{
    const char *f[2];
    size_t l[2];
    if (split_fields(s, f, l, 2) != 2) return -1;
    return parse_ip(f[0], l[0], ip) == 0 && parse_port(f[1], l[1], allow_zero, port) == 0
               ? 0 : -1;
}

/* [BIND:]PORT:HOST:HOSTPORT */
static int parse_forward(const char *s, int allow_zero, forward_spec *fs)
{
    const char *f[4];
    size_t l[4];
    int n = split_fields(s, f, l, 4), k = 0;
    memset(fs, 0, sizeof *fs);
    if (n != 3 && n != 4) return -1;
    if (n == 4) {
        if (parse_ip(f[0], l[0], &fs->bind) != 0) return -1;
        fs->has_bind = 1;
        k = 1;
    }
    if (parse_port(f[k], l[k], allow_zero, &fs->port) != 0 ||
        parse_ip(f[k + 1], l[k + 1], &fs->host) != 0 ||
        parse_port(f[k + 2], l[k + 2], 0, &fs->host_port) != 0)
        return -1;
    return 0;
}

static const char *ip_port_text(const alkt_ip *ip, uint16_t port, char *out, size_t cap)
{
    char t[ALKT_IP_TEXT_MAX];
    alkt_ip_format(ip, t);
    snprintf(out, cap, ip->family == 6 ? "[%s]:%u" : "%s:%u", t, (unsigned)port);
    return out;
}

static socklen_t make_sockaddr(const alkt_ip *ip, uint16_t port, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (ip->family == 6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)(void *)ss;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons(port);
        memcpy(&a->sin6_addr, ip->bytes, 16);
        return (socklen_t)sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)(void *)ss;
        a->sin_family = AF_INET;
        a->sin_port = htons(port);
        memcpy(&a->sin_addr, ip->bytes, 4);
        return (socklen_t)sizeof *a;
    }
}

/* An IPv4-mapped IPv6 address comes back as the IPv4 one. */
static void read_sockaddr(const struct sockaddr_storage *ss, alkt_ip *ip, uint16_t *port)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memset(ip, 0, sizeof *ip);
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)(const void *)ss;
        const unsigned char *b = (const unsigned char *)&a->sin6_addr;
        if (memcmp(b, mapped, 12) == 0) {
            ip->family = 4;
            memcpy(ip->bytes, b + 12, 4);
        } else {
            ip->family = 6;
            memcpy(ip->bytes, b, 16);
        }
        *port = ntohs(a->sin6_port);
    } else {
        const struct sockaddr_in *a = (const struct sockaddr_in *)(const void *)ss;
        ip->family = 4;
        memcpy(ip->bytes, &a->sin_addr, 4);
        *port = ntohs(a->sin_port);
    }
}

/* ---- sockets ---- */
static int set_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void set_nodelay(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* A listening socket on ip:port (non-blocking), *actual its port; -1 and
 * errno on failure. */
static int listen_on(const alkt_ip *ip, uint16_t port, alkt_ip *bound, uint16_t *actual)
{
    struct sockaddr_storage ss;
    socklen_t len = make_sockaddr(ip, port, &ss);
    int one = 1, e;
    int fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 128) < 0 ||
        set_nonblocking(fd) < 0)
        goto fail;
    len = (socklen_t)sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) goto fail;
    {
        alkt_ip got;
        uint16_t p;
        read_sockaddr(&ss, &got, &p);
        if (bound) *bound = got;
        if (actual) *actual = p;
    }
    return fd;
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* A UDP socket bound to ip:port (non-blocking), *actual its port; -1 and
 * errno on failure. */
static int udp_bind(const alkt_ip *ip, uint16_t port, uint16_t *actual)
{
    struct sockaddr_storage ss;
    socklen_t len = make_sockaddr(ip, port, &ss);
    int size = UDP_SOCK_BUF, e;
    int fd = socket(ss.ss_family, SOCK_DGRAM, 0);
    if (fd < 0) return -1;
    /* a burst queues in the kernel while a flow's open is on its way
     * (capped by the system's maximum: no error when it is lower) */
    (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || set_nonblocking(fd) < 0) goto fail;
    len = (socklen_t)sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0) goto fail;
    {
        alkt_ip got;
        read_sockaddr(&ss, &got, actual);
    }
    return fd;
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* The same UDP source: family, address and port. */
static int same_source(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family) return 0;
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)(const void *)a;
        const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)(const void *)b;
        return x->sin6_port == y->sin6_port &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0 &&
               x->sin6_scope_id == y->sin6_scope_id;
    } else {
        const struct sockaddr_in *x = (const struct sockaddr_in *)(const void *)a;
        const struct sockaddr_in *y = (const struct sockaddr_in *)(const void *)b;
        return x->sin_port == y->sin_port &&
               memcmp(&x->sin_addr, &y->sin_addr, sizeof x->sin_addr) == 0;
    }
}

/* A non-blocking connect (type SOCK_STREAM, or SOCK_DGRAM: done at once):
 * the fd (*now_done 1 when it connected at once), or -1 and errno. */
static int connect_start(const alkt_ip *ip, uint16_t port, int type, int *now_done)
{
    struct sockaddr_storage ss;
    socklen_t len = make_sockaddr(ip, port, &ss);
    int fd = socket(ss.ss_family, type, 0), e;
    *now_done = 0;
    if (fd < 0) return -1;
    if (set_nonblocking(fd) < 0) goto fail;
    if (connect(fd, (struct sockaddr *)&ss, len) == 0) {
        *now_done = 1;
        return fd;
    }
    if (errno == EINPROGRESS) return fd;
fail:
    e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* 0 when a finished non-blocking connect worked, else its errno. */
static int connect_result(int fd)
{
    int err = 0;
    socklen_t len = (socklen_t)sizeof err;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return errno;
    return err;
}

static int sock_add(int fd, enum sock_kind kind)
{
    int i;
    for (i = 0; i < MAX_SOCKS; i++) {
        sock *so = &A.socks[i];
        if (so->fd >= 0) continue;
        so->fd = fd;
        so->kind = kind;
        so->connecting = so->out_blocked = 0;
        so->handle = 0;
        so->owner = -1;
        so->peer = 0;
        so->accepted = so->said = so->status_seen = 0;
        so->status = 0;
        so->req_len = 0;
        so->addr[0] = 0;
        so->held_off = so->held_len = 0;
        so->echo = NULL;
        so->echo_off = so->echo_len = 0;
        so->echo_eof = 0;
        if (i + 1 > A.sock_high) A.sock_high = i + 1;
        return i;
    }
    return -1;
}

/* Closes slot i; abort: with a TCP reset (SO_LINGER 0), so the far end
 * sees the failure rather than a clean end. */
static void sock_close(int i, int abort_it)
{
    sock *so = &A.socks[i];
    if (so->fd < 0) return;
    if (abort_it) {
        struct linger lg;
        lg.l_onoff = 1;
        lg.l_linger = 0;
        (void)setsockopt(so->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    close(so->fd);
    free(so->echo);
    so->echo = NULL;
    so->fd = -1;
    so->kind = K_FREE;
    while (A.sock_high > 0 && A.socks[A.sock_high - 1].fd < 0) A.sock_high--;
}

static int sock_by_handle(enum sock_kind kind, uint32_t handle)
{
    int i;
    for (i = 0; i < A.sock_high; i++)
        if (A.socks[i].fd >= 0 && A.socks[i].kind == kind && A.socks[i].handle == handle)
            return i;
    return -1;
}

/* Accepts one connection on listener fd: the new fd (non-blocking) and
 * the far end's address, or -1 (nothing waiting, or an error). */
static int accept_one(int lfd, alkt_ip *ip, uint16_t *port)
{
    struct sockaddr_storage ss;
    socklen_t len = (socklen_t)sizeof ss;
    int fd = accept(lfd, (struct sockaddr *)&ss, &len);
    if (fd < 0) return -1;
    if (set_nonblocking(fd) < 0) {
        close(fd);
        return -1;
    }
    read_sockaddr(&ss, ip, port);
    return fd;
}

/* The wake pipe's bytes: read and dropped (the flags say what came). */
static void wake_drain(int fd)
{
    unsigned char b[64];
    while (read(fd, b, sizeof b) > 0) {}
}

static int write_port_file(const char *path, unsigned port)
{
    char tmp[4096];
    FILE *f;
    /* written aside and renamed: a reader never sees half a number */
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f || fprintf(f, "%u\n", port) < 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        say("%s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* The poll timeout in ms for a deadline, rounded up, capped. */
static int ms_until(uint64_t now, uint64_t due, int ms)
{
    uint64_t d;
    if (due <= now) return 0;
    d = (due - now) / MS + ((due - now) % MS != 0);   /* (due may be UINT64_MAX) */
    return d < (uint64_t)ms ? (int)d : ms;
}

/* ---- configs ---- */
static void control_arrays(control_store *cs)
{
    memset(cs, 0, sizeof *cs);
    cs->ctl.resources = cs->resources;
    cs->ctl.resource_cap = CONTROL_CAP;
    cs->ctl.authorizations = cs->authorizations;
    cs->ctl.authorization_cap = CONTROL_CAP;
    cs->ctl.revocations = cs->revocations;
    cs->ctl.revocation_cap = CONTROL_CAP;
    cs->ctl.relays = cs->relays;
    cs->ctl.relay_cap = RELAYS_CAP;
}

/* Reads and decodes a control document; on failure msg says why (file,
 * line, column, field path). The file is the whole view: sections it
 * leaves out are applied as empty. */
static int load_control(const char *path, control_store *cs, char *msg, size_t cap)
{
    static char text[CONFIG_MAX + 1];
    alkt_error err;
    size_t len;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(msg, cap, "%s: %s", path, strerror(errno));
        return -1;
    }
    len = fread(text, 1, sizeof text, f);   /* over 1 MiB: TOO_LARGE below */
    if (ferror(f)) {
        snprintf(msg, cap, "%s: %s", path, strerror(errno));
        fclose(f);
        return -1;
    }
    fclose(f);
    control_arrays(cs);
    if (alkt_control_decode(text, len, NULL, &cs->ctl, &err) != ALKT_OK) {
        size_t pl = strlen(err.path);
        int secret = (pl >= 7 && strcmp(err.path + pl - 7, ".secret") == 0) ||
                     (pl >= 10 && strcmp(err.path + pl - 10, ".offer_key") == 0);
        snprintf(msg, cap, "%s:%zu:%zu: %s%s%s%s", path, err.line, err.column, err.path,
                 err.path[0] ? ": " : "", alkt_strerror(err.code),
                 secret ? " (a secret is 32..128 lowercase hex digits, an even count)" : "");
        return -1;
    }
    cs->ctl.has_resources = cs->ctl.has_authorizations = cs->ctl.has_relays = 1;
    return 0;
}

/* ---- tunnels ---- */
static int tunnel_new(enum tunnel_state state, int sock_index)
{
    int t;
    for (t = 0; t < MAX_TUNNELS; t++) {
        tunnel *tu = &A.tunnels[t];
        if (tu->state != T_FREE) continue;
        memset(tu, 0, sizeof *tu);
        tu->state = state;
        tu->sock = sock_index;
        tu->local = tu->remote = tu->udp_index = -1;
        tu->started = now_ns();
        if (sock_index >= 0) A.socks[sock_index].owner = t;
        if (t + 1 > A.tunnel_high) A.tunnel_high = t + 1;
        return t;
    }
    return -1;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static void describe(int t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);   /* (cut to fit: it is only for the log) */
    vsnprintf(A.tunnels[t].what, sizeof A.tunnels[t].what, fmt, ap);
    va_end(ap);
}

static int tunnel_find(uint32_t peer, uint32_t channel)
{
    int t;
    for (t = 0; t < A.tunnel_high; t++) {
        const tunnel *tu = &A.tunnels[t];
        if (tu->state != T_FREE && tu->state != T_WAIT && tu->peer == peer &&
            tu->channel == channel)
            return t;
    }
    return -1;
}

static const char *peer_name(uint32_t peer, char *out, size_t cap)
{
    alkt_session *s = alkt_node_session(A.node, peer);
    size_t len = 0;
    const char *id = s ? alkt_session_peer_identity(s, &len) : NULL;
    if (id) snprintf(out, cap, "%.*s", (int)len, id);
    else if (peer <= GATEWAY_PEERS && A.peer_names[peer][0])
        snprintf(out, cap, "%s", A.peer_names[peer]);   /* the session is gone */
    else if (!A.is_gateway && peer >= 1 && peer <= A.opt.gateway_count)
        snprintf(out, cap, "%s", A.opt.gateways[peer - 1].id);   /* none yet */
    else snprintf(out, cap, "peer %u", (unsigned)peer);
    return out;
}

/* A client -R listen ended or failed: try again later (at once when a
 * new session comes up). held: our own config refuses it - only a reload
 * can change that. */
static void remote_idle(int r, int held)
{
    A.remote_tunnel[r] = -1;
    A.remote_hold[r] = held;
    A.remote_retry_at[r] = now_ns() + REMOTE_RETRY_NS;
}

/* Client: the datagram waiting in the flow's -U for it is dropped. */
static void udp_drop_pending(int t)
{
    tunnel *tu = &A.tunnels[t];
    udp_forward *u;
    if (!tu->udp || tu->udp_index < 0) return;
    u = &udp_fw[tu->udp_index];
    if (u->pending && u->pending_flow == t) {
        u->pending = 0;
        tu->dropped++;
    }
}

/* Ends a tunnel: the log line for a pumped channel, the socket closed
 * (with a reset when aborted), the -R slot freed. */
static void tunnel_end(int t, int aborted, const char *why)
{
    tunnel *tu = &A.tunnels[t];
    char buf[96], name[ALKT_IDENTITY_MAX + 16];
    udp_drop_pending(t);
    if (tu->state == T_PUMP) {
        double secs = (double)(now_ns() - tu->started) / 1e9;
        const char *reason = "done", *by = "";
        if (aborted) {
            int code = tu->code ? tu->code : tu->udp ? tu->dpump.code : tu->pump.code;
            reason = why ? why : code_text(code, buf, sizeof buf);
            /* whose: the peer's RESET, our endpoint's failure, or ours */
            by = why ? "" : tu->peer_reset ? "reset by the peer: "
                 : tu->endpoint_errno ? "local endpoint failed: " : "reset: ";
        }
        if (tu->udp) {
            say("ch %u (%s) closed: %s%s%s%s; %llu datagrams (%llu bytes) local->tunnel, "
                "%llu datagrams (%llu bytes) tunnel->local, %llu dropped, %.2f s [%s]",
                (unsigned)tu->channel, peer_name(tu->peer, name, sizeof name), by, reason,
                tu->endpoint_errno ? ": " : "",
                tu->endpoint_errno ? strerror(tu->endpoint_errno) : "",
                (unsigned long long)tu->dgrams_in, (unsigned long long)tu->bytes_in,
                (unsigned long long)tu->dgrams_out, (unsigned long long)tu->bytes_out,
                (unsigned long long)tu->dropped, secs, tu->what);
            A.done_from += tu->bytes_in;
            A.done_to += tu->bytes_out;
        } else {
            say("ch %u (%s) closed: %s%s%s%s; %llu bytes local->tunnel, %llu tunnel->local, "
                "%.2f s [%s]", (unsigned)tu->channel, peer_name(tu->peer, name, sizeof name),
                by, reason, tu->endpoint_errno ? ": " : "",
                tu->endpoint_errno ? strerror(tu->endpoint_errno) : "",
                (unsigned long long)tu->pump.from_endpoint,
                (unsigned long long)tu->pump.to_endpoint, secs, tu->what);
            A.done_from += tu->pump.from_endpoint;
            A.done_to += tu->pump.to_endpoint;
        }
    } else if (why && tu->udp && tu->dropped) {
        say("%s: %s; %llu datagram(s) dropped", tu->what, why,
            (unsigned long long)tu->dropped);
    } else if (why) {
        say("%s: %s", tu->what, why);
    }
    if (tu->remote >= 0 && A.remote_tunnel[tu->remote] == t)
        remote_idle(tu->remote, 0);
    if (tu->sock >= 0) sock_close(tu->sock, aborted);
    tu->sock = -1;
    tu->state = T_FREE;
    while (A.tunnel_high > 0 && A.tunnels[A.tunnel_high - 1].state == T_FREE) A.tunnel_high--;
}

static void pump_start(int t)
{
    tunnel *tu = &A.tunnels[t];
    alkt_session *s = alkt_node_session(A.node, tu->peer);
    unsigned char *mem = A.pump_mem + (size_t)t * TUNNEL_MEM;
    char name[ALKT_IDENTITY_MAX + 16];
    int rc = !s ? ALKT_ERR_NOT_CONNECTED
             : tu->udp ? alkt_dgram_pump_init(&tu->dpump, s, tu->channel, mem, TUNNEL_MEM,
                                              UDP_MAX)
                       : alkt_pump_init(&tu->pump, s, tu->channel, mem, PUMP_BUF);
    if (rc != ALKT_OK) {
        if (s) (void)alkt_channel_reset(s, tu->channel, (uint16_t)ALKT_CODE_ENDPOINT_ERROR);
        tunnel_end(t, 1, "no session for the pump");
        return;
    }
    tu->state = T_PUMP;
    tu->started = tu->last_active = now_ns();
    tu->want_read = 1;
    say("ch %u (%s) open [%s]", (unsigned)tu->channel,
        peer_name(tu->peer, name, sizeof name), tu->what);
    if (A.stopping) {   /* opened late */
        if (!tu->udp) {
            (void)alkt_pump_endpoint_eof(&tu->pump);
        } else {
            tu->udp_eof = 1;
            (void)alkt_dgram_pump_endpoint_eof(&tu->dpump);
        }
    }
}

/* Runs one pump as far as it goes without waiting: writes to the
 * endpoint, its shutdown, the end. 1 when anything moved. */
static int pump_service(int t)
{
    tunnel *tu = &A.tunnels[t];
    sock *so = &A.socks[tu->sock];
    int moved = 0, round;
    so->out_blocked = 0;
    for (round = 0; round < 8; round++) {
        unsigned bits = alkt_pump_poll(&tu->pump);
        int again = 0;
        if (bits & ALKT_PUMP_ABORT) {
            tunnel_end(t, 1, NULL);
            return 1;
        }
        if (bits & ALKT_PUMP_DONE) {
            tunnel_end(t, 0, NULL);
            return 1;
        }
        tu->want_read = (bits & ALKT_PUMP_READ) != 0;
        if ((bits & ALKT_PUMP_WRITE) && !so->out_blocked) {
            const void *d;
            size_t n;
            while ((n = alkt_pump_write_peek(&tu->pump, &d)) > 0) {
                ssize_t w = send(so->fd, d, n, MSG_NOSIGNAL);
                if (w < 0) {
                    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                        so->out_blocked = 1;
                        break;
                    }
                    tu->endpoint_errno = errno;
                    (void)alkt_pump_endpoint_failed(&tu->pump,
                                                    (uint16_t)ALKT_CODE_ENDPOINT_ERROR);
                    again = 1;
                    break;
                }
                (void)alkt_pump_endpoint_wrote(&tu->pump, (size_t)w);
                moved = again = 1;
                if ((size_t)w < n) {
                    so->out_blocked = 1;
                    break;
                }
            }
        }
        if (bits & ALKT_PUMP_SHUT_WRITE) {
            /* an error here means the endpoint is gone: its read says so */
            (void)shutdown(so->fd, SHUT_WR);
            (void)alkt_pump_endpoint_shut(&tu->pump);
            moved = again = 1;
        }
        if (!again) break;
    }
    return moved;
}

/* POLLIN on a pumped endpoint: into the pump's buffer. */
static void pump_read(int t)
{
    tunnel *tu = &A.tunnels[t];
    void *buf;
    size_t room = alkt_pump_read_buffer(&tu->pump, &buf);
    ssize_t r;
    if (room == 0) return;
    r = recv(A.socks[tu->sock].fd, buf, room, 0);
    if (r > 0) {
        (void)alkt_pump_endpoint_read(&tu->pump, (size_t)r);
    } else if (r == 0) {
        (void)alkt_pump_endpoint_eof(&tu->pump);
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        tu->endpoint_errno = errno;
        (void)alkt_pump_endpoint_failed(&tu->pump, (uint16_t)ALKT_CODE_ENDPOINT_ERROR);
    }
}

/* ---- UDP flows ---- */

/* Our side of a flow ends: the channel's EOF follows its last datagram;
 * the flow is DONE once the peer's EOF came too. */
static void udp_end_flow(int t)
{
    tunnel *tu = &A.tunnels[t];
    if (tu->udp_eof) return;
    tu->udp_eof = 1;
    (void)alkt_dgram_pump_endpoint_eof(&tu->dpump);
}

/* A datagram from the flow's endpoint into its pump: 1 taken, 0 it must
 * wait (the last one is still going in), -1 dropped (counted). */
static int udp_in(int t, const void *data, size_t len)
{
    tunnel *tu = &A.tunnels[t];
    int rc = alkt_dgram_pump_send(&tu->dpump, data, len);
    if (rc == ALKT_ERR_WOULD_BLOCK) return 0;
    if (rc != ALKT_OK) {   /* the flow is ending or reset */
        tu->dropped++;
        return -1;
    }
    tu->dgrams_in++;
    tu->bytes_in += len;
    tu->last_active = now_ns();
    return 1;
}

/* Runs one datagram pump as far as it goes without waiting: datagrams to
 * the endpoint (the client's -U source, or the gateway's target), the end.
 * 1 when anything moved. */
static int dgram_service(int t)
{
    tunnel *tu = &A.tunnels[t];
    int moved = 0, round, fd;
    const struct sockaddr *to = NULL;
    socklen_t to_len = 0;
    int *blocked;
    if (tu->udp_index >= 0) {
        fd = A.socks[udp_fw[tu->udp_index].sock].fd;
        to = (const struct sockaddr *)&tu->src;
        to_len = tu->src_len;
        blocked = &tu->udp_blocked;
    } else {
        fd = A.socks[tu->sock].fd;
        blocked = &A.socks[tu->sock].out_blocked;
    }
    *blocked = 0;
    for (round = 0; round < UDP_BURST; round++) {
        unsigned bits = alkt_dgram_pump_poll(&tu->dpump);
        const void *d;
        ptrdiff_t n;
        ssize_t w;
        if (bits & ALKT_PUMP_ABORT) {
            tunnel_end(t, 1, NULL);
            return 1;
        }
        if (bits & ALKT_PUMP_DONE) {
            tunnel_end(t, 0, NULL);
            return 1;
        }
        tu->want_read = (bits & ALKT_PUMP_READ) != 0;
        if (!(bits & ALKT_PUMP_WRITE) || (n = alkt_dgram_pump_recv(&tu->dpump, &d)) < 0)
            break;
        /* (an empty datagram is sent as one: sendto of 0 bytes) */
        w = to ? sendto(fd, d, (size_t)n, 0, to, to_len) : send(fd, d, (size_t)n, 0);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            *blocked = 1;
            break;
        }
        if (w < 0) {
            /* the endpoint may come back (a target not up yet answers
             * ICMP port unreachable): this datagram is lost, not the flow */
            tu->dropped++;
            if (A.opt.verbose) say("ch %u: send: %s [%s]", (unsigned)tu->channel,
                                   strerror(errno), tu->what);
        } else {
            tu->dgrams_out++;
            tu->bytes_out += (uint64_t)n;
            tu->last_active = now_ns();
        }
        (void)alkt_dgram_pump_delivered(&tu->dpump);
        moved = 1;
    }
    return moved;
}

/* Gateway: POLLIN on a flow's connected socket - datagrams into the pump
 * while it takes them. */
static void udp_target_read(int t)
{
    tunnel *tu = &A.tunnels[t];
    int k;
    for (k = 0; k < UDP_BURST && tu->state == T_PUMP && tu->want_read; k++) {
        ssize_t r = recv(A.socks[tu->sock].fd, A.io, UDP_MAX, 0);
        if (r < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
            /* ICMP for an earlier datagram (ECONNREFUSED: the target port
             * is closed): that one was lost */
            tu->dropped++;
            if (A.opt.verbose) say("ch %u: recv: %s [%s]", (unsigned)tu->channel,
                                   strerror(errno), tu->what);
            continue;
        }
        /* (r == 0 is an empty datagram, not an end) */
        if (udp_in(t, A.io, (size_t)r) == 0) {
            tu->dropped++;   /* READ said it would take one: not expected */
            return;
        }
        tu->want_read = (alkt_dgram_pump_poll(&tu->dpump) & ALKT_PUMP_READ) != 0;
    }
}

/* Client: the datagram waiting in -U k goes into its flow when that can
 * take it. 1 when it moved (or was dropped). */
static int udp_push(int k)
{
    udp_forward *u = &udp_fw[k];
    tunnel *tu;
    int r;
    if (!u->pending) return 0;
    tu = &A.tunnels[u->pending_flow];
    if (tu->state == T_WAIT && tu->retry_soon) {
        /* no room for the open (the resend log, the channel table): that
         * may last, and the other flows of this -U must not wait. (The
         * session being made is waited for: every flow of a -U goes to
         * the same gateway - nothing else could move.) */
        udp_drop_pending(u->pending_flow);
        return 1;
    }
    if (tu->state != T_PUMP) return 0;   /* the session or the open is on its way */
    r = udp_in(u->pending_flow, u->buf, u->pending_len);
    if (r == 0) return 0;
    u->pending = 0;
    return 1;
}

/* Client: a flow for this source on -U k - the one there is, or a new one
 * (*fresh: its open is to start): the tunnel, or -1 (no slot, the -U is
 * held, stopping). */
static int udp_flow(int k, const struct sockaddr_storage *src, socklen_t src_len,
                    int *fresh)
{
    const forward_spec *f = &A.opt.udp[k];
    char a[64], b[64];
    alkt_ip ip;
    uint16_t port;
    int t;
    *fresh = 0;
    for (t = 0; t < A.tunnel_high; t++) {
        const tunnel *tu = &A.tunnels[t];
        if (tu->state != T_FREE && tu->udp && tu->udp_index == k && !tu->udp_eof &&
            same_source(&tu->src, src))
            return t;
    }
    *fresh = 1;
    if (A.stopping || udp_fw[k].held || (t = tunnel_new(T_WAIT, -1)) < 0) return -1;
    A.tunnels[t].udp = 1;
    A.tunnels[t].udp_index = k;
    A.tunnels[t].src = *src;
    A.tunnels[t].src_len = src_len;
    A.tunnels[t].last_active = now_ns();
    read_sockaddr(src, &ip, &port);
    describe(t, "-U udp %s => %s", ip_port_text(&ip, port, a, sizeof a),
             ip_port_text(&f->host, f->host_port, b, sizeof b));
    return t;
}

static void client_try_open(int t);

/* Client: POLLIN on -U k's socket: each datagram to its source's flow,
 * until one has to wait. */
static void udp_listen_read(int k)
{
    udp_forward *u = &udp_fw[k];
    int n;
    for (n = 0; n < UDP_BURST && !u->pending && !A.stopping; n++) {
        struct sockaddr_storage src;
        socklen_t src_len = (socklen_t)sizeof src;
        ssize_t r = recvfrom(A.socks[u->sock].fd, u->buf, sizeof u->buf, 0,
                             (struct sockaddr *)&src, &src_len);
        int t, fresh;
        if (r < 0) return;   /* EAGAIN; an error of an unconnected socket is no flow's */
        t = udp_flow(k, &src, src_len, &fresh);
        if (t < 0) {
            if (u->turned_away++ == 0) {
                char a[64];
                alkt_ip ip;
                uint16_t port;
                read_sockaddr(&src, &ip, &port);
                say("-U %u: a datagram from %s turned away: %s (counted from now on, "
                    "logged at exit)", (unsigned)A.opt.udp[k].port,
                    ip_port_text(&ip, port, a, sizeof a),
                    u->held ? "refused by our own config" : A.stopping ? "stopping"
                                                                        : "no free slot");
            }
            continue;
        }
        u->pending = 1;
        u->pending_flow = t;
        u->pending_len = (size_t)r;
        A.tunnels[t].last_active = now_ns();
        if (fresh) client_try_open(t);   /* (a refusal ends it: the datagram is dropped) */
        (void)udp_push(k);
    }
}

/* Client: flows idle for --udp-idle end (a flow waiting for its session
 * too); the earliest next deadline, UINT64_MAX when none. */
static uint64_t udp_idle_check(uint64_t now)
{
    uint64_t idle = (uint64_t)A.opt.udp_idle_s * SEC, next = UINT64_MAX;
    int t;
    for (t = 0; t < A.tunnel_high; t++) {
        tunnel *tu = &A.tunnels[t];
        uint64_t due;
        if (!tu->udp || tu->udp_index < 0 || tu->udp_eof ||
            (tu->state != T_PUMP && tu->state != T_WAIT))
            continue;
        due = tu->last_active + idle;
        if (now < due) {
            if (due < next) next = due;
            continue;
        }
        if (A.opt.verbose) say("ch %u idle for %u s: ends [%s]", (unsigned)tu->channel,
                               A.opt.udp_idle_s, tu->what);
        if (tu->state == T_WAIT) tunnel_end(t, 0, "idle before its open went out");
        else udp_end_flow(t);
    }
    return next;
}

static int live_pumps(void)
{
    int t, n = 0;
    for (t = 0; t < A.tunnel_high; t++) n += A.tunnels[t].state == T_PUMP;
    return n;
}

/* ---- the client's opens ---- */
static void tunnel_params(const tunnel *tu, alkt_open_params *op)
{
    const forward_spec *f = tu->udp ? &A.opt.udp[tu->udp_index]
                            : tu->remote >= 0 ? &A.opt.remote[tu->remote]
                                              : &A.opt.local[tu->local];
    memset(op, 0, sizeof *op);
    op->substrate = tu->udp ? ALKT_SUBSTRATE_UDP : ALKT_SUBSTRATE_TCP;
    if (tu->remote >= 0 && !tu->udp) {
        op->kind = ALKT_OPEN_FORWARDED;
        op->listen = f->port;
        if (f->has_bind) {
            op->host.kind = ALKT_HOST_IP;
            op->host.ip = f->bind;
        }
    } else {
        op->kind = ALKT_OPEN_DIRECT;
        op->host.kind = ALKT_HOST_IP;
        op->host.ip = f->host;
        op->port = f->host_port;
    }
}

/* Client: the resource whose secret keys a new session with the gateway
 * of peer - the node takes the first open's, by the rule every open is
 * checked with (CLIENT AND GATEWAY in alktunnel.h), which
 * alkt_gateway_authorize applies to our own id: a client node has no
 * gateway id to filter resources by, so it asks over all of them. */
static void remember_key_resource(uint32_t peer, const alkt_open_params *op)
{
    size_t res = 0;
    if (peer == 0 || peer > GATEWAY_PEERS || A.key_resource[peer][0] || !A.view) return;
    if (alkt_gateway_authorize(A.node, A.opt.id, op, now_ns(), &res) == 0 &&
        res < A.view->ctl.resource_count)
        snprintf(A.key_resource[peer], sizeof A.key_resource[peer], "%s",
                 A.view->resources[res].id);
}

static void client_try_open(int t)
{
    tunnel *tu = &A.tunnels[t];
    alkt_open_params op;
    uint32_t peer = 0, channel = 0;
    int code = 0, rc;
    char buf[96];
    tunnel_params(tu, &op);
    rc = alkt_client_open(A.node, &op, now_ns(), &peer, &channel, &code);
    if (rc == ALKT_ERR_NOT_CONNECTED) remember_key_resource(peer, &op);
    if (rc == ALKT_OK) {
        tu->state = T_OPENING;
        tu->peer = peer;
        tu->channel = channel;
        if (A.opt.verbose) say("ch %u opening [%s]", (unsigned)channel, tu->what);
    } else if (rc == ALKT_ERR_NOT_CONNECTED) {
        if (A.opt.verbose && tu->state != T_WAIT)
            say("waiting for the gateway's session [%s]", tu->what);
        tu->state = T_WAIT;
        tu->retry_soon = 0;
        tu->peer = peer;
    } else if (rc == ALKT_ERR_WOULD_BLOCK || rc == ALKT_ERR_CHANNELS_FULL) {
        /* no room for the OPEN now (resend log full, or the peer's channel
         * limit): no event announces the room, so try after each input */
        if (A.opt.verbose && !tu->retry_soon)
            say("open waits: %s [%s]", alkt_strerror(rc), tu->what);
        tu->state = T_WAIT;
        tu->retry_soon = 1;
        tu->peer = peer;
    } else {
        int remote = tu->remote, udp = tu->udp ? tu->udp_index : -1;
        char why[256];
        snprintf(why, sizeof why, "open refused here: %s%s",
                 rc == ALKT_ERR_NO_CHANNEL ? code_text(code, buf, sizeof buf)
                                           : alkt_strerror(rc),
                 udp >= 0 && rc == ALKT_ERR_NO_CHANNEL
                     ? " (this -U drops every datagram until a reload)"
                 : remote >= 0 && code == (int)ALKT_CODE_UNAUTHORIZED
                     ? " (-R needs a live authorization for a resource whose CIDR covers the "
                       "bind address, 0.0.0.0 by default, and whose ports cover the port)"
                     : "");
        /* our own config said no: only a reload can change that, so a
         * flood of datagrams is not a flood of opens and log lines */
        if (udp >= 0 && rc == ALKT_ERR_NO_CHANNEL) udp_fw[udp].held = 1;
        tunnel_end(t, 0, why);
        if (remote >= 0) remote_idle(remote, rc == ALKT_ERR_NO_CHANNEL);
    }
}

static void client_open_remote(int r)
{
    char a[64], b[64];
    const forward_spec *f = &A.opt.remote[r];
    alkt_ip any;
    int t = tunnel_new(T_WAIT, -1);
    if (t < 0) {
        remote_idle(r, 0);
        return;
    }
    memset(&any, 0, sizeof any);
    any.family = 4;
    A.remote_tunnel[r] = t;
    A.remote_hold[r] = 0;
    A.tunnels[t].remote = r;
    snprintf(A.tunnels[t].what, sizeof A.tunnels[t].what, "-R gateway %s => %s",
             ip_port_text(f->has_bind ? &f->bind : &any, f->port, a, sizeof a),
             ip_port_text(&f->host, f->host_port, b, sizeof b));
    client_try_open(t);
}

/* ---- node events ---- */

/* Client: why a connection to the gateway of peer ended on our side (a
 * connect error, the far end's close), for the PATH_FAILED that follows. */
static void note_conn_error(uint32_t peer, const char *what, int err)
{
    if (A.is_gateway || peer == 0 || peer > GATEWAY_PEERS) return;
    if (err) snprintf(A.conn_error[peer], sizeof A.conn_error[peer], "%s: %s", what,
                      strerror(err));
    else snprintf(A.conn_error[peer], sizeof A.conn_error[peer], "%s", what);
}

static void node_connect(const alkt_role_event *ev)
{
    char a[64];
    int done, i, fd = connect_start(&ev->ip, ev->port, SOCK_STREAM, &done);
    ip_port_text(&ev->ip, ev->port, a, sizeof a);
    if (fd < 0 || (i = sock_add(fd, K_NODE)) < 0) {
        int err = fd < 0 ? errno : 0;   /* (before say: stdio may change errno) */
        if (A.opt.verbose) say("connect %s: %s", a, err ? strerror(err) : "no socket slot");
        note_conn_error(ev->peer, fd < 0 ? "connect" : "no socket slot", err);
        if (fd >= 0) close(fd);
        alkt_node_handle_closed(A.node, ev->conn, now_ns());
        return;
    }
    set_nodelay(fd);
    A.socks[i].handle = ev->conn;
    A.socks[i].peer = ev->peer;
    A.socks[i].connecting = !done;
    snprintf(A.socks[i].addr, sizeof A.socks[i].addr, "%s", a);
    if (A.opt.verbose) say("conn %08x: connecting to %s", (unsigned)ev->conn, a);
    if (done) (void)alkt_node_handle_connected(A.node, ev->conn, now_ns());
}

/* Gateway TARGET_CONNECT, client INCOMING: the answer once our connect to
 * the local side is through (or not). */
static void endpoint_answer(int t, int ok, int err)
{
    tunnel *tu = &A.tunnels[t];
    int rc;
    char buf[160];
    if (A.is_gateway)
        rc = alkt_gateway_target_result(A.node, tu->peer, tu->channel, ok,
                                        ok ? 0 : (uint16_t)ALKT_CODE_TARGET_REFUSED);
    else
        rc = alkt_client_answer(A.node, tu->peer, tu->channel, ok,
                                ok ? 0 : (uint16_t)ALKT_CODE_TARGET_REFUSED);
    if (!ok) {
        snprintf(buf, sizeof buf, "ch %u refused: connect: %s", (unsigned)tu->channel,
                 strerror(err));
        tunnel_end(t, 0, buf);
    } else if (rc != ALKT_OK) {
        snprintf(buf, sizeof buf, "ch %u: accept: %s", (unsigned)tu->channel,
                 alkt_strerror(rc));
        tunnel_end(t, 1, buf);
    } else {
        A.socks[tu->sock].connecting = 0;
        pump_start(t);
    }
}

/* The peer opened a channel to a local target: connect to it (udp: a
 * connected UDP socket, ready at once). */
static void endpoint_connect(const alkt_role_event *ev, const alkt_ip *ip, uint16_t port,
                             int udp, const char *what)
{
    int done = 0, i = -1, t, fd = -1;
    char name[ALKT_IDENTITY_MAX + 16];
    uint16_t code = (uint16_t)ALKT_CODE_TARGET_REFUSED;
    const char *why = NULL;
    if (A.stopping) {
        code = (uint16_t)ALKT_CODE_SHUTDOWN;
        why = "shutting down";
    } else if ((fd = connect_start(ip, port, udp ? SOCK_DGRAM : SOCK_STREAM, &done)) < 0) {
        why = strerror(errno);
    } else if ((i = sock_add(fd, K_ENDPOINT)) < 0 || (t = tunnel_new(T_CONNECTING, i)) < 0) {
        why = "no free socket or channel slot";
    } else {
        tunnel *tu = &A.tunnels[t];
        if (udp) {
            int size = UDP_SOCK_BUF;
            (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
            (void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
            tu->udp = 1;
        }
        tu->peer = ev->peer;
        tu->channel = ev->channel;
        tu->deadline = now_ns() + ENDPOINT_CONNECT_NS;
        snprintf(tu->what, sizeof tu->what, "%s", what);
        A.socks[i].connecting = 1;
        if (done) endpoint_answer(t, 1, 0);
        return;
    }
    if (i >= 0) sock_close(i, 0);
    else if (fd >= 0) close(fd);
    say("ch %u (%s) refused: %s [%s]", (unsigned)ev->channel,
        peer_name(ev->peer, name, sizeof name), why, what);
    if (A.is_gateway) (void)alkt_gateway_target_result(A.node, ev->peer, ev->channel, 0, code);
    else (void)alkt_client_answer(A.node, ev->peer, ev->channel, 0, code);
}

static void gateway_target(const alkt_role_event *ev)
{
    char what[160], a[64], name[ALKT_IDENTITY_MAX + 16];
    const alkt_open_params *p = &ev->params;
    int udp = p->substrate == ALKT_SUBSTRATE_UDP;
    if ((p->substrate != ALKT_SUBSTRATE_TCP && !udp) || p->host.kind != ALKT_HOST_IP) {
        say("ch %u (%s) refused: only TCP and UDP to an IP literal are served",
            (unsigned)ev->channel, peer_name(ev->peer, name, sizeof name));
        (void)alkt_gateway_target_result(A.node, ev->peer, ev->channel, 0,
                                         (uint16_t)ALKT_CODE_TARGET_REFUSED);
        return;
    }
    snprintf(what, sizeof what, "%s => target %s%s", peer_name(ev->peer, name, sizeof name),
             udp ? "udp " : "", ip_port_text(&p->host.ip, p->port, a, sizeof a));
    endpoint_connect(ev, &p->host.ip, p->port, udp, what);
}

static void gateway_listen(const alkt_role_event *ev)
{
    const alkt_open_params *p = &ev->params;
    char a[64], name[ALKT_IDENTITY_MAX + 16];
    alkt_listen_reply reply;
    alkt_ip bind_ip;
    int fd = -1, i = -1, t = -1, rc;
    const char *why = NULL;
    memset(&bind_ip, 0, sizeof bind_ip);
    bind_ip.family = 4;
    if (p->host.kind == ALKT_HOST_IP) bind_ip = p->host.ip;
    memset(&reply, 0, sizeof reply);
    peer_name(ev->peer, name, sizeof name);
    ip_port_text(&bind_ip, p->listen, a, sizeof a);
    if (A.stopping) why = "shutting down";
    else if (p->substrate != ALKT_SUBSTRATE_TCP) why = "only TCP listens are served";
    else if ((fd = listen_on(&bind_ip, p->listen, &reply.address, &reply.port)) < 0)
        why = strerror(errno);
    else if ((i = sock_add(fd, K_LISTEN_FWD)) < 0 || (t = tunnel_new(T_LISTEN, i)) < 0)
        why = "no free socket or channel slot";
    if (why) {
        if (i >= 0) sock_close(i, 0);
        else if (fd >= 0) close(fd);
        say("ch %u (%s) listen on %s refused: %s", (unsigned)ev->channel, name, a, why);
        (void)alkt_gateway_listen_result(A.node, ev->peer, ev->channel, NULL,
                                         A.stopping ? (uint16_t)ALKT_CODE_SHUTDOWN
                                                    : (uint16_t)ALKT_CODE_LISTEN_FAILED);
        return;
    }
    A.tunnels[t].peer = ev->peer;
    A.tunnels[t].channel = ev->channel;
    snprintf(A.tunnels[t].what, sizeof A.tunnels[t].what, "listen %s for %s",
             ip_port_text(&reply.address, reply.port, a, sizeof a), name);
    rc = alkt_gateway_listen_result(A.node, ev->peer, ev->channel, &reply, 0);
    if (rc != ALKT_OK) {
        tunnel_end(t, 0, alkt_strerror(rc));
        return;
    }
    say("ch %u (%s) listening on %s", (unsigned)ev->channel, name, a);
}

/* A connection on a forwarded listener: a channel back to the client. */
static void gateway_forward_accept(int t)
{
    tunnel *lt = &A.tunnels[t];
    alkt_ip origin;
    uint16_t oport;
    char a[64];
    int k;
    for (k = 0; k < 16 && lt->state == T_LISTEN; k++) {
        uint32_t channel = 0;
        int fd = accept_one(A.socks[lt->sock].fd, &origin, &oport), i, nt, rc;
        if (fd < 0) return;
        ip_port_text(&origin, oport, a, sizeof a);
        if ((i = sock_add(fd, K_ENDPOINT)) < 0 || (nt = tunnel_new(T_OPENING, i)) < 0) {
            if (i >= 0) sock_close(i, 1);
            else close(fd);
            say("%s: %s turned away: no free socket or channel slot", lt->what, a);
            continue;
        }
        rc = alkt_gateway_forward(A.node, lt->peer, lt->channel, &origin, &channel);
        A.tunnels[nt].peer = lt->peer;
        A.tunnels[nt].channel = channel;
        {
            char via[sizeof lt->what];
            memcpy(via, lt->what, sizeof via);
            describe(nt, "%s => %s", a, via);
        }
        if (rc != ALKT_OK) {
            char why[96];
            snprintf(why, sizeof why, "forward refused: %s", alkt_strerror(rc));
            tunnel_end(nt, 1, why);
        }
    }
}

static void client_incoming(const alkt_role_event *ev)
{
    char what[160], a[64], b[ALKT_IP_TEXT_MAX], name[ALKT_IDENTITY_MAX + 16];
    size_t r;
    for (r = 0; r < A.opt.remote_count; r++)
        if (A.opt.remote[r].port == ev->params.listen) break;
    if (ev->params.substrate != ALKT_SUBSTRATE_TCP) {   /* -R is TCP only */
        say("ch %u (%s) refused: a forwarded %s open (-R is TCP only)",
            (unsigned)ev->channel, peer_name(ev->peer, name, sizeof name),
            alkt_substrate_name(ev->params.substrate));
        (void)alkt_client_answer(A.node, ev->peer, ev->channel, 0,
                                 (uint16_t)ALKT_CODE_TARGET_REFUSED);
        return;
    }
    if (r == A.opt.remote_count) {
        say("ch %u (%s) refused: no -R for port %u", (unsigned)ev->channel,
            peer_name(ev->peer, name, sizeof name), (unsigned)ev->params.listen);
        (void)alkt_client_answer(A.node, ev->peer, ev->channel, 0,
                                 (uint16_t)ALKT_CODE_TARGET_REFUSED);
        return;
    }
    if (ev->params.host.kind == ALKT_HOST_IP) alkt_ip_format(&ev->params.host.ip, b);
    else snprintf(b, sizeof b, "?");
    snprintf(what, sizeof what, "-R %u from %s => %s", (unsigned)ev->params.listen, b,
             ip_port_text(&A.opt.remote[r].host, A.opt.remote[r].host_port, a, sizeof a));
    endpoint_connect(ev, &A.opt.remote[r].host, A.opt.remote[r].host_port, 0, what);
}

static void channel_event(const alkt_role_event *ev)
{
    int t = tunnel_find(ev->peer, ev->channel);
    tunnel *tu;
    char buf[96], a[64], name[ALKT_IDENTITY_MAX + 16];
    if (t < 0) return;
    tu = &A.tunnels[t];
    switch (ev->channel_event) {
    case ALKT_EV_OPENED:
        if (tu->state != T_OPENING) break;
        if (tu->sock >= 0 || tu->udp) {   /* (a -U flow shares its socket) */
            pump_start(t);
        } else {
            alkt_channel_info info;
            alkt_session *s = alkt_node_session(A.node, tu->peer);
            tu->state = T_LISTEN;
            if (s && alkt_channel_info_get(s, tu->channel, &info) == ALKT_OK &&
                info.reply.address.family)
                say("ch %u (%s) the gateway listens on %s [%s]", (unsigned)tu->channel,
                    peer_name(tu->peer, name, sizeof name),
                    ip_port_text(&info.reply.address, info.reply.port, a, sizeof a),
                    tu->what);
            else
                say("ch %u (%s) the gateway listens (no address given) [%s]",
                    (unsigned)tu->channel, peer_name(tu->peer, name, sizeof name), tu->what);
        }
        break;
    case ALKT_EV_OPEN_FAILED: {
        char why[128];
        snprintf(why, sizeof why, "ch %u refused by %s: %s", (unsigned)tu->channel,
                 peer_name(tu->peer, name, sizeof name), code_text(ev->code, buf, sizeof buf));
        tunnel_end(t, 0, why);
        break;
    }
    case ALKT_EV_RESET:
    case ALKT_EV_CHANNEL_DONE:
        if (ev->code && !tu->code) {
            tu->code = ev->code;
            tu->peer_reset = ev->channel_event == ALKT_EV_RESET;
        }
        if (tu->state == T_PUMP) break;   /* the pump ends it, with its counts */
        if (tu->state == T_LISTEN || tu->state == T_CONNECTING || tu->state == T_OPENING) {
            char why[128];
            snprintf(why, sizeof why, "ch %u ended: %s", (unsigned)tu->channel,
                     tu->code ? code_text(tu->code, buf, sizeof buf) : "done");
            tunnel_end(t, tu->state != T_LISTEN, why);
        }
        break;
    case ALKT_EV_READABLE:
        /* a UDP flow ends when either side ends it: the peer's EOF (its
         * idle timeout, its shutdown) ends ours too - the datagram pump
         * does not tell, the channel does */
        if (tu->udp && tu->state == T_PUMP && !tu->udp_eof) {
            alkt_channel_info info;
            alkt_session *s = alkt_node_session(A.node, tu->peer);
            if (s && alkt_channel_info_get(s, tu->channel, &info) == ALKT_OK && info.peer_eof) {
                if (A.opt.verbose) say("ch %u: the peer ended the flow [%s]",
                                       (unsigned)tu->channel, tu->what);
                udp_end_flow(t);
            }
        }
        break;
    default:
        break;   /* WRITABLE: the pumps are polled after events */
    }
}

/* Gateway: why a connection that never carried a session was closed -
 * the codes a stranger can cause; NULL for the others. */
static const char *turned_away_text(int code, int said)
{
    switch (code) {
    case ALKT_ERR_AUTH:
        return "its HELLO proves no secret we hold (an unknown client or resource, or a "
               "wrong MAC)";
    case ALKT_ERR_STALE_HELLO:
        return "its HELLO is no fresher than one accepted before (a replay, or the "
               "client's clock went back)";
    case ALKT_ERR_PROTOCOL: return "what it sent is not a HELLO";
    case ALKT_ERR_BUSY:
        return said ? "a proven client, told we have no free session slot"
                    : "room made for newer connections (an address keeps 4 unproven "
                      "ones, a full table loses its oldest)";
    case ALKT_ERR_HANDSHAKE_TIMEOUT: return "no whole HELLO in time";
    default: return NULL;
    }
}

/* The node is done with a connection: closed, and why in the log. On a
 * gateway, strangers cause most of these: their lines are rate-limited,
 * and a connection turned away in silence is reset (no TIME_WAIT kept for
 * it). A session's own end is told by its PEER_DOWN line. */
static void node_closed(const alkt_role_event *ev)
{
    int i = sock_by_handle(K_NODE, ev->conn);
    const sock *so = i >= 0 ? &A.socks[i] : NULL;
    const char *addr = so && so->addr[0] ? so->addr : "?";
    /* an accepted connection we said something on was proven: only its
     * REFUSE (BUSY) is a turning away; our offers always said their
     * request, so any of these codes is the relayed stranger's */
    const char *away = !so || !A.is_gateway ? NULL
                       : !so->accepted ? turned_away_text(ev->code, 0)
                       : !so->said || ev->code == ALKT_ERR_BUSY
                           ? turned_away_text(ev->code, so->said) : NULL;
    int abort_it = 0;
    char buf[96];
    if (!ev->code || ev->code == ALKT_ERR_GOAWAY || ev->code == ALKT_ERR_CLOSED) {
        /* (a session's end: its PEER_DOWN line says so) */
        if (A.opt.verbose)
            say("conn %08x: closed%s%s", (unsigned)ev->conn, ev->code ? ": " : "",
                ev->code ? alkt_strerror(ev->code) : "");
    } else if (away && so->accepted) {
        abort_it = !so->said;
        say_limited(LOG_TURNED_AWAY, "connection from %s turned away%s: %s", addr,
                    so->said ? "" : " without an answer", away);
    } else if (A.is_gateway && so && !so->accepted && ev->code == ALKT_ERR_HANDSHAKE_TIMEOUT) {
        /* a spare nobody joined for 4 refresh periods (replaced), or the
         * client joined to it sent no HELLO */
        if (A.opt.verbose)
            say("conn %08x: offer at relay %s ended: %s", (unsigned)ev->conn, addr,
                alkt_strerror(ev->code));
    } else if (A.is_gateway && so && !so->accepted &&
               (ev->code == ALKT_ERR_RELAY_REFUSED || ev->code == ALKT_ERR_NO_OFFER)) {
        say_limited(LOG_OFFER_FAILED, "offer at relay %s refused: %s (does the relay serve "
                    "the item's token, and hold --offer-key %s:... with the item's "
                    "offer_key?)", addr, code_text(ev->code, buf, sizeof buf), A.opt.id);
    } else if (away) {
        say_limited(LOG_TURNED_AWAY, "relayed connection via %s turned away: %s", addr, away);
    } else if (!A.is_gateway) {
        /* (an attempt that failed is told again by its PATH_FAILED) */
        say_limited(LOG_CONN_CLOSED, "conn %08x to %s: closed by the node: %s",
                    (unsigned)ev->conn, addr, code_text(ev->code, buf, sizeof buf));
    } else {
        say("conn %08x %s %s: closed by the node: %s", (unsigned)ev->conn,
            so && so->accepted ? "from" : "to", addr, code_text(ev->code, buf, sizeof buf));
    }
    if (i >= 0) sock_close(i, abort_it);
}

/* Client: why an attempt to reach a gateway failed, in the user's terms. */
static const char *path_failure_text(const alkt_role_event *ev, char *out, size_t cap)
{
    char buf[96];
    const char *res = ev->peer <= GATEWAY_PEERS ? A.key_resource[ev->peer] : "";
    const char *err = ev->peer <= GATEWAY_PEERS ? A.conn_error[ev->peer] : "";
    switch (ev->code) {
    case ALKT_ERR_UNANSWERED:
        /* (a gateway closes a connection it made room with in silence
         * too: the last reason, rare unless our address floods it) */
        if (res[0])
            snprintf(out, cap, "the gateway closed the connection at our HELLO (it does not "
                     "take our secret for resource %s, or our name %s/%s; or the HELLO "
                     "was stale - our clock behind an earlier run's; or connections from "
                     "our address crowded it out)", res, A.opt.id, res);
        else
            snprintf(out, cap, "the gateway closed the connection at our HELLO (it does not "
                     "take our secret or our name; or the HELLO was stale; or connections "
                     "from our address crowded it out)");
        break;
    case ALKT_ERR_BUSY:
        snprintf(out, cap, "gateway %s has no free session slot",
                 peer_name(ev->peer, buf, sizeof buf));
        break;
    case ALKT_ERR_NO_OFFER:
        snprintf(out, cap, "the relay had no spare connection from gateway %s (does the "
                 "gateway offer there - its relay item needs an offer_key the relay holds "
                 "with --offer-key?)", peer_name(ev->peer, buf, sizeof buf));
        break;
    case ALKT_ERR_RELAY_REFUSED:
        snprintf(out, cap, "the relay refused our request (it does not serve our relay "
                 "item's token?)");
        break;
    case ALKT_ERR_NOT_CONNECTED:
        snprintf(out, cap, "%s", err[0] ? err : "the connection ended before the handshake");
        break;
    case ALKT_ERR_HANDSHAKE_TIMEOUT:
        snprintf(out, cap, "no handshake within the attempt's time limit");
        break;
    default:
        snprintf(out, cap, "%s", code_text(ev->code, buf, sizeof buf));
        break;
    }
    if (ev->peer <= GATEWAY_PEERS) A.conn_error[ev->peer][0] = 0;
    return out;
}

/* Gateway: an open no authorization covers (or with no grant slot): who
 * asked for what. */
static void open_refused(const alkt_role_event *ev)
{
    const alkt_open_params *p = &ev->params;
    char name[ALKT_IDENTITY_MAX + 16], a[64], host[ALKT_HOST_MAX + 1];
    alkt_ip any;
    if (p->host.kind == ALKT_HOST_IP) alkt_ip_format(&p->host.ip, host);
    else snprintf(host, sizeof host, "%s", p->host.kind == ALKT_HOST_NAME ? p->host.name : "");
    if (p->kind == ALKT_OPEN_FORWARDED) {
        memset(&any, 0, sizeof any);
        any.family = 4;
        ip_port_text(p->host.kind == ALKT_HOST_IP ? &p->host.ip : &any, p->listen, a,
                     sizeof a);
    } else if (p->substrate == ALKT_SUBSTRATE_UNIX) {
        snprintf(a, sizeof a, "%.60s", p->path);
    } else {
        snprintf(a, sizeof a, p->host.kind == ALKT_HOST_IP && p->host.ip.family == 6
                 ? "[%.40s]:%u" : "%.40s:%u", host, (unsigned)p->port);
    }
    say_limited(LOG_OPEN_REFUSED, "ch %u open refused for client %s: %s %s %s: %s",
                (unsigned)ev->channel, peer_name(ev->peer, name, sizeof name),
                p->kind == ALKT_OPEN_FORWARDED ? "listen on" : "connect to",
                alkt_substrate_name(p->substrate) ? alkt_substrate_name(p->substrate) : "?", a,
                ev->code == (int)ALKT_CODE_UNAUTHORIZED
                    ? "no live authorization of the client covers it"
                    : "no free grant slot for the session (0xff03)");
}

static void node_event(const alkt_role_event *ev)
{
    char name[ALKT_IDENTITY_MAX + 16], buf[96], a[64];
    int t;
    switch (ev->type) {
    case ALKT_REV_CONNECT:
        node_connect(ev);
        break;
    case ALKT_REV_CLOSE:
        node_closed(ev);
        break;
    case ALKT_REV_OPEN_REFUSED:
        open_refused(ev);
        break;
    case ALKT_REV_PATH_FAILED: {
        char why[400];
        path_failure_text(ev, why, sizeof why);
        ip_port_text(&ev->ip, ev->port, a, sizeof a);
        if (ev->peer <= GATEWAY_PEERS) {
            /* kept per path (the oldest path's gives way): a -L reset
             * tells each one's */
            path_failure *f = A.failures[ev->peer], *slot = &f[0];
            int k;
            for (k = 0; k < PATHS_TOLD; k++)
                if (strcmp(f[k].via, a) == 0 || !f[k].via[0]) {
                    slot = &f[k];
                    break;
                }
            if (k == PATHS_TOLD) {
                memmove(&f[0], &f[1], (PATHS_TOLD - 1) * sizeof f[0]);
                slot = &f[PATHS_TOLD - 1];
            }
            snprintf(slot->via, sizeof slot->via, "%s", a);
            snprintf(slot->why, sizeof slot->why, "%s", why);
        }
        say_limited(LOG_PATH_FAILED, "path to %s via %s failed: %s",
                    peer_name(ev->peer, name, sizeof name), a, why);
        break;
    }
    case ALKT_REV_PEER_UP:
        peer_name(ev->peer, name, sizeof name);
        if (ev->peer <= GATEWAY_PEERS) {
            snprintf(A.peer_names[ev->peer], sizeof A.peer_names[ev->peer], "%s", name);
            memset(A.failures[ev->peer], 0, sizeof A.failures[ev->peer]);
        }
        say("session with %s %s", name, ev->code ? "resumed" : "established");
        if (!A.is_gateway) {
            size_t r;
            for (t = 0; t < A.tunnel_high; t++)
                if (A.tunnels[t].state == T_WAIT) client_try_open(t);
            if (!ev->code)   /* a new session: listens of an old one are gone */
                for (r = 0; r < A.opt.remote_count; r++)
                    if (A.remote_tunnel[r] < 0 && !A.remote_hold[r] && !A.stopping)
                        client_open_remote((int)r);
        }
        break;
    case ALKT_REV_PEER_DOWN:
        say("session with %s over: %s", peer_name(ev->peer, name, sizeof name),
            code_text(ev->code, buf, sizeof buf));
        /* the next open keys the next session (maybe another resource) */
        if (!A.is_gateway && ev->peer <= GATEWAY_PEERS) A.key_resource[ev->peer][0] = 0;
        /* its channels are gone, and the slot may serve a new session */
        snprintf(buf, sizeof buf, "the session is over");
        for (t = 0; t < A.tunnel_high; t++) {
            tunnel *tu = &A.tunnels[t];
            if (tu->state == T_FREE || tu->peer != ev->peer) continue;
            tunnel_end(t, 1, buf);
        }
        break;
    case ALKT_REV_CHANNEL:
        channel_event(ev);
        break;
    case ALKT_REV_TARGET_CONNECT:
        gateway_target(ev);
        break;
    case ALKT_REV_LISTEN:
        gateway_listen(ev);
        break;
    case ALKT_REV_INCOMING:
        client_incoming(ev);
        break;
    default:
        break;
    }
}

/* Everything due goes out on every node connection, until a socket is full. */
static void node_flush(void)
{
    int i;
    for (i = 0; i < A.sock_high; i++) {
        sock *so = &A.socks[i];
        const void *d;
        size_t n;
        if (so->fd < 0 || so->kind != K_NODE || so->connecting) continue;
        so->out_blocked = 0;
        while ((n = alkt_node_transmit_peek(A.node, so->handle, &d)) > 0) {
            ssize_t w = send(so->fd, d, n, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                    so->out_blocked = 1;
                    break;
                }
                {
                    int err = errno;
                    if (A.opt.verbose)
                        say("conn %08x: send: %s", (unsigned)so->handle, strerror(err));
                    note_conn_error(so->peer, "send", err);
                }
                alkt_node_handle_closed(A.node, so->handle, now_ns());
                sock_close(i, 0);
                break;
            }
            (void)alkt_node_transmit_done(A.node, so->handle, (size_t)w);
            if (w > 0) so->said = 1;
            if ((size_t)w < n) {
                so->out_blocked = 1;
                break;
            }
        }
    }
}

/* Events and pumps until neither moves, then the output. */
static void node_settle(void)
{
    int round, t;
    size_t k;
    for (round = 0; round < 64; round++) {
        alkt_role_event ev;
        int progress = 0;
        while (alkt_node_poll_event(A.node, &ev)) {
            node_event(&ev);
            progress = 1;
        }
        for (t = 0; t < A.tunnel_high; t++)
            if (A.tunnels[t].state == T_PUMP &&
                (A.tunnels[t].udp ? dgram_service(t) : pump_service(t)))
                progress = 1;
        for (k = 0; k < A.opt.udp_count; k++)
            if (udp_push((int)k)) progress = 1;
        node_flush();
        if (!progress) break;
    }
}

/* Gateway: relays of the view it makes no offers at - no client reaches
 * it through them. */
static void warn_relays_without_key(const control_store *cs)
{
    size_t k;
    if (!A.is_gateway) return;
    for (k = 0; k < cs->ctl.relay_count; k++)
        if (!cs->relays[k].offer_key_len)
            say("relay %s has no offer_key in %s: this gateway makes no offers there, so "
                "no client reaches it through that relay", cs->relays[k].id, A.opt.config);
}

static void node_reload(void)
{
    char msg[512];
    size_t k;
    int rc, t, revoked = 0;
    /* decoded beside the view in use: a bad file leaves that one whole */
    control_store *next = A.view == &config_store ? &reload_store : &config_store;
    if (load_control(A.opt.config, next, msg, sizeof msg) != 0) {
        say("reload refused, the old view stays: %s", msg);
        return;
    }
    rc = alkt_node_control(A.node, &next->ctl, now_ns());
    if (rc != ALKT_OK) {
        say("reload refused, the old view stays: %s: %s", A.opt.config, alkt_strerror(rc));
        return;
    }
    A.view = next;
    /* what the node reset just now (their DONE events come next) */
    for (t = 0; t < A.tunnel_high; t++) {
        const tunnel *tu = &A.tunnels[t];
        alkt_session *s = tu->state == T_FREE || tu->state == T_WAIT
                              ? NULL : alkt_node_session(A.node, tu->peer);
        alkt_channel_info info;
        if (s && alkt_channel_info_get(s, tu->channel, &info) == ALKT_OK && info.reset &&
            info.code == (int)ALKT_CODE_REVOKED)
            revoked++;
    }
    say("reloaded %s: %zu resource(s), %zu authorization(s), %zu revocation(s), %zu "
        "relay(s); %d channel(s) no longer authorized, reset as revoked", A.opt.config,
        next->ctl.resource_count, next->ctl.authorization_count,
        next->ctl.revocation_count, next->ctl.relay_count, revoked);
    warn_relays_without_key(next);
    for (k = 0; k < A.opt.remote_count; k++) A.remote_hold[k] = 0;
    for (k = 0; k < A.opt.udp_count; k++) udp_fw[k].held = 0;
}

static void begin_stop(uint64_t now)
{
    int i, t;
    A.stopping = 1;
    A.stop_deadline = now + STOP_GRACE_NS;
    say("stopping: channels end with EOF (at most %llu s)",
        (unsigned long long)(STOP_GRACE_NS / SEC));
    for (i = 0; i < A.sock_high; i++)
        if (A.socks[i].fd >= 0 && (A.socks[i].kind == K_LISTEN || A.socks[i].kind == K_LISTEN_L))
            sock_close(i, 0);
    for (t = 0; t < A.tunnel_high; t++) {
        tunnel *tu = &A.tunnels[t];
        alkt_session *s;
        switch (tu->state) {
        case T_PUMP:
            if (tu->udp) udp_end_flow(t);
            else (void)alkt_pump_endpoint_eof(&tu->pump);
            break;
        case T_OPENING:
            s = alkt_node_session(A.node, tu->peer);
            if (s) (void)alkt_channel_reset(s, tu->channel, (uint16_t)ALKT_CODE_SHUTDOWN);
            tunnel_end(t, 1, tu->udp ? "shutting down before its open was answered" : NULL);
            break;
        case T_WAIT:
            tunnel_end(t, 1, tu->udp ? "shutting down before its open went out" : NULL);
            break;
        default:
            break;   /* connects finish or time out; listens end with the session */
        }
    }
}

static void print_stats(uint64_t now)
{
    uint64_t from = A.done_from, to = A.done_to;
    double secs = (double)(now - A.stats_t) / 1e9;
    int t, live = 0;
    for (t = 0; t < A.tunnel_high; t++)
        if (A.tunnels[t].state == T_PUMP) {
            const tunnel *tu = &A.tunnels[t];
            from += tu->udp ? tu->bytes_in : tu->pump.from_endpoint;
            to += tu->udp ? tu->bytes_out : tu->pump.to_endpoint;
            live++;
        }
    if (secs <= 0) secs = 1e-9;
    say("stats: %d channels, local->tunnel %.2f MB/s, tunnel->local %.2f MB/s "
        "(totals %llu / %llu bytes)", live, (double)(from - A.stats_from) / secs / 1e6,
        (double)(to - A.stats_to) / secs / 1e6, (unsigned long long)from,
        (unsigned long long)to);
    A.stats_from = from;
    A.stats_to = to;
    A.stats_t = now;
}

static int node_setup(void)
{
    alkt_node_config cfg;
    unsigned char seed[32];
    struct timespec rt;
    uint64_t now, real;
    size_t need, k;
    void *mem;
    char msg[512];
    int rc;
    if (load_control(A.opt.config, &config_store, msg, sizeof msg) != 0) {
        fprintf(stderr, "alktunnel: %s\n", msg);
        return 2;
    }
    memset(&cfg, 0, sizeof cfg);
    random_bytes(seed, sizeof seed);
    cfg.id = A.opt.id;
    cfg.seed = seed;
    cfg.seed_len = sizeof seed;
    now = now_ns();
    clock_gettime(CLOCK_REALTIME, &rt);
    real = (uint64_t)rt.tv_sec * SEC + (uint64_t)rt.tv_nsec;
    cfg.epoch_ns = real > now ? real - now : 0;   /* epoch_ns + now = Unix time */
    cfg.session.channel_window = SESSION_WINDOW;
    cfg.session.log_size = SESSION_LOG;
    cfg.session.max_channels = SESSION_CHANNELS;
    cfg.session.plaintext = A.opt.plaintext;
    cfg.session.seal_batch = SESSION_SEAL_BATCH;
    cfg.max_peers = A.is_gateway ? GATEWAY_PEERS : (uint32_t)A.opt.gateway_count;
    cfg.max_resources = CONTROL_CAP;
    cfg.max_authorizations = CONTROL_CAP;
    cfg.max_relays = RELAYS_CAP;
    cfg.relay_first = A.opt.via_relay;
    need = alkt_node_mem_size(&cfg);
    if (need == 0) {
        fprintf(stderr, "alktunnel: the node configuration is invalid (--id?)\n");
        return 2;
    }
    A.node = (alkt_node *)malloc(sizeof *A.node);
    mem = A.role_mem = malloc(need);
    A.pump_mem = (unsigned char *)malloc((size_t)MAX_TUNNELS * TUNNEL_MEM);
    if (!A.node || !mem || !A.pump_mem) {
        fprintf(stderr, "alktunnel: out of memory (%zu bytes for the node)\n", need);
        return 1;
    }
    rc = A.is_gateway ? alkt_gateway_init(A.node, &cfg, mem, need, now)
                      : alkt_client_init(A.node, &cfg, mem, need, now);
    if (rc != ALKT_OK) {
        fprintf(stderr, "alktunnel: node init: %s\n", alkt_strerror(rc));
        return 2;
    }
    rc = alkt_node_control(A.node, &config_store.ctl, now);
    if (rc != ALKT_OK) {
        fprintf(stderr, "alktunnel: %s: %s\n", A.opt.config, alkt_strerror(rc));
        return 2;
    }
    A.view = &config_store;
    warn_relays_without_key(&config_store);
    for (k = 0; k < A.opt.gateway_count; k++) {
        const gateway_spec *g = &A.opt.gateways[k];
        rc = alkt_client_add_gateway(A.node, g->id, &g->ip, g->port);
        if (rc != ALKT_OK) {
            fprintf(stderr, "alktunnel: --gateway %s: %s\n", g->id, alkt_strerror(rc));
            return 2;
        }
    }
    return 0;
}

/* Client: when a -L connection waiting for its open gives up; 0: it
 * does not wait for a session (not an -L one, or its open is out while
 * the session is connected - an open sent into a session that is
 * resuming waits for a connection as much as one not sent yet). */
static uint64_t local_wait_deadline(const tunnel *tu)
{
    if (tu->local < 0 || tu->sock < 0) return 0;
    if (tu->state == T_OPENING) {
        if (alkt_session_is_established(alkt_node_session(A.node, tu->peer))) return 0;
    } else if (tu->state != T_WAIT) {
        return 0;
    }
    return tu->started + (uint64_t)A.opt.connect_timeout_s * SEC;
}

/* Client: a -L connection waited too long for its channel: it is reset
 * (the application sees the failure at once, not a hang), with why. */
static void local_wait_expired(int t)
{
    tunnel *tu = &A.tunnels[t];
    char name[ALKT_IDENTITY_MAX + 16], last[900];
    size_t len = 0;
    int k;
    last[0] = 0;
    for (k = 0; tu->peer <= GATEWAY_PEERS && k < PATHS_TOLD; k++) {
        const path_failure *f = &A.failures[tu->peer][k];
        int n;
        if (!f->via[0] || len >= sizeof last) continue;
        n = snprintf(last + len, sizeof last - len, "%s%s (via %s)", len ? "; " : "",
                     f->why, f->via);
        if (n > 0) len += (size_t)n;
    }
    peer_name(tu->peer, name, sizeof name);
    if (tu->state == T_OPENING) {   /* its open is queued: it goes too */
        alkt_session *s = alkt_node_session(A.node, tu->peer);
        if (s) (void)alkt_channel_reset(s, tu->channel, (uint16_t)ALKT_CODE_ENDPOINT_ERROR);
    }
    if (tu->retry_soon)
        say_limited(LOG_LOCAL_RESET, "%s: reset: no room for its open at gateway %s within "
                    "%u s (the session's resend log or channel table stays full)", tu->what,
                    name, A.opt.connect_timeout_s);
    else
        say_limited(LOG_LOCAL_RESET, "%s: reset: no session with gateway %s within %u s: %s",
                    tu->what, name, A.opt.connect_timeout_s,
                    last[0] ? last : "no attempt has ended yet (the one under way gets no "
                                     "answer)");
    tunnel_end(t, 1, NULL);
}

/* Gateway: connections on our --listen, each named by where it comes from
 * (a few unproven connections per address at most: the node's rule). */
static void gateway_accept(int lfd, uint64_t now)
{
    char a[64];
    int k;
    for (k = 0; k < 16; k++) {
        alkt_ip ip;
        uint16_t port;
        uint32_t h = 0;
        int fd = accept_one(lfd, &ip, &port), j = -1;
        if (fd < 0) break;
        set_nodelay(fd);
        ip_port_text(&ip, port, a, sizeof a);
        if (alkt_node_accept_from(A.node, now, &ip, &h) != ALKT_OK ||
            (j = sock_add(fd, K_NODE)) < 0) {
            say_limited(LOG_TURNED_AWAY, "connection from %s turned away: no free %s", a,
                        h ? "socket slot" : "connection slot (every one carries a session)");
            if (h) alkt_node_handle_closed(A.node, h, now);
            {   /* a reset, as for every connection turned away: no TIME_WAIT */
                struct linger lg;
                lg.l_onoff = 1;
                lg.l_linger = 0;
                (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
            }
            close(fd);
            continue;
        }
        A.socks[j].handle = h;
        A.socks[j].accepted = 1;
        snprintf(A.socks[j].addr, sizeof A.socks[j].addr, "%s", a);
        if (A.opt.verbose) say("conn %08x: accepted from %s", (unsigned)h, a);
    }
}

static int run_node(void)
{
    struct pollfd pfd[MAX_SOCKS];
    char a[64];
    int rc, i, t, first_port = -1, listener;
    size_t k;
    uint64_t now, udp_due = UINT64_MAX;
    if ((rc = node_setup()) != 0) return rc;
    for (k = 0; k < MAX_FORWARDS; k++) A.remote_tunnel[k] = -1;
    if (A.is_gateway) {
        uint16_t port;
        int fd = listen_on(&A.opt.listen_ip, A.opt.listen_port, NULL, &port);
        if (fd < 0) {
            say("listen %s: %s", ip_port_text(&A.opt.listen_ip, A.opt.listen_port, a, sizeof a),
                strerror(errno));
            return 1;
        }
        (void)sock_add(fd, K_LISTEN);
        first_port = port;
        say("gateway %s listening on %s", A.opt.id,
            ip_port_text(&A.opt.listen_ip, port, a, sizeof a));
    }
    for (k = 0; k < A.opt.local_count; k++) {
        forward_spec *f = &A.opt.local[k];
        alkt_ip lo;
        uint16_t port;
        int fd;
        memset(&lo, 0, sizeof lo);
        lo.family = 4;
        lo.bytes[0] = 127;
        lo.bytes[3] = 1;
        if (!f->has_bind) f->bind = lo;
        fd = listen_on(&f->bind, f->port, NULL, &port);
        if (fd < 0) {
            say("-L listen %s: %s", ip_port_text(&f->bind, f->port, a, sizeof a),
                strerror(errno));
            return 1;
        }
        f->port = port;
        i = sock_add(fd, K_LISTEN_L);
        A.socks[i].owner = (int)k;
        if (first_port < 0) first_port = port;
        {
            char b[64];
            say("-L %s => %s", ip_port_text(&f->bind, port, a, sizeof a),
                ip_port_text(&f->host, f->host_port, b, sizeof b));
        }
    }
    for (k = 0; k < A.opt.udp_count; k++) {
        forward_spec *f = &A.opt.udp[k];
        alkt_ip lo;
        uint16_t port;
        int fd;
        char b[64];
        memset(&lo, 0, sizeof lo);
        lo.family = 4;
        lo.bytes[0] = 127;
        lo.bytes[3] = 1;
        if (!f->has_bind) f->bind = lo;
        fd = udp_bind(&f->bind, f->port, &port);
        if (fd < 0 || (i = sock_add(fd, K_UDP_L)) < 0) {
            say("-U bind %s: %s", ip_port_text(&f->bind, f->port, a, sizeof a),
                fd < 0 ? strerror(errno) : "no socket slot");
            return 1;
        }
        f->port = port;
        A.socks[i].owner = (int)k;
        udp_fw[k].sock = i;
        if (first_port < 0) first_port = port;
        if (k == 0 && A.opt.udp_port_file &&
            write_port_file(A.opt.udp_port_file, (unsigned)port) != 0)
            return 1;
        say("-U udp %s => %s", ip_port_text(&f->bind, port, a, sizeof a),
            ip_port_text(&f->host, f->host_port, b, sizeof b));
    }
    if (A.opt.port_file && first_port >= 0 &&
        write_port_file(A.opt.port_file, (unsigned)first_port) != 0)
        return 1;
    for (k = 0; k < A.opt.remote_count; k++) client_open_remote((int)k);
    A.stats_t = now_ns();
    A.stats_at = A.stats_t + (uint64_t)A.opt.stats_s * SEC;
    for (;;) {
        uint64_t due;
        int ms = POLL_MAX_MS, n, polled;
        now = now_ns();
        if (got_stop && !A.stopping) begin_stop(now);
        if (got_hup) {
            got_hup = 0;
            node_reload();
        }
        if (A.stopping && (live_pumps() == 0 || now >= A.stop_deadline)) break;
        if (alkt_node_poll_timeout(A.node) <= now) alkt_node_handle_timeout(A.node, now);
        for (t = 0; t < A.tunnel_high; t++) {
            uint64_t wait_due = local_wait_deadline(&A.tunnels[t]);
            if (A.tunnels[t].state == T_CONNECTING && now >= A.tunnels[t].deadline)
                endpoint_answer(t, 0, ETIMEDOUT);
            else if (wait_due && now >= wait_due)
                local_wait_expired(t);
        }
        log_tick(now);
        for (k = 0; k < A.opt.remote_count; k++)
            if (A.remote_tunnel[k] < 0 && !A.remote_hold[k] && !A.stopping &&
                now >= A.remote_retry_at[k])
                client_open_remote((int)k);
        for (t = 0; t < A.tunnel_high; t++)
            if (A.tunnels[t].state == T_WAIT && A.tunnels[t].retry_soon) client_try_open(t);
        udp_due = A.opt.udp_count ? udp_idle_check(now) : UINT64_MAX;
        node_settle();
        if (A.stopping && live_pumps() == 0) break;
        if (A.opt.stats_s && now >= A.stats_at) {
            print_stats(now);
            A.stats_at = now + (uint64_t)A.opt.stats_s * SEC;
        }
        /* what to wait for */
        for (i = 0; i < A.sock_high; i++) {
            const sock *so = &A.socks[i];
            short ev = 0;
            if (so->fd >= 0) switch (so->kind) {
            case K_LISTEN:
            case K_LISTEN_L:
            case K_LISTEN_FWD:
            case K_WAKE:
                ev = POLLIN;
                break;
            case K_NODE:
                ev = so->connecting ? POLLOUT : (short)(POLLIN | (so->out_blocked ? POLLOUT : 0));
                break;
            case K_ENDPOINT:
                t = so->owner;
                if (A.tunnels[t].state == T_CONNECTING) ev = POLLOUT;
                else if (A.tunnels[t].state == T_PUMP)
                    ev = (short)((A.tunnels[t].want_read ? POLLIN : 0) |
                                 (so->out_blocked ? POLLOUT : 0));
                break;   /* waiting for the open: not read yet */
            case K_UDP_L:
                /* a datagram waiting for its flow: the kernel queues the rest */
                ev = udp_fw[so->owner].pending || A.stopping ? 0 : POLLIN;
                for (t = 0; t < A.tunnel_high; t++)
                    if (A.tunnels[t].state == T_PUMP && A.tunnels[t].udp &&
                        A.tunnels[t].udp_index == so->owner && A.tunnels[t].udp_blocked)
                        ev = (short)(ev | POLLOUT);
                break;
            default:
                break;
            }
            pfd[i].fd = ev ? so->fd : -1;
            pfd[i].events = ev;
            pfd[i].revents = 0;
        }
        now = now_ns();
        due = alkt_node_poll_timeout(A.node);
        if (due <= now) {
            /* output queued on a full socket keeps the deadline at now:
             * after a pass that did everything it could, wait a little */
            ms = A.spins++ < 2 ? 0 : 1;
        } else {
            A.spins = 0;
            ms = ms_until(now, due, ms);
        }
        if (A.opt.stats_s) ms = ms_until(now, A.stats_at, ms);
        if (A.stopping) ms = ms_until(now, A.stop_deadline, ms);
        for (t = 0; t < A.tunnel_high; t++) {
            uint64_t wait_due = local_wait_deadline(&A.tunnels[t]);
            if (A.tunnels[t].state == T_CONNECTING) ms = ms_until(now, A.tunnels[t].deadline, ms);
            if (wait_due) ms = ms_until(now, wait_due, ms);
        }
        for (k = 0; k < A.opt.remote_count; k++)
            if (A.remote_tunnel[k] < 0 && !A.remote_hold[k] && !A.stopping)
                ms = ms_until(now, A.remote_retry_at[k], ms);
        ms = ms_until(now, udp_due, ms);
        polled = A.sock_high;   /* (accepts below may add slots) */
        n = poll(pfd, (nfds_t)polled, ms);
        if (n < 0 && errno != EINTR) {
            say("poll: %s", strerror(errno));
            return 1;
        }
        if (n <= 0) continue;
        now = now_ns();
        listener = -1;
        for (i = 0; i < polled; i++) {
            sock *so = &A.socks[i];
            short re = pfd[i].revents;
            if (!re || so->fd < 0 || pfd[i].fd != so->fd) continue;
            switch (so->kind) {
            case K_LISTEN:
                /* after the reads: a HELLO that came is taken before new
                 * connections from its address can push it out */
                listener = i;
                break;
            case K_LISTEN_L: {
                int kk;
                for (kk = 0; kk < 16; kk++) {
                    alkt_ip ip;
                    uint16_t port;
                    char b[64];
                    const forward_spec *f = &A.opt.local[so->owner];
                    int fd = accept_one(so->fd, &ip, &port), j;
                    if (fd < 0) break;
                    if ((j = sock_add(fd, K_ENDPOINT)) < 0 || (t = tunnel_new(T_WAIT, j)) < 0) {
                        say("-L connection from %s turned away: no free slot",
                            ip_port_text(&ip, port, a, sizeof a));
                        if (j >= 0) sock_close(j, 1);
                        else close(fd);
                        continue;
                    }
                    A.tunnels[t].local = so->owner;
                    snprintf(A.tunnels[t].what, sizeof A.tunnels[t].what, "-L %s => %s",
                             ip_port_text(&ip, port, a, sizeof a),
                             ip_port_text(&f->host, f->host_port, b, sizeof b));
                    client_try_open(t);
                }
                break;
            }
            case K_LISTEN_FWD:
                gateway_forward_accept(so->owner);
                break;
            case K_UDP_L:
                if (re & (POLLIN | POLLERR)) udp_listen_read(so->owner);
                break;   /* POLLOUT: the flows' service at the top */
            case K_WAKE:
                wake_drain(so->fd);
                break;
            case K_NODE:
                if (so->connecting) {
                    int err = connect_result(so->fd);
                    if (err) {
                        if (A.opt.verbose)
                            say("conn %08x: connect %s: %s", (unsigned)so->handle, so->addr,
                                strerror(err));
                        note_conn_error(so->peer, "connect", err);
                        alkt_node_handle_closed(A.node, so->handle, now);
                        sock_close(i, 0);
                    } else {
                        so->connecting = 0;
                        (void)alkt_node_handle_connected(A.node, so->handle, now);
                    }
                } else if (re & (POLLIN | POLLHUP | POLLERR)) {
                    ssize_t r = recv(so->fd, A.io, IO_BUF, 0);
                    if (r > 0) {
                        (void)alkt_node_handle_input(A.node, so->handle, A.io, (size_t)r, now);
                    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
                                          errno != EINTR)) {
                        int err = r == 0 ? 0 : errno;
                        if (A.opt.verbose)
                            say("conn %08x: %s", (unsigned)so->handle,
                                r == 0 ? "the far end closed" : strerror(err));
                        note_conn_error(so->peer, r == 0 ? "the far end closed the connection"
                                                         : "recv", err);
                        alkt_node_handle_closed(A.node, so->handle, now);
                        sock_close(i, 0);
                    }
                }
                break;   /* POLLOUT: node_flush at the top */
            case K_ENDPOINT:
                t = so->owner;
                if (A.tunnels[t].state == T_CONNECTING) {
                    int err = connect_result(so->fd);
                    endpoint_answer(t, err == 0, err);
                } else if (A.tunnels[t].state == T_PUMP && A.tunnels[t].udp) {
                    if (A.tunnels[t].want_read && (re & (POLLIN | POLLERR))) {
                        udp_target_read(t);
                    } else if (re & POLLERR) {
                        /* ICMP for a datagram sent: lost; the flow goes on */
                        A.tunnels[t].dropped++;
                        (void)connect_result(so->fd);   /* (reading clears it) */
                    }
                } else if (A.tunnels[t].state == T_PUMP) {
                    if (A.tunnels[t].want_read && (re & (POLLIN | POLLHUP | POLLERR))) {
                        pump_read(t);
                    } else if (re & POLLERR) {
                        A.tunnels[t].endpoint_errno = connect_result(so->fd);
                        (void)alkt_pump_endpoint_failed(&A.tunnels[t].pump,
                                                        (uint16_t)ALKT_CODE_ENDPOINT_ERROR);
                    }
                }
                break;
            default:
                break;
            }
        }
        if (listener >= 0 && A.socks[listener].fd >= 0 && A.socks[listener].kind == K_LISTEN)
            gateway_accept(A.socks[listener].fd, now);
    }
    /* the end: GOAWAY on every session, sent as far as the sockets take it */
    {
        uint32_t p;
        int closed = 0;
        for (p = 1; p <= (A.is_gateway ? GATEWAY_PEERS : (uint32_t)A.opt.gateway_count); p++) {
            alkt_session *s = alkt_node_session(A.node, p);
            if (s && alkt_session_close(s, (uint16_t)ALKT_CODE_SHUTDOWN) == ALKT_OK) closed++;
        }
        node_flush();
        for (t = 0; t < A.tunnel_high; t++)
            if (A.tunnels[t].state != T_FREE)
                tunnel_end(t, 1, A.tunnels[t].state == T_PUMP ? "cut at the stop deadline"
                                                              : NULL);
        for (i = 0; i < A.sock_high; i++) sock_close(i, 0);
        for (k = 0; k < A.opt.udp_count; k++)
            if (udp_fw[k].turned_away)
                say("-U %u: %llu datagram(s) turned away without a flow",
                    (unsigned)A.opt.udp[k].port, (unsigned long long)udp_fw[k].turned_away);
        log_tick(UINT64_MAX);
        say("stopped (%d session(s) closed)", closed);
        /* keys and buffers do not outlive their use (core dumps, swap) */
        alkt_node_wipe(A.node);
        memset(&config_store, 0, sizeof config_store);
        memset(&reload_store, 0, sizeof reload_store);
        free(A.role_mem);
        free(A.node);
        A.node = NULL;
    }
    return 0;
}

/* ---- relay ---- */
static void relay_drop(int i, const char *why)
{
    sock *so = &A.socks[i];
    if (A.opt.verbose) say("conn %08x (%s): %s", (unsigned)so->handle, so->addr, why);
    alkt_relay_handle_closed(&A.relay, so->handle, now_ns());
    sock_close(i, 0);
}

/* A relay request's kind and gateway id, from its first bytes (as far as
 * they came), for the log: "offer for gateway gw1", "client for gateway
 * gw1", or "request". */
static const char *relay_request_text(const sock *so, char *out, size_t cap)
{
    const unsigned char *q = so->req;
    size_t tl = so->req_len > 6 ? q[6] : 0, il, k;
    char id[ALKT_ID_MAX + 1];
    const char *kind = so->req_len > 5 && memcmp(q, "ALKR", 4) == 0
                           ? q[5] == 2 ? "offer" : q[5] == 1 ? "client request" : "request"
                           : "request";
    if (so->req_len < 8 + tl || strcmp(kind, "request") == 0) {
        snprintf(out, cap, "%s", kind);
        return out;
    }
    il = q[7 + tl];
    if (il > ALKT_ID_MAX || so->req_len < 8 + tl + il) il = 0;
    for (k = 0; k < il; k++)   /* (printable only: it is the sender's text) */
        id[k] = q[8 + tl + k] > 0x20 && q[8 + tl + k] < 0x7f ? (char)q[8 + tl + k] : '?';
    id[il] = 0;
    snprintf(out, cap, il ? "%s for gateway %s" : "%s", kind, id);
    return out;
}

/* The relay closed connection i: a refused request (a stranger can make
 * as many as it likes: rate-limited) or the end of a pair or offer. */
static void relay_closed(int i, int code)
{
    static const char *const status_text[] = {
        "joined", "malformed request", "unknown token",
        "no offer came from that gateway in time (is it offering here, with the key "
        "this relay holds for it?)",
        "the offer expired or made room for a fresher one",
        "offer not proven (no --offer-key for that gateway here, a wrong key, or a "
        "replayed offer)"};
    sock *so = &A.socks[i];
    char what[96];
    relay_request_text(so, what, sizeof what);
    if (!so->status_seen && code > 0) {   /* refused, the status never sent */
        so->status_seen = 1;
        so->status = (unsigned char)code;
    }
    if (!so->status_seen) {
        say_limited(LOG_RELAY_REFUSED, "%s from %s ended: %s", what, so->addr,
                    so->req_len ? "no whole request in time" : "nothing came in time");
    } else if (so->status == 0 || so->status == 4) {
        if (A.opt.verbose)
            say("conn %08x (%s, %s): closed%s", (unsigned)so->handle, so->addr, what,
                so->status ? ": the offer expired" : "");
    } else {
        say_limited(LOG_RELAY_REFUSED, "%s from %s refused: %s", what, so->addr,
                    so->status < sizeof status_text / sizeof status_text[0]
                        ? status_text[so->status] : "status unknown");
    }
    sock_close(i, 0);
}

/* Events, held input and output until nothing moves. */
static void relay_settle(void)
{
    int round, i;
    for (round = 0; round < 64; round++) {
        alkt_role_event ev;
        int progress = 0;
        while (alkt_relay_poll_event(&A.relay, &ev)) {
            int a = sock_by_handle(K_RELAY, ev.conn), b;
            progress = 1;
            if (ev.type == ALKT_REV_SPLICED) {
                b = sock_by_handle(K_RELAY, ev.conn2);
                say("spliced client %s with gateway offer %s",
                    a >= 0 ? A.socks[a].addr : "?", b >= 0 ? A.socks[b].addr : "?");
            } else if (ev.type == ALKT_REV_CLOSE && a >= 0) {
                relay_closed(a, ev.code);   /* (code: the refusal's status) */
            }
        }
        for (i = 0; i < A.sock_high; i++) {
            sock *so = &A.socks[i];
            if (so->fd >= 0 && so->kind == K_RELAY && so->held_len) {
                ptrdiff_t used = alkt_relay_handle_input(&A.relay, so->handle,
                                                         so->held + so->held_off,
                                                         so->held_len, now_ns());
                if (used < 0) {
                    relay_drop(i, alkt_strerror((int)used));
                    continue;
                }
                if (used > 0) {
                    so->held_off += (size_t)used;
                    so->held_len -= (size_t)used;
                    progress = 1;
                }
            }
        }
        for (i = 0; i < A.sock_high; i++) {
            sock *so = &A.socks[i];
            const void *d;
            size_t n;
            if (so->fd < 0 || so->kind != K_RELAY) continue;
            so->out_blocked = 0;
            while ((n = alkt_relay_transmit_peek(&A.relay, so->handle, &d)) > 0) {
                ssize_t w = send(so->fd, d, n, MSG_NOSIGNAL);
                if (w < 0) {
                    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                        so->out_blocked = 1;
                    } else {
                        relay_drop(i, strerror(errno));
                        progress = 1;
                    }
                    break;
                }
                (void)alkt_relay_transmit_done(&A.relay, so->handle, (size_t)w);
                if (w > 0 && !so->status_seen) {
                    so->status_seen = 1;
                    so->status = *(const unsigned char *)d;
                }
                progress = 1;
                if ((size_t)w < n) {
                    so->out_blocked = 1;
                    break;
                }
            }
        }
        if (!progress) break;
    }
}

static int run_relay(void)
{
    static const char *tokens[RELAYS_CAP + MAX_TOKENS];
    static alkt_relay_gateway gateways[MAX_OFFER_KEYS];
    struct pollfd pfd[MAX_SOCKS];
    alkt_relay_config cfg;
    size_t need, count = 0, k;
    void *mem;
    char a[64];
    uint16_t port;
    int fd, i;
    if (A.opt.config) {
        char msg[512];
        if (load_control(A.opt.config, &config_store, msg, sizeof msg) != 0) {
            fprintf(stderr, "alktunnel: %s\n", msg);
            return 2;
        }
        for (k = 0; k < config_store.ctl.relay_count; k++)
            tokens[count++] = config_store.relays[k].token;
        if (count == 0) {
            fprintf(stderr, "alktunnel: %s: no relays entry: no token to serve\n", A.opt.config);
            return 2;
        }
    }
    for (k = 0; k < A.opt.token_count; k++) tokens[count++] = A.opt.tokens[k];
    for (k = 0; k < A.opt.offer_key_count; k++) {
        gateways[k].id = A.opt.offer_keys[k].id;
        gateways[k].key = A.opt.offer_keys[k].key;
        gateways[k].key_len = A.opt.offer_keys[k].key_len;
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.tokens = tokens;
    cfg.token_count = count;
    cfg.max_conns = RELAY_CONNS;
    cfg.buffer_size = RELAY_BUF;
    cfg.gateways = gateways;
    cfg.gateway_count = A.opt.offer_key_count;
    need = alkt_relay_mem_size(&cfg);
    if (need == 0) {
        fprintf(stderr, "alktunnel: a token is invalid (1..%d bytes of 0x21..0x7e)\n",
                ALKT_TOKEN_MAX);
        return 2;
    }
    mem = A.role_mem = malloc(need);
    if (!mem || alkt_relay_init(&A.relay, &cfg, mem, need, now_ns()) != ALKT_OK) {
        fprintf(stderr, "alktunnel: relay init failed (%zu bytes)\n", need);
        return 1;
    }
    fd = listen_on(&A.opt.listen_ip, A.opt.listen_port, NULL, &port);
    if (fd < 0) {
        say("listen %s: %s", ip_port_text(&A.opt.listen_ip, A.opt.listen_port, a, sizeof a),
            strerror(errno));
        return 1;
    }
    (void)sock_add(fd, K_LISTEN);
    say("relay listening on %s, %zu token(s), offers from %zu gateway(s)%s",
        ip_port_text(&A.opt.listen_ip, port, a, sizeof a), count, A.opt.offer_key_count,
        A.opt.offer_key_count ? "" : " - no --offer-key: no gateway can offer here, so no "
                                     "client is ever joined");
    if (A.opt.port_file && write_port_file(A.opt.port_file, port) != 0) return 1;
    A.stats_t = now_ns();
    A.stats_at = A.stats_t + (uint64_t)A.opt.stats_s * SEC;
    while (!got_stop) {
        uint64_t now = now_ns(), due;
        int ms = POLL_MAX_MS, n, polled;
        if (alkt_relay_poll_timeout(&A.relay) <= now) alkt_relay_handle_timeout(&A.relay, now);
        relay_settle();
        log_tick(now);
        if (A.opt.stats_s && now >= A.stats_at) {
            alkt_relay_stats st;
            double secs = (double)(now - A.stats_t) / 1e9;
            alkt_relay_stats_get(&A.relay, &st);
            say("stats: %u conns, %u offers, %u waiting, %u pairs; %.2f MB/s; spliced %llu, "
                "refused %llu, expired %llu", (unsigned)st.conns, (unsigned)st.offers,
                (unsigned)st.waiting, (unsigned)st.pairs,
                (double)(st.bytes - A.stats_from) / (secs > 0 ? secs : 1e-9) / 1e6,
                (unsigned long long)st.spliced, (unsigned long long)st.refused,
                (unsigned long long)st.expired);
            A.stats_from = st.bytes;
            A.stats_t = now;
            A.stats_at = now + (uint64_t)A.opt.stats_s * SEC;
        }
        for (i = 0; i < A.sock_high; i++) {
            const sock *so = &A.socks[i];
            short ev = 0;
            if (so->fd >= 0 && (so->kind == K_LISTEN || so->kind == K_WAKE)) ev = POLLIN;
            /* input the relay did not take yet waits: no more reading */
            if (so->fd >= 0 && so->kind == K_RELAY)
                ev = (short)((so->held_len ? 0 : POLLIN) | (so->out_blocked ? POLLOUT : 0));
            pfd[i].fd = ev ? so->fd : -1;
            pfd[i].events = ev;
            pfd[i].revents = 0;
        }
        now = now_ns();
        due = alkt_relay_poll_timeout(&A.relay);
        if (due <= now) {
            ms = A.spins++ < 2 ? 0 : 1;   /* output waiting on a full socket */
        } else {
            A.spins = 0;
            ms = ms_until(now, due, ms);
        }
        if (A.opt.stats_s) ms = ms_until(now, A.stats_at, ms);
        polled = A.sock_high;   /* (accepts below may add slots) */
        n = poll(pfd, (nfds_t)polled, ms);
        if (n < 0 && errno != EINTR) {
            say("poll: %s", strerror(errno));
            return 1;
        }
        if (n <= 0) continue;
        now = now_ns();
        for (i = 0; i < polled; i++) {
            sock *so = &A.socks[i];
            if (!pfd[i].revents || so->fd < 0 || pfd[i].fd != so->fd) continue;
            if (so->kind == K_WAKE) {
                wake_drain(so->fd);
            } else if (so->kind == K_LISTEN) {
                int kk;
                for (kk = 0; kk < 16; kk++) {
                    alkt_ip ip;
                    uint16_t p;
                    uint32_t h = 0;
                    int nfd = accept_one(so->fd, &ip, &p), j;
                    if (nfd < 0) break;
                    set_nodelay(nfd);
                    if (alkt_relay_accept(&A.relay, now, &h) != ALKT_OK ||
                        (j = sock_add(nfd, K_RELAY)) < 0) {
                        say_limited(LOG_RELAY_REFUSED, "connection from %s turned away: no "
                                    "free slot", ip_port_text(&ip, p, a, sizeof a));
                        if (h) alkt_relay_handle_closed(&A.relay, h, now);
                        close(nfd);
                        continue;
                    }
                    A.socks[j].handle = h;
                    A.socks[j].accepted = 1;
                    ip_port_text(&ip, p, A.socks[j].addr, sizeof A.socks[j].addr);
                    if (A.opt.verbose)
                        say("conn %08x: accepted from %s", (unsigned)h, A.socks[j].addr);
                }
            } else if (so->kind == K_RELAY && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) &&
                       so->held_len == 0) {
                void *buf;
                size_t room = alkt_relay_read_buffer(&A.relay, so->handle, &buf);
                ssize_t r;
                if (room) {
                    /* joined: straight into the partner's buffer */
                    r = recv(so->fd, buf, room, 0);
                    if (r > 0)
                        (void)alkt_relay_handle_read(&A.relay, so->handle, (size_t)r, now);
                } else {
                    /* the request, or refreshes: a little at a time */
                    r = recv(so->fd, so->held, sizeof so->held, 0);
                    if (r > 0 && !so->status_seen && so->req_len < sizeof so->req) {
                        size_t keep = sizeof so->req - so->req_len;
                        if (keep > (size_t)r) keep = (size_t)r;
                        memcpy(so->req + so->req_len, so->held, keep);
                        so->req_len += keep;
                    }
                    if (r > 0) {
                        ptrdiff_t used = alkt_relay_handle_input(&A.relay, so->handle,
                                                                 so->held, (size_t)r, now);
                        if (used < 0) {
                            relay_drop(i, alkt_strerror((int)used));
                            continue;
                        }
                        so->held_off = (size_t)used;
                        so->held_len = (size_t)r - (size_t)used;
                    }
                }
                if (r == 0) relay_drop(i, "the far end closed");
                else if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                    relay_drop(i, strerror(errno));
            }
        }
    }
    log_tick(UINT64_MAX);
    say("stopped");
    alkt_relay_wipe(&A.relay);   /* (its keys are ours: wiped next) */
    memset(A.opt.offer_keys, 0, sizeof A.opt.offer_keys);
    free(A.role_mem);
    return 0;
}

/* ---- echo ---- */
static int run_echo(void)
{
    struct pollfd pfd[MAX_SOCKS];
    char a[64];
    uint16_t port;
    int fd = listen_on(&A.opt.listen_ip, A.opt.listen_port, NULL, &port), i;
    if (fd < 0) {
        say("listen %s: %s", ip_port_text(&A.opt.listen_ip, A.opt.listen_port, a, sizeof a),
            strerror(errno));
        return 1;
    }
    (void)sock_add(fd, K_LISTEN);
    say("echo listening on %s", ip_port_text(&A.opt.listen_ip, port, a, sizeof a));
    if (A.opt.port_file && write_port_file(A.opt.port_file, port) != 0) return 1;
    while (!got_stop) {
        int n, polled;
        for (i = 0; i < A.sock_high; i++) {
            const sock *so = &A.socks[i];
            short ev = 0;
            if (so->fd >= 0 && (so->kind == K_LISTEN || so->kind == K_WAKE)) ev = POLLIN;
            if (so->fd >= 0 && so->kind == K_ECHO)
                ev = (short)((!so->echo_eof && so->echo_len < ECHO_BUF ? POLLIN : 0) |
                             (so->echo_len ? POLLOUT : 0));
            pfd[i].fd = ev ? so->fd : -1;
            pfd[i].events = ev;
            pfd[i].revents = 0;
        }
        polled = A.sock_high;   /* (accepts below may add slots) */
        n = poll(pfd, (nfds_t)polled, POLL_MAX_MS);
        if (n < 0 && errno != EINTR) {
            say("poll: %s", strerror(errno));
            return 1;
        }
        for (i = 0; n > 0 && i < polled; i++) {
            sock *so = &A.socks[i];
            short re = pfd[i].revents;
            if (!re || so->fd < 0 || pfd[i].fd != so->fd) continue;
            if (so->kind == K_WAKE) {
                wake_drain(so->fd);
                continue;
            }
            if (so->kind == K_LISTEN) {
                alkt_ip ip;
                uint16_t p;
                int nfd, j;
                while ((nfd = accept_one(so->fd, &ip, &p)) >= 0) {
                    unsigned char *buf = (unsigned char *)malloc(ECHO_BUF);
                    if (!buf || (j = sock_add(nfd, K_ECHO)) < 0) {
                        free(buf);
                        close(nfd);
                        continue;
                    }
                    A.socks[j].echo = buf;
                    if (A.opt.verbose) say("connection from %s", ip_port_text(&ip, p, a, sizeof a));
                }
                continue;
            }
            if (!so->echo_eof && (re & (POLLIN | POLLHUP | POLLERR)) && so->echo_len < ECHO_BUF) {
                ssize_t r;
                if (so->echo_off && so->echo_off + so->echo_len == ECHO_BUF) {
                    memmove(so->echo, so->echo + so->echo_off, so->echo_len);
                    so->echo_off = 0;
                }
                r = recv(so->fd, so->echo + so->echo_off + so->echo_len,
                         ECHO_BUF - so->echo_off - so->echo_len, 0);
                if (r > 0) so->echo_len += (size_t)r;
                else if (r == 0) so->echo_eof = 1;
                else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    sock_close(i, 1);
                    continue;
                }
            }
            while (so->echo_len) {
                ssize_t w = send(so->fd, so->echo + so->echo_off, so->echo_len, MSG_NOSIGNAL);
                if (w < 0) {
                    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                        sock_close(i, 1);
                    }
                    break;
                }
                so->echo_off += (size_t)w;
                so->echo_len -= (size_t)w;
                if (so->echo_len == 0) so->echo_off = 0;
            }
            if (so->fd >= 0 && so->echo_eof && so->echo_len == 0) {
                /* the peer is done and has everything back: our EOF too */
                (void)shutdown(so->fd, SHUT_WR);
                sock_close(i, 0);
            }
        }
    }
    say("stopped");
    return 0;
}

/* echo --udp: every datagram back to its sender, an empty one as an empty
 * one. One datagram is held while the socket will not take it (no read
 * until it is out): the kernel's buffer queues the rest. */
static int run_echo_udp(void)
{
    static unsigned char buf[UDP_MAX];
    struct pollfd pfd[2];
    struct sockaddr_storage from;
    socklen_t from_len = 0;
    ssize_t held = -1;           /* the datagram in buf, waiting to go back */
    uint64_t echoed = 0, dropped = 0;
    char a[64];
    uint16_t port;
    int fd = udp_bind(&A.opt.listen_ip, A.opt.listen_port, &port);
    if (fd < 0) {
        say("bind %s: %s", ip_port_text(&A.opt.listen_ip, A.opt.listen_port, a, sizeof a),
            strerror(errno));
        return 1;
    }
    (void)sock_add(fd, K_UDP_ECHO);
    say("udp echo listening on %s", ip_port_text(&A.opt.listen_ip, port, a, sizeof a));
    if (A.opt.port_file && write_port_file(A.opt.port_file, port) != 0) return 1;
    while (!got_stop) {
        int k, n;
        pfd[0].fd = fd;
        pfd[0].events = held >= 0 ? POLLOUT : POLLIN;
        pfd[0].revents = 0;
        pfd[1].fd = wake_pipe[0];
        pfd[1].events = POLLIN;
        pfd[1].revents = 0;
        n = poll(pfd, 2, POLL_MAX_MS);
        if (n < 0 && errno != EINTR) {
            say("poll: %s", strerror(errno));
            return 1;
        }
        if (n <= 0) continue;
        if (pfd[1].revents) wake_drain(wake_pipe[0]);
        for (k = 0; k < UDP_BURST; k++) {
            if (held < 0) {
                from_len = (socklen_t)sizeof from;
                held = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &from_len);
                if (held < 0) break;   /* EAGAIN (or an ICMP error: no one's) */
            }
            if (sendto(fd, buf, (size_t)held, 0, (struct sockaddr *)&from, from_len) < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
                dropped++;
                if (A.opt.verbose) say("sendto: %s", strerror(errno));
            } else {
                echoed++;
            }
            held = -1;
        }
    }
    say("stopped (%llu datagram(s) echoed, %llu dropped)", (unsigned long long)echoed,
        (unsigned long long)dropped);
    return 0;
}

/* ---- main ---- */
static void usage(FILE *f)
{
    fprintf(f,
        "usage: alktunnel relay   --listen ADDR:PORT (--token TOKEN ... | --config relay.json)\n"
        "                         [--offer-key GATEWAY_ID:HEX ...]\n"
        "       alktunnel gateway --id ID --config gateway.json --listen ADDR:PORT\n"
        "       alktunnel client  --id ID --config client.json --gateway GWID=ADDR:PORT ...\n"
        "                         [-L [BIND:]PORT:HOST:HOSTPORT ...] [--connect-timeout SECS]\n"
        "                         [-R [BIND:]PORT:LOCALHOST:LOCALPORT ...] [--via-relay]\n"
        "                         [-U [BIND:]PORT:HOST:HOSTPORT ...] [--udp-idle SECONDS]\n"
        "                         [--udp-port-file FILE]\n"
        "       alktunnel echo    --listen ADDR:PORT [--udp]\n"
        "every subcommand: [--port-file FILE] [-v]; relay, gateway, client: [--stats SECONDS]\n"
        "gateway, client: [--plaintext] (no encryption: both ends, or neither)\n"
        "ADDR, HOST, BIND: IP literals, IPv6 in brackets ([::1]:80). -L and -U bind\n"
        "127.0.0.1 by default; PORT 0 picks a free port (--port-file tells it).\n"
        "-L: a connection not carried within --connect-timeout seconds (default\n"
        "10: no session with the gateway, a session resuming, no room for its\n"
        "open) is reset, the log saying why.\n"
        "-R: the gateway listens on BIND (default 0.0.0.0) PORT only when a live\n"
        "authorization of this client names a resource of that gateway whose CIDR\n"
        "covers BIND and whose ports cover PORT.\n"
        "-U: a UDP flow per source, ended after --udp-idle seconds (default 60).\n"
        "--offer-key (relay, once per gateway): the relay takes spare connections\n"
        "(offers) only from gateways it holds a key for; HEX is 32..128 lowercase hex\n"
        "digits, an even count, and is the gateway config's relay item \"offer_key\"\n"
        "(clients do not get it). Without any, the relay joins nobody.\n"
        "Turned-away work (unproven connections, refused opens and relay requests,\n"
        "failed paths) is logged at most 5 lines per kind per 10 s, then counted.\n"
        "Signals: SIGHUP reloads a gateway's or client's config; SIGINT/SIGTERM end\n"
        "channels with EOF and exit within 3 s. Exit: 0 ok, 1 runtime, 2 usage/config.\n");
}

static int bad_usage(const char *what, const char *arg)
{
    fprintf(stderr, "alktunnel: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
    usage(stderr);
    return 2;
}

/* HEX as a control document's secrets have it: 32..128 lowercase hex
 * digits, an even count (16..64 bytes). 0 and the bytes, or -1. */
static int parse_secret_hex(const char *s, unsigned char *out, size_t *len)
{
    size_t n = strlen(s), i;
    if (n < 2 * ALKT_SECRET_MIN || n > 2 * ALKT_SECRET_MAX || n % 2) return -1;
    for (i = 0; i < n; i++) {
        char c = s[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) return -1;
        if (i % 2 == 0) out[i / 2] = (unsigned char)(v << 4);
        else out[i / 2] = (unsigned char)(out[i / 2] | v);
    }
    *len = n / 2;
    return 0;
}

static int valid_id(const char *s)
{
    size_t n = strlen(s), i;
    if (n == 0 || n > ALKT_ID_MAX) return 0;
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-'))
            return 0;
    }
    return 1;
}

static int parse_args(int argc, char **argv)
{
    options *o = &A.opt;
    int i;
    const char *role = argv[1];
    for (i = 2; i < argc; i++) {
        const char *arg = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(arg, "--via-relay") != 0 && strcmp(arg, "-v") != 0 &&
                    strcmp(arg, "--plaintext") != 0 &&
                    strcmp(arg, "--verbose") != 0 && strcmp(arg, "--help") != 0 &&
                    strcmp(arg, "-h") != 0 && strcmp(arg, "--udp") != 0;
        if (takes && !val) return bad_usage("missing value for", arg);
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(arg, "--listen") == 0) {
            if (parse_addr_port(val, 1, &o->listen_ip, &o->listen_port) != 0)
                return bad_usage("bad --listen ADDR:PORT", val);
            o->has_listen = 1;
        } else if (strcmp(arg, "--token") == 0) {
            if (o->token_count == MAX_TOKENS) return bad_usage("too many --token", NULL);
            o->tokens[o->token_count++] = val;
        } else if (strcmp(arg, "--offer-key") == 0) {
            /* GATEWAY_ID:HEX - an ID may hold ':', HEX never does */
            const char *colon = strrchr(val, ':');
            offer_key_spec *ok = &o->offer_keys[o->offer_key_count];
            size_t idl = colon ? (size_t)(colon - val) : 0, k;
            if (o->offer_key_count == MAX_OFFER_KEYS)
                return bad_usage("too many --offer-key", NULL);
            if (!colon || idl == 0 || idl > ALKT_ID_MAX)
                return bad_usage("bad --offer-key GATEWAY_ID:HEX (no gateway id before the "
                                 "last ':')", NULL);   /* (the value may be a key) */
            memcpy(ok->id, val, idl);
            ok->id[idl] = 0;
            if (!valid_id(ok->id))
                return bad_usage("bad --offer-key: the gateway id is 1..64 of A-Za-z0-9._:-",
                                 ok->id);
            if (parse_secret_hex(colon + 1, ok->key, &ok->key_len) != 0)
                return bad_usage("bad --offer-key: the key is 32..128 lowercase hex digits, "
                                 "an even count (a secret's format); for gateway", ok->id);
            for (k = 0; k < o->offer_key_count; k++)
                if (strcmp(o->offer_keys[k].id, ok->id) == 0)
                    return bad_usage("--offer-key given twice for gateway", ok->id);
            o->offer_key_count++;
            /* out of our command line: ps shows x's from here on */
            memset(argv[i + 1] + (colon + 1 - val), 'x', strlen(colon + 1));
        } else if (strcmp(arg, "--connect-timeout") == 0) {
            char *end;
            unsigned long v = strtoul(val, &end, 10);
            if (*val == 0 || *end || v == 0 || v > 86400)
                return bad_usage("bad --connect-timeout SECS (1..86400)", val);
            o->connect_timeout_s = (unsigned)v;
        } else if (strcmp(arg, "--config") == 0) {
            o->config = val;
        } else if (strcmp(arg, "--id") == 0) {
            if (!valid_id(val)) return bad_usage("bad --id (1..64 of A-Za-z0-9._:-)", val);
            o->id = val;
        } else if (strcmp(arg, "--gateway") == 0) {
            const char *eq = strchr(val, '=');
            gateway_spec *g = &o->gateways[o->gateway_count];
            if (o->gateway_count == MAX_GATEWAYS) return bad_usage("too many --gateway", NULL);
            if (!eq || eq == val || (size_t)(eq - val) > ALKT_ID_MAX)
                return bad_usage("bad --gateway GWID=ADDR:PORT", val);
            memcpy(g->id, val, (size_t)(eq - val));
            g->id[eq - val] = 0;
            if (!valid_id(g->id) || parse_addr_port(eq + 1, 0, &g->ip, &g->port) != 0)
                return bad_usage("bad --gateway GWID=ADDR:PORT", val);
            o->gateway_count++;
        } else if (strcmp(arg, "-L") == 0) {
            if (o->local_count == MAX_FORWARDS) return bad_usage("too many -L", NULL);
            if (parse_forward(val, 1, &o->local[o->local_count]) != 0)
                return bad_usage("bad -L [BIND:]PORT:HOST:HOSTPORT", val);
            o->local_count++;
        } else if (strcmp(arg, "-R") == 0) {
            if (o->remote_count == MAX_FORWARDS) return bad_usage("too many -R", NULL);
            if (parse_forward(val, 0, &o->remote[o->remote_count]) != 0)
                return bad_usage("bad -R [BIND:]PORT:LOCALHOST:LOCALPORT", val);
            o->remote_count++;
        } else if (strcmp(arg, "-U") == 0) {
            if (o->udp_count == MAX_FORWARDS) return bad_usage("too many -U", NULL);
            if (parse_forward(val, 1, &o->udp[o->udp_count]) != 0)
                return bad_usage("bad -U [BIND:]PORT:HOST:HOSTPORT", val);
            o->udp_count++;
        } else if (strcmp(arg, "--udp-idle") == 0) {
            char *end;
            unsigned long v = strtoul(val, &end, 10);
            if (*val == 0 || *end || v == 0 || v > 86400)
                return bad_usage("bad --udp-idle SECONDS (1..86400)", val);
            o->udp_idle_s = (unsigned)v;
        } else if (strcmp(arg, "--udp-port-file") == 0) {
            o->udp_port_file = val;
        } else if (strcmp(arg, "--udp") == 0) {
            o->udp_echo = 1;
        } else if (strcmp(arg, "--via-relay") == 0) {
            o->via_relay = 1;
        } else if (strcmp(arg, "--plaintext") == 0) {
            o->plaintext = 1;
        } else if (strcmp(arg, "--stats") == 0) {
            char *end;
            unsigned long v = strtoul(val, &end, 10);
            if (*val == 0 || *end || v == 0 || v > 86400)
                return bad_usage("bad --stats SECONDS", val);
            o->stats_s = (unsigned)v;
        } else if (strcmp(arg, "--port-file") == 0) {
            o->port_file = val;
        } else if (strcmp(arg, "-v") == 0 || strcmp(arg, "--verbose") == 0) {
            o->verbose = 1;
        } else {
            /* (never a key in the log: --offer-key=ID:HEX is no option) */
            return bad_usage("unknown option",
                             strncmp(arg, "--offer-key", 11) == 0 ? "--offer-key=..." : arg);
        }
        if (takes) i++;
    }
    if (strcmp(role, "client") != 0 &&
        (o->udp_count || o->udp_idle_s || o->udp_port_file))
        return bad_usage("-U, --udp-idle and --udp-port-file are the client's", NULL);
    if (strcmp(role, "echo") != 0 && o->udp_echo)
        return bad_usage("--udp is echo's", NULL);
    if (o->plaintext && strcmp(role, "gateway") != 0 && strcmp(role, "client") != 0)
        return bad_usage("--plaintext is the gateway's and the client's", NULL);
    if (o->offer_key_count && strcmp(role, "relay") != 0)
        return bad_usage("--offer-key is the relay's (a gateway's key is its relay item's "
                         "offer_key)", NULL);
    if (o->connect_timeout_s && strcmp(role, "client") != 0)
        return bad_usage("--connect-timeout is the client's", NULL);
    if (!o->udp_idle_s) o->udp_idle_s = UDP_IDLE_S;
    if (!o->connect_timeout_s) o->connect_timeout_s = CONNECT_TIMEOUT_S;
    if (strcmp(role, "relay") == 0) {
        if (!o->has_listen) return bad_usage("relay needs --listen", NULL);
        if (!o->token_count && !o->config) return bad_usage("relay needs --token or --config", NULL);
        if (o->id || o->gateway_count || o->local_count || o->remote_count || o->via_relay)
            return bad_usage("relay takes --listen, --token, --config, --offer-key only", NULL);
    } else if (strcmp(role, "gateway") == 0) {
        if (!o->id || !o->config || !o->has_listen)
            return bad_usage("gateway needs --id, --config and --listen", NULL);
        if (o->token_count || o->gateway_count || o->local_count || o->remote_count ||
            o->via_relay)
            return bad_usage("gateway takes --id, --config, --listen only", NULL);
    } else if (strcmp(role, "client") == 0) {
        if (!o->id || !o->config || !o->gateway_count)
            return bad_usage("client needs --id, --config and --gateway", NULL);
        if (o->token_count || o->has_listen)
            return bad_usage("client takes no --listen or --token (-L listens)", NULL);
    } else if (strcmp(role, "echo") == 0) {
        if (!o->has_listen) return bad_usage("echo needs --listen", NULL);
        if (o->id || o->config || o->token_count || o->gateway_count || o->local_count ||
            o->remote_count || o->via_relay || o->stats_s)
            return bad_usage("echo takes --listen, --udp, --port-file, -v only", NULL);
    } else {
        return bad_usage("unknown subcommand", role);
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    int i, rc;
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    A.role = argv[1];
    for (i = 0; i < MAX_SOCKS; i++) A.socks[i].fd = -1;
    if ((rc = parse_args(argc, argv)) != 0) return rc;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;   /* no SA_RESTART: poll returns EINTR */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (pipe(wake_pipe) != 0 || set_nonblocking(wake_pipe[0]) < 0 ||
        set_nonblocking(wake_pipe[1]) < 0 || sock_add(wake_pipe[0], K_WAKE) < 0) {
        fprintf(stderr, "alktunnel: pipe: %s\n", strerror(errno));
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
    if (strcmp(A.role, "relay") == 0) return run_relay();
    if (strcmp(A.role, "echo") == 0) return A.opt.udp_echo ? run_echo_udp() : run_echo();
    A.is_gateway = strcmp(A.role, "gateway") == 0;
    return run_node();
}

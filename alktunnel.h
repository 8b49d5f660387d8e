/* alktunnel.h - sans-IO tunnels: strict JSON, the tunnel params, and the
 * authenticated channel-mux session
 * version 0.3.0 (wire version 2) - single-header C99 library, part of alk
 *
 * Everything alktunnel reads as text from outside: a strict RFC 8259 JSON
 * pull parser and typed decoders / encoders for the tunnel's open params,
 * listen replies and control-plane messages. Then the session: many
 * channels over one reliable byte stream, both peers proven to hold the
 * shared secret, every frame encrypted and authenticated with keys from
 * an ephemeral X25519 exchange (forward secret; plaintext is an option),
 * flow-controlled, resumable on a new connection with every byte
 * delivered once, and pumps joining a channel to an endpoint the caller
 * owns. Its primitives are included and usable alone: SHA-256, HMAC,
 * HKDF, ChaCha20-Poly1305, X25519 (constant time, RFC test vectors). No
 * malloc, no I/O, no clock, no randomness of its own, no mutable globals
 * but three cached CPU-feature answers (the SHA extensions, AVX2 and
 * AVX-512F, x86-64 only). On top, the roles: a relay that joins two connections by token, and client and
 * gateway nodes that keep sessions over direct or relayed paths, authorize
 * every open against the control plane, and revoke at once.
 *
 * QUICK START
 *
 *   #define ALKTUNNEL_IMPLEMENTATION   // in exactly one .c file
 *   #include "alktunnel.h"
 *   #include <stdio.h>
 *   #include <string.h>
 *
 *   // An open params document from a peer: decoded, checked, used.
 *   int use_open(const char *text, size_t len) {
 *       alkt_open_params p;
 *       alkt_error err;
 *       if (alkt_open_params_decode(text, len, NULL, &p, &err) != ALKT_OK) {
 *           fprintf(stderr, "%s at %zu (line %zu col %zu) in '%s'\n",
 *                   alkt_strerror(err.code), err.offset, err.line, err.column,
 *                   err.path);               // e.g. "port out of range ... 'port'"
 *           return -1;
 *       }
 *       if (p.kind == ALKT_OPEN_DIRECT && p.substrate != ALKT_SUBSTRATE_UNIX) {
 *           char host[ALKT_HOST_MAX + 1];    // a name or an IP literal:
 *           if (p.host.kind == ALKT_HOST_NAME)   // p.host.kind says which
 *               memcpy(host, p.host.name, sizeof host);
 *           else
 *               alkt_ip_format(&p.host.ip, host);    // canonical, IPv6 too
 *           printf("connect %s %s %u\n", alkt_substrate_name(p.substrate), host,
 *                  (unsigned)p.port);
 *       }
 *       char out[512];
 *       ptrdiff_t n = alkt_open_params_encode(&p, out, sizeof out, &err);
 *       // n >= 0: canonical JSON of n bytes (not NUL-terminated); n < 0: error.
 *       // alkt_open_params_encode(&p, NULL, 0, &err) returns the size needed.
 *       return n < 0 ? -1 : 0;
 *   }
 *
 *   // The raw reader, one token at a time.
 *   size_t count_tokens(const char *text, size_t len) {
 *       alkt_json_parser jp;
 *       alkt_json_token t;
 *       size_t k = 0;
 *       alkt_json_init(&jp, text, len, NULL);
 *       while (alkt_json_next(&jp, &t) == ALKT_OK && t.type != ALKT_JSON_END)
 *           k++;                             // t.type, t.ptr/t.len, t.offset
 *       return k;
 *   }
 *
 * SESSION QUICK START
 *
 *   // A whole client and server exchanging one message over a socket pair,
 *   // in one process. The session is sans-IO: it never touches a socket -
 *   // io() below does (a real loop polls up to alkt_session_poll_timeout;
 *   // examples/session_echo.c is a whole program with poll() and resuming).
 *   // The gate builds this file as C and C++ against an implementation
 *   // compiled apart, and runs it: server got "hello" from laptop
 *   #define _POSIX_C_SOURCE 200809L
 *   #include "alktunnel.h"   // the declarations; one other file of the program
 *                            // defines ALKTUNNEL_IMPLEMENTATION before it
 *   #include <stdio.h>
 *   #include <stdlib.h>
 *   #include <string.h>
 *   #include <sys/socket.h>
 *   #include <time.h>
 *
 *   static uint64_t now_ns(void) {
 *       struct timespec t;
 *       clock_gettime(CLOCK_MONOTONIC, &t);
 *       return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
 *   }
 *
 *   // One end: its config zeroed (the defaults), then the secret both ends
 *   // hold (from the control plane) and its name; memory from the caller.
 *   static alkt_session *start(int is_server, const unsigned char *secret,
 *                              const char *name, const unsigned char random32[32]) {
 *       alkt_session_config cfg;
 *       alkt_session *s = (alkt_session *)malloc(sizeof *s);
 *       memset(&cfg, 0, sizeof cfg);
 *       cfg.is_server = is_server;
 *       cfg.secret = secret; cfg.secret_len = 32;
 *       cfg.identity = name; cfg.identity_len = strlen(name);
 *       size_t need = alkt_session_mem_size(&cfg);
 *       void *mem = malloc(need);
 *       if (!s || !mem || alkt_session_init(s, &cfg, mem, need, now_ns()) != ALKT_OK) exit(1);
 *       alkt_session_connect(s, now_ns(), random32);   // (32 fresh random bytes)
 *       return s;
 *   }
 *
 *   // The session's output to its socket, the socket's input to the session.
 *   static void io(alkt_session *s, int fd) {
 *       unsigned char buf[16384];
 *       const void *out;
 *       size_t n;
 *       while ((n = alkt_session_transmit_peek(s, &out)) > 0) {
 *           ssize_t put = send(fd, out, n, 0);
 *           if (put <= 0) break;
 *           alkt_session_transmit_done(s, (size_t)put);
 *       }
 *       ssize_t got = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
 *       if (got > 0) alkt_session_handle_input(s, buf, (size_t)got, now_ns());
 *       alkt_session_handle_timeout(s, now_ns());
 *   }
 *
 *   int main(void) {
 *       static const unsigned char secret[33] = "a secret both ends hold: 32 byte";
 *       unsigned char rnd_c[32], rnd_s[32];
 *       int fd[2];
 *       memset(rnd_c, 1, 32); memset(rnd_s, 2, 32);   // (use a CSPRNG: getrandom)
 *       if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0) return 1;
 *       alkt_session *client = start(0, secret, "laptop", rnd_c);
 *       alkt_session *server = start(1, secret, "gateway", rnd_s);
 *       uint32_t ch = 0;
 *       for (int round = 0; round < 100; round++) {
 *           alkt_event ev;
 *           io(client, fd[0]);
 *           io(server, fd[1]);
 *           while (alkt_session_poll_event(client, &ev)) {
 *               if (ev.type == ALKT_EV_ESTABLISHED) {      // open a channel
 *                   alkt_open_params o;                 // what the server
 *                   alkt_open_params_direct(&o, ALKT_SUBSTRATE_TCP,   // is asked
 *                                           "echo", 4, 7);            // to reach
 *                   alkt_channel_open(client, &o, &ch);
 *               } else if (ev.type == ALKT_EV_OPENED) {    // accepted: send
 *                   alkt_channel_send(client, ch, "hello", 5);
 *               }
 *           }
 *           while (alkt_session_poll_event(server, &ev)) {
 *               if (ev.type == ALKT_EV_OPEN_REQUEST) {     // ev.channel, its params
 *                   alkt_channel_accept(server, ev.channel, NULL);
 *               } else if (ev.type == ALKT_EV_READABLE) {
 *                   char msg[64];
 *                   int eof;
 *                   ptrdiff_t k = alkt_channel_recv(server, ev.channel, msg, sizeof msg, &eof);
 *                   if (k > 0) {
 *                       size_t n;
 *                       const char *who = alkt_session_peer_identity(server, &n);
 *                       printf("server got \"%.*s\" from %.*s\n", (int)k, msg, (int)n, who);
 *                       return 0;
 *                   }
 *               }
 *           }
 *       }
 *       return 1;
 *   }
 *
 * THE LAYERS, each built on the ones above it, and what a user calls in each
 *
 *   JSON, addresses, params  alkt_json_init/next, alkt_json_validate;
 *                            alkt_ip_parse, alkt_ip_format; alkt_*_decode
 *                            and alkt_*_encode for open params, listen
 *                            replies and control messages;
 *                            alkt_open_params_direct (host:port to open)
 *   crypto (usable alone)    alkt_sha256, alkt_hmac_sha256, alkt_hkdf_*,
 *                            alkt_chacha20, alkt_poly1305, alkt_aead_seal
 *                            and _open, alkt_x25519
 *   session                  alkt_session_mem_size/init/connect,
 *                            _handle_input/_disconnected/_timeout,
 *                            _transmit_peek/_done, _poll_event/_timeout;
 *                            alkt_channel_open/accept/refuse/send/recv/
 *                            peek/consume/shutdown_write/reset
 *   pumps (NO_PUMPS)         alkt_pump_* (a channel <-> a stream socket),
 *                            alkt_dgram_pump_* (<-> a datagram socket)
 *   roles (NO_ROLES)         alkt_relay_* (joins two connections by token),
 *                            alkt_client_* / alkt_gateway_* on alkt_node_*
 *                            (sessions kept over direct or relayed paths,
 *                            every open authorized, revocation at once)
 *
 * CONFIGURATION (define before including the implementation)
 *
 *   ALKTUNNEL_IMPLEMENTATION  emit the implementation in this translation unit
 *                             (ALK_IMPLEMENTATION turns on every alk header)
 *   ALKTUNNEL_STATIC          make every function static (private copy per TU)
 *   ALKTUNNEL_ASSERT(c)       internal-invariant check, default assert(c);
 *                             never fires on malformed input
 * Layers (each leaves its declarations and code out; the compile matrix
 * builds every one of them and all at once, with gcc, clang and g++):
 *   ALKTUNNEL_NO_ROLES        no relay, client or gateway (alkt_relay_*,
 *                             alkt_node_*, alkt_client_*, alkt_gateway_*):
 *                             the session, params and crypto only; the
 *                             ALKT_CODE_* application codes stay
 *   ALKTUNNEL_NO_PUMPS        no stream or datagram pumps (alkt_pump_*,
 *                             alkt_dgram_pump_*)
 *   (tests/firmware_check.sh: the session at its smallest - these two and
 *   ALKTUNNEL_NO_FAST_DECODE - is 27,724 bytes of .text on a Cortex-M4 at
 *   -Os; with the roles, 41,872)
 * Optimisations, one switch a family (each turns off its own family only):
 *   ALKTUNNEL_PORTABLE        the portable C only: NO_SIMD, NO_SHA_NI and
 *                             NO_INT128 together (what 32-bit targets get)
 *   ALKTUNNEL_NO_SIMD         both SIMD families: NO_SIMD_CRYPTO and
 *                             NO_SIMD_JSON
 *   ALKTUNNEL_NO_SIMD_CRYPTO  ChaCha20 in portable C only; by default, on
 *                             x86-64 with gcc or clang, sixteen blocks at a
 *                             time with AVX-512F when the CPU has it (~6.8
 *                             GB/s here), eight with AVX2 (~2.6), each
 *                             asked once, else four with SSE2 (same
 *                             results - the tests compare them); and
 *                             Poly1305 eight blocks at once from 512
 *                             bytes on, with AVX-512 IFMA (52-bit
 *                             products on the 44-bit limbs) or else on
 *                             AVX-512F lanes, four on AVX2 lanes (~6.3
 *                             GB/s on the machine of issue 42, against
 *                             ~3.9 for the scalar 44-bit limbs; eight
 *                             lanes ~1.35x four on another; IFMA ~1.7x
 *                             the AVX-512F lanes). The AEAD: ~1.9-3.2
 *                             GB/s for 16 KiB records, by machine (make
 *                             bench: bench_aead)
 *   ALKTUNNEL_NO_SIMD_JSON    the JSON reader's string scan (16 bytes at
 *                             a time with SSE2), alkt_json_validate's
 *                             block pass (64 bytes classified into bit
 *                             masks with SSE2, then
 *                             only the structural bytes walked; ~1.3-1.5x
 *                             the one-pass scan on string-heavy and
 *                             minified text) and host-name check (8 bytes
 *                             a word, 64-bit targets) go portable: the replay gate runs
 *                             the params corpus both ways
 *   ALKTUNNEL_NO_FAST_DECODE  the typed decoders without their one-pass
 *                             fast paths (control messages, open params):
 *                             every document through the token decoder,
 *                             same results and errors, ~1.5x slower on
 *                             small messages, 2.7 KiB less code on a
 *                             Cortex-M4 (tests/firmware_check.sh builds
 *                             the session both ways); and records are
 *                             not read where they lie - by default, on
 *                             64-bit targets, a whole record in one
 *                             input is opened in place and its DATA
 *                             decrypted straight into the channel's ring
 *                             (else each record is copied to the record
 *                             buffer, opened there, and its frame copied
 *                             on: 32-bit targets always do this)
 *   ALKTUNNEL_NO_INT128       X25519 on ten 26/25-bit limbs and Poly1305 on
 *                             five 26-bit limbs (64-bit products, any C99
 *                             compiler); by default gcc and clang on 64-bit
 *                             targets use 128-bit products: X25519 on five
 *                             51-bit limbs (~3x faster), Poly1305 on three
 *                             of 44/44/42 bits, four blocks a step with r^4
 *                             .. r (~1.4x; the gate runs the vectors and
 *                             the differential tests both ways)
 *   ALKTUNNEL_NO_SHA_NI       SHA-256 in portable C only; by default, on
 *                             x86-64 with gcc or clang, the SHA extensions
 *                             are used when the CPU has them (asked once
 *                             with cpuid; ~6x faster here, same results -
 *                             the tests compare the two)
 *   ALKTUNNEL_CT_COUNT(n)     test builds only: called with the number of
 *                             bytes each constant-time comparison reads
 *   ALKTUNNEL_CT_PUBLIC(p, n) test builds only: called where a value made
 *                             from secrets becomes public (a tag matched
 *                             or not, a shared secret was all zero), so
 *                             tests/ctgrind.c can tell valgrind it may be
 *                             branched on
 *
 * API
 *
 *   JSON reader (pull parser, state in the caller's alkt_json_parser):
 *     alkt_json_init(p, json, len, limits)   limits NULL or zeroed: defaults
 *     alkt_json_next(p, &token)              ALKT_OK + one token, or < 0
 *     alkt_json_error(p, &err)               the sticky error with its context
 *     alkt_json_validate(json, len, limits, &err)   whole document
 *     alkt_json_unescape(raw, len, out, cap, &out_len, &bad)  string contents
 *     alkt_json_number_u64 / _i64(token, &value)            integer values
 *     alkt_json_number_double(token, &value)   correctly rounded double
 *     alkt_json_skip(p, &token)              past the value token starts
 *     alkt_json_find_key(p, name, len, &key) the member of that name
 *     alkt_json_string_equal(token, s, len)  key/string text == s, escapes
 *                                            decoded as compared
 *   Typed params (decode: zeroed out-struct filled or error; encode:
 *   canonical JSON into buf, returns length or < 0; buf NULL + cap 0 asks
 *   for the length):
 *     alkt_open_params_decode / _encode       open a channel (direct or
 *                                             forwarded)
 *     alkt_listen_reply_decode / _encode      where a forwarded open listens
 *     alkt_listen_reply_project               lenient: never fails, gives
 *                                             both fields or neither
 *     alkt_control_decode / _encode           control plane: resources,
 *                                             authorizations, revocations,
 *                                             relays
 *   Addresses and names (also used by the decoders):
 *     alkt_ip_parse, alkt_ip_format, alkt_hostname_valid
 *   alkt_strerror(code), alkt_substrate_name(substrate)
 *   Hashes: alkt_sha256[_init/_update/_final], alkt_hmac_sha256[...],
 *     alkt_ct_equal (constant time in the length only)
 *   Session (SESSION below): alkt_session_mem_size / _init / _connect /
 *     _handle_input / _poll_transmit / _transmit_peek / _transmit_done /
 *     _poll_timeout / _handle_timeout / _poll_event / _handle_disconnected /
 *     _close / _is_established / _peer_identity; alkt_channel_open /
 *     _accept / _refuse / _send / _recv / _peek / _consume /
 *     _shutdown_write / _reset / _info_get
 *   Pumps (PUMPS below): alkt_pump_init / _poll / _read_buffer /
 *     _endpoint_read / _endpoint_eof / _write_peek / _endpoint_wrote /
 *     _endpoint_shut / _endpoint_failed
 *   Datagram pumps (DATAGRAMS below): alkt_dgram_pump_init / _poll /
 *     _send / _recv / _delivered / _endpoint_eof / _endpoint_failed
 *   Relay (RELAY below): alkt_relay_mem_size / _init / _accept /
 *     _handle_input / _read_buffer / _handle_read / _transmit_peek /
 *     _transmit_done / _handle_closed / _poll_timeout / _handle_timeout /
 *     _poll_event / _stats_get
 *   Client and gateway (CLIENT AND GATEWAY below): alkt_node_mem_size,
 *     alkt_client_init, alkt_gateway_init, alkt_node_control / _accept /
 *     _handle_connected / _handle_closed / _handle_input /
 *     _transmit_peek / _transmit_done / _poll_timeout / _handle_timeout /
 *     _poll_event / _session; alkt_client_add_gateway / _open / _answer /
 *     _roamed; alkt_gateway_authorize / _target_result / _listen_result /
 *     _forward
 *
 * SCHEMAS (every object: unknown fields and duplicate keys rejected)
 *
 *   open params, direct:    {"substrate":"tcp"|"udp","host":HOST,"port":PORT}
 *                           {"substrate":"unix","path":PATH}
 *   open params, forwarded: {"listen":PORT,"substrate":"tcp"|"udp"
 *                            [,"host":IP]}   host = bind address, default any
 *   listen reply:           {"address":IP,"port":PORT}
 *   control message:        {["resources":[RESOURCE...]]
 *                            [,"authorizations":[AUTHORIZATION...]]
 *                            [,"revocations":[REVOCATION...]]
 *                            [,"relays":[RELAY...]]}   at least one section;
 *                           an empty array is a valid (empty) section
 *     RESOURCE       {"id":ID,"cidr":CIDR[,"ports":[{"from":PORT,"to":PORT}
 *                     ...]][,"protocols":["tcp"|"udp"|"icmp"...]],
 *                     "gateway":ID}  ports / protocols absent = all; present
 *                     = non-empty; from <= to; a protocol at most once
 *     AUTHORIZATION  {"client":ID,"resource":ID,"secret":HEX,"expires":SECS}
 *     REVOCATION     {"client":ID,"resource":ID}
 *     RELAY          {"id":ID,"address":HOST,"port":PORT,"token":TOKEN
 *                     [,"offer_key":HEX]}  offer_key: sent to a gateway
 *                     only, the key it proves its offers with at that
 *                     relay (the relay holds the same, per gateway id)
 *
 *   PORT   integer 1..65535 (0 is refused everywhere, `listen: 0` included)
 *   ID     1..64 bytes of [A-Za-z0-9._:-]
 *   HOST   an IP literal or a DNS name (RFC 1123: labels 1..63 of letters,
 *          digits and inner hyphens, total <= 253, last label not all
 *          digits, no trailing dot; not made only of labels that
 *          inet_aton reads as numbers, like "0x7f.1"). A forwarded open's
 *          host must be an IP literal: a valid name there is
 *          ALKT_ERR_BAD_ADDRESS; a string that is neither is classified by
 *          its look (BAD_ADDRESS or BAD_HOSTNAME), whatever the field order
 *   IP     IPv4 dotted quad (no leading zeros) or IPv6 (RFC 4291 text, `::`
 *          forms, trailing dotted quad; no zone id). Encoded in canonical
 *          form (RFC 5952), so encode(decode(s)) is a fixed point.
 *   CIDR   IP "/" prefix (0..32 / 0..128, no leading zeros), host bits zero
 *   PATH   1..107 bytes of UTF-8 (sockaddr_un's sun_path less its NUL)
 *   HEX    32..128 lowercase hex digits, even count (16..64 secret bytes)
 *   SECS   integer 0..2^53-1, seconds since the Unix epoch
 *   TOKEN  1..128 bytes of printable ASCII (0x21..0x7E)
 *   Integers take the JSON integer grammar only: 1.0 and 1e3 are refused
 *   (ALKT_ERR_NOT_INTEGER). Strings never contain U+0000.
 *
 * SESSION
 *
 *   Wire format, version 2 (version 1 peers get silence: their HELLO
 *   has no MAC). Every frame: an 8-byte header, then payload.
 *     offset size  field
 *     0      1     type (below); unknown types end the session
 *     1      1     flags, 0 (anything else ends the session)
 *     2      2     payload length, big-endian, <= the receiver's max_frame
 *                  (256..16384, from its HELLO; handshake frames <= 310)
 *     4      4     channel id, big-endian (0: the session itself)
 *   Handshake (channel 0, in clear):
 *     0x01 HELLO  payload offset: 0 "ALKT"(4) 4 version_min(1)
 *                 5 version_max(1) 6 role(1: client, 2: server) 7 flags(1:
 *                 bit 0 resume, bit 1 plaintext) 8 nonce(32) 40
 *                 session_id(16) 56 frames_received(8) 64 resume_proof(32)
 *                 96 max_frame(4) 100 log_size(4) 104 max_channels(4) 108
 *                 ephemeral_key(32: X25519 public, zeros in plaintext) 140
 *                 freshness(8: client; 0 from a server) 148 identity_len(1)
 *                 149 identity(1..129), then from a client only
 *                 MAC(32) = HMAC-SHA-256(secret, "alkt2 hello" || the
 *                 frame header || the payload up to the MAC)
 *     0x02 AUTH   MAC(32)
 *     0x03 REFUSE code(2: a library code, negated) MAC(32) = HMAC-SHA-256(
 *                 secret, "alkt2 refuse" || SHA-256(the client's HELLO
 *                 frame) || code): a server turning down a proven client
 *                 (ALKT_ERR_RESUME_REFUSED, _BUSY); the last frame it sends
 *   Sequenced frames (kept in the sender's resend log until acknowledged;
 *   after a resume each side resends from the count the other's HELLO
 *   gives, so every one arrives exactly once and in order):
 *     0x10 OPEN     open params JSON (alkt_open_params); the id is new
 *     0x11 OPEN_OK  listen reply JSON, or empty
 *     0x12 OPEN_ERR code(2) reason(0..64, printable ASCII): the refuser's
 *                   code, or 0xff01 duplicate id, 0xff02 bad params,
 *                   0xff03 no free channel
 *     0x13 DATA     bytes (an empty DATA frame means nothing: never EOF)
 *     0x14 EOF      empty: the sender's direction is over
 *     0x15 RESET    code(2): both directions over, nothing more delivered
 *     0x16 WINDOW   increment(4): that many more DATA bytes may come
 *   Connection frames (channel 0, never logged):
 *     0x20 ACK      sequenced frames received so far(8)
 *     0x21 PING / 0x22 PONG  opaque(8), echoed
 *     0x23 GOAWAY   code(2): the library's error code negated, or the
 *                   application's from alkt_session_close
 *     0x24 REKEY    empty: the sender's next record is under its next key
 *                   (encrypted sessions only)
 *   Records (encrypted sessions, the default): after its own AUTH each side
 *   sends every frame as one record, and after the peer's AUTH takes only
 *   records:
 *     length(2, big-endian: the frame's, 8..8 + max_frame) | the frame
 *     sealed with AEAD_CHACHA20_POLY1305 (RFC 8439) | tag(16)
 *   under the direction's key, nonce = 4 zero bytes | the record's counter
 *   (64 bits, little endian; never sent), AAD = the length. A record that
 *   fails its tag (changed, cut, replayed, reordered: the counter is
 *   implicit) or whose length no frame can have ends the connection with
 *   ALKT_ERR_DECRYPT - not the session, which resumes on a new one
 *   (anyone on the path can change a byte; only the peers can end a
 *   session) - and nothing of it is used: a record is opened whole
 *   before its frame is looked at. After rekey_records - 1 records a key
 *   seals a REKEY frame as its last record and the direction moves to
 *   HKDF-Expand(key, "alkt1 rekey", 32), counting from 0: no key ever seals
 *   past its limit (a session made to would end with ALKT_ERR_NONCE_LIMIT
 *   rather than reuse a nonce).
 *
 *   Handshake: the client sends HELLO; the server checks its MAC and its
 *   freshness first and, until both pass, says nothing and keeps nothing
 *   (the connection just ends: ALKT_ERR_AUTH, _STALE_HELLO or _PROTOCOL
 *   on the server's side). A proven client gets the server's HELLO (with
 *   the session id) and AUTH, or a REFUSE; it checks the AUTH and sends
 *   its own. Freshness: epoch_ns + now on the client (its wall clock,
 *   above every HELLO it sent before); the server takes a HELLO only
 *   when its freshness is above the last one it accepted under that
 *   secret (freshness_floor; alkt_node keeps it per authorization), so a
 *   recorded HELLO replayed - or a client whose clock went back - gets
 *   silence. H = SHA-256(client HELLO frame || server HELLO frame) binds
 *   both nonces, both ephemeral keys, identities, versions, freshness and
 *   parameters. The caller's 32 random bytes per connection make the
 *   HELLO's nonce, SHA-256("alkt1 nonce" || them), and apart from it the
 *   ephemeral key, SHA-256("alkt1 ephemeral" || them) - they must be
 *   secret and fresh.
 *   Encrypted (the pattern of Noise NNpsk0 - an ephemeral exchange both
 *   ways, mixed with the pre-shared secret - on this handshake's frames):
 *     dh  = X25519(our ephemeral, the peer's); all zero: ALKT_ERR_AUTH
 *     prk = HMAC-SHA-256(secret, "alkt1 keys" || H || dh)
 *     client->server key | server->client key | auth key
 *         = HKDF-Expand(prk, "alkt1 session keys", 96)
 *     AUTH = HMAC-SHA-256(auth key, "alkt1 server" / "alkt1 client" || H)
 *   so each AUTH proves the secret and the keys, before any channel frame
 *   in either direction; the ephemeral private keys are wiped once dh is
 *   taken. Plaintext (both sides configured so): AUTH = HMAC-SHA-256(
 *   secret, "alkt1 server" / "alkt1 client" || H). Encrypted and plaintext
 *   peers refuse each other (ALKT_ERR_CIPHER) - the flag is in H too, so a
 *   path cannot switch it. A new session's id is SHA-256("alkt1 session
 *   id" || both nonces)[0..16] and its resume token HMAC(secret, "alkt1
 *   token" || H || id), never sent; a resuming client proves it holds the
 *   token with HMAC(token, "alkt2 resume" || its new nonce || id ||
 *   freshness(8)), so a recorded resume proves nothing twice. A resume
 *   runs a new ephemeral exchange: new keys, counters from 0. The versions
 *   in common: the highest (only 2 exists); none is ALKT_ERR_VERSION.
 *
 *   Before the peer's proof nothing ends or changes a session. A forged,
 *   truncated or replayed handshake, a GOAWAY or garbage in clear, a
 *   server HELLO changed on the way, a REFUSE whose MAC does not fit our
 *   HELLO: each costs that connection (ALKT_EV_DISCONNECTED), and the
 *   session keeps trying within its own deadlines. A client's refused
 *   resume ends its session only when the refusal is proven: a REFUSE
 *   with a good MAC, or a GOAWAY after the server's AUTH checked out.
 *   Keys live as long as they are needed: traffic keys, the AUTH key,
 *   the resume token and the secret's HMAC state are wiped when the
 *   session closes; alkt_session_wipe wipes all of the session's memory.
 *
 *   What is protected, encrypted: who the peer is (it holds the secret;
 *   its identity and every handshake field are bound by the MACs); that a
 *   resumed session is the same one; every frame after the AUTHs, against
 *   reading and against any change, cut, replay or reordering (a relay
 *   on the path sees lengths and timing, nothing else); past sessions if
 *   the secret leaks later (forward secrecy: their keys came from
 *   ephemeral keys that are gone). A resume token alone is worth nothing
 *   on the path: a resumption still needs the secret for its AUTH. Not
 *   hidden: the HELLOs (identities - the client and resource names -,
 *   parameters, freshness: the client's clock), record lengths, timing.
 *   Plaintext: the same authentication, and the order and completeness of
 *   the frame stream (the frame counts of ACK and HELLO), but anyone on
 *   the path reads the channel bytes, and one who rewrites bytes of a
 *   frame without changing its length is not detected - for links that
 *   are protected already.
 *
 *   Channels: the client opens odd ids, the server even ones, counting up,
 *   never reused. A second OPEN of a live or used id is refused with
 *   OPEN_ERR 0xff01 and the live channel is not touched (the opener
 *   ignores an OPEN_ERR for a channel past OPENING). Frames for a channel
 *   that is gone are ignored (late ones are normal after a reset); frames
 *   for an id never opened, data after EOF, a second EOF, a frame past its
 *   window, an oversize or malformed frame end the session with a GOAWAY
 *   and ALKT_ERR_PROTOCOL / _FLOW_CONTROL / _FRAME_TOO_LARGE. Each side
 *   keeps at most the other's max_channels of its own channels alive.
 *   Refusals wait in a queue of max_channels until they go out: a peer
 *   whose refused OPENs (duplicate ids, bad params, a full table) arrive
 *   faster than that - more than max_channels in one read - loses the
 *   session (ALKT_ERR_CHANNELS_FULL), as a well-behaved peer never does.
 *
 *   Flow control and memory: a receiver grants credit (WINDOW) up to its
 *   channel_window of buffered bytes per channel and session_window over
 *   all channels; a DATA frame past the credit ends the session, so no
 *   peer makes us hold more. alkt_channel_send takes what the credit and
 *   the resend log allow (0: wait for ALKT_EV_WRITABLE). Memory is the
 *   caller's, alkt_session_mem_size(cfg) bytes:
 *     align8(max_channels * sizeof(alkt__chan)) + max_channels * 24
 *     + max_channels * channel_window + log_size + max_frame + 8
 *   (records, pending refusals, the last events of finished channels
 *   whose records a peer's open took, receive rings, the resend log, the
 *   frame buffer), and when encrypted, R = 2 + 8 + max_frame + 16 (a record)
 *   and B = seal_batch (default 4):
 *     + 8 + align8(B R + 26) + align8(R)
 *   (B records sealed per batch and a REKEY record, one record coming
 *   in) - nothing else grows, whatever the peer sends.
 *
 *   Zero copy: alkt_session_transmit_peek points at the next bytes due in
 *   the session's own memory (a frame or its rest, and the whole frames
 *   queued behind it up to 256 KiB or the ring's end; encrypted: up to
 *   seal_batch sealed records, sealed from the log into the record buffer) -
 *   write them to the socket from there and say how many went with
 *   transmit_done;
 *   poll_transmit is the same with a copy into the caller's buffer.
 *   alkt_channel_peek points at a channel's buffered bytes in its ring
 *   (the first run; after the wrap, peek again) and consume(n) releases
 *   what the app used - an echo or a pump forwards from there, and what
 *   the other side did not take yet stays, counted against the window.
 *   The bytes then cross memory twice on the way: the app's write into
 *   the resend log (alkt_channel_send, kept for a resume) and the read
 *   into the receiver's ring (from the socket, by the caller).
 *   Pointers from either peek are good until the next call on the session.
 *
 *   Half-close: alkt_channel_shutdown_write sends EOF after every byte
 *   sent before it; alkt_channel_recv reports *eof once the app has read
 *   everything before the peer's EOF. A channel is done (ALKT_EV_CHANNEL_DONE,
 *   its id gone) when both EOFs are through and read, or it was reset or
 *   refused.
 *
 *   Resumption: when a connection drops (handle_disconnected, an idle
 *   timeout), the session keeps its channels and log for resume_window;
 *   connect on a new connection (any path) resumes: both sides resend
 *   what the other has not received, so every byte, EOF and reset arrives
 *   once. A wrong token or an unknown session is ALKT_ERR_RESUME_REFUSED
 *   (the server's REFUSE, proven), a resume after the window
 *   ALKT_ERR_RESUME_EXPIRED: the session ends and its channels with it. A server session object serves one session:
 *   route a new session's HELLO to a new object.
 *
 *   Time: every call takes now (ns). poll_timeout returns now whenever
 *   output is queued (a driver that sleeps until a later deadline would
 *   otherwise hold it back), else the earliest of: keepalive (a PING after
 *   ping_interval without sending), idle timeout (the connection is dead
 *   after idle_timeout without input: ALKT_EV_DISCONNECTED), handshake
 *   timeout, resume window; after handle_timeout(now) none is in the past.
 *
 *   Errors: session and channel calls return ALKT_OK or a negative code;
 *   what ends a connection or the session is also an event
 *   (ALKT_EV_DISCONNECTED / ALKT_EV_CLOSED with the code).
 *     ALKT_ERR_PROTOCOL, _FRAME_TOO_LARGE, _FLOW_CONTROL  the peer broke a
 *                             rule (the session ends, GOAWAY sent)
 *     ALKT_ERR_DECRYPT        a record failed its tag, or has a length no
 *                             frame can have (the connection ends, the
 *                             session resumes; nothing of the record was
 *                             used)
 *     ALKT_ERR_NONCE_LIMIT    a key would seal past rekey_records (cannot
 *                             happen while REKEY works; the session ends)
 *     ALKT_ERR_AUTH, _VERSION, _CIPHER, _HANDSHAKE_TIMEOUT  this connection
 *                             failed (_CIPHER: one side is plaintext)
 *     ALKT_ERR_STALE_HELLO    server: a HELLO no fresher than one taken
 *                             before (a replay, a clock gone back); the
 *                             connection ends in silence
 *     ALKT_ERR_BUSY           the server has no room for a new session (a
 *                             proven REFUSE; try again later)
 *     ALKT_ERR_UNANSWERED     client node: the gateway closed without a
 *                             word to our HELLO (it does not take our
 *                             name or secret, our clock is behind, or
 *                             strangers' connections crowded ours out:
 *                             the next attempt gets in)
 *     ALKT_ERR_RESUME_REFUSED, _RESUME_EXPIRED, _GOAWAY, _CLOSED  the
 *                             session is over
 *     ALKT_ERR_IDLE_TIMEOUT, _NOT_CONNECTED  the connection is gone
 *     ALKT_ERR_STATE, _NO_CHANNEL, _RESET, _CHANNELS_FULL, _WOULD_BLOCK,
 *     _NOMEM                  refused calls (nothing changed)
 *
 * PUMPS
 *
 *   An alkt_pump joins one open channel to one endpoint the caller owns (a
 *   TCP socket, a pipe), both ways, with no I/O of its own. Loop: bits =
 *   alkt_pump_poll(p), then
 *     ALKT_PUMP_READ        read the endpoint into alkt_pump_read_buffer's
 *                           room, alkt_pump_endpoint_read(n); a read of 0
 *                           (EOF): alkt_pump_endpoint_eof
 *     ALKT_PUMP_WRITE       write alkt_pump_write_peek's bytes (in place, in
 *                           the channel's ring), alkt_pump_endpoint_wrote(n)
 *     ALKT_PUMP_SHUT_WRITE  shutdown(fd, SHUT_WR), alkt_pump_endpoint_shut
 *     ALKT_PUMP_DONE        both directions ended: close the endpoint
 *     ALKT_PUMP_ABORT       reset or session over (p->code: the reset's
 *                           16-bit code from our side's endpoint_failed, else
 *                           a negative ALKT_ERR_*): close at once
 *   and poll again after session input and events. Backpressure both ways:
 *   READ is off while the pump's buffer (caller memory, any size >= 1)
 *   holds bytes the channel has no credit or log room for, so a slow far
 *   reader stops the near endpoint's reads; WRITE bytes stay in the ring,
 *   counted against the window, until the endpoint takes them. Half-close
 *   each way on its own: the endpoint's EOF goes to the channel after its
 *   last byte; the peer's EOF asks for SHUT_WRITE after the last byte was
 *   written. Counters: from_endpoint == to_channel once done; to_endpoint
 *   counts what the endpoint took. Memory: the buffer, nothing else.
 *
 * DATAGRAMS
 *
 *   An alkt_dgram_pump carries UDP-style datagrams over a channel, each
 *   framed [u16 BE length][payload] - alkcodec.h's wire format, so either
 *   end may use alkcodec instead (alktunnel.h does not need it; the fuzz
 *   oracle decodes with it). A datagram of 0 bytes is a datagram: the
 *   channel's EOF, and only that, ends a direction. Datagrams are whole
 *   or nothing: send takes one into the pump's memory (READ is off until
 *   it is in the channel: backpressure, no queue), recv hands out one only
 *   when its last byte is in. A frame longer than max_datagram, or cut by
 *   the EOF, resets the channel with ALKT_CODE_BAD_DATAGRAM. Memory:
 *   2 * (max_datagram + 2) bytes of the caller's. DONE once our EOF is
 *   out and the peer's came at a frame boundary.
 *
 * RELAY
 *
 *   A relay joins a client's connection to a spare connection a gateway
 *   keeps open at it, and then copies bytes both ways without reading
 *   them (the session's MACs make anything it changes fail). Every
 *   connection starts with a request:
 *     "ALKR"(4) version(1: 2) kind(1: 1 client, 2 gateway offer)
 *     token_len(1) token(1..128, printable) id_len(1) id(1..64, an ID:
 *     the gateway's), and an offer then freshness(8, big-endian) MAC(32)
 *     = HMAC-SHA-256(the gateway's offer key, "alkr2 offer" || the
 *     request up to the MAC)
 *   and gets one status byte: 0 joined (bytes follow), 1 malformed
 *   request, 2 unknown token, 3 no offer came within wait_ns, 4 the offer
 *   expired (or gave way to a fresher one of its gateway), 5 an offer not
 *   proven (an id the relay takes no offers from, a MAC that does not
 *   fit, a freshness not above that gateway's last) - then the relay
 *   closes it. A client's request meets the live offer with the same
 *   token and id refreshed last (ties: the fresher); it waits up to
 *   wait_ns for one. An offer lives offer_lifetime_ns from its request or
 *   its last 'R' byte (a refresh); once joined the gateway sends 'S' and
 *   the relay drops the 'R's before it. A pair ends when either side
 *   closes (what it sent still reaches the other), or after
 *   idle_timeout_ns with no byte either way; a connection that does not
 *   take its last bytes is closed after request_timeout_ns. Bounds:
 *   max_conns connections, offers_per_gateway live offers per gateway
 *   (a new one ends its stalest), and buffer_size bytes held toward each
 *   connection (handle_input takes what fits: the caller stops reading
 *   that socket until the other side drains). Memory:
 *   alkt_relay_mem_size(cfg), about max_conns * (buffer_size + 320)
 *   bytes. Queued bytes are not a deadline: poll the socket for writing
 *   while transmit_peek has any.
 *
 *   Trust: the relay token is in every client's config - it lets a party
 *   join, nothing more. Offering takes the gateway's offer key (the
 *   relay's cfg.gateways; the gateway's control plane relay item
 *   offer_key), which clients never hold: a token holder cannot offer,
 *   a recorded offer replayed is not fresh, and a gateway's own offers
 *   crowd out only its own stalest. The relay itself is trusted with
 *   nothing: it sees lengths and timing; whatever it changes, drops,
 *   replays or splices wrongly fails a MAC at the peers, so the worst it
 *   can do is not deliver (the client then tries its next path). What a
 *   token holder still can do: join a real offer and waste it (the
 *   gateway says nothing to a HELLO that proves nothing, closes, and
 *   offers again), as any party that can reach a gateway directly costs
 *   it a connection; bounding that per source is the relay operator's.
 *
 * CLIENT AND GATEWAY
 *
 *   Both are an alkt_node holding up to max_peers sessions, each with its
 *   own connection; the node asks the caller to CONNECT and CLOSE sockets
 *   (events) and takes their bytes. One loop serves both roles: after
 *   any input, timeout or command, alkt_node_poll_event until 0; sleep
 *   until alkt_node_poll_timeout.
 *
 *   Control plane: alkt_node_control takes decoded control messages. A
 *   section present replaces the node's; each revocation removes every
 *   authorization of its client and resource. A new relay list starts afresh: a gateway offers at
 *   each of its relays at once, with no backoff left from the old list.
 *   Authorizations expire at their `expires` second:
 *   cfg.epoch_ns is the Unix time (ns) at now == 0.
 *
 *   The rule (alkt_gateway_authorize; the client applies the same one
 *   before it opens): an open is allowed when a live authorization of
 *   the client names a resource of this gateway that covers it - a
 *   direct tcp/udp open whose host is an IP inside the resource's CIDR
 *   with the port in its ranges (none: every port) and the protocol in
 *   its list (none: all); a forwarded open whose bind address (absent:
 *   0.0.0.0) and listen port are covered the same way. Host names and
 *   unix sockets are never covered (resolve names before opening). The
 *   gateway checks every open; after every control message and at every
 *   expiry it checks its open channels again and resets those no longer
 *   covered with ALKT_CODE_REVOKED (ALKT_CODE_UNAUTHORIZED refuses opens).
 *
 *   Sessions: the client opens a session per gateway, keyed by the
 *   secret of the authorization of the first resource it opens there
 *   (taken again before every attempt until the session is established,
 *   so a changed secret is used), and names itself "client/resource" in
 *   its HELLO; the gateway finds that authorization (it must be live),
 *   checks the HELLO's MAC under its secret and its freshness against
 *   the last one taken for that (client, resource) - a name it does not
 *   serve is checked under a decoy key, so both cost the same - and
 *   until both pass it answers nothing and keeps nothing: the connection
 *   is closed. A resume goes to the session it names, once its token is
 *   proven; only then is that session's old connection dropped. A new
 *   session means the client started again (a client keeps one session
 *   per gateway): every session of that client's at the gateway ends
 *   (one that was established with PEER_DOWN), and the new one takes a
 *   free slot, or one whose handshake never finished and whose
 *   connection is gone. Everyone else's established sessions keep their
 *   slots until their resume windows end; with none free the client gets
 *   a proven REFUSE,
 *   ALKT_ERR_BUSY, and the gateway's app ALKT_REV_OPEN_REFUSED (for its
 *   log; refused opens are told there too, with the client and target).
 *
 *   Connections before proof (gateway): alkt_node_accept_from(from)
 *   takes each incoming connection with its source address. One holds
 *   no session, only its connection slot and the HELLO's bytes, for at
 *   most connect_timeout_ns; at most pending_per_source of them per
 *   address, and when the table is full a new connection takes the
 *   place of the oldest unproven one (its CLOSE comes as an event, code
 *   ALKT_ERR_BUSY). So strangers can slow a client's handshake down by
 *   their share of the table, never keep it out: a proven client always
 *   gets a session slot if one is free. A client whose HELLOs get no
 *   answer is told ALKT_ERR_UNANSWERED (PATH_FAILED): the gateway does
 *   not take its name or secret, its clock is behind the last HELLO the
 *   gateway took, or - passing - its connection gave way to newer ones.
 *
 *   Paths (client): the direct address (alkt_client_add_gateway), then
 *   each relay of the control plane (relays with an IP address), in that
 *   order or relays first (cfg.relay_first). A path fails when its
 *   connect fails, the relay refuses, the connection closes or stalls
 *   (connect_timeout_ns) before the handshake, or the handshake fails;
 *   then the next path is tried at once and the app is told
 *   (ALKT_REV_PATH_FAILED: where, and the code - ALKT_ERR_NOT_CONNECTED,
 *   _RELAY_REFUSED, _NO_OFFER, _HANDSHAKE_TIMEOUT, _AUTH, ...). After a
 *   whole round fails the
 *   client waits b/2 + a drawn part of b/2, b = backoff_min_ns doubling
 *   per failed round up to backoff_max_ns. A connection that worked and
 *   dropped is made again at once, from the first path, and the session
 *   resumes: open channels survive relay deaths, path changes and
 *   roaming (alkt_client_roamed). The gateway keeps offers_per_relay
 *   spare connections at each relay, refreshed every offer_refresh_ns
 *   and replaced by a new one (CLOSE, then CONNECT) when nobody joined
 *   it for 4 * offer_refresh_ns: a spare dropped silently on the way (a
 *   NAT or middlebox forgetting it) is never told to the gateway.
 *
 *   Forwarded opens (ssh -R): the gateway asks the caller to LISTEN; per
 *   connection it accepts, alkt_gateway_forward opens a channel back with
 *   {"listen":port,"substrate":...,"host":origin IP}; the client is told
 *   (ALKT_REV_INCOMING) only for a listen it asked for, and refuses the
 *   rest itself.
 *
 *   Entropy: 32 bytes of seed at init, new ones at every init (the same
 *   seed again repeats the node's nonces: a HELLO recorded before would
 *   then make the very session it came from); nonces and jitter are
 *   HMAC-SHA-256(seed, "alkt1 drbg" || counter). Memory:
 *   alkt_node_mem_size(cfg), about max_peers * (alkt_session_mem_size +
 *   max_channels * 700) + the control tables; nothing grows.
 *
 * SECURITY
 *
 *   Who may do what (the posture of WireGuard in a pre-shared-secret
 *   design: silent to strangers, no state before proof), each row backed
 *   by named tests - unit (tests/test_alktunnel_*.h), the fuzz harnesses'
 *   attackers with their committed seeds, and the process test
 *   (tests/tunnel_process.sh: whole alktunnel processes on loopback):
 *
 *   An off-path stranger (no secret; any bytes to any listening port)
 *   gets silence: a gateway answers a HELLO only once its MAC and
 *   freshness check out, treats a name it does not serve like a wrong
 *   MAC (same work, same silence), and keeps for it only a connection
 *   slot for connect_timeout_ns, pending_per_source per address, which
 *   any newer connection can take. It cannot end, stall or displace a
 *   session: before a peer's proof nothing it sends (a GOAWAY, a REFUSE, a
 *   replayed or changed HELLO, noise) ends more than the connection it
 *   came on, and a resume touches a live connection only after its token
 *   is proven. It can make a client's handshake wait for a slot and cost
 *   the gateway an HMAC per HELLO.
 *     roles_gateway_is_silent_to_strangers,
 *     roles_unproven_connections_make_room, session_refuses_forged_handshakes,
 *     session_hello_freshness_stops_replays, session_hello_fields_are_checked;
 *     fuzz/session.c mode 4 (corpus/session/offpath-attacker-*), tunnel_sim's
 *     outsider (corpus/tunnel_sim/offpath-outsider-*); the process test's 24
 *     attacking connections with 5 fresh clients; planted bugs
 *     hello-mac-not-checked, hello-freshness-not-checked.
 *   An on-path party (sees and can change one path's bytes) learns the
 *   names in the HELLOs (client and resource), the client's clock (the
 *   freshness), sizes and timing; it can cut that path. It cannot read
 *   or change channel bytes (a changed record ends the connection, and
 *   the session resumes), end a session beyond its own resume window, or
 *   make a replay do anything (HELLO freshness, implicit record counters,
 *   a resume proof bound to the freshness).
 *     sealed_channel_bytes_never_show_on_the_wire,
 *     sealed_changed_record_ends_the_connection,
 *     sealed_replayed_reordered_and_cut_records,
 *     sealed_resume_derives_fresh_keys, session_resumes_exactly_once;
 *     fuzz/session.c (flips, cuts, injected GOAWAYs and REFUSEs); planted bug
 *     unproven-goaway-ends-session.
 *   A relay-token holder (any client) can join offers by the rules and
 *   nothing more: offering takes the gateway's offer key, a replayed
 *   offer is stale, and a client joins the offer refreshed last, so
 *   parked offers do not win.
 *     relay_offers_are_proven_fresh_and_bounded,
 *     relay_refuses_bad_requests_with_a_status; fuzz/roles.c's relay model;
 *     the process test's 20 replayed offers with 4 relay-only clients; planted
 *     bug relay-offer-not-proven.
 *   A client of another resource holds its own secret: it reaches its
 *   own resources only - every open checked against a live
 *   authorization, re-checked at every control message and expiry - and
 *   ends or displaces only its own sessions.
 *     roles_authorization_decides_every_open,
 *     roles_gateway_refuses_what_the_client_should_not_open,
 *     roles_revocation_resets_live_channels_at_once,
 *     roles_expiry_resets_live_channels,
 *     roles_others_sessions_keep_their_slots; tunnel_sim's authorization
 *     model.
 *   A compromised relay holds everything relayed and can drop or delay
 *   it; it reads and forges nothing the session accepts (the session's
 *   keys never pass it), and a client moves to its next path.
 *     roles_relay_death_resumes_on_the_direct_path, the sealed_* tests;
 *     tunnel_sim's relay faults.
 *   Keys: wiped at close, and by alkt_session_wipe / alkt_node_wipe /
 *   alkt_relay_wipe for callers that keep the memory.
 *     sealed_close_and_wipe_forget_every_key,
 *     roles_unproven_connections_make_room.
 *   Not covered: a party holding a client's secret is that client
 *   (revoke it); a gateway that starts again has forgotten the freshness
 *   it took, so a HELLO recorded before then is fresh to it once - it
 *   gets a handshake that cannot finish (no secret), whose slot any
 *   proven client's new session takes once its connection is gone; the
 *   freshness needs the
 *   client's wall clock to move
 *   forward (a client whose clock went back is silent until it passes
 *   the last HELLO taken); denial by volume (a flood of connections or
 *   bandwidth) is bounded per connection, not prevented.
 *
 * DESIGN NOTES
 *
 *   Why a pull parser: it reads the document once, front to back, and keeps
 *   only a bit per nesting level (whether it is an object or an array), so
 *   memory is fixed (sizeof(alkt_json_parser)), cost is strictly linear in
 *   the input, and the typed decoders consume tokens as they come - no token
 *   array to size, no parent search. Tokens point into the caller's input
 *   (zero-copy); string tokens are raw (escapes still in) and unescaped only
 *   into the typed field that needs them.
 *
 *   Strictness (RFC 8259 and nothing more): one top-level value of any type
 *   with optional whitespace (space, tab, LF, CR only) around it; no
 *   comments, trailing commas, single quotes, NaN/Infinity, leading `+`,
 *   leading zeros, bare `.5`/`5.`/`1e`; raw control characters in strings
 *   refused; raw bytes must be UTF-8 per RFC 3629 (no overlongs, no encoded
 *   surrogates, nothing above U+10FFFF, no truncated sequences). A byte
 *   order mark is not skipped: it is refused like any other stray byte
 *   (RFC 8259 §8.1: parsers MAY ignore it; we choose not to). Numbers of any
 *   magnitude pass the reader; the typed layer range-checks them. A `\u`
 *   escape of an unpaired surrogate passes the reader (the grammar allows
 *   it) and is refused by alkt_json_unescape (ALKT_ERR_BAD_SURROGATE), so
 *   no typed field ever holds one. Duplicate keys pass the reader and are
 *   refused by every typed decoder.
 *
 *   A valid, plain control message or open params (no escapes or
 *   non-ASCII bytes in its strings) is read by a one-pass fast path that
 *   builds no tokens. It declines at the first thing it does not expect,
 *   and the token-based decoder - the reference, which reports every error
 *   with its context - decodes the document again; the two give identical
 *   results wherever the fast path accepts (fuzz/params.c checks that on
 *   every input). A refused message thus costs up to two passes. Both
 *   paths, and the control encoder, read one table per object schema
 *   (ALKT__RESOURCE_SCHEMA and its siblings, in the implementation).
 *
 *   Limits: depth (nested arrays/objects) default 64, at most
 *   ALKT_JSON_DEPTH_LIMIT (1024); size default 1 MiB (larger input is
 *   refused without being parsed). Control-message arrays go into the
 *   caller's arrays (pointer + capacity in alkt_control); more items than
 *   the capacity is ALKT_ERR_TOO_MANY, never a silent truncation.
 *
 *   Structs: decoders zero the whole out-struct first and fill it, so two
 *   decodes of equal documents compare equal with memcmp. Build your own
 *   structs from a zeroed one for the same property. Strings are stored
 *   NUL-terminated in fixed arrays sized by the limits above.
 *
 *   Threading: a parser, decode call or session per thread at a time; the
 *   only shared state is the SHA-extension answer, asked once (a race
 *   between first callers writes the same value).
 *
 * ERRORS
 *
 *   Every error is a negative ALKT_ERR_* code (alkt_strerror gives its
 *   text) plus an alkt_error: `offset` is the byte offset in the input of
 *   the offending byte or value (of the object's `{` for a missing field;
 *   equal to the input length when the input ended early), `line`/`column`
 *   1-based (column in bytes), and `path` the field path such as
 *   "resources[2].ports[0].to" ("" at the top level; an unknown key is
 *   shown with bytes outside 0x21..0x7E as '?' and, past 32 bytes, cut
 *   and followed by "..."). Encoders report invalid struct fields the
 *   same way, with offset 0. Argument errors fill err too (offset 0).
 *
 *   Reader (the offset is the first byte that cannot be accepted):
 *     ALKT_ERR_TOO_LARGE       input over max_size (offset = max_size;
 *                              line and column 0: not counted, so the
 *                              refusal reads none of the input)
 *     ALKT_ERR_TOO_DEEP        a container past max_depth (at its bracket)
 *     ALKT_ERR_UNEXPECTED_END  the input ends inside a value (offset = len)
 *     ALKT_ERR_SYNTAX          a byte the grammar does not allow there
 *     ALKT_ERR_BAD_NUMBER      "01", "1.", ".5", "1e", "+1", "1.2.3"
 *     ALKT_ERR_BAD_ESCAPE      "\x", "\u12G4" (at the bad character)
 *     ALKT_ERR_CONTROL_CHAR    a raw byte below 0x20 inside a string
 *     ALKT_ERR_BAD_UTF8        overlong, surrogate, > U+10FFFF, bad
 *                              continuation (at the first bad byte)
 *     ALKT_ERR_TRAILING_DATA   anything but whitespace after the value
 *   Typed decoders (offset at the key, or at the value's first byte):
 *     ALKT_ERR_WRONG_TYPE      e.g. a string where a number belongs
 *     ALKT_ERR_UNKNOWN_FIELD   a key the schema does not have
 *     ALKT_ERR_DUPLICATE_FIELD a key given twice (escaped spellings too)
 *     ALKT_ERR_MISSING_FIELD   at the object's '{'; path names the field
 *     ALKT_ERR_FIELD_NOT_ALLOWED  a field the other fields exclude
 *                              (unix + port, tcp + path, listen + port)
 *     ALKT_ERR_NOT_INTEGER     a fraction or exponent in an integer field
 *     ALKT_ERR_OUT_OF_RANGE    port 0 or > 65535, listen 0, expires
 *                              > 2^53-1, negative, more than 64 bits
 *     ALKT_ERR_BAD_SURROGATE   an unpaired \u surrogate (at its escape)
 *     ALKT_ERR_NUL_IN_STRING   \u0000 in a string field
 *     ALKT_ERR_STRING_TOO_LONG a string over its field's limit
 *     ALKT_ERR_EMPTY           "" for an id/host/path/token, [] for
 *                              ports/protocols
 *     ALKT_ERR_BAD_ENUM        substrate/protocol not in the list (and
 *                              "unix" with listen)
 *     ALKT_ERR_BAD_ADDRESS / _BAD_HOSTNAME / _BAD_CIDR  malformed address,
 *                              name or CIDR (host bits set included)
 *     ALKT_ERR_BAD_VALUE       an id, token or secret with a forbidden byte
 *                              or a secret of the wrong length/case
 *     ALKT_ERR_DUPLICATE_VALUE a protocol listed twice
 *     ALKT_ERR_BAD_RANGE       a port range with from > to (at "to")
 *     ALKT_ERR_TOO_MANY        more items than the caller's capacity or
 *                              ALKT_PORT_RANGES_MAX (at the first extra)
 *   Encoders: any of the typed codes above for an invalid struct field,
 *     ALKT_ERR_MISSING_FIELD for a control message with no section,
 *     ALKT_ERR_BUFFER_TOO_SMALL when cap is short (nothing promised in
 *     buf), ALKT_ERR_ARG for buf NULL with cap > 0.
 */
#ifndef ALKTUNNEL_H
#define ALKTUNNEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef ALKTUNNEL_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define ALKTDEF static __attribute__((unused))
#else
#define ALKTDEF static
#endif
#else
#define ALKTDEF extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- results -------------------------------------------------------------- */
#define ALKT_RESULT_LIST(X)                                                    \
    X(ALKT_OK, 0, "ok")                                                        \
    X(ALKT_ERR_ARG, -1, "invalid argument")                                    \
    X(ALKT_ERR_TOO_LARGE, -2, "input larger than the size limit")             \
    X(ALKT_ERR_TOO_DEEP, -3, "nesting deeper than the depth limit")           \
    X(ALKT_ERR_UNEXPECTED_END, -4, "input ends inside a JSON value")          \
    X(ALKT_ERR_SYNTAX, -5, "unexpected character")                            \
    X(ALKT_ERR_BAD_NUMBER, -6, "malformed number")                            \
    X(ALKT_ERR_BAD_ESCAPE, -7, "malformed escape in a string")                \
    X(ALKT_ERR_CONTROL_CHAR, -8, "raw control character in a string")         \
    X(ALKT_ERR_BAD_UTF8, -9, "invalid UTF-8")                                  \
    X(ALKT_ERR_TRAILING_DATA, -10, "data after the top-level value")          \
    X(ALKT_ERR_WRONG_TYPE, -11, "value has the wrong JSON type")              \
    X(ALKT_ERR_UNKNOWN_FIELD, -12, "unknown field")                           \
    X(ALKT_ERR_DUPLICATE_FIELD, -13, "field given twice")                     \
    X(ALKT_ERR_MISSING_FIELD, -14, "required field missing")                  \
    X(ALKT_ERR_FIELD_NOT_ALLOWED, -15,                                         \
      "field not allowed together with the other fields")                    \
    X(ALKT_ERR_NOT_INTEGER, -16, "number is not an integer")                  \
    X(ALKT_ERR_OUT_OF_RANGE, -17, "number out of range")                      \
    X(ALKT_ERR_BAD_SURROGATE, -18, "unpaired surrogate in a \\u escape")      \
    X(ALKT_ERR_NUL_IN_STRING, -19, "U+0000 in a string")                      \
    X(ALKT_ERR_STRING_TOO_LONG, -20, "string longer than its limit")          \
    X(ALKT_ERR_EMPTY, -21, "empty where a value is required")                 \
    X(ALKT_ERR_BAD_ENUM, -22, "not one of the allowed values")                \
    X(ALKT_ERR_BAD_ADDRESS, -23, "malformed IP address")                      \
    X(ALKT_ERR_BAD_HOSTNAME, -24, "malformed host name")                      \
    X(ALKT_ERR_BAD_CIDR, -25, "malformed CIDR")                               \
    X(ALKT_ERR_BAD_VALUE, -26, "string has characters its field forbids")     \
    X(ALKT_ERR_DUPLICATE_VALUE, -27, "value repeated in a set")               \
    X(ALKT_ERR_BAD_RANGE, -28, "range with from > to")                        \
    X(ALKT_ERR_TOO_MANY, -29, "more items than the capacity")                 \
    X(ALKT_ERR_BUFFER_TOO_SMALL, -30, "output buffer too small")               \
    X(ALKT_ERR_PROTOCOL, -31, "the peer broke the session protocol")          \
    X(ALKT_ERR_FRAME_TOO_LARGE, -32, "frame larger than the frame limit")     \
    X(ALKT_ERR_FLOW_CONTROL, -33, "the peer sent past its window")            \
    X(ALKT_ERR_AUTH, -34, "the peer failed authentication")                   \
    X(ALKT_ERR_VERSION, -35, "no protocol version in common")                 \
    X(ALKT_ERR_RESUME_REFUSED, -36, "resumption refused (unknown session or "  \
      "bad token)")                                                            \
    X(ALKT_ERR_RESUME_EXPIRED, -37, "the resume window has passed")           \
    X(ALKT_ERR_HANDSHAKE_TIMEOUT, -38, "the handshake took too long")         \
    X(ALKT_ERR_IDLE_TIMEOUT, -39, "nothing heard from the peer for too long")  \
    X(ALKT_ERR_GOAWAY, -40, "the peer closed the session")                    \
    X(ALKT_ERR_CLOSED, -41, "the session is closed")                          \
    X(ALKT_ERR_STATE, -42, "not possible in this state")                      \
    X(ALKT_ERR_NO_CHANNEL, -43, "no such channel")                            \
    X(ALKT_ERR_CHANNELS_FULL, -44, "no free channel")                         \
    X(ALKT_ERR_NOMEM, -45, "caller memory too small")                         \
    X(ALKT_ERR_NOT_CONNECTED, -46, "the connection is gone")                  \
    X(ALKT_ERR_WOULD_BLOCK, -47, "no room now: try after the peer's acks")    \
    X(ALKT_ERR_RESET, -48, "the channel was reset")                           \
    X(ALKT_ERR_RELAY_REFUSED, -49, "the relay refused the request or token")  \
    X(ALKT_ERR_NO_OFFER, -50, "the relay had no connection from the gateway")  \
    X(ALKT_ERR_DECRYPT, -51, "a record failed authentication (changed, "      \
      "replayed, reordered or cut on the path)")                             \
    X(ALKT_ERR_CIPHER, -52, "one peer is encrypted, the other plaintext")     \
    X(ALKT_ERR_NONCE_LIMIT, -53, "the record counter of a key ran out")      \
    X(ALKT_ERR_STALE_HELLO, -54, "a HELLO no fresher than one accepted "      \
      "before (replayed, or the client's clock went back)")                  \
    X(ALKT_ERR_BUSY, -55, "the gateway has no free session slot")           \
    X(ALKT_ERR_UNANSWERED, -56, "the gateway closed the connection without "   \
      "answering our HELLO (it does not take our name or secret, the HELLO "  \
      "was stale, or it made room for other connections)")

typedef enum alkt_result {
#define ALKT__ENUM(name, value, text) name = value,
    ALKT_RESULT_LIST(ALKT__ENUM)
#undef ALKT__ENUM
    ALKT_RESULT_END_
} alkt_result;
/* The lowest code (the list's last entry: keep new codes below it and
 * move this along); a wire code outside [LOWEST, 0) is no library code. */
#define ALKT__RESULT_LOWEST ALKT_ERR_UNANSWERED

#define ALKT_PATH_MAX 128
/* A typed decoder (alkt_*_decode) that succeeds leaves it all zero: code
 * ALKT_OK, no offset, line or column, path "". The reader
 * (alkt_json_error, alkt_json_validate) reports a valid document as code
 * ALKT_OK at offset 0, line 1, column 1, path "". */
typedef struct alkt_error {
    int code;            /* ALKT_OK or a negative ALKT_ERR_* */
    size_t offset;       /* byte offset of the problem in the input */
    size_t line, column; /* 1-based position of offset (column in bytes) */
    char path[ALKT_PATH_MAX]; /* field path, "" = top level */
} alkt_error;

/* ---- JSON reader ---------------------------------------------------------- */
#define ALKT_JSON_DEPTH_DEFAULT 64u
#define ALKT_JSON_DEPTH_LIMIT 1024u
#define ALKT_JSON_SIZE_DEFAULT ((size_t)1 << 20)

typedef struct alkt_json_limits {
    size_t max_depth; /* 0 = 64; at most ALKT_JSON_DEPTH_LIMIT */
    size_t max_size;  /* bytes; 0 = 1 MiB */
} alkt_json_limits;

typedef enum alkt_json_type {
    ALKT_JSON_NONE = 0,
    ALKT_JSON_OBJECT,     /* `{` */
    ALKT_JSON_OBJECT_END, /* `}` */
    ALKT_JSON_ARRAY,      /* `[` */
    ALKT_JSON_ARRAY_END,  /* `]` */
    ALKT_JSON_KEY,        /* an object key (the `:` after it is consumed) */
    ALKT_JSON_STRING,
    ALKT_JSON_NUMBER,
    ALKT_JSON_TRUE,
    ALKT_JSON_FALSE,
    ALKT_JSON_NULL,
    ALKT_JSON_END         /* the document is complete and valid */
} alkt_json_type;

/* token flags */
#define ALKT_JSON_ESCAPED 1u  /* KEY/STRING contains backslash escapes */
#define ALKT_JSON_MINUS 2u    /* NUMBER starts with '-' */
#define ALKT_JSON_FRACTION 4u /* NUMBER has a fraction part */
#define ALKT_JSON_EXPONENT 8u /* NUMBER has an exponent part */

typedef struct alkt_json_token {
    alkt_json_type type;
    const char *ptr; /* KEY/STRING: bytes between the quotes, raw;
                        NUMBER: the number's text; else the token's byte */
    size_t len;
    size_t offset;   /* offset of the token's first byte (a string's quote) */
    unsigned flags;
    size_t depth;    /* containers open around the token */
} alkt_json_token;

/* Do not rely on the size or contents of this type. */
typedef struct alkt_json_parser {
    const char *buf;
    size_t len, pos;
    size_t depth, max_depth;
    int state;
    int error;
    size_t error_offset;
    unsigned char is_object[ALKT_JSON_DEPTH_LIMIT / 8];
} alkt_json_parser;

ALKTDEF int alkt_json_init(alkt_json_parser *p, const char *json, size_t len,
                           const alkt_json_limits *limits);
ALKTDEF int alkt_json_next(alkt_json_parser *p, alkt_json_token *token);
ALKTDEF int alkt_json_error(const alkt_json_parser *p, alkt_error *err);
ALKTDEF int alkt_json_validate(const char *json, size_t len,
                               const alkt_json_limits *limits, alkt_error *err);
/* Decode a KEY/STRING token's raw bytes into UTF-8. Returns ALKT_OK,
 * ALKT_ERR_STRING_TOO_LONG (out would need more than cap bytes; *out_len
 * counts the bytes written before the first piece - a run of plain bytes
 * or one escape - that did not fit, and *bad_offset is that piece's
 * offset), ALKT_ERR_BAD_SURROGATE or ALKT_ERR_BAD_ESCAPE (raw
 * not from the reader); *bad_offset (if not NULL) gets the offset in raw of
 * the problem. Writes no NUL terminator. */
ALKTDEF int alkt_json_unescape(const char *raw, size_t len, char *out,
                               size_t cap, size_t *out_len,
                               size_t *bad_offset);
/* Integer value of a NUMBER token: ALKT_ERR_NOT_INTEGER for a fraction or
 * exponent, ALKT_ERR_OUT_OF_RANGE when it does not fit (or, for u64, is
 * negative; "-0" is 0). */
ALKTDEF int alkt_json_number_u64(const alkt_json_token *t, uint64_t *value);
ALKTDEF int alkt_json_number_i64(const alkt_json_token *t, int64_t *value);
/* A NUMBER token as the nearest double (ties to even): exact by
 * construction for up to 15 significant digits and a power of ten up to
 * 22, else through the C library's strtod (correctly rounded in glibc and
 * musl), made independent of the locale's decimal point. Returns ALKT_OK,
 * ALKT_ERR_OUT_OF_RANGE when the magnitude is beyond DBL_MAX (a value
 * below the smallest double rounds to a subnormal or to zero, keeping
 * the sign: ALKT_OK), ALKT_ERR_TOO_LARGE for number text longer than
 * ALKT_JSON_NUMBER_TEXT_MAX bytes, ALKT_ERR_WRONG_TYPE for another token.
 */
#define ALKT_JSON_NUMBER_TEXT_MAX 1024u
ALKTDEF int alkt_json_number_double(const alkt_json_token *t, double *value);
/* t is the token alkt_json_next just returned: for OBJECT or ARRAY the
 * parser is moved past the matching end (its END token consumed, never
 * seen by the caller); for a scalar, KEY (its value is skipped too) or an
 * END token nothing more is read. ALKT_OK, or the reader's error. */
ALKTDEF int alkt_json_skip(alkt_json_parser *p, const alkt_json_token *t);
/* Inside an object - right after its OBJECT token, or after a member's
 * value - reads on to the member whose key is `name` (len bytes, compared
 * with the key's escapes decoded), skipping the values of the members
 * before it. ALKT_OK: *key is that KEY and the parser is at its value;
 * ALKT_ERR_MISSING_FIELD: the object ended first (its OBJECT_END read:
 * the parser is past the object); ALKT_ERR_STATE: the next token was not
 * a key or the object's end - the parser was not between members (that
 * token is read); or the reader's error. A name given twice is found at
 * its first. */
ALKTDEF int alkt_json_find_key(alkt_json_parser *p, const char *name,
                               size_t len, alkt_json_token *key);
/* 1 when a KEY or STRING token's text, escapes decoded, is exactly the len
 * bytes at s; else 0 (also for another token type). */
ALKTDEF int alkt_json_string_equal(const alkt_json_token *t, const char *s,
                                   size_t len);

/* ---- addresses ------------------------------------------------------------ */
typedef struct alkt_ip {
    unsigned char family;    /* 4 or 6 (0 = none) */
    unsigned char bytes[16]; /* network order; IPv4 uses the first 4 */
} alkt_ip;
/* Longest address text accepted, + NUL (IPv6 with a dotted quad);
 * alkt_ip_format writes at most 40 bytes with the NUL. */
#define ALKT_IP_TEXT_MAX 46

ALKTDEF int alkt_ip_parse(const char *s, size_t len, alkt_ip *out);
ALKTDEF size_t alkt_ip_format(const alkt_ip *ip, char out[ALKT_IP_TEXT_MAX]);
/* 1 when s is a host name as HOST in the top comment says, else 0. */
ALKTDEF int alkt_hostname_valid(const char *s, size_t len);

/* ---- typed params ---------------------------------------------------------
 * Build structs from a zeroed one: encoders read only the fields in use,
 * and decode(encode(p)) == p compares whole structs (memcmp). */
#define ALKT_HOST_MAX 253
#define ALKT_UNIX_PATH_MAX 107
#define ALKT_ID_MAX 64
#define ALKT_TOKEN_MAX 128
#define ALKT_SECRET_MIN 16
#define ALKT_SECRET_MAX 64
#define ALKT_PORT_RANGES_MAX 16
#define ALKT_EXPIRES_MAX ((((uint64_t)1) << 53) - 1)

typedef enum alkt_host_kind {
    ALKT_HOST_NONE = 0, /* absent (forwarded bind: any address) */
    ALKT_HOST_IP,       /* an IP literal, in `ip` */
    ALKT_HOST_NAME      /* a DNS name, in `name` */
} alkt_host_kind;

typedef struct alkt_host {
    alkt_host_kind kind;
    alkt_ip ip;
    char name[ALKT_HOST_MAX + 1];
} alkt_host;

typedef enum alkt_substrate {
    ALKT_SUBSTRATE_NONE = 0,
    ALKT_SUBSTRATE_TCP,
    ALKT_SUBSTRATE_UDP,
    ALKT_SUBSTRATE_UNIX
} alkt_substrate;
/* "tcp", "udp", "unix" as in the JSON, or NULL for any other value. */
ALKTDEF const char *alkt_substrate_name(alkt_substrate s);

typedef enum alkt_open_kind {
    ALKT_OPEN_NONE = 0,
    ALKT_OPEN_DIRECT,   /* connect to host:port or path */
    ALKT_OPEN_FORWARDED /* listen on `listen` and open channels back */
} alkt_open_kind;

typedef struct alkt_open_params {
    alkt_open_kind kind;
    alkt_substrate substrate;
    alkt_host host;   /* direct tcp/udp: target; forwarded: bind (IP/none) */
    uint16_t port;    /* direct tcp/udp */
    uint16_t listen;  /* forwarded */
    char path[ALKT_UNIX_PATH_MAX + 1]; /* direct unix */
} alkt_open_params;

typedef struct alkt_listen_reply {
    alkt_ip address;
    uint16_t port;
} alkt_listen_reply;

#define ALKT_PROTO_TCP 1u
#define ALKT_PROTO_UDP 2u
#define ALKT_PROTO_ICMP 4u

typedef struct alkt_port_range {
    uint16_t from, to;
} alkt_port_range;

typedef struct alkt_resource {
    char id[ALKT_ID_MAX + 1];
    alkt_ip network;            /* CIDR address, host bits zero */
    unsigned char prefix_len;   /* CIDR prefix */
    size_t port_range_count;    /* 0 = "ports" absent: every port */
    alkt_port_range port_ranges[ALKT_PORT_RANGES_MAX];
    unsigned protocols;         /* ALKT_PROTO_* bits; 0 = absent: all */
    char gateway[ALKT_ID_MAX + 1];
} alkt_resource;

typedef struct alkt_authorization {
    char client[ALKT_ID_MAX + 1];
    char resource[ALKT_ID_MAX + 1];
    size_t secret_len;
    unsigned char secret[ALKT_SECRET_MAX];
    uint64_t expires; /* seconds since the Unix epoch */
} alkt_authorization;

typedef struct alkt_revocation {
    char client[ALKT_ID_MAX + 1];
    char resource[ALKT_ID_MAX + 1];
} alkt_revocation;

typedef struct alkt_relay {
    char id[ALKT_ID_MAX + 1];
    alkt_host address;
    uint16_t port;
    char token[ALKT_TOKEN_MAX + 1];
    unsigned char offer_key[ALKT_SECRET_MAX]; /* gateway: proves its offers
                                                 at this relay (0 bytes:
                                                 it offers none there) */
    size_t offer_key_len;
} alkt_relay;

/* Sections of a control message. Before decoding, set each array pointer
 * and capacity (a NULL array with capacity 0 accepts only an empty or
 * absent section); decoding sets has_* and the counts. For encoding, a
 * section is written when its has_* is set. */
typedef struct alkt_control {
    int has_resources, has_authorizations, has_revocations, has_relays;
    alkt_resource *resources;
    size_t resource_count, resource_cap;
    alkt_authorization *authorizations;
    size_t authorization_count, authorization_cap;
    alkt_revocation *revocations;
    size_t revocation_count, revocation_cap;
    alkt_relay *relays;
    size_t relay_count, relay_cap;
} alkt_control;

ALKTDEF int alkt_open_params_decode(const char *json, size_t len,
                                    const alkt_json_limits *limits,
                                    alkt_open_params *out, alkt_error *err);
ALKTDEF ptrdiff_t alkt_open_params_encode(const alkt_open_params *p,
                                          char *buf, size_t cap,
                                          alkt_error *err);
/* A direct open of host:port over tcp or udp, built in *p (zeroed first):
 * host is len bytes, an IP literal (kind ALKT_HOST_IP, as the decoder
 * reads one) or else a DNS name. ALKT_OK with *p as alkt_open_params_decode
 * would give for the same fields; ALKT_ERR_ARG (NULL p or host, another
 * substrate), ALKT_ERR_OUT_OF_RANGE (port 0), ALKT_ERR_STRING_TOO_LONG
 * (len > ALKT_HOST_MAX), ALKT_ERR_EMPTY, ALKT_ERR_BAD_ADDRESS or
 * ALKT_ERR_BAD_HOSTNAME (what the decoder says of that host text), *p
 * zeroed. */
ALKTDEF int alkt_open_params_direct(alkt_open_params *p, alkt_substrate substrate,
                                    const char *host, size_t len, uint16_t port);
ALKTDEF int alkt_listen_reply_decode(const char *json, size_t len,
                                     const alkt_json_limits *limits,
                                     alkt_listen_reply *out, alkt_error *err);
ALKTDEF ptrdiff_t alkt_listen_reply_encode(const alkt_listen_reply *r,
                                           char *buf, size_t cap,
                                           alkt_error *err);
/* Lenient projection: 1 and both fields when the strict decode accepts the
 * text, else 0 and a zeroed *out. Never an error. */
ALKTDEF int alkt_listen_reply_project(const char *json, size_t len,
                                      alkt_listen_reply *out);
/* `out` carries the caller's arrays and capacities in; on return the
 * pointers and capacities are kept and everything else is set. */
ALKTDEF int alkt_control_decode(const char *json, size_t len,
                                const alkt_json_limits *limits,
                                alkt_control *out, alkt_error *err);
ALKTDEF ptrdiff_t alkt_control_encode(const alkt_control *c, char *buf,
                                      size_t cap, alkt_error *err);

ALKTDEF const char *alkt_strerror(int code);

/* ---- SHA-256, HMAC-SHA-256 ------------------------------------------------ */
#define ALKT_SHA256_SIZE 32
#define ALKT_SHA256_BLOCK 64

/* Streaming SHA-256 state; do not rely on the contents. */
typedef struct alkt_sha256_ctx {
    uint32_t h[8];
    uint64_t total;          /* bytes hashed so far */
    unsigned char buf[64];   /* partial block */
    size_t fill;             /* bytes used in buf */
} alkt_sha256_ctx;

ALKTDEF void alkt_sha256_init(alkt_sha256_ctx *c);
ALKTDEF void alkt_sha256_update(alkt_sha256_ctx *c, const void *data, size_t len);
/* Writes the digest and wipes *c; call alkt_sha256_init again to reuse it. */
ALKTDEF void alkt_sha256_final(alkt_sha256_ctx *c, unsigned char out[ALKT_SHA256_SIZE]);
ALKTDEF void alkt_sha256(const void *data, size_t len, unsigned char out[ALKT_SHA256_SIZE]);

/* Streaming HMAC-SHA-256 state; do not rely on the contents. */
typedef struct alkt_hmac_sha256_ctx {
    alkt_sha256_ctx inner, outer;
} alkt_hmac_sha256_ctx;

ALKTDEF void alkt_hmac_sha256_init(alkt_hmac_sha256_ctx *m, const void *key, size_t key_len);
ALKTDEF void alkt_hmac_sha256_update(alkt_hmac_sha256_ctx *m, const void *data, size_t len);
/* Writes the MAC and wipes *m; call alkt_hmac_sha256_init again to reuse it. */
ALKTDEF void alkt_hmac_sha256_final(alkt_hmac_sha256_ctx *m, unsigned char out[ALKT_SHA256_SIZE]);
ALKTDEF void alkt_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                              unsigned char out[ALKT_SHA256_SIZE]);

/* 1 when equal; time depends on len only, never on the contents */
ALKTDEF int alkt_ct_equal(const void *a, const void *b, size_t len);

/* ---- ChaCha20-Poly1305 (RFC 8439), X25519 (RFC 7748), HKDF (RFC 5869) ----
 * The encrypted session's primitives, usable on their own. Constant time:
 * no branch and no memory index depends on a key, a scalar, a plaintext or
 * a tag (checked under valgrind with the secrets marked undefined, see
 * tests/ctgrind.c); the lengths are public. */
#define ALKT_AEAD_KEY 32
#define ALKT_AEAD_NONCE 12
#define ALKT_AEAD_TAG 16
#define ALKT_X25519_SIZE 32

/* out = in XOR the ChaCha20 key stream from block `counter` (RFC 8439
 * 2.4); out may equal in. At most 2^32 - counter blocks of 64 bytes. */
ALKTDEF void alkt_chacha20(unsigned char *out, const unsigned char *in,
                           size_t len, const unsigned char key[ALKT_AEAD_KEY],
                           const unsigned char nonce[ALKT_AEAD_NONCE],
                           uint32_t counter);
/* The Poly1305 tag of msg under a one-time key (RFC 8439 2.5). */
ALKTDEF void alkt_poly1305(unsigned char tag[ALKT_AEAD_TAG], const void *msg,
                           size_t len, const unsigned char key[32]);
/* AEAD_CHACHA20_POLY1305 (RFC 8439 2.8): out gets len bytes of ciphertext
 * and the 16-byte tag after them; out may equal plain. A (key, nonce)
 * pair must never seal twice. */
ALKTDEF void alkt_aead_seal(unsigned char *out,
                            const unsigned char key[ALKT_AEAD_KEY],
                            const unsigned char nonce[ALKT_AEAD_NONCE],
                            const void *aad, size_t aad_len,
                            const void *plain, size_t len);
/* ALKT_OK and sealed_len - 16 bytes of plaintext in out; ALKT_ERR_AUTH when
 * the tag does not match (or sealed_len < 16), and then out is not written
 * at all: the tag is checked before anything is decrypted. out may equal
 * sealed. */
ALKTDEF int alkt_aead_open(unsigned char *out,
                           const unsigned char key[ALKT_AEAD_KEY],
                           const unsigned char nonce[ALKT_AEAD_NONCE],
                           const void *aad, size_t aad_len,
                           const void *sealed, size_t sealed_len);
/* X25519 (RFC 7748 5): out = scalar * point (u-coordinates, 32 bytes little
 * endian; the scalar is clamped, the point's top bit ignored). An all-zero
 * out means the point had small order: refuse it. */
ALKTDEF void alkt_x25519(unsigned char out[ALKT_X25519_SIZE],
                         const unsigned char scalar[ALKT_X25519_SIZE],
                         const unsigned char point[ALKT_X25519_SIZE]);
/* The public key of a private scalar: scalar * 9. */
ALKTDEF void alkt_x25519_base(unsigned char out[ALKT_X25519_SIZE],
                              const unsigned char scalar[ALKT_X25519_SIZE]);
/* HKDF-SHA-256 (RFC 5869): extract, then expand up to 255 * 32 bytes
 * (ALKT_ERR_ARG past that, nothing written). */
ALKTDEF void alkt_hkdf_extract(unsigned char prk[ALKT_SHA256_SIZE],
                               const void *salt, size_t salt_len,
                               const void *ikm, size_t ikm_len);
ALKTDEF int alkt_hkdf_expand(unsigned char *okm, size_t okm_len,
                             const unsigned char prk[ALKT_SHA256_SIZE],
                             const void *info, size_t info_len);

/* ---- session: one authenticated channel mux over one byte stream ----------
 * See SESSION in the top comment for the wire format and the rules. */
#define ALKT_PROTOCOL_VERSION 2u
#define ALKT_FRAME_HEADER 8u
#define ALKT_FRAME_PAYLOAD_MAX 16384u
#define ALKT_SEAL_BATCH_MAX 64u    /* alkt_session_config.seal_batch */
#define ALKT_NONCE_SIZE 32u
#define ALKT_SESSION_ID_SIZE 16u
#define ALKT_IDENTITY_MAX 129u  /* "client/resource": two IDs */
#define ALKT_REASON_MAX 64u
#define ALKT_CHANNELS_MAX 4096u
/* HELLO: fixed fields, where the ephemeral key, freshness and identity
 * length sit; a client's HELLO ends with a MAC */
#define ALKT__HELLO_FIXED 149u
#define ALKT__HELLO_EPH 108u
#define ALKT__HELLO_FRESH 140u
#define ALKT__HELLO_IDLEN 148u
#define ALKT__HELLO_MAC 32u
#define ALKT__HELLO_MAX (ALKT__HELLO_FIXED + ALKT_IDENTITY_MAX + ALKT__HELLO_MAC)
#define ALKT__REFUSE_LEN 34u  /* code(2) | MAC(32) */

typedef enum alkt_frame_type {
    ALKT_FRAME_HELLO = 0x01,
    ALKT_FRAME_AUTH = 0x02,
    ALKT_FRAME_REFUSE = 0x03,   /* server, in clear: a proven client's
                                   HELLO turned down, the refusal MACed */
    /* sequenced: logged, acknowledged, resent after a resume */
    ALKT_FRAME_OPEN = 0x10,
    ALKT_FRAME_OPEN_OK = 0x11,
    ALKT_FRAME_OPEN_ERR = 0x12,
    ALKT_FRAME_DATA = 0x13,
    ALKT_FRAME_EOF = 0x14,
    ALKT_FRAME_RESET = 0x15,
    ALKT_FRAME_WINDOW = 0x16,
    /* connection-level: never logged */
    ALKT_FRAME_ACK = 0x20,
    ALKT_FRAME_PING = 0x21,
    ALKT_FRAME_PONG = 0x22,
    ALKT_FRAME_GOAWAY = 0x23,
    ALKT_FRAME_REKEY = 0x24     /* encrypted: the sender's next record is
                                   under its next key */
} alkt_frame_type;

typedef struct alkt_session_config {
    int is_server;              /* 0: client (opens odd ids), 1: server */
    const unsigned char *secret;/* the shared secret, 16..64 bytes */
    size_t secret_len;
    const char *identity;       /* who we are, 1..129 bytes, bound by the MACs */
    size_t identity_len;
    uint32_t max_channels;      /* live channels at once; 0 = 16 */
    uint32_t channel_window;    /* receive buffer per channel; 0 = 65536 */
    uint32_t session_window;    /* receive credit of all channels together;
                                   0 = max_channels * channel_window */
    uint32_t log_size;          /* bytes of sent frames kept until acked (the
                                   resend log); 0 = 262144; >= 4 frames */
    uint32_t max_frame;         /* payload bytes per frame we accept and send,
                                   256..ALKT_FRAME_PAYLOAD_MAX; 0 = the max */
    uint64_t ping_interval_ns;  /* keepalive after this much silence; 0 = 15 s */
    uint64_t idle_timeout_ns;   /* connection dead after this long without
                                   input; 0 = 60 s */
    uint64_t handshake_timeout_ns; /* 0 = 10 s */
    uint64_t resume_window_ns;  /* how long a dropped session can resume;
                                   0 = 120 s */
    int plaintext;              /* 1: no encryption (both sides must say
                                   so: links already protected); 0, the
                                   default: every frame sealed */
    uint64_t rekey_records;     /* records sealed under one key before the
                                   next key; 2..2^60, 0 = 2^32 */
    uint64_t epoch_ns;          /* client: the Unix time (ns) at now == 0:
                                   each HELLO's freshness is epoch_ns + now
                                   (above the last one sent), and a server
                                   takes only HELLOs fresher than the last it
                                   accepted, so a client must not go back in
                                   time across restarts: give it the wall
                                   clock (0: now alone) */
    uint64_t freshness_floor;   /* server: take a client's HELLO only if its
                                   freshness is above this - the last one
                                   accepted under this secret (alkt_node keeps
                                   it per authorization); 0: any */
    uint32_t seal_batch;        /* encrypted: records sealed at a time, which
                                   transmit_peek hands out together (one
                                   send); 1..ALKT_SEAL_BATCH_MAX, 0 = 4.
                                   Memory grows by one record each: 16 for
                                   bulk transfer, fewer on small targets */
} alkt_session_config;

typedef enum alkt_event_type {
    ALKT_EV_NONE = 0,
    ALKT_EV_ESTABLISHED,  /* handshake done, a new session */
    ALKT_EV_RESUMED,      /* handshake done, the session goes on */
    ALKT_EV_DISCONNECTED, /* the connection is over (code says why): close
                             it; the session can resume on a new one */
    ALKT_EV_CLOSED,       /* the session is over (code), every channel too */
    ALKT_EV_OPEN_REQUEST, /* the peer opened `channel`: accept or refuse */
    ALKT_EV_OPENED,       /* our open was accepted */
    ALKT_EV_OPEN_FAILED,  /* our open was refused (code: the peer's) */
    ALKT_EV_READABLE,     /* bytes (or the peer's EOF) to read */
    ALKT_EV_WRITABLE,     /* send may take bytes again: credit came back,
                             or acks made room in a log that stopped it */
    ALKT_EV_RESET,        /* the peer reset the channel (code: the peer's) */
    ALKT_EV_CHANNEL_DONE  /* both directions ended or reset: the id is gone
                             after this event */
} alkt_event_type;

typedef struct alkt_event {
    alkt_event_type type;
    uint32_t channel;     /* 0 for session events */
    int code;             /* DISCONNECTED / CLOSED: an ALKT_ERR_* code;
                             OPEN_FAILED / RESET: the peer's 16-bit code;
                             CHANNEL_DONE: the reset's or refusal's code
                             (either side's), 0 after two EOFs */
} alkt_event;

typedef enum alkt_channel_state {
    ALKT_CHANNEL_NONE = 0,  /* no such channel (or done) */
    ALKT_CHANNEL_OPENING,   /* we opened it, no answer yet */
    ALKT_CHANNEL_INCOMING,  /* the peer opened it, we have not answered */
    ALKT_CHANNEL_OPEN,
    ALKT_CHANNEL_FINISHED   /* ended (EOFs, reset, refusal); CHANNEL_DONE
                               pending */
} alkt_channel_state;

typedef struct alkt_channel_info {
    alkt_channel_state state;
    int local;                 /* we opened it */
    size_t readable;           /* bytes buffered for alkt_channel_recv */
    uint64_t send_credit;      /* bytes the peer lets us send: what
                                  alkt_channel_send may take now on an OPEN
                                  channel (also bounded by the resend log's
                                  room); an INCOMING one shows the opener's
                                  grant, usable once accepted; 0 before the
                                  peer answers our OPEN, after
                                  shutdown_write and once FINISHED */
    int write_closed;          /* we shut our direction down */
    int peer_eof;              /* the peer shut its direction down */
    int reset;                 /* reset by either side */
    int code;                  /* reset / refusal code, when there is one */
    uint64_t bytes_sent, bytes_received;
    alkt_open_params params;   /* what the opener asked for */
    alkt_listen_reply reply;   /* OPENED with a forwarded open: where it
                                  listens (zero when none) */
    char reason[ALKT_REASON_MAX + 1]; /* OPEN_FAILED: the peer's text */
} alkt_channel_info;

/* Do not rely on the size or contents of these types. */
typedef struct alkt__chan {
    uint32_t id;
    uint8_t state;              /* alkt_channel_state */
    uint16_t flags;
    uint16_t events;            /* pending event bits */
    int code;
    uint32_t rcv_head, rcv_len; /* ring of channel_window bytes */
    uint32_t rcv_granted;       /* credit given, bytes not yet arrived */
    uint64_t snd_credit;
    uint32_t rcv_partial;       /* bytes of a DATA frame still arriving */
    uint64_t sent, received;
    alkt_open_params params;
    alkt_listen_reply reply;
    char reason[ALKT_REASON_MAX + 1]; /* OPEN_ERR's text, sent or received */
    unsigned char *ring;        /* (last: records are cleared up to it) */
} alkt__chan;

typedef struct alkt_session {
    /* configuration */
    int is_server;
    alkt_hmac_sha256_ctx key;   /* the secret, as HMAC pads hashed */
    char identity[ALKT_IDENTITY_MAX];
    size_t identity_len;
    uint32_t max_channels, channel_window, session_window, log_size, max_frame;
    uint64_t ping_ns, idle_ns, hs_ns, resume_ns;
    /* state */
    int state, conn, close_code, conn_code;
    int established_once, hs_step;
    uint64_t now, deadline_hs, deadline_resume, last_rx, last_tx;
    unsigned char session_id[ALKT_SESSION_ID_SIZE];
    unsigned char token[32];      /* the resume token, once token_ready */
    unsigned char token_h[32];    /* the first handshake's transcript, which
                                     the token is taken from when needed */
    int token_ready;
    unsigned char nonce[ALKT_NONCE_SIZE], peer_nonce[ALKT_NONCE_SIZE];
    unsigned char transcript[32];
    alkt_sha256_ctx hs_hash;
    char peer_identity[ALKT_IDENTITY_MAX + 1];
    size_t peer_identity_len;
    uint32_t peer_max_frame, peer_log_size, peer_max_channels;
    int resuming, conn_was_up;
    int hs_half;                /* server: a first handshake got as far as
                                   our AUTH (the token is known) */
    int hs_proven;              /* server: this connection's client HELLO
                                   passed its MAC and freshness (before
                                   that we say nothing) */
    uint64_t epoch_ns;          /* client: freshness = epoch_ns + now */
    uint64_t fresh_sent;        /* client: the last HELLO's freshness */
    uint64_t fresh_floor;       /* server: the last freshness accepted */
    unsigned char hello_hash[32]; /* SHA-256 of the client's HELLO frame:
                                   what a REFUSE is bound to */
    int resume_mismatch;        /* client: the server's HELLO does not
                                   resume us (judged once its AUTH is in) */
    int hs_heard;               /* a byte came on this connection */
    uint64_t rx_peer_has;       /* frames the peer's HELLO says it has */
    int peer_goaway;            /* the code of the peer's GOAWAY */
    /* channels */
    alkt__chan *chans;
    uint32_t next_id, peer_high;
    uint64_t budget_used;       /* credit outstanding + bytes buffered */
    uint32_t *refusals;         /* opens refused without a record, owed to
                                   the log: (id, code) pairs, max_channels */
    uint32_t n_refusals;
    uint32_t *retired;          /* finished channels that gave their record
                                   to a peer's open before the app polled
                                   their last events: (id, events, code, 0)
                                   quads, max_channels */
    uint32_t n_retired;
    uint32_t ev_cursor;
    unsigned session_events;
    int ev_code_disconnected, ev_code_closed;
    /* the resend log: sequenced frames, absolute byte positions */
    unsigned char *log;
    uint64_t log_head, log_tail, log_sent, seq_head, seq_next, seq_sent;
    int log_waiters;            /* a channel has ALKT__CF_LOG_WAIT */
    /* input */
    unsigned char in_hdr[ALKT_FRAME_HEADER];
    size_t in_hdr_len, in_len, in_got;
    unsigned char *in_buf;
    unsigned in_type;
    uint32_t in_chan;
    alkt__chan *in_sink;        /* DATA going straight into this ring */
    uint64_t seq_received, seq_acked_out;
    uint64_t rx_since_ack;
    /* output: connection frames, sent between log frames */
    unsigned char ctl[512];
    size_t ctl_len, ctl_off;
    size_t tx_frame_left;       /* bytes left of the log frame being sent */
    size_t tx_peeked;           /* bytes the last transmit_peek offered */
    int tx_from_log;            /* ... and whether they are in the log */
    int ack_wanted, ping_wanted, pong_wanted;
    unsigned char ping_data[8], pong_data[8];
    uint64_t ping_counter;
    int goaway_wanted, goaway_sent;
    int goaway_code;
    /* encryption: records (SESSION / ENCRYPTION) */
    int plaintext;
    uint64_t rekey_records;
    unsigned char eph[ALKT_X25519_SIZE];      /* this handshake's private key */
    unsigned char eph_pub[ALKT_X25519_SIZE];
    unsigned char peer_eph[ALKT_X25519_SIZE];
    unsigned char auth_key[32];               /* the AUTH MACs' key */
    unsigned char tx_key[ALKT_AEAD_KEY], rx_key[ALKT_AEAD_KEY];
    uint64_t tx_ctr, rx_ctr;    /* records under the current keys */
    uint64_t rekeys;            /* keys replaced (both directions) */
    int tx_sealed, rx_sealed;   /* records from here on */
    size_t ctl_clear;           /* control bytes below this go in clear (the
                                   handshake's last frames) */
    unsigned char *rec_out;     /* sealed records not yet sent */
    size_t rec_cap, rec_len, rec_off;
    unsigned char *rec_in;      /* one record arriving */
    size_t rec_in_len;
} alkt_session;

/* Bytes of caller memory alkt_session_init needs for cfg (0 when cfg is
 * invalid): max_channels * (sizeof(channel record) + channel_window) +
 * log_size + max_frame + alignment; see SESSION / MEMORY. */
ALKTDEF size_t alkt_session_mem_size(const alkt_session_config *cfg);
ALKTDEF int alkt_session_init(alkt_session *s, const alkt_session_config *cfg,
                              void *mem, size_t mem_len, uint64_t now);
/* A new connection (the first, or one to resume on): nonce is 32 fresh
 * random bytes from the caller (a CSPRNG: getrandom, arc4random,
 * /dev/urandom), kept secret - the ephemeral key comes from them; the
 * HELLO carries only a hash. The client sends its HELLO at once. A
 * DISCONNECTED event not yet polled is dropped (it was about the old
 * connection). */
ALKTDEF int alkt_session_connect(alkt_session *s, uint64_t now,
                                 const unsigned char nonce[ALKT_NONCE_SIZE]);
/* The connection dropped (reset, EOF, roaming): the session waits for a
 * new one (resume_window), or is closed when it never got established. */
ALKTDEF void alkt_session_handle_disconnected(alkt_session *s, uint64_t now);
/* Bytes from the connection, any split. ALKT_OK, or the error that ended
 * the connection or the session (also reported as an event). */
ALKTDEF int alkt_session_handle_input(alkt_session *s, const void *data,
                                      size_t len, uint64_t now);
/* Bytes to send on the connection: at most cap; 0 when nothing is due. */
ALKTDEF size_t alkt_session_poll_transmit(alkt_session *s, void *buf,
                                          size_t cap);
/* poll_transmit without the copy: *data points at the next bytes due (a
 * frame or its rest, and the whole log frames queued behind it up to 256
 * KiB or the ring's end, in the session's memory) and their count is
 * returned,
 * 0 when nothing is due. Send any part of them, then say how much with
 * transmit_done (n <= that count; ALKT_ERR_ARG otherwise, and when no peek
 * came first). The pointer is good until the next call on the session. */
ALKTDEF size_t alkt_session_transmit_peek(alkt_session *s, const void **data);
ALKTDEF int alkt_session_transmit_done(alkt_session *s, size_t n);
/* The next moment handle_timeout must run; s->now when output is queued
 * already; UINT64_MAX when nothing is armed. */
ALKTDEF uint64_t alkt_session_poll_timeout(const alkt_session *s);
ALKTDEF void alkt_session_handle_timeout(alkt_session *s, uint64_t now);
/* One pending event: 1 and *ev, or 0 when there is none. */
ALKTDEF int alkt_session_poll_event(alkt_session *s, alkt_event *ev);
/* Ends the session: GOAWAY with code (a 16-bit application code), every
 * channel fails; no resume. */
ALKTDEF int alkt_session_close(alkt_session *s, uint16_t code);
ALKTDEF int alkt_session_is_established(const alkt_session *s);
/* The peer's identity as it proved it (valid once established). */
ALKTDEF const char *alkt_session_peer_identity(const alkt_session *s,
                                               size_t *len);
/* Server: the freshest client HELLO this session accepted, or its
 * freshness_floor when none was fresher - a server that makes a session
 * object per connection keeps the highest per secret and gives it as the
 * next object's freshness_floor (so a recorded HELLO is never taken
 * twice). */
ALKTDEF uint64_t alkt_session_peer_freshness(const alkt_session *s);
/* Wipes every key, token and the secret's state from s, and closes it:
 * for a caller that keeps or reuses the memory. (A session wipes them
 * itself once closed and its last frame is out.) */
ALKTDEF void alkt_session_wipe(alkt_session *s);

ALKTDEF int alkt_channel_open(alkt_session *s, const alkt_open_params *params,
                              uint32_t *id);
ALKTDEF int alkt_channel_accept(alkt_session *s, uint32_t id,
                                const alkt_listen_reply *reply);
ALKTDEF int alkt_channel_refuse(alkt_session *s, uint32_t id, uint16_t code,
                                const char *reason);
/* Takes up to len bytes (the channel's credit and the log's room decide):
 * the count taken, 0 when none fits now (wait for ALKT_EV_WRITABLE), or
 * an error. */
ALKTDEF ptrdiff_t alkt_channel_send(alkt_session *s, uint32_t id,
                                    const void *data, size_t len);
/* Reads up to cap buffered bytes; *eof is set once everything the peer
 * sent before its EOF has been read. */
ALKTDEF ptrdiff_t alkt_channel_recv(alkt_session *s, uint32_t id, void *buf,
                                    size_t cap, int *eof);
/* recv without the copy: *data points at the buffered bytes in place and
 * the count of the first run is returned (the ring may hold a second run
 * after it: peek again once these are consumed); 0 with *eof set once
 * everything before the peer's EOF has been read. The pointer is good
 * until the next call on the session. consume(n) then releases n of them
 * (n <= the count buffered, ALKT_ERR_ARG otherwise), *eof as recv. */
ALKTDEF ptrdiff_t alkt_channel_peek(alkt_session *s, uint32_t id,
                                    const void **data, int *eof);
ALKTDEF ptrdiff_t alkt_channel_consume(alkt_session *s, uint32_t id, size_t n,
                                       int *eof);
ALKTDEF int alkt_channel_shutdown_write(alkt_session *s, uint32_t id);
ALKTDEF int alkt_channel_reset(alkt_session *s, uint32_t id, uint16_t code);
ALKTDEF int alkt_channel_info_get(const alkt_session *s, uint32_t id,
                                  alkt_channel_info *info);

#ifndef ALKTUNNEL_NO_PUMPS /* pumps and datagram pumps */
/* ---- pumps: one channel <-> one application endpoint (a socket the caller
 * owns), both directions, half-close each way (PUMPS in the top comment) */
typedef enum alkt_pump_want {
    ALKT_PUMP_READ = 1,       /* read the endpoint into alkt_pump_read_buffer */
    ALKT_PUMP_WRITE = 2,      /* write alkt_pump_write_peek's bytes to it */
    ALKT_PUMP_SHUT_WRITE = 4, /* the peer's EOF: shut the endpoint's write
                                 side (shutdown SHUT_WR), then
                                 alkt_pump_endpoint_shut */
    ALKT_PUMP_DONE = 8,       /* both directions ended: close the endpoint */
    ALKT_PUMP_ABORT = 16      /* the channel was reset or the session ended
                                 (code): close the endpoint at once */
} alkt_pump_want;

typedef struct alkt_pump {
    alkt_session *s;
    uint32_t channel;
    unsigned flags;
    int code;                      /* ABORT: the reset's or session's code */
    unsigned char *buf;            /* endpoint bytes the channel has not
                                      taken yet: [off, off + len) */
    size_t cap, off, len;
    uint64_t from_endpoint, to_channel;  /* equal once the pump is done */
    uint64_t to_endpoint;          /* channel bytes the endpoint took */
} alkt_pump;

/* buf (cap >= 1 bytes, the caller's) holds what the endpoint gave and the
 * channel could not take yet: the only buffering of the pump. */
ALKTDEF int alkt_pump_init(alkt_pump *p, alkt_session *s, uint32_t channel,
                           void *buf, size_t cap);
/* Moves what can move, then says what the caller should do: a set of
 * ALKT_PUMP_* bits. Call again after any session input or event. */
ALKTDEF unsigned alkt_pump_poll(alkt_pump *p);
/* Where to read the endpoint to, and how much: 0 while the channel is
 * behind (backpressure: stop reading the endpoint) or after its EOF. */
ALKTDEF size_t alkt_pump_read_buffer(alkt_pump *p, void **buf);
/* n bytes were read into that buffer (n <= what it offered). */
ALKTDEF int alkt_pump_endpoint_read(alkt_pump *p, size_t n);
/* The endpoint's read side ended (read gave 0): the channel gets EOF after
 * every byte before it. */
ALKTDEF int alkt_pump_endpoint_eof(alkt_pump *p);
/* Channel bytes for the endpoint, in place: their count (0: none now). */
ALKTDEF size_t alkt_pump_write_peek(alkt_pump *p, const void **data);
/* n of them were written to the endpoint (n <= that count). */
ALKTDEF int alkt_pump_endpoint_wrote(alkt_pump *p, size_t n);
/* The endpoint's write side is shut (after ALKT_PUMP_SHUT_WRITE). */
ALKTDEF int alkt_pump_endpoint_shut(alkt_pump *p);
/* The endpoint failed (a reset, an error): the channel is reset with code;
 * the pump aborts. After DONE or ABORT: nothing (ALKT_OK). */
ALKTDEF int alkt_pump_endpoint_failed(alkt_pump *p, uint16_t code);

/* ---- datagram pumps: one channel <-> one datagram endpoint (a UDP socket),
 * each datagram framed as [u16 BE length][payload] - alkcodec.h's wire
 * format - so an empty datagram is a datagram, never EOF (DATAGRAMS in
 * the top comment) */
#define ALKT_DATAGRAM_MAX 65535u

typedef struct alkt_dgram_pump {
    alkt_session *s;
    uint32_t channel;
    unsigned flags;
    int code;                  /* ABORT: the reset's or session's code */
    size_t max;                /* largest datagram either way */
    unsigned char *out;        /* a framed datagram for the channel */
    size_t out_off, out_len;
    unsigned char *in;         /* the frame arriving from the channel */
    size_t in_len;
    uint64_t to_channel, to_endpoint;   /* datagrams */
} alkt_dgram_pump;

/* mem: at least 2 * (max_datagram + 2) bytes, the caller's;
 * max_datagram 0..ALKT_DATAGRAM_MAX. */
ALKTDEF int alkt_dgram_pump_init(alkt_dgram_pump *p, alkt_session *s,
                                 uint32_t channel, void *mem, size_t mem_len,
                                 size_t max_datagram);
/* ALKT_PUMP_READ (send may take a datagram), ALKT_PUMP_WRITE (recv has
 * one), ALKT_PUMP_SHUT_WRITE (the peer's EOF came after its last datagram:
 * end ours too with endpoint_eof when the flow is done), ALKT_PUMP_DONE,
 * ALKT_PUMP_ABORT. */
ALKTDEF unsigned alkt_dgram_pump_poll(alkt_dgram_pump *p);
/* A datagram from the endpoint, taken whole: ALKT_OK, ALKT_ERR_WOULD_BLOCK
 * (the last one is still going in: wait for READ), ALKT_ERR_TOO_LARGE
 * (over max_datagram: nothing taken), ALKT_ERR_STATE after endpoint_eof. */
ALKTDEF int alkt_dgram_pump_send(alkt_dgram_pump *p, const void *data,
                                 size_t len);
/* The next datagram for the endpoint: its length (0 is an empty datagram)
 * and *data, or ALKT_ERR_WOULD_BLOCK when none is whole yet. It stays
 * until alkt_dgram_pump_delivered. */
ALKTDEF ptrdiff_t alkt_dgram_pump_recv(alkt_dgram_pump *p, const void **data);
ALKTDEF int alkt_dgram_pump_delivered(alkt_dgram_pump *p);
/* No more datagrams from the endpoint: the channel's EOF follows the last. */
ALKTDEF int alkt_dgram_pump_endpoint_eof(alkt_dgram_pump *p);
/* The endpoint failed: the channel is reset with code, the pump aborts
 * (ALKT_OK too when the channel is already gone). */
ALKTDEF int alkt_dgram_pump_endpoint_failed(alkt_dgram_pump *p, uint16_t code);

#endif /* ALKTUNNEL_NO_PUMPS */

/* Application codes the roles (and the datagram pumps) put in OPEN_ERR and
 * RESET frames; defined with or without them, so every peer reads them. */
#define ALKT_CODE_UNAUTHORIZED 0x0101u   /* no live authorization covers it */
#define ALKT_CODE_REVOKED 0x0102u        /* its authorization was revoked or
                                            expired, or the resource changed */
#define ALKT_CODE_TARGET_REFUSED 0x0103u /* the target refused the connection */
#define ALKT_CODE_LISTEN_FAILED 0x0104u  /* the gateway could not listen */
#define ALKT_CODE_ENDPOINT_ERROR 0x0105u /* an endpoint failed mid-stream */
#define ALKT_CODE_SHUTDOWN 0x0106u       /* the program is going away */
#define ALKT_CODE_NO_PATH 0x0107u        /* no path to the gateway worked */
#define ALKT_CODE_BAD_DATAGRAM 0x0108u   /* a datagram frame over the limit, or
                                            cut by the EOF */

#ifndef ALKTUNNEL_NO_ROLES /* relay, client and gateway */
/* ---- roles: relay, gateway, client (ROLES in the top comment) -------------
 * A role drives sessions over connections the caller owns. Each connection
 * has a handle (nonzero; a slot and a generation, so a stale handle is
 * refused rather than taken for a new connection). */

typedef enum alkt_role_event_type {
    ALKT_REV_NONE = 0,
    ALKT_REV_CONNECT,        /* open a TCP connection to ip:port for `conn`,
                                then handle_connected (or handle_closed when
                                it fails) */
    ALKT_REV_CLOSE,          /* close `conn`'s socket; the handle is gone
                                (code: 0, or the ALKT_ERR_* that ended it
                                - ALKT_ERR_GOAWAY when the peer said
                                goodbye; from a relay: the status byte it
                                refused the request with, 1..5, or 0) */
    ALKT_REV_PEER_UP,        /* the session with `peer` is established
                                (code 0) or resumed (code 1) */
    ALKT_REV_PEER_DOWN,      /* the session with `peer` is over (code): its
                                channels are gone */
    ALKT_REV_CHANNEL,        /* a session event (`channel_event`) on
                                (`peer`, `channel`) */
    ALKT_REV_TARGET_CONNECT, /* gateway: connect `params`' target, then
                                alkt_gateway_target_result */
    ALKT_REV_LISTEN,         /* gateway: listen as `params` say, then
                                alkt_gateway_listen_result */
    ALKT_REV_INCOMING,       /* client: the gateway opened `channel` for a
                                forwarded listen (`params`: listen port and
                                origin); accept (connect the local side)
                                or refuse with alkt_client_answer */
    ALKT_REV_SPLICED,        /* relay: `conn` and `conn2` are joined */
    ALKT_REV_PATH_FAILED,    /* client: an attempt on a path to `peer`
                                (ip:port) failed (code: why; the next path
                                or a backoff follows). Attempts that fail
                                between two polls are told once, the
                                latest with its code. */
    ALKT_REV_OPEN_REFUSED    /* gateway: `peer` opened `channel` with
                                `params` and the gateway refused it (code:
                                ALKT_CODE_UNAUTHORIZED, or ALKT__CODE_FULL
                                when no grant slot was free) - for its log;
                                nothing to do */
} alkt_role_event_type;

typedef struct alkt_role_event {
    alkt_role_event_type type;
    uint32_t conn, conn2;
    uint32_t peer;             /* client: a gateway's slot; gateway: a
                                  client's slot (both from 1) */
    uint32_t channel;
    alkt_event_type channel_event;
    int code;
    alkt_ip ip;                /* CONNECT: where to */
    uint16_t port;
    alkt_open_params params;   /* TARGET_CONNECT, LISTEN, INCOMING */
} alkt_role_event;

/* -- relay: rendezvous by token, splices a client's connection to one a
 * gateway offered, copies bytes it cannot read (RELAY in the top comment) */
#define ALKT_RELAY_REQUEST_MAX (8u + ALKT_TOKEN_MAX + ALKT_ID_MAX + 8u + 32u)

/* A gateway a relay takes offers from, and the key its offers are proven
 * with (the gateway holds the same, in its control plane's relay item:
 * offer_key). Clients do not hold it. */
typedef struct alkt_relay_gateway {
    const char *id;            /* the gateway's ID (NUL-terminated) */
    const unsigned char *key;  /* 16..64 bytes */
    size_t key_len;
} alkt_relay_gateway;

typedef struct alkt_relay_config {
    const char *const *tokens; /* the tokens it serves (NUL-terminated,
                                  the caller's memory, kept alive) */
    size_t token_count;        /* >= 1 */
    uint32_t max_conns;        /* connections at once, <= 65535; 0 = 64 */
    uint32_t buffer_size;      /* bytes held for each connection, <= 1 GiB;
                                  0 = 65536 */
    uint64_t offer_lifetime_ns;   /* an offer not refreshed for this long
                                     expires; 0 = 30 s */
    uint64_t wait_ns;          /* a client waits this long for an offer;
                                  0 = 5 s */
    uint64_t request_timeout_ns;  /* the request must arrive within; 0 = 5 s */
    uint64_t idle_timeout_ns;  /* a pair with no byte either way; 0 = 300 s */
    const alkt_relay_gateway *gateways; /* whose offers it takes (the
                                   caller's memory, kept alive); none: it
                                   takes no offer at all */
    size_t gateway_count;
    uint32_t offers_per_gateway;  /* live offers of one gateway, at most (a
                                     new one ends the stalest); 0 = 4 */
} alkt_relay_config;

typedef struct alkt_relay_stats {
    uint32_t conns, offers, waiting, pairs;
    uint64_t spliced, refused, expired, bytes;
} alkt_relay_stats;

/* Do not rely on the size or contents of these types. */
typedef struct alkt__rconn {
    uint32_t handle;           /* 0: free */
    uint8_t state, kind, closing, close_wanted, spliced_event;
    uint8_t status_len;        /* status byte owed (0 or 1) */
    unsigned char status;
    uint32_t other;            /* the joined connection's slot + 1 */
    uint32_t token;            /* index in the config's tokens */
    uint32_t gw;               /* an offer's gateway: index in the config */
    uint64_t deadline;
    uint64_t fresh;            /* an offer's freshness, as proven */
    uint64_t refreshed_at;     /* an offer's request or last 'R' */
    unsigned char req[ALKT_RELAY_REQUEST_MAX];
    size_t req_len;
    uint32_t head, len, peeked;
    int discard_refresh;       /* gateway: 'R' bytes until its 'S' */
    /* (everything above is cleared when the slot is freed or taken) */
    unsigned char *ring;       /* bytes for this connection */
} alkt__rconn;

typedef struct alkt_relay_server {
    alkt_relay_config cfg;
    alkt__rconn *conns;
    uint64_t *gw_fresh;        /* per gateway: the freshest offer taken */
    uint32_t gen;
    uint64_t now;
    alkt_relay_stats stats;
} alkt_relay_server;

ALKTDEF size_t alkt_relay_mem_size(const alkt_relay_config *cfg);
ALKTDEF int alkt_relay_init(alkt_relay_server *r, const alkt_relay_config *cfg,
                            void *mem, size_t mem_len, uint64_t now);
/* A new connection: its handle, or ALKT_ERR_CHANNELS_FULL (close it);
 * *conn is 0 whenever it fails. */
ALKTDEF int alkt_relay_accept(alkt_relay_server *r, uint64_t now, uint32_t *conn);
/* Input from conn: the bytes taken (maybe fewer than len: the rest waits
 * until the other side drains - stop reading this socket meanwhile), or a
 * negative code for a bad handle. */
ALKTDEF ptrdiff_t alkt_relay_handle_input(alkt_relay_server *r, uint32_t conn,
                                          const void *data, size_t len,
                                          uint64_t now);
/* Zero copy input: where to read conn's socket to and how much (0: do not
 * read now), then handle_read(n). */
ALKTDEF size_t alkt_relay_read_buffer(alkt_relay_server *r, uint32_t conn, void **buf);
ALKTDEF int alkt_relay_handle_read(alkt_relay_server *r, uint32_t conn, size_t n,
                                   uint64_t now);
ALKTDEF size_t alkt_relay_transmit_peek(alkt_relay_server *r, uint32_t conn,
                                        const void **data);
ALKTDEF int alkt_relay_transmit_done(alkt_relay_server *r, uint32_t conn, size_t n);
/* conn's socket ended (EOF or error): what it sent is still delivered to
 * its partner, which is then closed. */
ALKTDEF void alkt_relay_handle_closed(alkt_relay_server *r, uint32_t conn,
                                      uint64_t now);
ALKTDEF uint64_t alkt_relay_poll_timeout(const alkt_relay_server *r);
ALKTDEF void alkt_relay_handle_timeout(alkt_relay_server *r, uint64_t now);
ALKTDEF int alkt_relay_poll_event(alkt_relay_server *r, alkt_role_event *ev);
ALKTDEF void alkt_relay_stats_get(const alkt_relay_server *r, alkt_relay_stats *st);
/* Wipes the relay's buffers and state (the keys are the caller's). */
ALKTDEF void alkt_relay_wipe(alkt_relay_server *r);

/* -- client and gateway: nodes holding sessions (CLIENT AND GATEWAY in the
 * top comment). One type serves both; the alkt_node_* calls are the
 * connection I/O and events of either. */
typedef struct alkt_node_config {
    const char *id;            /* this client's or gateway's id (an ID) */
    alkt_session_config session; /* template for every session: limits and
                                    timers (secret, identity and is_server
                                    are the node's to set) */
    const unsigned char *seed; /* >= 32 random bytes, new for every init:
                                  session nonces and jitter are drawn
                                  from them (HMAC-SHA-256 in counter mode) */
    size_t seed_len;
    uint64_t epoch_ns;         /* Unix time in ns when `now` was 0 (expiry
                                  of authorizations is in Unix seconds) */
    uint32_t max_peers;        /* sessions at once; 0 = 8 */
    uint32_t max_resources, max_authorizations, max_relays; /* 0 = 32, 64, 4 */
    uint32_t offers_per_relay; /* gateway: spare connections kept at each
                                  relay; 0 = 2 */
    int relay_first;           /* client: try the relays before the direct
                                  path (the direct path is then the
                                  fallback) */
    uint64_t connect_timeout_ns;  /* one path's attempt, connect to
                                     handshake; 0 = 5 s */
    uint64_t backoff_min_ns, backoff_max_ns;  /* 0 = 100 ms, 10 s */
    uint64_t offer_refresh_ns;    /* gateway: refresh offers this often;
                                     0 = 10 s */
    uint32_t pending_per_source;  /* gateway: connections from one address
                                     (alkt_node_accept_from) whose HELLO is
                                     not proven yet, at most; a new one
                                     takes the place of that address's
                                     oldest; 0 = 4 */
} alkt_node_config;

typedef struct alkt__nconn {
    uint32_t handle;           /* 0: free */
    uint8_t state, close_wanted, connect_wanted, was_up;
    uint8_t route_wait;        /* gateway: a whole HELLO, proven, waiting
                                  for a session slot to be freed */
    uint8_t has_source;        /* gateway: ip is where it came from */
    int close_code;            /* why the node closes it */
    uint32_t peer;             /* slot + 1, 0: none yet */
    uint32_t relay;            /* relay index + 1 for relay paths */
    uint64_t deadline, refresh_at;
    alkt_ip ip;
    uint16_t port;
    unsigned char out[ALKT_RELAY_REQUEST_MAX + 8];
    size_t out_len, out_off, out_peeked;   /* a relay request, 'R', 'S' */
    unsigned char in[ALKT_FRAME_HEADER + ALKT__HELLO_MAX];
    size_t in_len;             /* gateway: a HELLO being read */
    uint64_t accepted_at;      /* gateway: when it came in */
} alkt__nconn;

/* Gateway: the freshest HELLO accepted per (client, resource) - kept past
 * the authorization's removal while there is room, so a re-added one does
 * not take old HELLOs again. */
typedef struct alkt__fresh {
    char client[ALKT_ID_MAX + 1], resource[ALKT_ID_MAX + 1];
    uint64_t last;
} alkt__fresh;

typedef struct alkt__grant {
    uint32_t channel;             /* 0: unused */
    alkt_open_params params;
} alkt__grant;

typedef struct alkt__peer {
    uint8_t state;
    char id[ALKT_ID_MAX + 1];     /* client: the gateway; gateway: the client */
    char key[ALKT_ID_MAX + 1];    /* the resource whose authorization's
                                     secret keys the session */
    alkt_ip ip;                   /* client: the gateway's address */
    uint16_t port;
    uint32_t conn;                /* the connection's slot + 1, 0: none */
    uint32_t path, failures;
    uint64_t retry_at;
    uint64_t lost_at;             /* gateway: when its connection went */
    uint8_t fail_event;           /* client: PATH_FAILED to report */
    uint8_t supersedes;           /* gateway: a new session of a client
                                     with established ones here: they end
                                     when this one is established */
    int fail_code;
    alkt_ip fail_ip;
    uint16_t fail_port;
    alkt_session session;
    alkt__grant *grants;   /* gateway: per channel, the open its
                                     authorization is checked against */
} alkt__peer;

typedef struct alkt_node {
    int is_gateway;
    alkt_node_config cfg;
    char id[ALKT_ID_MAX + 1];
    alkt_hmac_sha256_ctx drbg;    /* the seed, as HMAC pads */
    uint64_t drbg_counter;
    uint64_t now;
    size_t session_mem;           /* bytes of one session's memory */
    alkt__peer *peers;
    alkt__nconn *conns;
    uint32_t max_conns, gen, ev_cursor;
    alkt_resource *resources;
    alkt_authorization *authorizations;
    alkt_relay *relays;
    size_t resource_count, authorization_count, relay_count;
    uint64_t *relay_retry_at;     /* gateway: next offer attempt per relay */
    uint32_t *relay_failures;
    uint64_t expiry_checked;      /* gateway: expiries up to here applied */
    alkt__fresh *fresh;           /* gateway: max_authorizations entries */
    size_t fresh_count;
    unsigned char decoy[32];      /* gateway: the key a HELLO naming no
                                     authorization is checked under */
    uint64_t fresh_sent;          /* client: the last HELLO's freshness;
                                     gateway: the last relay offer's */
    uint32_t *closing;            /* gateway: handles of unproven
                                     connections evicted to make room, their
                                     slots free, their CLOSE events owed */
    uint32_t closing_count;
} alkt_node;
typedef alkt_node alkt_client;
typedef alkt_node alkt_gateway;

/* Node memory for cfg (0 when cfg is invalid): max_peers sessions with
 * their memory, the connection table and the control-plane tables. */
ALKTDEF size_t alkt_node_mem_size(const alkt_node_config *cfg);
/* Gateway: a connection came in (from a client); its handle, or
 * ALKT_ERR_CHANNELS_FULL (close it), ALKT_ERR_STATE on a client; *conn is
 * 0 whenever it fails. The connection table holds 2 * max_peers +
 * max_relays * offers_per_relay connections (each session's and one
 * replacing it, and a gateway's offers at relays). When it is full, the
 * oldest connection whose HELLO is not proven yet is closed (a CLOSE
 * event) to make room: strangers cannot keep a client out; only when
 * every connection is a proven session's or an offer does accept refuse.
 * accept_from also names the address it came from: at most
 * cfg.pending_per_source unproven connections per address, a new one
 * closing that address's oldest. */
ALKTDEF int alkt_node_accept(alkt_node *n, uint64_t now, uint32_t *conn);
ALKTDEF int alkt_node_accept_from(alkt_node *n, uint64_t now, const alkt_ip *from,
                                  uint32_t *conn);
/* Wipes every session's keys and buffers, the authorizations' secrets and
 * the seed from n: for a caller that keeps or reuses the memory. n is
 * unusable after it (init again). */
ALKTDEF void alkt_node_wipe(alkt_node *n);
ALKTDEF int alkt_client_init(alkt_client *c, const alkt_node_config *cfg,
                             void *mem, size_t mem_len, uint64_t now);
ALKTDEF int alkt_gateway_init(alkt_gateway *g, const alkt_node_config *cfg,
                              void *mem, size_t mem_len, uint64_t now);
/* The control plane's view. A section present in ctl replaces the node's
 * (resources, authorizations, relays); each revocation removes every
 * authorization of its client and resource. Then every open channel is checked again: one that no
 * live authorization covers any more is reset with ALKT_CODE_REVOKED.
 * ALKT_ERR_TOO_MANY when a section is over the configured capacity
 * (nothing changed). */
ALKTDEF int alkt_node_control(alkt_node *n, const alkt_control *ctl,
                              uint64_t now);
/* Connection I/O, as for a session; conn is the handle. */
ALKTDEF int alkt_node_handle_connected(alkt_node *n, uint32_t conn,
                                       uint64_t now);
ALKTDEF void alkt_node_handle_closed(alkt_node *n, uint32_t conn, uint64_t now);
/* The bytes taken (all of them unless the handle is bad: < 0). */
ALKTDEF ptrdiff_t alkt_node_handle_input(alkt_node *n, uint32_t conn,
                                         const void *data, size_t len,
                                         uint64_t now);
ALKTDEF size_t alkt_node_transmit_peek(alkt_node *n, uint32_t conn,
                                       const void **data);
ALKTDEF int alkt_node_transmit_done(alkt_node *n, uint32_t conn, size_t n_sent);
ALKTDEF uint64_t alkt_node_poll_timeout(const alkt_node *n);
ALKTDEF void alkt_node_handle_timeout(alkt_node *n, uint64_t now);
/* One event: 1 and *ev, 0 when none. Call until 0 after every input,
 * timeout or command: the node does its own work (opening paths,
 * authorizing opens) inside this call. */
ALKTDEF int alkt_node_poll_event(alkt_node *n, alkt_role_event *ev);
/* The session of a peer slot (for channel calls and pumps), or NULL. */
ALKTDEF alkt_session *alkt_node_session(alkt_node *n, uint32_t peer);

/* Client: the gateway's direct address (the control plane names gateways
 * by id only). */
ALKTDEF int alkt_client_add_gateway(alkt_client *c, const char *gateway_id,
                                    const alkt_ip *ip, uint16_t port);
/* Opens a channel to params' target through the gateway of the resource
 * that covers it: ALKT_OK with *peer and *channel; ALKT_ERR_NOT_CONNECTED
 * when that gateway's session is not up yet (connecting has started: try
 * again at ALKT_REV_PEER_UP); ALKT_ERR_NO_CHANNEL with *code set when no
 * authorization covers the target (ALKT_CODE_UNAUTHORIZED) or the
 * gateway's address is unknown (ALKT_CODE_NO_PATH); ALKT_ERR_WOULD_BLOCK
 * or ALKT_ERR_CHANNELS_FULL from alkt_channel_open (the resend log is
 * full, or the gateway's channel limit is reached: try again after the
 * session's next events - acks free the log, CHANNEL_DONE a channel). */
ALKTDEF int alkt_client_open(alkt_client *c, const alkt_open_params *params,
                             uint64_t now, uint32_t *peer, uint32_t *channel,
                             int *code);
/* Answer an ALKT_REV_INCOMING: accept (ok) or refuse with code. */
ALKTDEF int alkt_client_answer(alkt_client *c, uint32_t peer, uint32_t channel,
                               int ok, uint16_t code);
/* The client moved (new address, new network): every connection is
 * dropped and made again; the sessions resume. */
ALKTDEF void alkt_client_roamed(alkt_client *c, uint64_t now);

/* Gateway: the decision on one open, without side effects: 0 when a live
 * authorization of client covers it (and *resource gets its index), else
 * ALKT_CODE_UNAUTHORIZED. Direct opens: an IP target inside the
 * resource's CIDR, port and protocol in its filters. Forwarded opens:
 * the bind address (absent: 0.0.0.0) and the listen port likewise. */
ALKTDEF int alkt_gateway_authorize(const alkt_gateway *g, const char *client,
                                   const alkt_open_params *params,
                                   uint64_t now, size_t *resource);
/* The answer to ALKT_REV_TARGET_CONNECT: ok, or the refusal code.
 * ALKT_ERR_RESET (here, in listen_result and in alkt_client_answer): the
 * opener reset the channel while we were connecting - close the endpoint;
 * a connect may take its time, so this is a normal outcome. */
ALKTDEF int alkt_gateway_target_result(alkt_gateway *g, uint32_t peer,
                                       uint32_t channel, int ok,
                                       uint16_t code);
/* The answer to ALKT_REV_LISTEN: ok with where it listens, or refused. */
ALKTDEF int alkt_gateway_listen_result(alkt_gateway *g, uint32_t peer,
                                       uint32_t channel,
                                       const alkt_listen_reply *reply,
                                       uint16_t code);
/* A connection came to the listener of (peer, listen_channel): opens a
 * channel back to the client ({"listen":port,"substrate":...,"host":
 * origin}); *channel is it. */
ALKTDEF int alkt_gateway_forward(alkt_gateway *g, uint32_t peer,
                                 uint32_t listen_channel,
                                 const alkt_ip *origin, uint32_t *channel);

#endif /* ALKTUNNEL_NO_ROLES */

#ifdef __cplusplus
}
#endif
#endif /* ALKTUNNEL_H */

#if defined(ALK_IMPLEMENTATION) && !defined(ALKTUNNEL_IMPLEMENTATION)
#define ALKTUNNEL_IMPLEMENTATION
#endif

#if defined(ALKTUNNEL_IMPLEMENTATION) && !defined(ALKTUNNEL_IMPLEMENTATION_DONE)
#define ALKTUNNEL_IMPLEMENTATION_DONE

#ifndef ALKTUNNEL_ASSERT
#include <assert.h>
#define ALKTUNNEL_ASSERT(c) assert(c)
#endif
#ifndef ALKTUNNEL_CT_COUNT
#define ALKTUNNEL_CT_COUNT(n) ((void)0)
#endif
#ifndef ALKTUNNEL_CT_PUBLIC
#define ALKTUNNEL_CT_PUBLIC(p, n) ((void)0)
#endif
#include <float.h>  /* DBL_MAX */
#include <locale.h> /* localeconv: strtod's decimal point */
#include <stdlib.h> /* strtod */
#include <string.h>
/* The switch families: ALKTUNNEL_PORTABLE turns every one off;
 * ALKTUNNEL_NO_SIMD both SIMD families (the crypto's and the JSON's). */
#ifdef ALKTUNNEL_PORTABLE
#ifndef ALKTUNNEL_NO_SIMD
#define ALKTUNNEL_NO_SIMD
#endif
#ifndef ALKTUNNEL_NO_SHA_NI
#define ALKTUNNEL_NO_SHA_NI
#endif
#ifndef ALKTUNNEL_NO_INT128
#define ALKTUNNEL_NO_INT128
#endif
#endif
#ifdef ALKTUNNEL_NO_SIMD
#ifndef ALKTUNNEL_NO_SIMD_CRYPTO
#define ALKTUNNEL_NO_SIMD_CRYPTO
#endif
#ifndef ALKTUNNEL_NO_SIMD_JSON
#define ALKTUNNEL_NO_SIMD_JSON
#endif
#endif
/* SHA-256 with the x86 SHA extensions, chosen at run time when the CPU
 * has them (ALKTUNNEL_NO_SHA_NI: the portable code only). */
#if !defined(ALKTUNNEL_NO_SHA_NI) && defined(__x86_64__) && \
    (defined(__GNUC__) || defined(__clang__))
#define ALKT__SHA_NI 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define ALKT__SHA_NI 0
#endif
/* The JSON reader's SSE2 scans (ALKTUNNEL_NO_SIMD_JSON: portable only). */
#if (defined(__SSE2__) || defined(_M_X64)) && !defined(ALKTUNNEL_NO_SIMD_JSON)
#define ALKT__JSON_SIMD 1
#include <emmintrin.h>
#else
#define ALKT__JSON_SIMD 0
#endif
/* Records read where they lie (a whole record in one input: opened in
 * place, DATA decrypted straight into the channel's ring) on 64-bit
 * targets; elsewhere, and with ALKTUNNEL_NO_FAST_DECODE, every record is
 * copied to the record buffer first (less code). */
#if !defined(ALKTUNNEL_NO_FAST_DECODE) &&                                    \
    (defined(__x86_64__) || defined(__aarch64__) || defined(_M_X64) ||       \
     defined(_M_ARM64))
#define ALKT__RECORDS_IN_PLACE 1
#endif
/* ChaCha20 four blocks at a time with SSE2 on x86-64
 * (ALKTUNNEL_NO_SIMD_CRYPTO: the portable code only). */
#if (defined(__SSE2__) || defined(_M_X64)) && !defined(ALKTUNNEL_NO_SIMD_CRYPTO)
#define ALKT__CHACHA_SIMD 1
#include <emmintrin.h>
/* x86-64 with gcc or clang: AVX2 and AVX-512F when the CPU has them (not
 * tied to ALKTUNNEL_NO_SHA_NI, which is about SHA-256 alone) */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ALKT__CHACHA_AVX2 1
#include <immintrin.h>
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- common ----------------------------------------------------------------- */
#if defined(__GNUC__) || defined(__clang__)
#define ALKT__INLINE inline __attribute__((always_inline))
#else
#define ALKT__INLINE inline
#endif
enum {
    ALKT__ST_VALUE = 0,    /* a value (top level, after ':' or an array ',') */
    ALKT__ST_ARRAY_FIRST,  /* a value or ']' */
    ALKT__ST_OBJECT_FIRST, /* a key or '}' */
    ALKT__ST_AFTER,        /* ',' or the container's close, or the end */
    ALKT__ST_DONE          /* END was returned */
};

/* String byte classes: 0 plain ASCII, 1 '"', 2 '\\', 3 control, 4 high. */
#define ALKT__R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const unsigned char alkt__str_class[256] = {
    ALKT__R16(3), ALKT__R16(3),
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ALKT__R16(0), ALKT__R16(0),
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
    ALKT__R16(0), ALKT__R16(0),
    ALKT__R16(4), ALKT__R16(4), ALKT__R16(4), ALKT__R16(4),
    ALKT__R16(4), ALKT__R16(4), ALKT__R16(4), ALKT__R16(4)
};
#undef ALKT__R16

/* Character classes of the typed fields, computed at compile time. */
#define ALKT__CC_ID 1u    /* [A-Za-z0-9._:-] */
#define ALKT__CC_TOKEN 2u /* printable ASCII 0x21..0x7E */
#define ALKT__CC_LDH 4u   /* a host name label's [A-Za-z0-9-] */
#define ALKT__CC_ESC 8u   /* follows '\\' in a two-byte escape: "\\/bfnrt */
#define ALKT__CC_HEX 16u  /* [0-9A-Fa-f] */
#define ALKT__CC_LHEX 32u /* [0-9a-f] */
#define ALKT__IS_ALNUM(c)                                                      \
    (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'z') ||              \
     ((c) >= 'A' && (c) <= 'Z'))
#define ALKT__CC(c)                                                            \
    ((ALKT__IS_ALNUM(c) || (c) == '.' || (c) == '_' || (c) == ':' ||           \
      (c) == '-'                                                               \
          ? ALKT__CC_ID                                                        \
          : 0u) |                                                              \
     ((c) >= 0x21 && (c) <= 0x7E ? ALKT__CC_TOKEN : 0u) |                     \
     (ALKT__IS_ALNUM(c) || (c) == '-' ? ALKT__CC_LDH : 0u) |                 \
     ((c) == '"' || (c) == '\\' || (c) == '/' || (c) == 'b' || (c) == 'f' ||   \
              (c) == 'n' || (c) == 'r' || (c) == 't'                           \
          ? ALKT__CC_ESC                                                       \
          : 0u) |                                                              \
     (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'f') ||             \
              ((c) >= 'A' && (c) <= 'F')                                       \
          ? ALKT__CC_HEX                                                       \
          : 0u) |                                                              \
     (((c) >= '0' && (c) <= '9') || ((c) >= 'a' && (c) <= 'f')                 \
          ? ALKT__CC_LHEX                                                      \
          : 0u))
#define ALKT__CC4(b) ALKT__CC(b), ALKT__CC(b + 1), ALKT__CC(b + 2), ALKT__CC(b + 3)
#define ALKT__CC16(b)                                                          \
    ALKT__CC4(b), ALKT__CC4(b + 4), ALKT__CC4(b + 8), ALKT__CC4(b + 12)
#define ALKT__CC64(b)                                                          \
    ALKT__CC16(b), ALKT__CC16(b + 16), ALKT__CC16(b + 32), ALKT__CC16(b + 48)
static const unsigned char alkt__char_class[256] = {
    ALKT__CC64(0), ALKT__CC64(64), ALKT__CC64(128), ALKT__CC64(192)};
#undef ALKT__CC64
#undef ALKT__CC16
#undef ALKT__CC4
#undef ALKT__CC
#undef ALKT__IS_ALNUM

static void alkt__locate(const char *buf, size_t len, size_t offset,
                         size_t *line, size_t *column)
{
    size_t i, ln = 1, line_start = 0;
    ALKTUNNEL_ASSERT(offset <= len);
    (void)len; /* only asserted */
    for (i = 0; i < offset; i++) {
        if (buf[i] == '\n') {
            ln++;
            line_start = i + 1;
        }
    }
    *line = ln;
    *column = offset - line_start + 1;
}

/* err->line/column of err->offset; 0 and 0 for an input over the size
 * limit, which is refused without reading it. */
static void alkt__locate_error(const char *buf, size_t len, int code,
                               alkt_error *err)
{
    if (code == ALKT_ERR_TOO_LARGE) {
        err->line = err->column = 0;
        return;
    }
    alkt__locate(buf, len, err->offset, &err->line, &err->column);
}

/* Length of the UTF-8 sequence at s (RFC 3629): 1..4, 0 if invalid (*bad =
 * index of the first byte that cannot belong to it), -1 if valid so far but
 * cut off by the end of the buffer. */
static int alkt__utf8_seq(const unsigned char *s, size_t n, size_t *bad)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t need, k;
    *bad = 0;
    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return 0; /* stray continuation byte or overlong C0/C1 lead */
    if (c < 0xE0) {
        need = 1;
    } else if (c < 0xF0) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates */
    } else if (c < 0xF5) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0;
    }
    for (k = 1; k <= need; k++) {
        unsigned b;
        if (k >= n)
            return -1;
        b = s[k];
        if (b < lo || b > hi) {
            *bad = k;
            return 0;
        }
        lo = 0x80;
        hi = 0xBF;
    }
    return (int)need + 1;
}

static int alkt__hex_value(unsigned c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (int)(c - 'A' + 10);
    return -1;
}

/* ---- JSON reader ------------------------------------------------------------ */
static int alkt__jfail(alkt_json_parser *p, int code, size_t offset)
{
    p->error = code;
    p->error_offset = offset;
    return code;
}

ALKTDEF int alkt_json_init(alkt_json_parser *p, const char *json, size_t len,
                           const alkt_json_limits *limits)
{
    size_t max_depth = ALKT_JSON_DEPTH_DEFAULT;
    size_t max_size = ALKT_JSON_SIZE_DEFAULT;
    if (!p)
        return ALKT_ERR_ARG;
    /* is_object needs no clearing: a level's bit is set when it opens */
    p->buf = NULL;
    p->len = p->pos = p->depth = 0;
    p->max_depth = 0;
    p->state = ALKT__ST_VALUE;
    p->error = ALKT_OK;
    p->error_offset = 0;
    if (limits && limits->max_depth)
        max_depth = limits->max_depth;
    if (limits && limits->max_size)
        max_size = limits->max_size;
    if ((!json && len) || max_depth > ALKT_JSON_DEPTH_LIMIT)
        return alkt__jfail(p, ALKT_ERR_ARG, 0);
    p->buf = json;
    p->len = len;
    p->max_depth = max_depth;
    if (len > max_size)
        return alkt__jfail(p, ALKT_ERR_TOO_LARGE, max_size);
    return ALKT_OK;
}

/* The first byte at or after i that ends a string's plain run - '"',
 * '\\', below 0x20 or above 0x7F - or n: 16 bytes at a time with SSE2
 * (a signed compare below 0x20 takes the high bytes too), then 8 a word. */
static ALKT__INLINE size_t alkt__str_stop(const unsigned char *s, size_t i,
                                          size_t n)
{
#if ALKT__JSON_SIMD && (defined(__GNUC__) || defined(__clang__))
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                      _mm_cmpeq_epi8(v, bslash)),
                         _mm_cmplt_epi8(v, space)));
        if (m)
            return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    /* Borrows only run upward, so the lowest flagged byte is a real one. */
    while (i + 8 <= n) {
        uint64_t v, xq, xb, m;
        memcpy(&v, s + i, 8);
        xq = v ^ 0x2222222222222222u;
        xb = v ^ 0x5C5C5C5C5C5C5C5Cu;
        m = (((v - 0x2020202020202020u) & ~v) |
             ((xq - 0x0101010101010101u) & ~xq) |
             ((xb - 0x0101010101010101u) & ~xb) | v) &
            0x8080808080808080u;
        if (m) {
#if (defined(__GNUC__) || defined(__clang__)) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            i += (size_t)__builtin_ctzll(m) >> 3;
#endif
            break;
        }
        i += 8;
    }
    while (i < n && alkt__str_class[s[i]] == 0)
        i++;
    return i;
}

/* p->pos is at the opening quote. */
static ALKT__INLINE int alkt__scan_string(alkt_json_parser *p,
                                          alkt_json_token *t)
{
    const unsigned char *s = (const unsigned char *)p->buf;
    size_t n = p->len, start = p->pos, i = start + 1;
    unsigned flags = 0;
    for (;;) {
        unsigned cls;
        i = alkt__str_stop(s, i, n);
        if (i >= n)
            return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
        cls = alkt__str_class[s[i]];
        if (cls == 1) {
            t->ptr = p->buf + start + 1;
            t->len = i - start - 1;
            t->offset = start;
            t->flags = flags;
            p->pos = i + 1;
            return ALKT_OK;
        }
        if (cls == 2) {
            unsigned e;
            flags |= ALKT_JSON_ESCAPED;
            if (i + 1 >= n)
                return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
            e = s[i + 1];
            if (e == 'u') {
                size_t k;
                for (k = 2; k < 6; k++) {
                    if (i + k >= n)
                        return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
                    if (alkt__hex_value(s[i + k]) < 0)
                        return alkt__jfail(p, ALKT_ERR_BAD_ESCAPE, i + k);
                }
                i += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' ||
                       e == 'f' || e == 'n' || e == 'r' || e == 't') {
                i += 2;
            } else {
                return alkt__jfail(p, ALKT_ERR_BAD_ESCAPE, i + 1);
            }
        } else if (cls == 3) {
            return alkt__jfail(p, ALKT_ERR_CONTROL_CHAR, i);
        } else {
            size_t bad;
            int k = alkt__utf8_seq(s + i, n - i, &bad);
            if (k < 0)
                return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
            if (k == 0)
                return alkt__jfail(p, ALKT_ERR_BAD_UTF8, i + bad);
            i += (size_t)k;
        }
    }
}

static int alkt__is_digit(unsigned c) { return c - '0' < 10u; }

/* p->pos is at '-' or a digit. */
static int alkt__scan_number(alkt_json_parser *p, alkt_json_token *t)
{
    const unsigned char *s = (const unsigned char *)p->buf;
    size_t n = p->len, start = p->pos, i = start;
    unsigned flags = 0;
    if (s[i] == '-') {
        flags |= ALKT_JSON_MINUS;
        i++;
    }
    if (i >= n)
        return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
    if (s[i] == '0') {
        i++;
    } else if (alkt__is_digit(s[i])) {
        while (i < n && alkt__is_digit(s[i]))
            i++;
    } else {
        return alkt__jfail(p, ALKT_ERR_BAD_NUMBER, i);
    }
    if (i < n && s[i] == '.') {
        flags |= ALKT_JSON_FRACTION;
        i++;
        if (i >= n)
            return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
        if (!alkt__is_digit(s[i]))
            return alkt__jfail(p, ALKT_ERR_BAD_NUMBER, i);
        while (i < n && alkt__is_digit(s[i]))
            i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        flags |= ALKT_JSON_EXPONENT;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n)
            return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
        if (!alkt__is_digit(s[i]))
            return alkt__jfail(p, ALKT_ERR_BAD_NUMBER, i);
        while (i < n && alkt__is_digit(s[i]))
            i++;
    }
    /* "01", "1.2.3", "1e5e5", "-0x1": the number cannot continue here */
    if (i < n && (alkt__is_digit(s[i]) || s[i] == '.' || s[i] == 'e' ||
                  s[i] == 'E' || s[i] == '+' || s[i] == '-' ||
                  s[i] == 'x' || s[i] == 'X'))
        return alkt__jfail(p, ALKT_ERR_BAD_NUMBER, i);
    t->ptr = p->buf + start;
    t->len = i - start;
    t->offset = start;
    t->flags = flags;
    p->pos = i;
    return ALKT_OK;
}

static int alkt__scan_literal(alkt_json_parser *p, alkt_json_token *t,
                              const char *word, size_t wlen)
{
    size_t k, i = p->pos;
    for (k = 0; k < wlen; k++) {
        if (i + k >= p->len)
            return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, p->len);
        if (p->buf[i + k] != word[k])
            return alkt__jfail(p, ALKT_ERR_SYNTAX, i + k);
    }
    t->ptr = p->buf + i;
    t->len = wlen;
    t->offset = i;
    p->pos = i + wlen;
    return ALKT_OK;
}

/* JSON whitespace from i; a run of spaces (indentation, padding) is
 * measured a word at a time. (Sixteen bytes at a time with SSE2 was tried:
 * slower, 25% on the pretty-printed documents - their runs are short.) */
static ALKT__INLINE size_t alkt__skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n) {
        char c = s[i];
        if ((unsigned char)c > ' ')
            break; /* the common case: no whitespace at all */
        if (c == ' ') {
#if (defined(__GNUC__) || defined(__clang__)) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            if (i + 8 <= n) {
                uint64_t v;
                memcpy(&v, s + i, 8);
                v ^= 0x2020202020202020u; /* 0 in each space byte */
                if (!v) {
                    i += 8;
                    continue;
                }
                i += (size_t)__builtin_ctzll(v) >> 3; /* >= 1: s[i] is ' ' */
                continue;
            }
#endif
            i++;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            i++;
        } else {
            break;
        }
    }
    return i;
}

static int alkt__top_is_object(const alkt_json_parser *p)
{
    size_t d = p->depth - 1;
    return (p->is_object[d >> 3] >> (d & 7)) & 1;
}

/* The reader's state machine; inlined into alkt_json_next and into the
 * typed decoders' token pump. */
static ALKT__INLINE int alkt__json_step(alkt_json_parser *p,
                                        alkt_json_token *t)
{
    const char *s;
    size_t n, i;
    int rc;
    if (p->error)
        return p->error;
    s = p->buf;
    n = p->len;
    i = p->pos;
    t->flags = 0;
    /* Each state jumps to the code for what may come next; whitespace is
     * skipped there, with a fast path for compact JSON. */
#define ALKT__WS()                                                             \
    do {                                                                       \
        if (i < n && (unsigned char)s[i] <= ' ')                               \
            i = alkt__skip_ws(s, i, n);                                        \
    } while (0)
    switch (p->state) {
    case ALKT__ST_DONE:
        t->type = ALKT_JSON_END;
        t->ptr = s + n;
        t->len = 0;
        t->offset = n;
        t->depth = 0;
        return ALKT_OK;
    case ALKT__ST_AFTER:
        goto after;
    case ALKT__ST_OBJECT_FIRST:
        ALKT__WS();
        if (i < n && s[i] == '}')
            goto close;
        goto key;
    case ALKT__ST_ARRAY_FIRST:
        ALKT__WS();
        if (i < n && s[i] == ']')
            goto close;
        goto value;
    default:
        goto value;
    }

after:
    ALKT__WS();
    if (p->depth == 0) {
        if (i != n)
            return alkt__jfail(p, ALKT_ERR_TRAILING_DATA, i);
        p->pos = n;
        p->state = ALKT__ST_DONE;
        t->type = ALKT_JSON_END;
        t->ptr = s + n;
        t->len = 0;
        t->offset = n;
        t->depth = 0;
        return ALKT_OK;
    }
    if (i >= n)
        return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
    if (s[i] == ',') {
        i++;
        if (alkt__top_is_object(p))
            goto key;
        goto value;
    }
    if (s[i] == (alkt__top_is_object(p) ? '}' : ']'))
        goto close;
    return alkt__jfail(p, ALKT_ERR_SYNTAX, i);

key:
    ALKT__WS();
    if (i >= n)
        return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
    if (s[i] != '"')
        return alkt__jfail(p, ALKT_ERR_SYNTAX, i);
    p->pos = i;
    rc = alkt__scan_string(p, t);
    if (rc)
        return rc;
    i = p->pos;
    if (i < n && s[i] != ':')
        i = alkt__skip_ws(s, i, n);
    if (i >= n)
        return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
    if (s[i] != ':')
        return alkt__jfail(p, ALKT_ERR_SYNTAX, i);
    p->pos = i + 1;
    p->state = ALKT__ST_VALUE;
    t->type = ALKT_JSON_KEY;
    t->depth = p->depth;
    return ALKT_OK;

close:
    t->type = alkt__top_is_object(p) ? ALKT_JSON_OBJECT_END
                                     : ALKT_JSON_ARRAY_END;
    p->depth--;
    t->ptr = s + i;
    t->len = 1;
    t->offset = i;
    t->depth = p->depth;
    p->pos = i + 1;
    p->state = ALKT__ST_AFTER;
    return ALKT_OK;

value:
    ALKT__WS();
#undef ALKT__WS
    if (i >= n)
        return alkt__jfail(p, ALKT_ERR_UNEXPECTED_END, n);
    t->depth = p->depth;
    p->pos = i;
    switch (s[i]) {
    case '{':
    case '[': {
        int obj = s[i] == '{';
        size_t d = p->depth;
        if (d >= p->max_depth)
            return alkt__jfail(p, ALKT_ERR_TOO_DEEP, i);
        if (obj)
            p->is_object[d >> 3] |= (unsigned char)(1u << (d & 7));
        else
            p->is_object[d >> 3] &= (unsigned char)~(1u << (d & 7));
        p->depth = d + 1;
        p->pos = i + 1;
        p->state = obj ? ALKT__ST_OBJECT_FIRST : ALKT__ST_ARRAY_FIRST;
        t->type = obj ? ALKT_JSON_OBJECT : ALKT_JSON_ARRAY;
        t->ptr = s + i;
        t->len = 1;
        t->offset = i;
        return ALKT_OK;
    }
    case '"':
        rc = alkt__scan_string(p, t);
        t->type = ALKT_JSON_STRING;
        break;
    case 't':
        rc = alkt__scan_literal(p, t, "true", 4);
        t->type = ALKT_JSON_TRUE;
        break;
    case 'f':
        rc = alkt__scan_literal(p, t, "false", 5);
        t->type = ALKT_JSON_FALSE;
        break;
    case 'n':
        rc = alkt__scan_literal(p, t, "null", 4);
        t->type = ALKT_JSON_NULL;
        break;
    default:
        if (s[i] == '-' || alkt__is_digit((unsigned char)s[i])) {
            rc = alkt__scan_number(p, t);
            t->type = ALKT_JSON_NUMBER;
            break;
        }
        return alkt__jfail(p, ALKT_ERR_SYNTAX, i);
    }
    if (rc)
        return rc;
    p->state = ALKT__ST_AFTER;
    return ALKT_OK;
}

ALKTDEF int alkt_json_next(alkt_json_parser *p, alkt_json_token *t)
{
    if (!p || !t)
        return ALKT_ERR_ARG;
    return alkt__json_step(p, t);
}

ALKTDEF int alkt_json_error(const alkt_json_parser *p, alkt_error *err)
{
    if (!p)
        return ALKT_ERR_ARG;
    if (err) {
        err->code = p->error;
        err->offset = p->error ? p->error_offset : 0;
        alkt__locate_error(p->buf, p->len, p->error, err);
        err->path[0] = '\0';
    }
    return p->error;
}

/* ---- validation fast path ----
 * One pass over the bytes with no tokens: 1 when s[0..n) is a document the
 * reader accepts within max_depth, 0 when it is not - or when this path is
 * not sure. On 0 the reader runs and says exactly what is wrong and where,
 * so this path only has to be right about what it accepts (the params
 * fuzz target checks that its verdict is always the reader's). */

/* word-at-a-time constants: 0x01 and 0x80 in every byte */
#define ALKT__ONES 0x0101010101010101u
#define ALKT__HIGHS 0x8080808080808080u

/* After the opening quote at s[i - 1]: the index past the closing quote,
 * or 0 when the string is not valid. */
static ALKT__INLINE size_t alkt__fast_string(const unsigned char *s, size_t i,
                                             size_t n)
{
    for (;;) {
        unsigned c;
        i = alkt__str_stop(s, i, n);
        if (i >= n)
            return 0;
        c = s[i];
        if (c == '"')
            return i + 1;
        if (c == '\\') {
            /* two-byte escapes by one class test; \\u and its four hex
             * digits by four */
            if (i + 1 >= n)
                return 0;
            c = alkt__char_class[s[i + 1]];
            if (c & ALKT__CC_ESC) {
                i += 2;
                continue;
            }
            if (s[i + 1] != 'u' || n - i < 6 ||
                !(alkt__char_class[s[i + 2]] & alkt__char_class[s[i + 3]] &
                  alkt__char_class[s[i + 4]] & alkt__char_class[s[i + 5]] &
                  ALKT__CC_HEX))
                return 0;
            i += 6;
            continue;
        }
        if (c < 0x20)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        /* A run of non-ASCII text: the common three-byte characters (lead
         * E1..EC or EE..EF, no overlong or surrogate is possible) checked
         * with one load, the rest by the full rule. */
        do {
            uint32_t w;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            /* two such characters with one load */
            while (i + 8 <= n) {
                uint64_t v;
                memcpy(&v, s + i, 8);
                if ((v & 0xC0C0F0C0C0F0u) != 0x8080E08080E0u ||
                    s[i] == 0xE0 || s[i] == 0xED || s[i + 3] == 0xE0 ||
                    s[i + 3] == 0xED)
                    break;
                i += 6;
            }
            if (i >= n || (c = s[i]) < 0x80)
                break;
#endif
            if (i + 4 <= n) {
                memcpy(&w, s + i, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                if ((w & 0xC0C0F0u) == 0x8080E0u && c != 0xE0 && c != 0xED) {
                    i += 3;
                    continue;
                }
#endif
                (void)w;
            }
            {
                size_t bad;
                int k = alkt__utf8_seq(s + i, n - i, &bad);
                if (k <= 0)
                    return 0;
                i += (size_t)k;
            }
        } while (i < n && (c = s[i]) >= 0x80);
    }
}

static ALKT__INLINE size_t alkt__fast_ws(const unsigned char *s, size_t i,
                                         size_t n)
{
    return alkt__skip_ws((const char *)s, i, n);
}

/* At 't', 'f' or 'n': the index past true, false or null, or 0 - the four
 * bytes after the 'f' of false, or true's and null's own, as one word. */
static ALKT__INLINE size_t alkt__fast_literal(const unsigned char *s, size_t i,
                                              size_t n)
{
    const char *w = s[i] == 't' ? "true" : s[i] == 'f' ? "alse" : "null";
    size_t at = i + (s[i] == 'f');
    uint32_t have, want;
    if (n - at < 4)
        return 0;
    memcpy(&have, s + at, 4);
    memcpy(&want, w, 4);
    return have == want ? at + 4 : 0;
}

/* At '-' or a digit: the index past the number, or 0. */
static ALKT__INLINE size_t alkt__fast_number(const unsigned char *s, size_t i,
                                             size_t n)
{
#define ALKT__DIGITS()                                                         \
    do {                                                                       \
        size_t k_ = 0; /* short numbers a byte at a time */                    \
        while (k_ < 4 && i < n && alkt__is_digit(s[i]))                        \
            i++, k_++;                                                         \
        if (k_ < 4)                                                            \
            break;                                                             \
        while (i + 8 <= n) {                                                   \
            uint64_t v;                                                        \
            memcpy(&v, s + i, 8);                                              \
            if ((v & (ALKT__ONES * 0xF0u)) != ALKT__ONES * 0x30u ||            \
                ((v + ALKT__ONES * 0x06u) & (ALKT__ONES * 0xF0u)) !=           \
                    ALKT__ONES * 0x30u)                                        \
                break;                                                         \
            i += 8;                                                            \
        }                                                                      \
        while (i < n && alkt__is_digit(s[i]))                                  \
            i++;                                                               \
    } while (0)
    if (s[i] == '-' && ++i >= n)
        return 0;
    if (s[i] == '0')
        i++;
    else if (alkt__is_digit(s[i]))
        ALKT__DIGITS();
    else
        return 0;
    if (i < n && s[i] == '.') {
        if (++i >= n || !alkt__is_digit(s[i]))
            return 0;
        ALKT__DIGITS();
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= n || !alkt__is_digit(s[i]))
            return 0;
        ALKT__DIGITS();
    }
#undef ALKT__DIGITS
    /* "01", "1.2.3", "-0x1": what follows is refused after the value */
    return i;
}

static int alkt__json_scan_valid(const unsigned char *s, size_t n,
                                 size_t max_depth)
{
    unsigned char is_object[ALKT_JSON_DEPTH_LIMIT];
    size_t i = 0, depth = 0;
value:
    i = alkt__fast_ws(s, i, n);
    if (i >= n)
        return 0;
    switch (s[i]) {
    case '{':
    case '[':
        if (depth >= max_depth)
            return 0;
        is_object[depth++] = s[i] == '{';
        i = alkt__fast_ws(s, i + 1, n);
        if (i < n && s[i] == (is_object[depth - 1] ? '}' : ']')) {
            i++;
            depth--;
            goto after;
        }
        if (is_object[depth - 1])
            goto key;
        goto value;
    case '"':
        if (!(i = alkt__fast_string(s, i + 1, n)))
            return 0;
        goto after;
    case 't':
    case 'f':
    case 'n':
        if (!(i = alkt__fast_literal(s, i, n)))
            return 0;
        goto after;
    default:
        if (s[i] != '-' && !alkt__is_digit(s[i]))
            return 0;
        if (!(i = alkt__fast_number(s, i, n)))
            return 0;
        goto after;
    }
key:
    i = alkt__fast_ws(s, i, n);
    if (i >= n || s[i] != '"' || !(i = alkt__fast_string(s, i + 1, n)))
        return 0;
    if (i < n && s[i] != ':')
        i = alkt__fast_ws(s, i, n);
    if (i >= n || s[i] != ':')
        return 0;
    i++;
    goto value;
after:
    if (i < n && s[i] != ',')
        i = alkt__fast_ws(s, i, n);
    if (depth == 0)
        return i == n;
    if (i >= n)
        return 0;
    if (s[i] == ',') {
        i++;
        if (is_object[depth - 1])
            goto key;
        goto value;
    }
    if (s[i] != (is_object[depth - 1] ? '}' : ']'))
        return 0;
    i++;
    depth--;
    goto after;
}

#if ALKT__JSON_SIMD && (defined(__GNUC__) || defined(__clang__))
/* The same verdict 64 bytes at a time with SSE2, in two stages per block:
 * first the block's bytes are classified into bit masks (backslash, quote,
 * whitespace, structural, control, non-ASCII) with no branch on the data;
 * the strings are found from the unescaped quotes by a prefix XOR, and
 * what a string may not hold (a control byte), what only a string may hold
 * (a backslash, a non-ASCII byte) and the escapes are checked by mask. Then
 * only the block's structural bytes, opening quotes and the first bytes of
 * numbers and literals are walked by the grammar. The chain of loads that a
 * byte-by-byte reader waits on (each token's end found before the next is
 * looked at) is gone. */
static ALKT__INLINE uint64_t alkt__bits16(__m128i v, int k)
{
    return (uint64_t)(unsigned)_mm_movemask_epi8(v) << (16 * k);
}

/* 1 when s[i] ends a number or literal: whitespace, structural or '"'. */
static ALKT__INLINE int alkt__json_delim(const unsigned char *s, size_t i,
                                         size_t n)
{
    unsigned c;
    if (i >= n)
        return 1;
    c = s[i];
    return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',' ||
           c == ':' || c == ']' || c == '}' || c == '[' || c == '{' ||
           c == '"';
}

/* What carries from one block to the next. */
typedef struct alkt__blocks {
    uint64_t in_string; /* all ones: the block starts in a string */
    uint64_t escape_in; /* 1: the block's first byte is escaped */
    uint64_t scalar_in; /* 1: the last block ended in a number or literal */
    uint64_t ends;      /* the block's bytes that end a number or literal */
    size_t utf8_to;     /* UTF-8 checked below here */
} alkt__blocks;

/* UTF-8 of a block (b: its 64 bytes) whose characters are all of two or
 * three bytes with no lead that needs its second byte checked (C0 C1 E0
 * ED, F0 and up): then each continuation byte is exactly where a lead
 * wants one, which is two masks compared. 1 when that holds and the
 * characters are valid; 0 when the block needs the full rule (the caller
 * then runs it, so 0 says nothing about validity). A character that runs
 * into the next block is checked whole here (k->utf8_to). */
static ALKT__INLINE int alkt__utf8_block(alkt__blocks *k,
                                         const unsigned char *s, size_t n,
                                         size_t base,
                                         const unsigned char *b)
{
    uint64_t cont = 0, lead2 = 0, lead3 = 0, slow = 0, done = 0;
    int i;
    for (i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * i));
        cont |= alkt__bits16(
            _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8((char)0xC0)),
                           _mm_set1_epi8((char)0x80)), i);
        lead2 |= alkt__bits16(
            _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8((char)0xE0)),
                           _mm_set1_epi8((char)0xC0)), i);
        lead3 |= alkt__bits16(
            _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8((char)0xF0)),
                           _mm_set1_epi8((char)0xE0)), i);
        slow |= alkt__bits16(
            _mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8((char)0xFE)),
                                   _mm_set1_epi8((char)0xC0)),
                    _mm_cmpeq_epi8(_mm_max_epu8(v, _mm_set1_epi8((char)0xF0)), v)),
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xE0)),
                             _mm_cmpeq_epi8(v, _mm_set1_epi8((char)0xED)))),
            i);
    }
    if (slow)
        return 0;
    /* the continuation bytes of a character from the last block */
    if (k->utf8_to > base)
        done = (~(uint64_t)0) >> (64 - (k->utf8_to - base)); /* 1..3 bytes */
    if ((cont & ~done) != (((lead2 | lead3) << 1) | (lead3 << 2)) ||
        (lead2 | lead3) & done)
        return 0;
    if ((lead2 | lead3) >> 62) { /* one runs into the next block */
        size_t j = base + 63 - (size_t)__builtin_clzll((lead2 | lead3)), bad;
        int len = alkt__utf8_seq(s + j, n - j, &bad);
        if (len <= 0)
            return 0;
        k->utf8_to = j + (size_t)len;
    }
    return 1;
}

/* Stage 1 of the block at s[base..]: its bytes for the grammar to walk
 * (structural bytes and opening quotes outside strings, and the first
 * byte of each run of other bytes: a number, a literal, or something the
 * walk refuses), or 0 with *ok = 0 when the block is already wrong. */
static ALKT__INLINE uint64_t alkt__json_block(alkt__blocks *k,
                                              const unsigned char *s,
                                              size_t n, size_t base, int *ok)
{
    unsigned char tail[64];
    const unsigned char *b = s + base;
    uint64_t bs = 0, q = 0, sp = 0, op = 0, low = 0, high = 0;
    uint64_t escaped, qr, inside, other;
    if (n - base < 64) { /* the tail, padded with whitespace */
        memset(tail, ' ', sizeof tail);
        memcpy(tail, b, n - base);
        b = tail;
    }
#define ALKT__CHUNK(i)                                                         \
    do {                                                                       \
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + 16 * i)); \
        __m128i v20 = _mm_or_si128(v, _mm_set1_epi8(0x20));                    \
        bs |= alkt__bits16(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\')), i);        \
        q |= alkt__bits16(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), i);           \
        sp |= alkt__bits16(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')), i);          \
        /* '{' '[' are 0x7B 0x5B, '}' ']' 0x7D 0x5D: one compare each pair \
         * once bit 5 is set */                                                \
        op |= alkt__bits16(                                                    \
            _mm_or_si128(                                                      \
                _mm_or_si128(_mm_cmpeq_epi8(v20, _mm_set1_epi8('{')),          \
                             _mm_cmpeq_epi8(v20, _mm_set1_epi8('}'))),         \
                _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(':')),            \
                             _mm_cmpeq_epi8(v, _mm_set1_epi8(',')))),          \
            i);                                                                \
        /* signed: below 0x20 takes the bytes from 0x80 up too */              \
        low |= alkt__bits16(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)), i);        \
        high |= alkt__bits16(v, i);                                            \
    } while (0)
    ALKT__CHUNK(0);
    ALKT__CHUNK(1);
    ALKT__CHUNK(2);
    ALKT__CHUNK(3);
#undef ALKT__CHUNK
    low &= ~high; /* the control bytes */
    /* Which bytes a backslash escapes: the one after each backslash that
     * is not itself escaped, in order (backslashes are rare). */
    escaped = k->escape_in;
    k->escape_in = 0;
    if (bs) {
        uint64_t t = bs;
        while (t) {
            uint64_t one = t & (0 - t);
            t ^= one;
            if (escaped & one)
                continue;
            if (one >> 63)
                k->escape_in = 1;
            else
                escaped |= one << 1;
        }
    }
    /* a string: its opening quote and what follows, to the closing quote
     * (not included) */
    qr = q & ~escaped;
    inside = qr;
    inside ^= inside << 1;
    inside ^= inside << 2;
    inside ^= inside << 4;
    inside ^= inside << 8;
    inside ^= inside << 16;
    inside ^= inside << 32;
    inside ^= k->in_string;
    k->in_string = 0 - (inside >> 63);
    /* a backslash or a non-ASCII byte outside a string, a control byte in
     * one */
    *ok = 0;
    if ((bs | high) & ~inside || low & inside)
        return 0;
    /* outside strings the control bytes must be whitespace: \t \n \r */
    {
        uint64_t t = low;
        while (t) {
            unsigned c = b[__builtin_ctzll(t)];
            t &= t - 1;
            if (c != '\n' && c != '\r' && c != '\t')
                return 0;
        }
    }
    if (escaped) { /* each escape: "\/bfnrt, or u and 4 hex digits */
        uint64_t t = escaped & inside;
        if (base + 64 > n) /* not the escape_in of a padding byte */
            t &= ~(uint64_t)0 >> (64 - (n - base));
        while (t) {
            size_t j = base + (size_t)__builtin_ctzll(t);
            t &= t - 1;
            if (alkt__char_class[s[j]] & ALKT__CC_ESC)
                continue;
            if (s[j] != 'u' || n - j < 5 ||
                !(alkt__char_class[s[j + 1]] & alkt__char_class[s[j + 2]] &
                  alkt__char_class[s[j + 3]] & alkt__char_class[s[j + 4]] &
                  ALKT__CC_HEX))
                return 0;
        }
    }
    if (high && !alkt__utf8_block(k, s, n, base, b)) {
        /* not only two- and three-byte characters: one by one, from the
         * first non-ASCII byte not yet seen */
        uint64_t h = high;
        if (k->utf8_to > base)
            h = k->utf8_to - base >= 64
                    ? 0
                    : h & (~(uint64_t)0 << (k->utf8_to - base));
        while (h) {
            size_t j = base + (size_t)__builtin_ctzll(h), bad;
            int len = alkt__utf8_seq(s + j, n - j, &bad);
            if (len <= 0)
                return 0;
            j += (size_t)len;
            k->utf8_to = j;
            h = j - base >= 64 ? 0 : h & (~(uint64_t)0 << (j - base));
        }
    }
    *ok = 1;
    k->ends = sp | low | op | q | inside;
    other = ~k->ends;
    {
        uint64_t starts = other & ~((other << 1) | k->scalar_in);
        k->scalar_in = other >> 63;
        return (op & ~inside) | (qr & inside) | starts;
    }
}

/* At a number or literal at s[j]: 1 when it is one and ends where the run
 * of other bytes does. */
static ALKT__INLINE int alkt__json_block_scalar(const alkt__blocks *k,
                                                const unsigned char *s,
                                                size_t n, size_t base,
                                                size_t j)
{
    unsigned c = s[j];
    size_t e;
    if (c == 't' || c == 'f' || c == 'n') {
        if (!(e = alkt__fast_literal(s, j, n)))
            return 0;
    } else if (c == '-' || alkt__is_digit(c)) {
        if (!(e = alkt__fast_number(s, j, n)))
            return 0;
    } else {
        return 0;
    }
    /* the byte after it ends the run: within the block, by its mask */
    if (e - base < 64)
        return (int)(k->ends >> (e - base) & 1);
    return alkt__json_delim(s, e, n);
}

static int alkt__json_block_valid(const unsigned char *s, size_t n,
                                  size_t max_depth)
{
    unsigned char closer[ALKT_JSON_DEPTH_LIMIT]; /* '}' or ']' per level */
    alkt__blocks k;
    size_t base = 0 - (size_t)64, depth = 0, j = 0;
    uint64_t walk = 0;
    unsigned c = 0;
    int ok, from = -1; /* -1: the first block is not read yet */
    memset(&k, 0, sizeof k);
/* The next byte to walk into c (at s[j]); at the end of the block, the
 * next block's stage 1 (one copy of it, at `refill`), back here by `from`. */
#define ALKT__WALK(id)                                                         \
    do { /* a case label inside a statement, as in Duff's device */          \
        if (walk)                                                              \
            goto walk_##id;                                                    \
        from = id;                                                             \
        goto refill;                                                           \
    case id:                                                                   \
    walk_##id:                                                                 \
        j = base + (size_t)__builtin_ctzll(walk);                              \
        walk &= walk - 1;                                                      \
        c = s[j];                                                              \
    } while (0)
dispatch:
    switch (from) {
    default:
    value:
        ALKT__WALK(0);
    value_c:
        if (c == '"')
            goto after;
        if (c == '{' || c == '[') {
            if (depth >= max_depth)
                return 0;
            closer[depth++] = (unsigned char)(c + 2);
            ALKT__WALK(1);
            if (c == closer[depth - 1]) {
                depth--;
                goto after;
            }
            if (closer[depth - 1] == '}')
                goto key_c;
            goto value_c;
        }
        if (!alkt__json_block_scalar(&k, s, n, base, j))
            return 0;
    after:
        ALKT__WALK(2);
        if (c == ',' && depth) {
            if (closer[depth - 1] == '}')
                goto key;
            goto value;
        }
        if (!depth || c != closer[depth - 1])
            return 0;
        depth--;
        goto after;
    key:
        ALKT__WALK(3);
    key_c:
        if (c != '"')
            return 0;
        ALKT__WALK(4);
        if (c != ':')
            return 0;
        goto value;
    }
refill:
    do {
        if ((base += 64) >= n) /* the end: only after a whole value */
            return from == 2 && depth == 0 && !k.in_string;
        walk = alkt__json_block(&k, s, n, base, &ok);
        if (!ok)
            return 0;
    } while (!walk);
    goto dispatch;
#undef ALKT__WALK
}
#endif

/* 1 when s[0..n) is a document the reader accepts within max_depth, else
 * 0 - exactly the reader's verdict (the params fuzz target holds both
 * paths to it). */
static int alkt__json_fast_valid(const unsigned char *s, size_t n,
                                 size_t max_depth)
{
#if ALKT__JSON_SIMD && (defined(__GNUC__) || defined(__clang__))
    (void)alkt__json_scan_valid; /* the portable path, still checked */
    return alkt__json_block_valid(s, n, max_depth);
#else
    return alkt__json_scan_valid(s, n, max_depth);
#endif
}

ALKTDEF int alkt_json_validate(const char *json, size_t len,
                               const alkt_json_limits *limits, alkt_error *err)
{
    alkt_json_parser p;
    alkt_json_token t;
    int rc = alkt_json_init(&p, json, len, limits);
    t.type = ALKT_JSON_NONE;
    if (rc == ALKT_OK &&
        alkt__json_fast_valid((const unsigned char *)json, len, p.max_depth)) {
        if (err) { /* as alkt_json_error reports a success */
            err->code = ALKT_OK;
            err->offset = 0;
            err->line = err->column = 1;
            err->path[0] = '\0';
        }
        return ALKT_OK;
    }
    while (rc == ALKT_OK && t.type != ALKT_JSON_END)
        rc = alkt_json_next(&p, &t);
    alkt_json_error(&p, err);
    return rc;
}

static size_t alkt__put_utf8(char *out, unsigned long cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* The 4 hex digits at raw[i], or -1. */
static long alkt__hex4(const char *raw, size_t len, size_t i)
{
    long v = 0;
    size_t k;
    if (i + 4 > len)
        return -1;
    for (k = 0; k < 4; k++) {
        int h = alkt__hex_value((unsigned char)raw[i + k]);
        if (h < 0)
            return -1;
        v = v * 16 + h;
    }
    return v;
}

ALKTDEF int alkt_json_unescape(const char *raw, size_t len, char *out,
                               size_t cap, size_t *out_len,
                               size_t *bad_offset)
{
    size_t i = 0, o = 0;
    int rc = ALKT_OK;
    if ((!raw && len) || (!out && cap))
        return ALKT_ERR_ARG;
    while (i < len) {
        char tmp[4];
        size_t n = 0, at = i;
        const char *src = tmp;
        if (raw[i] != '\\') {
            const char *bs = (const char *)memchr(raw + i, '\\', len - i);
            n = bs ? (size_t)(bs - raw) - i : len - i;
            src = raw + i;
            i += n;
        } else if (i + 1 >= len) {
            rc = ALKT_ERR_BAD_ESCAPE;
        } else {
            char e = raw[i + 1];
            n = 1;
            i += 2;
            switch (e) {
            case '"': tmp[0] = '"'; break;
            case '\\': tmp[0] = '\\'; break;
            case '/': tmp[0] = '/'; break;
            case 'b': tmp[0] = '\b'; break;
            case 'f': tmp[0] = '\f'; break;
            case 'n': tmp[0] = '\n'; break;
            case 'r': tmp[0] = '\r'; break;
            case 't': tmp[0] = '\t'; break;
            case 'u': {
                long cp = alkt__hex4(raw, len, i), lo;
                if (cp < 0) {
                    rc = ALKT_ERR_BAD_ESCAPE;
                    break;
                }
                i += 4;
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    rc = ALKT_ERR_BAD_SURROGATE;
                    break;
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    int next_u = i + 1 < len && raw[i] == '\\' &&
                                 raw[i + 1] == 'u';
                    lo = next_u ? alkt__hex4(raw, len, i + 2) : 0;
                    if (lo < 0) { /* "\uD800\uZZZZ": not from the reader */
                        rc = ALKT_ERR_BAD_ESCAPE;
                        at = i;
                        break;
                    }
                    if (!next_u || lo < 0xDC00 || lo > 0xDFFF) {
                        rc = ALKT_ERR_BAD_SURROGATE;
                        break;
                    }
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                n = alkt__put_utf8(tmp, (unsigned long)cp);
                break;
            }
            default:
                rc = ALKT_ERR_BAD_ESCAPE;
                break;
            }
        }
        if (rc == ALKT_OK && n > cap - o)
            rc = ALKT_ERR_STRING_TOO_LONG;
        if (rc) {
            if (bad_offset)
                *bad_offset = at;
            break;
        }
        memcpy(out + o, src, n);
        o += n;
    }
    if (out_len)
        *out_len = o;
    return rc;
}

static int alkt__number_magnitude(const alkt_json_token *t, uint64_t limit,
                                  uint64_t *value)
{
    uint64_t v = 0;
    size_t i = 0;
    if (!t || !value || t->type != ALKT_JSON_NUMBER || !t->ptr)
        return ALKT_ERR_ARG;
    if (t->flags & (ALKT_JSON_FRACTION | ALKT_JSON_EXPONENT))
        return ALKT_ERR_NOT_INTEGER;
    if (t->flags & ALKT_JSON_MINUS)
        i = 1;
    if (t->len - i < 20 && limit == UINT64_MAX) {
        for (; i < t->len; i++) /* 19 digits cannot overflow 64 bits */
            v = v * 10 + (uint64_t)(t->ptr[i] - '0');
        *value = v;
        return ALKT_OK;
    }
    for (; i < t->len; i++) {
        uint64_t d = (uint64_t)(t->ptr[i] - '0');
        /* v * 10 + d > limit, without a 64-bit division (a 700-byte
         * library routine on 32-bit targets): the bounds are constants */
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10) ||
            v * 10 + d > limit)
            return ALKT_ERR_OUT_OF_RANGE;
        v = v * 10 + d;
    }
    *value = v;
    return ALKT_OK;
}

/* ---- walking: skip, find, compare, doubles ---- */
ALKTDEF int alkt_json_skip(alkt_json_parser *p, const alkt_json_token *t)
{
    alkt_json_token x;
    size_t depth;
    int rc;
    if (!p || !t)
        return ALKT_ERR_ARG;
    if (t->type == ALKT_JSON_KEY) { /* the member's value goes too */
        rc = alkt_json_next(p, &x);
        return rc ? rc : alkt_json_skip(p, &x);
    }
    if (t->type != ALKT_JSON_OBJECT && t->type != ALKT_JSON_ARRAY)
        return p->error;
    /* t opened a container at t->depth: read until the level is back */
    depth = t->depth;
    do {
        if ((rc = alkt__json_step(p, &x)) != ALKT_OK)
            return rc;
    } while (x.depth != depth ||
             (x.type != ALKT_JSON_OBJECT_END && x.type != ALKT_JSON_ARRAY_END));
    return ALKT_OK;
}

ALKTDEF int alkt_json_string_equal(const alkt_json_token *t, const char *s,
                                   size_t len)
{
    size_t i = 0, o = 0;
    if (!t || (!s && len) ||
        (t->type != ALKT_JSON_KEY && t->type != ALKT_JSON_STRING))
        return 0;
    if (!(t->flags & ALKT_JSON_ESCAPED))
        return t->len == len && (len == 0 || memcmp(t->ptr, s, len) == 0);
    /* piece by piece: a plain run, or one escape decoded into tmp */
    while (i < t->len) {
        char tmp[8];
        size_t n, used;
        const char *bs = (const char *)memchr(t->ptr + i, '\\', t->len - i);
        if (bs != t->ptr + i) {
            n = bs ? (size_t)(bs - t->ptr) - i : t->len - i;
            if (n > len - o || memcmp(t->ptr + i, s + o, n) != 0)
                return 0;
            i += n;
            o += n;
            continue;
        }
        /* one escape (two for a surrogate pair): at most 12 raw bytes */
        used = t->ptr[i + 1] == 'u' ? 6 : 2;
        if (used == 6 && i + 12 <= t->len && t->ptr[i + 6] == '\\' &&
            t->ptr[i + 7] == 'u') {
            long hi = alkt__hex4(t->ptr, t->len, i + 2);
            if (hi >= 0xD800 && hi <= 0xDBFF)
                used = 12;
        }
        if (alkt_json_unescape(t->ptr + i, used, tmp, sizeof tmp, &n, NULL) !=
                ALKT_OK ||
            n > len - o || memcmp(tmp, s + o, n) != 0)
            return 0;
        i += used;
        o += n;
    }
    return o == len;
}

ALKTDEF int alkt_json_find_key(alkt_json_parser *p, const char *name,
                               size_t len, alkt_json_token *key)
{
    alkt_json_token x;
    int rc;
    if (!p || (!name && len) || !key)
        return ALKT_ERR_ARG;
    for (;;) {
        if ((rc = alkt_json_next(p, &x)) != ALKT_OK)
            return rc;
        if (x.type == ALKT_JSON_OBJECT_END)
            return ALKT_ERR_MISSING_FIELD;
        if (x.type != ALKT_JSON_KEY)
            return ALKT_ERR_STATE; /* not inside an object */
        if (alkt_json_string_equal(&x, name, len)) {
            *key = x;
            return ALKT_OK;
        }
        if ((rc = alkt_json_skip(p, &x)) != ALKT_OK)
            return rc;
    }
}

/* 10^k, k <= 22: every one exact in a double. */
static const double alkt__pow10[23] = {
    1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

ALKTDEF int alkt_json_number_double(const alkt_json_token *t, double *value)
{
    const char *s;
    size_t i = 0, n, digits = 0;
    uint64_t sig = 0;
    long exp10 = 0, e = 0;
    int neg, eneg = 0, point = 0;
    char buf[ALKT_JSON_NUMBER_TEXT_MAX + 16];
    double v;
    if (!t || !value)
        return ALKT_ERR_ARG;
    if (t->type != ALKT_JSON_NUMBER)
        return ALKT_ERR_WRONG_TYPE;
    s = t->ptr;
    n = t->len;
    if (n > ALKT_JSON_NUMBER_TEXT_MAX)
        return ALKT_ERR_TOO_LARGE;
    neg = s[0] == '-';
    i = (size_t)neg;
    /* the significand's digits (leading zeros do not count), each one
     * after the point lowering the exponent; the reader made sure of the
     * grammar. Past 15 digits the fast path is out: the count is enough. */
    for (; i < n; i++) {
        char c = s[i];
        if (c == '.') {
            point = 1;
            continue;
        }
        if (!alkt__is_digit((unsigned char)c))
            break;
        if (sig == 0 && c == '0') {
            exp10 -= point;
            continue;
        }
        if (++digits <= 15) {
            sig = sig * 10 + (uint64_t)(c - '0');
            exp10 -= point;
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (s[i] == '+' || s[i] == '-')
            eneg = s[i++] == '-';
        for (; i < n; i++)
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
        exp10 += eneg ? -e : e;
    }
    if (sig == 0) {
        *value = neg ? -0.0 : 0.0;
        return ALKT_OK;
    }
    if (digits <= 15 && exp10 >= -22 && exp10 <= 22) {
        /* both exact: one rounding, the correct one (Clinger) */
        v = exp10 >= 0 ? (double)sig * alkt__pow10[exp10]
                       : (double)sig / alkt__pow10[-exp10];
    } else {
        /* the C library's conversion, with the locale's decimal point */
        const char *dp = localeconv()->decimal_point;
        size_t o = 0, dl = dp && dp[0] ? strlen(dp) : 1;
        if (n + dl > sizeof buf)
            return ALKT_ERR_TOO_LARGE;
        for (i = 0; i < n; i++) {
            if (s[i] == '.' && dp && dp[0]) {
                memcpy(buf + o, dp, dl);
                o += dl;
            } else {
                buf[o++] = s[i];
            }
        }
        buf[o] = '\0';
        v = strtod(buf, NULL);
        if (v > DBL_MAX || v < -DBL_MAX)
            return ALKT_ERR_OUT_OF_RANGE;
        *value = v;
        return ALKT_OK;
    }
    *value = neg ? -v : v;
    return ALKT_OK;
}

ALKTDEF int alkt_json_number_u64(const alkt_json_token *t, uint64_t *value)
{
    uint64_t v;
    int rc = value ? alkt__number_magnitude(t, UINT64_MAX, &v) : ALKT_ERR_ARG;
    if (rc)
        return rc;
    if ((t->flags & ALKT_JSON_MINUS) && v != 0)
        return ALKT_ERR_OUT_OF_RANGE;
    *value = v;
    return ALKT_OK;
}

ALKTDEF int alkt_json_number_i64(const alkt_json_token *t, int64_t *value)
{
    uint64_t v, limit = (uint64_t)INT64_MAX;
    int rc;
    if (!value)
        return ALKT_ERR_ARG;
    if (t && (t->flags & ALKT_JSON_MINUS))
        limit += 1;
    rc = alkt__number_magnitude(t, limit, &v);
    if (rc)
        return rc;
    if (t->flags & ALKT_JSON_MINUS)
        *value = v == limit ? INT64_MIN : -(int64_t)v;
    else
        *value = (int64_t)v;
    return ALKT_OK;
}

/* ---- addresses -------------------------------------------------------------- */
static int alkt__parse_v4(const char *s, size_t n, unsigned char out[4])
{
    size_t i = 0, part;
    for (part = 0; part < 4; part++) {
        unsigned v = 0;
        size_t digits = 0;
        if (part > 0) {
            if (i >= n || s[i] != '.')
                return 0;
            i++;
        }
        while (i < n && alkt__is_digit((unsigned char)s[i]) && digits < 4) {
            v = v * 10 + (unsigned)(s[i] - '0');
            digits++;
            i++;
        }
        /* no leading zeros: "010" reads as octal to inet_aton; a fourth
         * digit (the loop reads at most 4) makes v > 255 or a leading 0 */
        if (digits == 0 || v > 255 || (digits > 1 && s[i - digits] == '0'))
            return 0;
        out[part] = (unsigned char)v;
    }
    return i == n;
}

static int alkt__parse_v6(const char *s, size_t n, unsigned char out[16])
{
    unsigned groups[8];
    size_t ngroups = 0, i = 0, k;
    long gap = -1; /* group index where "::" stands */
    if (n < 2 || n > ALKT_IP_TEXT_MAX - 1)
        return 0;
    if (s[0] == ':') {
        if (s[1] != ':')
            return 0;
        gap = 0;
        i = 2;
    }
    while (i < n) {
        size_t j = i;
        unsigned v = 0;
        while (j < n && j - i < 5 && alkt__hex_value((unsigned char)s[j]) >= 0)
            v = v * 16 + (unsigned)alkt__hex_value((unsigned char)s[j++]);
        if (j < n && s[j] == '.') {
            /* trailing dotted quad: the last 32 bits */
            unsigned char q[4];
            if (ngroups > 6 || !alkt__parse_v4(s + i, n - i, q))
                return 0;
            groups[ngroups++] = (unsigned)q[0] << 8 | q[1];
            groups[ngroups++] = (unsigned)q[2] << 8 | q[3];
            i = n;
            break;
        }
        if (j == i || j - i > 4 || ngroups == 8)
            return 0;
        groups[ngroups++] = v;
        i = j;
        if (i == n)
            break;
        if (s[i] != ':')
            return 0;
        i++;
        if (i < n && s[i] == ':') {
            if (gap >= 0)
                return 0;
            gap = (long)ngroups;
            i++;
        } else if (i == n) {
            return 0; /* a single trailing ':' */
        }
    }
    if (gap >= 0 ? ngroups > 7 : ngroups != 8)
        return 0;
    memset(out, 0, 16);
    for (k = 0; k < ngroups; k++) {
        size_t at = k;
        if (gap >= 0 && k >= (size_t)gap)
            at = k + (8 - ngroups);
        out[2 * at] = (unsigned char)(groups[k] >> 8);
        out[2 * at + 1] = (unsigned char)(groups[k] & 0xFF);
    }
    return 1;
}

ALKTDEF int alkt_ip_parse(const char *s, size_t len, alkt_ip *out)
{
    alkt_ip ip;
    if (!s || !out)
        return ALKT_ERR_ARG;
    memset(&ip, 0, sizeof ip);
    if (memchr(s, ':', len)) {
        if (!alkt__parse_v6(s, len, ip.bytes))
            return ALKT_ERR_BAD_ADDRESS;
        ip.family = 6;
    } else {
        if (!alkt__parse_v4(s, len, ip.bytes))
            return ALKT_ERR_BAD_ADDRESS;
        ip.family = 4;
    }
    *out = ip;
    return ALKT_OK;
}

/* *v / d into *v, the remainder returned (d != 0), with 32-bit divisions
 * only: a 64-bit `/` or `%` pulls a 700-byte library routine into 32-bit
 * builds (the firmware check counts it). Bit by bit above 32 bits. */
static uint32_t alkt__divmod64_bits(uint64_t *v, uint32_t d)
{
    uint64_t q;
    uint32_t r;
    int i;
    if (*v <= 0xffffffffu) {
        r = (uint32_t)*v % d;
        *v = (uint32_t)*v / d;
        return r;
    }
    r = (uint32_t)(*v >> 32) % d;
    q = (uint64_t)((uint32_t)(*v >> 32) / d) << 32;
    for (i = 31; i >= 0; i--) {
        uint64_t t = ((uint64_t)r << 1) | ((*v >> i) & 1u);
        if (t >= d) {
            t -= d;
            q |= (uint64_t)1 << i;
        }
        r = (uint32_t)t;
    }
    *v = q;
    return r;
}

/* The same, natively where the target divides 64 bits itself. */
static uint32_t alkt__divmod64(uint64_t *v, uint32_t d)
{
#if defined(UINTPTR_MAX) && UINTPTR_MAX > 0xffffffffu
    uint32_t r = (uint32_t)(*v % d);
    (void)alkt__divmod64_bits;   /* (the 32-bit targets'; unit-tested here) */
    *v /= d;
    return r;
#else
    return alkt__divmod64_bits(v, d);
#endif
}

/* v in base 10 or 16 (lowercase) at out; returns the digit count (<= 20).
 * The one number formatter: addresses, prefixes, JSON integers, paths. */
static size_t alkt__fmt_u(char *out, uint64_t v, unsigned base)
{
    char tmp[20];
    size_t n = 0, k;
    do {
        uint32_t r = alkt__divmod64(&v, base);
        tmp[n++] = "0123456789abcdef"[r];
    } while (v);
    for (k = 0; k < n; k++)
        out[k] = tmp[n - 1 - k];
    return n;
}

static size_t alkt__fmt_v4(char *out, const unsigned char b[4])
{
    size_t o = 0, k;
    for (k = 0; k < 4; k++) {
        if (k)
            out[o++] = '.';
        o += alkt__fmt_u(out + o, b[k], 10);
    }
    return o;
}

/* RFC 5952: lowercase, no leading zeros, the longest run (first on a tie)
 * of two or more zero groups as "::", IPv4-mapped addresses dotted. */
ALKTDEF size_t alkt_ip_format(const alkt_ip *ip, char out[ALKT_IP_TEXT_MAX])
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0,
                                             0, 0, 0, 0, 0xFF, 0xFF};
    size_t o = 0, k, best = 0, best_len = 0, run = 0;
    unsigned g[8];
    if (!ip || !out)
        return 0;
    if (ip->family == 4) {
        o = alkt__fmt_v4(out, ip->bytes);
        out[o] = '\0';
        return o;
    }
    if (ip->family != 6) {
        out[0] = '\0';
        return 0;
    }
    if (memcmp(ip->bytes, mapped, 12) == 0) {
        memcpy(out, "::ffff:", 7);
        o = 7 + alkt__fmt_v4(out + 7, ip->bytes + 12);
        out[o] = '\0';
        return o;
    }
    for (k = 0; k < 8; k++) {
        g[k] = (unsigned)ip->bytes[2 * k] << 8 | ip->bytes[2 * k + 1];
        run = g[k] == 0 ? run + 1 : 0;
        if (run > best_len) {
            best_len = run;
            best = k + 1 - run;
        }
    }
    if (best_len < 2)
        best_len = 0;
    for (k = 0; k < 8; k++) {
        if (best_len && k == best) {
            out[o++] = ':';
            if (k == 0)
                out[o++] = ':';
            k += best_len - 1;
            continue;
        }
        o += alkt__fmt_u(out + o, g[k], 16);
        if (k < 7)
            out[o++] = ':';
    }
    out[o] = '\0';
    return o;
}

/* A label inet_aton reads as a number: decimal (octal with a leading 0)
 * or 0x-hex. */
static int alkt__label_numeric(const char *l, size_t n)
{
    size_t k = 0;
    int hex = n >= 2 && l[0] == '0' && (l[1] | 0x20) == 'x';
    for (k = hex ? 2 : 0; k < n; k++) {
        if (hex ? alkt__hex_value((unsigned char)l[k]) < 0
                : !alkt__is_digit((unsigned char)l[k]))
            return 0;
    }
    return 1;
}

/* The rule a byte at a time: every build has it, and the word-at-a-time
 * path below hands it the rare names made of digits and hex only. */
static int alkt__hostname_bytes(const char *s, size_t len)
{
    size_t i, label_start = 0;
    unsigned all_digits = 1;
    int all_numeric = 1;
    for (i = 0; i <= len; i++) {
        unsigned char c = i < len ? (unsigned char)s[i] : '.';
        size_t llen;
        /* the label's bytes: one table lookup each */
        if (alkt__char_class[c] & ALKT__CC_LDH) {
            all_digits &= (unsigned)alkt__is_digit(c);
            continue;
        }
        if (c != '.')
            return 0;
        llen = i - label_start;
        if (llen == 0 || llen > 63 || s[label_start] == '-' ||
            s[i - 1] == '-')
            return 0;
        if (i == len && all_digits)
            return 0; /* the top label is never numeric (RFC 1123 2.1) */
        /* only all digits or a 0x prefix can read as a number */
        if (all_numeric && !all_digits &&
            !(llen >= 2 && s[label_start] == '0' &&
              (s[label_start + 1] | 0x20) == 'x' &&
              alkt__label_numeric(s + label_start, llen)))
            all_numeric = 0;
        label_start = i + 1;
        all_digits = 1;
    }
    /* "0x7f000001", "0x7f.1": resolvers read these as IPv4 addresses, so
     * a name made only of numbers would slip past address checks */
    return !all_numeric;
}

/* (64-bit targets only: on a 32-bit one the 8-byte words are register
 * pairs, more code for no speed - the Cortex-M4 session was 496 bytes
 * larger with it) */
#if (defined(__GNUC__) || defined(__clang__)) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    defined(__SIZEOF_POINTER__) && __SIZEOF_POINTER__ == 8 && \
    !defined(ALKTUNNEL_NO_SIMD_JSON)
/* 0x80 in each byte of v (every byte below 0x80) that is in [lo, hi]: no
 * sum carries into the next byte. */
#define ALKT__IN(v, lo, hi)                                                    \
    (((v) + ALKT__ONES * (0x80u - (lo))) &                                    \
     ~((v) + ALKT__ONES * (0x7Fu - (hi))) & ALKT__HIGHS)

/* A label [start, end): 1..63 bytes, no '-' at either end. */
static ALKT__INLINE int alkt__label_ok(const char *s, size_t start, size_t end)
{
    return end > start && end - start <= 63 && s[start] != '-' &&
           s[end - 1] != '-';
}

/* Eight bytes a word: every byte a letter, digit, '-' or '.', the dots
 * found in the same pass; each label's length and ends checked at its dot.
 * A name with no letter beyond a-f and x could read as a number: the byte
 * rule decides it. */
static int alkt__hostname_words(const char *s, size_t len)
{
    size_t i, k, label_start = 0;
    uint64_t odd_letters = 0;
    for (i = 0; i < len; i += 8) {
        uint64_t v = 0, w, ok, dots, live = ALKT__HIGHS;
        size_t n = len - i < 8 ? len - i : 8;
        memcpy(&v, s + i, n);
        if (n < 8)
            live >>= 8 * (8 - n);
        if (v & ALKT__HIGHS)
            return 0;
        w = v | ALKT__ONES * 0x20u; /* letters in lower case */
        ok = ALKT__IN(v, '0', '9') | ALKT__IN(w, 'a', 'z') |
             ALKT__IN(v, '-', '.');
        if ((ok & live) != live)
            return 0;
        odd_letters |= (ALKT__IN(w, 'g', 'w') | ALKT__IN(w, 'y', 'z')) & live;
        for (dots = ALKT__IN(v, '.', '.') & live; dots; dots &= dots - 1) {
            size_t at = i + ((size_t)__builtin_ctzll(dots) >> 3);
            if (!alkt__label_ok(s, label_start, at))
                return 0;
            label_start = at + 1;
        }
    }
    if (!alkt__label_ok(s, label_start, len))
        return 0;
    if (!odd_letters)
        return alkt__hostname_bytes(s, len);
    for (k = label_start; k < len; k++) /* the top label is never numeric */
        if (!alkt__is_digit((unsigned char)s[k]))
            return 1;
    return 0;
}
#undef ALKT__IN
#define ALKT__HOSTNAME_CHECK alkt__hostname_words
#else
#define ALKT__HOSTNAME_CHECK alkt__hostname_bytes
#endif

ALKTDEF int alkt_hostname_valid(const char *s, size_t len)
{
    if (!s || len == 0 || len > ALKT_HOST_MAX)
        return 0;
    return ALKT__HOSTNAME_CHECK(s, len);
}

/* ---- typed decoding: context, paths, errors --------------------------------- */
#define ALKT__SEGS 6
typedef struct alkt__seg {
    const char *name; /* NULL: an array index */
    size_t name_len;
    size_t index;
} alkt__seg;

typedef struct alkt__dec {
    alkt_json_parser p;
    alkt_json_token t;
    int have; /* t is a pushed-back token */
    alkt_error *err;
    size_t nseg;
    alkt__seg seg[ALKT__SEGS];
} alkt__dec;

/* Paths are short by construction: at most 6 segments (section, index,
 * field, index, field, unknown key), a key cut to 32 bytes, an index of at
 * most 20 digits - under 100 bytes, so ALKT_PATH_MAX never truncates. */
#define ALKT__KEY_SHOWN 32

static void alkt__path_put(char *path, size_t *o, const char *s, size_t n)
{
    size_t k;
    ALKTUNNEL_ASSERT(*o + n < ALKT_PATH_MAX);
    for (k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        path[(*o)++] = (char)(c < 0x21 || c > 0x7E ? '?' : c);
    }
}

static void alkt__build_path(const alkt__dec *d, char *path)
{
    size_t o = 0, k;
    ALKTUNNEL_ASSERT(d->nseg <= ALKT__SEGS);
    for (k = 0; k < d->nseg; k++) {
        const alkt__seg *sg = &d->seg[k];
        if (sg->name) {
            size_t full = sg->name_len ? sg->name_len : strlen(sg->name);
            if (k)
                alkt__path_put(path, &o, ".", 1);
            /* an unknown key is shown sanitised and cut */
            alkt__path_put(path, &o, sg->name,
                           full > ALKT__KEY_SHOWN ? ALKT__KEY_SHOWN : full);
            if (full > ALKT__KEY_SHOWN)
                alkt__path_put(path, &o, "...", 3);
        } else {
            char num[22];
            size_t n = 1 + alkt__fmt_u(num + 1, sg->index, 10);
            num[0] = '[';
            num[n++] = ']';
            alkt__path_put(path, &o, num, n);
        }
    }
    path[o] = '\0';
}

static int alkt__fail(alkt__dec *d, int code, size_t offset)
{
    alkt_error *e = d->err;
    e->code = code;
    e->offset = offset;
    alkt__locate_error(d->p.buf, d->p.len, code, e);
    alkt__build_path(d, e->path);
    return code;
}

static void alkt__push(alkt__dec *d, const char *name, size_t name_len,
                       size_t index)
{
    ALKTUNNEL_ASSERT(d->nseg < ALKT__SEGS);
    d->seg[d->nseg].name = name;
    d->seg[d->nseg].name_len = name_len;
    d->seg[d->nseg].index = index;
    d->nseg++;
}

/* A schema name: its length is taken only if a path is ever built. */
static void alkt__push_name(alkt__dec *d, const char *name)
{
    alkt__push(d, name, 0, 0);
}

static void alkt__pop(alkt__dec *d)
{
    ALKTUNNEL_ASSERT(d->nseg > 0);
    d->nseg--;
}

static void alkt__dec_start(alkt__dec *d, const char *json, size_t len,
                            const alkt_json_limits *limits, alkt_error *err)
{
    memset(err, 0, sizeof *err);
    d->err = err;
    d->nseg = 0;
    d->have = 0;
    /* an init error (limits, size) is sticky in the parser: the first
     * token read reports it, with its offset */
    alkt_json_init(&d->p, json, len, limits);
}

static int alkt__next(alkt__dec *d)
{
    int rc;
    if (d->have) {
        d->have = 0;
        return ALKT_OK;
    }
    rc = alkt__json_step(&d->p, &d->t);
    if (rc)
        return alkt__fail(d, rc, d->p.error_offset);
    return ALKT_OK;
}

static int alkt__expect(alkt__dec *d, alkt_json_type type)
{
    int rc = alkt__next(d);
    if (rc)
        return rc;
    if (d->t.type != type)
        return alkt__fail(d, ALKT_ERR_WRONG_TYPE, d->t.offset);
    return ALKT_OK;
}

/* The field index before an object's first key: the key after it (index
 * 0) is tried first. Only the order of the tries depends on it. */
#define ALKT__NO_FIELD (-1)

/* names[] entry equal to the klen bytes at k (no strlen on the hot path) */
static int alkt__name_is(const char *name, const char *k, size_t klen)
{
    size_t j;
    if (klen == 0 || name[0] != k[0]) /* most misses end here */
        return klen == 0 && name[0] == '\0';
    for (j = 1; j < klen; j++) {
        if (name[j] != k[j] || name[j] == '\0')
            return 0;
    }
    return name[klen] == '\0';
}

/* Reads the next key of the current object: 1 with its field index in
 * *field, 0 at the end of the object, < 0 on error (unknown, duplicate).
 * *field holds the previous key's index on entry (-1 before the first). */
static int alkt__field(alkt__dec *d, const char *const *names, int count,
                       unsigned *seen, size_t *key_offsets, int *field)
{
    char key[32];
    const char *k;
    size_t klen;
    int i, j, tries = count, rc = alkt__next(d);
    if (rc)
        return rc;
    if (d->t.type == ALKT_JSON_OBJECT_END)
        return 0;
    ALKTUNNEL_ASSERT(d->t.type == ALKT_JSON_KEY);
    k = d->t.ptr;
    klen = d->t.len;
    if (d->t.flags & ALKT_JSON_ESCAPED) {
        size_t bad = 0;
        rc = alkt_json_unescape(d->t.ptr, d->t.len, key, sizeof key, &klen,
                                &bad);
        if (rc == ALKT_ERR_BAD_SURROGATE)
            return alkt__fail(d, rc, d->t.offset + 1 + bad);
        k = key;
        /* a key too long for the buffer is longer than every name */
        if (rc)
            tries = 0;
    }
    /* try the field after the previous one first: documents written in
     * schema order (every encoder's) match on the first comparison */
    for (j = 0, i = *field + 1; j < tries; j++, i++) {
        if (i >= count)
            i = 0;
        if (alkt__name_is(names[i], k, klen))
            break;
    }
    if (j == tries) {
        if (d->t.len)
            alkt__push(d, d->t.ptr, d->t.len, 0);
        else
            alkt__push(d, "\"\"", 2, 0); /* the empty key, shown quoted */
        return alkt__fail(d, ALKT_ERR_UNKNOWN_FIELD, d->t.offset);
    }
    if (*seen & (1u << i)) {
        alkt__push_name(d, names[i]);
        return alkt__fail(d, ALKT_ERR_DUPLICATE_FIELD, d->t.offset);
    }
    *seen |= 1u << i;
    if (key_offsets) /* only open params report a key's position later */
        key_offsets[i] = d->t.offset;
    *field = i;
    return 1;
}

/* A missing required field: reported at the object's '{'. */
static int alkt__require(alkt__dec *d, unsigned seen, unsigned required,
                         const char *const *names, size_t object_offset)
{
    int i;
    for (i = 0; required >> i; i++) {
        if ((required & (1u << i)) && !(seen & (1u << i))) {
            alkt__push_name(d, names[i]);
            return alkt__fail(d, ALKT_ERR_MISSING_FIELD, object_offset);
        }
    }
    return ALKT_OK;
}

/* The next value as a string of at most cap bytes, NUL-terminated into
 * out (cap + 1 bytes); *len_out gets its length. */
static int alkt__string(alkt__dec *d, char *out, size_t cap, size_t *len_out)
{
    size_t n = 0, bad = 0;
    int rc = alkt__expect(d, ALKT_JSON_STRING);
    if (rc)
        return rc;
    if (!(d->t.flags & ALKT_JSON_ESCAPED)) {
        if (d->t.len > cap)
            return alkt__fail(d, ALKT_ERR_STRING_TOO_LONG, d->t.offset);
        memcpy(out, d->t.ptr, d->t.len);
        n = d->t.len;
    } else {
        rc = alkt_json_unescape(d->t.ptr, d->t.len, out, cap, &n, &bad);
        if (rc == ALKT_ERR_STRING_TOO_LONG)
            return alkt__fail(d, rc, d->t.offset);
        if (rc)
            return alkt__fail(d, rc, d->t.offset + 1 + bad);
    }
    /* raw NUL is a control character the reader refuses: only \u0000 */
    if ((d->t.flags & ALKT_JSON_ESCAPED) && memchr(out, 0, n))
        return alkt__fail(d, ALKT_ERR_NUL_IN_STRING, d->t.offset);
    out[n] = '\0';
    *len_out = n;
    return ALKT_OK;
}

static int alkt__uint(alkt__dec *d, uint64_t min, uint64_t max,
                      uint64_t *value)
{
    int rc = alkt__expect(d, ALKT_JSON_NUMBER);
    if (rc)
        return rc;
    rc = alkt_json_number_u64(&d->t, value);
    if (rc == ALKT_OK && (*value < min || *value > max))
        rc = ALKT_ERR_OUT_OF_RANGE;
    if (rc)
        return alkt__fail(d, rc, d->t.offset);
    return ALKT_OK;
}

static int alkt__port(alkt__dec *d, uint16_t *port)
{
    uint64_t v = 0;
    int rc = alkt__uint(d, 1, 65535, &v);
    *port = (uint16_t)v;
    return rc;
}

/* ---- field rules shared by decoders and encoders ----------------------------- */
static size_t alkt__bounded_len(const char *s, size_t max)
{
    const char *z = (const char *)memchr(s, 0, max + 1);
    return z ? (size_t)(z - s) : max + 1;
}

static int alkt__check_id(const char *s, size_t n)
{
    size_t k;
    if (n == 0)
        return ALKT_ERR_EMPTY;
    if (n > ALKT_ID_MAX)
        return ALKT_ERR_STRING_TOO_LONG;
    for (k = 0; k < n; k++) {
        if (!(alkt__char_class[(unsigned char)s[k]] & ALKT__CC_ID))
            return ALKT_ERR_BAD_VALUE;
    }
    return ALKT_OK;
}

static int alkt__check_token(const char *s, size_t n)
{
    size_t k;
    if (n == 0)
        return ALKT_ERR_EMPTY;
    if (n > ALKT_TOKEN_MAX)
        return ALKT_ERR_STRING_TOO_LONG;
    for (k = 0; k < n; k++) {
        if (!(alkt__char_class[(unsigned char)s[k]] & ALKT__CC_TOKEN))
            return ALKT_ERR_BAD_VALUE;
    }
    return ALKT_OK;
}

static int alkt__check_utf8(const char *s, size_t n)
{
    size_t i = 0, bad;
    while (i < n) {
        int k = alkt__utf8_seq((const unsigned char *)s + i, n - i, &bad);
        if (k <= 0)
            return ALKT_ERR_BAD_UTF8;
        i += (size_t)k;
    }
    return ALKT_OK;
}

static int alkt__check_unix_path(const char *s, size_t n)
{
    if (n == 0)
        return ALKT_ERR_EMPTY;
    if (n > ALKT_UNIX_PATH_MAX)
        return ALKT_ERR_STRING_TOO_LONG;
    return alkt__check_utf8(s, n);
}

static int alkt__all_zero(const unsigned char *p, size_t n);

static int alkt__check_ip(const alkt_ip *ip)
{
    if (ip->family == 6)
        return ALKT_OK;
    /* IPv4 leaves bytes 4..15 zero, so that memcmp equality holds */
    if (ip->family != 4 || !alkt__all_zero(ip->bytes + 4, 12))
        return ALKT_ERR_BAD_ADDRESS;
    return ALKT_OK;
}

static int alkt__check_cidr(const alkt_ip *ip, unsigned prefix)
{
    unsigned bits = ip->family == 4 ? 32u : 128u, b = prefix >> 3;
    if (alkt__check_ip(ip) || prefix > bits)
        return ALKT_ERR_BAD_CIDR;
    /* host bits set: in the byte the prefix ends in, or any byte after */
    if ((prefix & 7) && (ip->bytes[b++] & (0xffu >> (prefix & 7))))
        return ALKT_ERR_BAD_CIDR;
    for (; b < bits / 8; b++) {
        if (ip->bytes[b])
            return ALKT_ERR_BAD_CIDR;
    }
    return ALKT_OK;
}

static int alkt__all_zero(const unsigned char *p, size_t n)
{
    size_t k = 0;
    while (k < n && p[k] == 0)
        k++;
    return k == n;
}

/* An absent host, zeroed as the decoder leaves it. */
static int alkt__host_is_none(const alkt_host *h)
{
    return h->kind == ALKT_HOST_NONE && h->ip.family == 0 &&
           alkt__all_zero(h->ip.bytes, sizeof h->ip.bytes) &&
           alkt__all_zero((const unsigned char *)h->name, sizeof h->name);
}

static int alkt__check_host(const alkt_host *h, int allow_name)
{
    size_t n;
    if (h->kind == ALKT_HOST_IP) {
        if (!alkt__all_zero((const unsigned char *)h->name, sizeof h->name))
            return ALKT_ERR_BAD_ADDRESS;
        return alkt__check_ip(&h->ip);
    }
    /* a name leaves ip zeroed, as the decoder does */
    if (h->kind != ALKT_HOST_NAME || !allow_name || h->ip.family != 0 ||
        !alkt__all_zero(h->ip.bytes, sizeof h->ip.bytes))
        return ALKT_ERR_BAD_ADDRESS;
    n = alkt__bounded_len(h->name, ALKT_HOST_MAX);
    if (n == 0)
        return ALKT_ERR_EMPTY;
    return alkt_hostname_valid(h->name, n) ? ALKT_OK : ALKT_ERR_BAD_HOSTNAME;
}

/* ---- typed value decoders --------------------------------------------------- */
static int alkt__id(alkt__dec *d, char out[ALKT_ID_MAX + 1])
{
    size_t n;
    int rc = alkt__string(d, out, ALKT_ID_MAX, &n);
    if (rc == ALKT_OK && (rc = alkt__check_id(out, n)) != ALKT_OK)
        return alkt__fail(d, rc, d->t.offset);
    return rc;
}

/* A host field's text (an IP literal, or a DNS name when allowed) into *h:
 * ALKT_OK or the code to report. */
static int alkt__parse_host(const char *text, size_t n, int allow_name,
                            alkt_host *h)
{
    size_t k;
    int rc;
    memset(h, 0, sizeof *h);
    if (n == 0)
        return ALKT_ERR_EMPTY;
    if (alkt_ip_parse(text, n, &h->ip) == ALKT_OK) {
        h->kind = ALKT_HOST_IP;
        return ALKT_OK;
    }
    if (allow_name && alkt_hostname_valid(text, n)) {
        h->kind = ALKT_HOST_NAME;
        memcpy(h->name, text, n);
        return ALKT_OK;
    }
    /* something that meant to be an address is reported as one */
    rc = ALKT_ERR_BAD_ADDRESS;
    if (allow_name) {
        for (k = 0; k < n && text[k] != ':'; k++) {
            if (!alkt__is_digit((unsigned char)text[k]) && text[k] != '.')
                rc = ALKT_ERR_BAD_HOSTNAME;
        }
        if (k < n)
            rc = ALKT_ERR_BAD_ADDRESS;
    }
    return rc;
}

static int alkt__host(alkt__dec *d, alkt_host *h, int allow_name)
{
    char text[ALKT_HOST_MAX + 1];
    size_t n;
    int rc = alkt__string(d, text, ALKT_HOST_MAX, &n);
    if (rc == ALKT_OK && (rc = alkt__parse_host(text, n, allow_name, h)) != 0)
        return alkt__fail(d, rc, d->t.offset);
    return rc;
}

static int alkt__ip(alkt__dec *d, alkt_ip *ip)
{
    char text[ALKT_IP_TEXT_MAX];
    size_t n;
    int rc = alkt__string(d, text, sizeof text - 1, &n);
    if (rc == ALKT_ERR_STRING_TOO_LONG)
        return alkt__fail(d, ALKT_ERR_BAD_ADDRESS, d->t.offset);
    if (rc)
        return rc;
    if (alkt_ip_parse(text, n, ip) != ALKT_OK)
        return alkt__fail(d, ALKT_ERR_BAD_ADDRESS, d->t.offset);
    return ALKT_OK;
}

/* "address/prefix" with host bits zero: ALKT_OK or ALKT_ERR_BAD_CIDR. */
static int alkt__parse_cidr(const char *text, size_t n, alkt_ip *ip,
                            unsigned char *prefix)
{
    size_t slash, k;
    unsigned v = 0;
    for (slash = n; slash > 0 && text[slash - 1] != '/'; slash--)
        ;
    if (slash == 0 || slash == n || n - slash > 3 ||
        (text[slash] == '0' && n - slash > 1) ||
        alkt_ip_parse(text, slash - 1, ip) != ALKT_OK)
        return ALKT_ERR_BAD_CIDR;
    for (k = slash; k < n; k++) {
        if (!alkt__is_digit((unsigned char)text[k]))
            return ALKT_ERR_BAD_CIDR;
        v = v * 10 + (unsigned)(text[k] - '0');
    }
    if (alkt__check_cidr(ip, v) != ALKT_OK)
        return ALKT_ERR_BAD_CIDR;
    *prefix = (unsigned char)v;
    return ALKT_OK;
}

static int alkt__cidr(alkt__dec *d, alkt_ip *ip, unsigned char *prefix)
{
    char text[ALKT_IP_TEXT_MAX + 4];
    size_t n;
    int rc = alkt__string(d, text, sizeof text - 1, &n);
    if (rc == ALKT_ERR_STRING_TOO_LONG ||
        (rc == ALKT_OK && alkt__parse_cidr(text, n, ip, prefix) != ALKT_OK))
        return alkt__fail(d, ALKT_ERR_BAD_CIDR, d->t.offset);
    return rc;
}

/* One of `names` (index returned in *which). */
static int alkt__enum(alkt__dec *d, const char *const *names, int count,
                      int *which)
{
    char text[16];
    size_t n;
    int i, rc = alkt__string(d, text, sizeof text - 1, &n);
    if (rc == ALKT_ERR_STRING_TOO_LONG)
        return alkt__fail(d, ALKT_ERR_BAD_ENUM, d->t.offset);
    if (rc)
        return rc;
    for (i = 0; i < count; i++) {
        if (alkt__name_is(names[i], text, n)) {
            *which = i;
            return ALKT_OK;
        }
    }
    return alkt__fail(d, ALKT_ERR_BAD_ENUM, d->t.offset);
}

/* After the top-level value: the reader's END (nothing follows). */
static int alkt__finish(alkt__dec *d)
{
    return alkt__expect(d, ALKT_JSON_END);
}

/* Array iteration: 1 = another item follows (pushed back), 0 = the end. */
static int alkt__item(alkt__dec *d)
{
    int rc = alkt__next(d);
    if (rc)
        return rc;
    if (d->t.type == ALKT_JSON_ARRAY_END)
        return 0;
    d->have = 1;
    return 1;
}

/* ---- schemas ------------------------------------------------------------------ */
/* One description of each object schema (the control sections' items, open
 * params): the fields in schema order
 * (which is also the order an encoder writes them in) - JSON key, kind of
 * value, the member it fills (and its companion: a count, a length, a
 * prefix), and whether it is required. The token-based decoder, the fast
 * path and the encoder below are all driven by these tables, so adding a
 * field is one line here (and a kind, if its value is a new kind). */
static const char *const alkt__substrates[] = {"tcp", "udp", "unix"};
static const char *const alkt__protocols[] = {"tcp", "udp", "icmp"};

enum { ALKT__FK_ID, ALKT__FK_CIDR, ALKT__FK_PORTS, ALKT__FK_PROTOCOLS,
       ALKT__FK_SECRET, ALKT__FK_EXPIRES, ALKT__FK_HOST, ALKT__FK_PORT,
       ALKT__FK_TOKEN, ALKT__FK_SUBSTRATE, ALKT__FK_PATH };

#define ALKT__RESOURCE_SCHEMA(X)                                                  \
    X(alkt_resource, "id", ALKT__FK_ID, id, id, 1)                                \
    X(alkt_resource, "cidr", ALKT__FK_CIDR, network, prefix_len, 1)               \
    X(alkt_resource, "ports", ALKT__FK_PORTS, port_ranges, port_range_count, 0)   \
    X(alkt_resource, "protocols", ALKT__FK_PROTOCOLS, protocols, protocols, 0)    \
    X(alkt_resource, "gateway", ALKT__FK_ID, gateway, gateway, 1)
#define ALKT__AUTHORIZATION_SCHEMA(X)                                             \
    X(alkt_authorization, "client", ALKT__FK_ID, client, client, 1)               \
    X(alkt_authorization, "resource", ALKT__FK_ID, resource, resource, 1)         \
    X(alkt_authorization, "secret", ALKT__FK_SECRET, secret, secret_len, 1)       \
    X(alkt_authorization, "expires", ALKT__FK_EXPIRES, expires, expires, 1)
#define ALKT__REVOCATION_SCHEMA(X)                                                \
    X(alkt_revocation, "client", ALKT__FK_ID, client, client, 1)                  \
    X(alkt_revocation, "resource", ALKT__FK_ID, resource, resource, 1)
#define ALKT__RELAY_SCHEMA(X)                                                     \
    X(alkt_relay, "id", ALKT__FK_ID, id, id, 1)                                   \
    X(alkt_relay, "address", ALKT__FK_HOST, address, address, 1)                  \
    X(alkt_relay, "port", ALKT__FK_PORT, port, port, 1)                           \
    X(alkt_relay, "token", ALKT__FK_TOKEN, token, token, 1)                       \
    X(alkt_relay, "offer_key", ALKT__FK_SECRET, offer_key, offer_key_len, 0)
/* Open params: which fields a kind wants is alkt__open_rules' (every field
 * is optional here); the encoder writes them in the kind's own order. */
#define ALKT__OPEN_SCHEMA(X)                                                      \
    X(alkt_open_params, "substrate", ALKT__FK_SUBSTRATE, substrate, substrate, 0) \
    X(alkt_open_params, "host", ALKT__FK_HOST, host, host, 0)                     \
    X(alkt_open_params, "port", ALKT__FK_PORT, port, port, 0)                     \
    X(alkt_open_params, "path", ALKT__FK_PATH, path, path, 0)                     \
    X(alkt_open_params, "listen", ALKT__FK_PORT, listen, listen, 0)
/* The sections: key, item type, item schema, and the alkt_control members
 * they use (has_*, the array, its count and capacity). */
#define ALKT__CONTROL_SCHEMA(X)                                                   \
    X("resources", alkt_resource, alkt__resource_schema, has_resources,          \
      resources, resource_count, resource_cap)                                   \
    X("authorizations", alkt_authorization, alkt__authorization_schema,          \
      has_authorizations, authorizations, authorization_count,                   \
      authorization_cap)                                                         \
    X("revocations", alkt_revocation, alkt__revocation_schema, has_revocations,  \
      revocations, revocation_count, revocation_cap)                             \
    X("relays", alkt_relay, alkt__relay_schema, has_relays, relays, relay_count, \
      relay_cap)

typedef struct alkt__fdesc {
    unsigned char kind, required;
    unsigned short at, aux; /* offsets of the member and its companion */
} alkt__fdesc;

#ifndef ALKTUNNEL_NO_FAST_DECODE
/* A key as the fast path matches it in place: its name and the closing
 * quote, zero-padded to 16 bytes, and the name's length. Keys are at most
 * 14 bytes ("authorizations" is the longest): a longer one does not compile
 * as C++, and from 16 bytes not as C either. */
typedef struct alkt__fkey {
    char q[16];
    unsigned char len;
} alkt__fkey;
#define ALKT__FKEY(name) {name "\"", (unsigned char)(sizeof(name) - 1)},
#endif

typedef struct alkt__schema {
    const char *const *names;
    const alkt__fdesc *fields;
    int count;
#ifndef ALKTUNNEL_NO_FAST_DECODE
    const alkt__fkey *keys;
#endif
} alkt__schema;

#define ALKT__FNAME(T, name, kind, member, aux, req) name,
#define ALKT__FDESC(T, name, kind, member, aux, req)                               \
    {(unsigned char)(kind), (unsigned char)(req), (unsigned short)offsetof(T, member), \
     (unsigned short)offsetof(T, aux)},
#ifndef ALKTUNNEL_NO_FAST_DECODE
#define ALKT__FKEYS(T, name, kind, member, aux, req) ALKT__FKEY(name)
#define ALKT__SCHEMA_KEYS(prefix, SCHEMA)                                          \
    static const alkt__fkey prefix##_keys[] = {SCHEMA(ALKT__FKEYS)};
#define ALKT__SCHEMA_KEYS_AT(prefix) , prefix##_keys
#else
#define ALKT__SCHEMA_KEYS(prefix, SCHEMA)
#define ALKT__SCHEMA_KEYS_AT(prefix)
#endif
#define ALKT__SCHEMA_TABLES(prefix, SCHEMA)                                        \
    static const char *const prefix##_fields[] = {SCHEMA(ALKT__FNAME)};            \
    static const alkt__fdesc prefix##_fdesc[] = {SCHEMA(ALKT__FDESC)};             \
    ALKT__SCHEMA_KEYS(prefix, SCHEMA)                                              \
    static const alkt__schema prefix##_schema = {                                  \
        prefix##_fields, prefix##_fdesc,                                           \
        (int)(sizeof prefix##_fdesc / sizeof prefix##_fdesc[0])                    \
        ALKT__SCHEMA_KEYS_AT(prefix)};
ALKT__SCHEMA_TABLES(alkt__resource, ALKT__RESOURCE_SCHEMA)
ALKT__SCHEMA_TABLES(alkt__authorization, ALKT__AUTHORIZATION_SCHEMA)
ALKT__SCHEMA_TABLES(alkt__revocation, ALKT__REVOCATION_SCHEMA)
ALKT__SCHEMA_TABLES(alkt__relay, ALKT__RELAY_SCHEMA)
ALKT__SCHEMA_TABLES(alkt__open, ALKT__OPEN_SCHEMA)
#undef ALKT__SCHEMA_TABLES
#undef ALKT__SCHEMA_KEYS
#undef ALKT__SCHEMA_KEYS_AT
#undef ALKT__FKEYS
#undef ALKT__FDESC
#undef ALKT__FNAME

enum {
#define ALKT__SENUM(name, T, schema, has, items, count, cap) ALKT__SEC_##items,
    ALKT__CONTROL_SCHEMA(ALKT__SENUM)
#undef ALKT__SENUM
    ALKT__SECTIONS
};

typedef struct alkt__section_desc {
    const alkt__schema *item;
    size_t item_size;
} alkt__section_desc;

#define ALKT__SNAME(name, T, schema, has, items, count, cap) name,
#define ALKT__SDESC(name, T, schema, has, items, count, cap) {&schema, sizeof(T)},
static const char *const alkt__control_fields[] = {ALKT__CONTROL_SCHEMA(ALKT__SNAME)};
#ifndef ALKTUNNEL_NO_FAST_DECODE
#define ALKT__SKEY(name, T, schema, has, items, count, cap) ALKT__FKEY(name)
static const alkt__fkey alkt__control_keys[] = {ALKT__CONTROL_SCHEMA(ALKT__SKEY)};
#undef ALKT__SKEY
#endif
static const alkt__section_desc alkt__sections[] = {ALKT__CONTROL_SCHEMA(ALKT__SDESC)};
#undef ALKT__SDESC
#undef ALKT__SNAME

/* Section k of a control message: its array, has_* and count members and
 * its capacity (an encoder passes its const message: only read). */
typedef struct alkt__section_view {
    void *items;
    int *has;
    size_t *count, cap;
} alkt__section_view;

static alkt__section_view alkt__section(alkt_control *c, int k)
{
    alkt__section_view v;
    switch (k) {
#define ALKT__SVIEW(name, T, schema, has_, items_, count_, cap_)                   \
    case ALKT__SEC_##items_:                                                       \
        v.items = c->items_;                                                       \
        v.has = &c->has_;                                                          \
        v.count = &c->count_;                                                      \
        v.cap = c->cap_;                                                           \
        break;
        ALKT__CONTROL_SCHEMA(ALKT__SVIEW)
#undef ALKT__SVIEW
    default:
        v.items = NULL;
        v.has = NULL;
        v.count = NULL;
        v.cap = 0;
        break;
    }
    return v;
}

/* A member of an item, by its offset in the item's struct. */
#define ALKT__AT(obj, off, T) ((T *)(void *)((unsigned char *)(obj) + (off)))
#define ALKT__CAT(obj, off, T) ((const T *)(const void *)((const unsigned char *)(obj) + (off)))

/* The bits of the required fields, by field index. */
static unsigned alkt__required(const alkt__schema *sc)
{
    unsigned mask = 0;
    int i;
    for (i = 0; i < sc->count; i++)
        mask |= (unsigned)sc->fields[i].required << i;
    return mask;
}

static const char *const alkt__range_fields[] = {"from", "to"};
#ifndef ALKTUNNEL_NO_FAST_DECODE
static const alkt__fkey alkt__range_keys[] = {ALKT__FKEY("from") ALKT__FKEY("to")};
/* alkt__protocols' names, as the fast path matches them */
static const alkt__fkey alkt__protocol_keys[] = {
    ALKT__FKEY("tcp") ALKT__FKEY("udp") ALKT__FKEY("icmp")};
#endif

static int alkt__port_range(alkt__dec *d, alkt_port_range *r)
{
    size_t obj, to_offset = 0;
    unsigned seen = 0;
    int field = ALKT__NO_FIELD, rc = alkt__expect(d, ALKT_JSON_OBJECT);
    obj = d->t.offset;
    while (rc == ALKT_OK && (rc = alkt__field(d, alkt__range_fields, 2, &seen,
                                              NULL, &field)) == 1) {
        alkt__push_name(d, alkt__range_fields[field]);
        rc = alkt__port(d, field == 0 ? &r->from : &r->to);
        if (field == 1)
            to_offset = d->t.offset;
        alkt__pop(d);
    }
    if (rc == ALKT_OK)
        rc = alkt__require(d, seen, 3u, alkt__range_fields, obj);
    if (rc == ALKT_OK && r->from > r->to) {
        alkt__push_name(d, "to");
        rc = alkt__fail(d, ALKT_ERR_BAD_RANGE, to_offset);
        alkt__pop(d);
    }
    return rc;
}

/* 32..128 lowercase hex digits (an even count) into secret / *len. */
static int alkt__parse_secret(const char *hex, size_t n, unsigned char *secret,
                              size_t *len)
{
    size_t k;
    if (n < 2 * ALKT_SECRET_MIN || n > 2 * ALKT_SECRET_MAX || n % 2)
        return ALKT_ERR_BAD_VALUE;
    for (k = 0; k < n; k += 2) {
        unsigned hi = (unsigned char)hex[k], lo = (unsigned char)hex[k + 1];
        /* lowercase only: one spelling per secret */
        if (!(alkt__char_class[hi] & alkt__char_class[lo] & ALKT__CC_LHEX))
            return ALKT_ERR_BAD_VALUE;
        /* '0'..'9' are 0x30..0x39, 'a'..'f' 0x61..0x66 */
        secret[k / 2] = (unsigned char)(((hi & 0xFu) + 9u * (hi >> 6)) << 4 |
                                        ((lo & 0xFu) + 9u * (lo >> 6)));
    }
    *len = n / 2;
    return ALKT_OK;
}

/* One field's value (the reader at it) into the item at obj: the kinds
 * open params use. (Apart from alkt__value so that a build using only
 * the session and open params - firmware, linked with gc-sections - does
 * not carry the control message's kinds.) */
static int alkt__value_open(alkt__dec *d, const alkt__fdesc *fd, void *obj)
{
    size_t n;
    int rc, which = 0;
    switch (fd->kind) {
    case ALKT__FK_SUBSTRATE:
        rc = alkt__enum(d, alkt__substrates, 3, &which);
        *ALKT__AT(obj, fd->at, alkt_substrate) = (alkt_substrate)(which + 1);
        return rc;
    case ALKT__FK_PATH:
        rc = alkt__string(d, ALKT__AT(obj, fd->at, char), ALKT_UNIX_PATH_MAX, &n);
        if (rc == ALKT_OK && n == 0)
            rc = alkt__fail(d, ALKT_ERR_EMPTY, d->t.offset);
        return rc;
    case ALKT__FK_HOST:
        return alkt__host(d, ALKT__AT(obj, fd->at, alkt_host), 1);
    default: /* ALKT__FK_PORT */
        return alkt__port(d, ALKT__AT(obj, fd->at, uint16_t));
    }
}

/* One field's value (the reader at it) into the item at obj: every kind. */
static int alkt__value(alkt__dec *d, const alkt__fdesc *fd, void *obj)
{
    size_t n, i, array;
    int rc, which = 0;
    switch (fd->kind) {
    case ALKT__FK_ID:
        return alkt__id(d, ALKT__AT(obj, fd->at, char));
    case ALKT__FK_CIDR:
        return alkt__cidr(d, ALKT__AT(obj, fd->at, alkt_ip),
                          ALKT__AT(obj, fd->aux, unsigned char));
    case ALKT__FK_PORTS:
        rc = alkt__expect(d, ALKT_JSON_ARRAY);
        array = d->t.offset;
        for (i = 0; rc == ALKT_OK && (rc = alkt__item(d)) == 1; i++) {
            alkt__push(d, NULL, 0, i);
            rc = i < ALKT_PORT_RANGES_MAX
                     ? alkt__port_range(d, ALKT__AT(obj, fd->at, alkt_port_range) + i)
                     : alkt__fail(d, ALKT_ERR_TOO_MANY, d->t.offset);
            alkt__pop(d);
        }
        if (rc == ALKT_OK && i == 0)
            rc = alkt__fail(d, ALKT_ERR_EMPTY, array); /* at its '[' */
        *ALKT__AT(obj, fd->aux, size_t) = i;
        return rc;
    case ALKT__FK_PROTOCOLS: {
        unsigned *bits = ALKT__AT(obj, fd->at, unsigned);
        rc = alkt__expect(d, ALKT_JSON_ARRAY);
        array = d->t.offset;
        for (i = 0; rc == ALKT_OK && (rc = alkt__item(d)) == 1; i++) {
            alkt__push(d, NULL, 0, i);
            rc = alkt__enum(d, alkt__protocols, 3, &which);
            if (rc == ALKT_OK && (*bits & (1u << which)))
                rc = alkt__fail(d, ALKT_ERR_DUPLICATE_VALUE, d->t.offset);
            *bits |= 1u << which;
            alkt__pop(d);
        }
        if (rc == ALKT_OK && i == 0)
            rc = alkt__fail(d, ALKT_ERR_EMPTY, array); /* at its '[' */
        return rc;
    }
    case ALKT__FK_SECRET: {
        char hex[2 * ALKT_SECRET_MAX + 1];
        rc = alkt__string(d, hex, 2 * ALKT_SECRET_MAX, &n);
        if (rc == ALKT_OK &&
            (rc = alkt__parse_secret(hex, n, ALKT__AT(obj, fd->at, unsigned char),
                                     ALKT__AT(obj, fd->aux, size_t))) != ALKT_OK)
            return alkt__fail(d, rc, d->t.offset);
        return rc;
    }
    case ALKT__FK_EXPIRES:
        return alkt__uint(d, 0, ALKT_EXPIRES_MAX, ALKT__AT(obj, fd->at, uint64_t));
    case ALKT__FK_TOKEN:
        rc = alkt__string(d, ALKT__AT(obj, fd->at, char), ALKT_TOKEN_MAX, &n);
        if (rc == ALKT_OK && (rc = alkt__check_token(ALKT__AT(obj, fd->at, char), n)) != 0)
            rc = alkt__fail(d, rc, d->t.offset);
        return rc;
    default: /* host, port, substrate, path */
        return alkt__value_open(d, fd, obj);
    }
}

/* One item of a section: an object of the schema's fields. */
static int alkt__item_object(alkt__dec *d, const alkt__schema *sc, void *obj)
{
    size_t at;
    unsigned seen = 0;
    int field = ALKT__NO_FIELD, rc = alkt__expect(d, ALKT_JSON_OBJECT);
    at = d->t.offset;
    while (rc == ALKT_OK &&
           (rc = alkt__field(d, sc->names, sc->count, &seen, NULL, &field)) == 1) {
        alkt__push_name(d, sc->names[field]);
        rc = alkt__value(d, &sc->fields[field], obj);
        alkt__pop(d);
    }
    if (rc == ALKT_OK)
        rc = alkt__require(d, seen, alkt__required(sc), sc->names, at);
    return rc;
}

/* ---- open params -------------------------------------------------------------- */

/* The open schema's field indices (ALKT__OPEN_SCHEMA's order). */
enum { ALKT__OP_SUBSTRATE, ALKT__OP_HOST, ALKT__OP_PORT, ALKT__OP_PATH,
       ALKT__OP_LISTEN, ALKT__OP_COUNT };

/* The combination rules, checked once every field is read. A field that
 * the kind forbids is reported at its key (`offsets`), before a missing
 * one; forbidden fields are checked in schema order. */
static int alkt__open_rules(alkt__dec *d, const alkt_open_params *p,
                            unsigned seen, const size_t *offsets,
                            const size_t *value_offsets, size_t obj)
{
    unsigned forbidden, required = 1u << ALKT__OP_SUBSTRATE;
    int i, rc = alkt__require(d, seen, required, alkt__open_fields, obj);
    if (rc)
        return rc;
    if (seen & (1u << ALKT__OP_LISTEN)) {
        if (p->substrate == ALKT_SUBSTRATE_UNIX) {
            alkt__push_name(d, "substrate");
            return alkt__fail(d, ALKT_ERR_BAD_ENUM,
                              value_offsets[ALKT__OP_SUBSTRATE]);
        }
        forbidden = (1u << ALKT__OP_PORT) | (1u << ALKT__OP_PATH);
    } else if (p->substrate == ALKT_SUBSTRATE_UNIX) {
        forbidden = (1u << ALKT__OP_HOST) | (1u << ALKT__OP_PORT);
        required |= 1u << ALKT__OP_PATH;
    } else {
        forbidden = 1u << ALKT__OP_PATH;
        required |= (1u << ALKT__OP_HOST) | (1u << ALKT__OP_PORT);
    }
    for (i = 0; i < ALKT__OP_COUNT; i++) {
        if (seen & forbidden & (1u << i)) {
            alkt__push_name(d, alkt__open_fields[i]);
            return alkt__fail(d, ALKT_ERR_FIELD_NOT_ALLOWED, offsets[i]);
        }
    }
    rc = alkt__require(d, seen, required, alkt__open_fields, obj);
    if (rc == ALKT_OK && p->kind == ALKT_OPEN_FORWARDED &&
        p->host.kind == ALKT_HOST_NAME) {
        alkt__push_name(d, "host"); /* a bind address is an IP literal */
        return alkt__fail(d, ALKT_ERR_BAD_ADDRESS,
                          value_offsets[ALKT__OP_HOST]);
    }
    return rc;
}

/* An argument error still fills err (offset 0, no path). */
static int alkt__arg_error(alkt_error *err)
{
    if (err) {
        memset(err, 0, sizeof *err);
        err->code = ALKT_ERR_ARG;
        err->line = err->column = 1;
    }
    return ALKT_ERR_ARG;
}

/* The token-based decoder of open params: every document, every error
 * with its context. */
static int alkt__open_slow(const char *json, size_t len,
                           const alkt_json_limits *limits,
                           alkt_open_params *out, alkt_error *err)
{
    alkt__dec d;
    alkt_error local;
    size_t offsets[ALKT__OP_COUNT], value_offsets[ALKT__OP_COUNT], obj;
    unsigned seen = 0;
    int field = ALKT__NO_FIELD, rc;
    memset(out, 0, sizeof *out);
    alkt__dec_start(&d, json, len, limits, err ? err : &local);
    rc = alkt__expect(&d, ALKT_JSON_OBJECT);
    obj = d.t.offset;
    while (rc == ALKT_OK &&
           (rc = alkt__field(&d, alkt__open_schema.names, alkt__open_schema.count, &seen,
                             offsets, &field)) == 1) {
        alkt__push_name(&d, alkt__open_fields[field]);
        rc = alkt__value_open(&d, &alkt__open_schema.fields[field], out);
        value_offsets[field] = d.t.offset;
        alkt__pop(&d);
    }
    if (rc == ALKT_OK)
        rc = alkt__finish(&d);
    if (rc == ALKT_OK) {
        out->kind = (seen & (1u << ALKT__OP_LISTEN)) ? ALKT_OPEN_FORWARDED
                                                     : ALKT_OPEN_DIRECT;
        rc = alkt__open_rules(&d, out, seen, offsets, value_offsets, obj);
    }
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

/* ---- listen reply ------------------------------------------------------------- */
static const char *const alkt__reply_fields[] = {"address", "port"};

ALKTDEF int alkt_listen_reply_decode(const char *json, size_t len,
                                     const alkt_json_limits *limits,
                                     alkt_listen_reply *out, alkt_error *err)
{
    alkt__dec d;
    alkt_error local;
    size_t obj;
    unsigned seen = 0;
    int field = ALKT__NO_FIELD, rc;
    if (!out)
        return alkt__arg_error(err);
    memset(out, 0, sizeof *out);
    alkt__dec_start(&d, json, len, limits, err ? err : &local);
    rc = alkt__expect(&d, ALKT_JSON_OBJECT);
    obj = d.t.offset;
    while (rc == ALKT_OK && (rc = alkt__field(&d, alkt__reply_fields, 2, &seen,
                                              NULL, &field)) == 1) {
        alkt__push_name(&d, alkt__reply_fields[field]);
        rc = field == 0 ? alkt__ip(&d, &out->address)
                        : alkt__port(&d, &out->port);
        alkt__pop(&d);
    }
    if (rc == ALKT_OK)
        rc = alkt__finish(&d);
    if (rc == ALKT_OK)
        rc = alkt__require(&d, seen, 3u, alkt__reply_fields, obj);
    if (rc)
        memset(out, 0, sizeof *out);
    return rc;
}

ALKTDEF int alkt_listen_reply_project(const char *json, size_t len,
                                      alkt_listen_reply *out)
{
    alkt_error err;
    if (!out)
        return 0;
    return alkt_listen_reply_decode(json, len, NULL, out, &err) == ALKT_OK;
}

/* ---- control messages ----------------------------------------------------------- */
/* Clears what a decode sets, keeping the caller's arrays and capacities;
 * *kept gets the cleared struct (to restore it after a failure). */
static void alkt__control_clear(alkt_control *out, alkt_control *kept)
{
    memset(kept, 0, sizeof *kept);
#define ALKT__SKEEP(name, T, schema, has, items, count, cap)                       \
    kept->items = out->items;                                                      \
    kept->cap = out->cap;
    ALKT__CONTROL_SCHEMA(ALKT__SKEEP)
#undef ALKT__SKEEP
    *out = *kept;
}

/* The token-based decoder: every document, every error with context. */
static int alkt__control_slow(const char *json, size_t len,
                              const alkt_json_limits *limits,
                              alkt_control *out, alkt_error *err)
{
    alkt__dec d;
    alkt_error local;
    alkt_control c;
    size_t obj;
    unsigned seen = 0;
    int field = ALKT__NO_FIELD, rc;
    /* alkt_control_decode checked the arguments */
    ALKTUNNEL_ASSERT(out != NULL);
    alkt__control_clear(out, &c);
    alkt__dec_start(&d, json, len, limits, err ? err : &local);
    rc = alkt__expect(&d, ALKT_JSON_OBJECT);
    obj = d.t.offset;
    while (rc == ALKT_OK && (rc = alkt__field(&d, alkt__control_fields, ALKT__SECTIONS,
                                              &seen, NULL, &field)) == 1) {
        alkt__section_view v = alkt__section(out, field);
        const alkt__section_desc *sd = &alkt__sections[field];
        size_t i;
        alkt__push_name(&d, alkt__control_fields[field]);
        *v.has = 1;
        rc = alkt__expect(&d, ALKT_JSON_ARRAY);
        for (i = 0; rc == ALKT_OK && (rc = alkt__item(&d)) == 1; i++) {
            alkt__push(&d, NULL, 0, i);
            if (i >= v.cap) {
                rc = alkt__fail(&d, ALKT_ERR_TOO_MANY, d.t.offset);
            } else {
                void *item = (unsigned char *)v.items + i * sd->item_size;
                memset(item, 0, sd->item_size);
                rc = alkt__item_object(&d, sd->item, item);
            }
            alkt__pop(&d);
            *v.count = i + (rc == ALKT_OK);
        }
        alkt__pop(&d);
    }
    if (rc == ALKT_OK)
        rc = alkt__finish(&d);
    if (rc == ALKT_OK && seen == 0)
        rc = alkt__fail(&d, ALKT_ERR_MISSING_FIELD, obj);
    if (rc)
        *out = c;
    return rc;
}

/* ---- control messages: the fast path -------------------------------------------
 * A control message is usually large, canonical and valid. This path reads
 * such a document in one pass straight from the bytes - no tokens, no
 * paths - and declines (returns 0) at the first thing it does not expect:
 * an escape or a non-ASCII byte in a string, an unknown or repeated key, a
 * value out of range, a syntax error, a full section. A declined document
 * is decoded again by the token-based decoder above, which is the
 * reference: it accepts everything this path accepts, with the identical
 * result, and reports every error with its context. fuzz/params.c checks
 * exactly that on every input. */
#ifndef ALKTUNNEL_NO_FAST_DECODE
typedef struct alkt__fast {
    const char *s;
    size_t n, i;
} alkt__fast;

static ALKT__INLINE void alkt__f_ws(alkt__fast *f)
{
    f->i = alkt__skip_ws(f->s, f->i, f->n);
}

static ALKT__INLINE int alkt__f_char(alkt__fast *f, char c)
{
    if (f->i < f->n && f->s[f->i] == c) { /* no whitespace before it */
        f->i++;
        return 1;
    }
    alkt__f_ws(f);
    if (f->i < f->n && f->s[f->i] == c) {
        f->i++;
        return 1;
    }
    return 0;
}

/* A string of plain bytes only (no escape, control or non-ASCII byte). */
static ALKT__INLINE int alkt__f_str(alkt__fast *f, const char **p,
                                    size_t *len)
{
    const unsigned char *s = (const unsigned char *)f->s;
    size_t i;
    alkt__f_ws(f);
    i = f->i;
    if (i >= f->n || s[i] != '"')
        return 0;
    i++;
    *p = f->s + i;
    i = alkt__str_stop(s, i, f->n);
    if (i >= f->n || s[i] != '"')
        return 0;
    *len = (size_t)(f->s + i - *p);
    f->i = i + 1;
    return 1;
}

/* A plain integer (no sign, fraction or exponent) in min..max. */
static ALKT__INLINE int alkt__f_uint(alkt__fast *f, uint64_t min,
                                     uint64_t max, uint64_t *v)
{
    const char *s = f->s;
    size_t i, start;
    uint64_t x = 0;
    size_t end;
    unsigned d;
    alkt__f_ws(f);
    i = start = f->i;
    if (i >= f->n || (d = (unsigned)(unsigned char)s[i] - '0') > 9)
        return 0;
    x = d;
    i++;
    /* no digit after a leading zero; at most 19 digits (no overflow) */
    end = d ? (f->n - start < 19 ? f->n : start + 19) : i;
    while (i < end && (d = (unsigned)(unsigned char)s[i] - '0') <= 9) {
        x = x * 10 + d;
        i++;
    }
    if ((i < f->n && (alkt__is_digit((unsigned char)s[i]) || s[i] == '.' ||
                      s[i] == 'e' || s[i] == 'E')) ||
        x < min || x > max)
        return 0;
    *v = x;
    f->i = i;
    return 1;
}

/* 1 when s[at..n) starts with key k's name and closing quote. */
static ALKT__INLINE int alkt__key_at(const alkt__fkey *k, const char *s,
                                     size_t at, size_t n)
{
    size_t m = (size_t)k->len + 1; /* with the quote: 2..16 */
#if (defined(__GNUC__) || defined(__clang__)) && \
    defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n - at >= 16) { /* a word or two, the bytes past the key shifted out */
        uint64_t a0, b0, a1, b1;
        memcpy(&a0, s + at, 8);
        memcpy(&b0, k->q, 8);
        if (m <= 8)
            return ((a0 ^ b0) << (64 - 8 * m)) == 0;
        memcpy(&a1, s + at + 8, 8);
        memcpy(&b1, k->q + 8, 8);
        return a0 == b0 && ((a1 ^ b1) << (128 - 8 * m)) == 0;
    }
#endif
    return n - at >= m && memcmp(s + at, k->q, m) == 0;
}

/* `"name":` of the schema, not seen before in this object. */
static ALKT__INLINE int alkt__f_key(alkt__fast *f, const char *const *names,
                                    const alkt__fkey *keys, int count,
                                    unsigned *seen, int *field)
{
    const char *k;
    size_t klen;
    int i, j;
    /* the key after the previous one, as encoders write it: matched in
     * place, without scanning the string first */
    alkt__f_ws(f);
    i = *field + 1 < count ? *field + 1 : 0;
    if (f->i < f->n && f->s[f->i] == '"' && !(*seen & (1u << i)) &&
        alkt__key_at(&keys[i], f->s, f->i + 1, f->n)) {
        f->i += (size_t)keys[i].len + 2;
        if (!alkt__f_char(f, ':'))
            return 0;
        *seen |= 1u << i;
        *field = i;
        return 1;
    }
    if (!alkt__f_str(f, &k, &klen) || !alkt__f_char(f, ':'))
        return 0;
    for (j = 0, i = *field + 1; j < count; j++, i++) {
        if (i >= count)
            i = 0;
        if (alkt__name_is(names[i], k, klen))
            break;
    }
    if (j == count || (*seen & (1u << i)))
        return 0;
    *seen |= 1u << i;
    *field = i;
    return 1;
}

/* After a member: 1 = another follows, 0 = the object ended, -1 = neither */
static ALKT__INLINE int alkt__f_more(alkt__fast *f, char close)
{
    if (alkt__f_char(f, ','))
        return 1;
    return alkt__f_char(f, close) ? 0 : -1;
}

static ALKT__INLINE int alkt__f_id(alkt__fast *f, char out[ALKT_ID_MAX + 1])
{
    const char *p;
    size_t n;
#if ALKT__JSON_SIMD && (defined(__GNUC__) || defined(__clang__))
    /* An id shorter than 16 bytes, its class checked and its bytes stored
     * with one load: out is in a zeroed item, and the bytes stored after
     * the id are zeros too. */
    alkt__f_ws(f);
    if (f->i < f->n && f->s[f->i] == '"' && f->n - f->i > 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(f->s + f->i + 1));
        __m128i low = _mm_or_si128(v, _mm_set1_epi8(0x20));
        __m128i ok = _mm_or_si128(
            _mm_or_si128(
                _mm_and_si128(_mm_cmpgt_epi8(low, _mm_set1_epi8('a' - 1)),
                              _mm_cmplt_epi8(low, _mm_set1_epi8('z' + 1))),
                _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                              _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)))),
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('.')),
                                      _mm_cmpeq_epi8(v, _mm_set1_epi8('_'))),
                         _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(':')),
                                      _mm_cmpeq_epi8(v, _mm_set1_epi8('-')))));
        unsigned m = (unsigned)_mm_movemask_epi8(ok) ^ 0xFFFFu;
        if (m) {
            size_t len = (size_t)__builtin_ctz(m);
            if (len && f->s[f->i + 1 + len] == '"') {
                __m128i keep = _mm_cmpgt_epi8(
                    _mm_set1_epi8((char)len),
                    _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                  14, 15));
                _mm_storeu_si128((__m128i *)(void *)out, _mm_and_si128(v, keep));
                f->i += len + 2;
                return 1;
            }
        }
    }
#endif
    if (!alkt__f_str(f, &p, &n) || alkt__check_id(p, n) != ALKT_OK)
        return 0;
    memcpy(out, p, n);
    return 1;
}

static ALKT__INLINE int alkt__f_port(alkt__fast *f, uint16_t *port)
{
    uint64_t v;
    alkt__f_ws(f);
    if (f->n - f->i >= 6) { /* 1 to 5 digits, unrolled */
        const unsigned char *s = (const unsigned char *)f->s + f->i;
        unsigned x = (unsigned)s[0] - '0', d, k;
        if (x - 1 > 8u) /* no digit, or a leading zero (0 is no port) */
            return 0;
        for (k = 1; k < 5; k++) {
            if ((d = (unsigned)s[k] - '0') > 9)
                break;
            x = x * 10 + d;
        }
        d = s[k];
        if (alkt__is_digit(d) || d == '.' || d == 'e' || d == 'E' || x > 65535)
            return 0;
        *port = (uint16_t)x;
        f->i += k;
        return 1;
    }
    if (!alkt__f_uint(f, 1, 65535, &v))
        return 0;
    *port = (uint16_t)v;
    return 1;
}

/* One field's value into the item at obj, 0 declines: the kinds open
 * params use (apart, as alkt__value_open is). */
static int alkt__f_value_open(alkt__fast *f, const alkt__fdesc *fd, void *obj)
{
    const char *p;
    size_t n;
    int which;
    switch (fd->kind) {
    case ALKT__FK_SUBSTRATE:
        if (!alkt__f_str(f, &p, &n))
            return 0;
        for (which = 0; which < 3; which++) {
            if (alkt__name_is(alkt__substrates[which], p, n)) {
                *ALKT__AT(obj, fd->at, alkt_substrate) = (alkt_substrate)(which + 1);
                return 1;
            }
        }
        return 0;
    case ALKT__FK_PATH:
        if (!alkt__f_str(f, &p, &n) || n == 0 || n > ALKT_UNIX_PATH_MAX)
            return 0;
        memcpy(ALKT__AT(obj, fd->at, char), p, n);
        return 1;
    case ALKT__FK_HOST:
        return alkt__f_str(f, &p, &n) && n <= ALKT_HOST_MAX &&
               alkt__parse_host(p, n, 1, ALKT__AT(obj, fd->at, alkt_host)) == ALKT_OK;
    default: /* ALKT__FK_PORT */
        return alkt__f_port(f, ALKT__AT(obj, fd->at, uint16_t));
    }
}

/* The common IPv4 CIDR in one pass: 1 with *ip and *prefix as
 * alkt__parse_cidr sets them, or 0 - not one, or not a plain one: that
 * parser decides. */
static int alkt__f_cidr4(const char *s, size_t n, alkt_ip *ip,
                         unsigned char *prefix)
{
    unsigned char b[4];
    uint32_t a = 0;
    size_t i = 0;
    int part;
    for (part = 0;; part++) { /* four octets, then the prefix */
        size_t start = i;
        unsigned d, v = 0;
        while (i < n && i - start < 3 &&
               (d = (unsigned)(unsigned char)s[i] - '0') <= 9) {
            v = v * 10 + d;
            i++;
        }
        if (i == start || (s[start] == '0' && i - start > 1))
            return 0; /* no digit, or a leading zero */
        if (part == 4) {
            /* the prefix ends the text; no host bit after it */
            if (i != n || v > 32 || (v < 32 && (a & (0xFFFFFFFFu >> v))))
                return 0;
            memset(ip, 0, sizeof *ip);
            ip->family = 4;
            memcpy(ip->bytes, b, 4);
            *prefix = (unsigned char)v;
            return 1;
        }
        if (v > 255 || i >= n || s[i] != (part < 3 ? '.' : '/'))
            return 0;
        b[part] = (unsigned char)v;
        a = a << 8 | v;
        i++;
    }
}

/* One field's value into the item at obj, 0 declines: every kind. */
static ALKT__INLINE int alkt__f_value(alkt__fast *f, const alkt__fdesc *fd,
                                      void *obj)
{
    const char *p;
    size_t n, k;
    int more, which;
    switch (fd->kind) {
    case ALKT__FK_ID:
        return alkt__f_id(f, ALKT__AT(obj, fd->at, char));
    case ALKT__FK_CIDR:
        return alkt__f_str(f, &p, &n) && n <= ALKT_IP_TEXT_MAX + 3 &&
               (alkt__f_cidr4(p, n, ALKT__AT(obj, fd->at, alkt_ip),
                              ALKT__AT(obj, fd->aux, unsigned char)) ||
                alkt__parse_cidr(p, n, ALKT__AT(obj, fd->at, alkt_ip),
                                 ALKT__AT(obj, fd->aux, unsigned char)) == 0);
    case ALKT__FK_PORTS:
        if (!alkt__f_char(f, '['))
            return 0;
        k = 0;
        do {
            alkt_port_range *pr = ALKT__AT(obj, fd->at, alkt_port_range) + k;
            unsigned rseen = 0;
            int rfield = ALKT__NO_FIELD;
            if (k == ALKT_PORT_RANGES_MAX || !alkt__f_char(f, '{'))
                return 0;
            do {
                if (!alkt__f_key(f, alkt__range_fields, alkt__range_keys, 2, &rseen,
                                 &rfield) ||
                    !alkt__f_port(f, rfield ? &pr->to : &pr->from))
                    return 0;
            } while ((more = alkt__f_more(f, '}')) == 1);
            if (more < 0 || rseen != 3u || pr->from > pr->to)
                return 0;
            k++;
        } while ((more = alkt__f_more(f, ']')) == 1);
        *ALKT__AT(obj, fd->aux, size_t) = k;
        return more == 0;
    case ALKT__FK_PROTOCOLS: {
        unsigned *bits = ALKT__AT(obj, fd->at, unsigned);
        if (!alkt__f_char(f, '['))
            return 0;
        do { /* the names matched in place */
            alkt__f_ws(f);
            if (f->i >= f->n || f->s[f->i] != '"')
                return 0;
            for (which = 0; which < 3; which++) {
                if (alkt__key_at(&alkt__protocol_keys[which], f->s, f->i + 1, f->n))
                    break;
            }
            if (which == 3 || (*bits & (1u << which)))
                return 0;
            f->i += (size_t)alkt__protocol_keys[which].len + 2;
            *bits |= 1u << which;
        } while ((more = alkt__f_more(f, ']')) == 1);
        return more == 0;
    }
    case ALKT__FK_SECRET:
        return alkt__f_str(f, &p, &n) &&
               alkt__parse_secret(p, n, ALKT__AT(obj, fd->at, unsigned char),
                                  ALKT__AT(obj, fd->aux, size_t)) == ALKT_OK;
    case ALKT__FK_EXPIRES:
        return alkt__f_uint(f, 0, ALKT_EXPIRES_MAX, ALKT__AT(obj, fd->at, uint64_t));
    case ALKT__FK_TOKEN:
        if (!alkt__f_str(f, &p, &n) || alkt__check_token(p, n) != 0)
            return 0;
        memcpy(ALKT__AT(obj, fd->at, char), p, n);
        return 1;
    default: /* host, port, substrate, path */
        return alkt__f_value_open(f, fd, obj);
    }
}

/* One item of a section (zeroed first); 0 declines. */
static ALKT__INLINE int alkt__f_item(alkt__fast *f,
                                     const alkt__section_desc *sd,
                        unsigned required, void *obj)
{
    const alkt__schema *sc = sd->item;
    unsigned seen = 0;
    int field = ALKT__NO_FIELD, more;
    memset(obj, 0, sd->item_size);
    if (!alkt__f_char(f, '{'))
        return 0;
    do {
        if (!alkt__f_key(f, sc->names, sc->keys, sc->count, &seen, &field) ||
            !alkt__f_value(f, &sc->fields[field], obj))
            return 0;
    } while ((more = alkt__f_more(f, '}')) == 1);
    return more == 0 && (seen & required) == required;
}

/* 1: decoded into *out (whose arrays and capacities are set, the rest
 * zeroed); 0: declined, decode with alkt__control_slow. */
static int alkt__control_fast(const char *json, size_t len,
                              const alkt_json_limits *limits,
                              alkt_control *out)
{
    alkt__fast f;
    unsigned seen = 0;
    int field = ALKT__NO_FIELD, more;
    /* the deepest control document nests 5 containers */
    if (!json || len > (limits && limits->max_size ? limits->max_size
                                                   : ALKT_JSON_SIZE_DEFAULT) ||
        (limits && limits->max_depth &&
         (limits->max_depth < 5 || limits->max_depth > ALKT_JSON_DEPTH_LIMIT)))
        return 0;
    f.s = json;
    f.n = len;
    f.i = 0;
    if (!alkt__f_char(&f, '{'))
        return 0;
    do {
        size_t k = 0;
        alkt__section_view v;
        const alkt__section_desc *sd;
        if (!alkt__f_key(&f, alkt__control_fields, alkt__control_keys,
                         ALKT__SECTIONS, &seen, &field) ||
            !alkt__f_char(&f, '['))
            return 0;
        v = alkt__section(out, field);
        sd = &alkt__sections[field];
        *v.has = 1;
        if (!alkt__f_char(&f, ']')) {
            unsigned required = alkt__required(sd->item);
            do {
                if (k == v.cap ||
                    !alkt__f_item(&f, sd, required,
                                  (unsigned char *)v.items + k * sd->item_size))
                    return 0;
                k++;
            } while ((more = alkt__f_more(&f, ']')) == 1);
            if (more < 0)
                return 0;
        }
        *v.count = k;
    } while ((more = alkt__f_more(&f, '}')) == 1);
    alkt__f_ws(&f);
    return more == 0 && f.i == f.n;
}

/* Open params in one pass from the bytes: 1 with *out as alkt__open_slow
 * decodes it, or 0 (declined: anything else, decoded by alkt__open_slow,
 * which is the reference; fuzz/params.c checks the two agree). */
static int alkt__open_fast(const char *json, size_t len,
                           const alkt_json_limits *limits, alkt_open_params *out)
{
    alkt__fast f;
    unsigned seen = 0, forbidden, required = 1u << ALKT__OP_SUBSTRATE;
    int field = ALKT__NO_FIELD, more;
    if (!json || len > (limits && limits->max_size ? limits->max_size
                                                   : ALKT_JSON_SIZE_DEFAULT) ||
        (limits && limits->max_depth > ALKT_JSON_DEPTH_LIMIT))
        return 0;
    memset(out, 0, sizeof *out);
    f.s = json;
    f.n = len;
    f.i = 0;
    if (!alkt__f_char(&f, '{'))
        return 0;
    do {
        if (!alkt__f_key(&f, alkt__open_fields, alkt__open_keys, ALKT__OP_COUNT,
                         &seen, &field) ||
            !alkt__f_value_open(&f, &alkt__open_fdesc[field], out))
            return 0;
    } while ((more = alkt__f_more(&f, '}')) == 1);
    alkt__f_ws(&f);
    if (more != 0 || f.i != f.n)
        return 0;
    /* alkt__open_rules, as a yes or no */
    if (seen & (1u << ALKT__OP_LISTEN)) {
        if (out->substrate == ALKT_SUBSTRATE_UNIX || out->host.kind == ALKT_HOST_NAME)
            return 0;
        forbidden = (1u << ALKT__OP_PORT) | (1u << ALKT__OP_PATH);
        out->kind = ALKT_OPEN_FORWARDED;
    } else if (out->substrate == ALKT_SUBSTRATE_UNIX) {
        forbidden = (1u << ALKT__OP_HOST) | (1u << ALKT__OP_PORT);
        required |= 1u << ALKT__OP_PATH;
        out->kind = ALKT_OPEN_DIRECT;
    } else {
        forbidden = 1u << ALKT__OP_PATH;
        required |= (1u << ALKT__OP_HOST) | (1u << ALKT__OP_PORT);
        out->kind = ALKT_OPEN_DIRECT;
    }
    return !(seen & forbidden) && (seen & required) == required;
}

#endif /* ALKTUNNEL_NO_FAST_DECODE */

ALKTDEF int alkt_open_params_decode(const char *json, size_t len,
                                    const alkt_json_limits *limits,
                                    alkt_open_params *out, alkt_error *err)
{
    if (!out)
        return alkt__arg_error(err);
#ifndef ALKTUNNEL_NO_FAST_DECODE
    if (alkt__open_fast(json, len, limits, out)) {
        if (err)
            memset(err, 0, sizeof *err);
        return ALKT_OK;
    }
#endif
    return alkt__open_slow(json, len, limits, out, err);
}

ALKTDEF int alkt_control_decode(const char *json, size_t len,
                                const alkt_json_limits *limits,
                                alkt_control *out, alkt_error *err)
{
    alkt_control c;
    if (!out || (!out->resources && out->resource_cap) ||
        (!out->authorizations && out->authorization_cap) ||
        (!out->revocations && out->revocation_cap) ||
        (!out->relays && out->relay_cap))
        return alkt__arg_error(err);
    alkt__control_clear(out, &c);
#ifndef ALKTUNNEL_NO_FAST_DECODE
    if (alkt__control_fast(json, len, limits, out)) {
        if (err)
            memset(err, 0, sizeof *err);
        return ALKT_OK;
    }
#endif
    return alkt__control_slow(json, len, limits, out, err);
}

/* ---- encoders ------------------------------------------------------------------ */
typedef struct alkt__w {
    char *buf;
    size_t cap, len;
} alkt__w;

static void alkt__w_raw(alkt__w *w, const char *s, size_t n)
{
    if (w->buf && n <= w->cap && w->len <= w->cap - n)
        memcpy(w->buf + w->len, s, n);
    w->len += n;
}

/* A JSON string: '"' and '\\' escaped, control characters as \b \f \n \r
 * \t or \u00XX, everything else (UTF-8 included) as is. */
static void alkt__w_str(alkt__w *w, const char *s, size_t n)
{
    size_t k, run = 0;
    alkt__w_raw(w, "\"", 1);
    for (k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        char esc[6];
        size_t elen = 2;
        if (alkt__str_class[c] == 0 || alkt__str_class[c] == 4)
            continue;
        alkt__w_raw(w, s + run, k - run);
        run = k + 1;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc + 1, "u00", 3);
            esc[4] = "0123456789abcdef"[c >> 4];
            esc[5] = "0123456789abcdef"[c & 15];
            elen = 6;
            break;
        }
        alkt__w_raw(w, esc, elen);
    }
    alkt__w_raw(w, s + run, n - run);
    alkt__w_raw(w, "\"", 1);
}

static void alkt__w_cstr(alkt__w *w, const char *s)
{
    alkt__w_str(w, s, strlen(s));
}

static void alkt__w_u64(alkt__w *w, uint64_t v)
{
    char out[20];
    alkt__w_raw(w, out, alkt__fmt_u(out, v, 10));
}

/* `,"key":` (no comma for the first key of an object) */
static void alkt__w_key(alkt__w *w, int *first, const char *key)
{
    if (!*first)
        alkt__w_raw(w, ",", 1);
    *first = 0;
    alkt__w_cstr(w, key);
    alkt__w_raw(w, ":", 1);
}

static void alkt__w_ip(alkt__w *w, const alkt_ip *ip)
{
    char text[ALKT_IP_TEXT_MAX];
    alkt__w_str(w, text, alkt_ip_format(ip, text));
}

static void alkt__w_host(alkt__w *w, const alkt_host *h)
{
    if (h->kind == ALKT_HOST_IP)
        alkt__w_ip(w, &h->ip);
    else
        alkt__w_cstr(w, h->name);
}

static int alkt__enc_start(alkt__dec *d, alkt__w *w, char *buf, size_t cap,
                           alkt_error *err)
{
    memset(err, 0, sizeof *err);
    d->err = err;
    d->p.buf = NULL; /* encoder errors point at offset 0 of nothing */
    d->p.len = 0;
    d->nseg = 0;
    w->buf = buf;
    w->cap = cap;
    w->len = 0;
    if (!buf && cap)
        return alkt__fail(d, ALKT_ERR_ARG, 0);
    return ALKT_OK;
}

static ptrdiff_t alkt__enc_finish(alkt__dec *d, const alkt__w *w)
{
    if (w->buf && w->len > w->cap)
        return alkt__fail(d, ALKT_ERR_BUFFER_TOO_SMALL, 0);
    if (w->len > (size_t)PTRDIFF_MAX)
        return alkt__fail(d, ALKT_ERR_TOO_LARGE, 0);
    return (ptrdiff_t)w->len;
}

/* Field check for an encoder: on failure the error names the field. */
static int alkt__enc_check(alkt__dec *d, int rc, const char *field)
{
    if (rc == ALKT_OK)
        return ALKT_OK;
    alkt__push_name(d, field);
    rc = alkt__fail(d, rc, 0);
    alkt__pop(d);
    return rc;
}

static int alkt__enc_id(alkt__dec *d, const char *id, const char *field)
{
    return alkt__enc_check(
        d, alkt__check_id(id, alkt__bounded_len(id, ALKT_ID_MAX)), field);
}

ALKTDEF int alkt_open_params_direct(alkt_open_params *p, alkt_substrate substrate,
                                    const char *host, size_t len, uint16_t port)
{
    int rc;
    if (!p)
        return ALKT_ERR_ARG;
    memset(p, 0, sizeof *p);
    if (!host || (substrate != ALKT_SUBSTRATE_TCP && substrate != ALKT_SUBSTRATE_UDP))
        return ALKT_ERR_ARG;
    if (port == 0)
        return ALKT_ERR_OUT_OF_RANGE;
    if (len > ALKT_HOST_MAX)
        return ALKT_ERR_STRING_TOO_LONG;
    rc = alkt__parse_host(host, len, 1, &p->host);
    if (rc != ALKT_OK) {
        memset(p, 0, sizeof *p);
        return rc;
    }
    p->kind = ALKT_OPEN_DIRECT;
    p->substrate = substrate;
    p->port = port;
    return ALKT_OK;
}

ALKTDEF ptrdiff_t alkt_open_params_encode(const alkt_open_params *p,
                                          char *buf, size_t cap,
                                          alkt_error *err)
{
    alkt__dec d;
    alkt__w w;
    alkt_error local;
    int first = 1, rc;
    rc = alkt__enc_start(&d, &w, buf, cap, err ? err : &local);
    if (rc)
        return rc;
    if (!p)
        return alkt__fail(&d, ALKT_ERR_ARG, 0);
    if (p->substrate < ALKT_SUBSTRATE_TCP || p->substrate > ALKT_SUBSTRATE_UNIX)
        return alkt__enc_check(&d, ALKT_ERR_BAD_ENUM, "substrate");
    /* fields the kind does not use must be zero: the decoder leaves them
     * so, and decode(encode(p)) == p holds only for such structs */
    if ((p->kind == ALKT_OPEN_FORWARDED || p->substrate == ALKT_SUBSTRATE_UNIX) &&
        p->port != 0)
        return alkt__enc_check(&d, ALKT_ERR_FIELD_NOT_ALLOWED, "port");
    if (p->kind != ALKT_OPEN_FORWARDED && p->listen != 0)
        return alkt__enc_check(&d, ALKT_ERR_FIELD_NOT_ALLOWED, "listen");
    if ((p->kind == ALKT_OPEN_FORWARDED || p->substrate != ALKT_SUBSTRATE_UNIX) &&
        !alkt__all_zero((const unsigned char *)p->path, sizeof p->path))
        return alkt__enc_check(&d, ALKT_ERR_FIELD_NOT_ALLOWED, "path");
    if (p->kind == ALKT_OPEN_DIRECT && p->substrate == ALKT_SUBSTRATE_UNIX &&
        !alkt__host_is_none(&p->host))
        return alkt__enc_check(&d, ALKT_ERR_FIELD_NOT_ALLOWED, "host");
    alkt__w_raw(&w, "{", 1);
    if (p->kind == ALKT_OPEN_FORWARDED) {
        if (p->substrate == ALKT_SUBSTRATE_UNIX)
            return alkt__enc_check(&d, ALKT_ERR_BAD_ENUM, "substrate");
        if (p->listen == 0)
            return alkt__enc_check(&d, ALKT_ERR_OUT_OF_RANGE, "listen");
        rc = p->host.kind == ALKT_HOST_NONE
                 ? (alkt__host_is_none(&p->host) ? ALKT_OK
                                                 : ALKT_ERR_BAD_ADDRESS)
                 : alkt__check_host(&p->host, 0);
        if (rc != ALKT_OK)
            return alkt__enc_check(&d, rc, "host");
        alkt__w_key(&w, &first, "listen");
        alkt__w_u64(&w, p->listen);
        alkt__w_key(&w, &first, "substrate");
        alkt__w_cstr(&w, alkt__substrates[p->substrate - 1]);
        if (p->host.kind != ALKT_HOST_NONE) {
            alkt__w_key(&w, &first, "host");
            alkt__w_host(&w, &p->host);
        }
    } else if (p->kind == ALKT_OPEN_DIRECT &&
               p->substrate == ALKT_SUBSTRATE_UNIX) {
        size_t n = alkt__bounded_len(p->path, ALKT_UNIX_PATH_MAX);
        if ((rc = alkt__check_unix_path(p->path, n)) != ALKT_OK)
            return alkt__enc_check(&d, rc, "path");
        alkt__w_key(&w, &first, "substrate");
        alkt__w_cstr(&w, "unix");
        alkt__w_key(&w, &first, "path");
        alkt__w_str(&w, p->path, n);
    } else if (p->kind == ALKT_OPEN_DIRECT) {
        if ((rc = alkt__check_host(&p->host, 1)) != ALKT_OK)
            return alkt__enc_check(&d, rc, "host");
        if (p->port == 0)
            return alkt__enc_check(&d, ALKT_ERR_OUT_OF_RANGE, "port");
        alkt__w_key(&w, &first, "substrate");
        alkt__w_cstr(&w, alkt__substrates[p->substrate - 1]);
        alkt__w_key(&w, &first, "host");
        alkt__w_host(&w, &p->host);
        alkt__w_key(&w, &first, "port");
        alkt__w_u64(&w, p->port);
    } else {
        return alkt__enc_check(&d, ALKT_ERR_BAD_ENUM, "kind");
    }
    alkt__w_raw(&w, "}", 1);
    return alkt__enc_finish(&d, &w);
}

ALKTDEF ptrdiff_t alkt_listen_reply_encode(const alkt_listen_reply *r,
                                           char *buf, size_t cap,
                                           alkt_error *err)
{
    alkt__dec d;
    alkt__w w;
    alkt_error local;
    int first = 1, rc = alkt__enc_start(&d, &w, buf, cap, err ? err : &local);
    if (rc)
        return rc;
    if (!r)
        return alkt__fail(&d, ALKT_ERR_ARG, 0);
    if ((rc = alkt__check_ip(&r->address)) != ALKT_OK)
        return alkt__enc_check(&d, rc, "address");
    if (r->port == 0)
        return alkt__enc_check(&d, ALKT_ERR_OUT_OF_RANGE, "port");
    alkt__w_raw(&w, "{", 1);
    alkt__w_key(&w, &first, "address");
    alkt__w_ip(&w, &r->address);
    alkt__w_key(&w, &first, "port");
    alkt__w_u64(&w, r->port);
    alkt__w_raw(&w, "}", 1);
    return alkt__enc_finish(&d, &w);
}

/* The encoder of the control message's items (open params have their own:
 * a kind decides their fields and key order), so the control kinds only. */
/* A field's value checked before anything is written: the error names
 * the field (and for a port range, its index and end). */
static int alkt__enc_value_check(alkt__dec *d, const char *name, const alkt__fdesc *fd,
                                 const void *obj)
{
    size_t k, count;
    int rc;
    switch (fd->kind) {
    case ALKT__FK_ID:
        return alkt__enc_id(d, ALKT__CAT(obj, fd->at, char), name);
    case ALKT__FK_CIDR:
        return alkt__enc_check(d, alkt__check_cidr(ALKT__CAT(obj, fd->at, alkt_ip),
                                                   *ALKT__CAT(obj, fd->aux, unsigned char)),
                               name);
    case ALKT__FK_PORTS:
        count = *ALKT__CAT(obj, fd->aux, size_t);
        if (count > ALKT_PORT_RANGES_MAX)
            return alkt__enc_check(d, ALKT_ERR_TOO_MANY, name);
        for (k = 0; k < count; k++) {
            const alkt_port_range *pr = ALKT__CAT(obj, fd->at, alkt_port_range) + k;
            rc = pr->from == 0 || pr->to == 0 ? ALKT_ERR_OUT_OF_RANGE
                 : pr->from > pr->to          ? ALKT_ERR_BAD_RANGE
                                              : ALKT_OK;
            if (rc) {
                alkt__push_name(d, name);
                alkt__push(d, NULL, 0, k);
                rc = alkt__enc_check(d, rc, pr->from == 0 ? "from" : "to");
                d->nseg -= 2;
                return rc;
            }
        }
        return ALKT_OK;
    case ALKT__FK_PROTOCOLS:
        return alkt__enc_check(d,
                               (*ALKT__CAT(obj, fd->at, unsigned) &
                                ~(ALKT_PROTO_TCP | ALKT_PROTO_UDP | ALKT_PROTO_ICMP))
                                   ? ALKT_ERR_BAD_ENUM
                                   : ALKT_OK,
                               name);
    case ALKT__FK_SECRET:
        k = *ALKT__CAT(obj, fd->aux, size_t);
        if (k == 0 && !fd->required) return ALKT_OK;   /* absent */
        return alkt__enc_check(
            d, k < ALKT_SECRET_MIN || k > ALKT_SECRET_MAX ? ALKT_ERR_BAD_VALUE : ALKT_OK, name);
    case ALKT__FK_EXPIRES:
        return alkt__enc_check(d,
                               *ALKT__CAT(obj, fd->at, uint64_t) > ALKT_EXPIRES_MAX
                                   ? ALKT_ERR_OUT_OF_RANGE
                                   : ALKT_OK,
                               name);
    case ALKT__FK_HOST:
        return alkt__enc_check(d, alkt__check_host(ALKT__CAT(obj, fd->at, alkt_host), 1),
                               name);
    case ALKT__FK_PORT:
        return alkt__enc_check(
            d, *ALKT__CAT(obj, fd->at, uint16_t) == 0 ? ALKT_ERR_OUT_OF_RANGE : ALKT_OK, name);
    default: /* ALKT__FK_TOKEN */
        return alkt__enc_check(d,
                               alkt__check_token(ALKT__CAT(obj, fd->at, char),
                                                 alkt__bounded_len(ALKT__CAT(obj, fd->at, char),
                                                                   ALKT_TOKEN_MAX)),
                               name);
    }
}

/* A checked field, key and value; an optional one only when present. */
static void alkt__enc_value(alkt__w *w, int *first, const char *name, const alkt__fdesc *fd,
                            const void *obj)
{
    size_t k, count;
    switch (fd->kind) {
    case ALKT__FK_ID:
        alkt__w_key(w, first, name);
        alkt__w_cstr(w, ALKT__CAT(obj, fd->at, char));
        return;
    case ALKT__FK_CIDR: {
        char text[ALKT_IP_TEXT_MAX + 4];
        size_t n = alkt_ip_format(ALKT__CAT(obj, fd->at, alkt_ip), text);
        text[n++] = '/';
        n += alkt__fmt_u(text + n, *ALKT__CAT(obj, fd->aux, unsigned char), 10);
        alkt__w_key(w, first, name);
        alkt__w_str(w, text, n);
        return;
    }
    case ALKT__FK_PORTS:
        count = *ALKT__CAT(obj, fd->aux, size_t);
        if (!count)
            return;
        alkt__w_key(w, first, name);
        alkt__w_raw(w, "[", 1);
        for (k = 0; k < count; k++) {
            const alkt_port_range *pr = ALKT__CAT(obj, fd->at, alkt_port_range) + k;
            alkt__w_raw(w, k ? ",{\"from\":" : "{\"from\":", k ? 9 : 8);
            alkt__w_u64(w, pr->from);
            alkt__w_raw(w, ",\"to\":", 6);
            alkt__w_u64(w, pr->to);
            alkt__w_raw(w, "}", 1);
        }
        alkt__w_raw(w, "]", 1);
        return;
    case ALKT__FK_PROTOCOLS: {
        unsigned bits = *ALKT__CAT(obj, fd->at, unsigned);
        int any = 0;
        if (!bits)
            return;
        alkt__w_key(w, first, name);
        alkt__w_raw(w, "[", 1);
        for (k = 0; k < 3; k++) {
            if (bits & (1u << k)) {
                if (any)
                    alkt__w_raw(w, ",", 1);
                alkt__w_cstr(w, alkt__protocols[k]);
                any = 1;
            }
        }
        alkt__w_raw(w, "]", 1);
        return;
    }
    case ALKT__FK_SECRET: {
        const unsigned char *secret = ALKT__CAT(obj, fd->at, unsigned char);
        char hex[2 * ALKT_SECRET_MAX];
        count = *ALKT__CAT(obj, fd->aux, size_t);
        if (count == 0 && !fd->required) return;   /* absent */
        for (k = 0; k < count; k++) {
            hex[2 * k] = "0123456789abcdef"[secret[k] >> 4];
            hex[2 * k + 1] = "0123456789abcdef"[secret[k] & 15];
        }
        alkt__w_key(w, first, name);
        alkt__w_str(w, hex, 2 * count);
        return;
    }
    case ALKT__FK_EXPIRES:
        alkt__w_key(w, first, name);
        alkt__w_u64(w, *ALKT__CAT(obj, fd->at, uint64_t));
        return;
    case ALKT__FK_HOST:
        alkt__w_key(w, first, name);
        alkt__w_host(w, ALKT__CAT(obj, fd->at, alkt_host));
        return;
    case ALKT__FK_PORT:
        alkt__w_key(w, first, name);
        alkt__w_u64(w, *ALKT__CAT(obj, fd->at, uint16_t));
        return;
    default: /* ALKT__FK_TOKEN */
        alkt__w_key(w, first, name);
        alkt__w_str(w, ALKT__CAT(obj, fd->at, char),
                    alkt__bounded_len(ALKT__CAT(obj, fd->at, char), ALKT_TOKEN_MAX));
        return;
    }
}

/* One item: every field checked in schema order, then written. */
static int alkt__enc_item(alkt__dec *d, alkt__w *w, const alkt__schema *sc, const void *obj)
{
    int i, rc, first = 1;
    for (i = 0; i < sc->count; i++)
        if ((rc = alkt__enc_value_check(d, sc->names[i], &sc->fields[i], obj)) != ALKT_OK)
            return rc;
    alkt__w_raw(w, "{", 1);
    for (i = 0; i < sc->count; i++)
        alkt__enc_value(w, &first, sc->names[i], &sc->fields[i], obj);
    alkt__w_raw(w, "}", 1);
    return ALKT_OK;
}

ALKTDEF ptrdiff_t alkt_control_encode(const alkt_control *c, char *buf,
                                      size_t cap, alkt_error *err)
{
    alkt__dec d;
    alkt__w w;
    alkt_error local;
    int first = 1, section, rc, any = 0;
    rc = alkt__enc_start(&d, &w, buf, cap, err ? err : &local);
    if (rc)
        return rc;
    if (!c)
        return alkt__fail(&d, ALKT_ERR_ARG, 0);
    for (section = 0; section < ALKT__SECTIONS; section++)
        any |= *alkt__section((alkt_control *)c, section).has;
    if (!any)
        return alkt__fail(&d, ALKT_ERR_MISSING_FIELD, 0);
    alkt__w_raw(&w, "{", 1);
    for (section = 0; section < ALKT__SECTIONS; section++) {
        /* (read only: the view is the decoder's, without const) */
        alkt__section_view v = alkt__section((alkt_control *)c, section);
        const alkt__section_desc *sd = &alkt__sections[section];
        size_t k;
        if (!*v.has)
            continue;
        alkt__push_name(&d, alkt__control_fields[section]);
        if (*v.count && !v.items)
            return alkt__fail(&d, ALKT_ERR_ARG, 0);
        alkt__w_key(&w, &first, alkt__control_fields[section]);
        alkt__w_raw(&w, "[", 1);
        for (k = 0; k < *v.count; k++) {
            if (k)
                alkt__w_raw(&w, ",", 1);
            alkt__push(&d, NULL, 0, k);
            rc = alkt__enc_item(&d, &w, sd->item,
                                (const unsigned char *)v.items + k * sd->item_size);
            if (rc)
                return rc;
            alkt__pop(&d);
        }
        alkt__w_raw(&w, "]", 1);
        alkt__pop(&d);
    }
    alkt__w_raw(&w, "}", 1);
    return alkt__enc_finish(&d, &w);
}

/* ---- SHA-256 (FIPS 180-4), HMAC-SHA-256 (RFC 2104) ------------------------- */
/* FIPS 180-4 section 4.2.2: first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes. */
static const uint32_t alkt__sha256_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u,
    0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
    0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
    0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
    0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u,
    0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u,
    0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u
};

/* FIPS 180-4 section 5.3.3: initial hash value. */
static const uint32_t alkt__sha256_iv[8] = {
    0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
    0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u
};

/* Zero memory through a volatile pointer so the stores are not elided. */
/* Zeroes that the compiler may not drop as dead stores: memset through a
 * pointer it cannot see through (a byte-wise volatile loop cost a fifth
 * of a plaintext handshake). */
static void *(*const volatile alkt__wipe_memset)(void *, int, size_t) = memset;

static void alkt__sha256_wipe(void *p, size_t n)
{
    if (n) (void)alkt__wipe_memset(p, 0, n);
}

static uint32_t alkt__sha256_load32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void alkt__sha256_store32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* n must be in 1..31 */
static uint32_t alkt__sha256_rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32u - n));
}

/* SHA-256 functions of FIPS 180-4 section 4.1.2. */
static uint32_t alkt__sha256_bsig0(uint32_t x)
{
    return alkt__sha256_rotr(x, 2) ^ alkt__sha256_rotr(x, 13) ^ alkt__sha256_rotr(x, 22);
}
static uint32_t alkt__sha256_bsig1(uint32_t x)
{
    return alkt__sha256_rotr(x, 6) ^ alkt__sha256_rotr(x, 11) ^ alkt__sha256_rotr(x, 25);
}
static uint32_t alkt__sha256_ssig0(uint32_t x)
{
    return alkt__sha256_rotr(x, 7) ^ alkt__sha256_rotr(x, 18) ^ (x >> 3);
}
static uint32_t alkt__sha256_ssig1(uint32_t x)
{
    return alkt__sha256_rotr(x, 17) ^ alkt__sha256_rotr(x, 19) ^ (x >> 10);
}

/* One round: instead of shifting a..h down each round, the caller rotates
 * the argument names, so only d and h are written.  wt is W[t]. */
#define ALKT__SHA256_ROUND(a, b, c, d, e, f, g, h, t, wt)                     \
    do {                                                                     \
        uint32_t alkt__t1 = (h) + alkt__sha256_bsig1(e) +                    \
                            ((g) ^ ((e) & ((f) ^ (g)))) +                    \
                            alkt__sha256_k[t] + (wt);                        \
        uint32_t alkt__t2 = alkt__sha256_bsig0(a) +                          \
                            (((a) & (b)) | ((c) & ((a) | (b))));             \
        (d) += alkt__t1;                                                     \
        (h) = alkt__t1 + alkt__t2;                                           \
    } while (0)

/* W[t] for t >= 16 in a 16-word rolling window: w[t & 15] holds W[t-16]. */
#define ALKT__SHA256_SCHED(w, t)                                             \
    ((w)[(t) & 15] += alkt__sha256_ssig1((w)[((t) - 2) & 15]) +              \
                      (w)[((t) - 7) & 15] +                                  \
                      alkt__sha256_ssig0((w)[((t) - 15) & 15]))

#define ALKT__SHA256_EIGHT(t, W)                                             \
    do {                                                                     \
        ALKT__SHA256_ROUND(a, b, c, d, e, f, g, hh, (t) + 0, W(w, (t) + 0)); \
        ALKT__SHA256_ROUND(hh, a, b, c, d, e, f, g, (t) + 1, W(w, (t) + 1)); \
        ALKT__SHA256_ROUND(g, hh, a, b, c, d, e, f, (t) + 2, W(w, (t) + 2)); \
        ALKT__SHA256_ROUND(f, g, hh, a, b, c, d, e, (t) + 3, W(w, (t) + 3)); \
        ALKT__SHA256_ROUND(e, f, g, hh, a, b, c, d, (t) + 4, W(w, (t) + 4)); \
        ALKT__SHA256_ROUND(d, e, f, g, hh, a, b, c, (t) + 5, W(w, (t) + 5)); \
        ALKT__SHA256_ROUND(c, d, e, f, g, hh, a, b, (t) + 6, W(w, (t) + 6)); \
        ALKT__SHA256_ROUND(b, c, d, e, f, g, hh, a, (t) + 7, W(w, (t) + 7)); \
    } while (0)

#define ALKT__SHA256_W0(w, t) ((w)[t])

#if ALKT__SHA_NI
/* Two rounds per sha256rnds2, the state as ABEF and CDGH; the schedule in
 * four registers: m[g % 4] holds W[4g..4g+3] while group g runs. */
#define ALKT__NI_ROUNDS(g)                                                   \
    do {                                                                     \
        __m128i wk = _mm_add_epi32(m[(g) % 4], _mm_loadu_si128(              \
                         (const __m128i *)(const void *)(alkt__sha256_k + 4 * (g)))); \
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                        \
        wk = _mm_shuffle_epi32(wk, 0x0E);                                    \
        abef = _mm_sha256rnds2_epu32(abef, cdgh, wk);                        \
        /* (the names swap roles each call: after the pair they are right) */\
        if ((g) >= 3 && (g) <= 14)                                           \
            m[((g) + 1) % 4] = _mm_sha256msg2_epu32(                         \
                _mm_add_epi32(m[((g) + 1) % 4],                              \
                              _mm_alignr_epi8(m[(g) % 4], m[((g) + 3) % 4], 4)), \
                m[(g) % 4]);                                                 \
        if ((g) >= 1 && (g) <= 12)                                           \
            m[((g) + 3) % 4] = _mm_sha256msg1_epu32(m[((g) + 3) % 4], m[(g) % 4]); \
    } while (0)

__attribute__((target("sha,ssse3,sse4.1")))
static void alkt__sha256_blocks_ni(uint32_t h[8], const unsigned char *p,
                                   size_t nblocks)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i abef, cdgh, t;
    t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(void *)h), 0xB1);
    cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(void *)(h + 4)), 0x1B);
    abef = _mm_alignr_epi8(t, cdgh, 8);
    cdgh = _mm_blend_epi16(cdgh, t, 0xF0);
    while (nblocks--) {
        __m128i m[4], abef0 = abef, cdgh0 = cdgh;
        int g;
        for (g = 0; g < 4; g++)
            m[g] = _mm_shuffle_epi8(
                _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * g)), bswap);
        ALKT__NI_ROUNDS(0); ALKT__NI_ROUNDS(1); ALKT__NI_ROUNDS(2);
        ALKT__NI_ROUNDS(3); ALKT__NI_ROUNDS(4); ALKT__NI_ROUNDS(5);
        ALKT__NI_ROUNDS(6); ALKT__NI_ROUNDS(7); ALKT__NI_ROUNDS(8);
        ALKT__NI_ROUNDS(9); ALKT__NI_ROUNDS(10); ALKT__NI_ROUNDS(11);
        ALKT__NI_ROUNDS(12); ALKT__NI_ROUNDS(13); ALKT__NI_ROUNDS(14);
        ALKT__NI_ROUNDS(15);
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
        p += 64;
    }
    t = _mm_shuffle_epi32(abef, 0x1B);
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)(void *)h, _mm_blend_epi16(t, cdgh, 0xF0));
    _mm_storeu_si128((__m128i *)(void *)(h + 4), _mm_alignr_epi8(cdgh, t, 8));
}
#undef ALKT__NI_ROUNDS

/* 1: the SHA extensions (with SSSE3 and SSE4.1) are there. Asked once;
 * alkt__sha256_portable_only = 1 makes every hash take the portable code
 * (the tests run the vectors both ways). */
static int alkt__sha256_portable_only;
static int alkt__sha256_have_ni(void)
{
    static int have = -1;    /* (a race writes the same answer) */
    if (have < 0) {
        unsigned a, b, c, d;
        int ok = __get_cpuid(1, &a, &b, &c, &d) && (c >> 9 & 1) && (c >> 19 & 1) &&
                 __get_cpuid_max(0, NULL) >= 7;
        if (ok) {
            __cpuid_count(7, 0, a, b, c, d);
            ok = (int)(b >> 29 & 1);
        }
        have = ok;
    }
    return have && !alkt__sha256_portable_only;
}
#endif

/* Process nblocks consecutive 64-byte blocks starting at p. */
static void alkt__sha256_blocks(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
    uint32_t w[16];
    uint32_t a, b, c, d, e, f, g, hh;
    unsigned t;

#if ALKT__SHA_NI
    if (alkt__sha256_have_ni()) {
        alkt__sha256_blocks_ni(h, p, nblocks);
        return;
    }
#endif
    while (nblocks--) {
        for (t = 0; t < 16; t++)
            w[t] = alkt__sha256_load32(p + 4 * t);

        a = h[0]; b = h[1]; c = h[2]; d = h[3];
        e = h[4]; f = h[5]; g = h[6]; hh = h[7];

        ALKT__SHA256_EIGHT(0, ALKT__SHA256_W0);
        ALKT__SHA256_EIGHT(8, ALKT__SHA256_W0);
        for (t = 16; t < 64; t += 8)
            ALKT__SHA256_EIGHT(t, ALKT__SHA256_SCHED);

        h[0] += a; h[1] += b; h[2] += c; h[3] += d;
        h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
        p += 64;
    }
    {   /* the schedule can hold key material (HMAC pads): clear it */
        volatile uint32_t *vw = w;
        for (t = 0; t < 16; t++) vw[t] = 0;
    }
}

#undef ALKT__SHA256_W0
#undef ALKT__SHA256_EIGHT
#undef ALKT__SHA256_SCHED
#undef ALKT__SHA256_ROUND

ALKTDEF void alkt_sha256_init(alkt_sha256_ctx *c)
{
    int i;
    for (i = 0; i < 8; i++) c->h[i] = alkt__sha256_iv[i];
    c->total = 0;
    c->fill = 0;
}

ALKTDEF void alkt_sha256_update(alkt_sha256_ctx *c, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;

    if (len == 0) return;              /* data may be NULL when len is 0 */
    c->total += (uint64_t)len;

    if (c->fill) {
        size_t n = ALKT_SHA256_BLOCK - c->fill;
        if (n > len) n = len;
        memcpy(c->buf + c->fill, p, n);
        c->fill += n;
        p += n;
        len -= n;
        if (c->fill < ALKT_SHA256_BLOCK) return;
        alkt__sha256_blocks(c->h, c->buf, 1);
        c->fill = 0;
    }
    if (len >= ALKT_SHA256_BLOCK) {
        size_t nb = len / ALKT_SHA256_BLOCK;
        alkt__sha256_blocks(c->h, p, nb);
        p += nb * ALKT_SHA256_BLOCK;
        len -= nb * ALKT_SHA256_BLOCK;
    }
    if (len) {
        memcpy(c->buf, p, len);
        c->fill = len;
    }
}

ALKTDEF void alkt_sha256_final(alkt_sha256_ctx *c, unsigned char out[ALKT_SHA256_SIZE])
{
    uint64_t bits = c->total << 3;     /* message length in bits, mod 2^64 */
    size_t i = c->fill;

    c->buf[i++] = 0x80;
    if (i > ALKT_SHA256_BLOCK - 8) {
        memset(c->buf + i, 0, ALKT_SHA256_BLOCK - i);
        alkt__sha256_blocks(c->h, c->buf, 1);
        i = 0;
    }
    memset(c->buf + i, 0, ALKT_SHA256_BLOCK - 8 - i);
    alkt__sha256_store32(c->buf + 56, (uint32_t)(bits >> 32));
    alkt__sha256_store32(c->buf + 60, (uint32_t)bits);
    alkt__sha256_blocks(c->h, c->buf, 1);

    for (i = 0; i < 8; i++)
        alkt__sha256_store32(out + 4 * i, c->h[i]);
    alkt__sha256_wipe(c, sizeof *c);
}

ALKTDEF void alkt_sha256(const void *data, size_t len, unsigned char out[ALKT_SHA256_SIZE])
{
    alkt_sha256_ctx c;
    alkt_sha256_init(&c);
    alkt_sha256_update(&c, data, len);
    alkt_sha256_final(&c, out);        /* wipes c */
}

ALKTDEF void alkt_hmac_sha256_init(alkt_hmac_sha256_ctx *m, const void *key, size_t key_len)
{
    unsigned char k0[ALKT_SHA256_BLOCK];
    unsigned char pad[ALKT_SHA256_BLOCK];
    int i;

    memset(k0, 0, sizeof k0);
    if (key_len > ALKT_SHA256_BLOCK)
        alkt_sha256(key, key_len, k0);           /* K0 = H(K) || zeros */
    else if (key_len)
        memcpy(k0, key, key_len);                /* K0 = K || zeros */

    for (i = 0; i < ALKT_SHA256_BLOCK; i++) pad[i] = (unsigned char)(k0[i] ^ 0x36u);
    alkt_sha256_init(&m->inner);
    alkt_sha256_update(&m->inner, pad, sizeof pad);

    for (i = 0; i < ALKT_SHA256_BLOCK; i++) pad[i] = (unsigned char)(k0[i] ^ 0x5cu);
    alkt_sha256_init(&m->outer);
    alkt_sha256_update(&m->outer, pad, sizeof pad);

    alkt__sha256_wipe(k0, sizeof k0);
    alkt__sha256_wipe(pad, sizeof pad);
}

ALKTDEF void alkt_hmac_sha256_update(alkt_hmac_sha256_ctx *m, const void *data, size_t len)
{
    alkt_sha256_update(&m->inner, data, len);
}

ALKTDEF void alkt_hmac_sha256_final(alkt_hmac_sha256_ctx *m, unsigned char out[ALKT_SHA256_SIZE])
{
    unsigned char ih[ALKT_SHA256_SIZE];
    alkt_sha256_final(&m->inner, ih);            /* wipes m->inner */
    alkt_sha256_update(&m->outer, ih, sizeof ih);
    alkt_sha256_final(&m->outer, out);           /* wipes m->outer */
    alkt__sha256_wipe(ih, sizeof ih);
}

ALKTDEF void alkt_hmac_sha256(const void *key, size_t key_len, const void *data, size_t len,
                              unsigned char out[ALKT_SHA256_SIZE])
{
    alkt_hmac_sha256_ctx m;
    alkt_hmac_sha256_init(&m, key, key_len);
    alkt_hmac_sha256_update(&m, data, len);
    alkt_hmac_sha256_final(&m, out);             /* wipes m */
}

ALKTDEF int alkt_ct_equal(const void *a, const void *b, size_t len)
{
    /* volatile reads: every byte is loaded, no early exit can be synthesised */
    const volatile unsigned char *x = (const volatile unsigned char *)a;
    const volatile unsigned char *y = (const volatile unsigned char *)b;
    unsigned int d = 0;
    size_t i;

    ALKTUNNEL_CT_COUNT(len);
    for (i = 0; i < len; i++)
        d |= (unsigned int)(x[i] ^ y[i]);
    /* d is 0..255: (d - 1) >> 8 has bit 0 set only when d == 0 */
    return (int)(1u & ((d - 1u) >> 8));
}

/* ---- ChaCha20 (RFC 8439 2.3, 2.4) ------------------------------------------- */
static uint32_t alkt__le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void alkt__putle32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

#define ALKT__ROTL32(x, n) (((x) << (n)) | ((x) >> (32 - (n))))
#define ALKT__QROUND(a, b, c, d)                                              \
    do {                                                                     \
        a += b; d ^= a; d = ALKT__ROTL32(d, 16);                             \
        c += d; b ^= c; b = ALKT__ROTL32(b, 12);                             \
        a += b; d ^= a; d = ALKT__ROTL32(d, 8);                              \
        c += d; b ^= c; b = ALKT__ROTL32(b, 7);                              \
    } while (0)

/* One 64-byte block of key stream for the state st (st[12] the counter). */
static void alkt__chacha20_block(uint32_t ks[16], const uint32_t st[16])
{
    uint32_t x0 = st[0], x1 = st[1], x2 = st[2], x3 = st[3], x4 = st[4],
             x5 = st[5], x6 = st[6], x7 = st[7], x8 = st[8], x9 = st[9],
             x10 = st[10], x11 = st[11], x12 = st[12], x13 = st[13],
             x14 = st[14], x15 = st[15];
    int i;
    for (i = 0; i < 10; i++) {
        ALKT__QROUND(x0, x4, x8, x12);  /* columns */
        ALKT__QROUND(x1, x5, x9, x13);
        ALKT__QROUND(x2, x6, x10, x14);
        ALKT__QROUND(x3, x7, x11, x15);
        ALKT__QROUND(x0, x5, x10, x15); /* diagonals */
        ALKT__QROUND(x1, x6, x11, x12);
        ALKT__QROUND(x2, x7, x8, x13);
        ALKT__QROUND(x3, x4, x9, x14);
    }
    ks[0] = x0 + st[0]; ks[1] = x1 + st[1]; ks[2] = x2 + st[2];
    ks[3] = x3 + st[3]; ks[4] = x4 + st[4]; ks[5] = x5 + st[5];
    ks[6] = x6 + st[6]; ks[7] = x7 + st[7]; ks[8] = x8 + st[8];
    ks[9] = x9 + st[9]; ks[10] = x10 + st[10]; ks[11] = x11 + st[11];
    ks[12] = x12 + st[12]; ks[13] = x13 + st[13]; ks[14] = x14 + st[14];
    ks[15] = x15 + st[15];
}

#ifdef ALKT__CHACHA_SIMD
/* Four blocks at once with SSE2 (every x86-64 has it): each register holds
 * one state word of the four blocks. 256 bytes of out = in ^ key stream;
 * st[12] moves on by 4. Same results as the portable code (the tests
 * compare the two). */
static int alkt__chacha_portable_only; /* tests: force the portable path */
#define ALKT__ROTV(v, n) \
    _mm_or_si128(_mm_slli_epi32((v), (n)), _mm_srli_epi32((v), 32 - (n)))
#define ALKT__QROUNDV(a, b, c, d)                                             \
    do {                                                                     \
        a = _mm_add_epi32(a, b); d = ALKT__ROTV(_mm_xor_si128(d, a), 16);    \
        c = _mm_add_epi32(c, d); b = ALKT__ROTV(_mm_xor_si128(b, c), 12);    \
        a = _mm_add_epi32(a, b); d = ALKT__ROTV(_mm_xor_si128(d, a), 8);     \
        c = _mm_add_epi32(c, d); b = ALKT__ROTV(_mm_xor_si128(b, c), 7);     \
    } while (0)
static void alkt__chacha20_x4(unsigned char *out, const unsigned char *in,
                              uint32_t st[16])
{
    __m128i x[16], o[16];
    int i;
    for (i = 0; i < 16; i++) o[i] = _mm_set1_epi32((int)st[i]);
    o[12] = _mm_add_epi32(o[12], _mm_set_epi32(3, 2, 1, 0));
    for (i = 0; i < 16; i++) x[i] = o[i];
    for (i = 0; i < 10; i++) {
        ALKT__QROUNDV(x[0], x[4], x[8], x[12]);
        ALKT__QROUNDV(x[1], x[5], x[9], x[13]);
        ALKT__QROUNDV(x[2], x[6], x[10], x[14]);
        ALKT__QROUNDV(x[3], x[7], x[11], x[15]);
        ALKT__QROUNDV(x[0], x[5], x[10], x[15]);
        ALKT__QROUNDV(x[1], x[6], x[11], x[12]);
        ALKT__QROUNDV(x[2], x[7], x[8], x[13]);
        ALKT__QROUNDV(x[3], x[4], x[9], x[14]);
    }
    for (i = 0; i < 16; i += 4) {
        /* words i..i+3 of the four blocks: a 4x4 transpose */
        __m128i a = _mm_add_epi32(x[i], o[i]), b = _mm_add_epi32(x[i + 1], o[i + 1]);
        __m128i c = _mm_add_epi32(x[i + 2], o[i + 2]), d = _mm_add_epi32(x[i + 3], o[i + 3]);
        __m128i t0 = _mm_unpacklo_epi32(a, b), t1 = _mm_unpacklo_epi32(c, d);
        __m128i t2 = _mm_unpackhi_epi32(a, b), t3 = _mm_unpackhi_epi32(c, d);
        __m128i k[4];
        int j;
        k[0] = _mm_unpacklo_epi64(t0, t1);
        k[1] = _mm_unpackhi_epi64(t0, t1);
        k[2] = _mm_unpacklo_epi64(t2, t3);
        k[3] = _mm_unpackhi_epi64(t2, t3);
        for (j = 0; j < 4; j++) {   /* x86 is little endian: lanes as bytes */
            const __m128i *src = (const __m128i *)(const void *)(in + 64 * j + 4 * i);
            __m128i *dst = (__m128i *)(void *)(out + 64 * j + 4 * i);
            _mm_storeu_si128(dst, _mm_xor_si128(_mm_loadu_si128(src), k[j]));
        }
    }
    st[12] += 4;
}
#endif

#ifdef ALKT__CHACHA_AVX2
/* Eight blocks at once with AVX2, chosen at run time (asked once). The
 * 16- and 8-bit rotations are byte shuffles. */
__attribute__((target("avx2")))
static void alkt__chacha20_x8(unsigned char *out, const unsigned char *in,
                              uint32_t st[16])
{
    const __m256i r16 = _mm256_set_epi8(13, 12, 15, 14, 9, 8, 11, 10, 5, 4, 7, 6,
                                        1, 0, 3, 2, 13, 12, 15, 14, 9, 8, 11, 10,
                                        5, 4, 7, 6, 1, 0, 3, 2);
    const __m256i r8 = _mm256_set_epi8(14, 13, 12, 15, 10, 9, 8, 11, 6, 5, 4, 7,
                                       2, 1, 0, 3, 14, 13, 12, 15, 10, 9, 8, 11,
                                       6, 5, 4, 7, 2, 1, 0, 3);
    __m256i x[16], o[16];
    int i;
    for (i = 0; i < 16; i++) o[i] = _mm256_set1_epi32((int)st[i]);
    o[12] = _mm256_add_epi32(o[12], _mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0));
    for (i = 0; i < 16; i++) x[i] = o[i];
#define ALKT__QROUND8(a, b, c, d)                                                   \
    do {                                                                           \
        a = _mm256_add_epi32(a, b);                                                \
        d = _mm256_shuffle_epi8(_mm256_xor_si256(d, a), r16);                      \
        c = _mm256_add_epi32(c, d);                                                \
        b = _mm256_xor_si256(b, c);                                                \
        b = _mm256_or_si256(_mm256_slli_epi32(b, 12), _mm256_srli_epi32(b, 20));   \
        a = _mm256_add_epi32(a, b);                                                \
        d = _mm256_shuffle_epi8(_mm256_xor_si256(d, a), r8);                       \
        c = _mm256_add_epi32(c, d);                                                \
        b = _mm256_xor_si256(b, c);                                                \
        b = _mm256_or_si256(_mm256_slli_epi32(b, 7), _mm256_srli_epi32(b, 25));    \
    } while (0)
    for (i = 0; i < 10; i++) {
        ALKT__QROUND8(x[0], x[4], x[8], x[12]);
        ALKT__QROUND8(x[1], x[5], x[9], x[13]);
        ALKT__QROUND8(x[2], x[6], x[10], x[14]);
        ALKT__QROUND8(x[3], x[7], x[11], x[15]);
        ALKT__QROUND8(x[0], x[5], x[10], x[15]);
        ALKT__QROUND8(x[1], x[6], x[11], x[12]);
        ALKT__QROUND8(x[2], x[7], x[8], x[13]);
        ALKT__QROUND8(x[3], x[4], x[9], x[14]);
    }
#undef ALKT__QROUND8
    for (i = 0; i < 16; i += 4) {
        /* a 4x4 transpose in each 128-bit half: half 0 holds blocks 0-3,
         * half 1 blocks 4-7 */
        __m256i a = _mm256_add_epi32(x[i], o[i]), b = _mm256_add_epi32(x[i + 1], o[i + 1]);
        __m256i c = _mm256_add_epi32(x[i + 2], o[i + 2]), d = _mm256_add_epi32(x[i + 3], o[i + 3]);
        __m256i t0 = _mm256_unpacklo_epi32(a, b), t1 = _mm256_unpacklo_epi32(c, d);
        __m256i t2 = _mm256_unpackhi_epi32(a, b), t3 = _mm256_unpackhi_epi32(c, d);
        __m256i k[4];
        int j;
        k[0] = _mm256_unpacklo_epi64(t0, t1);
        k[1] = _mm256_unpackhi_epi64(t0, t1);
        k[2] = _mm256_unpacklo_epi64(t2, t3);
        k[3] = _mm256_unpackhi_epi64(t2, t3);
        for (j = 0; j < 4; j++) {
            const unsigned char *s0 = in + 64 * j + 4 * i, *s1 = s0 + 256;
            unsigned char *d0 = out + 64 * j + 4 * i, *d1 = d0 + 256;
            _mm_storeu_si128((__m128i *)(void *)d0,
                             _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)s0),
                                           _mm256_castsi256_si128(k[j])));
            _mm_storeu_si128((__m128i *)(void *)d1,
                             _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)s1),
                                           _mm256_extracti128_si256(k[j], 1)));
        }
    }
    st[12] += 8;
}

static int alkt__have_avx2(void)
{
    static int have = -1;    /* (a race writes the same answer) */
    if (have < 0) have = __builtin_cpu_supports("avx2") ? 1 : 0;
    return have;
}

/* Sixteen blocks at once with AVX-512F, chosen at run time (asked once):
 * 32 registers hold the state and its copy without spilling, and the
 * rotations are one instruction each. (The masked forms of the
 * intrinsics, with every lane chosen: gcc 12's plain ones read an
 * "undefined" vector that -Wuninitialized reports at -O1.) */
#define ALKT__ALL16 ((__mmask16)0xffff)
#define ALKT__ROL16(v, n) _mm512_mask_rol_epi32((v), ALKT__ALL16, (v), (n))
#define ALKT__SHUF16(a, b, imm) \
    _mm512_mask_shuffle_i32x4((a), ALKT__ALL16, (a), (b), (imm))
__attribute__((target("avx512f")))
static void alkt__chacha20_x16(unsigned char *out, const unsigned char *in,
                               uint32_t st[16])
{
    __m512i x[16], o[16];
    int i;
    for (i = 0; i < 16; i++) o[i] = _mm512_set1_epi32((int)st[i]);
    o[12] = _mm512_add_epi32(o[12], _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8,
                                                     7, 6, 5, 4, 3, 2, 1, 0));
    for (i = 0; i < 16; i++) x[i] = o[i];
#define ALKT__QROUND16(a, b, c, d)                                            \
    do {                                                                     \
        a = _mm512_add_epi32(a, b);                                          \
        d = ALKT__ROL16(_mm512_xor_si512(d, a), 16);                    \
        c = _mm512_add_epi32(c, d);                                          \
        b = ALKT__ROL16(_mm512_xor_si512(b, c), 12);                    \
        a = _mm512_add_epi32(a, b);                                          \
        d = ALKT__ROL16(_mm512_xor_si512(d, a), 8);                     \
        c = _mm512_add_epi32(c, d);                                          \
        b = ALKT__ROL16(_mm512_xor_si512(b, c), 7);                     \
    } while (0)
    for (i = 0; i < 10; i++) {
        ALKT__QROUND16(x[0], x[4], x[8], x[12]);
        ALKT__QROUND16(x[1], x[5], x[9], x[13]);
        ALKT__QROUND16(x[2], x[6], x[10], x[14]);
        ALKT__QROUND16(x[3], x[7], x[11], x[15]);
        ALKT__QROUND16(x[0], x[5], x[10], x[15]);
        ALKT__QROUND16(x[1], x[6], x[11], x[12]);
        ALKT__QROUND16(x[2], x[7], x[8], x[13]);
        ALKT__QROUND16(x[3], x[4], x[9], x[14]);
    }
#undef ALKT__QROUND16
    for (i = 0; i < 16; i++) x[i] = _mm512_add_epi32(x[i], o[i]);
    /* x[w] holds word w of the 16 blocks. A 4x4 transpose of 32-bit words
     * in each 128-bit lane: t[i + j] (i = 0, 4, 8, 12) holds words i..i+3
     * of blocks j, j+4, j+8, j+12 in lanes 0..3. Then a 4x4 transpose of
     * the lanes: one register per block, whole 64 bytes. */
    for (i = 0; i < 16; i += 4) {
        __m512i t0 = _mm512_mask_unpacklo_epi32(x[i], ALKT__ALL16, x[i], x[i + 1]);
        __m512i t1 = _mm512_mask_unpacklo_epi32(x[i + 2], ALKT__ALL16, x[i + 2],
                                                x[i + 3]);
        __m512i t2 = _mm512_mask_unpackhi_epi32(x[i], ALKT__ALL16, x[i], x[i + 1]);
        __m512i t3 = _mm512_mask_unpackhi_epi32(x[i + 2], ALKT__ALL16, x[i + 2],
                                                x[i + 3]);
        o[i + 0] = _mm512_mask_unpacklo_epi64(t0, (__mmask8)0xff, t0, t1);
        o[i + 1] = _mm512_mask_unpackhi_epi64(t0, (__mmask8)0xff, t0, t1);
        o[i + 2] = _mm512_mask_unpacklo_epi64(t2, (__mmask8)0xff, t2, t3);
        o[i + 3] = _mm512_mask_unpackhi_epi64(t2, (__mmask8)0xff, t2, t3);
    }
    for (i = 0; i < 4; i++) {
        /* o[4g + i]: words 4g..4g+3 of blocks i, i+4, i+8, i+12. a: lanes
         * 0 and 1 of o[i] and of o[4 + i] (words 0-3, 4-7 of blocks i and
         * i+4), b the same of o[8 + i] and o[12 + i]; c and d lanes 2 and
         * 3 (blocks i+8 and i+12). Then the even lanes of a and b are
         * block i whole, the odd ones block i+4. */
        __m512i a = ALKT__SHUF16(o[i], o[4 + i], 0x44);
        __m512i b = ALKT__SHUF16(o[8 + i], o[12 + i], 0x44);
        __m512i c = ALKT__SHUF16(o[i], o[4 + i], 0xee);
        __m512i d = ALKT__SHUF16(o[8 + i], o[12 + i], 0xee);
        __m512i k[4];
        int j;
        k[0] = ALKT__SHUF16(a, b, 0x88);
        k[1] = ALKT__SHUF16(a, b, 0xdd);
        k[2] = ALKT__SHUF16(c, d, 0x88);
        k[3] = ALKT__SHUF16(c, d, 0xdd);
        for (j = 0; j < 4; j++) {
            const unsigned char *s = in + 64 * (i + 4 * j);
            unsigned char *dst = out + 64 * (i + 4 * j);
            _mm512_storeu_si512((void *)dst,
                                _mm512_xor_si512(_mm512_loadu_si512((const void *)s),
                                                 k[j]));
        }
    }
    st[12] += 16;
}
#undef ALKT__ROL16
#undef ALKT__SHUF16
#undef ALKT__ALL16

static int alkt__have_avx512(void)
{
    static int have = -1;    /* (a race writes the same answer) */
    if (have < 0) have = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return have;
}
#endif

ALKTDEF void alkt_chacha20(unsigned char *out, const unsigned char *in,
                           size_t len, const unsigned char key[ALKT_AEAD_KEY],
                           const unsigned char nonce[ALKT_AEAD_NONCE],
                           uint32_t counter)
{
    uint32_t st[16], ks[16];
    unsigned char tail[64];
    int i;
    st[0] = 0x61707865u; /* "expand 32-byte k" */
    st[1] = 0x3320646eu;
    st[2] = 0x79622d32u;
    st[3] = 0x6b206574u;
    for (i = 0; i < 8; i++) st[4 + i] = alkt__le32(key + 4 * i);
    st[12] = counter;
    for (i = 0; i < 3; i++) st[13 + i] = alkt__le32(nonce + 4 * i);
#ifdef ALKT__CHACHA_AVX2
    if (!alkt__chacha_portable_only && len >= 1024 && alkt__have_avx512())
        while (len >= 1024) {
            alkt__chacha20_x16(out, in, st);
            out += 1024;
            in += 1024;
            len -= 1024;
        }
    if (!alkt__chacha_portable_only && len >= 512 && alkt__have_avx2())
        while (len >= 512) {
            alkt__chacha20_x8(out, in, st);
            out += 512;
            in += 512;
            len -= 512;
        }
#endif
#ifdef ALKT__CHACHA_SIMD
    if (!alkt__chacha_portable_only)
        while (len >= 256) {
            alkt__chacha20_x4(out, in, st);
            out += 256;
            in += 256;
            len -= 256;
        }
#endif
    while (len >= 64) {
        alkt__chacha20_block(ks, st);
        for (i = 0; i < 16; i++)
            alkt__putle32(out + 4 * i, alkt__le32(in + 4 * i) ^ ks[i]);
        st[12]++;
        out += 64;
        in += 64;
        len -= 64;
    }
    if (len) {
        size_t j;
        alkt__chacha20_block(ks, st);
        for (i = 0; i < 16; i++) alkt__putle32(tail + 4 * i, ks[i]);
        for (j = 0; j < len; j++) out[j] = (unsigned char)(in[j] ^ tail[j]);
        alkt__sha256_wipe(tail, sizeof tail);
    }
    alkt__sha256_wipe(st, sizeof st);
    alkt__sha256_wipe(ks, sizeof ks);
}

/* ---- Poly1305 (RFC 8439 2.5) -------------------------------------------------
 * Two representations of the accumulator, one chosen when compiling (as
 * for X25519 below): three limbs of 44, 44 and 42 bits with 128-bit
 * products where the compiler has them (9 products a block), else five
 * 26-bit limbs with 64-bit products (25 a block; ALKTUNNEL_NO_INT128
 * forces it). ALKT__POLY_FULL is the 2^128 bit of a whole block in the top
 * limb; the padded last block of alkt_poly1305 passes 0 and sets its own. */
#if defined(__SIZEOF_INT128__) && !defined(ALKTUNNEL_NO_INT128)
#define ALKT__POLY44 1
__extension__ typedef unsigned __int128 alkt__pu128;
#define ALKT__M44 ((((uint64_t)1) << 44) - 1)
#define ALKT__M42 ((((uint64_t)1) << 42) - 1)
#define ALKT__POLY_FULL (((uint64_t)1) << 40)
typedef struct alkt__poly {
    uint64_t r[3], h[3], pad[2];
    uint64_t rp[4][3];           /* r^4, r^3, r^2, r (with_powers set) */
    uint64_t rp8[4][3];          /* r^8, r^7, r^6, r^5 (with_powers 2) */
    int with_powers;
} alkt__poly;

static uint64_t alkt__le64(const unsigned char *p)
{
    return alkt__le32(p) | (uint64_t)alkt__le32(p + 4) << 32;
}

static void alkt__poly_init(alkt__poly *p, const unsigned char key[32])
{
    uint64_t t0 = alkt__le64(key), t1 = alkt__le64(key + 8);
    /* r clamped (RFC 8439 2.5.1) while it is split into limbs */
    p->r[0] = t0 & 0xffc0fffffffull;
    p->r[1] = ((t0 >> 44) | (t1 << 20)) & 0xfffffc0ffffull;
    p->r[2] = (t1 >> 24) & 0x00ffffffc0full;
    p->h[0] = p->h[1] = p->h[2] = 0;
    p->with_powers = 0;
    p->pad[0] = alkt__le64(key + 16);
    p->pad[1] = alkt__le64(key + 24);
}

/* h = (h + block) * r mod 2^130 - 5 for each 16-byte block. A column past
 * 2^130 comes back times 5: the 2^132 ones as r * 20, where the clamped
 * r1 and r2 are below 2^44, so s1 and s2 stay below 2^49 and each column
 * (three products of a limb up to 2^45 and a factor up to 2^49) below
 * 2^96. */
/* h = h * r mod 2^130 - 5, limbs carried (h below 2^45 a limb, r carried) */
static void alkt__poly_mul(uint64_t h[3], const uint64_t r[3])
{
    uint64_t s1 = r[1] * 20, s2 = r[2] * 20, c;
    alkt__pu128 d0, d1, d2;
    d0 = (alkt__pu128)h[0] * r[0] + (alkt__pu128)h[1] * s2 + (alkt__pu128)h[2] * s1;
    d1 = (alkt__pu128)h[0] * r[1] + (alkt__pu128)h[1] * r[0] + (alkt__pu128)h[2] * s2;
    d2 = (alkt__pu128)h[0] * r[2] + (alkt__pu128)h[1] * r[1] + (alkt__pu128)h[2] * r[0];
    c = (uint64_t)(d0 >> 44); h[0] = (uint64_t)d0 & ALKT__M44;
    d1 += c; c = (uint64_t)(d1 >> 44); h[1] = (uint64_t)d1 & ALKT__M44;
    d2 += c; c = (uint64_t)(d2 >> 42); h[2] = (uint64_t)d2 & ALKT__M42;
    h[0] += c * 5; c = h[0] >> 44; h[0] &= ALKT__M44;
    h[1] += c; c = h[1] >> 44; h[1] &= ALKT__M44;
    h[2] += c;
}

/* p->rp: r^4, r^3, r^2, r, once per key */
static void alkt__poly_powers(alkt__poly *p)
{
    int k;
    if (p->with_powers) return;
    for (k = 0; k < 3; k++) p->rp[3][k] = p->rp[2][k] = p->r[k];
    alkt__poly_mul(p->rp[2], p->r);                        /* r^2 */
    for (k = 0; k < 3; k++) p->rp[1][k] = p->rp[2][k];
    alkt__poly_mul(p->rp[1], p->r);                        /* r^3 */
    for (k = 0; k < 3; k++) p->rp[0][k] = p->rp[2][k];
    alkt__poly_mul(p->rp[0], p->rp[2]);                    /* r^4 */
    p->with_powers = 1;
}

/* Four blocks a step: h = (h + m0) r^4 + m1 r^3 + m2 r^2 + m3 r, one
 * carry chain for the four, so the products of the four overlap. Each
 * column sums 12 products below 2^94: below 2^98. */
#define ALKT__POLY_COL(d, k, x0, x1, x2)                                       \
    do {                                                                     \
        const uint64_t *q = p->rp[k];                                        \
        uint64_t u1 = q[1] * 20, u2 = q[2] * 20;                             \
        d##0 += (alkt__pu128)(x0) * q[0] + (alkt__pu128)(x1) * u2 +          \
                (alkt__pu128)(x2) * u1;                                      \
        d##1 += (alkt__pu128)(x0) * q[1] + (alkt__pu128)(x1) * q[0] +        \
                (alkt__pu128)(x2) * u2;                                      \
        d##2 += (alkt__pu128)(x0) * q[2] + (alkt__pu128)(x1) * q[1] +        \
                (alkt__pu128)(x2) * q[0];                                    \
    } while (0)
static void alkt__poly_blocks4(alkt__poly *p, const unsigned char *m, size_t n,
                               uint64_t hibit, uint64_t h[3])
{
    int k;
    alkt__poly_powers(p);
    while (n >= 64) {
        alkt__pu128 d0 = 0, d1 = 0, d2 = 0;
        uint64_t c;
        for (k = 0; k < 4; k++) {
            uint64_t t0 = alkt__le64(m + 16 * k), t1 = alkt__le64(m + 16 * k + 8);
            uint64_t x0 = t0 & ALKT__M44;
            uint64_t x1 = ((t0 >> 44) | (t1 << 20)) & ALKT__M44;
            uint64_t x2 = ((t1 >> 24) & ALKT__M42) | hibit;
            if (k == 0) {
                x0 += h[0];
                x1 += h[1];
                x2 += h[2];
            }
            ALKT__POLY_COL(d, k, x0, x1, x2);
        }
        c = (uint64_t)(d0 >> 44); h[0] = (uint64_t)d0 & ALKT__M44;
        d1 += c; c = (uint64_t)(d1 >> 44); h[1] = (uint64_t)d1 & ALKT__M44;
        d2 += c; c = (uint64_t)(d2 >> 42); h[2] = (uint64_t)d2 & ALKT__M42;
        h[0] += c * 5; c = h[0] >> 44; h[0] &= ALKT__M44;
        h[1] += c;
        m += 64;
        n -= 64;
    }
}
#undef ALKT__POLY_COL

#ifdef ALKT__CHACHA_AVX2
/* Four blocks at once with AVX2, chosen at run time (asked once): lane j
 * of the accumulator takes blocks j, j + 4, j + 8, ... on five 26-bit
 * limbs (one per 64-bit element: vpmuludq multiplies their low 32 bits),
 * each step h = h * r^4 + the next four blocks; at the end lane j is
 * multiplied by r^(4 - j) and the lanes summed, which is the serial
 * Horner sum. Limbs stay below 2^27 before a product, so the columns (five
 * products of a limb and a factor below 5 * 2^26) stay below 2^59. */

/* a value on 44/44/42-bit limbs (any carried state) on five 26-bit ones */
static void alkt__poly_to26(const uint64_t a[3], uint64_t l[5])
{
    uint64_t a0 = a[0], a1 = a[1], a2 = a[2], c;
    int i;
    for (i = 0; i < 2; i++) {   /* below 2^130: a2 under 2^42 */
        c = a0 >> 44; a0 &= ALKT__M44; a1 += c;
        c = a1 >> 44; a1 &= ALKT__M44; a2 += c;
        c = a2 >> 42; a2 &= ALKT__M42; a0 += c * 5;
    }
    c = a0 >> 44; a0 &= ALKT__M44; a1 += c;
    c = a1 >> 44; a1 &= ALKT__M44; a2 += c;   /* (a2 + c below 2^42 + 1) */
    l[0] = a0 & 0x3ffffff;
    l[1] = ((a0 >> 26) | (a1 << 18)) & 0x3ffffff;
    l[2] = (a1 >> 8) & 0x3ffffff;
    l[3] = ((a1 >> 34) | (a2 << 10)) & 0x3ffffff;
    l[4] = a2 >> 16;
}

/* the lanes' sum (five 26-bit limbs, any carry state) into p->h */
static void alkt__poly_from26(alkt__poly *p, uint64_t h26[5])
{
    uint64_t c;
    c = h26[0] >> 26; h26[0] &= 0x3ffffff; h26[1] += c;
    c = h26[1] >> 26; h26[1] &= 0x3ffffff; h26[2] += c;
    c = h26[2] >> 26; h26[2] &= 0x3ffffff; h26[3] += c;
    c = h26[3] >> 26; h26[3] &= 0x3ffffff; h26[4] += c;
    c = h26[4] >> 26; h26[4] &= 0x3ffffff; h26[0] += c * 5;
    c = h26[0] >> 26; h26[0] &= 0x3ffffff; h26[1] += c;
    c = h26[0] + (h26[1] << 26);
    p->h[0] = c & ALKT__M44;
    c = (c >> 44) + (h26[2] << 8) + (h26[3] << 34);
    p->h[1] = c & ALKT__M44;
    p->h[2] = (c >> 44) + (h26[4] << 16);
}

/* The blocks' low (lo) and high (hi) 8 bytes, one block a lane, added
 * to h as five 26-bit limbs (hibit: 2^128 in limb 4, or 0) */
#define ALKT__POLY_LANES_ADD(ADD, SRL, SLL, AND, OR)                           \
    do {                                                                     \
        h[0] = ADD(h[0], AND(lo, M));                                        \
        h[1] = ADD(h[1], AND(SRL(lo, 26), M));                               \
        h[2] = ADD(h[2], AND(OR(SRL(lo, 52), SLL(hi, 12)), M));              \
        h[3] = ADD(h[3], AND(SRL(hi, 14), M));                               \
        h[4] = ADD(h[4], OR(SRL(hi, 40), hibit));                            \
    } while (0)

/* The body of alkt__poly_vmul and alkt__poly_wmul (h, r, s, M, d0..d4, c
 * and e in scope), with the vector width's multiply, add, shifts and
 * and: h = h * r, then two carry chains at once (0 -> 1 -> 2 -> 3, 3 -> 4
 * -> 0 -> 1), every limb ending below 2^26 + 2^10. */
#define ALKT__POLY_LANES_MUL(MUL, ADD, SRL, SLL, AND)                          \
    do {                                                                     \
        d0 = ADD(ADD(MUL(h[0], r[0]), MUL(h[1], s[4])),                      \
                 ADD(ADD(MUL(h[2], s[3]), MUL(h[3], s[2])), MUL(h[4], s[1]))); \
        d1 = ADD(ADD(MUL(h[0], r[1]), MUL(h[1], r[0])),                      \
                 ADD(ADD(MUL(h[2], s[4]), MUL(h[3], s[3])), MUL(h[4], s[2]))); \
        d2 = ADD(ADD(MUL(h[0], r[2]), MUL(h[1], r[1])),                      \
                 ADD(ADD(MUL(h[2], r[0]), MUL(h[3], s[4])), MUL(h[4], s[3]))); \
        d3 = ADD(ADD(MUL(h[0], r[3]), MUL(h[1], r[2])),                      \
                 ADD(ADD(MUL(h[2], r[1]), MUL(h[3], r[0])), MUL(h[4], s[4]))); \
        d4 = ADD(ADD(MUL(h[0], r[4]), MUL(h[1], r[3])),                      \
                 ADD(ADD(MUL(h[2], r[2]), MUL(h[3], r[1])), MUL(h[4], r[0]))); \
        c = SRL(d0, 26); d0 = AND(d0, M); d1 = ADD(d1, c);                   \
        e = SRL(d3, 26); d3 = AND(d3, M); d4 = ADD(d4, e);                   \
        c = SRL(d1, 26); d1 = AND(d1, M); d2 = ADD(d2, c);                   \
        e = SRL(d4, 26); d4 = AND(d4, M);                                    \
        d0 = ADD(d0, ADD(e, SLL(e, 2)));                                     \
        c = SRL(d2, 26); d2 = AND(d2, M); d3 = ADD(d3, c);                   \
        e = SRL(d0, 26); d0 = AND(d0, M); d1 = ADD(d1, e);                   \
        c = SRL(d3, 26); d3 = AND(d3, M); d4 = ADD(d4, c);                   \
        h[0] = d0; h[1] = d1; h[2] = d2; h[3] = d3; h[4] = d4;               \
    } while (0)

/* h = h * r on lanes (r[i] one limb of r, s[i] = 5 r[i]), carried */
#define ALKT__VMUL(a, b) _mm256_mul_epu32((a), (b))
#define ALKT__VADD(a, b) _mm256_add_epi64((a), (b))
__attribute__((target("avx2"), always_inline))
static inline void alkt__poly_vmul(__m256i h[5], const __m256i r[5], const __m256i s[5])
{
    const __m256i M = _mm256_set1_epi64x(0x3ffffff);
    __m256i d0, d1, d2, d3, d4, c, e;
    ALKT__POLY_LANES_MUL(ALKT__VMUL, ALKT__VADD, _mm256_srli_epi64, _mm256_slli_epi64,
                         _mm256_and_si256);
}

/* h += four blocks at m, block j in lane j */
__attribute__((target("avx2"), always_inline))
static inline void alkt__poly_vload(__m256i h[5], const unsigned char *m, __m256i hibit)
{
    const __m256i M = _mm256_set1_epi64x(0x3ffffff);
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)m);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(m + 32));
    /* low and high 8 bytes of blocks 0, 2, 1, 3; then in block order */
    __m256i lo = _mm256_permute4x64_epi64(_mm256_unpacklo_epi64(a, b), 0xd8);
    __m256i hi = _mm256_permute4x64_epi64(_mm256_unpackhi_epi64(a, b), 0xd8);
    ALKT__POLY_LANES_ADD(ALKT__VADD, _mm256_srli_epi64, _mm256_slli_epi64,
                         _mm256_and_si256, _mm256_or_si256);
}

/* n (a multiple of 64, at least 64) bytes of whole blocks into p->h */
__attribute__((target("avx2")))
static void alkt__poly_x4(alkt__poly *p, const unsigned char *m, size_t n,
                          uint64_t hibit)
{
    uint64_t l[4][5], h26[5];
    __m256i h[5], r[5], s[5], hb;
    int i, k;
    alkt__poly_powers(p);
    for (k = 0; k < 4; k++) alkt__poly_to26(p->rp[k], l[k]);  /* r^4 .. r */
    alkt__poly_to26(p->h, h26);
    for (i = 0; i < 5; i++) {
        r[i] = _mm256_set1_epi64x((long long)l[0][i]);
        s[i] = _mm256_set1_epi64x((long long)(l[0][i] * 5));
        h[i] = _mm256_set_epi64x(0, 0, 0, (long long)h26[i]);
    }
    hb = _mm256_set1_epi64x(hibit ? 1 << 24 : 0);
    alkt__poly_vload(h, m, hb);
    for (m += 64, n -= 64; n >= 64; m += 64, n -= 64) {
        alkt__poly_vmul(h, r, s);
        alkt__poly_vload(h, m, hb);
    }
    /* lane j times r^(4 - j): l[j] */
    for (i = 0; i < 5; i++) {
        r[i] = _mm256_set_epi64x((long long)l[3][i], (long long)l[2][i],
                                 (long long)l[1][i], (long long)l[0][i]);
        s[i] = _mm256_set_epi64x((long long)(l[3][i] * 5), (long long)(l[2][i] * 5),
                                 (long long)(l[1][i] * 5), (long long)(l[0][i] * 5));
    }
    alkt__poly_vmul(h, r, s);
    for (i = 0; i < 5; i++) {
        uint64_t e[4];
        _mm256_storeu_si256((__m256i *)(void *)e, h[i]);
        h26[i] = e[0] + e[1] + e[2] + e[3];
    }
    alkt__poly_from26(p, h26);
    alkt__sha256_wipe(l, sizeof l);
    alkt__sha256_wipe(h26, sizeof h26);
}
#undef ALKT__VMUL
#undef ALKT__VADD

/* p->rp8: r^8 .. r^5 from r^4, once per key (and p->rp) */
static void alkt__poly_powers8(alkt__poly *p)
{
    int i, k;
    alkt__poly_powers(p);
    if (p->with_powers >= 2) return;
    for (k = 0; k < 4; k++) {
        for (i = 0; i < 3; i++) p->rp8[k][i] = p->rp[k][i];
        alkt__poly_mul(p->rp8[k], p->rp[0]);
    }
    p->with_powers = 2;
}

/* Eight blocks at once with AVX-512F, chosen at run time: the same sums
 * as alkt__poly_x4 on eight lanes (block j of each 128 bytes in lane j,
 * h = h * r^8 + eight blocks a step, lane j times r^(8 - j) at the end),
 * so the same bounds hold. (Masked forms of the intrinsics with every
 * lane chosen, as in alkt__chacha20_x16.) */
#define ALKT__K8 ((__mmask8)0xff)
#define ALKT__WMUL(a, b) _mm512_mask_mul_epu32((a), ALKT__K8, (a), (b))
#define ALKT__WADD(a, b) _mm512_add_epi64((a), (b))
#define ALKT__WSRL(a, n) _mm512_mask_srli_epi64((a), ALKT__K8, (a), (n))
#define ALKT__WSLL(a, n) _mm512_mask_slli_epi64((a), ALKT__K8, (a), (n))
#define ALKT__WAND(a, b) _mm512_and_si512((a), (b))
__attribute__((target("avx512f"), always_inline))
static inline void alkt__poly_wmul(__m512i h[5], const __m512i r[5], const __m512i s[5])
{
    const __m512i M = _mm512_set1_epi64(0x3ffffff);
    __m512i d0, d1, d2, d3, d4, c, e;
    ALKT__POLY_LANES_MUL(ALKT__WMUL, ALKT__WADD, ALKT__WSRL, ALKT__WSLL, ALKT__WAND);
}

/* the low (lo) and the high (hi) 8 bytes of the eight blocks at m */
__attribute__((target("avx512f"), always_inline))
static inline void alkt__poly_w8(const unsigned char *m, __m512i *lo, __m512i *hi)
{
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    __m512i a = _mm512_loadu_si512((const void *)m);
    __m512i b = _mm512_loadu_si512((const void *)(m + 64));
    *lo = _mm512_permutex2var_epi64(a, even, b);
    *hi = _mm512_permutex2var_epi64(a, odd, b);
}

/* h += eight blocks at m, block j in lane j */
__attribute__((target("avx512f"), always_inline))
static inline void alkt__poly_wload(__m512i h[5], const unsigned char *m, __m512i hibit)
{
    const __m512i M = _mm512_set1_epi64(0x3ffffff);
    __m512i lo, hi;
    alkt__poly_w8(m, &lo, &hi);
    ALKT__POLY_LANES_ADD(ALKT__WADD, ALKT__WSRL, ALKT__WSLL, ALKT__WAND, _mm512_or_si512);
}

/* n (a multiple of 128, at least 128) bytes of whole blocks into p->h */
__attribute__((target("avx512f")))
static void alkt__poly_x8(alkt__poly *p, const unsigned char *m, size_t n,
                          uint64_t hibit)
{
    uint64_t l[8][5], h26[5];
    __m512i h[5], r[5], s[5], hb;
    int i, k;
    alkt__poly_powers8(p);
    for (k = 0; k < 4; k++) {
        alkt__poly_to26(p->rp8[k], l[k]);       /* r^8 .. r^5 */
        alkt__poly_to26(p->rp[k], l[4 + k]);    /* r^4 .. r */
    }
    alkt__poly_to26(p->h, h26);
    for (i = 0; i < 5; i++) {
        r[i] = _mm512_set1_epi64((long long)l[0][i]);
        s[i] = _mm512_set1_epi64((long long)(l[0][i] * 5));
        h[i] = _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, (long long)h26[i]);
    }
    hb = _mm512_set1_epi64(hibit ? 1 << 24 : 0);
    alkt__poly_wload(h, m, hb);
    for (m += 128, n -= 128; n >= 128; m += 128, n -= 128) {
        alkt__poly_wmul(h, r, s);
        alkt__poly_wload(h, m, hb);
    }
    /* lane j times r^(8 - j): l[j] */
    for (i = 0; i < 5; i++) {
        r[i] = _mm512_set_epi64((long long)l[7][i], (long long)l[6][i], (long long)l[5][i],
                                (long long)l[4][i], (long long)l[3][i], (long long)l[2][i],
                                (long long)l[1][i], (long long)l[0][i]);
        s[i] = ALKT__WADD(r[i], ALKT__WSLL(r[i], 2));
    }
    alkt__poly_wmul(h, r, s);
    for (i = 0; i < 5; i++) {
        uint64_t e[8];
        _mm512_storeu_si512((void *)e, h[i]);
        h26[i] = e[0] + e[1] + e[2] + e[3] + e[4] + e[5] + e[6] + e[7];
    }
    alkt__poly_from26(p, h26);
    alkt__sha256_wipe(l, sizeof l);
    alkt__sha256_wipe(h26, sizeof h26);
}

/* Eight blocks at once with AVX-512 IFMA, chosen at run time where the
 * CPU has it: the lanes of alkt__poly_x8, but on the scalar code's three
 * limbs of 44, 44 and 42 bits, multiplied by vpmadd52luq / vpmadd52huq
 * (the low and the high 52 bits of a product of two values below 2^52,
 * added to a 64-bit sum) - 18 of them a step where alkt__poly_x8 takes 25
 * 32-bit products and five carries. Columns as in alkt__poly_mul (r1 and
 * r2 times 20 for what passes 2^130); a column's high part is 2^52 over
 * it: 2^8 into the next limb, and from the top limb, 2^140 = 5 * 2^10
 * over 2^130, into limb 0. Bounds: h and the message below 2^46, the
 * factors below 2^50, so each product is below 2^96; low sums below
 * 2^54, high parts below 2^44 each, every column below 2^57. One carry
 * across all three limbs at once then leaves each below 2^44 + 2^18
 * (2^42 + 2^16 the top), and the next step's sums the same.
 * alkt__poly_no_ifma (tests) takes alkt__poly_x8 instead. (Shifts in the
 * masked form, as in alkt__poly_x8.) */
static int alkt__poly_no_ifma;
static int alkt__have_ifma(void)
{
    static int have = -1;    /* (a race writes the same answer) */
    if (have < 0)
        have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
    return have;
}

/* h = h * r on lanes (s[1], s[2]: 20 r[1], 20 r[2]), one carry */
__attribute__((target("avx512f,avx512ifma"), always_inline))
static inline void alkt__poly_fmul(__m512i h[3], const __m512i r[3], const __m512i s[3])
{
    const __m512i z = _mm512_setzero_si512();
    const __m512i m44 = _mm512_set1_epi64((long long)ALKT__M44);
    const __m512i m42 = _mm512_set1_epi64((long long)ALKT__M42);
    __m512i l0, l1, l2, u0, u1, u2, c0, c1, c2;
    l0 = _mm512_madd52lo_epu64(z, h[0], r[0]);
    u0 = _mm512_madd52hi_epu64(z, h[0], r[0]);
    l1 = _mm512_madd52lo_epu64(z, h[0], r[1]);
    u1 = _mm512_madd52hi_epu64(z, h[0], r[1]);
    l2 = _mm512_madd52lo_epu64(z, h[0], r[2]);
    u2 = _mm512_madd52hi_epu64(z, h[0], r[2]);
    l0 = _mm512_madd52lo_epu64(l0, h[1], s[2]);
    u0 = _mm512_madd52hi_epu64(u0, h[1], s[2]);
    l1 = _mm512_madd52lo_epu64(l1, h[1], r[0]);
    u1 = _mm512_madd52hi_epu64(u1, h[1], r[0]);
    l2 = _mm512_madd52lo_epu64(l2, h[1], r[1]);
    u2 = _mm512_madd52hi_epu64(u2, h[1], r[1]);
    l0 = _mm512_madd52lo_epu64(l0, h[2], s[1]);
    u0 = _mm512_madd52hi_epu64(u0, h[2], s[1]);
    l1 = _mm512_madd52lo_epu64(l1, h[2], s[2]);
    u1 = _mm512_madd52hi_epu64(u1, h[2], s[2]);
    l2 = _mm512_madd52lo_epu64(l2, h[2], r[0]);
    u2 = _mm512_madd52hi_epu64(u2, h[2], r[0]);
    /* the high parts 2^52 up: limb k + 1 times 2^8; limb 2's into 0 */
    l0 = _mm512_add_epi64(l0, _mm512_add_epi64(ALKT__WSLL(u2, 12),
                                               ALKT__WSLL(u2, 10)));
    l1 = _mm512_add_epi64(l1, ALKT__WSLL(u0, 8));
    l2 = _mm512_add_epi64(l2, ALKT__WSLL(u1, 8));
    c0 = ALKT__WSRL(l0, 44);
    c1 = ALKT__WSRL(l1, 44);
    c2 = ALKT__WSRL(l2, 42);
    h[0] = _mm512_add_epi64(_mm512_and_si512(l0, m44),
                            _mm512_add_epi64(c2, ALKT__WSLL(c2, 2)));
    h[1] = _mm512_add_epi64(_mm512_and_si512(l1, m44), c0);
    h[2] = _mm512_add_epi64(_mm512_and_si512(l2, m42), c1);
}

/* h += eight blocks at m, block j in lane j, on 44/44/42-bit limbs
 * (hibit: 2^128 in the top limb, or 0) */
__attribute__((target("avx512f,avx512ifma"), always_inline))
static inline void alkt__poly_fload(__m512i h[3], const unsigned char *m, __m512i hibit)
{
    const __m512i m44 = _mm512_set1_epi64((long long)ALKT__M44);
    __m512i lo, hi;
    alkt__poly_w8(m, &lo, &hi);
    h[0] = _mm512_add_epi64(h[0], _mm512_and_si512(lo, m44));
    h[1] = _mm512_add_epi64(h[1], _mm512_and_si512(_mm512_or_si512(ALKT__WSRL(lo, 44),
                                                                   ALKT__WSLL(hi, 20)),
                                                   m44));
    h[2] = _mm512_add_epi64(h[2], _mm512_or_si512(ALKT__WSRL(hi, 24), hibit));
}

/* n (a multiple of 128, at least 128) bytes of whole blocks into p->h */
__attribute__((target("avx512f,avx512ifma")))
static void alkt__poly_ifma(alkt__poly *p, const unsigned char *m, size_t n,
                            uint64_t hibit)
{
    __m512i h[3], r[3], s[3], hb;
    uint64_t e[3][8], c;
    int i, k;
    alkt__poly_powers8(p);
    for (i = 0; i < 3; i++) {
        r[i] = _mm512_set1_epi64((long long)p->rp8[0][i]);   /* r^8 */
        s[i] = _mm512_set1_epi64((long long)(p->rp8[0][i] * 20));
        h[i] = _mm512_maskz_set1_epi64((__mmask8)1, (long long)p->h[i]);
    }
    hb = _mm512_set1_epi64((long long)hibit);
    alkt__poly_fload(h, m, hb);
    for (m += 128, n -= 128; n >= 128; m += 128, n -= 128) {
        alkt__poly_fmul(h, r, s);
        alkt__poly_fload(h, m, hb);
    }
    /* lane j times r^(8 - j): rp8[j] for j < 4, rp[j - 4] after */
    for (i = 0; i < 3; i++) {
        for (k = 0; k < 4; k++) {
            e[i][k] = p->rp8[k][i];
            e[i][4 + k] = p->rp[k][i];
        }
        r[i] = _mm512_loadu_si512((const void *)e[i]);
        s[i] = _mm512_add_epi64(ALKT__WSLL(r[i], 4), ALKT__WSLL(r[i], 2));
    }
    alkt__poly_fmul(h, r, s);
    /* the lanes' sum, each limb below 2^47; carried to p->h's bounds */
    for (i = 0; i < 3; i++) {
        _mm512_storeu_si512((void *)e[i], h[i]);
        p->h[i] = e[i][0] + e[i][1] + e[i][2] + e[i][3] + e[i][4] + e[i][5] + e[i][6] +
                  e[i][7];
    }
    c = p->h[0] >> 44; p->h[0] &= ALKT__M44; p->h[1] += c;
    c = p->h[1] >> 44; p->h[1] &= ALKT__M44; p->h[2] += c;
    c = p->h[2] >> 42; p->h[2] &= ALKT__M42; p->h[0] += c * 5;
    c = p->h[0] >> 44; p->h[0] &= ALKT__M44; p->h[1] += c;
    alkt__sha256_wipe(e, sizeof e);
}
#undef ALKT__K8
#undef ALKT__WMUL
#undef ALKT__WADD
#undef ALKT__WSRL
#undef ALKT__WSLL
#undef ALKT__WAND
#endif

static void alkt__poly_blocks(alkt__poly *p, const unsigned char *m, size_t n,
                              uint64_t hibit)
{
    uint64_t r0 = p->r[0], r1 = p->r[1], r2 = p->r[2];
    uint64_t s1 = r1 * 20, s2 = r2 * 20;
    uint64_t h0, h1, h2;
#ifdef ALKT__CHACHA_AVX2
    if (n >= 512 && !alkt__chacha_portable_only && alkt__have_avx512()) {
        size_t n8 = n & ~(size_t)127;
        if (!alkt__poly_no_ifma && alkt__have_ifma())
            alkt__poly_ifma(p, m, n8, hibit);
        else
            alkt__poly_x8(p, m, n8, hibit);
        m += n8;
        n -= n8;   /* under 128 bytes left: single blocks below */
    }
#endif
    if (n >= 256) {
        size_t n4 = n & ~(size_t)63;
#ifdef ALKT__CHACHA_AVX2
        if (!alkt__chacha_portable_only && alkt__have_avx2())
            alkt__poly_x4(p, m, n4, hibit);
        else
#endif
            alkt__poly_blocks4(p, m, n4, hibit, p->h);
        m += n4;
        n -= n4;
    }
    h0 = p->h[0]; h1 = p->h[1]; h2 = p->h[2];
    while (n >= 16) {
        uint64_t t0 = alkt__le64(m), t1 = alkt__le64(m + 8), c;
        alkt__pu128 d0, d1, d2;
        h0 += t0 & ALKT__M44;
        h1 += ((t0 >> 44) | (t1 << 20)) & ALKT__M44;
        h2 += ((t1 >> 24) & ALKT__M42) | hibit;
        d0 = (alkt__pu128)h0 * r0 + (alkt__pu128)h1 * s2 + (alkt__pu128)h2 * s1;
        d1 = (alkt__pu128)h0 * r1 + (alkt__pu128)h1 * r0 + (alkt__pu128)h2 * s2;
        d2 = (alkt__pu128)h0 * r2 + (alkt__pu128)h1 * r1 + (alkt__pu128)h2 * r0;
        c = (uint64_t)(d0 >> 44); h0 = (uint64_t)d0 & ALKT__M44;
        d1 += c; c = (uint64_t)(d1 >> 44); h1 = (uint64_t)d1 & ALKT__M44;
        d2 += c; c = (uint64_t)(d2 >> 42); h2 = (uint64_t)d2 & ALKT__M42;
        h0 += c * 5; c = h0 >> 44; h0 &= ALKT__M44;
        h1 += c;
        m += 16;
        n -= 16;
    }
    p->h[0] = h0; p->h[1] = h1; p->h[2] = h2;
}

static void alkt__poly_finish(alkt__poly *p, unsigned char tag[16])
{
    uint64_t h0 = p->h[0], h1 = p->h[1], h2 = p->h[2];
    uint64_t g0, g1, g2, c, mask, t0, t1;
    c = h1 >> 44; h1 &= ALKT__M44;
    h2 += c; c = h2 >> 42; h2 &= ALKT__M42;
    h0 += c * 5; c = h0 >> 44; h0 &= ALKT__M44;
    h1 += c; c = h1 >> 44; h1 &= ALKT__M44;
    h2 += c; c = h2 >> 42; h2 &= ALKT__M42;
    h0 += c * 5; c = h0 >> 44; h0 &= ALKT__M44;
    h1 += c;
    /* g = h + 5 - 2^130: when it does not go negative, h >= p and g is h
     * reduced; choose without a branch */
    g0 = h0 + 5; c = g0 >> 44; g0 &= ALKT__M44;
    g1 = h1 + c; c = g1 >> 44; g1 &= ALKT__M44;
    g2 = h2 + c - (((uint64_t)1) << 42);
    mask = (g2 >> 63) - 1; /* all ones when g2 did not borrow */
    h0 = (h0 & ~mask) | (g0 & mask);
    h1 = (h1 & ~mask) | (g1 & mask);
    h2 = (h2 & ~mask) | (g2 & mask);
    /* h mod 2^128, plus the pad (the carry out of the low word without a
     * branch on it) */
    t0 = h0 | (h1 << 44);
    t1 = (h1 >> 20) | (h2 << 24);
    c = ((t0 & p->pad[0]) | ((t0 | p->pad[0]) & ~(t0 + p->pad[0]))) >> 63;
    t0 += p->pad[0];
    t1 += p->pad[1] + c;
    alkt__putle32(tag + 0, (uint32_t)t0);
    alkt__putle32(tag + 4, (uint32_t)(t0 >> 32));
    alkt__putle32(tag + 8, (uint32_t)t1);
    alkt__putle32(tag + 12, (uint32_t)(t1 >> 32));
    alkt__sha256_wipe(p, sizeof *p);
}
#else
#define ALKT__POLY_FULL (1u << 24)
typedef struct alkt__poly {
    uint32_t r[5], h[5], pad[4];
} alkt__poly;

static void alkt__poly_init(alkt__poly *p, const unsigned char key[32])
{
    /* r clamped (RFC 8439 2.5.1) while it is split into limbs */
    p->r[0] = alkt__le32(key + 0) & 0x3ffffffu;
    p->r[1] = (alkt__le32(key + 3) >> 2) & 0x3ffff03u;
    p->r[2] = (alkt__le32(key + 6) >> 4) & 0x3ffc0ffu;
    p->r[3] = (alkt__le32(key + 9) >> 6) & 0x3f03fffu;
    p->r[4] = (alkt__le32(key + 12) >> 8) & 0x00fffffu;
    p->h[0] = p->h[1] = p->h[2] = p->h[3] = p->h[4] = 0;
    p->pad[0] = alkt__le32(key + 16);
    p->pad[1] = alkt__le32(key + 20);
    p->pad[2] = alkt__le32(key + 24);
    p->pad[3] = alkt__le32(key + 28);
}

/* h = (h + block) * r mod 2^130 - 5 for each 16-byte block; hibit is 2^128
 * in limb 4 (1 << 24) for full blocks, 0 for the padded last one. */
static void alkt__poly_blocks(alkt__poly *p, const unsigned char *m, size_t n,
                              uint32_t hibit)
{
    const uint32_t M = 0x3ffffffu;
    uint32_t r0 = p->r[0], r1 = p->r[1], r2 = p->r[2], r3 = p->r[3], r4 = p->r[4];
    uint32_t s1 = r1 * 5, s2 = r2 * 5, s3 = r3 * 5, s4 = r4 * 5;
    uint32_t h0 = p->h[0], h1 = p->h[1], h2 = p->h[2], h3 = p->h[3], h4 = p->h[4];
    while (n >= 16) {
        uint64_t d0, d1, d2, d3, d4;
        uint32_t c;
        h0 += alkt__le32(m + 0) & M;
        h1 += (alkt__le32(m + 3) >> 2) & M;
        h2 += (alkt__le32(m + 6) >> 4) & M;
        h3 += (alkt__le32(m + 9) >> 6) & M;
        h4 += (alkt__le32(m + 12) >> 8) | hibit;
        d0 = (uint64_t)h0 * r0 + (uint64_t)h1 * s4 + (uint64_t)h2 * s3 +
             (uint64_t)h3 * s2 + (uint64_t)h4 * s1;
        d1 = (uint64_t)h0 * r1 + (uint64_t)h1 * r0 + (uint64_t)h2 * s4 +
             (uint64_t)h3 * s3 + (uint64_t)h4 * s2;
        d2 = (uint64_t)h0 * r2 + (uint64_t)h1 * r1 + (uint64_t)h2 * r0 +
             (uint64_t)h3 * s4 + (uint64_t)h4 * s3;
        d3 = (uint64_t)h0 * r3 + (uint64_t)h1 * r2 + (uint64_t)h2 * r1 +
             (uint64_t)h3 * r0 + (uint64_t)h4 * s4;
        d4 = (uint64_t)h0 * r4 + (uint64_t)h1 * r3 + (uint64_t)h2 * r2 +
             (uint64_t)h3 * r1 + (uint64_t)h4 * r0;
        c = (uint32_t)(d0 >> 26); h0 = (uint32_t)d0 & M;
        d1 += c; c = (uint32_t)(d1 >> 26); h1 = (uint32_t)d1 & M;
        d2 += c; c = (uint32_t)(d2 >> 26); h2 = (uint32_t)d2 & M;
        d3 += c; c = (uint32_t)(d3 >> 26); h3 = (uint32_t)d3 & M;
        d4 += c; c = (uint32_t)(d4 >> 26); h4 = (uint32_t)d4 & M;
        h0 += c * 5; c = h0 >> 26; h0 &= M;
        h1 += c;
        m += 16;
        n -= 16;
    }
    p->h[0] = h0; p->h[1] = h1; p->h[2] = h2; p->h[3] = h3; p->h[4] = h4;
}

static void alkt__poly_finish(alkt__poly *p, unsigned char tag[16])
{
    const uint32_t M = 0x3ffffffu;
    uint32_t h0 = p->h[0], h1 = p->h[1], h2 = p->h[2], h3 = p->h[3], h4 = p->h[4];
    uint32_t g0, g1, g2, g3, g4, c, mask;
    uint64_t f;
    c = h1 >> 26; h1 &= M;
    h2 += c; c = h2 >> 26; h2 &= M;
    h3 += c; c = h3 >> 26; h3 &= M;
    h4 += c; c = h4 >> 26; h4 &= M;
    h0 += c * 5; c = h0 >> 26; h0 &= M;
    h1 += c;
    /* g = h + 5 - 2^130: when it does not go negative, h >= p and g is h
     * reduced; choose without a branch */
    g0 = h0 + 5; c = g0 >> 26; g0 &= M;
    g1 = h1 + c; c = g1 >> 26; g1 &= M;
    g2 = h2 + c; c = g2 >> 26; g2 &= M;
    g3 = h3 + c; c = g3 >> 26; g3 &= M;
    g4 = h4 + c - (1u << 26);
    mask = (g4 >> 31) - 1u; /* all ones when g4 did not borrow */
    h0 = (h0 & ~mask) | (g0 & mask);
    h1 = (h1 & ~mask) | (g1 & mask);
    h2 = (h2 & ~mask) | (g2 & mask);
    h3 = (h3 & ~mask) | (g3 & mask);
    h4 = (h4 & ~mask) | (g4 & mask);
    /* h mod 2^128, plus the pad */
    f = (uint64_t)(h0 | h1 << 26) + p->pad[0];
    alkt__putle32(tag + 0, (uint32_t)f);
    f = (uint64_t)(h1 >> 6 | h2 << 20) + p->pad[1] + (f >> 32);
    alkt__putle32(tag + 4, (uint32_t)f);
    f = (uint64_t)(h2 >> 12 | h3 << 14) + p->pad[2] + (f >> 32);
    alkt__putle32(tag + 8, (uint32_t)f);
    f = (uint64_t)(h3 >> 18 | h4 << 8) + p->pad[3] + (f >> 32);
    alkt__putle32(tag + 12, (uint32_t)f);
    alkt__sha256_wipe(p, sizeof *p);
}
#endif

/* data as whole blocks, the last one zero-padded to 16 (the AEAD's layout) */
static void alkt__poly_padded(alkt__poly *p, const unsigned char *d, size_t n)
{
    unsigned char b[16];
    size_t full = n & ~(size_t)15;
    alkt__poly_blocks(p, d, full, ALKT__POLY_FULL);
    if (n > full) {
        memset(b, 0, sizeof b);
        memcpy(b, d + full, n - full);
        alkt__poly_blocks(p, b, 16, ALKT__POLY_FULL);
    }
}

ALKTDEF void alkt_poly1305(unsigned char tag[ALKT_AEAD_TAG], const void *msg,
                           size_t len, const unsigned char key[32])
{
    const unsigned char *m = (const unsigned char *)msg;
    size_t full = len & ~(size_t)15;
    alkt__poly p;
    alkt__poly_init(&p, key);
    alkt__poly_blocks(&p, m, full, ALKT__POLY_FULL);
    if (len > full) {
        unsigned char b[16];
        memset(b, 0, sizeof b);
        memcpy(b, m + full, len - full);
        b[len - full] = 1; /* the last block's own high bit */
        alkt__poly_blocks(&p, b, 16, 0);
    }
    alkt__poly_finish(&p, tag);
}

/* ---- AEAD_CHACHA20_POLY1305 (RFC 8439 2.8) ---------------------------------- */
static void alkt__aead_tag(unsigned char tag[16],
                           const unsigned char key[ALKT_AEAD_KEY],
                           const unsigned char nonce[ALKT_AEAD_NONCE],
                           const void *aad, size_t aad_len,
                           const unsigned char *ct, size_t len)
{
    static const unsigned char zero[32] = {0};
    unsigned char otk[32], lens[16];
    alkt__poly p;
    alkt_chacha20(otk, zero, sizeof otk, key, nonce, 0); /* 2.6: block 0 */
    alkt__poly_init(&p, otk);
    alkt__poly_padded(&p, (const unsigned char *)aad, aad_len);
    alkt__poly_padded(&p, ct, len);
    alkt__putle32(lens + 0, (uint32_t)aad_len);
    alkt__putle32(lens + 4, (uint32_t)((uint64_t)aad_len >> 32));
    alkt__putle32(lens + 8, (uint32_t)len);
    alkt__putle32(lens + 12, (uint32_t)((uint64_t)len >> 32));
    alkt__poly_blocks(&p, lens, 16, ALKT__POLY_FULL);
    alkt__poly_finish(&p, tag);
    alkt__sha256_wipe(otk, sizeof otk);
}

ALKTDEF void alkt_aead_seal(unsigned char *out,
                            const unsigned char key[ALKT_AEAD_KEY],
                            const unsigned char nonce[ALKT_AEAD_NONCE],
                            const void *aad, size_t aad_len,
                            const void *plain, size_t len)
{
    alkt_chacha20(out, (const unsigned char *)plain, len, key, nonce, 1);
    alkt__aead_tag(out + len, key, nonce, aad, aad_len, out, len);
}

static int alkt__tag_equal(const unsigned char *a, const unsigned char *b)
{
    return alkt_ct_equal(a, b, ALKT_AEAD_TAG);
}

/* 1 when tag is the tag of ct (len bytes) and aad; whether it matched is
 * public, the tags are not */
static int alkt__aead_check(const unsigned char key[ALKT_AEAD_KEY],
                            const unsigned char nonce[ALKT_AEAD_NONCE],
                            const void *aad, size_t aad_len,
                            const unsigned char *ct, size_t len,
                            const unsigned char tag[ALKT_AEAD_TAG])
{
    unsigned char want[ALKT_AEAD_TAG];
    int ok;
    alkt__aead_tag(want, key, nonce, aad, aad_len, ct, len);
    ok = alkt__tag_equal(want, tag);
    ALKTUNNEL_CT_PUBLIC(&ok, sizeof ok);   /* whether it matched: public */
    alkt__sha256_wipe(want, sizeof want);
    return ok;
}

#ifdef ALKT__RECORDS_IN_PLACE
/* out = in ^ the AEAD's key stream from byte pos of the message on
 * (block 1 is its byte 0): a part of a sealed message decrypted alone */
static void alkt__chacha20_from(unsigned char *out, const unsigned char *in,
                                size_t len, const unsigned char key[ALKT_AEAD_KEY],
                                const unsigned char nonce[ALKT_AEAD_NONCE], size_t pos)
{
    uint32_t block = 1u + (uint32_t)(pos / 64);
    size_t skip = pos % 64;
    if (skip && len) {
        unsigned char ks[64];
        size_t k = 64 - skip < len ? 64 - skip : len, i;
        memset(ks, 0, sizeof ks);
        alkt_chacha20(ks, ks, sizeof ks, key, nonce, block++);
        for (i = 0; i < k; i++) out[i] = (unsigned char)(in[i] ^ ks[skip + i]);
        alkt__sha256_wipe(ks, sizeof ks);
        out += k;
        in += k;
        len -= k;
    }
    if (len) alkt_chacha20(out, in, len, key, nonce, block);
}
#endif

ALKTDEF int alkt_aead_open(unsigned char *out,
                           const unsigned char key[ALKT_AEAD_KEY],
                           const unsigned char nonce[ALKT_AEAD_NONCE],
                           const void *aad, size_t aad_len,
                           const void *sealed, size_t sealed_len)
{
    const unsigned char *c = (const unsigned char *)sealed;
    size_t len;
    if (sealed_len < ALKT_AEAD_TAG) return ALKT_ERR_AUTH;
    len = sealed_len - ALKT_AEAD_TAG;
    if (!alkt__aead_check(key, nonce, aad, aad_len, c, len, c + len)) return ALKT_ERR_AUTH;
    alkt_chacha20(out, c, len, key, nonce, 1);
    return ALKT_OK;
}

/* ---- X25519 (RFC 7748): GF(2^255 - 19) ----------------------------------------
 * Two representations of a field element, one chosen when compiling:
 * five 51-bit limbs with 128-bit products where the compiler has them
 * (gcc and clang on 64-bit targets; ~4x faster), else ten limbs of 26 and
 * 25 bits with 64-bit products (any C99 compiler; ALKTUNNEL_NO_INT128
 * forces it, and a gate stage runs the vectors that way). The ladder and
 * the inversion above them are one code. In both, limbs are unsigned and
 * "carried" when within their width give or take a little; sums of two
 * carried values, and differences (f + 2p - g), go straight into a
 * multiplication. */
#if defined(__SIZEOF_INT128__) && !defined(ALKTUNNEL_NO_INT128)
#define ALKT__FE51 1
__extension__ typedef unsigned __int128 alkt__u128;
typedef uint64_t alkt__fe[5];
#define ALKT__FE_LIMBS 5
#define ALKT__M51 ((((uint64_t)1) << 51) - 1)

/* limbs below 2^51 (limb 1 up to 2^51 + 2^13), the value unchanged */
static void alkt__fe_carry51(uint64_t h[5])
{
    uint64_t c;
    c = h[0] >> 51; h[0] &= ALKT__M51; h[1] += c;
    c = h[1] >> 51; h[1] &= ALKT__M51; h[2] += c;
    c = h[2] >> 51; h[2] &= ALKT__M51; h[3] += c;
    c = h[3] >> 51; h[3] &= ALKT__M51; h[4] += c;
    c = h[4] >> 51; h[4] &= ALKT__M51; h[0] += 19 * c;
    c = h[0] >> 51; h[0] &= ALKT__M51; h[1] += c;
}

/* limbs up to 2^54: the 128-bit columns stay below 2^116 */
static void alkt__fe_mul(alkt__fe h, const alkt__fe f, const alkt__fe g)
{
    uint64_t g1 = 19 * g[1], g2 = 19 * g[2], g3 = 19 * g[3], g4 = 19 * g[4];
    alkt__u128 r0, r1, r2, r3, r4;
    uint64_t c;
    r0 = (alkt__u128)f[0] * g[0] + (alkt__u128)f[1] * g4 + (alkt__u128)f[2] * g3 +
         (alkt__u128)f[3] * g2 + (alkt__u128)f[4] * g1;
    r1 = (alkt__u128)f[0] * g[1] + (alkt__u128)f[1] * g[0] + (alkt__u128)f[2] * g4 +
         (alkt__u128)f[3] * g3 + (alkt__u128)f[4] * g2;
    r2 = (alkt__u128)f[0] * g[2] + (alkt__u128)f[1] * g[1] + (alkt__u128)f[2] * g[0] +
         (alkt__u128)f[3] * g4 + (alkt__u128)f[4] * g3;
    r3 = (alkt__u128)f[0] * g[3] + (alkt__u128)f[1] * g[2] + (alkt__u128)f[2] * g[1] +
         (alkt__u128)f[3] * g[0] + (alkt__u128)f[4] * g4;
    r4 = (alkt__u128)f[0] * g[4] + (alkt__u128)f[1] * g[3] + (alkt__u128)f[2] * g[2] +
         (alkt__u128)f[3] * g[1] + (alkt__u128)f[4] * g[0];
    r1 += (uint64_t)(r0 >> 51);
    r2 += (uint64_t)(r1 >> 51);
    r3 += (uint64_t)(r2 >> 51);
    r4 += (uint64_t)(r3 >> 51);
    /* what is above 2^255 comes back times 19 (in 128 bits: it is large) */
    r0 = (alkt__u128)((uint64_t)r0 & ALKT__M51) + (r4 >> 51) * 19;
    h[1] = ((uint64_t)r1 & ALKT__M51) + (uint64_t)(r0 >> 51);
    h[0] = (uint64_t)r0 & ALKT__M51;
    h[2] = (uint64_t)r2 & ALKT__M51;
    h[3] = (uint64_t)r3 & ALKT__M51;
    h[4] = (uint64_t)r4 & ALKT__M51;
    c = h[1] >> 51; h[1] &= ALKT__M51; h[2] += c;
}

static void alkt__fe_add(alkt__fe h, const alkt__fe f, const alkt__fe g)
{
    int i;
    for (i = 0; i < 5; i++) h[i] = f[i] + g[i];
}

/* f - g as f + 2p - g (g carried), never negative */
static void alkt__fe_sub(alkt__fe h, const alkt__fe f, const alkt__fe g)
{
    int i;
    h[0] = f[0] + 0xfffffffffffdaULL - g[0];
    for (i = 1; i < 5; i++) h[i] = f[i] + 0xffffffffffffeULL - g[i];
}

static void alkt__fe_mul_small(alkt__fe h, const alkt__fe f, uint32_t k)
{
    alkt__u128 c = 0;
    int i;
    for (i = 0; i < 5; i++) {
        c += (alkt__u128)f[i] * k;
        h[i] = (uint64_t)c & ALKT__M51;
        c >>= 51;
    }
    h[0] += (uint64_t)c * 19;
    alkt__fe_carry51(h);
}

/* (alkt__le64: with Poly1305's 44-bit limbs, under the same condition) */
static void alkt__fe_load(alkt__fe h, const unsigned char s[32])
{
    h[0] = alkt__le64(s) & ALKT__M51;
    h[1] = (alkt__le64(s + 6) >> 3) & ALKT__M51;
    h[2] = (alkt__le64(s + 12) >> 6) & ALKT__M51;
    h[3] = (alkt__le64(s + 19) >> 1) & ALKT__M51;
    h[4] = (alkt__le64(s + 24) >> 12) & ALKT__M51;   /* bit 255 left out */
}

/* the canonical 32 bytes of f (a carried value) */
static void alkt__fe_store(unsigned char s[32], const alkt__fe f)
{
    uint64_t h[5], q, w[4];
    int i;
    for (i = 0; i < 5; i++) h[i] = f[i];
    alkt__fe_carry51(h);
    alkt__fe_carry51(h);
    /* below 2p now: q = 1 when h >= p, i.e. when h + 19 reaches 2^255 */
    q = (h[0] + 19) >> 51;
    q = (h[1] + q) >> 51;
    q = (h[2] + q) >> 51;
    q = (h[3] + q) >> 51;
    q = (h[4] + q) >> 51;
    h[0] += 19 * q;   /* h - q p = h + 19 q - q 2^255 */
    h[1] += h[0] >> 51; h[0] &= ALKT__M51;
    h[2] += h[1] >> 51; h[1] &= ALKT__M51;
    h[3] += h[2] >> 51; h[2] &= ALKT__M51;
    h[4] += h[3] >> 51; h[3] &= ALKT__M51;
    h[4] &= ALKT__M51;
    w[0] = h[0] | h[1] << 51;
    w[1] = h[1] >> 13 | h[2] << 38;
    w[2] = h[2] >> 26 | h[3] << 25;
    w[3] = h[3] >> 39 | h[4] << 12;
    for (i = 0; i < 4; i++) {
        alkt__putle32(s + 8 * i, (uint32_t)w[i]);
        alkt__putle32(s + 8 * i + 4, (uint32_t)(w[i] >> 32));
    }
}
#else
typedef uint64_t alkt__fe[10];
#define ALKT__FE_LIMBS 10

static void alkt__fe_carry(uint64_t h[10])
{
    uint64_t c;
    int i;
    for (i = 0; i < 9; i++) {
        unsigned w = 26u - (unsigned)(i & 1);
        c = h[i] >> w;
        h[i] &= ((uint64_t)1 << w) - 1;
        h[i + 1] += c;
    }
    c = h[9] >> 25;
    h[9] &= ((uint64_t)1 << 25) - 1;
    h[0] += 19 * c;           /* 2^255 = 19 */
    c = h[0] >> 26;
    h[0] &= ((uint64_t)1 << 26) - 1;
    h[1] += c;
}

static void alkt__fe_mul(alkt__fe h, const alkt__fe f, const alkt__fe g)
{
    uint64_t t[10], g19[10], f2[10];
    int i, j;
    for (i = 0; i < 10; i++) {
        t[i] = 0;
        g19[i] = 19 * g[i];
        f2[i] = (i & 1) ? 2 * f[i] : f[i];
    }
    /* f_i g_j weighs 2^(off_i + off_j) = 2^off_(i+j), doubled when both
     * are odd; past limb 9 it wraps around times 19 */
    for (i = 0; i < 10; i++)
        for (j = 0; j < 10; j++) {
            uint64_t a = (j & 1) ? f2[i] : f[i];
            if (i + j < 10)
                t[i + j] += a * g[j];
            else
                t[i + j - 10] += a * g19[j];
        }
    alkt__fe_carry(t);
    for (i = 0; i < 10; i++) h[i] = t[i];
}

static void alkt__fe_add(alkt__fe h, const alkt__fe f, const alkt__fe g)
{
    int i;
    for (i = 0; i < 10; i++) h[i] = f[i] + g[i];
}

/* f - g as f + 2p - g (g carried), never negative */
static void alkt__fe_sub(alkt__fe h, const alkt__fe f, const alkt__fe g)
{
    int i;
    h[0] = f[0] + 0x7ffffdaU - g[0];
    for (i = 1; i < 10; i++)
        h[i] = f[i] + ((i & 1) ? 0x3fffffeU : 0x7fffffeU) - g[i];
}

static void alkt__fe_mul_small(alkt__fe h, const alkt__fe f, uint32_t k)
{
    int i;
    for (i = 0; i < 10; i++) h[i] = f[i] * k;
    alkt__fe_carry(h);
}

static void alkt__fe_load(alkt__fe h, const unsigned char s[32])
{
    static const unsigned char off[10] = {0, 26, 51, 77, 102, 128, 153, 179, 204, 230};
    int i, k;
    for (i = 0; i < 10; i++) {
        unsigned at = off[i] / 8u, w = 26u - (unsigned)(i & 1);
        uint64_t v = 0;
        for (k = 0; k < 5 && at + (unsigned)k < 32; k++)
            v |= (uint64_t)s[at + (unsigned)k] << (8 * k);
        h[i] = (v >> (off[i] % 8u)) & (((uint64_t)1 << w) - 1);
    }   /* bit 255 is left out: RFC 7748 5 masks it */
}

/* the canonical 32 bytes of h (a carried value) */
static void alkt__fe_store(unsigned char s[32], const alkt__fe f)
{
    static const uint64_t p[10] = {0x3ffffed, 0x1ffffff, 0x3ffffff, 0x1ffffff,
                                   0x3ffffff, 0x1ffffff, 0x3ffffff, 0x1ffffff,
                                   0x3ffffff, 0x1ffffff};
    uint64_t h[10], g[10], borrow = 0, m, acc = 0;
    unsigned bits = 0;
    int i, n = 0;
    for (i = 0; i < 10; i++) h[i] = f[i];
    alkt__fe_carry(h);
    alkt__fe_carry(h);
    for (i = 0; i < 9; i++) { /* exact limbs; what is above 2^255 stays in h[9] */
        unsigned w = 26u - (unsigned)(i & 1);
        h[i + 1] += h[i] >> w;
        h[i] &= ((uint64_t)1 << w) - 1;
    }
    /* the value is below 2p now: subtract p once when it fits */
    for (i = 0; i < 10; i++) {
        unsigned w = 26u - (unsigned)(i & 1);
        g[i] = h[i] - p[i] - borrow;
        borrow = g[i] >> 63;
        g[i] += borrow << w;
    }
    m = borrow - 1; /* all ones when h >= p */
    for (i = 0; i < 10; i++) h[i] = (h[i] & ~m) | (g[i] & m);
    for (i = 0; i < 10; i++) {
        acc |= h[i] << bits;
        bits += 26u - (unsigned)(i & 1);
        while (bits >= 8) {
            s[n++] = (unsigned char)acc;
            acc >>= 8;
            bits -= 8;
        }
    }
    s[n] = (unsigned char)acc; /* the last 7 bits (n is 31) */
}

#endif /* the two representations */

static void alkt__fe_sq(alkt__fe h, const alkt__fe f)
{
    alkt__fe_mul(h, f, f);
}

/* swap f and g when bit is 1, without a branch */
static void alkt__fe_cswap(alkt__fe f, alkt__fe g, uint64_t bit)
{
    uint64_t m = 0 - bit;
    int i;
    for (i = 0; i < ALKT__FE_LIMBS; i++) {
        uint64_t x = m & (f[i] ^ g[i]);
        f[i] ^= x;
        g[i] ^= x;
    }
}

static void alkt__fe_sqn(alkt__fe h, const alkt__fe f, int n)
{
    alkt__fe_sq(h, f);
    while (--n > 0) alkt__fe_sq(h, h);
}

/* z^(p - 2) = z^(2^255 - 21), the inverse */
static void alkt__fe_invert(alkt__fe out, const alkt__fe z)
{
    alkt__fe z2, z9, z11, a, b, c, t;
    alkt__fe_sq(z2, z);
    alkt__fe_sqn(t, z2, 2);      /* z^8 */
    alkt__fe_mul(z9, t, z);
    alkt__fe_mul(z11, z9, z2);
    alkt__fe_sq(t, z11);          /* z^22 */
    alkt__fe_mul(a, t, z9);       /* z^(2^5 - 1) */
    alkt__fe_sqn(t, a, 5);
    alkt__fe_mul(b, t, a);        /* 2^10 - 1 */
    alkt__fe_sqn(t, b, 10);
    alkt__fe_mul(c, t, b);        /* 2^20 - 1 */
    alkt__fe_sqn(t, c, 20);
    alkt__fe_mul(t, t, c);        /* 2^40 - 1 */
    alkt__fe_sqn(t, t, 10);
    alkt__fe_mul(b, t, b);        /* 2^50 - 1 */
    alkt__fe_sqn(t, b, 50);
    alkt__fe_mul(c, t, b);        /* 2^100 - 1 */
    alkt__fe_sqn(t, c, 100);
    alkt__fe_mul(t, t, c);        /* 2^200 - 1 */
    alkt__fe_sqn(t, t, 50);
    alkt__fe_mul(t, t, b);        /* 2^250 - 1 */
    alkt__fe_sqn(t, t, 5);        /* 2^255 - 32 */
    alkt__fe_mul(out, t, z11);    /* 2^255 - 21 */
}

ALKTDEF void alkt_x25519(unsigned char out[ALKT_X25519_SIZE],
                         const unsigned char scalar[ALKT_X25519_SIZE],
                         const unsigned char point[ALKT_X25519_SIZE])
{
    unsigned char k[32];
    alkt__fe x1, x2, z2, x3, z3, a, aa, b, bb, e, c, d, da, cb;
    uint64_t swap = 0;
    int t, i;
    memcpy(k, scalar, 32);
    k[0] &= 248; /* RFC 7748 5: clamp */
    k[31] &= 127;
    k[31] |= 64;
    alkt__fe_load(x1, point);
    for (i = 0; i < ALKT__FE_LIMBS; i++) {
        x2[i] = 0; z2[i] = 0; x3[i] = x1[i]; z3[i] = 0;
    }
    x2[0] = 1;
    z3[0] = 1;
    /* the Montgomery ladder of RFC 7748 5 */
    for (t = 254; t >= 0; t--) {
        uint64_t bit = (uint64_t)(k[t >> 3] >> (t & 7)) & 1u;
        swap ^= bit;
        alkt__fe_cswap(x2, x3, swap);
        alkt__fe_cswap(z2, z3, swap);
        swap = bit;
        alkt__fe_add(a, x2, z2);
        alkt__fe_sq(aa, a);
        alkt__fe_sub(b, x2, z2);
        alkt__fe_sq(bb, b);
        alkt__fe_sub(e, aa, bb);
        alkt__fe_add(c, x3, z3);
        alkt__fe_sub(d, x3, z3);
        alkt__fe_mul(da, d, a);
        alkt__fe_mul(cb, c, b);
        alkt__fe_add(a, da, cb);
        alkt__fe_sq(x3, a);
        alkt__fe_sub(b, da, cb);
        alkt__fe_sq(b, b);
        alkt__fe_mul(z3, x1, b);
        alkt__fe_mul(x2, aa, bb);
        alkt__fe_mul_small(a, e, 121665);
        alkt__fe_add(a, aa, a);
        alkt__fe_mul(z2, e, a);
    }
    alkt__fe_cswap(x2, x3, swap);
    alkt__fe_cswap(z2, z3, swap);
    alkt__fe_invert(z2, z2);
    alkt__fe_mul(x2, x2, z2);
    alkt__fe_store(out, x2);
    alkt__sha256_wipe(k, sizeof k);
    alkt__sha256_wipe(x2, sizeof x2);
    alkt__sha256_wipe(z2, sizeof z2);
    alkt__sha256_wipe(x3, sizeof x3);
    alkt__sha256_wipe(z3, sizeof z3);
}

ALKTDEF void alkt_x25519_base(unsigned char out[ALKT_X25519_SIZE],
                              const unsigned char scalar[ALKT_X25519_SIZE])
{
    static const unsigned char nine[32] = {9};
    alkt_x25519(out, scalar, nine);
}

/* ---- HKDF-SHA-256 (RFC 5869) -------------------------------------------------- */
ALKTDEF void alkt_hkdf_extract(unsigned char prk[ALKT_SHA256_SIZE],
                               const void *salt, size_t salt_len,
                               const void *ikm, size_t ikm_len)
{
    /* an absent salt is HashLen zeros: the same HMAC key as an empty one */
    alkt_hmac_sha256(salt, salt_len, ikm, ikm_len, prk);
}

ALKTDEF int alkt_hkdf_expand(unsigned char *okm, size_t okm_len,
                             const unsigned char prk[ALKT_SHA256_SIZE],
                             const void *info, size_t info_len)
{
    alkt_hmac_sha256_ctx key, m;
    unsigned char t[ALKT_SHA256_SIZE];
    unsigned char i = 0;
    size_t done = 0;
    if (okm_len > 255u * ALKT_SHA256_SIZE) return ALKT_ERR_ARG;
    alkt_hmac_sha256_init(&key, prk, ALKT_SHA256_SIZE);
    while (done < okm_len) {
        size_t n = okm_len - done < sizeof t ? okm_len - done : sizeof t;
        m = key;
        if (i) alkt_hmac_sha256_update(&m, t, sizeof t);
        alkt_hmac_sha256_update(&m, info, info_len);
        i++;
        alkt_hmac_sha256_update(&m, &i, 1);
        alkt_hmac_sha256_final(&m, t);
        memcpy(okm + done, t, n);
        done += n;
    }
    alkt__sha256_wipe(t, sizeof t);
    alkt__sha256_wipe(&key, sizeof key);
    return ALKT_OK;
}

/* ---- session ---------------------------------------------------------------- */
enum { ALKT__S_FRESH = 0, ALKT__S_ACTIVE, ALKT__S_CLOSED };
enum {
    ALKT__C_NONE = 0, /* no connection */
    ALKT__C_HANDSHAKE,
    ALKT__C_UP,
    ALKT__C_DRAINING  /* a GOAWAY goes out, then the connection is over */
};
/* channel flags */
#define ALKT__CF_LOCAL 0x001u        /* we opened it */
#define ALKT__CF_WRITE_CLOSED 0x002u /* the app shut its direction */
#define ALKT__CF_EOF_QUEUED 0x004u   /* our EOF is in the log */
#define ALKT__CF_PEER_EOF 0x008u
#define ALKT__CF_RESET 0x010u
#define ALKT__CF_WANT_RESET 0x020u   /* frames owed to the log */
#define ALKT__CF_WANT_OK 0x040u
#define ALKT__CF_WANT_ERR 0x080u
#define ALKT__CF_EOF_READ 0x100u     /* recv has told the app of the EOF */
#define ALKT__CF_LOG_WAIT 0x200u     /* send stopped on the log: WRITABLE
                                        when acks free room */
/* pending events, delivered in this order; DONE last of all */
#define ALKT__EV_OPEN_REQUEST 0x01u
#define ALKT__EV_OPENED 0x02u
#define ALKT__EV_OPEN_FAILED 0x04u
#define ALKT__EV_READABLE 0x08u
#define ALKT__EV_WRITABLE 0x10u
#define ALKT__EV_RESET 0x20u
#define ALKT__EV_DONE 0x40u
#define ALKT__SEV_ESTABLISHED 0x1u
#define ALKT__SEV_RESUMED 0x2u
#define ALKT__SEV_DISCONNECTED 0x4u
#define ALKT__SEV_CLOSED 0x8u
/* library codes in OPEN_ERR / RESET frames (application codes are below) */
#define ALKT__CODE_DUPLICATE 0xff01u
#define ALKT__CODE_BAD_PARAMS 0xff02u
#define ALKT__CODE_FULL 0xff03u

/* a record: length(2) | sealed frame | tag(16) */
#define ALKT__REC_OVERHEAD (2u + ALKT_AEAD_TAG)
#define ALKT__TX_RUN_MAX 262144u     /* bytes of log frames per transmit run */
#define ALKT__WIRE_MAX ((uint64_t)1 << 40)   /* credit and counters */

static const unsigned char alkt__magic[4] = {'A', 'L', 'K', 'T'};

static void alkt__put16(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}
static void alkt__put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}
static void alkt__put64(unsigned char *p, uint64_t v)
{
    alkt__put32(p, (uint32_t)(v >> 32));
    alkt__put32(p + 4, (uint32_t)v);
}
static uint32_t alkt__get16(const unsigned char *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}
static uint32_t alkt__get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}
static uint64_t alkt__get64(const unsigned char *p)
{
    return (uint64_t)alkt__get32(p) << 32 | alkt__get32(p + 4);
}

static void alkt__frame_header(unsigned char *h, unsigned type, size_t len,
                               uint32_t chan)
{
    h[0] = (unsigned char)type;
    h[1] = 0;
    alkt__put16(h + 2, (uint32_t)len);
    alkt__put32(h + 4, chan);
}

static int alkt__sequenced(unsigned type)
{
    return type >= ALKT_FRAME_OPEN && type <= ALKT_FRAME_WINDOW;
}

/* MAC of (label, transcript hash[, extra]) under a key whose pads are
 * hashed already (alkt_hmac_sha256_init once per key: two compressions
 * saved on every MAC). */
static void alkt__mac(const alkt_hmac_sha256_ctx *key, const char *label,
                      const unsigned char *a, size_t alen,
                      const unsigned char *b, size_t blen,
                      unsigned char out[32])
{
    alkt_hmac_sha256_ctx m = *key;
    alkt_hmac_sha256_update(&m, label, strlen(label));
    alkt_hmac_sha256_update(&m, a, alen);
    if (blen) alkt_hmac_sha256_update(&m, b, blen);
    alkt_hmac_sha256_final(&m, out);
}

/* The resume proof: a MAC under the session's token of the resuming
 * HELLO's nonce, the session id and the HELLO's freshness (the HELLO's own
 * MAC binds the proof to the rest). */
/* The token comes from this transcript (the session's first handshake):
 * kept, and the MAC taken only when a resume needs it - most sessions
 * never resume, and it was a tenth of a plaintext handshake. */
static void alkt__token_from(alkt_session *s)
{
    memcpy(s->token_h, s->transcript, 32);
    s->token_ready = 0;
}

/* The resume token, HMAC(secret, "alkt1 token" || H || id). */
static const unsigned char *alkt__token(alkt_session *s)
{
    if (!s->token_ready) {
        alkt__mac(&s->key, "alkt1 token", s->token_h, 32, s->session_id,
                  ALKT_SESSION_ID_SIZE, s->token);
        s->token_ready = 1;
    }
    return s->token;
}

static void alkt__resume_proof(alkt_session *s, const unsigned char *nonce,
                               uint64_t fresh, unsigned char out[32])
{
    alkt_hmac_sha256_ctx k;
    unsigned char b[ALKT_SESSION_ID_SIZE + 8];
    (void)alkt__token(s);
    memcpy(b, s->session_id, ALKT_SESSION_ID_SIZE);
    alkt__put64(b + ALKT_SESSION_ID_SIZE, fresh);
    alkt_hmac_sha256_init(&k, s->token, sizeof s->token);
    alkt__mac(&k, "alkt2 resume", nonce, ALKT_NONCE_SIZE, b, sizeof b, out);
    alkt__sha256_wipe(&k, sizeof k);
}

/* The MAC a client's HELLO ends with: HMAC(secret, "alkt2 hello" || the
 * frame header || the payload up to the MAC). hdr_len: the header's
 * payload length (the MAC included). */
static void alkt__hello_mac(const alkt_hmac_sha256_ctx *key,
                            const unsigned char *payload, size_t hdr_len,
                            unsigned char out[32])
{
    unsigned char h[ALKT_FRAME_HEADER];
    alkt__frame_header(h, ALKT_FRAME_HELLO, hdr_len, 0);
    alkt__mac(key, "alkt2 hello", h, sizeof h, payload,
              hdr_len - ALKT__HELLO_MAC, out);
}

/* A client HELLO (payload p, n bytes) checked as far as a server can
 * before it says or keeps anything: its shape, its MAC under key, its
 * freshness above floor. ALKT_OK with *fresh; else ALKT_ERR_PROTOCOL (no
 * client HELLO), _AUTH (the MAC) or _STALE_HELLO (a replay, or a client
 * clock gone back). The MAC is computed for any well-shaped HELLO, so a
 * name the server does not know (checked under a key of its own) and a
 * wrong MAC cost the same and get the same silence. */
static int alkt__hello_check(const alkt_hmac_sha256_ctx *key,
                             const unsigned char *p, size_t n, uint64_t floor,
                             uint64_t *fresh)
{
    unsigned char mac[32];
    size_t idl;
    int ok;
    if (n < ALKT__HELLO_FIXED + 1 + ALKT__HELLO_MAC || n > ALKT__HELLO_MAX ||
        memcmp(p, alkt__magic, 4) != 0 || p[6] != 1)
        return ALKT_ERR_PROTOCOL;
    idl = p[ALKT__HELLO_IDLEN];
    if (idl == 0 || idl > ALKT_IDENTITY_MAX ||
        n != ALKT__HELLO_FIXED + idl + ALKT__HELLO_MAC)
        return ALKT_ERR_PROTOCOL;
    alkt__hello_mac(key, p, n, mac);
    ok = alkt_ct_equal(mac, p + n - ALKT__HELLO_MAC, 32);
    ALKTUNNEL_CT_PUBLIC(&ok, sizeof ok);   /* whether it matched: public */
    if (!ok) return ALKT_ERR_AUTH;
    *fresh = alkt__get64(p + ALKT__HELLO_FRESH);
    return *fresh > floor ? ALKT_OK : ALKT_ERR_STALE_HELLO;
}

/* The client HELLO's hash, what a REFUSE is bound to: the transcript hash
 * holds that frame and nothing else yet, so a copy of it finished. */
static void alkt__hs_hello_hash(alkt_session *s)
{
    alkt_sha256_ctx c = s->hs_hash;
    alkt_sha256_final(&c, s->hello_hash);
}

#ifndef ALKTUNNEL_NO_ROLES /* (the gateway's replay check) */
/* SHA-256 of a HELLO frame (the header rebuilt from the payload length). */
static void alkt__hello_hash(const unsigned char *p, size_t n,
                             unsigned char out[32])
{
    unsigned char h[ALKT_FRAME_HEADER];
    alkt_sha256_ctx c;
    alkt__frame_header(h, ALKT_FRAME_HELLO, n, 0);
    alkt_sha256_init(&c);
    alkt_sha256_update(&c, h, sizeof h);
    alkt_sha256_update(&c, p, n);
    alkt_sha256_final(&c, out);
}
#endif

/* A REFUSE frame, whole, into out (ALKT_FRAME_HEADER + ALKT__REFUSE_LEN
 * bytes): the negated library code, and HMAC(secret, "alkt2 refuse" ||
 * SHA-256(the client's HELLO frame) || code) - bound to that HELLO's
 * fresh nonce, so it refuses that connection and no other. */
static size_t alkt__refuse_frame(const alkt_hmac_sha256_ctx *key,
                                 const unsigned char hello_hash[32], int code,
                                 unsigned char *out)
{
    alkt__frame_header(out, ALKT_FRAME_REFUSE, ALKT__REFUSE_LEN, 0);
    alkt__put16(out + ALKT_FRAME_HEADER, (uint32_t)-code);
    alkt__mac(key, "alkt2 refuse", hello_hash, 32, out + ALKT_FRAME_HEADER, 2,
              out + ALKT_FRAME_HEADER + 2);
    return ALKT_FRAME_HEADER + ALKT__REFUSE_LEN;
}

static size_t alkt__align8(size_t n)
{
    return (n + 7u) & ~(size_t)7u;
}

/* ---- encryption: keys and records ---- */
/* The next key of a direction: HKDF-Expand(key, "alkt1 rekey"). */
static void alkt__next_key(unsigned char key[ALKT_AEAD_KEY])
{
    unsigned char k[ALKT_AEAD_KEY];
    (void)alkt_hkdf_expand(k, sizeof k, key, "alkt1 rekey", 11);
    memcpy(key, k, sizeof k);
    alkt__sha256_wipe(k, sizeof k);
}

/* The record nonce: 32 zero bits, then the record's counter (64 bits,
 * little endian), as RFC 8439 2.8 suggests for a counter. */
static void alkt__rec_nonce(unsigned char n[ALKT_AEAD_NONCE], uint64_t ctr)
{
    memset(n, 0, 4);
    alkt__putle32(n + 4, (uint32_t)ctr);
    alkt__putle32(n + 8, (uint32_t)(ctr >> 32));
}

/* One record into rec_out: the frame a (alen bytes) then b (blen). */
static int alkt__seal_raw(alkt_session *s, const unsigned char *a, size_t alen,
                          const unsigned char *b, size_t blen)
{
    unsigned char nonce[ALKT_AEAD_NONCE];
    unsigned char *r = s->rec_out + s->rec_len;
    size_t n = alen + blen;
    ALKTUNNEL_ASSERT(s->rec_len + ALKT__REC_OVERHEAD + n <= s->rec_cap);
    /* never a counter past the key's limit: the REKEY record is the last */
    if (s->tx_ctr >= s->rekey_records) return ALKT_ERR_NONCE_LIMIT;
    alkt__put16(r, (uint32_t)n);
    alkt__rec_nonce(nonce, s->tx_ctr);
    if (blen) {   /* a frame across the log's end: gathered first */
        memcpy(r + 2, a, alen);
        memcpy(r + 2 + alen, b, blen);
        a = r + 2;
    }
    alkt_aead_seal(r + 2, s->tx_key, nonce, r, 2, a, n);
    s->rec_len += ALKT__REC_OVERHEAD + n;
    s->tx_ctr++;
    return ALKT_OK;
}

/* A frame sealed; after the last record but one of a key, a REKEY record
 * takes the last counter and the direction moves to the next key. */
static int alkt__seal_frame(alkt_session *s, const unsigned char *a,
                            size_t alen, const unsigned char *b, size_t blen)
{
    int rc = alkt__seal_raw(s, a, alen, b, blen);
    if (rc == ALKT_OK && s->tx_ctr == s->rekey_records - 1) {
        unsigned char h[ALKT_FRAME_HEADER];
        alkt__frame_header(h, ALKT_FRAME_REKEY, 0, 0);
        rc = alkt__seal_raw(s, h, sizeof h, NULL, 0);
        alkt__next_key(s->tx_key);
        s->tx_ctr = 0;
        s->rekeys++;
    }
    return rc;
}

/* Both HELLOs are in (s->transcript): the keys of this connection from the
 * ephemeral exchange and the secret, bound to the transcript:
 *   dh  = X25519(our ephemeral, the peer's)
 *   prk = HMAC(secret, "alkt1 keys" || H || dh)
 *   client->server key | server->client key | AUTH key
 *       = HKDF-Expand(prk, "alkt1 session keys", 96)
 * The ephemeral private key is gone after this. */
static int alkt__derive_keys(alkt_session *s)
{
    unsigned char dh[32], prk[32], okm[96];
    unsigned char zero = 0;
    size_t i;
    int rc = ALKT_OK;
    if (s->plaintext) return ALKT_OK;
    alkt_x25519(dh, s->eph, s->peer_eph);
    for (i = 0; i < sizeof dh; i++) zero |= dh[i];
    ALKTUNNEL_CT_PUBLIC(&zero, sizeof zero);
    if (!zero) rc = ALKT_ERR_AUTH;   /* a small-order point: no secret */
    alkt__mac(&s->key, "alkt1 keys", s->transcript, 32, dh, sizeof dh, prk);
    (void)alkt_hkdf_expand(okm, sizeof okm, prk, "alkt1 session keys", 18);
    memcpy(s->tx_key, okm + (s->is_server ? 32 : 0), ALKT_AEAD_KEY);
    memcpy(s->rx_key, okm + (s->is_server ? 0 : 32), ALKT_AEAD_KEY);
    memcpy(s->auth_key, okm + 64, 32);
    s->tx_ctr = s->rx_ctr = 0;
    alkt__sha256_wipe(s->eph, sizeof s->eph);
    alkt__sha256_wipe(dh, sizeof dh);
    alkt__sha256_wipe(prk, sizeof prk);
    alkt__sha256_wipe(okm, sizeof okm);
    return rc;
}

/* An AUTH MAC: under the secret in plaintext sessions, under the AUTH key
 * (secret and ephemeral exchange both) in encrypted ones. */
static void alkt__auth_mac(const alkt_session *s, const char *label,
                           unsigned char out[32])
{
    if (s->plaintext) {
        alkt__mac(&s->key, label, s->transcript, 32, NULL, 0, out);
    } else {
        alkt_hmac_sha256_ctx k;
        alkt_hmac_sha256_init(&k, s->auth_key, sizeof s->auth_key);
        alkt__mac(&k, label, s->transcript, 32, NULL, 0, out);
        alkt__sha256_wipe(&k, sizeof k);
    }
}

/* The configuration with defaults; 0 when it is invalid. */
static int alkt__cfg(const alkt_session_config *c, alkt_session_config *o)
{
    *o = *c;
    if (!o->max_channels) o->max_channels = 16;
    if (!o->channel_window) o->channel_window = 65536;
    if (!o->max_frame) o->max_frame = ALKT_FRAME_PAYLOAD_MAX;
    if (!o->log_size) o->log_size = 262144;
    if (!o->ping_interval_ns) o->ping_interval_ns = 15000000000ull;
    if (!o->idle_timeout_ns) o->idle_timeout_ns = 60000000000ull;
    if (!o->handshake_timeout_ns) o->handshake_timeout_ns = 10000000000ull;
    if (!o->resume_window_ns) o->resume_window_ns = 120000000000ull;
    if (!o->rekey_records) o->rekey_records = (uint64_t)1 << 32;
    if (!o->seal_batch) o->seal_batch = 4;
    if (!o->session_window)
        o->session_window =
            o->max_channels * (uint64_t)o->channel_window > 0xffffffffu
                ? 0xffffffffu
                : o->max_channels * o->channel_window;
    if (!c->secret || c->secret_len < ALKT_SECRET_MIN ||
        c->secret_len > ALKT_SECRET_MAX || !c->identity ||
        c->identity_len == 0 || c->identity_len > ALKT_IDENTITY_MAX ||
        o->max_channels > ALKT_CHANNELS_MAX || o->max_frame < 256 ||
        o->max_frame > ALKT_FRAME_PAYLOAD_MAX ||
        o->channel_window > (1u << 30) ||
        o->log_size < 4 * (ALKT_FRAME_HEADER + o->max_frame) ||
        o->log_size > (1u << 30) || o->rekey_records < 2 ||
        o->rekey_records > ((uint64_t)1 << 60) || o->seal_batch > ALKT_SEAL_BATCH_MAX)
        return 0;
    return 1;
}

/* the frame buffer: a frame of max_frame, or a whole HELLO */
static size_t alkt__in_buf_size(const alkt_session_config *c)
{
    return c->max_frame > ALKT__HELLO_MAX ? c->max_frame : ALKT__HELLO_MAX;
}

static size_t alkt__rec_max(const alkt_session_config *c)
{
    return ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER + c->max_frame;
}

/* the record buffers: one batch out (plus a REKEY record), one record in */
static size_t alkt__rec_mem(const alkt_session_config *c)
{
    if (c->plaintext) return 0;
    return 8 + alkt__align8(c->seal_batch * alkt__rec_max(c) +
                        ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER) +
           alkt__align8(alkt__rec_max(c));
}

ALKTDEF size_t alkt_session_mem_size(const alkt_session_config *cfg)
{
    alkt_session_config c;
    if (!cfg || !alkt__cfg(cfg, &c)) return 0;
    return alkt__align8((size_t)c.max_channels * sizeof(alkt__chan)) +
           (size_t)c.max_channels * 24u + (size_t)c.max_channels * c.channel_window +
           c.log_size + alkt__in_buf_size(&c) + 8 + alkt__rec_mem(&c);
}

ALKTDEF int alkt_session_init(alkt_session *s, const alkt_session_config *cfg,
                              void *mem, size_t mem_len, uint64_t now)
{
    alkt_session_config c;
    unsigned char *p;
    uint32_t i;
    if (!s || !cfg || !mem || !alkt__cfg(cfg, &c)) return ALKT_ERR_ARG;
    if (mem_len < alkt_session_mem_size(cfg)) return ALKT_ERR_NOMEM;
    memset(s, 0, sizeof *s);
    s->is_server = c.is_server != 0;
    alkt_hmac_sha256_init(&s->key, c.secret, c.secret_len);
    memcpy(s->identity, c.identity, c.identity_len);
    s->identity_len = c.identity_len;
    s->max_channels = c.max_channels;
    s->channel_window = c.channel_window;
    s->session_window = c.session_window;
    s->log_size = c.log_size;
    s->max_frame = c.max_frame;
    s->ping_ns = c.ping_interval_ns;
    s->idle_ns = c.idle_timeout_ns;
    s->hs_ns = c.handshake_timeout_ns;
    s->resume_ns = c.resume_window_ns;
    s->epoch_ns = c.epoch_ns;
    s->fresh_floor = c.freshness_floor;
    s->now = now;
    p = (unsigned char *)(((uintptr_t)mem + 7u) & ~(uintptr_t)7u);
    s->chans = (alkt__chan *)(void *)p;
    p += alkt__align8((size_t)c.max_channels * sizeof(alkt__chan));
    memset(s->chans, 0, (size_t)c.max_channels * sizeof(alkt__chan));
    s->refusals = (uint32_t *)(void *)p;
    p += (size_t)c.max_channels * 8u;
    s->retired = (uint32_t *)(void *)p;
    p += (size_t)c.max_channels * 16u;
    for (i = 0; i < c.max_channels; i++) {
        s->chans[i].ring = p;
        p += c.channel_window;
    }
    s->log = p;
    p += c.log_size;
    s->in_buf = p;
    p += alkt__in_buf_size(&c);
    s->plaintext = c.plaintext != 0;
    s->rekey_records = c.rekey_records;
    if (!s->plaintext) {
        p = (unsigned char *)(((uintptr_t)p + 7u) & ~(uintptr_t)7u);
        s->rec_out = p;
        s->rec_cap = c.seal_batch * alkt__rec_max(&c) +
                     ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER;
        p += alkt__align8(s->rec_cap);
        s->rec_in = p;
    }
    s->next_id = s->is_server ? 2 : 1;
    return ALKT_OK;
}

/* ---- channels: lookup, events, the end of a channel ---- */
static alkt__chan *alkt__find(const alkt_session *s, uint32_t id)
{
    uint32_t i;
    if (!id) return NULL;
    for (i = 0; i < s->max_channels; i++)
        if (s->chans[i].state != ALKT_CHANNEL_NONE && s->chans[i].id == id)
            return &s->chans[i];
    return NULL;
}

static alkt__chan *alkt__slot(alkt_session *s)
{
    uint32_t i;
    for (i = 0; i < s->max_channels; i++)
        if (s->chans[i].state == ALKT_CHANNEL_NONE) return &s->chans[i];
    return NULL;
}

/* A peer's open finds every record taken: a finished channel whose only
 * news left for the app is its refusal or reset and its DONE gives its
 * record up, and those events wait in the retired queue (polled first).
 * Without this a peer that stays within max_channels - it saw the
 * channel end and opened another - is refused because our app has not
 * polled yet (found by tunnel_sim: a reset and the next open in one
 * read). */
static alkt__chan *alkt__retire(alkt_session *s)
{
    const unsigned keep = ALKT__EV_OPEN_FAILED | ALKT__EV_RESET | ALKT__EV_DONE;
    uint32_t i, *r;
    if (s->n_retired >= s->max_channels) return NULL;
    for (i = 0; i < s->max_channels; i++) {
        alkt__chan *c = &s->chans[i];
        /* (READABLE and WRITABLE say nothing once it is finished: a reset
         * dropped what was buffered, two EOFs mean it was all read) */
        if (c->state != ALKT_CHANNEL_FINISHED || !(c->events & ALKT__EV_DONE) ||
            (c->events & ~(keep | ALKT__EV_READABLE | ALKT__EV_WRITABLE)))
            continue;
        r = s->retired + 4u * s->n_retired++;
        r[0] = c->id;
        r[1] = c->events & keep;
        r[2] = (uint32_t)c->code;
        r[3] = 0;
        memset(c, 0, offsetof(alkt__chan, ring));
        return c;
    }
    return NULL;
}

static int alkt__local_id(const alkt_session *s, uint32_t id)
{
    return (int)(id & 1u) == (s->is_server ? 0 : 1);
}

/* An id the peer or we used before (the record is gone): frames for it
 * are late, and ignored. */
static int alkt__closed_id(const alkt_session *s, uint32_t id)
{
    return alkt__local_id(s, id) ? id < s->next_id : id <= s->peer_high;
}

/* Both directions over (or reset, or refused): nothing more will be
 * delivered; DONE once every frame we owe is in the log. */
static void alkt__maybe_done(alkt__chan *c)
{
    unsigned want = ALKT__CF_WANT_RESET | ALKT__CF_WANT_OK | ALKT__CF_WANT_ERR;
    int over;
    if (c->state == ALKT_CHANNEL_NONE || (c->events & ALKT__EV_DONE)) return;
    if (c->flags & want) return;
    over = (c->flags & ALKT__CF_RESET) != 0 ||
           c->state == ALKT_CHANNEL_FINISHED ||
           ((c->flags & ALKT__CF_EOF_QUEUED) && (c->flags & ALKT__CF_EOF_READ));
    if (!over) return;
    c->state = ALKT_CHANNEL_FINISHED;
    c->events |= ALKT__EV_DONE;
}

/* The channel ends here without more frames: what it held of the session
 * window goes back. */
static void alkt__chan_end(alkt_session *s, alkt__chan *c, int code)
{
    s->budget_used -= (uint64_t)c->rcv_len + c->rcv_granted;
    c->rcv_len = c->rcv_granted = c->rcv_partial = 0;
    if (s->in_sink == c) s->in_sink = NULL;   /* the rest is dropped */
    c->snd_credit = 0;
    c->code = code;
    c->state = ALKT_CHANNEL_FINISHED;
}

/* ---- the log ---- */
static uint64_t alkt__log_room(const alkt_session *s)
{
    return s->log_size - (s->log_tail - s->log_head);
}

/* Where absolute log offset abs sits in the ring. */
static size_t alkt__log_at(const alkt_session *s, uint64_t abs)
{
    return (size_t)alkt__divmod64(&abs, s->log_size);
}

static void alkt__log_put(alkt_session *s, const void *data, size_t len)
{
    const unsigned char *d = (const unsigned char *)data;
    while (len) {
        size_t at = alkt__log_at(s, s->log_tail);
        size_t n = s->log_size - at < len ? s->log_size - at : len;
        memcpy(s->log + at, d, n);
        s->log_tail += n;
        d += n;
        len -= n;
    }
}

static unsigned char alkt__log_byte(const alkt_session *s, uint64_t abs)
{
    return s->log[alkt__log_at(s, abs)];
}

static size_t alkt__log_frame_len(const alkt_session *s, uint64_t abs)
{
    return ALKT_FRAME_HEADER + ((size_t)alkt__log_byte(s, abs + 2) << 8 |
                                alkt__log_byte(s, abs + 3));
}

/* Appends one sequenced frame when the log has room: 1, else 0. */
static int alkt__log_frame(alkt_session *s, unsigned type, uint32_t chan,
                           const void *a, size_t alen, const void *b,
                           size_t blen)
{
    unsigned char h[ALKT_FRAME_HEADER];
    if (alkt__log_room(s) < ALKT_FRAME_HEADER + alen + blen) return 0;
    alkt__frame_header(h, type, alen + blen, chan);
    alkt__log_put(s, h, sizeof h);
    if (alen) alkt__log_put(s, a, alen);
    if (blen) alkt__log_put(s, b, blen);
    s->seq_next++;
    return 1;
}

/* The peer has every frame below seq: their room is ours again. */
static int alkt__log_release(alkt_session *s, uint64_t seq)
{
    if (seq < s->seq_head || seq > s->seq_sent) return ALKT_ERR_PROTOCOL;
    if (s->seq_head < seq && s->log_waiters) {
        /* room again: the channels a full log stopped may send */
        uint32_t i;
        for (i = 0; i < s->max_channels; i++) {
            alkt__chan *c = &s->chans[i];
            if (!(c->flags & ALKT__CF_LOG_WAIT)) continue;
            c->flags &= (uint16_t)~ALKT__CF_LOG_WAIT;
            if (c->state == ALKT_CHANNEL_OPEN && c->snd_credit &&
                !(c->flags & ALKT__CF_WRITE_CLOSED))
                c->events |= ALKT__EV_WRITABLE;
        }
        s->log_waiters = 0;
    }
    while (s->seq_head < seq) {
        s->log_head += alkt__log_frame_len(s, s->log_head);
        s->seq_head++;
    }
    return ALKT_OK;
}

/* ---- frames the channels owe, and credit ---- */
static uint32_t alkt__grantable(const alkt_session *s, const alkt__chan *c)
{
    uint64_t free_ring = (uint64_t)s->channel_window - c->rcv_len - c->rcv_granted;
    uint64_t room = s->session_window > s->budget_used
                        ? s->session_window - s->budget_used : 0;
    uint64_t g = free_ring < room ? free_ring : room;
    return (uint32_t)g;
}

/* Everything channels owe the log, in order, as far as it has room. */
static void alkt__pump(alkt_session *s)
{
    uint32_t i;
    if (s->state != ALKT__S_ACTIVE) return;
    while (s->n_refusals) {
        unsigned char b[2];
        alkt__put16(b, s->refusals[1]);
        if (!alkt__log_frame(s, ALKT_FRAME_OPEN_ERR, s->refusals[0], b, 2,
                             NULL, 0))
            return;
        s->n_refusals--;
        memmove(s->refusals, s->refusals + 2, s->n_refusals * 8u);
    }
    for (i = 0; i < s->max_channels; i++) {
        alkt__chan *c = &s->chans[i];
        unsigned char b[4];
        if (c->state == ALKT_CHANNEL_NONE) continue;
        if (c->flags & ALKT__CF_WANT_ERR) {
            alkt__put16(b, (uint32_t)c->code);
            if (!alkt__log_frame(s, ALKT_FRAME_OPEN_ERR, c->id, b, 2, c->reason,
                                 strlen(c->reason)))
                return;
            c->flags &= (uint16_t)~ALKT__CF_WANT_ERR;
        }
        if (c->flags & ALKT__CF_WANT_OK) {
            char json[96];
            alkt_error err;
            ptrdiff_t n = 0;
            if (c->reply.address.family)
                n = alkt_listen_reply_encode(&c->reply, json, sizeof json, &err);
            if (n < 0) n = 0;
            if (!alkt__log_frame(s, ALKT_FRAME_OPEN_OK, c->id, json, (size_t)n,
                                 NULL, 0))
                return;
            c->flags &= (uint16_t)~ALKT__CF_WANT_OK;
        }
        if (c->flags & ALKT__CF_WANT_RESET) {
            alkt__put16(b, (uint32_t)c->code);
            if (!alkt__log_frame(s, ALKT_FRAME_RESET, c->id, b, 2, NULL, 0))
                return;
            c->flags &= (uint16_t)~ALKT__CF_WANT_RESET;
        }
        if (c->state == ALKT_CHANNEL_OPEN &&
            (c->flags & ALKT__CF_WRITE_CLOSED) &&
            !(c->flags & ALKT__CF_EOF_QUEUED)) {
            if (!alkt__log_frame(s, ALKT_FRAME_EOF, c->id, NULL, 0, NULL, 0))
                return;
            c->flags |= ALKT__CF_EOF_QUEUED;
        }
        if ((c->state == ALKT_CHANNEL_OPEN || c->state == ALKT_CHANNEL_OPENING) &&
            !(c->flags & ALKT__CF_PEER_EOF)) {
            /* credit (with the open: the peer may answer with data at
             * once) in steps of a quarter window, or whatever there is
             * when the peer has none */
            uint32_t g = alkt__grantable(s, c);
            if (g && (g >= s->channel_window / 4 || c->rcv_granted == 0)) {
                alkt__put32(b, g);
                if (!alkt__log_frame(s, ALKT_FRAME_WINDOW, c->id, b, 4, NULL, 0))
                    return;
                c->rcv_granted += g;
                s->budget_used += g;
            }
        }
        alkt__maybe_done(c);
    }
}

/* ---- connection and session ends ---- */
static void alkt__goaway(alkt_session *s, int code)
{
    if (s->conn == ALKT__C_NONE || s->conn == ALKT__C_DRAINING) return;
    s->conn = ALKT__C_DRAINING;
    s->conn_code = code;
    s->goaway_wanted = 1;
    s->goaway_code = code;
    /* (after what the control buffer holds: a frame half sent is finished) */
}

/* The peer's GOAWAY: nothing more goes out; the connection ends at the
 * next poll_transmit. */
static void alkt__peer_goaway(alkt_session *s, int wire)
{
    s->peer_goaway = wire;
    s->conn = ALKT__C_DRAINING;
    s->goaway_wanted = 0;
    s->goaway_sent = 1;
    s->ctl_len = s->ctl_off = 0;
    s->tx_frame_left = 0;
    s->tx_peeked = 0;
    s->rec_len = s->rec_off = 0;
}

/* A closed session keeps no key: the secret's state, the token, the
 * handshake's keys and the receive key go at the close, the send key once
 * nothing more is sealed (the connection is over: a GOAWAY is out). */
static void alkt__forget_keys(alkt_session *s)
{
    alkt__sha256_wipe(&s->key, sizeof s->key);
    alkt__sha256_wipe(s->token, sizeof s->token);
    s->token_ready = 0;
    alkt__sha256_wipe(s->auth_key, sizeof s->auth_key);
    alkt__sha256_wipe(s->eph, sizeof s->eph);
    alkt__sha256_wipe(s->rx_key, sizeof s->rx_key);
    if (s->conn == ALKT__C_NONE) alkt__sha256_wipe(s->tx_key, sizeof s->tx_key);
}

static void alkt__close_session(alkt_session *s, int code)
{
    uint32_t i;
    if (s->state == ALKT__S_CLOSED) return;
    s->state = ALKT__S_CLOSED;
    s->close_code = code;
    s->session_events |= ALKT__SEV_CLOSED;
    s->ev_code_closed = code;
    for (i = 0; i < s->max_channels; i++) {
        alkt__chan *c = &s->chans[i];
        if (c->state == ALKT_CHANNEL_NONE || (c->events & ALKT__EV_DONE))
            continue;
        c->flags &= (uint16_t)~(ALKT__CF_WANT_ERR | ALKT__CF_WANT_OK |
                               ALKT__CF_WANT_RESET);
        c->flags |= ALKT__CF_RESET;
        alkt__chan_end(s, c, code);
        c->events |= ALKT__EV_RESET | ALKT__EV_DONE;
    }
    alkt__forget_keys(s);
}

/* The connection is over (we know it): the session waits for another. */
static void alkt__conn_over(alkt_session *s, int code)
{
    s->conn = ALKT__C_NONE;
    s->session_events |= ALKT__SEV_DISCONNECTED;
    s->ev_code_disconnected = code;
    s->in_hdr_len = 0;
    s->ctl_len = s->ctl_off = 0;
    s->tx_frame_left = 0;
    s->tx_peeked = 0;
    s->tx_sealed = s->rx_sealed = 0;
    s->ctl_clear = 0;
    s->rec_len = s->rec_off = s->rec_in_len = 0;
    s->goaway_wanted = s->ack_wanted = s->ping_wanted = s->pong_wanted = 0;
    /* The resume window runs from the loss of a working connection, not
     * from each failed attempt after it; a session that never got in has
     * nothing to resume. */
    if (s->state == ALKT__S_ACTIVE && s->conn_was_up)
        s->deadline_resume = s->now + s->resume_ns;
    s->conn_was_up = 0;
    if (s->state == ALKT__S_ACTIVE && s->now >= s->deadline_resume)
        alkt__close_session(s, ALKT_ERR_RESUME_EXPIRED);
    if (s->state == ALKT__S_CLOSED) alkt__forget_keys(s);
    if (s->in_sink) {
        s->in_sink->rcv_partial = 0;   /* that frame comes again */
        s->in_sink = NULL;
    }
}

/* A broken rule of the protocol: the session is over. */
static int alkt__violation(alkt_session *s, int code)
{
    alkt__goaway(s, code);
    if (s->state == ALKT__S_ACTIVE) alkt__close_session(s, code);
    return code;
}

/* ---- handshake ---- */
static void alkt__ctl_frame(alkt_session *s, unsigned type, const void *p,
                            size_t n)
{
    ALKTUNNEL_ASSERT(s->ctl_len + ALKT_FRAME_HEADER + n <= sizeof s->ctl);
    alkt__frame_header(s->ctl + s->ctl_len, type, n, 0);
    memcpy(s->ctl + s->ctl_len + ALKT_FRAME_HEADER, p, n);
    s->ctl_len += ALKT_FRAME_HEADER + n;
}

/* Our HELLO's payload into h; a client's ends with its MAC. */
static size_t alkt__hello(alkt_session *s, unsigned char *h, int resume,
                          const unsigned char *proof)
{
    size_t n;
    memcpy(h, alkt__magic, 4);
    h[4] = ALKT_PROTOCOL_VERSION;  /* lowest */
    h[5] = ALKT_PROTOCOL_VERSION;  /* highest (the server: its choice) */
    h[6] = s->is_server ? 2 : 1;
    h[7] = (unsigned char)((resume ? 1 : 0) | (s->plaintext ? 2 : 0));
    memcpy(h + 8, s->nonce, ALKT_NONCE_SIZE);
    memcpy(h + 40, s->session_id, ALKT_SESSION_ID_SIZE);
    alkt__put64(h + 56, s->seq_received);
    if (proof) memcpy(h + 64, proof, 32);
    else memset(h + 64, 0, 32);
    alkt__put32(h + 96, s->max_frame);
    alkt__put32(h + 100, s->log_size);
    alkt__put32(h + 104, s->max_channels);
    memcpy(h + ALKT__HELLO_EPH, s->eph_pub, ALKT_X25519_SIZE); /* 0s in clear */
    alkt__put64(h + ALKT__HELLO_FRESH, s->is_server ? 0 : s->fresh_sent);
    h[ALKT__HELLO_IDLEN] = (unsigned char)s->identity_len;
    memcpy(h + ALKT__HELLO_FIXED, s->identity, s->identity_len);
    n = ALKT__HELLO_FIXED + s->identity_len;
    if (s->is_server) return n;
    n += ALKT__HELLO_MAC;
    alkt__hello_mac(&s->key, h, n, h + n - ALKT__HELLO_MAC);
    return n;
}

ALKTDEF int alkt_session_connect(alkt_session *s, uint64_t now,
                                 const unsigned char nonce[ALKT_NONCE_SIZE])
{
    unsigned char h[ALKT__HELLO_MAX];
    if (!s || !nonce) return ALKT_ERR_ARG;
    if (s->state == ALKT__S_CLOSED) return ALKT_ERR_CLOSED;
    s->now = now;
    if (s->conn != ALKT__C_NONE)   /* a new path while the old one looked alive */
        alkt__conn_over(s, ALKT_ERR_NOT_CONNECTED);
    /* a DISCONNECTED not polled yet was about the connection this one
     * replaces: an app that closes its socket on that event must not close
     * the new one */
    s->session_events &= ~ALKT__SEV_DISCONNECTED;
    s->conn = ALKT__C_HANDSHAKE;
    s->conn_code = 0;
    s->hs_step = 0;
    s->hs_proven = 0;
    s->hs_heard = 0;
    s->deadline_hs = now + s->hs_ns;
    s->last_rx = s->last_tx = now;
    s->in_hdr_len = 0;
    s->ctl_len = s->ctl_off = 0;
    s->tx_frame_left = 0;
    s->tx_peeked = 0;
    s->goaway_wanted = s->goaway_sent = 0;
    s->ack_wanted = s->ping_wanted = s->pong_wanted = 0;
    s->tx_sealed = s->rx_sealed = 0;
    s->ctl_clear = 0;
    s->rec_len = s->rec_off = s->rec_in_len = 0;
    {
        /* the caller's 32 random bytes make the HELLO's nonce and, apart
         * from it, this handshake's ephemeral key */
        alkt_sha256_ctx h2;
        alkt_sha256_init(&h2);
        alkt_sha256_update(&h2, "alkt1 nonce", 11);
        alkt_sha256_update(&h2, nonce, ALKT_NONCE_SIZE);
        alkt_sha256_final(&h2, s->nonce);
        if (!s->plaintext) {
            alkt_sha256_init(&h2);
            alkt_sha256_update(&h2, "alkt1 ephemeral", 15);
            alkt_sha256_update(&h2, nonce, ALKT_NONCE_SIZE);
            alkt_sha256_final(&h2, s->eph);
            alkt_x25519_base(s->eph_pub, s->eph);
        }
    }
    s->resuming = s->state == ALKT__S_ACTIVE;
    alkt_sha256_init(&s->hs_hash);
    if (!s->is_server) {
        unsigned char proof[32];
        size_t n;
        /* fresher than every HELLO before it: the wall clock if the caller
         * gave one, and at least one above the last */
        s->fresh_sent = s->epoch_ns + now > s->fresh_sent ? s->epoch_ns + now
                                                           : s->fresh_sent + 1;
        if (s->resuming)
            alkt__resume_proof(s, s->nonce, s->fresh_sent, proof);
        n = alkt__hello(s, h, s->resuming, s->resuming ? proof : NULL);
        alkt__ctl_frame(s, ALKT_FRAME_HELLO, h, n);
        alkt_sha256_update(&s->hs_hash, s->ctl, s->ctl_len);
        alkt__hs_hello_hash(s);
    }
    return ALKT_OK;
}

/* A HELLO's fields, checked for what every HELLO must hold (n: without a
 * client HELLO's MAC, checked before). */
static int alkt__parse_hello(alkt_session *s, const unsigned char *p,
                             size_t n)
{
    size_t idl;
    if (n < ALKT__HELLO_FIXED || memcmp(p, alkt__magic, 4) != 0)
        return ALKT_ERR_PROTOCOL;
    idl = p[ALKT__HELLO_IDLEN];
    if (idl == 0 || idl > ALKT_IDENTITY_MAX || n != ALKT__HELLO_FIXED + idl)
        return ALKT_ERR_PROTOCOL;
    if (p[6] != (s->is_server ? 1 : 2) || (p[7] & ~3u)) return ALKT_ERR_PROTOCOL;
    if (p[4] > ALKT_PROTOCOL_VERSION || p[5] < ALKT_PROTOCOL_VERSION)
        return ALKT_ERR_VERSION;
    if (((p[7] >> 1) & 1u) != (unsigned)s->plaintext) return ALKT_ERR_CIPHER;
    if (alkt__get32(p + 96) < 256 || alkt__get32(p + 96) > ALKT_FRAME_PAYLOAD_MAX ||
        alkt__get32(p + 100) < 4 * (ALKT_FRAME_HEADER + alkt__get32(p + 96)) ||
        alkt__get32(p + 104) == 0 || alkt__get32(p + 104) > ALKT_CHANNELS_MAX)
        return ALKT_ERR_PROTOCOL;
    if (s->established_once &&
        (idl != s->peer_identity_len || memcmp(p + ALKT__HELLO_FIXED, s->peer_identity, idl)))
        return ALKT_ERR_AUTH;
    return ALKT_OK;
}

static void alkt__take_hello(alkt_session *s, const unsigned char *p)
{
    memcpy(s->peer_nonce, p + 8, ALKT_NONCE_SIZE);
    s->peer_max_frame = alkt__get32(p + 96);
    s->peer_log_size = alkt__get32(p + 100);
    s->peer_max_channels = alkt__get32(p + 104);
    memcpy(s->peer_eph, p + ALKT__HELLO_EPH, ALKT_X25519_SIZE);
    s->peer_identity_len = p[ALKT__HELLO_IDLEN];
    memcpy(s->peer_identity, p + ALKT__HELLO_FIXED, s->peer_identity_len);
    s->peer_identity[s->peer_identity_len] = 0;
}

/* The log goes on from the frames the peer says it has: those are
 * released, the rest goes again, whole frames from the first. */
static int alkt__rewind(alkt_session *s, uint64_t peer_has)
{
    if (alkt__log_release(s, peer_has) != ALKT_OK) return ALKT_ERR_RESUME_REFUSED;
    s->seq_sent = s->seq_head;
    s->log_sent = s->log_head;
    s->tx_frame_left = 0;
    s->tx_peeked = 0;
    return ALKT_OK;
}

/* Our own AUTH is queued: what we send after it is sealed (the frames
 * queued so far go in clear). The server gets here before the client's
 * AUTH is in - a GOAWAY it sends then is sealed, as the client, which has
 * the keys once it checked our AUTH, expects. */
static void alkt__seal_from_here(alkt_session *s)
{
    if (s->plaintext || s->tx_sealed) return;
    s->tx_sealed = 1;
    s->ctl_clear = s->ctl_len;
}

static void alkt__up(alkt_session *s)
{
    s->conn = ALKT__C_UP;
    s->conn_was_up = 1;
    alkt__seal_from_here(s);
    alkt__sha256_wipe(s->auth_key, sizeof s->auth_key);
    if (s->resuming) {
        s->session_events |= ALKT__SEV_RESUMED;
    } else {
        s->state = ALKT__S_ACTIVE;
        s->established_once = 1;
        s->hs_half = 0;
        alkt__token_from(s);
        s->session_events |= ALKT__SEV_ESTABLISHED;
    }
    s->session_events &= ~ALKT__SEV_DISCONNECTED;
    s->last_rx = s->last_tx = s->now;
    alkt__pump(s);
}

/* Server: a resuming client HELLO (payload p, its MAC and freshness fresh
 * checked) proves this session's token and names counters the session can
 * go on from. */
static int alkt__resume_ok(alkt_session *s, const unsigned char *p,
                           uint64_t fresh)
{
    unsigned char proof[32];
    uint64_t peer_has = alkt__get64(p + 56);
    int ok;
    if ((!s->established_once && !s->hs_half) ||
        memcmp(p + 40, s->session_id, ALKT_SESSION_ID_SIZE) != 0)
        return 0;
    alkt__resume_proof(s, p + 8, fresh, proof);
    ok = alkt_ct_equal(proof, p + 64, 32);
    return ok && peer_has >= s->seq_head && peer_has <= s->seq_sent;
}

/* Server: a proven client's HELLO turned down - the REFUSE (MACed, bound
 * to that HELLO) goes out and the connection ends after it; the session,
 * if there is one, is untouched. */
static int alkt__refuse(alkt_session *s, int code)
{
    unsigned char f[ALKT_FRAME_HEADER + ALKT__REFUSE_LEN];
    s->ctl_len = s->ctl_off = 0;
    alkt__refuse_frame(&s->key, s->hello_hash, code, f);
    memcpy(s->ctl, f, sizeof f);
    s->ctl_len = sizeof f;
    s->conn = ALKT__C_DRAINING;
    s->goaway_wanted = 0;
    s->goaway_sent = 1;   /* the REFUSE is the last frame */
    s->conn_code = code;
    return code;
}

static int alkt__on_hello(alkt_session *s, const unsigned char *p, size_t n)
{
    int rc;
    uint64_t peer_has;
    if (s->hs_step != 0 || s->hs_proven) return ALKT_ERR_PROTOCOL;
    if (s->is_server) {
        unsigned char h[ALKT__HELLO_MAX], mac[32];
        size_t hn;
        uint64_t fresh = 0;
        int resume;
        /* Nothing is said, kept or computed for a HELLO that does not
         * prove the secret, fresh: the connection just ends. */
        rc = alkt__hello_check(&s->key, p, n, s->fresh_floor, &fresh);
        if (rc != ALKT_OK) return rc;
        s->hs_proven = 1;
        s->fresh_floor = fresh;
        alkt__hs_hello_hash(s);
        n -= ALKT__HELLO_MAC;
        if ((rc = alkt__parse_hello(s, p, n)) != ALKT_OK) return rc;
        peer_has = alkt__get64(p + 56);
        resume = p[7] & 1;
        if (resume) {
            if (!alkt__resume_ok(s, p, fresh))
                return alkt__refuse(s, ALKT_ERR_RESUME_REFUSED);
            if (!s->established_once) {
                /* the proof stands for the client's lost AUTH: the first
                 * handshake is complete, and this one resumes it */
                s->state = ALKT__S_ACTIVE;
                s->established_once = 1;
                s->hs_half = 0;
                s->session_events |= ALKT__SEV_ESTABLISHED;
                s->deadline_resume = s->now + s->resume_ns;
            }
        } else if (s->established_once) {
            return ALKT_ERR_STATE;   /* a new session needs a new object */
        }
        s->resuming = resume;
        s->rx_peer_has = peer_has;
        alkt__take_hello(s, p);
        if (!resume) {
            /* the session id: from both nonces */
            alkt_sha256_ctx id;
            unsigned char d[32];
            alkt_sha256_init(&id);
            alkt_sha256_update(&id, "alkt1 session id", 16);
            alkt_sha256_update(&id, s->nonce, ALKT_NONCE_SIZE);
            alkt_sha256_update(&id, s->peer_nonce, ALKT_NONCE_SIZE);
            alkt_sha256_final(&id, d);
            memcpy(s->session_id, d, ALKT_SESSION_ID_SIZE);
        }
        hn = alkt__hello(s, h, resume, NULL);
        alkt__ctl_frame(s, ALKT_FRAME_HELLO, h, hn);
        alkt_sha256_update(&s->hs_hash, s->ctl + s->ctl_len - ALKT_FRAME_HEADER - hn,
                           ALKT_FRAME_HEADER + hn);
        alkt_sha256_final(&s->hs_hash, s->transcript);
        if ((rc = alkt__derive_keys(s)) != ALKT_OK) return rc;
        alkt__auth_mac(s, "alkt1 server", mac);
        alkt__ctl_frame(s, ALKT_FRAME_AUTH, mac, 32);
        alkt__seal_from_here(s);
        s->hs_step = 1;
        if (!resume) {
            /* the token is known from here on: a client that got our AUTH
             * counts the session as established, and if its AUTH is lost
             * with the connection it resumes - its proof completes this
             * handshake then */
            alkt__token_from(s);
            s->hs_half = 1;
        }
        return ALKT_OK;
    }
    /* Client: nothing of the server's HELLO is trusted before its AUTH -
     * a failure here ends this connection, and what a resume makes of the
     * answer is judged once the AUTH proved it (alkt__on_auth). */
    if ((rc = alkt__parse_hello(s, p, n)) != ALKT_OK) return rc;
    peer_has = alkt__get64(p + 56);
    s->resume_mismatch = 0;
    if (s->resuming) {
        s->resume_mismatch = !(p[7] & 1) ||
                             memcmp(p + 40, s->session_id, ALKT_SESSION_ID_SIZE) != 0 ||
                             peer_has < s->seq_head || peer_has > s->seq_sent;
    } else {
        if (p[7] & 1) return ALKT_ERR_PROTOCOL;
        memcpy(s->session_id, p + 40, ALKT_SESSION_ID_SIZE);
    }
    s->rx_peer_has = peer_has;
    alkt__take_hello(s, p);
    alkt_sha256_final(&s->hs_hash, s->transcript);
    if ((rc = alkt__derive_keys(s)) != ALKT_OK) return rc;
    s->hs_step = 1;
    return ALKT_OK;
}

static int alkt__on_auth(alkt_session *s, const unsigned char *p, size_t n)
{
    unsigned char want[32];
    if (n != 32 || s->hs_step != 1) return ALKT_ERR_PROTOCOL;
    alkt__auth_mac(s, s->is_server ? "alkt1 client" : "alkt1 server", want);
    if (!alkt_ct_equal(want, p, 32)) return ALKT_ERR_AUTH;
    if (s->resume_mismatch) {
        /* the server proved this answer, and it does not resume us: the
         * session is over (an authenticated refusal) */
        alkt__close_session(s, ALKT_ERR_RESUME_REFUSED);
        return ALKT_ERR_RESUME_REFUSED;
    }
    if (!s->is_server) {
        alkt__auth_mac(s, "alkt1 client", want);
        alkt__ctl_frame(s, ALKT_FRAME_AUTH, want, 32);
    }
    /* the peer proved the keys: what it sends next is records */
    s->rx_sealed = !s->plaintext;
    if (s->resuming && alkt__rewind(s, s->rx_peer_has) != ALKT_OK)
        return ALKT_ERR_RESUME_REFUSED;
    alkt__up(s);
    return ALKT_OK;
}

/* Client: the server's REFUSE. Forged or not bound to our HELLO, it ends
 * this connection only; proven, a refused or expired resume ends the
 * session, anything else (ALKT_ERR_BUSY) this connection. */
static int alkt__on_refuse(alkt_session *s, const unsigned char *p, size_t n)
{
    unsigned char f[ALKT_FRAME_HEADER + ALKT__REFUSE_LEN];
    int code, ok;
    if (s->is_server || n != ALKT__REFUSE_LEN || s->hs_step != 0)
        return ALKT_ERR_PROTOCOL;
    code = -(int)alkt__get16(p);
    if (code >= 0 || code < ALKT__RESULT_LOWEST) return ALKT_ERR_PROTOCOL;
    alkt__refuse_frame(&s->key, s->hello_hash, code, f);
    ok = alkt_ct_equal(f + ALKT_FRAME_HEADER + 2, p + 2, 32);
    if (!ok) return ALKT_ERR_AUTH;
    if (code == ALKT_ERR_RESUME_REFUSED || code == ALKT_ERR_RESUME_EXPIRED)
        alkt__close_session(s, code);
    alkt__peer_goaway(s, -code);
    s->conn_code = code;
    return code;
}

/* ---- input ---- */
/* An open refused without a record: the OPEN_ERR goes to the log as soon
 * as there is room. A correct peer has at most our max_channels opens
 * waiting for an answer (it counts them against the max_channels of our
 * HELLO), so the queue of that size fills only under a broken peer. */
static int alkt__refuse_later(alkt_session *s, uint32_t id, uint32_t code)
{
    if (s->n_refusals >= s->max_channels) return ALKT_ERR_CHANNELS_FULL;
    s->refusals[2 * s->n_refusals] = id;
    s->refusals[2 * s->n_refusals + 1] = code;
    s->n_refusals++;
    return ALKT_OK;
}

static int alkt__on_frame(alkt_session *s, unsigned type, uint32_t id,
                          const unsigned char *p, size_t n)
{
    alkt__chan *c;
    if (s->conn == ALKT__C_HANDSHAKE) {
        if (type == ALKT_FRAME_HELLO) return alkt__on_hello(s, p, n);
        if (type == ALKT_FRAME_AUTH) return alkt__on_auth(s, p, n);
        if (type == ALKT_FRAME_REFUSE) return alkt__on_refuse(s, p, n);
        if (type == ALKT_FRAME_GOAWAY) {
            /* before the peer proved anything: this connection ends, and
             * the session takes nothing from what it says */
            int code;
            if (n != 2) return ALKT_ERR_PROTOCOL;
            code = -(int)alkt__get16(p);
            alkt__peer_goaway(s, (int)alkt__get16(p));
            if (code < ALKT__RESULT_LOWEST || code >= 0) code = ALKT_ERR_GOAWAY;
            s->conn_code = code;
            return code;
        }
        return ALKT_ERR_PROTOCOL;
    }
    switch (type) {
    case ALKT_FRAME_ACK:
        if (n != 8) return ALKT_ERR_PROTOCOL;
        return alkt__log_release(s, alkt__get64(p));
    case ALKT_FRAME_PING:
        if (n != 8) return ALKT_ERR_PROTOCOL;
        memcpy(s->pong_data, p, 8);
        s->pong_wanted = 1;
        s->ack_wanted = 1;
        return ALKT_OK;
    case ALKT_FRAME_PONG:
        return n == 8 ? ALKT_OK : ALKT_ERR_PROTOCOL;
    case ALKT_FRAME_REKEY:
        if (n != 0 || id != 0 || !s->rx_sealed) return ALKT_ERR_PROTOCOL;
        alkt__next_key(s->rx_key);
        s->rx_ctr = 0;
        s->rekeys++;
        return ALKT_OK;
    case ALKT_FRAME_GOAWAY:
        if (n != 2) return ALKT_ERR_PROTOCOL;
        alkt__peer_goaway(s, (int)alkt__get16(p));
        s->conn_code = ALKT_ERR_GOAWAY;
        alkt__close_session(s, ALKT_ERR_GOAWAY);
        return ALKT_ERR_GOAWAY;
    case ALKT_FRAME_HELLO:
    case ALKT_FRAME_AUTH:
    case ALKT_FRAME_REFUSE:
        return ALKT_ERR_PROTOCOL;
    default:
        break;
    }
    if (!alkt__sequenced(type)) return ALKT_ERR_PROTOCOL;
    if (id == 0) return ALKT_ERR_PROTOCOL;
    c = alkt__find(s, id);
    if (type == ALKT_FRAME_OPEN) {
        alkt_error err;
        if (alkt__local_id(s, id)) return ALKT_ERR_PROTOCOL;
        /* a live or used id: refused, and the live channel untouched */
        if (c || id <= s->peer_high)
            return alkt__refuse_later(s, id, ALKT__CODE_DUPLICATE);
        s->peer_high = id;
        c = alkt__slot(s);
        if (!c) c = alkt__retire(s);
        if (!c) return alkt__refuse_later(s, id, ALKT__CODE_FULL);
        memset(c, 0, offsetof(alkt__chan, ring));
        if (alkt_open_params_decode((const char *)p, n, NULL, &c->params,
                                    &err) != ALKT_OK) {
            memset(c, 0, offsetof(alkt__chan, ring));
            return alkt__refuse_later(s, id, ALKT__CODE_BAD_PARAMS);
        }
        c->id = id;
        c->state = ALKT_CHANNEL_INCOMING;
        c->events = ALKT__EV_OPEN_REQUEST;
        return ALKT_OK;
    }
    if (!c) {
        /* late frames for a channel that is gone: nothing to do - but a
         * reset of an open we have still to refuse: no refusal needed (the
         * peer forgets the channel now, and may open another) */
        uint32_t i;
        if (!alkt__closed_id(s, id)) return ALKT_ERR_PROTOCOL;
        if (type == ALKT_FRAME_RESET)
            for (i = 0; i < s->n_refusals; i++)
                if (s->refusals[2 * i] == id) {
                    s->n_refusals--;
                    memmove(s->refusals + 2 * i, s->refusals + 2 * i + 2,
                            (s->n_refusals - i) * 8u);
                    break;
                }
        return ALKT_OK;
    }
    switch (type) {
    case ALKT_FRAME_OPEN_OK:
        if (c->state != ALKT_CHANNEL_OPENING) return ALKT_OK;
        if (n) (void)alkt_listen_reply_project((const char *)p, n, &c->reply);
        c->state = ALKT_CHANNEL_OPEN;
        c->events |= ALKT__EV_OPENED;
        return ALKT_OK;
    case ALKT_FRAME_OPEN_ERR: {
        size_t k, m;
        /* (for a channel past OPENING - a duplicate answered - nothing) */
        if (n < 2 || n > 2 + ALKT_REASON_MAX) return ALKT_ERR_PROTOCOL;
        if (c->state != ALKT_CHANNEL_OPENING) return ALKT_OK;
        alkt__chan_end(s, c, (int)alkt__get16(p));
        /* the reason, kept printable */
        for (k = 2, m = 0; k < n; k++)
            c->reason[m++] = p[k] >= 0x20 && p[k] < 0x7f ? (char)p[k] : '?';
        c->reason[m] = 0;
        c->events |= ALKT__EV_OPEN_FAILED;
        alkt__maybe_done(c);
        return ALKT_OK;
    }
    case ALKT_FRAME_DATA:
        /* (counted into the ring as it arrived) */
        return ALKT_OK;
    case ALKT_FRAME_EOF:
        if (n) return ALKT_ERR_PROTOCOL;
        if (c->state == ALKT_CHANNEL_FINISHED) return ALKT_OK;
        if (c->state != ALKT_CHANNEL_OPEN || (c->flags & ALKT__CF_PEER_EOF))
            return ALKT_ERR_PROTOCOL;
        c->flags |= ALKT__CF_PEER_EOF;
        /* credit not used will not be: back to the session */
        s->budget_used -= c->rcv_granted;
        c->rcv_granted = 0;
        c->events |= ALKT__EV_READABLE;
        alkt__maybe_done(c);
        return ALKT_OK;
    case ALKT_FRAME_RESET:
        if (n != 2) return ALKT_ERR_PROTOCOL;
        if (c->state == ALKT_CHANNEL_FINISHED) return ALKT_OK;
        c->flags |= ALKT__CF_RESET;
        c->flags &= (uint16_t)~(ALKT__CF_WANT_OK | ALKT__CF_WANT_ERR);
        alkt__chan_end(s, c, (int)alkt__get16(p));
        c->events |= ALKT__EV_RESET;
        alkt__maybe_done(c);
        return ALKT_OK;
    case ALKT_FRAME_WINDOW: {
        uint32_t inc;
        if (n != 4) return ALKT_ERR_PROTOCOL;
        if (c->state == ALKT_CHANNEL_FINISHED) return ALKT_OK;
        inc = alkt__get32(p);
        if ((c->state != ALKT_CHANNEL_OPEN && c->state != ALKT_CHANNEL_INCOMING) ||
            c->snd_credit + inc > ALKT__WIRE_MAX)
            return ALKT_ERR_PROTOCOL;
        if (c->flags & ALKT__CF_WRITE_CLOSED) return ALKT_OK;
        if (!c->snd_credit && inc && c->state == ALKT_CHANNEL_OPEN)
            c->events |= ALKT__EV_WRITABLE;
        c->snd_credit += inc;
        return ALKT_OK;
    }
    default:
        return ALKT_ERR_PROTOCOL;
    }
}

/* A frame header is in: checks, and where its payload goes. */
static int alkt__on_header(alkt_session *s)
{
    unsigned type = s->in_hdr[0];
    size_t n = alkt__get16(s->in_hdr + 2);
    uint32_t id = alkt__get32(s->in_hdr + 4);
    s->in_type = type;
    s->in_chan = id;
    s->in_len = n;
    s->in_got = 0;
    s->in_sink = NULL;
    if (s->in_hdr[1] != 0) return ALKT_ERR_PROTOCOL;
    if (s->conn == ALKT__C_HANDSHAKE) {
        /* (a HELLO fits the frame buffer whatever max_frame is) */
        if (type != ALKT_FRAME_HELLO && type != ALKT_FRAME_AUTH &&
            type != ALKT_FRAME_REFUSE && type != ALKT_FRAME_GOAWAY)
            return ALKT_ERR_PROTOCOL;
        if (id != 0) return ALKT_ERR_PROTOCOL;
        if (n > ALKT__HELLO_MAX) return ALKT_ERR_FRAME_TOO_LARGE;
        if (type == ALKT_FRAME_HELLO)
            alkt_sha256_update(&s->hs_hash, s->in_hdr, ALKT_FRAME_HEADER);
        return ALKT_OK;
    }
    if (n > s->max_frame) return ALKT_ERR_FRAME_TOO_LARGE;
    if (type == ALKT_FRAME_DATA) {
        alkt__chan *c = id ? alkt__find(s, id) : NULL;
        if (!c) {
            if (!id || !alkt__closed_id(s, id)) return ALKT_ERR_PROTOCOL;
            return ALKT_OK;   /* late data for a gone channel: dropped */
        }
        if (c->state == ALKT_CHANNEL_FINISHED) return ALKT_OK;
        if (c->state != ALKT_CHANNEL_OPEN || (c->flags & ALKT__CF_PEER_EOF))
            return ALKT_ERR_PROTOCOL;
        if (n > c->rcv_granted) return ALKT_ERR_FLOW_CONTROL;
        s->in_sink = c;
    }
    return ALKT_OK;
}

/* The frame in hand is whole (s->in_got == s->in_len): a channel's data
 * readable, the frame acted on, counted when sequenced. */
static int alkt__frame_end(alkt_session *s)
{
    unsigned type = s->in_type;
    int rc;
    s->in_hdr_len = 0;
    if (s->in_sink) {
        alkt__chan *c = s->in_sink;
        c->rcv_partial = 0;
        c->rcv_len += (uint32_t)s->in_len;
        c->rcv_granted -= (uint32_t)s->in_len;
        c->received += s->in_len;
        if (s->in_len) c->events |= ALKT__EV_READABLE;
        s->in_sink = NULL;
    }
    rc = alkt__on_frame(s, type, s->in_chan, s->in_buf, s->in_len);
    if (rc == ALKT_OK && alkt__sequenced(type)) {
        s->seq_received++;
        s->ack_wanted = 1;
    }
    return rc;
}

/* Frames from bytes: the connection's own in clear, or one record's
 * plaintext. In clear, it stops after the frame that turns records on
 * (the peer's AUTH); *used says how far it got. */
static int alkt__input_frames(alkt_session *s, const unsigned char *d,
                              size_t len, size_t *used, int clear)
{
    const size_t len0 = len;
    int rc = ALKT_OK;
    while (len && (s->conn == ALKT__C_HANDSHAKE || s->conn == ALKT__C_UP) &&
           !(clear && s->rx_sealed)) {
        if (s->in_hdr_len < ALKT_FRAME_HEADER) {
            size_t k = ALKT_FRAME_HEADER - s->in_hdr_len;
            if (k > len) k = len;
            memcpy(s->in_hdr + s->in_hdr_len, d, k);
            s->in_hdr_len += k;
            d += k;
            len -= k;
            if (s->in_hdr_len < ALKT_FRAME_HEADER) break;
            rc = alkt__on_header(s);
            if (rc != ALKT_OK) break;
        } else {
            size_t k = s->in_len - s->in_got;
            if (k > len) k = len;
            if (s->in_sink) {
                /* straight into the ring, readable once the frame is whole
                 * (a frame cut by a drop comes again after the resume) */
                alkt__chan *c = s->in_sink;
                size_t at = (size_t)((c->rcv_head + c->rcv_len + c->rcv_partial) %
                                     s->channel_window);
                size_t first = s->channel_window - at < k ? s->channel_window - at : k;
                memcpy(c->ring + at, d, first);
                memcpy(c->ring, d + first, k - first);
                c->rcv_partial += (uint32_t)k;
            } else if (s->in_type != ALKT_FRAME_DATA) {
                memcpy(s->in_buf + s->in_got, d, k);
            }
            if (s->conn == ALKT__C_HANDSHAKE && s->in_type == ALKT_FRAME_HELLO)
                alkt_sha256_update(&s->hs_hash, d, k);
            s->in_got += k;
            d += k;
            len -= k;
        }
        if (s->in_got == s->in_len) {
            rc = alkt__frame_end(s);
            if (rc != ALKT_OK) break;
        }
    }
    *used = len0 - len;
    return rc;
}

#ifdef ALKT__RECORDS_IN_PLACE
/* One record's DATA frame for a channel, its payload decrypted straight
 * from the record into the ring (the tag already checked): byte j of the
 * payload is byte 8 + j of the record's plaintext. */
static int alkt__record_to_ring(alkt_session *s, const unsigned char *sealed,
                                const unsigned char nonce[ALKT_AEAD_NONCE])
{
    alkt__chan *c = s->in_sink;
    size_t n = s->in_len;
    size_t at = (size_t)((c->rcv_head + c->rcv_len + c->rcv_partial) % s->channel_window);
    size_t first = s->channel_window - at < n ? s->channel_window - at : n;
    if (at >= ALKT_FRAME_HEADER) {
        /* the first run with the header before it, so the key stream's
         * blocks line up (whole SIMD blocks): the 8 ring bytes it lands
         * on are put back */
        unsigned char keep[ALKT_FRAME_HEADER];
        memcpy(keep, c->ring + at - ALKT_FRAME_HEADER, sizeof keep);
        alkt_chacha20(c->ring + at - ALKT_FRAME_HEADER, sealed, ALKT_FRAME_HEADER + first,
                      s->rx_key, nonce, 1);
        memcpy(c->ring + at - ALKT_FRAME_HEADER, keep, sizeof keep);
    } else {
        alkt__chacha20_from(c->ring + at, sealed + ALKT_FRAME_HEADER, first, s->rx_key,
                            nonce, ALKT_FRAME_HEADER);
    }
    alkt__chacha20_from(c->ring, sealed + ALKT_FRAME_HEADER + first, n - first,
                        s->rx_key, nonce, ALKT_FRAME_HEADER + first);
    c->rcv_partial += (uint32_t)n;
    s->in_got = n;
    return alkt__frame_end(s);
}

/* A whole record at d (its length checked) read where it lies: the tag
 * checked over the sealed bytes, then the frame's header decrypted; a
 * DATA frame for a channel is decrypted straight into its ring, any
 * other into rec_in and read as frames. One frame exactly, as in
 * alkt__input_records. */
static int alkt__input_record_whole(alkt_session *s, const unsigned char *d,
                                    size_t flen)
{
    unsigned char nonce[ALKT_AEAD_NONCE], hdr[ALKT_FRAME_HEADER];
    size_t got;
    int rc;
    alkt__rec_nonce(nonce, s->rx_ctr);
    if (!alkt__aead_check(s->rx_key, nonce, d, 2, d + 2, flen, d + 2 + flen))
        return ALKT_ERR_DECRYPT;
    s->rx_ctr++;
    alkt__chacha20_from(hdr, d + 2, sizeof hdr, s->rx_key, nonce, 0);
    rc = alkt__input_frames(s, hdr, sizeof hdr, &got, 0);   /* (all 8 taken) */
    alkt__sha256_wipe(hdr, sizeof hdr);
    if (rc == ALKT_OK && flen > ALKT_FRAME_HEADER) {
        if (s->in_sink && s->in_hdr_len == ALKT_FRAME_HEADER &&
            s->in_len == flen - ALKT_FRAME_HEADER) {
            rc = alkt__record_to_ring(s, d + 2, nonce);
        } else {
            alkt_chacha20(s->rec_in + 2, d + 2, flen, s->rx_key, nonce, 1);
            rc = alkt__input_frames(s, s->rec_in + 2 + ALKT_FRAME_HEADER,
                                    flen - ALKT_FRAME_HEADER, &got, 0);
            if (rc == ALKT_OK && got != flen - ALKT_FRAME_HEADER) rc = ALKT_ERR_PROTOCOL;
        }
    }
    if (rc == ALKT_OK && s->in_hdr_len != 0)
        rc = ALKT_ERR_PROTOCOL;   /* not exactly one whole frame */
    return rc;
}
#endif

/* Records from bytes: each is opened whole (nothing of it is used before
 * its tag is checked) and must hold exactly one frame. */
static int alkt__input_records(alkt_session *s, const unsigned char *d,
                               size_t len, size_t *used)
{
    const size_t len0 = len;
    int rc = ALKT_OK;
    while (len && s->conn == ALKT__C_UP) {
        size_t need = 2, k, flen = 0, got;
        unsigned char nonce[ALKT_AEAD_NONCE];
#ifdef ALKT__RECORDS_IN_PLACE
        if (s->rec_in_len == 0 && len >= ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER &&
            len >= ALKT__REC_OVERHEAD + (flen = alkt__get16(d))) {
            /* a whole record where it lies: read without a copy */
            if (flen < ALKT_FRAME_HEADER || flen > ALKT_FRAME_HEADER + s->max_frame) {
                rc = ALKT_ERR_DECRYPT;
                break;
            }
            rc = alkt__input_record_whole(s, d, flen);
            if (rc != ALKT_OK) break;
            d += ALKT__REC_OVERHEAD + flen;
            len -= ALKT__REC_OVERHEAD + flen;
            continue;
        }
#endif
        if (s->rec_in_len >= 2) {
            flen = alkt__get16(s->rec_in);
            need = ALKT__REC_OVERHEAD + flen;
        }
        k = need - s->rec_in_len < len ? need - s->rec_in_len : len;
        memcpy(s->rec_in + s->rec_in_len, d, k);
        s->rec_in_len += k;
        d += k;
        len -= k;
        if (s->rec_in_len == 2) {
            /* the length is the AAD: a changed one fails the tag later,
             * and one no record can have fails now */
            flen = alkt__get16(s->rec_in);
            if (flen < ALKT_FRAME_HEADER || flen > ALKT_FRAME_HEADER + s->max_frame) {
                rc = ALKT_ERR_DECRYPT;
                break;
            }
            continue;
        }
        if (s->rec_in_len < need) break;
        s->rec_in_len = 0;
        alkt__rec_nonce(nonce, s->rx_ctr);
        if (alkt_aead_open(s->rec_in + 2, s->rx_key, nonce, s->rec_in, 2,
                           s->rec_in + 2, flen + ALKT_AEAD_TAG) != ALKT_OK) {
            rc = ALKT_ERR_DECRYPT;
            break;
        }
        s->rx_ctr++;
        rc = alkt__input_frames(s, s->rec_in + 2, flen, &got, 0);
        if (rc != ALKT_OK) break;
        if (got != flen || s->in_hdr_len != 0) {
            rc = ALKT_ERR_PROTOCOL;   /* not exactly one whole frame */
            break;
        }
    }
    *used = len0 - len;
    return rc;
}

static void alkt__tx_end(alkt_session *s);

/* A handshake that failed (bad input, or too slow): this connection only.
 * A server says nothing to a client whose HELLO proved nothing, nor after
 * its own AUTH went out (the bytes that failed may be anyone's on the
 * path, and a GOAWAY sealed then would end the session at a client that
 * checked that AUTH): the connection just ends. A proven HELLO it cannot
 * take (version, cipher) gets a GOAWAY in clear, which ends only the
 * connection too; a client says why in clear. */
static void alkt__hs_failed(alkt_session *s, int rc)
{
    if (s->is_server && (!s->hs_proven || s->hs_step != 0)) alkt__conn_over(s, rc);
    else alkt__goaway(s, rc);
}

ALKTDEF int alkt_session_handle_input(alkt_session *s, const void *data,
                                      size_t len, uint64_t now)
{
    const unsigned char *d = (const unsigned char *)data;
    int rc = ALKT_OK;
    if (!s || (!data && len)) return ALKT_ERR_ARG;
    s->now = now;
    if (s->conn != ALKT__C_HANDSHAKE && s->conn != ALKT__C_UP) return ALKT_OK;
    if (len) {
        s->last_rx = now;
        s->hs_heard = 1;
    }
    while (len && rc == ALKT_OK &&
           (s->conn == ALKT__C_HANDSHAKE || s->conn == ALKT__C_UP)) {
        size_t used;
        rc = s->rx_sealed ? alkt__input_records(s, d, len, &used)
                          : alkt__input_frames(s, d, len, &used, 1);
        d += used;
        len -= used;
    }
    if (rc != ALKT_OK) {
        if (s->conn == ALKT__C_HANDSHAKE) {
            alkt__hs_failed(s, rc);
        } else if (s->conn == ALKT__C_UP && rc == ALKT_ERR_DECRYPT) {
            /* a record no key of ours sealed came from the path, not the
             * peer: this connection only, the session resumes */
            alkt__conn_over(s, rc);
        } else if (s->conn == ALKT__C_UP) {
            alkt__violation(s, rc);    /* the peer, proven, broke a rule */
        }
        alkt__tx_end(s);   /* a peer's GOAWAY or REFUSE: over at once */
        return rc;
    }
    alkt__pump(s);
    return ALKT_OK;
}

/* ---- output ---- */
static void alkt__build_ctl(alkt_session *s)
{
    unsigned char b[8 + 2 + ALKT_REASON_MAX];
    s->ctl_len = s->ctl_off = 0;
    if (s->goaway_wanted) {
        int code = s->goaway_code;
        /* library codes go as their negation, an application's as is */
        alkt__put16(b, (uint32_t)(code < 0 ? -code : code));
        alkt__ctl_frame(s, ALKT_FRAME_GOAWAY, b, 2);
        s->goaway_wanted = 0;
        s->goaway_sent = 1;
        return;
    }
    if (s->conn != ALKT__C_UP) return;
    if (s->pong_wanted) {
        alkt__ctl_frame(s, ALKT_FRAME_PONG, s->pong_data, 8);
        s->pong_wanted = 0;
    }
    if (s->ack_wanted) {
        alkt__put64(b, s->seq_received);
        alkt__ctl_frame(s, ALKT_FRAME_ACK, b, 8);
        s->ack_wanted = 0;
    }
    if (s->ping_wanted) {
        alkt__put64(b, ++s->ping_counter);
        alkt__ctl_frame(s, ALKT_FRAME_PING, b, 8);
        s->ping_wanted = 0;
    }
}

static int alkt__output_due(const alkt_session *s)
{
    if (s->ctl_off < s->ctl_len || s->goaway_wanted) return 1;
    if (s->rec_off < s->rec_len) return 1;
    if (s->conn == ALKT__C_DRAINING) return 1;   /* its end is due */
    if (s->conn != ALKT__C_UP) return 0;
    return s->pong_wanted || s->ack_wanted || s->ping_wanted ||
           s->log_sent < s->log_tail;
}

/* Encrypted: the records due, sealed in batches into rec_out - whole
 * frames, connection frames first as in clear; a frame counts as sent
 * once it is sealed (a drop rewinds to what the peer says it has). */
static size_t alkt__tx_next_sealed(alkt_session *s, const unsigned char **p)
{
    if (s->ctl_off < s->ctl_clear) {   /* the handshake's last frames */
        *p = s->ctl + s->ctl_off;
        s->tx_from_log = 0;
        return s->ctl_clear - s->ctl_off;
    }
    if (s->rec_off == s->rec_len) {
        size_t max_rec = ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER + s->max_frame;
        int rc = ALKT_OK;
        s->rec_off = s->rec_len = 0;
        /* room for the largest record and a REKEY record after it */
        while (rc == ALKT_OK &&
               s->rec_cap - s->rec_len >= max_rec + ALKT__REC_OVERHEAD +
                                              ALKT_FRAME_HEADER) {
            if (s->ctl_off == s->ctl_len) {
                if (s->conn == ALKT__C_DRAINING && s->goaway_sent) break;
                s->ctl_clear = 0;
                alkt__build_ctl(s);
            }
            if (s->ctl_off < s->ctl_len) {
                size_t n = ALKT_FRAME_HEADER + alkt__get16(s->ctl + s->ctl_off + 2);
                rc = alkt__seal_frame(s, s->ctl + s->ctl_off, n, NULL, 0);
                s->ctl_off += n;
            } else if (s->conn == ALKT__C_UP && s->log_sent < s->log_tail) {
                size_t at = alkt__log_at(s, s->log_sent);
                size_t n = alkt__log_frame_len(s, s->log_sent);
                size_t first = s->log_size - at < n ? s->log_size - at : n;
                rc = alkt__seal_frame(s, s->log + at, first, s->log, n - first);
                s->log_sent += n;
                s->seq_sent++;
            } else {
                break;
            }
        }
        if (rc != ALKT_OK) {
            /* (out of nonces: cannot happen while REKEY works; the session
             * ends rather than reuse one) */
            s->rec_len = 0;
            alkt__close_session(s, rc);
            s->conn = ALKT__C_DRAINING;
            s->goaway_sent = 1;
            s->ctl_off = s->ctl_len = 0;
            s->conn_code = rc;
        }
    }
    if (s->rec_off < s->rec_len) {
        *p = s->rec_out + s->rec_off;
        s->tx_from_log = 2;
        return s->rec_len - s->rec_off;
    }
    return 0;
}

/* The next run of bytes due, in place: a connection frame (or its rest)
 * or one log frame (or its rest, up to the ring's end). 0: nothing due. */
static size_t alkt__tx_next(alkt_session *s, const unsigned char **p)
{
    size_t at, k;
    if (s->tx_sealed) return alkt__tx_next_sealed(s, p);
    if (s->tx_frame_left == 0) {
        /* a frame boundary: connection frames first */
        if (s->ctl_off == s->ctl_len) {
            if (s->conn == ALKT__C_DRAINING && s->goaway_sent) return 0;
            alkt__build_ctl(s);
        }
        if (s->ctl_off < s->ctl_len) {
            *p = s->ctl + s->ctl_off;
            s->tx_from_log = 0;
            return s->ctl_len - s->ctl_off;
        }
        if (s->conn != ALKT__C_UP || s->log_sent == s->log_tail) return 0;
        s->tx_frame_left = alkt__log_frame_len(s, s->log_sent);
    }
    at = alkt__log_at(s, s->log_sent);
    k = s->tx_frame_left;
    {
        /* the whole frames queued behind it go in the same run, up to the
         * ring's end (one write per run, not per frame: the syscalls are
         * what a bulk transfer pays for); connection frames wait at most
         * one run */
        uint64_t pos = s->log_sent + s->tx_frame_left;
        while (k < s->log_size - at && pos < s->log_tail && k < ALKT__TX_RUN_MAX) {
            size_t f = alkt__log_frame_len(s, pos);
            k += f;
            pos += f;
        }
    }
    if (k > s->log_size - at) k = s->log_size - at;
    *p = s->log + at;
    s->tx_from_log = 1;
    return k;
}

/* n bytes of the run alkt__tx_next offered are on their way. */
static void alkt__tx_advance(alkt_session *s, size_t n)
{
    if (s->tx_from_log == 2) {
        s->rec_off += n;
    } else if (s->tx_from_log) {
        while (n) {   /* frame by frame: seq_sent counts whole frames */
            size_t m;
            if (s->tx_frame_left == 0)
                s->tx_frame_left = alkt__log_frame_len(s, s->log_sent);
            m = n < s->tx_frame_left ? n : s->tx_frame_left;
            s->log_sent += m;
            s->tx_frame_left -= m;
            n -= m;
            if (s->tx_frame_left == 0) s->seq_sent++;
        }
    } else {
        s->ctl_off += n;
    }
    if (n) s->last_tx = s->now;
}

/* After output: a connection whose GOAWAY is out is over. */
static void alkt__tx_end(alkt_session *s)
{
    if (s->conn == ALKT__C_DRAINING && s->goaway_sent &&
        s->ctl_off == s->ctl_len && s->rec_off == s->rec_len)
        alkt__conn_over(s, s->conn_code);
}

ALKTDEF size_t alkt_session_poll_transmit(alkt_session *s, void *buf,
                                          size_t cap)
{
    unsigned char *o = (unsigned char *)buf;
    size_t n = 0;
    if (!s || (!buf && cap)) return 0;
    alkt__pump(s);
    while (n < cap) {
        const unsigned char *p;
        size_t k = alkt__tx_next(s, &p);
        if (k == 0) break;
        if (k > cap - n) k = cap - n;
        memcpy(o + n, p, k);
        alkt__tx_advance(s, k);
        n += k;
    }
    s->tx_peeked = 0;
    alkt__tx_end(s);
    return n;
}

ALKTDEF size_t alkt_session_transmit_peek(alkt_session *s, const void **data)
{
    const unsigned char *p = NULL;
    size_t k;
    if (data) *data = NULL;
    if (!s || !data) return 0;
    alkt__pump(s);
    k = alkt__tx_next(s, &p);
    s->tx_peeked = k;
    if (k == 0) {
        alkt__tx_end(s);
        return 0;
    }
    *data = p;
    return k;
}

ALKTDEF int alkt_session_transmit_done(alkt_session *s, size_t n)
{
    if (!s || n > s->tx_peeked) return ALKT_ERR_ARG;
    alkt__tx_advance(s, n);
    s->tx_peeked = 0;
    alkt__tx_end(s);
    return ALKT_OK;
}

/* ---- time ---- */
ALKTDEF uint64_t alkt_session_poll_timeout(const alkt_session *s)
{
    uint64_t t = UINT64_MAX;
    if (!s) return t;
    if (alkt__output_due(s)) return s->now;
    if (s->conn == ALKT__C_HANDSHAKE && s->deadline_hs < t) t = s->deadline_hs;
    if (s->conn == ALKT__C_UP) {
        if (s->last_rx + s->idle_ns < t) t = s->last_rx + s->idle_ns;
        if (s->last_tx + s->ping_ns < t) t = s->last_tx + s->ping_ns;
    }
    /* (a resume attempt does not extend the window) */
    if ((s->conn == ALKT__C_NONE ||
         (s->conn == ALKT__C_HANDSHAKE && s->resuming)) &&
        s->state == ALKT__S_ACTIVE && s->deadline_resume < t)
        t = s->deadline_resume;
    return t;
}

ALKTDEF void alkt_session_handle_timeout(alkt_session *s, uint64_t now)
{
    if (!s) return;
    if (now > s->now) s->now = now;
    now = s->now;
    if (s->conn == ALKT__C_HANDSHAKE && now >= s->deadline_hs)
        alkt__hs_failed(s, ALKT_ERR_HANDSHAKE_TIMEOUT);
    if (s->conn == ALKT__C_UP) {
        if (now >= s->last_rx + s->idle_ns) {
            /* silent for too long: this connection is dead */
            alkt__conn_over(s, ALKT_ERR_IDLE_TIMEOUT);
        } else if (now >= s->last_tx + s->ping_ns) {
            s->ping_wanted = 1;
            s->ack_wanted = 1;
        }
    }
    if ((s->conn == ALKT__C_NONE ||
         (s->conn == ALKT__C_HANDSHAKE && s->resuming)) &&
        s->state == ALKT__S_ACTIVE && now >= s->deadline_resume) {
        alkt__goaway(s, ALKT_ERR_RESUME_EXPIRED);
        alkt__close_session(s, ALKT_ERR_RESUME_EXPIRED);
    }
}

ALKTDEF void alkt_session_handle_disconnected(alkt_session *s, uint64_t now)
{
    if (!s) return;
    s->now = now;
    if (s->conn == ALKT__C_NONE) return;
    alkt__conn_over(s, ALKT_ERR_NOT_CONNECTED);
}

/* ---- events ---- */
ALKTDEF int alkt_session_poll_event(alkt_session *s, alkt_event *ev)
{
    static const struct { unsigned bit; alkt_event_type type; } order[] = {
        {ALKT__EV_OPEN_REQUEST, ALKT_EV_OPEN_REQUEST},
        {ALKT__EV_OPENED, ALKT_EV_OPENED},
        {ALKT__EV_OPEN_FAILED, ALKT_EV_OPEN_FAILED},
        {ALKT__EV_READABLE, ALKT_EV_READABLE},
        {ALKT__EV_WRITABLE, ALKT_EV_WRITABLE},
        {ALKT__EV_RESET, ALKT_EV_RESET},
    };
    uint32_t i, k;
    if (!s || !ev) return 0;
    memset(ev, 0, sizeof *ev);
    if (s->session_events & (ALKT__SEV_ESTABLISHED | ALKT__SEV_RESUMED)) {
        ev->type = (s->session_events & ALKT__SEV_ESTABLISHED)
                       ? ALKT_EV_ESTABLISHED : ALKT_EV_RESUMED;
        s->session_events &= ~(ALKT__SEV_ESTABLISHED | ALKT__SEV_RESUMED);
        return 1;
    }
    if (s->n_retired) {   /* oldest first, each ending with its DONE */
        uint32_t *r = s->retired;
        ev->channel = r[0];
        ev->code = (int)r[2];
        if (r[1] & (ALKT__EV_OPEN_FAILED | ALKT__EV_RESET)) {
            ev->type = (r[1] & ALKT__EV_OPEN_FAILED) ? ALKT_EV_OPEN_FAILED : ALKT_EV_RESET;
            r[1] &= ~(ALKT__EV_OPEN_FAILED | ALKT__EV_RESET);
            return 1;
        }
        ev->type = ALKT_EV_CHANNEL_DONE;
        memmove(r, r + 4, (size_t)(--s->n_retired) * 4u * sizeof *r);
        return 1;
    }
    for (k = 0; k < s->max_channels; k++) {
        alkt__chan *c = &s->chans[(s->ev_cursor + k) % s->max_channels];
        if (c->state == ALKT_CHANNEL_NONE || !c->events) continue;
        ev->channel = c->id;
        for (i = 0; i < sizeof order / sizeof order[0]; i++)
            if (c->events & order[i].bit) {
                c->events &= (uint16_t)~order[i].bit;
                ev->type = order[i].type;
                if (order[i].bit == ALKT__EV_OPEN_FAILED ||
                    order[i].bit == ALKT__EV_RESET)
                    ev->code = c->code;
                return 1;
            }
        /* DONE: the last word on the channel; the record goes */
        ev->type = ALKT_EV_CHANNEL_DONE;
        ev->code = c->code;
        memset(c, 0, offsetof(alkt__chan, ring));
        s->ev_cursor = (s->ev_cursor + k + 1) % s->max_channels;
        return 1;
    }
    if (s->session_events & ALKT__SEV_DISCONNECTED) {
        s->session_events &= ~ALKT__SEV_DISCONNECTED;
        ev->type = ALKT_EV_DISCONNECTED;
        ev->code = s->ev_code_disconnected;
        return 1;
    }
    if (s->session_events & ALKT__SEV_CLOSED) {
        s->session_events &= ~ALKT__SEV_CLOSED;
        ev->type = ALKT_EV_CLOSED;
        ev->code = s->ev_code_closed;
        return 1;
    }
    return 0;
}

ALKTDEF int alkt_session_close(alkt_session *s, uint16_t code)
{
    if (!s) return ALKT_ERR_ARG;
    if (s->state == ALKT__S_CLOSED) return ALKT_ERR_CLOSED;
    alkt__goaway(s, (int)code);
    alkt__close_session(s, ALKT_ERR_CLOSED);
    return ALKT_OK;
}

ALKTDEF int alkt_session_is_established(const alkt_session *s)
{
    return s && s->state == ALKT__S_ACTIVE && s->conn == ALKT__C_UP;
}

ALKTDEF const char *alkt_session_peer_identity(const alkt_session *s,
                                               size_t *len)
{
    if (!s || !s->established_once) return NULL;
    if (len) *len = s->peer_identity_len;
    return s->peer_identity;
}

ALKTDEF uint64_t alkt_session_peer_freshness(const alkt_session *s)
{
    return s && s->is_server ? s->fresh_floor : 0;
}

ALKTDEF void alkt_session_wipe(alkt_session *s)
{
    uint32_t i;
    if (!s) return;
    for (i = 0; s->chans && i < s->max_channels; i++)
        alkt__sha256_wipe(s->chans[i].ring, s->channel_window);
    if (s->log) alkt__sha256_wipe(s->log, s->log_size);
    if (s->in_buf)
        alkt__sha256_wipe(s->in_buf, s->max_frame > ALKT__HELLO_MAX ? s->max_frame
                                                                  : ALKT__HELLO_MAX);
    if (s->rec_out) alkt__sha256_wipe(s->rec_out, s->rec_cap);
    if (s->rec_in)
        alkt__sha256_wipe(s->rec_in, ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER + s->max_frame);
    alkt__sha256_wipe(s, sizeof *s);
    s->state = ALKT__S_CLOSED;   /* every call on it is refused */
}

/* ---- channel commands ---- */
static alkt__chan *alkt__chan_op(alkt_session *s, uint32_t id, int *rc)
{
    alkt__chan *c;
    *rc = ALKT_OK;
    if (!s) { *rc = ALKT_ERR_ARG; return NULL; }
    if (s->state != ALKT__S_ACTIVE) {
        *rc = s->state == ALKT__S_CLOSED ? ALKT_ERR_CLOSED : ALKT_ERR_NOT_CONNECTED;
        return NULL;
    }
    c = alkt__find(s, id);
    if (!c) *rc = ALKT_ERR_NO_CHANNEL;
    return c;
}

ALKTDEF int alkt_channel_open(alkt_session *s, const alkt_open_params *params,
                              uint32_t *id)
{
    char json[640];
    alkt_error err;
    alkt__chan *c;
    ptrdiff_t n;
    if (!s || !params || !id) return ALKT_ERR_ARG;
    if (s->state != ALKT__S_ACTIVE)
        return s->state == ALKT__S_CLOSED ? ALKT_ERR_CLOSED : ALKT_ERR_NOT_CONNECTED;
    n = alkt_open_params_encode(params, json, sizeof json, &err);
    if (n < 0) return (int)n;
    c = alkt__slot(s);
    if (!c) return ALKT_ERR_CHANNELS_FULL;
    if ((uint64_t)s->next_id + 2 > 0xffffffffu) return ALKT_ERR_CHANNELS_FULL;
    {
        /* no more of ours alive than the peer's HELLO allows */
        uint32_t i, mine = 0;
        for (i = 0; i < s->max_channels; i++)
            mine += s->chans[i].state != ALKT_CHANNEL_NONE &&
                    (s->chans[i].flags & ALKT__CF_LOCAL);
        if (mine >= s->peer_max_channels) return ALKT_ERR_CHANNELS_FULL;
    }
    if (!alkt__log_frame(s, ALKT_FRAME_OPEN, s->next_id, json, (size_t)n, NULL, 0))
        return ALKT_ERR_WOULD_BLOCK;
    memset(c, 0, offsetof(alkt__chan, ring));
    c->id = s->next_id;
    c->state = ALKT_CHANNEL_OPENING;
    c->flags = ALKT__CF_LOCAL;
    c->params = *params;
    s->next_id += 2;
    *id = c->id;
    alkt__pump(s);   /* its credit goes right after the open */
    return ALKT_OK;
}

ALKTDEF int alkt_channel_accept(alkt_session *s, uint32_t id,
                                const alkt_listen_reply *reply)
{
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    if (!c) return rc;
    if (c->state != ALKT_CHANNEL_INCOMING) return ALKT_ERR_STATE;
    if (reply) c->reply = *reply;
    c->state = ALKT_CHANNEL_OPEN;
    c->flags |= ALKT__CF_WANT_OK;
    alkt__pump(s);
    return ALKT_OK;
}

ALKTDEF int alkt_channel_refuse(alkt_session *s, uint32_t id, uint16_t code,
                                const char *reason)
{
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    size_t n = 0;
    if (!c) return rc;
    if (c->state != ALKT_CHANNEL_INCOMING) return ALKT_ERR_STATE;
    /* the reason: printable ASCII, cut at ALKT_REASON_MAX */
    while (reason && reason[n] && n < ALKT_REASON_MAX) {
        c->reason[n] = reason[n] >= 0x20 && reason[n] < 0x7f ? reason[n] : '?';
        n++;
    }
    c->reason[n] = 0;
    alkt__chan_end(s, c, code);
    c->flags |= ALKT__CF_WANT_ERR;
    alkt__pump(s);
    return ALKT_OK;
}

ALKTDEF ptrdiff_t alkt_channel_send(alkt_session *s, uint32_t id,
                                    const void *data, size_t len)
{
    const unsigned char *d = (const unsigned char *)data;
    size_t done = 0;
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    if (!c) return rc;
    if (!data && len) return ALKT_ERR_ARG;
    if (c->state == ALKT_CHANNEL_FINISHED)
        return (c->flags & ALKT__CF_RESET) ? ALKT_ERR_RESET : ALKT_ERR_STATE;
    if (c->state != ALKT_CHANNEL_OPEN || (c->flags & ALKT__CF_WRITE_CLOSED))
        return ALKT_ERR_STATE;
    /* an accepted channel's OPEN_OK goes to the log before its first byte */
    if (c->flags & ALKT__CF_WANT_OK) alkt__pump(s);
    while (done < len && c->snd_credit && !(c->flags & ALKT__CF_WANT_OK)) {
        uint64_t room = alkt__log_room(s);
        size_t k = len - done, fmax = s->peer_max_frame ? s->peer_max_frame
                                                        : s->max_frame;
        if (fmax > s->max_frame) fmax = s->max_frame;
        if (room <= ALKT_FRAME_HEADER) break;
        if (k > fmax) k = fmax;
        if (k > c->snd_credit) k = (size_t)c->snd_credit;
        if (k > room - ALKT_FRAME_HEADER) k = (size_t)(room - ALKT_FRAME_HEADER);
        alkt__log_frame(s, ALKT_FRAME_DATA, c->id, d + done, k, NULL, 0);
        c->snd_credit -= k;
        c->sent += k;
        done += k;
    }
    if (done < len && c->snd_credit) {
        /* the log stopped it: WRITABLE once acks make room */
        c->flags |= ALKT__CF_LOG_WAIT;
        s->log_waiters = 1;
    }
    return (ptrdiff_t)done;
}

/* k buffered bytes of c are read: their room goes back to the peer. */
static void alkt__chan_take(alkt_session *s, alkt__chan *c, size_t k, int *eof)
{
    c->rcv_head = (uint32_t)((c->rcv_head + k) % s->channel_window);
    c->rcv_len -= (uint32_t)k;
    s->budget_used -= k;
    if (c->rcv_len == 0 && (c->flags & ALKT__CF_PEER_EOF)) {
        /* the EOF is delivered here, once the app has every byte */
        if (eof) *eof = 1;
        c->flags |= ALKT__CF_EOF_READ;
    }
    alkt__maybe_done(c);
    alkt__pump(s);
}

ALKTDEF ptrdiff_t alkt_channel_recv(alkt_session *s, uint32_t id, void *buf,
                                    size_t cap, int *eof)
{
    unsigned char *o = (unsigned char *)buf;
    size_t k, first;
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    if (eof) *eof = 0;
    if (!c) return rc;
    if (!buf && cap) return ALKT_ERR_ARG;
    if (c->flags & ALKT__CF_RESET) return ALKT_ERR_RESET;
    k = c->rcv_len < cap ? c->rcv_len : cap;
    first = s->channel_window - c->rcv_head < k ? s->channel_window - c->rcv_head : k;
    memcpy(o, c->ring + c->rcv_head, first);
    memcpy(o + first, c->ring, k - first);
    alkt__chan_take(s, c, k, eof);
    return (ptrdiff_t)k;
}

ALKTDEF ptrdiff_t alkt_channel_peek(alkt_session *s, uint32_t id,
                                    const void **data, int *eof)
{
    size_t k;
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    if (eof) *eof = 0;
    if (data) *data = NULL;
    if (!c) return rc;
    if (!data) return ALKT_ERR_ARG;
    if (c->flags & ALKT__CF_RESET) return ALKT_ERR_RESET;
    k = s->channel_window - c->rcv_head;
    if (k > c->rcv_len) k = c->rcv_len;
    *data = c->ring + c->rcv_head;
    if (k == 0) alkt__chan_take(s, c, 0, eof);   /* the EOF, when it is due */
    return (ptrdiff_t)k;
}

ALKTDEF ptrdiff_t alkt_channel_consume(alkt_session *s, uint32_t id, size_t n,
                                       int *eof)
{
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    if (eof) *eof = 0;
    if (!c) return rc;
    if (c->flags & ALKT__CF_RESET) return ALKT_ERR_RESET;
    if (n > c->rcv_len) return ALKT_ERR_ARG;
    alkt__chan_take(s, c, n, eof);
    return (ptrdiff_t)n;
}

ALKTDEF int alkt_channel_shutdown_write(alkt_session *s, uint32_t id)
{
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    if (!c) return rc;
    if (c->state == ALKT_CHANNEL_FINISHED)
        return (c->flags & ALKT__CF_RESET) ? ALKT_ERR_RESET : ALKT_ERR_STATE;
    if (c->state != ALKT_CHANNEL_OPEN) return ALKT_ERR_STATE;
    if (c->flags & ALKT__CF_WRITE_CLOSED) return ALKT_OK;
    c->flags |= ALKT__CF_WRITE_CLOSED;
    c->snd_credit = 0;
    alkt__pump(s);
    return ALKT_OK;
}

ALKTDEF int alkt_channel_reset(alkt_session *s, uint32_t id, uint16_t code)
{
    int rc;
    alkt__chan *c = alkt__chan_op(s, id, &rc);
    if (!c) return rc;
    if (c->state == ALKT_CHANNEL_FINISHED) return ALKT_OK;
    if (c->state == ALKT_CHANNEL_INCOMING) return alkt_channel_refuse(s, id, code, NULL);
    c->flags |= ALKT__CF_RESET | ALKT__CF_WANT_RESET;
    alkt__chan_end(s, c, code);
    alkt__pump(s);
    return ALKT_OK;
}

ALKTDEF int alkt_channel_info_get(const alkt_session *s, uint32_t id,
                                  alkt_channel_info *info)
{
    const alkt__chan *c;
    if (!s || !info) return ALKT_ERR_ARG;
    memset(info, 0, sizeof *info);
    c = alkt__find(s, id);
    if (!c) return ALKT_ERR_NO_CHANNEL;
    info->state = (alkt_channel_state)c->state;
    info->local = (c->flags & ALKT__CF_LOCAL) != 0;
    info->readable = c->rcv_len;
    info->send_credit = c->snd_credit;
    info->write_closed = (c->flags & ALKT__CF_WRITE_CLOSED) != 0;
    info->peer_eof = (c->flags & ALKT__CF_PEER_EOF) != 0;
    info->reset = (c->flags & ALKT__CF_RESET) != 0;
    info->code = c->code;
    info->bytes_sent = c->sent;
    info->bytes_received = c->received;
    info->params = c->params;
    info->reply = c->reply;
    memcpy(info->reason, c->reason, sizeof info->reason);
    return ALKT_OK;
}

#ifndef ALKTUNNEL_NO_PUMPS /* pumps and datagram pumps */
/* ---- pumps ---- */
#define ALKT__PF_EP_EOF 1u       /* the endpoint's read side ended */
#define ALKT__PF_CH_SHUT 2u      /* ... and the channel has its EOF */
#define ALKT__PF_CH_EOF 4u       /* the peer's EOF, read to the end */
#define ALKT__PF_EP_SHUT 8u      /* ... and the endpoint's write side shut */
#define ALKT__PF_ABORT 16u

ALKTDEF int alkt_pump_init(alkt_pump *p, alkt_session *s, uint32_t channel,
                           void *buf, size_t cap)
{
    if (!p) return ALKT_ERR_ARG;
    memset(p, 0, sizeof *p);
    if (!s || !buf || cap == 0) return ALKT_ERR_ARG;
    p->s = s;
    p->channel = channel;
    p->buf = (unsigned char *)buf;
    p->cap = cap;
    return ALKT_OK;
}

/* A pump may start on a channel still OPENING: it waits for the answer. */
static int alkt__opening(const alkt_session *s, uint32_t channel)
{
    const alkt__chan *c = alkt__find(s, channel);
    return c && c->state == ALKT_CHANNEL_OPENING;
}

static void alkt__pump_abort(alkt_pump *p, int code)
{
    if (p->flags & ALKT__PF_ABORT) return;
    p->flags |= ALKT__PF_ABORT;
    p->code = code;
}

static int alkt__pump_done(const alkt_pump *p)
{
    return (p->flags & ALKT__PF_CH_SHUT) && (p->flags & ALKT__PF_EP_SHUT);
}

ALKTDEF unsigned alkt_pump_poll(alkt_pump *p)
{
    unsigned want = 0;
    if (!p || !p->s) return ALKT_PUMP_ABORT;
    if (alkt__pump_done(p)) return ALKT_PUMP_DONE;
    if (!(p->flags & ALKT__PF_ABORT)) {
        /* endpoint -> channel: as far as credit and the log go */
        while (p->len && !alkt__opening(p->s, p->channel)) {
            ptrdiff_t t = alkt_channel_send(p->s, p->channel, p->buf + p->off, p->len);
            if (t < 0) {
                alkt__pump_abort(p, (int)t);
                break;
            }
            if (t == 0) break;
            p->off += (size_t)t;
            p->len -= (size_t)t;
            p->to_channel += (uint64_t)t;
        }
        if (p->len == 0) p->off = 0;
        if (p->len == 0 && (p->flags & ALKT__PF_EP_EOF) &&
            !(p->flags & ALKT__PF_CH_SHUT) && !(p->flags & ALKT__PF_ABORT) &&
            !alkt__opening(p->s, p->channel)) {
            int rc = alkt_channel_shutdown_write(p->s, p->channel);
            if (rc != ALKT_OK) alkt__pump_abort(p, rc);
            else p->flags |= ALKT__PF_CH_SHUT;
        }
    }
    if (!(p->flags & ALKT__PF_ABORT) && !(p->flags & ALKT__PF_CH_EOF)) {
        /* channel -> endpoint: bytes waiting, or the peer's EOF */
        const void *d;
        int eof = 0;
        ptrdiff_t n = alkt_channel_peek(p->s, p->channel, &d, &eof);
        if (n < 0) alkt__pump_abort(p, (int)n);
        else if (n > 0) want |= ALKT_PUMP_WRITE;
        else if (eof) p->flags |= ALKT__PF_CH_EOF;
    }
    if (p->flags & ALKT__PF_ABORT) return ALKT_PUMP_ABORT;
    if (alkt__pump_done(p)) return ALKT_PUMP_DONE;
    if (!(p->flags & ALKT__PF_EP_EOF) && p->len < p->cap) want |= ALKT_PUMP_READ;
    if ((p->flags & ALKT__PF_CH_EOF) && !(p->flags & ALKT__PF_EP_SHUT))
        want |= ALKT_PUMP_SHUT_WRITE;
    return want;
}

ALKTDEF size_t alkt_pump_read_buffer(alkt_pump *p, void **buf)
{
    if (buf) *buf = NULL;
    if (!p || !buf || !p->s ||
        (p->flags & (ALKT__PF_EP_EOF | ALKT__PF_ABORT)))
        return 0;
    if (p->len && p->off) {   /* the rest to the front: one contiguous room */
        memmove(p->buf, p->buf + p->off, p->len);
        p->off = 0;
    }
    *buf = p->buf + p->off + p->len;
    return p->cap - p->off - p->len;
}

ALKTDEF int alkt_pump_endpoint_read(alkt_pump *p, size_t n)
{
    if (!p || !p->s) return ALKT_ERR_ARG;
    if (p->flags & ALKT__PF_ABORT) return ALKT_ERR_RESET;
    if (p->flags & ALKT__PF_EP_EOF) return ALKT_ERR_STATE;
    if (n > p->cap - p->off - p->len) return ALKT_ERR_ARG;
    p->len += n;
    p->from_endpoint += (uint64_t)n;
    (void)alkt_pump_poll(p);
    return ALKT_OK;
}

ALKTDEF int alkt_pump_endpoint_eof(alkt_pump *p)
{
    if (!p || !p->s) return ALKT_ERR_ARG;
    if (p->flags & ALKT__PF_ABORT) return ALKT_ERR_RESET;
    p->flags |= ALKT__PF_EP_EOF;
    (void)alkt_pump_poll(p);
    return ALKT_OK;
}

ALKTDEF size_t alkt_pump_write_peek(alkt_pump *p, const void **data)
{
    ptrdiff_t n;
    int eof = 0;
    if (data) *data = NULL;
    if (!p || !data || !p->s || (p->flags & (ALKT__PF_ABORT | ALKT__PF_CH_EOF)))
        return 0;
    n = alkt_channel_peek(p->s, p->channel, data, &eof);
    if (n < 0) {
        alkt__pump_abort(p, (int)n);
        *data = NULL;
        return 0;
    }
    if (n == 0) {
        *data = NULL;
        if (eof) p->flags |= ALKT__PF_CH_EOF;
    }
    return (size_t)n;
}

ALKTDEF int alkt_pump_endpoint_wrote(alkt_pump *p, size_t n)
{
    ptrdiff_t r;
    int eof = 0;
    if (!p || !p->s) return ALKT_ERR_ARG;
    if (p->flags & ALKT__PF_ABORT) return ALKT_ERR_RESET;
    r = alkt_channel_consume(p->s, p->channel, n, &eof);
    if (r < 0) return (int)r;
    p->to_endpoint += (uint64_t)n;
    if (eof) p->flags |= ALKT__PF_CH_EOF;
    return ALKT_OK;
}

ALKTDEF int alkt_pump_endpoint_shut(alkt_pump *p)
{
    if (!p || !p->s) return ALKT_ERR_ARG;
    if (!(p->flags & ALKT__PF_CH_EOF)) return ALKT_ERR_STATE;
    p->flags |= ALKT__PF_EP_SHUT;
    return ALKT_OK;
}

ALKTDEF int alkt_pump_endpoint_failed(alkt_pump *p, uint16_t code)
{
    int rc;
    if (!p || !p->s) return ALKT_ERR_ARG;
    /* (after DONE both directions are over: there is nothing to reset) */
    if ((p->flags & ALKT__PF_ABORT) || alkt__pump_done(p)) return ALKT_OK;
    alkt__pump_abort(p, (int)code);
    rc = alkt_channel_reset(p->s, p->channel, code);
    /* both EOFs through: the session is done with the channel already, and
     * only this endpoint is left to close */
    if (rc == ALKT_ERR_NO_CHANNEL && (p->flags & ALKT__PF_CH_SHUT) &&
        (p->flags & ALKT__PF_CH_EOF))
        rc = ALKT_OK;
    return rc;
}

/* ---- datagram pumps ---- */
#define ALKT__DF_EP_EOF 1u       /* no more datagrams from the endpoint */
#define ALKT__DF_CH_SHUT 2u      /* ... and the channel has its EOF */
#define ALKT__DF_CH_EOF 4u       /* the peer's EOF, at a frame boundary */
#define ALKT__DF_ABORT 8u
#define ALKT__DF_READY 16u       /* in holds a whole datagram */

ALKTDEF int alkt_dgram_pump_init(alkt_dgram_pump *p, alkt_session *s,
                                 uint32_t channel, void *mem, size_t mem_len,
                                 size_t max_datagram)
{
    if (!p) return ALKT_ERR_ARG;
    memset(p, 0, sizeof *p);
    if (!s || !mem || max_datagram > ALKT_DATAGRAM_MAX ||
        mem_len < 2 * (max_datagram + 2))
        return ALKT_ERR_ARG;
    p->s = s;
    p->channel = channel;
    p->max = max_datagram;
    p->out = (unsigned char *)mem;
    p->in = p->out + max_datagram + 2;
    return ALKT_OK;
}

static void alkt__dgram_abort(alkt_dgram_pump *p, int code)
{
    if (p->flags & ALKT__DF_ABORT) return;
    p->flags |= ALKT__DF_ABORT;
    p->code = code;
}

ALKTDEF unsigned alkt_dgram_pump_poll(alkt_dgram_pump *p)
{
    unsigned want = 0;
    if (!p || !p->s) return ALKT_PUMP_ABORT;
    if (!(p->flags & ALKT__DF_ABORT)) {
        /* endpoint -> channel: the framed datagram, as far as it goes */
        while (p->out_off < p->out_len && !alkt__opening(p->s, p->channel)) {
            ptrdiff_t t = alkt_channel_send(p->s, p->channel, p->out + p->out_off,
                                            p->out_len - p->out_off);
            if (t < 0) {
                alkt__dgram_abort(p, (int)t);
                break;
            }
            if (t == 0) break;
            p->out_off += (size_t)t;
        }
        if (p->out_len && p->out_off == p->out_len) {
            p->out_off = p->out_len = 0;
            p->to_channel++;
        }
        if (p->out_len == 0 && (p->flags & ALKT__DF_EP_EOF) &&
            !(p->flags & (ALKT__DF_CH_SHUT | ALKT__DF_ABORT)) &&
            !alkt__opening(p->s, p->channel)) {
            int rc = alkt_channel_shutdown_write(p->s, p->channel);
            if (rc != ALKT_OK) alkt__dgram_abort(p, rc);
            else p->flags |= ALKT__DF_CH_SHUT;
        }
    }
    /* channel -> endpoint: the header, then exactly its payload */
    while (!(p->flags & (ALKT__DF_ABORT | ALKT__DF_READY | ALKT__DF_CH_EOF))) {
        size_t need = p->in_len < 2 ? 2 : 2 + ((size_t)p->in[0] << 8 | p->in[1]);
        int eof = 0;
        ptrdiff_t n;
        if (p->in_len >= 2 && need - 2 > p->max) {
            /* over the limit: never cut, never queued - the channel goes */
            alkt__dgram_abort(p, (int)ALKT_CODE_BAD_DATAGRAM);
            (void)alkt_channel_reset(p->s, p->channel, (uint16_t)ALKT_CODE_BAD_DATAGRAM);
            break;
        }
        if (p->in_len == need) {
            p->flags |= ALKT__DF_READY;
            break;
        }
        n = alkt_channel_recv(p->s, p->channel, p->in + p->in_len, need - p->in_len, &eof);
        if (n < 0) {
            alkt__dgram_abort(p, (int)n);
            break;
        }
        p->in_len += (size_t)n;
        if (eof) {   /* nothing after these bytes: a frame boundary, or a cut */
            if (p->in_len >= 2)
                need = 2 + ((size_t)p->in[0] << 8 | p->in[1]);
            if (p->in_len == 0) {
                p->flags |= ALKT__DF_CH_EOF;
            } else if (p->in_len >= 2 && p->in_len == need && need - 2 <= p->max) {
                p->flags |= ALKT__DF_READY | ALKT__DF_CH_EOF;
            } else {
                alkt__dgram_abort(p, (int)ALKT_CODE_BAD_DATAGRAM);
                (void)alkt_channel_reset(p->s, p->channel, (uint16_t)ALKT_CODE_BAD_DATAGRAM);
            }
            break;
        }
        if (n == 0) break;
    }
    if (p->flags & ALKT__DF_ABORT) return ALKT_PUMP_ABORT;
    if ((p->flags & ALKT__DF_CH_SHUT) && (p->flags & ALKT__DF_CH_EOF) &&
        !(p->flags & ALKT__DF_READY))
        return ALKT_PUMP_DONE;
    if (!(p->flags & ALKT__DF_EP_EOF) && p->out_len == 0) want |= ALKT_PUMP_READ;
    if (p->flags & ALKT__DF_READY) want |= ALKT_PUMP_WRITE;
    /* the peer's direction is over (its last datagram handed out): a UDP
     * flow has no half-close, so the app may end ours (endpoint_eof) */
    if ((p->flags & ALKT__DF_CH_EOF) && !(p->flags & ALKT__DF_READY) &&
        !(p->flags & ALKT__DF_EP_EOF))
        want |= ALKT_PUMP_SHUT_WRITE;
    return want;
}

ALKTDEF int alkt_dgram_pump_send(alkt_dgram_pump *p, const void *data, size_t len)
{
    if (!p || !p->s || (!data && len)) return ALKT_ERR_ARG;
    if (p->flags & ALKT__DF_ABORT) return ALKT_ERR_RESET;
    if (p->flags & ALKT__DF_EP_EOF) return ALKT_ERR_STATE;
    if (len > p->max) return ALKT_ERR_TOO_LARGE;
    if (p->out_len) return ALKT_ERR_WOULD_BLOCK;
    p->out[0] = (unsigned char)(len >> 8);
    p->out[1] = (unsigned char)len;
    if (len) memcpy(p->out + 2, data, len);
    p->out_off = 0;
    p->out_len = len + 2;
    (void)alkt_dgram_pump_poll(p);
    return ALKT_OK;
}

ALKTDEF ptrdiff_t alkt_dgram_pump_recv(alkt_dgram_pump *p, const void **data)
{
    if (data) *data = NULL;
    if (!p || !p->s || !data) return ALKT_ERR_ARG;
    if (!(p->flags & ALKT__DF_READY)) (void)alkt_dgram_pump_poll(p);
    if (!(p->flags & ALKT__DF_READY)) return ALKT_ERR_WOULD_BLOCK;
    *data = p->in + 2;
    return (ptrdiff_t)(p->in_len - 2);
}

ALKTDEF int alkt_dgram_pump_delivered(alkt_dgram_pump *p)
{
    if (!p || !p->s) return ALKT_ERR_ARG;
    if (!(p->flags & ALKT__DF_READY)) return ALKT_ERR_STATE;
    p->flags &= ~ALKT__DF_READY;
    p->in_len = 0;
    p->to_endpoint++;
    return ALKT_OK;
}

ALKTDEF int alkt_dgram_pump_endpoint_eof(alkt_dgram_pump *p)
{
    if (!p || !p->s) return ALKT_ERR_ARG;
    if (p->flags & ALKT__DF_ABORT) return ALKT_ERR_RESET;
    p->flags |= ALKT__DF_EP_EOF;
    (void)alkt_dgram_pump_poll(p);
    return ALKT_OK;
}

ALKTDEF int alkt_dgram_pump_endpoint_failed(alkt_dgram_pump *p, uint16_t code)
{
    int rc;
    if (!p || !p->s) return ALKT_ERR_ARG;
    if ((p->flags & ALKT__DF_ABORT) ||
        ((p->flags & ALKT__DF_CH_SHUT) && (p->flags & ALKT__DF_CH_EOF) &&
         !(p->flags & ALKT__DF_READY)))
        return ALKT_OK;
    alkt__dgram_abort(p, (int)code);
    rc = alkt_channel_reset(p->s, p->channel, code);
    return rc == ALKT_ERR_NO_CHANNEL ? ALKT_OK : rc;
}

#endif /* ALKTUNNEL_NO_PUMPS */

#ifndef ALKTUNNEL_NO_ROLES /* relay, client and gateway */
/* ---- relay ------------------------------------------------------------------- */
enum {
    ALKT__R_REQUEST = 1, /* reading the request */
    ALKT__R_OFFER,       /* a gateway's spare connection, waiting */
    ALKT__R_WAITING,     /* a client, waiting for an offer */
    ALKT__R_JOINED       /* bytes go to the other side */
};
#define ALKT__RELAY_CLIENT 1u
#define ALKT__RELAY_OFFER 2u
/* status bytes the relay sends before it closes (0: joined) */
#define ALKT__RST_JOINED 0u
#define ALKT__RST_BAD_REQUEST 1u
#define ALKT__RST_BAD_TOKEN 2u
#define ALKT__RST_NO_GATEWAY 3u
#define ALKT__RST_EXPIRED 4u
#define ALKT__RST_UNPROVEN 5u
static const unsigned char alkt__relay_magic[4] = {'A', 'L', 'K', 'R'};
#define ALKT__RELAY_VERSION 2u

static int alkt__relay_cfg(const alkt_relay_config *c, alkt_relay_config *o)
{
    size_t i;
    *o = *c;
    if (!o->max_conns) o->max_conns = 64;
    if (!o->buffer_size) o->buffer_size = 65536;
    if (!o->offer_lifetime_ns) o->offer_lifetime_ns = 30000000000ull;
    if (!o->wait_ns) o->wait_ns = 5000000000ull;
    if (!o->request_timeout_ns) o->request_timeout_ns = 5000000000ull;
    if (!o->idle_timeout_ns) o->idle_timeout_ns = 300000000000ull;
    if (!o->offers_per_gateway) o->offers_per_gateway = 4;
    if (!c->tokens || c->token_count == 0 || o->max_conns > 65535u ||
        o->buffer_size > (1u << 30) || (c->gateway_count && !c->gateways) ||
        c->gateway_count > 65535u)
        return 0;
    for (i = 0; i < c->token_count; i++) {
        size_t n = c->tokens[i] ? alkt__bounded_len(c->tokens[i], ALKT_TOKEN_MAX + 1) : 0;
        if (n == 0 || n > ALKT_TOKEN_MAX || alkt__check_token(c->tokens[i], n) != ALKT_OK)
            return 0;
    }
    for (i = 0; i < c->gateway_count; i++) {
        const alkt_relay_gateway *g = &c->gateways[i];
        size_t n = g->id ? alkt__bounded_len(g->id, ALKT_ID_MAX + 1) : 0;
        if (n == 0 || n > ALKT_ID_MAX || alkt__check_id(g->id, n) != ALKT_OK ||
            !g->key || g->key_len < ALKT_SECRET_MIN || g->key_len > ALKT_SECRET_MAX)
            return 0;
    }
    return 1;
}

ALKTDEF size_t alkt_relay_mem_size(const alkt_relay_config *cfg)
{
    alkt_relay_config c;
    if (!cfg || !alkt__relay_cfg(cfg, &c)) return 0;
    return alkt__align8((size_t)c.max_conns * sizeof(alkt__rconn)) +
           (size_t)c.max_conns * c.buffer_size + 8 +
           alkt__align8(c.gateway_count * sizeof(uint64_t)) + 8;
}

ALKTDEF int alkt_relay_init(alkt_relay_server *r, const alkt_relay_config *cfg,
                            void *mem, size_t mem_len, uint64_t now)
{
    alkt_relay_config c;
    unsigned char *p;
    uint32_t i;
    if (!r || !cfg || !mem || !alkt__relay_cfg(cfg, &c)) return ALKT_ERR_ARG;
    if (mem_len < alkt_relay_mem_size(cfg)) return ALKT_ERR_NOMEM;
    memset(r, 0, sizeof *r);
    r->cfg = c;
    r->now = now;
    p = (unsigned char *)(((uintptr_t)mem + 7u) & ~(uintptr_t)7u);
    r->conns = (alkt__rconn *)(void *)p;
    memset(r->conns, 0, (size_t)c.max_conns * sizeof(alkt__rconn));
    p += alkt__align8((size_t)c.max_conns * sizeof(alkt__rconn));
    for (i = 0; i < c.max_conns; i++) {
        r->conns[i].ring = p;
        p += c.buffer_size;
    }
    p = (unsigned char *)(((uintptr_t)p + 7u) & ~(uintptr_t)7u);
    r->gw_fresh = (uint64_t *)(void *)p;
    memset(p, 0, c.gateway_count * sizeof(uint64_t));
    return ALKT_OK;
}

/* Handles: generation in the high 16 bits, slot + 1 in the low 16. */
static uint32_t alkt__handle(uint32_t *gen, uint32_t slot)
{
    *gen = (*gen + 1u) & 0xffffu;
    if (*gen == 0) *gen = 1;
    return *gen << 16 | (slot + 1u);
}

static alkt__rconn *alkt__rfind(const alkt_relay_server *r, uint32_t h)
{
    uint32_t slot = (h & 0xffffu);
    if (!r || !r->conns || slot == 0 || slot > r->cfg.max_conns) return NULL;
    if (r->conns[slot - 1].handle != h) return NULL;
    return &r->conns[slot - 1];
}

static alkt__rconn *alkt__rother(const alkt_relay_server *r, const alkt__rconn *c)
{
    return c->other ? &r->conns[c->other - 1] : NULL;
}

ALKTDEF int alkt_relay_accept(alkt_relay_server *r, uint64_t now, uint32_t *conn)
{
    uint32_t i;
    if (!r || !conn || !r->conns) return ALKT_ERR_ARG;
    *conn = 0;
    if (now > r->now) r->now = now;
    for (i = 0; i < r->cfg.max_conns; i++) {
        alkt__rconn *c = &r->conns[i];
        if (c->handle) continue;
        memset(c, 0, offsetof(alkt__rconn, ring));
        c->handle = alkt__handle(&r->gen, i);
        c->state = ALKT__R_REQUEST;
        c->deadline = r->now + r->cfg.request_timeout_ns;
        *conn = c->handle;
        return ALKT_OK;
    }
    return ALKT_ERR_CHANNELS_FULL;
}

/* The relay ends c: a status byte first when one is owed, then CLOSE.
 * Its partner, if any, gets what c sent so far and is closed after. */
static void alkt__rend(alkt_relay_server *r, alkt__rconn *c, int status)
{
    alkt__rconn *o = alkt__rother(r, c);
    if (o) {
        o->other = 0;
        o->closing = 1;
        o->deadline = r->now + r->cfg.request_timeout_ns;
    }
    c->other = 0;
    c->closing = 1;
    c->deadline = r->now + r->cfg.request_timeout_ns;   /* to drain, at most */
    c->len = 0;            /* bytes for c are dropped: it is going */
    c->head = c->peeked = 0;
    if (status >= 0) {
        c->status = (unsigned char)status;
        c->status_len = 1;
    }
}

static int alkt__rtoken(const alkt_relay_server *r, const unsigned char *t,
                        size_t n)
{
    size_t i;
    int found = -1;
    for (i = 0; i < r->cfg.token_count; i++) {
        /* every token compared, in time that does not depend on the bytes */
        size_t k = alkt__bounded_len(r->cfg.tokens[i], ALKT_TOKEN_MAX + 1);
        if (k == n && alkt_ct_equal(r->cfg.tokens[i], t, n) && found < 0)
            found = (int)i;
    }
    return found;
}

static int alkt__rsame(const alkt__rconn *a, const alkt__rconn *b)
{
    size_t ta = a->req[6], tb = b->req[6];
    size_t ga = a->req[7 + ta], gb = b->req[7 + tb];
    return a->token == b->token && ga == gb &&
           memcmp(a->req + 8 + ta, b->req + 8 + tb, ga) == 0;
}

static void alkt__rjoin(alkt_relay_server *r, alkt__rconn *client, alkt__rconn *offer)
{
    client->state = offer->state = ALKT__R_JOINED;
    client->other = (offer->handle & 0xffffu);
    offer->other = (client->handle & 0xffffu);
    client->status = offer->status = ALKT__RST_JOINED;
    client->status_len = offer->status_len = 1;
    offer->discard_refresh = 1;   /* its refreshes sent before it knew */
    client->deadline = offer->deadline = r->now + r->cfg.idle_timeout_ns;
    client->spliced_event = 1;
    r->stats.spliced++;
}

/* An offer proven: a gateway the relay knows, the MAC under its key over
 * the whole request (HMAC(key, "alkr2 offer" || the request up to the
 * MAC)), the freshness above the last offer it took from that gateway.
 * Its gateway's index, or -1. */
static int alkt__roffer_proven(alkt_relay_server *r, alkt__rconn *c)
{
    size_t tl = c->req[6], gl = c->req[7 + tl], at = 8 + tl + gl, i;
    int gw = -1;
    for (i = 0; i < r->cfg.gateway_count; i++)
        if (alkt__bounded_len(r->cfg.gateways[i].id, ALKT_ID_MAX + 1) == gl &&
            memcmp(r->cfg.gateways[i].id, c->req + 8 + tl, gl) == 0)
            gw = (int)i;
    if (gw >= 0) {
        alkt_hmac_sha256_ctx k;
        unsigned char mac[32];
        int ok;
        uint64_t fresh = alkt__get64(c->req + at);
        alkt_hmac_sha256_init(&k, r->cfg.gateways[gw].key, r->cfg.gateways[gw].key_len);
        alkt__mac(&k, "alkr2 offer", c->req, at + 8, NULL, 0, mac);
        alkt__sha256_wipe(&k, sizeof k);
        ok = alkt_ct_equal(mac, c->req + at + 8, 32);
        if (!ok || fresh <= r->gw_fresh[gw]) return -1;
        r->gw_fresh[gw] = fresh;
        c->fresh = fresh;
    }
    return gw;
}

/* A whole request: check it, then wait or join. */
static void alkt__rrequest(alkt_relay_server *r, alkt__rconn *c)
{
    size_t tl = c->req[6], gl = c->req[7 + tl];
    int tok;
    uint32_t i;
    if (memcmp(c->req, alkt__relay_magic, 4) != 0 || c->req[4] != ALKT__RELAY_VERSION ||
        (c->req[5] != ALKT__RELAY_CLIENT && c->req[5] != ALKT__RELAY_OFFER) ||
        alkt__check_token((const char *)c->req + 7, tl) != ALKT_OK ||
        alkt__check_id((const char *)c->req + 8 + tl, gl) != ALKT_OK) {
        r->stats.refused++;
        alkt__rend(r, c, ALKT__RST_BAD_REQUEST);
        return;
    }
    tok = alkt__rtoken(r, c->req + 7, tl);
    if (tok < 0) {
        r->stats.refused++;
        alkt__rend(r, c, ALKT__RST_BAD_TOKEN);
        return;
    }
    c->token = (uint32_t)tok;
    c->kind = c->req[5];
    c->refreshed_at = r->now;
    if (c->kind == ALKT__RELAY_OFFER) {
        /* only a gateway offers: a token holder can join, never offer */
        int gw = alkt__roffer_proven(r, c);
        alkt__rconn *stalest = NULL;
        uint32_t live = 0;
        if (gw < 0) {
            r->stats.refused++;
            alkt__rend(r, c, ALKT__RST_UNPROVEN);
            return;
        }
        c->gw = (uint32_t)gw;
        /* a gateway's live offers are bounded: the stalest makes room */
        for (i = 0; i < r->cfg.max_conns; i++) {
            alkt__rconn *o = &r->conns[i];
            if (o == c || !o->handle || o->closing || o->state != ALKT__R_OFFER ||
                o->gw != c->gw)
                continue;
            live++;
            if (!stalest || o->fresh < stalest->fresh) stalest = o;
        }
        if (live >= r->cfg.offers_per_gateway && stalest) {
            r->stats.expired++;
            alkt__rend(r, stalest, ALKT__RST_EXPIRED);
        }
    }
    {
        /* A client joins the offer refreshed last (a stale one may be a
         * spare its gateway lost); an offer takes the client that waited
         * longest. */
        alkt__rconn *best = NULL;
        unsigned want = c->kind == ALKT__RELAY_CLIENT ? ALKT__R_OFFER : ALKT__R_WAITING;
        for (i = 0; i < r->cfg.max_conns; i++) {
            alkt__rconn *o = &r->conns[i];
            if (!o->handle || o->closing || o->state != want || !alkt__rsame(o, c))
                continue;
            if (!best ||
                (want == ALKT__R_WAITING
                     ? o->deadline < best->deadline
                     : o->refreshed_at > best->refreshed_at ||
                           (o->refreshed_at == best->refreshed_at && o->fresh > best->fresh)))
                best = o;
        }
        if (best) {
            if (c->kind == ALKT__RELAY_CLIENT) alkt__rjoin(r, c, best);
            else alkt__rjoin(r, best, c);
            return;
        }
    }
    if (c->kind == ALKT__RELAY_CLIENT) {
        c->state = ALKT__R_WAITING;
        c->deadline = r->now + r->cfg.wait_ns;
    } else {
        c->state = ALKT__R_OFFER;
        c->deadline = r->now + r->cfg.offer_lifetime_ns;
    }
}

/* The request's bytes, one at a time, each field checked at the byte
 * where it is known; the request ends at its last byte (an offer's after
 * its freshness and MAC). */
static size_t alkt__rrequest_bytes(alkt_relay_server *r, alkt__rconn *c,
                                   const unsigned char *d, size_t len)
{
    size_t used = 0;
    while (used < len && c->state == ALKT__R_REQUEST && !c->closing) {
        size_t n, tl;
        int bad;
        c->req[c->req_len++] = d[used++];
        n = c->req_len;
        tl = c->req[6];
        if (n == 4) bad = memcmp(c->req, alkt__relay_magic, 4) != 0;  /* not ours */
        else if (n == 5) bad = c->req[4] != ALKT__RELAY_VERSION;
        else if (n == 6) bad = c->req[5] != ALKT__RELAY_CLIENT && c->req[5] != ALKT__RELAY_OFFER;
        else if (n == 7) bad = tl == 0 || tl > ALKT_TOKEN_MAX;
        else if (n >= 8 && n == 8 + tl) bad = c->req[7 + tl] == 0 || c->req[7 + tl] > ALKT_ID_MAX;
        else bad = 0;
        if (bad) {
            r->stats.refused++;
            alkt__rend(r, c, ALKT__RST_BAD_REQUEST);
        } else if (n > 8 + tl &&
                   n == 8 + tl + c->req[7 + tl] +
                            (c->req[5] == ALKT__RELAY_OFFER ? 8u + 32u : 0u)) {
            alkt__rrequest(r, c);
        }
    }
    return used;
}

/* The contiguous free run of a ring at its write position. */
static size_t alkt__ring_room(const unsigned char *ring, uint32_t size,
                              uint32_t head, uint32_t len, unsigned char **at)
{
    uint32_t w = (uint32_t)(((uint64_t)head + len) % size);
    size_t contig = w >= head ? (size_t)(size - w) : (size_t)(head - w);
    size_t room = (size_t)(size - len);
    *at = (unsigned char *)ring + w;
    return contig < room ? contig : room;
}

ALKTDEF size_t alkt_relay_read_buffer(alkt_relay_server *r, uint32_t conn, void **buf)
{
    alkt__rconn *c = alkt__rfind(r, conn), *o;
    unsigned char *at;
    size_t n;
    if (buf) *buf = NULL;
    if (!c || !buf || c->state != ALKT__R_JOINED || c->closing || c->discard_refresh)
        return 0;
    o = alkt__rother(r, c);
    if (!o) return 0;
    n = alkt__ring_room(o->ring, r->cfg.buffer_size, o->head, o->len, &at);
    if (n) *buf = at;
    return n;
}

ALKTDEF int alkt_relay_handle_read(alkt_relay_server *r, uint32_t conn, size_t n,
                                   uint64_t now)
{
    alkt__rconn *c = alkt__rfind(r, conn), *o;
    unsigned char *at;
    if (!c) return ALKT_ERR_ARG;
    if (now > r->now) r->now = now;
    if (n == 0) return ALKT_OK;
    o = c->state == ALKT__R_JOINED && !c->closing && !c->discard_refresh
            ? alkt__rother(r, c) : NULL;
    if (!o || n > alkt__ring_room(o->ring, r->cfg.buffer_size, o->head, o->len, &at))
        return ALKT_ERR_ARG;
    o->len += (uint32_t)n;
    r->stats.bytes += n;
    c->deadline = o->deadline = r->now + r->cfg.idle_timeout_ns;
    return ALKT_OK;
}

ALKTDEF ptrdiff_t alkt_relay_handle_input(alkt_relay_server *r, uint32_t conn,
                                          const void *data, size_t len,
                                          uint64_t now)
{
    alkt__rconn *c = alkt__rfind(r, conn);
    const unsigned char *d = (const unsigned char *)data;
    size_t used = 0;
    if (!c || (!data && len)) return ALKT_ERR_ARG;
    if (now > r->now) r->now = now;
    if (c->closing) return (ptrdiff_t)len;   /* going: its input is dropped */
    if (c->state == ALKT__R_REQUEST) used = alkt__rrequest_bytes(r, c, d, len);
    while (used < len && !c->closing) {
        if (c->state == ALKT__R_OFFER) {
            /* a spare connection says only 'R': it is still there */
            if (d[used] != 'R') {
                r->stats.refused++;
                alkt__rend(r, c, ALKT__RST_BAD_REQUEST);
                break;
            }
            c->deadline = r->now + r->cfg.offer_lifetime_ns;
            c->refreshed_at = r->now;
            used++;
        } else if (c->state == ALKT__R_JOINED && c->discard_refresh) {
            /* refreshes sent before the gateway read our status byte,
             * then its 'S': what follows is the session */
            if (d[used] == 'S') c->discard_refresh = 0;
            else if (d[used] != 'R') {
                r->stats.refused++;
                alkt__rend(r, c, -1);
                break;
            }
            used++;
        } else if (c->state == ALKT__R_JOINED) {
            void *buf;
            size_t room = alkt_relay_read_buffer(r, conn, &buf);
            if (room == 0) break;   /* backpressure: the rest waits */
            if (room > len - used) room = len - used;
            memcpy(buf, d + used, room);
            (void)alkt_relay_handle_read(r, conn, room, now);
            used += room;
        } else {
            break;   /* a client before its status byte: it should wait */
        }
    }
    if (c->closing) used = len;
    return (ptrdiff_t)used;
}

ALKTDEF size_t alkt_relay_transmit_peek(alkt_relay_server *r, uint32_t conn,
                                        const void **data)
{
    alkt__rconn *c = alkt__rfind(r, conn);
    size_t n;
    if (data) *data = NULL;
    if (!c || !data) return 0;
    if (c->status_len) {
        *data = &c->status;
        c->peeked = 1;
        return 1;
    }
    if (c->len == 0) return 0;
    n = r->cfg.buffer_size - c->head < c->len ? r->cfg.buffer_size - c->head : c->len;
    *data = c->ring + c->head;
    c->peeked = (uint32_t)n;
    return n;
}

ALKTDEF int alkt_relay_transmit_done(alkt_relay_server *r, uint32_t conn, size_t n)
{
    alkt__rconn *c = alkt__rfind(r, conn), *o;
    if (!c || n > c->peeked) return ALKT_ERR_ARG;
    c->peeked = 0;
    if (n == 0) return ALKT_OK;
    if (c->status_len) {
        c->status_len = 0;
        return ALKT_OK;
    }
    c->head = (uint32_t)((c->head + n) % r->cfg.buffer_size);
    c->len -= (uint32_t)n;
    if (c->len == 0) c->head = 0;
    o = alkt__rother(r, c);
    if (o) o->deadline = c->deadline = r->now + r->cfg.idle_timeout_ns;
    return ALKT_OK;
}

static void alkt__rfree(alkt__rconn *c)
{
    memset(c, 0, offsetof(alkt__rconn, ring));
}

ALKTDEF void alkt_relay_handle_closed(alkt_relay_server *r, uint32_t conn,
                                      uint64_t now)
{
    alkt__rconn *c = alkt__rfind(r, conn), *o;
    if (!c) return;
    if (now > r->now) r->now = now;
    o = alkt__rother(r, c);
    if (o) {              /* what c sent still goes to o, then o closes */
        o->other = 0;
        o->closing = 1;
        o->deadline = r->now + r->cfg.request_timeout_ns;
    }
    alkt__rfree(c);
}

ALKTDEF uint64_t alkt_relay_poll_timeout(const alkt_relay_server *r)
{
    uint64_t t = UINT64_MAX;
    uint32_t i;
    if (!r || !r->conns) return t;
    for (i = 0; i < r->cfg.max_conns; i++) {
        const alkt__rconn *c = &r->conns[i];
        if (!c->handle) continue;
        /* an event due is due now (queued bytes wait for the socket to
         * take them: transmit_peek says when there are any) */
        if (c->spliced_event || (c->closing && !c->status_len && !c->len)) return r->now;
        if (c->deadline < t) t = c->deadline;
    }
    return t;
}

ALKTDEF void alkt_relay_handle_timeout(alkt_relay_server *r, uint64_t now)
{
    uint32_t i;
    if (!r || !r->conns) return;
    if (now > r->now) r->now = now;
    for (i = 0; i < r->cfg.max_conns; i++) {
        alkt__rconn *c = &r->conns[i];
        if (!c->handle || r->now < c->deadline) continue;
        if (c->closing) {
            /* a peer that does not read its last bytes: they are dropped */
            c->len = 0;
            c->status_len = 0;
            c->deadline = UINT64_MAX;
        } else if (c->state == ALKT__R_WAITING) {
            r->stats.refused++;
            alkt__rend(r, c, ALKT__RST_NO_GATEWAY);
        } else if (c->state == ALKT__R_OFFER) {
            r->stats.expired++;
            alkt__rend(r, c, ALKT__RST_EXPIRED);
        } else if (c->state == ALKT__R_REQUEST) {
            r->stats.refused++;
            alkt__rend(r, c, -1);
        } else {
            alkt__rend(r, c, -1);   /* a pair idle too long: both go */
        }
    }
}

ALKTDEF int alkt_relay_poll_event(alkt_relay_server *r, alkt_role_event *ev)
{
    uint32_t i;
    if (!r || !ev || !r->conns) return 0;
    memset(ev, 0, sizeof *ev);
    for (i = 0; i < r->cfg.max_conns; i++) {
        alkt__rconn *c = &r->conns[i];
        if (!c->handle) continue;
        if (c->spliced_event) {
            alkt__rconn *o = alkt__rother(r, c);
            c->spliced_event = 0;
            ev->type = ALKT_REV_SPLICED;
            ev->conn = c->handle;
            ev->conn2 = o ? o->handle : 0;
            return 1;
        }
        /* closing: once its status byte and bytes are out */
        if (c->closing && !c->status_len && c->len == 0) {
            ev->type = ALKT_REV_CLOSE;
            ev->conn = c->handle;
            ev->code = c->status;   /* a refusal's status; 0 once joined */
            alkt__rfree(c);
            return 1;
        }
    }
    return 0;
}

ALKTDEF void alkt_relay_stats_get(const alkt_relay_server *r, alkt_relay_stats *st)
{
    uint32_t i;
    if (!st) return;
    memset(st, 0, sizeof *st);
    if (!r || !r->conns) return;
    *st = r->stats;
    st->conns = st->offers = st->waiting = st->pairs = 0;
    for (i = 0; i < r->cfg.max_conns; i++) {
        const alkt__rconn *c = &r->conns[i];
        if (!c->handle) continue;
        st->conns++;
        st->offers += c->state == ALKT__R_OFFER && !c->closing;
        st->waiting += c->state == ALKT__R_WAITING && !c->closing;
        st->pairs += c->state == ALKT__R_JOINED && c->other && c->kind == ALKT__RELAY_CLIENT;
    }
}

ALKTDEF void alkt_relay_wipe(alkt_relay_server *r)
{
    uint32_t i;
    if (!r) return;
    for (i = 0; r->conns && i < r->cfg.max_conns; i++)
        alkt__sha256_wipe(r->conns[i].ring, r->cfg.buffer_size);
    if (r->conns) alkt__sha256_wipe(r->conns, r->cfg.max_conns * sizeof(alkt__rconn));
    alkt__sha256_wipe(r, sizeof *r);
}

/* ---- client and gateway ---------------------------------------------------- */
enum { ALKT__P_FREE = 0, ALKT__P_KNOWN, ALKT__P_LIVE };
enum {
    ALKT__N_CONNECTING = 1, /* CONNECT asked, not connected yet */
    ALKT__N_RELAY_REQ,      /* client: the relay request out, status awaited */
    ALKT__N_OFFER,          /* gateway: a spare at a relay, status awaited */
    ALKT__N_ROUTE,          /* gateway: reading the client's HELLO */
    ALKT__N_SESSION,        /* a session's connection */
    ALKT__N_REFUSE          /* gateway: a REFUSE goes out, then it closes */
};
#define ALKT__HELLO_IN_MAX (ALKT_FRAME_HEADER + ALKT__HELLO_FIXED + ALKT_IDENTITY_MAX)

static int alkt__node_cfg(const alkt_node_config *c, alkt_node_config *o)
{
    alkt_session_config sc;
    size_t idn;
    *o = *c;
    if (!o->max_peers) o->max_peers = 8;
    if (!o->max_resources) o->max_resources = 32;
    if (!o->max_authorizations) o->max_authorizations = 64;
    if (!o->max_relays) o->max_relays = 4;
    if (!o->offers_per_relay) o->offers_per_relay = 2;
    if (!o->connect_timeout_ns) o->connect_timeout_ns = 5000000000ull;
    if (!o->backoff_min_ns) o->backoff_min_ns = 100000000ull;
    if (!o->backoff_max_ns) o->backoff_max_ns = 10000000000ull;
    if (!o->offer_refresh_ns) o->offer_refresh_ns = 10000000000ull;
    if (!o->pending_per_source) o->pending_per_source = 4;
    if (!c->id || !c->seed || c->seed_len < 32) return 0;
    idn = alkt__bounded_len(c->id, ALKT_ID_MAX + 1);
    if (idn == 0 || idn > ALKT_ID_MAX || alkt__check_id(c->id, idn) != ALKT_OK) return 0;
    if (o->max_peers > 1024 || o->max_resources > 65535 ||
        o->max_authorizations > 65535 || o->max_relays > 64 ||
        o->offers_per_relay > 16 || o->backoff_min_ns > o->backoff_max_ns)
        return 0;
    /* the session template with a stand-in secret: its limits are checked */
    sc = c->session;
    sc.secret = (const unsigned char *)"0123456789abcdef";
    sc.secret_len = 16;
    sc.identity = "x";
    sc.identity_len = 1;
    if (!alkt__cfg(&sc, &sc)) return 0;
    o->session = sc;
    o->session.secret = NULL;
    o->session.identity = NULL;
    return 1;
}

static uint32_t alkt__node_conns(const alkt_node_config *c)
{
    return 2 * c->max_peers + c->max_relays * c->offers_per_relay;
}

ALKTDEF size_t alkt_node_mem_size(const alkt_node_config *cfg)
{
    alkt_node_config c;
    alkt_session_config sc;
    size_t per;
    if (!cfg || !alkt__node_cfg(cfg, &c)) return 0;
    sc = c.session;
    sc.secret = (const unsigned char *)"0123456789abcdef";
    sc.secret_len = 16;
    sc.identity = "x";
    sc.identity_len = 1;
    per = alkt__align8(alkt_session_mem_size(&sc)) +
          alkt__align8((size_t)sc.max_channels * sizeof(alkt__grant));
    return alkt__align8((size_t)c.max_peers * sizeof(alkt__peer)) +
           (size_t)c.max_peers * per +
           alkt__align8((size_t)alkt__node_conns(&c) * sizeof(alkt__nconn)) +
           alkt__align8((size_t)c.max_resources * sizeof(alkt_resource)) +
           alkt__align8((size_t)c.max_authorizations * sizeof(alkt_authorization)) +
           alkt__align8((size_t)c.max_relays * sizeof(alkt_relay)) +
           alkt__align8((size_t)c.max_relays * (8 + 4)) +
           alkt__align8((size_t)c.max_authorizations * sizeof(alkt__fresh)) +
           alkt__align8((size_t)alkt__node_conns(&c) * 4) + 16;
}

static int alkt__node_init(alkt_node *n, const alkt_node_config *cfg, void *mem,
                           size_t mem_len, uint64_t now, int is_gateway)
{
    alkt_node_config c;
    alkt_session_config sc;
    unsigned char *p;
    uint32_t i;
    if (!n || !cfg || !mem || !alkt__node_cfg(cfg, &c)) return ALKT_ERR_ARG;
    if (mem_len < alkt_node_mem_size(cfg)) return ALKT_ERR_NOMEM;
    memset(n, 0, sizeof *n);
    n->is_gateway = is_gateway;
    n->cfg = c;
    n->cfg.seed = NULL;   /* kept as HMAC pads only */
    memcpy(n->id, c.id, alkt__bounded_len(c.id, ALKT_ID_MAX));
    alkt_hmac_sha256_init(&n->drbg, cfg->seed, cfg->seed_len);
    n->now = now;
    n->max_conns = alkt__node_conns(&c);
    sc = c.session;
    sc.secret = (const unsigned char *)"0123456789abcdef";
    sc.secret_len = 16;
    sc.identity = "x";
    sc.identity_len = 1;
    n->session_mem = alkt_session_mem_size(&sc);
    p = (unsigned char *)(((uintptr_t)mem + 7u) & ~(uintptr_t)7u);
    /* Cleared: what is read before it is written - the peers, each
     * grant's channel (0: free), the connections and the relay retry
     * state. Not the session memory (alkt_session_init lays it out when
     * a peer is taken), nor the resource, authorization and relay tables
     * (read only below their counts, filled by alkt_node_control): a
     * short-lived node spent more on clearing those than on the rest of
     * its life. */
    memset(p, 0, alkt__align8((size_t)c.max_peers * sizeof(alkt__peer)));
    n->peers = (alkt__peer *)(void *)p;
    p += alkt__align8((size_t)c.max_peers * sizeof(alkt__peer));
    for (i = 0; i < c.max_peers; i++) {
        uint32_t k;
        n->peers[i].grants = (alkt__grant *)(void *)p;
        for (k = 0; k < sc.max_channels; k++) n->peers[i].grants[k].channel = 0;
        p += alkt__align8((size_t)sc.max_channels * sizeof(alkt__grant));
        /* the session's memory follows; its pointer is p again at init */
        p += alkt__align8(n->session_mem);
    }
    memset(p, 0, (size_t)n->max_conns * sizeof(alkt__nconn));
    n->conns = (alkt__nconn *)(void *)p;
    p += alkt__align8((size_t)n->max_conns * sizeof(alkt__nconn));
    n->resources = (alkt_resource *)(void *)p;
    p += alkt__align8((size_t)c.max_resources * sizeof(alkt_resource));
    n->authorizations = (alkt_authorization *)(void *)p;
    p += alkt__align8((size_t)c.max_authorizations * sizeof(alkt_authorization));
    n->relays = (alkt_relay *)(void *)p;
    p += alkt__align8((size_t)c.max_relays * sizeof(alkt_relay));
    n->relay_retry_at = (uint64_t *)(void *)p;
    memset(p, 0, (size_t)c.max_relays * (8 + 4));
    n->relay_failures = (uint32_t *)(void *)(p + (size_t)c.max_relays * 8);
    p += alkt__align8((size_t)c.max_relays * (8 + 4));
    n->fresh = (alkt__fresh *)(void *)p;
    p += alkt__align8((size_t)c.max_authorizations * sizeof(alkt__fresh));
    n->closing = (uint32_t *)(void *)p;
    {
        /* the decoy key: HMAC(seed, "alkt2 decoy"), no one's secret */
        alkt__mac(&n->drbg, "alkt2 decoy", n->decoy, 0, NULL, 0, n->decoy);
    }
    return ALKT_OK;
}

ALKTDEF int alkt_client_init(alkt_client *c, const alkt_node_config *cfg,
                             void *mem, size_t mem_len, uint64_t now)
{
    return alkt__node_init(c, cfg, mem, mem_len, now, 0);
}

ALKTDEF int alkt_gateway_init(alkt_gateway *g, const alkt_node_config *cfg,
                              void *mem, size_t mem_len, uint64_t now)
{
    return alkt__node_init(g, cfg, mem, mem_len, now, 1);
}

static void *alkt__peer_mem(const alkt__peer *p, const alkt_node *n)
{
    return (unsigned char *)p->grants +
           alkt__align8((size_t)n->cfg.session.max_channels * sizeof(alkt__grant));
}

/* 32 bytes from the seed: HMAC(seed, "alkt1 drbg" || counter). */
static void alkt__draw(alkt_node *n, unsigned char out[32])
{
    unsigned char ctr[8];
    alkt__put64(ctr, n->drbg_counter++);
    alkt__mac(&n->drbg, "alkt1 drbg", ctr, 8, NULL, 0, out);
}

/* ---- authorization: one rule for the client's choice and the gateway's
 * check ---- */
static int alkt__ip_in(const alkt_ip *ip, const alkt_ip *net, unsigned prefix)
{
    unsigned full = prefix / 8, rest = prefix % 8;
    if (ip->family != net->family) return 0;
    if (memcmp(ip->bytes, net->bytes, full) != 0) return 0;
    if (rest) {
        unsigned mask = (0xffu << (8 - rest)) & 0xffu;
        if ((ip->bytes[full] & mask) != (net->bytes[full] & mask)) return 0;
    }
    return 1;
}

static int alkt__res_covers(const alkt_resource *r, const alkt_open_params *p)
{
    alkt_ip any;
    const alkt_ip *ip;
    uint16_t port;
    unsigned proto;
    size_t i;
    if (p->substrate == ALKT_SUBSTRATE_TCP) proto = ALKT_PROTO_TCP;
    else if (p->substrate == ALKT_SUBSTRATE_UDP) proto = ALKT_PROTO_UDP;
    else return 0;   /* unix sockets are no resource */
    if (p->kind == ALKT_OPEN_DIRECT) {
        if (p->host.kind != ALKT_HOST_IP) return 0;   /* names: resolve first */
        ip = &p->host.ip;
        port = p->port;
    } else if (p->kind == ALKT_OPEN_FORWARDED) {
        memset(&any, 0, sizeof any);
        any.family = 4;
        ip = p->host.kind == ALKT_HOST_IP ? &p->host.ip : &any;
        port = p->listen;
    } else {
        return 0;
    }
    if (!alkt__ip_in(ip, &r->network, r->prefix_len)) return 0;
    if (r->protocols && !(r->protocols & proto)) return 0;
    if (r->port_range_count == 0) return 1;
    for (i = 0; i < r->port_range_count && i < ALKT_PORT_RANGES_MAX; i++)
        if (port >= r->port_ranges[i].from && port <= r->port_ranges[i].to)
            return 1;
    return 0;
}

static int alkt__auth_live(const alkt_node *n, const alkt_authorization *a,
                           uint64_t now)
{
    uint64_t unix_s = (n->cfg.epoch_ns + now) / 1000000000u;
    return unix_s < a->expires;
}

static const alkt_authorization *alkt__auth_find(const alkt_node *n,
                                                 const char *client,
                                                 const char *resource,
                                                 uint64_t now)
{
    size_t i;
    for (i = 0; i < n->authorization_count; i++) {
        const alkt_authorization *a = &n->authorizations[i];
        if (strcmp(a->client, client) == 0 && strcmp(a->resource, resource) == 0 &&
            alkt__auth_live(n, a, now))
            return a;
    }
    return NULL;
}

/* 0 and *res when a live authorization of client covers p (on a gateway,
 * only its own resources count), else ALKT_CODE_UNAUTHORIZED. */
static int alkt__authorize(const alkt_node *n, const char *client,
                           const alkt_open_params *p, uint64_t now, size_t *res)
{
    size_t i;
    for (i = 0; i < n->resource_count; i++) {
        const alkt_resource *r = &n->resources[i];
        if (n->is_gateway && strcmp(r->gateway, n->id) != 0) continue;
        if (!alkt__res_covers(r, p)) continue;
        if (!alkt__auth_find(n, client, r->id, now)) continue;
        if (res) *res = i;
        return 0;
    }
    return (int)ALKT_CODE_UNAUTHORIZED;
}

ALKTDEF int alkt_gateway_authorize(const alkt_gateway *g, const char *client,
                                   const alkt_open_params *params,
                                   uint64_t now, size_t *resource)
{
    if (!g || !client || !params) return ALKT_ERR_ARG;
    return alkt__authorize(g, client, params, now, resource);
}

/* ---- connections ---- */
static alkt__nconn *alkt__nfind(const alkt_node *n, uint32_t h)
{
    uint32_t slot = h & 0xffffu;
    if (!n || !n->conns || slot == 0 || slot > n->max_conns) return NULL;
    if (n->conns[slot - 1].handle != h) return NULL;
    return &n->conns[slot - 1];
}

static alkt__nconn *alkt__nnew(alkt_node *n, int state)
{
    uint32_t i;
    for (i = 0; i < n->max_conns; i++) {
        alkt__nconn *c = &n->conns[i];
        if (c->handle) continue;
        memset(c, 0, sizeof *c);
        c->handle = alkt__handle(&n->gen, i);
        c->state = (uint8_t)state;
        c->deadline = n->now + n->cfg.connect_timeout_ns;
        return c;
    }
    return NULL;
}

static alkt__peer *alkt__npeer(alkt_node *n, const alkt__nconn *c)
{
    return c->peer ? &n->peers[c->peer - 1] : NULL;
}

static uint32_t alkt__nslot(const alkt_node *n, const alkt__nconn *c)
{
    return (uint32_t)(c - n->conns) + 1u;
}

/* The node is done with c: the app closes it at the CLOSE event. */
static void alkt__nclose(alkt_node *n, alkt__nconn *c, int code)
{
    alkt__peer *p = alkt__npeer(n, c);
    if (p && p->conn == alkt__nslot(n, c)) p->conn = 0;
    c->close_wanted = 1;
    c->close_code = code;
    c->connect_wanted = 0;
    c->route_wait = 0;
    c->state = 0;
    c->peer = 0;
    c->out_len = c->out_off = 0;
}

/* Client: the next attempt for p - at once after a working connection,
 * the next path after a failed one, backoff with jitter after a round. */
static void alkt__schedule(alkt_node *n, alkt__peer *p, int was_up,
                           const alkt__nconn *c, int code)
{
    uint32_t paths = 1u + (uint32_t)n->relay_count;
    if (!was_up) {   /* the app hears of every failed attempt */
        p->fail_event = 1;
        p->fail_code = code;
        if (c) {
            p->fail_ip = c->ip;
            p->fail_port = c->port;
        }
    }
    if (was_up) {
        p->failures = 0;
        p->path = 0;
        p->retry_at = n->now;
        return;
    }
    p->path++;
    if (p->path < paths) {
        p->retry_at = n->now;
        return;
    }
    p->path = 0;
    p->failures++;
    {
        unsigned char r[32];
        uint64_t b = n->cfg.backoff_min_ns, jitter;
        uint32_t k;
        for (k = 1; k < p->failures && b < n->cfg.backoff_max_ns; k++) b *= 2;
        if (b > n->cfg.backoff_max_ns) b = n->cfg.backoff_max_ns;
        alkt__draw(n, r);
        /* half fixed, half drawn: [b/2, b] */
        jitter = alkt__get64(r) % (b / 2 + 1);
        p->retry_at = n->now + b / 2 + jitter;
    }
}

/* Gateway: a session that lost its connection before it was established
 * is kept for the client's resume (its AUTH may be what was lost) as long
 * as the resume window, then forgotten; retry_at holds that moment. */
static void alkt__gateway_orphan(alkt_node *n, alkt__peer *p)
{
    if (p->state != ALKT__P_LIVE || p->conn) return;
    p->lost_at = n->now;
    if (!p->session.established_once) p->retry_at = n->now + p->session.resume_ns;
}

/* A connection of a peer ended (closed by the app or by us). */
static void alkt__nlost(alkt_node *n, alkt__nconn *c, int app_closed, int code)
{
    alkt__peer *p = alkt__npeer(n, c);
    int was_up = c->was_up;
    int session_conn = c->state == ALKT__N_SESSION;
    /* client: our HELLO went, nothing came back, the connection ended - a
     * gateway's silence to a HELLO that proves nothing to it */
    if (!n->is_gateway && p && session_conn && app_closed &&
        p->session.conn == ALKT__C_HANDSHAKE && !p->session.hs_heard &&
        p->session.ctl_off == p->session.ctl_len)
        code = ALKT_ERR_UNANSWERED;
    uint32_t relay = c->relay;
    int offer = n->is_gateway && (c->state == ALKT__N_OFFER ||
                                  (c->state == ALKT__N_CONNECTING && relay));
    alkt__nconn before = *c;
    if (app_closed) memset(c, 0, sizeof *c);
    else alkt__nclose(n, c, code);
    if (p && p->conn == (uint32_t)(c - n->conns) + 1u) p->conn = 0;
    if (p && session_conn) alkt_session_handle_disconnected(&p->session, n->now);
    if (p && !n->is_gateway && p->state == ALKT__P_LIVE)
        alkt__schedule(n, p, was_up, &before, code);
    if (p && n->is_gateway) alkt__gateway_orphan(n, p);
    if (offer && relay && relay <= n->cfg.max_relays) {
        uint32_t k = relay - 1, f = ++n->relay_failures[k];
        uint64_t b = n->cfg.backoff_min_ns;
        while (--f && b < n->cfg.backoff_max_ns) b *= 2;
        if (b > n->cfg.backoff_max_ns) b = n->cfg.backoff_max_ns;
        n->relay_retry_at[k] = n->now + b;
    }
}

/* Gateway: a connection that has proven nothing yet (its HELLO not whole,
 * or a REFUSE going out), the oldest - of the address from, when given. */
static alkt__nconn *alkt__oldest_unproven(alkt_node *n, const alkt_ip *from,
                                          uint32_t *count)
{
    alkt__nconn *o = NULL;
    uint32_t i;
    *count = 0;
    for (i = 0; i < n->max_conns; i++) {
        alkt__nconn *c = &n->conns[i];
        if (!c->handle || c->close_wanted || c->route_wait ||
            (c->state != ALKT__N_ROUTE && c->state != ALKT__N_REFUSE) ||
            c->relay)
            continue;
        if (from && (!c->has_source || c->ip.family != from->family ||
                     memcmp(c->ip.bytes, from->bytes, from->family == 4 ? 4 : 16) != 0))
            continue;
        ++*count;
        if (!o || c->accepted_at < o->accepted_at) o = c;
    }
    return o;
}

/* Gateway: an unproven connection makes room at once - its slot is free
 * now, its handle waits in the closing queue for its CLOSE event (code
 * ALKT_ERR_BUSY); bytes for it are taken and dropped meanwhile. 0 when
 * the queue is full (the app has not polled its events). */
static int alkt__nevict(alkt_node *n, alkt__nconn *c)
{
    uint32_t h = c->handle;
    if (n->closing_count >= n->max_conns) return 0;
    alkt__nlost(n, c, 1, ALKT_ERR_BUSY);
    n->closing[n->closing_count++] = h;
    return 1;
}

/* The index of handle h in the closing queue, or -1. */
static int alkt__nclosing(const alkt_node *n, uint32_t h)
{
    uint32_t i;
    for (i = 0; n && n->closing && h && i < n->closing_count; i++)
        if (n->closing[i] == h) return (int)i;
    return -1;
}

ALKTDEF int alkt_node_accept_from(alkt_node *n, uint64_t now, const alkt_ip *from,
                                  uint32_t *conn)
{
    alkt__nconn *c, *old;
    uint32_t pending;
    if (!n || !conn || !n->conns) return ALKT_ERR_ARG;
    *conn = 0;
    if (!n->is_gateway) return ALKT_ERR_STATE;
    if (now > n->now) n->now = now;
    /* one address holds at most pending_per_source unproven connections:
     * its oldest goes first */
    if (from && (old = alkt__oldest_unproven(n, from, &pending)) != NULL &&
        pending >= n->cfg.pending_per_source && !alkt__nevict(n, old))
        return ALKT_ERR_CHANNELS_FULL;
    c = alkt__nnew(n, ALKT__N_ROUTE);
    if (!c) {
        /* a full table: the oldest unproven connection makes room */
        old = alkt__oldest_unproven(n, NULL, &pending);
        if (!old || !alkt__nevict(n, old)) return ALKT_ERR_CHANNELS_FULL;
        c = alkt__nnew(n, ALKT__N_ROUTE);
        if (!c) return ALKT_ERR_CHANNELS_FULL;
    }
    c->accepted_at = n->now;
    if (from) {
        c->ip = *from;
        c->has_source = 1;
    }
    *conn = c->handle;
    return ALKT_OK;
}

ALKTDEF int alkt_node_accept(alkt_node *n, uint64_t now, uint32_t *conn)
{
    return alkt_node_accept_from(n, now, NULL, conn);
}

/* A relay request into out; an offer (rl set) ends with its freshness and
 * HMAC(offer key, "alkr2 offer" || the request up to the MAC). */
static size_t alkt__relay_request(unsigned char *out, unsigned kind,
                                  const char *token, const char *id,
                                  const alkt_relay *rl, uint64_t fresh)
{
    size_t tl = alkt__bounded_len(token, ALKT_TOKEN_MAX);
    size_t il = alkt__bounded_len(id, ALKT_ID_MAX);
    size_t n = 8 + tl + il;
    memcpy(out, alkt__relay_magic, 4);
    out[4] = ALKT__RELAY_VERSION;
    out[5] = (unsigned char)kind;
    out[6] = (unsigned char)tl;
    memcpy(out + 7, token, tl);
    out[7 + tl] = (unsigned char)il;
    memcpy(out + 8 + tl, id, il);
    if (rl) {
        alkt_hmac_sha256_ctx k;
        alkt__put64(out + n, fresh);
        alkt_hmac_sha256_init(&k, rl->offer_key, rl->offer_key_len);
        alkt__mac(&k, "alkr2 offer", out, n + 8, NULL, 0, out + n + 8);
        alkt__sha256_wipe(&k, sizeof k);
        n += 8 + 32;
    }
    return n;
}

static void alkt__session_start(alkt_node *n, alkt__nconn *c, alkt__peer *p)
{
    unsigned char nonce[32];
    alkt__draw(n, nonce);
    c->state = ALKT__N_SESSION;
    p->conn = alkt__nslot(n, c);
    /* a client's HELLOs are fresher than every one the node sent before,
     * whichever session sent it (a session keyed again starts over) */
    if (!n->is_gateway && p->session.fresh_sent < n->fresh_sent)
        p->session.fresh_sent = n->fresh_sent;
    (void)alkt_session_connect(&p->session, n->now, nonce);
    alkt__sha256_wipe(nonce, sizeof nonce);
    if (!n->is_gateway) n->fresh_sent = p->session.fresh_sent;
}

ALKTDEF int alkt_node_handle_connected(alkt_node *n, uint32_t conn, uint64_t now)
{
    alkt__nconn *c = alkt__nfind(n, conn);
    if (!c) return ALKT_ERR_ARG;
    if (now > n->now) n->now = now;
    if (c->state != ALKT__N_CONNECTING) return ALKT_ERR_STATE;
    if (c->relay) {
        const alkt_relay *rl = &n->relays[c->relay - 1];
        alkt__peer *p = alkt__npeer(n, c);
        if (n->is_gateway)   /* each offer fresher than the last */
            n->fresh_sent = n->cfg.epoch_ns + n->now > n->fresh_sent
                                ? n->cfg.epoch_ns + n->now : n->fresh_sent + 1;
        c->out_len = alkt__relay_request(c->out,
                                         n->is_gateway ? ALKT__RELAY_OFFER : ALKT__RELAY_CLIENT,
                                         rl->token, n->is_gateway ? n->id : p->id,
                                         n->is_gateway ? rl : NULL, n->fresh_sent);
        c->out_off = 0;
        c->state = n->is_gateway ? ALKT__N_OFFER : ALKT__N_RELAY_REQ;
        c->refresh_at = n->now + n->cfg.offer_refresh_ns;
        if (n->is_gateway) {
            /* refreshed, and replaced when nobody joined it for four
             * refresh periods: a spare dropped silently on the way (a NAT
             * or a middlebox forgetting it) is never told to us */
            c->deadline = n->now + 4 * n->cfg.offer_refresh_ns;
        }
        return ALKT_OK;
    }
    alkt__session_start(n, c, alkt__npeer(n, c));
    return ALKT_OK;
}

ALKTDEF void alkt_node_handle_closed(alkt_node *n, uint32_t conn, uint64_t now)
{
    alkt__nconn *c = alkt__nfind(n, conn);
    int q = alkt__nclosing(n, conn);
    if (q >= 0) n->closing[q] = n->closing[--n->closing_count];   /* closed already */
    if (!c) return;
    if (now > n->now) n->now = now;
    alkt__nlost(n, c, 1, ALKT_ERR_NOT_CONNECTED);
}

/* Gateway: the freshness entry of (client, resource); with make, one is
 * made (in the place of one no authorization names any more, when full). */
static alkt__fresh *alkt__fresh_find(alkt_node *n, const char *client,
                                     const char *resource, int make)
{
    size_t i;
    for (i = 0; i < n->fresh_count; i++)
        if (strcmp(n->fresh[i].client, client) == 0 &&
            strcmp(n->fresh[i].resource, resource) == 0)
            return &n->fresh[i];
    if (!make) return NULL;
    if (n->fresh_count == n->cfg.max_authorizations) {
        for (i = 0; i < n->fresh_count; i++) {
            size_t k;
            for (k = 0; k < n->authorization_count; k++)
                if (strcmp(n->authorizations[k].client, n->fresh[i].client) == 0 &&
                    strcmp(n->authorizations[k].resource, n->fresh[i].resource) == 0)
                    break;
            if (k == n->authorization_count) break;
        }
        if (i == n->fresh_count) return NULL;   /* (cannot be: fewer authorizations) */
    } else {
        i = n->fresh_count++;
    }
    memset(&n->fresh[i], 0, sizeof n->fresh[i]);
    memcpy(n->fresh[i].client, client, strlen(client));
    memcpy(n->fresh[i].resource, resource, strlen(resource));
    return &n->fresh[i];
}

/* Gateway: a proven client turned down - the REFUSE (MACed under the
 * authorization's secret, bound to its HELLO) goes out, then the
 * connection closes. */
static void alkt__nrefuse(alkt__nconn *c, const alkt_authorization *a, int code)
{
    alkt_hmac_sha256_ctx k;
    unsigned char hash[32];
    alkt__hello_hash(c->in + ALKT_FRAME_HEADER, c->in_len - ALKT_FRAME_HEADER, hash);
    alkt_hmac_sha256_init(&k, a->secret, a->secret_len);
    c->out_len = alkt__refuse_frame(&k, hash, code, c->out);
    alkt__sha256_wipe(&k, sizeof k);
    c->out_off = 0;
    c->state = ALKT__N_REFUSE;
    c->route_wait = 0;
    c->close_code = code;
    c->in_len = 0;
}

/* Gateway: client's established sessions end (but keep's, when given):
 * it started a new one. */
static void alkt__end_older(alkt_node *n, const alkt__peer *keep, const char *client)
{
    uint32_t i;
    for (i = 0; i < n->cfg.max_peers; i++) {
        alkt__peer *q = &n->peers[i];
        if (q == keep || q->state != ALKT__P_LIVE || !q->session.established_once ||
            q->session.state == ALKT__S_CLOSED || strcmp(q->id, client) != 0)
            continue;
        (void)alkt_session_close(&q->session, (uint16_t)ALKT_CODE_SHUTDOWN);
    }
}

/* Gateway: a connection's HELLO is whole (c->in). Nothing is said or kept
 * for a HELLO that does not prove a live authorization's secret, fresh:
 * the connection just closes - a name we do not serve and a wrong MAC
 * alike (the one checked under a decoy key, so both cost the same). A
 * proven client gets its session (a new one, or the one it resumes, its
 * token proven before its old connection is touched), or a REFUSE saying
 * why not. route_wait: proven before, waiting for a slot. */
static void alkt__route(alkt_node *n, alkt__nconn *c)
{
    const unsigned char *h = c->in + ALKT_FRAME_HEADER;
    size_t hn = c->in_len - ALKT_FRAME_HEADER;
    size_t idl = h[ALKT__HELLO_IDLEN], cut, res;
    char client[ALKT_ID_MAX + 1], resource[ALKT_ID_MAX + 1];
    const alkt_authorization *a = NULL;
    alkt__peer *p = NULL;
    alkt_session_config sc;
    uint32_t i;
    int named;
    for (cut = 0; cut < idl && h[ALKT__HELLO_FIXED + cut] != '/'; cut++) {}
    named = cut > 0 && cut < idl - 1 && cut <= ALKT_ID_MAX && idl - cut - 1 <= ALKT_ID_MAX &&
            alkt__check_id((const char *)h + ALKT__HELLO_FIXED, cut) == ALKT_OK &&
            alkt__check_id((const char *)h + ALKT__HELLO_FIXED + 1 + cut, idl - cut - 1) == ALKT_OK;
    if (named) {
        memcpy(client, h + ALKT__HELLO_FIXED, cut);
        client[cut] = 0;
        memcpy(resource, h + ALKT__HELLO_FIXED + 1 + cut, idl - cut - 1);
        resource[idl - cut - 1] = 0;
        for (res = 0; res < n->resource_count; res++)
            if (strcmp(n->resources[res].id, resource) == 0 &&
                strcmp(n->resources[res].gateway, n->id) == 0)
                break;
        if (res < n->resource_count) a = alkt__auth_find(n, client, resource, n->now);
    }
    if (!c->route_wait) {
        alkt_hmac_sha256_ctx k;
        alkt__fresh *f = a ? alkt__fresh_find(n, client, resource, 0) : NULL;
        uint64_t fresh = 0;
        int rc;
        alkt_hmac_sha256_init(&k, a ? a->secret : n->decoy,
                              a ? a->secret_len : sizeof n->decoy);
        rc = alkt__hello_check(&k, h, hn, f ? f->last : 0, &fresh);
        alkt__sha256_wipe(&k, sizeof k);
        if (rc == ALKT_OK && !a) rc = ALKT_ERR_AUTH;
        if (rc != ALKT_OK) {
            alkt__nlost(n, c, 0, rc);   /* silence */
            return;
        }
        if (!f) f = alkt__fresh_find(n, client, resource, 1);
        if (f) f->last = fresh;
        if (h[7] & 1) {   /* a resume: the live session with that id */
            for (i = 0; i < n->cfg.max_peers; i++) {
                alkt__peer *q = &n->peers[i];
                if (q->state == ALKT__P_LIVE && strcmp(q->id, client) == 0 &&
                    alkt__resume_ok(&q->session, h, fresh)) {
                    p = q;
                    break;
                }
            }
            if (!p) {   /* a session we do not have, or a token not its */
                alkt__nrefuse(c, a, ALKT_ERR_RESUME_REFUSED);
                return;
            }
            if (p->conn) {   /* proven: the old connection goes */
                alkt__nconn *old = &n->conns[p->conn - 1];
                p->conn = 0;
                alkt__nclose(n, old, ALKT_ERR_NOT_CONNECTED);
            }
        }
    } else if (!a) {
        alkt__nlost(n, c, 0, ALKT_ERR_AUTH);   /* revoked while it waited */
        return;
    }
    if (!p) {
        /* A new session: the client started again, and a client keeps one
         * session per gateway, so every session of its own here is over -
         * one never established gives its slot at once; established ones
         * end (their channels too, the app hears PEER_DOWN) when the new
         * one is established, so a new attempt that fails its handshake
         * takes nothing - or at once when only their slots are left, the
         * new one waiting for one of them to go. Everyone else's sessions
         * keep their slots until their resume windows end: with none free
         * the client is told ALKT_ERR_BUSY. */
        int older = 0;
        for (i = 0; i < n->cfg.max_peers; i++) {
            alkt__peer *q = &n->peers[i];
            if (q->state != ALKT__P_LIVE || strcmp(q->id, client) != 0) continue;
            if (q->session.established_once) {
                older = 1;
                continue;
            }
            if (q->conn) {
                alkt__nconn *old = &n->conns[q->conn - 1];
                q->conn = 0;
                alkt__nclose(n, old, ALKT_ERR_NOT_CONNECTED);
            }
            q->state = ALKT__P_FREE;
        }
        for (i = 0; i < n->cfg.max_peers && !p; i++)
            if (n->peers[i].state == ALKT__P_FREE) p = &n->peers[i];
        /* then a slot held by a handshake that never finished and has no
         * connection (a HELLO replayed to a gateway that started again
         * and forgot its freshness makes one; a client whose AUTH was
         * lost loses nothing: a new session follows its refused resume) */
        for (i = 0; i < n->cfg.max_peers && !p; i++) {
            alkt__peer *q = &n->peers[i];
            if (q->state == ALKT__P_LIVE && !q->session.established_once && !q->conn) {
                q->state = ALKT__P_FREE;
                p = q;
            }
        }
        if (!p && older) {
            alkt__end_older(n, NULL, client);
            c->route_wait = 1;
            return;
        }
        if (!p) {
            alkt__nrefuse(c, a, ALKT_ERR_BUSY);
            return;
        }
        sc = n->cfg.session;
        sc.is_server = 1;
        sc.secret = a->secret;
        sc.secret_len = a->secret_len;
        sc.identity = n->id;
        sc.identity_len = strlen(n->id);
        sc.freshness_floor = alkt__get64(h + ALKT__HELLO_FRESH) - 1;   /* this one */
        if (alkt_session_init(&p->session, &sc, alkt__peer_mem(p, n), n->session_mem,
                              n->now) != ALKT_OK) {
            alkt__nlost(n, c, 0, ALKT_ERR_ARG);
            return;
        }
        memset(p->grants, 0, (size_t)sc.max_channels * sizeof(alkt__grant));
        p->state = ALKT__P_LIVE;
        p->supersedes = (uint8_t)older;
        memcpy(p->id, client, sizeof client);
        memcpy(p->key, resource, sizeof resource);
    }
    c->route_wait = 0;
    c->peer = (uint32_t)(p - n->peers) + 1u;
    alkt__session_start(n, c, p);
    (void)alkt_session_handle_input(&p->session, c->in, c->in_len, n->now);
    c->in_len = 0;
}

ALKTDEF ptrdiff_t alkt_node_handle_input(alkt_node *n, uint32_t conn,
                                         const void *data, size_t len,
                                         uint64_t now)
{
    alkt__nconn *c = alkt__nfind(n, conn);
    const unsigned char *d = (const unsigned char *)data;
    size_t used = 0;
    if (!c && data && alkt__nclosing(n, conn) >= 0) return (ptrdiff_t)len;   /* evicted */
    if (!c || (!data && len)) return ALKT_ERR_ARG;
    if (now > n->now) n->now = now;
    while (used < len && c->handle == conn && !c->close_wanted) {
        if (c->state == ALKT__N_RELAY_REQ || c->state == ALKT__N_OFFER) {
            /* the relay's status byte: 0 joined, else it refuses */
            if (d[used++] != ALKT__RST_JOINED) {
                alkt__nlost(n, c, 0, d[used - 1] <= ALKT__RST_BAD_TOKEN ||
                                             d[used - 1] == ALKT__RST_UNPROVEN
                                         ? ALKT_ERR_RELAY_REFUSED : ALKT_ERR_NO_OFFER);
                break;
            }
            if (c->state == ALKT__N_OFFER) {
                unsigned k = c->relay - 1;
                n->relay_failures[k] = 0;
                c->out[c->out_len++] = 'S';   /* our refreshes end here */
                c->state = ALKT__N_ROUTE;
                c->relay = 0;                  /* an inbound connection now */
                c->accepted_at = n->now;
                c->deadline = n->now + n->cfg.connect_timeout_ns;
            } else {
                alkt__session_start(n, c, alkt__npeer(n, c));
            }
        } else if (c->state == ALKT__N_ROUTE && c->route_wait) {
            /* a client says nothing after its HELLO until we answer */
            alkt__nlost(n, c, 0, ALKT_ERR_PROTOCOL);
            break;
        } else if (c->state == ALKT__N_ROUTE) {
            size_t need = ALKT_FRAME_HEADER, k;
            if (c->in_len >= ALKT_FRAME_HEADER) need += alkt__get16(c->in + 2);
            k = need - c->in_len < len - used ? need - c->in_len : len - used;
            memcpy(c->in + c->in_len, d + used, k);
            c->in_len += k;
            used += k;
            if (c->in_len == ALKT_FRAME_HEADER) {
                size_t pl = alkt__get16(c->in + 2);
                if (c->in[0] != ALKT_FRAME_HELLO || c->in[1] != 0 ||
                    alkt__get32(c->in + 4) != 0 ||
                    pl <= ALKT__HELLO_FIXED + ALKT__HELLO_MAC || pl > ALKT__HELLO_MAX) {
                    alkt__nlost(n, c, 0, ALKT_ERR_PROTOCOL);
                    break;
                }
            } else if (c->in_len > ALKT_FRAME_HEADER && c->in_len == need) {
                if (c->in[ALKT_FRAME_HEADER + ALKT__HELLO_IDLEN] !=
                    need - ALKT_FRAME_HEADER - ALKT__HELLO_FIXED - ALKT__HELLO_MAC) {
                    alkt__nlost(n, c, 0, ALKT_ERR_PROTOCOL);
                    break;
                }
                alkt__route(n, c);
            }
        } else if (c->state == ALKT__N_SESSION) {
            alkt__peer *p = alkt__npeer(n, c);
            (void)alkt_session_handle_input(&p->session, d + used, len - used, n->now);
            used = len;
        } else {
            used = len;   /* not connected yet, or going: nothing to read */
        }
    }
    return (ptrdiff_t)len;
}

ALKTDEF size_t alkt_node_transmit_peek(alkt_node *n, uint32_t conn,
                                       const void **data)
{
    alkt__nconn *c = alkt__nfind(n, conn);
    if (data) *data = NULL;
    if (!c || !data || c->close_wanted) return 0;
    c->out_peeked = 0;
    if (c->out_off < c->out_len) {
        *data = c->out + c->out_off;
        c->out_peeked = c->out_len - c->out_off;
        return c->out_peeked;
    }
    if (c->state == ALKT__N_SESSION) {
        alkt__peer *p = alkt__npeer(n, c);
        return alkt_session_transmit_peek(&p->session, data);
    }
    return 0;
}

ALKTDEF int alkt_node_transmit_done(alkt_node *n, uint32_t conn, size_t n_sent)
{
    alkt__nconn *c = alkt__nfind(n, conn);
    if (!c) return !n_sent && alkt__nclosing(n, conn) >= 0 ? ALKT_OK : ALKT_ERR_ARG;
    if (c->out_peeked) {
        if (n_sent > c->out_peeked) return ALKT_ERR_ARG;
        c->out_peeked = 0;
        c->out_off += n_sent;
        if (c->out_off == c->out_len) {
            c->out_off = c->out_len = 0;
            if (c->state == ALKT__N_REFUSE) alkt__nclose(n, c, c->close_code);
        }
        return ALKT_OK;
    }
    if (c->state == ALKT__N_SESSION)
        return alkt_session_transmit_done(&alkt__npeer(n, c)->session, n_sent);
    return n_sent ? ALKT_ERR_ARG : ALKT_OK;
}

/* ---- the node's own work: paths, offers, expiry ---- */
static int alkt__client_key(alkt_node *c, alkt__peer *p);

static void alkt__client_work(alkt_node *n)
{
    uint32_t i;
    for (i = 0; i < n->cfg.max_peers; i++) {
        alkt__peer *p = &n->peers[i];
        alkt__nconn *c;
        uint32_t paths = 1u + (uint32_t)n->relay_count, path;
        if (p->state != ALKT__P_LIVE || p->conn || n->now < p->retry_at ||
            p->session.state == ALKT__S_CLOSED)
            continue;
        /* a session never established has nothing to keep: it takes the
         * control plane's current secret (it may have changed since) */
        if (!p->session.established_once && alkt__client_key(n, p) != ALKT_OK) {
            p->state = ALKT__P_KNOWN;   /* no authorization left */
            p->fail_event = 1;
            p->fail_code = ALKT_ERR_AUTH;
            p->fail_ip = p->ip;
            p->fail_port = p->port;
            continue;
        }
        c = alkt__nnew(n, ALKT__N_CONNECTING);
        if (!c) return;
        /* path 0 is the preferred one: direct, or with relay_first the
         * first relay (and direct last) */
        path = n->cfg.relay_first ? (p->path + 1) % paths : p->path;
        c->peer = i + 1;
        c->connect_wanted = 1;
        p->conn = alkt__nslot(n, c);
        if (path == 0) {
            c->ip = p->ip;
            c->port = p->port;
        } else {
            const alkt_relay *rl = &n->relays[path - 1];
            if (rl->address.kind != ALKT_HOST_IP) {   /* names: not ours */
                memset(c, 0, sizeof *c);
                p->conn = 0;
                alkt__schedule(n, p, 0, NULL, ALKT_ERR_ARG);
                continue;
            }
            c->relay = path;
            c->ip = rl->address.ip;
            c->port = rl->port;
        }
    }
}

static void alkt__route(alkt_node *n, alkt__nconn *c);

static void alkt__gateway_work(alkt_node *n)
{
    size_t k;
    uint32_t i;
    for (i = 0; i < n->max_conns; i++) {
        alkt__nconn *c = &n->conns[i];
        uint32_t j;
        if (!c->handle || !c->route_wait || c->close_wanted) continue;
        for (j = 0; j < n->cfg.max_peers; j++)
            if (n->peers[j].state == ALKT__P_FREE) {
                alkt__route(n, c);   /* a slot came free */
                break;
            }
    }
    for (k = 0; k < n->relay_count; k++) {
        const alkt_relay *rl = &n->relays[k];
        uint32_t have = 0;
        /* (a relay we hold no offer key for takes no offer from us) */
        if (rl->address.kind != ALKT_HOST_IP || !rl->offer_key_len ||
            n->now < n->relay_retry_at[k])
            continue;
        for (i = 0; i < n->max_conns; i++)
            have += n->conns[i].handle && !n->conns[i].close_wanted &&
                    n->conns[i].relay == k + 1;
        while (have < n->cfg.offers_per_relay) {
            alkt__nconn *c = alkt__nnew(n, ALKT__N_CONNECTING);
            if (!c) return;
            c->relay = (uint32_t)k + 1;
            c->ip = rl->address.ip;
            c->port = rl->port;
            c->connect_wanted = 1;
            have++;
        }
    }
}

/* Every granted channel checked again; what is no longer covered is reset. */
static void alkt__recheck(alkt_node *n)
{
    uint32_t i, k;
    if (!n->is_gateway) return;
    for (i = 0; i < n->cfg.max_peers; i++) {
        alkt__peer *p = &n->peers[i];
        if (p->state != ALKT__P_LIVE) continue;
        for (k = 0; k < p->session.max_channels; k++) {
            alkt__grant *gr = &p->grants[k];
            if (!gr->channel) continue;
            if (alkt__authorize(n, p->id, &gr->params, n->now, NULL) != 0) {
                (void)alkt_channel_reset(&p->session, gr->channel,
                                         (uint16_t)ALKT_CODE_REVOKED);
                gr->channel = 0;
            }
        }
    }
}

static alkt__grant *alkt__grant_find(alkt__peer *p, uint32_t channel)
{
    uint32_t k;
    for (k = 0; k < p->session.max_channels; k++)
        if (p->grants[k].channel == channel) return &p->grants[k];
    return NULL;
}

ALKTDEF int alkt_node_control(alkt_node *n, const alkt_control *ctl, uint64_t now)
{
    size_t i, j;
    if (!n || !ctl || !n->peers) return ALKT_ERR_ARG;
    if (now > n->now) n->now = now;
    if ((ctl->has_resources && ctl->resource_count > n->cfg.max_resources) ||
        (ctl->has_authorizations && ctl->authorization_count > n->cfg.max_authorizations) ||
        (ctl->has_relays && ctl->relay_count > n->cfg.max_relays))
        return ALKT_ERR_TOO_MANY;
    if ((ctl->has_resources && ctl->resource_count && !ctl->resources) ||
        (ctl->has_authorizations && ctl->authorization_count && !ctl->authorizations) ||
        (ctl->has_relays && ctl->relay_count && !ctl->relays) ||
        (ctl->has_revocations && ctl->revocation_count && !ctl->revocations))
        return ALKT_ERR_ARG;
    if (ctl->has_resources) {
        if (ctl->resource_count)
            memcpy(n->resources, ctl->resources, ctl->resource_count * sizeof(alkt_resource));
        n->resource_count = ctl->resource_count;
    }
    if (ctl->has_authorizations) {
        if (ctl->authorization_count)
            memcpy(n->authorizations, ctl->authorizations,
                   ctl->authorization_count * sizeof(alkt_authorization));
        n->authorization_count = ctl->authorization_count;
    }
    if (ctl->has_relays) {
        if (ctl->relay_count)
            memcpy(n->relays, ctl->relays, ctl->relay_count * sizeof(alkt_relay));
        n->relay_count = ctl->relay_count;
        memset(n->relay_retry_at, 0, n->cfg.max_relays * sizeof(uint64_t));
        memset(n->relay_failures, 0, n->cfg.max_relays * sizeof(uint32_t));
    }
    if (ctl->has_revocations)
        for (i = 0; i < ctl->revocation_count; i++)
            for (j = 0; j < n->authorization_count;) {
                alkt_authorization *a = &n->authorizations[j];
                if (strcmp(a->client, ctl->revocations[i].client) == 0 &&
                    strcmp(a->resource, ctl->revocations[i].resource) == 0) {
                    *a = n->authorizations[--n->authorization_count];
                } else {
                    j++;
                }
            }
    alkt__recheck(n);
    return ALKT_OK;
}

ALKTDEF void alkt_node_wipe(alkt_node *n)
{
    uint32_t i;
    if (!n) return;
    for (i = 0; n->peers && i < n->cfg.max_peers; i++)
        if (n->peers[i].state == ALKT__P_LIVE || n->peers[i].session.chans)
            alkt_session_wipe(&n->peers[i].session);
    if (n->authorizations)
        alkt__sha256_wipe(n->authorizations,
                          n->cfg.max_authorizations * sizeof(alkt_authorization));
    if (n->relays) alkt__sha256_wipe(n->relays, n->cfg.max_relays * sizeof(alkt_relay));
    if (n->conns) alkt__sha256_wipe(n->conns, n->max_conns * sizeof(alkt__nconn));
    alkt__sha256_wipe(n, sizeof *n);
}

ALKTDEF int alkt_client_add_gateway(alkt_client *c, const char *gateway_id,
                                    const alkt_ip *ip, uint16_t port)
{
    uint32_t i;
    size_t idn;
    alkt__peer *free_slot = NULL;
    if (!c || !gateway_id || !ip || !port || c->is_gateway || !c->peers)
        return ALKT_ERR_ARG;
    idn = alkt__bounded_len(gateway_id, ALKT_ID_MAX + 1);
    if (idn == 0 || idn > ALKT_ID_MAX || alkt__check_id(gateway_id, idn) != ALKT_OK ||
        alkt__check_ip(ip) != ALKT_OK)
        return ALKT_ERR_ARG;
    for (i = 0; i < c->cfg.max_peers; i++) {
        alkt__peer *p = &c->peers[i];
        if (p->state != ALKT__P_FREE && strcmp(p->id, gateway_id) == 0) {
            p->ip = *ip;      /* a new address: the next attempt uses it */
            p->port = port;
            return ALKT_OK;
        }
        if (p->state == ALKT__P_FREE && !free_slot) free_slot = p;
    }
    if (!free_slot) return ALKT_ERR_TOO_MANY;
    memcpy(free_slot->id, gateway_id, idn + 1);
    free_slot->ip = *ip;
    free_slot->port = port;
    free_slot->state = ALKT__P_KNOWN;
    return ALKT_OK;
}

/* Client: a fresh session for p, keyed by the secret of the live
 * authorization of p->key's resource, named "client/resource". */
static int alkt__client_key(alkt_node *c, alkt__peer *p)
{
    const alkt_authorization *a = alkt__auth_find(c, c->id, p->key, c->now);
    alkt_session_config sc = c->cfg.session;
    char ident[ALKT_IDENTITY_MAX + 1];
    size_t il = strlen(c->id), rl = strlen(p->key);
    if (!a) return ALKT_ERR_AUTH;
    memcpy(ident, c->id, il);
    ident[il] = '/';
    memcpy(ident + il + 1, p->key, rl);
    sc.is_server = 0;
    sc.secret = a->secret;
    sc.secret_len = a->secret_len;
    sc.identity = ident;
    sc.identity_len = il + 1 + rl;
    sc.epoch_ns = c->cfg.epoch_ns;   /* HELLOs fresh across restarts */
    return alkt_session_init(&p->session, &sc, alkt__peer_mem(p, c), c->session_mem, c->now);
}

ALKTDEF int alkt_client_open(alkt_client *c, const alkt_open_params *params,
                             uint64_t now, uint32_t *peer, uint32_t *channel,
                             int *code)
{
    size_t res;
    uint32_t i;
    alkt__peer *p = NULL;
    const alkt_resource *r;
    if (code) *code = 0;
    if (!c || !params || !peer || !channel || c->is_gateway || !c->peers)
        return ALKT_ERR_ARG;
    *peer = *channel = 0;
    if (now > c->now) c->now = now;
    if (alkt__authorize(c, c->id, params, c->now, &res) != 0) {
        if (code) *code = (int)ALKT_CODE_UNAUTHORIZED;
        return ALKT_ERR_NO_CHANNEL;
    }
    r = &c->resources[res];
    for (i = 0; i < c->cfg.max_peers; i++)
        if (c->peers[i].state != ALKT__P_FREE && strcmp(c->peers[i].id, r->gateway) == 0)
            p = &c->peers[i];
    if (!p) {
        if (code) *code = (int)ALKT_CODE_NO_PATH;
        return ALKT_ERR_NO_CHANNEL;
    }
    *peer = (uint32_t)(p - c->peers) + 1u;
    if (p->state == ALKT__P_KNOWN) {
        /* the first open to this gateway: its session is keyed by this
         * resource's authorization */
        memcpy(p->key, r->id, strlen(r->id) + 1);
        if (alkt__client_key(c, p) != ALKT_OK) return ALKT_ERR_ARG;
        p->state = ALKT__P_LIVE;
        p->path = p->failures = 0;
        p->retry_at = c->now;
        return ALKT_ERR_NOT_CONNECTED;
    }
    if (!p->session.established_once) return ALKT_ERR_NOT_CONNECTED;
    return alkt_channel_open(&p->session, params, channel);
}

/* An open the peer withdrew (reset) before we answered it. */
static int alkt__withdrawn(alkt_session *s, uint32_t channel)
{
    const alkt__chan *c = alkt__find(s, channel);
    return !c || c->state != ALKT_CHANNEL_INCOMING;
}

ALKTDEF int alkt_client_answer(alkt_client *c, uint32_t peer, uint32_t channel,
                               int ok, uint16_t code)
{
    alkt_session *s = alkt_node_session(c, peer);
    if (!s || c->is_gateway) return ALKT_ERR_ARG;
    if (alkt__withdrawn(s, channel)) return ALKT_ERR_RESET;
    return ok ? alkt_channel_accept(s, channel, NULL)
              : alkt_channel_refuse(s, channel, code, "refused by the client");
}

ALKTDEF void alkt_client_roamed(alkt_client *c, uint64_t now)
{
    uint32_t i;
    if (!c || !c->peers || c->is_gateway) return;
    if (now > c->now) c->now = now;
    for (i = 0; i < c->cfg.max_peers; i++) {
        alkt__peer *p = &c->peers[i];
        if (p->state != ALKT__P_LIVE) continue;
        if (p->conn) {
            alkt__nconn *k = &c->conns[p->conn - 1];
            int session_conn = k->state == ALKT__N_SESSION;
            alkt__nclose(c, k, 0);
            if (session_conn) alkt_session_handle_disconnected(&p->session, c->now);
        }
        p->failures = 0;
        p->path = 0;
        p->retry_at = c->now;
    }
}

ALKTDEF alkt_session *alkt_node_session(alkt_node *n, uint32_t peer)
{
    if (!n || !n->peers || peer == 0 || peer > n->cfg.max_peers ||
        n->peers[peer - 1].state != ALKT__P_LIVE)
        return NULL;
    return &n->peers[peer - 1].session;
}

/* The gateway's answer to an open it asked the app about: accept (with a
 * listen reply for forwarded opens) or refuse, releasing its grant. */
static int alkt__gateway_answer(alkt_gateway *g, uint32_t peer, uint32_t channel, int ok,
                                const alkt_listen_reply *reply, uint16_t code,
                                const char *reason)
{
    alkt_session *s = alkt_node_session(g, peer);
    alkt__grant *gr;
    if (!s || !g->is_gateway) return ALKT_ERR_ARG;
    if (alkt__withdrawn(s, channel)) return ALKT_ERR_RESET;
    if (ok) return alkt_channel_accept(s, channel, reply);
    gr = alkt__grant_find(&g->peers[peer - 1], channel);
    if (gr) gr->channel = 0;
    return alkt_channel_refuse(s, channel, code, reason);
}

ALKTDEF int alkt_gateway_target_result(alkt_gateway *g, uint32_t peer,
                                       uint32_t channel, int ok, uint16_t code)
{
    return alkt__gateway_answer(g, peer, channel, ok, NULL, code, "the target refused");
}

ALKTDEF int alkt_gateway_listen_result(alkt_gateway *g, uint32_t peer,
                                       uint32_t channel,
                                       const alkt_listen_reply *reply,
                                       uint16_t code)
{
    return alkt__gateway_answer(g, peer, channel, reply != NULL, reply, code,
                                "the gateway could not listen");
}

ALKTDEF int alkt_gateway_forward(alkt_gateway *g, uint32_t peer,
                                 uint32_t listen_channel,
                                 const alkt_ip *origin, uint32_t *channel)
{
    alkt_session *s = alkt_node_session(g, peer);
    alkt__grant *lg, *gr;
    alkt_open_params op;
    int rc;
    if (!s || !g->is_gateway || !origin || !channel) return ALKT_ERR_ARG;
    *channel = 0;
    lg = alkt__grant_find(&g->peers[peer - 1], listen_channel);
    if (!lg || lg->params.kind != ALKT_OPEN_FORWARDED) return ALKT_ERR_NO_CHANNEL;
    if (alkt__authorize(g, g->peers[peer - 1].id, &lg->params, g->now, NULL) != 0)
        return ALKT_ERR_NO_CHANNEL;
    gr = alkt__grant_find(&g->peers[peer - 1], 0);
    if (!gr) return ALKT_ERR_CHANNELS_FULL;
    memset(&op, 0, sizeof op);
    op.kind = ALKT_OPEN_FORWARDED;
    op.substrate = lg->params.substrate;
    op.listen = lg->params.listen;
    op.host.kind = ALKT_HOST_IP;
    op.host.ip = *origin;
    rc = alkt_channel_open(s, &op, channel);
    if (rc != ALKT_OK) return rc;
    gr->channel = *channel;
    gr->params = lg->params;   /* checked as the listen it came through */
    return ALKT_OK;
}

static uint64_t alkt__next_expiry(const alkt_node *n)
{
    uint64_t t = UINT64_MAX;
    size_t i;
    for (i = 0; i < n->authorization_count; i++) {
        uint64_t e = n->authorizations[i].expires, at;
        /* (an expiry past 2^64 ns never comes: no wake-up for it) */
        if (e > UINT64_MAX / 1000000000u) continue;
        at = e * 1000000000u;
        at = at > n->cfg.epoch_ns ? at - n->cfg.epoch_ns : 0;
        if (at > n->expiry_checked && at < t) t = at;
    }
    return t;
}

ALKTDEF uint64_t alkt_node_poll_timeout(const alkt_node *n)
{
    uint64_t t = UINT64_MAX;
    uint32_t i;
    if (!n || !n->peers) return t;
    if (n->closing_count) return n->now;
    for (i = 0; i < n->max_conns; i++) {
        const alkt__nconn *c = &n->conns[i];
        if (!c->handle) continue;
        if (c->connect_wanted || c->close_wanted || c->out_off < c->out_len) return n->now;
        if (c->state != ALKT__N_SESSION && c->deadline < t) t = c->deadline;
        if (c->state == ALKT__N_OFFER && c->refresh_at < t) t = c->refresh_at;
    }
    for (i = 0; i < n->cfg.max_peers; i++) {
        const alkt__peer *p = &n->peers[i];
        uint64_t st;
        if (p->state != ALKT__P_LIVE) continue;
        if (p->session.session_events) return n->now;
        st = alkt_session_poll_timeout(&p->session);
        if (st < t) t = st;
        if (!p->conn && p->session.state != ALKT__S_CLOSED &&
            (!n->is_gateway || !p->session.established_once) && p->retry_at < t)
            t = p->retry_at;
    }
    if (n->is_gateway) {
        size_t k;
        uint64_t e = alkt__next_expiry(n);
        if (e < t) t = e;
        for (k = 0; k < n->relay_count; k++)
            if (n->relays[k].address.kind == ALKT_HOST_IP && n->relay_retry_at[k] > n->now &&
                n->relay_retry_at[k] < t)
                t = n->relay_retry_at[k];
    }
    return t < n->now ? n->now : t;
}

ALKTDEF void alkt_node_handle_timeout(alkt_node *n, uint64_t now)
{
    uint32_t i;
    if (!n || !n->peers) return;
    if (now > n->now) n->now = now;
    for (i = 0; i < n->cfg.max_peers; i++) {
        alkt__peer *p = &n->peers[i];
        if (p->state != ALKT__P_LIVE) continue;
        alkt_session_handle_timeout(&p->session, n->now);
        if (n->is_gateway && !p->conn && !p->session.established_once &&
            n->now >= p->retry_at)
            p->state = ALKT__P_FREE;   /* never established: nothing to tell */
    }
    for (i = 0; i < n->max_conns; i++) {
        alkt__nconn *c = &n->conns[i];
        if (!c->handle || c->close_wanted) continue;
        if (c->state == ALKT__N_OFFER && n->now >= c->deadline) {
            alkt__nclose(n, c, ALKT_ERR_HANDSHAKE_TIMEOUT);   /* a fresh one follows */
            continue;
        }
        if (c->state == ALKT__N_OFFER && n->now >= c->refresh_at) {
            /* the relay kept it a refresh period: it took the offer, so
             * that relay's backoff ends (a connect alone says nothing: a
             * relay that refuses our offers is retried ever later) */
            if (c->relay && c->relay <= n->cfg.max_relays) n->relay_failures[c->relay - 1] = 0;
            if (c->out_len < sizeof c->out) c->out[c->out_len++] = 'R';
            c->refresh_at = n->now + n->cfg.offer_refresh_ns;
        }
        if (c->state != ALKT__N_SESSION && c->state != ALKT__N_OFFER &&
            n->now >= c->deadline)
            alkt__nlost(n, c, 0, ALKT_ERR_HANDSHAKE_TIMEOUT);   /* too slow: the next path */
    }
    if (n->is_gateway && alkt__next_expiry(n) <= n->now) {
        n->expiry_checked = n->now;
        alkt__recheck(n);
    }
    if (n->is_gateway) alkt__gateway_work(n);
    else alkt__client_work(n);
}

/* One session event, handled or handed on. 1: *ev is for the app. */
static int alkt__peer_event(alkt_node *n, alkt__peer *p, const alkt_event *se,
                            alkt_role_event *ev)
{
    uint32_t slot = (uint32_t)(p - n->peers) + 1u;
    alkt_channel_info info;
    ev->peer = slot;
    ev->channel = se->channel;
    switch (se->type) {
    case ALKT_EV_ESTABLISHED:
    case ALKT_EV_RESUMED:
        if (p->conn) n->conns[p->conn - 1].was_up = 1;
        p->failures = 0;
        p->path = 0;
        if (n->is_gateway && p->supersedes) {
            p->supersedes = 0;
            alkt__end_older(n, p, p->id);
        }
        ev->type = ALKT_REV_PEER_UP;
        ev->code = se->type == ALKT_EV_RESUMED;
        return 1;
    case ALKT_EV_DISCONNECTED:
        /* (only about the session's own connection: one the app closed is
         * handled already, and a new attempt may be on its way) */
        if (p->conn && n->conns[p->conn - 1].state == ALKT__N_SESSION) {
            alkt__nconn *c = &n->conns[p->conn - 1];
            int was_up = c->was_up;
            p->conn = 0;
            alkt__nclose(n, c, se->code);
            if (!n->is_gateway) alkt__schedule(n, p, was_up, c, se->code);
            else alkt__gateway_orphan(n, p);
        }
        return 0;
    case ALKT_EV_CLOSED:
        if (p->conn) {
            alkt__nconn *c = &n->conns[p->conn - 1];
            p->conn = 0;
            alkt__nclose(n, c, se->code);
        }
        p->state = n->is_gateway ? ALKT__P_FREE : ALKT__P_KNOWN;
        ev->type = ALKT_REV_PEER_DOWN;
        ev->code = se->code;
        return 1;
    case ALKT_EV_OPEN_REQUEST:
        /* (an open the peer reset before we looked is gone already) */
        if (alkt_channel_info_get(&p->session, se->channel, &info) != ALKT_OK ||
            info.state != ALKT_CHANNEL_INCOMING)
            return 0;
        if (n->is_gateway) {
            alkt__grant *gr = alkt__grant_find(p, 0);
            if (alkt__authorize(n, p->id, &info.params, n->now, NULL) != 0 || !gr) {
                (void)alkt_channel_refuse(&p->session, se->channel,
                                          (uint16_t)ALKT_CODE_UNAUTHORIZED,
                                          "not authorized");
                ev->type = ALKT_REV_OPEN_REFUSED;   /* (for the gateway's log) */
                ev->code = gr ? (int)ALKT_CODE_UNAUTHORIZED : (int)ALKT__CODE_FULL;
                ev->params = info.params;
                return 1;
            }
            gr->channel = se->channel;
            gr->params = info.params;
            ev->type = info.params.kind == ALKT_OPEN_DIRECT ? ALKT_REV_TARGET_CONNECT
                                                            : ALKT_REV_LISTEN;
            ev->params = info.params;
            return 1;
        } else {
            /* a gateway opens only for a listen we asked for */
            uint32_t k;
            int ours = 0;
            for (k = 0; info.params.kind == ALKT_OPEN_FORWARDED && k < p->session.max_channels; k++) {
                const alkt__chan *ch = &p->session.chans[k];
                ours |= ch->state == ALKT_CHANNEL_OPEN && (ch->flags & ALKT__CF_LOCAL) &&
                        ch->params.kind == ALKT_OPEN_FORWARDED &&
                        ch->params.listen == info.params.listen &&
                        ch->params.substrate == info.params.substrate;
            }
            if (!ours) {
                (void)alkt_channel_refuse(&p->session, se->channel,
                                          (uint16_t)ALKT_CODE_UNAUTHORIZED,
                                          "no such listen");
                return 0;
            }
            ev->type = ALKT_REV_INCOMING;
            ev->params = info.params;
            return 1;
        }
    case ALKT_EV_CHANNEL_DONE:
        if (n->is_gateway) {
            alkt__grant *gr = alkt__grant_find(p, se->channel);
            if (gr) gr->channel = 0;
        }
        /* fall through */
    default:
        ev->type = ALKT_REV_CHANNEL;
        ev->channel_event = se->type;
        ev->code = se->code;
        return 1;
    }
}

ALKTDEF int alkt_node_poll_event(alkt_node *n, alkt_role_event *ev)
{
    uint32_t i, k;
    if (!n || !ev || !n->peers) return 0;
    memset(ev, 0, sizeof *ev);
    if (n->is_gateway) alkt__gateway_work(n);
    else alkt__client_work(n);
    if (n->closing_count) {
        ev->type = ALKT_REV_CLOSE;
        ev->conn = n->closing[--n->closing_count];
        ev->code = ALKT_ERR_BUSY;
        return 1;
    }
    for (i = 0; i < n->max_conns; i++) {
        alkt__nconn *c = &n->conns[i];
        if (!c->handle) continue;
        if (c->close_wanted) {
            ev->type = ALKT_REV_CLOSE;
            ev->conn = c->handle;
            ev->code = c->close_code;
            memset(c, 0, sizeof *c);
            return 1;
        }
        if (c->connect_wanted) {
            c->connect_wanted = 0;
            ev->type = ALKT_REV_CONNECT;
            ev->conn = c->handle;
            ev->peer = c->peer;
            ev->ip = c->ip;
            ev->port = c->port;
            return 1;
        }
    }
    for (k = 0; k < n->cfg.max_peers; k++) {
        alkt__peer *p = &n->peers[k];
        if (!p->fail_event) continue;
        p->fail_event = 0;
        ev->type = ALKT_REV_PATH_FAILED;
        ev->peer = k + 1;
        ev->code = p->fail_code;
        ev->ip = p->fail_ip;
        ev->port = p->fail_port;
        return 1;
    }
    for (k = 0; k < n->cfg.max_peers; k++) {
        alkt__peer *p = &n->peers[(n->ev_cursor + k) % n->cfg.max_peers];
        alkt_event se;
        if (p->state != ALKT__P_LIVE) continue;
        while (p->state == ALKT__P_LIVE && alkt_session_poll_event(&p->session, &se)) {
            if (alkt__peer_event(n, p, &se, ev)) {
                n->ev_cursor = (n->ev_cursor + k + 1) % n->cfg.max_peers;
                return 1;
            }
        }
    }
    /* work the events made (a CLOSE, a new path) comes out at once */
    for (i = 0; i < n->max_conns; i++)
        if (n->conns[i].handle && (n->conns[i].close_wanted || n->conns[i].connect_wanted))
            return alkt_node_poll_event(n, ev);
    return 0;
}

#endif /* ALKTUNNEL_NO_ROLES */

ALKTDEF const char *alkt_substrate_name(alkt_substrate s)
{
    switch (s) {
    case ALKT_SUBSTRATE_TCP: return "tcp";
    case ALKT_SUBSTRATE_UDP: return "udp";
    case ALKT_SUBSTRATE_UNIX: return "unix";
    default: return NULL;
    }
}

ALKTDEF const char *alkt_strerror(int code)
{
    switch (code) {
#define ALKT__CASE(name, value, text) case name: return text;
        ALKT_RESULT_LIST(ALKT__CASE)
#undef ALKT__CASE
    default:
        return "unknown alktunnel result code";
    }
}

#ifdef __cplusplus
}
#endif
#endif /* ALKTUNNEL_IMPLEMENTATION */

/* REVISION HISTORY
 *   0.2.0 (2026-12-02)  part 2: SHA-256, HMAC-SHA-256, the session.
 *   0.1.0 (2026-11-29)  part 1: strict JSON reader, typed params.
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

/* session_echo.c - alktunnel.h's session over real TCP sockets, with poll():
 * an echo server and a client that sends stdin through one channel, reads
 * the echo to stdout, and can drop its connection mid-transfer to show a
 * resumption losing and repeating nothing.
 *
 *   session_echo serve PORTFILE          listen on 127.0.0.1 (a free port,
 *                                        written to PORTFILE); echo every
 *                                        channel; exit when the client
 *                                        closes the session
 *   session_echo send PORT [DROP...]     stdin -> channel -> stdout; after
 *                                        each DROP bytes sent, close the TCP
 *                                        connection and resume on a new one
 *
 * Both ends use the same demo secret (a real deployment gets it from the
 * control plane: alkt_authorization.secret). The server echoes in place:
 * alkt_channel_peek hands it the received bytes, alkt_channel_send copies
 * them into its resend log, alkt_channel_consume frees only what was taken,
 * so backpressure needs no buffer of its own. Output goes out with
 * alkt_session_transmit_peek/done straight from the session's memory.
 *
 * The client prints a summary on stderr: bytes each way, connections,
 * resumptions. Exit 0 when every byte came back and the session closed
 * cleanly; 1 on a session error; 2 on usage or socket errors. */
#define _POSIX_C_SOURCE 200809L
#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const unsigned char demo_secret[32] = "session_echo demo secret 32 byte";

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "session_echo: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void fresh_nonce(unsigned char nonce[ALKT_NONCE_SIZE])
{
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(nonce, 1, ALKT_NONCE_SIZE, f) != ALKT_NONCE_SIZE) die("/dev/urandom");
    fclose(f);
}

static void nonblocking(int fd)
{
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0) die("fcntl");
}

static void session_setup(alkt_session *s, int server, void **mem)
{
    alkt_session_config c;
    size_t need;
    memset(&c, 0, sizeof c);   /* zero: the defaults (64 KiB windows...) */
    c.is_server = server;
    c.secret = demo_secret;
    c.secret_len = sizeof demo_secret;
    c.identity = server ? "echo-server" : "echo-client";
    c.identity_len = strlen(c.identity);
    need = alkt_session_mem_size(&c);
    *mem = malloc(need);
    if (!*mem || alkt_session_init(s, &c, *mem, need, now_ns()) != ALKT_OK) {
        fprintf(stderr, "session_echo: session init failed\n");
        exit(2);
    }
}

/* Everything due goes out, in place, until the socket is full. 0 when the
 * connection broke. *blocked says the socket took less than offered. */
static int flush_out(alkt_session *s, int fd, int *blocked)
{
    const void *p;
    size_t n;
    *blocked = 0;
    while ((n = alkt_session_transmit_peek(s, &p)) > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                *blocked = 1;
                return 1;
            }
            return 0;
        }
        alkt_session_transmit_done(s, (size_t)w);
        if ((size_t)w < n) {
            *blocked = 1;
            return 1;
        }
    }
    return 1;
}

/* Input from the socket: 0 when the connection ended. */
static int take_in(alkt_session *s, int fd)
{
    static unsigned char buf[65536];
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return 0;
    if (r > 0) (void)alkt_session_handle_input(s, buf, (size_t)r, now_ns());
    return 1;
}

/* Waits for the socket (and optionally another fd) or the session's next
 * deadline, then runs the deadline. */
static void wait_io(alkt_session *s, int fd, int blocked, int extra,
                    short *fd_ev, short *extra_ev)
{
    struct pollfd p[2];
    uint64_t due = alkt_session_poll_timeout(s), t = now_ns();
    int ms = due == UINT64_MAX ? 1000 : due <= t ? 0
             : (int)((due - t) / 1000000u + 1);
    nfds_t n = 1;
    if (ms > 1000) ms = 1000;
    p[0].fd = fd;
    p[0].events = (short)(POLLIN | (blocked ? POLLOUT : 0));
    p[0].revents = 0;
    if (extra >= 0) {
        p[1].fd = extra;
        p[1].events = POLLIN;
        p[1].revents = 0;
        n = 2;
    }
    if (poll(p, n, ms) < 0 && errno != EINTR) die("poll");
    alkt_session_handle_timeout(s, now_ns());
    *fd_ev = p[0].revents;
    if (extra_ev) *extra_ev = extra >= 0 ? p[1].revents : 0;
}

/* ---- the server ---- */
#define MAX_CHANS 16

/* Echo what channel id holds, as far as its send credit goes; the EOF once
 * every byte went back. */
static void echo(alkt_session *s, uint32_t id)
{
    const void *p;
    ptrdiff_t n;
    int eof = 0;
    while ((n = alkt_channel_peek(s, id, &p, &eof)) > 0) {
        ptrdiff_t took = alkt_channel_send(s, id, p, (size_t)n);
        if (took <= 0) return;            /* no credit: WRITABLE comes */
        alkt_channel_consume(s, id, (size_t)took, &eof);
        if (took < n) return;
    }
    if (n == 0 && eof) alkt_channel_shutdown_write(s, id);
}

static int serve(const char *portfile)
{
    alkt_session s;
    void *mem;
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    uint32_t chans[MAX_CHANS];
    size_t nch = 0, i;
    int ls, fd = -1, done = 0, blocked = 0, connections = 0;
    FILE *f;
    session_setup(&s, 1, &mem);
    ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0) die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 4) < 0 ||
        getsockname(ls, (struct sockaddr *)&a, &al) < 0)
        die("listen");
    f = fopen(portfile, "w");
    if (!f || fprintf(f, "%u\n", (unsigned)ntohs(a.sin_port)) < 0 || fclose(f))
        die(portfile);
    while (!done) {
        alkt_event ev;
        short fe = 0, le = 0;
        if (fd < 0) {
            /* no connection: wait for one (a new client, or a resumption) */
            struct pollfd p;
            p.fd = ls;
            p.events = POLLIN;
            p.revents = 0;
            if (poll(&p, 1, 1000) < 0 && errno != EINTR) die("poll");
            alkt_session_handle_timeout(&s, now_ns());
        } else {
            wait_io(&s, fd, blocked, ls, &fe, &le);
            if ((fe & (POLLIN | POLLHUP | POLLERR)) && !take_in(&s, fd)) {
                close(fd);
                fd = -1;
                alkt_session_handle_disconnected(&s, now_ns());
            }
        }
        if (fd < 0 || (le & POLLIN)) {
            int nfd = accept(ls, NULL, NULL);
            if (nfd >= 0) {
                unsigned char nonce[ALKT_NONCE_SIZE];
                if (fd >= 0) close(fd);   /* the newer path wins */
                fd = nfd;
                nonblocking(fd);
                fresh_nonce(nonce);
                alkt_session_connect(&s, now_ns(), nonce);
                connections++;
            }
        }
        while (alkt_session_poll_event(&s, &ev)) {
            switch (ev.type) {
            case ALKT_EV_OPEN_REQUEST:
                if (nch < MAX_CHANS &&
                    alkt_channel_accept(&s, ev.channel, NULL) == ALKT_OK)
                    chans[nch++] = ev.channel;
                else
                    alkt_channel_refuse(&s, ev.channel, 1, "too many channels");
                break;
            case ALKT_EV_CHANNEL_DONE:
                for (i = 0; i < nch; i++)
                    if (chans[i] == ev.channel) chans[i] = chans[--nch];
                break;
            case ALKT_EV_DISCONNECTED:
                if (fd >= 0) close(fd);
                fd = -1;
                break;
            case ALKT_EV_CLOSED:
                done = 1;
                break;
            default:
                break;
            }
        }
        for (i = 0; i < nch; i++) echo(&s, chans[i]);
        if (fd >= 0 && !flush_out(&s, fd, &blocked)) {
            close(fd);
            fd = -1;
            alkt_session_handle_disconnected(&s, now_ns());
        }
    }
    if (fd >= 0) close(fd);
    close(ls);
    fprintf(stderr, "session_echo serve: %d connection(s), session closed\n",
            connections);
    free(mem);
    return 0;
}

/* ---- the client ---- */
static int dial(unsigned port)
{
    struct sockaddr_in a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) die("socket");
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) die("connect");
    nonblocking(fd);
    return fd;
}

static int send_stdin(unsigned port, char **drops, int ndrops)
{
    static unsigned char in[16384];
    alkt_session s;
    alkt_open_params o;
    unsigned char nonce[ALKT_NONCE_SIZE];
    void *mem;
    size_t pend = 0, off = 0;
    uint64_t sent = 0, got = 0, next_drop;
    uint32_t id = 0;
    int fd, blocked = 0, stdin_eof = 0, echo_eof = 0, closing = 0;
    int connections = 1, resumes = 0, failed = 0, di = 0;
    session_setup(&s, 0, &mem);
    next_drop = ndrops ? strtoull(drops[0], NULL, 10) : UINT64_MAX;
    fd = dial(port);
    fresh_nonce(nonce);
    alkt_session_connect(&s, now_ns(), nonce);
    for (;;) {
        alkt_event ev;
        short fe = 0, ie = 0;
        int readable_in = id && !stdin_eof && pend == 0;
        wait_io(&s, fd, blocked, readable_in ? 0 : -1, &fe, &ie);
        if ((fe & (POLLIN | POLLHUP | POLLERR)) && !take_in(&s, fd)) {
            fprintf(stderr, "session_echo: the server went away\n");
            failed = 1;
            break;
        }
        if (readable_in && (ie & (POLLIN | POLLHUP))) {
            ssize_t r = read(0, in, sizeof in);
            if (r <= 0) {
                stdin_eof = 1;
                alkt_channel_shutdown_write(&s, id);
            } else {
                pend = (size_t)r;
                off = 0;
            }
        }
        while (alkt_session_poll_event(&s, &ev)) {
            if (ev.type == ALKT_EV_ESTABLISHED) {
                if (alkt_open_params_direct(&o, ALKT_SUBSTRATE_TCP, "echo", 4, 7) != ALKT_OK ||
                    alkt_channel_open(&s, &o, &id) != ALKT_OK)
                    failed = 1;
            } else if (ev.type == ALKT_EV_RESUMED) {
                resumes++;
            } else if (ev.type == ALKT_EV_OPEN_FAILED || ev.type == ALKT_EV_RESET) {
                fprintf(stderr, "session_echo: channel refused or reset (%d)\n",
                        ev.code);
                failed = 1;
            } else if (ev.type == ALKT_EV_CLOSED) {
                if (!closing) {
                    fprintf(stderr, "session_echo: session closed: %s\n",
                            alkt_strerror(ev.code));
                    failed = 1;
                }
            }
        }
        if (failed) break;
        /* stdin into the channel, as far as credit and the log allow */
        if (id && pend > off) {
            ptrdiff_t t = alkt_channel_send(&s, id, in + off, pend - off);
            if (t > 0) {
                off += (size_t)t;
                sent += (uint64_t)t;
                if (off == pend) pend = off = 0;
            }
        }
        /* the echo to stdout, in place */
        if (id && !echo_eof) {
            const void *p;
            ptrdiff_t n;
            int eof = 0;
            while ((n = alkt_channel_peek(&s, id, &p, &eof)) > 0) {
                if (fwrite(p, 1, (size_t)n, stdout) != (size_t)n) die("stdout");
                alkt_channel_consume(&s, id, (size_t)n, &eof);
                got += (uint64_t)n;
            }
            if (eof) {
                echo_eof = 1;
                closing = 1;
                alkt_session_close(&s, 0);   /* GOAWAY: the server may go */
            }
        }
        if (!flush_out(&s, fd, &blocked)) {
            fprintf(stderr, "session_echo: the connection broke\n");
            failed = 1;
            break;
        }
        if (closing && !blocked) break;
        if (sent >= next_drop) {
            /* roaming: the old path is gone; the session resumes on a new
             * one and resends whatever the server did not acknowledge */
            close(fd);
            alkt_session_handle_disconnected(&s, now_ns());
            fd = dial(port);
            fresh_nonce(nonce);
            alkt_session_connect(&s, now_ns(), nonce);
            connections++;
            di++;
            next_drop = di < ndrops ? strtoull(drops[di], NULL, 10) : UINT64_MAX;
        }
    }
    if (fflush(stdout) != 0) die("stdout");
    close(fd);
    fprintf(stderr, "session_echo send: %llu bytes sent, %llu echoed, %d "
            "connection(s), %d resumption(s)%s\n", (unsigned long long)sent,
            (unsigned long long)got, connections, resumes,
            failed ? ", FAILED" : "");
    free(mem);
    return failed || got != sent ? 1 : 0;
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    if (argc == 3 && strcmp(argv[1], "serve") == 0) return serve(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "send") == 0)
        return send_stdin((unsigned)strtoul(argv[2], NULL, 10), argv + 3, argc - 3);
    fprintf(stderr, "usage: session_echo serve PORTFILE\n"
                    "       session_echo send PORT [DROP_AFTER_BYTES...] < in > out\n");
    return 2;
}

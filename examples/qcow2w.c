/* qcow2w - create, inspect, fill, export and check qcow2 images with
 * qcow2w.h and its POSIX executor; a small qemu-img for the common cases.
 *
 *   qcow2w create IMG [SIZE] [-o OPTS] [-b BACKING] [-F FMT]
 *   qcow2w info   IMG [--output=json]
 *   qcow2w write  IMG OFFSET FILE [-n]   (FILE "-" is stdin)
 *   qcow2w import RAW IMG [-o OPTS] [-c] [-p|-q] [-n] [-S]
 *   qcow2w export IMG RAW [-p|-q] [-S] [-s|--snapshot NAME]
 *   qcow2w check  IMG [--repair | -r leaks | -r all] [--output=json]
 *   qcow2w snapshot create IMG NAME
 *   qcow2w snapshot delete IMG NAME
 *   qcow2w snapshot apply  IMG NAME
 *   qcow2w snapshot list   IMG
 *   qcow2w io     IMG [-n] [-q] [-c CMD]...
 *   qcow2w convert [-c] [-o OPTS] [-B BACKING [-F FMT]] [-p|-q] [-n] [-S] SRC DST
 *   qcow2w resize IMG [+]SIZE
 *   qcow2w measure [--output=json] [-O qcow2] [-o OPTS] (--size SIZE | [-f FMT] FILE)
 *   qcow2w map    [--output=human|json] [-f FMT] IMG
 *   qcow2w amend  -o compat=0.10|1.1|v2|v3 IMG
 *   qcow2w commit [-d] [-p|-q] IMG
 *   qcow2w rebase [-u] [-p|-q] -b BACKING [-F FMT] IMG
 *
 * OPTS is a comma list of cluster_size=N, refcount_bits=N,
 * compat=0.10|1.1|v2|v3, backing=FILE, backing_fmt=qcow2|raw. SIZE, OFFSET
 * and cluster_size take K, M, G, T, P, E suffixes (powers of 1024); a
 * size is rounded up to a multiple of 512. Without SIZE (or with 0) an
 * image with a backing file takes the backing file's virtual size; without
 * backing_fmt the backing file is probed (qcow2 magic, else raw).
 *
 * amend -o compat= changes the version as qemu-img amend does: to v2 every
 * zero flag (active and snapshot tables) becomes unallocated, or a cluster
 * of zeros over a backing file, then the header is rewritten as v2 (16-bit
 * refcounts only; snapshots of another disk size refused, as qemu); to v3
 * the header is rewritten (112 bytes, no feature bits). Crash-safe up to
 * the one write of cluster 0.
 *
 * map prints, as qemu-img map does, where the virtual disk's bytes are
 * through the backing chain: JSON entries (start, length, the depth of
 * the layer that decides, present: that layer holds the run itself, zero,
 * data, offset in that layer's file), or (human) the runs of data with
 * their file offsets - an image with compressed clusters has none to show
 * and is refused there, as qemu-img refuses it.
 *
 * An image that names a backing file is opened with its whole chain (at
 * most 16 deep): names are relative to the directory of the image naming
 * them, raw files read as zeros past their end.
 *
 * import copies RAW into a new image of its size, leaving out the clusters
 * that are all zeros. Progress goes to stderr when it is a terminal or with
 * -p (-q: never). Like every command that changes an image it ends with
 * q2w_close, whose flushes (fdatasync) make data, metadata and the file
 * size durable in crash-safe order before the command returns. -n (import,
 * write, io) skips those flushes, as qemu-img convert's default cache mode
 * does: faster, but a crash soon after may lose the image. -S (import,
 * export) also fsyncs the output file and its directory, so that a new
 * file's name survives a crash too.
 *
 * Internal snapshots (qemu-img snapshot's): create records the active
 * view under NAME, dated with the caller's clock (CLOCK_REALTIME; VM clock
 * 0, no VM state), and refuses a NAME already taken; delete drops it;
 * apply reverts the disk to it (its view and size; the snapshot stays);
 * qemu-img's spellings -c/-d/-a NAME IMG and -l IMG work too; list
 * (and info) show ID, TAG, VM SIZE, DATE (UTC) and VM CLOCK as qemu-img
 * does. export -s NAME writes that snapshot's view (its recorded disk
 * size, or the current virtual size when none was recorded; unallocated
 * clusters read from the backing chain) instead of the active one.
 *
 * commit writes what IMG holds (its data, and its zeroed clusters) into
 * its backing file, grown first when it is shorter, makes the backing
 * file durable, then empties IMG (every cluster reads through to the
 * backing file again) as qemu-img commit does; -d keeps IMG as it is.
 * IMG's internal snapshots keep their clusters; the backing file's own
 * snapshots are kept by copy-on-write. A crash before the backing file is
 * durable leaves IMG whole (commit again); one while IMG is emptied
 * leaves clusters that read the same either way, and leaks at most.
 *
 * rebase -b BACKING makes IMG name BACKING (relative to IMG's directory;
 * -F its format, else probed) without changing what IMG reads: every
 * cluster IMG does not hold whose old and new backing bytes differ is
 * copied into IMG first, then the header is switched in one write. -b ""
 * flattens: IMG gets every byte it read from its backing chain and names
 * none. -u (unsafe) only rewrites the name and format, as qemu-img
 * rebase -u. A crash before the switch leaves IMG naming the old file and
 * reading as before (copies made so far read the same): rebase again.
 * Snapshots in IMG read unallocated clusters from whatever IMG names, as
 * in qemu.
 *
 * io runs many operations on one open image, as qemu-io does, so that
 * one command stream can drive both (a benchmark compares them). Without
 * -c the commands come from stdin, one a line (blank lines and lines
 * starting with # skipped); with -c only those run, in order. Commands,
 * a subset of qemu-io's syntax (options anywhere, combinable):
 *   write [-q] [-P PAT] OFF LEN   LEN bytes of PAT (default 0xcd)
 *   write [-q] -s FILE OFF LEN    FILE's first LEN bytes, repeated if it is
 *                                 shorter (as qemu-io)
 *   write [-q] -z OFF LEN         q2w_write_zeroes; any range: whole
 *                                 clusters zero-flagged on v3, partial ones
 *                                 (and all of v2) written as zeros
 *   read [-q] [-P PAT] OFF LEN    with -P every byte must be PAT
 *   discard [-q] OFF LEN          q2w_discard
 *   flush                         durable now, even under -n
 *   quit | q | exit               stop
 * OFF and LEN take the suffixes above (either case, and b for bytes) or
 * 0x hex; PAT 0..255 as strtol reads it (decimal, 0x hex, 0 octal: as
 * qemu-io); -q per command is accepted and changes nothing. Transfers run
 * in 4 MiB pieces from one reused buffer, so LEN has no limit. Unlike
 * qemu-io, the first failing command (syntax, range, library error, a
 * pattern mismatch) stops the run: it is named as "line N" or "-c N", the
 * image is closed as it stands and the exit status is 1. Otherwise one
 * summary line (not with -q) gives the counts and the time from open to
 * close. -n skips the flushes of writes and of the final close only: a
 * flush command always makes everything before it durable.
 *
 * Exit status: 0 success (check: no errors), 1 failure (usage, I/O, an
 * image that cannot be opened, a snapshot NAME that does not exist - for
 * delete, apply and export -s - or that create finds taken; check: the check
 * could not run), check only: 2 corruptions were found, 3 leaks only
 * (after --repair: the state of the repaired image). Errors are printed as
 *   qcow2w: COMMAND: MESSAGE (FIELD, offset N, index N)
 * and a snapshot not found is named:
 *   qcow2w: snapshot delete: NAME: no snapshot of that name or index (...)
 */
/* SEEK_DATA / SEEK_HOLE (POSIX.1-2024; glibc shows them with _GNU_SOURCE) */
#define _GNU_SOURCE
#define QCOW2W_IMPLEMENTATION
#include "../qcow2w.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHAIN 16          /* backing files below the top image */
#define N_OPS 256
#define BASE_MEM (4u << 20)   /* plus 16 clusters */
#define CHUNK (4u << 20)      /* import/export/write transfer size */
#ifndef PIECE
#define PIECE (256u << 10) /* import/export reads: small enough to stay
                              in the CPU cache for the zero test and the
                              write that follow */
#endif

enum { FMT_PROBE, FMT_QCOW2, FMT_RAW };

static const char *cmd = "qcow2w"; /* for messages: the command running */

/* ---- messages ----------------------------------------------------------- */
static void report_error(const char *who, int rc, const q2w_error_info *e)
{
    fprintf(stderr, "qcow2w: %s: ", cmd);
    if (who) fprintf(stderr, "%s: ", who);
    fprintf(stderr, "%s (%s, offset %llu, index %llu", q2w_strerror(rc),
            e && e->what ? e->what : "-",
            (unsigned long long)(e ? e->offset : 0),
            (unsigned long long)(e ? e->index : 0));
    if (e && e->needed)
        fprintf(stderr, ", %s %llu", rc == Q2W_ERR_NOMEM ? "needed" : "value",
                (unsigned long long)e->needed);
    fprintf(stderr, ")\n");
}

static void sys_fail(const char *who, int err)
{
    fprintf(stderr, "qcow2w: %s: %s: %s\n", cmd, who, strerror(err));
}

static void say(const char *msg, const char *arg)
{
    fprintf(stderr, "qcow2w: %s: %s%s\n", cmd, msg, arg ? arg : "");
}

/* ---- plain file I/O ----------------------------------------------------- */
/* read() until len bytes or end of file: the count, or -1 (errno). */
static long read_full(int fd, void *dst, size_t len)
{
    unsigned char *p = (unsigned char *)dst;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break;
        got += (size_t)n;
    }
    return (long)got;
}

/* 64 bytes at a time (eight words ORed; the memcpy is a plain load), so a
 * data cluster is told from a zero one by its first word. */
static int all_zero(const unsigned char *p, size_t n)
{
    size_t i = 0, k;
    for (; i + 64 <= n; i += 64) {
        uint64_t w[8], acc = 0;
        memcpy(w, p + i, sizeof w);
        for (k = 0; k < 8; k++) acc |= w[k];
        if (acc) return 0;
    }
    for (; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* pread until len bytes or end of file: the count, or -1 (errno). */
static long pread_upto(int fd, uint64_t off, void *dst, size_t len)
{
    unsigned char *p = (unsigned char *)dst;
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, p + got, len - got, (off_t)(off + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break;
        got += (size_t)n;
    }
    return (long)got;
}

/* The next run of data at or after pos in a file of `size` bytes:
 * [*start, *end), or *start = size when only holes are left. Without
 * SEEK_DATA (or where the file system or device does not support it)
 * everything from pos is data. */
static void next_data(int fd, uint64_t pos, uint64_t size, uint64_t *start,
                      uint64_t *end)
{
    *start = pos;
    *end = size;
#if defined(SEEK_DATA) && defined(SEEK_HOLE)
    {
        off_t d = lseek(fd, (off_t)pos, SEEK_DATA), h;
        if (d < 0) {
            if (errno == ENXIO) *start = size; /* holes to the end */
            return;
        }
        h = lseek(fd, d, SEEK_HOLE);
        *start = (uint64_t)d < size ? (uint64_t)d : size;
        if (h >= 0 && (uint64_t)h < size) *end = (uint64_t)h;
    }
#else
    (void)fd;
#endif
}

static uint64_t be_u64(const unsigned char *p)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

static int is_qcow2_magic(const unsigned char *p)
{
    return p[0] == 'Q' && p[1] == 'F' && p[2] == 'I' && p[3] == 0xfb;
}

/* fsync a file, then the directory holding `path`. */
static int sync_with_dir(int fd, const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    int dfd, rc = 0;
    if (fsync(fd) < 0) return -errno;
    if (!slash) {
        strcpy(dir, ".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        if (n >= sizeof dir) return -ENAMETOOLONG;
        memcpy(dir, path, n);
        dir[n] = 0;
    }
    dfd = open(dir, O_RDONLY);
    if (dfd < 0) return -errno;
    if (fsync(dfd) < 0) rc = -errno;
    close(dfd);
    return rc;
}

/* ---- numbers ------------------------------------------------------------ */
/* Digits with an optional K/M/G/T/P/E (powers of 1024). */
static int parse_size(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    unsigned shift = 0;
    if (*s < '0' || *s > '9') return -1;
    for (; *s >= '0' && *s <= '9'; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    switch (*s) {
    case 0: break;
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    case 't': case 'T': shift = 40; break;
    case 'p': case 'P': shift = 50; break;
    case 'e': case 'E': shift = 60; break;
    default: return -1;
    }
    if (*s && s[1]) return -1;
    if (shift && v > (UINT64_MAX >> shift)) return -1;
    *out = v << shift;
    return 0;
}

static const char *human(uint64_t v, char *buf, size_t cap)
{
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB",
                                       "PiB", "EiB"};
    double d = (double)v;
    int i = 0;
    while (d >= 1024.0 && i < 6) { d /= 1024.0; i++; }
    if (i == 0) snprintf(buf, cap, "%llu B", (unsigned long long)v);
    else snprintf(buf, cap, "%.4g %s", d, unit[i]);
    return buf;
}

/* ---- an image and its backing chain --------------------------------------
 * A disk is a qcow2 image with its q2w handle, or a raw backing file. Its
 * backing disk (if any) is read through `reader`, which calls back into
 * the backing disk's own handle: a chain of any kind reads as one. */
typedef struct disk {
    char *path;
    int fd;
    int raw;
    int depth;            /* 0: the image the command names */
    int no_flush;         /* skip Q2W_OP_FLUSH ops (-n) */
    uint64_t size;        /* virtual size */
    void *mem;
    q2w_op ops[N_OPS];
    q2w_image img;
    struct disk *backing;
    q2w_backing_reader reader;
    const unsigned char *map; /* the file mapped read-only (convert), or NULL */
    size_t map_len;
} disk;

/* A system error about the file of a disk (depth > 0: a backing file). */
static void disk_sys_fail(const char *path, int depth, int err)
{
    char who[4200];
    snprintf(who, sizeof who, "%s%s", depth ? "backing file " : "", path);
    sys_fail(who, err);
}

static void disk_err(const disk *d, int rc)
{
    char who[4200];
    if (d->depth == 0) {
        report_error(NULL, rc, q2w_error(&d->img));
    } else {
        snprintf(who, sizeof who, "backing file %s", d->path);
        report_error(who, rc, q2w_error(&d->img));
    }
}

/* Drive an operation of `d` to completion. */
static int disk_run(disk *d, int rc)
{
    return q2w_posix_run_flags(&d->img, d->fd,
                               d->backing ? &d->reader : NULL,
                               d->no_flush ? Q2W_POSIX_NO_FLUSH : 0u, rc);
}

/* q2w_backing_reader.read: virtual bytes of a backing disk, zeros past its
 * end (a backing file may be shorter than the image on top of it). */
static int backing_read(void *user, uint64_t off, void *dst, size_t len)
{
    disk *b = (disk *)user;
    size_t n = 0;
    int rc;
    if (off < b->size) n = b->size - off < len ? (size_t)(b->size - off) : len;
    if (n < len) memset((unsigned char *)dst + n, 0, len - n);
    if (n == 0) return 0;
    if (b->raw) {
        rc = q2w_pread_full(b->fd, off, dst, n);
        if (rc < 0) disk_sys_fail(b->path, b->depth, -rc);
        return rc;
    }
    rc = disk_run(b, q2w_read(&b->img, off, dst, n));
    if (rc != Q2W_OK) {
        disk_err(b, rc);
        return -EIO;
    }
    return 0;
}

static void disk_free(disk *d)
{
    if (!d) return;
    disk_free(d->backing);
    if (d->map) munmap((void *)(uintptr_t)d->map, d->map_len);
    if (d->fd >= 0) close(d->fd);
    free(d->mem);
    free(d->path);
    free(d);
}

/* `name` as seen from the directory of the image at `img`. */
static char *relative_to(const char *img, const char *name)
{
    const char *slash = strrchr(img, '/');
    size_t dl = (name[0] == '/' || !slash) ? 0 : (size_t)(slash - img) + 1;
    char *p = (char *)malloc(dl + strlen(name) + 1);
    if (!p) return NULL;
    memcpy(p, img, dl);
    strcpy(p + dl, name);
    return p;
}

static int probe_format(int fd)
{
    unsigned char m[4];
    if (q2w_pread_full(fd, 0, m, 4) < 0) return FMT_RAW;
    return is_qcow2_magic(m) ? FMT_QCOW2 : FMT_RAW;
}

static disk *disk_open(const char *path, int fmt, int writable, int depth,
                       int no_backing);

/* Open the qcow2 handle of `d` (fd open): memory sized for its cluster
 * size, then the backing chain if the image names one. */
static int disk_open_q2w(disk *d, int writable, int no_backing)
{
    q2w_config cfg;
    q2w_info info;
    unsigned char head[24];
    size_t len = BASE_MEM + 16u * 65536u;
    struct stat st;
    int rc, tries;
    if (fstat(d->fd, &st) < 0) {
        disk_sys_fail(d->path, d->depth, errno);
        return -1;
    }
    if (q2w_pread_full(d->fd, 0, head, sizeof head) == 0) {
        uint32_t cb = (uint32_t)head[20] << 24 | (uint32_t)head[21] << 16 |
                      (uint32_t)head[22] << 8 | head[23];
        if (cb >= Q2W_MIN_CLUSTER_BITS && cb <= Q2W_MAX_CLUSTER_BITS)
            len = BASE_MEM + ((size_t)16 << cb);
    }
    memset(&cfg, 0, sizeof cfg);
    cfg.ops = d->ops;
    cfg.ops_cap = N_OPS;
    cfg.file_size = (uint64_t)st.st_size;
    cfg.writable = writable;
    cfg.no_backing = no_backing;
    for (tries = 0;; tries++) {
        if (!d->mem || cfg.mem_len < len) {
            free(d->mem);
            d->mem = malloc(len);
            if (!d->mem) {
                disk_sys_fail(d->path, d->depth, ENOMEM);
                return -1;
            }
            cfg.mem = d->mem;
            cfg.mem_len = len;
        }
        rc = disk_run(d, q2w_open(&d->img, &cfg));
        if (rc == Q2W_ERR_NOMEM && tries < 2 &&
            q2w_error(&d->img)->needed > cfg.mem_len) {
            len = (size_t)q2w_error(&d->img)->needed;
            continue;
        }
        if (rc != Q2W_ERR_BACKING || d->backing) break;
        /* The image names a backing file: open the chain below it. */
        q2w_info_get(&d->img, &info);
        if (d->depth >= MAX_CHAIN) {
            say("backing chain deeper than 16 at ", d->path);
            return -1;
        }
        {
            int bfmt = FMT_PROBE;
            char *bpath;
            if (info.backing_format) {
                if (strcmp(info.backing_format, "qcow2") == 0) {
                    bfmt = FMT_QCOW2;
                } else if (strcmp(info.backing_format, "raw") == 0) {
                    bfmt = FMT_RAW;
                } else {
                    say("unsupported backing format ", info.backing_format);
                    return -1;
                }
            }
            bpath = relative_to(d->path, info.backing_name);
            if (!bpath) {
                disk_sys_fail(d->path, d->depth, ENOMEM);
                return -1;
            }
            d->backing = disk_open(bpath, bfmt, 0, d->depth + 1, 0);
            free(bpath);
            if (!d->backing) return -1;
        }
        d->reader.read = backing_read;
        d->reader.user = d->backing;
        cfg.has_backing = 1;
        cfg.backing_size = d->backing->size;
    }
    if (rc != Q2W_OK) { disk_err(d, rc); return -1; }
    q2w_info_get(&d->img, &info);
    d->size = info.size;
    return 0;
}

/* Open the image (or raw file) at `path` with its backing chain; errors
 * are printed. no_backing: do not open the chain (unallocated clusters
 * then read as zeros; for info). */
static disk *disk_open(const char *path, int fmt, int writable, int depth,
                       int no_backing)
{
    disk *d = (disk *)calloc(1, sizeof *d);
    struct stat st;
    if (!d) { disk_sys_fail(path, depth, ENOMEM); return NULL; }
    d->depth = depth;
    d->path = (char *)malloc(strlen(path) + 1);
    d->fd = open(path, writable ? O_RDWR : O_RDONLY);
    if (d->path) strcpy(d->path, path);
    if (d->fd < 0 || !d->path) {
        disk_sys_fail(path, depth, d->path ? errno : ENOMEM);
        disk_free(d);
        return NULL;
    }
    if (fmt == FMT_PROBE) fmt = probe_format(d->fd);
    if (fmt == FMT_RAW) {
        if (fstat(d->fd, &st) < 0) {
            disk_sys_fail(path, depth, errno);
            disk_free(d);
            return NULL;
        }
        d->raw = 1;
        d->size = (uint64_t)st.st_size;
        return d;
    }
    if (disk_open_q2w(d, writable, no_backing) < 0) {
        disk_free(d);
        return NULL;
    }
    return d;
}

/* ---- command line ------------------------------------------------------- */
enum {
    OPT_O = 1,        /* -o, -b, -F */
    OPT_PROGRESS = 2, /* -p, -q */
    OPT_NO_FLUSH = 4, /* -n, --no-flush */
    OPT_SYNC = 8,     /* -S, --sync */
    OPT_REPAIR = 16,  /* --repair, -r leaks */
    OPT_SNAPSHOT = 32, /* -s NAME, --snapshot NAME */
    OPT_COMMAND = 64,  /* -c CMD, repeatable (io) */
    OPT_QUIET = 128,   /* -q as "no summary" (io), not as OPT_PROGRESS */
    OPT_KEEP = 256,    /* -d (commit) */
    OPT_UNSAFE = 512,  /* -u (rebase) */
    OPT_OUTPUT = 1024, /* --output=human|json (info, check, map) */
    OPT_COMPRESS = 2048 /* -c (import): compressed clusters */
};

typedef struct args {
    const char *pos[3];
    int npos;
    q2w_create_opts c;
    int progress;     /* -1: when stderr is a terminal */
    int no_flush, sync, repair;
    const char *snapshot; /* -s NAME */
    int n_commands;       /* -c CMD given this many times (io_next_c) */
    int quiet;            /* -q under OPT_QUIET */
    int keep, unsafe;     /* -d, -u */
    int json;             /* --output=json */
    int compress;         /* -c (import) */
} args;

static void usage(FILE *f)
{
    fprintf(f,
"usage: qcow2w COMMAND ARGS\n"
"  create IMG [SIZE] [-o OPTS] [-b FILE] [-F FMT]\n"
"                        a new empty image (no SIZE, or 0: the backing size)\n"
"  info IMG [--output=json]\n"
"                        header, geometry, tables, backing file, features\n"
"                        (json: qemu-img info's keys)\n"
"  write IMG OFFSET FILE [-n]\n"
"                        FILE's bytes at virtual OFFSET (FILE - is stdin)\n"
"  import RAW IMG [-o OPTS] [-c] [-p|-q] [-n] [-S]\n"
"                        a new image holding RAW; zero clusters left out\n"
"  export IMG RAW [-p|-q] [-S] [-s NAME]\n"
"                        the whole virtual disk (backing included) to RAW;\n"
"                        -s, --snapshot NAME: that snapshot's view of it\n"
"  check IMG [--repair | -r leaks | -r all] [--output=json]\n"
"                        the scan qemu-img check does; -r leaks lowers leaked\n"
"                        refcounts, -r all rebuilds every refcount from the\n"
"                        references and clears a lazy-refcount dirty bit;\n"
"                        --repair: all on a dirty image, else leaks. Nothing\n"
"                        is freed while a structure is not understood\n"
"  snapshot create IMG NAME\n"
"                        an internal snapshot of the disk as it is now,\n"
"                        dated now (a NAME already taken is refused)\n"
"  snapshot delete IMG NAME\n"
"                        drop the snapshot NAME (its clusters freed)\n"
"  snapshot apply IMG NAME\n"
"                        revert the disk to the snapshot NAME (its view\n"
"                        and size; the snapshot stays)\n"
"  snapshot -c|-d|-a NAME IMG, snapshot -l IMG: qemu-img's spellings\n"
"  snapshot list IMG     ID, TAG, VM SIZE, DATE (UTC), VM CLOCK\n"
"  convert SRC DST [-c] [-o OPTS] [-B FILE [-F FMT]] [-p|-q] [-n] [-S]\n"
"                        a new image holding SRC's view (raw, or qcow2 with\n"
"                        its chain flattened); -c: clusters compressed;\n"
"                        -B: on FILE, holding only what SRC itself holds\n"
"  resize IMG [+]SIZE    grow the virtual disk to SIZE (or by it); no shrink\n"
"  measure [--output=json] [-o OPTS] (--size SIZE | [-f FMT] FILE)\n"
"                        qemu-img measure's required and fully allocated\n"
"                        sizes of a qcow2 image of OPTS holding FILE\n"
"  amend -o compat=0.10|1.1|v2|v3 IMG\n"
"                        change the image's version (v2: zero flags made\n"
"                        explicit; needs 16-bit refcounts)\n"
"  map [--output=human|json] [-f FMT] IMG\n"
"                        where the disk's bytes are, through the backing\n"
"                        chain, as qemu-img map prints it\n");
    /* (two strings: C99 promises 4095 characters in one) */
    fprintf(f,
"  commit [-d] [-p|-q] IMG\n"
"                        IMG's data and zeroes into its backing file, then\n"
"                        IMG emptied (-d: kept as it is)\n"
"  rebase [-u] [-p|-q] -b BACKING [-F FMT] IMG\n"
"                        IMG on BACKING with what it reads unchanged (its\n"
"                        clusters that differ copied in first); -b \"\":\n"
"                        flattened; -u: only the name and format written\n"
"  io IMG [-n] [-q] [-c CMD]...\n"
"                        qemu-io's way: commands from each -c in order, else\n"
"                        from stdin, one a line (# comments); -q: no summary.\n"
"                        write [-P PAT | -s FILE | -z] OFF LEN,\n"
"                        read [-P PAT] OFF LEN (-P: every byte checked),\n"
"                        discard OFF LEN, flush (syncs even under -n), quit.\n"
"                        The first failing command stops it (exit 1, named\n"
"                        'line N' or '-c N'); the image is still closed\n"
"options:\n"
"  -o OPTS        cluster_size=N,refcount_bits=N,compat=0.10|1.1|v2|v3,\n"
"                 backing=FILE,backing_fmt=qcow2|raw (-b FILE, -F FMT too)\n"
"  -p, -q         progress on stderr always, never (default: on a terminal)\n"
"  -n, --no-flush skip q2w_close's fdatasyncs (qemu-img convert's default);\n"
"                 without -n the image is durable when the command returns\n"
"  -S, --sync     also fsync the output and its directory (the name too)\n"
"  SIZE, OFFSET, cluster_size: K M G T P E suffixes (powers of 1024);\n"
"  sizes are rounded up to a multiple of 512.\n"
"exit: 0 ok, 1 error (a snapshot NAME not found, or taken for create, is\n"
"      an error too); check: 0 clean, 1 check failed to run,\n"
"      2 corruptions found, 3 leaks only (after --repair: what is left)\n");
}

static int bad_usage(const char *msg, const char *arg)
{
    say(msg, arg);
    fprintf(stderr, "run 'qcow2w help' for usage\n");
    return -1;
}

/* -o cluster_size=64K,compat=v2,... (modifies s) */
static int parse_o(args *a, char *s)
{
    while (s) {
        char *comma = strchr(s, ','), *eq, *val;
        uint64_t v;
        if (comma) *comma = 0;
        eq = strchr(s, '=');
        if (!eq) return bad_usage("-o needs key=value: ", s);
        *eq = 0;
        val = eq + 1;
        if (strcmp(s, "cluster_size") == 0) {
            if (parse_size(val, &v) < 0 || v > 0xffffffffu)
                return bad_usage("bad cluster_size ", val);
            a->c.cluster_size = (uint32_t)v;
        } else if (strcmp(s, "refcount_bits") == 0) {
            if (parse_size(val, &v) < 0 || v > 64)
                return bad_usage("bad refcount_bits ", val);
            a->c.refcount_bits = (uint32_t)v;
        } else if (strcmp(s, "compat") == 0) {
            if (strcmp(val, "0.10") == 0 || strcmp(val, "v2") == 0)
                a->c.version = 2;
            else if (strcmp(val, "1.1") == 0 || strcmp(val, "v3") == 0)
                a->c.version = 3;
            else
                return bad_usage("compat must be 0.10, 1.1, v2 or v3: ", val);
        } else if (strcmp(s, "backing") == 0 ||
                   strcmp(s, "backing_file") == 0) {
            a->c.backing = val;
        } else if (strcmp(s, "backing_fmt") == 0) {
            if (strcmp(val, "qcow2") && strcmp(val, "raw"))
                return bad_usage("backing_fmt must be qcow2 or raw: ", val);
            a->c.backing_fmt = val;
        } else {
            return bad_usage("unknown -o option ", s);
        }
        s = comma ? comma + 1 : NULL;
    }
    return 0;
}

static int parse_args(int argc, char **argv, unsigned allowed, int min_pos,
                      int max_pos, args *a)
{
    int i;
    memset(a, 0, sizeof *a);
    a->progress = -1;
    for (i = 2; i < argc; i++) {
        char *s = argv[i];
        const char *opt = s;
        unsigned need;
        if (s[0] != '-' || s[1] == 0) {
            if (a->npos >= max_pos)
                return bad_usage("unexpected argument ", s);
            a->pos[a->npos++] = s;
            continue;
        }
        if (!strcmp(s, "-o") || !strcmp(s, "-b") || !strcmp(s, "-F"))
            need = OPT_O;
        else if (!strcmp(s, "-q") && (allowed & OPT_QUIET))
            need = OPT_QUIET;
        else if (!strcmp(s, "-p") || !strcmp(s, "-q"))
            need = OPT_PROGRESS;
        else if (!strcmp(s, "-n") || !strcmp(s, "--no-flush"))
            need = OPT_NO_FLUSH;
        else if (!strcmp(s, "-S") || !strcmp(s, "--sync"))
            need = OPT_SYNC;
        else if (!strcmp(s, "-r") || !strcmp(s, "--repair"))
            need = OPT_REPAIR;
        else if (!strcmp(s, "-s") || !strcmp(s, "--snapshot"))
            need = OPT_SNAPSHOT;
        else if (!strcmp(s, "-c"))
            need = (allowed & OPT_COMPRESS) ? OPT_COMPRESS : OPT_COMMAND;
        else if (!strncmp(s, "--output", 8) && (s[8] == 0 || s[8] == '='))
            need = OPT_OUTPUT;
        else if (!strcmp(s, "-d"))
            need = OPT_KEEP;
        else if (!strcmp(s, "-u"))
            need = OPT_UNSAFE;
        else
            return bad_usage("unknown option ", s);
        if (!(need & allowed))
            return bad_usage("option not valid for this command: ", s);
        if ((need == OPT_O || need == OPT_SNAPSHOT || need == OPT_COMMAND ||
             !strcmp(s, "-r")) &&
            i + 1 >= argc)
            return bad_usage("missing value after ", s);
        if (!strcmp(opt, "-o")) {
            if (parse_o(a, argv[++i]) < 0) return -1;
        } else if (!strcmp(opt, "-b")) {
            a->c.backing = argv[++i];
        } else if (!strcmp(opt, "-F")) {
            char *v = argv[++i];
            if (strcmp(v, "qcow2") && strcmp(v, "raw"))
                return bad_usage("backing format must be qcow2 or raw: ", v);
            a->c.backing_fmt = v;
        } else if (need == OPT_QUIET) {
            a->quiet = 1;
        } else if (need == OPT_OUTPUT) {
            const char *v = s[8] == '=' ? s + 9 : ++i < argc ? argv[i] : "";
            if (!strcmp(v, "json")) a->json = 1;
            else if (strcmp(v, "human")) return bad_usage("--output takes human or json, not ", v);
        } else if (need == OPT_COMPRESS) {
            a->compress = 1;
        } else if (need == OPT_KEEP) {
            a->keep = 1;
        } else if (need == OPT_UNSAFE) {
            a->unsafe = 1;
        } else if (need == OPT_COMMAND) {
            /* the value is taken again from argv by io_next_c */
            ++i;
            a->n_commands++;
        } else if (!strcmp(opt, "-p")) {
            a->progress = 1;
        } else if (!strcmp(opt, "-q")) {
            a->progress = 0;
        } else if (need == OPT_NO_FLUSH) {
            a->no_flush = 1;
        } else if (need == OPT_SYNC) {
            a->sync = 1;
        } else if (need == OPT_SNAPSHOT) {
            a->snapshot = argv[++i];
        } else if (!strcmp(opt, "-r")) {
            ++i;
            if (!strcmp(argv[i], "leaks")) a->repair = 1;
            else if (!strcmp(argv[i], "all")) a->repair = 2;
            else return bad_usage("-r takes leaks or all, not ", argv[i]);
        } else {
            a->repair = 3; /* --repair: leaks, or all on a dirty image */
        }
    }
    if (a->npos < min_pos) return bad_usage("missing arguments", NULL);
    if (a->c.backing_fmt && !a->c.backing)
        return bad_usage("backing_fmt without backing", NULL);
    if (a->progress < 0) a->progress = isatty(2);
    return 0;
}

/* Percent done, on one stderr line, each time it moves. */
static void progress(const args *a, uint64_t done, uint64_t total,
                     unsigned *last)
{
    unsigned pct = total ? (unsigned)(done / (total / 100 + 1)) : 100;
    if (!a->progress) return;
    if (pct > 100 || done == total) pct = 100;
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\r    (%u/100%%)%s", pct, pct == 100 ? "\n" : "");
}

/* ---- create ------------------------------------------------------------- */
/* Fill in a missing backing format or size from the backing file itself. */
static int backing_defaults(const char *img, q2w_create_opts *o)
{
    unsigned char head[32];
    struct stat st;
    char *path;
    int fd, qcow2;
    if (!o->backing || (o->backing_fmt && o->size)) return 0;
    path = relative_to(img, o->backing);
    if (!path) { sys_fail(img, ENOMEM); return -1; }
    fd = open(path, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) < 0 || q2w_pread_full(fd, 0, head, 32) < 0) {
        sys_fail(path, errno);
        if (fd >= 0) close(fd);
        free(path);
        return -1;
    }
    close(fd);
    qcow2 = is_qcow2_magic(head);
    if (!o->backing_fmt) o->backing_fmt = qcow2 ? "qcow2" : "raw";
    if (strcmp(o->backing_fmt, "qcow2") == 0 && !qcow2) {
        say("backing file is not a qcow2 image: ", path);
        free(path);
        return -1;
    }
    if (!o->size) o->size = qcow2 ? be_u64(head + 24) : (uint64_t)st.st_size;
    free(path);
    return 0;
}

static int create_image(const char *path, q2w_create_opts *o)
{
    q2w_error_info e;
    uint64_t len;
    void *buf;
    int fd, rc;
    if (o->size > UINT64_MAX - 511) {
        rc = Q2W_ERR_LIMIT;
        memset(&e, 0, sizeof e);
        e.what = "size";
        report_error(NULL, rc, &e);
        return -1;
    }
    o->size = (o->size + 511) & ~(uint64_t)511;
    rc = q2w_create(o, NULL, 0, &len, &e);
    if (rc == Q2W_OK && len > SIZE_MAX) rc = Q2W_ERR_LIMIT;
    if (rc != Q2W_OK) { report_error(NULL, rc, &e); return -1; }
    buf = malloc((size_t)len);
    if (!buf) { sys_fail(path, ENOMEM); return -1; }
    rc = q2w_create(o, buf, (size_t)len, &len, &e);
    if (rc != Q2W_OK) { report_error(NULL, rc, &e); free(buf); return -1; }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) { sys_fail(path, errno); free(buf); return -1; }
    rc = q2w_pwrite_full(fd, 0, buf, (size_t)len);
    free(buf);
    if (rc < 0 || close(fd) < 0) {
        sys_fail(path, rc < 0 ? -rc : errno);
        if (rc < 0) close(fd);
        return -1;
    }
    return 0;
}

static int cmd_create(int argc, char **argv)
{
    args a;
    uint64_t size = 0;
    if (parse_args(argc, argv, OPT_O, 1, 2, &a) < 0) return 1;
    if (a.npos > 1 && parse_size(a.pos[1], &size) < 0) {
        bad_usage("bad size ", a.pos[1]);
        return 1;
    }
    if (!size && !a.c.backing) {
        bad_usage("a size is needed (or a backing file)", NULL);
        return 1;
    }
    a.c.size = size;
    if (backing_defaults(a.pos[0], &a.c) < 0) return 1;
    if (create_image(a.pos[0], &a.c) < 0) return 1;
    printf("Formatting '%s', fmt=qcow2 compat=%s cluster_size=%lu "
           "refcount_bits=%lu size=%llu",
           a.pos[0], a.c.version == 2 ? "0.10" : "1.1",
           (unsigned long)(a.c.cluster_size ? a.c.cluster_size : 65536u),
           (unsigned long)(a.c.refcount_bits ? a.c.refcount_bits : 16u),
           (unsigned long long)a.c.size);
    if (a.c.backing)
        printf(" backing_file=%s backing_fmt=%s", a.c.backing,
               a.c.backing_fmt);
    printf("\n");
    return 0;
}

/* q2w_close after a failure: keep what was written, report nothing new. */
static void close_quietly(disk *d)
{
    (void)disk_run(d, q2w_close(&d->img));
}

/* ---- snapshots ---------------------------------------------------------- */
/* An error of a snapshot operation; one naming a snapshot that is not
 * there names it. */
static void snap_err(const disk *d, int rc, const char *name)
{
    if (rc == Q2W_ERR_NOT_FOUND) report_error(name, rc, q2w_error(&d->img));
    else disk_err(d, rc);
}

/* qemu-img's snapshot table, DATE in UTC: 0, or -1 (printed). */
static int print_snapshots(disk *d)
{
    q2w_info in;
    q2w_snapshot sn;
    uint32_t i;
    q2w_info_get(&d->img, &in);
    printf("Snapshot list:\n%-10s%-17s%8s%20s%13s\n", "ID", "TAG", "VM SIZE",
           "DATE", "VM CLOCK");
    for (i = 0; i < in.nb_snapshots; i++) {
        char size[40], date[32] = "-", clk[48];
        time_t t;
        struct tm tm;
        uint64_t secs;
        int rc = disk_run(d, q2w_snapshot_get(&d->img, i, &sn));
        if (rc != Q2W_OK) {
            fflush(stdout);
            disk_err(d, rc);
            return -1;
        }
        t = (time_t)sn.date_sec;
        if (gmtime_r(&t, &tm))
            strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S", &tm);
        secs = sn.vm_clock_ns / 1000000000u;
        snprintf(clk, sizeof clk, "%02llu:%02u:%02u.%03u",
                 (unsigned long long)(secs / 3600), (unsigned)(secs / 60 % 60),
                 (unsigned)(secs % 60),
                 (unsigned)(sn.vm_clock_ns / 1000000u % 1000u));
        printf("%-9s %-16s %8s%20s%13s\n", sn.id, sn.name,
               human(sn.vm_state_size, size, sizeof size), date, clk);
    }
    return 0;
}

/* snapshot create|delete|apply IMG NAME, snapshot list IMG; and qemu-img's
 * spellings: snapshot -c|-d|-a NAME IMG, snapshot -l IMG */
static int cmd_snapshot(int argc, char **argv)
{
    args a;
    disk *d;
    q2w_snapshot sn;
    struct timespec now;
    const char *name;
    char *qargv[6];
    int rc, sub, printed = 0;
    if (argc < 3) {
        bad_usage("snapshot needs create, delete, apply or list", NULL);
        return 1;
    }
    if (argv[2][0] == '-' && argv[2][1] && strchr("cdal", argv[2][1]) &&
        !argv[2][2]) {
        static char *const subs[] = {"create", "delete", "apply", "list"};
        int l = argv[2][1] == 'l';
        if (argc != (l ? 4 : 5)) {
            bad_usage(l ? "snapshot -l takes IMG"
                        : "snapshot -c|-d|-a takes NAME IMG", NULL);
            return 1;
        }
        qargv[0] = argv[0];
        qargv[1] = argv[1];
        qargv[2] = subs[strchr("cdal", argv[2][1]) - "cdal"];
        qargv[3] = argv[l ? 3 : 4];
        qargv[4] = l ? NULL : argv[3];
        qargv[5] = NULL;
        argv = qargv;
        argc = l ? 4 : 5;
    }
    if (!strcmp(argv[2], "create")) {
        sub = 'c';
        cmd = "snapshot create";
    } else if (!strcmp(argv[2], "delete")) {
        sub = 'd';
        cmd = "snapshot delete";
    } else if (!strcmp(argv[2], "apply")) {
        sub = 'a';
        cmd = "snapshot apply";
    } else if (!strcmp(argv[2], "list")) {
        sub = 'l';
        cmd = "snapshot list";
    } else {
        bad_usage("snapshot needs create, delete, apply or list, not ", argv[2]);
        return 1;
    }
    /* the subcommand's own arguments start at argv[3] */
    if (parse_args(argc - 1, argv + 1, 0, sub == 'l' ? 1 : 2,
                   sub == 'l' ? 1 : 2, &a) < 0)
        return 1;
    if (sub == 'l') {
        q2w_info in;
        d = disk_open(a.pos[0], FMT_QCOW2, 0, 0, 1);
        if (!d) return 1;
        q2w_info_get(&d->img, &in);
        rc = in.nb_snapshots ? print_snapshots(d) : 0;
        disk_free(d);
        return rc == 0 ? 0 : 1;
    }
    name = a.pos[1];
    d = disk_open(a.pos[0], FMT_QCOW2, 1, 0, 0);
    if (!d) return 1;
    if (sub == 'd') {
        rc = disk_run(d, q2w_snapshot_delete(&d->img, name));
    } else if (sub == 'a') {
        rc = disk_run(d, q2w_snapshot_apply(&d->img, name));
    } else {
        /* one name, one snapshot: delete and export -s take the first */
        rc = disk_run(d, q2w_snapshot_find(&d->img, name, &sn));
        if (rc == Q2W_OK) {
            say("a snapshot of that name exists: ", name);
            rc = Q2W_ERR_ARG;
            printed = 1;
        } else if (rc == Q2W_ERR_NOT_FOUND) {
            if (clock_gettime(CLOCK_REALTIME, &now) < 0) {
                sys_fail("clock_gettime", errno);
                rc = Q2W_ERR_ARG;
                printed = 1;
            } else {
                rc = disk_run(d, q2w_snapshot_create(
                                     &d->img, name, (uint32_t)now.tv_sec,
                                     (uint32_t)now.tv_nsec, 0));
                if (rc == Q2W_OK)
                    rc = disk_run(d, q2w_snapshot_find(&d->img, name, &sn));
            }
        }
    }
    if (rc != Q2W_OK && !printed) snap_err(d, rc, name);
    if (rc == Q2W_OK) {
        rc = disk_run(d, q2w_close(&d->img));
        if (rc != Q2W_OK) disk_err(d, rc);
    } else {
        close_quietly(d);
    }
    if (rc == Q2W_OK && sub == 'c')
        printf("snapshot '%s' created (ID %s)\n", name, sn.id);
    else if (rc == Q2W_OK && sub == 'a')
        printf("snapshot '%s' applied\n", name);
    else if (rc == Q2W_OK)
        printf("snapshot '%s' deleted\n", name);
    disk_free(d);
    return rc == Q2W_OK ? 0 : 1;
}

/* ---- info --------------------------------------------------------------- */
static void print_bits(const char *label, uint64_t bits,
                       const char *const *names, unsigned n)
{
    const char *sep = " (";
    unsigned i;
    printf("%s: 0x%llx", label, (unsigned long long)bits);
    for (i = 0; i < 64; i++) {
        if (!(bits >> i & 1u)) continue;
        if (i < n) printf("%s%s", sep, names[i]);
        else printf("%sbit %u", sep, i);
        sep = ", ";
    }
    printf("%s\n", bits ? ")" : "");
}

/* ---- JSON output (qemu-img's key names) ------------------------------------ */
/* s as a JSON string: quotes, backslashes and control bytes escaped (the
 * first n bytes; a NUL among them too). */
static void json_str(const char *s, size_t n)
{
    size_t i;
    putchar('"');
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') printf("\\%c", c);
        else if (c < 0x20) printf("\\u%04x", c);
        else putchar(c);
    }
    putchar('"');
}

static void json_key_str(const char *indent, const char *key, const char *v, int comma)
{
    printf("%s\"%s\": ", indent, key);
    json_str(v, strlen(v));
    printf("%s\n", comma ? "," : "");
}

static void json_key_u64(const char *indent, const char *key, uint64_t v, int comma)
{
    printf("%s\"%s\": %llu%s\n", indent, key, (unsigned long long)v, comma ? "," : "");
}

static void json_key_bool(const char *indent, const char *key, int v, int comma)
{
    printf("%s\"%s\": %s%s\n", indent, key, v ? "true" : "false", comma ? "," : "");
}

/* qemu-img info --output=json's keys for what q2w_info holds. */
static int info_json(disk *d, const char *path)
{
    q2w_info in;
    struct stat st;
    uint32_t i;
    q2w_info_get(&d->img, &in);
    printf("{\n");
    if (in.nb_snapshots) {
        printf("    \"snapshots\": [\n");
        for (i = 0; i < in.nb_snapshots; i++) {
            q2w_snapshot sn;
            int rc = disk_run(d, q2w_snapshot_get(&d->img, i, &sn));
            if (rc != Q2W_OK) {
                fflush(stdout);
                disk_err(d, rc);
                return -1;
            }
            printf("        {\n");
            json_key_u64("            ", "vm-clock-nsec", sn.vm_clock_ns % 1000000000u, 1);
            printf("            \"name\": ");
            json_str(sn.name, strlen(sn.name));  /* up to a NUL, as qemu */
            printf(",\n");
            json_key_u64("            ", "date-sec", sn.date_sec, 1);
            json_key_u64("            ", "date-nsec", sn.date_nsec, 1);
            json_key_u64("            ", "vm-clock-sec", sn.vm_clock_ns / 1000000000u, 1);
            printf("            \"id\": ");
            json_str(sn.id, strlen(sn.id));
            printf(",\n");
            json_key_u64("            ", "vm-state-size", sn.vm_state_size, 0);
            printf("        }%s\n", i + 1 < in.nb_snapshots ? "," : "");
        }
        printf("    ],\n");
    }
    if (in.backing_name) {
        char *p = relative_to(path, in.backing_name);
        if (in.backing_format) json_key_str("    ", "backing-filename-format", in.backing_format, 1);
        json_key_str("    ", "full-backing-filename", p ? p : in.backing_name, 1);
        json_key_str("    ", "backing-filename", in.backing_name, 1);
        free(p);
    }
    json_key_u64("    ", "virtual-size", in.size, 1);
    json_key_str("    ", "filename", path, 1);
    json_key_u64("    ", "cluster-size", in.cluster_size, 1);
    json_key_str("    ", "format", "qcow2", 1);
    if (fstat(d->fd, &st) == 0) json_key_u64("    ", "actual-size", (uint64_t)st.st_blocks * 512, 1);
    printf("    \"format-specific\": {\n        \"type\": \"qcow2\",\n        \"data\": {\n");
    json_key_str("            ", "compat", in.version == 2 ? "0.10" : "1.1", 1);
    json_key_str("            ", "compression-type", in.compression_type == 1 ? "zstd" : "zlib", 1);
    if (in.version >= 3) {
        json_key_bool("            ", "lazy-refcounts", (in.compatible & 1) != 0, 1);
        json_key_u64("            ", "refcount-bits", in.refcount_bits, 1);
        json_key_bool("            ", "corrupt", (in.incompatible & 2) != 0, 1);
        json_key_bool("            ", "extended-l2", (in.incompatible & 16) != 0, 0);
    } else {
        json_key_u64("            ", "refcount-bits", in.refcount_bits, 0);
    }
    printf("        }\n    },\n");
    json_key_bool("    ", "dirty-flag", (in.incompatible & 1) != 0, 0);
    printf("}\n");
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    static const char *const incompat[] = {"dirty", "corrupt",
                                           "external data file",
                                           "compression type",
                                           "extended L2 entries"};
    static const char *const compat[] = {"lazy refcounts"};
    static const char *const autoclear[] = {"bitmaps", "raw external data"};
    char h[40];
    args a;
    disk *d;
    q2w_info in;
    struct stat st;
    if (parse_args(argc, argv, OPT_OUTPUT, 1, 1, &a) < 0) return 1;
    d = disk_open(a.pos[0], FMT_QCOW2, 0, 0, 1);
    if (!d) return 1;
    if (a.json) {
        int rc = info_json(d, a.pos[0]);
        disk_free(d);
        return rc < 0 ? 1 : 0;
    }
    q2w_info_get(&d->img, &in);
    printf("image: %s\nfile format: qcow2\n", a.pos[0]);
    printf("virtual size: %s (%llu bytes)\n", human(in.size, h, sizeof h),
           (unsigned long long)in.size);
    if (fstat(d->fd, &st) == 0)
        printf("file length: %s (%llu bytes)\n",
               human((uint64_t)st.st_size, h, sizeof h),
               (unsigned long long)st.st_size);
    printf("version: %d (compat %s)\n", in.version,
           in.version == 2 ? "0.10" : "1.1");
    printf("cluster size: %lu\n", (unsigned long)in.cluster_size);
    printf("refcount bits: %lu\n", (unsigned long)in.refcount_bits);
    printf("L1 table: %lu entries at offset %llu (0x%llx)\n",
           (unsigned long)in.l1_size, (unsigned long long)in.l1_offset,
           (unsigned long long)in.l1_offset);
    printf("refcount table: %lu clusters at offset %llu (0x%llx)\n",
           (unsigned long)in.refcount_table_clusters,
           (unsigned long long)in.refcount_table_offset,
           (unsigned long long)in.refcount_table_offset);
    printf("snapshots: %lu\n", (unsigned long)in.nb_snapshots);
    if (in.backing_name) {
        char *p = relative_to(a.pos[0], in.backing_name);
        printf("backing file: %s (actual path: %s)\n", in.backing_name,
               p ? p : in.backing_name);
        printf("backing file format: %s\n",
               in.backing_format ? in.backing_format : "(probed)");
        free(p);
    }
    print_bits("incompatible features", in.incompatible, incompat, 5);
    print_bits("compatible features", in.compatible, compat, 1);
    print_bits("autoclear features", in.autoclear, autoclear, 2);
    printf("header length: %lu\n", (unsigned long)in.header_length);
    if (in.nb_snapshots && print_snapshots(d) < 0) {
        disk_free(d);
        return 1;
    }
    disk_free(d);
    return 0;
}

/* ---- write -------------------------------------------------------------- */

static int cmd_write(int argc, char **argv)
{
    args a;
    disk *d;
    uint64_t off, total = 0;
    unsigned char *buf;
    int in, rc = Q2W_OK;
    if (parse_args(argc, argv, OPT_NO_FLUSH, 3, 3, &a) < 0) return 1;
    if (parse_size(a.pos[1], &off) < 0) {
        bad_usage("bad offset ", a.pos[1]);
        return 1;
    }
    in = strcmp(a.pos[2], "-") ? open(a.pos[2], O_RDONLY) : 0;
    if (in < 0) { sys_fail(a.pos[2], errno); return 1; }
    buf = (unsigned char *)malloc(CHUNK);
    d = buf ? disk_open(a.pos[0], FMT_QCOW2, 1, 0, 0) : NULL;
    if (!d) {
        if (!buf) sys_fail(a.pos[2], ENOMEM);
        free(buf);
        if (in) close(in);
        return 1;
    }
    d->no_flush = a.no_flush;
    for (;;) {
        long n = read_full(in, buf, CHUNK);
        if (n < 0) {
            sys_fail(a.pos[2], errno);
            rc = -1;
            break;
        }
        if (n == 0) break;
        if (off + total < off) { /* wrapped: refused as out of range */
            rc = q2w_write(&d->img, UINT64_MAX, buf, 1);
        } else {
            rc = disk_run(d, q2w_write(&d->img, off + total, buf, (size_t)n));
        }
        if (rc != Q2W_OK) { disk_err(d, rc); break; }
        total += (uint64_t)n;
    }
    if (rc == Q2W_OK) {
        rc = disk_run(d, q2w_close(&d->img));
        if (rc != Q2W_OK) disk_err(d, rc);
    } else {
        close_quietly(d);
    }
    if (rc == Q2W_OK)
        printf("wrote %llu bytes at offset %llu\n", (unsigned long long)total,
               (unsigned long long)off);
    disk_free(d);
    free(buf);
    if (in) close(in);
    return rc == Q2W_OK ? 0 : 1;
}

/* ---- import ------------------------------------------------------------- */
/* -c: each cluster compressed (as qemu-img convert -c: one that does not
 * shrink is stored as it is); work holds Q2W_CZ_WORK(cluster size). */
static unsigned char *import_work;

static int import_run(disk *d, uint64_t voff, const unsigned char *p,
                      size_t len)
{
    int rc = Q2W_OK;
    if (!import_work) {
        rc = disk_run(d, q2w_write(&d->img, voff, p, len));
    } else {
        q2w_info in;
        size_t i, n;
        q2w_info_get(&d->img, &in);
        for (i = 0; i < len && rc == Q2W_OK; i += n) {
            size_t in_cl = (size_t)((voff + i) % in.cluster_size);
            const unsigned char *from = p + i;
            n = len - i < in.cluster_size - in_cl ? len - i : in.cluster_size - in_cl;
            if (d->backing && (in_cl || (n < in.cluster_size && voff + i + n < in.size))) {
                /* part of a cluster over a backing file (convert -B): the
                 * rest of it is the backing file's - a plain write */
                rc = disk_run(d, q2w_write(&d->img, voff + i, from, n));
                continue;
            }
            if (n < in.cluster_size && voff + i + n < in.size) {
                /* the file ends inside the disk's last cluster (its size is
                 * rounded up to 512): that cluster zero-padded */
                unsigned char *pad = import_work + Q2W_CZ_WORK(in.cluster_size);
                size_t full = (size_t)(in.size - (voff + i));
                memcpy(pad, from, n);
                memset(pad + n, 0, full - n);
                from = pad;
                n = full;
            }
            rc = disk_run(d, q2w_write_compressed(&d->img, voff + i, from, n, import_work,
                                                  Q2W_CZ_WORK(in.cluster_size)));
        }
    }
    if (rc != Q2W_OK) disk_err(d, rc);
    return rc;
}

static int cmd_import(int argc, char **argv)
{
    args a;
    disk *d = NULL;
    off_t end;
    q2w_info in;
    unsigned char *buf = NULL;
    uint64_t size, pos, data = 0, zeros = 0;
    size_t piece;
    unsigned last = 101;
    int raw, rc = -1;
    if (parse_args(argc, argv, OPT_O | OPT_PROGRESS | OPT_NO_FLUSH | OPT_SYNC | OPT_COMPRESS,
                   2, 2, &a) < 0)
        return 1;
    if (a.c.backing) {
        bad_usage("import makes a whole image: no backing file", NULL);
        return 1;
    }
    raw = open(a.pos[0], O_RDONLY);
    if (raw < 0) {
        sys_fail(a.pos[0], errno);
        return 1;
    }
    /* lseek, not st_size: a block device is a fine raw disk too */
    end = lseek(raw, 0, SEEK_END);
    if (end < 0 || lseek(raw, 0, SEEK_SET) < 0) {
        sys_fail(a.pos[0], errno);
        close(raw);
        return 1;
    }
    size = (uint64_t)end;
    a.c.size = size;
    buf = (unsigned char *)malloc(CHUNK);
    if (!buf) { sys_fail(a.pos[0], ENOMEM); goto out; }
    if (create_image(a.pos[1], &a.c) < 0) goto out;
    d = disk_open(a.pos[1], FMT_QCOW2, 1, 0, 0);
    if (!d) goto out;
    d->no_flush = a.no_flush;
    q2w_info_get(&d->img, &in);
    if (a.compress && !(import_work = (unsigned char *)malloc(Q2W_CZ_WORK(in.cluster_size) +
                                                              in.cluster_size))) {
        sys_fail(a.pos[1], ENOMEM);
        goto out_close;
    }
    piece = in.cluster_size > PIECE ? in.cluster_size : PIECE;
    /* Only the data the file system holds is read (SEEK_DATA/SEEK_HOLE):
     * a hole is never read, its clusters stay unallocated. Each data run
     * is widened to whole clusters and read in pieces of PIECE
     * or one cluster, whichever is larger (so the clusters in a piece
     * are aligned); one
     * q2w_write per run of consecutive non-zero clusters, whose data
     * clusters the executor writes with one pwrite. */
    for (pos = 0; pos < size;) {
        uint64_t ds, de, hi;
        next_data(raw, pos, size, &ds, &de);
        if (ds >= size) break;
        ds &= ~((uint64_t)in.cluster_size - 1);
        if (ds > pos) pos = ds;
        hi = (de + in.cluster_size - 1) & ~((uint64_t)in.cluster_size - 1);
        if (hi > size || hi < de) hi = size;
        while (pos < hi) {
            size_t want = hi - pos < piece ? (size_t)(hi - pos) : piece;
            size_t i, e, run = (size_t)-1;
            long n = pread_upto(raw, pos, buf, want);
            if (n < 0 || (size_t)n != want) {
                if (n >= 0) say("file shrank while reading: ", a.pos[0]);
                else sys_fail(a.pos[0], errno);
                goto out_close;
            }
            for (i = 0; i < want; i = e) {
                e = want - i > in.cluster_size ? i + in.cluster_size : want;
                if (!all_zero(buf + i, e - i)) {
                    data++;
                    if (run == (size_t)-1) run = i;
                    continue;
                }
                if (run != (size_t)-1) {
                    if (import_run(d, pos + run, buf + run, i - run) != Q2W_OK)
                        goto out_close;
                    run = (size_t)-1;
                }
            }
            if (run != (size_t)-1 &&
                import_run(d, pos + run, buf + run, want - run) != Q2W_OK)
                goto out_close;
            pos += want;
            progress(&a, pos, size, &last);
        }
    }
    progress(&a, size, size, &last);
    zeros = (size + in.cluster_size - 1) / in.cluster_size - data;
    rc = disk_run(d, q2w_close(&d->img));
    if (rc != Q2W_OK) {
        disk_err(d, rc);
        rc = -1;
        goto out;
    }
    if (a.sync && (rc = sync_with_dir(d->fd, a.pos[1])) < 0) {
        sys_fail(a.pos[1], -rc);
        goto out;
    }
    printf("imported %llu bytes: %llu clusters of data, %llu zero clusters "
           "left out\n",
           (unsigned long long)size, (unsigned long long)data,
           (unsigned long long)zeros);
    rc = 0;
    goto out;
out_close:
    close_quietly(d);
out:
    disk_free(d);
    free(buf);
    free(import_work);
    import_work = NULL;
    close(raw);
    return rc == 0 ? 0 : 1;
}

/* the runs of data of a disk and its chain, in order (measure, below) */
typedef int (*data_fn)(void *user, uint64_t off, uint64_t len);

/* Clusters (of the target's size cs) holding data, counted once each: the
 * runs come in increasing order, *last the index counted last + 1 (0:
 * none yet). */
static void count_run(uint64_t off, uint64_t len, uint64_t cs, uint64_t *n, uint64_t *last)
{
    uint64_t a = off / cs, b = (off + len - 1) / cs;
    if (!len) return;
    if (*last && a < *last) a = *last;
    if (b >= a) *n += b - a + 1;
    if (b + 1 > *last) *last = b + 1;
}

typedef struct counter {
    uint64_t cs, n, last;
} counter;

static int count_fn(void *user, uint64_t off, uint64_t len)
{
    counter *c = (counter *)user;
    count_run(off, len, c->cs, &c->n, &c->last);
    return 0;
}

/* Where walk_data's current run lies: the layer's disk and the offset of
 * the run's first byte in its file (raw: the same; a qcow2 layer's data
 * extent: q2w_map's host), or layer NULL (compressed). */
static struct {
    disk *layer;
    uint64_t host;
} walk_run;
static int walk_data(disk *d, uint64_t off, uint64_t len, data_fn fn, void *user);

/* ---- convert ---------------------------------------------------------------- */
/* convert [-c] [-o OPTS] [-B BACKING [-F FMT]] [-p|-q] [-n] [-S] SRC DST: a
 * new image DST holding SRC's whole view (a raw file, or a qcow2 image with
 * its backing chain: flattened), as qemu-img convert -O qcow2: only the
 * runs of data SRC's chain holds are read, widened to DST's clusters;
 * clusters of zeros are left out; -c stores each cluster compressed. With
 * -B, DST names BACKING and holds only what SRC itself holds (qemu-img
 * convert -B): its data, and its zeros written as zeros over the part the
 * backing file covers; what SRC leaves unallocated is BACKING's. */
typedef struct conv_ctx {
    disk *src, *dst;
    unsigned char *buf;
    uint64_t cs, done, size, data;
    uint64_t under;    /* -B: bytes of DST the backing file covers */
    const args *a;
    unsigned last;
} conv_ctx;

/* -B: [off, off+len) of DST reads zeros over the backing file too. */
static int convert_zeros(conv_ctx *c, uint64_t off, uint64_t len)
{
    int rc;
    if (off >= c->under) return 0;
    if (len > c->under - off) len = c->under - off;
    rc = disk_run(c->dst, q2w_write_zeroes(&c->dst->img, off, len));
    if (rc != Q2W_OK) {
        disk_err(c->dst, rc);
        return -1;
    }
    return 0;
}

/* [pos, pos + want) of SRC's view, in buf: its clusters of data written to
 * DST (runs of them in one call), its clusters of zeros left out (-B: over
 * the backing file, written as zeros). */
static int convert_piece(conv_ctx *c, uint64_t pos, const unsigned char *buf, size_t want)
{
    size_t i, e, run = (size_t)-1;
    for (i = 0; i < want; i = e) {
        e = want - i > c->cs ? i + (size_t)c->cs : want;
        if (!all_zero(buf + i, e - i)) {
            c->data++;
            if (run == (size_t)-1) run = i;
            continue;
        }
        if (run != (size_t)-1) {
            if (import_run(c->dst, pos + run, buf + run, i - run) != Q2W_OK) return -1;
            run = (size_t)-1;
        }
        if (c->under && convert_zeros(c, pos + i, e - i) < 0) return -1;
    }
    if (run != (size_t)-1 && import_run(c->dst, pos + run, buf + run, want - run) != Q2W_OK)
        return -1;
    progress(c->a, pos + want, c->size, &c->last);
    return 0;
}

/* [a, b) of SRC's view read (through its chain) and converted. */
static int convert_copy(conv_ctx *c, uint64_t a, uint64_t b)
{
    uint64_t pos;
    for (pos = a; pos < b;) {
        size_t want = b - pos < CHUNK ? (size_t)(b - pos) : CHUNK;
        if (c->src->raw) {
            long n = pread_upto(c->src->fd, pos, c->buf, want);
            if (n < 0) { sys_fail(c->src->path, errno); return -1; }
            memset(c->buf + n, 0, want - (size_t)n);   /* (past its end: zeros) */
        } else {
            int rc = disk_run(c->src, q2w_read(&c->src->img, pos, c->buf, want));
            if (rc != Q2W_OK) { disk_err(c->src, rc); return -1; }
        }
        if (convert_piece(c, pos, c->buf, want) < 0) return -1;
        pos += want;
    }
    return 0;
}

/* The file of layer d mapped read-only (once), or NULL where it cannot be:
 * then the run is read as any other. */
static const unsigned char *layer_map(disk *d)
{
    struct stat st;
    void *m;
    if (d->map) return d->map;
    if (d->map_len || fstat(d->fd, &st) != 0 || st.st_size <= 0 ||
        (uint64_t)st.st_size > (uint64_t)(size_t)-1) {
        d->map_len = 1;   /* (tried) */
        return NULL;
    }
    m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, d->fd, 0);
    if (m == MAP_FAILED) {
        d->map_len = 1;
        return NULL;
    }
    (void)madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    d->map = (const unsigned char *)m;
    d->map_len = (size_t)st.st_size;
    return d->map;
}

static int convert_fn(void *user, uint64_t off, uint64_t len)
{
    conv_ctx *c = (conv_ctx *)user;
    uint64_t a = off / c->cs * c->cs, b = (off + len + c->cs - 1) / c->cs * c->cs;
    uint64_t ia, ib;
    disk *l = walk_run.layer;
    const unsigned char *m;
    /* -B: exactly the run (the rest of a cluster is DST's backing file's,
     * as qemu-img writes it), else widened to whole clusters of SRC's view */
    if (c->dst->backing) {
        a = off;
        b = off + len;
    }
    if (b > c->size) b = c->size;
    if (a < c->done) a = c->done;
    if (a >= b) return 0;
    /* The whole clusters inside the run come straight from the layer's
     * file, mapped: written to DST from there, never copied into buf (one
     * copy of the data, where reading it would make two); the partial
     * ones at its ends through the chain. */
    ia = (off + c->cs - 1) / c->cs * c->cs;
    ib = (off + len) / c->cs * c->cs;
    if (ia < a) ia = a;
    if (ib > b) ib = b;
    if (l && ib > ia && (m = layer_map(l)) != NULL &&
        walk_run.host + (ib - off) <= l->map_len) {
        uint64_t pos;
        if (convert_copy(c, a, ia) < 0) return -1;
        for (pos = ia; pos < ib;) {
            size_t want = ib - pos < CHUNK ? (size_t)(ib - pos) : CHUNK;
            uint64_t at = walk_run.host + (pos - off), pa, pb;
            if (convert_piece(c, pos, m + at, want) < 0) return -1;
            /* its pages let go (they stay in the page cache): the
             * process holds a chunk of the mapping, not the file */
            pa = (at + 4095) / 4096 * 4096;
            pb = (at + want) / 4096 * 4096;
            if (pb > pa)
                (void)madvise((void *)(uintptr_t)(m + pa), (size_t)(pb - pa), MADV_DONTNEED);
            pos += want;
        }
        if (convert_copy(c, ib, b) < 0) return -1;
    } else if (convert_copy(c, a, b) < 0) {
        return -1;
    }
    if (b > c->done) c->done = b;
    return 0;
}

/* -B: the runs SRC itself decides (not its backing chain's), in order:
 * data (and compressed) to convert_fn, zeros - a zero flag, a raw file's
 * hole, an unallocated run nothing backs in SRC - written as zeros; what
 * SRC's backing file serves is left to DST's. (qemu-img decides a run
 * that starts over SRC's backing file and runs past its end by its start:
 * left whole to DST's backing; here its part past the end is zeros, as
 * SRC reads it.) */
static int convert_top(conv_ctx *c)
{
    disk *d = c->src;
    uint64_t off = 0, end = d->size;
    walk_run.layer = NULL;   /* (read through the chain, not mapped) */
    while (off < end) {
        uint64_t len;
        int data, zero;
        if (d->raw) {
            uint64_t ds, de;
            next_data(d->fd, off, end, &ds, &de);
            data = ds == off;
            zero = !data;
            len = (data ? de : ds) - off;
        } else {
            q2w_extent x;
            int rc = disk_run(d, q2w_map(&d->img, off, end - off, &x));
            if (rc != Q2W_OK) {
                disk_err(d, rc);
                return -1;
            }
            data = x.kind == Q2W_EXTENT_DATA || x.kind == Q2W_EXTENT_COMPRESSED;
            /* zeros: a zero flag, or unallocated where nothing backs SRC
             * (no backing file, or past its end): SRC reads zeros there */
            zero = x.kind == Q2W_EXTENT_ZERO;
            len = x.len;
        }
        if (data && convert_fn(c, off, len) < 0) return -1;
        if (zero && convert_zeros(c, off, len) < 0) return -1;
        off += len;
    }
    return 0;
}

/* A plain convert's file reserved up front (Linux: fallocate, the size
 * kept): the blocks for what qemu-img measure says it needs - the data
 * the chain holds and the metadata over it - so that writing does not
 * allocate them page by page. The bytes reserved (0: none). */
static uint64_t convert_reserve(conv_ctx *c, args *a)
{
#if defined(FALLOC_FL_KEEP_SIZE) && defined(FALLOC_FL_PUNCH_HOLE)
    counter n;
    uint64_t req, full;
    q2w_error_info e;
    if (a->compress || a->c.backing) return 0;
    n.cs = c->cs;
    n.n = n.last = 0;
    if (walk_data(c->src, 0, c->src->size, count_fn, &n) < 0) return 0;
    if (q2w_measure(&a->c, n.n * c->cs, &req, &full, &e) != Q2W_OK) return 0;
    if (fallocate(c->dst->fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)req) != 0) return 0;
    return req;
#else
    (void)c;
    (void)a;
    return 0;
#endif
}

/* What was reserved past the file's end let go again (the image took
 * less: clusters of zeros left out). */
static void convert_unreserve(conv_ctx *c, uint64_t reserved)
{
#if defined(FALLOC_FL_KEEP_SIZE) && defined(FALLOC_FL_PUNCH_HOLE)
    struct stat st;
    if (reserved && fstat(c->dst->fd, &st) == 0 && (uint64_t)st.st_size < reserved)
        (void)fallocate(c->dst->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, st.st_size,
                        (off_t)(reserved - (uint64_t)st.st_size));
#else
    (void)c;
    (void)reserved;
#endif
}

static int cmd_convert(int argc, char **argv)
{
    args a;
    conv_ctx c;
    q2w_info in;
    uint64_t reserved;
    int rc = -1, i;
    memset(&c, 0, sizeof c);
    /* qemu-img convert names DST's backing file -B */
    for (i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-B")) argv[i][1] = 'b';
    if (parse_args(argc, argv, OPT_O | OPT_PROGRESS | OPT_NO_FLUSH | OPT_SYNC | OPT_COMPRESS,
                   2, 2, &a) < 0)
        return 1;
    c.a = &a;
    c.last = 101;
    c.src = disk_open(a.pos[0], FMT_PROBE, 0, 0, 0);
    if (!c.src) return 1;
    a.c.size = c.src->size;
    c.buf = (unsigned char *)malloc(CHUNK);
    if (!c.buf) { sys_fail(a.pos[0], ENOMEM); goto out; }
    if (create_image(a.pos[1], &a.c) < 0) goto out;
    c.dst = disk_open(a.pos[1], FMT_QCOW2, 1, 0, 0);
    if (!c.dst) goto out;
    c.dst->no_flush = a.no_flush;
    q2w_info_get(&c.dst->img, &in);
    c.cs = in.cluster_size;
    c.size = in.size;
    if (c.dst->backing) c.under = c.dst->backing->size < c.size ? c.dst->backing->size : c.size;
    if (a.compress && !(import_work = (unsigned char *)malloc(Q2W_CZ_WORK(in.cluster_size) +
                                                              in.cluster_size))) {
        sys_fail(a.pos[1], ENOMEM);
        goto out_close;
    }
    reserved = convert_reserve(&c, &a);
    if (a.c.backing ? convert_top(&c) < 0
                    : walk_data(c.src, 0, c.src->size, convert_fn, &c) < 0)
        goto out_close;
    progress(&a, c.size, c.size, &c.last);
    rc = disk_run(c.dst, q2w_close(&c.dst->img));
    if (rc != Q2W_OK) {
        disk_err(c.dst, rc);
        rc = -1;
        goto out;
    }
    convert_unreserve(&c, reserved);
    if (a.sync && (rc = sync_with_dir(c.dst->fd, a.pos[1])) < 0) {
        sys_fail(a.pos[1], -rc);
        goto out;
    }
    printf("converted %llu bytes: %llu clusters of data\n", (unsigned long long)c.size,
           (unsigned long long)c.data);
    rc = 0;
    goto out;
out_close:
    close_quietly(c.dst);
out:
    disk_free(c.dst);
    disk_free(c.src);
    free(c.buf);
    free(import_work);
    import_work = NULL;
    return rc == 0 ? 0 : 1;
}

/* ---- export ------------------------------------------------------------- */
/* n bytes of buf to `out` at pos: all of them, or (sparse) only the 4 KiB
 * grains that are not all zeros, the rest left as the hole it is. 0 or
 * -errno. */
static int write_out(int out, int sparse, uint64_t pos,
                     const unsigned char *buf, size_t n)
{
    const size_t grain = 4096;
    size_t i, e, run = (size_t)-1;
    if (!sparse) return q2w_pwrite_full(out, pos, buf, n);
    for (i = 0; i <= n; i = e) {
        e = n - i > grain ? i + grain : n;
        if (i < n && !all_zero(buf + i, e - i)) {
            if (run == (size_t)-1) run = i;
            continue;
        }
        if (run != (size_t)-1) {
            int w = q2w_pwrite_full(out, pos + run, buf + run, i - run);
            if (w < 0) return w;
        }
        run = (size_t)-1;
        if (i == n) break;
    }
    return 0;
}

/* One extent (q2w_map's) of the active disk or of snapshot sn to `out`:
 * zeros are a hole (sparse) or written; data is read straight from the
 * image file at its host offset, in PIECEs; backing-file and compressed
 * bytes through the backing chain and the planner. 0, or -1 (printed). */
static int export_extent(disk *d, const q2w_snapshot *sn, const q2w_extent *x,
                         int out, int sparse, unsigned char *buf,
                         const char *out_path)
{
    uint64_t done = 0;
    if (x->kind == Q2W_EXTENT_ZERO) {
        int w = sparse ? 0 : q2w_pwrite_full(out, x->off, NULL, x->len);
        if (w < 0) { sys_fail(out_path, -w); return -1; }
        return 0;
    }
    while (done < x->len) {
        size_t n = x->len - done < PIECE ? (size_t)(x->len - done) : PIECE;
        uint64_t voff = x->off + done;
        int rc = 0, w;
        if (x->kind == Q2W_EXTENT_DATA) {
            rc = q2w_pread_full(d->fd, x->host + done, buf, n);
            if (rc < 0) { sys_fail(d->path, -rc); return -1; }
        } else if (x->kind == Q2W_EXTENT_BACKING) {
            if (backing_read(d->backing, voff, buf, n) < 0) return -1;
        } else {
            rc = sn ? disk_run(d, q2w_read_snapshot(&d->img, sn, voff, buf, n))
                    : disk_run(d, q2w_read(&d->img, voff, buf, n));
            if (rc != Q2W_OK) { disk_err(d, rc); return -1; }
        }
        w = write_out(out, sparse, voff, buf, n);
        if (w < 0) { sys_fail(out_path, -w); return -1; }
        done += n;
    }
    return 0;
}

static int cmd_export(int argc, char **argv)
{
    args a;
    disk *d;
    struct stat st;
    unsigned char *buf = NULL;
    uint64_t pos, size;
    unsigned last = 101;
    int out = -1, rc = -1, sparse, tmp_live = 0;
    char tmp[4096];
    q2w_snapshot sn;
    if (parse_args(argc, argv, OPT_PROGRESS | OPT_SYNC | OPT_SNAPSHOT, 2, 2,
                   &a) < 0)
        return 1;
    d = disk_open(a.pos[0], FMT_QCOW2, 0, 0, 0);
    if (!d) return 1;
    size = d->size;
    if (a.snapshot) { /* found before RAW is touched */
        rc = disk_run(d, q2w_snapshot_find(&d->img, a.snapshot, &sn));
        if (rc != Q2W_OK) {
            snap_err(d, rc, a.snapshot);
            rc = -1;
            goto done;
        }
        if (sn.disk_size) size = sn.disk_size;
        rc = -1;
    }
    buf = (unsigned char *)malloc(CHUNK);
    /* A file is written under a temporary name beside it and renamed
     * when complete, so a failed export leaves no partial RAW (and an
     * existing RAW untouched); a device is written in place. */
    if (stat(a.pos[1], &st) == 0 && !S_ISREG(st.st_mode)) {
        out = open(a.pos[1], O_WRONLY);
    } else if (strlen(a.pos[1]) + 16 > sizeof tmp) {
        errno = ENAMETOOLONG;
    } else {
        mode_t mask = umask(0);
        umask(mask);
        snprintf(tmp, sizeof tmp, "%s.qcow2w-XXXXXX", a.pos[1]);
        out = mkstemp(tmp);
        if (out >= 0) {
            tmp_live = 1;
            if (fchmod(out, 0666 & ~mask) < 0) { close(out); out = -1; }
        }
    }
    if (out < 0 || !buf || fstat(out, &st) < 0) {
        sys_fail(a.pos[1], buf ? errno : ENOMEM);
        goto done;
    }
    /* A regular file starts as one hole of the right size; only the data
     * is written. Anything else (a device) gets every byte. */
    sparse = S_ISREG(st.st_mode);
    if (sparse && ftruncate(out, (off_t)size) < 0) {
        sys_fail(a.pos[1], errno);
        goto done;
    }
    /* Extent by extent (q2w_map): the cost follows the allocated
     * clusters, not the virtual size; holes and zero clusters are never
     * read. */
    for (pos = 0; pos < size;) {
        q2w_extent x;
        rc = a.snapshot
                 ? disk_run(d, q2w_map_snapshot(&d->img, &sn, pos, size - pos, &x))
                 : disk_run(d, q2w_map(&d->img, pos, size - pos, &x));
        if (rc != Q2W_OK) {
            disk_err(d, rc);
            rc = -1;
            goto done;
        }
        rc = export_extent(d, a.snapshot ? &sn : NULL, &x, out, sparse, buf,
                           a.pos[1]);
        if (rc < 0) goto done;
        pos += x.len;
        progress(&a, pos, size, &last);
    }
    if (tmp_live && a.sync && fsync(out) < 0) {
        sys_fail(a.pos[1], errno);
        rc = -1;
        goto done;
    }
    if (tmp_live) {
        if (rename(tmp, a.pos[1]) < 0) {
            sys_fail(a.pos[1], errno);
            rc = -1;
            goto done;
        }
        tmp_live = 0;
    }
    if (a.sync && (rc = sync_with_dir(out, a.pos[1])) < 0) {
        sys_fail(a.pos[1], -rc);
        goto done;
    }
    rc = close(out);
    out = -1;
    if (rc < 0) { sys_fail(a.pos[1], errno); goto done; }
    printf("exported %llu bytes", (unsigned long long)size);
    if (a.snapshot) printf(" (snapshot '%s')", a.snapshot);
    printf("\n");
done:
    if (out >= 0) close(out);
    if (tmp_live) unlink(tmp);
    free(buf);
    disk_free(d);
    return rc == 0 ? 0 : 1;
}

/* ---- check -------------------------------------------------------------- */
/* Full scan; 0 and the result, or 1 (the check could not run; printed). */
static int run_check(int fd, unsigned flags, q2w_check_result *res)
{
    q2w_io io;
    q2w_fdbox box;
    size_t work_len = 0;
    void *work;
    int rc;
    q2w_posix_io(&io, fd, &box);
    rc = q2w_check_work_size(&io, &work_len, &res->error);
    if (rc != Q2W_OK) {
        report_error(NULL, rc, &res->error);
        return 1;
    }
    work = malloc(work_len ? work_len : 1);
    if (!work) { sys_fail("check", ENOMEM); return 1; }
    rc = q2w_check(&io, work, work_len, flags, res);
    free(work);
    /* A refused repair still checked everything: the findings stand. */
    if (rc == Q2W_ERR_UNSUPPORTED && res->error.what) {
        report_error("nothing repaired", rc, &res->error);
        return 0;
    }
    if (rc != Q2W_OK) { report_error(NULL, rc, &res->error); return 1; }
    return 0;
}

static void print_findings(const q2w_check_result *r)
{
    size_t i;
    for (i = 0; i < r->n_findings; i++) {
        const q2w_finding *f = &r->findings[i];
        if (f->kind == Q2W_FIND_UNKNOWN) {
            printf("%s at 0x%llx (0x%llx): its clusters may look leaked; "
                   "repair frees nothing\n",
                   q2w_finding_name(f->kind), (unsigned long long)f->where,
                   (unsigned long long)f->stored);
            continue;
        }
        printf("%s: offset 0x%llx (entry at 0x%llx): stored %llu, "
               "references %llu\n",
               q2w_finding_name(f->kind), (unsigned long long)f->offset,
               (unsigned long long)f->where, (unsigned long long)f->stored,
               (unsigned long long)f->computed);
    }
    if (r->leaks + r->corruptions + r->unknown > r->n_findings)
        printf("... and %llu more\n",
               (unsigned long long)(r->leaks + r->corruptions + r->unknown -
                                    r->n_findings));
}

static int summary(const q2w_check_result *r)
{
    if (r->corruptions)
        printf("\n%llu errors were found on the image.\n"
               "Data may be corrupted, or further writes to the image may "
               "corrupt it.\n",
               (unsigned long long)r->corruptions);
    if (r->leaks)
        printf("\n%llu leaked clusters were found on the image.\n"
               "This means waste of disk space, but no harm to data.\n",
               (unsigned long long)r->leaks);
    if (!r->corruptions && !r->leaks)
        printf("No errors were found on the image.\n");
    if (r->total_clusters && r->allocated_clusters)
        printf("%llu/%llu = %.2f%% allocated, %.2f%% fragmented, %.2f%% compressed clusters\n",
               (unsigned long long)r->allocated_clusters,
               (unsigned long long)r->total_clusters,
               100.0 * (double)r->allocated_clusters / (double)r->total_clusters,
               100.0 * (double)r->fragmented_clusters / (double)r->allocated_clusters,
               100.0 * (double)r->compressed_clusters / (double)r->allocated_clusters);
    printf("Image end offset: %llu\n",
           (unsigned long long)r->image_end_offset);
    return r->corruptions ? 2 : r->leaks ? 3 : 0;
}

/* qemu-img check --output=json's keys (a count that is 0 left out, as
 * qemu leaves it out); the exit status as without it. */
static int check_json(const q2w_check_result *r, const q2w_check_result *fixed,
                      const char *path)
{
    printf("{\n");
    json_key_u64("    ", "image-end-offset", r->image_end_offset, 1);
    if (r->compressed_clusters)
        json_key_u64("    ", "compressed-clusters", r->compressed_clusters, 1);
    json_key_u64("    ", "total-clusters", r->total_clusters, 1);
    json_key_u64("    ", "check-errors", r->check_errors, 1);
    if (r->leaks) json_key_u64("    ", "leaks", r->leaks, 1);
    if (r->corruptions) json_key_u64("    ", "corruptions", r->corruptions, 1);
    if (fixed && fixed->leaks_fixed) json_key_u64("    ", "leaks-fixed", fixed->leaks_fixed, 1);
    if (fixed && fixed->corruptions_fixed)
        json_key_u64("    ", "corruptions-fixed", fixed->corruptions_fixed, 1);
    if (r->allocated_clusters)
        json_key_u64("    ", "allocated-clusters", r->allocated_clusters, 1);
    json_key_str("    ", "filename", path, 1);
    json_key_str("    ", "format", "qcow2", r->fragmented_clusters != 0);
    if (r->fragmented_clusters)
        json_key_u64("    ", "fragmented-clusters", r->fragmented_clusters, 0);
    printf("}\n");
    return r->corruptions ? 2 : r->leaks ? 3 : 0;
}

static int cmd_check(int argc, char **argv)
{
    static q2w_check_result res; /* about 1.5 KiB of findings */
    args a;
    int fd, rc;
    unsigned flags = 0;
    if (parse_args(argc, argv, OPT_REPAIR | OPT_OUTPUT, 1, 1, &a) < 0) return 1;
    fd = open(a.pos[0], a.repair ? O_RDWR : O_RDONLY);
    if (fd < 0) { sys_fail(a.pos[0], errno); return 1; }
    if (a.repair == 3) {
        /* --repair: a dirty lazy-refcount image needs every refcount
         * rebuilt (its bit 0 of the incompatible features, byte 79) */
        unsigned char h[80] = {0};
        a.repair = q2w_pread_full(fd, 0, h, sizeof h) == 0 && h[7] >= 3 &&
                           (h[79] & 1u) ? 2 : 1;
    }
    if (a.repair == 1) flags = Q2W_CHECK_REPAIR_LEAKS;
    if (a.repair == 2) flags = Q2W_CHECK_REPAIR_ALL;
    rc = run_check(fd, flags, &res);
    if (rc == 0 && a.json) {
        static q2w_check_result after;
        int fixed = res.leaks_fixed || res.corruptions_fixed || res.copied_fixed;
        /* after a repair, qemu reports the image as it is then */
        if (fixed && (rc = run_check(fd, 0, &after)) == 0) rc = check_json(&after, &res, a.pos[0]);
        else if (!fixed) rc = check_json(&res, NULL, a.pos[0]);
        close(fd);
        return rc;
    }
    if (rc == 0) {
        print_findings(&res);
        if (res.leaks_fixed || res.corruptions_fixed || res.copied_fixed) {
            printf("The following inconsistencies were found and "
                   "repaired:\n\n    %llu leaked clusters\n"
                   "    %llu corruptions\n",
                   (unsigned long long)res.leaks_fixed,
                   (unsigned long long)res.corruptions_fixed);
            if (res.dirty_cleared) printf("    the dirty bit cleared\n");
            printf("\nDouble checking the fixed image now...\n");
            rc = run_check(fd, 0, &res);
            if (rc == 0) print_findings(&res);
        }
        if (rc == 0) rc = summary(&res);
    }
    close(fd);
    return rc;
}

/* ---- io ------------------------------------------------------------------
 * Many operations on one open image, qemu-io's way: the commands are a
 * subset of qemu-io's syntax, so one command stream drives both. */
#define IO_MAX_WORDS 16

typedef struct io_ctx {
    disk *d;
    char where[32];             /* "line N" or "-c N": the running command */
    unsigned char *pat_buf;     /* pat_cap bytes, all pat_byte when >= 0 */
    size_t pat_cap;
    int pat_byte;
    unsigned char *data_buf;    /* reads and write -s */
    size_t data_cap;
    int lib_failed;             /* a library error was reported */
    int changed;                /* a change since the last flush command */
    unsigned long long n_commands, n_writes, n_reads, n_zeroes, n_discards,
        n_flushes;
    uint64_t write_bytes, read_bytes;
} io_ctx;

static int io_fail(const io_ctx *c, const char *msg, const char *arg)
{
    fprintf(stderr, "qcow2w: %s: %s: %s%s\n", cmd, c->where, msg,
            arg ? arg : "");
    return -1;
}

static int io_lib_fail(io_ctx *c, int rc)
{
    report_error(c->where, rc, q2w_error(&c->d->img));
    c->lib_failed = 1;
    return -1;
}

/* A buffer of at least `need` (<= CHUNK) bytes; its contents are lost when
 * it grows. Doubling from 4 KiB: a stream of equal lengths allocates once. */
static unsigned char *io_grow(unsigned char **buf, size_t *cap, size_t need)
{
    size_t n = *cap ? *cap : 4096;
    if (need <= *cap) return *buf;
    while (n < need) n *= 2;
    free(*buf);
    *buf = (unsigned char *)malloc(n);
    *cap = *buf ? n : 0;
    return *buf;
}

/* `n` bytes of `pat`, refilled only when the byte changes or it grows. */
static const unsigned char *io_pattern(io_ctx *c, int pat, size_t n)
{
    if (n > c->pat_cap) c->pat_byte = -1;
    if (!io_grow(&c->pat_buf, &c->pat_cap, n)) return NULL;
    if (c->pat_byte != pat) {
        memset(c->pat_buf, pat, c->pat_cap);
        c->pat_byte = pat;
    }
    return c->pat_buf;
}

/* OFF, LEN: parse_size's (k m g ... either case), an optional trailing b
 * for bytes, or 0x hex - qemu-io's cvtnum without its fractions. */
static int io_num(char *s, uint64_t *out)
{
    size_t n = strlen(s);
    int rc;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        uint64_t v = 0;
        const char *p = s + 2;
        if (!*p) return -1;
        for (; *p; p++) {
            unsigned d;
            if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
            else if (*p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
            else if (*p >= 'A' && *p <= 'F') d = (unsigned)(*p - 'A' + 10);
            else return -1;
            if (v >> 60) return -1;
            v = v << 4 | d;
        }
        *out = v;
        return 0;
    }
    if (n > 1 && (s[n - 1] == 'b' || s[n - 1] == 'B') && s[n - 2] >= '0' &&
        s[n - 2] <= '9') {
        char b = s[n - 1];
        s[n - 1] = 0;
        rc = parse_size(s, out);
        s[n - 1] = b;
        return rc;
    }
    return parse_size(s, out);
}

/* -P PAT as qemu-io reads it (strtol base 0: decimal, 0x hex, 0 octal). */
static int io_pat(const char *s)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 0);
    if (end == s || *end || errno || v < 0 || v > 255) return -1;
    return (int)v;
}

/* The range of a command inside the disk, or -1 (printed). */
static int io_range(io_ctx *c, char *off_s, char *len_s, uint64_t *off,
                    uint64_t *len)
{
    char msg[160];
    if (io_num(off_s, off) < 0) return io_fail(c, "bad offset ", off_s);
    if (io_num(len_s, len) < 0) return io_fail(c, "bad length ", len_s);
    if (*off > c->d->size || *len > c->d->size - *off) {
        snprintf(msg, sizeof msg,
                 "%llu bytes at offset %llu: past the end of the disk "
                 "(%llu bytes)",
                 (unsigned long long)*len, (unsigned long long)*off,
                 (unsigned long long)c->d->size);
        return io_fail(c, msg, NULL);
    }
    return 0;
}

/* `n` bytes of write -s's data for the write's bytes [pos, pos + n): the
 * file's first `period` bytes repeated, as qemu-io fills its buffer. */
static int io_fill_from(io_ctx *c, int fd, const char *path, uint64_t period,
                        uint64_t pos, size_t n)
{
    size_t done = 0;
    while (done < n) {
        uint64_t at = (pos + done) % period;
        size_t k = period - at < n - done ? (size_t)(period - at) : n - done;
        int rc = q2w_pread_full(fd, at, c->data_buf + done, k);
        if (rc < 0) {
            fprintf(stderr, "qcow2w: %s: %s: %s: %s\n", cmd, c->where, path,
                    strerror(-rc));
            return -1;
        }
        done += k;
    }
    return 0;
}

/* write [-q] [-P PAT | -s FILE | -z] OFF LEN */
static int io_write(io_ctx *c, uint64_t off, uint64_t len, int pat,
                    const char *src, int zero)
{
    disk *d = c->d;
    uint64_t pos, period = 0;
    int fd = -1, rc = Q2W_OK;
    if (zero) {
        /* Any range: the library zero-flags the whole clusters of a v3
         * image and writes explicit zeros for the partial ones (and for
         * all of a v2 image). */
        rc = disk_run(d, q2w_write_zeroes(&d->img, off, len));
        if (rc != Q2W_OK) return io_lib_fail(c, rc);
        c->n_zeroes++;
        return 0;
    }
    if (src) {
        off_t end;
        fd = open(src, O_RDONLY);
        if (fd < 0 || (end = lseek(fd, 0, SEEK_END)) < 0) {
            fprintf(stderr, "qcow2w: %s: %s: %s: %s\n", cmd, c->where, src,
                    strerror(errno));
            if (fd >= 0) close(fd);
            return -1;
        }
        if (end == 0) {
            close(fd);
            return io_fail(c, "file is empty: ", src);
        }
        period = (uint64_t)end < len ? (uint64_t)end : len;
    }
    for (pos = 0; pos < len && rc == Q2W_OK;) {
        size_t n = len - pos < CHUNK ? (size_t)(len - pos) : CHUNK;
        const unsigned char *p;
        if (src) {
            p = io_grow(&c->data_buf, &c->data_cap, n);
            if (p && io_fill_from(c, fd, src, period, pos, n) < 0) {
                close(fd);
                return -1;
            }
        } else {
            p = io_pattern(c, pat, n);
        }
        if (!p) {
            if (fd >= 0) close(fd);
            return io_fail(c, "out of memory", NULL);
        }
        rc = disk_run(d, q2w_write(&d->img, off + pos, p, n));
        pos += n;
    }
    if (fd >= 0) close(fd);
    if (rc != Q2W_OK) return io_lib_fail(c, rc);
    c->n_writes++;
    c->write_bytes += len;
    return 0;
}

/* read [-q] [-P PAT] OFF LEN; pat < 0: no verification */
static int io_read(io_ctx *c, uint64_t off, uint64_t len, int pat)
{
    disk *d = c->d;
    uint64_t pos;
    for (pos = 0; pos < len;) {
        size_t n = len - pos < CHUNK ? (size_t)(len - pos) : CHUNK;
        const unsigned char *want = NULL;
        int rc;
        if (!io_grow(&c->data_buf, &c->data_cap, n) ||
            (pat >= 0 && !(want = io_pattern(c, pat, n))))
            return io_fail(c, "out of memory", NULL);
        rc = disk_run(d, q2w_read(&d->img, off + pos, c->data_buf, n));
        if (rc != Q2W_OK) return io_lib_fail(c, rc);
        if (want && memcmp(c->data_buf, want, n) != 0) {
            char msg[128];
            size_t i = 0;
            while (c->data_buf[i] == (unsigned char)pat) i++;
            snprintf(msg, sizeof msg,
                     "pattern verification failed at offset %llu (0x%02x, "
                     "not 0x%02x)",
                     (unsigned long long)(off + pos + i), c->data_buf[i],
                     (unsigned)pat);
            return io_fail(c, msg, NULL);
        }
        pos += n;
    }
    c->n_reads++;
    c->read_bytes += len;
    return 0;
}

/* An explicit flush always syncs, -n or not: its batches run with every
 * flush op, and when the library planned none but something changed since
 * the last flush command an fdatasync follows - the flushes -n skipped
 * left the library believing those writes durable. */
static int io_flush(io_ctx *c)
{
    disk *d = c->d;
    int rc = q2w_flush(&d->img), synced = 0;
    while (rc == Q2W_PENDING) {
        size_t i, n;
        const q2w_op *op = q2w_batch(&d->img, &n);
        for (i = 0; i < n; i++) synced |= op[i].kind == Q2W_OP_FLUSH;
        rc = q2w_resume(&d->img,
                        q2w_posix_exec(&d->img, d->fd,
                                       d->backing ? &d->reader : NULL, 0u));
    }
    if (rc != Q2W_OK) return io_lib_fail(c, rc);
    if (d->no_flush && !synced && c->changed && fdatasync(d->fd) < 0) {
        fprintf(stderr, "qcow2w: %s: %s: %s: %s\n", cmd, c->where, d->path,
                strerror(errno));
        return -1;
    }
    c->changed = 0;
    c->n_flushes++;
    return 0;
}

/* One command line, split in place: 0 done (or nothing to do), 1 quit,
 * -1 failed (printed). Options may come anywhere (qemu-io's getopt
 * permutes) and may be combined (-qP 5); "--" ends them. */
static int io_command(io_ctx *c, char *line)
{
    char *word[IO_MAX_WORDS], *operand[2], *src = NULL;
    const char *allowed;
    int n = 0, n_op = 0, i, pat = -1, zero = 0, options_done = 0;
    uint64_t off, len;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (!*p) break;
        if (n == IO_MAX_WORDS) return io_fail(c, "too many words", NULL);
        word[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
        if (*p) *p++ = 0;
    }
    if (n == 0 || word[0][0] == '#') return 0;
    if (!strcmp(word[0], "write")) allowed = "Pszq";
    else if (!strcmp(word[0], "read")) allowed = "Pq";
    else if (!strcmp(word[0], "discard")) allowed = "q";
    else if (!strcmp(word[0], "flush")) allowed = "";
    else if (!strcmp(word[0], "quit") || !strcmp(word[0], "q") ||
             !strcmp(word[0], "exit"))
        allowed = NULL;
    else
        return io_fail(c, "unknown command ", word[0]);
    if (!allowed) {
        if (n > 1) return io_fail(c, "quit takes no arguments", NULL);
        return 1;
    }
    for (i = 1; i < n; i++) {
        char *w = word[i];
        size_t k;
        if (options_done || w[0] != '-' || !w[1]) {
            if (n_op == 2) return io_fail(c, "unexpected argument ", w);
            operand[n_op++] = w;
            continue;
        }
        if (!strcmp(w, "--")) { options_done = 1; continue; }
        for (k = 1; w[k]; k++) {
            char opt[3] = {'-', w[k], 0};
            char *val;
            if (!strchr(allowed, w[k]))
                return io_fail(c, "unknown option ", opt);
            if (w[k] == 'q') continue;   /* nothing is printed per command */
            if (w[k] == 'z') { zero = 1; continue; }
            val = w[k + 1] ? w + k + 1 : i + 1 < n ? word[++i] : NULL;
            if (!val) return io_fail(c, "missing value after ", opt);
            if (w[k] == 's') {
                src = val;
            } else if ((pat = io_pat(val)) < 0) {
                return io_fail(c, "-P takes a byte, 0..255: ", val);
            }
            break;
        }
    }
    if (zero && (pat >= 0 || src))
        return io_fail(c, "-z takes no -P or -s", NULL);
    if (pat >= 0 && src) return io_fail(c, "-P and -s exclude each other",
                                        NULL);
    if (!strcmp(word[0], "flush")) {
        if (n_op) return io_fail(c, "flush takes no arguments", NULL);
        c->n_commands++;
        return io_flush(c);
    }
    if (n_op != 2) return io_fail(c, word[0], " needs OFF LEN");
    if (io_range(c, operand[0], operand[1], &off, &len) < 0) return -1;
    c->n_commands++;
    c->changed |= word[0][0] != 'r';
    if (word[0][0] == 'w') {
        /* qemu-io's default pattern */
        return io_write(c, off, len, pat < 0 ? 0xcd : pat, src, zero);
    }
    if (word[0][0] == 'r') return io_read(c, off, len, pat);
    {
        int rc = disk_run(c->d, q2w_discard(&c->d->img, off, len));
        if (rc != Q2W_OK) return io_lib_fail(c, rc);
        c->n_discards++;
        return 0;
    }
}

/* The next -c value after argv[*i], scanning as parse_args does (io takes
 * no other option with a value), or NULL. */
static char *io_next_c(int argc, char **argv, int *i)
{
    while (++*i < argc)
        if (!strcmp(argv[*i], "-c") && *i + 1 < argc) return argv[++*i];
    return NULL;
}

static double io_seconds(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) +
           (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* io IMG [-n] [-q] [-c CMD]... (without -c: commands from stdin) */
static int cmd_io(int argc, char **argv)
{
    args a;
    io_ctx c;
    struct timespec t0, t1;
    char *line = NULL, *cmd_text;
    size_t line_cap = 0;
    unsigned long long line_no = 0;
    int rc = 0, ci = 1, n_c = 0;
    if (parse_args(argc, argv, OPT_NO_FLUSH | OPT_QUIET | OPT_COMMAND, 1, 1,
                   &a) < 0)
        return 1;
    memset(&c, 0, sizeof c);
    c.pat_byte = -1;
    c.d = disk_open(a.pos[0], FMT_QCOW2, 1, 0, 0);
    if (!c.d) return 1;
    c.d->no_flush = a.no_flush;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (a.n_commands) {
        while (rc == 0 && (cmd_text = io_next_c(argc, argv, &ci)) != NULL) {
            snprintf(c.where, sizeof c.where, "-c %d", ++n_c);
            rc = io_command(&c, cmd_text);
        }
    } else {
        for (;;) {
            ssize_t got;
            errno = 0;
            got = getline(&line, &line_cap, stdin);
            if (got < 0) {
                if (errno && errno != EINTR) {
                    snprintf(c.where, sizeof c.where, "line %llu",
                             line_no + 1);
                    fprintf(stderr, "qcow2w: %s: %s: stdin: %s\n", cmd,
                            c.where, strerror(errno));
                    rc = -1;
                }
                break;
            }
            snprintf(c.where, sizeof c.where, "line %llu", ++line_no);
            rc = io_command(&c, line);
            if (rc != 0) break;
        }
    }
    free(line);
    free(c.pat_buf);
    free(c.data_buf);
    if (rc >= 0) {
        /* 1 (quit) or 0: the stream is done */
        rc = disk_run(c.d, q2w_close(&c.d->img));
        if (rc != Q2W_OK) {
            report_error("close", rc, q2w_error(&c.d->img));
            rc = -1;
        }
    } else {
        /* a failed command: the image is closed as it stands (a handle a
         * library error left failed refuses; nothing more to say) */
        int close_rc = disk_run(c.d, q2w_close(&c.d->img));
        if (close_rc != Q2W_OK && !c.lib_failed)
            report_error("close", close_rc, q2w_error(&c.d->img));
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (rc == 0 && !a.quiet) {
        char wb[40], rb[40];
        double s = io_seconds(&t0, &t1);
        printf("io: %llu commands: %llu writes (%s), %llu reads (%s), "
               "%llu zeroes, %llu discards, %llu flushes; %.3f s "
               "(%.0f ops/s)\n",
               c.n_commands, c.n_writes, human(c.write_bytes, wb, sizeof wb),
               c.n_reads, human(c.read_bytes, rb, sizeof rb), c.n_zeroes,
               c.n_discards, c.n_flushes, s,
               s > 0 ? (double)c.n_commands / s : 0.0);
    }
    disk_free(c.d);
    return rc == 0 ? 0 : 1;
}

/* ---- measure ---------------------------------------------------------------- */

/* The runs of data of [off, off + len) of disk d and, where it holds
 * nothing, of its backing chain, in order, to fn (what qemu's block status
 * calls data: allocated clusters, a raw file's SEEK_DATA runs; zeros and
 * holes not). 0, or -1 (reported) when a map failed or fn said so. */
static int walk_data(disk *d, uint64_t off, uint64_t len, data_fn fn, void *user)
{
    uint64_t end = off + len;
    if (d->raw) {
        while (off < end) {
            uint64_t ds, de;
            next_data(d->fd, off, d->size, &ds, &de);
            if (ds >= end || ds >= d->size) break;
            if (de > end) de = end;
            walk_run.layer = d;
            walk_run.host = ds;
            if (fn(user, ds, de - ds) < 0) return -1;
            off = de;
        }
        return 0;
    }
    while (off < end) {
        q2w_extent x;
        int rc = disk_run(d, q2w_map(&d->img, off, end - off, &x));
        if (rc != Q2W_OK) {
            disk_err(d, rc);
            return -1;
        }
        if (x.kind == Q2W_EXTENT_DATA || x.kind == Q2W_EXTENT_COMPRESSED) {
            walk_run.layer = x.kind == Q2W_EXTENT_DATA ? d : NULL;
            walk_run.host = x.host;
            if (fn(user, off, x.len) < 0) return -1;
        } else if (x.kind == Q2W_EXTENT_BACKING && d->backing) {
            uint64_t l = off < d->backing->size ? d->backing->size - off : 0;
            if (l > x.len) l = x.len;
            if (l && walk_data(d->backing, off, l, fn, user) < 0) return -1;
        }
        off += x.len;
    }
    return 0;
}


/* measure [--output=json] [-O qcow2] [-o OPTS] (--size SIZE | [-f FMT] FILE):
 * qemu-img measure's two figures for a qcow2 image of OPTS holding FILE's
 * data (or SIZE bytes of nothing). */
static int cmd_measure(int argc, char **argv)
{
    args a;
    const char *file = NULL, *fmt = NULL;
    uint64_t size = 0, clusters = 0, req, full;
    q2w_error_info e;
    int i, json = 0, have_size = 0;
    memset(&a, 0, sizeof a);
    for (i = 2; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--output=json")) json = 1;
        else if (!strcmp(s, "--output=human")) json = 0;
        else if (!strcmp(s, "--output") && v) json = !strcmp(argv[++i], "json");
        else if (!strncmp(s, "--size=", 7) || (!strcmp(s, "--size") && v)) {
            const char *z = s[6] == '=' ? s + 7 : argv[++i];
            if (parse_size(z, &size) < 0) return bad_usage("bad size ", z), 1;
            have_size = 1;
        } else if (!strcmp(s, "-O") && v) {
            if (strcmp(argv[++i], "qcow2")) return bad_usage("measures qcow2 only, not ", v), 1;
        } else if (!strcmp(s, "-f") && v) {
            fmt = argv[++i];
            if (strcmp(fmt, "raw") && strcmp(fmt, "qcow2"))
                return bad_usage("-f takes raw or qcow2, not ", fmt), 1;
        } else if (!strcmp(s, "-o") && v) {
            char *o = argv[++i];
            if (parse_o(&a, o) < 0) return 1;
        } else if (s[0] != '-' && !file) {
            file = s;
        } else {
            return bad_usage("unexpected argument ", s), 1;
        }
    }
    if (have_size == !!file) return bad_usage("measure needs --size or a file", NULL), 1;
    if (file) {
        uint64_t cs = a.c.cluster_size ? a.c.cluster_size : 65536;
        disk *d = disk_open(file, !fmt ? FMT_PROBE : !strcmp(fmt, "raw") ? FMT_RAW : FMT_QCOW2,
                            0, 0, 0);
        int rc;
        if (!d) return 1;
        size = d->size;
        counter c;
        c.cs = cs;
        c.n = c.last = 0;
        rc = walk_data(d, 0, d->size, count_fn, &c);
        clusters = c.n;
        disk_free(d);
        if (rc < 0) return 1;
    }
    a.c.size = size;
    if (q2w_measure(&a.c, clusters * (a.c.cluster_size ? a.c.cluster_size : 65536u), &req,
                    &full, &e) != Q2W_OK) {
        report_error(NULL, e.code, &e);
        return 1;
    }
    if (json)
        printf("{\n    \"required\": %llu,\n    \"fully-allocated\": %llu\n}\n",
               (unsigned long long)req, (unsigned long long)full);
    else
        printf("required size: %llu\nfully allocated size: %llu\n", (unsigned long long)req,
               (unsigned long long)full);
    return 0;
}

/* ---- map -------------------------------------------------------------------- */
/* What qemu-img map says of a run of virtual bytes, as its block status
 * walks the chain: the layer (depth) that decides, whether that layer
 * holds the run itself (present: a qcow2 layer's cluster or zero flag, a
 * raw file always), zero / data, and where in which file the bytes are
 * (raw files and a qcow2 layer's clusters, zero-flagged ones with a
 * cluster too; compressed clusters have no offset). */
typedef struct mapent {
    uint64_t start, len, offset;
    int depth, present, zero, data, has_offset;
    const disk *file;
} mapent;

static int map_status(disk *d, uint64_t off, uint64_t len, int depth, mapent *e)
{
    q2w_extent x;
    int rc;
    memset(e, 0, sizeof *e);
    e->start = off;
    e->depth = depth;
    if (d->raw) {
        uint64_t ds, de;
        next_data(d->fd, off, d->size, &ds, &de);
        e->present = e->has_offset = 1;
        e->offset = off;
        e->file = d;
        e->data = ds == off;
        e->zero = !e->data;
        e->len = (e->data ? de : ds) - off;
        if (e->len > len) e->len = len;
        return 0;
    }
    rc = disk_run(d, q2w_map(&d->img, off, len, &x));
    if (rc != Q2W_OK) {
        disk_err(d, rc);
        return -1;
    }
    e->len = x.len;
    switch (x.kind) {
    case Q2W_EXTENT_DATA:
    case Q2W_EXTENT_COMPRESSED:
        e->present = e->data = 1;
        break;
    case Q2W_EXTENT_ZERO:
        e->zero = 1;
        e->present = x.allocated;
        break;
    default: /* Q2W_EXTENT_BACKING: the backing file's, zeros past its end */
        if (off < d->backing->size)
            return map_status(d->backing, off,
                              x.len < d->backing->size - off ? x.len
                                                             : d->backing->size - off,
                              depth + 1, e);
        e->zero = 1;
        return 0;
    }
    if (x.host) {
        e->has_offset = 1;
        e->offset = x.host;
        e->file = d;
    }
    return 0;
}

/* Runs qemu-img map prints as one: the same status from the same layer,
 * continuing in the same file. */
static int map_mergeable(const mapent *a, const mapent *b)
{
    return a->zero == b->zero && a->data == b->data && a->depth == b->depth &&
           a->present == b->present && a->has_offset == b->has_offset &&
           a->file == b->file && (!a->has_offset || a->offset + a->len == b->offset);
}

static int map_print(const mapent *e, int json)
{
    if (json) {
        printf("%s{ \"start\": %llu, \"length\": %llu, \"depth\": %d, \"present\": %s, "
               "\"zero\": %s, \"data\": %s", e->start == 0 ? "[" : ",\n",
               (unsigned long long)e->start, (unsigned long long)e->len, e->depth,
               e->present ? "true" : "false", e->zero ? "true" : "false",
               e->data ? "true" : "false");
        if (e->has_offset) printf(", \"offset\": %llu", (unsigned long long)e->offset);
        putchar('}');
        return 0;
    }
    if (e->data && !e->has_offset) {
        say("the image holds compressed clusters (no file offset to show): "
            "use --output=json", NULL);
        return -1;
    }
    if (e->data && !e->zero)
        printf("%#-16llx%#-16llx%#-16llx%s\n", (unsigned long long)e->start,
               (unsigned long long)e->len, (unsigned long long)e->offset, e->file->path);
    return 0;
}

/* map [--output=human|json] [-f FMT] IMG: where the virtual disk's bytes
 * are, through the backing chain, as qemu-img map prints it. */
static int cmd_map(int argc, char **argv)
{
    const char *file = NULL, *fmt = NULL;
    disk *d;
    mapent cur, next;
    uint64_t off = 0;
    int i, json = 0, have = 0, ok = 1;
    for (i = 2; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--output=json")) json = 1;
        else if (!strcmp(s, "--output=human")) json = 0;
        else if (!strcmp(s, "--output") && v) json = !strcmp(argv[++i], "json");
        else if (!strcmp(s, "-f") && v) {
            fmt = argv[++i];
            if (strcmp(fmt, "raw") && strcmp(fmt, "qcow2"))
                return bad_usage("-f takes raw or qcow2, not ", fmt), 1;
        } else if (s[0] != '-' && !file) {
            file = s;
        } else {
            return bad_usage("unexpected argument ", s), 1;
        }
    }
    if (!file) return bad_usage("map needs an image", NULL), 1;
    d = disk_open(file, !fmt ? FMT_PROBE : !strcmp(fmt, "raw") ? FMT_RAW : FMT_QCOW2, 0, 0, 0);
    if (!d) return 1;
    if (!json) printf("%-16s%-16s%-16s%s\n", "Offset", "Length", "Mapped to", "File");
    while (ok && off < d->size) {
        if (map_status(d, off, d->size - off, 0, &next) < 0) {
            ok = 0;
            break;
        }
        off += next.len;
        if (have && map_mergeable(&cur, &next)) {
            cur.len += next.len;
            continue;
        }
        if (have && map_print(&cur, json) < 0) ok = 0;
        cur = next;
        have = 1;
    }
    if (ok && !have && json) {
        /* an empty disk: one empty entry, as qemu-img prints it */
        memset(&cur, 0, sizeof cur);
        have = 1;
    }
    if (ok && have && map_print(&cur, json) < 0) ok = 0;
    if (json && ok) printf("]\n");
    fflush(stdout);
    disk_free(d);
    return ok ? 0 : 1;
}

/* The end of a one-operation command on d (its result rc): reported, or
 * the image closed (done printed); d freed. The exit status. */
static int change_and_close(disk *d, int rc, const char *done)
{
    if (rc != Q2W_OK) {
        disk_err(d, rc);
        close_quietly(d);
        disk_free(d);
        return 1;
    }
    rc = disk_run(d, q2w_close(&d->img));
    if (rc != Q2W_OK) disk_err(d, rc);
    else fputs(done, stdout);
    disk_free(d);
    return rc == Q2W_OK ? 0 : 1;
}

/* ---- resize ----------------------------------------------------------------- */
/* resize IMG [+]SIZE: grow the virtual disk (to SIZE, or by it with +),
 * as qemu-img resize; SIZE rounded up to a multiple of 512. Shrinking is
 * refused (qcow2w does not shrink). */
static int cmd_resize(int argc, char **argv)
{
    args a;
    disk *d;
    uint64_t v, to;
    const char *s;
    int rel;
    /* a leading '-' would read as an option: "resize IMG -1G" is a shrink */
    if (argc == 4 && argv[3][0] == '-' && argv[3][1] >= '0' && argv[3][1] <= '9') {
        say("shrinking is not supported: ", argv[3]);
        return 1;
    }
    if (parse_args(argc, argv, 0, 2, 2, &a) < 0) return 1;
    s = a.pos[1];
    rel = *s == '+';
    if (parse_size(s + rel, &v) < 0) {
        bad_usage("bad size ", s);
        return 1;
    }
    d = disk_open(a.pos[0], FMT_QCOW2, 1, 0, 0);
    if (!d) return 1;
    to = rel ? d->size + v : v;
    if (to < d->size || (rel && to < v)) {
        say("shrinking is not supported: ", s);
        close_quietly(d);
        disk_free(d);
        return 1;
    }
    to = (to + 511) & ~(uint64_t)511;
    return change_and_close(d, disk_run(d, q2w_resize(&d->img, to)), "Image resized.\n");
}

/* ---- amend ------------------------------------------------------------------ */
/* amend -o compat=0.10|1.1|v2|v3 IMG: the image's version, as qemu-img amend
 * changes it (v2: zero flags made explicit first; the header last). */
static int cmd_amend(int argc, char **argv)
{
    args a;
    disk *d;
    if (parse_args(argc, argv, OPT_O, 1, 1, &a) < 0) return 1;
    if (!a.c.version || a.c.cluster_size || a.c.refcount_bits || a.c.backing ||
        a.c.backing_fmt) {
        bad_usage("amend changes compat only: -o compat=0.10|1.1|v2|v3", NULL);
        return 1;
    }
    d = disk_open(a.pos[0], FMT_QCOW2, 1, 0, 0);
    if (!d) return 1;
    return change_and_close(d, disk_run(d, q2w_amend_compat(&d->img, a.c.version)), "");
}

/* ---- commit and rebase ---------------------------------------------------- */
typedef struct job_ctx {
    const args *a;
    unsigned last;
} job_ctx;

static void job_progress(void *user, uint64_t done, uint64_t total)
{
    job_ctx *c = (job_ctx *)user;
    progress(c->a, done, total, &c->last);
}

/* A job's error: the context it carries, named after the file it met
 * (an i/o error was named by the executor already). */
static void job_err(const q2w_job *j, int rc, const disk *top, const disk *other)
{
    if (rc == Q2W_ERR_IO) report_error(NULL, rc, q2w_job_error(j));
    else report_error(j->file == Q2W_JOB_OTHER && other ? other->path : top->path, rc,
                      q2w_job_error(j));
}

/* The overlay's backing file opened again for writing (the chain below it
 * as before). */
static int reopen_backing_writable(disk *d)
{
    q2w_info info;
    int fmt;
    char *bpath;
    q2w_info_get(&d->img, &info);
    fmt = d->backing->raw ? FMT_RAW : FMT_QCOW2;
    bpath = relative_to(d->path, info.backing_name);
    if (!bpath) {
        disk_sys_fail(d->path, 0, ENOMEM);
        return -1;
    }
    disk_free(d->backing);
    d->backing = disk_open(bpath, fmt, 1, 1, 0);
    free(bpath);
    if (!d->backing) return -1;
    d->reader.user = d->backing;
    return 0;
}

static int cmd_commit(int argc, char **argv)
{
    args a;
    disk *d;
    q2w_job j;
    job_ctx ctx;
    unsigned char *buf;
    size_t buf_len = 8u << 20;
    int rc, ok;
    if (parse_args(argc, argv, OPT_PROGRESS | OPT_KEEP, 1, 1, &a) < 0) return 1;
    d = disk_open(a.pos[0], FMT_QCOW2, 1, 0, 0);
    if (!d) return 1;
    if (!d->backing) {
        say("no backing file to commit into: ", a.pos[0]);
        close_quietly(d);
        disk_free(d);
        return 1;
    }
    if (reopen_backing_writable(d) < 0 || !(buf = (unsigned char *)malloc(buf_len))) {
        if (d->backing) sys_fail(a.pos[0], ENOMEM);
        close_quietly(d);
        disk_free(d);
        return 1;
    }
    ctx.a = &a;
    ctx.last = 101;
    rc = q2w_commit(&j, &d->img, d->backing->raw ? Q2W_BACKING_RAW : Q2W_BACKING_QCOW2,
                    d->backing->raw ? NULL : &d->backing->img, d->backing->size,
                    a.keep ? Q2W_COMMIT_KEEP : 0, buf, buf_len);
    {
        q2w_job_fd files[3];
        files[Q2W_JOB_TOP].fd = d->fd;
        files[Q2W_JOB_TOP].backing = &d->reader;
        files[Q2W_JOB_OTHER].fd = d->backing->fd;
        files[Q2W_JOB_OTHER].backing = d->backing->backing ? &d->backing->reader : NULL;
        files[Q2W_JOB_OLD] = files[Q2W_JOB_OTHER];   /* (a commit has none) */
        rc = q2w_posix_job_run(&j, files, job_progress, &ctx, rc);
    }
    ok = rc == Q2W_OK;
    if (!ok) job_err(&j, rc, d, d->backing);
    if (!d->backing->raw) {
        rc = disk_run(d->backing, q2w_close(&d->backing->img));
        if (rc != Q2W_OK && ok) { disk_err(d->backing, rc); ok = 0; }
    }
    rc = disk_run(d, q2w_close(&d->img));
    if (rc != Q2W_OK && ok) { disk_err(d, rc); ok = 0; }
    if (ok) printf("Image committed.\n");
    free(buf);
    disk_free(d);
    return ok ? 0 : 1;
}

static int cmd_rebase(int argc, char **argv)
{
    args a;
    disk *d, *nb = NULL;
    q2w_job j;
    job_ctx ctx;
    unsigned char *buf = NULL;
    size_t buf_len = 8u << 20;
    const char *name, *fmt;
    int rc, ok, kind = Q2W_BACKING_NONE;
    if (parse_args(argc, argv, OPT_PROGRESS | OPT_O | OPT_UNSAFE, 1, 1, &a) < 0) return 1;
    if (!a.c.backing) return bad_usage("rebase needs -b BACKING (-b \"\": none)", NULL), 1;
    name = a.c.backing[0] ? a.c.backing : NULL;
    fmt = name ? a.c.backing_fmt : NULL;
    d = disk_open(a.pos[0], FMT_QCOW2, 1, 0, a.unsafe);
    if (!d) return 1;
    if (a.unsafe) {
        rc = disk_run(d, q2w_set_backing(&d->img, name, fmt, 0));
        ok = rc == Q2W_OK;
        if (!ok) disk_err(d, rc);
        rc = disk_run(d, q2w_close(&d->img));
        if (rc != Q2W_OK && ok) { disk_err(d, rc); ok = 0; }
        disk_free(d);
        return ok ? 0 : 1;
    }
    if (name) {
        char *path = relative_to(a.pos[0], name);
        int f = !fmt ? FMT_PROBE : strcmp(fmt, "raw") == 0 ? FMT_RAW : FMT_QCOW2;
        nb = path ? disk_open(path, f, 0, 1, 0) : NULL;
        if (!path) sys_fail(a.pos[0], ENOMEM);
        free(path);
        if (!nb) {
            close_quietly(d);
            disk_free(d);
            return 1;
        }
        kind = nb->raw ? Q2W_BACKING_RAW : Q2W_BACKING_QCOW2;
        if (!fmt) fmt = nb->raw ? "raw" : "qcow2";
    }
    buf = (unsigned char *)malloc(buf_len);
    if (!buf) {
        sys_fail(a.pos[0], ENOMEM);
        close_quietly(d);
        disk_free(d);
        disk_free(nb);
        return 1;
    }
    ctx.a = &a;
    ctx.last = 101;
    {
        /* the old backing file's own handle (qcow2): what reads zeros in
         * it and in the new one is skipped unread */
        q2w_image *old = d->backing && !d->backing->raw ? &d->backing->img : NULL;
        q2w_job_fd files[3];
        rc = q2w_rebase(&j, &d->img, old, kind, nb && !nb->raw ? &nb->img : NULL,
                        nb ? nb->size : 0, name, fmt, buf, buf_len);
        files[Q2W_JOB_TOP].fd = d->fd;
        files[Q2W_JOB_TOP].backing = d->backing ? &d->reader : NULL;
        files[Q2W_JOB_OTHER].fd = nb ? nb->fd : -1;
        files[Q2W_JOB_OTHER].backing = nb && nb->backing ? &nb->reader : NULL;
        files[Q2W_JOB_OLD].fd = old ? d->backing->fd : -1;
        files[Q2W_JOB_OLD].backing = old && d->backing->backing ? &d->backing->reader : NULL;
        rc = q2w_posix_job_run(&j, files, job_progress, &ctx, rc);
    }
    ok = rc == Q2W_OK;
    if (!ok) job_err(&j, rc, d, nb);
    rc = disk_run(d, q2w_close(&d->img));
    if (rc != Q2W_OK && ok) { disk_err(d, rc); ok = 0; }
    free(buf);
    disk_free(d);
    disk_free(nb);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = {{"create", cmd_create}, {"info", cmd_info},
                {"write", cmd_write},   {"import", cmd_import},
                {"export", cmd_export}, {"check", cmd_check},
                {"snapshot", cmd_snapshot}, {"io", cmd_io},
                {"commit", cmd_commit}, {"rebase", cmd_rebase},
                {"resize", cmd_resize}, {"measure", cmd_measure},
                {"convert", cmd_convert}, {"map", cmd_map},
                {"amend", cmd_amend}};
    size_t i;
    if (argc < 2) {
        usage(stderr);
        return 1;
    }
    if (!strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "--help")) {
        usage(stdout);
        return 0;
    }
    for (i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (strcmp(argv[1], cmds[i].name) == 0) {
            cmd = cmds[i].name;
            return cmds[i].run(argc, argv);
        }
    usage(stderr);
    return 1;
}

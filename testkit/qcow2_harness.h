/* qcow2_harness.h - what every qcow2w harness and test shares: an in-memory
 * image file with an executor that checks each op it is given, the resume
 * loop with a fixed cap, a flat reference model of the virtual disk, and the
 * invariant checks (checker, a fresh handle's view, the model); and the
 * reference model's rules that are not a plain memcpy / memset: qemu's
 * discard (qh_model_discard) and the snapshots (qh_snaps: each one's copy
 * of the disk, created, refused, deleted, interrupted).
 *
 * The oracle lives here once: fuzz/qcow2_*.c, the replay gate, seed mode,
 * tests/test_qcow2w.c and tests/diff_qemu.c all call these functions.
 * Include after qcow2w.h and testkit/alk_check.h (the implementation in the
 * same translation unit, or linked: see testkit/qcow2w_internal.h). */
#ifndef QCOW2_HARNESS_H
#define QCOW2_HARNESS_H

#include "qcow2w_internal.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef Q2W_NO_STDIO
#include <unistd.h> /* close, unlink (the POSIX mirror) */
#endif

/* Short transfers and interruptions on the mirror file. POSIX lets pread
 * and pwrite move fewer bytes than asked, and fail with EINTR; a regular
 * file on Linux never does either, so the executor's loops would go
 * untested. On glibc (64-bit, where pread and pwrite are the plain
 * symbols and the sanitizers' interceptors are weak) the harness defines
 * its own pread and pwrite: on the mirror's descriptor every fourth call
 * is EINTR and every transfer of n > 2 bytes moves only n - n / 3 of them;
 * any other descriptor goes straight to pread64 / pwrite64. */
#if !defined(Q2W_NO_STDIO) && defined(__linux__) && defined(__GLIBC__) && defined(__LP64__) && \
    !defined(__USE_FILE_OFFSET64)
#include <errno.h>
#define QH_SHORT_IO 1
static int qh__short_fd = -1;
static unsigned long qh__short_calls;
extern ssize_t pread64(int fd, void *buf, size_t n, off_t off);
extern ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);

/* The bytes this call on fd may move (0: it is interrupted). */
static size_t qh__short(int fd, size_t n)
{
    if (fd != qh__short_fd || n == 0) return n;
    if (++qh__short_calls % 4 == 0) return 0;
    return n > 2 ? n - n / 3 : n;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
    size_t m = qh__short(fd, n);
    if (n && !m) {
        errno = EINTR;
        return -1;
    }
    return pread64(fd, buf, m, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    size_t m = qh__short(fd, n);
    if (n && !m) {
        errno = EINTR;
        return -1;
    }
    return pwrite64(fd, buf, m, off);
}
#endif

/* Resume calls one operation may take before the loop counts as a hang. */
#define QH_RESUME_CAP 2000000u

typedef struct qh_disk {
    unsigned char *buf;
    size_t len;         /* file size */
    size_t cap;         /* hard limit: a write past it is a harness failure */
    size_t alloc;       /* bytes of buf, grown on demand up to cap */
    uint64_t writes, flushes, reads, write_bytes;
    uint32_t cluster_size; /* for the header-write rule; 0 = not checked */
    const unsigned char *backing;
    uint64_t backing_len;
    size_t ops_cap;     /* batches must fit the caller's buffer */
    /* POSIX mirror (qh_disk_mirror): every batch also runs through
     * q2w_posix_exec on a real file, which must read what the model
     * reads and hold what it holds */
    int mirror;
    int mirror_fd;
    int chk_unflushed; /* a checker write not yet followed by a flush */
    int unflushed;     /* an image write (qh_exec) not yet followed by a flush */
    /* qh_pad_contract, while a caller sets pad_check: the planner's end
     * of the file (q2w_info.file_end) when the batch run next was planned */
    int pad_check;
    uint64_t pad_end;
} qh_disk;

static ALK_UNUSED void qh_disk_init(qh_disk *d, size_t cap)
{
    memset(d, 0, sizeof *d);
    d->cap = cap;
    d->alloc = cap < (1u << 20) ? cap : (1u << 20);
    d->buf = (unsigned char *)alk_calloc(1, d->alloc ? d->alloc : 1);
    ALK_CHECK(d->buf != NULL, "out of memory for a %zu-byte disk", cap);
}

/* Room for `end` bytes (zero-filled), within the cap. */
static ALK_UNUSED void qh_disk_reserve(qh_disk *d, size_t end)
{
    size_t n = d->alloc;
    unsigned char *p;
    if (end <= d->alloc) return;
    ALK_CHECK(end <= d->cap, "disk of %zu bytes past its limit %zu", end,
              d->cap);
    while (n < end) n = n * 2 < d->cap ? n * 2 : d->cap;
    p = (unsigned char *)alk_realloc(d->buf, n);
    ALK_CHECK(p != NULL, "out of memory for a %zu-byte disk", n);
    memset(p + d->alloc, 0, n - d->alloc);
    d->buf = p;
    d->alloc = n;
}

static ALK_UNUSED void qh_disk_free(qh_disk *d)
{
#ifndef Q2W_NO_STDIO
    if (d->mirror) {
        close(d->mirror_fd);
#ifdef QH_SHORT_IO
        if (qh__short_fd == d->mirror_fd) qh__short_fd = -1;
#endif
    }
    d->mirror = 0;
#endif
    alk_free(d->buf);
    d->buf = NULL;
}

static ALK_UNUSED void qh_disk_read(const qh_disk *d, uint64_t off,
                                    unsigned char *dst, size_t len)
{
    size_t have = off < d->len ? (size_t)(d->len - off) : 0;
    if (have > len) have = len;
    if (have) memcpy(dst, d->buf + off, have);
    memset(dst + have, 0, len - have);
}

/* Set around an operation that rewrites cluster 0 whole (q2w_amend_compat):
 * then a write from byte 0 is allowed too (it still ends its batch,
 * followed by its flush, as every header switch). */
static ALK_UNUSED int qh_header_rewrite;

/* Header writes may only touch the fields the writer owns: size and the
 * L1 pair (24..48), the refcount-table pair (48..60), the snapshot pair
 * (60..72), autoclear (88..96). */
static int qh_header_write_ok(uint64_t off, size_t len)
{
    uint64_t end = off + len;
    if (qh_header_rewrite && off == 0) return 1;
    return (off >= 24 && end <= 48) || (off >= 48 && end <= 60) ||
           (off >= 60 && end <= 72) || (off >= 88 && end <= 96);
}

/* What every planned op must be, whatever executes it: a batch within the
 * caller's buffer; reads and backing reads with a buffer; writes inside
 * the disk (`cap` bytes) and, in the header cluster (when cluster_size is
 * known), only the writer's own fields; flushes without range or buffer;
 * backing reads only for clusters that start inside the backing file
 * (`backing_len` bytes, 0 without one: none at all). */
static ALK_UNUSED void qh_op_contract(const q2w_op *op, size_t n,
                                      size_t ops_cap, uint32_t cluster_size,
                                      uint64_t cap, uint64_t backing_len)
{
    size_t i;
    ALK_CHECK(n >= 1 && n <= ops_cap, "batch of %zu ops (cap %zu)", n,
              ops_cap);
    for (i = 0; i < n; i++) {
        const q2w_op *o = &op[i];
        switch (o->kind) {
        case Q2W_OP_READ:
            ALK_CHECK(o->dst && o->len, "read op without buffer/len");
            ALK_CHECK(o->off < Q2W_MAX_HOST_OFFSET, "read at %llu",
                      (unsigned long long)o->off);
            break;
        case Q2W_OP_WRITE:
            ALK_CHECK(o->len > 0, "empty write op");
            ALK_CHECK(o->off + o->len <= cap,
                      "write [%llu, +%zu) past the disk limit %llu",
                      (unsigned long long)o->off, o->len,
                      (unsigned long long)cap);
            if (cluster_size && o->off < cluster_size)
                ALK_CHECK(qh_header_write_ok(o->off, o->len),
                          "write [%llu, +%zu) into the header cluster",
                          (unsigned long long)o->off, o->len);
            /* a switch of the header's table pairs (24..72) makes new
             * metadata live: it ends its batch, followed by its flush only
             * (one switch a batch: it counts once the batch ran) */
            if (o->off < 72 && o->off + o->len > 24)
                ALK_CHECK(i + 2 == n && op[i + 1].kind == Q2W_OP_FLUSH,
                          "header switch [%llu, +%zu) as op %zu of %zu",
                          (unsigned long long)o->off, o->len, i, n);
            break;
        case Q2W_OP_FLUSH:
            ALK_CHECK(o->off == 0 && o->len == 0 && !o->src && !o->dst,
                      "flush op with a range or a buffer");
            break;
        case Q2W_OP_BACKING_READ:
            ALK_CHECK(o->dst && o->len, "backing read without buffer/len");
            ALK_CHECK(cluster_size ? o->off / cluster_size * cluster_size < backing_len
                                   : backing_len > 0,
                      "backing read at %llu: its cluster is not in the backing "
                      "file (%llu bytes)", (unsigned long long)o->off,
                      (unsigned long long)backing_len);
            break;
        default:
            ALK_CHECK(0, "op kind %d", o->kind);
        }
    }
}

/* The L1 table is written as qemu writes it: its entries only, up to
 * l1_offset + 8 * l1_size, never the rest of its last cluster (no padding:
 * the file of a fresh qemu-img image ends at that byte). Judged against
 * the table the header on the disk names. */
static void qh_l1_tail_contract(const qh_disk *d, const q2w_op *op, size_t n)
{
    uint64_t cs = d->cluster_size, l1, end, tail_end;
    size_t i;
    if (!cs || d->len < 48) return;
    l1 = q2w__be64(d->buf + 40);
    end = l1 + 8ull * q2w__be32(d->buf + 36);
    tail_end = (end + cs - 1) / cs * cs;
    if (end == l1 || end == tail_end) return;
    for (i = 0; i < n; i++)
        if (op[i].kind == Q2W_OP_WRITE && op[i].off < tail_end &&
            op[i].off + op[i].len > end)
            ALK_CHECK(0, "write [%llu, +%zu) into the L1 table's last cluster "
                      "past the table's end %llu",
                      (unsigned long long)op[i].off, op[i].len,
                      (unsigned long long)end);
}

/* A write (d->pad_check: a q2w_write) fills the rest of a new cluster
 * around its data with zeros only when the cluster starts inside the file
 * as planned so far (a reused cluster may hold stale bytes): a cluster at
 * or past the planner's end of the file already reads as zeros and is not
 * padded (DESIGN NOTES, File size). Such fills are the zero writes that
 * start or end inside a cluster (whole zeroed clusters are new metadata);
 * the planner's end grows with each write it plans, in batch order, from
 * d->pad_end. */
static void qh_pad_contract(const qh_disk *d, const q2w_op *op, size_t n)
{
    uint64_t end = d->pad_end, cs = d->cluster_size;
    size_t i;
    if (!d->pad_check || !cs) return;
    for (i = 0; i < n; i++) {
        if (op[i].kind != Q2W_OP_WRITE) continue;
        if (!op[i].src && (op[i].off % cs || op[i].len % cs))
            ALK_CHECK(op[i].off / cs * cs < end,
                      "zeros [%llu, +%zu) (op %zu of %zu) pad a cluster at or "
                      "past the end of the file (%llu)",
                      (unsigned long long)op[i].off, op[i].len, i, n,
                      (unsigned long long)end);
        if (op[i].off + op[i].len > end) end = op[i].off + op[i].len;
    }
}

static ALK_UNUSED int qh_exec(qh_disk *d, const q2w_op *op, size_t n)
{
    size_t i;
    qh_op_contract(op, n, d->ops_cap, d->cluster_size, d->cap,
                   d->backing ? d->backing_len : 0);
    qh_l1_tail_contract(d, op, n);
    qh_pad_contract(d, op, n);
    for (i = 0; i < n; i++) {
        const q2w_op *o = &op[i];
        switch (o->kind) {
        case Q2W_OP_READ:
            qh_disk_read(d, o->off, o->dst, o->len);
            d->reads++;
            break;
        case Q2W_OP_WRITE:
            qh_disk_reserve(d, (size_t)(o->off + o->len));
            if (o->src) memcpy(d->buf + o->off, o->src, o->len);
            else memset(d->buf + o->off, 0, o->len);
            if (o->off + o->len > d->len) d->len = (size_t)(o->off + o->len);
            d->writes++;
            d->write_bytes += o->len;
            d->unflushed = 1;
            break;
        case Q2W_OP_FLUSH:
            /* a flush orders writes: one with none since the last (of any
             * handle on this disk) is a wasted fdatasync */
            ALK_CHECK(d->unflushed, "a flush with no write since the last flush (op %zu of %zu)",
                      i, n);
            d->unflushed = 0;
            d->flushes++;
            break;
        default: { /* Q2W_OP_BACKING_READ */
            size_t j;
            for (j = 0; j < o->len; j++)
                o->dst[j] = o->off + j < d->backing_len
                                ? d->backing[o->off + j] : 0;
            break;
        }
        }
    }
    return 0;
}

#ifndef Q2W_NO_STDIO
/* From now on every batch of d also runs through qcow2w's own POSIX
 * executor on a temporary file holding the same bytes (unlinked at once):
 * its reads (joined as it joins them) must give what the model's give,
 * and each range it writes must then hold the model's bytes. */
static ALK_UNUSED void qh_disk_mirror(qh_disk *d)
{
    char path[] = "/tmp/qh_mirror.XXXXXX";
    int fd = mkstemp(path);
    ALK_CHECK(fd >= 0, "mirror: mkstemp");
    unlink(path);
    if (d->len)
        ALK_CHECK(q2w_pwrite_full(fd, 0, d->buf, d->len) == 0, "mirror: fill");
    d->mirror_fd = fd;
    d->mirror = 1;
#ifdef QH_SHORT_IO
    qh__short_fd = fd;
#endif
}

static int qh_mirror_backing(void *user, uint64_t off, void *dst, size_t len)
{
    const qh_disk *d = (const qh_disk *)user;
    size_t j;
    for (j = 0; j < len; j++)
        ((unsigned char *)dst)[j] =
            off + j < d->backing_len ? d->backing[off + j] : 0;
    return 0;
}

/* Run the batch through q2w_posix_exec first, keeping what its reads
 * gave; the caller then runs the model's executor and qh_mirror_after
 * compares. A batch whose backing reads all see zeros runs without a
 * backing reader (documented: those reads give zeros). */
static unsigned char *qh_mirror_before(q2w_image *img, qh_disk *d,
                                       const q2w_op *op, size_t n)
{
    q2w_backing_reader br;
    unsigned char *got;
    size_t i, j, total = 0, at = 0;
    int zeros = 1;
    for (i = 0; i < n; i++) {
        if (op[i].kind == Q2W_OP_READ || op[i].kind == Q2W_OP_BACKING_READ)
            total += op[i].len;
        if (op[i].kind == Q2W_OP_BACKING_READ)
            for (j = 0; zeros && j < op[i].len && op[i].off + j < d->backing_len; j++)
                zeros = d->backing[op[i].off + j] == 0;
    }
    br.read = qh_mirror_backing;
    br.user = d;
    ALK_CHECK(q2w_posix_exec(img, d->mirror_fd, zeros ? NULL : &br, 0) == 0,
              "mirror: q2w_posix_exec failed");
    got = (unsigned char *)alk_malloc(total ? total : 1);
    ALK_CHECK(got != NULL, "out of memory");
    for (i = 0; i < n; i++)
        if (op[i].kind == Q2W_OP_READ || op[i].kind == Q2W_OP_BACKING_READ) {
            memcpy(got + at, op[i].dst, op[i].len);
            at += op[i].len;
        }
    return got;
}

static void qh_mirror_after(qh_disk *d, const q2w_op *op, size_t n,
                            unsigned char *got)
{
    size_t i, at = 0;
    for (i = 0; i < n; i++) {
        if (op[i].kind == Q2W_OP_READ || op[i].kind == Q2W_OP_BACKING_READ) {
            /* both executors ran the whole batch in order: whatever a
             * later op did to this dst, it did in both */
            ALK_CHECK(memcmp(got + at, op[i].dst, op[i].len) == 0,
                      "mirror: %s of op %zu (offset %llu, %zu bytes) differs "
                      "from the model's",
                      op[i].kind == Q2W_OP_READ ? "read" : "backing read", i,
                      (unsigned long long)op[i].off, op[i].len);
            at += op[i].len;
        } else if (op[i].kind == Q2W_OP_WRITE) {
            unsigned char *f = (unsigned char *)alk_malloc(op[i].len + 1);
            ALK_CHECK(f != NULL, "out of memory");
            ALK_CHECK(q2w_pread_full(d->mirror_fd, op[i].off, f, op[i].len) ==
                          0, "mirror: pread");
            ALK_CHECK(memcmp(f, d->buf + op[i].off, op[i].len) == 0,
                      "mirror: the file's bytes at %llu (%zu) differ from "
                      "the model's after the batch",
                      (unsigned long long)op[i].off, op[i].len);
            alk_free(f);
        }
    }
    alk_free(got);
}
#endif

/* The resume loop: every Q2W_PENDING comes with a non-empty batch, and the
 * operation ends within QH_RESUME_CAP rounds. */
/* A call while an operation is pending is refused (BUSY, what
 * "operation", offset and index 0) and leaves the batch as it was; every
 * round of an operation tries the next entry point in turn, and the
 * refusals change nothing of how the operation ends: its result and its
 * error info (ERRORS: even one met before its last batch ran). */
static unsigned qh_busy_turn;

static void qh_probe_busy(q2w_image *img)
{
    const q2w_op *before, *after;
    size_t nb, na;
    q2w_extent x;
    q2w_snapshot sn;
    unsigned char byte = 0;
    int rc;
    unsigned turn = qh_busy_turn++ % 10;
    before = q2w_batch(img, &nb);
    memset(&sn, 0, sizeof sn);
    sn.disk_size = 1;
    switch (turn) {
    case 0: rc = q2w_flush(img); break;
    case 1: rc = q2w_read(img, 0, &byte, 1); break;
    case 2: rc = q2w_write(img, 0, &byte, 1); break;
    case 3: rc = q2w_map(img, 0, 1, &x); break;
    case 4: rc = q2w_snapshot_delete(img, "busy"); break;
    case 5: rc = q2w_snapshot_get(img, 0, &sn); break;
    case 6: rc = q2w_discard(img, 0, 1); break;
    case 7: rc = q2w_resize(img, 0); break;
    case 8: rc = q2w_map_snapshot(img, &sn, 0, 1, &x); break;
    default: rc = q2w_read_snapshot(img, &sn, 0, &byte, 1); break;
    }
    after = q2w_batch(img, &na);
    ALK_CHECK(rc == Q2W_ERR_BUSY && q2w_error(img)->code == Q2W_ERR_BUSY &&
                  q2w_error(img)->what && !strcmp(q2w_error(img)->what, "operation") &&
                  q2w_error(img)->offset == 0 && q2w_error(img)->index == 0 &&
                  q2w_error(img)->needed == 0 && after == before && na == nb,
              "entry point %u while an operation is pending: %d (%s, %llu, %llu), "
              "batch %zu -> %zu ops", turn, rc,
              q2w_error(img)->what ? q2w_error(img)->what : "",
              (unsigned long long)q2w_error(img)->offset,
              (unsigned long long)q2w_error(img)->index, nb, na);
}

/* The planner's end of the file now, before it plans the next batch. */
static void qh_pad_end(const q2w_image *img, qh_disk *d)
{
    q2w_info info;
    if (!d->pad_check) return;
    q2w_info_get(img, &info);
    d->pad_end = info.file_end;
}

/* qh_pad_contract on for the next operation's batches (the caller turns
 * pad_check off after it): call before the operation plans its first. */
static ALK_UNUSED void qh_pad_begin(const q2w_image *img, qh_disk *d)
{
    d->pad_check = 1;
    qh_pad_end(img, d);
}

/* q2w_info.file_end, the file's end as planned so far, judged after
 * every batch ran against the file's length then (file_len, which was
 * cfg.file_size at open): never behind the file; past the whole cluster
 * of every refcount block and L2 table the planner holds dirty in its
 * cache at or past the end of the file - each is written whole by a later
 * checkpoint, so a block placed past the end of the file is planned from
 * the moment it is placed (those two kinds only: the L1 table's last
 * cluster is written up to the table's end, not whole; and a table the
 * file ends inside of came from the image as it was); and with nothing
 * dirty, exactly the file's length. */
static ALK_UNUSED void qh_file_end_contract(const q2w_image *img, uint64_t file_len,
                                            const char *when)
{
    q2w_info info;
    size_t i;
    int dirty = 0;
    if (!img->opened) return;
    q2w_info_get(img, &info);
    ALK_CHECK(info.file_end >= file_len, "%s: file_end %llu behind the file's %llu bytes",
              when, (unsigned long long)info.file_end, (unsigned long long)file_len);
    for (i = 0; i < img->n_slots; i++) {
        const q2w__slot *s = &img->slots[i];
        dirty |= s->state == Q2W__S_VALID && s->dirty;
        if (s->state != Q2W__S_VALID || !s->dirty ||
            (s->kind != Q2W__K_RB && s->kind != Q2W__K_L2) || s->key < file_len)
            continue;
        ALK_CHECK(s->key + info.cluster_size <= info.file_end,
                  "%s: file_end %llu, but the %s at %llu waits in the cache to be "
                  "written (the file has %llu bytes)", when,
                  (unsigned long long)info.file_end,
                  s->kind == Q2W__K_RB ? "refcount block" : "L2 table",
                  (unsigned long long)s->key, (unsigned long long)file_len);
    }
    ALK_CHECK(dirty || info.file_end == file_len,
              "%s: nothing waits in the cache, but file_end %llu is not the file's "
              "%llu bytes", when, (unsigned long long)info.file_end,
              (unsigned long long)file_len);
}

static ALK_UNUSED int qh_run(q2w_image *img, qh_disk *d, int rc)
{
    unsigned long rounds = 0;
    while (rc == Q2W_PENDING) {
        size_t n;
        const q2w_op *op;
        if (img->opened) qh_probe_busy(img);
        op = q2w_batch(img, &n);
        ALK_CHECK(++rounds < QH_RESUME_CAP, "resume loop did not end");
        {
            int xr;
#ifndef Q2W_NO_STDIO
            unsigned char *got = d->mirror ? qh_mirror_before(img, d, op, n) : NULL;
#endif
            xr = qh_exec(d, op, n);
#ifndef Q2W_NO_STDIO
            if (got) qh_mirror_after(d, op, n, got);
#endif
            qh_pad_end(img, d);
            qh_file_end_contract(img, d->len, "after a batch");
            rc = q2w_resume(img, xr);
        }
        {
            /* a slot is pinned by the current step or an earlier one,
             * never by one still to come */
            size_t i;
            for (i = 0; i < img->n_slots; i++)
                ALK_CHECK(img->slots[i].pin <= img->pin_epoch,
                          "slot %zu pinned at %u, the step is %u", i,
                          img->slots[i].pin, img->pin_epoch);
        }
    }
    if (rc != Q2W_OK) {
        size_t n;
        q2w_batch(img, &n);
        ALK_CHECK(n == 0, "error %d with %zu ops left in the batch", rc, n);
        ALK_CHECK(q2w_strerror(rc) != NULL &&
                      strcmp(q2w_strerror(rc), q2w_strerror(-1000)) != 0,
                  "error %d has no text of its own", rc);
    } else {
        /* The planner skips zero fill past what it believes is the end of
         * the file: believing it shorter than it is would expose old
         * bytes, so its idea of the end never falls behind the file. */
        qh_file_end_contract(img, d->len, "after the operation");
    }
    return rc;
}

static int qh_io_read(void *user, uint64_t off, void *dst, size_t len)
{
    qh_disk_read((const qh_disk *)user, off, (unsigned char *)dst, len);
    return 0;
}
static int qh_io_write(void *user, uint64_t off, const void *src, size_t len)
{
    qh_disk *d = (qh_disk *)user;
    ALK_CHECK(off + len <= d->cap, "checker write past the disk");
    qh_disk_reserve(d, (size_t)(off + len));
    memcpy(d->buf + off, src, len);
    if (off + len > d->len) d->len = (size_t)(off + len);
    d->chk_unflushed = 1;
    return 0;
}
static int qh_io_flush(void *user)
{
    ((qh_disk *)user)->chk_unflushed = 0;
    return 0;
}

/* Full check of the image on the disk. */
/* The checker's blocking I/O over the in-memory disk. */
static ALK_UNUSED void qh_make_io(qh_disk *d, q2w_io *io)
{
    io->read = qh_io_read;
    io->write = qh_io_write;
    io->flush = qh_io_flush;
    io->user = d;
    io->file_size = d->len;
}

static ALK_UNUSED int qh_check(qh_disk *d, unsigned flags,
                               q2w_check_result *res)
{
    q2w_io io;
    size_t need = 0;
    void *work;
    int rc;
    qh_make_io(d, &io);
    rc = q2w_check_work_size(&io, &need, NULL);
    if (rc != Q2W_OK) {
        memset(res, 0, sizeof *res);
        res->error.code = rc;
        return rc;
    }
    work = alk_malloc(need ? need : 1);
    ALK_CHECK(work != NULL, "out of memory for check work");
    /* (a leaks-only repair through its own entry point) */
    d->chk_unflushed = 0;
    rc = flags == Q2W_CHECK_REPAIR_LEAKS ? q2w_repair_leaks(&io, work, need, res)
                                         : q2w_check(&io, work, need, flags, res);
    /* a repair that succeeded made what it wrote durable */
    ALK_CHECK(rc != Q2W_OK || !d->chk_unflushed,
              "check (flags %u) returned with writes not flushed", flags);
#ifndef Q2W_NO_STDIO
    if (d->mirror && flags == 0) {
        /* the same scan through q2w_posix_io on the mirror file */
        static q2w_check_result r2;
        q2w_fdbox box;
        int rc2;
        q2w_posix_io(&io, d->mirror_fd, &box);
        ALK_CHECK(io.file_size >= d->len, "mirror: posix io sees %llu bytes, "
                  "the disk has %zu", (unsigned long long)io.file_size, d->len);
        rc2 = q2w_check(&io, work, need, 0, &r2);
        ALK_CHECK(rc2 == rc && r2.corruptions == res->corruptions &&
                      r2.leaks == res->leaks &&
                      r2.allocated_clusters == res->allocated_clusters &&
                      r2.image_end_offset == res->image_end_offset,
                  "mirror: the check through q2w_posix_io differs (%d: %llu "
                  "corruptions %llu leaks; model %d: %llu, %llu)", rc2,
                  (unsigned long long)r2.corruptions,
                  (unsigned long long)r2.leaks, rc,
                  (unsigned long long)res->corruptions,
                  (unsigned long long)res->leaks);
    }
#endif
    alk_free(work);
    return rc;
}

/* A repair scans all it repairs: the image end it reported (`r`, a
 * refcount block it made past the old end included) is the one a plain
 * check of the repaired image d finds. */
static ALK_UNUSED void qh_assert_repair_end(qh_disk *d, const q2w_check_result *r,
                                            const char *when)
{
    q2w_check_result p;
    int rc = qh_check(d, 0, &p);
    ALK_CHECK(rc == Q2W_OK && p.image_end_offset == r->image_end_offset,
              "%s: the repair's image end %llu, a check after it %s %llu", when,
              (unsigned long long)r->image_end_offset, q2w_strerror(rc),
              (unsigned long long)p.image_end_offset);
}

/* The checker through an io that fails its fail_at-th call of one kind
 * (1 read, 2 write, 3 flush): what the checker must then report is exact -
 * Q2W_ERR_IO, the operation's name, the failing call's offset and length
 * (0 and 0 for a flush), a check error counted - and it must stop there:
 * no later call of any kind. */
typedef struct qh_faulty {
    qh_disk *d;
    int kind;
    unsigned fail_at, calls;
    int fired, after;
    uint64_t off, len;
} qh_faulty;

static int qh_faulty_hit(qh_faulty *f, int kind, uint64_t off, uint64_t len)
{
    if (f->fired) {
        f->after++;
        return 0;
    }
    if (kind != f->kind || ++f->calls != f->fail_at) return 0;
    f->fired = 1;
    f->off = off;
    f->len = len;
    return 1;
}
static int qh_faulty_read(void *user, uint64_t off, void *dst, size_t len)
{
    qh_faulty *f = (qh_faulty *)user;
    if (qh_faulty_hit(f, 1, off, len)) return -5;
    return qh_io_read(f->d, off, dst, len);
}
static int qh_faulty_write(void *user, uint64_t off, const void *src, size_t len)
{
    qh_faulty *f = (qh_faulty *)user;
    if (qh_faulty_hit(f, 2, off, len)) return -5;
    return qh_io_write(f->d, off, src, len);
}
static int qh_faulty_flush(void *user)
{
    qh_faulty *f = (qh_faulty *)user;
    if (qh_faulty_hit(f, 3, 0, 0)) return -5;
    return 0;
}

/* Runs q2w_check(flags) with the kind-th operation failing at its
 * fail_at-th call; the disk is changed as far as the repair got (the
 * caller restores it). Returns whether the fault fired. */
/* The calls of the faulty kind the last qh_check_faulty made (all of them
 * when nothing failed: fail_at 0 counts a clean run's). */
static unsigned qh_faulty_calls;

static ALK_UNUSED int qh_check_faulty(qh_disk *d, unsigned flags, int kind,
                                      unsigned fail_at)
{
    static const char *const names[4] = {"", "read", "write", "flush"};
    q2w_io io;
    qh_faulty f;
    q2w_check_result res;
    size_t need = 0;
    void *work;
    int rc;
    memset(&f, 0, sizeof f);
    f.d = d;
    f.kind = kind;
    f.fail_at = fail_at;
    io.read = qh_faulty_read;
    io.write = qh_faulty_write;
    io.flush = qh_faulty_flush;
    io.user = &f;
    io.file_size = d->len;
    {
        /* sized through the plain io: the fault is for the check itself */
        q2w_io plain;
        qh_make_io(d, &plain);
        ALK_CHECK(q2w_check_work_size(&plain, &need, NULL) == Q2W_OK, "check work size");
    }
    work = alk_malloc(need ? need : 1);
    ALK_CHECK(work != NULL, "out of memory for check work");
    memset(&res, 0x5a, sizeof res);
    rc = q2w_check(&io, work, need, flags, &res);
    alk_free(work);
    qh_faulty_calls = f.calls;
    if (!f.fired) {
        ALK_CHECK(rc == Q2W_OK && res.check_errors == 0,
                  "check (flags %u) without a fault: %s, %llu check errors", flags,
                  q2w_strerror(rc), (unsigned long long)res.check_errors);
        return 0;
    }
    ALK_CHECK(rc == Q2W_ERR_IO && res.error.code == Q2W_ERR_IO && res.error.what &&
                  !strcmp(res.error.what, names[kind]) && res.error.offset == f.off &&
                  res.error.needed == f.len && res.check_errors == 1 && f.after == 0,
              "check (flags %u), %s %u failing at %llu (+%llu): %s, error %d %s at "
              "%llu (+%llu), %llu check errors, %d calls after it",
              flags, names[kind], fail_at, (unsigned long long)f.off,
              (unsigned long long)f.len, q2w_strerror(rc), res.error.code,
              res.error.what ? res.error.what : "NULL",
              (unsigned long long)res.error.offset, (unsigned long long)res.error.needed,
              (unsigned long long)res.check_errors, f.after);
    return 1;
}

static ALK_UNUSED void qh_print_findings(const q2w_check_result *r)
{
    size_t i;
    for (i = 0; i < r->n_findings; i++)
        alk_trace("finding %s at %llu (entry %llu) stored %llu computed %llu",
                  q2w_finding_name(r->findings[i].kind),
                  (unsigned long long)r->findings[i].offset,
                  (unsigned long long)r->findings[i].where,
                  (unsigned long long)r->findings[i].stored,
                  (unsigned long long)r->findings[i].computed);
}

/* The checker must find no corruption; with `exact`, no leak either. */
static ALK_UNUSED void qh_assert_consistent(qh_disk *d, int exact,
                                            const char *when)
{
    q2w_check_result r;
    int rc = qh_check(d, 0, &r);
    if (rc != Q2W_OK || r.corruptions || (exact && r.leaks))
        qh_print_findings(&r);
    ALK_CHECK(rc == Q2W_OK, "%s: check failed: %s (%s)", when,
              q2w_strerror(rc), r.error.what ? r.error.what : "");
    ALK_CHECK(r.corruptions == 0, "%s: %llu corruptions", when,
              (unsigned long long)r.corruptions);
    ALK_CHECK(!exact || r.leaks == 0, "%s: %llu leaks", when,
              (unsigned long long)r.leaks);
}

/* Memory for a handle: scratch + slots clusters, plus room for metadata. */
typedef struct qh_handle {
    q2w_image img;
    q2w_op *ops;
    unsigned char *mem;
    size_t mem_len;
} qh_handle;

/* Deferred-free ranges for the next qh_open (0 = the default); harnesses
 * set it small to force the free-list-full paths. */
static size_t qh_max_frees;

/* Memory and config for a handle on an image of `file_size` bytes (and a
 * backing file of `backing_size`); every harness opens through this. */
static ALK_UNUSED void qh_handle_config(qh_handle *h, q2w_config *cfg,
                                       uint32_t cluster_size, size_t slots,
                                       size_t ops_cap, int writable,
                                       int has_backing, uint64_t file_size,
                                       uint64_t backing_size)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_frees = qh_max_frees;
    /* the slots, scratch and the two-cluster compressed-read buffer */
    h->mem_len = (slots + 4) * ((size_t)cluster_size + 64) + 8192;
    h->mem = (unsigned char *)alk_malloc(h->mem_len);
    h->ops = (q2w_op *)alk_malloc(ops_cap * sizeof(q2w_op));
    ALK_CHECK(h->mem && h->ops, "out of memory for a handle");
    cfg->mem = h->mem;
    cfg->mem_len = h->mem_len;
    cfg->ops = h->ops;
    cfg->ops_cap = ops_cap;
    cfg->max_slots = slots;
    cfg->file_size = file_size;
    cfg->writable = writable;
    cfg->has_backing = has_backing;
    cfg->backing_size = backing_size;
}

static ALK_UNUSED int qh_open(qh_handle *h, qh_disk *d, uint32_t cluster_size,
                              size_t slots, size_t ops_cap, int writable,
                              int has_backing)
{
    q2w_config cfg;
    qh_handle_config(h, &cfg, cluster_size, slots, ops_cap, writable,
                     has_backing, d->len, d->backing_len);
    d->ops_cap = ops_cap;
    {
        int rc = qh_run(&h->img, d, q2w_open(&h->img, &cfg));
        if (rc == Q2W_OK) {
            /* info_get fills every field: the cache has 1..max_slots slots */
            q2w_info info;
            memset(&info, 0xA5, sizeof info);
            q2w_info_get(&h->img, &info);
            ALK_CHECK(info.cache_slots >= 1 && info.cache_slots <= slots,
                      "open: %zu cache slots of at most %zu", info.cache_slots, slots);
        }
        return rc;
    }
}

static ALK_UNUSED void qh_close_handle(qh_handle *h)
{
    alk_free(h->mem);
    alk_free(h->ops);
    h->mem = NULL;
    h->ops = NULL;
}

/* Create an image on an empty disk. */
static ALK_UNUSED int qh_create(qh_disk *d, const q2w_create_opts *o)
{
    uint64_t len = 0;
    q2w_error_info e;
    int rc = q2w_create(o, NULL, 0, &len, &e);
    if (rc != Q2W_OK) return rc;
    ALK_CHECK(len <= d->cap, "created image of %llu bytes > disk %zu",
              (unsigned long long)len, d->cap);
    qh_disk_reserve(d, (size_t)len);
    rc = q2w_create(o, d->buf, d->alloc, &len, &e);
    ALK_CHECK(rc == Q2W_OK, "create after sizing: %s", q2w_strerror(rc));
    d->len = (size_t)len;
    return rc;
}

/* Create options: version, cluster size, refcount bits (0 for each: the
 * default), virtual size, backing name and format (NULL: none). */
static ALK_UNUSED q2w_create_opts qh_opts(int version, uint32_t cs, uint32_t rbits,
                                          uint64_t size, const char *backing,
                                          const char *backing_fmt)
{
    q2w_create_opts o;
    memset(&o, 0, sizeof o);
    o.version = version;
    o.cluster_size = cs;
    o.refcount_bits = rbits;
    o.size = size;
    o.backing = backing;
    o.backing_fmt = backing_fmt;
    return o;
}

/* A fresh disk of cap bytes holding a new image of qh_opts' options; the
 * create's code. */
static ALK_UNUSED int qh_make(qh_disk *d, size_t cap, int version, uint32_t cs,
                              uint32_t rbits, uint64_t size, const char *backing,
                              const char *backing_fmt)
{
    q2w_create_opts o = qh_opts(version, cs, rbits, size, backing, backing_fmt);
    qh_disk_init(d, cap);
    return qh_create(d, &o);
}

/* What survives a power loss on a disk whose writes land in order: the
 * file as of its last flush. qh_durable_batch before a batch runs: when
 * the batch holds a flush, the file then is the disk now plus the batch's
 * writes up to its last flush. qh_power_loss: every later write is lost. */
typedef struct qh_durable {
    unsigned char *buf;
    size_t len, cap;
} qh_durable;

static ALK_UNUSED void qh_durable_set(qh_durable *u, const unsigned char *p, size_t len)
{
    if (u->cap < len) {
        alk_free(u->buf);
        u->buf = (unsigned char *)alk_malloc(len ? len : 1);
        ALK_CHECK(u->buf != NULL, "out of memory for a durable copy");
        u->cap = len;
    }
    memcpy(u->buf, p, len);
    u->len = len;
}

static ALK_UNUSED void qh_durable_batch(qh_durable *u, const qh_disk *d, const q2w_op *op,
                                        size_t n)
{
    size_t i, last = n;
    for (i = 0; i < n; i++)
        if (op[i].kind == Q2W_OP_FLUSH) last = i;
    if (last == n) return;
    qh_durable_set(u, d->buf, d->len);
    for (i = 0; i < last; i++) {
        size_t end;
        if (op[i].kind != Q2W_OP_WRITE) continue;
        end = (size_t)(op[i].off + op[i].len);
        if (end > u->cap) {
            unsigned char *p = (unsigned char *)alk_malloc(end);
            ALK_CHECK(p != NULL, "out of memory for a durable copy");
            memcpy(p, u->buf, u->len);
            alk_free(u->buf);
            u->buf = p;
            u->cap = end;
        }
        if (end > u->len) {
            memset(u->buf + u->len, 0, end - u->len);
            u->len = end;
        }
        if (op[i].src) memcpy(u->buf + op[i].off, op[i].src, op[i].len);
        else memset(u->buf + op[i].off, 0, op[i].len);
    }
}

static ALK_UNUSED void qh_power_loss(const qh_durable *u, qh_disk *d)
{
    qh_disk_reserve(d, u->len);
    memcpy(d->buf, u->buf, u->len);
    d->len = u->len;
    d->unflushed = 0;
}

/* A commit or rebase job to its end: TOP batches on top, OTHER batches on
 * other (a raw file, or a qcow2 image with its own backing bytes). With
 * top_reads_other the overlay's backing reads see other's bytes as they
 * are at that moment (a raw base under the overlay). */
static ALK_UNUSED int qh_job_run(q2w_job *j, qh_disk *top, qh_disk *other,
                                 int top_reads_other, int rc)
{
    unsigned long rounds = 0;
    size_t n = 0;
    while (rc == Q2W_PENDING) {
        int file = -1;
        const q2w_op *op = q2w_job_batch(j, &n, &file);
        ALK_CHECK(++rounds < QH_RESUME_CAP, "job: resume loop did not end");
        ALK_CHECK(op && n >= 1 && (file == Q2W_JOB_TOP || file == Q2W_JOB_OTHER),
                  "job: a pending batch of %zu ops for file %d", n, file);
        if (file == Q2W_JOB_TOP && top_reads_other) {
            top->backing = other->buf;
            top->backing_len = other->len;
        }
        rc = q2w_job_resume(j, qh_exec(file == Q2W_JOB_TOP ? top : other, op, n));
    }
    ALK_CHECK(q2w_job_batch(j, &n, NULL) == NULL && n == 0,
              "job: a batch left after it ended (%d)", rc);
    if (rc != Q2W_OK)
        ALK_CHECK(q2w_job_error(j)->code == rc, "job: error %d, its context says %d", rc,
                  q2w_job_error(j)->code);
    return rc;
}

/* q2w_map (sn NULL) or q2w_map_snapshot over [off, off+len) of the image
 * open as h against model (the view's bytes from off): the extents tile
 * the range in order; each is maximal (the next one differs in kind, or
 * is data that does not continue on the host); DATA's bytes are in the
 * file at its host offset, ZERO's are zeros, BACKING's are the backing
 * file's; a one-byte map inside an extent agrees with it. */
/* A map of no bytes is answered at once, without I/O, as an empty zero
 * extent at its offset. */
static void qh_assert_empty_map(qh_handle *h, const q2w_snapshot *sn,
                                uint64_t off, const char *when)
{
    q2w_extent x;
    size_t nb;
    int rc;
    memset(&x, 0xA5, sizeof x);
    rc = sn ? q2w_map_snapshot(&h->img, sn, off, 0, &x) : q2w_map(&h->img, off, 0, &x);
    q2w_batch(&h->img, &nb);
    ALK_CHECK(rc == Q2W_OK && nb == 0 && x.off == off && x.len == 0 &&
                  x.kind == Q2W_EXTENT_ZERO && x.host == 0 && x.allocated == 0,
              "%s: map of 0 bytes at %llu: %s, %zu ops, [%llu,+%llu) kind %d host %llu",
              when, (unsigned long long)off, q2w_strerror(rc), nb,
              (unsigned long long)x.off, (unsigned long long)x.len, x.kind,
              (unsigned long long)x.host);
}

static ALK_UNUSED void qh_assert_map(qh_handle *h, qh_disk *d,
                                     const q2w_snapshot *sn,
                                     const unsigned char *model, uint64_t off,
                                     uint64_t len, const char *when)
{
    uint64_t pos = off, end = off + len, i;
    q2w_extent x, prev, one;
    int rc, have_prev = 0;
    memset(&prev, 0, sizeof prev);
    qh_assert_empty_map(h, sn, off, when);
    while (pos < end) {
        unsigned char *got;
        uint64_t mid;
        rc = qh_run(&h->img, d, sn ? q2w_map_snapshot(&h->img, sn, pos,
                                                      end - pos, &x)
                                   : q2w_map(&h->img, pos, end - pos, &x));
        ALK_CHECK(rc == Q2W_OK, "%s: map [%llu,+%llu): %s (%s)", when,
                  (unsigned long long)pos, (unsigned long long)(end - pos),
                  q2w_strerror(rc),
                  q2w_error(&h->img)->what ? q2w_error(&h->img)->what : "");
        ALK_CHECK(x.off == pos && x.len >= 1 && x.len <= end - pos,
                  "%s: map at %llu gave [%llu,+%llu)", when,
                  (unsigned long long)pos, (unsigned long long)x.off,
                  (unsigned long long)x.len);
        ALK_CHECK(x.kind >= Q2W_EXTENT_DATA && x.kind <= Q2W_EXTENT_COMPRESSED,
                  "%s: map at %llu: kind %d", when, (unsigned long long)pos,
                  x.kind);
        /* a host offset for data, and for zeros only on the image's own
         * (preallocated) clusters; the image holds data and compressed
         * runs, never backing ones */
        ALK_CHECK(x.kind == Q2W_EXTENT_DATA ? x.host != 0
                  : x.kind == Q2W_EXTENT_ZERO ? x.host == 0 || x.allocated
                                              : x.host == 0,
                  "%s: map at %llu: kind %d with host %llu", when,
                  (unsigned long long)pos, x.kind, (unsigned long long)x.host);
        ALK_CHECK(x.kind == Q2W_EXTENT_DATA || x.kind == Q2W_EXTENT_COMPRESSED
                      ? x.allocated == 1
                  : x.kind == Q2W_EXTENT_BACKING ? x.allocated == 0
                                                 : x.allocated == 0 || x.allocated == 1,
                  "%s: map at %llu: kind %d allocated %d", when,
                  (unsigned long long)pos, x.kind, x.allocated);
        if (have_prev)
            ALK_CHECK(prev.kind != x.kind || prev.allocated != x.allocated ||
                          ((x.host || prev.host) &&
                           x.host != prev.host + prev.len),
                      "%s: map extent at %llu (kind %d) continues the one "
                      "before it", when, (unsigned long long)pos, x.kind);
        /* What the extent says its bytes are, then compared at once. */
        got = (unsigned char *)alk_malloc((size_t)x.len);
        ALK_CHECK(got != NULL, "out of memory");
        if (x.kind == Q2W_EXTENT_DATA) {
            ALK_CHECK(x.host >= d->cluster_size,
                      "%s: map at %llu: data in the header cluster", when,
                      (unsigned long long)pos);
            qh_disk_read(d, x.host, got, (size_t)x.len);
        } else if (x.kind == Q2W_EXTENT_BACKING) {
            uint64_t have;
            ALK_CHECK(d->backing &&
                          (d->cluster_size ? (pos + x.len - 1) / d->cluster_size *
                                                 d->cluster_size
                                           : pos) < d->backing_len,
                      "%s: map at %llu: backing extent of %llu bytes past the "
                      "backing file's %llu", when, (unsigned long long)pos,
                      (unsigned long long)x.len, (unsigned long long)d->backing_len);
            have = pos >= d->backing_len ? 0
                            : d->backing_len - pos < x.len ? d->backing_len - pos
                                                           : x.len;
            if (have) memcpy(got, d->backing + pos, (size_t)have);
            memset(got + have, 0, (size_t)(x.len - have));
        } else if (x.kind == Q2W_EXTENT_ZERO) {
            memset(got, 0, (size_t)x.len);
        } else {
            memcpy(got, model + (pos - off), (size_t)x.len);
        }
        if (memcmp(got, model + (pos - off), (size_t)x.len) != 0)
            for (i = 0; i < x.len; i++)
                ALK_CHECK(got[i] == model[pos - off + i],
                          "%s: map kind %d at %llu: byte %llu is %02x there, "
                          "the view has %02x", when, x.kind,
                          (unsigned long long)pos,
                          (unsigned long long)(pos + i), got[i],
                          model[pos - off + i]);
        alk_free(got);
        mid = pos + x.len / 2;
        rc = qh_run(&h->img, d, sn ? q2w_map_snapshot(&h->img, sn, mid, 1, &one)
                                   : q2w_map(&h->img, mid, 1, &one));
        ALK_CHECK(rc == Q2W_OK && one.off == mid && one.len == 1 &&
                      one.kind == x.kind && one.allocated == x.allocated &&
                      one.host == (x.host ? x.host + (mid - pos) : 0),
                  "%s: one-byte map at %llu: %s kind %d host %llu, inside "
                  "[%llu,+%llu) kind %d host %llu", when,
                  (unsigned long long)mid, q2w_strerror(rc), one.kind,
                  (unsigned long long)one.host, (unsigned long long)pos,
                  (unsigned long long)x.len, x.kind,
                  (unsigned long long)x.host);
        prev = x;
        have_prev = 1;
        pos += x.len;
    }
}

/* The image's view of [off, off+len) through handle h equals model. */
static ALK_UNUSED void qh_assert_view(qh_handle *h, qh_disk *d,
                                      const unsigned char *model,
                                      uint64_t off, uint64_t len,
                                      const char *when)
{
    unsigned char *got = (unsigned char *)alk_malloc(len ? (size_t)len : 1);
    int rc;
    uint64_t i;
    ALK_CHECK(got != NULL, "out of memory");
    memset(got, 0xa5, (size_t)len);
    rc = qh_run(&h->img, d, q2w_read(&h->img, off, got, (size_t)len));
    ALK_CHECK(rc == Q2W_OK, "%s: read [%llu,+%llu): %s (%s at %llu)", when,
              (unsigned long long)off, (unsigned long long)len,
              q2w_strerror(rc), q2w_error(&h->img)->what,
              (unsigned long long)q2w_error(&h->img)->offset);
    if (memcmp(got, model + off, (size_t)len) != 0)
        for (i = 0; i < len; i++)
            ALK_CHECK(got[i] == model[off + i],
                      "%s: byte %llu reads %02x, model %02x", when,
                      (unsigned long long)(off + i), got[i], model[off + i]);
    alk_free(got);
    qh_assert_map(h, d, NULL, model + off, off, len, when);
}

/* A second, read-only handle opened on the disk as it is now sees model:
 * everything a completed flush covered is on the disk. */
static ALK_UNUSED void qh_assert_fresh_view(qh_disk *d, uint32_t cluster_size,
                                            int has_backing,
                                            const unsigned char *model,
                                            uint64_t size, const char *when)
{
    qh_handle f;
    size_t saved_cap = d->ops_cap;
    int rc = qh_open(&f, d, cluster_size, 8, 16, 0, has_backing);
    ALK_CHECK(rc == Q2W_OK, "%s: fresh open: %s (%s)", when, q2w_strerror(rc),
              q2w_error(&f.img)->what ? q2w_error(&f.img)->what : "");
    {
        q2w_info info;
        q2w_info_get(&f.img, &info);
        ALK_CHECK(info.size == size, "%s: fresh size %llu, model %llu", when,
                  (unsigned long long)info.size, (unsigned long long)size);
    }
    /* on a cold cache: nothing loaded for a map of no bytes */
    qh_assert_empty_map(&f, NULL, size, when);
    qh_assert_empty_map(&f, NULL, size / 2, when);
    qh_assert_view(&f, d, model, 0, size, when);
    qh_close_handle(&f);
    d->ops_cap = saved_cap;
#ifndef Q2W_NO_STDIO
    if (d->mirror) {
        /* the same view through qcow2w's own driver on the mirror file */
        q2w_config cfg;
        q2w_backing_reader br;
        unsigned char *got = (unsigned char *)alk_malloc(size ? (size_t)size : 1);
        ALK_CHECK(got != NULL, "out of memory");
        br.read = qh_mirror_backing;
        br.user = d;
        qh_handle_config(&f, &cfg, cluster_size, 8, 16, 0, has_backing, d->len,
                         d->backing_len);
        rc = q2w_posix_run(&f.img, d->mirror_fd, &br, q2w_open(&f.img, &cfg));
        ALK_CHECK(rc == Q2W_OK, "%s: open through q2w_posix_run: %s", when,
                  q2w_strerror(rc));
        rc = q2w_posix_run(&f.img, d->mirror_fd, &br,
                           q2w_read(&f.img, 0, got, (size_t)size));
        ALK_CHECK(rc == Q2W_OK && memcmp(got, model, (size_t)size) == 0,
                  "%s: the view through q2w_posix_run: %s, or other bytes", when,
                  q2w_strerror(rc));
        rc = q2w_posix_run_flags(&f.img, d->mirror_fd, &br, Q2W_POSIX_NO_FLUSH,
                                 q2w_close(&f.img));
        ALK_CHECK(rc == Q2W_OK, "%s: close through q2w_posix_run_flags: %s", when,
                  q2w_strerror(rc));
        alk_free(got);
        qh_close_handle(&f);
    }
#endif
}

/* The on-disk bytes of snapshot entry `sn` (as q2w_snapshot_get/find gave
 * it) say what sn says, laid out as qemu lays them out: id and name after
 * the extra data, padding to 8 bytes zero, no VM state. The table starts
 * at `table`; `expect_at` is where in it the entry must start (0, or the
 * previous entry's end). Returns the offset just past the entry. */
static ALK_UNUSED uint64_t qh_assert_snapshot_entry(const qh_disk *d,
                                                    uint64_t table,
                                                    const q2w_snapshot *sn,
                                                    uint64_t expect_at,
                                                    const char *when)
{
    unsigned char e[40 + 64 + 64 + Q2W_MAX_SNAPSHOT_NAME + 8];
    size_t idl = strlen(sn->id), nml = strlen(sn->name), i;
    uint32_t extra;
    uint64_t end;
    ALK_CHECK(sn->entry_offset == expect_at,
              "%s: snapshot %u at %llu, expected %llu", when, sn->index,
              (unsigned long long)sn->entry_offset,
              (unsigned long long)expect_at);
    ALK_CHECK(sn->entry_len >= 40 && sn->entry_len <= sizeof e,
              "%s: snapshot %u entry of %u bytes", when, sn->index,
              sn->entry_len);
    qh_disk_read(d, table + sn->entry_offset, e, sn->entry_len);
    extra = q2w__be32(e + 36);
    end = (40u + (uint64_t)extra + idl + nml + 7u) & ~7ull;
    ALK_CHECK(extra <= 64 && end == sn->entry_len,
              "%s: snapshot %u: extra %u, entry %u bytes, expected %llu", when,
              sn->index, extra, sn->entry_len, (unsigned long long)end);
    ALK_CHECK(q2w__be64(e) == sn->l1_offset && q2w__be32(e + 8) == sn->l1_size &&
                  q2w__be16(e + 12) == idl && q2w__be16(e + 14) == nml &&
                  q2w__be32(e + 16) == sn->date_sec &&
                  q2w__be32(e + 20) == sn->date_nsec &&
                  q2w__be64(e + 24) == sn->vm_clock_ns &&
                  q2w__be32(e + 32) == 0 && sn->vm_state_size == 0,
              "%s: snapshot %u: fixed fields differ from what was read",
              when, sn->index);
    ALK_CHECK(extra < 8 || q2w__be64(e + 40) == 0,
              "%s: snapshot %u: VM state in the extra data", when, sn->index);
    ALK_CHECK(extra < 16 ? sn->disk_size == 0
                         : q2w__be64(e + 48) == sn->disk_size,
              "%s: snapshot %u: disk size %llu", when, sn->index,
              (unsigned long long)sn->disk_size);
    ALK_CHECK(memcmp(e + 40 + extra, sn->id, idl) == 0 &&
                  memcmp(e + 40 + extra + idl, sn->name, nml) == 0,
              "%s: snapshot %u: id or name bytes differ", when, sn->index);
    for (i = 40 + extra + idl + nml; i < sn->entry_len; i++)
        ALK_CHECK(e[i] == 0, "%s: snapshot %u: padding byte %zu is %02x",
                  when, sn->index, i, e[i]);
    return sn->entry_offset + sn->entry_len;
}

/* ---- the reference model: discard ----------------------------------------
 * qemu's discard of [off, off+len) (inside a disk of `size` bytes): whole
 * clusters only, plus the partial last cluster of a disk whose size is not
 * a cluster multiple when the range runs to its end. They read as zeros
 * afterwards - v3: the zero flag; v2 without a backing file: unallocated -
 * except on v2 with a backing file, where qemu refuses (an unallocated
 * cluster would show the backing data again) and nothing changes. The
 * clusters it takes are contiguous: the model zeroes them and returns
 * their length, and their offset in *at (when not NULL). A write_zeroes is
 * the plain memset of its whole range. */
static ALK_UNUSED uint64_t qh_model_discard(unsigned char *model,
                                            uint64_t size,
                                            uint32_t cluster_size, int version,
                                            int has_backing, uint64_t off,
                                            uint64_t len, uint64_t *at)
{
    uint64_t end = off + len;
    uint64_t lo = (off + cluster_size - 1) / cluster_size * cluster_size;
    uint64_t hi = end == size ? size : end / cluster_size * cluster_size;
    ALK_CHECK(end <= size, "discard [%llu,+%llu) past the disk's %llu bytes",
              (unsigned long long)off, (unsigned long long)len,
              (unsigned long long)size);
    if (at) *at = lo;
    if ((version == 2 && has_backing) || hi <= lo) return 0;
    memset(model + lo, 0, (size_t)(hi - lo));
    return hi - lo;
}

/* ---- the reference model: snapshots --------------------------------------
 * Every snapshot a scenario creates, in creation order - the order of
 * qemu's table too: a create appends, a delete takes the entry out and the
 * rest keep their order - each with a copy of the virtual disk as it was
 * then (and its size), the id qemu's rule gives it (the largest id in the
 * table + 1) and the dates it was given. A harness whose operations can be
 * interrupted or refused says so with the states: */
#define QH_MAX_SNAPS 32
enum {
    QH_SNAP_CREATING, /* create started, not finished: in the table or not */
    QH_SNAP_LIVE,     /* created: in the table */
    QH_SNAP_REFUSED,  /* create refused: not in the table (copy kept unless
                         qh_snap_forget_copy) */
    QH_SNAP_DELETING, /* delete started, not finished: in the table or not */
    QH_SNAP_GONE      /* deleted: not in the table (copy freed) */
};

typedef struct qh_snap {
    char name[Q2W_MAX_SNAPSHOT_NAME + 1];
    int state;
    unsigned char *model; /* the virtual disk when it was taken */
    uint64_t size;
    uint64_t id;
    uint32_t date_sec, date_nsec;
    uint64_t vm_clock_ns;
    size_t tag;           /* the caller's: e.g. the op that created it */
} qh_snap;

typedef struct qh_snaps {
    qh_snap snap[QH_MAX_SNAPS];
    unsigned n;
} qh_snaps;

/* A snapshot in `state` is certainly in the table / possibly there. */
static ALK_UNUSED int qh_snap_must_be_listed(int state)
{
    return state == QH_SNAP_LIVE;
}
static ALK_UNUSED int qh_snap_may_be_listed(int state)
{
    return state == QH_SNAP_LIVE || state == QH_SNAP_CREATING ||
           state == QH_SNAP_DELETING;
}

/* A create of `name` starts, the virtual disk being model[0, size): its
 * copy, and the id it gets if it lands (the table holds every live entry
 * and no unfinished one then: an interrupted operation ends a scenario). */
static ALK_UNUSED qh_snap *qh_snap_begin_create(qh_snaps *m, const char *name,
                                                const unsigned char *model,
                                                uint64_t size,
                                                uint32_t date_sec,
                                                uint32_t date_nsec,
                                                uint64_t vm_clock_ns)
{
    qh_snap *sn;
    unsigned k;
    ALK_CHECK(m->n < QH_MAX_SNAPS, "more than %d snapshots in a scenario",
              QH_MAX_SNAPS);
    ALK_CHECK(strlen(name) < sizeof sn->name, "snapshot name %s", name);
    sn = &m->snap[m->n];
    memset(sn, 0, sizeof *sn);
    memcpy(sn->name, name, strlen(name) + 1);
    sn->model = (unsigned char *)alk_malloc(size ? (size_t)size : 1);
    ALK_CHECK(sn->model != NULL, "out of memory for a snapshot's model");
    memcpy(sn->model, model, (size_t)size);
    sn->size = size;
    sn->id = 1;
    for (k = 0; k < m->n; k++)
        if (qh_snap_may_be_listed(m->snap[k].state) &&
            m->snap[k].id >= sn->id)
            sn->id = m->snap[k].id + 1;
    sn->date_sec = date_sec;
    sn->date_nsec = date_nsec;
    sn->vm_clock_ns = vm_clock_ns;
    sn->state = QH_SNAP_CREATING;
    m->n++;
    return sn;
}

/* The create finished: made (LIVE) or refused (REFUSED). */
static ALK_UNUSED void qh_snap_end_create(qh_snap *sn, int made)
{
    ALK_CHECK(sn->state == QH_SNAP_CREATING, "snapshot %s: state %d",
              sn->name, sn->state);
    sn->state = made ? QH_SNAP_LIVE : QH_SNAP_REFUSED;
}

/* A refused create's copy, when nothing will read it. */
static ALK_UNUSED void qh_snap_forget_copy(qh_snap *sn)
{
    ALK_CHECK(sn->state == QH_SNAP_REFUSED, "snapshot %s: state %d",
              sn->name, sn->state);
    alk_free(sn->model);
    sn->model = NULL;
}

/* A create the scenario forgets (refused, and nothing changed): the last
 * entry goes. */
static ALK_UNUSED void qh_snap_cancel(qh_snaps *m, qh_snap *sn)
{
    ALK_CHECK(m->n && sn == &m->snap[m->n - 1], "cancel of %s: not the last",
              sn->name);
    alk_free(sn->model);
    memset(sn, 0, sizeof *sn);
    m->n--;
}

static ALK_UNUSED void qh_snap_begin_delete(qh_snap *sn)
{
    ALK_CHECK(sn->state == QH_SNAP_LIVE, "delete of %s in state %d",
              sn->name, sn->state);
    sn->state = QH_SNAP_DELETING;
}

/* The delete finished: done (GONE), or refused with nothing changed. */
static ALK_UNUSED void qh_snap_end_delete(qh_snap *sn, int deleted)
{
    ALK_CHECK(sn->state == QH_SNAP_DELETING, "snapshot %s: state %d",
              sn->name, sn->state);
    if (!deleted) {
        sn->state = QH_SNAP_LIVE;
        return;
    }
    alk_free(sn->model);
    sn->model = NULL;
    sn->state = QH_SNAP_GONE;
}

/* The entry named `name` (the latest, should a name come back), or NULL. */
static ALK_UNUSED qh_snap *qh_snaps_find(const qh_snaps *m, const char *name)
{
    unsigned k = m->n;
    while (k--)
        if (strcmp(m->snap[k].name, name) == 0)
            return (qh_snap *)&m->snap[k];
    return NULL;
}

/* Entries in `state`, and the k-th of them in creation order. */
static ALK_UNUSED unsigned qh_snaps_count(const qh_snaps *m, int state)
{
    unsigned k, c = 0;
    for (k = 0; k < m->n; k++) c += m->snap[k].state == state;
    return c;
}
static ALK_UNUSED qh_snap *qh_snaps_nth(qh_snaps *m, int state, unsigned nth)
{
    unsigned k, left = nth;
    for (k = 0; k < m->n; k++)
        if (m->snap[k].state == state && left-- == 0) return &m->snap[k];
    ALK_CHECK(0, "no snapshot number %u in state %d", nth, state);
    return NULL;
}

static ALK_UNUSED void qh_snaps_free(qh_snaps *m)
{
    unsigned k;
    for (k = 0; k < m->n; k++) alk_free(m->snap[k].model);
    memset(m, 0, sizeof *m);
}

/* The names a snapshot table lists, in table order, against the model.
 * `state` gives each entry's state on this image (NULL: the entries' own;
 * another array when one history runs on images whose creates were refused
 * differently). Every listed name is an entry that may be in the table,
 * none twice, in creation order; every entry that must be there is.
 * entry[i] gets listed name i's entry index. 0, or -1 with `why`. */
static ALK_UNUSED int qh_snaps_judge_list(const qh_snaps *m, const int *state,
                                          const char *const *names, size_t n,
                                          unsigned *entry, char *why,
                                          size_t why_cap)
{
    unsigned char seen[QH_MAX_SNAPS];
    size_t i;
    unsigned k;
    memset(seen, 0, sizeof seen);
    for (i = 0; i < n; i++) {
        const qh_snap *sn = qh_snaps_find(m, names[i]);
        int st;
        if (!sn) {
            snprintf(why, why_cap, "lists '%s' (table index %zu): never "
                     "created", names[i], i);
            return -1;
        }
        k = (unsigned)(sn - m->snap);
        st = state ? state[k] : sn->state;
        if (!qh_snap_may_be_listed(st) || seen[k]) {
            snprintf(why, why_cap, "lists '%s' (table index %zu): %s",
                     names[i], i, seen[k] ? "twice" : "not a live snapshot");
            return -1;
        }
        if (i && k < entry[i - 1]) {
            snprintf(why, why_cap, "lists '%s' after '%s': not in the order "
                     "they were created", names[i], names[i - 1]);
            return -1;
        }
        seen[k] = 1;
        entry[i] = k;
    }
    for (k = 0; k < m->n; k++)
        if (qh_snap_must_be_listed(state ? state[k] : m->snap[k].state) &&
            !seen[k]) {
            snprintf(why, why_cap, "live snapshot %s missing (%zu listed)",
                     m->snap[k].name, n);
            return -1;
        }
    return 0;
}

/* What snapshot sn (as q2w_snapshot_get/find read it) says against its
 * entry: the size it had, no VM state, and with `own_history` (the image's
 * creates are the model's: no other writer) the id and dates too. 0, or
 * -1 with `why`. */
static ALK_UNUSED int qh_snap_judge_fields(const qh_snap *e,
                                           const q2w_snapshot *sn,
                                           int own_history, char *why,
                                           size_t why_cap)
{
    char id[24];
    if (sn->disk_size != e->size || sn->vm_state_size != 0) {
        snprintf(why, why_cap, "snapshot %s: disk_size %llu vm_state_size "
                 "%llu, model size %llu", e->name,
                 (unsigned long long)sn->disk_size,
                 (unsigned long long)sn->vm_state_size,
                 (unsigned long long)e->size);
        return -1;
    }
    if (!own_history) return 0;
    snprintf(id, sizeof id, "%llu", (unsigned long long)e->id);
    if (strcmp(sn->id, id) != 0 || sn->date_sec != e->date_sec ||
        sn->date_nsec != e->date_nsec || sn->vm_clock_ns != e->vm_clock_ns) {
        snprintf(why, why_cap, "snapshot %s: id %s (model %s), date %u.%u "
                 "(model %u.%u), clock %llu (model %llu)", e->name, sn->id,
                 id, sn->date_sec, sn->date_nsec, e->date_sec, e->date_nsec,
                 (unsigned long long)sn->vm_clock_ns,
                 (unsigned long long)e->vm_clock_ns);
        return -1;
    }
    return 0;
}

/* The snapshot table of the image open as h (on d) against the model:
 * the listing (qh_snaps_judge_list, the entries' own states), each entry
 * on the disk as qemu lays it out (qh_assert_snapshot_entry), found by
 * name as listed by index, its fields (qh_snap_judge_fields), and its
 * content read back byte for byte equal to its copy. */
static ALK_UNUSED void qh_assert_snapshots(qh_handle *h, qh_disk *d,
                                           const qh_snaps *m, const char *when)
{
    q2w_snapshot sn[QH_MAX_SNAPS];
    const char *names[QH_MAX_SNAPS];
    unsigned entry[QH_MAX_SNAPS], i;
    char why[256];
    q2w_info info;
    uint64_t at = 0;
    int rc;
    q2w_info_get(&h->img, &info);
    ALK_CHECK(info.nb_snapshots <= QH_MAX_SNAPS, "%s: %u snapshots listed",
              when, info.nb_snapshots);
    for (i = 0; i < info.nb_snapshots; i++) {
        rc = qh_run(&h->img, d, q2w_snapshot_get(&h->img, i, &sn[i]));
        ALK_CHECK(rc == Q2W_OK, "%s: snapshot %u: %s", when, i,
                  q2w_strerror(rc));
        names[i] = sn[i].name;
    }
    ALK_CHECK(qh_snaps_judge_list(m, NULL, names, info.nb_snapshots, entry,
                                  why, sizeof why) == 0,
              "%s: the table %s", when, why);
    for (i = 0; i < info.nb_snapshots; i++) {
        const qh_snap *e = &m->snap[entry[i]];
        q2w_snapshot by_name;
        unsigned char *got;
        uint64_t k;
        at = qh_assert_snapshot_entry(d, info.snapshots_offset, &sn[i], at,
                                      when);
        rc = qh_run(&h->img, d, q2w_snapshot_find(&h->img, e->name, &by_name));
        ALK_CHECK(rc == Q2W_OK && memcmp(&by_name, &sn[i], sizeof sn[i]) == 0,
                  "%s: snapshot %s by name (%s) differs from by index %u",
                  when, e->name, q2w_strerror(rc), i);
        ALK_CHECK(qh_snap_judge_fields(e, &sn[i], 1, why, sizeof why) == 0,
                  "%s: %s", when, why);
        got = (unsigned char *)alk_malloc((size_t)e->size + 1);
        ALK_CHECK(got != NULL, "out of memory");
        rc = qh_run(&h->img, d, q2w_read_snapshot(&h->img, &sn[i], 0, got,
                                                  (size_t)e->size));
        ALK_CHECK(rc == Q2W_OK, "%s: read snapshot %s: %s (%s)", when,
                  e->name, q2w_strerror(rc),
                  q2w_error(&h->img)->what ? q2w_error(&h->img)->what : "");
        if (memcmp(got, e->model, (size_t)e->size) != 0)
            for (k = 0; k < e->size; k++)
                ALK_CHECK(got[k] == e->model[k],
                          "%s: snapshot %s byte %llu reads %02x, model %02x",
                          when, e->name, (unsigned long long)k, got[k],
                          e->model[k]);
        alk_free(got);
    }
    /* each map shows its own snapshot (all read first: no map may lean
     * on the last read's state), and one byte past the snapshot's size
     * is out of range (its size: disk_size, or the disk's when not
     * recorded) with nothing asked of the file */
    for (i = 0; i < info.nb_snapshots; i++) {
        const qh_snap *e = &m->snap[entry[i]];
        uint64_t lim = sn[i].disk_size ? sn[i].disk_size : info.size;
        q2w_extent past;
        size_t nb;
        qh_assert_map(h, d, &sn[i], e->model, 0, e->size, when);
        rc = q2w_map_snapshot(&h->img, &sn[i], lim, 1, &past);
        q2w_batch(&h->img, &nb);
        ALK_CHECK(rc == Q2W_ERR_RANGE && nb == 0,
                  "%s: a map of snapshot %s one byte past its size %llu: %s, %zu ops",
                  when, e->name, (unsigned long long)lim, q2w_strerror(rc), nb);
    }
}

#endif /* QCOW2_HARNESS_H */

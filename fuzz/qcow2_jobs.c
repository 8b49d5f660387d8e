/* qcow2_jobs.c - fuzz target `qcow2_jobs`: the commit and rebase planners
 * (q2w_commit, q2w_rebase, q2w_set_backing) on drawn fixtures.
 *
 * Who sends this input: the person who runs qcow2w commit / rebase on
 * images they hold - any image qcow2w opens, any pair of backing files.
 * The images are made here by qcow2w itself (the fixture is not under
 * test; the reader that measures it is checked by every other qcow2
 * target), so what is drawn is the shape: a backing file (raw, qcow2,
 * or qcow2 over a raw root: nested) with data, zero flags and maybe an
 * internal snapshot; an overlay (v2 or v3; 512 B, 4 KiB, 64 KiB or 2 MiB
 * clusters) with data, zeroed and discarded ranges, maybe a snapshot and
 * then writes over what it shares (data, or one cluster under a shared
 * L2 table); for a rebase a new backing file (raw or qcow2) made of the
 * old view with ranges rewritten and another length; the cache, op buffer
 * and job buffer sizes; the operation (commit, commit keeping the
 * overlay, safe rebase, flatten, unsafe rebase); and maybe an I/O error
 * at a drawn batch, after which the job runs again from the start.
 *
 * The oracle holds the views the fixture had, read before the job:
 *   - after every batch: every qcow2 file the batch wrote has no
 *     corruption (leaks allowed mid-job); at a drawn stride and at the
 *     end, the overlay's view - through the backing file its header names
 *     as it is on disk now - is the one it had (a commit never shows the
 *     base's new bytes where the overlay does not cover them, a rebase
 *     never shows the new file before its copies are in); the base's
 *     snapshot reads as it did (copy-on-write in the base); the overlay's
 *     snapshot's own clusters read as they did;
 *   - a failed batch: the job returns Q2W_ERR_IO with that code in its
 *     error; the files are as above; the job run again completes;
 *   - the end: every qcow2 file exact (no leak, COPIED right) unless a
 *     run failed; commit: the base holds the overlay's view over the
 *     overlay's length and what it held past it, the emptied overlay maps
 *     as one backing extent (kept: its own clusters unchanged); rebase:
 *     the header names the new file, the view is the same through it, and
 *     every cluster the overlay did not hold where old and new agreed is
 *     still not held (no needless copy); flatten: no backing file, the
 *     same view; unsafe: only the name changed.
 * With QCOW2_JOBS_CRASH set every run has its failing batch (drawn as
 * usual); with QCOW2_JOBS_SAVE=DIR each power loss leaves DIR/run-N-OP/
 * holding the files as they were then (top.qcow2, base.img, root.raw,
 * new.img) for qemu-img check (tests/crash_qemu_jobs.sh).
 */
#define _POSIX_C_SOURCE 200809L /* the harness's POSIX mirror: mkstemp, pread */
#include "qcow2w.h"
#include "alksim.h"
#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define QJ_DISK_CAP (48u << 20)
enum { QJ_COMMIT, QJ_COMMIT_KEEP, QJ_REBASE, QJ_FLATTEN, QJ_UNSAFE, QJ_OPS };
static const char *const qj_op_names[] = {"commit", "commit -d", "rebase", "flatten",
                                          "rebase -u"};

typedef struct qj {
    alksim_source *src;
    int op, version, base_qcow2, nested, new_qcow2, base_snap, top_snap;
    uint32_t cs, bcs;
    uint64_t size, bsize, nsize;
    size_t slots, ops_cap, buf_len;
    unsigned stride;
    char new_name[Q2W_MAX_BACKING_NAME + 1]; /* what a rebase names */
    int name_fits;         /* it fits in the overlay's cluster 0 */
    unsigned char ext[56]; /* a feature-table extension put first, or none */
    int has_ext;
    uint32_t header_length;
    qh_disk root, base, top, nb;
    unsigned char *bv;     /* the base's view, bsize bytes */
    unsigned char *tv;     /* the overlay's view, size bytes */
    unsigned char *t0;     /* the overlay's own clusters (zeros elsewhere) */
    unsigned char *ts0;    /* its snapshot's own clusters */
    unsigned char *bs;     /* the base's snapshot */
    unsigned char *nv;     /* the new backing file's view, nsize bytes */
    unsigned char *kinds;  /* the overlay's map before: one kind a cluster */
    unsigned char *scratch;
    /* what survives a power loss: each written file as of its last flush */
    qh_durable durable[2];
} qj;

static unsigned char *qj_alloc(uint64_t n)
{
    unsigned char *p = (unsigned char *)alk_malloc(n ? (size_t)n : 1);
    ALK_CHECK(p != NULL, "out of memory (%llu bytes)", (unsigned long long)n);
    return p;
}

/* A drawn range of the disk: 512-aligned or not, up to 4 clusters. */
static void qj_range(qj *s, uint64_t size, uint32_t cs, uint64_t *off, uint64_t *len)
{
    uint64_t most = 4 * (uint64_t)cs < (1u << 20) ? 4 * (uint64_t)cs : (1u << 20);
    *off = alksim_range(s->src, 0, size - 1);
    if (alksim_chance(s->src, 1, 2)) *off &= ~(uint64_t)511;
    *len = alksim_range(s->src, 1, most);
    if (*len > size - *off) *len = size - *off;
}

static int qj_zero(const unsigned char *p, uint64_t n)
{
    uint64_t i;
    for (i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static void qj_fill(unsigned char *p, uint64_t n, unsigned tag)
{
    uint64_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)(tag * 131u + i * 7u + (i >> 9));
}

/* n drawn writes into an open image: data, zeroes, discards (as allowed). */
static void qj_writes(qj *s, qh_handle *h, qh_disk *d, uint64_t size, uint32_t cs, unsigned n,
                      int unmap_ok)
{
    unsigned k;
    for (k = 0; k < n; k++) {
        uint64_t off, len;
        size_t kind = alksim_pick(s->src, 6);
        int rc;
        qj_range(s, size, cs, &off, &len);
        if (unmap_ok && kind == 0) {
            rc = qh_run(&h->img, d, q2w_write_zeroes(&h->img, off, len));
        } else if (unmap_ok && kind == 1) {
            rc = qh_run(&h->img, d, q2w_discard(&h->img, off, len));
        } else {
            qj_fill(s->scratch, len, (unsigned)alksim_range(s->src, 1, 250));
            rc = qh_run(&h->img, d, q2w_write(&h->img, off, s->scratch, (size_t)len));
        }
        ALK_CHECK(rc == Q2W_OK, "fixture write [%llu,+%llu): %s", (unsigned long long)off,
                  (unsigned long long)len, q2w_strerror(rc));
    }
}

/* Opens d (backing bytes `backing` of `blen`): the handle, its ops cap in d. */
static void qj_open(qh_handle *h, qh_disk *d, uint32_t cs, size_t slots, size_t ops_cap,
                    int writable, const unsigned char *backing, uint64_t blen, int has_backing)
{
    int rc;
    d->backing = backing;
    d->backing_len = blen;
    rc = qh_open(h, d, cs, slots, ops_cap, writable, has_backing);
    ALK_CHECK(rc == Q2W_OK, "open: %s (%s)", q2w_strerror(rc),
              q2w_error(&h->img)->what ? q2w_error(&h->img)->what : "");
}

static void qj_close(qh_handle *h, qh_disk *d)
{
    int rc = qh_run(&h->img, d, q2w_close(&h->img));
    ALK_CHECK(rc == Q2W_OK, "close: %s", q2w_strerror(rc));
    qh_close_handle(h);
}

/* A fresh read-only handle's view of d (or of its snapshot `snap`) into out;
 * the backing file reads as `backing` (blen bytes; 0: zeros). The disk's
 * op cap and backing are left as they were. Returns the backing name. */
static void qj_read(qj *s, qh_disk *d, uint32_t cs, const unsigned char *backing, uint64_t blen,
                    const char *snap, unsigned char *out, uint64_t len, char *name,
                    size_t name_cap)
{
    qh_handle h;
    size_t cap = d->ops_cap;
    const unsigned char *b = d->backing;
    uint64_t bl = d->backing_len;
    q2w_info info;
    q2w_snapshot sn;
    int rc;
    (void)s;
    qj_open(&h, d, cs, 8, 16, 0, backing, blen, 1);
    q2w_info_get(&h.img, &info);
    if (name) snprintf(name, name_cap, "%s", info.backing_name ? info.backing_name : "");
    if (snap) {
        rc = qh_run(&h.img, d, q2w_snapshot_find(&h.img, snap, &sn));
        ALK_CHECK(rc == Q2W_OK, "snapshot %s: %s", snap, q2w_strerror(rc));
        rc = qh_run(&h.img, d, q2w_read_snapshot(&h.img, &sn, 0, out, (size_t)len));
    } else {
        ALK_CHECK(info.size >= len, "the image is %llu bytes, %llu wanted",
                  (unsigned long long)info.size, (unsigned long long)len);
        rc = qh_run(&h.img, d, q2w_read(&h.img, 0, out, (size_t)len));
    }
    ALK_CHECK(rc == Q2W_OK, "read: %s", q2w_strerror(rc));
    qh_close_handle(&h);
    d->ops_cap = cap;
    d->backing = b;
    d->backing_len = bl;
}

static void qj_same(const unsigned char *got, const unsigned char *want, uint64_t len,
                    const char *what)
{
    uint64_t i;
    if (memcmp(got, want, (size_t)len) == 0) return;
    for (i = 0; i < len && got[i] == want[i]; i++) {}
    ALK_CHECK(0, "%s: byte %llu reads %02x, it was %02x", what, (unsigned long long)i, got[i],
              want[i]);
}

/* The base's view as it is on disk now, into out (bsize bytes at least;
 * zeros past the file of a raw base). */
static uint64_t qj_base_now(qj *s, unsigned char *out, uint64_t want)
{
    if (!s->base_qcow2) {
        uint64_t n = s->base.len < want ? s->base.len : want;
        memcpy(out, s->base.buf, (size_t)n);
        memset(out + n, 0, (size_t)(want - n));
        return s->base.len;
    }
    {
        unsigned char head[40];
        uint64_t vsize;
        qh_disk_read(&s->base, 0, head, sizeof head);
        vsize = q2w__be64(head + 24);
        if (vsize > want) vsize = want;
        memset(out, 0, (size_t)want);
        qj_read(s, &s->base, s->bcs, s->root.buf, s->root.len, NULL, out, vsize, NULL, 0);
        return vsize;
    }
}

/* The invariants that hold between any two batches. */
static void qj_views(qj *s, const char *when)
{
    uint64_t top_len = s->size;
    unsigned char *back = qj_alloc(s->size > s->bsize ? (s->size > s->nsize ? s->size : s->nsize)
                                                      : (s->bsize > s->nsize ? s->bsize : s->nsize));
    unsigned char *got = qj_alloc(top_len);
    char name[Q2W_MAX_BACKING_NAME + 1];
    uint64_t blen;
    alk_trace("views: %s", when);
    if (s->op == QJ_COMMIT || s->op == QJ_COMMIT_KEEP) {
        blen = qj_base_now(s, back, s->size > s->bsize ? s->size : s->bsize);
        qj_read(s, &s->top, s->cs, back, blen, NULL, got, top_len, name, sizeof name);
    } else {
        /* the header says which backing file the view goes through */
        qj_read(s, &s->top, s->cs, NULL, 0, NULL, got, 0, name, sizeof name);
        if (!strcmp(name, "base.img")) {
            memcpy(back, s->bv, (size_t)s->bsize);
            blen = s->bsize;
        } else if (!strcmp(name, s->new_name) && s->op == QJ_UNSAFE) {
            /* only the name changed: the overlay's own clusters as they were */
            qj_read(s, &s->top, s->cs, NULL, 0, NULL, got, top_len, NULL, 0);
            qj_same(got, s->t0, top_len, "the overlay's own clusters after rebase -u");
            memcpy(got, s->tv, (size_t)top_len);
            blen = 0;
        } else if (!strcmp(name, s->new_name)) {
            memcpy(back, s->nv, (size_t)s->nsize);
            blen = s->nsize;
        } else {
            ALK_CHECK(name[0] == 0, "%s: the overlay names '%s'", when, name);
            blen = 0;
        }
        if (s->op != QJ_UNSAFE || strcmp(name, s->new_name))
            qj_read(s, &s->top, s->cs, back, blen, NULL, got, top_len, NULL, 0);
    }
    qj_same(got, s->tv, top_len, "the overlay's view");
    if (s->top_snap) {
        qj_read(s, &s->top, s->cs, NULL, 0, "ts", got, top_len, NULL, 0);
        qj_same(got, s->ts0, top_len, "the overlay's snapshot's own clusters");
    }
    if (s->base_snap) {
        unsigned char *b = qj_alloc(s->bsize);
        qj_read(s, &s->base, s->bcs, s->root.buf, s->root.len, "bs", b, s->bsize, NULL, 0);
        qj_same(b, s->bs, s->bsize, "the base's snapshot");
        alk_free(b);
    }
    alk_free(back);
    alk_free(got);
}

static void qj_no_corruption(qh_disk *d, int exact, const char *when)
{
    q2w_check_result r;
    int rc = qh_check(d, 0, &r);
    ALK_CHECK(rc == Q2W_OK, "%s: check: %s", when, q2w_strerror(rc));
    if (r.corruptions || (exact && r.leaks)) qh_print_findings(&r);
    ALK_CHECK(r.corruptions == 0, "%s: %llu corruptions", when,
              (unsigned long long)r.corruptions);
    ALK_CHECK(!exact || r.leaks == 0, "%s: %llu leaks", when, (unsigned long long)r.leaks);
}

/* The overlay's map, one kind a cluster, into kinds (backing bytes blen). */
static void qj_kinds(qj *s, const unsigned char *backing, uint64_t blen, unsigned char *kinds)
{
    qh_handle h;
    size_t cap = s->top.ops_cap;
    uint64_t off = 0;
    qj_open(&h, &s->top, s->cs, 8, 16, 0, backing, blen, 1);
    while (off < s->size) {
        q2w_extent x;
        uint64_t c;
        int rc = qh_run(&h.img, &s->top, q2w_map(&h.img, off, s->size - off, &x));
        ALK_CHECK(rc == Q2W_OK && x.len > 0, "map at %llu: %s", (unsigned long long)off,
                  q2w_strerror(rc));
        for (c = off / s->cs; c * s->cs < off + x.len; c++) kinds[c] = (unsigned char)x.kind;
        off += x.len;
    }
    qh_close_handle(&h);
    s->top.ops_cap = cap;
}

/* ---- the fixture ------------------------------------------------------------ */
/* A feature-name table extension put first in the overlay's header (the
 * rest of cluster 0 moved up): a rebase must keep it, bytes and place. */
static void qj_add_ext(qj *s)
{
    unsigned char *p = s->top.buf;
    uint32_t hl = s->header_length;
    uint64_t name_off = q2w__be64(p + 8);
    uint32_t name_len = q2w__be32(p + 16);
    size_t end = (size_t)(name_off + name_len);
    memset(s->ext, 0, sizeof s->ext);
    s->ext[0] = 0x68; s->ext[1] = 0x03; s->ext[2] = 0xf8; s->ext[3] = 0x57;
    s->ext[7] = 48;                           /* one entry of 48 bytes */
    s->ext[8] = 1;                            /* compatible feature bit 0 */
    memcpy(s->ext + 10, "lazy refcounts", 14);
    if (end + sizeof s->ext > s->cs) return;  /* no room: none */
    memmove(p + hl + sizeof s->ext, p + hl, end - hl);
    memcpy(p + hl, s->ext, sizeof s->ext);
    {
        uint64_t v = name_off + sizeof s->ext;
        int k;
        for (k = 7; k >= 0; k--, v >>= 8) p[8 + k] = (unsigned char)v;
    }
    s->has_ext = 1;
    alk_trace("a feature-table extension first in the overlay's header");
}

/* The name a rebase writes: "new.img", or (a quarter of the time) padded
 * to a drawn length - where it does not fit in cluster 0 the switch is
 * refused with Q2W_ERR_LIMIT. */
static void qj_name(qj *s)
{
    size_t n = 7, fmt, need;
    memcpy(s->new_name, "new.img", 8);
    if (alksim_chance(s->src, 1, 4)) {
        n = (size_t)alksim_range(s->src, 8, Q2W_MAX_BACKING_NAME);
        memset(s->new_name + 7, 'x', n - 7);
        s->new_name[n] = 0;
    }
    /* what the switch writes: the other extensions, the format extension
     * (a rebase -u here names no format), the end marker, the name */
    fmt = s->op == QJ_UNSAFE ? 0 : 8 + 8;
    need = s->header_length + (s->has_ext ? sizeof s->ext : 0) + fmt + 8 + n;
    s->name_fits = need <= s->cs;
    alk_trace("new name of %zu bytes: %s", n, s->name_fits ? "fits" : "does not fit");
}

static void qj_setup(qj *s)
{
    static const uint32_t cs_choice[] = {512, 4096, 65536, 2u << 20};
    static const uint32_t cs_w[] = {3, 3, 2, 1};
    qh_handle h;
    uint64_t k;
    s->op = (int)alksim_pick(s->src, QJ_OPS);
    s->version = alksim_chance(s->src, 1, 3) ? 2 : 3;
    s->cs = cs_choice[alksim_weighted(s->src, cs_w, 4)];
    s->bcs = cs_choice[alksim_weighted(s->src, cs_w, 4)];
    s->base_qcow2 = alksim_chance(s->src, 2, 3);
    s->nested = s->base_qcow2 && alksim_chance(s->src, 1, 4);
    s->base_snap = s->base_qcow2 && alksim_chance(s->src, 1, 3);
    s->top_snap = alksim_chance(s->src, 1, 2);
    s->new_qcow2 = alksim_chance(s->src, 1, 2);
    s->bsize = alksim_range(s->src, 1, 48) * 32768 + alksim_range(s->src, 0, 1) * 512;
    s->size = alksim_chance(s->src, 1, 4) ? s->bsize
                                          : alksim_range(s->src, 1, 48) * 32768 +
                                                alksim_range(s->src, 0, 1) * 512;
    s->nsize = alksim_chance(s->src, 1, 3) ? s->bsize : alksim_range(s->src, 1, 48) * 32768;
    s->slots = (size_t)alksim_range(s->src, 8, 16);
    s->ops_cap = (size_t)alksim_range(s->src, 8, 64);
    s->buf_len = (size_t)alksim_range(s->src, 2, s->cs >= (1u << 20) ? 3 : 16) * s->cs +
                 (size_t)alksim_range(s->src, 0, 1) * 511;
    s->stride = 1u << (2 * alksim_pick(s->src, 3));
    alk_trace("op %s v%d cluster %u size %llu; base %s cluster %u size %llu%s%s; overlay "
              "snapshot %d; new %s size %llu; slots %zu ops %zu buffer %zu stride %u",
              qj_op_names[s->op], s->version, s->cs, (unsigned long long)s->size,
              s->base_qcow2 ? "qcow2" : "raw", s->bcs, (unsigned long long)s->bsize,
              s->nested ? " nested" : "", s->base_snap ? " snapshot" : "", s->top_snap,
              s->new_qcow2 ? "qcow2" : "raw", (unsigned long long)s->nsize, s->slots,
              s->ops_cap, s->buf_len, s->stride);
    s->scratch = qj_alloc(1u << 20);
    s->bv = qj_alloc(s->bsize);
    /* the root of a nested chain: raw, drawn runs */
    qh_disk_init(&s->root, QJ_DISK_CAP);
    if (s->nested) {
        qh_disk_reserve(&s->root, (size_t)s->bsize);
        memset(s->root.buf, 0, (size_t)s->bsize);
        s->root.len = (size_t)s->bsize;
        for (k = alksim_range(s->src, 0, 6); k > 0; k--) {
            uint64_t off, len;
            qj_range(s, s->bsize, s->bcs, &off, &len);
            qj_fill(s->root.buf + off, len, (unsigned)k + 17);
        }
    }
    /* the base */
    if (s->base_qcow2) {
        ALK_CHECK(qh_make(&s->base, QJ_DISK_CAP, s->version, s->bcs, 0, s->bsize,
                          s->nested ? "root.raw" : NULL, s->nested ? "raw" : NULL) == Q2W_OK,
                  "create the base");
        qj_open(&h, &s->base, s->bcs, s->slots, s->ops_cap, 1, s->root.buf, s->root.len,
                s->nested);
        qj_writes(s, &h, &s->base, s->bsize, s->bcs, (unsigned)alksim_range(s->src, 0, 8), 1);
        if (s->base_snap) {
            ALK_CHECK(qh_run(&h.img, &s->base, q2w_snapshot_create(&h.img, "bs", 1, 0, 0)) ==
                          Q2W_OK,
                      "the base's snapshot");
            qj_writes(s, &h, &s->base, s->bsize, s->bcs, (unsigned)alksim_range(s->src, 0, 6),
                      1);
        }
        qj_close(&h, &s->base);
        s->base.ops_cap = s->ops_cap;
        qj_base_now(s, s->bv, s->bsize);
        if (s->base_snap) {
            s->bs = qj_alloc(s->bsize);
            qj_read(s, &s->base, s->bcs, s->root.buf, s->root.len, "bs", s->bs, s->bsize, NULL,
                    0);
        }
    } else {
        qh_disk_init(&s->base, QJ_DISK_CAP);
        qh_disk_reserve(&s->base, (size_t)s->bsize);
        memset(s->base.buf, 0, (size_t)s->bsize);
        s->base.len = (size_t)s->bsize;
        s->base.ops_cap = 64;
        for (k = alksim_range(s->src, 0, 8); k > 0; k--) {
            uint64_t off, len;
            qj_range(s, s->bsize, s->bcs, &off, &len);
            qj_fill(s->base.buf + off, len, (unsigned)k + 40);
        }
        memcpy(s->bv, s->base.buf, (size_t)s->bsize);
    }
    /* the overlay */
    ALK_CHECK(qh_make(&s->top, QJ_DISK_CAP, s->version, s->cs, 0, s->size, "base.img",
                      s->base_qcow2 ? "qcow2" : "raw") == Q2W_OK,
              "create the overlay");
    s->header_length = s->version == 3 ? q2w__be32(s->top.buf + 100) : 72;
    if (alksim_chance(s->src, 1, 2)) qj_add_ext(s);
    qj_name(s);
    qj_open(&h, &s->top, s->cs, s->slots, s->ops_cap, 1, s->bv, s->bsize, 1);
    qj_writes(s, &h, &s->top, s->size, s->cs, (unsigned)alksim_range(s->src, 0, 10), 1);
    if (s->top_snap) {
        ALK_CHECK(qh_run(&h.img, &s->top, q2w_snapshot_create(&h.img, "ts", 1, 0, 0)) == Q2W_OK,
                  "the overlay's snapshot");
        /* writes over what it shares: data, or one cluster under a shared table */
        qj_writes(s, &h, &s->top, s->size, s->cs, (unsigned)alksim_range(s->src, 0, 6), 1);
    }
    qj_close(&h, &s->top);
    s->top.ops_cap = s->ops_cap;
    s->tv = qj_alloc(s->size);
    s->t0 = qj_alloc(s->size);
    qj_read(s, &s->top, s->cs, s->bv, s->bsize, NULL, s->tv, s->size, NULL, 0);
    qj_read(s, &s->top, s->cs, NULL, 0, NULL, s->t0, s->size, NULL, 0);
    if (s->top_snap) {
        s->ts0 = qj_alloc(s->size);
        qj_read(s, &s->top, s->cs, NULL, 0, "ts", s->ts0, s->size, NULL, 0);
    }
    s->kinds = qj_alloc(s->size / s->cs + 1);
    qj_kinds(s, s->bv, s->bsize, s->kinds);
    /* the new backing file: the old view, ranges rewritten, another length */
    s->nv = qj_alloc(s->nsize);
    memset(s->nv, 0, (size_t)s->nsize);
    memcpy(s->nv, s->bv, (size_t)(s->nsize < s->bsize ? s->nsize : s->bsize));
    for (k = alksim_range(s->src, 0, 5); k > 0; k--) {
        uint64_t off, len;
        qj_range(s, s->nsize, s->bcs, &off, &len);
        if (alksim_chance(s->src, 1, 3)) memset(s->nv + off, 0, (size_t)len);
        else qj_fill(s->nv + off, len, (unsigned)k + 90);
    }
    if (s->new_qcow2) {
        ALK_CHECK(qh_make(&s->nb, QJ_DISK_CAP, 3, s->bcs, 0, s->nsize, NULL, NULL) == Q2W_OK,
                  "create the new backing file");
        qj_open(&h, &s->nb, s->bcs, s->slots, s->ops_cap, 1, NULL, 0, 0);
        for (k = 0; k < s->nsize; k += s->bcs) {
            uint64_t n = s->nsize - k < s->bcs ? s->nsize - k : s->bcs;
            if (qj_zero(s->nv + k, n)) continue;
            ALK_CHECK(qh_run(&h.img, &s->nb, q2w_write(&h.img, k, s->nv + k, (size_t)n)) ==
                          Q2W_OK,
                      "fill the new backing file");
        }
        qj_close(&h, &s->nb);
        s->nb.ops_cap = s->ops_cap;
    } else {
        qh_disk_init(&s->nb, QJ_DISK_CAP);
        qh_disk_reserve(&s->nb, (size_t)s->nsize);
        memcpy(s->nb.buf, s->nv, (size_t)s->nsize);
        s->nb.len = (size_t)s->nsize;
        s->nb.ops_cap = 64;
    }
}

/* ---- the job ------------------------------------------------------------------ */
typedef struct qj_run {
    qh_handle top, other, old;
    int other_open, old_open;
    q2w_job job;
    unsigned char *buf;
} qj_run;

/* Arguments every job refuses before it starts, the handle left as it was. */
static void qj_refusals(qj *s, qj_run *r)
{
    static q2w_image closed;
    size_t len = s->buf_len;
    int rc;
    memset(&closed, 0, sizeof closed);
    rc = q2w_commit(&r->job, &closed, Q2W_BACKING_RAW, NULL, 0, 0, r->buf, len);
    ALK_CHECK(rc == Q2W_ERR_ARG && !strcmp(q2w_job_error(&r->job)->what, "image not open"),
              "a job on a handle that is not open: %d", rc);
    ALK_CHECK(q2w_commit(&r->job, &r->top.img, Q2W_BACKING_NONE, NULL, 0, 0, r->buf, len) ==
                  Q2W_ERR_ARG,
              "a commit into nothing");
    ALK_CHECK(q2w_commit(&r->job, &r->top.img, Q2W_BACKING_QCOW2, NULL, 0, 0, r->buf, len) ==
                  Q2W_ERR_ARG,
              "a qcow2 base without its handle");
    ALK_CHECK(q2w_rebase(&r->job, &r->top.img, NULL, Q2W_BACKING_RAW, NULL, 0, NULL, NULL, r->buf,
                         len) == Q2W_ERR_ARG,
              "a rebase onto a file without a name");
    ALK_CHECK(q2w_rebase(&r->job, &r->top.img, NULL, Q2W_BACKING_RAW, NULL, 0, "n", "", r->buf, len) ==
                      Q2W_ERR_ARG &&
                  !strcmp(q2w_job_error(&r->job)->what, "backing_fmt"),
              "an empty format name");
    ALK_CHECK(q2w_set_backing(&r->top.img, NULL, "raw", 0) == Q2W_ERR_ARG,
              "a format without a name");
    ALK_CHECK(q2w_set_backing(&r->top.img, "", NULL, 0) == Q2W_ERR_ARG, "an empty name");
}

/* Handles for the job, and the job started. */
static int qj_start(qj *s, qj_run *r)
{
    int kind;
    r->buf = qj_alloc(s->buf_len);
    r->other_open = r->old_open = 0;
    qj_open(&r->top, &s->top, s->cs, s->slots, s->ops_cap, 1, s->bv, s->bsize, 1);
    {
        /* a job buffer one byte short of two clusters is refused, saying
         * what it needs, and the refused job has no batch */
        size_t n = 7;
        int rc = s->op == QJ_FLATTEN || s->op == QJ_REBASE
                     ? q2w_rebase(&r->job, &r->top.img, NULL, Q2W_BACKING_NONE, NULL, 0, NULL, NULL,
                                  r->buf, 2 * (size_t)s->cs - 1)
                     : q2w_commit(&r->job, &r->top.img, Q2W_BACKING_RAW, NULL, s->base.len, 0,
                                  r->buf, 2 * (size_t)s->cs - 1);
        ALK_CHECK(rc == Q2W_ERR_NOMEM && q2w_job_error(&r->job)->code == rc &&
                      q2w_job_error(&r->job)->needed == 2 * (uint64_t)s->cs,
                  "a short job buffer: %d, needed %llu", rc,
                  (unsigned long long)q2w_job_error(&r->job)->needed);
        ALK_CHECK(q2w_job_batch(&r->job, &n, NULL) == NULL && n == 0 &&
                      q2w_job_resume(&r->job, 0) == Q2W_ERR_NOMEM,
                  "a refused job has a batch or resumes");
        qj_refusals(s, r);
    }
    if (s->op == QJ_COMMIT || s->op == QJ_COMMIT_KEEP) {
        if (s->base_qcow2) {
            qj_open(&r->other, &s->base, s->bcs, s->slots, s->ops_cap, 1, s->root.buf,
                    s->root.len, s->nested);
            r->other_open = 1;
        }
        kind = s->base_qcow2 ? Q2W_BACKING_QCOW2 : Q2W_BACKING_RAW;
        return q2w_commit(&r->job, &r->top.img, kind, s->base_qcow2 ? &r->other.img : NULL,
                          s->base.len, s->op == QJ_COMMIT_KEEP ? Q2W_COMMIT_KEEP : 0, r->buf,
                          s->buf_len);
    }
    if (s->op == QJ_UNSAFE) return q2w_set_backing(&r->top.img, s->new_name, NULL, s->nsize);
    if (s->base_qcow2) {
        /* the old backing file's handle: what reads zeros in both is
         * skipped unread (its map; OLD batches) */
        qj_open(&r->old, &s->base, s->bcs, s->slots, s->ops_cap, 0, s->root.buf, s->root.len,
                s->nested);
        r->old_open = 1;
    }
    if (s->op == QJ_FLATTEN)
        return q2w_rebase(&r->job, &r->top.img, r->old_open ? &r->old.img : NULL,
                          Q2W_BACKING_NONE, NULL, 0, NULL, NULL, r->buf,
                          s->buf_len);
    if (s->new_qcow2) {
        qj_open(&r->other, &s->nb, s->bcs, s->slots, s->ops_cap, 0, NULL, 0, 0);
        r->other_open = 1;
    }
    return q2w_rebase(&r->job, &r->top.img, r->old_open ? &r->old.img : NULL,
                      s->new_qcow2 ? Q2W_BACKING_QCOW2 : Q2W_BACKING_RAW,
                      s->new_qcow2 ? &r->other.img : NULL, s->nsize, s->new_name,
                      s->new_qcow2 ? "qcow2" : "raw", r->buf, s->buf_len);
}

static void qj_end(qj_run *r)
{
    qh_close_handle(&r->top);
    if (r->other_open) qh_close_handle(&r->other);
    if (r->old_open) qh_close_handle(&r->old);
    alk_free(r->buf);
}

static void qj_exec_raw(qh_disk *d, const q2w_op *op, size_t n);

/* The power goes: every write since a file's last flush is lost (the
 * overlay: durable[0], the base: durable[1]). */
static void qj_power_loss(qj *s)
{
    qh_power_loss(&s->durable[0], &s->top);
    qh_power_loss(&s->durable[1], &s->base);
}

/* The job batch by batch, the invariants after each; fail_at: the batch
 * whose execution fails (0: none). The job's result. */
static int qj_drive(qj *s, qj_run *r, int rc, unsigned fail_at)
{
    unsigned n_batch = 0;
    uint64_t last_done = 0;
    while (rc == Q2W_PENDING) {
        size_t n;
        int file = -1;
        const q2w_op *op;
        qh_disk *d;
        if (s->op == QJ_UNSAFE) {
            op = q2w_batch(&r->top.img, &n);
            file = Q2W_JOB_TOP;
        } else {
            op = q2w_job_batch(&r->job, &n, &file);
        }
        ALK_CHECK(++n_batch < 1000000u, "the job does not end");
        ALK_CHECK(op && n > 0, "a pending job without a batch");
        d = file == Q2W_JOB_TOP ? &s->top
            : file == Q2W_JOB_OLD || s->op == QJ_COMMIT || s->op == QJ_COMMIT_KEEP ? &s->base
                                                                                   : &s->nb;
        ALK_CHECK(file != Q2W_JOB_OLD || r->old_open, "an OLD batch with no old handle");
        if (file == Q2W_JOB_TOP && (s->op == QJ_COMMIT || s->op == QJ_COMMIT_KEEP) &&
            !s->base_qcow2) {
            s->top.backing = s->base.buf;   /* the raw base as it is now */
            s->top.backing_len = s->base.len;
        }
        if (n_batch == fail_at) {
            alk_trace("batch %u fails", n_batch);
            rc = s->op == QJ_UNSAFE ? q2w_resume(&r->top.img, -5) : q2w_job_resume(&r->job, -5);
            break;
        }
        if (d != &s->nb && file != Q2W_JOB_OLD)
            qh_durable_batch(&s->durable[d == &s->top ? 0 : 1], d, op, n);
        if ((d == &s->base && !s->base_qcow2) || (d == &s->nb && !s->new_qcow2))
            qj_exec_raw(d, op, n);
        else
            ALK_CHECK(qh_exec(d, op, n) == 0, "execute");
        rc = s->op == QJ_UNSAFE ? q2w_resume(&r->top.img, 0) : q2w_job_resume(&r->job, 0);
        if (s->op != QJ_UNSAFE) {
            uint64_t done, total;
            q2w_job_progress(&r->job, &done, &total);
            ALK_CHECK(total == s->size && done >= last_done && done <= total &&
                          (rc != Q2W_OK || done == total),
                      "progress %llu of %llu after %llu", (unsigned long long)done,
                      (unsigned long long)total, (unsigned long long)last_done);
            last_done = done;
        }
        if (file != Q2W_JOB_OLD && (d == &s->top || (d == &s->base && s->base_qcow2)))
            qj_no_corruption(d, 0, "after a batch");
        if (n_batch % s->stride == 0) qj_views(s, "after a batch");
    }
    if (s->op != QJ_UNSAFE && rc != Q2W_OK)
        ALK_CHECK(q2w_job_error(&r->job)->code == rc, "the job's error says %d, it returned %d",
                  q2w_job_error(&r->job)->code, rc);
    return rc;
}

/* A raw file's batch (the job's own ops: one a batch): reads past the end
 * give zeros, writes extend the file, a flush follows a write. */
static void qj_exec_raw(qh_disk *d, const q2w_op *op, size_t n)
{
    ALK_CHECK(n == 1, "a raw file's batch of %zu ops", n);
    switch (op->kind) {
    case Q2W_OP_READ:
        ALK_CHECK(op->dst && op->len, "a raw read without buffer");
        qh_disk_read(d, op->off, op->dst, op->len);
        break;
    case Q2W_OP_WRITE:
        ALK_CHECK(op->len && op->off + op->len <= d->cap, "a raw write [%llu,+%zu)",
                  (unsigned long long)op->off, op->len);
        qh_disk_reserve(d, (size_t)(op->off + op->len));
        if (op->src) memcpy(d->buf + op->off, op->src, op->len);
        else memset(d->buf + op->off, 0, op->len);
        if (op->off + op->len > d->len) d->len = (size_t)(op->off + op->len);
        d->unflushed = 1;
        break;
    case Q2W_OP_FLUSH:
        ALK_CHECK(d->unflushed, "a raw flush with no write before it");
        d->unflushed = 0;
        break;
    default:
        ALK_CHECK(0, "op kind %d on a raw file", op->kind);
    }
}

/* QCOW2_JOBS_SAVE: the files after a power loss, for qemu-img check. */
static void qj_save_file(const char *dir, const char *name, const qh_disk *d)
{
    char p[4200];
    FILE *f;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    f = fopen(p, "wb");
    ALK_CHECK(f && fwrite(d->buf, 1, d->len, f) == d->len && fclose(f) == 0,
              "cannot save %s", p);
}

static void qj_save(const qj *s)
{
    static unsigned n;
    const char *root = getenv("QCOW2_JOBS_SAVE");
    char dir[4096];
    static const char *const tag[] = {"commit", "commit-d", "rebase", "flatten", "rebase-u"};
    if (!root || !*root) return;
    snprintf(dir, sizeof dir, "%s/run-%u-%s", root, n++, tag[s->op]);
    ALK_CHECK(mkdir(dir, 0755) == 0, "cannot make %s", dir);
    qj_save_file(dir, "top.qcow2", &s->top);
    qj_save_file(dir, "base.img", &s->base);
    if (s->nested) qj_save_file(dir, "root.raw", &s->root);
    qj_save_file(dir, "new.img", &s->nb);
}

/* ---- the judgment at the end ------------------------------------------------- */
static void qj_judge(qj *s, int exact)
{
    unsigned char *got = qj_alloc(s->size);
    char name[Q2W_MAX_BACKING_NAME + 1];
    qj_no_corruption(&s->top, exact, "the overlay at the end");
    if (s->base_qcow2) qj_no_corruption(&s->base, exact, "the base at the end");
    if (s->new_qcow2) qj_no_corruption(&s->nb, 1, "the new backing file at the end");
    qj_views(s, "at the end");
    if (s->has_ext)
        ALK_CHECK(memcmp(s->top.buf + s->header_length, s->ext, sizeof s->ext) == 0,
                  "the overlay's feature-table extension moved or changed");
    if (s->op == QJ_COMMIT || s->op == QJ_COMMIT_KEEP) {
        uint64_t big = s->size > s->bsize ? s->size : s->bsize, len;
        unsigned char *b = qj_alloc(big);
        len = qj_base_now(s, b, big);
        ALK_CHECK(len >= s->size, "the base is %llu bytes, the overlay %llu",
                  (unsigned long long)len, (unsigned long long)s->size);
        qj_same(b, s->tv, s->size, "the base after the commit");
        if (s->bsize > s->size)
            qj_same(b + s->size, s->bv + s->size, s->bsize - s->size,
                    "the base past the overlay's end");
        if (s->op == QJ_COMMIT) {
            /* emptied: one backing extent */
            unsigned char *k = qj_alloc(s->size / s->cs + 1);
            uint64_t c;
            qj_kinds(s, b, len, k);
            for (c = 0; c * s->cs < s->size; c++)
                ALK_CHECK(k[c] == Q2W_EXTENT_BACKING, "cluster %llu of the emptied overlay: "
                          "kind %d", (unsigned long long)c, k[c]);
            alk_free(k);
        } else {
            qj_read(s, &s->top, s->cs, NULL, 0, NULL, got, s->size, NULL, 0);
            qj_same(got, s->t0, s->size, "the kept overlay's own clusters");
        }
        alk_free(b);
    } else {
        int limited = !s->name_fits && s->op != QJ_FLATTEN;
        qj_read(s, &s->top, s->cs, NULL, 0, NULL, got, 0, name, sizeof name);
        ALK_CHECK(!strcmp(name, limited ? "base.img" : s->op == QJ_FLATTEN ? "" : s->new_name),
                  "the overlay names '%.40s'", name);
        if (limited) {
            /* nothing more to judge: the views were, through the old name */
        } else if (s->op == QJ_UNSAFE) {
            qj_read(s, &s->top, s->cs, NULL, 0, NULL, got, s->size, NULL, 0);
            qj_same(got, s->t0, s->size, "the overlay's own clusters after rebase -u");
        } else if (s->op == QJ_REBASE) {
            /* no needless copy: held nowhere before and equal in both files */
            unsigned char *k = qj_alloc(s->size / s->cs + 1);
            uint64_t c;
            qj_kinds(s, s->nv, s->nsize, k);
            for (c = 0; c * s->cs < s->size; c++) {
                uint64_t a = c * s->cs, e = a + s->cs < s->size ? a + s->cs : s->size;
                if (s->kinds[c] != Q2W_EXTENT_BACKING || e > s->bsize || e > s->nsize ||
                    memcmp(s->bv + a, s->nv + a, (size_t)(e - a)) != 0)
                    continue;
                ALK_CHECK(k[c] == Q2W_EXTENT_BACKING,
                          "cluster %llu: the same in both backing files, yet copied (kind %d)",
                          (unsigned long long)c, k[c]);
            }
            alk_free(k);
        }
    }
    alk_free(got);
}

static void qj_free(qj *s)
{
    qh_disk_free(&s->root);
    qh_disk_free(&s->base);
    qh_disk_free(&s->top);
    qh_disk_free(&s->nb);
    alk_free(s->bv);
    alk_free(s->tv);
    alk_free(s->t0);
    alk_free(s->ts0);
    alk_free(s->bs);
    alk_free(s->nv);
    alk_free(s->kinds);
    alk_free(s->scratch);
    alk_free(s->durable[0].buf);
    alk_free(s->durable[1].buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    alksim_source src;
    qj s;
    qj_run r;
    unsigned fail_at = 0;
    int rc, exact = 1;
    alk_trace_reset();
    alksim_source_init_bytes(&src, data, size);
    memset(&s, 0, sizeof s);
    s.src = &src;
    qj_setup(&s);
    if (alksim_chance(&src, 1, 3) || getenv("QCOW2_JOBS_CRASH"))
        fail_at = (unsigned)alksim_range(&src, 1, 40);
    qh_durable_set(&s.durable[0], s.top.buf, s.top.len);
    qh_durable_set(&s.durable[1], s.base.buf, s.base.len);
    rc = qj_drive(&s, &r, qj_start(&s, &r), fail_at);
    if (rc == Q2W_ERR_IO) {
        /* a batch failed, and then the power went: the files as of their
         * last flushes hold the invariants; the job runs again */
        ALK_CHECK(fail_at != 0, "an i/o error no batch had");
        qj_end(&r);
        qj_power_loss(&s);
        qj_save(&s);
        qj_no_corruption(&s.top, 0, "after the failed batch");
        if (s.base_qcow2) qj_no_corruption(&s.base, 0, "the base after the failed batch");
        qj_views(&s, "after the failed batch");
        exact = 0;
        rc = qj_drive(&s, &r, qj_start(&s, &r), 0);
    }
    if (!s.name_fits && (s.op == QJ_REBASE || s.op == QJ_UNSAFE)) {
        /* the name does not fit: refused at the switch, the header as it was */
        ALK_CHECK(rc == Q2W_ERR_LIMIT, "a name that does not fit: %s", q2w_strerror(rc));
        rc = Q2W_OK;
    }
    ALK_CHECK(rc == Q2W_OK, "%s: %s (%s)", qj_op_names[s.op], q2w_strerror(rc),
              s.op == QJ_UNSAFE ? (q2w_error(&r.top.img)->what ? q2w_error(&r.top.img)->what : "")
              : q2w_job_error(&r.job)->what ? q2w_job_error(&r.job)->what : "");
    qj_close(&r.top, &s.top);
    if (r.other_open) qj_close(&r.other, (s.op == QJ_COMMIT || s.op == QJ_COMMIT_KEEP) ? &s.base
                                                                                    : &s.nb);
    if (r.old_open) qj_close(&r.old, &s.base);
    alk_free(r.buf);
    qj_judge(&s, exact);
    qj_free(&s);
    return 0;
}

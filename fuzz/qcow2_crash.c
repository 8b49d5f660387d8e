/* qcow2_crash.c - fuzz target `qcow2_crash`: qcow2w.h's crash consistency
 * on alksim's disk model (sectors, a volatile write cache, flush, power
 * loss that drops, tears and reorders what was not flushed).
 *
 * The input's control bytes (alksim byte source) choose a fixture - clean,
 * pre-written data, data shared with one or two snapshots, a backing file,
 * compressed clusters as qemu-img convert -c lays them out (deflate
 * streams packed at byte offsets, neighbours sharing host clusters, each
 * descriptor one reference to every cluster it touches; a snapshot of them
 * half the time), a persistent bitmap (directory, table, data cluster;
 * autoclear bit 0 set, so it is live until the first change clears it) -
 * on a v2 or v3 image with 512 B, 4 KiB or 64 KiB clusters and a refcount
 * width; a small op buffer and cache; a sequence of write / write_zeroes /
 * discard / flush / grow / snapshot create / snapshot delete / snapshot apply
 * / amend to the other version / a compressed cluster written (large writes
 * with small clusters make the refcount blocks grow; a data or snapshot
 * fixture with 64-bit refcounts in 512 B clusters is filled to just short
 * of the 2 MiB of file one refcount-table cluster covers, and its first
 * write crosses it: the table grows); and either a power loss after a
 * chosen number of executed batches (mid-operation as often as not) or an
 * I/O error on the n-th read, write or flush.
 *
 * Ordering audit (every run, every op stream): at each flush the planner
 * issues, and at the power loss, the disk as of the previous flush, that
 * disk plus each single write since (the sectors it touched, as right
 * after it), and that disk plus all of them are each judged like a crashed
 * image (checker, then every sector of the active view). A dependency
 * broken inside one flush interval - an L2 entry before its refcount, a
 * refcount drop before the reference is gone, a header switch before its
 * tables, an L1 entry before its L2 table - fails here whether or not the
 * run's own power loss happens to land on it.
 *
 * Error mode: the operation that meets the error returns Q2W_ERR_IO, every
 * later call on the handle returns Q2W_ERR_FAILED (nothing succeeds on top
 * of a lost write), and then the power goes too.
 *
 * After the power loss (the cache resolved as the bytes decide):
 *   - the checker finds no corruption (leaks allowed), and after
 *     q2w_repair_leaks neither corruption nor leak;
 *   - the image opens; its size is one the disk had since the last
 *     completed flush; every 512-byte sector of the active view holds what
 *     it held at the last completed q2w_flush or what one of the later
 *     operations (the interrupted one included) left there - hashes of
 *     each version are kept, so never garbage and never another range's
 *     bytes;
 *   - every snapshot whose create completed (and whose delete did not
 *     start) is there; every snapshot there is one that was created (an
 *     interrupted create may or may not have landed) and reads back
 *     byte-identical to the disk at its creation;
 *   - the image accepts a write and a close, and is then exact (no leak).
 */
#define _POSIX_C_SOURCE 200809L /* the harness's POSIX mirror: mkstemp, pread */
#include "qcow2w.h"
#include "alksim.h"
#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CR_MAX_OPS 16
#define CR_MAX_SNAPS 3
#define CR_SECTOR 512u
#define CR_DISK_BYTES(cs) ((cs) == (2u << 20) ? (128u << 20)                 \
                           : (cs) == 65536   ? (40u << 20)                  \
                                             : (24u << 20))
#define CR_PENDING 1024u         /* cached sectors before write-back */
#define CR_CRASHED 100           /* cr_run: the power went mid-operation */

enum {
    CR_CLEAN, CR_DATA, CR_SNAP, CR_BACKING, CR_COMPRESSED, CR_BITMAPS,
    CR_FIXTURES
};
#define CR_BITMAP_CLUSTERS 3u   /* directory, table, one data cluster */

typedef struct cr_version {
    uint64_t sector, hash;
} cr_version;

/* One write since the planner's last flush (the ordering audit's). */
typedef struct cr_write {
    uint64_t off, len;
    size_t at;                   /* its bytes in cr.wbuf; CR_ZEROS: zeros */
} cr_write;
#define CR_ZEROS ((size_t)-1)

typedef struct cr {
    alksim_source src;
    alksim_disk disk;
    void *disk_mem;
    uint64_t disk_bytes, file_len;
    qh_disk fix;                 /* fixture, then the crashed image */
    qh_handle h;
    uint32_t cs;
    int version, fixture, has_backing;
    uint64_t size, max_size, acked_size;
    uint64_t size_hi;            /* the largest size the header may say */
    unsigned char *model, *backing;
    uint64_t backing_len;
    uint64_t *acked;             /* per sector: hash at the last flush */
    cr_version *ver;             /* later versions, any order */
    size_t n_ver, cap_ver;
    qh_snaps snaps;              /* fixture's, then CR_MAX_SNAPS creates */
    unsigned serial;
    /* the power-loss point, or the injected error */
    uint64_t crash_at, batches;
    int err_kind;                /* -1: none; else alksim_disk_op */
    int io_failed;
    /* where the power went: the operation and the batch within it */
    const char *op_name;
    uint64_t op_batch0;
    uint64_t rb0;                /* refcount blocks of the fixture */
    uint64_t fill_end;           /* near-full fixture: the unfilled part */
    uint64_t grow_crash, grow_seen; /* power loss at the n-th batch of a
                                       refcount-table growth (0: off) */
    /* the ordering audit: the disk as of the planner's last completed
     * flush, and every write since */
    qh_disk aud, prog;
    cr_write *w;
    size_t n_w, cap_w;
    unsigned char *wbuf, *undo, *base, *view;
    size_t wbuf_len, wbuf_cap, undo_cap;
    uint64_t audited;            /* crash states the audit judged */
} cr;

/* A sector's fingerprint (n a multiple of 8): a word at a time, each
 * multiplied in and folded, so any changed word changes it. */
static uint64_t cr_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull, w;
    size_t i;
    for (i = 0; i < n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x9e3779b97f4a7c15ull;
        h ^= h >> 29;
    }
    return h;
}

/* Sector k of the model (zero-padded past the virtual size). */
static uint64_t cr_sector_hash(const unsigned char *model, uint64_t size,
                               uint64_t k)
{
    unsigned char b[CR_SECTOR];
    uint64_t off = k * CR_SECTOR;
    size_t have = off < size ? (size_t)(size - off < CR_SECTOR ? size - off
                                                               : CR_SECTOR)
                             : 0;
    memset(b, 0, sizeof b);
    if (have) memcpy(b, model + off, have);
    return cr_hash(b, sizeof b);
}

/* Room for `need` elements of `size` bytes in `arr` (of *cap): the array,
 * moved if it had to grow. */
static void *cr_reserve(void *arr, size_t *cap, size_t need, size_t size)
{
    size_t n = *cap ? *cap : 256;
    if (need <= *cap) return arr;
    while (n < need) n *= 2;
    arr = alk_realloc(arr, n * size);
    ALK_CHECK(arr != NULL, "out of memory for %zu x %zu bytes", n, size);
    *cap = n;
    return arr;
}

/* The model after an operation that changed [off, off+len): each sector
 * it touched may now hold its new content. */
static void cr_note(cr *s, uint64_t off, uint64_t len)
{
    uint64_t k;
    if (!len) return;
    for (k = off / CR_SECTOR; k <= (off + len - 1) / CR_SECTOR; k++) {
        s->ver = (cr_version *)cr_reserve(s->ver, &s->cap_ver, s->n_ver + 1,
                                          sizeof *s->ver);
        s->ver[s->n_ver].sector = k;
        s->ver[s->n_ver].hash = cr_sector_hash(s->model, s->size, k);
        s->n_ver++;
    }
}

/* A completed flush: the model is what the disk must keep. */
static void cr_ack(cr *s)
{
    uint64_t k;
    for (k = 0; k < s->max_size / CR_SECTOR; k++)
        s->acked[k] = cr_sector_hash(s->model, s->size, k);
    s->acked_size = s->size;
    s->n_ver = 0;
}

/* ---- the executor: planned ops onto the simulated disk -------------------- */
static void cr_record(cr *s, const q2w_op *o);
static void cr_audit(cr *s, int final);

static int cr_exec(cr *s, const q2w_op *op, size_t n)
{
    static const unsigned char zeros[65536] = {0};
    size_t i;
    qh_op_contract(op, n, s->fix.ops_cap, s->cs, s->disk_bytes,
                   s->has_backing ? s->backing_len : 0);
    for (i = 0; i < n; i++) {
        const q2w_op *o = &op[i];
        int rc = ALKSIM_OK;
        switch (o->kind) {
        case Q2W_OP_READ: {
            size_t in = o->off < s->disk_bytes
                            ? (size_t)(s->disk_bytes - o->off < o->len
                                           ? s->disk_bytes - o->off : o->len)
                            : 0;
            if (in) rc = alksim_disk_read(&s->disk, o->off, o->dst, in);
            memset(o->dst + in, 0, o->len - in);
            break;
        }
        case Q2W_OP_WRITE:
            if (o->src) {
                rc = alksim_disk_write(&s->disk, o->off, o->src, o->len);
            } else {
                uint64_t done = 0;
                while (rc == ALKSIM_OK && done < o->len) {
                    /* one op is one write request: pieces end on sector
                     * boundaries, so no sector gets two versions from it */
                    size_t edge = sizeof zeros -
                                  (size_t)((o->off + done) % sizeof zeros);
                    size_t m = o->len - done < edge ? (size_t)(o->len - done)
                                                    : edge;
                    rc = alksim_disk_write(&s->disk, o->off + done, zeros, m);
                    done += m;
                }
            }
            if (rc == ALKSIM_OK && o->off + o->len > s->file_len)
                s->file_len = o->off + o->len;
            if (rc == ALKSIM_OK) cr_record(s, o);
            break;
        case Q2W_OP_FLUSH:
            rc = alksim_disk_flush(&s->disk);
            if (rc == ALKSIM_OK) cr_audit(s, 0);
            break;
        default: { /* Q2W_OP_BACKING_READ */
            size_t j;
            for (j = 0; j < o->len; j++)
                o->dst[j] = o->off + j < s->backing_len ? s->backing[o->off + j]
                                                        : 0;
            break;
        }
        }
        if (rc != ALKSIM_OK) {
            ALK_CHECK(rc == ALKSIM_ERR_IO, "disk: %d", rc);
            s->io_failed = 1;
            return -5; /* EIO; the rest of the batch does not run */
        }
    }
    return 0;
}

/* The resume loop on the simulated disk; the power goes before batch
 * number crash_at. */
static int cr_run(cr *s, int rc)
{
    unsigned long rounds = 0;
    int xr;
    while (rc == Q2W_PENDING) {
        size_t n;
        const q2w_op *op;
        if (s->grow_crash && s->h.img.opened &&
            s->h.img.sub == Q2W__SUB_GROW_RT &&
            ++s->grow_seen == s->grow_crash)
            s->crash_at = s->batches;
        if (s->err_kind < 0 && s->batches == s->crash_at) {
            alk_trace("power lost in %s, batch %llu of it", s->op_name,
                      (unsigned long long)(s->batches - s->op_batch0));
            return CR_CRASHED;
        }
        s->batches++;
        op = q2w_batch(&s->h.img, &n);
        ALK_CHECK(++rounds < QH_RESUME_CAP, "resume loop did not end");
        xr = cr_exec(s, op, n);
        /* (a batch cut short by an error leaves planned writes unrun) */
        if (xr == 0) qh_file_end_contract(&s->h.img, s->file_len, "after a batch");
        rc = q2w_resume(&s->h.img, xr);
    }
    if (rc == Q2W_OK && !s->io_failed)
        qh_file_end_contract(&s->h.img, s->file_len, "after the operation");
    return rc;
}

/* ---- fixture --------------------------------------------------------------- */
static void cr_fill(unsigned char *buf, uint64_t len, unsigned tag)
{
    uint64_t i;
    for (i = 0; i < len; i++) buf[i] = (unsigned char)(tag * 37u + i * 13u + 1u);
}

/* A deflate writer for the compressed fixture: fixed Huffman codes (RFC
 * 1951 3.2.6), literals and distance-1 matches - enough for run-length
 * content, and a stream the inflater must decode like any other. */
typedef struct cr_bits {
    unsigned char *out;
    size_t n, cap;
    uint32_t acc;
    unsigned nacc;
} cr_bits;

static void cr_put(cr_bits *w, uint32_t v, unsigned nbits)
{
    w->acc |= v << w->nacc;
    w->nacc += nbits;
    while (w->nacc >= 8) {
        ALK_CHECK(w->n < w->cap, "deflate fixture overflow");
        w->out[w->n++] = (unsigned char)w->acc;
        w->acc >>= 8;
        w->nacc -= 8;
    }
}

/* Huffman codes go most significant bit first. */
static void cr_code(cr_bits *w, uint32_t code, unsigned len)
{
    uint32_t r = 0;
    unsigned i;
    for (i = 0; i < len; i++) r |= ((code >> i) & 1u) << (len - 1 - i);
    cr_put(w, r, len);
}

static void cr_sym(cr_bits *w, unsigned v)
{
    if (v < 144) cr_code(w, 0x30 + v, 8);
    else if (v < 256) cr_code(w, 0x190 + v - 144, 9);
    else if (v < 280) cr_code(w, v - 256, 7);
    else cr_code(w, 0xc0 + v - 280, 8);
}

/* Runs of bytes (16..215 long, from `tag`) filling one cluster, and its
 * deflate stream; returns the stream's length. */
static size_t cr_deflate_runs(unsigned char *content, uint64_t cs,
                              unsigned tag, unsigned char *out, size_t cap)
{
    cr_bits w;
    uint64_t at = 0;
    unsigned k = 0;
    memset(&w, 0, sizeof w);
    w.out = out;
    w.cap = cap;
    cr_put(&w, 1, 1);          /* final block */
    cr_put(&w, 1, 2);          /* fixed codes */
    while (at < cs) {
        uint64_t run = 16 + (tag * 7u + k * 13u) % 200u, left;
        unsigned char b = (unsigned char)(tag * 31u + k * 17u + 5u);
        if (run > cs - at) run = cs - at;
        memset(content + at, b, (size_t)run);
        cr_sym(&w, b);
        for (left = run - 1; left > 0;) {
            uint64_t m = left >= 258 ? 258 : left > 10 ? 10 : left;
            if (m < 3) {
                cr_sym(&w, b);
                left--;
                continue;
            }
            cr_sym(&w, m == 258 ? 285u : (unsigned)(254 + m));
            cr_code(&w, 0, 5);  /* distance 1 */
            left -= m;
        }
        at += run;
        k++;
    }
    cr_sym(&w, 256);
    if (w.nacc) cr_put(&w, 0, 8 - w.nacc);
    return w.n;
}

/* The L2 entry of virtual cluster vc in a closed fixture (a table must
 * exist); *where gets its file offset. */
static uint64_t cr_l2e(cr *s, uint64_t vc, uint64_t *where)
{
    qh_disk *d = &s->fix;
    uint64_t per = s->cs / 8;
    uint64_t l1 = q2w__be64(d->buf + 40);
    uint64_t l2 = q2w__be64(d->buf + l1 + (vc / per) * 8) & Q2W__OFF_MASK;
    ALK_CHECK(l2 != 0, "fixture: no L2 table for cluster %llu",
              (unsigned long long)vc);
    *where = l2 + (vc % per) * 8;
    return q2w__be64(d->buf + *where);
}

/* The refcount of host cluster c in a closed fixture, set to v. */
static void cr_set_refcount(cr *s, uint64_t c, uint64_t v)
{
    qh_disk *d = &s->fix;
    uint32_t order = s->version == 3 ? q2w__be32(d->buf + 96) : 4;
    uint64_t epb = (s->cs * 8) >> order;
    uint64_t rt = q2w__be64(d->buf + 48);
    uint64_t blk = q2w__be64(d->buf + rt + (c / epb) * 8) & ~0x1ffull;
    ALK_CHECK(blk != 0, "fixture: cluster %llu has no refcount block",
              (unsigned long long)c);
    q2w__rc_set(d->buf + blk, c % epb, order, v);
}

/* m clusters of data written through qcow2w at virtual clusters
 * [*vc0, *vc0 + m) inside one L2 table and inside the disk: their host
 * clusters become the fixture's own store. Returns m (fewer when the disk
 * is small). */
static unsigned cr_claim(cr *s, unsigned m, uint64_t *vc0, uint64_t *host)
{
    uint64_t nv = s->size / s->cs, per = s->cs / 8, where, i;
    unsigned char *buf;
    qh_handle h;
    int rc;
    if (nv == 0) return 0;
    if (m > nv) m = (unsigned)nv;
    *vc0 = alksim_range(&s->src, 0, nv - m);
    /* across an L2 table's end: the last m clusters of the first table
     * (m <= 8 < per, and the next table's start is inside the disk) */
    if (*vc0 / per != (*vc0 + m - 1) / per) *vc0 = (*vc0 / per + 1) * per - m;
    buf = (unsigned char *)alk_malloc((size_t)(m * s->cs));
    ALK_CHECK(buf != NULL, "out of memory");
    cr_fill(buf, m * s->cs, 77);
    rc = qh_open(&h, &s->fix, s->cs, 8, 16, 1, 0);
    ALK_CHECK(rc == Q2W_OK, "fixture open: %s", q2w_strerror(rc));
    rc = qh_run(&h.img, &s->fix, q2w_write(&h.img, *vc0 * s->cs, buf,
                                           (size_t)(m * s->cs)));
    ALK_CHECK(rc == Q2W_OK, "fixture claim: %s", q2w_strerror(rc));
    rc = qh_run(&h.img, &s->fix, q2w_close(&h.img));
    ALK_CHECK(rc == Q2W_OK, "fixture close: %s", q2w_strerror(rc));
    qh_close_handle(&h);
    alk_free(buf);
    for (i = 0; i < m; i++)
        host[i] = cr_l2e(s, *vc0 + i, &where) & Q2W__OFF_MASK;
    return m;
}

/* Compressed clusters, packed as qemu packs them: a stream starts where
 * the last one ended, crossing into the next host cluster when that one
 * follows it in the file, and never onto a cluster whose refcount width
 * cannot count one more descriptor (then: the next cluster's start). Each
 * stream is shorter than a cluster, so stream i starts in store cluster i
 * at the latest and there is always room. */
static void cr_add_compressed(cr *s)
{
    uint64_t host[8], used[8] = {0}, vc0, cs = s->cs, cur, where, i;
    uint32_t order = s->version == 3 ? q2w__be32(s->fix.buf + 96) : 4;
    uint64_t rmax = order == 6 ? ~0ull : (1ull << (1u << order)) - 1;
    uint32_t sbits = 62u - (q2w__be32(s->fix.buf + 20) - 8u);
    unsigned m = (unsigned)alksim_range(&s->src, 1, 8), j = 0, t;
    unsigned char *content = (unsigned char *)alk_malloc((size_t)cs);
    unsigned char *stream = (unsigned char *)alk_malloc((size_t)cs);
    ALK_CHECK(content && stream, "out of memory");
    m = cr_claim(s, m, &vc0, host);
    cur = host[0];
    for (i = 0; i < m; i++) {
        size_t len = cr_deflate_runs(content, cs, (unsigned)(i + vc0 * 3),
                                     stream, (size_t)cs);
        uint64_t first, span, e, vbytes;
        ALK_CHECK(len < cs, "compressed fixture: stream of %zu bytes", len);
        for (;;) {
            int ok;
            first = cur / cs;
            span = (cur + len - 1) / cs - first;
            ok = j + span < m;
            for (t = 0; ok && t <= span; t++)
                ok = host[j + t] == (first + t) * cs && used[j + t] < rmax;
            if (ok) break;
            ALK_CHECK(j + 1 < m, "compressed fixture: no room");
            cur = host[++j];
        }
        memcpy(s->fix.buf + cur, stream, len);
        for (t = 0; t <= span; t++) used[j + t]++;
        e = Q2W__COMPRESSED | ((((cur & 511) + len - 1) / 512) << sbits) | cur;
        (void)cr_l2e(s, vc0 + i, &where);
        q2w__put64(s->fix.buf + where, e);
        vbytes = s->size - (vc0 + i) * cs < cs ? s->size - (vc0 + i) * cs : cs;
        memcpy(s->model + (vc0 + i) * cs, content, (size_t)vbytes);
        cur += len;
        j += (unsigned)(cur / cs - first);
        if (j >= m) break;   /* the last stream ended a cluster exactly */
    }
    for (t = 0; t < m; t++) cr_set_refcount(s, host[t] / cs, used[t]);
    alk_trace("fixture: %u compressed clusters at virtual cluster %llu",
              m, (unsigned long long)vc0);
    alk_free(content);
    alk_free(stream);
}

/* A persistent bitmap, live (autoclear bit 0): its directory, table and
 * data cluster are clusters the writer claimed and unmapped again. */
static void cr_add_bitmaps(cr *s)
{
    uint64_t host[CR_BITMAP_CLUSTERS], vc0, where, i;
    unsigned m = cr_claim(s, CR_BITMAP_CLUSTERS, &vc0, host);
    unsigned char *d = s->fix.buf;   /* (the claim may move it) */
    ALK_CHECK(m == CR_BITMAP_CLUSTERS, "bitmap fixture: disk too small");
    for (i = 0; i < m; i++) {
        (void)cr_l2e(s, vc0 + i, &where);
        q2w__put64(d + where, 0);
        memset(s->model + (vc0 + i) * s->cs, 0, (size_t)s->cs);
        memset(d + host[i], 0, (size_t)s->cs);
    }
    /* directory entry: table, 1 entry, flags auto, dirty tracking, 64 KiB
     * granularity, name "b0" */
    q2w__put64(d + host[0], host[1]);
    q2w__put32(d + host[0] + 8, 1);
    q2w__put32(d + host[0] + 12, 2);
    d[host[0] + 16] = 1;
    d[host[0] + 17] = 16;
    q2w__put16(d + host[0] + 18, 2);
    memcpy(d + host[0] + 24, "b0", 2);
    q2w__put64(d + host[1], host[2]);
    memset(d + host[2], 0xa5, 64);
    /* the extension after the 112-byte header, then the end marker */
    q2w__put32(d + 112, 0x23852875u);
    q2w__put32(d + 116, 24);
    q2w__put32(d + 120, 1);
    q2w__put64(d + 128, 32);
    q2w__put64(d + 136, host[0]);
    d[95] |= 1;
    alk_trace("fixture: bitmap at clusters %llu %llu %llu",
              (unsigned long long)(host[0] / s->cs),
              (unsigned long long)(host[1] / s->cs),
              (unsigned long long)(host[2] / s->cs));
}

static void cr_setup(cr *s)
{
    static const uint32_t sizes[] = {512, 4096, 65536};
    q2w_create_opts o;
    int rc, near;
    /* 2 MiB clusters: one run in 16 (each moves tens of MiB) */
    s->cs = alksim_chance(&s->src, 1, 16) ? 2u << 20
                                          : sizes[alksim_pick(&s->src, 3)];
    s->version = alksim_bool(&s->src) ? 3 : 2;
    s->fixture = (int)alksim_pick(&s->src, CR_FIXTURES);
    if (s->fixture == CR_BITMAPS) s->version = 3;
    memset(&o, 0, sizeof o);
    o.cluster_size = s->cs;
    o.version = s->version;
    o.refcount_bits = s->version == 2 ? 16
                                      : 1u << alksim_pick(&s->src, 7);
    /* 64-bit refcounts in 512 B clusters: a refcount block covers 32 KiB
     * and a table cluster 2 MiB, so a few large writes grow both */
    if (s->version == 3 && s->cs == 512 && alksim_bool(&s->src))
        o.refcount_bits = 64;
    s->size = alksim_range(&s->src, 1, 4096) * 512;
    /* 64-bit refcounts in 512 B clusters with data: a refcount block
     * covers 32 KiB and a table cluster 2 MiB of file. The fixture fills
     * the disk up to just short of 2 MiB of file, and the operations'
     * allocations (writes past the filled part, copy-on-write after a
     * snapshot) grow the blocks and then the table. */
    near = s->cs == 512 && o.refcount_bits == 64 &&
           (s->fixture == CR_DATA || s->fixture == CR_SNAP);
    if (near) /* 2.125 .. 2.25 MiB: more than the file's room below 2 MiB */
        s->size = 4352 * 512 + s->size % (256 * 512);
    if (s->cs == 65536 && s->size < 4 * 65536) s->size = 4 * 65536;
    if (s->cs == (2u << 20)) s->size = (1u << 20) + s->size * 2; /* 1-3 clusters */
    /* room for the fixture's own clusters */
    if (s->fixture == CR_BITMAPS && s->size < 3 * (uint64_t)s->cs)
        s->size = 3 * (uint64_t)s->cs;
    if (s->fixture == CR_COMPRESSED && s->size < s->cs) s->size = s->cs;
    s->max_size = s->size * 2;
    s->size_hi = s->size;
    s->model = (unsigned char *)alk_calloc(1, (size_t)s->max_size);
    s->base = (unsigned char *)alk_malloc((size_t)s->max_size + 1);
    s->view = (unsigned char *)alk_malloc((size_t)s->max_size + 1);
    s->acked = (uint64_t *)alk_calloc((size_t)(s->max_size / CR_SECTOR),
                                  sizeof(uint64_t));
    ALK_CHECK(s->model && s->acked && s->base && s->view, "out of memory");
    o.size = s->size;
    if (s->fixture == CR_BACKING) {
        uint64_t i;
        s->has_backing = 1;
        o.backing = "base.img";
        s->backing_len = alksim_range(&s->src, 1, s->size);
        s->backing = (unsigned char *)alk_malloc((size_t)s->backing_len);
        ALK_CHECK(s->backing != NULL, "out of memory");
        for (i = 0; i < s->backing_len; i++)
            s->backing[i] = (unsigned char)(i * 7 + 3);
        memcpy(s->model, s->backing, (size_t)s->backing_len);
        s->fix.backing = s->backing;
        s->fix.backing_len = s->backing_len;
    }
    s->disk_bytes = CR_DISK_BYTES(s->cs);
    qh_disk_init(&s->fix, (size_t)s->disk_bytes);
    s->fix.backing = s->backing;
    s->fix.backing_len = s->backing_len;
    rc = qh_create(&s->fix, &o);
    ALK_CHECK(rc == Q2W_OK, "create: %s", q2w_strerror(rc));
    s->fix.cluster_size = s->cs;
    alk_trace("fixture %d v%d cluster %u refcount_bits %u size %llu",
              s->fixture, s->version, s->cs, o.refcount_bits,
              (unsigned long long)s->size);
    if (s->fixture == CR_DATA || s->fixture == CR_SNAP ||
        s->fixture >= CR_COMPRESSED) {
        unsigned i, n = (unsigned)alksim_range(&s->src, 1, 4);
        unsigned char *buf;
        rc = qh_open(&s->h, &s->fix, s->cs, 8, 16, 1, s->has_backing);
        ALK_CHECK(rc == Q2W_OK, "fixture open: %s", q2w_strerror(rc));
        if (near) {
            /* the first part, sequentially, until the file is 4 .. 96 KiB
             * short of 2 MiB (halving steps: never past the target by more
             * than one small write's metadata) */
            uint64_t target = (2u << 20) - alksim_range(&s->src, 1, 24) * 4096;
            uint64_t off = 0;
            buf = (unsigned char *)alk_malloc(16384);
            ALK_CHECK(buf != NULL, "out of memory");
            while (s->fix.len < target && off < s->size) {
                uint64_t len = (target - s->fix.len) / 2;
                len = len < 512 ? 512 : len > 16384 ? 16384 : len - len % 512;
                if (len > s->size - off) len = s->size - off;
                cr_fill(buf, len, (unsigned)(off / 16384));
                rc = qh_run(&s->h.img, &s->fix,
                            q2w_write(&s->h.img, off, buf, (size_t)len));
                ALK_CHECK(rc == Q2W_OK, "fixture fill: %s", q2w_strerror(rc));
                memcpy(s->model + off, buf, (size_t)len);
                off += len;
            }
            alk_free(buf);
            alk_trace("fixture filled %llu bytes: file %zu of the table's "
                      "%u", (unsigned long long)off, s->fix.len, 2u << 20);
            n = s->fixture == CR_SNAP; /* then only the snapshot */
            s->fill_end = off;
        }
        for (i = 0; i < n; i++) {
            uint64_t off = alksim_range(&s->src, 0, s->size - 1);
            uint64_t len = near ? 512 : alksim_range(&s->src, 1, 3 * (uint64_t)s->cs);
            if (len > s->size - off) len = s->size - off;
            buf = (unsigned char *)alk_malloc((size_t)len);
            ALK_CHECK(buf != NULL, "out of memory");
            if (i && s->version == 3 && alksim_chance(&s->src, 1, 3)) {
                /* zero-flagged clusters (and zeroed parts) */
                memset(buf, 0, (size_t)len);
                rc = qh_run(&s->h.img, &s->fix,
                            q2w_write_zeroes(&s->h.img, off, len));
            } else {
                cr_fill(buf, len, 200 + i);
                rc = qh_run(&s->h.img, &s->fix,
                            q2w_write(&s->h.img, off, buf, (size_t)len));
            }
            ALK_CHECK(rc == Q2W_OK, "fixture write: %s", q2w_strerror(rc));
            memcpy(s->model + off, buf, (size_t)len);
            alk_free(buf);
            if (s->fixture == CR_SNAP && s->snaps.n < 2 &&
                (i == 0 || alksim_bool(&s->src))) {
                char name[8];
                qh_snap *sn;
                snprintf(name, sizeof name, "f%u", s->snaps.n);
                sn = qh_snap_begin_create(&s->snaps, name, s->model, s->size,
                                          0, 0, 0);
                rc = qh_run(&s->h.img, &s->fix,
                            q2w_snapshot_create(&s->h.img, name, 0, 0, 0));
                if (rc == Q2W_ERR_LIMIT) { /* narrow refcounts */
                    qh_snap_cancel(&s->snaps, sn);
                    continue;
                }
                ALK_CHECK(rc == Q2W_OK, "fixture snapshot: %s", q2w_strerror(rc));
                qh_snap_end_create(sn, 1);
            }
        }
        rc = qh_run(&s->h.img, &s->fix, q2w_close(&s->h.img));
        ALK_CHECK(rc == Q2W_OK, "fixture close: %s", q2w_strerror(rc));
        qh_close_handle(&s->h);
    }
    if (s->fixture == CR_BITMAPS) cr_add_bitmaps(s);
    if (s->fixture == CR_COMPRESSED) {
        cr_add_compressed(s);
        qh_assert_consistent(&s->fix, 1, "compressed fixture");
        if (alksim_bool(&s->src)) {
            /* a snapshot holds them too */
            qh_snap *sn = qh_snap_begin_create(&s->snaps, "fc", s->model,
                                               s->size, 0, 0, 0);
            rc = qh_open(&s->h, &s->fix, s->cs, 8, 16, 1, 0);
            ALK_CHECK(rc == Q2W_OK, "fixture open: %s", q2w_strerror(rc));
            rc = qh_run(&s->h.img, &s->fix,
                        q2w_snapshot_create(&s->h.img, "fc", 0, 0, 0));
            ALK_CHECK(rc == Q2W_OK || rc == Q2W_ERR_LIMIT,
                      "fixture snapshot: %s", q2w_strerror(rc));
            if (rc == Q2W_OK) qh_snap_end_create(sn, 1);
            else qh_snap_cancel(&s->snaps, sn);
            rc = qh_run(&s->h.img, &s->fix, q2w_close(&s->h.img));
            ALK_CHECK(rc == Q2W_OK, "fixture close: %s", q2w_strerror(rc));
            qh_close_handle(&s->h);
        }
    }
    qh_assert_consistent(&s->fix, 1, "fixture");
}

/* Refcount blocks the table lists (the newest view of the disk) and the
 * table's offset: growth of either shows in the soak's report. */
static uint64_t cr_blocks(cr *s, uint64_t *rt_off)
{
    unsigned char h[64], e[8];
    uint64_t n = 0, i, ents;
    alksim_disk_read(&s->disk, 0, h, sizeof h);
    *rt_off = q2w__be64(h + 48);
    ents = (uint64_t)q2w__be32(h + 56) * (s->cs / 8);
    for (i = 0; i < ents && *rt_off + i * 8 + 8 <= s->disk_bytes; i++) {
        alksim_disk_read(&s->disk, *rt_off + i * 8, e, 8);
        n += q2w__be64(e) != 0;
    }
    return n;
}

/* The fixture onto the simulated disk, durable. */
static void cr_load_disk(cr *s)
{
    alksim_disk_config dc;
    size_t need;
    int rc;
    memset(&dc, 0, sizeof dc);
    dc.sector_size = CR_SECTOR;
    dc.sectors = s->disk_bytes / CR_SECTOR;
    dc.max_pending = CR_PENDING;
    need = alksim_disk_mem_size(&dc);
    s->disk_mem = alk_malloc(need);
    ALK_CHECK(s->disk_mem != NULL, "out of memory for the disk");
    rc = alksim_disk_init(&s->disk, &dc, s->disk_mem, need);
    ALK_CHECK(rc == ALKSIM_OK, "disk init %d", rc);
    memcpy(s->disk.durable, s->fix.buf, s->fix.len);
    s->file_len = s->fix.len;
    qh_disk_init(&s->aud, (size_t)s->disk_bytes);
    qh_disk_reserve(&s->aud, s->fix.len);
    memcpy(s->aud.buf, s->fix.buf, s->fix.len);
    s->aud.len = s->fix.len;
    s->aud.backing = s->backing;
    s->aud.backing_len = s->backing_len;
    qh_disk_init(&s->prog, (size_t)s->disk_bytes);
    qh_disk_reserve(&s->prog, s->fix.len);
    memcpy(s->prog.buf, s->fix.buf, s->fix.len);
    s->prog.len = s->fix.len;
    {
        uint64_t rt;
        s->rb0 = cr_blocks(s, &rt);
    }
}

/* ---- operations --------------------------------------------------------------- */
static uint64_t cr_len(cr *s, uint64_t room)
{
    uint64_t len;
    switch (alksim_pick(&s->src, 4)) {
    case 0: len = alksim_range(&s->src, 1, 600); break;
    case 1: len = alksim_range(&s->src, 1, 2 * (uint64_t)s->cs); break;
    case 2: len = s->cs * alksim_range(&s->src, 1, 4); break;
    default: len = alksim_range(&s->src, 1, 1u << 20); break; /* growth */
    }
    return len < room ? len : room;
}

/* One operation; CR_CRASHED when the power went during it. */
static int cr_op(cr *s, unsigned i, unsigned char *buf)
{
    q2w_image *img = &s->h.img;
    int kind = (int)alksim_pick(&s->src, 11), rc;
    uint64_t off = s->size ? alksim_range(&s->src, 0, s->size - 1) : 0;
    uint64_t len = s->size ? cr_len(s, s->size - off) : 0;
    if (alksim_bool(&s->src)) off -= off % s->cs;
    if (i == 0 && s->fill_end && s->fill_end < s->size) {
        kind = 0;
        /* near-full fixture: the first op writes the unfilled part, more
         * than the room left below 2 MiB of file: the table grows */
        off = s->fill_end;
        len = s->size - off;
    }
    if (len > s->size - off) len = s->size - off;
    {
        static const char *const names[] = {"write", "write", "zeroes",
                                            "discard", "flush", "grow",
                                            "snapshot-create",
                                            "snapshot-delete",
                                            "snapshot-apply", "amend",
                                            "write-compressed"};
        s->op_name = names[kind];
        s->op_batch0 = s->batches;
    }
    switch (kind) {
    case 0: case 1: /* write */
        alk_trace("op %u write [%llu,+%llu)", i, (unsigned long long)off,
                  (unsigned long long)len);
        cr_fill(buf, len, i);
        memcpy(s->model + off, buf, (size_t)len);
        cr_note(s, off, len);
        return cr_run(s, q2w_write(img, off, buf, (size_t)len));
    case 2: /* write_zeroes */
        alk_trace("op %u zeroes [%llu,+%llu)", i, (unsigned long long)off,
                  (unsigned long long)len);
        memset(s->model + off, 0, (size_t)len);
        cr_note(s, off, len);
        return cr_run(s, q2w_write_zeroes(img, off, len));
    case 3: { /* discard */
        uint64_t at, n;
        alk_trace("op %u discard [%llu,+%llu)", i, (unsigned long long)off,
                  (unsigned long long)len);
        n = qh_model_discard(s->model, s->size, s->cs, s->version,
                             s->has_backing, off, len, &at);
        cr_note(s, at, n);
        return cr_run(s, q2w_discard(img, off, len));
    }
    case 4: /* flush */
        alk_trace("op %u flush", i);
        rc = cr_run(s, q2w_flush(img));
        if (rc == Q2W_OK) cr_ack(s);
        return rc;
    case 5: { /* grow (not over a backing file: keeps the model simple) */
        uint64_t to = s->size + alksim_range(&s->src, 1, s->max_size - s->size);
        if (s->has_backing || s->size == s->max_size) return Q2W_OK;
        to -= to % 512;
        if (to <= s->size) return Q2W_OK;
        alk_trace("op %u grow to %llu", i, (unsigned long long)to);
        cr_note(s, s->size, to - s->size);   /* zeros, as before */
        s->size_hi = to;
        rc = cr_run(s, q2w_resize(img, to));
        if (rc == Q2W_OK) s->size = to;
        return rc;
    }
    case 6: { /* snapshot create */
        qh_snap *sn;
        char name[16];
        if (s->snaps.n >= CR_MAX_SNAPS) return Q2W_OK;
        snprintf(name, sizeof name, "c%u", s->serial++);
        sn = qh_snap_begin_create(&s->snaps, name, s->model, s->size, 1, 2,
                                  3);
        alk_trace("op %u snapshot create %s", i, sn->name);
        rc = cr_run(s, q2w_snapshot_create(img, sn->name, 1, 2, 3));
        if (rc == Q2W_OK) qh_snap_end_create(sn, 1);
        if (rc == Q2W_ERR_LIMIT) { /* refused, nothing changed */
            qh_snap_cancel(&s->snaps, sn);
            return Q2W_OK;
        }
        return rc;
    }
    case 7: { /* snapshot delete */
        qh_snap *sn;
        unsigned live = qh_snaps_count(&s->snaps, QH_SNAP_LIVE);
        if (!live) return Q2W_OK;
        sn = qh_snaps_nth(&s->snaps, QH_SNAP_LIVE,
                          (unsigned)alksim_pick(&s->src, live));
        alk_trace("op %u snapshot delete %s", i, sn->name);
        qh_snap_begin_delete(sn);
        rc = cr_run(s, q2w_snapshot_delete(img, sn->name));
        if (rc == Q2W_OK) qh_snap_end_delete(sn, 1);
        return rc;
    }
    case 10: { /* a compressed cluster (a whole one, or the disk's short
                  last one); refused over an allocated cluster (nothing
                  changes then) */
        unsigned char *old, *work;
        uint64_t at = off - off % s->cs, n = s->size - at < s->cs ? s->size - at : s->cs;
        if (!s->size) return Q2W_OK;
        alk_trace("op %u write-compressed [%llu,+%llu)", i, (unsigned long long)at,
                  (unsigned long long)n);
        old = (unsigned char *)alk_malloc((size_t)n);
        work = (unsigned char *)alk_malloc(Q2W_CZ_WORK(s->cs));
        ALK_CHECK(old && work, "out of memory");
        cr_fill(buf, n, i);
        memcpy(old, s->model + at, (size_t)n);
        memcpy(s->model + at, buf, (size_t)n);
        cr_note(s, at, n);
        rc = cr_run(s, q2w_write_compressed(img, at, buf, (size_t)n, work,
                                            Q2W_CZ_WORK(s->cs)));
        if (rc == Q2W_ERR_UNSUPPORTED) {
            memcpy(s->model + at, old, (size_t)n);
            rc = Q2W_OK;
        }
        alk_free(old);
        alk_free(work);
        return rc;
    }
    case 9: { /* amend to the other version: the view unchanged */
        int to = s->version == 3 ? 2 : 3;
        alk_trace("op %u amend to v%d", i, to);
        qh_header_rewrite = 1;
        rc = cr_run(s, q2w_amend_compat(img, to));
        qh_header_rewrite = 0;
        if (rc == Q2W_OK) s->version = to;
        if (rc == Q2W_ERR_UNSUPPORTED || rc == Q2W_ERR_LIMIT) rc = Q2W_OK;
        return rc;
    }
    default: { /* snapshot apply: every sector may now hold the snapshot's
                  bytes, and the size be the snapshot's */
        qh_snap *sn;
        unsigned char *old;
        uint64_t old_size = s->size;
        unsigned live = qh_snaps_count(&s->snaps, QH_SNAP_LIVE);
        if (!live) return Q2W_OK;
        sn = qh_snaps_nth(&s->snaps, QH_SNAP_LIVE,
                          (unsigned)alksim_pick(&s->src, live));
        alk_trace("op %u snapshot apply %s (%llu bytes)", i, sn->name,
                  (unsigned long long)sn->size);
        old = (unsigned char *)alk_malloc((size_t)s->max_size);
        ALK_CHECK(old != NULL, "out of memory");
        memcpy(old, s->model, (size_t)s->max_size);
        memcpy(s->model, sn->model, (size_t)sn->size);
        memset(s->model + sn->size, 0, (size_t)(s->max_size - sn->size));
        s->size = sn->size;
        if (s->acked_size > sn->size) s->acked_size = sn->size;
        if (s->size_hi < sn->size) s->size_hi = sn->size;
        cr_note(s, 0, old_size > sn->size ? old_size : sn->size);
        rc = cr_run(s, q2w_snapshot_apply(img, sn->name));
        if (rc == Q2W_ERR_LIMIT) { /* refused, nothing changed */
            memcpy(s->model, old, (size_t)s->max_size);
            s->size = old_size;
            rc = Q2W_OK;
        }
        alk_free(old);
        return rc;
    }
    }
}

/* ---- after the power loss ---------------------------------------------------- */
static int cr_version_cmp(const void *a, const void *b)
{
    const cr_version *x = (const cr_version *)a, *y = (const cr_version *)b;
    if (x->sector != y->sector) return x->sector < y->sector ? -1 : 1;
    return x->hash < y->hash ? -1 : x->hash > y->hash;
}

/* Sector k may hold h: its content at the last flush, or a later version
 * (ver[] sorted by cr_version_cmp first). */
static int cr_allowed(const cr *s, uint64_t k, uint64_t h)
{
    cr_version key;
    if (k < s->max_size / CR_SECTOR && s->acked[k] == h) return 1;
    key.sector = k;
    key.hash = h;
    return s->n_ver && bsearch(&key, s->ver, s->n_ver, sizeof key,
                               cr_version_cmp) != NULL;
}

/* Inside a snapshot create or delete (with `final`: the one the power or
 * the error interrupted). */
static int cr_in_snapshot_op(const cr *s, int final)
{
    if (!s->op_name || strncmp(s->op_name, "snapshot", 8) != 0) return 0;
    return !final || s->io_failed || s->batches == s->crash_at;
}

/* The checker on a state the power may leave behind: no corruption -
 * except one thing no in-place update can avoid: a snapshot create or
 * delete interrupted between its refcount changes and its COPIED changes.
 * The two live in different clusters, so for a while COPIED disagrees with
 * the stored refcount (qemu's own writer has the same window: qemu-img
 * check calls it an error, and check -r leaks repairs it). Only COPIED
 * findings, only then (`copied_ok`); the repair after the crash must leave
 * the image exact. (A writer could close the window only by building new
 * L1/L2 tables, refcount blocks and table beside the old ones and
 * switching all of them with one header-sector write; qcow2w updates in
 * place, as qemu does.) */
static void cr_judge_meta(qh_disk *d, int copied_ok, const char *when)
{
    q2w_check_result r;
    size_t j;
    int rc = qh_check(d, 0, &r);
    ALK_CHECK(rc == Q2W_OK, "%s: check: %s (%s)", when, q2w_strerror(rc),
              r.error.what ? r.error.what : "");
    if (!r.corruptions) return;
    qh_print_findings(&r);
    /* (findings past the recorded ones: the exact check after the repair
     * catches anything but COPIED, which the repair fixes only when
     * nothing else is wrong) */
    ALK_CHECK(copied_ok, "%s: %llu corruptions", when,
              (unsigned long long)r.corruptions);
    for (j = 0; j < r.n_findings; j++)
        ALK_CHECK(r.findings[j].kind == Q2W_FIND_COPIED ||
                      r.findings[j].kind == Q2W_FIND_LEAK,
                  "%s: %s at %llu", when, q2w_finding_name(r.findings[j].kind),
                  (unsigned long long)r.findings[j].offset);
    alk_trace("%s: COPIED window, %llu findings", when,
              (unsigned long long)r.corruptions);
}

/* The active view of a state the power may leave behind: it opens, its
 * size is one the header could hold, and every 512-byte sector holds its
 * content at the last completed flush or a later one (ver[] sorted).
 * Sectors equal to `base` (an already judged view of `base_sz` bytes) are
 * not judged again. The view is read into `view`; returns its size. */
static uint64_t cr_judge_view(cr *s, qh_disk *d, unsigned char *view,
                              const unsigned char *base, uint64_t base_sz,
                              const char *when)
{
    qh_handle f;
    q2w_info info;
    uint64_t k, sz;
    int rc = qh_open(&f, d, s->cs, 8, 16, 0, s->has_backing);
    ALK_CHECK(rc == Q2W_OK, "%s: open: %s (%s)", when, q2w_strerror(rc),
              q2w_error(&f.img)->what);
    q2w_info_get(&f.img, &info);
    sz = info.size;
    ALK_CHECK(sz >= s->acked_size && sz <= s->size_hi && sz % 512 == 0,
              "%s: size %llu (flushed %llu, last %llu)", when,
              (unsigned long long)sz, (unsigned long long)s->acked_size,
              (unsigned long long)s->size_hi);
    rc = qh_run(&f.img, d, q2w_read(&f.img, 0, view, (size_t)sz));
    ALK_CHECK(rc == Q2W_OK, "%s: read: %s", when, q2w_strerror(rc));
    qh_close_handle(&f);
    for (k = 0; k < sz / CR_SECTOR; k++) {
        const unsigned char *p = view + k * CR_SECTOR;
        if (base && (k + 1) * CR_SECTOR <= base_sz &&
            memcmp(p, base + k * CR_SECTOR, CR_SECTOR) == 0)
            continue;
        ALK_CHECK(cr_allowed(s, k, cr_hash(p, CR_SECTOR)),
                  "%s: sector %llu (byte %llu) holds neither its flushed "
                  "content nor a later one", when, (unsigned long long)k,
                  (unsigned long long)(k * CR_SECTOR));
    }
    return sz;
}

/* ---- the ordering audit ------------------------------------------------------ */
/* The planner's order rules - a refcount increase flushed before any L1/L2
 * entry points at the cluster, a reference flushed away before its
 * refcount drops, new tables written and flushed before the header
 * switches to them, data flushed before the L2 entry that maps it - all
 * say the same thing: whatever the disk keeps of the writes since the last
 * flush, the image is consistent. The audit judges, at every flush the
 * planner issues and at the power loss, the disk as of the previous flush;
 * then, for each write since, that disk with only the sectors that write
 * touched written back, as they were right after it (a write-back cache
 * merges the writes to one sector: a sector holds its content at some
 * moment, never a later write without an earlier one); then the disk with
 * every write. One write reaching the disk alone is the state that exposes
 * a broken dependency between two writes of one flush interval. Each state
 * is judged as after a crash (checker, then the active view), so this
 * covers every op stream of every run, not only the one crash state the
 * run ends in. */
static void cr_apply(cr *s, qh_disk *d, const cr_write *w)
{
    qh_disk_reserve(d, (size_t)(w->off + w->len));
    if (w->at == CR_ZEROS) memset(d->buf + w->off, 0, (size_t)w->len);
    else memcpy(d->buf + w->off, s->wbuf + w->at, (size_t)w->len);
}

static void cr_record(cr *s, const q2w_op *o)
{
    cr_write *w;
    s->w = (cr_write *)cr_reserve(s->w, &s->cap_w, s->n_w + 1, sizeof *s->w);
    w = &s->w[s->n_w++];
    w->off = o->off;
    w->len = o->len;
    w->at = CR_ZEROS;
    if (!o->src) return;
    s->wbuf = (unsigned char *)cr_reserve(s->wbuf, &s->wbuf_cap,
                                          s->wbuf_len + (size_t)o->len, 1);
    memcpy(s->wbuf + s->wbuf_len, o->src, o->len);
    w->at = s->wbuf_len;
    s->wbuf_len += o->len;
}

/* aud holds the disk as of the last flush and prog the same plus the
 * writes so far (equal between audits). */
static void cr_audit(cr *s, int final)
{
    char when[200];
    const char *op = s->op_name ? s->op_name : "open";
    int copied_ok = cr_in_snapshot_op(s, final);
    uint64_t base_sz;
    size_t j;
    if (!s->n_w && !final) return;
    qh_disk_reserve(&s->aud, (size_t)s->file_len);
    qh_disk_reserve(&s->prog, (size_t)s->file_len);
    s->aud.len = s->prog.len = (size_t)s->file_len;
    if (s->n_ver) qsort(s->ver, s->n_ver, sizeof *s->ver, cr_version_cmp);
    snprintf(when, sizeof when, "ordering audit in %s, batch %llu: the disk "
             "as of the last flush", op,
             (unsigned long long)(s->batches - s->op_batch0));
    cr_judge_meta(&s->aud, copied_ok, when);
    base_sz = cr_judge_view(s, &s->aud, s->base, NULL, 0, when);
    s->audited++;
    for (j = 0; j < s->n_w; j++) {
        const cr_write *w = &s->w[j];
        uint64_t a = w->off / CR_SECTOR * CR_SECTOR;
        uint64_t e = (w->off + w->len + CR_SECTOR - 1) / CR_SECTOR * CR_SECTOR;
        size_t n;
        cr_apply(s, &s->prog, w);
        if (e > s->aud.len) e = s->aud.len;
        n = (size_t)(e - a);
        s->undo = (unsigned char *)cr_reserve(s->undo, &s->undo_cap, n, 1);
        memcpy(s->undo, s->aud.buf + a, n);
        memcpy(s->aud.buf + a, s->prog.buf + a, n);
        snprintf(when, sizeof when, "ordering audit in %s, batch %llu: only "
                 "write %zu of %zu since the last flush, [%llu,+%llu)", op,
                 (unsigned long long)(s->batches - s->op_batch0), j + 1,
                 s->n_w, (unsigned long long)w->off,
                 (unsigned long long)w->len);
        cr_judge_meta(&s->aud, copied_ok, when);
        cr_judge_view(s, &s->aud, s->view, s->base, base_sz, when);
        memcpy(s->aud.buf + a, s->undo, n);
        s->audited++;
    }
    for (j = 0; j < s->n_w; j++) cr_apply(s, &s->aud, &s->w[j]);
    if (final && s->n_w) {
        snprintf(when, sizeof when, "ordering audit in %s: every write since "
                 "the last flush", op);
        cr_judge_meta(&s->aud, copied_ok, when);
        cr_judge_view(s, &s->aud, s->view, s->base, base_sz, when);
        s->audited++;
    }
    s->n_w = 0;
    s->wbuf_len = 0;
}

static void cr_verify(cr *s)
{
    q2w_check_result r;
    qh_handle f;
    uint64_t sz;
    int rc, live_bitmap;
    /* the durable bytes are the image now */
    qh_disk_free(&s->fix);
    qh_disk_init(&s->fix, (size_t)s->disk_bytes);
    qh_disk_reserve(&s->fix, (size_t)s->file_len);
    memcpy(s->fix.buf, s->disk.durable, (size_t)s->file_len);
    s->fix.len = (size_t)s->file_len;
    s->fix.cluster_size = s->cs;
    s->fix.backing = s->backing;
    s->fix.backing_len = s->backing_len;
    cr_judge_meta(&s->fix, cr_in_snapshot_op(s, 1), "after the power loss");
    rc = qh_check(&s->fix, Q2W_CHECK_REPAIR_LEAKS, &r);
    ALK_CHECK(rc == Q2W_OK, "repair: %s", q2w_strerror(rc));
    alk_trace("crash: %llu leaks repaired", (unsigned long long)r.leaks_fixed);
    qh_assert_repair_end(&s->fix, &r, "repair after the power loss");
    qh_assert_consistent(&s->fix, 1, "after repairing leaks");

    if (s->n_ver) qsort(s->ver, s->n_ver, sizeof *s->ver, cr_version_cmp);
    sz = cr_judge_view(s, &s->fix, s->view, NULL, 0, "after the power loss");
    rc = qh_open(&f, &s->fix, s->cs, 8, 16, 0, s->has_backing);
    ALK_CHECK(rc == Q2W_OK, "reopen after the power loss: %s",
              q2w_strerror(rc));

    /* snapshots: every one whose create completed (and whose delete did
     * not start) is there; every one there is one that was created and
     * reads back as the disk was then */
    qh_assert_snapshots(&f, &s->fix, &s->snaps, "after the power loss");
    qh_close_handle(&f);

    /* it takes more writes and stays exact - but for a bitmap still live
     * (autoclear bit 0): the write makes it stale, and then its clusters
     * are exactly the leaks (qemu says the same) */
    live_bitmap = s->fixture == CR_BITMAPS && (s->fix.buf[95] & 1);
    rc = qh_open(&f, &s->fix, s->cs, 8, 16, 1, s->has_backing);
    ALK_CHECK(rc == Q2W_OK, "reopen for writing: %s", q2w_strerror(rc));
    if (sz) {
        unsigned char b[700];
        uint64_t off = sz > sizeof b ? sz / 2 : 0;
        size_t n = sz - off < sizeof b ? (size_t)(sz - off) : sizeof b;
        memset(b, 0xd7, sizeof b);
        rc = qh_run(&f.img, &s->fix, q2w_write(&f.img, off, b, n));
        ALK_CHECK(rc == Q2W_OK, "write after the power loss: %s (%s)",
                  q2w_strerror(rc), q2w_error(&f.img)->what);
    }
    rc = qh_run(&f.img, &s->fix, q2w_close(&f.img));
    ALK_CHECK(rc == Q2W_OK, "close after the power loss: %s", q2w_strerror(rc));
    qh_close_handle(&f);
    if (live_bitmap && !(s->fix.buf[95] & 1)) {
        rc = qh_check(&s->fix, Q2W_CHECK_REPAIR_LEAKS, &r);
        ALK_CHECK(rc == Q2W_OK && r.corruptions == 0 &&
                      r.leaks_fixed == CR_BITMAP_CLUSTERS,
                  "stale bitmap: %s, %llu corruptions, %llu leaks",
                  q2w_strerror(rc), (unsigned long long)r.corruptions,
                  (unsigned long long)r.leaks_fixed);
    }
    qh_assert_consistent(&s->fix, 1, "written after the power loss");
}

/* Soak and qemu hooks (tests/crash_qemu.sh, make crash-soak), off unless
 * the variables are set: QCOW2_CRASH_POINTS names a file that gets one
 * line per run saying where the power went; QCOW2_CRASH_SAVE names a
 * directory that gets each crashed image (before any repair; not the
 * backing-file fixture, whose backing file lives in memory). */
static void cr_report(cr *s, const uint8_t *data, size_t size)
{
    const char *points = getenv("QCOW2_CRASH_POINTS");
    const char *dir = getenv("QCOW2_CRASH_SAVE");
    if (points) {
        FILE *f = fopen(points, "a");
        if (f) {
            /* growth as the handle planned it (durable or not) */
            uint64_t rt, rb = cr_blocks(s, &rt);
            q2w_info info;
            memset(&info, 0, sizeof info);
            if (s->h.img.opened) q2w_info_get(&s->h.img, &info);
            fprintf(f, "fixture %d%s cluster %u refcount-order %u%s%s%s: ",
                    s->fixture, s->has_backing ? " backing-file" : "", s->cs,
                    q2w__be32(s->fix.buf + 96),
                    rb > s->rb0 ? " block-growth" : "",
                    s->h.img.opened && info.refcount_table_offset !=
                                           q2w__be64(s->fix.buf + 48)
                        ? " table-growth" : "",
                    s->h.img.opened && s->h.img.sub == Q2W__SUB_GROW_RT
                        ? " inside-table-growth" : "");
            /* (the states the ordering audit judged: in brackets, not
             * part of the crash point) */
            fprintf(f, "[audited %llu] ", (unsigned long long)s->audited);
            if (s->err_kind >= 0)
                fprintf(f, "error-%s in %s\n",
                        s->err_kind == ALKSIM_DISK_READ ? "read"
                        : s->err_kind == ALKSIM_DISK_WRITE ? "write" : "flush",
                        s->io_failed ? s->op_name ? s->op_name : "open"
                                     : "nothing (not reached)");
            else if (s->op_name && s->batches == s->crash_at)
                fprintf(f, "power in %s batch %llu\n", s->op_name,
                        (unsigned long long)(s->batches - s->op_batch0));
            else
                fprintf(f, "power %s\n", s->op_name ? "after the last operation"
                                                     : "in open");
            fclose(f);
        }
    }
    if (dir && !s->has_backing) {
        char path[512];
        FILE *f;
        uint64_t h = 0xcbf29ce484222325ull;
        size_t i;
        for (i = 0; i < size; i++) h = (h ^ data[i]) * 0x100000001b3ull;
        /* "-snapshot-window": interrupted inside a snapshot create or
         * delete, where COPIED may disagree with the refcounts */
        snprintf(path, sizeof path, "%s/crash-%016llx%s.qcow2", dir,
                 (unsigned long long)h,
                 cr_in_snapshot_op(s, 1) ? "-snapshot-window" : "");
        f = fopen(path, "wb");
        if (f) {
            fwrite(s->disk.durable, 1, (size_t)s->file_len, f);
            fclose(f);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cr s;
    unsigned char *buf;
    unsigned i, nops;
    int rc = Q2W_OK;
    size_t slots, ops_cap;
    memset(&s, 0, sizeof s);
    alk_trace_reset();
    alksim_source_init_bytes(&s.src, data, size);
    cr_setup(&s);
    cr_load_disk(&s);
    cr_ack(&s);
    if (alk_fixtures_only()) {
        buf = NULL;
        goto done;
    }
    slots = 8 + alksim_pick(&s.src, 5);
    ops_cap = 8 + alksim_pick(&s.src, 9);
    qh_max_frees = alksim_bool(&s.src) ? 1 + alksim_pick(&s.src, 4) : 0;
    nops = 1 + (unsigned)alksim_pick(&s.src, CR_MAX_OPS);
    s.err_kind = alksim_chance(&s.src, 1, 4) ? (int)alksim_pick(&s.src, 3) : -1;
    if (s.err_kind >= 0) {
        uint64_t nth = alksim_range(&s.src, 1, 40);
        alk_trace("error on %s number %llu",
                  s.err_kind == ALKSIM_DISK_READ ? "read"
                  : s.err_kind == ALKSIM_DISK_WRITE ? "write" : "flush",
                  (unsigned long long)nth);
        alksim_disk_inject(&s.disk, s.err_kind, nth);
    } else {
        /* mostly early, so that most runs lose power inside an operation */
        s.crash_at = alksim_range(&s.src, 0, s.fill_end ? 400
                                             : alksim_chance(&s.src, 3, 4) ? 40
                                                                           : 300);
        /* near-full fixture: half the time inside the table's growth */
        if (s.fill_end && alksim_bool(&s.src)) {
            s.grow_crash = alksim_range(&s.src, 1, 12);
            s.crash_at = UINT64_MAX;
            alk_trace("power loss at batch %llu of the table growth",
                      (unsigned long long)s.grow_crash);
        } else {
            alk_trace("power loss before batch %llu",
                      (unsigned long long)s.crash_at);
        }
    }
    alk_trace("slots %zu ops %zu frees %zu ops %u", slots, ops_cap,
              qh_max_frees, nops);
    /* the handle runs on the simulated disk: qh_open's memory, our loop */
    {
        q2w_config cfg;
        qh_handle_config(&s.h, &cfg, s.cs, slots, ops_cap, 1, s.has_backing,
                         s.file_len, s.backing_len);
        s.fix.ops_cap = ops_cap;
        rc = cr_run(&s, q2w_open(&s.h.img, &cfg));
    }
    buf = (unsigned char *)alk_malloc((size_t)s.max_size + 1);
    ALK_CHECK(buf != NULL, "out of memory");
    for (i = 0; i < nops && rc == Q2W_OK; i++) rc = cr_op(&s, i, buf);
    if (rc == Q2W_OK && s.err_kind < 0)
        alk_trace("no power loss within the ops: lose it now");
    if (rc != Q2W_OK && rc != CR_CRASHED) {
        /* only an injected error may end an operation early */
        ALK_CHECK(s.io_failed && (rc == Q2W_ERR_IO),
                  "unexpected %s (%s)", q2w_strerror(rc),
                  q2w_error(&s.h.img)->what ? q2w_error(&s.h.img)->what : "");
        /* nothing succeeds on top of the lost write (a handle whose open
         * failed is not open at all) */
        {
            int w = q2w_write(&s.h.img, 0, buf, 1), f = q2w_flush(&s.h.img);
            int c = q2w_close(&s.h.img);
            ALK_CHECK((w == Q2W_ERR_FAILED || w == Q2W_ERR_ARG) && f == w &&
                          c == w,
                      "the handle took more work after an I/O error: %d %d %d",
                      w, f, c);
        }
    }
    cr_audit(&s, 1);
    alk_trace("ordering audit: %llu crash states judged",
              (unsigned long long)s.audited);
    alk_trace("power loss with %u cached sectors", alksim_disk_pending(&s.disk));
    alksim_disk_crash(&s.disk, &s.src);
    cr_report(&s, data, size);
    cr_verify(&s);

done:
    alk_free(buf);
    qh_close_handle(&s.h);
    qh_snaps_free(&s.snaps);
    alk_free(s.model);
    alk_free(s.acked);
    alk_free(s.ver);
    alk_free(s.backing);
    alk_free(s.disk_mem);
    alk_free(s.base);
    alk_free(s.view);
    alk_free(s.w);
    alk_free(s.wbuf);
    alk_free(s.undo);
    qh_disk_free(&s.aud);
    qh_disk_free(&s.prog);
    qh_disk_free(&s.fix);
    qh_max_frees = 0;
    return 0;
}

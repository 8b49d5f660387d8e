/* qcow2_compress.c - fuzz target `qcow2_compress`: compressed cluster
 * writes (q2w_write_compressed) among the other changes, and a power loss.
 *
 * Who sends this input: whoever's disk is imported or converted with -c -
 * the bytes of every cluster, chosen by whoever controls the guest - and
 * the program that drives the writer (which clusters, in which order,
 * over what). The input draws: cluster size (512 B, 4 KiB, 64 KiB),
 * v2/v3, refcount width (1 to 64 bits: a narrow count fills up and the
 * next stream must start a cluster of its own), a disk of 4..64 clusters
 * (its last one short half the time), cache and op-buffer sizes, maybe a
 * snapshot first (the tables it shares are copied on the next write); then
 * 1..24 operations: a compressed write of a cluster (text, runs of one
 * byte, zeros, or random bytes that do not shrink), a plain write, zeroes,
 * a discard, a flush; and in a third of the runs an I/O error at a drawn
 * batch, after which the power goes (every unflushed write lost).
 *
 * After every operation: the checker finds no corruption (leaks allowed
 * until close), the view is the model's, the snapshot reads as it was; a
 * compressed write over a cluster the map calls data or compressed is
 * refused with Q2W_ERR_UNSUPPORTED and changes nothing, else it succeeds
 * and the map calls the cluster compressed (or data, when its stream did
 * not shrink). At the end, after close: exact (no leak, COPIED right). After
 * the power loss: no corruption; every cluster reads as one of the
 * versions it had since the last completed flush (the interrupted
 * operation's included); the snapshot reads as it was. */
#define _POSIX_C_SOURCE 200809L /* the harness's POSIX mirror: mkstemp, pread */
#include "qcow2w.h"
#include "alksim.h"
#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define QC_MAX_CLUSTERS 64u
#define QC_MAX_OPS 24u
#define QC_VERSIONS (QC_MAX_OPS + 2)

typedef struct qc {
    alksim_source *src;
    uint32_t cs;
    uint64_t size, nclusters;
    qh_disk d;
    qh_handle h;
    qh_durable durable;
    unsigned char *model, *snap, *buf, *work, *pad, *z;
    int has_snap;
    unsigned batches, fail_at, crashed;
    /* each cluster's versions since the last completed flush (hashes) */
    uint64_t ver[QC_MAX_CLUSTERS][QC_VERSIONS];
    unsigned nver[QC_MAX_CLUSTERS];
} qc;

static uint64_t qc_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static size_t qc_len(const qc *s, uint64_t k)
{
    return (size_t)((k + 1) * s->cs <= s->size ? s->cs : s->size - k * s->cs);
}

/* The model's clusters in [off, off + len) as versions they may read as. */
static void qc_note(qc *s, uint64_t off, uint64_t len)
{
    uint64_t k;
    if (!len) return;
    for (k = off / s->cs; k * s->cs < off + len; k++) {
        uint64_t h = qc_hash(s->model + k * s->cs, qc_len(s, k));
        if (s->nver[k] < QC_VERSIONS) s->ver[k][s->nver[k]++] = h;
    }
}

/* A flush completed: each cluster has one version, the model's. */
static void qc_flushed(qc *s)
{
    uint64_t k;
    for (k = 0; k < s->nclusters; k++) s->nver[k] = 0;
    qc_note(s, 0, s->size);
}

/* Drives an operation; the batch numbered fail_at fails (then crashed). */
static int qc_run(qc *s, int rc)
{
    unsigned long rounds = 0;
    while (rc == Q2W_PENDING) {
        size_t n;
        const q2w_op *op = q2w_batch(&s->h.img, &n);
        ALK_CHECK(++rounds < QH_RESUME_CAP, "resume loop did not end");
        if (++s->batches == s->fail_at) {
            alk_trace("batch %u fails", s->batches);
            s->crashed = 1;
            return q2w_resume(&s->h.img, -5);
        }
        qh_durable_batch(&s->durable, &s->d, op, n);
        rc = q2w_resume(&s->h.img, qh_exec(&s->d, op, n));
    }
    return rc;
}

/* The view against the model: through the writer's handle while it is
 * open (its cache holds what is not written yet), else a fresh one. */
static void qc_view(qc *s, int fresh, const char *when)
{
    qh_handle f, *h = fresh ? &f : &s->h;
    size_t cap = s->d.ops_cap;
    if (fresh)
        ALK_CHECK(qh_open(&f, &s->d, s->cs, 8, 16, 0, 0) == Q2W_OK, "%s: fresh open", when);
    ALK_CHECK(qh_run(&h->img, &s->d, q2w_read(&h->img, 0, s->buf, (size_t)s->size)) == Q2W_OK,
              "%s: read", when);
    if (!s->crashed && memcmp(s->buf, s->model, (size_t)s->size) != 0) {
        uint64_t i;
        for (i = 0; s->buf[i] == s->model[i]; i++) {}
        ALK_CHECK(0, "%s: byte %llu reads %02x, the model %02x", when, (unsigned long long)i,
                  s->buf[i], s->model[i]);
    }
    if (s->crashed) {
        uint64_t k;
        unsigned v;
        for (k = 0; k < s->nclusters; k++) {
            uint64_t hv = qc_hash(s->buf + k * s->cs, qc_len(s, k));
            for (v = 0; v < s->nver[k] && s->ver[k][v] != hv; v++) {}
            ALK_CHECK(v < s->nver[k], "%s: cluster %llu reads as none of its %u versions", when,
                      (unsigned long long)k, s->nver[k]);
        }
    }
    if (s->has_snap) {
        q2w_snapshot sn;
        ALK_CHECK(qh_run(&h->img, &s->d, q2w_snapshot_find(&h->img, "s", &sn)) == Q2W_OK &&
                      qh_run(&h->img, &s->d, q2w_read_snapshot(&h->img, &sn, 0, s->buf,
                                                               (size_t)s->size)) == Q2W_OK &&
                      memcmp(s->buf, s->snap, (size_t)s->size) == 0,
                  "%s: the snapshot no longer reads as it was", when);
    }
    if (fresh) qh_close_handle(&f);
    s->d.ops_cap = cap;
}

static void qc_no_corruption(qc *s, int exact, const char *when)
{
    q2w_check_result r;
    ALK_CHECK(qh_check(&s->d, 0, &r) == Q2W_OK, "%s: check", when);
    if (r.corruptions || (exact && r.leaks)) qh_print_findings(&r);
    ALK_CHECK(r.corruptions == 0 && (!exact || r.leaks == 0), "%s: %llu corruptions, %llu leaks",
              when, (unsigned long long)r.corruptions, (unsigned long long)r.leaks);
}

/* A cluster's new bytes: text, runs, zeros, or random (does not shrink). */
static void qc_content(qc *s, unsigned char *p, size_t n)
{
    size_t i, kind = alksim_pick(s->src, 4);
    unsigned b = (unsigned)alksim_range(s->src, 0, 255);
    for (i = 0; i < n; i++) {
        if (kind == 0) p[i] = (unsigned char)("compressed cluster, "[(i + b) % 20]);
        else if (kind == 1) p[i] = (unsigned char)(b + i / 97);
        else if (kind == 2) p[i] = 0;
        else p[i] = (unsigned char)alksim_u32(s->src);
    }
}

/* One operation, its model, its judgment. */
static void qc_op(qc *s)
{
    size_t kind = alksim_pick(s->src, 10);
    uint64_t off, len;
    int rc;
    if (kind < 5) {
        /* a compressed write of one cluster */
        uint64_t k = alksim_range(s->src, 0, s->nclusters - 1);
        size_t n = qc_len(s, k);
        q2w_extent x;
        int taken, fits, refused;
        ALK_CHECK(qh_run(&s->h.img, &s->d, q2w_map(&s->h.img, k * s->cs, n, &x)) == Q2W_OK,
                  "map");
        taken = x.kind == Q2W_EXTENT_DATA || x.kind == Q2W_EXTENT_COMPRESSED;
        qc_content(s, s->buf, n);
        /* qemu's rule: a cluster whose stream does not come out shorter
         * than the cluster is written as it is (over anything); one that
         * does may only go where nothing is allocated */
        memcpy(s->pad, s->buf, n);
        memset(s->pad + n, 0, s->cs - n);
        fits = q2w_deflate(s->pad, s->cs, s->z, s->cs - 1, s->work) > 0;
        refused = taken && fits;
        alk_trace("compressed write of cluster %llu (%s, %s)", (unsigned long long)k,
                  taken ? "allocated" : "free", fits ? "shrinks" : "does not shrink");
        if (!refused) {
            memcpy(s->model + k * s->cs, s->buf, n);
            qc_note(s, k * s->cs, n);
        }
        rc = qc_run(s, q2w_write_compressed(&s->h.img, k * s->cs, s->buf, n, s->work,
                                            Q2W_CZ_WORK(s->cs)));
        if (s->crashed) return;
        ALK_CHECK(rc == (refused ? Q2W_ERR_UNSUPPORTED : Q2W_OK),
                  "compressed write of cluster %llu: %s", (unsigned long long)k,
                  q2w_strerror(rc));
        if (!refused) {
            ALK_CHECK(qh_run(&s->h.img, &s->d, q2w_map(&s->h.img, k * s->cs, n, &x)) == Q2W_OK &&
                          x.kind == (fits ? Q2W_EXTENT_COMPRESSED : Q2W_EXTENT_DATA),
                      "cluster %llu maps as kind %d after its compressed write",
                      (unsigned long long)k, x.kind);
        }
        return;
    }
    off = alksim_range(s->src, 0, s->size - 1);
    len = alksim_range(s->src, 1, 2 * (uint64_t)s->cs);
    if (len > s->size - off) len = s->size - off;
    if (kind < 7) {
        qc_content(s, s->buf, (size_t)len);
        memcpy(s->model + off, s->buf, (size_t)len);
        qc_note(s, off, len);
        rc = qc_run(s, q2w_write(&s->h.img, off, s->buf, (size_t)len));
    } else if (kind == 7) {
        memset(s->model + off, 0, (size_t)len);
        qc_note(s, off, len);
        rc = qc_run(s, q2w_write_zeroes(&s->h.img, off, len));
    } else if (kind == 8) {
        uint64_t a, b;
        /* whole clusters only (and the short last one at the end) */
        a = (off + s->cs - 1) / s->cs * s->cs;
        b = (off + len == s->size) ? s->size : (off + len) / s->cs * s->cs;
        if (b > a) {
            memset(s->model + a, 0, (size_t)(b - a));
            qc_note(s, a, b - a);
        }
        rc = qc_run(s, q2w_discard(&s->h.img, off, len));
    } else {
        rc = qc_run(s, q2w_flush(&s->h.img));
        if (rc == Q2W_OK) qc_flushed(s);
    }
    if (s->crashed) return;
    ALK_CHECK(rc == Q2W_OK, "operation %zu: %s", kind, q2w_strerror(rc));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t cs_choice[] = {512, 4096, 65536};
    alksim_source src;
    qc s;
    unsigned n_ops, i;
    uint32_t rbits;
    int version;
    alk_trace_reset();
    alksim_source_init_bytes(&src, data, size);
    memset(&s, 0, sizeof s);
    s.src = &src;
    s.cs = cs_choice[alksim_pick(&src, 3)];
    version = alksim_chance(&src, 1, 3) ? 2 : 3;
    rbits = version == 2 ? 16 : 1u << alksim_range(&src, 0, 6);
    s.nclusters = alksim_range(&src, 4, QC_MAX_CLUSTERS);
    s.size = s.nclusters * s.cs;
    if (s.cs > 512 && alksim_chance(&src, 1, 2))   /* a short last cluster */
        s.size -= alksim_range(&src, 1, s.cs / 512 - 1) * 512;
    alk_trace("cluster %u v%d refcount_bits %u size %llu", s.cs, version, rbits,
              (unsigned long long)s.size);
    ALK_CHECK(qh_make(&s.d, 32u << 20, version, s.cs, rbits, s.size, NULL, NULL) == Q2W_OK,
              "create");
    ALK_CHECK(qh_open(&s.h, &s.d, s.cs, (size_t)alksim_range(&src, 8, 16),
                      (size_t)alksim_range(&src, 8, 64), 1, 0) == Q2W_OK,
              "open");
    s.model = (unsigned char *)alk_malloc((size_t)s.size);
    s.snap = (unsigned char *)alk_malloc((size_t)s.size);
    s.buf = (unsigned char *)alk_malloc((size_t)s.size + 2 * s.cs);
    s.work = (unsigned char *)alk_malloc(Q2W_CZ_WORK(s.cs));
    s.pad = (unsigned char *)alk_malloc(s.cs);
    s.z = (unsigned char *)alk_malloc(s.cs);
    ALK_CHECK(s.model && s.snap && s.buf && s.work && s.pad && s.z, "out of memory");
    memset(s.model, 0, (size_t)s.size);
    if (alksim_chance(&src, 1, 3)) {
        /* some data, then a snapshot that shares it (its tables are copied
         * on the next write under them) */
        uint64_t k, n = alksim_range(&src, 1, s.nclusters);
        for (k = 0; k < n; k++) {
            size_t len = qc_len(&s, k);
            qc_content(&s, s.model + k * s.cs, len);
            ALK_CHECK(qh_run(&s.h.img, &s.d, q2w_write(&s.h.img, k * s.cs, s.model + k * s.cs,
                                                       len)) == Q2W_OK,
                      "fixture write");
        }
        if (rbits > 1) {
            ALK_CHECK(qh_run(&s.h.img, &s.d, q2w_snapshot_create(&s.h.img, "s", 1, 0, 0)) ==
                          Q2W_OK,
                      "the snapshot");
            memcpy(s.snap, s.model, (size_t)s.size);
            s.has_snap = 1;
        }
        ALK_CHECK(qh_run(&s.h.img, &s.d, q2w_flush(&s.h.img)) == Q2W_OK, "flush");
    }
    qh_durable_set(&s.durable, s.d.buf, s.d.len);
    qc_flushed(&s);
    if (alksim_chance(&src, 1, 3)) s.fail_at = (unsigned)alksim_range(&src, 1, 60);
    n_ops = (unsigned)alksim_range(&src, 1, QC_MAX_OPS);
    for (i = 0; i < n_ops && !s.crashed; i++) {
        qc_op(&s);
        if (s.crashed) break;
        qc_no_corruption(&s, 0, "after an operation");
        qc_view(&s, 0, "after an operation");
    }
    if (!s.crashed) {
        int rc = qc_run(&s, q2w_close(&s.h.img));
        ALK_CHECK(s.crashed || rc == Q2W_OK, "close: %s", q2w_strerror(rc));
    }
    qh_close_handle(&s.h);
    if (s.crashed) {
        qh_power_loss(&s.durable, &s.d);
        qc_no_corruption(&s, 0, "after the power loss");
        qc_view(&s, 1, "after the power loss");
    } else {
        qc_no_corruption(&s, 1, "after close");
        qc_view(&s, 1, "after close");
    }
    qh_disk_free(&s.d);
    alk_free(s.durable.buf);
    alk_free(s.model);
    alk_free(s.snap);
    alk_free(s.buf);
    alk_free(s.work);
    alk_free(s.pad);
    alk_free(s.z);
    return 0;
}

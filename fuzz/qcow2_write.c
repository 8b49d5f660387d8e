/* qcow2_write.c - fuzz target `qcow2_write`: qcow2w.h's writer against a
 * flat reference model of the virtual disk.
 *
 * The input's control bytes (alksim byte source, from the end) choose a
 * fixture - clean, backing file present, zero-flagged clusters (zero flag
 * without and with a preallocated cluster), pre-written data, snapshots
 * (data clusters and L2 tables shared with one to three nested snapshots)
 * - on a v2 or v3
 * image, a cluster size in {512, 4096, 65536, 2 MiB}, a refcount width, a
 * virtual size, a small op buffer and a small metadata cache (so evictions
 * and checkpoints happen mid-operation); then a bounded sequence of write /
 * write_zeroes / discard / flush / grow / snapshot create / snapshot delete
 * / snapshot apply (the model becomes the snapshot's copy and size) /
 * amend to the other version (the view unchanged, the header's version)
 * run through the resume loop. Payload
 * bytes come from the front of the input.
 *
 * Invariants, after every operation:
 *   - the resume loop ends under a fixed cap; every batch fits the buffer;
 *     no write touches the header cluster outside the writer's own fields;
 *   - the on-disk image has no corruption (qcow2w's checker: refcounts
 *     against recomputed reference paths, COPIED, alignment, reserved bits,
 *     references past EOF) - leaks are allowed between checkpoints;
 *   - the handle's view of the touched range equals the model, and every
 *     snapshot reads back byte-identical to its copy of the model (writes
 *     into shared clusters and tables must copy, never overwrite);
 *   - after a flush, a fresh read-only handle sees exactly the model;
 *   - a refusal (Q2W_ERR_LIMIT) is a clean outcome: the image stays
 *     consistent and the scenario ends there.
 * At the end: close, then no corruption and no leak, refcounts exact, and a
 * fresh handle sees the model. One input in eight also runs every batch
 * through the POSIX executor on a real file (qh_disk_mirror), which must
 * read what the model reads and write what it writes.
 *
 * Lab mode (inputs that start with "Q2WLAB01"): a backing file longer than
 * the disk, so a resize must zero what it would show past the old end (the
 * model reads zeros there), and kind 7: damage made on purpose - a
 * refcount too high, one too low, an L2 entry past the end of the file -
 * then the checker and each repair against what the model predicts (see
 * lab_damage).
 *
 * Inputs that start with "Q2WEDGE1" run as any other, but an offset the
 * scenario moves off a cluster's edge lands one byte after it rather than
 * before (the partial first cluster of a write, a zeroing or a discard
 * that then runs on over whole clusters); the prefix keeps every other
 * input's draws where they were. */
#define EDGE_MAGIC "Q2WEDGE1"
#define _POSIX_C_SOURCE 200809L /* the harness's POSIX mirror: mkstemp, pread */
#include "qcow2w.h"
#include "alksim.h"
#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h"

#include <errno.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS 24
#define DISK_CAP (160u << 20) /* snapshots of 2 MiB-cluster images copy a lot */
/* The largest write pick_len makes, plus slack. */
#define LARGE_CLUSTERS(cs) ((cs) == 512 ? 4096u : (cs) == 4096 ? 1024u : 16u)
#define BUF_BYTES(cs) (LARGE_CLUSTERS(cs) * (size_t)(cs) + 8192)

/* Fixtures: FIX_SNAP has data, then one to three snapshots with writes in
 * between (data clusters and L2 tables shared, nested snapshots). */
enum { FIX_CLEAN, FIX_BACKING, FIX_ZERO, FIX_DATA, FIX_SNAP, FIX_COUNT };
#define MAX_SNAPS 4 /* live at once; at most 3 + MAX_OPS creates in all */

typedef struct scenario {
    alksim_source src;
    qh_disk disk;
    qh_handle h;
    unsigned char *model, *backing;
    uint64_t size, backing_len, max_size;
    uint32_t cs;
    int version, fixture, has_backing;
    size_t slots, ops_cap;
    qh_snaps snaps;               /* each with the model as it was */
    unsigned snap_serial;
    int lab;                      /* lab mode (LAB_MAGIC) */
    int edge_after;               /* EDGE_MAGIC: off the edge is after it */
} scenario;

static unsigned live_snaps(const scenario *s)
{
    return qh_snaps_count(&s->snaps, QH_SNAP_LIVE);
}

static uint64_t pick_len(scenario *s, uint64_t room)
{
    uint64_t len;
    switch (alksim_pick(&s->src, 5)) {
    case 0: len = alksim_range(&s->src, 1, 64); break;
    case 1: len = alksim_range(&s->src, 1, s->cs); break;
    case 2: len = s->cs * alksim_range(&s->src, 1, 4); break;
    case 3: len = alksim_range(&s->src, 1, 4 * (uint64_t)s->cs + 4096); break;
    default: /* large: enough allocation to grow refcount metadata */
        len = s->cs * alksim_range(&s->src, 1, LARGE_CLUSTERS(s->cs));
        break;
    }
    if (len > room) len = room;
    return len;
}

static uint64_t pick_off(scenario *s)
{
    uint64_t off;
    if (alksim_bool(&s->src)) /* cluster aligned, often */
        off = s->cs * alksim_range(&s->src, 0, (s->size - 1) / s->cs);
    else
        off = alksim_range(&s->src, 0, s->size - 1);
    if (alksim_chance(&s->src, 1, 8) && off >= s->cs) {
        /* off the cluster edge: before it, or (EDGE_MAGIC) after it */
        if (s->edge_after && off + 1 < s->size) off += 1;
        else off -= 1;
    }
    return off;
}

static int do_op(scenario *s, int kind, uint64_t off, uint64_t len,
                 const unsigned char *buf, const char *when)
{
    int rc;
    q2w_image *img = &s->h.img;
    switch (kind) {
    case 0:
        qh_pad_begin(img, &s->disk);
        rc = qh_run(img, &s->disk, q2w_write(img, off, buf, (size_t)len));
        s->disk.pad_check = 0;
        if (rc == Q2W_OK) memcpy(s->model + off, buf, (size_t)len);
        break;
    case 1:
        rc = qh_run(img, &s->disk, q2w_write_zeroes(img, off, len));
        if (rc == Q2W_OK) memset(s->model + off, 0, (size_t)len);
        break;
    case 2:
        rc = qh_run(img, &s->disk, q2w_discard(img, off, len));
        if (rc == Q2W_OK)
            qh_model_discard(s->model, s->size, s->cs, s->version,
                             s->has_backing, off, len, NULL);
        break;
    case 3:
        rc = qh_run(img, &s->disk, q2w_flush(img));
        break;
    case 4: {
        /* the L1 moves only when the new size needs more entries than it
         * has, and then has exactly as many as needed */
        q2w_info a, b;
        uint64_t span = (uint64_t)s->cs * (s->cs / 8), need = (off + span - 1) / span;
        q2w_info_get(img, &a);
        rc = qh_run(img, &s->disk, q2w_resize(img, off));
        q2w_info_get(img, &b);
        ALK_CHECK(rc != Q2W_OK ||
                      (need <= a.l1_size ? b.l1_offset == a.l1_offset && b.l1_size == a.l1_size
                                         : b.l1_size == need),
                  "resize to %llu (%llu L1 entries needed): L1 of %u at %llu, was %u "
                  "at %llu", (unsigned long long)off, (unsigned long long)need,
                  b.l1_size, (unsigned long long)b.l1_offset, a.l1_size,
                  (unsigned long long)a.l1_offset);
        if (rc == Q2W_OK) s->size = off; /* model bytes past old size are 0 */
        break;
    }
    case 5: { /* snapshot create */
        static char name[Q2W_MAX_SNAPSHOT_NAME + 2];
        uint32_t t;
        qh_snap *sn;
        ALK_CHECK(live_snaps(s) < MAX_SNAPS,
                  "too many snapshots in the scenario");
        /* a name one byte past the limit is refused before anything is
         * planned */
        memset(name, 'n', Q2W_MAX_SNAPSHOT_NAME + 1);
        name[Q2W_MAX_SNAPSHOT_NAME + 1] = '\0';
        rc = q2w_snapshot_create(img, name, 1, 2, 3);
        ALK_CHECK(rc == Q2W_ERR_ARG, "a %u-byte snapshot name: %s",
                  Q2W_MAX_SNAPSHOT_NAME + 1, q2w_strerror(rc));
        {
            /* and so is a delete of that name: the name, its length */
            size_t nb;
            rc = q2w_snapshot_delete(img, name);
            q2w_batch(img, &nb);
            ALK_CHECK(rc == Q2W_ERR_ARG && nb == 0 && q2w_error(img)->what &&
                          !strcmp(q2w_error(img)->what, "snapshot name") &&
                          q2w_error(img)->index == Q2W_MAX_SNAPSHOT_NAME + 1,
                      "a delete of a %u-byte snapshot name: %s",
                      Q2W_MAX_SNAPSHOT_NAME + 1, q2w_strerror(rc));
        }
        /* names of varying length (0..12 dashes of suffix), so an entry
         * can be shorter than the one written before it; in lab mode
         * every other one is as long as a name may be (on small clusters
         * its entry is then refused as too long: Q2W_ERR_LIMIT) */
        snprintf(name, sizeof name, "snap%u%.*s", s->snap_serial,
                 (int)((s->snap_serial * 7 + 3) % 13), "-------------");
        if (s->lab && (s->snap_serial & 1)) {
            size_t k = strlen(name);
            memset(name + k, 'x', Q2W_MAX_SNAPSHOT_NAME - k);
            name[Q2W_MAX_SNAPSHOT_NAME] = '\0';
        }
        t = ++s->snap_serial;
        sn = qh_snap_begin_create(&s->snaps, name, s->model, s->size, t,
                                  t * 1000u + 1, ((uint64_t)t << 33) | 7);
        rc = qh_run(img, &s->disk,
                    q2w_snapshot_create(img, sn->name, sn->date_sec,
                                        sn->date_nsec, sn->vm_clock_ns));
        if (rc == Q2W_OK) {
            qh_snap_end_create(sn, 1);
        } else {
            qh_snap_cancel(&s->snaps, sn);
            if (rc == Q2W_ERR_LIMIT) {
                /* refused (refcount width): the image is unchanged */
                alk_trace("%s: %s", when, q2w_error(img)->what);
                return Q2W_OK;
            }
        }
        break;
    }
    case 8: { /* snapshot apply: off picks which live one; the disk
                 becomes its view and size (the model's bytes past the
                 size stay zeros) */
        qh_snap *sn = qh_snaps_nth(&s->snaps, QH_SNAP_LIVE, (unsigned)off);
        rc = qh_run(img, &s->disk, q2w_snapshot_apply(img, sn->name));
        if (rc == Q2W_OK) {
            memcpy(s->model, sn->model, (size_t)sn->size);
            memset(s->model + sn->size, 0, (size_t)(s->max_size - sn->size));
            s->size = sn->size;
        } else if (rc == Q2W_ERR_LIMIT) {
            /* refused (refcount width): the image is unchanged */
            alk_trace("%s: %s", when, q2w_error(img)->what);
            return Q2W_OK;
        }
        break;
    }
    case 9: { /* amend to the other version: the view unchanged, zero
                 flags gone on v2; a refusal (refcount width, a snapshot of
                 another size) changes nothing */
        int to = s->version == 3 ? 2 : 3;
        qh_header_rewrite = 1;
        rc = qh_run(img, &s->disk, q2w_amend_compat(img, to));
        qh_header_rewrite = 0;
        if (rc == Q2W_OK) {
            ALK_CHECK(q2w__be32(s->disk.buf + 4) == (uint32_t)to,
                      "%s: amended, but the header says version %u", when,
                      q2w__be32(s->disk.buf + 4));
            s->version = to;
        } else if (rc == Q2W_ERR_UNSUPPORTED || rc == Q2W_ERR_LIMIT) {
            ALK_CHECK(q2w__be32(s->disk.buf + 4) == (uint32_t)s->version,
                      "%s: a refused amend changed the version", when);
            alk_trace("%s: %s", when, q2w_error(img)->what);
            return Q2W_OK;
        }
        break;
    }
    default: { /* snapshot delete: off picks which live one */
        qh_snap *sn = qh_snaps_nth(&s->snaps, QH_SNAP_LIVE, (unsigned)off);
        qh_snap_begin_delete(sn);
        rc = qh_run(img, &s->disk, q2w_snapshot_delete(img, sn->name));
        qh_snap_end_delete(sn, rc == Q2W_OK);
        break;
    }
    }
    if (rc != Q2W_OK) {
        const q2w_error_info *e = q2w_error(img);
        alk_trace("%s: %s (%s, offset %llu, needed %llu)", when,
                  q2w_strerror(rc), e->what ? e->what : "",
                  (unsigned long long)e->offset,
                  (unsigned long long)e->needed);
        ALK_CHECK(rc == Q2W_ERR_LIMIT, "%s: unexpected %s (%s)", when,
                  q2w_strerror(rc), e->what ? e->what : "");
    }
    return rc;
}

/* Raw edit: turn some allocated data clusters into preallocated zero
 * clusters (ZERO flag kept with the offset and COPIED), a state qemu makes
 * and qcow2w must handle. The model reads zeros there. */
static void make_prealloc_zero(scenario *s, unsigned count)
{
    unsigned char *b = s->disk.buf;
    uint64_t l1 = q2w__be64(b + 40), l1n = q2w__be32(b + 36), i, j;
    for (i = 0; i < l1n && count; i++) {
        uint64_t l2 = q2w__be64(b + l1 + i * 8) & Q2W__OFF_MASK;
        if (!l2 || l2 + s->cs > s->disk.len) continue;
        for (j = 0; j < s->cs / 8 && count; j++) {
            uint64_t e = q2w__be64(b + l2 + j * 8);
            uint64_t v = (i * (s->cs / 8) + j) * s->cs;
            if (!(e & Q2W__OFF_MASK) || v >= s->size) continue;
            if (!alksim_bool(&s->src)) continue;
            q2w__put64(b + l2 + j * 8, e | Q2W__ZERO);
            memset(s->model + v, 0,
                   (size_t)(v + s->cs <= s->size ? s->cs : s->size - v));
            alk_trace("fixture: prealloc zero at virtual %llu",
                      (unsigned long long)v);
            count--;
        }
    }
}

/* Payload: up to 64 bytes from the input, repeated, with each 512-byte
 * sector stamped with its index so misplaced sectors show. */
static void fill(scenario *s, unsigned char *buf, uint64_t len)
{
    uint64_t have = len < 64 ? len : 64, i;
    alksim_bytes(&s->src, buf, (size_t)have);
    while (have < len) {
        uint64_t n = have < len - have ? have : len - have;
        memcpy(buf + have, buf, (size_t)n);
        have += n;
    }
    for (i = 0; i + 1 < len; i += 512) {
        buf[i] = (unsigned char)(i >> 9);
        buf[i + 1] = (unsigned char)(i >> 17);
    }
}

static int setup(scenario *s)
{
    static const uint32_t sizes[] = {512, 4096, 65536, 2u << 20};
    static const size_t slot_choices[] = {8, 9, 12, 32};
    static const size_t ops_choices[] = {8, 9, 16, 64};
    q2w_create_opts o;
    uint64_t i, max_clusters;
    int rc;
    memset(&o, 0, sizeof o);
    s->fixture = (int)alksim_pick(&s->src, FIX_COUNT);
    s->version = s->fixture == FIX_ZERO ? 3 : (alksim_bool(&s->src) ? 3 : 2);
    s->cs = sizes[alksim_weighted(&s->src, (const uint32_t[]){8, 6, 4, 1}, 4)];
    o.cluster_size = s->cs;
    o.version = s->version;
    o.refcount_bits = s->version == 2 ? 16u
                                      : 1u << alksim_range(&s->src, 0, 6);
    max_clusters = s->cs == 512 ? 12288 : s->cs == 4096 ? 2048
                 : s->cs == 65536 ? 128 : 4;
    s->size = alksim_range(&s->src, 1, max_clusters * s->cs / 512) * 512;
    s->max_size = 2 * max_clusters * s->cs;
    s->slots = slot_choices[alksim_pick(&s->src, 4)];
    qh_max_frees = alksim_bool(&s->src) ? 0 : (size_t)alksim_range(&s->src, 1, 4);
    s->ops_cap = ops_choices[alksim_pick(&s->src, 4)];
    s->has_backing = s->fixture == FIX_BACKING;
    o.size = s->size;
    /* The documented defaults stand in for the values they mean on half
     * of the images (by the size's parity, so that no draw moves); the
     * header read back below must hold the values themselves. */
    if ((s->size / 512) & 1) {
        if (o.cluster_size == 65536) o.cluster_size = 0;
        if (o.refcount_bits == 16) o.refcount_bits = 0;
        if (o.version == 3) o.version = 0;
    }
    alk_trace("fixture %d v%d cluster %u refcount_bits %u size %llu slots %zu"
              " ops %zu frees %zu", s->fixture, s->version, s->cs,
              o.refcount_bits, (unsigned long long)s->size, s->slots,
              s->ops_cap, qh_max_frees);
    s->model = (unsigned char *)alk_calloc(1, (size_t)s->max_size);
    ALK_CHECK(s->model != NULL, "out of memory");
    if (s->has_backing) {
        s->backing_len = alksim_range(&s->src, 0, s->size * 5 / 4 / 512) * 512;
        if (s->lab) /* longer than the disk: a resize must hide the rest */
            s->backing_len = alksim_range(&s->src, s->size / 512 + 1,
                                          s->size * 2 / 512) * 512;
        s->backing = (unsigned char *)alk_malloc((size_t)s->backing_len + 1);
        ALK_CHECK(s->backing != NULL, "out of memory");
        fill(s, s->backing, s->backing_len);
        /* a hole, as sparse backing files have: its second quarter reads
         * as zeros (no draw: every input's scenario stays) */
        memset(s->backing + s->backing_len / 4, 0,
               (size_t)(s->backing_len / 2 - s->backing_len / 4));
        for (i = 0; i < s->backing_len && i < s->size; i++)
            s->model[i] = s->backing[i];
        o.backing = "backing.img";
        o.backing_fmt = "raw";
        alk_trace("backing of %llu bytes", (unsigned long long)s->backing_len);
    }
    qh_disk_init(&s->disk, DISK_CAP);
    s->disk.backing = s->backing;
    s->disk.backing_len = s->backing_len;
    rc = qh_create(&s->disk, &o);
    ALK_CHECK(rc == Q2W_OK, "create: %s", q2w_strerror(rc));
    s->disk.cluster_size = s->cs;
    qh_assert_consistent(&s->disk, 1, "fresh image");
    rc = qh_open(&s->h, &s->disk, s->cs, s->slots, s->ops_cap, 1,
                 s->has_backing);
    ALK_CHECK(rc == Q2W_OK, "open: %s (%s)", q2w_strerror(rc),
              q2w_error(&s->h.img)->what);
    {
        q2w_info in;
        q2w_info_get(&s->h.img, &in);
        uint64_t span = (uint64_t)s->cs * (s->cs / 8); /* disk one L1 entry maps */
        ALK_CHECK(in.cluster_size == s->cs && in.version == s->version &&
                      in.refcount_bits == (o.refcount_bits ? o.refcount_bits
                                                           : 16u) &&
                      in.size == s->size && in.l1_size == (s->size + span - 1) / span,
                  "created image: cluster %u v%d refcount_bits %u size %llu, L1 of %u",
                  in.cluster_size, in.version, in.refcount_bits,
                  (unsigned long long)in.size, in.l1_size);
    }
    if (s->fixture == FIX_ZERO || s->fixture == FIX_DATA ||
        s->fixture == FIX_SNAP) {
        /* Pre-written data (and zeroed / discarded ranges), closed and
         * reopened so the fixture starts from a settled image. */
        unsigned n = (unsigned)alksim_range(&s->src, 1, 6);
        unsigned char *buf = (unsigned char *)alk_malloc(BUF_BYTES(s->cs));
        ALK_CHECK(buf != NULL, "out of memory");
        for (i = 0; i < n; i++) {
            uint64_t off = pick_off(s), len = pick_len(s, s->size - off);
            int kind = s->fixture == FIX_ZERO && (i & 1) ? 1 + (int)(i & 2) / 2
                                                         : 0;
            fill(s, buf, len);
            alk_trace("fixture op %d [%llu,+%llu)", kind,
                      (unsigned long long)off, (unsigned long long)len);
            if (do_op(s, kind, off, len, buf, "fixture") != Q2W_OK) break;
            if (s->fixture == FIX_SNAP && live_snaps(s) < 3 &&
                (i == 0 || alksim_bool(&s->src)))
                do_op(s, 5, 0, 0, buf, "fixture snapshot");
        }
        alk_free(buf);
        rc = qh_run(&s->h.img, &s->disk, q2w_close(&s->h.img));
        ALK_CHECK(rc == Q2W_OK, "fixture close: %s", q2w_strerror(rc));
        qh_close_handle(&s->h);
        if (s->fixture == FIX_ZERO) make_prealloc_zero(s, 3);
        qh_assert_consistent(&s->disk, 1, "fixture");
        rc = qh_open(&s->h, &s->disk, s->cs, s->slots, s->ops_cap, 1,
                     s->has_backing);
        ALK_CHECK(rc == Q2W_OK, "reopen: %s", q2w_strerror(rc));
        qh_assert_snapshots(&s->h, &s->disk, &s->snaps, "fixture");
    }
    return 0;
}

/* ---- lab mode: damage, repair, resize over a longer backing file ----------
 * An input that starts with LAB_MAGIC (a seed-mode input never does) runs
 * the same scenario on the rest of its bytes, with a backing file longer
 * than the disk (so a resize must hide what the backing file has past the
 * old end: q2w__resized), resizes more often, and one more transition,
 * kind 7: close, damage the image on purpose, then the checker and its
 * repairs, each result predicted by the model below. */
#define LAB_MAGIC "Q2WLAB01"
/* The same, with the damages after PAST_EOF too (LAB01 inputs keep the
 * three they were found with). */
#define LAB2_MAGIC "Q2WLAB02"
#define LAB3_MAGIC "Q2WLAB03" /* and COPIED, NO_BLOCK */

enum { DMG_LEAK, DMG_LOW, DMG_PAST_EOF, DMG_COUNT, DMG_DIRTY = DMG_COUNT, DMG_MAX,
       DMG_COUNT2, DMG_COPIED = DMG_COUNT2, DMG_NO_BLOCK, DMG_COUNT3 };

/* The image's own refcounts, read and written here from the format (not
 * through qcow2w): the block of cluster c, its entry width. 0 when the
 * refcount table has no block for c. */
static uint64_t lab_rc_at(const scenario *s, uint64_t c, unsigned *bits)
{
    const unsigned char *b = s->disk.buf;
    unsigned order = s->version == 3 ? (unsigned)q2w__be32(b + 96) : 4u;
    uint64_t epb = (uint64_t)s->cs * 8 >> order, rt = q2w__be64(b + 48);
    uint64_t rt_entries = (uint64_t)q2w__be32(b + 56) * s->cs / 8, blk;
    *bits = 1u << order;
    if (c / epb >= rt_entries) return 0;
    blk = q2w__be64(b + rt + c / epb * 8) & ~511ull;
    if (!blk || blk + s->cs > s->disk.len) return 0;
    return blk * 8 + (c % epb) * *bits; /* a bit address */
}

static uint64_t lab_rc_get(const scenario *s, uint64_t at, unsigned bits)
{
    const unsigned char *p = s->disk.buf + at / 8;
    uint64_t v = 0;
    unsigned i;
    if (bits < 8) return (uint64_t)(*p >> (at % 8)) & ((1u << bits) - 1);
    for (i = 0; i < bits / 8; i++) v = (v << 8) | p[i];
    return v;
}

static void lab_rc_set(scenario *s, uint64_t at, unsigned bits, uint64_t v)
{
    unsigned char *p = s->disk.buf + at / 8;
    unsigned i;
    if (bits < 8) {
        unsigned mask = ((1u << bits) - 1) << (at % 8);
        *p = (unsigned char)((*p & ~mask) | ((unsigned)v << (at % 8) & mask));
        return;
    }
    for (i = 0; i < bits / 8; i++)
        p[i] = (unsigned char)(v >> (bits - 8 - 8 * i));
}

/* Paths of the active tables to clusters in [lo, hi) that carry COPIED:
 * L1 entries to L2 tables, L2 entries to data (compressed ones never). */
static uint64_t lab_copied_into(const scenario *s, uint64_t lo, uint64_t hi)
{
    const unsigned char *b = s->disk.buf;
    uint64_t l1 = q2w__be64(b + 40), l1n = q2w__be32(b + 36), i, j, n = 0;
    for (i = 0; i < l1n; i++) {
        uint64_t l1e = q2w__be64(b + l1 + i * 8), l2 = l1e & Q2W__OFF_MASK;
        if (!l2) continue;
        n += (l1e & Q2W__COPIED) && l2 / s->cs >= lo && l2 / s->cs < hi;
        for (j = 0; j < s->cs / 8; j++) {
            uint64_t e = q2w__be64(b + l2 + j * 8), c = (e & Q2W__OFF_MASK) / s->cs;
            n += !(e & Q2W__COMPRESSED) && (e & Q2W__COPIED) && (e & Q2W__OFF_MASK) &&
                 c >= lo && c < hi;
        }
    }
    return n;
}

/* What the checker must say; the repair's counters. */
typedef struct lab_expect {
    uint64_t corruptions, leaks, leaks_fixed, corruptions_fixed, copied_fixed;
    int dirty_cleared;
} lab_expect;

static void lab_check(scenario *s, unsigned flags, const lab_expect *x,
                      const char *when)
{
    q2w_check_result r;
    int rc = qh_check(&s->disk, flags, &r);
    alk_trace("%s: check flags %u: %s, %llu corruptions, %llu leaks, fixed "
              "%llu leaks %llu corruptions %llu copied", when, flags,
              q2w_strerror(rc), (unsigned long long)r.corruptions,
              (unsigned long long)r.leaks, (unsigned long long)r.leaks_fixed,
              (unsigned long long)r.corruptions_fixed,
              (unsigned long long)r.copied_fixed);
    if (r.corruptions != x->corruptions || r.leaks != x->leaks)
        qh_print_findings(&r);
    ALK_CHECK(rc == Q2W_OK, "%s: check: %s", when, q2w_strerror(rc));
    if (flags) qh_assert_repair_end(&s->disk, &r, when);
    ALK_CHECK(r.corruptions == x->corruptions && r.leaks == x->leaks &&
                  r.leaks_fixed == x->leaks_fixed &&
                  r.corruptions_fixed == x->corruptions_fixed &&
                  r.copied_fixed == x->copied_fixed && r.dirty_cleared == x->dirty_cleared,
              "%s (flags %u): %llu corruptions, %llu leaks, %llu + %llu "
              "fixed, %llu COPIED fixed, dirty bit cleared %d; the model: %llu, "
              "%llu, %llu + %llu",
              when, flags, (unsigned long long)r.corruptions,
              (unsigned long long)r.leaks, (unsigned long long)r.leaks_fixed,
              (unsigned long long)r.corruptions_fixed,
              (unsigned long long)r.copied_fixed, r.dirty_cleared,
              (unsigned long long)x->corruptions,
              (unsigned long long)x->leaks,
              (unsigned long long)x->leaks_fixed,
              (unsigned long long)x->corruptions_fixed);
}

/* Kind 7 on a closed, exact image. The damage:
 *   LEAK      a refcount one too high: a free cluster (in the file or the
 *             first one past its end) or one shared by two paths or more
 *             (COPIED clear either way): one leak, nothing else;
 *   LOW       a refcount one too low on a metadata cluster with one path
 *             and no COPIED flag (the header, the refcount table, the
 *             first refcount block, the active L1): one corruption;
 *   PAST_EOF  an L2 entry of a table only the active L1 holds sent past
 *             the end of the file: that path's reference is a corruption
 *             and its old cluster has one path less (one leak);
 * and in LAB02 inputs:
 *   DIRTY     the dirty bit (v3): no finding; a writable open is refused
 *             (DIRTY, the field at 72); only REPAIR_ALL clears the bit;
 *   MAX       an active L2 table (one path) counted at the largest value
 *             its width holds (2 bits and up): one leak, and its L1 entry's
 *             COPIED flag now disagrees (one corruption, gone with the
 *             leak: a repair's own count has none); a snapshot, which
 *             would add a path, is refused (LIMIT) and changes neither;
 * and in LAB03 inputs:
 *   COPIED    an active data cluster (refcount 1) whose L2 entry loses its
 *             COPIED flag: one corruption, which either repair sets right
 *             (copied_fixed 1: nothing else was wrong), the image as before;
 *   NO_BLOCK  the refcount-table entry of the first range past the first
 *             that has a block, zeroed (so that ranges after it are still
 *             to be scanned): every cluster the old block counted
 *             (but itself, now unreferenced) is a corruption, so is every
 *             path with COPIED to one of them, and the old block is a leak
 *             when it lay outside its range; a leaks repair fixes no
 *             corruption; REPAIR_ALL makes a block (every count it lost
 *             fixed; the COPIED flags are then right) and leaves the image
 *             clean (the block is new: the old image is put back after).
 * The model of repair: leaks are lowered by either repair, a refcount
 * below its references raised only by REPAIR_ALL, a reference past the
 * end of the file repaired by neither. A refcount repair leaves the image
 * byte for byte as before the damage; after PAST_EOF the old image is put
 * back. Then the scenario goes on with a fresh handle. */

/* NO_BLOCK: a write through a writable handle on the damaged image into a
 * data cluster whose refcount block is gone and whose L2 entry has no
 * COPIED flag (shared with a snapshot: two paths or more), under an L2
 * table of its own (COPIED in the L1). Refcounts count reference paths
 * and COPIED is set exactly when the refcount is 1; the writer cannot
 * count this cluster's paths, so it must not write it in place: either
 * the write is refused, or every snapshot still reads back as it was.
 * The damaged image is put back after. */
static void lab_probe_shared_uncounted(scenario *s, const char *when)
{
    const unsigned char *b = s->disk.buf;
    uint64_t l1 = q2w__be64(b + 40), l1n = q2w__be32(b + 36), i, j, v = 0;
    size_t len = s->disk.len;
    unsigned char *damaged, byte = 0x5a;
    unsigned bits;
    qh_handle t;
    int rc, found = 0;
    for (i = 0; i < l1n && !found; i++) {
        uint64_t l1e = q2w__be64(b + l1 + i * 8), l2 = l1e & Q2W__OFF_MASK;
        if (!(l1e & Q2W__COPIED) || !l2) continue;
        for (j = 0; j < s->cs / 8 && !found; j++) {
            uint64_t e = q2w__be64(b + l2 + j * 8), h = e & Q2W__OFF_MASK;
            v = (i * (s->cs / 8) + j) * s->cs;
            if ((e & (Q2W__COMPRESSED | Q2W__COPIED | Q2W__ZERO)) || !h ||
                h + s->cs > len || v >= s->size || lab_rc_at(s, h / s->cs, &bits))
                continue;
            found = 1;
        }
    }
    if (!found) return;
    alk_trace("%s: write into shared cluster at virtual %llu without a block", when,
              (unsigned long long)v);
    damaged = (unsigned char *)alk_malloc(len);
    ALK_CHECK(damaged != NULL, "out of memory");
    memcpy(damaged, s->disk.buf, len);
    rc = qh_open(&t, &s->disk, s->cs, s->slots, s->ops_cap, 1, s->has_backing);
    if (rc == Q2W_OK) {
        rc = qh_run(&t.img, &s->disk, q2w_write(&t.img, v, &byte, 1));
        if (rc == Q2W_OK)
            qh_assert_snapshots(&t, &s->disk, &s->snaps,
                                "a write into a shared cluster without a refcount block");
    }
    qh_close_handle(&t);
    memcpy(s->disk.buf, damaged, len);
    s->disk.len = len;
    alk_free(damaged);
}

/* The damage drawn for lab_damage: where it went and what the check must
 * now find (x). */
typedef struct lab_dmg {
    int kind, found;
    uint64_t target, at, where, was;
    uint64_t uncounted; /* NO_BLOCK: the clusters that lost their count */
    unsigned bits;
    lab_expect x;
} lab_dmg;

/* Makes damage d->kind in the closed image, when the image has a place for
 * it (d->found); ncl: the image's clusters. */
static void lab_make_damage(scenario *s, lab_dmg *d, uint64_t ncl)
{
    unsigned char *b = s->disk.buf;
    int dmg = d->kind, found = 0;
    uint64_t target = 0, at = 0, where = 0, was = 0, uncounted = 0, c;
    unsigned bits = 16;
    lab_expect x;
    memset(&x, 0, sizeof x);
    if (dmg == DMG_LEAK) {
        uint64_t skip = alksim_range(&s->src, 0, 7);
        for (c = 1; c <= ncl && !found; c++) {
            uint64_t a = lab_rc_at(s, c, &bits), v;
            if (!a) continue;
            v = lab_rc_get(s, a, bits);
            if ((v == 0 || v >= 2) && (bits == 64 || v + 1 < 1ull << bits) &&
                (skip-- == 0 || c == ncl)) {
                target = c, at = a, was = v, found = 1;
            }
        }
        if (found) {
            lab_rc_set(s, at, bits, was + 1);
            x.leaks = 1;
        }
    } else if (dmg == DMG_LOW) {
        uint64_t cand[4], a;
        unsigned n = 0, k;
        cand[n++] = 0;
        cand[n++] = q2w__be64(b + 48) / s->cs;
        cand[n++] = (q2w__be64(b + q2w__be64(b + 48)) & ~511ull) / s->cs;
        if (q2w__be32(b + 36)) cand[n++] = q2w__be64(b + 40) / s->cs;
        k = (unsigned)alksim_pick(&s->src, n);
        target = cand[k];
        a = lab_rc_at(s, target, &bits);
        if (a && lab_rc_get(s, a, bits) == 1) {
            at = a, was = 1, found = 1;
            lab_rc_set(s, at, bits, 0);
            x.corruptions = 1;
        }
    } else if (dmg == DMG_DIRTY) {
        if (s->version == 3) {
            b[79] |= 1;
            found = 1;
        }
    } else if (dmg == DMG_COPIED) {
        uint64_t l1 = q2w__be64(b + 40), l1n = q2w__be32(b + 36), i, j;
        for (i = 0; i < l1n && !found; i++) {
            uint64_t l1e = q2w__be64(b + l1 + i * 8), l2 = l1e & Q2W__OFF_MASK;
            if (!(l1e & Q2W__COPIED) || !l2) continue;
            for (j = 0; j < s->cs / 8 && !found; j++) {
                uint64_t e = q2w__be64(b + l2 + j * 8);
                if ((e & Q2W__COMPRESSED) || !(e & Q2W__COPIED)) continue;
                where = l2 + j * 8, was = e, found = 1;
                target = (e & Q2W__OFF_MASK) / s->cs;
            }
        }
        if (found) {
            q2w__put64(b + where, was & ~Q2W__COPIED);
            x.corruptions = 1;
        }
    } else if (dmg == DMG_NO_BLOCK) {
        unsigned order = s->version == 3 ? (unsigned)q2w__be32(b + 96) : 4u;
        uint64_t epb = (uint64_t)s->cs * 8 >> order, rt = q2w__be64(b + 48);
        uint64_t rt_entries = (uint64_t)q2w__be32(b + 56) * s->cs / 8, i, k;
        bits = 1u << order;
        for (i = 1; i < rt_entries && !found; i++) {
            uint64_t blk = q2w__be64(b + rt + i * 8) & ~511ull;
            if (!blk || blk + s->cs > s->disk.len) continue;
            where = rt + i * 8, was = q2w__be64(b + where), found = 1;
            target = blk / s->cs;
            for (k = 0; k < epb; k++) {
                uint64_t cl = i * epb + k;
                if (cl != target && lab_rc_get(s, blk * 8 + k * bits, bits))
                    uncounted++;
            }
            /* each is a corruption, and each path with COPIED to one is
             * another (a count of 0 is not 1) */
            x.corruptions = uncounted + lab_copied_into(s, i * epb, (i + 1) * epb);
            /* a block outside its own range is still counted there, by
             * nothing now: a leak */
            x.leaks = target / epb != i;
        }
        if (found)
            q2w__put64(b + where, 0);
    } else if (dmg == DMG_MAX) {
        uint64_t l1 = q2w__be64(b + 40), l1n = q2w__be32(b + 36), i;
        for (i = 0; i < l1n && !found; i++) {
            uint64_t l1e = q2w__be64(b + l1 + i * 8), l2 = l1e & Q2W__OFF_MASK, a;
            if (!(l1e & Q2W__COPIED) || !l2) continue;
            a = lab_rc_at(s, l2 / s->cs, &bits);
            if (a && bits >= 2 && lab_rc_get(s, a, bits) == 1)
                target = l2 / s->cs, at = a, was = 1, found = 1;
        }
        if (found) {
            lab_rc_set(s, at, bits, bits == 64 ? ~0ull : (1ull << bits) - 1);
            x.leaks = 1;
            x.corruptions = 1; /* its COPIED flag now disagrees */
        }
    } else {
        uint64_t l1 = q2w__be64(b + 40), l1n = q2w__be32(b + 36), i, j;
        uint64_t skip = alksim_range(&s->src, 0, 15);
        for (i = 0; i < l1n && !found; i++) {
            uint64_t l1e = q2w__be64(b + l1 + i * 8), l2 = l1e & Q2W__OFF_MASK;
            if (!(l1e & Q2W__COPIED) || !l2) continue;
            for (j = 0; j < s->cs / 8 && !found; j++) {
                uint64_t e = q2w__be64(b + l2 + j * 8);
                if ((e & Q2W__COMPRESSED) || !(e & Q2W__OFF_MASK)) continue;
                if (skip-- == 0) where = l2 + j * 8, was = e, found = 1;
            }
        }
        if (found) {
            uint64_t host = (ncl + alksim_range(&s->src, 0, 3)) * s->cs;
            q2w__put64(b + where, (was & ~Q2W__OFF_MASK) | host);
            target = host / s->cs;
            x.corruptions = 1;
            x.leaks = 1;
        }
    }
    d->found = found;
    d->target = target, d->at = at, d->where = where, d->was = was;
    d->uncounted = uncounted;
    d->bits = bits;
    d->x = x;
}

/* A damaged image opened again: a dirty one is refused as DIRTY; a count
 * at its maximum refuses a snapshot before writing anything. */
static void lab_probe_damaged(scenario *s, const char *when, const lab_dmg *d)
{
    int dmg = d->kind, found = d->found, rc;
    const lab_expect x = d->x;
    if (found && (dmg == DMG_DIRTY || dmg == DMG_MAX)) {
        qh_handle t;
        uint64_t w0;
        rc = qh_open(&t, &s->disk, s->cs, s->slots, s->ops_cap, 1, s->has_backing);
        if (dmg == DMG_DIRTY) {
            ALK_CHECK(rc == Q2W_ERR_DIRTY && q2w_error(&t.img)->offset == 72,
                      "%s: a writable open of a dirty image: %s at %llu", when,
                      q2w_strerror(rc), (unsigned long long)q2w_error(&t.img)->offset);
        } else {
            ALK_CHECK(rc == Q2W_OK, "%s: open: %s", when, q2w_strerror(rc));
            w0 = s->disk.writes;
            rc = qh_run(&t.img, &s->disk, q2w_snapshot_create(&t.img, "max", 0, 0, 0));
            /* refused before anything was written: the check that a count
             * would overflow comes first */
            ALK_CHECK(s->disk.writes == w0, "%s: the refused snapshot wrote %llu times",
                      when, (unsigned long long)(s->disk.writes - w0));
            ALK_CHECK(rc == Q2W_ERR_LIMIT,
                      "%s: a snapshot over a refcount at its maximum: %s (%s)", when,
                      q2w_strerror(rc),
                      q2w_error(&t.img)->what ? q2w_error(&t.img)->what : "");
            rc = qh_run(&t.img, &s->disk, q2w_close(&t.img));
            ALK_CHECK(rc == Q2W_OK, "%s: close: %s", when, q2w_strerror(rc));
            lab_check(s, 0, &x, "a snapshot refused at the maximum");
        }
        qh_close_handle(&t);
    }
}

/* The repair of the damaged image with a read, a write or a flush failing,
 * and through q2w_posix_io on a file, each judged; the damaged image (len
 * bytes) is in s->disk again at the end. */
static void lab_repair_ways(scenario *s, const char *when, unsigned flags,
                            uint64_t len)
{
    {
        /* the same repair with a read, a write or a flush failing
         * (reported exactly, nothing done after it), then through
         * q2w_posix_io; the damaged image is put back after each */
        unsigned char *damaged = (unsigned char *)alk_malloc(len);
        int kind;
        ALK_CHECK(damaged != NULL, "out of memory");
        memcpy(damaged, s->disk.buf, len);
        for (kind = 1; kind <= 3; kind++) {
            /* a read, write or flush anywhere in the repair: the draw
             * spread over the calls of that kind a clean run makes
             * (which the counting run checks) */
            unsigned span = kind == 1 ? 41 : 2;
            unsigned nth = 1 + (unsigned)alksim_range(&s->src, 0, span - 1);
            qh_check_faulty(&s->disk, flags, kind, 0); /* counts the calls */
            memcpy(s->disk.buf, damaged, len);
            s->disk.len = (size_t)len;
            nth = 1 + (unsigned)((uint64_t)(nth - 1) * qh_faulty_calls / span);
            qh_check_faulty(&s->disk, flags, kind, nth);
            memcpy(s->disk.buf, damaged, len);
            s->disk.len = (size_t)len;
        }
#ifndef Q2W_NO_STDIO
        {
            /* the same repair through q2w_posix_io on a file holding the
             * damaged image, with a stale errno from before (EINTR: a
             * retry that looked at errno without a failed call would
             * read or write forever): the same counters, and the same
             * bytes as the model's repair below */
            char path[] = "/tmp/qcow2_lab.XXXXXX";
            int fd = mkstemp(path);
            q2w_io io;
            q2w_fdbox box;
            q2w_check_result pr, mr;
            size_t need = 0;
            void *work;
            int prc, mrc;
            unsigned char *got;
            ALK_CHECK(fd >= 0, "lab: mkstemp");
            unlink(path);
            ALK_CHECK(q2w_pwrite_full(fd, 0, s->disk.buf, (size_t)len) == 0, "lab: fill");
            q2w_posix_io(&io, fd, &box);
            ALK_CHECK(io.file_size == len, "lab: posix io sees %llu bytes of %llu",
                      (unsigned long long)io.file_size, (unsigned long long)len);
            ALK_CHECK(q2w_check_work_size(&io, &need, NULL) == Q2W_OK, "lab: work size");
            work = alk_malloc(need ? need : 1);
            ALK_CHECK(work != NULL, "out of memory");
            errno = EINTR;
            prc = q2w_check(&io, work, need, flags, &pr);
            alk_free(work);
            mrc = qh_check(&s->disk, flags, &mr);
            ALK_CHECK(prc == mrc && pr.corruptions == mr.corruptions && pr.leaks == mr.leaks &&
                          pr.leaks_fixed == mr.leaks_fixed &&
                          pr.corruptions_fixed == mr.corruptions_fixed &&
                          pr.dirty_cleared == mr.dirty_cleared && pr.check_errors == 0,
                      "%s: the repair through q2w_posix_io: %s, %llu/%llu fixed, %llu "
                      "check errors; the model's %s, %llu/%llu", when, q2w_strerror(prc),
                      (unsigned long long)pr.leaks_fixed,
                      (unsigned long long)pr.corruptions_fixed,
                      (unsigned long long)pr.check_errors, q2w_strerror(mrc),
                      (unsigned long long)mr.leaks_fixed,
                      (unsigned long long)mr.corruptions_fixed);
            got = (unsigned char *)alk_malloc(s->disk.len ? s->disk.len : 1);
            ALK_CHECK(got != NULL, "out of memory");
            ALK_CHECK(q2w_pread_full(fd, 0, got, s->disk.len) == 0 &&
                          !memcmp(got, s->disk.buf, s->disk.len),
                      "%s: the file repaired through q2w_posix_io differs", when);
            alk_free(got);
            close(fd);
            /* the model's repair is judged from the damaged image again */
            memcpy(s->disk.buf, damaged, len);
            s->disk.len = (size_t)len;
        }
#endif
        alk_free(damaged);
    }
}

/* One damage drawn (lab_make_damage), the check must see it exactly, the
 * damaged image probed (lab_probe_damaged), repaired in every way
 * (lab_repair_ways, then the model's), and the repair must give back the
 * image from before the damage. */
static void lab_damage(scenario *s, const char *when)
{
    unsigned char *saved;
    uint64_t len, ncl, target, at, where, was, uncounted;
    unsigned bits, flags;
    int dmg = (int)alksim_pick(&s->src, s->lab == 3   ? DMG_COUNT3
                                         : s->lab == 2 ? DMG_COUNT2
                                                       : DMG_COUNT),
        rc, found;
    lab_expect x, none;
    lab_dmg d;
    memset(&d, 0, sizeof d);
    memset(&none, 0, sizeof none);
    rc = qh_run(&s->h.img, &s->disk, q2w_close(&s->h.img));
    ALK_CHECK(rc == Q2W_OK, "%s: close: %s", when, q2w_strerror(rc));
    qh_close_handle(&s->h);
    lab_check(s, 0, &none, "before the damage");
    len = s->disk.len;
    ncl = (len + s->cs - 1) / s->cs;
    saved = (unsigned char *)alk_malloc(len);
    ALK_CHECK(saved != NULL, "out of memory");
    memcpy(saved, s->disk.buf, len);
    d.kind = dmg;
    lab_make_damage(s, &d, ncl);
    found = d.found, target = d.target, at = d.at, where = d.where, was = d.was;
    uncounted = d.uncounted, bits = d.bits, x = d.x;
    alk_trace("%s: damage %d %s at cluster %llu (was %llu)", when, dmg,
              found ? "made" : "not possible", (unsigned long long)target,
              (unsigned long long)was);
    lab_check(s, 0, &x, "damaged");
    if (found && dmg == DMG_NO_BLOCK) lab_probe_shared_uncounted(s, when);
    lab_probe_damaged(s, when, &d);
    if (found) {
        lab_expect fixed = x, after = x;
        /* a leaks-only repair first, or straight to REPAIR_ALL */
        flags = alksim_bool(&s->src) ? Q2W_CHECK_REPAIR_LEAKS
                                     : Q2W_CHECK_REPAIR_ALL;
        fixed.leaks_fixed = x.leaks;
        fixed.corruptions_fixed =
            flags == Q2W_CHECK_REPAIR_ALL && dmg == DMG_LOW ? 1 : 0;
        fixed.dirty_cleared = flags == Q2W_CHECK_REPAIR_ALL && dmg == DMG_DIRTY;
        if (dmg == DMG_MAX) /* the leak's repair makes the flag right again */
            fixed.corruptions = 0;
        if (dmg == DMG_COPIED) { /* either repair sets the flag right */
            fixed.corruptions = 0;
            fixed.copied_fixed = 1;
        }
        if (dmg == DMG_NO_BLOCK && flags == Q2W_CHECK_REPAIR_ALL)
            fixed.corruptions = fixed.corruptions_fixed = uncounted;
        lab_repair_ways(s, when, flags, len);
        lab_check(s, flags, &fixed, "repair");
        after.leaks = 0;
        after.corruptions = dmg == DMG_MAX || dmg == DMG_COPIED ||
                                    (dmg == DMG_NO_BLOCK && fixed.corruptions_fixed)
                                ? 0
                                : x.corruptions - fixed.corruptions_fixed;
        lab_check(s, 0, &after, "after the repair");
        if (after.corruptions && dmg == DMG_NO_BLOCK) {
            lab_expect all = none;
            all.corruptions = all.corruptions_fixed = uncounted;
            lab_check(s, Q2W_CHECK_REPAIR_ALL, &all, "repair all");
            lab_check(s, 0, &none, "after repair all");
        }
        if (dmg == DMG_NO_BLOCK) /* a new block, somewhere: the old image back */
            memcpy(s->disk.buf, saved, len), s->disk.len = (size_t)len;
        if (after.corruptions && dmg == DMG_LOW) {
            ALK_CHECK(memcmp(s->disk.buf + at / 8, saved + at / 8, 1 +
                             (bits - 1) / 8) != 0,
                      "repair of leaks changed a refcount below its count");
            fixed.leaks_fixed = 0;
            fixed.corruptions_fixed = 1;
            lab_check(s, Q2W_CHECK_REPAIR_ALL, &fixed, "repair all");
            lab_check(s, 0, &none, "after repair all");
        }
        if (dmg == DMG_DIRTY && flags == Q2W_CHECK_REPAIR_LEAKS) {
            lab_expect all = none;
            all.dirty_cleared = 1;
            lab_check(s, Q2W_CHECK_REPAIR_ALL, &all, "repair all");
        }
        if (dmg == DMG_MAX && s->disk.len != len) {
            /* the refused snapshot's clusters, freed, at the end: back to
             * the image before the damage */
            ALK_CHECK(s->disk.len > len && memcmp(s->disk.buf, saved, len) == 0,
                      "%s: the image after the refused snapshot and the repair "
                      "differs before its old end", when);
            s->disk.len = (size_t)len;
        }
        if (dmg == DMG_PAST_EOF) {
            ALK_CHECK(q2w__be64(s->disk.buf + where) ==
                          ((was & ~Q2W__OFF_MASK) | target * s->cs),
                      "repair changed the entry past the end of the file");
            memcpy(s->disk.buf, saved, len);
        }
        ALK_CHECK(s->disk.len == len && memcmp(s->disk.buf, saved, len) == 0,
                  "%s: the repaired image differs from the one before the "
                  "damage", when);
    }
    alk_free(saved);
    lab_check(s, 0, &none, "repaired");
    rc = qh_open(&s->h, &s->disk, s->cs, s->slots, s->ops_cap, 1,
                 s->has_backing);
    ALK_CHECK(rc == Q2W_OK, "%s: reopen: %s", when, q2w_strerror(rc));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    scenario s;
    unsigned n_ops, i;
    unsigned char *buf;
    int rc, stopped = 0;
    memset(&s, 0, sizeof s);
    alk_trace_reset();
    if (size >= 8 && (memcmp(data, LAB_MAGIC, 8) == 0 || memcmp(data, LAB2_MAGIC, 8) == 0 ||
                      memcmp(data, LAB3_MAGIC, 8) == 0)) {
        s.lab = data[7] - '0';
        data += 8;
        size -= 8;
    } else if (size >= 8 && memcmp(data, EDGE_MAGIC, 8) == 0) {
        s.edge_after = 1;
        data += 8;
        size -= 8;
    }
    alksim_source_init_bytes(&s.src, data, size);
    setup(&s);
    /* One input in eight also runs every batch through q2w_posix_exec on
     * a real file (chosen from the input's length and last byte, so that
     * no draw of the scenario moves). */
    if (!s.lab && size && ((size * 2654435761u) ^ data[size - 1]) % 8 == 0)
        qh_disk_mirror(&s.disk); /* (lab mode edits the bytes in place) */
    buf = (unsigned char *)alk_malloc(BUF_BYTES(s.cs));
    ALK_CHECK(buf != NULL, "out of memory");
    n_ops = (unsigned)alksim_range(&s.src, 1, MAX_OPS);
    for (i = 0; i < n_ops && !alksim_source_done(&s.src); i++) {
        /* kinds: 0 write, 1 zeroes, 2 discard, 3 flush, 4 grow, 5 snapshot
         * create, 6 delete, 7 lab damage (lab mode only), 8 apply, 9 amend */
        static const uint32_t w[] = {10, 3, 3, 2, 1, 2, 1, 0, 1, 1};
        static const uint32_t w_lab[] = {8, 2, 2, 2, 4, 2, 1, 4, 1, 1};
        int kind = s.lab ? (int)alksim_weighted(&s.src, w_lab, 10)
                         : (int)alksim_weighted(&s.src, w, 10);
        uint64_t off = 0, len = 0, old_size = s.size;
        char when[64];
        if (kind == 4) {
            off = s.size + alksim_range(&s.src, 1, 4 * (uint64_t)s.cs / 512) * 512;
            if (off > s.max_size) kind = 3;
        }
        if (kind <= 2) {
            off = pick_off(&s);
            len = pick_len(&s, s.size - off);
            if (kind == 0) fill(&s, buf, len);
        }
        if (kind == 5 && live_snaps(&s) >= MAX_SNAPS) kind = 3;
        if (kind == 6 || kind == 8) {
            if (!live_snaps(&s)) kind = 3;
            else off = alksim_pick(&s.src, live_snaps(&s));
        }
        snprintf(when, sizeof when, "op %u kind %d [%llu,+%llu)", i, kind,
                 (unsigned long long)off, (unsigned long long)len);
        alk_trace("%s", when);
        if (kind == 7) {
            lab_damage(&s, when);
            rc = Q2W_OK;
        } else {
            rc = do_op(&s, kind, off, len, buf, when);
        }
        qh_assert_consistent(&s.disk, 0, when);
        if (rc != Q2W_OK) { stopped = 1; break; }
        if (kind <= 2) {
            uint64_t lo = off >= s.cs ? off - s.cs : 0;
            uint64_t hi = off + len + s.cs < s.size ? off + len + s.cs : s.size;
            qh_assert_view(&s.h, &s.disk, s.model, lo, hi - lo, when);
        } else if (kind == 3) {
            qh_assert_fresh_view(&s.disk, s.cs, s.has_backing, s.model, s.size,
                                 when);
        } else if (kind == 4) {
            qh_assert_view(&s.h, &s.disk, s.model, old_size > s.cs ?
                           old_size - s.cs : 0, s.size - (old_size > s.cs ?
                           old_size - s.cs : 0), when);
        } else {
            qh_assert_view(&s.h, &s.disk, s.model, 0, s.size, when);
        }
        qh_assert_snapshots(&s.h, &s.disk, &s.snaps, when);
    }
    rc = qh_run(&s.h.img, &s.disk, q2w_close(&s.h.img));
    ALK_CHECK(rc == Q2W_OK, "close: %s", q2w_strerror(rc));
    {
        /* a closed handle takes nothing more */
        size_t nb;
        rc = q2w_read(&s.h.img, 0, buf, 1);
        q2w_batch(&s.h.img, &nb);
        ALK_CHECK(rc == Q2W_ERR_ARG && nb == 0 && q2w_error(&s.h.img)->what &&
                      !strcmp(q2w_error(&s.h.img)->what, "image not open"),
                  "a read after close: %s (%s)", q2w_strerror(rc),
                  q2w_error(&s.h.img)->what ? q2w_error(&s.h.img)->what : "");
    }
    qh_assert_consistent(&s.disk, !stopped, "after close");
    if (!stopped)
        qh_assert_fresh_view(&s.disk, s.cs, s.has_backing, s.model, s.size,
                             "after close");
    qh_close_handle(&s.h);
    if (live_snaps(&s)) {
        rc = qh_open(&s.h, &s.disk, s.cs, 8, 16, 0, s.has_backing);
        ALK_CHECK(rc == Q2W_OK, "reopen: %s", q2w_strerror(rc));
        qh_assert_snapshots(&s.h, &s.disk, &s.snaps, "after close");
        qh_close_handle(&s.h);
    }
    qh_snaps_free(&s.snaps);
    qh_disk_free(&s.disk);
    alk_free(buf);
    alk_free(s.model);
    alk_free(s.backing);
    return 0;
}

/* qcow2_growth.c - fuzz target `qcow2_growth`: refcount-block and
 * refcount-table growth geometry across cluster sizes and refcount widths.
 *
 * Small clusters and wide refcounts make one refcount-table cluster cover
 * little (512 B clusters with 64-bit refcounts: 2 MiB of host file), so a
 * few megabytes of writes force new refcount blocks and several table
 * moves. The input picks the geometry, the cache and op-buffer sizes and a
 * sequence of writes (mostly appending runs of whole clusters, sometimes
 * partial or scattered ones, sometimes a flush or a grow).
 *
 * Invariants after every operation:
 *   - no corruption on disk (checker), the written range reads back;
 *   - when the header's refcount table moved: the new table lies at or past
 *     everything the old one could describe (it and its new blocks describe
 *     themselves there), it is at least half again as large, and every
 *     cluster the file holds below the old coverage is still described;
 *   - every refcount-table entry is aligned and every block it names lies
 *     inside the range some entry describes (blocks cover themselves or are
 *     covered by earlier blocks).
 * At the end: close, no corruption and no leak (the old tables were freed),
 * and a fresh handle reads the model. */
#define _POSIX_C_SOURCE 200809L /* the harness's POSIX mirror: mkstemp, pread */
#include "qcow2w.h"
#include "alksim.h"
#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define VSIZE (24u << 20)
#define DISK_CAP (64u << 20) /* 2 x VSIZE after grows, plus metadata */
#define MAX_RUN 2048u

static void check_table_geometry(qh_disk *d, uint32_t cs, uint32_t order)
{
    uint64_t rt = q2w__be64(d->buf + 48), n = q2w__be32(d->buf + 56);
    uint64_t entries = n * cs / 8, epb_bits = 0, k;
    while ((1ull << epb_bits) < ((uint64_t)cs * 8 >> order)) epb_bits++;
    for (k = 0; k < entries; k++) {
        unsigned char ent[8];
        uint64_t e, c;
        qh_disk_read(d, rt + k * 8, ent, 8);
        e = q2w__be64(ent);
        if (!e) continue;
        ALK_CHECK((e & (cs - 1)) == 0, "refcount table entry %llu unaligned",
                  (unsigned long long)k);
        c = e / cs;
        ALK_CHECK((c >> epb_bits) < entries,
                  "block of entry %llu at cluster %llu lies past what the "
                  "table describes", (unsigned long long)k,
                  (unsigned long long)c);
        qh_disk_read(d, rt + (c >> epb_bits) * 8, ent, 8);
        e = q2w__be64(ent);
        ALK_CHECK(e != 0,
                  "block of entry %llu at cluster %llu is itself "
                  "undescribed", (unsigned long long)k, (unsigned long long)c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint32_t cs_choice[] = {512, 1024, 4096};
    static const uint32_t cs_w[] = {6, 2, 1};
    static const uint32_t order_w[] = {1, 1, 1, 2, 2, 3, 6};
    alksim_source src;
    qh_disk disk;
    qh_handle h;
    q2w_create_opts o;
    unsigned char *model, *buf;
    uint64_t cursor = 0, vsize = VSIZE;
    uint32_t cs, order;
    unsigned n_ops, i, moves = 0;
    size_t slots, ops_cap;
    int rc;

    alk_trace_reset();
    alksim_source_init_bytes(&src, data, size);
    memset(&o, 0, sizeof o);
    cs = cs_choice[alksim_weighted(&src, cs_w, 3)];
    order = (uint32_t)alksim_weighted(&src, order_w, 7);
    slots = (size_t)alksim_range(&src, 8, 16);
    ops_cap = (size_t)alksim_range(&src, 8, 64);
    o.cluster_size = cs;
    o.refcount_bits = 1u << order;
    o.size = vsize;
    alk_trace("cluster %u refcount_bits %u slots %zu ops %zu", cs,
              o.refcount_bits, slots, ops_cap);
    qh_disk_init(&disk, DISK_CAP);
    rc = qh_create(&disk, &o);
    ALK_CHECK(rc == Q2W_OK, "create: %s", q2w_strerror(rc));
    disk.cluster_size = cs;
    model = (unsigned char *)alk_calloc(1, (size_t)vsize * 2);
    buf = (unsigned char *)alk_malloc((size_t)MAX_RUN * cs + cs);
    ALK_CHECK(model && buf, "out of memory");
    rc = qh_open(&h, &disk, cs, slots, ops_cap, 1, 0);
    ALK_CHECK(rc == Q2W_OK, "open: %s", q2w_strerror(rc));

    n_ops = (unsigned)alksim_range(&src, 1, 40);
    for (i = 0; i < n_ops && !alksim_source_done(&src); i++) {
        static const uint32_t w[] = {12, 3, 2, 1, 1};
        uint64_t old_rt = q2w__be64(disk.buf + 48);
        uint64_t old_n = q2w__be32(disk.buf + 56);
        uint64_t off = 0, len = 0;
        int kind = (int)alksim_weighted(&src, w, 5);
        char when[80];
        unsigned char fillb = (unsigned char)(i * 37 + 1);
        if (kind == 0) { /* append a run of whole clusters */
            len = (uint64_t)cs * alksim_range(&src, 1, MAX_RUN);
            off = cursor;
        } else if (kind == 1) { /* partial, scattered */
            off = alksim_range(&src, 0, vsize - 1);
            len = alksim_range(&src, 1, 3 * (uint64_t)cs);
        } else if (kind == 2) { /* a discard, so freed clusters get reused */
            off = alksim_range(&src, 0, cursor ? cursor : 1);
            len = (uint64_t)cs * alksim_range(&src, 1, 64);
        }
        if (off >= vsize) off = vsize - 1;
        if (len > vsize - off) len = vsize - off;
        snprintf(when, sizeof when, "op %u kind %d [%llu,+%llu)", i, kind,
                 (unsigned long long)off, (unsigned long long)len);
        alk_trace("%s", when);
        if (kind == 0 || kind == 1) {
            memset(buf, fillb, (size_t)len);
            buf[0] = (unsigned char)(off >> 9);
            rc = qh_run(&h.img, &disk, q2w_write(&h.img, off, buf, (size_t)len));
            if (rc == Q2W_OK) memcpy(model + off, buf, (size_t)len);
            if (kind == 0) cursor = off + len;
        } else if (kind == 2) {
            rc = qh_run(&h.img, &disk, q2w_discard(&h.img, off, len));
            if (rc == Q2W_OK) {
                uint64_t c = (off + cs - 1) / cs * cs;
                for (; c + cs <= off + len; c += cs) memset(model + c, 0, cs);
            }
        } else if (kind == 3) {
            rc = qh_run(&h.img, &disk, q2w_flush(&h.img));
        } else {
            uint64_t ns = vsize + (uint64_t)cs * alksim_range(&src, 1, 4096);
            if (ns > 2 * (uint64_t)VSIZE) ns = 2 * (uint64_t)VSIZE;
            rc = qh_run(&h.img, &disk, q2w_resize(&h.img, ns));
            if (rc == Q2W_OK) vsize = ns;
        }
        if (rc != Q2W_OK) {
            alk_trace("%s: %s (%s)", when, q2w_strerror(rc),
                      q2w_error(&h.img)->what);
            ALK_CHECK(rc == Q2W_ERR_LIMIT, "%s: %s (%s)", when,
                      q2w_strerror(rc), q2w_error(&h.img)->what);
            break;
        }
        qh_assert_consistent(&disk, 0, when);
        check_table_geometry(&disk, cs, order);
        if (q2w__be64(disk.buf + 48) != old_rt) {
            uint64_t new_rt = q2w__be64(disk.buf + 48);
            uint64_t new_n = q2w__be32(disk.buf + 56);
            uint64_t covered = old_n * cs / 8 * ((uint64_t)cs * 8 >> order);
            moves++;
            alk_trace("table moved: %llu x%llu -> %llu x%llu",
                      (unsigned long long)old_rt, (unsigned long long)old_n,
                      (unsigned long long)new_rt, (unsigned long long)new_n);
            ALK_CHECK(new_rt / cs >= covered,
                      "new table at cluster %llu inside the old coverage %llu",
                      (unsigned long long)(new_rt / cs),
                      (unsigned long long)covered);
            ALK_CHECK(new_n >= old_n + (old_n + 1) / 2,
                      "table grew from %llu to only %llu clusters",
                      (unsigned long long)old_n, (unsigned long long)new_n);
            {
                /* and no larger, nor further out, than it must be: the new
                 * blocks from the old coverage on, then the table; the
                 * fewest of both (the table at least half again as large)
                 * that describe the old coverage and themselves */
                uint64_t epb = (uint64_t)cs * 8 >> order, t = old_n + (old_n + 1) / 2, b = 1;
                for (;;) {
                    uint64_t nb = (b + t + epb - 1) / epb;
                    if (nb != b) { b = nb; continue; }
                    if (t * (cs / 8) * epb >= covered + b + t) break;
                    t++;
                }
                ALK_CHECK(new_n == t && new_rt / cs == covered + b,
                          "table grew from %llu to %llu clusters at cluster %llu; the least: "
                          "%llu clusters after %llu new blocks at cluster %llu",
                          (unsigned long long)old_n, (unsigned long long)new_n,
                          (unsigned long long)(new_rt / cs), (unsigned long long)t,
                          (unsigned long long)b, (unsigned long long)covered);
            }
        }
        if (len) {
            uint64_t lo = off >= cs ? off - cs : 0;
            uint64_t hi = off + len + cs < vsize ? off + len + cs : vsize;
            qh_assert_view(&h, &disk, model, lo, hi - lo, when);
        }
    }
    alk_trace("%u table moves", moves);
    rc = qh_run(&h.img, &disk, q2w_close(&h.img));
    ALK_CHECK(rc == Q2W_OK, "close: %s", q2w_strerror(rc));
    qh_close_handle(&h);
    qh_assert_consistent(&disk, 1, "after close");
    check_table_geometry(&disk, cs, order);
    qh_assert_fresh_view(&disk, cs, 0, model, vsize, "after close");
    qh_disk_free(&disk);
    alk_free(model);
    alk_free(buf);
    return 0;
}

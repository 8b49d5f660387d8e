/* qcow2_open.c - fuzz target `qcow2_open`: arbitrary bytes as an image file.
 *
 * The input is the file (up to 256 KiB; its last 8 bytes, when there are
 * more than 120, also choose an offset and a fill for the write below).
 * Open, read, check and a small write must not crash, hang or allocate
 * without bound, and every refusal must be a well-formed error:
 *   - a read-only open either succeeds or returns an error code with its
 *     context set (code equal to the return value, a field name);
 *   - reads of the opened image succeed or refuse with METADATA /
 *     UNSUPPORTED, the handle staying usable;
 *   - the checker finishes or refuses with a code;
 *   - when the checker calls the image clean (no corruption, no leak), a
 *     writable open that succeeds takes an internal snapshot (or refuses
 *     it cleanly: a refcount width too small), then a small write - or
 *     refuses it cleanly - and after close the checker must still find no
 *     corruption and no leak (but for the clusters of persistent bitmaps,
 *     stale once the write cleared autoclear bit 0, as qemu says too);
 *     a fresh handle reads a window around the write as it was with the
 *     write applied, and the snapshot's view of it as it was; deleting
 *     the snapshot leaves the image as exact as before. Images qemu made
 *     (compressed clusters, bitmaps, v2 snapshots) are among the seeds. */
#define QCOW2W_IMPLEMENTATION
#include "../qcow2w.h"
#include "alk_check.h"
#include "qcow2_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (256u << 10)
#define DISK_CAP (24u << 20)
#define WINDOW (256u << 10)

static int open_image(qh_handle *h, qh_disk *d, int writable)
{
    q2w_config cfg;
    memset(&cfg, 0, sizeof cfg);
    /* Enough for 8 slots of the largest cluster size and the buffer for
     * reading a compressed cluster. */
    h->mem_len = 12u * (2u << 20) + 8192;   /* + compressed-read buffer */
    h->mem = (unsigned char *)alk_malloc(h->mem_len);
    h->ops = (q2w_op *)alk_malloc(16 * sizeof(q2w_op));
    ALK_CHECK(h->mem && h->ops, "out of memory");
    cfg.mem = h->mem;
    cfg.mem_len = h->mem_len;
    cfg.ops = h->ops;
    cfg.ops_cap = 16;
    cfg.max_slots = 8;
    cfg.file_size = d->len;
    cfg.writable = writable;
    cfg.no_backing = 1;
    d->ops_cap = 16;
    return qh_run(&h->img, d, q2w_open(&h->img, &cfg));
}

static void expect_refusal(const qh_handle *h, int rc, const char *when)
{
    const q2w_error_info *e = q2w_error(&h->img);
    ALK_CHECK(rc < 0 && rc > Q2W_RESULT_END_ - 100, "%s: rc %d", when, rc);
    ALK_CHECK(e->code == rc, "%s: error info code %d, returned %d", when,
              e->code, rc);
    ALK_CHECK(e->what != NULL, "%s: error without a field name", when);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qh_disk disk;
    qh_handle h;
    q2w_check_result res;
    q2w_info info;
    uint64_t pick = 0, woff;
    unsigned char fillb, *buf, *before;
    size_t wlen, i, win_len;
    uint64_t win_off;
    int rc, snap, have_before, stale_bitmaps;

    if (size > MAX_INPUT) return 0;
    alk_trace_reset();
    qh_disk_init(&disk, DISK_CAP);
    memcpy(disk.buf, data, size);
    disk.len = size;
    if (size > 120)
        for (i = 0; i < 8; i++) pick = (pick << 8) | data[size - 8 + i];

    rc = open_image(&h, &disk, 0);
    alk_trace("read-only open: %s", q2w_strerror(rc));
    if (rc != Q2W_OK) {
        expect_refusal(&h, rc, "read-only open");
        qh_close_handle(&h);
        qh_disk_free(&disk);
        return 0;
    }
    q2w_info_get(&h.img, &info);
    alk_trace("v%d cluster %u size %llu l1 %u", info.version,
              info.cluster_size, (unsigned long long)info.size, info.l1_size);
    {
        size_t n = info.size < 65536 ? (size_t)info.size : 65536;
        uint64_t at = info.size > n ? (pick >> 16) % (info.size - n + 1) : 0;
        buf = (unsigned char *)alk_malloc(n ? n : 1);
        ALK_CHECK(buf != NULL, "out of memory");
        rc = qh_run(&h.img, &disk, q2w_read(&h.img, at, buf, n));
        alk_trace("read [%llu,+%zu): %s", (unsigned long long)at, n,
                  q2w_strerror(rc));
        if (rc != Q2W_OK) {
            expect_refusal(&h, rc, "read");
            ALK_CHECK(rc == Q2W_ERR_METADATA || rc == Q2W_ERR_UNSUPPORTED,
                      "read: %s", q2w_strerror(rc));
            /* The handle stays usable after a refused read. */
            rc = qh_run(&h.img, &disk, q2w_read(&h.img, 0, buf, n ? 1 : 0));
            ALK_CHECK(rc == Q2W_OK || rc == Q2W_ERR_METADATA ||
                      rc == Q2W_ERR_UNSUPPORTED, "read after refusal: %s",
                      q2w_strerror(rc));
        }
        alk_free(buf);
    }
    qh_close_handle(&h);

    rc = qh_check(&disk, 0, &res);
    alk_trace("check: %s, %llu corruptions, %llu leaks", q2w_strerror(rc),
              (unsigned long long)res.corruptions,
              (unsigned long long)res.leaks);
    if (rc != Q2W_OK || res.corruptions || res.leaks) {
        qh_disk_free(&disk);
        return 0;
    }

    /* A clean image must stay clean through a snapshot and a small write. */
    rc = open_image(&h, &disk, 1);
    alk_trace("writable open: %s", q2w_strerror(rc));
    if (rc != Q2W_OK) {
        expect_refusal(&h, rc, "writable open");
        qh_close_handle(&h);
        qh_disk_free(&disk);
        return 0;
    }
    q2w_info_get(&h.img, &info);
    disk.cluster_size = info.cluster_size;
    /* persistent bitmaps turn into leaks once autoclear bit 0 goes */
    stale_bitmaps = (info.autoclear & 1) != 0;
    wlen = (size_t)((pick & 0xff) * 64 + 1);
    if (wlen > info.size) wlen = (size_t)info.size;
    woff = info.size > wlen ? (pick >> 24) % (info.size - wlen + 1) : 0;
    fillb = (unsigned char)(pick >> 8);
    buf = (unsigned char *)alk_malloc(wlen ? wlen : 1);
    ALK_CHECK(buf != NULL, "out of memory");
    memset(buf, fillb, wlen);
    /* the window the model keeps: up to 256 KiB around the write */
    win_len = info.size < WINDOW ? (size_t)info.size : WINDOW;
    win_off = woff > (win_len - wlen) / 2 ? woff - (win_len - wlen) / 2 : 0;
    if (win_off > info.size - win_len) win_off = info.size - win_len;
    before = (unsigned char *)alk_malloc(win_len ? win_len : 1);
    ALK_CHECK(before != NULL, "out of memory");
    have_before = qh_run(&h.img, &disk, q2w_read(&h.img, win_off, before,
                                                 win_len)) == Q2W_OK;
    snap = qh_run(&h.img, &disk, q2w_snapshot_create(&h.img, "fz", 1, 2, 3));
    alk_trace("snapshot create: %s", q2w_strerror(snap));
    if (snap != Q2W_OK) {
        expect_refusal(&h, snap, "snapshot create");
        ALK_CHECK(snap == Q2W_ERR_LIMIT || snap == Q2W_ERR_METADATA ||
                  snap == Q2W_ERR_UNSUPPORTED, "snapshot create: %s",
                  q2w_strerror(snap));
    }
    rc = qh_run(&h.img, &disk, q2w_write(&h.img, woff, buf, wlen));
    alk_trace("write [%llu,+%zu): %s", (unsigned long long)woff, wlen,
              q2w_strerror(rc));
    if (rc != Q2W_OK) {
        expect_refusal(&h, rc, "write");
        ALK_CHECK(rc == Q2W_ERR_METADATA || rc == Q2W_ERR_UNSUPPORTED ||
                  rc == Q2W_ERR_LIMIT, "write: %s", q2w_strerror(rc));
    }
    {
        int crc = qh_run(&h.img, &disk, q2w_close(&h.img));
        ALK_CHECK(crc == Q2W_OK, "close: %s", q2w_strerror(crc));
    }
    qh_close_handle(&h);
    qh_assert_consistent(&disk, rc == Q2W_OK && !stale_bitmaps,
                         "after the write");
    if (rc == Q2W_OK && wlen) {
        unsigned char *got = (unsigned char *)alk_malloc(win_len);
        ALK_CHECK(got != NULL, "out of memory");
        rc = open_image(&h, &disk, 1);
        ALK_CHECK(rc == Q2W_OK, "reopen: %s", q2w_strerror(rc));
        rc = qh_run(&h.img, &disk, q2w_read(&h.img, woff, got, wlen));
        ALK_CHECK(rc == Q2W_OK, "read back: %s", q2w_strerror(rc));
        ALK_CHECK(memcmp(got, buf, wlen) == 0, "write did not read back");
        if (have_before) {
            /* the window: as before, with the write in it */
            rc = qh_run(&h.img, &disk, q2w_read(&h.img, win_off, got,
                                                win_len));
            ALK_CHECK(rc == Q2W_OK, "window: %s", q2w_strerror(rc));
            ALK_CHECK(memcmp(got, before, (size_t)(woff - win_off)) == 0 &&
                      memcmp(got + (woff - win_off) + wlen,
                             before + (woff - win_off) + wlen,
                             win_len - (size_t)(woff - win_off) - wlen) == 0,
                      "bytes beside the write changed");
        }
        if (snap == Q2W_OK) {
            q2w_snapshot sn;
            rc = qh_run(&h.img, &disk, q2w_snapshot_find(&h.img, "fz", &sn));
            ALK_CHECK(rc == Q2W_OK, "snapshot find: %s", q2w_strerror(rc));
            rc = qh_run(&h.img, &disk,
                        q2w_read_snapshot(&h.img, &sn, win_off, got, win_len));
            ALK_CHECK(rc == Q2W_OK || !have_before, "snapshot read: %s",
                      q2w_strerror(rc));
            ALK_CHECK(!have_before || memcmp(got, before, win_len) == 0,
                      "the snapshot's view changed");
            rc = qh_run(&h.img, &disk, q2w_snapshot_delete(&h.img, "fz"));
            ALK_CHECK(rc == Q2W_OK, "snapshot delete: %s (%s)",
                      q2w_strerror(rc), q2w_error(&h.img)->what);
            rc = qh_run(&h.img, &disk, q2w_read(&h.img, woff, got, wlen));
            ALK_CHECK(rc == Q2W_OK && memcmp(got, buf, wlen) == 0,
                      "write lost by the snapshot delete");
        }
        rc = qh_run(&h.img, &disk, q2w_close(&h.img));
        ALK_CHECK(rc == Q2W_OK, "close: %s", q2w_strerror(rc));
        qh_close_handle(&h);
        qh_assert_consistent(&disk, !stale_bitmaps, "after the delete");
        alk_free(got);
    }
    alk_free(before);
    alk_free(buf);
    qh_disk_free(&disk);
    return 0;
}

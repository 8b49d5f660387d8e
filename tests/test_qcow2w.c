/* test_qcow2w.c - unit tests for qcow2w.h (greatest API).
 *
 * The image lives in memory (testkit/qcow2_harness.h, the same disk, executor,
 * resume loop and checker wrapper the fuzz targets use). Tests check exact
 * header bytes, error codes with their context, the order of the planned
 * op stream (the crash-consistency rules), and the checker's findings on
 * images damaged on purpose. ALK_SEED=N changes the property tests' seed. */
#define QCOW2W_IMPLEMENTATION
#include "qcow2w.h"
#define ALKSIM_IMPLEMENTATION
#define ALKSIM_STATIC
#include "alksim.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h"
#include "alk_test.h"


/* ---- helpers ----------------------------------------------------------------- */
static uint64_t rd64(const qh_disk *d, uint64_t off)
{
    unsigned char b[8];
    qh_disk_read(d, off, b, 8);
    return q2w__be64(b);
}
static uint32_t rd32(const qh_disk *d, uint64_t off)
{
    unsigned char b[4];
    qh_disk_read(d, off, b, 4);
    return q2w__be32(b);
}

/* Close through the planner (it must succeed), free the handle's memory,
 * and require the image exact: no corruption, no leak. */
static void close_exact(qh_handle *h, qh_disk *d, const char *when)
{
    int rc = qh_run(&h->img, d, q2w_close(&h->img));
    ALK_CHECK(rc == Q2W_OK, "%s: close: %s", when, q2w_strerror(rc));
    qh_close_handle(h);
    qh_assert_consistent(d, 1, when);
}

static void make_image(qh_disk *d, uint32_t cs, uint32_t rbits, int version,
                       uint64_t size)
{
    int rc = qh_make(d, 64u << 20, version, cs, rbits, size, NULL, NULL);
    ALK_CHECK(rc == Q2W_OK, "create: %s", q2w_strerror(rc));
    d->cluster_size = cs;
}

/* Open with a wide-enough config (16 slots, 64 ops). */
static int open_rw(qh_handle *h, qh_disk *d, uint32_t cs, int writable)
{
    return qh_open(h, d, cs, 16, 64, writable, 0);
}

/* The last error's field, byte offset and index are these. */
static enum greatest_test_res error_is(const q2w_image *img, const char *what,
                                       uint64_t offset, uint64_t index)
{
    ASSERT_STR_EQ(what, q2w_error(img)->what);
    ASSERT_EQ(offset, q2w_error(img)->offset);
    ASSERT_EQ(index, q2w_error(img)->index);
    PASS();
}

/* An executor that records the op stream. */
#define LOG_MAX 4096
typedef struct op_rec {
    int kind;
    uint64_t off, len;
} op_rec;
static op_rec oplog[LOG_MAX];
static size_t n_oplog;

static int run_logged(q2w_image *img, qh_disk *d, int rc)
{
    while (rc == Q2W_PENDING) {
        size_t n, i;
        const q2w_op *op = q2w_batch(img, &n);
        for (i = 0; i < n && n_oplog < LOG_MAX; i++) {
            oplog[n_oplog].kind = op[i].kind;
            oplog[n_oplog].off = op[i].off;
            oplog[n_oplog].len = op[i].len;
            n_oplog++;
        }
        rc = q2w_resume(img, qh_exec(d, op, n));
    }
    return rc;
}

/* Index of the first logged write touching [off, off+len), or -1. */
static long first_write(uint64_t off, uint64_t len, size_t from)
{
    size_t i;
    for (i = from; i < n_oplog; i++)
        if (oplog[i].kind == Q2W_OP_WRITE && oplog[i].off < off + len &&
            off < oplog[i].off + oplog[i].len)
            return (long)i;
    return -1;
}
static long next_flush(size_t from)
{
    size_t i;
    for (i = from; i < n_oplog; i++)
        if (oplog[i].kind == Q2W_OP_FLUSH) return (long)i;
    return -1;
}

/* ---- create ------------------------------------------------------------------- */
TEST create_v3_header_is_exact(void)
{
    qh_disk d;
    make_image(&d, 65536, 16, 3, 1u << 30);
    ASSERT_EQ(0x514649fbu, rd32(&d, 0));
    ASSERT_EQ(3, rd32(&d, 4));
    ASSERT_EQ(0, rd64(&d, 8));
    ASSERT_EQ(16, rd32(&d, 20));
    ASSERT_EQ(1ull << 30, rd64(&d, 24));
    ASSERT_EQ(0, rd32(&d, 32));
    ASSERT_EQ(2, rd32(&d, 36));          /* 1 GiB / 512 MiB per L2 */
    ASSERT_EQ(3 * 65536, rd64(&d, 40));  /* header, table, block, L1 */
    ASSERT_EQ(65536, rd64(&d, 48));
    ASSERT_EQ(1, rd32(&d, 56));
    ASSERT_EQ(0, rd32(&d, 60));
    ASSERT_EQ(0, rd64(&d, 72));
    ASSERT_EQ(4, rd32(&d, 96));
    ASSERT_EQ(112, rd32(&d, 100));
    ASSERT_EQ(2 * 65536, rd64(&d, 65536)); /* table entry 0: the block */
    ASSERT_EQ(4 * 65536, d.len);
    qh_assert_consistent(&d, 1, "fresh");
    qh_disk_free(&d);
    PASS();
}

TEST create_v2_and_backing_name(void)
{
    qh_disk d;
    qh_handle h;
    q2w_info info;
    ASSERT_EQ(Q2W_OK, qh_make(&d, 1u << 20, 2, 4096, 0, 5000000, "base image.raw", "raw"));
    ASSERT_EQ(2, rd32(&d, 4));
    ASSERT_EQ(14, rd32(&d, 16));
    ASSERT_EQ(0, memcmp(d.buf + rd64(&d, 8), "base image.raw", 14));
    ASSERT_EQ(0xe2792acau, rd32(&d, 72)); /* extensions right after v2's 72 */
    ASSERT_EQ(3, rd32(&d, 76));
    /* Opening needs the backing file, or an explicit no. */
    ASSERT_EQ(Q2W_ERR_BACKING, qh_open(&h, &d, 4096, 8, 16, 1, 0));
    ASSERT_EQ(8, q2w_error(&h.img)->offset);
    ASSERT_STR_EQ("header.backing_file_offset", q2w_error(&h.img)->what);
    qh_close_handle(&h);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 1));
    q2w_info_get(&h.img, &info);
    ASSERT_STR_EQ("base image.raw", info.backing_name);
    ASSERT_STR_EQ("raw", info.backing_format);
    ASSERT_EQ(2, info.version);
    ASSERT_EQ(16, info.refcount_bits);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

TEST create_refuses_bad_options(void)
{
    q2w_create_opts o;
    q2w_error_info e;
    uint64_t len;
    char name[1100];
    memset(&o, 0, sizeof o);
    o.size = 1 << 20;
    o.cluster_size = 1000;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    ASSERT_STR_EQ("cluster_size", e.what);
    o.cluster_size = 256;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    o.cluster_size = 4u << 20;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    o.cluster_size = 0;
    o.refcount_bits = 3;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    ASSERT_STR_EQ("refcount_bits", e.what);
    o.refcount_bits = 128;                   /* a power of two, too wide */
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    ASSERT_EQ(128, e.needed);
    o.refcount_bits = 64;
    ASSERT_EQ(Q2W_OK, q2w_create(&o, NULL, 0, &len, &e));
    o.refcount_bits = 8;
    o.version = 2;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    o.version = 4;
    o.refcount_bits = 0;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    ASSERT_STR_EQ("version", e.what);
    o.version = 3;
    o.cluster_size = 512;
    memset(name, 'n', sizeof name);
    name[500] = 0;
    o.backing = name;
    ASSERT_EQ(Q2W_ERR_LIMIT, q2w_create(&o, NULL, 0, &len, &e));
    name[500] = 'n';
    name[1024] = 0;
    o.cluster_size = 65536;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    ASSERT_STR_EQ("backing", e.what);
    name[1023] = 0; /* the longest name qcow2 allows */
    ASSERT_EQ(Q2W_OK, q2w_create(&o, NULL, 0, &len, &e));
    name[1023] = 'n';
    o.backing = "b";
    o.backing_fmt = "0123456789abcdef"; /* 16: qemu would refuse to open it */
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    ASSERT_STR_EQ("backing_fmt", e.what);
    ASSERT_EQ(16, e.needed);
    o.backing_fmt = "0123456789abcde";  /* 15: fits */
    o.cluster_size = 65536;
    ASSERT_EQ(Q2W_OK, q2w_create(&o, NULL, 0, &len, &e));
    o.backing = NULL;
    o.backing_fmt = "raw";
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(&o, NULL, 0, &len, &e));
    o.backing_fmt = NULL;
    o.cluster_size = 512;
    o.size = 1ull << 40; /* L1 of 256 MiB > qemu's 32 MiB */
    ASSERT_EQ(Q2W_ERR_LIMIT, q2w_create(&o, NULL, 0, &len, &e));
    {
        unsigned char small[100];
        o.size = 1 << 20;
        ASSERT_EQ(Q2W_ERR_NOMEM, q2w_create(&o, small, sizeof small, &len, &e));
        ASSERT_EQ(len, e.needed);
    }
    PASS();
}

/* Every cluster size and refcount width makes an image that checks clean. */
TEST create_every_geometry_checks_clean(void)
{
    uint32_t cb, order;
    for (cb = 9; cb <= 21; cb += 3)
        for (order = 0; order <= 6; order++) {
            qh_disk d;
            make_image(&d, 1u << cb, 1u << order, 3, 3u << 20);
            qh_assert_consistent(&d, 1, "geometry");
            qh_disk_free(&d);
        }
    PASS();
}

/* ---- open validation ------------------------------------------------------------ */
typedef struct header_case {
    uint32_t off;
    int width; /* 4 or 8 */
    uint64_t value;
    int expect;
    const char *what;
} header_case;

TEST open_validates_every_header_field(void)
{
    static const header_case cases[] = {
        {0, 4, 0x514649fa, Q2W_ERR_MAGIC, "header.magic"},
        {4, 4, 4, Q2W_ERR_VERSION, "header.version"},
        {20, 4, 8, Q2W_ERR_HEADER, "header.cluster_bits"},
        {20, 4, 22, Q2W_ERR_HEADER, "header.cluster_bits"},
        {32, 4, 1, Q2W_ERR_FEATURE, "header.crypt_method"},
        {72, 8, 1u << 5, Q2W_ERR_FEATURE, "header.incompatible_features"},
        {72, 8, 4, Q2W_ERR_FEATURE, "external data file"},
        {72, 8, 16, Q2W_ERR_FEATURE, "extended L2 entries"},
        {72, 8, 8, Q2W_ERR_HEADER, "header.compression_type"},
        {104, 1, 2, Q2W_ERR_FEATURE, "header.compression_type"},
        {100, 4, 100, Q2W_ERR_HEADER, "header.header_length"},
        {100, 4, 108, Q2W_ERR_HEADER, "header.header_length"},
        {96, 4, 7, Q2W_ERR_HEADER, "header.refcount_order"},
        {36, 4, 1, Q2W_ERR_HEADER, "header.l1_size"},
        {36, 4, 5000000, Q2W_ERR_HEADER, "header.l1_size"},
        {40, 8, 3 * 65536 + 512, Q2W_ERR_HEADER, "header.l1_table_offset"},
        {40, 8, 1ull << 56, Q2W_ERR_HEADER, "header.l1_table_offset"},
        {56, 4, 0, Q2W_ERR_HEADER, "header.refcount_table_clusters"},
        {56, 4, 129, Q2W_ERR_HEADER, "header.refcount_table_clusters"},
        {48, 8, 65536 + 8, Q2W_ERR_HEADER, "header.refcount_table_offset"},
        {48, 8, 0, Q2W_ERR_HEADER, "header.refcount_table_offset"},
        {60, 4, 65537, Q2W_ERR_HEADER, "header.nb_snapshots"},
        {64, 9, 1ull << 56, Q2W_ERR_HEADER, "header.snapshots_offset"},
        {24, 8, (1ull << 62) + 1, Q2W_ERR_HEADER, "header.size"},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qh_disk d;
        qh_handle h;
        int rc;
        make_image(&d, 65536, 16, 3, 1u << 30);
        if (cases[i].width == 8) q2w__put64(d.buf + cases[i].off, cases[i].value);
        else if (cases[i].width == 9) {
            /* a snapshot table offset, with one snapshot to need it */
            q2w__put64(d.buf + cases[i].off, cases[i].value);
            q2w__put32(d.buf + 60, 1);
        } else if (cases[i].width == 1) {
            /* a compression type byte, with the incompatible bit that
             * says one is in use */
            d.buf[cases[i].off] = (unsigned char)cases[i].value;
            q2w__put64(d.buf + 72, 8);
        } else q2w__put32(d.buf + cases[i].off, (uint32_t)cases[i].value);
        rc = open_rw(&h, &d, 65536, 0);
        if (rc != cases[i].expect || strcmp(q2w_error(&h.img)->what,
                                            cases[i].what) != 0)
            fprintf(stderr, "case %zu: %s (%s)\n", i, q2w_strerror(rc),
                    q2w_error(&h.img)->what);
        ASSERT_EQ(cases[i].expect, rc);
        ASSERT_STR_EQ(cases[i].what, q2w_error(&h.img)->what);
        ASSERT_EQ(strcmp(cases[i].what, "header.compression_type") ? cases[i].off
                                                                    : 104,
                  q2w_error(&h.img)->offset);
        ASSERT_EQ(rc, q2w_error(&h.img)->code);
        /* the offending value travels with the error */
        ASSERT_EQ(strcmp(cases[i].what, "header.compression_type") ||
                          cases[i].width == 1
                      ? cases[i].value : 0,
                  q2w_error(&h.img)->needed);
        /* Nothing was written while refusing. */
        ASSERT_EQ(0, d.writes);
        qh_close_handle(&h);
        qh_disk_free(&d);
    }
    PASS();
}

/* The most snapshots qemu allows, 65536, pass the header check (here all
 * empty entries: 40 zero bytes each). */
TEST open_accepts_65536_snapshots(void)
{
    qh_disk d;
    qh_handle h;
    q2w_info info;
    make_image(&d, 65536, 16, 3, 1 << 20);
    q2w__put32(d.buf + 60, 65536);
    q2w__put64(d.buf + 64, 4 * 65536);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 0));
    q2w_info_get(&h.img, &info);
    ASSERT_EQ(65536, info.nb_snapshots);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* The smallest v3 header qemu accepts: 104 bytes (no compression type). */
TEST open_accepts_a_104_byte_header(void)
{
    qh_disk d;
    qh_handle h;
    make_image(&d, 65536, 16, 3, 1 << 20);
    q2w__put32(d.buf + 100, 104);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 1));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

TEST open_refuses_bad_backing_and_extensions(void)
{
    qh_disk d;
    qh_handle h;
    make_image(&d, 4096, 16, 3, 1 << 20);
    q2w__put64(d.buf + 8, 4000);
    q2w__put32(d.buf + 16, 200); /* runs past cluster 0 */
    ASSERT_EQ(Q2W_ERR_HEADER, open_rw(&h, &d, 4096, 0));
    ASSERT_STR_EQ("header.backing_file_offset", q2w_error(&h.img)->what);
    qh_close_handle(&h);
    q2w__put32(d.buf + 16, 1024);
    ASSERT_EQ(Q2W_ERR_HEADER, open_rw(&h, &d, 4096, 0));
    ASSERT_STR_EQ("header.backing_file_size", q2w_error(&h.img)->what);
    qh_close_handle(&h);
    q2w__put64(d.buf + 8, 0);
    q2w__put32(d.buf + 16, 0);
    /* An encryption header extension. */
    q2w__put32(d.buf + 112, 0x0537be77u);
    q2w__put32(d.buf + 116, 16);
    ASSERT_EQ(Q2W_ERR_FEATURE, open_rw(&h, &d, 4096, 0));
    ASSERT_STR_EQ("encryption extension", q2w_error(&h.img)->what);
    ASSERT_EQ(112, q2w_error(&h.img)->offset);
    qh_close_handle(&h);
    /* An extension whose length runs past the cluster. */
    q2w__put32(d.buf + 112, 0x12345678u);
    q2w__put32(d.buf + 116, 5000);
    ASSERT_EQ(Q2W_ERR_HEADER, open_rw(&h, &d, 4096, 0));
    ASSERT_STR_EQ("header extension length", q2w_error(&h.img)->what);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

TEST dirty_and_corrupt_images_are_refused_for_writing_only(void)
{
    qh_disk d;
    qh_handle h;
    make_image(&d, 65536, 16, 3, 1 << 20);
    q2w__put64(d.buf + 72, 1); /* dirty (lazy refcounts) */
    ASSERT_EQ(Q2W_ERR_DIRTY, open_rw(&h, &d, 65536, 1));
    qh_close_handle(&h);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 0));
    {
        q2w_info info;
        q2w_info_get(&h.img, &info);
        ASSERT_EQ(1, info.incompatible);
    }
    ASSERT_EQ(Q2W_ERR_READONLY,
              q2w_write(&h.img, 0, "x", 1));
    qh_close_handle(&h);
    q2w__put64(d.buf + 72, 2); /* corrupt */
    ASSERT_EQ(Q2W_ERR_CORRUPT, open_rw(&h, &d, 65536, 1));
    ASSERT_EQ(72, q2w_error(&h.img)->offset);
    qh_close_handle(&h);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 0));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

TEST memory_and_op_buffer_limits(void)
{
    qh_disk d;
    q2w_image img;
    q2w_config cfg;
    q2w_op ops[8];
    unsigned char *mem;
    size_t needed;
    make_image(&d, 4096, 16, 3, 1 << 20);
    d.ops_cap = 8;
    memset(&cfg, 0, sizeof cfg);
    mem = (unsigned char *)malloc(1 << 20);
    ASSERT(mem != NULL);
    cfg.mem = mem;
    cfg.mem_len = 1000;
    cfg.ops = ops;
    cfg.ops_cap = 7;
    cfg.file_size = d.len;
    ASSERT_EQ(Q2W_ERR_NOMEM, q2w_open(&img, &cfg));
    ASSERT_STR_EQ("cfg.ops_cap", q2w_error(&img)->what);
    ASSERT_EQ(0, q2w_error(&img)->offset);
    ASSERT_EQ(7, q2w_error(&img)->index);
    cfg.ops_cap = 8;
    {
        int rc = qh_run(&img, &d, q2w_open(&img, &cfg));
        if (rc != Q2W_ERR_NOMEM)
            fprintf(stderr, "got %s (%s)\n", q2w_strerror(rc), q2w_error(&img)->what);
        ASSERT_EQ(Q2W_ERR_NOMEM, rc);
    }
    ASSERT_STR_EQ("cfg.mem", q2w_error(&img)->what);
    ASSERT_EQ(0, q2w_error(&img)->offset);
    ASSERT_EQ(0, q2w_error(&img)->index);
    needed = (size_t)q2w_error(&img)->needed;
    ASSERT(needed > 9 * 4096 && needed < 10 * 4096 + 4096);
    cfg.mem_len = needed - 1;
    ASSERT_EQ(Q2W_ERR_NOMEM, qh_run(&img, &d, q2w_open(&img, &cfg)));
    cfg.mem_len = needed;
    ASSERT_EQ(Q2W_OK, qh_run(&img, &d, q2w_open(&img, &cfg)));
    {
        q2w_info info;
        q2w_info_get(&img, &info);
        ASSERT_EQ(Q2W_MIN_SLOTS, info.cache_slots);
    }
    /* A handle that failed to open refuses operations. */
    cfg.mem_len = 10;
    ASSERT_EQ(Q2W_ERR_NOMEM, qh_run(&img, &d, q2w_open(&img, &cfg)));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_write(&img, 0, "x", 1));
    free(mem);
    qh_disk_free(&d);
    PASS();
}

/* ---- operations -------------------------------------------------------------------- */
TEST write_read_round_trip_with_tiny_cache(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char *model, *buf;
    uint64_t size = 3u << 20;
    int i;
    uint64_t rng = test_seed;
    make_image(&d, 512, 16, 3, size);
    model = (unsigned char *)calloc(1, size);
    buf = (unsigned char *)malloc(70000);
    ASSERT(model && buf);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 8, 1, 0));
    for (i = 0; i < 200; i++) {
        uint64_t off = alksim_splitmix64(&rng) % (size - 70000);
        size_t len = (size_t)(alksim_splitmix64(&rng) % 70000) + 1;
        size_t j;
        for (j = 0; j < len; j++) buf[j] = (unsigned char)((size_t)i + j * 3);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, off, buf, len)));
        memcpy(model + off, buf, len);
        if (i % 50 == 0) qh_assert_consistent(&d, 0, "mid-run");
    }
    qh_assert_view(&h, &d, model, 0, size, "before close");
    close_exact(&h, &d, "after close");
    qh_assert_fresh_view(&d, 512, 0, model, size, "fresh");
    free(model);
    free(buf);
    qh_disk_free(&d);
    PASS();
}

/* The crash-consistency order of one allocating write and its flush:
 * data and refcount block, flush, L2 table, flush, L1, flush. */
TEST allocating_write_ops_are_in_crash_safe_order(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char data[4096];
    long rb, dat, f1, l2, f2, l1, f3;
    const uint64_t cs = 65536;
    memset(data, 0x5a, sizeof data);
    make_image(&d, 65536, 16, 3, 1 << 30);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 1));
    n_oplog = 0;
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d,
                                 q2w_write(&h.img, 100, data, sizeof data)));
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_flush(&h.img)));
    /* Fresh layout: block at cluster 2, L1 at 3; the new L2 is cluster 4,
     * the data cluster 5. */
    rb = first_write(2 * cs, cs, 0);
    dat = first_write(5 * cs, cs, 0);
    l2 = first_write(4 * cs, cs, 0);
    l1 = first_write(3 * cs, cs, 0);
    ASSERT(rb >= 0 && dat >= 0 && l2 >= 0 && l1 >= 0);
    f1 = next_flush((size_t)(rb > dat ? rb : dat));
    ASSERT(f1 >= 0 && f1 < l2);
    f2 = next_flush((size_t)l2);
    ASSERT(f2 >= 0 && f2 < l1);
    f3 = next_flush((size_t)l1);
    ASSERT(f3 >= 0);
    ASSERT_EQ(Q2W_OP_FLUSH, oplog[n_oplog - 1].kind);
    /* The partial write's fill: zeros past the file end cost nothing. */
    ASSERT_EQ(5 * cs + 100, oplog[dat].off);
    ASSERT_EQ(4096, oplog[dat].len);
    close_exact(&h, &d, "after close");
    ASSERT_EQ((5 * cs) | Q2W__COPIED, rd64(&d, 4 * cs));
    ASSERT_EQ((4 * cs) | Q2W__COPIED, rd64(&d, 3 * cs));
    qh_disk_free(&d);
    PASS();
}

/* A discard's refcount drop reaches the disk only after the cleared L2
 * entry is durable. */
TEST refcount_decrease_follows_the_durable_reference_drop(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char data[65536];
    long l2w, f, rbw;
    const uint64_t cs = 65536;
    memset(data, 1, sizeof data);
    make_image(&d, 65536, 16, 3, 1 << 30);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, sizeof data)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    n_oplog = 0;
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_discard(&h.img, 0, cs)));
    ASSERT_EQ(0, n_oplog); /* nothing written yet: it is all in the cache */
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_close(&h.img)));
    l2w = first_write(4 * cs, cs, 0);
    ASSERT(l2w >= 0);
    f = next_flush((size_t)l2w);
    ASSERT(f >= 0);
    /* The block is written (with the decrease) only after that flush. */
    rbw = first_write(2 * cs, cs, 0);
    ASSERT(rbw > f);
    qh_close_handle(&h);
    qh_assert_consistent(&d, 1, "after close");
    ASSERT_EQ(Q2W__ZERO, rd64(&d, 4 * cs)); /* v3 discard reads zeros */
    qh_disk_free(&d);
    PASS();
}

TEST write_zeroes_v3_uses_the_zero_flag_v2_writes_zeros(void)
{
    int version;
    for (version = 2; version <= 3; version++) {
        qh_disk d;
        qh_handle h;
        unsigned char data[8192], back[8192];
        const uint64_t cs = 4096;
        uint64_t l1, l2;
        memset(data, 0x77, sizeof data);
        make_image(&d, 4096, 16, version, 1 << 20);
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, 8192)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 100, 6000)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, back, 8192)));
        ASSERT_EQ(0x77, back[99]);
        ASSERT_EQ(0, back[100]);
        ASSERT_EQ(0, back[6099]);
        ASSERT_EQ(0x77, back[6100]);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 0, cs)));
        close_exact(&h, &d, "after close");
        l1 = rd64(&d, 40);
        l2 = rd64(&d, l1) & Q2W__OFF_MASK;
        if (version == 3)
            ASSERT_EQ(Q2W__ZERO, rd64(&d, l2));     /* freed, zero flag */
        else
            ASSERT(rd64(&d, l2) & Q2W__OFF_MASK);   /* still allocated */
        qh_disk_free(&d);
    }
    PASS();
}

static int backing_pattern(uint64_t i) { return (int)((i * 7 + 1) & 0xff); }

TEST backing_fill_and_v2_discard_with_backing(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char *backing, got[12000], data[100];
    uint64_t i;
    const uint64_t blen = 1u << 20;
    backing = (unsigned char *)malloc(blen);
    ASSERT(backing != NULL);
    for (i = 0; i < blen; i++) backing[i] = (unsigned char)backing_pattern(i);
    ASSERT_EQ(Q2W_OK, qh_make(&d, 8u << 20, 2, 4096, 0, 2u << 20, "b", NULL)); /* longer than the backing file */
    d.backing = backing;
    d.backing_len = blen;
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 1));
    memset(data, 0xee, sizeof data);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 5000, data, 100)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, 12000)));
    for (i = 0; i < 12000; i++)
        ASSERT_EQ(i >= 5000 && i < 5100 ? 0xee : backing_pattern(i), got[i]);
    /* Past the backing file's end: zeros. */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, blen - 10, got, 20)));
    ASSERT_EQ(backing_pattern(blen - 1), got[9]);
    ASSERT_EQ(0, got[10]);
    /* v2 discard with a backing file changes nothing (as qemu: unmapping
     * would show the backing file). */
    n_oplog = 0;
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_discard(&h.img, 4096, 4096)));
    ASSERT_EQ(0, n_oplog);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 5000, got, 100)));
    for (i = 0; i < 100; i++) ASSERT_EQ(0xee, got[i]);
    close_exact(&h, &d, "after close");
    free(backing);
    qh_disk_free(&d);
    PASS();
}

/* As qemu: a discard that runs to the end of a disk whose size is not
 * cluster-aligned takes the partial last cluster too; elsewhere partial
 * clusters are left alone. */
TEST discard_takes_the_partial_last_cluster(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char data[6000], got[6000];
    int i;
    memset(data, 0x61, sizeof data);
    make_image(&d, 4096, 16, 3, 6000);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, 6000)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_discard(&h.img, 100, 5000)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, 6000)));
    ASSERT_MEM_EQ(data, got, 6000); /* no whole cluster inside */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_discard(&h.img, 4096, 1904)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, 6000)));
    for (i = 0; i < 6000; i++) ASSERT_EQ(i < 4096 ? 0x61 : 0, (int)got[i]);
    close_exact(&h, &d, "after close");
    qh_disk_free(&d);
    PASS();
}

TEST resize_grows_the_l1_and_frees_the_old_one(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char data[512], got[512];
    uint64_t old_l1;
    memset(data, 0x3c, sizeof data);
    make_image(&d, 512, 16, 3, 64 * 512 * 10); /* 10 L1 entries */
    old_l1 = rd64(&d, 40);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 1000, data, 512)));
    ASSERT_EQ(Q2W_ERR_UNSUPPORTED, qh_run(&h.img, &d, q2w_resize(&h.img, 512)));
    ASSERT_STR_EQ("shrinking", q2w_error(&h.img)->what);
    /* Same L1: only the size field changes. */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 64 * 512 * 10 + 0)));
    ASSERT_EQ(old_l1, rd64(&d, 40));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 64 * 512 * 200)));
    ASSERT_EQ(200, rd32(&d, 36));
    ASSERT(rd64(&d, 40) != old_l1);
    ASSERT_EQ(64 * 512 * 200, rd64(&d, 24));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 64 * 512 * 199, data, 512)));
    /* The old L1's clusters, freed after a flush, are the next ones handed
     * out - here to new L2 tables: nothing stale of the old L1 may remain
     * in the cache under their offsets. */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 64 * 512 * 150, data, 512)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 64 * 512 * 120, data, 512)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    qh_assert_consistent(&d, 1, "after resize"); /* old L1 freed: no leak */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 1000, got, 512)));
    ASSERT_MEM_EQ(data, got, 512);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 64 * 512 * 199, got, 512)));
    ASSERT_MEM_EQ(data, got, 512);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* q2w_info.file_end counts a refcount block and an L2 table from the
 * moment they are placed, before a checkpoint writes them: zeroes over a
 * backing file (the zero flag, no data cluster) into a new L2 range of a
 * file that ends exactly where its one refcount block's coverage ends
 * place a new block on cluster 256 and the L2 table on 257, and write
 * nothing yet. */
TEST file_end_counts_tables_placed_past_the_end(void)
{
    qh_disk d;
    qh_handle h;
    q2w_info info;
    unsigned char *data, *backing;
    size_t n;
    int rc;
    /* 512 B clusters, 16-bit refcounts: a block covers 256 clusters; an
     * L2 table 64. Header, table, block, L1 on clusters 0..3; then three
     * L2 ranges of 65 clusters and an L2 table with 56 clusters of data:
     * the file ends at cluster 256. */
    const size_t len = 3 * 32768 + 56 * 512;
    data = (unsigned char *)malloc(len);
    backing = (unsigned char *)calloc(1, 1u << 20);
    ASSERT(data != NULL && backing != NULL);
    memset(data, 0x5a, len);
    ASSERT_EQ(Q2W_OK, qh_make(&d, 8u << 20, 0, 512, 0, 1u << 20, "b", NULL));
    d.backing = backing;
    d.backing_len = 1u << 20;
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 16, 1, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, len)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(256 * 512, d.len);
    /* the batches run without qh_run's own file_end checks: this test
     * says what it expects itself */
    rc = q2w_write_zeroes(&h.img, 4 * 32768, 512);
    while (rc == Q2W_PENDING) {
        const q2w_op *op = q2w_batch(&h.img, &n);
        rc = q2w_resume(&h.img, qh_exec(&d, op, n));
    }
    ASSERT_EQ(Q2W_OK, rc);
    ASSERT_EQ(256 * 512, d.len);            /* both wait in the cache */
    q2w_info_get(&h.img, &info);
    ASSERT_EQ(258 * 512, info.file_end);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(256 * 512, rd64(&d, 512 + 8));            /* the new block */
    ASSERT_EQ(257 * 512, rd64(&d, 3 * 512 + 4 * 8) & Q2W__OFF_MASK);
    q2w_info_get(&h.img, &info);
    ASSERT_EQ(258 * 512, d.len);
    ASSERT_EQ(258 * 512, info.file_end);
    close_exact(&h, &d, "after close");
    qh_disk_free(&d);
    free(backing);
    free(data);
    PASS();
}

TEST refcount_table_grows_and_describes_itself(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char *data;
    uint64_t old_rt;
    const size_t len = 3u << 20;
    data = (unsigned char *)malloc(len);
    ASSERT(data != NULL);
    memset(data, 0x42, len);
    /* 512 B clusters, 64-bit refcounts: one table cluster covers 2 MiB. */
    make_image(&d, 512, 64, 3, 18u << 20);
    old_rt = rd64(&d, 48);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 8, 1, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, len)));
    ASSERT(rd64(&d, 48) != old_rt);          /* switched already */
    ASSERT(rd32(&d, 56) >= 2);
    /* the new block takes the first cluster past the old coverage (64
     * blocks of 64 clusters), the table follows it */
    ASSERT_EQ(64 * 64 * 512 + 512, rd64(&d, 48));
    qh_assert_consistent(&d, 0, "after growth");
    /* On to about 19 MiB of file: the table grows by half each time (1, 2,
     * 3, 5, 8, 12 clusters); copying 8 pieces takes several 8-op batches. */
    {
        uint64_t off;
        for (off = len; off < (18u << 20); off += len)
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, off, data,
                                     (size_t)((18u << 20) - off < len ? (18u << 20) - off : len))));
    }
    ASSERT_EQ(12, rd32(&d, 56));
    close_exact(&h, &d, "after close");
    {
        unsigned char *back = (unsigned char *)malloc(len);
        ASSERT(back != NULL);
        ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 8, 0, 0));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, (18u << 20) - len, back, len)));
        ASSERT_MEM_EQ(data, back, len);
        qh_close_handle(&h);
        free(back);
    }
    free(data);
    qh_disk_free(&d);
    PASS();
}

TEST errors_range_busy_and_failed_state(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[16] = {0};
    int rc;
    make_image(&d, 65536, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 1));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_write(&h.img, (1 << 20) - 8, b, 16));
    ASSERT_EQ((1 << 20) - 8, q2w_error(&h.img)->offset);
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_read(&h.img, 1ull << 40, b, 1));
    rc = q2w_write(&h.img, 0, b, 16);
    ASSERT_EQ(Q2W_PENDING, rc);
    ASSERT_EQ(Q2W_ERR_BUSY, q2w_write(&h.img, 0, b, 16));
    ASSERT_EQ(Q2W_ERR_BUSY, q2w_flush(&h.img));
    /* An I/O error: the handle refuses everything afterwards. */
    ASSERT_EQ(Q2W_ERR_IO, q2w_resume(&h.img, -5));
    ASSERT_EQ(Q2W_ERR_FAILED, q2w_write(&h.img, 0, b, 16));
    ASSERT_EQ(Q2W_ERR_FAILED, q2w_flush(&h.img));
    ASSERT_EQ(Q2W_ERR_FAILED, q2w_resume(&h.img, 0));
    qh_close_handle(&h);
    qh_assert_consistent(&d, 0, "after the failure");
    qh_disk_free(&d);
    PASS();
}

TEST autoclear_bits_cleared_and_extensions_preserved(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char before[4096], data[10] = {1, 2, 3};
    make_image(&d, 4096, 16, 3, 1 << 20);
    q2w__put64(d.buf + 88, 0x8000000000000001ull);
    q2w__put64(d.buf + 80, 0x8000000000000001ull); /* lazy refcounts + unknown */
    q2w__put32(d.buf + 112, 0x7a7a7a7au); /* an unknown extension */
    q2w__put32(d.buf + 116, 5);
    memcpy(d.buf + 120, "hello", 5);
    memcpy(before, d.buf, sizeof before);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(0x8000000000000001ull, rd64(&d, 88)); /* not before a change */
    {
        q2w_info info;
        q2w_info_get(&h.img, &info);
        ASSERT_EQ(0x8000000000000001ull, info.autoclear);
        ASSERT_EQ(0x8000000000000001ull, info.compatible); /* kept as is */
        ASSERT_EQ(0, info.incompatible);
    }
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, 10)));
    ASSERT_EQ(0, rd64(&d, 88));
    {
        q2w_info info;
        q2w_info_get(&h.img, &info);
        ASSERT_EQ(0, info.autoclear);            /* as on disk */
    }
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 1u << 30)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    /* Outside the writer's own fields the header cluster is unchanged. */
    ASSERT_MEM_EQ(before + 104, d.buf + 104, sizeof before - 104);
    ASSERT_MEM_EQ(before, d.buf, 24);
    ASSERT_MEM_EQ(before + 60, d.buf + 60, 28);
    qh_disk_free(&d);
    PASS();
}

/* ---- checker ------------------------------------------------------------------------ */
/* A small written image: L2 at cluster 4, data clusters 5 and 6 (4 KiB). */
static void checker_image(qh_disk *d, int version)
{
    qh_handle h;
    unsigned char data[8192];
    int rc;
    memset(data, 9, sizeof data);
    make_image(d, 4096, 16, version, 1 << 20);
    rc = open_rw(&h, d, 4096, 1);
    ALK_CHECK(rc == Q2W_OK, "open");
    rc = qh_run(&h.img, d, q2w_write(&h.img, 0, data, sizeof data));
    ALK_CHECK(rc == Q2W_OK, "write");
    rc = qh_run(&h.img, d, q2w_close(&h.img));
    ALK_CHECK(rc == Q2W_OK, "close");
    qh_close_handle(&h);
}

static int find_kind(const q2w_check_result *r, int kind, uint64_t offset)
{
    size_t i;
    for (i = 0; i < r->n_findings; i++)
        if (r->findings[i].kind == kind && r->findings[i].offset == offset)
            return 1;
    return 0;
}

/* A finding with every field as given (printed when absent). */
static int find_exact(const q2w_check_result *r, int kind, uint64_t offset,
                      uint64_t where, uint64_t stored, uint64_t computed)
{
    size_t i;
    for (i = 0; i < r->n_findings; i++)
        if (r->findings[i].kind == kind && r->findings[i].offset == offset &&
            r->findings[i].where == where && r->findings[i].stored == stored &&
            r->findings[i].computed == computed)
            return 1;
    qh_print_findings(r);
    return 0;
}

/* A v3 snapshot entry with 4 bytes of extra data (the spec asks for 16
 * at least) is a corruption, as qemu-img check counts it: the finding says
 * where the entry is and how much extra data it has. */
TEST checker_finds_an_incomplete_snapshot_entry(void)
{
    qh_disk d;
    qh_handle h;
    q2w_check_result r;
    unsigned char *e;
    uint64_t pos, l1o;
    uint16_t idl, nml;
    ASSERT_EQ(Q2W_OK, qh_make(&d, 4u << 20, 3, 4096, 0, 1u << 20, NULL, NULL));
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 16, 64, 1, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, "data", 4)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 1, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(0, r.corruptions);
    pos = q2w__be64(d.buf + 64);
    e = d.buf + pos;
    ASSERT_EQ(24, q2w__be32(e + 36));
    l1o = q2w__be64(e);
    idl = q2w__be16(e + 12);
    nml = q2w__be16(e + 14);
    memmove(e + 44, e + 64, (size_t)idl + nml);  /* the id and name move up */
    e[36] = e[37] = e[38] = 0;
    e[39] = 4;
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(1, r.corruptions);
    ASSERT(find_exact(&r, Q2W_FIND_SNAPSHOT_INCOMPLETE, l1o, pos, 4, 0));
    ASSERT_STR_EQ("snapshot entry incomplete", q2w_finding_name(Q2W_FIND_SNAPSHOT_INCOMPLETE));
    qh_disk_free(&d);
    PASS();
}

static int io_flush_failing(void *user)
{
    (void)user;
    return -5;
}

static int io_write_failing(void *user, uint64_t off, const void *src,
                            size_t len)
{
    (void)user;
    (void)off;
    (void)src;
    (void)len;
    return -5;
}

/* q2w_repair_leaks on the in-memory disk, its write or flush replaced when
 * given (to make it fail); returns its result code. */
static int repair_on(qh_disk *d, int (*write)(void *, uint64_t, const void *,
                                              size_t),
                     int (*flush)(void *), q2w_check_result *r)
{
    q2w_io io;
    size_t need = 0;
    void *work;
    int rc;
    qh_make_io(d, &io);
    if (write) io.write = write;
    if (flush) io.flush = flush;
    rc = q2w_check_work_size(&io, &need, NULL);
    ALK_CHECK(rc == Q2W_OK, "work size: %s", q2w_strerror(rc));
    work = malloc(need);
    ALK_CHECK(work != NULL, "out of memory for check work");
    rc = q2w_repair_leaks(&io, work, need, r);
    free(work);
    return rc;
}

static uint64_t refcount_on_disk_16(const qh_disk *d, uint64_t rb, uint64_t c)
{
    return q2w__be16(d->buf + rb + c * 2);
}

TEST checker_finds_each_kind_of_damage(void)
{
    qh_disk d;
    q2w_check_result r;
    const uint64_t cs = 4096, rb = 2 * cs, l2 = 4 * cs;
    /* clean */
    checker_image(&d, 3);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(0, r.corruptions);
    ASSERT_EQ(0, r.leaks);
    ASSERT_EQ(2, r.allocated_clusters);
    ASSERT_EQ(256, r.total_clusters);        /* 1 MiB of 4 KiB clusters */
    ASSERT_EQ(7 * cs, r.image_end_offset);
    /* refcount of data cluster 5 lowered to 0: corruption located */
    q2w__put16(d.buf + rb + 5 * 2, 0);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(r.corruptions >= 1);
    ASSERT(find_exact(&r, Q2W_FIND_REFCOUNT, 5 * cs, rb + 5 * 2, 0, 1));
    /* raised to 2: a leak, plus COPIED now wrong (refcount != 1) */
    q2w__put16(d.buf + rb + 5 * 2, 2);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(1, r.leaks);
    ASSERT(find_exact(&r, Q2W_FIND_LEAK, 5 * cs, rb + 5 * 2, 2, 1));
    ASSERT(find_exact(&r, Q2W_FIND_COPIED, 5 * cs, l2, 5 * cs | Q2W__COPIED, 2));
    /* repair lowers it; clean after */
    ASSERT_EQ(Q2W_OK, repair_on(&d, NULL, NULL, &r));
    ASSERT_EQ(1, r.leaks_fixed);
    /* located at the refcount entry's byte: block + 5 * 2 bytes */
    ASSERT_EQ(Q2W_FIND_LEAK, r.findings[0].kind);
    ASSERT_EQ(rb + 5 * 2, r.findings[0].where);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(0, r.corruptions + r.leaks);
    /* a repair whose flush fails says so */
    q2w__put16(d.buf + rb + 5 * 2, 2);
    ASSERT_EQ(Q2W_ERR_IO, repair_on(&d, NULL, io_flush_failing, &r));
    ASSERT_STR_EQ("flush", r.error.what);
    ASSERT_EQ(0, r.error.offset);
    ASSERT_EQ(1, r.check_errors);
    ASSERT_EQ(1, refcount_on_disk_16(&d, rb, 5)); /* written before */
    /* a repair whose write fails says so, where, and counts it once */
    q2w__put16(d.buf + rb + 5 * 2, 2);
    ASSERT_EQ(Q2W_ERR_IO, repair_on(&d, io_write_failing, NULL, &r));
    ASSERT_STR_EQ("write", r.error.what);
    ASSERT_EQ(rb, r.error.offset);
    ASSERT_EQ(1, r.check_errors);
    ASSERT_EQ(2, refcount_on_disk_16(&d, rb, 5)); /* not written */
    q2w__put16(d.buf + rb + 5 * 2, 1);
    /* the same for the COPIED repair's write of the L2 table */
    q2w__put64(d.buf + l2, 5 * cs);
    ASSERT_EQ(Q2W_ERR_IO, repair_on(&d, io_write_failing, NULL, &r));
    ASSERT_STR_EQ("write", r.error.what);
    ASSERT_EQ(l2, r.error.offset);
    ASSERT_EQ(1, r.check_errors);
    ASSERT_EQ(5 * cs, q2w__be64(d.buf + l2)); /* not written */
    q2w__put64(d.buf + l2, 5 * cs | Q2W__COPIED);
    /* an L1 table past the end of the file: located at header field 40
     * (the L1 table offset) */
    {
        uint64_t l1 = q2w__be64(d.buf + 40), past = 64 * cs;
        q2w__put64(d.buf + 40, past);
        ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
        ASSERT(find_exact(&r, Q2W_FIND_PAST_EOF, past, 40, 0, 0));
        q2w__put64(d.buf + 40, l1);
        ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
        ASSERT_EQ(0, r.corruptions + r.leaks);
    }
    /* a leaked cluster nobody references (inside the file) */
    d.len = 10 * cs;
    q2w__put16(d.buf + rb + 9 * 2, 1);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(1, r.leaks);
    ASSERT_EQ(0, r.corruptions);
    ASSERT(find_exact(&r, Q2W_FIND_LEAK, 9 * cs, rb + 9 * 2, 1, 0));
    q2w__put16(d.buf + rb + 9 * 2, 0);
    d.len = 7 * cs;
    /* COPIED cleared on an L2 entry with refcount 1 */
    q2w__put64(d.buf + l2, 5 * cs);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(1, r.corruptions);
    ASSERT(find_exact(&r, Q2W_FIND_COPIED, 5 * cs, l2, 5 * cs, 1));
    /* unaligned data offset */
    q2w__put64(d.buf + l2, (5 * cs + 512) | Q2W__COPIED);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_kind(&r, Q2W_FIND_UNALIGNED, 5 * cs + 512));
    ASSERT_EQ(l2, r.findings[0].where);     /* located at its entry */
    ASSERT_EQ(0, r.findings[0].stored);
    ASSERT_EQ(0, r.findings[0].computed);
    /* past the end of the file */
    q2w__put64(d.buf + l2, (100 * cs) | Q2W__COPIED);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_PAST_EOF, 100 * cs, l2, 0, 0));
    /* reserved bits */
    q2w__put64(d.buf + l2, (5 * cs) | Q2W__COPIED | (1ull << 58));
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_RESERVED, 5 * cs, l2,
                      (5 * cs) | Q2W__COPIED | (1ull << 58), 0));
    q2w__put64(d.buf + l2, (5 * cs) | Q2W__COPIED);
    q2w__put64(d.buf + l2 + 8, (6 * cs) | Q2W__COPIED | (1ull << 57));
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_RESERVED, 6 * cs, l2 + 8,
                      (6 * cs) | Q2W__COPIED | (1ull << 57), 0));
    q2w__put64(d.buf + l2 + 8, (6 * cs) | Q2W__COPIED);
    /* reserved bits in the L1 entry (cluster 3) and the refcount table
     * entry (cluster 1) */
    q2w__put64(d.buf + 3 * cs, l2 | Q2W__COPIED | (1ull << 60));
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_RESERVED, l2, 3 * cs,
                      l2 | Q2W__COPIED | (1ull << 60), 0));
    q2w__put64(d.buf + 3 * cs, l2 | Q2W__COPIED);
    q2w__put64(d.buf + cs, rb | 1);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_RESERVED, rb | 1, cs, rb | 1, 0));
    qh_disk_free(&d);
    /* a refcount table running past the end of the file: located at the
     * header field that says where it is (48) */
    checker_image(&d, 3);
    q2w__put32(d.buf + 56, 100);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_PAST_EOF, 7 * cs, 48, 0, 0));
    q2w__put32(d.buf + 56, 1);
    /* a snapshot table past the end of the file (field 64), and an entry
     * whose L1 is unaligned (located at the entry) */
    q2w__put32(d.buf + 60, 1);
    q2w__put64(d.buf + 64, 100 * cs);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_PAST_EOF, 100 * cs, 64, 0, 0));
    qh_disk_reserve(&d, 8 * cs);
    d.len = 8 * cs;
    q2w__put64(d.buf + 64, 7 * cs);
    q2w__put64(d.buf + 7 * cs, 5 * cs + 8);
    q2w__put32(d.buf + 7 * cs + 8, 3);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_HEADER, 5 * cs + 8, 7 * cs, 3, 0));
    /* an L1 of exactly the largest size is walked, one entry more is not */
    q2w__put64(d.buf + 7 * cs, 100 * cs);
    q2w__put32(d.buf + 7 * cs + 8, Q2W_MAX_L1_BYTES / 8);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(!find_kind(&r, Q2W_FIND_HEADER, 100 * cs));
    q2w__put32(d.buf + 7 * cs + 8, Q2W_MAX_L1_BYTES / 8 + 1);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_HEADER, 100 * cs, 7 * cs,
                      Q2W_MAX_L1_BYTES / 8 + 1, 0));
    qh_disk_free(&d);
    /* zero flag in a v2 image */
    checker_image(&d, 2);
    q2w__put64(d.buf + l2, (5 * cs) | Q2W__COPIED | Q2W__ZERO);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_exact(&r, Q2W_FIND_ZERO_FLAG_V2, 5 * cs, l2,
                      (5 * cs) | Q2W__COPIED | Q2W__ZERO, 0));
    qh_disk_free(&d);
    PASS();
}

TEST checker_work_memory_is_exact(void)
{
    qh_disk d;
    q2w_io io;
    q2w_check_result r;
    size_t need;
    void *work;
    checker_image(&d, 3);
    qh_make_io(&d, &io);
    ASSERT_EQ(Q2W_OK, q2w_check_work_size(&io, &need, NULL));
    ASSERT_EQ(2 * 4096 + 7 * 4, need);
    {
        q2w_error_info e;                     /* stale context is cleared */
        memset(&e, 0x5a, sizeof e);
        ASSERT_EQ(Q2W_OK, q2w_check_work_size(&io, &need, &e));
        ASSERT_EQ(Q2W_OK, e.code);
        ASSERT(e.what == NULL);
        ASSERT_EQ(0, e.offset);
    }
    work = malloc(need);
    ASSERT(work != NULL);
    ASSERT_EQ(Q2W_ERR_NOMEM, q2w_check(&io, work, need - 1, 0, &r));
    ASSERT_EQ(need, r.error.needed);
    ASSERT_EQ(Q2W_OK, q2w_check(&io, work, need, 0, &r));
    free(work);
    /* A write-less io cannot repair. */
    io.write = NULL;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_check(&io, &need, 1, Q2W_CHECK_REPAIR_LEAKS, &r));
    qh_disk_free(&d);
    PASS();
}

/* Data written into a cluster the image calls metadata is refused, not
 * done: a hostile L2 entry pointing at the header. */
TEST hostile_entries_are_refused(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[8] = {0};
    const uint64_t cs = 4096;
    checker_image(&d, 3);
    q2w__put64(d.buf + 4 * cs, Q2W__COPIED | 0x200); /* unaligned for 4K */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    {
        int rc = qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 8));
        if (rc != Q2W_ERR_METADATA)
            fprintf(stderr, "got %s (%s)\n", q2w_strerror(rc), q2w_error(&h.img)->what);
        ASSERT_EQ(Q2W_ERR_METADATA, rc);
    }
    ASSERT_STR_EQ("l2 entry unaligned", q2w_error(&h.img)->what);
    ASSERT_EQ(4 * cs, q2w_error(&h.img)->offset);
    ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_read(&h.img, 0, b, 8)));
    /* The handle stays usable elsewhere. */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, cs, b, 8)));
    ASSERT_EQ(9, b[0]);
    q2w__put64(d.buf + 4 * cs + 8, Q2W__COPIED | 0); /* reads as unallocated */
    qh_close_handle(&h);
    q2w__put64(d.buf + 4 * cs, Q2W__COPIED | (3 * cs)); /* the L1 table */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, cs, b, 8)));
    ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 8)));
    ASSERT_STR_EQ("data cluster overlaps metadata", q2w_error(&h.img)->what);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}


/* A data entry naming another L2 table: a read and a map take it (its
 * bytes are that table's) whatever the cache holds - the same answer
 * before and after the other table was read - and a write into it is
 * refused while that table is cached. An entry naming its own table is
 * refused by every operation. */
TEST an_entry_naming_a_table_gets_one_answer_whatever_the_cache_holds(void)
{
    qh_disk d;
    qh_handle h;
    q2w_extent x;
    unsigned char data[4096], b[8];
    uint64_t l1, t0, t1;
    int order;
    memset(data, 7, sizeof data);
    make_image(&d, 4096, 16, 3, 4 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, sizeof data)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 2 << 20, data, sizeof data)));
    close_exact(&h, &d, "two tables");
    l1 = rd64(&d, 40);
    t0 = rd64(&d, l1) & 0x00fffffffffffe00ull;
    t1 = rd64(&d, l1 + 8) & 0x00fffffffffffe00ull;
    ASSERT(t0 && t1 && t0 != t1);
    q2w__put64(d.buf + t0 + 8, Q2W__COPIED | t1);   /* cluster 1: table 1 */
    q2w__put64(d.buf + t0 + 16, Q2W__COPIED | t0);  /* cluster 2: its own */
    for (order = 0; order < 2; order++) {
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
        if (order) /* table 1 in the cache first */
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 2 << 20, b, 8)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 4096, b, 8)));
        ASSERT_EQ(0, memcmp(b, d.buf + t1, 8));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, 4096, 4096, &x)));
        ASSERT_EQ(Q2W_EXTENT_DATA, x.kind);
        ASSERT_EQ(t1, x.host);
        ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_read(&h.img, 8192, b, 8)));
        ASSERT_STR_EQ("data cluster overlaps metadata", q2w_error(&h.img)->what);
        ASSERT_EQ(t0 + 16, q2w_error(&h.img)->offset);
        ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_map(&h.img, 8192, 4096, &x)));
        if (!order)
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 2 << 20, b, 8)));
        ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_write(&h.img, 4096, b, 8)));
        ASSERT_STR_EQ("data cluster overlaps metadata", q2w_error(&h.img)->what);
        qh_close_handle(&h);
    }
    qh_disk_free(&d);
    PASS();
}

/* The POSIX executor end to end on a real file: create, write, read back,
 * close, check through q2w_posix_io; a backing reader callback. */
static int test_backing_read(void *user, uint64_t off, void *dst, size_t len)
{
    size_t i;
    (void)user;
    for (i = 0; i < len; i++)
        ((unsigned char *)dst)[i] = (unsigned char)((off + i) % 251);
    return 0;
}

TEST posix_executor_round_trip(void)
{
    char path[] = "/tmp/test_qcow2w.XXXXXX";
    static unsigned char mem[1u << 20];
    q2w_op ops[16];
    q2w_image img;
    q2w_config cfg;
    q2w_create_opts o;
    q2w_backing_reader br;
    q2w_io io;
    q2w_fdbox box;
    q2w_check_result r;
    unsigned char buf[10000], got[10000], *create;
    uint64_t len;
    size_t need, i;
    void *work;
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    memset(&o, 0, sizeof o);
    o.size = 1 << 20;
    o.cluster_size = 4096;
    o.backing = "pattern";
    ASSERT_EQ(Q2W_OK, q2w_create(&o, NULL, 0, &len, NULL));
    create = (unsigned char *)malloc((size_t)len);
    ASSERT(create != NULL);
    ASSERT_EQ(Q2W_OK, q2w_create(&o, create, (size_t)len, &len, NULL));
    ASSERT_EQ(0, q2w_pwrite_full(fd, 0, create, (size_t)len));
    free(create);
    memset(&cfg, 0, sizeof cfg);
    cfg.mem = mem;
    cfg.mem_len = sizeof mem;
    cfg.ops = ops;
    cfg.ops_cap = 16;
    cfg.file_size = len;
    cfg.writable = 1;
    cfg.has_backing = 1;
    cfg.backing_size = 1 << 20;
    br.read = test_backing_read;
    br.user = NULL;
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, &br, q2w_open(&img, &cfg)));
    memset(buf, 0xab, sizeof buf);
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, &br,
                                    q2w_write(&img, 3000, buf, sizeof buf)));
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, &br,
                                    q2w_write_zeroes(&img, 20000, 100)));
    ASSERT_EQ(Q2W_OK, q2w_posix_run_flags(&img, fd, &br, Q2W_POSIX_NO_FLUSH,
                                          q2w_flush(&img)));
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, &br,
                                    q2w_read(&img, 0, got, sizeof got)));
    for (i = 0; i < sizeof got; i++)
        ASSERT_EQ(i >= 3000 ? 0xab : (int)(i % 251), (int)got[i]);
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, &br,
                                    q2w_read(&img, 19990, got, 120)));
    ASSERT_EQ((int)(19999 % 251), (int)got[9]);
    ASSERT_EQ(0, got[10]);
    ASSERT_EQ(0, got[109]);
    ASSERT_EQ((int)(20100 % 251), (int)got[110]);
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, &br, q2w_close(&img)));
    q2w_posix_io(&io, fd, &box);
    {
        struct stat st;
        ASSERT_EQ(0, fstat(fd, &st));
        ASSERT_EQ((uint64_t)st.st_size, io.file_size);
    }
    ASSERT_EQ(Q2W_OK, q2w_check_work_size(&io, &need, NULL));
    work = malloc(need);
    ASSERT(work != NULL);
    ASSERT_EQ(Q2W_OK, q2w_check(&io, work, need, 0, &r));
    ASSERT_EQ(0, r.corruptions + r.leaks);
    ASSERT_EQ(Q2W_OK, q2w_repair_leaks(&io, work, need, &r));
    ASSERT_EQ(0, r.leaks_fixed);
    free(work);
    /* Without a backing reader the executor reads zeros for it. */
    cfg.file_size = io.file_size;
    cfg.writable = 0;
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, NULL, q2w_open(&img, &cfg)));
    memset(got, 0xee, 64);
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, fd, NULL, q2w_read(&img, 500000, got, 64)));
    for (i = 0; i < 64; i++) ASSERT_EQ(0, got[i]);
    /* Reads past the end of the file are zeros. */
    ASSERT_EQ(0, q2w_pread_full(fd, (uint64_t)io.file_size + 10, got, 16));
    ASSERT_EQ(0, got[0]);
    ASSERT_EQ(0, q2w_pwrite_full(fd, (uint64_t)io.file_size, NULL, 70000));
    close(fd);
    unlink(path);
    PASS();
}

/* q2w_posix_exec joins neighbouring ops that continue each other in the
 * file and in memory into one call: random batches (runs that continue,
 * runs that continue only in the file or only in memory, zero writes,
 * reads, overlaps) on a real file give what the ops one by one give on a
 * copy in memory, and every read sees the bytes written before it. */
TEST posix_executor_joins_neighbours_exactly(void)
{
    enum { FILE_LEN = 1 << 16, POOL = 1 << 15, N = 24 };
    char path[] = "/tmp/test_qcow2w_join.XXXXXX";
    static unsigned char pool[POOL], model[FILE_LEN], disk[FILE_LEN];
    static unsigned char got[POOL], want[POOL];
    q2w_op ops[N];
    q2w_image img;
    uint64_t rng = test_seed * 0x2545f4914f6cdd1dull + 3;
    unsigned round, i;
    int fd = mkstemp(path);
    ASSERT(fd >= 0);
    for (i = 0; i < POOL; i++) pool[i] = (unsigned char)(i * 13 + 7);
    for (round = 0; round < 300; round++) {
        size_t used = 0;
        memset(model, 0x5c, sizeof model);
        ASSERT_EQ(0, q2w_pwrite_full(fd, 0, model, sizeof model));
        memset(got, 0, sizeof got);
        for (i = 0; i < N; i++) {
            q2w_op *o = &ops[i];
            uint64_t r = alksim_splitmix64(&rng);
            size_t len = (size_t)(r % 700) + 1;
            int cont = i > 0 && (r >> 16) % 4 != 0;
            memset(o, 0, sizeof *o);
            o->kind = (r >> 20) % 5 == 0 ? Q2W_OP_READ : Q2W_OP_WRITE;
            o->len = len;
            o->off = cont ? ops[i - 1].off + ops[i - 1].len
                          : (alksim_splitmix64(&rng) % (FILE_LEN - 1400));
            if ((r >> 24) % 7 == 0) o->off += 1; /* continues in memory only */
            if (o->off + len > FILE_LEN) o->off = FILE_LEN - len;
            if (o->kind == Q2W_OP_READ) {
                if (used + len > POOL) used = 0;
                o->dst = got + ((cont && (r >> 28) % 6 && ops[i - 1].dst &&
                                 (size_t)(ops[i - 1].dst - got) +
                                         ops[i - 1].len + len <= POOL)
                                    ? (size_t)(ops[i - 1].dst - got) + ops[i - 1].len
                                    : used);
                used += len;
            } else if ((r >> 32) % 9 == 0) {
                o->src = NULL;                      /* zeros */
            } else {
                size_t at = (cont && ops[i - 1].src && (r >> 36) % 6 &&
                             (size_t)(ops[i - 1].src - pool) + ops[i - 1].len +
                                     len <= POOL)
                                ? (size_t)(ops[i - 1].src - pool) + ops[i - 1].len
                                : (size_t)(alksim_splitmix64(&rng) % (POOL - len));
                o->src = pool + at;
            }
        }
        /* the reference: one op at a time, in order, in memory; what each
         * read must have seen, recorded as it goes */
        memset(want, 0, sizeof want);
        for (i = 0; i < N; i++) {
            const q2w_op *o = &ops[i];
            if (o->kind == Q2W_OP_WRITE) {
                if (o->src) memcpy(model + o->off, o->src, o->len);
                else memset(model + o->off, 0, o->len);
            } else {
                memcpy(want + (o->dst - got), model + o->off, o->len);
            }
        }
        memset(&img, 0, sizeof img);
        img.ops = ops;
        img.n_ops = N;
        ASSERT_EQ(0, q2w_posix_exec(&img, fd, NULL, 0));
        ASSERT_EQ(0, q2w_pread_full(fd, 0, disk, sizeof disk));
        ASSERTm("the file after a joined batch", memcmp(disk, model, sizeof model) == 0);
        for (i = 0; i < N; i++)
            if (ops[i].kind == Q2W_OP_READ)
                ASSERTm("a read in a joined batch",
                        memcmp(ops[i].dst, want + (ops[i].dst - got), ops[i].len) == 0);
    }
    close(fd);
    unlink(path);
    PASS();
}

/* A refcount-1 cluster whose COPIED flags were cleared (stale) gets them
 * back when written, instead of a copy or a refusal. */
TEST stale_copied_flags_are_set_again(void)
{
    qh_disk d;
    qh_handle h;
    q2w_check_result r;
    unsigned char b[100];
    const uint64_t cs = 4096;
    memset(b, 0x5e, sizeof b);
    checker_image(&d, 3);
    q2w__put64(d.buf + 3 * cs, 4 * cs);       /* L1 entry without COPIED */
    q2w__put64(d.buf + 4 * cs, 5 * cs);       /* L2 entry without COPIED */
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(2, r.corruptions);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 10, b, 100)));
    close_exact(&h, &d, "after the write");
    ASSERT_EQ((5 * cs) | Q2W__COPIED, rd64(&d, 4 * cs)); /* in place */
    ASSERT_EQ((4 * cs) | Q2W__COPIED, rd64(&d, 3 * cs));
    qh_disk_free(&d);
    PASS();
}

/* A preallocated zero cluster (zero flag with an offset): a partial write
 * goes in place and the rest of the cluster becomes real zeros. */
TEST partial_write_into_a_preallocated_zero_cluster(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[100], got[4096];
    const uint64_t cs = 4096;
    int i;
    memset(b, 0x7c, sizeof b);
    checker_image(&d, 3);
    /* the image's second cluster (L2 entry 1, data at cluster 6) */
    q2w__put64(d.buf + 4 * cs + 8, (6 * cs) | Q2W__COPIED | Q2W__ZERO);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, cs + 1000, b, 100)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, cs, got, 4096)));
    for (i = 0; i < 4096; i++)
        ASSERT_EQ(i >= 1000 && i < 1100 ? 0x7c : 0, (int)got[i]);
    close_exact(&h, &d, "after the write");
    ASSERT_EQ((6 * cs) | Q2W__COPIED, rd64(&d, 4 * cs + 8));
    ASSERT_EQ((5 * cs) | Q2W__COPIED, rd64(&d, 4 * cs));
    qh_disk_free(&d);
    PASS();
}

/* An error met half way through a write is reported after the ops already
 * planned have run; what was written stays consistent. */
TEST error_half_way_comes_after_the_planned_ops(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[8192], got[4096];
    const uint64_t cs = 4096;
    memset(b, 0x4d, sizeof b);
    checker_image(&d, 3);
    q2w__put64(d.buf + 4 * cs + 8, Q2W__COPIED | 0x200); /* cluster 1 bad */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 8192)));
    ASSERT_EQ(4 * cs + 8, q2w_error(&h.img)->offset);
    ASSERT_EQ(1, q2w_error(&h.img)->index);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, 4096)));
    ASSERT_MEM_EQ(b, got, 4096);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* The same error, with a call refused (BUSY) before every resume: the
 * write still ends with its own error and its own context, not the
 * refusal's (ERRORS). */
TEST error_half_way_keeps_its_context_past_a_busy_refusal(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[8192], byte;
    const uint64_t cs = 4096;
    size_t n;
    int rc, busy = 0;
    memset(b, 0x4d, sizeof b);
    checker_image(&d, 3);
    q2w__put64(d.buf + 4 * cs + 8, Q2W__COPIED | 0x200); /* cluster 1 bad */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    rc = q2w_write(&h.img, 0, b, 8192);
    while (rc == Q2W_PENDING) {
        const q2w_op *op = q2w_batch(&h.img, &n);
        qh_exec(&d, op, n);
        ASSERT_EQ(Q2W_ERR_BUSY, q2w_read(&h.img, 0, &byte, 1));
        ASSERT_EQ(Q2W_ERR_BUSY, q2w_error(&h.img)->code);
        busy++;
        rc = q2w_resume(&h.img, 0);
    }
    ASSERT(busy > 0);
    ASSERT_EQ(Q2W_ERR_METADATA, rc);
    ASSERT_EQ(Q2W_ERR_METADATA, q2w_error(&h.img)->code);
    ASSERT_EQ(4 * cs + 8, q2w_error(&h.img)->offset);
    ASSERT_EQ(1, q2w_error(&h.img)->index);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Growing an image whose backing file is longer than the old size zeroes
 * the new area instead of letting the backing file show (as qemu). */
TEST resize_zeroes_what_a_longer_backing_file_would_show(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char *backing, got[8192];
    int i;
    backing = (unsigned char *)malloc(1 << 20);
    ASSERT(backing != NULL);
    memset(backing, 0x99, 1 << 20);
    ASSERT_EQ(Q2W_OK, qh_make(&d, 4u << 20, 0, 4096, 0, 10000, "b", NULL));
    d.backing = backing;
    d.backing_len = 1 << 20;
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 20000)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 9000, got, 8192)));
    for (i = 0; i < 8192; i++) ASSERT_EQ(i < 1000 ? 0x99 : 0, (int)got[i]);
    /* growing past the backing file's end zeroes only up to that end:
     * clusters 256.. (1 MiB on) stay unallocated, without even a zero flag */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, (1 << 20) + 3 * 4096)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    {
        uint64_t l2 = rd64(&d, rd64(&d, 40)) & Q2W__OFF_MASK;
        ASSERT(l2 != 0);
        ASSERT_EQ(Q2W__ZERO, rd64(&d, l2 + 255 * 8));   /* last backed cluster */
        ASSERT_EQ(0, rd64(&d, l2 + 256 * 8));
        ASSERT_EQ(0, rd64(&d, l2 + 258 * 8));
    }
    close_exact(&h, &d, "after resize");
    free(backing);
    qh_disk_free(&d);
    PASS();
}

/* Growth over a longer backing file zeroes the new area after the size
 * switch: a bad entry there is refused before it, the image unchanged. */
TEST resize_verifies_before_switching(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char *backing, *before, b[512];
    uint64_t l2;
    backing = (unsigned char *)malloc(1 << 20);
    ASSERT(backing != NULL);
    memset(backing, 0x77, 1 << 20);
    memset(b, 1, sizeof b);
    ASSERT_EQ(Q2W_OK, qh_make(&d, 4u << 20, 0, 4096, 0, 65536, "b", NULL));
    d.backing = backing;
    d.backing_len = 1 << 20;
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 512)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    /* an entry past the old end (virtual cluster 40) with reserved bits */
    l2 = rd64(&d, rd64(&d, 40)) & Q2W__OFF_MASK;
    q2w__put64(d.buf + l2 + 40 * 8, (7ull * 4096) | 2);
    before = (unsigned char *)malloc(d.len);
    ASSERT(before != NULL);
    memcpy(before, d.buf, d.len);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 1));
    ASSERT_EQ(Q2W_ERR_METADATA,
              qh_run(&h.img, &d, q2w_resize(&h.img, 512 * 1024)));
    CHECK_CALL(error_is(&h.img, "l2 entry reserved bits", l2 + 40 * 8, 40));
    qh_close_handle(&h);
    ASSERT_EQ(65536, rd64(&d, 24));
    ASSERT_MEM_EQ(before, d.buf, d.len);
    free(before);
    free(backing);
    qh_disk_free(&d);
    PASS();
}

/* A snapshot table made by hand as qemu lays it out: two snapshots sharing
 * one L1 copy; entries padded to 8 bytes (73 -> 80). Refcounts count
 * every path: the L1 copy 2, the L2 table and data clusters 3. The
 * checker calls it clean; a wrong name length or padding would not. */
TEST checker_counts_snapshot_paths(void)
{
    qh_disk d;
    q2w_check_result r;
    const uint64_t cs = 4096, rb = 2 * cs;
    unsigned char *t;
    int i;
    checker_image(&d, 3);               /* L2 at 4, data at 5 and 6 */
    memcpy(d.buf + 7 * cs, d.buf + 3 * cs, cs);   /* L1 copy at 7 */
    q2w__put64(d.buf + 3 * cs, 4 * cs);           /* COPIED cleared */
    q2w__put64(d.buf + 4 * cs, 5 * cs);
    q2w__put64(d.buf + 4 * cs + 8, 6 * cs);
    t = d.buf + 8 * cs;                           /* table at 8 */
    for (i = 0; i < 2; i++) {
        unsigned char *e = t + i * 80;
        q2w__put64(e, 7 * cs);
        q2w__put32(e + 8, 1);
        q2w__put16(e + 12, 1);                    /* id "1" / "2" */
        q2w__put16(e + 14, 8);                    /* name "snapshot" */
        q2w__put32(e + 36, 24);                   /* extra data */
        q2w__put64(e + 48, 1 << 20);              /* disk size */
        e[64] = (unsigned char)('1' + i);
        memcpy(e + 65, "snapshot", 8);
    }
    q2w__put32(d.buf + 60, 2);
    q2w__put64(d.buf + 64, 8 * cs);
    d.len = 9 * cs;
    q2w__put16(d.buf + rb + 4 * 2, 3);
    q2w__put16(d.buf + rb + 5 * 2, 3);
    q2w__put16(d.buf + rb + 6 * 2, 3);
    q2w__put16(d.buf + rb + 7 * 2, 2);
    q2w__put16(d.buf + rb + 8 * 2, 1);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    qh_print_findings(&r);
    ASSERT_EQ(0, r.corruptions);
    ASSERT_EQ(0, r.leaks);
    /* Without the second snapshot the counts are one too high: leaks. */
    q2w__put32(d.buf + 60, 1);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(0, r.corruptions);
    ASSERT_EQ(4, r.leaks);
    qh_disk_free(&d);
    PASS();
}

/* A reference to a cluster no refcount-table entry can describe. */
TEST checker_finds_references_past_the_refcount_table(void)
{
    qh_disk d;
    q2w_check_result r;
    qh_handle h;
    unsigned char b[512];
    const uint64_t cs = 512, far = 5000; /* one table cluster: 4096 */
    uint64_t l2;
    memset(b, 1, sizeof b);
    make_image(&d, 512, 64, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 512)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    l2 = rd64(&d, rd64(&d, 40)) & Q2W__OFF_MASK;
    q2w__put64(d.buf + l2 + 8, (far * cs) | Q2W__COPIED);
    d.len = (size_t)(far + 1) * cs;
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_kind(&r, Q2W_FIND_REFCOUNT, far * cs)); /* and COPIED */
    ASSERT_EQ(2, r.corruptions);
    qh_disk_free(&d);
    PASS();
}

/* An image big enough that its refcount table needs several clusters. */
TEST create_with_a_multi_cluster_refcount_table(void)
{
    qh_disk d;
    uint64_t R, B = 0, k;
    make_image(&d, 512, 64, 3, 16ull << 30); /* L1 4 MiB: 8192 clusters */
    R = rd32(&d, 56);
    ASSERT(R >= 2);
    for (k = 0; k < R * 64; k++)
        if (rd64(&d, 512 + k * 8)) B++;
    /* header, table, blocks, then the L1; the blocks cover all of it */
    ASSERT_EQ((1 + R + B) * 512, rd64(&d, 40));
    ASSERT_EQ((1 + R + B + 8192) * 512, d.len);
    ASSERT(B * 64 >= 1 + R + B + 8192);
    ASSERT((B - 1) * 64 < 1 + R + B + 8192);   /* no block too many */
    ASSERT_EQ((B * 8 + 511) / 512, R);         /* no table cluster too many */
    ASSERT(R * 64 >= B);
    qh_assert_consistent(&d, 1, "fresh");
    qh_disk_free(&d);
    PASS();
}

/* A freed cluster is found again by the allocator once its refcount has
 * dropped: discard, flush, write elsewhere - the file does not grow. */
TEST freed_clusters_are_reused(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[4096];
    size_t len;
    memset(b, 3, sizeof b);
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 4096)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 4096, b, 4096)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_discard(&h.img, 0, 4096)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    len = d.len;
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 8192, b, 4096)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    ASSERT_EQ(len, d.len);
    qh_assert_consistent(&d, 1, "after reuse");
    qh_disk_free(&d);
    PASS();
}

/* A handle is done after close; an image naming a backing file opens with
 * no_backing and reads zeros where it has nothing. */
TEST closed_handles_and_no_backing(void)
{
    qh_disk d;
    qh_handle h;
    q2w_config cfg;
    unsigned char got[16];
    ASSERT_EQ(Q2W_OK, qh_make(&d, 4u << 20, 0, 4096, 0, 1 << 20, "absent.img", NULL));
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_write(&h.img, 0, "x", 1));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_close(&h.img));
    ASSERT_STR_EQ("image not open", q2w_error(&h.img)->what);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_resume(&h.img, 0));
    memset(&cfg, 0, sizeof cfg);
    cfg.mem = h.mem;
    cfg.mem_len = h.mem_len;
    cfg.ops = h.ops;
    cfg.ops_cap = 16;
    cfg.file_size = d.len;
    cfg.no_backing = 1;
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_open(&h.img, &cfg)));
    memset(got, 0xff, sizeof got);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 100, got, 16)));
    ASSERT_EQ(0, got[0]);
    ASSERT_EQ(0, got[15]);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* With room for one deferred-free range, every discard of a lone cluster
 * forces a checkpoint; the image stays exact. */
TEST a_full_free_list_forces_checkpoints(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[4096 * 8];
    int i;
    memset(b, 6, sizeof b);
    make_image(&d, 4096, 16, 3, 1 << 20);
    qh_max_frees = 1;
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    qh_max_frees = 0;
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, sizeof b)));
    for (i = 0; i < 8; i += 2)
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d,
                                 q2w_discard(&h.img, (uint64_t)i * 4096, 4096)));
    ASSERT(d.flushes >= 3);
    close_exact(&h, &d, "after discards");
    qh_disk_free(&d);
    PASS();
}

/* Clusters with refcount 0 below the highest used one (holes). */
static uint64_t holes_below_end(const qh_disk *d)
{
    uint32_t order = rd32(d, 96);
    uint64_t cs = 1ull << rd32(d, 20), rt = rd64(d, 48);
    uint64_t epb = cs * 8 >> order, c, last = 0, free_n = 0;
    uint64_t n = ((uint64_t)d->len + cs - 1) / cs;
    unsigned char *blk = (unsigned char *)malloc((size_t)cs);
    ALK_CHECK(blk != NULL, "out of memory");
    for (c = 0; c < n; c++) {
        uint64_t off = rd64(d, rt + (c / epb) * 8), v = 0;
        if (off) {
            qh_disk_read(d, off, blk, (size_t)cs);
            v = q2w__rc_get(blk, c % epb, order);
        }
        if (v) last = c;
        else free_n++;
    }
    free(blk);
    return free_n - (n - 1 - last); /* free ones past the last used: not holes */
}

/* Sequential writes into a fresh image leave no holes, across new
 * refcount blocks and a moved refcount table; the old table's clusters,
 * freed, are reused by the next allocation. */
TEST growth_leaves_no_holes_and_reuses_the_old_table(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char *data, b[512];
    const size_t len = 3u << 20;
    uint64_t old_rt;
    data = (unsigned char *)malloc(len);
    ASSERT(data != NULL);
    memset(data, 0x21, len);
    memset(b, 0x22, sizeof b);
    make_image(&d, 512, 64, 3, 8u << 20);
    old_rt = rd64(&d, 48);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 8, 1, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, len)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT(rd64(&d, 48) != old_rt);
    /* The next cluster allocated is the old table's (cluster 1). */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, len, b, 512)));
    close_exact(&h, &d, "after growth");
    ASSERT_EQ(0, holes_below_end(&d));
    free(data);
    qh_disk_free(&d);
    PASS();
}

/* The L1 limit (32 MiB, as qemu) is reached exactly, not one entry less;
 * with small clusters growth is limited to one refcount block's range. */
TEST resize_up_to_the_l1_limit(void)
{
    qh_disk d;
    qh_handle h;
    const uint64_t span = 65536ull * 8192; /* bytes per L1 entry */
    const uint64_t max = (Q2W_MAX_L1_BYTES / 8) * span;
    make_image(&d, 512, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
    /* 512 B, 16-bit: a range is 256 clusters; an L1 of 256 is refused. */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 255ull * 64 * 32768)));
    ASSERT_EQ(Q2W_ERR_LIMIT, qh_run(&h.img, &d, q2w_resize(&h.img, 256ull * 64 * 32768)));
    ASSERT_STR_EQ("table larger than one refcount block's range",
                  q2w_error(&h.img)->what);
    ASSERT_EQ(40, q2w_error(&h.img)->offset);    /* the L1 pair's field */
    ASSERT_EQ(256, q2w_error(&h.img)->index);    /* clusters it would need */
    close_exact(&h, &d, "512 B growth");
    qh_disk_free(&d);
    make_image(&d, 65536, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 65536, 1));
    ASSERT_EQ(Q2W_ERR_LIMIT, qh_run(&h.img, &d, q2w_resize(&h.img, max + 1)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, max)));
    ASSERT_EQ(Q2W_MAX_L1_BYTES / 8, rd32(&d, 36));
    close_exact(&h, &d, "at the limit");
    qh_disk_free(&d);
    PASS();
}

/* A compressed cluster is counted (each host cluster it touches) and is
 * allocated data; COPIED on it is wrong. */
TEST checker_counts_compressed_clusters(void)
{
    qh_disk d;
    q2w_check_result r;
    const uint64_t cs = 4096;
    /* 4 KiB clusters: sector count in bits 58..61, offset below. */
    uint64_t desc = Q2W__COMPRESSED | (0ull << 58) | (5 * cs + 1024);
    checker_image(&d, 3);
    q2w__put64(d.buf + 4 * cs, desc);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(0, r.corruptions);
    ASSERT_EQ(0, r.leaks);
    ASSERT_EQ(2, r.allocated_clusters);
    q2w__put64(d.buf + 4 * cs, desc | Q2W__COPIED);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_kind(&r, Q2W_FIND_COPIED, 5 * cs));
    /* Nine sectors (count field 8, bits 58..61) from 512 bytes before the
     * end of cluster 5 reach into cluster 6, which is then counted twice. */
    q2w__put64(d.buf + 4 * cs, Q2W__COMPRESSED | (1ull << 61) | (6 * cs - 512));
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_kind(&r, Q2W_FIND_REFCOUNT, 6 * cs));
    /* Two sectors from the end of cluster 5 spill into cluster 6. */
    q2w__put64(d.buf + 4 * cs, Q2W__COMPRESSED | (1ull << 58) | (6 * cs - 512));
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(find_kind(&r, Q2W_FIND_REFCOUNT, 6 * cs)); /* 6 now counted twice */
    qh_disk_free(&d);
    PASS();
}

/* ---- snapshots and copy-on-write ------------------------------------------ */
static uint64_t refcount_on_disk(const qh_disk *d, uint64_t cluster)
{
    uint32_t order = rd32(d, 4) >= 3 ? rd32(d, 96) : 4; /* v2: 16 bits */
    uint64_t cs = 1ull << rd32(d, 20), epb = cs * 8 >> order;
    uint64_t blk = rd64(d, rd64(d, 48) + (cluster / epb) * 8);
    unsigned char b[8];
    if (!blk) return 0;
    qh_disk_read(d, blk + (((cluster % epb) << order) >> 3), b, 8);
    return q2w__rc_get(b, order >= 3 ? 0 : (cluster % epb) & ((8u >> order) - 1),
                       order);
}

/* Snapshot of a written image, then writes into shared clusters: the
 * snapshot keeps its bytes, refcounts count paths, COPIED follows. */
TEST snapshot_then_copy_on_write(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char a[8192], b[100], got[8192];
    const uint64_t cs = 4096;
    uint64_t l1, l2, l2new, data0;
    memset(a, 0xa1, sizeof a);
    memset(b, 0xb2, sizeof b);
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "one", 7, 8, 9)));
    /* visible, in crash-safe state, right after create */
    qh_assert_consistent(&d, 1, "after create");
    l1 = rd64(&d, 40);
    l2 = rd64(&d, l1) & Q2W__OFF_MASK;
    data0 = rd64(&d, l2) & Q2W__OFF_MASK;
    ASSERT_EQ(0, rd64(&d, l1) & Q2W__COPIED);       /* shared: no COPIED */
    ASSERT_EQ(0, rd64(&d, l2) & Q2W__COPIED);
    ASSERT_EQ(2, refcount_on_disk(&d, l2 / cs));
    ASSERT_EQ(2, refcount_on_disk(&d, data0 / cs));
    ASSERT_EQ(1, rd32(&d, 60));
    /* write into cluster 0: the L2 table and the data cluster are copied */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 50, b, sizeof b)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, cs, cs)));
    close_exact(&h, &d, "after copy on write");
    l2new = rd64(&d, l1) & Q2W__OFF_MASK;
    ASSERT(l2new != l2);
    ASSERT(rd64(&d, l1) & Q2W__COPIED);
    ASSERT_EQ(1, refcount_on_disk(&d, l2 / cs));        /* snapshot's path */
    ASSERT_EQ(1, refcount_on_disk(&d, l2new / cs));
    ASSERT_EQ(1, refcount_on_disk(&d, data0 / cs));     /* only the snapshot */
    ASSERT((rd64(&d, l2new) & Q2W__OFF_MASK) != data0);
    ASSERT(rd64(&d, l2new) & Q2W__COPIED);
    ASSERT_EQ(Q2W__ZERO, rd64(&d, l2new + 8));
    /* the snapshot reads its bytes; the active view the new ones */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "one", &sn)));
    ASSERT_STR_EQ("1", sn.id);
    ASSERT_EQ(7, sn.date_sec);
    ASSERT_EQ(8, sn.date_nsec);
    ASSERT_EQ(9, sn.vm_clock_ns);
    ASSERT_EQ(1 << 20, sn.disk_size);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, got, sizeof got)));
    ASSERT_MEM_EQ(a, got, sizeof got);
    /* the snapshot's own size bounds its reads */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, (1 << 20) - 8, got, 8)));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_read_snapshot(&h.img, &sn, (1 << 20) - 8, got, 9));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_read_snapshot(&h.img, &sn, (1 << 20) + 1, got, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
    ASSERT_MEM_EQ(b, got + 50, sizeof b);
    ASSERT_EQ(0xa1, got[49]);
    ASSERT_EQ(0xa1, got[150]);
    ASSERT_EQ(0, got[cs]);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Apply (qemu-img snapshot -a): the disk becomes the snapshot's view and
 * size, the snapshot stays, its tables are shared (no COPIED), the old
 * active paths are dropped; back and forth between two snapshots of
 * different sizes, with exact refcounts after each. */
TEST snapshot_apply_reverts(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char a[8192], b[4096], got[8192];
    const uint64_t cs = 4096, mib = 1 << 20;
    uint64_t l1, l2, data0;
    memset(a, 0xa1, sizeof a);
    memset(b, 0xb2, sizeof b);
    make_image(&d, 4096, 16, 3, mib);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "one", 1, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, sizeof b)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, cs, cs)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 3 * mib)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 2 * mib + 512, b, 100)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "two", 2, 0, 0)));
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_apply(&h.img, "three")));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_apply(&h.img, ""));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_apply(&h.img, "one")));
    qh_assert_consistent(&d, 0, "after apply one");
    ASSERT_EQ(mib, rd64(&d, 24));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_read(&h.img, mib - 8, got, 9));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
    ASSERT_MEM_EQ(a, got, sizeof got);
    ASSERT_EQ(2, rd32(&d, 60));                          /* both stay */
    l1 = rd64(&d, 40);
    l2 = rd64(&d, l1) & Q2W__OFF_MASK;
    data0 = rd64(&d, l2) & Q2W__OFF_MASK;
    ASSERT_EQ(0, rd64(&d, l1) & Q2W__COPIED);            /* shared */
    ASSERT_EQ(0, rd64(&d, l2) & Q2W__COPIED);
    ASSERT_EQ(2, refcount_on_disk(&d, l2 / cs));
    ASSERT_EQ(2, refcount_on_disk(&d, data0 / cs));
    /* a write after it copies, and leaves the snapshot as it was */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 100, b, 10)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "one", &sn)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, got, sizeof got)));
    ASSERT_MEM_EQ(a, got, sizeof got);
    /* to the larger one: its size, its data past the first one's end */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_apply(&h.img, "two")));
    ASSERT_EQ(3 * mib, rd64(&d, 24));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
    ASSERT_MEM_EQ(b, got, cs);
    ASSERT_EQ(0, got[cs]);
    ASSERT_EQ(0, got[2 * cs - 1]);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 2 * mib + 512, got, 100)));
    ASSERT_MEM_EQ(b, got, 100);
    close_exact(&h, &d, "after apply two");
    /* every snapshot gone: COPIED back, counts 1 */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "one")));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "two")));
    close_exact(&h, &d, "snapshots deleted");
    l1 = rd64(&d, 40);
    l2 = rd64(&d, l1) & Q2W__OFF_MASK;
    data0 = rd64(&d, l2) & Q2W__OFF_MASK;
    ASSERT(rd64(&d, l1) & Q2W__COPIED);
    ASSERT(rd64(&d, l2) & Q2W__COPIED);
    ASSERT_EQ(1, refcount_on_disk(&d, data0 / cs));
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(Q2W_ERR_READONLY, q2w_snapshot_apply(&h.img, "one"));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Every L2 entry of the L1 table at l1 (n entries) without a zero flag. */
static int no_zero_flags(const qh_disk *d, uint64_t l1, uint32_t n, uint64_t cs)
{
    uint32_t i;
    uint64_t j;
    for (i = 0; i < n; i++) {
        uint64_t l2 = rd64(d, l1 + 8ull * i) & Q2W__OFF_MASK;
        for (j = 0; l2 && j < cs / 8; j++) {
            uint64_t e = rd64(d, l2 + j * 8);
            if (!(e & Q2W__COMPRESSED) && (e & Q2W__ZERO)) return 0;
        }
    }
    return 1;
}

/* amend compat: v3 -> v2 expands every zero flag (active and snapshot
 * tables; over a backing file into clusters of zeros counted once per
 * path, without one into unallocated clusters), views unchanged, exact
 * refcounts; v2 -> v3 rewrites the header; the refusals. */
TEST amend_compat_down_and_up(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    q2w_info info;
    unsigned char *backing, a[4 * 4096], got[16 * 4096], want[16 * 4096];
    const uint64_t cs = 4096, blen = 64 * 4096;
    uint64_t i, l2, e;
    int with_backing, round;
    backing = (unsigned char *)malloc(blen);
    ASSERT(backing != NULL);
    for (i = 0; i < blen; i++) backing[i] = (unsigned char)backing_pattern(i);
    memset(a, 0x3c, sizeof a);
    /* rounds: no backing file; one; one with the L2 table still shared
     * by the snapshot and the active L1 (two paths: a new cluster of zeros
     * counts two) */
    for (round = 0; round <= 2; round++) {
        with_backing = round > 0;
        ASSERT_EQ(Q2W_OK, qh_make(&d, 8u << 20, 3, 4096, 16, 1u << 20,
                                  with_backing ? "b" : NULL, NULL));
        /* (cluster_size left 0: the contract's header-field check is off,
         * cluster 0 is rewritten whole - as for q2w_set_backing) */
        if (with_backing) {
            d.backing = backing;
            d.backing_len = blen;
        }
        ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, with_backing));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, cs, 2 * cs)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 8 * cs, 3 * cs)));
        if (round == 2)
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 12 * cs, cs)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
        if (round < 2)
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 12 * cs, cs)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, want, sizeof want)));
        ASSERT_EQ(Q2W_ERR_ARG, q2w_amend_compat(&h.img, 4));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_amend_compat(&h.img, 2)));
        ASSERT_EQ(2, rd32(&d, 4));
        q2w_info_get(&h.img, &info);
        ASSERT_EQ(2, info.version);
        ASSERT(no_zero_flags(&d, rd64(&d, 40), rd32(&d, 36), cs));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
        ASSERT_MEM_EQ(want, got, sizeof got);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "s", &sn)));
        ASSERT(no_zero_flags(&d, sn.l1_offset, sn.l1_size, cs));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, got, sizeof got)));
        ASSERT_MEM_EQ(a, got, cs);
        for (i = cs; i < 3 * cs; i++) ASSERT_EQ(0, got[i]);
        l2 = rd64(&d, rd64(&d, 40)) & Q2W__OFF_MASK;
        e = rd64(&d, l2 + 12 * 8);        /* the active table's own zeros */
        if (round == 2) {
            /* a cluster of zeros reached through the shared table: two */
            ASSERT_EQ(0, e & Q2W__COPIED);
            ASSERT_EQ(2, refcount_on_disk(&d, (e & Q2W__OFF_MASK) / cs));
        } else if (with_backing) {
            /* a cluster of zeros, this table's alone */
            ASSERT(e & Q2W__COPIED);
            ASSERT_EQ(1, refcount_on_disk(&d, (e & Q2W__OFF_MASK) / cs));
        } else {
            ASSERT_EQ(0, e);
        }
        close_exact(&h, &d, "after the downgrade");
        /* and back: a v3 header of 112 bytes, 16-bit refcounts */
        ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, with_backing));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_amend_compat(&h.img, 3)));
        ASSERT_EQ(3, rd32(&d, 4));
        ASSERT_EQ(112, rd32(&d, 100));
        ASSERT_EQ(4, rd32(&d, 96));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
        ASSERT_MEM_EQ(want, got, sizeof got);
        close_exact(&h, &d, "after the upgrade");
        ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 0, with_backing));
        q2w_info_get(&h.img, &info);
        ASSERT_EQ(3, info.version);
        if (with_backing) ASSERT_STR_EQ("b", info.backing_name);
        qh_close_handle(&h);
        qh_disk_free(&d);
    }
    /* v2 needs 16-bit refcounts: refused before anything changes */
    make_image(&d, 4096, 64, 3, 1u << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_ERR_UNSUPPORTED, qh_run(&h.img, &d, q2w_amend_compat(&h.img, 2)));
    ASSERT_EQ(3, rd32(&d, 4));
    close_exact(&h, &d, "refused");
    qh_disk_free(&d);
    free(backing);
    PASS();
}

/* The entry qemu expects: v3 extra data of 24 bytes with the disk size,
 * the next integer as id; ids keep counting after a delete. */
TEST snapshot_entries_ids_and_delete(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char a[4096];
    uint64_t t, l2, data0;
    memset(a, 5, sizeof a);
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "a", 1, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "bb", 2, 0, 0)));
    t = rd64(&d, 64);
    ASSERT_EQ(2, rd32(&d, 60));
    ASSERT_EQ(24, rd32(&d, t + 36));                 /* extra data */
    ASSERT_EQ(1 << 20, rd64(&d, t + 48));            /* disk size */
    ASSERT_EQ(0, rd32(&d, t + 32));                  /* no VM state */
    ASSERT_EQ(0, rd64(&d, t + 40));
    ASSERT_EQ(0, rd64(&d, t + 56));                  /* icount, as qemu-img */
    ASSERT_EQ(0, d.buf[t + 66]);                     /* padding */
    ASSERT_EQ(0, d.buf[t + 71]);
    ASSERT_EQ(1, (rd32(&d, t + 12) >> 16));          /* id length 1 */
    ASSERT_EQ('1', d.buf[t + 64]);
    ASSERT_EQ('a', d.buf[t + 65]);
    ASSERT_EQ('2', d.buf[t + 72 + 64]);              /* 65 -> 72 padded */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 1, &sn)));
    ASSERT_STR_EQ("bb", sn.name);
    ASSERT_EQ(1, sn.index);
    ASSERT_EQ(0, sn.vm_state_size);
    ASSERT_EQ(72, sn.entry_offset);
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 2, &sn)));
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "b", &sn)));
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "zz")));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_create(&h.img, "", 0, 0, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "a")));
    ASSERT_EQ(1, rd32(&d, 60));
    qh_assert_consistent(&d, 0, "after delete"); /* old table: freed later */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "c", 3, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "c", &sn)));
    ASSERT_STR_EQ("3", sn.id);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "c")));
    /* as qemu: the largest id left + 1, so "3" again */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "c", 3, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "c", &sn)));
    ASSERT_STR_EQ("3", sn.id);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "bb")));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "c")));
    ASSERT_EQ(0, rd32(&d, 60));
    ASSERT_EQ(0, rd64(&d, 64));
    close_exact(&h, &d, "all deleted");
    /* COPIED is back on the active tables, refcounts 1 */
    l2 = rd64(&d, rd64(&d, 40)) & Q2W__OFF_MASK;
    data0 = rd64(&d, l2) & Q2W__OFF_MASK;
    ASSERT(rd64(&d, rd64(&d, 40)) & Q2W__COPIED);
    ASSERT(rd64(&d, l2) & Q2W__COPIED);
    ASSERT_EQ(1, refcount_on_disk(&d, data0 / 4096));
    qh_disk_free(&d);
    PASS();
}

/* Deleting a snapshot whose tables are all cached finds its entry and
 * checks its L1 clusters' refcounts in one call: the check must use that
 * snapshot's L1 size, not the one a read of another (larger) snapshot
 * left behind. It refused with "snapshot L1 table with refcount 0". */
TEST snapshot_delete_right_after_reading_another(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sa, sb;
    unsigned char a[2048], got[512];
    memset(a, 0xab, sizeof a);
    make_image(&d, 512, 16, 3, 32768);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "B", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "C", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 6u << 20)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 5u << 20, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "A", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "B", &sb)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "A", &sa)));
    ASSERT(sa.l1_size > sb.l1_size); /* A's L1 spans more clusters */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sb, 0, got, sizeof got)));
    ASSERT_EQ(0, memcmp(got, a, sizeof got));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sa, 0, got, sizeof got)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "B")));
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "B", &sb)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sa, 5u << 20, got,
                                                         sizeof got)));
    ASSERT_EQ(0, memcmp(got, a, sizeof got));
    close_exact(&h, &d, "after the delete");
    qh_disk_free(&d);
    PASS();
}

/* One q2w_map call (sn NULL: the active view) must give exactly this. */
static enum greatest_test_res map_is(qh_handle *h, qh_disk *d,
                                     const q2w_snapshot *sn, uint64_t off,
                                     uint64_t len, int kind, uint64_t xlen,
                                     uint64_t host)
{
    q2w_extent x;
    int rc;
    memset(&x, 0xee, sizeof x);
    rc = qh_run(&h->img, d, sn ? q2w_map_snapshot(&h->img, sn, off, len, &x)
                               : q2w_map(&h->img, off, len, &x));
    if (rc != Q2W_OK)
        fprintf(stderr, "map [%llu,+%llu)%s: %s (%s)\n", (unsigned long long)off,
                (unsigned long long)len, sn ? " of a snapshot" : "",
                q2w_strerror(rc), q2w_error(&h->img)->what);
    ASSERT_EQ(Q2W_OK, rc);
    if (x.kind != kind || x.len != xlen)
        fprintf(stderr, "map [%llu,+%llu)%s: kind %d len %llu host %llu allocated %d\n",
                (unsigned long long)off, (unsigned long long)len, sn ? " of a snapshot" : "",
                x.kind, (unsigned long long)x.len, (unsigned long long)x.host, x.allocated);
    ASSERT_EQ(off, x.off);
    ASSERT_EQ(kind, x.kind);
    ASSERT_EQ(xlen, x.len);
    ASSERT_EQ(host, x.host);
    PASS();
}

/* q2w_map: runs of data (split where the host clusters stop being
 * contiguous), zero-flagged and never-written clusters, the backing file's
 * range and what lies past it, a snapshot's own view, and the refusals. */
TEST map_gives_maximal_extents(void)
{
    qh_disk d;
    qh_handle h;
    q2w_extent x;
    q2w_snapshot sn;
    unsigned char a[3 * 4096], backing[6 * 4096];
    uint64_t h0, h2;
    const uint64_t cs = 4096, SZ = 1u << 20;
    memset(a, 0x5a, sizeof a);
    memset(backing, 0x11, sizeof backing);
    make_image(&d, 4096, 16, 3, 1u << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    /* fresh: one zero extent however long the range */
    CHECK_CALL(map_is(&h, &d, NULL, 0, SZ, Q2W_EXTENT_ZERO, 1u << 20, 0));
    CHECK_CALL(map_is(&h, &d, NULL, 7, 100, Q2W_EXTENT_ZERO, 100, 0));
    CHECK_CALL(map_is(&h, &d, NULL, 1u << 20, 0, Q2W_EXTENT_ZERO, 0, 0));
    /* clusters 2..4 written in one go: contiguous on the host */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 2 * cs, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, 2 * cs, cs, &x)));
    h2 = x.host;
    ASSERT(h2 >= cs && (h2 & (cs - 1)) == 0);
    CHECK_CALL(map_is(&h, &d, NULL, 0, SZ, Q2W_EXTENT_ZERO, 2 * cs, 0));
    CHECK_CALL(map_is(&h, &d, NULL, 2 * cs + 10, SZ - (2 * cs + 10), Q2W_EXTENT_DATA,
                      3 * cs - 10, h2 + 10));
    CHECK_CALL(map_is(&h, &d, NULL, 5 * cs, (1u << 20) - 5 * cs,
                      Q2W_EXTENT_ZERO, (1u << 20) - 5 * cs, 0));
    /* cluster 0 is allocated after them: data, but not continued by 1 */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, cs)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, 0, SZ, &x)));
    h0 = x.host;
    ASSERT_EQ(Q2W_EXTENT_DATA, x.kind);
    ASSERT_EQ(cs, x.len);
    ASSERT(h0 != h2 - 2 * cs);
    /* a zero-flagged cluster in the middle of the run splits it */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 3 * cs, cs)));
    CHECK_CALL(map_is(&h, &d, NULL, 2 * cs, SZ - (2 * cs), Q2W_EXTENT_DATA, cs, h2));
    CHECK_CALL(map_is(&h, &d, NULL, 3 * cs, SZ - (3 * cs), Q2W_EXTENT_ZERO, cs, 0));
    CHECK_CALL(map_is(&h, &d, NULL, 4 * cs, SZ - (4 * cs), Q2W_EXTENT_DATA, cs,
                      h2 + 2 * cs));
    /* a snapshot keeps its view while the active one changes */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_discard(&h.img, 0, 5 * cs)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "s", &sn)));
    /* zero flags (the image holds the run: clusters 0, 2..4) apart from
     * never-written clusters (unallocated: 1, 5..): qemu-img map's
     * "present" */
    CHECK_CALL(map_is(&h, &d, NULL, 0, SZ, Q2W_EXTENT_ZERO, cs, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, 0, SZ, &x)));
    ASSERT_EQ(1, x.allocated);
    CHECK_CALL(map_is(&h, &d, NULL, cs, SZ - cs, Q2W_EXTENT_ZERO, cs, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, cs, SZ - cs, &x)));
    ASSERT_EQ(0, x.allocated);
    CHECK_CALL(map_is(&h, &d, NULL, 2 * cs, SZ - 2 * cs, Q2W_EXTENT_ZERO, 3 * cs, 0));
    CHECK_CALL(map_is(&h, &d, NULL, 5 * cs, SZ - 5 * cs, Q2W_EXTENT_ZERO, SZ - 5 * cs, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, 5 * cs, SZ - 5 * cs, &x)));
    ASSERT_EQ(0, x.allocated);
    CHECK_CALL(map_is(&h, &d, &sn, 0, SZ, Q2W_EXTENT_DATA, cs, h0));
    CHECK_CALL(map_is(&h, &d, &sn, 2 * cs + 1, 1, Q2W_EXTENT_DATA, 1, h2 + 1));
    /* refusals: no extent, a range past the end, a busy handle */
    ASSERT_EQ(Q2W_ERR_ARG, q2w_map(&h.img, 0, 1, NULL));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_map_snapshot(&h.img, NULL, 0, 1, &x));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_map(&h.img, 1u << 20, 1, &x));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_map_snapshot(&h.img, &sn, 0, (1u << 20) + 1, &x));
    close_exact(&h, &d, "after the maps");
    qh_disk_free(&d);

    /* With a backing file of 6 clusters under a disk of 16: the backing
     * range, then zeros past its end, cluster by cluster. */
    ASSERT_EQ(Q2W_OK, qh_make(&d, 8u << 20, 3, 4096, 0, 16 * cs, "b", NULL));
    d.cluster_size = 4096;
    d.backing = backing;
    d.backing_len = sizeof backing;
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 1));
    CHECK_CALL(map_is(&h, &d, NULL, 0, 16 * cs, Q2W_EXTENT_BACKING, 6 * cs, 0));
    CHECK_CALL(map_is(&h, &d, NULL, 6 * cs, 10 * cs, Q2W_EXTENT_ZERO, 10 * cs, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, cs + 5, a, 10)));
    CHECK_CALL(map_is(&h, &d, NULL, 0, 16 * cs, Q2W_EXTENT_BACKING, cs, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, cs, 15 * cs, &x)));
    ASSERT_EQ(Q2W_EXTENT_DATA, x.kind);
    ASSERT_EQ(cs, x.len);
    CHECK_CALL(map_is(&h, &d, NULL, 2 * cs, 14 * cs, Q2W_EXTENT_BACKING, 4 * cs, 0));
    /* zero flag over the backing file reads zeros, not the backing */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 3 * cs, cs)));
    CHECK_CALL(map_is(&h, &d, NULL, 3 * cs, 13 * cs, Q2W_EXTENT_ZERO, cs, 0));
    CHECK_CALL(map_is(&h, &d, NULL, 4 * cs, 12 * cs, Q2W_EXTENT_BACKING, 2 * cs, 0));
    close_exact(&h, &d, "after the backing maps");
    qh_disk_free(&d);
    PASS();
}

/* A refcount that would overflow its width refuses the snapshot, and the
 * image is left as it was. */
TEST snapshot_refused_when_refcounts_would_overflow(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char a[4096], *before;
    size_t len;
    memset(a, 9, sizeof a);
    make_image(&d, 4096, 1, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    len = d.len;
    before = (unsigned char *)malloc(len);
    ASSERT(before != NULL);
    memcpy(before, d.buf, len);
    ASSERT_EQ(Q2W_ERR_LIMIT, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "x", 0, 0, 0)));
    ASSERT_STR_EQ("refcount would overflow", q2w_error(&h.img)->what);
    ASSERT_EQ(len, d.len);
    ASSERT_MEM_EQ(before, d.buf, len);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    free(before);
    qh_disk_free(&d);
    PASS();
}

/* 2-bit refcounts: two snapshots take a cluster to 3 (the maximum). A
 * table copied since has refcount 1, but its data clusters are still at
 * 3: the third snapshot is refused before any refcount moves. */
TEST snapshot_overflow_is_found_behind_a_copied_table(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char a[8192], b[16];
    memset(a, 1, sizeof a);
    memset(b, 2, sizeof b);
    make_image(&d, 4096, 2, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "1", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "2", 0, 0, 0)));
    /* copies the L2 table (refcount 1 now) and data cluster 1 only */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 4096, b, sizeof b)));
    ASSERT_EQ(Q2W_ERR_LIMIT, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "3", 0, 0, 0)));
    ASSERT_STR_EQ("refcount would overflow", q2w_error(&h.img)->what);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    qh_assert_consistent(&d, 1, "after the refusal"); /* nothing leaked */
    ASSERT_EQ(2, rd32(&d, 60));
    qh_disk_free(&d);
    PASS();
}

/* Snapshot create's op stream: the L1 copy, the raised refcounts, the
 * cleared COPIED flags and the new table are written and flushed before
 * the one write that switches the header pair; a flush follows it. */
TEST snapshot_create_switches_the_header_last(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char a[8192];
    long sw, f;
    size_t i;
    memset(a, 3, sizeof a);
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    n_oplog = 0;
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    sw = first_write(60, 12, 0);
    ASSERT(sw > 0);
    ASSERT_EQ(60, oplog[sw].off);
    ASSERT_EQ(12, oplog[sw].len);
    ASSERT_EQ(Q2W_OP_FLUSH, oplog[sw - 1].kind);
    f = next_flush((size_t)sw);
    ASSERT_EQ(sw + 1, f);
    for (i = (size_t)sw + 1; i < n_oplog; i++)
        ASSERT(oplog[i].kind != Q2W_OP_WRITE || oplog[i].off >= 4096 * 3);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* The checker's reads can fail: it stops with Q2W_ERR_IO, counted. */
static int failing_after;
static int io_read_failing(void *user, uint64_t off, void *dst, size_t len)
{
    if (failing_after-- <= 0) return -5;
    return qh_io_read(user, off, dst, len);
}

TEST checker_stops_on_read_errors(void)
{
    qh_disk d;
    q2w_io io;
    q2w_check_result r;
    size_t need;
    void *work;
    int n;
    checker_image(&d, 3);
    qh_make_io(&d, &io);
    ASSERT_EQ(Q2W_OK, q2w_check_work_size(&io, &need, NULL));
    work = malloc(need);
    ASSERT(work != NULL);
    io.read = io_read_failing;
    failing_after = 0; /* the header itself */
    ASSERT_EQ(Q2W_ERR_IO, q2w_check(&io, work, need, 0, &r));
    ASSERT_EQ(112, r.error.needed);
    ASSERT_EQ(0, r.error.offset);
    /* every read of the scan after the header's, failing in turn: header
     * cluster, table, L1, L2, then pass 2 and 3 (9 reads in all) */
    for (n = 1; n < 9; n++) {
        failing_after = n;
        ASSERT_EQ(Q2W_ERR_IO, q2w_check(&io, work, need, 0, &r));
        ASSERT_EQ(1, r.check_errors);
        ASSERT_EQ(Q2W_ERR_IO, r.error.code);
    }
    failing_after = 9;
    ASSERT_EQ(Q2W_OK, q2w_check(&io, work, need, 0, &r));
    free(work);
    qh_disk_free(&d);
    PASS();
}

/* An L1 entry pointing into a data cluster at an unaligned offset is one
 * finding; the table it names is not walked. */
TEST checker_does_not_walk_unaligned_tables(void)
{
    qh_disk d;
    q2w_check_result r;
    const uint64_t cs = 4096;
    checker_image(&d, 3);
    q2w__put64(d.buf + 3 * cs, (5 * cs + 512) | Q2W__COPIED);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(1, r.corruptions);
    ASSERT(find_kind(&r, Q2W_FIND_UNALIGNED, 5 * cs + 512));
    ASSERT_EQ(3, r.leaks); /* the real L2 and its two data clusters */
    qh_disk_free(&d);
    PASS();
}

/* Reading never changes the image, even where nothing is allocated. */
TEST reads_change_nothing(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char got[70000];
    size_t len;
    checker_image(&d, 3);
    len = d.len;
    d.writes = 0;
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 900000, got, 4096)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    ASSERT_EQ(0, d.writes);
    ASSERT_EQ(len, d.len);
    qh_disk_free(&d);
    PASS();
}

/* A flush with nothing new to make durable plans nothing; info reports
 * the header as it is. */
TEST idle_flush_is_free_and_info_is_exact(void)
{
    qh_disk d;
    qh_handle h;
    q2w_info info;
    unsigned char b[10] = {1};
    make_image(&d, 4096, 8, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 10)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    n_oplog = 0;
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(0, n_oplog);
    q2w_info_get(&h.img, &info);
    ASSERT_EQ(3, info.version);
    ASSERT_EQ(4096, info.cluster_size);
    ASSERT_EQ(8, info.refcount_bits);
    ASSERT_EQ(1 << 20, info.size);
    ASSERT_EQ(rd64(&d, 40), info.l1_offset);
    ASSERT_EQ(rd32(&d, 36), info.l1_size);
    ASSERT_EQ(rd64(&d, 48), info.refcount_table_offset);
    ASSERT_EQ(rd32(&d, 56), info.refcount_table_clusters);
    ASSERT_EQ(0, info.nb_snapshots);
    ASSERT_EQ(112, info.header_length);
    ASSERT(info.backing_name == NULL);
    ASSERT_EQ(16, info.cache_slots);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Bad L1 entries are refused with the entry's offset and index. */
TEST hostile_l1_entries_are_located(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[8] = {0};
    const uint64_t cs = 512;
    uint64_t l1;
    int k;
    for (k = 0; k < 3; k++) {
        make_image(&d, 512, 16, 3, 1 << 20);
        l1 = rd64(&d, 40);
        /* entry 5: reserved bits (two kinds), then a table with refcount 0 */
        if (k == 0) q2w__put64(d.buf + l1 + 5 * 8, (7 * cs) | Q2W__COPIED | 2);
        if (k == 1) q2w__put64(d.buf + l1 + 5 * 8, (7 * cs + 0) | (1ull << 60));
        if (k == 2) q2w__put64(d.buf + l1 + 5 * 8, 40 * cs);  /* refcount 0 */
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
        ASSERT_EQ(Q2W_ERR_METADATA,
                  qh_run(&h.img, &d, q2w_write(&h.img, 5 * 64 * cs + 3, b, 8)));
        ASSERT_EQ(l1 + 5 * 8, q2w_error(&h.img)->offset);
        ASSERT_EQ(5, q2w_error(&h.img)->index);
        ASSERT_STR_EQ(k == 2 ? "L2 table with refcount 0" : "l1 entry reserved bits",
                      q2w_error(&h.img)->what);
        qh_close_handle(&h);
        qh_disk_free(&d);
    }
    /* an L1 entry not aligned to a 4 KiB cluster */
    make_image(&d, 4096, 16, 3, 1 << 20);
    l1 = rd64(&d, 40);
    q2w__put64(d.buf + l1, (5 * 4096 + 512) | Q2W__COPIED);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 8)));
    ASSERT_EQ(l1, q2w_error(&h.img)->offset);
    ASSERT_STR_EQ("l1 entry unaligned", q2w_error(&h.img)->what);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Copies through scratch take two ops each; an odd op buffer must still
 * never overflow (9 ops: room runs 9, 7, 5, 3, 1). */
TEST copies_fit_an_odd_op_buffer(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[512];
    memset(b, 4, sizeof b);
    make_image(&d, 512, 16, 3, 64u << 20);   /* L1: 32 clusters */
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 9, 1, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 512)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 128u << 20)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    close_exact(&h, &d, "odd op buffer");
    qh_disk_free(&d);
    PASS();
}

/* Every refusal names its place: damage one entry of a small written image
 * (L2 at cluster 4, data at 5 and 6, 4 KiB clusters), run one operation,
 * and expect the code, the field, the byte offset and the index. */
typedef struct damage_case {
    uint64_t at;        /* byte to damage (an 8-byte entry) */
    uint64_t value;
    int version;
    int op;             /* 0 write cluster 1, 1 read cluster 1, 2 discard
                           cluster 1, 3 resize to 2^62 + 4096, 4 write
                           cluster 3 (allocates), 5 discard and flush a
                           cluster past 8 MiB */
    int code;
    const char *what;
    uint64_t offset, index;
} damage_case;

TEST refusals_name_their_place(void)
{
    const uint64_t cs = 4096;
    const damage_case cases[] = {
        {4 * cs + 8, (6 * cs) | Q2W__COPIED | (1ull << 57), 3, 0,
         Q2W_ERR_METADATA, "l2 entry reserved bits", 4 * cs + 8, 1},
        {4 * cs + 8, (6 * cs) | Q2W__COPIED | Q2W__ZERO, 2, 1,
         Q2W_ERR_METADATA, "zero flag in a v2 image", 4 * cs + 8, 1},
        /* compressed data that does not inflate (a zeroed cluster: a
         * stored block whose length check fails), for a partial write and
         * a read; COPIED is never valid on a compressed entry */
        {4 * cs + 8, Q2W__COMPRESSED | (6 * cs), 3, 0,
         Q2W_ERR_METADATA, "compressed cluster data", 4 * cs + 8, 1},
        {4 * cs + 8, Q2W__COMPRESSED | (6 * cs), 3, 1,
         Q2W_ERR_METADATA, "compressed cluster data", 4 * cs + 8, 1},
        {4 * cs + 8, Q2W__COMPRESSED | Q2W__COPIED | (6 * cs), 3, 1,
         Q2W_ERR_METADATA, "COPIED set on a compressed cluster", 4 * cs + 8,
         1},
        {4 * cs + 8, 9 * cs, 3, 0,
         Q2W_ERR_METADATA, "data cluster with refcount 0", 4 * cs + 8, 1},
        {4 * cs + 8, 9 * cs, 3, 2,
         Q2W_ERR_METADATA, "data cluster with refcount 0", 4 * cs + 8, 1},
        {cs, 2 * cs + 5, 3, 4,
         Q2W_ERR_METADATA, "refcount_table", cs, 0},
        {cs, 2 * cs + 1024, 3, 4,
         Q2W_ERR_METADATA, "refcount_table", cs, 0},
        {cs, 1ull << 56, 3, 4,
         Q2W_ERR_METADATA, "refcount_table", cs, 0},
        {cs + 8, 2 * cs + 5, 3, 5,
         Q2W_ERR_METADATA, "refcount_table", cs + 8, 1},
        {0, 0, 3, 3, Q2W_ERR_LIMIT, "virtual size", 24, 0},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const damage_case *c = &cases[i];
        qh_disk d;
        qh_handle h;
        unsigned char b[16] = {0};
        int rc;
        checker_image(&d, c->version);
        if (c->at) q2w__put64(d.buf + c->at, c->value);
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
        switch (c->op) {
        case 0: rc = qh_run(&h.img, &d, q2w_write(&h.img, cs + 8, b, 16)); break;
        case 1: rc = qh_run(&h.img, &d, q2w_read(&h.img, cs + 8, b, 16)); break;
        case 2: rc = qh_run(&h.img, &d, q2w_discard(&h.img, cs, cs)); break;
        case 4: rc = qh_run(&h.img, &d, q2w_write(&h.img, 3 * cs, b, 16)); break;
        case 5:
            /* a data cluster past the first refcount block's range (2048
             * clusters): discarding it reads refcount table entry 1 */
            qh_disk_reserve(&d, 3001 * cs);
            d.len = 3001 * cs;
            q2w__put64(d.buf + 4 * cs + 8, (3000 * cs) | Q2W__COPIED);
            qh_close_handle(&h);
            ALK_CHECK(open_rw(&h, &d, 4096, 1) == Q2W_OK, "reopen");
            rc = qh_run(&h.img, &d, q2w_discard(&h.img, cs, cs));
            if (rc == Q2W_OK) rc = qh_run(&h.img, &d, q2w_flush(&h.img));
            break;
        default: rc = qh_run(&h.img, &d, q2w_resize(&h.img, (1ull << 62) + cs));
        }
        if (rc != c->code || strcmp(q2w_error(&h.img)->what, c->what))
            fprintf(stderr, "case %zu: %s (%s)\n", i, q2w_strerror(rc),
                    q2w_error(&h.img)->what);
        ASSERT_EQ(c->code, rc);
        ASSERT_STR_EQ(c->what, q2w_error(&h.img)->what);
        ASSERT_EQ(c->offset, q2w_error(&h.img)->offset);
        if (c->op != 3) ASSERT_EQ(c->index, q2w_error(&h.img)->index);
        qh_close_handle(&h);
        qh_disk_free(&d);
    }
    PASS();
}

/* Snapshot table damage: an entry is refused with its table offset and
 * index; names past the limit are refused at create. */
TEST snapshot_table_refusals(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char a[4096];
    char longname[Q2W_MAX_SNAPSHOT_NAME + 2];
    uint64_t t;
    memset(a, 1, sizeof a);
    memset(longname, 'n', sizeof longname);
    longname[sizeof longname - 1] = 0;
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_create(&h.img, longname, 0, 0, 0));
    ASSERT_STR_EQ("snapshot name", q2w_error(&h.img)->what);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "a", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "b", 0, 0, 0)));
    /* entry lengths: 64 + id + name already a multiple of 8 (no padding),
     * and a name longer than 255 bytes (both bytes of its length) */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "seven77", 0, 0, 0)));
    longname[300] = 0;
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, longname, 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, longname, &sn)));
    ASSERT_EQ(3, sn.index);
    ASSERT_EQ(0, strcmp(sn.name, longname));
    ASSERT_EQ(216, sn.entry_offset); /* 72 + 72 + 72 */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "seven77", &sn)));
    ASSERT_EQ(72, sn.entry_len);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "seven77")));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, longname)));
    close_exact(&h, &d, "snapshots made and deleted");
    t = rd64(&d, 64);
    /* second entry (at 72): an L1 offset that is not cluster aligned */
    q2w__put64(d.buf + t + 72, rd64(&d, t + 72) + 8);
    ASSERT_EQ(Q2W_ERR_METADATA, open_rw(&h, &d, 4096, 0));
    CHECK_CALL(error_is(&h.img, "snapshot table entry", t + 72, 1));
    qh_close_handle(&h);
    q2w__put64(d.buf + t + 72, rd64(&d, t + 72) - 8);
    /* an entry longer than a cluster (extra data of 4000 bytes > 1024) */
    q2w__put32(d.buf + t + 36, 4000);
    ASSERT_EQ(Q2W_ERR_METADATA, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(t, q2w_error(&h.img)->offset);
    ASSERT_EQ(0, q2w_error(&h.img)->index);
    qh_close_handle(&h);
    q2w__put32(d.buf + t + 36, 24);
    /* extra data: 1024 bytes is qemu's limit */
    q2w__put32(d.buf + t + 36, 1025);
    ASSERT_EQ(Q2W_ERR_METADATA, open_rw(&h, &d, 4096, 0));
    ASSERT_STR_EQ("snapshot table entry", q2w_error(&h.img)->what);
    qh_close_handle(&h);
    q2w__put32(d.buf + t + 36, 24);
    /* a name longer than the 1023 bytes a q2w_snapshot holds */
    q2w__put16(d.buf + t + 14, 1100);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(Q2W_ERR_LIMIT, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 0, &sn)));
    ASSERT_STR_EQ("snapshot id or name length", q2w_error(&h.img)->what);
    ASSERT_EQ(t, q2w_error(&h.img)->offset);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* API misuse is an error code, never a crash. */
TEST null_arguments_are_refused(void)
{
    q2w_snapshot sn;
    unsigned char b[4];
    q2w_check_result r;
    uint64_t len;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_open(NULL, NULL));
    {
        q2w_image img;
        q2w_config cfg;
        q2w_op ops[8];
        unsigned char mem[64];
        memset(&cfg, 0, sizeof cfg);
        ASSERT_EQ(Q2W_ERR_ARG, q2w_open(&img, NULL));
        cfg.ops = ops;
        cfg.ops_cap = 8;
        ASSERT_EQ(Q2W_ERR_ARG, q2w_open(&img, &cfg));   /* no mem */
        cfg.mem = mem;
        cfg.ops = NULL;
        ASSERT_EQ(Q2W_ERR_ARG, q2w_open(&img, &cfg));   /* no ops */
        ASSERT_EQ(Q2W_ERR_ARG, q2w_open(NULL, &cfg));
    }
    ASSERT_EQ(Q2W_ERR_ARG, q2w_read(NULL, 0, b, 1));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_write(NULL, 0, b, 1));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_write_zeroes(NULL, 0, 1));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_discard(NULL, 0, 1));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_flush(NULL));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_resize(NULL, 1));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_close(NULL));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_resume(NULL, 0));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_get(NULL, 0, &sn));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_find(NULL, "a", &sn));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_create(NULL, "a", 0, 0, 0));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_delete(NULL, "a"));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_read_snapshot(NULL, &sn, 0, b, 1));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_create(NULL, NULL, 0, &len, NULL));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_check(NULL, b, sizeof b, 0, &r));
    {
        size_t need;
        ASSERT_EQ(Q2W_ERR_ARG, q2w_check_work_size(NULL, &need, NULL));
    }
    PASS();
}

/* Ids past 9 have two digits; an entry with the minimal v3 extra data
 * (16 bytes) still reports its disk size. */
TEST snapshot_ids_past_nine_and_short_extra(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char e[64];
    char name[16];
    int i;
    uint64_t t;
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    for (i = 0; i < 11; i++) {
        snprintf(name, sizeof name, "n%d", i);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, name, 0, 0, 0)));
    }
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "n9", &sn)));
    ASSERT_STR_EQ("10", sn.id);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "n10", &sn)));
    ASSERT_STR_EQ("11", sn.id);
    close_exact(&h, &d, "eleven snapshots");
    /* rewrite the first entry with 16 bytes of extra data, as some
     * writers do: 40 + 16 + "1" + "n0" = 59 -> 64 bytes, like before */
    t = rd64(&d, 64);
    memset(e, 0, sizeof e);
    memcpy(e, d.buf + t, 40);
    q2w__put32(e + 36, 16);
    q2w__put64(e + 48, 1 << 20);
    memcpy(e + 56, "1n0", 3);
    q2w__put16(e + 12, 1);
    q2w__put16(e + 14, 2);
    ASSERT_EQ(72, q2w__entry_len(d.buf + t));
    /* the rest of the table moves up by 8 bytes */
    {
        size_t rest = 0;
        unsigned char *tab = d.buf + t;
        uint64_t len = 0;
        for (i = 0; i < 11; i++) len += q2w__entry_len(tab + len);
        rest = (size_t)(len - 72);
        memmove(tab + 64, tab + 72, rest);
        memcpy(tab, e, 64);
    }
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "n0", &sn)));
    ASSERT_EQ(1 << 20, sn.disk_size);
    ASSERT_EQ(0, sn.vm_state_size);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "n10", &sn)));
    ASSERT_STR_EQ("11", sn.id);
    qh_close_handle(&h);
    /* 15 bytes of extra data: too short to hold a disk size (it needs 16),
     * and the same entry length (40 + 15 + 3 = 58 -> 64) */
    q2w__put32(d.buf + t + 36, 15);
    memmove(d.buf + t + 55, d.buf + t + 56, 3);
    d.buf[t + 58] = 0;
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "n0", &sn)));
    ASSERT_EQ(0, sn.disk_size);
    ASSERT_STR_EQ("1", sn.id);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Reading through a table shared with a snapshot copies nothing; 1-bit
 * refcounts hold a snapshot of an empty image, and deleting it later (data
 * at the maximum refcount 1) works. */
TEST reads_do_not_copy_and_full_refcounts_do_not_block_delete(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char a[4096], got[4096];
    uint64_t l1, l2;
    memset(a, 7, sizeof a);
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    l1 = rd64(&d, 40);
    l2 = rd64(&d, l1) & Q2W__OFF_MASK;
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    ASSERT_EQ(l2, rd64(&d, l1) & Q2W__OFF_MASK);
    ASSERT_EQ(2, refcount_on_disk(&d, l2 / 4096));
    qh_disk_free(&d);

    make_image(&d, 4096, 1, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "e", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, a, sizeof a)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "e")));
    close_exact(&h, &d, "1-bit snapshot deleted");
    qh_disk_free(&d);
    PASS();
}

/* 512 B clusters: the snapshot table spans clusters and entries straddle
 * their boundaries (72-byte entries); every one is found by name. An
 * empty disk still gets one L1 cluster at create. */
TEST snapshot_entries_across_cluster_boundaries(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    char name[16];
    int i;
    make_image(&d, 512, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
    for (i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "snap%02d", i);   /* 64 + 1 or 2 + 6 */
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, name, 0, 0, 0)));
    }
    for (i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "snap%02d", i);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, name, &sn)));
        ASSERT_EQ(i, (int)sn.index);
        ASSERT_STR_EQ(name, sn.name);
    }
    close_exact(&h, &d, "twelve snapshots");
    qh_disk_free(&d);
    /* an empty disk has no L1 at all, as qemu-img makes it */
    make_image(&d, 512, 16, 3, 0);
    ASSERT_EQ(0, rd32(&d, 36));
    ASSERT_EQ(0, rd64(&d, 40));
    ASSERT_EQ(3 * 512, d.len);            /* header, table, block */
    qh_assert_consistent(&d, 1, "empty disk");
    /* and grows into one */
    {
        unsigned char b[512];
        memset(b, 9, sizeof b);
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 1 << 20)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 1000, b, 512)));
        close_exact(&h, &d, "grown from empty");
    }
    qh_disk_free(&d);
    PASS();
}

/* ---- property: seeded op sequences against a flat model ------------------------ */
/* Every op-buffer size from 8 to 16 and cache sizes 8..12, deferred-free
 * lists of 1..4 or the default, with snapshots taken, read back and
 * deleted among the writes: the planner's batch splits meet every room
 * boundary, and each snapshot must keep its bytes while the active view
 * follows the model. */
#define PROP_SNAPS 3
TEST seeded_sequences_match_the_model(void)
{
    int round;
    uint64_t rng = test_seed * 0x9e3779b97f4a7c15ull + 7;
    for (round = 0; round < 45; round++) {
        static const uint32_t sizes[] = {512, 4096, 65536};
        uint32_t cs = sizes[alksim_splitmix64(&rng) % 3];
        int version = 2 + (int)(alksim_splitmix64(&rng) % 2);
        uint32_t rbits = version == 2 ? 16u
                                      : 1u << (alksim_splitmix64(&rng) % 7);
        uint64_t size = ((alksim_splitmix64(&rng) % 4096) + 1) * 512;
        uint64_t cap = size + 64 * 1024;
        size_t ops_cap = 8 + (size_t)(round % 9);
        size_t slots = 8 + (size_t)(round % 5);
        qh_disk d;
        qh_handle h;
        unsigned char *model = (unsigned char *)calloc(1, (size_t)cap);
        unsigned char *snap[PROP_SNAPS];
        uint64_t snap_size[PROP_SNAPS];
        char names[PROP_SNAPS][8];
        unsigned char buf[20000];
        unsigned n_snaps = 0, serial = 0, k;
        int i;
        ASSERT(model != NULL);
        qh_max_frees = round % 5 == 4 ? 0 : (size_t)(round % 5) + 1;
        make_image(&d, cs, rbits, version, size);
        ASSERT_EQ(Q2W_OK, qh_open(&h, &d, cs, slots, ops_cap, 1, 0));
        for (i = 0; i < 40; i++) {
            uint64_t off = alksim_splitmix64(&rng) % size;
            uint64_t len = alksim_splitmix64(&rng) % 20000 + 1;
            int kind = (int)(alksim_splitmix64(&rng) % 9);
            int rc;
            if (len > size - off) len = size - off;
            if (kind <= 2) {
                memset(buf, (int)(i + 1), (size_t)len);
                ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, off, buf, (size_t)len)));
                memcpy(model + off, buf, (size_t)len);
            } else if (kind == 3) {
                ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, off, len)));
                memset(model + off, 0, (size_t)len);
            } else if (kind == 4) {
                ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_discard(&h.img, off, len)));
                qh_model_discard(model, size, cs, version, 0, off, len, NULL);
            } else if (kind == 5) {
                ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
                qh_assert_fresh_view(&d, cs, 0, model, size, "property flush");
            } else if (kind == 6 && size + len <= cap) {
                ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, size + len)));
                size += len; /* the model past the old size is zero */
            } else if (kind == 7 && n_snaps < PROP_SNAPS) {
                snprintf(names[n_snaps], sizeof names[n_snaps], "p%u", serial++);
                rc = qh_run(&h.img, &d, q2w_snapshot_create(&h.img, names[n_snaps], 1, 2, 3));
                if (rc == Q2W_ERR_LIMIT) continue; /* narrow refcounts */
                ASSERT_EQ(Q2W_OK, rc);
                snap[n_snaps] = (unsigned char *)malloc((size_t)size);
                ASSERT(snap[n_snaps] != NULL);
                memcpy(snap[n_snaps], model, (size_t)size);
                snap_size[n_snaps++] = size;
            } else if (kind == 8 && n_snaps) {
                k = (unsigned)(off % n_snaps);
                ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, names[k])));
                free(snap[k]);
                for (; k + 1 < n_snaps; k++) {
                    snap[k] = snap[k + 1];
                    snap_size[k] = snap_size[k + 1];
                    memcpy(names[k], names[k + 1], sizeof names[k]);
                }
                n_snaps--;
            }
            qh_assert_consistent(&d, 0, "property step");
        }
        qh_assert_view(&h, &d, model, 0, size, "property");
        for (k = 0; k < n_snaps; k++) {
            q2w_snapshot sn;
            unsigned char *got = (unsigned char *)malloc((size_t)snap_size[k] + 1);
            ASSERT(got != NULL);
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, names[k], &sn)));
            ASSERT_EQ(snap_size[k], sn.disk_size);
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, got,
                                                                  (size_t)snap_size[k])));
            ASSERT_MEM_EQ(snap[k], got, (size_t)snap_size[k]);
            free(got);
            free(snap[k]);
        }
        close_exact(&h, &d, "property");
        qh_assert_fresh_view(&d, cs, 0, model, size, "property");
        free(model);
        qh_disk_free(&d);
    }
    qh_max_frees = 0;
    PASS();
}

/* ---- edges the mutation runs pointed at ------------------------------------------ */
/* An image of size 0 has no L1: every operation that takes no range still
 * works on it, and empty ranges at offset 0 are in range. */
/* A name whose bytes hold a NUL (qemu reads such an entry): the lengths
 * say how many bytes the entry has, the strings end where they end, and
 * a find by the bytes before the NUL does not match it. */
TEST a_snapshot_name_holding_a_nul_keeps_its_length(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    uint64_t t;
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "abc", 1, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 0, &sn)));
    ASSERT_EQ(1, sn.id_len);
    ASSERT_EQ(3, sn.name_len);
    close_exact(&h, &d, "one snapshot");
    t = rd64(&d, 64);
    ASSERT_EQ('b', d.buf[t + 64 + 1 + 1]);          /* id "1", then "abc" */
    d.buf[t + 64 + 1 + 1] = 0;
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 0, &sn)));
    ASSERT_EQ(3, sn.name_len);
    ASSERT_EQ(1, (int)strlen(sn.name));
    ASSERT_EQ(0, memcmp(sn.name, "a\0c", 4));
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "a", &sn)));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

TEST a_zero_size_image_takes_every_operation(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char b[8] = {0};
    make_image(&d, 4096, 16, 3, 0);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, b, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_discard(&h.img, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "z", 5, 6, 7)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 0, &sn)));
    ASSERT_STR_EQ("z", sn.name);
    ASSERT_EQ(0, sn.l1_size);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "z", &sn)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, b, 0)));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_read_snapshot(&h.img, &sn, 0, b, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "z")));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 0)));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_write(&h.img, 0, b, 1));
    close_exact(&h, &d, "zero-size image");
    qh_disk_free(&d);
    PASS();
}

/* Caller memory at an odd address: the handle aligns inside it and never
 * touches a byte before it. */
TEST misaligned_memory_is_aligned_inside(void)
{
    qh_disk d;
    q2w_image img;
    q2w_config cfg;
    q2w_op ops[16];
    size_t mem_len = 20 * 4096 + 8192, off;
    unsigned char *raw = (unsigned char *)malloc(mem_len + 16);
    unsigned char b[4096];
    ASSERT(raw != NULL);
    for (off = 1; off < 8; off += 3) {
        make_image(&d, 4096, 16, 3, 1 << 20);
        d.ops_cap = 16;
        memset(raw, 0xc3, mem_len + 16);
        memset(&cfg, 0, sizeof cfg);
        cfg.mem = raw + off;
        cfg.mem_len = mem_len;
        cfg.ops = ops;
        cfg.ops_cap = 16;
        cfg.file_size = d.len;
        cfg.writable = 1;
        cfg.max_frees = 4;
        ASSERT_EQ(Q2W_OK, qh_run(&img, &d, q2w_open(&img, &cfg)));
        memset(b, 1, sizeof b);
        ASSERT_EQ(Q2W_OK, qh_run(&img, &d, q2w_write(&img, 0, b, sizeof b)));
        ASSERT_EQ(Q2W_OK, qh_run(&img, &d, q2w_discard(&img, 0, sizeof b)));
        ASSERT_EQ(Q2W_OK, qh_run(&img, &d, q2w_write(&img, 8192, b, 100)));
        ASSERT_EQ(Q2W_OK, qh_run(&img, &d, q2w_close(&img)));
        {
            size_t i;
            for (i = 0; i < off; i++) ASSERT_EQ(0xc3, raw[i]);
        }
        qh_assert_consistent(&d, 1, "misaligned memory");
        qh_disk_free(&d);
    }
    free(raw);
    PASS();
}

/* An L1 table that fills its clusters exactly (512 B clusters, 64 entries
 * = one cluster; 128 = two): snapshot create copies and delete frees
 * exactly its clusters, no more. */
TEST snapshot_of_an_l1_filling_whole_clusters(void)
{
    static const uint64_t sizes[] = {2u << 20, 4u << 20};
    size_t t;
    for (t = 0; t < 2; t++) {
        qh_disk d;
        qh_handle h;
        q2w_snapshot sn;
        unsigned char b[512];
        make_image(&d, 512, 16, 3, sizes[t]);
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));
        memset(b, 0x31, sizeof b);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, sizes[t] - 512, b, 512)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "full", 0, 0, 0)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "full", &sn)));
        ASSERT_EQ(sizes[t] / (512 * 64), sn.l1_size);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
        qh_assert_consistent(&d, 1, "after create");
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "full")));
        close_exact(&h, &d, "after delete");
        qh_disk_free(&d);
    }
    PASS();
}

/* Boundaries of the header checks: a backing name right after the header
 * (no extensions) is fine; a backing format of 15 bytes is, 16 is not (as
 * qemu); the refusal names the extension's length field. */
TEST header_boundaries(void)
{
    qh_disk d;
    qh_handle h;
    q2w_info info;
    make_image(&d, 4096, 16, 2, 1 << 20);   /* v2: header_length 72 */
    memcpy(d.buf + 72, "base", 4);
    q2w__put64(d.buf + 8, 72);
    q2w__put32(d.buf + 16, 4);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    q2w_info_get(&h.img, &info);
    ASSERT_STR_EQ("base", info.backing_name);
    qh_close_handle(&h);
    q2w__put64(d.buf + 8, 71);
    ASSERT_EQ(Q2W_ERR_HEADER, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    ASSERT_STR_EQ("header.backing_file_offset", q2w_error(&h.img)->what);
    ASSERT_EQ(8, q2w_error(&h.img)->offset);
    ASSERT_EQ(71, q2w_error(&h.img)->needed);
    qh_close_handle(&h);
    qh_disk_free(&d);

    make_image(&d, 4096, 16, 3, 1 << 20);   /* v3: extensions from 112 */
    q2w__put32(d.buf + 112, 0xe2792acau);   /* backing format */
    q2w__put32(d.buf + 116, 15);
    memcpy(d.buf + 120, "qcow2-but-long!", 15);
    q2w__put64(d.buf + 8, 200);
    q2w__put32(d.buf + 16, 4);
    memcpy(d.buf + 200, "base", 4);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    q2w_info_get(&h.img, &info);
    ASSERT_STR_EQ("qcow2-but-long!", info.backing_format);
    qh_close_handle(&h);
    q2w__put32(d.buf + 116, 16);
    ASSERT_EQ(Q2W_ERR_HEADER, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    ASSERT_STR_EQ("backing format extension", q2w_error(&h.img)->what);
    ASSERT_EQ(116, q2w_error(&h.img)->offset);
    ASSERT_EQ(16, q2w_error(&h.img)->needed);
    qh_close_handle(&h);
    /* an extension running 1 byte past the header area */
    q2w__put32(d.buf + 112, 0x12345678u);
    q2w__put32(d.buf + 116, 200 - 120 + 1);
    ASSERT_EQ(Q2W_ERR_HEADER, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    ASSERT_STR_EQ("header extension length", q2w_error(&h.img)->what);
    ASSERT_EQ(116, q2w_error(&h.img)->offset);
    ASSERT_EQ(81, q2w_error(&h.img)->needed);
    qh_close_handle(&h);
    q2w__put32(d.buf + 116, 200 - 120);     /* exactly up to the name */
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    qh_close_handle(&h);
    /* the name moved to 199: after an extension ending at 192, the 7
     * bytes left cannot hold another extension header and are not read
     * as one */
    q2w__put32(d.buf + 116, 192 - 120);
    q2w__put64(d.buf + 8, 199);
    memcpy(d.buf + 199, "base", 4);
    memset(d.buf + 192, 0x7f, 7);
    q2w__put32(d.buf + 192, 0xe2792acau);   /* what a backing format starts with */
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* API misuse is refused with its full context, nothing else set. */
TEST misuse_errors_carry_exact_context(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    const q2w_error_info *e;
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    e = q2w_error(&h.img);
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_write(&h.img, (1 << 20) - 3, "abcd", 4));
    ASSERT_STR_EQ("virtual range", e->what);
    ASSERT_EQ((1 << 20) - 3, e->offset);
    ASSERT_EQ(4, e->index);
    ASSERT_EQ(0, e->needed);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_create(&h.img, "", 0, 0, 0));
    ASSERT_STR_EQ("snapshot name", e->what);
    ASSERT_EQ(0, e->offset);
    ASSERT_EQ(0, e->index);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_find(&h.img, "", &sn));
    ASSERT_STR_EQ("snapshot name", e->what);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_find(&h.img, "s", NULL));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_snapshot_delete(&h.img, NULL));
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "nope", &sn)));
    ASSERT_STR_EQ("snapshot", e->what);
    ASSERT_EQ(0, e->offset);
    ASSERT_EQ(0, e->index);
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 0, &sn)));
    ASSERT_EQ(0, e->offset);
    ASSERT_EQ(0, e->index);
    ASSERT_EQ(Q2W_ERR_NOT_FOUND, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "nope")));
    ASSERT_STR_EQ("snapshot", e->what);
    ASSERT_EQ(0, e->offset);
    ASSERT_EQ(0, e->index);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "s", &sn)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 1 << 20, NULL, 0)));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_read_snapshot(&h.img, &sn, (1 << 20) + 1, NULL, 0));
    ASSERT_STR_EQ("snapshot range", e->what);
    ASSERT_EQ((1 << 20) + 1, e->offset);
    ASSERT_EQ(0, e->index);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_flush(&h.img));
    ASSERT_STR_EQ("image not open", e->what);
    ASSERT_EQ(0, e->offset);
    ASSERT_EQ(0, e->index);
    ASSERT_EQ(0, e->needed);
    qh_close_handle(&h);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 0));
    ASSERT_EQ(Q2W_ERR_READONLY, q2w_discard(&h.img, 0, 4096));
    ASSERT_STR_EQ("operation", e->what);
    ASSERT_EQ(0, e->offset);
    ASSERT_EQ(0, e->index);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Zeros written over clusters that already read as zeros (no backing
 * file) change nothing on disk, v2 included: no L2 table is made for them. */
TEST zeros_over_nothing_write_nothing(void)
{
    int version;
    for (version = 2; version <= 3; version++) {
        qh_disk d;
        qh_handle h;
        uint64_t writes;
        make_image(&d, 4096, 16, version, 1 << 20);
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
        writes = d.writes;
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 100, 20000)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 30000, NULL, 0)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
        ASSERT_EQ(writes, d.writes);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
        qh_close_handle(&h);
        ASSERT_EQ(0, rd64(&d, 40) ? rd64(&d, rd64(&d, 40)) : 0);
        qh_disk_free(&d);
    }
    PASS();
}

/* A snapshot table that would run past the largest host offset is
 * refused where it crosses; a snapshot description with an unaligned L1
 * is refused by q2w_read_snapshot. */
TEST snapshot_table_at_the_end_of_the_host_range(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char b[16];
    make_image(&d, 512, 16, 3, 1 << 20);
    /* Empty 40-byte entries, read a cluster at a time from the first entry
     * that does not fit: 12 per read, so read 16 would start at 2^56 (the
     * table starts 16 * 480 bytes before it, a multiple of 512). */
    q2w__put32(d.buf + 60, 192);
    q2w__put64(d.buf + 64, (1ull << 56) - 16 * 480);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 512, 1));  /* walks the table */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 191, &sn)));
    qh_close_handle(&h);
    q2w__put32(d.buf + 60, 193);
    ASSERT_EQ(Q2W_ERR_METADATA, open_rw(&h, &d, 512, 1));
    CHECK_CALL(error_is(&h.img, "snapshot table", 1ull << 56, 192));
    qh_close_handle(&h);
    qh_disk_free(&d);

    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "s", &sn)));
    sn.l1_offset += 8;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_read_snapshot(&h.img, &sn, 0, b, sizeof b));
    ASSERT_STR_EQ("snapshot", q2w_error(&h.img)->what);
    ASSERT_EQ(sn.l1_offset, q2w_error(&h.img)->offset);
    sn.l1_offset -= 8;
    {
        /* the entry on disk claims 2^24 L1 entries (128 MiB > 32 MiB) */
        uint64_t at = rd64(&d, 64) + sn.entry_offset;
        uint32_t was = rd32(&d, at + 8);
        q2w__put32(d.buf + at + 8, 1u << 24);
        ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 0, &sn)));
        ASSERT_STR_EQ("snapshot table entry", q2w_error(&h.img)->what);
        ASSERT_EQ(rd64(&d, 64), q2w_error(&h.img)->offset);
        q2w__put32(d.buf + at + 8, was);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_get(&h.img, 0, &sn)));
    }
    sn.l1_size = Q2W_MAX_L1_BYTES / 8 + 1;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_read_snapshot(&h.img, &sn, 0, b, sizeof b));
    sn.l1_size = Q2W_MAX_L1_BYTES / 8;
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, b, sizeof b)));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* A caller that says "there is a backing file" for an image that names
 * none gets no backing reads: unallocated clusters read as zeros. */
TEST no_backing_name_means_no_backing_reads(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char got[600], b[100];
    size_t i;
    static unsigned char pattern[1 << 20];
    memset(pattern, 0x77, sizeof pattern);
    make_image(&d, 512, 16, 3, 1 << 20);
    d.backing = pattern;            /* offered, but the image names none */
    d.backing_len = sizeof pattern;
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 16, 1, 1));
    memset(got, 0xee, sizeof got);
    n_oplog = 0;
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_read(&h.img, 1000, got, sizeof got)));
    memset(b, 5, sizeof b);
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_write(&h.img, 5000, b, sizeof b)));
    for (i = 0; i < n_oplog; i++) ASSERT(oplog[i].kind != Q2W_OP_BACKING_READ);
    for (i = 0; i < sizeof got; i++) ASSERT_EQ(0, got[i]);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 4608, got, 512)));
    for (i = 0; i < 512; i++) ASSERT_EQ(i >= 392 && i < 492 ? 5 : 0, got[i]);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Zeroing or discarding from one byte into a cluster never touches the
 * byte before: only whole clusters are unmapped. */
TEST unaligned_zeroes_keep_the_bytes_before(void)
{
    int version, kind;
    for (version = 2; version <= 3; version++)
        for (kind = 0; kind < 2; kind++) {
            qh_disk d;
            qh_handle h;
            unsigned char data[3 * 512], got[3 * 512];
            size_t i;
            memset(data, 0x5a, sizeof data);
            make_image(&d, 512, 16, version, 1 << 20);
            ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 16, 1, 0));
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, data, sizeof data)));
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, kind ? q2w_discard(&h.img, 1, 1023)
                                                      : q2w_write_zeroes(&h.img, 1, 1023)));
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, 0, got, sizeof got)));
            ASSERT_EQ(0x5a, got[0]);
            /* zeroes: 1..1023 zero; discard: only the whole cluster 512..1023 */
            for (i = 1; i < 1024; i++)
                ASSERT_EQ(kind && i < 512 ? 0x5a : 0, got[i]);
            for (i = 1024; i < sizeof got; i++) ASSERT_EQ(0x5a, got[i]);
            close_exact(&h, &d, "unaligned zeroes");
            qh_disk_free(&d);
        }
    PASS();
}

/* Forty snapshots in 512 B clusters: the table spans several clusters and
 * every rewrite of it takes several batches of an 8-op buffer. Deleting
 * every third keeps the others, their ids, their order and their bytes. */
TEST many_snapshots_in_a_multi_cluster_table(void)
{
    qh_disk d;
    qh_handle h;
    char names[40][24];
    int alive[40];
    unsigned char b[512], got[512];
    unsigned i, n;
    make_image(&d, 512, 16, 3, 256u << 10);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 8, 1, 0));
    for (i = 0; i < 40; i++) {
        memset(b, (int)i + 1, sizeof b);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, (i % 8) * 512, b, 512)));
        snprintf(names[i], sizeof names[i], "snapshot-%u%.*s", i, (int)(i % 7),
                 "xxxxxxx");
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, names[i], i, 0, 0)));
        alive[i] = 1;
    }
    for (i = 1; i < 40; i += 3) {
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, names[i])));
        alive[i] = 0;
    }
    close_exact(&h, &d, "many snapshots");
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 8, 0, 0));
    {
        q2w_info info;
        uint64_t at = 0;
        char id[16];
        q2w_info_get(&h.img, &info);
        ASSERT_EQ(27, info.nb_snapshots);
        ASSERT(info.snapshots_offset != 0);
        for (i = 0, n = 0; i < 40; i++) {
            q2w_snapshot sn;
            if (!alive[i]) continue;
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, names[i], &sn)));
            ASSERT_EQ(n, sn.index);
            snprintf(id, sizeof id, "%u", i + 1);
            ASSERT_STR_EQ(id, sn.id);
            ASSERT_EQ(i, sn.date_sec);
            at = qh_assert_snapshot_entry(&d, info.snapshots_offset, &sn, at,
                                          "many snapshots");
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, (i % 8) * 512,
                                                                  got, 512)));
            memset(b, (int)i + 1, sizeof b);
            ASSERT_MEM_EQ(b, got, 512);
            n++;
        }
        ASSERT(at > 3 * 512);   /* the table spans several clusters */
    }
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* Create's layout, exactly: the backing format extension is padded to 8
 * bytes (a name of 8 bytes needs no padding), the end marker follows, the
 * backing name after it; a name that ends exactly at the cluster's end
 * fits. The L1 has one entry per L2 span, rounded up. */
TEST create_layout_boundaries(void)
{
    static const char *fmts[] = {"qcow2", "parallel", "vpc"};
    char name[400];
    size_t i;
    for (i = 0; i < 3; i++) {
        qh_disk d;
        qh_handle h;
        q2w_create_opts o;
        q2w_info info;
        size_t fl = strlen(fmts[i]), pad = (fl + 7) & ~(size_t)7;
        memset(&o, 0, sizeof o);
        o.size = 1 << 20;
        o.cluster_size = 4096;
        o.backing = "base.img";
        o.backing_fmt = fmts[i];
        qh_disk_init(&d, 1 << 20);
        ASSERT_EQ(Q2W_OK, qh_create(&d, &o));
        ASSERT_EQ(0xe2792acau, rd32(&d, 112));
        ASSERT_EQ(fl, rd32(&d, 116));
        ASSERT_EQ(0, rd64(&d, 120 + pad));            /* end marker */
        ASSERT_EQ(120 + pad + 8, rd64(&d, 8));        /* name right after */
        ASSERT_EQ(8, rd32(&d, 16));
        ASSERT_MEM_EQ("base.img", d.buf + 120 + pad + 8, 8);
        ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 0, 1));
        q2w_info_get(&h.img, &info);
        ASSERT_STR_EQ(fmts[i], info.backing_format);
        qh_close_handle(&h);
        qh_disk_free(&d);
    }
    {
        q2w_create_opts o;
        q2w_error_info e;
        uint64_t len;
        memset(&o, 0, sizeof o);
        o.size = 1 << 20;
        o.cluster_size = 512;
        memset(name, 'b', sizeof name);
        name[512 - 120] = 0;                          /* 112 + 8 + 392 = 512 */
        o.backing = name;
        ASSERT_EQ(Q2W_OK, q2w_create(&o, NULL, 0, &len, &e));
        name[512 - 120] = 'b';
        name[512 - 119] = 0;
        ASSERT_EQ(Q2W_ERR_LIMIT, q2w_create(&o, NULL, 0, &len, &e));
    }
    {
        /* 512 B clusters: one L2 maps 32 KiB */
        static const uint64_t sizes[] = {32768, 32769, 65536, 65537, 1};
        static const uint32_t l1[] = {1, 2, 2, 3, 1};
        for (i = 0; i < 5; i++) {
            qh_disk d;
            make_image(&d, 512, 16, 3, sizes[i]);
            ASSERT_EQ(l1[i], rd32(&d, 36));
            ASSERT_EQ(sizes[i], rd64(&d, 24));
            qh_disk_free(&d);
        }
    }
    PASS();
}

/* A snapshot refused because an active table points at a cluster whose
 * refcount is 0 names the cluster and the entry. */
TEST snapshot_refuses_a_reference_with_refcount_zero(void)
{
    qh_disk d;
    qh_handle h;
    const uint64_t cs = 4096;
    checker_image(&d, 3);                  /* L2 at 4, data at 5 and 6 */
    q2w__put16(d.buf + 2 * cs + 6 * 2, 0);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_ERR_METADATA, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    CHECK_CALL(error_is(&h.img, "referenced cluster with refcount 0", 6 * cs, 1));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* A crash between a snapshot delete's header switch and its refcount drops
 * leaves leaks (refcount 2, one reference) and COPIED clear, consistent
 * with the stored refcounts. Repairing the leaks sets COPIED right as well
 * (as qemu-img check -r leaks does), so the image is then exact; with a
 * corruption present COPIED is left alone. */
/* A refcount past the end of the file is a leak wherever it sits in its
 * block - the checker skips zero bytes there, so each width and each place
 * (first entry past the end, mid-byte, the block's last entry) is tried. */
TEST checker_finds_leaks_past_the_end_in_every_width(void)
{
    uint32_t order, cs = 512;
    for (order = 0; order <= 6; order++) {
        qh_disk d;
        q2w_check_result r;
        uint64_t epb = (uint64_t)cs * 8 >> order, rb, end, places[5];
        unsigned p;
        make_image(&d, cs, 1u << order, 3, 1u << 20);
        rb = q2w__be64(d.buf + q2w__be64(d.buf + 48)) & ~(uint64_t)511;
        end = d.len / cs;            /* the first cluster past the file */
        places[0] = end;
        places[1] = end + 3 < epb ? end + 3 : epb - 1;
        places[2] = epb / 2;         /* the first entry of its byte */
        places[3] = epb / 2 + 1;     /* inside a byte (narrow widths) */
        places[4] = epb - 1;
        for (p = 0; p < 5; p++) {
            uint64_t c = places[p];
            if (c < end) continue;
            q2w__rc_set(d.buf + rb, c, order, 1);
            ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
            ASSERT_EQ(0, r.corruptions);
            ASSERT_EQ(1, r.leaks);
            ASSERT(find_exact(&r, Q2W_FIND_LEAK, c * cs,
                              rb + ((c << order) >> 3), 1, 0));
            q2w__rc_set(d.buf + rb, c, order, 0);
            ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
            ASSERT_EQ(0, r.leaks + r.corruptions);
        }
        qh_disk_free(&d);
    }
    PASS();
}

TEST repairing_leaks_sets_copied_right(void)
{
    qh_disk d;
    qh_handle h;
    q2w_check_result r;
    const uint64_t cs = 4096, l1 = 3 * cs, l2 = 4 * cs;
    int round;
    for (round = 0; round < 2; round++) {
        checker_image(&d, 3);             /* L2 at 4, data at 5 and 6 */
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
        qh_close_handle(&h);
        ASSERT_EQ(0, rd64(&d, l1) & Q2W__COPIED);
        ASSERT_EQ(0, rd64(&d, l2) & Q2W__COPIED);
        q2w__put32(d.buf + 60, 0);       /* the switch landed, no drops */
        ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
        ASSERT_EQ(0, r.corruptions);
        ASSERT(r.leaks >= 3);             /* L2, two data clusters, old L1 */
        if (round) q2w__put64(d.buf + l2 + 8 * 5, (100 * cs) | Q2W__COPIED);
        ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_LEAKS, &r));
        if (round == 0) {
            ASSERT_EQ(3, r.copied_fixed);     /* the L1 entry, two L2 entries */
            ASSERT_EQ(Q2W__COPIED, rd64(&d, l1) & Q2W__COPIED);
            ASSERT_EQ(Q2W__COPIED, rd64(&d, l2) & Q2W__COPIED);
            ASSERT_EQ(Q2W__COPIED, rd64(&d, l2 + 8) & Q2W__COPIED);
            qh_assert_consistent(&d, 1, "after the repair");
        } else {
            ASSERT_EQ(0, r.copied_fixed);     /* a corruption: left alone */
            ASSERT(r.corruptions >= 1);
            ASSERT_EQ(0, rd64(&d, l2) & Q2W__COPIED);
        }
        qh_disk_free(&d);
    }
    /* the flag set right at its own entry: L1 entries 0 and 2 of an 8 MiB
     * image (one L2 table per 2 MiB) */
    {
        unsigned char b[512];
        uint64_t l1t;
        memset(b, 5, sizeof b);
        make_image(&d, 4096, 16, 3, 8u << 20);
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, sizeof b)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 4u << 20, b, sizeof b)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
        qh_close_handle(&h);
        q2w__put32(d.buf + 60, 0);
        l1t = rd64(&d, 40);
        ASSERT_EQ(0, rd64(&d, l1t + 16) & Q2W__COPIED);
        ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_LEAKS, &r));
        ASSERT_EQ(4, r.copied_fixed);      /* two L1 entries, two L2 entries */
        ASSERT_EQ(Q2W__COPIED, rd64(&d, l1t) & Q2W__COPIED);
        ASSERT_EQ(Q2W__COPIED, rd64(&d, l1t + 16) & Q2W__COPIED);
        ASSERT_EQ(0, rd64(&d, l1t + 8));
        qh_assert_consistent(&d, 1, "after the repair of two tables");
        qh_disk_free(&d);
    }
    PASS();
}

/* Two L2 entries naming one cluster (refcount 1): discarding both frees
 * it once and then meets a refcount of 0 - refused with the cluster's
 * offset, never an underflow. */
TEST a_cluster_freed_twice_is_refused(void)
{
    qh_disk d;
    qh_handle h;
    const uint64_t cs = 4096;
    int rc;
    checker_image(&d, 3);                 /* L2 at 4, data at 5 and 6 */
    q2w__put64(d.buf + 4 * cs + 8, (5 * cs) | Q2W__COPIED);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 1, 0));
    rc = qh_run(&h.img, &d, q2w_discard(&h.img, 0, 2 * cs));
    if (rc == Q2W_OK) rc = qh_run(&h.img, &d, q2w_flush(&h.img));
    ASSERT_EQ(Q2W_ERR_METADATA, rc);
    CHECK_CALL(error_is(&h.img, "refcount of freed cluster", 5 * cs, 0));
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

/* A one-letter backing format is reported; q2w_posix_io sizes a one-byte
 * file as one byte. */
TEST short_names_and_files(void)
{
    qh_disk d;
    qh_handle h;
    q2w_info info;
    ASSERT_EQ(Q2W_OK, qh_make(&d, 1 << 20, 0, 4096, 0, 1 << 20, "b", "r"));
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 16, 0, 1));
    q2w_info_get(&h.img, &info);
    ASSERT_STR_EQ("r", info.backing_format);
    ASSERT_STR_EQ("b", info.backing_name);
    qh_close_handle(&h);
    qh_disk_free(&d);
#ifndef Q2W_NO_STDIO
    {
        char path[] = "/tmp/test_qcow2w_one.XXXXXX";
        int fd = mkstemp(path);
        q2w_io io;
        q2w_fdbox box;
        ASSERT(fd >= 0);
        ASSERT_EQ(1, (int)write(fd, "x", 1));
        q2w_posix_io(&io, fd, &box);
        ASSERT_EQ(1, io.file_size);
        close(fd);
        unlink(path);
        q2w_posix_io(&io, -1, &box);          /* lseek fails: size 0 */
        ASSERT_EQ(0, io.file_size);
    }
#endif
    PASS();
}

/* Two paths to one data cluster with 2-bit refcounts (max 3) at refcount
 * 2: each path alone passes the overflow pre-check, the second increment
 * does not fit - refused there, never wrapped to 0; the image keeps at
 * most leaks. */
TEST a_second_path_that_would_overflow_is_refused(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[8192];
    uint64_t rb, l2, e0;
    const uint64_t cs = 4096;
    int rc;
    memset(b, 3, sizeof b);
    make_image(&d, 4096, 2, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, sizeof b)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    rb = rd64(&d, rd64(&d, 48));
    l2 = rd64(&d, rd64(&d, 40)) & Q2W__OFF_MASK;
    e0 = rd64(&d, l2) & Q2W__OFF_MASK;
    /* entry 1 names entry 0's cluster; that cluster's refcount is 2, the
     * other data cluster is free */
    q2w__put64(d.buf + l2 + 8, e0);
    q2w__put64(d.buf + l2, e0);
    q2w__rc_set(d.buf + rb, e0 / cs, 1, 2);      /* order 1: 2 bits */
    q2w__rc_set(d.buf + rb, e0 / cs + 1, 1, 0);
    qh_assert_consistent(&d, 1, "two paths");
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    rc = qh_run(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0));
    ASSERT_EQ(Q2W_ERR_LIMIT, rc);
    ASSERT_STR_EQ("refcount would overflow", q2w_error(&h.img)->what);
    ASSERT_EQ(e0, q2w_error(&h.img)->offset);
    qh_close_handle(&h);
    qh_assert_consistent(&d, 0, "after the refusal");
    qh_disk_free(&d);
    PASS();
}

/* Growing the L1 frees the old table's clusters; its cached pieces go
 * with them, so when first fit hands those clusters out again as L2 tables
 * nothing stale is found in the cache. */
TEST resize_forgets_the_old_l1_pieces(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char b[512];
    uint64_t old_l1, off;
    memset(b, 0x61, sizeof b);
    make_image(&d, 512, 16, 3, 4u << 20);    /* L1: 128 entries, 2 clusters */
    old_l1 = rd64(&d, 40);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 12, 16, 1, 0));
    /* both L1 pieces cached */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, 512)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 3u << 20, b, 512)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_resize(&h.img, 64u << 20)));
    ASSERT(rd64(&d, 40) != old_l1);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    /* new L2 tables: first fit reuses the old L1's clusters */
    for (off = 8u << 20; off < (40u << 20); off += 4u << 20)
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, off, b, 512)));
    close_exact(&h, &d, "after reusing the old L1");
    {
        unsigned char got[512];
        ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 8, 16, 0, 0));
        for (off = 8u << 20; off < (40u << 20); off += 4u << 20) {
            ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, off, got, 512)));
            ASSERT_MEM_EQ(b, got, 512);
        }
        qh_close_handle(&h);
    }
    qh_disk_free(&d);
    PASS();
}

/* Every header switch is one write of its fields, planned once: snapshot
 * create and delete write bytes 60..72 exactly once each, a size-only
 * resize bytes 24..32 once. */
TEST header_switches_are_written_once(void)
{
    qh_disk d;
    qh_handle h;
    size_t i, n60 = 0, n24 = 0;
    unsigned char b[4096];
    memset(b, 2, sizeof b);
    make_image(&d, 4096, 16, 3, 1 << 20);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 8, 64, 1, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, sizeof b)));
    n_oplog = 0;
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_snapshot_create(&h.img, "s", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_snapshot_delete(&h.img, "s")));
    ASSERT_EQ(Q2W_OK, run_logged(&h.img, &d, q2w_resize(&h.img, 2 << 20)));
    for (i = 0; i < n_oplog; i++) {
        if (oplog[i].kind != Q2W_OP_WRITE) continue;
        n60 += oplog[i].off == 60 && oplog[i].len == 12;
        n24 += oplog[i].off == 24 && oplog[i].len == 8;
    }
    ASSERT_EQ(2, n60);
    ASSERT_EQ(1, n24);
    qh_close_handle(&h);
    qh_disk_free(&d);
    PASS();
}

#ifndef Q2W_NO_STDIO
/* q2w_posix_run hands back what the operation returned, refusals too. */
TEST posix_run_returns_refusals(void)
{
    q2w_image img;
    memset(&img, 0, sizeof img);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_posix_run(&img, -1, NULL, Q2W_ERR_ARG));
    ASSERT_EQ(Q2W_ERR_RANGE, q2w_posix_run_flags(&img, -1, NULL, 0, Q2W_ERR_RANGE));
    ASSERT_EQ(Q2W_OK, q2w_posix_run(&img, -1, NULL, Q2W_OK));
    PASS();
}
#endif

TEST strerror_names_every_code(void)
{
    int c;
    for (c = Q2W_PENDING; c > Q2W_RESULT_END_ - 40 && c >= -17; c--)
        ASSERT(strcmp(q2w_strerror(c), "unknown qcow2w result code") != 0);
    ASSERT_STR_EQ("unknown qcow2w result code", q2w_strerror(-99));
    ASSERT_STR_EQ("leak", q2w_finding_name(Q2W_FIND_LEAK));
    ASSERT_STR_EQ("unknown finding", q2w_finding_name(99));
    PASS();
}

SUITE(create_and_open)
{
    RUN_TEST(create_v3_header_is_exact);
    RUN_TEST(create_v2_and_backing_name);
    RUN_TEST(create_refuses_bad_options);
    RUN_TEST(create_every_geometry_checks_clean);
    RUN_TEST(open_validates_every_header_field);
    RUN_TEST(open_accepts_a_104_byte_header);
    RUN_TEST(open_accepts_65536_snapshots);
    RUN_TEST(open_refuses_bad_backing_and_extensions);
    RUN_TEST(dirty_and_corrupt_images_are_refused_for_writing_only);
    RUN_TEST(memory_and_op_buffer_limits);
}

SUITE(operations)
{
    RUN_TEST(write_read_round_trip_with_tiny_cache);
    RUN_TEST(allocating_write_ops_are_in_crash_safe_order);
    RUN_TEST(refcount_decrease_follows_the_durable_reference_drop);
    RUN_TEST(write_zeroes_v3_uses_the_zero_flag_v2_writes_zeros);
    RUN_TEST(backing_fill_and_v2_discard_with_backing);
    RUN_TEST(discard_takes_the_partial_last_cluster);
    RUN_TEST(resize_grows_the_l1_and_frees_the_old_one);
    RUN_TEST(refcount_table_grows_and_describes_itself);
    RUN_TEST(file_end_counts_tables_placed_past_the_end);
    RUN_TEST(errors_range_busy_and_failed_state);
    RUN_TEST(autoclear_bits_cleared_and_extensions_preserved);
    RUN_TEST(seeded_sequences_match_the_model);
    RUN_TEST(strerror_names_every_code);
    RUN_TEST(null_arguments_are_refused);
    RUN_TEST(a_zero_size_image_takes_every_operation);
    RUN_TEST(a_snapshot_name_holding_a_nul_keeps_its_length);
    RUN_TEST(misaligned_memory_is_aligned_inside);
    RUN_TEST(snapshot_of_an_l1_filling_whole_clusters);
    RUN_TEST(header_boundaries);
    RUN_TEST(misuse_errors_carry_exact_context);
    RUN_TEST(zeros_over_nothing_write_nothing);
    RUN_TEST(snapshot_table_at_the_end_of_the_host_range);
    RUN_TEST(no_backing_name_means_no_backing_reads);
    RUN_TEST(unaligned_zeroes_keep_the_bytes_before);
    RUN_TEST(many_snapshots_in_a_multi_cluster_table);
    RUN_TEST(create_layout_boundaries);
    RUN_TEST(snapshot_refuses_a_reference_with_refcount_zero);
    RUN_TEST(repairing_leaks_sets_copied_right);
    RUN_TEST(checker_finds_leaks_past_the_end_in_every_width);
    RUN_TEST(a_cluster_freed_twice_is_refused);
    RUN_TEST(short_names_and_files);
    RUN_TEST(a_second_path_that_would_overflow_is_refused);
    RUN_TEST(resize_forgets_the_old_l1_pieces);
    RUN_TEST(header_switches_are_written_once);
#ifndef Q2W_NO_STDIO
    RUN_TEST(posix_run_returns_refusals);
#endif
}

SUITE(snapshots)
{
    RUN_TEST(snapshot_then_copy_on_write);
    RUN_TEST(snapshot_apply_reverts);
    RUN_TEST(amend_compat_down_and_up);
    RUN_TEST(snapshot_entries_ids_and_delete);
    RUN_TEST(snapshot_delete_right_after_reading_another);
    RUN_TEST(map_gives_maximal_extents);
    RUN_TEST(snapshot_refused_when_refcounts_would_overflow);
    RUN_TEST(snapshot_overflow_is_found_behind_a_copied_table);
    RUN_TEST(snapshot_ids_past_nine_and_short_extra);
    RUN_TEST(reads_do_not_copy_and_full_refcounts_do_not_block_delete);
    RUN_TEST(snapshot_entries_across_cluster_boundaries);
    RUN_TEST(snapshot_create_switches_the_header_last);
}

SUITE(checker)
{
    RUN_TEST(checker_finds_each_kind_of_damage);
    RUN_TEST(checker_work_memory_is_exact);
    RUN_TEST(hostile_entries_are_refused);
    RUN_TEST(an_entry_naming_a_table_gets_one_answer_whatever_the_cache_holds);
    RUN_TEST(hostile_l1_entries_are_located);
    RUN_TEST(copies_fit_an_odd_op_buffer);
    RUN_TEST(refusals_name_their_place);
    RUN_TEST(snapshot_table_refusals);
    RUN_TEST(stale_copied_flags_are_set_again);
    RUN_TEST(partial_write_into_a_preallocated_zero_cluster);
    RUN_TEST(error_half_way_comes_after_the_planned_ops);
    RUN_TEST(error_half_way_keeps_its_context_past_a_busy_refusal);
    RUN_TEST(resize_zeroes_what_a_longer_backing_file_would_show);
    RUN_TEST(posix_executor_round_trip);
    RUN_TEST(posix_executor_joins_neighbours_exactly);
    RUN_TEST(checker_counts_snapshot_paths);
    RUN_TEST(checker_finds_an_incomplete_snapshot_entry);
    RUN_TEST(checker_finds_references_past_the_refcount_table);
    RUN_TEST(create_with_a_multi_cluster_refcount_table);
    RUN_TEST(freed_clusters_are_reused);
    RUN_TEST(closed_handles_and_no_backing);
    RUN_TEST(a_full_free_list_forces_checkpoints);
    RUN_TEST(growth_leaves_no_holes_and_reuses_the_old_table);
    RUN_TEST(resize_up_to_the_l1_limit);
    RUN_TEST(checker_counts_compressed_clusters);
    RUN_TEST(checker_stops_on_read_errors);
    RUN_TEST(checker_does_not_walk_unaligned_tables);
    RUN_TEST(reads_change_nothing);
    RUN_TEST(idle_flush_is_free_and_info_is_exact);
}

/* ---- images qemu made (corpus/qcow2_open/qemu-*, tests/qcow2_open_seeds.sh) */
static void load_fixture(qh_disk *d, const char *name)
{
    char path[256];
    FILE *f;
    long n;
    snprintf(path, sizeof path, "corpus/qcow2_open/qemu-%s", name);
    f = fopen(path, "rb");
    ALK_CHECK(f != NULL, "fixture %s (run the tests from the top folder)",
              path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    qh_disk_init(d, 64u << 20);
    qh_disk_reserve(d, (size_t)n);
    ALK_CHECK(fread(d->buf, 1, (size_t)n, f) == (size_t)n, "read %s", path);
    fclose(f);
    d->len = (size_t)n;
    d->cluster_size = rd32(d, 20) < 32 ? 1u << rd32(d, 20) : 0;
}

/* What the compressed-snapshot fixture holds: 64 KiB of 'c' with "hello"
 * at 20000 (compressed by qemu-img convert -c), grown to 1 MiB; snapshot
 * s1 of that; then 1 KiB of 0x35 at 4096 written over a compressed
 * cluster (qemu copied the shared L2 table). */
static void compressed_model(unsigned char *m, int active)
{
    memset(m, 0, 1u << 20);
    memset(m, 'c', 65536);
    memcpy(m + 20000, "hello", 5);
    if (active) memset(m + 4096, 0x35, 1024);
}

static uint64_t count_kind(const q2w_check_result *r, int kind)
{
    uint64_t n = 0;
    size_t i;
    for (i = 0; i < r->n_findings; i++) n += r->findings[i].kind == kind;
    return n;
}

TEST bitmaps_are_not_leaks(void)
{
    qh_disk d;
    qh_handle h;
    q2w_check_result r;
    unsigned char b[512];
    load_fixture(&d, "v3-4k-bitmaps");
    /* Autoclear bit 0 set: the directory, two tables and one data cluster
     * are references, so a check is clean and a repair frees nothing. */
    ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_LEAKS, &r));
    ASSERT_EQ(0, r.leaks);
    ASSERT_EQ(0, r.corruptions);
    ASSERT_EQ(0, r.leaks_fixed);
    /* A bad bitmap table entry is a finding, and then no repair frees
     * anything (the image is left as it is). */
    {
        qh_disk bad;
        unsigned char *before;
        load_fixture(&bad, "v3-4k-bitmaps");
        /* the directory is at 0xf000 (the extension says so); its first
         * entry's table gets reserved bit 1 in entry 0 */
        ASSERT_EQ(0xf000, rd64(&bad, 112 + 8 + 16));
        bad.buf[rd64(&bad, 0xf000) + 7] |= 2;
        bad.buf[0x20000 + 2 * 50 + 1] = 1; /* and a leaked cluster 50 */
        before = (unsigned char *)malloc(bad.len);
        ASSERT(before != NULL);
        memcpy(before, bad.buf, bad.len);
        ASSERT_EQ(Q2W_OK, qh_check(&bad, 0, &r));
        ASSERT_EQ(1, count_kind(&r, Q2W_FIND_BITMAP));
        ASSERT_EQ(1, r.leaks);
        ASSERT_EQ(Q2W_ERR_UNSUPPORTED,
                  qh_check(&bad, Q2W_CHECK_REPAIR_LEAKS, &r));
        ASSERT_EQ(0, r.leaks_fixed);
        ASSERT_EQ(0x23852875u, rd32(&bad, r.error.offset));
        ASSERT_MEM_EQ(before, bad.buf, bad.len);
        free(before);
        qh_disk_free(&bad);
    }
    /* A change clears autoclear bit 0 (qcow2w does not keep bitmaps): the
     * bitmaps are stale from then on, for qemu too, and their clusters
     * are leaks - exactly those four. */
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    memset(b, 7, sizeof b);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, b, sizeof b)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    ASSERT_EQ(0, rd64(&d, 88) & 1);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT_EQ(4, r.leaks);
    ASSERT(find_kind(&r, Q2W_FIND_LEAK, 0x7000) &&
           find_kind(&r, Q2W_FIND_LEAK, 0x8000) &&
           find_kind(&r, Q2W_FIND_LEAK, 0xe000) &&
           find_kind(&r, Q2W_FIND_LEAK, 0xf000));
    qh_disk_free(&d);
    PASS();
}

TEST unknown_structures_stop_repairs(void)
{
    static const struct { uint64_t at; unsigned char byte; uint64_t where; }
        cases[] = {
            /* an extension of unknown type in place of the end marker */
            {112, 0x7e, 112},
            /* autoclear bit 5, compatible bit 3 */
            {95, 0x20, 88},
            {87, 0x08, 80},
        };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        qh_disk d;
        q2w_check_result r;
        unsigned char *before;
        checker_image(&d, 3);
        d.buf[cases[i].at] = cases[i].byte;
        /* a leak: cluster 9 counted once, referenced nowhere */
        d.buf[2 * 4096 + 2 * 9 + 1] = 1;
        before = (unsigned char *)malloc(d.len);
        ASSERT(before != NULL);
        memcpy(before, d.buf, d.len);
        ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
        ASSERT_EQ(1, r.unknown);
        ASSERT_EQ(0, r.corruptions);
        ASSERT_EQ(1, r.leaks);
        ASSERT(find_exact(&r, Q2W_FIND_UNKNOWN, 0, cases[i].where,
                          r.findings[0].stored, r.findings[0].computed));
        ASSERT_EQ(Q2W_ERR_UNSUPPORTED,
                  qh_check(&d, Q2W_CHECK_REPAIR_LEAKS, &r));
        ASSERT_EQ(cases[i].where, r.error.offset);
        ASSERT_EQ(Q2W_ERR_UNSUPPORTED, qh_check(&d, Q2W_CHECK_REPAIR_ALL, &r));
        ASSERT_EQ(0, r.leaks_fixed);
        ASSERT_MEM_EQ(before, d.buf, d.len);
        /* without the unknown structure the same leak is repaired */
        d.buf[cases[i].at] = 0;
        ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_LEAKS, &r));
        ASSERT_EQ(1, r.leaks_fixed);
        free(before);
        qh_disk_free(&d);
    }
    PASS();
}

TEST compressed_clusters_in_snapshots(void)
{
    qh_disk d;
    qh_handle h;
    q2w_snapshot sn;
    unsigned char *m = (unsigned char *)malloc(1u << 20);
    unsigned char *s1 = (unsigned char *)malloc(1u << 20);
    unsigned char *got = (unsigned char *)malloc(1u << 20);
    unsigned char b[3000];
    ASSERT(m && s1 && got);
    load_fixture(&d, "v3-4k-compressed-snapshot");
    qh_assert_consistent(&d, 1, "as qemu made it");
    compressed_model(m, 1);
    compressed_model(s1, 0);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    /* reads inflate: the whole disk, and pieces inside one cluster */
    qh_assert_view(&h, &d, m, 0, 1u << 20, "active view");
    qh_assert_view(&h, &d, m, 19999, 7, "inside a cluster");
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "s1", &sn)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, got,
                                                           1u << 20)));
    ASSERT_MEM_EQ(s1, got, 1u << 20);
    /* a snapshot of compressed clusters, then writes over them: a partial
     * cluster (the rest inflated), a whole one, zeroes and a discard */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d,
                             q2w_snapshot_create(&h.img, "s2", 1, 2, 3)));
    memset(b, 0x99, sizeof b);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 8192 + 100, b, 50)));
    memset(m + 8192 + 100, 0x99, 50);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 12288, b, 3000)));
    memset(m + 12288, 0x99, 3000);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_zeroes(&h.img, 16384, 4096)));
    memset(m + 16384, 0, 4096);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_discard(&h.img, 24576, 8192)));
    memset(m + 24576, 0, 8192);
    qh_assert_view(&h, &d, m, 0, 1u << 20, "after writes");
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_flush(&h.img)));
    qh_assert_consistent(&d, 0, "after writes over compressed clusters");
    /* s2 still has the compressed view; deleting both snapshots leaves
     * the image exact (every descriptor's path to cluster 5 dropped) */
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_find(&h.img, "s2", &sn)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read_snapshot(&h.img, &sn, 0, got,
                                                           1u << 20)));
    compressed_model(s1, 1);
    ASSERT_MEM_EQ(s1, got, 1u << 20);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "s1")));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "s2")));
    qh_assert_view(&h, &d, m, 0, 1u << 20, "after the deletes");
    close_exact(&h, &d, "compressed snapshots deleted");
    qh_disk_free(&d);
    free(m);
    free(s1);
    free(got);
    PASS();
}

/* Snapshot delete decides every refusal before its header switch: a bad
 * entry in the snapshot's own L2 table, or in the active one (walked for
 * COPIED after the switch), refuses the delete with the image unchanged. */
TEST snapshot_delete_refuses_before_switching(void)
{
    size_t i;
    for (i = 0; i < 2; i++) {
        qh_disk d;
        qh_handle h;
        unsigned char *before;
        uint64_t l2;
        load_fixture(&d, "v3-4k-compressed-snapshot");
        /* s1's own L2 table (qemu copied the shared one for the active
         * L1 when it wrote after the snapshot), or the active one */
        l2 = rd64(&d, i == 0 ? rd64(&d, rd64(&d, 64)) : rd64(&d, 40)) &
             0x00fffffffffffe00ull;
        ASSERT(l2 != 0);
        /* a standard entry with a reserved bit set */
        q2w__put64(d.buf + l2 + 3 * 8, 0x9000ull | (1ull << 3));
        before = (unsigned char *)malloc(d.len);
        ASSERT(before != NULL);
        memcpy(before, d.buf, d.len);
        ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
        ASSERT_EQ(Q2W_ERR_METADATA,
                  qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "s1")));
        ASSERT_STR_EQ("l2 entry reserved bits", q2w_error(&h.img)->what);
        qh_close_handle(&h);
        /* only the autoclear bits may have been cleared */
        before[88 + 7] = d.buf[88 + 7];
        ASSERT_MEM_EQ(before, d.buf, d.len);
        ASSERT_EQ(1, rd32(&d, 60));
        free(before);
        qh_disk_free(&d);
    }
    PASS();
}

TEST dirty_lazy_image_repaired(void)
{
    qh_disk d;
    qh_handle h;
    q2w_check_result r;
    unsigned char *m = (unsigned char *)malloc(1u << 20);
    ASSERT(m != NULL);
    load_fixture(&d, "v3-4k-lazy-dirty");
    ASSERT_EQ(1, rd64(&d, 72) & 1);
    ASSERT_EQ(Q2W_ERR_DIRTY, open_rw(&h, &d, 4096, 1));
    qh_close_handle(&h);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(r.corruptions > 0);
    /* -r leaks is not enough: the counts are too low, not too high */
    ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_LEAKS, &r));
    ASSERT_EQ(0, r.dirty_cleared);
    ASSERT_EQ(1, rd64(&d, 72) & 1);
    ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_ALL, &r));
    ASSERT(r.corruptions_fixed > 0);
    ASSERT_EQ(r.corruptions, r.corruptions_fixed);
    ASSERT_EQ(1, r.dirty_cleared);
    ASSERT_EQ(0, rd64(&d, 72) & 1);
    qh_assert_consistent(&d, 1, "repaired");
    memset(m, 0, 1u << 20);
    memset(m, 0x51, 16384);
    memset(m + 262144, 0x52, 4096);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    qh_assert_view(&h, &d, m, 0, 1u << 20, "repaired image");
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 500000, m, 9000)));
    close_exact(&h, &d, "written after the repair");
    qh_disk_free(&d);
    free(m);
    PASS();
}

/* References with no refcount block at all (a crash before a new block
 * and its table entry were written): -r all makes the block, on the first
 * free cluster of its range, and enters it in the table after it. */
TEST repair_all_makes_missing_blocks(void)
{
    qh_disk d;
    qh_handle h;
    q2w_check_result r;
    unsigned char *m = (unsigned char *)calloc(1, 1u << 20);
    uint64_t rt, blk1;
    ASSERT(m != NULL);
    /* 512 B clusters, 16-bit refcounts: a block covers 256 clusters */
    make_image(&d, 512, 16, 3, 1u << 20);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 16, 64, 1, 0));
    memset(m, 0x3c, 200000);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, m, 200000)));
    close_exact(&h, &d, "written");
    rt = rd64(&d, 48);
    blk1 = rd64(&d, rt + 8);
    ASSERT(blk1 != 0);
    q2w__put64(d.buf + rt + 8, 0);
    ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
    ASSERT(r.corruptions > 0);
    ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_ALL, &r));
    ASSERT_EQ(r.corruptions, r.corruptions_fixed);
    /* the first free cluster of range 1 is where the lost block was */
    ASSERT_EQ(blk1, 256 * 512);
    ASSERT_EQ(blk1, rd64(&d, rt + 8));
    qh_assert_consistent(&d, 1, "block made");
    /* and when that cluster is taken, the next free one */
    q2w__put64(d.buf + rt + 8, 0);
    {
        /* virtual cluster 300 (L1 entry 4, L2 entry 44) moved onto it */
        uint64_t l2 = rd64(&d, rd64(&d, 40) + 4 * 8) & 0x00fffffffffffe00ull;
        q2w__put64(d.buf + l2 + 44 * 8, (256ull * 512) | (1ull << 63));
    }
    ASSERT_EQ(Q2W_OK, qh_check(&d, Q2W_CHECK_REPAIR_ALL, &r));
    ASSERT_EQ(r.corruptions, r.corruptions_fixed);
    ASSERT(rd64(&d, rt + 8) > blk1 && rd64(&d, rt + 8) < 512 * 512);
    qh_assert_consistent(&d, 1, "block made past a taken cluster");
    memcpy(m + 300 * 512, d.buf + blk1, 512);
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 512, 16, 64, 1, 0));
    qh_assert_view(&h, &d, m, 0, 1u << 20, "after the new block");
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 300000, m, 1000)));
    qh_close_handle(&h);
    qh_disk_free(&d);
    free(m);
    PASS();
}

TEST v2_snapshots_and_zstd(void)
{
    qh_disk d;
    qh_handle h;
    unsigned char *m = (unsigned char *)calloc(1, 1u << 20);
    unsigned char b[16];
    ASSERT(m != NULL);
    load_fixture(&d, "v2-4k-snapshots");
    ASSERT_EQ(2, rd32(&d, 4));
    qh_assert_consistent(&d, 1, "as qemu made it");
    memset(m, 0x61, 8192);
    memset(m + 4096, 0x62, 4096);
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "s1")));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d,
                             q2w_snapshot_create(&h.img, "s3", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, m + 100, 300)));
    memmove(m, m + 100, 300);
    qh_assert_view(&h, &d, m, 0, 1u << 20, "v2 after delete");
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "s2")));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "s3")));
    close_exact(&h, &d, "v2 snapshots deleted");
    qh_disk_free(&d);
    /* zstd: reading a compressed cluster is refused with its place (the
     * handle stays usable), snapshots still count its references */
    load_fixture(&d, "v3-4k-zstd");
    ASSERT_EQ(Q2W_OK, open_rw(&h, &d, 4096, 1));
    ASSERT_EQ(Q2W_ERR_UNSUPPORTED,
              qh_run(&h.img, &d, q2w_read(&h.img, 4096, b, 16)));
    ASSERT_EQ(1, q2w_error(&h.img)->index);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d,
                             q2w_snapshot_create(&h.img, "z", 0, 0, 0)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write(&h.img, 0, m, 4096)));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_snapshot_delete(&h.img, "z")));
    close_exact(&h, &d, "zstd image");
    qh_disk_free(&d);
    free(m);
    PASS();
}

SUITE(qemu_images)
{
    RUN_TEST(bitmaps_are_not_leaks);
    RUN_TEST(unknown_structures_stop_repairs);
    RUN_TEST(compressed_clusters_in_snapshots);
    RUN_TEST(snapshot_delete_refuses_before_switching);
    RUN_TEST(dirty_lazy_image_repaired);
    RUN_TEST(repair_all_makes_missing_blocks);
    RUN_TEST(v2_snapshots_and_zstd);
    RUN_TEST(resize_verifies_before_switching);
}

#include "test_qcow2w_jobs.h"

GREATEST_MAIN_DEFS();

int main(int argc, char **argv)
{
    ALK_TEST_MAIN_BEGIN();
    RUN_SUITE(create_and_open);
    RUN_SUITE(operations);
    RUN_SUITE(snapshots);
    RUN_SUITE(checker);
    RUN_SUITE(qemu_images);
    RUN_SUITE(commit_and_rebase);
    GREATEST_MAIN_END();
}

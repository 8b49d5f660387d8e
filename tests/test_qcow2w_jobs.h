/* test_qcow2w_jobs.h - commit, rebase and the backing-name change, on
 * in-memory disks (included by test_qcow2w.c). Each test keeps the views
 * it expects in flat models and judges the images by reading them back,
 * by their maps and by the checker. */

#define JB_SIZE (1u << 20)   /* the overlay's virtual size */
#define JB_CS 4096u

static void jb_random(unsigned char *p, size_t n, uint64_t seed)
{
    uint64_t rng = seed;
    size_t i;
    for (i = 0; i < n; i++) p[i] = (unsigned char)alksim_splitmix64(&rng);
}

/* A raw file of `len` drawn bytes with every fourth 64 KiB run zero. */
static void jb_raw(qh_disk *d, size_t len, uint64_t seed)
{
    size_t i;
    qh_disk_init(d, 8u << 20);
    qh_disk_reserve(d, len);
    jb_random(d->buf, len, seed);
    for (i = 0; i < len; i += 4 * 65536)
        memset(d->buf + i, 0, len - i < 65536 ? len - i : 65536);
    d->len = len;
    d->ops_cap = 64;
}

/* The overlay's own writes, the same in every test: data runs that cross
 * clusters, zeroed clusters (zero flags on v3) and a discard; model holds
 * the view (backing's bytes where nothing was written). */
static void jb_overlay_writes(qh_handle *h, qh_disk *d, unsigned char *model)
{
    static unsigned char data[3 * JB_CS + 100];
    jb_random(data, sizeof data, 77);
    ALK_CHECK(qh_run(&h->img, d, q2w_write(&h->img, 5000, data, sizeof data)) == Q2W_OK,
              "overlay write");
    memcpy(model + 5000, data, sizeof data);
    ALK_CHECK(qh_run(&h->img, d, q2w_write(&h->img, JB_SIZE - 300, data, 300)) == Q2W_OK,
              "overlay write at the end");
    memcpy(model + JB_SIZE - 300, data, 300);
    ALK_CHECK(qh_run(&h->img, d, q2w_write_zeroes(&h->img, 64 * JB_CS, 3 * JB_CS)) == Q2W_OK,
              "overlay zeroes");
    memset(model + 64 * JB_CS, 0, 3 * JB_CS);
    ALK_CHECK(qh_run(&h->img, d, q2w_write(&h->img, 200 * JB_CS, data, JB_CS)) == Q2W_OK,
              "overlay write");
    memcpy(model + 200 * JB_CS, data, JB_CS);
}

/* An overlay (v3, 4 KiB clusters) over the raw file `base` named "b". */
static void jb_make_overlay(qh_disk *top, qh_handle *h, qh_disk *base, int version)
{
    ALK_CHECK(qh_make(top, 8u << 20, version, JB_CS, 0, JB_SIZE, "b", "raw") == Q2W_OK,
              "create the overlay");
    top->backing = base->buf;
    top->backing_len = base->len;
    ALK_CHECK(qh_open(h, top, JB_CS, 16, 64, 1, 1) == Q2W_OK, "open the overlay");
}

/* Reopen d read-only against backing bytes: its view must be model. */
static void jb_assert_reopened_view(qh_disk *d, const unsigned char *backing,
                                    uint64_t backing_len, const unsigned char *model,
                                    const char *when)
{
    qh_handle h;
    d->backing = backing;
    d->backing_len = backing_len;
    ALK_CHECK(qh_open(&h, d, JB_CS, 16, 64, 0, backing != NULL) == Q2W_OK, "%s: reopen",
              when);
    qh_assert_view(&h, d, model, 0, JB_SIZE, when);
    qh_close_handle(&h);
}

TEST commit_into_a_raw_base(void)
{
    int keep;
    for (keep = 0; keep < 2; keep++) {
        qh_disk base, top;
        qh_handle h;
        q2w_job j;
        q2w_extent x;
        static unsigned char model[JB_SIZE], buf[8 * JB_CS];
        size_t base_len = JB_SIZE - 3 * JB_CS; /* shorter: grown by the commit */
        uint64_t done, total;
        jb_raw(&base, base_len, 5);
        memset(model, 0, sizeof model);
        memcpy(model, base.buf, base_len);
        jb_make_overlay(&top, &h, &base, 3);
        jb_overlay_writes(&h, &top, model);
        /* a snapshot of the overlay: its clusters stay, shared */
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_snapshot_create(&h.img, "s", 1, 0, 0)));
        ASSERT_EQ(Q2W_OK, qh_job_run(&j, &top, &base, 1,
                                     q2w_commit(&j, &h.img, Q2W_BACKING_RAW, NULL, base_len,
                                                keep ? Q2W_COMMIT_KEEP : 0, buf, sizeof buf)));
        q2w_job_progress(&j, &done, &total);
        ASSERT_EQ(JB_SIZE, total);
        ASSERT_EQ(JB_SIZE, done);
        /* the base now holds the overlay's view, grown to its size */
        ASSERT_EQ(JB_SIZE, base.len);
        ASSERT_MEM_EQ(model, base.buf, JB_SIZE);
        /* emptied: everything reads through (one extent); kept: as before */
        top.backing = base.buf;
        top.backing_len = base.len;
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_map(&h.img, 0, JB_SIZE, &x)));
        if (keep) {
            ASSERT_EQ(Q2W_EXTENT_BACKING, x.kind);
            ASSERT_EQ(5000 / JB_CS * JB_CS, x.len);
        } else {
            ASSERT_EQ(Q2W_EXTENT_BACKING, x.kind);
            ASSERT_EQ(JB_SIZE, x.len);
        }
        qh_assert_view(&h, &top, model, 0, JB_SIZE, "after the commit");
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_close(&h.img)));
        qh_close_handle(&h);
        qh_assert_consistent(&top, 1, "the committed overlay");
        jb_assert_reopened_view(&top, base.buf, base.len, model, "reopened");
        qh_disk_free(&top);
        qh_disk_free(&base);
    }
    PASS();
}

/* A qcow2 base with a snapshot of its own: the commit copies on write, so
 * the base's snapshot keeps its view, and the base stays consistent. */
TEST commit_into_a_qcow2_base_with_a_snapshot(void)
{
    qh_disk base, top;
    qh_handle hb, ht;
    q2w_job j;
    q2w_snapshot sn;
    static unsigned char model[JB_SIZE], before[JB_SIZE], got[JB_SIZE], buf[4 * JB_CS];
    jb_random(before, sizeof before, 9);
    ASSERT_EQ(Q2W_OK, qh_make(&base, 16u << 20, 3, JB_CS, 0, JB_SIZE, NULL, NULL));
    ASSERT_EQ(Q2W_OK, qh_open(&hb, &base, JB_CS, 16, 64, 1, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&hb.img, &base, q2w_write(&hb.img, 0, before, JB_SIZE)));
    ASSERT_EQ(Q2W_OK, qh_run(&hb.img, &base, q2w_snapshot_create(&hb.img, "base-s", 1, 0, 0)));
    memcpy(model, before, JB_SIZE);
    ASSERT_EQ(Q2W_OK, qh_make(&top, 8u << 20, 3, JB_CS, 0, JB_SIZE, "base.qcow2", "qcow2"));
    top.backing = before; /* the base's active view */
    top.backing_len = JB_SIZE;
    ASSERT_EQ(Q2W_OK, qh_open(&ht, &top, JB_CS, 16, 64, 1, 1));
    jb_overlay_writes(&ht, &top, model);
    ASSERT_EQ(Q2W_OK, qh_job_run(&j, &top, &base, 0,
                                 q2w_commit(&j, &ht.img, Q2W_BACKING_QCOW2, &hb.img, 0, 0,
                                            buf, sizeof buf)));
    qh_assert_view(&hb, &base, model, 0, JB_SIZE, "the base after the commit");
    ASSERT_EQ(Q2W_OK, qh_run(&hb.img, &base, q2w_snapshot_find(&hb.img, "base-s", &sn)));
    ASSERT_EQ(Q2W_OK,
              qh_run(&hb.img, &base, q2w_read_snapshot(&hb.img, &sn, 0, got, JB_SIZE)));
    ASSERT_MEM_EQ(before, got, JB_SIZE);
    ASSERT_EQ(Q2W_OK, qh_run(&hb.img, &base, q2w_close(&hb.img)));
    ASSERT_EQ(Q2W_OK, qh_run(&ht.img, &top, q2w_close(&ht.img)));
    qh_close_handle(&hb);
    qh_close_handle(&ht);
    qh_assert_consistent(&base, 1, "the base");
    qh_assert_consistent(&top, 1, "the emptied overlay");
    qh_disk_free(&base);
    qh_disk_free(&top);
    PASS();
}

/* Safe rebase onto another raw file (longer than the old one), then onto
 * nothing: the view never changes, clusters the two backing files agree
 * on stay unallocated, and the header names the new file. */
TEST rebase_keeps_the_view(void)
{
    int version;
    for (version = 2; version <= 3; version++) {
        qh_disk old_b, new_b, top;
        qh_handle h;
        q2w_job j;
        q2w_extent x;
        q2w_info info;
        static unsigned char model[JB_SIZE], buf[4 * JB_CS];
        size_t old_len = JB_SIZE / 2;
        jb_raw(&old_b, old_len, 11);
        jb_raw(&new_b, JB_SIZE + 4096, 11);          /* the same first bytes ... */
        new_b.buf[17 * JB_CS + 7] ^= 1;              /* ... but for three clusters */
        memset(new_b.buf + 20 * JB_CS, 0, JB_CS);
        new_b.buf[old_len + 3 * JB_CS] ^= 0x40;      /* and past the old end */
        memset(model, 0, sizeof model);
        memcpy(model, old_b.buf, old_len);
        jb_make_overlay(&top, &h, &old_b, version);
        jb_overlay_writes(&h, &top, model);
        ASSERT_EQ(Q2W_OK, qh_job_run(&j, &top, &new_b, 0,
                                     q2w_rebase(&j, &h.img, NULL, Q2W_BACKING_RAW, NULL, new_b.len,
                                                "new.raw", "raw", buf, sizeof buf)));
        q2w_info_get(&h.img, &info);
        ASSERT_STR_EQ("new.raw", info.backing_name);
        ASSERT_STR_EQ("raw", info.backing_format);
        top.backing = new_b.buf;
        top.backing_len = new_b.len;
        qh_assert_view(&h, &top, model, 0, JB_SIZE, "after the rebase");
        /* an agreed cluster is still the backing file's */
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_map(&h.img, 30 * JB_CS, JB_CS, &x)));
        ASSERT_EQ(Q2W_EXTENT_BACKING, x.kind);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_map(&h.img, 17 * JB_CS, JB_CS, &x)));
        ASSERT_EQ(Q2W_EXTENT_DATA, x.kind);
        /* then flatten: no backing file, the same view */
        ASSERT_EQ(Q2W_OK, qh_job_run(&j, &top, &new_b, 0,
                                     q2w_rebase(&j, &h.img, NULL, Q2W_BACKING_NONE, NULL, 0, NULL,
                                                NULL, buf, sizeof buf)));
        q2w_info_get(&h.img, &info);
        ASSERT_EQ(NULL, info.backing_name);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_close(&h.img)));
        qh_close_handle(&h);
        qh_assert_consistent(&top, 1, "the flattened overlay");
        jb_assert_reopened_view(&top, NULL, 0, model, "flattened, reopened");
        qh_disk_free(&top);
        qh_disk_free(&old_b);
        qh_disk_free(&new_b);
    }
    PASS();
}

/* Unsafe rebase: only the header changes - the other extensions kept,
 * the format extension added, replaced and taken out - and a name that
 * does not fit in cluster 0 refused with nothing written. */
TEST set_backing_rewrites_only_the_header(void)
{
    qh_disk top, base;
    qh_handle h;
    q2w_info info;
    static char name[JB_CS];
    uint64_t writes;
    jb_raw(&base, JB_SIZE, 3);
    jb_make_overlay(&top, &h, &base, 3);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_set_backing(&h.img, "other name", NULL, JB_SIZE)));
    q2w_info_get(&h.img, &info);
    ASSERT_STR_EQ("other name", info.backing_name);
    ASSERT_EQ(NULL, info.backing_format);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_set_backing(&h.img, "b2", "qcow2", JB_SIZE)));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_set_backing(&h.img, NULL, "raw", 0));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_set_backing(&h.img, "x", "sixteen-bytes-xx", 0));
    memset(name, 'n', sizeof name - 1);
    name[Q2W_MAX_BACKING_NAME] = 0;
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_close(&h.img)));
    qh_close_handle(&h);
    /* a 512-byte cluster 0 cannot hold a 1023-byte name */
    qh_disk_free(&top);
    ASSERT_EQ(Q2W_OK, qh_make(&top, 1u << 20, 3, 512, 0, JB_SIZE, "b", "raw"));
    top.backing = base.buf;
    top.backing_len = base.len;
    ASSERT_EQ(Q2W_OK, qh_open(&h, &top, 512, 16, 64, 1, 1));
    writes = top.writes;
    ASSERT_EQ(Q2W_ERR_LIMIT, qh_run(&h.img, &top, q2w_set_backing(&h.img, name, NULL, 0)));
    q2w_info_get(&h.img, &info);
    ASSERT_STR_EQ("b", info.backing_name);
    ASSERT_EQ(writes, top.writes);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_close(&h.img)));
    qh_close_handle(&h);
    {
        /* what is on disk still names "b" as raw */
        qh_handle r;
        ASSERT_EQ(Q2W_OK, qh_open(&r, &top, 512, 16, 64, 0, 1));
        q2w_info_get(&r.img, &info);
        ASSERT_STR_EQ("b", info.backing_name);
        ASSERT_STR_EQ("raw", info.backing_format);
        qh_close_handle(&r);
    }
    qh_assert_consistent(&top, 1, "after a refused name");
    qh_disk_free(&top);
    qh_disk_free(&base);
    PASS();
}

/* What a job refuses before it starts. */
TEST jobs_refuse_bad_arguments(void)
{
    qh_disk top, base;
    qh_handle h;
    q2w_job j;
    static unsigned char buf[4 * JB_CS];
    jb_raw(&base, JB_SIZE, 3);
    jb_make_overlay(&top, &h, &base, 3);
    ASSERT_EQ(Q2W_ERR_NOMEM, q2w_commit(&j, &h.img, Q2W_BACKING_RAW, NULL, JB_SIZE, 0, buf,
                                        2 * JB_CS - 1));
    ASSERT_EQ(2 * JB_CS, q2w_job_error(&j)->needed);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_commit(&j, &h.img, Q2W_BACKING_NONE, NULL, 0, 0, buf,
                                      sizeof buf));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_commit(&j, &h.img, Q2W_BACKING_QCOW2, NULL, 0, 0, buf,
                                      sizeof buf));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_rebase(&j, &h.img, NULL, Q2W_BACKING_RAW, NULL, 0, NULL, NULL, buf,
                                      sizeof buf));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_rebase(&j, &h.img, NULL, Q2W_BACKING_NONE, NULL, 0, "x", NULL, buf,
                                      sizeof buf));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_rebase(&j, &h.img, NULL, Q2W_BACKING_RAW, NULL, 0, "x", "", buf,
                                      sizeof buf));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_job_resume(&j, 0));
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &top, q2w_close(&h.img)));
    qh_close_handle(&h);
    qh_disk_free(&top);
    qh_disk_free(&base);
    PASS();
}

/* ---- the compressor ------------------------------------------------------ */
/* q2w_deflate: every length of a half-repetitive pattern round-trips
 * through the header's inflater (stored, fixed and dynamic blocks all
 * chosen somewhere on the way), repetitive data shrinks, a room too small
 * gives 0, and the arguments are checked. */
TEST deflate_round_trips(void)
{
    static unsigned char work[Q2W_DEFLATE_WORK], in[70000], z[71000], back[70000];
    size_t len, n;
    uint64_t rng = 7;
    for (len = 0; len < sizeof in; len++)
        in[len] = len % 3000 < 1500 ? (unsigned char)("qcow2w "[len % 7])
                                    : (unsigned char)alksim_splitmix64(&rng);
    for (len = 1; len < 1300; len += (len < 300 ? 1 : 37)) {
        n = q2w_deflate(in, len, z, sizeof z, work);
        ASSERT(n > 0 && n <= len + 6);
        memset(back, 0, len);
        ASSERT_EQ(0, q2w__inflate(z, n, back, len));
        ASSERT_MEM_EQ(in, back, len);
    }
    /* a cluster's worth: the text half shrinks the whole well */
    n = q2w_deflate(in, 65536, z, sizeof z, work);
    ASSERT(n > 0 && n < 65536 * 6 / 10);
    ASSERT_EQ(0, q2w__inflate(z, n, back, 65536));
    ASSERT_MEM_EQ(in, back, 65536);
    /* the same room less one byte: no stream */
    ASSERT_EQ(0, q2w_deflate(in, 65536, z, n - 1, work));
    /* 65536 random bytes: stored blocks, barely longer than the input */
    for (len = 0; len < 65536; len++) in[len] = (unsigned char)alksim_splitmix64(&rng);
    n = q2w_deflate(in, 65536, z, sizeof z, work);
    ASSERT(n >= 65536 && n <= 65536 + 5 * 5 + 1); /* a stored block a 16384 symbols */
    ASSERT_EQ(0, q2w__inflate(z, n, back, 65536));
    ASSERT_MEM_EQ(in, back, 65536);
    ASSERT_EQ(0, q2w_deflate(in, 65536, z, 65535, work)); /* qemu's cap: cluster - 1 */
    ASSERT_EQ(0, q2w_deflate(NULL, 1, z, sizeof z, work));
    ASSERT_EQ(0, q2w_deflate(in, 1, NULL, sizeof z, work));
    ASSERT_EQ(0, q2w_deflate(in, 1, z, sizeof z, NULL));
    ASSERT_EQ(0, q2w_deflate(in, 0, z, sizeof z, work));
    /* the codes by bit arithmetic are the tables' (RFC 1951 3.2.5) */
    for (len = 3; len <= 258; len++) {
        unsigned c = q2w__df_lcode((unsigned)len);
        ASSERT(q2w__inf_lbase[c] <= len && (c == 28 || len < q2w__inf_lbase[c + 1] || c == 27));
        ASSERT(len - q2w__inf_lbase[c] < (1u << q2w__inf_lext[c]) || (c == 28 && len == 258));
    }
    for (len = 1; len <= 32768; len++) {
        unsigned c = q2w__df_dcode((unsigned)len);
        ASSERT(q2w__inf_dbase[c] <= len && (c == 29 || len < q2w__inf_dbase[c + 1]));
    }
    PASS();
}

/* q2w_write_compressed: streams packed one after the other (one running
 * over into the next cluster), each host cluster counted once a stream,
 * read back through the inflater; a cluster that does not shrink stored
 * as it is; a target already allocated refused; the checker exact. */
TEST compressed_writes(void)
{
    static unsigned char work[Q2W_CZ_WORK(4096)], data[16][4096], got[4096];
    qh_disk d;
    qh_handle h;
    q2w_extent x;
    uint64_t rng = 3;
    unsigned k, i;
    for (k = 0; k < 16; k++)
        for (i = 0; i < 4096; i++)
            data[k][i] = k == 5 ? (unsigned char)alksim_splitmix64(&rng)   /* incompressible */
                                : (unsigned char)((unsigned)"compressible text "[(i + k) % 18] + i / 700);
    ASSERT_EQ(Q2W_OK, qh_make(&d, 8u << 20, 3, 4096, 0, 16 * 4096 - 1000, NULL, NULL));
    ASSERT_EQ(Q2W_OK, qh_open(&h, &d, 4096, 16, 64, 1, 0));
    for (k = 0; k < 16; k++) {
        size_t len = k == 15 ? 4096 - 1000 : 4096;   /* the disk's short last cluster */
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_write_compressed(&h.img, k * 4096u, data[k], len,
                                                                  work, sizeof work)));
    }
    for (k = 0; k < 16; k++) {
        size_t len = k == 15 ? 4096 - 1000 : 4096;
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_read(&h.img, k * 4096u, got, len)));
        ASSERT_MEM_EQ(data[k], got, len);
        ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_map(&h.img, k * 4096u, len, &x)));
        ASSERT_EQ(k == 5 ? Q2W_EXTENT_DATA : Q2W_EXTENT_COMPRESSED, x.kind);
    }
    /* refusals: not a whole cluster, over an allocated one, short work */
    ASSERT_EQ(Q2W_ERR_ARG, q2w_write_compressed(&h.img, 100, data[0], 4096, work, sizeof work));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_write_compressed(&h.img, 0, data[0], 4000, work, sizeof work));
    ASSERT_EQ(Q2W_ERR_UNSUPPORTED,
              qh_run(&h.img, &d, q2w_write_compressed(&h.img, 0, data[1], 4096, work, sizeof work)));
    ASSERT_EQ(Q2W_ERR_NOMEM, q2w_write_compressed(&h.img, 0, data[1], 4096, work, 1000));
    ASSERT_EQ(Q2W_CZ_WORK(4096), q2w_error(&h.img)->needed);
    ASSERT_EQ(Q2W_OK, qh_run(&h.img, &d, q2w_close(&h.img)));
    qh_close_handle(&h);
    qh_assert_consistent(&d, 1, "after compressed writes");
    {
        /* the streams share host clusters: fewer than one a cluster */
        q2w_check_result r;
        ASSERT_EQ(Q2W_OK, qh_check(&d, 0, &r));
        ASSERT_EQ(15, r.compressed_clusters);
        ASSERT(d.len < 16 * 4096u);
    }
    qh_disk_free(&d);
    PASS();
}

/* q2w_measure: the data counts in required and not in fully allocated;
 * required never exceeds it; the refusals name their field. (The figures
 * themselves are judged against qemu-img measure by make measure-qemu.) */
TEST measure_figures(void)
{
    q2w_create_opts o;
    q2w_error_info e;
    uint64_t req, full, req2, full2;
    o = qh_opts(3, 65536, 16, 1u << 30, NULL, NULL);
    ASSERT_EQ(Q2W_OK, q2w_measure(&o, 0, &req, &full, &e));
    ASSERT_EQ(Q2W_OK, q2w_measure(&o, 65536 * 10, &req2, &full2, &e));
    ASSERT_EQ(full, full2);
    ASSERT_EQ(req + 65536 * 10, req2);
    ASSERT(req < full && full > (1u << 30));
    ASSERT_EQ(Q2W_OK, q2w_measure(&o, 1u << 30, &req2, &full2, &e));
    ASSERT_EQ(full, req2);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_measure(&o, 100, &req, &full, &e));
    ASSERT_STR_EQ("data_bytes", e.what);
    o.cluster_size = 1000;
    ASSERT_EQ(Q2W_ERR_ARG, q2w_measure(&o, 0, &req, &full, &e));
    ASSERT_STR_EQ("cluster_size", e.what);
    o = qh_opts(2, 65536, 8, 1u << 20, NULL, NULL);
    ASSERT_EQ(Q2W_ERR_ARG, q2w_measure(&o, 0, &req, &full, &e));
    ASSERT_STR_EQ("refcount_bits", e.what);
    o = qh_opts(3, 512, 0, (uint64_t)1 << 45, NULL, NULL);   /* 32 TiB in 512 B clusters */
    ASSERT_EQ(Q2W_ERR_LIMIT, q2w_measure(&o, 0, &req, &full, &e));
    ASSERT_EQ(Q2W_ERR_ARG, q2w_measure(NULL, 0, &req, &full, &e));
    PASS();
}

SUITE(commit_and_rebase)
{
    RUN_TEST(commit_into_a_raw_base);
    RUN_TEST(commit_into_a_qcow2_base_with_a_snapshot);
    RUN_TEST(rebase_keeps_the_view);
    RUN_TEST(set_backing_rewrites_only_the_header);
    RUN_TEST(jobs_refuse_bad_arguments);
    RUN_TEST(deflate_round_trips);
    RUN_TEST(compressed_writes);
    RUN_TEST(measure_figures);
}

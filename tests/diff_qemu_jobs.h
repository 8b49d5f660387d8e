/* diff_qemu_jobs.h - diff_qemu's jobs mode (--jobs, included by diff_qemu.c):
 * commit, rebase and a write burst over snapshot-shared clusters, whole
 * processes against qemu-img, on snapshot-bearing fixtures.
 *
 * Each iteration draws from its seed a fixture and one operation. qemu's
 * tools build the fixture in A/ (a backing file - raw, or qcow2 with its
 * own snapshot, or qcow2 over a raw root: nested - and an overlay with
 * data, zeroed and discarded ranges, maybe an internal snapshot and writes
 * over what it shares; for a rebase a new backing file made from the old
 * one with some ranges rewritten and another length); B/ is a byte copy.
 * Then qemu-img does the operation in A/, the qcow2w tool (--qcow2w PATH)
 * in B/:
 *   commit, commit -d   qemu-img commit / qcow2w commit
 *   rebase, rebase -u   qemu-img rebase [-u] -b new.img -F FMT
 *   flatten             qemu-img rebase -b ""
 *   bench               a snapshot of the overlay, then a burst of writes
 *                       over the span it shares (qemu-io / qcow2w io)
 * Judged, for every file of the chain: qemu-img compare of A's and B's
 * (the active views, chains included), qemu-img check and qcow2w check of
 * B's qcow2 files clean, and every internal snapshot of A and B read back
 * (qemu-img convert -l snapshot.name=..) byte-equal. Fixture kinds: clean,
 * backing-snapshot, overlay-snapshot, shared-data, nested; cluster sizes
 * 512 B, 4 KiB, 64 KiB and 2 MiB; v2 and v3. */

enum { JOP_COMMIT, JOP_COMMIT_KEEP, JOP_REBASE, JOP_REBASE_UNSAFE, JOP_FLATTEN,
       JOP_BENCH, JOP_KINDS };
static const char *const jop_names[] = {"commit", "commit-d", "rebase", "rebase-u",
                                        "flatten", "bench"};
enum { JFIX_CLEAN, JFIX_BACKING_SNAP, JFIX_OVERLAY_SNAP, JFIX_SHARED, JFIX_NESTED,
       JFIX_KINDS };
static const char *const jfix_names[] = {"clean", "backing-snapshot", "overlay-snapshot",
                                         "shared-data", "nested"};

typedef struct jscen {
    int op, fix, version, base_qcow2, new_qcow2;
    uint32_t cluster, bcluster;
    uint64_t size, bsize, nsize;
} jscen;

/* iterations and failures per operation and per fixture kind */
static unsigned long jobs_count[JOP_KINDS][2], jfix_count[JFIX_KINDS][2];

static void jobs_draw(jscen *j, rng *r)
{
    static const uint32_t cs[] = {512, 4096, 65536, 2u << 20};
    memset(j, 0, sizeof *j);
    j->op = (int)rng_below(r, JOP_KINDS);
    j->fix = (int)rng_below(r, JFIX_KINDS);
    j->cluster = cs[rng_below(r, 4)];
    j->bcluster = cs[rng_below(r, 4)];
    j->version = rng_chance(r, 30) ? 2 : 3;
    j->base_qcow2 = j->fix == JFIX_BACKING_SNAP || j->fix == JFIX_NESTED || rng_chance(r, 50);
    j->new_qcow2 = rng_chance(r, 50);
    j->bsize = rng_range(r, 1, 24) * 512 * 1024;
    j->size = rng_chance(r, 25) ? j->bsize : rng_range(r, 1, 32) * 512 * 1024;
    j->nsize = rng_chance(r, 40) ? j->bsize : rng_range(r, 1, 32) * 512 * 1024;
    /* qemu cannot grow a v2 image with snapshots (no disk size in their
     * entries), so its commit into such a base refuses a longer overlay
     * (qcow2w grows it) */
    if (j->version == 2 && j->base_qcow2 && j->fix == JFIX_BACKING_SNAP && j->size > j->bsize &&
        (j->op == JOP_COMMIT || j->op == JOP_COMMIT_KEEP))
        j->size = j->bsize;
}

static void jobs_print(FILE *f, const jscen *j)
{
    fprintf(f, "  jobs: op=%s fixture=%s v%d cluster=%u size=%llu base=%s(%u, %llu)",
            jop_names[j->op], jfix_names[j->fix], j->version, j->cluster, (ull)j->size,
            j->base_qcow2 ? "qcow2" : "raw", j->bcluster, (ull)j->bsize);
    if (j->op == JOP_REBASE || j->op == JOP_REBASE_UNSAFE)
        fprintf(f, " new=%s(%llu)", j->new_qcow2 ? "qcow2" : "raw", (ull)j->nsize);
    fputc('\n', f);
}

/* n drawn writes (-P fills, some -z, discards when allowed) as -c words of
 * c, ranges 512-aligned inside size, at most 4 clusters and 1 MiB long. */
static void jobs_writes(cmd_t *c, rng *r, uint64_t size, uint32_t cluster, int n,
                        int zero_ok)
{
    int k;
    for (k = 0; k < n; k++) {
        uint64_t most = min64(4 * (uint64_t)cluster, 1 * MIB) / 512;
        uint64_t off = rng_below(r, size / 512) * 512;
        uint64_t len = rng_range(r, 1, min64(most, (size - off) / 512)) * 512;
        unsigned kind = (unsigned)rng_below(r, 10);
        if (zero_ok && kind == 0)
            cmd_words(c, "-c 'write -z %llu %llu'", (ull)off, (ull)len);
        else if (zero_ok && kind == 1)
            cmd_words(c, "-c 'discard %llu %llu'", (ull)off, (ull)len);
        else
            cmd_words(c, "-c 'write -P 0x%02x %llu %llu'", (unsigned)rng_range(r, 1, 255),
                      (ull)off, (ull)len);
    }
}

static int jobs_qemu_io(it_t *it, rng *r, const char *fmt, const char *file, uint64_t size,
                        uint32_t cluster, int n, int zero_ok)
{
    cmd_t c;
    cmd_new(&c, "qemu-io -f %s %s", fmt, file);
    jobs_writes(&c, r, size, cluster, n, zero_ok);
    return cmd_expect(it, &c, 0, "qemu-io (fixture)");
}

/* The fixture, in A/, by qemu's tools. */
static int jobs_fixture(it_t *it, const jscen *j, rng *r)
{
    cmd_t c;
    const char *bfmt = j->base_qcow2 ? "qcow2" : "raw";
    cmd_new(&c, "mkdir -p A B");
    if (cmd_expect(it, &c, 0, "mkdir")) return -1;
    if (j->fix == JFIX_NESTED) {
        cmd_new(&c, "qemu-img create -q -f raw A/root.raw %llu", (ull)j->bsize);
        if (cmd_expect(it, &c, 0, "qemu-img create root") ||
            jobs_qemu_io(it, r, "raw", "A/root.raw", j->bsize, j->bcluster, 6, 0))
            return -1;
    }
    if (j->base_qcow2) {
        cmd_new(&c, "qemu-img create -q -f qcow2 -o cluster_size=%u,compat=%s A/base.img %llu",
                j->bcluster, j->version == 2 ? "0.10" : "1.1", (ull)j->bsize);
        if (j->fix == JFIX_NESTED) cmd_words(&c, "-b root.raw -F raw");
    } else {
        cmd_new(&c, "qemu-img create -q -f raw A/base.img %llu", (ull)j->bsize);
    }
    if (cmd_expect(it, &c, 0, "qemu-img create base") ||
        jobs_qemu_io(it, r, bfmt, "A/base.img", j->bsize, j->bcluster, 8, j->base_qcow2))
        return -1;
    if (j->base_qcow2 && j->fix == JFIX_BACKING_SNAP) {
        cmd_new(&c, "qemu-img snapshot -c bs1 A/base.img");
        if (cmd_expect(it, &c, 0, "qemu-img snapshot base") ||
            jobs_qemu_io(it, r, bfmt, "A/base.img", j->bsize, j->bcluster, 4, 1))
            return -1;
    }
    cmd_new(&c, "qemu-img create -q -f qcow2 -o cluster_size=%u,compat=%s -b base.img -F %s "
                "A/top.qcow2 %llu",
            j->cluster, j->version == 2 ? "0.10" : "1.1", bfmt, (ull)j->size);
    if (cmd_expect(it, &c, 0, "qemu-img create overlay") ||
        jobs_qemu_io(it, r, "qcow2", "A/top.qcow2", j->size, j->cluster, 10, 1))
        return -1;
    if (j->fix == JFIX_OVERLAY_SNAP || j->fix == JFIX_SHARED) {
        cmd_new(&c, "qemu-img snapshot -c ts1 A/top.qcow2");
        if (cmd_expect(it, &c, 0, "qemu-img snapshot overlay")) return -1;
        if (j->fix == JFIX_SHARED &&
            jobs_qemu_io(it, r, "qcow2", "A/top.qcow2", j->size, j->cluster, 10, 1))
            return -1;
    }
    if (j->op == JOP_REBASE || j->op == JOP_REBASE_UNSAFE) {
        /* the new backing file: the old one's view, some ranges rewritten,
         * another length */
        cmd_new(&c, "qemu-img convert -f %s -O %s", bfmt, j->new_qcow2 ? "qcow2" : "raw");
        if (j->new_qcow2) cmd_words(&c, "-o cluster_size=%u", j->bcluster);
        cmd_words(&c, "A/base.img A/new.img");
        if (cmd_expect(it, &c, 0, "qemu-img convert (new backing)")) return -1;
        cmd_new(&c, "qemu-img resize -q -f %s", j->new_qcow2 ? "qcow2" : "raw");
        if (j->nsize < j->bsize) cmd_words(&c, "--shrink");
        cmd_words(&c, "A/new.img %llu", (ull)j->nsize);
        if (cmd_expect(it, &c, 0, "qemu-img resize (new backing)") ||
            jobs_qemu_io(it, r, j->new_qcow2 ? "qcow2" : "raw", "A/new.img", j->nsize,
                         j->bcluster, 4, j->new_qcow2))
            return -1;
    }
    cmd_new(&c, "cp -r -p A/. B");
    return cmd_expect(it, &c, 0, "copy A to B");
}

/* The operation on both sides: qemu's tools in A/, the qcow2w tool in B/. */
static int jobs_operate(it_t *it, const jscen *j, rng *r, const char *tool)
{
    cmd_t a, b;
    const char *nfmt = j->new_qcow2 ? "qcow2" : "raw";
    int i;
    switch (j->op) {
    case JOP_COMMIT:
    case JOP_COMMIT_KEEP:
    case JOP_REBASE:
    case JOP_REBASE_UNSAFE:
    case JOP_FLATTEN: {
        /* the same words after each tool's own (qemu-img's spellings) */
        const char *verb = j->op <= JOP_COMMIT_KEEP ? "commit" : "rebase";
        cmd_new(&a, "qemu-img %s -q -f qcow2", verb);
        cmd_new(&b, "%s %s -q", tool, verb);
        for (i = 0; i < 2; i++) {
            cmd_t *c = i ? &b : &a;
            if (j->op == JOP_COMMIT_KEEP) cmd_words(c, "-d");
            if (j->op == JOP_REBASE_UNSAFE) cmd_words(c, "-u");
            if (j->op == JOP_FLATTEN) cmd_words(c, "-b %s", "");
            if (j->op == JOP_REBASE || j->op == JOP_REBASE_UNSAFE)
                cmd_words(c, "-b new.img -F %s", nfmt);
        }
        break;
    }
    default: { /* JOP_BENCH: the same burst on both, after a snapshot */
        rng r2 = *r;
        cmd_new(&a, "qemu-img snapshot -c bench A/top.qcow2");
        cmd_new(&b, "%s snapshot create B/top.qcow2 bench", tool);
        if (cmd_expect(it, &a, 0, "qemu-img snapshot (bench)") ||
            cmd_expect(it, &b, 0, "qcow2w snapshot create (bench)"))
            return -1;
        cmd_new(&a, "qemu-io -f qcow2 A/top.qcow2");
        jobs_writes(&a, r, j->size, j->cluster, 24, 1);
        cmd_new(&b, "%s io B/top.qcow2 -q", tool);
        jobs_writes(&b, &r2, j->size, j->cluster, 24, 1);
        return cmd_expect(it, &a, 0, "qemu-io (bench)") ||
                       cmd_expect(it, &b, 0, "qcow2w io (bench)")
                   ? -1
                   : 0;
    }
    }
    cmd_words(&a, "A/top.qcow2");
    cmd_words(&b, "B/top.qcow2");
    if (cmd_expect(it, &a, 0, "qemu-img (the operation)")) return -1;
    return cmd_expect(it, &b, 0, "qcow2w (the operation)");
}

/* A's and B's internal snapshot `name` of `file` read back byte-equal. */
static int jobs_snapshot_equal(it_t *it, const char *file, const char *name)
{
    cmd_t c;
    char pa[PATHLEN], pb[PATHLEN], fa[PATHLEN], fb[PATHLEN];
    uint64_t na = 0, nb = 0;
    unsigned char *a, *b;
    int same;
    snprintf(fa, sizeof fa, "A/%s", file);
    snprintf(fb, sizeof fb, "B/%s", file);
    cmd_new(&c, "qemu-img convert -f qcow2 -l snapshot.name=%s -O raw %s A/snap.raw", name, fa);
    if (cmd_expect(it, &c, 0, "qemu-img convert A's snapshot")) return -1;
    cmd_new(&c, "qemu-img convert -f qcow2 -l snapshot.name=%s -O raw %s B/snap.raw", name, fb);
    if (cmd_expect(it, &c, 0, "qemu-img convert B's snapshot")) return -1;
    path_in(pa, it, "A/snap.raw");
    path_in(pb, it, "B/snap.raw");
    a = read_file(pa, &na);
    b = read_file(pb, &nb);
    same = a && b && na == nb && memcmp(a, b, (size_t)na) == 0;
    if (!same)
        failf(it, "snapshot %s of %s: A's and B's views differ (%llu and %llu bytes)", name,
              file, (ull)na, (ull)nb);
    free(a);
    free(b);
    unlink(pa);
    unlink(pb);
    return same ? 0 : -1;
}

/* Every file of the chain: views equal, B's qcow2 files clean for qemu-img
 * check and qcow2w check, every snapshot equal. */
static int jobs_judge(it_t *it, const jscen *j, const char *tool)
{
    struct {
        const char *name;
        int qcow2;
        const char *snap;
    } f[4];
    size_t n = 0, i;
    cmd_t c;
    int bad = 0;
    f[n].name = "top.qcow2";
    f[n].qcow2 = 1;
    f[n++].snap = j->fix == JFIX_OVERLAY_SNAP || j->fix == JFIX_SHARED ? "ts1" : NULL;
    f[n].name = "base.img";
    f[n].qcow2 = j->base_qcow2;
    f[n++].snap = j->fix == JFIX_BACKING_SNAP ? "bs1" : NULL;
    if (j->fix == JFIX_NESTED) {
        f[n].name = "root.raw";
        f[n].qcow2 = 0;
        f[n++].snap = NULL;
    }
    if (j->op == JOP_REBASE || j->op == JOP_REBASE_UNSAFE) {
        f[n].name = "new.img";
        f[n].qcow2 = j->new_qcow2;
        f[n++].snap = NULL;
    }
    for (i = 0; i < n; i++) {
        const char *fmt = f[i].qcow2 ? "qcow2" : "raw";
        cmd_new(&c, "qemu-img compare -f %s -F %s A/%s B/%s", fmt, fmt, f[i].name, f[i].name);
        bad |= cmd_expect(it, &c, 0, "qemu-img compare A B") != 0;
        if (!f[i].qcow2) continue;
        cmd_new(&c, "qemu-img check -q -f qcow2 B/%s", f[i].name);
        bad |= cmd_expect(it, &c, 0, "qemu-img check B") != 0;
        cmd_new(&c, "%s check B/%s", tool, f[i].name);
        bad |= cmd_expect(it, &c, 0, "qcow2w check B") != 0;
        if (f[i].snap) bad |= jobs_snapshot_equal(it, f[i].name, f[i].snap) != 0;
        if (i == 0 && j->op == JOP_BENCH) bad |= jobs_snapshot_equal(it, f[i].name, "bench") != 0;
    }
    return bad ? -1 : 0;
}

static int run_jobs(it_t *it, const char *tool)
{
    jscen j;
    rng r;
    r.s = it->sc->seed * 0x9e3779b97f4a7c15ull + 0x6a6f6273ull;
    jobs_draw(&j, &r);
    if (it->verbose > 1) jobs_print(stdout, &j);
    if (jobs_fixture(it, &j, &r) || jobs_operate(it, &j, &r, tool) || jobs_judge(it, &j, tool)) {
        jobs_print(stdout, &j);
        return 1;
    }
    return 0;
}

/* The kind of iteration a seed draws (for the per-kind counts). */
static void jobs_kinds(uint64_t seed, int *op, int *fix)
{
    jscen j;
    rng r;
    r.s = seed * 0x9e3779b97f4a7c15ull + 0x6a6f6273ull;
    jobs_draw(&j, &r);
    *op = j.op;
    *fix = j.fix;
}

/* diff_qemu.c - differential tests of qcow2w.h against qemu-img / qemu-io
 *
 *   build/diff_qemu [--iter N] [--seed S] [--only ours|qemu] [--keep DIR] [-v]
 *                   [--ops I,J,..] [--prep none|compressed|bitmaps|dirty-lazy]
 *
 * Each iteration i uses seed S+i to pick an image geometry (cluster size,
 * refcount width, v2/v3, virtual size), an optional backing file (raw or
 * qcow2, filled with pattern data) and 5..40 operations (pattern writes,
 * write_zeroes, discard, flush, grow), then runs one mode:
 *
 *   ours: qcow2w creates the image (and a qcow2 backing) and applies the
 *         ops; qemu-img check must pass and qemu-img convert must give the
 *         flat reference model byte for byte; q2w_check must be clean and a
 *         q2w_read of the whole disk must equal the model.
 *   qemu: qemu-img creates image A (and the backing), B is a byte copy;
 *         qemu-io applies the ops to A (one process per batch, qemu-img
 *         resize between batches), qcow2w applies them to B; then qemu-img
 *         compare A B, qemu-img check B, q2w_check B, qemu-img convert B ==
 *         model and q2w_read B == model; qcow2w also checks and reads
 *         qemu's A (q2w_check clean, q2w_read A == model). On a content
 *         difference A is converted too, to tell whether qemu or the model
 *         disagrees.
 * Snapshots: every other pair of seeds (bit 1 of the seed set) also carries
 * `snapshot create sN` / `snapshot delete sN` among its ops (names unique in
 * the iteration, at most 4 live), and with refcounts of 8 bits or wider
 * (no create refused) `snapshot apply sN`: the disk becomes the snapshot's
 * copy, its size too (qemu-img snapshot -a on A, q2w_snapshot_apply on B
 * or ours). The model keeps a copy of the virtual disk (and its size) per
 * live snapshot.
 *   ours: qcow2w creates/deletes them (q2w_snapshot_create/delete); then
 *         qemu-img snapshot -l lists exactly the live ones, qemu-img convert
 *         -l snapshot.name=sN equals each copy, and so does q2w_read_snapshot
 *         (the list through q2w_snapshot_get, each found by name).
 *   qemu: A gets qemu-img snapshot -c/-d between its qemu-io batches, B the
 *         same through qcow2w; both sides' snapshots (qemu-img convert of A
 *         and of B, q2w_read_snapshot of A and of B) must equal the copies,
 *         B's qemu-img snapshot -l the live set, the ids agree.
 *   A refusal to create (small refcount_bits: a cluster the snapshot would
 *   share already has the largest refcount) is accepted only when an
 *   independent walk of the image (active L1 -> L2 tables and data clusters
 *   -> their refcounts) finds a refcount that would overflow, and with 1-
 *   or 2-bit refcounts (q2w_flush, then the walk, before each create) a
 *   create must be refused exactly then. In the qemu mode A and B may then
 *   differ only where their allocations do (qemu keeps zeroed shared
 *   clusters allocated): -v notes it. qemu leaks the L1 copy when it
 *   refuses; `qemu-img check -r leaks` repairs A before it goes on. A
 *   refused name's later delete must fail with Q2W_ERR_NOT_FOUND on our
 *   side. qemu-img resize refuses a v2 image with snapshots, so the qemu
 *   mode does not grow one (the ours mode does: qcow2w allows it).
 * Start states (qemu mode only): a drawn `prep` makes A, before B is copied
 * from it, a qemu-made image of a kind qcow2w must not damage, so that every
 * later step of the iteration runs on it. A prep other than none writes 1..4
 * pattern ranges (drawn like the ops' ranges, fills 0x01..0xff, at most
 * 4 MiB each when qemu-io writes them); the model is the base content, then
 * these fills, then the ops (the snapshot copies come from the same model:
 * snapshots are taken after the prep). Kinds, drawn 40/20/20/20 %:
 *   none: qemu-img create, as without a prep; also whenever the drawn kind
 *     does not apply to the geometry.
 *   compressed (no backing file): A is `qemu-img convert -c -f raw -O qcow2
 *     -o cluster_size=..,compat=..[,refcount_bits=..]` of a raw file of the
 *     virtual size holding the fills and zeros (the non-zero clusters
 *     compressed). Right away q2w_check must find A clean and q2w_read of A
 *     must give the model; the ops then land partly over compressed
 *     clusters. The refcount oracle counts the host clusters of each
 *     compressed entry (one reference per entry), and on such an image
 *     every snapshot create, at any refcount width, is judged beforehand.
 *   bitmaps (v3, no backing file; not with snapshots at refcount_bits <= 2,
 *     where a refused snapshot sends A through `qemu-img check -r leaks`,
 *     which in qemu 7.2 empties the snapshot table of an image with
 *     persistent bitmaps): `qemu-img bitmap --add` bm0 (enabled), one
 *     qemu-io writing the fills (bm0 gets data clusters), in half of them an
 *     empty bm1 (-g 65536). A must then be clean for q2w_check (which walks
 *     the bitmap clusters while autoclear bit 0 is set) and q2w_read of A
 *     must give the model. A scratch copy P with autoclear bit 0 cleared
 *     (header byte 95) is counted twice: qemu-img check's "Leaked cluster"
 *     lines (as many as its summary says; exit status 3, or 0 without) and
 *     q2w_check's leaks must agree, with no corruption: K. At the end,
 *     before the usual judgments of B, q2w_check of B must find no
 *     corruption and K leaks if B's autoclear bit 0 is clear (qcow2w clears
 *     it with its first change), else none; Q2W_CHECK_REPAIR_LEAKS must then
 *     fix exactly those.
 *   dirty-lazy (v3): A is created with lazy_refcounts=on; one qemu-io writes
 *     the fills, flushes (data and L2 tables: a dirty lazy-refcount image
 *     keeps its refcounts in memory) and runs `abort` (it dies by SIGABRT,
 *     no core file), leaving the dirty bit (incompatible bit 0, header byte
 *     79: checked) and stale refcounts. qemu-img check of the dirty A (exit
 *     status 0, 2 or 3) prints "Image end offset: N"; q2w_check of a copy
 *     of it (dirty.qcow2, kept) must give the same image_end_offset. B is
 *     copied while dirty; A is repaired by qemu-img check -r all, B by
 *     q2w_check with Q2W_CHECK_REPAIR_ALL, which must clear the dirty bit
 *     (dirty_cleared, and header byte 79) and fix every corruption it
 *     counts. Then qemu-img check B and q2w_check of A and of B are clean,
 *     qemu-img compare A B finds them identical, and qemu-img convert of A
 *     and of B and q2w_read of B equal the model. The ops follow on both as
 *     usual (qemu-io keeps A's lazy refcounts; qcow2w opens B once clean).
 * The kind and its fills are drawn from the seed's generator after all the
 * other draws, so that a seed keeps the rest of its scenario.
 * -v prints one line per passing iteration (with its prep) and the time, and
 * at the end how many iterations had each prep; -vv also every command with
 * its exit status and duration, and the scenario.
 *
 * The mode is the seed's parity (even: ours, odd: qemu) unless --only is
 * given, so `--iter 1 --seed S` replays one iteration. --ops keeps only the
 * listed op indices (0-based) of the generated list: a minimising aid.
 * --prep makes every qemu-mode iteration's start state that kind where it
 * applies (else none), the rest of the scenario as drawn: another aid.
 * The model follows qemu's semantics (checked by the qemu mode):
 *   - discard changes whole clusters only (plus the partial cluster at the
 *     end of an unaligned disk when the range reaches the end); they read as
 *     zeros, except on a v2 image with a backing file, where qemu refuses to
 *     discard (it could not hide the backing data) and nothing changes;
 *   - grow: the new area reads as zeros even when the backing file is longer
 *     (qemu-img resize writes zeros over it; it refuses on v2, so the
 *     qemu mode grows a v2 overlay only when its backing is not longer).
 * Without qemu-img / qemu-io on PATH the program says SKIPPED and exits 0.
 */
#define _POSIX_C_SOURCE 200809L /* the harness's POSIX mirror: mkstemp, pread */
#include "qcow2w.h"
#include "alksim.h"
#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h" /* the model's discard and snapshots */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#if defined(__GNUC__) || defined(__clang__)
#define DQ_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DQ_PRINTF(a, b)
#endif

#define KIB 1024ull
#define MIB (1024ull * 1024ull)
#define MAX_OPS 40
#define MAX_BEXT 5
#define MAX_TOTAL_SIZE (96ull * MIB)
#define MAX_SNAPS 16                 /* snapshot names per iteration */
#define MAX_LIVE 4                   /* live snapshots at any time */
#define SNAP_MAX_TOTAL (32ull * MIB) /* virtual size cap with snapshots */
#define MAX_PREP 4                   /* pattern ranges of a start state */
#define PATHLEN 4096

typedef unsigned long long ull;

/* ---- PRNG (alksim's splitmix64: each seed's scenario as before) ------------ */
typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r)
{
    return alksim_splitmix64(&r->s);
}

static uint64_t rng_below(rng *r, uint64_t n)
{
    return n ? rng_next(r) % n : 0;
}

static uint64_t rng_range(rng *r, uint64_t lo, uint64_t hi)
{
    return hi <= lo ? lo : lo + rng_below(r, hi - lo + 1);
}

static int rng_chance(rng *r, unsigned pct)
{
    return rng_below(r, 100) < pct;
}

/* ---- scenario ---------------------------------------------------------------- */
enum { MODE_OURS = 0, MODE_QEMU = 1, MODE_JOBS = 2 };
enum { OP_WRITE, OP_ZERO, OP_DISCARD, OP_FLUSH, OP_GROW, OP_SNAP_CREATE,
       OP_SNAP_DELETE, OP_SNAP_APPLY, OP_AMEND };
enum { SN_NONE = 0, SN_LIVE, SN_REFUSED, SN_DELETED };
enum { BK_NONE = 0, BK_RAW = 1, BK_QCOW2 = 2 };
enum { PREP_NONE = 0, PREP_COMPRESSED, PREP_BITMAPS, PREP_LAZY, PREP_KINDS };

static const char *const op_names[] = {"write",           "write_zeroes",
                                       "discard",         "flush",
                                       "grow",            "snapshot create",
                                       "snapshot delete", "snapshot apply",
                                       "amend"};
static const char *const sn_state_names[] = {"never created", "live",
                                             "refused", "deleted"};
static const char *const mode_names[] = {"ours", "qemu", "jobs"};
static const char *const prep_names[] = {"none", "compressed", "bitmaps",
                                         "dirty-lazy"};

typedef struct op_t {
    int kind;
    uint64_t off, len; /* grow: off = new size; amend: off = the version */
    unsigned char fill;
    int reopen;        /* flush: ours also closes and reopens the image */
    int index;         /* index in the generated list */
    int snap;          /* snapshot ops: the name is s<snap> */
} op_t;

typedef struct ext_t {
    uint64_t off, len;
    unsigned char fill;
} ext_t;

typedef struct scen_t {
    uint64_t seed;
    int mode;
    uint32_t cluster, rbits;
    int version;
    uint64_t size;
    int backing;
    uint64_t bsize;
    uint32_t bcluster, brbits;
    int bversion;
    size_t nbext;
    ext_t bext[MAX_BEXT];
    size_t nops;
    op_t ops[MAX_OPS];
    size_t slots, ops_cap;
    int snaps;         /* snapshot ops among the ops */
    int nsnaps;        /* snapshot names used */
    int prep;          /* start state made by qemu (qemu mode): PREP_* */
    int bm1;           /* PREP_BITMAPS: also an empty bitmap bm1 */
    size_t nprep;
    ext_t pext[MAX_PREP]; /* the prep's pattern writes */
} scen_t;

static size_t count_ops(const scen_t *sc, int kind)
{
    size_t i, n = 0;
    for (i = 0; i < sc->nops; i++) n += sc->ops[i].kind == kind;
    return n;
}

static int is_snap_op(const op_t *op)
{
    return op->kind == OP_SNAP_CREATE || op->kind == OP_SNAP_DELETE ||
           op->kind == OP_SNAP_APPLY;
}

static void snap_name(char *out, size_t cap, int k)
{
    snprintf(out, cap, "s%d", k);
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

static uint64_t min64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* A range inside [0, size): mixes small, cluster-aligned, to-the-end and
 * large ranges; sector-aligned unless `bytes` (then half byte-granular). */
static void gen_range(rng *r, uint64_t cs, uint64_t size, int bytes,
                      uint64_t *off, uint64_t *len)
{
    uint64_t o = rng_below(r, size), l;
    switch (rng_below(r, 10)) {
    case 0: case 1: case 2: case 3:
        l = rng_range(r, 1, 4 * cs);
        break;
    case 4: case 5:
        o = o / cs * cs;
        l = rng_range(r, 1, 8) * cs;
        break;
    case 6:
        l = rng_range(r, 1, min64(size, 4 * MIB));
        o = size - l;
        break;
    case 7:
        l = rng_range(r, 1, 256 * KIB);
        break;
    case 8:
        o = o / cs * cs;
        l = size - o;
        break;
    default:
        l = rng_range(r, 1, 2 * MIB);
        break;
    }
    if (!bytes || rng_chance(r, 50)) {
        o &= ~511ull;
        l = round_up(l, 512);
    }
    if (l > size - o) l = size - o;
    if (l == 0) l = 1;
    *off = o;
    *len = l;
}

/* qemu-img resize must hide a longer backing file behind zeros and cannot
 * on v2 ("Failed to zero out new clusters"); only the ours mode, where qemu
 * only reads the result, grows such an image. */
static int qemu_cannot_grow(const scen_t *sc, uint64_t cur, size_t nlive)
{
    return sc->mode == MODE_QEMU && sc->version == 2 &&
           ((sc->backing && sc->bsize > cur) || nlive > 0);
}

static void gen_scenario(scen_t *sc, uint64_t seed, int mode, int force_prep)
{
    static const uint32_t clusters[] = {512, 1024, 4096, 65536};
    static const uint32_t bclusters[] = {512, 4096, 65536};
    static const uint64_t maxes[] = {1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB};
    rng r;
    uint64_t maxb, cur, cs, maxtotal;
    size_t i, n, nlive = 0;
    int bytes = mode == MODE_OURS, live[MAX_LIVE], created = 0;
    uint64_t snap_size[MAX_SNAPS];
    memset(sc, 0, sizeof *sc);
    r.s = seed ^ 0x5eed0fd1ffull;
    sc->seed = seed;
    sc->mode = mode;
    /* Not drawn from r: the scenarios without snapshots stay as they were. */
    sc->snaps = (int)((seed >> 1) & 1);
    maxtotal = sc->snaps ? SNAP_MAX_TOTAL : MAX_TOTAL_SIZE;
    if (rng_chance(&r, 4)) {
        sc->cluster = 2u << 20;
        maxb = 8 * MIB;
    } else {
        sc->cluster = clusters[rng_below(&r, 4)];
        maxb = maxes[rng_below(&r, 4)];
    }
    if (sc->snaps && maxb > 16 * MIB) maxb = 16 * MIB;
    cs = sc->cluster;
    sc->version = rng_chance(&r, 50) ? 3 : 2;
    sc->rbits = sc->version == 2 ? 16u : 1u << rng_below(&r, 7);
    sc->size = rng_range(&r, 1, maxb / 512) * 512;
    if (rng_chance(&r, 35)) sc->size = round_up(sc->size, cs);
    n = (size_t)rng_below(&r, 10);
    sc->backing = n < 4 ? BK_NONE : n < 7 ? BK_RAW : BK_QCOW2;
    if (sc->backing) {
        switch (rng_below(&r, 3)) {
        case 0: sc->bsize = rng_range(&r, 1, sc->size / 512) * 512; break;
        case 1: sc->bsize = sc->size; break;
        default: sc->bsize = sc->size + rng_range(&r, 1, 8192) * 512; break;
        }
        sc->bcluster = bclusters[rng_below(&r, 3)];
        sc->bversion = rng_chance(&r, 50) ? 3 : 2;
        sc->brbits = sc->bversion == 2 ? 16u : 1u << rng_below(&r, 7);
        sc->nbext = (size_t)rng_range(&r, 1, MAX_BEXT - 1);
        for (i = 0; i < sc->nbext; i++) {
            ext_t *e = &sc->bext[i];
            if (i == 0 && rng_chance(&r, 30)) {
                e->off = 0;
                e->len = sc->bsize;
            } else {
                gen_range(&r, sc->bcluster, sc->bsize, bytes, &e->off,
                          &e->len);
            }
            e->fill = (unsigned char)rng_range(&r, 1, 255);
        }
    }
    if (cs >= (2u << 20)) sc->slots = (size_t)rng_range(&r, 8, 10);
    else if (rng_chance(&r, 50)) sc->slots = (size_t)rng_range(&r, 8, 16);
    else sc->slots = (size_t)rng_range(&r, 16, 256);
    if ((uint64_t)sc->slots * cs > 16 * MIB)
        sc->slots = (size_t)(16 * MIB / cs) < 8 ? 8 : (size_t)(16 * MIB / cs);
    sc->ops_cap = rng_chance(&r, 30) ? (size_t)rng_range(&r, 8, 16)
                                     : (size_t)rng_range(&r, 17, 512);
    sc->nops = (size_t)rng_range(&r, 5, MAX_OPS);
    cur = sc->size;
    for (i = 0; i < sc->nops; i++) {
        op_t *op = &sc->ops[i];
        uint64_t k;
        op->index = (int)i;
        if (sc->snaps && rng_chance(&r, 16)) {
            if (nlive < MAX_LIVE && sc->nsnaps < MAX_SNAPS &&
                (nlive == 0 || rng_chance(&r, 60))) {
                op->kind = OP_SNAP_CREATE;
                op->snap = sc->nsnaps++;
                snap_size[op->snap] = cur;
                live[nlive++] = op->snap;
                created = 1;
                continue;
            }
            /* apply: the disk becomes the snapshot's, its size too (only
             * where no create can be refused: 8-bit refcounts or wider;
             * a compressed start state drops them below) */
            if (nlive && sc->rbits >= 8 && rng_chance(&r, 40)) {
                op->kind = OP_SNAP_APPLY;
                op->snap = live[rng_below(&r, nlive)];
                cur = snap_size[op->snap];
                continue;
            }
            if (nlive) {
                size_t j = (size_t)rng_below(&r, nlive);
                op->kind = OP_SNAP_DELETE;
                op->snap = live[j];
                live[j] = live[--nlive];
                continue;
            }
        }
        k = rng_below(&r, 100);
        if (k >= 92) {
            /* (qemu-img resize refuses a v2 image with snapshots) */
            int ok = cur < maxtotal && !qemu_cannot_grow(sc, cur, nlive);
            if (ok) {
                uint64_t lim = cs >= (2u << 20) ? 4 * MIB : 16 * MIB;
                op->kind = OP_GROW;
                op->off = cur + rng_range(&r, 1, lim / 512) * 512;
                if (rng_chance(&r, 30)) op->off = round_up(op->off, cs);
                cur = op->off;
                continue;
            }
            k = 0;
        }
        if (k >= 84) {
            op->kind = OP_FLUSH;
            op->reopen = rng_chance(&r, 40);
            continue;
        }
        op->kind = k < 45 ? OP_WRITE : k < 62 ? OP_ZERO : OP_DISCARD;
        gen_range(&r, cs, cur, bytes, &op->off, &op->len);
        if (op->kind == OP_WRITE) {
            op->fill = (unsigned char)rng_below(&r, 256);
            if (op->len > 4 * MIB) op->len = 4 * MIB;
        }
    }
    /* A snapshot iteration has at least one create: one op (not a grow,
     * which later ranges rely on) becomes one. */
    if (sc->snaps && !created) {
        i = (size_t)rng_below(&r, sc->nops);
        while (sc->ops[i].kind == OP_GROW) i = (i + 1) % sc->nops;
        memset(&sc->ops[i], 0, sizeof sc->ops[i]);
        sc->ops[i].kind = OP_SNAP_CREATE;
        sc->ops[i].index = (int)i;
        sc->ops[i].snap = sc->nsnaps++;
    }
    /* The start state: drawn last, and only in the qemu mode, so that every
     * other field of a seed's scenario stays as it was. */
    if (mode == MODE_QEMU) {
        n = (size_t)rng_below(&r, 10);
        sc->prep = n < 4 ? PREP_NONE : n < 6 ? PREP_COMPRESSED
                   : n < 8 ? PREP_BITMAPS : PREP_LAZY;
        if (force_prep >= 0) sc->prep = force_prep; /* --prep */
        if (sc->prep == PREP_COMPRESSED && sc->backing) sc->prep = PREP_NONE;
        if (sc->prep == PREP_BITMAPS && (sc->backing || sc->version != 3))
            sc->prep = PREP_NONE;
        /* qemu 7.2's `qemu-img check -r` (run on A after a refused
         * snapshot) drops the snapshot table of an image with persistent
         * bitmaps: no bitmaps where a snapshot may be refused. */
        if (sc->prep == PREP_BITMAPS && sc->snaps && sc->rbits <= 2)
            sc->prep = PREP_NONE;
        if (sc->prep == PREP_LAZY && sc->version != 3) sc->prep = PREP_NONE;
        /* compressed clusters share host clusters: a create may be
         * refused on either side, and an apply of it would differ */
        if (sc->prep == PREP_COMPRESSED)
            for (i = 0; i < sc->nops; i++)
                if (sc->ops[i].kind == OP_SNAP_APPLY) {
                    sc->ops[i].kind = OP_FLUSH;
                    sc->ops[i].reopen = 0;
                }
    }
    if (sc->prep) {
        sc->nprep = (size_t)rng_range(&r, 1, MAX_PREP);
        for (i = 0; i < sc->nprep; i++) {
            ext_t *e = &sc->pext[i];
            gen_range(&r, cs, sc->size, bytes, &e->off, &e->len);
            /* (qemu-io writes them in one buffer; a raw file takes any) */
            if (sc->prep != PREP_COMPRESSED && e->len > 4 * MIB)
                e->len = 4 * MIB;
            e->fill = (unsigned char)rng_range(&r, 1, 255);
        }
        if (sc->prep == PREP_BITMAPS) sc->bm1 = rng_chance(&r, 50);
    }
    /* Drawn after everything else (every other field of a seed's scenario
     * stays as it was): one scenario in four ends with an amend to the
     * other version - with 16-bit refcounts (the only width v2 has), not
     * over persistent bitmaps (qcow2w refuses them, as documented). */
    if (rng_chance(&r, 25) && sc->nops < MAX_OPS && sc->rbits == 16 &&
        sc->prep != PREP_BITMAPS) {
        op_t *op = &sc->ops[sc->nops];
        memset(op, 0, sizeof *op);
        op->kind = OP_AMEND;
        op->off = sc->version == 3 ? 2 : 3;
        op->index = (int)sc->nops++;
    }
}

/* Keep only the listed ops (--ops), then drop any op the current size no
 * longer admits (a dropped grow shrinks what follows). */
static void filter_ops(scen_t *sc, const char *keep)
{
    size_t i, n = 0, nlive = 0;
    uint64_t cur = sc->size;
    int kept[MAX_SNAPS];
    uint64_t snap_size[MAX_SNAPS];
    memset(kept, 0, sizeof kept);
    for (i = 0; i < sc->nops; i++) {
        op_t op = sc->ops[i];
        if (keep) {
            const char *p = keep;
            int found = 0;
            while (*p) {
                char *end;
                unsigned long v = strtoul(p, &end, 10);
                if (end == p) break;
                if (v == (unsigned long)op.index) found = 1;
                p = *end ? end + 1 : end;
            }
            if (!found) continue;
        }
        if (op.kind == OP_SNAP_CREATE) {
            kept[op.snap] = 1;
            snap_size[op.snap] = cur;
            nlive++;
        } else if (op.kind == OP_SNAP_APPLY) {
            if (kept[op.snap] != 1) continue; /* dropped or deleted */
            cur = snap_size[op.snap];
        } else if (op.kind == OP_SNAP_DELETE) {
            if (!kept[op.snap]) continue; /* its create was dropped */
            kept[op.snap] = 2;
            nlive--;
        } else if (op.kind == OP_GROW) {
            if (op.off <= cur) continue;
            if (qemu_cannot_grow(sc, cur, nlive)) continue;
            cur = op.off;
        } else if (op.kind != OP_FLUSH) {
            if (op.off >= cur) continue;
            if (op.len > cur - op.off) op.len = cur - op.off;
        }
        sc->ops[n++] = op;
    }
    sc->nops = n;
}

static void print_scenario(FILE *f, const scen_t *sc)
{
    size_t i;
    fprintf(f, "  image: v%d cluster=%u refcount_bits=%u size=%llu", sc->version,
            sc->cluster, sc->rbits, (ull)sc->size);
    if (sc->backing)
        fprintf(f, " backing=%s size=%llu (v%d cluster=%u refcount_bits=%u)",
                sc->backing == BK_RAW ? "raw" : "qcow2", (ull)sc->bsize,
                sc->bversion, sc->bcluster, sc->brbits);
    fprintf(f, " slots=%zu ops_cap=%zu%s\n", sc->slots, sc->ops_cap,
            sc->snaps ? " snapshots" : "");
    for (i = 0; i < sc->nbext; i++)
        fprintf(f, "  backing fill 0x%02x %llu +%llu\n", sc->bext[i].fill,
                (ull)sc->bext[i].off, (ull)sc->bext[i].len);
    if (sc->mode == MODE_QEMU)
        fprintf(f, "  prep: %s%s\n", prep_names[sc->prep],
                sc->bm1 ? " (bm0, bm1)" : sc->prep == PREP_BITMAPS ? " (bm0)"
                                                                   : "");
    for (i = 0; i < sc->nprep; i++)
        fprintf(f, "  prep fill 0x%02x %llu +%llu\n", sc->pext[i].fill,
                (ull)sc->pext[i].off, (ull)sc->pext[i].len);
    for (i = 0; i < sc->nops; i++) {
        const op_t *op = &sc->ops[i];
        fprintf(f, "  op #%d %s", op->index, op_names[op->kind]);
        if (op->kind == OP_GROW) fprintf(f, " to %llu", (ull)op->off);
        else if (op->kind == OP_AMEND) fprintf(f, " to v%llu", (ull)op->off);
        else if (is_snap_op(op)) fprintf(f, " s%d", op->snap);
        else if (op->kind == OP_FLUSH)
            fprintf(f, "%s", op->reopen ? " (+ reopen)" : "");
        else
            fprintf(f, " %llu +%llu", (ull)op->off, (ull)op->len);
        if (op->kind == OP_WRITE) fprintf(f, " fill 0x%02x", op->fill);
        fputc('\n', f);
    }
}

/* ---- reference model ------------------------------------------------------- */
typedef struct model_t {
    unsigned char *d;
    uint64_t size;
} model_t;

/* The model's capacity: the largest size a grow reaches. */
static uint64_t model_cap(const scen_t *sc)
{
    uint64_t cap = sc->size;
    size_t i;
    for (i = 0; i < sc->nops; i++)
        if (sc->ops[i].kind == OP_GROW && sc->ops[i].off > cap)
            cap = sc->ops[i].off;
    return cap;
}

static int model_init(model_t *m, const scen_t *sc, const unsigned char *base)
{
    uint64_t cap = model_cap(sc);
    size_t i;
    /* Allocated once at the final size: the bytes past the current size
     * stay zero (no op reaches them), so a grow only moves the size. */
    m->size = sc->size;
    m->d = (unsigned char *)calloc(1, (size_t)cap);
    if (!m->d) return -1;
    if (sc->backing) memcpy(m->d, base, (size_t)min64(sc->size, sc->bsize));
    for (i = 0; i < sc->nprep; i++) /* the start state, before every op */
        memset(m->d + sc->pext[i].off, sc->pext[i].fill,
               (size_t)sc->pext[i].len);
    return 0;
}

static int model_apply(model_t *m, const scen_t *sc, const op_t *op)
{
    switch (op->kind) {
    case OP_WRITE:
        memset(m->d + op->off, op->fill, (size_t)op->len);
        break;
    case OP_ZERO:
        memset(m->d + op->off, 0, (size_t)op->len);
        break;
    case OP_DISCARD:
        qh_model_discard(m->d, m->size, sc->cluster, sc->version,
                         sc->backing != BK_NONE, op->off, op->len, NULL);
        break;
    case OP_GROW:
        m->size = op->off;
        break;
    default:
        break;
    }
    return 0;
}

/* Snapshots: qcow2w's side (B, or the ours mode's image) as the shared
 * model (testkit/qcow2_harness.h) has them - each create's copy of the disk,
 * its state, the position of its create in sc->ops as the tag - and `run`,
 * the model as the ops go (the copies come from it). qemu's A keeps its
 * own states (astate, by name number): its creates may be refused where
 * B's are not, and the other way round. */
typedef struct snapm_t {
    model_t run;
    qh_snaps snaps;
    const int *astate; /* qemu mode: A's states, to keep what A needs */
} snapm_t;

static void snapm_free(snapm_t *sm)
{
    qh_snaps_free(&sm->snaps);
    free(sm->run.d);
    sm->run.d = NULL;
}

/* The model of snapshot e. */
static model_t snap_view(const qh_snap *e)
{
    model_t v;
    v.d = e->model;
    v.size = e->size;
    return v;
}

/* The shared model's state of A's snapshot e (named s<k>). */
static int a_state(const int *astate, const qh_snap *e)
{
    int k = atoi(e->name + 1);
    return astate[k] == SN_LIVE      ? QH_SNAP_LIVE
           : astate[k] == SN_DELETED ? QH_SNAP_GONE
                                     : QH_SNAP_REFUSED;
}

/* ---- iteration context, failure reporting ---------------------------------- */
typedef struct it_t {
    const scen_t *sc;
    char dir[PATHLEN];
    int failed;
    int verbose;
    size_t blame_end; /* the content compared was made by ops[0, blame_end) */
    int amend_refused; /* qcow2w refused the scenario's amend */
    int amend_qemu_rc; /* qemu-img amend's exit status on A */
} it_t;

static DQ_PRINTF(2, 3) void failf(it_t *it, const char *fmt, ...)
{
    va_list ap;
    printf("FAIL seed=%llu mode=%s ", (ull)it->sc->seed,
           mode_names[it->sc->mode]);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    it->failed = 1;
}

/* out = a/b (PATHLEN bytes); a path too long is a fatal setup error. */
static void join_path(char *out, const char *a, const char *b)
{
    int k = snprintf(out, PATHLEN, "%s/%s", a, b);
    if (k < 0 || k >= PATHLEN) {
        fprintf(stderr, "diff_qemu: path too long: %s/%s\n", a, b);
        exit(2);
    }
}

static void path_in(char *out, const it_t *it, const char *name)
{
    join_path(out, it->dir, name);
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void vtime(const it_t *it, const char *label, double t0)
{
    if (it->verbose > 1)
        printf("  [%s: %.0f ms]\n", label, (now_sec() - t0) * 1000.0);
}

/* The disk becomes `from`'s (a snapshot's copy, of from->size bytes):
 * the bytes past that size zero, as the model keeps them. */
static void model_revert(model_t *m, const unsigned char *from, uint64_t size,
                         uint64_t cap)
{
    memcpy(m->d, from, (size_t)size);
    memset(m->d + size, 0, (size_t)(cap - size));
    m->size = size;
}

/* The model after every op (an apply takes the copy its create made:
 * applies are drawn only where no create is refused). */
static int model_build(const it_t *it, model_t *m, const unsigned char *base)
{
    double t0 = now_sec();
    model_t copy[MAX_SNAPS];
    size_t i;
    uint64_t cap = model_cap(it->sc);
    memset(copy, 0, sizeof copy);
    if (model_init(m, it->sc, base)) return -1;
    for (i = 0; i < it->sc->nops; i++) {
        const op_t *op = &it->sc->ops[i];
        if (op->kind == OP_SNAP_CREATE) {
            copy[op->snap].size = m->size;
            copy[op->snap].d = (unsigned char *)malloc((size_t)m->size + 1);
            if (!copy[op->snap].d) abort();
            memcpy(copy[op->snap].d, m->d, (size_t)m->size);
        } else if (op->kind == OP_SNAP_APPLY) {
            if (!copy[op->snap].d) abort();
            model_revert(m, copy[op->snap].d, copy[op->snap].size, cap);
        } else if (model_apply(m, it->sc, op)) {
            return -1;
        }
    }
    for (i = 0; i < MAX_SNAPS; i++) free(copy[i].d);
    vtime(it, "model", t0);
    return 0;
}

/* ---- running qemu tools ----------------------------------------------------- */
typedef struct cmd_t {
    int n;
    char *v[128];
    char pool[16384];
    size_t used;
} cmd_t;

static void cmd_init(cmd_t *c)
{
    c->n = 0;
    c->used = 0;
    c->v[0] = NULL;
}

/* Appends the words of fmt to c's argv, each formatted on its own: fmt is
 * split at spaces, except inside '...' (the quotes go, so "-c 'write -P
 * 0x%02x %llu %llu'" is two arguments), and only then are the conversions
 * done - a %s value is one argument's text whatever it holds (a path with
 * a space stays one argument). Conversions: %s, %d, %u, %x (flags 0 - + #,
 * a width, the ll modifier), %%. */
static void cmd_vwords(cmd_t *c, const char *fmt, va_list *ap)
{
    const char *p = fmt;
    for (;;) {
        char *out = c->pool + c->used;
        size_t room = sizeof c->pool - c->used, k = 0;
        int quoted = 0;
        while (*p == ' ') p++;
        if (!*p) break;
        if (c->n >= (int)(sizeof c->v / sizeof c->v[0]) - 1 || !room) abort();
        while (*p && (quoted || *p != ' ')) {
            char spec[16], *at;
            size_t sl = 0, left;
            int ll = 0, w;
            if (*p == '\'') {
                quoted = !quoted;
                p++;
                continue;
            }
            if (*p != '%' || p[1] == '%') {
                if (k + 1 >= room) abort();
                out[k++] = *p;
                p += *p == '%' ? 2 : 1;
                continue;
            }
            spec[sl++] = *p++;
            while (*p && strchr("-+#0123456789", *p) && sl < 10)
                spec[sl++] = *p++;
            if (p[0] == 'l' && p[1] == 'l') {
                ll = 1;
                spec[sl++] = *p++;
                spec[sl++] = *p++;
            }
            spec[sl++] = *p;
            spec[sl] = '\0';
            at = out + k;
            left = room - k;
            switch (*p++) {
            case 's':
                w = snprintf(at, left, spec, va_arg(*ap, const char *));
                break;
            case 'd':
                w = ll ? snprintf(at, left, spec, va_arg(*ap, long long))
                       : snprintf(at, left, spec, va_arg(*ap, int));
                break;
            case 'u':
            case 'x':
                w = ll ? snprintf(at, left, spec, va_arg(*ap, ull))
                       : snprintf(at, left, spec, va_arg(*ap, unsigned));
                break;
            default:
                abort(); /* a conversion this splitter does not know */
            }
            if (w < 0 || (size_t)w >= room - k) abort();
            k += (size_t)w;
        }
        if (quoted) abort(); /* an unclosed quote */
        out[k] = '\0';
        c->v[c->n++] = out;
        c->v[c->n] = NULL;
        c->used += k + 1;
    }
}

/* A new command from the words of fmt (cmd_vwords):
 *   cmd_new(&c, "qemu-img check -f qcow2 %s", name); */
static DQ_PRINTF(2, 3) void cmd_new(cmd_t *c, const char *fmt, ...)
{
    va_list ap;
    cmd_init(c);
    va_start(ap, fmt);
    cmd_vwords(c, fmt, &ap);
    va_end(ap);
}

/* More words for the command (cmd_vwords). */
static DQ_PRINTF(2, 3) void cmd_words(cmd_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cmd_vwords(c, fmt, &ap);
    va_end(ap);
}

static void cmd_print(FILE *f, const cmd_t *c)
{
    int i;
    for (i = 0; i < c->n; i++) {
        const char *a = c->v[i];
        if (strpbrk(a, " '\"\\$*?;&|<>()") || !*a)
            fprintf(f, "%s'%s'", i ? " " : "", a);
        else
            fprintf(f, "%s%s", i ? " " : "", a);
    }
    fputc('\n', f);
}

static void show_log(it_t *it)
{
    char p[PATHLEN], buf[4096];
    FILE *f;
    size_t n, total = 0;
    path_in(p, it, "cmd.log");
    f = fopen(p, "r");
    if (!f) return;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0 && total < 16384) {
        fwrite(buf, 1, n, stdout);
        total += n;
    }
    fclose(f);
    fflush(stdout);
}

/* Runs argv with cwd = the iteration directory, stdout/stderr to cmd.log.
 * Returns the exit status, 128+signal, or -1 when it could not start. */
static int cmd_run(it_t *it, const cmd_t *c)
{
    posix_spawn_file_actions_t fa;
    char logp[PATHLEN], cwd[PATHLEN];
    pid_t pid;
    int st = 0, rc;
    path_in(logp, it, "cmd.log");
    if (!getcwd(cwd, sizeof cwd)) return -1;
    if (chdir(it->dir) != 0) return -1;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, logp, O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    rc = posix_spawnp(&pid, c->v[0], &fa, NULL, c->v, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (chdir(cwd) != 0) return -1;
    if (rc != 0) return -1;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return -1;
}

/* cmd_run, and with -vv the command, its exit status and duration. */
static int cmd_status(it_t *it, const cmd_t *c)
{
    double t = now_sec();
    int rc = cmd_run(it, c);
    if (it->verbose > 1) {
        printf("  [rc=%d %.0f ms] ", rc, (now_sec() - t) * 1000.0);
        cmd_print(stdout, c);
    }
    return rc;
}

/* Reports an unexpected exit status of c (as cmd_expect does). */
static void cmd_failed(it_t *it, const cmd_t *c, int rc, const char *what,
                       const char *want)
{
    failf(it, "%s: exit status %d (want %s); in %s:", what, rc, want, it->dir);
    printf("  $ ");
    cmd_print(stdout, c);
    show_log(it);
}

/* Runs and requires exit status `want`; otherwise reports `what`, the
 * command (run in the iteration directory) and its output. */
static int cmd_expect(it_t *it, const cmd_t *c, int want, const char *what)
{
    int rc = cmd_status(it, c);
    char w[16];
    if (rc == want) return 0;
    snprintf(w, sizeof w, "%d", want);
    cmd_failed(it, c, rc, what, w);
    return -1;
}

/* The last command's output (cmd.log): how many times `needle` occurs
 * (anywhere: qemu's stderr lines do not always start a line), and the
 * number right after its last occurrence (*after) and at the start of the
 * last line holding it (*lead); -1 when there is none. */
static long log_count(const it_t *it, const char *needle, long long *after,
                      long long *lead)
{
    char p[PATHLEN], line[1024];
    size_t n = strlen(needle);
    long count = 0;
    FILE *f;
    if (after) *after = -1;
    if (lead) *lead = -1;
    path_in(p, it, "cmd.log");
    f = fopen(p, "r");
    if (!f) return -1;
    while (fgets(line, sizeof line, f)) {
        const char *q = line;
        int hit = 0;
        while ((q = strstr(q, needle)) != NULL) {
            count++;
            hit = 1;
            q += n;
            if (after) *after = strtoll(q, NULL, 10);
        }
        if (hit && lead) *lead = strtoll(line, NULL, 10);
    }
    fclose(f);
    return count;
}

/* ---- files ------------------------------------------------------------------ */
static int write_file(const char *p, const void *buf, size_t len)
{
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const unsigned char *s = (const unsigned char *)buf;
    if (fd < 0) return -1;
    while (len) {
        ssize_t k = write(fd, s, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { close(fd); return -1; }
        s += k;
        len -= (size_t)k;
    }
    return close(fd);
}

/* Reads a whole file; *len gets its size. */
static unsigned char *read_file(const char *p, uint64_t *len)
{
    int fd = open(p, O_RDONLY);
    struct stat st;
    unsigned char *buf;
    size_t got = 0;
    if (fd < 0) return NULL;
    if (fstat(fd, &st) != 0) { close(fd); return NULL; }
    *len = (uint64_t)st.st_size;
    buf = (unsigned char *)malloc(*len ? (size_t)*len : 1);
    while (buf && got < *len) {
        ssize_t k = read(fd, buf + got, (size_t)*len - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) { free(buf); buf = NULL; break; }
        got += (size_t)k;
    }
    close(fd);
    return buf;
}

static int copy_file(const char *from, const char *to)
{
    uint64_t n;
    unsigned char *b = read_file(from, &n);
    int rc;
    if (!b) return -1;
    rc = write_file(to, b, (size_t)n);
    free(b);
    return rc;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char p[PATHLEN];
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        join_path(p, dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Which op among ops[0, end) last changed byte `at` of the model (for the
 * failure report). */
static void blame(const scen_t *sc, size_t end, uint64_t at)
{
    size_t i = end < sc->nops ? end : sc->nops;
    while (i--) {
        const op_t *op = &sc->ops[i];
        if (op->kind == OP_SNAP_APPLY) {
            printf("  last op on that byte: #%d snapshot apply s%d\n",
                   op->index, op->snap);
            return;
        }
        if (op->kind == OP_FLUSH || op->kind == OP_AMEND || is_snap_op(op)) continue;
        if (op->kind == OP_GROW) {
            /* a grow matters only if `at` was past the previous size */
            uint64_t prev = sc->size;
            size_t j;
            for (j = 0; j < i; j++)
                if (sc->ops[j].kind == OP_GROW) prev = sc->ops[j].off;
            if (at >= prev && at < op->off) {
                printf("  last op on that byte: #%d grow %llu -> %llu\n",
                       op->index, (ull)prev, (ull)op->off);
                return;
            }
            continue;
        }
        if (at >= op->off && at - op->off < op->len) {
            printf("  last op on that byte: #%d %s %llu +%llu\n", op->index,
                   op_names[op->kind], (ull)op->off, (ull)op->len);
            return;
        }
    }
    i = sc->nprep;
    while (i--)
        if (at >= sc->pext[i].off && at - sc->pext[i].off < sc->pext[i].len) {
            printf("  no op touched that byte; last written by the prep "
                   "(%s): fill 0x%02x %llu +%llu\n",
                   prep_names[sc->prep], sc->pext[i].fill,
                   (ull)sc->pext[i].off, (ull)sc->pext[i].len);
            return;
        }
    printf("  no op touched that byte (initial content: %s)\n",
           sc->backing && at < sc->bsize ? "backing" : "zeros");
}

/* Differences between a content read back piece by piece and the model. */
typedef struct diff_t {
    uint64_t first, last, n, len;
    unsigned char got_first;
} diff_t;

static void diff_add(diff_t *d, const model_t *m, uint64_t off,
                     const unsigned char *got, size_t n)
{
    size_t i;
    if (off + n > d->len) d->len = off + n;
    if (off >= m->size) {
        d->n += n; /* past the model: reported as a size difference */
        return;
    }
    if (n > m->size - off) n = (size_t)(m->size - off);
    if (memcmp(got, m->d + off, n) == 0) return;
    for (i = 0; i < n; i++) {
        if (got[i] == m->d[off + i]) continue;
        if (!d->n++) {
            d->first = off + i;
            d->got_first = got[i];
        }
        d->last = off + i;
    }
}

/* Reports the differences collected in d (len = the size read back). */
static int diff_report(it_t *it, const model_t *m, const diff_t *d,
                       const char *what)
{
    if (d->len != m->size) {
        failf(it, "%s: size %llu, model %llu", what, (ull)d->len,
              (ull)m->size);
        return -1;
    }
    if (!d->n) return 0;
    failf(it,
          "%s: content differs from the model at %llu (got 0x%02x, model "
          "0x%02x); %llu bytes differ in [%llu, %llu]",
          what, (ull)d->first, d->got_first, m->d[d->first], (ull)d->n,
          (ull)d->first, (ull)d->last);
    blame(it->sc, it->blame_end, d->first);
    return -1;
}

/* Compares file `p` (a raw disk image) with the model, 1 MiB at a time.
 * prefix: the file may be longer; only its first m->size bytes count. */
static int compare_file(it_t *it, const model_t *m, const char *p,
                        const char *what, int prefix)
{
    diff_t d;
    unsigned char *buf = (unsigned char *)malloc(1 * MIB);
    uint64_t off = 0;
    int fd = open(p, O_RDONLY), rc;
    memset(&d, 0, sizeof d);
    if (fd < 0 || !buf) {
        failf(it, "%s: cannot open %s: %s", what, p, strerror(errno));
        if (fd >= 0) close(fd);
        free(buf);
        return -1;
    }
    for (;;) {
        size_t want = prefix ? (size_t)min64(1 * MIB, m->size - off) : 1 * MIB;
        ssize_t k = want ? pread(fd, buf, want, (off_t)off) : 0;
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            failf(it, "%s: read %s: %s", what, p, strerror(errno));
            close(fd);
            free(buf);
            return -1;
        }
        if (k == 0) break;
        diff_add(&d, m, off, buf, (size_t)k);
        off += (uint64_t)k;
    }
    d.len = off;
    close(fd);
    free(buf);
    rc = diff_report(it, m, &d, what);
    return rc;
}

/* ---- refcount oracle ------------------------------------------------------- */
/* An independent walk of a qcow2 file, for judging a snapshot create: a new
 * snapshot adds one reference to each cluster the active tables reference
 * (the L2 tables the active L1 points to, the data clusters of their
 * entries and, once per compressed entry, every host cluster its
 * compressed data touches, as qemu counts them), so it overflows when a
 * cluster's refcount plus the active references to it exceeds the largest
 * refcount. */
static uint64_t dq_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    int i;
    for (i = 0; i < n; i++) v = v << 8 | p[i];
    return v;
}

typedef struct orc_t {
    int fd;
    uint64_t cs;
    unsigned cb, order;
    unsigned char *rt, *blk;
    uint64_t rt_len, blk_off;
} orc_t;

static int orc_pread(int fd, uint64_t off, void *dst, size_t len)
{
    unsigned char *d = (unsigned char *)dst;
    while (len) {
        ssize_t k = pread(fd, d, len, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return -1;
        if (k == 0) { memset(d, 0, len); break; } /* past the end: zeros */
        d += k;
        off += (uint64_t)k;
        len -= (size_t)k;
    }
    return 0;
}

static int orc_refcount(orc_t *o, uint64_t off, uint64_t *v)
{
    uint64_t c = off >> o->cb, per = o->cs * 8 >> o->order;
    uint64_t ri = c / per, i = c % per, bo;
    *v = 0;
    if (ri >= o->rt_len / 8) return 0;
    bo = dq_be(o->rt + ri * 8, 8) & ~511ull;
    if (!bo) return 0;
    if (bo != o->blk_off) {
        if (orc_pread(o->fd, bo, o->blk, (size_t)o->cs)) return -1;
        o->blk_off = bo;
    }
    switch (o->order) {
    case 0: *v = (uint64_t)o->blk[i / 8] >> (i % 8) & 1u; break;
    case 1: *v = (uint64_t)o->blk[i / 4] >> (2 * (i % 4)) & 3u; break;
    case 2: *v = (uint64_t)o->blk[i / 2] >> (4 * (i % 2)) & 15u; break;
    default: {
        int n = 1 << (o->order - 3);
        *v = dq_be(o->blk + i * (uint64_t)n, n);
        break;
    }
    }
    return 0;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
    return a > ~0ull - b ? ~0ull : a + b;
}

/* *worst = the largest refcount + active references among the clusters
 * the active tables reference, *bits = the image's refcount width,
 * *ncomp = the compressed entries seen. */
static int rc_oracle(it_t *it, const char *name, uint64_t *worst,
                     unsigned *bits, uint64_t *ncomp)
{
    char p[PATHLEN];
    unsigned char h[104];
    unsigned char *l1 = NULL, *l2 = NULL;
    uint64_t l1_off, l1_size, i, j, v, mx = 0, nc = 0;
    uint64_t *hc = NULL; /* host clusters of compressed entries, repeated */
    size_t nhc = 0, caphc = 0;
    orc_t o;
    int rc = -1;
    memset(&o, 0, sizeof o);
    path_in(p, it, name);
    o.fd = open(p, O_RDONLY);
    if (o.fd < 0 || orc_pread(o.fd, 0, h, sizeof h)) {
        failf(it, "oracle: cannot read %s", p);
        if (o.fd >= 0) close(o.fd);
        return -1;
    }
    o.cb = (unsigned)dq_be(h + 20, 4);
    o.cs = 1ull << o.cb;
    o.order = dq_be(h + 4, 4) >= 3 ? (unsigned)dq_be(h + 96, 4) : 4u;
    l1_size = dq_be(h + 36, 4);
    l1_off = dq_be(h + 40, 8);
    o.rt_len = dq_be(h + 56, 4) * o.cs;
    o.rt = (unsigned char *)malloc((size_t)o.rt_len + 1);
    o.blk = (unsigned char *)malloc((size_t)o.cs);
    l1 = (unsigned char *)malloc((size_t)l1_size * 8 + 1);
    l2 = (unsigned char *)malloc((size_t)o.cs);
    if (!o.rt || !o.blk || !l1 || !l2) abort();
    if (orc_pread(o.fd, dq_be(h + 48, 8), o.rt, (size_t)o.rt_len) ||
        orc_pread(o.fd, l1_off, l1, (size_t)l1_size * 8))
        goto out;
    for (i = 0; i < l1_size; i++) {
        uint64_t l2o = dq_be(l1 + i * 8, 8) & 0x00fffffffffffe00ull;
        if (!l2o) continue;
        if (orc_refcount(&o, l2o, &v)) goto out;
        if (sat_add(v, 1) > mx) mx = sat_add(v, 1);
        if (orc_pread(o.fd, l2o, l2, (size_t)o.cs)) goto out;
        for (j = 0; j < o.cs / 8; j++) {
            uint64_t e = dq_be(l2 + j * 8, 8);
            if (e >> 62 & 1) {
                /* compressed: offset in bits 0..x-1, then the count of
                 * 512-byte sectors beyond the one holding the offset */
                unsigned x = 62u - (o.cb - 8u);
                uint64_t co = e & ((1ull << x) - 1);
                uint64_t ns = (e >> x & ((1ull << (o.cb - 8u)) - 1)) + 1;
                uint64_t c = co >> o.cb;
                uint64_t last = ((co & ~511ull) + ns * 512 - 1) >> o.cb;
                nc++;
                for (; c <= last; c++) {
                    if (nhc == caphc) {
                        caphc = caphc ? 2 * caphc : 1024;
                        hc = (uint64_t *)realloc(hc, caphc * sizeof *hc);
                        if (!hc) abort();
                    }
                    hc[nhc++] = c;
                }
                continue;
            }
            if (!(e & 0x00fffffffffffe00ull)) continue;
            if (orc_refcount(&o, e & 0x00fffffffffffe00ull, &v)) goto out;
            if (sat_add(v, 1) > mx) mx = sat_add(v, 1);
        }
    }
    if (nhc) qsort(hc, nhc, sizeof *hc, u64_cmp);
    for (i = 0; i < nhc; i = j) {
        for (j = i + 1; j < nhc && hc[j] == hc[i]; j++) {
        }
        if (orc_refcount(&o, hc[i] << o.cb, &v)) goto out;
        if (sat_add(v, j - i) > mx) mx = sat_add(v, j - i);
    }
    *worst = mx;
    *bits = 1u << o.order;
    *ncomp = nc;
    rc = 0;
out:
    if (rc) failf(it, "oracle: cannot read %s", p);
    free(hc);
    free(l1);
    free(l2);
    free(o.rt);
    free(o.blk);
    close(o.fd);
    return rc;
}

/* Would a new snapshot of `name` overflow a refcount? 1 yes, 0 no, -1 error.
 * `why` gets the numbers. */
static int snap_would_overflow(it_t *it, const char *name, char *why,
                               size_t cap)
{
    uint64_t mx = 0, lim, nc = 0;
    unsigned bits = 0;
    if (rc_oracle(it, name, &mx, &bits, &nc)) return -1;
    lim = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    snprintf(why, cap,
             "largest refcount a snapshot would give an active cluster "
             "%llu, refcount_bits=%u (max %llu)%s",
             (ull)mx, bits, (ull)lim,
             nc ? " (compressed entries counted)" : "");
    return mx > lim;
}

/* ---- qcow2w side ------------------------------------------------------------ */
typedef struct ours_t {
    q2w_image img;
    int fd;
    void *mem;
    q2w_op *ops;
    int open;
} ours_t;

typedef struct backing_t {
    int kind;
    int fd;
    uint64_t size;
    ours_t q; /* BK_QCOW2 */
} backing_t;

static int backing_read(void *user, uint64_t off, void *dst, size_t len)
{
    backing_t *b = (backing_t *)user;
    unsigned char *d = (unsigned char *)dst;
    size_t n = off < b->size ? (size_t)min64(len, b->size - off) : 0;
    if (n && b->kind == BK_RAW) {
        int rc = q2w_pread_full(b->fd, off, d, n);
        if (rc < 0) return rc;
    } else if (n) {
        int rc = q2w_posix_run(&b->q.img, b->q.fd, NULL,
                               q2w_read(&b->q.img, off, d, n));
        if (rc != Q2W_OK) return -EIO;
    }
    memset(d + n, 0, len - n);
    return 0;
}

static void q2w_fail(it_t *it, const q2w_image *img, int rc, const char *call)
{
    const q2w_error_info *e = q2w_error(img);
    failf(it, "%s -> %s (%d) what=%s offset=%llu index=%llu needed=%llu", call,
          q2w_strerror(rc), rc, e->what ? e->what : "-", (ull)e->offset,
          (ull)e->index, (ull)e->needed);
}

static void ours_close_fd(ours_t *o)
{
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    free(o->mem);
    free(o->ops);
    o->mem = NULL;
    o->ops = NULL;
    o->open = 0;
}

static int ours_open(it_t *it, ours_t *o, const char *path, int writable,
                     uint32_t cluster, size_t slots, size_t ops_cap,
                     const backing_t *bk, const q2w_backing_reader *rd)
{
    q2w_config cfg;
    struct stat st;
    size_t mem_len = (slots + 1) * ((size_t)cluster + 64) + 16384;
    int rc;
    /* A compressed start state: two clusters more for qcow2w's compressed
     * cluster buffer (without them its reads and writes there are NOMEM). */
    if (it->sc->prep == PREP_COMPRESSED)
        mem_len += 2 * (size_t)cluster;
    memset(&cfg, 0, sizeof cfg);
    o->fd = open(path, writable ? O_RDWR : O_RDONLY);
    o->mem = malloc(mem_len);
    o->ops = (q2w_op *)calloc(ops_cap, sizeof(q2w_op));
    o->open = 0;
    if (o->fd < 0 || !o->mem || !o->ops || fstat(o->fd, &st) != 0) {
        failf(it, "cannot open %s: %s", path, strerror(errno));
        ours_close_fd(o);
        return -1;
    }
    cfg.mem = o->mem;
    cfg.mem_len = mem_len;
    cfg.ops = o->ops;
    cfg.ops_cap = ops_cap;
    cfg.file_size = (uint64_t)st.st_size;
    cfg.writable = writable;
    cfg.max_slots = slots;
    if (bk && bk->kind) {
        cfg.has_backing = 1;
        cfg.backing_size = bk->size;
    }
    rc = q2w_posix_run(&o->img, o->fd, rd, q2w_open(&o->img, &cfg));
    if (rc != Q2W_OK) {
        q2w_fail(it, &o->img, rc, "q2w_open");
        ours_close_fd(o);
        return -1;
    }
    o->open = 1;
    return 0;
}

static int ours_close(it_t *it, ours_t *o, const q2w_backing_reader *rd)
{
    int rc = Q2W_OK;
    if (o->open) rc = q2w_posix_run(&o->img, o->fd, rd, q2w_close(&o->img));
    if (rc != Q2W_OK) q2w_fail(it, &o->img, rc, "q2w_close");
    ours_close_fd(o);
    return rc == Q2W_OK ? 0 : -1;
}

/* Opens (read-only) the backing file for qcow2w reads. */
static int backing_open(it_t *it, backing_t *b, const scen_t *sc,
                        const char *name)
{
    char p[PATHLEN];
    memset(b, 0, sizeof *b);
    b->kind = sc->backing;
    b->size = sc->bsize;
    b->fd = -1;
    b->q.fd = -1;
    if (!sc->backing) return 0;
    path_in(p, it, name);
    if (sc->backing == BK_RAW) {
        b->fd = open(p, O_RDONLY);
        if (b->fd < 0) {
            failf(it, "cannot open %s: %s", p, strerror(errno));
            return -1;
        }
        return 0;
    }
    return ours_open(it, &b->q, p, 0, sc->bcluster, 16, 64, NULL, NULL);
}

static void backing_close(it_t *it, backing_t *b)
{
    if (b->kind == BK_RAW && b->fd >= 0) close(b->fd);
    if (b->kind == BK_QCOW2 && b->q.open) ours_close(it, &b->q, NULL);
    b->fd = -1;
}

/* Creates an image with q2w_create. */
static int ours_create(it_t *it, const char *name, uint64_t size,
                       uint32_t cluster, uint32_t rbits, int version,
                       const char *bname, const char *bfmt)
{
    q2w_create_opts co = qh_opts(version, cluster, rbits, size, bname, bfmt);
    q2w_error_info err;
    uint64_t len = 0;
    unsigned char *buf;
    char p[PATHLEN];
    int rc;
    memset(&err, 0, sizeof err);
    rc = q2w_create(&co, NULL, 0, &len, &err);
    if (rc != Q2W_OK) {
        failf(it, "q2w_create(size) %s -> %s what=%s", name, q2w_strerror(rc),
              err.what ? err.what : "-");
        return -1;
    }
    buf = (unsigned char *)malloc((size_t)len);
    if (!buf) return -1;
    rc = q2w_create(&co, buf, (size_t)len, &len, &err);
    if (rc != Q2W_OK) {
        failf(it, "q2w_create %s -> %s what=%s", name, q2w_strerror(rc),
              err.what ? err.what : "-");
        free(buf);
        return -1;
    }
    path_in(p, it, name);
    rc = write_file(p, buf, (size_t)len);
    free(buf);
    if (rc != 0) failf(it, "cannot write %s", p);
    return rc;
}

static int ours_op(it_t *it, ours_t *o, const q2w_backing_reader *rd,
                   const op_t *op, const char *img_name)
{
    char call[160];
    unsigned char *buf = NULL;
    int rc;
    snprintf(call, sizeof call, "%s: q2w %s #%d %llu +%llu", img_name,
             op_names[op->kind], op->index, (ull)op->off, (ull)op->len);
    switch (op->kind) {
    case OP_WRITE:
        buf = (unsigned char *)malloc((size_t)op->len);
        if (!buf) return -1;
        memset(buf, op->fill, (size_t)op->len);
        rc = q2w_write(&o->img, op->off, buf, (size_t)op->len);
        break;
    case OP_ZERO:
        rc = q2w_write_zeroes(&o->img, op->off, op->len);
        break;
    case OP_DISCARD:
        rc = q2w_discard(&o->img, op->off, op->len);
        break;
    case OP_FLUSH:
        rc = q2w_flush(&o->img);
        break;
    case OP_AMEND:
        rc = q2w_amend_compat(&o->img, (int)op->off);
        break;
    default:
        rc = q2w_resize(&o->img, op->off);
        break;
    }
    rc = q2w_posix_run(&o->img, o->fd, rd, rc);
    free(buf);
    if (op->kind == OP_AMEND && rc == Q2W_ERR_UNSUPPORTED) {
        /* refused before any change (a snapshot of another disk size):
         * the qemu mode asks qemu-img to agree */
        it->amend_refused = 1;
        return 0;
    }
    if (op->kind == OP_AMEND && rc == Q2W_OK) {
        q2w_info info;
        q2w_info_get(&o->img, &info);
        if (info.version != (int)op->off) {
            failf(it, "%s: amended, but the handle says v%d", call, info.version);
            return -1;
        }
    }
    if (rc != Q2W_OK) {
        q2w_fail(it, &o->img, rc, call);
        return -1;
    }
    return 0;
}

/* A snapshot op through qcow2w on image `name` (open as o); keeps sm. */
static int ours_snap_op(it_t *it, ours_t *o, const q2w_backing_reader *rd,
                        const op_t *op, size_t pos, const char *name,
                        snapm_t *sm)
{
    char nm[32], call[160], why[192];
    int k = op->snap, rc, ov, pre = -1;
    qh_snap *e;
    snap_name(nm, sizeof nm, k);
    snprintf(call, sizeof call, "%s: q2w %s %s (op #%d)", name,
             op_names[op->kind], nm, op->index);
    e = qh_snaps_find(&sm->snaps, nm);
    if (op->kind == OP_SNAP_APPLY) {
        if (!e || e->state != QH_SNAP_LIVE) abort(); /* never refused here */
        rc = q2w_posix_run(&o->img, o->fd, rd,
                           q2w_snapshot_apply(&o->img, nm));
        if (rc != Q2W_OK) {
            q2w_fail(it, &o->img, rc, call);
            return -1;
        }
        model_revert(&sm->run, e->model, e->size, model_cap(it->sc));
        return 0;
    }
    if (op->kind == OP_SNAP_DELETE) {
        if (!e || (e->state != QH_SNAP_LIVE && e->state != QH_SNAP_REFUSED))
            abort();
        if (e->state == QH_SNAP_LIVE) qh_snap_begin_delete(e);
        rc = q2w_posix_run(&o->img, o->fd, rd,
                           q2w_snapshot_delete(&o->img, nm));
        if (e->state == QH_SNAP_REFUSED) {
            /* never made: the delete must say so and change nothing */
            if (rc == Q2W_ERR_NOT_FOUND) return 0;
            failf(it, "%s: %s was refused at its create; delete -> %s (%d), "
                      "want Q2W_ERR_NOT_FOUND",
                  call, nm, q2w_strerror(rc), rc);
            return -1;
        }
        if (rc != Q2W_OK) {
            q2w_fail(it, &o->img, rc, call);
            return -1;
        }
        qh_snap_end_delete(e, 1);
        return 0;
    }
    if (e) abort(); /* names are unique in an iteration */
    e = qh_snap_begin_create(&sm->snaps, nm, sm->run.d, sm->run.size,
                             1700000000u + (uint32_t)k, (uint32_t)k * 1000u,
                             (uint64_t)k * 1000000u);
    e->tag = pos;
    /* With 1- or 2-bit refcounts a create may rightly be refused (at most
     * MAX_LIVE snapshots + the active view share a cluster), and at any
     * width on a compressed start state (compressed clusters share host
     * clusters): a flush makes the file current and the oracle says
     * beforehand which it must be. A dropped reference lowers its refcount
     * only after the checkpoint that made the drop durable, in memory; a
     * host cluster other compressed entries still share would show the
     * stale count: a second flush writes it (as q2w_close does). */
    if (it->sc->rbits <= 2 || it->sc->prep == PREP_COMPRESSED) {
        int nf = it->sc->prep == PREP_COMPRESSED ? 2 : 1;
        while (nf--) {
            rc = q2w_posix_run(&o->img, o->fd, rd, q2w_flush(&o->img));
            if (rc != Q2W_OK) {
                q2w_fail(it, &o->img, rc, "q2w_flush (before a snapshot)");
                return -1;
            }
        }
        pre = snap_would_overflow(it, name, why, sizeof why);
        if (pre < 0) return -1;
    }
    rc = q2w_posix_run(&o->img, o->fd, rd,
                       q2w_snapshot_create(&o->img, nm, e->date_sec,
                                           e->date_nsec, e->vm_clock_ns));
    if (rc == Q2W_OK && pre == 1) {
        failf(it, "%s: created, but a refcount must overflow: %s", call, why);
        return -1;
    }
    if (rc == Q2W_OK) {
        qh_snap_end_create(e, 1);
        return 0;
    }
    if (rc != Q2W_ERR_LIMIT || !q2w_error(&o->img)->what ||
        strcmp(q2w_error(&o->img)->what, "refcount would overflow") != 0) {
        q2w_fail(it, &o->img, rc, call);
        return -1;
    }
    /* Refused: the file is current (create checkpoints before it looks), so
     * the oracle can judge from it. */
    ov = pre >= 0 ? pre : snap_would_overflow(it, name, why, sizeof why);
    if (ov < 0) return -1;
    if (!ov) {
        q2w_fail(it, &o->img, rc, call);
        printf("  but no refcount would overflow: %s\n", why);
        return -1;
    }
    if (it->verbose)
        printf("  note: seed=%llu %s %s refused as expected (%s)\n",
               (ull)it->sc->seed, name, nm, why);
    qh_snap_end_create(e, 0);
    /* the copy stays while qemu's A has the snapshot: A's is judged too */
    if (!sm->astate || sm->astate[k] != SN_LIVE) qh_snap_forget_copy(e);
    return 0;
}

/* Applies the scenario's ops to image `name` with qcow2w; closes it. With
 * sm (its run model initialised), snapshot ops are carried out and sm
 * follows them. */
static int ours_apply(it_t *it, const char *name, backing_t *bk,
                      const q2w_backing_reader *rd, snapm_t *sm)
{
    const scen_t *sc = it->sc;
    ours_t o;
    char p[PATHLEN];
    size_t i;
    double t = now_sec();
    int rc;
    path_in(p, it, name);
    if (ours_open(it, &o, p, 1, sc->cluster, sc->slots, sc->ops_cap, bk, rd))
        return -1;
    for (i = 0; i < sc->nops; i++) {
        const op_t *op = &sc->ops[i];
        if (is_snap_op(op)) {
            if (!sm) continue;
            if (ours_snap_op(it, &o, rd, op, i, name, sm)) {
                ours_close_fd(&o);
                return -1;
            }
            continue;
        }
        if (ours_op(it, &o, rd, op, name)) {
            ours_close_fd(&o);
            return -1;
        }
        if (sm) model_apply(&sm->run, sc, op);
        if (op->kind == OP_FLUSH && op->reopen) {
            if (ours_close(it, &o, rd)) return -1;
            if (ours_open(it, &o, p, 1, sc->cluster, sc->slots, sc->ops_cap,
                          bk, rd))
                return -1;
        }
    }
    rc = ours_close(it, &o, rd);
    if (it->verbose > 1)
        printf("  [qcow2w ops on %s: %.0f ms]\n", name,
               (now_sec() - t) * 1000.0);
    return rc;
}

static void print_findings(const q2w_check_result *res)
{
    size_t i;
    for (i = 0; i < res->n_findings; i++)
        printf("  finding %s offset=%llu where=%llu stored=%llu "
               "computed=%llu\n",
               q2w_finding_name(res->findings[i].kind),
               (ull)res->findings[i].offset, (ull)res->findings[i].where,
               (ull)res->findings[i].stored, (ull)res->findings[i].computed);
}

/* q2w_check of file `name` with `flags` (a repair opens it read-write);
 * *res gets the result. -1 when the check itself failed (reported). */
static int ours_check_run(it_t *it, const char *name, unsigned flags,
                          q2w_check_result *res)
{
    char p[PATHLEN];
    q2w_io io;
    q2w_fdbox box;
    size_t need = 0;
    void *work;
    int fd, rc;
    double t0 = now_sec();
    memset(res, 0, sizeof *res);
    path_in(p, it, name);
    fd = open(p, flags ? O_RDWR : O_RDONLY);
    if (fd < 0) {
        failf(it, "cannot open %s", p);
        return -1;
    }
    q2w_posix_io(&io, fd, &box);
    rc = q2w_check_work_size(&io, &need, NULL);
    if (rc != Q2W_OK) {
        failf(it, "q2w_check_work_size(%s) -> %s", name, q2w_strerror(rc));
        close(fd);
        return -1;
    }
    work = malloc(need ? need : 1);
    if (!work) abort();
    rc = q2w_check(&io, work, need, flags, res);
    if (rc != Q2W_OK) {
        failf(it, "q2w_check(%s, flags %u) -> %s what=%s offset=%llu", name,
              flags, q2w_strerror(rc),
              res->error.what ? res->error.what : "-",
              (ull)res->error.offset);
        print_findings(res);
    }
    free(work);
    close(fd);
    vtime(it, flags ? "q2w_check (repair)" : "q2w_check", t0);
    return rc == Q2W_OK ? 0 : -1;
}

/* q2w_check of a file: clean (no corruption, no leak, no error). */
static int ours_check(it_t *it, const char *name)
{
    q2w_check_result *res;
    int bad = 0;
    res = (q2w_check_result *)calloc(1, sizeof *res);
    if (!res) abort();
    if (ours_check_run(it, name, 0, res)) {
        bad = 1;
    } else if (res->corruptions || res->leaks || res->check_errors) {
        failf(it,
              "q2w_check(%s): %llu corruptions, %llu leaks, %llu check "
              "errors",
              name, (ull)res->corruptions, (ull)res->leaks,
              (ull)res->check_errors);
        print_findings(res);
        bad = 1;
    }
    free(res);
    return bad ? -1 : 0;
}

/* Reads the whole virtual disk of `name` with q2w_read; compares. */
static int ours_readback(it_t *it, const char *name, const model_t *m,
                         backing_t *bk, const q2w_backing_reader *rd)
{
    const scen_t *sc = it->sc;
    ours_t o;
    char p[PATHLEN], what[PATHLEN + 32];
    unsigned char *buf;
    q2w_info info;
    diff_t d;
    uint64_t pos = 0;
    int rc = 0;
    double t0 = now_sec();
    path_in(p, it, name);
    if (ours_open(it, &o, p, 0, sc->cluster, sc->slots, sc->ops_cap, bk, rd))
        return -1;
    q2w_info_get(&o.img, &info);
    /* Odd-sized pieces, so that reads start and end inside clusters. */
    buf = (unsigned char *)malloc(1 * MIB + 519);
    if (!buf) abort();
    memset(&d, 0, sizeof d);
    while (pos < info.size && rc == Q2W_OK) {
        size_t n = (size_t)min64(info.size - pos, 1 * MIB + 519);
        rc = q2w_posix_run(&o.img, o.fd, rd, q2w_read(&o.img, pos, buf, n));
        if (rc == Q2W_OK) diff_add(&d, m, pos, buf, n);
        pos += n;
    }
    d.len = info.size;
    if (rc != Q2W_OK) {
        q2w_fail(it, &o.img, rc, "q2w_read (read-back)");
    } else {
        snprintf(what, sizeof what, "q2w_read of %s", name);
        rc = diff_report(it, m, &d, what);
    }
    free(buf);
    ours_close_fd(&o);
    vtime(it, "q2w_read back", t0);
    return rc ? -1 : 0;
}

/* qemu-img convert -O raw NAME -> OUT; compare with the model. */
static int qemu_convert_cmp(it_t *it, const char *name, const char *out,
                            const model_t *m)
{
    cmd_t c;
    char p[PATHLEN], what[256];
    int rc;
    double t0;
    cmd_new(&c, "qemu-img convert -f qcow2 -O raw %s %s", name, out);
    if (cmd_expect(it, &c, 0, "qemu-img convert")) return -1;
    t0 = now_sec();
    path_in(p, it, out);
    snprintf(what, sizeof what, "qemu-img convert of %s", name);
    rc = compare_file(it, m, p, what, 0);
    unlink(p); /* large and easily remade */
    vtime(it, "compare raw", t0);
    return rc;
}

static int qemu_check(it_t *it, const char *name)
{
    cmd_t c;
    cmd_new(&c, "qemu-img check -f qcow2 %s", name);
    return cmd_expect(it, &c, 0, "qemu-img check");
}

/* ---- snapshots: checking an image against the snapshot model ---------------- */
/* qcow2w on `name` (read only) against the snapshot model (states: NULL,
 * the model's own; else this image's state of each entry): the list
 * q2w_snapshot_get gives is right (qh_snaps_judge_list); each listed one is
 * found by name as listed, has its fields (with the model's own states: id
 * and dates too) and reads back (q2w_read_snapshot) as its model.
 * ids[e] gets entry e's id. */
static int ours_snap_verify(it_t *it, const char *name, const int *state,
                            const snapm_t *sm, backing_t *bk,
                            const q2w_backing_reader *rd,
                            char ids[QH_MAX_SNAPS][64])
{
    const scen_t *sc = it->sc;
    ours_t o;
    q2w_info info;
    q2w_snapshot sn[QH_MAX_SNAPS], by_name;
    const char *names[QH_MAX_SNAPS];
    unsigned entry[QH_MAX_SNAPS];
    char p[PATHLEN], what[PATHLEN + 64], why[256];
    int bad = 0, rc;
    uint32_t i;
    unsigned char *buf;
    double t0 = now_sec();
    path_in(p, it, name);
    if (ours_open(it, &o, p, 0, sc->cluster, sc->slots, sc->ops_cap, bk, rd))
        return -1;
    q2w_info_get(&o.img, &info);
    if (info.nb_snapshots > QH_MAX_SNAPS) {
        failf(it, "%s: %u snapshots listed", name, info.nb_snapshots);
        bad = 1;
    }
    for (i = 0; i < info.nb_snapshots && !bad; i++) {
        rc = q2w_posix_run(&o.img, o.fd, rd,
                           q2w_snapshot_get(&o.img, i, &sn[i]));
        if (rc != Q2W_OK) {
            q2w_fail(it, &o.img, rc, "q2w_snapshot_get");
            bad = 1;
        }
        names[i] = sn[i].name;
    }
    if (!bad && qh_snaps_judge_list(&sm->snaps, state, names,
                                    info.nb_snapshots, entry, why,
                                    sizeof why)) {
        failf(it, "%s: q2w_snapshot_get: the table %s", name, why);
        bad = 1;
    }
    buf = (unsigned char *)malloc(1 * MIB + 519);
    if (!buf) abort();
    for (i = 0; i < info.nb_snapshots && !bad; i++) {
        const qh_snap *e = &sm->snaps.snap[entry[i]];
        model_t m = snap_view(e);
        diff_t d;
        uint64_t pos = 0;
        snprintf(ids[entry[i]], 64, "%s", sn[i].id);
        rc = q2w_posix_run(&o.img, o.fd, rd,
                           q2w_snapshot_find(&o.img, e->name, &by_name));
        if (rc != Q2W_OK) {
            q2w_fail(it, &o.img, rc, "q2w_snapshot_find");
            bad = 1;
            break;
        }
        if (memcmp(&by_name, &sn[i], sizeof by_name) != 0) {
            failf(it, "%s: snapshot %s: q2w_snapshot_find differs from "
                      "q2w_snapshot_get(%u)",
                  name, e->name, i);
            bad = 1;
            continue;
        }
        if (qh_snap_judge_fields(e, &sn[i], state == NULL, why, sizeof why)) {
            failf(it, "%s: %s", name, why);
            bad = 1;
            continue;
        }
        if (!m.d) abort(); /* a listed snapshot's copy is kept */
        memset(&d, 0, sizeof d);
        while (pos < m.size && rc == Q2W_OK) {
            size_t n = (size_t)min64(m.size - pos, 1 * MIB + 519);
            rc = q2w_posix_run(&o.img, o.fd, rd,
                               q2w_read_snapshot(&o.img, &sn[i], pos, buf, n));
            if (rc == Q2W_OK) diff_add(&d, &m, pos, buf, n);
            pos += n;
        }
        d.len = m.size;
        snprintf(what, sizeof what, "q2w_read_snapshot %s of %s", e->name,
                 name);
        if (rc != Q2W_OK) {
            q2w_fail(it, &o.img, rc, what);
            bad = 1;
            continue;
        }
        it->blame_end = e->tag;
        if (diff_report(it, &m, &d, what)) bad = 1;
        it->blame_end = sc->nops;
    }
    free(buf);
    ours_close_fd(&o);
    vtime(it, "q2w snapshots", t0);
    return bad ? -1 : 0;
}

/* qemu-img snapshot -l `name` lists what the snapshot model says
 * (qh_snaps_judge_list; state as for ours_snap_verify). */
static int qemu_snap_list(it_t *it, const char *name, const snapm_t *sm,
                          const int *state)
{
    cmd_t c;
    char p[PATHLEN], line[1024], tags[QH_MAX_SNAPS][256], why[256];
    const char *names[QH_MAX_SNAPS];
    unsigned entry[QH_MAX_SNAPS];
    size_t n = 0;
    int bad = 0;
    FILE *f;
    /* (no -f: qemu-img snapshot probes) */
    cmd_new(&c, "qemu-img snapshot -l %s", name);
    if (cmd_expect(it, &c, 0, "qemu-img snapshot -l")) return -1;
    path_in(p, it, "cmd.log");
    f = fopen(p, "r");
    if (!f) {
        failf(it, "cannot read %s", p);
        return -1;
    }
    /* "ID  TAG  VM SIZE  DATE  VM CLOCK  ICOUNT" rows under two headings */
    while (fgets(line, sizeof line, f)) {
        char id[64], tag[256];
        if (sscanf(line, "%63s %255s", id, tag) != 2) continue;
        /* rows have a numeric id; headings and qemu's warnings (stale
         * bitmaps: "qemu-img: warning: ...") do not */
        if (strspn(id, "0123456789") != strlen(id)) continue;
        if (n == QH_MAX_SNAPS) {
            failf(it, "qemu-img snapshot -l %s: more than %d snapshots", name,
                  QH_MAX_SNAPS);
            bad = 1;
            break;
        }
        memcpy(tags[n], tag, sizeof tag);
        names[n] = tags[n];
        n++;
    }
    fclose(f);
    if (!bad && qh_snaps_judge_list(&sm->snaps, state, names, n, entry, why,
                                    sizeof why)) {
        failf(it, "qemu-img snapshot -l %s: the table %s", name, why);
        bad = 1;
    }
    if (bad) show_log(it);
    return bad ? -1 : 0;
}

/* qemu-img convert -l snapshot.name=<e's name> NAME -> OUT; compare with
 * the model of snapshot e. keep: leave OUT (the caller removes it). */
static int qemu_snap_convert_cmp(it_t *it, const char *name,
                                 const qh_snap *e, const char *out, int keep)
{
    cmd_t c;
    char p[PATHLEN], what[256];
    model_t m = snap_view(e);
    int rc;
    cmd_new(&c, "qemu-img convert -f qcow2 -l snapshot.name=%s -O raw %s %s",
            e->name, name, out);
    if (cmd_expect(it, &c, 0, "qemu-img convert -l snapshot.name")) return -1;
    path_in(p, it, out);
    snprintf(what, sizeof what, "qemu-img convert of snapshot %.64s of %.150s",
             e->name, name);
    /* qemu converts a snapshot at the current disk size (load_tmp keeps
     * it): only the snapshot's own size is compared, or the current one
     * when that is smaller (after an apply of a smaller snapshot). */
    {
        struct stat st;
        if (stat(p, &st) == 0 && (uint64_t)st.st_size < m.size)
            m.size = (uint64_t)st.st_size;
    }
    it->blame_end = e->tag;
    rc = compare_file(it, &m, p, what, 1);
    it->blame_end = it->sc->nops;
    if (!keep) unlink(p);
    return rc;
}

/* Both sides' conversions of snapshot k differ from the model: do they
 * agree with each other? */
static void files_agree(const char *pa, const char *pb)
{
    uint64_t na = 0, nb = 0;
    unsigned char *a = read_file(pa, &na), *b = read_file(pb, &nb);
    if (a && b)
        printf("  A's and B's conversions %s each other\n",
               na == nb && memcmp(a, b, (size_t)na) == 0 ? "equal"
                                                         : "differ from");
    free(a);
    free(b);
}

/* ---- backing files ---------------------------------------------------------- */
static unsigned char *base_content(const scen_t *sc)
{
    unsigned char *b = (unsigned char *)calloc(1, (size_t)sc->bsize);
    size_t i;
    if (!b) abort();
    for (i = 0; i < sc->nbext; i++)
        memset(b + sc->bext[i].off, sc->bext[i].fill, (size_t)sc->bext[i].len);
    return b;
}

static const char *base_name(const scen_t *sc)
{
    return sc->backing == BK_RAW ? "base.raw" : "base.qcow2";
}

/* The raw backing file is the content itself (either side). */
static int make_raw_base(it_t *it, const unsigned char *content)
{
    char p[PATHLEN];
    path_in(p, it, "base.raw");
    if (write_file(p, content, (size_t)it->sc->bsize)) {
        failf(it, "cannot write %s", p);
        return -1;
    }
    return 0;
}

static int make_ours_qcow2_base(it_t *it)
{
    const scen_t *sc = it->sc;
    ours_t o;
    char p[PATHLEN];
    size_t i;
    if (ours_create(it, "base.qcow2", sc->bsize, sc->bcluster, sc->brbits,
                    sc->bversion, NULL, NULL))
        return -1;
    path_in(p, it, "base.qcow2");
    if (ours_open(it, &o, p, 1, sc->bcluster, 32, 64, NULL, NULL)) return -1;
    for (i = 0; i < sc->nbext; i++) {
        op_t op;
        memset(&op, 0, sizeof op);
        op.kind = OP_WRITE;
        op.off = sc->bext[i].off;
        op.len = sc->bext[i].len;
        op.fill = sc->bext[i].fill;
        op.index = -1;
        if (ours_op(it, &o, NULL, &op, "base.qcow2")) {
            ours_close_fd(&o);
            return -1;
        }
    }
    return ours_close(it, &o, NULL);
}

static int make_qemu_qcow2_base(it_t *it)
{
    const scen_t *sc = it->sc;
    cmd_t c;
    size_t i;
    if (sc->bversion == 3)
        cmd_new(&c, "qemu-img create -f qcow2 -o "
                    "cluster_size=%u,compat=1.1,refcount_bits=%u "
                    "base.qcow2 %llu",
                sc->bcluster, sc->brbits, (ull)sc->bsize);
    else
        cmd_new(&c, "qemu-img create -f qcow2 -o cluster_size=%u,compat=0.10 "
                    "base.qcow2 %llu",
                sc->bcluster, (ull)sc->bsize);
    if (cmd_expect(it, &c, 0, "qemu-img create (backing)")) return -1;
    cmd_new(&c, "qemu-io -f qcow2");
    for (i = 0; i < sc->nbext; i++)
        cmd_words(&c, "-c 'write -P 0x%02x %llu %llu'", sc->bext[i].fill,
                  (ull)sc->bext[i].off, (ull)sc->bext[i].len);
    cmd_words(&c, "base.qcow2");
    return cmd_expect(it, &c, 0, "qemu-io (backing)");
}

/* The qcow2w side of both modes: the backing reader, the model of the
 * active disk (and of the snapshots), then the scenario's ops applied to
 * `name`. -1: setup failed (reported); 1: applying failed; 0: applied. */
static int ours_side(it_t *it, const char *name, const unsigned char *base,
                     backing_t *bk, q2w_backing_reader *rd, model_t *m,
                     snapm_t *sm)
{
    const scen_t *sc = it->sc;
    if (backing_open(it, bk, sc, base_name(sc))) return -1;
    rd->read = backing_read;
    rd->user = bk;
    if (model_build(it, m, base)) abort();
    if (sc->snaps && model_init(&sm->run, sc, base)) abort();
    return ours_apply(it, name, bk, sc->backing ? rd : NULL,
                      sc->snaps ? sm : NULL) ? 1 : 0;
}

static void ours_side_end(it_t *it, backing_t *bk, model_t *m, snapm_t *sm)
{
    backing_close(it, bk);
    free(m->d);
    snapm_free(sm);
}

/* ---- the two modes ---------------------------------------------------------- */
static int run_ours(it_t *it, const unsigned char *base)
{
    const scen_t *sc = it->sc;
    backing_t bk;
    q2w_backing_reader rd;
    model_t m;
    snapm_t sm;
    char ids[QH_MAX_SNAPS][64];
    unsigned k;
    int bad = 0, rc;
    memset(&sm, 0, sizeof sm);
    if (sc->backing == BK_RAW && make_raw_base(it, base)) return -1;
    if (sc->backing == BK_QCOW2 && make_ours_qcow2_base(it)) return -1;
    if (ours_create(it, "img.qcow2", sc->size, sc->cluster, sc->rbits,
                    sc->version, sc->backing ? base_name(sc) : NULL,
                    sc->backing == BK_RAW    ? "raw"
                    : sc->backing == BK_QCOW2 ? "qcow2"
                                              : NULL))
        return -1;
    rc = ours_side(it, "img.qcow2", base, &bk, &rd, &m, &sm);
    if (rc < 0) return -1;
    if (rc) {
        bad = 1;
    } else {
        if (sc->backing == BK_QCOW2 && ours_check(it, "base.qcow2")) bad = 1;
        if (ours_check(it, "img.qcow2")) bad = 1;
        if (ours_readback(it, "img.qcow2", &m, &bk,
                          sc->backing ? &rd : NULL))
            bad = 1;
        if (sc->backing == BK_QCOW2 && qemu_check(it, "base.qcow2")) bad = 1;
        if (qemu_check(it, "img.qcow2")) bad = 1;
        if (qemu_convert_cmp(it, "img.qcow2", "out.raw", &m)) bad = 1;
        if (sc->snaps) {
            if (qemu_snap_list(it, "img.qcow2", &sm, NULL)) bad = 1;
            for (k = 0; k < sm.snaps.n; k++)
                if (sm.snaps.snap[k].state == QH_SNAP_LIVE &&
                    qemu_snap_convert_cmp(it, "img.qcow2", &sm.snaps.snap[k],
                                          "snap.raw", 0))
                    bad = 1;
            if (ours_snap_verify(it, "img.qcow2", NULL, &sm, &bk,
                                 sc->backing ? &rd : NULL, ids))
                bad = 1;
        }
    }
    ours_side_end(it, &bk, &m, &sm);
    return bad ? -1 : 0;
}

/* A snapshot op on A with qemu-img; astate follows. A create that qemu
 * refuses must be one the oracle (asked before) expects to overflow. */
static int qemu_snap_op(it_t *it, const op_t *op, int *astate)
{
    cmd_t c;
    char nm[32], why[192];
    int k = op->snap, ov, rc;
    double t;
    snap_name(nm, sizeof nm, k);
    /* (no -f: qemu-img snapshot probes) */
    cmd_new(&c, "qemu-img snapshot");
    if (op->kind == OP_SNAP_APPLY) {
        if (astate[k] != SN_LIVE) abort(); /* never refused here */
        cmd_words(&c, "-a %s a.qcow2", nm);
        return cmd_expect(it, &c, 0, "qemu-img snapshot -a on A");
    }
    if (op->kind == OP_SNAP_DELETE) {
        if (astate[k] != SN_LIVE) return 0; /* refused: nothing to delete */
        cmd_words(&c, "-d %s a.qcow2", nm);
        if (cmd_expect(it, &c, 0, "qemu-img snapshot -d on A")) return -1;
        astate[k] = SN_DELETED;
        return 0;
    }
    ov = snap_would_overflow(it, "a.qcow2", why, sizeof why);
    if (ov < 0) return -1;
    cmd_words(&c, "-c %s a.qcow2", nm);
    t = now_sec();
    rc = cmd_run(it, &c);
    if (it->verbose > 1) {
        printf("  [rc=%d %.0f ms] ", rc, (now_sec() - t) * 1000.0);
        cmd_print(stdout, &c);
    }
    if (rc == 0 && !ov) {
        astate[k] = SN_LIVE;
        return 0;
    }
    if (rc == 0 || !ov) {
        failf(it, "qemu-img snapshot -c %s on A: exit status %d, but the "
                  "oracle %s overflow (%s); in %s:",
              nm, rc, ov ? "expects an" : "sees no", why, it->dir);
        printf("  $ ");
        cmd_print(stdout, &c);
        show_log(it);
        return -1;
    }
    if (it->verbose)
        printf("  note: seed=%llu a.qcow2 %s refused by qemu as expected "
               "(%s)\n",
               (ull)it->sc->seed, nm, why);
    astate[k] = SN_REFUSED;
    /* qemu leaks the L1 copy it had made */
    cmd_new(&c, "qemu-img check -f qcow2 -r leaks a.qcow2");
    return cmd_expect(it, &c, 0, "qemu-img check -r leaks A (after refusal)");
}

/* The snapshot part of the qemu mode: A (qemu's, states astate) and B
 * (qcow2w's, sm) against the snapshot model. */
static int qemu_snap_compare(it_t *it, const int *astate, const snapm_t *sm,
                             backing_t *bk, const q2w_backing_reader *rd)
{
    static const char *const b_state_names[] = {"creating", "live",
                                                "refused", "deleting",
                                                "deleted"};
    char ids_a[QH_MAX_SNAPS][64], ids_b[QH_MAX_SNAPS][64], pa[PATHLEN],
        pb[PATHLEN];
    int as[QH_MAX_SNAPS], bad = 0, same = 1;
    unsigned k;
    memset(ids_a, 0, sizeof ids_a);
    memset(ids_b, 0, sizeof ids_b);
    /* Each side's creates already matched its own refcounts (the oracle);
     * the two can differ where the allocations differ (qemu keeps a zeroed
     * shared cluster allocated, ZERO_ALLOC, where qcow2w may drop it). */
    for (k = 0; k < sm->snaps.n; k++) {
        const qh_snap *e = &sm->snaps.snap[k];
        as[k] = a_state(astate, e);
        if ((as[k] == QH_SNAP_LIVE) != (e->state == QH_SNAP_LIVE)) {
            same = 0;
            if (it->verbose)
                printf("  note: seed=%llu snapshot %s: %s on A (qemu-img), "
                       "%s on B (qcow2w): each as its refcounts require\n",
                       (ull)it->sc->seed, e->name,
                       sn_state_names[astate[atoi(e->name + 1)]],
                       b_state_names[e->state]);
        }
    }
    if (qemu_snap_list(it, "b.qcow2", sm, NULL)) bad = 1;
    path_in(pa, it, "snap_a.raw");
    path_in(pb, it, "snap_b.raw");
    for (k = 0; k < sm->snaps.n; k++) {
        const qh_snap *e = &sm->snaps.snap[k];
        int ra, rb;
        if (as[k] != QH_SNAP_LIVE || e->state != QH_SNAP_LIVE) continue;
        ra = qemu_snap_convert_cmp(it, "a.qcow2", e, "snap_a.raw", 1);
        rb = qemu_snap_convert_cmp(it, "b.qcow2", e, "snap_b.raw", 1);
        if (ra && rb) files_agree(pa, pb);
        if (ra || rb) bad = 1;
        unlink(pa);
        unlink(pb);
    }
    if (ours_snap_verify(it, "b.qcow2", NULL, sm, bk, rd, ids_b)) bad = 1;
    if (ours_snap_verify(it, "a.qcow2", as, sm, bk, rd, ids_a)) bad = 1;
    for (k = 0; k < sm->snaps.n && !bad && same; k++)
        if (as[k] == QH_SNAP_LIVE && sm->snaps.snap[k].state == QH_SNAP_LIVE &&
            strcmp(ids_a[k], ids_b[k]) != 0) {
            failf(it, "snapshot %s: id %s on A (qemu-img), %s on B (qcow2w)",
                  sm->snaps.snap[k].name, ids_a[k], ids_b[k]);
            bad = 1;
        }
    return bad ? -1 : 0;
}

/* qemu-io on A for ops[from, to) (no grow among them). */
static int qemu_batch(it_t *it, size_t from, size_t to)
{
    const scen_t *sc = it->sc;
    cmd_t c;
    size_t i;
    if (from >= to) return 0;
    cmd_new(&c, "qemu-io -f qcow2");
    for (i = from; i < to; i++) {
        const op_t *op = &sc->ops[i];
        switch (op->kind) {
        case OP_WRITE:
            cmd_words(&c, "-c 'write -P 0x%02x %llu %llu'", op->fill,
                      (ull)op->off, (ull)op->len);
            break;
        case OP_ZERO:
            cmd_words(&c, "-c 'write -z %llu %llu'", (ull)op->off,
                      (ull)op->len);
            break;
        case OP_DISCARD:
            cmd_words(&c, "-c 'discard %llu %llu'", (ull)op->off,
                      (ull)op->len);
            break;
        default:
            cmd_words(&c, "-c flush");
            break;
        }
    }
    cmd_words(&c, "a.qcow2");
    return cmd_expect(it, &c, 0, "qemu-io on A");
}

/* ---- start states (qemu mode) ------------------------------------------------ */
/* The -o options of A: the scenario's geometry, its backing file, and
 * lazy_refcounts=on for the dirty-lazy start state. */
static void a_opts(const scen_t *sc, char *opt, size_t cap)
{
    int k = snprintf(opt, cap, "cluster_size=%u,compat=%s", sc->cluster,
                     sc->version == 3 ? "1.1" : "0.10");
    if (sc->version == 3)
        k += snprintf(opt + k, cap - (size_t)k, ",refcount_bits=%u",
                      sc->rbits);
    if (sc->prep == PREP_LAZY)
        k += snprintf(opt + k, cap - (size_t)k, ",lazy_refcounts=on");
    if (sc->backing)
        snprintf(opt + k, cap - (size_t)k, ",backing_file=%s,backing_fmt=%s",
                 base_name(sc), sc->backing == BK_RAW ? "raw" : "qcow2");
}

/* Byte `off` of file `name` (0..255), -1 when unreadable (reported). */
static int file_byte(it_t *it, const char *name, uint64_t off)
{
    char p[PATHLEN];
    unsigned char b = 0;
    int fd;
    path_in(p, it, name);
    fd = open(p, O_RDONLY);
    if (fd < 0 || orc_pread(fd, off, &b, 1)) {
        failf(it, "cannot read byte %llu of %s", (ull)off, p);
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return b;
}

/* Copies file `from` to `to` with byte `off` and-ed with `mask`. */
static int copy_patched(it_t *it, const char *from, const char *to,
                        uint64_t off, unsigned char mask)
{
    char pf[PATHLEN], pt[PATHLEN];
    uint64_t n = 0;
    unsigned char *b;
    int rc;
    path_in(pf, it, from);
    path_in(pt, it, to);
    b = read_file(pf, &n);
    if (!b || n <= off) {
        failf(it, "cannot read %s", pf);
        free(b);
        return -1;
    }
    b[off] &= mask;
    rc = write_file(pt, b, (size_t)n);
    free(b);
    if (rc) failf(it, "cannot write %s", pt);
    return rc ? -1 : 0;
}

/* The prep's pattern writes as qemu-io commands. */
static void add_prep_writes(cmd_t *c, const scen_t *sc)
{
    size_t i;
    for (i = 0; i < sc->nprep; i++)
        cmd_words(c, "-c 'write -P 0x%02x %llu %llu'", sc->pext[i].fill,
                  (ull)sc->pext[i].off, (ull)sc->pext[i].len);
}

/* q2w_read of image `name` against the prep model pm (before any op). */
static int prep_readback(it_t *it, const char *name, const model_t *pm)
{
    const scen_t *sc = it->sc;
    backing_t bk;
    q2w_backing_reader rd;
    int rc;
    if (backing_open(it, &bk, sc, base_name(sc))) return -1;
    rd.read = backing_read;
    rd.user = &bk;
    it->blame_end = 0;
    rc = ours_readback(it, name, pm, &bk, sc->backing ? &rd : NULL);
    it->blame_end = sc->nops;
    backing_close(it, &bk);
    return rc;
}

/* compressed: A = qemu-img convert -c of a raw file holding the prep
 * content pm (fills and zeros); then q2w_check and q2w_read of A. */
static int prep_compressed(it_t *it, const model_t *pm)
{
    const scen_t *sc = it->sc;
    char p[PATHLEN], opt[512];
    uint64_t worst = 0, ncomp = 0;
    unsigned bits = 0;
    cmd_t c;
    int rc;
    path_in(p, it, "prep.raw");
    if (write_file(p, pm->d, (size_t)pm->size)) {
        failf(it, "cannot write %s", p);
        return -1;
    }
    a_opts(sc, opt, sizeof opt);
    cmd_new(&c, "qemu-img convert -c -f raw -O qcow2 -o %s prep.raw a.qcow2",
            opt);
    rc = cmd_expect(it, &c, 0, "qemu-img convert -c (compressed start state)");
    unlink(p);
    if (rc) return -1;
    if (rc_oracle(it, "a.qcow2", &worst, &bits, &ncomp)) return -1;
    if (it->verbose > 1)
        printf("  compressed start state: %llu compressed clusters\n",
               (ull)ncomp);
    if (!ncomp) {
        failf(it, "compressed start state: qemu-img convert -c made no "
                  "compressed cluster (in %s)",
              it->dir);
        return -1;
    }
    rc = ours_check(it, "a.qcow2");
    if (prep_readback(it, "a.qcow2", pm)) rc = -1;
    return rc;
}

/* bitmaps: bm0 (enabled), the fills through it, maybe an empty bm1; A
 * must be clean for q2w_check and read as pm. *k = the bitmap clusters,
 * counted as leaks by qemu-img check and by q2w_check (which must agree)
 * on a copy P whose autoclear bit 0 is clear. */
static int prep_bitmaps(it_t *it, const model_t *pm, uint64_t *k)
{
    const scen_t *sc = it->sc;
    q2w_check_result *res;
    cmd_t c;
    long nq;
    long long sum = -1;
    int rc, bad = 0;
    *k = 0;
    cmd_new(&c, "qemu-img bitmap --add -f qcow2 a.qcow2 bm0");
    if (cmd_expect(it, &c, 0, "qemu-img bitmap --add bm0")) return -1;
    cmd_new(&c, "qemu-io -f qcow2");
    add_prep_writes(&c, sc);
    cmd_words(&c, "a.qcow2");
    if (cmd_expect(it, &c, 0, "qemu-io (bitmaps start state)")) return -1;
    if (sc->bm1) {
        cmd_new(&c, "qemu-img bitmap --add -g 65536 -f qcow2 a.qcow2 bm1");
        if (cmd_expect(it, &c, 0, "qemu-img bitmap --add -g 65536 bm1"))
            return -1;
    }
    /* A with live bitmaps: clean for qcow2w, content as the model. */
    if (ours_check(it, "a.qcow2")) bad = 1;
    if (prep_readback(it, "a.qcow2", pm)) bad = 1;
    /* P: the bitmaps stale (autoclear bit 0, header byte 95, cleared). */
    if (copy_patched(it, "a.qcow2", "p.qcow2", 95, 0xfe)) return -1;
    cmd_new(&c, "qemu-img check -f qcow2 p.qcow2");
    rc = cmd_status(it, &c);
    nq = log_count(it, "Leaked cluster ", NULL, NULL);
    (void)log_count(it, " leaked clusters were found", NULL, &sum);
    if (nq < 0 || (rc != 0 && rc != 3) || (rc == 3) != (nq > 0) ||
        (nq > 0 && sum != nq)) {
        cmd_failed(it, &c, rc, "qemu-img check P (bitmaps stale)",
                   "3 with as many \"Leaked cluster\" lines as the "
                   "summary says, or 0 without");
        return -1;
    }
    res = (q2w_check_result *)calloc(1, sizeof *res);
    if (!res) abort();
    if (ours_check_run(it, "p.qcow2", 0, res)) {
        bad = 1;
    } else if (res->corruptions || res->check_errors ||
               res->leaks != (uint64_t)nq) {
        failf(it,
              "bitmaps start state: P (a copy of A with autoclear bit 0 "
              "clear): q2w_check finds %llu leaks, %llu corruptions, %llu "
              "check errors; qemu-img check %ld leaked clusters (in %s)",
              (ull)res->leaks, (ull)res->corruptions,
              (ull)res->check_errors, nq, it->dir);
        print_findings(res);
        bad = 1;
    }
    free(res);
    *k = (uint64_t)nq;
    if (it->verbose > 1)
        printf("  bitmaps start state: %ld bitmap clusters (leaks once "
               "stale)\n",
               nq);
    return bad ? -1 : 0;
}

/* dirty-lazy: the fills, then qemu-io aborts; A must be dirty. *end =
 * the "Image end offset" qemu-img check prints for the dirty A (*errs: the
 * errors it counts, -1 for none), which is kept as dirty.qcow2. */
static int prep_lazy(it_t *it, uint64_t *end, long long *errs)
{
    const scen_t *sc = it->sc;
    struct rlimit old, none;
    char pa[PATHLEN], pd[PATHLEN];
    long long v = -1;
    cmd_t c;
    int rc, have_rl, b;
    *end = 0;
    *errs = -1;
    cmd_new(&c, "qemu-io -f qcow2");
    add_prep_writes(&c, sc);
    /* data and L2 tables durable (qemu-io writes through by default
     * anyway); a dirty lazy-refcount image does not write its refcounts */
    cmd_words(&c, "-c flush -c abort a.qcow2");
    /* (no core file from the abort) */
    have_rl = getrlimit(RLIMIT_CORE, &old) == 0;
    if (have_rl) {
        none = old;
        none.rlim_cur = 0;
        setrlimit(RLIMIT_CORE, &none);
    }
    rc = cmd_expect(it, &c, 128 + SIGABRT, "qemu-io ... abort (dirty-lazy)");
    if (have_rl) setrlimit(RLIMIT_CORE, &old);
    if (rc) return -1;
    b = file_byte(it, "a.qcow2", 79);
    if (b < 0) return -1;
    if (!(b & 1)) {
        failf(it, "dirty-lazy start state: A's dirty bit (incompatible bit "
                  "0) is not set after qemu-io aborted (in %s)",
              it->dir);
        return -1;
    }
    cmd_new(&c, "qemu-img check -f qcow2 a.qcow2");
    rc = cmd_status(it, &c);
    if ((rc != 0 && rc != 2 && rc != 3) ||
        log_count(it, "Image end offset: ", &v, NULL) < 1 || v <= 0) {
        cmd_failed(it, &c, rc, "qemu-img check of the dirty A",
                   "0, 2 or 3, and an \"Image end offset\"");
        return -1;
    }
    *end = (uint64_t)v;
    (void)log_count(it, " errors were found on the image", NULL, errs);
    path_in(pa, it, "a.qcow2");
    path_in(pd, it, "dirty.qcow2");
    if (copy_file(pa, pd)) {
        failf(it, "cannot copy %s to %s", pa, pd);
        return -1;
    }
    return 0;
}

/* dirty-lazy, after B was copied from the dirty A: the end offsets agree;
 * qemu-img check -r all repairs A, Q2W_CHECK_REPAIR_ALL repairs B; both
 * clean, equal, and the prep model pm. */
static int lazy_repair(it_t *it, uint64_t qemu_end, long long qemu_errs,
                       const model_t *pm)
{
    q2w_check_result *res = (q2w_check_result *)calloc(1, sizeof *res);
    cmd_t c;
    int bad = 0, b;
    if (!res) abort();
    if (ours_check_run(it, "dirty.qcow2", 0, res)) {
        bad = 1;
    } else {
        if (it->verbose > 1)
            printf("  dirty A: q2w_check %llu corruptions, %llu leaks, image "
                   "end offset %llu (qemu-img check: %lld errors, %llu)\n",
                   (ull)res->corruptions, (ull)res->leaks,
                   (ull)res->image_end_offset,
                   qemu_errs < 0 ? 0 : qemu_errs, (ull)qemu_end);
        /* (counted differently, perhaps: only a note) */
        if (it->verbose && (uint64_t)(qemu_errs < 0 ? 0 : qemu_errs) !=
                               res->corruptions)
            printf("  note: seed=%llu dirty A: qemu-img check counts %lld "
                   "errors, q2w_check %llu corruptions\n",
                   (ull)it->sc->seed, qemu_errs < 0 ? 0 : qemu_errs,
                   (ull)res->corruptions);
        if (res->image_end_offset != qemu_end) {
            failf(it, "dirty-lazy: q2w_check of the dirty A (dirty.qcow2): "
                      "image_end_offset %llu, qemu-img check says Image end "
                      "offset: %llu (%llu corruptions, %llu leaks; in %s)",
                  (ull)res->image_end_offset, (ull)qemu_end,
                  (ull)res->corruptions, (ull)res->leaks, it->dir);
            print_findings(res);
            bad = 1;
        }
    }
    cmd_new(&c, "qemu-img check -f qcow2 -r all a.qcow2");
    if (cmd_expect(it, &c, 0, "qemu-img check -r all A (dirty-lazy)")) {
        free(res);
        return -1;
    }
    if (ours_check_run(it, "b.qcow2", Q2W_CHECK_REPAIR_ALL, res)) {
        free(res);
        return -1;
    }
    if (it->verbose > 1)
        printf("  q2w_check REPAIR_ALL of B: %llu corruptions (%llu fixed), "
               "%llu leaks (%llu fixed), dirty_cleared %d\n",
               (ull)res->corruptions, (ull)res->corruptions_fixed,
               (ull)res->leaks, (ull)res->leaks_fixed, res->dirty_cleared);
    if (res->dirty_cleared != 1 ||
        res->corruptions != res->corruptions_fixed || res->check_errors) {
        failf(it, "dirty-lazy: q2w_check REPAIR_ALL of B: dirty_cleared %d, "
                  "%llu corruptions, %llu fixed, %llu check errors (in %s)",
              res->dirty_cleared, (ull)res->corruptions,
              (ull)res->corruptions_fixed, (ull)res->check_errors, it->dir);
        print_findings(res);
        bad = 1;
    }
    free(res);
    b = file_byte(it, "b.qcow2", 79);
    if (b < 0) return -1;
    if (b & 1) {
        failf(it, "dirty-lazy: B's dirty bit is still set after "
                  "Q2W_CHECK_REPAIR_ALL (in %s)",
              it->dir);
        return -1;
    }
    if (qemu_check(it, "b.qcow2")) bad = 1;
    if (ours_check(it, "b.qcow2")) bad = 1;
    if (ours_check(it, "a.qcow2")) bad = 1;
    cmd_new(&c, "qemu-img compare -f qcow2 -F qcow2 a.qcow2 b.qcow2");
    if (cmd_expect(it, &c, 0, "qemu-img compare A B (repaired)")) bad = 1;
    it->blame_end = 0;
    if (qemu_convert_cmp(it, "a.qcow2", "a.raw", pm)) bad = 1;
    if (qemu_convert_cmp(it, "b.qcow2", "b.raw", pm)) bad = 1;
    it->blame_end = it->sc->nops;
    if (prep_readback(it, "b.qcow2", pm)) bad = 1;
    return bad ? -1 : 0;
}

/* bitmaps, at the end: B has no corruption and k leaks (the stale bitmap
 * clusters) when its autoclear bit 0 is clear, else none; a leak repair
 * fixes exactly those. */
static int bitmaps_b_leaks(it_t *it, uint64_t k)
{
    q2w_check_result *res;
    uint64_t want;
    int b = file_byte(it, "b.qcow2", 95), bad = 0;
    if (b < 0) return -1;
    want = b & 1 ? 0 : k;
    res = (q2w_check_result *)calloc(1, sizeof *res);
    if (!res) abort();
    if (ours_check_run(it, "b.qcow2", 0, res)) {
        bad = 1;
    } else if (res->corruptions || res->check_errors || res->leaks != want) {
        failf(it, "bitmaps: q2w_check of B (autoclear bit 0 %s): %llu "
                  "corruptions, %llu leaks (want %llu), %llu check errors",
              b & 1 ? "set" : "clear", (ull)res->corruptions,
              (ull)res->leaks, (ull)want, (ull)res->check_errors);
        print_findings(res);
        bad = 1;
    } else if (want) {
        if (ours_check_run(it, "b.qcow2", Q2W_CHECK_REPAIR_LEAKS, res)) {
            bad = 1;
        } else if (res->leaks_fixed != want) {
            failf(it, "bitmaps: Q2W_CHECK_REPAIR_LEAKS of B fixed %llu "
                      "leaks of %llu (want %llu)",
                  (ull)res->leaks_fixed, (ull)res->leaks, (ull)want);
            print_findings(res);
            bad = 1;
        }
    }
    if (it->verbose > 1)
        printf("  bitmaps: B's autoclear bit 0 %s, %llu stale bitmap "
               "clusters repaired\n",
               b & 1 ? "set" : "clear", (ull)want);
    free(res);
    return bad ? -1 : 0;
}

static int run_qemu(it_t *it, const unsigned char *base)
{
    const scen_t *sc = it->sc;
    backing_t bk;
    q2w_backing_reader rd;
    model_t m, pm;
    snapm_t sm;
    int astate[MAX_SNAPS];
    cmd_t c;
    char pa[PATHLEN], pb[PATHLEN];
    size_t i, from = 0;
    uint64_t bm_leaks = 0, dirty_end = 0;
    long long dirty_errs = -1;
    int bad = 0, content_bad = 0, rc;
    memset(&sm, 0, sizeof sm);
    memset(astate, 0, sizeof astate);
    sm.astate = astate;
    memset(&pm, 0, sizeof pm);
    if (sc->backing == BK_RAW && make_raw_base(it, base)) return -1;
    if (sc->backing == BK_QCOW2 && make_qemu_qcow2_base(it)) return -1;
    /* The start state: the model before any op is the prep's content. */
    if (sc->prep && model_init(&pm, sc, base)) abort();
    if (sc->prep == PREP_COMPRESSED) {
        rc = prep_compressed(it, &pm);
    } else {
        char opt[512];
        a_opts(sc, opt, sizeof opt);
        cmd_new(&c, "qemu-img create -f qcow2 -o %s a.qcow2 %llu", opt,
                (ull)sc->size);
        rc = cmd_expect(it, &c, 0, "qemu-img create");
        if (!rc && sc->prep == PREP_BITMAPS)
            rc = prep_bitmaps(it, &pm, &bm_leaks);
        if (!rc && sc->prep == PREP_LAZY)
            rc = prep_lazy(it, &dirty_end, &dirty_errs);
    }
    path_in(pa, it, "a.qcow2");
    path_in(pb, it, "b.qcow2");
    if (!rc && copy_file(pa, pb)) {
        failf(it, "cannot copy %s to %s", pa, pb);
        rc = -1;
    }
    if (!rc && sc->prep == PREP_LAZY)
        rc = lazy_repair(it, dirty_end, dirty_errs, &pm);
    free(pm.d);
    if (rc) return -1;
    /* A: qemu-io batches split by qemu-img resize and qemu-img snapshot. */
    for (i = 0; i <= sc->nops && !bad; i++) {
        if (i < sc->nops && sc->ops[i].kind != OP_GROW &&
            sc->ops[i].kind != OP_AMEND && !is_snap_op(&sc->ops[i]))
            continue;
        if (qemu_batch(it, from, i)) bad = 1;
        if (!bad && i < sc->nops && is_snap_op(&sc->ops[i])) {
            if (qemu_snap_op(it, &sc->ops[i], astate)) bad = 1;
        } else if (!bad && i < sc->nops && sc->ops[i].kind == OP_AMEND) {
            cmd_new(&c, "qemu-img amend -f qcow2 -o compat=%s a.qcow2",
                    sc->ops[i].off == 2 ? "0.10" : "1.1");
            it->amend_qemu_rc = cmd_run(it, &c);
        } else if (!bad && i < sc->nops) {
            cmd_new(&c, "qemu-img resize -f qcow2 a.qcow2 %llu",
                    (ull)sc->ops[i].off);
            if (cmd_expect(it, &c, 0, "qemu-img resize A")) bad = 1;
        }
        from = i + 1;
    }
    if (bad) return -1;
    /* B: qcow2w. */
    rc = ours_side(it, "b.qcow2", base, &bk, &rd, &m, &sm);
    if (rc < 0) return -1;
    if (rc) {
        bad = 1;
    } else {
        /* The stale bitmap clusters of B repaired first (reported). */
        if (sc->prep == PREP_BITMAPS && bitmaps_b_leaks(it, bm_leaks))
            bad = 1;
        if (count_ops(sc, OP_AMEND) && (it->amend_qemu_rc != 0) != it->amend_refused) {
            failf(it, "amend: qemu-img amend exit %d on A, qcow2w %s on B",
                  it->amend_qemu_rc, it->amend_refused ? "refused" : "amended");
            bad = 1;
        }
        cmd_new(&c, "qemu-img compare -f qcow2 -F qcow2 a.qcow2 b.qcow2");
        if (cmd_expect(it, &c, 0, "qemu-img compare A B")) content_bad = 1;
        if (qemu_check(it, "b.qcow2")) bad = 1;
        if (ours_check(it, "b.qcow2")) bad = 1;
        if (qemu_convert_cmp(it, "b.qcow2", "b.raw", &m)) content_bad = 1;
        if (ours_readback(it, "b.qcow2", &m, &bk, sc->backing ? &rd : NULL))
            content_bad = 1;
        /* qcow2w reading and checking qemu's own image A. */
        if (ours_check(it, "a.qcow2")) {
            bad = 1;
            if (qemu_check(it, "a.qcow2") == 0)
                printf("  qemu-img check finds A clean: q2w_check "
                       "disagrees\n");
        }
        if (ours_readback(it, "a.qcow2", &m, &bk, sc->backing ? &rd : NULL))
            content_bad = 1;
        if (content_bad) {
            /* Who disagrees: qemu's own A against the model. */
            printf("  (checking qemu's twin A against the model)\n");
            if (qemu_convert_cmp(it, "a.qcow2", "a.raw", &m) == 0)
                printf("  qemu's A equals the model: the qcow2w side "
                       "differs\n");
            else
                printf("  qemu's A differs from the model too: suspect "
                       "the model\n");
        }
        if (sc->snaps &&
            qemu_snap_compare(it, astate, &sm, &bk, sc->backing ? &rd : NULL))
            bad = 1;
    }
    ours_side_end(it, &bk, &m, &sm);
    return bad || content_bad ? -1 : 0;
}

/* Runs one iteration in a child process, so that a crash or an assertion
 * in qcow2w.h fails this iteration only. Returns 1 when it failed. */
#include "diff_qemu_jobs.h"

static const char *jobs_tool; /* --jobs: the qcow2w tool, an absolute path */

static int run_isolated(it_t *it)
{
    pid_t pid;
    int st = 0;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        failf(it, "fork: %s", strerror(errno));
        return 1;
    }
    if (pid == 0 && it->sc->mode == MODE_JOBS) {
        int bad = run_jobs(it, jobs_tool);
        fflush(stdout);
        exit(bad || it->failed ? 1 : 0);
    }
    if (pid == 0) {
        unsigned char *base = it->sc->backing ? base_content(it->sc) : NULL;
        if (it->sc->mode == MODE_OURS) run_ours(it, base);
        else run_qemu(it, base);
        free(base);
        fflush(stdout);
        exit(it->failed ? 1 : 0);
    }
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) {
            failf(it, "waitpid: %s", strerror(errno));
            return 1;
        }
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 1) return 1; /* reported */
    if (WIFSIGNALED(st))
        failf(it, "the iteration crashed: signal %d (output above)",
              WTERMSIG(st));
    else
        failf(it, "the iteration exited with status %d (sanitizer report "
                  "above?)",
              WEXITSTATUS(st));
    return 1;
}

/* ---- main ------------------------------------------------------------------- */
static int on_path(const char *tool)
{
    const char *path = getenv("PATH");
    char p[PATHLEN];
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        const char *colon = strchr(path, ':');
        size_t n = colon ? (size_t)(colon - path) : strlen(path);
        if (n == 0) snprintf(p, sizeof p, "./%s", tool);
        else snprintf(p, sizeof p, "%.*s/%s", (int)n, path, tool);
        if (access(p, X_OK) == 0) return 1;
        path += n;
        if (*path == ':') path++;
    }
    return 0;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s [--iter N] [--seed S] [--only ours|qemu] [--keep DIR] "
            "[-v] [--ops I,J,..]\n"
            "       [--prep none|compressed|bitmaps|dirty-lazy]\n"
            "       %s --jobs QCOW2W-TOOL [--iter N] [--seed S] [--keep DIR] [-v]\n",
            argv0, argv0);
}

int main(int argc, char **argv)
{
    uint64_t iters = 20, seed0 = 1, i;
    int only = -1, verbose = 0, i_arg, force_prep = -1;
    const char *keep = NULL, *keep_ops = NULL, *tmp;
    char root[PATHLEN];
    unsigned long passed = 0, failed = 0;
    unsigned long nprep[PREP_KINDS][2]; /* qemu-mode iterations: ok, failed */
    double t0;
    memset(nprep, 0, sizeof nprep);
    for (i_arg = 1; i_arg < argc; i_arg++) {
        const char *a = argv[i_arg];
        const char *v = i_arg + 1 < argc ? argv[i_arg + 1] : NULL;
        if (!strcmp(a, "-v")) { verbose++; continue; }
        if (!strcmp(a, "-vv")) { verbose += 2; continue; }
        if (!v) { usage(argv[0]); return 2; }
        if (!strcmp(a, "--iter")) iters = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--seed")) seed0 = strtoull(v, NULL, 0);
        else if (!strcmp(a, "--keep")) keep = v;
        else if (!strcmp(a, "--jobs")) {
            static char tool[PATHLEN], cwd[PATHLEN];
            if (v[0] == '/') snprintf(tool, sizeof tool, "%s", v);
            else if (getcwd(cwd, sizeof cwd)) join_path(tool, cwd, v);
            if (!tool[0] || access(tool, X_OK) != 0) {
                fprintf(stderr, "diff_qemu: --jobs %s: not an executable\n", v);
                return 2;
            }
            jobs_tool = tool;
            only = MODE_JOBS;
        }
        else if (!strcmp(a, "--ops")) keep_ops = v;
        else if (!strcmp(a, "--prep")) {
            for (force_prep = 0; force_prep < PREP_KINDS; force_prep++)
                if (!strcmp(v, prep_names[force_prep])) break;
            if (force_prep == PREP_KINDS) { usage(argv[0]); return 2; }
        }
        else if (!strcmp(a, "--only")) {
            if (!strcmp(v, "ours")) only = MODE_OURS;
            else if (!strcmp(v, "qemu")) only = MODE_QEMU;
            else { usage(argv[0]); return 2; }
        } else { usage(argv[0]); return 2; }
        i_arg++;
    }
    if (!on_path("qemu-img")) {
        printf("diff_qemu: qemu-img not found: differential tests SKIPPED\n");
        return 0;
    }
    if (!on_path("qemu-io")) {
        printf("diff_qemu: qemu-io not found: differential tests SKIPPED\n");
        return 0;
    }
    if (keep) {
        if (mkdir(keep, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "diff_qemu: cannot create %s: %s\n", keep,
                    strerror(errno));
            return 2;
        }
        snprintf(root, sizeof root, "%s", keep);
    } else {
        tmp = getenv("TMPDIR");
        if (!tmp || !*tmp) tmp = "/tmp";
        snprintf(root, sizeof root, "%s/diff_qemu.XXXXXX", tmp);
        if (!mkdtemp(root)) {
            fprintf(stderr, "diff_qemu: mkdtemp %s: %s\n", root,
                    strerror(errno));
            return 2;
        }
    }
    /* Line-buffered, so that what was printed survives an abort(). */
    setvbuf(stdout, NULL, _IOLBF, 0);
    t0 = now_sec();
    for (i = 0; i < iters; i++) {
        static scen_t sc;
        it_t it;
        uint64_t seed = seed0 + i;
        int mode = only >= 0 ? only : (int)(seed & 1);
        double t1 = now_sec();
        if (mode == MODE_JOBS) {
            memset(&sc, 0, sizeof sc);
            sc.seed = seed;
            sc.mode = MODE_JOBS;
        } else {
            gen_scenario(&sc, seed, mode, force_prep);
            filter_ops(&sc, keep_ops);
        }
        memset(&it, 0, sizeof it);
        it.sc = &sc;
        it.verbose = verbose;
        it.blame_end = sc.nops;
        {
            char leaf[64];
            snprintf(leaf, sizeof leaf, "seed-%llu-%s", (ull)seed,
                     mode_names[mode]);
            join_path(it.dir, root, leaf);
        }
        if (mkdir(it.dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "diff_qemu: mkdir %s: %s\n", it.dir,
                    strerror(errno));
            return 2;
        }
        if (verbose > 1) print_scenario(stdout, &sc);
        it.failed = run_isolated(&it);
        if (mode == MODE_QEMU) nprep[sc.prep][it.failed ? 1 : 0]++;
        if (mode == MODE_JOBS) {
            int op, fix;
            jobs_kinds(seed, &op, &fix);
            jobs_count[op][it.failed ? 1 : 0]++;
            jfix_count[fix][it.failed ? 1 : 0]++;
        }
        if (it.failed && mode == MODE_JOBS) {
            failed++;
            printf("  replay: %s --jobs %s --iter 1 --seed %llu\n", argv[0], jobs_tool,
                   (ull)seed);
            printf("  files kept in %s\n", it.dir);
        } else if (it.failed) {
            failed++;
            printf("  scenario (seed=%llu mode=%s):\n", (ull)seed,
                   mode_names[mode]);
            print_scenario(stdout, &sc);
            printf("  replay: %s --iter 1 --seed %llu%s%s%s%s%s%s\n", argv[0],
                   (ull)seed, only >= 0 ? " --only " : "",
                   only >= 0 ? mode_names[only] : "",
                   keep_ops ? " --ops " : "", keep_ops ? keep_ops : "",
                   force_prep >= 0 ? " --prep " : "",
                   force_prep >= 0 ? prep_names[force_prep] : "");
            printf("  files kept in %s\n", it.dir);
        } else {
            passed++;
            if (verbose)
                printf("ok seed=%llu mode=%s v%d cluster=%u rb=%u size=%llu "
                       "backing=%s ops=%zu%s%s%s%s%s (%.0f ms)\n",
                       (ull)seed, mode_names[mode], sc.version, sc.cluster,
                       sc.rbits, (ull)sc.size,
                       sc.backing == BK_RAW     ? "raw"
                       : sc.backing == BK_QCOW2 ? "qcow2"
                                                : "none",
                       sc.nops, sc.snaps ? " snapshots" : "",
                       mode == MODE_QEMU ? " prep=" : "",
                       mode == MODE_QEMU ? prep_names[sc.prep] : "",
                       count_ops(&sc, OP_SNAP_APPLY) ? " with apply" : "",
                       count_ops(&sc, OP_AMEND) ? " with amend" : "",
                       (now_sec() - t1) * 1000.0);
            if (!keep) remove_dir(it.dir);
        }
        fflush(stdout);
    }
    if (only == MODE_JOBS) {
        int k;
        printf("diff_qemu: jobs by operation:");
        for (k = 0; k < JOP_KINDS; k++)
            printf(" %s %lu (%lu failed)%s", jop_names[k], jobs_count[k][0] + jobs_count[k][1],
                   jobs_count[k][1], k + 1 < JOP_KINDS ? "," : "\n");
        printf("diff_qemu: jobs by fixture:");
        for (k = 0; k < JFIX_KINDS; k++)
            printf(" %s %lu (%lu failed)%s", jfix_names[k], jfix_count[k][0] + jfix_count[k][1],
                   jfix_count[k][1], k + 1 < JFIX_KINDS ? "," : "\n");
    }
    if (verbose && only != MODE_JOBS) {
        int k;
        printf("diff_qemu: %.2f s for %llu iterations\n", now_sec() - t0,
               (ull)iters);
        printf("diff_qemu: qemu-mode start states:");
        for (k = 0; k < PREP_KINDS; k++)
            printf(" %s %lu (%lu failed)%s", prep_names[k], nprep[k][0] +
                   nprep[k][1], nprep[k][1], k + 1 < PREP_KINDS ? "," : "\n");
    }
    if (!keep && !failed) rmdir(root);
    else if (failed) printf("diff_qemu: failing iterations kept under %s\n", root);
    printf("diff_qemu: %lu passed, %lu failed\n", passed, failed);
    return failed ? 1 : 0;
}

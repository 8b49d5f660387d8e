/* qcow2_open.c - fuzz target `qcow2_open`: arbitrary bytes as an image file.
 *
 * The input is the file (up to 256 KiB; its last 8 bytes, when there are
 * more than 120, also choose an offset and a fill for the write below).
 * Open, read, check and a small write must not crash, hang or allocate
 * without bound, and every refusal must be a well-formed error:
 *   - a read-only open either succeeds or returns an error code with its
 *     context set (code equal to the return value, a field name);
 *   - reads of the opened image succeed or refuse with METADATA /
 *     UNSUPPORTED, the handle staying usable; a window that reads also
 *     maps (q2w_map), every extent agreeing with the bytes read;
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
 *     (compressed clusters, bitmaps, v2 snapshots) are among the seeds.
 * The read-only open's verdict on the fixed header is the reference
 * rule's (ref_header, written from the spec, not from qcow2w's checks):
 * a refusal names a field the header breaks, with its code and offset,
 * and a header the rule accepts is not refused for a field it owns.
 * Inputs that start with "Q2WTAMPR" are tamper recipes instead (see
 * tamper_run): every size, offset and count field of a valid image set
 * one off, and to the edges of what is valid, each judged by the rule. */
#define _POSIX_C_SOURCE 200809L /* the harness's POSIX mirror: mkstemp, pread */
#include "qcow2w.h"
#include "../testkit/alk_check.h"
#include "../testkit/qcow2_harness.h"

#ifndef Q2W_NO_STDIO
#include <fcntl.h>
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_INPUT (256u << 10)
#define DISK_CAP (24u << 20)
#define WINDOW (256u << 10)

/* The config of an open of d with mem_len bytes of image memory (h's), 16
 * op slots, 8 table slots and no backing file. */
static void image_config_at(qh_handle *h, qh_disk *d, int writable, size_t mem_len,
                            size_t skew, q2w_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    h->mem_len = mem_len + skew;
    h->mem = (unsigned char *)alk_malloc(h->mem_len);
    h->ops = (q2w_op *)alk_malloc(16 * sizeof(q2w_op));
    ALK_CHECK(h->mem && h->ops, "out of memory");
    cfg->mem = h->mem + skew;   /* (skew: memory at an unaligned address) */
    cfg->mem_len = mem_len;
    cfg->ops = h->ops;
    cfg->ops_cap = 16;
    cfg->max_slots = 8;
    cfg->file_size = d->len;
    cfg->writable = writable;
    cfg->no_backing = 1;
    d->ops_cap = 16;
}

static void image_config(qh_handle *h, qh_disk *d, int writable, size_t mem_len,
                         q2w_config *cfg)
{
    image_config_at(h, d, writable, mem_len, 0, cfg);
}

static int open_image_at(qh_handle *h, qh_disk *d, int writable, size_t mem_len, size_t skew)
{
    q2w_config cfg;
    image_config_at(h, d, writable, mem_len, skew, &cfg);
    return qh_run(&h->img, d, q2w_open(&h->img, &cfg));
}

static int open_image_with(qh_handle *h, qh_disk *d, int writable, size_t mem_len)
{
    return open_image_at(h, d, writable, mem_len, 0);
}

/* Enough for 8 slots of the largest cluster size and the buffer for
 * reading a compressed cluster. */
#define OPEN_MEM (12u * (2u << 20) + 8192)

static int open_image(qh_handle *h, qh_disk *d, int writable)
{
    return open_image_with(h, d, writable, OPEN_MEM);
}

static void expect_refusal(const qh_handle *h, int rc, const char *when)
{
    const q2w_error_info *e = q2w_error(&h->img);
    ALK_CHECK(rc < 0 && rc > Q2W_RESULT_END_ - 100, "%s: rc %d", when, rc);
    ALK_CHECK(e->code == rc, "%s: error info code %d, returned %d", when,
              e->code, rc);
    ALK_CHECK(e->what != NULL, "%s: error without a field name", when);
}

/* ---- the header's reference rule --------------------------------------------
 * Written from qemu's docs/interop/qcow2.txt and the limits qcow2w.h
 * documents (QCOW2-FACTS: cluster_bits 9..21, refcount_order 0..6, L1 at
 * most 32 MiB and at least the entries the size needs, refcount table at
 * most 8 MiB and not empty, at most 65,536 snapshots, host offsets below
 * 2^56 and cluster-aligned, a backing name of 1..1023 bytes inside cluster
 * 0 after the header; unknown incompatible bits, external data files,
 * extended L2 and encryption refused as features), field by field and
 * independently of qcow2w's own order of checks: every rule the header
 * breaks is listed with the code and the field name q2w_error must give.
 * The magic, the version, cluster_bits and (v3) header_length decide how
 * the rest is read, so a break there is the only one listed. */
typedef struct ref_break {
    int code;
    const char *what;
    uint64_t offset;
    int has_value;
    uint64_t value; /* q2w_error_info.needed: the offending value */
} ref_break;

typedef struct ref_verdict {
    ref_break brk[16];
    unsigned n;
    int version;
    uint32_t cluster_bits;
    uint64_t incompatible;
    int ext; /* the break is an extension's (the fixed fields are good) */
} ref_verdict;

static uint64_t ref_be(const unsigned char *p, unsigned width)
{
    uint64_t v = 0;
    unsigned i;
    for (i = 0; i < width; i++) v = (v << 8) | p[i];
    return v;
}

/* p's byte at `at` on (width of them), zeros past its plen bytes (as the
 * checker reads a file past its end). */
static uint64_t be_at(const unsigned char *p, size_t plen, uint64_t at, unsigned width)
{
    uint64_t v = 0;
    unsigned i;
    for (i = 0; i < width; i++) v = (v << 8) | (at + i < plen ? p[at + i] : 0);
    return v;
}

/* The header extension at `pos` of cluster 0 (p holding plen bytes of
 * it), as the spec lays them out: a 4-byte type, a 4-byte length and the
 * data padded to 8 bytes, up to `end` (the backing name, or the cluster's
 * end). 1: one, with its *type and *len; 0: the end (type 0, or no room
 * for another); -1: its data runs past `end`. The next is at pos + 8 +
 * the padded length. */
static int ref_ext_at(const unsigned char *p, size_t plen, uint64_t pos, uint64_t end,
                      uint64_t *type, uint64_t *len)
{
    if (pos + 8 > end) return 0;
    *type = be_at(p, plen, pos, 4);
    *len = be_at(p, plen, pos + 4, 4);
    if (*type == 0) return 0;
    return pos + 8 + ((*len + 7) & ~7ull) > end ? -1 : 1;
}

static void ref_add(ref_verdict *v, int code, const char *what, uint64_t off)
{
    ALK_CHECK(v->n < 16, "reference: too many breaks");
    v->brk[v->n].code = code;
    v->brk[v->n].what = what;
    v->brk[v->n].offset = off;
    v->brk[v->n].has_value = 0;
    v->n++;
}

/* The header extensions (ref_ext_at), from the header's end to the
 * backing name (or the cluster's end). A length past the end is refused at its length field (the
 * error's value: the length), a backing format longer than
 * Q2W_MAX_BACKING_FMT likewise; an encryption or external data file
 * extension is a feature qcow2w does not have (offset: the extension,
 * value: its type). The first such extension is the break. */
static void ref_extensions(const unsigned char *p, uint64_t hlen, uint64_t cs,
                           uint64_t bk_off, ref_verdict *v)
{
    uint64_t pos = hlen, end = bk_off && bk_off < cs ? bk_off : cs, type, len;
    const char *what = NULL;
    int k;
    while ((k = ref_ext_at(p, (size_t)cs, pos, end, &type, &len)) != 0) {
        uint64_t off = pos + 4, value = len;
        int code = Q2W_ERR_HEADER;
        if (k < 0)
            what = "header extension length";
        else if (type == 0xe2792acau && len > Q2W_MAX_BACKING_FMT)
            what = "backing format extension";
        else if (type == 0x0537be77u || type == 0x44415441u) {
            code = Q2W_ERR_FEATURE;
            what = type == 0x0537be77u ? "encryption extension" : "data file extension";
            off = pos;
            value = type;
        }
        if (what) {
            ref_add(v, code, what, off);
            v->brk[v->n - 1].has_value = 1;
            v->brk[v->n - 1].value = value;
            v->ext = 1;
            return;
        }
        pos += 8 + ((len + 7) & ~7ull);
    }
}

/* p: the first max(112, cluster) bytes of the file, zeros past its end. */
static void ref_header(const unsigned char *p, ref_verdict *v)
{
    const uint64_t host_limit = 1ull << 56;
    uint64_t cs, size, span, need, l1_size, l1_off, rt_off, rt_clu, nb, sn_off;
    uint64_t bk_off, bk_len, hlen = 72;
    memset(v, 0, sizeof *v);
    if (ref_be(p, 4) != 0x514649fbu) {
        ref_add(v, Q2W_ERR_MAGIC, "header.magic", 0);
        return;
    }
    v->version = (int)ref_be(p + 4, 4);
    if (ref_be(p + 4, 4) != 2 && ref_be(p + 4, 4) != 3) {
        ref_add(v, Q2W_ERR_VERSION, "header.version", 4);
        return;
    }
    v->cluster_bits = (uint32_t)ref_be(p + 20, 4);
    if (v->cluster_bits < 9 || v->cluster_bits > 21) {
        ref_add(v, Q2W_ERR_HEADER, "header.cluster_bits", 20);
        return;
    }
    cs = 1ull << v->cluster_bits;
    if (v->version == 3) {
        uint64_t ct;
        hlen = ref_be(p + 100, 4);
        if (hlen < 104 || hlen % 8 != 0 || hlen > cs) {
            ref_add(v, Q2W_ERR_HEADER, "header.header_length", 100);
            return;
        }
        if (ref_be(p + 96, 4) > 6)
            ref_add(v, Q2W_ERR_HEADER, "header.refcount_order", 96);
        v->incompatible = ref_be(p + 72, 8);
        if (v->incompatible >> 5)
            ref_add(v, Q2W_ERR_FEATURE, "header.incompatible_features", 72);
        if (v->incompatible & 4)
            ref_add(v, Q2W_ERR_FEATURE, "external data file", 72);
        if (v->incompatible & 16)
            ref_add(v, Q2W_ERR_FEATURE, "extended L2 entries", 72);
        /* compression_type exists when the header is longer than 104
         * bytes; non-zero exactly when incompatible bit 3 is set; 0 zlib,
         * 1 zstd, others unknown */
        ct = hlen > 104 ? p[104] : 0;
        if ((ct != 0) != ((v->incompatible & 8) != 0))
            ref_add(v, Q2W_ERR_HEADER, "header.compression_type", 104);
        if (ct > 1)
            ref_add(v, Q2W_ERR_FEATURE, "header.compression_type", 104);
    }
    if (ref_be(p + 32, 4) != 0)
        ref_add(v, Q2W_ERR_FEATURE, "header.crypt_method", 32);
    size = ref_be(p + 24, 8);
    if (size > (1ull << 62))
        ref_add(v, Q2W_ERR_HEADER, "header.size", 24);
    /* entries of the L1 the size needs: one per cs * (cs / 8) bytes */
    span = cs * (cs / 8);
    need = size / span + (size % span != 0);
    l1_size = ref_be(p + 36, 4);
    if (l1_size > (32u << 20) / 8 || l1_size < need)
        ref_add(v, Q2W_ERR_HEADER, "header.l1_size", 36);
    l1_off = ref_be(p + 40, 8);
    if (l1_off % cs != 0 || l1_off >= host_limit || (l1_size && !l1_off))
        ref_add(v, Q2W_ERR_HEADER, "header.l1_table_offset", 40);
    rt_off = ref_be(p + 48, 8);
    rt_clu = ref_be(p + 56, 4);
    if (rt_clu == 0 || rt_clu > (8u << 20) / cs)
        ref_add(v, Q2W_ERR_HEADER, "header.refcount_table_clusters", 56);
    if (rt_off == 0 || rt_off % cs != 0 || rt_off >= host_limit)
        ref_add(v, Q2W_ERR_HEADER, "header.refcount_table_offset", 48);
    nb = ref_be(p + 60, 4);
    sn_off = ref_be(p + 64, 8);
    if (nb > 65536)
        ref_add(v, Q2W_ERR_HEADER, "header.nb_snapshots", 60);
    if (nb && (sn_off == 0 || sn_off % cs != 0 || sn_off >= host_limit))
        ref_add(v, Q2W_ERR_HEADER, "header.snapshots_offset", 64);
    bk_off = ref_be(p + 8, 8);
    bk_len = ref_be(p + 16, 4);
    if (bk_off) {
        if (bk_len == 0 || bk_len > 1023)
            ref_add(v, Q2W_ERR_HEADER, "header.backing_file_size", 16);
        if (bk_off < hlen || bk_off > cs || bk_len > cs - bk_off)
            ref_add(v, Q2W_ERR_HEADER, "header.backing_file_offset", 8);
    }
    if (v->n == 0) ref_extensions(p, hlen, cs, bk_off, v);
}

/* The field names the rule above owns: a refusal naming one of them when
 * the rule finds nothing wrong is a validation bug. */
static int ref_owned_name(const char *what)
{
    static const char *const names[] = {
        "header", "header.magic", "header.version", "header.cluster_bits",
        "header.header_length", "header.refcount_order",
        "header.incompatible_features", "external data file",
        "extended L2 entries", "header.compression_type",
        "header.crypt_method", "header.size", "header.l1_size",
        "header.l1_table_offset", "header.refcount_table_clusters",
        "header.refcount_table_offset", "header.nb_snapshots",
        "header.snapshots_offset", "header.backing_file_size",
        "header.backing_file_offset", "header extension length",
        "backing format extension", "encryption extension", "data file extension"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (what && strcmp(what, names[i]) == 0) return 1;
    return 0;
}

/* qcow2w's verdict on the fixed header (rc and its error info) against
 * the reference: a break listed by the rule, or no refusal the rule owns. */
static void ref_judge(const ref_verdict *v, int rc, const q2w_error_info *e,
                      const char *when)
{
    unsigned i;
    if (v->n == 0) {
        ALK_CHECK(rc == Q2W_OK || !ref_owned_name(e->what),
                  "%s: a valid header refused: %s (%s at %llu)", when,
                  q2w_strerror(rc), e->what ? e->what : "",
                  (unsigned long long)e->offset);
        return;
    }
    /* (a header field is no table entry: index 0; an extension's break
     * gives its value, in `needed`: its length or its type) */
    for (i = 0; i < v->n; i++)
        if (rc == v->brk[i].code && e->what &&
            strcmp(e->what, v->brk[i].what) == 0 &&
            e->offset == v->brk[i].offset && e->index == 0 &&
            (!v->brk[i].has_value || e->needed == v->brk[i].value))
            return;
    for (i = 0; i < v->n; i++)
        alk_trace("reference: %s %s at %llu", q2w_strerror(v->brk[i].code),
                  v->brk[i].what, (unsigned long long)v->brk[i].offset);
    ALK_CHECK(0, "%s: %s (%s at %llu), the reference finds %u break(s), "
              "first %s (%s)", when, q2w_strerror(rc), e->what ? e->what : "",
              (unsigned long long)e->offset, v->n,
              q2w_strerror(v->brk[0].code), v->brk[0].what);
}

/* ---- tamper mode ------------------------------------------------------------
 * An input that starts with TAMPER_MAGIC (no image does) is a recipe: byte
 * 8 picks a valid base image made here, byte 9 a header field (0xff: all
 * of them) and the 8 bytes after it, when there, one more value to try.
 * Each field is set to its value -1 and +1, to 0, 1 and all ones, and to
 * the values at the edges of what is valid; each such image is opened
 * read-only and writable and sized for the checker, and qcow2w's verdict
 * must be the reference rule's (ref_judge). When the rule accepts a field
 * whose value nothing else reads at open, the open must succeed and report
 * the value as it is in the header. */
#define TAMPER_MAGIC "Q2WTAMPR"

typedef struct tamper_field {
    const char *name;
    unsigned off, width;
    int later; /* other parts of open read what it says: extensions, the
                  snapshot table, the geometry of everything */
} tamper_field;

static const tamper_field tamper_fields[] = {
    {"magic", 0, 4, 0},
    {"version", 4, 4, 1},
    {"backing_file_offset", 8, 8, 1},
    {"backing_file_size", 16, 4, 1},
    {"cluster_bits", 20, 4, 1},
    {"size", 24, 8, 0},
    {"crypt_method", 32, 4, 0},
    {"l1_size", 36, 4, 0},
    {"l1_table_offset", 40, 8, 0},
    {"refcount_table_offset", 48, 8, 0},
    {"refcount_table_clusters", 56, 4, 0},
    {"nb_snapshots", 60, 4, 1},
    {"snapshots_offset", 64, 8, 1},
    {"incompatible_features", 72, 8, 0},
    {"compatible_features", 80, 8, 0},
    {"autoclear_features", 88, 8, 0},
    {"refcount_order", 96, 4, 0},
    {"header_length", 100, 4, 1},
    {"compression_type", 104, 1, 0},
};
#define N_TAMPER_FIELDS (sizeof tamper_fields / sizeof tamper_fields[0])

static void tamper_put(unsigned char *p, unsigned width, uint64_t v)
{
    unsigned i;
    for (i = 0; i < width; i++) p[width - 1 - i] = (unsigned char)(v >> (8 * i));
}

/* Bases: versions, cluster sizes, refcount widths, sizes that are and are
 * not a multiple of what an L1 entry covers, backing names (v2 and v3,
 * with and without a format extension), snapshots. */
static void tamper_base(qh_disk *d, unsigned which)
{
    q2w_create_opts o;
    int rc;
    memset(&o, 0, sizeof o);
    switch (which % 6) {
    case 0: o.version = 3; o.cluster_size = 512; o.size = (256u << 10) + 512; break;
    case 1: o.version = 2; o.cluster_size = 4096; o.size = 1u << 20; break;
    case 2:
        o.version = 3; o.cluster_size = 65536; o.refcount_bits = 64;
        o.size = 3u << 20; o.backing = "backing.img"; o.backing_fmt = "raw";
        break;
    case 3: o.version = 3; o.cluster_size = 4096; o.size = 1u << 20; break;
    case 4: o.version = 3; o.cluster_size = 2u << 20; o.refcount_bits = 1;
        o.size = 4u << 20; break;
    default:
        o.version = 2; o.cluster_size = 512; o.size = 64u << 10;
        o.backing = "b"; break;
    }
    rc = qh_create(d, &o);
    ALK_CHECK(d->len >= 112, "tamper base %u: %zu bytes", which % 6, d->len);
    ALK_CHECK(rc == Q2W_OK, "tamper base %u: %s", which % 6, q2w_strerror(rc));
    if (which % 6 == 3) { /* two snapshots over written data */
        qh_handle h;
        static const unsigned char data[4096] = {1, 2, 3};
        d->cluster_size = 4096;
        rc = qh_open(&h, d, 4096, 8, 16, 1, 0);
        if (rc == Q2W_OK) rc = qh_run(&h.img, d, q2w_write(&h.img, 8192, data, sizeof data));
        if (rc == Q2W_OK) rc = qh_run(&h.img, d, q2w_snapshot_create(&h.img, "a", 1, 2, 3));
        if (rc == Q2W_OK) rc = qh_run(&h.img, d, q2w_write(&h.img, 0, data, sizeof data));
        if (rc == Q2W_OK) rc = qh_run(&h.img, d, q2w_snapshot_create(&h.img, "b", 4, 5, 6));
        if (rc == Q2W_OK) rc = qh_run(&h.img, d, q2w_close(&h.img));
        ALK_CHECK(rc == Q2W_OK, "tamper base 3: %s", q2w_strerror(rc));
        qh_close_handle(&h);
        d->cluster_size = 0;
    }
}

/* The values field f of the base header p is tried with. */
static size_t tamper_values(const tamper_field *f, const unsigned char *p,
                            uint64_t *out)
{
    uint64_t v = ref_be(p + f->off, f->width), cs = 1ull << ref_be(p + 20, 4);
    uint64_t ones = f->width == 8 ? ~0ull : (1ull << (8 * f->width)) - 1;
    uint64_t span = cs * (cs / 8), hlen = ref_be(p + 4, 4) == 3 ?
                                          ref_be(p + 100, 4) : 72;
    size_t n = 0;
    out[n++] = (v - 1) & ones;
    out[n++] = (v + 1) & ones;
    out[n++] = 0;
    out[n++] = 1;
    out[n++] = ones;
    switch (f->off) {
    case 4: out[n++] = 2; out[n++] = 3; break;
    case 20: out[n++] = 8; out[n++] = 9; out[n++] = 21; out[n++] = 22; break;
    case 24: { /* the largest size the L1 covers and one byte more, the
                  size limit, sizes whose L1 need overflows naively */
        uint64_t l1 = ref_be(p + 36, 4);
        out[n++] = l1 * span; out[n++] = l1 * span + 1;
        out[n++] = 1ull << 62; out[n++] = (1ull << 62) + 1;
        out[n++] = ~0ull - span + 2; out[n++] = 4 * span * ((32u << 20) / 8);
        break;
    }
    case 36: {
        uint64_t sz = ref_be(p + 24, 8), need = sz / span + (sz % span != 0);
        out[n++] = need - 1; out[n++] = need; out[n++] = (32u << 20) / 8;
        out[n++] = (32u << 20) / 8 + 1;
        break;
    }
    case 8: /* around the header's end and the cluster's end */
        out[n++] = hlen - 1; out[n++] = hlen; out[n++] = hlen + 8;
        out[n++] = cs - ref_be(p + 16, 4); out[n++] = cs - ref_be(p + 16, 4) + 1;
        out[n++] = cs;
        break;
    case 16: {
        uint64_t bo = ref_be(p + 8, 8);
        out[n++] = 1023; out[n++] = 1024;
        if (bo && bo <= cs) { out[n++] = cs - bo; out[n++] = cs - bo + 1; }
        break;
    }
    case 40: case 48: case 64: /* cluster steps, the host offset limit */
        out[n++] = v + cs; out[n++] = v ? v - cs : cs;
        out[n++] = (1ull << 56) - cs; out[n++] = 1ull << 56;
        out[n++] = v + cs / 2;
        break;
    case 56:
        out[n++] = (8u << 20) / cs; out[n++] = (8u << 20) / cs + 1;
        break;
    case 60: out[n++] = 65536; out[n++] = 65537; break;
    case 72: { /* each bit alone, on top of what is there */
        unsigned b;
        for (b = 0; b < 7; b++) out[n++] = v | (1ull << b);
        out[n++] = v | (1ull << 63);
        break;
    }
    case 96: out[n++] = 6; out[n++] = 7; break;
    case 100:
        out[n++] = 103; out[n++] = 104; out[n++] = 105; out[n++] = 112;
        out[n++] = 120; out[n++] = cs; out[n++] = cs + 8;
        break;
    case 104: out[n++] = 2; break;
    default: break;
    }
    return n;
}

/* The backing name and format an open reports (info) against the header
 * (head: its first 2 MiB, zeros past the file) and the extensions. */
static void judge_backing(const qh_disk *d, const unsigned char *head, const ref_verdict *v,
                          const q2w_info *info, const char *when)
{
    /* the backing name where the header puts it; its format from
     * the extension of type 0xe2792aca, walked from the header's
     * end (72 in version 2) to the name's offset, or the end of
     * the cluster; no name at offset 0 */
    const unsigned char *b = d->buf;
    uint64_t boff = ref_be(head + 8, 8), blen = ref_be(head + 16, 4);
    uint64_t pos = v->version == 2 ? 72 : ref_be(head + 100, 4);
    uint64_t cs = 1ull << v->cluster_bits;
    const unsigned char *fmt = NULL;
    size_t fmt_len = 0;
    uint64_t ext_end = boff ? boff : cs; /* qemu reads them up to the name */
    while (pos + 8 <= ext_end && pos + 8 <= d->len) {
        uint64_t type = ref_be(b + pos, 4), len = ref_be(b + pos + 4, 4);
        if (type == 0 || pos + 8 + len > d->len) break;
        if (type == 0xe2792acau) {
            fmt = b + pos + 8;
            fmt_len = (size_t)len;
        }
        pos += 8 + ((len + 7) & ~7ull);
    }
    ALK_CHECK(boff && blen ? info->backing_name && info->backing_name[blen] == 0 &&
                         !memcmp(info->backing_name, b + boff, (size_t)blen)
                   : info->backing_name == NULL,
              "%s: the backing name differs from the header's", when);
    ALK_CHECK(fmt ? info->backing_format && info->backing_format[fmt_len] == 0 &&
                        !memcmp(info->backing_format, fmt, fmt_len)
                  : info->backing_format == NULL,
              "%s: the backing format differs from the extension's", when);
}

static int tamper_open(qh_disk *d, int writable, qh_handle *h)
{
    uint64_t cb = ref_be(d->buf + 20, 4);
    size_t cs = cb >= 9 && cb <= 21 ? (size_t)1 << cb : 512;
    return open_image_with(h, d, writable, 12 * (cs + 64) + 8192);
}

/* One tampered image: the read-only and the writable open and the
 * checker's sizing against the rule. */
static void tamper_judge(qh_disk *d, const tamper_field *f, uint64_t value)
{
    unsigned char *head = (unsigned char *)alk_calloc(1, 1u << 21);
    ref_verdict v;
    qh_handle h;
    char when[96];
    int rc;
    uint64_t writes = d->writes;
    size_t n = d->len < (1u << 21) ? d->len : (1u << 21);
    ALK_CHECK(head != NULL, "out of memory");
    memcpy(head, d->buf, n);
    ref_header(head, &v);
    alk_trace("%s = %llu: %u break(s)", f->name, (unsigned long long)value,
              v.n);
    snprintf(when, sizeof when, "%s = %llu, read-only open", f->name,
             (unsigned long long)value);
    rc = tamper_open(d, 0, &h);
    ref_judge(&v, rc, q2w_error(&h.img), when);
    if (v.n == 0 && rc == Q2W_OK) {
        q2w_info info;
        q2w_info_get(&h.img, &info);
        ALK_CHECK(info.size == ref_be(head + 24, 8) &&
                      info.l1_size == ref_be(head + 36, 4) &&
                      info.l1_offset == ref_be(head + 40, 8) &&
                      info.refcount_table_offset == ref_be(head + 48, 8) &&
                      info.refcount_table_clusters == ref_be(head + 56, 4) &&
                      info.nb_snapshots == ref_be(head + 60, 4) &&
                      info.cluster_size == 1u << v.cluster_bits &&
                      info.version == v.version &&
                      info.snapshots_offset == ref_be(head + 64, 8) &&
                      (v.version == 2 ||
                       (info.refcount_bits == 1u << ref_be(head + 96, 4) &&
                        info.incompatible == v.incompatible &&
                        info.compatible == ref_be(head + 80, 8) &&
                        info.autoclear == ref_be(head + 88, 8) &&
                        info.header_length == ref_be(head + 100, 4))),
                  "%s: the open reports other values than the header's",
                  when);
        judge_backing(d, head, &v, &info, when);
    }
    /* (a version 2 header ends at 72: extensions follow) */
    ALK_CHECK(v.n != 0 || f->later || (v.version == 2 && f->off >= 72) ||
                  rc == Q2W_OK,
              "%s: %s (%s) for a header the rule accepts", when,
              q2w_strerror(rc), q2w_error(&h.img)->what);
    qh_close_handle(&h);
    {
        int ro = rc;
        snprintf(when, sizeof when, "%s = %llu, writable open", f->name,
                 (unsigned long long)value);
        rc = tamper_open(d, 1, &h);
        if (ro != Q2W_OK) {
            ref_judge(&v, rc, q2w_error(&h.img), when);
        } else {
            /* corrupt refuses writing, then dirty (lazy refcounts) */
            int want = (v.incompatible & 2) ? Q2W_ERR_CORRUPT
                     : (v.incompatible & 1) ? Q2W_ERR_DIRTY : Q2W_OK;
            ALK_CHECK(rc == want, "%s: %s, expected %s", when,
                      q2w_strerror(rc), q2w_strerror(want));
            ALK_CHECK(rc == Q2W_OK ||
                          (strcmp(q2w_error(&h.img)->what,
                                  "header.incompatible_features") == 0 &&
                           q2w_error(&h.img)->offset == 72),
                      "%s: %s names %s", when, q2w_strerror(rc),
                      q2w_error(&h.img)->what);
        }
        if (rc == Q2W_OK && f->off == 60 && value == Q2W_MAX_SNAPSHOTS) {
            /* at the most snapshots there may be, one more is refused
             * (LIMIT, naming the count) before anything is planned */
            size_t nb;
            int src = q2w_snapshot_create(&h.img, "one-more", 1, 2, 3);
            q2w_batch(&h.img, &nb);
            ALK_CHECK(src == Q2W_ERR_LIMIT && nb == 0 &&
                          q2w_error(&h.img)->offset == 60 &&
                          q2w_error(&h.img)->index == Q2W_MAX_SNAPSHOTS,
                      "%s: snapshot %u: %s, %zu ops", when, Q2W_MAX_SNAPSHOTS + 1,
                      q2w_strerror(src), nb);
        }
        if (rc == Q2W_OK) {
            rc = qh_run(&h.img, d, q2w_close(&h.img));
            ALK_CHECK(rc == Q2W_OK, "%s: close: %s", when, q2w_strerror(rc));
        }
        /* opening and closing without a change writes nothing */
        ALK_CHECK(d->writes == writes, "%s: %llu writes", when,
                  (unsigned long long)(d->writes - writes));
        qh_close_handle(&h);
    }
    {
        q2w_io io;
        q2w_error_info e;
        size_t need;
        memset(&e, 0, sizeof e);
        qh_make_io(d, &io);
        rc = q2w_check_work_size(&io, &need, &e);
        snprintf(when, sizeof when, "%s = %llu, checker", f->name,
                 (unsigned long long)value);
        /* (sizing reads the fixed fields only: the extensions are the
         * check's) */
        ALK_CHECK(v.n && !v.ext ? rc != Q2W_OK : rc == Q2W_OK, "%s: %s", when,
                  q2w_strerror(rc));
        if (v.n && !v.ext) ref_judge(&v, rc, &e, when);
    }
    alk_free(head);
}

static void tamper_run(const uint8_t *data, size_t size)
{
    qh_disk d;
    unsigned char pristine[112];
    unsigned which = size > 8 ? data[8] : 0, fi;
    unsigned pick = size > 9 ? data[9] : 0xff;
    qh_disk_init(&d, 16u << 20);
    tamper_base(&d, which);
    memcpy(pristine, d.buf, sizeof pristine);
    alk_trace("tamper base %u, field %u", which % 6, pick);
    for (fi = 0; fi < N_TAMPER_FIELDS; fi++) {
        const tamper_field *f = &tamper_fields[fi];
        uint64_t values[32];
        size_t n, k;
        if (pick != 0xff && pick % N_TAMPER_FIELDS != fi) continue;
        n = tamper_values(f, pristine, values);
        if (size >= 18) values[n++] = ref_be(data + 10, 8);
        for (k = 0; k < n; k++) {
            tamper_put(d.buf + f->off, f->width, values[k]);
            tamper_judge(&d, f, values[k]);
            memcpy(d.buf, pristine, sizeof pristine);
        }
    }
    qh_disk_free(&d);
}

/* A v3 image of 512-byte clusters created at `size` with `bits`-bit
 * refcounts is exactly consistent. */
static void check_created(uint64_t size, unsigned bits)
{
    qh_disk d;
    int rc = qh_make(&d, 16u << 20, 3, 512, bits, size, NULL, NULL);
    ALK_CHECK(rc == Q2W_OK, "create %llu bytes, %u-bit refcounts: %s",
              (unsigned long long)size, bits, q2w_strerror(rc));
    qh_assert_consistent(&d, 1, "a created image");
    {
        /* the smallest layout: header, t refcount-table clusters, b
         * blocks and the L1's n1 clusters, with the b blocks counting all
         * 1 + t + b + n1 clusters and the table holding b entries */
        uint64_t epb = 512u * 8u / bits, l1e = (size + (512u * 64u) - 1) / (512u * 64u);
        uint64_t n1 = (l1e * 8 + 511) / 512, t, b, best = 0, bt = 0;
        for (t = 1; t <= 1024; t++)
            for (b = 1; b <= t * 64; b++)
                if (b * epb >= 1 + t + b + n1) {
                    if (!best || 1 + t + b + n1 < best) { best = 1 + t + b + n1; bt = t; }
                    break;
                }
        ALK_CHECK(best && d.len == best * 512 && q2w__be32(d.buf + 56) == bt,
                  "create %llu bytes, %u-bit refcounts: %zu bytes, %u table "
                  "clusters; the smallest layout: %llu clusters, %llu table clusters",
                  (unsigned long long)size, bits, d.len, q2w__be32(d.buf + 56),
                  (unsigned long long)best, (unsigned long long)bt);
    }
    qh_disk_free(&d);
}

/* Images whose own metadata outgrows one refcount-table cluster, the
 * point where create's layout must count its tables in what they describe:
 * 64- and 32-bit refcounts, virtual sizes around the L1 that needs a
 * second (and third) table cluster; and for every width, L1 tables of
 * about as many clusters as one refcount block counts (2 MiB of disk per
 * L1 cluster), where the header, tables and L1 just fill or just overflow
 * a block. Once per process. */
static int create_geometry_checked;

static void check_create_geometry(void)
{
    static const uint64_t sizes[] = {7ull << 30, 8ull << 30, (8ull << 30) + (1u << 29),
                                     16ull << 30};
    unsigned order;
    size_t j;
    if (create_geometry_checked) return;
    create_geometry_checked = 1;
    for (order = 0; order <= 6; order++) {
        uint64_t epb = 512u * 8u >> order, n1;
        for (n1 = epb - 4; n1 <= epb + 1; n1++)
            check_created(n1 << 21, 1u << order);
    }
    for (order = 5; order <= 6; order++)
        for (j = 0; j < sizeof sizes / sizeof sizes[0]; j++)
            check_created(sizes[j], 1u << order);
    /* 64-bit refcounts, an L1 of 4030 clusters: 64 blocks, whose 512
     * bytes of table entries fill exactly one table cluster */
    check_created(4030ull << 21, 64);
    {
        /* create refuses backing names and formats that cannot be
         * written: empty, too long, a format without a backing file, a
         * name that does not fit in cluster 0 - naming the field and the
         * length */
        static char longname[Q2W_MAX_BACKING_NAME + 2];
        struct { const char *backing, *fmt, *what; int code; uint64_t needed; } c[9];
        q2w_create_opts o;
        q2w_error_info e;
        uint64_t len;
        memset(longname, 'b', sizeof longname - 1);
        c[0].backing = ""; c[0].fmt = NULL; c[0].what = "backing"; c[0].code = Q2W_ERR_ARG;
        c[0].needed = 0;
        c[1].backing = longname; c[1].fmt = NULL; c[1].what = "backing";
        c[1].code = Q2W_ERR_ARG; c[1].needed = Q2W_MAX_BACKING_NAME + 1;
        c[2].backing = "b"; c[2].fmt = ""; c[2].what = "backing_fmt"; c[2].code = Q2W_ERR_ARG;
        c[2].needed = 0;
        c[3].backing = "b"; c[3].fmt = "0123456789abcdef"; c[3].what = "backing_fmt";
        c[3].code = Q2W_ERR_ARG; c[3].needed = 16;
        c[4].backing = NULL; c[4].fmt = "raw"; c[4].what = "backing_fmt";
        c[4].code = Q2W_ERR_ARG; c[4].needed = 3;
        c[5].backing = longname + sizeof longname - 1 - 500; c[5].fmt = NULL;
        c[5].what = "backing name does not fit in cluster 0"; c[5].code = Q2W_ERR_LIMIT;
        c[5].needed = 112 + 8 + 500;
        /* and a name of exactly the longest length is fine (64 KiB clusters) */
        c[6].backing = longname + 1; c[6].fmt = NULL; c[6].what = NULL; c[6].code = Q2W_OK;
        c[6].needed = 0;
        /* and the virtual size: at most 2^62 (qemu's limit), 2^62 itself
         * then too large an L1 (64 KiB clusters: 2^33 entries) */
        c[7].backing = NULL; c[7].fmt = NULL; c[7].what = "size"; c[7].code = Q2W_ERR_LIMIT;
        c[7].needed = (1ull << 62) + 1;
        c[8].backing = NULL; c[8].fmt = NULL; c[8].what = "size (L1 table)";
        c[8].code = Q2W_ERR_LIMIT; c[8].needed = 1ull << 62;
        for (j = 0; j < 9; j++) {
            int rc;
            memset(&o, 0, sizeof o);
            o.version = 3;
            o.cluster_size = j >= 6 ? 65536 : 512;
            o.size = j >= 7 ? c[j].needed : 1u << 20;
            o.backing = c[j].backing;
            o.backing_fmt = c[j].fmt;
            memset(&e, 0xA5, sizeof e);
            rc = q2w_create(&o, NULL, 0, &len, &e);
            ALK_CHECK(c[j].code == Q2W_OK
                          ? rc == Q2W_OK
                          : rc == c[j].code && e.code == rc && e.what &&
                                !strcmp(e.what, c[j].what) && e.needed == c[j].needed &&
                                e.offset == 0 && e.index == 0,
                      "create with backing case %zu: %s (%s, offset %llu, %llu)", j,
                      q2w_strerror(rc), e.what ? e.what : "", (unsigned long long)e.offset,
                      (unsigned long long)e.needed);
        }
    }
    {
        /* snapshot ids count up past one digit: the eleventh is "11" */
        qh_disk d;
        qh_handle h;
        q2w_create_opts o;
        char name[8];
        int rc;
        memset(&o, 0, sizeof o);
        o.version = 3;
        o.cluster_size = 512;
        o.size = 64u << 10;
        qh_disk_init(&d, 4u << 20);
        rc = qh_create(&d, &o);
        if (rc == Q2W_OK) rc = qh_open(&h, &d, 512, 8, 16, 1, 0);
        for (j = 0; j < 11 && rc == Q2W_OK; j++) {
            snprintf(name, sizeof name, "s%zu", j);
            rc = qh_run(&h.img, &d, q2w_snapshot_create(&h.img, name, 0, 0, 0));
        }
        for (j = 0; j < 11 && rc == Q2W_OK; j++) {
            q2w_snapshot sn;
            char want[8];
            rc = qh_run(&h.img, &d, q2w_snapshot_get(&h.img, (uint32_t)j, &sn));
            snprintf(want, sizeof want, "%zu", j + 1);
            ALK_CHECK(rc != Q2W_OK || !strcmp(sn.id, want), "snapshot %zu has id %s, not %s",
                      j, sn.id, want);
        }
        ALK_CHECK(rc == Q2W_OK, "eleven snapshots: %s", q2w_strerror(rc));
        qh_close_handle(&h);
        qh_disk_free(&d);
    }
}

/* One refusal: its code and error fields, nothing planned. */
static void expect_error(q2w_image *img, int rc, int code, const char *what,
                         uint64_t offset, uint64_t index, const char *when)
{
    const q2w_error_info *e = q2w_error(img);
    size_t nb;
    q2w_batch(img, &nb);
    ALK_CHECK(rc == code && e->code == code && e->what && !strcmp(e->what, what) &&
                  e->offset == offset && e->index == index && nb == 0,
              "%s: %d (%s, %llu, %llu, %zu ops), want %d (%s, %llu, %llu)", when, rc,
              e->what ? e->what : "", (unsigned long long)e->offset,
              (unsigned long long)e->index, nb, code, what,
              (unsigned long long)offset, (unsigned long long)index);
}

/* Every listed snapshot against its table entry read here from the spec:
 * l1 offset and size, id and name lengths at 12 and 14, dates at 16 and
 * 20, the VM clock at 24, the 32-bit VM state size at 32, the extra data's
 * size at 36; in the extra data the 64-bit VM state size (when it has 8
 * bytes or more: it then replaces the one at 32) and the disk size (16
 * bytes or more); then id, name, and padding to 8 bytes. */
static void check_snapshot_entries(qh_handle *h, qh_disk *d, const q2w_info *info)
{
    const unsigned char *b = d->buf;
    uint64_t pos = q2w__be64(b + 64);
    uint32_t i;
    for (i = 0; i < info->nb_snapshots; i++) {
        q2w_snapshot sn;
        const unsigned char *e;
        uint32_t extra, idl, nml;
        uint64_t len;
        int rc;
        if (pos > d->len || d->len - pos < 40) return;
        e = b + pos;
        extra = q2w__be32(e + 36);
        idl = q2w__be16(e + 12);
        nml = q2w__be16(e + 14);
        len = (40u + (uint64_t)extra + idl + nml + 7) & ~7ull;
        if (len > d->len - pos) return;
        rc = qh_run(&h->img, d, q2w_snapshot_get(&h->img, i, &sn));
        /* the open walked every entry already; a get refuses exactly an
         * id or a name longer than q2w_snapshot holds (with its NUL) */
        if (idl >= sizeof sn.id || nml >= sizeof sn.name) {
            ALK_CHECK(rc == Q2W_ERR_LIMIT, "snapshot %u: an id of %u bytes, a name of %u: %s",
                      i, idl, nml, q2w_strerror(rc));
            return;
        }
        ALK_CHECK(rc == Q2W_OK, "snapshot %u (entry at %llu): %s", i, (unsigned long long)pos,
                  q2w_strerror(rc));
        ALK_CHECK(sn.index == i && sn.l1_offset == q2w__be64(e) &&
                      sn.l1_size == q2w__be32(e + 8) && sn.date_sec == q2w__be32(e + 16) &&
                      sn.date_nsec == q2w__be32(e + 20) &&
                      sn.vm_clock_ns == q2w__be64(e + 24) &&
                      sn.vm_state_size ==
                          (extra >= 8 ? q2w__be64(e + 40) : q2w__be32(e + 32)) &&
                      sn.disk_size == (extra >= 16 ? q2w__be64(e + 48) : 0) &&
                      sn.id_len == idl && !memcmp(sn.id, e + 40 + extra, idl) &&
                      !sn.id[idl] && sn.name_len == nml &&
                      !memcmp(sn.name, e + 40 + extra + idl, nml) && !sn.name[nml] &&
                      sn.entry_offset == pos - q2w__be64(b + 64) && sn.entry_len == len,
                  "snapshot %u (entry at %llu, extra %u) differs from its entry", i,
                  (unsigned long long)pos, extra);
        pos += len;
    }
}

/* The memory an open needs, at an aligned address and one byte past one
 * (the carve aligns its start: up to 7 bytes more): opened with 1 byte, a
 * NOMEM names `needed`; one byte less is NOMEM naming the same, `needed`
 * opens. The unaligned floor is 7 bytes above the aligned one (the
 * memory from malloc is 8-byte aligned). Returns the aligned floor. */
static uint64_t check_open_memory(qh_disk *d)
{
    uint64_t n[2];
    size_t skew;
    qh_handle t;
    int rc;
    for (skew = 0; skew < 2; skew++) {
        rc = open_image_at(&t, d, 0, 1, skew);
        n[skew] = q2w_error(&t.img)->needed;
        qh_close_handle(&t);
        ALK_CHECK(rc == Q2W_ERR_NOMEM && n[skew] > 1,
                  "open with 1 byte of memory at skew %zu: %s, needed %llu", skew,
                  q2w_strerror(rc), (unsigned long long)n[skew]);
        rc = open_image_at(&t, d, 0, (size_t)n[skew] - 1, skew);
        ALK_CHECK(rc == Q2W_ERR_NOMEM && q2w_error(&t.img)->needed == n[skew],
                  "open with one byte less than the %llu needed (skew %zu): %s, needed %llu",
                  (unsigned long long)n[skew], skew, q2w_strerror(rc),
                  (unsigned long long)q2w_error(&t.img)->needed);
        qh_close_handle(&t);
        rc = open_image_at(&t, d, 0, (size_t)n[skew], skew);
        ALK_CHECK(rc == Q2W_OK, "open with the %llu bytes it asked (skew %zu): %s",
                  (unsigned long long)n[skew], skew, q2w_strerror(rc));
        qh_close_handle(&t);
    }
    ALK_CHECK(n[1] == n[0] + 7, "open's floor at an unaligned address: %llu, aligned %llu",
              (unsigned long long)n[1], (unsigned long long)n[0]);
    return n[0];
}

/* The memory a compressed cluster needs: opened with the least memory an
 * open takes (n0, check_open_memory's), a read inside a compressed
 * cluster asks for `needed`; one
 * byte less still cannot read it, `needed` can, and reads what a roomy
 * handle read. */
static void check_compressed_memory(qh_handle *h, qh_disk *d, const q2w_info *info,
                                    uint64_t n0)
{
    q2w_extent x;
    uint64_t pos = 0, n1;
    unsigned char want = 0, got = 0;
    unsigned k;
    qh_handle t;
    int rc;
    for (k = 0; k < 256 && pos < info->size; k++, pos += x.len) {
        rc = qh_run(&h->img, d, q2w_map(&h->img, pos, info->size - pos, &x));
        if (rc != Q2W_OK || x.kind == Q2W_EXTENT_COMPRESSED) break;
    }
    if (k == 256 || pos >= info->size || rc != Q2W_OK ||
        qh_run(&h->img, d, q2w_read(&h->img, pos, &want, 1)) != Q2W_OK)
        return;
    rc = open_image_with(&t, d, 0, (size_t)n0);
    ALK_CHECK(rc == Q2W_OK, "open with the %llu bytes it asked: %s", (unsigned long long)n0,
              q2w_strerror(rc));
    rc = qh_run(&t.img, d, q2w_read(&t.img, pos, &got, 1));
    n1 = q2w_error(&t.img)->needed;
    qh_close_handle(&t);
    if (rc == Q2W_OK) {
        ALK_CHECK(got == want, "compressed byte at %llu", (unsigned long long)pos);
        return; /* the least memory already holds the buffer */
    }
    ALK_CHECK(rc == Q2W_ERR_NOMEM && n1 > n0 &&
                  !strcmp(q2w_error(&t.img)->what, "cfg.mem: compressed cluster buffer"),
              "compressed read with %llu bytes of memory: %s (%s), needed %llu",
              (unsigned long long)n0, q2w_strerror(rc), q2w_error(&t.img)->what,
              (unsigned long long)n1);
    rc = open_image_with(&t, d, 0, (size_t)n1 - 1);
    ALK_CHECK(rc == Q2W_OK, "open with %llu bytes: %s", (unsigned long long)n1 - 1,
              q2w_strerror(rc));
    rc = qh_run(&t.img, d, q2w_read(&t.img, pos, &got, 1));
    ALK_CHECK(rc == Q2W_ERR_NOMEM && q2w_error(&t.img)->needed == n1,
              "compressed read with one byte less than needed (%llu): %s, needed %llu",
              (unsigned long long)n1, q2w_strerror(rc),
              (unsigned long long)q2w_error(&t.img)->needed);
    /* the next error is the handle's own: no `needed` left from the NOMEM */
    rc = q2w_read(&t.img, info->size, &got, 1);
    ALK_CHECK(rc == Q2W_ERR_RANGE && q2w_error(&t.img)->needed == 0,
              "a read past the end after a NOMEM: %s, needed %llu", q2w_strerror(rc),
              (unsigned long long)q2w_error(&t.img)->needed);
    qh_close_handle(&t);
    rc = open_image_with(&t, d, 0, (size_t)n1);
    ALK_CHECK(rc == Q2W_OK, "open with %llu bytes: %s", (unsigned long long)n1,
              q2w_strerror(rc));
    rc = qh_run(&t.img, d, q2w_read(&t.img, pos, &got, 1));
    ALK_CHECK(rc == Q2W_OK && got == want,
              "compressed read with the %llu bytes needed: %s", (unsigned long long)n1,
              q2w_strerror(rc));
    qh_close_handle(&t);
}

/* c: a new disk of cap bytes holding d's file. */
static void disk_copy(qh_disk *c, const qh_disk *d, size_t cap)
{
    qh_disk_init(c, cap);
    qh_disk_reserve(c, d->len);
    memcpy(c->buf, d->buf, d->len);
    c->len = d->len;
}

/* The file's bytes at `at`, zeros past its end (as the checker reads). */
static uint64_t disk_be(const qh_disk *d, uint64_t at, unsigned width)
{
    return be_at(d->buf, d->len, at, width);
}

/* The refcount of cluster cl as the file's refcount table and block say
 * (0 where either is missing or out of the file). */
static uint64_t file_refcount(const qh_disk *d, uint64_t cl)
{
    uint64_t cs = 1ull << (disk_be(d, 20, 4) & 63), rt = disk_be(d, 48, 8), blk;
    uint32_t order = disk_be(d, 4, 4) == 3 ? (uint32_t)disk_be(d, 96, 4) : 4u;
    uint64_t epb_bits = 0;
    if (order > 6) return 0;
    while ((1ull << epb_bits) < (cs * 8 >> order)) epb_bits++;
    if ((cl >> epb_bits) >= disk_be(d, 56, 4) * cs / 8) return 0;
    blk = disk_be(d, rt + 8 * (cl >> epb_bits), 8) & ~511ull;
    if (!blk || blk % cs || blk > d->len || d->len - blk < cs) return 0;
    return q2w__rc_get(d->buf + blk, cl & ((1ull << epb_bits) - 1), order);
}

/* A snapshot whose L1 table has a cluster of refcount 0 is not deleted
 * (the delete verifies them all before it frees anything): on a copy, the
 * first of the first 8 snapshots so damaged, deleted by its name, fails. */
static void check_delete_refuses_free_l1(const qh_disk *d, const q2w_info *info)
{
    uint64_t pos = disk_be(d, 64, 8), cs = info->cluster_size;
    uint32_t i;
    for (i = 0; i < info->nb_snapshots && i < 8; i++) {
        uint64_t l1o = disk_be(d, pos, 8), l1s = disk_be(d, pos + 8, 4), c;
        uint64_t idl = disk_be(d, pos + 12, 2), nml = disk_be(d, pos + 14, 2);
        uint64_t extra = disk_be(d, pos + 36, 4);
        int bad = 0;
        for (c = l1o / cs; l1s && c <= (l1o + l1s * 8 - 1) / cs; c++)
            bad |= file_refcount(d, c) == 0;
        if (bad && nml && pos + 40 + extra + idl + nml <= d->len) {
            char name[Q2W_MAX_SNAPSHOT_NAME + 1];
            qh_disk c2;
            qh_handle h;
            int rc;
            memcpy(name, d->buf + pos + 40 + extra + idl, (size_t)nml);
            name[nml] = 0;
            if (strlen(name) != nml) return;
            disk_copy(&c2, d, DISK_CAP);
            rc = open_image(&h, &c2, 1);
            if (rc == Q2W_OK) {
                rc = qh_run(&h.img, &c2, q2w_snapshot_delete(&h.img, name));
                ALK_CHECK(rc != Q2W_OK,
                          "snapshot %u (%s) deleted, its L1 at %llu holding a cluster of "
                          "refcount 0", i, name, (unsigned long long)l1o);
            }
            qh_close_handle(&h);
            qh_disk_free(&c2);
            return;
        }
        pos += (40 + extra + idl + nml + 7) & ~7ull;
    }
}

/* The virtual clusters with data, counted from the active tables as the
 * spec reads them (an entry compressed, or naming a host cluster - a
 * zero-flagged one too); snapshots' tables do not count. */
static uint64_t ref_allocated(const qh_disk *d)
{
    uint64_t cs = 1ull << (disk_be(d, 20, 4) & 63), l1 = disk_be(d, 40, 8);
    uint64_t l1n = disk_be(d, 36, 4), n = 0, i, j;
    for (i = 0; i < l1n; i++) {
        uint64_t l2 = disk_be(d, l1 + 8 * i, 8) & Q2W__OFF_MASK;
        if (!l2) continue;
        for (j = 0; j < cs / 8; j++) {
            uint64_t e = disk_be(d, l2 + 8 * j, 8);
            n += (e & Q2W__COMPRESSED) || (e & Q2W__OFF_MASK);
        }
    }
    return n;
}

/* The bitmap directory's size is in bytes and any size is allowed: its
 * clusters are those its bytes touch. On a copy whose directory (one that
 * validated, inside the file, with every finding recorded) is grown to end
 * exactly at the end of the file's last cluster, the check makes no
 * PAST_EOF finding named by the extension beyond the ones it made before;
 * grown one byte more, exactly one more: the first cluster past the end.
 * (Growing it changes nothing else the walk reads: every entry still fits.) */
static void check_bitmap_directory_span(const qh_disk *d, const q2w_check_result *res,
                                        uint64_t at, uint64_t doff, uint64_t dsize,
                                        uint64_t cs)
{
    uint64_t end = (d->len + cs - 1) / cs * cs, before = 0;
    size_t i;
    int k;
    if (res->n_findings >= Q2W_CHECK_MAX_FINDINGS || res->check_errors || doff >= end ||
        dsize > end - doff || end - doff + 1 > (64ull << 20) || at + 24 > d->len)
        return;
    for (i = 0; i < res->n_findings; i++)
        before += res->findings[i].kind == Q2W_FIND_PAST_EOF && res->findings[i].where == at;
    for (k = 0; k < 2; k++) {
        qh_disk c;
        q2w_check_result r;
        uint64_t grown = end - doff + (uint64_t)k, n = 0;
        int rc;
        disk_copy(&c, d, d->cap);
        tamper_put(c.buf + at + 16, 8, grown);
        rc = qh_check(&c, 0, &r);
        ALK_CHECK(rc == Q2W_OK, "bitmap directory grown to %llu bytes: %s",
                  (unsigned long long)grown, q2w_strerror(rc));
        for (i = 0; i < r.n_findings; i++) {
            const q2w_finding *f = &r.findings[i];
            if (f->kind != Q2W_FIND_PAST_EOF || f->where != at) continue;
            n++;
            ALK_CHECK(f->offset >= end, "bitmap directory grown to %llu bytes: past the "
                      "end at %llu, the file ends at %llu", (unsigned long long)grown,
                      (unsigned long long)f->offset, (unsigned long long)end);
        }
        ALK_CHECK(n == before + (uint64_t)k,
                  "bitmap directory at %llu grown to %llu bytes (file end %llu, "
                  "cluster %llu): %llu references past the end, want %llu",
                  (unsigned long long)doff, (unsigned long long)grown,
                  (unsigned long long)end, (unsigned long long)cs,
                  (unsigned long long)n, (unsigned long long)(before + (uint64_t)k));
        qh_disk_free(&c);
    }
}

/* The persistent bitmaps as the spec and qcow2w.h's documented limits
 * give them, while autoclear bit 0 says they are current (the last
 * extension of its type, walked as ref_extensions walks; an image with two
 * is not judged): the BITMAP findings the check must make, in order, and
 * no others.
 *   - the extension: shorter than 24 bytes, its reserved field set,
 *     listing none or more than 65535 bitmaps, a directory over 64 MiB or
 *     shorter than 24 bytes a bitmap, or not cluster-aligned below 2^56:
 *     one finding (offset the directory's, where the extension's, stored
 *     its length, computed its count), and the walk ends;
 *   - each directory entry (24 bytes, extra data, name, padded to 8): past
 *     the directory's end (offset the entry's, where the extension's,
 *     stored its place in the directory, computed its index), or a table
 *     not cluster-aligned below 2^56, over 1 GiB, absent with entries,
 *     extra data over 1 MiB, the entry running past the directory (offset
 *     the table's, where the entry's, stored the table size, computed the
 *     index): one finding, and the walk ends;
 *   - each table entry with reserved bits, or bit 0 (all ones) beside a
 *     cluster: one finding each (offset the cluster, where the entry,
 *     stored the entry, computed the bitmap's index).
 * What the walk reaches holds references, counted here as the walk goes:
 * the directory's clusters, each table's, each data cluster (inside the
 * file and aligned). A leak or a refcount finding on such a cluster must
 * count at least those (a checker that steps wrong over an entry's extra
 * data misses the next entry's table: a "leak" of a cluster in use).
 * Extra data is what the spec allows (its size is the entry's to say;
 * it references no cluster); qemu refuses any, as not supported.
 * (Only when the check read everything: a failed read ends it.) */
static void bitmap_refs(uint32_t *refs, uint64_t ncl, uint64_t off, uint64_t len, uint64_t cs)
{
    uint64_t c, last = off / cs + (len + cs - 1) / cs;   /* (off < 2^56) */
    for (c = off / cs; c < last && c < ncl; c++) refs[c]++;
}

static void check_bitmaps(const qh_disk *d, const q2w_check_result *res)
{
    q2w_finding want[64];
    size_t nw = 0, i, got = 0;
    uint64_t cs, pos, end, bk_off, at = 0, elen = 0, nb, dsize, doff, type, tlen, ncl;
    uint32_t *refs;
    int done = 0;
    if (d->len < 112 || ref_be(d->buf + 4, 4) != 3 || !(ref_be(d->buf + 88, 8) & 1) ||
        res->n_findings >= Q2W_CHECK_MAX_FINDINGS || res->check_errors)
        return;
    cs = 1ull << ref_be(d->buf + 20, 4);
    pos = ref_be(d->buf + 100, 4);
    bk_off = ref_be(d->buf + 8, 8);
    end = bk_off && bk_off < cs ? bk_off : cs;
    while (ref_ext_at(d->buf, d->len, pos, end, &type, &tlen) > 0) {
        if (type == 0x23852875u) {
            if (at) return;   /* (two: the spec allows one) */
            at = pos;
            elen = tlen;
        }
        pos += 8 + ((tlen + 7) & ~7ull);
    }
    if (!at) return;
    ncl = (d->len + cs - 1) / cs;
    refs = (uint32_t *)alk_calloc(ncl ? ncl : 1, sizeof *refs);
    ALK_CHECK(refs != NULL, "out of memory");
#define WANT(o, w, st, co)                                                          \
    do {                                                                            \
        if (nw == sizeof want / sizeof want[0]) { /* (too many to judge) */        \
            alk_free(refs);                                                         \
            return;                                                                 \
        }                                                                           \
        want[nw].kind = Q2W_FIND_BITMAP;                                            \
        want[nw].offset = (o);                                                      \
        want[nw].where = (w);                                                       \
        want[nw].stored = (st);                                                     \
        want[nw].computed = (co);                                                   \
        nw++;                                                                       \
    } while (0)
    nb = elen >= 24 ? disk_be(d, at + 8, 4) : 0;
    dsize = elen >= 24 ? disk_be(d, at + 16, 8) : 0;
    doff = elen >= 24 ? disk_be(d, at + 24, 8) : 0;
    if (elen < 24 || disk_be(d, at + 12, 4) || nb == 0 || nb > 65535 ||
        dsize > (64ull << 20) || dsize < 24 * nb || doff % cs || doff >= (1ull << 56)) {
        WANT(doff, at, elen, nb);
        done = 1;
    } else {
        bitmap_refs(refs, ncl, doff, dsize, cs);
    }
    for (i = 0, pos = 0; !done && i < nb; i++) {
        uint64_t e = doff + pos, tab, tsize, extra, len, j;
        if (pos + 24 > dsize) {
            WANT(e, at, pos, i);
            break;
        }
        tab = disk_be(d, e, 8);
        tsize = disk_be(d, e + 8, 4);
        extra = disk_be(d, e + 20, 4);
        len = (24 + extra + disk_be(d, e + 18, 2) + 7) & ~7ull;
        if (tab % cs || tab >= (1ull << 56) || tsize * 8 > (1ull << 30) || (tsize && !tab) ||
            extra > (1u << 20) || len > dsize - pos) {
            WANT(tab, e, tsize, i);
            break;
        }
        bitmap_refs(refs, ncl, tab, tsize * 8, cs);
        for (j = 0; j < tsize && tab + 8 * j < d->len; j++) {   /* (zeros past it) */
            uint64_t te = disk_be(d, tab + 8 * j, 8), off = te & 0x00fffffffffffe00ull;
            if ((te & ~(0x00fffffffffffe00ull | 1)) || (off && (te & 1)))
                WANT(off, tab + 8 * j, te, i);
            else if (off && off % cs == 0)
                bitmap_refs(refs, ncl, off, 1, cs);
        }
        pos += len;
    }
#undef WANT
    for (i = 0; i < res->n_findings; i++) {
        const q2w_finding *f = &res->findings[i];
        if (f->kind != Q2W_FIND_BITMAP) continue;
        ALK_CHECK(got < nw && f->offset == want[got].offset && f->where == want[got].where &&
                      f->stored == want[got].stored && f->computed == want[got].computed,
                  "bitmap finding %zu (%llu at %llu, %llx, %llu) is not the reference's "
                  "(%zu of them)", got, (unsigned long long)f->offset,
                  (unsigned long long)f->where, (unsigned long long)f->stored,
                  (unsigned long long)f->computed, nw);
        got++;
    }
    ALK_CHECK(got == nw, "%zu bitmap findings, the reference has %zu (first at %llu)", got,
              nw, (unsigned long long)(nw ? want[0].where : 0));
    for (i = 0; i < res->n_findings; i++) {
        const q2w_finding *f = &res->findings[i];
        uint64_t c = f->offset / cs;
        if ((f->kind != Q2W_FIND_LEAK && f->kind != Q2W_FIND_REFCOUNT) || f->offset % cs ||
            c >= ncl)
            continue;
        ALK_CHECK(f->computed >= refs[c],
                  "%s at cluster %llu: %llu references counted, the bitmaps alone "
                  "hold %u (directory at %llu, %llu bytes, %llu bitmaps)",
                  f->kind == Q2W_FIND_LEAK ? "a leak" : "a refcount finding",
                  (unsigned long long)c, (unsigned long long)f->computed, refs[c],
                  (unsigned long long)doff, (unsigned long long)dsize,
                  (unsigned long long)nb);
    }
    alk_free(refs);
    if (nw == 0) check_bitmap_directory_span(d, res, at, doff, dsize, cs);
}

/* An image with something the checker does not understand (an UNKNOWN
 * finding, or a bitmaps extension it could not read: BITMAP) is never
 * repaired: both repairs write nothing and refuse (UNSUPPORTED) when there
 * was something to repair, else say OK. */
/* Where a repair the checker is unsure of says the structure it does not
 * understand is: the last of an unknown autoclear bit (88), an unknown
 * compatible bit (80) and the first unknown extension (its UNKNOWN
 * finding), else the bitmaps extension (v3, walked from the header's end
 * up to the backing name or the cluster's end). */
static uint64_t unsure_where(const qh_disk *d, const q2w_check_result *res)
{
    uint64_t ext = 0, at = 0, pos, end, bk, cs, type, tlen;
    size_t i;
    for (i = 0; i < res->n_findings; i++) {
        const q2w_finding *f = &res->findings[i];
        if (f->kind != Q2W_FIND_UNKNOWN) continue;
        if (f->where == 88) return 88;
        if (f->where == 80) at = 80;
        else if (!ext) ext = f->where;
    }
    if (at || ext) return at ? at : ext;
    cs = 1ull << (disk_be(d, 20, 4) & 63);
    bk = disk_be(d, 8, 8);
    end = bk && bk < cs ? bk : cs;
    for (pos = disk_be(d, 100, 4); ref_ext_at(d->buf, d->len, pos, end, &type, &tlen) > 0;
         pos += 8 + ((tlen + 7) & ~7ull))
        if (type == 0x23852875u) return pos;
    return 0;
}

static void check_unsure_repairs(qh_disk *d, const q2w_check_result *res)
{
    static const unsigned flags[2] = {Q2W_CHECK_REPAIR_LEAKS, Q2W_CHECK_REPAIR_ALL};
    int unsure = res->unknown > 0, k;
    unsigned char *saved;
    size_t i, len = d->len;
    for (i = 0; i < res->n_findings; i++) {
        const q2w_finding *f = &res->findings[i];
        unsure |= f->kind == Q2W_FIND_BITMAP;
        /* an UNKNOWN finding is about the header: no cluster, and either
         * a feature field (80, 88) or an extension whose type it gives
         * (the header's cluster read as the checker reads it: zeros past
         * the file's end) */
        if (f->kind == Q2W_FIND_UNKNOWN)
            ALK_CHECK(f->offset == 0 &&
                          (f->where == 80 || f->where == 88 ||
                           disk_be(d, f->where, 4) == (uint32_t)f->stored),
                      "an UNKNOWN finding at %llu (entry %llu, value %llx)",
                      (unsigned long long)f->offset, (unsigned long long)f->where,
                      (unsigned long long)f->stored);
    }
    if (!unsure) return;
    saved = (unsigned char *)alk_malloc(len ? len : 1);
    ALK_CHECK(saved != NULL, "out of memory");
    memcpy(saved, d->buf, len);
    for (k = 0; k < 2; k++) {
        q2w_check_result r;
        int rc = qh_check(d, flags[k], &r);
        int want = res->leaks || res->corruptions ? Q2W_ERR_UNSUPPORTED : Q2W_OK;
        ALK_CHECK(rc != Q2W_ERR_UNSUPPORTED || res->n_findings >= Q2W_CHECK_MAX_FINDINGS ||
                      r.error.offset == unsure_where(d, res),
                  "repair %u of an image the checker is unsure of names offset %llu, want %llu",
                  flags[k], (unsigned long long)r.error.offset,
                  (unsigned long long)unsure_where(d, res));
        ALK_CHECK(rc == want && d->len == len && !memcmp(d->buf, saved, len) &&
                      r.leaks_fixed == 0 && r.corruptions_fixed == 0 &&
                      r.copied_fixed == 0 && !r.dirty_cleared,
                  "repair %u of an image the checker is unsure of: %s (want %s), "
                  "%llu + %llu + %llu fixed, dirty cleared %d, bytes %s", flags[k],
                  q2w_strerror(rc), q2w_strerror(want),
                  (unsigned long long)r.leaks_fixed,
                  (unsigned long long)r.corruptions_fixed,
                  (unsigned long long)r.copied_fixed, r.dirty_cleared,
                  d->len == len && !memcmp(d->buf, saved, len) ? "kept" : "changed");
    }
    alk_free(saved);
}

/* A repair scans all it repairs: on a copy of an image the checker finds
 * something wrong in, each repair that succeeds reports the image end a
 * plain check of the repaired file finds (image_end_offset: the end of the
 * highest referenced cluster - a refcount block the repair made past the
 * old end of the file included). A hostile image may send a repair's
 * write anywhere: past the copy's room the write fails (and the repair
 * with it), which is no verdict. */
static int re_write(void *user, uint64_t off, const void *src, size_t len)
{
    qh_disk *c = (qh_disk *)user;
    if (off + len > c->cap) return -5;
    return qh_io_write(user, off, src, len);
}

static void check_repair_end(const qh_disk *d, const q2w_check_result *res)
{
    static const unsigned flags[2] = {Q2W_CHECK_REPAIR_LEAKS, Q2W_CHECK_REPAIR_ALL};
    size_t i;
    int k;
    if (!res->corruptions && !res->leaks) return;
    /* (only where nothing but refcounts and COPIED flags is wrong and no
     * cluster has two references: on an image whose structures overlap, a
     * refcount the repair writes lands inside another table and changes
     * what a later check finds) */
    if (res->n_findings >= Q2W_CHECK_MAX_FINDINGS || res->unknown) return;
    for (i = 0; i < res->n_findings; i++) {
        const q2w_finding *f = &res->findings[i];
        if (f->kind != Q2W_FIND_LEAK && f->kind != Q2W_FIND_COPIED &&
            (f->kind != Q2W_FIND_REFCOUNT || f->computed > 1))
            return;
    }
    {
        /* (only where the refcount table and every block it names lie
         * inside the file - a repair then writes past the end nothing but
         * the blocks it makes - and no block shares its cluster with the
         * header, the L1 table, the refcount table or an L2 table the L1
         * names, with no snapshot tables to walk: a cluster used twice
         * with a matching refcount is no finding, but a repair's write
         * into it would change another structure) */
        uint64_t cs, rt, n, at, l1, l1n, j;
        if (d->len < 112 || q2w__be32(d->buf + 60)) return;
        cs = 1ull << (q2w__be32(d->buf + 20) & 63);
        rt = q2w__be64(d->buf + 48);
        n = (uint64_t)q2w__be32(d->buf + 56) * cs;
        l1 = q2w__be64(d->buf + 40);
        l1n = q2w__be32(d->buf + 36);
        if (rt > d->len || n > d->len - rt || l1 > d->len || l1n * 8 > d->len - l1)
            return;
        for (at = 0; at < n; at += 8) {
            uint64_t b = q2w__be64(d->buf + rt + at) & Q2W__OFF_MASK & ~(cs - 1);
            if (!b) continue;
            if (b > d->len || d->len - b < cs || b < cs || (b < l1 + l1n * 8 && b + cs > l1) ||
                (b < rt + n && b + cs > rt))
                return;
            for (j = 0; j < l1n; j++)
                if ((q2w__be64(d->buf + l1 + 8 * j) & Q2W__OFF_MASK & ~(cs - 1)) == b) return;
        }
    }
    for (k = 0; k < 2; k++) {
        qh_disk c;
        q2w_check_result r;
        q2w_io io;
        size_t need = 0;
        void *work;
        int rc;
        disk_copy(&c, d, d->cap);
        qh_make_io(&c, &io);
        io.write = re_write;
        if (q2w_check_work_size(&io, &need, NULL) != Q2W_OK) {
            qh_disk_free(&c);
            return;
        }
        work = alk_malloc(need ? need : 1);
        ALK_CHECK(work != NULL, "out of memory");
        rc = q2w_check(&io, work, need, flags[k], &r);
        alk_free(work);
        if (rc == Q2W_OK) {
            /* the feature fields as they were, less the dirty bit when the
             * repair says it cleared it (only -r all does) */
            uint64_t inc = disk_be(d, 72, 8);
            ALK_CHECK(disk_be(&c, 72, 8) == (r.dirty_cleared ? inc & ~1ull : inc) &&
                          disk_be(&c, 80, 8) == disk_be(d, 80, 8) &&
                          (!r.dirty_cleared || (k == 1 && (inc & 1))),
                      "repair %d: incompatible %llx -> %llx, compatible %llx -> %llx, "
                      "dirty cleared %d", k, (unsigned long long)inc,
                      (unsigned long long)disk_be(&c, 72, 8),
                      (unsigned long long)disk_be(d, 80, 8),
                      (unsigned long long)disk_be(&c, 80, 8), r.dirty_cleared);
            qh_assert_repair_end(&c, &r, k ? "REPAIR_ALL on a copy" : "REPAIR_LEAKS on a copy");
            if (disk_be(&c, 48, 8) == disk_be(d, 48, 8)) {
                /* a block the repair made (a table entry 0 before) is on
                 * the first free cluster of its range: every cluster of the
                 * range below it (but the header's) is in use after it */
                uint64_t cs = 1ull << (disk_be(d, 20, 4) & 63), rt = disk_be(d, 48, 8);
                uint32_t order = disk_be(d, 4, 4) == 3 ? (uint32_t)disk_be(d, 96, 4) : 4u;
                uint64_t epb = cs * 8 >> order, n = disk_be(d, 56, 4) * cs / 8, e, b, cl;
                for (i = 0; i < n && order <= 6; i++) {
                    if (disk_be(d, rt + 8 * i, 8) || !(e = disk_be(&c, rt + 8 * i, 8)))
                        continue;
                    b = e / cs;
                    if (b < i * epb || b >= (i + 1) * epb || e % cs || e + cs > c.len) continue;
                    for (cl = i ? i * epb : 1; cl < b; cl++)
                        ALK_CHECK(q2w__rc_get(c.buf + e, cl - i * epb, order) != 0,
                                  "repair %d made the block of range %zu at cluster %llu; "
                                  "cluster %llu below it is free", k, i,
                                  (unsigned long long)b, (unsigned long long)cl);
                }
            }
            {
                /* the same repair with each of its first 16 writes failing:
                 * reported exactly, nothing done after it */
                unsigned nth, writes;
                qh_disk f;
                disk_copy(&f, d, d->cap);
                qh_check_faulty(&f, flags[k], 2, 0); /* counts the writes */
                qh_disk_free(&f);
                writes = qh_faulty_calls < 16 ? qh_faulty_calls : 16;
                for (nth = 1; nth <= writes; nth++) {
                    disk_copy(&f, d, d->cap);
                    ALK_CHECK(qh_check_faulty(&f, flags[k], 2, nth),
                              "repair %d: write %u of %u did not fail", k, nth, writes);
                    qh_disk_free(&f);
                }
            }
        }
        qh_disk_free(&c);
    }
}

#ifndef Q2W_NO_STDIO
/* A sync that fails reaches the caller: on a copy of a clean image, a
 * one-byte write, then a flush through q2w_posix_run on /dev/zero (writes
 * vanish, fdatasync fails): Q2W_ERR_IO; with Q2W_POSIX_NO_FLUSH, no sync
 * and OK. */
static void check_failing_sync(const qh_disk *d)
{
    int k;
    for (k = 0; k < 2; k++) {
        qh_disk c;
        qh_handle t;
        unsigned char byte = 0x5a;
        int rc, fd = open("/dev/zero", O_RDWR);
        if (fd < 0) return;
        disk_copy(&c, d, d->cap);
        rc = open_image(&t, &c, 1);
        if (rc == Q2W_OK)
            rc = qh_run(&t.img, &c, q2w_write(&t.img, 0, &byte, 1));
        if (rc == Q2W_OK) {
            rc = k ? q2w_posix_run_flags(&t.img, fd, NULL, Q2W_POSIX_NO_FLUSH,
                                         q2w_flush(&t.img))
                   : q2w_posix_run(&t.img, fd, NULL, q2w_flush(&t.img));
            ALK_CHECK(rc == (k ? Q2W_OK : Q2W_ERR_IO),
                      "a flush through q2w_posix_run%s on /dev/zero: %s",
                      k ? "_flags (no flush)" : "", q2w_strerror(rc));
        }
        close(fd);
        qh_close_handle(&t);
        qh_disk_free(&c);
    }
}
#endif

/* What a read-only handle refuses, and what no handle finds: each refusal
 * says why, plans nothing and writes nothing; the handle reads on. */
static void check_read_only_refusals(qh_handle *h, qh_disk *d, const q2w_info *info)
{
    uint64_t writes = d->writes;
    unsigned char byte = 0;
    q2w_snapshot sn;
    size_t need;
    q2w_error_info err;
    q2w_io io;
    int k, rc;
    for (k = 0; k < 6; k++) {
        switch (k) {
        case 0: rc = q2w_write(&h->img, 0, &byte, 1); break;
        case 1: rc = q2w_write_zeroes(&h->img, 0, 1); break;
        case 2: rc = q2w_discard(&h->img, 0, 1); break;
        case 3: rc = q2w_resize(&h->img, info->size); break;
        case 4: rc = q2w_snapshot_create(&h->img, "ro", 0, 0, 0); break;
        default: rc = q2w_snapshot_delete(&h->img, "ro"); break;
        }
        expect_error(&h->img, rc, Q2W_ERR_READONLY, "operation", 0, 0, "read-only change");
        ALK_CHECK(d->writes == writes, "a refused change wrote");
    }
    /* a flush is no change: nothing to do, and fine */
    rc = qh_run(&h->img, d, q2w_flush(&h->img));
    ALK_CHECK(rc == Q2W_OK && d->writes == writes, "read-only flush: %s",
              q2w_strerror(rc));
    /* a name never made: not found */
    rc = qh_run(&h->img, d, q2w_snapshot_find(&h->img, "never-made", &sn));
    if (rc != Q2W_ERR_METADATA && rc != Q2W_ERR_UNSUPPORTED)
        expect_error(&h->img, rc, Q2W_ERR_NOT_FOUND, "snapshot", 0, 0,
                     "a snapshot never made");
    /* a snapshot past the last one: not found, at its index */
    rc = qh_run(&h->img, d, q2w_snapshot_get(&h->img, info->nb_snapshots, &sn));
    if (rc != Q2W_ERR_METADATA && rc != Q2W_ERR_UNSUPPORTED)
        expect_error(&h->img, rc, Q2W_ERR_NOT_FOUND, "snapshot", 0, info->nb_snapshots,
                     "snapshot past the last");
    /* a snapshot whose L1 is not cluster-aligned cannot be read */
    memset(&sn, 0, sizeof sn);
    sn.l1_offset = (uint64_t)info->cluster_size + 1;
    sn.l1_size = 1;
    sn.disk_size = info->size;
    rc = q2w_read_snapshot(&h->img, &sn, 0, &byte, 0);
    expect_error(&h->img, rc, Q2W_ERR_ARG, "snapshot", sn.l1_offset, 0,
                 "an unaligned snapshot L1");
    /* an L1 as large as the format allows is fine; one entry more is not */
    sn.l1_offset = info->cluster_size;
    sn.l1_size = Q2W_MAX_L1_BYTES / 8;
    rc = qh_run(&h->img, d, q2w_read_snapshot(&h->img, &sn, 0, &byte, 0));
    ALK_CHECK(rc == Q2W_OK, "a snapshot L1 of %u entries: %s", sn.l1_size, q2w_strerror(rc));
    sn.l1_size++;
    rc = q2w_read_snapshot(&h->img, &sn, 0, &byte, 0);
    expect_error(&h->img, rc, Q2W_ERR_ARG, "snapshot", sn.l1_offset, 0,
                 "a snapshot L1 past the format's limit");
    rc = qh_run(&h->img, d, q2w_read(&h->img, 0, &byte, info->size ? 1 : 0));
    ALK_CHECK(rc == Q2W_OK || rc == Q2W_ERR_METADATA || rc == Q2W_ERR_UNSUPPORTED,
              "read after the refusals: %s", q2w_strerror(rc));
    {
        /* an op buffer below the minimum */
        qh_handle t;
        q2w_config cfg;
        qh_handle_config(&t, &cfg, info->cluster_size, 8, 16, 0, 0, d->len, 0);
        cfg.ops_cap = Q2W_MIN_OPS - 1;
        cfg.no_backing = 1;
        rc = q2w_open(&t.img, &cfg);
        expect_error(&t.img, rc, Q2W_ERR_NOMEM, "cfg.ops_cap", 0, Q2W_MIN_OPS - 1,
                     "an op buffer below the minimum");
        qh_close_handle(&t);
    }
    /* the checker's size: no io or nowhere to put it */
    qh_make_io(d, &io);
    memset(&err, 0xA5, sizeof err);
    ALK_CHECK(q2w_check_work_size(NULL, &need, &err) == Q2W_ERR_ARG &&
                  err.code == Q2W_ERR_ARG && err.what && !strcmp(err.what, "arguments"),
              "check_work_size without an io");
    memset(&err, 0xA5, sizeof err);
    ALK_CHECK(q2w_check_work_size(&io, NULL, &err) == Q2W_ERR_ARG &&
                  err.code == Q2W_ERR_ARG && err.what && !strcmp(err.what, "arguments"),
              "check_work_size without a size");
}


/* The header read twice at open (its fixed part, then cluster 0 with the
 * extensions): a file whose refcount table offset changes between the two
 * reads is refused as HEADER "header changed while open", naming the
 * header itself (offset 0, no table entry: index 0). */
static void check_header_changed(qh_disk *d)
{
    qh_handle t;
    q2w_config cfg;
    const q2w_op *op;
    size_t n;
    unsigned char save[8];
    uint64_t rt, cs;
    int rc;
    if (d->len < 72) return;
    image_config(&t, d, 0, OPEN_MEM, &cfg);
    rc = q2w_open(&t.img, &cfg);
    ALK_CHECK(rc == Q2W_PENDING, "header changed: open: %s", q2w_strerror(rc));
    op = q2w_batch(&t.img, &n);
    rc = q2w_resume(&t.img, qh_exec(d, op, n)); /* the fixed part read */
    memcpy(save, d->buf + 48, 8);
    rt = q2w__be64(d->buf + 48);
    cs = 1ull << q2w__be32(d->buf + 20);
    q2w__put64(d->buf + 48, rt + cs < (1ull << 56) ? rt + cs : rt - cs);
    rc = qh_run(&t.img, d, rc);
    memcpy(d->buf + 48, save, 8);
    expect_error(&t.img, rc, Q2W_ERR_HEADER, "header changed while open", 0, 0,
                 "the header changed between its two reads");
    qh_close_handle(&t);
}


/* An L1 of two clusters or more that a resize moves leaves none of its
 * old clusters behind in the cache: on a copy of a clean image, opened
 * with 64 cache slots (nothing evicted on the way), a byte of each L1
 * cluster's range read, a resize by one more L1 cluster's worth (the table
 * moves), a flush (the old clusters freed), then a byte written twice at
 * the first L2 boundary past the old size - its new L2 table and data
 * cluster land on the old L1's first free clusters, and the second write
 * goes in place: both succeed and the byte reads back. */
static void check_l1_move(const qh_disk *d)
{
    qh_disk c;
    qh_handle h;
    q2w_info info;
    uint64_t span, n1, p, at;
    unsigned char b = 0x5a, got = 0;
    int rc;
    uint64_t cb = d->len >= 112 ? disk_be(d, 20, 4) : 0;
    if (cb < 9 || cb > 16) return;
    disk_copy(&c, d, DISK_CAP);
    /* (64 cache slots: nothing the cache held is evicted on the way) */
    rc = qh_open(&h, &c, 1u << cb, 64, 16, 1, 0);
    if (rc == Q2W_OK) {
        q2w_info_get(&h.img, &info);
        c.cluster_size = info.cluster_size;
        span = (uint64_t)info.cluster_size * (info.cluster_size / 8);
        n1 = ((uint64_t)info.l1_size * 8 + info.cluster_size - 1) / info.cluster_size;
        if (n1 >= 2 && n1 <= 64 && !info.autoclear) {
            for (p = 0; p < n1 && rc == Q2W_OK; p++) {
                at = p * (info.cluster_size / 8) * span;
                if (at < info.size) rc = qh_run(&h.img, &c, q2w_read(&h.img, at, &got, 1));
            }
            at = (info.size + span - 1) / span * span;
            if (rc == Q2W_OK)
                rc = qh_run(&h.img, &c, q2w_resize(&h.img, at + (info.cluster_size / 8) * span));
            if (rc == Q2W_OK) rc = qh_run(&h.img, &c, q2w_flush(&h.img));
            if (rc == Q2W_OK) {
                alk_trace("L1 move: %llu clusters, writing at %llu", (unsigned long long)n1,
                          (unsigned long long)at);
                rc = qh_run(&h.img, &c, q2w_write(&h.img, at, &b, 1));
                ALK_CHECK(rc == Q2W_OK, "L1 move: a write past the old end: %s (%s)",
                          q2w_strerror(rc), q2w_error(&h.img)->what);
                rc = qh_run(&h.img, &c, q2w_write(&h.img, at, &b, 1));
                ALK_CHECK(rc == Q2W_OK, "L1 move: the same write again: %s (%s)",
                          q2w_strerror(rc), q2w_error(&h.img)->what);
                rc = qh_run(&h.img, &c, q2w_read(&h.img, at, &got, 1));
                ALK_CHECK(rc == Q2W_OK && got == b, "L1 move: read back: %s, %02x",
                          q2w_strerror(rc), got);
            }
        }
    }
    qh_close_handle(&h);
    qh_disk_free(&c);
}

/* Refusals first: a resize that shrinks or passes 2^62 bytes.
 * First fit (DESIGN NOTES: "Allocation is first fit from a moving hint"):
 * on a clean image without snapshots, a snapshot created, deleted and
 * created again in one handle puts the second L1 copy where the first one
 * was - the first one's clusters are the lowest free run of that length
 * again once it is deleted (the cluster below it was in use when it was
 * placed, and nothing below it was freed since). On a copy of d. */
static void check_first_fit(const qh_disk *d)
{
    qh_disk c;
    qh_handle h;
    q2w_info info;
    q2w_snapshot a, b;
    int rc;
    if (d->len < 112 || q2w__be32(d->buf + 60) != 0) return;
    disk_copy(&c, d, DISK_CAP);
    rc = open_image(&h, &c, 1);
    if (rc == Q2W_OK) {
        q2w_info_get(&h.img, &info);
        c.cluster_size = info.cluster_size;
        rc = info.l1_size ? Q2W_OK : Q2W_ERR_ARG;
    }
    if (rc == Q2W_OK && !info.autoclear) {
        /* a resize that shrinks, or past 2^62 bytes, is refused with the
         * size asked for, before anything is planned (with autoclear bits
         * set, the first change clears them first) */
        static const struct { int code; const char *what; } want[2] = {
            {Q2W_ERR_UNSUPPORTED, "shrinking"}, {Q2W_ERR_LIMIT, "virtual size"}};
        uint64_t ask[2];
        size_t nb;
        int k;
        ask[0] = info.size ? info.size - 1 : 0;
        ask[1] = (1ull << 62) + 1;
        for (k = info.size ? 0 : 1; k < 2; k++) {
            int r = q2w_resize(&h.img, ask[k]);
            q2w_batch(&h.img, &nb);
            ALK_CHECK(r == want[k].code && nb == 0 && q2w_error(&h.img)->what &&
                          !strcmp(q2w_error(&h.img)->what, want[k].what) &&
                          q2w_error(&h.img)->offset == 24 && q2w_error(&h.img)->index == ask[k],
                      "resize %llu to %llu: %s (%s), %zu ops", (unsigned long long)info.size,
                      (unsigned long long)ask[k], q2w_strerror(r),
                      q2w_error(&h.img)->what ? q2w_error(&h.img)->what : "", nb);
        }
    }
    if (rc == Q2W_OK) rc = qh_run(&h.img, &c, q2w_snapshot_create(&h.img, "a", 1, 2, 3));
    if (rc == Q2W_OK) rc = qh_run(&h.img, &c, q2w_snapshot_find(&h.img, "a", &a));
    if (rc == Q2W_OK) rc = qh_run(&h.img, &c, q2w_snapshot_delete(&h.img, "a"));
    if (rc == Q2W_OK) rc = qh_run(&h.img, &c, q2w_snapshot_create(&h.img, "b", 1, 2, 3));
    if (rc == Q2W_OK) {
        rc = qh_run(&h.img, &c, q2w_snapshot_find(&h.img, "b", &b));
        ALK_CHECK(rc == Q2W_OK, "first fit: find b: %s", q2w_strerror(rc));
        ALK_CHECK(b.l1_offset == a.l1_offset,
                  "first fit: a snapshot's L1 copy at %llu, deleted; the next "
                  "one's at %llu", (unsigned long long)a.l1_offset,
                  (unsigned long long)b.l1_offset);
        alk_trace("first fit: L1 copies at %llu", (unsigned long long)b.l1_offset);
    }
    qh_close_handle(&h);
    qh_disk_free(&c);
}

/* An image the check calls clean (no corruption, no leak) holds nothing a
 * write can be refused for that the check validates: a refusal there is
 * never METADATA naming a refcount-table entry (reserved bits, an
 * unaligned block, a block past the host offset limit), an L1 or L2
 * entry's reserved bits or alignment, or the zero flag of a v2 image -
 * each a finding of the check. */
static void expect_no_checked_refusal(qh_handle *h, int rc, const char *when)
{
    static const char *const checked[] = {
        "refcount_table", "l1 entry reserved bits", "l1 entry unaligned",
        "l2 entry reserved bits", "l2 entry unaligned", "zero flag in a v2 image",
    };
    const q2w_error_info *e = q2w_error(&h->img);
    size_t i;
    if (rc != Q2W_ERR_METADATA) return;
    for (i = 0; i < sizeof checked / sizeof checked[0]; i++)
        ALK_CHECK(strcmp(e->what, checked[i]) != 0,
                  "%s of an image the check calls clean: %s (%s at %llu, index %llu)",
                  when, q2w_strerror(rc), e->what, (unsigned long long)e->offset,
                  (unsigned long long)e->index);
}

#ifndef Q2W_NO_STDIO
/* q2w_posix_io sizes a file as it is, down to a byte; and its flush is
 * fdatasync, whose failure it returns (a pipe cannot be synced). */
static void check_posix_sizes(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/qcow2_open.XXXXXX";
    int fd = mkstemp(path);
    q2w_io io;
    q2w_fdbox box;
    ALK_CHECK(fd >= 0, "mkstemp");
    unlink(path);
    ALK_CHECK(!size || q2w_pwrite_full(fd, 0, data, size) == 0, "fill");
    q2w_posix_io(&io, fd, &box);
    ALK_CHECK(io.file_size == size, "posix io: a file of %zu bytes sized %llu", size,
              (unsigned long long)io.file_size);
    close(fd);
    /* its flush is fdatasync, whose failure it returns: a pipe cannot
     * be synced (EINVAL) */
    {
        int pfd[2];
        ALK_CHECK(pipe(pfd) == 0, "pipe");
        q2w_posix_io(&io, pfd[1], &box);
        ALK_CHECK(io.file_size == 0 && io.flush(io.user) < 0,
                  "posix io on a pipe: sized %llu, its flush succeeded",
                  (unsigned long long)io.file_size);
        close(pfd[0]);
        close(pfd[1]);
    }
}
#endif

/* The read-only phase: the open judged against the reference header rule,
 * a read (and its map) of up to 64 KiB at a place the input picks, the
 * snapshot entries, memory and refusals. 0 when the open was refused (the
 * handle closed); else 1, the handle closed, and *refused_kind/at the
 * entry a read refused, if one was (the check must find it). */
static int check_read_only(qh_disk *disk_, uint64_t pick, int *refused_kind_,
                           uint64_t *refused_at_)
{
    qh_handle h;
    q2w_info info;
    unsigned char *buf;
    int rc, refused_kind = -1;
    uint64_t refused_at = 0;
    qh_disk disk = *disk_;
    size_t size = disk.len;
    rc = open_image(&h, &disk, 0);
    alk_trace("read-only open: %s", q2w_strerror(rc));
    {
        /* the fixed header against the reference rule */
        ref_verdict v;
        unsigned char *head = (unsigned char *)alk_calloc(1, 1u << 21);
        ALK_CHECK(head != NULL, "out of memory");
        memcpy(head, disk.buf, size < (1u << 21) ? size : (1u << 21));
        ref_header(head, &v);
        ref_judge(&v, rc, q2w_error(&h.img), "read-only open");
        if (rc == Q2W_OK && v.n == 0) {
            q2w_info_get(&h.img, &info);
            judge_backing(&disk, head, &v, &info, "read-only open");
        }
        alk_free(head);
    }
    if (rc != Q2W_OK) {
        expect_refusal(&h, rc, "read-only open");
        qh_close_handle(&h);
        *disk_ = disk;
        return 0;
    }
    check_header_changed(&disk);
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
        /* What read, maps: the same entries pass the same checks, and
         * each extent agrees with the bytes read (data at its host
         * offset in the file, zeros). */
        if (rc == Q2W_OK) qh_assert_map(&h, &disk, NULL, buf, at, n, "map");
        if (rc != Q2W_OK) {
            expect_refusal(&h, rc, "read");
            {
                /* an L1 entry's refusal names the entry: its file offset
                 * and its index */
                const q2w_error_info *er = q2w_error(&h.img);
                /* the entry a read refuses is a finding of the check's */
                if (!strcmp(er->what, "l2 entry reserved bits") ||
                    !strcmp(er->what, "l1 entry reserved bits"))
                    refused_kind = Q2W_FIND_RESERVED, refused_at = er->offset;
                if (!strcmp(er->what, "l2 entry unaligned") ||
                    !strcmp(er->what, "l1 entry unaligned"))
                    refused_kind = Q2W_FIND_UNALIGNED, refused_at = er->offset;
                if (!strcmp(er->what, "l1 entry unaligned") ||
                    !strcmp(er->what, "l1 entry reserved bits"))
                    ALK_CHECK(er->offset == info.l1_offset + 8 * er->index,
                              "%s: at %llu, index %llu of the L1 at %llu", er->what,
                              (unsigned long long)er->offset,
                              (unsigned long long)er->index,
                              (unsigned long long)info.l1_offset);
            }
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
    check_snapshot_entries(&h, &disk, &info);
    check_delete_refuses_free_l1(&disk, &info);
    check_compressed_memory(&h, &disk, &info, check_open_memory(&disk));
    check_read_only_refusals(&h, &disk, &info);
    qh_close_handle(&h);
    *disk_ = disk;
    *refused_kind_ = refused_kind;
    *refused_at_ = refused_at;
    return 1;
}

/* The checker's findings on an image the read-only phase accepted: past-end
 * references without counts, no HEADER finding, the entry a read refused
 * among the findings, the allocated count against the active tables, and
 * the bitmap, unsure-repair and repair-end rules. */
static void check_findings(qh_disk *disk_, const q2w_check_result *res_,
                           int refused_kind, uint64_t refused_at)
{
    qh_disk disk = *disk_;
    q2w_check_result res = *res_;
    size_t i;
    /* a reference past the end names a cluster past the file's last,
     * with no counts (as documented) */
    uint64_t cs = disk.len >= 24 ? 1ull << (q2w__be32(disk.buf + 20) & 63) : 1;
    for (i = 0; i < res.n_findings; i++)
        if (res.findings[i].kind == Q2W_FIND_PAST_EOF)
            ALK_CHECK(res.findings[i].stored == 0 && res.findings[i].computed == 0 &&
                          res.findings[i].offset >= (disk.len + cs - 1) / cs * cs,
                      "a PAST_EOF finding at %llu (file %zu bytes): %llu, %llu",
                      (unsigned long long)res.findings[i].offset, disk.len,
                      (unsigned long long)res.findings[i].stored,
                      (unsigned long long)res.findings[i].computed);
    /* the read-only open walked every snapshot entry, refusing at
     * least what the checker's HEADER finding is for (more than 1024
     * bytes of extra data, an unaligned or oversized L1) */
    for (i = 0; i < res.n_findings; i++)
        ALK_CHECK(res.findings[i].kind != Q2W_FIND_HEADER,
                  "a HEADER finding at %llu (entry %llu) in an image the open accepted",
                  (unsigned long long)res.findings[i].offset,
                  (unsigned long long)res.findings[i].where);
    if (refused_kind >= 0 && res.n_findings < Q2W_CHECK_MAX_FINDINGS) {
        for (i = 0; i < res.n_findings; i++)
            if ((int)res.findings[i].kind == refused_kind &&
                res.findings[i].where == refused_at)
                break;
        ALK_CHECK(i < res.n_findings,
                  "the read refused the entry at %llu (%s); the check has no such "
                  "finding there", (unsigned long long)refused_at,
                  refused_kind == Q2W_FIND_RESERVED ? "reserved bits" : "unaligned");
    }
    if (!res.corruptions && !res.check_errors) {
        uint64_t want = ref_allocated(&disk);
        ALK_CHECK(res.allocated_clusters == want,
                  "the check counts %llu allocated clusters, the active tables %llu",
                  (unsigned long long)res.allocated_clusters, (unsigned long long)want);
    }
    check_bitmaps(&disk, &res);
    check_unsure_repairs(&disk, &res);
    check_repair_end(&disk, &res);
    *disk_ = disk;
}

/* A clean image must stay clean through a snapshot and a small write (its
 * place, length and byte from pick), read back with the bytes beside it
 * and the snapshot's view unchanged, and through the snapshot's delete. */
static void check_write_cycle(qh_disk *disk_, uint64_t pick)
{
    qh_disk disk = *disk_;
    qh_handle h;
    q2w_info info;
    uint64_t woff, win_off;
    unsigned char fillb, *buf, *before;
    size_t wlen, win_len;
    int rc, snap, have_before, stale_bitmaps;
    rc = open_image(&h, &disk, 1);
    alk_trace("writable open: %s", q2w_strerror(rc));
    if (rc != Q2W_OK) {
        expect_refusal(&h, rc, "writable open");
        expect_no_checked_refusal(&h, rc, "writable open");
        qh_close_handle(&h);
        *disk_ = disk;
        return;
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
        expect_no_checked_refusal(&h, snap, "snapshot create");
        ALK_CHECK(snap == Q2W_ERR_LIMIT || snap == Q2W_ERR_METADATA ||
                  snap == Q2W_ERR_UNSUPPORTED, "snapshot create: %s",
                  q2w_strerror(snap));
    }
    rc = qh_run(&h.img, &disk, q2w_write(&h.img, woff, buf, wlen));
    alk_trace("write [%llu,+%zu): %s", (unsigned long long)woff, wlen,
              q2w_strerror(rc));
    if (rc != Q2W_OK) {
        expect_refusal(&h, rc, "write");
        expect_no_checked_refusal(&h, rc, "write");
        ALK_CHECK(rc == Q2W_ERR_METADATA || rc == Q2W_ERR_UNSUPPORTED ||
                  rc == Q2W_ERR_LIMIT, "write: %s", q2w_strerror(rc));
    }
    {
        int crc = qh_run(&h.img, &disk, q2w_close(&h.img));
        ALK_CHECK(crc == Q2W_OK, "close: %s", q2w_strerror(crc));
        /* nothing is left to resume on a closed handle */
        crc = q2w_resume(&h.img, 0);
        ALK_CHECK(crc == Q2W_ERR_ARG, "resume after the close: %s", q2w_strerror(crc));
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
        {
            /* a find refused for its arguments leaves the handle free for
             * the next operation (the delete below) */
            q2w_snapshot sn0;
            rc = q2w_snapshot_find(&h.img, "", &sn0);
            ALK_CHECK(rc == Q2W_ERR_ARG, "find of an empty name: %s", q2w_strerror(rc));
            rc = q2w_snapshot_find(&h.img, "fz", NULL);
            ALK_CHECK(rc == Q2W_ERR_ARG, "find with no snapshot to fill: %s",
                      q2w_strerror(rc));
        }
        rc = qh_run(&h.img, &disk, q2w_snapshot_delete(&h.img, "never-made"));
        expect_error(&h.img, rc, Q2W_ERR_NOT_FOUND, "snapshot", 0, 0,
                     "deleting a snapshot never made");
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
    *disk_ = disk;
}

/* One input: a tampered fixture (TAMPER_MAGIC), or an image as it is -
 * judged read-only (check_read_only), by the checker (check_findings), and
 * when clean, through moves, repairs and a write cycle. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    qh_disk disk;
    q2w_check_result res;
    uint64_t pick = 0, refused_at = 0;
    int refused_kind = -1;
    size_t i;
    int rc;

    if (size > MAX_INPUT) return 0;
    alk_trace_reset();
    check_create_geometry();
    if (size >= 8 && memcmp(data, TAMPER_MAGIC, 8) == 0) {
        tamper_run(data, size);
        return 0;
    }
#ifndef Q2W_NO_STDIO
    if (size <= 16) check_posix_sizes(data, size);
#endif
    qh_disk_init(&disk, DISK_CAP);
    memcpy(disk.buf, data, size);
    disk.len = size;
    if (size > 120)
        for (i = 0; i < 8; i++) pick = (pick << 8) | data[size - 8 + i];
    if (!check_read_only(&disk, pick, &refused_kind, &refused_at)) {
        qh_disk_free(&disk);
        return 0;
    }
    rc = qh_check(&disk, 0, &res);
    alk_trace("check: %s, %llu corruptions, %llu leaks", q2w_strerror(rc),
              (unsigned long long)res.corruptions,
              (unsigned long long)res.leaks);
    if (rc == Q2W_OK) check_findings(&disk, &res, refused_kind, refused_at);
    if (rc != Q2W_OK || res.corruptions || res.leaks) {
        qh_disk_free(&disk);
        return 0;
    }

    check_first_fit(&disk);
    check_l1_move(&disk);
#ifndef Q2W_NO_STDIO
    check_failing_sync(&disk);
#endif
    check_write_cycle(&disk, pick);
    qh_disk_free(&disk);
    return 0;
}

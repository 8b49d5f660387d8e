/* bench_qcow2w.c - the qcow2w CLI against qemu-img / qemu-io, whole process
 * against whole process, on the same inputs in the same run.
 *
 * qcow2w is examples/qcow2w.c built -O2 -DNDEBUG by the Makefile as
 * $B/bench_qcow2w_cli; qemu is the installed qemu-img / qemu-io. Every
 * figure is a ratio of medians, qcow2w time / qemu time (lower is better),
 * over RUNS rounds (BENCH_RUNS, default 5). A round runs each side once,
 * the side going first alternating, so drift hits both. Before each run
 * the output is removed (or the fresh image made), then sync() so earlier
 * runs' writeback does not land in this one; the clock runs from fork to
 * exit. Sources are read once beforehand, so the page cache is warm.
 *
 *   1. import dense: a raw file of BENCH_MIB MiB (default 1024): random
 *      data and written zeros (not holes) in alternating 4 MiB runs.
 *      `qcow2w import -q -n RAW IMG` vs `qemu-img convert -f raw -O qcow2
 *      RAW IMG`. Target <= 0.8.
 *   2. import sparse: 4 x BENCH_MIB MiB, 1 MiB of random data every 10 MiB,
 *      holes elsewhere (its allocated size is checked and printed). Same
 *      commands. Target <= 0.8.
 *   3. export dense: the image qemu-img convert made from figure 1's raw
 *      file, `qcow2w export -q IMG RAW` vs `qemu-img convert -f qcow2 -O
 *      raw IMG RAW`. Target <= 0.8.
 *   4. export sparse: a 128 GiB image with 2 MiB clusters holding 4 MiB of
 *      data (qemu-img create, qemu-io writes at 1 GiB and 100 GiB). Same
 *      commands. Target <= 1.0.
 *   5. random writes: BENCH_WRITES (default 10,000) 4 KiB writes at 4 KiB
 *      aligned offsets from a fixed-seed PRNG into a fresh 1 GiB image
 *      with 64 KiB clusters (the same `qemu-img create` for both sides
 *      before every run), one command file on stdin ending in `quit`:
 *      `qcow2w io IMG < cmds` vs `qemu-io -f qcow2 --cache=writeback IMG <
 *      cmds`. Target <= 0.4.
 *   6. copy-on-write: a prepared image (a region of 1.12 x BENCH_WRITES
 *      64 KiB clusters filled by qemu-io, then `qemu-img snapshot -c s`),
 *      copied fresh for every run; BENCH_WRITES 4 KiB writes, each into a
 *      different cluster of the region (a random permutation), so every
 *      write copies a cluster shared with the snapshot. Same commands as 5.
 *      Target <= 0.2.
 *   7. commit: a 4 x BENCH_MIB MiB qcow2 backing file (64 KiB clusters,
 *      1 MiB of pattern data every 4 MiB) under an overlay holding
 *      BENCH_MIB MiB (1 MiB every 4 MiB, 2 MiB further on), both copied
 *      (cp -r --sparse=always) before every run: `qcow2w commit -q TOP` vs
 *      `qemu-img commit -q TOP`. Target <= 0.8.
 *   8. rebase: the same overlay and backing file, and a new backing file
 *      (a copy of the old one with 1 MiB rewritten every 16 MiB): `qcow2w
 *      rebase -q -b new.qcow2 -F qcow2 TOP` vs `qemu-img rebase -q -f qcow2
 *      -b new.qcow2 -F qcow2 TOP`. Target <= 0.8.
 *   BENCH_FIGURES=78 (digits) runs only those figures.
 *   In 5 qemu-io also runs the same commands given as -c arguments (its
 *   faster way, no poll per stdin line): printed, not judged. (Not in 6,
 *   where qemu-io's time goes to its flushes.)
 *
 * Durability is equal and counted. Import: qemu-img convert writes the
 * image with cache=unsafe (its fdatasyncs, if strace shows any, come from
 * creating the empty image, before any data) and -n skips qcow2w's close
 * flushes: neither makes the data durable. Export: neither flushes. io:
 * both make everything durable at exit (qemu-io's flush at close, qcow2w's
 * q2w_close fdatasyncs). One extra untimed run per side under `strace -f
 * -c` counts fsync / fdatasync / sync_file_range / syncfs (SKIPPED without
 * strace). Neither side opens with O_SYNC / O_DIRECT.
 *
 * Also per side: write amplification (wchar from /proc/<pid>/io, read
 * before the child is reaped, / the user's bytes: non-zero data imported
 * or exported, 4 KiB per write) and peak resident memory (ru_maxrss from
 * wait4, max over the runs); target: qcow2w import and export <= 64 MiB.
 *
 * Every output is checked once, untimed: imports equal to the raw file
 * (qemu-img compare) and clean (qemu-img check); exports identical to
 * qemu's (cmp; the sparse one by its SEEK_DATA maps and data ranges); io
 * images clean and equal to qemu's, and after copy-on-write the snapshot
 * still holds the filled region (the last timed round's outputs; the
 * strace run comes first). A failed check or command fails the
 * bench. Every figure prints both medians, min-max, the ratio, the target
 * and `met` or `MISSED`; the exit status is 1 if any target was missed or
 * anything failed, 0 otherwise, and 0 (SKIPPED) without qemu-img /
 * qemu-io. Load averages are printed at the start and the end. Files live
 * in a directory under $TMPDIR (or /tmp), removed at exit. */
#define _GNU_SOURCE /* SEEK_DATA, wait4(), sync(), mkdtemp() */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

#define MAX_RUNS 51
#define MAX_SIDES 3 /* qcow2w, qemu, and one informational qemu variant */
#define MIB (1024.0 * 1024.0)
#define RSS_TARGET (64u << 20)

enum prep { PREP_REMOVE, PREP_CREATE, PREP_COPY, PREP_COPY_DIR };

typedef struct side {
    const char *label;
    char **argv;
    const char *in;  /* stdin file, or NULL for /dev/null */
    char out[320];   /* the file this side writes */
    double t[MAX_RUNS];
    uint64_t wchar;  /* of the last run */
    uint64_t maxrss; /* bytes, max over the runs */
    char syncs[160];
} side;

typedef struct figure {
    const char *name;
    double target;
    double user_bytes; /* for write amplification */
    int rss_judged;    /* import / export: qcow2w's memory has a target */
    int prep;
    const char *base;  /* PREP_COPY's source */
    int n_sides;
    side s[MAX_SIDES];  /* [0] qcow2w, [1] qemu, [2] informational */
    double med[MAX_SIDES];
} figure;

/* A figure named name with its target, its user bytes (for the write
 * amplification) and how each run's output is prepared. */
static void figure_init(figure *f, const char *name, double target,
                        double user_bytes, int prep)
{
    memset(f, 0, sizeof *f);
    f->name = name;
    f->target = target;
    f->user_bytes = user_bytes;
    f->prep = prep;
}

static char dir[256], log_path[300];
static int runs = 5, have_strace, failed, missed;
static char *qemu_img = (char *)"qemu-img", *qemu_io = (char *)"qemu-io";

/* ---- processes ---------------------------------------------------------- */
static void show_log(void)
{
    char line[512];
    int n = 0;
    FILE *f = fopen(log_path, "r");
    if (!f) return;
    while (n++ < 20 && fgets(line, sizeof line, f))
        fprintf(stderr, "  | %s", line);
    fclose(f);
}

/* Run argv with stdin from `in` (NULL: /dev/null), stdout to /dev/null,
 * stderr to the log. secs: fork to exit; wchar read from /proc before the
 * child is reaped; maxrss from wait4. 0, or -1 (said). */
static int run(char *const argv[], const char *in, double *secs,
               uint64_t *wchar, uint64_t *maxrss)
{
    struct rusage ru;
    siginfo_t si;
    int status;
    double t0;
    pid_t pid;
    fflush(stdout);
    fflush(stderr);
    t0 = bench_now();
    pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int i = open(in ? in : "/dev/null", O_RDONLY);
        int o = open("/dev/null", O_WRONLY);
        int e = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (i < 0 || o < 0 || e < 0) _exit(126);
        dup2(i, 0);
        dup2(o, 1);
        dup2(e, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0) return -1;
    if (secs) *secs = bench_now() - t0;
    if (wchar) {
        char path[64], line[128];
        FILE *f;
        *wchar = 0;
        snprintf(path, sizeof path, "/proc/%d/io", (int)pid);
        if ((f = fopen(path, "r")) != NULL) {
            while (fgets(line, sizeof line, f))
                if (strncmp(line, "wchar:", 6) == 0)
                    *wchar = strtoull(line + 6, NULL, 10);
            fclose(f);
        }
    }
    if (wait4(pid, &status, 0, &ru) < 0) return -1;
    if (maxrss) *maxrss = (uint64_t)ru.ru_maxrss * 1024u; /* KiB on Linux */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        int i;
        fprintf(stderr, "bench: FAILED (status 0x%x):", status);
        for (i = 0; argv[i]; i++)
            fprintf(stderr, " %.60s", argv[i]);
        fprintf(stderr, "\n");
        show_log();
        return -1;
    }
    return 0;
}

static int run_quiet(char *const argv[])
{
    return run(argv, NULL, NULL, NULL, NULL);
}

/* Output of a shell command's first line into buf ("?" when none). */
static void first_line(const char *command, char *buf, size_t cap)
{
    FILE *p = popen(command, "r");
    snprintf(buf, cap, "?");
    if (!p) return;
    if (fgets(buf, (int)cap, p)) buf[strcspn(buf, "\n")] = 0;
    pclose(p);
}

static int have(const char *tool)
{
    char c[256];
    snprintf(c, sizeof c, "command -v %s > /dev/null 2>&1", tool);
    return system(c) == 0;
}

static void cleanup(void)
{
    char c[300];
    if (!dir[0]) return;
    snprintf(c, sizeof c, "rm -rf '%s'", dir);
    if (system(c) != 0) fprintf(stderr, "bench: could not remove %s\n", dir);
    dir[0] = 0;
}

static void on_signal(int sig)
{
    /* fork + execve are async-signal-safe; system() is not */
    char *argv[] = {(char *)"/bin/rm", (char *)"-rf", dir, NULL};
    pid_t pid = fork();
    if (pid == 0) {
        execve(argv[0], argv, NULL);
        _exit(127);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
    _exit(128 + sig);
}

/* ---- files -------------------------------------------------------------- */
static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static void fill_random(unsigned char *buf, size_t len, uint64_t *x)
{
    size_t i;
    for (i = 0; i + 8 <= len; i += 8) {
        uint64_t v = next_rand(x);
        memcpy(buf + i, &v, 8);
    }
}

static int pwrite_all(int fd, const unsigned char *buf, size_t len,
                      uint64_t off)
{
    while (len) {
        ssize_t n = pwrite(fd, buf, len, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        buf += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

static uint64_t allocated(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_blocks * 512u : 0;
}

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Data extents of fd from pos: [*start, *end), *start == size when none.
 * Without SEEK_DATA (or when the file system refuses) all of it is data. */
static void next_data(int fd, uint64_t pos, uint64_t size, uint64_t *start,
                      uint64_t *end)
{
    *start = pos;
    *end = size;
#ifdef SEEK_DATA
    {
        off_t s = lseek(fd, (off_t)pos, SEEK_DATA), e;
        if (s < 0) {
            if (errno == ENXIO) *start = size;
            return;
        }
        e = lseek(fd, s, SEEK_HOLE);
        *start = (uint64_t)s;
        if (e >= 0) *end = (uint64_t)e;
    }
#else
    (void)fd;
#endif
}

/* Read every data extent of the file once: the page cache is warm. */
static int warm(const char *path)
{
    static unsigned char buf[1 << 20];
    uint64_t size = file_size(path), pos = 0, s, e;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    while (pos < size) {
        next_data(fd, pos, size, &s, &e);
        if (s >= size) break;
        for (pos = s; pos < e;) {
            size_t n = e - pos < sizeof buf ? (size_t)(e - pos) : sizeof buf;
            ssize_t got = pread(fd, buf, n, (off_t)pos);
            if (got <= 0) { close(fd); return -1; }
            pos += (uint64_t)got;
        }
    }
    close(fd);
    return 0;
}

/* Dense: alternating 4 MiB runs of random data and of written zeros.
 * Sparse (every = 10 MiB): 1 MiB of random data at every multiple of
 * `every`, holes between. Returns the bytes of data written, 0 on error. */
static uint64_t make_raw(const char *path, uint64_t bytes, int sparse)
{
    const size_t chunk = 1u << 20;
    const uint64_t every = 10u << 20;
    unsigned char *buf = (unsigned char *)malloc(chunk);
    static const unsigned char zeros[1 << 20];
    uint64_t x = 0x9e3779b97f4a7c15ull, off, data = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (!buf || fd < 0 || ftruncate(fd, (off_t)bytes) < 0) goto fail;
    for (off = 0; off < bytes; off += sparse ? every : chunk) {
        size_t n = bytes - off < chunk ? (size_t)(bytes - off) : chunk;
        int is_data = sparse || (off >> 22) % 2 == 0;
        if (is_data) fill_random(buf, n, &x);
        if (pwrite_all(fd, is_data ? buf : zeros, n, off) < 0) goto fail;
        if (is_data) data += n;
    }
    free(buf);
    close(fd);
    return data;
fail:
    perror(path);
    free(buf);
    if (fd >= 0) close(fd);
    return 0;
}

/* Two files equal byte for byte, reading only data: sizes equal, and the
 * two agree over every data extent of either (outside the union both read
 * as zeros). 1 equal, 0 not, -1 error. */
static int sparse_equal(const char *a, const char *b)
{
    static unsigned char ba[1 << 20], bb[1 << 20];
    const char *path[2];
    uint64_t size = file_size(a);
    int fa = open(a, O_RDONLY), fb = open(b, O_RDONLY), k, rc = 1;
    path[0] = a;
    path[1] = b;
    if (fa < 0 || fb < 0) rc = -1;
    else if (file_size(b) != size) rc = 0;
    for (k = 0; k < 2 && rc == 1; k++) {
        uint64_t pos = 0, s, e;
        while (pos < size && rc == 1) {
            next_data(k ? fb : fa, pos, size, &s, &e);
            if (s >= size) break;
            for (pos = s; pos < e && rc == 1;) {
                size_t n = e - pos < sizeof ba ? (size_t)(e - pos) : sizeof ba;
                if (pread(fa, ba, n, (off_t)pos) != (ssize_t)n ||
                    pread(fb, bb, n, (off_t)pos) != (ssize_t)n) {
                    fprintf(stderr, "bench: reading %s\n", path[k]);
                    rc = -1;
                } else if (memcmp(ba, bb, n) != 0) {
                    rc = 0;
                }
                pos += n;
            }
        }
    }
    if (fa >= 0) close(fa);
    if (fb >= 0) close(fb);
    return rc;
}

/* ---- measuring ---------------------------------------------------------- */
static int create_image(const char *path, const char *cluster, const char *size)
{
    char opt[64];
    char *argv[] = {qemu_img, (char *)"create", (char *)"-q", (char *)"-f",
                    (char *)"qcow2", (char *)"-o", opt, (char *)path,
                    (char *)size, NULL};
    snprintf(opt, sizeof opt, "cluster_size=%s", cluster);
    return run_quiet(argv);
}

/* The state before a run: output removed, fresh image made or copied (a
 * whole directory: an image and its backing files). */
static int prepare(const figure *f, const side *s)
{
    if (f->prep == PREP_COPY_DIR) {
        char *rm[] = {(char *)"rm", (char *)"-rf", (char *)s->out, NULL};
        char *cp[] = {(char *)"cp", (char *)"-r", (char *)"--sparse=always",
                      (char *)f->base, (char *)s->out, NULL};
        return run_quiet(rm) < 0 ? -1 : run_quiet(cp);
    }
    if (unlink(s->out) < 0 && errno != ENOENT) return -1;
    if (f->prep == PREP_CREATE) return create_image(s->out, "65536", "1G");
    if (f->prep == PREP_COPY) {
        char *argv[] = {(char *)"cp", (char *)"--sparse=always",
                        (char *)f->base, (char *)s->out, NULL};
        return run_quiet(argv);
    }
    return 0;
}

/* strace -c's table: "% time seconds usecs/call calls [errors] syscall";
 * the counts of the sync calls, "none" when there were none. */
static void parse_strace(const char *path, char *out, size_t cap)
{
    static const char *const names[] = {"fsync", "fdatasync",
                                        "sync_file_range", "syncfs"};
    char line[256];
    size_t used = 0;
    FILE *f = fopen(path, "r");
    snprintf(out, cap, "none");
    if (!f) {
        snprintf(out, cap, "?");
        return;
    }
    while (fgets(line, sizeof line, f)) {
        char *tok[8], *p, *save = NULL;
        int n = 0;
        size_t k;
        for (p = strtok_r(line, " \t\n", &save); p && n < 8;
             p = strtok_r(NULL, " \t\n", &save))
            tok[n++] = p;
        if (n < 5) continue;
        for (k = 0; k < sizeof names / sizeof names[0]; k++)
            if (strcmp(tok[n - 1], names[k]) == 0 && used < cap)
                used += (size_t)snprintf(out + used, cap - used, "%s%s %s",
                                         used ? ", " : "", names[k], tok[3]);
    }
    fclose(f);
}

/* One untimed run of each side under strace -f -c. */
static int count_syncs(figure *f)
{
    char sfile[320];
    int i, k;
    snprintf(sfile, sizeof sfile, "%s/strace.out", dir);
    for (i = 0; i < f->n_sides; i++) {
        side *s = &f->s[i];
        char *argv[64] = {(char *)"strace", (char *)"-f", (char *)"-c",
                          (char *)"-e",
                          (char *)"trace=fsync,fdatasync,"
                                  "sync_file_range,syncfs",
                          (char *)"-o", sfile, (char *)"--"};
        int n = 0;
        if (!have_strace) {
            snprintf(s->syncs, sizeof s->syncs, "SKIPPED (no strace)");
            continue;
        }
        if (i >= 2) { /* the informational side: qemu's, same commands */
            snprintf(s->syncs, sizeof s->syncs, "not counted");
            continue;
        }
        while (s->argv[n]) n++;
        if (n + 9 > 64) return -1;
        for (k = 0; k <= n; k++) argv[8 + k] = s->argv[k];
        unlink(sfile);
        if (prepare(f, s) < 0) return -1;
        sync();
        if (run(argv, s->in, NULL, NULL, NULL) < 0) return -1;
        parse_strace(sfile, s->syncs, sizeof s->syncs);
    }
    return 0;
}

/* The strace run, then RUNS rounds, the first side rotating: the outputs
 * left to check are the last timed round's. 0 or -1. */
static int measure(figure *f)
{
    int r, j;
    if (count_syncs(f) < 0) return -1;
    printf("  measuring %d rounds...\n", runs);
    for (r = 0; r < runs; r++)
        for (j = 0; j < f->n_sides; j++) {
            side *s = &f->s[(r + j) % f->n_sides];
            uint64_t rss;
            if (prepare(f, s) < 0) return -1;
            sync();
            if (run(s->argv, s->in, &s->t[r], &s->wchar, &rss) < 0) return -1;
            if (rss > s->maxrss) s->maxrss = rss;
        }
    return 0;
}

/* The figure's timing lines: each side's median, min, max; then its
 * write amplification, peak memory and sync calls. */
static void rows(figure *f)
{
    int i;
    for (i = 0; i < f->n_sides; i++) {
        side *s = &f->s[i];
        f->med[i] = bench_median(s->t, runs); /* sorted: t[0] min */
        printf("  %-6s %-52s median %7.3f s  min %7.3f  max %7.3f\n",
               i == 0 ? "" : i == 1 ? "vs" : "(info)", s->label, f->med[i],
               s->t[0], s->t[runs - 1]);
    }
    for (i = 0; i < f->n_sides; i++) {
        side *s = &f->s[i];
        printf("         %-9s wchar %8.1f MiB (amplification %5.2f)  max RSS "
               "%5.1f MiB  syncs: %s\n",
               i == 0 ? "qcow2w" : i == 1 ? "qemu" : "qemu -c",
               (double)s->wchar / MIB, (double)s->wchar / f->user_bytes,
               (double)s->maxrss / MIB, s->syncs);
    }
}

/* The ratio against the target (and qcow2w's memory); counts misses. */
static void verdict(const figure *f)
{
    double ratio = f->med[0] / f->med[1];
    int m = ratio > f->target;
    printf("  => %s: qcow2w/qemu %.3f s / %.3f s = %.2f, target <= %.2f: %s\n",
           f->name, f->med[0], f->med[1], ratio, f->target,
           m ? "MISSED" : "met");
    missed += m;
    if (f->n_sides > 2)
        printf("     (info, not judged) qcow2w / qemu-io given the commands as "
               "-c arguments: %.2f\n", f->med[0] / f->med[2]);
    if (f->rss_judged) {
        m = f->s[0].maxrss > RSS_TARGET;
        printf("  => %s: qcow2w max RSS %.1f MiB, target <= %u MiB: %s\n",
               f->name, (double)f->s[0].maxrss / MIB, RSS_TARGET >> 20,
               m ? "MISSED" : "met");
        missed += m;
    }
}

static void fail(const char *name, const char *why)
{
    printf("  => %s: FAILED: %s\n", name, why);
    failed++;
}

static side *init_side(figure *f, const char *label, char **argv,
                       const char *in, const char *out)
{
    side *s = &f->s[f->n_sides++];
    s->label = label;
    s->argv = argv;
    s->in = in;
    snprintf(s->out, sizeof s->out, "%s", out);
    snprintf(s->syncs, sizeof s->syncs, "-");
    return s;
}

/* ---- the figures -------------------------------------------------------- */
static char cli[300];

/* Figures 1-4: qcow2w's side and qemu's side of one conversion of src,
 * each into its own output; src warmed, the rounds measured, the rows
 * printed. 0, or -1 with the figure marked failed. */
static int run_pair(figure *f, const char *src, const char *label0,
                    char **a0, const char *o0, const char *label1, char **a1,
                    const char *o1)
{
    init_side(f, label0, a0, NULL, o0);
    init_side(f, label1, a1, NULL, o1);
    if (warm(src) < 0 || measure(f) < 0) {
        fail(f->name, "a command failed");
        return -1;
    }
    rows(f);
    return 0;
}

/* Figures 1 and 2: import raw (data bytes user_bytes) both ways. */
static void import_figure(const char *name, const char *raw, double user_bytes)
{
    figure f;
    char o0[320], o1[320];
    char *a0[] = {cli, (char *)"import", (char *)"-q", (char *)"-n",
                  (char *)raw, o0, NULL};
    char *a1[] = {qemu_img, (char *)"convert", (char *)"-f", (char *)"raw",
                  (char *)"-O", (char *)"qcow2", (char *)raw, o1, NULL};
    int i;
    figure_init(&f, name, 0.8, user_bytes, PREP_REMOVE);
    f.rss_judged = 1;
    snprintf(o0, sizeof o0, "%s/import.qcow2w.qcow2", dir);
    snprintf(o1, sizeof o1, "%s/import.qemu.qcow2", dir);
    if (run_pair(&f, raw, "qcow2w import -q -n RAW IMG", a0, o0,
                 "qemu-img convert -f raw -O qcow2 RAW IMG", a1, o1) < 0)
        return;
    /* both images must hold the raw file; qcow2w's must be clean */
    for (i = 0; i < 2; i++) {
        char *cmp[] = {qemu_img, (char *)"compare", (char *)"-q", (char *)"-f",
                       (char *)"raw", (char *)"-F", (char *)"qcow2",
                       (char *)raw, f.s[i].out, NULL};
        char *chk[] = {qemu_img, (char *)"check", (char *)"-q", f.s[i].out,
                       NULL};
        if (run_quiet(cmp) < 0 || run_quiet(chk) < 0) {
            fail(name, "an image differs from the raw file or is not clean");
            return;
        }
    }
    printf("  checked: both images equal the raw file (qemu-img compare) and "
           "are clean (qemu-img check); allocated: qcow2w %.1f MiB, qemu "
           "%.1f MiB\n", (double)allocated(o0) / MIB,
           (double)allocated(o1) / MIB);
    verdict(&f);
    unlink(o0);
    unlink(o1);
}

/* Figures 3 and 4: export img (non-zero bytes user_bytes) both ways. */
static void export_figure(const char *name, const char *img, double user_bytes,
                          double target, int sparse)
{
    figure f;
    char o0[320], o1[320];
    char *a0[] = {cli, (char *)"export", (char *)"-q", (char *)img, o0, NULL};
    char *a1[] = {qemu_img, (char *)"convert", (char *)"-f", (char *)"qcow2",
                  (char *)"-O", (char *)"raw", (char *)img, o1, NULL};
    int same;
    figure_init(&f, name, target, user_bytes, PREP_REMOVE);
    f.rss_judged = 1;
    snprintf(o0, sizeof o0, "%s/export.qcow2w.raw", dir);
    snprintf(o1, sizeof o1, "%s/export.qemu.raw", dir);
    if (run_pair(&f, img, "qcow2w export -q IMG RAW", a0, o0,
                 "qemu-img convert -f qcow2 -O raw IMG RAW", a1, o1) < 0)
        return;
    if (sparse) {
        same = sparse_equal(o0, o1) == 1;
    } else {
        char *cmp[] = {(char *)"cmp", (char *)"-s", o0, o1, NULL};
        same = run_quiet(cmp) == 0;
    }
    if (!same) {
        fail(name, "the two raw files differ");
        return;
    }
    printf("  checked: the two raw files are identical (%s); size %.0f MiB, "
           "allocated: qcow2w %.1f MiB, qemu %.1f MiB\n",
           sparse ? "sizes, and bytes over both SEEK_DATA maps" : "cmp",
           (double)file_size(o0) / MIB, (double)allocated(o0) / MIB,
           (double)allocated(o1) / MIB);
    verdict(&f);
    unlink(o0);
    unlink(o1);
}

/* Write n commands "write -q -P PAT OFF 4k" (and "quit") to path; with
 * args, also the commands' texts for qemu-io -c (one malloc'd block). */
static int write_commands(const char *path, const uint64_t *offs, int n,
                          char **texts, char **block)
{
    FILE *f = fopen(path, "w");
    int i;
    *block = (char *)malloc((size_t)n * 48);
    if (!f || !*block) {
        if (f) fclose(f);
        return -1;
    }
    for (i = 0; i < n; i++) {
        char *t = *block + (size_t)i * 48;
        /* pattern never 0 (a zero write could be left out) nor 1 (the
         * copy-on-write image's fill) */
        snprintf(t, 48, "write -q -P 0x%02x %llu 4k", 2 + (i * 7) % 250,
                 (unsigned long long)offs[i]);
        texts[i] = t;
        fprintf(f, "%s\n", t);
    }
    fprintf(f, "quit\n");
    return fclose(f) == 0 ? 0 : -1;
}

/* Figures 5 and 6: the n writes at offs through qcow2w io and qemu-io. */
static void io_figure(const char *name, double target, const uint64_t *offs,
                      int n, int prep, const char *base, int with_c)
{
    figure f;
    char cmds[320], o0[320], o1[320], o2[320], *block = NULL;
    char **a2 = (char **)calloc((size_t)n * 2 + 8, sizeof *a2);
    char **texts = (char **)calloc((size_t)n, sizeof *texts);
    char *a0[] = {cli, (char *)"io", o0, NULL};
    char *a1[] = {qemu_io, (char *)"-f", (char *)"qcow2",
                  (char *)"--cache=writeback", o1, NULL};
    int i, k = 0;
    figure_init(&f, name, target, 4096.0 * n, prep);
    f.base = base;
    snprintf(cmds, sizeof cmds, "%s/cmds", dir);
    snprintf(o0, sizeof o0, "%s/io.qcow2w.qcow2", dir);
    snprintf(o1, sizeof o1, "%s/io.qemu.qcow2", dir);
    snprintf(o2, sizeof o2, "%s/io.qemu-c.qcow2", dir);
    if (!a2 || !texts || write_commands(cmds, offs, n, texts, &block) < 0) {
        fail(name, "the command file");
        goto out;
    }
    a2[k++] = qemu_io;
    a2[k++] = (char *)"-f";
    a2[k++] = (char *)"qcow2";
    a2[k++] = (char *)"--cache=writeback";
    for (i = 0; i < n; i++) {
        a2[k++] = (char *)"-c";
        a2[k++] = texts[i];
    }
    a2[k++] = o2;
    a2[k] = NULL;
    init_side(&f, "qcow2w io IMG < cmds", a0, cmds, o0);
    init_side(&f, "qemu-io -f qcow2 --cache=writeback IMG < cmds", a1, cmds,
              o1);
    if (with_c)
        init_side(&f, "qemu-io -f qcow2 --cache=writeback -c CMD... IMG", a2,
                  NULL, o2);
    if (warm(cmds) < 0 || measure(&f) < 0) {
        fail(name, "a command failed");
        goto out;
    }
    rows(&f);
    {
        char *chk0[] = {qemu_img, (char *)"check", (char *)"-q", o0, NULL};
        char *chk1[] = {qemu_img, (char *)"check", (char *)"-q", o1, NULL};
        char *cmp[] = {qemu_img, (char *)"compare", (char *)"-q", o0, o1, NULL};
        char *cmp2[] = {qemu_img, (char *)"compare", (char *)"-q", o0, o2,
                        NULL};
        char *apply[] = {qemu_img, (char *)"snapshot", (char *)"-a",
                         (char *)"s", o0, NULL};
        char *cmp_base[] = {qemu_img, (char *)"compare", (char *)"-q", o0,
                            (char *)base, NULL};
        if (run_quiet(chk0) < 0 || run_quiet(chk1) < 0 || run_quiet(cmp) < 0 ||
            (with_c && run_quiet(cmp2) < 0)) {
            fail(name, "an image is not clean or the two differ");
            goto out;
        }
        /* the snapshot still holds what was shared: reverted to it,
         * qcow2w's image equals the prepared one */
        if (prep == PREP_COPY &&
            (run_quiet(apply) < 0 || run_quiet(cmp_base) < 0)) {
            fail(name, "qcow2w's snapshot no longer holds the filled region");
            goto out;
        }
    }
    printf("  checked: both images clean (qemu-img check), equal to each "
           "other%s (qemu-img compare)%s\n",
           with_c ? " and to the -c run's" : "",
           prep == PREP_COPY ? "; qcow2w's reverted to snapshot s equals the "
                               "prepared image" : "");
    verdict(&f);
out:
    unlink(o0);
    unlink(o1);
    unlink(o2);
    free(block);
    free(texts);
    free(a2);
}

/* Figures 7 and 8: commit or rebase on a copy of the directory src (base,
 * overlay, new backing file) for each side; judged by the images the last
 * round left. */
static void job_figure(const char *name, const char *src, int rebase, double user_bytes)
{
    figure f;
    char o0[320], o1[320], t0[340], t1[340], b0[340], b1[340], ws[340];
    char *a0c[] = {cli, (char *)"commit", (char *)"-q", t0, NULL};
    char *a1c[] = {qemu_img, (char *)"commit", (char *)"-q", t1, NULL};
    char *a0r[] = {cli, (char *)"rebase", (char *)"-q", (char *)"-b", (char *)"new.qcow2",
                   (char *)"-F", (char *)"qcow2", t0, NULL};
    char *a1r[] = {qemu_img, (char *)"rebase", (char *)"-q", (char *)"-f", (char *)"qcow2",
                   (char *)"-b", (char *)"new.qcow2", (char *)"-F", (char *)"qcow2", t1,
                   NULL};
    int i;
    figure_init(&f, name, 0.8, user_bytes, PREP_COPY_DIR);
    f.base = src;
    snprintf(o0, sizeof o0, "%s/job.qcow2w", dir);
    snprintf(o1, sizeof o1, "%s/job.qemu", dir);
    snprintf(t0, sizeof t0, "%s/top.qcow2", o0);
    snprintf(t1, sizeof t1, "%s/top.qcow2", o1);
    snprintf(b0, sizeof b0, "%s/%s.qcow2", o0, rebase ? "new" : "base");
    snprintf(b1, sizeof b1, "%s/%s.qcow2", o1, rebase ? "new" : "base");
    snprintf(ws, sizeof ws, "%s/top.qcow2", src); /* (warmed: the overlay) */
    if (run_pair(&f, ws, rebase ? "qcow2w rebase -q -b new.qcow2 -F qcow2 TOP"
                                 : "qcow2w commit -q TOP",
                 rebase ? a0r : a0c, o0,
                 rebase ? "qemu-img rebase -q -f qcow2 -b new.qcow2 -F qcow2 TOP"
                        : "qemu-img commit -q TOP",
                 rebase ? a1r : a1c, o1) < 0)
        return;
    /* the overlays read the same, every image is clean, and a commit's
     * bases are equal */
    for (i = 0; i < 2; i++) {
        char *chk[] = {qemu_img, (char *)"check", (char *)"-q", i ? t1 : t0, NULL};
        char *chkb[] = {qemu_img, (char *)"check", (char *)"-q", i ? b1 : b0, NULL};
        if (run_quiet(chk) < 0 || run_quiet(chkb) < 0) {
            fail(name, "an image is not clean");
            return;
        }
    }
    {
        char *cmp[] = {qemu_img, (char *)"compare", (char *)"-q", t0, t1, NULL};
        char *cmpb[] = {qemu_img, (char *)"compare", (char *)"-q", b0, b1, NULL};
        if (run_quiet(cmp) < 0 || (!rebase && run_quiet(cmpb) < 0)) {
            fail(name, "qcow2w's images differ from qemu's");
            return;
        }
    }
    printf("  checked: every image clean (qemu-img check), the overlays%s equal "
           "(qemu-img compare)\n", rebase ? "" : " and the bases");
    verdict(&f);
}

/* qemu-io writes 1 MiB of pattern at every step MiB from first below end
 * MiB of the qcow2 image path (one process, its commands on stdin). */
static int fill_every(const char *path, uint64_t first, uint64_t step, uint64_t end,
                      unsigned pat)
{
    char cmd[512];
    uint64_t off;
    FILE *p;
    snprintf(cmd, sizeof cmd, "%s -f qcow2 %s > /dev/null", qemu_io, path);
    if (!(p = popen(cmd, "w"))) return -1;
    for (off = first; off < end; off += step)
        fprintf(p, "write -q -P 0x%02x %lluM 1M\n", (unsigned)(off % 250 + pat),
                (unsigned long long)off);
    return pclose(p) == 0 ? 0 : -1;
}

/* The directory of figures 7 and 8 (mib: the overlay's data): base,
 * overlay on it, and the new backing file (the base with 1 MiB of 16
 * rewritten). */
static int make_job_dir(const char *d, uint64_t mib)
{
    char base[340], top[340], nb[340], size[32];
    char *conv[] = {qemu_img, (char *)"convert", (char *)"-f", (char *)"qcow2", (char *)"-O",
                    (char *)"qcow2", base, nb, NULL};
    char *mk[] = {qemu_img, (char *)"create", (char *)"-q", (char *)"-f", (char *)"qcow2",
                  (char *)"-b", (char *)"base.qcow2", (char *)"-F", (char *)"qcow2", top, NULL};
    snprintf(base, sizeof base, "%s/base.qcow2", d);
    snprintf(top, sizeof top, "%s/top.qcow2", d);
    snprintf(nb, sizeof nb, "%s/new.qcow2", d);
    snprintf(size, sizeof size, "%lluM", (unsigned long long)(4 * mib));
    if (mkdir(d, 0755) < 0 || create_image(base, "65536", size) < 0 ||
        fill_every(base, 0, 4, 4 * mib, 1) < 0 || run_quiet(conv) < 0 || run_quiet(mk) < 0 ||
        fill_every(top, 2, 4, 4 * mib, 3) < 0)
        return -1;
    return fill_every(nb, 0, 16, 4 * mib, 5);
}

static void loadavg(const char *when)
{
    char buf[128] = "unknown (no /proc/loadavg)";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fgets(buf, sizeof buf, f)) buf[strcspn(buf, "\n")] = 0;
        fclose(f);
    }
    printf("load average (%s): %s\n", when, buf);
}

static long env_long(const char *name, long def, long lo, long hi)
{
    const char *v = getenv(name);
    long x = v && *v ? strtol(v, NULL, 10) : def;
    if (x < lo || x > hi) {
        fprintf(stderr, "bench: %s=%s out of range %ld..%ld: %ld used\n", name,
                v, lo, hi, def);
        x = def;
    }
    return x;
}

int main(void)
{
    static const char *const names[] = {
        "1. import dense", "2. import sparse", "3. export dense",
        "4. export sparse", "5. random writes", "6. copy-on-write writes",
        "7. commit", "8. rebase"};
    const char *only = getenv("BENCH_FIGURES");
    const char *b = getenv("B"), *tmp = getenv("TMPDIR");
    uint64_t mib = (uint64_t)env_long("BENCH_MIB", 1024, 8, 1 << 20);
    int writes = (int)env_long("BENCH_WRITES", 10000, 16, 1000000);
    char raw[320], sparse_raw[320], img[320], big[320], cow[320], buf[256];
    uint64_t data, dense_data = 0, x = 12345, *offs;
    size_t i;

    runs = (int)env_long("BENCH_RUNS", 5, 1, MAX_RUNS);
    printf("bench_qcow2w: the qcow2w CLI vs qemu-img / qemu-io, whole "
           "processes; ratio = median qcow2w time / median qemu time, lower "
           "is better\n");
    loadavg("start");
    if (!have("qemu-img") || !have("qemu-io")) {
        for (i = 0; i < sizeof names / sizeof names[0]; i++)
            printf("%s: SKIPPED (qemu-img / qemu-io not found; apt-get "
                   "install qemu-utils)\n", names[i]);
        return 0;
    }
    have_strace = have("strace");
    snprintf(cli, sizeof cli, "%s/bench_qcow2w_cli", b ? b : "build");
    if (access(cli, X_OK) != 0) {
        fprintf(stderr, "bench: %s not built (make %s)\n", cli, cli);
        return 1;
    }
    snprintf(dir, sizeof dir, "%s/bench_qcow2w.XXXXXX", tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    snprintf(log_path, sizeof log_path, "%s/stderr.log", dir);
    first_line("qemu-img --version", buf, sizeof buf);
    printf("%s; %d runs per side (BENCH_RUNS), interleaved; %s\n", buf, runs,
           have_strace ? "syncs counted under strace" : "strace: SKIPPED");
    snprintf(raw, sizeof raw, "stat -f -c %%T '%s' 2>/dev/null", dir);
    first_line(raw, buf, sizeof buf);
    printf("files in %s (file system: %s); %ld CPUs online\n", dir, buf,
           sysconf(_SC_NPROCESSORS_ONLN));

#define WANT(k) (!only || !*only || strchr(only, '0' + (k)))
    if (!WANT(1) && !WANT(2) && !WANT(3)) goto figure4;
    /* 1. dense import */
    snprintf(raw, sizeof raw, "%s/dense.raw", dir);
    printf("\n%s: %llu MiB raw file, random data and written zeros in "
           "alternating 4 MiB runs\n", names[0], (unsigned long long)mib);
    data = dense_data = make_raw(raw, mib << 20, 0);
    if (!data) {
        fail(names[0], "making the raw file");
    } else {
        printf("  raw file allocated on disk: %.1f MiB (zeros written, not "
               "holes); data %.1f MiB\n", (double)allocated(raw) / MIB,
               (double)data / MIB);
        printf("  durability: neither makes the image durable: qemu-img "
               "convert writes it with cache=unsafe (its fdatasyncs, if any "
               "below, are at the empty image's creation, before any data); "
               "-n skips qcow2w's close flushes\n");
        import_figure(names[0], raw, (double)data);
    }

    /* 2. sparse import */
    snprintf(sparse_raw, sizeof sparse_raw, "%s/sparse.raw", dir);
    printf("\n%s: %llu MiB raw file, 1 MiB of random data every 10 MiB, "
           "holes between\n", names[1], (unsigned long long)(4 * mib));
    data = make_raw(sparse_raw, (4 * mib) << 20, 1);
    if (!data) {
        fail(names[1], "making the raw file");
    } else if (allocated(sparse_raw) > (2 * mib) << 20) {
        printf("  raw file allocated: %.1f MiB\n",
               (double)allocated(sparse_raw) / MIB);
        fail(names[1], "the file system did not keep the raw file sparse");
    } else {
        printf("  raw file allocated on disk: %.1f MiB of %.1f MiB (data "
               "%.1f MiB)\n", (double)allocated(sparse_raw) / MIB,
               (double)file_size(sparse_raw) / MIB, (double)data / MIB);
        printf("  durability: as in 1\n");
        import_figure(names[1], sparse_raw, (double)data);
    }
    unlink(sparse_raw);

    /* 3. dense export, of the image qemu-img made from the dense raw file */
    snprintf(img, sizeof img, "%s/dense.qcow2", dir);
    printf("\n%s: the image qemu-img convert made from 1's raw file\n",
           names[2]);
    {
        char *conv[] = {qemu_img, (char *)"convert", (char *)"-f",
                        (char *)"raw", (char *)"-O", (char *)"qcow2", raw, img,
                        NULL};
        if (!dense_data || run_quiet(conv) < 0) {
            fail(names[2], "making the image");
        } else {
            printf("  image %.1f MiB; durability: neither flushes the raw "
                   "file\n", (double)file_size(img) / MIB);
            export_figure(names[2], img, (double)dense_data, 0.8, 0);
        }
    }
    unlink(raw);
    unlink(img);

figure4:
    if (!WANT(4)) goto figure5;
    /* 4. sparse export */
    snprintf(big, sizeof big, "%s/big.qcow2", dir);
    printf("\n%s: 128 GiB image, 2 MiB clusters, 2 MiB of data at 1 GiB and "
           "at 100 GiB\n", names[3]);
    {
        char *fill[] = {qemu_io, (char *)"-f", (char *)"qcow2", (char *)"-c",
                        (char *)"write -P 0x5a 1G 2M", (char *)"-c",
                        (char *)"write -P 0xa5 100G 2M", big, NULL};
        if (create_image(big, "2M", "128G") < 0 || run_quiet(fill) < 0) {
            fail(names[3], "making the image");
        } else {
            printf("  image %.1f MiB; durability: neither flushes the raw "
                   "file\n", (double)file_size(big) / MIB);
            export_figure(names[3], big, 4.0 * MIB, 1.0, 1);
        }
    }
    unlink(big);

figure5:
    /* 5. random writes into a fresh image */
    offs = (uint64_t *)malloc((size_t)writes * sizeof *offs);
    if (!offs) return 1;
    if (!WANT(5) && !WANT(6)) goto figure7;
    for (i = 0; i < (size_t)writes; i++)
        offs[i] = (next_rand(&x) % ((1u << 30) / 4096)) * 4096;
    printf("\n%s: %d random 4 KiB writes (4 KiB aligned, fixed seed) into a "
           "fresh 1 GiB image, 64 KiB clusters\n", names[4], writes);
    printf("  durability: both durable at exit (qemu-io flushes at close, "
           "qcow2w io's close fdatasyncs); before that each flushes as its "
           "own crash ordering needs (counts below)\n");
    io_figure(names[4], 0.4, offs, writes, PREP_CREATE, NULL, 1);

    /* 6. copy-on-write: every write into its own cluster shared with the
     * snapshot */
    {
        uint64_t clusters = (uint64_t)writes * 112 / 100, *perm;
        char fillcmd[64];
        char *fill[] = {qemu_io, (char *)"-f", (char *)"qcow2", (char *)"-c",
                        fillcmd, cow, NULL};
        char *snap[] = {qemu_img, (char *)"snapshot", (char *)"-c", (char *)"s",
                        cow, NULL};
        snprintf(cow, sizeof cow, "%s/cow-base.qcow2", dir);
        snprintf(fillcmd, sizeof fillcmd, "write -P 1 0 %llu",
                 (unsigned long long)(clusters * 65536));
        printf("\n%s: %d 4 KiB writes, each into a different 64 KiB cluster "
               "of a %.0f MiB region shared with a snapshot\n", names[5],
               writes, (double)clusters * 65536 / MIB);
        perm = (uint64_t *)malloc(clusters * sizeof *perm);
        if (!perm) return 1;
        for (i = 0; i < clusters; i++) perm[i] = i;
        for (i = clusters - 1; i > 0; i--) { /* Fisher-Yates */
            size_t j = (size_t)(next_rand(&x) % (i + 1));
            uint64_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (i = 0; i < (size_t)writes; i++)
            offs[i] = perm[i] * 65536 + (next_rand(&x) % 16) * 4096;
        free(perm);
        if (create_image(cow, "65536", "1G") < 0 || run_quiet(fill) < 0 ||
            run_quiet(snap) < 0 || warm(cow) < 0) {
            fail(names[5], "preparing the image");
        } else {
            printf("  image: region filled by qemu-io, then qemu-img snapshot "
                   "-c s; copied (cp --sparse=always) before every run\n");
            printf("  durability: as in 5\n");
            io_figure(names[5], 0.2, offs, writes, PREP_COPY, cow, 0);
        }
    }
figure7:
    free(offs);

    /* 7 and 8. commit and rebase of a BENCH_MIB MiB overlay */
    if (WANT(7) || WANT(8)) {
        char jd[320];
        snprintf(jd, sizeof jd, "%s/job-source", dir);
        printf("\n7-8: a %llu MiB qcow2 backing file (1 MiB of data every 4 MiB), an "
               "overlay with %llu MiB, a new backing file differing in 1 MiB of 16\n",
               (unsigned long long)(4 * mib), (unsigned long long)mib);
        printf("  durability: both sides' exits leave the images durable or not as their "
               "flushes (counted below) say\n");
        if (make_job_dir(jd, mib) < 0) {
            fail(names[6], "preparing the images");
        } else {
            if (WANT(7)) {
                printf("\n%s\n", names[6]);
                job_figure(names[6], jd, 0, (double)(mib << 20));
            }
            if (WANT(8)) {
                printf("\n%s\n", names[7]);
                job_figure(names[7], jd, 1, (double)(mib << 20));
            }
        }
    }

    printf("\n");
    loadavg("end");
    if (failed || missed)
        printf("bench_qcow2w: %d target(s) MISSED, %d figure(s) FAILED\n",
               missed, failed);
    else
        printf("bench_qcow2w: every target met\n");
    return failed || missed ? 1 : 0;
}

/* bench_qcow2w.c - qcow2w.h against qemu in the same run, on the same data
 * and cluster size (64 KiB), medians of RUNS runs.
 *
 *   1. import: a raw file of BENCH_MIB MiB (default 1024, random data) to
 *      qcow2 with `qcow2w import` (the CLI built -O2 next to this bench,
 *      $B/bench_qcow2w_cli) against `qemu-img convert -f raw -O qcow2` and
 *      `dd bs=1M` of the raw file: without fsync, then each followed by one
 *      fsync of the output (timed). Also qcow2w's default, crash-ordered
 *      import (its checkpoints' fdatasyncs). Target >= 1.0x qemu.
 *   2. 10,000 random 4 KiB writes into a fresh 1 GiB image: qcow2w in this
 *      process (open, writes, close with its flushes) against one qemu-io
 *      process doing the same writes (--cache=writeback, flush at exit).
 *      Target >= 1.5x qemu.
 *   3. The same writes into the first 256 MiB after they were written and
 *      a snapshot taken: every write copies a shared cluster. qemu flushes
 *      on each; qcow2w keeps its crash order without. Target >= 5x qemu.
 * Write amplification = bytes the process wrote (write/pwrite calls, from
 * /proc/<pid>/io wchar, read before the child is reaped) / user bytes.
 * Without qemu-img / qemu-io the bench says so and skips. */
#define _DEFAULT_SOURCE /* sync(), waitid(), mkdtemp() */
#define QCOW2W_IMPLEMENTATION
#include "../qcow2w.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_common.h"

#define RUNS 5
#define WRITES 10000

static char dir[256];

static int have(const char *tool)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s > /dev/null 2>&1", tool);
    return system(cmd) == 0;
}

/* Run argv; returns wall seconds, *wchar = bytes it wrote; -1 on failure. */
static double run(char *const argv[], uint64_t *wchar)
{
    double t0 = bench_now(), t;
    siginfo_t si;
    int status;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) { dup2(devnull, 1); dup2(devnull, 2); }
        execvp(argv[0], argv);
        _exit(127);
    }
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0) return -1;
    t = bench_now() - t0;
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
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench: %s failed (status %d)\n", argv[0], status);
        return -1;
    }
    return t;
}

static double fsync_path(const char *path)
{
    double t0 = bench_now();
    int fd = open(path, O_RDWR);
    if (fd < 0 || fsync(fd) < 0) return -1;
    close(fd);
    return bench_now() - t0;
}

static void settle(const char *path)
{
    if (path) unlink(path);
    sync();
}

static int make_raw(const char *path, uint64_t bytes)
{
    unsigned char *buf = (unsigned char *)malloc(1 << 20);
    uint64_t x = 0x9e3779b97f4a7c15ull, off;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    size_t i;
    if (!buf || fd < 0) return -1;
    for (off = 0; off < bytes; off += 1 << 20) {
        for (i = 0; i < (1u << 20); i += 8) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            memcpy(buf + i, &x, 8);
        }
        if (q2w_pwrite_full(fd, off, buf, 1 << 20) < 0) return -1;
    }
    close(fd);
    free(buf);
    /* Warm the page cache: every contender reads it from memory. */
    fd = open(path, O_RDONLY);
    buf = (unsigned char *)malloc(1 << 20);
    if (fd < 0 || !buf) return -1;
    while (read(fd, buf, 1 << 20) > 0) {}
    close(fd);
    free(buf);
    return 0;
}

typedef struct counted {
    uint64_t written;
} counted;

static int exec_counting(q2w_image *img, int fd, counted *c)
{
    size_t n, i;
    const q2w_op *op = q2w_batch(img, &n);
    for (i = 0; i < n; i++)
        if (op[i].kind == Q2W_OP_WRITE) c->written += op[i].len;
    return q2w_posix_exec(img, fd, NULL, 0);
}

/* Drive rc to the end through the POSIX executor, counting the bytes
 * written in c. */
static int run_counting(q2w_image *img, int fd, counted *c, int rc)
{
    while (rc == Q2W_PENDING) rc = q2w_resume(img, exec_counting(img, fd, c));
    return rc;
}

/* Open img_path writable with qcow2w (one handle at a time): the fd, or -1. */
static int open_ours(const char *img_path, q2w_image *img, counted *c)
{
    static unsigned char mem[8u << 20];
    static q2w_op ops[256];
    q2w_config cfg;
    struct stat st;
    int fd = open(img_path, O_RDWR);
    if (fd < 0 || fstat(fd, &st) < 0) return -1;
    memset(&cfg, 0, sizeof cfg);
    cfg.mem = mem;
    cfg.mem_len = sizeof mem;
    cfg.ops = ops;
    cfg.ops_cap = 256;
    cfg.file_size = (uint64_t)st.st_size;
    cfg.writable = 1;
    if (run_counting(img, fd, c, q2w_open(img, &cfg)) != Q2W_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Our side of the random-write test: seconds, or -1. */
static double ours_random(const char *img_path, const uint64_t *offs,
                          uint64_t *written)
{
    unsigned char data[4096];
    q2w_image img;
    counted c = {0};
    double t0 = bench_now();
    int fd = open_ours(img_path, &img, &c), rc = Q2W_OK, i;
    if (fd < 0) return -1;
    for (i = 0; i < WRITES && rc == Q2W_OK; i++) {
        memset(data, (i * 7 + 1) & 0xff, sizeof data);
        rc = run_counting(&img, fd, &c,
                          q2w_write(&img, offs[i], data, sizeof data));
    }
    if (rc == Q2W_OK) rc = run_counting(&img, fd, &c, q2w_close(&img));
    close(fd);
    if (rc != Q2W_OK) {
        fprintf(stderr, "bench: qcow2w random writes: %s\n", q2w_strerror(rc));
        return -1;
    }
    *written = c.written;
    return bench_now() - t0;
}

/* Write the first `region` bytes and take a snapshot, with qcow2w. */
static int ours_prepare_shared(const char *img_path, uint64_t region)
{
    unsigned char *buf = (unsigned char *)malloc(4u << 20);
    q2w_image img;
    counted c = {0};
    uint64_t off;
    int fd, rc = Q2W_OK;
    if (!buf || (fd = open_ours(img_path, &img, &c)) < 0) return -1;
    memset(buf, 17, 4u << 20);
    for (off = 0; off < region && rc == Q2W_OK; off += 4u << 20)
        rc = run_counting(&img, fd, &c, q2w_write(&img, off, buf, 4u << 20));
    if (rc == Q2W_OK)
        rc = run_counting(&img, fd, &c,
                          q2w_snapshot_create(&img, "base", 0, 0, 0));
    if (rc == Q2W_OK) rc = run_counting(&img, fd, &c, q2w_close(&img));
    close(fd);
    free(buf);
    if (rc != Q2W_OK)
        fprintf(stderr, "bench: preparing the snapshot: %s\n", q2w_strerror(rc));
    return rc == Q2W_OK ? 0 : -1;
}

static int create_ours(const char *path, uint64_t size)
{
    q2w_create_opts o;
    uint64_t len;
    void *buf;
    int fd, rc;
    memset(&o, 0, sizeof o);
    o.size = size;
    o.cluster_size = 65536;
    if (q2w_create(&o, NULL, 0, &len, NULL) != Q2W_OK) return -1;
    buf = malloc((size_t)len);
    if (!buf || q2w_create(&o, buf, (size_t)len, &len, NULL) != Q2W_OK) return -1;
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return -1;
    rc = q2w_pwrite_full(fd, 0, buf, (size_t)len);
    close(fd);
    free(buf);
    return rc;
}

/* WRITES random 4 KiB-aligned offsets below `span`, from the xorshift
 * state *x (the same sequence for both sides). */
static void random_offsets(uint64_t *offs, uint64_t *x, uint64_t span)
{
    int i;
    for (i = 0; i < WRITES; i++) {
        *x ^= *x << 13; *x ^= *x >> 7; *x ^= *x << 17;
        offs[i] = (*x % (span / 4096)) * 4096;
    }
}

/* Medians of the two sides' RUNS times, their rates, write amplification
 * and the ratio against `target`; 1 when the target is missed. */
static int report_writes(const char *what, double *t_o,
                         double *t_q, uint64_t wo, uint64_t wq,
                         const char *target_name, double target)
{
    double mo = bench_median(t_o, RUNS), mq = bench_median(t_q, RUNS);
    printf("10000 random 4 KiB writes %s: qcow2w %.3f s (%.0f writes/s)  "
           "qemu-io %.3f s (%.0f writes/s)\n", what, mo, WRITES / mo, mq,
           WRITES / mq);
    printf("write amplification: qcow2w %.2f  qemu-io %.2f\n",
           (double)wo / (WRITES * 4096.0), (double)wq / (WRITES * 4096.0));
    printf("target: %s >= %.1fx qemu-io: %.2fx %s\n", target_name, target,
           mq / mo, mq / mo >= target ? "met" : "MISSED");
    return mq / mo < target;
}

/* One qemu-io process doing the WRITES 4 KiB writes at offs: its argv
 * (commands stored in *cmds; free both). */
static char **qemu_io_argv(const uint64_t *offs, char *img, char **cmds)
{
    size_t argc = 0;
    int i;
    char **argv = (char **)calloc(2 * WRITES + 8, sizeof *argv);
    *cmds = (char *)malloc((size_t)WRITES * 48);
    if (!argv || !*cmds) return NULL;
    argv[argc++] = (char *)"qemu-io";
    argv[argc++] = (char *)"-f";
    argv[argc++] = (char *)"qcow2";
    argv[argc++] = (char *)"--cache=writeback";
    for (i = 0; i < WRITES; i++) {
        char *c = *cmds + (size_t)i * 48;
        snprintf(c, 48, "write -P %d %llu 4k", (i * 7 + 1) & 0xff,
                 (unsigned long long)offs[i]);
        argv[argc++] = (char *)"-c";
        argv[argc++] = c;
    }
    argv[argc++] = img;
    argv[argc] = NULL;
    return argv;
}

int main(void)
{
    const char *mib_env = getenv("BENCH_MIB");
    const char *b = getenv("B");
    uint64_t mib = mib_env ? strtoull(mib_env, NULL, 10) : 1024;
    uint64_t bytes = mib << 20;
    char raw[300], out[300], cli[300], img[300], oflag[64];
    double t_ours[RUNS], t_ours_s[RUNS], t_ours_safe[RUNS], t_qemu[RUNS],
        t_qemu_s[RUNS], t_dd[RUNS], t_dd_s[RUNS], m[7];
    uint64_t w_ours = 0, w_ours_safe = 0, w_qemu = 0, w_dd = 0;
    uint64_t *offs, x = 12345;
    int r, ok = 1, missed = 0;

    if (!have("qemu-img") || !have("qemu-io")) {
        printf("bench_qcow2w: qemu-img / qemu-io not found: SKIPPED "
               "(apt-get install qemu-utils)\n");
        return 0;
    }
    snprintf(dir, sizeof dir, "%s/bench_qcow2w.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) { perror("mkdtemp"); return 1; }
    snprintf(raw, sizeof raw, "%s/data.raw", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    snprintf(img, sizeof img, "%s/rand.qcow2", dir);
    snprintf(cli, sizeof cli, "%s/bench_qcow2w_cli", b ? b : "build");
    snprintf(oflag, sizeof oflag, "cluster_size=65536");
    if (make_raw(raw, bytes) < 0) { perror("raw file"); return 1; }

    printf("qcow2w (median of %d runs, 64 KiB clusters, %llu MiB of random "
           "data, page cache warm)\n", RUNS, (unsigned long long)mib);
    for (r = 0; r < RUNS && ok; r++) {
        char *a_ours[] = {cli, (char *)"import", (char *)"-n", raw, out,
                          (char *)"-o", oflag, NULL};
        char *a_safe[] = {cli, (char *)"import", raw, out, (char *)"-o", oflag,
                          NULL};
        char *a_qemu[] = {(char *)"qemu-img", (char *)"convert", (char *)"-f",
                          (char *)"raw", (char *)"-O", (char *)"qcow2",
                          (char *)"-o", oflag, raw, out, NULL};
        char of[320];
        char *a_dd[] = {(char *)"dd", NULL, of, (char *)"bs=1M", NULL};
        char iff[320];
        snprintf(iff, sizeof iff, "if=%s", raw);
        snprintf(of, sizeof of, "of=%s", out);
        a_dd[1] = iff;

        /* Alternate who goes first: the page cache and the journal
         * settling after the previous run should not favour one side. */
        if (r % 2) {
            settle(out);
            t_qemu[r] = run(a_qemu, &w_qemu);
            t_qemu_s[r] = t_qemu[r] + fsync_path(out);
        }
        settle(out);
        t_ours[r] = run(a_ours, &w_ours);
        t_ours_s[r] = t_ours[r] + fsync_path(out);
        if (!(r % 2)) {
            settle(out);
            t_qemu[r] = run(a_qemu, &w_qemu);
            t_qemu_s[r] = t_qemu[r] + fsync_path(out);
        }
        settle(out);
        t_ours_safe[r] = run(a_safe, &w_ours_safe);
        settle(out);
        t_dd[r] = run(a_dd, &w_dd);
        t_dd_s[r] = t_dd[r] + fsync_path(out);
        settle(out);
        ok = t_ours[r] > 0 && t_ours_safe[r] > 0 && t_qemu[r] > 0 && t_dd[r] > 0;
    }
    if (!ok) return 1;
    m[0] = bench_median(t_ours, RUNS);
    m[1] = bench_median(t_qemu, RUNS);
    m[2] = bench_median(t_dd, RUNS);
    m[3] = bench_median(t_ours_s, RUNS);
    m[4] = bench_median(t_qemu_s, RUNS);
    m[5] = bench_median(t_dd_s, RUNS);
    m[6] = bench_median(t_ours_safe, RUNS);
    printf("import, no fsync:    qcow2w %.3f s  qemu-img convert %.3f s  "
           "dd %.3f s\n", m[0], m[1], m[2]);
    printf("import + one fsync:  qcow2w %.3f s  qemu-img convert %.3f s  "
           "dd %.3f s\n", m[3], m[4], m[5]);
    printf("import, qcow2w crash-ordered (checkpoint fdatasyncs): %.3f s\n",
           m[6]);
    printf("write amplification: qcow2w %.4f  qemu-img %.4f  dd %.4f\n",
           (double)w_ours / (double)bytes, (double)w_qemu / (double)bytes,
           (double)w_dd / (double)bytes);
    printf("target: import >= 1.0x qemu-img convert: %.2fx (no fsync) %s, "
           "%.2fx (fsync) %s\n", m[1] / m[0], m[1] / m[0] >= 1.0 ? "met" : "MISSED",
           m[4] / m[3], m[4] / m[3] >= 1.0 ? "met" : "MISSED");
    printf("import vs dd: %.2fx (no fsync), %.2fx (fsync)\n", m[2] / m[0],
           m[5] / m[3]);
    missed += m[1] / m[0] < 1.0 || m[4] / m[3] < 1.0;
    unlink(raw);

    /* Random 4 KiB writes. */
    offs = (uint64_t *)malloc(WRITES * sizeof *offs);
    if (!offs) return 1;
    random_offsets(offs, &x, 1u << 30);
    {
        double t_o[RUNS], t_q[RUNS];
        uint64_t wo = 0, wq = 0;
        char *cmds;
        char **argv_q = qemu_io_argv(offs, img, &cmds);
        if (!argv_q) return 1;
        for (r = 0; r < RUNS; r++) {
            char *a_create[] = {(char *)"qemu-img", (char *)"create",
                                (char *)"-q", (char *)"-f", (char *)"qcow2",
                                (char *)"-o", oflag, img, (char *)"1G", NULL};
            settle(img);
            if (create_ours(img, 1u << 30) < 0) return 1;
            sync();
            t_o[r] = ours_random(img, offs, &wo);
            settle(img);
            if (run(a_create, NULL) < 0) return 1;
            sync();
            t_q[r] = run(argv_q, &wq);
            if (t_o[r] < 0 || t_q[r] < 0) return 1;
        }
        settle(img);
        missed += report_writes("into a fresh 1 GiB image", t_o, t_q, wo, wq,
                                "random writes", 1.5);
        free(argv_q);
        free(cmds);
    }
    /* 3. The same writes into clusters shared with a snapshot: the first
     * REGION bytes written, a snapshot taken, then 10,000 random 4 KiB
     * writes inside that region. Every one copies a cluster. */
    {
        const uint64_t region = 256u << 20;
        double t_o[RUNS], t_q[RUNS];
        uint64_t wo = 0, wq = 0;
        char *cmds, **argv_q, fillcmd[64];
        random_offsets(offs, &x, region);
        if (!(argv_q = qemu_io_argv(offs, img, &cmds))) return 1;
        snprintf(fillcmd, sizeof fillcmd, "write -P 17 0 %llu",
                 (unsigned long long)region);
        for (r = 0; r < RUNS; r++) {
            char *a_create[] = {(char *)"qemu-img", (char *)"create",
                                (char *)"-q", (char *)"-f", (char *)"qcow2",
                                (char *)"-o", oflag, img, (char *)"1G", NULL};
            char *a_fill[] = {(char *)"qemu-io", (char *)"-f", (char *)"qcow2",
                              (char *)"-c", fillcmd, img, NULL};
            char *a_snap[] = {(char *)"qemu-img", (char *)"snapshot",
                              (char *)"-c", (char *)"base", img, NULL};
            settle(img);
            if (create_ours(img, 1u << 30) < 0 ||
                ours_prepare_shared(img, region) < 0)
                return 1;
            sync();
            t_o[r] = ours_random(img, offs, &wo);
            settle(img);
            if (run(a_create, NULL) < 0 || run(a_fill, NULL) < 0 ||
                run(a_snap, NULL) < 0)
                return 1;
            sync();
            t_q[r] = run(argv_q, &wq);
            if (t_o[r] < 0 || t_q[r] < 0) return 1;
        }
        settle(img);
        missed += report_writes("into clusters shared with a snapshot", t_o,
                                t_q, wo, wq, "copy-on-write", 5.0);
        free(argv_q);
        free(cmds);
    }
    free(offs);
    rmdir(dir);
    return missed ? 1 : 0;
}

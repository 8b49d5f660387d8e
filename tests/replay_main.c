/* replay_main.c - the plain main() that drives any fuzz harness without a
 * fuzzing engine. Linked with one fuzz/<target>.c (which defines
 * LLVMFuzzerTestOneInput), it has two modes:
 *
 *   replay_<target> [-q] [-x] PATH...
 *       Replay mode (the corpus gate, `make replay`): every regular file
 *       under each PATH (directories are walked, sorted by name, so the
 *       order is stable) is run through the harness, all of them in one
 *       forked child. If that child fails, each file is run again in its own
 *       child, so a crash or ALK_CHECK abort is attributed to its file and
 *       the rest still run. Ends with "<target>: N files, P passed, F failed
 *       (T s)". -x: stop at the first failure, without isolating (the
 *       mutation tests need a verdict, not the list; the failed count is 1).
 *
 *   replay_<target> --seed N [--runs M] [--max-len L] [--run I] [--save DIR]
 *   replay_<target> --seed N --runs M [--max-len L] --write DIR
 *       Seed mode (soak runs, demos): the same harness fed from a PRNG
 *       stream instead of files. Run i of seed N uses the input
 *       alksim_seed_input(N, i, L): a drawn length <= L (default 4096) of
 *       splitmix64 bytes, what alksim_run_seed feeds a scenario. A failing
 *       run prints how to reproduce it (--seed N --run I) and, with --save,
 *       writes the input to DIR so it can be promoted into corpus/<target>/.
 *
 * Exit status: 0 when everything passed, 1 otherwise. */
#define _POSIX_C_SOURCE 200809L
/* alksim's seed-mode input maker, private to this file (the harness it is
 * linked with may carry its own copy of alksim, or none). */
#define ALKSIM_STATIC
#define ALKSIM_IMPLEMENTATION
#define ALKSIM_NO_STDIO
#include "alksim.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The program's name as its reports give it: argv[0] without its directory
 * (replay_session, build/planted/<bug>/replay_session: replay_session). */
static const char *target_name = "harness";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One input through the harness. libFuzzer gives meaning to two return
 * values only (0, and -1: keep the input out of the corpus); any other is
 * a harness - or a header's fuzz_one - gone wrong, and fails the file. */
static void run_one(const uint8_t *data, size_t size)
{
    int rc = LLVMFuzzerTestOneInput(data, size);
    if (rc != 0 && rc != -1) {
        fprintf(stderr, "LLVMFuzzerTestOneInput returned %d: only 0 and -1 "
                        "mean anything\n", rc);
        abort();
    }
}

static int quiet;
static int first_failure_only; /* -x */

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs fn(arg) in a child process; 1 if it exited cleanly. */
static int run_contained(void (*fn)(void *), void *arg, const char *label)
{
    pid_t pid;
    int status;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        perror("fork");
        return 0;
    }
    if (pid == 0) {
        fn(arg);
        exit(0); /* not _exit: coverage and leak checks run at exit */
    }
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("waitpid");
            return 0;
        }
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 1;
    if (WIFSIGNALED(status))
        fprintf(stderr, "FAIL %s: killed by signal %d\n", label,
                WTERMSIG(status));
    else
        fprintf(stderr, "FAIL %s: exit status %d\n", label,
                WEXITSTATUS(status));
    return 0;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0, got;
    if (!f)
        return NULL;
    for (;;) {
        if (len == cap) {
            uint8_t *grown;
            cap = cap ? cap * 2 : 4096;
            grown = (uint8_t *)realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    /* exactly the file's size, like the engines: ASan then sees any read
     * past the end of the input */
    {
        uint8_t *exact = (uint8_t *)realloc(buf, len ? len : 1);
        if (exact)
            buf = exact;
    }
    *size = len;
    return buf;
}

typedef struct tally {
    unsigned long files, passed, failed;
} tally;

/* The files of one replay, in order. */
typedef struct file_list {
    char **paths;
    size_t n, cap;
    unsigned long unreadable;
} file_list;

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_add(file_list *l, char *path)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 256;
        char **grown = (char **)realloc(l->paths, cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "FAIL %s: out of memory\n", path);
            free(path);
            l->unreadable++;
            return;
        }
        l->paths = grown;
        l->cap = cap;
    }
    l->paths[l->n++] = path;
}

static char *dup_path(const char *a, const char *b)
{
    size_t len = strlen(a) + (b ? strlen(b) + 1 : 0) + 1;
    char *full = (char *)malloc(len);
    if (full)
        snprintf(full, len, b ? "%s/%s" : "%s", a, b ? b : "");
    return full;
}

/* Every regular file under path, directories walked sorted by name. */
static void collect_path(const char *path, file_list *l)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "FAIL %s: %s\n", path, strerror(errno));
        l->unreadable++;
        return;
    }
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *e;
        file_list sub = {NULL, 0, 0, 0};
        size_t i;
        if (!d) {
            fprintf(stderr, "FAIL %s: %s\n", path, strerror(errno));
            l->unreadable++;
            return;
        }
        while ((e = readdir(d)) != NULL) {
            char *full;
            if (e->d_name[0] == '.')
                continue;
            full = dup_path(path, e->d_name);
            if (full)
                list_add(&sub, full);
            else
                l->unreadable++;
        }
        closedir(d);
        if (sub.n)
            qsort(sub.paths, sub.n, sizeof *sub.paths, name_cmp);
        for (i = 0; i < sub.n; i++) {
            collect_path(sub.paths[i], l);
            free(sub.paths[i]);
        }
        l->unreadable += sub.unreadable;
        free(sub.paths);
        return;
    }
    if (S_ISREG(st.st_mode)) {
        char *copy = dup_path(path, NULL);
        if (copy)
            list_add(l, copy);
        else
            l->unreadable++;
    }
}

/* Runs files [from, to) of the list through the harness, each in a buffer
 * of exactly its size. A file that cannot be read exits the child with 3. */
typedef struct file_range {
    const file_list *l;
    size_t from, to;
} file_range;

static void run_file_range(void *arg)
{
    const file_range *r = (const file_range *)arg;
    size_t i;
    for (i = r->from; i < r->to; i++) {
        size_t size = 0;
        uint8_t *data = read_file(r->l->paths[i], &size);
        if (!data) {
            fprintf(stderr, "FAIL %s: cannot read\n", r->l->paths[i]);
            exit(3);
        }
        if (!quiet)
            fprintf(stderr, "  %s (%zu bytes)\n", r->l->paths[i], size);
        run_one(size ? data : (const uint8_t *)"", size);
        free(data);
    }
}

/* All files run in one child process: forking per file (and running the
 * sanitizers' exit-time checks per file) cost far more than the harnesses.
 * Only when that child fails is each file run in its own child, so the
 * failure is attributed to its file and the rest still run. */
static void replay_files(const file_list *l, tally *t)
{
    file_range r;
    size_t i;
    t->files += l->n;
    if (!l->n)
        return;
    r.l = l;
    r.from = 0;
    r.to = l->n;
    if (run_contained(run_file_range, &r, "the batch of every file")) {
        t->passed += l->n;
        return;
    }
    if (first_failure_only) {
        t->failed++;
        return;
    }
    fprintf(stderr, "  isolating the failing files, each in its own child\n");
    for (i = 0; i < l->n; i++) {
        r.from = i;
        r.to = i + 1;
        if (run_contained(run_file_range, &r, l->paths[i]))
            t->passed++;
        else
            t->failed++;
    }
}

/* The input of run i of seed `seed`: alksim's seed mode, so an input a
 * user's own soak (alksim_run_seed) reports is the one --seed N --run I
 * replays. */
static size_t seed_input(uint64_t seed, uint64_t run, uint8_t *buf,
                         size_t max_len)
{
    return alksim_seed_input(seed, run, buf, max_len);
}

/* Seed mode runs SEED_BATCH runs per child process (fork and exit-time
 * leak checks cost more than a run); a failing batch is replayed run by run,
 * each in its own child, to name the failing runs. */
#define SEED_BATCH 256

typedef struct seed_range {
    uint64_t seed, from, to;
    size_t max_len;
    uint8_t *buf;
} seed_range;

static void run_seed_range(void *arg)
{
    const seed_range *r = (const seed_range *)arg;
    uint64_t i;
    for (i = r->from; i < r->to; i++)
        run_one(r->buf, seed_input(r->seed, i, r->buf, r->max_len));
}

/* --write: the seed-mode inputs as files (committed seed corpora are made
 * this way; the names and bytes are stable across runs). */
static int write_inputs(uint64_t seed, uint64_t runs, size_t max_len,
                        const char *dir)
{
    uint8_t *buf = (uint8_t *)malloc(max_len ? max_len : 1);
    uint64_t i;
    if (!buf)
        return 1;
    for (i = 0; i < runs; i++) {
        char path[512];
        size_t len = seed_input(seed, i, buf, max_len);
        FILE *f;
        snprintf(path, sizeof path, "%s/seed-%llu-run-%03llu", dir,
                 (unsigned long long)seed, (unsigned long long)i);
        f = fopen(path, "wb");
        if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
            perror(path);
            free(buf);
            return 1;
        }
    }
    free(buf);
    printf("%s: wrote %llu seed-mode inputs to %s\n", target_name,
           (unsigned long long)runs, dir);
    return 0;
}

static int seed_mode(uint64_t seed, uint64_t runs, uint64_t only_run,
                     int single, size_t max_len, const char *save_dir)
{
    uint8_t *buf = (uint8_t *)malloc(max_len ? max_len : 1);
    uint64_t i, failed = 0, first = single ? only_run : 0;
    uint64_t last = single ? only_run + 1 : runs;
    double t0 = now_seconds(), next_report = t0 + 10.0;
    seed_range r;
    if (!buf)
        return 1;
    r.seed = seed;
    r.max_len = max_len;
    r.buf = buf;
    for (i = first; i < last; i++) {
        char label[96];
        size_t len;
        if ((i - first) % SEED_BATCH == 0) {
            r.from = i;
            r.to = last - i < SEED_BATCH ? last : i + SEED_BATCH;
            snprintf(label, sizeof label, "seed %llu runs %llu..%llu",
                     (unsigned long long)seed, (unsigned long long)r.from,
                     (unsigned long long)(r.to - 1));
            if (run_contained(run_seed_range, &r, label)) {
                i = r.to - 1;
                goto progress;
            }
            fprintf(stderr, "  isolating the failing runs of that batch\n");
        }
        r.from = i;
        r.to = i + 1;
        len = seed_input(seed, i, buf, max_len);
        snprintf(label, sizeof label, "seed %llu run %llu",
                 (unsigned long long)seed, (unsigned long long)i);
        if (!run_contained(run_seed_range, &r, label)) {
            failed++;
            fprintf(stderr, "  reproduce: %s --seed %llu --run %llu "
                            "--max-len %zu\n",
                    target_name, (unsigned long long)seed,
                    (unsigned long long)i, max_len);
            if (save_dir) {
                char path[512];
                FILE *f;
                snprintf(path, sizeof path, "%s/seed-%llu-run-%llu", save_dir,
                         (unsigned long long)seed, (unsigned long long)i);
                f = fopen(path, "wb");
                if (f) {
                    fwrite(buf, 1, len, f);
                    fclose(f);
                    fprintf(stderr, "  input saved to %s\n", path);
                }
            }
        }
    progress:
        if (now_seconds() >= next_report) {
            next_report += 10.0;
            printf("%s: seed %llu: %llu/%llu runs, %llu failed\n", target_name,
                   (unsigned long long)seed,
                   (unsigned long long)(i + 1 - first),
                   (unsigned long long)(last - first),
                   (unsigned long long)failed);
            fflush(stdout);
        }
    }
    free(buf);
    printf("%s: seed %llu: %llu runs, %llu passed, %llu failed (%.2f s)\n",
           target_name, (unsigned long long)seed,
           (unsigned long long)(last - first),
           (unsigned long long)(last - first - failed),
           (unsigned long long)failed, now_seconds() - t0);
    return failed ? 1 : 0;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: %s [-q] [-x] PATH...        replay files / directories\n"
            "       %s --seed N [--runs M] [--max-len L] [--run I] "
            "[--save DIR]\n"
            "       %s --seed N --runs M [--max-len L] --write DIR\n",
            target_name, target_name, target_name);
}

int main(int argc, char **argv)
{
    tally t = {0, 0, 0};
    file_list files = {NULL, 0, 0, 0};
    double t0;
    int i, have_seed = 0, single = 0, npaths = 0;
    uint64_t seed = 0, runs = 1000, only_run = 0;
    size_t max_len = 4096;
    const char *save_dir = NULL, *write_dir = NULL;

    if (argc > 0 && argv[0][0]) {
        const char *slash = strrchr(argv[0], '/');
        target_name = slash ? slash + 1 : argv[0];
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "-x")) {
            first_failure_only = 1;
        } else if (!strcmp(a, "--seed") && v) {
            seed = strtoull(v, NULL, 0);
            have_seed = 1;
            i++;
        } else if (!strcmp(a, "--runs") && v) {
            runs = strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--run") && v) {
            only_run = strtoull(v, NULL, 0);
            single = 1;
            i++;
        } else if (!strcmp(a, "--max-len") && v) {
            max_len = (size_t)strtoull(v, NULL, 0);
            i++;
        } else if (!strcmp(a, "--save") && v) {
            save_dir = v;
            i++;
        } else if (!strcmp(a, "--write") && v) {
            write_dir = v;
            i++;
        } else if (a[0] == '-') {
            usage(stderr);
            return 2;
        } else {
            npaths++;
        }
    }
    if (have_seed && write_dir)
        return write_inputs(seed, runs, max_len, write_dir);
    if (have_seed)
        return seed_mode(seed, runs, only_run, single, max_len, save_dir);
    if (!npaths) {
        usage(stderr);
        return 2;
    }
    t0 = now_seconds();
    for (i = 1; i < argc; i++) {
        if (argv[i][0] == '-')
            continue;
        collect_path(argv[i], &files);
    }
    replay_files(&files, &t);
    t.failed += files.unreadable;
    for (size_t k = 0; k < files.n; k++)
        free(files.paths[k]);
    free(files.paths);
    printf("%s: %lu files, %lu passed, %lu failed (%.2f s)\n", target_name,
           t.files, t.passed, t.failed, now_seconds() - t0);
    return t.failed || !t.files ? 1 : 0;
}

/* json_conformance_main.c - run tests/json_conformance/ against a validator.
 *
 *   json_conformance DIR           check testkit/json_ref.h (the reference)
 *   json_conformance DIR --impl    check alktunnel.h's alkt_json_validate
 *                                  (needs -DALKT_CONFORMANCE_IMPL)
 *
 * The expected verdict is the file-name prefix: y_ and i_accept_ must be
 * accepted, n_ and i_reject_ rejected, with max_depth 64 (the library
 * default). Other files (README.md, gen.py) are skipped. Prints one line per
 * failure, then "conformance: N passed, N failed"; exits 1 on any failure,
 * 2 on a usage or I/O error. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../testkit/json_ref.h"

#ifdef ALKT_CONFORMANCE_IMPL
/* ---- alktunnel.h binding: the only part that depends on the library ---- */
#include "alktunnel.h"

static int impl_accepts(const unsigned char *buf, size_t len)
{
    alkt_json_limits lim;
    alkt_error err;
    memset(&lim, 0, sizeof lim); /* zero = defaults: max_depth 64 */
    memset(&err, 0, sizeof err);
    return alkt_json_validate((const char *)buf, len, &lim, &err) == 0;
}
#endif

#define CONFORMANCE_DEPTH 64

enum expectation { EXPECT_SKIP, EXPECT_ACCEPT, EXPECT_REJECT };

static enum expectation expectation_of(const char *name)
{
    size_t len = strlen(name);
    if (len < 5 || strcmp(name + len - 5, ".json") != 0)
        return EXPECT_SKIP;
    if (strncmp(name, "y_", 2) == 0 || strncmp(name, "i_accept_", 9) == 0)
        return EXPECT_ACCEPT;
    if (strncmp(name, "n_", 2) == 0 || strncmp(name, "i_reject_", 9) == 0)
        return EXPECT_REJECT;
    return EXPECT_SKIP;
}

/* Reads the whole file into an exact-size heap buffer, so ASan flags any read
 * past the end. Returns NULL on error; *len_out may be 0 with a non-NULL
 * 1-byte buffer. */
static unsigned char *read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long size;

    if (f == NULL)
        return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return NULL;
    }
    buf = (unsigned char *)malloc(size > 0 ? (size_t)size : 1u);
    if (buf == NULL || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *len_out = (size_t)size;
    return buf;
}

static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    const char *dir;
    int use_impl = 0;
    DIR *d;
    struct dirent *entry;
    char **names = NULL;
    size_t count = 0, cap = 0, i;
    unsigned long passed = 0, failed = 0;

    if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--impl") != 0)) {
        fprintf(stderr, "usage: %s DIR [--impl]\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    use_impl = argc == 3;
#ifndef ALKT_CONFORMANCE_IMPL
    if (use_impl) {
        fprintf(stderr, "--impl: built without -DALKT_CONFORMANCE_IMPL\n");
        return 2;
    }
#endif

    d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "cannot open directory %s\n", dir);
        return 2;
    }
    while ((entry = readdir(d)) != NULL) {
        if (expectation_of(entry->d_name) == EXPECT_SKIP)
            continue;
        if (count == cap) {
            size_t new_cap = cap ? cap * 2 : 256;
            char **grown = (char **)realloc(names, new_cap * sizeof *names);
            if (grown == NULL) {
                fprintf(stderr, "out of memory\n");
                return 2;
            }
            names = grown;
            cap = new_cap;
        }
        names[count] = (char *)malloc(strlen(entry->d_name) + 1);
        if (names[count] == NULL) {
            fprintf(stderr, "out of memory\n");
            return 2;
        }
        strcpy(names[count], entry->d_name);
        count++;
    }
    closedir(d);
    if (count > 0)
        qsort(names, count, sizeof *names, compare_names); /* stable output order */

    for (i = 0; i < count; i++) {
        enum expectation want = expectation_of(names[i]);
        char path[4096];
        unsigned char *buf;
        size_t len = 0, err_offset = 0;
        int accepted;

        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names[i]) >= sizeof path) {
            fprintf(stderr, "path too long: %s/%s\n", dir, names[i]);
            return 2;
        }
        buf = read_file(path, &len);
        if (buf == NULL) {
            fprintf(stderr, "cannot read %s\n", path);
            return 2;
        }
#ifdef ALKT_CONFORMANCE_IMPL
        if (use_impl)
            accepted = impl_accepts(buf, len);
        else
#endif
            accepted = json_ref_validate(buf, len, CONFORMANCE_DEPTH, &err_offset);

        if (accepted == (want == EXPECT_ACCEPT)) {
            passed++;
        } else if (accepted) {
            failed++;
            printf("FAIL %s: accepted, expected reject\n", names[i]);
        } else {
            failed++;
            if (use_impl)
                printf("FAIL %s: rejected, expected accept\n", names[i]);
            else
                printf("FAIL %s: rejected at byte %lu of %lu, expected accept\n",
                       names[i], (unsigned long)err_offset, (unsigned long)len);
        }
        free(buf);
        free(names[i]);
    }
    free(names);

    printf("conformance: %lu passed, %lu failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}

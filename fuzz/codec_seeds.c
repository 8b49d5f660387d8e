/* codec_seeds.c - writes the hand-made seeds of corpus/codec/.
 *
 *   codec_seeds DIR     (make seeds)
 *
 * Deterministic and byte-stable: running it again rewrites identical files,
 * so `git status` after `make seeds` shows nothing unless this program
 * changed. Promoted fuzzer findings live beside these seeds under their own
 * descriptive names (finding-*) and are never touched here. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec_layout.h"

static const char *out_dir;
static unsigned written;

static void put_be16(uint8_t *p, size_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)(v & 0xff);
}

static void write_seed(const char *name, const uint8_t *stream, size_t n,
                       unsigned max, int amplify, const uint8_t *pattern,
                       size_t pattern_len)
{
    static uint8_t buf[1 << 18];
    char path[512];
    size_t total = codec_build(buf, sizeof buf, stream, n, max, amplify,
                               pattern, pattern_len);
    FILE *f;
    if (!total) {
        fprintf(stderr, "codec_seeds: %s does not fit\n", name);
        exit(1);
    }
    snprintf(path, sizeof path, "%s/%s", out_dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, total, f) != total || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    written++;
}

/* Appends a frame of `len` bytes of a simple pattern; returns new length. */
static size_t add_frame(uint8_t *s, size_t at, size_t len, uint8_t fill)
{
    size_t i;
    put_be16(s + at, len);
    for (i = 0; i < len; i++)
        s[at + 2 + i] = (uint8_t)(fill + i);
    return at + 2 + len;
}

int main(int argc, char **argv)
{
    static uint8_t s[70000];
    static const uint8_t one[] = {1}, three[] = {3}, wide[] = {0x81},
                         empties[] = {0xff}, mixed[] = {2, 0xff, 7, 0x83, 1, 0};
    size_t n, i, cut;
    char name[128];

    if (argc != 2) {
        fprintf(stderr, "usage: codec_seeds DIR\n");
        return 2;
    }
    out_dir = argv[1];

    /* Valid frames, whole and chunked. */
    n = add_frame(s, 0, 5, 'a');
    write_seed("frame-hello", s, n, 0, 0, NULL, 0);
    n = add_frame(s, 0, 0, 0);
    write_seed("frame-empty", s, n, 0, 0, NULL, 0);
    n = 0;
    for (i = 0; i < 6; i++)
        n = add_frame(s, n, i * 7, (uint8_t)i);
    write_seed("batch-six-frames", s, n, 0, 0, NULL, 0);
    write_seed("batch-six-frames-bytewise-pattern", s, n, 0, 0, one, 1);
    write_seed("batch-six-frames-split-3", s, n, 0, 0, three, 1);
    write_seed("batch-six-frames-empty-chunks", s, n, 0, 0, empties, 1);
    write_seed("batch-six-frames-mixed-splits", s, n, 0, 0, mixed,
               sizeof mixed);

    /* Every truncation prefix of a three-frame stream. */
    n = add_frame(s, 0, 3, 'x');
    n = add_frame(s, n, 0, 0);
    n = add_frame(s, n, 4, 'y');
    for (cut = 0; cut <= n; cut++) {
        snprintf(name, sizeof name, "truncated-prefix-%02zu-of-%02zu", cut, n);
        write_seed(name, s, cut, 0, 0, NULL, 0);
    }

    /* Empty datagrams: many in a row, and split between their bytes. */
    memset(s, 0, 64);
    write_seed("empty-datagrams-32", s, 64, 0, 0, NULL, 0);
    write_seed("empty-datagrams-32-split-3", s, 64, 0, 0, three, 1);

    /* Limits: len == max, max + 1, for a firmware-sized and a tiny max. */
    n = add_frame(s, 0, 1500, 0x10);
    write_seed("len-1500-max-1500", s, n, 1500, 0, wide, 1);
    n = add_frame(s, 0, 1501, 0x10);
    write_seed("len-1501-max-1500-oversize", s, n, 1500, 0, NULL, 0);
    n = add_frame(s, 0, 1, 0x20);
    n = add_frame(s, n, 2, 0x21);
    write_seed("max-1-second-frame-oversize", s, n, 1, 0, one, 1);
    n = add_frame(s, 0, 0, 0);
    n = add_frame(s, n, 2, 0x30);
    write_seed("oversize-header-split-across-chunks", s, n, 1, 0, one, 1);
    s[0] = 0xff;
    s[1] = 0xff;
    write_seed("declared-65535-max-default-incomplete", s, 2, 0, 0, NULL, 0);
    write_seed("declared-65535-max-65534-oversize", s, 2, 65534, 0, NULL, 0);

    /* The biggest frame the wire allows, fed in 1 KiB-ish chunks. */
    n = add_frame(s, 0, 65535, 0x40);
    write_seed("len-65535-wide-chunks", s, n, 0, 0, wide, 1);

    /* A frame straddling chunks after a zero-copy one. */
    n = add_frame(s, 0, 10, 0x50);
    n = add_frame(s, n, 300, 0x60);
    n = add_frame(s, n, 10, 0x70);
    write_seed("zero-copy-then-straddle", s, n, 0, 0, mixed, sizeof mixed);

    /* The amplification attack: 16 MiB of `00 00` in one chunk. */
    write_seed("amplify-16MiB-zero-pairs", NULL, 0, 0, 1, NULL, 0);
    n = add_frame(s, 0, 1, 0x7f);
    n = add_frame(s, n, 0, 0);
    write_seed("amplify-16MiB-mixed-frames", s, n, 0, 1, NULL, 0);

    /* Short inputs that exhaust the control region. */
    write_seed("control-region-only", NULL, 0, 0, 0, NULL, 0);
    printf("codec_seeds: wrote %u seeds to %s\n", written, out_dir);
    return 0;
}

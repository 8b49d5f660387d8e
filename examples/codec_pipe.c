/* codec_pipe.c - frame lines into datagrams and back, through a pipe.
 *
 *   codec_pipe frame   [--max N]            stdin lines -> framed stdout
 *   codec_pipe unframe [--max N] [--chunk K] framed stdin -> lines
 *
 * `frame` turns each input line (without its newline) into one datagram,
 * sending the 2-byte header and the payload separately, as a writev()-style
 * sender would. An empty line is an empty datagram - not end of stream.
 * A line longer than the maximum is refused with both sizes; nothing is cut.
 *
 * `unframe` reads the stream K bytes at a time (default 4096; try 1 or 7 to
 * see frames split anywhere), pulls datagrams one by one and prints each as
 * a line. It reports on stderr how many datagrams it saw and how many had to
 * be assembled because they straddled reads (the rest were zero-copy).
 *
 * Usage example:  printf 'a\n\nbc\n' | codec_pipe frame | codec_pipe unframe */
#define ALKCODEC_IMPLEMENTATION
#include "../alkcodec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t line[ALKC_MAX_DATAGRAM + 2];
static uint8_t chunk[1 << 16];
static uint8_t decoder_mem[ALKC_MAX_DATAGRAM];

static int do_frame(size_t max)
{
    size_t limit = ALKC_DECODER_MEM_SIZE(max), n = 0;
    unsigned long lines = 0;
    int c;
    for (;;) {
        c = getchar();
        if (c == EOF && n == 0)
            break;
        if (c == '\n' || c == EOF) {
            uint8_t hdr[ALKC_HEADER_SIZE];
            alkc_error_info info;
            if (alkc_encode_header(hdr, n, max, &info) != ALKC_OK) {
                fprintf(stderr, "codec_pipe: line %lu: %s (%zu > %zu)\n",
                        lines + 1, alkc_strerror(info.code), info.length,
                        info.limit);
                return 1;
            }
            if (fwrite(hdr, 1, sizeof hdr, stdout) != sizeof hdr ||
                fwrite(line, 1, n, stdout) != n) {
                perror("codec_pipe: write");
                return 1;
            }
            lines++;
            n = 0;
            if (c == EOF)
                break;
            continue;
        }
        if (n == limit) {
            /* Keep counting so the error can say how long the line is. */
            size_t len = n + 1;
            while ((c = getchar()) != EOF && c != '\n')
                len++;
            fprintf(stderr, "codec_pipe: line %lu: %s (%zu > %zu)\n",
                    lines + 1, alkc_strerror(ALKC_ERR_PAYLOAD_TOO_LARGE), len,
                    limit);
            return 1;
        }
        line[n++] = (uint8_t)c;
    }
    fprintf(stderr, "codec_pipe frame: %lu datagrams\n", lines);
    return fflush(stdout) == 0 ? 0 : 1;
}

static int do_unframe(size_t max, size_t chunk_size)
{
    alkc_decoder dec;
    alkc_decoder_config cfg;
    unsigned long datagrams = 0, copied = 0;
    size_t got;
    int rc = ALKC_NEED_MORE;
    cfg.max_datagram = max;
    if (alkc_decoder_init(&dec, &cfg, decoder_mem, sizeof decoder_mem) !=
        ALKC_OK) {
        fprintf(stderr, "codec_pipe: bad --max %zu\n", max);
        return 2;
    }
    while ((got = fread(chunk, 1, chunk_size, stdin)) > 0) {
        alkc_datagram dg;
        alkc_decoder_feed(&dec, chunk, got);
        while ((rc = alkc_decoder_next(&dec, &dg)) == ALKC_OK) {
            fwrite(dg.data, 1, dg.len, stdout);
            putchar('\n');
            datagrams++;
            copied += (unsigned long)dg.copied;
        }
        if (rc < 0) {
            alkc_error_info info;
            alkc_decoder_error(&dec, &info);
            fprintf(stderr,
                    "codec_pipe: %s: declared %zu > max %zu at offset %llu\n",
                    alkc_strerror(rc), info.length, info.limit,
                    (unsigned long long)info.offset);
            return 1;
        }
    }
    if (alkc_decoder_is_mid_datagram(&dec)) {
        fprintf(stderr, "codec_pipe: stream ended inside a datagram "
                        "(%zu bytes of it received)\n",
                alkc_decoder_retained_bytes(&dec));
        return 1;
    }
    fprintf(stderr, "codec_pipe unframe: %lu datagrams, %lu assembled across "
                    "reads, %lu zero-copy\n",
            datagrams, copied, datagrams - copied);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    size_t max = 0, chunk_size = 4096;
    int i;
    if (argc < 2) {
        fprintf(stderr, "usage: codec_pipe frame|unframe [--max N] "
                        "[--chunk K]\n");
        return 2;
    }
    for (i = 2; i + 1 < argc; i += 2) {
        size_t v = (size_t)strtoul(argv[i + 1], NULL, 0);
        if (!strcmp(argv[i], "--max"))
            max = v;
        else if (!strcmp(argv[i], "--chunk") && v >= 1 && v <= sizeof chunk)
            chunk_size = v;
        else {
            fprintf(stderr, "codec_pipe: bad option %s\n", argv[i]);
            return 2;
        }
    }
    if (max > ALKC_MAX_DATAGRAM) {
        fprintf(stderr, "codec_pipe: --max must be at most %u\n",
                ALKC_MAX_DATAGRAM);
        return 2;
    }
    if (!strcmp(argv[1], "frame"))
        return do_frame(max);
    if (!strcmp(argv[1], "unframe"))
        return do_unframe(max, chunk_size);
    fprintf(stderr, "codec_pipe: unknown mode %s\n", argv[1]);
    return 2;
}

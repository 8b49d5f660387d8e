/* alkcodec.h - datagrams over a byte stream: [len: u16 big-endian][payload]
 * version 0.1.0 - single-header C99 library, part of alk
 *
 * Frames datagrams onto a reliable byte stream (TCP, a tunnel channel, a
 * UART) and cuts them out again, incrementally, without allocating.
 *
 * QUICK START
 *
 *   #define _POSIX_C_SOURCE 200809L   // read() under -std=c99
 *   #define ALKCODEC_IMPLEMENTATION   // in exactly one .c file
 *   #include "alkcodec.h"
 *   #include <stdio.h>
 *   #include <unistd.h>
 *
 *   static void handle(const uint8_t *data, size_t len) { fwrite(data, 1, len, stdout); }
 *
 *   int main(void) {
 *       // sending: a whole frame into a buffer...
 *       uint8_t frame[ALKC_FRAME_SIZE(5)];
 *       ptrdiff_t n = alkc_encode(frame, sizeof frame, "hello", 5, 0, NULL);
 *       // ...or just the 2-byte header, payload sent from where it lies
 *       uint8_t hdr[ALKC_HEADER_SIZE];
 *       alkc_encode_header(hdr, 5, 0, NULL);   // then writev(hdr, payload)
 *       if (n < 0) return 1;
 *
 *       // receiving: one datagram at a time, as bytes arrive (here on stdin)
 *       static uint8_t mem[ALKC_DECODER_MEM_SIZE(1500)];
 *       uint8_t buf[4096];
 *       ssize_t got;
 *       alkc_decoder dec;
 *       alkc_decoder_config cfg;
 *       cfg.max_datagram = 1500;
 *       alkc_decoder_init(&dec, &cfg, mem, sizeof mem);
 *       while ((got = read(0, buf, sizeof buf)) > 0) {
 *           alkc_datagram dg;
 *           int rc;
 *           alkc_decoder_feed(&dec, buf, (size_t)got);
 *           while ((rc = alkc_decoder_next(&dec, &dg)) == ALKC_OK)
 *               handle(dg.data, dg.len);   // valid until the next call
 *           if (rc < 0) { fprintf(stderr, "%s\n", alkc_strerror(rc)); return 1; }
 *       }                                  // rc == ALKC_NEED_MORE: read again
 *       return 0;
 *   }
 *
 * CONFIGURATION (define before including the implementation)
 *
 *   ALKCODEC_IMPLEMENTATION  emit the implementation in this translation unit
 *                            (ALK_IMPLEMENTATION turns on every alk header)
 *   ALKCODEC_STATIC          make every function static (private copy per TU)
 *   ALKCODEC_ASSERT(c)       internal-invariant check; default assert(c).
 *                            Fires only on a library bug or API misuse
 *                            (never on malformed input). Freestanding builds
 *                            define NDEBUG or their own macro.
 *   ALKC_MEMCPY(d, s, n)     memcpy replacement; when defined, <string.h> is
 *                            not included (freestanding / firmware). The
 *                            implementation calls nothing else from libc.
 *
 * API
 *
 *   Encoder (stateless):
 *     alkc_encode(dst, cap, payload, len, max, err)   whole frame -> dst
 *     alkc_encode_header(hdr, len, max, err)          2-byte header only
 *   Decoder (pull style, caller memory):
 *     alkc_decoder_init(dec, cfg, mem, mem_len)
 *     alkc_decoder_feed(dec, chunk, len)    hand over the next chunk
 *     alkc_decoder_next(dec, &datagram)     ALKC_OK: one datagram;
 *                                           ALKC_NEED_MORE: chunk used up;
 *                                           < 0: error
 *     alkc_decoder_reset(dec)               drop the in-flight frame, the
 *                                           unread rest of the fed chunk and
 *                                           the sticky error; the stream
 *                                           offset keeps counting
 *   Observables:
 *     alkc_decoder_retained_bytes(dec)   bytes of the in-flight frame held
 *                                        inside the decoder (header + copied
 *                                        payload), <= ALKC_HEADER_SIZE + max
 *     alkc_decoder_is_mid_datagram(dec)  a frame has started but not ended
 *     alkc_decoder_pending_input(dec)    bytes of the fed chunk not yet used
 *     alkc_decoder_stream_offset(dec)    total stream bytes consumed
 *     alkc_decoder_error(dec, &info)     the sticky error and its context
 *                                        (none: ALKC_OK, info all zero)
 *     (the four counts answer 0 for a NULL decoder)
 *   alkc_strerror(code), alkc_error_is_fatal(code)
 *
 * DESIGN NOTES
 *
 *   Wire format: each datagram is a 2-byte big-endian length followed by
 *   exactly that many payload bytes. Length 0 is a legal, empty datagram; it
 *   never means end-of-stream (EOF is the stream's own business).
 *
 *   Pull, zero-copy, bounded: alkc_decoder_feed() only records the chunk;
 *   each alkc_decoder_next() cuts at most one datagram out of it. A datagram
 *   whose payload lies wholly inside the current chunk is returned as a
 *   pointer into that chunk (dg.copied == 0). Only a payload that straddles
 *   chunks is assembled in the caller's `mem` (dg.copied == 1). The decoder
 *   never queues decoded datagrams: what it retains is at most one in-flight
 *   frame, so a peer sending 16 MiB of `00 00` (millions of empty datagrams)
 *   costs no memory - the caller pulls them one by one.
 *
 *   Lifetimes: the chunk passed to feed must stay valid until next() returns
 *   ALKC_NEED_MORE (or an error); after that the decoder holds no pointer
 *   into it. A returned datagram is valid until the next call on the decoder.
 *   Feeding a new chunk while the previous one is not used up is refused
 *   with ALKC_ERR_INPUT_PENDING and changes nothing.
 *
 *   Limits: max datagram size is configurable in 1..65535 (0 = 65535). A
 *   frame declaring more is a sticky protocol error (ALKC_ERR_DATAGRAM_TOO_
 *   LARGE) that reports the declared length and the stream offset of the
 *   header: the stream cannot be resynchronised, so every later call returns
 *   the same error until alkc_decoder_reset(). Nothing is ever truncated.
 *   Memory: sizeof(alkc_decoder) plus ALKC_DECODER_MEM_SIZE(max) bytes.
 *
 *   Threading: no globals; one decoder per thread at a time. Deterministic:
 *   the same bytes give the same datagrams whatever the chunking.
 *
 * ERRORS (negative; ALKC_OK == 0, ALKC_NEED_MORE == 1 is a status)
 *
 *   ALKC_ERR_INVALID_ARGUMENT    NULL pointer, max > 65535, mem too small
 *   ALKC_ERR_PAYLOAD_TOO_LARGE   encode: len > max; info.length = len,
 *                                info.limit = max; nothing written
 *   ALKC_ERR_BUFFER_TOO_SMALL    encode: cap < len + 2; info.length = bytes
 *                                needed, info.limit = cap; nothing written
 *   ALKC_ERR_DATAGRAM_TOO_LARGE  decode: declared length > max (sticky,
 *                                fatal); info.length = declared, info.limit
 *                                = max, info.offset = header stream offset
 *   ALKC_ERR_INPUT_PENDING       feed while the previous chunk is not used
 *                                up (alkc_decoder_pending_input() says how
 *                                much); not sticky, nothing changes
 */
#ifndef ALKCODEC_H
#define ALKCODEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef ALKCODEC_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define ALKCDEF static __attribute__((unused))
#else
#define ALKCDEF static
#endif
#else
#define ALKCDEF extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ALKC_HEADER_SIZE 2u
#define ALKC_MAX_DATAGRAM 65535u
/* Bytes a whole frame of `len` payload bytes occupies on the wire. */
#define ALKC_FRAME_SIZE(len) ((size_t)(len) + ALKC_HEADER_SIZE)
/* Caller memory a decoder with maximum datagram size `max` needs (0 = 65535). */
#define ALKC_DECODER_MEM_SIZE(max) ((size_t)((max) ? (max) : ALKC_MAX_DATAGRAM))

/* One list makes both the enum and the strings. */
#define ALKC_RESULT_LIST(X)                                                    \
    X(ALKC_OK, 0, "ok")                                                        \
    X(ALKC_NEED_MORE, 1, "need more input: the fed chunk is used up")          \
    X(ALKC_ERR_INVALID_ARGUMENT, -1, "invalid argument")                       \
    X(ALKC_ERR_PAYLOAD_TOO_LARGE, -2,                                          \
      "payload is larger than the maximum datagram size")                      \
    X(ALKC_ERR_BUFFER_TOO_SMALL, -3, "destination buffer is too small")        \
    X(ALKC_ERR_DATAGRAM_TOO_LARGE, -4,                                         \
      "peer declared a datagram larger than the maximum (stream unusable)")    \
    X(ALKC_ERR_INPUT_PENDING, -5,                                              \
      "the previously fed chunk is not used up yet")

typedef enum alkc_result {
#define ALKC__ENUM(name, value, text) name = value,
    ALKC_RESULT_LIST(ALKC__ENUM)
#undef ALKC__ENUM
    ALKC_RESULT_END_
} alkc_result;

/* Context of an error; which fields mean what is listed under ERRORS. */
typedef struct alkc_error_info {
    int code;          /* the alkc_result */
    size_t length;     /* the offending length (payload, needed, declared) */
    size_t limit;      /* the limit it broke (max datagram, capacity) */
    uint64_t offset;   /* decoder: stream offset of the offending header;
                          always 0 from the encoder */
} alkc_error_info;

typedef struct alkc_decoder_config {
    size_t max_datagram; /* 1..65535; 0 means 65535 */
} alkc_decoder_config;

typedef struct alkc_datagram {
    const uint8_t *data; /* never NULL, even for len == 0 */
    size_t len;
    int copied;          /* 1: assembled in decoder memory (straddled chunks) */
} alkc_datagram;

/* Decoder state. Caller-allocated; do not rely on the size or contents of
 * this type: use the functions. */
typedef struct alkc_decoder {
    const uint8_t *in;       /* current chunk (not owned) */
    size_t in_len, in_pos;
    uint8_t *mem;            /* caller memory for straddled payloads */
    size_t max_datagram;
    size_t declared;         /* payload length of the in-flight frame */
    size_t payload_have;     /* payload bytes copied into mem */
    unsigned header_have;    /* header bytes held, 0..2 */
    uint8_t header[2];
    int error;               /* sticky alkc_result, 0 = none */
    alkc_error_info error_info;
    uint64_t frame_offset;   /* stream offset of the in-flight frame */
    uint64_t chunk_offset;   /* stream offset of in[0] */
} alkc_decoder;

ALKCDEF ptrdiff_t alkc_encode(void *dst, size_t dst_cap, const void *payload,
                              size_t len, size_t max_datagram,
                              alkc_error_info *err);
ALKCDEF int alkc_encode_header(uint8_t hdr[2], size_t len, size_t max_datagram,
                               alkc_error_info *err);

ALKCDEF int alkc_decoder_init(alkc_decoder *dec, const alkc_decoder_config *cfg,
                              void *mem, size_t mem_len);
ALKCDEF int alkc_decoder_feed(alkc_decoder *dec, const void *chunk, size_t len);
ALKCDEF int alkc_decoder_next(alkc_decoder *dec, alkc_datagram *out);
ALKCDEF void alkc_decoder_reset(alkc_decoder *dec);
ALKCDEF size_t alkc_decoder_retained_bytes(const alkc_decoder *dec);
ALKCDEF int alkc_decoder_is_mid_datagram(const alkc_decoder *dec);
ALKCDEF size_t alkc_decoder_pending_input(const alkc_decoder *dec);
ALKCDEF uint64_t alkc_decoder_stream_offset(const alkc_decoder *dec);
ALKCDEF int alkc_decoder_error(const alkc_decoder *dec, alkc_error_info *info);

ALKCDEF const char *alkc_strerror(int code);
ALKCDEF int alkc_error_is_fatal(int code);

#ifdef __cplusplus
}
#endif
#endif /* ALKCODEC_H */

#if defined(ALK_IMPLEMENTATION) && !defined(ALKCODEC_IMPLEMENTATION)
#define ALKCODEC_IMPLEMENTATION
#endif

#if defined(ALKCODEC_IMPLEMENTATION) && !defined(ALKCODEC_IMPLEMENTATION_DONE)
#define ALKCODEC_IMPLEMENTATION_DONE

#ifndef ALKCODEC_ASSERT
#include <assert.h>
#define ALKCODEC_ASSERT(c) assert(c)
#endif

#ifndef ALKC_MEMCPY
#include <string.h>
#define ALKC_MEMCPY(d, s, n) memcpy((d), (s), (n))
#endif

#ifdef __cplusplus
extern "C" {
#endif

static size_t alkc__effective_max(size_t max_datagram)
{
    return max_datagram ? max_datagram : ALKC_MAX_DATAGRAM;
}

static void alkc__set_info(alkc_error_info *err, int code, size_t length,
                           size_t limit, uint64_t offset)
{
    if (err) {
        err->code = code;
        err->length = length;
        err->limit = limit;
        err->offset = offset;
    }
}

ALKCDEF int alkc_encode_header(uint8_t hdr[2], size_t len, size_t max_datagram,
                               alkc_error_info *err)
{
    size_t max = alkc__effective_max(max_datagram);
    if (!hdr || max > ALKC_MAX_DATAGRAM) {
        alkc__set_info(err, ALKC_ERR_INVALID_ARGUMENT, len, max, 0);
        return ALKC_ERR_INVALID_ARGUMENT;
    }
    if (len > max) {
        alkc__set_info(err, ALKC_ERR_PAYLOAD_TOO_LARGE, len, max, 0);
        return ALKC_ERR_PAYLOAD_TOO_LARGE;
    }
    hdr[0] = (uint8_t)(len >> 8);
    hdr[1] = (uint8_t)(len & 0xffu);
    alkc__set_info(err, ALKC_OK, len, max, 0);
    return ALKC_OK;
}

ALKCDEF ptrdiff_t alkc_encode(void *dst, size_t dst_cap, const void *payload,
                              size_t len, size_t max_datagram,
                              alkc_error_info *err)
{
    uint8_t hdr[2];
    uint8_t *out = (uint8_t *)dst;
    int rc;
    if (!dst || (!payload && len)) {
        alkc__set_info(err, ALKC_ERR_INVALID_ARGUMENT, len, dst_cap, 0);
        return ALKC_ERR_INVALID_ARGUMENT;
    }
    rc = alkc_encode_header(hdr, len, max_datagram, err);
    if (rc != ALKC_OK)
        return rc;
    if (dst_cap < ALKC_FRAME_SIZE(len)) {
        alkc__set_info(err, ALKC_ERR_BUFFER_TOO_SMALL, ALKC_FRAME_SIZE(len),
                       dst_cap, 0);
        return ALKC_ERR_BUFFER_TOO_SMALL;
    }
    out[0] = hdr[0];
    out[1] = hdr[1];
    if (len)
        ALKC_MEMCPY(out + ALKC_HEADER_SIZE, payload, len);
    return (ptrdiff_t)ALKC_FRAME_SIZE(len);
}

ALKCDEF int alkc_decoder_init(alkc_decoder *dec, const alkc_decoder_config *cfg,
                              void *mem, size_t mem_len)
{
    size_t max = alkc__effective_max(cfg ? cfg->max_datagram : 0);
    if (!dec || !mem || max > ALKC_MAX_DATAGRAM || mem_len < max)
        return ALKC_ERR_INVALID_ARGUMENT;
    dec->mem = (uint8_t *)mem;
    dec->max_datagram = max;
    dec->in_pos = 0;
    dec->chunk_offset = 0;
    alkc_decoder_reset(dec);
    return ALKC_OK;
}

ALKCDEF void alkc_decoder_reset(alkc_decoder *dec)
{
    if (!dec)
        return;
    /* The stream position survives a reset so offsets stay meaningful; the
     * unread rest of the current chunk is dropped with the frame state. */
    dec->chunk_offset += dec->in_pos;
    dec->in = NULL;
    dec->in_len = 0;
    dec->in_pos = 0;
    dec->payload_have = 0;
    dec->header_have = 0;
    dec->error = ALKC_OK; /* error_info is read only while error != 0 */
}

ALKCDEF int alkc_decoder_feed(alkc_decoder *dec, const void *chunk, size_t len)
{
    if (!dec || (!chunk && len))
        return ALKC_ERR_INVALID_ARGUMENT;
    if (dec->error)
        return dec->error;
    if (dec->in_pos < dec->in_len)
        return ALKC_ERR_INPUT_PENDING; /* not sticky; nothing changes */
    dec->chunk_offset += dec->in_len;
    dec->in = (const uint8_t *)chunk;
    dec->in_len = len;
    dec->in_pos = 0;
    return ALKC_OK;
}

ALKCDEF int alkc_decoder_next(alkc_decoder *dec, alkc_datagram *out)
{
    size_t avail, take;
    if (!dec || !out)
        return ALKC_ERR_INVALID_ARGUMENT;
    if (dec->error)
        return dec->error;
    avail = dec->in_len - dec->in_pos;

    if (dec->header_have < ALKC_HEADER_SIZE) {
        if (dec->header_have == 0 && avail >= ALKC_HEADER_SIZE) {
            /* Fast path: header inside the chunk. */
            const uint8_t *p = dec->in + dec->in_pos;
            dec->declared = ((size_t)p[0] << 8) | p[1];
            dec->frame_offset = dec->chunk_offset + dec->in_pos;
            dec->in_pos += ALKC_HEADER_SIZE;
            avail -= ALKC_HEADER_SIZE;
        } else {
            while (dec->header_have < ALKC_HEADER_SIZE && avail) {
                if (dec->header_have == 0)
                    dec->frame_offset = dec->chunk_offset + dec->in_pos;
                dec->header[dec->header_have++] = dec->in[dec->in_pos++];
                avail--;
            }
            if (dec->header_have < ALKC_HEADER_SIZE)
                return ALKC_NEED_MORE;
            dec->declared = ((size_t)dec->header[0] << 8) | dec->header[1];
        }
        dec->header_have = ALKC_HEADER_SIZE;
        ALKCODEC_ASSERT(dec->payload_have == 0);
        if (dec->declared > dec->max_datagram) {
            dec->error = ALKC_ERR_DATAGRAM_TOO_LARGE;
            alkc__set_info(&dec->error_info, ALKC_ERR_DATAGRAM_TOO_LARGE,
                           dec->declared, dec->max_datagram, dec->frame_offset);
            return dec->error;
        }
    }
    if (dec->payload_have == 0 && avail >= dec->declared) {
        /* Zero-copy: the whole payload lies in the fed chunk. */
        out->data = dec->in + dec->in_pos;
        out->len = dec->declared;
        out->copied = 0;
        dec->in_pos += dec->declared;
        dec->header_have = 0;
        return ALKC_OK;
    }

    /* The payload straddles chunks: assemble it in caller memory. */
    ALKCODEC_ASSERT(dec->payload_have < dec->declared);
    take = dec->declared - dec->payload_have;
    if (take > avail)
        take = avail;
    if (take) {
        ALKC_MEMCPY(dec->mem + dec->payload_have, dec->in + dec->in_pos, take);
        dec->payload_have += take;
        dec->in_pos += take;
    }
    if (dec->payload_have < dec->declared)
        return ALKC_NEED_MORE;
    out->data = dec->mem;
    out->len = dec->declared;
    out->copied = 1;
    dec->header_have = 0;
    dec->payload_have = 0;
    return ALKC_OK;
}

ALKCDEF size_t alkc_decoder_retained_bytes(const alkc_decoder *dec)
{
    if (!dec)
        return 0;
    return dec->header_have + dec->payload_have;
}

ALKCDEF int alkc_decoder_is_mid_datagram(const alkc_decoder *dec)
{
    return dec && dec->header_have > 0;
}

ALKCDEF size_t alkc_decoder_pending_input(const alkc_decoder *dec)
{
    return dec ? dec->in_len - dec->in_pos : 0;
}

ALKCDEF uint64_t alkc_decoder_stream_offset(const alkc_decoder *dec)
{
    return dec ? dec->chunk_offset + dec->in_pos : 0;
}

ALKCDEF int alkc_decoder_error(const alkc_decoder *dec, alkc_error_info *info)
{
    if (!dec)
        return ALKC_ERR_INVALID_ARGUMENT;
    if (info) {
        if (dec->error)
            *info = dec->error_info;
        else
            alkc__set_info(info, ALKC_OK, 0, 0, 0);
    }
    return dec->error;
}

ALKCDEF const char *alkc_strerror(int code)
{
    switch (code) {
#define ALKC__CASE(name, value, text) case name: return text;
        ALKC_RESULT_LIST(ALKC__CASE)
#undef ALKC__CASE
    default:
        return "unknown alkcodec result code";
    }
}

ALKCDEF int alkc_error_is_fatal(int code)
{
    return code == ALKC_ERR_DATAGRAM_TOO_LARGE;
}

#ifdef __cplusplus
}
#endif
#endif /* ALKCODEC_IMPLEMENTATION */

/* REVISION HISTORY
 *   0.1.0 (2026-11-29)  first release: encoder, pull decoder, sticky limits.
 *
 * LICENCE: this software is available under either of these licences, at
 * your choice.
 *
 * ALTERNATIVE A - MIT License
 * Copyright (c) 2026 the alk authors
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to
 * deal in the Software without restriction, including without limitation the
 * rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 * sell copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions:
 * The above copyright notice and this permission notice shall be included in
 * all copies or substantial portions of the Software.
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
 * LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING
 * FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS
 * IN THE SOFTWARE.
 *
 * ALTERNATIVE B - Public Domain (www.unlicense.org)
 * This is free and unencumbered software released into the public domain.
 * Anyone is free to copy, modify, publish, use, compile, sell, or distribute
 * this software, either in source code form or as a compiled binary, for any
 * purpose, commercial or non-commercial, and by any means.
 * In jurisdictions that recognize copyright laws, the author or authors of
 * this software dedicate any and all copyright interest in the software to
 * the public domain. We make this dedication for the benefit of the public at
 * large and to the detriment of our heirs and successors. We intend this
 * dedication to be an overt act of relinquishment in perpetuity of all
 * present and future rights to this software under copyright law.
 * THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
 * IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
 * FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
 * AUTHORS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN
 * ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN
 * CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
 */

/* params_check - validate a tunnel params document and print its canonical
 * form, or say exactly what is wrong with it and where.
 *
 *   params_check open|reply|control [FILE]     (stdin when FILE is absent)
 *
 * Exit 0: valid, canonical JSON on stdout. Exit 1: invalid, the error on
 * stderr as FILE:LINE:COLUMN: message (offset N, field PATH). Exit 2: usage
 * or I/O error. A control message may hold up to 4096 items per section. */
#define ALKTUNNEL_IMPLEMENTATION
#include "../alktunnel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SECTION_CAP 4096

static char input[ALKT_JSON_SIZE_DEFAULT + 1];
static char output[8u << 20];

int main(int argc, char **argv)
{
    const char *kind = argc > 1 ? argv[1] : "";
    const char *name = argc > 2 ? argv[2] : "<stdin>";
    FILE *f = argc > 2 ? fopen(argv[2], "rb") : stdin;
    alkt_error err;
    size_t len;
    ptrdiff_t out = -1;
    int rc;
    if (argc < 2 || argc > 3 ||
        (strcmp(kind, "open") && strcmp(kind, "reply") &&
         strcmp(kind, "control"))) {
        fprintf(stderr, "usage: params_check open|reply|control [FILE]\n");
        return 2;
    }
    if (!f) {
        perror(name);
        return 2;
    }
    len = fread(input, 1, sizeof input, f);
    if (ferror(f)) {
        perror(name);
        return 2;
    }
    if (f != stdin)
        fclose(f);
    /* one byte more than the limit was read: the decoder says TOO_LARGE */
    if (strcmp(kind, "open") == 0) {
        alkt_open_params p;
        rc = alkt_open_params_decode(input, len, NULL, &p, &err);
        if (rc == ALKT_OK)
            out = alkt_open_params_encode(&p, output, sizeof output, &err);
    } else if (strcmp(kind, "reply") == 0) {
        alkt_listen_reply r;
        rc = alkt_listen_reply_decode(input, len, NULL, &r, &err);
        if (rc == ALKT_OK)
            out = alkt_listen_reply_encode(&r, output, sizeof output, &err);
    } else {
        alkt_control c;
        memset(&c, 0, sizeof c);
        c.resources = (alkt_resource *)calloc(SECTION_CAP, sizeof *c.resources);
        c.authorizations = (alkt_authorization *)calloc(
            SECTION_CAP, sizeof *c.authorizations);
        c.revocations =
            (alkt_revocation *)calloc(SECTION_CAP, sizeof *c.revocations);
        c.relays = (alkt_relay *)calloc(SECTION_CAP, sizeof *c.relays);
        if (!c.resources || !c.authorizations || !c.revocations || !c.relays) {
            fprintf(stderr, "params_check: out of memory\n");
            return 2;
        }
        c.resource_cap = c.authorization_cap = SECTION_CAP;
        c.revocation_cap = c.relay_cap = SECTION_CAP;
        rc = alkt_control_decode(input, len, NULL, &c, &err);
        if (rc == ALKT_OK)
            out = alkt_control_encode(&c, output, sizeof output, &err);
    }
    if (rc != ALKT_OK) {
        fprintf(stderr, "%s:%zu:%zu: %s (offset %zu%s%s)\n", name, err.line,
                err.column, alkt_strerror(rc), err.offset,
                err.path[0] ? ", field " : "", err.path);
        return 1;
    }
    if (out < 0) {
        fprintf(stderr, "params_check: encode failed: %s\n",
                alkt_strerror((int)out));
        return 2;
    }
    fwrite(output, 1, (size_t)out, stdout);
    putchar('\n');
    return 0;
}

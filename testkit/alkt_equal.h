/* alkt_equal.h - equality of alktunnel.h's typed values, for the params
 * oracle (fuzz/params.c) and the unit tests (tests/test_alktunnel.c): one
 * comparison, so both judge "the same control message" alike.
 *
 * #include after alktunnel.h. memcmp is exact here because the decoders
 * zero every item they fill (padding and unused name bytes included). */
#ifndef ALKT_EQUAL_H
#define ALKT_EQUAL_H

#include <string.h>

static int alkt_items_equal(const void *a, const void *b, size_t count,
                            size_t each)
{
    return !count || memcmp(a, b, count * each) == 0;
}

/* Same sections present, same counts, same items. */
static int control_equal(const alkt_control *a, const alkt_control *b)
{
    return a->has_resources == b->has_resources &&
           a->has_authorizations == b->has_authorizations &&
           a->has_revocations == b->has_revocations &&
           a->has_relays == b->has_relays &&
           a->resource_count == b->resource_count &&
           a->authorization_count == b->authorization_count &&
           a->revocation_count == b->revocation_count &&
           a->relay_count == b->relay_count &&
           alkt_items_equal(a->resources, b->resources, a->resource_count,
                            sizeof *a->resources) &&
           alkt_items_equal(a->authorizations, b->authorizations,
                            a->authorization_count,
                            sizeof *a->authorizations) &&
           alkt_items_equal(a->revocations, b->revocations,
                            a->revocation_count, sizeof *a->revocations) &&
           alkt_items_equal(a->relays, b->relays, a->relay_count,
                            sizeof *a->relays);
}

#endif /* ALKT_EQUAL_H */

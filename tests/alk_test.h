/* alk_test.h - what every unit-test program shares: the greatest runner,
 * the property tests' seed and their PRNG step.
 *
 *   ALK_SEED=N   the property tests' seed (default 1; decimal or 0x hex)
 *
 * The PRNG is alksim's splitmix64. A test program that does not carry
 * alksim gets a private (static) copy of it from here; include this after
 * alksim.h when the program includes alksim.h itself. */
#ifndef ALK_TEST_H
#define ALK_TEST_H

#ifndef ALKSIM_H
#define ALKSIM_STATIC
#define ALKSIM_IMPLEMENTATION
#define ALKSIM_NO_STDIO
#include "alksim.h"
#endif

#include <stdint.h>
#include <stdlib.h>

#include "greatest.h"

static uint64_t test_seed = 1;

static void alk_test_read_seed(void)
{
    const char *seed = getenv("ALK_SEED");
    if (seed)
        test_seed = strtoull(seed, NULL, 0);
}

/* The first line of every test main(): ALK_SEED, then greatest's
 * arguments. */
#define ALK_TEST_MAIN_BEGIN()                                                  \
    do {                                                                       \
        alk_test_read_seed();                                                  \
        GREATEST_MAIN_BEGIN();                                                 \
    } while (0)

#endif /* ALK_TEST_H */

/* impl_alksim.c - alksim.h's implementation as every harness and test
 * tool links it (build/<flavour>/libalk.a). */
#define ALKSIM_IMPLEMENTATION
#include "alksim.h"

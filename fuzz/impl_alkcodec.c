/* impl_alkcodec.c - alkcodec.h's implementation as every harness and test
 * tool links it (build/<flavour>/libalk.a). */
#define ALKCODEC_IMPLEMENTATION
#include "alkcodec.h"

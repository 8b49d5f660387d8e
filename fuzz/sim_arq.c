/* sim_arq.c - fuzz target `sim_arq`: examples/arq.h under alksim, checked
 * by the scenario in examples/arq_scenario.h (the worked example). Build
 * with -DARQ_PLANTED_BUG to watch the harness find the planted bug. */
#include "../examples/arq_scenario.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return alksim_fuzz_one(&arq_scenario, data, size);
}

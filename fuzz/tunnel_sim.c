/* tunnel_sim.c - fuzz target `tunnel_sim`: the whole tunnel (clients,
 * gateways, relays, pumps) under deterministic simulation against a
 * reference model; the scenario and its invariants are in
 * fuzz/tunnel_sim.h. A failing input prints its full alksim trace. */
#include "alktunnel.h"
#include "alksim.h"
#include "tunnel_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    alk_trace_reset();
    return alksim_fuzz_one(&ts_scenario, data, size);
}

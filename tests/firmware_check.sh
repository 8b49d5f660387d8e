#!/bin/sh
# firmware_check.sh - alkcodec.h's implementation built freestanding for a
# Cortex-M4, the way firmware uses it: -ffreestanding -Os, ALKC_MEMCPY
# pointed at the firmware's own copy routine, NDEBUG (no assert runtime).
# Fails if the object needs any symbol beyond the documented one (memcpy,
# via ALKC_MEMCPY), and prints code and static-data size. Then the same for
# alktunnel.h's session: its .text must stay within 28 KiB (it was 20.0 KiB
# before encryption; ChaCha20-Poly1305, X25519 on ten limbs, HKDF and the
# record layer added 6.2 KiB) when built with ALKTUNNEL_NO_FAST_DECODE; the
# default build (with the open-params fast path, +2.7 KiB) is printed too.
set -eu
ARM_CC=${ARM_CC:-arm-none-eabi-gcc}
B=${B:-build}
SIZE=${ARM_SIZE:-$(echo "$ARM_CC" | sed 's/gcc$/size/')}
NM=${ARM_NM:-$(echo "$ARM_CC" | sed 's/gcc$/nm/')}
command -v "$ARM_CC" >/dev/null 2>&1 ||
    { echo "firmware-check: $ARM_CC not installed (apt-get install gcc-arm-none-eabi)"; exit 1; }
mkdir -p "$B/firmware"
src="$B/firmware/alkcodec_fw.c"
cat > "$src" <<'SRC'
/* The firmware build of alkcodec.h: no <string.h>, no assert runtime. */
#include <stddef.h>
void *fw_memcpy(void *dst, const void *src, size_t n);
#define ALKC_MEMCPY(d, s, n) fw_memcpy((d), (s), (n))
#define ALKCODEC_IMPLEMENTATION
#include "alkcodec.h"
SRC
"$ARM_CC" -mcpu=cortex-m4 -mthumb -Os -ffreestanding -fno-builtin -DNDEBUG \
    -std=c99 -Wall -Wextra -Wpedantic -Werror -Wconversion \
    -ffunction-sections -fdata-sections -I. -c "$src" -o "$B/firmware/alkcodec_fw.o"
undefined=$("$NM" -u "$B/firmware/alkcodec_fw.o" | awk '{print $2}' | sort -u)
extra=$(echo "$undefined" | grep -v -x -e fw_memcpy -e '' || true)
echo "undefined symbols: $(echo $undefined)"
if [ -n "$extra" ]; then
    echo "firmware-check: FAIL: undocumented external symbols: $extra"
    exit 1
fi
# Without the override the only libc symbol may be memcpy itself.
printf '#define ALKCODEC_IMPLEMENTATION\n#include "alkcodec.h"\n' > "$B/firmware/plain.c"
"$ARM_CC" -mcpu=cortex-m4 -mthumb -Os -ffreestanding -DNDEBUG -std=c99 \
    -Wall -Wextra -Wpedantic -Werror -I. -c "$B/firmware/plain.c" -o "$B/firmware/plain.o"
extra=$("$NM" -u "$B/firmware/plain.o" | awk '{print $2}' | grep -v -x -e memcpy -e '' || true)
if [ -n "$extra" ]; then
    echo "firmware-check: FAIL: default build needs more than memcpy: $extra"
    exit 1
fi
echo "default build (libc memcpy): undefined symbols: $("$NM" -u "$B/firmware/plain.o" | awk '{print $2}' | tr '\n' ' ')"
"$SIZE" "$B/firmware/alkcodec_fw.o"
"$SIZE" "$B/firmware/alkcodec_fw.o" | awk 'NR == 2 {
    printf "alkcodec.h on Cortex-M4 (-Os): %d bytes code+rodata, %d bytes data, %d bytes bss\n", $1, $2, $3 }'

# alktunnel.h's session (with the params it carries and SHA-256), built the
# same way and linked with --gc-sections from the session's API alone: what
# a device that runs a tunnel end carries. libgcc's helpers (64-bit
# division) are counted in; the C library's string functions are not.
cat > "$B/firmware/session_fw.c" <<'SRC'
/* The firmware build of alktunnel.h's session: its API is the only root. */
#include <stddef.h>
#define ALKTUNNEL_IMPLEMENTATION
#include "alktunnel.h"
typedef void (*fw_fn)(void);
const fw_fn fw_roots[] = {
    (fw_fn)alkt_session_mem_size, (fw_fn)alkt_session_init,
    (fw_fn)alkt_session_connect, (fw_fn)alkt_session_handle_disconnected,
    (fw_fn)alkt_session_handle_input, (fw_fn)alkt_session_poll_transmit,
    (fw_fn)alkt_session_transmit_peek, (fw_fn)alkt_session_transmit_done,
    (fw_fn)alkt_session_poll_timeout, (fw_fn)alkt_session_handle_timeout,
    (fw_fn)alkt_session_poll_event, (fw_fn)alkt_session_close,
    (fw_fn)alkt_session_is_established, (fw_fn)alkt_session_peer_identity,
    (fw_fn)alkt_channel_open, (fw_fn)alkt_channel_accept,
    (fw_fn)alkt_channel_refuse, (fw_fn)alkt_channel_send,
    (fw_fn)alkt_channel_recv, (fw_fn)alkt_channel_peek,
    (fw_fn)alkt_channel_consume, (fw_fn)alkt_channel_shutdown_write,
    (fw_fn)alkt_channel_reset, (fw_fn)alkt_channel_info_get,
    (fw_fn)alkt_strerror};
SRC
# Built twice: as is, and at its smallest - ALKTUNNEL_NO_FAST_DECODE (the
# typed decoders' one-pass fast paths left out) with the roles and pumps
# layers left out too (ALKTUNNEL_NO_ROLES, ALKTUNNEL_NO_PUMPS: what a
# device that is only a tunnel end sets; gc-sections drops their code
# anyway, so the switches prove they build here rather than save bytes).
# The 28 KiB bound is on the second; the first is printed beside it.
for variant in default small; do
    defs=""
    [ "$variant" = small ] &&
        defs="-DALKTUNNEL_NO_FAST_DECODE -DALKTUNNEL_NO_ROLES -DALKTUNNEL_NO_PUMPS"
    # shellcheck disable=SC2086
    "$ARM_CC" -mcpu=cortex-m4 -mthumb -Os -ffreestanding -DNDEBUG -std=c99 $defs \
        -Wall -Wextra -Wpedantic -Werror -Wconversion -ffunction-sections \
        -fdata-sections -I. -c "$B/firmware/session_fw.c" -o "$B/firmware/session_fw.o"
    "$ARM_CC" -mcpu=cortex-m4 -mthumb -nostdlib -Wl,--gc-sections -Wl,-e,fw_roots \
        -Wl,--unresolved-symbols=ignore-all "$B/firmware/session_fw.o" -lgcc \
        -o "$B/firmware/session_fw.elf"
    extra=$("$NM" -u "$B/firmware/session_fw.elf" | awk '{print $2}' |
            grep -v -x -e memcpy -e memmove -e memset -e memcmp -e memchr \
                -e strlen -e '' || true)
    if [ -n "$extra" ]; then
        echo "firmware-check: FAIL: the session ($variant) needs more than string.h: $extra"
        exit 1
    fi
    echo "session ($variant): C library symbols: $("$NM" -u "$B/firmware/session_fw.elf" | awk '{print $2}' | tr '\n' ' ')"
    text=$("$SIZE" -A "$B/firmware/session_fw.elf" | awk '$1 == ".text" { print $2 }')
    rodata=$("$SIZE" -A "$B/firmware/session_fw.elf" | awk '$1 == ".rodata" { print $2 }')
    if [ "$variant" = default ]; then
        echo "alktunnel.h encrypted session on Cortex-M4 (-Os, gc-sections): .text $text bytes, .rodata $rodata bytes"
    else
        echo "  at its smallest (NO_FAST_DECODE, NO_ROLES, NO_PUMPS): .text $text bytes, .rodata $rodata bytes (limit: .text <= 28672)"
        if [ "$text" -gt 28672 ]; then
            echo "firmware-check: FAIL: the session's .text is over 28 KiB"
            exit 1
        fi
    fi
done
# The session with the roles (client, gateway and relay), rooted at their
# API as well: printed, no bound (a device running a gateway or a relay).
cat > "$B/firmware/roles_fw.c" <<'SRC'
#include <stddef.h>
#define ALKTUNNEL_IMPLEMENTATION
#include "alktunnel.h"
typedef void (*fw_fn)(void);
const fw_fn fw_roots[] = {
    (fw_fn)alkt_node_mem_size, (fw_fn)alkt_client_init, (fw_fn)alkt_gateway_init,
    (fw_fn)alkt_node_accept, (fw_fn)alkt_node_control, (fw_fn)alkt_node_handle_connected,
    (fw_fn)alkt_node_handle_closed, (fw_fn)alkt_node_handle_input,
    (fw_fn)alkt_node_transmit_peek, (fw_fn)alkt_node_transmit_done,
    (fw_fn)alkt_node_poll_timeout, (fw_fn)alkt_node_handle_timeout,
    (fw_fn)alkt_node_poll_event, (fw_fn)alkt_node_session, (fw_fn)alkt_client_add_gateway,
    (fw_fn)alkt_client_open, (fw_fn)alkt_client_answer, (fw_fn)alkt_gateway_target_result,
    (fw_fn)alkt_gateway_listen_result, (fw_fn)alkt_gateway_forward,
    (fw_fn)alkt_relay_mem_size, (fw_fn)alkt_relay_init, (fw_fn)alkt_relay_accept,
    (fw_fn)alkt_relay_handle_input, (fw_fn)alkt_relay_transmit_peek,
    (fw_fn)alkt_relay_transmit_done, (fw_fn)alkt_relay_handle_closed,
    (fw_fn)alkt_relay_poll_timeout, (fw_fn)alkt_relay_handle_timeout,
    (fw_fn)alkt_relay_poll_event, (fw_fn)alkt_channel_send, (fw_fn)alkt_channel_recv,
    (fw_fn)alkt_strerror};
SRC
"$ARM_CC" -mcpu=cortex-m4 -mthumb -Os -ffreestanding -DNDEBUG -std=c99 -DALKTUNNEL_NO_FAST_DECODE \
    -Wall -Wextra -Wpedantic -Werror -Wconversion -ffunction-sections \
    -fdata-sections -I. -c "$B/firmware/roles_fw.c" -o "$B/firmware/roles_fw.o"
"$ARM_CC" -mcpu=cortex-m4 -mthumb -nostdlib -Wl,--gc-sections -Wl,-e,fw_roots \
    -Wl,--unresolved-symbols=ignore-all "$B/firmware/roles_fw.o" -lgcc \
    -o "$B/firmware/roles_fw.elf"
text=$("$SIZE" -A "$B/firmware/roles_fw.elf" | awk '$1 == ".text" { print $2 }')
rodata=$("$SIZE" -A "$B/firmware/roles_fw.elf" | awk '$1 == ".rodata" { print $2 }')
echo "the session with the roles (client, gateway, relay; NO_FAST_DECODE): .text $text bytes, .rodata $rodata bytes"

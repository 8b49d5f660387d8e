#!/bin/sh
# firmware_check.sh - alkcodec.h's implementation built freestanding for a
# Cortex-M4, the way firmware uses it: -ffreestanding -Os, ALKC_MEMCPY
# pointed at the firmware's own copy routine, NDEBUG (no assert runtime).
# Fails if the object needs any symbol beyond the documented one (memcpy,
# via ALKC_MEMCPY), and prints code and static-data size.
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

/* lane_order.h: the tables behind the compress of kept lanes at AVX2
 * (vec.h's pv_compress, vec_f64.h's pd_compress_u32 and pd_compress_iota),
 * which has no compress instruction.
 *
 * Entry m lists the lanes whose bits m sets, lowest first, one lane index
 * a byte from the lowest byte up, zero bytes after them: the index vector
 * of the one permute that packs the kept lanes. A table rather than
 * pdep/pext: AMD CPUs before Zen 3 run those in microcode, tens to
 * hundreds of cycles, and they are AVX2 CPUs; a load from a 2 KiB table
 * costs the same everywhere. tests/test_levels.c checks every entry. */
#ifndef PROX_LANE_ORDER_H
#define PROX_LANE_ORDER_H

#include <stdint.h>

extern const uint64_t prox_lane_order8[256]; /* 8 lanes: 8 bytes an entry */
extern const uint32_t prox_lane_order4[16];  /* 4 lanes: 4 bytes an entry */

#endif

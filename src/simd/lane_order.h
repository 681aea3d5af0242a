/* lane_order.h: the tables behind the compress of kept lanes below
 * AVX-512 (vec.h's pv_compress, vec_f64.h's pd_compress_u32 and
 * pd_compress_iota), which has no compress instruction.
 *
 * Entry m lists the lanes whose bits m sets, lowest first, one lane index
 * a byte from the lowest byte up, zero bytes after them: the index vector
 * of the one permute that packs the kept lanes. A table rather than
 * pdep/pext: AMD CPUs before Zen 3 run those in microcode, tens to
 * hundreds of cycles, and they are AVX2 CPUs; a load from a 2 KiB table
 * costs the same everywhere. tests/test_levels.c checks every entry, and
 * the 4-lane view of the first 16. */
#ifndef PROX_LANE_ORDER_H
#define PROX_LANE_ORDER_H

#include <stdint.h>

/* 8 bytes an entry. For 4 lanes, entry m < 16's low 4 bytes are the same
 * list: the one table serves both. */
extern const uint64_t prox_lane_order8[256];

#endif

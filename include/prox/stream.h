/* stream.h: the pairs of an output too large to hold, in blocks.
 *
 * prox_pairs_stream finds the same pairs as prox_pairs and hands them to a
 * function in blocks of at most block_pairs pairs, as they are found, so
 * that a caller can write or reduce them within a fixed memory:
 *   - sorted = true: by (i, j), i < j, the order of a sorted buffer sink.
 *     The points are searched as queries of the built structure, a block
 *     of rows at a time: each block is counted first, and halved while its
 *     query output would exceed 16 x block_pairs entries (one row alone may
 *     hold up to count - 1), then searched again for its pairs. Each pair
 *     is tested four times instead of once, and sorted query output costs
 *     more per pair than a sorted buffer: expect several times the time of
 *     prox_pairs.
 *   - sorted = false: the callback sink's traversal order (pairs.h), i < j,
 *     searched once, on one thread.
 * Memory beyond the structure: one block of block_pairs pairs, and for
 * sorted output the query output of one block of rows (at most
 * max(16 x block_pairs, count - 1) entries of 8 bytes). The same output for every thread
 * count. fn returns nonzero to stop: the call then returns PROX_STOPPED.
 * stats->pairs counts the pairs delivered.
 */
#ifndef PROX_STREAM_H
#define PROX_STREAM_H

#include "prox/grid.h"

#ifdef __cplusplus
extern "C" {
#endif

/* count >= 1 pairs; return nonzero to stop. */
typedef int (*prox_block_fn)(const prox_pair *pairs, int64_t count, void *user);

/* block_pairs: 0 = 65,536 (512 KiB). */
PROX_API prox_status prox_pairs_stream(const prox_points *points, const prox_grid_desc *desc,
                                       prox_algo algo, bool sorted, int64_t block_pairs,
                                       prox_block_fn fn, void *user, prox_stats *stats);

#ifdef __cplusplus
}
#endif
#endif

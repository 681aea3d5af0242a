/* grid_split.h: a grid's sorted rows written straight into two index
 * arrays, with free slots after each row for entries the caller merges in
 * itself. It serves the cell halo (cell_halo.c), whose output is the main
 * search's rows plus the few image pairs across the faces: the rows are
 * placed once, where the output holds them, instead of delivered as pairs
 * and copied (docs/design.md, "Large cells: the halo"). */
#ifndef PROX_GRID_SPLIT_H
#define PROX_GRID_SPLIT_H

#include <stdbool.h>
#include <stdint.h>

#include "prox/grid.h"

typedef struct prox_grid_split {
    /* in */
    bool full; /* a row holds every other point within the radius, else those above its id */
    /* n + 1 nondecreasing entries, or NULL: row id is followed by
     * room_start[id + 1] - room_start[id] free slots */
    const uint32_t *room_start;
    /* called, when set, for each row with room right after its entries are
     * placed (the row still in cache), to fill the room: row[0 .. entries)
     * are the entries, row[entries .. entries + room) the room. Rows are
     * handed out from several threads at once, each row once. */
    void (*fill_room)(void *user, prox_index id, prox_index *row, int64_t entries, int64_t room);
    void *user;
    const prox_allocator *allocator; /* of i, j and starts: the caller frees them with it */
    /* out: count entries each. Row id spans [starts[id], starts[id + 1]):
     * its entries ascending, then its free slots (filled by fill_room, else
     * unwritten); i[t] is the row of entry t, free slots included. */
    prox_index *i, *j;
    int64_t *starts; /* n + 1 */
    int64_t count;
} prox_grid_split;

/* The built grid's rows (prox_grid_pairs' sorted rows, the same entries)
 * into `out`; on failure out holds nothing. */
prox_status prox_grid_pairs_split(prox_grid *g, prox_grid_split *out, prox_stats *stats);

#endif

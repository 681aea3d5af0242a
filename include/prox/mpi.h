/* mpi.h: distributed neighbour search and broad phase over MPI
 * (libprox_mpi, built when CMake finds MPI; the core library has no MPI).
 *
 * Each rank owns a region of space; the regions tile the domain. Items
 * carry 64-bit global ids chosen by the caller, unique over all ranks.
 *
 * Points (prox_dist):
 *   1. prox_dist_partition: the regions, by recursive coordinate bisection
 *      (RCB) balanced by counts over every rank's points (the default), or
 *      one box per rank given by the caller (desc.partition).
 *   2. prox_dist_migrate_count / prox_dist_migrate: every point moves to the
 *      rank whose region holds it; the first call says how many points this
 *      rank will hold, so that the caller can size its arrays.
 *   3. prox_dist_build: the owned points (each inside this rank's region);
 *      every owned point within the halo (radius + skin) of another rank's
 *      region is sent there as a ghost, periodic images included.
 *   4. prox_dist_pairs: pairs within the radius, in the local numbering:
 *      owned points 0 .. owned-1 in the caller's order, then the ghosts
 *      owned .. owned+ghosts-1; prox_dist_ids maps every local index to
 *      its global id. Any prox_sink works:
 *        buffer, callback, count: the pairs this rank reports (below), i < j,
 *          the buffer sorted by (i, j);
 *        lists: one row per owned point, its full neighbour list (owned and
 *          ghost neighbours, every one of them, ascending local index).
 *      prox_dist_pairs_ids gives the same by global id.
 *   5. Moving points: prox_dist_refresh with the owned points' new
 *      positions (same points, same order) sends every ghost its owner's
 *      new position, unless some point on any rank moved more than skin / 2
 *      since the last build: then it sets *must_migrate and the caller
 *      migrates and builds again (the rule of prox_skin_list).
 *
 * The owner rule: every global pair {a, b} within the radius is reported
 * exactly once over all ranks: by the rank owning a and b when one rank
 * owns both, else by the rank owning the smaller global id.
 *
 * Boxes (prox_dist_broad): each rank passes its boxes with global ids; the
 * partition is made over the boxes' centres (or given); every box goes to
 * every rank whose region it overlaps. A pair of overlapping boxes is
 * reported once, by the rank whose region holds the lower corner of the
 * two boxes' intersection. Queries spread over ranks go to the ranks their
 * box overlaps; the hits come back to the rank that asked.
 *
 * Regions are half-open: a position x belongs to [lo, hi) on every axis.
 * RCB regions reach to infinity on open axes, so every position has an
 * owner; caller-given boxes must tile every position the data takes
 * (a point outside all of them is PROX_ERR_DATA, naming its id).
 * Periodic axes (desc.grid.period[k] > 0, orthogonal boxes) wrap positions
 * into [0, period) for ownership and distances, exactly as the
 * single-machine grid does; migrated coordinates are passed through as the
 * caller gave them. The broad phase has open axes only.
 *
 * Every call taking the object is collective over its communicator: every
 * rank calls it, ranks with no items included. A call fails on every rank
 * when it fails on one (the others' message names the failing rank). The
 * distances follow the boundary rule of grid.h: every result is exactly
 * what the single-machine prox_pairs (or prox_broad_pairs) gives on the
 * union of all ranks' items.
 *
 * Messages: prox_dist_last_error() (this thread's last failure in this
 * library, the core's message included when a core call failed).
 */
#ifndef PROX_MPI_H
#define PROX_MPI_H

#include <mpi.h>

#include "prox/prox.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum prox_partition {
    PROX_PARTITION_RCB = 0,   /* recursive coordinate bisection by counts */
    PROX_PARTITION_BOXES = 1, /* desc.boxes: one region per rank */
} prox_partition;

typedef struct prox_dist_desc {
    /* The local work: radius (required for points), period, keys,
     * threads... as for the single-machine grid. */
    prox_grid_desc grid;
    /* Boxes: the local broad phase (algo, threads...). */
    prox_broad_desc broad;
    /* Moving points: pairs within radius + skin stay covered by the halo
     * until some point moves more than skin / 2. >= 0, default 0. */
    double skin;
    /* Width of the halo; 0 = radius + skin. A halo below radius + skin is
     * PROX_ERR_INVALID. On a periodic axis it must stay below half the
     * period. */
    double halo;
    prox_partition partition; /* default PROX_PARTITION_RCB */
    /* PROX_PARTITION_BOXES: 6 doubles per rank, lo x, y, z then hi x, y, z
     * (z ignored in 2D), the same on every rank; copied at create. */
    const double *boxes;
} prox_dist_desc;

prox_dist_desc prox_default_dist_desc(void);

/* Per-rank figures since create (or the last prox_dist_reset_stats). */
typedef struct prox_dist_stats {
    int64_t owned;      /* items this rank owns now (boxes: passed to the last build) */
    int64_t ghosts;     /* ghosts held now (boxes: held after the distribution, the
                           ones this rank's region overlaps, its own among them) */
    int64_t pairs;      /* pairs reported by this rank's last pairs call */
    int64_t messages;   /* point-to-point messages sent (nonzero sends) */
    int64_t bytes_sent; /* payload bytes sent to other ranks */
    int64_t migrations; /* builds after a migration */
    int64_t refreshes;  /* refresh calls that moved ghosts */
    double exchange_s;  /* wall seconds in communication, waiting included */
    double compute_s;   /* wall seconds in local work */
} prox_dist_stats;

/* Results by global id. */
typedef struct prox_id_pair {
    int64_t a, b;
} prox_id_pair;

typedef struct prox_id_pairs {
    prox_id_pair *pairs;
    int64_t count, capacity;
} prox_id_pairs;

/* CSR by id: row r (item row_ids[r]) holds ids[offsets[r] .. offsets[r+1]). */
typedef struct prox_id_lists {
    int64_t *offsets;
    int64_t *ids;
    int64_t *row_ids;
    int64_t rows;
} prox_id_lists;

typedef int (*prox_id_pair_fn)(int64_t a, int64_t b, void *user);

typedef struct prox_id_sink {
    prox_sink_kind kind;
    prox_id_pairs *buffer; /* PROX_SINK_BUFFER: replaced by the result */
    prox_id_lists *lists;  /* PROX_SINK_LISTS: replaced by the result */
    prox_id_pair_fn fn;    /* PROX_SINK_CALLBACK */
    void *user;
} prox_id_sink;

prox_id_sink prox_id_sink_count(void);
prox_id_sink prox_id_sink_buffer(prox_id_pairs *buffer);
prox_id_sink prox_id_sink_lists(prox_id_lists *lists);
prox_id_sink prox_id_sink_callback(prox_id_pair_fn fn, void *user);
/* Zeroed structs are empty; free leaves them empty. */
void prox_id_pairs_free(prox_id_pairs *pairs);
void prox_id_lists_free(prox_id_lists *lists);

/* Collective: every rank's pairs at `root`, sorted by (a, b); other ranks'
 * buffers are emptied. */
prox_status prox_id_pairs_gather(MPI_Comm comm, int root, prox_id_pairs *pairs);
/* Collective: every rank's rows at `root`, sorted by row id; other ranks'
 * lists are emptied. */
prox_status prox_id_lists_gather(MPI_Comm comm, int root, prox_id_lists *lists);

const char *prox_dist_last_error(void);

/* ---- points --------------------------------------------------------- */

typedef struct prox_dist prox_dist;

/* Collective. The communicator is duplicated. On failure *out is NULL. */
prox_status prox_dist_create(MPI_Comm comm, const prox_dist_desc *desc, prox_dist **out);
void prox_dist_destroy(prox_dist *dist); /* collective (frees the communicator) */

/* Collective: the regions, from every rank's `local` points (RCB) or from
 * desc.boxes (the points are then only checked). */
prox_status prox_dist_partition(prox_dist *dist, const prox_points *local);
/* Rank `rank`'s region (after a partition). */
void prox_dist_region(const prox_dist *dist, int rank, double lo[3], double hi[3]);

/* Collective: where each of `local` goes; *incoming = how many points this
 * rank will hold after prox_dist_migrate with the same points. */
prox_status prox_dist_migrate_count(prox_dist *dist, const prox_points *local,
                                    int64_t *incoming);
/* Collective: moves the points as the last migrate_count planned. out_coords
 * receives incoming * dim values of local's scalar type (packed), out_ids
 * incoming ids; payload (may be NULL) moves payload_size bytes per point
 * along into out_payload. The new order: by source rank, then the source's
 * order. */
prox_status prox_dist_migrate(prox_dist *dist, const prox_points *local, const int64_t *ids,
                              const void *payload, size_t payload_size, void *out_coords,
                              int64_t *out_ids, void *out_payload);

/* Collective: this rank's owned points (each in its region) and their ids;
 * exchanges the halo. The points are copied. */
prox_status prox_dist_build(prox_dist *dist, const prox_points *owned, const int64_t *ids);

int64_t prox_dist_owned(const prox_dist *dist);
int64_t prox_dist_ghosts(const prox_dist *dist);
/* Global ids of the local numbering: owned, then ghosts. */
const int64_t *prox_dist_ids(const prox_dist *dist);

/* Collective: pairs within the radius in the local numbering (see above).
 * stats->pairs: pairs this rank reports (lists: the same figure). */
prox_status prox_dist_pairs(prox_dist *dist, prox_sink sink, prox_stats *stats);
/* The same by global id: pairs (a, b), a < b, sorted; lists: one row per
 * owned point (row_ids), ids ascending. */
prox_status prox_dist_pairs_ids(prox_dist *dist, prox_id_sink sink, prox_stats *stats);

/* Collective: the owned points moved (same count and order as built).
 * Ghost positions are refreshed from their owners, or *must_migrate is
 * set (on every rank) when some point moved more than skin / 2 since the
 * last build; the object then keeps the old positions until the next
 * migrate and build. */
prox_status prox_dist_refresh(prox_dist *dist, const prox_points *owned, bool *must_migrate);

void prox_dist_get_stats(const prox_dist *dist, prox_dist_stats *stats);
void prox_dist_reset_stats(prox_dist *dist);

/* ---- boxes ---------------------------------------------------------- */

typedef struct prox_dist_broad prox_dist_broad;

prox_status prox_dist_broad_create(MPI_Comm comm, const prox_dist_desc *desc,
                                   prox_dist_broad **out);
void prox_dist_broad_destroy(prox_dist_broad *broad);

/* Collective: partition (over the boxes' centres, or desc.boxes) and
 * distribute this rank's boxes; ids are global and unique. */
prox_status prox_dist_broad_build(prox_dist_broad *broad, const prox_boxes *local,
                                  const int64_t *ids);
/* Collective: the overlapping pairs this rank reports, (a, b) by id, a < b,
 * sorted (buffer, callback, count; PROX_SINK_LISTS is PROX_ERR_INVALID
 * here). */
prox_status prox_dist_broad_pairs(prox_dist_broad *broad, prox_id_sink sink, prox_stats *stats);
/* Collective: for each of this rank's query boxes q, the ids of the built
 * boxes (of every rank) it overlaps: pairs (q, id) sorted, q the local
 * query index; lists: one row per query (row_ids = q), ids ascending. */
prox_status prox_dist_broad_query(prox_dist_broad *broad, const prox_boxes *queries,
                                  prox_id_sink sink, prox_stats *stats);
void prox_dist_broad_region(const prox_dist_broad *broad, int rank, double lo[3], double hi[3]);
void prox_dist_broad_get_stats(const prox_dist_broad *broad, prox_dist_stats *stats);

#ifdef __cplusplus
}
#endif
#endif

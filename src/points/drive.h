/* drive.h (drive.c): the one chunk driver of the points family.
 *
 * A traversal supplies a step: the work of chunk k of `count` (a slice of
 * its runs, its query points, its rows), written into the chunk's emitter
 * or into the traversal's own per-chunk output, with what it looked at
 * added to the chunk's counters. The driver splits the work into chunks
 * (prox_chunk_count), runs the steps on the threads, one chunk at a time
 * in any order, sums the counters, delivers the emitters to the sink in
 * chunk order (pair_sink.h: the same output for every thread count) and
 * reports the search's stats. It knows no structure, key, coordinate or
 * SIMD level: those are the step's. */
#ifndef PROX_DRIVE_H
#define PROX_DRIVE_H

#include "core/pair_sink.h"

typedef struct points_chunk {
    int index, count;       /* this chunk, of `count` */
    prox_emitter *emitter;  /* where its pairs go (NULL for points_drive_steps) */
    /* the emitter is a window of the caller's buffer sized by a counting
     * run of the same step: it holds exactly the chunk's pairs and must not
     * be grown or reserved ahead */
    bool window;
    int64_t candidates, cells_visited, rechecked; /* the step adds to them */
} points_chunk;

typedef void points_step(const void *job, points_chunk *chunk);

typedef struct points_drive {
    points_step *step;
    const void *job;
    int threads;
    int64_t work;    /* items the chunk count follows (prox_chunk_count) */
    int64_t rows;    /* the output's rows: points for self pairs, else queries */
    bool symmetric;  /* self pairs, i < j (prox_chunks_deliver) */
    /* The step finds the same pairs in the same order when run twice: an
     * unsorted buffer over several chunks is then filled without staging,
     * each chunk counted first, then written into its window of the
     * buffer (windows in chunk order: the one-chunk traversal order). */
    bool repeatable;
    prox_workspace *workspace; /* the chunks' emitters and the delivery's scratch */
    const char *method;        /* stats.method: the traversal that ran */
} points_drive;

/* The steps run into `sink`. stats (NULL: none wanted) keeps what the
 * structure put there (cells, bytes) and gets pairs, candidates,
 * cells_visited, rechecked and method. PROX_OK, PROX_STOPPED (a callback
 * asked to stop) or PROX_ERR_NO_MEMORY. */
prox_status points_drive_run(const points_drive *d, prox_sink sink, prox_stats *stats);

/* The steps alone, for a traversal with an output of its own (sorted rows,
 * rows filled in place): chunks [0, count) on `threads` threads, no
 * emitter; the counters summed into *total (its emitter and index unused). */
void points_drive_steps(points_step *step, const void *job, int count, int threads,
                        points_chunk *total);

/* The search's fields of stats (NULL: nothing) from the summed counters. */
void points_drive_report(prox_stats *stats, int64_t pairs, const points_chunk *total,
                         const char *method);

#endif

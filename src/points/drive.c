/* drive.c: the one chunk driver of the points family (drive.h). */
#include "points/drive.h"

#include "core/alloc.h"
#include "core/error.h"

void points_drive_steps(points_step *step, const void *job, int count, int threads,
                        points_chunk *total)
{
    int64_t candidates = 0, cells_visited = 0, rechecked = 0;
#pragma omp parallel for num_threads(threads) if (count > 1) schedule(dynamic, 1) \
    reduction(+ : candidates, cells_visited, rechecked)
    for (int k = 0; k < count; k++) {
        points_chunk c = {.index = k, .count = count};
        step(job, &c);
        candidates += c.candidates;
        cells_visited += c.cells_visited;
        rechecked += c.rechecked;
    }
    *total = (points_chunk){.count = count, .candidates = candidates,
                            .cells_visited = cells_visited, .rechecked = rechecked};
}

void points_drive_report(prox_stats *stats, int64_t pairs, const points_chunk *total,
                         const char *method)
{
    if (!stats)
        return;
    stats->pairs = pairs;
    stats->candidates = total->candidates;
    stats->cells_visited = total->cells_visited;
    stats->rechecked = total->rechecked;
    stats->method = method;
}

/* Each chunk's steps into the emitters (window: into exact windows). */
static void run_chunks(const points_drive *d, prox_emitter *emitter, int count, bool window,
                       points_chunk *total)
{
    int64_t candidates = 0, cells_visited = 0, rechecked = 0;
#pragma omp parallel for num_threads(d->threads) if (count > 1) schedule(dynamic, 1) \
    reduction(+ : candidates, cells_visited, rechecked)
    for (int k = 0; k < count; k++) {
        points_chunk c = {.index = k, .count = count, .emitter = &emitter[k], .window = window};
        d->step(d->job, &c);
        candidates += c.candidates;
        cells_visited += c.cells_visited;
        rechecked += c.rechecked;
    }
    *total = (points_chunk){.count = count, .candidates = candidates,
                            .cells_visited = cells_visited, .rechecked = rechecked};
}

static void *refuse_alloc(size_t size, void *user)
{
    (void)size;
    (void)user;
    return NULL;
}

static void ignore_free(void *ptr, void *user)
{
    (void)ptr;
    (void)user;
}

/* An unsorted buffer filled by several chunks of a repeatable step: each
 * chunk counted first, then written straight into its own window of the
 * caller's buffer: no staging arrays, no concatenation. A window is
 * exactly its chunk's count, so it never grows (its emitter's allocator
 * refuses, should it). */
static prox_status run_into_windows(const points_drive *d, prox_sink sink, int count,
                                    prox_allocator al, points_chunk *total, int64_t *pairs)
{
    prox_emitter *e = prox_alloc_array(&al, count, sizeof *e);
    int64_t *at = prox_alloc_array(&al, count + 1, sizeof *at);
    prox_status st = PROX_OK;
    if (!e || !at)
        st = prox_fail(PROX_ERR_NO_MEMORY, "out of memory for %d chunks", count);
    if (!st) {
        for (int k = 0; k < count; k++)
            e[k] = (prox_emitter){.kind = PROX_SINK_COUNT};
        run_chunks(d, e, count, false, total);
        at[0] = 0;
        for (int k = 0; k < count; k++)
            at[k + 1] = at[k] + e[k].count;
        sink.buffer->count = 0;
        st = prox_pair_buffer_reserve_threads(sink.buffer, at[count], d->threads);
    }
    if (!st) {
        const prox_allocator no_growth = {refuse_alloc, ignore_free, NULL};
        for (int k = 0; k < count; k++)
            e[k] = (prox_emitter){.kind = PROX_SINK_BUFFER, .pairs = sink.buffer->pairs + at[k],
                                  .capacity = at[k + 1] - at[k], .allocator = &no_growth};
        run_chunks(d, e, count, true, total);
        bool failed = false;
        for (int k = 0; k < count; k++)
            failed |= e[k].failed || e[k].count != at[k + 1] - at[k];
        if (failed)
            st = prox_fail(PROX_ERR_NO_MEMORY, "out of memory for pair scratch");
        else
            sink.buffer->count = *pairs = at[count];
    }
    prox_free(&al, e);
    prox_free(&al, at);
    return st;
}

prox_status points_drive_run(const points_drive *d, prox_sink sink, prox_stats *stats)
{
    int count = prox_chunk_count(sink, d->threads, d->work);
    points_chunk total = {0};
    int64_t pairs = 0;
    prox_status st;
    if (d->repeatable && sink.kind == PROX_SINK_BUFFER && sink.unsorted && count > 1) {
        st = run_into_windows(d, sink, count, d->workspace->allocator, &total, &pairs);
    } else {
        prox_chunks chunks = {0};
        st = prox_chunks_init(&chunks, count, sink, d->workspace);
        if (!st) {
            chunks.threads = d->threads;
            run_chunks(d, chunks.emitter, chunks.count, false, &total);
            st = prox_chunks_deliver(&chunks, sink, d->rows, d->symmetric, &pairs);
        }
        prox_chunks_free(&chunks);
    }
    points_drive_report(stats, pairs, &total, d->method);
    return st;
}

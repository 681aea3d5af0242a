/* brute.c: every pair tested; the baseline and the test oracle. */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/pair_sink.h"
#include "points/brute.h"
#include "points/drive.h"
#include "points/points_common.h"
#include "core/threads.h"
#include "core/views.h"

/* Wrapped coordinates as doubles, axis-major (x[0..n), y[0..n), z[0..n)). */
static double *load_coords(const prox_points *p, const double *period, const prox_allocator *al)
{
    double *c = prox_alloc_array(al, 3 * p->count, sizeof *c);
    if (!c)
        return NULL;
    for (int64_t i = 0; i < p->count; i++)
        for (int k = 0; k < 3; k++)
            c[k * p->count + i] = k < p->dim ? prox_coord(p, i, k, period) : 0.0;
    return c;
}

typedef struct brute_set {
    const double *x, *y, *z;
    int64_t n;
} brute_set;

static brute_set set_of(const double *c, int64_t n)
{
    return (brute_set){c, c + n, c + 2 * n, n};
}

/* Rows [begin, end) of the upper triangle (self) or of the query matrix. */
static void brute_rows(const brute_set *a, const brute_set *b, bool self, int64_t begin,
                       int64_t end, const prox_metric *m, prox_emitter *e)
{
    for (int64_t i = begin; i < end && !e->stop; i++)
        for (int64_t j = self ? i + 1 : 0; j < b->n; j++) {
            double d2 = prox_metric_dist2(m, a->x[i] - b->x[j], a->y[i] - b->y[j],
                                          a->z[i] - b->z[j]);
            if (prox_metric_within(m, d2)) {
                prox_emit(e, (prox_index)i, (prox_index)j);
                if (e->stop)
                    return;
            }
        }
}

/* Chunk boundaries: the triangle's rows shrink, so balance by area. */
static int64_t chunk_begin(int64_t n, int chunks, int k, bool self)
{
    if (!self || k == 0 || k == chunks)
        return n * k / chunks;
    double frac = (double)k / chunks; /* share of the area before row i: 1 - (1 - i/n)^2 */
    return (int64_t)((double)n * (1.0 - sqrt(1.0 - frac)));
}

/* One chunk of rows of the triangle (self) or of the query matrix. */
typedef struct brute_job {
    brute_set a, b;
    bool self;
    prox_metric metric;
} brute_job;

static void brute_step(const void *job, points_chunk *chunk)
{
    const brute_job *j = job;
    brute_rows(&j->a, &j->b, j->self, chunk_begin(j->a.n, chunk->count, chunk->index, j->self),
               chunk_begin(j->a.n, chunk->count, chunk->index + 1, j->self), &j->metric,
               chunk->emitter);
}

static prox_status brute_run(const prox_points *points, const prox_points *queries,
                             const prox_grid_desc *desc, prox_sink sink, prox_stats *stats)
{
    bool self = queries == NULL;
    prox_status st = prox_search_check(points, queries, desc, sink, true);
    if (st)
        return st;
    int threads = prox_threads_resolve(desc->threads);

    const prox_allocator *al = &desc->allocator;
    double *pc = load_coords(points, desc->period, al);
    double *qc = self ? pc : load_coords(queries, desc->period, al);
    prox_workspace work; /* one call: its memory goes with it */
    prox_workspace_init(&work, al);
    const prox_points *rows_of = self ? points : queries;
    if (stats) {
        *stats = (prox_stats){0};
        stats->method = "brute";
    }
    if (!pc || !qc) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "brute force: out of memory for coordinates");
    } else {
        brute_job job = {set_of(qc, rows_of->count), set_of(pc, points->count), self,
                         prox_metric_of(desc, points->dim)};
        points_drive d = {.step = brute_step, .job = &job, .threads = threads,
                          .work = rows_of->count, .rows = rows_of->count, .symmetric = self,
                          .workspace = &work, .method = "brute"};
        st = points_drive_run(&d, sink, stats);
    }
    if (stats)
        stats->candidates = self ? points->count * (points->count - 1) / 2
                                 : points->count * queries->count;
    prox_workspace_free(&work);
    if (qc != pc)
        prox_free(al, qc);
    prox_free(al, pc);
    return st;
}

prox_status prox_brute_pairs(const prox_points *points, const prox_grid_desc *desc,
                             prox_sink sink, prox_stats *stats)
{
    return brute_run(points, NULL, desc, sink, stats);
}

prox_status prox_brute_query(const prox_points *points, const prox_points *queries,
                             const prox_grid_desc *desc, prox_sink sink, prox_stats *stats)
{
    if (!queries)
        return prox_fail(PROX_ERR_INVALID, "queries are NULL");
    return brute_run(points, queries, desc, sink, stats);
}

/* sized.c: prox_sized_pairs and prox_sized_query (include/prox/sizes.h):
 * the checks, the planner's one decision (uniform, one grid, classes;
 * docs/design.md, "Sizes"), the traversal of the class pairs, and brute
 * force under the same rule. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/threads.h"
#include "core/views.h"
#include "points/points_common.h"
#include "points/sized.h"
#include "points/sized_classes.h"
#include "points/sized_load.h"

/* One pair of classes searched: the points of class q against the grid of
 * class g over `cut`; items [first, first + n of q) of the traversal. */
typedef struct sized_task {
    int q, g;
    double cut;
    int64_t first;
} sized_task;

#define SIZED_MAX_TASKS (SIZED_MAX_CLASSES * (SIZED_MAX_CLASSES + 1) / 2)

typedef struct sized_job {
    const sized_classes *classes;
    const sized_rule *rule;
    prox_metric metric;
    sized_task task[SIZED_MAX_TASKS];
    int tasks;
    int64_t items;
    /* queries (NULL for self pairs): their wrapped coordinates and sizes */
    const double *qxyz;
    const sized_set *qset;
} sized_job;

/* The class pairs in a fixed order (a <= b), each in its cheaper
 * direction; pairs that cannot interact are left out. */
static void plan_tasks(sized_job *j)
{
    const sized_classes *c = j->classes;
    j->tasks = 0;
    j->items = 0;
    for (int a = 0; a < c->count; a++)
        for (int b = a; b < c->count; b++) {
            double cut = sized_class_pair_cut(j->rule, &c->cls[a], &c->cls[b]);
            if (!(cut > 0))
                continue;
            int q = a, g = b;
            if (a != b && sized_class_cost(c, &c->cls[a], c->cls[b].n, cut) <
                              sized_class_cost(c, &c->cls[b], c->cls[a].n, cut))
                q = b, g = a;
            j->task[j->tasks++] = (sized_task){q, g, cut, j->items};
            j->items += c->cls[q].n;
        }
}

/* Self pairs: items [begin, end) of the tasks. */
static void self_step(const void *job, points_chunk *chunk)
{
    const sized_job *j = job;
    int64_t begin = j->items * chunk->index / chunk->count;
    int64_t end = j->items * (chunk->index + 1) / chunk->count;
    for (int t = 0; t < j->tasks && !chunk->emitter->stop; t++) {
        const sized_task *task = &j->task[t];
        const sized_class *q = &j->classes->cls[task->q], *g = &j->classes->cls[task->g];
        int64_t from = begin > task->first ? begin - task->first : 0;
        int64_t to = end - task->first < q->n ? end - task->first : q->n;
        sized_class_query_class(j->classes, g, j->rule, &j->metric, q, from, to,
                                task->q == task->g, chunk->emitter, chunk);
    }
}

/* Queries [begin, end) in input order, each against every class. */
static void query_step(const void *job, points_chunk *chunk)
{
    const sized_job *j = job;
    int64_t n = j->qset->n;
    int64_t begin = n * chunk->index / chunk->count, end = n * (chunk->index + 1) / chunk->count;
    for (int64_t i = begin; i < end && !chunk->emitter->stop; i++) {
        double qs = j->qset->size ? j->qset->size[i] : 0;
        int32_t qt = j->qset->type ? j->qset->type[i] : 0;
        for (int k = 0; k < j->classes->count && !chunk->emitter->stop; k++) {
            const sized_class *g = &j->classes->cls[k];
            double cut = sized_class_cut(j->rule, g, qs, qt);
            if (!(cut > 0))
                continue;
            sized_probe probe = {j->qxyz + 3 * i, qs, qt, (prox_index)i, cut, -1, false};
            sized_class_query(j->classes, g, j->rule, &j->metric, &probe, chunk->emitter, chunk);
        }
    }
}

/* Wrapped coordinates, point-major (x, y, z per point; z 0 in 2D). */
static double *load_xyz(const prox_points *p, const double *period, const prox_allocator *al)
{
    double *c = prox_alloc_array(al, 3 * p->count, sizeof *c);
    if (c)
        for (int64_t i = 0; i < p->count; i++)
            for (int k = 0; k < 3; k++)
                c[3 * i + k] = k < p->dim ? prox_coord(p, i, k, period) : 0.0;
    return c;
}

/* Brute force: rows [begin, end) of the triangle or of the query matrix. */
typedef struct brute_job {
    const double *a, *b; /* point-major coordinates: rows, columns */
    const sized_set *as, *bs;
    const sized_rule *rule;
    prox_metric metric;
    bool self;
} brute_job;

static void brute_step(const void *job, points_chunk *chunk)
{
    const brute_job *j = job;
    int64_t n = j->as->n;
    int64_t begin = n * chunk->index / chunk->count, end = n * (chunk->index + 1) / chunk->count;
    prox_emitter *e = chunk->emitter;
    for (int64_t i = begin; i < end && !e->stop; i++) {
        const double *p = j->a + 3 * i;
        double si = j->as->size ? j->as->size[i] : 0;
        int32_t ti = j->as->type ? j->as->type[i] : 0;
        for (int64_t k = j->self ? i + 1 : 0; k < j->bs->n && !e->stop; k++) {
            const double *q = j->b + 3 * k;
            double d2 = prox_metric_dist2(&j->metric, p[0] - q[0], p[1] - q[1], p[2] - q[2]);
            double t2 = sized_threshold2(j->rule, si, j->bs->size ? j->bs->size[k] : 0, ti,
                                         j->bs->type ? j->bs->type[k] : 0);
            chunk->candidates++;
            if (sized_within(d2, t2))
                prox_emit(e, (prox_index)i, (prox_index)k);
        }
    }
}

/* Everything a call holds, released in one place. */
typedef struct sized_call {
    const prox_points *points, *queries;
    const prox_grid_desc *desc;
    const prox_allocator *al;
    sized_rule rule;
    sized_set set, qset;
    int threads;
} sized_call;

static prox_status check_call(sized_call *call, const prox_sizes *sizes,
                              const prox_sizes *query_sizes, prox_sink sink)
{
    /* coordinates last: the uniform case's grid checks them itself */
    prox_status st = sized_check_search(call->points, call->queries, call->desc, sink, false);
    if (!st)
        st = sized_check_rule(sizes, &call->rule, call->al);
    if (!st)
        st = sized_load(sizes, &call->rule, call->points->count, "points", call->al, &call->set);
    if (!st && call->queries)
        st = sized_load(query_sizes, &call->rule, call->queries->count, "queries", call->al,
                        &call->qset);
    if (st)
        return st;
    const sized_set *other = call->queries ? &call->qset : &call->set;
    return sized_check_periods(&call->rule, &call->set, other, call->desc->period,
                               call->points->dim);
}

static void call_free(sized_call *call)
{
    sized_set_free(&call->set, call->al);
    sized_set_free(&call->qset, call->al);
    sized_rule_free(&call->rule, call->al);
}

/* Every pair shares one threshold t: the single-radius search at radius
 * t decides each pair by t*t, the same bits. */
static prox_status run_uniform(const sized_call *call, double t, prox_sink sink, prox_stats *stats)
{
    prox_grid_desc d = *call->desc;
    d.radius = t;
    prox_status st = call->queries ? prox_query(call->points, call->queries, &d, PROX_ALGO_GRID,
                                                sink, stats)
                                   : prox_pairs(call->points, &d, PROX_ALGO_GRID, sink, stats);
    if (stats && (st == PROX_OK || st == PROX_STOPPED))
        stats->method = "sized.uniform";
    return st;
}

static prox_status run_classes(const sized_call *call, prox_sink sink, prox_stats *stats)
{
    const sized_set *other = call->queries ? &call->qset : &call->set;
    sized_classes classes;
    prox_status st = sized_classes_build(&classes, call->points, &call->set, other, &call->rule,
                                         call->desc->period, call->threads, call->al);
    sized_job *job = prox_alloc_array(call->al, 1, sizeof *job);
    double *qxyz = call->queries ? load_xyz(call->queries, call->desc->period, call->al) : NULL;
    if (!st && (!job || (call->queries && !qxyz)))
        st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for the search");
    if (!st) {
        *job = (sized_job){.classes = &classes, .rule = &call->rule,
                           .metric = prox_metric_of(call->desc, call->points->dim),
                           .qxyz = qxyz, .qset = &call->qset};
        if (!call->queries)
            plan_tasks(job);
        const char *method = classes.count > 1 ? "sized.classes" : "sized.grid";
        if (stats) {
            *stats = (prox_stats){0};
            stats->cells = 0;
            for (int k = 0; k < classes.count; k++)
                stats->cells += classes.cls[k].cells;
            stats->bytes = classes.bytes;
        }
        prox_workspace work;
        prox_workspace_init(&work, call->al);
        points_drive d = {.step = call->queries ? query_step : self_step, .job = job,
                          .threads = call->threads,
                          .work = call->queries ? call->queries->count : job->items,
                          .rows = call->queries ? call->queries->count : call->points->count,
                          .symmetric = !call->queries, .repeatable = true,
                          .workspace = &work, .method = method};
        st = points_drive_run(&d, sink, stats);
        prox_workspace_free(&work);
    }
    prox_free(call->al, qxyz);
    prox_free(call->al, job);
    sized_classes_free(&classes);
    return st;
}

static prox_status run_brute(const sized_call *call, prox_sink sink, prox_stats *stats)
{
    double *a = load_xyz(call->points, call->desc->period, call->al);
    double *b = call->queries ? load_xyz(call->queries, call->desc->period, call->al) : a;
    prox_status st = PROX_OK;
    if (!a || !b) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "sizes: out of memory for coordinates");
    } else {
        if (stats)
            *stats = (prox_stats){0};
        /* rows are the queries' (or the points'), columns the points' */
        brute_job job = {call->queries ? b : a, a, call->queries ? &call->qset : &call->set,
                         &call->set, &call->rule, prox_metric_of(call->desc, call->points->dim),
                         !call->queries};
        prox_workspace work;
        prox_workspace_init(&work, call->al);
        points_drive d = {.step = brute_step, .job = &job, .threads = call->threads,
                          .work = job.as->n, .rows = job.as->n, .symmetric = job.self,
                          .repeatable = true, .workspace = &work, .method = "sized.brute"};
        st = points_drive_run(&d, sink, stats);
        prox_workspace_free(&work);
    }
    if (b != a)
        prox_free(call->al, b);
    prox_free(call->al, a);
    return st;
}

/* The planner's one decision and the search, the call checked. */
static prox_status sized_search(sized_call *call, prox_algo algo, prox_sink sink,
                                prox_stats *stats)
{
    call->threads = prox_threads_resolve(call->desc->threads);
    double t;
    const sized_set *other = call->queries ? &call->qset : &call->set;
    if (algo == PROX_ALGO_GRID && sized_uniform(&call->rule, &call->set, other, &t) &&
        t <= PROX_RADIUS_MAX)
        return run_uniform(call, t, sink, stats);
    prox_status st = prox_points_check_finite(call->points, "points", call->threads);
    if (!st)
        st = algo == PROX_ALGO_BRUTE ? run_brute(call, sink, stats)
                                     : run_classes(call, sink, stats);
    return st;
}

static prox_status sized_run(sized_call *call, const prox_sizes *sizes,
                             const prox_sizes *query_sizes, prox_algo algo, prox_sink sink,
                             prox_stats *stats)
{
    if (!call->desc)
        return prox_fail(PROX_ERR_INVALID, "sizes: options are NULL; start from "
                                           "prox_default_grid_desc()");
    if (algo != PROX_ALGO_GRID && algo != PROX_ALGO_BRUTE)
        return prox_fail(PROX_ERR_INVALID,
                         "sizes: algorithm %d is not available with sizes; use PROX_ALGO_GRID "
                         "or PROX_ALGO_BRUTE",
                         (int)algo);
    call->al = &call->desc->allocator;
    prox_status st = check_call(call, sizes, query_sizes, sink);
    if (st) {
        call_free(call);
        return st;
    }
    st = sized_search(call, algo, sink, stats);
    call_free(call);
    return st;
}

prox_status sized_pairs_loaded(const prox_points *points, const sized_rule *rule,
                               const sized_set *set, const prox_grid_desc *desc, prox_sink sink,
                               prox_stats *stats)
{
    prox_status st = sized_check_search(points, NULL, desc, sink, false);
    if (st)
        return st;
    /* the caller's rule and set, borrowed: not released here */
    sized_call call = {.points = points, .desc = desc, .al = &desc->allocator, .rule = *rule,
                       .set = *set};
    return sized_search(&call, PROX_ALGO_GRID, sink, stats);
}

prox_status prox_sized_pairs(const prox_points *points, const prox_sizes *sizes,
                             const prox_grid_desc *desc, prox_algo algo, prox_sink sink,
                             prox_stats *stats)
{
    sized_call call = {.points = points, .desc = desc};
    return sized_run(&call, sizes, NULL, algo, sink, stats);
}

prox_status prox_sized_query(const prox_points *points, const prox_sizes *sizes,
                             const prox_points *queries, const prox_sizes *query_sizes,
                             const prox_grid_desc *desc, prox_algo algo, prox_sink sink,
                             prox_stats *stats)
{
    if (!queries)
        return prox_fail(PROX_ERR_INVALID, "sizes: queries are NULL");
    sized_call call = {.points = points, .queries = queries, .desc = desc};
    return sized_run(&call, sizes, query_sizes, algo, sink, stats);
}

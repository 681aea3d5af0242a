/* hierarchical_points.c: neighbour search for particles with the
 * hierarchical hash, on the fly (Pouchol et al. 2009, section 3.3.2, Listing 3).
 *
 * Classes: cells of edge e * 2^c for c = 0 .. top, where class 0 (the
 * interaction radius, the smallest class of the paper) has cells of
 * e = r * (1 + 2^-20) (a hair over r, so that rounding in the cell
 * computation can never put two points within r more than one cell apart)
 * and the top class holds the whole extent in one cell per axis.
 *
 * Keys: Eq. 4, the sum of h^c over the cell's ancestors from the top
 * (64-bit wrapping), in a growable open-addressing table keyed by the full
 * key; each slot has hasChildren and the head of a list of the particles
 * inserted in it (a `next` link per particle).
 *
 * Listing 3, for each particle P (in the Morton order of their cells, see
 * space_order): the cells of class 0 in
 * P's 3 x 3 (x 3) neighbourhood are reached top-down, as in Listing 2 with
 * the box [P - r, P + r]: a cell is entered only when its parent exists with
 * hasChildren (the paper's pruning of empty areas); the particles already
 * inserted in them are the candidates; those within r (the closed ball of
 * exact.h) are P's neighbours; then P is inserted (Listing 1). Each pair is
 * found once, when its later particle is inserted. A slot reached twice by
 * one particle (two neighbour cells whose keys collide) is read once, so
 * no pair is repeated.
 *
 * Queries (prox_query): every point is inserted first, then each query
 * point reads its neighbourhood the same way.
 *
 * The method is sequential (each particle sees the ones before it): one
 * thread whatever desc.threads says. Periodic axes are not supported. */
#include <math.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/morton.h"
#include "core/pair_sink.h"
#include "core/radix_sort.h"
#include "points/drive.h"
#include "points/hierarchical_points.h"
#include "points/points_common.h"
#include "core/views.h"

#define NONE UINT32_MAX
/* At most 2^30 cells of class 0 along an axis: the rounding of a cell
 * coordinate (two operations, each within half an ulp of a value below
 * 2^30) then stays below 2^-22 of a cell, well inside the 2^-20 margin of
 * the cell over r. */
#define MAX_SPAN_BITS 30

typedef struct hp_table {
    uint64_t *key;
    uint32_t *head;     /* first particle of the slot's list, NONE if empty */
    uint8_t *state;     /* bit 0: used, bit 1: hasChildren */
    int64_t slots, used;
    int bits;
} hp_table;

typedef struct hp {
    int dim, top;
    double origin[3], inv_cell;
    int64_t max_cell[3];
    hp_table t;
    uint32_t *next; /* per particle */
    double *coord;  /* per particle, x y z, in insertion (space) order */
    uint32_t *id;   /* the caller's index of each of them */
    const prox_allocator *al;
    bool failed;
    int64_t candidates, visited;
} hp;

#define USED 1u
#define CHILDREN 2u

static inline uint64_t cell_hash(int cls, const int64_t cell[3])
{
    return prox_teschner_hash(cell[0], cell[1], cell[2], ~0ULL) ^
           ((uint64_t)(cls + 4096) * 0xD6E8FEB86659FD93ULL);
}

/* ---- the table ------------------------------------------------------------ */

static bool table_alloc(hp_table *t, const prox_allocator *al, int64_t slots)
{
    t->key = prox_alloc_array(al, slots, sizeof(uint64_t));
    t->head = prox_alloc_array(al, slots, sizeof(uint32_t));
    t->state = prox_alloc_array(al, slots, sizeof(uint8_t));
    if (!t->key || !t->head || !t->state)
        return false;
    memset(t->state, 0, (size_t)slots);
    t->slots = slots;
    t->used = 0;
    t->bits = 0;
    while (((int64_t)1 << t->bits) < slots)
        t->bits++;
    return true;
}

static void table_free(hp_table *t, const prox_allocator *al)
{
    prox_free(al, t->key);
    prox_free(al, t->head);
    prox_free(al, t->state);
    *t = (hp_table){0};
}

static inline int64_t find(const hp_table *t, uint64_t key)
{
    uint64_t mask = (uint64_t)t->slots - 1;
    for (uint64_t s = prox_hash64(key, t->bits); t->state[s] & USED; s = (s + 1) & mask)
        if (t->key[s] == key)
            return (int64_t)s;
    return -1;
}

static int64_t claim(hp *h, uint64_t key);

/* Double the table (half full), moving every slot. */
static bool grow(hp *h)
{
    hp_table old = h->t;
    if (!table_alloc(&h->t, h->al, old.slots * 2)) {
        table_free(&h->t, h->al);
        h->t = old;
        return false;
    }
    for (int64_t s = 0; s < old.slots; s++)
        if (old.state[s] & USED) {
            int64_t at = claim(h, old.key[s]);
            h->t.state[at] = old.state[s];
            h->t.head[at] = old.head[s];
        }
    table_free(&old, h->al);
    return true;
}

/* The slot of key, created (empty) if absent; -1 when memory ran out. */
static int64_t claim(hp *h, uint64_t key)
{
    hp_table *t = &h->t;
    if (2 * (t->used + 1) > t->slots && !grow(h)) {
        h->failed = true;
        return -1;
    }
    uint64_t mask = (uint64_t)t->slots - 1, s = prox_hash64(key, t->bits);
    for (; t->state[s] & USED; s = (s + 1) & mask)
        if (t->key[s] == key)
            return (int64_t)s;
    t->key[s] = key;
    t->head[s] = NONE;
    t->state[s] = USED;
    t->used++;
    return (int64_t)s;
}

/* ---- geometry ------------------------------------------------------------- */

/* The class-0 cell of p, clamped to the points' cells (a query point
 * outside them is within r only of points in the edge cells). */
static void cell_of(const hp *h, const double p[3], int64_t cell[3])
{
    for (int k = 0; k < 3; k++) {
        double u = k < h->dim ? floor((p[k] - h->origin[k]) * h->inv_cell) : 0.0;
        cell[k] = !(u > 0) ? 0 : u >= (double)h->max_cell[k] ? h->max_cell[k] : (int64_t)u;
    }
}

static prox_status choose_geometry(hp *h, const double *coord, int64_t n, double r)
{
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    for (int k = 0; k < h->dim; k++) {
        lo[k] = n ? coord[k] : 0;
        hi[k] = lo[k];
        for (int64_t i = 1; i < n; i++) {
            double v = coord[3 * i + k];
            lo[k] = v < lo[k] ? v : lo[k];
            hi[k] = v > hi[k] ? v : hi[k];
        }
    }
    double cell = r * (1.0 + ldexp(1.0, -20));
    h->inv_cell = 1.0 / cell;
    h->top = 0;
    for (int k = 0; k < 3; k++) {
        h->origin[k] = lo[k];
        double span = (hi[k] - lo[k]) * h->inv_cell;
        if (!(span < ldexp(1.0, MAX_SPAN_BITS)))
            return prox_fail(PROX_ERR_RANGE,
                             "hierarchical: the points span %g along axis %d, over 2^%d cells "
                             "of the radius %g",
                             hi[k] - lo[k], k, MAX_SPAN_BITS, r);
        h->max_cell[k] = (int64_t)span;
        while ((h->max_cell[k] >> h->top) > 0)
            h->top++;
    }
    return PROX_OK;
}

/* ---- Listing 1: insertion ---------------------------------------------- */

static void insert(hp *h, uint32_t id)
{
    int64_t cell[3], c[3];
    cell_of(h, &h->coord[3 * (int64_t)id], cell);
    uint64_t key = 0;
    for (int cls = h->top; cls >= 0; cls--) {
        for (int k = 0; k < 3; k++)
            c[k] = cell[k] >> cls;
        key += cell_hash(cls, c);
        int64_t s = claim(h, key);
        if (s < 0)
            return;
        if (cls > 0) {
            h->t.state[s] |= CHILDREN;
        } else {
            h->next[id] = h->t.head[s];
            h->t.head[s] = id;
        }
    }
}

/* ---- Listing 3: the neighbourhood, top-down ----------------------------- */

typedef struct hp_node {
    int64_t cell[3];
    uint64_t key;
    int cls;
} hp_node;

/* Per point: the class-0 cells [lo, hi] of its neighbourhood; the stack of
 * cells to visit; the slots of class 0 already read. */
typedef struct hp_walk {
    int64_t lo[3], hi[3];
    hp_node stack[64 * 8];
    int64_t read[27];
    int nread;
} hp_walk;

static void push_children(hp_walk *w, int *top, const hp_node *parent, int cls)
{
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = w->lo[k] >> cls;
        hi[k] = w->hi[k] >> cls;
        if (parent) {
            lo[k] = lo[k] > 2 * parent->cell[k] ? lo[k] : 2 * parent->cell[k];
            hi[k] = hi[k] < 2 * parent->cell[k] + 1 ? hi[k] : 2 * parent->cell[k] + 1;
        }
    }
    hp_node n = {.cls = cls};
    for (n.cell[2] = lo[2]; n.cell[2] <= hi[2]; n.cell[2]++)
        for (n.cell[1] = lo[1]; n.cell[1] <= hi[1]; n.cell[1]++)
            for (n.cell[0] = lo[0]; n.cell[0] <= hi[0]; n.cell[0]++) {
                n.key = (parent ? parent->key : 0) + cell_hash(cls, n.cell);
                w->stack[(*top)++] = n;
            }
}

static bool already_read(hp_walk *w, int64_t s)
{
    for (int i = 0; i < w->nread; i++)
        if (w->read[i] == s)
            return true;
    w->read[w->nread++] = s;
    return false;
}

/* The particles within r of p among those inserted: (q, j) emitted, or
 * (min, max) of (q, j) when `self` (q is being inserted). */
static void neighbours(hp *h, const double p[3], uint32_t q, bool self, const prox_metric *m,
                       prox_emitter *e)
{
    hp_walk w;
    int64_t cell[3];
    cell_of(h, p, cell);
    for (int k = 0; k < 3; k++) {
        bool axis = k < h->dim;
        w.lo[k] = axis && cell[k] > 0 ? cell[k] - 1 : cell[k];
        w.hi[k] = axis && cell[k] < h->max_cell[k] ? cell[k] + 1 : cell[k];
    }
    w.nread = 0;
    int top = 0;
    push_children(&w, &top, NULL, h->top);
    while (top > 0 && !e->stop) {
        hp_node n = w.stack[--top];
        h->visited++;
        int64_t s = find(&h->t, n.key);
        if (s < 0)
            continue;
        if (n.cls > 0) {
            if (h->t.state[s] & CHILDREN) /* hm[p.hashKey].hasChildren */
                push_children(&w, &top, &n, n.cls - 1);
            continue;
        }
        if (already_read(&w, s))
            continue;
        for (uint32_t j = h->t.head[s]; j != NONE && !e->stop; j = h->next[j]) {
            const double *c = &h->coord[3 * (int64_t)j];
            h->candidates++;
            double d2 = prox_metric_dist2(m, p[0] - c[0], p[1] - c[1], p[2] - c[2]);
            if (prox_metric_within(m, d2)) {
                uint32_t other = h->id[j];
                if (!self)
                    prox_emit(e, (prox_index)q, (prox_index)other);
                else
                    prox_emit(e, (prox_index)(q < other ? q : other),
                              (prox_index)(q < other ? other : q));
            }
        }
    }
}

/* ---- insertion order -------------------------------------------------------- */

/* The particles are inserted in the Morton order of their class-0 cells
 * instead of input order: each pair is still found once (by the later of
 * its two particles), and consecutive particles meet the same cells, so
 * the table stays in cache (in input order nearly every lookup of W2 missed
 * it). coord is rewritten in that order and id[] maps back. */
static bool space_order(hp *h, int64_t n)
{
    uint64_t *key = prox_alloc_array(h->al, 2 * n, sizeof(uint64_t));
    uint32_t *order = prox_alloc_array(h->al, 2 * n, sizeof(uint32_t));
    double *sorted = prox_alloc_array(h->al, 3 * n, sizeof(double));
    bool ok = key && order && sorted;
    int shift = h->top > 21 ? h->top - 21 : 0; /* 3D keys: 21 bits per axis */
    for (int64_t i = 0; ok && i < n; i++) {
        int64_t c[3];
        cell_of(h, &h->coord[3 * i], c);
        key[i] = h->dim == 2 ? prox_morton2((uint32_t)c[0], (uint32_t)c[1])
                             : prox_morton3((uint32_t)(c[0] >> shift), (uint32_t)(c[1] >> shift),
                                            (uint32_t)(c[2] >> shift));
        order[i] = (uint32_t)i;
    }
    if (ok) {
        prox_radix_sort64(key, order, key + n, order + n, n, 1);
        for (int64_t i = 0; i < n; i++) {
            for (int k = 0; k < 3; k++)
                sorted[3 * i + k] = h->coord[3 * (int64_t)order[i] + k];
            h->id[i] = order[i];
        }
        prox_free(h->al, h->coord);
        h->coord = sorted;
        sorted = NULL;
    }
    prox_free(h->al, key);
    prox_free(h->al, order);
    prox_free(h->al, sorted);
    return ok;
}

/* ---- entry points ---------------------------------------------------------- */

static double *load(const prox_points *p, const prox_allocator *al)
{
    double *c = prox_alloc_array(al, 3 * p->count, sizeof *c);
    if (!c)
        return NULL;
    for (int64_t i = 0; i < p->count; i++)
        for (int k = 0; k < 3; k++)
            c[3 * i + k] = k < p->dim ? prox_points_get(p, i, k) : 0.0;
    return c;
}

static prox_status check(const prox_points *points, const prox_points *queries,
                         const prox_grid_desc *desc, prox_sink sink)
{
    prox_status st = prox_search_check(points, queries, desc, sink, true);
    for (int k = 0; !st && k < 3; k++)
        if (desc->period[k] > 0)
            st = prox_fail(PROX_ERR_INVALID,
                           "the hierarchical hash does not support periodic axes; use grid");
    if (!st && points->count >= (int64_t)UINT32_MAX)
        st = prox_fail(PROX_ERR_RANGE, "hierarchical: at most 2^32 - 2 points");
    return st;
}

/* The whole search, as one chunk: each point meets those inserted before
 * it (Listing 3), then each query point meets them all. */
typedef struct hp_job {
    hp *h;
    int64_t n;
    const prox_points *queries;
    const double *qc;
    prox_metric metric; /* open axes only (check) */
} hp_job;

static void hp_step(const void *job, points_chunk *chunk)
{
    const hp_job *j = job;
    hp *h = j->h;
    prox_emitter *e = chunk->emitter;
    for (int64_t i = 0; i < j->n && !h->failed && !e->stop; i++) {
        if (!j->queries)
            neighbours(h, &h->coord[3 * i], h->id[i], true, &j->metric, e);
        insert(h, (uint32_t)i);
    }
    for (int64_t q = 0; j->queries && q < j->queries->count && !h->failed && !e->stop; q++)
        neighbours(h, &j->qc[3 * q], (uint32_t)q, false, &j->metric, e);
    if (h->failed)
        e->stop = true;
}

static prox_status run(const prox_points *points, const prox_points *queries,
                       const prox_grid_desc *desc, prox_sink sink, prox_stats *stats)
{
    if (stats)
        *stats = (prox_stats){0};
    prox_status st = check(points, queries, desc, sink);
    if (st)
        return st;
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    int64_t n = points->count;
    hp h = {.dim = points->dim, .al = &al};
    double *qc = NULL;
    h.coord = load(points, &al);
    h.next = prox_alloc_array(&al, n, sizeof(uint32_t));
    h.id = prox_alloc_array(&al, n, sizeof(uint32_t));
    int64_t initial = desc->table_size > 0 ? desc->table_size : 4 * n + 64;
    int64_t slots = 1;
    while (slots < initial)
        slots <<= 1;
    prox_workspace work; /* one call: its memory goes with it */
    prox_workspace_init(&work, &al);
    bool ok = h.coord && h.next && h.id && table_alloc(&h.t, &al, slots);
    if (ok && queries)
        ok = (qc = load(queries, &al)) != NULL;
    st = ok ? choose_geometry(&h, h.coord, n, desc->radius)
            : prox_fail(PROX_ERR_NO_MEMORY, "hierarchical: out of memory for %lld points",
                        (long long)n);
    if (!st && !space_order(&h, n))
        st = prox_fail(PROX_ERR_NO_MEMORY, "hierarchical: out of memory ordering %lld points",
                       (long long)n);
    int64_t pairs = 0;
    if (!st) {
        hp_job job = {&h, n, queries, qc, prox_metric_of(desc, points->dim)};
        points_drive d = {.step = hp_step, .job = &job, .threads = 1, .work = 0,
                          .rows = queries ? queries->count : n, .symmetric = !queries,
                          .workspace = &work, .method = "hierarchical"};
        prox_stats search = {0};
        st = points_drive_run(&d, sink, &search);
        pairs = search.pairs;
        if (h.failed)
            st = prox_fail(PROX_ERR_NO_MEMORY, "hierarchical: out of memory growing the table");
    }
    if (stats) {
        stats->method = "hierarchical";
        stats->pairs = pairs;
        stats->candidates = h.candidates;
        stats->cells = h.t.used;
        stats->cells_visited = h.visited;
        stats->bytes = h.t.slots * (int64_t)(8 + 4 + 1) + n * (int64_t)(4 + 4 + 24);
    }
    prox_workspace_free(&work);
    table_free(&h.t, &al);
    prox_free(&al, h.next);
    prox_free(&al, h.id);
    prox_free(&al, h.coord);
    prox_free(&al, qc);
    return st;
}

prox_status prox_hierarchical_pairs(const prox_points *points, const prox_grid_desc *desc,
                                    prox_sink sink, prox_stats *stats)
{
    return run(points, NULL, desc, sink, stats);
}

prox_status prox_hierarchical_query(const prox_points *points, const prox_points *queries,
                                    const prox_grid_desc *desc, prox_sink sink,
                                    prox_stats *stats)
{
    if (!queries)
        return prox_fail(PROX_ERR_INVALID, "queries are NULL");
    return run(points, queries, desc, sink, stats);
}

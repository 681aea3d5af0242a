/* multilevel_hash.c: multilevel hashing (Eitz and Lixu 2007; Pouchol et al. 2009, section
 * 2.2), and the uniform-hashing engine it shares with the box grid
 * (broad_grid.c, Pouchol et al. 2009, section 2.1: the same engine with one level).
 *
 * Levels: level L has cells of edge size[L]. Multilevel: size[L] =
 * 2^(min_class + L), and a box goes to the level of its class c =
 * ceil(log2(longest edge)) (Eq. 2), clamped to [min_class, max_class].
 * A box is stored in every cell of its level it covers: the cells holding
 * its corners, at most 2 per axis when its class fits it (Eq. 3's "8
 * endpoints"); a box larger than the largest class is split over all the
 * cells it covers, and one covering more than MAX_CELLS_PER_BOX cells goes
 * to an oversize list that every query takes as candidates (no hang, no
 * gigabytes).
 *
 * Storage is flat (the fluid-hash chapter: construction by sort): one entry (slot, box)
 * per stored cell, where slot = hash(level, cell) (Eq. 3 with the level
 * mixed in, so that cell (0,0,0) of each level does not collide) reduced
 * to a power-of-two table; entries are radix-sorted by slot, and
 * slot_start[s] .. slot_start[s+1] are the boxes of slot s (each once).
 * Colliding cells share a slot: that costs candidates, never correctness,
 * since the front tests every candidate exactly; the store keeps each
 * copy's level, so that copies of another level are skipped and a query
 * covering one cell of a level meets its boxes once (broad.h).
 *
 * The table length (desc.table_size, or 2 x the entries) is rounded up to
 * a power of two.
 *
 * Query (section 2.2): for each level, the cells the query box covers
 * (clipped to the level's occupied cell range) are looked up; when the
 * query covers more cells than the level holds boxes, the level's boxes
 * are taken directly instead. Cell coordinates are floor((x - origin) /
 * size): monotonic in x, so a box and a query that overlap always share a
 * cell of the box's level. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "broad/broad.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/radix_sort.h"

/* A box covering more cells of its level than this is kept apart. */
#define MAX_CELLS_PER_BOX 1024
/* At most 2^40 cells along an axis of the finest level (the minimum class
 * is raised when the data would need more). */
#define MAX_SPAN_BITS 40
#define OVERSIZE (-1)

typedef struct hash_level {
    double size, inv;     /* cell edge and its inverse */
    int64_t cmin[3], cmax[3]; /* occupied cell range */
    int64_t first, end;   /* its boxes: by_level[first .. end) */
} hash_level;

typedef struct levels {
    int dim;
    int count;
    hash_level *level;
    int64_t level_capacity;
    double origin[3];
    int bits;
    int64_t slots;
    uint32_t *slot_start; /* slots + 1 */
    int64_t slot_capacity;
    int64_t entries;
    uint64_t *keys, *tmp_keys;
    uint32_t *ids, *tmp_ids;
    int64_t keys_capacity, tmp_keys_capacity, ids_capacity, tmp_ids_capacity;
    int32_t *box_level;   /* n */
    int64_t *box_first;   /* n + 1: entries of box i start at box_first[i] */
    uint32_t *by_level;   /* box ids grouped by level (then oversize), ascending */
    int64_t box_level_capacity, box_first_capacity, by_level_capacity;
    int64_t n, oversize_first; /* oversize boxes: by_level[oversize_first .. n) */
    int64_t occupied;     /* non-empty slots */
    broad_store store;    /* copies of the boxes in entry order */
} levels;

/* ---- geometry ----------------------------------------------------------- */

static inline int64_t cell_of(const levels *t, const hash_level *lv, int k, double x)
{
    return prox_cell_floor((x - t->origin[k]) * lv->inv);
}

/* Cell range of box b at level lv; returns the number of cells (as a
 * double, so that huge ranges cannot overflow). */
static double cell_range(const levels *t, const hash_level *lv, const prox_aabb *b,
                         int64_t lo[3], int64_t hi[3])
{
    double cells = 1.0;
    for (int k = 0; k < 3; k++) {
        lo[k] = cell_of(t, lv, k, b->lo[k]);
        hi[k] = cell_of(t, lv, k, b->hi[k]);
        cells *= (double)hi[k] - (double)lo[k] + 1.0;
    }
    return cells;
}

/* Eq. 3 with the level mixed in, reduced to the table's bits. */
static inline uint64_t slot_of(const levels *t, int level, int64_t x, int64_t y, int64_t z)
{
    uint64_t h = prox_teschner_hash(x, y, z, ~0ULL) ^ ((uint64_t)(level + 1) * 0xD6E8FEB86659FD93ULL);
    return t->bits ? prox_hash64(h, t->bits) : 0;
}

/* ---- the level of each box ---------------------------------------------- */

static int longest_edge_class(const prox_aabb *b, int dim)
{
    return prox_size_class(prox_longest_edge(b, dim));
}

static int level_of(const levels *t, const broad_input *in, int64_t i, int min_class,
                    bool classes)
{
    if (!classes)
        return 0;
    int c = longest_edge_class(&in->box[i], in->dim);
    c = c < min_class ? min_class : c;
    c -= min_class;
    return c >= t->count ? t->count - 1 : c;
}

/* Levels and entry counts; boxes covering too many cells become oversize. */
static int64_t assign_levels(levels *t, const broad_input *in, int min_class, bool classes)
{
    int64_t n = in->n;
#pragma omp parallel for num_threads(in->threads) if (in->threads > 1 && n > 16384) \
    schedule(static)
    for (int64_t i = 0; i < n; i++) {
        int L = level_of(t, in, i, min_class, classes);
        int64_t lo[3], hi[3];
        double cells = cell_range(t, &t->level[L], &in->box[i], lo, hi);
        bool oversize = cells > MAX_CELLS_PER_BOX;
        t->box_level[i] = oversize ? OVERSIZE : L;
        t->box_first[i + 1] = oversize ? 0 : (int64_t)cells;
    }
    t->box_first[0] = 0;
    for (int64_t i = 0; i < n; i++)
        t->box_first[i + 1] += t->box_first[i];
    return t->box_first[n];
}

/* Boxes grouped by level (a counting sort, ascending ids within a level),
 * oversize boxes last; and each level's occupied cell range. */
static void group_by_level(levels *t, const broad_input *in)
{
    for (int L = 0; L < t->count; L++) {
        hash_level *lv = &t->level[L];
        lv->first = lv->end = 0;
        for (int k = 0; k < 3; k++) {
            lv->cmin[k] = INT64_MAX;
            lv->cmax[k] = INT64_MIN;
        }
    }
    int64_t oversize = 0;
    for (int64_t i = 0; i < in->n; i++) {
        int L = t->box_level[i];
        if (L == OVERSIZE) {
            oversize++;
            continue;
        }
        hash_level *lv = &t->level[L];
        lv->end++;
        int64_t lo[3], hi[3];
        cell_range(t, lv, &in->box[i], lo, hi);
        for (int k = 0; k < 3; k++) {
            lv->cmin[k] = lo[k] < lv->cmin[k] ? lo[k] : lv->cmin[k];
            lv->cmax[k] = hi[k] > lv->cmax[k] ? hi[k] : lv->cmax[k];
        }
    }
    int64_t at = 0;
    for (int L = 0; L < t->count; L++) {
        int64_t size = t->level[L].end;
        t->level[L].first = t->level[L].end = at;
        at += size;
    }
    t->oversize_first = at;
    int64_t over_at = at;
    for (int64_t i = 0; i < in->n; i++) {
        int L = t->box_level[i];
        if (L == OVERSIZE)
            t->by_level[over_at++] = (uint32_t)i;
        else
            t->by_level[t->level[L].end++] = (uint32_t)i;
    }
    (void)oversize;
}

/* ---- entries, sorted by slot -------------------------------------------- */

static void fill_entries(levels *t, const broad_input *in)
{
    int64_t n = in->n;
#pragma omp parallel for num_threads(in->threads) if (in->threads > 1 && n > 16384) \
    schedule(static)
    for (int64_t i = 0; i < n; i++) {
        int L = t->box_level[i];
        if (L == OVERSIZE)
            continue;
        int64_t lo[3], hi[3], e = t->box_first[i];
        cell_range(t, &t->level[L], &in->box[i], lo, hi);
        for (int64_t z = lo[2]; z <= hi[2]; z++)
            for (int64_t y = lo[1]; y <= hi[1]; y++)
                for (int64_t x = lo[0]; x <= hi[0]; x++, e++) {
                    t->keys[e] = slot_of(t, L, x, y, z);
                    t->ids[e] = (uint32_t)i;
                }
    }
}

/* slot_start[s] = first entry of slot s (entries sorted by slot). */
static void index_slots(levels *t)
{
    int64_t e = 0;
    t->occupied = 0;
    for (int64_t s = 0; s < t->slots; s++) {
        t->slot_start[s] = (uint32_t)e;
        int64_t begin = e;
        while (e < t->entries && t->keys[e] == (uint64_t)s)
            e++;
        t->occupied += e > begin;
    }
    t->slot_start[t->slots] = (uint32_t)e;
}

static int bits_for(int64_t slots)
{
    int bits = 0;
    while (((int64_t)1 << bits) < slots)
        bits++;
    return bits;
}

static bool reserve(const prox_allocator *al, void *ptr, int64_t *capacity, int64_t count,
                    size_t size)
{
    void **p = ptr;
    return prox_reserve(al, p, capacity, count, size);
}

static prox_status allocate(levels *t, const broad_input *in, int nlevels)
{
    const prox_allocator *al = in->allocator;
    bool ok = reserve(al, &t->level, &t->level_capacity, nlevels, sizeof *t->level) &&
              reserve(al, &t->box_level, &t->box_level_capacity, in->n, sizeof(int32_t)) &&
              reserve(al, &t->box_first, &t->box_first_capacity, in->n + 1, sizeof(int64_t)) &&
              reserve(al, &t->by_level, &t->by_level_capacity, in->n, sizeof(uint32_t));
    return ok ? PROX_OK
              : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for the levels of %lld boxes",
                          (long long)in->n);
}

static prox_status allocate_entries(levels *t, const broad_input *in)
{
    const prox_allocator *al = in->allocator;
    if (t->entries >= (int64_t)UINT32_MAX)
        return prox_fail(PROX_ERR_RANGE, "%lld cell entries; at most 2^32 - 2 fit",
                         (long long)t->entries);
    int64_t want = in->desc->table_size > 0 ? in->desc->table_size : 2 * t->entries;
    t->bits = bits_for(want > 1 ? want : 1);
    t->slots = (int64_t)1 << t->bits;
    bool ok = reserve(al, &t->keys, &t->keys_capacity, t->entries, sizeof(uint64_t)) &&
              reserve(al, &t->tmp_keys, &t->tmp_keys_capacity, t->entries, sizeof(uint64_t)) &&
              reserve(al, &t->ids, &t->ids_capacity, t->entries, sizeof(uint32_t)) &&
              reserve(al, &t->tmp_ids, &t->tmp_ids_capacity, t->entries, sizeof(uint32_t)) &&
              reserve(al, &t->slot_start, &t->slot_capacity, t->slots + 1, sizeof(uint32_t));
    return ok ? PROX_OK
              : prox_fail(PROX_ERR_NO_MEMORY, "out of memory for %lld cell entries",
                          (long long)t->entries);
}

/* ---- build and query (the engine) ---------------------------------------- */

prox_status prox_levels_build(void **impl, const broad_input *in, const double *sizes,
                                int nlevels, int min_class, bool classes)
{
    levels *t = *impl;
    if (!t) {
        t = prox_alloc_array(in->allocator, 1, sizeof *t);
        if (!t)
            return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for a hash structure");
        *t = (levels){0};
        *impl = t;
    }
    prox_status st = allocate(t, in, nlevels);
    if (st)
        return st;
    t->dim = in->dim;
    t->n = in->n;
    t->count = nlevels;
    for (int k = 0; k < 3; k++)
        t->origin[k] = in->lo[k];
    for (int L = 0; L < nlevels; L++)
        t->level[L] = (hash_level){.size = sizes[L], .inv = 1.0 / sizes[L]};
    t->entries = assign_levels(t, in, min_class, classes);
    st = allocate_entries(t, in);
    if (st)
        return st;
    group_by_level(t, in);
    fill_entries(t, in);
    prox_radix_sort64(t->keys, t->ids, t->tmp_keys, t->tmp_ids, t->entries, in->threads);
    /* filled in box order and sorted stably: sorted by (slot, box) */
    t->entries = prox_drop_repeated_entries(t->keys, t->ids, t->entries);
    index_slots(t);
    bool levels_kept = nlevels < UINT8_MAX; /* each copy's level, for unique runs */
    broad_store *store = &t->store;
    if (!prox_store_fill(store, in->allocator, in->box, t->ids, t->entries, in->dim, levels_kept))
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory copying %lld cell entries",
                         (long long)t->entries);
    for (int64_t e = 0; levels_kept && e < t->entries; e++)
        store->level[e] = (uint8_t)t->box_level[store->id[e]];
    prox_store_sort_runs(store, t->slot_start, t->slots, in->dim, in->threads);
    return PROX_OK;
}

static void push_range(broad_scratch *s, const uint32_t *ids, int64_t begin, int64_t end)
{
    if (!prox_scratch_reserve(s, end - begin))
        return;
    memcpy(s->ids + s->count, ids + begin, (size_t)(end - begin) * sizeof(uint32_t));
    s->count += end - begin;
}

static void gather_level(const levels *t, int L, const prox_aabb *q, broad_scratch *s)
{
    const hash_level *lv = &t->level[L];
    if (lv->first == lv->end)
        return;
    int64_t lo[3], hi[3];
    cell_range(t, lv, q, lo, hi);
    double cells = 1.0;
    for (int k = 0; k < 3; k++) {
        lo[k] = lo[k] > lv->cmin[k] ? lo[k] : lv->cmin[k];
        hi[k] = hi[k] < lv->cmax[k] ? hi[k] : lv->cmax[k];
        if (lo[k] > hi[k])
            return;
        cells *= (double)(hi[k] - lo[k]) + 1.0;
    }
    if (cells > (double)(lv->end - lv->first)) {
        push_range(s, t->by_level, lv->first, lv->end); /* cheaper than the cells */
        return;
    }
    s->cells_visited += (int64_t)cells;
    /* one cell of the level: its boxes of the level come once (broad.h) */
    bool levels_kept = t->store.level != NULL;
    uint16_t level = levels_kept ? (uint16_t)L : PROX_ANY_LEVEL;
    bool unique = levels_kept && cells == 1.0;
    for (int64_t z = lo[2]; z <= hi[2]; z++)
        for (int64_t y = lo[1]; y <= hi[1]; y++)
            for (int64_t x = lo[0]; x <= hi[0]; x++) {
                uint64_t slot = slot_of(t, L, x, y, z);
                prox_scratch_push_run(s, (broad_run){t->slot_start[slot], t->slot_start[slot + 1],
                                                      level, unique});
            }
}

void prox_levels_gather(const void *impl, const prox_aabb *q, broad_scratch *s)
{
    const levels *t = impl;
    s->store = &t->store;
    for (int L = 0; L < t->count; L++)
        gather_level(t, L, q, s);
    push_range(s, t->by_level, t->oversize_first, t->n);
}

void prox_levels_destroy(void *impl, const prox_allocator *al)
{
    levels *t = impl;
    if (!t)
        return;
    prox_free(al, t->level);
    prox_free(al, t->slot_start);
    prox_free(al, t->keys);
    prox_free(al, t->tmp_keys);
    prox_free(al, t->ids);
    prox_free(al, t->tmp_ids);
    prox_free(al, t->box_level);
    prox_free(al, t->box_first);
    prox_free(al, t->by_level);
    prox_store_free(&t->store, al);
    prox_free(al, t);
}

int64_t prox_levels_bytes(const void *impl)
{
    const levels *t = impl;
    if (!t)
        return 0;
    return (int64_t)sizeof *t + t->level_capacity * (int64_t)sizeof(hash_level) +
           t->slot_capacity * 4 + (t->keys_capacity + t->tmp_keys_capacity) * 8 +
           (t->ids_capacity + t->tmp_ids_capacity) * 4 + t->box_level_capacity * 4 +
           t->box_first_capacity * 8 + t->by_level_capacity * 4 + prox_store_bytes(&t->store);
}

int64_t prox_levels_cells(const void *impl)
{
    const levels *t = impl;
    return t ? t->occupied : 0;
}

/* ---- multilevel: the classes of Eq. 2 ------------------------------------ */

/* Fitted classes stop above the largest box's class when splitting the
 * largest boxes over smaller cells keeps the expected cells per build
 * within SPLIT_BUDGET times those of Eq. 2 alone (Pouchol et al. 2009, section 2.2,
 * last paragraph: a box larger than the largest class is split over several
 * cells). A cell of class c holds, besides the boxes a query hits, every
 * box within about 2^c of it: a point query in W4's class-11 cells tests 88
 * copies for 16 hits, in class-8 cells 27. On W4 each class given up
 * makes the queries faster for more cells a box (2.5 at class 11, 4.8 at
 * 8, 10.6 at 7; the times: docs/design.md), so the budget of 2 stops at
 * class 8 there; data of one size class (W3)
 * or of sizes close together gain nothing and are left as Eq. 2 has them. */
#define SPLIT_BUDGET 2.0

/* The expected number of cells of edge 1 / inv that a box of edges e
 * covers (per axis e / edge + 1 for a box placed at random). */
static double expected_cells(const double e[3], int dim, double inv)
{
    double cells = 1.0;
    for (int k = 0; k < dim; k++)
        cells *= e[k] * inv + 1.0;
    return cells;
}

/* How far the largest class may come down: a box of class c split over
 * cells of class c - t covers at most (2^t + 1) cells an axis, which must
 * stay within MAX_CELLS_PER_BOX (else it would go to the oversize list). */
static int split_depth(int dim)
{
    int t = 0;
    while (pow((double)((1 << (t + 1)) + 1), dim) <= MAX_CELLS_PER_BOX)
        t++;
    return t;
}

#define MAX_SPLIT_DEPTH 8

/* The largest class of a fitted build, [lo, hi] fitted by Eq. 2: hi
 * lowered by t while the boxes' expected cells, those of the classes above
 * hi - t counted in cells of hi - t, stay within the budget. One pass over
 * the boxes sums what every t needs. */
static int split_ceiling(const broad_input *in, int lo, int hi)
{
    int depth = split_depth(in->dim);
    depth = depth < MAX_SPLIT_DEPTH ? depth : MAX_SPLIT_DEPTH;
    depth = depth < hi - lo ? depth : hi - lo;
    if (depth <= 0)
        return hi;
    double inv[MAX_SPLIT_DEPTH + 1]; /* 1 / the cell edge of class hi - t */
    for (int t = 0; t <= depth; t++)
        inv[t] = ldexp(1.0, t - hi);
    /* cells[t][m]: the expected cells of the boxes of class hi - m (m < t)
     * stored at class hi - t; own[m]: the same at their own class */
    double cells[MAX_SPLIT_DEPTH + 1][MAX_SPLIT_DEPTH] = {{0}}, own[MAX_SPLIT_DEPTH] = {0};
    double total = 0.0; /* every box at its own class (Eq. 2) */
    for (int64_t i = 0; i < in->n; i++) {
        const prox_aabb *b = &in->box[i];
        double e[3] = {0, 0, 0};
        for (int k = 0; k < in->dim; k++)
            e[k] = b->hi[k] - b->lo[k];
        int c = longest_edge_class(b, in->dim);
        c = c < lo ? lo : c > hi ? hi : c;
        int m = hi - c;
        if (m >= depth) { /* never split */
            total += expected_cells(e, in->dim, ldexp(1.0, -c));
            continue;
        }
        own[m] += expected_cells(e, in->dim, inv[m]);
        for (int t = m + 1; t <= depth; t++)
            cells[t][m] += expected_cells(e, in->dim, inv[t]);
    }
    for (int m = 0; m < depth; m++)
        total += own[m];
    double budget = SPLIT_BUDGET * total;
    int best = 0;
    for (int t = 1; t <= depth; t++) {
        double capped = total;
        for (int m = 0; m < t; m++)
            capped += cells[t][m] - own[m];
        if (capped > budget)
            break;
        best = t;
    }
    return hi - best;
}

/* Classes [min, max]: from the options, or fitted to the boxes' longest
 * edges (Eq. 2), the largest lowered by split_ceiling; the minimum is
 * raised so that the finest level has at most 2^40 cells along an axis of
 * the data. */
void prox_fit_classes(const broad_input *in, int *min_class, int *max_class)
{
    double extent = 0.0;
    for (int k = 0; k < in->dim; k++)
        extent = in->hi[k] - in->lo[k] > extent ? in->hi[k] - in->lo[k] : extent;
    int lo = in->desc->min_class, hi = in->desc->max_class;
    bool fitted = lo == 0 && hi == 0;
    if (fitted) {
        lo = INT32_MAX;
        hi = INT32_MIN;
        for (int64_t i = 0; i < in->n; i++) {
            int c = longest_edge_class(&in->box[i], in->dim);
            if (c != INT32_MIN) {
                lo = c < lo ? c : lo;
                hi = c > hi ? c : hi;
            }
        }
        if (lo == INT32_MAX) /* only points: one class about the extent / 64 */
            lo = hi = extent > 0 ? prox_size_class(extent / 64) : 0;
    }
    int extent_class = extent > 0 ? prox_size_class(extent) : lo;
    int floor_class = extent_class - MAX_SPAN_BITS;
    lo = lo < floor_class ? floor_class : lo;
    /* no box is longer than the extent: classes above it are never used */
    int ceiling = extent_class > lo ? extent_class : lo;
    hi = hi > ceiling ? ceiling : hi < lo ? lo : hi;
    *min_class = lo;
    *max_class = fitted ? split_ceiling(in, lo, hi) : hi;
}

#define MAX_LEVELS 2048

static prox_status multilevel_build(void **impl, const broad_input *in)
{
    int lo, hi;
    prox_fit_classes(in, &lo, &hi);
    int nlevels = hi - lo + 1;
    double sizes[MAX_LEVELS];
    for (int L = 0; L < nlevels && L < MAX_LEVELS; L++)
        sizes[L] = ldexp(1.0, lo + L);
    return prox_levels_build(impl, in, sizes, nlevels < MAX_LEVELS ? nlevels : MAX_LEVELS, lo, true);
}

const broad_ops prox_broad_multilevel_ops = {
    .name = "multilevel",
    .build = multilevel_build,
    .destroy = prox_levels_destroy,
    .gather = prox_levels_gather,
    .bytes = prox_levels_bytes,
    .cells = prox_levels_cells,
};

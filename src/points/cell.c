/* cell.c: prox_cell_pairs, every image pair (i, j, S) within the cutoff in
 * a periodic cell of any shape (include/prox/cell.h; docs/design.md,
 * "Periodic cells of any shape").
 *
 * The points are binned by their wrapped fractional coordinates
 * (cell_geometry.c); each point visits the forward half of its stencil
 * (visit_runs), each bin reached through a wrap that carries an integer
 * shift s, as contiguous runs of bins along the first axis (in small
 * cells, each bin's runs gathered once into one). A candidate is first
 * screened with the wrapped coordinates (an approximation, widened by a
 * bound on its rounding), then oriented as the output holds it and
 * decided by the rule of cell.h from the caller's positions and the
 * integer shift S = s + w_i - w_j, where w is each point's wrap. The pairs
 * are bucketed by row and each row sorted by (j, S) (in small cells, three
 * counting sorts written in place, place_radix), so the output is the
 * same for every thread count. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "core/threads.h"
#include "core/views.h"
#include "prox/grid.h"
#include "points/cell_geometry.h"
#include "points/cell_output.h"
#include "points/cell_direct.h"
#include "points/cell_halo.h"

/* The points in bin order. */
typedef struct cell_points {
    double *xw[3];      /* wrapped coordinates (screening only) */
    double *xo[3];      /* the caller's coordinates, widened (the rule) */
    int32_t *w[3];      /* the wrap: x = xw + w . cell */
    prox_index *index;  /* caller's index */
    int64_t *start;     /* bins + 1: bin t holds slots [start[t], start[t+1]) */
    int64_t *slot;      /* caller's index -> slot */
    int64_t *bin;       /* caller's index -> (b0, b1, b2) packed as a linear bin */
    uint64_t *key_lo;   /* slot -> its row's lowest key (plan_keys) */
} cell_points;

typedef struct cell_hit {
    uint64_t key; /* (j, S) packed in lexicographic order (cell_search.keyed) */
    prox_index i, j;
    int32_t S[3];
    double D[3];
    double d2;
} cell_hit;

/* One chunk of query points: the pairs they find, in rows of any point. */
typedef struct cell_chunk {
    cell_hit *hits;
    int64_t count, capacity;
    uint32_t *slots; /* the screen's survivors of one run */
    int64_t slot_capacity;
    int64_t pairs;
    int64_t candidates;
    prox_status status;
} cell_chunk;

typedef struct cell_search {
    prox_cell_frame frame;
    prox_cell_bins bins;
    cell_points pts;
    int64_t count;
    double r2;      /* the rule */
    double screen2; /* the screen: r2 widened by the rounding of wrapped coordinates */
    bool full, self_interaction, store;
    /* The shifts a row may hold: S[k] - key_lo[k] of point i's row lies in
     * [0, key_range[k]), key_lo = image_lo + w_i - w_max; keyed when
     * count * key_range[0..2] stays below 2^62 */
    int64_t image_lo[3], w_max[3], key_range[3];
    uint64_t key_stride[4]; /* of j, S[0], S[1], S[2] in the packed key */
    bool keyed;
    double hits_per_point; /* expected, for the chunks' first reserve; 0 = unknown */
    /* Small cells, many points per bin: each bin's forward stencil outside
     * the bin itself gathered once (gather_stencils): entries [gstart[b],
     * gstart[b + 1]) hold the slot, the bin image and the wrapped
     * coordinates plus image . cell, screened as one run per point */
    bool gathered;
    int64_t *gstart;
    double *gx[3];
    uint32_t *gslot;
    int32_t *gimage; /* 3 per entry */
    const prox_allocator *al;
} cell_search;

prox_cell_desc prox_default_cell_desc(void)
{
    prox_cell_desc d;
    memset(&d, 0, sizeof d);
    return d;
}

static prox_status check_desc(const prox_cell_desc *desc)
{
    if (!isfinite(desc->cutoff) || !(desc->cutoff > 0))
        return prox_fail(PROX_ERR_INVALID, "cutoff is %g; it must be positive and finite",
                         desc->cutoff);
    if (!(desc->cutoff >= PROX_RADIUS_MIN && desc->cutoff <= PROX_RADIUS_MAX))
        return prox_fail(PROX_ERR_RANGE, "cutoff %g is outside [%g, %g]: the rule squares it",
                         desc->cutoff, PROX_RADIUS_MIN, PROX_RADIUS_MAX);
    if (desc->threads < 0)
        return prox_fail(PROX_ERR_INVALID, "threads is %d; 0 means the default", desc->threads);
    return PROX_OK;
}

static void points_free(cell_points *p, const prox_allocator *al)
{
    for (int k = 0; k < 3; k++) {
        prox_free(al, p->xw[k]);
        prox_free(al, p->xo[k]);
        prox_free(al, p->w[k]);
    }
    prox_free(al, p->index);
    prox_free(al, p->start);
    prox_free(al, p->slot);
    prox_free(al, p->bin);
    prox_free(al, p->key_lo);
}

static bool points_alloc(cell_points *p, int64_t n, int64_t bins, const prox_allocator *al)
{
    bool ok = true;
    for (int k = 0; k < 3; k++) {
        ok &= (p->xw[k] = prox_alloc_array(al, n, sizeof(double))) != NULL;
        ok &= (p->xo[k] = prox_alloc_array(al, n, sizeof(double))) != NULL;
        ok &= (p->w[k] = prox_alloc_array(al, n, sizeof(int32_t))) != NULL;
    }
    ok &= (p->index = prox_alloc_array(al, n, sizeof(prox_index))) != NULL;
    ok &= (p->start = prox_alloc_array(al, bins + 1, sizeof(int64_t))) != NULL;
    ok &= (p->slot = prox_alloc_array(al, n, sizeof(int64_t))) != NULL;
    ok &= (p->bin = prox_alloc_array(al, n, sizeof(int64_t))) != NULL;
    ok &= (p->key_lo = prox_alloc_array(al, n, sizeof(uint64_t))) != NULL;
    return ok;
}

/* Wrap of point x: its fractions, the integer wrap w along periodic axes
 * and the linear bin. */
static int64_t wrap_point(const cell_search *s, const double *x, int32_t *w)
{
    const prox_cell_frame *c = &s->frame;
    const prox_cell_bins *b = &s->bins;
    int64_t bin[3];
    for (int k = 0; k < 3; k++) {
        double f = prox_cell_fraction(c, x, k);
        w[k] = 0;
        if (c->pbc[k]) {
            double fl = floor(f);
            w[k] = (int32_t)fl;
            f -= fl;
        }
        bin[k] = prox_cell_bin_of(b, k, f);
    }
    return bin[0] + b->nb[0] * (bin[1] + b->nb[1] * bin[2]);
}

/* Counting sort of the points into bin order; `wraps` (3 a point) keeps
 * the first pass's wraps for the second. */
static void sort_points(cell_search *s, const prox_points *p, int32_t *wraps)
{
    cell_points *q = &s->pts;
    const double(*m)[3] = (const double(*)[3])s->frame.m;
    int64_t bins = s->bins.total;
    memset(q->start, 0, (size_t)(bins + 1) * sizeof(int64_t));
    for (int64_t i = 0; i < p->count; i++) {
        double x[3];
        prox_cell_load(p, i, x);
        q->bin[i] = wrap_point(s, x, wraps + 3 * i);
        q->start[q->bin[i] + 1]++;
    }
    for (int64_t t = 0; t < bins; t++)
        q->start[t + 1] += q->start[t];
    for (int64_t i = 0; i < p->count; i++) {
        double x[3];
        const int32_t *w = wraps + 3 * i;
        prox_cell_load(p, i, x);
        int64_t at = q->start[q->bin[i]]++;
        for (int k = 0; k < 3; k++) {
            q->xw[k][at] = x[k] - (((double)w[0] * m[0][k] + (double)w[1] * m[1][k]) +
                                   (double)w[2] * m[2][k]);
            q->xo[k][at] = x[k];
            q->w[k][at] = w[k];
        }
        q->index[at] = (prox_index)i;
        q->slot[i] = at;
    }
    for (int64_t t = bins; t > 0; t--)
        q->start[t] = q->start[t - 1];
    q->start[0] = 0;
}

/* Runs from which the screen is the SIMD kernel's (cell_screen.c); shorter
 * ones are screened here, where a call through the engine would cost more
 * than the run. */
#define CELL_KERNEL_RUN 16

/* The entries t of [lo, hi) of the coordinate arrays x, y, z within the
 * screen radius of qx, into `slots` (room for hi - lo +
 * PROX_CELL_SCREEN_SLACK). */
static int64_t screen_run(const cell_search *s, const double *restrict x, const double *restrict y,
                          const double *restrict z, const double *qx, int64_t lo, int64_t hi,
                          uint32_t *restrict slots)
{
    if (hi - lo >= CELL_KERNEL_RUN)
        return prox_cell_screen(x, y, z, lo, hi, qx, s->screen2, slots);
    double screen2 = s->screen2;
    int64_t passed = 0;
    for (int64_t t = lo; t < hi; t++) { /* branch-free: every slot written, the near kept */
        double dx = qx[0] - x[t], dy = qx[1] - y[t], dz = qx[2] - z[t];
        slots[passed] = (uint32_t)t;
        passed += dx * dx + dy * dy + dz * dz <= screen2;
    }
    return passed;
}

/* The chunk's list holds room for `more` hits beyond its count. */
static bool hits_room(cell_chunk *ch, const cell_search *s, int64_t more)
{
    return ch->count + more <= ch->capacity ||
           prox_grow(s->al, (void **)&ch->hits, &ch->capacity, ch->count + more, ch->count,
                     sizeof *ch->hits);
}

/* The sort key of (a, b, S) in row a: (j, S) packed (cell_search.keyed). */
static inline uint64_t hit_key(const cell_search *s, int64_t sa, prox_index j, const int32_t *S)
{
    const uint64_t *stride = s->key_stride;
    return (uint64_t)j * stride[0] - s->pts.key_lo[sa] + (uint64_t)(int64_t)S[0] * stride[1] +
           (uint64_t)(int64_t)S[1] * stride[2] + (uint64_t)(int64_t)S[2] * stride[3];
}

/* Pair (a, b, S) of slots sa, sb as the chunk's next hit, in row a: the
 * vector of the rule of cell.h, term by term, and the row's sort key.
 * Computed in locals, then stored (the stores would otherwise reload the
 * cell and coordinate arrays they might alias). */
static inline void hit_write(const cell_search *s, int64_t sa, int64_t sb, const int32_t *S,
                             cell_hit *restrict h)
{
    const cell_points *q = &s->pts;
    const double(*m)[3] = (const double(*)[3])s->frame.m;
    double S0 = (double)S[0], S1 = (double)S[1], S2 = (double)S[2];
    double D[3];
    for (int k = 0; k < 3; k++)
        D[k] = (q->xo[k][sb] - q->xo[k][sa]) + ((S0 * m[0][k] + S1 * m[1][k]) + S2 * m[2][k]);
    prox_index j = q->index[sb];
    uint64_t key = hit_key(s, sa, j, S);
    h->d2 = D[0] * D[0] + D[1] * D[1] + D[2] * D[2];
    h->D[0] = D[0];
    h->D[1] = D[1];
    h->D[2] = D[2];
    h->i = q->index[sa];
    h->j = j;
    h->S[0] = S[0];
    h->S[1] = S[1];
    h->S[2] = S[2];
    h->key = key;
}

/* The reverse (b, a, -S) of the hit h of (a, b, S), in row b. Its vector
 * is -D bit for bit: round-to-nearest is symmetric under negation, of the
 * difference, the products and the sums alike; only an exact zero may
 * differ in sign (x + (-x) is +0 both ways), so a zero entry is computed
 * by the rule itself. The squared distance is the same. */
static inline void hit_reverse(const cell_search *s, int64_t sa, int64_t sb,
                               const cell_hit *restrict h, cell_hit *restrict r)
{
    int32_t S[3] = {-h->S[0], -h->S[1], -h->S[2]};
    double D[3] = {-h->D[0], -h->D[1], -h->D[2]};
    if (D[0] == 0 || D[1] == 0 || D[2] == 0) {
        const cell_points *q = &s->pts;
        const double(*m)[3] = (const double(*)[3])s->frame.m;
        for (int k = 0; k < 3; k++)
            if (D[k] == 0)
                D[k] = (q->xo[k][sa] - q->xo[k][sb]) +
                       (((double)S[0] * m[0][k] + (double)S[1] * m[1][k]) +
                        (double)S[2] * m[2][k]);
    }
    uint64_t key = hit_key(s, sb, h->i, S);
    r->d2 = h->d2;
    r->D[0] = D[0];
    r->D[1] = D[1];
    r->D[2] = D[2];
    r->i = h->j;
    r->j = h->i;
    r->S[0] = S[0];
    r->S[1] = S[1];
    r->S[2] = S[2];
    r->key = key;
}

/* Candidate slot t of the query slot si through the shift S (that is,
 * (i, j, S) with i = index[si], j = index[t]), found once for the pair and
 * its reverse (j, i, -S) (the half stencil): oriented as the half list
 * holds it (i < j, or i == j with S positive), decided by the rule, and
 * kept: once for a half list, in both directions for a full one. Returns
 * the pairs kept. */
static inline int64_t keep_pair(const cell_search *s, int64_t si, int64_t t, const int32_t *S,
                                cell_chunk *ch)
{
    const cell_points *q = &s->pts;
    prox_index i = q->index[si], j = q->index[t];
    bool self = i == j && S[0] == 0 && S[1] == 0 && S[2] == 0;
    bool flip = i != j ? i > j : !self && !prox_cell_shift_positive(S);
    int32_t So[3] = {flip ? -S[0] : S[0], flip ? -S[1] : S[1], flip ? -S[2] : S[2]};
    int64_t sa = flip ? t : si, sb = flip ? si : t;
    cell_hit probe[2], *h = s->store ? &ch->hits[ch->count] : probe;
    hit_write(s, sa, sb, So, h);
    if (!(h->d2 <= s->r2))
        return 0;
    ch->count += s->store;
    if (!s->full || self)
        return 1;
    hit_reverse(s, sa, sb, h, h + 1);
    ch->count += s->store;
    return 2;
}

/* The candidates of slots [lo, hi) for query slot si, whose wrapped
 * coordinates seen through the bin image `shift` are qx: screened (an
 * approximation widened by its rounding), then decided by the rule. */
static bool test_range(const cell_search *s, int64_t si, const double *qx, const int32_t *shift,
                       int64_t lo, int64_t hi, cell_chunk *ch)
{
    const cell_points *q = &s->pts;
    int64_t need = hi - lo + PROX_CELL_SCREEN_SLACK;
    if ((ch->slot_capacity < need &&
         !prox_reserve(s->al, (void **)&ch->slots, &ch->slot_capacity, need, sizeof *ch->slots)) ||
        (s->store && !hits_room(ch, s, 2 * (hi - lo))))
        return false;
    int64_t passed = screen_run(s, q->xw[0], q->xw[1], q->xw[2], qx, lo, hi, ch->slots);
    ch->candidates += hi - lo;
    int32_t wq[3] = {q->w[0][si], q->w[1][si], q->w[2][si]};
    for (int64_t p = 0; p < passed; p++) {
        int64_t t = ch->slots[p];
        int32_t S[3];
        for (int k = 0; k < 3; k++)
            S[k] = shift[k] + wq[k] - q->w[k][t];
        ch->pairs += keep_pair(s, si, t, S, ch);
    }
    return true;
}

/* floor(t / n) and t - n * floor(t / n) for n > 0. */
static void wrap_bin(int64_t t, int64_t n, int64_t *bin, int32_t *image)
{
    if (t >= 0 && t < n) {
        *bin = t;
        *image = 0;
        return;
    }
    int64_t im = t >= 0 ? t / n : -((-t + n - 1) / n);
    *image = (int32_t)im;
    *bin = t - im * n;
}

/* One run of a bin's stencil: slots [lo, hi) seen through the bin image
 * `shift`, whose vector shift . cell is v (screening only); `own` marks
 * the bin itself (image 0). */
typedef struct cell_span {
    int64_t lo, hi;
    int32_t shift[3];
    double v[3];
    bool own;
} cell_span;

typedef bool (*cell_run_fn)(const cell_search *s, const cell_span *run, void *context);

/* The forward half of the stencil of `bin`: the bin offsets o with
 * o2 > 0, or o2 == 0 and o1 > 0, or o2 == o1 == 0 and o0 >= 0. An image
 * pair is one visit (o, i) and its reverse the visit (-o, j) of the other
 * point: visiting the forward offsets (and, in the bin itself, the slots
 * after the point's own) finds each pair and its reverse once; self-images
 * (i, i, S) have nonzero offsets. For each (o1, o2) the first axis' bins
 * are runs that share one image, each handed to fn. */
static bool visit_runs(const cell_search *s, int64_t bin, cell_run_fn fn, void *context)
{
    const prox_cell_bins *b = &s->bins;
    const prox_cell_frame *c = &s->frame;
    const cell_points *q = &s->pts;
    int64_t b0 = bin % b->nb[0], b1 = (bin / b->nb[0]) % b->nb[1], b2 = bin / (b->nb[0] * b->nb[1]);
    for (int64_t o2 = 0; o2 <= b->n[2]; o2++) {
        int64_t t2;
        int32_t s2;
        wrap_bin(b2 + o2, b->nb[2], &t2, &s2);
        if (!c->pbc[2] && s2 != 0)
            continue;
        double v2[3];
        for (int k = 0; k < 3; k++)
            v2[k] = (double)s2 * c->m[2][k];
        for (int64_t o1 = o2 > 0 ? -b->n[1] : 0; o1 <= b->n[1]; o1++) {
            int64_t t1;
            int32_t s1;
            wrap_bin(b1 + o1, b->nb[1], &t1, &s1);
            if (!c->pbc[1] && s1 != 0)
                continue;
            double v21[3];
            for (int k = 0; k < 3; k++)
                v21[k] = (double)s1 * c->m[1][k] + v2[k];
            int64_t row = b->nb[0] * (t1 + b->nb[1] * t2);
            bool own = o1 == 0 && o2 == 0; /* the row of the bin itself */
            int64_t t = own ? b0 : b0 - b->n[0], end = b0 + b->n[0];
            while (t <= end) {
                int64_t t0;
                int32_t s0;
                wrap_bin(t, b->nb[0], &t0, &s0);
                int64_t last = t + (b->nb[0] - 1 - t0); /* the run ends at the image's last bin */
                last = last < end ? last : end;
                if (c->pbc[0] || s0 == 0) {
                    cell_span run = {q->start[row + t0], q->start[row + t0 + (last - t) + 1],
                                    {s0, s1, s2}, {0, 0, 0}, own && t == b0};
                    for (int k = 0; k < 3; k++) /* screening only: any rounding will do */
                        run.v[k] = (double)s0 * c->m[0][k] + v21[k];
                    if (run.lo < run.hi && !fn(s, &run, context))
                        return false;
                }
                t = last + 1;
            }
        }
    }
    return true;
}

/* A point's search: its slot and chunk. */
typedef struct cell_visit {
    int64_t si;
    const double *xw; /* its wrapped coordinates */
    cell_chunk *ch;
} cell_visit;

/* A run of the point's stencil tested (cell_run_fn); in the bin itself
 * the slots after the point's own (from it with self_interaction). */
static bool point_run(const cell_search *s, const cell_span *run, void *context)
{
    const cell_visit *p = context;
    int64_t lo = run->own ? p->si + !s->self_interaction : run->lo;
    double qx[3];
    for (int k = 0; k < 3; k++)
        qx[k] = p->xw[k] - run->v[k];
    return lo >= run->hi || test_range(s, p->si, qx, run->shift, lo, run->hi, p->ch);
}

/* The gathered forward stencil of slot si's bin outside the bin itself
 * (cell_search.gathered), screened as one run, then decided as
 * test_range does. */
static bool test_gathered(const cell_search *s, int64_t si, int64_t bin, cell_chunk *ch)
{
    const cell_points *q = &s->pts;
    int64_t lo = s->gstart[bin], hi = s->gstart[bin + 1];
    int64_t need = hi - lo + PROX_CELL_SCREEN_SLACK;
    if ((ch->slot_capacity < need &&
         !prox_reserve(s->al, (void **)&ch->slots, &ch->slot_capacity, need, sizeof *ch->slots)) ||
        (s->store && !hits_room(ch, s, 2 * (hi - lo))))
        return false;
    double xw[3] = {q->xw[0][si], q->xw[1][si], q->xw[2][si]};
    int64_t passed = screen_run(s, s->gx[0], s->gx[1], s->gx[2], xw, lo, hi, ch->slots);
    ch->candidates += hi - lo;
    int32_t wq[3] = {q->w[0][si], q->w[1][si], q->w[2][si]};
    for (int64_t p = 0; p < passed; p++) {
        int64_t e = ch->slots[p], t = s->gslot[e];
        int32_t S[3];
        for (int k = 0; k < 3; k++)
            S[k] = s->gimage[3 * e + k] + wq[k] - q->w[k][t];
        ch->pairs += keep_pair(s, si, t, S, ch);
    }
    return true;
}

/* Every pair of point slot si in its forward stencil. */
static bool visit_point(const cell_search *s, int64_t si, cell_chunk *ch)
{
    const cell_points *q = &s->pts;
    int64_t bin = q->bin[q->index[si]];
    double xw[3] = {q->xw[0][si], q->xw[1][si], q->xw[2][si]};
    if (s->gathered) {
        int64_t lo = si + !s->self_interaction, hi = q->start[bin + 1];
        int32_t zero[3] = {0, 0, 0};
        return (lo >= hi || test_range(s, si, xw, zero, lo, hi, ch)) &&
               test_gathered(s, si, bin, ch);
    }
    cell_visit p = {si, xw, ch};
    return visit_runs(s, bin, point_run, &p);
}

/* Appends a run of a bin's stencil to the gathered entries, from the
 * entry `at` on (cell_span_fn). The run from the bin itself keeps its
 * bins after it (the bin's own slots are the point's own run,
 * visit_point). */
typedef struct cell_gather {
    int64_t bin, at;
} cell_gather;

static bool gather_run(const cell_search *s, const cell_span *run, void *context)
{
    cell_gather *g = context;
    const cell_points *q = &s->pts;
    int64_t lo = run->own ? q->start[g->bin + 1] : run->lo, at = g->at;
    double *restrict gx = s->gx[0], *restrict gy = s->gx[1], *restrict gz = s->gx[2];
    const double *restrict x = q->xw[0], *restrict y = q->xw[1], *restrict z = q->xw[2];
    uint32_t *restrict gslot = s->gslot;
    int32_t *restrict gimage = s->gimage;
    double v0 = run->v[0], v1 = run->v[1], v2 = run->v[2];
    int32_t s0 = run->shift[0], s1 = run->shift[1], s2 = run->shift[2];
    for (int64_t t = lo; t < run->hi; t++, at++) {
        gx[at] = x[t] + v0;
        gy[at] = y[t] + v1;
        gz[at] = z[t] + v2;
        gslot[at] = (uint32_t)t;
        gimage[3 * at] = s0;
        gimage[3 * at + 1] = s1;
        gimage[3 * at + 2] = s2;
    }
    g->at = at;
    return true;
}

/* Bins from which the stencils are gathered: at least as many points as
 * bins, and at most this many entries. */
#define CELL_GATHER_MAX (1 << 18)

/* Gathers every bin's forward stencil (cell_search.gathered) when the
 * cell holds as many points as bins and a bound on the entries (the
 * stencil's half times the fullest bin, per bin) stays within
 * CELL_GATHER_MAX; false when out of memory. */
static bool gather_stencils(cell_search *s)
{
    const prox_cell_bins *b = &s->bins;
    int64_t bins = b->total, fullest = 0;
    if (bins > s->count)
        return true;
    for (int64_t t = 0; t < bins; t++)
        fullest = s->pts.start[t + 1] - s->pts.start[t] > fullest
                      ? s->pts.start[t + 1] - s->pts.start[t]
                      : fullest;
    double half = ((double)(2 * b->n[0] + 1) * (double)(2 * b->n[1] + 1) *
                       (double)(2 * b->n[2] + 1) + 1) / 2;
    double bound = half * (double)fullest * (double)bins;
    if (!(bound <= CELL_GATHER_MAX))
        return true;
    int64_t room = (int64_t)bound;
    bool ok = (s->gstart = prox_alloc_array(s->al, bins + 1, sizeof *s->gstart)) != NULL;
    ok &= (s->gslot = prox_alloc_array(s->al, room, sizeof *s->gslot)) != NULL;
    ok &= (s->gimage = prox_alloc_array(s->al, 3 * room, sizeof *s->gimage)) != NULL;
    for (int k = 0; k < 3; k++)
        ok &= (s->gx[k] = prox_alloc_array(s->al, room, sizeof(double))) != NULL;
    if (!ok)
        return false;
    cell_gather g = {0, 0};
    for (; g.bin < bins; g.bin++) {
        s->gstart[g.bin] = g.at;
        visit_runs(s, g.bin, gather_run, &g);
    }
    s->gstart[bins] = g.at;
    s->gathered = true;
    return true;
}

static void gather_free(cell_search *s)
{
    prox_free(s->al, s->gstart);
    prox_free(s->al, s->gslot);
    prox_free(s->al, s->gimage);
    for (int k = 0; k < 3; k++)
        prox_free(s->al, s->gx[k]);
    s->gstart = NULL;
    s->gslot = NULL;
    s->gimage = NULL;
    s->gx[0] = s->gx[1] = s->gx[2] = NULL;
    s->gathered = false;
}

/* A row's entry: its sort key and its hit. */
typedef struct cell_key {
    uint64_t key; /* (j, S) packed in lexicographic order */
    const cell_hit *hit;
} cell_key;

static int compare_keys(const void *pa, const void *pb)
{
    const cell_key *a = pa, *b = pb;
    return a->key < b->key ? -1 : a->key > b->key;
}

static int compare_hits(const void *pa, const void *pb)
{
    const cell_hit *a = ((const cell_key *)pa)->hit, *b = ((const cell_key *)pb)->hit;
    if (a->j != b->j)
        return a->j < b->j ? -1 : 1;
    for (int k = 0; k < 3; k++)
        if (a->S[k] != b->S[k])
            return a->S[k] < b->S[k] ? -1 : 1;
    return 0;
}

/* Sorts a row's entries by (j, S): by their packed keys when the search is
 * keyed, else by comparison of the hits. Insertion sort for short rows. */
static void sort_row(cell_key *keys, int64_t n, bool keyed)
{
    if (!keyed || n > 48) {
        qsort(keys, (size_t)n, sizeof *keys, keyed ? compare_keys : compare_hits);
        return;
    }
    for (int64_t h = 1; h < n; h++) {
        cell_key v = keys[h];
        int64_t at = h;
        for (; at > 0 && keys[at - 1].key > v.key; at--)
            keys[at] = keys[at - 1];
        keys[at] = v;
    }
}

/* Hit x as pair p of an output holding every array, in 3D (ASE's
 * "ijdDS"). */
static inline void write_all(prox_geometry *restrict g, int64_t p, const cell_hit *restrict x)
{
    g->i[p] = x->i;
    g->j[p] = x->j;
    g->d[p] = sqrt(x->d2);
    double *D = g->D + 3 * p;
    int32_t *S = g->S + 3 * p;
    D[0] = x->D[0];
    D[1] = x->D[1];
    D[2] = x->D[2];
    S[0] = x->S[0];
    S[1] = x->S[1];
    S[2] = x->S[2];
}

/* Hit x as pair p of the output. */
static void part_write(prox_geometry *g, int64_t p, const cell_hit *x)
{
    int dim = g->dim;
    if (g->fields == PROX_GEOMETRY_ALL && dim == 3) {
        write_all(g, p, x);
        return;
    }
    if (g->i)
        g->i[p] = x->i;
    if (g->j)
        g->j[p] = x->j;
    if (g->d)
        g->d[p] = sqrt(x->d2);
    if (g->D)
        for (int k = 0; k < dim; k++)
            g->D[p * dim + k] = x->D[k];
    if (g->S)
        for (int k = 0; k < dim; k++)
            g->S[p * dim + k] = x->S[k];
}

/* The half stencil of slots [begin, end) (bin order: neighbouring points
 * read neighbouring bins), the hits in the chunk's list. */
static void run_chunk(const cell_search *s, int64_t begin, int64_t end, cell_chunk *ch)
{
    /* room for the expected hits, a quarter more, so that the list rarely grows */
    double expect = s->hits_per_point * 1.25 * (double)(end - begin) + 64;
    if (s->store && s->hits_per_point > 0 &&
        !prox_reserve(s->al, (void **)&ch->hits, &ch->capacity,
                      (int64_t)(expect < 0x1p22 ? expect : 0x1p22), sizeof *ch->hits)) {
        ch->status = PROX_ERR_NO_MEMORY;
        return;
    }
    for (int64_t si = begin; si < end; si++)
        if (!visit_point(s, si, ch)) {
            ch->status = PROX_ERR_NO_MEMORY;
            return;
        }
}

/* The bucket of hit x: its row, or with `pairs` buckets of n its (i, j). */
static inline int64_t bucket_of(const cell_hit *x, int64_t n, bool pairs)
{
    return pairs ? (int64_t)x->i * n + x->j : (int64_t)x->i;
}

/* The chunks' hits as the output, in point order, each row sorted by
 * (j, S): the hits bucketed (a counting sort of their entries) by row, or
 * by (i, j) when there are few points for the pairs (n * n within 8
 * entries a pair: small cells, where a row holds many images), then each
 * bucket sorted and written at its place. Rows hold unique (j, S), so the
 * output does not depend on the order the hits were found in. */
static prox_status place_rows(const cell_search *s, cell_chunk *ch, int64_t chunks,
                              int64_t total, int threads, prox_geometry *out)
{
    int64_t n = s->count;
    bool pairs = (double)n * (double)n <= 2 * (double)total;
    int64_t buckets = pairs ? n * n : n;
    int64_t *start = prox_alloc_array(s->al, buckets + 1, sizeof *start);
    cell_key *keys = prox_alloc_array(s->al, total, sizeof *keys);
    prox_status st = start && keys ? prox_geometry_alloc(out, total, s->frame.dim)
                                   : prox_fail(PROX_ERR_NO_MEMORY,
                                               "cell: no memory to order %lld pairs",
                                               (long long)total);
    if (!st) {
        memset(start, 0, (size_t)(buckets + 1) * sizeof *start);
        for (int64_t k = 0; k < chunks; k++)
            for (int64_t h = 0; h < ch[k].count; h++)
                start[bucket_of(&ch[k].hits[h], n, pairs) + 1]++;
        for (int64_t a = 0; a < buckets; a++)
            start[a + 1] += start[a];
        for (int64_t k = 0; k < chunks; k++)
            for (int64_t h = 0; h < ch[k].count; h++) {
                const cell_hit *x = &ch[k].hits[h];
                keys[start[bucket_of(x, n, pairs)]++] = (cell_key){x->key, x};
            }
        for (int64_t a = buckets; a > 0; a--)
            start[a] = start[a - 1];
        start[0] = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (chunks > 1)
        for (int64_t k = 0; k < chunks; k++)
            for (int64_t a = buckets * k / chunks; a < buckets * (k + 1) / chunks; a++)
                if (start[a + 1] - start[a] > 1)
                    sort_row(keys + start[a], start[a + 1] - start[a], s->keyed);
#pragma omp parallel for schedule(static) num_threads(threads) if (chunks > 1)
        for (int64_t p = 0; p < total; p++)
            part_write(out, p, keys[p].hit);
    }
    prox_free(s->al, start);
    prox_free(s->al, keys);
    return st;
}

/* Small cells (cell_search.keyed, one chunk, the pairs outnumbering the
 * points and the span of a row's shift part, key_stride[0]): the hits
 * ordered by three stable counting sorts, least significant digit first:
 * the shift part of the key (key - j * key_stride[0]), then j, then i, the
 * last one writing the output in place. The order is (i, key), the same
 * as place_rows' row sort. */
static bool radix_serves(const cell_search *s, int64_t chunks, int64_t total)
{
    double span = (double)s->key_stride[0];
    return s->keyed && chunks == 1 && total < (int64_t)UINT32_MAX && span <= 4096 &&
           (double)total >= (double)s->count + span;
}

/* The counters and the two orders of place_radix live in the chunk's
 * list past its hits (grown when it lacks the room): no allocation of
 * their own, so that a call's heap stays the same shape as the search
 * left it. */
static prox_status place_radix(const cell_search *s, cell_chunk *ch, int64_t total,
                               prox_geometry *out)
{
    int64_t n = s->count, span = (int64_t)s->key_stride[0];
    uint64_t stride = s->key_stride[0];
    size_t bytes = (size_t)(span + 2 * n + 3) * sizeof(int64_t) + (size_t)(2 * total) * 4;
    int64_t more = (int64_t)((bytes + sizeof(cell_hit) - 1) / sizeof(cell_hit));
    prox_status st = hits_room(ch, s, more) ? prox_geometry_alloc(out, total, s->frame.dim)
                                            : prox_fail(PROX_ERR_NO_MEMORY,
                                                        "cell: no memory to order %lld pairs",
                                                        (long long)total);
    int64_t *cs = (int64_t *)(void *)(ch->hits + ch->count);
    uint32_t *order = (uint32_t *)(void *)(cs + span + 2 * n + 3);
    if (!st) {
        int64_t *cj = cs + span + 1, *ci = cj + n + 1;
        uint32_t *by_shift = order, *by_j = order + total;
        const cell_hit *h = ch->hits;
        memset(cs, 0, (size_t)(span + 2 * n + 3) * sizeof *cs);
        for (int64_t p = 0; p < total; p++) {
            cs[h[p].key - (uint64_t)h[p].j * stride + 1]++;
            cj[h[p].j + 1]++;
            ci[h[p].i + 1]++;
        }
        for (int64_t a = 0; a < span; a++)
            cs[a + 1] += cs[a];
        for (int64_t a = 0; a < n; a++) {
            cj[a + 1] += cj[a];
            ci[a + 1] += ci[a];
        }
        for (int64_t p = 0; p < total; p++)
            by_shift[cs[h[p].key - (uint64_t)h[p].j * stride]++] = (uint32_t)p;
        for (int64_t q = 0; q < total; q++) {
            uint32_t p = by_shift[q];
            by_j[cj[h[p].j]++] = p;
        }
        if (out->fields == PROX_GEOMETRY_ALL && out->dim == 3)
            for (int64_t q = 0; q < total; q++) {
                const cell_hit *x = &h[by_j[q]];
                write_all(out, ci[x->i]++, x);
            }
        else
            for (int64_t q = 0; q < total; q++) {
                const cell_hit *x = &h[by_j[q]];
                part_write(out, ci[x->i]++, x);
            }
    }
    return st;
}

static int64_t chunk_count_for(int64_t n, int threads)
{
    if (threads <= 1 || n < 256)
        return 1;
    int64_t chunks = (int64_t)threads * PROX_PARTS_PER_THREAD;
    return chunks < n / 64 ? chunks : (n / 64 > 0 ? n / 64 : 1);
}

/* Runs the half stencil in chunks and places the hits into `out` (NULL:
 * count). */
static prox_status search_rows(cell_search *s, int threads, prox_geometry *out, prox_stats *st)
{
    int64_t chunks = chunk_count_for(s->count, threads);
    cell_chunk *ch = prox_alloc_array(s->al, chunks, sizeof *ch);
    if (!ch)
        return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld chunks", (long long)chunks);
    memset(ch, 0, (size_t)chunks * sizeof *ch);
    int64_t n = s->count;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (chunks > 1)
    for (int64_t k = 0; k < chunks; k++)
        run_chunk(s, n * k / chunks, n * (k + 1) / chunks, &ch[k]);
    prox_status status = PROX_OK;
    int64_t total = 0, candidates = 0;
    for (int64_t k = 0; k < chunks; k++) {
        if (ch[k].status && !status)
            status = prox_fail(ch[k].status, "cell: no memory for the pairs");
        total += ch[k].pairs;
        candidates += ch[k].candidates;
    }
    /* the search's arrays released before the output is allocated, so that
     * the output may take their memory: a call's heap peaks lower, and a
     * caller that frees everything between calls finds it warm */
    gather_free(s);
    points_free(&s->pts, s->al);
    memset(&s->pts, 0, sizeof s->pts);
    if (!status && out)
        status = radix_serves(s, chunks, total) ? place_radix(s, ch, total, out)
                                                 : place_rows(s, ch, chunks, total, threads, out);
    if (st) {
        st->pairs = total;
        st->candidates = candidates;
    }
    for (int64_t k = 0; k < chunks; k++) {
        prox_free(s->al, ch[k].hits);
        prox_free(s->al, ch[k].slots);
    }
    prox_free(s->al, ch);
    return status;
}

/* The screen's radius: the rule's, widened by the rounding of the wrapped
 * coordinates and of the bin shifts (each a few ulps of the largest
 * coordinate or shifted cell), so that it never drops a pair of the rule. */
static double screen_radius(const cell_search *s, const prox_cell_extent *e)
{
    double rows = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            rows += fabs(s->frame.m[r][k]);
    double reach = 0;
    for (int k = 0; k < 3; k++)
        reach = fmax(reach, (double)s->bins.n[k] / (double)s->bins.nb[k] + 2);
    double err = 16 * DBL_EPSILON * (e->xmax + (e->fbig + reach + 1) * rows);
    return sqrt(s->r2) * (1 + 0x1p-40) + 4 * err;
}

/* The span of the shifts a row may hold (cell_search.key_range): bin
 * images from the stencil, wraps from the points. */
static void plan_keys(cell_search *s)
{
    double span = (double)(s->count > 0 ? s->count : 1);
    for (int k = 0; k < 3; k++) {
        int64_t wlo = 0, whi = 0;
        for (int64_t t = 0; t < s->count; t++) {
            wlo = s->pts.w[k][t] < wlo ? s->pts.w[k][t] : wlo;
            whi = s->pts.w[k][t] > whi ? s->pts.w[k][t] : whi;
        }
        int64_t nb = s->bins.nb[k], n = s->bins.n[k];
        bool periodic = s->frame.pbc[k];
        s->image_lo[k] = periodic ? -((n + nb - 1) / nb) : 0;
        int64_t image_hi = periodic ? (nb - 1 + n) / nb : 0;
        s->w_max[k] = whi;
        s->key_range[k] = (image_hi - s->image_lo[k]) + (whi - wlo) + 1;
        span *= (double)s->key_range[k];
    }
    s->keyed = span < 0x1p62;
    /* key = j * stride[0] + sum_k (S[k] - lo[k]) * stride[k + 1] with lo[k] =
     * image_lo[k] + w_i[k] - w_max[k], in arithmetic modulo 2^64 (exact
     * when keyed); the lo part per slot */
    s->key_stride[3] = 1;
    for (int k = 2; k >= 0; k--)
        s->key_stride[k] = s->key_stride[k + 1] * (uint64_t)s->key_range[k];
    for (int64_t t = 0; t < s->count; t++) {
        uint64_t lo = 0;
        for (int k = 0; k < 3; k++)
            lo += (uint64_t)(s->image_lo[k] + s->pts.w[k][t] - s->w_max[k]) * s->key_stride[k + 1];
        s->pts.key_lo[t] = lo;
    }
}

/* The hits a point adds in a cell periodic along every axis of its
 * dimension: the points in the ball of the cutoff at the cell's density,
 * half of them for a half list (0 with an open axis: unknown). */
static double expected_hits(const cell_search *s)
{
    const double(*m)[3] = (const double(*)[3])s->frame.m;
    const double pi = 3.14159265358979323846;
    double r = sqrt(s->r2), volume, ball;
    for (int k = 0; k < s->frame.dim; k++)
        if (!s->frame.pbc[k])
            return 0;
    if (s->frame.dim == 2) {
        volume = fabs(m[0][0] * m[1][1] - m[0][1] * m[1][0]);
        ball = pi * r * r;
    } else {
        volume = fabs(m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                      m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                      m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]));
        ball = 4 * pi / 3 * r * r * r;
    }
    double hits = (double)s->count / volume * ball * (s->full ? 1 : 0.5);
    return isfinite(hits) ? hits : 0;
}

static prox_status cell_run(const prox_points *points, const prox_cell_desc *desc,
                            prox_geometry *out, prox_stats *stats)
{
    cell_search s;
    memset(&s, 0, sizeof s);
    prox_allocator al = prox_allocator_resolve(&desc->allocator);
    s.al = &al;
    prox_status st = prox_cell_frame_make(desc, points->dim, &s.frame);
    prox_cell_extent e;
    if (!st)
        st = prox_cell_measure(points, &s.frame, &e);
    if (!st)
        st = prox_cell_bins_plan(&s.frame, desc->cutoff, points->count, e.fmin, e.fmax,
                                 prox_cell_fraction_error(&s.frame, &e), &s.bins);
    if (st)
        return st;
    s.count = points->count;
    s.r2 = desc->cutoff * desc->cutoff;
    s.full = desc->full;
    s.self_interaction = desc->self_interaction;
    s.store = out != NULL;
    double screen = screen_radius(&s, &e);
    s.screen2 = screen * screen;
    s.hits_per_point = expected_hits(&s);
    int32_t *wraps = prox_alloc_array(&al, 3 * s.count, sizeof *wraps);
    if (!points_alloc(&s.pts, s.count, s.bins.total, &al) || !wraps) {
        points_free(&s.pts, &al);
        prox_free(&al, wraps);
        return prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory for %lld points in %lld bins",
                         (long long)s.count, (long long)s.bins.total);
    }
    sort_points(&s, points, wraps);
    prox_free(&al, wraps);
    plan_keys(&s);
    if (!gather_stencils(&s))
        st = prox_fail(PROX_ERR_NO_MEMORY, "cell: no memory to gather the stencils of %lld bins",
                       (long long)s.bins.total);
    else
        st = search_rows(&s, prox_threads_resolve(desc->threads), out, stats);
    gather_free(&s);
    if (stats) {
        stats->cells = s.bins.total;
        stats->method = "cell.bins";
    }
    points_free(&s.pts, &al);
    return st;
}

prox_status prox_cell_pairs(const prox_points *points, const prox_cell_desc *desc,
                            prox_geometry *out, prox_stats *stats)
{
    prox_status st = prox_simd_check();
    if (st)
        return st;
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!desc)
        return prox_fail(PROX_ERR_INVALID, "prox_cell_pairs: options are NULL; start from "
                                           "prox_default_cell_desc()");
    if (!points)
        return prox_fail(PROX_ERR_INVALID, "prox_cell_pairs: points are NULL");
    if (out)
        prox_geometry_release(out);
    st = check_desc(desc);
    if (!st)
        st = prox_points_check(points, "points");
    prox_cell_frame frame;
    if (!st)
        st = prox_cell_frame_make(desc, points->dim, &frame);
    bool served = false;
    if (!st) /* a few points: every pair and its images (cell_direct.c) */
        st = prox_cell_direct_pairs(points, desc, &frame, out, stats, &served);
    if (!st && !served) /* large cells: the grid with the halo (cell_halo.c) */
        st = prox_cell_halo_pairs(points, desc, &frame, out, stats, &served);
    if (!st && !served)
        st = cell_run(points, desc, out, stats);
    return st;
}

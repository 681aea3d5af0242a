/* dist_partition.c: one half-open region per rank, by recursive coordinate
 * bisection (RCB) balanced by counts, or from the caller's boxes.
 *
 * RCB splits the ranks [r0, r1) of a node into halves of floor and ceil,
 * and its points along the longest axis of their global bounding box at a
 * cut leaving about (r1 - r0) / 2 shares below it. The cut is found by a
 * few rounds of global histograms (RCB_BINS bins each, every node of a
 * level in one allreduce), so that a level costs a fixed number of
 * collectives whatever the data; the balance is within about one bin of
 * the last round. Every rank computes the same tree from the same reduced
 * figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist_private.h"

enum { RCB_BINS = 256, RCB_ROUNDS = 4 };

static prox_status part_init(dist_part *p, prox_partition kind, int size, int dim,
                             const double period[3])
{
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->size = size;
    p->dim = dim;
    memcpy(p->period, period, sizeof p->period);
    p->lo = malloc(3 * (size_t)size * sizeof *p->lo);
    p->hi = malloc(3 * (size_t)size * sizeof *p->hi);
    p->nodes = kind == PROX_PARTITION_RCB ? malloc(2 * (size_t)size * sizeof *p->nodes) : NULL;
    if (!p->lo || !p->hi || (kind == PROX_PARTITION_RCB && !p->nodes)) {
        part_free(p);
        return dist_fail(PROX_ERR_NO_MEMORY, "partition: out of memory");
    }
    return PROX_OK;
}

void part_free(dist_part *p)
{
    free(p->lo);
    free(p->hi);
    free(p->nodes);
    memset(p, 0, sizeof *p);
}

prox_status part_boxes(dist_part *p, int size, int dim, const double *boxes,
                       const double period[3])
{
    if (!boxes)
        return dist_fail(PROX_ERR_INVALID, "partition: PROX_PARTITION_BOXES without desc.boxes");
    for (int r = 0; r < size; r++)
        for (int k = 0; k < dim; k++) {
            double lo = boxes[6 * r + k], hi = boxes[6 * r + 3 + k];
            if (isnan(lo) || isnan(hi) || lo > hi)
                return dist_fail(PROX_ERR_INVALID,
                                 "partition: rank %d's box has lo %g > hi %g (or NaN) on axis %c",
                                 r, lo, hi, "xyz"[k]);
        }
    prox_status st = part_init(p, PROX_PARTITION_BOXES, size, dim, period);
    if (st != PROX_OK)
        return st;
    for (int r = 0; r < size; r++)
        for (int k = 0; k < 3; k++) {
            p->lo[3 * r + k] = k < dim ? boxes[6 * r + k] : -INFINITY;
            p->hi[3 * r + k] = k < dim ? boxes[6 * r + 3 + k] : INFINITY;
        }
    return PROX_OK;
}

/* ---- RCB ----------------------------------------------------------------- */

typedef struct rcb_state {
    dist_part *p;
    int *r0, *r1;       /* per node: its ranks */
    double *lo, *hi;    /* per node: its region, 3 each */
    int *task;          /* per node: index among this level's splits, -1 */
} rcb_state;

static int new_node(rcb_state *s, int r0, int r1, const double *lo, const double *hi)
{
    int n = s->p->node_count++;
    s->p->nodes[n] = (rcb_node){ .axis = -1, .rank = r0, .left = -1, .right = -1 };
    s->r0[n] = r0;
    s->r1[n] = r1;
    memcpy(s->lo + 3 * n, lo, 3 * sizeof *lo);
    memcpy(s->hi + 3 * n, hi, 3 * sizeof *hi);
    return n;
}

/* A cut for a node without points: anywhere in its region. */
static double empty_cut(double lo, double hi)
{
    if (isfinite(lo) && isfinite(hi))
        return 0.5 * lo + 0.5 * hi;
    return isfinite(lo) ? lo : isfinite(hi) ? hi : 0.0;
}

typedef struct rcb_split {
    int node, axis;
    int64_t total, below, target;
    double a, b; /* the interval still searched */
} rcb_split;

static int bin_of(double x, double a, double b)
{
    if (!(b > a))
        return 0;
    double t = (x - a) / (b - a) * RCB_BINS;
    return t < 0 ? 0 : t >= RCB_BINS ? RCB_BINS - 1 : (int)t;
}

/* Narrow each split's interval to the bin where the target count falls. */
static prox_status histogram_round(dist_comm *c, const double *pos, const int *where, int64_t n,
                                   int dim, rcb_state *s, rcb_split *sp, int k)
{
    int64_t *h = calloc((size_t)k * RCB_BINS, sizeof *h);
    int64_t *g = malloc((size_t)k * RCB_BINS * sizeof *g);
    prox_status st = dist_agree(c, h && g ? PROX_OK
                                          : dist_fail(PROX_ERR_NO_MEMORY, "RCB: out of memory"));
    if (st != PROX_OK) {
        free(h);
        free(g);
        return st;
    }
    for (int64_t i = 0; i < n; i++) {
        int t = s->task[where[i]];
        if (t < 0)
            continue;
        double x = pos[i * dim + sp[t].axis];
        if (x >= sp[t].a && x <= sp[t].b)
            h[(size_t)t * RCB_BINS + bin_of(x, sp[t].a, sp[t].b)]++;
    }
    double t0 = MPI_Wtime();
    MPI_Allreduce(h, g, k * RCB_BINS, MPI_INT64_T, MPI_SUM, c->comm);
    c->stats.exchange_s += MPI_Wtime() - t0;
    for (int t = 0; t < k; t++) {
        const int64_t *bins = g + (size_t)t * RCB_BINS;
        double a = sp[t].a, w = (sp[t].b - sp[t].a) / RCB_BINS;
        int64_t cum = sp[t].below;
        int bin = 0;
        while (bin < RCB_BINS - 1 && cum + bins[bin] <= sp[t].target)
            cum += bins[bin++];
        sp[t].below = cum;
        if (sp[t].b > sp[t].a) {
            sp[t].a = a + bin * w;
            sp[t].b = bin == RCB_BINS - 1 ? sp[t].b : a + (bin + 1) * w;
        }
    }
    free(h);
    free(g);
    return PROX_OK;
}

/* Bounding boxes and counts of the points of each split node. */
static prox_status split_bounds(dist_comm *c, const double *pos, const int *where, int64_t n,
                                int dim, rcb_state *s, rcb_split *sp, int k)
{
    double *mm = malloc(6 * (size_t)k * sizeof *mm), *gm = malloc(6 * (size_t)k * sizeof *gm);
    int64_t *cnt = calloc((size_t)k, sizeof *cnt), *gc = malloc((size_t)k * sizeof *gc);
    prox_status st = dist_agree(c, mm && gm && cnt && gc
                                       ? PROX_OK
                                       : dist_fail(PROX_ERR_NO_MEMORY, "RCB: out of memory"));
    if (st == PROX_OK) {
        for (int i = 0; i < 6 * k; i++)
            mm[i] = INFINITY; /* min and -max */
        for (int64_t i = 0; i < n; i++) {
            int t = s->task[where[i]];
            if (t < 0)
                continue;
            cnt[t]++;
            for (int a = 0; a < dim; a++) {
                double x = pos[i * dim + a];
                mm[6 * t + a] = fmin(mm[6 * t + a], x);
                mm[6 * t + 3 + a] = fmin(mm[6 * t + 3 + a], -x);
            }
        }
        double t0 = MPI_Wtime();
        MPI_Allreduce(mm, gm, 6 * k, MPI_DOUBLE, MPI_MIN, c->comm);
        MPI_Allreduce(cnt, gc, k, MPI_INT64_T, MPI_SUM, c->comm);
        c->stats.exchange_s += MPI_Wtime() - t0;
        for (int t = 0; t < k; t++) {
            int node = sp[t].node, axis = 0;
            double best = -1;
            for (int a = 0; a < dim; a++) {
                double ext = -gm[6 * t + 3 + a] - gm[6 * t + a];
                if (ext > best) {
                    best = ext;
                    axis = a;
                }
            }
            int ranks = s->r1[node] - s->r0[node];
            sp[t].axis = axis;
            sp[t].total = gc[t];
            sp[t].below = 0;
            sp[t].target = (int64_t)((double)gc[t] * (ranks / 2) / ranks + 0.5);
            sp[t].a = gc[t] ? gm[6 * t + axis] : 0;
            sp[t].b = gc[t] ? -gm[6 * t + 3 + axis] : 0;
        }
    }
    free(mm);
    free(gm);
    free(cnt);
    free(gc);
    return st;
}

/* Make the children of each split node and send its points down. */
static void apply_splits(const double *pos, int *where, int64_t n, int dim, rcb_state *s,
                         const rcb_split *sp, int k)
{
    for (int t = 0; t < k; t++) {
        int node = sp[t].node, axis = sp[t].axis;
        int r0 = s->r0[node], r1 = s->r1[node], mid = r0 + (r1 - r0) / 2;
        double lo[3], hi[3];
        double cut = sp[t].total ? sp[t].a
                                 : empty_cut(s->lo[3 * node + axis], s->hi[3 * node + axis]);
        memcpy(lo, s->lo + 3 * node, sizeof lo);
        memcpy(hi, s->hi + 3 * node, sizeof hi);
        hi[axis] = cut;
        int left = new_node(s, r0, mid, lo, hi);
        memcpy(hi, s->hi + 3 * node, sizeof hi);
        lo[axis] = cut;
        int right = new_node(s, mid, r1, lo, hi);
        s->p->nodes[node] = (rcb_node){ axis, -1, cut, left, right };
    }
    for (int64_t i = 0; i < n; i++) {
        int node = where[i], t = s->task[node];
        if (t < 0)
            continue;
        const rcb_node *nd = &s->p->nodes[node];
        where[i] = pos[i * dim + nd->axis] < nd->cut ? nd->left : nd->right;
    }
}

prox_status part_rcb(dist_part *p, dist_comm *c, const double *pos, int64_t n, int dim,
                     const double period[3])
{
    prox_status st = dist_agree(c, part_init(p, PROX_PARTITION_RCB, c->size, dim, period));
    if (st != PROX_OK)
        return st;
    int cap = 2 * c->size;
    rcb_state s = { p, malloc((size_t)cap * sizeof(int)), malloc((size_t)cap * sizeof(int)),
                    malloc(3 * (size_t)cap * sizeof(double)),
                    malloc(3 * (size_t)cap * sizeof(double)), malloc((size_t)cap * sizeof(int)) };
    int *where = calloc((size_t)n + 1, sizeof *where);
    rcb_split *sp = malloc((size_t)c->size * sizeof *sp);
    st = dist_agree(c, s.r0 && s.r1 && s.lo && s.hi && s.task && where && sp
                           ? PROX_OK
                           : dist_fail(PROX_ERR_NO_MEMORY, "RCB: out of memory"));
    if (st == PROX_OK) {
        double lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            bool periodic = k < dim && period[k] > 0;
            lo[k] = periodic ? 0 : -INFINITY;
            hi[k] = periodic ? period[k] : INFINITY;
        }
        new_node(&s, 0, c->size, lo, hi);
    }
    for (int first = 0; st == PROX_OK;) {
        int last = p->node_count, k = 0;
        for (int node = 0; node < last; node++) {
            bool splits = node >= first && s.r1[node] - s.r0[node] > 1;
            s.task[node] = splits ? k : -1;
            if (splits)
                sp[k++].node = node;
        }
        if (k == 0)
            break;
        st = split_bounds(c, pos, where, n, dim, &s, sp, k);
        for (int round = 0; st == PROX_OK && round < RCB_ROUNDS; round++)
            st = histogram_round(c, pos, where, n, dim, &s, sp, k);
        if (st == PROX_OK)
            apply_splits(pos, where, n, dim, &s, sp, k);
        first = last;
    }
    for (int node = 0; st == PROX_OK && node < p->node_count; node++)
        if (p->nodes[node].axis < 0) {
            int r = p->nodes[node].rank;
            memcpy(p->lo + 3 * r, s.lo + 3 * node, 3 * sizeof(double));
            memcpy(p->hi + 3 * r, s.hi + 3 * node, 3 * sizeof(double));
        }
    free(s.r0);
    free(s.r1);
    free(s.lo);
    free(s.hi);
    free(s.task);
    free(where);
    free(sp);
    if (st != PROX_OK)
        part_free(p);
    return st;
}

/* ---- lookups ------------------------------------------------------------- */

static bool holds(const dist_part *p, int r, const double *x)
{
    for (int k = 0; k < p->dim; k++)
        if (!(x[k] >= p->lo[3 * r + k] && x[k] < p->hi[3 * r + k]))
            return false;
    return true;
}

int part_owner(const dist_part *p, const double *x)
{
    if (p->kind == PROX_PARTITION_BOXES) {
        for (int r = 0; r < p->size; r++)
            if (holds(p, r, x))
                return r;
        return -1;
    }
    int node = 0;
    while (p->nodes[node].axis >= 0)
        node = x[p->nodes[node].axis] < p->nodes[node].cut ? p->nodes[node].left
                                                           : p->nodes[node].right;
    return p->nodes[node].rank;
}

static int overlapping_nodes(const dist_part *p, int node, const double *lo, const double *hi,
                             int *out, int count)
{
    const rcb_node *nd = &p->nodes[node];
    if (nd->axis < 0) {
        out[count] = nd->rank;
        return count + 1;
    }
    if (lo[nd->axis] < nd->cut)
        count = overlapping_nodes(p, nd->left, lo, hi, out, count);
    if (hi[nd->axis] >= nd->cut)
        count = overlapping_nodes(p, nd->right, lo, hi, out, count);
    return count;
}

int part_overlapping(const dist_part *p, const double *lo, const double *hi, int *out)
{
    if (p->kind == PROX_PARTITION_RCB)
        return overlapping_nodes(p, 0, lo, hi, out, 0);
    int count = 0;
    for (int r = 0; r < p->size; r++) {
        bool meets = true;
        for (int k = 0; k < p->dim; k++)
            meets = meets && lo[k] < p->hi[3 * r + k] && hi[k] >= p->lo[3 * r + k];
        if (meets)
            out[count++] = r;
    }
    return count;
}

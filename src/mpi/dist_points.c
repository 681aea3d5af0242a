/* dist_points.c: distributed neighbour search (prox_dist, include/prox/mpi.h).
 *
 * Each rank keeps its owned points, then its ghosts, in one local numbering.
 * Pairs come from two single-machine calls on open axes: prox_pairs over
 * the owned points, and prox_query of the owned points near the ghosts
 * against the ghosts. Owned points are searched at their wrapped positions,
 * the very coordinates the serial grid uses, so their own pairs need no
 * second look. Periodic axes become images: a ghost carries its owner's
 * position shifted by whole periods, plus the wrapped position; the ghost
 * query runs with a radius a few rounding errors wider and each of its
 * pairs is decided again by the serial grid's exact test (src/exact.h:
 * wrapped coordinates, minimum image), so the shifted copies never change
 * which pairs are reported. A rank spanning a whole period holds images of
 * its own points: an image pair counts only when the direct pair, found by
 * the owned search, does not. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist_private.h"

struct prox_dist {
    dist_comm c;
    prox_dist_desc desc;
    double *boxes;            /* the caller's partition, copied */
    double radius, halo, skin;
    double period[3];
    bool periodic;
    int dim;                  /* 0 until the first partition */
    dist_part part;
    bool partitioned;
    /* the last migrate_count's plan */
    int *dest;
    int64_t planned, incoming;
    /* built state: owned then ghosts */
    bool built;
    int64_t owned, ghosts;    /* ghosts: received, then copies of crossed points */
    int64_t ghosts_recv;      /* ghosts received from the exchange */
    double *pos;              /* search positions, dim per point */
    double *wpos;             /* periodic: wrapped positions (the exact test) */
    double *origin;           /* owned: positions at the build (refresh's displacements) */
    double *cpos;             /* periodic, owned: a continuous path from the build's wrapped
                                 position (the images sent stay images as points cross) */
    int64_t *self_of;         /* periodic, per ghost: the owned point it images, or -1 */
    int64_t *ids;
    int64_t capacity;         /* points pos, wpos and ids have room for */
    /* the halo: per destination rank, owned points and their image shifts */
    int64_t *send_count, *recv_count; /* entries per rank */
    int64_t *send_idx;
    signed char *send_shift;  /* 3 per entry: -1, 0, +1 periods */
    int64_t send_entries;
};

prox_dist_desc prox_default_dist_desc(void)
{
    prox_dist_desc d;
    memset(&d, 0, sizeof d);
    d.grid = prox_default_grid_desc();
    d.broad = prox_default_broad_desc();
    d.partition = PROX_PARTITION_RCB;
    return d;
}

/* ---- setup ----------------------------------------------------------- */

static prox_status check_desc(const prox_dist_desc *desc, double *halo)
{
    double r = desc->grid.radius, skin = desc->skin;
    if (!(r > 0) || !isfinite(r))
        return dist_fail(PROX_ERR_INVALID, "radius must be > 0 and finite, not %g", r);
    if (!(skin >= 0) || !isfinite(skin))
        return dist_fail(PROX_ERR_INVALID, "skin must be >= 0 and finite, not %g", skin);
    /* r + skin rounds: a halo equal to it within rounding is that halo */
    *halo = desc->halo == 0 ? r + skin : fmax(desc->halo, r + skin);
    if (!(desc->halo == 0 || desc->halo >= (r + skin) * (1 - 0x1p-40)) || !isfinite(*halo))
        return dist_fail(PROX_ERR_INVALID,
                         "halo %g is narrower than radius + skin = %g: pairs would be missed",
                         desc->halo, r + skin);
    for (int k = 0; k < 3; k++) {
        double L = desc->grid.period[k];
        if (L < 0 || !isfinite(L))
            return dist_fail(PROX_ERR_INVALID, "period %c must be >= 0 and finite", "xyz"[k]);
        if (L > 0 && !(*halo * (1 + 0x1p-40) < 0.5 * L))
            return dist_fail(PROX_ERR_INVALID,
                             "halo %g (radius + skin or more) must stay below half the period "
                             "along %c (%g)",
                             *halo, "xyz"[k], L);
    }
    if (desc->partition != PROX_PARTITION_RCB && desc->partition != PROX_PARTITION_BOXES)
        return dist_fail(PROX_ERR_INVALID, "unknown partition %d", (int)desc->partition);
    if (desc->partition == PROX_PARTITION_BOXES && !desc->boxes)
        return dist_fail(PROX_ERR_INVALID, "PROX_PARTITION_BOXES needs desc.boxes");
    return PROX_OK;
}

prox_status prox_dist_create(MPI_Comm comm, const prox_dist_desc *desc, prox_dist **out)
{
    *out = NULL;
    prox_dist *d = calloc(1, sizeof *d);
    if (!d)
        return dist_fail(PROX_ERR_NO_MEMORY, "prox_dist_create: out of memory");
    prox_status st = dist_comm_init(&d->c, comm);
    if (st != PROX_OK) {
        dist_comm_free(&d->c);
        free(d);
        return st;
    }
    d->desc = *desc;
    st = check_desc(desc, &d->halo);
    d->radius = desc->grid.radius;
    d->skin = desc->skin;
    for (int k = 0; k < 3; k++) {
        d->period[k] = desc->grid.period[k];
        d->periodic = d->periodic || d->period[k] > 0;
    }
    int p = d->c.size;
    d->send_count = calloc((size_t)p, sizeof *d->send_count);
    d->recv_count = calloc((size_t)p, sizeof *d->recv_count);
    if (st == PROX_OK && desc->partition == PROX_PARTITION_BOXES) {
        d->boxes = malloc(6 * (size_t)p * sizeof *d->boxes);
        if (d->boxes)
            memcpy(d->boxes, desc->boxes, 6 * (size_t)p * sizeof *d->boxes);
        d->desc.boxes = d->boxes;
    }
    if (st == PROX_OK && (!d->send_count || !d->recv_count ||
                          (desc->partition == PROX_PARTITION_BOXES && !d->boxes)))
        st = dist_fail(PROX_ERR_NO_MEMORY, "prox_dist_create: out of memory");
    st = dist_agree(&d->c, st);
    if (st != PROX_OK) {
        prox_dist_destroy(d);
        return st;
    }
    *out = d;
    return PROX_OK;
}

static void free_built(prox_dist *d)
{
    free(d->pos);
    free(d->wpos);
    free(d->origin);
    free(d->cpos);
    free(d->self_of);
    d->cpos = NULL;
    d->self_of = NULL;
    free(d->ids);
    free(d->send_idx);
    free(d->send_shift);
    d->pos = d->wpos = d->origin = NULL;
    d->ids = d->send_idx = NULL;
    d->send_shift = NULL;
    d->owned = d->ghosts = d->ghosts_recv = d->send_entries = d->capacity = 0;
    d->built = false;
}

void prox_dist_destroy(prox_dist *d)
{
    if (!d)
        return;
    free_built(d);
    part_free(&d->part);
    free(d->dest);
    free(d->boxes);
    free(d->send_count);
    free(d->recv_count);
    dist_comm_free(&d->c);
    free(d);
}

/* ---- points in ----------------------------------------------------------- */

/* Collective: the views agree on dim (2, 3) and scalar over all ranks. */
static prox_status check_shape(prox_dist *d, const prox_points *pts, const char *what)
{
    prox_status st = PROX_OK;
    if (!pts || (pts->dim != 2 && pts->dim != 3) || pts->count < 0 ||
        pts->count > PROX_MAX_POINTS)
        st = dist_fail(PROX_ERR_INVALID, "%s: points need dim 2 or 3 and 0 .. 2^32-1 points",
                       what);
    else if (d->dim && pts->dim != d->dim)
        st = dist_fail(PROX_ERR_INVALID, "%s: %dD points, the object holds %dD ones", what,
                       pts->dim, d->dim);
    else if (pts->dim == 2 && d->period[2] > 0)
        st = dist_fail(PROX_ERR_INVALID, "%s: period z set for 2D points", what);
    double shape[2] = { pts ? pts->dim * 2 + (int)pts->scalar : 0,
                        pts ? -(pts->dim * 2 + (int)pts->scalar) : 0 };
    st = dist_agree_max(&d->c, st, shape, 2);
    if (st != PROX_OK)
        return st;
    if (shape[0] != -shape[1])
        return dist_fail(PROX_ERR_INVALID, "%s: ranks pass points of different dim or scalar",
                         what);
    d->dim = pts->dim;
    return PROX_OK;
}

/* A NaN or infinite coordinate: PROX_ERR_DATA naming the point. */
static prox_status bad_coordinate(const prox_points *pts, const char *what)
{
    for (int64_t i = 0; i < pts->count; i++)
        for (int k = 0; k < pts->dim; k++) {
            double x = prox_points_get(pts, i, k);
            if (!isfinite(x))
                return dist_fail(PROX_ERR_DATA, "%s: point %lld has a %s coordinate %c", what,
                                 (long long)i, isnan(x) ? "NaN" : "infinite", "xyz"[k]);
        }
    return PROX_OK;
}

/* Wrapped positions of the caller's points (dim doubles each); a NaN or
 * infinite coordinate is PROX_ERR_DATA naming the point. Not collective. */
static prox_status wrapped_positions_room(const prox_dist *d, const prox_points *pts,
                                          int64_t room, double **out, const char *what)
{
    int dim = pts->dim;
    double *w = malloc(((size_t)room * (size_t)dim + 1) * sizeof *w);
    *out = w;
    if (!w)
        return dist_fail(PROX_ERR_NO_MEMORY, "%s: out of memory", what);
    /* x * 0 is 0 for finite x, NaN otherwise: one sum checks them all */
    double sum = 0;
    if (pts->scalar == PROX_F64) {
        for (int64_t i = 0; i < pts->count; i++)
            for (int k = 0; k < dim; k++) {
                double x = *(const double *)(const void *)((const char *)pts->axis[k] +
                                                           i * pts->stride);
                w[i * dim + k] = x;
                sum += x * 0;
            }
    } else {
        for (int64_t i = 0; i < pts->count; i++)
            for (int k = 0; k < dim; k++) {
                double x = *(const float *)(const void *)((const char *)pts->axis[k] +
                                                          i * pts->stride);
                w[i * dim + k] = x;
                sum += x * 0;
            }
    }
    bool finite = sum == 0;
    for (int k = 0; finite && d->periodic && k < dim; k++)
        for (int64_t i = 0; d->period[k] > 0 && i < pts->count; i++)
            w[i * dim + k] = dist_wrap(w[i * dim + k], d->period[k]);
    return finite ? PROX_OK : bad_coordinate(pts, what);
}

static prox_status wrapped_positions(const prox_dist *d, const prox_points *pts, double **out,
                                     const char *what)
{
    return wrapped_positions_room(d, pts, pts->count, out, what);
}

prox_status prox_dist_partition(prox_dist *d, const prox_points *local)
{
    double t0 = MPI_Wtime();
    prox_status st = check_shape(d, local, "partition");
    if (st != PROX_OK)
        return st;
    double *w = NULL;
    st = dist_agree(&d->c, wrapped_positions(d, local, &w, "partition"));
    if (st == PROX_OK) {
        part_free(&d->part);
        d->partitioned = false;
        double ex = d->c.stats.exchange_s;
        if (d->desc.partition == PROX_PARTITION_RCB)
            st = part_rcb(&d->part, &d->c, w, local->count, d->dim, d->period);
        else
            st = dist_agree(&d->c, part_boxes(&d->part, d->c.size, d->dim, d->boxes, d->period));
        d->partitioned = st == PROX_OK;
        d->c.stats.compute_s += MPI_Wtime() - t0 - (d->c.stats.exchange_s - ex);
    }
    free(w);
    return st;
}

void prox_dist_region(const prox_dist *d, int rank, double lo[3], double hi[3])
{
    for (int k = 0; k < 3; k++) {
        lo[k] = d->partitioned ? d->part.lo[3 * rank + k] : -INFINITY;
        hi[k] = d->partitioned ? d->part.hi[3 * rank + k] : INFINITY;
    }
}

/* ---- migration ----------------------------------------------------------- */

prox_status prox_dist_migrate_count(prox_dist *d, const prox_points *local, int64_t *incoming)
{
    *incoming = 0;
    if (dist_agree(&d->c, d->partitioned ? PROX_OK
                                          : dist_fail(PROX_ERR_INVALID,
                                                      "migrate: no partition yet")) != PROX_OK)
        return dist_agree(&d->c, PROX_ERR_INVALID);
    prox_status st = check_shape(d, local, "migrate");
    if (st != PROX_OK)
        return st;
    double t0 = MPI_Wtime();
    double *w = NULL;
    free(d->dest);
    d->dest = malloc(((size_t)local->count + 1) * sizeof *d->dest);
    int64_t *counts = calloc((size_t)d->c.size, sizeof *counts);
    int64_t *in = calloc((size_t)d->c.size, sizeof *in);
    st = wrapped_positions(d, local, &w, "migrate");
    if (st == PROX_OK && (!d->dest || !counts || !in))
        st = dist_fail(PROX_ERR_NO_MEMORY, "migrate: out of memory");
    for (int64_t i = 0; st == PROX_OK && i < local->count; i++) {
        int r = part_owner(&d->part, w + i * d->dim);
        if (r < 0)
            st = dist_fail(PROX_ERR_DATA, "migrate: point %lld lies in no rank's box",
                           (long long)i);
        else
            counts[r]++;
        d->dest[i] = r;
    }
    d->c.stats.compute_s += MPI_Wtime() - t0;
    st = dist_agree(&d->c, st);
    if (st == PROX_OK) {
        t0 = MPI_Wtime();
        MPI_Alltoall(counts, 1, MPI_INT64_T, in, 1, MPI_INT64_T, d->c.comm);
        d->c.stats.exchange_s += MPI_Wtime() - t0;
        for (int r = 0; r < d->c.size; r++)
            *incoming += in[r];
        d->planned = local->count;
        d->incoming = *incoming;
    } else {
        d->planned = -1;
    }
    free(w);
    free(counts);
    free(in);
    return st;
}

prox_status prox_dist_migrate(prox_dist *d, const prox_points *local, const int64_t *ids,
                              const void *payload, size_t payload_size, void *out_coords,
                              int64_t *out_ids, void *out_payload)
{
    prox_status st = PROX_OK;
    if (!d->dest || d->planned != local->count)
        st = dist_fail(PROX_ERR_INVALID, "migrate: call prox_dist_migrate_count first with "
                                         "the same points");
    else if ((local->count > 0 && !ids) || (payload_size > 0 && local->count > 0 && !payload))
        st = dist_fail(PROX_ERR_INVALID, "migrate: ids (and payload) are required");
    st = dist_agree(&d->c, st);
    if (st != PROX_OK)
        return st;
    unsigned long long sizes[2] = { payload_size, ~(unsigned long long)payload_size }, all[2];
    MPI_Allreduce(sizes, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, d->c.comm);
    if (all[0] != ~all[1])
        return dist_fail(PROX_ERR_INVALID, "migrate: ranks pass different payload sizes");
    double t0 = MPI_Wtime();
    int p = d->c.size, dim = d->dim;
    size_t scalar = local->scalar == PROX_F64 ? 8 : 4, coords = (size_t)dim * scalar;
    size_t rec = 8 + coords + payload_size;
    int64_t *bytes = calloc((size_t)p, sizeof *bytes), *at = calloc((size_t)p + 1, sizeof *at);
    char *send = malloc((size_t)local->count * rec + 1);
    st = dist_agree(&d->c, bytes && at && send ? PROX_OK
                                               : dist_fail(PROX_ERR_NO_MEMORY,
                                                           "migrate: out of memory"));
    dist_recv in = { 0 };
    if (st == PROX_OK) {
        for (int64_t i = 0; i < local->count; i++)
            bytes[d->dest[i]] += (int64_t)rec;
        for (int r = 0; r < p; r++)
            at[r + 1] = at[r] + bytes[r];
        for (int64_t i = 0; i < local->count; i++) {
            char *o = send + at[d->dest[i]];
            at[d->dest[i]] += (int64_t)rec;
            memcpy(o, ids + i, 8);
            for (int k = 0; k < dim; k++)
                memcpy(o + 8 + (size_t)k * scalar,
                       (const char *)local->axis[k] + i * local->stride, scalar);
            if (payload_size)
                memcpy(o + 8 + coords, (const char *)payload + (size_t)i * payload_size,
                       payload_size);
        }
        d->c.stats.compute_s += MPI_Wtime() - t0;
        st = dist_alltoallv(&d->c, bytes, send, &in);
    }
    if (st == PROX_OK) {
        t0 = MPI_Wtime();
        int64_t n = in.displ[p] / (int64_t)rec;
        for (int64_t i = 0; i < n; i++) {
            const char *o = in.data + (size_t)i * rec;
            memcpy(out_ids + i, o, 8);
            memcpy((char *)out_coords + (size_t)i * coords, o + 8, coords);
            if (payload_size)
                memcpy((char *)out_payload + (size_t)i * payload_size, o + 8 + coords,
                       payload_size);
        }
        d->c.stats.compute_s += MPI_Wtime() - t0;
        d->c.stats.migrations++;
    }
    dist_recv_free(&in);
    free(bytes);
    free(at);
    free(send);
    free(d->dest);
    d->dest = NULL;
    d->planned = -1;
    return st;
}

/* ---- the halo ------------------------------------------------------------ */

typedef struct halo_entry {
    int rank;
    signed char shift[3];
    int64_t idx;
} halo_entry;

typedef struct halo_list {
    halo_entry *e;
    int64_t count, capacity;
} halo_list;

static bool halo_push(halo_list *h, halo_entry e)
{
    if (h->count == h->capacity) {
        int64_t cap = h->capacity ? 2 * h->capacity : 1024;
        halo_entry *n = realloc(h->e, (size_t)cap * sizeof *n);
        if (!n)
            return false;
        h->e = n;
        h->capacity = cap;
    }
    h->e[h->count++] = e;
    return true;
}

/* Squared distance from x to rank r's region (0 inside). */
static double region_gap2(const dist_part *p, int r, const double *x)
{
    double s = 0;
    for (int k = 0; k < p->dim; k++) {
        double g = fmax(fmax(p->lo[3 * r + k] - x[k], x[k] - p->hi[3 * r + k]), 0);
        s += g * g;
    }
    return s;
}

/* The ranks (and images) that get owned point i as a ghost. */
static bool halo_of_point(prox_dist *d, int64_t i, double h, int *ranks, halo_list *out)
{
    const double *w = d->pos + i * d->dim; /* at the build: the wrapped positions */
    int dim = d->dim, me = d->c.rank;
    const double *lo = d->part.lo + 3 * me, *hi = d->part.hi + 3 * me;
    bool inside = true; /* the ball of radius h stays in this region and period */
    for (int k = 0; k < dim; k++)
        inside = inside && w[k] - h >= lo[k] && w[k] + h < hi[k] &&
                 (d->period[k] == 0 || (w[k] - h >= 0 && w[k] + h < d->period[k]));
    if (inside)
        return true;
    int lo_s[3] = { 0, 0, 0 }, hi_s[3] = { 0, 0, 0 };
    for (int k = 0; k < dim; k++)
        if (d->period[k] > 0) {
            lo_s[k] = w[k] >= d->period[k] - h ? -1 : 0;
            hi_s[k] = w[k] < h ? 1 : 0;
        }
    double q[3], qlo[3], qhi[3];
    for (int sx = lo_s[0]; sx <= hi_s[0]; sx++)
        for (int sy = lo_s[1]; sy <= hi_s[1]; sy++)
            for (int sz = lo_s[2]; sz <= hi_s[2]; sz++) {
                int s[3] = { sx, sy, sz };
                for (int k = 0; k < dim; k++) {
                    q[k] = w[k] + s[k] * d->period[k];
                    qlo[k] = q[k] - h;
                    qhi[k] = q[k] + h;
                }
                int n = part_overlapping(&d->part, qlo, qhi, ranks);
                bool image = sx || sy || sz;
                for (int j = 0; j < n; j++) {
                    if ((ranks[j] == me && !image) || region_gap2(&d->part, ranks[j], q) > h * h)
                        continue;
                    halo_entry e = { ranks[j], { (signed char)sx, (signed char)sy,
                                                 (signed char)sz }, i };
                    if (!halo_push(out, e))
                        return false;
                }
            }
    return true;
}

/* Bytes of one ghost: id, search position, wrapped position (periodic). */
static size_t ghost_bytes(const prox_dist *d, bool with_id)
{
    return (with_id ? 8 : 0) + (size_t)d->dim * 8 * (d->periodic ? 2 : 1);
}

/* Pack the send list's points (current positions) in rank order. */
static void pack_ghosts(const prox_dist *d, char *out, bool with_id)
{
    size_t rec = ghost_bytes(d, with_id);
    int dim = d->dim;
    for (int64_t e = 0; e < d->send_entries; e++) {
        int64_t i = d->send_idx[e];
        char *o = out + (size_t)e * rec;
        if (with_id) {
            memcpy(o, d->ids + i, 8);
            o += 8;
        }
        const double *from = d->periodic ? d->cpos : d->pos;
        double x[3];
        for (int k = 0; k < dim; k++)
            x[k] = from[i * dim + k] + d->send_shift[3 * e + k] * d->period[k];
        memcpy(o, x, (size_t)dim * 8);
        if (d->periodic)
            memcpy(o + (size_t)dim * 8, d->wpos + i * dim, (size_t)dim * 8);
    }
}

static void unpack_ghosts(prox_dist *d, const char *in, bool with_id)
{
    size_t rec = ghost_bytes(d, with_id);
    int dim = d->dim;
    for (int64_t g = 0; g < d->ghosts_recv; g++) {
        const char *o = in + (size_t)g * rec;
        int64_t i = d->owned + g;
        if (with_id) {
            memcpy(d->ids + i, o, 8);
            o += 8;
        }
        memcpy(d->pos + i * dim, o, (size_t)dim * 8);
        if (d->periodic)
            memcpy(d->wpos + i * dim, o + (size_t)dim * 8, (size_t)dim * 8);
    }
}

/* The send lists from the owned points' positions at the build. */
static prox_status make_halo(prox_dist *d)
{
    double h = d->halo * (1 + 0x1p-30); /* a superset: extra ghosts change nothing */
    int *ranks = malloc((size_t)d->c.size * sizeof *ranks);
    halo_list list = { 0 };
    bool ok = ranks != NULL;
    for (int64_t i = 0; ok && i < d->owned; i++)
        ok = halo_of_point(d, i, h, ranks, &list);
    free(ranks);
    if (!ok) {
        free(list.e);
        return dist_fail(PROX_ERR_NO_MEMORY, "build: out of memory (halo)");
    }
    int64_t *order_count = d->send_count;
    memset(order_count, 0, (size_t)d->c.size * sizeof *order_count);
    for (int64_t e = 0; e < list.count; e++)
        order_count[list.e[e].rank]++;
    d->send_entries = list.count;
    d->send_idx = malloc(((size_t)list.count + 1) * sizeof *d->send_idx);
    d->send_shift = malloc(3 * ((size_t)list.count + 1));
    int64_t *at = calloc((size_t)d->c.size + 1, sizeof *at);
    if (!d->send_idx || !d->send_shift || !at) {
        free(list.e);
        free(at);
        return dist_fail(PROX_ERR_NO_MEMORY, "build: out of memory (halo)");
    }
    for (int r = 0; r < d->c.size; r++)
        at[r + 1] = at[r] + order_count[r];
    for (int64_t e = 0; e < list.count; e++) { /* a stable counting sort by rank */
        int64_t o = at[list.e[e].rank]++;
        d->send_idx[o] = list.e[e].idx;
        memcpy(d->send_shift + 3 * o, list.e[e].shift, 3);
    }
    free(at);
    free(list.e);
    return PROX_OK;
}

/* Ghosts this rank sent itself (images of its own points, in its send
 * list's order): which owned point each one images. */
static prox_status find_self_images(prox_dist *d, int64_t ghosts)
{
    free(d->self_of);
    d->self_of = malloc(((size_t)ghosts + 1) * sizeof *d->self_of);
    if (!d->self_of)
        return dist_fail(PROX_ERR_NO_MEMORY, "halo: out of memory");
    int64_t first_in = 0, first_out = 0;
    for (int r = 0; r < d->c.rank; r++) {
        first_in += d->recv_count[r];
        first_out += d->send_count[r];
    }
    for (int64_t g = 0; g < ghosts; g++)
        d->self_of[g] = -1;
    for (int64_t k = 0; k < d->recv_count[d->c.rank]; k++)
        d->self_of[first_in + k] = d->send_idx[first_out + k];
    return PROX_OK;
}

/* Owned points that crossed a periodic face since the build are searched
 * at their wrapped position, far from the neighbours they left behind:
 * each gets a copy at its continuous position among the ghosts, an image
 * of its own (self_of), like the images a rank spanning a period holds. */
static prox_status add_crossed_copies(prox_dist *d)
{
    int dim = d->dim;
    int64_t crossed = 0;
    for (int64_t i = 0; i < d->owned; i++)
        for (int k = 0; k < dim; k++)
            if (d->cpos[i * dim + k] != d->pos[i * dim + k]) {
                crossed++;
                break;
            }
    int64_t n = d->owned + d->ghosts_recv + crossed;
    if (n > d->capacity) {
        size_t room = (size_t)n + (size_t)n / 8 + 1;
        double *pos = realloc(d->pos, room * (size_t)dim * sizeof *pos);
        if (pos)
            d->pos = pos;
        double *wpos = realloc(d->wpos, room * (size_t)dim * sizeof *wpos);
        if (wpos)
            d->wpos = wpos;
        int64_t *ids = realloc(d->ids, room * sizeof *ids);
        if (ids)
            d->ids = ids;
        if (!pos || !wpos || !ids)
            return dist_fail(PROX_ERR_NO_MEMORY, "refresh: out of memory");
        d->capacity = (int64_t)room;
    }
    int64_t *self_of = realloc(d->self_of, ((size_t)(n - d->owned) + 1) * sizeof *self_of);
    if (!self_of)
        return dist_fail(PROX_ERR_NO_MEMORY, "refresh: out of memory");
    d->self_of = self_of;
    int64_t g = d->owned + d->ghosts_recv;
    for (int64_t i = 0; i < d->owned; i++) {
        bool moved_off = false;
        for (int k = 0; k < dim; k++)
            moved_off = moved_off || d->cpos[i * dim + k] != d->pos[i * dim + k];
        if (!moved_off)
            continue;
        memcpy(d->pos + g * dim, d->cpos + i * dim, (size_t)dim * sizeof *d->pos);
        memcpy(d->wpos + g * dim, d->pos + i * dim, (size_t)dim * sizeof *d->pos);
        d->ids[g] = d->ids[i];
        d->self_of[g - d->owned] = i;
        g++;
    }
    d->ghosts = d->ghosts_recv + crossed;
    return PROX_OK;
}

/* Collective: send every rank its ghosts; d->ghosts, ids, positions. */
static prox_status exchange_ghosts(prox_dist *d, bool with_id)
{
    int p = d->c.size;
    size_t rec = ghost_bytes(d, with_id);
    int64_t *bytes = malloc((size_t)p * sizeof *bytes);
    char *send = malloc((size_t)d->send_entries * rec + 1);
    prox_status st = bytes && send ? PROX_OK : dist_fail(PROX_ERR_NO_MEMORY, "halo: out of memory");
    if (st == PROX_OK) {
        for (int r = 0; r < p; r++)
            bytes[r] = d->send_count[r] * (int64_t)rec;
        double t0 = MPI_Wtime();
        pack_ghosts(d, send, with_id);
        d->c.stats.compute_s += MPI_Wtime() - t0;
    }
    dist_recv in = { 0 };
    st = dist_agree(&d->c, st);
    if (st == PROX_OK)
        st = dist_alltoallv(&d->c, bytes, send, &in);
    free(bytes);
    free(send);
    if (st != PROX_OK)
        return st;
    int64_t ghosts = in.displ[p] / (int64_t)rec;
    if (with_id && d->owned + ghosts > d->capacity) {
        int dim = d->dim;
        size_t n = (size_t)(d->owned + ghosts) + 1;
        double *pos = realloc(d->pos, n * (size_t)dim * sizeof *pos);
        if (pos)
            d->pos = pos;
        double *wpos = d->periodic ? realloc(d->wpos, n * (size_t)dim * sizeof *wpos) : NULL;
        if (wpos)
            d->wpos = wpos;
        int64_t *ids = realloc(d->ids, n * sizeof *ids);
        if (ids)
            d->ids = ids;
        if (!pos || !ids || (d->periodic && !wpos))
            st = dist_fail(PROX_ERR_NO_MEMORY, "halo: out of memory");
        else
            d->capacity = (int64_t)n;
    }
    if (with_id) {
        if (d->owned + ghosts > PROX_MAX_POINTS)
            st = dist_fail(PROX_ERR_RANGE, "halo: over 2^32-1 owned and ghost points");
        for (int r = 0; r < p; r++)
            d->recv_count[r] = in.bytes[r] / (int64_t)rec;
    } else if (ghosts != d->ghosts_recv) {
        st = dist_fail(PROX_ERR_INVALID, "refresh: %lld ghosts arrived, %lld expected",
                       (long long)ghosts, (long long)d->ghosts_recv);
    }
    if (st == PROX_OK && with_id && d->periodic)
        st = find_self_images(d, ghosts);
    st = dist_agree(&d->c, st);
    if (st == PROX_OK) {
        d->ghosts = d->ghosts_recv = ghosts;
        unpack_ghosts(d, in.data, with_id);
        if (d->periodic)
            st = add_crossed_copies(d);
    }
    dist_recv_free(&in);
    return dist_agree(&d->c, st);
}

/* ---- build --------------------------------------------------------------- */

/* The owned points' wrapped positions become the search positions; the
 * positions at the build (for refresh's displacements) are copied from
 * them at the first refresh. */
static prox_status copy_owned(prox_dist *d, const prox_points *owned, const int64_t *ids)
{
    int dim = d->dim;
    /* room for the ghosts to come (about a surface's worth); unused room
     * is never touched, so it costs address space, not memory */
    d->capacity = owned->count + owned->count / 4 + 1024;
    size_t n = (size_t)d->capacity;
    if (owned->count > 0 && !ids)
        return dist_fail(PROX_ERR_INVALID, "build: ids are required");
    prox_status st = wrapped_positions_room(d, owned, d->capacity, &d->pos, "build");
    d->wpos = d->periodic ? malloc(n * (size_t)dim * sizeof *d->wpos) : NULL;
    d->ids = malloc(n * sizeof *d->ids);
    if (st == PROX_OK && (!d->ids || (d->periodic && !d->wpos)))
        st = dist_fail(PROX_ERR_NO_MEMORY, "build: out of memory");
    for (int64_t i = 0; st == PROX_OK && i < owned->count; i++) {
        int r = part_owner(&d->part, d->pos + i * dim);
        if (r != d->c.rank)
            st = dist_fail(PROX_ERR_INVALID,
                           "build: point %lld (id %lld) lies in rank %d's region, not in "
                           "this rank's (%d): migrate first",
                           (long long)i, (long long)ids[i], r, d->c.rank);
    }
    d->cpos = d->periodic ? malloc(n * (size_t)dim * sizeof *d->cpos) : NULL;
    if (st == PROX_OK && d->periodic && !d->cpos)
        st = dist_fail(PROX_ERR_NO_MEMORY, "build: out of memory");
    if (st == PROX_OK) {
        d->owned = owned->count;
        if (d->periodic) {
            memcpy(d->wpos, d->pos, (size_t)owned->count * (size_t)dim * sizeof *d->pos);
            memcpy(d->cpos, d->pos, (size_t)owned->count * (size_t)dim * sizeof *d->pos);
        }
        if (owned->count)
            memcpy(d->ids, ids, (size_t)owned->count * sizeof *ids);
    }
    return st;
}

prox_status prox_dist_build(prox_dist *d, const prox_points *owned, const int64_t *ids)
{
    prox_status st = dist_agree(&d->c, d->partitioned
                                           ? PROX_OK
                                           : dist_fail(PROX_ERR_INVALID, "build: no partition"));
    if (st != PROX_OK)
        return st;
    if ((st = check_shape(d, owned, "build")) != PROX_OK)
        return st;
    double t0 = MPI_Wtime();
    free_built(d);
    st = copy_owned(d, owned, ids);
    if (st == PROX_OK)
        st = make_halo(d);
    d->c.stats.compute_s += MPI_Wtime() - t0;
    st = dist_agree(&d->c, st);
    if (st == PROX_OK)
        st = exchange_ghosts(d, true);
    if (st != PROX_OK) {
        free_built(d);
        return st;
    }
    d->built = true;
    return PROX_OK;
}

int64_t prox_dist_owned(const prox_dist *d)
{
    return d->owned;
}

int64_t prox_dist_ghosts(const prox_dist *d)
{
    return d->ghosts;
}

const int64_t *prox_dist_ids(const prox_dist *d)
{
    return d->ids;
}

/* ---- moving points ------------------------------------------------------- */

prox_status prox_dist_refresh(prox_dist *d, const prox_points *owned, bool *must_migrate)
{
    *must_migrate = false;
    prox_status st = PROX_OK;
    if (!d->built)
        st = dist_fail(PROX_ERR_INVALID, "refresh: nothing built");
    else if (owned->count != d->owned)
        st = dist_fail(PROX_ERR_INVALID, "refresh: %lld points, %lld were built (same points, "
                                         "same order)",
                       (long long)owned->count, (long long)d->owned);
    if ((st = dist_agree(&d->c, st)) != PROX_OK)
        return st;
    if ((st = check_shape(d, owned, "refresh")) != PROX_OK)
        return st;
    double t0 = MPI_Wtime();
    double *w = NULL;
    int dim = d->dim;
    if (!d->origin) { /* the first refresh since the build: pos holds the build's positions */
        d->origin = malloc(((size_t)d->owned + 1) * (size_t)dim * sizeof *d->origin);
        if (d->origin)
            memcpy(d->origin, d->pos, (size_t)d->owned * (size_t)dim * sizeof *d->pos);
    }
    /* (with periodic axes, pos is wrapped at every refresh and the
     * build's positions stay in origin) */
    st = d->origin ? wrapped_positions(d, owned, &w, "refresh")
                   : dist_fail(PROX_ERR_NO_MEMORY, "refresh: out of memory");
    double moved2 = 0; /* the largest squared displacement since the build */
    for (int64_t i = 0; st == PROX_OK && i < d->owned; i++) {
        double s = 0;
        for (int k = 0; k < dim; k++) {
            double dx = w[i * dim + k] - d->origin[i * dim + k];
            if (d->period[k] > 0)
                dx = dx > 0.5 * d->period[k] ? dx - d->period[k]
                     : dx < -0.5 * d->period[k] ? dx + d->period[k] : dx;
            s += dx * dx;
        }
        moved2 = fmax(moved2, s);
    }
    d->c.stats.compute_s += MPI_Wtime() - t0;
    st = dist_agree_max(&d->c, st, &moved2, 1);
    if (st == PROX_OK) {
        double half = 0.5 * d->skin;
        *must_migrate = moved2 > half * half;
    }
    if (st == PROX_OK && !*must_migrate) {
        /* searched at the wrapped coordinates; images sent from a
         * continuous path from the build's position, so they stay images */
        for (int64_t i = 0; i < d->owned; i++)
            for (int k = 0; k < dim; k++) {
                double x = w[i * dim + k], L = d->period[k];
                d->pos[i * dim + k] = x;
                if (d->periodic)
                    d->wpos[i * dim + k] = x;
                if (L > 0) {
                    double o = d->origin[i * dim + k], dx = x - o;
                    dx = dx > 0.5 * L ? dx - L : dx < -0.5 * L ? dx + L : dx;
                    d->cpos[i * dim + k] = o + dx;
                } else if (d->periodic) {
                    d->cpos[i * dim + k] = x;
                }
            }
        st = exchange_ghosts(d, false);
        if (st == PROX_OK)
            d->c.stats.refreshes++;
    }
    free(w);
    return st;
}

/* ---- pairs --------------------------------------------------------------- */

/* The exact test of the serial grid on wrapped coordinates. */
static bool exact_pair(const prox_dist *d, int64_t i, int64_t j)
{
    const double *a = d->wpos + i * d->dim, *b = d->wpos + j * d->dim;
    double dd[3] = { 0, 0, 0 };
    for (int k = 0; k < d->dim; k++) {
        double x = a[k] - b[k], L = d->period[k];
        if (L > 0) {
            double half = 0.5 * L;
            x = x > half ? x - L : x < -half ? x + L : x;
        }
        dd[k] = x;
    }
    return dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2] <= d->radius * d->radius;
}

/* An owned point i and a ghost j on a periodic domain: the serial test,
 * and for an image of an owned point, only when the owned search does not
 * find the direct pair. */
static bool image_pair(const prox_dist *d, int64_t i, int64_t j)
{
    if (!exact_pair(d, i, j))
        return false;
    int64_t b = d->self_of[j - d->owned];
    if (b < 0)
        return true;
    const double *x = d->pos + i * d->dim, *y = d->pos + b * d->dim;
    double dd[3] = { 0, 0, 0 };
    for (int k = 0; k < d->dim; k++)
        dd[k] = x[k] - y[k];
    return !(dd[0] * dd[0] + dd[1] * dd[1] + dd[2] * dd[2] <= d->radius * d->radius);
}

/* Radius of the local searches: periodic images shift positions by whole
 * periods, rounded, so the search looks a few rounding errors further and
 * exact_pair decides. */
static double search_radius(const prox_dist *d)
{
    if (!d->periodic)
        return d->radius;
    double span = 0;
    for (int k = 0; k < 3; k++)
        span = fmax(span, d->period[k]);
    return d->radius * (1 + 0x1p-40) + 16 * (span + d->halo) * DBL_EPSILON;
}

/* The local searches' desc: open axes; the ghost query's radius widened
 * on periodic domains, the owned search's exact. */
static prox_grid_desc local_desc(const prox_dist *d, bool ghosts)
{
    prox_grid_desc g = d->desc.grid;
    g.radius = ghosts ? search_radius(d) : d->radius;
    g.period[0] = g.period[1] = g.period[2] = 0;
    g.allocator = (prox_allocator){ 0 };
    return g;
}

static void add_stats(prox_stats *to, const prox_stats *s)
{
    to->candidates += s->candidates;
    to->cells += s->cells;
    to->cells_visited += s->cells_visited;
    to->rechecked += s->rechecked;
    to->bytes = to->bytes > s->bytes ? to->bytes : s->bytes;
    to->keys = s->keys;
    to->coords = s->coords;
}

/* Owned points near the ghosts, as packed positions, and their indices. */
static prox_status boundary_points(const prox_dist *d, double reach, double **xyz, int64_t **idx,
                                   int64_t *count)
{
    int dim = d->dim;
    double lo[3] = { INFINITY, INFINITY, INFINITY }, hi[3] = { -INFINITY, -INFINITY, -INFINITY };
    for (int64_t g = d->owned; g < d->owned + d->ghosts; g++)
        for (int k = 0; k < dim; k++) {
            lo[k] = fmin(lo[k], d->pos[g * dim + k]);
            hi[k] = fmax(hi[k], d->pos[g * dim + k]);
        }
    *count = 0;
    int64_t crossed = d->ghosts - d->ghosts_recv, room = d->owned + crossed + 1;
    *xyz = malloc((size_t)room * (size_t)dim * sizeof **xyz);
    *idx = malloc((size_t)room * sizeof **idx);
    if (!*xyz || !*idx)
        return dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
    /* the owned points, then those that crossed a periodic face again at
     * their continuous positions (their copies among the ghosts) */
    for (int64_t q = 0; q < d->owned + crossed; q++) {
        int64_t i = q < d->owned ? q : d->self_of[d->ghosts_recv + q - d->owned];
        int64_t at = q < d->owned ? q : d->owned + d->ghosts_recv + q - d->owned;
        const double *x = d->pos + at * dim;
        bool near = true;
        for (int k = 0; k < dim; k++)
            near = near && x[k] >= lo[k] - reach && x[k] <= hi[k] + reach;
        if (near) {
            memcpy(*xyz + *count * dim, x, (size_t)dim * sizeof *x);
            (*idx)[(*count)++] = i;
        }
    }
    return PROX_OK;
}

static int compare_index(const void *x, const void *y)
{
    prox_index a = *(const prox_index *)x, b = *(const prox_index *)y;
    return (a > b) - (a < b);
}

/* The caller's lists replaced by offsets and indices (malloc'd, taken). */
static prox_status hand_over_lists(prox_lists *out, int64_t *offsets, prox_index *indices,
                                   int64_t rows, int64_t entries)
{
    prox_allocator alloc = out->allocator;
    prox_lists_free(out);
    prox_lists_init(out, &alloc);
    if (alloc.alloc) { /* the caller frees with its allocator: copy into its memory */
        out->offsets = alloc.alloc(((size_t)rows + 1) * sizeof *offsets, alloc.user);
        out->indices = alloc.alloc(((size_t)entries + 1) * sizeof *indices, alloc.user);
        if (out->offsets)
            memcpy(out->offsets, offsets, ((size_t)rows + 1) * sizeof *offsets);
        if (out->indices)
            memcpy(out->indices, indices, (size_t)entries * sizeof *indices);
        free(offsets);
        free(indices);
    } else {
        out->offsets = offsets;
        out->indices = indices;
    }
    if (!out->offsets || !out->indices) {
        prox_lists_free(out);
        prox_lists_init(out, &alloc);
        return dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
    }
    out->rows = rows;
    out->offsets_capacity = rows + 1;
    out->indices_capacity = entries + 1;
    return PROX_OK;
}

static int compare_pairs(const void *x, const void *y)
{
    const prox_pair *a = x, *b = y;
    if (a->i != b->i)
        return a->i < b->i ? -1 : 1;
    return (a->j > b->j) - (a->j < b->j);
}

static prox_status unique_ghost_pairs(const prox_dist *d, prox_pair_buffer *ghost);

/* The pairs of the owned points with the ghosts, sorted by (i, j), every
 * one of them (the owner rule is the caller's): `ghost` holds those with
 * ghosts of other points; `own` (periodic only) those with images of this
 * rank's own points, as pairs (a, b) of owned points, a < b, each once. */
static prox_status ghost_pairs(prox_dist *d, prox_pair_buffer *ghost, prox_pair_buffer *own,
                               prox_stats *stats)
{
    int dim = d->dim;
    prox_grid_desc g = local_desc(d, true);
    double *sub = NULL;
    int64_t *idx = NULL, n = 0;
    prox_status st = PROX_OK;
    if (d->ghosts > 0 && d->owned > 0)
        st = boundary_points(d, g.radius, &sub, &idx, &n);
    if (st == PROX_OK && n > 0) {
        prox_points ghosts = prox_points_f64(d->pos + d->owned * dim, d->ghosts, dim);
        prox_points queries = prox_points_f64(sub, n, dim);
        prox_stats s = { 0 };
        st = prox_query(&ghosts, &queries, &g, PROX_ALGO_GRID, prox_sink_buffer(ghost), &s);
        if (st != PROX_OK)
            st = dist_fail_core(st, "pairs: the query of the ghosts failed");
        add_stats(stats, &s);
    }
    int64_t kept = 0;
    for (int64_t k = 0; st == PROX_OK && k < ghost->count; k++) {
        int64_t i = idx[ghost->pairs[k].i], j = d->owned + ghost->pairs[k].j;
        int64_t b = d->periodic ? d->self_of[j - d->owned] : -1;
        if (d->periodic && !image_pair(d, i, j))
            continue;
        if (b < 0) {
            ghost->pairs[kept++] = (prox_pair){ (prox_index)i, (prox_index)j };
        } else if (i != b) {
            prox_pair p = i < b ? (prox_pair){ (prox_index)i, (prox_index)b }
                                : (prox_pair){ (prox_index)b, (prox_index)i };
            if (prox_pair_buffer_reserve(own, own->count + 1) != PROX_OK)
                st = dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
            else
                own->pairs[own->count++] = p;
        }
    }
    ghost->count = kept;
    if (st == PROX_OK && d->ghosts > d->ghosts_recv)
        st = unique_ghost_pairs(d, ghost);
    if (st == PROX_OK && own->count > 1) { /* both directions may have been found */
        qsort(own->pairs, (size_t)own->count, sizeof *own->pairs, compare_pairs);
        int64_t u = 1;
        for (int64_t k = 1; k < own->count; k++)
            if (compare_pairs(&own->pairs[k], &own->pairs[u - 1]) != 0)
                own->pairs[u++] = own->pairs[k];
        own->count = u;
    }
    free(sub);
    free(idx);
    return st;
}

typedef struct id_pair {
    prox_pair p;
    int64_t id;
} id_pair;

static int compare_id_pair(const void *x, const void *y)
{
    const id_pair *a = x, *b = y;
    if (a->p.i != b->p.i)
        return a->p.i < b->p.i ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return (a->p.j > b->p.j) - (a->p.j < b->p.j);
}

/* A point that crossed a periodic face is queried from both its positions,
 * a period apart: where the ghost's owner sent two images a period apart
 * too, the same pair comes twice. Keep each (point, ghost id) once, with
 * its lowest ghost index, sorted by (i, j). */
static prox_status unique_ghost_pairs(const prox_dist *d, prox_pair_buffer *ghost)
{
    id_pair *t = malloc(((size_t)ghost->count + 1) * sizeof *t);
    if (!t)
        return dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
    for (int64_t k = 0; k < ghost->count; k++)
        t[k] = (id_pair){ ghost->pairs[k], d->ids[ghost->pairs[k].j] };
    qsort(t, (size_t)ghost->count, sizeof *t, compare_id_pair);
    int64_t n = 0;
    for (int64_t k = 0; k < ghost->count; k++)
        if (k == 0 || t[k].p.i != t[k - 1].p.i || t[k].id != t[k - 1].id)
            ghost->pairs[n++] = t[k].p;
    ghost->count = n;
    free(t);
    qsort(ghost->pairs, (size_t)n, sizeof *ghost->pairs, compare_pairs);
    return PROX_OK;
}

static bool reports(const prox_dist *d, prox_pair p)
{
    return p.j < d->owned || d->ids[p.i] < d->ids[p.j];
}

/* out = a and b merged, both sorted by (i, j). */
static prox_status merge_pairs(const prox_pair_buffer *a, const prox_pair_buffer *b,
                               prox_pair_buffer *out)
{
    if (prox_pair_buffer_reserve(out, a->count + b->count) != PROX_OK)
        return dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
    int64_t x = 0, y = 0, o = 0;
    while (x < a->count || y < b->count) {
        bool take_a = y == b->count ||
                      (x < a->count && compare_pairs(&a->pairs[x], &b->pairs[y]) <= 0);
        out->pairs[o++] = take_a ? a->pairs[x++] : b->pairs[y++];
    }
    out->count = o;
    return PROX_OK;
}

/* The pairs this rank reports, sorted by (i, j); or only their count. */
static prox_status reported_pairs(prox_dist *d, prox_pair_buffer *out, int64_t *count,
                                  prox_stats *stats)
{
    prox_grid_desc g = local_desc(d, false);
    prox_points own = prox_points_f64(d->pos, d->owned, d->dim);
    prox_pair_buffer self, ghost, images, both;
    prox_pair_buffer_init(&self, NULL);
    prox_pair_buffer_init(&ghost, NULL);
    prox_pair_buffer_init(&images, NULL);
    prox_pair_buffer_init(&both, NULL);
    prox_stats s = { 0 };
    bool count_only = out == NULL;
    prox_status st = prox_pairs(&own, &g, PROX_ALGO_GRID,
                                count_only ? prox_sink_count() : prox_sink_buffer(&self), &s);
    if (st != PROX_OK)
        st = dist_fail_core(st, "pairs: the search of the owned points failed");
    add_stats(stats, &s);
    int64_t n_self = count_only ? s.pairs : self.count;
    if (st == PROX_OK)
        st = ghost_pairs(d, &ghost, &images, stats);
    int64_t n_ghost = 0;
    for (int64_t k = 0; st == PROX_OK && k < ghost.count; k++)
        if (reports(d, ghost.pairs[k]))
            ghost.pairs[n_ghost++] = ghost.pairs[k];
    ghost.count = n_ghost;
    *count = n_self + images.count + n_ghost;
    if (st == PROX_OK && out) /* a row's owned neighbours precede its ghosts */
        st = images.count ? merge_pairs(&self, &images, &both) : PROX_OK;
    if (st == PROX_OK && out)
        st = merge_pairs(images.count ? &both : &self, &ghost, out);
    prox_pair_buffer_free(&self);
    prox_pair_buffer_free(&ghost);
    prox_pair_buffer_free(&images);
    prox_pair_buffer_free(&both);
    return st;
}

/* Rows of the owned points from sorted pairs (i, j): j in row i, and i in
 * row j when `both` (pairs of two owned points); each row sorted. */
static prox_status rows_of_pairs(const prox_pair_buffer *pairs, int64_t rows, bool both,
                                 int64_t **offsets, prox_index **entries)
{
    int64_t n = pairs->count * (both ? 2 : 1);
    *offsets = calloc((size_t)rows + 2, sizeof **offsets);
    *entries = malloc(((size_t)n + 1) * sizeof **entries);
    if (!*offsets || !*entries)
        return dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
    int64_t *at = *offsets;
    for (int64_t k = 0; k < pairs->count; k++) {
        at[pairs->pairs[k].i + 1]++;
        if (both)
            at[pairs->pairs[k].j + 1]++;
    }
    for (int64_t r = 0; r < rows; r++)
        at[r + 1] += at[r];
    int64_t *fill = malloc(((size_t)rows + 1) * sizeof *fill);
    if (!fill)
        return dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
    memcpy(fill, at, (size_t)rows * sizeof *fill);
    for (int64_t k = 0; k < pairs->count; k++) { /* sorted pairs: rows come out sorted */
        prox_pair p = pairs->pairs[k];
        (*entries)[fill[p.i]++] = p.j;
    }
    for (int64_t k = 0; both && k < pairs->count; k++) {
        prox_pair p = pairs->pairs[k];
        (*entries)[fill[p.j]++] = p.i;
    }
    free(fill);
    for (int64_t r = 0; both && r < rows; r++) /* the i's went in after the j's */
        qsort(*entries + at[r], (size_t)(at[r + 1] - at[r]), sizeof **entries, compare_index);
    return PROX_OK;
}

/* Full lists of the owned points: owned neighbours (direct or through an
 * image) ascending, then ghost ones. */
static prox_status full_lists(prox_dist *d, prox_lists *out, int64_t *reported,
                              prox_stats *stats)
{
    prox_grid_desc g = local_desc(d, false);
    prox_points own = prox_points_f64(d->pos, d->owned, d->dim);
    prox_lists self;
    prox_lists_init(&self, NULL);
    prox_pair_buffer ghost, images;
    prox_pair_buffer_init(&ghost, NULL);
    prox_pair_buffer_init(&images, NULL);
    int64_t *g_at = NULL, *i_at = NULL;
    prox_index *g_in = NULL, *i_in = NULL;
    prox_stats s = { 0 };
    prox_status st = prox_pairs(&own, &g, PROX_ALGO_GRID, prox_sink_lists(&self), &s);
    if (st != PROX_OK)
        st = dist_fail_core(st, "pairs: the search of the owned points failed");
    add_stats(stats, &s);
    int64_t rows = d->owned;
    if (st == PROX_OK)
        st = ghost_pairs(d, &ghost, &images, stats);
    if (st == PROX_OK)
        st = rows_of_pairs(&ghost, rows, false, &g_at, &g_in);
    if (st == PROX_OK)
        st = rows_of_pairs(&images, rows, true, &i_at, &i_in);
    int64_t entries = st == PROX_OK && rows ? self.offsets[rows] + g_at[rows] + i_at[rows] : 0;
    int64_t *offsets = NULL;
    prox_index *indices = NULL;
    if (st == PROX_OK) {
        offsets = malloc(((size_t)rows + 1) * sizeof *offsets);
        indices = malloc(((size_t)entries + 1) * sizeof *indices);
        if (!offsets || !indices)
            st = dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
    }
    *reported = 0;
    if (st == PROX_OK) {
        int64_t o = 0;
        offsets[0] = 0;
        for (int64_t r = 0; r < rows; r++) {
            int64_t a = self.offsets[r], a_end = self.offsets[r + 1];
            int64_t b = i_at[r], b_end = i_at[r + 1];
            while (a < a_end || b < b_end) /* owned neighbours: direct and by image */
                indices[o++] = b == b_end || (a < a_end && self.indices[a] < i_in[b])
                                   ? self.indices[a++] : i_in[b++];
            for (int64_t k = g_at[r]; k < g_at[r + 1]; k++) {
                indices[o++] = g_in[k];
                *reported += reports(d, (prox_pair){ (prox_index)r, g_in[k] });
            }
            offsets[r + 1] = o;
        }
        *reported += (rows ? self.offsets[rows] : 0) / 2 + images.count;
        st = hand_over_lists(out, offsets, indices, rows, entries);
        offsets = NULL;
        indices = NULL;
    }
    free(offsets);
    free(indices);
    free(g_at);
    free(g_in);
    free(i_at);
    free(i_in);
    prox_lists_free(&self);
    prox_pair_buffer_free(&ghost);
    prox_pair_buffer_free(&images);
    return st;
}

static prox_status check_built(prox_dist *d, const char *what)
{
    return dist_agree(&d->c, d->built ? PROX_OK
                                      : dist_fail(PROX_ERR_INVALID, "%s: nothing built", what));
}

prox_status prox_dist_pairs(prox_dist *d, prox_sink sink, prox_stats *stats)
{
    prox_stats s = { 0 };
    prox_status st = check_built(d, "pairs");
    if (st != PROX_OK)
        return st;
    double t0 = MPI_Wtime();
    int64_t count = 0;
    prox_pair_buffer buf;
    prox_pair_buffer_init(&buf, NULL);
    switch (sink.kind) {
    case PROX_SINK_COUNT:
        st = reported_pairs(d, NULL, &count, &s);
        break;
    case PROX_SINK_LISTS:
        st = full_lists(d, sink.lists, &count, &s);
        break;
    case PROX_SINK_BUFFER:
        st = reported_pairs(d, sink.buffer, &count, &s);
        break;
    case PROX_SINK_CALLBACK:
        st = reported_pairs(d, &buf, &count, &s);
        for (int64_t k = 0; st == PROX_OK && k < buf.count; k++)
            if (sink.fn(buf.pairs[k].i, buf.pairs[k].j, sink.user)) {
                count = k + 1;
                st = PROX_STOPPED;
            }
        break;
    default:
        st = dist_fail(PROX_ERR_INVALID, "pairs: unknown sink kind %d", (int)sink.kind);
    }
    prox_pair_buffer_free(&buf);
    d->c.stats.compute_s += MPI_Wtime() - t0;
    s.pairs = count;
    d->c.stats.pairs = count;
    if (stats)
        *stats = s;
    return dist_agree(&d->c, st);
}

static int compare_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

prox_status prox_dist_pairs_ids(prox_dist *d, prox_id_sink sink, prox_stats *stats)
{
    prox_status st = check_built(d, "pairs");
    if (st != PROX_OK)
        return st;
    if (sink.kind == PROX_SINK_COUNT)
        return prox_dist_pairs(d, prox_sink_count(), stats);
    double t0 = MPI_Wtime();
    prox_stats s = { 0 };
    int64_t count = 0;
    if (sink.kind == PROX_SINK_LISTS) {
        prox_lists lists;
        prox_lists_init(&lists, NULL);
        st = full_lists(d, &lists, &count, &s);
        prox_id_lists *out = sink.lists;
        prox_id_lists_free(out);
        int64_t rows = lists.rows, entries = rows ? lists.offsets[rows] : 0;
        if (st == PROX_OK) {
            out->offsets = malloc(((size_t)rows + 1) * sizeof *out->offsets);
            out->ids = malloc(((size_t)entries + 1) * sizeof *out->ids);
            out->row_ids = malloc(((size_t)rows + 1) * sizeof *out->row_ids);
            if (!out->offsets || !out->ids || !out->row_ids)
                st = dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
        }
        if (st == PROX_OK) {
            out->rows = rows;
            out->offsets[0] = 0;
            for (int64_t r = 0; r < rows; r++) {
                out->row_ids[r] = d->ids[r];
                out->offsets[r + 1] = lists.offsets[r + 1];
                for (int64_t k = lists.offsets[r]; k < lists.offsets[r + 1]; k++)
                    out->ids[k] = d->ids[lists.indices[k]];
                qsort(out->ids + lists.offsets[r], (size_t)(lists.offsets[r + 1] -
                                                            lists.offsets[r]),
                      sizeof *out->ids, compare_i64);
            }
        } else {
            prox_id_lists_free(out);
        }
        prox_lists_free(&lists);
    } else if (sink.kind == PROX_SINK_BUFFER || sink.kind == PROX_SINK_CALLBACK) {
        prox_pair_buffer buf;
        prox_pair_buffer_init(&buf, NULL);
        st = reported_pairs(d, &buf, &count, &s);
        prox_id_pair *ip = st == PROX_OK ? malloc(((size_t)buf.count + 1) * sizeof *ip) : NULL;
        if (st == PROX_OK && !ip)
            st = dist_fail(PROX_ERR_NO_MEMORY, "pairs: out of memory");
        for (int64_t k = 0; st == PROX_OK && k < buf.count; k++) {
            int64_t a = d->ids[buf.pairs[k].i], b = d->ids[buf.pairs[k].j];
            ip[k] = a < b ? (prox_id_pair){ a, b } : (prox_id_pair){ b, a };
        }
        if (st == PROX_OK)
            dist_sort_id_pairs(ip, buf.count);
        if (st == PROX_OK && sink.kind == PROX_SINK_BUFFER) {
            prox_id_pairs_free(sink.buffer);
            sink.buffer->pairs = ip;
            sink.buffer->count = sink.buffer->capacity = buf.count;
            ip = NULL;
        }
        for (int64_t k = 0; st == PROX_OK && ip && k < buf.count; k++)
            if (sink.fn(ip[k].a, ip[k].b, sink.user)) {
                count = k + 1;
                st = PROX_STOPPED;
            }
        free(ip);
        prox_pair_buffer_free(&buf);
    } else {
        st = dist_fail(PROX_ERR_INVALID, "pairs: unknown sink kind %d", (int)sink.kind);
    }
    d->c.stats.compute_s += MPI_Wtime() - t0;
    s.pairs = count;
    d->c.stats.pairs = count;
    if (stats)
        *stats = s;
    return dist_agree(&d->c, st);
}

void prox_dist_get_stats(const prox_dist *d, prox_dist_stats *stats)
{
    *stats = d->c.stats;
    stats->owned = d->owned;
    stats->ghosts = d->ghosts;
}

void prox_dist_reset_stats(prox_dist *d)
{
    memset(&d->c.stats, 0, sizeof d->c.stats);
}

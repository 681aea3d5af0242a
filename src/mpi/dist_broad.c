/* dist_broad.c: the distributed broad phase (prox_dist_broad,
 * include/prox/mpi.h).
 *
 * Every box goes to every rank whose (half-open) region its closed box
 * meets. Two overlapping boxes both contain the lower corner of their
 * intersection, so both are on the rank whose region holds that corner:
 * that rank alone reports the pair. Queries travel the same way and the
 * same corner rule picks the one rank that answers each hit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dist_private.h"

struct prox_dist_broad {
    dist_comm c;
    prox_dist_desc desc;
    double *boxes; /* the caller's partition, copied */
    int dim;
    dist_part part;
    bool built;
    int64_t owned, held;
    double *bounds; /* held boxes: min[dim] then max[dim] each */
    int64_t *ids;
    prox_broad *broad;
};

prox_status prox_dist_broad_create(MPI_Comm comm, const prox_dist_desc *desc,
                                   prox_dist_broad **out)
{
    *out = NULL;
    prox_dist_broad *b = calloc(1, sizeof *b);
    if (!b)
        return dist_fail(PROX_ERR_NO_MEMORY, "prox_dist_broad_create: out of memory");
    prox_status st = dist_comm_init(&b->c, comm);
    if (st != PROX_OK) {
        dist_comm_free(&b->c);
        free(b);
        return st;
    }
    b->desc = *desc;
    for (int k = 0; k < 3; k++)
        if (desc->grid.period[k] != 0)
            st = dist_fail(PROX_ERR_INVALID, "the distributed broad phase has open axes only");
    if (desc->partition == PROX_PARTITION_BOXES) {
        b->boxes = desc->boxes ? malloc(6 * (size_t)b->c.size * sizeof *b->boxes) : NULL;
        if (b->boxes)
            memcpy(b->boxes, desc->boxes, 6 * (size_t)b->c.size * sizeof *b->boxes);
        else
            st = dist_fail(desc->boxes ? PROX_ERR_NO_MEMORY : PROX_ERR_INVALID,
                           "PROX_PARTITION_BOXES needs desc.boxes");
        b->desc.boxes = b->boxes;
    }
    if (st == PROX_OK) {
        st = prox_broad_create(&desc->broad, &b->broad);
        if (st != PROX_OK)
            st = dist_fail_core(st, "cannot create the local broad phase");
    }
    st = dist_agree(&b->c, st);
    if (st != PROX_OK) {
        prox_dist_broad_destroy(b);
        return st;
    }
    *out = b;
    return PROX_OK;
}

void prox_dist_broad_destroy(prox_dist_broad *b)
{
    if (!b)
        return;
    prox_broad_destroy(b->broad);
    part_free(&b->part);
    free(b->boxes);
    free(b->bounds);
    free(b->ids);
    dist_comm_free(&b->c);
    free(b);
}

/* Collective: shapes agree; local checks of the bounds. */
static prox_status check_boxes(prox_dist_broad *b, const prox_boxes *boxes, const char *what)
{
    prox_status st = PROX_OK;
    if (!boxes || (boxes->dim != 2 && boxes->dim != 3) || boxes->count < 0 ||
        boxes->count > PROX_MAX_POINTS)
        st = dist_fail(PROX_ERR_INVALID, "%s: boxes need dim 2 or 3 and 0 .. 2^32-1 boxes", what);
    else if (b->dim && boxes->dim != b->dim)
        st = dist_fail(PROX_ERR_INVALID, "%s: %dD boxes, the object holds %dD ones", what,
                       boxes->dim, b->dim);
    for (int64_t i = 0; st == PROX_OK && i < boxes->count; i++)
        for (int k = 0; k < boxes->dim; k++) {
            double lo = prox_boxes_min(boxes, i, k), hi = prox_boxes_max(boxes, i, k);
            if (!isfinite(lo) || !isfinite(hi) || lo > hi) {
                st = dist_fail(PROX_ERR_DATA, "%s: box %lld has bounds %g .. %g on axis %c",
                               what, (long long)i, lo, hi, "xyz"[k]);
                break;
            }
        }
    double shape[2] = { boxes ? boxes->dim : 0, boxes ? -boxes->dim : 0 };
    st = dist_agree_max(&b->c, st, shape, 2);
    if (st != PROX_OK)
        return st;
    if (shape[0] != -shape[1])
        return dist_fail(PROX_ERR_INVALID, "%s: ranks pass boxes of different dim", what);
    b->dim = boxes->dim;
    return PROX_OK;
}

static prox_status partition(prox_dist_broad *b, const prox_boxes *local)
{
    part_free(&b->part);
    int dim = b->dim;
    const double none[3] = { 0, 0, 0 };
    if (b->desc.partition == PROX_PARTITION_BOXES)
        return dist_agree(&b->c, part_boxes(&b->part, b->c.size, dim, b->boxes, none));
    double *centres = malloc(((size_t)local->count + 1) * (size_t)dim * sizeof *centres);
    prox_status st = dist_agree(&b->c, centres ? PROX_OK
                                               : dist_fail(PROX_ERR_NO_MEMORY,
                                                           "broad build: out of memory"));
    if (st != PROX_OK)
        return st;
    for (int64_t i = 0; i < local->count; i++)
        for (int k = 0; k < dim; k++)
            centres[i * dim + k] =
                0.5 * prox_boxes_min(local, i, k) + 0.5 * prox_boxes_max(local, i, k);
    st = part_rcb(&b->part, &b->c, centres, local->count, dim, none);
    free(centres);
    return st;
}

/* Bytes of a box record: a leading int64 (id or query index), then the bounds. */
static size_t box_bytes(int dim)
{
    return 8 + 16 * (size_t)dim;
}

/* Pack each box once per rank its box meets; per-rank byte counts. With
 * `placed` (built boxes, not queries) a box that meets no region (the
 * caller's boxes leave a gap) is PROX_ERR_DATA. */
static prox_status route_boxes(prox_dist_broad *b, const prox_boxes *boxes, const int64_t *tags,
                               bool placed, char **send, int64_t *bytes, const char *what)
{
    int p = b->c.size, dim = b->dim;
    size_t rec = box_bytes(dim);
    int *ranks = malloc((size_t)p * sizeof *ranks);
    int *hits = malloc(((size_t)boxes->count + 1) * sizeof *hits);
    int64_t *at = calloc((size_t)p + 1, sizeof *at);
    int64_t total = 0;
    *send = NULL;
    memset(bytes, 0, (size_t)p * sizeof *bytes);
    if (!ranks || !hits || !at) {
        free(ranks);
        free(hits);
        free(at);
        return dist_fail(PROX_ERR_NO_MEMORY, "%s: out of memory", what);
    }
    double lo[3], hi[3];
    for (int pass = 0; pass < 2; pass++) {
        for (int64_t i = 0; i < boxes->count; i++) {
            for (int k = 0; k < dim; k++) {
                lo[k] = prox_boxes_min(boxes, i, k);
                hi[k] = prox_boxes_max(boxes, i, k);
            }
            int n = part_overlapping(&b->part, lo, hi, ranks);
            if (n == 0 && placed) { /* a built box no region holds */
                free(ranks);
                free(hits);
                free(at);
                free(*send);
                *send = NULL;
                return dist_fail(PROX_ERR_DATA, "%s: box %lld lies in no rank's box", what,
                                 (long long)i);
            }
            if (pass == 0) {
                hits[i] = n;
                total += n;
                for (int j = 0; j < n; j++)
                    bytes[ranks[j]] += (int64_t)rec;
                continue;
            }
            for (int j = 0; j < n; j++) {
                char *o = *send + at[ranks[j]];
                at[ranks[j]] += (int64_t)rec;
                memcpy(o, tags + i, 8);
                memcpy(o + 8, lo, (size_t)dim * 8);
                memcpy(o + 8 + (size_t)dim * 8, hi, (size_t)dim * 8);
            }
        }
        if (pass == 0) {
            for (int r = 0; r < p; r++)
                at[r + 1] = at[r] + bytes[r];
            *send = malloc((size_t)total * rec + 1);
            if (!*send)
                break;
        }
    }
    free(ranks);
    free(hits);
    free(at);
    return *send ? PROX_OK : dist_fail(PROX_ERR_NO_MEMORY, "%s: out of memory", what);
}

prox_status prox_dist_broad_build(prox_dist_broad *b, const prox_boxes *local, const int64_t *ids)
{
    b->built = false;
    prox_status st = check_boxes(b, local, "broad build");
    if (st != PROX_OK)
        return st;
    st = dist_agree(&b->c, local->count > 0 && !ids
                               ? dist_fail(PROX_ERR_INVALID, "broad build: ids are required")
                               : PROX_OK);
    if (st != PROX_OK)
        return st;
    double t0 = MPI_Wtime(), ex = b->c.stats.exchange_s;
    st = partition(b, local);
    if (st != PROX_OK)
        return st;
    int p = b->c.size, dim = b->dim;
    int64_t *bytes = malloc((size_t)p * sizeof *bytes);
    char *send = NULL;
    st = bytes ? route_boxes(b, local, ids, true, &send, bytes, "broad build")
               : dist_fail(PROX_ERR_NO_MEMORY, "broad build: out of memory");
    b->c.stats.compute_s += MPI_Wtime() - t0 - (b->c.stats.exchange_s - ex);
    dist_recv in = { 0 };
    st = dist_agree(&b->c, st);
    if (st == PROX_OK)
        st = dist_alltoallv(&b->c, bytes, send, &in);
    free(send);
    free(bytes);
    if (st != PROX_OK)
        return st;
    t0 = MPI_Wtime();
    size_t rec = box_bytes(dim);
    int64_t n = in.displ[p] / (int64_t)rec;
    free(b->bounds);
    free(b->ids);
    b->bounds = malloc(((size_t)n + 1) * 2 * (size_t)dim * sizeof *b->bounds);
    b->ids = malloc(((size_t)n + 1) * sizeof *b->ids);
    if (!b->bounds || !b->ids)
        st = dist_fail(PROX_ERR_NO_MEMORY, "broad build: out of memory");
    for (int64_t i = 0; st == PROX_OK && i < n; i++) {
        memcpy(b->ids + i, in.data + (size_t)i * rec, 8);
        memcpy(b->bounds + (size_t)i * 2 * dim, in.data + (size_t)i * rec + 8, 16 * (size_t)dim);
    }
    dist_recv_free(&in);
    if (st == PROX_OK) {
        prox_boxes held = prox_boxes_f64(b->bounds, n, dim);
        st = prox_broad_build(b->broad, &held);
        if (st != PROX_OK)
            st = dist_fail_core(st, "broad build: the local build failed");
    }
    b->owned = local->count;
    b->held = n;
    b->c.stats.owned = local->count;
    b->c.stats.migrations++;
    b->c.stats.compute_s += MPI_Wtime() - t0;
    st = dist_agree(&b->c, st);
    b->built = st == PROX_OK;
    return st;
}

/* Whether this rank answers for boxes (or a query and a box) x and y:
 * its region holds the lower corner of their intersection. */
static bool owns_corner(const prox_dist_broad *b, const double *x, const double *y)
{
    double c[3];
    for (int k = 0; k < b->dim; k++)
        c[k] = fmax(x[k], y[k]);
    return part_owner(&b->part, c) == b->c.rank;
}

static prox_status deliver(prox_id_pair *pairs, int64_t count, prox_id_sink sink,
                           int64_t rows, int64_t *delivered)
{
    *delivered = count;
    switch (sink.kind) {
    case PROX_SINK_COUNT:
        return PROX_OK;
    case PROX_SINK_BUFFER:
        prox_id_pairs_free(sink.buffer);
        sink.buffer->pairs = malloc(((size_t)count + 1) * sizeof *pairs);
        if (!sink.buffer->pairs)
            return dist_fail(PROX_ERR_NO_MEMORY, "out of memory");
        memcpy(sink.buffer->pairs, pairs, (size_t)count * sizeof *pairs);
        sink.buffer->count = sink.buffer->capacity = count;
        return PROX_OK;
    case PROX_SINK_CALLBACK:
        for (int64_t k = 0; k < count; k++)
            if (sink.fn(pairs[k].a, pairs[k].b, sink.user)) {
                *delivered = k + 1;
                return PROX_STOPPED;
            }
        return PROX_OK;
    case PROX_SINK_LISTS: {
        prox_id_lists *l = sink.lists;
        prox_id_lists_free(l);
        l->offsets = calloc((size_t)rows + 1, sizeof *l->offsets);
        l->row_ids = malloc(((size_t)rows + 1) * sizeof *l->row_ids);
        l->ids = malloc(((size_t)count + 1) * sizeof *l->ids);
        if (!l->offsets || !l->row_ids || !l->ids) {
            prox_id_lists_free(l);
            return dist_fail(PROX_ERR_NO_MEMORY, "out of memory");
        }
        l->rows = rows;
        for (int64_t r = 0; r < rows; r++)
            l->row_ids[r] = r;
        for (int64_t k = 0; k < count; k++) {
            l->offsets[pairs[k].a + 1]++;
            l->ids[k] = pairs[k].b;
        }
        for (int64_t r = 0; r < rows; r++)
            l->offsets[r + 1] += l->offsets[r];
        return PROX_OK;
    }
    }
    return dist_fail(PROX_ERR_INVALID, "unknown sink kind %d", (int)sink.kind);
}

prox_status prox_dist_broad_pairs(prox_dist_broad *b, prox_id_sink sink, prox_stats *stats)
{
    prox_status st = PROX_OK;
    if (!b->built)
        st = dist_fail(PROX_ERR_INVALID, "broad pairs: nothing built");
    else if (sink.kind == PROX_SINK_LISTS)
        st = dist_fail(PROX_ERR_INVALID, "broad pairs: lists are not offered (a box's pairs "
                                         "are reported on several ranks)");
    if ((st = dist_agree(&b->c, st)) != PROX_OK)
        return st;
    double t0 = MPI_Wtime();
    prox_pair_buffer buf;
    prox_pair_buffer_init(&buf, NULL);
    prox_stats s = { 0 };
    st = prox_broad_pairs(b->broad, prox_sink_buffer(&buf), &s);
    if (st != PROX_OK)
        st = dist_fail_core(st, "broad pairs: the local search failed");
    int dim = b->dim;
    prox_id_pair *ids = st == PROX_OK ? malloc(((size_t)buf.count + 1) * sizeof *ids) : NULL;
    if (st == PROX_OK && !ids)
        st = dist_fail(PROX_ERR_NO_MEMORY, "broad pairs: out of memory");
    int64_t n = 0;
    for (int64_t k = 0; st == PROX_OK && k < buf.count; k++) {
        prox_index i = buf.pairs[k].i, j = buf.pairs[k].j;
        if (!owns_corner(b, b->bounds + (size_t)i * 2 * dim, b->bounds + (size_t)j * 2 * dim))
            continue;
        int64_t x = b->ids[i], y = b->ids[j];
        ids[n++] = x < y ? (prox_id_pair){ x, y } : (prox_id_pair){ y, x };
    }
    prox_pair_buffer_free(&buf);
    int64_t delivered = 0;
    if (st == PROX_OK) {
        dist_sort_id_pairs(ids, n);
        st = deliver(ids, n, sink, 0, &delivered);
    }
    free(ids);
    b->c.stats.compute_s += MPI_Wtime() - t0;
    b->c.stats.pairs = delivered;
    s.pairs = delivered;
    if (stats)
        *stats = s;
    return dist_agree(&b->c, st);
}

/* The hits of the received queries this rank answers, as (query tag, box
 * id) records routed back to the asking ranks. */
static prox_status answer_queries(prox_dist_broad *b, const dist_recv *in, char **send,
                                  int64_t *bytes, prox_stats *s)
{
    int p = b->c.size, dim = b->dim;
    size_t rec = box_bytes(dim);
    int64_t n = in->displ[p] / (int64_t)rec;
    double *qb = malloc(((size_t)n + 1) * 2 * (size_t)dim * sizeof *qb);
    int *source = malloc(((size_t)n + 1) * sizeof *source);
    prox_pair_buffer hits;
    prox_pair_buffer_init(&hits, NULL);
    prox_status st = qb && source ? PROX_OK
                                  : dist_fail(PROX_ERR_NO_MEMORY, "broad query: out of memory");
    for (int r = 0, q = 0; st == PROX_OK && r < p; r++)
        for (; q < in->displ[r + 1] / (int64_t)rec; q++)
            source[q] = r;
    for (int64_t q = 0; st == PROX_OK && q < n; q++)
        memcpy(qb + (size_t)q * 2 * dim, in->data + (size_t)q * rec + 8, 16 * (size_t)dim);
    if (st == PROX_OK && n > 0 && b->held > 0) {
        prox_boxes queries = prox_boxes_f64(qb, n, dim);
        st = prox_broad_query_boxes(b->broad, &queries, prox_sink_buffer(&hits), s);
        if (st != PROX_OK)
            st = dist_fail_core(st, "broad query: the local query failed");
    }
    int64_t kept = 0;
    for (int64_t k = 0; st == PROX_OK && k < hits.count; k++) {
        prox_index q = hits.pairs[k].i, j = hits.pairs[k].j;
        if (owns_corner(b, qb + (size_t)q * 2 * dim, b->bounds + (size_t)j * 2 * dim)) {
            hits.pairs[kept++] = hits.pairs[k];
            bytes[source[q]] += 16;
        }
    }
    *send = st == PROX_OK ? malloc((size_t)kept * 16 + 1) : NULL;
    if (st == PROX_OK && !*send)
        st = dist_fail(PROX_ERR_NO_MEMORY, "broad query: out of memory");
    if (st == PROX_OK) {
        int64_t *at = calloc((size_t)p + 1, sizeof *at);
        if (!at)
            st = dist_fail(PROX_ERR_NO_MEMORY, "broad query: out of memory");
        for (int r = 0; at && r < p; r++)
            at[r + 1] = at[r] + bytes[r];
        for (int64_t k = 0; at && k < kept; k++) { /* hits come sorted by q: per source too */
            prox_index q = hits.pairs[k].i;
            char *o = *send + at[source[q]];
            at[source[q]] += 16;
            memcpy(o, in->data + (size_t)q * rec, 8);
            memcpy(o + 8, b->ids + hits.pairs[k].j, 8);
        }
        free(at);
    }
    free(qb);
    free(source);
    prox_pair_buffer_free(&hits);
    return st;
}

prox_status prox_dist_broad_query(prox_dist_broad *b, const prox_boxes *queries,
                                  prox_id_sink sink, prox_stats *stats)
{
    prox_status st = dist_agree(&b->c, b->built ? PROX_OK
                                                : dist_fail(PROX_ERR_INVALID,
                                                            "broad query: nothing built"));
    if (st != PROX_OK)
        return st;
    if ((st = check_boxes(b, queries, "broad query")) != PROX_OK)
        return st;
    int p = b->c.size;
    double t0 = MPI_Wtime();
    int64_t *tags = malloc(((size_t)queries->count + 1) * sizeof *tags);
    int64_t *bytes = calloc((size_t)p, sizeof *bytes);
    char *send = NULL;
    st = tags && bytes ? PROX_OK : dist_fail(PROX_ERR_NO_MEMORY, "broad query: out of memory");
    for (int64_t q = 0; st == PROX_OK && q < queries->count; q++)
        tags[q] = q;
    if (st == PROX_OK)
        st = route_boxes(b, queries, tags, false, &send, bytes, "broad query");
    free(tags);
    b->c.stats.compute_s += MPI_Wtime() - t0;
    dist_recv in = { 0 }, back = { 0 };
    st = dist_agree(&b->c, st);
    if (st == PROX_OK)
        st = dist_alltoallv(&b->c, bytes, send, &in);
    free(send);
    send = NULL;
    prox_stats s = { 0 };
    if (st == PROX_OK) {
        t0 = MPI_Wtime();
        memset(bytes, 0, (size_t)p * sizeof *bytes);
        st = answer_queries(b, &in, &send, bytes, &s);
        b->c.stats.compute_s += MPI_Wtime() - t0;
        st = dist_agree(&b->c, st);
    }
    dist_recv_free(&in);
    if (st == PROX_OK)
        st = dist_alltoallv(&b->c, bytes, send, &back);
    free(send);
    free(bytes);
    int64_t delivered = 0;
    if (st == PROX_OK) {
        t0 = MPI_Wtime();
        prox_id_pair *pairs = (prox_id_pair *)(void *)back.data;
        int64_t n = back.displ[p] / 16;
        dist_sort_id_pairs(pairs, n);
        st = deliver(pairs, n, sink, queries->count, &delivered);
        b->c.stats.compute_s += MPI_Wtime() - t0;
    }
    dist_recv_free(&back);
    s.pairs = delivered;
    if (stats)
        *stats = s;
    return dist_agree(&b->c, st);
}

void prox_dist_broad_region(const prox_dist_broad *b, int rank, double lo[3], double hi[3])
{
    for (int k = 0; k < 3; k++) {
        lo[k] = b->part.lo ? b->part.lo[3 * rank + k] : -INFINITY;
        hi[k] = b->part.hi ? b->part.hi[3 * rank + k] : INFINITY;
    }
}

void prox_dist_broad_get_stats(const prox_dist_broad *b, prox_dist_stats *stats)
{
    *stats = b->c.stats;
    stats->owned = b->owned;
    stats->ghosts = b->held;
}

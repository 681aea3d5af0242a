/* dist_common.c: messages, agreement on failures and the timed all-to-all
 * exchange every distributed call goes through. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist_private.h"

static _Thread_local char message[512];

const char *prox_dist_last_error(void)
{
    return message;
}

prox_status dist_fail(prox_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    return st;
}

prox_status dist_fail_core(prox_status st, const char *what)
{
    if (st == PROX_STOPPED)
        return st;
    return dist_fail(st, "%s: %s", what, prox_last_error());
}

prox_status dist_comm_init(dist_comm *c, MPI_Comm comm)
{
    memset(c, 0, sizeof *c);
    if (MPI_Comm_dup(comm, &c->comm) != MPI_SUCCESS)
        return dist_fail(PROX_ERR_INVALID, "MPI_Comm_dup failed");
    MPI_Comm_rank(c->comm, &c->rank);
    MPI_Comm_size(c->comm, &c->size);
    c->ints = malloc(4 * (size_t)c->size * sizeof *c->ints);
    c->minus = malloc(2 * (size_t)c->size * sizeof *c->minus);
    for (int r = 0; c->minus && r < c->size; r++)
        c->minus[r] = -1;
    return dist_agree(c, c->ints && c->minus ? PROX_OK
                                             : dist_fail(PROX_ERR_NO_MEMORY, "out of memory"));
}

void dist_comm_free(dist_comm *c)
{
    free(c->ints);
    free(c->minus);
    if (c->comm != MPI_COMM_NULL)
        MPI_Comm_free(&c->comm);
}

prox_status dist_agree(dist_comm *c, prox_status st)
{
    bool failed = st != PROX_OK && st != PROX_STOPPED;
    struct { int status, rank; } mine = { failed ? (int)st : 0, -c->rank }, worst;
    double t0 = MPI_Wtime();
    /* MAXLOC on (status, -rank): the worst status, lowest rank among ties */
    MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, c->comm);
    c->stats.exchange_s += MPI_Wtime() - t0;
    if (worst.status == 0)
        return st;
    if (!failed)
        dist_fail((prox_status)worst.status, "rank %d failed (%s); see its message",
                  -worst.rank, prox_status_string((prox_status)worst.status));
    return failed ? st : (prox_status)worst.status;
}

prox_status dist_agree_max(dist_comm *c, prox_status st, double *values, int n)
{
    bool failed = st != PROX_OK && st != PROX_STOPPED;
    double buf[8], all[8];
    /* the worst status, the lowest failing rank among its ties: exact in a double */
    buf[0] = failed ? (double)st * 0x1p32 + (0x1p32 - 1 - c->rank) : 0;
    for (int k = 0; k < n; k++)
        buf[k + 1] = values[k];
    double t0 = MPI_Wtime();
    MPI_Allreduce(buf, all, n + 1, MPI_DOUBLE, MPI_MAX, c->comm);
    c->stats.exchange_s += MPI_Wtime() - t0;
    for (int k = 0; k < n; k++)
        values[k] = all[k + 1];
    if (all[0] == 0)
        return st;
    prox_status worst = (prox_status)(int)(all[0] * 0x1p-32);
    int who = (int)(0x1p32 - 1 - (all[0] - (double)worst * 0x1p32));
    if (!failed)
        dist_fail(worst, "rank %d failed (%s); see its message", who, prox_status_string(worst));
    return failed ? st : worst;
}

void dist_recv_free(dist_recv *r)
{
    free(r->data);
    free(r->bytes);
    free(r->displ);
    memset(r, 0, sizeof *r);
}

static prox_status int_counts(const int64_t *bytes, int size, int *counts, int *displ,
                              const char *what)
{
    int64_t at = 0;
    for (int r = 0; r < size; r++) {
        if (bytes[r] > INT_MAX || at > INT_MAX)
            return dist_fail(PROX_ERR_RANGE, "%s: over 2 GiB in one exchange", what);
        counts[r] = (int)bytes[r];
        displ[r] = (int)at;
        at += bytes[r];
    }
    return at > INT_MAX ? dist_fail(PROX_ERR_RANGE, "%s: over 2 GiB in one exchange", what)
                        : PROX_OK;
}

prox_status dist_alltoallv(dist_comm *c, const int64_t *send_bytes, const char *send,
                           dist_recv *out)
{
    int p = c->size;
    memset(out, 0, sizeof *out);
    out->bytes = calloc((size_t)p, sizeof *out->bytes);
    out->displ = calloc((size_t)p + 1, sizeof *out->displ);
    int *ints = c->ints;
    prox_status st = out->bytes && out->displ ? PROX_OK
                                              : dist_fail(PROX_ERR_NO_MEMORY,
                                                          "exchange: out of memory");
    double t0 = MPI_Wtime();
    /* a rank that failed sends -1 as every count: the others learn it from
     * the counts' exchange, one collective fewer */
    if (st == PROX_OK)
        MPI_Alltoall(send_bytes, 1, MPI_INT64_T, out->bytes, 1, MPI_INT64_T, c->comm);
    else
        MPI_Alltoall(c->minus, 1, MPI_INT64_T, c->minus + p, 1, MPI_INT64_T, c->comm);
    for (int r = 0; st == PROX_OK && r < p; r++)
        if (out->bytes[r] < 0)
            st = dist_fail(PROX_ERR_NO_MEMORY, "exchange: rank %d failed; see its message", r);
    if (st == PROX_OK) {
        for (int r = 0; r < p; r++)
            out->displ[r + 1] = out->displ[r] + out->bytes[r];
        st = int_counts(send_bytes, p, ints, ints + p, "send");
        if (st == PROX_OK)
            st = int_counts(out->bytes, p, ints + 2 * p, ints + 3 * p, "receive");
        out->data = malloc((size_t)out->displ[p] + 1);
        if (st == PROX_OK && !out->data)
            st = dist_fail(PROX_ERR_NO_MEMORY, "exchange: out of memory (%lld bytes)",
                           (long long)out->displ[p]);
    }
    st = dist_agree(c, st);
    if (st == PROX_OK)
        MPI_Alltoallv(send, ints, ints + p, MPI_BYTE, out->data, ints + 2 * p, ints + 3 * p,
                      MPI_BYTE, c->comm);
    c->stats.exchange_s += MPI_Wtime() - t0;
    for (int r = 0; r < p; r++)
        if (r != c->rank && send_bytes[r] > 0) {
            c->stats.messages++;
            c->stats.bytes_sent += send_bytes[r];
        }
    if (st != PROX_OK)
        dist_recv_free(out);
    return st;
}

double dist_wrap(double x, double L)
{
    double w = x - L * floor(x / L);
    return (w >= L || w < 0) ? 0.0 : w;
}

/* ---- id sinks and gathers -------------------------------------------- */

prox_id_sink prox_id_sink_count(void)
{
    return (prox_id_sink){ .kind = PROX_SINK_COUNT };
}

prox_id_sink prox_id_sink_buffer(prox_id_pairs *buffer)
{
    return (prox_id_sink){ .kind = PROX_SINK_BUFFER, .buffer = buffer };
}

prox_id_sink prox_id_sink_lists(prox_id_lists *lists)
{
    return (prox_id_sink){ .kind = PROX_SINK_LISTS, .lists = lists };
}

prox_id_sink prox_id_sink_callback(prox_id_pair_fn fn, void *user)
{
    return (prox_id_sink){ .kind = PROX_SINK_CALLBACK, .fn = fn, .user = user };
}

void prox_id_pairs_free(prox_id_pairs *pairs)
{
    free(pairs->pairs);
    memset(pairs, 0, sizeof *pairs);
}

void prox_id_lists_free(prox_id_lists *lists)
{
    free(lists->offsets);
    free(lists->ids);
    free(lists->row_ids);
    memset(lists, 0, sizeof *lists);
}

static int compare_id_pairs(const void *x, const void *y)
{
    const prox_id_pair *a = x, *b = y;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return (a->b > b->b) - (a->b < b->b);
}

void dist_sort_id_pairs(prox_id_pair *pairs, int64_t count)
{
    qsort(pairs, (size_t)count, sizeof *pairs, compare_id_pairs);
}

/* Collective: every rank's `bytes` bytes at root (gathered in rank order);
 * *out is malloc'd on root. */
static prox_status gather_bytes(MPI_Comm comm, int root, const void *data, int64_t bytes,
                                char **out, int64_t *total)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int64_t *all = rank == root ? malloc((size_t)size * sizeof *all) : NULL;
    int *counts = rank == root ? malloc(2 * (size_t)size * sizeof *counts) : NULL;
    MPI_Gather(&bytes, 1, MPI_INT64_T, all, 1, MPI_INT64_T, root, comm);
    prox_status st = PROX_OK;
    *out = NULL;
    *total = 0;
    if (rank == root) {
        if (!all || !counts)
            st = dist_fail(PROX_ERR_NO_MEMORY, "gather: out of memory");
        for (int r = 0; st == PROX_OK && r < size; r++) {
            if (*total + all[r] > INT_MAX)
                st = dist_fail(PROX_ERR_RANGE, "gather: over 2 GiB at the root");
            else {
                counts[r] = (int)all[r];
                counts[size + r] = (int)*total;
                *total += all[r];
            }
        }
        if (st == PROX_OK && !(*out = malloc((size_t)*total + 1)))
            st = dist_fail(PROX_ERR_NO_MEMORY, "gather: out of memory");
    }
    int ok = st == PROX_OK;
    MPI_Bcast(&ok, 1, MPI_INT, root, comm);
    if (ok) /* counts is the root's alone: NULL + size elsewhere would be undefined */
        MPI_Gatherv(data, (int)bytes, MPI_BYTE, *out, counts, counts ? counts + size : NULL,
                    MPI_BYTE, root, comm);
    else if (rank != root)
        st = dist_fail(PROX_ERR_NO_MEMORY, "gather: the root failed; see its message");
    free(all);
    free(counts);
    return st;
}

prox_status prox_id_pairs_gather(MPI_Comm comm, int root, prox_id_pairs *pairs)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    char *all;
    int64_t total;
    prox_status st = gather_bytes(comm, root, pairs->pairs,
                                  pairs->count * (int64_t)sizeof(prox_id_pair), &all, &total);
    prox_id_pairs_free(pairs);
    if (st != PROX_OK || rank != root) {
        free(all);
        return st;
    }
    pairs->pairs = (prox_id_pair *)(void *)all;
    pairs->count = pairs->capacity = total / (int64_t)sizeof(prox_id_pair);
    dist_sort_id_pairs(pairs->pairs, pairs->count);
    return PROX_OK;
}

typedef struct row_ref {
    int64_t id, begin, end;
} row_ref;

static int compare_rows(const void *x, const void *y)
{
    const row_ref *a = x, *b = y;
    return (a->id > b->id) - (a->id < b->id);
}

/* Lists as one stream of int64: rows, then per row id, length, entries. */
prox_status prox_id_lists_gather(MPI_Comm comm, int root, prox_id_lists *lists)
{
    int rank;
    MPI_Comm_rank(comm, &rank);
    int64_t rows = lists->rows, entries = rows ? lists->offsets[rows] : 0;
    int64_t words = 2 * rows + entries;
    int64_t *stream = malloc(((size_t)words + 1) * sizeof *stream);
    prox_status st = stream ? PROX_OK : dist_fail(PROX_ERR_NO_MEMORY, "gather: out of memory");
    int64_t w = 0;
    for (int64_t r = 0; stream && r < rows; r++) {
        stream[w++] = lists->row_ids[r];
        stream[w++] = lists->offsets[r + 1] - lists->offsets[r];
        for (int64_t k = lists->offsets[r]; k < lists->offsets[r + 1]; k++)
            stream[w++] = lists->ids[k];
    }
    prox_id_lists_free(lists);
    char *all = NULL;
    int64_t total = 0;
    int bad = st != PROX_OK, any_bad;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, comm);
    if (any_bad) {
        free(stream);
        return st != PROX_OK ? st
                            : dist_fail(PROX_ERR_NO_MEMORY,
                                        "gather: a rank ran out of memory; see its message");
    }
    st = gather_bytes(comm, root, stream, w * (int64_t)sizeof *stream, &all, &total);
    free(stream);
    if (st != PROX_OK || rank != root) {
        free(all);
        return st;
    }
    const int64_t *in = (const int64_t *)(const void *)all;
    int64_t n_words = total / (int64_t)sizeof *in, n_rows = 0;
    for (int64_t k = 0; k < n_words; k += 2 + in[k + 1])
        n_rows++;
    row_ref *refs = malloc(((size_t)n_rows + 1) * sizeof *refs);
    lists->offsets = malloc(((size_t)n_rows + 1) * sizeof *lists->offsets);
    lists->row_ids = malloc(((size_t)n_rows + 1) * sizeof *lists->row_ids);
    lists->ids = malloc(((size_t)(n_words - 2 * n_rows) + 1) * sizeof *lists->ids);
    if (!refs || !lists->offsets || !lists->row_ids || !lists->ids) {
        free(refs);
        free(all);
        prox_id_lists_free(lists);
        return dist_fail(PROX_ERR_NO_MEMORY, "gather: out of memory");
    }
    int64_t r = 0;
    for (int64_t k = 0; k < n_words; k += 2 + in[k + 1])
        refs[r++] = (row_ref){ in[k], k + 2, k + 2 + in[k + 1] };
    qsort(refs, (size_t)n_rows, sizeof *refs, compare_rows);
    lists->rows = n_rows;
    lists->offsets[0] = 0;
    for (r = 0; r < n_rows; r++) {
        int64_t len = refs[r].end - refs[r].begin;
        lists->row_ids[r] = refs[r].id;
        memcpy(lists->ids + lists->offsets[r], in + refs[r].begin, (size_t)len * sizeof *in);
        lists->offsets[r + 1] = lists->offsets[r] + len;
    }
    free(refs);
    free(all);
    return PROX_OK;
}

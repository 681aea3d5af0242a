/* cli_mpi.c: `--mpi` over the distributed layer (cli_mpi.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_mpi.h"
#include "prox/mpi.h"

static int rank, size;

int cli_mpi_start(const char *command)
{
    (void)command;
    int ready = 0;
    MPI_Initialized(&ready);
    if (!ready)
        MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return rank;
}

void cli_mpi_finish(void)
{
    MPI_Finalize();
}

/* A rank's message that only relays another rank's failure (the library's
 * agreement: "rank R failed (...); see its message"). */
static bool relays_a_failure(const char *message)
{
    static const char relay[] = "; see its message";
    size_t n = strlen(message), r = sizeof relay - 1;
    return n >= r && strcmp(message + n - r, relay) == 0;
}

/* Every rank fails together (the library agrees on failures): rank 0
 * says why, and so does every other rank whose own call failed (its
 * message names it), so that the failing rank's reason reaches the user;
 * the ranks that only learnt of another's failure leave quietly with the
 * same code. */
static _Noreturn void fail(prox_status st, const char *what)
{
    int code = st == PROX_ERR_NO_MEMORY ? EXIT_NO_MEMORY : EXIT_DATA;
    const char *message = prox_dist_last_error();
    /* A rank's own reason is written before MPI_Finalize, which every
     * rank enters before any leaves it: rank 0's exit ends the job, and a
     * line written after it could be lost. */
    if (rank != 0 && !relays_a_failure(message)) {
        fprintf(stderr, "prox: rank %d: %s: %s\n", rank, what, message);
        fflush(stderr);
    }
    MPI_Finalize();
    if (rank == 0)
        die(code, "%s: %s", what, message);
    exit(code);
}

static void check(prox_status st, const char *what)
{
    if (st != PROX_OK)
        fail(st, what);
}

/* Rank 0's shape and options to every rank. */
static void share(void *data, size_t bytes)
{
    MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void print_rank_stats(const prox_dist_stats *mine)
{
    prox_dist_stats *all = rank == 0 ? xmalloc((size_t)size * sizeof *all) : NULL;
    MPI_Gather(mine, (int)sizeof *mine, MPI_BYTE, all, (int)sizeof *mine, MPI_BYTE, 0,
               MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < size; r++)
        fprintf(stderr,
                "rank=%d owned=%lld ghosts=%lld pairs=%lld messages=%lld bytes_sent=%lld "
                "exchange_s=%.6f compute_s=%.6f\n",
                r, (long long)all[r].owned, (long long)all[r].ghosts, (long long)all[r].pairs,
                (long long)all[r].messages, (long long)all[r].bytes_sent, all[r].exchange_s,
                all[r].compute_s);
    free(all);
}

/* Gathered id pairs into rank 0's buffer (ids are the file's indices). */
static void deliver_pairs(prox_id_pairs *pairs, prox_pair_buffer *buffer)
{
    check(prox_id_pairs_gather(MPI_COMM_WORLD, 0, pairs), "gathering the pairs");
    if (rank != 0)
        return;
    if (prox_pair_buffer_reserve(buffer, pairs->count) != PROX_OK)
        die(EXIT_NO_MEMORY, "out of memory for %lld pairs", (long long)pairs->count);
    for (int64_t k = 0; k < pairs->count; k++)
        buffer->pairs[k] = (prox_pair){ (prox_index)pairs->pairs[k].a,
                                        (prox_index)pairs->pairs[k].b };
    buffer->count = pairs->count;
}

static void deliver_lists(prox_id_lists *in, prox_lists *out, int64_t rows)
{
    check(prox_id_lists_gather(MPI_COMM_WORLD, 0, in), "gathering the lists");
    if (rank != 0)
        return;
    if (in->rows != rows)
        die(EXIT_INTERNAL, "--mpi: %lld lists came back for %lld points", (long long)in->rows,
            (long long)rows);
    int64_t entries = rows ? in->offsets[rows] : 0;
    prox_lists_free(out);
    prox_lists_init(out, NULL);
    out->offsets = xmalloc(((size_t)rows + 1) * sizeof *out->offsets);
    out->indices = xmalloc(((size_t)entries + 1) * sizeof *out->indices);
    memcpy(out->offsets, in->offsets, ((size_t)rows + 1) * sizeof *out->offsets);
    for (int64_t k = 0; k < entries; k++)
        out->indices[k] = (prox_index)in->ids[k];
    out->rows = rows;
    out->offsets_capacity = rows + 1;
    out->indices_capacity = entries + 1;
}

void cli_mpi_pairs(const prox_points *points, const prox_grid_desc *given, prox_sink sink,
                   prox_stats *stats, bool print_stats)
{
    struct points_shape { prox_grid_desc desc; int dim, scalar, kind; int64_t n; } shape;
    memset(&shape, 0, sizeof shape);
    if (rank == 0)
        shape = (struct points_shape){ *given, points->dim, (int)points->scalar, (int)sink.kind,
                                       points->count };
    share(&shape, sizeof shape);
    shape.desc.allocator = (prox_allocator){ 0 };
    int dim = shape.dim;
    size_t scalar = shape.scalar == PROX_F32 ? 4 : 8;
    prox_points none = { .dim = dim, .scalar = (prox_scalar)shape.scalar, .stride = 0 };
    const prox_points *local = rank == 0 ? points : &none;
    int64_t *ids = xmalloc(((size_t)local->count + 1) * sizeof *ids);
    for (int64_t i = 0; i < local->count; i++)
        ids[i] = i;

    prox_dist_desc desc = prox_default_dist_desc();
    desc.grid = shape.desc;
    prox_dist *d = NULL;
    check(prox_dist_create(MPI_COMM_WORLD, &desc, &d), "--mpi");
    check(prox_dist_partition(d, local), "--mpi partition");
    int64_t n = 0;
    check(prox_dist_migrate_count(d, local, &n), "--mpi migration");
    void *coords = xmalloc(((size_t)n + 1) * (size_t)dim * scalar);
    int64_t *own_ids = xmalloc(((size_t)n + 1) * sizeof *own_ids);
    check(prox_dist_migrate(d, local, ids, NULL, 0, coords, own_ids, NULL), "--mpi migration");
    free(ids);
    prox_points own = shape.scalar == PROX_F32 ? prox_points_f32(coords, n, dim)
                                               : prox_points_f64(coords, n, dim);
    check(prox_dist_build(d, &own, own_ids), "--mpi halo");

    prox_stats s = { 0 };
    if (shape.kind == PROX_SINK_COUNT) {
        check(prox_dist_pairs(d, prox_sink_count(), &s), "--mpi search");
        int64_t total = 0;
        MPI_Reduce(&s.pairs, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        s.pairs = total;
    } else if (shape.kind == PROX_SINK_LISTS) {
        prox_id_lists lists = { 0 };
        check(prox_dist_pairs_ids(d, prox_id_sink_lists(&lists), &s), "--mpi search");
        deliver_lists(&lists, rank == 0 ? sink.lists : NULL, shape.n);
        prox_id_lists_free(&lists);
    } else {
        prox_id_pairs pairs = { 0 };
        check(prox_dist_pairs_ids(d, prox_id_sink_buffer(&pairs), &s), "--mpi search");
        deliver_pairs(&pairs, rank == 0 ? sink.buffer : NULL);
        s.pairs = pairs.count;
        prox_id_pairs_free(&pairs);
    }
    if (print_stats) {
        prox_dist_stats ds;
        prox_dist_get_stats(d, &ds);
        print_rank_stats(&ds);
    }
    if (stats)
        *stats = s;
    prox_dist_destroy(d);
    free(coords);
    free(own_ids);
}

void cli_mpi_collide(const prox_boxes *boxes, const prox_broad_desc *given, prox_sink sink,
                     prox_stats *stats, bool print_stats)
{
    struct boxes_shape { prox_broad_desc desc; int dim, scalar, kind; } shape;
    memset(&shape, 0, sizeof shape);
    if (rank == 0)
        shape = (struct boxes_shape){ *given, boxes->dim, (int)boxes->scalar, (int)sink.kind };
    share(&shape, sizeof shape);
    shape.desc.allocator = (prox_allocator){ 0 };
    shape.desc.borrow_boxes = false;
    prox_boxes none = { .dim = shape.dim, .scalar = (prox_scalar)shape.scalar };
    const prox_boxes *local = rank == 0 ? boxes : &none;
    int64_t *ids = xmalloc(((size_t)local->count + 1) * sizeof *ids);
    for (int64_t i = 0; i < local->count; i++)
        ids[i] = i;
    prox_dist_desc desc = prox_default_dist_desc();
    desc.broad = shape.desc;
    prox_dist_broad *b = NULL;
    check(prox_dist_broad_create(MPI_COMM_WORLD, &desc, &b), "--mpi");
    check(prox_dist_broad_build(b, local, ids), "--mpi build");
    free(ids);
    prox_stats s = { 0 };
    if (shape.kind == PROX_SINK_COUNT) {
        check(prox_dist_broad_pairs(b, prox_id_sink_count(), &s), "--mpi search");
        int64_t total = 0;
        MPI_Reduce(&s.pairs, &total, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
        s.pairs = total;
    } else {
        prox_id_pairs pairs = { 0 };
        check(prox_dist_broad_pairs(b, prox_id_sink_buffer(&pairs), &s), "--mpi search");
        deliver_pairs(&pairs, rank == 0 ? sink.buffer : NULL);
        s.pairs = pairs.count;
        prox_id_pairs_free(&pairs);
    }
    if (print_stats) {
        prox_dist_stats ds;
        prox_dist_broad_get_stats(b, &ds);
        print_rank_stats(&ds);
    }
    if (stats)
        *stats = s;
    prox_dist_broad_destroy(b);
}

/* test_dist.c: the distributed layer (include/prox/mpi.h) against the
 * single-machine library on the union of every rank's items. Run under
 * mpirun with 1 to 4 ranks (tests/mpi/CMakeLists.txt); every rank checks,
 * the exit status is nonzero when any check failed on any rank.
 *
 * Workloads (WORKLOADS.md, small N): W1 open and periodic, W2, W3 boxes,
 * skewed data (every point in one corner, duplicates), ranks with no
 * items, a caller-given partition, moving points over 50 steps with and
 * without skin, and the errors every rank must agree on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prox/mpi.h"
#include "workloads.h"

static int rank, size, failures;
static bool skip_lists; /* moving points: buffer and count each step, the other sinks
                           every tenth */
static bool serial_grid; /* moving points: the serial grid (tested against brute force by
                            test_grid) instead of brute force, for time */

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            fprintf(stderr, "rank %d/%d: %s:%d: ", rank, size, __FILE__, __LINE__);   \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
            failures++;                                                               \
        }                                                                             \
    } while (0)

#define CHECK_OK(st, what) \
    CHECK((st) == PROX_OK, "%s: %s: %s", what, prox_status_string(st), prox_dist_last_error())

/* ---- items spread over ranks --------------------------------------------- */

typedef enum spread { SPREAD_BLOCKS, SPREAD_ROOT, SPREAD_STRIDE, SPREAD_LAST } spread;

typedef struct local_set {
    double *xyz;
    int64_t *ids;
    double *payload; /* moving tests: velocities, dim per point */
    int64_t n;
    int dim;
} local_set;

static void local_free(local_set *s)
{
    free(s->xyz);
    free(s->ids);
    free(s->payload);
    memset(s, 0, sizeof *s);
}

static bool mine(int64_t i, int64_t n, spread how)
{
    switch (how) {
    case SPREAD_ROOT: return rank == 0;
    case SPREAD_LAST: return rank == size - 1;
    case SPREAD_STRIDE: return i % size == rank;
    default: return i * size / (n ? n : 1) == rank;
    }
}

/* This rank's share of `all` (vals doubles per item), ids = indices. */
static local_set take(const double *all, int64_t n, int dim, int vals, spread how)
{
    local_set s = { malloc(((size_t)n + 1) * (size_t)vals * 8), malloc(((size_t)n + 1) * 8),
                    NULL, 0, dim };
    for (int64_t i = 0; i < n; i++)
        if (mine(i, n, how)) {
            memcpy(s.xyz + s.n * vals, all + i * vals, (size_t)vals * 8);
            s.ids[s.n++] = i;
        }
    return s;
}

/* Partition over the set, then migrate it (payload too when present). */
static void distribute(prox_dist *d, local_set *s, bool partition)
{
    prox_points pts = prox_points_f64(s->xyz, s->n, s->dim);
    if (partition)
        CHECK_OK(prox_dist_partition(d, &pts), "partition");
    int64_t in = -1;
    CHECK_OK(prox_dist_migrate_count(d, &pts, &in), "migrate_count");
    local_set out = { malloc(((size_t)in + 1) * (size_t)s->dim * 8), malloc(((size_t)in + 1) * 8),
                      s->payload ? malloc(((size_t)in + 1) * (size_t)s->dim * 8) : NULL, in,
                      s->dim };
    CHECK_OK(prox_dist_migrate(d, &pts, s->ids, s->payload,
                               s->payload ? (size_t)s->dim * 8 : 0, out.xyz, out.ids,
                               out.payload),
             "migrate");
    local_free(s);
    *s = out;
    int64_t total = 0, n = s->n;
    MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    (void)total;
}

/* ---- the serial reference ------------------------------------------------- */

static prox_id_pairs serial_pairs(const prox_points *all, const prox_grid_desc *desc)
{
    if (rank != 0) /* only the root compares */
        return (prox_id_pairs){ 0 };
    prox_pair_buffer b;
    prox_pair_buffer_init(&b, NULL);
    prox_status st = prox_pairs(all, desc, all->count <= 3000 && !serial_grid ? PROX_ALGO_BRUTE : PROX_ALGO_GRID,
                                prox_sink_buffer(&b), NULL);
    CHECK(st == PROX_OK, "serial pairs: %s", prox_last_error());
    prox_id_pairs out = { malloc(((size_t)b.count + 1) * sizeof(prox_id_pair)), b.count,
                          b.count };
    for (int64_t k = 0; k < b.count; k++)
        out.pairs[k] = (prox_id_pair){ b.pairs[k].i, b.pairs[k].j };
    prox_pair_buffer_free(&b);
    return out;
}

static void expect_same_pairs(const prox_id_pairs *got, const prox_id_pairs *want,
                              const char *what)
{
    if (rank != 0)
        return;
    CHECK(got->count == want->count, "%s: %lld pairs, serial %lld", what,
          (long long)got->count, (long long)want->count);
    int64_t n = got->count < want->count ? got->count : want->count;
    for (int64_t k = 0; k < n; k++)
        if (got->pairs[k].a != want->pairs[k].a || got->pairs[k].b != want->pairs[k].b) {
            CHECK(false, "%s: pair %lld is (%lld %lld), serial (%lld %lld)", what, (long long)k,
                  (long long)got->pairs[k].a, (long long)got->pairs[k].b,
                  (long long)want->pairs[k].a, (long long)want->pairs[k].b);
            return;
        }
}

/* Lists of every point from the serial pairs: rows 0 .. n-1. */
static void expect_lists(const prox_id_lists *got, const prox_id_pairs *want, int64_t n,
                         const char *what)
{
    if (rank != 0)
        return;
    CHECK(got->rows == n, "%s: %lld rows, want %lld", what, (long long)got->rows, (long long)n);
    if (got->rows != n)
        return;
    int64_t *deg = calloc((size_t)n + 1, 8), *fill = calloc((size_t)n + 1, 8);
    for (int64_t k = 0; k < want->count; k++) {
        deg[want->pairs[k].a + 1]++;
        deg[want->pairs[k].b + 1]++;
    }
    for (int64_t r = 0; r < n; r++)
        deg[r + 1] += deg[r];
    int64_t *ids = malloc(((size_t)deg[n] + 1) * 8);
    for (int64_t k = 0; k < want->count; k++) { /* pairs sorted: rows come out ascending */
        int64_t a = want->pairs[k].a, b = want->pairs[k].b;
        ids[deg[a] + fill[a]++] = b;
        ids[deg[b] + fill[b]++] = a;
    }
    /* row b receives a's in ascending a, then its own (b, c) pairs: ascending too */
    bool same = true;
    for (int64_t r = 0; r < n && same; r++) {
        same = got->row_ids[r] == r && got->offsets[r + 1] - got->offsets[r] == deg[r + 1] - deg[r];
        for (int64_t k = 0; same && k < deg[r + 1] - deg[r]; k++)
            same = got->ids[got->offsets[r] + k] == ids[deg[r] + k];
        CHECK(same, "%s: row %lld differs from the serial lists", what, (long long)r);
    }
    free(deg);
    free(fill);
    free(ids);
}

typedef struct callback_state {
    const int64_t *ids;
    int64_t owned, calls, bad;
} callback_state;

static int count_pair(prox_index i, prox_index j, void *user)
{
    callback_state *s = user;
    s->calls++;
    s->bad += !(i < j && (int64_t)i < s->owned);
    return 0;
}

/* Every sink of the distributed pairs against the serial pairs. */
static void check_dist_pairs(prox_dist *d, const prox_id_pairs *want, int64_t n,
                             const char *what)
{
    char label[160];
    prox_id_pairs got = { 0 };
    prox_stats s;
    CHECK_OK(prox_dist_pairs_ids(d, prox_id_sink_buffer(&got), &s), what);
    int64_t mine_pairs = got.count;
    CHECK_OK(prox_id_pairs_gather(MPI_COMM_WORLD, 0, &got), "gather");
    snprintf(label, sizeof label, "%s (pairs)", what);
    expect_same_pairs(&got, want, label);
    prox_id_pairs_free(&got);

    int64_t total = 0;
    CHECK_OK(prox_dist_pairs(d, prox_sink_count(), &s), what);
    CHECK(s.pairs == mine_pairs, "%s: count %lld, buffer %lld", what, (long long)s.pairs,
          (long long)mine_pairs);
    MPI_Allreduce(&s.pairs, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == want->count || rank != 0, "%s: counted %lld, serial %lld", what,
          (long long)total, (long long)want->count);

    if (skip_lists) /* moving points: the other sinks every tenth step */
        return;
    callback_state cs = { prox_dist_ids(d), prox_dist_owned(d), 0, 0 };
    CHECK_OK(prox_dist_pairs(d, prox_sink_callback(count_pair, &cs), NULL), what);
    CHECK(cs.calls == mine_pairs && cs.bad == 0, "%s: callback %lld calls (%lld bad), want %lld",
          what, (long long)cs.calls, (long long)cs.bad, (long long)mine_pairs);

    prox_pair_buffer local;
    prox_pair_buffer_init(&local, NULL);
    CHECK_OK(prox_dist_pairs(d, prox_sink_buffer(&local), NULL), what);
    bool sorted = local.count == mine_pairs;
    for (int64_t k = 1; sorted && k < local.count; k++)
        sorted = local.pairs[k - 1].i < local.pairs[k].i ||
                 (local.pairs[k - 1].i == local.pairs[k].i &&
                  local.pairs[k - 1].j < local.pairs[k].j);
    CHECK(sorted, "%s: the local buffer is not sorted or has %lld pairs, not %lld", what,
          (long long)local.count, (long long)mine_pairs);
    prox_pair_buffer_free(&local);

    prox_id_lists lists = { 0 };
    CHECK_OK(prox_dist_pairs_ids(d, prox_id_sink_lists(&lists), NULL), what);
    CHECK_OK(prox_id_lists_gather(MPI_COMM_WORLD, 0, &lists), "gather lists");
    snprintf(label, sizeof label, "%s (lists)", what);
    expect_lists(&lists, want, n, label);
    prox_id_lists_free(&lists);
}

/* The whole pipeline on `all` (n points) spread as `how`. */
static void run_points(const char *what, const double *all, int64_t n, int dim,
                       prox_dist_desc desc, spread how)
{
    prox_points every = prox_points_f64(all, n, dim);
    prox_id_pairs want = serial_pairs(&every, &desc.grid);
    prox_dist *d = NULL;
    prox_status st = prox_dist_create(MPI_COMM_WORLD, &desc, &d);
    CHECK_OK(st, what);
    if (st != PROX_OK)
        return;
    local_set s = take(all, n, dim, dim, how);
    distribute(d, &s, true);
    prox_points own = prox_points_f64(s.xyz, s.n, dim);
    CHECK_OK(prox_dist_build(d, &own, s.ids), what);
    prox_dist_stats ds;
    prox_dist_get_stats(d, &ds);
    int64_t owned = ds.owned, total = 0;
    MPI_Allreduce(&owned, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total == n, "%s: %lld points owned over all ranks, want %lld", what, (long long)total,
          (long long)n);
    check_dist_pairs(d, &want, n, what);
    local_free(&s);
    prox_dist_destroy(d);
    prox_id_pairs_free(&want);
}

/* ---- workloads ----------------------------------------------------------- */

static prox_dist_desc points_desc(double radius)
{
    prox_dist_desc desc = prox_default_dist_desc();
    desc.grid.radius = radius;
    desc.grid.threads = 1;
    return desc;
}

static void test_w1(void)
{
    int64_t n = 6000;
    double *xyz = malloc((size_t)n * 3 * 8);
    prox_wl_sph3d(n, 1, xyz);
    prox_dist_desc desc = points_desc(prox_wl_sph3d_radius(n));
    run_points("W1 open, blocks", xyz, n, 3, desc, SPREAD_BLOCKS);
    run_points("W1 open, all on rank 0", xyz, n, 3, desc, SPREAD_ROOT);
    desc.grid.period[0] = desc.grid.period[1] = desc.grid.period[2] = 1;
    run_points("W1 periodic, stride", xyz, n, 3, desc, SPREAD_STRIDE);
    desc.grid.period[1] = 0; /* periodic along x and z only */
    run_points("W1 periodic x and z", xyz, n, 3, desc, SPREAD_BLOCKS);
    /* a wide radius: images reach across several regions */
    desc.grid.period[1] = 1;
    desc.grid.radius = 0.2;
    run_points("W1 periodic, r = 0.2", xyz, 1500, 3, desc, SPREAD_LAST);
    free(xyz);
}

static void test_w2(void)
{
    int64_t n = 8000;
    double *xy = malloc((size_t)n * 2 * 8);
    prox_wl_nns2d(n, 0, xy);
    prox_dist_desc desc = points_desc(prox_wl_nns2d_radius(n, 5));
    run_points("W2 k = 5", xy, n, 2, desc, SPREAD_STRIDE);
    desc.grid.period[0] = desc.grid.period[1] = 0x1p20;
    run_points("W2 periodic", xy, n, 2, desc, SPREAD_BLOCKS);
    free(xy);
}

/* Every point in one corner, with exact duplicates and points on the
 * radius: the cuts fall among equal coordinates. */
static void test_skewed(void)
{
    int64_t n = 3000;
    double *xyz = malloc((size_t)n * 3 * 8);
    prox_wl_sph3d(n, 7, xyz);
    for (int64_t i = 0; i < n * 3; i++)
        xyz[i] = 0.01 * xyz[i];
    for (int64_t i = 0; i < n / 3; i++) /* duplicates and a lattice at 0.001 */
        for (int k = 0; k < 3; k++)
            xyz[i * 3 + k] = i % 2 ? xyz[(i + 1) * 3 + k] : 0.001 * (double)((i * (k + 3)) % 7);
    prox_dist_desc desc = points_desc(0.001);
    run_points("skewed corner", xyz, n, 3, desc, SPREAD_ROOT);
    desc.grid.period[0] = desc.grid.period[1] = desc.grid.period[2] = 1;
    run_points("skewed corner, periodic", xyz, n, 3, desc, SPREAD_STRIDE);
    /* every point the same: one rank owns them all */
    for (int64_t i = 0; i < n * 3; i++)
        xyz[i] = 0.25;
    run_points("one position", xyz, 300, 3, points_desc(0.1), SPREAD_BLOCKS);
    free(xyz);
}

/* Pairs at the radius within a few ulps, many across the periodic faces
 * and the cuts: a search that misses a rounding error, or an image
 * decided by its shifted copy instead of the serial minimum image, fails. */
static void test_near_radius(void)
{
    int64_t base = 1500, n = 2 * base;
    double r = 0.0625 * (1 + 0x1p-20), *xyz = malloc((size_t)n * 3 * 8);
    prox_wl_rng rng = prox_wl_rng_seed(21);
    for (int64_t i = 0; i < base; i++) {
        int axis = (int)(i % 3);
        for (int k = 0; k < 3; k++) {
            double u = prox_wl_unit(&rng);
            xyz[3 * i + k] = k == axis && i % 2 ? u * r : u;   /* half of them by a face */
        }
        memcpy(xyz + 3 * (base + i), xyz + 3 * i, 3 * 8);
        double off = r + (double)((int)(i % 9) - 4) * 0x1p-52;  /* r and a few ulps around */
        double x = xyz[3 * i + axis] - off;                     /* the partner below: wraps */
        xyz[3 * (base + i) + axis] = x < 0 ? x + 1 : x;
    }
    prox_dist_desc desc = points_desc(r);
    run_points("near the radius, open", xyz, n, 3, desc, SPREAD_STRIDE);
    desc.grid.period[0] = desc.grid.period[1] = desc.grid.period[2] = 1;
    run_points("near the radius, periodic", xyz, n, 3, desc, SPREAD_BLOCKS);
    desc.skin = 0.5 * r;
    run_points("near the radius, periodic, skin", xyz, n, 3, desc, SPREAD_ROOT);
    free(xyz);
}

/* Slabs along x given by the caller; with `crowd`, every box but the
 * last rank's is far away, so that the other ranks own nothing. */
static double *slab_boxes(bool crowd)
{
    double *b = malloc((size_t)size * 6 * 8);
    for (int r = 0; r < size; r++) {
        double lo = (double)r / size, hi = (double)(r + 1) / size;
        if (crowd) {
            lo = r == size - 1 ? -1e9 : 1e6 + r;
            hi = r == size - 1 ? 1e6 : 1e6 + r + 1;
        }
        double box[6] = { lo, -1e9, -1e9, hi, 1e9, 1e9 };
        if (!crowd && r == 0)
            box[0] = -1e9;
        if (!crowd && r == size - 1)
            box[3] = 1e9;
        memcpy(b + 6 * r, box, sizeof box);
    }
    return b;
}

static void test_given_partition(void)
{
    int64_t n = 5000;
    double *xyz = malloc((size_t)n * 3 * 8);
    prox_wl_sph3d(n, 3, xyz);
    prox_dist_desc desc = points_desc(prox_wl_sph3d_radius(n));
    desc.partition = PROX_PARTITION_BOXES;
    double *slabs = slab_boxes(false);
    desc.boxes = slabs;
    run_points("given slabs", xyz, n, 3, desc, SPREAD_STRIDE);
    free(slabs);
    slabs = slab_boxes(true);
    desc.boxes = slabs;
    run_points("given boxes, ranks with nothing", xyz, n, 3, desc, SPREAD_BLOCKS);
    free(slabs);
    /* periodic slabs tiling [0, 1) */
    double *tiles = malloc((size_t)size * 6 * 8);
    for (int r = 0; r < size; r++) {
        double box[6] = { (double)r / size, 0, 0, (double)(r + 1) / size, 1, 1 };
        memcpy(tiles + 6 * r, box, sizeof box);
    }
    desc.boxes = tiles;
    desc.grid.period[0] = desc.grid.period[1] = desc.grid.period[2] = 1;
    run_points("given periodic slabs", xyz, n, 3, desc, SPREAD_ROOT);
    free(tiles);
    /* no points at all */
    desc = points_desc(0.1);
    run_points("no points", xyz, 0, 3, desc, SPREAD_BLOCKS);
    run_points("one point", xyz, 1, 3, desc, SPREAD_LAST);
    free(xyz);
}

/* ---- moving points ------------------------------------------------------- */

/* Point i at step t: x0 + t * v (unwrapped; the library wraps). */
static void positions_at(const double *x0, const double *v, int64_t n, int t, double *out)
{
    for (int64_t i = 0; i < n * 3; i++)
        out[i] = x0[i] + t * v[i];
}

static void run_moving(const char *what, double skin, bool periodic)
{
    int64_t n = 2500;
    int steps = 50;
    double *x0 = malloc((size_t)n * 3 * 8), *v = malloc((size_t)n * 3 * 8),
           *now = malloc((size_t)n * 3 * 8);
    prox_wl_sph3d(n, 11, x0);
    double r = prox_wl_sph3d_radius(n);
    prox_wl_rng rng = prox_wl_rng_seed(5);
    for (int64_t i = 0; i < n * 3; i++)
        v[i] = prox_wl_uniform(&rng, -0.04, 0.04) * r;
    prox_dist_desc desc = points_desc(r);
    desc.skin = skin;
    if (periodic)
        desc.grid.period[0] = desc.grid.period[1] = desc.grid.period[2] = 1;
    prox_dist *d = NULL;
    CHECK_OK(prox_dist_create(MPI_COMM_WORLD, &desc, &d), what);
    local_set s = take(x0, n, 3, 3, SPREAD_BLOCKS);
    s.payload = malloc(((size_t)s.n + 1) * 3 * 8);
    for (int64_t i = 0; i < s.n; i++)
        memcpy(s.payload + 3 * i, v + 3 * s.ids[i], 3 * 8);
    distribute(d, &s, true);
    prox_points own = prox_points_f64(s.xyz, s.n, 3);
    CHECK_OK(prox_dist_build(d, &own, s.ids), what);
    int builds = 1, built_at = 0;
    for (int t = 1; t <= steps && failures == 0; t++) {
        /* the rule, from every point's path: some point moved more than
         * skin / 2 since the last build */
        double far = 0;
        for (int64_t i = 0; i < n; i++) {
            double s2 = 0;
            for (int k = 0; k < 3; k++) {
                double a = x0[3 * i + k] + t * v[3 * i + k];
                double b = x0[3 * i + k] + built_at * v[3 * i + k];
                if (periodic)
                    a -= floor(a), b -= floor(b);
                double dx = a - b;
                if (periodic)
                    dx = dx > 0.5 ? dx - 1 : dx < -0.5 ? dx + 1 : dx;
                s2 += dx * dx;
            }
            far = fmax(far, s2);
        }
        bool expect = far > 0.25 * skin * skin;
        for (int64_t i = 0; i < s.n; i++) /* the caller's integrator: its velocities moved along */
            for (int k = 0; k < 3; k++)
                s.xyz[3 * i + k] = x0[3 * s.ids[i] + k] + t * s.payload[3 * i + k];
        own = prox_points_f64(s.xyz, s.n, 3);
        bool again = false;
        CHECK_OK(prox_dist_refresh(d, &own, &again), what);
        if (fabs(sqrt(far) - 0.5 * skin) > 1e-9 * skin)
            CHECK(again == expect, "%s, step %d: must_migrate %d, the rule says %d", what, t,
                  again, expect);
        if (again) {
            built_at = t;
            distribute(d, &s, t % 10 == 0); /* a new partition now and then */
            own = prox_points_f64(s.xyz, s.n, 3);
            CHECK_OK(prox_dist_build(d, &own, s.ids), what);
            builds++;
        }
        positions_at(x0, v, n, t, now);
        prox_points every = prox_points_f64(now, n, 3);
        prox_id_pairs want = serial_pairs(&every, &desc.grid);
        char label[96];
        snprintf(label, sizeof label, "%s, step %d", what, t);
        skip_lists = t % 10 != 0;
        check_dist_pairs(d, &want, n, label);
        skip_lists = false;
        prox_id_pairs_free(&want);
    }
    prox_dist_stats ds;
    prox_dist_get_stats(d, &ds);
    if (skin > 0)
        CHECK(builds < steps / 2 && ds.refreshes > steps / 2,
              "%s: %d builds, %lld refreshes over %d steps", what, builds,
              (long long)ds.refreshes, steps);
    else
        CHECK(builds == steps + 1, "%s: %d builds over %d steps without skin", what, builds,
              steps);
    CHECK(ds.exchange_s > 0 && ds.compute_s > 0, "%s: stats not kept", what);
    local_free(&s);
    prox_dist_destroy(d);
    free(x0);
    free(v);
    free(now);
}

static void test_moving(void)
{
    serial_grid = true;
    run_moving("moving, skin, periodic", 0.5 * prox_wl_sph3d_radius(2500), true);
    run_moving("moving, no skin, periodic", 0, true);
    run_moving("moving, skin, open", 0.5 * prox_wl_sph3d_radius(2500), false);
    serial_grid = false;
}

/* ---- boxes --------------------------------------------------------------- */

static double *sphere_boxes(int64_t n, double d, uint64_t seed)
{
    double *c = malloc((size_t)n * 3 * 8), *b = malloc((size_t)n * 6 * 8);
    prox_wl_spheres3d(n, d, seed, c);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            b[6 * i + k] = c[3 * i + k] - 1;
            b[6 * i + 3 + k] = c[3 * i + k] + 1;
        }
    free(c);
    return b;
}

static void run_broad(const char *what, const double *boxes, int64_t n, const double *queries,
                      int64_t nq, prox_dist_desc desc, spread how)
{
    prox_boxes every = prox_boxes_f64(boxes, n, 3);
    prox_broad *serial = NULL;
    prox_pair_buffer b;
    prox_pair_buffer_init(&b, NULL);
    CHECK(prox_broad_create(&desc.broad, &serial) == PROX_OK, "serial broad");
    CHECK(prox_broad_build(serial, &every) == PROX_OK, "serial build");
    CHECK(prox_broad_pairs(serial, prox_sink_buffer(&b), NULL) == PROX_OK, "serial pairs");
    prox_id_pairs want = { malloc(((size_t)b.count + 1) * sizeof(prox_id_pair)), b.count, 0 };
    for (int64_t k = 0; k < b.count; k++)
        want.pairs[k] = (prox_id_pair){ b.pairs[k].i, b.pairs[k].j };

    prox_dist_broad *db = NULL;
    CHECK_OK(prox_dist_broad_create(MPI_COMM_WORLD, &desc, &db), what);
    local_set s = take(boxes, n, 3, 6, how);
    prox_boxes mine_boxes = prox_boxes_f64(s.xyz, s.n, 3);
    CHECK_OK(prox_dist_broad_build(db, &mine_boxes, s.ids), what);
    prox_id_pairs got = { 0 };
    prox_stats st;
    CHECK_OK(prox_dist_broad_pairs(db, prox_id_sink_buffer(&got), &st), what);
    int64_t count = got.count, total = 0;
    CHECK_OK(prox_id_pairs_gather(MPI_COMM_WORLD, 0, &got), "gather");
    char label[128];
    snprintf(label, sizeof label, "%s (box pairs)", what);
    expect_same_pairs(&got, &want, label);
    CHECK_OK(prox_dist_broad_pairs(db, prox_id_sink_count(), &st), what);
    MPI_Allreduce(&st.pairs, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK(st.pairs == count && (rank != 0 || total == want.count), "%s: counts", what);
    prox_id_pairs_free(&got);

    /* queries spread by stride: local query k is global query k * size + rank */
    local_set q = take(queries, nq, 3, 6, SPREAD_STRIDE);
    prox_boxes qv = prox_boxes_f64(q.xyz, q.n, 3);
    prox_id_lists hits = { 0 };
    CHECK_OK(prox_dist_broad_query(db, &qv, prox_id_sink_lists(&hits), NULL), what);
    prox_pair_buffer sq;
    prox_pair_buffer_init(&sq, NULL);
    CHECK(prox_broad_query_boxes(serial, &qv, prox_sink_buffer(&sq), NULL) == PROX_OK,
          "serial query");
    bool same = hits.rows == q.n && hits.offsets[q.n] == sq.count;
    for (int64_t k = 0; same && k < sq.count; k++)
        same = hits.ids[k] == sq.pairs[k].j && k >= hits.offsets[sq.pairs[k].i] &&
               k < hits.offsets[sq.pairs[k].i + 1];
    CHECK(same, "%s: query hits differ from the serial query (%lld against %lld)", what,
          (long long)(hits.rows ? hits.offsets[hits.rows] : 0), (long long)sq.count);
    prox_id_lists_free(&hits);
    prox_pair_buffer_free(&sq);
    local_free(&q);

    local_free(&s);
    prox_dist_broad_destroy(db);
    prox_broad_destroy(serial);
    prox_pair_buffer_free(&b);
    prox_id_pairs_free(&want);
}

/* Unit boxes on an integer lattice (every neighbour touches) and slabs
 * cut at integers: touching pairs straddle every cut. */
static void test_touching_boxes(void)
{
    int side = 9;
    int64_t n = (int64_t)side * side * side;
    double *b = malloc((size_t)n * 6 * 8);
    for (int64_t i = 0; i < n; i++) {
        double c[3] = { (double)(i % side), (double)(i / side % side), (double)(i / side / side) };
        for (int k = 0; k < 3; k++) {
            b[6 * i + k] = c[k];
            b[6 * i + 3 + k] = c[k] + 1;
        }
    }
    prox_dist_desc desc = prox_default_dist_desc();
    desc.broad.threads = 1;
    run_broad("touching lattice, RCB", b, n, b, n, desc, SPREAD_STRIDE);
    double *slabs = malloc((size_t)size * 6 * 8);
    for (int r = 0; r < size; r++) {
        double box[6] = { r == 0 ? -1e9 : 1 + 2 * r, -1e9, -1e9,
                          r == size - 1 ? 1e9 : 3 + 2 * r, 1e9, 1e9 };
        memcpy(slabs + 6 * r, box, sizeof box);
    }
    desc.partition = PROX_PARTITION_BOXES;
    desc.boxes = slabs;
    run_broad("touching lattice, integer slabs", b, n, b, n, desc, SPREAD_BLOCKS);
    free(slabs);
    free(b);
}

static void test_w3(void)
{
    int64_t n = 4000, nq = 1500;
    double *boxes = sphere_boxes(n, 0.1, 3), *queries = sphere_boxes(nq, 0.05, 9);
    prox_dist_desc desc = prox_default_dist_desc();
    desc.broad.threads = 1;
    run_broad("W3 d = 0.1", boxes, n, queries, nq, desc, SPREAD_BLOCKS);
    run_broad("W3 on the last rank", boxes, n, queries, nq, desc, SPREAD_LAST);
    desc.broad.algo = PROX_BROAD_KDTREE;
    double side = prox_wl_spheres3d_side(n, 0.1);
    double *slabs = malloc((size_t)size * 6 * 8);
    for (int r = 0; r < size; r++) {
        double box[6] = { -1e9, -1e9, r == 0 ? -1e9 : side * r / size,
                          1e9,  1e9,  r == size - 1 ? 1e9 : side * (r + 1) / size };
        memcpy(slabs + 6 * r, box, sizeof box);
    }
    desc.partition = PROX_PARTITION_BOXES;
    desc.boxes = slabs;
    run_broad("W3 kdtree, given slabs along z", boxes, n, queries, nq, desc, SPREAD_STRIDE);
    free(slabs);
    free(boxes);
    free(queries);
}

/* ---- errors every rank agrees on ----------------------------------------- */

static void test_errors(void)
{
    prox_dist *d = NULL;
    prox_dist_desc desc = points_desc(0.1);
    desc.skin = 0.05;
    desc.halo = 0.12;
    prox_status st = prox_dist_create(MPI_COMM_WORLD, &desc, &d);
    CHECK(st == PROX_ERR_INVALID && d == NULL && strstr(prox_dist_last_error(), "halo"),
          "a halo below radius + skin: %s (%s)", prox_status_string(st), prox_dist_last_error());
    desc.halo = 0.15;
    st = prox_dist_create(MPI_COMM_WORLD, &desc, &d);
    CHECK_OK(st, "halo = radius + skin");
    if (st != PROX_OK)
        return;
    double xyz[6] = { 0.1, 0.2, 0.3, 0.4, 0.5, 0.6 };
    if (rank == size - 1)
        xyz[4] = NAN;
    prox_points pts = prox_points_f64(xyz, 2, 3);
    st = prox_dist_partition(d, &pts);
    CHECK(st == PROX_ERR_DATA, "a NaN on rank %d: %s on rank %d (%s)", size - 1,
          prox_status_string(st), rank, prox_dist_last_error());
    xyz[4] = 0.5;
    CHECK_OK(prox_dist_partition(d, &pts), "partition");
    int64_t ids[2] = { 2 * rank, 2 * rank + 1 };
    st = prox_dist_build(d, &pts, ids); /* every rank holds the same points: not migrated */
    CHECK(size == 1 ? st == PROX_OK : st == PROX_ERR_INVALID, "build without migration: %s",
          prox_status_string(st));
    bool again;
    prox_points two_d = prox_points_f64(xyz, 3, 2);
    st = prox_dist_refresh(d, &two_d, &again);
    CHECK(st == PROX_ERR_INVALID, "refresh with other points: %s", prox_status_string(st));
    prox_dist_destroy(d);
    /* a box in no rank's region of a caller's partition with a gap */
    double *regions = malloc((size_t)size * 6 * 8);
    for (int r = 0; r < size; r++) {
        double box[6] = { r, -1e9, -1e9, r + 1, 1e9, 1e9 };
        memcpy(regions + 6 * r, box, sizeof box);
    }
    prox_dist_desc bdesc = prox_default_dist_desc();
    bdesc.partition = PROX_PARTITION_BOXES;
    bdesc.boxes = regions;
    prox_dist_broad *db = NULL;
    CHECK_OK(prox_dist_broad_create(MPI_COMM_WORLD, &bdesc, &db), "broad create");
    double bounds[6] = { 0.25, 0, 0, 0.5, 1, 1 };
    if (rank == size - 1)
        bounds[0] = -5, bounds[3] = -4;
    prox_boxes one = prox_boxes_f64(bounds, 1, 3);
    int64_t id = rank;
    st = prox_dist_broad_build(db, &one, &id);
    CHECK(st == PROX_ERR_DATA, "a box in no region: %s (%s)", prox_status_string(st),
          prox_dist_last_error());
    prox_dist_broad_destroy(db);
    free(regions);
    desc = points_desc(0.3);
    desc.grid.period[0] = desc.grid.period[1] = desc.grid.period[2] = 0.5;
    st = prox_dist_create(MPI_COMM_WORLD, &desc, &d);
    CHECK(st == PROX_ERR_INVALID, "a halo over half the period: %s", prox_status_string(st));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    struct { const char *name; void (*fn)(void); } tests[] = {
        { "w1", test_w1 },         { "w2", test_w2 },       { "skewed", test_skewed },
        { "given", test_given_partition }, { "w3", test_w3 }, { "moving", test_moving },
        { "errors", test_errors }, { "near", test_near_radius },
        { "touching", test_touching_boxes },
    };
    const char *only = argc > 1 ? argv[1] : NULL;
    for (size_t t = 0; t < sizeof tests / sizeof tests[0]; t++) {
        if (only && strcmp(only, tests[t].name) != 0)
            continue;
        int before = failures;
        double t0 = MPI_Wtime();
        tests[t].fn();
        int bad = failures - before, any = 0;
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%-8s %s (%d ranks, %.2f s)\n", tests[t].name, any ? "FAILED" : "ok", size,
                   MPI_Wtime() - t0);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();
    return all ? 1 : 0;
}

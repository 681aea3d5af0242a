/* cell_points.c: prox_cell_pairs on the cases of bench/cell_bench.py, from
 * C: a batch of small cells (cubic Si 2x2x2, primitive fcc Cu 4x4x4, 64
 * atoms, rattled, cutoff 5, "ijdDS") or W1's points mapped into the
 * triclinic cell of volume 1 (sorted half pairs), and W1 in the periodic
 * unit cube through prox_pairs (the orthogonal reference). One thread;
 * the small cells' lists are full, as prox.neighbor_lists returns them.
 * Prints the seconds per call, the pairs and a hash of every output array
 * (the same hash is the same output, bit for bit), so that it serves both
 * callgrind (instruction counts of variants) and wall time:
 *
 *   PROX_SIMD=avx2 valgrind --tool=callgrind build/bench_cell_points si 100
 *   build/bench_cell_points w1tri 1000000 5
 *
 * Arguments: CASE (si | cu | w1tri | w1orth | w1trifull) N_OR_COUNT [RUNS]:
 * for si and cu the number of structures, for w1* the number of points;
 * w1trifull asks for the full list and every geometry array. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prox/prox.h"

static uint64_t mix_state = 0x9e3779b97f4a7c15ULL;

static double uniform(void)
{
    mix_state ^= mix_state << 13;
    mix_state ^= mix_state >> 7;
    mix_state ^= mix_state << 17;
    return (double)(mix_state >> 11) * 0x1p-53;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t k = 0; c && k < n; k++)
        h = (h ^ c[k]) * 0x100000001b3ULL;
    return h;
}

static uint64_t hash_geometry(uint64_t h, const prox_geometry *g)
{
    size_t n = (size_t)g->count, dim = (size_t)g->dim;
    h = hash_bytes(h, g->i, n * sizeof *g->i);
    h = hash_bytes(h, g->j, n * sizeof *g->j);
    h = hash_bytes(h, g->d, n * sizeof *g->d);
    h = hash_bytes(h, g->D, n * dim * sizeof *g->D);
    return hash_bytes(h, g->S, n * dim * sizeof *g->S);
}

/* A 64-atom structure: `basis` fractional sites repeated `rep` times along
 * each row of `unit`, rattled by 0.05. */
static void small_structure(const double unit[3][3], const double (*basis)[3], int sites,
                            int rep, double cell[3][3], double *x)
{
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            cell[r][k] = unit[r][k] * rep;
    int at = 0;
    for (int a = 0; a < rep; a++)
        for (int b = 0; b < rep; b++)
            for (int c = 0; c < rep; c++)
                for (int s = 0; s < sites; s++, at++) {
                    double f[3] = {a + basis[s][0], b + basis[s][1], c + basis[s][2]};
                    for (int k = 0; k < 3; k++)
                        x[3 * at + k] = f[0] * unit[0][k] + f[1] * unit[1][k] +
                                        f[2] * unit[2][k] + 0.05 * (2 * uniform() - 1);
                }
}

static int run_small(bool si, int count, int runs)
{
    static const double diamond[8][3] = {{0, 0, 0},          {0, .5, .5},        {.5, 0, .5},
                                         {.5, .5, 0},        {.25, .25, .25},    {.25, .75, .75},
                                         {.75, .25, .75},    {.75, .75, .25}};
    static const double one[1][3] = {{0, 0, 0}};
    const double si_unit[3][3] = {{5.43, 0, 0}, {0, 5.43, 0}, {0, 0, 5.43}};
    const double cu_unit[3][3] = {{0, 1.8, 1.8}, {1.8, 0, 1.8}, {1.8, 1.8, 0}};
    double(*cells)[3][3] = malloc((size_t)count * sizeof *cells);
    double *x = malloc((size_t)count * 64 * 3 * sizeof *x);
    for (int s = 0; s < count; s++)
        small_structure(si ? si_unit : cu_unit, si ? diamond : one, si ? 8 : 1, si ? 2 : 4,
                        cells[s], x + (size_t)s * 192);
    prox_cell_desc desc = prox_default_cell_desc();
    desc.cutoff = 5.0;
    desc.pbc[0] = desc.pbc[1] = desc.pbc[2] = true;
    desc.full = true; /* as prox.neighbor_lists returns them (ASE's lists) */
    desc.threads = 1;
    uint64_t h = 0xcbf29ce484222325ULL;
    int64_t pairs = 0;
    double best = INFINITY;
    for (int r = 0; r < runs; r++) {
        double t = now();
        for (int s = 0; s < count; s++) {
            prox_points p = prox_points_f64(x + (size_t)s * 192, 64, 3);
            memcpy(desc.cell, cells[s], sizeof desc.cell);
            prox_geometry g;
            prox_geometry_init(&g, PROX_GEOMETRY_ALL, NULL);
            if (prox_cell_pairs(&p, &desc, &g, NULL)) {
                fprintf(stderr, "cell_points: %s\n", prox_last_error());
                return 1;
            }
            if (r == 0) {
                pairs += g.count;
                h = hash_geometry(h, &g);
            }
            prox_geometry_free(&g);
        }
        t = now() - t;
        best = t < best ? t : best;
    }
    printf("%s: %d structures, %lld pairs, hash %016llx, best %.2f us per structure\n",
           si ? "si" : "cu", count, (long long)pairs, (unsigned long long)h, best / count * 1e6);
    free(cells);
    free(x);
    return 0;
}

static int run_w1(const char *name, int64_t n, int runs)
{
    double *x = malloc((size_t)n * 3 * sizeof *x);
    for (int64_t t = 0; t < 3 * n; t++)
        x[t] = uniform();
    double r = cbrt(30 / (n * 4 / 3.0 * 3.14159265358979323846));
    bool orth = strcmp(name, "w1orth") == 0;
    double m[3][3] = {{1, 0, 0}, {0.3, 0.95, 0}, {0.2, 0.25, 0.9}};
    double scale = 1 / cbrt(0.95 * 0.9);
    for (int a = 0; a < 3; a++)
        for (int k = 0; k < 3; k++)
            m[a][k] *= scale;
    double *xt = malloc((size_t)n * 3 * sizeof *xt);
    for (int64_t p = 0; p < n; p++)
        for (int k = 0; k < 3; k++)
            xt[3 * p + k] = x[3 * p] * m[0][k] + x[3 * p + 1] * m[1][k] + x[3 * p + 2] * m[2][k];
    uint64_t h = 0xcbf29ce484222325ULL;
    int64_t pairs = 0;
    double best = INFINITY;
    for (int run = 0; run < runs; run++) {
        double t = now();
        if (orth) {
            prox_grid_desc d = prox_default_grid_desc();
            d.radius = r;
            d.threads = 1;
            d.period[0] = d.period[1] = d.period[2] = 1.0;
            prox_points p = prox_points_f64(x, n, 3);
            prox_pair_buffer b;
            prox_pair_buffer_init(&b, NULL);
            if (prox_pairs(&p, &d, PROX_ALGO_GRID, prox_sink_buffer(&b), NULL)) {
                fprintf(stderr, "cell_points: %s\n", prox_last_error());
                return 1;
            }
            pairs = b.count;
            prox_pair_buffer_free(&b);
        } else {
            prox_cell_desc d = prox_default_cell_desc();
            d.cutoff = r;
            d.threads = 1;
            d.full = strcmp(name, "w1trifull") == 0;
            d.pbc[0] = d.pbc[1] = d.pbc[2] = true;
            memcpy(d.cell, m, sizeof m);
            prox_points p = prox_points_f64(xt, n, 3);
            prox_geometry g;
            prox_geometry_init(&g, d.full ? PROX_GEOMETRY_ALL : PROX_GEOMETRY_I | PROX_GEOMETRY_J, NULL);
            if (prox_cell_pairs(&p, &d, &g, NULL)) {
                fprintf(stderr, "cell_points: %s\n", prox_last_error());
                return 1;
            }
            pairs = g.count;
            if (run == 0)
                h = hash_geometry(h, &g);
            prox_geometry_free(&g);
        }
        t = now() - t;
        best = t < best ? t : best;
    }
    printf("%s: %lld points, %lld pairs, hash %016llx, best %.4f s\n", name, (long long)n,
           (long long)pairs, (unsigned long long)h, best);
    free(x);
    free(xt);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s si|cu|w1tri|w1trifull|w1orth N_OR_COUNT [RUNS]\n", argv[0]);
        return 2;
    }
    int64_t n = (int64_t)atof(argv[2]);
    int runs = argc > 3 ? atoi(argv[3]) : 1;
    if (n < 1 || runs < 1) {
        fprintf(stderr, "%s: a bad count or RUNS\n", argv[0]);
        return 2;
    }
    if (!strcmp(argv[1], "si") || !strcmp(argv[1], "cu"))
        return run_small(argv[1][0] == 's', (int)n, runs);
    return run_w1(argv[1], n, runs);
}

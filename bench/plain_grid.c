/* plain_grid.c: the floor every grid figure is compared against. A plain
 * uniform grid (cells of r over the points' bounds, a counting sort into
 * cells, the half stencil, scalar doubles) counts the pairs within r, and
 * prox counts the same pairs on the same points, alternately, RUNS rounds
 * each; prints both medians, their ratio and the SIMD level prox ran.
 *
 *   build/prox gen sph3d -o /tmp/w1.f64
 *   build/bench_plain_grid /tmp/w1.f64 3 RADIUS [RUNS]
 *
 * FILE: raw little-endian doubles, packed points of DIM (2 or 3). prox runs
 * with its defaults (prox_pairs, PROX_ALGO_GRID, one thread); PROX_SIMD
 * forces its level. The two counts must agree (exit 1 otherwise). */
#include <math.h>
#include <string.h>

#include "ab_driver.h"

typedef struct plain_grid {
    int64_t n, ncell[3], cells;
    double lo[3], inv;
    uint32_t *start; /* cells + 1 */
    double *xyz;     /* points in cell order, packed */
} plain_grid;

static int64_t axis_cell(const plain_grid *g, double v, int k)
{
    int64_t c = (int64_t)((v - g->lo[k]) * g->inv);
    return c < g->ncell[k] ? c : g->ncell[k] - 1;
}

static int64_t cell_of(const plain_grid *g, const double *p, int dim)
{
    int64_t c = 0;
    for (int k = dim - 1; k >= 0; k--)
        c = c * g->ncell[k] + axis_cell(g, p[k], k);
    return c;
}

static void plain_build(plain_grid *g, const double *p, int64_t n, int dim, double r)
{
    g->n = n;
    g->inv = 1.0 / r;
    g->cells = 1;
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t i = 0; k < dim && i < n; i++) {
            lo = fmin(lo, p[i * dim + k]);
            hi = fmax(hi, p[i * dim + k]);
        }
        g->lo[k] = k < dim ? lo : 0.0;
        g->ncell[k] = k < dim ? (int64_t)((hi - lo) * g->inv) + 1 : 1;
        g->cells *= g->ncell[k];
    }
    int64_t *key = malloc((size_t)n * sizeof *key);
    g->start = calloc((size_t)g->cells + 1, sizeof *g->start);
    g->xyz = malloc((size_t)n * (size_t)dim * sizeof *g->xyz);
    for (int64_t i = 0; i < n; i++)
        g->start[(key[i] = cell_of(g, p + i * dim, dim)) + 1]++;
    for (int64_t c = 0; c < g->cells; c++)
        g->start[c + 1] += g->start[c];
    uint32_t *fill = malloc((size_t)g->cells * sizeof *fill);
    memcpy(fill, g->start, (size_t)g->cells * sizeof *fill);
    for (int64_t i = 0; i < n; i++)
        memcpy(g->xyz + (int64_t)fill[key[i]]++ * dim, p + i * dim, (size_t)dim * sizeof *p);
    free(fill);
    free(key);
}

/* Pairs within r: each cell against itself and its forward half stencil. */
static int64_t plain_count(const plain_grid *g, int dim, double r)
{
    const double r2 = r * r;
    int64_t count = 0;
    int zs = dim == 3 ? 1 : 0;
    for (int64_t cz = 0; cz < g->ncell[2]; cz++)
        for (int64_t cy = 0; cy < g->ncell[1]; cy++)
            for (int64_t cx = 0; cx < g->ncell[0]; cx++) {
                int64_t c = (cz * g->ncell[1] + cy) * g->ncell[0] + cx;
                for (int dz = 0; dz <= zs; dz++)
                    for (int dy = dz ? -1 : 0; dy <= 1; dy++)
                        for (int dx = (dz || dy) ? -1 : 0; dx <= 1; dx++) {
                            int64_t x = cx + dx, y = cy + dy, z = cz + dz;
                            if (x < 0 || y < 0 || x >= g->ncell[0] || y >= g->ncell[1] ||
                                z >= g->ncell[2])
                                continue;
                            int64_t d = (z * g->ncell[1] + y) * g->ncell[0] + x;
                            bool same = d == c;
                            for (uint32_t i = g->start[c]; i < g->start[c + 1]; i++) {
                                const double *a = g->xyz + (int64_t)i * dim;
                                for (uint32_t j = same ? i + 1 : g->start[d]; j < g->start[d + 1]; j++) {
                                    const double *b = g->xyz + (int64_t)j * dim;
                                    double ex = a[0] - b[0], ey = a[1] - b[1];
                                    double ez = dim == 3 ? a[2] - b[2] : 0.0;
                                    count += ex * ex + ey * ey + ez * ez <= r2;
                                }
                            }
                        }
            }
    return count;
}

static void plain_free(plain_grid *g)
{
    free(g->start);
    free(g->xyz);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *t, int runs)
{
    qsort(t, (size_t)runs, sizeof *t, by_value);
    return runs % 2 ? t[runs / 2] : 0.5 * (t[runs / 2 - 1] + t[runs / 2]);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s FILE.f64 DIM RADIUS [RUNS]\n", argv[0]);
        return 2;
    }
    int dim = atoi(argv[2]), runs = argc > 4 ? atoi(argv[4]) : 5;
    double r = atof(argv[3]);
    int64_t values;
    double *p = ab_read_doubles(argv[1], &values);
    if (!p || (dim != 2 && dim != 3) || runs < 1 || runs > 99 || !(r > 0)) {
        fprintf(stderr, "%s: bad arguments or unreadable %s\n", argv[0], argv[1]);
        return 2;
    }
    int64_t n = values / dim;
    prox_points pts = prox_points_f64(p, n, dim);
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = r;
    desc.threads = 1;
    double plain_s[99], prox_s[99];
    int64_t plain_pairs = 0, prox_pairs_found = 0;
    prox_stats stats = {0};
    for (int k = 0; k < runs; k++) {
        double t0 = ab_now();
        plain_grid g = {0};
        plain_build(&g, p, n, dim, r);
        plain_pairs = plain_count(&g, dim, r);
        plain_free(&g);
        double t1 = ab_now();
        if (prox_pairs(&pts, &desc, PROX_ALGO_GRID, prox_sink_count(), &stats) != PROX_OK) {
            fprintf(stderr, "%s: %s\n", argv[0], prox_last_error());
            return 1;
        }
        double t2 = ab_now();
        plain_s[k] = t1 - t0;
        prox_s[k] = t2 - t1;
        prox_pairs_found = stats.pairs;
    }
    double a = median_of(plain_s, runs), b = median_of(prox_s, runs);
    printf("n=%lld dim=%d radius=%.17g runs=%d simd=%s method=%s\n", (long long)n, dim, r, runs,
           prox_simd_level(), stats.method ? stats.method : "-");
    printf("plain grid count: %.4f s (median), %lld pairs\n", a, (long long)plain_pairs);
    printf("prox count:       %.4f s (median), %lld pairs\n", b, (long long)prox_pairs_found);
    printf("prox / plain: %.3f\n", b / a);
    free(p);
    return plain_pairs == prox_pairs_found ? 0 : 1;
}

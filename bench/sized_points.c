/* sized_points.c: particles of different sizes (include/prox/sizes.h) on
 * W7 (docs/workloads.md) and its two comparisons, one thread, medians of
 * RUNS runs of the one-shot prox_sized_pairs:
 *
 *   bench_sized_points w7 N SEED OUT.f64      write W7: x, y, z, r per sphere
 *   bench_sized_points contacts FILE.f64 RUNS  W7's contacts (count, buffer)
 *   bench_sized_points equal N RUNS           W1 at equal radii r/2 through
 *                                             the sized path vs prox_pairs at r
 *   bench_sized_points spread N RUNS          radii over 1:100 vs 1:2 at the
 *                                             same expected number of contacts
 *   bench_sized_points moving FILE.f64 STEPS  W7 moving (every sphere up to
 *                                             0.05 an axis a step): seconds a
 *                                             step of a sized skin list (skin
 *                                             1), of a kept sized grid (update
 *                                             and pairs) and of
 *                                             prox_sized_pairs each step
 *
 * bench/sizes.sh runs them with CGAL's row beside (bench/peers). */
#include <math.h>
#include <string.h>

#include "ab_driver.h"

#define PI 3.14159265358979323846

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *state)
{
    return (double)(splitmix(state) >> 11) * 0x1.0p-53;
}

/* W7: radii lo * (hi/lo)^u, then the cube's side for volume fraction phi,
 * then the centres uniform in it. xyzr: 4 doubles per sphere. */
static void polydisperse(double *xyzr, int64_t n, double lo, double hi, double phi, double side,
                         uint64_t seed)
{
    uint64_t s = seed;
    double volume = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = lo * pow(hi / lo, uniform(&s));
        xyzr[4 * i + 3] = r;
        volume += 4.0 / 3.0 * PI * r * r * r;
    }
    double L = side > 0 ? side : cbrt(volume / phi);
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            xyzr[4 * i + k] = L * uniform(&s);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median seconds of `runs` one-shot calls over points p with sizes z
 * (NULL: prox_pairs at `radius`); *pairs, *method and the candidates
 * tested (last_candidates) of the last. */
static int64_t last_candidates;

static double median_of(prox_points p, const prox_sizes *z, double radius, prox_sink_kind kind,
                        int runs, int64_t *pairs, const char **method)
{
    prox_grid_desc d = prox_default_grid_desc();
    d.threads = 1;
    d.radius = radius;
    double t[64];
    for (int r = 0; r < runs && r < 64; r++) {
        prox_pair_buffer b;
        prox_pair_buffer_init(&b, NULL);
        prox_stats st;
        double t0 = ab_now();
        prox_sink sink = kind == PROX_SINK_BUFFER ? prox_sink_unsorted(prox_sink_buffer(&b))
                                                  : prox_sink_count();
        prox_status status = z ? prox_sized_pairs(&p, z, &d, PROX_ALGO_GRID, sink, &st)
                               : prox_pairs(&p, &d, PROX_ALGO_GRID, sink, &st);
        if (status != PROX_OK) {
            fprintf(stderr, "sized_points: %s\n", prox_last_error());
            exit(1);
        }
        t[r] = ab_now() - t0;
        *pairs = st.pairs;
        *method = st.method;
        last_candidates = st.candidates;
        prox_pair_buffer_free(&b);
    }
    qsort(t, (size_t)runs, sizeof *t, by_value);
    return t[runs / 2];
}

/* The same over spheres as x, y, z, r. */
static double median_run(const double *xyzr, int64_t n, prox_size_rule rule, prox_sink_kind kind,
                         int runs, int64_t *pairs, const char **method)
{
    prox_points p = prox_points_strided(xyzr, n, 3, PROX_F64, 4 * sizeof(double));
    prox_sizes z = prox_sizes_radii_strided(xyzr + 3, PROX_F64, 4 * sizeof(double), rule);
    return median_of(p, &z, 0, kind, runs, pairs, method);
}

static void report(const char *row, int64_t n, double s, int64_t pairs, const char *method)
{
    printf("%s n=%lld seconds=%.4f pairs=%lld candidates=%lld method=%s simd=%s\n", row,
           (long long)n, s, (long long)pairs, (long long)last_candidates, method,
           prox_simd_level());
}

static int contacts(const char *path, int runs)
{
    int64_t values = 0;
    double *xyzr = ab_read_doubles(path, &values);
    if (!xyzr)
        return 2;
    int64_t n = values / 4, pairs = 0;
    const char *method = NULL;
    double s = median_run(xyzr, n, PROX_RULE_CONTACT, PROX_SINK_COUNT, runs, &pairs, &method);
    report("W7-count", n, s, pairs, method);
    s = median_run(xyzr, n, PROX_RULE_CONTACT, PROX_SINK_BUFFER, runs, &pairs, &method);
    report("W7-buffer", n, s, pairs, method);
    free(xyzr);
    return 0;
}

/* W1's points, radius r; the sized path at radii r/2 (contact: r/2 + r/2
 * = r) against the single-radius path at r. */
static int equal(int64_t n, int runs)
{
    double *radii = calloc((size_t)n, sizeof *radii);
    double *xyz = calloc((size_t)(3 * n), sizeof *xyz);
    uint64_t s = 1;
    for (int64_t i = 0; i < 3 * n; i++)
        xyz[i] = uniform(&s);
    double r = cbrt(30.0 / ((double)n * 4.0 / 3.0 * PI));
    for (int64_t i = 0; i < n; i++)
        radii[i] = r / 2;
    int64_t pairs;
    const char *method;
    prox_points p = prox_points_f64(xyz, n, 3);
    prox_sizes z = prox_sizes_radii(radii, PROX_RULE_CONTACT);
    double sized = median_of(p, &z, 0, PROX_SINK_BUFFER, runs, &pairs, &method);
    report("W1-equal-radii-sized", n, sized, pairs, method);
    double single = median_of(p, NULL, r, PROX_SINK_BUFFER, runs, &pairs, &method);
    report("W1-single-radius", n, single, pairs, method);
    printf("ratio sized/single=%.3f (target <= 1.3)\n", sized / single);
    free(radii);
    free(xyz);
    return 0;
}

/* E[(r_i + r_j)^3] of radii log-uniform over [lo, hi], by quadrature. */
static double mean_sum_cubed(double lo, double hi)
{
    double sum = 0;
    int m = 400;
    for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++) {
            double ra = lo * pow(hi / lo, (a + 0.5) / m), rb = lo * pow(hi / lo, (b + 0.5) / m);
            sum += pow(ra + rb, 3);
        }
    return sum / ((double)m * m);
}

/* 1:100 at W7's density vs 1:2 in the same cube, the 1:2 radii scaled so
 * that the expected contacts (n^2/2 * 4/3 pi E[(ri+rj)^3] / V) agree. */
static int spread(int64_t n, int runs)
{
    double *wide = calloc((size_t)(4 * n), sizeof *wide);
    double *narrow = calloc((size_t)(4 * n), sizeof *narrow);
    polydisperse(wide, n, 1, 100, 0.3, 0, 7);
    double side = 0;
    for (int64_t i = 0; i < n; i++)
        side = fmax(side, fmax(wide[4 * i], fmax(wide[4 * i + 1], wide[4 * i + 2])));
    double a = cbrt(mean_sum_cubed(1, 100) / mean_sum_cubed(1, 2));
    polydisperse(narrow, n, a, 2 * a, 0.3, side, 7);
    int64_t pw, pn;
    const char *mw, *mn;
    double tw = median_run(wide, n, PROX_RULE_CONTACT, PROX_SINK_BUFFER, runs, &pw, &mw);
    report("spread-1:100", n, tw, pw, mw);
    double tn = median_run(narrow, n, PROX_RULE_CONTACT, PROX_SINK_BUFFER, runs, &pn, &mn);
    report("spread-1:2", n, tn, pn, mn);
    printf("ratio 1:100/1:2=%.3f (target <= 2), per pair %.3f\n", tw / tn,
           (tw / (double)pw) / (tn / (double)pn));
    free(wide);
    free(narrow);
    return 0;
}

/* W7 moving: STEPS steps of random motion, the contacts counted at each
 * through one prox_sized_skin_list, one prox_sized_grid (built at the
 * first step, updated at the others) and one-shot prox_sized_pairs; the
 * mean seconds a step of each, and the rebuilds. */
static int moving(const char *path, int steps)
{
    int64_t values = 0;
    double *xyzr = ab_read_doubles(path, &values);
    if (!xyzr || steps < 1)
        return 2;
    int64_t n = values / 4, pairs = 0, rebuilds = 0;
    prox_points p = prox_points_strided(xyzr, n, 3, PROX_F64, 4 * sizeof(double));
    prox_sizes z = prox_sizes_radii_strided(xyzr + 3, PROX_F64, 4 * sizeof(double),
                                            PROX_RULE_CONTACT);
    prox_grid_desc d = prox_default_grid_desc();
    d.threads = 1;
    prox_sized_skin_list *l = NULL;
    prox_sized_grid *g = NULL;
    if (prox_sized_skin_list_create(&d, 1.0, &l) != PROX_OK ||
        prox_sized_grid_create(&d, &g) != PROX_OK)
        return 1;
    uint64_t state = 7;
    int64_t grid_rebuilds = 0;
    double skin_s = 0, oneshot_s = 0, grid_s = 0;
    for (int t = 0; t < steps; t++) {
        prox_stats st;
        double t0 = ab_now();
        if (prox_sized_skin_list_pairs(l, &p, &z, prox_sink_count(), &st) != PROX_OK)
            return 1;
        skin_s += ab_now() - t0;
        rebuilds += st.rebuilt;
        int64_t want = st.pairs;
        t0 = ab_now();
        if (prox_sized_pairs(&p, &z, &d, PROX_ALGO_GRID, prox_sink_count(), &st) != PROX_OK)
            return 1;
        oneshot_s += ab_now() - t0;
        if (st.pairs != want) {
            fprintf(stderr, "sized_points: step %d: %lld pairs, one-shot %lld\n", t,
                    (long long)want, (long long)st.pairs);
            return 1;
        }
        t0 = ab_now();
        prox_stats up = {.rebuilt = true};
        if ((t == 0 ? prox_sized_grid_build(g, &p, &z) : prox_sized_grid_update(g, &p, &up)) ||
            prox_sized_grid_pairs(g, prox_sink_count(), &st) != PROX_OK)
            return 1;
        grid_s += ab_now() - t0;
        grid_rebuilds += up.rebuilt;
        if (st.pairs != want) {
            fprintf(stderr, "sized_points: step %d: %lld pairs, sized grid %lld\n", t,
                    (long long)want, (long long)st.pairs);
            return 1;
        }
        pairs = want;
        for (int64_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++)
                xyzr[4 * i + k] += 0.1 * uniform(&state) - 0.05;
    }
    prox_sized_skin_list_destroy(l);
    prox_sized_grid_destroy(g);
    printf("W7-moving-grid n=%lld seconds=%.4f pairs=%lld rebuilds=%lld steps=%d simd=%s\n",
           (long long)n, grid_s / steps, (long long)pairs, (long long)grid_rebuilds, steps,
           prox_simd_level());
    printf("W7-moving-skin n=%lld seconds=%.4f pairs=%lld rebuilds=%lld steps=%d simd=%s\n",
           (long long)n, skin_s / steps, (long long)pairs, (long long)rebuilds, steps,
           prox_simd_level());
    printf("W7-moving-oneshot n=%lld seconds=%.4f pairs=%lld steps=%d simd=%s\n", (long long)n,
           oneshot_s / steps, (long long)pairs, steps, prox_simd_level());
    free(xyzr);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "w7")) {
        int64_t n = atoll(argv[2]);
        double *xyzr = calloc((size_t)(4 * n), sizeof *xyzr);
        polydisperse(xyzr, n, 1, 100, 0.3, 0, (uint64_t)atoll(argv[3]));
        FILE *f = fopen(argv[4], "wb");
        if (!f || fwrite(xyzr, sizeof *xyzr, (size_t)(4 * n), f) != (size_t)(4 * n))
            return 2;
        fclose(f);
        free(xyzr);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "contacts"))
        return contacts(argv[2], atoi(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "equal"))
        return equal(atoll(argv[2]), atoi(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "spread"))
        return spread(atoll(argv[2]), atoi(argv[3]));
    if (argc == 4 && !strcmp(argv[1], "moving"))
        return moving(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: %s w7 N SEED OUT.f64 | contacts FILE.f64 RUNS | equal N RUNS | "
                    "spread N RUNS | moving FILE.f64 STEPS\n", argv[0]);
    return 2;
}

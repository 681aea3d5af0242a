/* closed_forms.c: expectations computed by counting on paper. */
#include "closed_forms.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pairs found by the library (buffer and count sinks must agree). */
static int64_t library_pair_count(const algo_config *config, const cloud *c, double radius,
                                  const double period[3], prox_scalar scalar,
                                  const char *context)
{
    cloud widened;
    cloud_copy(&widened, c);
    float *as_float = scalar == PROX_F32 ? cloud_round_to_float(&widened) : NULL;
    prox_points view = scalar == PROX_F32 ? prox_points_f32(as_float, c->count, c->dim)
                                          : prox_points_f64(widened.xyz, c->count, c->dim);
    prox_grid_desc desc = config_desc(config, radius, period, 2);
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_stats stats;
    CHECK_STATUS(prox_pairs(&view, &desc, config->algo, prox_sink_buffer(&buffer), &stats),
                 PROX_OK, context);
    int64_t found = buffer.count;
    CHECK_STATUS(prox_pairs(&view, &desc, config->algo, prox_sink_count(), &stats), PROX_OK,
                 context);
    CHECK(stats.pairs == found, context, "count sink %" PRId64 " != buffer %" PRId64,
          stats.pairs, found);
    prox_pair_buffer_free(&buffer);
    free(as_float);
    cloud_free(&widened);
    return found;
}

static void lattice(cloud *c, int dim, int side)
{
    int64_t count = dim == 3 ? (int64_t)side * side * side : (int64_t)side * side;
    cloud_alloc(c, dim, count);
    for (int64_t n = 0; n < count; n++) {
        int64_t rest = n;
        for (int k = 0; k < dim; k++) {
            cloud_point(c, n)[k] = (double)(rest % side);
            rest /= side;
        }
    }
}

static int64_t power(int64_t base, int exponent)
{
    int64_t p = 1;
    while (exponent-- > 0)
        p *= base;
    return p;
}

static void expect_count(const algo_config *config, const cloud *c, double radius,
                         const double period[3], int64_t expected, const char *what)
{
    static const prox_scalar scalars[2] = {PROX_F64, PROX_F32};
    for (int s = 0; s < 2; s++) {
        char context[300];
        snprintf(context, sizeof context, "closed form: %s, dim=%d N=%" PRId64
                 " r=%.17g L=%g scalar=%s algo=%s", what, c->dim, c->count, radius,
                 period ? period[0] : 0.0, scalar_name(scalars[s]), config->name);
        int64_t found = library_pair_count(config, c, radius, period, scalars[s], context);
        CHECK(found == expected, context, "%" PRId64 " pairs, expected %" PRId64, found,
              expected);
    }
}

/* Axis neighbours only: dim * side^(dim-1) * (side-1) open, dim * side^dim
 * periodic (side >= 3). */
static void check_lattices_unit_radius(const algo_config *config)
{
    static const int sides[] = {3, 4, 7};
    for (int dim = 2; dim <= 3; dim++) {
        for (size_t s = 0; s < sizeof sides / sizeof sides[0]; s++) {
            int m = sides[s];
            cloud c;
            lattice(&c, dim, m);
            double period[3] = {m, m, dim == 3 ? m : 0};
            expect_count(config, &c, 1.0, NULL, dim * power(m, dim - 1) * (m - 1),
                         "open integer lattice, r = 1");
            expect_count(config, &c, 1.0, period, dim * power(m, dim),
                         "periodic integer lattice, r = 1");
            cloud_free(&c);
        }
    }
}

/* r = 1.5 adds the face diagonals (sqrt 2) but not sqrt 3 nor 2. */
static void check_lattices_with_diagonals(const algo_config *config)
{
    int64_t m = 6;
    cloud c;
    lattice(&c, 2, (int)m);
    expect_count(config, &c, 1.5, NULL, 2 * m * (m - 1) + 2 * (m - 1) * (m - 1),
                 "open 2D lattice, r = 1.5");
    cloud_free(&c);
    lattice(&c, 3, (int)m);
    expect_count(config, &c, 1.5, NULL, 3 * m * m * (m - 1) + 6 * m * (m - 1) * (m - 1),
                 "open 3D lattice, r = 1.5");
    cloud_free(&c);
}

static void two_points(cloud *c, int dim, const double *a, const double *b)
{
    cloud_alloc(c, dim, 2);
    memcpy(cloud_point(c, 0), a, (size_t)dim * sizeof(double));
    memcpy(cloud_point(c, 1), b, (size_t)dim * sizeof(double));
}

/* (0,0)-(3,4) at exactly 5 and (0,0,0)-(1,2,2) at exactly 3: the ball is
 * closed; one ulp less and the pair is gone. */
static void check_exact_radius(const algo_config *config)
{
    static const double origin[3] = {0, 0, 0}, p345[2] = {3, 4}, p122[3] = {1, 2, 2};
    cloud c;
    two_points(&c, 2, origin, p345);
    expect_count(config, &c, 5.0, NULL, 1, "2D pair at exactly r");
    expect_count(config, &c, nextafter(5.0, 0.0), NULL, 0, "2D pair one ulp beyond r");
    cloud_free(&c);
    two_points(&c, 3, origin, p122);
    expect_count(config, &c, 3.0, NULL, 1, "3D pair at exactly r");
    expect_count(config, &c, nextafter(3.0, 0.0), NULL, 0, "3D pair one ulp beyond r");
    cloud_free(&c);
}

/* 0.25 and 7.75 (or -0.25, or 15.75) are 0.5 apart through the boundary of a
 * period of 8. */
static void check_minimum_image(const algo_config *config)
{
    static const double near_zero[3] = {0.25, 1, 1}, near_end[3] = {7.75, 1, 1},
                        wrapped_low[3] = {-0.25, 1, 1}, wrapped_high[3] = {15.75, 1, 1};
    static const double period_y[3] = {0, 8, 0};
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {8, 8, dim == 3 ? 8 : 0};
        cloud c;
        two_points(&c, dim, near_zero, near_end);
        expect_count(config, &c, 0.5, period, 1, "pair across the periodic boundary");
        expect_count(config, &c, 0.5, period_y, 0, "same pair, x open");
        cloud_free(&c);
        two_points(&c, dim, near_zero, wrapped_low);
        expect_count(config, &c, 0.5, period, 1, "pair with a coordinate below 0");
        cloud_free(&c);
        two_points(&c, dim, wrapped_high, near_zero);
        expect_count(config, &c, 0.5, period, 1, "pair with a coordinate beyond L");
        cloud_free(&c);
    }
}

/* -1e-300 wraps to a hair below L, which rounds to L itself: it must land
 * on the circle next to 0 (and next to 7.9), never outside the cells. */
static void check_wrap_rounding_to_the_period(const algo_config *config)
{
    for (int dim = 2; dim <= 3; dim++) {
        const double period[3] = {8, 8, dim == 3 ? 8 : 0};
        static const double xs[4] = {-1e-300, 0.25, 7.875, -8.0 - 0x1p-50};
        cloud c;
        cloud_alloc(&c, dim, 4);
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < dim; k++)
                cloud_point(&c, i)[k] = k == 0 ? xs[i] : 1.0;
        /* circle positions ~0, 0.25, 7.875, ~0 (within 2^-50): all within 0.5 */
        expect_count(config, &c, 0.5, period, 6, "coordinates that wrap to ~L");
        cloud_free(&c);
    }
}

/* Pairs at distance 1 within an ulp, chosen so that summing the squares in
 * another order than dx*dx + dy*dy + dz*dz would flip the answer for r = 1.
 * Pair n sits at x = 4n, far from the others. */
enum { ORDER_PAIRS = 48 };

static bool spec_within_unit(const double d[3])
{
    return d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= 1.0;
}

static bool order_sensitive(const double d[3])
{
    double xx = d[0] * d[0], yy = d[1] * d[1], zz = d[2] * d[2];
    bool spec = (xx + yy) + zz <= 1.0;
    return (xx + (yy + zz) <= 1.0) != spec || ((zz + yy) + xx <= 1.0) != spec ||
           ((xx + zz) + yy <= 1.0) != spec;
}

static int64_t order_sensitive_pairs(cloud *c, rng *r)
{
    cloud_alloc(c, 3, 2 * ORDER_PAIRS);
    int64_t within = 0;
    for (int n = 0; n < ORDER_PAIRS;) {
        double p[3] = {4.0 * n, rng_uniform(r), rng_uniform(r)}, u[3], q[3], d[3];
        double norm = 0.0;
        for (int k = 0; k < 3; k++) {
            u[k] = rng_uniform(r) - 0.5;
            norm += u[k] * u[k];
        }
        double scale = (1.0 + (double)(rng_below(r, 9) - 4) * 0x1.0p-53) / sqrt(norm);
        for (int k = 0; k < 3; k++) {
            q[k] = p[k] + u[k] * scale;
            d[k] = q[k] - p[k]; /* exactly what any implementation subtracts */
        }
        if (!order_sensitive(d))
            continue;
        memcpy(cloud_point(c, 2 * n), p, sizeof p);
        memcpy(cloud_point(c, 2 * n + 1), q, sizeof q);
        within += spec_within_unit(d);
        n++;
    }
    return within;
}

static void check_summation_order(const algo_config *config)
{
    rng r = rng_seeded(1234567);
    cloud c;
    int64_t within = order_sensitive_pairs(&c, &r);
    CHECK(within > 0 && within < ORDER_PAIRS, "summation order", "degenerate sample: %lld",
          (long long)within);
    char what[128];
    snprintf(what, sizeof what, "%d pairs at ~r whose answer depends on the order of the sum",
             ORDER_PAIRS);
    static const prox_scalar f64_only = PROX_F64;
    char context[300];
    snprintf(context, sizeof context, "closed form: %s, algo=%s", what, config->name);
    int64_t found = library_pair_count(config, &c, 1.0, NULL, f64_only, context);
    CHECK(found == within, context, "%lld pairs, expected %lld (x, y, z summed in this order)",
          (long long)found, (long long)within);
    cloud_free(&c);
}

/* Every pair under a radius far beyond the data. */
static void check_all_pairs(const algo_config *config)
{
    rng r = rng_seeded(77);
    for (int dim = 2; dim <= 3; dim++) {
        cloud c;
        cloud_uniform(&c, dim, 300, 0.0, 1.0, &r);
        expect_count(config, &c, 1e6, NULL, 300 * 299 / 2, "unit data, r = 1e6");
        cloud_free(&c);
    }
}

void check_closed_forms(const algo_config *config)
{
    check_lattices_unit_radius(config);
    check_lattices_with_diagonals(config);
    check_exact_radius(config);
    check_minimum_image(config);
    check_wrap_rounding_to_the_period(config);
    check_all_pairs(config);
    check_summation_order(config);
}

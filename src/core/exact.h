/* exact.h: the exact tests every structure and brute force share, written
 * once so that every code path computes the same bits (the build forbids
 * FMA contraction). */
#ifndef PROX_EXACT_H
#define PROX_EXACT_H

#include <math.h>
#include <stdbool.h>

/* x wrapped into [0, L): x - L*floor(x/L); a result that rounds to L is
 * mapped to 0 (the same place on the circle). An x already in [0, L) is
 * its own wrap, and skips the division: L - x >= ulp(L) > 2^-53 L, so x/L
 * lies below 1 - 2^-53, a double, rounds below 1 and floors to 0; -0.0
 * gives +0.0, as the formula does. */
static inline double prox_wrap(double x, double L)
{
    if (x >= 0.0 && x < L)
        return x + 0.0;
    double w = x - L * floor(x / L);
    return (w >= L || w < 0) ? 0.0 : w;
}

/* Minimum-image difference along a periodic axis of length L, for
 * coordinates already wrapped into [0, L). */
static inline double prox_min_image(double d, double L)
{
    double half = 0.5 * L;
    if (d > half)
        d -= L;
    else if (d < -half)
        d += L;
    return d;
}

/* Squared distance, summed x, y, z in this order. */
static inline double prox_dist2(double dx, double dy, double dz)
{
    return dx * dx + dy * dy + dz * dz;
}


/* The closed-ball test of one structure call: squared distance <= r*r, with
 * minimum images along periodic axes (period[k] > 0). 2D passes dz = 0,
 * which adds an exact zero. */
typedef struct prox_metric {
    double period[3]; /* 0 = open axis */
    double r2;
    bool periodic;    /* any axis periodic */
} prox_metric;

static inline double prox_metric_dist2(const prox_metric *m, double dx, double dy, double dz)
{
    if (m->periodic) {
        if (m->period[0] > 0)
            dx = prox_min_image(dx, m->period[0]);
        if (m->period[1] > 0)
            dy = prox_min_image(dy, m->period[1]);
        if (m->period[2] > 0)
            dz = prox_min_image(dz, m->period[2]);
    }
    return prox_dist2(dx, dy, dz);
}

/* The neighbour rule: the one definition of whether a candidate is a
 * neighbour. A pair at squared distance d2 (prox_metric_dist2: minimum
 * images on periodic axes) is one when d2 <= the pair's squared threshold.
 * Every pair's threshold is r*r today; per-pair radii, type cutoffs and
 * cell images are what it grows into, here. Every path carries it out:
 * brute force and the exact rechecks through prox_metric_within; the
 * double kernels compare whole vectors against the same threshold
 * (simd/kernel.h, pd_metric_within); the fixed-point and rel16 kernels
 * decide from bounds below and above it (prox_fixed_metric's in2 and
 * out2, derived from it in points/grid.c) and leave the band between to
 * prox_metric_within. The oracle in tests/ is written apart from it. */
static inline double prox_metric_threshold2(const prox_metric *m)
{
    return m->r2;
}

static inline bool prox_metric_within(const prox_metric *m, double d2)
{
    return d2 <= prox_metric_threshold2(m);
}

#endif

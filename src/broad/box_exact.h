/* box_exact.h: the exact tests of the box family, written once so that
 * brute force and every structure decide with the same bits.
 *
 * Boxes are closed: touching boxes overlap, and a segment that ends on a
 * face hits the box. Coordinates are widened to double; 2D boxes and
 * segments carry z = 0 (lo = hi = 0), which passes every z test. */
#ifndef PROX_BOX_EXACT_H
#define PROX_BOX_EXACT_H

#include <stdbool.h>

typedef struct prox_aabb {
    double lo[3], hi[3];
} prox_aabb;

/* Closed overlap: a.lo <= b.hi && b.lo <= a.hi on every axis. */
static inline bool prox_aabb_overlap(const prox_aabb *a, const prox_aabb *b)
{
    return a->lo[0] <= b->hi[0] && b->lo[0] <= a->hi[0] && a->lo[1] <= b->hi[1] &&
           b->lo[1] <= a->hi[1] && a->lo[2] <= b->hi[2] && b->lo[2] <= a->hi[2];
}

/* The smallest box holding both a and b (a swept box: its two positions). */
static inline prox_aabb prox_aabb_union(const prox_aabb *a, const prox_aabb *b)
{
    prox_aabb u;
    for (int k = 0; k < 3; k++) {
        u.lo[k] = a->lo[k] < b->lo[k] ? a->lo[k] : b->lo[k];
        u.hi[k] = a->hi[k] > b->hi[k] ? a->hi[k] : b->hi[k];
    }
    return u;
}

/* The bounding box of the segment p0 -> p1. */
static inline prox_aabb prox_aabb_of_segment(const double p0[3], const double p1[3])
{
    prox_aabb b;
    for (int k = 0; k < 3; k++) {
        b.lo[k] = p0[k] < p1[k] ? p0[k] : p1[k];
        b.hi[k] = p0[k] > p1[k] ? p0[k] : p1[k];
    }
    return b;
}

static inline bool prox_point_in_aabb(const double p[3], const prox_aabb *b)
{
    return b->lo[0] <= p[0] && p[0] <= b->hi[0] && b->lo[1] <= p[1] && p[1] <= b->hi[1] &&
           b->lo[2] <= p[2] && p[2] <= b->hi[2];
}

/* Does the closed segment p0 -> p1 meet the closed box b?
 *
 * 1. The segment's bounding box must overlap b (exact; for a segment of
 *    length 0 or one parallel to an axis, this is the whole answer along the
 *    axes where it does not move).
 * 2. An endpoint inside b is a hit (a shortcut: the slab test below also
 *    finds it, since (p1 - p0) / (p1 - p0) is exactly 1, and rounding is
 *    monotonic).
 * 3. Otherwise the slab test (Kay & Kajiya, Liang & Barsky): the parameter
 *    interval [0, 1] is clipped by each axis where the segment moves. Axes
 *    where p0[k] == p1[k] are never divided by (step 1 already decided them),
 *    so there is no 0/0. A NaN could only come from inf/inf when differences
 *    of finite bounds overflow (|coordinates| near 1e308); such an axis then
 *    clips nothing, and the answer errs towards a hit (step 1 still holds). */
static inline bool prox_segment_hits_aabb(const double p0[3], const double p1[3],
                                          const prox_aabb *b)
{
    prox_aabb s = prox_aabb_of_segment(p0, p1);
    if (!prox_aabb_overlap(&s, b))
        return false;
    if (prox_point_in_aabb(p0, b) || prox_point_in_aabb(p1, b))
        return true;
    double t_in = 0.0, t_out = 1.0;
    for (int k = 0; k < 3; k++) {
        if (p0[k] == p1[k])
            continue;
        double d = p1[k] - p0[k];
        double ta = (b->lo[k] - p0[k]) / d, tb = (b->hi[k] - p0[k]) / d;
        if (ta > tb) {
            double t = ta;
            ta = tb;
            tb = t;
        }
        if (ta > t_in)
            t_in = ta;
        if (tb < t_out)
            t_out = tb;
        if (t_in > t_out)
            return false;
    }
    return true;
}

#endif

/* cell_screen.c: engine. The screen of a periodic cell's candidates
 * (cell.c): one run of slots against a query point through the double
 * kernel of simd/kernel.h, at this SIMD level. */
#include "points/cell_geometry.h"
#include "simd/kernel.h"

int64_t prox_cell_screen(const double *x, const double *y, const double *z, int64_t lo,
                         int64_t hi, const double q[3], double r2, uint32_t *hits)
{
    prox_block b = {x, y, z};
    prox_metric m = {{0, 0, 0}, r2, false};
    return prox_kernel_hits(&b, lo, hi, q, &m, hits);
}

/* Images t of [lo, hi) within the rule of cell.h of the point q, exactly:
 * D[k] = (x[k][t] - q[k]) + v[k][t], the vector v = S . cell computed by
 * the rule beforehand, and (D0^2 + D1^2) + D2^2 <= r2, lane by lane the
 * scalar operations (no FMA: the build forbids contraction). */
static PROX_ALWAYS_INLINE uint32_t images_within(const double *x0, const double *x1,
                                                 const double *x2, const double *v0,
                                                 const double *v1, const double *v2,
                                                 int64_t left, const pd_f64 *q, pd_f64 r2)
{
    pd_f64 d0 = pd_add(pd_sub(pd_load_n(x0, left), q[0]), pd_load_n(v0, left));
    pd_f64 d1 = pd_add(pd_sub(pd_load_n(x1, left), q[1]), pd_load_n(v1, left));
    pd_f64 d2 = pd_add(pd_sub(pd_load_n(x2, left), q[2]), pd_load_n(v2, left));
    pd_f64 s = pd_add(pd_add(pd_mul(d0, d0), pd_mul(d1, d1)), pd_mul(d2, d2));
    return pd_bits(pd_le(s, r2)) & pd_live(left);
}

int64_t prox_cell_image_hits(const double *const x[3], const double *const v[3], int64_t lo,
                             int64_t hi, const double q[3], double r2, uint32_t *hits)
{
    /* the arrays held in locals: the stores into hits cannot move them */
    const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *v0 = v[0], *v1 = v[1], *v2 = v[2];
    pd_f64 qv[3] = {pd_set1(q[0]), pd_set1(q[1]), pd_set1(q[2])};
    pd_f64 r2v = pd_set1(r2);
    int64_t count = 0;
    for (int64_t t = lo; t < hi; t += PD_W) {
        uint32_t hit = images_within(x0 + t, x1 + t, x2 + t, v0 + t, v1 + t, v2 + t, hi - t,
                                     qv, r2v);
        pd_compress_iota(hits + count, t, hit);
        count += prox_lanes_popcount(hit);
    }
    return count;
}

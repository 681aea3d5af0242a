/* cell_screen.c: engine. The screen of a periodic cell's candidates
 * (cell.c): one run of slots against a query point through the double
 * kernel of simd/kernel.h, at this SIMD level; and the small cells' images
 * decided by the rule (cell_direct.c), after a float prescreen in the
 * vector lanes of simd/vec.h. */
#include "points/cell_geometry.h"
#include "simd/kernel.h"
#include "simd/vec.h"

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

/* The lanes of [t, t + left) that pass the float prescreen: e[k] =
 * p[k][t] + nq[k] (nq = -(float)q, so the sum is the difference), and
 * (e0^2 + e1^2) + e2^2 <= r2 in float. */
static PROX_ALWAYS_INLINE pv_mask prescreen_lanes(const float *p0, const float *p1,
                                                  const float *p2, int64_t t, int64_t left,
                                                  const pv_f32 nq[3], pv_f32 r2)
{
    pv_f32 e0 = pv_add_f32(pv_load_f32_n(p0 + t, left), nq[0]);
    pv_f32 e1 = pv_add_f32(pv_load_f32_n(p1 + t, left), nq[1]);
    pv_f32 e2 = pv_add_f32(pv_load_f32_n(p2 + t, left), nq[2]);
    pv_f32 s = pv_add_f32(pv_add_f32(pv_mul_f32(e0, e0), pv_mul_f32(e1, e1)), pv_mul_f32(e2, e2));
    return pv_le_f32(s, r2) & pv_live(left);
}

/* prox_cell_image_hits through the prescreen: the float lanes list the
 * candidates that pass, ascending, in hits (each vector's indices, lanes
 * iota, compressed); the rule, in double, then keeps those it takes, in
 * place. The hits are the rule's exactly as long as the prescreen keeps
 * every pair of the rule (its radius' bound, cell_direct.c). */
static int64_t image_hits_screened(const double *const x[3], const double *const v[3],
                                   const prox_cell_prescreen *ps, int64_t lo, int64_t hi,
                                   const double q[3], double r2, uint32_t *hits)
{
    /* the arrays held in locals: the stores into hits cannot move them */
    const float *p0 = ps->p[0], *p1 = ps->p[1], *p2 = ps->p[2];
    pv_f32 nq[3] = {pv_set1_f32(-(float)q[0]), pv_set1_f32(-(float)q[1]),
                    pv_set1_f32(-(float)q[2])};
    pv_f32 r2f = pv_set1_f32(ps->r2);
    pv_i32 iota = pv_iota(lo), step = pv_set1_i32(PV_W);
    int64_t n = 0, t = lo;
    for (; t + PV_W <= hi; t += PV_W) { /* whole vectors: the loads unmasked */
        pv_mask keep = prescreen_lanes(p0, p1, p2, t, PV_W, nq, r2f);
        pv_compress(hits + n, iota, keep);
        n += prox_lanes_popcount(keep);
        iota = pv_add_i32(iota, step);
    }
    if (t < hi) {
        pv_mask keep = prescreen_lanes(p0, p1, p2, t, hi - t, nq, r2f);
        pv_compress(hits + n, iota, keep);
        n += prox_lanes_popcount(keep);
    }
    const double *x0 = x[0], *x1 = x[1], *x2 = x[2], *v0 = v[0], *v1 = v[1], *v2 = v[2];
    int64_t count = 0;
    for (int64_t c = 0; c < n; c++) { /* the rule as images_within computes it, lane by lane */
        uint32_t k = hits[c];
        double d0 = (x0[k] - q[0]) + v0[k], d1 = (x1[k] - q[1]) + v1[k],
               d2 = (x2[k] - q[2]) + v2[k];
        hits[count] = k;
        count += (d0 * d0 + d1 * d1) + d2 * d2 <= r2;
    }
    return count;
}

int64_t prox_cell_image_hits(const double *const x[3], const double *const v[3],
                             const prox_cell_prescreen *screen, int64_t lo, int64_t hi,
                             const double q[3], double r2, uint32_t *hits)
{
    if (screen)
        return image_hits_screened(x, v, screen, lo, hi, q, r2, hits);
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

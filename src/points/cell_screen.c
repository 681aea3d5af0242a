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

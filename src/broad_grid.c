/* broad_grid.c: uniform hashing of boxes (seed 000 section 2.1): one cell
 * size for every box, each box stored in every cell it covers (the engine
 * of multilevel_hash.c with a single level). The cell is desc.cell_size, or
 * the median longest box edge. A box covering more than the engine's cap of
 * cells (a big box among small ones, the weakness section 2.2 addresses) is
 * kept in an oversize list that every query takes as candidates. */
#include <math.h>
#include <stdlib.h>

#include "broad.h"

/* At most 2^40 cells along an axis of the data. */
#define MAX_SPAN_BITS 40
#define SAMPLE 4096

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median longest edge (of at most SAMPLE evenly spaced boxes). */
static double median_longest_edge(const broad_input *in)
{
    double sample[SAMPLE];
    int64_t step = in->n > SAMPLE ? in->n / SAMPLE : 1;
    int count = 0;
    for (int64_t i = 0; i < in->n && count < SAMPLE; i += step)
        sample[count++] = prox_longest_edge(&in->box[i], in->dim);
    if (count == 0)
        return 0.0;
    qsort(sample, (size_t)count, sizeof sample[0], compare_double);
    return sample[count / 2];
}

static prox_status grid_build(void **impl, const broad_input *in)
{
    double extent = 0.0;
    for (int k = 0; k < in->dim; k++)
        extent = in->hi[k] - in->lo[k] > extent ? in->hi[k] - in->lo[k] : extent;
    double cell = in->desc->cell_size > 0 ? in->desc->cell_size : median_longest_edge(in);
    if (!(cell > 0))
        cell = extent > 0 ? extent / 64 : 1.0;
    double finest = ldexp(extent, -MAX_SPAN_BITS);
    cell = cell < finest ? finest : cell;
    return prox_levels_build(impl, in, &cell, 1, 0, false);
}

const broad_ops prox_broad_grid_ops = {
    .name = "grid",
    .build = grid_build,
    .destroy = prox_levels_destroy,
    .gather = prox_levels_gather,
    .bytes = prox_levels_bytes,
    .cells = prox_levels_cells,
};

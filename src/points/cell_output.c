/* cell_output.c: the geometry arrays of the cell searches (cell_output.h)
 * and the public init and free of include/prox/cell.h. */
#include <string.h>

#include "core/alloc.h"
#include "core/error.h"
#include "points/cell_output.h"

void prox_geometry_init(prox_geometry *g, unsigned fields, const prox_allocator *allocator)
{
    memset(g, 0, sizeof *g);
    g->fields = fields ? fields : PROX_GEOMETRY_ALL;
    g->allocator = prox_allocator_resolve(allocator);
}

void prox_geometry_release(prox_geometry *g)
{
    prox_free(&g->allocator, g->i);
    prox_free(&g->allocator, g->j);
    prox_free(&g->allocator, g->d);
    prox_free(&g->allocator, g->D);
    prox_free(&g->allocator, g->S);
    g->i = g->j = NULL;
    g->d = g->D = NULL;
    g->S = NULL;
    g->count = 0;
}

void prox_geometry_free(prox_geometry *g)
{
    if (g)
        prox_geometry_release(g);
}

prox_status prox_geometry_alloc(prox_geometry *g, int64_t n, int dim)
{
    const prox_allocator *al = &g->allocator;
    bool ok = true;
    if (g->fields & PROX_GEOMETRY_I)
        ok &= (g->i = prox_alloc_array(al, n, sizeof *g->i)) != NULL;
    if (g->fields & PROX_GEOMETRY_J)
        ok &= (g->j = prox_alloc_array(al, n, sizeof *g->j)) != NULL;
    if (g->fields & PROX_GEOMETRY_DISTANCE)
        ok &= (g->d = prox_alloc_array(al, n, sizeof *g->d)) != NULL;
    if (g->fields & PROX_GEOMETRY_VECTOR)
        ok &= (g->D = prox_alloc_array(al, n * dim, sizeof *g->D)) != NULL;
    if (g->fields & PROX_GEOMETRY_SHIFT)
        ok &= (g->S = prox_alloc_array(al, n * dim, sizeof *g->S)) != NULL;
    g->count = n;
    g->dim = dim;
    if (ok)
        return PROX_OK;
    prox_geometry_release(g);
    return prox_fail(PROX_ERR_NO_MEMORY, "geometry: no memory for %lld pairs", (long long)n);
}

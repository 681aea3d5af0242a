#include "broad_options.h"

/* --root x0,y0,x1,y1 or x0,y0,z0,x1,y1,z1: lower corner, then upper. */
static bool root_option(const opt_parser *p, const char *v, prox_broad_desc *desc)
{
    double c[6];
    int n = parse_double_list(p, v, c, 6);
    if (n != 4 && n != 6)
        die_usage(p->command, "--root: 4 numbers (2D) or 6 (3D), not %d", n);
    int dim = n / 2;
    for (int k = 0; k < 3; k++) {
        desc->root_lo[k] = k < dim ? c[k] : 0.0;
        desc->root_hi[k] = k < dim ? c[dim + k] : 0.0;
        if (k < dim && !(desc->root_lo[k] < desc->root_hi[k]))
            die_usage(p->command, "--root: the lower corner must be below the upper one "
                                  "on every axis");
    }
    return true;
}

bool broad_option(const opt_parser *p, int id, const char *v, prox_broad_desc *desc)
{
    switch (id) {
    case BROAD_OPT_ALGO:
        if (prox_broad_algo_parse(v, &desc->algo) != PROX_OK)
            die_usage(p->command, "--algo: %s", prox_last_error());
        return true;
    case BROAD_OPT_THREADS: desc->threads = (int)parse_count(p, v, 0, 4096); return true;
    case BROAD_OPT_TABLE: desc->table_size = parse_count(p, v, 0, (int64_t)1 << 40); return true;
    case BROAD_OPT_GROWABLE: desc->growable_table = true; return true;
    case BROAD_OPT_CELL:
        desc->cell_size = parse_double(p, v);
        if (!(desc->cell_size > 0))
            die_usage(p->command, "--cell-size must be > 0");
        return true;
    case BROAD_OPT_KD_VARIANT: desc->kdtree_variant = (int)parse_count(p, v, 1, 2); return true;
    case BROAD_OPT_NO_SPLIT: desc->kdtree_split = false; return true;
    case BROAD_OPT_SPLIT_COST:
        desc->kdtree_split_cost = parse_double(p, v);
        if (!(desc->kdtree_split_cost >= 0))
            die_usage(p->command, "--split-cost must be >= 0");
        return true;
    case BROAD_OPT_ROOT: return root_option(p, v, desc);
    }
    return false;
}

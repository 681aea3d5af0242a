#include "broad_options.h"

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
    }
    return false;
}

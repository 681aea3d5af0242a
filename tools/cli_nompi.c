/* cli_nompi.c: `--mpi` in a prox built without MPI: a usage error. */
#include <stdlib.h>

#include "cli.h"
#include "cli_mpi.h"

int cli_mpi_start(const char *command)
{
    die_usage(command, "--mpi: this prox was built without MPI (install Open MPI, "
                       "libopenmpi-dev, and build again)");
}

void cli_mpi_finish(void)
{
}

void cli_mpi_pairs(const prox_points *points, const prox_grid_desc *desc, prox_sink sink,
                   prox_stats *stats, bool print_stats)
{
    (void)points, (void)desc, (void)sink, (void)stats, (void)print_stats;
    abort(); /* unreachable: cli_mpi_start exits */
}

void cli_mpi_collide(const prox_boxes *boxes, const prox_broad_desc *desc, prox_sink sink,
                     prox_stats *stats, bool print_stats)
{
    (void)boxes, (void)desc, (void)sink, (void)stats, (void)print_stats;
    abort();
}

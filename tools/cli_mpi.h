/* cli_mpi.h: `--mpi` for `prox pairs` and `prox collide`. Rank 0 reads the
 * file; its items spread over the ranks by the distributed layer
 * (include/prox/mpi.h); the results come back to rank 0, which writes what
 * the serial command writes. Built from cli_mpi.c with MPI, else from
 * cli_nompi.c, where --mpi is a usage error. */
#ifndef PROX_TOOLS_CLI_MPI_H
#define PROX_TOOLS_CLI_MPI_H

#include <stdbool.h>

#include "prox/prox.h"

/* MPI_Init; returns this process's rank (a usage error without MPI). */
int cli_mpi_start(const char *command);
/* MPI_Finalize. */
void cli_mpi_finish(void);

/* Collective. Rank 0 passes every point and the search's desc (others pass
 * anything); rank 0's sink then gets what prox_pairs would give it:
 * count, sorted buffer or lists. With `stats`, rank 0 prints each rank's
 * figures to stderr. Failures exit (rank 0 says why). */
void cli_mpi_pairs(const prox_points *points, const prox_grid_desc *desc, prox_sink sink,
                   prox_stats *stats, bool print_stats);
/* The same for the overlapping pairs of boxes (count or sorted buffer). */
void cli_mpi_collide(const prox_boxes *boxes, const prox_broad_desc *desc, prox_sink sink,
                     prox_stats *stats, bool print_stats);

#endif

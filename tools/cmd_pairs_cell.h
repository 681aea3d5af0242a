/* cmd_pairs_cell.h (cmd_pairs_cell.c): `prox pairs --cell`: every image
 * pair in a periodic cell of any shape (include/prox/cell.h). */
#ifndef PROX_TOOLS_CMD_PAIRS_CELL_H
#define PROX_TOOLS_CMD_PAIRS_CELL_H

#include <stdbool.h>

#include "cli.h"
#include "sizes_file.h"

typedef struct pairs_cell_options {
    int cell_values;        /* numbers given to --cell: 0 (no cell), dim lengths, or dim*dim rows */
    double cell[9];
    int pbc_values;         /* flags given to --pbc (0: every axis periodic) */
    bool pbc[3];
    bool geometry;          /* lines "i j d Dx Dy [Dz] Sx Sy [Sz]" */
    bool full;              /* both directions */
    bool self_interaction;  /* (i, i, 0) too */
} pairs_cell_options;

/* --pbc's value: comma-separated 1/0, true/false, yes/no (usage error otherwise). */
void parse_pbc(const opt_parser *p, const char *text, pairs_cell_options *c);

/* The cell rows and periodic flags of c for dim-D points (usage error,
 * naming `command`, for a count of numbers or flags that does not fit). */
void cell_rows_of(const pairs_cell_options *c, int dim, const char *command, double cell[3][3],
                  bool pbc[3]);

/* The whole `prox pairs --cell` run: read, search (with the sizes of
 * `sizes` when it names a file, prox_sized_cell_pairs), write; returns the
 * exit code. */
int pairs_in_cell(const pairs_cell_options *c, const sizes_files *sizes, const char *input,
                  const char *output_path, int dim, bool has_radius, double radius, int threads,
                  bool count, bool stats);

#endif

/* sizes_file.h (sizes_file.c): the sizes of `prox pairs --radii FILE
 * [--rule R]` or `--types FILE --cutoffs FILE`, read for the points of a
 * run (include/prox/sizes.h). */
#ifndef PROX_TOOLS_SIZES_FILE_H
#define PROX_TOOLS_SIZES_FILE_H

#include <stdint.h>

#include "prox/sizes.h"

/* The options naming them (NULL paths: not given). */
typedef struct sizes_files {
    const char *radii;    /* --radii FILE: one radius (or h) per point */
    prox_size_rule rule;  /* --rule */
    const char *types;    /* --types FILE: one integer type per point */
    const char *cutoffs;  /* --cutoffs FILE: their symmetric cutoff matrix */
} sizes_files;

/* The sizes read, and the arrays they view. */
typedef struct loaded_sizes {
    prox_sizes sizes;
    double *radii;
    int32_t *type;
    double *cutoff;
} loaded_sizes;

/* Reads the files of f for `count` points (exits with a message naming the
 * file and line on bad input, as every input of the CLI). */
void sizes_files_load(const sizes_files *f, int64_t count, loaded_sizes *out);
void loaded_sizes_free(loaded_sizes *s);

#endif

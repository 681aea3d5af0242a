/* broad_options.h: the options of the broad-phase structure that
 * `prox collide` and `prox query` share (--algo, --threads, --table-size,
 * --growable, --cell-size, and the kd-tree's --kdtree-variant, --no-split,
 * --split-cost, --root). */
#ifndef PROX_TOOLS_BROAD_OPTIONS_H
#define PROX_TOOLS_BROAD_OPTIONS_H

#include <stdbool.h>

#include "cli.h"
#include "prox/boxes.h"

/* Ids above any command's own option ids. */
enum {
    BROAD_OPT_ALGO = 100,
    BROAD_OPT_THREADS,
    BROAD_OPT_TABLE,
    BROAD_OPT_GROWABLE,
    BROAD_OPT_CELL,
    BROAD_OPT_KD_VARIANT,
    BROAD_OPT_NO_SPLIT,
    BROAD_OPT_SPLIT_COST,
    BROAD_OPT_ROOT,
};

/* Entries for a command's opt_spec table. */
#define BROAD_OPTION_SPECS                                                                    \
    { "algo", 0, true, BROAD_OPT_ALGO }, { "threads", 't', true, BROAD_OPT_THREADS },         \
        { "table-size", 0, true, BROAD_OPT_TABLE },                                           \
        { "growable", 0, false, BROAD_OPT_GROWABLE }, { "cell-size", 0, true, BROAD_OPT_CELL }, \
        { "kdtree-variant", 0, true, BROAD_OPT_KD_VARIANT },                                  \
        { "no-split", 0, false, BROAD_OPT_NO_SPLIT },                                         \
        { "split-cost", 0, true, BROAD_OPT_SPLIT_COST }, { "root", 0, true, BROAD_OPT_ROOT }

/* Their lines of --help (after --cell-size). */
#define BROAD_KDTREE_HELP                                                                     \
    "      --kdtree-variant 1|2  kdtree: 1 = every sweep pair tested (repeats), 2 = each\n"  \
    "                      pair of boxes once after a quantized-box filter (default 2)\n"    \
    "      --no-split      kdtree: do not split boxes over cutting planes\n"                \
    "      --split-cost C  kdtree: a split's extra records cost C x the root's volume\n"     \
    "                      per box each (default 1; 0 = every split that shrinks the\n"    \
    "                      cells' volume, the paper's Figure 7)\n"                         \
    "      --root x0,y0[,z0],x1,y1[,z1]  kdtree: the root cell (default: a cube at the\n"  \
    "                      boxes' lower corner, side their largest extent); boxes\n"       \
    "                      outside it are still found\n"

/* Applies option `id` (with its value) to desc; false when `id` is not a
 * broad-phase option. Bad values are usage errors naming the option. */
bool broad_option(const opt_parser *p, int id, const char *value, prox_broad_desc *desc);

#endif

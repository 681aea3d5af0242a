/* broad_options.h: the options of the broad-phase structure that
 * `prox collide` and `prox query` share (--algo, --threads, --table-size,
 * --growable, --cell-size). */
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
};

/* Entries for a command's opt_spec table. */
#define BROAD_OPTION_SPECS                                                                    \
    { "algo", 0, true, BROAD_OPT_ALGO }, { "threads", 't', true, BROAD_OPT_THREADS },         \
        { "table-size", 0, true, BROAD_OPT_TABLE },                                           \
        { "growable", 0, false, BROAD_OPT_GROWABLE }, { "cell-size", 0, true, BROAD_OPT_CELL }

/* Applies option `id` (with its value) to desc; false when `id` is not a
 * broad-phase option. Bad values are usage errors naming the option. */
bool broad_option(const opt_parser *p, int id, const char *value, prox_broad_desc *desc);

#endif

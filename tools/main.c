/* main.c: `prox COMMAND ...`: dispatch to the subcommands. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "prox/core.h"

static const char usage[] =
    "usage: prox COMMAND [OPTIONS]\n"
    "       prox --help | --version [--long]\n"
    "Fixed-radius neighbour search with the prox library.\n"
    "\n"
    "Commands:\n"
    "  gen     write a standard workload (sph3d, nns2d, spheres3d, mixed2d) to a file\n"
    "  pairs   every pair of points of a file within a radius (pairs, counts, lists)\n"
    "  bench   time every algorithm on a standard workload; prints a Markdown table\n"
    "  collide every pair of overlapping boxes of a file (broad phase)\n"
    "  query   the boxes each query box or segment of a file meets\n"
    "  knn     the k nearest neighbours of every point (or of a second set)\n"
    "  demo    run a scene (fluid, ...): a simulation timed phase by phase, frames, plot\n"
    "Run 'prox COMMAND --help' for the options of a command.\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  internal error: a self-check failed (bench: algorithms disagree)\n"
    "  2  usage error: unknown command or option, missing argument, malformed\n"
    "     number or value out of range in an option\n"
    "  3  bad data: malformed input file, NaN or infinite coordinate, radius <= 0,\n"
    "     or data the library rejects (invalid argument, bad data, out of range)\n"
    "  4  I/O error: a file cannot be opened, read or written\n"
    "  5  out of memory\n"
    "\n"
    "Errors go to stderr as 'prox: FILE:LINE: message' when they are about a\n"
    "place in a file, else 'prox: message'. An output file (-o OUT) is written to\n"
    "OUT.tmp.XXXXXX next to it and renamed to OUT once complete: a failed or\n"
    "interrupted run leaves neither OUT nor the temporary file.\n";

/* `prox --version --long`: the version line, then the copyright and the
 * license of LICENSE (the repository's root; share/doc/prox once installed). */
static const char license_lines[] =
    "Copyright (c) 2026, The prox authors\n"
    "License: BSD 3-Clause (the LICENSE file in the source tree; installed as\n"
    "share/doc/prox/LICENSE). This is free software: you may redistribute and\n"
    "modify it under its terms. There is NO WARRANTY, to the extent permitted by law.\n";

static int print_version(int argc, char **argv)
{
    bool full = argc > 2 && strcmp(argv[2], "--long") == 0;
    if (argc > 2 && !full)
        die_usage(NULL, "--version takes only --long, got '%s'", argv[2]);
    if (prox_simd_check() != PROX_OK)
        die_usage(NULL, "%s", prox_last_error());
    printf("prox %s simd=%s\n", PROX_VERSION_STRING, prox_simd_level());
    if (full)
        fputs(license_lines, stdout);
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    cleanup_install_signal_handlers();
    if (argc < 2)
        die_usage(NULL, "missing COMMAND (gen, pairs, bench, collide, query, knn or demo)");
    const char *command = argv[1];
    if (strcmp(command, "--help") == 0 || strcmp(command, "-h") == 0
        || strcmp(command, "help") == 0) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    if (strcmp(command, "--version") == 0 || strcmp(command, "version") == 0)
        return print_version(argc, argv);
    if (prox_simd_check() != PROX_OK)
        die_usage(NULL, "%s", prox_last_error());
    if (strcmp(command, "gen") == 0)
        return cmd_gen(argc - 1, argv + 1);
    if (strcmp(command, "pairs") == 0)
        return cmd_pairs(argc - 1, argv + 1);
    if (strcmp(command, "bench") == 0)
        return cmd_bench(argc - 1, argv + 1);
    if (strcmp(command, "collide") == 0)
        return cmd_collide(argc - 1, argv + 1);
    if (strcmp(command, "query") == 0)
        return cmd_query(argc - 1, argv + 1);
    if (strcmp(command, "demo") == 0)
        return cmd_demo(argc - 1, argv + 1);
    if (strcmp(command, "knn") == 0)
        return cmd_knn(argc - 1, argv + 1);
    fprintf(stderr, "prox: unknown command '%s'\n\n", command);
    fputs(usage, stderr);
    return EXIT_USAGE;
}

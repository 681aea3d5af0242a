/* cmd_demo.c: `prox demo NAME [OPTIONS]`: the scenes of examples/scenes,
 * simulations written on the public API that time every phase of a frame.
 * Adding a scene: one row in `scenes` below (and its file in scenes.cmake). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "scene.h"

typedef struct demo_scene {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} demo_scene;

static const demo_scene scenes[] = {
    {"fluid", prox_demo_fluid, "W5: particles fall through 2,000 spheres (Pouchol et al. 2009, Figure 6)"},
    {"sph", prox_demo_sph, "SPH dam break: poly6 density (flat-array article), pressure, viscosity"},
    {"dem", prox_demo_dem, "W6: spheres fall and pile up on the floor (Poirrier 2009, Figure 11)"},
    {"toy2d", prox_demo_toy2d, "2D toy of the hash-multimap article: brute force vs grid at 60 frames/s"},
};

static void print_usage(FILE *out)
{
    fputs("usage: prox demo NAME [OPTIONS]\n"
          "Run a scene: a simulation driven by prox that prints a progress line and\n"
          "a table of median ms per frame per phase; --png DIR writes frames, --plot a\n"
          "gnuplot chart of ms per frame. 'prox demo NAME --help' lists its options.\n\n"
          "Scenes:\n",
          out);
    for (size_t k = 0; k < sizeof scenes / sizeof scenes[0]; k++)
        fprintf(out, "  %-8s %s\n", scenes[k].name, scenes[k].summary);
}

int cmd_demo(int argc, char **argv)
{
    if (argc < 2)
        die_usage("demo", "missing scene NAME");
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    for (size_t k = 0; k < sizeof scenes / sizeof scenes[0]; k++)
        if (strcmp(scenes[k].name, name) == 0)
            return scenes[k].run(argc - 1, argv + 1);
    fprintf(stderr, "prox: demo: unknown scene '%s'\n\n", name);
    print_usage(stderr);
    return EXIT_USAGE;
}

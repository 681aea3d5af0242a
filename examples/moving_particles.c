/* moving_particles.c: a grid kept across time steps. Particles drift; the
 * grid relocates only those that changed cell, and a skin list answers the
 * neighbour query of most steps without rebuilding at all. */
#include <prox/prox.h>
#include <stdio.h>
#include <stdlib.h>

#define N 20000
#define STEPS 20

static double uniform(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return (double)((z ^ (z >> 31)) >> 11) * 0x1p-53;
}

int main(void)
{
    static double xyz[N][3];
    uint64_t rng = 1;
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3; k++)
            xyz[i][k] = uniform(&rng);
    prox_points points = prox_points_f64(&xyz[0][0], N, 3);

    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 0.03;
    desc.period[0] = desc.period[1] = desc.period[2] = 1.0; /* a periodic unit box */

    prox_grid *grid = NULL;
    prox_skin_list *list = NULL;
    if (prox_grid_create(&desc, &grid) || prox_grid_build(grid, &points) ||
        prox_skin_list_create(&desc, 0.01, &list)) {
        fprintf(stderr, "prox: %s\n", prox_last_error());
        return 1;
    }
    int rebuilds = 0;
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < N; i++) /* drift; coordinates leaving the box are wrapped by prox */
            for (int k = 0; k < 3; k++)
                xyz[i][k] += 0.001 * (uniform(&rng) - 0.5);

        prox_stats moved, by_grid, by_list;
        if (prox_grid_update(grid, &points, &moved) ||
            prox_grid_pairs(grid, prox_sink_count(), &by_grid) ||
            prox_skin_list_pairs(list, &points, prox_sink_count(), &by_list)) {
            fprintf(stderr, "prox: %s\n", prox_last_error());
            return 1;
        }
        rebuilds += by_list.rebuilt;
        printf("step %2d: %lld pairs, %lld particles changed cell, skin list %s\n", step,
               (long long)by_grid.pairs, (long long)moved.relocated,
               by_list.rebuilt ? "rebuilt" : "reused");
        if (by_grid.pairs != by_list.pairs) {
            fprintf(stderr, "grid and skin list disagree\n");
            return 1;
        }
    }
    printf("%d skin-list rebuilds in %d steps\n", rebuilds, STEPS);
    prox_skin_list_destroy(list);
    prox_grid_destroy(grid);
    return 0;
}

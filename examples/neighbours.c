/* neighbours.c: the README's example. Every pair of particles closer than
 * a radius, straight from an array of particle structs (no copy). */
#include <prox/prox.h>
#include <stdio.h>

typedef struct particle {
    float velocity[3];
    double position[3];
    int tag;
} particle;

int main(void)
{
    particle p[5] = {
        {.position = {0.0, 0.0, 0.0}}, {.position = {0.5, 0.0, 0.0}},
        {.position = {1.5, 0.0, 0.0}}, {.position = {0.0, 0.3, 0.4}},
        {.position = {9.0, 9.0, 9.0}},
    };
    /* A strided view: prox reads the positions where they are. */
    prox_points points = prox_points_strided(&p[0].position[0], 5, 3, PROX_F64, sizeof(particle));

    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = 0.5; /* closed ball: distance exactly 0.5 counts */

    prox_pair_buffer pairs;
    prox_pair_buffer_init(&pairs, NULL);
    prox_stats stats;
    if (prox_pairs(&points, &desc, PROX_ALGO_GRID, prox_sink_buffer(&pairs), &stats) != PROX_OK) {
        fprintf(stderr, "prox: %s\n", prox_last_error());
        return 1;
    }
    for (int64_t k = 0; k < pairs.count; k++)
        printf("%u %u\n", pairs.pairs[k].i, pairs.pairs[k].j);
    printf("%lld pairs, %lld distance tests\n", (long long)stats.pairs,
           (long long)stats.candidates);
    prox_pair_buffer_free(&pairs);
    /* expected: 0 1, 0 3 (both at distance exactly 0.5) */
    return stats.pairs == 2 ? 0 : 1;
}

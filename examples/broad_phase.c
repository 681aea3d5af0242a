/* broad_phase.c: obstacles of very different sizes (a game level), every
 * pair that overlaps, then the obstacles that moving particles' paths cross
 * this step. Checked against brute force, so the example fails loudly if the
 * structure ever disagrees. */
#include <prox/prox.h>
#include <stdio.h>

typedef struct obstacle {
    const char *name;
    double min[2], max[2];
} obstacle;

typedef struct particle {
    double before[2], after[2]; /* positions at the start and end of the step */
} particle;

static int fail(const char *what)
{
    fprintf(stderr, "%s: %s\n", what, prox_last_error());
    return 1;
}

/* The obstacles each path crosses, with the given structure. */
static int crossings(prox_broad_algo algo, const prox_boxes *boxes, const particle *p, int count,
                     prox_pair_buffer *hits)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = algo;
    prox_broad *broad = NULL;
    prox_points starts = prox_points_strided(&p[0].before[0], count, 2, PROX_F64, sizeof *p);
    prox_points ends = prox_points_strided(&p[0].after[0], count, 2, PROX_F64, sizeof *p);
    int status = prox_broad_create(&desc, &broad) || prox_broad_build(broad, boxes) ||
                 prox_broad_query_segments(broad, &starts, &ends, true, prox_sink_buffer(hits), NULL);
    prox_broad_destroy(broad);
    return status;
}

int main(void)
{
    obstacle level[] = {
        {"ground", {0, 0}, {1000, 10}},     {"wall", {990, 0}, {1000, 500}},
        {"crate", {100, 10}, {110, 20}},    {"crate on crate", {100, 20}, {110, 30}},
        {"pebble", {300, 10}, {300.5, 10.5}}, {"sign", {500, 10}, {502, 40}},
    };
    int n = (int)(sizeof level / sizeof level[0]);
    prox_boxes boxes = prox_boxes_strided(&level[0].min[0], &level[0].max[0], n, 2, PROX_F64,
                                          sizeof level[0]);

    /* Every pair of overlapping obstacles: touching boxes overlap. */
    prox_broad_desc desc = prox_default_broad_desc(); /* the hierarchical hash */
    prox_broad *broad = NULL;
    prox_pair_buffer pairs;
    prox_pair_buffer_init(&pairs, NULL);
    if (prox_broad_create(&desc, &broad) || prox_broad_build(broad, &boxes) ||
        prox_broad_pairs(broad, prox_sink_buffer(&pairs), NULL))
        return fail("pairs");
    printf("%lld overlapping pairs:\n", (long long)pairs.count);
    for (int64_t k = 0; k < pairs.count; k++)
        printf("  %s / %s\n", level[pairs.pairs[k].i].name, level[pairs.pairs[k].j].name);
    prox_broad_destroy(broad);

    /* Particles moving this step: which obstacles does each path cross? */
    particle rain[] = {
        {{105, 50}, {105, 25}},   /* falls onto the top crate */
        {{300.2, 12}, {300.2, 9}}, /* grazes the pebble and lands on the ground */
        {{700, 80}, {720, 60}},   /* in the air: crosses nothing */
        {{985, 300}, {995, 300}}, /* into the wall */
    };
    int m = (int)(sizeof rain / sizeof rain[0]);
    prox_pair_buffer hits, expected;
    prox_pair_buffer_init(&hits, NULL);
    prox_pair_buffer_init(&expected, NULL);
    if (crossings(PROX_BROAD_HIERARCHICAL, &boxes, rain, m, &hits) ||
        crossings(PROX_BROAD_BRUTE, &boxes, rain, m, &expected))
        return fail("segments");
    for (int64_t k = 0; k < hits.count; k++)
        printf("particle %u crosses %s\n", hits.pairs[k].i, level[hits.pairs[k].j].name);
    int same = hits.count == expected.count;
    for (int64_t k = 0; same && k < hits.count; k++)
        same = hits.pairs[k].i == expected.pairs[k].i && hits.pairs[k].j == expected.pairs[k].j;
    printf("%s brute force\n", same ? "same as" : "DIFFERENT FROM");
    /* by hand: the ground touches the wall, the crate, the pebble and the sign,
     * the crates touch each other; the paths cross the top crate, the pebble
     * and the ground, and the wall */
    int ok = same && pairs.count == 5 && hits.count == 4;
    prox_pair_buffer_free(&pairs);
    prox_pair_buffer_free(&hits);
    prox_pair_buffer_free(&expected);
    return ok ? 0 : 1;
}

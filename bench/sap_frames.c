/* sap_frames.c: sweep and prune over frames of small motions, the list
 * repaired by prox_broad_update (insertion sort) or rebuilt by
 * prox_broad_build, on the same object (steady state: no first-touch
 * memory). Built and run by bench/run-sap-benchmarks.sh.
 *
 * Usage: sap_frames BOXES.txt FRAMES STEP...
 * Every frame moves each box by U(-STEP, STEP) along each axis (a fixed
 * SplitMix64 stream, the same for every mode). Modes: update (the same
 * object, prox_broad_update), rebuild (the same object, prox_broad_build),
 * scratch (a new object each frame: create, build, pairs, destroy, as W3
 * and `prox collide` do; its memory is touched for the first time).
 * Prints one Markdown row per (STEP, mode): medians over the frames of the
 * structure's time (update or build) and of the pairs (count sink), wall
 * and process CPU seconds, the frames that rebuilt, and the pairs of the
 * last frame. One thread. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prox/prox.h"

static double seconds(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Boxes 'minx miny minz maxx maxy maxz' per line, '#' lines skipped. */
static double *read_boxes(const char *path, int64_t *count)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(4);
    }
    int64_t n = 0, capacity = 1 << 20;
    double *b = malloc((size_t)capacity * 6 * sizeof(double));
    char line[512];
    while (b && fgets(line, sizeof line, f)) {
        if (line[0] == '#')
            continue;
        if (n == capacity) {
            capacity *= 2;
            b = realloc(b, (size_t)capacity * 6 * sizeof(double));
            if (!b)
                break;
        }
        double *o = b + 6 * n;
        if (sscanf(line, "%lf %lf %lf %lf %lf %lf", o, o + 1, o + 2, o + 3, o + 4, o + 5) != 6) {
            fprintf(stderr, "%s: line %lld is not a 3D box\n", path, (long long)n + 1);
            exit(3);
        }
        n++;
    }
    fclose(f);
    if (!b) {
        fprintf(stderr, "out of memory\n");
        exit(5);
    }
    *count = n;
    return b;
}

static uint64_t splitmix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void move_boxes(double *b, int64_t n, double step, uint64_t *state)
{
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            double u = (double)(splitmix(state) >> 11) * 0x1.0p-53;
            double d = step * (2 * u - 1);
            b[6 * i + k] += d;
            b[6 * i + 3 + k] += d;
        }
}

typedef enum mode { UPDATE, REBUILD, SCRATCH } mode;
static const char *const mode_names[] = {"update", "rebuild", "scratch"};

static void fail(void)
{
    fprintf(stderr, "sap: %s\n", prox_last_error());
    exit(1);
}

static void run(const double *start, int64_t n, int frames, double step, mode m)
{
    double *b = malloc((size_t)n * 6 * sizeof(double));
    double *s_wall = malloc((size_t)frames * sizeof(double)), *s_cpu = malloc((size_t)frames * 8);
    double *p_wall = malloc((size_t)frames * sizeof(double)), *p_cpu = malloc((size_t)frames * 8);
    double *t_wall = malloc((size_t)frames * sizeof(double)), *t_cpu = malloc((size_t)frames * 8);
    if (!b || !s_wall || !s_cpu || !p_wall || !p_cpu || !t_wall || !t_cpu) {
        fprintf(stderr, "out of memory\n");
        exit(5);
    }
    memcpy(b, start, (size_t)n * 6 * sizeof(double));
    prox_broad_desc d = prox_default_broad_desc();
    d.algo = PROX_BROAD_SAP;
    d.threads = 1;
    prox_broad *broad = NULL;
    prox_boxes v = prox_boxes_f64(b, n, 3);
    if (prox_broad_create(&d, &broad) || prox_broad_build(broad, &v))
        fail();
    uint64_t state = 1;
    int rebuilt = 0;
    int64_t pairs = 0;
    for (int f = 0; f < frames; f++) {
        move_boxes(b, n, step, &state);
        prox_stats st = {0};
        if (m == SCRATCH) {
            prox_broad_destroy(broad);
            if (prox_broad_create(&d, &broad))
                fail();
        }
        double w0 = seconds(CLOCK_MONOTONIC), c0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        prox_status status = m == UPDATE ? prox_broad_update(broad, &v, &st)
                                         : prox_broad_build(broad, &v);
        double w1 = seconds(CLOCK_MONOTONIC), c1 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        prox_stats ps;
        if (!status)
            status = prox_broad_pairs(broad, prox_sink_count(), &ps);
        double w2 = seconds(CLOCK_MONOTONIC), c2 = seconds(CLOCK_PROCESS_CPUTIME_ID);
        if (status)
            fail();
        rebuilt += m == UPDATE ? st.rebuilt : 1;
        pairs = ps.pairs;
        s_wall[f] = w1 - w0;
        s_cpu[f] = c1 - c0;
        p_wall[f] = w2 - w1;
        p_cpu[f] = c2 - c1;
        t_wall[f] = w2 - w0;
        t_cpu[f] = c2 - c0;
    }
    printf("| %g | %s | %.4f | %.4f | %.4f | %.4f | %.4f | %.4f | %d/%d | %lld |\n", step,
           mode_names[m], median(s_wall, frames), median(s_cpu, frames), median(p_wall, frames),
           median(p_cpu, frames), median(t_wall, frames), median(t_cpu, frames), rebuilt, frames,
           (long long)pairs);
    prox_broad_destroy(broad);
    free(b);
    free(s_wall);
    free(s_cpu);
    free(p_wall);
    free(p_cpu);
    free(t_wall);
    free(t_cpu);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: sap_frames BOXES.txt FRAMES STEP...\n");
        return 2;
    }
    int64_t n;
    double *boxes = read_boxes(argv[1], &n);
    int frames = atoi(argv[2]);
    if (frames < 1) {
        fprintf(stderr, "FRAMES must be >= 1\n");
        return 2;
    }
    printf("| step | mode | structure wall s | structure cpu s | pairs wall s | pairs cpu s "
           "| total wall s | total cpu s | rebuilt | pairs (last frame) |\n");
    printf("|-----:|------|-----:|-----:|-----:|-----:|-----:|-----:|-----:|-----:|\n");
    for (int a = 3; a < argc; a++)
        for (int m = UPDATE; m <= (a == 3 ? SCRATCH : REBUILD); m++)
            run(boxes, n, frames, atof(argv[a]), (mode)m);
    free(boxes);
    return 0;
}

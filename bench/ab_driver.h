/* ab_driver.h: what the A/B drivers (grid_points.c, broad_spheres.c,
 * broad_segments.c) share:
 * reading a raw file of doubles and timing RUNS rounds of build + query on
 * one object, each printed as "build+query=total", the best returned. */
#ifndef PROX_BENCH_AB_DRIVER_H
#define PROX_BENCH_AB_DRIVER_H

#include <prox/prox.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double ab_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The file's little-endian doubles (malloc'd; NULL if unreadable). */
static double *ab_read_doubles(const char *path, int64_t *count)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    double *v = malloc((size_t)bytes + 8);
    *count = v ? (int64_t)(fread(v, 1, (size_t)bytes, f) / sizeof *v) : 0;
    fclose(f);
    return v;
}

/* One step of a round; `build` may be NULL (only the query is timed). */
typedef prox_status (*ab_step)(void *ctx);

/* RUNS rounds of build then query; returns the best total seconds, or a
 * negative value after printing the library's message. */
static inline double ab_time_runs(const char *program, int runs, ab_step build, ab_step query,
                           void *ctx)
{
    double best = 1e300;
    for (int r = 0; r < runs; r++) {
        double t0 = ab_now();
        prox_status st = build ? build(ctx) : PROX_OK;
        double t1 = ab_now();
        if (!st)
            st = query(ctx);
        double t2 = ab_now();
        if (st) {
            fprintf(stderr, "%s: %s\n", program, prox_last_error());
            return -1.0;
        }
        printf("%.4f+%.4f=%.4f  ", t1 - t0, t2 - t1, t2 - t0);
        best = t2 - t0 < best ? t2 - t0 : best;
    }
    return best;
}

#endif

/* toy2d.c: `prox demo toy2d`, the hash-multimap article's 2D particle toy (toy2d.h): how
 * many particles run at 60 frames per second with brute force and with the
 * grid. For each structure the search doubles N until the median frame
 * (neighbours + forces + integration) exceeds 1000/60 ms, then bisects to
 * within 2%; the table then shows one run of --frames frames at the N found. */
#define _POSIX_C_SOURCE 200809L
#include "toy2d.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scene.h"

static double fps_option = 60.0;
static double neighbours_option = 5.0;
static bool fixed_option = false;

static const scene_extra extras[] = {
    {"fps", "the frame rate to reach: the search's budget is 1000/X ms per frame", &fps_option,
     NULL},
    {"fixed", "no search: run --particles N with each structure", NULL, &fixed_option},
    {"neighbours", "mean particles within the interaction distance of one (fixed density)",
     &neighbours_option, NULL},
};

static const scene_info info = {
    .name = "toy2d",
    .summary = "2D toy of the hash-multimap article: particles at 60 frames/s, brute vs grid",
    .details = "Particles in a box repel each other within the interaction distance d (force\n"
               "k (1 - r/d)); walls reflect them. The box grows with N so that a particle has\n"
               "5 others within d on average. For each structure the search doubles N until\n"
               "the median frame time (--frames frames) exceeds 1000/fps ms, then bisects;\n"
               "the hash-multimap article went from ~300 particles (brute force) to 7,000+ (spatial hash).\n"
               "On a shared machine use --threads 1 --cpu-time.",
    .default_frames = 30,
    .default_particles = 1000,
    .algo_choices = "brute,grid",
    .algo_all = "brute,grid",
    .algo_default = "brute,grid",
    .extras = extras,
    .extra_count = (int)(sizeof extras / sizeof extras[0]),
};

#define SEARCH_MIN 64
#define SEARCH_MAX (INT64_C(1) << 24)

static double clock_ms(bool cpu)
{
    struct timespec t;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static toy2d_params params_for(const scene_options *o, prox_algo algo, int64_t n)
{
    toy2d_params p = toy2d_default_params();
    p.particles = n;
    p.neighbours = neighbours_option;
    p.seed = o->seed;
    p.threads = o->threads;
    p.algo = algo;
    return p;
}

/* Median ms per frame of `frames` frames of N particles (after 2 warm-up
 * frames); negative on failure (message from prox). */
static double measure(const scene_options *o, prox_algo algo, int64_t n, prox_status *status)
{
    toy2d_params p = params_for(o, algo, n);
    toy2d_world w;
    *status = toy2d_world_init(&w, &p);
    double *ms = malloc((size_t)o->frames * sizeof *ms);
    if (*status || !ms) {
        *status = *status ? *status : PROX_ERR_NO_MEMORY;
        free(ms);
        toy2d_world_free(&w);
        return -1;
    }
    for (int64_t f = -2; f < o->frames && *status == PROX_OK; f++) {
        double t0 = clock_ms(o->cpu_time);
        *status = toy2d_world_step(&w, NULL);
        if (f >= 0)
            ms[f] = clock_ms(o->cpu_time) - t0;
    }
    qsort(ms, (size_t)o->frames, sizeof *ms, compare_double);
    int64_t m = o->frames;
    double median = m % 2 ? ms[m / 2] : 0.5 * (ms[m / 2 - 1] + ms[m / 2]);
    free(ms);
    toy2d_world_free(&w);
    return *status ? -1 : median;
}

typedef struct search_result {
    int64_t particles; /* the largest N measured within budget (0: not even SEARCH_MIN) */
    double ms;         /* its median ms per frame */
    int64_t over;      /* the smallest N measured over budget (0: none up to SEARCH_MAX) */
    double over_ms;
    int measurements;
} search_result;

static void log_measure(const scene_options *o, const char *label, int64_t n, double ms,
                        double budget)
{
    if (!o->quiet)
        fprintf(stderr, "toy2d %-6s %9lld particles: %8.2f ms/frame (%s)\n", label,
                (long long)n, ms, ms <= budget ? "within budget" : "over");
}

/* Doubling, then bisection to within 2%. */
static prox_status search(const scene_options *o, prox_algo algo, const char *label,
                          double budget, search_result *out)
{
    *out = (search_result){0};
    prox_status st = PROX_OK;
    for (int64_t n = SEARCH_MIN; n <= SEARCH_MAX; n *= 2) {
        double ms = measure(o, algo, n, &st);
        if (st)
            return st;
        out->measurements++;
        log_measure(o, label, n, ms, budget);
        if (ms > budget) {
            out->over = n;
            out->over_ms = ms;
            break;
        }
        out->particles = n;
        out->ms = ms;
    }
    while (out->particles > 0 && out->over > 0 && out->over - out->particles > out->particles / 50) {
        int64_t mid = out->particles + (out->over - out->particles) / 2;
        double ms = measure(o, algo, mid, &st);
        if (st)
            return st;
        out->measurements++;
        log_measure(o, label, mid, ms, budget);
        if (ms > budget) {
            out->over = mid;
            out->over_ms = ms;
        } else {
            out->particles = mid;
            out->ms = ms;
        }
    }
    return PROX_OK;
}

static int render(scene_report *r, const toy2d_world *w, int64_t frame)
{
    double lo[3] = {0, 0, 0}, hi[3] = {w->side, w->side, 0};
    scene_view view = scene_default_view(lo, hi, 2);
    scene_canvas *c = scene_canvas_create(&view);
    if (!c)
        return SCENE_EXIT_NO_MEMORY;
    scene_canvas_clear(c);
    for (int64_t i = 0; i < w->n; i++) {
        const double *v = &w->vel[2 * i];
        double t = sqrt(v[0] * v[0] + v[1] * v[1]) / (2.0 * w->params.speed);
        t = t > 1 ? 1 : t;
        float rgb[3] = {(float)(0.2 + 0.75 * t), (float)(0.5 + 0.1 * t), (float)(0.9 - 0.7 * t)};
        double centre[3] = {w->pos[2 * i], w->pos[2 * i + 1], 0};
        scene_canvas_sphere(c, centre, 0.5 * w->params.distance, rgb);
    }
    int code = scene_png_write(r, c, frame);
    scene_canvas_destroy(c);
    return code;
}

/* One series of --frames frames at N particles, through the framework. */
static int run_series(scene_report *r, const scene_options *o, prox_algo algo, const char *label,
                      int64_t n)
{
    toy2d_params p = params_for(o, algo, n);
    toy2d_world w;
    prox_status st = toy2d_world_init(&w, &p);
    if (st)
        return st == PROX_ERR_NO_MEMORY ? SCENE_EXIT_NO_MEMORY : SCENE_EXIT_USAGE;
    int code = scene_series_begin(r, label);
    for (int64_t f = 0; f < o->frames && code == SCENE_EXIT_OK; f++) {
        int64_t pairs = 0;
        scene_frame_begin(r);
        st = toy2d_world_neighbours(&w, &pairs);
        scene_lap(r, SCENE_NEIGHBOURS);
        if (st) {
            code = scene_fail("toy2d", "neighbours", st);
            break;
        }
        toy2d_world_integrate(&w);
        scene_lap(r, SCENE_INTEGRATE);
        scene_state s = {.scene = "toy2d", .label = label, .frame = f, .count = w.n, .dim = 2,
                         .position = w.pos, .velocity = w.vel, .mass = 1.0, .dt = p.dt,
                         .box_hi = {w.side, w.side, 0}};
        if (scene_frame_end(r, pairs, 0, &s))
            code = SCENE_EXIT_INTERNAL;
        if (code == SCENE_EXIT_OK && scene_png_due(r, f))
            code = render(r, &w, f);
    }
    toy2d_world_free(&w);
    return code;
}

int prox_demo_toy2d(int argc, char **argv)
{
    /* The options live in statics (scene_extra): defaults again for each call. */
    fps_option = 60.0;
    neighbours_option = 5.0;
    fixed_option = false;
    scene_options o;
    int code = scene_parse(argc, argv, &info, &o);
    if (code != SCENE_CONTINUE)
        return code;
    if (!(fps_option > 0) || !(neighbours_option > 0)) {
        fprintf(stderr, "prox demo toy2d: --fps and --neighbours must be > 0 (see --help)\n");
        return SCENE_EXIT_USAGE;
    }
    double budget = 1e3 / fps_option;
    scene_report *r = scene_report_create(&info, &o);
    if (!r) {
        fprintf(stderr, "prox demo toy2d: out of memory\n");
        return SCENE_EXIT_NO_MEMORY;
    }
    int64_t found[SCENE_MAX_ALGOS] = {0};
    code = SCENE_EXIT_OK;
    for (int a = 0; a < o.algo_count && code == SCENE_EXIT_OK; a++) {
        prox_algo algo = strcmp(o.algos[a], "brute") == 0 ? PROX_ALGO_BRUTE : PROX_ALGO_GRID;
        int64_t n = o.particles;
        if (!fixed_option) {
            search_result s;
            prox_status st = search(&o, algo, o.algos[a], budget, &s);
            if (st) {
                code = scene_fail("toy2d", "search", st);
                break;
            }
            found[a] = s.particles;
            n = s.particles > 0 ? s.particles : SEARCH_MIN;
            if (s.over)
                scene_note(r, "%s: %lld particles at %g frames/s (%.2f ms/frame; %lld: %.2f ms), "
                              "%d measurements of %lld frames",
                           o.algos[a], (long long)s.particles, fps_option, s.ms,
                           (long long)s.over, s.over_ms, s.measurements, (long long)o.frames);
            else
                scene_note(r, "%s: still within budget at the search's limit, %lld particles",
                           o.algos[a], (long long)s.particles);
        }
        code = run_series(r, &o, algo, o.algos[a], n);
    }
    if (!fixed_option && code == SCENE_EXIT_OK) {
        printf("toy2d: particles at %g frames/s (median frame <= %.2f ms, %s clock, threads %d)\n",
               fps_option, budget, o.cpu_time ? "CPU" : "wall", o.threads);
        int64_t brute = 0, grid = 0;
        for (int a = 0; a < o.algo_count; a++) {
            if (found[a] > 0)
                printf("  %-6s %lld\n", o.algos[a], (long long)found[a]);
            else
                printf("  %-6s fewer than %d\n", o.algos[a], SEARCH_MIN);
            brute = strcmp(o.algos[a], "brute") == 0 ? found[a] : brute;
            grid = strcmp(o.algos[a], "grid") == 0 ? found[a] : grid;
        }
        if (brute > 0 && grid > 0)
            printf("  grid / brute = %.1fx (the hash-multimap article: ~300 -> 7,000+, about 23x)\n",
                   (double)grid / (double)brute);
    }
    return scene_report_finish(r, code);
}

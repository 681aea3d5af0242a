/* dem.c: `prox demo dem`, the falling spheres of Poirrier 2009, section 6 (W6):
 * one series per broad-phase structure, every series from the same initial
 * state; the physics is in dem_world.c (dem.h). Besides the framework's
 * table, the notes give the figures of Poirrier 2009, Figure 11: the mean broad-phase
 * time per step over steps 0-10 and 50-60 per structure. */
#define _POSIX_C_SOURCE 200809L
#include "dem.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scene.h"

static double gravity_option = 0.0;
static double restitution_option = 0.5;
static double fraction_option = 0.1;
static bool rebuild_option = false;

static const scene_extra extras[] = {
    {"rebuild", "rebuild the structure every step (default: prox_broad_update)", NULL,
     &rebuild_option},
    {"restitution", "restitution e of sphere and wall contacts, 0..1", &restitution_option, NULL},
    {"gravity", "downward acceleration per step^2; 0 = L/3600 (half the box in 60 steps)",
     &gravity_option, NULL},
    {"fraction", "volume fraction d of the initial cloud (W6: 0.1)", &fraction_option, NULL},
};

static const scene_info info = {
    .name = "dem",
    .summary = "W6: spheres fall onto the floor, overlaps resolved pairwise (Poirrier 2009, section 6)",
    .details = "N spheres of radius 1 start as W3's spheres (d = 0.1) at rest, fall under a\n"
               "constant acceleration in a closed box and pile up on the floor. Each step:\n"
               "integration, broad phase over the spheres' AABBs (--algo), then every\n"
               "overlapping pair in turn is pushed apart along the line of centres (position\n"
               "projection) and loses its approaching normal velocity (restitution e).\n"
               "The notes give the figures of Poirrier 2009, Figure 11: broad-phase ms per step, mean over\n"
               "steps 0-10 and 50-60. `prox bench dem3d` prints them as a table.",
    .default_frames = 61,
    .default_particles = 10000,
    .algo_choices = "kdtree,sap,hierarchical,multilevel,grid,brute",
    .algo_all = "kdtree,sap,hierarchical,multilevel,grid,brute",
    .algo_default = "grid",
    .extras = extras,
    .extra_count = (int)(sizeof extras / sizeof extras[0]),
};

/* The clock of the notes' Figure 11 figures: the framework's (--cpu-time). */
static double clock_ms(bool cpu)
{
    struct timespec t;
    clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

/* Blue at rest to orange at the speed of 60 steps of free fall. */
static void speed_colour(const dem_world *w, int64_t i, float rgb[3])
{
    const double *v = &w->vel[3 * i];
    double ref = w->gravity * 60.0 * w->params.dt;
    double t = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) / ref;
    t = t > 1 ? 1 : t;
    rgb[0] = (float)(0.25 + 0.7 * t);
    rgb[1] = (float)(0.45 + 0.1 * t);
    rgb[2] = (float)(0.9 - 0.7 * t);
}

static int render(scene_report *r, const dem_world *w, int64_t frame)
{
    double lo[3], hi[3];
    for (int k = 0; k < 3; k++) {
        lo[k] = w->lo - w->radius;
        hi[k] = w->hi + w->radius;
    }
    scene_view view = scene_default_view(lo, hi, 3);
    scene_canvas *c = scene_canvas_create(&view);
    if (!c)
        return SCENE_EXIT_NO_MEMORY;
    scene_canvas_clear(c);
    for (int64_t i = 0; i < w->n; i++) {
        float rgb[3];
        speed_colour(w, i, rgb);
        scene_canvas_sphere(c, &w->pos[3 * i], w->radius, rgb);
    }
    int code = scene_png_write(r, c, frame);
    scene_canvas_destroy(c);
    return code;
}

static scene_state state_of(const dem_world *w, const char *label)
{
    scene_state s = {.scene = "dem", .label = label, .frame = w->step - 1, .count = w->n,
                     .dim = 3, .position = w->pos, .velocity = w->vel, .mass = 1.0,
                     .dt = w->params.dt};
    s.gravity[2] = -w->gravity;
    for (int k = 0; k < 3; k++) { /* where the centres must stay */
        s.box_lo[k] = w->lo;
        s.box_hi[k] = w->hi;
    }
    return s;
}

/* Poirrier 2009, Figure 11: mean broad-phase ms over steps [first, last]. */
static double window_mean(const double *ms, int64_t frames, int64_t first, int64_t last)
{
    double sum = 0;
    int64_t n = 0;
    for (int64_t f = first; f <= last && f < frames; f++, n++)
        sum += ms[f];
    return n ? sum / (double)n : NAN;
}

/* FNV-1a over the final positions and velocities: equal for every
 * structure, since they all return the same sorted pairs. */
static uint64_t state_hash(const dem_world *w)
{
    uint64_t h = 14695981039346656037u;
    const unsigned char *bytes[2] = {(const unsigned char *)w->pos, (const unsigned char *)w->vel};
    for (int a = 0; a < 2; a++)
        for (size_t k = 0; k < (size_t)w->n * 3 * sizeof(double); k++)
            h = (h ^ bytes[a][k]) * 1099511628211u;
    return h;
}

/* One series: the whole run with one structure. */
static int run_series(scene_report *r, const scene_options *o, const dem_params *p,
                      const char *label, double *broad_ms, uint64_t *hash)
{
    dem_world w;
    prox_status st = dem_world_init(&w, p);
    if (st)
        return st == PROX_ERR_NO_MEMORY ? SCENE_EXIT_NO_MEMORY
                                        : scene_fail("dem", "setting up the spheres", st);
    int code = scene_series_begin(r, label);
    int64_t rebuilt = 0;
    for (int64_t f = 0; f < o->frames && code == SCENE_EXIT_OK; f++) {
        dem_step_info step = {0};
        scene_frame_begin(r);
        dem_world_integrate(&w);
        scene_lap(r, SCENE_INTEGRATE);
        double t0 = clock_ms(o->cpu_time);
        st = dem_world_broad(&w, &step);
        broad_ms[f] = clock_ms(o->cpu_time) - t0;
        scene_lap(r, SCENE_BROAD);
        if (st) {
            code = scene_fail("dem", "broad phase", st);
            break;
        }
        dem_world_narrow(&w, &step);
        scene_lap(r, SCENE_NARROW);
        rebuilt += step.rebuilt;
        scene_state s = state_of(&w, label);
        if (scene_frame_end(r, step.box_pairs, step.contacts, &s))
            code = SCENE_EXIT_INTERNAL;
        if (code == SCENE_EXIT_OK && scene_png_due(r, f))
            code = render(r, &w, f);
        if (f == o->frames - 1) {
            char late[64] = "no steps 50-60";
            if (o->frames > 50)
                snprintf(late, sizeof late, "%.2f over 50-60",
                         window_mean(broad_ms, o->frames, 50, 60));
            scene_note(r, "%s: broad phase %.2f ms/step (mean) over steps 0-10, %s; "
                          "last step %lld candidates, %lld box pairs, %lld contacts; "
                          "%lld of %lld steps rebuilt",
                       label, window_mean(broad_ms, o->frames, 0, 10), late,
                       (long long)step.candidates, (long long)step.box_pairs,
                       (long long)step.contacts, (long long)rebuilt, (long long)o->frames);
        }
    }
    *hash = state_hash(&w);
    dem_world_free(&w);
    return code;
}

int prox_demo_dem(int argc, char **argv)
{
    /* The options live in statics (scene_extra): defaults again for each call. */
    gravity_option = 0.0;
    restitution_option = 0.5;
    fraction_option = 0.1;
    rebuild_option = false;
    scene_options o;
    int code = scene_parse(argc, argv, &info, &o);
    if (code != SCENE_CONTINUE)
        return code;
    if (!(restitution_option >= 0 && restitution_option <= 1) || !(gravity_option >= 0) ||
        !(fraction_option > 0)) {
        fprintf(stderr, "prox demo dem: --restitution must be in [0, 1], --gravity >= 0, "
                        "--fraction > 0 (see --help)\n");
        return SCENE_EXIT_USAGE;
    }
    dem_params p = dem_default_params();
    p.spheres = o.particles;
    p.seed = o.seed;
    p.threads = o.threads;
    p.gravity = gravity_option;
    p.restitution = restitution_option;
    p.fraction = fraction_option;
    p.rebuild = rebuild_option;

    scene_report *r = scene_report_create(&info, &o);
    double *broad_ms = malloc((size_t)o.frames * sizeof *broad_ms);
    if (!r || !broad_ms) {
        free(broad_ms);
        if (r)
            scene_report_finish(r, SCENE_EXIT_NO_MEMORY);
        fprintf(stderr, "prox demo dem: out of memory\n");
        return SCENE_EXIT_NO_MEMORY;
    }
    uint64_t first_hash = 0;
    const char *first_label = NULL;
    int series = 0;
    code = SCENE_EXIT_OK;
    for (int a = 0; a < o.algo_count && code == SCENE_EXIT_OK; a++) {
        if (!scene_broad_algo(o.algos[a], &p.algo) || !scene_broad_available(p.algo)) {
            if (o.algo_all) {
                scene_note(r, "%s: not available in this build (skipped)", o.algos[a]);
                continue;
            }
            fprintf(stderr, "prox demo dem: structure '%s' is not available in this build\n",
                    o.algos[a]);
            code = SCENE_EXIT_USAGE;
            break;
        }
        uint64_t hash = 0;
        code = run_series(r, &o, &p, o.algos[a], broad_ms, &hash);
        if (code != SCENE_EXIT_OK)
            break;
        if (series++ == 0) {
            first_hash = hash;
            first_label = o.algos[a];
        } else if (hash != first_hash) {
            fprintf(stderr, "prox demo dem: %s ends in a different state from %s: the "
                            "structures disagree on the pairs\n", o.algos[a], first_label);
            code = SCENE_EXIT_INTERNAL;
        }
    }
    if (series > 1 && code == SCENE_EXIT_OK)
        scene_note(r, "all %d structures end in the same state, bit for bit", series);
    free(broad_ms);
    return scene_report_finish(r, code);
}

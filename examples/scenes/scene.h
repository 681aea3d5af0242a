/* scene.h: what every demo scene shares (`prox demo NAME`, examples/demo_NAME).
 *
 * The scenes are simulations written on prox's public API only, as a user
 * would write them. This framework gives them one option parser, one
 * per-phase timer, the live progress line, the final table, PNG frames from
 * a small renderer of its own and the gnuplot plot of ms per frame.
 *
 * How a scene uses it (see fluid.c for a complete one):
 *
 *     static const scene_info info = {.name = "fluid", .summary = "...",
 *         .default_frames = 300, .default_particles = 100000,
 *         .algo_choices = "grid,multilevel,hierarchical,kdtree,sap,brute",
 *         .algo_all = "grid,multilevel,hierarchical,kdtree,sap",
 *         .algo_default = "hierarchical"};
 *     int prox_demo_fluid(int argc, char **argv) {
 *         scene_options o;
 *         int code = scene_parse(argc, argv, &info, &o);   // argv[0] = program or scene name
 *         if (code != SCENE_CONTINUE) return code;          // --help (0) or usage error (2)
 *         scene_report *r = scene_report_create(&info, &o);
 *         for (int a = 0; a < o.algo_count; a++) {         // one series per --algo name
 *             scene_series_begin(r, o.algos[a]);
 *             ... set up ...
 *             for (int64_t f = 0; f < o.frames; f++) {
 *                 scene_frame_begin(r);                     // starts the frame's clock
 *                 ... hash ...        scene_lap(r, SCENE_HASH);
 *                 ... neighbours ...  scene_lap(r, SCENE_NEIGHBOURS);
 *                 ... integration ... scene_lap(r, SCENE_INTEGRATE);
 *                 scene_frame_end(r, pairs, hits, &state);  // records, progress, watch hook
 *                 if (scene_png_due(r, f)) { render into a scene_canvas; scene_png_write(...); }
 *             }
 *         }
 *         return scene_report_finish(r, SCENE_EXIT_OK);     // table, plot; frees r
 *     }
 *
 * Exit codes follow the CLI's (tools/cli.h): 0 ok, 2 usage, 3 bad data or a
 * library error, 4 I/O, 5 out of memory. Nothing here exits the process.
 *
 * Common options (scene_parse): --frames F, --seed S, --threads T,
 * --particles N, --algo A (a name, a comma list or `all`), --png DIR,
 * --png-every K, --plot, --quiet, --cpu-time, --help; plus the scene's own numeric
 * options and flags (scene_extra).
 *
 * Adding a scene: write NAME.c with `int prox_demo_NAME(int argc, char **argv)`,
 * declare it at the end of this file, add NAME.c to scenes.cmake, one row to
 * the table of tools/cmd_demo.c and NAME to the example list of
 * examples/CMakeLists.txt.
 */
#ifndef PROX_SCENE_H
#define PROX_SCENE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <prox/prox.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    SCENE_CONTINUE = -1, /* scene_parse: go on and run */
    SCENE_EXIT_OK = 0,
    SCENE_EXIT_INTERNAL = 1, /* a self-check failed */
    SCENE_EXIT_USAGE = 2,
    SCENE_EXIT_DATA = 3, /* bad data or a library call that failed */
    SCENE_EXIT_IO = 4,
    SCENE_EXIT_NO_MEMORY = 5,
};

#define SCENE_MAX_ALGOS 8
#define SCENE_MAX_EXTRAS 16

/* A scene's own option: --name VALUE into *number, or --name (a flag) into
 * *flag. Exactly one of number and flag is set. */
typedef struct scene_extra {
    const char *name; /* without "--" */
    const char *help; /* one line for --help */
    double *number;
    bool *flag;
} scene_extra;

/* What a scene says about itself. */
typedef struct scene_info {
    const char *name;    /* "fluid": prox demo NAME, file names of frames and plots */
    const char *summary; /* one line for --help */
    const char *details; /* more --help text (may be NULL) */
    int64_t default_frames;
    int64_t default_particles;
    /* --algo: the accepted names (comma list), what `all` expands to and the
     * default; NULL choices = the scene takes no --algo. */
    const char *algo_choices;
    const char *algo_all;
    const char *algo_default;
    const scene_extra *extras;
    int extra_count;
} scene_info;

typedef struct scene_options {
    int64_t frames;    /* --frames F */
    int64_t particles; /* --particles N */
    uint64_t seed;     /* --seed S (default 1) */
    int threads;       /* --threads T: 0 = OpenMP default; pass to every prox desc */
    const char *png_dir; /* --png DIR: write frames there (NULL = none) */
    int64_t png_every;   /* --png-every K: one frame in K (default frames/10, at least 1) */
    bool plot;           /* --plot: gnuplot PNG of ms per frame per series */
    bool quiet;          /* --quiet: no progress line (the table is still printed) */
    bool cpu_time;       /* --cpu-time: time phases with the process's CPU clock (summed
                            over threads) instead of the wall clock: on a shared machine,
                            with --threads 1, close to what an idle machine would show */
    bool algo_all;       /* --algo all was given: skip names the library lacks */
    int algo_count;      /* series to run: one per --algo name */
    const char *algos[SCENE_MAX_ALGOS];
} scene_options;

/* Parse argv[1..]; argv[0] names the program or scene. Returns SCENE_CONTINUE,
 * SCENE_EXIT_OK after --help or SCENE_EXIT_USAGE (message on stderr).
 * With --threads T > 0 it also sets OpenMP's thread count for the scene's
 * own loops. */
int scene_parse(int argc, char **argv, const scene_info *info, scene_options *out);

/* The broad-phase structure of an --algo name (prox_broad_algo_parse). */
bool scene_broad_algo(const char *name, prox_broad_algo *out);
/* Can the library build this structure here? (kdtree, sap may not be registered yet) */
bool scene_broad_available(prox_broad_algo algo);

/* Report a failed prox call ("NAME: what: prox_last_error()") and return the
 * exit code for the status. */
int scene_fail(const char *scene, const char *what, prox_status status);

/* ---- timing, progress and the final table ------------------------------ */

/* The phases of a frame (issue 6): each lap is charged to one of them. */
typedef enum scene_phase {
    SCENE_HASH = 0,      /* hashing moving objects (grid update / build) */
    SCENE_NEIGHBOURS,    /* particle-particle neighbour search */
    SCENE_BROAD,         /* broad-phase candidates */
    SCENE_NARROW,        /* exact tests and collision response */
    SCENE_INTEGRATE,     /* forces and time integration */
    SCENE_PHASES
} scene_phase;

const char *scene_phase_name(scene_phase phase);

/* What a scene shows the watch hook after each frame (tests use it). */
typedef struct scene_state {
    const char *scene;     /* scene name */
    const char *label;     /* the series (structure) */
    int64_t frame;         /* 0-based frame just finished */
    int64_t count;         /* particles */
    int dim;               /* 2 or 3 */
    const double *position; /* dim doubles per particle */
    const double *velocity; /* dim doubles per particle */
    double mass;           /* per particle */
    double dt;             /* time step of a frame */
    double gravity[3];
    double box_lo[3], box_hi[3]; /* the walls the particles must stay within */
} scene_state;

/* Return nonzero to stop the scene (it then ends with SCENE_EXIT_INTERNAL). */
typedef int (*scene_watch_fn)(const scene_state *state, void *user);
/* Process-wide hook called by scene_frame_end (NULL removes it). */
void scene_set_watch(scene_watch_fn fn, void *user);

typedef struct scene_report scene_report;

/* NULL when out of memory. */
scene_report *scene_report_create(const scene_info *info, const scene_options *options);
/* A new series (one structure); its frames are timed separately. Returns an
 * exit code (SCENE_EXIT_OK or SCENE_EXIT_NO_MEMORY). */
int scene_series_begin(scene_report *r, const char *label);
/* A note printed under the table ("hierarchical: setup 3.1 ms"). */
void scene_note(scene_report *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void scene_frame_begin(scene_report *r);
/* Charge the time since the last lap (or frame_begin) to `phase`. */
void scene_lap(scene_report *r, scene_phase phase);
/* Close the frame: record it, update the progress line, call the watch hook
 * (state may be NULL). Returns nonzero when the hook asked to stop. */
int scene_frame_end(scene_report *r, int64_t neighbours, int64_t collisions,
                    const scene_state *state);
/* Median ms per frame of the current series' frames so far (whole frame). */
double scene_series_median_ms(const scene_report *r);
/* Print the table (median ms per frame per phase, one row per series) to
 * stdout, write the plot when asked, free r. Returns `code` unless the plot
 * failed (then SCENE_EXIT_IO). */
int scene_report_finish(scene_report *r, int code);

/* ---- pictures ---------------------------------------------------------- */

/* Orthographic view of the box [lo, hi]: yaw turns about z, then pitch
 * tilts towards the viewer; yaw = pitch = 0 looks along +y with x to the
 * right and z up (3D) or looks down at the xy plane (2D). */
typedef struct scene_view {
    double lo[3], hi[3];
    double yaw, pitch; /* radians */
    int width, height; /* pixels */
    int dim;
} scene_view;

scene_view scene_default_view(const double lo[3], const double hi[3], int dim);

typedef struct scene_canvas scene_canvas;

scene_canvas *scene_canvas_create(const scene_view *view); /* NULL when out of memory */
void scene_canvas_destroy(scene_canvas *c);
/* Background, depth buffer reset, the box's edges drawn. */
void scene_canvas_clear(scene_canvas *c);
/* A shaded sphere (a disc in 2D): lit from the viewer's upper left, darker
 * with depth; rgb in [0, 1]. At least one pixel is drawn. */
void scene_canvas_sphere(scene_canvas *c, const double centre[3], double radius,
                         const float rgb[3]);
/* Frames are written for frame % png_every == 0 of the first series only,
 * when --png DIR was given. */
bool scene_png_due(const scene_report *r, int64_t frame);
/* Write DIR/NAME-FRAME.png (5 digits). Returns an exit code. */
int scene_png_write(scene_report *r, const scene_canvas *c, int64_t frame);

/* ---- the scenes -------------------------------------------------------- */

int prox_demo_fluid(int argc, char **argv);
int prox_demo_sph(int argc, char **argv);
int prox_demo_dem(int argc, char **argv);
int prox_demo_toy2d(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif

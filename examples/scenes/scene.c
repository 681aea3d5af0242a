/* scene.c: the demo scenes' shared framework (see scene.h): options, the
 * per-phase timer, progress line and table, the splat renderer, PNG frames
 * (libpng) and the gnuplot plot. Public prox API only. */
#define _POSIX_C_SOURCE 200809L
#include "scene.h"

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <png.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- options ----------------------------------------------------------- */

static void print_help(const scene_info *info, FILE *out)
{
    fprintf(out, "usage: prox demo %s [OPTIONS]   (or examples/demo_%s [OPTIONS])\n", info->name,
            info->name);
    fprintf(out, "%s\n", info->summary);
    if (info->details)
        fprintf(out, "\n%s\n", info->details);
    fprintf(out,
            "\nOptions:\n"
            "  --frames F      frames to simulate (default %lld)\n"
            "  --particles N   particles (default %lld)\n"
            "  --seed S        random seed of the initial state (default 1)\n"
            "  --threads T     threads for prox and the scene (default: OpenMP's)\n",
            (long long)info->default_frames, (long long)info->default_particles);
    if (info->algo_choices)
        fprintf(out,
                "  --algo A        structure: one of %s, a comma list, or all\n"
                "                  (= %s); default %s. One run (series) per name.\n",
                info->algo_choices, info->algo_all, info->algo_default);
    fprintf(out,
            "  --png DIR       write frames as DIR/%s-FRAME.png (first series only)\n"
            "  --png-every K   one frame in K (default: frames / 10)\n"
            "  --plot          gnuplot PNG of ms per frame per series: DIR/%s-ms-per-frame.png\n"
            "                  (DIR of --png, else the current directory)\n"
            "  --quiet         no progress line\n"
            "  --cpu-time      time with the process CPU clock (all threads summed), not the\n"
            "                  wall clock: for a loaded machine, with --threads 1\n",
            info->name, info->name);
    for (int k = 0; k < info->extra_count; k++) {
        const scene_extra *e = &info->extras[k];
        char left[64];
        snprintf(left, sizeof left, "--%s%s", e->name, e->number ? " X" : "");
        if (e->number)
            fprintf(out, "  %-15s %s (default %g)\n", left, e->help, *e->number);
        else
            fprintf(out, "  %-15s %s\n", left, e->help);
    }
    fprintf(out,
            "  --help          this text\n"
            "\nPrints a progress line (stderr) and a table of the median ms per frame per\n"
            "phase (stdout). Exit status: 0 ok, 2 usage, 3 bad data, 4 I/O, 5 out of memory.\n");
}

static int usage_error(const scene_info *info, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "prox demo %s: ", info->name);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see --help)\n");
    va_end(ap);
    return SCENE_EXIT_USAGE;
}

static bool parse_int(const char *text, int64_t min, int64_t max, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end); /* 1e5 and 100000 alike */
    if (errno || end == text || *end || v != floor(v) || v < (double)min || v > (double)max)
        return false;
    *out = (int64_t)v;
    return true;
}

/* Is `name` an element of the comma list `list`? */
static bool in_list(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p = comma ? comma + 1 : NULL;
    }
    return false;
}

/* Split a comma list into o->algos (the strings point into static storage
 * owned by this parser: argv or the scene_info). */
static int set_algos(const scene_info *info, scene_options *o, char *list)
{
    o->algo_count = 0;
    for (char *p = list; p && *p;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!in_list(info->algo_choices, p))
            return usage_error(info, "--algo: unknown structure '%s' (choose from %s or all)", p,
                               info->algo_choices);
        if (o->algo_count == SCENE_MAX_ALGOS)
            return usage_error(info, "--algo: at most %d names", SCENE_MAX_ALGOS);
        o->algos[o->algo_count++] = p;
        p = comma ? comma + 1 : NULL;
    }
    return o->algo_count ? SCENE_CONTINUE : usage_error(info, "--algo: empty list");
}

/* --algo values are split in place: keep a private copy per call. */
static char algo_storage[256];

static int parse_algo(const scene_info *info, scene_options *o, const char *value)
{
    o->algo_all = strcmp(value, "all") == 0;
    const char *list = o->algo_all ? info->algo_all : value;
    if (strlen(list) >= sizeof algo_storage)
        return usage_error(info, "--algo: list too long");
    strcpy(algo_storage, list);
    return set_algos(info, o, algo_storage);
}

static int parse_extra(const scene_info *info, const char *name, const char *value, bool *used,
                       bool *found)
{
    *found = false;
    *used = false;
    for (int k = 0; k < info->extra_count; k++) {
        const scene_extra *e = &info->extras[k];
        if (strcmp(e->name, name) != 0)
            continue;
        *found = true;
        if (e->flag) {
            *e->flag = true;
            return SCENE_CONTINUE;
        }
        if (!value)
            return usage_error(info, "--%s needs a value", name);
        char *end = NULL;
        errno = 0;
        double v = strtod(value, &end);
        if (errno || end == value || *end || !isfinite(v))
            return usage_error(info, "--%s: '%s' is not a number", name, value);
        *e->number = v;
        *used = true;
        return SCENE_CONTINUE;
    }
    return SCENE_CONTINUE;
}

int scene_parse(int argc, char **argv, const scene_info *info, scene_options *o)
{
    *o = (scene_options){.frames = info->default_frames,
                         .particles = info->default_particles,
                         .seed = 1,
                         .png_every = 0};
    if (info->algo_choices) {
        int code = parse_algo(info, o, info->algo_default);
        if (code != SCENE_CONTINUE)
            return code;
        o->algo_all = false;
    } else {
        o->algo_count = 1;
        o->algos[0] = info->name;
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            return usage_error(info, "unexpected argument '%s'", arg);
        char name[64];
        const char *eq = strchr(arg + 2, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name)
            return usage_error(info, "unknown option '%s'", arg);
        memcpy(name, arg + 2, len);
        name[len] = '\0';
        /* The value: after '=' or the next argument (taken only if needed). */
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        bool takes_next = !eq;
        int64_t v = 0;
        bool used = true;
        if (strcmp(name, "help") == 0) {
            print_help(info, stdout);
            return SCENE_EXIT_OK;
        } else if (strcmp(name, "plot") == 0) {
            o->plot = true;
            used = false;
        } else if (strcmp(name, "quiet") == 0) {
            o->quiet = true;
            used = false;
        } else if (strcmp(name, "cpu-time") == 0) {
            o->cpu_time = true;
            used = false;
        } else if (!value && (strcmp(name, "frames") == 0 || strcmp(name, "particles") == 0 ||
                              strcmp(name, "seed") == 0 || strcmp(name, "threads") == 0 ||
                              strcmp(name, "png") == 0 || strcmp(name, "png-every") == 0 ||
                              strcmp(name, "algo") == 0)) {
            return usage_error(info, "--%s needs a value", name);
        } else if (strcmp(name, "frames") == 0) {
            if (!parse_int(value, 1, INT64_C(1) << 32, &v))
                return usage_error(info, "--frames: '%s' is not a count >= 1", value);
            o->frames = v;
        } else if (strcmp(name, "particles") == 0) {
            if (!parse_int(value, 1, PROX_MAX_POINTS, &v))
                return usage_error(info, "--particles: '%s' is not a count >= 1", value);
            o->particles = v;
        } else if (strcmp(name, "seed") == 0) {
            if (!parse_int(value, 0, INT64_C(1) << 53, &v))
                return usage_error(info, "--seed: '%s' is not an integer >= 0", value);
            o->seed = (uint64_t)v;
        } else if (strcmp(name, "threads") == 0) {
            if (!parse_int(value, 0, 1024, &v))
                return usage_error(info, "--threads: '%s' is not a count 0..1024", value);
            o->threads = (int)v;
        } else if (strcmp(name, "png") == 0) {
            if (!*value)
                return usage_error(info, "--png: empty directory name");
            o->png_dir = value;
        } else if (strcmp(name, "png-every") == 0) {
            if (!parse_int(value, 1, INT64_C(1) << 32, &v))
                return usage_error(info, "--png-every: '%s' is not a count >= 1", value);
            o->png_every = v;
        } else if (strcmp(name, "algo") == 0) {
            if (!info->algo_choices)
                return usage_error(info, "this scene takes no --algo");
            int code = parse_algo(info, o, value);
            if (code != SCENE_CONTINUE)
                return code;
        } else {
            bool found;
            int code = parse_extra(info, name, value, &used, &found);
            if (code != SCENE_CONTINUE)
                return code;
            if (!found)
                return usage_error(info, "unknown option '--%s'", name);
        }
        if (eq && !used)
            return usage_error(info, "--%s takes no value", name);
        if (takes_next && used)
            i++;
    }
    if (!o->png_every)
        o->png_every = o->frames >= 10 ? o->frames / 10 : 1;
    if (o->threads > 0)
        omp_set_num_threads(o->threads);
    return SCENE_CONTINUE;
}

bool scene_broad_algo(const char *name, prox_broad_algo *out)
{
    return prox_broad_algo_parse(name, out) == PROX_OK;
}

bool scene_broad_available(prox_broad_algo algo)
{
    prox_broad_desc desc = prox_default_broad_desc();
    desc.algo = algo;
    prox_broad *b = NULL;
    if (prox_broad_create(&desc, &b) != PROX_OK)
        return false;
    prox_broad_destroy(b);
    return true;
}

int scene_fail(const char *scene, const char *what, prox_status status)
{
    fprintf(stderr, "prox demo %s: %s: %s\n", scene, what, prox_last_error());
    return status == PROX_ERR_NO_MEMORY ? SCENE_EXIT_NO_MEMORY : SCENE_EXIT_DATA;
}

/* ---- timing ------------------------------------------------------------ */

static const char *const phase_names[SCENE_PHASES] = {"hash", "neighbours", "broad phase",
                                                      "narrow phase", "integration"};

const char *scene_phase_name(scene_phase phase)
{
    return phase >= 0 && phase < SCENE_PHASES ? phase_names[phase] : "?";
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static scene_watch_fn watch_fn;
static void *watch_user;

void scene_set_watch(scene_watch_fn fn, void *user)
{
    watch_fn = fn;
    watch_user = user;
}

typedef struct series {
    char label[48];
    int64_t frames;       /* recorded */
    double *ms;           /* frames x SCENE_PHASES */
    int64_t neighbours, collisions; /* of the last frame */
} series;

struct scene_report {
    const scene_info *info;
    scene_options options;
    series *series;
    int series_count;
    double frame_ms[SCENE_PHASES]; /* the open frame */
    double mark;
    double last_print; /* ms clock of the last progress line */
    bool tty;
    char notes[2048];
    size_t notes_len;
};

scene_report *scene_report_create(const scene_info *info, const scene_options *options)
{
    scene_report *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->info = info;
    r->options = *options;
    r->series = calloc(SCENE_MAX_ALGOS, sizeof *r->series);
    if (!r->series) {
        free(r);
        return NULL;
    }
    r->tty = isatty(fileno(stderr));
    return r;
}

static void report_free(scene_report *r)
{
    for (int s = 0; s < r->series_count; s++)
        free(r->series[s].ms);
    free(r->series);
    free(r);
}

int scene_series_begin(scene_report *r, const char *label)
{
    if (r->series_count == SCENE_MAX_ALGOS)
        return SCENE_EXIT_INTERNAL;
    series *s = &r->series[r->series_count];
    *s = (series){0};
    snprintf(s->label, sizeof s->label, "%s", label);
    s->ms = calloc((size_t)r->options.frames * SCENE_PHASES, sizeof *s->ms);
    if (!s->ms)
        return SCENE_EXIT_NO_MEMORY;
    r->series_count++;
    return SCENE_EXIT_OK;
}

void scene_note(scene_report *r, const char *fmt, ...)
{
    if (r->notes_len + 2 >= sizeof r->notes)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->notes + r->notes_len, sizeof r->notes - r->notes_len - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    r->notes_len += (size_t)n;
    if (r->notes_len > sizeof r->notes - 2)
        r->notes_len = sizeof r->notes - 2;
    r->notes[r->notes_len++] = '\n';
    r->notes[r->notes_len] = '\0';
}

void scene_frame_begin(scene_report *r)
{
    for (int p = 0; p < SCENE_PHASES; p++)
        r->frame_ms[p] = 0;
    r->mark = r->options.cpu_time ? cpu_ms() : now_ms();
}

void scene_lap(scene_report *r, scene_phase phase)
{
    double t = r->options.cpu_time ? cpu_ms() : now_ms();
    r->frame_ms[phase] += t - r->mark;
    r->mark = t;
}

static double frame_total(const double *ms)
{
    double t = 0;
    for (int p = 0; p < SCENE_PHASES; p++)
        t += ms[p];
    return t;
}

static void progress(scene_report *r, const series *s)
{
    const double *ms = s->ms + (s->frames - 1) * SCENE_PHASES;
    int64_t every = r->options.frames >= 10 ? r->options.frames / 10 : 1;
    bool last = s->frames == r->options.frames;
    double t = now_ms();
    if (r->tty) {
        if (!last && t - r->last_print < 100) /* ten updates a second are plenty */
            return;
    } else if (s->frames % every != 0 && !last) {
        return;
    }
    r->last_print = t;
    fprintf(stderr, "%s%s %-12s frame %6lld/%lld  %8.2f ms/frame  %10lld neighbours  %8lld collisions%s",
            r->tty ? "\r" : "", r->info->name, s->label, (long long)s->frames,
            (long long)r->options.frames, frame_total(ms), (long long)s->neighbours,
            (long long)s->collisions, r->tty ? (last ? "\n" : "") : "\n");
    fflush(stderr);
}

int scene_frame_end(scene_report *r, int64_t neighbours, int64_t collisions,
                    const scene_state *state)
{
    series *s = &r->series[r->series_count - 1];
    if (s->frames < r->options.frames) {
        memcpy(s->ms + s->frames * SCENE_PHASES, r->frame_ms, sizeof r->frame_ms);
        s->frames++;
    }
    s->neighbours = neighbours;
    s->collisions = collisions;
    if (!r->options.quiet)
        progress(r, s);
    if (watch_fn && state)
        return watch_fn(state, watch_user);
    return 0;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int64_t n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, compare_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Median over the series' frames of phase p (p = SCENE_PHASES: the whole frame). */
static double series_median(const series *s, int p)
{
    double *v = malloc((size_t)(s->frames ? s->frames : 1) * sizeof *v);
    if (!v)
        return NAN;
    for (int64_t f = 0; f < s->frames; f++)
        v[f] = p == SCENE_PHASES ? frame_total(s->ms + f * SCENE_PHASES)
                                 : s->ms[f * SCENE_PHASES + p];
    double m = median(v, s->frames);
    free(v);
    return m;
}

double scene_series_median_ms(const scene_report *r)
{
    return r->series_count ? series_median(&r->series[r->series_count - 1], SCENE_PHASES) : 0;
}

static void print_table(const scene_report *r)
{
    printf("\n%s: median ms per frame per phase (%lld frames, %lld particles, threads %d%s)\n\n",
           r->info->name, (long long)r->options.frames, (long long)r->options.particles,
           r->options.threads ? r->options.threads : omp_get_max_threads(),
           r->options.cpu_time ? ", CPU time" : "");
    printf("| structure | hash | neighbours | broad phase | narrow phase | integration | "
           "frame | frames/s |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < r->series_count; i++) {
        const series *s = &r->series[i];
        printf("| %s |", s->label);
        for (int p = 0; p < SCENE_PHASES; p++)
            printf(" %.2f |", series_median(s, p));
        double total = series_median(s, SCENE_PHASES);
        printf(" %.2f | %.1f |\n", total, total > 0 ? 1e3 / total : 0.0);
    }
    if (r->notes_len)
        printf("\n%s", r->notes);
    fflush(stdout);
}

static const char *out_dir(const scene_report *r)
{
    return r->options.png_dir ? r->options.png_dir : ".";
}

static int make_dir(const char *dir)
{
    if (mkdir(dir, 0777) == 0 || errno == EEXIST)
        return SCENE_EXIT_OK;
    fprintf(stderr, "prox demo: cannot create directory %s: %s\n", dir, strerror(errno));
    return SCENE_EXIT_IO;
}

/* The median of frames [f - 4, f + 4] of a series (the plot's curve: a
 * shared machine's timings jump from frame to frame). */
static double running_median(const series *s, int64_t f)
{
    double v[9];
    int n = 0;
    for (int64_t g = f - 4; g <= f + 4; g++)
        if (g >= 0 && g < s->frames)
            v[n++] = frame_total(s->ms + g * SCENE_PHASES);
    return median(v, n);
}

/* Pouchol et al. 2009, Figure 6 (right): ms per frame over time, one curve per structure. */
static int write_plot(const scene_report *r)
{
    const char *dir = out_dir(r);
    int code = make_dir(dir);
    if (code)
        return code;
    char data[4096], png[4096];
    snprintf(data, sizeof data, "%s/%s-ms-per-frame.dat", dir, r->info->name);
    snprintf(png, sizeof png, "%s/%s-ms-per-frame.png", dir, r->info->name);
    FILE *f = fopen(data, "w");
    if (!f) {
        fprintf(stderr, "prox demo: cannot write %s: %s\n", data, strerror(errno));
        return SCENE_EXIT_IO;
    }
    fprintf(f, "# %s: ms per frame (whole frame) per structure, then the running median of\n"
               "# 9 frames of each\n# frame", r->info->name);
    for (int s = 0; s < r->series_count; s++)
        fprintf(f, " %s", r->series[s].label);
    for (int s = 0; s < r->series_count; s++)
        fprintf(f, " %s_median9", r->series[s].label);
    fprintf(f, "\n");
    for (int64_t fr = 0; fr < r->options.frames; fr++) {
        fprintf(f, "%lld", (long long)fr);
        for (int s = 0; s < r->series_count; s++) {
            const series *se = &r->series[s];
            if (fr < se->frames)
                fprintf(f, " %.4f", frame_total(se->ms + fr * SCENE_PHASES));
            else
                fprintf(f, " NaN");
        }
        for (int s = 0; s < r->series_count; s++) {
            const series *se = &r->series[s];
            if (fr < se->frames)
                fprintf(f, " %.4f", running_median(se, fr));
            else
                fprintf(f, " NaN");
        }
        fprintf(f, "\n");
    }
    if (fclose(f) != 0) {
        fprintf(stderr, "prox demo: cannot write %s\n", data);
        return SCENE_EXIT_IO;
    }
    FILE *g = popen("gnuplot", "w");
    if (!g) {
        fprintf(stderr, "prox demo: cannot run gnuplot (install gnuplot-nox)\n");
        return SCENE_EXIT_IO;
    }
    fprintf(g,
            "set terminal pngcairo size 900,540 font 'sans,11'\n"
            "set output '%s'\n"
            "set title '%s: %lld particles, threads %d: ms per frame (running median of 9 "
            "frames)'\n"
            "set xlabel 'frame'\nset ylabel 'ms per frame%s'\n"
            "set key outside right top\nset grid\nset yrange [0:*]\n"
            "plot ",
            png, r->info->name, (long long)r->options.particles,
            r->options.threads ? r->options.threads : omp_get_max_threads(),
            r->options.cpu_time ? " (CPU time)" : "");
    for (int s = 0; s < r->series_count; s++)
        fprintf(g, "%s'%s' using 1:%d with lines lw 2 title '%s'", s ? ", " : "", data,
                r->series_count + s + 2, r->series[s].label);
    fprintf(g, "\n");
    int status = pclose(g);
    if (status != 0) {
        /* pngcairo may be missing: gnuplot-nox has png (libgd) too. */
        g = popen("gnuplot", "w");
        if (g) {
            fprintf(g, "set terminal png size 900,540\nset output '%s'\n"
                       "set title '%s: ms per frame'\nset xlabel 'frame'\nset ylabel 'ms'\n"
                       "set grid\nset yrange [0:*]\nplot ", png, r->info->name);
            for (int s = 0; s < r->series_count; s++)
                fprintf(g, "%s'%s' using 1:%d with lines title '%s'", s ? ", " : "", data,
                        s + 2, r->series[s].label);
            fprintf(g, "\n");
            status = pclose(g);
        }
    }
    if (status != 0) {
        fprintf(stderr, "prox demo: gnuplot failed to write %s\n", png);
        return SCENE_EXIT_IO;
    }
    printf("plot: %s (data: %s)\n", png, data);
    return SCENE_EXIT_OK;
}

int scene_report_finish(scene_report *r, int code)
{
    if (!r)
        return code;
    if (r->series_count && r->series[0].frames)
        print_table(r);
    if (code == SCENE_EXIT_OK && r->options.plot && r->series_count) {
        int plot_code = write_plot(r);
        if (plot_code)
            code = plot_code;
    }
    if (r->options.png_dir && code == SCENE_EXIT_OK)
        printf("frames: %s/%s-*.png\n", r->options.png_dir, r->info->name);
    report_free(r);
    return code;
}

/* ---- the renderer ------------------------------------------------------ */

struct scene_canvas {
    scene_view view;
    double right[3], up[3], forward[3]; /* camera axes in world coordinates */
    double scale, offset_x, offset_y;   /* world (camera plane) -> pixels */
    double depth_near, depth_far;
    float *rgb;   /* width x height x 3 */
    float *depth; /* width x height; larger = farther */
    unsigned char *bytes;
};

scene_view scene_default_view(const double lo[3], const double hi[3], int dim)
{
    scene_view v = {.width = 960, .height = 720, .dim = dim};
    for (int k = 0; k < 3; k++) {
        v.lo[k] = lo[k];
        v.hi[k] = dim == 2 && k == 2 ? 0 : hi[k];
    }
    if (dim == 3) {
        v.yaw = 0.5;    /* a little from the side ... */
        v.pitch = 0.35; /* ... and from above */
    }
    return v;
}

static double dot3(const double a[3], const double b[3])
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void camera_axes(scene_canvas *c)
{
    const scene_view *v = &c->view;
    if (v->dim == 2) {
        double r[3] = {1, 0, 0}, u[3] = {0, 1, 0}, f[3] = {0, 0, -1};
        memcpy(c->right, r, sizeof r);
        memcpy(c->up, u, sizeof u);
        memcpy(c->forward, f, sizeof f);
        return;
    }
    double cy = cos(v->yaw), sy = sin(v->yaw), cp = cos(v->pitch), sp = sin(v->pitch);
    /* yaw about z, then pitch: the viewer rises and looks down */
    double r[3] = {cy, sy, 0};
    double f[3] = {-sy * cp, cy * cp, -sp};
    double u[3] = {-sy * sp, cy * sp, cp};
    memcpy(c->right, r, sizeof r);
    memcpy(c->up, u, sizeof u);
    memcpy(c->forward, f, sizeof f);
}

/* Fit the box's projected corners into the image with a margin. */
static void fit(scene_canvas *c)
{
    double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
    double dmin = INFINITY, dmax = -INFINITY;
    for (int corner = 0; corner < 8; corner++) {
        double p[3];
        for (int k = 0; k < 3; k++)
            p[k] = (corner >> k) & 1 ? c->view.hi[k] : c->view.lo[k];
        double x = dot3(p, c->right), y = dot3(p, c->up), d = dot3(p, c->forward);
        xmin = fmin(xmin, x), xmax = fmax(xmax, x);
        ymin = fmin(ymin, y), ymax = fmax(ymax, y);
        dmin = fmin(dmin, d), dmax = fmax(dmax, d);
    }
    double w = c->view.width, h = c->view.height, margin = 0.05;
    double sx = w * (1 - 2 * margin) / fmax(xmax - xmin, 1e-300);
    double sy = h * (1 - 2 * margin) / fmax(ymax - ymin, 1e-300);
    c->scale = fmin(sx, sy);
    c->offset_x = 0.5 * w - c->scale * 0.5 * (xmin + xmax);
    c->offset_y = 0.5 * h + c->scale * 0.5 * (ymin + ymax); /* image y grows downwards */
    c->depth_near = dmin;
    c->depth_far = dmax > dmin ? dmax : dmin + 1;
}

scene_canvas *scene_canvas_create(const scene_view *view)
{
    scene_canvas *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->view = *view;
    size_t pixels = (size_t)view->width * (size_t)view->height;
    c->rgb = malloc(pixels * 3 * sizeof *c->rgb);
    c->depth = malloc(pixels * sizeof *c->depth);
    c->bytes = malloc(pixels * 3);
    if (!c->rgb || !c->depth || !c->bytes) {
        scene_canvas_destroy(c);
        return NULL;
    }
    camera_axes(c);
    fit(c);
    scene_canvas_clear(c);
    return c;
}

void scene_canvas_destroy(scene_canvas *c)
{
    if (!c)
        return;
    free(c->rgb);
    free(c->depth);
    free(c->bytes);
    free(c);
}

static void project(const scene_canvas *c, const double p[3], double *x, double *y, double *d)
{
    *x = c->offset_x + c->scale * dot3(p, c->right);
    *y = c->offset_y - c->scale * dot3(p, c->up);
    *d = dot3(p, c->forward);
}

/* A depth-tested line (the box's edges), one sample per pixel step. */
static void line(scene_canvas *c, const double a[3], const double b[3], float grey)
{
    double ax, ay, ad, bx, by, bd;
    project(c, a, &ax, &ay, &ad);
    project(c, b, &bx, &by, &bd);
    int steps = (int)fmax(fabs(bx - ax), fabs(by - ay)) + 1;
    for (int s = 0; s <= steps; s++) {
        double t = (double)s / steps;
        int x = (int)(ax + t * (bx - ax)), y = (int)(ay + t * (by - ay));
        if (x < 0 || y < 0 || x >= c->view.width || y >= c->view.height)
            continue;
        size_t i = (size_t)y * (size_t)c->view.width + (size_t)x;
        float d = (float)(ad + t * (bd - ad));
        if (d <= c->depth[i]) {
            c->depth[i] = d;
            c->rgb[3 * i] = c->rgb[3 * i + 1] = c->rgb[3 * i + 2] = grey;
        }
    }
}

void scene_canvas_clear(scene_canvas *c)
{
    size_t pixels = (size_t)c->view.width * (size_t)c->view.height;
    for (size_t i = 0; i < pixels; i++) {
        /* a soft vertical gradient */
        double t = (double)(i / (size_t)c->view.width) / c->view.height;
        c->rgb[3 * i] = (float)(0.96 - 0.10 * t);
        c->rgb[3 * i + 1] = (float)(0.97 - 0.08 * t);
        c->rgb[3 * i + 2] = (float)(0.99 - 0.05 * t);
        c->depth[i] = INFINITY;
    }
    const double *lo = c->view.lo, *hi = c->view.hi;
    for (int corner = 0; corner < 8; corner++)
        for (int k = 0; k < 3; k++) {
            if ((corner >> k) & 1)
                continue;
            double a[3], b[3];
            for (int j = 0; j < 3; j++)
                a[j] = b[j] = (corner >> j) & 1 ? hi[j] : lo[j];
            b[k] = hi[k];
            if (a[k] != b[k])
                line(c, a, b, 0.55f);
        }
}

void scene_canvas_sphere(scene_canvas *c, const double centre[3], double radius,
                         const float rgb[3])
{
    double cx, cy, cd;
    project(c, centre, &cx, &cy, &cd);
    double pr = radius * c->scale; /* radius in pixels */
    double depth_t = (cd - c->depth_near) / (c->depth_far - c->depth_near);
    float fade = (float)(1.0 - 0.45 * fmin(fmax(depth_t, 0), 1)); /* farther = darker */
    int w = c->view.width, h = c->view.height;
    if (pr < 0.75) { /* one pixel */
        int x = (int)cx, y = (int)cy;
        if (x < 0 || y < 0 || x >= w || y >= h)
            return;
        size_t i = (size_t)y * (size_t)w + (size_t)x;
        if (cd < c->depth[i]) {
            c->depth[i] = (float)cd;
            for (int k = 0; k < 3; k++)
                c->rgb[3 * i + k] = rgb[k] * fade * 0.9f;
        }
        return;
    }
    int x0 = (int)floor(cx - pr), x1 = (int)ceil(cx + pr);
    int y0 = (int)floor(cy - pr), y1 = (int)ceil(cy + pr);
    x0 = x0 < 0 ? 0 : x0, y0 = y0 < 0 ? 0 : y0;
    x1 = x1 >= w ? w - 1 : x1, y1 = y1 >= h ? h - 1 : y1;
    const double light[3] = {-0.45, 0.55, 0.70}; /* camera frame: left, up, towards viewer */
    for (int y = y0; y <= y1; y++)
        for (int x = x0; x <= x1; x++) {
            double nx = (x + 0.5 - cx) / pr, ny = (cy - (y + 0.5)) / pr;
            double q = nx * nx + ny * ny;
            if (q > 1)
                continue;
            double nz = sqrt(1 - q); /* towards the viewer */
            float d = (float)(cd - nz * radius);
            size_t i = (size_t)y * (size_t)w + (size_t)x;
            if (d >= c->depth[i])
                continue;
            c->depth[i] = d;
            double lambert = fmax(0, nx * light[0] + ny * light[1] + nz * light[2]);
            float shade = (float)(0.35 + 0.65 * lambert) * fade;
            for (int k = 0; k < 3; k++)
                c->rgb[3 * i + k] = fminf(1.0f, rgb[k] * shade);
        }
}

bool scene_png_due(const scene_report *r, int64_t frame)
{
    return r->options.png_dir && r->series_count == 1 && frame % r->options.png_every == 0;
}

int scene_png_write(scene_report *r, const scene_canvas *c, int64_t frame)
{
    int code = make_dir(r->options.png_dir);
    if (code)
        return code;
    size_t pixels = (size_t)c->view.width * (size_t)c->view.height;
    for (size_t i = 0; i < 3 * pixels; i++) {
        float v = c->rgb[i] < 0 ? 0 : c->rgb[i] > 1 ? 1 : c->rgb[i];
        c->bytes[i] = (unsigned char)lrintf(v * 255.0f);
    }
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s-%05lld.png", r->options.png_dir, r->info->name,
             (long long)frame);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    png_image image;
    memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = (png_uint_32)c->view.width;
    image.height = (png_uint_32)c->view.height;
    image.format = PNG_FORMAT_RGB;
    if (!png_image_write_to_file(&image, tmp, 0, c->bytes, 0, NULL) || rename(tmp, path) != 0) {
        fprintf(stderr, "prox demo %s: cannot write %s: %s\n", r->info->name, path,
                image.message[0] ? image.message : strerror(errno));
        remove(tmp);
        return SCENE_EXIT_IO;
    }
    return SCENE_EXIT_OK;
}

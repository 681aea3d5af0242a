/* sph.c: `prox demo sph`: a dam break with smoothed particle hydrodynamics
 * (Müller, Charypar & Gross 2003; the flat-array article, section 5 for the density).
 *
 * A block of water (particles on a lattice of spacing s) stands against the
 * -x wall of a box four times as long as the block; released, it collapses
 * and runs along the floor to the far wall. Each frame:
 *   hash         the uniform grid (radius h = 2 s) relocates the moved
 *                particles (prox_grid_update, the fluid-hash chapter);
 *   neighbours   every particle's neighbours within h (CSR lists);
 *   integration  density with the poly6 kernel (the flat-array article):
 *                  rho_i = sum_j m W_poly6(|x_i - x_j|, h), self included,
 *                  W_poly6(r, h) = 315 / (64 pi h^9) (h^2 - r^2)^3;
 *                pressure p = c^2 (rho - rho0), clamped at 0 (no tension);
 *                pressure force with the spiky kernel's gradient and
 *                viscosity with the viscosity kernel's Laplacian (Müller
 *                eqs. 10 and 14); gravity; symplectic Euler; the walls.
 * The mass is set so that a particle inside the lattice has density rho0.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"

/* Scene parameters, reset to their defaults on every call of prox_demo_sph. */
static double opt_spacing, opt_viscosity, opt_sound, opt_restitution, opt_skin;

/* Neighbour rows in traversal order: the sums over a row need no sorted
 * row, and the order is still the same for every thread count. */
static prox_sink neighbour_sink(prox_lists *lists)
{
    return prox_sink_unsorted(prox_sink_lists(lists));
}

static void default_options(void)
{
    opt_spacing = 0.01;   /* m */
    opt_viscosity = 0.8;  /* Pa s: a thick, stable water */
    opt_sound = 0;        /* m/s; 0 = 8 sqrt(g H) */
    opt_restitution = 0.2;
    opt_skin = 0;
}

static const scene_extra extras[] = {
    {"spacing", "particle spacing s in the initial block, m (h = 2 s)", &opt_spacing, NULL},
    {"viscosity", "dynamic viscosity mu, Pa s", &opt_viscosity, NULL},
    {"sound", "speed of sound c, m/s (0 = 8 sqrt(g * block height))", &opt_sound, NULL},
    {"restitution", "bounce off the walls, 0..1", &opt_restitution, NULL},
    {"skin", "neighbours from a skin list of this skin, m (0 = grid update)", &opt_skin, NULL},
};

static const scene_info info = {
    .name = "sph",
    .summary = "SPH dam break: poly6 density (the flat-array article), pressure and viscosity forces",
    .details = "Neighbours within h = 2 x spacing through the uniform grid, updated every\n"
               "frame. The time step follows the CFL rule dt = 0.4 h / c.",
    .default_frames = 1000,
    .default_particles = 100000,
    .algo_choices = NULL,
    .extras = extras,
    .extra_count = (int)(sizeof extras / sizeof extras[0]),
};

#define SPH_PI 3.14159265358979323846
#define RHO0 1000.0
#define GRAVITY 9.81
/* Shorter loops run on one thread: a parallel region would cost more than
 * the loop (on a shared machine, much more). */
#define PARALLEL_MIN 16384

typedef struct sph {
    int64_t n;
    double *x, *v, *a; /* 3n each */
    double *rho, *pressure;
    double h, mass, c, dt;
    double box[3];
    prox_grid *grid;
    prox_skin_list *skin;
    prox_lists neighbours;
    int64_t wall_hits;
} sph;

static void sph_free(sph *s)
{
    free(s->x);
    free(s->v);
    free(s->a);
    free(s->rho);
    free(s->pressure);
    prox_grid_destroy(s->grid);
    prox_skin_list_destroy(s->skin);
    prox_lists_free(&s->neighbours);
    free(s);
}

static double poly6(double r2, double h)
{
    double h2 = h * h;
    if (r2 >= h2)
        return 0;
    double d = h2 - r2;
    return 315.0 / (64.0 * SPH_PI * pow(h, 9)) * d * d * d;
}

/* The mass that gives an interior lattice particle the density rho0. */
static double lattice_mass(double s, double h)
{
    double sum = 0;
    int reach = (int)ceil(h / s);
    for (int i = -reach; i <= reach; i++)
        for (int j = -reach; j <= reach; j++)
            for (int k = -reach; k <= reach; k++)
                sum += poly6((double)(i * i + j * j + k * k) * s * s, h);
    return RHO0 / sum;
}

/* The block: nx x ny x nz lattice sites with ny = nz = 1.25 nx, filled
 * layer by layer from the floor up to exactly n particles; a tiny jitter
 * (from the seed) breaks the lattice's symmetry. */
static sph *sph_create(const scene_options *o)
{
    sph *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->n = o->particles;
    size_t bytes = (size_t)s->n * 3 * sizeof(double);
    s->x = malloc(bytes);
    s->v = calloc(1, bytes);
    s->a = calloc(1, bytes);
    s->rho = malloc((size_t)s->n * sizeof(double));
    s->pressure = malloc((size_t)s->n * sizeof(double));
    if (!s->x || !s->v || !s->a || !s->rho || !s->pressure) {
        sph_free(s);
        return NULL;
    }
    double sp = opt_spacing;
    int64_t nx = (int64_t)ceil(cbrt((double)s->n / 1.5625));
    int64_t ny = (int64_t)ceil(1.25 * (double)nx);
    int64_t layer = nx * ny, nz = (s->n + layer - 1) / layer;
    s->h = 2 * sp;
    s->box[0] = 4.0 * (double)nx * sp;
    s->box[1] = (double)ny * sp;
    s->box[2] = 1.6 * (double)nz * sp;
    double height = (double)nz * sp;
    s->c = opt_sound > 0 ? opt_sound : 8.0 * sqrt(GRAVITY * height);
    s->dt = 0.4 * s->h / s->c;
    s->mass = lattice_mass(sp, s->h);
    uint64_t state = o->seed;
    for (int64_t i = 0; i < s->n; i++) {
        int64_t z = i / layer, y = (i % layer) / nx, x = i % nx;
        int64_t cell[3] = {x, y, z};
        for (int k = 0; k < 3; k++) {
            /* SplitMix64 for the jitter: 1% of the spacing */
            uint64_t r = (state += 0x9E3779B97F4A7C15ULL);
            r = (r ^ (r >> 30)) * 0xBF58476D1CE4E5B9ULL;
            r = (r ^ (r >> 27)) * 0x94D049BB133111EBULL;
            double u = (double)((r ^ (r >> 31)) >> 11) * 0x1p-53;
            s->x[3 * i + k] = ((double)cell[k] + 0.5 + 0.01 * (u - 0.5)) * sp;
        }
    }
    prox_lists_init(&s->neighbours, NULL);
    return s;
}

static int setup(sph *s, const scene_options *o)
{
    prox_grid_desc gd = prox_default_grid_desc();
    gd.radius = s->h;
    gd.threads = o->threads;
    prox_points pts = prox_points_f64(s->x, s->n, 3);
    prox_status st;
    if (opt_skin > 0)
        st = prox_skin_list_create(&gd, opt_skin, &s->skin);
    else if (!(st = prox_grid_create(&gd, &s->grid)))
        st = prox_grid_build(s->grid, &pts);
    return st ? scene_fail(info.name, "building the grid", st) : SCENE_EXIT_OK;
}

/* Density (poly6) and pressure of every particle, from its row. */
static void density(sph *s)
{
    const prox_lists *l = &s->neighbours;
    const double h2 = s->h * s->h;
    const double k6 = 315.0 / (64.0 * SPH_PI * pow(s->h, 9));
    const double c2 = s->c * s->c;
#pragma omp parallel for schedule(static) if (s->n >= PARALLEL_MIN)
    for (int64_t i = 0; i < s->n; i++) {
        const double *xi = s->x + 3 * i;
        double sum = h2 * h2 * h2; /* the particle itself */
        for (int64_t e = l->offsets[i]; e < l->offsets[i + 1]; e++) {
            const double *xj = s->x + 3 * (int64_t)l->indices[e];
            double dx = xi[0] - xj[0], dy = xi[1] - xj[1], dz = xi[2] - xj[2];
            double d = h2 - (dx * dx + dy * dy + dz * dz);
            if (d > 0)
                sum += d * d * d;
        }
        double rho = s->mass * k6 * sum;
        s->rho[i] = rho;
        s->pressure[i] = rho > RHO0 ? c2 * (rho - RHO0) : 0.0;
    }
}

/* Pressure (spiky gradient) and viscosity (Laplacian) accelerations plus
 * gravity, each particle summing its own row. */
static void forces(sph *s)
{
    const prox_lists *l = &s->neighbours;
    const double h = s->h, m = s->mass;
    const double spiky = -45.0 / (SPH_PI * pow(h, 6)); /* grad W = spiky (h - r)^2 r/|r| */
    const double lap = 45.0 / (SPH_PI * pow(h, 6));    /* lap W = lap (h - r) */
#pragma omp parallel for schedule(static) if (s->n >= PARALLEL_MIN)
    for (int64_t i = 0; i < s->n; i++) {
        const double *xi = s->x + 3 * i, *vi = s->v + 3 * i;
        double f[3] = {0, 0, 0};
        for (int64_t e = l->offsets[i]; e < l->offsets[i + 1]; e++) {
            int64_t j = l->indices[e];
            const double *xj = s->x + 3 * j, *vj = s->v + 3 * j;
            double r[3] = {xi[0] - xj[0], xi[1] - xj[1], xi[2] - xj[2]};
            double dist = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
            if (dist >= h || dist == 0)
                continue;
            double q = h - dist;
            double fp = -m * (s->pressure[i] + s->pressure[j]) / (2 * s->rho[j]) * spiky * q * q /
                        dist;
            double fv = opt_viscosity * m / s->rho[j] * lap * q;
            for (int k = 0; k < 3; k++)
                f[k] += fp * r[k] + fv * (vj[k] - vi[k]);
        }
        for (int k = 0; k < 3; k++)
            s->a[3 * i + k] = f[k] / s->rho[i];
        s->a[3 * i + 2] -= GRAVITY;
    }
}

/* Symplectic Euler and the walls (restitution on the normal velocity). */
static int64_t move(sph *s)
{
    const double dt = s->dt, margin = 0.25 * opt_spacing;
    int64_t hits = 0;
#pragma omp parallel for schedule(static) reduction(+ : hits) if (s->n >= PARALLEL_MIN)
    for (int64_t i = 0; i < s->n; i++) {
        double *x = s->x + 3 * i, *v = s->v + 3 * i;
        for (int k = 0; k < 3; k++) {
            v[k] += s->a[3 * i + k] * dt;
            x[k] += v[k] * dt;
            double lo = margin, hi = s->box[k] - margin;
            if (x[k] < lo) {
                x[k] = lo;
                v[k] = v[k] < 0 ? -opt_restitution * v[k] : v[k];
                hits++;
            } else if (x[k] > hi) {
                x[k] = hi;
                v[k] = v[k] > 0 ? -opt_restitution * v[k] : v[k];
                hits++;
            }
        }
    }
    return hits;
}

static int step(sph *s, scene_report *r, int64_t *pairs)
{
    prox_points pts = prox_points_f64(s->x, s->n, 3);
    prox_stats stats;
    prox_status st;
    scene_frame_begin(r);
    if (s->skin) {
        st = prox_skin_list_pairs(s->skin, &pts, neighbour_sink(&s->neighbours), &stats);
        if (st)
            return scene_fail(info.name, "skin list", st);
        scene_lap(r, SCENE_NEIGHBOURS);
    } else {
        if ((st = prox_grid_update(s->grid, &pts, NULL)))
            return scene_fail(info.name, "grid update", st);
        scene_lap(r, SCENE_HASH);
        if ((st = prox_grid_pairs(s->grid, neighbour_sink(&s->neighbours), &stats)))
            return scene_fail(info.name, "neighbours", st);
        scene_lap(r, SCENE_NEIGHBOURS);
    }
    *pairs = stats.pairs;
    density(s);
    forces(s);
    s->wall_hits = move(s);
    scene_lap(r, SCENE_INTEGRATE);
    return SCENE_EXIT_OK;
}

/* Particles coloured by speed: deep blue at rest, pale cyan when fast. */
static void render(const sph *s, scene_canvas *canvas)
{
    scene_canvas_clear(canvas);
    const double vmax = sqrt(2 * GRAVITY * s->box[2] / 1.6);
    for (int64_t i = 0; i < s->n; i++) {
        const double *v = s->v + 3 * i;
        double t = fmin(1, sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) / vmax);
        float rgb[3] = {(float)(0.10 + 0.70 * t), (float)(0.30 + 0.60 * t), (float)(0.85 + 0.15 * t)};
        scene_canvas_sphere(canvas, s->x + 3 * i, 0.5 * opt_spacing, rgb);
    }
}

int prox_demo_sph(int argc, char **argv)
{
    scene_options o;
    default_options();
    int code = scene_parse(argc, argv, &info, &o);
    if (code != SCENE_CONTINUE)
        return code;
    if (!(opt_spacing > 0) || opt_viscosity < 0 || opt_sound < 0 || opt_skin < 0 ||
        opt_restitution < 0 || opt_restitution > 1) {
        fprintf(stderr, "prox demo sph: --spacing must be > 0; --viscosity, --sound, --skin "
                        ">= 0; --restitution in [0, 1]\n");
        return SCENE_EXIT_USAGE;
    }
    sph *s = sph_create(&o);
    scene_report *r = scene_report_create(&info, &o);
    if (!s || !r) {
        if (s)
            sph_free(s);
        return scene_report_finish(r, SCENE_EXIT_NO_MEMORY);
    }
    scene_canvas *canvas = NULL;
    if (o.png_dir) {
        const double lo[3] = {0, 0, 0};
        scene_view view = scene_default_view(lo, s->box, 3);
        view.yaw = 0.35;
        view.pitch = 0.45;
        canvas = scene_canvas_create(&view);
    }
    code = (o.png_dir && !canvas) ? SCENE_EXIT_NO_MEMORY : setup(s, &o);
    if (!code)
        code = scene_series_begin(r, "grid");
    if (!code)
        scene_note(r, "sph: h = %g m, dt = %.3g s (%.3g s simulated), c = %.3g m/s, mass = %.3g kg",
                   s->h, s->dt, s->dt * (double)o.frames, s->c, s->mass);
    scene_state state = {.scene = info.name, .label = "grid", .count = s->n, .dim = 3,
                         .position = s->x, .velocity = s->v, .mass = s->mass, .dt = s->dt,
                         .gravity = {0, 0, -GRAVITY}, .box_lo = {0, 0, 0},
                         .box_hi = {s->box[0], s->box[1], s->box[2]}};
    for (int64_t frame = 0; !code && frame < o.frames; frame++) {
        int64_t pairs = 0;
        if ((code = step(s, r, &pairs)))
            break;
        state.frame = frame;
        if (scene_frame_end(r, pairs, s->wall_hits, &state))
            code = SCENE_EXIT_INTERNAL;
        if (!code && canvas && scene_png_due(r, frame)) {
            render(s, canvas);
            code = scene_png_write(r, canvas, frame);
        }
    }
    if (!code && canvas) {
        render(s, canvas);
        code = scene_png_write(r, canvas, o.frames);
    }
    scene_canvas_destroy(canvas);
    sph_free(s);
    return scene_report_finish(r, code);
}

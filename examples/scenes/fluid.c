/* fluid.c: `prox demo fluid`, workload W5 (docs/workloads.md): the 3D scene of
 * Pouchol et al. 2009, section 4.2 / Figure 6. Fluid particles (diameter 2^-6) fall
 * through 2,000 static spheres onto the floor of the box [0, 4)^3.
 *
 * Each frame:
 *   integration  v += g dt; predicted position p' = p + v dt;
 *   broad phase  each particle's path p -> p' (a segment, Pouchol et al. 2009, section
 *                3.2) against the spheres' boxes, with the structure of
 *                --algo (built once: the spheres are static);
 *   narrow phase exact segment / sphere test on the candidates, first hit:
 *                the particle stops on the surface, its velocity reflected
 *                (restitution, friction): the splash;
 *   hash         the uniform grid relocates the particles at p' (the fluid-hash chapter:
 *                prox_grid_update), or a skin list (--skin X);
 *   neighbours   every particle's neighbours within one diameter (CSR lists);
 *   integration  overlapping particles pushed apart (a position-based
 *                pressure: half the overlap each, in a Jacobi sweep that is
 *                the same for any thread count), the walls, p = p'.
 * The whole frame is timed, phase by phase, as Pouchol et al. 2009, Figure 6 does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scene.h"
#include "workloads.h"

#define SIDE PROX_WL_FLUID3D_SIDE
#define SPHERES PROX_WL_FLUID3D_SPHERES
#define DIAMETER PROX_WL_FLUID3D_DIAMETER
/* Shorter loops run on one thread: a parallel region would cost more than
 * the loop (on a shared machine, much more). */
#define PARALLEL_MIN 16384

/* Scene parameters (--dt, --restitution, ...), reset to these defaults on
 * every call of prox_demo_fluid (tests call it several times). */
static double opt_dt, opt_restitution, opt_friction, opt_skin, opt_relax, opt_rebuild_broad;
static bool opt_morton;

/* Neighbour rows in traversal order: the sums over a row need no sorted
 * row, and the order is still the same for every thread count. */
static prox_sink neighbour_sink(prox_lists *lists)
{
    return prox_sink_unsorted(prox_sink_lists(lists));
}

static void default_options(void)
{
    opt_dt = 1.0 / 240.0;
    opt_restitution = 0.35;
    opt_friction = 0.1;
    opt_skin = 0.0;
    opt_relax = 0.5;
    opt_rebuild_broad = 0;
    opt_morton = false;
}

static const scene_extra extras[] = {
    {"dt", "time step of a frame, s", &opt_dt, NULL},
    {"restitution", "bounce off spheres and walls, 0..1", &opt_restitution, NULL},
    {"friction", "tangential velocity lost in a bounce, 0..1", &opt_friction, NULL},
    {"relax", "fraction of a particle overlap undone per frame, 0..1", &opt_relax, NULL},
    {"skin", "neighbours from a skin list of this skin (0 = grid update)", &opt_skin, NULL},
    {"morton", "grid cell keys in Morton order (default: linear keys, faster here)", NULL,
     &opt_morton},
    {"rebuild-broad", "1 = rebuild the sphere structure every frame (hash phase)",
     &opt_rebuild_broad, NULL},
};

static const scene_info info = {
    .name = "fluid",
    .summary = "W5: fluid particles fall through 2,000 static spheres onto the floor "
               "(Pouchol et al. 2009, Figure 6)",
    .details = "Particle-particle neighbours: the uniform grid (radius = particle diameter).\n"
               "Particle-sphere candidates: the broad phase of --algo over the paths of the\n"
               "particles (segments). Prints ms per frame per phase.",
    .default_frames = 300,
    .default_particles = 100000,
    .algo_choices = "grid,multilevel,hierarchical,kdtree,sap,brute",
    .algo_all = "grid,multilevel,hierarchical,kdtree,sap",
    .algo_default = "hierarchical",
    .extras = extras,
    .extra_count = (int)(sizeof extras / sizeof extras[0]),
};

typedef struct fluid {
    int64_t n;
    double *x;    /* positions, 3n */
    double *p;    /* predicted positions, 3n */
    double *v;    /* velocities, 3n */
    double *dp;   /* position corrections, 3n */
    double sphere[SPHERES][4]; /* centre, radius + particle radius (the contact distance) */
    double sphere_box[SPHERES][6];
    prox_grid *grid;
    prox_skin_list *skin;
    prox_broad *broad;
    prox_lists neighbours; /* row i: the particles within one diameter of i */
    prox_lists candidates; /* row i: the spheres whose box meets i's path */
    int64_t hits;
    /* sums over the frames, for the note under the table */
    int64_t broad_pairs, broad_candidates, broad_cells, grid_candidates, grid_cells, frames;
    int64_t broad_bytes, grid_bytes;
} fluid;

static void fluid_free(fluid *f)
{
    free(f->x);
    free(f->p);
    free(f->v);
    free(f->dp);
    prox_grid_destroy(f->grid);
    prox_skin_list_destroy(f->skin);
    prox_broad_destroy(f->broad);
    prox_lists_free(&f->neighbours);
    prox_lists_free(&f->candidates);
    free(f);
}

static fluid *fluid_create(const scene_options *o)
{
    fluid *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->n = o->particles;
    size_t bytes = (size_t)f->n * 3 * sizeof(double);
    f->x = malloc(bytes);
    f->p = malloc(bytes);
    f->v = calloc(1, bytes);
    f->dp = malloc(bytes);
    double(*drawn)[4] = malloc(sizeof(double[SPHERES][4]));
    if (!f->x || !f->p || !f->v || !f->dp || !drawn) {
        free(drawn);
        fluid_free(f);
        return NULL;
    }
    prox_wl_fluid3d(f->n, o->seed, &drawn[0][0], f->x);
    const double contact = 0.5 * DIAMETER; /* spheres are grown by the particle radius */
    for (int s = 0; s < SPHERES; s++) {
        double r = 0.5 * drawn[s][3] + contact;
        for (int k = 0; k < 3; k++) {
            f->sphere[s][k] = drawn[s][k];
            f->sphere_box[s][k] = drawn[s][k] - r;
            f->sphere_box[s][3 + k] = drawn[s][k] + r;
        }
        f->sphere[s][3] = r;
    }
    free(drawn);
    prox_lists_init(&f->neighbours, NULL);
    prox_lists_init(&f->candidates, NULL);
    return f;
}

/* Before the first frame the grid is built over the start positions. */
static void reset_predicted(fluid *f)
{
    memcpy(f->p, f->x, (size_t)f->n * 3 * sizeof(double));
}

static int setup(fluid *f, const scene_options *o, prox_broad_algo algo)
{
    prox_broad_desc bd = prox_default_broad_desc();
    bd.algo = algo;
    bd.threads = o->threads;
    prox_boxes boxes = prox_boxes_f64(&f->sphere_box[0][0], SPHERES, 3);
    prox_status st = prox_broad_create(&bd, &f->broad);
    if (!st)
        st = prox_broad_build(f->broad, &boxes);
    if (st)
        return scene_fail(info.name, "building the sphere structure", st);

    prox_grid_desc gd = prox_default_grid_desc();
    gd.radius = DIAMETER;
    gd.threads = o->threads;
    /* The particles fill few of the box's 256^3 cells: linear keys then
     * keep a bit per cell (grid.c), which answers the stencil's lookups
     * 4x faster than the hash table did here (neighbours 37 -> 8.4 ms per
     * frame at 100,000 particles, one thread). */
    gd.keys = opt_morton ? PROX_KEYS_MORTON : PROX_KEYS_LINEAR;
    reset_predicted(f);
    prox_points pts = prox_points_f64(f->p, f->n, 3);
    if (opt_skin > 0)
        st = prox_skin_list_create(&gd, opt_skin, &f->skin);
    else if (!(st = prox_grid_create(&gd, &f->grid)))
        st = prox_grid_build(f->grid, &pts);
    if (st)
        return scene_fail(info.name, "building the particle grid", st);
    return SCENE_EXIT_OK;
}

static void predict(fluid *f, double dt)
{
    const double g = -9.81;
#pragma omp parallel for schedule(static) if (f->n >= PARALLEL_MIN)
    for (int64_t i = 0; i < f->n; i++) {
        f->v[3 * i + 2] += g * dt;
        for (int k = 0; k < 3; k++)
            f->p[3 * i + k] = f->x[3 * i + k] + f->v[3 * i + k] * dt;
    }
}

/* Reflect velocity v off a surface of normal n: restitution on the normal
 * part, friction on the tangential part. */
static void bounce(double *v, const double n[3])
{
    double vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2];
    if (vn >= 0)
        return;
    for (int k = 0; k < 3; k++) {
        double normal = vn * n[k], tangent = v[k] - normal;
        v[k] = tangent * (1 - opt_friction) - opt_restitution * normal;
    }
}

/* The first contact of the path a -> b with sphere s: t in [0, 1], or -1.
 * A path starting inside the sphere reports t = 0. */
static double first_contact(const double sphere[4], const double a[3], const double b[3])
{
    double d[3], m[3];
    for (int k = 0; k < 3; k++) {
        d[k] = b[k] - a[k];
        m[k] = a[k] - sphere[k];
    }
    double c = m[0] * m[0] + m[1] * m[1] + m[2] * m[2] - sphere[3] * sphere[3];
    if (c <= 0)
        return 0;
    double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
    double bq = m[0] * d[0] + m[1] * d[1] + m[2] * d[2];
    if (bq >= 0 || dd == 0) /* moving away, or not moving */
        return -1;
    double disc = bq * bq - dd * c;
    if (disc < 0)
        return -1;
    double t = (-bq - sqrt(disc)) / dd;
    return t <= 1 ? t : -1;
}

/* Narrow phase: each particle against its candidate spheres. */
static int64_t collide_spheres(fluid *f, double dt)
{
    const prox_lists *c = &f->candidates;
    int64_t hits = 0;
#pragma omp parallel for schedule(dynamic, 1024) reduction(+ : hits) if (f->n >= PARALLEL_MIN)
    for (int64_t i = 0; i < f->n; i++) {
        if (c->offsets[i] == c->offsets[i + 1])
            continue;
        double *a = f->x + 3 * i, *b = f->p + 3 * i, *v = f->v + 3 * i;
        double best = 2;
        int64_t best_s = -1;
        for (int64_t e = c->offsets[i]; e < c->offsets[i + 1]; e++) {
            double t = first_contact(f->sphere[c->indices[e]], a, b);
            if (t >= 0 && t < best) {
                best = t;
                best_s = c->indices[e];
            }
        }
        if (best_s < 0)
            continue;
        const double *s = f->sphere[best_s];
        double q[3], n[3], len = 0;
        for (int k = 0; k < 3; k++) {
            q[k] = a[k] + best * (b[k] - a[k]);
            n[k] = q[k] - s[k];
            len += n[k] * n[k];
        }
        len = sqrt(len);
        if (len == 0) { /* at the centre: leave upwards */
            n[0] = n[1] = 0;
            n[2] = 1;
        } else {
            for (int k = 0; k < 3; k++)
                n[k] /= len;
        }
        bounce(v, n);
        /* on the surface (a hair outside), then the rest of the step */
        double rest = (1 - best) * dt;
        for (int k = 0; k < 3; k++)
            b[k] = s[k] + n[k] * s[3] * (1 + 1e-9) + v[k] * rest;
        hits++;
    }
    return hits;
}

/* Position-based pressure: every overlapping pair (distance < diameter)
 * is pushed apart by `relax` of its overlap, half to each particle. Each
 * particle sums its own row (a Jacobi sweep): the same result for any
 * number of threads. The velocity follows the correction. */
static void separate(fluid *f, double dt)
{
    const prox_lists *l = &f->neighbours;
    const double d = DIAMETER;
#pragma omp parallel for schedule(dynamic, 1024) if (f->n >= PARALLEL_MIN)
    for (int64_t i = 0; i < f->n; i++) {
        double acc[3] = {0, 0, 0};
        const double *pi = f->p + 3 * i;
        for (int64_t e = l->offsets[i]; e < l->offsets[i + 1]; e++) {
            int64_t j = l->indices[e];
            const double *pj = f->p + 3 * j;
            double r[3] = {pi[0] - pj[0], pi[1] - pj[1], pi[2] - pj[2]};
            double dist = sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
            if (dist >= d)
                continue;
            if (dist == 0) { /* coincident: split along x by index */
                acc[0] += (i < j ? -0.5 : 0.5) * opt_relax * d;
                continue;
            }
            double push = 0.5 * opt_relax * (d - dist) / dist;
            for (int k = 0; k < 3; k++)
                acc[k] += push * r[k];
        }
        for (int k = 0; k < 3; k++)
            f->dp[3 * i + k] = acc[k];
    }
    const double lo = 0.5 * d, hi = SIDE - 0.5 * d;
#pragma omp parallel for schedule(static) if (f->n >= PARALLEL_MIN)
    for (int64_t i = 0; i < f->n; i++) {
        double *p = f->p + 3 * i, *v = f->v + 3 * i;
        for (int k = 0; k < 3; k++) {
            p[k] += f->dp[3 * i + k];
            v[k] += f->dp[3 * i + k] / dt;
        }
        for (int k = 0; k < 3; k++) { /* the walls */
            double n[3] = {0, 0, 0};
            if (p[k] < lo) {
                p[k] = lo;
                n[k] = 1;
                bounce(v, n);
            } else if (p[k] > hi) {
                p[k] = hi;
                n[k] = -1;
                bounce(v, n);
            }
        }
        for (int k = 0; k < 3; k++)
            f->x[3 * i + k] = p[k];
    }
}

/* Spheres in red, particles in blue drawn at twice their size (at their
 * true size they are one pixel wide). */
static void render(const fluid *f, scene_canvas *canvas)
{
    static const float red[3] = {0.80f, 0.30f, 0.25f}, blue[3] = {0.15f, 0.40f, 1.00f};
    scene_canvas_clear(canvas);
    for (int s = 0; s < SPHERES; s++)
        scene_canvas_sphere(canvas, f->sphere[s], f->sphere[s][3] - 0.5 * DIAMETER, red);
    for (int64_t i = 0; i < f->n; i++)
        scene_canvas_sphere(canvas, f->x + 3 * i, DIAMETER, blue);
}

/* One frame; the phases as in the file comment. */
static int step(fluid *f, scene_report *r, const scene_options *o, int64_t *pairs)
{
    const double dt = opt_dt;
    prox_status st;
    scene_frame_begin(r);
    predict(f, dt);
    scene_lap(r, SCENE_INTEGRATE);

    if (opt_rebuild_broad > 0) {
        prox_boxes boxes = prox_boxes_f64(&f->sphere_box[0][0], SPHERES, 3);
        if ((st = prox_broad_build(f->broad, &boxes)))
            return scene_fail(info.name, "rebuilding the sphere structure", st);
        scene_lap(r, SCENE_HASH);
    }
    prox_points from = prox_points_f64(f->x, f->n, 3), to = prox_points_f64(f->p, f->n, 3);
    prox_stats broad_stats;
    st = prox_broad_query_segments(f->broad, &from, &to, false, prox_sink_lists(&f->candidates),
                                   &broad_stats);
    if (st)
        return scene_fail(info.name, "particle paths against the spheres", st);
    scene_lap(r, SCENE_BROAD);

    f->hits = collide_spheres(f, dt);
    scene_lap(r, SCENE_NARROW);

    prox_points pts = prox_points_f64(f->p, f->n, 3);
    prox_stats stats;
    if (f->skin) {
        st = prox_skin_list_pairs(f->skin, &pts, neighbour_sink(&f->neighbours), &stats);
        if (st)
            return scene_fail(info.name, "skin list", st);
        scene_lap(r, SCENE_NEIGHBOURS);
    } else {
        if ((st = prox_grid_update(f->grid, &pts, NULL)))
            return scene_fail(info.name, "grid update", st);
        scene_lap(r, SCENE_HASH);
        st = prox_grid_pairs(f->grid, neighbour_sink(&f->neighbours), &stats);
        if (st)
            return scene_fail(info.name, "neighbours", st);
        scene_lap(r, SCENE_NEIGHBOURS);
    }
    *pairs = stats.pairs;
    f->broad_pairs += broad_stats.pairs;
    f->broad_candidates += broad_stats.candidates;
    f->broad_cells += broad_stats.cells_visited;
    f->broad_bytes = broad_stats.bytes;
    f->grid_candidates += stats.candidates;
    f->grid_cells += stats.cells_visited;
    f->grid_bytes = stats.bytes;
    f->frames++;

    separate(f, dt);
    scene_lap(r, SCENE_INTEGRATE);
    (void)o;
    return SCENE_EXIT_OK;
}

static int run_series(scene_report *r, const scene_options *o, const char *name,
                      scene_canvas *canvas)
{
    prox_broad_algo algo;
    if (!scene_broad_algo(name, &algo))
        return SCENE_EXIT_USAGE;
    if (!scene_broad_available(algo)) {
        fprintf(stderr, "prox demo fluid: structure '%s' is not in this build of prox%s\n", name,
                o->algo_all ? "; skipped" : "");
        return o->algo_all ? SCENE_EXIT_OK : SCENE_EXIT_USAGE;
    }
    fluid *f = fluid_create(o);
    if (!f)
        return SCENE_EXIT_NO_MEMORY;
    int code = setup(f, o, algo);
    if (!code)
        code = scene_series_begin(r, name);
    scene_state state = {.scene = info.name, .label = name, .count = f->n, .dim = 3,
                         .position = f->x, .velocity = f->v, .mass = 1, .dt = opt_dt,
                         .gravity = {0, 0, -9.81}, .box_lo = {0, 0, 0},
                         .box_hi = {SIDE, SIDE, SIDE}};
    for (int64_t frame = 0; !code && frame < o->frames; frame++) {
        int64_t pairs = 0;
        code = step(f, r, o, &pairs);
        if (code)
            break;
        state.frame = frame;
        if (scene_frame_end(r, pairs, f->hits, &state))
            code = SCENE_EXIT_INTERNAL;
        if (!code && canvas && scene_png_due(r, frame)) {
            render(f, canvas);
            code = scene_png_write(r, canvas, frame);
        }
    }
    if (!code && canvas && scene_png_due(r, 0)) { /* the last frame too */
        render(f, canvas);
        code = scene_png_write(r, canvas, o->frames);
    }
    if (!code && f->frames) {
        double n = (double)f->frames;
        scene_note(r, "%-12s per frame: broad phase %.0f boxes met, %.0f candidates, %.0f cells "
                      "visited, %.2f MB; neighbours %.0f distance tests, %.0f cells visited",
                   name, (double)f->broad_pairs / n, (double)f->broad_candidates / n,
                   (double)f->broad_cells / n, (double)f->broad_bytes / 1e6,
                   (double)f->grid_candidates / n, (double)f->grid_cells / n);
    }
    fluid_free(f);
    return code;
}

int prox_demo_fluid(int argc, char **argv)
{
    scene_options o;
    default_options();
    int code = scene_parse(argc, argv, &info, &o);
    if (code != SCENE_CONTINUE)
        return code;
    code = SCENE_EXIT_OK;
    if (!(opt_dt > 0) || opt_skin < 0 || opt_relax < 0 || opt_relax > 1 ||
        opt_restitution < 0 || opt_restitution > 1 || opt_friction < 0 || opt_friction > 1) {
        fprintf(stderr, "prox demo fluid: --dt must be > 0, --skin >= 0, --relax, "
                        "--restitution and --friction in [0, 1]\n");
        return SCENE_EXIT_USAGE;
    }
    scene_report *r = scene_report_create(&info, &o);
    scene_canvas *canvas = NULL;
    if (r && o.png_dir) {
        const double lo[3] = {0, 0, 0}, hi[3] = {SIDE, SIDE, SIDE};
        scene_view view = scene_default_view(lo, hi, 3);
        canvas = scene_canvas_create(&view);
    }
    if (!r || (o.png_dir && !canvas)) {
        scene_canvas_destroy(canvas);
        return scene_report_finish(r, SCENE_EXIT_NO_MEMORY);
    }
    for (int a = 0; !code && a < o.algo_count; a++)
        code = run_series(r, &o, o.algos[a], canvas);
    scene_canvas_destroy(canvas);
    return scene_report_finish(r, code);
}

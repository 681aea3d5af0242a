/* test_scenes.c: physics sanity of the demo scenes (examples/scenes).
 *
 * dem and toy2d are driven through their world APIs (dem.h, toy2d.h);
 * fluid and sph, which expose no step API, through prox_demo_NAME with the
 * framework's watch hook (scene_set_watch), which sees every frame's
 * positions and velocities. Every scene: no NaN, nobody leaves the box, the
 * same final state bit for bit with 1 and 2 threads; and what each scene's
 * physics predicts (free fall, energy, momentum), stated at each test. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dem.h"
#include "scene.h"
#include "toy2d.h"

/* ---- helpers ------------------------------------------------------------ */

static uint64_t hash_doubles(uint64_t h, const double *v, int64_t count)
{
    const unsigned char *b = (const unsigned char *)v;
    for (size_t k = 0; k < (size_t)count * sizeof(double); k++)
        h = (h ^ b[k]) * 1099511628211u;
    return h;
}

/* FNV-1a of a state's positions then velocities (count doubles each): two
 * runs agree bit for bit exactly when their hashes do (in these tests). */
static uint64_t state_hash(const double *pos, const double *vel, int64_t count)
{
    return hash_doubles(hash_doubles(14695981039346656037u, pos, count), vel, count);
}

/* Every coordinate finite and inside [lo, hi] on its axis. */
static void assert_inside(const double *pos, int64_t n, int dim, const double *lo,
                          const double *hi)
{
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < dim; k++) {
            double x = pos[(int64_t)dim * i + k];
            if (!(x >= lo[k] && x <= hi[k]))
                fail_msg("particle %lld axis %d at %.17g, outside [%g, %g]", (long long)i, k, x,
                         lo[k], hi[k]);
        }
}

static void assert_finite(const double *v, int64_t count)
{
    for (int64_t i = 0; i < count; i++)
        if (!isfinite(v[i]))
            fail_msg("value %lld is %g", (long long)i, v[i]);
}

/* ---- dem (W6) ------------------------------------------------------------ */

static dem_params dem_small(int64_t n, int threads)
{
    dem_params p = dem_default_params();
    p.spheres = n;
    p.threads = threads;
    return p;
}

static void dem_assert_sane(const dem_world *w)
{
    double lo[3] = {w->lo, w->lo, w->lo}, hi[3] = {w->hi, w->hi, w->hi};
    assert_finite(w->vel, 3 * w->n);
    assert_inside(w->pos, w->n, 3, lo, hi);
}

/* Before any contact a sphere falls exactly g t^2 / 2 (the integrator is
 * exact for a constant acceleration) and keeps its x and y; it then lands
 * and never sinks below the floor. */
static void dem_free_fall(void **state)
{
    (void)state;
    dem_world w;
    dem_params p = dem_small(8, 1);
    assert_int_equal(dem_world_init(&w, &p), PROX_OK);
    /* Eight spheres on a 2 x 2 x 2 lattice, far from each other and the walls. */
    double z0[8];
    for (int i = 0; i < 8; i++) {
        double *x = &w.pos[3 * i];
        x[0] = w.side * (0.3 + 0.4 * (i & 1));
        x[1] = w.side * (0.3 + 0.4 * ((i >> 1) & 1));
        x[2] = z0[i] = w.side * (0.5 + 0.3 * ((i >> 2) & 1));
    }
    const double g = w.gravity, dt = w.params.dt;
    int64_t steps = 0;
    for (; steps < 1000; steps++) {
        double t = (double)(steps + 1) * dt;
        if (z0[0] - 0.5 * g * t * t < w.lo + 0.5) /* the lowest is about to land */
            break;
        dem_step_info info;
        assert_int_equal(dem_world_step(&w, &info), PROX_OK);
        assert_int_equal(info.contacts, 0);
        for (int i = 0; i < 8; i++) {
            double expected = z0[i] - 0.5 * g * t * t;
            assert_true(fabs(w.pos[3 * i + 2] - expected) <= 1e-12 * z0[i]);
            assert_true(fabs(w.vel[3 * i + 2] + g * t) <= 1e-12 * g * t);
            assert_true(w.pos[3 * i] == w.side * (0.3 + 0.4 * (i & 1)));
            assert_true(w.vel[3 * i] == 0 && w.vel[3 * i + 1] == 0);
        }
    }
    assert_true(steps > 10);
    for (int s = 0; s < 200; s++) {
        assert_int_equal(dem_world_step(&w, NULL), PROX_OK);
        dem_assert_sane(&w);
    }
    /* At rest by now (restitution 0.5 damps the bounces): the lower four on
     * the floor, each upper one on the sphere below it. */
    for (int i = 0; i < 8; i++) {
        double rest = i < 4 ? w.lo : w.lo + 2.0;
        if (fabs(w.pos[3 * i + 2] - rest) > 0.1)
            fail_msg("sphere %d at z = %g, expected about %g", i, w.pos[3 * i + 2], rest);
    }
    dem_world_free(&w);
}

/* Energy: E(step) <= E(step - 1) + the energy the last wall pass added
 * (dem.h: the scheme's only source), and the pile ends far below E(0). */
static void dem_energy_does_not_grow(void **state)
{
    (void)state;
    dem_world w;
    dem_params p = dem_small(2000, 1);
    assert_int_equal(dem_world_init(&w, &p), PROX_OK);
    const double e0 = dem_energy(&w);
    double before = e0, added = 0;
    int64_t contacts = 0;
    for (int s = 0; s < 100; s++) {
        dem_step_info info;
        assert_int_equal(dem_world_step(&w, &info), PROX_OK);
        dem_assert_sane(&w);
        double after = dem_energy(&w);
        if (after > before + info.wall_energy + 1e-12 * e0)
            fail_msg("step %d: energy %.17g after %.17g, walls added %g", s, after, before,
                     info.wall_energy);
        added += info.wall_energy;
        contacts += info.contacts;
        before = after;
    }
    assert_true(contacts > 100000);
    assert_true(before < 0.5 * e0);
    assert_true(added < 0.05 * e0); /* the walls' share stays small */
    dem_world_free(&w);
}

/* A head-on pair: momentum conserved, normal relative velocity reversed
 * and scaled by e, the overlap removed, the pair's centre of mass kept. */
static void dem_pair_collision(void **state)
{
    (void)state;
    dem_world w;
    dem_params p = dem_small(2, 1);
    p.restitution = 0.25;
    assert_int_equal(dem_world_init(&w, &p), PROX_OK);
    double mid = 0.5 * (w.lo + w.hi);
    double start[2][3] = {{mid - 1.2, mid, mid}, {mid + 1.2, mid, mid}};
    memcpy(w.pos, start, sizeof start);
    w.vel[0] = 0.5; /* approaching: they overlap after one step */
    w.vel[3] = -0.5;
    dem_step_info info;
    assert_int_equal(dem_world_step(&w, &info), PROX_OK);
    assert_int_equal(info.contacts, 1);
    assert_true(fabs(w.vel[0] + w.vel[3]) <= 1e-15); /* momentum along x */
    assert_true(fabs((w.vel[3] - w.vel[0]) - 0.25 * 1.0) <= 1e-15); /* e x approach speed */
    assert_true(w.vel[2] == w.vel[5] && fabs(w.vel[2] + w.gravity * w.params.dt) <= 1e-15);
    double gap = w.pos[3] - w.pos[0];
    assert_true(fabs(gap - 2.0) <= 1e-12);                      /* just touching */
    assert_true(fabs(0.5 * (w.pos[0] + w.pos[3]) - mid) <= 1e-12); /* centre of mass */
    dem_world_free(&w);
}

static uint64_t dem_run(dem_params p, int steps)
{
    dem_world w;
    assert_int_equal(dem_world_init(&w, &p), PROX_OK);
    for (int s = 0; s < steps; s++)
        assert_int_equal(dem_world_step(&w, NULL), PROX_OK);
    dem_assert_sane(&w);
    uint64_t h = state_hash(w.pos, w.vel, 3 * w.n);
    dem_world_free(&w);
    return h;
}

/* The same state bit for bit: 1 and 2 threads, update and rebuild, and
 * every structure (they all return the same sorted pairs). */
static void dem_deterministic(void **state)
{
    (void)state;
    const int steps = 70;
    dem_params p = dem_small(1500, 1);
    uint64_t reference = dem_run(p, steps);
    p.threads = 2;
    assert_true(dem_run(p, steps) == reference);
    p.threads = 1;
    p.rebuild = true;
    assert_true(dem_run(p, steps) == reference);
    p.rebuild = false;
    const prox_broad_algo algos[] = {PROX_BROAD_BRUTE, PROX_BROAD_MULTILEVEL,
                                     PROX_BROAD_HIERARCHICAL, PROX_BROAD_KDTREE, PROX_BROAD_SAP};
    for (size_t a = 0; a < sizeof algos / sizeof algos[0]; a++) {
        p.algo = algos[a];
        if (scene_broad_available(p.algo))
            assert_true(dem_run(p, steps) == reference);
    }
    /* A different seed is a different run (the check can fail). */
    p.algo = PROX_BROAD_GRID;
    p.seed = 2;
    assert_true(dem_run(p, steps) != reference);
}

/* ---- toy2d (the hash-multimap article) ------------------------------------------------------ */

static toy2d_params toy_small(int64_t n, prox_algo algo, int threads)
{
    toy2d_params p = toy2d_default_params();
    p.particles = n;
    p.algo = algo;
    p.threads = threads;
    return p;
}

static void toy_assert_sane(const toy2d_world *w)
{
    double lo[2] = {0, 0}, hi[2] = {w->side, w->side};
    assert_finite(w->vel, 2 * w->n);
    assert_inside(w->pos, w->n, 2, lo, hi);
}

/* Pair forces are equal and opposite: away from the walls the total
 * momentum stays what it was, to rounding. */
static void toy2d_momentum_conserved(void **state)
{
    (void)state;
    toy2d_world w;
    toy2d_params p = toy_small(400, PROX_ALGO_GRID, 2);
    p.neighbours = 0.2; /* a box 5 times wider than usual ... */
    assert_int_equal(toy2d_world_init(&w, &p), PROX_OK);
    /* ... with the particles in its middle fifth: the usual density. */
    for (int64_t i = 0; i < 2 * w.n; i++)
        w.pos[i] = 0.4 * w.side + 0.2 * w.pos[i];
    double m0[2];
    toy2d_momentum(&w, m0);
    double scale = 0;
    for (int s = 0; s < 40; s++) {
        int64_t pairs = 0;
        assert_int_equal(toy2d_world_step(&w, &pairs), PROX_OK);
        assert_true(pairs > 0);
        double lo[2] = {1, 1}, hi[2] = {w.side - 1, w.side - 1}; /* no wall reached */
        assert_inside(w.pos, w.n, 2, lo, hi);
        for (int64_t i = 0; i < 2 * w.n; i++)
            scale += fabs(w.vel[i]);
    }
    double m[2];
    toy2d_momentum(&w, m);
    assert_true(scale > 100); /* they did move */
    assert_true(fabs(m[0] - m0[0]) <= 1e-12 * scale && fabs(m[1] - m0[1]) <= 1e-12 * scale);
    toy2d_world_free(&w);
}

/* Elastic walls and a conservative force: the total energy only drifts by
 * the integration error (symplectic Euler, dt = 0.05: under 1%). */
static void toy2d_energy_conserved(void **state)
{
    (void)state;
    toy2d_world w;
    toy2d_params p = toy_small(600, PROX_ALGO_GRID, 1);
    assert_int_equal(toy2d_world_init(&w, &p), PROX_OK);
    double e0, e;
    assert_int_equal(toy2d_energy(&w, &e0), PROX_OK);
    int64_t bounces_seen = 0;
    for (int s = 0; s < 300; s++) {
        assert_int_equal(toy2d_world_step(&w, NULL), PROX_OK);
        toy_assert_sane(&w);
        for (int64_t i = 0; i < 2 * w.n; i++)
            bounces_seen += w.pos[i] < 0.05 || w.pos[i] > w.side - 0.05;
        if (s % 30 == 29) {
            assert_int_equal(toy2d_energy(&w, &e), PROX_OK);
            if (fabs(e - e0) > 0.01 * e0)
                fail_msg("step %d: energy %.9g, started %.9g", s, e, e0);
        }
    }
    assert_true(bounces_seen > 0); /* the walls took part */
    toy2d_world_free(&w);
}

static uint64_t toy_run(toy2d_params p, int steps)
{
    toy2d_world w;
    assert_int_equal(toy2d_world_init(&w, &p), PROX_OK);
    for (int s = 0; s < steps; s++)
        assert_int_equal(toy2d_world_step(&w, NULL), PROX_OK);
    toy_assert_sane(&w);
    uint64_t h = state_hash(w.pos, w.vel, 2 * w.n);
    toy2d_world_free(&w);
    return h;
}

/* Brute force and the grid give the same neighbour rows, so the same
 * trajectory, bit for bit; so do 1 and 2 threads. Fast particles stay in. */
static void toy2d_deterministic(void **state)
{
    (void)state;
    toy2d_params p = toy_small(800, PROX_ALGO_GRID, 1);
    uint64_t reference = toy_run(p, 60);
    p.threads = 2;
    assert_true(toy_run(p, 60) == reference);
    p.threads = 1;
    p.algo = PROX_ALGO_BRUTE;
    assert_true(toy_run(p, 60) == reference);
    p.seed = 7;
    assert_true(toy_run(p, 60) != reference);
    p.speed = 40; /* most cross the box in a few steps */
    (void)toy_run(p, 100);
}

/* ---- fluid and sph, through the watch hook ---------------------------------- */

typedef struct watch {
    int64_t frames;
    uint64_t hash;          /* of the last frame's positions and velocities */
    double free_fall[4];    /* fraction of particles in exact free fall after frames 0..3 */
    double energy0, energy; /* per unit mass: v^2/2 - g.x, first and last frame */
    double max_energy;
    int dim;
    double g, dt;
} watch;

static double energy_of(const scene_state *s)
{
    double e = 0;
    for (int64_t i = 0; i < s->count; i++)
        for (int k = 0; k < s->dim; k++) {
            double v = s->velocity[(int64_t)s->dim * i + k];
            e += 0.5 * v * v - s->gravity[k] * s->position[(int64_t)s->dim * i + k];
        }
    return e;
}

static int watch_frame(const scene_state *s, void *user)
{
    watch *w = user;
    assert_finite(s->position, (int64_t)s->dim * s->count);
    assert_finite(s->velocity, (int64_t)s->dim * s->count);
    assert_inside(s->position, s->count, s->dim, s->box_lo, s->box_hi);
    if (s->frame < 4) {
        /* v_z = -g dt (frame + 1) (gravity points down the last axis) */
        double expected = s->gravity[s->dim - 1] * s->dt * (double)(s->frame + 1);
        int64_t falling = 0;
        for (int64_t i = 0; i < s->count; i++) {
            const double *v = &s->velocity[(int64_t)s->dim * i];
            falling += fabs(v[s->dim - 1] - expected) <= 1e-12 * fabs(expected) && v[0] == 0;
        }
        w->free_fall[s->frame] = (double)falling / (double)s->count;
    }
    w->energy = energy_of(s);
    if (s->frame == 0)
        w->energy0 = w->max_energy = w->energy;
    w->max_energy = fmax(w->max_energy, w->energy);
    w->frames = s->frame + 1;
    w->dim = s->dim;
    w->g = -s->gravity[s->dim - 1];
    w->dt = s->dt;
    w->hash = state_hash(s->position, s->velocity, (int64_t)s->dim * s->count);
    return 0;
}

static watch run_scene(int (*demo)(int, char **), const char *const *args, int count)
{
    char *argv[24];
    assert_true(count < 24);
    for (int i = 0; i < count; i++)
        argv[i] = (char *)args[i];
    argv[count] = NULL;
    watch w;
    memset(&w, 0, sizeof w);
    scene_set_watch(watch_frame, &w);
    int code = demo(count, argv);
    scene_set_watch(NULL, NULL);
    assert_int_equal(code, 0);
    return w;
}

/* Fluid (W5): the particles start at rest and fall freely until they meet
 * a sphere, a wall or each other, rare in the first frames: after frame f,
 * at least 90% have v = (0, 0, -g dt (f + 1)) exactly (to rounding); the
 * others started inside a sphere or met a neighbour. */
static void fluid_scene(void **state)
{
    (void)state;
    const char *one[] = {"fluid", "--particles", "3000", "--frames", "30", "--algo", "grid",
                         "--threads", "1", "--quiet"};
    const char *two[] = {"fluid", "--particles", "3000", "--frames", "30", "--algo", "grid",
                         "--threads", "2", "--quiet"};
    watch a = run_scene(prox_demo_fluid, one, 10);
    assert_int_equal(a.frames, 30);
    for (int f = 0; f < 4; f++)
        if (a.free_fall[f] < 0.9)
            fail_msg("frame %d: only %.3f of the particles in free fall", f, a.free_fall[f]);
    /* Bounces lose energy; the particles' pushes could add some: not 0.1%. */
    assert_true(a.max_energy <= a.energy0 + 1e-3 * fabs(a.energy0));
    assert_true(a.energy < a.energy0);
    watch b = run_scene(prox_demo_fluid, two, 10);
    assert_true(a.hash == b.hash);
}

/* SPH dam break: released from rest, the water cannot gain mechanical
 * energy (kinetic + potential; compression stores some, viscosity and the
 * walls dissipate): never above the start by more than 0.5% of the
 * potential energy it has to lose. */
static void sph_scene(void **state)
{
    (void)state;
    const char *one[] = {"sph", "--particles", "2000", "--frames", "60", "--threads", "1",
                         "--quiet"};
    const char *two[] = {"sph", "--particles", "2000", "--frames", "60", "--threads", "2",
                         "--quiet"};
    watch a = run_scene(prox_demo_sph, one, 8);
    assert_int_equal(a.frames, 60);
    assert_true(a.energy < a.energy0); /* and has lost energy */
    watch b = run_scene(prox_demo_sph, two, 8);
    assert_true(a.hash == b.hash);
    assert_true(a.max_energy <= a.energy0 + 0.005 * fabs(a.energy0));
}

/* The demo commands themselves, small: dem with every structure (which
 * checks that they end in the same state) and toy2d's search. */
static void demos_run(void **state)
{
    (void)state;
    const char *dem[] = {"dem", "--particles", "1500", "--frames", "12", "--algo", "all",
                         "--quiet"};
    watch d = run_scene(prox_demo_dem, dem, 8);
    assert_int_equal(d.frames, 12);
    const char *toy[] = {"toy2d", "--fps", "4000", "--frames", "3", "--quiet"};
    watch t = run_scene(prox_demo_toy2d, toy, 6);
    assert_int_equal(t.dim, 2);
}

/* test_scenes [PATTERN]: only the tests whose names match (cmocka's filter). */
int main(int argc, char **argv)
{
    if (argc > 1)
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dem_free_fall),
        cmocka_unit_test(dem_energy_does_not_grow),
        cmocka_unit_test(dem_pair_collision),
        cmocka_unit_test(dem_deterministic),
        cmocka_unit_test(toy2d_momentum_conserved),
        cmocka_unit_test(toy2d_energy_conserved),
        cmocka_unit_test(toy2d_deterministic),
        cmocka_unit_test(fluid_scene),
        cmocka_unit_test(sph_scene),
        cmocka_unit_test(demos_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

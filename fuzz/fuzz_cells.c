/* fuzz_cells.c: periodic cells of any shape on fuzzer-chosen cells, points,
 * cutoffs and options, with the test suite's image oracle
 * (tests/cell_oracle.c) as the oracle. Each input decodes into a cell
 * (lattice rows, skewed, nearly singular or singular, zero rows on open
 * axes), periodic flags, up to 12 points (2D or 3D, double or float,
 * anywhere: on faces, unwrapped, at the edges of double), a cutoff or a k,
 * a thread count, and runs one of: prox_cell_pairs (half or full,
 * self_interaction, every geometry array) or prox_cell_knn (self or a
 * second set, max_radius, include_self). Every answer must be the
 * oracle's to the bit, or a refusal of a documented kind (PROX_ERR_INVALID,
 * _DATA, _RANGE) with a message. Anything else aborts. Inputs whose oracle
 * would enumerate too many images (cutoffs beyond 3 heights, points more
 * than 2^20 cells out) are left to the library alone: it must still return
 * cleanly. FUZZ_CELLS_VERBOSE=1 prints each input's case. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_bytes.h"
#include "prox/prox.h"
#include "../tests/cell_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_POINTS 12

typedef struct cell_input {
    double cell[3][3];
    bool pbc[3];
    int dim, threads;
    bool f32;
    int64_t n, nq;
    double x[3 * MAX_POINTS], q[3 * MAX_POINTS]; /* as the library reads them (f32 rounded) */
    float xf[3 * MAX_POINTS], qf[3 * MAX_POINTS];
    char context[200];
} cell_input;

static void fail(const cell_input *in, const char *what)
{
    fprintf(stderr, "MISMATCH %s: %s\n", in->context, what);
    abort();
}

static double cell_entry(fuzz_bytes *b)
{
    static const double entries[] = {0, 0, 0, 1, 1, -1, 0.5, -0.5, 0.25, 2, 3.6, 1.8, 0.3,
                                     1e-3, 1e-9, 7};
    return entries[fuzz_pick(b, 16)];
}

/* A cell: a lattice's rows, or rows of fuzzer entries (singular ones
 * included), times a scale. */
static void decode_cell(fuzz_bytes *b, cell_input *in)
{
    static const double fcc[3][3] = {{0, 1.8, 1.8}, {1.8, 0, 1.8}, {1.8, 1.8, 0}};
    static const double scales[] = {1, 1, 0.25, 4, 1e-5, 1e5};
    int kind = fuzz_pick(b, 4);
    double scale = scales[fuzz_pick(b, 6)];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            double v = kind == 0 ? (r == k) : kind == 1 ? fcc[r][k] : cell_entry(b);
            in->cell[r][k] = r < in->dim && k < in->dim ? v * scale : 0;
        }
    unsigned flags = fuzz_byte(b);
    for (int k = 0; k < 3; k++)
        in->pbc[k] = k < in->dim && (flags >> k & 1);
}

/* count points at fractions of the cell (or fuzzer coordinates), in x (and
 * the float copy the library reads when f32). */
static void decode_points(fuzz_bytes *b, const cell_input *in, int64_t count, double *x,
                          float *xf)
{
    for (int64_t i = 0; i < count; i++) {
        double f[3] = {0, 0, 0};
        bool raw = fuzz_pick(b, 8) == 0;
        for (int k = 0; k < in->dim; k++)
            f[k] = raw ? fuzz_coordinate(b, 1.0) : fuzz_coordinate(b, 0.25);
        for (int k = 0; k < in->dim; k++) {
            double v = raw ? f[k]
                           : (f[0] * in->cell[0][k] + f[1] * in->cell[1][k]) + f[2] * in->cell[2][k];
            v = isfinite(v) ? v : 0;
            xf[i * in->dim + k] = isfinite((float)v) ? (float)v : 0.0f;
            x[i * in->dim + k] = in->f32 ? (double)xf[i * in->dim + k] : v;
        }
    }
}

static prox_points view_of(const cell_input *in, const double *x, const float *xf, int64_t n)
{
    return in->f32 ? prox_points_f32(xf, n, in->dim) : prox_points_f64(x, n, in->dim);
}

static double det3(double m[3][3])
{
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

/* Whether the oracle can enumerate the images of this input in reasonable
 * time: a cell not too skewed (volume at least 1% of its rows' lengths'
 * product), periodic heights within a factor 64 of each other and at least
 * `reach` / 3, every coordinate within 2^20 of the least height. Zero
 * rows (open axes, the 2D plane's normal) are made unit vectors, as the
 * oracle makes them. */
static bool oracle_can(const cell_input *in, double reach)
{
    double m[3][3];
    memcpy(m, in->cell, sizeof m);
    for (int r = 0; r < 3; r++)
        if (m[r][0] == 0 && m[r][1] == 0 && m[r][2] == 0)
            for (int e = 0; e < 3; e++) {
                m[r][0] = m[r][1] = m[r][2] = 0;
                m[r][e] = 1;
                if (fabs(det3(m)) > 1e-9)
                    break;
            }
    double det = fabs(det3(m)), hmin = INFINITY, hmax = 0, lengths = 1;
    for (int r = 0; r < 3; r++)
        lengths *= sqrt(m[r][0] * m[r][0] + m[r][1] * m[r][1] + m[r][2] * m[r][2]);
    if (!(det >= 1e-2 * lengths)) /* a skewed cell: the oracle's boxes of shifts grow huge */
        return false;
    for (int a = 0; a < 3; a++) {
        if (!in->pbc[a])
            continue;
        const double *u = m[(a + 1) % 3], *v = m[(a + 2) % 3];
        double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                       u[0] * v[1] - u[1] * v[0]};
        double h = det / sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
        hmin = h < hmin ? h : hmin;
        hmax = h > hmax ? h : hmax;
    }
    if (hmax > 0 && !(hmin > 0 && hmax <= 64 * hmin && reach <= 3 * hmin))
        return false;
    double bound = hmax > 0 ? 0x1p20 * hmin : 1e12;
    for (int64_t t = 0; t < in->n * in->dim; t++)
        if (!(fabs(in->x[t]) < bound))
            return false;
    for (int64_t t = 0; t < in->nq * in->dim; t++)
        if (!(fabs(in->q[t]) < bound))
            return false;
    return true;
}

static void expect_refusal(const cell_input *in, prox_status st)
{
    if (st != PROX_ERR_INVALID && st != PROX_ERR_DATA && st != PROX_ERR_RANGE &&
        st != PROX_ERR_NO_MEMORY)
        fail(in, "an undocumented status");
    if (!prox_last_error() || !*prox_last_error())
        fail(in, "a refusal without a message");
}

/* The cell's size: its largest entry (1 for a zero cell), which cutoffs
 * and radii are drawn in units of, so that a case asks for a few images,
 * not millions. */
static double cell_size(const cell_input *in)
{
    double m = 0;
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            m = fabs(in->cell[r][k]) > m ? fabs(in->cell[r][k]) : m;
    return m > 0 ? m : 1;
}

static bool same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void run_pairs(fuzz_bytes *b, cell_input *in)
{
    static const double reach[] = {0.3, 0.5, 1.0, 1.7, 2.5, 0.999, 1.0 + 0x1p-50};
    prox_cell_desc d = prox_default_cell_desc();
    d.cutoff = reach[fuzz_pick(b, 7)] * cell_size(in);
    memcpy(d.cell, in->cell, sizeof d.cell);
    memcpy(d.pbc, in->pbc, sizeof d.pbc);
    unsigned flags = fuzz_byte(b);
    d.full = flags & 1;
    d.self_interaction = flags & 2;
    d.threads = in->threads;
    prox_points p = view_of(in, in->x, in->xf, in->n);
    prox_geometry g;
    prox_geometry_init(&g, PROX_GEOMETRY_ALL, NULL);
    prox_stats stats;
    prox_status st = prox_cell_pairs(&p, &d, &g, &stats);
    if (st) {
        expect_refusal(in, st);
        prox_geometry_free(&g);
        return;
    }
    if (oracle_can(in, d.cutoff)) {
        oracle_images o;
        oracle_cell_pairs(in->x, in->n, in->dim, in->cell, in->pbc, d.cutoff, d.full,
                          d.self_interaction, &o);
        if (o.count != g.count)
            fail(in, "pairs: another count than the oracle's");
        for (int64_t t = 0; t < o.count; t++) {
            const oracle_image *v = &o.items[t];
            if (g.i[t] != v->i || g.j[t] != v->j || !same_double(g.d[t], v->d))
                fail(in, "pairs: another pair or distance than the oracle's");
            for (int k = 0; k < in->dim; k++)
                if (g.S[t * in->dim + k] != v->S[k] || !same_double(g.D[t * in->dim + k], v->D[k]))
                    fail(in, "pairs: another S or D than the oracle's");
        }
        oracle_images_free(&o);
    }
    prox_geometry_free(&g);
}

static void run_knn(fuzz_bytes *b, cell_input *in)
{
    static const int ks[] = {1, 2, 3, 5, 8, 13, 19, 40};
    prox_cell_knn_desc d = prox_default_cell_knn_desc();
    d.k = ks[fuzz_pick(b, 8)];
    memcpy(d.cell, in->cell, sizeof d.cell);
    memcpy(d.pbc, in->pbc, sizeof d.pbc);
    unsigned flags = fuzz_byte(b);
    d.include_self = flags & 1;
    d.max_radius = flags & 2 ? 0.75 * cell_size(in) : 0;
    d.threads = in->threads;
    bool queries = flags & 4;
    prox_points p = view_of(in, in->x, in->xf, in->n), q = view_of(in, in->q, in->qf, in->nq);
    prox_knn_result r;
    prox_knn_result_init(&r, NULL);
    prox_stats stats;
    prox_status st = prox_cell_knn(&p, queries ? &q : NULL, &d, &r, &stats);
    if (st) {
        expect_refusal(in, st);
        prox_knn_result_free(&r);
        return;
    }
    /* the oracle's ball grows to the k-th image: cheap while k images lie
     * within a few heights, which 12 points and k <= 40 keep */
    if (oracle_can(in, 0)) {
        oracle_knn_images o;
        oracle_cell_knn(in->x, in->n, queries ? in->q : NULL, queries ? in->nq : 0, in->dim,
                        in->cell, in->pbc, d.k, d.max_radius, d.include_self, &o);
        if (o.rows != r.rows)
            fail(in, "knn: another row count than the oracle's");
        for (int64_t i = 0; i < o.rows; i++) {
            if (r.counts[i] != o.counts[i])
                fail(in, "knn: another neighbour count than the oracle's");
            for (int t = 0; t < d.k; t++) {
                int64_t at = i * d.k + t;
                if (r.indices[at] != o.j[at] || !same_double(r.distances[at], o.d[at]))
                    fail(in, "knn: another neighbour or distance than the oracle's");
                for (int k = 0; k < in->dim; k++)
                    if (r.shifts[at * in->dim + k] != o.S[at * in->dim + k])
                        fail(in, "knn: another shift than the oracle's");
            }
        }
        oracle_knn_images_free(&o);
    }
    prox_knn_result_free(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_bytes b = {data, size};
    static cell_input in;
    memset(&in, 0, sizeof in);
    unsigned flags = fuzz_byte(&b);
    in.dim = flags & 1 ? 3 : 2;
    in.f32 = flags & 2;
    bool knn = flags & 4;
    in.threads = 1 + fuzz_pick(&b, 3);
    decode_cell(&b, &in);
    in.n = fuzz_pick(&b, MAX_POINTS + 1);
    in.nq = fuzz_pick(&b, MAX_POINTS + 1);
    decode_points(&b, &in, in.n, in.x, in.xf);
    decode_points(&b, &in, in.nq, in.q, in.qf);
    snprintf(in.context, sizeof in.context,
             "%s %dD %s n=%lld nq=%lld threads=%d pbc=%d%d%d cell=[%g %g %g; %g %g %g; %g %g %g]",
             knn ? "knn" : "pairs", in.dim, in.f32 ? "f32" : "f64", (long long)in.n,
             (long long)in.nq, in.threads, in.pbc[0], in.pbc[1], in.pbc[2], in.cell[0][0],
             in.cell[0][1], in.cell[0][2], in.cell[1][0], in.cell[1][1], in.cell[1][2],
             in.cell[2][0], in.cell[2][1], in.cell[2][2]);
    if (getenv("FUZZ_CELLS_VERBOSE"))
        fprintf(stderr, "%s\n", in.context);
    if (knn)
        run_knn(&b, &in);
    else
        run_pairs(&b, &in);
    return 0;
}

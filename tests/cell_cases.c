/* cell_cases.c: what the cell tests share (cell_cases.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cell_cases.h"
#include "check.h"

double cell_height(double m[3][3], int dim, int k)
{
    if (dim == 2) {
        const double *o = m[1 - k];
        double area = fabs(m[0][0] * m[1][1] - m[0][1] * m[1][0]);
        return area / sqrt(o[0] * o[0] + o[1] * o[1]);
    }
    const double *u = m[(k + 1) % 3], *v = m[(k + 2) % 3];
    double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                   u[0] * v[1] - u[1] * v[0]};
    double vol = fabs(c[0] * m[k][0] + c[1] * m[k][1] + c[2] * m[k][2]);
    return vol / sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
}

double cell_min_height(double m[3][3], int dim)
{
    double best = INFINITY;
    for (int k = 0; k < dim; k++)
        best = fmin(best, cell_height(m, dim, k));
    return best;
}

void cell_random(rng *r, int dim, double scale, double m[3][3])
{
    memset(m, 0, 9 * sizeof(double));
    const double deg = 3.14159265358979323846 / 180;
    for (;;) {
        double la = rng_range(r, 0.5, 1.5), lb = rng_range(r, 0.5, 1.5), lc = rng_range(r, 0.5, 1.5);
        double al = rng_range(r, 30, 120) * deg, be = rng_range(r, 30, 120) * deg,
               ga = rng_range(r, 30, 120) * deg;
        m[0][0] = scale * la;
        m[1][0] = scale * lb * cos(ga);
        m[1][1] = scale * lb * sin(ga);
        if (dim == 2)
            return;
        double cx = cos(be), cy = (cos(al) - cos(be) * cos(ga)) / sin(ga);
        double cz2 = 1 - cx * cx - cy * cy;
        if (cz2 < 0.05)
            continue;
        m[2][0] = scale * lc * cx;
        m[2][1] = scale * lc * cy;
        m[2][2] = scale * lc * sqrt(cz2);
        if (rng_below(r, 2)) {
            double t = rng_range(r, 0, 6.28), ct = cos(t), st = sin(t);
            for (int a = 0; a < 3; a++) {
                double x = m[a][0] * ct - m[a][2] * st, z = m[a][0] * st + m[a][2] * ct;
                m[a][0] = x;
                m[a][2] = z;
            }
        }
        return;
    }
}

void cell_fcc_crystal(int L, double a, double m[3][3], double *x)
{
    double unit[3][3] = {{0, 0.5 * a, 0.5 * a}, {0.5 * a, 0, 0.5 * a}, {0.5 * a, 0.5 * a, 0}};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            m[r][k] = unit[r][k] * L;
    int64_t at = 0;
    for (int u = 0; u < L; u++)
        for (int v = 0; v < L; v++)
            for (int w = 0; w < L; w++, at++)
                for (int k = 0; k < 3; k++)
                    x[3 * at + k] = (u * unit[0][k] + v * unit[1][k]) + w * unit[2][k];
}

void check_geometry(const prox_geometry *g, const oracle_images *o, const char *context)
{
    CHECK(g->count == o->count, context, "%lld pairs, the oracle %lld", (long long)g->count,
          (long long)o->count);
    for (int64_t p = 0; p < o->count; p++) {
        const oracle_image *v = &o->items[p];
        bool same = g->i[p] == v->i && g->j[p] == v->j && g->d[p] == v->d;
        for (int k = 0; k < g->dim; k++)
            same = same && g->S[p * g->dim + k] == v->S[k] && g->D[p * g->dim + k] == v->D[k];
        CHECK(same, context,
              "pair %lld: (%u, %u, S %d %d) d %.17g, the oracle (%u, %u, S %d %d %d) d %.17g",
              (long long)p, (unsigned)g->i[p], (unsigned)g->j[p], g->S[p * g->dim],
              g->S[p * g->dim + 1], g->d[p], (unsigned)v->i, (unsigned)v->j, v->S[0], v->S[1],
              v->S[2], v->d);
    }
}

double *cell_random_points(rng *r, double m[3][3], int dim, int64_t n)
{
    double *x = malloc((size_t)(n * dim + 1) * sizeof *x);
    for (int64_t i = 0; i < n; i++) {
        double f[3] = {0, 0, 0};
        for (int k = 0; k < dim; k++) {
            int64_t kind = rng_below(r, 8);
            f[k] = kind == 0 ? 0.0 : kind == 1 ? 1.0 : kind == 2 ? -1.0 : rng_range(r, -1.5, 4);
        }
        for (int k = 0; k < dim; k++)
            x[i * dim + k] = (f[0] * m[0][k] + f[1] * m[1][k]) + f[2] * m[2][k];
    }
    return x;
}

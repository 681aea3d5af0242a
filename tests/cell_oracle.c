/* cell_oracle.c: see cell_oracle.h. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cell_oracle.h"

static void push(oracle_images *l, const oracle_image *v)
{
    if (l->count == l->capacity) {
        l->capacity = l->capacity ? 2 * l->capacity : 64;
        l->items = realloc(l->items, (size_t)l->capacity * sizeof *l->items);
        if (!l->items)
            abort();
    }
    l->items[l->count++] = *v;
}

void oracle_images_free(oracle_images *l)
{
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* Solves f . M = x for the row vector f by Gaussian elimination with
 * partial pivoting on M^T (f = fractional coordinates of x). */
static void solve_fractions(double m[3][3], const double *x, double *f)
{
    double a[3][4];
    for (int r = 0; r < 3; r++) {
        for (int c = 0; c < 3; c++)
            a[r][c] = m[c][r];
        a[r][3] = x[r];
    }
    for (int col = 0; col < 3; col++) {
        int piv = col;
        for (int r = col + 1; r < 3; r++)
            if (fabs(a[r][col]) > fabs(a[piv][col]))
                piv = r;
        for (int c = 0; c < 4; c++) {
            double t = a[col][c];
            a[col][c] = a[piv][c];
            a[piv][c] = t;
        }
        for (int r = 0; r < 3; r++) {
            if (r == col)
                continue;
            double q = a[r][col] / a[col][col];
            for (int c = 0; c < 4; c++)
                a[r][c] -= q * a[col][c];
        }
    }
    for (int r = 0; r < 3; r++)
        f[r] = a[r][3] / a[r][r];
}

/* Height of the cell along axis k: the distance between the faces of
 * the other two rows, |det| / |cross of the other two|. */
static double height(double m[3][3], int k)
{
    const double *u = m[(k + 1) % 3], *v = m[(k + 2) % 3];
    double c[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    double vol = fabs(c[0] * m[k][0] + c[1] * m[k][1] + c[2] * m[k][2]);
    return vol / sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
}

static int compare_images(const void *pa, const void *pb)
{
    const oracle_image *a = pa, *b = pb;
    if (a->i != b->i)
        return a->i < b->i ? -1 : 1;
    if (a->j != b->j)
        return a->j < b->j ? -1 : 1;
    for (int k = 0; k < 3; k++)
        if (a->S[k] != b->S[k])
            return a->S[k] < b->S[k] ? -1 : 1;
    return 0;
}

static bool keep(prox_index i, prox_index j, const int32_t *S, bool full, bool self_interaction)
{
    bool zero = S[0] == 0 && S[1] == 0 && S[2] == 0;
    if (i == j && zero)
        return self_interaction;
    if (full)
        return true;
    if (i != j)
        return i < j;
    for (int k = 0; k < 3; k++)
        if (S[k] != 0)
            return S[k] > 0;
    return false;
}

/* The cell with each zero row of an open axis replaced by a unit vector
 * along the first coordinate axis it is independent of (only its
 * fractions change; S stays 0 there). */
static void usable_cell(double cell[3][3], const bool pbc[3], int dim, double m[3][3])
{
    memcpy(m, cell, 9 * sizeof(double));
    for (int k = 0; k < 3; k++) {
        if (m[k][0] != 0 || m[k][1] != 0 || m[k][2] != 0)
            continue;
        (void)pbc;
        for (int e = 0; e < 3; e++) {
            m[k][0] = m[k][1] = m[k][2] = 0;
            m[k][e] = 1;
            double d = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                       m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                       m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
            if (fabs(d) > 1e-9)
                break;
        }
    }
    (void)dim;
}

void oracle_cell_pairs(const double *x, int64_t n, int dim, double cell[3][3],
                       const bool pbc[3], double cutoff, bool full, bool self_interaction,
                       oracle_images *out)
{
    memset(out, 0, sizeof *out);
    double m[3][3];
    usable_cell(cell, pbc, dim, m);
    double reach[3];
    for (int k = 0; k < 3; k++)
        reach[k] = (k < dim && pbc[k]) ? cutoff / height(m, k) : 0;
    double r2 = cutoff * cutoff;
    for (int64_t i = 0; i < n; i++) {
        double xi[3] = {0, 0, 0}, fi[3];
        memcpy(xi, x + i * dim, (size_t)dim * sizeof(double));
        solve_fractions(m, xi, fi);
        for (int64_t j = 0; j < n; j++) {
            double xj[3] = {0, 0, 0}, fj[3];
            memcpy(xj, x + j * dim, (size_t)dim * sizeof(double));
            solve_fractions(m, xj, fj);
            int32_t lo[3], hi[3];
            for (int k = 0; k < 3; k++) {
                double delta = fj[k] - fi[k];
                lo[k] = reach[k] > 0 ? (int32_t)floor(-reach[k] - delta) - 1 : 0;
                hi[k] = reach[k] > 0 ? (int32_t)ceil(reach[k] - delta) + 1 : 0;
            }
            for (int32_t s0 = lo[0]; s0 <= hi[0]; s0++)
                for (int32_t s1 = lo[1]; s1 <= hi[1]; s1++)
                    for (int32_t s2 = lo[2]; s2 <= hi[2]; s2++) {
                        oracle_image v = {(prox_index)i, (prox_index)j, {s0, s1, s2}, {0}, 0};
                        for (int k = 0; k < 3; k++)
                            v.D[k] = (xj[k] - xi[k]) + (((double)s0 * cell[0][k] +
                                                         (double)s1 * cell[1][k]) +
                                                        (double)s2 * cell[2][k]);
                        double d2 = v.D[0] * v.D[0] + v.D[1] * v.D[1] + v.D[2] * v.D[2];
                        if (d2 <= r2 && keep(v.i, v.j, v.S, full, self_interaction)) {
                            v.d = sqrt(d2);
                            push(out, &v);
                        }
                    }
        }
    }
    if (out->count > 1)
        qsort(out->items, (size_t)out->count, sizeof *out->items, compare_images);
}

/* ---- k nearest images ------------------------------------------------------ */

static int compare_ranked(const void *pa, const void *pb)
{
    const oracle_image *a = pa, *b = pb;
    double da = a->D[0] * a->D[0] + a->D[1] * a->D[1] + a->D[2] * a->D[2];
    double db = b->D[0] * b->D[0] + b->D[1] * b->D[1] + b->D[2] * b->D[2];
    if (da != db)
        return da < db ? -1 : 1;
    if (a->j != b->j)
        return a->j < b->j ? -1 : 1;
    for (int k = 0; k < 3; k++)
        if (a->S[k] != b->S[k])
            return a->S[k] < b->S[k] ? -1 : 1;
    return 0;
}

/* Every image of the points within `radius` of xi (closed ball; all of
 * them once at S = 0 when no axis is periodic), self left out as asked. */
static void images_within(const double *x, int64_t n, int dim, double cell[3][3],
                          double m[3][3], const bool *periodic, const double *xi, int64_t self,
                          double radius, oracle_images *out)
{
    out->count = 0;
    double fi[3], reach[3];
    solve_fractions(m, xi, fi);
    for (int k = 0; k < 3; k++)
        reach[k] = periodic[k] ? radius / height(m, k) : 0;
    for (int64_t j = 0; j < n; j++) {
        double xj[3] = {0, 0, 0}, fj[3];
        memcpy(xj, x + j * dim, (size_t)dim * sizeof(double));
        solve_fractions(m, xj, fj);
        int32_t lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            double delta = fj[k] - fi[k];
            lo[k] = periodic[k] ? (int32_t)floor(-reach[k] - delta) - 1 : 0;
            hi[k] = periodic[k] ? (int32_t)ceil(reach[k] - delta) + 1 : 0;
        }
        for (int32_t s0 = lo[0]; s0 <= hi[0]; s0++)
            for (int32_t s1 = lo[1]; s1 <= hi[1]; s1++)
                for (int32_t s2 = lo[2]; s2 <= hi[2]; s2++) {
                    if (j == self && s0 == 0 && s1 == 0 && s2 == 0)
                        continue;
                    oracle_image v = {0, (prox_index)j, {s0, s1, s2}, {0}, 0};
                    for (int k = 0; k < 3; k++)
                        v.D[k] = (xj[k] - xi[k]) + (((double)s0 * cell[0][k] +
                                                     (double)s1 * cell[1][k]) +
                                                    (double)s2 * cell[2][k]);
                    double d2 = v.D[0] * v.D[0] + v.D[1] * v.D[1] + v.D[2] * v.D[2];
                    if (d2 <= radius * radius) {
                        v.d = sqrt(d2);
                        push(out, &v);
                    }
                }
    }
}

void oracle_cell_knn(const double *x, int64_t n, const double *q, int64_t nq, int dim,
                     double cell[3][3], const bool pbc[3], int k, double max_radius,
                     bool include_self, oracle_knn_images *out)
{
    bool self = q == NULL;
    if (self) {
        q = x;
        nq = n;
    }
    double m[3][3];
    usable_cell(cell, pbc, dim, m);
    bool periodic[3] = {false, false, false}, any = false;
    double start = INFINITY;
    for (int a = 0; a < dim; a++)
        if (pbc[a]) {
            periodic[a] = any = true;
            start = fmin(start, height(m, a));
        }
    out->rows = nq;
    out->k = k;
    out->dim = dim;
    out->j = malloc((size_t)(nq * k + 1) * sizeof *out->j);
    out->d = malloc((size_t)(nq * k + 1) * sizeof *out->d);
    out->S = malloc((size_t)(nq * k * dim + 1) * sizeof *out->S);
    out->counts = malloc((size_t)(nq + 1) * sizeof *out->counts);
    oracle_images list = {0};
    for (int64_t i = 0; i < nq; i++) {
        double xi[3] = {0, 0, 0};
        memcpy(xi, q + i * dim, (size_t)dim * sizeof(double));
        int64_t skip = self && !include_self ? i : -1;
        double radius = any ? start : INFINITY;
        for (;;) {
            double r = max_radius > 0 && max_radius < radius ? max_radius : radius;
            images_within(x, n, dim, cell, m, periodic, xi, skip, r, &list);
            if (list.count >= k || !any || n == 0 || r == max_radius)
                break;
            radius *= 2;
        }
        if (list.count > 1)
            qsort(list.items, (size_t)list.count, sizeof *list.items, compare_ranked);
        int real = list.count < k ? (int)list.count : k;
        out->counts[i] = real;
        for (int t = 0; t < k; t++) {
            const oracle_image *v = t < real ? &list.items[t] : NULL;
            out->j[i * k + t] = v ? v->j : (prox_index)n;
            out->d[i * k + t] = v ? v->d : INFINITY;
            for (int a = 0; a < dim; a++)
                out->S[(i * k + t) * dim + a] = v ? v->S[a] : 0;
        }
    }
    oracle_images_free(&list);
}

void oracle_knn_images_free(oracle_knn_images *r)
{
    free(r->j);
    free(r->d);
    free(r->S);
    free(r->counts);
    memset(r, 0, sizeof *r);
}

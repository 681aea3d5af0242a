/* knn_oracle.c: the tests' kNN by full sort (knn_oracle.h). */
#include "knn_oracle.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"

typedef struct scored {
    double d2;
    prox_index j;
} scored;

static int by_distance_then_index(const void *a, const void *b)
{
    const scored *x = a, *y = b;
    if (x->d2 != y->d2)
        return x->d2 < y->d2 ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

/* Coordinate k of point i of c, wrapped on a periodic axis. */
static double wrapped(const cloud *c, int64_t i, int k, const double period[3])
{
    double v = cloud_point(c, i)[k];
    return period[k] > 0 ? oracle_wrap(v, period[k]) : v;
}

static double squared_distance(const cloud *a, int64_t i, const cloud *b, int64_t j,
                               const double period[3])
{
    double sum = 0.0;
    for (int k = 0; k < a->dim; k++) {
        double dx = wrapped(a, i, k, period) - wrapped(b, j, k, period);
        if (period[k] > 0) {
            if (dx > period[k] / 2)
                dx -= period[k];
            else if (dx < -period[k] / 2)
                dx += period[k];
        }
        sum = k == 0 ? dx * dx : sum + dx * dx;
    }
    return sum;
}

void oracle_knn_rows(const cloud *points, const cloud *queries, const int64_t *rows,
                     int64_t count, int k, double max_radius, const double *period,
                     bool include_self, knn_rows *out)
{
    double p[3] = {0, 0, 0};
    for (int a = 0; a < 3 && period; a++)
        p[a] = period[a] > 0 ? period[a] : 0.0;
    const cloud *q = queries ? queries : points;
    int64_t n = points->count;
    out->rows = count;
    out->k = k;
    out->indices = malloc((size_t)(count * k + 1) * sizeof *out->indices);
    out->distances = malloc((size_t)(count * k + 1) * sizeof *out->distances);
    out->counts = malloc((size_t)(count + 1) * sizeof *out->counts);
    scored *all = malloc((size_t)(n + 1) * sizeof *all);
    double r2 = max_radius * max_radius;
    for (int64_t t = 0; t < count; t++) {
        int64_t i = rows ? rows[t] : t, m = 0;
        for (int64_t j = 0; j < n; j++) {
            if (!queries && !include_self && j == i)
                continue;
            double d2 = squared_distance(q, i, points, j, p);
            if (max_radius > 0 && !(d2 <= r2))
                continue;
            all[m++] = (scored){d2, (prox_index)j};
        }
        qsort(all, (size_t)m, sizeof *all, by_distance_then_index);
        int got = m < k ? (int)m : k;
        out->counts[t] = got;
        for (int c = 0; c < k; c++) {
            out->indices[t * k + c] = c < got ? all[c].j : (prox_index)n;
            out->distances[t * k + c] = c < got ? sqrt(all[c].d2) : INFINITY;
        }
    }
    free(all);
}

void oracle_knn(const cloud *points, const cloud *queries, int k, double max_radius,
                const double *period, bool include_self, knn_rows *out)
{
    int64_t count = queries ? queries->count : points->count;
    oracle_knn_rows(points, queries, NULL, count, k, max_radius, period, include_self, out);
}

void knn_rows_free(knn_rows *r)
{
    free(r->indices);
    free(r->distances);
    free(r->counts);
    memset(r, 0, sizeof *r);
}

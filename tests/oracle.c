/* oracle.c: naive reference results, written from the specification. */
#include "oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *checked_realloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q) {
        fprintf(stderr, "oracle: out of memory (%zu bytes)\n", size);
        abort();
    }
    return q;
}

void pair_list_init(pair_list *list)
{
    list->items = NULL;
    list->count = 0;
    list->capacity = 0;
}

void pair_list_free(pair_list *list)
{
    free(list->items);
    pair_list_init(list);
}

void pair_list_push(pair_list *list, prox_index i, prox_index j)
{
    if (list->count == list->capacity) {
        list->capacity = list->capacity ? 2 * list->capacity : 64;
        list->items = checked_realloc(list->items, (size_t)list->capacity * sizeof(prox_pair));
    }
    list->items[list->count].i = i;
    list->items[list->count].j = j;
    list->count++;
}

int compare_pairs(const void *a, const void *b)
{
    const prox_pair *p = a, *q = b;
    if (p->i != q->i)
        return p->i < q->i ? -1 : 1;
    if (p->j != q->j)
        return p->j < q->j ? -1 : 1;
    return 0;
}

void pair_list_sort(pair_list *list)
{
    if (list->count > 1)
        qsort(list->items, (size_t)list->count, sizeof(prox_pair), compare_pairs);
}

void csr_free(csr *lists)
{
    free(lists->offsets);
    free(lists->indices);
    memset(lists, 0, sizeof *lists);
}

/* ---- the exact test ---------------------------------------------------- */

double oracle_wrap(double x, double period)
{
    double w = fmod(x, period);
    if (w < 0)
        w += period;
    if (w >= period)
        w -= period;
    return w;
}

/* period (NULL = open) as three numbers, 0 on open axes. */
static void full_period(const double *period, double out[3])
{
    for (int k = 0; k < 3; k++)
        out[k] = period && period[k] > 0 ? period[k] : 0.0;
}

/* ---- reference results ------------------------------------------------- */

/* Wrapped coordinates, one array per axis (z all 0 in 2D, which adds +0 to
 * the sum and so leaves it unchanged), for a loop the compiler can
 * vectorise without changing a single rounding. */
typedef struct columns {
    int64_t count;
    double *axis[3];
} columns;

static void columns_make(const cloud *c, const double period[3], columns *out)
{
    out->count = c->count;
    for (int k = 0; k < 3; k++) {
        out->axis[k] = checked_realloc(NULL, (size_t)c->count * sizeof(double));
        for (int64_t i = 0; i < c->count; i++) {
            double x = k < c->dim ? cloud_point(c, i)[k] : 0.0;
            out->axis[k][i] = period[k] > 0 ? oracle_wrap(x, period[k]) : x;
        }
    }
}

static void columns_free(columns *c)
{
    for (int k = 0; k < 3; k++)
        free(c->axis[k]);
}

enum { BLOCK = 512 };

/* out[j - from] = squared distance of a's point i to b's points from..to-1,
 * by the specification: per axis dx = a - b, dx -= L if dx > L/2, dx += L if
 * dx < -L/2, then dx*dx + dy*dy + dz*dz summed in that order. An open axis
 * has period 0, where the minimum image steps change nothing (dx - 0 == dx). */
static void squared_distances(const columns *a, int64_t i, const columns *b, int64_t from,
                              int64_t to, const double period[3], double *out)
{
    double sum[BLOCK];
    for (int k = 0; k < 3; k++) {
        const double ai = a->axis[k][i], *bk = b->axis[k] + from;
        const double whole = period[k], half = period[k] / 2;
        for (int64_t j = 0; j < to - from; j++) {
            double dx = ai - bk[j];
            dx = dx > half ? dx - whole : dx;
            dx = dx < -half ? dx + whole : dx;
            double square = dx * dx;
            sum[j] = k == 0 ? square : sum[j] + square;
        }
    }
    memcpy(out, sum, (size_t)(to - from) * sizeof(double));
}

/* Calls back `emit` for each j in [from, to) (skipping `skip`) within the
 * radius of a's point i, ascending. */
static void row_within(const columns *a, int64_t i, const columns *b, int64_t from, int64_t to,
                       int64_t skip, double radius, const double period[3], pair_list *out)
{
    double squares[BLOCK];
    double limit = radius * radius;
    for (int64_t start = from; start < to; start += BLOCK) {
        int64_t end = to - start > BLOCK ? start + BLOCK : to;
        squared_distances(a, i, b, start, end, period, squares);
        for (int64_t j = start; j < end; j++)
            if (j != skip && squares[j - start] <= limit)
                pair_list_push(out, (prox_index)i, (prox_index)j);
    }
}

void oracle_pairs(const cloud *points, double radius, const double *period, pair_list *out)
{
    double p[3];
    columns c;
    full_period(period, p);
    columns_make(points, p, &c);
    pair_list_init(out);
    for (int64_t i = 0; i < c.count; i++)
        row_within(&c, i, &c, i + 1, c.count, -1, radius, p, out);
    columns_free(&c);
}

/* Rows of `targets` within the radius of each of `sources`; skip_self
 * leaves out j == i (self lists). */
static void rows_within(const cloud *sources, const cloud *targets, double radius,
                        const double *period, bool skip_self, csr *out)
{
    double p[3];
    columns a, b;
    full_period(period, p);
    columns_make(sources, p, &a);
    columns_make(targets, p, &b);
    pair_list flat;
    pair_list_init(&flat);
    out->rows = a.count;
    out->offsets = checked_realloc(NULL, (size_t)(out->rows + 1) * sizeof(int64_t));
    out->offsets[0] = 0;
    for (int64_t i = 0; i < a.count; i++) {
        row_within(&a, i, &b, 0, b.count, skip_self ? i : -1, radius, p, &flat);
        out->offsets[i + 1] = flat.count;
    }
    out->indices = checked_realloc(NULL, (size_t)flat.count * sizeof(prox_index));
    for (int64_t n = 0; n < flat.count; n++)
        out->indices[n] = flat.items[n].j;
    pair_list_free(&flat);
    columns_free(&a);
    columns_free(&b);
}

void oracle_lists(const cloud *points, double radius, const double *period, csr *out)
{
    rows_within(points, points, radius, period, true, out);
}

void oracle_query_pairs(const cloud *points, const cloud *queries, double radius,
                        const double *period, pair_list *out)
{
    double p[3];
    columns a, b;
    full_period(period, p);
    columns_make(queries, p, &a);
    columns_make(points, p, &b);
    pair_list_init(out);
    for (int64_t q = 0; q < a.count; q++)
        row_within(&a, q, &b, 0, b.count, -1, radius, p, out);
    columns_free(&a);
    columns_free(&b);
}

void oracle_query_lists(const cloud *points, const cloud *queries, double radius,
                        const double *period, csr *out)
{
    rows_within(queries, points, radius, period, false, out);
}

void oracle_selected_rows(const cloud *points, const int64_t *rows, int64_t count,
                          double radius, const double *period, csr *out)
{
    double p[3];
    columns c;
    full_period(period, p);
    columns_make(points, p, &c);
    pair_list flat;
    pair_list_init(&flat);
    out->rows = count;
    out->offsets = checked_realloc(NULL, (size_t)(count + 1) * sizeof(int64_t));
    out->offsets[0] = 0;
    for (int64_t n = 0; n < count; n++) {
        row_within(&c, rows[n], &c, 0, c.count, rows[n], radius, p, &flat);
        out->offsets[n + 1] = flat.count;
    }
    out->indices = checked_realloc(NULL, (size_t)flat.count * sizeof(prox_index));
    for (int64_t n = 0; n < flat.count; n++)
        out->indices[n] = flat.items[n].j;
    pair_list_free(&flat);
    columns_free(&c);
}

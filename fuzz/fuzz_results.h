/* fuzz_results.h: every sink's output as one canonical list of pairs, and
 * the comparisons the library targets make against brute force. A mismatch
 * aborts with what differed: libFuzzer then keeps the input as a crash. */
#ifndef PROX_FUZZ_RESULTS_H
#define PROX_FUZZ_RESULTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prox/prox.h"

typedef struct fuzz_pairs {
    prox_pair *pairs;
    int64_t count, capacity;
} fuzz_pairs;

static inline void fuzz_pairs_add(fuzz_pairs *p, prox_index i, prox_index j)
{
    if (p->count == p->capacity) {
        p->capacity = p->capacity ? 2 * p->capacity : 64;
        p->pairs = realloc(p->pairs, (size_t)p->capacity * sizeof *p->pairs);
        if (!p->pairs)
            abort();
    }
    p->pairs[p->count++] = (prox_pair){i, j};
}

static inline int fuzz_pair_cmp(const void *a, const void *b)
{
    const prox_pair *x = a, *y = b;
    if (x->i != y->i)
        return x->i < y->i ? -1 : 1;
    return x->j < y->j ? -1 : x->j > y->j;
}

static inline void fuzz_pairs_sort(fuzz_pairs *p)
{
    if (p->count > 1)
        qsort(p->pairs, (size_t)p->count, sizeof *p->pairs, fuzz_pair_cmp);
}

static inline int fuzz_pairs_callback(prox_index i, prox_index j, void *user)
{
    fuzz_pairs_add(user, i, j);
    return 0;
}

/* Set by a target: prints its decoded input when a check fails. */
static void (*fuzz_dump_input)(void);

static inline _Noreturn void fuzz_fail(const char *what, const char *context)
{
    fprintf(stderr, "MISMATCH: %s (%s); last error: %s\n", what, context, prox_last_error());
    if (fuzz_dump_input)
        fuzz_dump_input();
    abort();
}

/* The kinds of sink a target tries. */
enum { SINK_COUNT, SINK_BUFFER, SINK_BUFFER_UNSORTED, SINK_LISTS, SINK_LISTS_UNSORTED,
       SINK_CALLBACK, SINK_KINDS };

typedef struct fuzz_sink {
    int kind;
    prox_pair_buffer buffer;
    prox_lists lists;
    fuzz_pairs called;
} fuzz_sink;

static inline prox_sink fuzz_sink_open(fuzz_sink *s, int kind)
{
    memset(s, 0, sizeof *s);
    s->kind = kind;
    prox_pair_buffer_init(&s->buffer, NULL);
    prox_lists_init(&s->lists, NULL);
    switch (kind) {
    case SINK_BUFFER: return prox_sink_buffer(&s->buffer);
    case SINK_BUFFER_UNSORTED: return prox_sink_unsorted(prox_sink_buffer(&s->buffer));
    case SINK_LISTS: return prox_sink_lists(&s->lists);
    case SINK_LISTS_UNSORTED: return prox_sink_unsorted(prox_sink_lists(&s->lists));
    case SINK_CALLBACK: return prox_sink_callback(fuzz_pairs_callback, &s->called);
    default: return prox_sink_count();
    }
}

static inline void fuzz_sink_close(fuzz_sink *s)
{
    prox_pair_buffer_free(&s->buffer);
    prox_lists_free(&s->lists);
    free(s->called.pairs);
}

/* The sink's pairs against the oracle's sorted ones (self: i < j; lists
 * hold both directions; query: (q, j)), and the count in stats. */
static inline void fuzz_expect_sink(fuzz_sink *s, const prox_pair_buffer *want, int64_t stats_pairs,
                                    bool self, int64_t rows, const char *context)
{
    if (stats_pairs != want->count)
        fuzz_fail("stats.pairs differs from brute force", context);
    fuzz_pairs got = {0};
    switch (s->kind) {
    case SINK_COUNT: return;
    case SINK_BUFFER:
    case SINK_BUFFER_UNSORTED:
        for (int64_t k = 0; k < s->buffer.count; k++)
            fuzz_pairs_add(&got, s->buffer.pairs[k].i, s->buffer.pairs[k].j);
        if (s->kind == SINK_BUFFER)
            for (int64_t k = 1; k < got.count; k++)
                if (fuzz_pair_cmp(&got.pairs[k - 1], &got.pairs[k]) >= 0)
                    fuzz_fail("sorted buffer out of order", context);
        break;
    case SINK_LISTS:
    case SINK_LISTS_UNSORTED:
        if (s->lists.rows != rows || s->lists.offsets[0] != 0)
            fuzz_fail("lists have the wrong rows", context);
        for (int64_t r = 0; r < rows; r++) {
            int64_t a = s->lists.offsets[r], b = s->lists.offsets[r + 1];
            if (b < a)
                fuzz_fail("lists offsets decrease", context);
            for (int64_t e = a; e < b; e++) {
                prox_index j = s->lists.indices[e];
                if (s->kind == SINK_LISTS && e > a && s->lists.indices[e - 1] >= j)
                    fuzz_fail("sorted list row out of order", context);
                if (!self || (prox_index)r < j)
                    fuzz_pairs_add(&got, (prox_index)r, j);
            }
        }
        if (self && s->lists.offsets[rows] != 2 * want->count)
            fuzz_fail("lists do not hold both directions", context);
        break;
    case SINK_CALLBACK:
        got = s->called;
        s->called = (fuzz_pairs){0};
        break;
    }
    fuzz_pairs_sort(&got);
    bool same = got.count == want->count &&
                (got.count == 0 ||
                 memcmp(got.pairs, want->pairs, (size_t)got.count * sizeof *got.pairs) == 0);
    free(got.pairs);
    if (!same)
        fuzz_fail("pairs differ from brute force", context);
}

/* Two runs that must give the same bytes in the same order (one thread
 * against several). */
static inline void fuzz_expect_identical(const fuzz_sink *a, const fuzz_sink *b,
                                         const char *context)
{
    bool same = true;
    if (a->kind == SINK_BUFFER || a->kind == SINK_BUFFER_UNSORTED)
        same = a->buffer.count == b->buffer.count &&
               (a->buffer.count == 0 || memcmp(a->buffer.pairs, b->buffer.pairs,
                                               (size_t)a->buffer.count * sizeof(prox_pair)) == 0);
    if (a->kind == SINK_LISTS || a->kind == SINK_LISTS_UNSORTED) {
        same = a->lists.rows == b->lists.rows &&
               memcmp(a->lists.offsets, b->lists.offsets,
                      (size_t)(a->lists.rows + 1) * sizeof(int64_t)) == 0;
        int64_t entries = a->lists.offsets[a->lists.rows];
        same = same && (entries == 0 || memcmp(a->lists.indices, b->lists.indices,
                                               (size_t)entries * sizeof(prox_index)) == 0);
    }
    if (!same)
        fuzz_fail("output differs between thread counts", context);
}

#endif

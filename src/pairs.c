/* pairs.c: pair buffers, CSR lists, sinks, and the delivery of gathered
 * pairs into sorted buffers and lists (written once for every structure). */
#include "pair_sink.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "error.h"
#include "radix_sort.h"

/* ---- public containers ------------------------------------------------- */

void prox_pair_buffer_init(prox_pair_buffer *b, const prox_allocator *allocator)
{
    *b = (prox_pair_buffer){0};
    b->allocator = prox_allocator_resolve(allocator);
}

void prox_pair_buffer_free(prox_pair_buffer *b)
{
    prox_free(&b->allocator, b->pairs);
    prox_allocator a = b->allocator;
    *b = (prox_pair_buffer){0};
    b->allocator = a;
}

prox_status prox_pair_buffer_reserve(prox_pair_buffer *b, int64_t capacity)
{
    void *p = b->pairs;
    if (!prox_grow(&b->allocator, &p, &b->capacity, capacity, b->count, sizeof(prox_pair)))
        return prox_fail(PROX_ERR_NO_MEMORY, "pair buffer: cannot hold %lld pairs",
                         (long long)capacity);
    b->pairs = p;
    return PROX_OK;
}

void prox_lists_init(prox_lists *l, const prox_allocator *allocator)
{
    *l = (prox_lists){0};
    l->allocator = prox_allocator_resolve(allocator);
}

void prox_lists_free(prox_lists *l)
{
    prox_free(&l->allocator, l->offsets);
    prox_free(&l->allocator, l->indices);
    prox_allocator a = l->allocator;
    *l = (prox_lists){0};
    l->allocator = a;
}

prox_sink prox_sink_count(void)
{
    return (prox_sink){.kind = PROX_SINK_COUNT};
}

prox_sink prox_sink_buffer(prox_pair_buffer *buffer)
{
    return (prox_sink){.kind = PROX_SINK_BUFFER, .buffer = buffer};
}

prox_sink prox_sink_lists(prox_lists *lists)
{
    return (prox_sink){.kind = PROX_SINK_LISTS, .lists = lists};
}

prox_sink prox_sink_callback(prox_pair_fn fn, void *user)
{
    return (prox_sink){.kind = PROX_SINK_CALLBACK, .fn = fn, .user = user};
}

/* ---- emitters and chunks ----------------------------------------------- */

bool prox_emitter_grow(prox_emitter *e, int64_t more)
{
    void *p = e->pairs;
    if (!prox_grow(e->allocator, &p, &e->capacity, e->count + more, e->count, sizeof(prox_pair))) {
        e->failed = e->stop = true;
        return false;
    }
    e->pairs = p;
    return true;
}

prox_status prox_chunks_init(prox_chunks *c, int count, prox_sink sink,
                             const prox_allocator *allocator)
{
    c->allocator = prox_allocator_resolve(allocator);
    c->count = count;
    c->emitter = prox_alloc_array(&c->allocator, count, sizeof *c->emitter);
    if (!c->emitter)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for %d result chunks", count);
    for (int k = 0; k < count; k++)
        c->emitter[k] = (prox_emitter){.kind = sink.kind, .allocator = &c->allocator,
                                       .fn = sink.fn, .user = sink.user};
    return PROX_OK;
}

void prox_chunks_free(prox_chunks *c)
{
    if (!c->emitter)
        return;
    for (int k = 0; k < c->count; k++)
        prox_free(&c->allocator, c->emitter[k].pairs);
    prox_free(&c->allocator, c->emitter);
    c->emitter = NULL;
}

/* ---- delivery: counting sort by row, then each row sorted -------------- */

static void sort_pairs_by_j(prox_pair *p, int64_t n)
{
    for (int64_t a = 1; a < n; a++) {
        prox_pair v = p[a];
        int64_t b = a;
        for (; b > 0 && p[b - 1].j > v.j; b--)
            p[b] = p[b - 1];
        p[b] = v;
    }
}

static int compare_pair_j(const void *a, const void *b)
{
    prox_index x = ((const prox_pair *)a)->j, y = ((const prox_pair *)b)->j;
    return (x > y) - (x < y);
}

static void sort_row(prox_pair *p, int64_t n)
{
    if (n > 48)
        qsort(p, (size_t)n, sizeof *p, compare_pair_j);
    else
        sort_pairs_by_j(p, n);
}

typedef struct pair_source {
    const prox_pair *const *arrays;
    const int64_t *counts;
    int arrays_count;
} pair_source;

static int64_t source_total(const pair_source *s)
{
    int64_t total = 0;
    for (int a = 0; a < s->arrays_count; a++)
        total += s->counts[a];
    return total;
}

/* offsets[r] = first slot of row r; returns false on allocation failure. */
static int64_t *row_offsets(const pair_source *s, int64_t rows, bool both,
                            const prox_allocator *al)
{
    int64_t *off = prox_alloc_array(al, rows + 1, sizeof *off);
    if (!off)
        return NULL;
    memset(off, 0, (size_t)(rows + 1) * sizeof *off);
    for (int a = 0; a < s->arrays_count; a++)
        for (int64_t k = 0; k < s->counts[a]; k++) {
            off[s->arrays[a][k].i + 1]++;
            if (both)
                off[s->arrays[a][k].j + 1]++;
        }
    for (int64_t r = 0; r < rows; r++)
        off[r + 1] += off[r];
    return off;
}

static prox_status deliver_buffer(const pair_source *s, prox_pair_buffer *b, int64_t rows)
{
    int64_t total = source_total(s);
    b->count = 0;
    prox_status st = prox_pair_buffer_reserve(b, total);
    if (st)
        return st;
    int64_t *cursor = row_offsets(s, rows, false, &b->allocator);
    if (!cursor)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory sorting %lld pairs",
                         (long long)total);
    for (int a = 0; a < s->arrays_count; a++)
        for (int64_t k = 0; k < s->counts[a]; k++) {
            prox_pair p = s->arrays[a][k];
            b->pairs[cursor[p.i]++] = p;
        }
    /* cursor[r] now ends row r, which starts where row r-1 ends */
    int64_t begin = 0;
    for (int64_t r = 0; r < rows; r++) {
        sort_row(b->pairs + begin, cursor[r] - begin);
        begin = cursor[r];
    }
    b->count = total;
    prox_free(&b->allocator, cursor);
    return PROX_OK;
}

static prox_status deliver_lists(const pair_source *s, prox_lists *l, int64_t rows,
                                 bool symmetric)
{
    int64_t total = source_total(s) * (symmetric ? 2 : 1);
    l->rows = 0;
    void *off = l->offsets, *idx = l->indices;
    bool ok = prox_reserve(&l->allocator, &idx, &l->indices_capacity, total, sizeof(prox_index));
    l->indices = idx;
    ok = ok && prox_reserve(&l->allocator, &off, &l->offsets_capacity, rows + 1, sizeof(int64_t));
    l->offsets = off;
    int64_t *cursor = ok ? row_offsets(s, rows, symmetric, &l->allocator) : NULL;
    if (!cursor)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory for lists of %lld entries",
                         (long long)total);
    memcpy(l->offsets, cursor, (size_t)(rows + 1) * sizeof *cursor);
    for (int a = 0; a < s->arrays_count; a++)
        for (int64_t k = 0; k < s->counts[a]; k++) {
            prox_pair p = s->arrays[a][k];
            l->indices[cursor[p.i]++] = p.j;
            if (symmetric)
                l->indices[cursor[p.j]++] = p.i;
        }
    for (int64_t r = 0; r < rows; r++)
        prox_sort_u32(l->indices + l->offsets[r], l->offsets[r + 1] - l->offsets[r]);
    l->rows = rows;
    prox_free(&l->allocator, cursor);
    return PROX_OK;
}

static prox_status deliver_source(const pair_source *s, prox_sink sink, int64_t rows,
                                  bool symmetric)
{
    if (sink.kind == PROX_SINK_BUFFER)
        return deliver_buffer(s, sink.buffer, rows);
    if (sink.kind == PROX_SINK_LISTS)
        return deliver_lists(s, sink.lists, rows, symmetric);
    return PROX_OK;
}

prox_status prox_chunks_deliver(prox_chunks *c, prox_sink sink, int64_t rows, bool symmetric,
                                int64_t *pairs)
{
    int64_t total = 0;
    bool failed = false, stopped = false;
    for (int k = 0; k < c->count; k++) {
        total += c->emitter[k].count;
        failed |= c->emitter[k].failed;
        stopped |= c->emitter[k].stop;
    }
    *pairs = total;
    if (failed)
        return prox_fail(PROX_ERR_NO_MEMORY, "out of memory storing pairs");
    if (stopped)
        return PROX_STOPPED;
    if (sink.kind != PROX_SINK_BUFFER && sink.kind != PROX_SINK_LISTS)
        return PROX_OK;

    const prox_pair **arrays = prox_alloc_array(&c->allocator, c->count, sizeof *arrays);
    int64_t *counts = prox_alloc_array(&c->allocator, c->count, sizeof *counts);
    prox_status st = PROX_OK;
    if (!arrays || !counts) {
        st = prox_fail(PROX_ERR_NO_MEMORY, "out of memory gathering pairs");
    } else {
        for (int k = 0; k < c->count; k++) {
            arrays[k] = c->emitter[k].pairs;
            counts[k] = c->emitter[k].count;
        }
        pair_source s = {arrays, counts, c->count};
        st = deliver_source(&s, sink, rows, symmetric);
    }
    prox_free(&c->allocator, arrays);
    prox_free(&c->allocator, counts);
    return st;
}

prox_status prox_pairs_deliver(const prox_pair *pairs, int64_t count, prox_sink sink,
                               int64_t rows, bool symmetric, const prox_allocator *allocator)
{
    (void)allocator;
    if (sink.kind == PROX_SINK_CALLBACK) {
        for (int64_t k = 0; k < count; k++)
            if (sink.fn(pairs[k].i, pairs[k].j, sink.user))
                return PROX_STOPPED;
        return PROX_OK;
    }
    pair_source s = {&pairs, &count, 1};
    return deliver_source(&s, sink, rows, symmetric);
}

prox_status prox_sink_check(prox_sink sink)
{
    switch (sink.kind) {
    case PROX_SINK_COUNT: return PROX_OK;
    case PROX_SINK_BUFFER:
        return sink.buffer ? PROX_OK : prox_fail(PROX_ERR_INVALID, "buffer sink without a buffer");
    case PROX_SINK_LISTS:
        return sink.lists ? PROX_OK : prox_fail(PROX_ERR_INVALID, "lists sink without lists");
    case PROX_SINK_CALLBACK:
        return sink.fn ? PROX_OK : prox_fail(PROX_ERR_INVALID, "callback sink without a function");
    }
    return prox_fail(PROX_ERR_INVALID, "unknown sink kind %d", (int)sink.kind);
}

/* check.c: running the library on a test case and comparing with the oracle. */
#include "check.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const algo_config CONFIG_BRUTE = {"brute", PROX_ALGO_BRUTE, PROX_KEYS_MORTON, 1, 0,
                                  PROX_COORDS_AUTO, PROX_ROWS_AUTO};
const algo_config CONFIG_MORTON = {"grid-morton", PROX_ALGO_GRID, PROX_KEYS_MORTON, 1, 0,
                                   PROX_COORDS_AUTO, PROX_ROWS_AUTO};
const algo_config CONFIG_HASH = {"grid-hash", PROX_ALGO_GRID, PROX_KEYS_HASH, 1, 0,
                                 PROX_COORDS_AUTO, PROX_ROWS_AUTO};
const algo_config CONFIG_DIVISIONS_2 = {"grid-morton-div2", PROX_ALGO_GRID, PROX_KEYS_MORTON, 2,
                                        0, PROX_COORDS_AUTO, PROX_ROWS_AUTO};
const algo_config CONFIG_HASH_TINY_TABLE = {"grid-hash-table8", PROX_ALGO_GRID, PROX_KEYS_HASH,
                                            1, 8, PROX_COORDS_AUTO, PROX_ROWS_AUTO};
/* AUTO: fixed point through prox_pairs and prox_query, doubles on objects */
const algo_config CONFIG_LINEAR = {"grid-linear", PROX_ALGO_GRID, PROX_KEYS_LINEAR, 1, 0,
                                   PROX_COORDS_AUTO, PROX_ROWS_AUTO};
const algo_config CONFIG_LINEAR_DIVISIONS_2 = {"grid-linear-div2-fixed", PROX_ALGO_GRID,
                                               PROX_KEYS_LINEAR, 2, 0, PROX_COORDS_FIXED, PROX_ROWS_AUTO};
const algo_config CONFIG_LINEAR_DOUBLE = {"grid-linear-div2-double", PROX_ALGO_GRID,
                                          PROX_KEYS_LINEAR, 2, 0, PROX_COORDS_DOUBLE, PROX_ROWS_AUTO};
/* sorted rows written in place (grid_fill.c): over the coordinates' default,
 * and over fixed point with cells of r/2 (strips of 5 cells) */
const algo_config CONFIG_LINEAR_IN_PLACE = {"grid-linear-in-place", PROX_ALGO_GRID,
                                            PROX_KEYS_LINEAR, 1, 0, PROX_COORDS_AUTO,
                                            PROX_ROWS_IN_PLACE};
static const algo_config CONFIG_LINEAR_IN_PLACE_DIV2 = {"grid-linear-div2-fixed-in-place",
                                                        PROX_ALGO_GRID, PROX_KEYS_LINEAR, 2, 0,
                                                        PROX_COORDS_FIXED, PROX_ROWS_IN_PLACE};
const algo_config *const GRID_CONFIGS[GRID_CONFIG_COUNT] = {
    &CONFIG_LINEAR,          &CONFIG_MORTON,
    &CONFIG_HASH,            &CONFIG_DIVISIONS_2,
    &CONFIG_HASH_TINY_TABLE, &CONFIG_LINEAR_DIVISIONS_2,
    &CONFIG_LINEAR_DOUBLE,   &CONFIG_LINEAR_IN_PLACE,
    &CONFIG_LINEAR_IN_PLACE_DIV2};

prox_grid_desc config_desc(const algo_config *config, double radius, const double period[3],
                           int threads)
{
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = radius;
    desc.keys = config->keys;
    desc.cell_divisions = config->cell_divisions;
    desc.table_size = config->table_size;
    desc.coords = config->coords;
    desc.rows = config->rows;
    for (int k = 0; k < 3; k++)
        desc.period[k] = period ? period[k] : 0.0;
    desc.threads = threads;
    return desc;
}

/* ---- diagnosis --------------------------------------------------------- */

static double squared_distance(const subject *s, prox_index i, prox_index j)
{
    const cloud *a = s->rows, *b = s->columns;
    if (!a || !b || (int64_t)i >= a->count || (int64_t)j >= b->count)
        return -1.0;
    double sum = 0.0;
    for (int k = 0; k < a->dim; k++) {
        double x = cloud_point(a, i)[k], y = cloud_point(b, j)[k];
        if (s->period && s->period[k] > 0) {
            x = oracle_wrap(x, s->period[k]);
            y = oracle_wrap(y, s->period[k]);
        }
        double dx = x - y;
        if (s->period && s->period[k] > 0) {
            if (dx > s->period[k] / 2)
                dx -= s->period[k];
            if (dx < -s->period[k] / 2)
                dx += s->period[k];
        }
        sum += dx * dx;
    }
    return sum;
}

static void print_point(const char *label, const cloud *c, prox_index i)
{
    if (!c || (int64_t)i >= c->count) {
        print_error("    %s %u: out of range\n", label, (unsigned)i);
        return;
    }
    const double *p = cloud_point(c, i);
    print_error("    %s %u = (%.17g, %.17g, %.17g)\n", label, (unsigned)i, p[0], p[1],
                c->dim == 3 ? p[2] : 0.0);
}

static void describe_pair(const subject *s, const char *what, prox_pair p)
{
    print_error("  %s pair (%u, %u): squared distance %.17g, r*r %.17g\n", what, (unsigned)p.i,
                (unsigned)p.j, squared_distance(s, p.i, p.j), s->radius * s->radius);
    print_point("first ", s->rows, p.i);
    print_point("second", s->columns, p.j);
}

static int pair_order(prox_pair a, prox_pair b)
{
    if (a.i != b.i)
        return a.i < b.i ? -1 : 1;
    if (a.j != b.j)
        return a.j < b.j ? -1 : 1;
    return 0;
}

/* got must be strictly increasing: reports the first violation. */
static void expect_sorted_unique(const subject *s, const prox_pair *got, int64_t count)
{
    for (int64_t n = 1; n < count; n++) {
        if (pair_order(got[n - 1], got[n]) >= 0) {
            print_error("MISMATCH in: %s\n", s->context);
            print_error("  pairs %" PRId64 " and %" PRId64 " out of order or repeated: "
                        "(%u, %u) then (%u, %u)\n",
                        n - 1, n, (unsigned)got[n - 1].i, (unsigned)got[n - 1].j,
                        (unsigned)got[n].i, (unsigned)got[n].j);
            CHECK(0, s->context, "pair list not sorted by (i, j) without repeats");
        }
    }
}

/* Both sorted: the first pair missing from got and the first extra one. */
static void report_difference(const subject *s, const pair_list *want, const prox_pair *got,
                              int64_t got_count)
{
    int64_t a = 0, b = 0;
    bool missing_found = false, extra_found = false;
    while ((a < want->count || b < got_count) && !(missing_found && extra_found)) {
        int order = a >= want->count ? 1 : b >= got_count ? -1
                                                         : pair_order(want->items[a], got[b]);
        if (order == 0) {
            a++, b++;
        } else if (order < 0) {
            if (!missing_found)
                describe_pair(s, "first MISSING (expected, not returned)", want->items[a]);
            missing_found = true;
            a++;
        } else {
            if (!extra_found)
                describe_pair(s, "first EXTRA (returned, not expected)", got[b]);
            extra_found = true;
            b++;
        }
    }
}

void expect_same_pairs(const subject *s, const pair_list *want, const prox_pair *got,
                       int64_t got_count)
{
    CHECK(got_count == 0 || got != NULL, s->context, "%" PRId64 " pairs but a NULL array",
          got_count);
    expect_sorted_unique(s, got, got_count);
    bool same = got_count == want->count &&
                (got_count == 0 ||
                 memcmp(got, want->items, (size_t)got_count * sizeof(prox_pair)) == 0);
    if (!same) {
        print_error("MISMATCH in: %s\n", s->context);
        print_error("  expected %" PRId64 " pairs, got %" PRId64 "\n", want->count, got_count);
        report_difference(s, want, got, got_count);
    }
    CHECK(same, s->context, "pairs differ from the oracle (see above)");
}

static void print_row(const char *label, const prox_index *row, int64_t length)
{
    print_error("    %s (%" PRId64 "):", label, length);
    for (int64_t n = 0; n < length && n < 16; n++)
        print_error(" %u", (unsigned)row[n]);
    print_error(length > 16 ? " ...\n" : "\n");
}

static void expect_offsets_valid(const subject *s, const prox_lists *got)
{
    CHECK(got->offsets != NULL, s->context, "offsets is NULL (rows + 1 = %" PRId64
          " entries expected)", got->rows + 1);
    CHECK(got->offsets[0] == 0, s->context, "offsets[0] = %" PRId64, got->offsets[0]);
    for (int64_t r = 0; r < got->rows; r++)
        CHECK(got->offsets[r] <= got->offsets[r + 1], s->context,
              "offsets decrease at row %" PRId64 ": %" PRId64 " > %" PRId64, r,
              got->offsets[r], got->offsets[r + 1]);
}

static void expect_same_row(const subject *s, const csr *want, const prox_lists *got,
                            int64_t r)
{
    int64_t want_length = want->offsets[r + 1] - want->offsets[r];
    int64_t got_length = got->offsets[r + 1] - got->offsets[r];
    const prox_index *want_row = want->indices + want->offsets[r];
    const prox_index *got_row = got->indices + got->offsets[r];
    bool same = want_length == got_length &&
                (want_length == 0 ||
                 memcmp(want_row, got_row, (size_t)want_length * sizeof(prox_index)) == 0);
    if (!same) {
        print_error("MISMATCH in: %s\n  row %" PRId64 " differs:\n", s->context, r);
        print_row("expected", want_row, want_length);
        print_row("got     ", got_row, got_length);
        print_point("row point", s->rows, (prox_index)r);
    }
    CHECK(same, s->context, "list row %" PRId64 " differs from the oracle", r);
}

void expect_same_lists(const subject *s, const csr *want, const prox_lists *got)
{
    CHECK(got->rows == want->rows, s->context, "rows %" PRId64 ", expected %" PRId64, got->rows,
          want->rows);
    expect_offsets_valid(s, got);
    int64_t want_total = want->offsets[want->rows];
    CHECK(got->offsets[got->rows] == want_total, s->context,
          "offsets[rows] = %" PRId64 " entries, expected %" PRId64
          " (the first differing row follows)",
          got->offsets[got->rows], want_total);
    for (int64_t r = 0; r < want->rows; r++)
        expect_same_row(s, want, got, r);
}

void expect_sampled_rows(const subject *s, const csr *want, const int64_t *rows,
                         const prox_lists *got)
{
    expect_offsets_valid(s, got);
    for (int64_t n = 0; n < want->rows; n++) {
        int64_t r = rows[n];
        CHECK(r < got->rows, s->context, "row %" PRId64 " missing (%" PRId64 " rows)", r,
              got->rows);
        int64_t want_length = want->offsets[n + 1] - want->offsets[n];
        int64_t got_length = got->offsets[r + 1] - got->offsets[r];
        const prox_index *want_row = want->indices + want->offsets[n];
        const prox_index *got_row = got->indices + got->offsets[r];
        bool same = want_length == got_length &&
                    (want_length == 0 ||
                     memcmp(want_row, got_row, (size_t)want_length * sizeof(prox_index)) == 0);
        if (!same) {
            print_error("MISMATCH in: %s\n  row %" PRId64 " differs:\n", s->context, r);
            print_row("expected", want_row, want_length);
            print_row("got     ", got_row, got_length);
            print_point("row point", s->rows, (prox_index)r);
        }
        CHECK(same, s->context, "list row %" PRId64 " differs from the oracle", r);
    }
}

/* ---- expectations ------------------------------------------------------ */

void expectation_compute(expectation *e, const test_case *tc)
{
    oracle_pairs(&tc->points, tc->radius, tc->period, &e->pairs);
    oracle_lists(&tc->points, tc->radius, tc->period, &e->lists);
    oracle_query_pairs(&tc->points, &tc->queries, tc->radius, tc->period, &e->query_pairs);
    oracle_query_lists(&tc->points, &tc->queries, tc->radius, tc->period, &e->query_lists);
}

void expectation_free(expectation *e)
{
    pair_list_free(&e->pairs);
    csr_free(&e->lists);
    pair_list_free(&e->query_pairs);
    csr_free(&e->query_lists);
}

/* ---- callback collector ------------------------------------------------ */

void collector_init(collector *c, int64_t stop_after)
{
    pair_list_init(&c->got);
    c->calls = 0;
    c->stop_after = stop_after;
}

void collector_free(collector *c)
{
    pair_list_free(&c->got);
}

int collector_fn(prox_index i, prox_index j, void *user)
{
    collector *c = user;
    c->calls++;
    pair_list_push(&c->got, i, j);
    return c->stop_after > 0 && c->calls >= c->stop_after;
}

/* ---- one case, one configuration, every sink --------------------------- */

/* Either self pairs (queries == NULL) or queries. */
typedef struct run {
    const test_case *tc;
    const algo_config *config;
    prox_grid_desc desc;
    prox_points points;
    prox_points queries;
    bool is_query;
    prox_grid *grid; /* when set: prox_grid_pairs / prox_grid_query on it */
    char context[512];
    subject subject;
} run;

static void run_init(run *r, const test_case *tc, const algo_config *config, int threads,
                     bool is_query)
{
    r->tc = tc;
    r->config = config;
    r->desc = config_desc(config, tc->radius, tc->period, threads);
    r->points = test_case_points(tc);
    r->queries = test_case_queries(tc);
    r->is_query = is_query;
    r->grid = NULL;
    r->subject.rows = is_query ? &tc->queries : &tc->points;
    r->subject.columns = &tc->points;
    r->subject.radius = tc->radius;
    r->subject.period = tc->period;
    r->subject.context = r->context;
}

static void run_label(run *r, const char *sink)
{
    char what[256];
    test_case_describe(r->tc, what, sizeof what);
    const char *call = r->grid ? (r->is_query ? "prox_grid_query" : "prox_grid_pairs")
                               : (r->is_query ? "prox_query" : "prox_pairs");
    snprintf(r->context, sizeof r->context, "%s algo=%s threads=%d call=%s sink=%s", what,
             r->config->name, r->desc.threads, call, sink);
}

static prox_status run_call(run *r, prox_sink sink, prox_stats *stats)
{
    if (r->grid && r->is_query)
        return prox_grid_query(r->grid, &r->queries, sink, stats);
    if (r->grid)
        return prox_grid_pairs(r->grid, sink, stats);
    if (r->is_query)
        return prox_query(&r->points, &r->queries, &r->desc, r->config->algo, sink, stats);
    return prox_pairs(&r->points, &r->desc, r->config->algo, sink, stats);
}

static void expect_stats(run *r, const prox_stats *stats, int64_t pairs)
{
    CHECK(stats->pairs == pairs, r->context, "stats.pairs = %" PRId64 ", expected %" PRId64,
          stats->pairs, pairs);
    CHECK(stats->candidates >= stats->pairs, r->context,
          "stats.candidates = %" PRId64 " < stats.pairs = %" PRId64, stats->candidates,
          stats->pairs);
}

static int compare_index(const void *a, const void *b)
{
    prox_index x = *(const prox_index *)a, y = *(const prox_index *)b;
    return x < y ? -1 : x > y;
}

static void expect_self_orientation(run *r, const pair_list *got);

/* The buffer must equal the oracle's pairs; unsorted (prox_sink_unsorted):
 * the same pairs (self pairs still i < j) in any order, so sorted first. */
static void check_buffer_sink(run *r, const pair_list *want, bool unsorted)
{
    run_label(r, unsorted ? "unsorted buffer" : "buffer");
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    prox_stats stats;
    memset(&stats, 0xA5, sizeof stats);
    prox_sink sink = prox_sink_buffer(&buffer);
    CHECK_STATUS(run_call(r, unsorted ? prox_sink_unsorted(sink) : sink, &stats), PROX_OK,
                 r->context);
    pair_list got;
    pair_list_init(&got);
    for (int64_t n = 0; n < buffer.count; n++)
        pair_list_push(&got, buffer.pairs[n].i, buffer.pairs[n].j);
    if (unsorted) {
        expect_self_orientation(r, &got);
        pair_list_sort(&got);
    }
    expect_same_pairs(&r->subject, want, got.items, got.count);
    expect_stats(r, &stats, want->count);
    pair_list_free(&got);
    prox_pair_buffer_free(&buffer);
}

/* The lists must equal the oracle's; unsorted: each row sorted first. */
static void check_lists_sink(run *r, const csr *want, int64_t pairs, bool unsorted)
{
    run_label(r, unsorted ? "unsorted lists" : "lists");
    prox_lists lists;
    prox_lists_init(&lists, NULL);
    prox_stats stats;
    memset(&stats, 0xA5, sizeof stats);
    prox_sink sink = prox_sink_lists(&lists);
    CHECK_STATUS(run_call(r, unsorted ? prox_sink_unsorted(sink) : sink, &stats), PROX_OK,
                 r->context);
    for (int64_t row = 0; unsorted && row < lists.rows; row++) {
        int64_t begin = lists.offsets[row], end = lists.offsets[row + 1];
        if (end > begin && begin >= 0 && end <= lists.offsets[lists.rows])
            qsort(lists.indices + begin, (size_t)(end - begin), sizeof *lists.indices,
                  compare_index);
    }
    expect_same_lists(&r->subject, want, &lists);
    expect_stats(r, &stats, pairs);
    prox_lists_free(&lists);
}

static void check_count_sink(run *r, int64_t pairs)
{
    run_label(r, "count");
    prox_stats stats;
    memset(&stats, 0xA5, sizeof stats);
    CHECK_STATUS(run_call(r, prox_sink_count(), &stats), PROX_OK, r->context);
    expect_stats(r, &stats, pairs);
}

static void expect_self_orientation(run *r, const pair_list *got)
{
    if (r->is_query)
        return;
    for (int64_t n = 0; n < got->count; n++)
        CHECK(got->items[n].i < got->items[n].j, r->context,
              "callback %" PRId64 " got pair (%u, %u): i < j expected", n,
              (unsigned)got->items[n].i, (unsigned)got->items[n].j);
}

static void check_callback_sink(run *r, const pair_list *want)
{
    run_label(r, "callback");
    collector c;
    collector_init(&c, 0);
    prox_stats stats;
    memset(&stats, 0xA5, sizeof stats);
    CHECK_STATUS(run_call(r, prox_sink_callback(collector_fn, &c), &stats), PROX_OK,
                 r->context);
    expect_self_orientation(r, &c.got);
    pair_list_sort(&c.got);
    expect_same_pairs(&r->subject, want, c.got.items, c.got.count);
    expect_stats(r, &stats, want->count);
    collector_free(&c);
}

static void check_callback_stops(run *r, const pair_list *want)
{
    run_label(r, "callback stopping after 5 pairs");
    collector c;
    collector_init(&c, 5);
    prox_status status = run_call(r, prox_sink_callback(collector_fn, &c), NULL);
    if (want->count >= 5) {
        CHECK_STATUS(status, PROX_STOPPED, r->context);
        CHECK(c.calls == 5, r->context, "callback called %" PRId64 " times, expected 5",
              c.calls);
    } else {
        CHECK_STATUS(status, PROX_OK, r->context);
        CHECK(c.calls == want->count, r->context,
              "callback called %" PRId64 " times, expected %" PRId64, c.calls, want->count);
    }
    collector_free(&c);
}

static void check_rejected(run *r)
{
    run_label(r, "buffer (radius >= period / 2: must be rejected)");
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    CHECK_STATUS(run_call(r, prox_sink_buffer(&buffer), NULL), PROX_ERR_INVALID, r->context);
    CHECK(prox_last_error()[0] != '\0', r->context, "empty prox_last_error()");
    prox_pair_buffer_free(&buffer);
}

static void check_all_sinks(run *r, const pair_list *want_pairs, const csr *want_lists)
{
    if (!r->tc->valid) {
        check_rejected(r);
        return;
    }
    for (int unsorted = 0; unsorted <= 1; unsorted++) {
        check_buffer_sink(r, want_pairs, unsorted);
        check_lists_sink(r, want_lists, want_pairs->count, unsorted);
    }
    check_count_sink(r, want_pairs->count);
    check_callback_sink(r, want_pairs);
    check_callback_stops(r, want_pairs);
}

void check_case(const test_case *tc, const expectation *e, const algo_config *config,
                int threads)
{
    run r;
    run_init(&r, tc, config, threads, false);
    check_all_sinks(&r, &e->pairs, &e->lists);
    run_init(&r, tc, config, threads, true);
    check_all_sinks(&r, &e->query_pairs, &e->query_lists);
}

static prox_grid *create_and_build(run *r)
{
    prox_grid *grid = NULL;
    run_label(r, "prox_grid_create");
    CHECK_STATUS(prox_grid_create(&r->desc, &grid), PROX_OK, r->context);
    CHECK(grid != NULL, r->context, "prox_grid_create gave no grid");
    run_label(r, "prox_grid_build");
    CHECK_STATUS(prox_grid_build(grid, &r->points), PROX_OK, r->context);
    return grid;
}

void check_case_on_grid(const test_case *tc, const expectation *e, const algo_config *config,
                        int threads)
{
    run r;
    run_init(&r, tc, config, threads, false);
    if (!tc->valid) {
        prox_grid *grid = NULL;
        run_label(&r, "prox_grid_create (radius >= period / 2: must be rejected)");
        CHECK_STATUS(prox_grid_create(&r.desc, &grid), PROX_ERR_INVALID, r.context);
        return;
    }
    prox_grid *grid = create_and_build(&r);
    r.grid = grid;
    check_all_sinks(&r, &e->pairs, &e->lists);
    run_init(&r, tc, config, threads, true);
    r.grid = grid;
    check_all_sinks(&r, &e->query_pairs, &e->query_lists);
    prox_grid_destroy(grid);
}

void check_grid_against(prox_grid *grid, const test_case *tc, const expectation *e,
                        const algo_config *config, const char *step)
{
    run r;
    char label[600];
    run_init(&r, tc, config, 0, false);
    r.grid = grid;
    run_label(&r, "buffer");
    snprintf(label, sizeof label, "%s [%s]", r.context, step);
    r.subject.context = label;
    prox_pair_buffer buffer;
    prox_pair_buffer_init(&buffer, NULL);
    CHECK_STATUS(prox_grid_pairs(grid, prox_sink_buffer(&buffer), NULL), PROX_OK, label);
    expect_same_pairs(&r.subject, &e->pairs, buffer.pairs, buffer.count);
    prox_pair_buffer_free(&buffer);
}

void check_class(input_class cls, const algo_config *const *configs, int config_count)
{
    static const prox_scalar scalars[2] = {PROX_F64, PROX_F32};
    for (int dim = 2; dim <= 3; dim++) {
        for (int s = 0; s < 2; s++) {
            for (int p = 0; p < PERIODICITY_COUNT; p++) {
                test_case tc;
                test_case_make(&tc, cls, dim, scalars[s], (periodicity)p);
                expectation e;
                expectation_compute(&e, &tc);
                for (int c = 0; c < config_count; c++)
                    check_case(&tc, &e, configs[c], 2);
                expectation_free(&e);
                test_case_free(&tc);
            }
        }
    }
}

/* ---- the same result whatever the number of threads -------------------- */

/* Everything one call sequence delivers, kept for byte comparisons. */
typedef struct capture {
    prox_pair_buffer buffer, unsorted_buffer;
    prox_lists lists, unsorted_lists;
    collector callbacks;
} capture;

static void capture_run(run *r, capture *out)
{
    prox_pair_buffer_init(&out->buffer, NULL);
    prox_lists_init(&out->lists, NULL);
    collector_init(&out->callbacks, 0);
    run_label(r, "buffer");
    CHECK_STATUS(run_call(r, prox_sink_buffer(&out->buffer), NULL), PROX_OK, r->context);
    run_label(r, "lists");
    CHECK_STATUS(run_call(r, prox_sink_lists(&out->lists), NULL), PROX_OK, r->context);
    run_label(r, "callback");
    CHECK_STATUS(run_call(r, prox_sink_callback(collector_fn, &out->callbacks), NULL), PROX_OK,
                 r->context);
    prox_pair_buffer_init(&out->unsorted_buffer, NULL);
    prox_lists_init(&out->unsorted_lists, NULL);
    run_label(r, "unsorted buffer");
    CHECK_STATUS(run_call(r, prox_sink_unsorted(prox_sink_buffer(&out->unsorted_buffer)), NULL),
                 PROX_OK, r->context);
    run_label(r, "unsorted lists");
    CHECK_STATUS(run_call(r, prox_sink_unsorted(prox_sink_lists(&out->unsorted_lists)), NULL),
                 PROX_OK, r->context);
}

static void capture_free(capture *c)
{
    prox_pair_buffer_free(&c->buffer);
    prox_pair_buffer_free(&c->unsorted_buffer);
    prox_lists_free(&c->lists);
    prox_lists_free(&c->unsorted_lists);
    collector_free(&c->callbacks);
}

static bool same_bytes(const void *a, const void *b, int64_t count, size_t size)
{
    return count == 0 || memcmp(a, b, (size_t)count * size) == 0;
}

static int64_t first_difference(const prox_pair *a, const prox_pair *b, int64_t count)
{
    for (int64_t n = 0; n < count; n++)
        if (a[n].i != b[n].i || a[n].j != b[n].j)
            return n;
    return count;
}

static void expect_same_sequence(run *r, const char *what, const prox_pair *one,
                                 int64_t one_count, const prox_pair *many, int64_t many_count)
{
    int64_t n = first_difference(one, many, one_count < many_count ? one_count : many_count);
    CHECK(one_count == many_count && n == one_count, r->context,
          "%s differs from threads=1: %" PRId64 " vs %" PRId64 " pairs, first difference at %"
          PRId64 " ((%u, %u) vs (%u, %u))",
          what, one_count, many_count, n, n < one_count ? (unsigned)one[n].i : 0u,
          n < one_count ? (unsigned)one[n].j : 0u, n < many_count ? (unsigned)many[n].i : 0u,
          n < many_count ? (unsigned)many[n].j : 0u);
}

static void expect_same_lists_bytes(run *r, const char *what, const prox_lists *one,
                                    const prox_lists *many)
{
    CHECK(one->rows == many->rows, r->context, "%s: rows differ", what);
    CHECK(same_bytes(one->offsets, many->offsets, one->rows + 1, sizeof(int64_t)), r->context,
          "%s: offsets differ from threads=1", what);
    int64_t entries = one->offsets[one->rows];
    CHECK(same_bytes(one->indices, many->indices, entries, sizeof(prox_index)), r->context,
          "%s: indices differ from threads=1", what);
}

static void expect_same_capture(run *r, const capture *one, const capture *many)
{
    run_label(r, "buffer/lists/callback/unsorted compared with threads=1");
    expect_same_sequence(r, "pair buffer", one->buffer.pairs, one->buffer.count,
                         many->buffer.pairs, many->buffer.count);
    expect_same_sequence(r, "callback order", one->callbacks.got.items,
                         one->callbacks.got.count, many->callbacks.got.items,
                         many->callbacks.got.count);
    expect_same_sequence(r, "unsorted pair buffer", one->unsorted_buffer.pairs,
                         one->unsorted_buffer.count, many->unsorted_buffer.pairs,
                         many->unsorted_buffer.count);
    expect_same_lists_bytes(r, "lists", &one->lists, &many->lists);
    expect_same_lists_bytes(r, "unsorted lists", &one->unsorted_lists, &many->unsorted_lists);
}

void check_thread_independence(const test_case *tc, const algo_config *config)
{
    static const int thread_counts[] = {2, 3, 0};
    for (int query = 0; query <= 1; query++) {
        run r;
        capture one;
        run_init(&r, tc, config, 1, query);
        capture_run(&r, &one);
        for (size_t t = 0; t < sizeof thread_counts / sizeof thread_counts[0]; t++) {
            capture many;
            run_init(&r, tc, config, thread_counts[t], query);
            capture_run(&r, &many);
            expect_same_capture(&r, &one, &many);
            capture_free(&many);
        }
        capture_free(&one);
    }
}

void check_thread_independence_on_samples(const algo_config *config)
{
    static const struct {
        input_class cls;
        int dim;
        prox_scalar scalar;
        periodicity periodic;
    } samples[] = {
        {INPUT_UNIFORM, 3, PROX_F64, PERIODIC_ALL},
        {INPUT_CLUSTERED, 2, PROX_F32, PERIODIC_NONE},
        {INPUT_DUPLICATES, 3, PROX_F64, PERIODIC_X_ONLY},
        {INPUT_LATTICE, 2, PROX_F64, PERIODIC_ALL},
        {INPUT_OUTLIER, 3, PROX_F64, PERIODIC_NONE},
    };
    for (size_t n = 0; n < sizeof samples / sizeof samples[0]; n++) {
        test_case tc;
        test_case_make(&tc, samples[n].cls, samples[n].dim, samples[n].scalar,
                       samples[n].periodic);
        check_thread_independence(&tc, config);
        test_case_free(&tc);
    }
}

/* ---- memory kept between queries ------------------------------------------ */

static void *counting_alloc(size_t size, void *user)
{
    *(int64_t *)user += (int64_t)size;
    return malloc(size);
}

static void counting_free(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

prox_allocator counting_allocator(int64_t *bytes)
{
    return (prox_allocator){counting_alloc, counting_free, bytes};
}

bool same_pair_buffers(const prox_pair_buffer *a, const prox_pair_buffer *b)
{
    return a->count == b->count &&
           (a->count == 0 || /* memcmp must not see NULL, even for 0 bytes */
            memcmp(a->pairs, b->pairs, (size_t)a->count * sizeof(prox_pair)) == 0);
}

bool same_lists(const prox_lists *a, const prox_lists *b)
{
    return a->rows == b->rows &&
           memcmp(a->offsets, b->offsets, (size_t)(a->rows + 1) * sizeof(int64_t)) == 0 &&
           (a->offsets[a->rows] == 0 ||
            memcmp(a->indices, b->indices, (size_t)a->offsets[a->rows] * sizeof(prox_index)) == 0);
}

void check_repeat_allocates_little(int64_t repeat_bytes, int64_t first_bytes,
                                   const char *context, const char *what)
{
    /* a few descriptors may be allocated per query; nothing per point */
    CHECK(repeat_bytes < first_bytes / 8 || repeat_bytes <= 4096, context,
          "the repeated %s allocated %lld bytes, the first %lld", what, (long long)repeat_bytes,
          (long long)first_bytes);
}

void check_repeated_sorted_pairs(self_pairs_fn pairs, void *object, const prox_pair_buffer *want,
                                 prox_pair_buffer *again, const int64_t *allocated,
                                 int64_t first_bytes, const char *context)
{
    int64_t before = *allocated;
    CHECK_STATUS(pairs(object, prox_sink_buffer(again), NULL), PROX_OK, context);
    CHECK(same_pair_buffers(want, again), context, "a repeated sorted query differs");
    check_repeat_allocates_little(*allocated - before, first_bytes, context, "sorted query");
}

/* _cell_binding.c: the binding of prox_cell_pairs (include/prox/cell.h),
 * included by _prox.c (whose input helpers it uses).
 *
 * _cell(systems, cutoff, quantities, full, self_interaction, threads):
 * systems is a sequence of (positions, cell, pbc) triples, positions
 * (n, dim) float32/float64 read in place, cell (dim, dim) rows, pbc `dim`
 * truth values. Every system is parsed first (with the GIL), then searched
 * without it, the systems shared among the threads (each system on one
 * thread: no per-system thread start-up), then each becomes a tuple of
 * arrays in the order of `quantities` (letters of "ijdDS"): i, j intp, d
 * float64 (m,), D float64 (m, dim), S int64 (m, dim). Returns the list of
 * tuples. */

typedef struct cell_system {
    matrix m;
    prox_points points;
    prox_cell_desc desc;
    prox_geometry out;
    prox_status status;
    char error[256];
} cell_system;

static int cell_matrix_of(PyObject *obj, int dim, double cell[3][3])
{
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_DOUBLE, 0, 0,
                                                         NPY_ARRAY_CARRAY_RO);
    if (!a)
        return -1;
    bool lengths = PyArray_NDIM(a) == 1 && PyArray_DIM(a, 0) == dim;
    if (!lengths &&
        (PyArray_NDIM(a) != 2 || PyArray_DIM(a, 0) != dim || PyArray_DIM(a, 1) != dim)) {
        shape_error(a, "cell", dim == 2 ? "(2, 2) or (2,) for 2D points" : "(3, 3) or (3,)");
        Py_DECREF(a);
        return -1;
    }
    const double *v = (const double *)PyArray_DATA(a);
    memset(cell, 0, 9 * sizeof(double));
    for (int r = 0; r < dim; r++)
        for (int k = 0; k < dim; k++)
            cell[r][k] = lengths ? (r == k ? v[r] : 0.0) : v[r * dim + k];
    Py_DECREF(a);
    return 0;
}

static int cell_pbc_of(PyObject *obj, int dim, bool pbc[3])
{
    pbc[0] = pbc[1] = pbc[2] = false;
    PyObject *seq = PySequence_Fast(obj, "pbc: expected one truth value per axis");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != dim) {
        PyErr_Format(PyExc_ValueError, "pbc: %zd flags given for %dD points", n, dim);
        Py_DECREF(seq);
        return -1;
    }
    for (int k = 0; k < dim; k++) {
        int t = PyObject_IsTrue(PySequence_Fast_GET_ITEM(seq, k));
        if (t < 0) {
            Py_DECREF(seq);
            return -1;
        }
        pbc[k] = t;
    }
    Py_DECREF(seq);
    return 0;
}

static int cell_system_parse(PyObject *item, cell_system *s, double cutoff, bool full,
                             bool self_interaction)
{
    PyObject *positions, *cell, *pbc;
    if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "OOO", &positions, &cell, &pbc)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError, "systems: expected (positions, cell, pbc) triples");
        return -1;
    }
    if (as_points(positions, "positions", &s->m, &s->points, NULL) < 0)
        return -1;
    s->desc = prox_default_cell_desc();
    s->desc.cutoff = cutoff;
    s->desc.full = full;
    s->desc.self_interaction = self_interaction;
    s->desc.threads = 1;
    if (cell_matrix_of(cell, s->points.dim, s->desc.cell) < 0 ||
        cell_pbc_of(pbc, s->points.dim, s->desc.pbc) < 0)
        return -1;
    return 0;
}

static unsigned cell_fields_of(const char *q)
{
    unsigned f = 0;
    for (; *q; q++)
        f |= *q == 'i' ? PROX_GEOMETRY_I : *q == 'j' ? PROX_GEOMETRY_J
           : *q == 'd' ? PROX_GEOMETRY_DISTANCE : *q == 'D' ? PROX_GEOMETRY_VECTOR
           : *q == 'S' ? PROX_GEOMETRY_SHIFT : 0;
    return f;
}

/* The geometry's 32-bit i, j and S widened to ASE's 64-bit intp and
 * int64 (plain loops the compiler vectorizes; x86-64 also gets an AVX2
 * clone, chosen at load time, as the module is built for the baseline). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CELL_WIDEN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CELL_WIDEN_CLONES
#endif

CELL_WIDEN_CLONES static void cell_widen_index(npy_intp *restrict out,
                                               const prox_index *restrict v, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        out[k] = (npy_intp)v[k];
}

CELL_WIDEN_CLONES static void cell_widen_shift(int64_t *restrict out,
                                               const int32_t *restrict v, int64_t n)
{
    for (int64_t k = 0; k < n; k++)
        out[k] = v[k];
}

/* ---- streamed output -------------------------------------------------
 * A batch's arrays carved from the kept blocks (pages faulted in long
 * ago, their lines out of cache), past the caches' size, are written with
 * non-temporal stores: they would be evicted before they are read anyway,
 * and a plain store first reads each line it writes (a third more traffic
 * for the widenings, a half more for the copies). Not fresh arrays: the
 * kernel's zeroing has just brought their lines in. SSE2, so every x86-64
 * CPU has it; elsewhere, the plain loops. */
#define CELL_STREAM_BYTES ((size_t)8 << 20)

#if defined(__SSE2__)
#include <emmintrin.h>

/* out[0 .. n) from v: each 16-byte line of out streamed, the unaligned
 * head and the tail stored plainly. */
#define CELL_STREAM_LOOP(out, n, plain, pair)                                                   \
    do {                                                                                         \
        int64_t k_ = 0;                                                                          \
        for (; k_ < (n) && ((uintptr_t)((out) + k_) & 15); k_++)                                 \
            plain;                                                                               \
        for (; k_ + 2 <= (n); k_ += 2)                                                           \
            pair;                                                                                \
        for (; k_ < (n); k_++)                                                                   \
            plain;                                                                               \
        _mm_sfence();                                                                            \
    } while (0)

static void stream_index(npy_intp *restrict out, const prox_index *restrict v, int64_t n)
{
    const __m128i zero = _mm_setzero_si128();
    CELL_STREAM_LOOP(out, n, out[k_] = (npy_intp)v[k_],
                     _mm_stream_si128((__m128i *)(out + k_),
                                      _mm_unpacklo_epi32(_mm_loadl_epi64((const __m128i *)(v + k_)),
                                                         zero)));
}

static void stream_shift(int64_t *restrict out, const int32_t *restrict v, int64_t n)
{
    CELL_STREAM_LOOP(out, n, out[k_] = v[k_], {
        __m128i x = _mm_loadl_epi64((const __m128i *)(v + k_));
        _mm_stream_si128((__m128i *)(out + k_), _mm_unpacklo_epi32(x, _mm_srai_epi32(x, 31)));
    });
}

static void stream_doubles(double *restrict out, const double *restrict v, int64_t n)
{
    CELL_STREAM_LOOP(out, n, out[k_] = v[k_], _mm_stream_pd(out + k_, _mm_loadu_pd(v + k_)));
}
#else
static void stream_index(npy_intp *restrict out, const prox_index *restrict v, int64_t n)
{
    cell_widen_index(out, v, n);
}

static void stream_shift(int64_t *restrict out, const int32_t *restrict v, int64_t n)
{
    cell_widen_shift(out, v, n);
}

static void stream_doubles(double *restrict out, const double *restrict v, int64_t n)
{
    memcpy(out, v, (size_t)n * sizeof *out);
}
#endif

/* One quantity's values into out (8 bytes each): widened or copied,
 * streamed when `stream`. */
static void cell_fill(void *out, const prox_geometry *g, char q, int64_t n, int dim, bool stream)
{
    const prox_index *index = q == 'i' ? g->i : g->j;
    const double *values = q == 'd' ? g->d : g->D;
    int64_t count = q == 'D' || q == 'S' ? n * dim : n;
    if (q == 'i' || q == 'j')
        stream ? stream_index(out, index, count) : cell_widen_index(out, index, count);
    else if (q == 'S')
        stream ? stream_shift(out, g->S, count) : cell_widen_shift(out, g->S, count);
    else if (stream)
        stream_doubles(out, values, count);
    else
        memcpy(out, values, (size_t)count * sizeof(double));
}

/* The geometry's arrays come from malloc (cell_malloc), so that d and D
 * become numpy arrays without a copy: taken from the geometry, freed with
 * the array (through a capsule, its base). */
/* Past 4 MiB a block is allocated as numpy allocates its own arrays on
 * Linux: aligned to 2 MiB and offered transparent huge pages (madvise),
 * so that a large system's arrays, handed to numpy as they are (d, D) or
 * widened into numpy's arrays (i, j, S), fault in as prox.pairs' arrays
 * do. Elsewhere, malloc. */
#define CELL_HUGE_BYTES ((size_t)4 << 20)
#define CELL_HUGE_ALIGN ((size_t)2 << 20)

static void *cell_malloc(size_t size, void *user)
{
    (void)user;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (size >= CELL_HUGE_BYTES) {
        void *p = NULL;
        if (posix_memalign(&p, CELL_HUGE_ALIGN, size))
            return NULL;
        madvise(p, size, MADV_HUGEPAGE); /* advice: refused, the block is still good */
        return p;
    }
#endif
    return malloc(size);
}

static void cell_mfree(void *ptr, void *user)
{
    (void)user;
    free(ptr);
}

static void cell_capsule_free(PyObject *capsule)
{
    free(PyCapsule_GetPointer(capsule, "prox.cell"));
}

/* An array over the malloc'd `data`, which it takes (freed with the array,
 * or here on failure). */
static PyObject *cell_adopt(void *data, int nd, npy_intp *dims, int type)
{
    PyObject *a = PyArray_SimpleNewFromData(nd, dims, type, data);
    if (!a) {
        free(data);
        return NULL;
    }
    PyObject *c = PyCapsule_New(data, "prox.cell", cell_capsule_free);
    if (!c) {
        Py_DECREF(a);
        free(data);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)a, c) < 0) { /* c released, data with it */
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

/* Quantity q of g; `take` lets it take g's d or D array (a letter asked
 * for once). */
static PyObject *cell_quantity(prox_geometry *g, char q, bool take)
{
    int64_t n = g->count;
    int dim = g->dim ? g->dim : 3;
    npy_intp dims[2] = {(npy_intp)n, dim};
    if (take && n > 0 && (q == 'd' || q == 'D')) {
        double **v = q == 'd' ? &g->d : &g->D;
        void *data = *v;
        *v = NULL;
        return cell_adopt(data, q == 'd' ? 1 : 2, dims, NPY_DOUBLE);
    }
    bool rows = q == 'D' || q == 'S';
    int type = q == 'i' || q == 'j' ? NPY_INTP : q == 'S' ? NPY_INT64 : NPY_DOUBLE;
    PyObject *a = PyArray_SimpleNew(rows ? 2 : 1, dims, type);
    if (!a || n == 0)
        return a;
    /* fresh pages, zeroed by the kernel just before: in cache, not streamed */
    cell_fill(PyArray_DATA((PyArrayObject *)a), g, q, n, dim, false);
    return a;
}

/* ---- the batch's arena ----------------------------------------------
 * A dataset's lists are fresh memory, all of them kept by the caller, and
 * the kernel's page faults on fresh memory cost more than the search. So
 * once the arrays still to come are expected to pass ARENA_MIN (this
 * system's bytes times the systems left), they are carved from blocks of
 * at most ARENA_BLOCK (unless one array needs more). A block's capsule is
 * the base of every array carved from it, so the block goes when its last
 * array does (the risk: one kept array keeps its whole block). A block of
 * at most ARENA_BLOCK whose arrays are gone is kept for the next call, its
 * pages already faulted in, so the next batch writes warm memory: up to
 * twice what the last call carved (a caller holding one batch while the
 * next is made), within [ARENA_CACHE_MIN, ARENA_CACHE_MAX] in all;
 * prox.release_memory() frees the kept blocks. The larger blocks of one
 * large system are freed with their arrays. Small results keep
 * numpy's own allocations, warm when a loop drops each result before the
 * next. The blocks are ordinary pages: transparent huge pages fault in
 * faster where free 2 MiB pages are at hand but slower on a VM whose
 * balloon takes freed memory back (docs/design.md, "Fresh memory from
 * Python"). The GIL guards the cache. */
#define ARENA_MIN ((size_t)2 << 20)
#define ARENA_BLOCK ((size_t)32 << 20)
#define ARENA_CACHE_MIN ((size_t)64 << 20)
#define ARENA_CACHE_MAX ((size_t)1024 << 20)
#define ARENA_CACHE_SLOTS 64

typedef struct arena_block {
    char *start;
    size_t bytes;
    bool kept; /* taken from the cache: its pages faulted in by an earlier call */
} arena_block;

typedef struct cell_arena {
    PyObject *block; /* the capsule of the block being carved (owned), or NULL */
    char *at;
    size_t left;
    size_t carved;   /* the bytes of the blocks this call took */
    size_t expect;   /* the bytes still to come, as cell_value estimates them */
    bool kept;       /* the block being carved is a kept one (streamed output) */
} cell_arena;

/* An array's room in a block: whole cache lines, so that every array of a
 * block starts on one. */
static size_t arena_room(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

static arena_block *arena_cache[ARENA_CACHE_SLOTS];
static size_t arena_cached, arena_cache_cap = ARENA_CACHE_MIN;

static void block_free(arena_block *b)
{
    free(b->start);
    free(b);
}

/* A block of at least `bytes`: a kept one at most twice that, else a new
 * one. NULL: no memory. */
static arena_block *block_get(size_t bytes)
{
    for (int k = 0; k < ARENA_CACHE_SLOTS; k++) {
        arena_block *b = arena_cache[k];
        if (b && b->bytes >= bytes && b->bytes / 2 <= bytes) {
            arena_cache[k] = NULL;
            arena_cached -= b->bytes;
            b->kept = true;
            return b;
        }
    }
    arena_block *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    b->bytes = bytes;
    b->kept = false;
    b->start = malloc(bytes);
    if (!b->start) {
        free(b);
        return NULL;
    }
    return b;
}

/* A block whose last array went: kept while the cache has room. */
static void block_retire(arena_block *b)
{
    bool keep = b->bytes <= ARENA_BLOCK && arena_cached + b->bytes <= arena_cache_cap;
    for (int k = 0; k < ARENA_CACHE_SLOTS && keep; k++)
        if (!arena_cache[k]) {
            arena_cache[k] = b;
            arena_cached += b->bytes;
            return;
        }
    block_free(b);
}

static void arena_block_free(PyObject *capsule)
{
    block_retire(PyCapsule_GetPointer(capsule, "prox.arena"));
}

static size_t scratch_release(void);

static PyObject *py_release_memory(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    size_t freed = arena_cached + scratch_release();
    for (int k = 0; k < ARENA_CACHE_SLOTS; k++)
        if (arena_cache[k]) {
            block_free(arena_cache[k]);
            arena_cache[k] = NULL;
        }
    arena_cached = 0;
    return PyLong_FromSize_t(freed);
}

/* A block of at least `need` bytes as the arena's current one. */
static int arena_grow(cell_arena *a, size_t need)
{
    size_t want = a->expect < ARENA_BLOCK ? a->expect : ARENA_BLOCK;
    want = want > need ? want : need;
    arena_block *b = block_get(arena_room(want));
    if (!b) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *capsule = PyCapsule_New(b, "prox.arena", arena_block_free);
    if (!capsule) {
        block_retire(b);
        return -1;
    }
    Py_XDECREF(a->block);
    a->block = capsule;
    a->at = b->start;
    a->left = b->bytes;
    a->kept = b->kept;
    a->carved += b->bytes;
    return 0;
}

/* The call's last block released; the cache sized for the next call. */
static void arena_release(cell_arena *a)
{
    Py_CLEAR(a->block);
    if (a->carved) {
        size_t cap = 2 * a->carved;
        arena_cache_cap = cap < ARENA_CACHE_MIN ? ARENA_CACHE_MIN
                          : cap > ARENA_CACHE_MAX ? ARENA_CACHE_MAX
                                                  : cap;
    }
    for (int k = 0; k < ARENA_CACHE_SLOTS && arena_cached > arena_cache_cap; k++)
        if (arena_cache[k]) { /* a smaller call: what the cache holds beyond its size */
            arena_cached -= arena_cache[k]->bytes;
            block_free(arena_cache[k]);
            arena_cache[k] = NULL;
        }
}

/* An uninitialised array of `type` carved from the arena, based on its
 * block. */
static PyObject *arena_array(cell_arena *a, int nd, npy_intp *dims, int type)
{
    size_t bytes = (size_t)dims[0] * (nd > 1 ? (size_t)dims[1] : 1) * 8; /* 8-byte types */
    bytes = arena_room(bytes);
    if ((!a->block || a->left < bytes) && arena_grow(a, bytes) < 0)
        return NULL;
    PyObject *arr = PyArray_SimpleNewFromData(nd, dims, type, a->at);
    if (!arr)
        return NULL;
    Py_INCREF(a->block);
    if (PyArray_SetBaseObject((PyArrayObject *)arr, a->block) < 0) { /* the reference taken */
        Py_DECREF(arr);
        return NULL;
    }
    a->at += bytes;
    a->left -= bytes;
    return arr;
}

/* Quantity q of g as a new array from the arena, converted or copied. */
static PyObject *cell_arena_quantity(cell_arena *a, const prox_geometry *g, char q)
{
    int64_t n = g->count;
    int dim = g->dim ? g->dim : 3;
    npy_intp dims[2] = {(npy_intp)n, dim};
    bool rows = q == 'D' || q == 'S';
    PyObject *arr = arena_array(a, rows ? 2 : 1, dims,
                                q == 'i' || q == 'j' ? NPY_INTP
                                : q == 'S'           ? NPY_INT64
                                                     : NPY_DOUBLE);
    if (!arr || n == 0)
        return arr;
    cell_fill(PyArray_DATA((PyArrayObject *)arr), g, q, n, dim,
              a->kept && a->expect >= CELL_STREAM_BYTES);
    return arr;
}

/* The bytes system s's arrays take in the arena. */
/* The room quantity q of g takes in a block (8-byte values). */
static size_t cell_quantity_bytes(const prox_geometry *g, char q)
{
    size_t n = (size_t)g->count, dim = (size_t)(g->dim ? g->dim : 3);
    return arena_room((q == 'D' || q == 'S' ? n * dim : n) * 8);
}

static size_t cell_value_bytes(const cell_system *s, const char *quantities)
{
    size_t t = 0;
    for (const char *q = quantities; *q; q++)
        t += cell_quantity_bytes(&s->out, *q);
    return t;
}

/* System s's tuple; `left` systems (s included) are still to come.
 * adopt: its geometry's d and D are malloc'd and may become arrays
 * without a copy (not when carved from a scratch). */
static PyObject *cell_value(cell_system *s, const char *quantities, cell_arena *arena,
                            Py_ssize_t left, bool adopt)
{
    Py_ssize_t n = (Py_ssize_t)strlen(quantities);
    arena->expect = cell_value_bytes(s, quantities) * (size_t)left;
    bool carve = arena->block || arena->expect >= ARENA_MIN;
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t k = 0; t && k < n; k++) {
        char q = quantities[k];
        /* an array larger than a kept block gains nothing from the arena:
         * it comes from numpy, as every other large result of prox does */
        PyObject *a = carve && cell_quantity_bytes(&s->out, q) <= ARENA_BLOCK
                          ? cell_arena_quantity(arena, &s->out, q)
                          : cell_quantity(&s->out, q,
                                          adopt && strchr(quantities, q) == strrchr(quantities, q));
        if (!a) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, a);
    }
    return t;
}

/* ---- the scratch of a batch on one thread ---------------------------
 * On one thread each system is searched and converted before the next,
 * so its search's working arrays (desc.allocator) and its geometry (read
 * once, into the result's arrays) are carved from one scratch block,
 * emptied after each system: every system writes the same warm pages,
 * with no malloc per array and no heap trimmed and faulted back in between
 * systems. free is a no-op inside the block; a request beyond its room is
 * malloc'd (and freed by free), and the next system gets a block twice
 * that large, up to SCRATCH_MAX. One block is kept between calls (its
 * pages faulted in), taken under the GIL by one call at a time; a
 * concurrent call makes its own. prox.release_memory() frees it. */
#define SCRATCH_START ((size_t)1 << 20)
#define SCRATCH_MAX ((size_t)64 << 20)

typedef struct cell_scratch {
    char *base;
    size_t used, cap;
    size_t want; /* the room the next system should find: cap, or more after an overflow */
} cell_scratch;

static cell_scratch *scratch_kept; /* guarded by the GIL */

static void *scratch_alloc(size_t size, void *user)
{
    cell_scratch *sc = user;
    size_t room = (size + 63) & ~(size_t)63;
    if (room >= size && sc->base && sc->cap - sc->used >= room) {
        void *p = sc->base + sc->used;
        sc->used += room;
        return p;
    }
    size_t need = sc->used + room;
    if (need > sc->want)
        sc->want = need < SCRATCH_MAX ? need : SCRATCH_MAX;
    return malloc(size);
}

static bool scratch_holds(const cell_scratch *sc, const void *ptr)
{
    const char *c = ptr;
    return sc->base && c >= sc->base && c < sc->base + sc->cap;
}

static void scratch_free(void *ptr, void *user)
{
    if (!scratch_holds(user, ptr))
        free(ptr);
}

static prox_allocator scratch_allocator(cell_scratch *sc)
{
    prox_allocator al = {scratch_alloc, scratch_free, sc};
    return al;
}

/* Emptied for the next system, grown first if this one overflowed (a
 * failed growth keeps the old block: its requests go to malloc). */
static void scratch_reset(cell_scratch *sc)
{
    sc->used = 0;
    if (sc->want <= sc->cap)
        return;
    size_t cap = 2 * sc->cap > sc->want ? 2 * sc->cap : sc->want;
    cap = cap < SCRATCH_MAX ? cap : SCRATCH_MAX;
    char *grown = malloc(cap);
    if (!grown) {
        sc->want = sc->cap;
        return;
    }
    free(sc->base);
    sc->base = grown;
    sc->cap = sc->want = cap;
}

/* The kept scratch, or a new one (NULL: no memory; the systems then use
 * malloc). */
static cell_scratch *scratch_take(void)
{
    cell_scratch *sc = scratch_kept;
    scratch_kept = NULL;
    if (sc)
        return sc;
    sc = calloc(1, sizeof *sc);
    if (sc && (sc->base = malloc(SCRATCH_START)) != NULL)
        sc->cap = sc->want = SCRATCH_START;
    return sc;
}

static void scratch_drop(cell_scratch *sc)
{
    if (sc)
        free(sc->base);
    free(sc);
}

/* Kept for the next call unless another is kept already. */
static void scratch_give_back(cell_scratch *sc)
{
    if (!sc)
        return;
    sc->used = 0;
    if (scratch_kept)
        scratch_drop(sc);
    else
        scratch_kept = sc;
}

static size_t scratch_release(void)
{
    size_t freed = scratch_kept ? scratch_kept->cap : 0;
    scratch_drop(scratch_kept);
    scratch_kept = NULL;
    return freed;
}

static void cell_systems_free(cell_system *s, Py_ssize_t n)
{
    for (Py_ssize_t k = 0; k < n; k++) {
        matrix_release(&s[k].m);
        prox_geometry_free(&s[k].out);
    }
    free(s);
}

/* The threads the batch runs on (0: OpenMP's default). */
static int cell_team(int threads)
{
    int team = threads;
#ifdef _OPENMP
    if (team == 0)
        team = omp_get_max_threads();
#endif
    return team < 1 ? 1 : team;
}

static void cell_system_run(cell_system *s)
{
    s->status = prox_cell_pairs(&s->points, &s->desc, &s->out, NULL);
    if (s->status)
        snprintf(s->error, sizeof s->error, "%s", prox_last_error());
}

static void cell_systems_run(cell_system *s, Py_ssize_t n, int threads)
{
    int team = cell_team(threads);
    if (n == 1) /* one system: its own search takes the threads */
        s[0].desc.threads = threads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(team) if (team > 1 && n > 1)
    for (Py_ssize_t k = 0; k < n; k++)
        cell_system_run(&s[k]);
}

/* System k's arrays as the tuple of `quantities` (its geometry then
 * released), or NULL with the error set. */
static PyObject *cell_result(cell_system *s, Py_ssize_t k, Py_ssize_t n, const char *quantities,
                             cell_arena *arena, bool adopt)
{
    if (s[k].status) {
        PyObject *kind = s[k].status == PROX_ERR_NO_MEMORY ? PyExc_MemoryError : PyExc_ValueError;
        if (n > 1)
            PyErr_Format(kind, "system %zd: %s", k, s[k].error);
        else
            PyErr_SetString(kind, s[k].error);
        return NULL;
    }
    PyObject *v = cell_value(&s[k], quantities, arena, n - k, adopt);
    prox_geometry_free(&s[k].out);
    return v;
}

static PyObject *py_cell(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"systems", "cutoff", "quantities", "full", "self_interaction",
                            "threads", NULL};
    PyObject *systems;
    double cutoff;
    const char *quantities;
    int full = 1, self_interaction = 0, threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Ods|ppi", names, &systems, &cutoff, &quantities,
                                     &full, &self_interaction, &threads) ||
        check_threads(threads) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(systems, "systems: expected a sequence");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    cell_system *s = calloc((size_t)(n ? n : 1), sizeof *s);
    if (!s) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    unsigned fields = cell_fields_of(quantities);
    for (Py_ssize_t k = 0; k < n; k++) {
        prox_allocator al = {cell_malloc, cell_mfree, NULL};
        prox_geometry_init(&s[k].out, fields ? fields : PROX_GEOMETRY_I, &al);
        if (cell_system_parse(PySequence_Fast_GET_ITEM(seq, k), &s[k], cutoff, full,
                              self_interaction) < 0) {
            cell_systems_free(s, n);
            Py_DECREF(seq);
            return NULL;
        }
    }
    /* On one thread each system's arrays are made as soon as it is
     * searched, its search and geometry in the scratch (emptied for the
     * next system: warm pages) instead of every system's held at once. */
    bool one_by_one = n > 1 && cell_team(threads) == 1;
    if (!one_by_one) {
        Py_BEGIN_ALLOW_THREADS
        cell_systems_run(s, n, threads);
        Py_END_ALLOW_THREADS
    }
    cell_scratch *scratch = one_by_one ? scratch_take() : NULL;
    PyObject *list = PyList_New(n);
    /* large results carved from the arena's blocks (cell_value) */
    cell_arena arena = {0};
    for (Py_ssize_t k = 0; list && k < n; k++) {
        if (one_by_one) {
            if (scratch) {
                s[k].desc.allocator = scratch_allocator(scratch);
                s[k].out.allocator = s[k].desc.allocator;
            }
            Py_BEGIN_ALLOW_THREADS
            cell_system_run(&s[k]);
            Py_END_ALLOW_THREADS
        }
        PyObject *v = cell_result(s, k, n, quantities, &arena, !scratch);
        if (scratch) { /* nothing of the system's may outlive the scratch's emptying */
            prox_geometry_free(&s[k].out);
            scratch_reset(scratch);
        }
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, k, v);
    }
    arena_release(&arena);
    cell_systems_free(s, n); /* before the scratch goes: an unsearched system's geometry is empty */
    scratch_give_back(scratch);
    Py_DECREF(seq);
    return list;
}

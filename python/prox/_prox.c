/* _prox.c: the Python binding of prox, over the public C API and the numpy
 * C API (no Cython).
 *
 * Inputs: a float32 or float64 array of shape (n, dim) is read in place
 * whatever its strides (C or Fortran order, a column slice, a field of a
 * structured array, negative or zero strides): the prox views take one
 * address per axis and one byte stride per row. Other real dtypes, Python
 * lists, misaligned or byte-swapped arrays are converted to a native copy
 * first (a copy the caller cannot see); object, complex, string and record
 * dtypes raise TypeError.
 *
 * Outputs: the library's own pair buffers and CSR arrays (malloc'd by its
 * default allocator) become numpy arrays without a copy: a capsule that
 * frees them is the arrays' base. Index arrays come back as intp (what
 * scipy and ASE return), a converted copy; index_dtype=numpy.uint32 hands
 * back the library's 32-bit buffers themselves (half the memory).
 *
 * The GIL is released around every library call. Objects kept between
 * calls (Grid, SkinList, Broad) refuse a second call while one is running
 * in another thread (RuntimeError) instead of racing.
 *
 * Errors: a failing prox_status becomes ValueError (bad argument, bad data,
 * out of range) or MemoryError, carrying prox_last_error(), which is
 * per thread: the call and the read happen on the same thread. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h> /* madvise: _cell_binding.c's large blocks */
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

#include <prox/prox.h>

/* ---- errors ------------------------------------------------------------ */

static PyObject *raise_status(prox_status status)
{
    const char *message = prox_last_error();
    if (!message || !*message)
        message = prox_status_string(status);
    PyErr_SetString(status == PROX_ERR_NO_MEMORY ? PyExc_MemoryError : PyExc_ValueError,
                    message);
    return NULL;
}

static int check_threads(int threads)
{
    if (threads < 0) {
        PyErr_Format(PyExc_ValueError, "threads = %d: expected 0 (default) or a positive count",
                     threads);
        return -1;
    }
    return 0;
}

/* ---- inputs: matrices read in place ------------------------------------ */

/* A 2-D float32/float64 array the library may read: `array` keeps it (or
 * the converted copy) alive for the call. */
typedef struct matrix {
    PyArrayObject *array;
    const char *data;
    npy_intp rows, cols;
    npy_intp row_stride, col_stride;
    prox_scalar scalar;
} matrix;

static void matrix_release(matrix *m)
{
    Py_CLEAR(m->array);
}

static int dtype_readable(PyArrayObject *a)
{
    int t = PyArray_TYPE(a);
    return (t == NPY_FLOAT || t == NPY_DOUBLE) && PyArray_ISNOTSWAPPED(a) && PyArray_ISALIGNED(a);
}

/* 0 when obj is no buffer or one that can be read; else -1 with a
 * ValueError naming the argument (a released memoryview, a closed mmap),
 * where numpy would say "setting an array element with a sequence". */
static int buffer_readable(PyObject *obj, const char *what)
{
    if (!PyObject_CheckBuffer(obj))
        return 0;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_FULL_RO) == 0) {
        PyBuffer_Release(&view);
        return 0;
    }
    if (!PyErr_ExceptionMatches(PyExc_ValueError)) { /* e.g. flags refused: numpy's turn */
        PyErr_Clear();
        return 0;
    }
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    PyErr_Format(PyExc_ValueError,
                 "%s: the %s's memory cannot be read (%S): pass an open buffer or an array",
                 what, Py_TYPE(obj)->tp_name, value ? value : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(trace);
    return -1;
}

/* The array behind obj, float32 or float64, native and aligned (a view of
 * obj itself whenever obj already is one). New reference or NULL. */
static PyArrayObject *float_array(PyObject *obj, const char *what)
{
    if (!PyArray_Check(obj)) {
        if (buffer_readable(obj, what) < 0)
            return NULL;
        return (PyArrayObject *)PyArray_FROMANY(obj, NPY_DOUBLE, 0, 0,
                                                NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
    }
    PyArrayObject *a = (PyArrayObject *)obj;
    if (dtype_readable(a)) {
        Py_INCREF(obj);
        return a;
    }
    int t = PyArray_TYPE(a);
    if (PyTypeNum_ISBOOL(t) || PyTypeNum_ISINTEGER(t) || PyTypeNum_ISFLOAT(t)) {
        int to = t == NPY_FLOAT ? NPY_FLOAT : NPY_DOUBLE;
        return (PyArrayObject *)PyArray_FROMANY(obj, to, 0, 0,
                                                NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
    }
    PyObject *name = PyObject_Str((PyObject *)PyArray_DESCR(a));
    PyErr_Format(PyExc_TypeError, "%s: dtype %S is not accepted: pass float32 or float64", what,
                 name ? name : Py_None);
    Py_XDECREF(name);
    return NULL;
}

static void shape_error(PyArrayObject *a, const char *what, const char *expected)
{
    PyObject *shape = PyObject_GetAttrString((PyObject *)a, "shape");
    PyErr_Format(PyExc_ValueError, "%s: expected shape %s, got %S", what, expected,
                 shape ? shape : Py_None);
    Py_XDECREF(shape);
}

/* A 1-D array of one point's coordinates as the (1, dim) matrix it is a
 * row of (a view); every other array as it is. Steals a. */
static PyArrayObject *one_row(PyArrayObject *a)
{
    if (PyArray_NDIM(a) != 1)
        return a;
    npy_intp dims[2] = {1, PyArray_DIM(a, 0)};
    PyArray_Dims shape = {dims, 2};
    PyArrayObject *row = (PyArrayObject *)PyArray_Newshape(a, &shape, NPY_ANYORDER);
    Py_DECREF(a);
    return row;
}

/* obj as an (n, c) matrix with c one of col_a, col_b; with `single` a 1-D
 * array is one row, and *single tells whether obj was one. */
static int as_matrix(PyObject *obj, const char *what, int col_a, int col_b, const char *expected,
                     matrix *m, bool *single)
{
    memset(m, 0, sizeof *m);
    PyArrayObject *a = float_array(obj, what);
    if (!a)
        return -1;
    if (single) {
        *single = PyArray_NDIM(a) == 1;
        if (!(a = one_row(a)))
            return -1;
    }
    if (PyArray_NDIM(a) != 2 || (PyArray_DIM(a, 1) != col_a && PyArray_DIM(a, 1) != col_b)) {
        shape_error(a, what, expected);
        Py_DECREF(a);
        return -1;
    }
    m->array = a;
    m->data = PyArray_BYTES(a);
    m->rows = PyArray_DIM(a, 0);
    m->cols = PyArray_DIM(a, 1);
    m->row_stride = PyArray_STRIDE(a, 0);
    m->col_stride = PyArray_STRIDE(a, 1);
    m->scalar = PyArray_TYPE(a) == NPY_FLOAT ? PROX_F32 : PROX_F64;
    return 0;
}

/* Points (n, 2) or (n, 3); with `single`, also one point (2,) or (3,). */
static int as_points(PyObject *obj, const char *what, matrix *m, prox_points *p, bool *single)
{
    if (as_matrix(obj, what, 2, 3, single ? "(n, 2) or (n, 3), or one point (2,) or (3,)"
                                          : "(n, 2) or (n, 3)",
                  m, single) < 0)
        return -1;
    memset(p, 0, sizeof *p);
    for (int k = 0; k < m->cols; k++)
        p->axis[k] = m->data + k * m->col_stride;
    p->stride = m->row_stride;
    p->count = m->rows;
    p->dim = (int)m->cols;
    p->scalar = m->scalar;
    return 0;
}

/* Boxes: (n, 4) min x, min y, max x, max y or (n, 6) min x, y, z, max x, y, z. */
static int as_boxes(PyObject *obj, const char *what, matrix *m, prox_boxes *b)
{
    if (as_matrix(obj, what, 4, 6, "(n, 4) or (n, 6): min corner then max corner", m, NULL) < 0)
        return -1;
    memset(b, 0, sizeof *b);
    int dim = (int)m->cols / 2;
    for (int k = 0; k < dim; k++) {
        b->min[k] = m->data + k * m->col_stride;
        b->max[k] = m->data + (dim + k) * m->col_stride;
    }
    b->stride = m->row_stride;
    b->count = m->rows;
    b->dim = dim;
    b->scalar = m->scalar;
    return 0;
}

static int is_number(PyObject *o)
{
    return PyFloat_Check(o) || PyLong_Check(o) || PyArray_IsScalar(o, Number) ||
           (PyArray_Check(o) && PyArray_NDIM((PyArrayObject *)o) == 0);
}

static int period_value(PyObject *item, int k, double *out)
{
    if (item == Py_None) {
        *out = 0;
        return 0;
    }
    double v = PyFloat_AsDouble(item);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    if (!isfinite(v) || v < 0) {
        PyErr_Format(PyExc_ValueError,
                     "box[%d] = %R: a period must be finite and > 0 (0 or None: open axis)", k,
                     item);
        return -1;
    }
    *out = v;
    return 0;
}

/* box: None (open), one number (every axis) or `dim` numbers (0 or None:
 * that axis open) -> period[3]. */
static int parse_box(PyObject *box, int dim, double period[3])
{
    period[0] = period[1] = period[2] = 0;
    if (!box || box == Py_None)
        return 0;
    if (is_number(box)) {
        for (int k = 0; k < dim; k++)
            if (period_value(box, k, &period[k]) < 0)
                return -1;
        return 0;
    }
    PyObject *seq = PySequence_Fast(box, "box: expected None, a number or one period per axis");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != dim) {
        PyErr_Format(PyExc_ValueError, "box: %zd periods given for %dD points", n, dim);
        Py_DECREF(seq);
        return -1;
    }
    for (int k = 0; k < dim; k++)
        if (period_value(PySequence_Fast_GET_ITEM(seq, k), k, &period[k]) < 0) {
            Py_DECREF(seq);
            return -1;
        }
    Py_DECREF(seq);
    return 0;
}

static int parse_choice(const char *what, const char *value, const char *const *names,
                        int count)
{
    for (int k = 0; k < count; k++)
        if (!strcmp(value, names[k]))
            return k;
    PyObject *list = PyList_New(0);
    for (int k = 0; list && k < count; k++) {
        PyObject *s = PyUnicode_FromString(names[k]);
        if (s)
            PyList_Append(list, s);
        Py_XDECREF(s);
    }
    PyErr_Format(PyExc_ValueError, "%s = '%s': expected one of %S", what, value,
                 list ? list : Py_None);
    Py_XDECREF(list);
    return -1;
}

static const char *const output_names[] = {"pairs", "lists", "count"};
enum { OUT_PAIRS, OUT_LISTS, OUT_COUNT };
static const char *const algo_names[] = {"grid", "brute", "hierarchical"};
static const prox_algo algo_values[] = {PROX_ALGO_GRID, PROX_ALGO_BRUTE,
                                        PROX_ALGO_HIERARCHICAL};
static const char *const key_names[] = {"linear", "morton", "hash"};
static const prox_keys key_values[] = {PROX_KEYS_LINEAR, PROX_KEYS_MORTON, PROX_KEYS_HASH};

/* ---- outputs: the library's buffers handed to numpy ------------------- */

#define CAPSULE_NAME "prox.buffer"

static void capsule_free(PyObject *capsule)
{
    free(PyCapsule_GetPointer(capsule, CAPSULE_NAME));
}

/* A numpy array over malloc'd memory it then owns (freed with it); ptr is
 * freed here on every path. count: the entries in use; capacity: those
 * allocated (the slack is given back when it is large). */
static PyObject *adopt(void *ptr, int64_t count, int64_t capacity, size_t entry_bytes, int nd,
                       npy_intp *dims, int typenum)
{
    if (!ptr || count == 0) {
        free(ptr);
        return PyArray_ZEROS(nd, dims, typenum, 0);
    }
    if (capacity - count > count / 8 + 4096) {
        void *shrunk = realloc(ptr, (size_t)count * entry_bytes);
        if (shrunk)
            ptr = shrunk;
    }
    PyObject *array = PyArray_SimpleNewFromData(nd, dims, typenum, ptr);
    if (!array) {
        free(ptr);
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(ptr, CAPSULE_NAME, capsule_free);
    if (!capsule) {
        Py_DECREF(array);
        free(ptr);
        return NULL;
    }
    /* steals the capsule, also on failure */
    if (PyArray_SetBaseObject((PyArrayObject *)array, capsule) < 0) {
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* Where one query's results go, and how they come back to Python. */
typedef struct result {
    int output;
    bool sort;
    bool single;     /* one query point: output "lists" is its row alone */
    int index_type;  /* NPY_INTP or NPY_UINT32 */
    prox_pair_buffer buffer;
    prox_lists lists;
    prox_stats stats;
} result;

/* index_dtype: None or anything numpy.dtype() takes that is intp (int64
 * on 64-bit platforms) or uint32 -> NPY_INTP or NPY_UINT32, else -1. */
static int index_type_of(PyObject *index_dtype)
{
    if (!index_dtype || index_dtype == Py_None)
        return NPY_INTP;
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter2(index_dtype, &descr))
        return -1;
    int type = descr ? descr->type_num : NPY_INTP;
    Py_XDECREF(descr);
    if (PyArray_EquivTypenums(type, NPY_INTP))
        return NPY_INTP;
    if (PyArray_EquivTypenums(type, NPY_UINT32))
        return NPY_UINT32;
    PyErr_Format(PyExc_ValueError,
                 "index_dtype = %R: expected numpy.intp (int64, the default) or numpy.uint32",
                 index_dtype);
    return -1;
}

static int result_init(result *r, const char *output, int sort, PyObject *index_dtype)
{
    memset(r, 0, sizeof *r);
    r->output = parse_choice("output", output, output_names, 3);
    if (r->output < 0)
        return -1;
    r->index_type = index_type_of(index_dtype);
    if (r->index_type < 0)
        return -1;
    r->sort = sort != 0;
    prox_pair_buffer_init(&r->buffer, NULL);
    prox_lists_init(&r->lists, NULL);
    return 0;
}

static prox_sink result_sink(result *r)
{
    prox_sink sink = r->output == OUT_PAIRS   ? prox_sink_buffer(&r->buffer)
                     : r->output == OUT_LISTS ? prox_sink_lists(&r->lists)
                                              : prox_sink_count();
    return r->sort ? sink : prox_sink_unsorted(sink);
}

static void result_free(result *r)
{
    prox_pair_buffer_free(&r->buffer);
    prox_lists_free(&r->lists);
}

/* A uint32 index array as `type` (a converted copy for intp). Steals a. */
static PyObject *indices_as(PyObject *a, int type)
{
    if (!a || type == NPY_UINT32)
        return a;
    PyObject *converted = PyArray_Cast((PyArrayObject *)a, type);
    Py_DECREF(a);
    return converted;
}

static PyObject *lists_value(prox_lists *l, int index_type, bool single)
{
    int64_t rows = l->rows, entries = l->offsets ? l->offsets[rows] : 0;
    npy_intp orows = (npy_intp)rows + 1, oentries = (npy_intp)entries;
    PyObject *offsets;
    if (l->offsets) {
        offsets = adopt(l->offsets, rows + 1, l->offsets_capacity, sizeof(int64_t), 1, &orows,
                        NPY_INT64);
    } else {
        offsets = PyArray_ZEROS(1, &orows, NPY_INT64, 0);
    }
    l->offsets = NULL;
    PyObject *indices = indices_as(adopt(l->indices, entries, l->indices_capacity,
                                         sizeof(prox_index), 1, &oentries, NPY_UINT32),
                                   index_type);
    l->indices = NULL;
    if (!offsets || !indices) {
        Py_XDECREF(offsets);
        Py_XDECREF(indices);
        return NULL;
    }
    if (single) { /* one row: its indices are the whole array */
        Py_DECREF(offsets);
        return indices;
    }
    return Py_BuildValue("(NN)", offsets, indices);
}

/* The Python value of a finished query (the buffers move into it), or the
 * exception of a failed one. */
static PyObject *result_value(result *r, prox_status status)
{
    PyObject *value = NULL;
    if (status != PROX_OK) {
        raise_status(status);
    } else if (r->output == OUT_COUNT) {
        value = PyLong_FromLongLong(r->stats.pairs);
    } else if (r->output == OUT_PAIRS) {
        npy_intp dims[2] = {(npy_intp)r->buffer.count, 2};
        value = indices_as(adopt(r->buffer.pairs, r->buffer.count, r->buffer.capacity,
                                 sizeof(prox_pair), 2, dims, NPY_UINT32),
                           r->index_type);
        r->buffer.pairs = NULL;
    } else {
        value = lists_value(&r->lists, r->index_type, r->single);
    }
    result_free(r);
    return value;
}

static PyObject *stats_dict(const prox_stats *s)
{
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L,s:O,s:L}", "pairs", (long long)s->pairs,
                         "candidates", (long long)s->candidates, "cells", (long long)s->cells,
                         "cells_visited", (long long)s->cells_visited, "relocated",
                         (long long)s->relocated, "bytes", (long long)s->bytes, "kept_bytes",
                         (long long)s->kept_bytes, "rebuilt", s->rebuilt ? Py_True : Py_False,
                         "rechecked", (long long)s->rechecked);
}

/* ---- one-shot searches ------------------------------------------------- */

static int grid_desc_of(double radius, PyObject *box, int dim, int threads, const char *keys,
                        prox_grid_desc *desc)
{
    if (check_threads(threads) < 0)
        return -1;
    *desc = prox_default_grid_desc();
    desc->radius = radius;
    desc->threads = threads;
    int k = parse_choice("keys", keys, key_names, 3);
    if (k < 0)
        return -1;
    desc->keys = key_values[k];
    return parse_box(box, dim, desc->period);
}

static PyObject *py_search(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"points", "radius", "box",  "threads",     "output", "queries",
                            "sort",   "algo",   "keys", "index_dtype", NULL};
    PyObject *points_obj, *box = Py_None, *queries_obj = Py_None, *index_dtype = Py_None;
    double radius;
    int threads = 0, sort = 1;
    const char *output = "pairs", *algo_name = "grid", *keys = "linear";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Od|OisOpssO", names, &points_obj, &radius, &box,
                                     &threads, &output, &queries_obj, &sort, &algo_name, &keys,
                                     &index_dtype))
        return NULL;
    result r;
    if (result_init(&r, output, sort, index_dtype) < 0)
        return NULL;
    int algo = parse_choice("algo", algo_name, algo_names, 3);
    if (algo < 0)
        return NULL;
    matrix pm, qm = {0};
    prox_points points, queries;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0)
        return NULL;
    bool query = queries_obj != Py_None;
    if (query && as_points(queries_obj, "queries", &qm, &queries, &r.single) < 0) {
        matrix_release(&pm);
        return NULL;
    }
    prox_grid_desc desc;
    if ((query && queries.dim != points.dim &&
         (PyErr_Format(PyExc_ValueError, "queries: %dD, points: %dD", queries.dim, points.dim),
          1)) ||
        grid_desc_of(radius, box, points.dim, threads, keys, &desc) < 0) {
        matrix_release(&pm);
        matrix_release(&qm);
        return NULL;
    }
    prox_status status;
    prox_sink sink = result_sink(&r);
    Py_BEGIN_ALLOW_THREADS
    status = query ? prox_query(&points, &queries, &desc, algo_values[algo], sink, &r.stats)
                   : prox_pairs(&points, &desc, algo_values[algo], sink, &r.stats);
    Py_END_ALLOW_THREADS
    PyObject *value = result_value(&r, status);
    matrix_release(&pm);
    matrix_release(&qm);
    return value;
}


/* ---- particles of different sizes (prox/sizes.h) ----------------------- */

static const char *const rule_names[] = {"contact", "gather_scatter", "types"};

/* The sizes of `count` points: radii (float64 copies) or int32 types;
 * the matrix (float64, square) for types. `keep` holds the arrays. */
typedef struct sizes_arg {
    PyArrayObject *values, *matrix;
    prox_sizes sizes;
} sizes_arg;

static void sizes_release(sizes_arg *a)
{
    Py_CLEAR(a->values);
    Py_CLEAR(a->matrix);
}

static int as_sizes(PyObject *obj, const char *what, int rule, PyObject *cutoff, npy_intp count,
                    sizes_arg *a)
{
    memset(a, 0, sizeof *a);
    int type = rule == PROX_RULE_TYPES ? NPY_INT32 : NPY_FLOAT64;
    if (rule == PROX_RULE_TYPES) {
        PyObject *probe = PyArray_FROM_O(obj);
        if (!probe)
            return -1;
        int kind = PyArray_DESCR((PyArrayObject *)probe)->kind;
        Py_DECREF(probe);
        if (kind != 'i' && kind != 'u') {
            PyErr_Format(PyExc_TypeError, "%s: types must be integers", what);
            return -1;
        }
    }
    a->values = (PyArrayObject *)PyArray_FROMANY(obj, type, 1, 1, NPY_ARRAY_CARRAY_RO |
                                                                      NPY_ARRAY_FORCECAST);
    if (!a->values)
        return -1;
    if (PyArray_DIM(a->values, 0) != count) {
        PyErr_Format(PyExc_ValueError, "%s: %zd sizes for %zd points", what,
                     (Py_ssize_t)PyArray_DIM(a->values, 0), (Py_ssize_t)count);
        sizes_release(a);
        return -1;
    }
    if (rule != PROX_RULE_TYPES) {
        a->sizes = prox_sizes_radii((const double *)PyArray_DATA(a->values), (prox_size_rule)rule);
        return 0;
    }
    if (cutoff == Py_None) {
        PyErr_SetString(PyExc_ValueError, "types need a cutoff matrix");
        sizes_release(a);
        return -1;
    }
    a->matrix = (PyArrayObject *)PyArray_FROMANY(cutoff, NPY_FLOAT64, 2, 2, NPY_ARRAY_CARRAY_RO |
                                                                                NPY_ARRAY_FORCECAST);
    if (!a->matrix || PyArray_DIM(a->matrix, 0) != PyArray_DIM(a->matrix, 1)) {
        if (a->matrix)
            PyErr_SetString(PyExc_ValueError, "cutoff matrix: expected a square (types, types) "
                                              "array");
        sizes_release(a);
        return -1;
    }
    a->sizes = prox_sizes_types((const int32_t *)PyArray_DATA(a->values),
                                (int)PyArray_DIM(a->matrix, 0),
                                (const double *)PyArray_DATA(a->matrix));
    return 0;
}

static PyObject *py_sized_search(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"points", "sizes", "rule", "box", "threads", "output", "cutoff",
                            "queries", "query_sizes", "sort", "algo", "index_dtype", NULL};
    PyObject *points_obj, *sizes_obj, *box = Py_None, *cutoff = Py_None, *queries_obj = Py_None;
    PyObject *qsizes_obj = Py_None, *index_dtype = Py_None;
    const char *rule_name = "contact", *output = "pairs", *algo_name = "grid";
    int threads = 0, sort = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sOisOOOpsO", names, &points_obj, &sizes_obj,
                                     &rule_name, &box, &threads, &output, &cutoff, &queries_obj,
                                     &qsizes_obj, &sort, &algo_name, &index_dtype))
        return NULL;
    int rule = parse_choice("rule", rule_name, rule_names, 3);
    int algo = parse_choice("algo", algo_name, algo_names, 2);
    result r;
    if (rule < 0 || algo < 0 || result_init(&r, output, sort, index_dtype) < 0)
        return NULL;
    matrix pm = {0}, qm = {0};
    prox_points points, queries;
    sizes_arg ps = {0}, qs = {0};
    bool query = queries_obj != Py_None;
    prox_grid_desc desc;
    PyObject *value = NULL;
    bool ran = false;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0 ||
        as_sizes(sizes_obj, "sizes", rule, cutoff, (npy_intp)points.count, &ps) < 0)
        goto done;
    if (query && (as_points(queries_obj, "queries", &qm, &queries, &r.single) < 0 ||
                  as_sizes(qsizes_obj == Py_None ? sizes_obj : qsizes_obj, "query sizes", rule,
                           cutoff, (npy_intp)queries.count, &qs) < 0))
        goto done;
    if (grid_desc_of(PROX_RADIUS_MIN, box, points.dim, threads, "linear", &desc) < 0)
        goto done;
    prox_status status;
    prox_sink sink = result_sink(&r);
    Py_BEGIN_ALLOW_THREADS
    status = query ? prox_sized_query(&points, &ps.sizes, &queries, &qs.sizes, &desc,
                                      algo_values[algo], sink, &r.stats)
                   : prox_sized_pairs(&points, &ps.sizes, &desc, algo_values[algo], sink,
                                      &r.stats);
    Py_END_ALLOW_THREADS
    ran = true;
    value = result_value(&r, status); /* releases r */
done:
    if (!ran)
        result_free(&r);
    sizes_release(&ps);
    sizes_release(&qs);
    matrix_release(&pm);
    matrix_release(&qm);
    return value;
}

/* ---- geometry of given pairs ------------------------------------------ */

/* A 1-D integer array read in place (uint32, int32, int64, uint64). */
typedef struct index_array {
    PyArrayObject *array;
    const char *data;
    npy_intp count, stride;
    int type;
} index_array;

static int as_index_array(PyObject *obj, const char *what, index_array *ix)
{
    memset(ix, 0, sizeof *ix);
    PyArrayObject *a = NULL;
    if (PyArray_Check(obj)) {
        int t = PyArray_TYPE((PyArrayObject *)obj);
        if (!PyTypeNum_ISINTEGER(t)) {
            PyErr_Format(PyExc_TypeError, "%s: expected an integer array", what);
            return -1;
        }
        bool direct = (t == NPY_UINT32 || t == NPY_INT32 || t == NPY_INT64 || t == NPY_UINT64) &&
                      PyArray_ISNOTSWAPPED((PyArrayObject *)obj) &&
                      PyArray_ISALIGNED((PyArrayObject *)obj);
        if (direct) {
            Py_INCREF(obj);
            a = (PyArrayObject *)obj;
        } else {
            a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_INT64, 0, 0,
                                                 NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
        }
    } else {
        a = (PyArrayObject *)PyArray_FROMANY(obj, NPY_INT64, 0, 0,
                                             NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
    }
    if (!a)
        return -1;
    if (PyArray_NDIM(a) != 1) {
        shape_error(a, what, "(m,)");
        Py_DECREF(a);
        return -1;
    }
    ix->array = a;
    ix->data = PyArray_BYTES(a);
    ix->count = PyArray_DIM(a, 0);
    ix->stride = PyArray_STRIDE(a, 0);
    ix->type = PyArray_TYPE(a);
    return 0;
}

/* Entry k, or -1 where it does not fit an int64 (a huge uint64). */
static inline int64_t index_at(const index_array *ix, npy_intp k)
{
    const char *at = ix->data + k * ix->stride;
    switch (ix->type) {
    case NPY_UINT32:
        return *(const uint32_t *)(const void *)at;
    case NPY_INT32:
        return *(const int32_t *)(const void *)at;
    case NPY_UINT64: {
        uint64_t v = *(const uint64_t *)(const void *)at;
        return v > INT64_MAX ? -1 : (int64_t)v;
    }
    default:
        return *(const int64_t *)(const void *)at;
    }
}

/* The first entry outside [0, limit), or -1. */
static npy_intp first_out_of_range(const index_array *ix, int64_t limit)
{
    for (npy_intp k = 0; k < ix->count; k++) {
        int64_t v = index_at(ix, k);
        if (v < 0 || v >= limit)
            return k;
    }
    return -1;
}

typedef struct geometry {
    const prox_points *from, *to; /* pair (i, j): i in from, j in to */
    const index_array *i, *j;
    double period[3];
    double *d, *vectors; /* NULL when not wanted */
    int64_t *shifts;
    int threads;
} geometry;

/* One pair's vector j - i and integer shifts, as ASE writes them: D =
 * x[j] - x[i] + S * L with S the minimum image of the library's test
 * (wrapped coordinates, prox_min_image rule), d = |D| in double. */
static void pair_geometry(const geometry *g, npy_intp k)
{
    int64_t a = index_at(g->i, k), b = index_at(g->j, k);
    int dim = g->from->dim;
    double D[3] = {0, 0, 0};
    int64_t S[3] = {0, 0, 0};
    for (int axis = 0; axis < dim; axis++) {
        double xi = prox_points_get(g->from, a, axis), xj = prox_points_get(g->to, b, axis);
        double L = g->period[axis], dx = xj - xi;
        if (L > 0) {
            double wi = xi - L * floor(xi / L), wj = xj - L * floor(xj / L);
            wi = (wi >= L || wi < 0) ? 0.0 : wi;
            wj = (wj >= L || wj < 0) ? 0.0 : wj;
            double m = wj - wi;
            if (m > 0.5 * L)
                m -= L;
            else if (m < -0.5 * L)
                m += L;
            S[axis] = (int64_t)llround((m - dx) / L);
            dx = dx + (double)S[axis] * L;
        }
        D[axis] = dx;
    }
    if (g->d)
        g->d[k] = sqrt(D[0] * D[0] + D[1] * D[1] + D[2] * D[2]);
    for (int axis = 0; axis < dim; axis++) {
        if (g->vectors)
            g->vectors[k * dim + axis] = D[axis];
        if (g->shifts)
            g->shifts[k * dim + axis] = S[axis];
    }
}

static void geometry_run(const geometry *g, npy_intp m)
{
#ifdef _OPENMP
    int threads = g->threads > 0 ? g->threads : omp_get_max_threads();
    if (m < 65536)
        threads = 1;
#pragma omp parallel for num_threads(threads) schedule(static)
    for (npy_intp k = 0; k < m; k++)
        pair_geometry(g, k);
#else
    for (npy_intp k = 0; k < m; k++)
        pair_geometry(g, k);
#endif
}

static PyObject *py_geometry(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"points", "i", "j", "quantities", "box", "queries", "threads", NULL};
    PyObject *points_obj, *i_obj, *j_obj, *box = Py_None, *queries_obj = Py_None;
    const char *quantities = "d";
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|sOOi", names, &points_obj, &i_obj, &j_obj,
                                     &quantities, &box, &queries_obj, &threads))
        return NULL;
    if (check_threads(threads) < 0)
        return NULL;
    for (const char *c = quantities; *c; c++)
        if (!strchr("dDS", *c)) {
            PyErr_Format(PyExc_ValueError,
                         "quantities = '%s': each letter one of d (distance), D (vector), S "
                         "(shift)",
                         quantities);
            return NULL;
        }
    matrix pm, qm = {0};
    prox_points points, queries;
    index_array ia = {0}, ja = {0};
    PyObject *out[3] = {NULL, NULL, NULL}, *value = NULL;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0)
        return NULL;
    geometry g = {.from = &points, .to = &points, .i = &ia, .j = &ja, .threads = threads};
    if (queries_obj != Py_None) {
        if (as_points(queries_obj, "queries", &qm, &queries, NULL) < 0)
            goto done;
        if (queries.dim != points.dim) {
            PyErr_Format(PyExc_ValueError, "queries: %dD, points: %dD", queries.dim, points.dim);
            goto done;
        }
        g.from = &queries;
    }
    if (parse_box(box, points.dim, g.period) < 0 || as_index_array(i_obj, "i", &ia) < 0 ||
        as_index_array(j_obj, "j", &ja) < 0)
        goto done;
    if (ia.count != ja.count) {
        PyErr_Format(PyExc_ValueError, "i and j differ in length: %zd, %zd", (Py_ssize_t)ia.count,
                     (Py_ssize_t)ja.count);
        goto done;
    }
    npy_intp bad;
    if ((bad = first_out_of_range(&ia, g.from->count)) >= 0 ||
        (bad = first_out_of_range(&ja, points.count)) >= 0) {
        bool in_i = first_out_of_range(&ia, g.from->count) >= 0;
        PyErr_Format(PyExc_ValueError, "%s[%zd] is out of range for %lld %s", in_i ? "i" : "j",
                     (Py_ssize_t)bad, (long long)(in_i ? g.from->count : points.count),
                     in_i && queries_obj != Py_None ? "queries" : "points");
        goto done;
    }
    npy_intp m = ia.count, vdims[2] = {m, points.dim};
    for (const char *c = quantities; *c; c++) {
        int slot = *c == 'd' ? 0 : *c == 'D' ? 1 : 2;
        if (out[slot])
            continue;
        out[slot] = slot == 0   ? PyArray_EMPTY(1, vdims, NPY_DOUBLE, 0)
                    : slot == 1 ? PyArray_EMPTY(2, vdims, NPY_DOUBLE, 0)
                                : PyArray_EMPTY(2, vdims, NPY_INT64, 0);
        if (!out[slot])
            goto done;
    }
    g.d = out[0] ? (double *)PyArray_DATA((PyArrayObject *)out[0]) : NULL;
    g.vectors = out[1] ? (double *)PyArray_DATA((PyArrayObject *)out[1]) : NULL;
    g.shifts = out[2] ? (int64_t *)PyArray_DATA((PyArrayObject *)out[2]) : NULL;
    Py_BEGIN_ALLOW_THREADS
    geometry_run(&g, m);
    Py_END_ALLOW_THREADS
    size_t n = strlen(quantities);
    value = PyTuple_New((Py_ssize_t)n);
    for (size_t k = 0; value && k < n; k++) {
        PyObject *o = out[quantities[k] == 'd' ? 0 : quantities[k] == 'D' ? 1 : 2];
        Py_INCREF(o);
        PyTuple_SET_ITEM(value, (Py_ssize_t)k, o);
    }
done:
    for (int k = 0; k < 3; k++)
        Py_XDECREF(out[k]);
    Py_XDECREF(ia.array);
    Py_XDECREF(ja.array);
    matrix_release(&pm);
    matrix_release(&qm);
    return value;
}

/* The row index of every CSR entry (ASE's i), as intp. */
static PyObject *py_rows_of(PyObject *self, PyObject *arg)
{
    (void)self;
    PyArrayObject *off = (PyArrayObject *)PyArray_FROMANY(
        arg, NPY_INT64, 1, 1, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
    if (!off)
        return NULL;
    const int64_t *o = (const int64_t *)PyArray_DATA(off);
    npy_intp rows = PyArray_DIM(off, 0) - 1;
    if (rows < 0 || o[0] != 0) {
        Py_DECREF(off);
        PyErr_SetString(PyExc_ValueError, "offsets: expected rows + 1 entries starting at 0");
        return NULL;
    }
    for (npy_intp r = 0; r < rows; r++)
        if (o[r + 1] < o[r]) {
            Py_DECREF(off);
            PyErr_SetString(PyExc_ValueError, "offsets: must not decrease");
            return NULL;
        }
    npy_intp m = (npy_intp)o[rows];
    PyObject *out = PyArray_EMPTY(1, &m, NPY_INTP, 0);
    if (out) {
        npy_intp *at = (npy_intp *)PyArray_DATA((PyArrayObject *)out);
        Py_BEGIN_ALLOW_THREADS
        for (npy_intp r = 0; r < rows; r++)
            for (int64_t e = o[r]; e < o[r + 1]; e++)
                at[e] = r;
        Py_END_ALLOW_THREADS
    }
    Py_DECREF(off);
    return out;
}

/* ---- objects kept between calls: the common part ----------------------- */

static int claim(int *busy, const char *type)
{
    if (*busy) {
        PyErr_Format(PyExc_RuntimeError, "this %s is in use by another thread", type);
        return -1;
    }
    *busy = 1;
    return 0;
}

/* ---- Grid -------------------------------------------------------------- */

typedef struct GridObject {
    PyObject_HEAD
    prox_grid *grid;
    double radius;
    PyObject *box;
    int threads;
    prox_keys keys;
    int dim;        /* of the built points; 0 before build */
    int64_t count;  /* built points */
    int busy;
    prox_stats stats; /* of the last call */
} GridObject;

static int Grid_init(GridObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"radius", "box", "threads", "keys", "points", NULL};
    double radius;
    PyObject *box = Py_None, *points = Py_None;
    int threads = 0;
    const char *keys = "linear";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "d|OisO", names, &radius, &box, &threads, &keys,
                                     &points))
        return -1;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "this Grid is in use by another thread");
        return -1;
    }
    if (check_threads(threads) < 0)
        return -1;
    int k = parse_choice("keys", keys, key_names, 3);
    if (k < 0)
        return -1;
    prox_grid_destroy(self->grid);
    self->grid = NULL;
    self->radius = radius;
    self->threads = threads;
    self->keys = key_values[k];
    self->dim = 0;
    self->count = 0;
    Py_INCREF(box);
    Py_XSETREF(self->box, box);
    if (points != Py_None) {
        PyObject *r = PyObject_CallMethod((PyObject *)self, "build", "O", points);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

static void Grid_dealloc(GridObject *self)
{
    prox_grid_destroy(self->grid);
    Py_XDECREF(self->box);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A prox_grid for `dim`: the period's length depends on it, so the
 * object is created at the first build (and again if dim changes). */
static int grid_ready(GridObject *self, int dim)
{
    if (self->grid && self->dim == dim)
        return 0;
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = self->radius;
    desc.threads = self->threads;
    desc.keys = self->keys;
    if (parse_box(self->box, dim, desc.period) < 0)
        return -1;
    prox_grid *grid;
    prox_status status = prox_grid_create(&desc, &grid);
    if (status != PROX_OK) {
        raise_status(status);
        return -1;
    }
    prox_grid_destroy(self->grid);
    self->grid = grid;
    self->dim = 0;
    self->count = 0;
    return 0;
}

static PyObject *grid_place(GridObject *self, PyObject *points_obj, bool update)
{
    matrix pm;
    prox_points points;
    if (claim(&self->busy, "Grid") < 0)
        return NULL;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0) {
        self->busy = 0;
        return NULL;
    }
    bool fresh = !self->grid || self->dim != points.dim;
    if (grid_ready(self, points.dim) < 0) {
        matrix_release(&pm);
        self->busy = 0;
        return NULL;
    }
    prox_status status;
    memset(&self->stats, 0, sizeof self->stats);
    update = update && !fresh;
    Py_BEGIN_ALLOW_THREADS
    status = update ? prox_grid_update(self->grid, &points, &self->stats)
                    : prox_grid_build(self->grid, &points);
    Py_END_ALLOW_THREADS
    matrix_release(&pm);
    self->busy = 0;
    if (!update)
        self->stats.rebuilt = true;
    if (status != PROX_OK) {
        self->dim = 0;
        self->count = 0;
        return raise_status(status);
    }
    self->dim = points.dim;
    self->count = points.count;
    return PyBool_FromLong(self->stats.rebuilt);
}

static PyObject *Grid_build(GridObject *self, PyObject *points)
{
    PyObject *r = grid_place(self, points, false);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *Grid_update(GridObject *self, PyObject *points)
{
    return grid_place(self, points, true);
}

static int grid_built(GridObject *self)
{
    if (!self->grid || !self->dim) {
        PyErr_SetString(PyExc_RuntimeError, "Grid: nothing built yet (call build(points))");
        return -1;
    }
    return 0;
}

static PyObject *grid_search(GridObject *self, PyObject *queries_obj, const char *output,
                             int sort, PyObject *index_dtype)
{
    result r;
    if (grid_built(self) < 0 || result_init(&r, output, sort, index_dtype) < 0)
        return NULL;
    matrix qm = {0};
    prox_points queries;
    if (queries_obj) {
        if (as_points(queries_obj, "queries", &qm, &queries, &r.single) < 0)
            return NULL;
        if (queries.dim != self->dim) {
            matrix_release(&qm);
            return PyErr_Format(PyExc_ValueError, "queries: %dD, built points: %dD",
                                queries.dim, self->dim);
        }
    }
    if (claim(&self->busy, "Grid") < 0) {
        matrix_release(&qm);
        return NULL;
    }
    prox_status status;
    prox_sink sink = result_sink(&r);
    Py_BEGIN_ALLOW_THREADS
    status = queries_obj ? prox_grid_query(self->grid, &queries, sink, &r.stats)
                         : prox_grid_pairs(self->grid, sink, &r.stats);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    self->stats = r.stats;
    matrix_release(&qm);
    return result_value(&r, status);
}

static PyObject *Grid_pairs(GridObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"sort", "output", "index_dtype", NULL};
    int sort = 1;
    const char *output = "pairs";
    PyObject *index_dtype = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$psO", names, &sort, &output, &index_dtype))
        return NULL;
    return grid_search(self, NULL, output, sort, index_dtype);
}

static PyObject *Grid_lists(GridObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"sort", "index_dtype", NULL};
    int sort = 1;
    PyObject *index_dtype = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|$pO", names, &sort, &index_dtype))
        return NULL;
    return grid_search(self, NULL, "lists", sort, index_dtype);
}

static PyObject *Grid_count(GridObject *self, PyObject *noargs)
{
    (void)noargs;
    return grid_search(self, NULL, "count", 1, NULL);
}

static PyObject *Grid_query(GridObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"queries", "output", "sort", "index_dtype", NULL};
    PyObject *queries, *index_dtype = Py_None;
    int sort = 1;
    const char *output = "lists";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s$pO", names, &queries, &output, &sort,
                                     &index_dtype))
        return NULL;
    return grid_search(self, queries, output, sort, index_dtype);
}

static PyObject *Grid_trim(GridObject *self, PyObject *noargs)
{
    (void)noargs;
    if (claim(&self->busy, "Grid") < 0)
        return NULL;
    if (self->grid)
        prox_grid_trim(self->grid);
    self->busy = 0;
    Py_RETURN_NONE;
}

static PyObject *Grid_get_stats(GridObject *self, void *c)
{
    (void)c;
    return stats_dict(&self->stats);
}

static PyObject *Grid_get_rebuilt(GridObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->stats.rebuilt);
}

/* Getters of a field at an offset of the object: the kept structures'
 * size (int64_t) and dim (int). */
static PyObject *get_int64_at(PyObject *self, void *offset)
{
    return PyLong_FromLongLong(*(const int64_t *)(const void *)((char *)self + (size_t)offset));
}

static PyObject *get_int_at(PyObject *self, void *offset)
{
    return PyLong_FromLong(*(const int *)(const void *)((char *)self + (size_t)offset));
}

static PyObject *Grid_get_radius(GridObject *self, void *c)
{
    (void)c;
    return PyFloat_FromDouble(self->radius);
}

static PyMethodDef Grid_methods[] = {
    {"build", (PyCFunction)Grid_build, METH_O,
     "build($self, points, /)\n--\n\nBuild the grid over `points` ((n, 2|3) float32/float64, any strides;"
     " the grid keeps its own copy in cell order)."},
    {"update", (PyCFunction)Grid_update, METH_O,
     "update($self, points, /)\n--\n\nThe points moved: relocate those whose cell changed, or rebuild"
     " when cheaper (or when the count or dimension changed). Returns True when rebuilt."},
    {"pairs", (PyCFunction)(void (*)(void))Grid_pairs, METH_VARARGS | METH_KEYWORDS,
     "pairs($self, /, *, sort=True, output='pairs', index_dtype=None)\n--\n\nEvery pair of built"
     " points within the radius: (m, 2) intp (index_dtype=numpy.uint32: uint32), i < j, sorted"
     " (output='lists' or 'count' as in prox.pairs)."},
    {"lists", (PyCFunction)(void (*)(void))Grid_lists, METH_VARARGS | METH_KEYWORDS,
     "lists($self, /, *, sort=True, index_dtype=None)\n--\n\nFull neighbour lists of the built"
     " points as CSR: (offsets int64 (n+1,), indices intp, or uint32 with"
     " index_dtype=numpy.uint32)."},
    {"count", (PyCFunction)Grid_count, METH_NOARGS,
     "count($self, /)\n--\n\nThe number of pairs within the radius (nothing stored)."},
    {"query", (PyCFunction)(void (*)(void))Grid_query, METH_VARARGS | METH_KEYWORDS,
     "query($self, /, queries, output='lists', *, sort=True, index_dtype=None)\n--\n\nBall"
     " queries of a second point set: for each query q the built points within the radius;"
     " output 'lists' (CSR, one row a query), 'pairs' ((q, j) rows) or 'count'. One point of"
     " shape (dim,): 'lists' gives its neighbours' indices alone."},
    {"trim", (PyCFunction)Grid_trim, METH_NOARGS,
     "trim($self, /)\n--\n\nRelease the scratch memory queries keep for the next query."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Grid_getset[] = {
    {"stats", (getter)Grid_get_stats, NULL, "figures of the last call (dict)", NULL},
    {"rebuilt", (getter)Grid_get_rebuilt, NULL, "whether the last build/update rebuilt", NULL},
    {"size", get_int64_at, NULL, "number of built points", (void *)offsetof(GridObject, count)},
    {"dim", get_int_at, NULL, "dimension of the built points (0 before build)",
     (void *)offsetof(GridObject, dim)},
    {"radius", (getter)Grid_get_radius, NULL, "the search radius", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject GridType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prox._prox.Grid",
    .tp_basicsize = sizeof(GridObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Grid_init,
    .tp_doc = "Grid(radius, box=None, threads=0, keys='linear', points=None)\n--\n\n"
              "A uniform grid kept across calls (see prox.Grid).",
    .tp_dealloc = (destructor)Grid_dealloc,
    .tp_methods = Grid_methods,
    .tp_getset = Grid_getset,
};

/* ---- SkinList ---------------------------------------------------------- */

typedef struct SkinObject {
    PyObject_HEAD
    prox_skin_list *list;
    double radius, skin;
    PyObject *box;
    int threads;
    int dim;
    int busy;
    prox_stats stats;
} SkinObject;

/* The checks and the box every skin list type's __init__ shares. */
static int skin_reset(const char *type, int busy, int threads, PyObject *box, PyObject **slot)
{
    if (busy) {
        PyErr_Format(PyExc_RuntimeError, "this %s is in use by another thread", type);
        return -1;
    }
    if (check_threads(threads) < 0)
        return -1;
    Py_INCREF(box);
    Py_XSETREF(*slot, box);
    return 0;
}

/* Getters of a skin list type's last stats; closure: the offset of its
 * prox_stats. */
static PyObject *skin_get_rebuilt(PyObject *self, void *offset)
{
    return PyBool_FromLong(((const prox_stats *)((char *)self + (size_t)offset))->rebuilt);
}

static PyObject *skin_get_stats(PyObject *self, void *offset)
{
    return stats_dict((const prox_stats *)((char *)self + (size_t)offset));
}

static int Skin_init(SkinObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"radius", "skin", "box", "threads", NULL};
    double radius, skin;
    PyObject *box = Py_None;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "dd|Oi", names, &radius, &skin, &box, &threads))
        return -1;
    if (skin_reset("SkinList", self->busy, threads, box, &self->box) < 0)
        return -1;
    prox_skin_list_destroy(self->list);
    self->list = NULL;
    self->radius = radius;
    self->skin = skin;
    self->threads = threads;
    self->dim = 0;
    /* radius and skin checked now rather than at the first step (the box
     * waits for the points' dimension) */
    prox_grid_desc desc = prox_default_grid_desc();
    desc.radius = radius;
    desc.threads = threads;
    prox_skin_list *probe = NULL;
    prox_status status = prox_skin_list_create(&desc, skin, &probe);
    prox_skin_list_destroy(probe);
    if (status != PROX_OK) {
        raise_status(status);
        return -1;
    }
    return 0;
}

static void Skin_dealloc(SkinObject *self)
{
    prox_skin_list_destroy(self->list);
    Py_XDECREF(self->box);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *skin_step(SkinObject *self, PyObject *args, PyObject *kw, const char *output)
{
    static char *names[] = {"points", "sort", "index_dtype", NULL};
    PyObject *points_obj, *index_dtype = Py_None;
    int sort = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|$pO", names, &points_obj, &sort, &index_dtype))
        return NULL;
    result r;
    if (result_init(&r, output, sort, index_dtype) < 0)
        return NULL;
    matrix pm;
    prox_points points;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0)
        return NULL;
    if (claim(&self->busy, "SkinList") < 0) {
        matrix_release(&pm);
        return NULL;
    }
    if (!self->list || self->dim != points.dim) {
        prox_grid_desc desc = prox_default_grid_desc();
        desc.radius = self->radius;
        desc.threads = self->threads;
        prox_skin_list *list = NULL;
        prox_status status = PROX_OK;
        if (parse_box(self->box, points.dim, desc.period) < 0 ||
            (status = prox_skin_list_create(&desc, self->skin, &list)) != PROX_OK) {
            if (status != PROX_OK)
                raise_status(status);
            matrix_release(&pm);
            self->busy = 0;
            return NULL;
        }
        prox_skin_list_destroy(self->list);
        self->list = list;
        self->dim = points.dim;
    }
    prox_status status;
    prox_sink sink = result_sink(&r);
    Py_BEGIN_ALLOW_THREADS
    status = prox_skin_list_pairs(self->list, &points, sink, &r.stats);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    self->stats = r.stats;
    matrix_release(&pm);
    return result_value(&r, status);
}

static PyObject *Skin_pairs(SkinObject *self, PyObject *args, PyObject *kw)
{
    return skin_step(self, args, kw, "pairs");
}

static PyObject *Skin_lists(SkinObject *self, PyObject *args, PyObject *kw)
{
    return skin_step(self, args, kw, "lists");
}

static PyObject *Skin_count(SkinObject *self, PyObject *args, PyObject *kw)
{
    return skin_step(self, args, kw, "count");
}

static PyMethodDef Skin_methods[] = {
    {"pairs", (PyCFunction)(void (*)(void))Skin_pairs, METH_VARARGS | METH_KEYWORDS,
     "pairs($self, /, points, *, sort=True, index_dtype=None)\n--\n\nThe pairs within the radius"
     " at these positions: (m, 2) intp (index_dtype=numpy.uint32: uint32), i < j, sorted;"
     " `rebuilt` tells whether the lists were rebuilt."},
    {"lists", (PyCFunction)(void (*)(void))Skin_lists, METH_VARARGS | METH_KEYWORDS,
     "lists($self, /, points, *, sort=True, index_dtype=None)\n--\n\nFull neighbour lists within the radius at these"
     " positions (offsets, indices)."},
    {"count", (PyCFunction)(void (*)(void))Skin_count, METH_VARARGS | METH_KEYWORDS,
     "count($self, /, points)\n--\n\nThe number of pairs within the radius at these positions."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Skin_getset[] = {
    {"rebuilt", skin_get_rebuilt, NULL, "whether the last call rebuilt the lists",
     (void *)offsetof(SkinObject, stats)},
    {"stats", skin_get_stats, NULL, "figures of the last call (dict)",
     (void *)offsetof(SkinObject, stats)},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SkinType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prox._prox.SkinList",
    .tp_basicsize = sizeof(SkinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Skin_init,
    .tp_doc = "SkinList(radius, skin, box=None, threads=0)\n--\n\n"
              "Skin (Verlet) lists kept across steps (see prox.SkinList).",
    .tp_dealloc = (destructor)Skin_dealloc,
    .tp_methods = Skin_methods,
    .tp_getset = Skin_getset,
};

/* ---- SizedSkinList: skin lists of particles with sizes ----------------- */

typedef struct SizedSkinObject {
    PyObject_HEAD
    prox_sized_skin_list *list;
    double skin;
    PyObject *box;
    int threads;
    int dim;
    int busy;
    prox_stats stats;
} SizedSkinObject;

static int SizedSkin_init(SizedSkinObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"skin", "box", "threads", NULL};
    double skin;
    PyObject *box = Py_None;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "d|Oi", names, &skin, &box, &threads))
        return -1;
    if (skin_reset("SizedSkinList", self->busy, threads, box, &self->box) < 0)
        return -1;
    prox_sized_skin_list_destroy(self->list);
    self->list = NULL;
    self->skin = skin;
    self->threads = threads;
    self->dim = 0;
    prox_grid_desc desc = prox_default_grid_desc();
    desc.threads = threads;
    prox_sized_skin_list *probe = NULL;
    prox_status status = prox_sized_skin_list_create(&desc, skin, &probe);
    prox_sized_skin_list_destroy(probe);
    if (status != PROX_OK) {
        raise_status(status);
        return -1;
    }
    return 0;
}

static void SizedSkin_dealloc(SizedSkinObject *self)
{
    prox_sized_skin_list_destroy(self->list);
    Py_XDECREF(self->box);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A list for points of this dimension (the box needs it), made once. */
static int sized_skin_ready(SizedSkinObject *self, int dim)
{
    if (self->list && self->dim == dim)
        return 0;
    prox_grid_desc desc = prox_default_grid_desc();
    desc.threads = self->threads;
    prox_sized_skin_list *list = NULL;
    if (parse_box(self->box, dim, desc.period) < 0)
        return -1;
    prox_status status = prox_sized_skin_list_create(&desc, self->skin, &list);
    if (status != PROX_OK) {
        raise_status(status);
        return -1;
    }
    prox_sized_skin_list_destroy(self->list);
    self->list = list;
    self->dim = dim;
    return 0;
}

static PyObject *SizedSkin_step(SizedSkinObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"points", "sizes", "rule", "cutoff", "output", "sort", "index_dtype",
                            NULL};
    PyObject *points_obj, *sizes_obj, *cutoff = Py_None, *index_dtype = Py_None;
    const char *rule_name = "contact", *output = "pairs";
    int sort = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sOspO", names, &points_obj, &sizes_obj,
                                     &rule_name, &cutoff, &output, &sort, &index_dtype))
        return NULL;
    int rule = parse_choice("rule", rule_name, rule_names, 3);
    result r;
    if (rule < 0 || result_init(&r, output, sort, index_dtype) < 0)
        return NULL;
    matrix pm = {0};
    prox_points points;
    sizes_arg ps = {0};
    PyObject *value = NULL;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0 ||
        as_sizes(sizes_obj, "sizes", rule, cutoff, (npy_intp)points.count, &ps) < 0 ||
        claim(&self->busy, "SizedSkinList") < 0) {
        result_free(&r);
        goto done;
    }
    if (sized_skin_ready(self, points.dim) < 0) {
        self->busy = 0;
        result_free(&r);
        goto done;
    }
    prox_status status;
    prox_sink sink = result_sink(&r);
    Py_BEGIN_ALLOW_THREADS
    status = prox_sized_skin_list_pairs(self->list, &points, &ps.sizes, sink, &r.stats);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    self->stats = r.stats;
    value = result_value(&r, status); /* releases r */
done:
    sizes_release(&ps);
    matrix_release(&pm);
    return value;
}

static PyMethodDef SizedSkin_methods[] = {
    {"_search", (PyCFunction)(void (*)(void))SizedSkin_step, METH_VARARGS | METH_KEYWORDS,
     "_search($self, /, points, sizes, rule='contact', cutoff=None, output='pairs', sort=True,"
     " index_dtype=None)\n--\n\nThe pairs within their threshold at these positions and sizes"
     " (see prox.SizedSkinList)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef SizedSkin_getset[] = {
    {"rebuilt", skin_get_rebuilt, NULL, "whether the last call rebuilt the lists",
     (void *)offsetof(SizedSkinObject, stats)},
    {"stats", skin_get_stats, NULL, "figures of the last call (dict)",
     (void *)offsetof(SizedSkinObject, stats)},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SizedSkinType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prox._prox.SizedSkinList",
    .tp_basicsize = sizeof(SizedSkinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SizedSkin_init,
    .tp_doc = "SizedSkinList(skin, box=None, threads=0)\n--\n\n"
              "Skin lists of particles with sizes (see prox.SizedSkinList).",
    .tp_dealloc = (destructor)SizedSkin_dealloc,
    .tp_methods = SizedSkin_methods,
    .tp_getset = SizedSkin_getset,
};

/* ---- SizedGrid: a kept grid of particles with sizes --------------------- */

typedef struct SizedGridObject {
    PyObject_HEAD
    prox_sized_grid *grid;
    PyObject *box;
    int threads;
    int dim;        /* of the built points; 0 before build */
    int64_t count;  /* built points */
    int busy;
    prox_stats stats; /* of the last call */
} SizedGridObject;

static int SizedGrid_init(SizedGridObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"box", "threads", NULL};
    PyObject *box = Py_None;
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oi", names, &box, &threads))
        return -1;
    if (skin_reset("SizedGrid", self->busy, threads, box, &self->box) < 0)
        return -1;
    prox_sized_grid_destroy(self->grid);
    self->grid = NULL;
    self->threads = threads;
    self->dim = 0;
    self->count = 0;
    return 0;
}

static void SizedGrid_dealloc(SizedGridObject *self)
{
    prox_sized_grid_destroy(self->grid);
    Py_XDECREF(self->box);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A prox_sized_grid for `dim` (the box needs it), made at each build. */
static int sized_grid_ready(SizedGridObject *self, int dim)
{
    prox_grid_desc desc = prox_default_grid_desc();
    desc.threads = self->threads;
    if (parse_box(self->box, dim, desc.period) < 0)
        return -1;
    prox_sized_grid *grid = NULL;
    prox_status status = prox_sized_grid_create(&desc, &grid);
    if (status != PROX_OK) {
        raise_status(status);
        return -1;
    }
    prox_sized_grid_destroy(self->grid);
    self->grid = grid;
    self->dim = 0;
    self->count = 0;
    return 0;
}

static PyObject *SizedGrid_build(SizedGridObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"points", "sizes", "rule", "cutoff", NULL};
    PyObject *points_obj, *sizes_obj, *cutoff = Py_None;
    const char *rule_name = "contact";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|sO", names, &points_obj, &sizes_obj,
                                     &rule_name, &cutoff))
        return NULL;
    int rule = parse_choice("rule", rule_name, rule_names, 3);
    if (rule < 0)
        return NULL;
    matrix pm = {0};
    prox_points points;
    sizes_arg ps = {0};
    PyObject *value = NULL;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0 ||
        as_sizes(sizes_obj, "sizes", rule, cutoff, (npy_intp)points.count, &ps) < 0 ||
        claim(&self->busy, "SizedGrid") < 0)
        goto done;
    if (sized_grid_ready(self, points.dim) < 0) {
        self->busy = 0;
        goto done;
    }
    prox_status status;
    Py_BEGIN_ALLOW_THREADS
    status = prox_sized_grid_build(self->grid, &points, &ps.sizes);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    memset(&self->stats, 0, sizeof self->stats);
    self->stats.rebuilt = true;
    if (status != PROX_OK) {
        raise_status(status);
        goto done;
    }
    self->dim = points.dim;
    self->count = points.count;
    value = Py_NewRef(Py_None);
done:
    sizes_release(&ps);
    matrix_release(&pm);
    return value;
}

static int sized_grid_built(SizedGridObject *self)
{
    if (!self->grid || !self->dim) {
        PyErr_SetString(PyExc_RuntimeError,
                        "SizedGrid: nothing built yet (call build(points, radii=...))");
        return -1;
    }
    return 0;
}

static PyObject *SizedGrid_update(SizedGridObject *self, PyObject *points_obj)
{
    if (sized_grid_built(self) < 0)
        return NULL;
    matrix pm;
    prox_points points;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0)
        return NULL;
    if (claim(&self->busy, "SizedGrid") < 0) {
        matrix_release(&pm);
        return NULL;
    }
    prox_status status;
    memset(&self->stats, 0, sizeof self->stats);
    Py_BEGIN_ALLOW_THREADS
    status = prox_sized_grid_update(self->grid, &points, &self->stats);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    matrix_release(&pm);
    if (status != PROX_OK) {
        self->dim = 0; /* a refused update asks for a build: no pairs of the old positions */
        self->count = 0;
        return raise_status(status);
    }
    return PyBool_FromLong(self->stats.rebuilt);
}

static PyObject *SizedGrid_search(SizedGridObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"output", "sort", "index_dtype", NULL};
    const char *output = "pairs";
    int sort = 1;
    PyObject *index_dtype = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|spO", names, &output, &sort, &index_dtype))
        return NULL;
    result r;
    if (sized_grid_built(self) < 0 || result_init(&r, output, sort, index_dtype) < 0)
        return NULL;
    if (claim(&self->busy, "SizedGrid") < 0) {
        result_free(&r);
        return NULL;
    }
    prox_status status;
    prox_sink sink = result_sink(&r);
    Py_BEGIN_ALLOW_THREADS
    status = prox_sized_grid_pairs(self->grid, sink, &r.stats);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    self->stats = r.stats;
    return result_value(&r, status);
}

static PyMethodDef SizedGrid_methods[] = {
    {"_build", (PyCFunction)(void (*)(void))SizedGrid_build, METH_VARARGS | METH_KEYWORDS,
     "_build($self, /, points, sizes, rule='contact', cutoff=None)\n--\n\nBuild over the points"
     " and their sizes (see prox.SizedGrid.build)."},
    {"update", (PyCFunction)SizedGrid_update, METH_O,
     "update($self, points, /)\n--\n\nThe points moved (the same count; the sizes stay the"
     " build's): the kept copy takes the new positions. Returns True (the size classes are"
     " planned again at the next search)."},
    {"_search", (PyCFunction)(void (*)(void))SizedGrid_search, METH_VARARGS | METH_KEYWORDS,
     "_search($self, /, output='pairs', sort=True, index_dtype=None)\n--\n\nThe pairs within"
     " their threshold (see prox.SizedGrid)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef SizedGrid_getset[] = {
    {"stats", skin_get_stats, NULL, "figures of the last call (dict)",
     (void *)offsetof(SizedGridObject, stats)},
    {"rebuilt", skin_get_rebuilt, NULL, "whether the last build/update rebuilt",
     (void *)offsetof(SizedGridObject, stats)},
    {"size", get_int64_at, NULL, "number of built points",
     (void *)offsetof(SizedGridObject, count)},
    {"dim", get_int_at, NULL, "dimension of the built points (0 before build)",
     (void *)offsetof(SizedGridObject, dim)},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject SizedGridType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prox._prox.SizedGrid",
    .tp_basicsize = sizeof(SizedGridObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)SizedGrid_init,
    .tp_doc = "SizedGrid(box=None, threads=0)\n--\n\n"
              "Particles with sizes kept across calls (see prox.SizedGrid).",
    .tp_dealloc = (destructor)SizedGrid_dealloc,
    .tp_methods = SizedGrid_methods,
    .tp_getset = SizedGrid_getset,
};

/* ---- Broad ------------------------------------------------------------- */

typedef struct BroadObject {
    PyObject_HEAD
    prox_broad *broad;
    prox_broad_algo algo;
    int dim;
    int64_t count;
    int busy;
    prox_stats stats;
} BroadObject;

static int Broad_init(BroadObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"boxes", "algo", "threads", NULL};
    PyObject *boxes = Py_None;
    const char *algo = "auto";
    int threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Osi", names, &boxes, &algo, &threads))
        return -1;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "this Broad is in use by another thread");
        return -1;
    }
    if (check_threads(threads) < 0)
        return -1;
    prox_broad_desc desc = prox_default_broad_desc();
    prox_status status = prox_broad_algo_parse(algo, &desc.algo);
    desc.threads = threads;
    prox_broad *broad = NULL;
    if (status == PROX_OK)
        status = prox_broad_create(&desc, &broad);
    if (status != PROX_OK) {
        raise_status(status);
        return -1;
    }
    prox_broad_destroy(self->broad);
    self->broad = broad;
    self->algo = desc.algo;
    self->dim = 0;
    self->count = 0;
    if (boxes != Py_None) {
        PyObject *r = PyObject_CallMethod((PyObject *)self, "build", "O", boxes);
        if (!r)
            return -1;
        Py_DECREF(r);
    }
    return 0;
}

static void Broad_dealloc(BroadObject *self)
{
    prox_broad_destroy(self->broad);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int broad_ready(BroadObject *self)
{
    if (!self->broad) {
        PyErr_SetString(PyExc_RuntimeError, "Broad: not initialised");
        return -1;
    }
    return 0;
}

static PyObject *broad_place(BroadObject *self, PyObject *boxes_obj, bool update)
{
    if (broad_ready(self) < 0)
        return NULL;
    matrix bm;
    prox_boxes boxes;
    if (as_boxes(boxes_obj, "boxes", &bm, &boxes) < 0)
        return NULL;
    if (claim(&self->busy, "Broad") < 0) {
        matrix_release(&bm);
        return NULL;
    }
    update = update && self->dim == boxes.dim;
    prox_status status;
    memset(&self->stats, 0, sizeof self->stats);
    Py_BEGIN_ALLOW_THREADS
    status = update ? prox_broad_update(self->broad, &boxes, &self->stats)
                    : prox_broad_build(self->broad, &boxes);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    matrix_release(&bm);
    if (!update)
        self->stats.rebuilt = true;
    if (status != PROX_OK) {
        if (!update) { /* a failed build leaves nothing built */
            self->dim = 0;
            self->count = 0;
        }
        return raise_status(status);
    }
    self->dim = boxes.dim;
    self->count = boxes.count;
    return PyBool_FromLong(self->stats.rebuilt);
}

static PyObject *Broad_build(BroadObject *self, PyObject *boxes)
{
    PyObject *r = broad_place(self, boxes, false);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *Broad_update(BroadObject *self, PyObject *boxes)
{
    return broad_place(self, boxes, true);
}

static int broad_built(BroadObject *self)
{
    if (broad_ready(self) < 0)
        return -1;
    if (!self->dim) {
        PyErr_SetString(PyExc_RuntimeError, "Broad: nothing built yet (call build(boxes))");
        return -1;
    }
    return 0;
}

enum { Q_SELF, Q_BOXES, Q_SEGMENTS, Q_SWEPT };

/* One broad-phase query's options, as every query method takes them. */
typedef struct broad_options {
    const char *output;
    int sort;
    PyObject *index_dtype;
} broad_options;

static PyObject *broad_search(BroadObject *self, int kind, PyObject *a_obj, PyObject *b_obj,
                              bool exact, broad_options o)
{
    result r;
    if (broad_built(self) < 0 || result_init(&r, o.output, o.sort, o.index_dtype) < 0)
        return NULL;
    matrix am = {0}, bm = {0};
    prox_boxes abox, bbox;
    prox_points apts, bpts;
    int adim = self->dim, bdim = self->dim;
    int fail = 0;
    if (kind == Q_BOXES || kind == Q_SWEPT) {
        fail = as_boxes(a_obj, kind == Q_SWEPT ? "start" : "queries", &am, &abox) < 0;
        adim = fail ? 0 : abox.dim;
    } else if (kind == Q_SEGMENTS) {
        fail = as_points(a_obj, "starts", &am, &apts, NULL) < 0;
        adim = fail ? 0 : apts.dim;
    }
    if (!fail && kind == Q_SWEPT) {
        fail = as_boxes(b_obj, "end", &bm, &bbox) < 0;
        bdim = fail ? 0 : bbox.dim;
        if (!fail && bbox.count != abox.count) {
            PyErr_Format(PyExc_ValueError, "start and end: %lld and %lld boxes",
                         (long long)abox.count, (long long)bbox.count);
            fail = 1;
        }
    } else if (!fail && kind == Q_SEGMENTS) {
        fail = as_points(b_obj, "ends", &bm, &bpts, NULL) < 0;
        bdim = fail ? 0 : bpts.dim;
        if (!fail && bpts.count != apts.count) {
            PyErr_Format(PyExc_ValueError, "starts and ends: %lld and %lld points",
                         (long long)apts.count, (long long)bpts.count);
            fail = 1;
        }
    }
    if (!fail && (adim != self->dim || bdim != self->dim)) {
        PyErr_Format(PyExc_ValueError, "queries: %dD, built boxes: %dD",
                     adim != self->dim ? adim : bdim, self->dim);
        fail = 1;
    }
    if (fail || claim(&self->busy, "Broad") < 0) {
        matrix_release(&am);
        matrix_release(&bm);
        return NULL;
    }
    prox_status status;
    prox_sink sink = result_sink(&r);
    Py_BEGIN_ALLOW_THREADS
    switch (kind) {
    case Q_SELF:
        status = prox_broad_pairs(self->broad, sink, &r.stats);
        break;
    case Q_BOXES:
        status = prox_broad_query_boxes(self->broad, &abox, sink, &r.stats);
        break;
    case Q_SEGMENTS:
        status = prox_broad_query_segments(self->broad, &apts, &bpts, exact, sink, &r.stats);
        break;
    default:
        status = prox_broad_query_swept(self->broad, &abox, &bbox, sink, &r.stats);
        break;
    }
    Py_END_ALLOW_THREADS
    self->busy = 0;
    self->stats = r.stats;
    matrix_release(&am);
    matrix_release(&bm);
    return result_value(&r, status);
}

static PyObject *Broad_pairs(BroadObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"output", "sort", "index_dtype", NULL};
    broad_options o = {"pairs", 1, Py_None};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|s$pO", names, &o.output, &o.sort,
                                     &o.index_dtype))
        return NULL;
    return broad_search(self, Q_SELF, NULL, NULL, false, o);
}

static PyObject *Broad_query_boxes(BroadObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"queries", "output", "sort", "index_dtype", NULL};
    PyObject *q;
    broad_options o = {"pairs", 1, Py_None};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|s$pO", names, &q, &o.output, &o.sort,
                                     &o.index_dtype))
        return NULL;
    return broad_search(self, Q_BOXES, q, NULL, false, o);
}

static PyObject *Broad_query_segments(BroadObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"starts", "ends", "exact", "output", "sort", "index_dtype", NULL};
    PyObject *s, *e;
    int exact = 1;
    broad_options o = {"pairs", 1, Py_None};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|ps$pO", names, &s, &e, &exact, &o.output,
                                     &o.sort, &o.index_dtype))
        return NULL;
    return broad_search(self, Q_SEGMENTS, s, e, exact != 0, o);
}

static PyObject *Broad_query_swept(BroadObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"start", "end", "output", "sort", "index_dtype", NULL};
    PyObject *s, *e;
    broad_options o = {"pairs", 1, Py_None};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|s$pO", names, &s, &e, &o.output, &o.sort,
                                     &o.index_dtype))
        return NULL;
    return broad_search(self, Q_SWEPT, s, e, false, o);
}

static PyObject *Broad_trim(BroadObject *self, PyObject *noargs)
{
    (void)noargs;
    if (broad_ready(self) < 0 || claim(&self->busy, "Broad") < 0)
        return NULL;
    prox_broad_trim(self->broad);
    self->busy = 0;
    Py_RETURN_NONE;
}

static PyObject *Broad_get_algo(BroadObject *self, void *c)
{
    (void)c;
    const char *name = prox_broad_algo_name(self->algo);
    return PyUnicode_FromString(name ? name : "?");
}

static PyObject *Broad_get_stats(BroadObject *self, void *c)
{
    (void)c;
    return stats_dict(&self->stats);
}

static PyObject *Broad_get_count(BroadObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(self->count);
}

static PyObject *Broad_get_dim(BroadObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->dim);
}

static PyObject *Broad_get_rebuilt(BroadObject *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->stats.rebuilt);
}

static PyMethodDef Broad_methods[] = {
    {"build", (PyCFunction)Broad_build, METH_O,
     "build($self, boxes, /)\n--\n\nBuild over `boxes`: (n, 4) or (n, 6) float32/float64, min corner"
     " then max corner, any strides (the structure keeps its own copy)."},
    {"update", (PyCFunction)Broad_update, METH_O,
     "update($self, boxes, /)\n--\n\nThe boxes changed: boxes kept keep their index, extra ones are"
     " added, a shorter array removes the tail. Returns True when the structure rebuilt."},
    {"pairs", (PyCFunction)(void (*)(void))Broad_pairs, METH_VARARGS | METH_KEYWORDS,
     "pairs($self, /, output='pairs', *, sort=True, index_dtype=None)\n--\n\nEvery pair of built"
     " boxes that overlap (closed boxes: touching counts): (m, 2) intp (index_dtype=numpy.uint32:"
     " uint32), i < j, sorted; 'lists' or 'count'."},
    {"query_boxes", (PyCFunction)(void (*)(void))Broad_query_boxes,
     METH_VARARGS | METH_KEYWORDS,
     "query_boxes($self, /, queries, output='pairs', *, sort=True, index_dtype=None)\n--\n\nFor each query box q the"
     " built boxes j it overlaps: (q, j) pairs, lists (one row a query) or a count."},
    {"query_segments", (PyCFunction)(void (*)(void))Broad_query_segments,
     METH_VARARGS | METH_KEYWORDS,
     "query_segments($self, /, starts, ends, exact=True, output='pairs', *, sort=True,"
     " index_dtype=None)\n--\n\nFor each"
     " segment starts[q] -> ends[q] the built boxes it crosses (exact=False: the boxes its"
     " bounding box overlaps)."},
    {"query_swept", (PyCFunction)(void (*)(void))Broad_query_swept,
     METH_VARARGS | METH_KEYWORDS,
     "query_swept($self, /, start, end, output='pairs', *, sort=True, index_dtype=None)\n--\n\nFor each box moving from"
     " start[q] to end[q], the built boxes its swept bounding box overlaps."},
    {"trim", (PyCFunction)Broad_trim, METH_NOARGS,
     "trim($self, /)\n--\n\nRelease the scratch memory queries keep for the next query."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Broad_getset[] = {
    {"algo", (getter)Broad_get_algo, NULL, "the structure's name", NULL},
    {"stats", (getter)Broad_get_stats, NULL, "figures of the last call (dict)", NULL},
    {"size", (getter)Broad_get_count, NULL, "number of built boxes", NULL},
    {"dim", (getter)Broad_get_dim, NULL, "dimension of the built boxes (0 before build)", NULL},
    {"rebuilt", (getter)Broad_get_rebuilt, NULL, "whether the last build/update rebuilt", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BroadType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prox._prox.Broad",
    .tp_basicsize = sizeof(BroadObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Broad_init,
    .tp_doc = "Broad(boxes=None, algo='auto', threads=0)\n--\n\n"
              "The broad phase over axis-aligned boxes (see prox.Broad).",
    .tp_dealloc = (destructor)Broad_dealloc,
    .tp_methods = Broad_methods,
    .tp_getset = Broad_getset,
};

/* ---- k nearest neighbours ------------------------------------------------ */

/* The result's shifts as int64 (m, k, dim), or NULL with an exception. */
static PyObject *knn_shifts(const prox_knn_result *r, int dim)
{
    npy_intp dims[3] = {(npy_intp)r->rows, (npy_intp)r->k, (npy_intp)dim};
    PyObject *S = PyArray_SimpleNew(3, dims, NPY_INT64);
    if (!S)
        return NULL;
    int64_t *to = PyArray_DATA((PyArrayObject *)S), entries = r->rows * r->k * dim;
    for (int64_t t = 0; t < entries; t++)
        to[t] = r->shifts[t];
    return S;
}

/* (distances, indices, counts[, shifts]): float64 and intp arrays of shape
 * (m, k), int32 counts (m,), and int64 shifts (m, k, dim) when the result
 * has them (prox_cell_knn); the result's distances become the array
 * itself. */
static PyObject *knn_value(prox_knn_result *r, int dim)
{
    PyObject *shifts = NULL;
    if (r->shifts && !(shifts = knn_shifts(r, dim))) {
        prox_knn_result_free(r);
        return NULL;
    }
    npy_intp dims[2] = {(npy_intp)r->rows, (npy_intp)r->k}, rows = (npy_intp)r->rows;
    PyObject *ind = PyArray_SimpleNew(2, dims, NPY_INTP);
    PyObject *cnt = PyArray_SimpleNew(1, &rows, NPY_INT32);
    if (!ind || !cnt) {
        Py_XDECREF(ind);
        Py_XDECREF(cnt);
        Py_XDECREF(shifts);
        prox_knn_result_free(r);
        return NULL;
    }
    npy_intp *to = PyArray_DATA((PyArrayObject *)ind);
    int64_t entries = r->rows * r->k;
    for (int64_t t = 0; t < entries; t++)
        to[t] = (npy_intp)r->indices[t];
    if (rows)
        memcpy(PyArray_DATA((PyArrayObject *)cnt), r->counts, (size_t)rows * sizeof(int32_t));
    double *distances = r->distances;
    r->distances = NULL; /* adopted: freed with the array (malloc, the default allocator) */
    PyObject *dist = adopt(distances, entries, entries, sizeof(double), 2, dims, NPY_FLOAT64);
    prox_knn_result_free(r);
    if (!dist) {
        Py_DECREF(ind);
        Py_DECREF(cnt);
        Py_XDECREF(shifts);
        return NULL;
    }
    return shifts ? Py_BuildValue("(NNNN)", dist, ind, cnt, shifts)
                  : Py_BuildValue("(NNN)", dist, ind, cnt);
}

static int knn_desc_of(int k, double max_radius, int threads, int include_self,
                       prox_knn_desc *d)
{
    if (check_threads(threads) < 0)
        return -1;
    *d = prox_default_knn_desc();
    d->k = k;
    d->max_radius = max_radius;
    d->threads = threads;
    d->include_self = include_self != 0;
    return 0;
}

/* The points and optional queries of a kNN call, read as arrays (the
 * matrices released on failure); *query says whether there are queries. */
static int knn_inputs(PyObject *points_obj, PyObject *queries_obj, matrix *pm, matrix *qm,
                      prox_points *points, prox_points *queries, bool *query)
{
    if (as_points(points_obj, "points", pm, points, NULL) < 0)
        return -1;
    *query = queries_obj != Py_None;
    if (*query && as_points(queries_obj, "queries", qm, queries, NULL) < 0) {
        matrix_release(pm);
        return -1;
    }
    return 0;
}

static PyObject *py_knn(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"points", "k", "queries", "max_radius", "box", "threads",
                            "include_self", NULL};
    PyObject *points_obj, *queries_obj = Py_None, *box = Py_None;
    int k, threads = 0, include_self = 0;
    double max_radius = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|OdOip", names, &points_obj, &k, &queries_obj,
                                     &max_radius, &box, &threads, &include_self))
        return NULL;
    prox_knn_desc desc;
    if (knn_desc_of(k, max_radius, threads, include_self, &desc) < 0)
        return NULL;
    matrix pm, qm = {0};
    prox_points points, queries;
    bool query;
    if (knn_inputs(points_obj, queries_obj, &pm, &qm, &points, &queries, &query) < 0)
        return NULL;
    if (parse_box(box, points.dim, desc.period) < 0) {
        matrix_release(&pm);
        matrix_release(&qm);
        return NULL;
    }
    prox_knn_result r;
    prox_knn_result_init(&r, NULL);
    prox_status status;
    Py_BEGIN_ALLOW_THREADS
    status = prox_knn(&points, query ? &queries : NULL, &desc, &r, NULL);
    Py_END_ALLOW_THREADS
    matrix_release(&pm);
    matrix_release(&qm);
    if (status)
        return raise_status(status);
    return knn_value(&r, points.dim);
}

/* _cell_knn(points, k, queries, max_radius, cell (9 floats, rows), pbc (3
 * flags), threads, include_self): prox_cell_knn's rows and shifts. */
static PyObject *py_cell_knn(PyObject *self, PyObject *args, PyObject *kw)
{
    (void)self;
    static char *names[] = {"points", "k", "queries", "max_radius", "cell", "pbc", "threads",
                            "include_self", NULL};
    PyObject *points_obj, *queries_obj = Py_None;
    int k, threads = 0, include_self = 0, pbc[3];
    double max_radius = 0.0, c[9];
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OiOd(ddddddddd)(ppp)|ip", names, &points_obj, &k,
                                     &queries_obj, &max_radius, &c[0], &c[1], &c[2], &c[3],
                                     &c[4], &c[5], &c[6], &c[7], &c[8], &pbc[0], &pbc[1],
                                     &pbc[2], &threads, &include_self))
        return NULL;
    if (check_threads(threads) < 0)
        return NULL;
    prox_cell_knn_desc desc = prox_default_cell_knn_desc();
    desc.k = k;
    desc.max_radius = max_radius;
    desc.threads = threads;
    desc.include_self = include_self != 0;
    for (int a = 0; a < 3; a++) {
        desc.pbc[a] = pbc[a] != 0;
        for (int b = 0; b < 3; b++)
            desc.cell[a][b] = c[3 * a + b];
    }
    matrix pm, qm = {0};
    prox_points points, queries;
    bool query;
    if (knn_inputs(points_obj, queries_obj, &pm, &qm, &points, &queries, &query) < 0)
        return NULL;
    prox_knn_result r;
    prox_knn_result_init(&r, NULL);
    prox_status status;
    Py_BEGIN_ALLOW_THREADS
    status = prox_cell_knn(&points, query ? &queries : NULL, &desc, &r, NULL);
    Py_END_ALLOW_THREADS
    matrix_release(&pm);
    matrix_release(&qm);
    if (status)
        return raise_status(status);
    return knn_value(&r, points.dim);
}

/* ---- KNNIndex ------------------------------------------------------------ */

typedef struct KNNObject {
    PyObject_HEAD
    prox_knn_index *index;
    int threads;
    int busy;
    prox_stats stats; /* of the last query */
} KNNObject;

static int KNN_init(KNNObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"points", "box", "k", "threads", NULL};
    PyObject *points_obj, *box = Py_None;
    int k = 16, threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Oii", names, &points_obj, &box, &k, &threads))
        return -1;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "this KNNIndex is in use by another thread");
        return -1;
    }
    prox_knn_desc desc;
    if (knn_desc_of(k, 0.0, threads, 0, &desc) < 0)
        return -1;
    matrix pm;
    prox_points points;
    if (as_points(points_obj, "points", &pm, &points, NULL) < 0)
        return -1;
    if (parse_box(box, points.dim, desc.period) < 0) {
        matrix_release(&pm);
        return -1;
    }
    prox_knn_index_destroy(self->index);
    self->index = NULL;
    self->threads = threads;
    prox_status status;
    prox_knn_index *index = NULL;
    Py_BEGIN_ALLOW_THREADS
    status = prox_knn_index_build(&points, &desc, &index);
    Py_END_ALLOW_THREADS
    matrix_release(&pm);
    if (status) {
        raise_status(status);
        return -1;
    }
    self->index = index;
    return 0;
}

static void KNN_dealloc(KNNObject *self)
{
    prox_knn_index_destroy(self->index);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *KNN_query(KNNObject *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"queries", "k", "max_radius", "threads", "include_self", NULL};
    PyObject *queries_obj = Py_None;
    int k = 1, threads = -1, include_self = 0;
    double max_radius = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oidip", names, &queries_obj, &k, &max_radius,
                                     &threads, &include_self))
        return NULL;
    if (!self->index) {
        PyErr_SetString(PyExc_RuntimeError, "this KNNIndex was not built");
        return NULL;
    }
    prox_knn_desc desc;
    if (knn_desc_of(k, max_radius, threads < 0 ? self->threads : threads, include_self, &desc) <
        0)
        return NULL;
    matrix qm = {0};
    prox_points queries;
    bool query = queries_obj != Py_None;
    if (query && as_points(queries_obj, "queries", &qm, &queries, NULL) < 0)
        return NULL;
    if (claim(&self->busy, "KNNIndex") < 0) {
        matrix_release(&qm);
        return NULL;
    }
    prox_knn_result r;
    prox_knn_result_init(&r, NULL);
    prox_status status;
    prox_stats stats;
    Py_BEGIN_ALLOW_THREADS
    status = prox_knn_index_query(self->index, query ? &queries : NULL, &desc, &r, &stats);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    matrix_release(&qm);
    if (status)
        return raise_status(status);
    self->stats = stats;
    return knn_value(&r, prox_knn_index_dim(self->index));
}

static PyObject *KNN_get_stats(KNNObject *self, void *c)
{
    (void)c;
    PyObject *d = stats_dict(&self->stats);
    if (d && self->stats.method) {
        PyObject *m = PyUnicode_FromString(self->stats.method);
        if (!m || PyDict_SetItemString(d, "method", m) < 0) {
            Py_XDECREF(m);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(m);
    }
    return d;
}

static PyObject *KNN_get_count(KNNObject *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong((long long)prox_knn_index_count(self->index));
}

static PyObject *KNN_get_dim(KNNObject *self, void *c)
{
    (void)c;
    return PyLong_FromLong(prox_knn_index_dim(self->index));
}

static PyMethodDef KNN_methods[] = {
    {"query", (PyCFunction)(void (*)(void))KNN_query, METH_VARARGS | METH_KEYWORDS,
     "query($self, /, queries=None, k=1, max_radius=0.0, threads=-1, include_self=False)\n--\n\n"
     "(distances, indices, counts) of each query's k nearest built points (queries None: the"
     " built points, each leaving itself out unless include_self)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef KNN_getset[] = {
    {"stats", (getter)KNN_get_stats, NULL, "figures of the last query (dict)", NULL},
    {"size", (getter)KNN_get_count, NULL, "number of built points", NULL},
    {"dim", (getter)KNN_get_dim, NULL, "dimension of the built points", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject KNNType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prox._prox.KNNIndex",
    .tp_basicsize = sizeof(KNNObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)KNN_init,
    .tp_doc = "KNNIndex(points, box=None, k=16, threads=0)\n--\n\n"
              "Points kept in cells for k-nearest-neighbour queries (see prox.KNNIndex).",
    .tp_dealloc = (destructor)KNN_dealloc,
    .tp_methods = KNN_methods,
    .tp_getset = KNN_getset,
};
/* ---- periodic cells of any shape --------------------------------------- */

#include "_cell_binding.c"

/* ---- module ------------------------------------------------------------ */

static PyMethodDef module_methods[] = {
    {"_search", (PyCFunction)(void (*)(void))py_search, METH_VARARGS | METH_KEYWORDS,
     "_search(points, radius, box=None, threads=0, output='pairs', queries=None, sort=True,"
     " algo='grid', keys='linear', index_dtype=None)\n--\n\nThe one-shot search behind"
     " pairs/lists/count/query."},
    {"_sized_search", (PyCFunction)(void (*)(void))py_sized_search, METH_VARARGS | METH_KEYWORDS,
     "_sized_search(points, sizes, rule='contact', box=None, threads=0, output='pairs',"
     " cutoff=None, queries=None, query_sizes=None, sort=True, algo='grid', index_dtype=None)"
     "\n--\n\nThe search with per-particle sizes behind pairs/lists/count/query(radii=, types=)."},
    {"_geometry", (PyCFunction)(void (*)(void))py_geometry, METH_VARARGS | METH_KEYWORDS,
     "_geometry(points, i, j, quantities='d', box=None, queries=None, threads=0)\n--\n\n"
     "The geometry behind pair_geometry and neighbor_list."},
    {"_rows_of", (PyCFunction)py_rows_of, METH_O, "_rows_of(offsets, /)\n--\n\nThe row of each CSR entry."},
    {"_cell_knn", (PyCFunction)(void (*)(void))py_cell_knn, METH_VARARGS | METH_KEYWORDS,
     "_cell_knn(points, k, queries, max_radius, cell, pbc, threads=0, include_self=False)\n--\n\n"
     "prox_cell_knn: (distances, indices, counts, shifts); see prox.knn(cell=...)."},
    {"_knn", (PyCFunction)(void (*)(void))py_knn, METH_VARARGS | METH_KEYWORDS,
     "_knn(points, k, queries=None, max_radius=0.0, box=None, threads=0, include_self=False)"
     "\n--\n\nThe one-shot k nearest neighbours behind knn: (distances, indices, counts)."},
    {"_cell", (PyCFunction)(void (*)(void))py_cell, METH_VARARGS | METH_KEYWORDS,
     "_cell(systems, cutoff, quantities, full=True, self_interaction=False, threads=0)\n--\n\n"
     "The image search behind neighbor_list and neighbor_lists: one tuple of arrays per"
     " (positions, cell, pbc) system."},
    {"release_memory", py_release_memory, METH_NOARGS,
     "release_memory()\n--\n\nFrees the blocks kept from earlier results (neighbor_lists "
     "and large neighbor_list results) for reuse; returns how many bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_prox", "prox's C extension (see the package prox).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__prox(void)
{
    import_array();
    if (PyType_Ready(&GridType) < 0 || PyType_Ready(&SkinType) < 0 ||
        PyType_Ready(&BroadType) < 0 || PyType_Ready(&KNNType) < 0 ||
        PyType_Ready(&SizedSkinType) < 0 || PyType_Ready(&SizedGridType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    Py_INCREF(&GridType);
    Py_INCREF(&SkinType);
    Py_INCREF(&BroadType);
    Py_INCREF(&KNNType);
    Py_INCREF(&SizedSkinType);
    Py_INCREF(&SizedGridType);
    if (PyModule_AddObject(m, "Grid", (PyObject *)&GridType) < 0 ||
        PyModule_AddObject(m, "SkinList", (PyObject *)&SkinType) < 0 ||
        PyModule_AddObject(m, "Broad", (PyObject *)&BroadType) < 0 ||
        PyModule_AddObject(m, "KNNIndex", (PyObject *)&KNNType) < 0 ||
        PyModule_AddObject(m, "SizedSkinList", (PyObject *)&SizedSkinType) < 0 ||
        PyModule_AddObject(m, "SizedGrid", (PyObject *)&SizedGridType) < 0 ||
        PyModule_AddStringConstant(m, "library_version", PROX_VERSION_STRING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

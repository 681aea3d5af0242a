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

static PyObject *cell_index_array(const prox_index *v, int64_t n)
{
    npy_intp dims[1] = {(npy_intp)n};
    PyObject *a = PyArray_SimpleNew(1, dims, NPY_INTP);
    if (!a)
        return NULL;
    npy_intp *out = (npy_intp *)PyArray_DATA((PyArrayObject *)a);
    for (int64_t k = 0; k < n; k++)
        out[k] = (npy_intp)v[k];
    return a;
}

/* The geometry's arrays come from malloc (cell_malloc), so that d and D
 * become numpy arrays without a copy: taken from the geometry, freed with
 * the array (through a capsule, its base). */
static void *cell_malloc(size_t size, void *user)
{
    (void)user;
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
    if (q == 'i')
        return cell_index_array(g->i, n);
    if (q == 'j')
        return cell_index_array(g->j, n);
    if (take && n > 0 && (q == 'd' || q == 'D')) {
        double **v = q == 'd' ? &g->d : &g->D;
        void *data = *v;
        *v = NULL;
        return cell_adopt(data, q == 'd' ? 1 : 2, dims, NPY_DOUBLE);
    }
    PyObject *a = PyArray_SimpleNew(q == 'd' ? 1 : 2, dims, q == 'S' ? NPY_INT64 : NPY_DOUBLE);
    if (!a || n == 0)
        return a;
    void *data = PyArray_DATA((PyArrayObject *)a);
    if (q == 'd')
        memcpy(data, g->d, (size_t)n * sizeof(double));
    else if (q == 'D')
        memcpy(data, g->D, (size_t)(n * dim) * sizeof(double));
    else
        for (int64_t k = 0; k < n * dim; k++)
            ((int64_t *)data)[k] = g->S[k];
    return a;
}

static PyObject *cell_value(cell_system *s, const char *quantities)
{
    Py_ssize_t n = (Py_ssize_t)strlen(quantities);
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t k = 0; t && k < n; k++) {
        char q = quantities[k];
        PyObject *a = cell_quantity(&s->out, q, strchr(quantities, q) == strrchr(quantities, q));
        if (!a) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, k, a);
    }
    return t;
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
static PyObject *cell_result(cell_system *s, Py_ssize_t k, Py_ssize_t n, const char *quantities)
{
    if (s[k].status) {
        PyObject *kind = s[k].status == PROX_ERR_NO_MEMORY ? PyExc_MemoryError : PyExc_ValueError;
        if (n > 1)
            PyErr_Format(kind, "system %zd: %s", k, s[k].error);
        else
            PyErr_SetString(kind, s[k].error);
        return NULL;
    }
    PyObject *v = cell_value(&s[k], quantities);
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
     * searched and its geometry released, so that the next search reuses
     * that memory (warm pages) instead of holding every system's at once. */
    bool one_by_one = n > 1 && cell_team(threads) == 1;
    if (!one_by_one) {
        Py_BEGIN_ALLOW_THREADS
        cell_systems_run(s, n, threads);
        Py_END_ALLOW_THREADS
    }
    PyObject *list = PyList_New(n);
    for (Py_ssize_t k = 0; list && k < n; k++) {
        if (one_by_one) {
            Py_BEGIN_ALLOW_THREADS
            cell_system_run(&s[k]);
            Py_END_ALLOW_THREADS
        }
        PyObject *v = cell_result(s, k, n, quantities);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, k, v);
    }
    cell_systems_free(s, n);
    Py_DECREF(seq);
    return list;
}

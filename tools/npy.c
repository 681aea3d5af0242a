/* npy.c: the .npy header, read and written (npy.h). The header is a
 * Python dict literal with the keys 'descr', 'fortran_order' and 'shape';
 * the reader takes the literal forms numpy writes (strings in single or
 * double quotes, True/False, a tuple of integers), in any key order, and
 * refuses any other key. */
#include "npy.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

size_t npy_header_bytes(const unsigned char *prefix, size_t len, const char *path)
{
    if (len < NPY_MIN_PREFIX || memcmp(prefix, magic, sizeof magic) != 0)
        die(EXIT_DATA, "%s: not a .npy file (no \\x93NUMPY magic at its start)", path);
    int major = prefix[6];
    if (major != 1 && major != 2 && major != 3)
        die(EXIT_DATA, "%s: .npy format version %d.%d is not supported (1.0 to 3.0)", path, major,
            prefix[7]);
    size_t fixed = major == 1 ? 10 : 12;
    if (len < fixed)
        die(EXIT_DATA, "%s: the .npy file ends inside its prefix", path);
    size_t header = major == 1 ? (size_t)prefix[8] | (size_t)prefix[9] << 8
                               : (size_t)prefix[8] | (size_t)prefix[9] << 8 |
                                     (size_t)prefix[10] << 16 | (size_t)prefix[11] << 24;
    if (header > NPY_MAX_HEADER)
        die(EXIT_DATA, "%s: .npy header of %zu bytes (at most %d are read)", path, header,
            NPY_MAX_HEADER);
    return fixed + header;
}

/* ---- the dict literal ------------------------------------------------------ */

typedef struct cursor {
    const char *p, *end;
    const char *path;
} cursor;

static _Noreturn void bad_header(const cursor *c, const char *what)
{
    die(EXIT_DATA, "%s: bad .npy header: %s", c->path, what);
}

static void skip_space(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool take(cursor *c, char ch)
{
    skip_space(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted string into out (at most size - 1 bytes kept; a byte that is not
 * printable ASCII, or a backslash, kept as '?', since messages show it). */
static void string_value(cursor *c, char *out, size_t size, const char *what)
{
    skip_space(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        bad_header(c, what);
    char quote = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != quote) {
        unsigned char ch = (unsigned char)*c->p;
        if (n + 1 < size)
            out[n++] = ch >= 0x20 && ch < 0x7f && ch != '\\' ? (char)ch : '?';
        c->p++;
    }
    if (c->p >= c->end)
        bad_header(c, "a string does not end");
    c->p++;
    out[n] = '\0';
}

static bool word(cursor *c, const char *w)
{
    size_t n = strlen(w);
    skip_space(c);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
        c->p += n;
        return true;
    }
    return false;
}

/* (d0, d1, ...): the dimensions, at most 8 kept in dims; returns how many. */
static int shape_value(cursor *c, int64_t dims[8])
{
    if (!take(c, '('))
        bad_header(c, "'shape' is not a tuple");
    int count = 0;
    while (!take(c, ')')) {
        skip_space(c);
        int64_t v = 0;
        const char *start = c->p;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                bad_header(c, "a dimension of 'shape' overflows 64 bits");
            v = 10 * v + (*c->p++ - '0');
        }
        if (c->p == start)
            bad_header(c, "'shape' holds something that is not a non-negative integer");
        if (count < 8)
            dims[count] = v;
        count++;
        if (!take(c, ',') && !(skip_space(c), c->p < c->end && *c->p == ')'))
            bad_header(c, "'shape' is not a tuple of integers");
    }
    return count;
}

typedef struct npy_fields {
    char descr[32];
    bool fortran;
    int64_t dims[8];
    int ndim;
    int seen; /* bits: 1 descr, 2 fortran_order, 4 shape */
} npy_fields;

static void read_fields(cursor *c, npy_fields *f)
{
    if (!take(c, '{'))
        bad_header(c, "it is not a dict literal");
    while (!take(c, '}')) {
        char key[32];
        string_value(c, key, sizeof key, "a key is not a string");
        if (!take(c, ':'))
            bad_header(c, "no ':' after a key");
        if (strcmp(key, "descr") == 0) {
            skip_space(c);
            if (c->p < c->end && *c->p == '[')
                die(EXIT_DATA, "%s: the .npy array has a structured dtype; prox reads plain "
                               "float64 ('<f8') or float32 ('<f4')", c->path);
            string_value(c, f->descr, sizeof f->descr, "'descr' is not a string");
            f->seen |= 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (word(c, "True"))
                f->fortran = true;
            else if (!word(c, "False"))
                bad_header(c, "'fortran_order' is neither True nor False");
            f->seen |= 2;
        } else if (strcmp(key, "shape") == 0) {
            f->ndim = shape_value(c, f->dims);
            f->seen |= 4;
        } else {
            bad_header(c, "a key other than 'descr', 'fortran_order' and 'shape'");
        }
        if (!take(c, ',') && !(skip_space(c), c->p < c->end && *c->p == '}'))
            bad_header(c, "no ',' between entries");
    }
    if (f->seen != 7)
        bad_header(c, "'descr', 'fortran_order' or 'shape' is missing");
}

static prox_scalar scalar_of(const char *descr, const char *path)
{
    if (strcmp(descr, "<f8") == 0)
        return PROX_F64;
    if (strcmp(descr, "<f4") == 0)
        return PROX_F32;
    if (descr[0] == '>' && (strcmp(descr + 1, "f8") == 0 || strcmp(descr + 1, "f4") == 0))
        die(EXIT_DATA, "%s: the .npy values are big-endian ('%s'); prox reads little-endian "
                       "'<f8' or '<f4' (numpy: a.astype('<f8'))", path, descr);
    die(EXIT_DATA, "%s: the .npy dtype '%s' is not supported; prox reads float64 ('<f8') or "
                   "float32 ('<f4')", path, descr);
}

void npy_parse(const unsigned char *data, size_t len, const char *path, npy_array *out)
{
    size_t total = npy_header_bytes(data, len, path);
    if (len < total)
        die(EXIT_DATA, "%s: the .npy file ends inside its header", path);
    size_t fixed = data[6] == 1 ? 10 : 12;
    cursor c = {(const char *)data + fixed, (const char *)data + total, path};
    npy_fields f = {{0}, false, {0}, 0, 0};
    read_fields(&c, &f);
    prox_scalar scalar = scalar_of(f.descr, path);
    if (f.fortran)
        die(EXIT_DATA, "%s: the .npy array is in Fortran order; prox reads C order "
                       "(numpy: np.ascontiguousarray(a))", path);
    if (f.ndim != 2 || f.dims[1] < 1 || f.dims[1] > 64) {
        char shape[96] = "(";
        for (int k = 0; k < f.ndim && k < 4; k++)
            snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld",
                     k ? ", " : "", (long long)f.dims[k]);
        strcat(shape, f.ndim > 4 ? ", ...)" : f.ndim == 1 ? ",)" : ")");
        die(EXIT_DATA, "%s: the .npy array's shape is %s; prox reads (rows, columns): one row "
                       "per point, box or segment", path, shape);
    }
    size_t value = scalar == PROX_F64 ? 8 : 4;
    if (f.dims[0] > INT64_MAX / (int64_t)value / f.dims[1])
        die(EXIT_DATA, "%s: the .npy shape (%lld, %lld) is too large", path,
            (long long)f.dims[0], (long long)f.dims[1]);
    *out = (npy_array){scalar, f.dims[0], (int)f.dims[1], total};
}

size_t npy_format_header(unsigned char buf[NPY_WRITTEN_MAX], prox_scalar scalar, int64_t rows,
                         int cols)
{
    char *header = (char *)buf + 10;
    int n = snprintf(header, NPY_WRITTEN_MAX - 10,
                     "{'descr': '%s', 'fortran_order': False, 'shape': (%lld, %d), }",
                     scalar == PROX_F32 ? "<f4" : "<f8", (long long)rows, cols);
    while ((10 + n + 1) % 64 != 0)
        header[n++] = ' ';
    header[n++] = '\n';
    memcpy(buf, magic, sizeof magic);
    buf[6] = 1;
    buf[7] = 0;
    buf[8] = (unsigned char)(n & 0xff);
    buf[9] = (unsigned char)(n >> 8);
    return 10 + (size_t)n;
}

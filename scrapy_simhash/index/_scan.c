/* The probe of the in-memory permutation index, in C. Mirrors: the NumPy and Python code
 * of _buckets.SortedBuckets.matches and WriteBuffer.matches, the readable twin, held equal
 * by tests/test_index_scan.py and checked against it on a sample when _buckets loads (a
 * difference switches this off with a WARNING). It runs where it was built (optional at
 * install); SIMHASH_C_PROBE=0 in the environment switches it off.
 *
 * Layout (_slices.py): for table t, bucket `key` is positions dir[t][key] ... dir[t][key+1]
 * of that table's arrays; table 0 holds the fingerprints and row ids, the others a 32-bit
 * slice of each fingerprint. A probe of a page with wildcard bits visits ~50 buckets and
 * reads them in order (a random read each cost ~12 ns at 10M rows, a row read in order ~1).
 * A row of table t > 0 whose slice is within max_distance is looked up in its table-0
 * bucket. The write buffer's buckets are dict chains (WriteBuffer), walked here too.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Bits set in x: the CPU's popcount instruction where there is one. GCC on x86-64 Linux
 * with glibc (ifunc) builds the scanning loops twice (target_clones), with and without the
 * instruction, and picks one when the module loads: the portable x86-64 baseline has none, and
 * libgcc's count, called per row, costs more than the rest of the loop. Elsewhere the
 * target's own builtin, or a branchless count. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define SCANNING_LOOP __attribute__((target_clones("popcnt", "default")))
#define popcount64(x) __builtin_popcountll(x)
#elif defined(__POPCNT__) || defined(__aarch64__)
#define SCANNING_LOOP
#define popcount64(x) __builtin_popcountll(x)
#else
#define SCANNING_LOOP
static inline int
popcount64(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ULL);
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return (int)((x * 0x0101010101010101ULL) >> 56);
}
#endif

/* An aligned, C-contiguous buffer of ints of `itemsize` bytes, of one of the type `codes`. */
static int
get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *codes, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    const char *code = view->format ? view->format : "B";
    if (code[0] == '@' || code[0] == '=' || (code[0] == '<' && PY_LITTLE_ENDIAN)) {
        code++; /* native byte order */
    }
    if (view->itemsize != itemsize || strchr(codes, code[0]) == NULL || code[0] == '\0' || code[1] != '\0'
        || (uintptr_t)view->buf % (uintptr_t)itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "%s must be an aligned array of %zd-byte ints", name, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* A Python int (or anything with __index__) as 64 unsigned bits; -1 with an exception. */
static int
as_uint64(PyObject *obj, uint64_t *value)
{
    PyObject *number = PyNumber_Index(obj);
    if (number == NULL) {
        return -1;
    }
    *value = PyLong_AsUnsignedLongLong(number);
    Py_DECREF(number);
    return *value == (uint64_t)-1 && PyErr_Occurred() ? -1 : 0;
}

/* A distance, clamped to -1 (nothing is within it) ... 64 (no wider than a fingerprint). */
static int
as_distance(PyObject *obj, int *distance)
{
    PyObject *number = PyNumber_Index(obj);
    if (number == NULL) {
        return -1;
    }
    int overflow = 0;
    long value = PyLong_AsLongAndOverflow(number, &overflow);
    Py_DECREF(number);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    *distance = overflow > 0 || value > 64 ? 64 : (overflow < 0 || value < 0 ? -1 : (int)value);
    return 0;
}

#define MAX_TERMS 64 /* _slices.MAX_TERMS */
enum { KEY_TERMS, SLICE_TERMS, TABLE0_TERMS };

/* out |= ((value >> src) & mask) << dst for each (src, mask, dst) term; a zero mask ends them. */
static inline uint64_t
gather(const uint64_t *terms, uint64_t value)
{
    uint64_t out = 0;
    for (int i = 0; i < MAX_TERMS && terms[3 * i + 1] != 0; i++) {
        out |= ((value >> (terms[3 * i] & 63)) & terms[3 * i + 1]) << (terms[3 * i + 2] & 63);
    }
    return out;
}

/* found[row] = fingerprint. */
static int
set_found(PyObject *found, Py_ssize_t row, uint64_t fingerprint)
{
    PyObject *key = PyLong_FromSsize_t(row);
    PyObject *value = PyLong_FromUnsignedLongLong(fingerprint);
    int failed = key == NULL || value == NULL || PyDict_SetItem(found, key, value) < 0;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return failed ? -1 : 0;
}

typedef struct {
    Py_ssize_t tables, width, n; /* width: buckets + 1 a table; n: rows a table */
    const uint64_t *layout;      /* (tables, 3, MAX_TERMS, 3) */
    const uint32_t *directories; /* (tables, width) */
    const uint64_t *fingerprints; /* table 0 */
    const uint32_t *rows;         /* table 0 */
    const uint32_t *slices;       /* (tables - 1, n) */
    uint64_t query, counted;
    int max_distance;
    PyObject *found;
} Probe;

static const uint64_t *
terms_of(const Probe *p, Py_ssize_t table, int kind)
{
    return p->layout + (table * 3 + kind) * MAX_TERMS * 3;
}

/* Positions start ... stop of bucket `key` of `table`; -1 with an exception if out of bounds. */
static int
bucket(const Probe *p, Py_ssize_t table, uint64_t key, uint32_t *start, uint32_t *stop)
{
    if (key >= (uint64_t)(p->width - 1)) {
        PyErr_SetString(PyExc_ValueError, "a bucket key is out of the directory");
        return -1;
    }
    const uint32_t *directory = p->directories + table * p->width;
    *start = directory[key];
    *stop = directory[key + 1];
    if (*start > *stop || (Py_ssize_t)*stop > p->n) {
        PyErr_SetString(PyExc_ValueError, "a bucket directory is not sorted");
        return -1;
    }
    return 0;
}

/* The rows of table 0's bucket `key` within max_distance outside the wildcard bits. */
SCANNING_LOOP static int
scan_table0(const Probe *p, uint64_t key)
{
    uint32_t start, stop;
    if (bucket(p, 0, key, &start, &stop) < 0) {
        return -1;
    }
    for (uint32_t i = start; i < stop; i++) {
        uint64_t fingerprint = p->fingerprints[i];
        if (popcount64((fingerprint ^ p->query) & p->counted) <= p->max_distance
            && set_found(p->found, p->rows[i], fingerprint) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The rows of bucket `key` of `table` > 0 whose slice is within max_distance, looked up in table 0. */
SCANNING_LOOP static int
scan_sliced(const Probe *p, Py_ssize_t table, uint64_t key)
{
    uint32_t start, stop;
    if (bucket(p, table, key, &start, &stop) < 0) {
        return -1;
    }
    const uint32_t *slices = p->slices + (table - 1) * p->n;
    uint32_t query = (uint32_t)gather(terms_of(p, table, SLICE_TERMS), p->query);
    uint32_t counted = (uint32_t)gather(terms_of(p, table, SLICE_TERMS), p->counted);
    for (uint32_t i = start; i < stop; i++) {
        if (popcount64((uint64_t)((slices[i] ^ query) & counted)) <= p->max_distance) {
            uint64_t combined = (key << 32) | slices[i];
            if (scan_table0(p, gather(terms_of(p, table, TABLE0_TERMS), combined)) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* Every bucket of every table the query names with any subset of its wildcard bits. (The
 * buckets' first lines prefetched a batch ahead did not help on the VM measured.) */
static int
scan_tables(const Probe *p)
{
    for (Py_ssize_t table = 0; table < p->tables; table++) {
        const uint64_t *key_terms = terms_of(p, table, KEY_TERMS);
        uint64_t base = gather(key_terms, p->query & p->counted), free_bits = gather(key_terms, ~p->counted);
        uint64_t subset = 0;
        do {
            uint64_t key = base | subset;
            if ((table == 0 ? scan_table0(p, key) : scan_sliced(p, table, key)) < 0) {
                return -1;
            }
            subset = (subset - free_bits) & free_bits; /* the next subset, in counting order */
        } while (subset != 0);
    }
    return 0;
}

/* The query's three arguments: fingerprint, wildcard, max_distance. */
static int
query_args(PyObject *const *args, uint64_t *query, uint64_t *counted, int *max_distance)
{
    uint64_t wildcard;
    if (as_uint64(args[0], query) < 0 || as_uint64(args[1], &wildcard) < 0 || as_distance(args[2], max_distance) < 0) {
        return -1;
    }
    *counted = ~wildcard;
    return 0;
}

static int
layout_tables(Py_buffer *layout, Py_ssize_t *tables)
{
    Py_ssize_t per_table = 3 * MAX_TERMS * 3 * 8;
    *tables = layout->len / per_table;
    if (*tables < 1 || *tables * per_table != layout->len) {
        PyErr_SetString(PyExc_ValueError, "layout must be (tables, 3, MAX_TERMS, 3) terms");
        return -1;
    }
    return 0;
}

static PyObject *
sorted_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "sorted_matches takes 8 arguments");
        return NULL;
    }
    Probe p = {0};
    if (query_args(args + 5, &p.query, &p.counted, &p.max_distance) < 0) {
        return NULL;
    }
    Py_buffer views[5] = {{0}};
    const char *names[5] = {"layout", "directories", "fingerprints", "rows", "slices"};
    const Py_ssize_t sizes[5] = {8, 4, 8, 4, 4};
    PyObject *found = NULL;
    for (int i = 0; i < 5; i++) {
        if (get_array(args[i], &views[i], sizes[i], "ILQ", names[i]) < 0) {
            goto done;
        }
    }
    if (layout_tables(&views[0], &p.tables) < 0) {
        goto done;
    }
    p.width = views[1].len / 4 / p.tables;
    p.n = views[2].len / 8;
    if (p.width < 2 || p.width * p.tables * 4 != views[1].len || views[3].len != p.n * 4
        || views[4].len != (p.tables - 1) * p.n * 4) {
        PyErr_SetString(PyExc_ValueError, "directories, rows and slices must have one row per table");
        goto done;
    }
    p.layout = views[0].buf;
    p.directories = views[1].buf;
    p.fingerprints = views[2].buf;
    p.rows = views[3].buf;
    p.slices = views[4].buf;
    if ((p.found = found = PyDict_New()) == NULL) {
        goto done;
    }
    if (scan_tables(&p) < 0) {
        Py_CLEAR(found);
    }
done:
    for (int i = 0; i < 5; i++) {
        PyBuffer_Release(&views[i]); /* (a view not taken has no obj: a no-op) */
    }
    return found;
}

/* The rows of a write buffer's chain from `row` (its bucket's newest) on. */
SCANNING_LOOP static int
walk_chain(PyObject *found, long long row, const long long *older, const uint64_t *fingerprints,
           Py_ssize_t first_row, Py_ssize_t count, uint64_t query, uint64_t counted, int max_distance)
{
    while (row >= 0) {
        if (row < first_row || row - first_row >= count) {
            PyErr_SetString(PyExc_IndexError, "a write buffer chain names a row it does not hold");
            return -1;
        }
        uint64_t fingerprint = fingerprints[row - first_row];
        if (popcount64((fingerprint ^ query) & counted) <= max_distance && set_found(found, row, fingerprint) < 0) {
            return -1;
        }
        row = older[row - first_row];
    }
    return 0;
}

/* One table of a write buffer: its buckets' newest rows in `newest`, each row's older one in `older`. */
static int
buffer_table(PyObject *found, const uint64_t *key_terms, PyObject *newest, const long long *older,
             const uint64_t *fingerprints, Py_ssize_t first_row, Py_ssize_t count, uint64_t query,
             uint64_t counted, int max_distance)
{
    uint64_t base = gather(key_terms, query & counted), free_bits = gather(key_terms, ~counted);
    uint64_t subset = 0;
    do {
        PyObject *key = PyLong_FromUnsignedLongLong(base | subset);
        if (key == NULL) {
            return -1;
        }
        PyObject *row = PyDict_GetItemWithError(newest, key); /* borrowed */
        Py_DECREF(key);
        if (row == NULL && PyErr_Occurred()) {
            return -1;
        }
        long long first = row == NULL ? -1 : PyLong_AsLongLong(row);
        if ((first == -1 && PyErr_Occurred())
            || walk_chain(found, first, older, fingerprints, first_row, count, query, counted, max_distance) < 0) {
            return -1;
        }
        subset = (subset - free_bits) & free_bits;
    } while (subset != 0);
    return 0;
}

static PyObject *
buffer_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "buffer_matches takes 8 arguments");
        return NULL;
    }
    PyObject *newests = args[1], *olders = args[2];
    Py_ssize_t first_row = PyNumber_AsSsize_t(args[4], PyExc_IndexError), tables;
    uint64_t query, counted;
    int max_distance;
    if ((first_row == -1 && PyErr_Occurred()) || query_args(args + 5, &query, &counted, &max_distance) < 0) {
        return NULL;
    }
    Py_buffer layout = {0}, fingerprints = {0};
    PyObject *found = NULL;
    if (get_array(args[0], &layout, 8, "LQ", "layout") < 0 || layout_tables(&layout, &tables) < 0
        || get_array(args[3], &fingerprints, 8, "LQ", "fingerprints") < 0) {
        goto done;
    }
    if (!PyTuple_Check(newests) || !PyTuple_Check(olders) || PyTuple_GET_SIZE(newests) != tables
        || PyTuple_GET_SIZE(olders) != tables) {
        PyErr_SetString(PyExc_TypeError, "newests and olders must be tuples of one a table");
        goto done;
    }
    Py_ssize_t count = fingerprints.len / 8;
    if ((found = PyDict_New()) == NULL) {
        goto done;
    }
    for (Py_ssize_t t = 0; t < tables && found != NULL; t++) {
        Py_buffer older = {0};
        PyObject *newest = PyTuple_GET_ITEM(newests, t);
        if (!PyDict_Check(newest)) {
            PyErr_SetString(PyExc_TypeError, "newests must hold dicts");
            Py_CLEAR(found);
        } else if (get_array(PyTuple_GET_ITEM(olders, t), &older, 8, "qlQ", "older") < 0
                   || older.len != fingerprints.len
                   || buffer_table(found, (const uint64_t *)layout.buf + t * 3 * MAX_TERMS * 3, newest,
                                   older.buf, fingerprints.buf, first_row, count, query, counted,
                                   max_distance) < 0) {
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_ValueError, "older must have one value a buffered row");
            }
            Py_CLEAR(found);
        }
        PyBuffer_Release(&older);
    }
done:
    PyBuffer_Release(&layout);
    PyBuffer_Release(&fingerprints);
    return found;
}

/* list-like append: the array module has no C API. */
static int
append(PyObject *array, PyObject *value)
{
    PyObject *done = PyObject_CallMethod(array, "append", "O", value);
    Py_XDECREF(done);
    return done == NULL ? -1 : 0;
}

/* One row into a write buffer: per table, its bucket's chain (older[row] = the bucket's
 * newest row before it, newest[key] = row). */
static int
buffer_row(const uint64_t *layout, Py_ssize_t tables, PyObject *newests, PyObject *olders, PyObject *row,
           uint64_t fingerprint, uint64_t *table0_key)
{
    for (Py_ssize_t t = 0; t < tables; t++) {
        PyObject *newest = PyTuple_GET_ITEM(newests, t);
        uint64_t key_value = gather(layout + t * 3 * MAX_TERMS * 3, fingerprint);
        PyObject *key = PyLong_FromUnsignedLongLong(key_value);
        if (key == NULL || !PyDict_Check(newest)) {
            Py_XDECREF(key);
            if (!PyErr_Occurred()) {
                PyErr_SetString(PyExc_TypeError, "newests must hold dicts");
            }
            return -1;
        }
        PyObject *before = PyDict_GetItemWithError(newest, key); /* borrowed */
        PyObject *none = NULL;
        if (before == NULL && !PyErr_Occurred()) {
            before = none = PyLong_FromLong(-1);
        }
        int failed = before == NULL || append(PyTuple_GET_ITEM(olders, t), before) < 0
                     || PyDict_SetItem(newest, key, row) < 0;
        Py_XDECREF(none);
        Py_DECREF(key);
        if (failed) {
            return -1;
        }
        if (t == 0) {
            *table0_key = key_value;
        }
    }
    return 0;
}

static PyObject *
buffer_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "buffer_add takes 6 arguments");
        return NULL;
    }
    PyObject *newests = args[1], *olders = args[2];
    uint64_t fingerprint, table0_key = 0;
    Py_ssize_t tables;
    if (as_uint64(args[5], &fingerprint) < 0) {
        return NULL;
    }
    Py_buffer layout = {0};
    PyObject *result = NULL;
    if (get_array(args[0], &layout, 8, "LQ", "layout") < 0 || layout_tables(&layout, &tables) < 0) {
        goto done;
    }
    if (!PyTuple_Check(newests) || !PyTuple_Check(olders) || PyTuple_GET_SIZE(newests) != tables
        || PyTuple_GET_SIZE(olders) != tables) {
        PyErr_SetString(PyExc_TypeError, "newests and olders must be tuples of one a table");
        goto done;
    }
    PyObject *value = PyLong_FromUnsignedLongLong(fingerprint);
    int failed = value == NULL || append(args[3], value) < 0;
    Py_XDECREF(value);
    if (!failed && buffer_row(layout.buf, tables, newests, olders, args[4], fingerprint, &table0_key) == 0) {
        result = PyLong_FromUnsignedLongLong(table0_key);
    }
done:
    PyBuffer_Release(&layout);
    return result;
}

static PyMethodDef methods[] = {
    {"sorted_matches", (PyCFunction)(void (*)(void))sorted_matches, METH_FASTCALL,
     "sorted_matches($module, layout, directories, fingerprints, rows, slices, fingerprint, "
     "wildcard, max_distance, /)\n--\n\n"
     "{row: fingerprint} of the sorted tables' rows within max_distance outside the wildcard bits."},
    {"buffer_matches", (PyCFunction)(void (*)(void))buffer_matches, METH_FASTCALL,
     "buffer_matches($module, layout, newests, olders, fingerprints, first_row, fingerprint, "
     "wildcard, max_distance, /)\n--\n\n"
     "{row: fingerprint} of a write buffer's rows within max_distance outside the wildcard bits."},
    {"buffer_add", (PyCFunction)(void (*)(void))buffer_add, METH_FASTCALL,
     "buffer_add($module, layout, newests, olders, fingerprints, row, fingerprint, /)\n--\n\n"
     "Append a row to a write buffer (its fingerprints and per-table chains); its table-0 key."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "The index's probe in C (see _buckets).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    return PyModule_Create(&module);
}

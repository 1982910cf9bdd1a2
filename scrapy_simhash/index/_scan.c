/* The probe of the in-memory permutation index's sorted part, in C.
 *
 * A probe of a page with wildcard bits visits ~50 buckets. In NumPy that is ~20 calls
 * (keys, offsets, ranges, a gather, two popcounts) and a Python walk of the write
 * buffer: ~60 us at 1M entries, most of a Redis check's CPU. This walks the same buckets
 * in one pass and scans a small write buffer whole: ~13 us. It is optional:
 * scrapy_simhash.index._buckets falls back to NumPy, with the same results, when it
 * was not built (no C compiler at install time).
 *
 * Layout (see _buckets.SortedBuckets): for table t, the rows of bucket `key` are
 * rows[t][directory[t][key] : directory[t][key + 1]], row ids into `fingerprints`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* Bits set in x: the CPU's popcount instruction where there is one. GCC on x86-64 Linux
 * builds the scanning loops twice (target_clones), with and without the instruction,
 * and picks one when the module loads: the portable x86-64 baseline has none, and
 * libgcc's count, called per row, costs more than the rest of the loop. Elsewhere the
 * target's own builtin, or a branchless count. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
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

/* A read-only, C-contiguous buffer of `itemsize`-byte items. */
static int
get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0) {
        return -1;
    }
    if (view->itemsize != itemsize) {
        PyErr_Format(PyExc_TypeError, "%s must hold %zd-byte items, not %zd-byte ones", name,
                     itemsize, view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* found[row] = the full distance, the popcount of `difference`. */
static int
set_distance(PyObject *found, Py_ssize_t row, uint64_t difference)
{
    PyObject *key = PyLong_FromSsize_t(row);
    PyObject *distance = PyLong_FromLong(popcount64(difference));
    int failed = key == NULL || distance == NULL || PyDict_SetItem(found, key, distance) < 0;
    Py_XDECREF(key);
    Py_XDECREF(distance);
    return failed ? -1 : 0;
}

/* found[row] = full distance, for a row within max_distance outside the wildcard bits. */
SCANNING_LOOP static int
scan_bucket(PyObject *found, const uint32_t *rows, uint32_t start, uint32_t stop,
            const uint64_t *fingerprints, Py_ssize_t n_fingerprints, uint64_t query,
            uint64_t counted, int max_distance)
{
    for (uint32_t i = start; i < stop; i++) {
        uint32_t row = rows[i];
        if ((Py_ssize_t)row >= n_fingerprints) {
            PyErr_SetString(PyExc_IndexError, "a bucket names a row past the fingerprints");
            return -1;
        }
        uint64_t difference = fingerprints[row] ^ query;
        if (popcount64(difference & counted) > max_distance) {
            continue;
        }
        if (set_distance(found, row, difference) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Every bucket of a table that `base` with any subset of `free_bits` names. */
static int
scan_table(PyObject *found, const uint32_t *directory, Py_ssize_t buckets, const uint32_t *rows,
           Py_ssize_t n_rows, uint64_t base, uint64_t free_bits, const uint64_t *fingerprints,
           Py_ssize_t n_fingerprints, uint64_t query, uint64_t counted, int max_distance)
{
    if ((base | free_bits) >= (uint64_t)buckets || (base & free_bits) != 0) {
        PyErr_SetString(PyExc_ValueError, "a bucket key is out of the directory");
        return -1;
    }
    uint64_t subset = 0;
    do {
        uint64_t key = base | subset;
        uint32_t start = directory[key], stop = directory[key + 1];
        if (start > stop || (Py_ssize_t)stop > n_rows) {
            PyErr_SetString(PyExc_ValueError, "a bucket directory is not sorted");
            return -1;
        }
        if (scan_bucket(found, rows, start, stop, fingerprints, n_fingerprints, query, counted,
                        max_distance) < 0) {
            return -1;
        }
        subset = (subset - free_bits) & free_bits; /* the next subset, in counting order */
    } while (subset != 0);
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
    PyObject *bases = args[3], *frees = args[4];
    if (!PyTuple_Check(bases) || !PyTuple_Check(frees) || PyTuple_GET_SIZE(bases) != PyTuple_GET_SIZE(frees)) {
        PyErr_SetString(PyExc_TypeError, "bases and frees must be tuples of one key per table");
        return NULL;
    }
    Py_ssize_t tables = PyTuple_GET_SIZE(bases);
    uint64_t query = PyLong_AsUnsignedLongLong(args[5]);
    uint64_t wildcard = PyLong_AsUnsignedLongLong(args[6]);
    long max_distance = PyLong_AsLong(args[7]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    max_distance = max_distance > 64 ? 64 : max_distance; /* no wider than a fingerprint */
    Py_buffer directories, rows, fingerprints;
    if (get_array(args[0], &directories, 4, "directories") < 0) {
        return NULL;
    }
    if (get_array(args[1], &rows, 4, "rows") < 0) {
        PyBuffer_Release(&directories);
        return NULL;
    }
    if (get_array(args[2], &fingerprints, 8, "fingerprints") < 0) {
        PyBuffer_Release(&directories);
        PyBuffer_Release(&rows);
        return NULL;
    }
    PyObject *found = PyDict_New();
    Py_ssize_t width = tables ? directories.len / 4 / tables : 0; /* buckets + 1 a table */
    Py_ssize_t n_rows = tables ? rows.len / 4 / tables : 0;
    if (found != NULL && tables && (width * tables * 4 != directories.len || n_rows * tables * 4 != rows.len)) {
        PyErr_SetString(PyExc_ValueError, "directories and rows must have one row per table");
        Py_CLEAR(found);
    }
    for (Py_ssize_t t = 0; found != NULL && t < tables; t++) {
        uint64_t base = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(bases, t));
        uint64_t free_bits = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(frees, t));
        if (PyErr_Occurred()
            || scan_table(found, (const uint32_t *)directories.buf + t * width, width - 1,
                          (const uint32_t *)rows.buf + t * n_rows, n_rows, base, free_bits,
                          (const uint64_t *)fingerprints.buf, fingerprints.len / 8, query,
                          ~wildcard, (int)max_distance) < 0) {
            Py_CLEAR(found);
        }
    }
    PyBuffer_Release(&directories);
    PyBuffer_Release(&rows);
    PyBuffer_Release(&fingerprints);
    return found;
}

/* The write buffer's rows (the last ones), scanned whole: no buckets. */
SCANNING_LOOP static int
scan_range(PyObject *found, const uint64_t *fingerprints, Py_ssize_t start, Py_ssize_t stop,
           uint64_t query, uint64_t counted, long max_distance)
{
    for (Py_ssize_t row = start; row < stop; row++) {
        uint64_t difference = fingerprints[row] ^ query;
        if (popcount64(difference & counted) <= max_distance && set_distance(found, row, difference) < 0) {
            return -1;
        }
    }
    return 0;
}

static PyObject *
range_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "range_matches takes 5 arguments");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    uint64_t query = PyLong_AsUnsignedLongLong(args[2]);
    uint64_t wildcard = PyLong_AsUnsignedLongLong(args[3]);
    long max_distance = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer fingerprints;
    if (get_array(args[0], &fingerprints, 8, "fingerprints") < 0) {
        return NULL;
    }
    Py_ssize_t stop = fingerprints.len / 8;
    PyObject *found = NULL;
    if (start < 0 || start > stop) {
        PyErr_SetString(PyExc_IndexError, "start is out of the fingerprints");
    } else if ((found = PyDict_New()) != NULL) {
        if (scan_range(found, (const uint64_t *)fingerprints.buf, start, stop, query, ~wildcard,
                       max_distance) < 0) {
            Py_CLEAR(found);
        }
    }
    PyBuffer_Release(&fingerprints);
    return found;
}

static PyMethodDef methods[] = {
    {"sorted_matches", (PyCFunction)(void (*)(void))sorted_matches, METH_FASTCALL,
     "sorted_matches(directories, rows, fingerprints, bases, frees, fingerprint, wildcard, "
     "max_distance)\n--\n\n"
     "{row: full distance} of the rows in the buckets the probe visits (per table, base "
     "with any subset of the free bits) within max_distance outside the wildcard bits."},
    {"range_matches", (PyCFunction)(void (*)(void))range_matches, METH_FASTCALL,
     "range_matches(fingerprints, start, fingerprint, wildcard, max_distance)\n--\n\n"
     "{row: full distance} of the rows start... of fingerprints within max_distance "
     "outside the wildcard bits."},
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

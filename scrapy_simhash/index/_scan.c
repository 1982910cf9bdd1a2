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

/* An aligned, C-contiguous buffer of unsigned ints of `itemsize` bytes ("I", "L", "Q"). */
static int
get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    const char *code = view->format ? view->format : "B";
    if (code[0] == '@' || code[0] == '=' || (code[0] == '<' && PY_LITTLE_ENDIAN)) {
        code++; /* native byte order */
    }
    if (view->itemsize != itemsize || strchr("ILQ", code[0]) == NULL || code[0] == '\0' || code[1] != '\0'
        || (uintptr_t)view->buf % (uintptr_t)itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "%s must be an aligned array of %zd-byte unsigned ints", name,
                     itemsize);
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
        if (popcount64(difference & counted) <= max_distance && set_distance(found, row, difference) < 0) {
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
    if (buckets < 1 || (base | free_bits) >= (uint64_t)buckets || (base & free_bits) != 0) {
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
    uint64_t query, wildcard;
    int max_distance;
    if (as_uint64(args[5], &query) < 0 || as_uint64(args[6], &wildcard) < 0
        || as_distance(args[7], &max_distance) < 0) {
        return NULL;
    }
    Py_buffer directories = {0}, rows = {0}, fingerprints = {0};
    PyObject *found = NULL;
    if (get_array(args[0], &directories, 4, "directories") < 0) {
        return NULL;
    }
    if (get_array(args[1], &rows, 4, "rows") < 0) {
        goto done;
    }
    if (get_array(args[2], &fingerprints, 8, "fingerprints") < 0) {
        goto done;
    }
    Py_ssize_t width = tables ? directories.len / 4 / tables : 0; /* buckets + 1 a table */
    Py_ssize_t n_rows = tables ? rows.len / 4 / tables : 0;
    if (tables && (width * tables * 4 != directories.len || n_rows * tables * 4 != rows.len)) {
        PyErr_SetString(PyExc_ValueError, "directories and rows must have one row per table");
        goto done;
    }
    if ((found = PyDict_New()) == NULL) {
        goto done;
    }
    for (Py_ssize_t t = 0; t < tables; t++) {
        uint64_t base, free_bits;
        if (as_uint64(PyTuple_GET_ITEM(bases, t), &base) < 0 || as_uint64(PyTuple_GET_ITEM(frees, t), &free_bits) < 0
            || scan_table(found, (const uint32_t *)directories.buf + t * width, width - 1,
                          (const uint32_t *)rows.buf + t * n_rows, n_rows, base, free_bits,
                          (const uint64_t *)fingerprints.buf, fingerprints.len / 8, query,
                          ~wildcard, max_distance) < 0) {
            Py_CLEAR(found);
            break;
        }
    }
done:
    PyBuffer_Release(&directories); /* (a view not taken, or released, has no obj: a no-op) */
    PyBuffer_Release(&rows);
    PyBuffer_Release(&fingerprints);
    return found;
}

/* The write buffer's rows, scanned whole: no buckets. */
SCANNING_LOOP static int
scan_range(PyObject *found, const uint64_t *fingerprints, Py_ssize_t start, Py_ssize_t stop,
           uint64_t query, uint64_t counted, int max_distance)
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
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "range_matches takes 6 arguments");
        return NULL;
    }
    Py_ssize_t start = PyNumber_AsSsize_t(args[1], PyExc_IndexError);
    if (start == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t stop = PyNumber_AsSsize_t(args[2], PyExc_IndexError);
    if (stop == -1 && PyErr_Occurred()) {
        return NULL;
    }
    uint64_t query, wildcard;
    int max_distance;
    if (as_uint64(args[3], &query) < 0 || as_uint64(args[4], &wildcard) < 0
        || as_distance(args[5], &max_distance) < 0) {
        return NULL;
    }
    Py_buffer fingerprints;
    if (get_array(args[0], &fingerprints, 8, "fingerprints") < 0) {
        return NULL;
    }
    PyObject *found = NULL;
    if (start < 0 || start > stop || stop > fingerprints.len / 8) {
        PyErr_SetString(PyExc_IndexError, "rows start ... stop are not all in the fingerprints");
    } else if ((found = PyDict_New()) != NULL
               && scan_range(found, (const uint64_t *)fingerprints.buf, start, stop, query, ~wildcard,
                             max_distance) < 0) {
        Py_CLEAR(found);
    }
    PyBuffer_Release(&fingerprints);
    return found;
}

static PyMethodDef methods[] = {
    {"sorted_matches", (PyCFunction)(void (*)(void))sorted_matches, METH_FASTCALL,
     "sorted_matches($module, directories, rows, fingerprints, bases, frees, fingerprint, "
     "wildcard, max_distance, /)\n--\n\n"
     "{row: full distance} of the rows in the buckets the probe visits (per table, base "
     "with any subset of the free bits) within max_distance outside the wildcard bits."},
    {"range_matches", (PyCFunction)(void (*)(void))range_matches, METH_FASTCALL,
     "range_matches($module, fingerprints, start, stop, fingerprint, wildcard, max_distance, /)"
     "\n--\n\n"
     "{row: full distance} of the rows start ... stop - 1 of fingerprints within max_distance "
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

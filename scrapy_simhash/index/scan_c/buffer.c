/* The write buffer in C: its probe (dict chains of the newest rows) and its insert. */
#include "scan.h"

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
        if (popcount64((fingerprint ^ query) & counted) <= max_distance && scan_set_found(found, row, fingerprint) < 0) {
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

PyObject *
scan_buffer_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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
    if ((first_row == -1 && PyErr_Occurred()) || scan_query_args(args + 5, &query, &counted, &max_distance) < 0) {
        return NULL;
    }
    Py_buffer layout = {0}, fingerprints = {0};
    PyObject *found = NULL;
    if (scan_get_array(args[0], &layout, 8, "LQ", "layout") < 0 || scan_layout_tables(&layout, &tables) < 0
        || scan_get_array(args[3], &fingerprints, 8, "LQ", "fingerprints") < 0) {
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
        } else if (scan_get_array(PyTuple_GET_ITEM(olders, t), &older, 8, "qlQ", "older") < 0
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

PyObject *
scan_buffer_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "buffer_add takes 6 arguments");
        return NULL;
    }
    PyObject *newests = args[1], *olders = args[2];
    uint64_t fingerprint, table0_key = 0;
    Py_ssize_t tables;
    if (scan_as_uint64(args[5], &fingerprint) < 0) {
        return NULL;
    }
    Py_buffer layout = {0};
    PyObject *result = NULL;
    if (scan_get_array(args[0], &layout, 8, "LQ", "layout") < 0 || scan_layout_tables(&layout, &tables) < 0) {
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


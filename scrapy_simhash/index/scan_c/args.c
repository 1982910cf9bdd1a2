/* The index probe's arguments (aligned int arrays, 64-bit ints, distances) and results. */
#include "scan.h"

/* An aligned, C-contiguous buffer of ints of `itemsize` bytes, of one of the type `codes`
 * (`flags`: PyBUF_WRITABLE for one written to, or 0). */
int
scan_get_array_flags(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *codes, const char *name,
                     int flags)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | flags) < 0) {
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

int
scan_get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *codes, const char *name)
{
    return scan_get_array_flags(obj, view, itemsize, codes, name, 0);
}

/* An aligned, C-contiguous buffer of unsigned ints of 2 or 4 bytes. */
int
scan_get_uint_array(PyObject *obj, Py_buffer *view, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    int narrow = view->itemsize == 2;
    PyBuffer_Release(view);
    return scan_get_array(obj, view, narrow ? 2 : 4, narrow ? "H" : "I", name);
}

/* args[0 ... count - 1] as the arrays `specs` name, the first the layout: its tables into `tables`. */
int
scan_get_arrays(PyObject *const *args, Py_buffer *views, int count, const ArraySpec *specs, Py_ssize_t *tables)
{
    for (int i = 0; i < count; i++) {
        const ArraySpec *spec = &specs[i];
        if ((spec->itemsize
                 ? scan_get_array_flags(args[i], &views[i], spec->itemsize, spec->codes, spec->name, spec->flags)
                 : scan_get_uint_array(args[i], &views[i], spec->name)) < 0) {
            return -1;
        }
    }
    return scan_layout_tables(&views[0], tables);
}

/* A Python int (or anything with __index__) as 64 unsigned bits; -1 with an exception. */
int
scan_as_uint64(PyObject *obj, uint64_t *value)
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
scan_as_distance(PyObject *obj, int *distance)
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

/* found[row] = fingerprint. */
int
scan_set_found(PyObject *found, Py_ssize_t row, uint64_t fingerprint)
{
    PyObject *key = PyLong_FromSsize_t(row);
    PyObject *value = PyLong_FromUnsignedLongLong(fingerprint);
    int failed = key == NULL || value == NULL || PyDict_SetItem(found, key, value) < 0;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return failed ? -1 : 0;
}

/* The query's three arguments: fingerprint, wildcard, max_distance. */
int
scan_query_args(PyObject *const *args, uint64_t *query, uint64_t *counted, int *max_distance)
{
    uint64_t wildcard;
    if (scan_as_uint64(args[0], query) < 0 || scan_as_uint64(args[1], &wildcard) < 0 || scan_as_distance(args[2], max_distance) < 0) {
        return -1;
    }
    *counted = ~wildcard;
    return 0;
}

int
scan_layout_tables(Py_buffer *layout, Py_ssize_t *tables)
{
    Py_ssize_t per_table = 3 * MAX_TERMS * 3 * 8;
    *tables = layout->len / per_table;
    if (*tables < 1 || *tables * per_table != layout->len) {
        PyErr_SetString(PyExc_ValueError, "layout must be (tables, 3, MAX_TERMS, 3) terms");
        return -1;
    }
    return 0;
}


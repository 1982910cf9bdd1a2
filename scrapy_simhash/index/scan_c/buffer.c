/* The write buffer in C (_write_buffer.WriteBuffer): its probe and its insert, on its
 * arrays in place. Per table, newest[slot] is the newest row of a slot (a bucket key's low
 * bits) and older[row] the row before it in that slot, -1 ending a chain. */
#include "scan.h"

typedef struct {
    Py_ssize_t tables, slots, capacity, count;
    const uint64_t *layout; /* (tables, 3, MAX_TERMS, 3) */
    int32_t *newest;        /* (tables, slots) */
    int32_t *older;         /* (tables, capacity) */
    uint64_t *fingerprints; /* (capacity) */
} Buffer;

/* The buffer's four arrays (args[0..3]) and its row count (args[4]) into `b`. */
static int
buffer_views(Buffer *b, PyObject *const *args, Py_buffer views[4], int writable)
{
    int flags = writable ? PyBUF_WRITABLE : 0;
    const ArraySpec specs[4] = {
        {"layout", 8, "LQ", 0}, {"newest", 4, "i", flags}, {"older", 4, "i", flags}, {"fingerprints", 8, "LQ", flags},
    };
    Py_ssize_t tables, count;
    if (scan_get_arrays(args, views, 4, specs, &tables) < 0
        || ((count = PyNumber_AsSsize_t(args[4], PyExc_OverflowError)) == -1 && PyErr_Occurred())) {
        return -1;
    }
    *b = (Buffer){tables, views[1].len / 4 / tables, views[3].len / 8, count,
                  views[0].buf, views[1].buf, views[2].buf, views[3].buf};
    int fit = b->slots >= 1 && (b->slots & (b->slots - 1)) == 0 && b->slots * tables * 4 == views[1].len
              && views[2].len == tables * b->capacity * 4 && count >= 0 && count <= b->capacity;
    if (!fit) {
        PyErr_SetString(PyExc_ValueError,
                        "newest must have 2**bits slots a table, older one row a table per fingerprint");
    }
    return fit ? 0 : -1;
}

/* The rows of the chain from `at` on within max_distance, into found (first_row + at: fingerprint). */
SCANNING_LOOP static int
walk_chain(const Buffer *b, PyObject *found, const int32_t *older, int32_t at, Py_ssize_t first_row,
           uint64_t query, uint64_t counted, int max_distance)
{
    for (int32_t newer = (int32_t)b->count; at >= 0; newer = at, at = older[at]) {
        if (at >= newer) { /* (rows are chained newest first: this also ends every walk) */
            PyErr_SetString(PyExc_IndexError, "a write buffer chain names a row it does not hold");
            return -1;
        }
        uint64_t fingerprint = b->fingerprints[at];
        if (popcount64((fingerprint ^ query) & counted) <= max_distance
            && scan_set_found(found, first_row + at, fingerprint) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Every slot the query names in each table, with any subset of its wildcard bits. */
static int
buffer_probe(const Buffer *b, PyObject *found, Py_ssize_t first_row, uint64_t query, uint64_t counted, int max_distance)
{
    for (Py_ssize_t t = 0; t < b->tables; t++) {
        const uint64_t *key_terms = b->layout + t * 3 * MAX_TERMS * 3;
        const int32_t *newest = b->newest + t * b->slots, *older = b->older + t * b->capacity;
        uint64_t base = gather(key_terms, query & counted), free_bits = gather(key_terms, ~counted);
        uint64_t subset = 0;
        do {
            int32_t at = newest[(base | subset) & (uint64_t)(b->slots - 1)];
            if (walk_chain(b, found, older, at, first_row, query, counted, max_distance) < 0) {
                return -1;
            }
            subset = (subset - free_bits) & free_bits;
        } while (subset != 0);
    }
    return 0;
}

PyObject *
scan_buffer_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "buffer_matches takes 9 arguments");
        return NULL;
    }
    Buffer b;
    Py_buffer views[4] = {{0}};
    PyObject *found = NULL;
    uint64_t query, counted;
    int max_distance;
    Py_ssize_t first_row = PyNumber_AsSsize_t(args[5], PyExc_OverflowError);
    if ((first_row != -1 || !PyErr_Occurred()) && scan_query_args(args + 6, &query, &counted, &max_distance) == 0
        && buffer_views(&b, args, views, 0) == 0 && (found = PyDict_New()) != NULL
        && buffer_probe(&b, found, first_row, query, counted, max_distance) < 0) {
        Py_CLEAR(found);
    }
    for (int i = 0; i < 4; i++) {
        PyBuffer_Release(&views[i]);
    }
    return found;
}

/* Row `count` (fingerprint args[5]) at the head of its slot in every table; its table-0 key. */
PyObject *
scan_buffer_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "buffer_add takes 6 arguments");
        return NULL;
    }
    Buffer b;
    Py_buffer views[4] = {{0}};
    PyObject *result = NULL;
    uint64_t fingerprint;
    if (scan_as_uint64(args[5], &fingerprint) == 0 && buffer_views(&b, args, views, 1) == 0) {
        if (b.count >= b.capacity || b.count > INT32_MAX - 1) {
            PyErr_SetString(PyExc_IndexError, "the write buffer is full");
        } else {
            uint64_t table0_key = 0;
            for (Py_ssize_t t = 0; t < b.tables; t++) {
                uint64_t key = gather(b.layout + t * 3 * MAX_TERMS * 3, fingerprint);
                int32_t *slot = b.newest + t * b.slots + (key & (uint64_t)(b.slots - 1));
                b.older[t * b.capacity + b.count] = *slot;
                *slot = (int32_t)b.count;
                table0_key = t == 0 ? key : table0_key;
            }
            b.fingerprints[b.count] = fingerprint;
            result = PyLong_FromUnsignedLongLong(table0_key);
        }
    }
    for (int i = 0; i < 4; i++) {
        PyBuffer_Release(&views[i]);
    }
    return result;
}

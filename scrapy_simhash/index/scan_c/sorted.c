/* The sorted tables' probe: every bucket the query names in each table, read in order. */
#include "scan.h"

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
            && scan_set_found(p->found, p->rows[i], fingerprint) < 0) {
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

PyObject *
scan_sorted_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "sorted_matches takes 8 arguments");
        return NULL;
    }
    Probe p = {0};
    if (scan_query_args(args + 5, &p.query, &p.counted, &p.max_distance) < 0) {
        return NULL;
    }
    Py_buffer views[5] = {{0}};
    const char *names[5] = {"layout", "directories", "fingerprints", "rows", "slices"};
    const Py_ssize_t sizes[5] = {8, 4, 8, 4, 4};
    PyObject *found = NULL;
    for (int i = 0; i < 5; i++) {
        if (scan_get_array(args[i], &views[i], sizes[i], "ILQ", names[i]) < 0) {
            goto done;
        }
    }
    if (scan_layout_tables(&views[0], &p.tables) < 0) {
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


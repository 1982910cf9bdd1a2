/* The sorted tables' probe: every bucket the query names in each table, read in order.
 *
 * A check of the default design with 14 wildcard bits visits ~48 buckets in 4 tables; at
 * 10M rows each is ~150 rows (600 bytes of slices) somewhere in 220 MB. Read one after the
 * other, each bucket cost two dependent cache misses (its directory entry, then its first
 * lines) before the hardware prefetcher took over. So the buckets are planned a batch at a
 * time (plan.c: their directory entries prefetched, then read), and a prefetch cursor runs
 * PREFETCH_AHEAD bytes ahead of the scan over all the batch's slices, so that the misses
 * overlap; the table-0 buckets that rows of the other tables must be looked up in are read
 * last, as a batch of their own. Rows are filtered a block at a time with vector
 * instructions (filter.h). */
#include "plan.h"
#include "filter.h"

/* The fingerprint of table 0's row at position `at`, in bucket `key`: key, slice and tail. */
ALWAYS_INLINE uint64_t
table0_fingerprint(const Probe *p, uint64_t key, uint32_t at)
{
    uint64_t tail = p->tail_size == 2 ? ((const uint16_t *)p->tails)[at] : ((const uint32_t *)p->tails)[at];
    return (key << (64 - p->prefix_bits)) | ((uint64_t)p->slices[at] << (32 - p->prefix_bits)) | tail;
}

/* The rows of table 0's bucket `key` (positions start ... stop) within max_distance
 * outside the wildcard bits: those whose slice is, checked whole. */
ALWAYS_INLINE int
scan_table0(const Probe *p, uint64_t key, uint32_t start, uint32_t stop, Ahead *ahead)
{
    for (uint32_t i = start; i < stop; i += FILTER_BLOCK) {
        uint32_t count = stop - i < FILTER_BLOCK ? stop - i : FILTER_BLOCK;
        if (ahead != NULL) {
            ahead_run(ahead, count * 4);
        }
        uint64_t close = close32(p->slices + i, count, p->slice_query0, p->slice_counted0, p->max_distance);
        for (; close != 0; close &= close - 1) { /* (rare: the rows within k, and ~1 in 10^4 others) */
            uint32_t at = i + (uint32_t)__builtin_ctzll(close);
            uint64_t fingerprint = table0_fingerprint(p, key, at);
            if (popcount64((fingerprint ^ p->query) & p->counted) <= p->max_distance
                && scan_set_found(p->found, p->rows[at], fingerprint) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* Table-0 buckets to look rows of the other tables up in, gathered while those are scanned
 * and then read together, prefetched: one at a time, each cost a bucket of misses (~4 a
 * check at 100M rows, ~2 us each; the C probe took 48.4 us a check with them, 39.3 without). */
typedef struct {
    uint64_t keys[VISITS];
    int count;
} Lookups;

/* Look table 0's bucket `key` up later (now if `lookups` is full). */
ALWAYS_INLINE int
look_up(const Probe *p, Lookups *lookups, uint64_t key)
{
    for (int i = 0; i < lookups->count; i++) {
        if (lookups->keys[i] == key) {
            return 0;
        }
    }
    if (lookups->count < VISITS) {
        lookups->keys[lookups->count++] = key;
        return 0;
    }
    uint32_t start, stop;
    return scan_bucket(p, 0, key, &start, &stop) < 0 ? -1 : scan_table0(p, key, start, stop, NULL);
}

/* The rows of a visit to a table > 0 whose slice is within max_distance, to look up in
 * their table-0 bucket. */
ALWAYS_INLINE int
scan_slices(const Probe *p, const Visit *visit, Ahead *ahead, Lookups *lookups)
{
    const uint32_t *slices = p->slices + visit->table * p->n;
    const uint64_t *table0_terms = terms_of(p, visit->table, TABLE0_TERMS);
    for (uint32_t i = visit->start; i < visit->stop; i += FILTER_BLOCK) {
        uint32_t count = visit->stop - i < FILTER_BLOCK ? visit->stop - i : FILTER_BLOCK;
        ahead_run(ahead, count * 4);
        uint64_t close = close32(slices + i, count, visit->slice_query, visit->slice_counted, p->max_distance);
        for (; close != 0; close &= close - 1) { /* (rare, as in table 0) */
            uint64_t combined = (visit->key << 32) | slices[i + (uint32_t)__builtin_ctzll(close)];
            if (look_up(p, lookups, gather(table0_terms, combined)) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* Scan the planned visits, the prefetch cursor PREFETCH_AHEAD bytes in front. */
SCANNING_LOOP static int
scan_visits(const Probe *p, const Visit *visits, int count, Lookups *lookups)
{
    Ahead ahead = ahead_start(visits, count);
    for (int v = 0; v < count; v++) {
        const Visit *visit = &visits[v];
        if ((visit->table == 0 ? scan_table0(p, visit->key, visit->start, visit->stop, &ahead)
                               : scan_slices(p, visit, &ahead, lookups)) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Every bucket of every table the query names with any subset of its wildcard bits, then
 * the table-0 buckets of the rows the other tables let through. */
static int
scan_tables(const Probe *p)
{
    Visit visits[VISITS];
    Lookups lookups = {.count = 0};
    Planner planner = planner_start(p);
    int count;
    while ((count = plan_visits(p, &planner, visits)) > 0) {
        if (scan_visits(p, visits, count, &lookups) < 0) {
            return -1;
        }
    }
    if (count < 0 || (count = plan_table0(p, lookups.keys, lookups.count, visits)) < 0) {
        return -1;
    }
    return scan_visits(p, visits, count, &lookups);
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
    PyObject *found = NULL;
    if (probe_views(&p, args, views) == 0 && (p.found = found = PyDict_New()) != NULL && scan_tables(&p) < 0) {
        Py_CLEAR(found);
    }
    for (int i = 0; i < 5; i++) {
        PyBuffer_Release(&views[i]); /* (a view not taken has no obj: a no-op) */
    }
    return found;
}

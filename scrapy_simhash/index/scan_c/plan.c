/* The sorted tables' probe (sorted.c): its arguments, and the buckets it visits planned a
 * batch at a time, their directory entries prefetched before any is read. */
#include "plan.h"

/* The probe's five arrays (layout, directories, fingerprints, rows, slices) into `p`. */
int
probe_views(Probe *p, PyObject *const *args, Py_buffer views[5])
{
    const char *names[5] = {"layout", "directories", "fingerprints", "rows", "slices"};
    const Py_ssize_t sizes[5] = {8, 4, 8, 4, 4};
    for (int i = 0; i < 5; i++) {
        if (scan_get_array(args[i], &views[i], sizes[i], "ILQ", names[i]) < 0) {
            return -1;
        }
    }
    if (scan_layout_tables(&views[0], &p->tables) < 0) {
        return -1;
    }
    p->width = views[1].len / 4 / p->tables;
    p->n = views[2].len / 8;
    if (p->width < 2 || p->width * p->tables * 4 != views[1].len || views[3].len != p->n * 4
        || views[4].len != (p->tables - 1) * p->n * 4) {
        PyErr_SetString(PyExc_ValueError, "directories, rows and slices must have one row per table");
        return -1;
    }
    p->layout = views[0].buf;
    p->directories = views[1].buf;
    p->fingerprints = views[2].buf;
    p->rows = views[3].buf;
    p->slices = views[4].buf;
    return 0;
}

static int
check_key(const Probe *p, uint64_t key)
{
    if (key >= (uint64_t)(p->width - 1)) {
        PyErr_SetString(PyExc_ValueError, "a bucket key is out of the directory");
        return -1;
    }
    return 0;
}

static int
check_bucket(const Probe *p, uint32_t start, uint32_t stop)
{
    if (start > stop || (Py_ssize_t)stop > p->n) {
        PyErr_SetString(PyExc_ValueError, "a bucket directory is not sorted");
        return -1;
    }
    return 0;
}

/* Positions start ... stop of bucket `key` of `table`; -1 with an exception if out of bounds. */
int
scan_bucket(const Probe *p, Py_ssize_t table, uint64_t key, uint32_t *start, uint32_t *stop)
{
    if (check_key(p, key) < 0) {
        return -1;
    }
    const uint32_t *directory = p->directories + table * p->width;
    *start = directory[key];
    *stop = directory[key + 1];
    return check_bucket(p, *start, *stop);
}

/* The planner at the first subset of `table` (the query's key there, its slice). */
static void
planner_at(const Probe *p, Planner *planner, Py_ssize_t table)
{
    planner->table = table;
    planner->subset = 0;
    if (table < p->tables) {
        const uint64_t *key_terms = terms_of(p, table, KEY_TERMS);
        planner->base = gather(key_terms, p->query & p->counted);
        planner->free_bits = gather(key_terms, ~p->counted);
        planner->slice_query = (uint32_t)gather(terms_of(p, table, SLICE_TERMS), p->query);
        planner->slice_counted = (uint32_t)gather(terms_of(p, table, SLICE_TERMS), p->counted);
    }
}

Planner
planner_start(const Probe *p)
{
    Planner planner;
    planner_at(p, &planner, 0);
    return planner;
}

/* The next (up to VISITS) buckets, in table order and each table's subsets in counting
 * order: how many (0 when none is left), or -1 with an exception. */
int
plan_visits(const Probe *p, Planner *planner, Visit visits[VISITS])
{
    int count = 0;
    for (; count < VISITS && planner->table < p->tables; count++) {
        Visit *visit = &visits[count];
        visit->table = planner->table;
        visit->key = planner->base | planner->subset;
        visit->slice_query = planner->slice_query;
        visit->slice_counted = planner->slice_counted;
        if (check_key(p, visit->key) < 0) {
            return -1;
        }
        __builtin_prefetch(p->directories + visit->table * p->width + visit->key);
        planner->subset = (planner->subset - planner->free_bits) & planner->free_bits; /* the next subset */
        if (planner->subset == 0) {
            planner_at(p, planner, planner->table + 1);
        }
    }
    for (int v = 0; v < count; v++) { /* (the directory lines all requested above) */
        Visit *visit = &visits[v];
        const uint32_t *entry = p->directories + visit->table * p->width + visit->key;
        visit->start = entry[0];
        visit->stop = entry[1];
        if (check_bucket(p, visit->start, visit->stop) < 0) {
            return -1;
        }
        const char *values = visit->table == 0 ? (const char *)(p->fingerprints + visit->start)
                                               : (const char *)(p->slices + (visit->table - 1) * p->n + visit->start);
        visit->begin = values;
        visit->end = values + (size_t)(visit->stop - visit->start) * (visit->table == 0 ? 8 : 4);
    }
    return count;
}

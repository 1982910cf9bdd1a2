/* The sorted tables' probe (sorted.c): its arguments, and the buckets it visits planned a
 * batch at a time, their directory entries prefetched before any is read. */
#include "plan.h"

/* The bits of the bucket keys of directories `width` entries wide (2**bits + 1), or -1. */
static int
prefix_bits_of(Py_ssize_t width)
{
    for (int bits = 1; bits <= 32; bits++) {
        if (width == ((Py_ssize_t)1 << bits) + 1) {
            return bits;
        }
    }
    return -1;
}

/* The probe's five arrays (layout, directories, slices, tails, rows) into `p`. */
int
probe_views(Probe *p, PyObject *const *args, Py_buffer views[5])
{
    static const ArraySpec specs[5] = {
        {"layout", 8, "LQ", 0}, {"directories", 4, "I", 0}, {"slices", 4, "I", 0}, {"tails", 0, NULL, 0},
        {"rows", 4, "I", 0},
    };
    if (scan_get_arrays(args, views, 5, specs, &p->tables) < 0) {
        return -1;
    }
    p->width = views[1].len / 4 / p->tables;
    p->n = views[4].len / 4;
    p->prefix_bits = prefix_bits_of(p->width);
    p->tail_size = (int)views[3].itemsize;
    if (p->prefix_bits < 0 || p->width * p->tables * 4 != views[1].len || views[2].len != p->tables * p->n * 4
        || views[3].len != p->n * p->tail_size || p->tail_size != (32 - p->prefix_bits <= 16 ? 2 : 4)) {
        PyErr_SetString(PyExc_ValueError,
                        "directories (2**bits + 1 a table), slices, tails and rows must fit one another");
        return -1;
    }
    p->layout = views[0].buf;
    p->directories = views[1].buf;
    p->slices = views[2].buf;
    p->tails = views[3].buf;
    p->rows = views[4].buf;
    p->slice_query0 = (uint32_t)gather(terms_of(p, 0, SLICE_TERMS), p->query);
    p->slice_counted0 = (uint32_t)gather(terms_of(p, 0, SLICE_TERMS), p->counted);
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

/* Where the `count` visits' buckets are (positions and bytes), from their directory
 * entries (all requested before): `count`, or -1 with an exception. */
static int
locate_visits(const Probe *p, Visit *visits, int count)
{
    for (int v = 0; v < count; v++) {
        Visit *visit = &visits[v];
        const uint32_t *entry = p->directories + visit->table * p->width + visit->key;
        visit->start = entry[0];
        visit->stop = entry[1];
        if (check_bucket(p, visit->start, visit->stop) < 0) {
            return -1;
        }
        const uint32_t *slices = p->slices + visit->table * p->n;
        visit->begin = (const char *)(slices + visit->start);
        visit->end = (const char *)(slices + visit->stop);
    }
    return count;
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
    return locate_visits(p, visits, count);
}

/* Visits to table 0's buckets `keys` (`count` <= VISITS), their directory entries prefetched. */
int
plan_table0(const Probe *p, const uint64_t *keys, int count, Visit visits[VISITS])
{
    for (int v = 0; v < count; v++) {
        Visit visit = {.table = 0, .key = keys[v], .slice_query = p->slice_query0, .slice_counted = p->slice_counted0};
        if (check_key(p, keys[v]) < 0) {
            return -1;
        }
        __builtin_prefetch(p->directories + keys[v]);
        visits[v] = visit;
    }
    return locate_visits(p, visits, count);
}

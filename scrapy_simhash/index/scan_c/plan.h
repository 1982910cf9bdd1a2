/* The sorted tables' probe (sorted.c): its arguments, the buckets it plans to visit a batch
 * at a time (plan.c), and the prefetch cursor that runs ahead of the scan over them. */
#ifndef SIMHASH_PLAN_H
#define SIMHASH_PLAN_H

#include "scan.h"

/* Buckets planned at once: ~48 for a check of the default design with 14 wildcard bits. */
#define VISITS 64
/* How far the prefetch cursor runs ahead of the scan, in bytes. Measured at 10M rows, 14
 * wildcard bits (C probe alone, CPU time, p50): 22.0 us with none, 20.0 at 512, 16.3 at 1K,
 * 12.3 at 2K, 12.2 at 4K, 13.1 at 8K; prefetching into L2 rather than L1 made no difference. */
#define PREFETCH_AHEAD 3072
#define LINE 64

typedef struct {
    Py_ssize_t tables, width, n; /* width: buckets + 1 a table; n: rows a table */
    int prefix_bits, tail_size;  /* the bucket keys' bits; the bytes of a tail (2 or 4) */
    const uint64_t *layout;      /* (tables, 3, MAX_TERMS, 3) */
    const uint32_t *directories; /* (tables, width) */
    const uint32_t *slices;      /* (tables, n) */
    const void *tails;           /* table 0's (n): the fingerprint bits below its slices */
    const uint32_t *rows;        /* table 0's (n) */
    uint64_t query, counted;
    uint32_t slice_query0, slice_counted0; /* the query's table-0 slice and its counted bits */
    int max_distance;
    PyObject *found;
} Probe;

/* One bucket to read: positions start ... stop of `table`, bytes begin ... end of its values. */
typedef struct {
    Py_ssize_t table;
    uint64_t key;
    uint32_t start, stop;
    const char *begin, *end;
    uint32_t slice_query, slice_counted; /* the query's slice and counted bits (table > 0) */
} Visit;

/* Where plan_visits is: a table, and the next subset of its free (wildcard) key bits. */
typedef struct {
    Py_ssize_t table;
    uint64_t base, free_bits, subset;
    uint32_t slice_query, slice_counted;
} Planner;

/* The prefetch cursor: the next line to prefetch, in visit `visit` of `visits`. */
typedef struct {
    const Visit *visits;
    int count, visit;
    uintptr_t at;
} Ahead;

static inline const uint64_t *
terms_of(const Probe *p, Py_ssize_t table, int kind)
{
    return p->layout + (table * 3 + kind) * MAX_TERMS * 3;
}

/* Prefetch `bytes` more of the visits' values, from where the cursor is. */
static inline __attribute__((always_inline)) void
ahead_run(Ahead *ahead, Py_ssize_t bytes)
{
    while (bytes > 0 && ahead->visit < ahead->count) {
        if (ahead->at >= (uintptr_t)ahead->visits[ahead->visit].end) {
            if (++ahead->visit < ahead->count) {
                ahead->at = (uintptr_t)ahead->visits[ahead->visit].begin & ~(uintptr_t)(LINE - 1);
            }
            continue;
        }
        __builtin_prefetch((const void *)ahead->at);
        ahead->at += LINE;
        bytes -= LINE;
    }
}

/* A cursor at the first visit's first line, already PREFETCH_AHEAD bytes ahead. */
static inline Ahead
ahead_start(const Visit *visits, int count)
{
    Ahead ahead = {visits, count, 0, count ? (uintptr_t)visits[0].begin & ~(uintptr_t)(LINE - 1) : 0};
    ahead_run(&ahead, PREFETCH_AHEAD);
    return ahead;
}

/* plan.c */
int probe_views(Probe *p, PyObject *const *args, Py_buffer views[5]);
int scan_bucket(const Probe *p, Py_ssize_t table, uint64_t key, uint32_t *start, uint32_t *stop);
Planner planner_start(const Probe *p);
int plan_visits(const Probe *p, Planner *planner, Visit visits[VISITS]);
int plan_table0(const Probe *p, const uint64_t *keys, int count, Visit visits[VISITS]);

#endif

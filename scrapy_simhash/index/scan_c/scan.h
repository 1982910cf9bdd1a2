/* What the .c files of the index probe share (see module.c). */
#ifndef SIMHASH_SCAN_H
#define SIMHASH_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Bits set in x: the CPU's popcount instruction where there is one. GCC on x86-64 Linux
 * with glibc (ifunc) builds the scanning loops several times (target_clones) and picks one
 * when the module loads: the portable x86-64 baseline has no popcount (libgcc's count,
 * called per row, costs more than the rest of the loop), and the sorted tables' row filter
 * (filter.h) runs 2, 4 or 8 rows an instruction with SSE2, AVX2 or AVX-512 (at 10M rows, 14
 * wildcard bits: 16.8, 12.0 and 11.5 us a probe). Elsewhere the target's own builtin, or a
 * branchless count. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__)
#define SCANNING_LOOP __attribute__((target_clones("avx512f", "avx2", "popcnt", "default")))
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

#define MAX_TERMS 64 /* _slices.MAX_TERMS */
enum { KEY_TERMS, SLICE_TERMS, TABLE0_TERMS };

/* out |= ((value >> src) & mask) << dst for each (src, mask, dst) term; a zero mask ends them. */
static inline uint64_t
gather(const uint64_t *terms, uint64_t value)
{
    uint64_t out = 0;
    for (int i = 0; i < MAX_TERMS && terms[3 * i + 1] != 0; i++) {
        out |= ((value >> (terms[3 * i] & 63)) & terms[3 * i + 1]) << (terms[3 * i + 2] & 63);
    }
    return out;
}

/* An array argument: its name, item size (0: unsigned ints of 2 or 4 bytes), type codes
 * and buffer flags (PyBUF_WRITABLE for one written to, or 0). */
typedef struct {
    const char *name;
    Py_ssize_t itemsize;
    const char *codes;
    int flags;
} ArraySpec;

/* args.c: arguments and results */
int scan_get_array(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *codes, const char *name);
int scan_get_array_flags(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *codes, const char *name,
                         int flags);
int scan_get_uint_array(PyObject *obj, Py_buffer *view, const char *name);
int scan_get_arrays(PyObject *const *args, Py_buffer *views, int count, const ArraySpec *specs, Py_ssize_t *tables);
int scan_as_uint64(PyObject *obj, uint64_t *value);
int scan_set_found(PyObject *found, Py_ssize_t row, uint64_t fingerprint);
int scan_query_args(PyObject *const *args, uint64_t *query, uint64_t *counted, int *max_distance);
int scan_layout_tables(Py_buffer *layout, Py_ssize_t *tables);

/* sorted.c and buffer.c: the module's functions */
PyObject *scan_sorted_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *scan_buffer_matches(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *scan_buffer_add(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* crc.c: the key CRCs of a key store */
void scan_crc_init(void);
PyObject *scan_key_crcs(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif

/* The probe of the in-memory permutation index, in C: the module _scan, built from this
 * folder's files (sorted.c: the sorted tables, plan.c the buckets they visit, filter.h the
 * row filter; buffer.c: the write buffer; args.c: arguments; crc.c: the key CRCs of a key
 * store).
 * Mirrors: the NumPy and Python code
 * of _buckets.SortedBuckets.matches and WriteBuffer.matches, the readable twin, held equal
 * by tests/test_index_scan.py and checked against it on a sample when _buckets loads (a
 * difference switches this off with a WARNING). It runs where it was built (optional at
 * install); SIMHASH_C_PROBE=0 in the environment switches it off.
 *
 * Layout (_slices.py): for table t, bucket `key` is positions dir[t][key] ... dir[t][key+1]
 * of that table's arrays; every table holds a 32-bit slice of each fingerprint, table 0
 * also the bits below it (its tail) and the row ids. A probe of a page with wildcard bits
 * visits ~50 buckets and reads each in order (a random read each cost ~12 ns at 10M rows,
 * a row read in order ~1), their first lines prefetched ahead of the scan (sorted.c). A
 * row of table 0 whose slice is within max_distance is checked whole; one of table t > 0
 * is looked up in its table-0 bucket. The write buffer's buckets are chains through int32 arrays (WriteBuffer), walked
 * here too.
 */
#include "scan.h"

static PyMethodDef methods[] = {
    {"sorted_matches", (PyCFunction)(void (*)(void))scan_sorted_matches, METH_FASTCALL,
     "sorted_matches($module, layout, directories, slices, tails, rows, fingerprint, "
     "wildcard, max_distance, /)\n--\n\n"
     "{row: fingerprint} of the sorted tables' rows within max_distance outside the wildcard bits."},
    {"buffer_matches", (PyCFunction)(void (*)(void))scan_buffer_matches, METH_FASTCALL,
     "buffer_matches($module, layout, newest, older, fingerprints, count, first_row, fingerprint, "
     "wildcard, max_distance, /)\n--\n\n"
     "{row: fingerprint} of a write buffer's rows within max_distance outside the wildcard bits."},
    {"buffer_add", (PyCFunction)(void (*)(void))scan_buffer_add, METH_FASTCALL,
     "buffer_add($module, layout, newest, older, fingerprints, count, fingerprint, /)\n--\n\n"
     "Put a write buffer's row `count` at the head of its slots (newest, older, fingerprints); its table-0 key."},
    {"key_crcs", (PyCFunction)(void (*)(void))scan_key_crcs, METH_FASTCALL,
     "key_crcs($module, data, ends, start, /)\n--\n\n"
     "zlib's CRC-32 of keys start... of data, stored back to back and ending at ends: 4 bytes each, native order."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan", "The index's probe in C (see _buckets).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__scan(void)
{
    scan_crc_init();
    return PyModule_Create(&module);
}

/* minwise_sketch(hashes): a page's distinct shingle hashes -> its 32-byte sketch,
 * sketch.minwise_sketch()'s C path (the Python code is its specification and oracle).
 *
 * NumPy sorts the hashes and spends a dozen calls on 256 bins (~0.1 ms a page, most of it
 * call overhead); here one pass keeps each bin's minimum, then the empty bins take the
 * next filled one's, circularly, and each bin's mixed minimum gives its bit.
 */
#include "features.h"

#define SKETCH_BINS 256
#define BIN_SHIFT 56 /* a bin: a hash's top 8 bits */

/* splitmix64's finaliser of a bin's minimum plus its position times the golden ratio. */
static inline uint64_t
mix(uint64_t minimum, uint64_t position)
{
    uint64_t x = minimum + position * 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static void
sketch_bits(const uint64_t *hashes, Py_ssize_t n, uint8_t out[SKETCH_BINS / 8])
{
    uint64_t minima[SKETCH_BINS];
    uint8_t filled[SKETCH_BINS] = {0};
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned bin = (unsigned)(hashes[i] >> BIN_SHIFT);
        if (!filled[bin] || hashes[i] < minima[bin]) {
            minima[bin] = hashes[i];
            filled[bin] = 1;
        }
    }
    /* An empty bin takes the next filled bin's minimum, circularly: walk down from the
     * top bin, carrying the minimum of the nearest filled bin above (above the last filled
     * bin, circularly, the first one's). */
    int first = 0;
    while (!filled[first]) {
        first++; /* n > 0: some bin is filled */
    }
    uint64_t carried = minima[first];
    memset(out, 0, SKETCH_BINS / 8);
    for (int bin = SKETCH_BINS - 1; bin >= 0; bin--) {
        if (filled[bin]) {
            carried = minima[bin];
        }
        uint64_t bit = mix(carried, (uint64_t)bin) >> 63;
        out[bin / 8] |= (uint8_t)(bit << (bin % 8)); /* np.packbits(..., bitorder="little") */
    }
}

PyObject *
features_minwise_sketch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "minwise_sketch takes 1 argument (hashes)");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (view.len % (Py_ssize_t)sizeof(uint64_t) != 0) {
        PyErr_SetString(PyExc_ValueError, "hashes must be a buffer of uint64");
    } else if (view.len == 0) {
        PyErr_SetString(PyExc_ValueError, "a sketch needs at least one shingle");
    } else {
        uint8_t bits[SKETCH_BINS / 8];
        sketch_bits((const uint64_t *)view.buf, view.len / (Py_ssize_t)sizeof(uint64_t), bits);
        result = PyBytes_FromStringAndSize((const char *)bits, sizeof bits);
    }
    PyBuffer_Release(&view);
    return result;
}

/* simhash_votes(hashes, weights): a page's weighted shingle hashes -> its 64-bit SimHash
 * (Charikar 2002) and each bit's margin, fingerprint.simhash_margins()'s C path; and
 * weakest_bits(margins, count), fingerprint.weakest_bits()'s.
 *
 * Bit for bit the same as the NumPy path: weights are whole multiples of 1/1024, so the
 * sums are exact integers here; when they are not (or too large), it returns None and
 * Python decides.
 */
#include "features.h"
#include <math.h>

/* Weights as whole multiples of 1/1024 (features._WEIGHT_QUANTUM): 0 when one is not, or
 * when they are so large that float64 sums might round (then NumPy decides, in Python). */
static int
quantise(const double *weights, Py_ssize_t n, int64_t *quanta)
{
    const double limit = 2147483648.0; /* 2**31 a weight; 2**52 in all (checked below) */
    int64_t magnitude = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double q = weights[i] * 1024.0;
        if (!(fabs(q) < limit) || q != floor(q)) {
            return 0;
        }
        quanta[i] = (int64_t)q;
        magnitude += quanta[i] < 0 ? -quanta[i] : quanta[i];
        if (magnitude >= ((int64_t)1 << 52)) {
            return 0;
        }
    }
    return 1;
}

/* The sum of the weights with bit b set, for each b (exact: integers). A feature adds its
 * weight to one of 16 sums per 4-bit nibble (16 adds, not 64); bit b's sum then adds the 8
 * sums of its nibble's values that have the bit. */
static void
bit_sums(const uint64_t *hashes, const int64_t *quanta, Py_ssize_t n, int64_t sums[64])
{
    int64_t by_nibble[16][16] = {{0}};
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t h = hashes[i];
        for (int k = 0; k < 16; k++, h >>= 4) {
            by_nibble[k][h & 15] += quanta[i];
        }
    }
    for (int b = 0; b < 64; b++) {
        sums[b] = 0;
        for (int value = 0; value < 16; value++) {
            sums[b] += (value >> (b & 3)) & 1 ? by_nibble[b >> 2][value] : 0;
        }
    }
}

/* A C-contiguous buffer of 8-byte items with one of the format codes in `codes`. */
static int
get_array(PyObject *obj, Py_buffer *view, const char *codes, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    const char *code = view->format ? view->format : "B";
    if (code[0] == '@' || code[0] == '=' || (code[0] == '<' && PY_LITTLE_ENDIAN)) {
        code++; /* native byte order */
    }
    if (view->itemsize != 8 || code[0] == '\0' || strchr(codes, code[0]) == NULL || code[1] != '\0'
        || (uintptr_t)view->buf % 8 != 0) {
        PyErr_Format(PyExc_TypeError, "%s must be an aligned array of 8-byte items (%s)", name, codes);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* (fingerprint, margins): bit b is set when its vote 2 * sums[b] - total is positive; its
 * margin is the vote over the total weight (over 1 when that is 0), in float64 as NumPy has it. */
static PyObject *
margins_of(const int64_t sums[64], int64_t total)
{
    PyObject *margins = PyByteArray_FromStringAndSize(NULL, 64 * sizeof(double));
    if (margins == NULL) {
        return NULL;
    }
    double *margin = (double *)PyByteArray_AS_STRING(margins);
    double weight = total ? (double)total / 1024.0 : 1.0;
    uint64_t fingerprint = 0;
    for (int b = 0; b < 64; b++) {
        int64_t vote = 2 * sums[b] - total;
        fingerprint |= (uint64_t)(vote > 0) << b;
        margin[b] = ((double)vote / 1024.0) / weight;
    }
    return Py_BuildValue("(NN)", PyLong_FromUnsignedLongLong(fingerprint), margins);
}

/* (fingerprint, margins as 64 native float64 in a bytearray), or None when the weights are
 * not quantised: fingerprint.simhash_margins() bit for bit (its sums are exact too). */
PyObject *
features_simhash_votes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "simhash_votes takes 2 arguments (hashes, weights)");
        return NULL;
    }
    Py_buffer hashes, weights;
    if (get_array(args[0], &hashes, "QL", "hashes") < 0) {
        return NULL;
    }
    if (get_array(args[1], &weights, "d", "weights") < 0) {
        PyBuffer_Release(&hashes);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = hashes.len / 8;
    int64_t *quanta = PyMem_New(int64_t, n ? n : 1);
    if (weights.len != hashes.len) {
        PyErr_SetString(PyExc_ValueError, "hashes and weights differ in length");
    } else if (quanta == NULL) {
        PyErr_NoMemory();
    } else if (!quantise(weights.buf, n, quanta)) {
        result = Py_NewRef(Py_None);
    } else {
        int64_t sums[64], total = 0;
        bit_sums(hashes.buf, quanta, n, sums);
        for (Py_ssize_t i = 0; i < n; i++) {
            total += quanta[i];
        }
        result = margins_of(sums, total);
    }
    PyMem_Free(quanta);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&weights);
    return result;
}

/* Whether |x| sorts before |y|: NumPy's order, NaN last. */
static int
weaker(double x, double y)
{
    return !isnan(x) && (isnan(y) || fabs(x) < fabs(y));
}

/* The mask of the `count` bits of smallest |margin| (ties: the lower bit), at most
 * ceil(count / 4) in each 16-bit quarter: fingerprint.weakest_bits() bit for bit (its
 * stable argsort is this insertion sort's order), without NumPy's calls. */
PyObject *
features_weakest_bits(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "weakest_bits takes 2 arguments (margins, count)");
        return NULL;
    }
    long count = PyLong_AsLong(args[1]);
    if (count == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (count < 0 || count > 64) {
        PyErr_SetString(PyExc_ValueError, "count must be between 0 and 64");
        return NULL;
    }
    Py_buffer view;
    if (get_array(args[0], &view, "d", "margins") < 0) {
        return NULL;
    }
    if (view.len != 64 * (Py_ssize_t)sizeof(double)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "margins must hold 64 float64");
        return NULL;
    }
    const double *margin = view.buf;
    int order[64];
    for (int b = 0; b < 64; b++) {
        int i = b;
        for (; i > 0 && weaker(margin[b], margin[order[i - 1]]); i--) {
            order[i] = order[i - 1];
        }
        order[i] = b;
    }
    PyBuffer_Release(&view);
    long per_quarter = (count + 3) / 4;
    long taken[4] = {0, 0, 0, 0};
    uint64_t mask = 0;
    for (int i = 0; i < 64 && count > 0; i++) {
        int bit = order[i];
        if (taken[bit >> 4] < per_quarter) {
            taken[bit >> 4]++, mask |= (uint64_t)1 << bit, count--;
        }
    }
    return PyLong_FromUnsignedLongLong(mask);
}

/* The module scrapy_simhash.core._features: its functions (set_script_classes, classes.c;
 * simhash_votes and weakest_bits, votes.c; minwise_sketch, sketch.c) and the TokenTable type (type.c).
 *
 * It is optional: scrapy_simhash.core.features and .fingerprint fall back to the Python
 * path, with the same results, when it was not built. The tokens are those of
 * segment.Tokenizer(segmenter="char").raw(): Python's \w is sre's, and the script classes
 * are handed over by segment.py (set_script_classes), not copied (see classes.c).
 */
#include "features.h"

static PyMethodDef methods[] = {
    {"set_script_classes", (PyCFunction)(void (*)(void))features_set_script_classes, METH_FASTCALL,
     "set_script_classes($module, han, marks, hiragana, katakana, one_char, /)\n--\n\n"
     "The tokenizer's script classes, as regex class bodies (segment.SCRIPT_CLASSES)."},
    {"simhash_votes", (PyCFunction)(void (*)(void))features_simhash_votes, METH_FASTCALL,
     "simhash_votes($module, hashes, weights, /)\n--\n\n"
     "(fingerprint, 64 float64 margins in a bytearray) of uint64 hashes and float64 weights,\n"
     "or None when a weight is not a multiple of 1/1024 (or they are too large to sum exactly)."},
    {"weakest_bits", (PyCFunction)(void (*)(void))features_weakest_bits, METH_FASTCALL,
     "weakest_bits($module, margins, count, /)\n--\n\n"
     "The mask of the count weakest of 64 float64 margins, spread over the quarters (fingerprint.weakest_bits)."},
    {"minwise_sketch", (PyCFunction)(void (*)(void))features_minwise_sketch, METH_FASTCALL,
     "minwise_sketch($module, hashes, /)\n--\n\n"
     "The 32-byte minwise sketch of a non-empty buffer of uint64 shingle hashes (sketch.minwise_sketch)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "_features",
    "Tokens -> shingle counts, and SimHash votes, in C (see features).",
    -1,
    methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

PyMODINIT_FUNC
PyInit__features(void)
{
    if (PyType_Ready(&features_TokenTableType) < 0) {
        return NULL;
    }
    PyObject *created = PyModule_Create(&module);
    PyObject *type = (PyObject *)&features_TokenTableType;
    if (created != NULL && PyModule_AddObjectRef(created, "TokenTable", type) < 0) {
        Py_CLEAR(created);
    }
    return created;
}

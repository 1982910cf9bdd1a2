/* The class of every character for the tokenizer (tokens.c): \w, and the script classes.
 *
 * \w is Python's, sre's SRE_UNI_IS_WORD (Py_UNICODE_ISALNUM or '_'). The script classes
 * (Han, marks, hiragana, katakana, one-character scripts) are handed over by segment.py
 * (set_script_classes(*segment.SCRIPT_CLASSES)) as regex class bodies, not copied here, so
 * the C and Python tokenizers cannot drift apart. The BMP has a table (64 KiB, one lookup a
 * character); the few ranges past it are scanned (classes_of in features.h).
 */
#include "features.h"

uint8_t features_bmp_classes[0x10000];
Py_UCS4 features_astral_ranges[MAX_ASTRAL_RANGES][2];
int features_n_astral_ranges = -1;

/* Mark the characters of a regex class body ("a-zA-Z_": characters and ranges) with `bits`. */
static int
mark_class(PyObject *body, unsigned bits)
{
    if (!PyUnicode_Check(body)) {
        PyErr_Format(PyExc_TypeError, "a script class must be str, not %.100s", Py_TYPE(body)->tp_name);
        return -1;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(body);
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 low = PyUnicode_READ_CHAR(body, i), high = low;
        if (i + 2 < length && PyUnicode_READ_CHAR(body, i + 1) == '-') {
            high = PyUnicode_READ_CHAR(body, i + 2);
            i += 2;
        }
        for (Py_UCS4 ch = low; ch <= high && ch < 0x10000; ch++) {
            features_bmp_classes[ch] |= (uint8_t)(bits | SCRIPT); /* only BMP ones: as _NEEDS_SCRIPT_RULES */
        }
        if (high >= 0x10000) {
            if (bits != ONE_CHAR || features_n_astral_ranges == MAX_ASTRAL_RANGES) {
                PyErr_SetString(PyExc_ValueError, "only a few one-character classes may go past the BMP");
                return -1;
            }
            features_astral_ranges[features_n_astral_ranges][0] = low < 0x10000 ? 0x10000 : low;
            features_astral_ranges[features_n_astral_ranges++][1] = high;
        }
    }
    return 0;
}

/* set_script_classes(han, marks, hiragana, katakana, one_char): rebuild the tables. */
PyObject *
features_set_script_classes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    static const unsigned bits[] = {HAN, MARK, HIRAGANA, KATAKANA, ONE_CHAR};
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "set_script_classes takes 5 arguments");
        return NULL;
    }
    features_n_astral_ranges = 0;
    for (Py_UCS4 ch = 0; ch < 0x10000; ch++) {
        features_bmp_classes[ch] = is_word(ch) ? WORD : 0;
    }
    for (int i = 0; i < 5; i++) {
        if (mark_class(args[i], bits[i]) < 0) {
            features_n_astral_ranges = -1;
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* text.normalize_blocks a character at a time: NFKC and case folding without
 * unicodedata.normalize and str.casefold over the whole page (~0.04 ms of a page's ~0.07 ms
 * of normalisation, two copies of its text).
 *
 * It holds when no character of the text changes its neighbours under NFKC: then NFKC of
 * the text is the NFKC of each character, and the case fold after it is each one's fold.
 * What a character past ASCII is comes from Python (text.fold_class), asked once a
 * character a process and remembered here: its own NFKC and fold (FOLD_KEEP: most letters
 * and punctuation, Han characters), a space, a character whose fold is another text
 * ("É" -> "é") or whose NFKC is ASCII ("…" -> "...", full-width "Ａ" -> "a"), or
 * FOLD_OTHER: one that may compose with, or be reordered against, its neighbours (the
 * combining marks, Hangul jamo), or that NFKC maps to text past ASCII. A block holding one
 * makes fold_blocks() return None, and normalize_blocks() runs unicodedata over the page
 * as before. tests/test_fold_c.py holds both to the same blocks on every character and on
 * the dev corpus.
 */
#include "extract.h"

enum { FOLD_UNKNOWN, FOLD_KEEP, FOLD_SPACE, FOLD_OTHER, FOLD_MAPPED };

static unsigned char fold_classes[0x10000]; /* what each BMP character is, once asked */
static PyObject *fold_texts[0x10000];       /* the str a FOLD_MAPPED character becomes */
static PyObject *fold_classify;             /* text.fold_class */

typedef struct {
    Py_UCS4 *data;
    Py_ssize_t length, capacity;
} Folded;

static int
push(Folded *folded, Py_UCS4 character)
{
    if (folded->length == folded->capacity) {
        Py_ssize_t capacity = folded->capacity * 2 + 64;
        Py_UCS4 *data = PyMem_Realloc(folded->data, sizeof(Py_UCS4) * (size_t)capacity);
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        folded->data = data, folded->capacity = capacity;
    }
    folded->data[folded->length++] = character;
    return 0;
}

/* What `character` (past ASCII) is: a FOLD_ class, or -1 with an exception. Characters past
 * the BMP (emoji, rare Han) are not asked: FOLD_OTHER, the page goes the slow way. */
static int
class_of(Py_UCS4 character)
{
    if (character > 0xFFFF) {
        return FOLD_OTHER;
    }
    if (fold_classes[character] != FOLD_UNKNOWN) {
        return fold_classes[character];
    }
    PyObject *answer = PyObject_CallFunction(fold_classify, "I", (unsigned int)character);
    if (answer == NULL) {
        return -1;
    }
    int found = -1;
    if (PyUnicode_Check(answer)) {
        Py_XSETREF(fold_texts[character], Py_NewRef(answer));
        found = FOLD_MAPPED;
    } else {
        long value = PyLong_AsLong(answer);
        if (value >= FOLD_KEEP && value <= FOLD_OTHER) {
            found = (int)value;
        } else if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "fold_class answers 1, 2, 3 or a str, not %ld", value);
        }
    }
    Py_DECREF(answer);
    if (found > 0) {
        fold_classes[character] = (unsigned char)found;
    }
    return found;
}

/* Push the folded text of `character` (past ASCII); 1 when it cannot be folded here, 0
 * when pushed, -1 with an exception. */
static int
push_folded(Folded *folded, Py_UCS4 character)
{
    switch (class_of(character)) {
    case FOLD_KEEP:
        return push(folded, character);
    case FOLD_SPACE:
        return push(folded, ' '); /* (collapse_chars makes one space of a run of any) */
    case FOLD_OTHER:
        return 1;
    case FOLD_MAPPED: {
        PyObject *text = fold_texts[character];
        for (Py_ssize_t at = 0; at < PyUnicode_GET_LENGTH(text); at++) {
            if (push(folded, PyUnicode_READ_CHAR(text, at)) < 0) {
                return -1;
            }
        }
        return 0;
    }
    default:
        return -1;
    }
}

/* Fold the blocks into `folded`, a boundary between two: 1 when one cannot be folded
 * here, 0 when done, -1 with an exception. */
static int
fold_all(PyObject *blocks, Py_UCS4 boundary, Folded *folded)
{
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(blocks); i++) {
        PyObject *block = PyList_GET_ITEM(blocks, i);
        if (!PyUnicode_Check(block)) {
            PyErr_Format(PyExc_TypeError, "blocks must be str, not %.100s", Py_TYPE(block)->tp_name);
            return -1;
        }
        if (i > 0 && push(folded, boundary) < 0) {
            return -1;
        }
        int kind = PyUnicode_KIND(block);
        const void *data = PyUnicode_DATA(block);
        for (Py_ssize_t at = 0; at < PyUnicode_GET_LENGTH(block); at++) {
            Py_UCS4 character = PyUnicode_READ(kind, data, at);
            int status = character < 0x80 /* its own NFKC; the fold lowers A-Z alone */
                             ? push(folded, character >= 'A' && character <= 'Z' ? character + 32 : character)
                             : push_folded(folded, character);
            if (status != 0) {
                return status;
            }
        }
    }
    return 0;
}

PyObject *
extract_fold_blocks(PyObject *module, PyObject *args)
{
    PyObject *blocks;
    int boundary, need_letter;
    if (!PyArg_ParseTuple(args, "O!Cp:fold_blocks", &PyList_Type, &blocks, &boundary, &need_letter)) {
        return NULL;
    }
    if (fold_classify == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_folding() was not called");
        return NULL;
    }
    Folded folded = {NULL, 0, 0};
    int status = fold_all(blocks, (Py_UCS4)boundary, &folded);
    PyObject *result = NULL;
    if (status == 0) {
        result = extract_collapse_chars(PyUnicode_4BYTE_KIND, folded.data, folded.length, (Py_UCS4)boundary,
                                        need_letter);
    } else if (status > 0) {
        result = Py_NewRef(Py_None);
    }
    PyMem_Free(folded.data);
    return result;
}

PyObject *
extract_configure_folding(PyObject *module, PyObject *classify)
{
    if (!PyCallable_Check(classify)) {
        PyErr_SetString(PyExc_TypeError, "classify must be callable");
        return NULL;
    }
    Py_XSETREF(fold_classify, Py_NewRef(classify));
    memset(fold_classes, FOLD_UNKNOWN, sizeof(fold_classes)); /* (another classifier: ask again) */
    for (size_t character = 0; character < sizeof(fold_classes); character++) {
        Py_CLEAR(fold_texts[character]);
    }
    Py_RETURN_NONE;
}

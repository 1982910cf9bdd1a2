/* names.RULES into C (configure_names), and the verdict on Python's pairs (attribute_verdict).
 *
 * The rules are kept as Python objects, their str encoded as UTF-8 bytes: the verdict
 * (names.c) compares them with the attributes' bytes as libxml2 holds them.
 */
#include "extract.h"

static const unsigned WORD_BITS[N_PART_KINDS] = {CLASS_WORD, ID_WORD, CONTENT_WORD};

/* A tuple of convert(item, flag) for each item of the sequence `items` (`message`: the
 * TypeError when it is none); NULL with an exception. */
static PyObject *
tuple_of(PyObject *items, const char *message, PyObject *(*convert)(PyObject *, int), int flag)
{
    PyObject *sequence = PySequence_Fast(items, message);
    PyObject *tuple = sequence ? PyTuple_New(PySequence_Fast_GET_SIZE(sequence)) : NULL;
    for (Py_ssize_t i = 0; tuple != NULL && i < PyTuple_GET_SIZE(tuple); i++) {
        PyObject *value = convert(PySequence_Fast_GET_ITEM(sequence, i), flag);
        if (value == NULL) {
            Py_CLEAR(tuple);
        } else {
            PyTuple_SET_ITEM(tuple, i, value);
        }
    }
    Py_XDECREF(sequence);
    return tuple;
}

/* The UTF-8 of the str `string` (lower-cased if `lower`, then ASCII only: a hidden style
 * is matched case-blind as ASCII). */
static PyObject *
encoded_string(PyObject *string, int lower)
{
    if (!PyUnicode_Check(string)) {
        return PyErr_Format(PyExc_TypeError, "the rules hold str, not %.100s", Py_TYPE(string)->tp_name);
    }
    if (lower && !PyUnicode_IS_ASCII(string)) {
        PyErr_SetString(PyExc_ValueError, "a hidden style is ASCII");
        return NULL;
    }
    PyObject *lowered = lower ? PyObject_CallMethod(string, "lower", NULL) : Py_NewRef(string);
    PyObject *bytes = lowered ? PyUnicode_AsUTF8String(lowered) : NULL;
    Py_XDECREF(lowered);
    return bytes;
}

/* A tuple of the UTF-8 of the str of `strings` (see encoded_string). */
static PyObject *
encoded(PyObject *strings, int lower)
{
    return tuple_of(strings, "the rules hold collections of str", encoded_string, lower);
}

/* A (property, value) of a hidden style, encoded and lower-cased. */
static PyObject *
encoded_style(PyObject *style, int unused)
{
    (void)unused;
    PyObject *pair = encoded(style, 1);
    if (pair != NULL && PyTuple_GET_SIZE(pair) != 2) {
        PyErr_SetString(PyExc_ValueError, "a hidden style is a (property, value) pair");
        Py_CLEAR(pair);
    }
    return pair;
}

/* Each (property, value) of `styles`, encoded and lower-cased. */
static PyObject *
encoded_styles(PyObject *styles)
{
    return tuple_of(styles, "the hidden styles are a collection of (property, value)", encoded_style, 0);
}

/* Add `words` to `vocabulary` (word -> bits) with `bits`, OR-ed with those they have. */
static int
add_vocabulary(PyObject *vocabulary, PyObject *words, unsigned bits)
{
    PyObject *encoded_words = encoded(words, 0);
    int status = encoded_words ? 0 : -1;
    for (Py_ssize_t i = 0; status == 0 && i < PyTuple_GET_SIZE(encoded_words); i++) {
        PyObject *word = PyTuple_GET_ITEM(encoded_words, i);
        PyObject *known = PyDict_GetItemWithError(vocabulary, word);
        PyObject *all = NULL;
        if (known != NULL || !PyErr_Occurred()) {
            all = PyLong_FromUnsignedLong(bits | (known ? PyLong_AsUnsignedLong(known) : 0));
        }
        status = all == NULL || PyDict_SetItem(vocabulary, word, all) < 0 ? -1 : 0;
        Py_XDECREF(all);
    }
    Py_XDECREF(encoded_words);
    return status;
}

/* configure_names(roles, hidden_styles, (class words, frame parts), (id words, id parts),
 * (content words, content parts), link box words, header parts): names.RULES. */
PyObject *
extract_configure_names(PyObject *module, PyObject *args)
{
    PyObject *roles, *styles, *words[N_PART_KINDS], *parts[N_PART_KINDS], *link_box_words, *header_parts;
    if (!PyArg_ParseTuple(args, "OO(OO)(OO)(OO)OO:configure_names", &roles, &styles, &words[0], &parts[0], &words[1],
                          &parts[1], &words[2], &parts[2], &link_box_words, &header_parts)) {
        return NULL;
    }
    NameRules rules = {NULL};
    rules.roles = encoded(roles, 0);
    rules.styles = rules.roles ? encoded_styles(styles) : NULL;
    rules.words = rules.styles ? PyDict_New() : NULL;
    rules.header_parts = rules.words ? encoded(header_parts, 0) : NULL;
    int status = rules.header_parts ? 0 : -1;
    for (int kind = 0; kind < N_PART_KINDS && status == 0; kind++) {
        rules.parts[kind] = encoded(parts[kind], 0);
        status = rules.parts[kind] ? add_vocabulary(rules.words, words[kind], WORD_BITS[kind]) : -1;
    }
    status = status == 0 ? add_vocabulary(rules.words, link_box_words, LINK_BOX_WORD) : -1;
    if (status == 0) {
        NameRules old = extract_name_rules;
        extract_name_rules = rules;
        rules = old;               /* (freed below) */
        extract_forget_verdicts(); /* they came from other rules */
    }
    Py_XDECREF(rules.roles);
    Py_XDECREF(rules.styles);
    Py_XDECREF(rules.words);
    Py_XDECREF(rules.header_parts);
    for (int kind = 0; kind < N_PART_KINDS; kind++) {
        Py_XDECREF(rules.parts[kind]);
    }
    return status == 0 ? Py_NewRef(Py_None) : NULL;
}

/* attribute_verdict(pairs): the verdict on ((name, value), ...), for the tests. */
PyObject *
extract_attribute_verdict_of_pairs(PyObject *module, PyObject *pairs)
{
    PyObject *sequence = PySequence_Fast(pairs, "pairs must be a sequence of (name, value)");
    Buffer key = {0}; /* as prune.c makes it: "name\0value\0" each */
    int verdict = -1;
    for (Py_ssize_t i = 0; sequence != NULL && i < PySequence_Fast_GET_SIZE(sequence); i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(sequence, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))
            || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_SetString(PyExc_TypeError, "pairs must be (name, value) tuples of str");
            goto done;
        }
        for (int j = 0; j < 2; j++) {
            Py_ssize_t length;
            const char *utf8 = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, j), &length);
            if (utf8 == NULL) {
                goto done;
            }
            if (memchr(utf8, 0, (size_t)length) != NULL) { /* (never in lxml's attributes) */
                PyErr_SetString(PyExc_ValueError, "an attribute name or value holds a NUL");
                goto done;
            }
            if (extract_append(&key, utf8, length) < 0 || extract_append(&key, "", 1) < 0) {
                goto done;
            }
        }
    }
    if (sequence != NULL) {
        verdict = extract_attribute_verdict(key.data, key.length);
    }
done:
    Py_XDECREF(sequence);
    PyMem_Free(key.data);
    return verdict < 0 ? NULL : PyLong_FromLong(verdict);
}

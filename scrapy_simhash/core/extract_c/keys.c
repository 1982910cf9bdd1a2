/* templates.block_key of many blocks: Python's hash of each block, with every run of
 * digits read as "0" in a short one.
 *
 * In Python, a regex substitution and a hash per block, ~1 us each: ~50 us a page,
 * where most blocks are new (the template memory's cache of keys only helps its
 * template blocks). Here the digits are looked for in C and a string made only for a
 * short block that holds some; the hash is then Python's own, so the keys are those of
 * block_key exactly (and a block's hash is kept in its string, for the dict lookups
 * that follow).
 */
#include "extract.h"

/* hash(re.sub(r"\d+", "0", block)): \d is Py_UNICODE_ISDECIMAL for str patterns. */
static Py_hash_t
digits_blind_hash(PyObject *block)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(block);
    int kind = PyUnicode_KIND(block);
    const void *data = PyUnicode_DATA(block);
    Py_ssize_t at = 0;
    while (at < n && !Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, at))) {
        at++;
    }
    if (at == n) {
        return PyObject_Hash(block);
    }
    Py_UCS4 *chars = PyMem_Malloc(sizeof(Py_UCS4) * (size_t)n);
    if (chars == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t length = 0;
    int in_digits = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 character = PyUnicode_READ(kind, data, i);
        int digit = Py_UNICODE_ISDECIMAL(character);
        if (!digit) {
            chars[length++] = character;
        } else if (!in_digits) {
            chars[length++] = '0';
        }
        in_digits = digit;
    }
    PyObject *replaced = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, chars, length);
    PyMem_Free(chars);
    if (replaced == NULL) {
        return -1;
    }
    Py_hash_t hash = PyObject_Hash(replaced);
    Py_DECREF(replaced);
    return hash;
}

PyObject *
extract_block_keys(PyObject *module, PyObject *args)
{
    PyObject *blocks;
    Py_ssize_t short_block;
    if (!PyArg_ParseTuple(args, "O!n:block_keys", &PyList_Type, &blocks, &short_block)) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(blocks);
    PyObject *keys = PyList_New(n);
    if (keys == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *block = PyList_GET_ITEM(blocks, i);
        if (!PyUnicode_Check(block)) {
            PyErr_Format(PyExc_TypeError, "blocks must be str, not %.100s", Py_TYPE(block)->tp_name);
            Py_DECREF(keys);
            return NULL;
        }
        Py_hash_t hash = PyUnicode_GET_LENGTH(block) <= short_block ? digits_blind_hash(block) : PyObject_Hash(block);
        PyObject *key = hash == -1 && PyErr_Occurred() ? NULL : PyLong_FromSsize_t(hash);
        if (key == NULL) {
            Py_DECREF(keys);
            return NULL;
        }
        PyList_SET_ITEM(keys, i, key);
    }
    return keys;
}

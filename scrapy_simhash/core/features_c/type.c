/* The TokenTable type: one per features.Featurizer, holding the hash key, the token
 * table (table.c) and the page scratch (page.c); its methods are shingle_counts (page.c)
 * and remembered. Made here, given back here: every buffer it owns is freed in dealloc.
 */
#include "features.h"

static PyObject *
table_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"key", "capacity", NULL};
    Py_buffer key;
    Py_ssize_t capacity;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*n:TokenTable", keywords, &key, &capacity)) {
        return NULL;
    }
    TokenTable *self = NULL;
    if (key.len > 64) {
        PyErr_Format(PyExc_ValueError, "key must be at most 64 bytes, not %zd", key.len);
    } else if (capacity < 1) {
        PyErr_Format(PyExc_ValueError, "capacity must be positive, not %zd", capacity);
    } else if ((self = (TokenTable *)type->tp_alloc(type, 0)) != NULL) {
        features_hasher_init(&self->hasher, key.buf, (size_t)key.len);
        self->capacity = capacity;
        self->bmp_hashes = PyMem_Malloc(0x10000 * sizeof(uint64_t));
        self->bmp_known = PyMem_Calloc(0x10000, 1);
        if (self->bmp_hashes == NULL || self->bmp_known == NULL) {
            Py_CLEAR(self);
            PyErr_NoMemory();
        }
    }
    PyBuffer_Release(&key);
    return (PyObject *)self;
}

static void
table_dealloc(TokenTable *self)
{
    PyMem_Free(self->slots);
    PyMem_Free(self->arena);
    PyMem_Free(self->bmp_hashes);
    PyMem_Free(self->bmp_known);
    PyMem_Free(self->found);
    PyMem_Free(self->tokens);
    PyMem_Free(self->shingles);
    PyMem_Free(self->sorted);
    PyMem_Free(self->lengths);
    PyMem_Free(self->utf8);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
table_remembered(TokenTable *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(self->size);
}

static PyMethodDef table_methods[] = {
    {"shingle_counts", (PyCFunction)(void (*)(void))features_shingle_counts, METH_FASTCALL,
     "shingle_counts($self, blocks, size, set_size=0, /)\n--\n\n"
     "(distinct shingle hashes, their counts, number of tokens) of the blocks: the hashes as\n"
     "native uint64 and the counts as int64, in bytearrays, sorted by hash. With a set_size,\n"
     "a fourth item: the distinct shingles of set_size tokens across the blocks, likewise."},
    {"remembered", (PyCFunction)table_remembered, METH_NOARGS,
     "remembered($self, /)\n--\n\nTokens of more than one character in the table now."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject features_TokenTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scrapy_simhash.core._features.TokenTable",
    .tp_basicsize = sizeof(TokenTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TokenTable(key, capacity)\n--\n\n"
              "Token -> keyed BLAKE2b-64 hash, remembering up to capacity tokens (then starting "
              "again), and the shingle counts of text blocks.",
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
};

/* TokenTable.shingle_counts(blocks, size[, set_size]): a page's blocks -> (distinct shingle
 * hashes, their counts, number of tokens[, distinct shingles of set_size tokens across the
 * blocks]), features.Featurizer's C path (the last for features_and_shingle_set).
 *
 * In Python a page's features take ~0.45 ms: a regex findall, a dict lookup per token, a
 * dozen NumPy calls for the shingles and np.unique. Here the steps run in one pass over
 * buffers the table keeps between pages (grown as needed, a huge page's given back after
 * it), without a Python object per token: tokens (tokens.c) -> hashes (table.c) ->
 * shingles, sorted and counted (shingles.c).
 */
#include "features.h"

/* Make *buffer hold at least `count` items of `item` bytes (grows by doubling). */
int
features_reserve(void **buffer, size_t *size, size_t count, size_t item)
{
    if (count <= *size) {
        return 0;
    }
    size_t wanted = *size ? *size : 256;
    while (wanted < count) {
        wanted *= 2;
    }
    if (wanted > PY_SSIZE_T_MAX / item) {
        PyErr_NoMemory();
        return -1;
    }
    void *grown = PyMem_Realloc(*buffer, wanted * item);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buffer = grown;
    *size = wanted;
    return 0;
}

/* Room for the tokens of all the blocks (at most one a character) and their UTF-8 (3 bytes
 * a UCS-2 character at most, 4 else). */
static int
reserve_tokens(TokenTable *self, const Text *texts, Py_ssize_t n_texts)
{
    size_t chars = 0, bytes = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        if ((size_t)texts[t].length > (PY_SSIZE_T_MAX - bytes) / 4) {
            PyErr_NoMemory();
            return -1;
        }
        chars += (size_t)texts[t].length;
        bytes += (texts[t].kind == PyUnicode_2BYTE_KIND ? 3 : 4) * (size_t)texts[t].length;
    }
    if (features_reserve((void **)&self->utf8, &self->utf8_size, bytes + 1, 1) < 0
        || features_reserve((void **)&self->found, &self->found_size, chars + 1, sizeof(Found)) < 0
        || features_reserve((void **)&self->tokens, &self->tokens_size, chars + 1, sizeof(uint64_t)) < 0) {
        return -1;
    }
    return 0;
}

/* The hashes of the blocks' tokens into self->tokens, their count per block into self->lengths. */
static Py_ssize_t
hash_tokens(TokenTable *self, const Text *texts, Py_ssize_t n_texts)
{
    if (reserve_tokens(self, texts, n_texts) < 0) {
        return -1;
    }
    size_t n = features_find_tokens(texts, n_texts, self->found, self->lengths, self->utf8);
    features_hash_found(self, self->found, n, self->tokens);
    return (Py_ssize_t)n;
}

/* Read every block's code points (a TypeError for one that is not str). */
static int
read_blocks(PyObject *sequence, Text *texts, Py_ssize_t n_texts)
{
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        PyObject *block = PySequence_Fast_GET_ITEM(sequence, t);
        if (!PyUnicode_Check(block)) {
            PyErr_Format(PyExc_TypeError, "a block must be str, not %.100s", Py_TYPE(block)->tp_name);
            return -1;
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(block) < 0) {
            return -1;
        }
#endif
        texts[t] = (Text){PyUnicode_KIND(block), PyUnicode_DATA(block), PyUnicode_GET_LENGTH(block),
                          PyUnicode_IS_ASCII(block)};
    }
    return 0;
}

/* Scratch past this many bytes (a huge page's) is given back after the page. */
#define KEPT_SCRATCH ((size_t)1 << 22)

static void
release_large_scratch(TokenTable *self)
{
    if (self->found_size * sizeof(Found) + self->utf8_size <= KEPT_SCRATCH) {
        return;
    }
    void **buffers[] = {(void **)&self->found, (void **)&self->tokens, (void **)&self->shingles, (void **)&self->sorted,
                        (void **)&self->utf8};
    for (size_t b = 0; b < sizeof buffers / sizeof *buffers; b++) {
        PyMem_Free(*buffers[b]);
        *buffers[b] = NULL;
    }
    self->found_size = self->tokens_size = self->shingles_size = self->sorted_size = self->utf8_size = 0;
}

/* Shingles of `size` tokens of self->tokens (`n_tokens` of them, in `n_blocks` blocks of
 * self->lengths), sorted and counted: (distinct, counts, n_tokens). */
static PyObject *
count_shingles(TokenTable *self, Py_ssize_t n_tokens, const Py_ssize_t *lengths, Py_ssize_t n_blocks, int size)
{
    size_t n = features_chain_shingles(self->tokens, lengths, n_blocks, size, self->shingles);
    features_sort_hashes(self->shingles, self->sorted, n);
    return features_count_distinct(self->shingles, n, n_tokens);
}

/* Tokens -> hashes -> shingles -> sorted -> (distinct, counts, n_tokens) of a page's blocks;
 * with a `set_size` (> 0), the distinct shingles of that many tokens across the blocks too,
 * as of the blocks joined by spaces, from the same tokens (a space is never in a token). */
static PyObject *
page_shingle_counts(TokenTable *self, const Text *texts, Py_ssize_t n_texts, int size, int set_size)
{
    size_t blocks = (size_t)n_texts + 1;
    if (features_reserve((void **)&self->lengths, &self->lengths_size, blocks, sizeof(Py_ssize_t)) < 0) {
        return NULL;
    }
    Py_ssize_t n_tokens = hash_tokens(self, texts, n_texts); /* shingles: at most one a token */
    if (n_tokens < 0) {
        return NULL;
    }
    size_t room = (size_t)n_tokens + 1;
    if (features_reserve((void **)&self->shingles, &self->shingles_size, room, sizeof(uint64_t)) < 0
        || features_reserve((void **)&self->sorted, &self->sorted_size, room, sizeof(uint64_t)) < 0) {
        return NULL;
    }
    PyObject *counted = count_shingles(self, n_tokens, self->lengths, n_texts, size);
    if (counted == NULL || set_size == 0) {
        return counted;
    }
    PyObject *across = count_shingles(self, n_tokens, &n_tokens, 1, set_size); /* one block of them all */
    PyObject *result = across ? Py_BuildValue("(OOOO)", PyTuple_GET_ITEM(counted, 0), PyTuple_GET_ITEM(counted, 1),
                                              PyTuple_GET_ITEM(counted, 2), PyTuple_GET_ITEM(across, 0))
                              : NULL;
    Py_DECREF(counted);
    Py_XDECREF(across);
    return result;
}

/* A shingle size argument: 1 to 16. */
static int
read_size(PyObject *argument, const char *name)
{
    long size = PyLong_AsLong(argument);
    if (size == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (size < 1 || size > 16) {
        PyErr_Format(PyExc_ValueError, "%s must be between 1 and 16, not %ld", name, size);
        return -1;
    }
    return (int)size;
}

/* The method itself: its arguments checked, the blocks read, the scratch trimmed after. */
PyObject *
features_shingle_counts(TokenTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 && nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "shingle_counts takes 2 or 3 arguments (blocks, size[, set_size])");
        return NULL;
    }
    int size = read_size(args[1], "size");
    int set_size = nargs == 3 ? read_size(args[2], "set_size") : 0;
    if (size < 0 || set_size < 0) {
        return NULL;
    }
    if (features_n_astral_ranges < 0) {
        PyErr_SetString(PyExc_RuntimeError, "set_script_classes() was not called");
        return NULL;
    }
    PyObject *sequence = PySequence_Fast(args[0], "blocks must be a sequence of str");
    if (sequence == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n_texts = PySequence_Fast_GET_SIZE(sequence);
    Text *texts = PyMem_New(Text, n_texts ? n_texts : 1);
    if (texts == NULL) {
        PyErr_NoMemory();
    } else if (read_blocks(sequence, texts, n_texts) == 0) {
        result = page_shingle_counts(self, texts, n_texts, size, set_size);
        release_large_scratch(self);
    }
    PyMem_Free(texts);
    Py_DECREF(sequence);
    return result;
}

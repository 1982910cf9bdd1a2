/* Normalised blocks (text.normalize_blocks): blocks cut at a boundary character, each
 * with its whitespace collapsed, empty ones (and, if asked, those without a letter) left
 * out.
 *
 * In Python, `" ".join(block.split())` makes a string of every word of every block, and
 * a regex search follows for a letter: ~0.1 ms for a 30 KB page. This is one pass over
 * the characters, making only the blocks' strings.
 */
#include "extract.h"

typedef struct {
    Py_UCS4 *data;
    Py_ssize_t length;
} Chars;

/* The block in `block` to `blocks`, when it is not empty and (if asked) holds a letter. */
static int
emit(PyObject *blocks, const Chars *block, int letter_seen, int need_letter)
{
    if (block->length == 0 || (need_letter && !letter_seen)) {
        return 0;
    }
    PyObject *text = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, block->data, block->length);
    if (text == NULL) {
        return -1;
    }
    int status = PyList_Append(blocks, text);
    Py_DECREF(text);
    return status;
}

/* fingerprinter._HAS_LETTER, [^\W\d_]: a word character that is not a digit or '_'. */
static inline int
is_letter(Py_UCS4 character)
{
    return Py_UNICODE_ISALNUM(character) && !Py_UNICODE_ISDECIMAL(character);
}

/* The blocks of the n characters of `data` (a PyUnicode kind: fold.c hands it its own
 * UCS-4 buffer). */
PyObject *
extract_collapse_chars(int kind, const void *data, Py_ssize_t n, Py_UCS4 boundary, int need_letter)
{
    Chars block = {PyMem_Malloc(sizeof(Py_UCS4) * ((size_t)n + 1)), 0};
    PyObject *blocks = PyList_New(0);
    if (block.data == NULL || blocks == NULL) {
        PyMem_Free(block.data);
        Py_XDECREF(blocks);
        return PyErr_NoMemory();
    }
    int letter_seen = 0, space_pending = 0;
    for (Py_ssize_t at = 0; at <= n; at++) {
        Py_UCS4 character = at < n ? PyUnicode_READ(kind, data, at) : boundary;
        if (character == boundary) {
            if (emit(blocks, &block, letter_seen, need_letter) < 0) {
                Py_CLEAR(blocks);
                break;
            }
            block.length = 0, letter_seen = space_pending = 0;
        } else if (Py_UNICODE_ISSPACE(character)) {
            space_pending = block.length > 0; /* never at the start; at the end, dropped */
        } else {
            if (space_pending) {
                block.data[block.length++] = ' ';
                space_pending = 0;
            }
            block.data[block.length++] = character;
            letter_seen = letter_seen || is_letter(character);
        }
    }
    PyMem_Free(block.data);
    return blocks;
}

PyObject *
extract_collapse_blocks(PyObject *module, PyObject *args)
{
    PyObject *joined;
    int boundary, need_letter;
    if (!PyArg_ParseTuple(args, "UCp:collapse_blocks", &joined, &boundary, &need_letter)) {
        return NULL;
    }
    return extract_collapse_chars(PyUnicode_KIND(joined), PyUnicode_DATA(joined), PyUnicode_GET_LENGTH(joined),
                                  (Py_UCS4)boundary, need_letter);
}

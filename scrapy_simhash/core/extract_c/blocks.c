/* The main content as text blocks (text.split_blocks and content.extract_main_blocks).
 *
 * The text is serialised with block boundaries and link markers, as the Python code
 * writes them into the tree, cut at the boundaries, and each block kept unless it is
 * a link list or a credit line, without its markers.
 */
#include "extract.h"

/* The text of an element as split_blocks serialises it, link markers and block
 * boundaries in place. */
static int
serialise(const Tree *tree, int index, Buffer *out)
{
    const Element *element = &tree->elements[index];
    if ((element->flags & BLOCK) && extract_append(out, BOUNDARY, 3) < 0) {
        return -1;
    }
    if ((element->flags & LINK) && extract_append(out, OPEN, 3) < 0) {
        return -1;
    }
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        if (event->kind == TEXT) {
            const Text *text = &tree->texts[event->index];
            if (extract_append(out, text->content, text->bytes) < 0) {
                return -1;
            }
            continue;
        }
        const Element *other = &tree->elements[event->index];
        if (event->kind == START && other->removed) {
            at = other->end;
            continue;
        }
        if ((other->flags & BLOCK) && extract_append(out, BOUNDARY, 3) < 0) {
            return -1;
        }
        if ((other->flags & LINK) && extract_append(out, event->kind == START ? OPEN : CLOSE, 3) < 0) {
            return -1;
        }
    }
    return 0;
}

/* str.isspace() of UTF-8 text (not empty): decided at its first other character. */
static int
is_space(const char *s, Py_ssize_t length)
{
    const unsigned char *u = (const unsigned char *)s;
    for (Py_ssize_t at = 0; at < length;) {
        Py_UCS4 code;
        int size = u[at] < 0x80 ? 1 : u[at] < 0xE0 ? 2 : u[at] < 0xF0 ? 3 : 4;
        if (at + size > length) {
            return 0; /* not UTF-8: decoding it will say so */
        }
        if (size == 1) {
            code = u[at];
        } else if (size == 2) {
            code = ((Py_UCS4)(u[at] & 0x1F) << 6) | (u[at + 1] & 0x3F);
        } else if (size == 3) {
            code = ((Py_UCS4)(u[at] & 0x0F) << 12) | ((Py_UCS4)(u[at + 1] & 0x3F) << 6) | (u[at + 2] & 0x3F);
        } else {
            code = ((Py_UCS4)(u[at] & 0x07) << 18) | ((Py_UCS4)(u[at + 1] & 0x3F) << 12)
                   | ((Py_UCS4)(u[at + 2] & 0x3F) << 6) | (u[at + 3] & 0x3F);
        }
        if (!Py_UNICODE_ISSPACE(code)) {
            return 0;
        }
        at += size;
    }
    return 1;
}

/* content._is_link_list: most of the block's visible text is link text. */
static int
is_link_list(const char *s, Py_ssize_t length)
{
    Tally tally = {0, 0, 0, 0};
    extract_tally_bytes(&tally, s, length);
    return (double)tally.committed > extract_rules.link_density * (double)tally.total;
}

/* boilerplate.is_credit_line, asked only of blocks that may start like one (as it
 * checks first itself): after spaces, an opening bracket and spaces, one of its letters. */
static int
is_credit_line(PyObject *block)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(block), at = 0;
    int kind = PyUnicode_KIND(block);
    const void *data = PyUnicode_DATA(block);
    while (at < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, at))) {
        at++;
    }
    if (at < n
        && PyUnicode_FindChar(extract_rules.credit_brackets, PyUnicode_READ(kind, data, at), 0, PY_SSIZE_T_MAX, 1)
               >= 0) {
        at++;
        while (at < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, at))) {
            at++;
        }
    }
    if (at == n
        || PyUnicode_FindChar(extract_rules.credit_letters, PyUnicode_READ(kind, data, at), 0, PY_SSIZE_T_MAX, 1) < 0) {
        return 0;
    }
    PyObject *answer = PyObject_CallOneArg(extract_rules.credit, block);
    int credit = answer ? PyObject_IsTrue(answer) : -1;
    Py_XDECREF(answer);
    return credit;
}

/* Append a split block to `blocks` unless it is a link list or a credit line, without its
 * link markers; -1 with an exception. */
static int
keep_block(const char *s, Py_ssize_t length, int links_are_content, PyObject *blocks, Buffer *scratch)
{
    Py_ssize_t marker = extract_find_marker(s, 0, length, OPEN_MARK, CLOSE_MARK);
    int open = marker >= 0 && extract_find_marker(s, marker, length, OPEN_MARK, OPEN_MARK) >= 0;
    if (open && !links_are_content && is_link_list(s, length)) {
        return 0;
    }
    PyObject *block = PyUnicode_DecodeUTF8(s, length, "strict");
    int credit = block ? is_credit_line(block) : -1;
    if (credit != 0) {
        Py_XDECREF(block);
        return credit < 0 ? -1 : 0;
    }
    if (marker >= 0) { /* the block without its markers */
        Py_DECREF(block);
        scratch->length = 0;
        Py_ssize_t from = 0;
        for (;;) {
            Py_ssize_t next = extract_find_marker(s, from, length, OPEN_MARK, CLOSE_MARK);
            if (extract_append(scratch, s + from, (next < 0 ? length : next) - from) < 0) {
                return -1;
            }
            if (next < 0) {
                break;
            }
            from = next + 3;
        }
        block = PyUnicode_DecodeUTF8(scratch->data ? scratch->data : "", scratch->length, "strict");
        if (block == NULL) {
            return -1;
        }
    }
    int status = PyList_Append(blocks, block);
    Py_DECREF(block);
    return status;
}

/* The kept blocks of element `index` appended to `blocks`; -1 with an exception. */
int
extract_split_blocks(const Tree *tree, int index, int links_are_content, PyObject *blocks, Buffer *text,
                     Buffer *scratch)
{
    text->length = 0;
    if (serialise(tree, index, text) < 0) {
        return -1;
    }
    const char *s = text->data ? text->data : "";
    for (Py_ssize_t start = 0; start <= text->length;) {
        Py_ssize_t end = extract_find_marker(s, start, text->length, BOUNDARY_MARK, BOUNDARY_MARK);
        end = end < 0 ? text->length : end;
        if (end > start) {
            int space = is_space(s + start, end - start);
            if (space < 0 || (!space && keep_block(s + start, end - start, links_are_content, blocks, scratch) < 0)) {
                return -1;
            }
        }
        start = end + 3;
    }
    return 0;
}

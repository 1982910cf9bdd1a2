/* A thread's replies (threads.thread_replies), in C: the posts after the first.
 *
 * threads.py says when siblings are a thread's posts. The structure is read here; only
 * the test for a date and a time of day (threads.has_stamp, a regular expression over
 * Unicode digits and spaces) is asked of Python, of the few candidates' text.
 */
#include "extract.h"

static PyObject *has_stamp; /* threads.has_stamp, from configure_threads() */

/* configure_threads(has_stamp). */
PyObject *
extract_configure_threads(PyObject *module, PyObject *function)
{
    if (!PyCallable_Check(function)) {
        PyErr_SetString(PyExc_TypeError, "has_stamp must be callable");
        return NULL;
    }
    Py_XSETREF(has_stamp, Py_NewRef(function));
    Py_RETURN_NONE;
}

static int
is_html_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* threads._post_key: the first class name of `node` into `key` (its tag is compared
 * apart); 1 if it has one, 0 if not, -1 with an exception. */
static int
post_key(const xmlNode *node, Buffer *key)
{
    key->length = 0;
    for (const xmlAttr *attribute = node->properties; attribute != NULL; attribute = attribute->next) {
        if (attribute->ns == NULL && strcmp((const char *)attribute->name, "class") == 0) {
            if (extract_append_value(key, attribute) < 0) {
                return -1;
            }
            break; /* (the first, as lxml's get() reads it) */
        }
    }
    Py_ssize_t start = 0, end;
    while (start < key->length && is_html_space(key->data[start])) {
        start++;
    }
    for (end = start; end < key->length && !is_html_space(key->data[end]); end++) {
    }
    memmove(key->data, key->data + start, (size_t)(end - start));
    key->length = end - start;
    return key->length > 0;
}

static int
same_tag(const xmlNode *a, const xmlNode *b)
{
    if (strcmp((const char *)a->name, (const char *)b->name) != 0 || (a->ns == NULL) != (b->ns == NULL)) {
        return 0;
    }
    return a->ns == NULL || strcmp((const char *)a->ns->href, (const char *)b->ns->href) == 0;
}

/* Whether element `index` has the post key (`tag`, `key`); -1 with an exception. */
static int
has_key(const Tree *tree, int index, const xmlNode *tag, const Buffer *key, Buffer *other)
{
    const xmlNode *node = tree->elements[index].node;
    if (!same_tag(node, tag)) {
        return 0;
    }
    int has = post_key(node, other);
    if (has <= 0) {
        return has;
    }
    return other->length == key->length && memcmp(other->data, key->data, (size_t)key->length) == 0;
}

/* threads.has_stamp of the element's text; -1 with an exception. */
static int
stamped(const Tree *tree, int index, Buffer *text)
{
    text->length = 0;
    TextWalk walk = extract_text_walk(tree, index, 0);
    for (const Text *piece; (piece = extract_next_text(&walk)) != NULL;) {
        if (extract_append(text, piece->content, piece->bytes) < 0) {
            return -1;
        }
    }
    PyObject *string = PyUnicode_DecodeUTF8(text->data ? text->data : "", text->length, "strict");
    PyObject *answer = string ? PyObject_CallOneArg(has_stamp, string) : NULL;
    int result = answer ? PyObject_IsTrue(answer) : -1;
    Py_XDECREF(string);
    Py_XDECREF(answer);
    return result;
}

/* The replies after `first` (which holds a heading) marked in `reply`, if it opens a
 * thread, and the posts after it in `follower` (threads._replies_after); -1 with an
 * exception. */
static int
mark_replies_after(const Tree *tree, int first, const char *holds_heading, char *reply, char *follower,
                   Buffer *scratch)
{
    const Element *element = &tree->elements[first];
    Buffer *key = &scratch[0], *other = &scratch[1];
    int has = post_key(element->node, key);
    if (has <= 0) {
        return has;
    }
    int n_later = 0, later_heading = 0;
    for (int at = element->next_sibling; at >= 0; at = tree->elements[at].next_sibling) {
        int same = has_key(tree, at, element->node, key, other);
        if (same < 0) {
            return -1;
        }
        follower[at] = follower[at] || same;
        n_later += same;
        later_heading = later_heading || (same && holds_heading[at]);
    }
    for (int at = tree->elements[element->parent].first_child; at != first; at = tree->elements[at].next_sibling) {
        int same = has_key(tree, at, element->node, key, other);
        if (same != 0) {
            return same < 0 ? -1 : 0; /* (not the first post) */
        }
    }
    if (n_later == 0 || later_heading) {
        return 0; /* (a list of articles, not a thread) */
    }
    int status = stamped(tree, first, other);
    for (int at = element->next_sibling; status > 0 && at >= 0; at = tree->elements[at].next_sibling) {
        int same = has_key(tree, at, element->node, key, other);
        status = same > 0 ? stamped(tree, at, other) : same < 0 ? -1 : status;
    }
    for (int at = element->next_sibling; status > 0 && at >= 0; at = tree->elements[at].next_sibling) {
        reply[at] = reply[at] || has_key(tree, at, element->node, key, other) > 0;
    }
    return status < 0 ? -1 : 0;
}

/* threads.thread_replies: the replies of the page's threads marked in `reply` (one byte
 * an element, zeroed by the caller); -1 with an exception. Asked before pruning. */
int
extract_mark_thread_replies(const Tree *tree, char *reply)
{
    if (has_stamp == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_threads() was not called");
        return -1;
    }
    char *holds_heading = PyMem_Calloc((size_t)tree->n_elements + 1, 2); /* and then `follower` */
    if (holds_heading == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    char *follower = holds_heading + tree->n_elements + 1; /* never a first post: once per group */
    for (int index = tree->n_elements - 1; index >= 0; index--) { /* (children come after their parent) */
        const Element *element = &tree->elements[index];
        holds_heading[index] = holds_heading[index] || (element->flags & SECTION_HEADING) != 0;
        if (holds_heading[index] && element->parent >= 0) {
            holds_heading[element->parent] = 1;
        }
    }
    Buffer scratch[2] = {{0}, {0}};
    int status = 0;
    for (int index = 1; status == 0 && index < tree->n_elements; index++) { /* (not the body) */
        if (holds_heading[index] && !follower[index]) {
            status = mark_replies_after(tree, index, holds_heading, reply, follower, scratch);
        }
    }
    PyMem_Free(scratch[0].data);
    PyMem_Free(scratch[1].data);
    PyMem_Free(holds_heading);
    return status;
}

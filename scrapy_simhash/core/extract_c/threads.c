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
    if (extract_class_value(node, key) < 0) {
        return -1;
    }
    Py_ssize_t start = 0, end;
    while (start < key->length && is_html_space(key->data[start])) {
        start++;
    }
    for (end = start; end < key->length && !is_html_space(key->data[end]); end++) {
    }
    if (start > 0 && end > start) {
        memmove(key->data, key->data + start, (size_t)(end - start));
    }
    key->length = end - start;
    return key->length > 0;
}

/* Whether element `index` has the post key (`tag`, `key`); -1 with an exception. */
static int
has_key(const Tree *tree, int index, const xmlNode *tag, const Buffer *key, Buffer *other)
{
    const xmlNode *node = tree->elements[index].node;
    if (!extract_same_tag(node, tag)) {
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

/* A child with a post key, by the key's hash: a parent's posts sorted into their shapes. */
typedef struct {
    uint64_t hash;
    int index;
} Post;

static int
by_shape_then_place(const void *a, const void *b)
{
    const Post *x = a, *y = b;
    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    return (x->index > y->index) - (x->index < y->index);
}

/* The posts of one shape, group[0] the first (group[1..n): its siblings of that shape, in
 * order): its replies marked in `reply` if they are a thread's (threads._replies_among);
 * -1 with an exception. */
static int
mark_group(const Tree *tree, const int *group, int n, const char *holds_heading, char *reply, Buffer *text)
{
    if (n < 2 || !holds_heading[group[0]]) {
        return 0;
    }
    for (int i = 1; i < n; i++) {
        if (holds_heading[group[i]]) {
            return 0; /* (a list of articles, not a thread) */
        }
    }
    for (int i = 0; i < n; i++) {
        int has = stamped(tree, group[i], text);
        if (has <= 0) {
            return has;
        }
    }
    for (int i = 1; i < n; i++) {
        reply[group[i]] = 1;
    }
    return 0;
}

/* The replies among the children of `parent`, each child looked at once (sorted by the
 * hash of its shape; a run of one hash split by the shapes themselves); -1 with an
 * exception. `posts` and `group` have room for every element. */
static int
mark_replies_among(const Tree *tree, int parent, const char *holds_heading, char *reply, Post *posts, int *group,
                   Buffer *scratch)
{
    Buffer *key = &scratch[0], *other = &scratch[1];
    int n = 0;
    for (int at = tree->elements[parent].first_child; at >= 0; at = tree->elements[at].next_sibling) {
        const xmlNode *node = tree->elements[at].node;
        int has = post_key(node, key);
        if (has < 0) {
            return -1;
        }
        if (has) {
            posts[n++] = (Post){extract_hash_tagged(node, key->data, (size_t)key->length), at};
        }
    }
    qsort(posts, (size_t)n, sizeof(Post), by_shape_then_place);
    for (int run = 0, end; run < n; run = end) {
        for (end = run + 1; end < n && posts[end].hash == posts[run].hash; end++) {
        }
        for (int i = run; i < end; i++) { /* (the first of each shape in the run, in order) */
            if (posts[i].index < 0) {
                continue;
            }
            const xmlNode *node = tree->elements[posts[i].index].node;
            if (post_key(node, key) < 0) {
                return -1;
            }
            int n_group = 0;
            group[n_group++] = posts[i].index;
            for (int j = i + 1; j < end; j++) {
                int same = posts[j].index >= 0 ? has_key(tree, posts[j].index, node, key, other) : 0;
                if (same < 0) {
                    return -1;
                }
                if (same) {
                    group[n_group++] = posts[j].index;
                    posts[j].index = -1; /* (grouped) */
                }
            }
            if (mark_group(tree, group, n_group, holds_heading, reply, other) < 0) {
                return -1;
            }
        }
    }
    return 0;
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
    size_t n = (size_t)tree->n_elements + 1;
    char *holds_heading = PyMem_Calloc(n, 1);
    Post *posts = PyMem_Malloc(n * sizeof(Post));
    int *group = PyMem_Malloc(n * sizeof(int));
    Buffer scratch[2] = {{0}, {0}};
    int status = holds_heading && posts && group ? 0 : -1;
    if (status < 0) {
        PyErr_NoMemory();
    }
    for (int index = tree->n_elements - 1; status == 0 && index >= 0; index--) { /* (children after parents) */
        const Element *element = &tree->elements[index];
        holds_heading[index] = holds_heading[index] || (element->flags & SECTION_HEADING) != 0;
        if (holds_heading[index] && element->parent >= 0) {
            holds_heading[element->parent] = 1;
        }
    }
    for (int index = 0; status == 0 && index < tree->n_elements; index++) { /* (the body's children too) */
        if (holds_heading[index]) {
            status = mark_replies_among(tree, index, holds_heading, reply, posts, group, scratch);
        }
    }
    PyMem_Free(scratch[0].data);
    PyMem_Free(scratch[1].data);
    PyMem_Free(holds_heading);
    PyMem_Free(posts);
    PyMem_Free(group);
    return status;
}

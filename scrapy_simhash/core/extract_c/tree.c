/* The tree as events: libxml2's nodes walked once, in document order, into arrays.
 *
 * Element start, text, element end: every later pass is a loop over a range of this
 * array, and an element removed by the pruning is skipped by jumping to its end.
 */
#include "extract.h"

/* The last element that starts inside element `index` (itself when none does): a walk in
 * element order goes on after it to skip `index`'s subtree. */
int
extract_last_inside(const Tree *tree, int index)
{
    int end = tree->elements[index].end;
    while (index + 1 < tree->n_elements && tree->elements[index + 1].start < end) {
        index++;
    }
    return index;
}

/* The element's attribute `name` without a namespace, the first (as lxml's get() reads
 * it); NULL for none. */
const xmlAttr *
extract_attribute(const xmlNode *node, const char *name)
{
    for (const xmlAttr *attribute = node->properties; attribute != NULL; attribute = attribute->next) {
        if (attribute->ns == NULL && strcmp((const char *)attribute->name, name) == 0) {
            return attribute;
        }
    }
    return NULL;
}

/* Make room for `needed` items of `item` bytes in *array (doubling); -1 with an exception. */
int
extract_grow(void **array, int *capacity, int needed, size_t item)
{
    if (needed <= *capacity) {
        return 0;
    }
    int wanted = *capacity ? *capacity * 2 : 256;
    void *bigger = PyMem_Realloc(*array, (size_t)wanted * item);
    if (bigger == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *array = bigger;
    *capacity = wanted;
    return 0;
}

static int
add_event(Tree *tree, int kind, int index)
{
    if (extract_grow((void **)&tree->events, &tree->cap_events, tree->n_events + 1, sizeof(Event)) < 0) {
        return -1;
    }
    tree->events[tree->n_events++] = (Event){kind, index};
    return tree->n_events - 1;
}

int
extract_append(Buffer *buffer, const char *data, Py_ssize_t length)
{
    if (length == 0) {
        return 0; /* (an empty buffer has no data: memcpy from or to NULL is undefined, even of 0 bytes) */
    }
    if (buffer->length + length > buffer->capacity) {
        Py_ssize_t wanted = (buffer->length + length) * 2 + 256;
        char *bigger = PyMem_Realloc(buffer->data, (size_t)wanted);
        if (bigger == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        buffer->data = bigger;
        buffer->capacity = wanted;
    }
    memcpy(buffer->data + buffer->length, data, (size_t)length);
    buffer->length += length;
    return 0;
}

static unsigned
tag_flags(const xmlNode *node)
{
    if (node->ns != NULL) { /* lxml names it "{namespace}name": no class of ours */
        return 0;
    }
    PyObject *name = PyBytes_FromString((const char *)node->name);
    if (name == NULL) {
        return (unsigned)-1;
    }
    PyObject *flags = PyDict_GetItemWithError(extract_rules.tags, name);
    Py_DECREF(name);
    if (flags == NULL) {
        return PyErr_Occurred() ? (unsigned)-1 : 0;
    }
    return (unsigned)PyLong_AsUnsignedLong(flags);
}

static int
add_element(Tree *tree, const xmlNode *node, int parent, unsigned flags)
{
    if (extract_grow((void **)&tree->elements, &tree->cap_elements, tree->n_elements + 1, sizeof(Element)) < 0) {
        return -1;
    }
    int index = tree->n_elements++;
    tree->elements[index] = (Element){node, parent, -1, -1, -1, -1, flags, 0, 0, 0};
    return index;
}

/* The code point of the UTF-8 character at u[at], and its size in bytes; 0 where it is cut
 * short (not UTF-8: decoding the text will say so). */
int
extract_decode_utf8(const unsigned char *u, Py_ssize_t at, Py_ssize_t length, Py_UCS4 *code)
{
    int size = u[at] < 0x80 ? 1 : u[at] < 0xE0 ? 2 : u[at] < 0xF0 ? 3 : 4;
    if (at + size > length) {
        return 0;
    }
    if (size == 1) {
        *code = u[at];
    } else if (size == 2) {
        *code = ((Py_UCS4)(u[at] & 0x1F) << 6) | (u[at + 1] & 0x3F);
    } else if (size == 3) {
        *code = ((Py_UCS4)(u[at] & 0x0F) << 12) | ((Py_UCS4)(u[at + 1] & 0x3F) << 6) | (u[at + 2] & 0x3F);
    } else {
        *code = ((Py_UCS4)(u[at] & 0x07) << 18) | ((Py_UCS4)(u[at + 1] & 0x3F) << 12)
                | ((Py_UCS4)(u[at + 2] & 0x3F) << 6) | (u[at + 3] & 0x3F);
    }
    return size;
}

/* Where the next of the markers U+E000 + first ... U+E000 + last starts in s[from:length],
 * or -1: a block boundary (BOUNDARY_MARK), a link's opening (OPEN_MARK), either link marker. */
Py_ssize_t
extract_find_marker(const char *s, Py_ssize_t from, Py_ssize_t length, unsigned char first, unsigned char last)
{
    while (from + 2 < length) {
        const char *lead = memchr(s + from, MARK_BYTE, (size_t)(length - from - 2));
        if (lead == NULL) {
            return -1;
        }
        from = lead - s;
        unsigned char kind = (unsigned char)s[from + 2];
        if ((unsigned char)s[from + 1] == 0x80 && kind >= first && kind <= last) {
            return from;
        }
        from++;
    }
    return -1;
}

static int
add_text(Tree *tree, const xmlNode *node)
{
    if (extract_grow((void **)&tree->texts, &tree->cap_texts, tree->n_texts + 1, sizeof(Text)) < 0) {
        return -1;
    }
    const char *s = node->content ? (const char *)node->content : "";
    Py_ssize_t bytes = (Py_ssize_t)strlen(s);
    long continuation = 0, spaces = 0;
    for (Py_ssize_t i = 0; i < bytes; i++) { /* a loop the compiler vectorises */
        continuation += ((unsigned char)s[i] & 0xC0) == 0x80;
        spaces += s[i] == ' ';
    }
    int markers = extract_find_marker(s, 0, bytes, OPEN_MARK, CLOSE_MARK) >= 0;
    tree->texts[tree->n_texts] = (Text){s, bytes, bytes - continuation, spaces, markers};
    return add_event(tree, TEXT, tree->n_texts++) < 0 ? -1 : 0;
}

/* Cache of tag classes by name pointer: libxml2 interns names in the parser's dictionary. */
typedef struct {
    const xmlChar *names[64];
    unsigned flags[64];
} TagCache;

static unsigned
cached_flags(TagCache *cache, const xmlNode *node)
{
    size_t slot = ((uintptr_t)node->name >> 4) % 64;
    if (cache->names[slot] == node->name && node->ns == NULL) {
        return cache->flags[slot];
    }
    unsigned flags = tag_flags(node);
    if (node->ns == NULL && flags != (unsigned)-1) {
        cache->names[slot] = node->name;
        cache->flags[slot] = flags;
    }
    return flags;
}

static int
is_skipped(const xmlNode *node, const xmlNode *const *skipped, int n_skipped)
{
    for (int i = 0; i < n_skipped; i++) {
        if (skipped[i] == node) {
            return 1;
        }
    }
    return 0;
}

/* An element with this many elements around it is past what text.parse_html's parser
 * reads (libxml2's limit without XML_PARSE_HUGE), which then says the page is "too_deep".
 * Scrapy's selectors parse with huge_tree, up to 2048 levels, and drop what lies deeper
 * without a word: such a tree goes to the Python code, which parses the page again and
 * skips it, so that a page gets one verdict whoever parsed it. */
#define MAX_PARSED_DEPTH 256

static int
ancestors_of(const xmlNode *node)
{
    int count = 0;
    for (node = node->parent; node != NULL && node->type == XML_ELEMENT_NODE; node = node->parent) {
        count++;
    }
    return count;
}

/* Whether an element of the subtree of `top` (an element with `depth` elements around it)
 * has MAX_PARSED_DEPTH or more around it: the walk leaves invisible subtrees out, the
 * parser's limit does not. */
static int
reaches_max_depth(const xmlNode *top, int depth)
{
    const xmlNode *node = top;
    for (;;) {
        if (node->type == XML_ELEMENT_NODE && depth >= MAX_PARSED_DEPTH) {
            return 1;
        }
        if (node->type == XML_ELEMENT_NODE && node->children != NULL) {
            node = node->children;
            depth++;
            continue;
        }
        while (node != top && node->next == NULL) {
            node = node->parent;
            depth--;
        }
        if (node == top) {
            return 0;
        }
        node = node->next;
    }
}

/* Walk the subtree of `root` in document order into events, without the subtrees of
 * `skipped` (their tails stay, as digests.remove_digests leaves them); -1 with an exception. */
int
extract_flatten(Tree *tree, const xmlNode *root, const xmlNode *const *skipped, int n_skipped)
{
    TagCache cache = {{0}, {0}};
    const xmlNode *node = root;
    int parent = -1, previous = -1; /* previous: the last element child seen of `parent` */
    int depth = ancestors_of(root); /* the elements around `node` */
    while (node != NULL) {
        if (node->type == XML_ELEMENT_NODE) {
            if (node->line == 65535) {
                PyErr_SetString(extract_unsupported, "line numbers past 65534");
                return -1;
            }
            if (depth >= MAX_PARSED_DEPTH) {
                goto too_deep;
            }
            unsigned flags = cached_flags(&cache, node);
            int left_out = node != root && ((flags != (unsigned)-1 && (flags & INVISIBLE)) /* as if stripped */
                                            || (n_skipped > 0 && is_skipped(node, skipped, n_skipped)));
            if (left_out) { /* its subtree out, its tail in */
                if (reaches_max_depth(node, depth)) {
                    goto too_deep;
                }
                goto next;
            }
            int index = flags == (unsigned)-1 ? -1 : add_element(tree, node, parent, flags);
            if (index < 0 || (tree->elements[index].start = add_event(tree, START, index)) < 0) {
                return -1;
            }
            if (previous >= 0) {
                tree->elements[previous].next_sibling = index;
            } else if (parent >= 0) {
                tree->elements[parent].first_child = index;
            }
            if (node->children != NULL) {
                parent = index, previous = -1;
                node = node->children;
                depth++;
                continue;
            }
            if ((tree->elements[index].end = add_event(tree, END, index)) < 0) {
                return -1;
            }
            previous = index;
        } else if (node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE) {
            if (add_text(tree, node) < 0) {
                return -1;
            }
        } else if (node->type != XML_COMMENT_NODE && node->type != XML_PI_NODE) {
            /* (comments and processing instructions are skipped, as parse_html strips them) */
            PyErr_Format(extract_unsupported, "a node of type %d", (int)node->type);
            return -1;
        }
    next:
        /* Up to the next node in document order, closing the elements left. */
        while (node != root && node->next == NULL) {
            node = node->parent;
            depth--;
            if ((tree->elements[parent].end = add_event(tree, END, parent)) < 0) {
                return -1;
            }
            previous = parent;
            parent = tree->elements[parent].parent;
        }
        node = node == root ? NULL : node->next;
    }
    return 0;
too_deep:
    PyErr_SetString(extract_unsupported, "elements nested deeper than the parser reads");
    return -1;
}

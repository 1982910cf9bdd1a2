/* The links of a page into anchors of other documents (core/digests.py: _other_document),
 * found on libxml2's nodes and grouped by the document: what digest.c judges. */
#include "extract.h"

DigestRules extract_digest_rules = {20, 0.9, 100.0};

/* Whether `node` is the HTML element `name` (of one letter: "a", "p"). */
int
extract_is_element(const xmlNode *node, char name)
{
    return node->type == XML_ELEMENT_NODE && node->name[0] == name && node->name[1] == '\0' && node->ns == NULL;
}

int
extract_is_named(const xmlNode *node, const char *name)
{
    return node->type == XML_ELEMENT_NODE && node->ns == NULL && strcmp((const char *)node->name, name) == 0;
}

/* The next node after `node` in document order inside `top`'s subtree, or NULL. */
const xmlNode *
extract_next_in(const xmlNode *node, const xmlNode *top)
{
    if (node->type == XML_ELEMENT_NODE && node->children != NULL) {
        return node->children;
    }
    while (node != top && node->next == NULL) {
        node = node->parent;
    }
    return node == top ? NULL : node->next;
}

/* The href of an <a>; NULL for none, with *unsupported set when it is not one text node. */
const char *
extract_href_of(const xmlNode *link, int *unsupported)
{
    const xmlAttr *attribute = extract_attribute(link, "href");
    if (attribute == NULL) {
        return NULL;
    }
    const xmlNode *value = attribute->children;
    if (value == NULL) {
        return "";
    }
    if (value->type != XML_TEXT_NODE || value->next != NULL) {
        *unsupported = 1;
        return NULL;
    }
    return (const char *)value->content;
}

static int
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* _document_name(): the last non-empty segment of path[:length] before any ';'. */
static void
document_name(const char *path, Py_ssize_t length, const char **name, Py_ssize_t *name_length)
{
    const char *semicolon = memchr(path, ';', (size_t)length);
    Py_ssize_t end = semicolon ? semicolon - path : length;
    while (end > 0 && path[end - 1] == '/') {
        end--;
    }
    Py_ssize_t start = end;
    while (start > 0 && path[start - 1] != '/') {
        start--;
    }
    *name = path + start, *name_length = end - start;
}

/* _other_document(): the document `href` points into (target, length), or 0. */
int
extract_other_document(const char *href, const char *own, const char **target, Py_ssize_t *length)
{
    const char *hash = strchr(href, '#');
    if (hash == NULL || hash[1] == '\0') {
        return 0;
    }
    const char *query = memchr(href, '?', (size_t)(hash - href));
    const char *start = href, *end = query ? query : hash;
    while (start < end && is_space(*start)) {
        start++;
    }
    while (end > start && is_space(end[-1])) {
        end--;
    }
    Py_ssize_t size = end - start;
    if (size == 0 || (size >= 11 && memcmp(start, "javascript:", 11) == 0) ||
        (size >= 7 && memcmp(start, "mailto:", 7) == 0)) {
        return 0;
    }
    if (own != NULL) {
        const char *name;
        Py_ssize_t name_length;
        document_name(start, size, &name, &name_length);
        if ((size_t)name_length == strlen(own) && memcmp(name, own, (size_t)name_length) == 0) {
            return 0;
        }
    }
    *target = start, *length = size;
    return 1;
}

/* The order of two byte strings: memcmp's, the shorter first when one begins the other. */
int
extract_compare_bytes(const char *a, Py_ssize_t a_length, const char *b, Py_ssize_t b_length)
{
    int order = memcmp(a, b, (size_t)(a_length < b_length ? a_length : b_length));
    return order ? order : (a_length > b_length) - (a_length < b_length);
}

static int
by_target(const void *a, const void *b)
{
    const Anchored *x = a, *y = b;
    if (x->hash != y->hash) {
        return x->hash < y->hash ? -1 : 1;
    }
    int order = extract_compare_bytes(x->target, x->length, y->target, y->length);
    return order ? order : x->order - y->order;
}

int
extract_same_target(const Anchored *a, const Anchored *b)
{
    return extract_compare_bytes(a->target, a->length, b->target, b->length) == 0;
}

/* FNV-1a (container.c); never 0 (an empty slot of keep_frequent's table). */
static uint64_t
hash_of(const char *s, Py_ssize_t length)
{
    uint64_t hash = extract_hash_bytes(EXTRACT_HASH_START, s, (size_t)length);
    return hash ? hash : 1;
}

/* Keep the links whose target's hash is that of at least min_entries links (a superset of
 * those whose target is: sorting all the links of a big page cost more than the rest). */
static int
keep_frequent(Anchored *links, int n)
{
    int size = 1;
    while (size < 2 * n) {
        size <<= 1;
    }
    typedef struct {
        uint64_t hash;
        int count;
    } Slot;
    Slot *table = PyMem_Calloc((size_t)size, sizeof(Slot));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int *slot_of = PyMem_Malloc(sizeof(int) * (size_t)n);
    if (slot_of == NULL) {
        PyMem_Free(table);
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int slot = (int)(links[i].hash & (uint64_t)(size - 1));
        while (table[slot].hash != 0 && table[slot].hash != links[i].hash) {
            slot = (slot + 1) & (size - 1);
        }
        table[slot].hash = links[i].hash, table[slot].count++, slot_of[i] = slot;
    }
    int kept = 0;
    for (int i = 0; i < n; i++) {
        if (table[slot_of[i]].count >= extract_digest_rules.min_entries) {
            links[kept++] = links[i];
        }
    }
    PyMem_Free(slot_of);
    PyMem_Free(table);
    return kept;
}

/* The anchored links of `root` into other documents (extract_other_document) whose target
 * may be that of min_entries of them, sorted by target, then in document order: into
 * *links (the caller frees it); how many, or -1 with an exception. */
int
extract_anchored_links(const xmlNode *root, const char *own, Anchored **links)
{
    int n = 0, capacity = 0, unsupported = 0;
    for (const xmlNode *node = root->children; node != NULL; node = extract_next_in(node, root)) {
        if (!extract_is_element(node, 'a')) {
            continue;
        }
        const char *href = extract_href_of(node, &unsupported), *target;
        Py_ssize_t length;
        if (unsupported) {
            PyErr_SetString(extract_unsupported, "an href of several nodes");
            return -1;
        }
        if (href != NULL && extract_other_document(href, own, &target, &length)) {
            if (extract_grow((void **)links, &capacity, n + 1, sizeof(Anchored)) < 0) {
                return -1;
            }
            (*links)[n] = (Anchored){node, target, length, hash_of(target, length), n};
            n++;
        }
    }
    if (n < extract_digest_rules.min_entries || (n = keep_frequent(*links, n)) <= 0) {
        return n < 0 ? -1 : 0;
    }
    qsort(*links, (size_t)n, sizeof(Anchored), by_target);
    return n;
}

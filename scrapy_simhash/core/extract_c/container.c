/* A container's verdict as it holds for it (boilerplate.container_verdict), in C: the
 * attributes' verdict (prune.c, names.c) and what the element holds or the page repeats.
 */
#include "extract.h"

/* Whether the element holds an <a href> (below it). */
static int
holds_link(const Tree *tree, int index)
{
    for (int at = index + 1, last = extract_last_inside(tree, index); at <= last; at++) {
        if ((tree->elements[at].flags & LINK) && extract_attribute(tree->elements[at].node, "href") != NULL) {
            return 1;
        }
    }
    return 0;
}

/* The element's class into `value` (lxml's get("class")): 1, 0 without one (`value`
 * empty), -1 with an exception. */
int
extract_class_value(const xmlNode *node, Buffer *value)
{
    value->length = 0;
    const xmlAttr *attribute = extract_attribute(node, "class");
    if (attribute == NULL) {
        return 0;
    }
    return extract_append_value(value, attribute) < 0 ? -1 : 1;
}

uint64_t
extract_hash_bytes(uint64_t hash, const char *data, size_t length)
{
    for (size_t i = 0; i < length; i++) { /* FNV-1a */
        hash = (hash ^ (unsigned char)data[i]) * 0x100000001b3ULL;
    }
    return hash;
}

/* The hash of the element's tag and class (in `value`); -1 with an exception, 0 without a class. */
static int
tag_and_class(const xmlNode *node, Buffer *value, uint64_t *hash)
{
    int has = extract_class_value(node, value);
    if (has > 0) {
        *hash = extract_hash_tagged(node, value->data, (size_t)value->length);
    }
    return has;
}

/* The hash of an element's tag (lxml's "{namespace}name") and of `data`. */
uint64_t
extract_hash_tagged(const xmlNode *node, const char *data, size_t length)
{
    const char *name = (const char *)node->name, *href = node->ns ? (const char *)node->ns->href : "";
    uint64_t hash = extract_hash_bytes(EXTRACT_HASH_START, name, strlen(name) + 1);
    return extract_hash_bytes(extract_hash_bytes(hash, href, strlen(href) + 1), data, length);
}

static int
by_hash(const void *a, const void *b)
{
    const ClassEntry *x = a, *y = b;
    return (x->hash > y->hash) - (x->hash < y->hash);
}

/* Every element with a class, sorted by the hash of its tag and class; -1 with an exception. */
static int
build_index(const Tree *tree, ClassIndex *classes, Buffer *value)
{
    classes->entries = PyMem_Malloc(sizeof(ClassEntry) * ((size_t)tree->n_elements + 1));
    if (classes->entries == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (int index = 0; index < tree->n_elements; index++) {
        uint64_t hash;
        int has = tag_and_class(tree->elements[index].node, value, &hash);
        if (has < 0) {
            return -1;
        }
        if (has) {
            classes->entries[classes->n++] = (ClassEntry){hash, index};
        }
    }
    qsort(classes->entries, (size_t)classes->n, sizeof(ClassEntry), by_hash);
    classes->built = 1;
    return 0;
}

/* Whether two elements have one tag (lxml's "{namespace}name"). */
int
extract_same_tag(const xmlNode *a, const xmlNode *b)
{
    if (strcmp((const char *)a->name, (const char *)b->name) != 0 || (a->ns == NULL) != (b->ns == NULL)) {
        return 0;
    }
    return a->ns == NULL || strcmp((const char *)a->ns->href, (const char *)b->ns->href) == 0;
}

/* boilerplate.repeated_in: another element of the tree has the element's tag and class
 * (the tree's classes indexed once, when first asked); -1 with an exception. */
static int
is_repeated(const Tree *tree, int index, ClassIndex *classes)
{
    Buffer own = {0}, other = {0};
    uint64_t hash = 0;
    const xmlNode *node = tree->elements[index].node;
    int status = classes->built ? 0 : build_index(tree, classes, &other);
    status = status < 0 ? -1 : tag_and_class(node, &own, &hash);
    int low = 0, high = classes->n, found = 0;
    while (status > 0 && low < high) { /* the first entry of this hash */
        int middle = low + (high - low) / 2;
        if (classes->entries[middle].hash < hash) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    for (int at = low; status > 0 && !found && at < classes->n && classes->entries[at].hash == hash; at++) {
        int candidate = classes->entries[at].index;
        if (candidate != index && extract_same_tag(tree->elements[candidate].node, node)) {
            status = extract_class_value(tree->elements[candidate].node, &other) < 0 ? -1 : 1;
            found = other.length == own.length && memcmp(other.data, own.data, (size_t)own.length) == 0;
        }
    }
    PyMem_Free(own.data);
    PyMem_Free(other.data);
    return status < 0 ? -1 : found;
}

void
extract_free_class_index(ClassIndex *classes)
{
    PyMem_Free(classes->entries);
    *classes = (ClassIndex){0};
}

/* boilerplate.container_verdict: the attributes' verdict as it holds for this container,
 * HEADER_ONLY, BY_COMPOUND and BY_LINK_NAME made BY_NAME or NOT_BOILERPLATE; -1 with an
 * exception. */
int
extract_container_verdict(const Tree *tree, int index, Buffer *key, ClassIndex *classes)
{
    int verdict = extract_named_boilerplate(tree->elements[index].node, key);
    if (verdict > 0 && (verdict & HEADER_ONLY)) { /* (a class of headers the page repeats: its entries') */
        int repeated = tree->elements[index].next_sibling >= 0 ? is_repeated(tree, index, classes) : 0;
        if (repeated != 0) {
            return repeated < 0 ? -1 : NOT_BOILERPLATE;
        }
        verdict &= ~HEADER_ONLY;
    }
    if (verdict == BY_COMPOUND) { /* (a frame's word in a compound: not a paragraph's) */
        return (tree->elements[index].flags & PARAGRAPH) ? NOT_BOILERPLATE : BY_NAME;
    }
    if (verdict == BY_LINK_NAME) { /* (a box named for its links holds one) */
        return holds_link(tree, index) ? BY_NAME : NOT_BOILERPLATE;
    }
    return verdict;
}

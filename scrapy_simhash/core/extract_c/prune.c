/* Boilerplate by its role (boilerplate.prune_boilerplate): elements marked removed.
 *
 * The verdicts on attributes (names.c) are remembered here by the attributes' bytes: a
 * site repeats them on every page.
 */
#include "extract.h"

/* Verdicts on attribute lists, kept across pages: a site repeats the same ones on every
 * page. Keyed by the attributes' names and values; cleared when full, like the Python one. */
#define VERDICT_SLOTS 8192
#define MAX_VERDICTS 4096
/* Remembered only when at most this long (names, values and their NULs): an app's state in
 * a data-* attribute (Inertia.js' data-page, 200 KB) is a page's own, and 4,096 of them
 * held ~1 GB (boilerplate.MAX_REMEMBERED_ATTRIBUTES). */
#define MAX_REMEMBERED_KEY 2048
typedef struct {
    uint64_t hash;
    char *key;
    Py_ssize_t length;
    int verdict;
} Verdict;
static Verdict verdicts[VERDICT_SLOTS];
static int n_verdicts;

static int
append_string(Buffer *buffer, const xmlChar *text)
{
    return extract_append(buffer, (const char *)text, (Py_ssize_t)strlen((const char *)text));
}

/* lxml's name of an attribute: "{namespace}name" or "name". */
static int
append_name(Buffer *buffer, const xmlAttr *attribute)
{
    if (attribute->ns != NULL && attribute->ns->href != NULL) {
        if (extract_append(buffer, "{", 1) < 0 || append_string(buffer, attribute->ns->href) < 0
            || extract_append(buffer, "}", 1) < 0) {
            return -1;
        }
    }
    return append_string(buffer, attribute->name);
}

/* lxml's value of an attribute: its text children ("" for <div hidden>). */
int
extract_append_value(Buffer *buffer, const xmlAttr *attribute)
{
    for (const xmlNode *child = attribute->children; child != NULL; child = child->next) {
        if (child->type != XML_TEXT_NODE) {
            PyErr_SetString(extract_unsupported, "an attribute holding an entity reference");
            return -1;
        }
        if (child->content != NULL && append_string(buffer, child->content) < 0) {
            return -1;
        }
    }
    return 0;
}

void
extract_forget_verdicts(void)
{
    for (int slot = 0; slot < VERDICT_SLOTS; slot++) {
        PyMem_Free(verdicts[slot].key);
    }
    memset(verdicts, 0, sizeof(verdicts));
    n_verdicts = 0;
}

/* boilerplate.attribute_verdict: a verdict (extract.h), or -1 with an exception. `key`
 * gets the attributes as names.c reads them: "name\0value\0" each. */
int
extract_named_boilerplate(const xmlNode *node, Buffer *key)
{
    if (node->properties == NULL) {
        return 0;
    }
    key->length = 0;
    for (const xmlAttr *attribute = node->properties; attribute != NULL; attribute = attribute->next) {
        if (append_name(key, attribute) < 0 || extract_append(key, "", 1) < 0
            || extract_append_value(key, attribute) < 0 || extract_append(key, "", 1) < 0) {
            return -1;
        }
    }
    uint64_t hash = extract_hash_bytes(EXTRACT_HASH_START, key->data, (size_t)key->length);
    size_t slot = (size_t)(hash % VERDICT_SLOTS);
    for (; verdicts[slot].key != NULL; slot = (slot + 1) % VERDICT_SLOTS) {
        const Verdict *known = &verdicts[slot];
        if (known->hash == hash && known->length == key->length
            && memcmp(known->key, key->data, (size_t)key->length) == 0) {
            return known->verdict;
        }
    }
    int verdict = extract_attribute_verdict(key->data, key->length);
    if (verdict < 0) {
        return -1;
    }
    if (key->length > MAX_REMEMBERED_KEY) {
        return verdict;
    }
    if (n_verdicts >= MAX_VERDICTS) {
        extract_forget_verdicts(); /* simpler than LRU; a site's attributes come back at once */
        for (slot = (size_t)(hash % VERDICT_SLOTS); verdicts[slot].key != NULL; slot = (slot + 1) % VERDICT_SLOTS) {
        }
    }
    char *copy = PyMem_Malloc((size_t)key->length + 1);
    if (copy != NULL) { /* out of memory: not remembered, still answered */
        memcpy(copy, key->data, (size_t)key->length);
        verdicts[slot] = (Verdict){hash, copy, key->length, verdict};
        n_verdicts++;
    }
    return verdict;
}

/* boilerplate.reads_as_section: its first child with text is a heading, and it has
 * paragraphs of prose of its own (each mostly not links). */
int
extract_reads_as_section(const Tree *tree, int index)
{
    int child = tree->elements[index].first_child;
    while (child >= 0 && extract_text_chars(tree, child) == 0) {
        child = tree->elements[child].next_sibling;
    }
    if (child < 0 || !(tree->elements[child].flags & SECTION_HEADING)) {
        return 0;
    }
    long prose = 0;
    for (; child >= 0; child = tree->elements[child].next_sibling) {
        if (tree->elements[child].flags & PARAGRAPH) {
            long chars = extract_text_chars(tree, child);
            if ((double)extract_link_chars(tree, child) <= extract_rules.link_share * (double)chars) {
                prose += chars;
            }
        }
    }
    return prose >= extract_rules.min_section_prose;
}

static int
has_doomed_ancestor(const Tree *tree, int index, const char *doomed)
{
    for (int at = tree->elements[index].parent; at >= 0; at = tree->elements[at].parent) {
        if (doomed[at]) {
            return 1;
        }
    }
    return 0;
}

/* boilerplate._all_small: no doomed element holds the share of the page that saves it. */
static int
all_small(const Tree *tree, const int *doomed, int n_doomed, char *is_doomed)
{
    long largest = 0, outermost = 0;
    for (int i = 0; i < n_doomed; i++) {
        long size = extract_text_chars(tree, doomed[i]);
        largest = size > largest ? size : largest;
        if (!has_doomed_ancestor(tree, doomed[i], is_doomed)) {
            outermost += size;
        }
    }
    return (double)largest <= extract_rules.pruned_share * (double)outermost;
}

/* An element too big to be boilerplate (some sites wrap the whole page in a <header>),
 * unless it is mostly link text: a book's table of contents in a <nav> outweighs a short
 * chapter. `limit`: the share of the page's text that saves an element. */
static int
too_big_to_prune(const Tree *tree, int index, double limit)
{
    long chars = extract_text_chars(tree, index);
    if ((double)chars <= limit) {
        return 0;
    }
    return (double)extract_link_chars(tree, index) <= extract_rules.link_share * (double)chars;
}

/* boilerplate._in_listing: inside a <pre>, whose names are the code's. */
static int
in_listing(const Tree *tree, int index)
{
    for (int at = tree->elements[index].parent; at >= 0; at = tree->elements[at].parent) {
        if (tree->elements[at].flags & LISTING) {
            return 1;
        }
    }
    return 0;
}

/* Mark the boilerplate elements removed; -1 with an exception. The walk's root (the
 * body) is never removed: removing it from its parent leaves its own text as it is. */
int
extract_prune(Tree *tree)
{
    int *doomed = PyMem_Malloc(sizeof(int) * (size_t)tree->n_elements * 2 + sizeof(int));
    char *is_doomed = PyMem_Calloc((size_t)tree->n_elements + 1, 1);
    char *reply = PyMem_Calloc((size_t)tree->n_elements + 1, 1);
    Buffer key = {0};
    ClassIndex classes = {0};
    int n_tagged = 0, n_named = 0, status = -1;
    if (doomed == NULL || is_doomed == NULL || reply == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int *named = doomed + tree->n_elements;
    char *in_frame = is_doomed; /* (before it marks the doomed): holds the page's content */
    for (int index = 0; index < tree->n_elements; index++) {
        unsigned flags = tree->elements[index].flags;
        int verdict = NOT_BOILERPLATE;
        if (flags & BOILERPLATE) {
            doomed[n_tagged++] = index;
            continue;
        }
        if (flags & CONTAINER) {
            verdict = extract_container_verdict(tree, index, &key, &classes);
            if (verdict < 0) {
                goto done;
            }
            if ((verdict == BY_ROLE || (verdict == BY_NAME && !extract_reads_as_section(tree, index)))
                && !in_listing(tree, index)) {
                named[n_named++] = index;
            }
        }
        if ((flags & LANDMARK) || verdict == MAIN_BY_ROLE) {
            for (int at = tree->elements[index].parent; at >= 0 && !in_frame[at]; at = tree->elements[at].parent) {
                in_frame[at] = 1;
            }
        }
    }
    /* boilerplate.boilerplate_elements: a frame named boilerplate stays, unless by its role. */
    int kept_named = 0;
    for (int i = 0; i < n_named; i++) {
        int index = named[i];
        if (!in_frame[index] || extract_named_boilerplate(tree->elements[index].node, &key) == BY_ROLE) {
            named[kept_named++] = index;
        }
    }
    n_named = kept_named;
    memset(in_frame, 0, (size_t)tree->n_elements + 1);
    /* The tagged ones first: they are removed first. */
    memmove(doomed + n_tagged, named, sizeof(int) * (size_t)n_named);
    int n_doomed = n_tagged + n_named;
    for (int i = 0; i < n_doomed; i++) {
        is_doomed[doomed[i]] = 1;
    }
    /* ...and a thread's replies, in order (once: some are named so too). */
    if (extract_mark_thread_replies(tree, reply) < 0) {
        goto done;
    }
    for (int index = 1; index < tree->n_elements; index++) {
        if (reply[index] && !is_doomed[index]) {
            is_doomed[index] = 1;
            doomed[n_doomed++] = index;
        }
    }
    if (n_doomed && all_small(tree, doomed, n_doomed, is_doomed)) {
        for (int i = 0; i < n_doomed; i++) {
            tree->elements[doomed[i]].removed = doomed[i] != 0;
        }
    } else if (n_doomed) {
        double limit = extract_rules.pruned_share * (double)extract_text_chars(tree, 0);
        for (int i = 0; i < n_doomed; i++) {
            int index = doomed[i];
            if (index == 0) {
                continue; /* the body (one inside a removed element is judged still, as the Python
                           * code judges it in the subtree it removed: a kept heading may be in it) */
            }
            tree->elements[index].removed = !too_big_to_prune(tree, index, limit);
        }
    }
    status = 0;
done:
    PyMem_Free(doomed);
    PyMem_Free(is_doomed);
    PyMem_Free(reply);
    PyMem_Free(key.data);
    extract_free_class_index(&classes);
    return status;
}


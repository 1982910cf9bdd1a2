/* Main-content extraction (content.extract_main_blocks) on libxml2's nodes, in C.
 *
 * The Python extraction makes a few C-level scans of lxml's tree, but it still reads
 * and writes thousands of attributes and texts from Python and serialises subtrees to
 * measure them: ~1 ms a page, more than parsing it. This walks libxml2's nodes once
 * into an array of events (element start, text, element end), then runs the same
 * algorithm on that array: ~0.1 ms. It never modifies the tree: where the Python code
 * removes an element or writes a marker into a text, this marks the element removed
 * or counts the marker as if it were there.
 *
 * The results are identical (tests/test_extract_c.py checks it on every page of the dev
 * corpus and on generated pages). Where a tree holds what this does not model (comments,
 * entity references, line numbers past 65534), it raises Unsupported and
 * scrapy_simhash.core.content runs the Python code. The rules (tag classes, shares,
 * the attribute and credit-line verdicts) come from the Python modules (configure()),
 * so they are written once.
 *
 * lxml's _Element is {PyObject_HEAD; _Document _doc; xmlNode *_c_node; ...}, public C
 * API since lxml 2 (lxml/includes/etreepublic.pxd); the node layout is libxml2's
 * public one, from the headers lxml ships.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <libxml/tree.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    PyObject_HEAD void *document;
    xmlNode *c_node;
} LxmlElement;

/* Tag classes, set per tag name by configure(). */
enum {
    BLOCK = 1 << 0,       /* text.BLOCK_TAGS: a block boundary before and after */
    BOILERPLATE = 1 << 1, /* boilerplate by its tag */
    CONTAINER = 1 << 2,   /* boilerplate by its attributes, maybe */
    LINK = 1 << 3,        /* <a> */
    HEADING = 1 << 4,     /* <h1> */
    MAIN = 1 << 5,
    ARTICLE = 1 << 6,
    KEPT = 1 << 7,        /* kept when the descent leaves it behind */
    TEXT_BLOCK = 1 << 8,  /* never descended into */
    LISTING = 1 << 9,     /* <pre> */
    INVISIBLE = 1 << 10,  /* text._INVISIBLE_TAGS: skipped, as text.parse_html strips them */
};

/* The rules, from configure(). */
static struct {
    PyObject *tags;      /* dict: tag name (bytes) -> class bits */
    PyObject *verdict;   /* ((name, value), ...) -> bool: boilerplate by attributes */
    PyObject *credit;    /* str -> bool: a credit or legal line */
    PyObject *credit_brackets, *credit_letters; /* str: how one may start */
    double descend_share, fair_share, winner_share, winner_margin, link_density, prose_share, pruned_share;
    Py_ssize_t contestants, sized_at_once;
} rules;

static PyTypeObject *element_type;
static PyObject *Unsupported;

/* ---- The tree as events ---------------------------------------------------------- */

enum { START, END, TEXT };

typedef struct {
    int kind;
    int index; /* the element (START, END) or the text (TEXT) */
} Event;

typedef struct {
    const xmlNode *node;
    int parent;                     /* -1 for the root of the walk */
    int first_child, next_sibling;  /* elements, -1 for none */
    int start, end;                 /* its START and END events */
    unsigned flags;
    int removed, on_heading_path;
} Element;

typedef struct {
    const char *content;
    Py_ssize_t bytes;
    long chars, spaces;
    int markers; /* holds U+E001 or U+E002: the link markers, as literal characters */
} Text;

typedef struct {
    Event *events;
    Element *elements;
    Text *texts;
    int n_events, n_elements, n_texts;
    int cap_events, cap_elements, cap_texts;
} Tree;

#define MARK_BYTE 0xEE /* U+E000..U+E002 are EE 80 80..82 in UTF-8 */
static const char BOUNDARY[] = "\xEE\x80\x80", OPEN[] = "\xEE\x80\x81", CLOSE[] = "\xEE\x80\x82";

static int
grow(void **array, int *capacity, int needed, size_t item)
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
    if (grow((void **)&tree->events, &tree->cap_events, tree->n_events + 1, sizeof(Event)) < 0) {
        return -1;
    }
    tree->events[tree->n_events++] = (Event){kind, index};
    return tree->n_events - 1;
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
    PyObject *flags = PyDict_GetItemWithError(rules.tags, name);
    Py_DECREF(name);
    if (flags == NULL) {
        return PyErr_Occurred() ? (unsigned)-1 : 0;
    }
    return (unsigned)PyLong_AsUnsignedLong(flags);
}

static int
add_element(Tree *tree, const xmlNode *node, int parent, unsigned flags)
{
    if (grow((void **)&tree->elements, &tree->cap_elements, tree->n_elements + 1, sizeof(Element)) < 0) {
        return -1;
    }
    int index = tree->n_elements++;
    tree->elements[index] = (Element){node, parent, -1, -1, -1, -1, flags, 0, 0};
    return index;
}

/* Where U+E000 + `which` (a block boundary, a link marker) starts in s[from:length], or -1. */
static Py_ssize_t
find_marker(const char *s, Py_ssize_t from, Py_ssize_t length, unsigned char which)
{
    while (from + 2 < length) {
        const char *lead = memchr(s + from, MARK_BYTE, (size_t)(length - from - 2));
        if (lead == NULL) {
            return -1;
        }
        from = lead - s;
        if ((unsigned char)s[from + 1] == 0x80 && (unsigned char)s[from + 2] == which) {
            return from;
        }
        from++;
    }
    return -1;
}

static int
add_text(Tree *tree, const xmlNode *node)
{
    if (grow((void **)&tree->texts, &tree->cap_texts, tree->n_texts + 1, sizeof(Text)) < 0) {
        return -1;
    }
    const char *s = node->content ? (const char *)node->content : "";
    Py_ssize_t bytes = (Py_ssize_t)strlen(s);
    long continuation = 0, spaces = 0;
    for (Py_ssize_t i = 0; i < bytes; i++) { /* a loop the compiler vectorises */
        continuation += ((unsigned char)s[i] & 0xC0) == 0x80;
        spaces += s[i] == ' ';
    }
    int markers = find_marker(s, 0, bytes, 0x81) >= 0 || find_marker(s, 0, bytes, 0x82) >= 0;
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

/* Walk the subtree of `root` in document order into events; -1 with an exception. */
static int
flatten(Tree *tree, const xmlNode *root)
{
    TagCache cache = {{0}, {0}};
    const xmlNode *node = root;
    int parent = -1, previous = -1; /* previous: the last element child seen of `parent` */
    while (node != NULL) {
        if (node->type == XML_ELEMENT_NODE) {
            if (node->line == 65535) {
                PyErr_SetString(Unsupported, "line numbers past 65534");
                return -1;
            }
            unsigned flags = cached_flags(&cache, node);
            if (flags != (unsigned)-1 && (flags & INVISIBLE) && node != root) {
                goto next; /* as if stripped: its subtree out, its tail in */
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
        } else {
            PyErr_Format(Unsupported, "a node of type %d", (int)node->type);
            return -1;
        }
    next:
        /* Up to the next node in document order, closing the elements left. */
        while (node != root && node->next == NULL) {
            node = node->parent;
            if ((tree->elements[parent].end = add_event(tree, END, parent)) < 0) {
                return -1;
            }
            previous = parent;
            parent = tree->elements[parent].parent;
        }
        node = node == root ? NULL : node->next;
    }
    return 0;
}

/* ---- Measuring ------------------------------------------------------------------- */

/* Counts of a text as content.measure_both counts it: visible characters (spaces not
 * counted, a link's opening marker -1: len - count(" ") - 2 * count(OPEN)), and those
 * inside link text (textsize.LINK_TEXT: from an opening marker to the next closing one;
 * an unclosed span counts nothing). */
typedef struct {
    long total, committed, pending;
    int inside;
} Tally;

static inline void
tally_plain(Tally *tally, long visible)
{
    tally->total += visible;
    if (tally->inside) {
        tally->pending += visible;
    }
}

static inline void
tally_open(Tally *tally)
{
    tally_plain(tally, -1);
    if (!tally->inside) {
        tally->inside = 1;
        tally->pending = -1;
    }
}

static inline void
tally_close(Tally *tally)
{
    tally_plain(tally, 1);
    if (tally->inside) {
        tally->committed += tally->pending;
        tally->inside = 0;
        tally->pending = 0;
    }
}

/* Tally UTF-8 text character by character (only texts holding literal markers). */
static void
tally_bytes(Tally *tally, const char *s, Py_ssize_t bytes)
{
    for (Py_ssize_t i = 0; i < bytes; i++) {
        unsigned char byte = (unsigned char)s[i];
        if ((byte & 0xC0) == 0x80 || byte == ' ') {
            continue;
        }
        if (byte == MARK_BYTE && i + 2 < bytes && (unsigned char)s[i + 1] == 0x80) {
            unsigned char last = (unsigned char)s[i + 2];
            if (last == 0x81) {
                tally_open(tally);
                continue;
            }
            if (last == 0x82) {
                tally_close(tally);
                continue;
            }
        }
        tally_plain(tally, 1);
    }
}

static void
tally_text(Tally *tally, const Text *text)
{
    if (text->markers) {
        tally_bytes(tally, text->content, text->bytes);
    } else {
        tally_plain(tally, text->chars - text->spaces);
    }
}

/* The text of element `index` with link markers (mark_links): (prose, everything). */
static void
measure_both(const Tree *tree, int index, long *prose, long *everything)
{
    const Element *element = &tree->elements[index];
    Tally tally = {0, 0, 0, 0};
    if (element->flags & LINK) {
        tally_open(&tally);
    }
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        const Element *other = &tree->elements[event->index];
        if (event->kind == TEXT) {
            tally_text(&tally, &tree->texts[event->index]);
        } else if (event->kind == START && other->removed) {
            at = other->end;
        } else if (other->flags & LINK) {
            (event->kind == START ? tally_open : tally_close)(&tally);
        }
    }
    *everything = tally.total;
    *prose = tally.total - tally.committed;
}

static long
measure(const Tree *tree, int index, int prose)
{
    long with_links, everything;
    measure_both(tree, index, &with_links, &everything);
    return prose ? with_links : everything;
}

/* boilerplate._text_chars: characters of the text, spaces not counted (no markers yet). */
static long
text_chars(const Tree *tree, int index)
{
    const Element *element = &tree->elements[index];
    long chars = 0;
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        if (event->kind == TEXT) {
            chars += tree->texts[event->index].chars - tree->texts[event->index].spaces;
        } else if (event->kind == START && tree->elements[event->index].removed) {
            at = tree->elements[event->index].end;
        }
    }
    return chars;
}

/* textsize._loose_chars: the parent's own text and its children's tails; -1 (None) when
 * a link marker is among them. */
static long
loose_chars(const Tree *tree, int index)
{
    const Element *element = &tree->elements[index];
    if (element->flags & LINK) {
        return -1;
    }
    long chars = 0;
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        if (event->kind == TEXT) {
            const Text *text = &tree->texts[event->index];
            if (text->markers) {
                return -1;
            }
            chars += text->chars - text->spaces;
        } else if (event->kind == START) {
            const Element *child = &tree->elements[event->index];
            if (!child->removed && (child->flags & LINK)) {
                return -1; /* its closing marker starts its tail */
            }
            at = child->end;
        }
    }
    return chars;
}

/* ---- Pruning (boilerplate.prune_boilerplate) --------------------------------------- */

/* Verdicts on attribute lists, kept across pages: a site repeats the same ones on every
 * page. Keyed by the attributes' names and values; cleared when full, like the Python one. */
#define VERDICT_SLOTS 8192
#define MAX_VERDICTS 4096
typedef struct {
    uint64_t hash;
    char *key;
    Py_ssize_t length;
    int verdict;
} Verdict;
static Verdict verdicts[VERDICT_SLOTS];
static int n_verdicts;

typedef struct {
    char *data;
    Py_ssize_t length, capacity;
} Buffer;

static int
append(Buffer *buffer, const char *data, Py_ssize_t length)
{
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

static int
append_string(Buffer *buffer, const xmlChar *text)
{
    return append(buffer, (const char *)text, (Py_ssize_t)strlen((const char *)text));
}

/* lxml's name of an attribute: "{namespace}name" or "name". */
static int
append_name(Buffer *buffer, const xmlAttr *attribute)
{
    if (attribute->ns != NULL && attribute->ns->href != NULL) {
        if (append(buffer, "{", 1) < 0 || append_string(buffer, attribute->ns->href) < 0
            || append(buffer, "}", 1) < 0) {
            return -1;
        }
    }
    return append_string(buffer, attribute->name);
}

/* lxml's value of an attribute: its text children ("" for <div hidden>). */
static int
append_value(Buffer *buffer, const xmlAttr *attribute)
{
    for (const xmlNode *child = attribute->children; child != NULL; child = child->next) {
        if (child->type != XML_TEXT_NODE) {
            PyErr_SetString(Unsupported, "an attribute holding an entity reference");
            return -1;
        }
        if (child->content != NULL && append_string(buffer, child->content) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The attributes as element.items() gives them: ((name, value), ...). */
static PyObject *
attribute_pairs(const xmlNode *node)
{
    PyObject *pairs = PyList_New(0);
    Buffer name = {0}, value = {0};
    for (const xmlAttr *attribute = node->properties; pairs != NULL && attribute != NULL; attribute = attribute->next) {
        name.length = value.length = 0;
        PyObject *pair = NULL;
        if (append_name(&name, attribute) == 0 && append_value(&value, attribute) == 0) {
            pair = Py_BuildValue("(s#s#)", name.data ? name.data : "", name.length, value.data ? value.data : "",
                                 value.length);
        }
        if (pair == NULL || PyList_Append(pairs, pair) < 0) {
            Py_CLEAR(pairs);
        }
        Py_XDECREF(pair);
    }
    PyMem_Free(name.data);
    PyMem_Free(value.data);
    if (pairs == NULL) {
        return NULL;
    }
    PyObject *tuple = PyList_AsTuple(pairs);
    Py_DECREF(pairs);
    return tuple;
}

static void
forget_verdicts(void)
{
    for (int slot = 0; slot < VERDICT_SLOTS; slot++) {
        PyMem_Free(verdicts[slot].key);
    }
    memset(verdicts, 0, sizeof(verdicts));
    n_verdicts = 0;
}

/* boilerplate._is_named_boilerplate: 1, 0, or -1 with an exception. */
static int
named_boilerplate(const xmlNode *node, Buffer *key)
{
    if (node->properties == NULL) {
        return 0;
    }
    key->length = 0;
    for (const xmlAttr *attribute = node->properties; attribute != NULL; attribute = attribute->next) {
        if (append_name(key, attribute) < 0 || append(key, "", 1) < 0 || append_value(key, attribute) < 0
            || append(key, "", 1) < 0) {
            return -1;
        }
    }
    uint64_t hash = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < key->length; i++) {
        hash = (hash ^ (unsigned char)key->data[i]) * 0x100000001b3ULL;
    }
    size_t slot = (size_t)(hash % VERDICT_SLOTS);
    for (; verdicts[slot].key != NULL; slot = (slot + 1) % VERDICT_SLOTS) {
        const Verdict *known = &verdicts[slot];
        if (known->hash == hash && known->length == key->length && memcmp(known->key, key->data, (size_t)key->length) == 0) {
            return known->verdict;
        }
    }
    PyObject *pairs = attribute_pairs(node);
    PyObject *answer = pairs ? PyObject_CallOneArg(rules.verdict, pairs) : NULL;
    Py_XDECREF(pairs);
    int verdict = answer ? PyObject_IsTrue(answer) : -1;
    Py_XDECREF(answer);
    if (verdict < 0) {
        return -1;
    }
    if (n_verdicts >= MAX_VERDICTS) {
        forget_verdicts(); /* simpler than LRU; a site's attributes come back at once */
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

static int
has_removed_ancestor(const Tree *tree, int index)
{
    for (int at = tree->elements[index].parent; at >= 0; at = tree->elements[at].parent) {
        if (tree->elements[at].removed) {
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
        long size = text_chars(tree, doomed[i]);
        largest = size > largest ? size : largest;
        if (!has_doomed_ancestor(tree, doomed[i], is_doomed)) {
            outermost += size;
        }
    }
    return (double)largest <= rules.pruned_share * (double)outermost;
}

/* Mark the boilerplate elements removed; -1 with an exception. The walk's root (the
 * body) is never removed: removing it from its parent leaves its own text as it is. */
static int
prune(Tree *tree)
{
    int *doomed = PyMem_Malloc(sizeof(int) * (size_t)tree->n_elements * 2 + sizeof(int));
    char *is_doomed = PyMem_Calloc((size_t)tree->n_elements + 1, 1);
    Buffer key = {0};
    int n_tagged = 0, n_named = 0, status = -1;
    if (doomed == NULL || is_doomed == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    int *named = doomed + tree->n_elements;
    for (int index = 0; index < tree->n_elements; index++) {
        unsigned flags = tree->elements[index].flags;
        if (flags & BOILERPLATE) {
            doomed[n_tagged++] = index;
        } else if (flags & CONTAINER) {
            int verdict = named_boilerplate(tree->elements[index].node, &key);
            if (verdict < 0) {
                goto done;
            }
            if (verdict) {
                named[n_named++] = index;
            }
        }
    }
    /* The tagged ones first: they are removed first. */
    memmove(doomed + n_tagged, named, sizeof(int) * (size_t)n_named);
    int n_doomed = n_tagged + n_named;
    for (int i = 0; i < n_doomed; i++) {
        is_doomed[doomed[i]] = 1;
    }
    if (n_doomed && all_small(tree, doomed, n_doomed, is_doomed)) {
        for (int i = 0; i < n_doomed; i++) {
            tree->elements[doomed[i]].removed = doomed[i] != 0;
        }
    } else if (n_doomed) {
        double limit = rules.pruned_share * (double)text_chars(tree, 0);
        for (int i = 0; i < n_doomed; i++) {
            int index = doomed[i];
            if (index == 0 || has_removed_ancestor(tree, index)) {
                continue; /* the body, or already gone with an ancestor */
            }
            if ((double)text_chars(tree, index) <= limit) {
                tree->elements[index].removed = 1;
            }
        }
    }
    status = 0;
done:
    PyMem_Free(doomed);
    PyMem_Free(is_doomed);
    PyMem_Free(key.data);
    return status;
}

/* ---- Locating the main content (content.main_container) ---------------------------- */

static int
next_child(const Tree *tree, int index)
{
    while (index >= 0 && tree->elements[index].removed) {
        index = tree->elements[index].next_sibling;
    }
    return index;
}

#define FOR_CHILDREN(tree, parent, child)                                                                \
    for (int child = next_child(tree, (tree)->elements[parent].first_child); child >= 0;                  \
         child = next_child(tree, (tree)->elements[child].next_sibling))

static int
count_children(const Tree *tree, int index)
{
    int count = 0;
    FOR_CHILDREN(tree, index, child) { count++; }
    return count;
}

/* textsize._last_line: the line of the last element inside an element. */
static long
last_line(const Tree *tree, int index)
{
    for (;;) {
        int last = -1;
        FOR_CHILDREN(tree, index, child) { last = child; }
        if (last < 0) {
            return tree->elements[index].node->line;
        }
        index = last;
    }
}

typedef struct {
    int child;
    long chars;
} Size;

/* textsize.ChildSizes: the sizes of the children of `parent` (holding `held`), one of
 * them derived from the others' as the Python code derives it (the same number unless
 * literal markers in the text break the sums). `sizes` has room for every child. */
static int
child_sizes(const Tree *tree, int parent, long held, int prose, Size *sizes)
{
    int n = 0;
    FOR_CHILDREN(tree, parent, child) { sizes[n++] = (Size){child, 0}; }
    if (n == 0) {
        return 0;
    }
    long loose = loose_chars(tree, parent);
    int derived = -1;
    if (loose >= 0 && n <= rules.sized_at_once) {
        long best = 0; /* the child spanning the most source lines: likely the biggest */
        for (int i = 0; i < n; i++) {
            long end = i + 1 < n ? (long)tree->elements[sizes[i + 1].child].node->line : last_line(tree, sizes[n - 1].child) + 1;
            long span = end - (long)tree->elements[sizes[i].child].node->line;
            if (derived < 0 || span > best) {
                derived = i, best = span;
            }
        }
    } else if (loose >= 0) {
        derived = n - 1; /* in order: the last one */
    }
    long others = 0;
    for (int i = 0; i < n; i++) {
        if (i != derived) {
            sizes[i].chars = measure(tree, sizes[i].child, prose);
            others += sizes[i].chars;
        }
    }
    if (derived >= 0) {
        sizes[derived].chars = held - others - loose;
    }
    return n;
}

static const Size NOT_FOUND = {-1, 0};

static Size
dominant_child(const Size *sizes, int n, long held, double needed)
{
    long left = held;
    if ((double)left < needed) {
        return NOT_FOUND;
    }
    for (int i = 0; i < n; i++) {
        if ((double)sizes[i].chars >= needed) {
            return sizes[i];
        }
        left -= sizes[i].chars;
        if ((double)left < needed) {
            return NOT_FOUND;
        }
    }
    return NOT_FOUND;
}

static Size
heading_child(const Tree *tree, const Size *sizes, int n, long held)
{
    for (int i = 0; i < n; i++) {
        if (tree->elements[sizes[i].child].on_heading_path) {
            return (double)sizes[i].chars >= rules.fair_share * (double)held ? sizes[i] : NOT_FOUND;
        }
    }
    return NOT_FOUND;
}

static Size
clear_winner(const Size *sizes, int n, long held)
{
    if (n == 0) {
        return NOT_FOUND;
    }
    int top = 0; /* the first of the largest, as a stable sort ranks them */
    for (int i = 1; i < n; i++) {
        top = sizes[i].chars > sizes[top].chars ? i : top;
    }
    if ((double)sizes[top].chars < rules.winner_share * (double)held) {
        return NOT_FOUND;
    }
    if (n > 1) {
        long second = LONG_MIN;
        for (int i = 0; i < n; i++) {
            if (i != top && sizes[i].chars > second) {
                second = sizes[i].chars;
            }
        }
        if ((double)sizes[top].chars < rules.winner_margin * (double)second) {
            return NOT_FOUND;
        }
    }
    return sizes[top];
}

static int
is_text_block(const Tree *tree, int index)
{
    if (tree->elements[index].flags & TEXT_BLOCK) {
        return 1;
    }
    while (count_children(tree, index) == 1) {
        index = next_child(tree, tree->elements[index].first_child);
        if (tree->elements[index].flags & LISTING) {
            return 1;
        }
    }
    return 0;
}

/* Where the descent starts: the page's only <main> (else only <article>) holding a fair
 * share, else the body. Marks the path to the first <h1> on the way. */
static Size
semantic_start(Tree *tree, int prose, long total)
{
    int heading = -1, mains = 0, articles = 0, main = -1, article = -1;
    for (int index = 0; index < tree->n_elements; index++) {
        const Element *element = &tree->elements[index];
        if (element->removed) { /* skip its subtree: the elements that start inside it */
            while (index + 1 < tree->n_elements && tree->elements[index + 1].start < element->end) {
                index++;
            }
            continue;
        }
        if ((element->flags & HEADING) && heading < 0) {
            heading = index;
        }
        if (element->flags & MAIN) {
            mains++, main = index;
        }
        if (element->flags & ARTICLE) {
            articles++, article = index;
        }
    }
    for (int at = heading; at >= 0; at = tree->elements[at].parent) {
        tree->elements[at].on_heading_path = 1;
    }
    int starts[2] = {mains == 1 ? main : -1, articles == 1 ? article : -1};
    for (int i = 0; i < 2; i++) {
        if (starts[i] >= 0) {
            long chars = measure(tree, starts[i], prose);
            if ((double)chars >= rules.fair_share * (double)total) {
                return (Size){starts[i], chars};
            }
        }
    }
    return (Size){0, total};
}

/* content.main_container: the container, and the elements left behind on the way
 * (appended to `behind`, which has room for every element). */
static int
main_container(Tree *tree, int prose, long total, int *behind, int *n_behind)
{
    Size *sizes = PyMem_Malloc(sizeof(Size) * ((size_t)tree->n_elements + 1));
    if (sizes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Size start = semantic_start(tree, prose, total);
    int container = start.child;
    total = start.chars;
    long held = total;
    while (held > 0) {
        int n = child_sizes(tree, container, held, prose, sizes);
        Size found = dominant_child(sizes, n, held, rules.descend_share * (double)total);
        if (found.child < 0 && n <= rules.contestants) {
            found = heading_child(tree, sizes, n, held);
            if (found.child < 0) {
                found = clear_winner(sizes, n, held);
            }
            if (found.child >= 0) {
                total = found.chars;
            }
        }
        if (found.child < 0 || is_text_block(tree, found.child)) {
            break;
        }
        /* The headings and paragraphs before the chosen child stay (a title, a lead). */
        for (int i = 0; i < n && sizes[i].child != found.child; i++) {
            if (tree->elements[sizes[i].child].flags & KEPT) {
                behind[(*n_behind)++] = sizes[i].child;
            }
        }
        container = found.child;
        held = found.chars;
    }
    PyMem_Free(sizes);
    return container;
}

/* ---- Splitting into blocks (text.split_blocks, content.extract_main_blocks) -------- */

/* The text of an element as split_blocks serialises it, link markers and block
 * boundaries in place. */
static int
serialise(const Tree *tree, int index, Buffer *out)
{
    const Element *element = &tree->elements[index];
    if ((element->flags & BLOCK) && append(out, BOUNDARY, 3) < 0) {
        return -1;
    }
    if ((element->flags & LINK) && append(out, OPEN, 3) < 0) {
        return -1;
    }
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        if (event->kind == TEXT) {
            const Text *text = &tree->texts[event->index];
            if (append(out, text->content, text->bytes) < 0) {
                return -1;
            }
            continue;
        }
        const Element *other = &tree->elements[event->index];
        if (event->kind == START && other->removed) {
            at = other->end;
            continue;
        }
        if ((other->flags & BLOCK) && append(out, BOUNDARY, 3) < 0) {
            return -1;
        }
        if ((other->flags & LINK) && append(out, event->kind == START ? OPEN : CLOSE, 3) < 0) {
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
    tally_bytes(&tally, s, length);
    return (double)tally.committed > rules.link_density * (double)tally.total;
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
    if (at < n && PyUnicode_FindChar(rules.credit_brackets, PyUnicode_READ(kind, data, at), 0, PY_SSIZE_T_MAX, 1) >= 0) {
        at++;
        while (at < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, at))) {
            at++;
        }
    }
    if (at == n || PyUnicode_FindChar(rules.credit_letters, PyUnicode_READ(kind, data, at), 0, PY_SSIZE_T_MAX, 1) < 0) {
        return 0;
    }
    PyObject *answer = PyObject_CallOneArg(rules.credit, block);
    int credit = answer ? PyObject_IsTrue(answer) : -1;
    Py_XDECREF(answer);
    return credit;
}

/* Append a split block to `blocks` unless it is a link list or a credit line, without its
 * link markers; -1 with an exception. */
static int
keep_block(const char *s, Py_ssize_t length, int links_are_content, PyObject *blocks, Buffer *scratch)
{
    Py_ssize_t open = find_marker(s, 0, length, 0x81), close = find_marker(s, 0, length, 0x82);
    if (open >= 0 && !links_are_content && is_link_list(s, length)) {
        return 0;
    }
    PyObject *block = PyUnicode_DecodeUTF8(s, length, "strict");
    int credit = block ? is_credit_line(block) : -1;
    if (credit != 0) {
        Py_XDECREF(block);
        return credit < 0 ? -1 : 0;
    }
    if (open >= 0 || close >= 0) { /* the block without its markers */
        Py_DECREF(block);
        scratch->length = 0;
        Py_ssize_t from = 0;
        for (;;) {
            Py_ssize_t next_open = find_marker(s, from, length, 0x81), next_close = find_marker(s, from, length, 0x82);
            Py_ssize_t next = next_open < 0 ? next_close : next_close < 0 ? next_open : next_open < next_close ? next_open : next_close;
            if (append(scratch, s + from, (next < 0 ? length : next) - from) < 0) {
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
static int
split_blocks(const Tree *tree, int index, int links_are_content, PyObject *blocks, Buffer *text, Buffer *scratch)
{
    text->length = 0;
    if (serialise(tree, index, text) < 0) {
        return -1;
    }
    const char *s = text->data ? text->data : "";
    for (Py_ssize_t start = 0; start <= text->length;) {
        Py_ssize_t end = find_marker(s, start, text->length, 0x80);
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

/* ---- The module -------------------------------------------------------------------- */

static int
find_body(const xmlNode *root, const xmlNode **body)
{
    *body = root;
    for (const xmlNode *child = root->children; child != NULL; child = child->next) {
        if (child->type == XML_ELEMENT_NODE && child->ns == NULL && strcmp((const char *)child->name, "body") == 0) {
            *body = child;
            break;
        }
    }
    return 0;
}

static PyObject *
extract(Tree *tree, int *behind)
{
    if (prune(tree) < 0) {
        return NULL;
    }
    long prose, everything;
    measure_both(tree, 0, &prose, &everything);
    /* A table of contents is all links: then the links are the content. */
    int links_are_content = (double)prose < rules.prose_share * (double)everything;
    int n_behind = 0;
    int container = main_container(tree, !links_are_content, links_are_content ? everything : prose, behind, &n_behind);
    if (container < 0) {
        return NULL;
    }
    PyObject *blocks = PyList_New(0);
    Buffer text = {0}, scratch = {0};
    behind[n_behind++] = container;
    for (int i = 0; blocks != NULL && i < n_behind; i++) {
        if (split_blocks(tree, behind[i], links_are_content, blocks, &text, &scratch) < 0) {
            Py_CLEAR(blocks);
        }
    }
    PyMem_Free(text.data);
    PyMem_Free(scratch.data);
    return blocks;
}

/* The arrays of the last call, kept for the next (pages come one after another): no
 * allocation per page. A call made from inside a call (by a callback) gets its own. */
static Tree kept_tree;
static int kept_tree_in_use;
#define MAX_KEPT_EVENTS (1 << 20)

static void
release(Tree *tree)
{
    if (tree == &kept_tree) {
        kept_tree_in_use = 0;
        if (tree->cap_events <= MAX_KEPT_EVENTS) {
            return; /* keep them, unless a huge page made them huge */
        }
    }
    PyMem_Free(tree->events);
    PyMem_Free(tree->elements);
    PyMem_Free(tree->texts);
    *tree = (Tree){0};
}

static PyObject *
main_blocks(PyObject *module, PyObject *root)
{
    if (rules.tags == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    if (!PyObject_TypeCheck(root, element_type)) {
        PyErr_Format(PyExc_TypeError, "root must be an lxml element, not %.100s", Py_TYPE(root)->tp_name);
        return NULL;
    }
    const xmlNode *node = ((LxmlElement *)root)->c_node, *body;
    if (node == NULL || node->type != XML_ELEMENT_NODE) {
        PyErr_SetString(Unsupported, "not an element node");
        return NULL;
    }
    find_body(node, &body);
    Tree own = {0}, *tree = kept_tree_in_use ? &own : &kept_tree;
    kept_tree_in_use = 1;
    tree->n_events = tree->n_elements = tree->n_texts = 0;
    PyObject *blocks = NULL;
    int *behind = NULL;
    if (flatten(tree, body) == 0) {
        behind = PyMem_Malloc(sizeof(int) * ((size_t)tree->n_elements + 1));
        blocks = behind ? extract(tree, behind) : PyErr_NoMemory();
    }
    PyMem_Free(behind);
    release(tree);
    return blocks;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *tags, *verdict, *credit, *brackets, *letters;
    double shares[7];
    Py_ssize_t counts[2];
    if (!PyArg_ParseTuple(args, "O!O(OUU)(ddddddd)(nn):configure", &PyDict_Type, &tags, &verdict, &credit, &brackets,
                          &letters, &shares[0], &shares[1], &shares[2], &shares[3], &shares[4], &shares[5],
                          &shares[6], &counts[0], &counts[1])) {
        return NULL;
    }
    if (!PyCallable_Check(verdict) || !PyCallable_Check(credit)) {
        PyErr_SetString(PyExc_TypeError, "verdict and credit must be callables");
        return NULL;
    }
    Py_INCREF(tags), Py_INCREF(verdict), Py_INCREF(credit), Py_INCREF(brackets), Py_INCREF(letters);
    Py_XSETREF(rules.credit_brackets, brackets);
    Py_XSETREF(rules.credit_letters, letters);
    Py_XSETREF(rules.tags, tags);
    Py_XSETREF(rules.verdict, verdict);
    Py_XSETREF(rules.credit, credit);
    forget_verdicts(); /* they came from another verdict */
    rules.descend_share = shares[0], rules.fair_share = shares[1], rules.winner_share = shares[2];
    rules.winner_margin = shares[3], rules.link_density = shares[4], rules.prose_share = shares[5];
    rules.pruned_share = shares[6];
    rules.contestants = counts[0], rules.sized_at_once = counts[1];
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"main_blocks", main_blocks, METH_O, "content.extract_main_blocks(root), without modifying the tree."},
    {"configure", configure, METH_VARARGS,
     "configure(tags, verdict, (credit, its brackets, its first letters), (descend, fair, winner, margin, link density, prose, pruned shares),"
     " (contestants, sized at once))"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_extract", "Main-content extraction on libxml2's nodes, in C.", -1, methods,
};

PyMODINIT_FUNC
PyInit__extract(void)
{
    PyObject *module = PyModule_Create(&module_def);
    PyObject *etree = module ? PyImport_ImportModule("lxml.etree") : NULL;
    element_type = etree ? (PyTypeObject *)PyObject_GetAttrString(etree, "_Element") : NULL;
    Py_XDECREF(etree);
    if (element_type == NULL || !PyType_Check(element_type)) {
        Py_XDECREF(module);
        return NULL;
    }
    Unsupported = PyErr_NewException("scrapy_simhash.core._extract.Unsupported", PyExc_ValueError, NULL);
    static const struct {
        const char *name;
        long value;
    } constants[] = {
        {"BLOCK", BLOCK}, {"BOILERPLATE", BOILERPLATE}, {"CONTAINER", CONTAINER}, {"LINK", LINK},
        {"HEADING", HEADING}, {"MAIN", MAIN}, {"ARTICLE", ARTICLE}, {"KEPT", KEPT},
        {"TEXT_BLOCK", TEXT_BLOCK}, {"LISTING", LISTING}, {"INVISIBLE", INVISIBLE},
    };
    if (Unsupported == NULL || PyModule_AddObjectRef(module, "Unsupported", Unsupported) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
        if (PyModule_AddIntConstant(module, constants[i].name, constants[i].value) < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    return module;
}

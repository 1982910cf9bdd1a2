/* Digests of other documents (core/digests.py, its rules and reasons), judged on libxml2's
 * nodes: the parts of a page that the extraction skips. The links come from links.c. The
 * Python code walks the tree with XPath from Python, ~1 ms on a big API page.
 *
 * Same results as digest_parts(): tests/test_digests.py holds them equal. Texts are XPath
 * string() values (every text and CDATA node below, scripts too), measured in characters
 * (UTF-8 lead bytes).
 */
#include "extract.h"
#include <math.h>

/* Characters of a UTF-8 text: its bytes that are not continuation bytes. */
static long
utf8_chars(const xmlChar *s)
{
    long chars = 0;
    for (; *s; s++) {
        chars += (*s & 0xC0) != 0x80;
    }
    return chars;
}

/* Characters of the string() of `top`, the walk stopped once past `limit`; its text into
 * `buffer` and its descendant <p> elements counted into `paragraphs`, when given; -1 with
 * an exception at an entity reference (the Python code must run). */
static long
text_of(const xmlNode *top, double limit, Buffer *buffer, long *paragraphs)
{
    long chars = 0;
    for (const xmlNode *node = top; node != NULL && (double)chars <= limit; node = extract_next_in(node, top)) {
        if (node->type == XML_ENTITY_REF_NODE) {
            PyErr_SetString(extract_unsupported, "an entity reference");
            return -1;
        }
        if (paragraphs != NULL && node != top && extract_is_element(node, 'p')) {
            ++*paragraphs;
        } else if ((node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE) && node->content != NULL) {
            chars += utf8_chars(node->content);
            if (buffer != NULL &&
                extract_append(buffer, (const char *)node->content, (Py_ssize_t)strlen((const char *)node->content)) < 0) {
                return -1;
            }
        }
    }
    return chars;
}

static int
is_ancestor(const xmlNode *ancestor, const xmlNode *node)
{
    for (node = node->parent; node != NULL; node = node->parent) {
        if (node == ancestor) {
            return 1;
        }
    }
    return 0;
}

/* _smallest_holder(): the deepest element holding `needed` of the links. Those inside one
 * subtree are consecutive in document order, so it is an ancestor of the middle one, and
 * the links it holds a run around it, grown as the candidate rises. */
static const xmlNode *
smallest_holder(const Anchored *links, int n, int *held)
{
    int needed = (int)ceil(extract_digest_rules.cover * n), low = n / 2, high = n / 2;
    for (const xmlNode *holder = links[n / 2].node->parent; holder != NULL && holder->type == XML_ELEMENT_NODE;
         holder = holder->parent) {
        while (low > 0 && is_ancestor(holder, links[low - 1].node)) {
            low--;
        }
        while (high < n - 1 && is_ancestor(holder, links[high + 1].node)) {
            high++;
        }
        if (high - low + 1 >= needed) {
            *held = high - low + 1;
            return holder;
        }
    }
    return NULL;
}

/* A link's text in the buffer of is_digest: where it starts and ends, then the text itself
 * (set once the buffer is whole: it moves as it grows). */
typedef struct {
    Py_ssize_t start, length;
    const char *text;
} Span;

static int
by_text(const void *a, const void *b)
{
    const Span *x = a, *y = b;
    return extract_compare_bytes(x->text, x->length, y->text, y->length);
}

/* How many different texts the spans of `buffer` hold. */
static int
distinct_texts(const Buffer *buffer, Span *spans, int n)
{
    for (int i = 0; i < n; i++) {
        spans[i].text = buffer->data + spans[i].start;
    }
    qsort(spans, (size_t)n, sizeof(Span), by_text);
    int distinct = n > 0;
    for (int i = 1; i < n; i++) {
        distinct += by_text(&spans[i - 1], &spans[i]) != 0;
    }
    return distinct;
}

/* What is_digest measures of a part, whatever the group of links it holds: measured once
 * a part, where groups of links into many documents share their smallest holder (a grid
 * of thumbnails linking to other pages' anchors: once a group, the walks made a page of
 * 4 MB take 33 s). */
typedef struct {
    const xmlNode *part;      /* NULL: a free slot */
    double walked;            /* the limit of the walk that counted `chars` (-1: none yet) */
    long chars, paragraphs;   /* its characters (past `walked`: more), its <p> elements */
    int linked;               /* whether the two below are counted */
    long into_others, link_chars; /* its links into other documents; its links' characters */
} PartSizes;

typedef struct {
    PartSizes *slots;
    int size, used;
} PartCache;

/* The sizes of `part` in `cache` (a slot made for it if new), or NULL with an exception. */
static PartSizes *
sizes_of(PartCache *cache, const xmlNode *part)
{
    if (2 * (cache->used + 1) > cache->size) { /* (grow: half full at most) */
        int size = cache->size ? 2 * cache->size : 64;
        PartSizes *slots = PyMem_Calloc((size_t)size, sizeof(PartSizes));
        if (slots == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        for (int i = 0; i < cache->size; i++) {
            if (cache->slots[i].part != NULL) {
                size_t at = ((uintptr_t)cache->slots[i].part >> 4) & (size_t)(size - 1);
                while (slots[at].part != NULL) {
                    at = (at + 1) & (size_t)(size - 1);
                }
                slots[at] = cache->slots[i];
            }
        }
        PyMem_Free(cache->slots);
        cache->slots = slots, cache->size = size;
    }
    size_t at = ((uintptr_t)part >> 4) & (size_t)(cache->size - 1);
    while (cache->slots[at].part != NULL && cache->slots[at].part != part) {
        at = (at + 1) & (size_t)(cache->size - 1);
    }
    if (cache->slots[at].part == NULL) {
        cache->slots[at] = (PartSizes){part, -1.0, 0, 0, 0, 0, 0};
        cache->used++;
    }
    return &cache->slots[at];
}

/* The characters of `part` when it holds at least min_entries paragraphs and at most
 * max_chars_per_link characters for each of the `held` links; else 0 (the walk stops at
 * the limit: the candidate holders of a big page are big), or -1 with an exception. */
static long
fitting_size(PartSizes *sizes, int held)
{
    double limit = extract_digest_rules.max_chars_per_link * held;
    int whole = sizes->walked >= 0 && (double)sizes->chars <= sizes->walked; /* (the walk reached its end) */
    if (!whole && limit > sizes->walked) { /* (a walk that stopped short of this limit: again, further) */
        sizes->paragraphs = 0;
        sizes->chars = text_of(sizes->part, limit, NULL, &sizes->paragraphs);
        if (sizes->chars < 0) {
            return -1;
        }
        sizes->walked = limit;
    }
    /* (A walk stopped past a limit at least this one: more characters than it allows.) */
    return (double)sizes->chars <= limit && sizes->paragraphs >= extract_digest_rules.min_entries ? sizes->chars : 0;
}

/* Count the links of `sizes->part` into other documents, and their characters; -1 with an exception. */
static int
count_links(PartSizes *sizes, const char *own)
{
    int unsupported = 0;
    for (const xmlNode *node = sizes->part; node != NULL; node = extract_next_in(node, sizes->part)) {
        if (!extract_is_element(node, 'a')) {
            continue;
        }
        const char *href = extract_href_of(node, &unsupported), *document = NULL;
        Py_ssize_t length = 0;
        if (unsupported) {
            PyErr_SetString(extract_unsupported, "an href of several nodes");
            return -1;
        }
        long chars = text_of(node, INFINITY, NULL, NULL);
        if (chars < 0) {
            return -1;
        }
        sizes->into_others += href != NULL && extract_other_document(href, own, &document, &length);
        sizes->link_chars += chars;
    }
    sizes->linked = 1;
    return 0;
}

/* _is_digest() of the part that `sizes` measures, for the links of one target (`n` of
 * them, all the page's: those the part holds count): 1, 0, or -1 with an exception. */
static int
is_digest(PartSizes *sizes, int held, const Anchored *links, int n, const char *own)
{
    long chars = fitting_size(sizes, held);
    if (chars <= 0) {
        return (int)chars;
    }
    if (!sizes->linked && count_links(sizes, own) < 0) {
        return -1;
    }
    Buffer texts = {0};
    Span *spans = NULL;
    int n_spans = 0, cap_spans = 0, verdict = -1;
    for (int i = 0; i < n; i++) { /* (in document order, as a walk of the part meets them) */
        if (!is_ancestor(sizes->part, links[i].node)) {
            continue;
        }
        Py_ssize_t start = texts.length;
        if (text_of(links[i].node, INFINITY, &texts, NULL) < 0
            || extract_grow((void **)&spans, &cap_spans, n_spans + 1, sizeof(Span)) < 0) {
            goto done;
        }
        spans[n_spans++] = (Span){start, texts.length - start, NULL};
    }
    verdict = 2 * n_spans >= sizes->into_others && 2 * sizes->link_chars <= chars &&
              distinct_texts(&texts, spans, n_spans) >= extract_digest_rules.min_entries;
done:
    PyMem_Free(texts.data);
    PyMem_Free(spans);
    return verdict;
}

/* digest_parts(root, own) less <html> and <body>, which are never removed: into `parts`;
 * the number found, or -1 with an exception (Unsupported past MAX_DIGESTS). */
int
extract_find_digests(const xmlNode *root, const char *own, const xmlNode **parts)
{
    Anchored *links = NULL;
    PartCache cache = {0};
    int n = extract_anchored_links(root, own, &links), found = n < 0 ? -1 : 0;
    for (int first = 0, last; first < n; first = last) {
        for (last = first + 1; last < n && extract_same_target(&links[first], &links[last]); last++) {
        }
        if (last - first < extract_digest_rules.min_entries) {
            continue;
        }
        int held = 0;
        const xmlNode *part = smallest_holder(links + first, last - first, &held);
        PartSizes *sizes = part == NULL ? NULL : sizes_of(&cache, part);
        int verdict = part == NULL ? 0 : sizes == NULL ? -1 : is_digest(sizes, held, links + first, last - first, own);
        if (verdict && found == MAX_DIGESTS) {
            PyErr_SetString(extract_unsupported, "too many digests");
            verdict = -1;
        }
        if (verdict < 0) {
            found = -1;
            break;
        }
        if (verdict && !extract_is_named(part, "html") && !extract_is_named(part, "body")) {
            parts[found++] = part;
        }
    }
    PyMem_Free(links);
    PyMem_Free(cache.slots);
    return found;
}

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

/* The characters of `part` when it holds at least min_entries paragraphs and at most
 * max_chars_per_link characters for each of the `held` links; else 0 (the walk stops at
 * the limit: the candidate holders of a big page are big), or -1 with an exception. */
static long
fitting_size(const xmlNode *part, int held)
{
    double limit = extract_digest_rules.max_chars_per_link * held;
    long paragraphs = 0, chars = text_of(part, limit, NULL, &paragraphs);
    if (chars < 0) {
        return -1;
    }
    return (double)chars <= limit && paragraphs >= extract_digest_rules.min_entries ? chars : 0;
}

/* _is_digest(): 1, 0, or -1 with an exception. */
static int
is_digest(const xmlNode *part, int held, const Anchored *target, const char *own)
{
    long chars = fitting_size(part, held);
    if (chars <= 0) {
        return (int)chars;
    }
    Buffer texts = {0};
    Span *spans = NULL;
    int n_spans = 0, cap_spans = 0, into_others = 0, unsupported = 0, verdict = -1;
    long link_chars = 0;
    for (const xmlNode *node = part; node != NULL; node = extract_next_in(node, part)) {
        if (!extract_is_element(node, 'a')) {
            continue;
        }
        const char *href = extract_href_of(node, &unsupported), *document = NULL;
        Py_ssize_t length = 0;
        if (unsupported) {
            PyErr_SetString(extract_unsupported, "an href of several nodes");
            goto done;
        }
        int into = href != NULL && extract_other_document(href, own, &document, &length);
        int into_target = into && extract_compare_bytes(document, length, target->target, target->length) == 0;
        Py_ssize_t start = texts.length;
        long chars = text_of(node, INFINITY, into_target ? &texts : NULL, NULL);
        if (chars < 0) {
            goto done;
        }
        into_others += into, link_chars += chars;
        if (into_target) {
            if (extract_grow((void **)&spans, &cap_spans, n_spans + 1, sizeof(Span)) < 0) {
                goto done;
            }
            spans[n_spans++] = (Span){start, texts.length - start, NULL};
        }
    }
    verdict = 2 * n_spans >= into_others && 2 * link_chars <= chars &&
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
    int n = extract_anchored_links(root, own, &links), found = n < 0 ? -1 : 0;
    for (int first = 0, last; first < n; first = last) {
        for (last = first + 1; last < n && extract_same_target(&links[first], &links[last]); last++) {
        }
        if (last - first < extract_digest_rules.min_entries) {
            continue;
        }
        int held = 0;
        const xmlNode *part = smallest_holder(links + first, last - first, &held);
        int verdict = part == NULL ? 0 : is_digest(part, held, &links[first], own);
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
    return found;
}

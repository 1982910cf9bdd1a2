/* The page's heading (heading.page_heading, heading.is_kept), on the tree's events.
 *
 * Its first <h1> (none when all its text is in links and a link in or around it goes to
 * the site's home: heading.links_home); else the longest element with no
 * child element but line breaks, neither a link nor in one, whose text (whitespace
 * collapsed as str.split() does, a <br> a space: heading.shown_text) is one of the title's
 * parts (heading.title_parts, given as UTF-8 bytes); the first in document order among
 * equals.
 */
#include "extract.h"

/* heading.shown_text of element `index` (its children line breaks only), into `out`; its
 * length in characters. */
static Py_ssize_t
collapsed_text(const Tree *tree, int index, Buffer *out)
{
    const Element *element = &tree->elements[index];
    Py_ssize_t chars = 0;
    int space = 0; /* a space is owed before the next character */
    out->length = 0;
    for (int at = element->start + 1; at < element->end; at++) {
        if (tree->events[at].kind != TEXT) {
            space = 1; /* a <br>'s START or END: a line break */
            continue;
        }
        const Text *text = &tree->texts[tree->events[at].index];
        const unsigned char *u = (const unsigned char *)text->content;
        for (Py_ssize_t i = 0; i < text->bytes;) {
            Py_UCS4 code;
            int size = extract_decode_utf8(u, i, text->bytes, &code);
            int invalid = size == 0; /* (not UTF-8: copied as it is, matching no title) */
            size = invalid ? 1 : size;
            if (invalid || !Py_UNICODE_ISSPACE(code)) {
                int gap = space && out->length > 0; /* (no space at the front) */
                if ((gap && extract_append(out, " ", 1) < 0) || extract_append(out, (const char *)u + i, size) < 0) {
                    return -1;
                }
                chars += 1 + gap;
                space = 0;
            } else {
                space = 1;
            }
            i += size;
        }
    }
    return chars;
}

/* Whether element `index`'s children are line breaks only (or none). */
static int
only_breaks(const Tree *tree, int index)
{
    for (int child = tree->elements[index].first_child; child >= 0; child = tree->elements[child].next_sibling) {
        if (!(tree->elements[child].flags & BREAK)) {
            return 0;
        }
    }
    return 1;
}

static int
in_link(const Tree *tree, int index)
{
    for (int at = index; at >= 0; at = tree->elements[at].parent) {
        if (tree->elements[at].flags & LINK) {
            return 1;
        }
    }
    return 0;
}

/* Whether `text` is one of `parts` (a tuple of bytes). */
static int
is_a_part(const Buffer *text, PyObject *parts)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(parts); i++) {
        PyObject *part = PyTuple_GET_ITEM(parts, i);
        if (PyBytes_GET_SIZE(part) == text->length
            && memcmp(PyBytes_AS_STRING(part), text->data ? text->data : "", (size_t)text->length) == 0) {
            return 1;
        }
    }
    return 0;
}

/* heading._all_link_text: all of the element's text is inside links (a site's name linking home). */
static int
all_link_text(const Tree *tree, int index)
{
    TextWalk walk = extract_text_walk(tree, index, LINK);
    walk.depth = in_link(tree, index); /* the links around it too */
    for (const Text *text; (text = extract_next_text(&walk)) != NULL;) {
        if (walk.depth == 0 && !extract_is_space(text->content, text->bytes)) { /* (text outside a link) */
            return 0;
        }
    }
    return 1;
}

static int
is_href_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static int
is_ascii_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* heading._HOME_PATH.fullmatch(path[:length]): ./ and ../ steps, a "/", then index,
 * default or home (any case) with an extension, all optional. */
static int
is_home_path(const char *path, size_t length)
{
    size_t at = 0;
    for (;;) {
        if (length - at >= 2 && path[at] == '.' && path[at + 1] == '/') {
            at += 2;
        } else if (length - at >= 3 && path[at] == '.' && path[at + 1] == '.' && path[at + 2] == '/') {
            at += 3;
        } else {
            break;
        }
    }
    at += at < length && path[at] == '/';
    static const char *const names[] = {"index", "default", "home"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        size_t size = strlen(names[i]);
        if (length - at >= size && PyOS_strnicmp(path + at, names[i], size) == 0) {
            at += size;
            if (at < length && path[at] == '.' && at + 1 < length && is_ascii_alnum(path[at + 1])) {
                for (at++; at < length && is_ascii_alnum(path[at]); at++) {
                }
            }
            break;
        }
    }
    return at == length;
}

/* heading.links_home: whether a link to `href` goes to a site's home page. */
static int
links_home(const char *href)
{
    size_t start = 0, end = strlen(href);
    while (start < end && is_href_space(href[start])) {
        start++;
    }
    while (end > start && is_href_space(href[end - 1])) {
        end--;
    }
    const char *path = href + start;
    size_t length = end - start;
    for (size_t at = 0; at < length; at++) {
        if (path[at] == '?' || path[at] == '#') {
            length = at; /* (the query and fragment aside) */
            break;
        }
    }
    size_t scheme = 0; /* a scheme ("https:") or none, then "//" and a host */
    if (length > 0 && ((path[0] >= 'a' && path[0] <= 'z') || (path[0] >= 'A' && path[0] <= 'Z'))) {
        for (scheme = 1; scheme < length && (is_ascii_alnum(path[scheme]) || path[scheme] == '+'
                                              || path[scheme] == '.' || path[scheme] == '-');
             scheme++) {
        }
        scheme = scheme < length && path[scheme] == ':' ? scheme + 1 : 0;
    }
    if (length - scheme >= 2 && path[scheme] == '/' && path[scheme + 1] == '/') {
        size_t at = scheme + 2;
        while (at < length && path[at] != '/') {
            at++;
        }
        return is_home_path(path + at, length - at);
    }
    return length > 0 && is_home_path(path, length); /* ("": the page itself) */
}

/* Whether element `index` is a link to the site's home; -1 with an exception. */
static int
is_home_link(const Tree *tree, int index)
{
    int unsupported = 0;
    const char *href = extract_href_of(tree->elements[index].node, &unsupported);
    if (unsupported) {
        PyErr_SetString(extract_unsupported, "an href of several nodes");
        return -1;
    }
    return href != NULL && links_home(href);
}

int
extract_links_home_around(const Tree *tree, int index)
{
    for (int at = tree->elements[index].parent; at >= 0; at = tree->elements[at].parent) {
        int home = tree->elements[at].flags & LINK ? is_home_link(tree, at) : 0;
        if (home) {
            return home;
        }
    }
    const Element *element = &tree->elements[index];
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        if (event->kind != START) {
            continue;
        }
        const Element *inside = &tree->elements[event->index];
        if (inside->removed) {
            at = inside->end; /* (a pruned subtree: none is pruned yet, where this is asked) */
            continue;
        }
        int home = inside->flags & LINK ? is_home_link(tree, event->index) : 0;
        if (home) {
            return home;
        }
    }
    return 0;
}

/* The heading's element index, -1 for none, -2 with an exception. Asked before pruning. */
int
extract_page_heading(const Tree *tree, PyObject *parts)
{
    for (int index = 1; index < tree->n_elements; index++) {
        if (tree->elements[index].flags & HEADING) {
            if (!all_link_text(tree, index)) {
                return index;
            }
            int home = extract_links_home_around(tree, index);
            return home < 0 ? -2 : home ? -1 : index;
        }
    }
    if (parts == NULL || PyTuple_GET_SIZE(parts) == 0) {
        return -1;
    }
    Buffer text = {0};
    int best = -1;
    Py_ssize_t best_chars = 0;
    for (int index = 1; index < tree->n_elements; index++) {
        if (!only_breaks(tree, index) || in_link(tree, index)) {
            continue;
        }
        Py_ssize_t chars = collapsed_text(tree, index, &text);
        if (chars < 0) {
            best = -2;
            break;
        }
        if (chars > best_chars && is_a_part(&text, parts)) {
            best = index, best_chars = chars;
        }
    }
    PyMem_Free(text.data);
    return best;
}

/* heading.lost_by_name: the name rules prune the heading or an element around it (below
 * the body), and none is boilerplate by its tag or role. Asked before pruning; -1 with an
 * exception. */
int
extract_lost_by_name(const Tree *tree, int heading)
{
    Buffer key = {0};
    ClassIndex classes = {0};
    int named = 0, status = -1;
    for (int at = heading; at > 0; at = tree->elements[at].parent) {
        unsigned flags = tree->elements[at].flags;
        if (flags & BOILERPLATE) {
            status = 0;
            goto done;
        }
        if (!(flags & CONTAINER)) {
            continue;
        }
        int verdict = extract_container_verdict(tree, at, &key, &classes);
        if (verdict < 0) {
            goto done;
        }
        if (verdict == BY_ROLE) {
            status = 0;
            goto done;
        }
        named = named || (verdict == BY_NAME && extract_reads_as_section(tree, at) == 0);
    }
    status = named;
done:
    PyMem_Free(key.data);
    extract_free_class_index(&classes);
    return status;
}

/* heading.is_kept: `index` or an element around it is kept, none of them removed. */
int
extract_is_kept(const Tree *tree, int index, const int *kept, int n_kept)
{
    for (int at = index; at >= 0; at = tree->elements[at].parent) {
        for (int i = 0; i < n_kept; i++) {
            if (kept[i] == at) {
                return 1;
            }
        }
        if (tree->elements[at].removed) {
            return 0; /* (the Python code's pruned element: its ancestors end there) */
        }
    }
    return 0;
}

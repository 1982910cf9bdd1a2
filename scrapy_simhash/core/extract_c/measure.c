/* How much text, and how much prose, an element holds (textsize.measure_both and friends).
 *
 * The Python code serialises a subtree with link markers written into the tree and
 * counts characters; this counts the same characters event by event, the markers
 * where the Python code would have written them.
 */
#include "extract.h"

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
void
extract_tally_bytes(Tally *tally, const char *s, Py_ssize_t bytes)
{
    for (Py_ssize_t i = 0; i < bytes; i++) {
        unsigned char byte = (unsigned char)s[i];
        if ((byte & 0xC0) == 0x80 || byte == ' ') {
            continue;
        }
        if (byte == MARK_BYTE && i + 2 < bytes && (unsigned char)s[i + 1] == 0x80) {
            unsigned char last = (unsigned char)s[i + 2];
            if (last == OPEN_MARK) {
                tally_open(tally);
                continue;
            }
            if (last == CLOSE_MARK) {
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
        extract_tally_bytes(tally, text->content, text->bytes);
    } else {
        tally_plain(tally, text->chars - text->spaces);
    }
}

/* The text of element `index` with link markers (mark_links): (prose, everything). */
void
extract_measure_both(const Tree *tree, int index, long *prose, long *everything)
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

long
extract_measure(const Tree *tree, int index, int prose)
{
    long with_links, everything;
    extract_measure_both(tree, index, &with_links, &everything);
    return prose ? with_links : everything;
}

/* boilerplate._text_chars: characters of the text, spaces not counted (no markers yet). */
long
extract_text_chars(const Tree *tree, int index)
{
    TextWalk walk = extract_text_walk(tree, index, 0);
    long chars = 0;
    for (const Text *text; (text = extract_next_text(&walk)) != NULL;) {
        chars += text->chars - text->spaces;
    }
    return chars;
}

/* boilerplate._link_chars: the text_chars of every link inside element `index` (itself
 * too), added up. A text inside n links counts n times, as Python's sum over
 * element.iter("a") counts a link inside a link twice. */
long
extract_link_chars(const Tree *tree, int index)
{
    TextWalk walk = extract_text_walk(tree, index, LINK);
    long chars = 0;
    for (const Text *text; (text = extract_next_text(&walk)) != NULL;) {
        chars += walk.depth * (text->chars - text->spaces);
    }
    return chars;
}

/* textsize._loose_chars: the parent's own text and its children's tails; -1 (None) when
 * a link marker is among them. */
long
extract_loose_chars(const Tree *tree, int index)
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

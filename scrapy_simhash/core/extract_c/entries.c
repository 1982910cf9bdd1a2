/* Lists judged whole (entries.text_list_entries): the entries of a list of text are marked,
 * and the serialisation (blocks.c) takes their links' markers off.
 *
 * Measured as the Python code measures them: with every link marked (before unmark_links).
 */
#include "extract.h"
#include <math.h>

/* Whether the entry is mostly link text: 1, 0, or -1 when it has no text. */
static int
is_links(const Tree *tree, int entry)
{
    long prose, everything;
    extract_measure_both(tree, entry, &prose, &everything);
    if (everything == 0) {
        return -1;
    }
    return (double)(everything - prose) > extract_rules.link_density * (double)everything;
}

/* The element children (not removed) of `listing`: its entries, marked if it is a list of text. */
static void
judge_list(Tree *tree, int listing)
{
    int entries = 0, judged = 0, links = 0;
    for (int child = tree->elements[listing].first_child; child >= 0; child = tree->elements[child].next_sibling) {
        if (tree->elements[child].removed) {
            continue;
        }
        entries++;
        int verdict = is_links(tree, child);
        judged += verdict >= 0;
        links += verdict == 1;
    }
    if (entries < extract_rules.min_entries || judged == 0
        || (double)(judged - links) < extract_rules.min_text_share * (double)judged) {
        return;
    }
    for (int child = tree->elements[listing].first_child; child >= 0; child = tree->elements[child].next_sibling) {
        tree->elements[child].list_entry = !tree->elements[child].removed;
    }
}

/* Mark the entries of the lists of text in the kept elements (themselves included; a
 * kept heading may have been pruned with its container, heading.c). */
void
extract_mark_list_entries(Tree *tree, const int *kept, int n_kept)
{
    for (int i = 0; i < n_kept; i++) {
        int end = tree->elements[kept[i]].end;
        for (int index = kept[i]; index < tree->n_elements && tree->elements[index].start < end; index++) {
            const Element *element = &tree->elements[index];
            if (element->removed && index != kept[i]) { /* skip its subtree: the elements starting in it */
                index = extract_last_inside(tree, index);
                continue;
            }
            if (element->flags & LIST) {
                judge_list(tree, index);
            }
        }
    }
}

/* ---- Tables of contents (entries.contents_links) ---- */

enum { NO_TEXT, UNNUMBERED, NUMBERED, NESTED };

/* The length of the space character at `s` (entries._SPACES: ASCII's and U+00A0), else 0. */
static int
space_length(const unsigned char *s, Py_ssize_t left)
{
    if (*s == ' ' || (*s >= '\t' && *s <= '\r')) {
        return 1;
    }
    return left >= 2 && s[0] == 0xC2 && s[1] == 0xA0 ? 2 : 0;
}

/* How a link's text starts, as entries._NUMBERED matches it: a section number ("1.",
 * "2.3") then spaces then more text (NUMBERED, NESTED with a level after a dot). */
static int
numbering(const Tree *tree, int link)
{
    enum { LEAD, DIGITS, DOT, SPACES } state = LEAD;
    int nested = 0, has_text = 0;
    TextWalk walk = extract_text_walk(tree, link, 0);
    for (const Text *text; (text = extract_next_text(&walk)) != NULL;) {
        const unsigned char *s = (const unsigned char *)text->content;
        for (Py_ssize_t i = 0; i < text->bytes;) {
            int space = space_length(s + i, text->bytes - i);
            int digit = s[i] >= '0' && s[i] <= '9';
            if (!space) {
                has_text = 1;
            }
            if (state == SPACES && !space) {
                return nested ? NESTED : NUMBERED;
            }
            if (space) {
                state = state == LEAD ? LEAD : SPACES;
            } else if (digit) {
                nested |= state == DOT;
                state = DIGITS;
            } else if (s[i] == '.' && state == DIGITS) {
                state = DOT;
            } else {
                return UNNUMBERED;
            }
            i += space ? space : 1;
        }
    }
    return has_text ? UNNUMBERED : NO_TEXT;
}

#define CONTENTS_LINK (1u << 30) /* (set here, for a moment: a link of a table of contents or a card) */

/* The first link (not removed) inside `listing` after element `after`; -1 for none. */
static int
next_link(const Tree *tree, int listing, int after)
{
    int end = tree->elements[listing].end;
    for (int index = after + 1; index < tree->n_elements && tree->elements[index].start < end; index++) {
        const Element *element = &tree->elements[index];
        if (element->removed) { /* skip its subtree: the elements starting in it */
            index = extract_last_inside(tree, index);
        } else if (element->flags & LINK) {
            return index;
        }
    }
    return -1;
}

/* Whether `listing` is a table of contents; if so, its links get CONTENTS_LINK. */
static void
judge_contents(Tree *tree, int listing)
{
    int numbered = 0, nested = 0, with_text = 0;
    for (int link = next_link(tree, listing, listing); link >= 0; link = next_link(tree, listing, link)) {
        int verdict = numbering(tree, link);
        with_text += verdict != NO_TEXT;
        numbered += verdict >= NUMBERED;
        nested |= verdict == NESTED;
    }
    if (!nested || numbered < extract_rules.min_entries
        || (double)numbered < extract_rules.min_numbered_share * (double)with_text) {
        return;
    }
    for (int link = next_link(tree, listing, listing); link >= 0; link = next_link(tree, listing, link)) {
        tree->elements[link].flags |= CONTENTS_LINK;
    }
}

/* ---- Lists of cards (entries.card_links) ---- */

/* Whether element `index` holds text (not only spaces) outside its child elements. */
static int
has_own_text(const Tree *tree, int index)
{
    const Element *element = &tree->elements[index];
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        if (event->kind == START) {
            at = tree->elements[event->index].end; /* (a child's texts are its own) */
        } else if (event->kind == TEXT) {
            const Text *text = &tree->texts[event->index];
            if (!extract_is_space(text->content, text->bytes)) {
                return 1;
            }
        }
    }
    return 0;
}

/* entries.card_link: the one link of `entry` when it holds min_card_texts texts of
 * elements of their own (itself included), else -1. */
static int
card_link(const Tree *tree, int entry)
{
    int link = tree->elements[entry].flags & LINK ? entry : next_link(tree, entry, entry); /* (itself: a grid of <a>) */
    if (link < 0 || next_link(tree, entry, link) >= 0) {
        return -1;
    }
    Py_ssize_t texts = 0;
    int end = tree->elements[link].end;
    for (int index = link; index < tree->n_elements && tree->elements[index].start < end; index++) {
        if (tree->elements[index].removed) { /* skip its subtree: the elements starting in it */
            index = extract_last_inside(tree, index);
            continue;
        }
        texts += has_own_text(tree, index);
    }
    return texts >= extract_rules.min_card_texts ? link : -1;
}

/* Whether `listing` is a list of cards; if so, their links get CONTENTS_LINK. */
static void
judge_cards(Tree *tree, int listing)
{
    int entries = 0, misses = 0;
    for (int child = tree->elements[listing].first_child; child >= 0; child = tree->elements[child].next_sibling) {
        entries += !tree->elements[child].removed;
    }
    /* (Stops at the first entry too many that is no card: most containers are no list of
     * cards, and a big first child would be walked for nothing.) */
    double needed = fmax((double)extract_rules.min_entries, extract_rules.min_card_share * (double)entries);
    if ((double)entries < needed) {
        return; /* (too few entries: a chain of wrappers would be walked at each level) */
    }
    for (int child = tree->elements[listing].first_child; child >= 0; child = tree->elements[child].next_sibling) {
        if (!tree->elements[child].removed && card_link(tree, child) < 0 && (double)(entries - ++misses) < needed) {
            return;
        }
    }
    for (int child = tree->elements[listing].first_child; child >= 0; child = tree->elements[child].next_sibling) {
        int link = tree->elements[child].removed ? -1 : card_link(tree, child);
        if (link >= 0) {
            tree->elements[link].flags |= CONTENTS_LINK;
        }
    }
}

/* Take the links of the tables of contents and of the lists of cards out of the links
 * (entries.contents_links, entries.card_links, and mark_links leaving them unmarked):
 * they count as prose from here on. */
void
extract_unlink_contents(Tree *tree)
{
    for (int index = 0; index < tree->n_elements; index++) {
        const Element *element = &tree->elements[index];
        if (element->removed) {
            index = extract_last_inside(tree, index);
            continue;
        }
        if (element->flags & LIST) {
            judge_contents(tree, index);
        }
        if (element->flags & (LIST | CONTAINER)) { /* (entries.CARD_LIST_TAGS) */
            judge_cards(tree, index);
        }
    }
    for (int index = 0; index < tree->n_elements; index++) {
        if (tree->elements[index].flags & CONTENTS_LINK) {
            tree->elements[index].flags &= ~(LINK | CONTENTS_LINK);
        }
    }
}

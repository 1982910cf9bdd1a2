/* Locating the main content (descent.main_container): the descent by text density.
 *
 * The same rules in the same order as the Python code, on sizes from measure.c; a
 * child's size derived from its siblings' where the Python code derives it.
 */
#include "extract.h"

static int
next_child(const Tree *tree, int index)
{
    while (index >= 0 && tree->elements[index].removed) {
        index = tree->elements[index].next_sibling;
    }
    return index;
}

#define FOR_CHILDREN(tree, parent, child)                                                                              \
    for (int child = next_child(tree, (tree)->elements[parent].first_child); child >= 0;                               \
         child = next_child(tree, (tree)->elements[child].next_sibling))

static int
count_children(const Tree *tree, int index)
{
    int count = 0;
    FOR_CHILDREN (tree, index, child) {
        count++;
    }
    return count;
}

/* textsize._last_line: the line of the last element inside an element. */
static long
last_line(const Tree *tree, int index)
{
    for (;;) {
        int last = -1;
        FOR_CHILDREN (tree, index, child) {
            last = child;
        }
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
    FOR_CHILDREN (tree, parent, child) {
        sizes[n++] = (Size){child, 0};
    }
    if (n == 0) {
        return 0;
    }
    long loose = extract_loose_chars(tree, parent);
    int derived = -1;
    if (loose >= 0 && n <= extract_rules.sized_at_once) {
        long best = 0; /* the child spanning the most source lines: likely the biggest */
        for (int i = 0; i < n; i++) {
            long end = i + 1 < n ? (long)tree->elements[sizes[i + 1].child].node->line
                                 : last_line(tree, sizes[n - 1].child) + 1;
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
            sizes[i].chars = extract_measure(tree, sizes[i].child, prose);
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
heading_child(const Tree *tree, const Size *sizes, int n, long held, long heading_chars)
{
    for (int i = 0; i < n; i++) {
        if (tree->elements[sizes[i].child].on_heading_path) {
            double chars = (double)sizes[i].chars;
            if (chars < extract_rules.fair_share * (double)held
                || chars <= extract_rules.heading_alone * (double)heading_chars) {
                return NOT_FOUND; /* (too small, or the heading alone: a title, not the article) */
            }
            return sizes[i];
        }
    }
    return NOT_FOUND;
}

static Size
clear_winner(const Tree *tree, const Size *sizes, int n, long held)
{
    if (n == 0) {
        return NOT_FOUND;
    }
    int top = 0; /* the first of the largest, as a stable sort ranks them */
    for (int i = 1; i < n; i++) {
        top = sizes[i].chars > sizes[top].chars ? i : top;
    }
    if ((double)sizes[top].chars < extract_rules.winner_share * (double)held) {
        return NOT_FOUND;
    }
    if (n > 1) {
        long second = LONG_MIN;
        for (int i = 0; i < n; i++) {
            if (i != top && sizes[i].chars > second) {
                second = sizes[i].chars;
            }
        }
        if ((double)sizes[top].chars < extract_rules.winner_margin * (double)second) {
            return NOT_FOUND;
        }
    }
    if (tree->elements[sizes[top].child].flags & ENTRY_PART) {
        return NOT_FOUND;
    }
    long lead = 0; /* the prose before it (descent._clear_winner) */
    for (int i = 0; i < top; i++) {
        lead += sizes[i].chars;
    }
    if ((double)lead > extract_rules.winner_lead * (double)held) {
        return NOT_FOUND;
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

/* descent._is_code: all of the element's text is in code elements (CODE), and some is. */
static int
is_code(const Tree *tree, int index)
{
    TextWalk walk = extract_text_walk(tree, index, CODE);
    int code = 0;
    for (const Text *text; (text = extract_next_text(&walk)) != NULL;) {
        if (!extract_is_blank(text->content, text->bytes)) {
            if (walk.depth == 0) {
                return 0;
            }
            code = 1;
        }
    }
    return code;
}

/* Where the descent starts: the page's only <main> (else only <article>) holding a fair
 * share, else the body. Marks the path to the first <h1> on the way. */
static Size
semantic_start(Tree *tree, int prose, long total, long *heading_chars)
{
    int heading = -1, mains = 0, articles = 0, main = -1, article = -1;
    for (int index = 0; index < tree->n_elements; index++) {
        const Element *element = &tree->elements[index];
        if (element->removed) { /* skip its subtree: the elements that start inside it */
            index = extract_last_inside(tree, index);
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
    *heading_chars = heading >= 0 ? extract_measure(tree, heading, prose) : 0;
    int starts[2] = {mains == 1 ? main : -1, articles == 1 ? article : -1};
    for (int i = 0; i < 2; i++) {
        if (starts[i] >= 0) {
            long chars = extract_measure(tree, starts[i], prose);
            if ((double)chars >= extract_rules.fair_share * (double)total) {
                return (Size){starts[i], chars};
            }
        }
    }
    return (Size){0, total};
}

int
extract_mark_first_heading(Tree *tree)
{
    for (int index = 0; index < tree->n_elements; index++) {
        if (tree->elements[index].flags & HEADING) {
            int home = extract_links_home_around(tree, index);
            if (home != 0) {
                return home < 0 ? -1 : 0; /* (the site's name) */
            }
            for (int at = tree->elements[index].parent; at >= 0; at = tree->elements[at].parent) {
                tree->elements[at].holds_first_heading = 1;
            }
            return 0;
        }
    }
    return 0;
}

/* descent._leaves_the_heading_behind: descending from `container` into its dominant child
 * `found` leaves text of the page's own behind, beside its first heading. */
static int
leaves_the_heading_behind(const Tree *tree, int container, const Size *sizes, int n, int found)
{
    if (!tree->elements[container].holds_first_heading || tree->elements[found].holds_first_heading) {
        return 0;
    }
    long rest = 0; /* (in its other children, but headings, paragraphs and code) */
    for (int i = 0; i < n; i++) {
        int child = sizes[i].child;
        if (child != found && !(tree->elements[child].flags & KEPT) && !is_code(tree, child)) {
            rest += sizes[i].chars;
        }
    }
    return rest >= extract_rules.own_text_beside;
}

/* descent.main_container: the container, and the elements left behind on the way
 * (appended to `behind`, which has room for every element). */
int
extract_main_container(Tree *tree, int prose, long total, int *behind, int *n_behind)
{
    Size *sizes = PyMem_Malloc(sizeof(Size) * ((size_t)tree->n_elements + 1));
    if (sizes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    long heading_chars;
    Size start = semantic_start(tree, prose, total, &heading_chars);
    int container = start.child;
    total = start.chars;
    long held = total;
    while (held > 0) {
        int n = child_sizes(tree, container, held, prose, sizes);
        Size found = dominant_child(sizes, n, held, extract_rules.descend_share * (double)total);
        if (found.child >= 0 && leaves_the_heading_behind(tree, container, sizes, n, found.child)) {
            break;
        }
        if (found.child < 0 && n <= extract_rules.contestants) {
            found = heading_child(tree, sizes, n, held, heading_chars);
            if (found.child < 0) {
                found = clear_winner(tree, sizes, n, held);
            }
            if (found.child >= 0) {
                total = found.chars;
            }
        }
        if (found.child < 0 || is_text_block(tree, found.child)) {
            break;
        }
        /* The headings, paragraphs and code before the chosen child stay (a title, a lead, includes). */
        for (int i = 0; i < n && sizes[i].child != found.child; i++) {
            if ((tree->elements[sizes[i].child].flags & KEPT) || is_code(tree, sizes[i].child)) {
                behind[(*n_behind)++] = sizes[i].child;
            }
        }
        container = found.child;
        held = found.chars;
    }
    PyMem_Free(sizes);
    return container;
}

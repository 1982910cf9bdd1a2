/* Lists judged whole (entries.text_list_entries): the entries of a list of text are marked,
 * and the serialisation (blocks.c) takes their links' markers off.
 *
 * Measured as the Python code measures them: with every link marked (before unmark_links).
 */
#include "extract.h"

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
                while (index + 1 < tree->n_elements && tree->elements[index + 1].start < element->end) {
                    index++;
                }
                continue;
            }
            if (element->flags & LIST) {
                judge_list(tree, index);
            }
        }
    }
}

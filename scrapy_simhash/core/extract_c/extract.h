/* Main-content extraction (content.extract_main_blocks) on libxml2's nodes, in C.
 *
 * The Python extraction makes a few C-level scans of lxml's tree, but it still reads
 * and writes thousands of attributes and texts from Python and serialises subtrees to
 * measure them: ~0.8 ms a page, more than parsing it. This walks libxml2's nodes once
 * into an array of events (tree.c), then runs the same algorithm on that array: find the
 * page's heading (heading.c), prune (prune.c), measure (measure.c), descend (descent.c),
 * judge lists whole (entries.c), split into blocks (blocks.c).
 * ~0.15 ms. It never modifies the tree: where the Python code removes an element or
 * writes a marker into a text, this marks the element removed, or counts the marker
 * as if it were there.
 *
 * The results are identical (tests/test_extract_c.py checks it on every page of the dev
 * corpus and on generated pages). Where a tree holds what this does not model (entity
 * references, line numbers past 65534), it raises Unsupported and
 * scrapy_simhash.core.content runs the Python code. The rules (tag classes, shares,
 * the vocabularies of the attribute verdicts, the credit-line verdict) come from the
 * Python modules (module.c, configure(); names_rules.c, configure_names()), so they are
 * written once.
 */
#ifndef SCRAPY_SIMHASH_EXTRACT_H
#define SCRAPY_SIMHASH_EXTRACT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <libxml/tree.h>
#include <stdint.h>
#include <string.h>

/* Symbols shared between the files are hidden: the shared object exports PyInit__extract
 * alone, and calls between files stay direct (no PLT). */
#if defined(__GNUC__) || defined(__clang__)
#define INTERNAL __attribute__((visibility("hidden")))
#else
#define INTERNAL
#endif

/* Tag classes, set per tag name by configure(). */
enum {
    BLOCK = 1 << 0,       /* text.BLOCK_TAGS: a block boundary before and after */
    BOILERPLATE = 1 << 1, /* boilerplate by its tag */
    CONTAINER = 1 << 2,   /* boilerplate by its attributes, maybe */
    LINK = 1 << 3,        /* <a> */
    HEADING = 1 << 4,     /* <h1> */
    MAIN = 1 << 5,
    ARTICLE = 1 << 6,
    KEPT = 1 << 7,             /* kept when the descent leaves it behind */
    TEXT_BLOCK = 1 << 8,       /* never descended into */
    LISTING = 1 << 9,          /* <pre> */
    INVISIBLE = 1 << 10,       /* text.INVISIBLE_TAGS: skipped, as text.parse_html strips them */
    NEVER_LINK_LIST = 1 << 11, /* content._NEVER_LINK_LISTS: their links lose their markers */
    SECTION_HEADING = 1 << 12, /* boilerplate.SECTION_HEADINGS: a section starts with one */
    PARAGRAPH = 1 << 13,       /* <p> */
    ENTRY_PART = 1 << 14,      /* descent.ENTRY_PARTS: never a clear winner */
    CELL = 1 << 15,            /* text.CELL_TAGS: a space before its text, no block boundary */
    LANDMARK = 1 << 16,        /* boilerplate.LANDMARK_TAGS: what holds one is the page's frame */
    LIST = 1 << 17,            /* entries.LIST_TAGS: its element children are the entries of one list */
    CODE = 1 << 18,            /* descent.CODE_TAGS: before the chosen child, a block all of code stays */
    BREAK = 1 << 19,           /* <br>: a heading may hold line breaks (heading.shown_text) */
};

/* The rules, from configure(). */
typedef struct {
    PyObject *tags;                             /* dict: tag name (bytes) -> class bits */
    PyObject *verdict;                          /* names.attributes_say_boilerplate, where names.c asks it */
    PyObject *credit;                           /* str -> bool: a credit or legal line */
    PyObject *credit_brackets, *credit_starts;  /* str, tuple of str (lower case): how one may start */
    PyObject *case_folds;                       /* str: a letter past ASCII, the ASCII one it matches, ... */
    Py_ssize_t max_stamp_line;                  /* ...or a line this short with a ':' (a time of day) */
    Py_ssize_t max_credit_line;                 /* longer (and no stamp line): not a credit line */
    double descend_share, fair_share, winner_share, winner_margin, link_density, prose_share, pruned_share, link_share;
    double winner_lead;    /* descent.WINNER_LEAD */
    double min_text_share; /* entries.MIN_TEXT_SHARE */
    double min_numbered_share; /* entries.MIN_NUMBERED_SHARE */
    double min_card_share; /* entries.MIN_CARD_SHARE */
    Py_ssize_t min_card_texts; /* entries.MIN_CARD_TEXTS */
    Py_ssize_t own_text_beside; /* descent.OWN_TEXT_BESIDE */
    double heading_alone;  /* descent.HEADING_ALONE */
    Py_ssize_t contestants, sized_at_once, min_section_prose, min_entries;
} Rules;

INTERNAL extern Rules extract_rules;
INTERNAL extern PyObject *extract_unsupported; /* the exception: the Python code must run */

/* ---- The tree as events (tree.c) ---- */

enum { START, END, TEXT };

typedef struct {
    int kind;
    int index; /* the element (START, END) or the text (TEXT) */
} Event;

typedef struct {
    const xmlNode *node;
    int parent;                    /* -1 for the root of the walk */
    int first_child, next_sibling; /* elements, -1 for none */
    int start, end;                /* its START and END events */
    unsigned flags;
    int removed, on_heading_path;
    int list_entry; /* an entry of a list of text: its links lose their markers */
    int holds_first_heading; /* holds the page's first <h1>, before pruning (descent.first_heading_path) */
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

typedef struct {
    char *data;
    Py_ssize_t length, capacity;
} Buffer;

/* A walk over the texts inside an element, in order, its removed subtrees skipped, that
 * counts how many elements with `flag` hold each text (the element itself too): the
 * links around it, the code elements. */
typedef struct {
    const Tree *tree;
    int at, end;
    unsigned flag;
    long depth;
} TextWalk;

static inline TextWalk
extract_text_walk(const Tree *tree, int index, unsigned flag)
{
    const Element *element = &tree->elements[index];
    return (TextWalk){tree, element->start, element->end, flag, (element->flags & flag) != 0};
}

/* The walk's next text, NULL at its end; walk->depth: the `flag` elements holding it. */
static inline const Text *
extract_next_text(TextWalk *walk)
{
    const Tree *tree = walk->tree;
    while (++walk->at < walk->end) {
        const Event *event = &tree->events[walk->at];
        if (event->kind == TEXT) {
            return &tree->texts[event->index];
        }
        const Element *other = &tree->elements[event->index];
        if (event->kind == START && other->removed) {
            walk->at = other->end;
        } else if (other->flags & walk->flag) {
            walk->depth += event->kind == START ? 1 : -1;
        }
    }
    return NULL;
}

#define MARK_BYTE 0xEE /* U+E000..U+E002 are EE 80 80..82 in UTF-8: their last bytes */
enum { BOUNDARY_MARK = 0x80, OPEN_MARK = 0x81, CLOSE_MARK = 0x82 };
static const char BOUNDARY[] = "\xEE\x80\x80", OPEN[] = "\xEE\x80\x81", CLOSE[] = "\xEE\x80\x82";

/* Walk `root` into events, leaving out the subtrees of `skipped` (n_skipped of them). */
INTERNAL int extract_flatten(Tree *tree, const xmlNode *root, const xmlNode *const *skipped, int n_skipped);
INTERNAL Py_ssize_t extract_find_marker(const char *s, Py_ssize_t from, Py_ssize_t length, unsigned char first,
                                        unsigned char last);
INTERNAL int extract_append(Buffer *buffer, const char *data, Py_ssize_t length);
INTERNAL int extract_is_space(const char *s, Py_ssize_t length);
INTERNAL int extract_is_blank(const char *s, Py_ssize_t length);
INTERNAL int extract_decode_utf8(const unsigned char *u, Py_ssize_t at, Py_ssize_t length, Py_UCS4 *code);
INTERNAL int extract_grow(void **array, int *capacity, int needed, size_t item);
INTERNAL int extract_last_inside(const Tree *tree, int index);
INTERNAL const xmlAttr *extract_attribute(const xmlNode *node, const char *name);

/* ---- Measuring (measure.c) ---- */

/* Counts of a text as content.measure_both counts it: visible characters (spaces not
 * counted, a link's opening marker -1: len - count(" ") - 2 * count(OPEN)), and those
 * inside link text (textsize.LINK_TEXT: from an opening marker to the next closing one;
 * an unclosed span counts nothing). */
typedef struct {
    long total, committed, pending;
    int inside;
} Tally;

INTERNAL void extract_tally_bytes(Tally *tally, const char *s, Py_ssize_t bytes);
INTERNAL void extract_measure_both(const Tree *tree, int index, long *prose, long *everything);
INTERNAL long extract_measure(const Tree *tree, int index, int prose);
INTERNAL long extract_text_chars(const Tree *tree, int index);
INTERNAL long extract_link_chars(const Tree *tree, int index);
INTERNAL long extract_loose_chars(const Tree *tree, int index);

/* ---- The passes (prune.c, descent.c, blocks.c) ---- */

INTERNAL int extract_prune(Tree *tree);
INTERNAL int extract_named_boilerplate(const xmlNode *node, Buffer *key);
/* The tree's elements with a class, by the hash of their tag and class (container.c):
 * built when first asked, for boilerplate.repeated_in. */
typedef struct {
    uint64_t hash;
    int index;
} ClassEntry;
typedef struct {
    ClassEntry *entries;
    int n, built;
} ClassIndex;
INTERNAL int extract_container_verdict(const Tree *tree, int index, Buffer *key, ClassIndex *classes);
INTERNAL void extract_free_class_index(ClassIndex *classes);
INTERNAL int extract_same_tag(const xmlNode *a, const xmlNode *b);
INTERNAL int extract_class_value(const xmlNode *node, Buffer *value);
#define EXTRACT_HASH_START 0xcbf29ce484222325ULL /* FNV-1a's offset basis */
INTERNAL uint64_t extract_hash_bytes(uint64_t hash, const char *data, size_t length);
INTERNAL uint64_t extract_hash_tagged(const xmlNode *node, const char *data, size_t length);
INTERNAL int extract_append_value(Buffer *buffer, const xmlAttr *attribute);
/* A thread's replies (threads.c). */
INTERNAL int extract_mark_thread_replies(const Tree *tree, char *reply);
INTERNAL PyObject *extract_configure_threads(PyObject *module, PyObject *function);
INTERNAL int extract_reads_as_section(const Tree *tree, int index);
/* Verdicts of names.attributes_say_boilerplate. */
enum { NOT_BOILERPLATE, BY_ROLE, BY_NAME, MAIN_BY_ROLE, BY_COMPOUND, BY_LINK_NAME };
enum { HEADER_ONLY = 8 }; /* names.HEADER_ONLY: a flag on BY_NAME and BY_COMPOUND */
INTERNAL void extract_forget_verdicts(void);
INTERNAL int extract_main_container(Tree *tree, int prose, long total, int *behind, int *n_behind);
INTERNAL PyObject *extract_blocks(const Tree *tree, const int *kept, int n_kept, int links_are_content);

/* ---- Boilerplate by its attributes: names.attributes_say_boilerplate (names.c) ---- */

/* What a word of a class or id says (names._says, word by word). */
enum {
    CLASS_WORD = 1 << 0,   /* in names._CLASS_WORDS */
    ID_WORD = 1 << 1,      /* in names._ID_WORDS */
    CONTENT_WORD = 1 << 2, /* in names._CONTENT_WORDS */
    FRAME_PART = 1 << 3,   /* starts or ends with one of names._FRAME_PARTS */
    ID_PART = 1 << 4,      /* ... of names._ID_PARTS */
    CONTENT_PART = 1 << 5, /* ... of names._CONTENT_PARTS */
    LINK_BOX_WORD = 1 << 6, /* in names._LINK_BOX_WORDS */
    OTHER_SIGNAL = 1 << 7,  /* a class word or a frame's part, not of names._LINK_BOX_WORDS */
    HEADER_PART = 1 << 8,   /* starts or ends with one of names._HEADER_PARTS */
    NOT_HEADER = 1 << 9,    /* a class word or a frame's part without one */
};
enum { N_PART_KINDS = 3 };

/* names.RULES, their str as UTF-8 bytes (names_rules.c, configure_names()). */
typedef struct {
    PyObject *roles;               /* tuple: names._BOILERPLATE_ROLES */
    PyObject *styles;              /* tuple of (property, value), lower-cased: names._HIDDEN_STYLES */
    PyObject *words;               /* dict: a word of the vocabularies -> its bits */
    PyObject *parts[N_PART_KINDS]; /* tuples: the frame's, the id's, the content's */
    PyObject *header_parts;        /* tuple: names._HEADER_PARTS */
} NameRules;

INTERNAL extern NameRules extract_name_rules;
INTERNAL int extract_attribute_verdict(const char *key, Py_ssize_t length);
INTERNAL PyObject *extract_attribute_verdict_of_pairs(PyObject *module, PyObject *pairs);
INTERNAL PyObject *extract_configure_names(PyObject *module, PyObject *args);

/* ---- The page's heading (heading.c) and lists judged whole (entries.c) ---- */

/* heading.links_home_around: a link around element `index` or inside it goes to the site's home;
 * -1 with an exception. */
INTERNAL int extract_links_home_around(const Tree *tree, int index);
/* descent.first_heading_path: mark the elements that hold the first <h1>; -1 with an exception. */
INTERNAL int extract_mark_first_heading(Tree *tree);

INTERNAL int extract_page_heading(const Tree *tree, PyObject *parts);
INTERNAL int extract_lost_by_name(const Tree *tree, int heading);
INTERNAL int extract_is_kept(const Tree *tree, int index, const int *kept, int n_kept);
INTERNAL void extract_mark_list_entries(Tree *tree, const int *kept, int n_kept);
INTERNAL void extract_unlink_contents(Tree *tree);

/* ---- Digests of other documents (digest.c) ---- */

typedef struct {
    long min_entries;          /* digests.MIN_ENTRIES */
    double cover;              /* digests.COVER */
    double max_chars_per_link; /* digests.MAX_CHARS_PER_LINK */
} DigestRules;

INTERNAL extern DigestRules extract_digest_rules;
#define MAX_DIGESTS 64 /* a page with more runs the Python code */

/* A link into an anchor of another document (links.c). */
typedef struct {
    const xmlNode *node;
    const char *target; /* the path it points into, not NUL-terminated */
    Py_ssize_t length;
    uint64_t hash; /* of the target */
    int order;     /* document order */
} Anchored;

INTERNAL int extract_is_element(const xmlNode *node, char name);
INTERNAL int extract_is_named(const xmlNode *node, const char *name);
INTERNAL const xmlNode *extract_next_in(const xmlNode *node, const xmlNode *top);
INTERNAL const char *extract_href_of(const xmlNode *link, int *unsupported);
INTERNAL int extract_other_document(const char *href, const char *own, const char **target, Py_ssize_t *length);
INTERNAL int extract_compare_bytes(const char *a, Py_ssize_t a_length, const char *b, Py_ssize_t b_length);
INTERNAL int extract_same_target(const Anchored *a, const Anchored *b);
INTERNAL int extract_anchored_links(const xmlNode *root, const char *own, Anchored **links);
INTERNAL int extract_find_digests(const xmlNode *root, const char *own, const xmlNode **parts);

/* ---- The page's <title> and <body> (title.c) ---- */

INTERNAL const xmlNode *extract_body_of(const xmlNode *root);
INTERNAL PyObject *extract_page_title(const xmlNode *root);

/* ---- Normalised blocks (collapse.c) ---- */

INTERNAL PyObject *extract_collapse_blocks(PyObject *module, PyObject *args);
INTERNAL PyObject *extract_collapse_chars(int kind, const void *data, Py_ssize_t n, Py_UCS4 boundary,
                                          int need_letter);
INTERNAL PyObject *extract_fold_blocks(PyObject *module, PyObject *args);
INTERNAL PyObject *extract_configure_folding(PyObject *module, PyObject *classify);
INTERNAL PyObject *extract_block_keys(PyObject *module, PyObject *args);

#endif

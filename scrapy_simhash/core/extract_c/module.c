/* The module: configure() takes the rules from Python, main_blocks() runs them;
 * page_title() reads the page's <title> for it.
 *
 * lxml's _Element is {PyObject_HEAD; _Document _doc; xmlNode *_c_node; ...}, public C
 * API since lxml 2 (lxml/includes/etreepublic.pxd); the node layout is libxml2's
 * public one, from the headers lxml ships.
 */
#include "extract.h"
#include <libxml/xmlversion.h>

#ifndef SIMHASH_BUILT_LXML
#define SIMHASH_BUILT_LXML "unknown" /* built without setup.py: never run (content.py) */
#endif

typedef struct {
    PyObject_HEAD void *document;
    xmlNode *c_node;
} LxmlElement;

Rules extract_rules;
PyObject *extract_unsupported;
static PyTypeObject *element_type; /* lxml.etree._Element */

/* The node of the lxml element `root`, or NULL with an exception. */
static const xmlNode *
element_node(PyObject *root)
{
    if (!PyObject_TypeCheck(root, element_type)) {
        PyErr_Format(PyExc_TypeError, "root must be an lxml element, not %.100s", Py_TYPE(root)->tp_name);
        return NULL;
    }
    const xmlNode *node = ((LxmlElement *)root)->c_node;
    if (node == NULL || node->type != XML_ELEMENT_NODE) {
        PyErr_SetString(extract_unsupported, "not an element node");
        return NULL;
    }
    return node;
}

/* text.page_title(root), read from libxml2's nodes (title.c). */
static PyObject *
page_title(PyObject *module, PyObject *root)
{
    (void)module;
    const xmlNode *node = element_node(root);
    return node ? extract_page_title(node) : NULL;
}

/* The kept elements, in order (the page's heading, if the descent lost it; those left
 * behind; the container), into `kept`: their count, or -1 with an exception. */
static int
kept_elements(Tree *tree, PyObject *parts, int *kept, int *links_are_content)
{
    int heading = extract_page_heading(tree, parts);
    int lost = heading >= 0 ? extract_lost_by_name(tree, heading) : 0;
    if (heading < -1 || lost < 0 || extract_mark_first_heading(tree) < 0 || extract_prune(tree) < 0) {
        return -1;
    }
    extract_unlink_contents(tree);
    long prose, everything;
    extract_measure_both(tree, 0, &prose, &everything);
    /* A table of contents is all links: then the links are the content. */
    *links_are_content = (double)prose < extract_rules.prose_share * (double)everything;
    int n_kept = 0;
    int container =
        extract_main_container(tree, !*links_are_content, *links_are_content ? everything : prose, kept + 1, &n_kept);
    if (container < 0) {
        return -1;
    }
    kept[++n_kept] = container; /* (kept[0] is the heading's place) */
    if (lost && !extract_is_kept(tree, heading, kept + 1, n_kept)) {
        kept[0] = heading;
        return n_kept + 1;
    }
    memmove(kept, kept + 1, sizeof(int) * (size_t)n_kept);
    return n_kept;
}

static PyObject *
extract(Tree *tree, PyObject *parts, int *kept)
{
    int links_are_content;
    int n_kept = kept_elements(tree, parts, kept, &links_are_content);
    if (n_kept < 0) {
        return NULL;
    }
    if (!links_are_content) {
        extract_mark_list_entries(tree, kept, n_kept);
    }
    return extract_blocks(tree, kept, n_kept, links_are_content);
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
main_blocks(PyObject *module, PyObject *args)
{
    PyObject *root, *parts = NULL;
    const char *own = NULL;
    if (!PyArg_ParseTuple(args, "O|zO!:main_blocks", &root, &own, &PyTuple_Type, &parts)) {
        return NULL;
    }
    for (Py_ssize_t i = 0; parts != NULL && i < PyTuple_GET_SIZE(parts); i++) {
        if (!PyBytes_Check(PyTuple_GET_ITEM(parts, i))) {
            PyErr_SetString(PyExc_TypeError, "the title's parts must be bytes");
            return NULL;
        }
    }
    if (extract_rules.tags == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    const xmlNode *node = element_node(root);
    if (node == NULL) {
        return NULL;
    }
    const xmlNode *digests[MAX_DIGESTS];
    int n_digests = extract_find_digests(node, own, digests);
    if (n_digests < 0) {
        return NULL;
    }
    const xmlNode *body = extract_body_of(node);
    Tree own_tree = {0}, *tree = kept_tree_in_use ? &own_tree : &kept_tree;
    kept_tree_in_use = 1;
    tree->n_events = tree->n_elements = tree->n_texts = 0;
    PyObject *blocks = NULL;
    int *kept = NULL;
    if (extract_flatten(tree, body, digests, n_digests) == 0) {
        kept = PyMem_Malloc(sizeof(int) * ((size_t)tree->n_elements + 2)); /* (+ the heading, the container) */
        blocks = kept ? extract(tree, parts, kept) : PyErr_NoMemory();
    }
    PyMem_Free(kept);
    release(tree);
    return blocks;
}

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *tags, *verdict, *credit, *brackets, *starts, *folds;
    double shares[13];
    Py_ssize_t counts[6];
    Py_ssize_t max_stamp_line, max_credit_line;
    if (!PyArg_ParseTuple(args, "O!O(OUO!Unn)(ddddddddddddd)(nnnnnn):configure", &PyDict_Type, &tags, &verdict,
                          &credit, &brackets, &PyTuple_Type, &starts, &folds, &max_stamp_line, &max_credit_line,
                          &shares[0], &shares[1], &shares[2], &shares[3], &shares[4], &shares[5], &shares[6],
                          &shares[7], &shares[8], &shares[9], &shares[10], &shares[11], &shares[12], &counts[0],
                          &counts[1], &counts[2], &counts[3], &counts[4], &counts[5])) {
        return NULL;
    }
    if (!PyCallable_Check(verdict) || !PyCallable_Check(credit)) {
        PyErr_SetString(PyExc_TypeError, "verdict and credit must be callables");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(starts); i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(starts, i)) || !PyUnicode_GET_LENGTH(PyTuple_GET_ITEM(starts, i))) {
            PyErr_SetString(PyExc_TypeError, "the credit lines' starts must be non-empty str");
            return NULL;
        }
    }
    Py_INCREF(tags), Py_INCREF(verdict), Py_INCREF(credit), Py_INCREF(brackets), Py_INCREF(starts);
    Py_INCREF(folds);
    Py_XSETREF(extract_rules.credit_brackets, brackets);
    Py_XSETREF(extract_rules.credit_starts, starts);
    Py_XSETREF(extract_rules.case_folds, folds);
    Py_XSETREF(extract_rules.tags, tags);
    Py_XSETREF(extract_rules.verdict, verdict);
    Py_XSETREF(extract_rules.credit, credit);
    extract_rules.max_stamp_line = max_stamp_line, extract_rules.max_credit_line = max_credit_line;
    extract_forget_verdicts(); /* they came from another verdict */
    extract_rules.descend_share = shares[0], extract_rules.fair_share = shares[1],
    extract_rules.winner_share = shares[2];
    extract_rules.winner_margin = shares[3], extract_rules.link_density = shares[4],
    extract_rules.prose_share = shares[5];
    extract_rules.pruned_share = shares[6], extract_rules.link_share = shares[7];
    extract_rules.winner_lead = shares[8], extract_rules.min_text_share = shares[9];
    extract_rules.heading_alone = shares[10], extract_rules.min_numbered_share = shares[11];
    extract_rules.contestants = counts[0], extract_rules.sized_at_once = counts[1];
    extract_rules.min_section_prose = counts[2], extract_rules.min_entries = counts[3];
    extract_rules.min_card_share = shares[12], extract_rules.min_card_texts = counts[4];
    extract_rules.own_text_beside = counts[5];
    Py_RETURN_NONE;
}

static PyObject *
configure_digests(PyObject *module, PyObject *args)
{
    DigestRules rules;
    if (!PyArg_ParseTuple(args, "ldd:configure_digests", &rules.min_entries, &rules.cover, &rules.max_chars_per_link)) {
        return NULL;
    }
    if (rules.min_entries < 1 || !(rules.cover > 0.0 && rules.cover <= 1.0)) {
        PyErr_SetString(PyExc_ValueError, "min_entries must be positive and cover in (0, 1]");
        return NULL;
    }
    extract_digest_rules = rules;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"main_blocks", main_blocks, METH_VARARGS,
     "main_blocks(root, own=None, parts=()): content.extract_main_blocks(root, url) without modifying the tree; "
     "own is digests.page_document(url), parts the title's (heading.title_parts, UTF-8)."},
    {"page_title", page_title, METH_O, "page_title(root): text.page_title(root), read from libxml2's nodes."},
    {"configure_digests", configure_digests, METH_VARARGS,
     "configure_digests(min_entries, cover, max_chars_per_link): the constants of digests.py."},
    {"collapse_blocks", extract_collapse_blocks, METH_VARARGS,
     "collapse_blocks(joined, boundary, need_letter): text.normalize_blocks after its NFKC and case-folding."},
    {"fold_blocks", extract_fold_blocks, METH_VARARGS,
     "fold_blocks(blocks, boundary, need_letter): text.normalize_blocks a character at a time (fold.c), or None."},
    {"configure_folding", extract_configure_folding, METH_O,
     "configure_folding(classify): text.fold_class, which says how fold_blocks folds a character past ASCII."},
    {"block_keys", extract_block_keys, METH_VARARGS,
     "block_keys(blocks, short_block): templates.block_key of each block."},
    {"configure_threads", extract_configure_threads, METH_O,
     "configure_threads(has_stamp): threads.has_stamp, asked of the candidate posts' text."},
    {"configure_names", extract_configure_names, METH_VARARGS,
     "configure_names(roles, hidden_styles, (class words, frame parts), (id words, id parts), (content words, "
     "content parts), link box words, header parts): names.RULES, which attribute_verdict reads."},
    {"attribute_verdict", extract_attribute_verdict_of_pairs, METH_O,
     "attribute_verdict(pairs): names.attributes_say_boilerplate(pairs), in C (names.c)."},
    {"configure", configure, METH_VARARGS,
     "configure(tags, verdict, (credit, its brackets, its starts, the letters folded to ASCII ones, the longest"
     " stamp line, the longest credit line), (descend, fair, "
     "winner, margin, link "
     "density, prose, pruned, pruned link shares, winner's lead,"
     " text entries' share of a list, the heading alone, numbered links' share of a table of contents),"
     " (contestants, sized at once, least prose of a section, entries of a list))"},
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
    extract_unsupported = PyErr_NewException("scrapy_simhash.core._extract.Unsupported", PyExc_ValueError, NULL);
    static const struct {
        const char *name;
        long value;
    } constants[] = {
        {"BLOCK", BLOCK},           {"BOILERPLATE", BOILERPLATE},
        {"CONTAINER", CONTAINER},   {"LINK", LINK},
        {"HEADING", HEADING},       {"MAIN", MAIN},
        {"ARTICLE", ARTICLE},       {"KEPT", KEPT},
        {"TEXT_BLOCK", TEXT_BLOCK}, {"LISTING", LISTING},
        {"INVISIBLE", INVISIBLE},   {"NEVER_LINK_LIST", NEVER_LINK_LIST},
        {"SECTION_HEADING", SECTION_HEADING}, {"PARAGRAPH", PARAGRAPH},
        {"ENTRY_PART", ENTRY_PART}, {"CELL", CELL}, {"LANDMARK", LANDMARK}, {"LIST", LIST}, {"CODE", CODE},
        {"BREAK", BREAK},
    };
    if (extract_unsupported == NULL || PyModule_AddObjectRef(module, "Unsupported", extract_unsupported) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    for (size_t i = 0; i < sizeof(constants) / sizeof(constants[0]); i++) {
        if (PyModule_AddIntConstant(module, constants[i].name, constants[i].value) < 0) {
            Py_DECREF(module);
            return NULL;
        }
    }
    /* What it was built against: it reads lxml's _Element and libxml2's nodes as these
     * headers lay them out, so content.py runs it only where they are the ones that run. */
    if (PyModule_AddStringConstant(module, "BUILT_LXML_VERSION", SIMHASH_BUILT_LXML) < 0
        || PyModule_AddIntConstant(module, "BUILT_LIBXML_VERSION", LIBXML_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}

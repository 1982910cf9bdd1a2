/* The page's <title> and <body> on libxml2's nodes (text.page_title, text.body_of): no
 * lxml proxy made for <head>, <title> or <body>, which cost more than the reading.
 */
#include "extract.h"

/* The first child of `parent` after `after` (NULL: from the first) that is the HTML
 * element `name`, or NULL: lxml's iterchildren(name). */
static const xmlNode *
next_child_named(const xmlNode *parent, const xmlNode *after, const char *name)
{
    for (const xmlNode *child = after ? after->next : parent->children; child != NULL; child = child->next) {
        if (extract_is_named(child, name)) {
            return child;
        }
    }
    return NULL;
}

/* text.body_of(root): its first <body> child, or the root. */
const xmlNode *
extract_body_of(const xmlNode *root)
{
    const xmlNode *body = next_child_named(root, NULL, "body");
    return body ? body : root;
}

/* `node` if it is text (or CDATA), else the next node after XInclude marks, or NULL: lxml's
 * _textNodeOrSkip. */
static const xmlNode *
text_or_skip(const xmlNode *node)
{
    for (; node != NULL; node = node->next) {
        if (node->type == XML_TEXT_NODE || node->type == XML_CDATA_SECTION_NODE) {
            return node;
        }
        if (node->type != XML_XINCLUDE_START && node->type != XML_XINCLUDE_END) {
            return NULL;
        }
    }
    return NULL;
}

/* lxml's .text of `element`: its text children up to its first other child, joined; "" for none. */
static PyObject *
text_of(const xmlNode *element)
{
    Buffer joined = {0};
    for (const xmlNode *node = text_or_skip(element->children); node; node = text_or_skip(node->next)) {
        const char *content = (const char *)node->content;
        if (content != NULL && extract_append(&joined, content, (Py_ssize_t)strlen(content)) < 0) {
            PyMem_Free(joined.data);
            return NULL;
        }
    }
    PyObject *text = PyUnicode_DecodeUTF8(joined.data ? joined.data : "", joined.length, NULL);
    PyMem_Free(joined.data);
    return text;
}

/* text.page_title(root): the first <title> of the first <head> child that has one. */
PyObject *
extract_page_title(const xmlNode *root)
{
    for (const xmlNode *head = next_child_named(root, NULL, "head"); head; head = next_child_named(root, head, "head")) {
        const xmlNode *title = next_child_named(head, NULL, "title");
        if (title != NULL) {
            return text_of(title);
        }
    }
    return PyUnicode_FromStringAndSize("", 0);
}

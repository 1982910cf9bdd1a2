/* The main content as text blocks (text.split_blocks and content.extract_main_blocks).
 *
 * The kept elements are serialised with block boundaries and link markers, as the Python
 * code writes them into the tree (less the markers textsize.unmark_links takes off), cut
 * at the boundaries, and the blocks kept unless they are link lists (content.
 * _without_link_lists) or credit lines, without their markers.
 */
#include "extract.h"

/* Which link markers the serialisation writes: those of mark_links, less the ones that
 * unmark_links takes off the links inside NEVER_LINK_LIST elements, and those that
 * entries.unmark_entries takes off the links in the entries of lists of text (when links
 * are not the content).
 * unmark_links runs once per such element around a link, unmark_entries once if any
 * entry is: each run takes one marker off the front of the link's text (its tail),
 * mark_links' own first, then the page's literal U+E001 (U+E002) if the text starts with one. */
typedef struct {
    int unmark;             /* links are not the content: unmark_links runs */
    int within;             /* NEVER_LINK_LIST elements open around this point of the walk */
    int entries;            /* list entries open around it (entries.text_list_entries) */
    int strip;              /* literal markers still to take off the front of the text ahead */
    unsigned char stripped; /* which: OPEN_MARK or CLOSE_MARK */
} Marking;

/* A link's marker (U+E000 + `mark`) at its start or end: written, or taken off with
 * literal ones after it when the link is inside NEVER_LINK_LIST elements or entries. */
static int
write_link_marker(Marking *marking, unsigned char mark, Buffer *out)
{
    int runs = marking->within + (marking->entries > 0);
    if (!marking->unmark || runs == 0) {
        return extract_append(out, mark == OPEN_MARK ? OPEN : CLOSE, 3);
    }
    marking->strip = runs - 1; /* the first run took mark_links' marker */
    marking->stripped = mark;
    return 0;
}

/* An element's start or end: a block boundary (split_blocks writes one at the front of
 * its text and of its tail), a link marker. Either ends the text a link's markers are
 * taken off: lxml's .text and .tail stop at the next element. */
static int
write_element_event(const Element *element, int kind, Marking *marking, Buffer *out)
{
    marking->strip = 0;
    if (element->flags & NEVER_LINK_LIST) {
        marking->within += kind == START ? 1 : -1;
    }
    if (element->list_entry && kind == START) {
        marking->entries++;
    }
    if ((element->flags & BLOCK) && extract_append(out, BOUNDARY, 3) < 0) {
        return -1;
    }
    if ((element->flags & CELL) && kind == START && extract_append(out, " ", 1) < 0) {
        return -1; /* split_blocks puts a space before a cell's text */
    }
    int status = 0;
    if (element->flags & LINK) { /* (an entry that is a link: its tail's marker goes too) */
        status = write_link_marker(marking, kind == START ? OPEN_MARK : CLOSE_MARK, out);
    }
    if (element->list_entry && kind == END) {
        marking->entries--;
    }
    return status;
}

/* A text, less the literal markers unmark_links would take off its front. */
static int
write_text(const Text *text, Marking *marking, Buffer *out)
{
    const unsigned char *s = (const unsigned char *)text->content;
    Py_ssize_t bytes = text->bytes;
    if (marking->strip > 0 && text->markers) {
        while (marking->strip > 0 && bytes >= 3 && s[0] == MARK_BYTE && s[1] == 0x80 && s[2] == marking->stripped) {
            s += 3, bytes -= 3, marking->strip--;
        }
    }
    if (bytes > 0) {
        marking->strip = 0; /* the text does not start with one more */
    }
    return extract_append(out, (const char *)s, bytes);
}

/* The text of element `index` as split_blocks serialises it, link markers and block
 * boundaries in place. A removed element is skipped with its tail kept: the Python code
 * appends that tail to the text before it, so the texts around it are one. */
static int
serialise(const Tree *tree, int index, int links_are_content, Buffer *out)
{
    const Element *element = &tree->elements[index];
    Marking marking = {!links_are_content, 0, 0, 0, 0};
    if (write_element_event(element, START, &marking, out) < 0) {
        return -1;
    }
    for (int at = element->start + 1; at < element->end; at++) {
        const Event *event = &tree->events[at];
        if (event->kind == TEXT) {
            if (write_text(&tree->texts[event->index], &marking, out) < 0) {
                return -1;
            }
            continue;
        }
        const Element *other = &tree->elements[event->index];
        if (event->kind == START && other->removed) {
            at = other->end;
        } else if (write_element_event(other, event->kind, &marking, out) < 0) {
            return -1;
        }
    }
    return 0;
}

/* Whether UTF-8 text is all spaces (str.isspace(), true when empty), and with
 * `markers`, link markers (U+E001, U+E002) too: decided at its first other character. */
static int
only_spaces(const char *s, Py_ssize_t length, int markers)
{
    const unsigned char *u = (const unsigned char *)s;
    for (Py_ssize_t at = 0; at < length;) {
        Py_UCS4 code;
        int size = extract_decode_utf8(u, at, length, &code);
        if (size == 0 || !(Py_UNICODE_ISSPACE(code) || (markers && (code == 0xE001 || code == 0xE002)))) {
            return 0;
        }
        at += size;
    }
    return 1;
}

int
extract_is_space(const char *s, Py_ssize_t length)
{
    return only_spaces(s, length, 0);
}

/* descent._blank: spaces and link markers only. */
int
extract_is_blank(const char *s, Py_ssize_t length)
{
    return only_spaces(s, length, 1);
}

/* content._is_link_list: most of the block's visible text is link text. */
static int
is_link_list(const char *s, Py_ssize_t length)
{
    Tally tally = {0, 0, 0, 0};
    extract_tally_bytes(&tally, s, length);
    return (double)tally.committed > extract_rules.link_density * (double)tally.total;
}

/* Whether s[at:n] holds a ':' then a digit (\d), as a time of day does ("12:20"). */
static int
may_hold_time(int kind, const void *data, Py_ssize_t at, Py_ssize_t n)
{
    for (Py_ssize_t i = at; i + 1 < n; i++) {
        if (PyUnicode_READ(kind, data, i) == ':' && Py_UNICODE_ISDECIMAL(PyUnicode_READ(kind, data, i + 1))) {
            return 1;
        }
    }
    return 0;
}

/* Whether `got` matches the ASCII letter `want` as re's IGNORECASE does: either case, or
 * one of the letters past ASCII it folds (boilerplate.CASE_FOLDS_TO_ASCII: 'ı' for 'i'). */
static int
matches_letter(Py_UCS4 got, Py_UCS4 want)
{
    if (got < 128) {
        return Py_TOLOWER(got) == want;
    }
    PyObject *folds = extract_rules.case_folds;
    for (Py_ssize_t i = 0; i + 1 < PyUnicode_GET_LENGTH(folds); i += 2) {
        if (PyUnicode_READ_CHAR(folds, i) == got && PyUnicode_READ_CHAR(folds, i + 1) == want) {
            return 1;
        }
    }
    return 0;
}

/* Whether the text at `at` starts as one of boilerplate.CREDIT_STARTS (lower case; '#' a
 * digit, as the patterns' \d). */
static int
may_start_credit_line(int kind, const void *data, Py_ssize_t at, Py_ssize_t n)
{
    PyObject *starts = extract_rules.credit_starts;
    for (Py_ssize_t s = 0; s < PyTuple_GET_SIZE(starts); s++) {
        PyObject *start = PyTuple_GET_ITEM(starts, s);
        Py_ssize_t length = PyUnicode_GET_LENGTH(start), i = 0;
        int start_kind = PyUnicode_KIND(start);
        const void *start_data = PyUnicode_DATA(start);
        for (; i < length && at + i < n; i++) {
            Py_UCS4 want = PyUnicode_READ(start_kind, start_data, i), got = PyUnicode_READ(kind, data, at + i);
            int matched = got == want || (want == '#' ? Py_UNICODE_ISDECIMAL(got)
                                                      : want < 128 && Py_ISALPHA(want) && matches_letter(got, want));
            if (!matched) {
                break;
            }
        }
        if (i == length) {
            return 1;
        }
    }
    return 0;
}

/* boilerplate.is_credit_line, asked only of blocks that may start like one (as it
 * checks first itself): no longer than its longest credit line and, after spaces, an
 * opening bracket and spaces, one of its starts; or of short blocks that may say when
 * they were posted (a time of day, "12:20"). */
static int
is_credit_line(PyObject *block)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(block), at = 0;
    int kind = PyUnicode_KIND(block);
    const void *data = PyUnicode_DATA(block);
    while (at < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, at))) {
        at++;
    }
    int may_be_stamp = n - at <= extract_rules.max_stamp_line && may_hold_time(kind, data, at, n);
    if (!may_be_stamp) {
        if (n - at > extract_rules.max_credit_line) {
            return 0; /* (most paragraphs: a call into Python each, ~24 a page, saved) */
        }
        if (at < n
            && PyUnicode_FindChar(extract_rules.credit_brackets, PyUnicode_READ(kind, data, at), 0, PY_SSIZE_T_MAX, 1)
                   >= 0) {
            at++;
            while (at < n && Py_UNICODE_ISSPACE(PyUnicode_READ(kind, data, at))) {
                at++;
            }
        }
        if (!may_start_credit_line(kind, data, at, n)) {
            return 0;
        }
    }
    PyObject *answer = PyObject_CallOneArg(extract_rules.credit, block);
    int credit = answer ? PyObject_IsTrue(answer) : -1;
    Py_XDECREF(answer);
    return credit;
}

/* Append `block` (the UTF-8 of `s`) to `blocks` without its link markers; -1 with an
 * exception. */
static int
append_unmarked(PyObject *block, const char *s, Py_ssize_t length, PyObject *blocks, Buffer *scratch)
{
    if (extract_find_marker(s, 0, length, OPEN_MARK, CLOSE_MARK) < 0) {
        return PyList_Append(blocks, block);
    }
    scratch->length = 0;
    Py_ssize_t from = 0;
    for (;;) {
        Py_ssize_t next = extract_find_marker(s, from, length, OPEN_MARK, CLOSE_MARK);
        if (extract_append(scratch, s + from, (next < 0 ? length : next) - from) < 0) {
            return -1;
        }
        if (next < 0) {
            break;
        }
        from = next + 3;
    }
    PyObject *unmarked = PyUnicode_DecodeUTF8(scratch->data ? scratch->data : "", scratch->length, "strict");
    if (unmarked == NULL) {
        return -1;
    }
    int status = PyList_Append(blocks, unmarked);
    Py_DECREF(unmarked);
    return status;
}

/* The words of a block, its markers out: content._words. */
static PyObject *
plain_words(PyObject *block)
{
    PyObject *open = PyUnicode_FromString(OPEN), *close = PyUnicode_FromString(CLOSE), *empty = PyUnicode_New(0, 0);
    PyObject *words = NULL;
    if (open != NULL && close != NULL && empty != NULL) {
        PyObject *half = PyUnicode_Replace(block, open, empty, -1);
        PyObject *plain = half ? PyUnicode_Replace(half, close, empty, -1) : NULL;
        words = plain ? PyUnicode_Split(plain, NULL, -1) : NULL;
        Py_XDECREF(half);
        Py_XDECREF(plain);
    }
    Py_XDECREF(open);
    Py_XDECREF(close);
    Py_XDECREF(empty);
    return words;
}

/* A block of the serialised text: where it is, whether it is a link list. */
typedef struct {
    Py_ssize_t start, end;
    int link_list, credit; /* (credit: a credit line, content.is_credit_line, asked with its markers) */
} Span;

/* The blocks of split_blocks (not blank) in `s`, cut at its boundaries, into `spans`;
 * -1 with an exception. Link lists are looked for unless links are the content, and
 * only in blocks holding a link's opening marker, as content._without_link_lists does. */
static int
split(const char *s, Py_ssize_t length, int links_are_content, Buffer *spans)
{
    for (Py_ssize_t start = 0; start <= length;) {
        Py_ssize_t end = extract_find_marker(s, start, length, BOUNDARY_MARK, BOUNDARY_MARK);
        end = end < 0 ? length : end;
        if (end > start && !extract_is_space(s + start, end - start)) {
            Span span = {start, end, 0, 0};
            span.link_list = !links_are_content && extract_find_marker(s, start, end, OPEN_MARK, OPEN_MARK) >= 0
                             && is_link_list(s + start, end - start);
            if (extract_append(spans, (const char *)&span, sizeof(span)) < 0) {
                return -1;
            }
        }
        start = end + 3;
    }
    return 0;
}

/* textsize.visible_chars of a block, markers in. */
static long
visible_chars(const char *s, Py_ssize_t length)
{
    Tally tally = {0, 0, 0, 0};
    extract_tally_bytes(&tally, s, length);
    return tally.total;
}

/* content._without_link_lists: whether the link lists go. Not when they hold more than
 * half of the text: then the container is a listing (an index, a list of members),
 * whose entries are links and tell it apart from the site's other listings. Weighed
 * without what goes anyway: the credit lines (which content.extract_main_blocks takes out
 * before), and a first block that the next one with words repeats (content.without_repeats).
 * `decoded`: each span's text, markers in. -1 with an exception. */
static int
drop_link_lists(const char *s, const Span *spans, Py_ssize_t n, PyObject *decoded)
{
    int any = 0;
    for (Py_ssize_t i = 0; i < n && !any; i++) {
        any = spans[i].link_list;
    }
    if (!any) {
        return 0; /* nothing to drop: the text need not be counted */
    }
    /* The first two blocks with words (not credit lines): whether the second repeats the first. */
    Py_ssize_t first = -1;
    PyObject *title = NULL;
    int repeated = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (spans[i].credit) {
            continue;
        }
        PyObject *words = plain_words(PyList_GET_ITEM(decoded, i));
        if (words == NULL) {
            repeated = -1;
            break;
        }
        if (PyList_GET_SIZE(words) == 0) {
            Py_DECREF(words);
            continue;
        }
        if (title == NULL) {
            first = i, title = words;
            continue;
        }
        repeated = PyObject_RichCompareBool(title, words, Py_EQ);
        Py_DECREF(words);
        break;
    }
    Py_XDECREF(title);
    if (repeated < 0) {
        return -1;
    }
    long all = 0, kept = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (spans[i].credit || (repeated && i == first)) {
            continue;
        }
        long chars = visible_chars(s + spans[i].start, spans[i].end - spans[i].start);
        all += chars;
        kept += spans[i].link_list ? 0 : chars;
    }
    return 2 * kept >= all;
}

/* The kept elements serialised one after another, a boundary between them: the blocks
 * of each, in order, as split_blocks of each gives them. -1 with an exception. */
static int
serialise_kept(const Tree *tree, const int *kept, int n_kept, int links_are_content, Buffer *text)
{
    for (int i = 0; i < n_kept; i++) {
        if (serialise(tree, kept[i], links_are_content, text) < 0 || extract_append(text, BOUNDARY, 3) < 0) {
            return -1;
        }
    }
    return 0;
}

typedef struct {
    Buffer text, spans, scratch;
} Buffers;

/* The kept blocks appended to `blocks`; -1 with an exception. */
static int
fill_blocks(const Tree *tree, const int *kept, int n_kept, int links_are_content, PyObject *blocks, Buffers *work)
{
    if (serialise_kept(tree, kept, n_kept, links_are_content, &work->text) < 0
        || split(work->text.data, work->text.length, links_are_content, &work->spans) < 0) {
        return -1;
    }
    const char *s = work->text.data;
    Span *span = (Span *)work->spans.data;
    Py_ssize_t n = work->spans.length / (Py_ssize_t)sizeof(Span);
    PyObject *decoded = PyList_New(n); /* each block, markers in: credit lines are asked so */
    if (decoded == NULL) {
        return -1;
    }
    int status = 0;
    for (Py_ssize_t i = 0; i < n && status == 0; i++) {
        PyObject *block = PyUnicode_DecodeUTF8(s + span[i].start, span[i].end - span[i].start, "strict");
        span[i].credit = block ? is_credit_line(block) : -1;
        status = span[i].credit < 0 ? -1 : 0;
        if (block != NULL) {
            PyList_SET_ITEM(decoded, i, block);
        }
    }
    int drop = status == 0 ? drop_link_lists(s, span, n, decoded) : -1;
    for (Py_ssize_t i = 0; i < n && drop >= 0 && status == 0; i++) {
        if (span[i].credit || (drop && span[i].link_list)) {
            continue;
        }
        status = append_unmarked(PyList_GET_ITEM(decoded, i), s + span[i].start, span[i].end - span[i].start, blocks,
                                 &work->scratch);
    }
    Py_DECREF(decoded);
    return drop < 0 ? -1 : status;
}

/* The blocks of the kept elements (those left behind by the descent, then the
 * container), less the link lists and the credit lines, without their markers. */
PyObject *
extract_blocks(const Tree *tree, const int *kept, int n_kept, int links_are_content)
{
    Buffers work = {{0}, {0}, {0}};
    PyObject *blocks = PyList_New(0);
    if (blocks != NULL && fill_blocks(tree, kept, n_kept, links_are_content, blocks, &work) < 0) {
        Py_CLEAR(blocks);
    }
    PyMem_Free(work.text.data);
    PyMem_Free(work.spans.data);
    PyMem_Free(work.scratch.data);
    return blocks;
}

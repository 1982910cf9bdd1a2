/* Boilerplate by its attributes (names.attributes_say_boilerplate), in C.
 *
 * names.py stays the specification and the one home of the rules: the ARIA roles, the
 * hidden styles and the vocabularies of class and id words come from it (names.RULES,
 * given to configure_names() by content._configure_c_code; names_rules.c).
 * tests/test_names_c.py holds both to the same verdicts on every attribute set of the dev
 * corpus, on every character in names and styles, and on generated sets.
 *
 * Exact for any text. Names are cut into words at the characters sre's [^\W\d_] leaves
 * out (\w is Py_UNICODE_ISALNUM or '_', \d Py_UNICODE_ISDECIMAL), then between an ASCII
 * lower- and upper-case letter; an ASCII word is lowered here, one with a character past
 * ASCII by Python's str.lower (its full, contextual mapping: 'İ' -> 'i̇', a final sigma;
 * such names are rare, none on the dev corpus, and Unicode's casing is long to copy). A
 * style that hides nothing here but holds a character sre's IGNORECASE may match to an
 * ASCII letter ('İ', 'ı', 'ſ', the Kelvin sign) is judged by the Python function itself:
 * the only case it is asked. The verdicts are remembered by prune.c.
 */
#include "extract.h"

NameRules extract_name_rules;
#define RULES extract_name_rules
static const unsigned PART_BITS[N_PART_KINDS] = {FRAME_PART, ID_PART, CONTENT_PART};

typedef struct {
    const char *data;
    Py_ssize_t length;
} Span;

static Span
span_of(PyObject *bytes)
{
    return (Span){PyBytes_AS_STRING(bytes), PyBytes_GET_SIZE(bytes)};
}

static unsigned char
ascii_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

/* The character at s[at] and its size; a sequence cut short (never in lxml's
 * attributes, nor in Python's UTF-8) reads as one byte of U+FFFD, neither letter nor space. */
static int
next_char(const char *s, Py_ssize_t at, Py_ssize_t length, Py_UCS4 *ch)
{
    if ((unsigned char)s[at] < 0x80) {
        *ch = (unsigned char)s[at];
        return 1;
    }
    int size = extract_decode_utf8((const unsigned char *)s, at, length, ch);
    if (size == 0) {
        *ch = 0xFFFD;
        return 1;
    }
    return size;
}

/* ---- The words (names.name_words) and what they say (names._says) ---- */

/* Whether s (at least as long as `part`) starts with it; the first byte rules out most. */
static int
starts_with(const char *s, Span part)
{
    return part.length == 0 || (s[0] == part.data[0] && memcmp(s, part.data, (size_t)part.length) == 0);
}

/* A word lower-cased, as UTF-8 bytes: ASCII here, else by Python's str.lower. */
static PyObject *
lowered_word(const char *s, Py_ssize_t length, int ascii)
{
    if (ascii) {
        PyObject *word = PyBytes_FromStringAndSize(NULL, length);
        for (Py_ssize_t i = 0; word != NULL && i < length; i++) {
            PyBytes_AS_STRING(word)[i] = (char)ascii_lower((unsigned char)s[i]);
        }
        return word;
    }
    PyObject *text = PyUnicode_DecodeUTF8(s, length, "strict");
    PyObject *lower = text ? PyObject_CallMethod(text, "lower", NULL) : NULL;
    PyObject *word = lower ? PyUnicode_AsUTF8String(lower) : NULL;
    Py_XDECREF(text);
    Py_XDECREF(lower);
    return word;
}

/* word.startswith(parts) or word.endswith(parts) */
static int
has_part(Span word, PyObject *parts)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(parts); i++) {
        Span part = span_of(PyTuple_GET_ITEM(parts, i));
        if (part.length <= word.length
            && (starts_with(word.data, part) || starts_with(word.data + word.length - part.length, part))) {
            return 1;
        }
    }
    return 0;
}

/* OR what the word s[0:length] says into *bits; -1 with an exception. */
static int
add_word(const char *s, Py_ssize_t length, int ascii, unsigned *bits)
{
    PyObject *word = lowered_word(s, length, ascii);
    PyObject *known = word ? PyDict_GetItemWithError(RULES.words, word) : NULL;
    if (known == NULL && PyErr_Occurred()) {
        Py_XDECREF(word);
        return -1;
    }
    unsigned word_bits = known ? (unsigned)PyLong_AsUnsignedLong(known) : 0;
    Span lower = span_of(word);
    for (int kind = 0; kind < N_PART_KINDS; kind++) {
        word_bits |= has_part(lower, RULES.parts[kind]) ? PART_BITS[kind] : 0;
    }
    if (has_part(lower, RULES.header_parts)) {
        word_bits |= HEADER_PART;
    }
    if ((word_bits & (CLASS_WORD | FRAME_PART)) && !(word_bits & LINK_BOX_WORD)) {
        word_bits |= OTHER_SIGNAL;
    }
    if ((word_bits & (CLASS_WORD | FRAME_PART)) && !(word_bits & HEADER_PART)) {
        word_bits |= NOT_HEADER;
    }
    *bits |= word_bits;
    Py_DECREF(word);
    return 0;
}

/* [^\W\d_]: a letter, as sre tells them in a str pattern. */
static int
is_letter(Py_UCS4 ch)
{
    if (ch < 0x80) {
        return (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z';
    }
    return Py_UNICODE_ISALNUM(ch) && !Py_UNICODE_ISDECIMAL(ch);
}

/* OR what the words of class or id names say into *bits; -1 with an exception. */
static int
add_words_of(const char *names, unsigned *bits)
{
    Py_ssize_t length = (Py_ssize_t)strlen(names), start = -1;
    int ascii = 1;
    Py_UCS4 previous = 0, ch;
    for (Py_ssize_t at = 0; at < length; previous = ch) {
        int size = next_char(names, at, length, &ch);
        int letter = is_letter(ch);
        /* a word ends at a non-letter, and at a case change (names._CASE_CHANGE: ASCII only) */
        if (start >= 0 && (!letter || (previous >= 'a' && previous <= 'z' && ch >= 'A' && ch <= 'Z'))) {
            if (add_word(names + start, at - start, ascii, bits) < 0) {
                return -1;
            }
            start = -1;
        }
        if (letter && start < 0) {
            start = at, ascii = 1;
        }
        ascii = ascii && ch < 0x80;
        at += size;
    }
    return start >= 0 ? add_word(names + start, length - start, ascii, bits) : 0;
}

/* ---- Hidden by its style (names._HIDDEN_STYLE: "property\s*:\s*value", case-blind) ---- */

static Py_ssize_t
skip_spaces(const char *s, Py_ssize_t at, Py_ssize_t length)
{
    Py_UCS4 ch;
    for (int size; at < length && (size = next_char(s, at, length, &ch)) && Py_UNICODE_ISSPACE(ch);) {
        at += size;
    }
    return at;
}

/* Where `word` (lower-case ASCII) ends if s[at:] starts with it, in any case; else -1. */
static Py_ssize_t
after_word(const char *s, Py_ssize_t at, Py_ssize_t length, Span word)
{
    if (at < 0 || length - at < word.length) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < word.length; i++) {
        if (ascii_lower((unsigned char)s[at + i]) != (unsigned char)word.data[i]) {
            return -1;
        }
    }
    return at + word.length;
}

static int
declares_at(const char *s, Py_ssize_t at, Py_ssize_t length, PyObject *declaration)
{
    at = after_word(s, at, length, span_of(PyTuple_GET_ITEM(declaration, 0)));
    at = at < 0 ? -1 : skip_spaces(s, at, length);
    if (at < 0 || at == length || s[at] != ':') {
        return 0;
    }
    return after_word(s, skip_spaces(s, at + 1, length), length, span_of(PyTuple_GET_ITEM(declaration, 1))) >= 0;
}

enum { VISIBLE, HIDDEN, ASK_PYTHON };

/* HIDDEN, VISIBLE, or ASK_PYTHON when it declares nothing hidden here but holds a
 * character that sre may match to an ASCII letter: one whose Py_UNICODE_TOLOWER or
 * TOUPPER (sre's own) is ASCII. */
static int
style_hides(const char *style)
{
    Py_ssize_t length = (Py_ssize_t)strlen(style);
    int unsure = 0;
    for (Py_ssize_t at = 0; at < length;) {
        Py_UCS4 ch;
        int size = next_char(style, at, length, &ch);
        unsure = unsure
                 || (ch >= 0x80 && !Py_UNICODE_ISSPACE(ch)
                     && (Py_UNICODE_TOLOWER(ch) < 0x80 || Py_UNICODE_TOUPPER(ch) < 0x80));
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(RULES.styles); i++) {
            if (declares_at(style, at, length, PyTuple_GET_ITEM(RULES.styles, i))) {
                return HIDDEN; /* (a match here is one for the regex too) */
            }
        }
        at += size;
    }
    return unsure ? ASK_PYTHON : VISIBLE;
}

/* ---- The verdict ---- */

/* Whether `value` is one of a tuple of bytes (none holding a NUL). */
static int
is_one_of(const char *value, PyObject *strings)
{
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(strings); i++) {
        if (strcmp(PyBytes_AS_STRING(PyTuple_GET_ITEM(strings, i)), value) == 0) {
            return 1;
        }
    }
    return 0;
}

/* The Python function's verdict on the attributes of a key; -1 with an exception. */
static int
python_verdict(const char *key, Py_ssize_t length)
{
    PyObject *pairs = PyList_New(0);
    for (Py_ssize_t at = 0; pairs != NULL && at < length;) { /* as element.items() gives them */
        const char *name = key + at, *value = name + strlen(name) + 1;
        PyObject *pair = Py_BuildValue("(ss)", name, value);
        if (pair == NULL || PyList_Append(pairs, pair) < 0) {
            Py_CLEAR(pairs);
        }
        Py_XDECREF(pair);
        at = value + strlen(value) + 1 - key;
    }
    PyObject *tuple = pairs ? PyList_AsTuple(pairs) : NULL;
    PyObject *answer = tuple ? PyObject_CallOneArg(extract_rules.verdict, tuple) : NULL;
    Py_XDECREF(pairs);
    Py_XDECREF(tuple);
    long answered = answer ? PyLong_AsLong(answer) : -1;
    Py_XDECREF(answer);
    long base = answered & ~(long)HEADER_ONLY;
    if (answered < 0 || base > BY_LINK_NAME || (answered != base && base != BY_NAME && base != BY_COMPOUND)) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ValueError, "a verdict is 0 to 5, 2 or 4 with the flag 8, not %ld", answered);
        }
        return -1;
    }
    return (int)answered;
}

/* names.attributes_say_boilerplate on the attributes of `key`: "name\0value\0" each, a
 * name as lxml gives it ("{namespace}name" or "name"). -1 with an exception. */
int
extract_attribute_verdict(const char *key, Py_ssize_t length)
{
    if (RULES.words == NULL || extract_rules.verdict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() and configure_names() were not called");
        return -1;
    }
    const char *role = NULL, *aria_hidden = NULL, *style = NULL, *class_names = NULL, *id = NULL;
    int hidden = 0;
    for (Py_ssize_t at = 0; at < length;) { /* the last of each name, as dict(pairs) keeps */
        const char *name = key + at, *value = name + strlen(name) + 1;
        role = strcmp(name, "role") == 0 ? value : role;
        hidden = hidden || strcmp(name, "hidden") == 0;
        aria_hidden = strcmp(name, "aria-hidden") == 0 ? value : aria_hidden;
        style = strcmp(name, "style") == 0 ? value : style;
        class_names = strcmp(name, "class") == 0 ? value : class_names;
        id = strcmp(name, "id") == 0 ? value : id;
        at = value + strlen(value) + 1 - key;
    }
    if ((role && is_one_of(role, RULES.roles)) || hidden || (aria_hidden && strcmp(aria_hidden, "true") == 0)) {
        return BY_ROLE;
    }
    int hides = style ? style_hides(style) : VISIBLE;
    if (hides != VISIBLE) {
        return hides == HIDDEN ? BY_ROLE : python_verdict(key, length);
    }
    if (role && strcmp(role, "main") == 0) {
        return MAIN_BY_ROLE;
    }
    unsigned class_bits = 0, id_bits = 0;
    if ((class_names && add_words_of(class_names, &class_bits) < 0) || (id && add_words_of(id, &id_bits) < 0)) {
        return -1;
    }
    int class_says = (class_bits & (CLASS_WORD | FRAME_PART)) != 0, id_says = (id_bits & (ID_WORD | ID_PART)) != 0;
    if (!(class_says || id_says) || ((class_bits | id_bits) & (CONTENT_WORD | CONTENT_PART))) {
        return NOT_BOILERPLATE;
    }
    int by_class_alone = class_says && !id_says;
    if (by_class_alone && !(class_bits & OTHER_SIGNAL)) {
        return BY_LINK_NAME; /* (each class word that says it is of the link box's) */
    }
    int verdict = (class_bits & CLASS_WORD) || (id_bits & ID_WORD) ? BY_NAME : BY_COMPOUND;
    return by_class_alone && !(class_bits & NOT_HEADER) ? verdict | HEADER_ONLY : verdict;
}

/* The tokenizer: blocks of text -> tokens, each as its UTF-8 bytes and a quick hash
 * (the token table's key, table.c), or as one BMP character, looked up by code point.
 *
 * The tokens are those of segment.Tokenizer(segmenter="char").raw() on the blocks joined
 * by the block separator, read from the str's own code points (no Python object per
 * token). Tokens never cross blocks: each block's count goes to `lengths`.
 */
#include "features.h"

/* The code point at i, whatever the str's kind. */
HOT Py_UCS4
char_at(const Text *text, Py_ssize_t i)
{
    if (text->kind == PyUnicode_1BYTE_KIND) {
        return ((const Py_UCS1 *)text->data)[i];
    }
    if (text->kind == PyUnicode_2BYTE_KIND) {
        return ((const Py_UCS2 *)text->data)[i];
    }
    return ((const Py_UCS4 *)text->data)[i];
}

/* Does any block hold a character that calls for the script rules (segment._NEEDS_SCRIPT_RULES)? */
static int
needs_script_rules(const Text *texts, Py_ssize_t n_texts)
{
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        if (texts[t].kind == PyUnicode_1BYTE_KIND) {
            continue; /* Latin-1 has none */
        }
        for (Py_ssize_t i = 0; i < texts[t].length; i++) {
            Py_UCS4 ch = char_at(&texts[t], i);
            if (ch < 0x10000 && (features_bmp_classes[ch] & SCRIPT)) {
                return 1;
            }
        }
    }
    return 0;
}

/* End of the token starting at `i` (i itself: no token starts there). Plain text: runs of
 * \w. Script rules, in the order of segment._CHAR_OR_WORD's alternatives: a Han character;
 * a word (a \w character not of the other classes, then those and marks); a run of
 * hiragana; of katakana; one other ideograph or unspaced-script character. */
HOT Py_ssize_t
token_end(const Text *text, Py_ssize_t i, int script_rules)
{
    unsigned first = classes_of(char_at(text, i));
    unsigned run;
    if (!script_rules) {
        run = first & WORD;
    } else if (first & HAN) {
        return i + 1;
    } else if ((first & WORD) && !(first & NOT_WORD)) {
        run = WORD | MARK;
    } else if (first & (HIRAGANA | KATAKANA)) {
        run = first & (HIRAGANA | KATAKANA);
    } else {
        return first & ONE_CHAR ? i + 1 : i;
    }
    if (!run) {
        return i;
    }
    Py_ssize_t end = i + 1;
    while (end < text->length) {
        unsigned next = classes_of(char_at(text, end));
        int continues =
            run == (WORD | MARK) ? (next & MARK) || ((next & WORD) && !(next & NOT_WORD)) : (next & run) != 0;
        if (!continues) {
            break;
        }
        end++;
    }
    return end;
}

/* UTF-8 of code points start ... end - 1, lone surrogates as "surrogatepass" writes them. */
size_t
features_encode_utf8(const Text *text, Py_ssize_t start, Py_ssize_t end, uint8_t *out)
{
    size_t n = 0;
    for (Py_ssize_t i = start; i < end; i++) {
        Py_UCS4 ch = char_at(text, i);
        if (ch < 0x80) {
            out[n++] = (uint8_t)ch;
        } else if (ch < 0x800) {
            out[n++] = (uint8_t)(0xC0 | (ch >> 6));
            out[n++] = (uint8_t)(0x80 | (ch & 0x3F));
        } else if (ch < 0x10000) {
            out[n++] = (uint8_t)(0xE0 | (ch >> 12));
            out[n++] = (uint8_t)(0x80 | ((ch >> 6) & 0x3F));
            out[n++] = (uint8_t)(0x80 | (ch & 0x3F));
        } else {
            out[n++] = (uint8_t)(0xF0 | (ch >> 18));
            out[n++] = (uint8_t)(0x80 | ((ch >> 12) & 0x3F));
            out[n++] = (uint8_t)(0x80 | ((ch >> 6) & 0x3F));
            out[n++] = (uint8_t)(0x80 | (ch & 0x3F));
        }
    }
    return n;
}

/* The token table's key for a token's bytes: cheap, never 0 (an empty slot). */
HOT uint64_t
quick_hash(const uint8_t *data, size_t length)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ length, word;
    for (; length >= 8; data += 8, length -= 8) {
        memcpy(&word, data, 8);
        h = (h ^ word) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    word = 0;
    for (size_t i = 0; i < length; i++) { /* not memcpy: a call, for a variable length */
        word |= (uint64_t)data[i] << (8 * i);
    }
    h = (h ^ word) * 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 29;
    return h | 1;
}

/* Record the token text[start:end]: its UTF-8 is the str's own bytes when that is ASCII (the
 * blocks outlive the Found), else appended at utf8 + *used (room made by the caller). */
HOT void
found_token(uint8_t *utf8, const Text *text, Py_ssize_t start, Py_ssize_t end, Found *found, size_t *used)
{
    Py_UCS4 first = char_at(text, start);
    if (end - start == 1 && first < 0x10000) {
        *found = (Found){0, NULL, 0, first};
        return;
    }
    size_t length = (size_t)(end - start);
    const uint8_t *bytes = (const uint8_t *)text->data + start;
    if (!text->ascii) {
        bytes = utf8 + *used;
        length = features_encode_utf8(text, start, end, utf8 + *used);
        *used += length;
    }
    *found = (Found){quick_hash(bytes, length), bytes, length, first};
}

/* The blocks' tokens into `found`, their count per block into `lengths`, the UTF-8 of those
 * in blocks that are not ASCII into `utf8` (room made by the caller: page.c's reserve_tokens);
 * returns the number of tokens. */
size_t
features_find_tokens(const Text *texts, Py_ssize_t n_texts, Found *found, Py_ssize_t *lengths, uint8_t *utf8)
{
    int script_rules = needs_script_rules(texts, n_texts);
    size_t n = 0, used = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        const Text *text = &texts[t];
        size_t first = n;
        for (Py_ssize_t i = 0; i < text->length;) {
            Py_ssize_t end = token_end(text, i, script_rules); /* \x1e inside a block: no token */
            if (end == i) {
                i++;
                continue;
            }
            found_token(utf8, text, i, end, &found[n++], &used);
            i = end;
        }
        lengths[t] = (Py_ssize_t)(n - first);
    }
    return n;
}

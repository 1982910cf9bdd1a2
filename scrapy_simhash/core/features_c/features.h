/* What the files of scrapy_simhash.core._features share: the types that pass between
 * them, the prototypes of the few functions one file calls in another, and the
 * per-character helpers that must be inlined where they are used.
 *
 * The module, file by file (a page's blocks go down this list):
 *   classes.c  the \w / script class of every character (set_script_classes)
 *   tokens.c   blocks of text -> tokens (Found: UTF-8 bytes and a quick hash each)
 *   table.c    tokens -> their keyed BLAKE2b-64 hashes, remembered per crawl
 *   blake2b.c  the hash itself (RFC 7693)
 *   shingles.c token hashes -> shingle hashes, sorted and counted
 *   page.c     TokenTable.shingle_counts: the steps above for one page, scratch kept
 *   votes.c    simhash_votes: shingle hashes and weights -> fingerprint and margins;
 *              weakest_bits: margins -> the wildcard mask
 *   sketch.c   minwise_sketch: distinct shingle hashes -> the page's 32-byte sketch
 *   type.c     the TokenTable type; module.c the module
 * Every symbol shared between files is `features_`-prefixed and hidden (not exported
 * by the shared object); everything else is static to its file.
 */
#ifndef SCRAPY_SIMHASH_FEATURES_H
#define SCRAPY_SIMHASH_FEATURES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The per-character helpers are inlined by force: GCC otherwise calls them (and
 * PyUnicode_READ) once per character, ~30% of a page's time. INTERNAL symbols are hidden:
 * the shared object exports PyInit__features alone, and calls between files stay direct
 * (no PLT), as they were when the module was one file. */
#if defined(__GNUC__) || defined(__clang__)
#define HOT static inline __attribute__((always_inline))
#define INTERNAL __attribute__((visibility("hidden")))
#else
#define HOT static inline
#define INTERNAL
#endif

/* ---- blake2b.c: BLAKE2b-64, keyed ---- */

/* The hasher of one key: BLAKE2b's state once the key block is in (a keyed hash of a
 * non-empty message starts there, so the key block is mixed once per crawl, not per token). */
typedef struct {
    uint64_t start[8];
    uint64_t consumed; /* 128 when keyed, else 0 */
} Hasher;

INTERNAL void features_hasher_init(Hasher *hasher, const uint8_t *key, size_t key_length);
INTERNAL uint64_t features_hasher_digest(const Hasher *hasher, const uint8_t *data, size_t length);

/* ---- classes.c: character classes ---- */

enum {
    WORD = 1,      /* Python's \w: Py_UNICODE_ISALNUM(ch) || ch == '_' (sre's SRE_UNI_IS_WORD) */
    HAN = 2,       /* a token of its own ("char" segmenter) */
    MARK = 4,      /* may continue a word */
    HIRAGANA = 8,  /* a run of them is a token */
    KATAKANA = 16, /* likewise */
    ONE_CHAR = 32, /* other ideographs, unspaced scripts: a token each */
    SCRIPT = 64,   /* text with one of these is tokenized by the script rules */
};
#define NOT_WORD (HAN | HIRAGANA | KATAKANA | ONE_CHAR)
#define MAX_ASTRAL_RANGES 8

INTERNAL extern uint8_t features_bmp_classes[0x10000];
INTERNAL extern Py_UCS4 features_astral_ranges[MAX_ASTRAL_RANGES][2]; /* ONE_CHAR ranges past the BMP */
INTERNAL extern int features_n_astral_ranges;                         /* -1: set_script_classes not called yet */

INTERNAL PyObject *features_set_script_classes(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

static inline int
is_word(Py_UCS4 ch)
{
    return Py_UNICODE_ISALNUM(ch) || ch == '_';
}

HOT unsigned
classes_of(Py_UCS4 ch)
{
    if (ch < 0x10000) {
        return features_bmp_classes[ch];
    }
    unsigned found = is_word(ch) ? WORD : 0;
    for (int i = 0; i < features_n_astral_ranges; i++) {
        if (features_astral_ranges[i][0] <= ch && ch <= features_astral_ranges[i][1]) {
            found |= ONE_CHAR;
        }
    }
    return found;
}

/* ---- tokens.c: tokens ---- */

/* A str's code points, whatever its kind. */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
    int ascii; /* then its data is its UTF-8 */
} Text;

/* A token found, waiting for its hash: `length` bytes of UTF-8 (in the str itself when it
 * is ASCII, else in the page's UTF-8 scratch), or one BMP character (length 0), looked up
 * by code point. */
typedef struct {
    uint64_t key; /* quick_hash of its bytes */
    const uint8_t *bytes;
    size_t length;
    Py_UCS4 ch;
} Found;

INTERNAL size_t features_encode_utf8(const Text *text, Py_ssize_t start, Py_ssize_t end, uint8_t *out);
INTERNAL size_t features_find_tokens(const Text *texts, Py_ssize_t n_texts, Found *found, Py_ssize_t *lengths,
                                     uint8_t *utf8);

/* ---- table.c: the token table (token -> hash, kept per crawl) and a page's scratch ---- */

/* A remembered token: its bytes are in the slot when short (most words: one cache miss a
 * lookup, not two), else arena[offset : offset + length]. 32 bytes, two a cache line. */
#define INLINE_BYTES 12
typedef struct {
    uint64_t key;  /* quick hash of the bytes, never 0 (0: an empty slot) */
    uint64_t hash; /* its BLAKE2b-64 */
    uint32_t length;
    union {
        uint8_t bytes[INLINE_BYTES];
        uint32_t offset;
    } token;
} Slot;

/* A TokenTable object (type.c): the hasher, the table of remembered tokens, and the
 * scratch of one page (page.c). */
typedef struct {
    PyObject_HEAD Hasher hasher;
    Py_ssize_t capacity; /* tokens remembered before the table starts again */
    Slot *slots;
    size_t n_slots, size;
    uint8_t *arena;
    size_t arena_used, arena_size;
    uint64_t *bmp_hashes; /* one-character BMP tokens (all of Chinese text): by code point */
    uint8_t *bmp_known;
    /* Scratch kept between pages: token hashes, block lengths, shingles, UTF-8 bytes. */
    Found *found;
    uint64_t *tokens, *shingles, *sorted;
    Py_ssize_t *lengths;
    size_t found_size, tokens_size, shingles_size, sorted_size, lengths_size;
    uint8_t *utf8;
    size_t utf8_size;
} TokenTable;

INTERNAL void features_hash_found(TokenTable *self, const Found *found, size_t n, uint64_t *hashes);

/* ---- shingles.c ---- */

INTERNAL size_t features_chain_shingles(const uint64_t *tokens, const Py_ssize_t *lengths, Py_ssize_t n_blocks,
                                        int size, uint64_t *out);
INTERNAL void features_sort_hashes(uint64_t *keys, uint64_t *scratch, size_t n);
INTERNAL PyObject *features_count_distinct(const uint64_t *sorted, size_t n, Py_ssize_t n_tokens);

/* ---- page.c, votes.c, type.c: what Python calls ---- */

/* Grow a buffer (page.c's scratch, table.c's arena) to at least `count` items. */
INTERNAL int features_reserve(void **buffer, size_t *size, size_t count, size_t item);
INTERNAL PyObject *features_shingle_counts(TokenTable *self, PyObject *const *args, Py_ssize_t nargs);
INTERNAL PyObject *features_simhash_votes(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
INTERNAL PyObject *features_weakest_bits(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
INTERNAL PyObject *features_minwise_sketch(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
INTERNAL extern PyTypeObject features_TokenTableType;

#endif

/* Blocks of text -> distinct shingle hashes and their counts, and SimHash votes, in C.
 *
 * In Python a page's features take ~0.45 ms: a regex findall, a dict lookup per token,
 * a dozen NumPy calls for the shingles and np.unique. This does the same in one pass:
 * tokens are read from the str's own code points, their hashes come from a table kept
 * per crawl (BLAKE2b for new ones), and the shingles are chained, sorted and counted
 * without a Python object per token. It is optional: scrapy_simhash.core.features
 * falls back to the Python path, with the same results, when it was not built.
 *
 * The tokens are those of segment.Tokenizer(segmenter="char").raw() on the blocks
 * joined by the block separator: Python's \w is sre's (Py_UNICODE_ISALNUM or '_'), and
 * the script classes are handed over by segment.py (set_script_classes), not copied.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* The per-character helpers are inlined by force: GCC otherwise calls them (and
 * PyUnicode_READ) once per character, ~30% of a page's time. */
#if defined(__GNUC__) || defined(__clang__)
#define HOT static inline __attribute__((always_inline))
#else
#define HOT static inline
#endif

/* ---- BLAKE2b-64, keyed (RFC 7693, from its pseudocode; the tests check it against hashlib) ----
 *
 * Here rather than hashlib called from C: that is a Python call and two objects a token
 * (~0.5 us), and every page brings dozens of new tokens (names, numbers: Zipf's tail). */

static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static const uint8_t blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

#define BLAKE2B_BLOCK 128

static inline uint64_t
rotr64(uint64_t x, int n)
{
    return (x >> n) | (x << (64 - n));
}

static inline uint64_t
load64_le(const uint8_t *p)
{
    uint64_t x = 0;
    for (int i = 7; i >= 0; i--) {
        x = (x << 8) | p[i];
    }
    return x;
}

#define G(a, b, c, d, x, y)                                                                        \
    do {                                                                                           \
        a = a + b + (x); d = rotr64(d ^ a, 32); c = c + d; b = rotr64(b ^ c, 24);                  \
        a = a + b + (y); d = rotr64(d ^ a, 16); c = c + d; b = rotr64(b ^ c, 63);                  \
    } while (0)

/* Mix one 128-byte block into h; `counter` is the bytes hashed so far, this block included. */
static void
blake2b_compress(uint64_t h[8], const uint8_t *block, uint64_t counter, int last)
{
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) {
        m[i] = load64_le(block + 8 * i);
    }
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= counter; /* the counter's high word stays 0: no token is 2**64 bytes */
    if (last) {
        v[14] = ~v[14];
    }
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = blake2b_sigma[r];
        G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) {
        h[i] ^= v[i] ^ v[i + 8];
    }
}

/* The hasher of one key: BLAKE2b's state once the key block is in (a keyed hash of a
 * non-empty message starts there, so the key block is mixed once per crawl, not per token). */
typedef struct {
    uint64_t start[8];
    uint64_t consumed; /* 128 when keyed, else 0 */
} Hasher;

static void
hasher_init(Hasher *hasher, const uint8_t *key, size_t key_length)
{
    memcpy(hasher->start, blake2b_iv, sizeof blake2b_iv);
    /* The parameter block: fanout 1, depth 1, the key's length, an 8-byte digest. */
    hasher->start[0] ^= 0x01010000ULL ^ ((uint64_t)key_length << 8) ^ 8;
    hasher->consumed = 0;
    if (key_length) {
        uint8_t block[BLAKE2B_BLOCK] = {0};
        memcpy(block, key, key_length);
        hasher->consumed = BLAKE2B_BLOCK;
        blake2b_compress(hasher->start, block, hasher->consumed, 0);
    }
}

/* hashing.token_hash(): the 8-byte digest read little-endian is the state's first word. */
static uint64_t
hasher_digest(const Hasher *hasher, const uint8_t *data, size_t length)
{
    uint64_t h[8];
    memcpy(h, hasher->start, sizeof h);
    uint64_t counter = hasher->consumed;
    for (; length > BLAKE2B_BLOCK; data += BLAKE2B_BLOCK, length -= BLAKE2B_BLOCK) {
        counter += BLAKE2B_BLOCK;
        blake2b_compress(h, data, counter, 0);
    }
    uint8_t block[BLAKE2B_BLOCK] = {0};
    memcpy(block, data, length);
    blake2b_compress(h, block, counter + length, 1);
    return h[0];
}

/* ---- Character classes ---- */

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

static uint8_t bmp_classes[0x10000];
static Py_UCS4 astral_ranges[MAX_ASTRAL_RANGES][2]; /* ONE_CHAR ranges past the BMP */
static int n_astral_ranges = -1;                     /* -1: set_script_classes not called yet */

static int
is_word(Py_UCS4 ch)
{
    return Py_UNICODE_ISALNUM(ch) || ch == '_';
}

HOT unsigned
classes_of(Py_UCS4 ch)
{
    if (ch < 0x10000) {
        return bmp_classes[ch];
    }
    unsigned found = is_word(ch) ? WORD : 0;
    for (int i = 0; i < n_astral_ranges; i++) {
        if (astral_ranges[i][0] <= ch && ch <= astral_ranges[i][1]) {
            found |= ONE_CHAR;
        }
    }
    return found;
}

/* Mark the characters of a regex class body ("a-zA-Z_": characters and ranges) with `bits`. */
static int
mark_class(PyObject *body, unsigned bits)
{
    if (!PyUnicode_Check(body)) {
        PyErr_Format(PyExc_TypeError, "a script class must be str, not %.100s", Py_TYPE(body)->tp_name);
        return -1;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(body);
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 low = PyUnicode_READ_CHAR(body, i), high = low;
        if (i + 2 < length && PyUnicode_READ_CHAR(body, i + 1) == '-') {
            high = PyUnicode_READ_CHAR(body, i + 2);
            i += 2;
        }
        for (Py_UCS4 ch = low; ch <= high && ch < 0x10000; ch++) {
            bmp_classes[ch] |= (uint8_t)(bits | SCRIPT); /* only BMP ones: as _NEEDS_SCRIPT_RULES */
        }
        if (high >= 0x10000) {
            if (bits != ONE_CHAR || n_astral_ranges == MAX_ASTRAL_RANGES) {
                PyErr_SetString(PyExc_ValueError, "only a few one-character classes may go past the BMP");
                return -1;
            }
            astral_ranges[n_astral_ranges][0] = low < 0x10000 ? 0x10000 : low;
            astral_ranges[n_astral_ranges++][1] = high;
        }
    }
    return 0;
}

static PyObject *
set_script_classes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    static const unsigned bits[] = {HAN, MARK, HIRAGANA, KATAKANA, ONE_CHAR};
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "set_script_classes takes 5 arguments");
        return NULL;
    }
    n_astral_ranges = 0;
    for (Py_UCS4 ch = 0; ch < 0x10000; ch++) {
        bmp_classes[ch] = is_word(ch) ? WORD : 0;
    }
    for (int i = 0; i < 5; i++) {
        if (mark_class(args[i], bits[i]) < 0) {
            n_astral_ranges = -1;
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* ---- Tokens ---- */

/* A str's code points, whatever its kind. */
typedef struct {
    int kind;
    const void *data;
    Py_ssize_t length;
    int ascii; /* then its data is its UTF-8 */
} Text;

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
            if (ch < 0x10000 && (bmp_classes[ch] & SCRIPT)) {
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
        int continues = run == (WORD | MARK) ? (next & MARK) || ((next & WORD) && !(next & NOT_WORD))
                                              : (next & run) != 0;
        if (!continues) {
            break;
        }
        end++;
    }
    return end;
}

/* UTF-8 of code points start ... end - 1, lone surrogates as "surrogatepass" writes them. */
static size_t
encode_utf8(const Text *text, Py_ssize_t start, Py_ssize_t end, uint8_t *out)
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

/* ---- The token table: token -> hash, kept per crawl ---- */

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

/* A token found, waiting for its hash: `length` bytes of UTF-8 (in the str itself when it is
 * ASCII, else in self->utf8), or one BMP character (length 0), looked up by code point. */
typedef struct {
    uint64_t key; /* quick_hash of its bytes */
    const uint8_t *bytes;
    size_t length;
    Py_UCS4 ch;
} Found;

/* Probes past this many slots give up: the token is hashed but not remembered. Lookups
 * stay O(1) even when a hostile page brings tokens that collide in the quick hash. */
#define MAX_PROBES 32
#define MAX_ARENA ((size_t)1 << 28)
#define MIN_SLOTS 1024

typedef struct {
    PyObject_HEAD
    Hasher hasher;
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

/* Make *buffer hold at least `count` items of `item` bytes (grows by doubling). */
static int
reserve(void **buffer, size_t *size, size_t count, size_t item)
{
    if (count <= *size) {
        return 0;
    }
    size_t wanted = *size ? *size : 256;
    while (wanted < count) {
        wanted *= 2;
    }
    if (wanted > PY_SSIZE_T_MAX / item) {
        PyErr_NoMemory();
        return -1;
    }
    void *grown = PyMem_Realloc(*buffer, wanted * item);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buffer = grown;
    *size = wanted;
    return 0;
}

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

static void
table_clear(TokenTable *self)
{
    if (self->slots) {
        memset(self->slots, 0, self->n_slots * sizeof(Slot));
    }
    self->size = 0;
    self->arena_used = 0;
}

/* Twice the slots, the same tokens (false if memory is short: the table stays as it was). */
static int
table_grow(TokenTable *self)
{
    size_t n_slots = self->n_slots ? 2 * self->n_slots : MIN_SLOTS;
    Slot *slots = PyMem_Calloc(n_slots, sizeof(Slot));
    if (slots == NULL) {
        return 0;
    }
    for (size_t i = 0; i < self->n_slots; i++) {
        Slot *old = &self->slots[i];
        for (size_t j = old->key & (n_slots - 1); old->key; j = (j + 1) & (n_slots - 1)) {
            if (!slots[j].key) {
                slots[j] = *old;
                break;
            }
        }
    }
    PyMem_Free(self->slots);
    self->slots = slots;
    self->n_slots = n_slots;
    return 1;
}

/* Remember a token's hash, if there is room (a cache: forgetting is always allowed). */
static void
table_insert(TokenTable *self, Slot *free_slot, uint64_t key, const uint8_t *bytes, size_t length,
             uint64_t hash)
{
    Slot slot = {key, hash, (uint32_t)length, {{0}}};
    if (length <= INLINE_BYTES) {
        memcpy(slot.token.bytes, bytes, length);
    } else if (length > MAX_ARENA - self->arena_used
               || reserve((void **)&self->arena, &self->arena_size, self->arena_used + length, 1) < 0) {
        PyErr_Clear();
        return;
    } else {
        memcpy(self->arena + self->arena_used, bytes, length);
        slot.token.offset = (uint32_t)self->arena_used;
        self->arena_used += length;
    }
    *free_slot = slot;
    self->size++;
}

static int
slot_holds(const TokenTable *self, const Slot *slot, uint64_t key, const uint8_t *bytes, size_t length)
{
    if (slot->key != key || slot->length != length) {
        return 0;
    }
    const uint8_t *held = length <= INLINE_BYTES ? slot->token.bytes : self->arena + slot->token.offset;
    return memcmp(held, bytes, length) == 0;
}

/* The hash of a token of `length` UTF-8 bytes (quick hash `key`): from the table, else
 * BLAKE2b (then remembered). */
static uint64_t
table_hash(TokenTable *self, uint64_t key, const uint8_t *bytes, size_t length)
{
    if ((Py_ssize_t)self->size >= self->capacity) {
        table_clear(self); /* as hashing.TokenHasher: simpler than LRU, frequent tokens come back */
    }
    if (2 * (self->size + 1) > self->n_slots) {
        table_grow(self);
    }
    if (self->n_slots == 0) {
        return hasher_digest(&self->hasher, bytes, length);
    }
    size_t mask = self->n_slots - 1;
    size_t j = key & mask;
    for (int probe = 0; probe < MAX_PROBES; probe++, j = (j + 1) & mask) {
        Slot *slot = &self->slots[j];
        if (slot->key == 0) {
            uint64_t hash = hasher_digest(&self->hasher, bytes, length);
            table_insert(self, slot, key, bytes, length, hash);
            return hash;
        }
        if (slot_holds(self, slot, key, bytes, length)) {
            return slot->hash;
        }
    }
    return hasher_digest(&self->hasher, bytes, length);
}

/* Record the token text[start:end]: its UTF-8 is the str's own bytes when that is ASCII (the
 * blocks outlive the Found), else appended at self->utf8 + *used (room made by the caller). */
HOT void
found_token(TokenTable *self, const Text *text, Py_ssize_t start, Py_ssize_t end, Found *found, size_t *used)
{
    Py_UCS4 first = char_at(text, start);
    if (end - start == 1 && first < 0x10000) {
        *found = (Found){0, NULL, 0, first};
        return;
    }
    size_t length = (size_t)(end - start);
    const uint8_t *bytes = (const uint8_t *)text->data + start;
    if (!text->ascii) {
        bytes = self->utf8 + *used;
        length = encode_utf8(text, start, end, self->utf8 + *used);
        *used += length;
    }
    *found = (Found){quick_hash(bytes, length), bytes, length, first};
}

/* The hash of a found token. */
static uint64_t
found_hash(TokenTable *self, const Found *found)
{
    if (found->length) {
        return table_hash(self, found->key, found->bytes, found->length);
    }
    Py_UCS4 ch = found->ch;
    if (!self->bmp_known[ch]) {
        Text one = {PyUnicode_4BYTE_KIND, &ch, 1, 0};
        uint8_t bytes[4];
        self->bmp_hashes[ch] = hasher_digest(&self->hasher, bytes, encode_utf8(&one, 0, 1, bytes));
        self->bmp_known[ch] = 1;
    }
    return self->bmp_hashes[ch];
}

/* ---- Shingles ---- */

/* MurmurHash3's fmix64 (hashing.mix64). */
static inline uint64_t
fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

/* hashing.block_shingle_hashes(): fmix64((..(h0 * C ^ h1) * C ..) ^ h(L-1)) for every
 * window of `size` tokens inside a block, one shorter shingle for a short block. */
static size_t
chain_shingles(const uint64_t *tokens, const Py_ssize_t *lengths, Py_ssize_t n_blocks, int size,
               uint64_t *out)
{
    const uint64_t chain = 0x9E3779B97F4A7C15ULL;
    size_t n = 0;
    for (Py_ssize_t b = 0; b < n_blocks; tokens += lengths[b], b++) {
        Py_ssize_t length = lengths[b], span = length < size ? length : size;
        Py_ssize_t windows = length ? length - span + 1 : 0;
        for (Py_ssize_t i = 0; i < windows; i++) {
            uint64_t acc = tokens[i];
            for (Py_ssize_t step = 1; step < span; step++) {
                acc = (acc * chain) ^ tokens[i + step];
            }
            out[n++] = fmix64(acc);
        }
    }
    return n;
}

static void
insertion_sort(uint64_t *keys, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        uint64_t key = keys[i];
        size_t j = i;
        for (; j > 0 && keys[j - 1] > key; j--) {
            keys[j] = keys[j - 1];
        }
        keys[j] = key;
    }
}

/* LSD radix sort, a byte a pass (passes where all keys agree skipped): O(n) whatever the keys. */
static void
radix_sort(uint64_t *keys, uint64_t *scratch, size_t n)
{
    size_t counts[8][256] = {{0}};
    for (size_t i = 0; i < n; i++) {
        for (int pass = 0; pass < 8; pass++) {
            counts[pass][(keys[i] >> (8 * pass)) & 0xFF]++;
        }
    }
    uint64_t *from = keys, *to = scratch;
    for (int pass = 0; pass < 8; pass++) {
        size_t *count = counts[pass];
        if (count[(from[0] >> (8 * pass)) & 0xFF] == n) {
            continue;
        }
        size_t total = 0;
        for (int digit = 0; digit < 256; digit++) {
            size_t here = count[digit];
            count[digit] = total;
            total += here;
        }
        for (size_t i = 0; i < n; i++) {
            to[count[(from[i] >> (8 * pass)) & 0xFF]++] = from[i];
        }
        uint64_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != keys) {
        memcpy(keys, from, n * sizeof *keys);
    }
}

#define SMALL_BUCKET 32
#define MAX_BUCKET_BITS 12

/* Sort ascending. Shingle hashes are uniform (fmix64 of BLAKE2b), so one pass on their top
 * bits leaves buckets of ~2 keys, finished by insertion sort: ~3x faster than 8 radix passes.
 * Equal keys cost nothing there; a bucket that is large anyway (a hostile page) is radix sorted. */
static void
sort_hashes(uint64_t *keys, uint64_t *scratch, size_t n)
{
    if (n <= SMALL_BUCKET) {
        insertion_sort(keys, n);
        return;
    }
    int bits = 1;
    while (bits < MAX_BUCKET_BITS && ((size_t)1 << (bits + 1)) <= n) {
        bits++;
    }
    size_t starts[(1 << MAX_BUCKET_BITS) + 1] = {0};
    for (size_t i = 0; i < n; i++) {
        starts[(keys[i] >> (64 - bits)) + 1]++;
    }
    for (size_t b = 1; b <= ((size_t)1 << bits); b++) {
        starts[b] += starts[b - 1];
    }
    size_t next[1 << MAX_BUCKET_BITS];
    memcpy(next, starts, ((size_t)1 << bits) * sizeof *next);
    for (size_t i = 0; i < n; i++) {
        scratch[next[keys[i] >> (64 - bits)]++] = keys[i];
    }
    for (size_t b = 0; b < ((size_t)1 << bits); b++) {
        size_t size = starts[b + 1] - starts[b];
        if (size <= SMALL_BUCKET) {
            insertion_sort(scratch + starts[b], size);
        } else {
            radix_sort(scratch + starts[b], keys + starts[b], size);
        }
    }
    memcpy(keys, scratch, n * sizeof *keys);
}

/* ---- TokenTable.shingle_counts ---- */

/* Room for the tokens of all the blocks (at most one a character) and their UTF-8 (3 bytes
 * a UCS-2 character at most, 4 else). */
static int
reserve_tokens(TokenTable *self, const Text *texts, Py_ssize_t n_texts)
{
    size_t chars = 0, bytes = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        if ((size_t)texts[t].length > (PY_SSIZE_T_MAX - bytes) / 4) {
            PyErr_NoMemory();
            return -1;
        }
        chars += (size_t)texts[t].length;
        bytes += (texts[t].kind == PyUnicode_2BYTE_KIND ? 3 : 4) * (size_t)texts[t].length;
    }
    return reserve((void **)&self->utf8, &self->utf8_size, bytes + 1, 1) < 0
                   || reserve((void **)&self->found, &self->found_size, chars + 1, sizeof(Found)) < 0
                   || reserve((void **)&self->tokens, &self->tokens_size, chars + 1, sizeof(uint64_t)) < 0
               ? -1
               : 0;
}

/* Find the blocks' tokens (into self->found), their count per block into self->lengths. */
static Py_ssize_t
find_tokens(TokenTable *self, const Text *texts, Py_ssize_t n_texts) /* (room made) */
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
            found_token(self, text, i, end, &self->found[n++], &used);
            i = end;
        }
        self->lengths[t] = (Py_ssize_t)(n - first);
    }
    return (Py_ssize_t)n;
}

/* The hashes of the blocks' tokens into self->tokens, their count per block into self->lengths. */
static Py_ssize_t
hash_tokens(TokenTable *self, const Text *texts, Py_ssize_t n_texts)
{
    if (reserve_tokens(self, texts, n_texts) < 0) {
        return -1;
    }
    Py_ssize_t n = find_tokens(self, texts, n_texts);
    for (Py_ssize_t i = 0; i < n; i++) {
        self->tokens[i] = found_hash(self, &self->found[i]);
    }
    return n;
}

/* Read every block's code points (a TypeError for one that is not str). */
static int
read_blocks(PyObject *sequence, Text *texts, Py_ssize_t n_texts)
{
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        PyObject *block = PySequence_Fast_GET_ITEM(sequence, t);
        if (!PyUnicode_Check(block)) {
            PyErr_Format(PyExc_TypeError, "a block must be str, not %.100s", Py_TYPE(block)->tp_name);
            return -1;
        }
#if PY_VERSION_HEX < 0x030C0000
        if (PyUnicode_READY(block) < 0) {
            return -1;
        }
#endif
        texts[t] = (Text){PyUnicode_KIND(block), PyUnicode_DATA(block), PyUnicode_GET_LENGTH(block),
                          PyUnicode_IS_ASCII(block)};
    }
    return 0;
}

/* (distinct hashes, their counts) of the sorted shingles, as native uint64 / int64 bytes. */
static PyObject *
count_distinct(const uint64_t *sorted, size_t n, Py_ssize_t n_tokens)
{
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        distinct += i == 0 || sorted[i] != sorted[i - 1];
    }
    PyObject *hashes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(distinct * sizeof(uint64_t)));
    PyObject *counts = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(distinct * sizeof(int64_t)));
    if (hashes == NULL || counts == NULL) {
        Py_XDECREF(hashes);
        Py_XDECREF(counts);
        return NULL;
    }
    uint64_t *out = (uint64_t *)PyByteArray_AS_STRING(hashes);
    int64_t *count = (int64_t *)PyByteArray_AS_STRING(counts);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || sorted[i] != sorted[i - 1]) {
            out[k] = sorted[i];
            count[k++] = 0;
        }
        count[k - 1]++;
    }
    return Py_BuildValue("(NNn)", hashes, counts, n_tokens);
}

/* Scratch past this many bytes (a huge page's) is given back after the page. */
#define KEPT_SCRATCH ((size_t)1 << 22)

static void
release_large_scratch(TokenTable *self)
{
    if (self->found_size * sizeof(Found) + self->utf8_size <= KEPT_SCRATCH) {
        return;
    }
    void **buffers[] = {(void **)&self->found, (void **)&self->tokens, (void **)&self->shingles,
                        (void **)&self->sorted, (void **)&self->utf8};
    for (size_t b = 0; b < sizeof buffers / sizeof *buffers; b++) {
        PyMem_Free(*buffers[b]);
        *buffers[b] = NULL;
    }
    self->found_size = self->tokens_size = self->shingles_size = self->sorted_size = self->utf8_size = 0;
}

/* Tokens -> hashes -> shingles -> sorted -> (distinct, counts, n_tokens) of a page's blocks. */
static PyObject *
page_shingle_counts(TokenTable *self, const Text *texts, Py_ssize_t n_texts, int size)
{
    if (reserve((void **)&self->lengths, &self->lengths_size, (size_t)n_texts + 1, sizeof(Py_ssize_t)) < 0) {
        return NULL;
    }
    Py_ssize_t n_tokens = hash_tokens(self, texts, n_texts); /* shingles: at most one a token */
    if (n_tokens < 0
        || reserve((void **)&self->shingles, &self->shingles_size, (size_t)n_tokens + 1, sizeof(uint64_t)) < 0
        || reserve((void **)&self->sorted, &self->sorted_size, (size_t)n_tokens + 1, sizeof(uint64_t)) < 0) {
        return NULL;
    }
    size_t n = chain_shingles(self->tokens, self->lengths, n_texts, size, self->shingles);
    sort_hashes(self->shingles, self->sorted, n);
    return count_distinct(self->shingles, n, n_tokens);
}

static PyObject *
shingle_counts(TokenTable *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "shingle_counts takes 2 arguments (blocks, size)");
        return NULL;
    }
    long size = PyLong_AsLong(args[1]);
    if (size == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (size < 1 || size > 16) {
        PyErr_Format(PyExc_ValueError, "size must be between 1 and 16, not %ld", size);
        return NULL;
    }
    if (n_astral_ranges < 0) {
        PyErr_SetString(PyExc_RuntimeError, "set_script_classes() was not called");
        return NULL;
    }
    PyObject *sequence = PySequence_Fast(args[0], "blocks must be a sequence of str");
    if (sequence == NULL) {
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n_texts = PySequence_Fast_GET_SIZE(sequence);
    Text *texts = PyMem_New(Text, n_texts ? n_texts : 1);
    if (texts == NULL) {
        PyErr_NoMemory();
    } else if (read_blocks(sequence, texts, n_texts) == 0) {
        result = page_shingle_counts(self, texts, n_texts, (int)size);
        release_large_scratch(self);
    }
    PyMem_Free(texts);
    Py_DECREF(sequence);
    return result;
}

/* ---- The TokenTable type ---- */

static PyObject *
table_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"key", "capacity", NULL};
    Py_buffer key;
    Py_ssize_t capacity;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*n:TokenTable", keywords, &key, &capacity)) {
        return NULL;
    }
    TokenTable *self = NULL;
    if (key.len > 64) {
        PyErr_Format(PyExc_ValueError, "key must be at most 64 bytes, not %zd", key.len);
    } else if (capacity < 1) {
        PyErr_Format(PyExc_ValueError, "capacity must be positive, not %zd", capacity);
    } else if ((self = (TokenTable *)type->tp_alloc(type, 0)) != NULL) {
        hasher_init(&self->hasher, key.buf, (size_t)key.len);
        self->capacity = capacity;
        self->bmp_hashes = PyMem_Malloc(0x10000 * sizeof(uint64_t));
        self->bmp_known = PyMem_Calloc(0x10000, 1);
        if (self->bmp_hashes == NULL || self->bmp_known == NULL) {
            Py_CLEAR(self);
            PyErr_NoMemory();
        }
    }
    PyBuffer_Release(&key);
    return (PyObject *)self;
}

static void
table_dealloc(TokenTable *self)
{
    PyMem_Free(self->slots);
    PyMem_Free(self->arena);
    PyMem_Free(self->bmp_hashes);
    PyMem_Free(self->bmp_known);
    PyMem_Free(self->found);
    PyMem_Free(self->tokens);
    PyMem_Free(self->shingles);
    PyMem_Free(self->sorted);
    PyMem_Free(self->lengths);
    PyMem_Free(self->utf8);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
table_remembered(TokenTable *self, PyObject *unused)
{
    (void)unused;
    return PyLong_FromSize_t(self->size);
}

static PyMethodDef table_methods[] = {
    {"shingle_counts", (PyCFunction)(void (*)(void))shingle_counts, METH_FASTCALL,
     "shingle_counts($self, blocks, size, /)\n--\n\n"
     "(distinct shingle hashes, their counts, number of tokens) of the blocks: the hashes as\n"
     "native uint64 and the counts as int64, in bytearrays, sorted by hash."},
    {"remembered", (PyCFunction)table_remembered, METH_NOARGS,
     "remembered($self, /)\n--\n\nTokens of more than one character in the table now."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TokenTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "scrapy_simhash.core._features.TokenTable",
    .tp_basicsize = sizeof(TokenTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TokenTable(key, capacity)\n--\n\n"
              "Token -> keyed BLAKE2b-64 hash, remembering up to capacity tokens (then starting "
              "again), and the shingle counts of text blocks.",
    .tp_new = table_new,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
};

/* ---- SimHash votes ---- */

/* Weights as whole multiples of 1/1024 (features._WEIGHT_QUANTUM): 0 when one is not, or
 * when they are so large that float64 sums might round (then NumPy decides, in Python). */
static int
quantise(const double *weights, Py_ssize_t n, int64_t *quanta)
{
    const double limit = 2147483648.0; /* 2**31 a weight; 2**52 in all (checked below) */
    int64_t magnitude = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double q = weights[i] * 1024.0;
        if (!(fabs(q) < limit) || q != floor(q)) {
            return 0;
        }
        quanta[i] = (int64_t)q;
        magnitude += quanta[i] < 0 ? -quanta[i] : quanta[i];
        if (magnitude >= ((int64_t)1 << 52)) {
            return 0;
        }
    }
    return 1;
}

/* The sum of the weights with bit b set, for each b (exact: integers). A feature adds its
 * weight to one of 16 sums per 4-bit nibble (16 adds, not 64); bit b's sum then adds the 8
 * sums of its nibble's values that have the bit. */
static void
bit_sums(const uint64_t *hashes, const int64_t *quanta, Py_ssize_t n, int64_t sums[64])
{
    int64_t by_nibble[16][16] = {{0}};
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t h = hashes[i];
        for (int k = 0; k < 16; k++, h >>= 4) {
            by_nibble[k][h & 15] += quanta[i];
        }
    }
    for (int b = 0; b < 64; b++) {
        sums[b] = 0;
        for (int value = 0; value < 16; value++) {
            sums[b] += (value >> (b & 3)) & 1 ? by_nibble[b >> 2][value] : 0;
        }
    }
}

/* A C-contiguous buffer of 8-byte items with one of the format codes in `codes`. */
static int
get_array(PyObject *obj, Py_buffer *view, const char *codes, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        return -1;
    }
    const char *code = view->format ? view->format : "B";
    if (code[0] == '@' || code[0] == '=' || (code[0] == '<' && PY_LITTLE_ENDIAN)) {
        code++; /* native byte order */
    }
    if (view->itemsize != 8 || code[0] == '\0' || strchr(codes, code[0]) == NULL || code[1] != '\0'
        || (uintptr_t)view->buf % 8 != 0) {
        PyErr_Format(PyExc_TypeError, "%s must be an aligned array of 8-byte items (%s)", name, codes);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* (fingerprint, margins): bit b is set when its vote 2 * sums[b] - total is positive; its
 * margin is the vote over the total weight (over 1 when that is 0), in float64 as NumPy has it. */
static PyObject *
margins_of(const int64_t sums[64], int64_t total)
{
    PyObject *margins = PyByteArray_FromStringAndSize(NULL, 64 * sizeof(double));
    if (margins == NULL) {
        return NULL;
    }
    double *margin = (double *)PyByteArray_AS_STRING(margins);
    double weight = total ? (double)total / 1024.0 : 1.0;
    uint64_t fingerprint = 0;
    for (int b = 0; b < 64; b++) {
        int64_t vote = 2 * sums[b] - total;
        fingerprint |= (uint64_t)(vote > 0) << b;
        margin[b] = ((double)vote / 1024.0) / weight;
    }
    return Py_BuildValue("(NN)", PyLong_FromUnsignedLongLong(fingerprint), margins);
}

/* (fingerprint, margins as 64 native float64 in a bytearray), or None when the weights are
 * not quantised: fingerprint.simhash_margins() bit for bit (its sums are exact too). */
static PyObject *
simhash_votes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "simhash_votes takes 2 arguments (hashes, weights)");
        return NULL;
    }
    Py_buffer hashes, weights;
    if (get_array(args[0], &hashes, "QL", "hashes") < 0) {
        return NULL;
    }
    if (get_array(args[1], &weights, "d", "weights") < 0) {
        PyBuffer_Release(&hashes);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t n = hashes.len / 8;
    int64_t *quanta = PyMem_New(int64_t, n ? n : 1);
    if (weights.len != hashes.len) {
        PyErr_SetString(PyExc_ValueError, "hashes and weights differ in length");
    } else if (quanta == NULL) {
        PyErr_NoMemory();
    } else if (!quantise(weights.buf, n, quanta)) {
        result = Py_NewRef(Py_None);
    } else {
        int64_t sums[64], total = 0;
        bit_sums(hashes.buf, quanta, n, sums);
        for (Py_ssize_t i = 0; i < n; i++) {
            total += quanta[i];
        }
        result = margins_of(sums, total);
    }
    PyMem_Free(quanta);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&weights);
    return result;
}

static PyMethodDef methods[] = {
    {"set_script_classes", (PyCFunction)(void (*)(void))set_script_classes, METH_FASTCALL,
     "set_script_classes($module, han, marks, hiragana, katakana, one_char, /)\n--\n\n"
     "The tokenizer's script classes, as regex class bodies (segment.SCRIPT_CLASSES)."},
    {"simhash_votes", (PyCFunction)(void (*)(void))simhash_votes, METH_FASTCALL,
     "simhash_votes($module, hashes, weights, /)\n--\n\n"
     "(fingerprint, 64 float64 margins in a bytearray) of uint64 hashes and float64 weights,\n"
     "or None when a weight is not a multiple of 1/1024 (or they are too large to sum exactly)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_features", "Tokens -> shingle counts, and SimHash votes, in C (see features).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__features(void)
{
    if (PyType_Ready(&TokenTableType) < 0) {
        return NULL;
    }
    PyObject *created = PyModule_Create(&module);
    if (created != NULL && PyModule_AddObjectRef(created, "TokenTable", (PyObject *)&TokenTableType) < 0) {
        Py_CLEAR(created);
    }
    return created;
}

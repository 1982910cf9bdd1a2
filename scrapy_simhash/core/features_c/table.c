/* The token table: token -> its keyed BLAKE2b-64 hash (blake2b.c), remembered per crawl.
 *
 * Most of a page's tokens were seen on earlier pages (Zipf), so their hashes are looked up
 * in an open-addressing table keyed by the tokens' quick hash (tokens.c), not recomputed;
 * one-character BMP tokens (all of Chinese text) have a table by code point instead. It
 * is a cache: when full it starts again, and a token it cannot hold is just hashed.
 */
#include "features.h"

/* Probes past this many slots give up: the token is hashed but not remembered. Lookups
 * stay O(1) even when a hostile page brings tokens that collide in the quick hash. */
#define MAX_PROBES 32
#define MAX_ARENA ((size_t)1 << 28)
#define MIN_SLOTS 1024

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
table_insert(TokenTable *self, Slot *free_slot, uint64_t key, const uint8_t *bytes, size_t length, uint64_t hash)
{
    Slot slot = {key, hash, (uint32_t)length, {{0}}};
    if (length <= INLINE_BYTES) {
        memcpy(slot.token.bytes, bytes, length);
    } else if (length > MAX_ARENA - self->arena_used
               || features_reserve((void **)&self->arena, &self->arena_size, self->arena_used + length, 1) < 0) {
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
        return features_hasher_digest(&self->hasher, bytes, length);
    }
    size_t mask = self->n_slots - 1;
    size_t j = key & mask;
    for (int probe = 0; probe < MAX_PROBES; probe++, j = (j + 1) & mask) {
        Slot *slot = &self->slots[j];
        if (slot->key == 0) {
            uint64_t hash = features_hasher_digest(&self->hasher, bytes, length);
            table_insert(self, slot, key, bytes, length, hash);
            return hash;
        }
        if (slot_holds(self, slot, key, bytes, length)) {
            return slot->hash;
        }
    }
    return features_hasher_digest(&self->hasher, bytes, length);
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
        size_t length = features_encode_utf8(&one, 0, 1, bytes);
        self->bmp_hashes[ch] = features_hasher_digest(&self->hasher, bytes, length);
        self->bmp_known[ch] = 1;
    }
    return self->bmp_hashes[ch];
}

/* The hashes of n found tokens. */
void
features_hash_found(TokenTable *self, const Found *found, size_t n, uint64_t *hashes)
{
    for (size_t i = 0; i < n; i++) {
        hashes[i] = found_hash(self, &found[i]);
    }
}

/* BLAKE2b-64, keyed (RFC 7693, from its pseudocode; the tests check it against hashlib):
 * the hash of every token, as hashing.token_hash() computes it in Python.
 *
 * Here rather than hashlib called from C: that is a Python call and two objects a token
 * (~0.5 us), and every page brings dozens of new tokens (names, numbers: Zipf's tail).
 */
#include "features.h"

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

#define G(a, b, c, d, x, y)                                                                                            \
    do {                                                                                                               \
        a = a + b + (x);                                                                                               \
        d = rotr64(d ^ a, 32);                                                                                         \
        c = c + d;                                                                                                     \
        b = rotr64(b ^ c, 24);                                                                                         \
        a = a + b + (y);                                                                                               \
        d = rotr64(d ^ a, 16);                                                                                         \
        c = c + d;                                                                                                     \
        b = rotr64(b ^ c, 63);                                                                                         \
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

/* Start *hasher on a key of at most 64 bytes (none: unkeyed). */
void
features_hasher_init(Hasher *hasher, const uint8_t *key, size_t key_length)
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
uint64_t
features_hasher_digest(const Hasher *hasher, const uint8_t *data, size_t length)
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

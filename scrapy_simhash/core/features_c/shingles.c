/* Token hashes -> shingle hashes, sorted and counted (the distinct ones, with how often each
 * comes), as hashing.block_shingle_hashes() and np.unique(..., return_counts=True) do in Python.
 *
 * The sort runs in scratch the caller keeps between pages (page.c): one bucket pass on the
 * hashes' top bits, then insertion sort (see features_sort_hashes).
 */
#include "features.h"

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
size_t
features_chain_shingles(const uint64_t *tokens, const Py_ssize_t *lengths, Py_ssize_t n_blocks, int size, uint64_t *out)
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
void
features_sort_hashes(uint64_t *keys, uint64_t *scratch, size_t n)
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

/* (distinct hashes, their counts) of the sorted shingles, as native uint64 / int64 bytes. */
PyObject *
features_count_distinct(const uint64_t *sorted, size_t n, Py_ssize_t n_tokens)
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

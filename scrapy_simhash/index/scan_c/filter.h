/* The row filter of the sorted tables' probe: which of a block of rows differ from the
 * query in at most k counted bits, written so that GCC vectorizes it (sorted.c).
 *
 * popcount(x) <= k is tested as "x is 0 after k rounds of x &= x - 1" (each round clears
 * the lowest set bit): a subtraction and an and, which SSE2, AVX2 and AVX-512 have on 32-
 * and 64-bit lanes, where a vector popcount needs AVX-512 VPOPCNTDQ. Past FILTER_ROUNDS
 * rounds, a popcount is cheaper. These are inlined into sorted.c's SCANNING_LOOP, built
 * once per instruction set. */
#ifndef SIMHASH_FILTER_H
#define SIMHASH_FILTER_H

#include "scan.h"

/* Rows filtered at once: the bits of a uint64_t. */
#define FILTER_BLOCK 64
/* Largest k tested by rounds of x &= x - 1 (2 vector ops a round); above it, popcount. */
#define FILTER_ROUNDS 8

#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* Bit i set: row i of the `count` (<= FILTER_BLOCK) of `values` is within max_distance. A
 * short block is padded with all-ones rows, never within FILTER_ROUNDS bits. */
#define DEFINE_CLOSE(name, type)                                                                 \
    ALWAYS_INLINE uint64_t name(const type *restrict values, uint32_t count, type query,        \
                                type counted, int max_distance)                                  \
    {                                                                                            \
        type left[FILTER_BLOCK];                                                                 \
        uint64_t close = 0;                                                                      \
        if (max_distance > FILTER_ROUNDS) {                                                      \
            for (uint32_t i = 0; i < count; i++) {                                               \
                close |= (uint64_t)(popcount64((uint64_t)((values[i] ^ query) & counted))       \
                                    <= max_distance) << i;                                       \
            }                                                                                    \
            return close;                                                                        \
        }                                                                                        \
        uint32_t i = 0;                                                                          \
        for (; i < count; i++) {                                                                 \
            left[i] = (values[i] ^ query) & counted;                                             \
        }                                                                                        \
        for (; i < FILTER_BLOCK; i++) {                                                          \
            left[i] = (type)~(type)0;                                                            \
        }                                                                                        \
        for (int round = 0; round < max_distance; round++) {                                     \
            for (int j = 0; j < FILTER_BLOCK; j++) {                                             \
                left[j] &= left[j] - 1;                                                          \
            }                                                                                    \
        }                                                                                        \
        type any = 0; /* (an or of the lanes: vectorized, where a bit mask is not) */            \
        for (int j = 0; j < FILTER_BLOCK; j++) {                                                 \
            any |= (type)(left[j] == 0);                                                         \
        }                                                                                        \
        for (int j = 0; any && j < FILTER_BLOCK; j++) { /* (rare) */                             \
            close |= (uint64_t)(left[j] == 0) << j;                                              \
        }                                                                                        \
        return max_distance < 0 ? 0 : close;                                                     \
    }

DEFINE_CLOSE(close32, uint32_t)
DEFINE_CLOSE(close64, uint64_t)

#endif

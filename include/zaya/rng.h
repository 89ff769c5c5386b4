/* Counter-based random numbers (Philox-4x32-10, Salmon et al. 2011).
 *
 * Every random value is a pure function of (seed, stream, counter): no hidden state, so results do
 * not depend on thread count, rank layout or the order in which tensors are initialised. By
 * convention a stream names a purpose (one per parameter tensor, per data-loader epoch, per sampler)
 * and the counter indexes elements within it. */
#ifndef ZAYA_RNG_H
#define ZAYA_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_u32x4 {
    uint32_t v[4];
} zaya_u32x4;

/* One Philox block: key = seed, 128-bit counter = (stream, counter). */
zaya_u32x4 zaya_philox4x32(uint64_t seed, uint64_t stream, uint64_t counter);

/* Element-addressed draws: element i of (seed, stream) uses counter offset+i. */
uint32_t zaya_rng_u32_at(uint64_t seed, uint64_t stream, uint64_t index);
float zaya_rng_uniform_at(uint64_t seed, uint64_t stream, uint64_t index); /* [0, 1), 24 bits */
double zaya_rng_normal_at(uint64_t seed, uint64_t stream, uint64_t index); /* N(0,1), Box-Muller */
void zaya_rng_fill_uniform(float *dst, size_t n, uint64_t seed, uint64_t stream, uint64_t offset, float lo, float hi);
void zaya_rng_fill_normal(float *dst, size_t n, uint64_t seed, uint64_t stream, uint64_t offset, float mean, float std);

/* A sequential generator for code that draws one value at a time (sampling, shuffles). Its whole
 * state is these three integers, so it serializes trivially into a checkpoint. */
typedef struct zaya_rng {
    uint64_t seed, stream, counter;
} zaya_rng;

static inline zaya_rng zaya_rng_make(uint64_t seed, uint64_t stream) {
    zaya_rng r = {seed, stream, 0};
    return r;
}
uint32_t zaya_rng_next_u32(zaya_rng *r);
float zaya_rng_next_uniform(zaya_rng *r);
uint64_t zaya_rng_next_below(zaya_rng *r, uint64_t bound); /* unbiased, bound > 0 */

#ifdef __cplusplus
}
#endif

#endif

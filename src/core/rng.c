#include "zaya/rng.h"

#include <math.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo) {
    uint64_t p = (uint64_t)a * b;
    *hi = (uint32_t)(p >> 32);
    *lo = (uint32_t)p;
}

zaya_u32x4 zaya_philox4x32(uint64_t seed, uint64_t stream, uint64_t counter) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
    uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int round = 0; round < 10; round++) {
        uint32_t hi0, lo0, hi1, lo1;
        mulhilo(PHILOX_M0, c0, &hi0, &lo0);
        mulhilo(PHILOX_M1, c2, &hi1, &lo1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
        c0 = n0;
        c1 = lo1;
        c2 = n2;
        c3 = lo0;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    zaya_u32x4 r = {{c0, c1, c2, c3}};
    return r;
}

uint32_t zaya_rng_u32_at(uint64_t seed, uint64_t stream, uint64_t index) {
    return zaya_philox4x32(seed, stream, index >> 2).v[index & 3];
}

static inline float u32_to_unit(uint32_t x) { return (float)(x >> 8) * (1.0f / 16777216.0f); }

float zaya_rng_uniform_at(uint64_t seed, uint64_t stream, uint64_t index) {
    return u32_to_unit(zaya_rng_u32_at(seed, stream, index));
}

/* One block per element: lanes 0,1 form a 64-bit-precision pair for Box-Muller. The other lanes are
 * deliberately unused so that element i never depends on how elements are grouped. */
double zaya_rng_normal_at(uint64_t seed, uint64_t stream, uint64_t index) {
    zaya_u32x4 b = zaya_philox4x32(seed, stream, index);
    double u1 = ((double)b.v[0] + 1.0) / 4294967297.0; /* (0, 1) */
    double u2 = (double)b.v[1] / 4294967296.0;         /* [0, 1) */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void zaya_rng_fill_uniform(float *dst, size_t n, uint64_t seed, uint64_t stream, uint64_t offset, float lo,
                           float hi) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (size_t i = 0; i < n; i++) dst[i] = lo + (hi - lo) * zaya_rng_uniform_at(seed, stream, offset + i);
}

void zaya_rng_fill_normal(float *dst, size_t n, uint64_t seed, uint64_t stream, uint64_t offset, float mean,
                          float std) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (size_t i = 0; i < n; i++) dst[i] = (float)(mean + std * zaya_rng_normal_at(seed, stream, offset + i));
}

uint32_t zaya_rng_next_u32(zaya_rng *r) { return zaya_rng_u32_at(r->seed, r->stream, r->counter++); }

float zaya_rng_next_uniform(zaya_rng *r) { return u32_to_unit(zaya_rng_next_u32(r)); }

uint64_t zaya_rng_next_below(zaya_rng *r, uint64_t bound) {
    /* Rejection sampling on 64-bit draws removes modulo bias. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    for (;;) {
        uint64_t x = ((uint64_t)zaya_rng_next_u32(r) << 32) | zaya_rng_next_u32(r);
        if (x < limit) return x % bound;
    }
}

/* Helpers shared by the CPU kernels in this directory (not part of the public API). */
#ifndef ZAYA_KERNEL_UTIL_H
#define ZAYA_KERNEL_UTIL_H

#include <stdint.h>
#include <string.h>

/* Below this many floats of work a parallel region costs more than it saves. */
#define ZAYA_PAR_MIN_WORK 32768

static inline float zaya_bits_to_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* exp(x) in f32 that the compiler can vectorize inside `omp simd` loops (libm's expf is a call and
 * blocks vectorization; we never build with -ffast-math, so libmvec is not used). Relative error
 * about 2 ulp. Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2, degree-7 Taylor polynomial
 * for e^r (truncation error < 6e-9), and 2^n applied as two factors so results that overflow give
 * +Inf and results that underflow round gradually to subnormals and 0. NaN propagates. */
static inline float zaya_vexpf(float x) {
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693145751953125f;      /* 15 significant bits: n * ln2_hi is exact */
    const float ln2_lo = 1.42860676533018704e-06f;
    const float round_magic = 12582912.0f;        /* 1.5 * 2^23: adding it rounds to an integer */
    x = x < -104.0f ? -104.0f : x;                /* exp(-104) is 0 in f32 */
    x = x > 89.0f ? 89.0f : x;                    /* exp(89) overflows to +Inf */
    float n = (x * log2e + round_magic) - round_magic;
    n = (x == x) ? n : 0.0f;                      /* keep the integer conversion defined for NaN */
    float r = (x - n * ln2_hi) - n * ln2_lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    int32_t ni = (int32_t)n; /* in [-150, 129] */
    int32_t a = ni / 2, b = ni - a;
    float sa = zaya_bits_to_f32((uint32_t)(a + 127) << 23);
    float sb = zaya_bits_to_f32((uint32_t)(b + 127) << 23);
    return p * sa * sb;
}

/* 1 / (1 + exp(-x)) with the vector exp; exact limits 0 and 1 for large |x|. */
static inline float zaya_vsigmoidf(float x) { return 1.0f / (1.0f + zaya_vexpf(-x)); }

#endif

/* Helpers shared by the CPU kernels in this directory (not part of the public API). */
#ifndef ZAYA_KERNEL_UTIL_H
#define ZAYA_KERNEL_UTIL_H

#include <math.h>
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
 * below 2 ulp. Cody-Waite range reduction x = n ln2 + r, |r| <= ln2/2; a degree-6 polynomial for
 * e^r (least-squares fit on Chebyshev nodes, relative error 1.8e-8) in FMA Horner form; 2^n applied
 * as two exponent-only factors so results that overflow give +Inf and results that underflow round
 * gradually to subnormals and 0. Integer work is on unsigned values only, so no input is undefined.
 * The clamps are written as plain max/min (one instruction each) and NaN is restored at the end. */
static inline float zaya_vexpf(float x) {
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693145751953125f;      /* 15 significant bits: n * ln2_hi is exact */
    const float ln2_lo = 1.42860676533018704e-06f;
    const float round_magic = 12582912.0f;        /* 1.5 * 2^23: adding it rounds to an integer */
    float xc = x > -104.0f ? x : -104.0f;         /* exp(-104) is 0 in f32; NaN becomes -104 here */
    xc = xc < 89.0f ? xc : 89.0f;                 /* exp(89) overflows to +Inf */
    float t = fmaf(xc, log2e, round_magic);       /* low mantissa bits of t hold n */
    float n = t - round_magic;                    /* in [-150, 129] */
    float r = fmaf(-n, ln2_hi, xc);
    r = fmaf(-n, ln2_lo, r);
    float p = 1.382942079e-03f;
    p = fmaf(p, r, 8.374771103e-03f);
    p = fmaf(p, r, 4.166835919e-02f);
    p = fmaf(p, r, 1.666642129e-01f);
    p = fmaf(p, r, 4.999999106e-01f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    uint32_t u;
    memcpy(&u, &t, sizeof u);
    u = u - 0x4b400000u + 150u; /* n + 150 in [0, 279] */
    uint32_t ua = u >> 1, ub = u - ua; /* 2^n = 2^(ua - 75) * 2^(ub - 75), each a normal float */
    float e = p * zaya_bits_to_f32((ua + 52u) << 23) * zaya_bits_to_f32((ub + 52u) << 23);
    return x == x ? e : x;
}

/* 1 / (1 + exp(-x)) with the vector exp; exact limits 0 and 1 for large |x|. */
static inline float zaya_vsigmoidf(float x) { return 1.0f / (1.0f + zaya_vexpf(-x)); }

/* erfc(x), branch-free so that `omp simd` loops vectorize it: for z = |x|, erfc(z) = t exp(-z^2 + P(t))
 * with t = 1 / (1 + z/2) and the degree-9 Chebyshev fit P of Numerical Recipes' erfcc (fractional
 * error < 1.2e-7 for every z >= 0), erfc(-z) = 2 - erfc(z). The f32 rounding of z^2 inside the
 * exponential adds ~z^2 * 6e-8 relative in the far tail. NaN propagates. */
static inline float zaya_verfcf(float x) {
    const float z = fabsf(x), t = 1.0f / fmaf(0.5f, z, 1.0f);
    float p = 0.17087277f;
    p = fmaf(p, t, -0.82215223f);
    p = fmaf(p, t, 1.48851587f);
    p = fmaf(p, t, -1.13520398f);
    p = fmaf(p, t, 0.27886807f);
    p = fmaf(p, t, -0.18628806f);
    p = fmaf(p, t, 0.09678418f);
    p = fmaf(p, t, 0.37409196f);
    p = fmaf(p, t, 1.00002368f);
    p = fmaf(p, t, -1.26551223f);
    const float r = t * zaya_vexpf(fmaf(-z, z, p));
    return x >= 0.0f ? r : (x < 0.0f ? 2.0f - r : x);
}

#endif

/* Pointwise activations: exact GELU, SiLU, and SwiGLU over fused [gate | up] rows. */
#include <math.h>

#include "kernel_util.h"
#include "zaya/kernels.h"

/* Elementwise kernels run as blocks of ACT_BLOCK elements, each an `omp simd` loop. */
#define ACT_BLOCK 4096

/* GELU (the routers' MLP) through the vectorizable erfc of kernel_util.h (fractional error ~1e-7;
 * libm's scalar erfcf made the router's elementwise work cost more than its GEMMs).
 * Phi(x) = erfc(-x/sqrt2)/2 is (1 + erf(x/sqrt2))/2 without the cancellation that loses all digits
 * for x << 0. */
void zaya_gelu_forward(float *y, const float *x, int64_t n) {
    const float inv_sqrt2 = 0.70710678118654752f;
    const int64_t nblk = (n + ACT_BLOCK - 1) / ACT_BLOCK;
#pragma omp parallel for schedule(static) if (n >= ZAYA_PAR_MIN_WORK / 4)
    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t i0 = blk * ACT_BLOCK, i1 = i0 + ACT_BLOCK < n ? i0 + ACT_BLOCK : n;
#pragma omp simd
        for (int64_t i = i0; i < i1; i++) y[i] = 0.5f * x[i] * zaya_verfcf(-x[i] * inv_sqrt2);
    }
}

/* d/dx x Phi(x) = Phi(x) + x phi(x). */
void zaya_gelu_backward(float *dx, const float *dy, const float *x, int64_t n) {
    const float inv_sqrt2 = 0.70710678118654752f, inv_sqrt2pi = 0.39894228040143268f;
    const int64_t nblk = (n + ACT_BLOCK - 1) / ACT_BLOCK;
#pragma omp parallel for schedule(static) if (n >= ZAYA_PAR_MIN_WORK / 4)
    for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t i0 = blk * ACT_BLOCK, i1 = i0 + ACT_BLOCK < n ? i0 + ACT_BLOCK : n;
#pragma omp simd
        for (int64_t i = i0; i < i1; i++) {
            const float v = x[i];
            const float cdf = 0.5f * zaya_verfcf(-v * inv_sqrt2);
            const float pdf = inv_sqrt2pi * zaya_vexpf(-0.5f * v * v);
            dx[i] = dy[i] * (cdf + v * pdf);
        }
    }
}

/* silu(x) = x / (1 + exp(-x)): one division, exact -0 / x at the extremes. */
void zaya_silu_forward(float *y, const float *x, int64_t n) {
    const int64_t nblk = (n + ACT_BLOCK - 1) / ACT_BLOCK;
#pragma omp parallel for schedule(static) if (n >= ZAYA_PAR_MIN_WORK)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t i0 = blk * ACT_BLOCK, i1 = i0 + ACT_BLOCK < n ? i0 + ACT_BLOCK : n;
#pragma omp simd
        for (int64_t i = i0; i < i1; i++) y[i] = x[i] / (1.0f + zaya_vexpf(-x[i]));
    }
}

/* d/dx x s(x) = s (1 + x (1 - s)). */
void zaya_silu_backward(float *dx, const float *dy, const float *x, int64_t n) {
    const int64_t nblk = (n + ACT_BLOCK - 1) / ACT_BLOCK;
#pragma omp parallel for schedule(static) if (n >= ZAYA_PAR_MIN_WORK)
    for (int64_t blk = 0; blk < nblk; blk++) {
        int64_t i0 = blk * ACT_BLOCK, i1 = i0 + ACT_BLOCK < n ? i0 + ACT_BLOCK : n;
#pragma omp simd
        for (int64_t i = i0; i < i1; i++) {
            float s = zaya_vsigmoidf(x[i]);
            dx[i] = dy[i] * s * (1.0f + x[i] * (1.0f - s));
        }
    }
}

void zaya_swiglu_forward(float *y, const float *gu, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        const float *g = gu + r * 2 * d, *u = g + d;
        float *yr = y + r * d;
#pragma omp simd
        for (int64_t i = 0; i < d; i++) yr[i] = g[i] * u[i] / (1.0f + zaya_vexpf(-g[i]));
    }
}

void zaya_swiglu_backward(float *dgu, const float *dy, const float *gu, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        const float *g = gu + r * 2 * d, *u = g + d, *dyr = dy + r * d;
        float *dg = dgu + r * 2 * d, *du = dg + d;
#pragma omp simd
        for (int64_t i = 0; i < d; i++) {
            float s = zaya_vsigmoidf(g[i]);
            du[i] = dyr[i] * g[i] * s;
            dg[i] = dyr[i] * u[i] * s * (1.0f + g[i] * (1.0f - s));
        }
    }
}

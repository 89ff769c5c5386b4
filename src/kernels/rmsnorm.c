/* RMSNorm: y = w * x * rstd, rstd = 1 / sqrt(mean(x^2) + eps), statistics in f32. */
#include <math.h>

#include "kernel_util.h"
#include "zaya/kernels.h"

void zaya_rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int64_t n, int64_t d, float eps) {
#pragma omp parallel for schedule(static) if (n * d >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        /* The simd reduction keeps one partial sum per lane: 16 interleaved sums of d/16 terms each,
         * well inside f32 accuracy for model widths. */
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int64_t i = 0; i < d; i++) ss += xr[i] * xr[i];
        float rs = 1.0f / sqrtf(ss / (float)d + eps);
        rstd[r] = rs;
#pragma omp simd
        for (int64_t i = 0; i < d; i++) yr[i] = xr[i] * rs * w[i];
    }
}

/* dx_j = rstd * (w_j dy_j - x_j * rstd^2 * mean_i(w_i dy_i x_i)); dw_i += sum_rows dy_i x_i rstd.
 * dw is accumulated in a second pass split by columns, so each thread owns its dw entries: no races
 * and the result does not depend on the thread count. */
void zaya_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd,
                           int64_t n, int64_t d) {
    const int par = n * d >= ZAYA_PAR_MIN_WORK;
#pragma omp parallel if (par)
    {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n; r++) {
            const float *xr = x + r * d, *dyr = dy + r * d;
            float *dxr = dx + r * d;
            float rs = rstd[r];
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t i = 0; i < d; i++) dot += w[i] * dyr[i] * xr[i];
            float c = rs * rs * dot / (float)d;
#pragma omp simd
            for (int64_t i = 0; i < d; i++) dxr[i] = rs * (w[i] * dyr[i] - xr[i] * c);
        }
        /* Column blocks of 64 floats (one cache line per 16) keep each block's dw in L1. */
        const int64_t cb = 64, nblk = (d + cb - 1) / cb;
#pragma omp for schedule(static)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * cb, c1 = c0 + cb < d ? c0 + cb : d;
            float acc[64] = {0};
            for (int64_t r = 0; r < n; r++) {
                const float *xr = x + r * d + c0, *dyr = dy + r * d + c0;
                float rs = rstd[r];
#pragma omp simd
                for (int64_t i = 0; i < c1 - c0; i++) acc[i] += dyr[i] * xr[i] * rs;
            }
            for (int64_t i = 0; i < c1 - c0; i++) dw[c0 + i] += acc[i];
        }
    }
}

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
 *
 * dw is accumulated in the same pass over x and dy as dx (one read of each instead of two): rows are
 * cut into a fixed number of chunks (independent of the thread count), each chunk sums into its own
 * partial vector, and the partials are added in chunk order — race-free, and bitwise the same for any
 * number of threads. Rows wider than the partial buffer fall back to a second, column-blocked pass. */
#define RMS_CHUNKS 8
#define RMS_MAX_FUSED_D 4096

static void dx_row(float *dxr, float *part, const float *dyr, const float *xr, const float *w, float rs, int64_t d) {
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t i = 0; i < d; i++) dot += w[i] * dyr[i] * xr[i];
    float c = rs * rs * dot / (float)d;
#pragma omp simd
    for (int64_t i = 0; i < d; i++) {
        dxr[i] = rs * (w[i] * dyr[i] - xr[i] * c);
        if (part) part[i] += dyr[i] * xr[i] * rs;
    }
}

void zaya_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd,
                           int64_t n, int64_t d) {
    const int par = n * d >= ZAYA_PAR_MIN_WORK;
    if (d <= RMS_MAX_FUSED_D) {
        static _Thread_local float partial[RMS_CHUNKS][RMS_MAX_FUSED_D];
        const int64_t chunks = n < RMS_CHUNKS ? n : RMS_CHUNKS;
        float (*part)[RMS_MAX_FUSED_D] = partial; /* the calling thread's buffer, shared by the team */
#pragma omp parallel for schedule(static) if (par)
        for (int64_t ch = 0; ch < chunks; ch++) {
            float *pc = part[ch];
            for (int64_t i = 0; i < d; i++) pc[i] = 0.0f;
            const int64_t r0 = n * ch / chunks, r1 = n * (ch + 1) / chunks;
            for (int64_t r = r0; r < r1; r++) dx_row(dx + r * d, pc, dy + r * d, x + r * d, w, rstd[r], d);
        }
        for (int64_t ch = 0; ch < chunks; ch++)
            for (int64_t i = 0; i < d; i++) dw[i] += part[ch][i];
        return;
    }
#pragma omp parallel if (par)
    {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n; r++) dx_row(dx + r * d, NULL, dy + r * d, x + r * d, w, rstd[r], d);
        /* Column blocks of 64 floats keep each block's dw in L1. */
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

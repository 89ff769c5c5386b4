/* Row softmax (max-subtracted, f32) and its backward. */
#include <math.h>

#include "kernel_util.h"
#include "zaya/kernels.h"

void zaya_softmax_forward(float *y, const float *x, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t i = 0; i < d; i++) m = xr[i] > m ? xr[i] : m;
        /* A row of -inf has no finite maximum; subtracting 0 then yields exp(-inf) = 0 and 0/0 =
         * NaN, which correctly flags the degenerate row. */
        if (m == -INFINITY) m = 0.0f;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < d; i++) {
            float e = zaya_vexpf(xr[i] - m);
            yr[i] = e;
            sum += e;
        }
        float inv = 1.0f / sum;
#pragma omp simd
        for (int64_t i = 0; i < d; i++) yr[i] *= inv;
    }
}

/* dx = y * (dy - sum(dy * y)). */
void zaya_softmax_backward(float *dx, const float *dy, const float *y, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        const float *yr = y + r * d, *dyr = dy + r * d;
        float *dxr = dx + r * d;
        float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
        for (int64_t i = 0; i < d; i++) dot += dyr[i] * yr[i];
#pragma omp simd
        for (int64_t i = 0; i < d; i++) dxr[i] = yr[i] * (dyr[i] - dot);
    }
}

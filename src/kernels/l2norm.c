/* L2 normalisation of each head to a fixed scale with a per-head multiplier (CCA's QK norm). */
#include <math.h>

#include "kernel_util.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

void zaya_l2norm_forward(float *y, float *inv_norm, const float *x, const float *mult, float scale, int64_t n,
                         int64_t heads, int64_t head_dim, float eps) {
    const int64_t rows = n * heads;
#pragma omp parallel for schedule(static) if (rows * head_dim >= ZAYA_PAR_MIN_WORK)
    for (int64_t rh = 0; rh < rows; rh++) {
        const float *xr = x + rh * head_dim;
        float *yr = y + rh * head_dim;
        float ss = 0.0f;
#pragma omp simd reduction(+ : ss)
        for (int64_t i = 0; i < head_dim; i++) ss += xr[i] * xr[i];
        float norm = sqrtf(ss);
        float inv = 1.0f / (norm > eps ? norm : eps);
        inv_norm[rh] = inv;
        float a = scale * (mult ? mult[rh % heads] : 1.0f) * inv;
#pragma omp simd
        for (int64_t i = 0; i < head_dim; i++) yr[i] = a * xr[i];
    }
}

/* With u = x / ||x||: y = s m u, dx = s m inv (dy - u (u . dy)) and dm += s inv (x . dy).
 * Where the norm was clamped to eps, inv is the constant 1/eps and dx = s m inv dy. dmult (at most
 * a few heads) is reduced in double per thread and added once per thread. */
#define L2NORM_MAX_HEADS 256
void zaya_l2norm_backward(float *dx, float *dmult, const float *dy, const float *x, const float *inv_norm,
                          const float *mult, float scale, int64_t n, int64_t heads, int64_t head_dim) {
    ZAYA_ASSERT(heads <= L2NORM_MAX_HEADS);
    const int64_t rows = n * heads;
#pragma omp parallel if (rows * head_dim >= ZAYA_PAR_MIN_WORK)
    {
        double dm[L2NORM_MAX_HEADS] = {0};
#pragma omp for schedule(static)
        for (int64_t rh = 0; rh < rows; rh++) {
            const float *xr = x + rh * head_dim, *dyr = dy + rh * head_dim;
            float *dxr = dx + rh * head_dim;
            int64_t h = rh % heads;
            float inv = inv_norm[rh];
            float a = scale * (mult ? mult[h] : 1.0f) * inv;
            float dot = 0.0f, ss = 0.0f;
#pragma omp simd reduction(+ : dot, ss)
            for (int64_t i = 0; i < head_dim; i++) {
                dot += xr[i] * dyr[i];
                ss += xr[i] * xr[i];
            }
            /* Unclamped rows have inv = 1/||x||; clamped ones have inv = 1/eps > 1/||x||, so
             * ||x|| * inv < 1. Only rows within ~1e-5 relative of the clamp (where the true
             * derivative jumps) can be classified either way. */
            float c = (sqrtf(ss) * inv > 0.99999f) ? inv * inv * dot : 0.0f;
#pragma omp simd
            for (int64_t i = 0; i < head_dim; i++) dxr[i] = a * (dyr[i] - xr[i] * c);
            dm[h] += (double)scale * inv * dot;
        }
        if (dmult) {
#pragma omp critical(zaya_l2norm_dmult)
            for (int64_t h = 0; h < heads; h++) dmult[h] += (float)dm[h];
        }
    }
}

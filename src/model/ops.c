/* Elementwise and reduction helpers of the model: residual-scale merges and bias-gradient sums. */
#include <omp.h>
#include <string.h>

#include "model/internal.h"

/* dst[j] += sum_i src[i, j]. Rows are split across threads into private partial sums that are then
 * added in a fixed order, so the result does not depend on scheduling. */
void zaya_ops_colsum_add(zaya_model *m, float *dst, const float *src, int64_t n, int64_t d) {
    zaya_model_work *w = m->work;
    ZAYA_ASSERT(d <= w->colsum_width);
    int nt = omp_get_max_threads();
    if (n < 64) nt = 1;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        float *part = w->colsum + (int64_t)t * w->colsum_width;
        memset(part, 0, (size_t)d * sizeof(float));
        int64_t r0 = n * t / T, r1 = n * (t + 1) / T;
        for (int64_t i = r0; i < r1; i++) {
            const float *row = src + i * d;
#pragma omp simd
            for (int64_t j = 0; j < d; j++) part[j] += row[j];
        }
#pragma omp barrier
#pragma omp for schedule(static)
        for (int64_t j = 0; j < d; j++) {
            float s = 0;
            for (int q = 0; q < T; q++) s += w->colsum[(int64_t)q * w->colsum_width + j];
            dst[j] += s;
        }
    }
}

void zaya_ops_merge_forward(float *y, const float *a, const float *ab, const float *as, const float *b,
                            const float *bb, const float *bs, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *ar = a + i * d, *br = b + i * d;
        float *yr = y + i * d;
#pragma omp simd
        for (int64_t j = 0; j < d; j++) yr[j] = (ar[j] + ab[j]) * as[j] + (br[j] + bb[j]) * bs[j];
    }
}

void zaya_ops_merge_backward(zaya_model *m, float *da, float *db, int accumulate_b, const float *dy, const float *a,
                             const float *ab, const float *as, const float *b, const float *bb, const float *bs,
                             float *dab, float *das, float *dbb, float *dbs, int64_t n, int64_t d) {
    zaya_model_work *w = m->work;
    ZAYA_ASSERT(d <= w->colsum_width);
    int nt = omp_get_max_threads();
    if (n < 64) nt = 1;
    /* Per-thread partial column sums of dy*(a+ab), dy*(b+bb) and dy over a contiguous block of rows,
     * then combined in thread order: row-major access and a deterministic result. */
    const int64_t stride = 3 * w->colsum_width;
#pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        float *p_as = w->colsum + (int64_t)t * stride, *p_bs = p_as + w->colsum_width, *p_dy = p_bs + w->colsum_width;
        memset(p_as, 0, (size_t)stride * sizeof(float));
        int64_t r0 = n * t / T, r1 = n * (t + 1) / T;
        for (int64_t i = r0; i < r1; i++) {
            const float *dyr = dy + i * d, *ar = a + i * d, *br = b + i * d;
            float *dar = da + i * d, *dbr = db + i * d;
#pragma omp simd
            for (int64_t j = 0; j < d; j++) {
                float g = dyr[j];
                dar[j] = g * as[j];
                dbr[j] = (accumulate_b ? dbr[j] : 0.0f) + g * bs[j];
                p_as[j] += g * (ar[j] + ab[j]);
                p_bs[j] += g * (br[j] + bb[j]);
                p_dy[j] += g;
            }
        }
#pragma omp barrier
#pragma omp for schedule(static)
        for (int64_t j = 0; j < d; j++) {
            float s_as = 0, s_bs = 0, s_dy = 0;
            for (int q = 0; q < T; q++) {
                const float *pq = w->colsum + (int64_t)q * stride;
                s_as += pq[j];
                s_bs += pq[w->colsum_width + j];
                s_dy += pq[2 * w->colsum_width + j];
            }
            das[j] += s_as;
            dab[j] += s_dy * as[j];
            dbs[j] += s_bs;
            dbb[j] += s_dy * bs[j];
        }
    }
}

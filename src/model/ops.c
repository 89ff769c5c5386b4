/* Elementwise and reduction helpers of the model: residual-scale merges and bias-gradient sums. */
#include <string.h>

#include "model/internal.h"

/* Column sums are parallel over blocks of 16 adjacent columns (one cache line) and sequential over
 * rows, so every sum is added in row order whatever the thread count: results are bit-identical for
 * any number of threads. */
#define COLS 16

void zaya_ops_colsum_add(zaya_model *m, float *dst, const float *src, int64_t n, int64_t d) {
    (void)m;
    const int64_t nb = (d + COLS - 1) / COLS;
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t j0 = b * COLS, w = d - j0 < COLS ? d - j0 : COLS;
        float acc[COLS] = {0};
        for (int64_t i = 0; i < n; i++) {
            const float *row = src + i * d + j0;
            for (int64_t j = 0; j < w; j++) acc[j] += row[j];
        }
        for (int64_t j = 0; j < w; j++) dst[j0 + j] += acc[j];
    }
}

void zaya_ops_merge_forward(float *y, const float *a, const float *ab, const float *as, const float *b,
                            const float *bb, const float *bs, int64_t n, int64_t d) {
    if (!as) { /* plain residual (zaya_residual_scaling false): no scale or bias tensors */
#pragma omp parallel for schedule(static) if (n * d > 32768)
        for (int64_t i = 0; i < n * d; i++) y[i] = a[i] + b[i];
        return;
    }
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
    (void)m;
    if (!as) { /* plain residual: y = a + b */
#pragma omp parallel for schedule(static) if (n * d > 32768)
        for (int64_t i = 0; i < n * d; i++) {
            da[i] = dy[i];
            db[i] = (accumulate_b ? db[i] : 0.0f) + dy[i];
        }
        return;
    }
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *dyr = dy + i * d;
        float *dar = da + i * d, *dbr = db + i * d;
#pragma omp simd
        for (int64_t j = 0; j < d; j++) {
            dar[j] = dyr[j] * as[j];
            dbr[j] = (accumulate_b ? dbr[j] : 0.0f) + dyr[j] * bs[j];
        }
    }
    /* d(as) = sum dy*(a+ab), d(ab) = as * sum dy, d(bs) = sum dy*(b+bb), d(bb) = bs * sum dy: column
     * blocks in parallel, rows in order (deterministic for any thread count). */
    const int64_t nb = (d + COLS - 1) / COLS;
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t blk = 0; blk < nb; blk++) {
        const int64_t j0 = blk * COLS, w = d - j0 < COLS ? d - j0 : COLS;
        float s_as[COLS] = {0}, s_bs[COLS] = {0}, s_dy[COLS] = {0};
        for (int64_t i = 0; i < n; i++) {
            const float *g = dy + i * d + j0, *ar = a + i * d + j0, *br = b + i * d + j0;
            for (int64_t j = 0; j < w; j++) {
                s_as[j] += g[j] * (ar[j] + ab[j0 + j]);
                s_bs[j] += g[j] * (br[j] + bb[j0 + j]);
                s_dy[j] += g[j];
            }
        }
        for (int64_t j = 0; j < w; j++) {
            das[j0 + j] += s_as[j];
            dab[j0 + j] += s_dy[j] * as[j0 + j];
            dbs[j0 + j] += s_bs[j];
            dbb[j0 + j] += s_dy[j] * bs[j0 + j];
        }
    }
}

void zaya_ops_split_qk(float *q, float *k, const float *qk, int64_t N, int64_t qd, int64_t kvd) {
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        memcpy(q + n * qd, qk + n * (qd + kvd), (size_t)qd * sizeof(float));
        memcpy(k + n * kvd, qk + n * (qd + kvd) + qd, (size_t)kvd * sizeof(float));
    }
}

void zaya_ops_merge_qk(float *qk, const float *q, const float *k, int64_t N, int64_t qd, int64_t kvd) {
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        memcpy(qk + n * (qd + kvd), q + n * qd, (size_t)qd * sizeof(float));
        memcpy(qk + n * (qd + kvd) + qd, k + n * kvd, (size_t)kvd * sizeof(float));
    }
}

/* Embedding lookup and its scatter-add backward. */
#include "kernel_util.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

#include <omp.h>

void zaya_embedding_forward(float *y, const float *table, const int32_t *ids, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d >= ZAYA_PAR_MIN_WORK)
    for (int64_t i = 0; i < n; i++) {
        ZAYA_ASSERT(ids[i] >= 0);
        memcpy(y + i * d, table + (int64_t)ids[i] * d, (size_t)d * sizeof(float));
    }
}

/* Repeated ids make a row-parallel scatter race. Instead each thread owns a slice of the embedding
 * columns and walks all tokens in order: no atomics, balanced however skewed the ids are, and the
 * summation order (token order) does not depend on the thread count. */
void zaya_embedding_backward(float *dtable, const float *dy, const int32_t *ids, int64_t n, int64_t d, int64_t vocab) {
    for (int64_t i = 0; i < n; i++) ZAYA_ASSERT(ids[i] >= 0 && ids[i] < vocab);
#pragma omp parallel if (n * d >= ZAYA_PAR_MIN_WORK)
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        /* Slices are multiples of 16 floats so no two threads share a cache line of a row. */
        int64_t chunk = ((d + nt - 1) / nt + 15) / 16 * 16;
        int64_t c0 = id * chunk, c1 = c0 + chunk < d ? c0 + chunk : d;
        for (int64_t i = 0; i < n && c0 < c1; i++) {
            float *dst = dtable + (int64_t)ids[i] * d;
            const float *src = dy + i * d;
#pragma omp simd
            for (int64_t c = c0; c < c1; c++) dst[c] += src[c];
        }
    }
}

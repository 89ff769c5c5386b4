/* Top-1 expert selection on biased scores, gate from the unbiased probability. */
#include "kernel_util.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

void zaya_top1_biased(int32_t *idx, float *gate, const float *probs, const float *bias, int64_t n, int64_t e) {
    ZAYA_ASSERT(e >= 1);
#pragma omp parallel for schedule(static) if (n * e >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        const float *p = probs + r * e;
        int64_t best = 0;
        float best_v = p[0] + (bias ? bias[0] : 0.0f);
        /* Strict '>' keeps the lowest index among ties. */
        for (int64_t j = 1; j < e; j++) {
            float v = p[j] + (bias ? bias[j] : 0.0f);
            if (v > best_v) {
                best_v = v;
                best = j;
            }
        }
        idx[r] = (int32_t)best;
        gate[r] = p[best];
    }
}

/* Top-1 expert selection on biased scores, gate from the unbiased probability. */
#include "kernel_util.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

/* argmax_j (p[j] + bias[j]); strict '>' keeps the lowest index among ties. */
static inline int64_t select_biased(const float *p, const float *bias, int64_t e) {
    int64_t best = 0;
    float best_v = p[0] + (bias ? bias[0] : 0.0f);
    for (int64_t j = 1; j < e; j++) {
        float v = p[j] + (bias ? bias[j] : 0.0f);
        if (v > best_v) {
            best_v = v;
            best = j;
        }
    }
    return best;
}

void zaya_top1_biased_ld(int32_t *idx, float *gate, const float *probs, int64_t ld, const float *bias, int64_t n,
                         int64_t e) {
    ZAYA_ASSERT(e >= 1 && ld >= e);
#pragma omp parallel for schedule(static) if (n * e >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        int64_t best = select_biased(probs + r * ld, bias, e);
        idx[r] = (int32_t)best;
        gate[r] = probs[r * ld + best];
    }
}

void zaya_top1_biased(int32_t *idx, float *gate, const float *probs, const float *bias, int64_t n, int64_t e) {
    zaya_top1_biased_ld(idx, gate, probs, e, bias, n, e);
}

void zaya_top1_biased_count_ld(int64_t *counts, const float *probs, int64_t ld, const float *bias, int64_t n, int64_t e) {
    ZAYA_ASSERT(e >= 1 && ld >= e);
    for (int64_t j = 0; j < e; j++) counts[j] = 0;
    for (int64_t r = 0; r < n; r++) counts[select_biased(probs + r * ld, bias, e)]++;
}

void zaya_top1_biased_count(int64_t *counts, const float *probs, const float *bias, int64_t n, int64_t e) {
    zaya_top1_biased_count_ld(counts, probs, e, bias, n, e);
}

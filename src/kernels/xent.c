/* Fused softmax cross-entropy over the vocabulary, forward and backward in place, row by row. */
#include <math.h>

#include "kernel_util.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

/* Per row: m = max, e_i = exp(x_i - m), S = sum e_i (f32, one partial sum per vector lane, so each
 * lane adds ~V/16 terms that are all <= 1), loss = m + log S - x_target. The gradient
 * (softmax - onehot) * grad_scale overwrites the row; e_i is stored in place during the sum pass
 * so exp is evaluated once per logit. Three sweeps over a row that mostly stays in L2. */
int64_t zaya_xent_forward_backward(float *logits, float *losses, const int32_t *targets, int64_t n, int64_t V,
                                   float grad_scale) {
    int64_t counted = 0;
    const int write_grad = grad_scale != 0.0f;
#pragma omp parallel for schedule(static) reduction(+ : counted) if (n * V >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        float *x = logits + r * V;
        int32_t tgt = targets[r];
        ZAYA_ASSERT(tgt < V);
        if (tgt < 0) {
            losses[r] = 0.0f;
            if (write_grad) memset(x, 0, (size_t)V * sizeof(float));
            continue;
        }
        counted++;
        float xt = x[tgt];
        float m = -INFINITY;
#pragma omp simd reduction(max : m)
        for (int64_t i = 0; i < V; i++) m = x[i] > m ? x[i] : m;
        float sum = 0.0f;
        if (write_grad) {
#pragma omp simd reduction(+ : sum)
            for (int64_t i = 0; i < V; i++) {
                float e = zaya_vexpf(x[i] - m);
                x[i] = e;
                sum += e;
            }
            float scale = grad_scale / sum;
#pragma omp simd
            for (int64_t i = 0; i < V; i++) x[i] *= scale;
            x[tgt] -= grad_scale;
        } else {
#pragma omp simd reduction(+ : sum)
            for (int64_t i = 0; i < V; i++) sum += zaya_vexpf(x[i] - m);
        }
        /* sum >= 1 (the max contributes exp(0)), so the log is finite for finite logits. */
        losses[r] = (float)((double)m + log((double)sum) - (double)xt);
    }
    return counted;
}

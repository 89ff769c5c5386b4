/* The optimizer's elementwise updates and its deterministic sum of squares (zaya/model_ops.h):
 * src/optim runs them per unit; the CPU compute backend exposes them as operations. */
#include <math.h>

#include "zaya/model_ops.h"

/* Fixed blocks, each summed with 8 lanes, added in order: the result depends on neither the thread
 * count nor which thread runs it. */
double zaya_sumsq_f64(const float *x, int64_t n) {
    double t = 0;
    for (int64_t i0 = 0; i0 < n; i0 += ZAYA_SUMSQ_BLOCK) {
        const int64_t i1 = i0 + ZAYA_SUMSQ_BLOCK < n ? i0 + ZAYA_SUMSQ_BLOCK : n;
        double s[8] = {0};
        int64_t i = i0;
        for (; i + 8 <= i1; i += 8)
            for (int j = 0; j < 8; j++) s[j] += (double)x[i + j] * (double)x[i + j];
        for (; i < i1; i++) s[0] += (double)x[i] * (double)x[i];
        t += ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    }
    return t;
}

/* torch.optim.AdamW's operation order, so that results agree to rounding: decay, m lerp, v update,
 * bias-corrected step. */
void zaya_adamw_update(float *p, const float *grad, float *m, float *v, int64_t n, float gs, float w1, float b2,
                       float w2, float neg_step, float bc2_sqrt, float eps, float decay) {
    for (int64_t j = 0; j < n; j++) {
        float gj = grad[j] * gs;
        float mj = m[j] + w1 * (gj - m[j]);
        float vj = v[j] * b2 + w2 * gj * gj;
        m[j] = mj;
        v[j] = vj;
        float denom = sqrtf(vj) / bc2_sqrt + eps;
        p[j] = p[j] * decay + neg_step * (mj / denom);
    }
}

void zaya_muon_momentum(float *u, float *buf, const float *g, int64_t n, float gs, float beta, float w, int nesterov) {
    for (int64_t k = 0; k < n; k++) {
        float gk = g[k] * gs;
        float mk = buf[k] + w * (gk - buf[k]); /* lerp(buf, g, 1 - beta) */
        buf[k] = mk;
        u[k] = nesterov ? gk + beta * (mk - gk) : mk; /* lerp(g, buf, beta) */
    }
}

void zaya_muon_apply(float *p, const float *x, int64_t n, float decay, float neg) {
    for (int64_t k = 0; k < n; k++) p[k] = p[k] * decay + neg * x[k];
}

/* Muon over the owned MUON units: Nesterov momentum, Newton-Schulz orthogonalisation of the whole
 * matrix through zaya_matmul, RMS-matched scaled update with decoupled weight decay. */
#include <math.h>

#include "optim/internal.h"
#include "zaya/bf16.h"

/* Quintic coefficients chosen (KellerJordan/Muon) to maximise the slope at 0 while keeping the
 * iteration inside ~[0.7, 1.2] for singular values already near 1. */
#define NS_A 3.4445f
#define NS_B (-4.7750f)
#define NS_C 2.0315f

static void mm(zaya_dtype dt, int trans_b, int64_t m, int64_t n, int64_t k, const void *a, const void *b, float *c,
               float alpha, float beta) {
    zaya_matmul_desc d = {0};
    d.dtype = dt;
    d.trans_b = trans_b;
    d.m = m;
    d.n = n;
    d.k = k;
    d.alpha = alpha;
    d.beta = beta;
    zaya_status s = zaya_matmul(&d, a, b, c);
    ZAYA_ASSERT(s == ZAYA_OK);
}

static void scale_into(float *dst, const float *src, float s, int64_t n) {
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (int64_t i = 0; i < n; i++) dst[i] = s * src[i];
}

/* X (m x n, m <= n) -> approximately U V^T of X's SVD. Returns the buffer holding the result (ns_x or
 * ns_y). */
static float *newton_schulz(zaya_optim *o, int64_t m, int64_t n) {
    float *X = o->ns_x, *Y = o->ns_y, *A = o->ns_a, *B = o->ns_b;
    const int64_t mn = m * n, mm2 = m * m;
    const float denom = (float)(sqrt(zaya_optim_sumsq(X, mn, o->partials)) + 1e-7);
#pragma omp parallel for schedule(static) if (mn >= 65536)
    for (int64_t i = 0; i < mn; i++) X[i] = X[i] / denom;
    const int bf16 = o->cfg.muon_ns_dtype == ZAYA_DTYPE_BF16;
    for (int it = 0; it < o->cfg.muon_ns_steps; it++) {
        if (bf16) {
            zaya_f32_to_bf16_n(o->ns_xh, X, (size_t)mn);
            mm(ZAYA_DTYPE_BF16, 1, m, m, n, o->ns_xh, o->ns_xh, A, 1.0f, 0.0f); /* A = X X^T */
            zaya_f32_to_bf16_n(o->ns_ah, A, (size_t)mm2);
            scale_into(B, A, NS_B, mm2);
            mm(ZAYA_DTYPE_BF16, 0, m, m, m, o->ns_ah, o->ns_ah, B, NS_C, 1.0f); /* B = b A + c A A */
            zaya_f32_to_bf16_n(o->ns_bh, B, (size_t)mm2);
            scale_into(Y, X, NS_A, mn);
            mm(ZAYA_DTYPE_BF16, 0, m, n, m, o->ns_bh, o->ns_xh, Y, 1.0f, 1.0f); /* Y = a X + B X */
        } else {
            mm(ZAYA_DTYPE_F32, 1, m, m, n, X, X, A, 1.0f, 0.0f);
            scale_into(B, A, NS_B, mm2);
            mm(ZAYA_DTYPE_F32, 0, m, m, m, A, A, B, NS_C, 1.0f);
            scale_into(Y, X, NS_A, mn);
            mm(ZAYA_DTYPE_F32, 0, m, n, m, B, X, Y, 1.0f, 1.0f);
        }
        float *t = X;
        X = Y;
        Y = t;
    }
    return X;
}

static void check_fits(const zaya_optim *o, int64_t rows, int64_t cols) {
    int64_t mn = rows * cols, m = rows < cols ? rows : cols, cap_mn = 0, cap_mm = 0;
    for (int i = 0; i < o->plan.nunits; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner != o->rank || u->kind != ZAYA_UNIT_MUON) continue;
        int64_t um = u->rows < u->cols ? u->rows : u->cols;
        if (u->numel > cap_mn) cap_mn = u->numel;
        if (um * um > cap_mm) cap_mm = um * um;
    }
    ZAYA_ASSERT(mn <= cap_mn && m * m <= cap_mm);
}

void zaya_muon_orthogonalize(zaya_optim *o, const float *g, int64_t rows, int64_t cols, float *out) {
    check_fits(o, rows, cols);
    const int tr = rows > cols;
    const int64_t m = tr ? cols : rows, n = tr ? rows : cols;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) o->ns_x[tr ? j * rows + i : i * cols + j] = g[i * cols + j];
    const float *X = newton_schulz(o, m, n);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) out[i * cols + j] = X[tr ? j * rows + i : i * cols + j];
}

void zaya_optim_step_muon(zaya_optim *o, float *params, const float *grads, double lr, double grad_scale) {
    const zaya_optim_config *c = &o->cfg;
    o->muon_steps++;
    const float beta = (float)c->muon_momentum, w = (float)(1.0 - c->muon_momentum), gs = (float)grad_scale;
    const int nesterov = c->muon_nesterov;
    const double mlr = lr * c->muon_lr_scale;
    for (int i = 0; i < o->plan.nunits; i++) {
        const zaya_optim_unit *u = &o->plan.units[i];
        if (u->owner != o->rank || u->kind != ZAYA_UNIT_MUON) continue;
        const int64_t r = u->rows, cc = u->cols;
        const int tr = r > cc; /* Newton-Schulz on the wide orientation: the Gram matrix is the small one */
        float *p = params + u->offset, *buf = o->momentum[i], *X = o->ns_x;
        const float *g = grads + u->offset;
#pragma omp parallel for schedule(static) if (u->numel >= 65536)
        for (int64_t a = 0; a < r; a++)
            for (int64_t b = 0; b < cc; b++) {
                const int64_t k = a * cc + b;
                float gk = g[k] * gs;
                float mk = buf[k] + w * (gk - buf[k]);
                buf[k] = mk;
                float uk = nesterov ? gk + beta * (mk - gk) : mk;
                X[tr ? b * r + a : k] = uk;
            }
        const float *O = newton_schulz(o, tr ? cc : r, tr ? r : cc);
        const float decay = u->decay ? (float)(1.0 - mlr * c->weight_decay) : 1.0f;
        const float neg = (float)(-mlr * 0.2 * sqrt((double)(r > cc ? r : cc)));
#pragma omp parallel for schedule(static) if (u->numel >= 65536)
        for (int64_t a = 0; a < r; a++)
            for (int64_t b = 0; b < cc; b++) {
                const int64_t k = a * cc + b;
                p[k] = p[k] * decay + neg * O[tr ? b * r + a : k];
            }
    }
}

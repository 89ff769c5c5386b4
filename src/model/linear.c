/* Linear layers in the model's matmul dtype. f32: straight oneDNN calls. bf16: operands are rounded
 * into staging buffers (weights come from the bf16 shadow refreshed after each optimizer step) and
 * accumulated in f32 — the usual mixed-precision recipe with f32 master weights.
 *
 * The expert variants serve GEMMs whose token count changes every step (the rows routed to one
 * expert): their primitive leaves that dimension to run time, so routing never creates primitives
 * in the training loop (with fixed shapes each new count cost a primitive creation, ~1 ms, and the
 * cache grew by ~150 entries per step at zaya1-tiny's shapes). */
#include <string.h>

#include "model/internal.h"
#include "zaya/bf16.h"

static const uint16_t *shadow_of(const zaya_model *m, const float *W) {
    ZAYA_ASSERT(W >= m->params && W < m->params + m->nfloats);
    return m->params_bf16 + (W - m->params);
}

static const uint16_t *stage(zaya_model *m, uint16_t *buf, const float *x, int64_t count) {
    ZAYA_ASSERT(count <= m->work->bf_cap);
    const uint64_t t0 = m->prof ? zaya_now_ns() : 0;
    zaya_f32_to_bf16_n(buf, x, (size_t)count);
    if (m->prof && m->prof_phase >= 0) m->prof->stage_s[m->prof_pass][m->prof_phase] += (double)(zaya_now_ns() - t0) * 1e-9;
    return buf;
}

/* The profile's matmul time and FLOPs of one call that started at t0 (zaya_model_profile_attach). */
static void charge(zaya_model *m, uint64_t t0, int64_t n, int64_t in, int64_t out) {
    if (!m->prof || m->prof_phase < 0) return;
    m->prof->gemm_s[m->prof_pass][m->prof_phase] += (double)(zaya_now_ns() - t0) * 1e-9;
    m->prof->flop[m->prof_pass][m->prof_phase] += 2.0 * (double)n * (double)in * (double)out;
}

/* C = op(A) op(B) (+ C) in the model's dtype; `dyn` names the dimensions left to run time. */
static void gemm(const zaya_model *m, int dyn, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *a,
                 const void *b, float *c, float beta) {
    zaya_matmul_dynamic(m->dtype, dyn, ta, tb, M, N, K, a, b, c, beta);
}

/* Rows [0, n) of x [n, in] into the zero-padded [ZAYA_EXPERT_MIN_ROWS, in] copy. */
static const float *pad_rows(zaya_model *m, const float *x, int64_t n, int64_t in) {
    float *p = m->work->pad_in;
    memcpy(p, x, sizeof(float) * (size_t)(n * in));
    memset(p + n * in, 0, sizeof(float) * (size_t)((ZAYA_EXPERT_MIN_ROWS - n) * in));
    return p;
}

static void lin_forward(zaya_model *m, int vary, float *y, const float *x, const float *W, int64_t n, int64_t in,
                        int64_t out, float beta);
static void lin_backward_input(zaya_model *m, int vary, float *dx, const float *dy, const float *W, int64_t n,
                               int64_t in, int64_t out, float beta);

/* An expert call below ZAYA_EXPERT_MIN_ROWS rows (beta 0): the padded rows through the same kernel. */
static void lin_padded(zaya_model *m, int backward, float *y, const float *x, const float *W, int64_t n, int64_t in,
                       int64_t out) {
    const int64_t kx = backward ? out : in, ky = backward ? in : out;
    const float *xp = pad_rows(m, x, n, kx);
    if (backward) lin_backward_input(m, 1, m->work->pad_out, xp, W, ZAYA_EXPERT_MIN_ROWS, in, out, 0.0f);
    else lin_forward(m, 1, m->work->pad_out, xp, W, ZAYA_EXPERT_MIN_ROWS, in, out, 0.0f);
    memcpy(y, m->work->pad_out, sizeof(float) * (size_t)(n * ky));
}

static void lin_forward(zaya_model *m, int vary, float *y, const float *x, const float *W, int64_t n, int64_t in,
                        int64_t out, float beta) {
    if (n == 0) return;
    if (vary && n < ZAYA_EXPERT_MIN_ROWS) {
        lin_padded(m, 0, y, x, W, n, in, out);
        return;
    }
    const uint64_t t0 = m->prof ? zaya_now_ns() : 0;
    const int dyn = vary ? ZAYA_MATMUL_DYN_M : 0;
    if (m->dtype == ZAYA_DTYPE_F32) gemm(m, dyn, 0, 1, n, out, in, x, W, y, beta);
    else gemm(m, dyn, 0, 1, n, out, in, stage(m, m->work->bf_a, x, n * in), shadow_of(m, W), y, beta);
    charge(m, t0, n, in, out);
}

static void lin_backward_input(zaya_model *m, int vary, float *dx, const float *dy, const float *W, int64_t n,
                               int64_t in, int64_t out, float beta) {
    if (n == 0) return;
    if (vary && n < ZAYA_EXPERT_MIN_ROWS) {
        lin_padded(m, 1, dx, dy, W, n, in, out);
        return;
    }
    const uint64_t t0 = m->prof ? zaya_now_ns() : 0;
    const int dyn = vary ? ZAYA_MATMUL_DYN_M : 0;
    if (m->dtype == ZAYA_DTYPE_F32) gemm(m, dyn, 0, 0, n, in, out, dy, W, dx, beta);
    else gemm(m, dyn, 0, 0, n, in, out, stage(m, m->work->bf_a, dy, n * out), shadow_of(m, W), dx, beta);
    charge(m, t0, n, in, out);
}

static void lin_backward_weight(zaya_model *m, int vary, float *dW, const float *dy, const float *x, int64_t n,
                                int64_t in, int64_t out) {
    if (n == 0) return;
    const uint64_t t0 = m->prof ? zaya_now_ns() : 0;
    const int dyn = vary ? ZAYA_MATMUL_DYN_K : 0;
    if (m->dtype == ZAYA_DTYPE_F32) {
        gemm(m, dyn, 1, 0, out, in, n, dy, x, dW, 1.0f);
    } else {
        const uint16_t *db = stage(m, m->work->bf_a, dy, n * out);
        gemm(m, dyn, 1, 0, out, in, n, db, stage(m, m->work->bf_b, x, n * in), dW, 1.0f);
    }
    charge(m, t0, n, in, out);
}

/* dx (=, or += with beta 1) = dy W and dW += dy^T x, dy rounded to bf16 once for both products. */
static void lin_backward(zaya_model *m, int vary, float *dx, float beta, float *dW, const float *dy, const float *x,
                         const float *W, int64_t n, int64_t in, int64_t out) {
    if (n == 0) return;
    if (vary && n < ZAYA_EXPERT_MIN_ROWS) { /* the padded input-gradient call, then the weight gradient */
        lin_backward_input(m, 1, dx, dy, W, n, in, out, 0.0f);
        lin_backward_weight(m, 1, dW, dy, x, n, in, out);
        return;
    }
    const uint64_t t0 = m->prof ? zaya_now_ns() : 0;
    const int dm = vary ? ZAYA_MATMUL_DYN_M : 0, dk = vary ? ZAYA_MATMUL_DYN_K : 0;
    if (m->dtype == ZAYA_DTYPE_F32) {
        gemm(m, dm, 0, 0, n, in, out, dy, W, dx, beta);
        gemm(m, dk, 1, 0, out, in, n, dy, x, dW, 1.0f);
    } else {
        const uint16_t *db = stage(m, m->work->bf_a, dy, n * out);
        gemm(m, dm, 0, 0, n, in, out, db, shadow_of(m, W), dx, beta);
        gemm(m, dk, 1, 0, out, in, n, db, stage(m, m->work->bf_b, x, n * in), dW, 1.0f);
    }
    charge(m, t0, 2 * n, in, out);
}

void zaya_lin_forward(zaya_model *m, float *y, const float *x, const float *W, int64_t n, int64_t in, int64_t out,
                      float beta) {
    lin_forward(m, 0, y, x, W, n, in, out, beta);
}

void zaya_lin_forward2(zaya_model *m, float *y1, const float *W1, int64_t out1, float *y2, const float *W2,
                       int64_t out2, const float *x, int64_t n, int64_t in) {
    if (n == 0) return;
    const uint64_t t0 = m->prof ? zaya_now_ns() : 0;
    if (m->dtype == ZAYA_DTYPE_F32) {
        gemm(m, 0, 0, 1, n, out1, in, x, W1, y1, 0.0f);
        gemm(m, 0, 0, 1, n, out2, in, x, W2, y2, 0.0f);
    } else {
        const uint16_t *xb = stage(m, m->work->bf_a, x, n * in);
        gemm(m, 0, 0, 1, n, out1, in, xb, shadow_of(m, W1), y1, 0.0f);
        gemm(m, 0, 0, 1, n, out2, in, xb, shadow_of(m, W2), y2, 0.0f);
    }
    charge(m, t0, n, in, out1 + out2);
}

void zaya_lin_backward(zaya_model *m, float *dx, float beta, float *dW, const float *dy, const float *x, const float *W,
                       int64_t n, int64_t in, int64_t out) {
    lin_backward(m, 0, dx, beta, dW, dy, x, W, n, in, out);
}
void zaya_lin_expert_backward(zaya_model *m, float *dx, float *dW, const float *dy, const float *x, const float *W,
                              int64_t n, int64_t in, int64_t out) {
    lin_backward(m, 1, dx, 0.0f, dW, dy, x, W, n, in, out);
}

void zaya_lin_expert_forward(zaya_model *m, float *y, const float *x, const float *W, int64_t n, int64_t in,
                             int64_t out) {
    lin_forward(m, 1, y, x, W, n, in, out, 0.0f);
}

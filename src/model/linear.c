/* Linear layers in the model's matmul dtype. f32: straight oneDNN calls. bf16: operands are rounded
 * into staging buffers (weights come from the bf16 shadow refreshed after each optimizer step) and
 * accumulated in f32 — the usual mixed-precision recipe with f32 master weights. */
#include "model/internal.h"
#include "zaya/bf16.h"

static const uint16_t *shadow_of(const zaya_model *m, const float *W) {
    ZAYA_ASSERT(W >= m->params && W < m->params + m->nfloats);
    return m->params_bf16 + (W - m->params);
}

static const uint16_t *stage(zaya_model *m, uint16_t *buf, const float *x, int64_t count) {
    ZAYA_ASSERT(count <= m->work->bf_cap);
    zaya_f32_to_bf16_n(buf, x, (size_t)count);
    return buf;
}

void zaya_lin_forward(zaya_model *m, float *y, const float *x, const float *W, int64_t n, int64_t in, int64_t out,
                      float beta) {
    if (n == 0) return;
    if (m->dtype == ZAYA_DTYPE_F32) {
        zaya_matmul_f32(0, 1, n, out, in, x, W, y, beta);
    } else {
        const uint16_t *xb = stage(m, m->work->bf_a, x, n * in);
        zaya_matmul_bf16(0, 1, n, out, in, xb, shadow_of(m, W), y, beta);
    }
}

void zaya_lin_backward_input(zaya_model *m, float *dx, const float *dy, const float *W, int64_t n, int64_t in,
                             int64_t out, float beta) {
    if (n == 0) return;
    if (m->dtype == ZAYA_DTYPE_F32) {
        zaya_matmul_f32(0, 0, n, in, out, dy, W, dx, beta);
    } else {
        const uint16_t *db = stage(m, m->work->bf_a, dy, n * out);
        zaya_matmul_bf16(0, 0, n, in, out, db, shadow_of(m, W), dx, beta);
    }
}

void zaya_lin_backward_weight(zaya_model *m, float *dW, const float *dy, const float *x, int64_t n, int64_t in,
                              int64_t out) {
    if (n == 0) return;
    if (m->dtype == ZAYA_DTYPE_F32) {
        zaya_matmul_f32(1, 0, out, in, n, dy, x, dW, 1.0f);
    } else {
        const uint16_t *db = stage(m, m->work->bf_a, dy, n * out);
        const uint16_t *xb = stage(m, m->work->bf_b, x, n * in);
        zaya_matmul_bf16(1, 0, out, in, n, db, xb, dW, 1.0f);
    }
}

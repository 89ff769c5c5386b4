/* Projections of the inference engine: y[n, out] = x[n, in] W^T with W [out, in] from the model's
 * parameter block (f32) or its bf16 shadow. Few rows (decode) are bound by reading W once from
 * memory: a tight row-blocked GEMV reads each weight row once for all rows of x. Otherwise oneDNN. */
#include "infer/internal.h"
#include "zaya/bf16.h"

static inline float bf16_at(const uint16_t *w, int64_t i) {
    uint32_t u = (uint32_t)w[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* n <= ZAYA_INFER_GEMV_ROWS rows; x already rounded to bf16 values when W is bf16 (as oneDNN does). */
static void gemv_f32(float *y, const float *x, const float *W, int64_t n, int64_t in, int64_t out) {
#pragma omp parallel for schedule(static) if (out * in > 65536)
    for (int64_t o = 0; o < out; o++) {
        const float *w = W + o * in;
        for (int64_t r = 0; r < n; r++) {
            const float *xr = x + r * in;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int64_t i = 0; i < in; i++) acc += w[i] * xr[i];
            y[r * out + o] = acc;
        }
    }
}

static void gemv_bf16(float *y, const float *x, const uint16_t *W, int64_t n, int64_t in, int64_t out) {
#pragma omp parallel for schedule(static) if (out * in > 65536)
    for (int64_t o = 0; o < out; o++) {
        const uint16_t *w = W + o * in;
        for (int64_t r = 0; r < n; r++) {
            const float *xr = x + r * in;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int64_t i = 0; i < in; i++) acc += bf16_at(w, i) * xr[i];
            y[r * out + o] = acc;
        }
    }
}

void zaya_infer_lin(zaya_infer *e, float *y, const float *x, const float *W, int64_t n, int64_t in, int64_t out) {
    if (n == 0) return;
    const zaya_model *m = e->m;
    const int small = e->gemv && n <= ZAYA_INFER_GEMV_ROWS;
    if (m->dtype == ZAYA_DTYPE_F32) {
        if (small) gemv_f32(y, x, W, n, in, out);
        else zaya_matmul_f32(0, 1, n, out, in, x, W, y, 0.0f);
        return;
    }
    ZAYA_ASSERT(W >= m->params && W < m->params + m->nfloats && n * in <= e->bf_cap);
    const uint16_t *Wb = m->params_bf16 + (W - m->params);
    if (small) {
        /* round the activations as the bf16 matmul would, keep them as f32 for the dot products */
        for (int64_t i = 0; i < n * in; i++) e->xr[i] = zaya_bf16_to_f32(zaya_f32_to_bf16(x[i]));
        gemv_bf16(y, e->xr, Wb, n, in, out);
    } else {
        zaya_f32_to_bf16_n(e->bf, x, (size_t)(n * in));
        zaya_matmul_bf16(0, 1, n, out, in, e->bf, Wb, y, 0.0f);
    }
}

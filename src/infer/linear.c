/* Projections of the inference engine: y[n, out] = x[n, in] W^T with W [out, in] from the weight
 * store (f32, or bf16 read as bf16 with f32 accumulation). Few rows (decode) are bound by reading W once from
 * memory: a tight row-blocked GEMV reads each weight row once for all rows of x. Otherwise oneDNN. */
#include "infer/internal.h"
#include "zaya/bf16.h"
#include "zaya/matmul.h"

#if defined(__AVX512BF16__) && defined(__AVX512F__)
#include <immintrin.h>
#define HAVE_DPBF16 1
/* bf16 dot product with f32 accumulation, 32 products per instruction (AVX512-BF16). */
static float dot_bf16(const uint16_t *w, const uint16_t *x, int64_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(w + i), (__m512bh)_mm512_loadu_si512(x + i));
        a1 = _mm512_dpbf16_ps(a1, (__m512bh)_mm512_loadu_si512(w + i + 32), (__m512bh)_mm512_loadu_si512(x + i + 32));
    }
    for (; i + 32 <= n; i += 32)
        a0 = _mm512_dpbf16_ps(a0, (__m512bh)_mm512_loadu_si512(w + i), (__m512bh)_mm512_loadu_si512(x + i));
    float s = _mm512_reduce_add_ps(_mm512_add_ps(a0, a1));
    for (; i < n; i++) s += zaya_bf16_to_f32(w[i]) * zaya_bf16_to_f32(x[i]);
    return s;
}

/* Four weight rows (ld apart) against one x: the same sums as dot_bf16 row by row (same order), but
 * four independent load streams in flight and prefetched 2 KiB ahead, which a single core needs
 * to approach the memory bandwidth (measured here: about +30% over one row at a time). */
static void dot4_bf16(float *y, const uint16_t *w, int64_t ld, const uint16_t *x, int64_t n) {
    __m512 a[4][2];
    for (int k = 0; k < 4; k++) a[k][0] = a[k][1] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512bh x0 = (__m512bh)_mm512_loadu_si512(x + i), x1 = (__m512bh)_mm512_loadu_si512(x + i + 32);
        for (int k = 0; k < 4; k++) {
            _mm_prefetch((const char *)(w + k * ld + i + 1024), _MM_HINT_T0);
            _mm_prefetch((const char *)(w + k * ld + i + 1024 + 32), _MM_HINT_T0);
            a[k][0] = _mm512_dpbf16_ps(a[k][0], (__m512bh)_mm512_loadu_si512(w + k * ld + i), x0);
            a[k][1] = _mm512_dpbf16_ps(a[k][1], (__m512bh)_mm512_loadu_si512(w + k * ld + i + 32), x1);
        }
    }
    for (; i + 32 <= n; i += 32) {
        const __m512bh x0 = (__m512bh)_mm512_loadu_si512(x + i);
        for (int k = 0; k < 4; k++)
            a[k][0] = _mm512_dpbf16_ps(a[k][0], (__m512bh)_mm512_loadu_si512(w + k * ld + i), x0);
    }
    for (int k = 0; k < 4; k++) {
        float s = _mm512_reduce_add_ps(_mm512_add_ps(a[k][0], a[k][1]));
        for (int64_t j = i; j < n; j++) s += zaya_bf16_to_f32(w[k * ld + j]) * zaya_bf16_to_f32(x[j]);
        y[k] = s;
    }
}
#endif

#ifndef HAVE_DPBF16
static inline float bf16_at(const uint16_t *w, int64_t i) {
    uint32_t u = (uint32_t)w[i] << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#endif

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

/* xb: x in bf16; xf: the same values as f32 (portable path). */
static void gemv_bf16(float *y, const uint16_t *xb, const float *xf, const uint16_t *W, int64_t n, int64_t in,
                      int64_t out) {
#ifdef HAVE_DPBF16
    if (n == 1 && out % 4 == 0) { /* batch-1 decode */
        (void)xf;
#pragma omp parallel for schedule(static) if (out * in > 65536)
        for (int64_t o = 0; o < out; o += 4) dot4_bf16(y + o, W + o * in, in, xb, in);
        return;
    }
#endif
#pragma omp parallel for schedule(static) if (out * in > 65536)
    for (int64_t o = 0; o < out; o++) {
        const uint16_t *w = W + o * in;
        for (int64_t r = 0; r < n; r++) {
#ifdef HAVE_DPBF16
            (void)xf;
            y[r * out + o] = dot_bf16(w, xb + r * in, in);
#else
            (void)xb;
            const float *xr = xf + r * in;
            float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
            for (int64_t i = 0; i < in; i++) acc += bf16_at(w, i) * xr[i];
            y[r * out + o] = acc;
#endif
        }
    }
}

const void *zaya_infer_mat_at(const zaya_infer *e, const void *W, int64_t index, int64_t per) {
    const int64_t esz = e->w->dtype == ZAYA_DTYPE_BF16 ? 2 : 4;
    return (const char *)W + index * per * esz;
}

void zaya_infer_lin(zaya_infer *e, float *y, const float *x, const void *W, int64_t n, int64_t in, int64_t out) {
    if (n == 0) return;
    const int small = e->gemv && n <= ZAYA_INFER_GEMV_ROWS;
    if (e->w->dtype == ZAYA_DTYPE_F32) {
        e->bytes_read += out * in * (int64_t)sizeof(float);
        if (small) gemv_f32(y, x, W, n, in, out);
        else zaya_matmul_f32(0, 1, n, out, in, x, W, y, 0.0f);
        return;
    }
    ZAYA_ASSERT(n * in <= e->bf_cap);
    e->bytes_read += out * in * (int64_t)sizeof(uint16_t);
    const uint16_t *Wb = W;
    if (small) {
        /* round the activations as the bf16 matmul would */
        for (int64_t i = 0; i < n * in; i++) {
            e->bf[i] = zaya_f32_to_bf16(x[i]);
            e->xr[i] = zaya_bf16_to_f32(e->bf[i]);
        }
        gemv_bf16(y, e->bf, e->xr, Wb, n, in, out);
    } else {
        zaya_f32_to_bf16_n(e->bf, x, (size_t)(n * in));
        zaya_matmul_bf16(0, 1, n, out, in, e->bf, Wb, y, 0.0f);
    }
}

void zaya_infer_lin2(zaya_infer *e, float *y, const float *x, const void *W1, int64_t out1, const void *W2,
                     int64_t out2, int64_t n, int64_t in) {
    if (W2 == zaya_infer_mat_at(e, W1, out1, in)) { /* adjacent (a model's fused layout) */
        zaya_infer_lin(e, y, x, W1, n, in, out1 + out2);
        return;
    }
    zaya_infer_lin(e, e->pa, x, W1, n, in, out1);
    zaya_infer_lin(e, e->pb, x, W2, n, in, out2);
    const int64_t o = out1 + out2;
    for (int64_t r = 0; r < n; r++) {
        memcpy(y + r * o, e->pa + r * out1, (size_t)out1 * sizeof(float));
        memcpy(y + r * o + out1, e->pb + r * out2, (size_t)out2 * sizeof(float));
    }
}

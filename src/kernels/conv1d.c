/* Causal depthwise and grouped 1-D convolutions along time, PyTorch Conv1d semantics:
 * cross-correlation over the input left-padded with `pad` zero rows, bias at every output row.
 * Activations are [B, t, C] with channels contiguous, so the inner loops run over channels. */
#include "kernel_util.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

/* Output rows per task in the grouped kernels: each weight row is reused for this many tokens. */
#define CONV_ROW_BLOCK 8
/* Channels per task in the weight-gradient passes; each task owns its dw/dbias entries. */
#define CONV_CH_BLOCK 64
#define CONV_OUT_BLOCK 16

static int64_t conv_t_out(int64_t t_in, int64_t k, int64_t pad) {
    ZAYA_ASSERT(k >= 1 && pad >= 0 && t_in >= 0);
    int64_t t_out = t_in + pad - k + 1;
    return t_out > 0 ? t_out : 0;
}

void zaya_conv1d_depthwise_forward(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                   int64_t t_in, int64_t C, int64_t k, int64_t pad) {
    const int64_t t_out = conv_t_out(t_in, k, pad);
#pragma omp parallel for schedule(static) if (B * t_out * C * k >= ZAYA_PAR_MIN_WORK)
    for (int64_t row = 0; row < B * t_out; row++) {
        int64_t b = row / t_out, t = row % t_out;
        float *yr = y + row * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) yr[c] = bias ? bias[c] : 0.0f;
        for (int64_t j = 0; j < k; j++) {
            int64_t s = t + j - pad; /* input row read by tap j; padding rows contribute 0 */
            if (s < 0 || s >= t_in) continue;
            const float *xr = x + (b * t_in + s) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) yr[c] += w[c * k + j] * xr[c];
        }
    }
}

void zaya_conv1d_depthwise_backward(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                    const float *w, int64_t B, int64_t t_in, int64_t C, int64_t k, int64_t pad) {
    const int64_t t_out = conv_t_out(t_in, k, pad);
    const int64_t nblk = (C + CONV_CH_BLOCK - 1) / CONV_CH_BLOCK;
#pragma omp parallel if (B * (t_in + t_out) * C * k >= ZAYA_PAR_MIN_WORK)
    {
        /* dx[s] = sum_j w[:, j] * dy[s + pad - j]: every dx row is written by exactly one task. */
#pragma omp for schedule(static) nowait
        for (int64_t row = 0; row < B * t_in; row++) {
            int64_t b = row / t_in, s = row % t_in;
            float *dxr = dx + row * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) dxr[c] = 0.0f;
            for (int64_t j = 0; j < k; j++) {
                int64_t t = s + pad - j;
                if (t < 0 || t >= t_out) continue;
                const float *dyr = dy + (b * t_out + t) * C;
#pragma omp simd
                for (int64_t c = 0; c < C; c++) dxr[c] += w[c * k + j] * dyr[c];
            }
        }
        /* dw[c, j] += sum_{b,t} dy[b,t,c] * xpad[b,t+j,c]; dbias[c] += sum dy[b,t,c]. */
#pragma omp for schedule(static)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * CONV_CH_BLOCK, nc = C - c0 < CONV_CH_BLOCK ? C - c0 : CONV_CH_BLOCK;
            float acc[CONV_CH_BLOCK];
            for (int64_t j = -1; j < k; j++) { /* j = -1: the bias */
                if (j < 0 && !dbias) continue;
                for (int64_t c = 0; c < nc; c++) acc[c] = 0.0f;
                for (int64_t b = 0; b < B; b++) {
                    for (int64_t t = 0; t < t_out; t++) {
                        const float *dyr = dy + (b * t_out + t) * C + c0;
                        if (j < 0) {
#pragma omp simd
                            for (int64_t c = 0; c < nc; c++) acc[c] += dyr[c];
                            continue;
                        }
                        int64_t s = t + j - pad;
                        if (s < 0 || s >= t_in) continue;
                        const float *xr = x + (b * t_in + s) * C + c0;
#pragma omp simd
                        for (int64_t c = 0; c < nc; c++) acc[c] += dyr[c] * xr[c];
                    }
                }
                if (j < 0)
                    for (int64_t c = 0; c < nc; c++) dbias[c0 + c] += acc[c];
                else
                    for (int64_t c = 0; c < nc; c++) dw[(c0 + c) * k + j] += acc[c];
            }
        }
    }
}

void zaya_conv1d_grouped_forward(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                 int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad) {
    ZAYA_ASSERT(groups >= 1 && C % groups == 0);
    const int64_t t_out = conv_t_out(t_in, k, pad), cg = C / groups;
    const int64_t tblk = (t_out + CONV_ROW_BLOCK - 1) / CONV_ROW_BLOCK;
#pragma omp parallel for schedule(static) if (B * t_out * C * cg * k >= ZAYA_PAR_MIN_WORK)
    for (int64_t task = 0; task < B * tblk; task++) {
        int64_t b = task / tblk, t0 = (task % tblk) * CONV_ROW_BLOCK;
        int64_t t1 = t0 + CONV_ROW_BLOCK < t_out ? t0 + CONV_ROW_BLOCK : t_out;
        for (int64_t o = 0; o < C; o++) {
            const int64_t g = o / cg;
            const float *wo = w + o * cg * k;
            for (int64_t t = t0; t < t1; t++) {
                float acc = bias ? bias[o] : 0.0f;
                for (int64_t j = 0; j < k; j++) {
                    int64_t s = t + j - pad;
                    if (s < 0 || s >= t_in) continue;
                    const float *xr = x + (b * t_in + s) * C + g * cg;
                    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
                    for (int64_t i = 0; i < cg; i++) dot += wo[i * k + j] * xr[i];
                    acc += dot;
                }
                y[(b * t_out + t) * C + o] = acc;
            }
        }
    }
}

void zaya_conv1d_grouped_backward(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                  const float *w, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                  int64_t pad) {
    ZAYA_ASSERT(groups >= 1 && C % groups == 0);
    const int64_t t_out = conv_t_out(t_in, k, pad), cg = C / groups;
    const int64_t sblk = (t_in + CONV_ROW_BLOCK - 1) / CONV_ROW_BLOCK;
    const int64_t oblk_per_group = (cg + CONV_OUT_BLOCK - 1) / CONV_OUT_BLOCK;
#pragma omp parallel if (B * (t_in + t_out) * C * cg * k >= ZAYA_PAR_MIN_WORK)
    {
        /* dx[b, s, g*cg + i] = sum_{j, o in g} w[o, i, j] * dy[b, s + pad - j, o]. */
#pragma omp for schedule(static) nowait
        for (int64_t task = 0; task < B * sblk; task++) {
            int64_t b = task / sblk, s0 = (task % sblk) * CONV_ROW_BLOCK;
            int64_t s1 = s0 + CONV_ROW_BLOCK < t_in ? s0 + CONV_ROW_BLOCK : t_in;
            for (int64_t s = s0; s < s1; s++) {
                float *dxr = dx + (b * t_in + s) * C;
#pragma omp simd
                for (int64_t c = 0; c < C; c++) dxr[c] = 0.0f;
            }
            for (int64_t o = 0; o < C; o++) {
                const int64_t g = o / cg;
                const float *wo = w + o * cg * k;
                for (int64_t s = s0; s < s1; s++) {
                    float *dxr = dx + (b * t_in + s) * C + g * cg;
                    for (int64_t j = 0; j < k; j++) {
                        int64_t t = s + pad - j;
                        if (t < 0 || t >= t_out) continue;
                        float d = dy[(b * t_out + t) * C + o];
#pragma omp simd
                        for (int64_t i = 0; i < cg; i++) dxr[i] += d * wo[i * k + j];
                    }
                }
            }
        }
        /* dw[o, i, j] += sum_{b,t} dy[b,t,o] * xpad[b, t+j, g*cg+i]; each task owns a block of
         * output channels inside one group, so its dw rows and dbias entries are private. */
#pragma omp for schedule(static)
        for (int64_t task = 0; task < groups * oblk_per_group; task++) {
            int64_t g = task / oblk_per_group;
            int64_t o0 = g * cg + (task % oblk_per_group) * CONV_OUT_BLOCK;
            int64_t o1 = o0 + CONV_OUT_BLOCK < (g + 1) * cg ? o0 + CONV_OUT_BLOCK : (g + 1) * cg;
            for (int64_t b = 0; b < B; b++) {
                for (int64_t t = 0; t < t_out; t++) {
                    const float *dyr = dy + (b * t_out + t) * C;
                    if (dbias)
                        for (int64_t o = o0; o < o1; o++) dbias[o] += dyr[o];
                    for (int64_t j = 0; j < k; j++) {
                        int64_t s = t + j - pad;
                        if (s < 0 || s >= t_in) continue;
                        const float *xr = x + (b * t_in + s) * C + g * cg;
                        for (int64_t o = o0; o < o1; o++) {
                            float d = dyr[o], *dwo = dw + o * cg * k;
#pragma omp simd
                            for (int64_t i = 0; i < cg; i++) dwo[i * k + j] += d * xr[i];
                        }
                    }
                }
            }
        }
    }
}

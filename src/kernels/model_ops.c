/* The model's own elementwise and reduction pieces (zaya/model_ops.h): residual merges, column sums,
 * the embedding's input affine, the CCA skip terms and value shift, the router's and experts'
 * gather / combine / scatter steps. src/model calls them; the CPU compute backend exposes them. */
#include <string.h>

#include "kernel_util.h"
#include "zaya/kernels.h"
#include "zaya/model_ops.h"
#include "zaya/status.h"

/* Column sums are parallel over blocks of 16 adjacent columns (one cache line) and sequential over
 * rows, so every sum is added in row order whatever the thread count: results are bit-identical for
 * any number of threads. */
#define COLS 16

void zaya_colsum_add(float *dst, const float *src, int64_t n, int64_t d) {
    const int64_t nb = (d + COLS - 1) / COLS;
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t j0 = b * COLS, w = d - j0 < COLS ? d - j0 : COLS;
        float acc[COLS] = {0};
        for (int64_t i = 0; i < n; i++) {
            const float *row = src + i * d + j0;
            for (int64_t j = 0; j < w; j++) acc[j] += row[j];
        }
        for (int64_t j = 0; j < w; j++) dst[j0 + j] += acc[j];
    }
}

void zaya_bias_add(float *y, const float *b, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
#pragma omp simd
        for (int64_t j = 0; j < d; j++) y[i * d + j] += b[j];
    }
}

void zaya_merge_forward(float *y, const float *a, const float *ab, const float *as, const float *b, const float *bb,
                        const float *bs, int64_t n, int64_t d) {
    if (!as) { /* plain residual (zaya_residual_scaling false): no scale or bias tensors */
#pragma omp parallel for schedule(static) if (n * d > 32768)
        for (int64_t i = 0; i < n * d; i++) y[i] = a[i] + b[i];
        return;
    }
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *ar = a + i * d, *br = b + i * d;
        float *yr = y + i * d;
#pragma omp simd
        for (int64_t j = 0; j < d; j++) yr[j] = (ar[j] + ab[j]) * as[j] + (br[j] + bb[j]) * bs[j];
    }
}

void zaya_merge_backward(float *da, float *db, int accumulate_b, const float *dy, const float *a, const float *ab,
                         const float *as, const float *b, const float *bb, const float *bs, float *dab, float *das,
                         float *dbb, float *dbs, int64_t n, int64_t d) {
    if (!as) { /* plain residual: y = a + b */
#pragma omp parallel for schedule(static) if (n * d > 32768)
        for (int64_t i = 0; i < n * d; i++) {
            da[i] = dy[i];
            db[i] = (accumulate_b ? db[i] : 0.0f) + dy[i];
        }
        return;
    }
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *dyr = dy + i * d;
        float *dar = da + i * d, *dbr = db + i * d;
#pragma omp simd
        for (int64_t j = 0; j < d; j++) {
            dar[j] = dyr[j] * as[j];
            dbr[j] = (accumulate_b ? dbr[j] : 0.0f) + dyr[j] * bs[j];
        }
    }
    /* d(as) = sum dy*(a+ab), d(ab) = as * sum dy, d(bs) = sum dy*(b+bb), d(bb) = bs * sum dy: column
     * blocks in parallel, rows in order (deterministic for any thread count). */
    const int64_t nb = (d + COLS - 1) / COLS;
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t blk = 0; blk < nb; blk++) {
        const int64_t j0 = blk * COLS, w = d - j0 < COLS ? d - j0 : COLS;
        float s_as[COLS] = {0}, s_bs[COLS] = {0}, s_dy[COLS] = {0};
        for (int64_t i = 0; i < n; i++) {
            const float *g = dy + i * d + j0, *ar = a + i * d + j0, *br = b + i * d + j0;
            for (int64_t j = 0; j < w; j++) {
                s_as[j] += g[j] * (ar[j] + ab[j0 + j]);
                s_bs[j] += g[j] * (br[j] + bb[j0 + j]);
                s_dy[j] += g[j];
            }
        }
        for (int64_t j = 0; j < w; j++) {
            das[j0 + j] += s_as[j];
            dab[j0 + j] += s_dy[j] * as[j0 + j];
            dbs[j0 + j] += s_bs[j];
            dbb[j0 + j] += s_dy[j] * bs[j0 + j];
        }
    }
}

void zaya_qk_split(float *q, float *k, const float *qk, int64_t N, int64_t qd, int64_t kvd) {
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        memcpy(q + n * qd, qk + n * (qd + kvd), (size_t)qd * sizeof(float));
        memcpy(k + n * kvd, qk + n * (qd + kvd) + qd, (size_t)kvd * sizeof(float));
    }
}

void zaya_qk_merge(float *qk, const float *q, const float *k, int64_t N, int64_t qd, int64_t kvd) {
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        memcpy(qk + n * (qd + kvd), q + n * qd, (size_t)qd * sizeof(float));
        memcpy(qk + n * (qd + kvd) + qd, k + n * kvd, (size_t)kvd * sizeof(float));
    }
}

void zaya_embed_forward(float *x, const float *table, const int32_t *ids, const float *bias, const float *scale,
                        int64_t n, int64_t d) {
    zaya_embedding_forward(x, table, ids, n, d);
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
#pragma omp simd
        for (int64_t j = 0; j < d; j++) x[i * d + j] = (x[i * d + j] + bias[j]) * scale[j];
    }
}

/* Two passes over dx, so that de is the only [n, d] buffer: first the scale's gradient terms (their
 * column sums taken at once), then de itself. Each element is the same product either way. */
void zaya_embed_backward(float *dtable, float *dbias, float *dscale, float *de, const float *dx, const float *table,
                         const int32_t *ids, const float *bias, const float *scale, int64_t n, int64_t d,
                         int64_t vocab) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *e = table + (int64_t)ids[i] * d, *dxi = dx + i * d;
        float *prod = de + i * d;
        for (int64_t j = 0; j < d; j++) prod[j] = dxi[j] * (e[j] + bias[j]);
    }
    zaya_colsum_add(dscale, de, n, d);
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *dxi = dx + i * d;
        float *dei = de + i * d;
        for (int64_t j = 0; j < d; j++) dei[j] = dxi[j] * scale[j];
    }
    zaya_colsum_add(dbias, de, n, d);
    zaya_embedding_backward(dtable, de, ids, n, d, vocab);
}

/* qk rows are [q head 0 .. q head Hq-1 | k head 0 .. k head Hkv-1], hd channels each. Both passes run
 * over heads with the channel loop innermost (contiguous, vectorized); the group sums over q heads
 * accumulate in head order. */
void zaya_qk_mean_skip_forward(float *qk_raw, const float *qk_pre, int64_t N, int64_t Hq, int64_t Hkv, int64_t hd) {
    ZAYA_ASSERT(Hkv > 0 && Hq % Hkv == 0 && hd <= ZAYA_QK_SKIP_MAX_HEAD_DIM);
    const int64_t G = Hq / Hkv, C = (Hq + Hkv) * hd;
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        const float *pre = qk_pre + n * C;
        float *out = qk_raw + n * C;
        float sum[ZAYA_QK_SKIP_MAX_HEAD_DIM];
        for (int64_t j = 0; j < Hkv; j++) {
            const float *kp = pre + (Hq + j) * hd;
            float *ko = out + (Hq + j) * hd;
            for (int64_t d = 0; d < hd; d++) sum[d] = 0.0f;
            for (int64_t i = j * G; i < (j + 1) * G; i++) {
                const float *qp = pre + i * hd;
                float *qo = out + i * hd;
#pragma omp simd
                for (int64_t d = 0; d < hd; d++) {
                    qo[d] += 0.5f * (qp[d] + kp[d]);
                    sum[d] += qp[d];
                }
            }
#pragma omp simd
            for (int64_t d = 0; d < hd; d++) ko[d] += 0.5f * (sum[d] / (float)G + kp[d]);
        }
    }
}

void zaya_qk_mean_skip_backward(float *dpre, const float *g, int64_t N, int64_t Hq, int64_t Hkv, int64_t hd) {
    ZAYA_ASSERT(Hkv > 0 && Hq % Hkv == 0 && hd <= ZAYA_QK_SKIP_MAX_HEAD_DIM);
    const int64_t G = Hq / Hkv, C = (Hq + Hkv) * hd;
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        const float *gr = g + n * C;
        float *dr = dpre + n * C;
        float sq[ZAYA_QK_SKIP_MAX_HEAD_DIM];
        for (int64_t j = 0; j < Hkv; j++) {
            const float *gk = gr + (Hq + j) * hd;
            float *dk = dr + (Hq + j) * hd;
            for (int64_t d = 0; d < hd; d++) sq[d] = 0.0f;
            /* qm_i = (q_i + k_j)/2 ; km_j = (mean_i q_i + k_j)/2 */
            for (int64_t i = j * G; i < (j + 1) * G; i++) {
                const float *gq = gr + i * hd;
                float *dq = dr + i * hd;
#pragma omp simd
                for (int64_t d = 0; d < hd; d++) {
                    sq[d] += gq[d];
                    dq[d] += 0.5f * gq[d] + 0.5f * gk[d] / (float)G;
                }
            }
#pragma omp simd
            for (int64_t d = 0; d < hd; d++) dk[d] += 0.5f * sq[d] + 0.5f * gk[d];
        }
    }
}

/* Values: the first half of the value channels is the current token's projection, the second half
 * the previous token's (zero at the start of each sequence). */
void zaya_value_shift_forward(float *v, const float *vv, int64_t B, int64_t T, int64_t kvd) {
    const int64_t h = kvd / 2;
#pragma omp parallel for schedule(static) if (B * T > 64)
    for (int64_t n = 0; n < B * T; n++) {
        memcpy(v + n * kvd, vv + n * kvd, (size_t)h * sizeof(float));
        if (n % T == 0) memset(v + n * kvd + h, 0, (size_t)h * sizeof(float));
        else memcpy(v + n * kvd + h, vv + (n - 1) * kvd + h, (size_t)h * sizeof(float));
    }
}

void zaya_value_shift_backward(float *dvv, const float *dv, int64_t B, int64_t T, int64_t kvd) {
    const int64_t h = kvd / 2;
#pragma omp parallel for schedule(static) if (B * T > 64)
    for (int64_t n = 0; n < B * T; n++) {
        memcpy(dvv + n * kvd, dv + n * kvd, (size_t)h * sizeof(float));
        if (n % T == T - 1) memset(dvv + n * kvd + h, 0, (size_t)h * sizeof(float));
        else memcpy(dvv + n * kvd + h, dv + (n + 1) * kvd + h, (size_t)h * sizeof(float));
    }
}

void zaya_eda_forward(float *r, const float *g, const float *r_prev, int64_t n, int64_t R) {
#pragma omp parallel for schedule(static) if (n * R > 32768)
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < R; j++) r[i * R + j] += g[j] * r_prev[i * R + j];
}

/* r_l = W z + b + gamma_l * r_{l-1}: d(gamma_l) = sum_rows dr * r_{l-1}; d(r_{l-1}) = dr * gamma_l. */
void zaya_eda_backward(float *prod, float *dr_prev, const float *dr, const float *r_prev, const float *g, int64_t n,
                       int64_t R) {
#pragma omp parallel for schedule(static) if (n * R > 32768)
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < R; j++) {
            prod[i * R + j] = dr[i * R + j] * r_prev[i * R + j];
            dr_prev[i * R + j] = dr[i * R + j] * g[j];
        }
}

/* Sum over the experts of the squared deviations of each token's expert probability from that
 * expert's mean over the batch: how much the scores vary from token to token, without the part that
 * is common to all tokens (which the balancing biases cancel). Two serial passes in token order: the
 * same sums for any thread count. The mean psum[e] / n is recomputed where it is used (the same
 * correctly rounded quotient each time), so no per-expert scratch is needed. */
void zaya_route_stats(double *psum, double *spread, const float *probs, int64_t ld, int64_t n, int64_t E) {
    for (int64_t e = 0; e < E; e++) psum[e] = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = 0; e < E; e++) psum[e] += probs[i * ld + e];
    const double cnt = (double)(n > 0 ? n : 1);
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t e = 0; e < E; e++) {
            double dv = (double)probs[i * ld + e] - psum[e] / cnt;
            sum += dv * dv;
        }
    spread[0] = sum;
}

/* Only the chosen probability receives a gradient: through the softmax,
 * d(logit_e) = p_e * dgate * ([e == idx] - p_idx). Selection itself (argmax with biases) is piecewise
 * constant and has no gradient. */
void zaya_router_dlogits(float *dl, const float *probs, int64_t ld, const float *dgate, const int32_t *idx, int64_t n,
                         int64_t ncols) {
#pragma omp parallel for schedule(static) if (n * ncols > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *p = probs + i * ld;
        float *dli = dl + i * ncols, g = dgate[i], pk = p[idx[i]];
        for (int64_t e = 0; e < ncols; e++) dli[e] = p[e] * g * ((e == idx[i] ? 1.0f : 0.0f) - pk);
    }
}

void zaya_rows_gather(float *dst, const float *src, const int32_t *perm, int64_t n, int64_t d) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t r = 0; r < n; r++) memcpy(dst + r * d, src + (int64_t)perm[r] * d, (size_t)d * sizeof(float));
}

void zaya_moe_combine_forward(float *m, const float *ye, const float *z, const int32_t *idx, const float *gate,
                              const int32_t *row_of, int64_t n, int64_t d, int64_t E, int identity) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i], *mi = m + i * d;
        const float *src = idx[i] < E ? ye + (int64_t)row_of[i] * d : z + i * d;
        if (idx[i] == E && !identity) g = 0.0f;
#pragma omp simd
        for (int64_t j = 0; j < d; j++) mi[j] = g * src[j];
    }
}

/* m_i = gate_i * out_i, so d(out_i) = gate_i * dm_i and d(gate_i) = <dm_i, out_i>. */
void zaya_moe_combine_backward(float *dye, float *dz, float *dgate, const float *dm, const float *ye, const float *z,
                               const int32_t *idx, const float *gate, const int32_t *row_of, int64_t n, int64_t d,
                               int64_t E, int identity) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        const float *dmi = dm + i * d;
        float g = gate[i];
        if (idx[i] < E) {
            const float *yi = ye + (int64_t)row_of[i] * d;
            float *dyi = dye + (int64_t)row_of[i] * d;
            float s = 0;
            for (int64_t j = 0; j < d; j++) {
                dyi[j] = g * dmi[j];
                s += dmi[j] * yi[j];
            }
            dgate[i] = s;
        } else if (identity) {
            const float *zi = z + i * d;
            float *dzi = dz + i * d, s = 0;
            for (int64_t j = 0; j < d; j++) {
                dzi[j] = g * dmi[j];
                s += dmi[j] * zi[j];
            }
            dgate[i] = s;
        } else {
            memset(dz + i * d, 0, (size_t)d * sizeof(float));
            dgate[i] = 0.0f;
        }
    }
}

void zaya_rows_scatter(float *dz, const float *dxe, const int32_t *idx, const int32_t *row_of, int64_t n, int64_t d,
                       int64_t E) {
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < E) memcpy(dz + i * d, dxe + (int64_t)row_of[i] * d, (size_t)d * sizeof(float));
}

/* The ZAYA1 model's and optimizer's own elementwise and reduction pieces as CPU kernels: residual
 * merges, bias-gradient column sums, the embedding's input affine, the CCA skip terms and value
 * shift, the router's and experts' gather / combine / scatter steps, and the optimizer updates.
 * src/model and src/optim call these; so does the CPU compute backend (backend.h), whose operations
 * are defined as exactly these functions.
 *
 * Conventions as in kernels.h: row-major, contiguous, backward WRITES input gradients and ACCUMULATES
 * (+=) parameter gradients, no aliasing unless "in place" is said, no allocation. Every reduction runs
 * in an order fixed by the shapes alone (rows in order inside each column block), so results are
 * bit-identical for any thread count. */
#ifndef ZAYA_MODEL_OPS_H
#define ZAYA_MODEL_OPS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- residual merges and column sums (src/kernels/model_ops.c) ---- */
/* dst[j] += sum_i src[i, j]: column blocks of 16 in parallel, rows in order inside a block. */
void zaya_colsum_add(float *dst, const float *src, int64_t n, int64_t d);
/* y[i, :] += b (b [d] broadcast over n rows), in place. */
void zaya_bias_add(float *y, const float *b, int64_t n, int64_t d);
/* y = (a + ab) * as + (b + bb) * bs (row vectors of width d broadcast over n rows); with as == NULL
 * (no residual scaling: no scale or bias tensors) y = a + b. */
void zaya_merge_forward(float *y, const float *a, const float *ab, const float *as, const float *b, const float *bb,
                        const float *bs, int64_t n, int64_t d);
/* Gradients of the merge: da = dy*as, db (+= when accumulate_b) = dy*bs, and the column sums into the
 * four parameter gradients (+=); with as == NULL da = dy, db (+)= dy and the four are left alone. */
void zaya_merge_backward(float *da, float *db, int accumulate_b, const float *dy, const float *a, const float *ab,
                         const float *as, const float *b, const float *bb, const float *bs, float *dab, float *das,
                         float *dbb, float *dbs, int64_t n, int64_t d);
/* Rows of a fused [N, qd + kvd] q|k product split into q [N, qd] and k [N, kvd], and back. */
void zaya_qk_split(float *q, float *k, const float *qk, int64_t N, int64_t qd, int64_t kvd);
void zaya_qk_merge(float *qk, const float *q, const float *k, int64_t N, int64_t qd, int64_t kvd);

/* ---- embedding with the input affine x = (table[ids] + bias) * scale ---- */
void zaya_embed_forward(float *x, const float *table, const int32_t *ids, const float *bias, const float *scale,
                        int64_t n, int64_t d);
/* From dx [n, d]: dscale += colsum(dx * (table[ids] + bias)), de = dx * scale (written [n, d]),
 * dbias += colsum(de), then dtable[ids[i]] += de[i] (zaya_embedding_backward: token order within an
 * id). de also serves as the scratch of the first column sum. ids must be < vocab. */
void zaya_embed_backward(float *dtable, float *dbias, float *dscale, float *de, const float *dx, const float *table,
                         const int32_t *ids, const float *bias, const float *scale, int64_t n, int64_t d,
                         int64_t vocab);

/* ---- CCA pieces ---- */
/* Largest head_dim of the QK-mean skip terms (per-row sums live on the stack). */
#define ZAYA_QK_SKIP_MAX_HEAD_DIM 256
/* qk rows [N, (Hq + Hkv) * hd] = [q heads | k heads]: qk_raw += (q_i + k_j) / 2 for q head i of group
 * j, (mean over the group's q heads + k_j) / 2 for k head j. Hq % Hkv == 0, hd <= the maximum. */
void zaya_qk_mean_skip_forward(float *qk_raw, const float *qk_pre, int64_t N, int64_t Hq, int64_t Hkv, int64_t hd);
/* dpre += the skip terms' gradient given g = d(qk_raw). */
void zaya_qk_mean_skip_backward(float *dpre, const float *g, int64_t N, int64_t Hq, int64_t Hkv, int64_t hd);
/* v[n] = [vv[n, :h] | vv[n-1, h:]] with the second half zero at each sequence start (h = kvd / 2, B
 * sequences of T rows); the backward is its transpose (dvv written). */
void zaya_value_shift_forward(float *v, const float *vv, int64_t B, int64_t T, int64_t kvd);
void zaya_value_shift_backward(float *dvv, const float *dv, int64_t B, int64_t T, int64_t kvd);

/* ---- router and experts ---- */
/* EDA: r += g * r_prev (g [R] broadcast over n rows), in place; backward: prod = dr * r_prev and
 * dr_prev = dr * g (both written; the caller sums prod's columns into d(g)). */
void zaya_eda_forward(float *r, const float *g, const float *r_prev, int64_t n, int64_t R);
void zaya_eda_backward(float *prod, float *dr_prev, const float *dr, const float *r_prev, const float *g, int64_t n,
                       int64_t R);
/* The balancer's statistics of score rows probs (ld apart) over the first E columns, in double and
 * serial token order: psum[e] = sum_i p[i, e], spread[0] = sum_i sum_e (p[i, e] - psum[e] / n)^2. */
void zaya_route_stats(double *psum, double *spread, const float *probs, int64_t ld, int64_t n, int64_t E);
/* dl[i, e] = p[i, e] * dgate[i] * ([e == idx[i]] - p[i, idx[i]]) for e < ncols (probs rows ld apart,
 * dl rows ncols apart): the chosen probability's gradient through the softmax. */
void zaya_router_dlogits(float *dl, const float *probs, int64_t ld, const float *dgate, const int32_t *idx, int64_t n,
                         int64_t ncols);
/* dst[r, :] = src[perm[r], :] for r < n (the tokens in expert order). */
void zaya_rows_gather(float *dst, const float *src, const int32_t *perm, int64_t n, int64_t d);
/* m[i] = g_i * (idx[i] < E ? ye[row_of[i]] : z[i]) with g_i = gate[i], except 0 for a skipped token
 * (idx[i] == E) unless identity. */
void zaya_moe_combine_forward(float *m, const float *ye, const float *z, const int32_t *idx, const float *gate,
                              const int32_t *row_of, int64_t n, int64_t d, int64_t E, int identity);
/* Its backward: routed tokens dye[row_of[i]] = gate_i dm_i, dgate_i = <dm_i, ye[row_of[i]]>; identity
 * skips dz_i = gate_i dm_i, dgate_i = <dm_i, z_i>; other skips dz_i = 0, dgate_i = 0. dz rows of routed
 * tokens are left alone (zaya_rows_scatter writes them). */
void zaya_moe_combine_backward(float *dye, float *dz, float *dgate, const float *dm, const float *ye, const float *z,
                               const int32_t *idx, const float *gate, const int32_t *row_of, int64_t n, int64_t d,
                               int64_t E, int identity);
/* dz[i] = dxe[row_of[i]] for the tokens with idx[i] < E (the others are left alone). */
void zaya_rows_scatter(float *dz, const float *dxe, const int32_t *idx, const int32_t *row_of, int64_t n, int64_t d,
                       int64_t E);

/* ---- optimizer pieces (src/kernels/optim_ops.c) ---- */
/* Elements per block of zaya_sumsq_f64. */
#define ZAYA_SUMSQ_BLOCK 4096
/* sum x[i]^2 in double on the calling thread: fixed blocks of ZAYA_SUMSQ_BLOCK, each summed in 8
 * lanes, the blocks added in order (independent of threads). */
double zaya_sumsq_f64(const float *x, int64_t n);
/* AdamW over n elements in torch.optim.AdamW's order: g = grad * gs; m += w1 (g - m); v = v b2 + w2 g^2;
 * p = p * decay + neg_step * (m / (sqrt(v) / bc2_sqrt + eps)), all f32. */
void zaya_adamw_update(float *p, const float *grad, float *m, float *v, int64_t n, float gs, float w1, float b2,
                       float w2, float neg_step, float bc2_sqrt, float eps, float decay);
/* Muon's momentum in the unit's own layout: gk = g * gs; buf += w (gk - buf) (w = 1 - beta as the
 * caller rounded it); u = nesterov ? gk + beta (buf - gk) : buf (u written). */
void zaya_muon_momentum(float *u, float *buf, const float *g, int64_t n, float gs, float beta, float w, int nesterov);
/* Muon's parameter update: p = p * decay + neg * x. */
void zaya_muon_apply(float *p, const float *x, int64_t n, float decay, float neg);

#ifdef __cplusplus
}
#endif

#endif

/* CPU kernels used by the ZAYA1 model: forward and backward, OpenMP-parallel, f32 statistics.
 *
 * Conventions (all kernels):
 *  - Tensors are row-major and contiguous; "[n, d]" means n rows of d floats. Token-major activations:
 *    n = batch * seq rows.
 *  - Backward kernels WRITE input gradients (dx = ...) and ACCUMULATE parameter gradients
 *    (dw += ...), so one zeroing of the parameter-gradient buffer per step suffices.
 *  - Output buffers may not alias inputs unless a kernel says "in place".
 *  - No kernel allocates memory; scratch, where needed, is passed in or bounded on the stack.
 * Attention lives in attention.h, matmul in matmul.h. */
#ifndef ZAYA_KERNELS_H
#define ZAYA_KERNELS_H

#include <stdint.h>

#include "zaya/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- RMSNorm: y = w * x / sqrt(mean(x^2) + eps); rstd[n] saved for backward ---- */
void zaya_rmsnorm_forward(float *y, float *rstd, const float *x, const float *w, int64_t n, int64_t d, float eps);
void zaya_rmsnorm_backward(float *dx, float *dw, const float *dy, const float *x, const float *w, const float *rstd,
                           int64_t n, int64_t d);

/* ---- Partial rotary embedding (rotate-half / neox pairing) ----
 * For every head of x [n, heads*head_dim], dims [0, rot_dims) are rotated: with half = rot_dims/2,
 * pair (i, i+half) at position p by angle p * theta^(-2i/rot_dims). Dims >= rot_dims are untouched.
 * cos/sin tables are computed once (in double) for positions [0, max_pos). */
typedef struct zaya_rope_table {
    int64_t max_pos, rot_dims;
    double theta;
    float *cos, *sin; /* [max_pos, rot_dims/2] */
} zaya_rope_table;
int zaya_rope_table_init(zaya_rope_table *t, int64_t max_pos, int64_t rot_dims, double theta); /* 0 ok */
void zaya_rope_table_free(zaya_rope_table *t);
/* In place. pos[n] gives each row's position (< max_pos). */
void zaya_rope_forward(float *x, const zaya_rope_table *t, const int32_t *pos, int64_t n, int64_t heads,
                       int64_t head_dim);
/* In place: dx = R^T dy. */
void zaya_rope_backward(float *dx, const zaya_rope_table *t, const int32_t *pos, int64_t n, int64_t heads,
                        int64_t head_dim);

/* ---- L2 normalisation to a fixed scale with a per-head multiplier (CCA QK norm) ----
 * y[r,h,:] = scale * mult[h] * x[r,h,:] / max(||x[r,h,:]||_2, eps). mult may be NULL (1). Saves
 * inv_norm[n, heads] = 1 / max(||x||, eps). dmult (+=) may be NULL. */
void zaya_l2norm_forward(float *y, float *inv_norm, const float *x, const float *mult, float scale, int64_t n,
                         int64_t heads, int64_t head_dim, float eps);
void zaya_l2norm_backward(float *dx, float *dmult, const float *dy, const float *x, const float *inv_norm,
                          const float *mult, float scale, int64_t n, int64_t heads, int64_t head_dim);

/* ---- Causal convolutions along time ----
 * x: [B, t_in, C] (channels contiguous). The input is left-padded with `pad` zero rows and the
 * output has t_out = t_in + pad - k + 1 rows: y[b,t,c] = bias[c] + sum_j w[..j] * xpad[b, t+j, ..]
 * (cross-correlation, tap 0 = oldest sample, as PyTorch Conv1d). bias is applied at every output
 * position, including those computed only from padding. */
/* Depthwise: w [C, k]. */
void zaya_conv1d_depthwise_forward(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                   int64_t t_in, int64_t C, int64_t k, int64_t pad);
void zaya_conv1d_depthwise_backward(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                    const float *w, int64_t B, int64_t t_in, int64_t C, int64_t k, int64_t pad);
/* Grouped: `groups` groups of cg = C/groups channels; w [C, cg, k] (PyTorch layout: output channel o
 * of group g = o / cg reads input channels g*cg .. g*cg+cg-1). */
void zaya_conv1d_grouped_forward(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                 int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad);
void zaya_conv1d_grouped_backward(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                  const float *w, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                  int64_t pad);
/* The same on oneDNN GEMMs, one per (group, tap) over the whole batch, given a workspace of
 * zaya_conv1d_grouped_ws_floats(B, t_in, C, groups, k, pad) floats (plan it up front; the same size
 * serves forward and backward). ws == NULL: the tiled kernels above. */
int64_t zaya_conv1d_grouped_ws_floats(int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad);
void zaya_conv1d_grouped_forward_ws(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                    int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad, float *ws);
void zaya_conv1d_grouped_backward_ws(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                     const float *w, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                     int64_t pad, float *ws);
/* The _ws calls in a dtype (the model's): ZAYA_DTYPE_BF16 gives the products bf16 operands with f32
 * accumulation, as the linear layers (x and w forward; dy and w for dx; dy and x for dw); the bias
 * and its gradient stay f32. bf16 needs the workspace (asserted). */
void zaya_conv1d_grouped_forward_dt(zaya_dtype dtype, float *y, const float *x, const float *w, const float *bias,
                                    int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad,
                                    float *ws);
void zaya_conv1d_grouped_backward_dt(zaya_dtype dtype, float *dx, float *dw, float *dbias, const float *dy,
                                     const float *x, const float *w, int64_t B, int64_t t_in, int64_t C,
                                     int64_t groups, int64_t k, int64_t pad, float *ws);

/* ---- Pointwise activations over n elements ---- */
void zaya_gelu_forward(float *y, const float *x, int64_t n); /* exact: x * Phi(x) (erf form) */
void zaya_gelu_backward(float *dx, const float *dy, const float *x, int64_t n);
void zaya_silu_forward(float *y, const float *x, int64_t n);
void zaya_silu_backward(float *dx, const float *dy, const float *x, int64_t n);
/* SwiGLU over fused rows gu [n, 2d] = [gate | up]: y [n, d] = silu(gate) * up; dgu [n, 2d]. */
void zaya_swiglu_forward(float *y, const float *gu, int64_t n, int64_t d);
void zaya_swiglu_backward(float *dgu, const float *dy, const float *gu, int64_t n, int64_t d);

/* ---- Row softmax over [n, d] (max-subtracted, f32) ---- */
void zaya_softmax_forward(float *y, const float *x, int64_t n, int64_t d);
void zaya_softmax_backward(float *dx, const float *dy, const float *y, int64_t n, int64_t d);

/* ---- Embedding: y[i,:] = table[ids[i],:]; backward scatter-adds into dtable (+=), race-free ----
 * ids must be < vocab (callers validate untrusted ids). */
void zaya_embedding_forward(float *y, const float *table, const int32_t *ids, int64_t n, int64_t d);
void zaya_embedding_backward(float *dtable, const float *dy, const int32_t *ids, int64_t n, int64_t d, int64_t vocab);

/* ---- Top-1 with additive selection bias ----
 * idx[i] = argmax_e (probs[i,e] + bias[e]) (ties: lowest e; bias may be NULL), gate[i] = probs[i, idx[i]]
 * (the unbiased probability). */
void zaya_top1_biased(int32_t *idx, float *gate, const float *probs, const float *bias, int64_t n, int64_t e);
/* The same selection, counted: counts[j] = rows that choose class j (counts has e entries). */
void zaya_top1_biased_count(int64_t *counts, const float *probs, const float *bias, int64_t n, int64_t e);
/* The same over the first e columns of rows ld apart (ld >= e): a router whose score rows have more
 * columns than selectable classes (the linear router's unused skip column). */
void zaya_top1_biased_ld(int32_t *idx, float *gate, const float *probs, int64_t ld, const float *bias, int64_t n,
                         int64_t e);
void zaya_top1_biased_count_ld(int64_t *counts, const float *probs, int64_t ld, const float *bias, int64_t n, int64_t e);

/* ---- Softmax cross-entropy over the vocabulary, fused and in place ----
 * logits [n, V] is overwritten with d(loss)/d(logits) * grad_scale (softmax - onehot), row by row, so
 * no second [n, V] buffer exists. losses[n] receives -log softmax[target]. Rows whose target < 0 are
 * ignored: loss 0, gradient row zeroed. With grad_scale == 0 the logits are left as they were and
 * only losses are computed. Targets must be < V. Returns the number of counted rows. */
int64_t zaya_xent_forward_backward(float *logits, float *losses, const int32_t *targets, int64_t n, int64_t V,
                                   float grad_scale);

#ifdef __cplusplus
}
#endif

#endif

/* Causal grouped-query attention, flash-style (tiled, online softmax, fp32).
 *
 * q   [B, T, Hq, D]   token-major, as the projections produce it
 * k,v [B, T, Hkv, D]  query head h uses KV head h / (Hq / Hkv)
 * out [B, T, Hq, D]
 * lse [B, Hq, T]      log-sum-exp of the scaled logits per query row, saved for backward
 *
 * Memory is O(tile) per thread: the T x T score matrix never exists. Backward recomputes the
 * probabilities from q, k and lse; it writes dq, dk, dv (dk/dv are summed over the query heads
 * sharing a KV head). scale is typically 1/sqrt(D). */
#ifndef ZAYA_ATTENTION_H
#define ZAYA_ATTENTION_H

#include <stdint.h>

#define ZAYA_ATTENTION_MAX_HEAD_DIM 256

void zaya_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                            int64_t T, int64_t Hq, int64_t Hkv, int64_t D, float scale);
void zaya_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                             const float *v, const float *out, const float *lse, int64_t B, int64_t T, int64_t Hq,
                             int64_t Hkv, int64_t D, float scale);

#endif

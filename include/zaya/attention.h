/* Causal grouped-query attention, flash-style (tiled, online softmax; fp32, or bf16 operands through
 * the _dtype calls below).
 *
 * q   [B, T, Hq, D]   token-major, as the projections produce it
 * k,v [B, T, Hkv, D]  query head h uses KV head h / (Hq / Hkv)
 * out [B, T, Hq, D]
 * lse [B, Hq, T]      log-sum-exp of the scaled logits per query row, saved for backward
 *
 * Memory is O(tile) per thread: the T x T score matrix never exists. Backward recomputes the
 * probabilities from q, k and lse; it writes dq, dk, dv (dk/dv are summed over the query heads
 * sharing a KV head). scale is typically 1/sqrt(D) and must be > 0.
 *
 * Requirements: Hq % Hkv == 0, 0 < D <= ZAYA_ATTENTION_MAX_HEAD_DIM (asserted). Work is split over
 * (batch, KV head, query tile) on the OpenMP pool; each task keeps its tiles on the stack (about
 * 400 KiB, sized for the maximum head_dim), so OpenMP threads need at least 1 MiB of stack (the
 * default is 8 MiB; see OMP_STACKSIZE). Outputs must not alias inputs. */
#ifndef ZAYA_ATTENTION_H
#define ZAYA_ATTENTION_H

#include <stdint.h>

#include "zaya/dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_ATTENTION_MAX_HEAD_DIM 256

/* lse may be NULL when no backward follows (inference prefill). */
void zaya_attention_forward(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                            int64_t T, int64_t Hq, int64_t Hkv, int64_t D, float scale);
void zaya_attention_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                             const float *v, const float *out, const float *lse, int64_t B, int64_t T, int64_t Hq,
                             int64_t Hkv, int64_t D, float scale);

/* One chunk of the query rows of each sequence (context parallelism): q, out [B, Tq, Hq, D] hold the
 * rows at positions q0 .. q0+Tq-1; k, v [B, Tkv, Hkv, D] hold keys and values of positions 0 .. Tkv-1
 * (Tkv >= q0 + Tq; positions past q0+Tq-1 are not read); lse [B, Hq, Tq]. Row i attends to positions
 * 0 .. q0+i and equals row q0+i of zaya_attention_forward over the whole sequence. Backward writes
 * dq [B, Tq, Hq, D] and dk, dv [B, Tkv, Hkv, D] (zero past position q0+Tq-1): the gradients of this
 * chunk's queries only; the callers sum dk, dv over the chunks. q0 = 0, Tq = Tkv = T is the plain
 * call above. */
void zaya_attention_forward_chunk(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                                  int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale);
void zaya_attention_backward_chunk(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                                   const float *v, const float *out, const float *lse, int64_t B, int64_t Tq,
                                   int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale);

/* The chunk calls in a dtype. ZAYA_DTYPE_F32 is the calls above. ZAYA_DTYPE_BF16 gives every product
 * bf16 operands with f32 accumulation, as a bf16 GEMM does: q, k, v and the probabilities P forward
 * (P is rounded after its row sums are taken); q, k, v, dout, P and dS = scale P (dP - Delta)
 * backward, with Delta = dout . out in f32. The softmax statistics, lse and the outputs stay f32. On
 * hosts with the AMX tile unit (and head_dim % 32 == 0) this runs there (attention_amx.c, which keeps
 * a workspace of packed operands grown to the largest call); elsewhere the f32 kernel computes the
 * same quantities with the same operands rounded. Both orders of accumulation are fixed, so results do
 * not depend on the thread count. */
void zaya_attention_forward_dtype(zaya_dtype dtype, float *out, float *lse, const float *q, const float *k,
                                  const float *v, int64_t B, int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq,
                                  int64_t Hkv, int64_t D, float scale);
void zaya_attention_backward_dtype(zaya_dtype dtype, float *dq, float *dk, float *dv, const float *dout,
                                   const float *q, const float *k, const float *v, const float *out, const float *lse,
                                   int64_t B, int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D,
                                   float scale);
/* Which kernel the bf16 calls use for head_dim D: "amx" or "portable" (the f32 kernel with rounded
 * operands). ZAYA_ATTENTION_BF16=portable in the environment selects the portable one for the process;
 * zaya_attention_bf16_force_portable(1) does so until it is called with 0 (tests compare the two). */
const char *zaya_attention_bf16_impl(int64_t D);
void zaya_attention_bf16_force_portable(int on);

/* Incremental attention against per-sequence KV caches (inference: prefill chunks and decode steps).
 *
 * Sequence s (0..nseq-1) contributes n_rows[s] new query rows at positions pos[s] .. pos[s]+n_rows[s]-1;
 * row r attends causally to cached positions 0 .. its own position. The caller has already written
 * K/V of the new positions into the caches, so k_cache[s], v_cache[s] ([Tmax, Hkv, D] each, Tmax >
 * pos[s]+n_rows[s]-1) hold every position up to the last new row. Sequences may have different
 * lengths and row counts (n_rows[s] == 0 skips a sequence).
 *
 * q, out [R, Hq, D] with R = sum n_rows: the rows of sequence 0 first, then sequence 1, ...
 * lse    [R, Hq] or NULL.
 * Each row equals the corresponding row of zaya_attention_forward over the whole sequence. */
void zaya_attention_decode(float *out, float *lse, const float *q, const float *const *k_cache,
                           const float *const *v_cache, const int64_t *pos, const int64_t *n_rows, int64_t nseq,
                           int64_t Hq, int64_t Hkv, int64_t D, float scale);

#ifdef __cplusplus
}
#endif

#endif

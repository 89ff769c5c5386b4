/* Inference over a zaya_model: per-sequence caches, batched prefill, incremental decode, sampling.
 *
 * The engine reads the model's parameter block (f32, or the bf16 shadow for bf16 models) and keeps,
 * per layer and per sequence slot, the decode-time state of CCA (docs/model.md, architecture §5.4):
 *   K, V      [max_len, kv_heads, head_dim]  post-norm, post-temperature, post-RoPE keys; values
 *   conv      [(k0-1)+(k1-1), q_dim+kv_dim]  the newest pre-convolution q|k columns (zeros before t=0)
 *   delayed   [kv_dim/2]                     the previous token's v_proj_delayed output
 * Everything (caches and the scratch of a step of up to max_step_tokens rows) is allocated at init;
 * steps never allocate. Every step reproduces zaya_model_logits() of the whole sequence row by row. */
#ifndef ZAYA_INFER_H
#define ZAYA_INFER_H

#include <stdint.h>

#include "zaya/model.h"
#include "zaya/rng.h"
#include "zaya/status.h"

typedef struct zaya_infer zaya_infer;

typedef struct zaya_infer_opts {
    int64_t max_seqs;        /* sequence slots (batch) */
    int64_t max_len;         /* tokens per sequence (<= max_position_embeddings) */
    int64_t max_step_tokens; /* rows processed at once; longer steps are split (0: max_seqs * 64) */
    int gemv;                /* 1: own GEMV kernel for single-row projections, 0: oneDNN always */
} zaya_infer_opts;

/* The model must outlive the engine; its weights are read at every step (not copied). */
zaya_status zaya_infer_init(zaya_infer **out, zaya_model *m, const zaya_infer_opts *opts);
void zaya_infer_free(zaya_infer *e);

/* Memory plan: cache bytes per token (K and V of every layer), fixed state per sequence (conv +
 * delayed value of every layer), and the total allocated by init. */
int64_t zaya_infer_kv_bytes_per_token(const zaya_infer *e);
int64_t zaya_infer_state_bytes_per_seq(const zaya_infer *e);
int64_t zaya_infer_total_bytes(const zaya_infer *e);
int64_t zaya_infer_max_len(const zaya_infer *e);
int64_t zaya_infer_max_seqs(const zaya_infer *e);
void zaya_infer_set_gemv(zaya_infer *e, int on);

/* Empties a slot (length 0, state zeroed). */
void zaya_infer_reset(zaya_infer *e, int64_t slot);
int64_t zaya_infer_len(const zaya_infer *e, int64_t slot);

/* Appends tokens to several sequences at once. Segment s appends n_tokens[s] ids (from `tokens`,
 * segments back to back) to slot slots[s]; slots are distinct. Logits:
 *   all_rows = 0: [nseq, V], the row of each segment's last token (segments with 0 tokens: untouched);
 *   all_rows = 1: [sum n_tokens, V], every row in order.
 * logits may be NULL. Errors (ids outside the vocabulary, a sequence over max_len, bad slots) leave
 * every cache unchanged. */
zaya_status zaya_infer_step(zaya_infer *e, int64_t nseq, const int64_t *slots, const int64_t *n_tokens,
                            const int32_t *tokens, float *logits, int all_rows);

/* ---- sampling (src/infer/sample.c) ---- */

typedef struct zaya_sampler_opts {
    double temperature; /* <= 0: greedy */
    int64_t top_k;      /* <= 0: off */
    double top_p;       /* >= 1 or <= 0: off */
    uint64_t seed;
} zaya_sampler_opts;

/* Scratch for one vocabulary; draws come from Philox (seed, stream = sequence, counter = step), so a
 * (seed, sequence, step) triple always gives the same token. */
typedef struct zaya_sampler {
    zaya_sampler_opts o;
    int64_t vocab;
    float *prob;   /* [V] */
    int32_t *order; /* [V] */
} zaya_sampler;

zaya_status zaya_sampler_init(zaya_sampler *s, const zaya_sampler_opts *o, int64_t vocab);
void zaya_sampler_free(zaya_sampler *s);
/* Samples one id from logits [V] (not modified) for draw (stream, counter). */
int32_t zaya_sampler_sample(zaya_sampler *s, const float *logits, uint64_t stream, uint64_t counter);
/* Index of the largest logit (ties: lowest id). */
int32_t zaya_argmax(const float *x, int64_t n);

/* ---- scoring (src/infer/eval.c) ---- */

/* log p(token) from a logits row (log-softmax in double). */
double zaya_log_prob(const float *logits, int64_t V, int32_t token);

#endif

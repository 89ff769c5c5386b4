/* Inference over a zaya_model or a weight store: per-sequence caches, batched prefill, incremental
 * decode, sampling.
 *
 * The engine reads the weights (f32, or bf16 read as bf16: a bf16 model's shadow or a bf16 store,
 * zaya/infer_weights.h) and keeps,
 * per layer and per sequence slot, the decode-time state of CCA (docs/model.md, architecture §5.4):
 *   K, V      [max_len, kv_heads, head_dim]  post-norm, post-temperature, post-RoPE keys; values
 *                                            (f32, or bf16 with bf16 weights)
 *   conv      [(k0-1)+(k1-1), q_dim+kv_dim]  the newest pre-convolution q|k columns (zeros before t=0)
 *   delayed   [kv_dim/2]                     the previous token's v_proj_delayed output
 * Everything (caches and the scratch of a step of up to max_step_tokens rows) is allocated at init;
 * steps never allocate. Every step reproduces zaya_model_logits() of the whole sequence row by row. */
#ifndef ZAYA_INFER_H
#define ZAYA_INFER_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "zaya/model.h"
#include "zaya/rng.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_infer zaya_infer;

typedef struct zaya_infer_opts {
    int64_t max_seqs;        /* sequence slots (batch) */
    int64_t max_len;         /* tokens per sequence (<= max_position_embeddings) */
    int64_t max_step_tokens; /* rows processed at once; longer steps are split (0: max_seqs * 64) */
    int gemv;                /* 1: own GEMV kernel for single-row projections, 0: oneDNN always */
} zaya_infer_opts;

/* The model must outlive the engine; its weights are read at every step (not copied). */
zaya_status zaya_infer_init(zaya_infer **out, zaya_model *m, const zaya_infer_opts *opts);
/* The same over a weight store (zaya/infer_weights.h), which must outlive the engine. With bf16
 * weights the K/V caches are bf16 too (conv and delayed-value state stay f32). */
struct zaya_infer_weights;
zaya_status zaya_infer_init_weights(zaya_infer **out, const struct zaya_infer_weights *w, const zaya_infer_opts *opts);
const struct zaya_infer_weights *zaya_infer_get_weights(const zaya_infer *e);
void zaya_infer_free(zaya_infer *e);

/* Memory plan: cache bytes per token (K and V of every layer), fixed state per sequence (conv +
 * delayed value of every layer), and the total allocated by init. */
int64_t zaya_infer_kv_bytes_per_token(const zaya_infer *e);
int64_t zaya_infer_state_bytes_per_seq(const zaya_infer *e);
int64_t zaya_infer_total_bytes(const zaya_infer *e);
int64_t zaya_infer_max_len(const zaya_infer *e);
int64_t zaya_infer_max_seqs(const zaya_infer *e);
int64_t zaya_infer_vocab(const zaya_infer *e);
int64_t zaya_infer_step_tokens(const zaya_infer *e); /* rows per internal step */
/* Bytes of weights and K/V cache the steps have read so far (each weight matrix counted once per
 * product, only the experts that got rows, every cached K/V row each attention read). */
int64_t zaya_infer_bytes_read(const zaya_infer *e);
void zaya_infer_set_gemv(zaya_infer *e, int on);

/* Empties a slot (length 0, state zeroed). */
void zaya_infer_reset(zaya_infer *e, int64_t slot);
int64_t zaya_infer_len(const zaya_infer *e, int64_t slot);
/* Makes slot dst a copy of slot src (cached tokens and state): shared prompts are computed once. */
void zaya_infer_copy_slot(zaya_infer *e, int64_t dst, int64_t src);

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

/* ---- generation (src/infer/generate.c) ---- */

typedef struct zaya_gen_opts {
    int64_t max_tokens;      /* generated tokens per sequence, stop token excluded */
    const int32_t *stop_ids; /* a sampled stop id ends its sequence and is not emitted */
    int nstop;
} zaya_gen_opts;

/* Called for every emitted token as soon as it is sampled (streaming); a non-zero return ends that
 * sequence (e.g. a stop string appeared in its text). */
typedef int (*zaya_gen_token_fn)(void *ctx, int64_t seq, int32_t token);

typedef struct zaya_gen_stats {
    int64_t prefill_tokens, decode_tokens;
    double prefill_s, decode_s; /* engine steps only: no sampling, no callbacks */
    int64_t decode_bytes;       /* weights + K/V the decode steps read (zaya_infer_bytes_read) */
} zaya_gen_stats;

/* Decode throughput against the memory-bandwidth bound: bytes read per token (decode_bytes /
 * decode_tokens) at `gbps` (e.g. a STREAM triad) give bound_tps; fraction = tps / bound_tps. */
typedef struct zaya_decode_bound {
    double bytes_per_token, tps, bound_tps, fraction;
} zaya_decode_bound;
zaya_decode_bound zaya_infer_decode_bound(int64_t decode_bytes, int64_t decode_tokens, double decode_s, double gbps);

/* Generates for nseq prompts in slots 0..nseq-1 (reset first). Tokens are drawn from the sampler's
 * vocabulary, the first smp->vocab ids of the model's (a model's table is often padded beyond its
 * tokenizer's: the padding ids are never produced). out[s] has room for max_tokens ids;
 * out_lens[s] receives the count. Generation also stops at the engine's max_len. stats may be NULL. */
zaya_status zaya_infer_generate(zaya_infer *e, zaya_sampler *smp, int64_t nseq, const int32_t *const *prompts,
                                const int64_t *prompt_lens, const zaya_gen_opts *o, zaya_gen_token_fn cb, void *ctx,
                                int32_t *const *out, int64_t *out_lens, zaya_gen_stats *stats);

/* ---- scoring (src/infer/eval.c) ---- */

/* log p(token) from a logits row (log-softmax in double). */
double zaya_log_prob(const float *logits, int64_t V, int32_t token);

/* Language-modelling loss over a token stream cut into consecutive windows of `window` tokens
 * (the last one shorter); within each window every token after the first is scored given the
 * window before it. Windows run up to max_seqs at a time. token_bytes [V] (may be NULL) gives each
 * id's byte length for bits per byte. */
typedef struct zaya_eval_lm {
    double nll;     /* nats, summed */
    int64_t tokens; /* scored tokens */
    int64_t bytes;  /* bytes of the scored tokens (0 without token_bytes) */
    double seconds;
} zaya_eval_lm;
zaya_status zaya_eval_lm_tokens(zaya_infer *e, const int32_t *ids, int64_t n, int64_t window,
                                const int64_t *token_bytes, zaya_eval_lm *out);
/* Reads the first `limit` ids (0: all) of a token shard, checking its vocabulary fits the model's. */
zaya_status zaya_eval_read_shard(const char *path, int64_t vocab, int64_t limit, int32_t **ids, size_t *n);
static inline double zaya_eval_ppl(const zaya_eval_lm *r) { return exp(r->nll / (double)r->tokens); }
static inline double zaya_eval_bpb(const zaya_eval_lm *r) { return r->nll / log(2.0) / (double)r->bytes; }

/* Multiple choice (lm-eval-harness conventions). Every choice c of an item is a context string and
 * a continuation string; the score is the summed log-likelihood of the continuation's tokens given
 * the context (encoded as lm-eval-harness: trailing spaces of the context move to the continuation,
 * context + continuation is encoded whole and the tokens after the context's own encoding are
 * scored). acc takes the best score, acc_norm the best score divided by norm_bytes[c].
 *
 * Layouts (src/infer/mc_formats.c): zaya {context, choices, label} as given, and the released forms
 * of HellaSwag, ARC, PIQA, Winogrande (partial scoring: the option fills the blank in the context,
 * the rest of the sentence is the continuation), MMLU (HF JSON and the original CSV) and LAMBADA
 * ({text}: context = text up to its last space, the one continuation = " " + the last word), with
 * lm-eval-harness's prompts. */
typedef enum zaya_mc_format {
    ZAYA_MC_AUTO = 0,
    ZAYA_MC_ZAYA,
    ZAYA_MC_HELLASWAG,
    ZAYA_MC_ARC,
    ZAYA_MC_PIQA,
    ZAYA_MC_WINOGRANDE,
    ZAYA_MC_MMLU,
    ZAYA_MC_LAMBADA, /* {text}: last-word prediction, one continuation per item (lm-eval lambada_openai) */
} zaya_mc_format;

/* "hellaswag" -> ZAYA_MC_HELLASWAG ("auto" too); an unknown name is an error listing the known ones. */
zaya_status zaya_mc_format_parse(const char *name, zaya_mc_format *out);
const char *zaya_mc_format_name(zaya_mc_format f);

typedef struct zaya_mc_doc {
    int64_t line; /* 1-based line of the record (JSON arrays: the item's index, 1-based) */
    int nchoices;
    char **ctx;          /* [nchoices] */
    char **cont;         /* [nchoices] */
    int64_t *norm_bytes; /* [nchoices] acc_norm divisor: bytes of the choice text (no delimiter) */
    int label;
} zaya_mc_doc;

typedef struct zaya_mc_docs {
    zaya_mc_doc *docs;
    int64_t n;
    zaya_mc_format format; /* the layout read (detected from the first record under ZAYA_MC_AUTO) */
} zaya_mc_docs;

/* Reads a task file: JSONL, a JSON array of records, or (MMLU) the original headerless CSV
 * question,A,B,C,D,answer. Every record must have the layout's fields; errors name file:line and
 * the field, and nothing is returned. PIQA records without "label" take their labels from the
 * released companion file (X.jsonl -> X-labels.lst). */
zaya_status zaya_mc_read(const char *path, zaya_mc_format fmt, zaya_mc_docs *out);
void zaya_mc_docs_free(zaya_mc_docs *d);

typedef struct zaya_mc_item {
    int64_t line;
    int nchoices;
    int32_t **seq;       /* [nchoices] context tokens, then continuation tokens */
    int64_t *nseq;       /* [nchoices] */
    int64_t *nctx;       /* [nchoices] context tokens (>= 1); seq[nctx..nseq) is scored */
    int64_t *norm_bytes; /* [nchoices] */
    int64_t common;      /* leading tokens equal in every seq and within every context: prefilled once */
    int label;
} zaya_mc_item;

typedef struct zaya_mc_set {
    zaya_mc_item *items;
    int64_t n;
} zaya_mc_set;

struct zaya_tokenizer;
/* Tokenizes docs and checks each sequence against max_len. Errors name the record's line. */
zaya_status zaya_mc_tokenize(const zaya_mc_docs *docs, const char *path, const struct zaya_tokenizer *tok,
                             int64_t max_len, zaya_mc_set *out);
/* zaya_mc_read + zaya_mc_tokenize; format_out (may be NULL) receives the layout read. */
zaya_status zaya_mc_load(const char *path, zaya_mc_format fmt, const struct zaya_tokenizer *tok, int64_t max_len,
                         zaya_mc_set *out, zaya_mc_format *format_out);
void zaya_mc_free(zaya_mc_set *set);

typedef struct zaya_mc_result {
    int64_t n, correct, correct_norm;
    double acc, acc_norm;
    double acc_stderr, acc_norm_stderr; /* sqrt(p (1 - p) / (n - 1)) (lm-eval-harness); NAN for n < 2 */
    /* The gold continuation (choice `label`) of every item, as lm-eval's loglikelihood requests give it:
     * greedy = every one of its tokens is the argmax of its logits (first index on ties); ll_gold is
     * the sum over items of its log-likelihood. LAMBADA reports acc = acc_greedy and
     * perplexity = exp(-ll_gold / n) (lm-eval's `perplexity` aggregation: exp of minus the mean). */
    int64_t greedy;
    double acc_greedy, acc_greedy_stderr;
    double ll_gold, ppl_gold;
    double seconds;
} zaya_mc_result;
/* scores (may be NULL): one double per choice of every item, in order. */
zaya_status zaya_eval_mc(zaya_infer *e, const zaya_mc_set *set, double *scores, zaya_mc_result *out);

#ifdef __cplusplus
}
#endif

#endif

/* Model sizing: exact parameter / FLOP / memory calculators for ZAYA1 and standard transformer families,
 * hardware profiles, sizing rules, a step-time and inference-latency model, and an MoE shape search.
 *
 * The architecture is described by a family-neutral zaya_size_arch filled from an HF config.json (the families
 * are listed in docs/size.md: zaya, llama, mistral, qwen2/3, the qwen MoEs, mixtral, olmoe, deepseek_v2/v3,
 * gpt_oss, gemma2/3, phimoe, dbrx, granitemoe, glm4_moe, llama4). Every count is derived from tensor
 * shapes, never from a closed-form approximation, so the per-component table adds up to exactly what a
 * checkpoint stores. */
#ifndef ZAYA_SIZE_H
#define ZAYA_SIZE_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "zaya/dtype.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- architecture */

typedef enum zaya_size_attn_kind {
    ZAYA_SIZE_ATTN_MHA, ZAYA_SIZE_ATTN_GQA, ZAYA_SIZE_ATTN_CCA, ZAYA_SIZE_ATTN_MLA
} zaya_size_attn_kind;
typedef enum zaya_size_qk_norm {
    ZAYA_SIZE_QK_NORM_NONE, ZAYA_SIZE_QK_NORM_HEAD, ZAYA_SIZE_QK_NORM_FULL
} zaya_size_qk_norm;
typedef enum zaya_size_router_kind {
    ZAYA_SIZE_ROUTER_NONE, ZAYA_SIZE_ROUTER_LINEAR, ZAYA_SIZE_ROUTER_ZAYA
} zaya_size_router_kind;

/* The config keys a family spells each size with, so that errors quote the user's file. */
typedef struct zaya_size_arch_keys {
    const char *vocab, *hidden, *layers, *heads, *kv_heads, *head_dim, *dense_ffn, *experts, *expert_ffn, *top_k;
} zaya_size_arch_keys;

typedef struct zaya_size_arch {
    char family[32]; /* HF model_type (of text_config when the file nests one) */
    zaya_size_arch_keys keys;
    int text_only;   /* read from the text_config of a multimodal config (vision encoder not counted) */
    int64_t vocab, hidden, layers;
    int tied_embeddings;
    /* attention */
    zaya_size_attn_kind attn;
    int64_t heads, kv_heads, head_dim; /* for CCA: latent query / KV heads */
    int qkv_bias, o_bias;
    int attn_sinks;                 /* one learned sink logit per query head (gpt_oss) */
    /* multi-head latent attention (deepseek_v2/v3): heads = query heads, kv_heads = heads, head_dim =
     * qk_nope_dim + qk_rope_dim; the cache holds kv_lora_rank + qk_rope_dim values per token and layer */
    int mla;
    int64_t q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim, v_head_dim;
    /* local attention: n_window_layers of the layers attend to at most `window` previous tokens
     * (sliding window or chunked attention); the rest attend to the whole context */
    int64_t window, n_window_layers;
    zaya_size_qk_norm qk_norm;           /* HEAD: per-head gain (qwen3); FULL: gain over the whole q / k (olmoe) */
    int64_t cca_time0, cca_time1;   /* CCA conv kernel sizes (depthwise, grouped) */
    /* feed-forward: layer i is MoE when moe_layer[i], else dense SwiGLU of width dense_ffn */
    int64_t dense_ffn;
    int64_t n_moe_layers;           /* derived from the layer pattern */
    int64_t experts, expert_ffn, top_k;
    int64_t shared_experts, shared_ffn;
    zaya_size_router_kind router;
    int64_t router_hidden;          /* ZAYA router latent (256) */
    int64_t router_classes;         /* ZAYA: experts + 1 skip class (17) */
    int router_eda;                 /* ZAYA: EDA scale vector on every MoE layer but the first */
    int router_bias;                /* linear router with bias */
    int shared_gate;                /* sigmoid gate (hidden -> 1) on the shared expert (qwen2_moe) */
    int expert_bias;                /* biases on the expert projections (gpt_oss) */
    int64_t mtp_layers;             /* multi-token-prediction modules (deepseek_v3): counted apart */
    /* norms and residual scales */
    int residual_scales;            /* ZAYA: (x+b)*s on both merges + input affine */
    int input_affine;               /* ZAYA: the input affine (x+b)*s alone (zaya_residual_scaling false keeps it) */
    int norms_per_layer;            /* 2 (pre-attention, pre-MLP); gemma2/3: 4 (also post-attention, post-MLP) */
    int norm_bias;                  /* LayerNorm with a bias vector (phimoe) */
    int lm_head_bias;               /* bias on the untied LM head (phimoe) */
    int64_t max_seq;
} zaya_size_arch;

/* Fills arch from a parsed HF config.json (a `text_config` object is read in place of the top level).
 * Unknown model_type, missing keys and config features that change the counts but are not modelled are
 * errors naming the key. */
zaya_status zaya_size_arch_from_config(const cJSON *cfg, zaya_size_arch *arch);
/* Reads a config file: regular files of at most 16 MiB only (directories and pipes are refused with a
 * plain message), duplicate keys in any object refused. */
/* `spec`: a config.json path (zaya_json_load_config) or a zaya preset name (zaya1-8b, zaya1-small, zaya1-tiny). */
zaya_status zaya_size_arch_load(const char *spec, zaya_size_arch *arch);
/* The ZAYA1 model config (the one reader of model_type "zaya") in the family-neutral description. */
struct zaya_config;
void zaya_size_arch_from_zaya_config(const struct zaya_config *config, zaya_size_arch *arch);
/* Families zaya_size_arch_from_config reads, comma-separated. */
const char *zaya_size_arch_families(void);
/* Structural validation (positive sizes, heads divide, top_k <= experts, ...). */
zaya_status zaya_size_arch_validate(const zaya_size_arch *arch);
/* The ZAYA1 block structure (CCA 2x query compression, 4 query heads per KV head, ZAYA router, top-k
 * experts) at a given shape; used by the search and by tests. */
void zaya_size_arch_zaya_like(zaya_size_arch *a, int64_t hidden, int64_t layers, int64_t experts, int64_t expert_ffn,
                         int64_t top_k, int64_t vocab);
const char *zaya_size_attn_kind_name(zaya_size_attn_kind k);

/* ---------------------------------------------------------------- parameters */

#define ZAYA_SIZE_MAX_ROWS 48

typedef struct zaya_size_param_row {
    char name[48];
    int64_t each;      /* parameters per instance */
    int64_t instances; /* e.g. layers, or layers x experts */
    int64_t total;     /* each * instances */
    int64_t active;    /* parameters a token uses */
    int embedding;     /* embedding / LM head rows (excluded from "non-embedding") */
    int matrix;        /* 2-D weight a Muon optimizer would own */
    int matmul;        /* multiplied with every token it sees: 2 FLOPs per parameter per token */
    int64_t rows_, cols_; /* matrix shape (for Newton-Schulz cost) when matrix */
    int mtp;           /* part of a multi-token-prediction module */
} zaya_size_param_row;

typedef struct zaya_size_params {
    int nrows;
    zaya_size_param_row rows[ZAYA_SIZE_MAX_ROWS];
    int64_t total, active, embedding;          /* embedding = input table + untied head */
    int64_t non_embedding, active_non_embedding;
    int64_t matrix_total;                      /* Muon-eligible (2-D, non-embedding) */
    int64_t active_compute;                    /* active without an untied input embedding (a lookup, no matmul):
                                                * the "active" convention of the DeepSeek and gpt-oss cards */
    int64_t mtp;                               /* MTP modules (rows flagged mtp), not in total / active */
    int64_t checkpoint;                        /* total + mtp + the embedding/head copies an MTP module stores */
} zaya_size_params;

void zaya_size_count_params(const zaya_size_arch *a, zaya_size_params *p);

/* ---------------------------------------------------------------- FLOPs, KV cache, memory */

typedef struct zaya_size_flops {
    double linear_fwd;     /* 2 x active matmul params (incl. router, convs, LM head) */
    double attn_fwd;       /* QK^T and AV at causal average context (T+1)/2, in the attention latent */
    double fwd, train, train_recompute; /* per token */
} zaya_size_flops;

void zaya_size_count_flops(const zaya_size_arch *a, int64_t seq, zaya_size_flops *f);

/* KV cache bytes per token of context held by the full-attention layers plus, while the context is
 * shorter than the window, the local ones (all layers, K and V; MLA: the compressed latent + rope key),
 * and constant per-sequence state bytes (CCA conv columns and delayed value). */
double zaya_size_kv_bytes_per_token(const zaya_size_arch *a, int bytes_per_value);
/* KV cache of one sequence at `context` tokens: local-attention layers hold min(context, window). */
double zaya_size_kv_bytes(const zaya_size_arch *a, int64_t context, int bytes_per_value);
double zaya_size_kv_state_bytes(const zaya_size_arch *a, int bytes_per_value);

typedef enum zaya_size_optimizer { ZAYA_SIZE_OPT_ADAMW, ZAYA_SIZE_OPT_MUON } zaya_size_optimizer;

typedef struct zaya_size_mem_opts {
    int zero_stage;       /* 0..3 */
    int dp;               /* data-parallel degree */
    int cp;               /* context-parallel degree: each sequence over cp ranks, ZeRO sharding over dp x cp */
    zaya_size_optimizer optimizer; /* MUON: 1 fp32 momentum on 2-D matrices, AdamW (2 states) elsewhere */
    int weight_bytes;     /* 2 (bf16 working weights) */
    int master_bytes;     /* 4 (fp32 master copy; 0 = none) */
    int grad_bytes;       /* 4 (fp32 gradient accumulation) */
    int state_bytes;      /* 4 per optimizer state value */
    int64_t micro_batch, seq;
    int recompute;        /* full activation recomputation (selects total_recompute as the need) */
} zaya_size_mem_opts;

typedef struct zaya_size_mem {
    double weights, master, grads, optimizer;  /* per rank, bytes */
    double act_per_layer, act_full, act_recompute, logits;
    double cp_buffers;    /* context parallelism: every chunk's K/V and their gradients (one layer at a time) */
    double total, total_recompute;
} zaya_size_mem;

void zaya_size_mem_opts_default(zaya_size_mem_opts *o);
void zaya_size_train_memory(const zaya_size_arch *a, const zaya_size_mem_opts *o, zaya_size_mem *m);
/* Its cp_buffers term alone (0 without context parallelism). */
double zaya_size_cp_buffer_bytes(const zaya_size_arch *a, const zaya_size_mem_opts *o);
/* Bytes of model state per parameter before sharding (weights + master + grads + 2 AdamW states):
 * 18 with the defaults, 16 with bf16 gradients (the ZeRO paper's mixed-precision Adam). */
double zaya_size_mem_bytes_per_param(const zaya_size_mem_opts *o);
/* "fp32" -> 4, "bf16" / "fp16" -> 2, "none" -> 0 (master weights only). */
zaya_status zaya_size_mem_parse_dtype(const char *s, int allow_none, int *bytes);

/* Does a layout fit in `cap` bytes per device? Names the largest term and the smallest single change
 * that fits (recomputation, a higher ZeRO stage, a smaller micro-batch, more data-parallel ranks). */
typedef struct zaya_size_fit {
    double need, cap;          /* bytes per device; cap 0 = unknown (always fits) */
    int fits;
    char largest[32];          /* name of the largest term */
    double largest_bytes;
    char advice[256];          /* "" when it fits */
} zaya_size_fit;

void zaya_size_train_fit(const zaya_size_arch *a, const zaya_size_mem_opts *o, double cap, zaya_size_fit *f);
/* Inference: weights (bytes_per_value each, all experts resident) + KV cache of batch sequences. */
void zaya_size_infer_fit(const zaya_size_arch *a, int64_t batch, int64_t context, int bytes_per_value, double cap,
                         zaya_size_fit *f);
/* The same with the weights in format w (NULL: as zaya_size_infer_fit); the KV cache stays at
 * bytes_per_value. */
struct zaya_size_weights;
void zaya_size_infer_fit_weights(const zaya_size_arch *a, int64_t batch, int64_t context, int bytes_per_value,
                                 const struct zaya_size_weights *w, double cap, zaya_size_fit *f);

/* ---------------------------------------------------------------- inference weight formats */

/* How inference stores the weights (src/size/quant.c, docs/size.md). DEFAULT: every tensor in the
 * compute dtype (bf16, or f32 with --dtype f32), as before. A chosen format keeps every tensor it does
 * not quantize in bf16; quantized tensors are 2-D [out, in] weights:
 *   fp8    E4M3 + one fp32 scale per tensor              (8 bits)
 *   int8   + one bf16 scale per output channel           (8 + 16 / in bits)
 *   int4   groups of 128 inputs, one bf16 scale each     (4.125 bits)
 *   mxfp4  E2M1 in blocks of 32 inputs, one E8M0 scale   (4.25 bits)
 * Scope: EXPERTS quantizes only the MoE expert weights (gpt-oss's published MXFP4 checkpoint), LINEAR
 * every 2-D projection of the blocks (attention, dense MLP, experts, shared experts). The router, the
 * embeddings and head, norms, biases, convolutions and scales are never quantized. AUTO = EXPERTS for
 * MXFP4 on an MoE model, LINEAR otherwise. */
typedef enum zaya_size_wformat {
    ZAYA_SIZE_WF_DEFAULT = 0, ZAYA_SIZE_WF_BF16, ZAYA_SIZE_WF_FP8, ZAYA_SIZE_WF_INT8, ZAYA_SIZE_WF_INT4, ZAYA_SIZE_WF_MXFP4
} zaya_size_wformat;
typedef enum zaya_size_wscope { ZAYA_SIZE_WQ_AUTO = 0, ZAYA_SIZE_WQ_EXPERTS, ZAYA_SIZE_WQ_LINEAR } zaya_size_wscope;
typedef struct zaya_size_weights {
    zaya_size_wformat format;
    zaya_size_wscope scope;
} zaya_size_weights;

/* format: bf16|fp8|int8|int4|mxfp4 (NULL: DEFAULT); scope: auto|experts|linear (NULL: auto). */
zaya_status zaya_size_weights_parse(const char *format, const char *scope, zaya_size_weights *out);
const char *zaya_size_weights_name(const zaya_size_weights *w); /* "mxfp4", "default" for NULL */
zaya_size_wscope zaya_size_weights_scope(const zaya_size_weights *w, const zaya_size_arch *a); /* AUTO resolved */
/* One line: the format, its scales and what it quantizes. */
void zaya_size_weights_describe(const zaya_size_weights *w, const zaya_size_arch *a, char *buf, size_t cap);
int zaya_size_weights_quantizes(const zaya_size_weights *w, const zaya_size_arch *a, const zaya_size_param_row *r);
/* Bytes of one instance of row r (plain_bytes per parameter when it is not quantized). */
double zaya_size_weights_row_bytes(const zaya_size_weights *w, const zaya_size_arch *a, const zaya_size_param_row *r,
                                   double plain_bytes);
typedef struct zaya_size_weight_bytes {
    double total;                               /* every tensor inference loads (MTP modules excluded) */
    double quantized_params, quantized_bytes;   /* the tensors the format quantizes, scales included */
    double kept_params, kept_bytes;             /* the rest (bf16 under a chosen format) */
    double bits_per_quantized;                  /* 8 * quantized_bytes / quantized_params */
} zaya_size_weight_bytes;
/* plain_bytes: bytes per parameter under DEFAULT (2 bf16, 4 f32). */
void zaya_size_weights_bytes(const zaya_size_arch *a, const zaya_size_weights *w, double plain_bytes,
                            zaya_size_weight_bytes *out);

/* ---------------------------------------------------------------- hardware profiles */

typedef struct zaya_size_gemm_point { int bf16; int64_t m, n, k; double gflops; } zaya_size_gemm_point;
typedef struct zaya_size_coll_point { int ranks; double bytes, time_us; } zaya_size_coll_point;

enum {
    ZAYA_SIZE_COLL_ALLREDUCE, ZAYA_SIZE_COLL_REDUCE_SCATTER, ZAYA_SIZE_COLL_ALL_GATHER, ZAYA_SIZE_COLL_BROADCAST,
    ZAYA_SIZE_COLL_N
};

typedef struct zaya_size_hw {
    char name[64];
    char source[160];   /* "built-in (public spec)" or the profile path */
    int is_gpu;
    int compute_units;  /* CUs / SMs / cores */
    int tiles_per_cu;   /* concurrent output tiles per unit: a wave is compute_units x tiles_per_cu */
    int tile_m, tile_n, tile_k, align; /* GEMM macro tile and the width granularity rules ask for */
    double peak_bf16, peak_f32;  /* FLOP/s */
    double gemm_eff_max;         /* best achievable fraction of peak for large aligned GEMMs */
    double attn_eff;             /* fused attention kernel fraction of peak */
    double mem_bw;               /* B/s (STREAM triad or spec) */
    double mem_eff;              /* achievable fraction of mem_bw for streaming ops */
    double mem_bytes;            /* capacity per device, 0 = unknown */
    double launch_s;             /* per-kernel overhead */
    int ranks_per_node;
    double intra_bw, inter_bw;   /* per rank, per direction, B/s */
    double link_latency_s;
    int act_bf16;                /* compute dtype for the model: 1 bf16, 0 f32 */
    int ngemm;
    zaya_size_gemm_point *gemm;       /* measured throughput table (owned) */
    int ncoll[ZAYA_SIZE_COLL_N];
    zaya_size_coll_point *coll[ZAYA_SIZE_COLL_N];
} zaya_size_hw;

/* name: mi300x | h100 | h200 | host (needs profile_path) | a path ending in .json. */
zaya_status zaya_size_hw_get(const char *name, const char *profile_path, zaya_size_hw *hw);
/* A measured machine profile (zaya/profile.h reads and validates the file) as hardware; `what` names
 * it in errors and becomes hw->source. The _json form reads the profile tree first. */
struct zaya_profile;
zaya_status zaya_size_hw_from_profile(const struct zaya_profile *p, const char *what, zaya_size_hw *hw);
zaya_status zaya_size_hw_from_profile_json(const cJSON *root, const char *what, zaya_size_hw *hw);
void zaya_size_hw_free(zaya_size_hw *hw);
/* Compute dtype the model assumes: "bf16" (the trainer's default) or "f32". */
zaya_status zaya_size_hw_set_dtype(zaya_size_hw *hw, const char *dtype);

/* ---------------------------------------------------------------- GEMM and collective models */

typedef struct zaya_size_gemm_est {
    double flops, time_s, eff;           /* eff = achieved / peak */
    double tile_eff, wave_eff, k_eff;    /* GPU quantization factors (1 for measured tables) */
    int64_t tiles, waves, split;         /* tiles incl. split-K partials */
    int mem_bound;
} zaya_size_gemm_est;

void zaya_size_gemm_estimate(const zaya_size_hw *hw, int64_t m, int64_t n, int64_t k, zaya_size_gemm_est *e);
/* `groups` equal GEMMs in one grouped launch (the experts of a layer): their tiles share the waves. */
void zaya_size_gemm_estimate_grouped(const zaya_size_hw *hw, int64_t groups, int64_t m, int64_t n, int64_t k,
                                zaya_size_gemm_est *e);
/* Time of one collective of `bytes` (full buffer, nccl-tests convention) over `ranks`. */
double zaya_size_coll_time(const zaya_size_hw *hw, int coll, int ranks, double bytes);

/* ---------------------------------------------------------------- sizing rules */

typedef struct zaya_size_run {
    int64_t batch, seq;  /* micro-batch (sequences) and sequence length per rank */
    int tp;              /* intended tensor-parallel degree (rule: KV heads) */
} zaya_size_run;

typedef struct zaya_size_rule_hit {
    const char *rule_id;
    char what[96];       /* the dimension or GEMM concerned */
    char detail[200];    /* numbers */
    char fix[120];       /* nearest compliant value(s) */
    int severity;        /* 1 advisory (preferred), 2 violation */
} zaya_size_rule_hit;

typedef int (*zaya_size_rule_fn)(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run,
                            zaya_size_rule_hit *hits, int cap);

typedef struct zaya_size_rule {
    const char *id, *statement, *rationale;
    zaya_size_rule_fn check; /* appends hits (at most cap), returns the count */
} zaya_size_rule;

extern const zaya_size_rule zaya_size_rules[];
extern const int zaya_size_nrules;
int zaya_size_check_rules(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_run *run,
                          zaya_size_rule_hit *hits, int cap);
/* Nearest multiple of q to x (ties up), never below q. */
int64_t zaya_size_round_to(int64_t x, int64_t q);

/* The GEMMs of one training step of one layer kind (forward, input-gradient, weight-gradient). */
#define ZAYA_SIZE_MAX_GEMMS 96
typedef struct zaya_size_gemm_shape {
    char name[40];
    const char *pass;    /* "fwd", "dgrad", "wgrad" */
    int64_t m, n, k;
    int64_t groups;      /* GEMMs per grouped launch (experts), 1 otherwise */
    int64_t count;       /* launches per step (layers) */
    const char *dim[3];  /* what m, n, k are: "tokens", "tokens/expert", or the config width */
    int conv;            /* a grouped convolution as per-group products (CCA), not a linear layer */
} zaya_size_gemm_shape;

/* The one GEMM list of a training step: every forward GEMM first, then for forward i its input gradient
 * (index nf + 2i) and weight gradient (nf + 2i + 1). Returns the count (at most cap). */
int zaya_size_list_gemms(const zaya_size_arch *a, const zaya_size_run *run, zaya_size_gemm_shape *g, int cap);
/* The same list for a ZAYA1 config (mapped by zaya_size_arch_from_zaya_config) at `tokens` per step, in the
 * form `zaya bench gemm --from-config` times (zaya/bench_gemm.h): per linear layer its forward, input-
 * and weight-gradient GEMM in a row, with the transposes and beta of y = x W^T, dx = dy W, dW += dy^T x;
 * the name is the list's, the group its part ("attn", "router", "expert", "mlp", "head"), count = launches
 * x groups (the experts of a grouped launch run one after another on the CPU). The CCA grouped
 * convolution is left out (a convolution kernel, not a matmul). Fills up to cap shapes and returns how
 * many there are (cap 0 counts). */
struct zaya_gemm_shape;
int zaya_size_gemm_model_shapes(const struct zaya_config *config, int64_t tokens, zaya_dtype dtype,
                                struct zaya_gemm_shape *out, int cap);

/* ---------------------------------------------------------------- step-time and latency prediction */

typedef struct zaya_size_step_opts {
    int64_t batch, seq;       /* micro-batch per rank (seq: the whole sequence, also under CP) */
    int dp;
    int cp;                   /* context-parallel ranks per sequence */
    int cp_contiguous;        /* 1: one contiguous chunk per rank (unequal causal work), 0: zig-zag pairs */
    int zero_stage;
    zaya_size_optimizer optimizer;
    int recompute;
    double overlap;           /* fraction of DP communication hidden behind backward (0..1) */
    int grad_comm_bytes;      /* bytes per gradient element on the wire (4 fp32, 2 bf16) */
} zaya_size_step_opts;

typedef struct zaya_size_step_pred {
    double gemm_s, attn_s, memop_s, optimizer_s, comm_s, comm_exposed_s, step_s;
    double optimizer_ns_s;    /* Muon's Newton-Schulz part of optimizer_s */
    /* context parallelism, per attention layer and step: bytes one rank receives (f32, as the trainer
     * exchanges them): the all-gather of K/V (forward, and again in backward), the reduce-scatter of
     * dK/dV, the halo rows; and what an MHA of the same width (K/V = hidden each) would gather */
    double cp_gather_bytes, cp_scatter_bytes, cp_halo_bytes, cp_mha_gather_bytes;
    double cp_comm_s;         /* their time per step, all layers (not overlapped) */
    double cp_attn_imbalance; /* attention work of the busiest rank over the mean rank's */
    double tokens_per_s_rank, tokens_per_s_global;
    double model_flops, mfu;  /* model FLOPs per step per rank and their share of peak */
    double gemm_eff;          /* FLOP-weighted GEMM efficiency */
} zaya_size_step_pred;

void zaya_size_step_opts_default(zaya_size_step_opts *o);
/* Predicted time of one training step per rank; the trainer benchmark compares this with measured steps. */
zaya_status zaya_size_predict_step(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_step_opts *o,
                                   zaya_size_step_pred *p);

typedef struct zaya_size_infer_pred {
    int64_t batch, context;
    double prefill_s;          /* whole prompt of `context` tokens per sequence */
    double decode_s;           /* one token for the whole batch at `context` */
    double decode_weight_bytes, decode_kv_bytes, decode_route_s;
    double decode_bytes_s, decode_flops_s, decode_launch_s; /* terms of decode_s */
    double decode_tokens_per_s;
} zaya_size_infer_pred;

void zaya_size_predict_infer(const zaya_size_arch *a, const zaya_size_hw *hw, int64_t batch, int64_t context,
                             zaya_size_infer_pred *p);
/* The same with the weights in format w (NULL: the compute dtype): decode reads the head, the dense
 * tensors and the experts the batch touches in their stored bytes, scales included. Prefill GEMMs and
 * decode FLOPs are unchanged (dequantized to bf16 on the fly: no low-precision GEMM rate assumed). */
void zaya_size_predict_infer_weights(const zaya_size_arch *a, const zaya_size_hw *hw, int64_t batch, int64_t context,
                                     const zaya_size_weights *w, zaya_size_infer_pred *p);

/* ---------------------------------------------------------------- MoE shape search */

typedef struct zaya_size_search_opts {
    double total_params, active_params; /* non-embedding budgets */
    double tolerance;                   /* relative, e.g. 0.03 */
    int64_t seq, batch, vocab;
    int dp;
    int64_t hidden_min, hidden_max, hidden_step;
    int64_t layers_max;
    int ref_valid;                      /* compare against this shape in the explanation */
    zaya_size_arch ref;
} zaya_size_search_opts;

typedef struct zaya_size_candidate {
    int64_t hidden, layers, experts, expert_ffn, top_k, heads, kv_heads;
    double total, active;               /* non-embedding */
    double train_tok_s, decode_s, gemm_eff, mem_gb;
    int pareto;
    int recompute;                      /* ranked with activation recomputation (needed to fit) */
} zaya_size_candidate;

typedef struct zaya_size_search_result {
    int n, cap;
    zaya_size_candidate *c;                  /* sorted by training tokens/s, descending */
    int64_t examined;
    char fail[512];                     /* when n == 0: which constraint emptied the set */
} zaya_size_search_result;

void zaya_size_search_opts_default(zaya_size_search_opts *o);
/* One shape under the search's settings (batch, seq, DP, ZeRO-1, AdamW; recomputation exactly when the
 * activations would not fit otherwise): the search ranks with it and the explanation re-evaluates with
 * it, so candidate and reference are always compared under the same settings. */
zaya_status zaya_size_search_eval(const zaya_size_hw *hw, const zaya_size_search_opts *o, const zaya_size_arch *a,
                                  int *recompute, zaya_size_step_pred *sp, zaya_size_infer_pred *ip);
/* Reference minus candidate, term by term of the step model; step == gemm + attn_mem + optimizer + comm
 * exactly (the terms the explanation prints). */
typedef struct zaya_size_step_diff { double step, gemm, attn_mem, optimizer, comm; } zaya_size_step_diff;
void zaya_size_diff_step(const zaya_size_step_pred *cand, const zaya_size_step_pred *ref, zaya_size_step_diff *d);
zaya_status zaya_size_search(const zaya_size_hw *hw, const zaya_size_search_opts *o, zaya_size_search_result *r);
void zaya_size_search_result_free(zaya_size_search_result *r);
/* Writes the "why this shape" paragraph: the front's best vs the reference (or the runner-up). */
void zaya_size_search_explain(const zaya_size_hw *hw, const zaya_size_search_opts *o, const zaya_size_search_result *r,
                              FILE *f);

/* ---------------------------------------------------------------- reporting helpers */

/* "8.3B", "760M", "1.5T", "12k", "7e9", "8303355728" -> count (decimal multiples). */
zaya_status zaya_size_parse_count(const char *s, double *out);
/* Human figure: 8.30B, 753.6M. */
const char *zaya_size_fmt_count(double v, char *buf, size_t cap);

/* Architecture summary and per-component parameter table (what `zaya size info` and `zaya model info`
 * print). seq selects the attention context for the FLOP line. */
void zaya_size_print_info(const zaya_size_arch *a, int64_t seq, FILE *f);
/* The same with the memory table at a chosen layout (DP, ZeRO stage, micro-batch, dtypes; opts->seq). */
void zaya_size_print_info_opts(const zaya_size_arch *a, const zaya_size_mem_opts *opts, FILE *f);
/* The same as JSON (caller owns the result). */
cJSON *zaya_size_info_json(const zaya_size_arch *a, int64_t seq);

/* ---------------------------------------------------------------- the reports of `zaya size` */

/* Warns on stderr ("zaya size CMD: warning: ...") when seq exceeds the config's max_position_embeddings. */
void zaya_size_warn_seq(const char *cmd, const zaya_size_arch *a, int64_t seq);
/* Prints the fit verdict of the training layout to f (and its "train_memory" object into j when not
 * NULL); returns 1 when it fits. */
int zaya_size_print_train_fit(const zaya_size_arch *a, const zaya_size_mem_opts *mo, const zaya_size_hw *hw, FILE *f,
                              cJSON *j);

/* `zaya size info`: the tables of zaya_size_print_info_opts at mo->seq; OUT/info.json when out is set. */
zaya_status zaya_size_info_report(const char *config, const zaya_size_mem_opts *mo, const char *out, FILE *f);

typedef struct zaya_size_check_opts {
    const char *config, *hw, *profile; /* hw and profile as zaya_size_hw_get */
    const char *out;                   /* NULL: no check.json */
    int64_t batch, seq;
    int tp;
    zaya_size_mem_opts mem;
    zaya_size_weights weights; /* inference weight format of the inference memory line */
} zaya_size_check_opts;
/* `zaya size check`: the rules, their findings, every GEMM's efficiency and the training memory fit. */
zaya_status zaya_size_check_report(const zaya_size_check_opts *o, FILE *f);

typedef struct zaya_size_predict_opts {
    const char *config, *hw, *profile;
    const char *out;   /* NULL: no predict.json */
    const char *dtype; /* NULL: bf16 where the profile has it, else f32 */
    int64_t batch, seq, max_batch;
    int cp_contiguous; /* CP layout (zaya_size_step_opts) */
    double overlap;
    zaya_size_mem_opts mem;
    zaya_size_weights weights; /* inference weight format (memory and decode bytes) */
} zaya_size_predict_opts;
/* `zaya size predict`: training step time by part and the inference latency table (batch 1, 2, 4 ...). */
zaya_status zaya_size_predict_report(const zaya_size_predict_opts *o, FILE *f);

typedef struct zaya_size_search_report_opts {
    const char *hw, *profile;
    const char *out;     /* search.json, pareto.png */
    const char *compare; /* config whose shape the choice is explained against (NULL: the runner-up) */
    zaya_size_search_opts search; /* its tolerance is set from tolerance_pct */
    double tolerance_pct;         /* allowed deviation from each budget, percent */
    int top;                      /* rows of the ranking printed */
} zaya_size_search_report_opts;
/* `zaya size search`: the Pareto front, the ranking and the explanation; no candidate is an error. */
zaya_status zaya_size_search_report(const zaya_size_search_report_opts *o, FILE *f);

/* ---------------------------------------------------------------- validation against a real run */

#define ZAYA_SIZE_VALIDATE_MAX_STEPS 10000

typedef struct zaya_size_validate_opts {
    const char *config;     /* config.json of the model */
    const char *hw, *profile; /* as zaya_size_hw_get */
    const char *data;       /* token shards (NAME-train-00000.ztok ...) + tokenizer.json */
    const char *out;        /* run.json, train/, train.log, validate.json */
    const char *dtype;      /* "bf16" | "f32": GEMM precision of the run and of the model */
    const char *optimizer;  /* "muon" | "adamw" */
    int64_t batch, seq, micro_batch; /* micro_batch 0: batch */
    int64_t steps, warmup;  /* 0 < steps <= ZAYA_SIZE_VALIDATE_MAX_STEPS, 0 <= warmup < steps */
    int threads;            /* 0: all cores */
} zaya_size_validate_opts;

/* `zaya size validate`: predicts one training step of the config on the profile, runs a short
 * `zaya train` of this same binary (a child process) on a one-phase run with a constant batch, and
 * compares the median measured step (after the warm-up steps) with the prediction, also adjusted for
 * the load (oneDNN matmul peak now vs in the profile). Prints the comparison to out and writes
 * OUT/validate.json; any ratio is a success (a measurement, not a test). */
zaya_status zaya_size_validate_step(const zaya_size_validate_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

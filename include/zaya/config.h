/* ZAYA1 model configuration: the Hugging Face ZayaConfig keys (model_type "zaya"), built-in presets,
 * and validation that names the offending key and constraint. */
#ifndef ZAYA_CONFIG_H
#define ZAYA_CONFIG_H

#include <stdint.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the MoE branch outputs for a token routed to the skip (MoD) class. */
typedef enum zaya_skip_mode {
    ZAYA_SKIP_IDENTITY = 0, /* normed MoE input x probability (original training code; default) */
    ZAYA_SKIP_ZERO = 1,     /* zero (Hugging Face / vLLM inference) */
} zaya_skip_mode;

/* Architecture variants (zaya extension keys; value 0 is ZAYA1 itself, see docs/model.md "Variants"). */
typedef enum zaya_router_kind {
    ZAYA_ROUTER_ZAYA = 0,   /* "zaya": down-projection, EDA, RMSNorm, 3-layer GELU MLP, E + skip classes */
    ZAYA_ROUTER_NO_EDA = 1, /* "zaya_no_eda": the same without the exponential depth averaging */
    ZAYA_ROUTER_LINEAR = 2, /* "linear": softmax(W z) over the E experts, no skip class */
} zaya_router_kind;
typedef enum zaya_mlp_kind {
    ZAYA_MLP_MOE = 0,   /* "moe": router + E top-1 SwiGLU experts */
    ZAYA_MLP_DENSE = 1, /* "dense": one SwiGLU MLP of width zaya_dense_intermediate_size, no router */
} zaya_mlp_kind;
typedef enum zaya_residual_kind {
    ZAYA_RESIDUAL_SCALED = 0, /* zaya_residual_scaling true: (x + b) * s merges */
    ZAYA_RESIDUAL_PLAIN = 1,  /* false: x' = x + layer output, no residual-scale tensors */
} zaya_residual_kind;
/* The attention of each block: zaya extension key "zaya_attention" (default "cca"). GQA and MHA are
 * standard softmax attention (q/k/v/o projections, partial RoPE, causal) for architecture studies. */
typedef enum zaya_attention_kind {
    ZAYA_ATTENTION_CCA = 0, /* Compressed Convolutional Attention (ZAYA1) */
    ZAYA_ATTENTION_GQA = 1, /* num_key_value_heads KV heads shared by groups of query heads */
    ZAYA_ATTENTION_MHA = 2, /* num_key_value_heads == num_attention_heads (validated) */
} zaya_attention_kind;
const char *zaya_config_attention_name(zaya_attention_kind k); /* "cca" | "gqa" | "mha" */

typedef struct zaya_config {
    char name[64];
    int64_t vocab_size;
    int64_t hidden_size;          /* D */
    int64_t num_hidden_layers;    /* fused blocks (attention + MoE) */
    int64_t num_attention_heads;  /* query heads (latent) */
    int64_t num_key_value_heads;  /* KV heads (latent) */
    int64_t head_dim;
    int64_t num_experts;          /* routed experts; the router adds one skip class */
    int64_t num_experts_per_tok;  /* must be 1 */
    int64_t moe_intermediate_size;/* F: each expert is D -> 2F (gate|up) -> D */
    int64_t router_hidden_size;   /* R */
    int64_t cca_time0, cca_time1; /* depthwise and grouped conv kernel sizes */
    int64_t max_position_embeddings;
    double rope_theta;
    double partial_rotary_factor;
    double rms_norm_eps;
    double initializer_range;
    int tie_word_embeddings;      /* must be true */
    int64_t bos_token_id, eos_token_id, pad_token_id;
    zaya_skip_mode skip_mode;     /* zaya extension key "zaya_skip_mode": "identity" | "zero" */
    zaya_router_kind router;      /* "zaya_router": "zaya" | "zaya_no_eda" | "linear" */
    zaya_mlp_kind mlp;            /* "zaya_mlp": "moe" | "dense" */
    int64_t dense_intermediate_size; /* "zaya_dense_intermediate_size" (dense only; 0 = moe_intermediate_size) */
    zaya_residual_kind residual;  /* "zaya_residual_scaling": true | false */
    zaya_attention_kind attention;/* zaya extension key "zaya_attention": "cca" | "gqa" | "mha" */
} zaya_config;

/* Upper bounds of the integer keys. They are far above any ZAYA1 configuration (ZAYA1-8B: 40 blocks,
 * hidden 2048, 16 experts, vocab 262272) and low enough that every tensor size, offset and count
 * derived from a validated config fits int64 (layout.c, accounting.c) and every loop over layers or
 * experts ends quickly. Validation names the key and the bound. */
#define ZAYA_CONFIG_MAX_VOCAB (1ll << 24)     /* vocab_size */
#define ZAYA_CONFIG_MAX_HIDDEN (1ll << 20)    /* hidden_size */
#define ZAYA_CONFIG_MAX_LAYERS 4096ll         /* num_hidden_layers */
#define ZAYA_CONFIG_MAX_HEADS 4096ll          /* num_attention_heads, num_key_value_heads */
#define ZAYA_CONFIG_MAX_HEAD_DIM 256ll        /* head_dim (attention kernels) */
#define ZAYA_CONFIG_MAX_EXPERTS 4096ll        /* num_experts */
#define ZAYA_CONFIG_MAX_FFN (1ll << 20)       /* moe_intermediate_size */
#define ZAYA_CONFIG_MAX_ROUTER (1ll << 20)    /* router_hidden_size */
#define ZAYA_CONFIG_MAX_CONV 64ll             /* cca_time0, cca_time1 */
#define ZAYA_CONFIG_MAX_POSITIONS (1ll << 22) /* max_position_embeddings (RoPE table rows) */
#define ZAYA_CONFIG_MAX_PARAMS (1ll << 44)    /* stored floats of the whole model (~17.6e12) */

/* Derived sizes. */
static inline int64_t zaya_config_rot_dims(const zaya_config *c) {
    return (int64_t)(c->partial_rotary_factor * (double)c->head_dim + 0.5);
}
static inline int64_t zaya_config_q_dim(const zaya_config *c) { return c->num_attention_heads * c->head_dim; }
static inline int64_t zaya_config_kv_dim(const zaya_config *c) { return c->num_key_value_heads * c->head_dim; }
/* Width of the dense MLP (zaya_mlp "dense"). */
static inline int64_t zaya_config_dense_ffn(const zaya_config *c) {
    return c->dense_intermediate_size > 0 ? c->dense_intermediate_size : c->moe_intermediate_size;
}
/* Whether the blocks route (MoE) and whether the router carries a state between blocks (EDA). */
static inline int zaya_config_is_moe(const zaya_config *c) { return c->mlp == ZAYA_MLP_MOE; }
static inline int zaya_config_has_eda(const zaya_config *c) { return c->mlp == ZAYA_MLP_MOE && c->router == ZAYA_ROUTER_ZAYA; }
/* Router classes scored per token: E experts + the skip class (ZAYA routers) or E (linear). Buffers keep
 * E + 1 columns in every case (the skip column of a linear router is never selected). */
static inline int64_t zaya_config_router_classes(const zaya_config *c) {
    return c->router == ZAYA_ROUTER_LINEAR ? c->num_experts : c->num_experts + 1;
}
/* The variant names of config.json ("zaya", "moe", ...). */
const char *zaya_router_name(zaya_router_kind k);
const char *zaya_mlp_name(zaya_mlp_kind k);
/* 1 when every variant key has its ZAYA1 value (what transformers' Zaya represents). */
int zaya_config_is_zaya1(const zaya_config *c);

/* Names: "zaya1-8b" (published defaults), "zaya1-tiny" (~10M), "zaya1-small" (~100M total). */
zaya_status zaya_config_preset(const char *name, zaya_config *out);
const char *const *zaya_config_preset_names(void); /* NULL-terminated */
/* `spec` is a preset name or a path to config.json. */
zaya_status zaya_config_resolve(const char *spec, zaya_config *out);
zaya_status zaya_config_load(const char *path, zaya_config *out);
/* Parses a cJSON object (HF or legacy keys; missing keys take ZayaConfig defaults). */
struct cJSON;
zaya_status zaya_config_from_json(const struct cJSON *obj, zaya_config *out);
struct cJSON *zaya_config_to_json(const zaya_config *c); /* HF layout, model_type "zaya" */
zaya_status zaya_config_validate(const zaya_config *c);
/* Same tensors and math (ignores the name, RoPE base and context length, which a run may change). */
int zaya_config_same_architecture(const zaya_config *a, const zaya_config *b);

#ifdef __cplusplus
}
#endif

#endif

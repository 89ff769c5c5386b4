/* Family-neutral architecture description filled from HF config.json files. Each family reader states
 * which keys are required (missing -> error naming the key and the family) and which have the
 * defaults of that family's HF configuration class. */
#include <string.h>

#include "zaya/config.h"
#include "zaya/json.h"
#include "zaya/size.h"

const char *zaya_size_attn_kind_name(zaya_size_attn_kind k) {
    switch (k) {
    case ZAYA_SIZE_ATTN_MHA: return "MHA";
    case ZAYA_SIZE_ATTN_GQA: return "GQA";
    case ZAYA_SIZE_ATTN_CCA: return "CCA";
    case ZAYA_SIZE_ATTN_MLA: return "MLA";
    }
    return "?";
}

/* Every size is bounded where it is read, so that nothing loops over or multiplies an unchecked value
 * (zaya_size_arch_validate bounds the products). */
#define SIZE_MAX_VALUE ((int64_t)1 << 30)
#define LAYERS_MAX ((int64_t)1 << 20)

static int has(const cJSON *c, const char *key) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, key);
    return it && !cJSON_IsNull(it);
}

static zaya_status ranged(const cJSON *c, const char *key, int64_t *out, int required, int64_t lo, int64_t hi) {
    if (!has(c, key)) return required ? zaya_error_set(ZAYA_EINVAL, "missing required key '%s'", key) : ZAYA_OK;
    int64_t v = 0;
    ZAYA_TRY(zaya_json_get_i64(c, key, &v, 1)); /* integral and within 2^53 before any conversion */
    if (v < lo || v > hi)
        return zaya_error_set(ZAYA_ERANGE, "key '%s' = %lld is out of range (%lld..%lld)", key, (long long)v, (long long)lo,
                              (long long)hi);
    *out = v;
    return ZAYA_OK;
}
static zaya_status req(const cJSON *c, const char *key, int64_t *out) { return ranged(c, key, out, 1, 0, SIZE_MAX_VALUE); }
static zaya_status opt(const cJSON *c, const char *key, int64_t *out) { return ranged(c, key, out, 0, 0, SIZE_MAX_VALUE); }
static zaya_status req_layers(const cJSON *c, const char *key, int64_t *out) { return ranged(c, key, out, 1, 1, LAYERS_MAX); }

/* A config feature that changes the counts but is not modelled: named, never ignored. */
static zaya_status not_modelled(const char *key, const char *what) {
    return zaya_error_set(ZAYA_EUNSUPPORTED, "key '%s' is not modelled (%s)", key, what);
}
static zaya_status refuse_true(const cJSON *c, const char *key, const char *what) {
    int v = 0;
    ZAYA_TRY(zaya_json_get_bool(c, key, &v, 0));
    return v ? not_modelled(key, what) : ZAYA_OK;
}

static void set_attn_kind(zaya_size_arch *a) {
    if (a->mla) a->attn = ZAYA_SIZE_ATTN_MLA;
    else if (a->attn != ZAYA_SIZE_ATTN_CCA) a->attn = a->kv_heads == a->heads ? ZAYA_SIZE_ATTN_MHA : ZAYA_SIZE_ATTN_GQA;
}

/* Keys shared by llama-like families. head_dim defaults to hidden/heads (llama, mixtral, qwen2). */
static zaya_status read_common(const cJSON *c, zaya_size_arch *a) {
    ZAYA_TRY(req(c, "vocab_size", &a->vocab));
    ZAYA_TRY(req(c, "hidden_size", &a->hidden));
    ZAYA_TRY(req_layers(c, "num_hidden_layers", &a->layers));
    ZAYA_TRY(req(c, "num_attention_heads", &a->heads));
    a->kv_heads = a->heads;
    ZAYA_TRY(opt(c, "num_key_value_heads", &a->kv_heads));
    if (a->heads <= 0) return zaya_error_set(ZAYA_EINVAL, "num_attention_heads must be positive");
    a->head_dim = a->hidden / a->heads;
    ZAYA_TRY(opt(c, "head_dim", &a->head_dim));
    ZAYA_TRY(zaya_json_get_bool(c, "tie_word_embeddings", &a->tied_embeddings, 0));
    ZAYA_TRY(zaya_json_get_bool(c, "attention_bias", &a->qkv_bias, 0));
    a->o_bias = a->qkv_bias;
    ZAYA_TRY(refuse_true(c, "mlp_bias", "biases on the MLP projections"));
    ZAYA_TRY(opt(c, "max_position_embeddings", &a->max_seq));
    return ZAYA_OK;
}

/* Local-attention layers from `layer_types` (newer HF configs list every layer). Returns 1 in *found
 * when the key is present. */
static zaya_status layer_types(const cJSON *c, zaya_size_arch *a, int *found) {
    *found = 0;
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(c, "layer_types");
    if (!lt || cJSON_IsNull(lt)) return ZAYA_OK;
    if (!cJSON_IsArray(lt)) return zaya_error_set(ZAYA_EINVAL, "key 'layer_types' must be a list of strings");
    int64_t n = 0, local = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, lt) {
        if (!cJSON_IsString(e)) return zaya_error_set(ZAYA_EINVAL, "key 'layer_types' must hold strings");
        if (!strcmp(e->valuestring, "sliding_attention") || !strcmp(e->valuestring, "chunked_attention")) local++;
        else if (strcmp(e->valuestring, "full_attention"))
            return zaya_error_set(ZAYA_EUNSUPPORTED, "key 'layer_types': '%.40s' layers are not modelled", e->valuestring);
        if (++n > a->layers) break;
    }
    if (n != a->layers)
        return zaya_error_set(ZAYA_EINVAL, "key 'layer_types' lists %s%lld layers but num_hidden_layers is %lld",
                              n > a->layers ? "more than " : "", (long long)(n > a->layers ? a->layers : n), (long long)a->layers);
    a->n_window_layers = local;
    *found = 1;
    return ZAYA_OK;
}

/* `sliding_window` on every layer (mistral, mixtral, phimoe) unless layer_types says otherwise. */
static zaya_status sliding_all(const cJSON *c, zaya_size_arch *a) {
    ZAYA_TRY(opt(c, "sliding_window", &a->window));
    int found;
    ZAYA_TRY(layer_types(c, a, &found));
    if (!found && a->window > 0) a->n_window_layers = a->layers;
    return ZAYA_OK;
}

/* Number of i in [first, layers) with i % step == 0 (closed form: no loop over an unchecked count). */
static int64_t count_multiples(int64_t first, int64_t layers, int64_t step) {
    if (first >= layers) return 0;
    int64_t lo = (first + step - 1) / step; /* smallest multiple index >= first */
    int64_t hi = (layers - 1) / step;
    return hi >= lo ? hi - lo + 1 : 0;
}

/* MoE layer pattern of the qwen MoE families: layer i is sparse unless listed in mlp_only_layers, and
 * only every decoder_sparse_step-th layer ((i+1) % step == 0). */
static zaya_status qwen_moe_layers(const cJSON *c, zaya_size_arch *a) {
    int64_t step = 1;
    ZAYA_TRY(ranged(c, "decoder_sparse_step", &step, 0, 1, LAYERS_MAX));
    const cJSON *only = cJSON_GetObjectItemCaseSensitive(c, "mlp_only_layers");
    if (only && !cJSON_IsNull(only) && !cJSON_IsArray(only))
        return zaya_error_set(ZAYA_EINVAL, "key 'mlp_only_layers' must be a list of layer indices");
    /* sparse layers: i = step-1, 2 step-1, ... */
    a->n_moe_layers = a->experts > 0 ? a->layers / step : 0;
    if (a->experts > 0 && only && cJSON_IsArray(only)) {
        int n = cJSON_GetArraySize(only);
        if (n > a->layers) return zaya_error_set(ZAYA_EINVAL, "key 'mlp_only_layers' lists %d layers of %lld", n, (long long)a->layers);
        for (int i = 0; i < n; i++) {
            const cJSON *e = cJSON_GetArrayItem(only, i);
            if (!cJSON_IsNumber(e) || e->valuedouble != (double)(int64_t)e->valuedouble || e->valuedouble < 0 ||
                e->valuedouble >= (double)a->layers)
                return zaya_error_set(ZAYA_EINVAL, "key 'mlp_only_layers' must hold layer indices 0..%lld", (long long)(a->layers - 1));
            int64_t li = (int64_t)e->valuedouble;
            int dup = 0;
            for (int j = 0; j < i; j++) dup |= (int64_t)cJSON_GetArrayItem(only, j)->valuedouble == li;
            if (!dup && (li + 1) % step == 0) a->n_moe_layers--;
        }
    }
    return ZAYA_OK;
}

/* The zaya family is read by the model's own reader (zaya_config_from_json: HF and legacy Megatron
 * layouts, ZayaConfig defaults for missing keys), so `zaya size` and `zaya model info` give one answer
 * for one file. */
static zaya_status read_zaya(const cJSON *c, zaya_size_arch *a) {
    zaya_config zc;
    ZAYA_TRY(zaya_config_from_json(c, &zc));
    zaya_size_arch_from_zaya_config(&zc, a);
    return ZAYA_OK;
}

void zaya_size_arch_from_zaya_config(const zaya_config *zc, zaya_size_arch *a) {
    zaya_size_arch_zaya_like(a, zc->hidden_size, zc->num_hidden_layers, zc->num_experts, zc->moe_intermediate_size,
                             zc->num_experts_per_tok, zc->vocab_size);
    a->heads = zc->num_attention_heads;
    a->kv_heads = zc->num_key_value_heads;
    a->head_dim = zc->head_dim;
    a->cca_time0 = zc->cca_time0;
    a->cca_time1 = zc->cca_time1;
    a->router_hidden = zc->router_hidden_size;
    a->tied_embeddings = zc->tie_word_embeddings;
    a->max_seq = zc->max_position_embeddings;
    /* architecture variants (docs/model.md "Variants") */
    if (zc->router == ZAYA_ROUTER_NO_EDA) a->router_eda = 0;
    if (zc->router == ZAYA_ROUTER_LINEAR) {
        a->router = ZAYA_SIZE_ROUTER_LINEAR; /* [E, D], no bias, no skip class */
        a->router_classes = zc->num_experts;
        a->router_eda = 0;
    }
    if (zc->mlp == ZAYA_MLP_DENSE) { /* every block a dense SwiGLU MLP */
        a->n_moe_layers = 0;
        a->experts = a->top_k = a->expert_ffn = 0;
        a->router_classes = 0;
        a->dense_ffn = zaya_config_dense_ffn(zc);
        a->keys.dense_ffn = "zaya_dense_intermediate_size";
        a->router = ZAYA_SIZE_ROUTER_NONE;
        a->router_eda = 0;
    }
    if (zc->residual == ZAYA_RESIDUAL_PLAIN) a->residual_scales = 0;
    /* zaya_attention "gqa" / "mha": plain q/k/v/o projections, no convolutions, temperatures or conv state. */
    if (zc->attention != ZAYA_ATTENTION_CCA) a->attn = zc->attention == ZAYA_ATTENTION_MHA ? ZAYA_SIZE_ATTN_MHA : ZAYA_SIZE_ATTN_GQA;
}

/* deepseek_v2 / deepseek_v3 (and the MLA + dense-first + shared-expert layout they define). */
static zaya_status read_deepseek(const cJSON *c, zaya_size_arch *a, int v3) {
    ZAYA_TRY(req(c, "vocab_size", &a->vocab));
    ZAYA_TRY(req(c, "hidden_size", &a->hidden));
    ZAYA_TRY(req_layers(c, "num_hidden_layers", &a->layers));
    ZAYA_TRY(req(c, "num_attention_heads", &a->heads));
    ZAYA_TRY(zaya_json_get_bool(c, "tie_word_embeddings", &a->tied_embeddings, 0));
    ZAYA_TRY(refuse_true(c, "attention_bias", "biases on the MLA projections"));
    ZAYA_TRY(opt(c, "max_position_embeddings", &a->max_seq));
    a->mla = 1;
    ZAYA_TRY(opt(c, "q_lora_rank", &a->q_lora_rank)); /* null: a full q_proj (V2-Lite) */
    ZAYA_TRY(req(c, "kv_lora_rank", &a->kv_lora_rank));
    ZAYA_TRY(req(c, "qk_nope_head_dim", &a->qk_nope_dim));
    ZAYA_TRY(req(c, "qk_rope_head_dim", &a->qk_rope_dim));
    ZAYA_TRY(req(c, "v_head_dim", &a->v_head_dim));
    a->kv_heads = a->heads; /* every head gets its own K/V from the latent */
    a->head_dim = a->qk_nope_dim + a->qk_rope_dim;
    a->keys.head_dim = "qk_nope_head_dim";
    a->keys.kv_heads = "num_attention_heads";
    ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
    ZAYA_TRY(opt(c, "n_routed_experts", &a->experts)); /* null: a dense model */
    a->keys.experts = "n_routed_experts";
    if (a->experts > 0) {
        ZAYA_TRY(req(c, "moe_intermediate_size", &a->expert_ffn));
        ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(opt(c, "n_shared_experts", &a->shared_experts));
        a->shared_ffn = a->expert_ffn; /* shared experts have the routed experts' width */
        int64_t first = 0, freq = 1;
        ZAYA_TRY(ranged(c, "first_k_dense_replace", &first, 0, 0, LAYERS_MAX));
        ZAYA_TRY(ranged(c, "moe_layer_freq", &freq, 0, 1, LAYERS_MAX));
        a->n_moe_layers = count_multiples(first, a->layers, freq);
        a->router = ZAYA_SIZE_ROUTER_LINEAR;
        /* noaux_tc routing (V3) keeps a per-expert score-correction bias in the checkpoint */
        const char *method = NULL;
        ZAYA_TRY(zaya_json_get_str(c, "topk_method", &method, 0));
        a->router_bias = v3 || (method && !strcmp(method, "noaux_tc"));
    }
    if (v3) ZAYA_TRY(ranged(c, "num_nextn_predict_layers", &a->mtp_layers, 0, 0, 64));
    return ZAYA_OK;
}

static zaya_status read_gpt_oss(const cJSON *c, zaya_size_arch *a) {
    ZAYA_TRY(read_common(c, a));
    ZAYA_TRY(req(c, "num_local_experts", &a->experts));
    a->keys.experts = "num_local_experts";
    if (has(c, "num_experts_per_tok")) ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
    else {
        ZAYA_TRY(req(c, "experts_per_token", &a->top_k));
        a->keys.top_k = "experts_per_token";
    }
    ZAYA_TRY(req(c, "intermediate_size", &a->expert_ffn)); /* each expert's width */
    a->keys.expert_ffn = "intermediate_size";
    a->router = ZAYA_SIZE_ROUTER_LINEAR;
    a->router_bias = 1;
    a->expert_bias = 1;
    a->attn_sinks = 1;
    a->n_moe_layers = a->layers;
    ZAYA_TRY(opt(c, "sliding_window", &a->window));
    int found;
    ZAYA_TRY(layer_types(c, a, &found));
    if (!found && a->window > 0) a->n_window_layers = (a->layers + 1) / 2; /* even layers slide */
    return ZAYA_OK;
}

/* gemma2 / gemma3_text: four norms per layer, tied head, local/global pattern. Missing keys take the
 * defaults of Gemma2Config / Gemma3TextConfig (multimodal Gemma-3 files omit many of them). */
static zaya_status read_gemma(const cJSON *c, zaya_size_arch *a, int v3) {
    a->vocab = v3 ? 262208 : 256000;
    a->hidden = 2304;
    a->layers = 26;
    a->heads = 8;
    a->kv_heads = 4;
    a->head_dim = 256;
    a->dense_ffn = 9216;
    a->window = 4096;
    a->max_seq = v3 ? 131072 : 8192;
    a->tied_embeddings = 1;
    ZAYA_TRY(opt(c, "vocab_size", &a->vocab));
    ZAYA_TRY(opt(c, "hidden_size", &a->hidden));
    ZAYA_TRY(ranged(c, "num_hidden_layers", &a->layers, 0, 1, LAYERS_MAX));
    ZAYA_TRY(opt(c, "num_attention_heads", &a->heads));
    ZAYA_TRY(opt(c, "num_key_value_heads", &a->kv_heads));
    ZAYA_TRY(opt(c, "head_dim", &a->head_dim));
    ZAYA_TRY(opt(c, "intermediate_size", &a->dense_ffn));
    ZAYA_TRY(opt(c, "max_position_embeddings", &a->max_seq));
    ZAYA_TRY(zaya_json_get_bool(c, "tie_word_embeddings", &a->tied_embeddings, 0));
    ZAYA_TRY(refuse_true(c, "attention_bias", "biases on the attention projections"));
    ZAYA_TRY(opt(c, "sliding_window", &a->window));
    a->norms_per_layer = 4;
    if (v3) a->qk_norm = ZAYA_SIZE_QK_NORM_HEAD;
    int found;
    ZAYA_TRY(layer_types(c, a, &found));
    if (!found) {
        if (v3) {
            int64_t pattern = 6; /* 5 local : 1 global */
            ZAYA_TRY(ranged(c, "sliding_window_pattern", &pattern, 0, 1, LAYERS_MAX));
            a->n_window_layers = a->layers - a->layers / pattern;
        } else {
            a->n_window_layers = (a->layers + 1) / 2; /* even layers slide */
        }
    }
    if (a->window <= 0) a->n_window_layers = 0;
    return ZAYA_OK;
}

static zaya_status read_dbrx(const cJSON *c, zaya_size_arch *a) {
    ZAYA_TRY(req(c, "vocab_size", &a->vocab));
    ZAYA_TRY(req(c, "d_model", &a->hidden));
    ZAYA_TRY(req_layers(c, "n_layers", &a->layers));
    ZAYA_TRY(req(c, "n_heads", &a->heads));
    ZAYA_TRY(opt(c, "max_seq_len", &a->max_seq));
    ZAYA_TRY(zaya_json_get_bool(c, "tie_word_embeddings", &a->tied_embeddings, 0));
    a->keys = (zaya_size_arch_keys){"vocab_size", "d_model", "n_layers", "n_heads", "attn_config.kv_n_heads", "d_model/n_heads",
                               "ffn_config.ffn_hidden_size", "ffn_config.moe_num_experts", "ffn_config.ffn_hidden_size",
                               "ffn_config.moe_top_k"};
    const cJSON *attn = cJSON_GetObjectItemCaseSensitive(c, "attn_config");
    const cJSON *ffn = cJSON_GetObjectItemCaseSensitive(c, "ffn_config");
    if (!cJSON_IsObject(attn)) return zaya_error_set(ZAYA_EINVAL, "missing required object 'attn_config'");
    if (!cJSON_IsObject(ffn)) return zaya_error_set(ZAYA_EINVAL, "missing required object 'ffn_config'");
    a->kv_heads = 1; /* DbrxAttentionConfig default */
    zaya_status s = opt(attn, "kv_n_heads", &a->kv_heads);
    if (s != ZAYA_OK) return zaya_error_context(s, "attn_config");
    if (a->heads <= 0) return zaya_error_set(ZAYA_EINVAL, "key 'n_heads' must be positive");
    a->head_dim = a->hidden / a->heads;
    if ((s = req(ffn, "ffn_hidden_size", &a->expert_ffn)) != ZAYA_OK || (s = req(ffn, "moe_num_experts", &a->experts)) != ZAYA_OK ||
        (s = req(ffn, "moe_top_k", &a->top_k)) != ZAYA_OK)
        return zaya_error_context(s, "ffn_config");
    a->router = ZAYA_SIZE_ROUTER_LINEAR;
    a->n_moe_layers = a->layers;
    return ZAYA_OK;
}

static zaya_status read_llama4(const cJSON *c, zaya_size_arch *a) {
    ZAYA_TRY(read_common(c, a));
    ZAYA_TRY(req(c, "num_local_experts", &a->experts));
    ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
    ZAYA_TRY(req(c, "intermediate_size", &a->expert_ffn));
    ZAYA_TRY(req(c, "intermediate_size_mlp", &a->dense_ffn));
    a->keys.experts = "num_local_experts";
    a->keys.expert_ffn = "intermediate_size";
    a->keys.dense_ffn = "intermediate_size_mlp";
    a->shared_experts = 1; /* every MoE layer has one shared expert of the routed width */
    a->shared_ffn = a->expert_ffn;
    a->router = ZAYA_SIZE_ROUTER_LINEAR;
    int64_t step = 1;
    ZAYA_TRY(ranged(c, "interleave_moe_layer_step", &step, 0, 1, LAYERS_MAX));
    a->n_moe_layers = a->layers / step; /* layers step-1, 2 step-1, ... */
    const cJSON *ml = cJSON_GetObjectItemCaseSensitive(c, "moe_layers");
    if (ml && !cJSON_IsNull(ml)) {
        if (!cJSON_IsArray(ml) || cJSON_GetArraySize(ml) > a->layers)
            return zaya_error_set(ZAYA_EINVAL, "key 'moe_layers' must be a list of at most %lld layer indices", (long long)a->layers);
        a->n_moe_layers = cJSON_GetArraySize(ml);
    }
    /* chunked attention on the RoPE layers; every no_rope_layer_interval-th layer (4) is global */
    ZAYA_TRY(opt(c, "attention_chunk_size", &a->window));
    if (a->window > 0) {
        const cJSON *nr = cJSON_GetObjectItemCaseSensitive(c, "no_rope_layers");
        if (nr && cJSON_IsArray(nr) && cJSON_GetArraySize(nr) > 0) {
            if (cJSON_GetArraySize(nr) != a->layers)
                return zaya_error_set(ZAYA_EINVAL, "key 'no_rope_layers' lists %d layers but num_hidden_layers is %lld",
                                      cJSON_GetArraySize(nr), (long long)a->layers);
            const cJSON *e;
            cJSON_ArrayForEach(e, nr) a->n_window_layers += cJSON_IsNumber(e) && e->valuedouble != 0;
        } else {
            a->n_window_layers = a->layers - a->layers / 4;
        }
    }
    return ZAYA_OK;
}

static const char *families[] = {"zaya",      "llama",      "mistral",  "qwen2",       "qwen3",       "qwen3_moe",
                                 "qwen2_moe", "mixtral",    "olmoe",    "deepseek_v2", "deepseek_v3", "gpt_oss",
                                 "gemma2",    "gemma3_text", "phimoe",  "dbrx",        "granitemoe",  "granitemoeshared",
                                 "glm4_moe",  "llama4_text"};

const char *zaya_size_arch_families(void) {
    static char buf[512];
    if (!buf[0])
        for (size_t i = 0; i < sizeof families / sizeof *families; i++)
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? ", " : "", families[i]);
    return buf;
}

static zaya_status read_family(const cJSON *c, const char *fam, zaya_size_arch *a) {
    int known = 0;
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) known |= !strcmp(fam, families[i]);
    if (!strcmp(fam, "qwen3_next"))
        return not_modelled("layer_types", "qwen3_next's Gated DeltaNet linear-attention layers and gated attention");
    if (!strcmp(fam, "jetmoe"))
        return not_modelled("num_experts", "jetmoe's mixture-of-attention-heads experts");
    if (!known) return zaya_error_set(ZAYA_EUNSUPPORTED, "unknown model_type '%s' (supported: %s)", fam, zaya_size_arch_families());
    if (!strcmp(fam, "zaya")) return read_zaya(c, a);
    if (!strcmp(fam, "deepseek_v2") || !strcmp(fam, "deepseek_v3")) return read_deepseek(c, a, !strcmp(fam, "deepseek_v3"));
    if (!strcmp(fam, "gemma2") || !strcmp(fam, "gemma3_text")) return read_gemma(c, a, !strcmp(fam, "gemma3_text"));
    if (!strcmp(fam, "dbrx")) return read_dbrx(c, a);
    if (!strcmp(fam, "gpt_oss")) return read_gpt_oss(c, a);
    if (!strcmp(fam, "llama4_text")) return read_llama4(c, a);
    ZAYA_TRY(read_common(c, a));
    if (!strcmp(fam, "llama") || !strcmp(fam, "mistral")) {
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
        if (!strcmp(fam, "mistral")) ZAYA_TRY(sliding_all(c, a));
    } else if (!strcmp(fam, "qwen2")) {
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
        a->qkv_bias = 1; /* Qwen2 hard-codes q/k/v biases, no o_proj bias */
        a->o_bias = 0;
    } else if (!strcmp(fam, "qwen3") || !strcmp(fam, "qwen3_moe")) {
        if (!cJSON_GetObjectItemCaseSensitive(c, "head_dim")) a->head_dim = 128; /* Qwen3Config default */
        a->qk_norm = ZAYA_SIZE_QK_NORM_HEAD;
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
        if (!strcmp(fam, "qwen3_moe")) {
            ZAYA_TRY(req(c, "num_experts", &a->experts));
            ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
            ZAYA_TRY(req(c, "moe_intermediate_size", &a->expert_ffn));
            a->router = ZAYA_SIZE_ROUTER_LINEAR;
            ZAYA_TRY(qwen_moe_layers(c, a));
        }
    } else if (!strcmp(fam, "qwen2_moe")) {
        a->qkv_bias = 1;
        a->o_bias = 0;
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
        ZAYA_TRY(req(c, "num_experts", &a->experts));
        ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(req(c, "moe_intermediate_size", &a->expert_ffn));
        ZAYA_TRY(req(c, "shared_expert_intermediate_size", &a->shared_ffn));
        a->shared_experts = a->shared_ffn > 0;
        a->shared_gate = a->shared_experts;
        a->router = ZAYA_SIZE_ROUTER_LINEAR;
        ZAYA_TRY(qwen_moe_layers(c, a));
    } else if (!strcmp(fam, "mixtral") || !strcmp(fam, "phimoe") || !strcmp(fam, "granitemoe") ||
               !strcmp(fam, "granitemoeshared")) {
        ZAYA_TRY(req(c, "num_local_experts", &a->experts));
        ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(req(c, "intermediate_size", &a->expert_ffn)); /* in these families this is each expert's width */
        a->keys.experts = "num_local_experts";
        a->keys.expert_ffn = "intermediate_size";
        a->router = ZAYA_SIZE_ROUTER_LINEAR;
        a->n_moe_layers = a->layers;
        if (!strcmp(fam, "phimoe")) {
            /* LayerNorm with bias everywhere; attention_bias covers q, k, v and o; optional head bias */
            a->norm_bias = 1;
            ZAYA_TRY(zaya_json_get_bool(c, "lm_head_bias", &a->lm_head_bias, 0));
        }
        if (!strcmp(fam, "granitemoeshared")) {
            ZAYA_TRY(opt(c, "shared_intermediate_size", &a->shared_ffn));
            a->shared_experts = a->shared_ffn > 0;
        }
        if (strncmp(fam, "granite", 7)) ZAYA_TRY(sliding_all(c, a));
    } else if (!strcmp(fam, "olmoe")) {
        ZAYA_TRY(req(c, "num_experts", &a->experts));
        ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(req(c, "intermediate_size", &a->expert_ffn)); /* each expert's width */
        a->keys.expert_ffn = "intermediate_size";
        a->qk_norm = ZAYA_SIZE_QK_NORM_FULL;
        a->router = ZAYA_SIZE_ROUTER_LINEAR;
        a->n_moe_layers = a->layers;
    } else if (!strcmp(fam, "glm4_moe")) {
        a->o_bias = 0; /* attention_bias covers q, k, v only */
        int qkn = 0;
        ZAYA_TRY(zaya_json_get_bool(c, "use_qk_norm", &qkn, 0));
        if (qkn) a->qk_norm = ZAYA_SIZE_QK_NORM_HEAD;
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
        ZAYA_TRY(req(c, "n_routed_experts", &a->experts));
        ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(req(c, "moe_intermediate_size", &a->expert_ffn));
        ZAYA_TRY(opt(c, "n_shared_experts", &a->shared_experts));
        a->keys.experts = "n_routed_experts";
        a->shared_ffn = a->expert_ffn;
        int64_t first = 0;
        ZAYA_TRY(ranged(c, "first_k_dense_replace", &first, 0, 0, LAYERS_MAX));
        a->n_moe_layers = first < a->layers ? a->layers - first : 0;
        a->router = ZAYA_SIZE_ROUTER_LINEAR;
        a->router_bias = 1; /* e_score_correction_bias */
        ZAYA_TRY(ranged(c, "num_nextn_predict_layers", &a->mtp_layers, 0, 0, 64));
    }
    return ZAYA_OK;
}

zaya_status zaya_size_arch_from_config(const cJSON *cfg, zaya_size_arch *a) {
    memset(a, 0, sizeof *a);
    a->keys = (zaya_size_arch_keys){"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                               "head_dim", "intermediate_size", "num_experts", "moe_intermediate_size", "num_experts_per_tok"};
    a->norms_per_layer = 2;
    if (!cJSON_IsObject(cfg)) return zaya_error_set(ZAYA_EFORMAT, "a model config must be a JSON object");
    const char *fam = NULL;
    ZAYA_TRY(zaya_json_get_str(cfg, "model_type", &fam, 1));
    /* Multimodal wrappers (gemma3, llama4, ...) nest the language model in text_config. */
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
    if (text && !cJSON_IsNull(text)) {
        if (!cJSON_IsObject(text)) return zaya_error_set(ZAYA_EINVAL, "key 'text_config' must be an object");
        const char *tf = NULL;
        ZAYA_TRY(zaya_json_get_str(text, "model_type", &tf, 0));
        static char derived[40];
        if (!tf) { /* the text model's type is the wrapper's + "_text" (gemma3 -> gemma3_text) */
            snprintf(derived, sizeof derived, "%.24s_text", fam);
            tf = derived;
        }
        fam = tf;
        cfg = text;
        a->text_only = 1;
    }
    snprintf(a->family, sizeof a->family, "%.31s", fam);
    zaya_status s = read_family(cfg, fam, a);
    if (s != ZAYA_OK) {
        if (s == ZAYA_EUNSUPPORTED && strstr(zaya_error_message(), "unknown model_type")) return s;
        return zaya_error_context(s, a->text_only ? "text_config: model_type '%s'" : "model_type '%s'", a->family);
    }
    if (a->n_moe_layers == a->layers && a->experts > 0) a->dense_ffn = 0; /* no dense MLP in use */
    if (a->window <= 0 || a->n_window_layers <= 0) a->window = a->n_window_layers = 0;
    if (a->n_window_layers > a->layers) a->n_window_layers = a->layers;
    set_attn_kind(a);
    s = zaya_size_arch_validate(a);
    if (s != ZAYA_OK) return zaya_error_context(s, "model_type '%s'", a->family);
    return ZAYA_OK;
}

zaya_status zaya_size_arch_load(const char *spec, zaya_size_arch *a) {
    for (const char *const *p = zaya_config_preset_names(); *p; p++)
        if (!strcmp(*p, spec)) {
            zaya_config zc;
            ZAYA_TRY(zaya_config_preset(spec, &zc));
            zaya_size_arch_from_zaya_config(&zc, a);
            return ZAYA_OK;
        }
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_config(spec, &root));
    zaya_status s = zaya_size_arch_from_config(root, a);
    cJSON_Delete(root);
    if (s != ZAYA_OK) return zaya_error_context(s, "%s", spec);
    return ZAYA_OK;
}

#define POS(field, key)                                                                               \
    if (a->field <= 0) return zaya_error_set(ZAYA_EINVAL, "%s must be positive (got %lld)", K(key), \
                                             (long long)a->field)

static const char *K(const char *k) { return k ? k : "?"; }

zaya_status zaya_size_arch_validate(const zaya_size_arch *a) {
    const zaya_size_arch_keys *k = &a->keys;
    POS(vocab, k->vocab);
    POS(hidden, k->hidden);
    POS(layers, k->layers);
    POS(heads, k->heads);
    POS(kv_heads, k->kv_heads);
    POS(head_dim, k->head_dim);
    if (a->heads % a->kv_heads)
        return zaya_error_set(ZAYA_EINVAL, "%s %lld is not a multiple of %s %lld", K(k->heads), (long long)a->heads,
                              K(k->kv_heads), (long long)a->kv_heads);
    if (a->experts > 0) {
        POS(expert_ffn, k->expert_ffn);
        POS(top_k, k->top_k);
        if (a->top_k > a->experts)
            return zaya_error_set(ZAYA_EINVAL, "%s %lld exceeds the %lld experts of %s", K(k->top_k), (long long)a->top_k,
                                  (long long)a->experts, K(k->experts));
    }
    if (a->n_moe_layers < a->layers && a->dense_ffn <= 0)
        return zaya_error_set(ZAYA_EINVAL, "%lld dense layers but no %s", (long long)(a->layers - a->n_moe_layers),
                              K(k->dense_ffn));
    if (a->experts < 0 || a->shared_ffn < 0 || a->dense_ffn < 0 || a->n_moe_layers < 0 || a->shared_experts < 0 ||
        a->n_window_layers < 0 || a->window < 0 || a->mtp_layers < 0)
        return zaya_error_set(ZAYA_EINVAL, "expert, MLP and window sizes must not be negative");
    if ((a->n_moe_layers > 0 || a->top_k > 0 || a->expert_ffn > 0) && a->experts == 0 &&
        a->router != ZAYA_SIZE_ROUTER_NONE)
        return zaya_error_set(ZAYA_EINVAL, "a MoE family needs at least one expert (%s)", K(k->experts));
    if (a->mla && (a->kv_lora_rank <= 0 || a->qk_rope_dim < 0 || a->qk_nope_dim < 0 || a->v_head_dim <= 0 || a->q_lora_rank < 0))
        return zaya_error_set(ZAYA_EINVAL, "kv_lora_rank and v_head_dim must be positive, q_lora_rank and the head dims not negative");
    /* Every count is an int64 product of these: bound them so no product can overflow. */
    const double lim = 4e18;
    double d = (double)a->hidden, qk = (double)(a->heads + a->kv_heads) * (double)a->head_dim;
    double ffn = (double)(a->expert_ffn > a->dense_ffn ? a->expert_ffn : a->dense_ffn);
    if (a->shared_ffn > ffn) ffn = (double)a->shared_ffn;
    double mla = a->mla ? (double)(a->q_lora_rank + a->kv_lora_rank + a->qk_rope_dim) * (d + (double)a->heads *
                                   (double)(a->qk_nope_dim + a->qk_rope_dim + a->v_head_dim)) + (double)a->heads * (double)a->v_head_dim * d
                        : 0;
    double big = 2.0 * (double)a->vocab * d +
                 (double)(a->layers + a->mtp_layers) *
                     (3.0 * d * ffn * (double)(a->experts + a->shared_experts + 1) + 4.0 * d * qk + mla +
                      qk * (double)a->head_dim * (double)(a->cca_time0 + a->cca_time1 + 1) +
                      (double)a->router_hidden * (d + (double)a->router_hidden + (double)a->experts));
    if (a->hidden > (1 << 24) || a->vocab > (1 << 30) || a->layers > (1 << 20) || a->heads > (1 << 20) ||
        a->head_dim > (1 << 20) || a->experts > (1 << 20) || a->top_k > (1 << 20) || a->cca_time0 > 64 ||
        a->cca_time1 > 64 || a->router_hidden > (1 << 24) || a->shared_experts > (1 << 20) || !(big < lim))
        return zaya_error_set(ZAYA_ERANGE, "model sizes are out of range (about %.3g parameters; at most %.0e supported)", big, lim);
    if (a->attn == ZAYA_SIZE_ATTN_CCA) {
        POS(cca_time0, "cca_time0");
        POS(cca_time1, "cca_time1");
        POS(router_hidden, "router_hidden_size");
        if (a->head_dim % 2) return zaya_error_set(ZAYA_EINVAL, "CCA value shift needs an even head_dim");
    }
    return ZAYA_OK;
}

void zaya_size_arch_zaya_like(zaya_size_arch *a, int64_t hidden, int64_t layers, int64_t experts, int64_t expert_ffn,
                         int64_t top_k, int64_t vocab) {
    memset(a, 0, sizeof *a);
    snprintf(a->family, sizeof a->family, "zaya");
    a->keys = (zaya_size_arch_keys){"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                               "head_dim", "intermediate_size", "num_experts", "moe_intermediate_size", "num_experts_per_tok"};
    a->norms_per_layer = 2;
    a->vocab = vocab;
    a->hidden = hidden;
    a->layers = layers;
    a->tied_embeddings = 1;
    a->attn = ZAYA_SIZE_ATTN_CCA;
    a->head_dim = 128;
    a->heads = hidden / 256 > 0 ? hidden / 256 : 1; /* 2x query compression */
    int64_t kv = a->heads / 4 > 0 ? a->heads / 4 : 1;
    while (a->heads % kv) kv--;                       /* largest divisor <= heads/4 */
    a->kv_heads = kv;
    a->cca_time0 = a->cca_time1 = 2;
    a->experts = experts;
    a->expert_ffn = expert_ffn;
    a->top_k = top_k;
    a->n_moe_layers = layers;
    a->router = ZAYA_SIZE_ROUTER_ZAYA;
    a->router_hidden = 256;
    a->router_classes = experts + 1;
    a->router_eda = 1;
    a->residual_scales = 1;
    a->input_affine = 1;
    a->max_seq = 4096;
}

/* Family-neutral architecture description filled from HF config.json files. Each family reader states
 * which keys are required (missing -> error naming the key and the family) and which have the
 * defaults of that family's HF configuration class. */
#include <string.h>

#include "zaya/json.h"
#include "zaya/size.h"

const char *zaya_attn_kind_name(zaya_attn_kind k) {
    switch (k) {
    case ZAYA_ATTN_MHA: return "MHA";
    case ZAYA_ATTN_GQA: return "GQA";
    case ZAYA_ATTN_CCA: return "CCA";
    }
    return "?";
}

static zaya_status req(const cJSON *c, const char *key, int64_t *out) { return zaya_json_get_i64(c, key, out, 1); }
static zaya_status opt(const cJSON *c, const char *key, int64_t *out) { return zaya_json_get_i64(c, key, out, 0); }

/* First non-zero entry of an integer list (legacy ZAYA per-half-layer lists such as [8,0,8,0,...]). */
static zaya_status first_nonzero(const cJSON *c, const char *key, int64_t *out) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, key);
    if (!it || cJSON_IsNull(it)) return ZAYA_OK;
    if (cJSON_IsNumber(it)) return zaya_json_get_i64(c, key, out, 1);
    if (!cJSON_IsArray(it)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be an integer or a list of integers", key);
    const cJSON *e;
    cJSON_ArrayForEach(e, it) {
        if (!cJSON_IsNumber(e)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must hold integers", key);
        if (e->valuedouble != 0) { *out = (int64_t)e->valuedouble; return ZAYA_OK; }
    }
    return ZAYA_OK;
}

static void set_attn_kind(zaya_arch *a) {
    if (a->attn != ZAYA_ATTN_CCA) a->attn = a->kv_heads == a->heads ? ZAYA_ATTN_MHA : ZAYA_ATTN_GQA;
}

/* Keys shared by llama-like families. head_dim defaults to hidden/heads (llama, mixtral, qwen2). */
static zaya_status read_common(const cJSON *c, zaya_arch *a) {
    ZAYA_TRY(req(c, "vocab_size", &a->vocab));
    ZAYA_TRY(req(c, "hidden_size", &a->hidden));
    ZAYA_TRY(req(c, "num_hidden_layers", &a->layers));
    ZAYA_TRY(req(c, "num_attention_heads", &a->heads));
    a->kv_heads = a->heads;
    ZAYA_TRY(opt(c, "num_key_value_heads", &a->kv_heads));
    if (a->heads <= 0) return zaya_error_set(ZAYA_EINVAL, "num_attention_heads must be positive");
    a->head_dim = a->hidden / a->heads;
    ZAYA_TRY(opt(c, "head_dim", &a->head_dim));
    ZAYA_TRY(zaya_json_get_bool(c, "tie_word_embeddings", &a->tied_embeddings, 0));
    ZAYA_TRY(zaya_json_get_bool(c, "attention_bias", &a->qkv_bias, 0));
    a->o_bias = a->qkv_bias;
    int mlp_bias = 0;
    ZAYA_TRY(zaya_json_get_bool(c, "mlp_bias", &mlp_bias, 0));
    if (mlp_bias) return zaya_error_set(ZAYA_EUNSUPPORTED, "mlp_bias=true is not supported");
    ZAYA_TRY(opt(c, "max_position_embeddings", &a->max_seq));
    return ZAYA_OK;
}

/* MoE layer pattern of the qwen MoE families: layer i is sparse unless listed in mlp_only_layers, and
 * only every decoder_sparse_step-th layer ((i+1) % step == 0). */
static zaya_status qwen_moe_layers(const cJSON *c, zaya_arch *a) {
    int64_t step = 1;
    ZAYA_TRY(opt(c, "decoder_sparse_step", &step));
    if (step <= 0) return zaya_error_set(ZAYA_EINVAL, "decoder_sparse_step must be positive");
    const cJSON *only = cJSON_GetObjectItemCaseSensitive(c, "mlp_only_layers");
    if (only && !cJSON_IsNull(only) && !cJSON_IsArray(only))
        return zaya_error_set(ZAYA_EINVAL, "key 'mlp_only_layers' must be a list of layer indices");
    a->n_moe_layers = 0;
    for (int64_t i = 0; i < a->layers; i++) {
        int dense = (i + 1) % step != 0;
        const cJSON *e;
        if (only && cJSON_IsArray(only)) cJSON_ArrayForEach(e, only) {
            if (!cJSON_IsNumber(e)) return zaya_error_set(ZAYA_EINVAL, "key 'mlp_only_layers' must hold integers");
            if ((int64_t)e->valuedouble == i) dense = 1;
        }
        if (!dense && a->experts > 0) a->n_moe_layers++;
    }
    return ZAYA_OK;
}

static zaya_status read_zaya(const cJSON *c, zaya_arch *a) {
    /* Two layouts: HF (40 fused blocks) and the original Megatron one (80 half-layers, ffn_hidden_size =
     * fused gate|up width, zaya_mlp_expansion = router latent). */
    int legacy = cJSON_GetObjectItemCaseSensitive(c, "ffn_hidden_size") != NULL ||
                 cJSON_GetObjectItemCaseSensitive(c, "zaya_mlp_expansion") != NULL;
    ZAYA_TRY(req(c, "vocab_size", &a->vocab));
    ZAYA_TRY(req(c, "hidden_size", &a->hidden));
    ZAYA_TRY(req(c, "num_hidden_layers", &a->layers));
    ZAYA_TRY(req(c, "num_experts", &a->experts));
    ZAYA_TRY(req(c, "head_dim", &a->head_dim));
    ZAYA_TRY(req(c, "num_key_value_heads", &a->kv_heads));
    a->attn = ZAYA_ATTN_CCA;
    a->tied_embeddings = 1;
    a->cca_time0 = a->cca_time1 = 2;
    a->router = ZAYA_ROUTER_ZAYA;
    a->router_hidden = 256;
    a->router_eda = 1;
    a->residual_scales = 1;
    a->top_k = 1;
    if (legacy) {
        if (a->layers % 2) return zaya_error_set(ZAYA_EINVAL, "legacy layout: num_hidden_layers %lld is not even (half-layers)", (long long)a->layers);
        a->layers /= 2;
        int64_t ffn = 0;
        ZAYA_TRY(first_nonzero(c, "ffn_hidden_size", &ffn));
        ZAYA_TRY(first_nonzero(c, "ffn_hidden_size_list", &ffn));
        if (ffn <= 0) return zaya_error_set(ZAYA_EINVAL, "missing required key 'ffn_hidden_size'");
        a->expert_ffn = ffn / 2;
        ZAYA_TRY(req(c, "num_attention_heads", &a->heads));
        ZAYA_TRY(first_nonzero(c, "cca_num_q_heads", &a->heads));
        ZAYA_TRY(opt(c, "moe_router_topk", &a->top_k));
        ZAYA_TRY(first_nonzero(c, "zaya_mlp_expansion", &a->router_hidden));
        int eda = 1;
        ZAYA_TRY(zaya_json_get_bool(c, "zaya_use_eda", &eda, 0));
        a->router_eda = eda;
    } else {
        ZAYA_TRY(req(c, "num_attention_heads", &a->heads));
        ZAYA_TRY(req(c, "moe_intermediate_size", &a->expert_ffn));
        ZAYA_TRY(opt(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(opt(c, "router_hidden_size", &a->router_hidden));
    }
    ZAYA_TRY(opt(c, "cca_time0", &a->cca_time0));
    ZAYA_TRY(opt(c, "cca_time1", &a->cca_time1));
    ZAYA_TRY(zaya_json_get_bool(c, "tie_word_embeddings", &a->tied_embeddings, 0));
    ZAYA_TRY(opt(c, "max_position_embeddings", &a->max_seq));
    a->router_classes = a->experts + 1; /* + the skip (MoD) class */
    a->n_moe_layers = a->layers;
    return ZAYA_OK;
}

static const char *families[] = {"zaya", "llama", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "mixtral", "olmoe"};

static zaya_status read_family(const cJSON *c, const char *fam, zaya_arch *a) {
    int known = 0;
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) known |= !strcmp(fam, families[i]);
    if (!known)
        return zaya_error_set(ZAYA_EUNSUPPORTED,
                              "unknown model_type '%s' (supported: zaya, llama, qwen2, qwen3, qwen3_moe, qwen2_moe, "
                              "mixtral, olmoe)", fam);
    if (!strcmp(fam, "zaya")) return read_zaya(c, a);
    ZAYA_TRY(read_common(c, a));
    if (!strcmp(fam, "llama")) {
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
    } else if (!strcmp(fam, "qwen2")) {
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
        a->qkv_bias = 1; /* Qwen2 hard-codes q/k/v biases, no o_proj bias */
        a->o_bias = 0;
    } else if (!strcmp(fam, "qwen3") || !strcmp(fam, "qwen3_moe")) {
        if (!cJSON_GetObjectItemCaseSensitive(c, "head_dim")) a->head_dim = 128; /* Qwen3Config default */
        a->qk_norm = ZAYA_QK_NORM_HEAD;
        ZAYA_TRY(req(c, "intermediate_size", &a->dense_ffn));
        if (!strcmp(fam, "qwen3_moe")) {
            ZAYA_TRY(req(c, "num_experts", &a->experts));
            ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
            ZAYA_TRY(req(c, "moe_intermediate_size", &a->expert_ffn));
            a->router = ZAYA_ROUTER_LINEAR;
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
        a->router = ZAYA_ROUTER_LINEAR;
        ZAYA_TRY(qwen_moe_layers(c, a));
    } else if (!strcmp(fam, "mixtral")) {
        ZAYA_TRY(req(c, "num_local_experts", &a->experts));
        ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(req(c, "intermediate_size", &a->expert_ffn)); /* in Mixtral this is each expert's width */
        a->router = ZAYA_ROUTER_LINEAR;
        a->n_moe_layers = a->layers;
    } else if (!strcmp(fam, "olmoe")) {
        ZAYA_TRY(req(c, "num_experts", &a->experts));
        ZAYA_TRY(req(c, "num_experts_per_tok", &a->top_k));
        ZAYA_TRY(req(c, "intermediate_size", &a->expert_ffn)); /* each expert's width */
        a->qk_norm = ZAYA_QK_NORM_FULL;
        a->router = ZAYA_ROUTER_LINEAR;
        a->n_moe_layers = a->layers;
    }
    /* A MoE family whose every layer is sparse has no dense MLP in use. */
    if (a->n_moe_layers == a->layers && a->experts > 0) a->dense_ffn = 0;
    return ZAYA_OK;
}

zaya_status zaya_arch_from_config(const cJSON *cfg, zaya_arch *a) {
    memset(a, 0, sizeof *a);
    const char *fam = NULL;
    ZAYA_TRY(zaya_json_get_str(cfg, "model_type", &fam, 1));
    snprintf(a->family, sizeof a->family, "%s", fam);
    zaya_status s = read_family(cfg, fam, a);
    if (s != ZAYA_OK) {
        if (s == ZAYA_EUNSUPPORTED && strstr(zaya_error_message(), "unknown model_type")) return s;
        return zaya_error_context(s, "model_type '%s'", fam);
    }
    set_attn_kind(a);
    return zaya_arch_validate(a);
}

zaya_status zaya_arch_load(const char *path, zaya_arch *a) {
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_file(path, &root));
    zaya_status s = zaya_arch_from_config(root, a);
    cJSON_Delete(root);
    if (s != ZAYA_OK) return zaya_error_context(s, "%s", path);
    return ZAYA_OK;
}

#define POS(field)                                                                              \
    if (a->field <= 0) return zaya_error_set(ZAYA_EINVAL, #field " must be positive (got %lld)", \
                                             (long long)a->field)

zaya_status zaya_arch_validate(const zaya_arch *a) {
    POS(vocab);
    POS(hidden);
    POS(layers);
    POS(heads);
    POS(kv_heads);
    POS(head_dim);
    if (a->heads % a->kv_heads)
        return zaya_error_set(ZAYA_EINVAL, "num_attention_heads %lld is not a multiple of num_key_value_heads %lld",
                              (long long)a->heads, (long long)a->kv_heads);
    if (a->experts > 0) {
        POS(expert_ffn);
        POS(top_k);
        if (a->top_k > a->experts)
            return zaya_error_set(ZAYA_EINVAL, "num_experts_per_tok %lld exceeds the %lld experts", (long long)a->top_k,
                                  (long long)a->experts);
    }
    if (a->n_moe_layers < a->layers && a->dense_ffn <= 0)
        return zaya_error_set(ZAYA_EINVAL, "%lld dense layers but no intermediate_size", (long long)(a->layers - a->n_moe_layers));
    if (a->experts < 0 || a->shared_ffn < 0 || a->dense_ffn < 0 || a->n_moe_layers < 0)
        return zaya_error_set(ZAYA_EINVAL, "expert and MLP sizes must not be negative");
    if ((a->n_moe_layers > 0 || a->top_k > 0 || a->expert_ffn > 0) && a->experts == 0 &&
        a->router != ZAYA_ROUTER_NONE)
        return zaya_error_set(ZAYA_EINVAL, "a MoE family needs at least one expert");
    /* Every count is an int64 product of these: bound them so no product can overflow. */
    const double lim = 4e18;
    double d = (double)a->hidden, qk = (double)(a->heads + a->kv_heads) * (double)a->head_dim;
    double ffn = (double)(a->expert_ffn > a->dense_ffn ? a->expert_ffn : a->dense_ffn);
    if (a->shared_ffn > ffn) ffn = (double)a->shared_ffn;
    double big = 2.0 * (double)a->vocab * d +
                 (double)a->layers * (3.0 * d * ffn * (double)(a->experts + a->shared_experts + 1) + 4.0 * d * qk +
                                      qk * (double)a->head_dim * (double)(a->cca_time0 + a->cca_time1 + 1) +
                                      (double)a->router_hidden * (d + (double)a->router_hidden + (double)a->experts));
    if (a->hidden > (1 << 24) || a->vocab > (1 << 30) || a->layers > (1 << 20) || a->heads > (1 << 20) ||
        a->head_dim > (1 << 20) || a->experts > (1 << 20) || a->top_k > (1 << 20) || a->cca_time0 > 64 ||
        a->cca_time1 > 64 || a->router_hidden > (1 << 24) || !(big < lim))
        return zaya_error_set(ZAYA_ERANGE, "model sizes are out of range (about %.3g parameters; at most %.0e supported)", big, lim);
    if (a->attn == ZAYA_ATTN_CCA) {
        POS(cca_time0);
        POS(cca_time1);
        POS(router_hidden);
        if (a->head_dim % 2) return zaya_error_set(ZAYA_EINVAL, "CCA value shift needs an even head_dim");
    }
    return ZAYA_OK;
}

void zaya_arch_zaya_like(zaya_arch *a, int64_t hidden, int64_t layers, int64_t experts, int64_t expert_ffn,
                         int64_t top_k, int64_t vocab) {
    memset(a, 0, sizeof *a);
    snprintf(a->family, sizeof a->family, "zaya");
    a->vocab = vocab;
    a->hidden = hidden;
    a->layers = layers;
    a->tied_embeddings = 1;
    a->attn = ZAYA_ATTN_CCA;
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
    a->router = ZAYA_ROUTER_ZAYA;
    a->router_hidden = 256;
    a->router_classes = experts + 1;
    a->router_eda = 1;
    a->residual_scales = 1;
    a->max_seq = 4096;
}

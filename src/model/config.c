#include "zaya/config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zaya/json.h"

/* ZayaConfig defaults (Hugging Face configuration_zaya.py), i.e. ZAYA1-8B. */
static void set_defaults(zaya_config *c) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "custom");
    c->vocab_size = 262272;
    c->hidden_size = 2048;
    c->num_hidden_layers = 40;
    c->num_attention_heads = 8;
    c->num_key_value_heads = 2;
    c->head_dim = 128;
    c->num_experts = 16;
    c->num_experts_per_tok = 1;
    c->moe_intermediate_size = 2048;
    c->router_hidden_size = 256;
    c->cca_time0 = 2;
    c->cca_time1 = 2;
    c->max_position_embeddings = 131072;
    c->rope_theta = 5000000.0;
    c->partial_rotary_factor = 0.5;
    c->rms_norm_eps = 1e-5;
    c->initializer_range = 0.02;
    c->tie_word_embeddings = 1;
    c->bos_token_id = 2;
    c->eos_token_id = 106;
    c->pad_token_id = 0;
    c->skip_mode = ZAYA_SKIP_IDENTITY;
}

static const char *const g_presets[] = {"zaya1-8b", "zaya1-small", "zaya1-tiny", NULL};

const char *const *zaya_config_preset_names(void) { return g_presets; }

zaya_status zaya_config_preset(const char *name, zaya_config *c) {
    set_defaults(c);
    if (!strcmp(name, "zaya1-8b")) {
        /* published defaults */
    } else if (!strcmp(name, "zaya1-small")) {
        /* ~100M total: ZAYA1's proportions (q latent D/2, kv latent D/8, expert width D) scaled down. */
        c->vocab_size = 8192;
        c->hidden_size = 512;
        c->num_hidden_layers = 14;
        c->num_attention_heads = 4;
        c->num_key_value_heads = 2;
        c->head_dim = 64;
        c->num_experts = 8;
        c->moe_intermediate_size = 512;
        c->router_hidden_size = 128;
        c->max_position_embeddings = 4096;
        c->rope_theta = 10000.0;
        c->bos_token_id = 1;
        c->eos_token_id = 2;
        c->pad_token_id = 0;
    } else if (!strcmp(name, "zaya1-tiny")) {
        /* ~10M total: trains to readable text on two CPU cores in minutes. */
        c->vocab_size = 4096;
        c->hidden_size = 256;
        c->num_hidden_layers = 8;
        c->num_attention_heads = 4;
        c->num_key_value_heads = 2;
        c->head_dim = 64;
        c->num_experts = 4;
        c->moe_intermediate_size = 256;
        c->router_hidden_size = 64;
        c->max_position_embeddings = 2048;
        c->rope_theta = 10000.0;
        c->bos_token_id = 1;
        c->eos_token_id = 2;
        c->pad_token_id = 0;
    } else {
        return zaya_error_set(ZAYA_EINVAL, "unknown model preset '%s' (presets: zaya1-8b, zaya1-small, zaya1-tiny)", name);
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    return ZAYA_OK;
}

zaya_status zaya_config_resolve(const char *spec, zaya_config *out) {
    for (const char *const *p = g_presets; *p; p++)
        if (!strcmp(*p, spec)) return zaya_config_preset(spec, out);
    return zaya_config_load(spec, out);
}

zaya_status zaya_config_load(const char *path, zaya_config *out) {
    cJSON *root;
    ZAYA_TRY(zaya_json_load_config(path, &root));
    zaya_status s = zaya_config_from_json(root, out);
    cJSON_Delete(root);
    if (s != ZAYA_OK) return zaya_error_context(s, "config '%s'", path);
    const char *slash = strrchr(path, '/');
    snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : path);
    return ZAYA_OK;
}

/* Largest value any legacy per-half-layer list entry may hold (far above every bound of validate). */
#define LEGACY_LIST_MAX ((int64_t)1 << 40)

/* First non-zero entry of a legacy integer or per-half-layer list (e.g. ffn_hidden_size [4096, 0, ...]). */
static zaya_status first_nonzero(const cJSON *obj, const char *key, int64_t *out) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) return ZAYA_OK;
    if (cJSON_IsNumber(it)) return zaya_json_get_i64(obj, key, out, 1);
    if (!cJSON_IsArray(it)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be an integer or a list of integers", key);
    const cJSON *e;
    cJSON_ArrayForEach(e, it) {
        if (!cJSON_IsNumber(e)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must hold integers", key);
        double v = e->valuedouble;
        if (!(v >= 0 && v <= (double)LEGACY_LIST_MAX) || v != floor(v)) {
            char num[400];
            return zaya_error_set(ZAYA_ERANGE, "key '%s' holds %s (integers 0..%lld)", key, zaya_json_number_text(v, num, sizeof num),
                                  (long long)LEGACY_LIST_MAX);
        }
        if (v != 0) {
            *out = (int64_t)v;
            return ZAYA_OK;
        }
    }
    return ZAYA_OK;
}

/* rope_parameters: {"hybrid": {"rope_theta":..., "partial_rotary_factor":...}, ...} or flat. */
static zaya_status read_rope(const cJSON *obj, zaya_config *c) {
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(obj, "rope_parameters");
    if (rp && !cJSON_IsNull(rp)) {
        if (!cJSON_IsObject(rp)) return zaya_error_set(ZAYA_EINVAL, "key 'rope_parameters' must be an object");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(rp, "hybrid");
        const cJSON *src = (h && cJSON_IsObject(h)) ? h : rp;
        ZAYA_TRY(zaya_json_get_f64(src, "rope_theta", &c->rope_theta, 0));
        ZAYA_TRY(zaya_json_get_f64(src, "partial_rotary_factor", &c->partial_rotary_factor, 0));
    }
    ZAYA_TRY(zaya_json_get_f64(obj, "rope_theta", &c->rope_theta, 0));
    ZAYA_TRY(zaya_json_get_f64(obj, "partial_rotary_factor", &c->partial_rotary_factor, 0));
    return ZAYA_OK;
}

const char *zaya_router_name(zaya_router_kind k) {
    return k == ZAYA_ROUTER_LINEAR ? "linear" : k == ZAYA_ROUTER_NO_EDA ? "zaya_no_eda" : "zaya";
}

const char *zaya_mlp_name(zaya_mlp_kind k) { return k == ZAYA_MLP_DENSE ? "dense" : "moe"; }

int zaya_config_is_zaya1(const zaya_config *c) {
    return c->router == ZAYA_ROUTER_ZAYA && c->mlp == ZAYA_MLP_MOE && c->residual == ZAYA_RESIDUAL_SCALED;
}

/* The architecture variants (zaya extension keys, docs/model.md "Variants"); absent keys keep ZAYA1. */
static zaya_status read_variants(const cJSON *obj, zaya_config *c) {
    const char *router = NULL, *mlp = NULL;
    ZAYA_TRY(zaya_json_get_str(obj, "zaya_router", &router, 0));
    if (router) {
        if (c->router == ZAYA_ROUTER_NO_EDA && strcmp(router, "zaya_no_eda") != 0)
            return zaya_error_set(ZAYA_EINVAL, "key 'zaya_router' (\"%s\") contradicts the legacy key 'zaya_use_eda' (false)",
                                  router);
        if (!strcmp(router, "zaya")) c->router = ZAYA_ROUTER_ZAYA;
        else if (!strcmp(router, "zaya_no_eda")) c->router = ZAYA_ROUTER_NO_EDA;
        else if (!strcmp(router, "linear")) c->router = ZAYA_ROUTER_LINEAR;
        else
            return zaya_error_set(ZAYA_EINVAL, "key 'zaya_router' must be \"zaya\", \"zaya_no_eda\" or \"linear\", got \"%s\"",
                                  router);
    }
    ZAYA_TRY(zaya_json_get_str(obj, "zaya_mlp", &mlp, 0));
    if (mlp) {
        if (!strcmp(mlp, "moe")) c->mlp = ZAYA_MLP_MOE;
        else if (!strcmp(mlp, "dense")) c->mlp = ZAYA_MLP_DENSE;
        else return zaya_error_set(ZAYA_EINVAL, "key 'zaya_mlp' must be \"moe\" or \"dense\", got \"%s\"", mlp);
    }
    const cJSON *dense = cJSON_GetObjectItemCaseSensitive(obj, "zaya_dense_intermediate_size");
    if (dense && !cJSON_IsNull(dense)) {
        if (c->mlp != ZAYA_MLP_DENSE)
            return zaya_error_set(ZAYA_EINVAL, "key 'zaya_dense_intermediate_size' applies only to \"zaya_mlp\": \"dense\"");
        ZAYA_TRY(zaya_json_get_i64(obj, "zaya_dense_intermediate_size", &c->dense_intermediate_size, 1));
        if (c->dense_intermediate_size <= 0)
            return zaya_error_set(ZAYA_EINVAL, "key 'zaya_dense_intermediate_size' must be positive, got %lld",
                                  (long long)c->dense_intermediate_size);
    }
    int scaled = 1;
    ZAYA_TRY(zaya_json_get_bool(obj, "zaya_residual_scaling", &scaled, 0));
    c->residual = scaled ? ZAYA_RESIDUAL_SCALED : ZAYA_RESIDUAL_PLAIN;
    return ZAYA_OK;
}

zaya_status zaya_config_from_json(const cJSON *obj, zaya_config *c) {
    set_defaults(c);
    if (!cJSON_IsObject(obj)) return zaya_error_set(ZAYA_EFORMAT, "config must be a JSON object");
    const char *mt = NULL;
    ZAYA_TRY(zaya_json_get_str(obj, "model_type", &mt, 0));
    if (mt && strcmp(mt, "zaya") != 0)
        return zaya_error_set(ZAYA_EINVAL, "key 'model_type' is '%s'; zaya trains model_type 'zaya'", mt);

    /* Legacy (Megatron) layout: num_hidden_layers counts half-layers and ffn_hidden_size is the fused
     * gate|up width. Detected by its distinctive keys. */
    int legacy = cJSON_GetObjectItemCaseSensitive(obj, "ffn_hidden_size") != NULL ||
                 cJSON_GetObjectItemCaseSensitive(obj, "zaya_mlp_expansion") != NULL;

    ZAYA_TRY(zaya_json_get_i64(obj, "vocab_size", &c->vocab_size, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "hidden_size", &c->hidden_size, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "num_hidden_layers", &c->num_hidden_layers, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "num_attention_heads", &c->num_attention_heads, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "num_key_value_heads", &c->num_key_value_heads, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "head_dim", &c->head_dim, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "num_experts", &c->num_experts, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "num_experts_per_tok", &c->num_experts_per_tok, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "moe_intermediate_size", &c->moe_intermediate_size, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "router_hidden_size", &c->router_hidden_size, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "cca_time0", &c->cca_time0, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "cca_time1", &c->cca_time1, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "max_position_embeddings", &c->max_position_embeddings, 0));
    ZAYA_TRY(zaya_json_get_f64(obj, "rms_norm_eps", &c->rms_norm_eps, 0));
    ZAYA_TRY(zaya_json_get_f64(obj, "initializer_range", &c->initializer_range, 0));
    ZAYA_TRY(zaya_json_get_bool(obj, "tie_word_embeddings", &c->tie_word_embeddings, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "bos_token_id", &c->bos_token_id, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "eos_token_id", &c->eos_token_id, 0));
    ZAYA_TRY(zaya_json_get_i64(obj, "pad_token_id", &c->pad_token_id, 0));
    ZAYA_TRY(read_rope(obj, c));
    if (legacy) {
        /* The Megatron layout has no defaults of its own: the expert width must be given, as a number or
         * a per-half-layer list whose first non-zero entry is the fused width. */
        int64_t ffn = 0, topk = c->num_experts_per_tok, kv = c->num_key_value_heads;
        double eps = c->rms_norm_eps;
        ZAYA_TRY(first_nonzero(obj, "ffn_hidden_size", &ffn));
        if (ffn <= 0) ZAYA_TRY(first_nonzero(obj, "ffn_hidden_size_list", &ffn));
        if (ffn <= 0) return zaya_error_set(ZAYA_EINVAL, "missing required key 'ffn_hidden_size'");
        if (ffn % 2)
            return zaya_error_set(ZAYA_EINVAL, "key 'ffn_hidden_size' (%lld) is the fused gate|up width and must be even",
                                  (long long)ffn);
        c->moe_intermediate_size = ffn / 2;
        int64_t qh = 0;
        ZAYA_TRY(first_nonzero(obj, "cca_num_q_heads", &qh));
        if (qh > 0) c->num_attention_heads = qh;
        int eda = 1, mod = 1;
        ZAYA_TRY(zaya_json_get_bool(obj, "zaya_use_eda", &eda, 0));
        ZAYA_TRY(zaya_json_get_bool(obj, "zaya_use_mod", &mod, 0));
        if (!eda) c->router = ZAYA_ROUTER_NO_EDA; /* the original code's switch for what zaya_router "zaya_no_eda" is */
        if (!mod) return zaya_error_set(ZAYA_EUNSUPPORTED, "key 'zaya_use_mod': a router without the skip class is not modelled");
        ZAYA_TRY(zaya_json_get_i64(obj, "moe_router_topk", &topk, 0));
        c->num_experts_per_tok = topk;
        ZAYA_TRY(zaya_json_get_i64(obj, "num_query_groups", &kv, 0));
        c->num_key_value_heads = kv;
        ZAYA_TRY(zaya_json_get_f64(obj, "norm_epsilon", &eps, 0));
        c->rms_norm_eps = eps;
        /* An integer getter: a raw (int64_t) cast of a double such as 1e300 is undefined behaviour. */
        ZAYA_TRY(zaya_json_get_i64(obj, "zaya_mlp_expansion", &c->router_hidden_size, 0));
        ZAYA_TRY(zaya_json_get_i64(obj, "kv_channels", &c->head_dim, 0));
        if (c->num_hidden_layers % 2)
            return zaya_error_set(ZAYA_EINVAL, "key 'num_hidden_layers' (legacy half-layers) must be even, got %lld",
                                  (long long)c->num_hidden_layers);
        c->num_hidden_layers /= 2;
    }
    const char *skip = NULL;
    ZAYA_TRY(zaya_json_get_str(obj, "zaya_skip_mode", &skip, 0));
    if (skip) {
        if (!strcmp(skip, "identity")) c->skip_mode = ZAYA_SKIP_IDENTITY;
        else if (!strcmp(skip, "zero")) c->skip_mode = ZAYA_SKIP_ZERO;
        else return zaya_error_set(ZAYA_EINVAL, "key 'zaya_skip_mode' must be \"identity\" or \"zero\", got \"%s\"", skip);
    }
    ZAYA_TRY(read_variants(obj, c));
    const char *att = NULL;
    ZAYA_TRY(zaya_json_get_str(obj, "zaya_attention", &att, 0));
    if (att) {
        if (!strcmp(att, "cca")) c->attention = ZAYA_ATTENTION_CCA;
        else if (!strcmp(att, "gqa")) c->attention = ZAYA_ATTENTION_GQA;
        else if (!strcmp(att, "mha")) c->attention = ZAYA_ATTENTION_MHA;
        else
            return zaya_error_set(ZAYA_EINVAL, "key 'zaya_attention' must be \"cca\", \"gqa\" or \"mha\", got \"%s\"", att);
    }
    return zaya_config_validate(c);
}

#define POSITIVE(field)                                                                                  \
    if (c->field <= 0)                                                                                   \
        return zaya_error_set(ZAYA_EINVAL, "key '" #field "' must be positive, got %lld", (long long)c->field);

#define AT_MOST(field, limit)                                                                            \
    if (c->field > (limit))                                                                              \
        return zaya_error_set(ZAYA_EINVAL, "key '" #field "' must be at most %lld (" #limit "), got %lld", \
                              (long long)(limit), (long long)c->field);

/* Stored floats of the layout (plus the 16-float alignment of every tensor), in 128-bit arithmetic:
 * with every key within its bound this cannot overflow, so the result can be compared to a limit. */
static __int128 layout_floats(const zaya_config *c) {
    const __int128 D = c->hidden_size, V = c->vocab_size, R = c->router_hidden_size, E = c->num_experts;
    const __int128 F = c->moe_intermediate_size, hd = c->head_dim, L = c->num_hidden_layers;
    const __int128 qd = (__int128)c->num_attention_heads * hd, kvd = (__int128)c->num_key_value_heads * hd, C = qd + kvd;
    const __int128 attn = D + qd * D + kvd * D + kvd * D + C * c->cca_time0 + C + C * hd * c->cca_time1 + C +
                          c->num_key_value_heads + D * qd + 5 * D;
    const __int128 router = R * D + 3 * R + 2 * (R * R + R) + (E + 1) * R + (E + 1) + E * D;
    const __int128 Fd = zaya_config_dense_ffn(c);
    const __int128 experts = (c->mlp == ZAYA_MLP_DENSE ? 3 * Fd * D : E * 2 * F * D + E * D * F) + 4 * D;
    return V * D + 3 * D + L * (attn + router + experts) + 16 * (4 + 32 * L);
}

zaya_status zaya_config_validate(const zaya_config *c) {
    POSITIVE(vocab_size);
    POSITIVE(hidden_size);
    POSITIVE(num_hidden_layers);
    POSITIVE(num_attention_heads);
    POSITIVE(num_key_value_heads);
    POSITIVE(head_dim);
    POSITIVE(num_experts);
    POSITIVE(moe_intermediate_size);
    POSITIVE(router_hidden_size);
    POSITIVE(cca_time0);
    POSITIVE(cca_time1);
    POSITIVE(max_position_embeddings);
    AT_MOST(vocab_size, ZAYA_CONFIG_MAX_VOCAB);
    AT_MOST(hidden_size, ZAYA_CONFIG_MAX_HIDDEN);
    AT_MOST(num_hidden_layers, ZAYA_CONFIG_MAX_LAYERS);
    AT_MOST(num_attention_heads, ZAYA_CONFIG_MAX_HEADS);
    AT_MOST(num_key_value_heads, ZAYA_CONFIG_MAX_HEADS);
    AT_MOST(head_dim, ZAYA_CONFIG_MAX_HEAD_DIM);
    AT_MOST(num_experts, ZAYA_CONFIG_MAX_EXPERTS);
    AT_MOST(moe_intermediate_size, ZAYA_CONFIG_MAX_FFN);
    AT_MOST(router_hidden_size, ZAYA_CONFIG_MAX_ROUTER);
    AT_MOST(cca_time0, ZAYA_CONFIG_MAX_CONV);
    AT_MOST(cca_time1, ZAYA_CONFIG_MAX_CONV);
    AT_MOST(max_position_embeddings, ZAYA_CONFIG_MAX_POSITIONS);
    if (c->dense_intermediate_size > ZAYA_CONFIG_MAX_FFN)
        return zaya_error_set(ZAYA_EINVAL, "key 'zaya_dense_intermediate_size' must be at most %lld (ZAYA_CONFIG_MAX_FFN), got %lld",
                              (long long)ZAYA_CONFIG_MAX_FFN, (long long)c->dense_intermediate_size);
    if (c->dense_intermediate_size < 0)
        return zaya_error_set(ZAYA_EINVAL, "key 'zaya_dense_intermediate_size' must be positive, got %lld",
                              (long long)c->dense_intermediate_size);
    if ((unsigned)c->router > ZAYA_ROUTER_LINEAR || (unsigned)c->mlp > ZAYA_MLP_DENSE ||
        (unsigned)c->residual > ZAYA_RESIDUAL_PLAIN || (unsigned)c->skip_mode > ZAYA_SKIP_ZERO)
        return zaya_error_set(ZAYA_EINVAL, "unknown value of a variant key (zaya_router %d, zaya_mlp %d, "
                              "zaya_residual_scaling %d, zaya_skip_mode %d)", (int)c->router, (int)c->mlp,
                              (int)c->residual, (int)c->skip_mode);
    if (c->mlp == ZAYA_MLP_DENSE && c->router != ZAYA_ROUTER_ZAYA)
        return zaya_error_set(ZAYA_EINVAL, "key 'zaya_router' (\"%s\") does not fit \"zaya_mlp\": \"dense\" (a dense MLP "
                              "has no router)", zaya_router_name(c->router));
    if (c->mlp != ZAYA_MLP_DENSE && c->dense_intermediate_size != 0)
        return zaya_error_set(ZAYA_EINVAL, "key 'zaya_dense_intermediate_size' applies only to \"zaya_mlp\": \"dense\"");
    __int128 floats = layout_floats(c);
    if (floats > ZAYA_CONFIG_MAX_PARAMS)
        return zaya_error_set(ZAYA_EINVAL,
                              "the model would store %.4g parameters, more than %lld (ZAYA_CONFIG_MAX_PARAMS): reduce "
                              "'num_hidden_layers' (%lld), 'num_experts' (%lld), 'moe_intermediate_size' (%lld), "
                              "'hidden_size' (%lld) or 'vocab_size' (%lld)",
                              (double)floats, (long long)ZAYA_CONFIG_MAX_PARAMS, (long long)c->num_hidden_layers,
                              (long long)c->num_experts, (long long)c->moe_intermediate_size, (long long)c->hidden_size,
                              (long long)c->vocab_size);
    if (c->num_attention_heads % c->num_key_value_heads)
        return zaya_error_set(ZAYA_EINVAL,
                              "key 'num_attention_heads' (%lld) must be divisible by 'num_key_value_heads' (%lld)",
                              (long long)c->num_attention_heads, (long long)c->num_key_value_heads);
    if (c->num_experts_per_tok != 1)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "key 'num_experts_per_tok' must be 1 (ZAYA1 routes top-1), got %lld",
                              (long long)c->num_experts_per_tok);
    if (!(c->attention == ZAYA_ATTENTION_CCA || c->attention == ZAYA_ATTENTION_GQA || c->attention == ZAYA_ATTENTION_MHA))
        return zaya_error_set(ZAYA_EINVAL, "key 'zaya_attention' holds an unknown kind %d", (int)c->attention);
    if (c->attention == ZAYA_ATTENTION_MHA && c->num_key_value_heads != c->num_attention_heads)
        return zaya_error_set(ZAYA_EINVAL,
                              "key 'num_key_value_heads' (%lld) must equal 'num_attention_heads' (%lld) with "
                              "'zaya_attention' \"mha\" (use \"gqa\" for fewer KV heads)",
                              (long long)c->num_key_value_heads, (long long)c->num_attention_heads);
    if (c->attention == ZAYA_ATTENTION_CCA && (c->num_key_value_heads * c->head_dim) % 2)
        return zaya_error_set(ZAYA_EINVAL,
                              "num_key_value_heads * head_dim must be even (values split into current and delayed halves)");
    if (!(c->partial_rotary_factor > 0 && c->partial_rotary_factor <= 1))
        return zaya_error_set(ZAYA_EINVAL, "key 'partial_rotary_factor' must be in (0, 1], got %g", c->partial_rotary_factor);
    int64_t rot = zaya_config_rot_dims(c);
    if (fabs(c->partial_rotary_factor * (double)c->head_dim - (double)rot) > 1e-9 || rot % 2 || rot > c->head_dim)
        return zaya_error_set(ZAYA_EINVAL,
                              "rotary dims = partial_rotary_factor * head_dim = %g must be an even integer <= head_dim %lld",
                              c->partial_rotary_factor * (double)c->head_dim, (long long)c->head_dim);
    if (!(c->rope_theta > 1.0)) return zaya_error_set(ZAYA_EINVAL, "key 'rope_theta' must be > 1, got %g", c->rope_theta);
    /* Both are converted to float by the kernels: a double beyond FLT_MAX would be undefined behaviour. */
    if (!(c->rms_norm_eps > 0 && c->rms_norm_eps <= 1))
        return zaya_error_set(ZAYA_EINVAL, "key 'rms_norm_eps' must be in (0, 1], got %g", c->rms_norm_eps);
    if (!(c->initializer_range >= 0 && c->initializer_range <= 1e3))
        return zaya_error_set(ZAYA_EINVAL, "key 'initializer_range' must be in [0, 1000], got %g", c->initializer_range);
    if (!c->tie_word_embeddings)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "key 'tie_word_embeddings' must be true (ZAYA1 ties the LM head)");
    int64_t ids[3] = {c->bos_token_id, c->eos_token_id, c->pad_token_id};
    const char *names[3] = {"bos_token_id", "eos_token_id", "pad_token_id"};
    for (int i = 0; i < 3; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab_size)
            return zaya_error_set(ZAYA_EINVAL, "key '%s' (%lld) must be in [0, vocab_size=%lld)", names[i],
                                  (long long)ids[i], (long long)c->vocab_size);
    return ZAYA_OK;
}

cJSON *zaya_config_to_json(const zaya_config *c) {
    cJSON *o = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(o, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("ZayaForCausalLM"));
    cJSON_AddStringToObject(o, "model_type", "zaya");
    cJSON_AddNumberToObject(o, "vocab_size", (double)c->vocab_size);
    cJSON_AddNumberToObject(o, "hidden_size", (double)c->hidden_size);
    cJSON_AddNumberToObject(o, "num_hidden_layers", (double)c->num_hidden_layers);
    cJSON_AddNumberToObject(o, "num_attention_heads", (double)c->num_attention_heads);
    cJSON_AddNumberToObject(o, "num_key_value_heads", (double)c->num_key_value_heads);
    cJSON_AddNumberToObject(o, "head_dim", (double)c->head_dim);
    cJSON_AddStringToObject(o, "hidden_act", "silu");
    cJSON_AddNumberToObject(o, "max_position_embeddings", (double)c->max_position_embeddings);
    cJSON_AddNumberToObject(o, "initializer_range", c->initializer_range);
    cJSON_AddNumberToObject(o, "rms_norm_eps", c->rms_norm_eps);
    cJSON_AddBoolToObject(o, "use_cache", 1);
    cJSON_AddBoolToObject(o, "tie_word_embeddings", 1);
    cJSON *rp = cJSON_AddObjectToObject(o, "rope_parameters");
    cJSON *h = cJSON_AddObjectToObject(rp, "hybrid");
    cJSON_AddStringToObject(h, "rope_type", "default");
    cJSON_AddNumberToObject(h, "rope_theta", c->rope_theta);
    cJSON_AddNumberToObject(h, "partial_rotary_factor", c->partial_rotary_factor);
    cJSON_AddNumberToObject(o, "attention_dropout", 0.0);
    cJSON_AddNumberToObject(o, "moe_intermediate_size", (double)c->moe_intermediate_size);
    cJSON_AddNumberToObject(o, "num_experts_per_tok", 1);
    cJSON_AddNumberToObject(o, "num_experts", (double)c->num_experts);
    cJSON_AddNumberToObject(o, "pad_token_id", (double)c->pad_token_id);
    cJSON_AddNumberToObject(o, "bos_token_id", (double)c->bos_token_id);
    cJSON_AddNumberToObject(o, "eos_token_id", (double)c->eos_token_id);
    cJSON_AddBoolToObject(o, "attention_bias", 0);
    cJSON_AddBoolToObject(o, "lm_head_bias", 0);
    cJSON_AddNumberToObject(o, "router_hidden_size", (double)c->router_hidden_size);
    cJSON_AddNumberToObject(o, "cca_time0", (double)c->cca_time0);
    cJSON_AddNumberToObject(o, "cca_time1", (double)c->cca_time1);
    cJSON_AddStringToObject(o, "zaya_skip_mode", c->skip_mode == ZAYA_SKIP_ZERO ? "zero" : "identity");
    cJSON_AddStringToObject(o, "zaya_router", zaya_router_name(c->router));
    cJSON_AddStringToObject(o, "zaya_mlp", zaya_mlp_name(c->mlp));
    if (c->mlp == ZAYA_MLP_DENSE)
        cJSON_AddNumberToObject(o, "zaya_dense_intermediate_size", (double)zaya_config_dense_ffn(c));
    cJSON_AddBoolToObject(o, "zaya_residual_scaling", c->residual == ZAYA_RESIDUAL_SCALED);
    cJSON_AddStringToObject(o, "zaya_attention", zaya_config_attention_name(c->attention));
    return o;
}

int zaya_config_same_architecture(const zaya_config *a, const zaya_config *b) {
    return a->vocab_size == b->vocab_size && a->hidden_size == b->hidden_size &&
           a->num_hidden_layers == b->num_hidden_layers && a->num_attention_heads == b->num_attention_heads &&
           a->num_key_value_heads == b->num_key_value_heads && a->head_dim == b->head_dim &&
           a->num_experts == b->num_experts && a->num_experts_per_tok == b->num_experts_per_tok &&
           a->moe_intermediate_size == b->moe_intermediate_size && a->router_hidden_size == b->router_hidden_size &&
           a->cca_time0 == b->cca_time0 && a->cca_time1 == b->cca_time1 &&
           a->partial_rotary_factor == b->partial_rotary_factor && a->rms_norm_eps == b->rms_norm_eps &&
           a->skip_mode == b->skip_mode && a->router == b->router && a->mlp == b->mlp &&
           (a->mlp != ZAYA_MLP_DENSE || zaya_config_dense_ffn(a) == zaya_config_dense_ffn(b)) &&
           a->residual == b->residual && a->attention == b->attention;
}

const char *zaya_config_attention_name(zaya_attention_kind k) {
    return k == ZAYA_ATTENTION_GQA ? "gqa" : k == ZAYA_ATTENTION_MHA ? "mha" : "cca";
}

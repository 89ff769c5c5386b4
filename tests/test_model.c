/* ZAYA1 model: configuration validation, exact parameter counts, whole-model finite-difference
 * gradients for every parameter tensor, untouched buffers, causality, and f32/bf16 agreement. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"
#include "zaya/matmul.h"
#include "zaya/timer.h"
#include "testutil.h"
#include "zaya/json.h"
#include "zaya/rng.h"
#include "zaya/threads.h"

static void test_counts(void) {
    zaya_config c;
    CHECK(zaya_config_preset("zaya1-8b", &c) == ZAYA_OK, "preset");
    zaya_param_counts pc = zaya_model_count_params(&c);
    CHECK(pc.non_embedding == 8303355728ll, "non-embedding %lld", (long long)pc.non_embedding);
    CHECK(pc.active_non_embedding == 753608528ll, "active %lld", (long long)pc.active_non_embedding);
    CHECK(pc.total == 8840488784ll, "total %lld", (long long)pc.total);
    CHECK(pc.buffers == 40 * 17, "buffers %lld", (long long)pc.buffers);
    zaya_config_preset("zaya1-tiny", &c);
    pc = zaya_model_count_params(&c);
    CHECK(pc.total > 8000000 && pc.total < 12000000, "tiny total %lld", (long long)pc.total);
    zaya_config_preset("zaya1-small", &c);
    pc = zaya_model_count_params(&c);
    CHECK(pc.total > 80000000 && pc.total < 120000000, "small total %lld", (long long)pc.total);
    /* GQA / MHA: q, k, v, o projections only, per block D * hd * (2 Hq + 2 Hkv) attention parameters. */
    zaya_config_preset("zaya1-tiny", &c);
    zaya_param_counts cca = zaya_model_count_params(&c);
    const int64_t D = c.hidden_size, hd = c.head_dim, Hq = c.num_attention_heads, Hkv = c.num_key_value_heads;
    const int64_t C = (Hq + Hkv) * hd, cca_attn = D * Hq * hd * 2 + D * Hkv * hd * 2 + C * c.cca_time0 + C +
                                                C * hd * c.cca_time1 + C + Hkv;
    c.attention = ZAYA_ATTENTION_GQA;
    pc = zaya_model_count_params(&c);
    CHECK(cca.total - pc.total == c.num_hidden_layers * (cca_attn - D * hd * (2 * Hq + 2 * Hkv)),
          "gqa total %lld vs cca %lld", (long long)pc.total, (long long)cca.total);
    CHECK(pc.buffers == cca.buffers, "gqa buffers");
    /* config.json round trip keeps the kind; cca is written explicitly too */
    for (int k = 0; k < 3; k++) {
        zaya_config a, b;
        zaya_config_preset("zaya1-tiny", &a);
        a.attention = (zaya_attention_kind)k;
        if (k == ZAYA_ATTENTION_MHA) a.num_key_value_heads = a.num_attention_heads;
        cJSON *j = zaya_config_to_json(&a);
        const cJSON *key = cJSON_GetObjectItemCaseSensitive(j, "zaya_attention");
        CHECK(cJSON_IsString(key) && !strcmp(key->valuestring, zaya_config_attention_name(a.attention)), "key written");
        CHECK(zaya_config_from_json(j, &b) == ZAYA_OK && b.attention == a.attention && zaya_config_same_architecture(&a, &b),
              "round trip of zaya_attention %d: %s", k, zaya_error_message());
        b.attention = (zaya_attention_kind)((k + 1) % 3);
        CHECK(!zaya_config_same_architecture(&a, &b), "attention kind is part of the architecture");
        cJSON_Delete(j);
    }
    /* Costs: no convolutions or conv state outside CCA; the projection FLOPs are the same. */
    zaya_config_preset("zaya1-tiny", &c);
    zaya_model_costs kc = zaya_model_costs_at(&c, 256, 2);
    c.attention = ZAYA_ATTENTION_GQA;
    zaya_model_costs kg = zaya_model_costs_at(&c, 256, 2);
    CHECK(kc.conv_flops > 0 && kg.conv_flops == 0 && kg.state_bytes_per_seq == 0 && kg.matmul_flops == kc.matmul_flops &&
              kg.kv_bytes_per_token == kc.kv_bytes_per_token,
          "gqa costs");
}

static void expect_config_error(const char *json, const char *needle) {
    cJSON *o = NULL;
    CHECK(zaya_json_parse(json, "inline", &o) == ZAYA_OK, "parse %s", json);
    zaya_config c;
    zaya_status s = zaya_config_from_json(o, &c);
    CHECK(s != ZAYA_OK && strstr(zaya_error_message(), needle), "config %s: expected error with '%s', got '%s'", json,
          needle, s == ZAYA_OK ? "ok" : zaya_error_message());
    cJSON_Delete(o);
}

static void test_config_errors(void) {
    expect_config_error("{\"num_attention_heads\": 6, \"num_key_value_heads\": 4}", "divisible");
    expect_config_error("{\"hidden_size\": 0}", "'hidden_size'");
    expect_config_error("{\"hidden_size\": \"big\"}", "'hidden_size'");
    expect_config_error("{\"partial_rotary_factor\": 0.3}", "rotary");
    expect_config_error("{\"partial_rotary_factor\": 1.5}", "partial_rotary_factor");
    expect_config_error("{\"num_experts_per_tok\": 2}", "num_experts_per_tok");
    expect_config_error("{\"model_type\": \"llama\"}", "model_type");
    expect_config_error("{\"zaya_skip_mode\": \"drop\"}", "zaya_skip_mode");
    expect_config_error("{\"zaya_attention\": \"mla\"}", "'zaya_attention' must be \"cca\", \"gqa\" or \"mha\"");
    expect_config_error("{\"zaya_attention\": 1}", "zaya_attention");
    expect_config_error("{\"zaya_attention\": \"mha\", \"num_attention_heads\": 8, \"num_key_value_heads\": 2}",
                        "'num_key_value_heads' (2) must equal 'num_attention_heads' (8)");
    expect_config_error("{\"vocab_size\": 100, \"eos_token_id\": 106}", "eos_token_id");
    /* Legacy (Megatron) keys map onto the HF ones. */
    cJSON *o = NULL;
    zaya_json_parse("{\"num_hidden_layers\": 80, \"ffn_hidden_size\": 4096, \"zaya_mlp_expansion\": 256,"
                    "\"num_query_groups\": 2, \"rope_theta\": 1000000, \"norm_epsilon\": 1e-5}",
                    "legacy", &o);
    zaya_config c;
    CHECK(zaya_config_from_json(o, &c) == ZAYA_OK, "legacy: %s", zaya_error_message());
    CHECK(c.num_hidden_layers == 40 && c.moe_intermediate_size == 2048 && c.rope_theta == 1e6, "legacy mapping");
    cJSON_Delete(o);
}

typedef struct fd_ctx {
    zaya_model *m;
    const int32_t *ids, *targets;
} fd_ctx;

static double fd_loss(void *p) {
    fd_ctx *c = p;
    float loss = 0;
    zaya_model_forward(c->m, c->ids, c->targets, 0, &loss);
    return loss;
}

static void tiny_config(zaya_config *c) {
    zaya_config_preset("zaya1-tiny", c);
    c->hidden_size = 18; /* not a multiple of the vector width */
    c->num_hidden_layers = 2;
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->head_dim = 8;
    c->num_experts = 3;
    c->moe_intermediate_size = 8;
    c->router_hidden_size = 8;
    c->vocab_size = 23;
    c->max_position_embeddings = 32;
}


static void same_routing(zaya_model *m, int32_t *saved, int save, int *same) {
    const int64_t N = m->B * m->T;
    for (int l = 0; l < (int)m->cfg.num_hidden_layers; l++)
        for (int64_t i = 0; i < N; i++) {
            if (save) saved[l * N + i] = m->acts[l].idx[i];
            else if (saved[l * N + i] != m->acts[l].idx[i]) *same = 0;
        }
}

/* skip_init: the skip class's balancing bias back at its init (-1), so that every expert gets tokens. */
static void fd_check(const zaya_config *cfg, const char *label, int skip_init) {
    zaya_config c = *cfg;
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    zaya_model_init_weights(&m, 3);
    th_randomize_model(&m, 5);
    for (int i = 0; i < m.ntensors && skip_init; i++)
        if (m.tensors[i].opt == ZAYA_OPT_NONE) m.params[m.tensors[i].offset + m.tensors[i].numel - 1] = -1.0f;
    const int64_t B = 2, T = 7, N = B * T;
    CHECK(zaya_model_plan(&m, B, T) == ZAYA_OK, "plan");
    int32_t ids[14], tg[14];
    for (int i = 0; i < N; i++) {
        ids[i] = (int32_t)((i * 7 + 3) % c.vocab_size);
        tg[i] = i == 4 ? -1 : (int32_t)((i * 5 + 1) % c.vocab_size);
    }
    float *buf_before = malloc(sizeof(float) * (size_t)m.nfloats);
    memcpy(buf_before, m.params, sizeof(float) * (size_t)m.nfloats);
    zaya_model_zero_grad(&m);
    float loss;
    CHECK(zaya_model_forward(&m, ids, tg, 1, &loss) == ZAYA_OK, "forward");
    zaya_model_backward(&m);
    CHECK(memcmp(buf_before, m.params, sizeof(float) * (size_t)m.nfloats) == 0, "forward/backward changed parameters");
    int32_t *routing = malloc(sizeof(int32_t) * (size_t)(c.num_hidden_layers * N));
    same_routing(&m, routing, 1, NULL);

    fd_ctx ctx = {&m, ids, tg};
    int checked = 0, skipped = 0;
    for (int i = 0; i < m.ntensors; i++) {
        const zaya_tensor_info *t = &m.tensors[i];
        float gmax = 0;
        for (int64_t j = 0; j < t->numel; j++) gmax = fmaxf(gmax, fabsf(m.grads[t->offset + j]));
        if (t->opt == ZAYA_OPT_NONE) {
            CHECK(gmax == 0.0f, "buffer %s has a gradient", t->name);
            continue;
        }
        CHECK(gmax > 0.0f, "%s: %s: gradient is identically zero", label, t->name);
        /* Sample a few elements of every tensor, including the largest-gradient one. */
        int64_t picks[4] = {0, t->numel / 2, t->numel - 1, 0};
        for (int64_t j = 0; j < t->numel; j++)
            if (fabsf(m.grads[t->offset + j]) == gmax) picks[3] = j;
        for (int s = 0; s < 4; s++) {
            int64_t j = picks[s];
            float g = m.grads[t->offset + j];
            double fd = th_fd(fd_loss, &ctx, m.params + t->offset + j, 0, 1e-2);
            int same = 1;
            /* a perturbation that flips a routing decision makes the loss non-smooth: skip it */
            m.params[t->offset + j] += 1e-2f;
            fd_loss(&ctx);
            same_routing(&m, routing, 0, &same);
            m.params[t->offset + j] -= 2e-2f;
            fd_loss(&ctx);
            same_routing(&m, routing, 0, &same);
            m.params[t->offset + j] += 1e-2f;
            if (!same) {
                skipped++;
                continue;
            }
            checked++;
            double tol = 2e-2 * gmax + 2e-3;
            CHECK(fabs(fd - g) <= tol, "%s[%lld]: analytic %.6g vs finite difference %.6g", t->name, (long long)j, g, fd);
        }
    }
    printf("finite differences (%s): %d elements checked, %d skipped (routing flip), loss %.5f\n", label, checked,
           skipped, loss);
    CHECK(checked > 3 * m.ntensors, "too few finite-difference checks (%d)", checked);
    free(buf_before);
    free(routing);
    zaya_model_free(&m);
}

static void test_finite_differences(zaya_skip_mode mode, zaya_attention_kind att) {
    zaya_config c;
    tiny_config(&c);
    c.skip_mode = mode;
    c.attention = att;
    if (att == ZAYA_ATTENTION_MHA) c.num_key_value_heads = c.num_attention_heads;
    char label[64];
    snprintf(label, sizeof label, "%s, attention %s", mode == ZAYA_SKIP_ZERO ? "skip=zero" : "skip=identity",
             zaya_config_attention_name(att));
    fd_check(&c, label, 0);
}

/* ---- architecture variants (docs/model.md "Variants") ---- */

static void variant_config(zaya_config *c, const char *which) {
    tiny_config(c);
    c->num_hidden_layers = 3; /* EDA would cross two block boundaries */
    if (!strcmp(which, "no_eda")) c->router = ZAYA_ROUTER_NO_EDA;
    if (!strcmp(which, "linear")) c->router = ZAYA_ROUTER_LINEAR;
    if (!strcmp(which, "dense")) c->mlp = ZAYA_MLP_DENSE, c->dense_intermediate_size = 13; /* odd width */
    if (!strcmp(which, "plain")) c->residual = ZAYA_RESIDUAL_PLAIN;
    if (!strcmp(which, "linear_plain")) c->router = ZAYA_ROUTER_LINEAR, c->residual = ZAYA_RESIDUAL_PLAIN;
    if (!strcmp(which, "dense_plain"))
        c->mlp = ZAYA_MLP_DENSE, c->residual = ZAYA_RESIDUAL_PLAIN; /* width = moe_intermediate_size */
}

static const char *const g_variants[] = {"no_eda", "linear", "dense", "plain", "linear_plain", "dense_plain"};
#define NVARIANTS (int)(sizeof g_variants / sizeof g_variants[0])

/* Which tensors each variant has (HF names), and none that it lacks. */
static void test_variant_layouts(void) {
    for (int v = 0; v < NVARIANTS; v++) {
        zaya_config c;
        variant_config(&c, g_variants[v]);
        zaya_model m;
        CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "%s: init: %s", g_variants[v], zaya_error_message());
        int eda = 0, zrouter = 0, lin = 0, experts = 0, dense = 0, scales = 0, bal = 0;
        for (int i = 0; i < m.ntensors; i++) {
            const char *n = m.tensors[i].name;
            eda += strstr(n, "router_states_scale") != NULL;
            zrouter += strstr(n, "router_mlp.out_proj") != NULL;
            if (strstr(n, "mlp.gate.weight")) {
                lin++;
                CHECK(m.tensors[i].shape[0] == c.num_experts && m.tensors[i].shape[1] == c.hidden_size &&
                      m.tensors[i].opt == ZAYA_OPT_MUON, "%s: linear router shape", g_variants[v]);
            }
            experts += strstr(n, "experts.gate_up_proj") != NULL;
            if (strstr(n, "mlp.gate_proj.weight") || strstr(n, "mlp.up_proj.weight")) {
                dense++;
                CHECK(m.tensors[i].shape[0] == zaya_config_dense_ffn(&c) && m.tensors[i].nmatrix == 1, "%s: dense shape",
                      g_variants[v]);
            }
            if (strstr(n, "mlp.down_proj.weight") && !strstr(n, "gate.")) dense++;
            scales += strstr(n, "residual_scale.") != NULL;
            bal += strstr(n, "balancing_biases") != NULL;
        }
        const int L = (int)c.num_hidden_layers, moe = c.mlp == ZAYA_MLP_MOE;
        CHECK(eda == (c.router == ZAYA_ROUTER_ZAYA && moe ? L - 1 : 0), "%s: %d EDA scales", g_variants[v], eda);
        CHECK(zrouter == (c.router != ZAYA_ROUTER_LINEAR && moe ? L : 0), "%s: %d ZAYA routers", g_variants[v], zrouter);
        CHECK(lin == (c.router == ZAYA_ROUTER_LINEAR ? L : 0), "%s: %d linear routers", g_variants[v], lin);
        CHECK(experts == (moe ? L : 0) && bal == (moe ? L : 0), "%s: %d expert tensors, %d bias buffers", g_variants[v],
              experts, bal);
        CHECK(dense == (moe ? 0 : 3 * L), "%s: %d dense tensors", g_variants[v], dense);
        CHECK(scales == (c.residual == ZAYA_RESIDUAL_SCALED ? 8 * L : 0), "%s: %d residual-scale tensors", g_variants[v],
              scales);
        zaya_model_free(&m);
    }
}

/* Exact parameter counts of zaya1-tiny under each variant, from the shapes (docs/model.md). */
static void test_variant_counts(void) {
    const int64_t V = 4096, D = 256, L = 8, E = 4, F = 256, R = 64, qd = 256, kvd = 128, C = qd + kvd, hd = 64;
    const int64_t attn = D + qd * D + kvd * D + kvd * D + C * 2 + C + C * hd * 2 + C + 2 + D * qd;
    const int64_t scales = 8 * D, router = R * D + R + R + 2 * (R * R + R) + (E + 1) * R, eda = (L - 1) * R;
    const int64_t experts = E * 3 * F * D, base = V * D + 2 * D + D + L * (attn + D); /* embedding, affine, norms */
    struct { const char *mlp, *router; int64_t dense; int scaled; int64_t total, active; } cases[] = {
        {"moe", "zaya", 0, 1, base + L * (scales + router + experts) + eda, 0},
        {"moe", "zaya_no_eda", 0, 1, base + L * (scales + router + experts), 0},
        {"moe", "linear", 0, 1, base + L * (scales + E * D + experts), 0},
        {"dense", "zaya", F, 1, base + L * (scales + 3 * F * D), 0},
        {"dense", "zaya", E * F, 1, base + L * (scales + 3 * E * F * D), 0},
        {"moe", "zaya", 0, 0, base + L * (router + experts) + eda, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char json[512];
        if (cases[i].dense)
            snprintf(json, sizeof json, "{\"zaya_mlp\": \"%s\", \"zaya_dense_intermediate_size\": %lld}", cases[i].mlp,
                     (long long)cases[i].dense);
        else
            snprintf(json, sizeof json, "{\"zaya_mlp\": \"%s\", \"zaya_router\": \"%s\", \"zaya_residual_scaling\": %s}",
                     cases[i].mlp, cases[i].router, cases[i].scaled ? "true" : "false");
        cJSON *o = NULL;
        zaya_json_parse(json, "inline", &o);
        /* the tiny preset's sizes, then the variant keys */
        zaya_config tiny, c;
        zaya_config_preset("zaya1-tiny", &tiny);
        cJSON *base_json = zaya_config_to_json(&tiny);
        cJSON *it;
        cJSON_ArrayForEach(it, o) {
            cJSON_DeleteItemFromObjectCaseSensitive(base_json, it->string);
            cJSON_AddItemToObject(base_json, it->string, cJSON_Duplicate(it, 1));
        }
        CHECK(zaya_config_from_json(base_json, &c) == ZAYA_OK, "%s: %s", json, zaya_error_message());
        zaya_param_counts pc = zaya_model_count_params(&c);
        const int64_t inactive = c.mlp == ZAYA_MLP_MOE ? L * (E - 1) * 3 * F * D : 0;
        CHECK(pc.total == cases[i].total, "%s: total %lld, expected %lld", json, (long long)pc.total,
              (long long)cases[i].total);
        CHECK(pc.active_non_embedding == pc.total - V * D - inactive, "%s: active %lld", json,
              (long long)pc.active_non_embedding);
        CHECK(pc.buffers == (c.mlp == ZAYA_MLP_MOE ? L * (E + 1) : 0), "%s: buffers %lld", json, (long long)pc.buffers);
        printf("zaya1-tiny %-90s total %lld, active non-embedding %lld\n", json, (long long)pc.total,
               (long long)pc.active_non_embedding);
        /* the config.json round trip keeps the variant */
        cJSON *back_json = zaya_config_to_json(&c);
        zaya_config back;
        CHECK(zaya_config_from_json(back_json, &back) == ZAYA_OK && zaya_config_same_architecture(&back, &c) &&
                  back.router == c.router && back.mlp == c.mlp && back.residual == c.residual &&
                  zaya_config_dense_ffn(&back) == zaya_config_dense_ffn(&c),
              "%s: config.json round trip", json);
        zaya_config other = c;
        other.residual = c.residual == ZAYA_RESIDUAL_SCALED ? ZAYA_RESIDUAL_PLAIN : ZAYA_RESIDUAL_SCALED;
        CHECK(!zaya_config_same_architecture(&other, &c), "%s: residual change is another architecture", json);
        cJSON_Delete(back_json);
        cJSON_Delete(base_json);
        cJSON_Delete(o);
    }
}

static void test_variant_finite_differences(void) {
    for (int v = 0; v < NVARIANTS; v++) {
        zaya_config c;
        variant_config(&c, g_variants[v]);
        fd_check(&c, g_variants[v], 1);
    }
}

/* Routing of the linear router never picks the skip column; dense blocks route nothing; 1 and 2 threads
 * give bit-identical losses and gradients for every variant. */
static void test_variant_routing_and_threads(void) {
    for (int v = 0; v < NVARIANTS; v++) {
        zaya_config c;
        variant_config(&c, g_variants[v]);
        const int64_t B = 2, T = 9, N = B * T, E1 = c.num_experts + 1;
        int32_t ids[18], tg[18];
        for (int i = 0; i < N; i++) ids[i] = (int32_t)((i * 5 + 2) % c.vocab_size), tg[i] = (int32_t)((i * 3 + 1) % c.vocab_size);
        float *g[2] = {NULL, NULL}, loss[2] = {0, 0};
        int64_t nf = 0;
        for (int k = 0; k < 2; k++) {
            zaya_threads_init(k + 1);
            zaya_model m;
            CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
            zaya_model_init_weights(&m, 21);
            th_randomize_model(&m, 22);
            /* skip biases high enough that the skip column would win everywhere if it could */
            for (int i = 0; i < m.ntensors; i++)
                if (m.tensors[i].opt == ZAYA_OPT_NONE) m.params[m.tensors[i].offset + m.tensors[i].numel - 1] = 5.0f;
            zaya_model_sync_weights(&m);
            CHECK(zaya_model_plan(&m, B, T) == ZAYA_OK, "plan");
            zaya_model_zero_grad(&m);
            CHECK(zaya_model_forward(&m, ids, tg, 1, &loss[k]) == ZAYA_OK, "forward");
            zaya_model_backward(&m);
            int64_t routed = 0, skipped = 0, counts[8];
            for (int l = 0; l < (int)c.num_hidden_layers; l++) {
                for (int64_t e = 0; e < E1; e++) {
                    if (e < E1 - 1) routed += m.route_counts[l * E1 + e];
                    else skipped += m.route_counts[l * E1 + e];
                }
                zaya_model_route_count_layer(&m, l, counts);
                for (int64_t e = 0; e < E1; e++) CHECK(counts[e] == m.route_counts[l * E1 + e], "%s: recount", g_variants[v]);
            }
            if (c.mlp == ZAYA_MLP_DENSE) CHECK(routed == 0 && skipped == 0, "%s: dense blocks routed tokens", g_variants[v]);
            else if (c.router == ZAYA_ROUTER_LINEAR)
                CHECK(routed == N * c.num_hidden_layers && skipped == 0, "%s: linear router skipped %lld tokens",
                      g_variants[v], (long long)skipped);
            else CHECK(skipped == N * c.num_hidden_layers, "%s: ZAYA router with skip bias 5 skips (%lld)", g_variants[v],
                       (long long)skipped);
            nf = m.nfloats;
            g[k] = malloc(sizeof(float) * (size_t)nf);
            memcpy(g[k], m.grads, sizeof(float) * (size_t)nf);
            zaya_model_free(&m);
        }
        CHECK(loss[0] == loss[1] && !memcmp(g[0], g[1], sizeof(float) * (size_t)nf),
              "%s: 1 and 2 threads differ (loss %.9g vs %.9g)", g_variants[v], loss[0], loss[1]);
        free(g[0]);
        free(g[1]);
    }
    zaya_threads_init(2);
}

static void test_variant_config_errors(void) {
    expect_config_error("{\"zaya_router\": \"mlp\"}", "'zaya_router'");
    expect_config_error("{\"zaya_router\": 3}", "'zaya_router'");
    expect_config_error("{\"zaya_mlp\": \"ssm\"}", "'zaya_mlp'");
    expect_config_error("{\"zaya_residual_scaling\": \"yes\"}", "'zaya_residual_scaling'");
    expect_config_error("{\"zaya_dense_intermediate_size\": 64}", "'zaya_dense_intermediate_size'");
    expect_config_error("{\"zaya_mlp\": \"dense\", \"zaya_dense_intermediate_size\": 0}", "'zaya_dense_intermediate_size'");
    expect_config_error("{\"zaya_mlp\": \"dense\", \"zaya_dense_intermediate_size\": 1e12}", "zaya_dense_intermediate_size");
    expect_config_error("{\"zaya_mlp\": \"dense\", \"zaya_router\": \"linear\"}", "'zaya_router'");
}

static void test_causality_and_dtypes(zaya_attention_kind att) {
    zaya_config c;
    tiny_config(&c);
    c.cca_time0 = 3;
    c.attention = att;
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    zaya_model_init_weights(&m, 9);
    th_randomize_model(&m, 10);
    const int64_t T = 12, V = c.vocab_size;
    CHECK(zaya_model_plan(&m, 1, T) == ZAYA_OK, "plan");
    int32_t ids[12];
    for (int i = 0; i < T; i++) ids[i] = (int32_t)((i * 11 + 2) % V);
    float *base = malloc(sizeof(float) * (size_t)(T * V)), *pert = malloc(sizeof(float) * (size_t)(T * V));
    zaya_model_logits(&m, ids, NULL, base);
    for (int t = 0; t < T; t++) {
        int32_t saved = ids[t];
        ids[t] = (saved + 5) % (int32_t)V;
        zaya_model_logits(&m, ids, NULL, pert);
        ids[t] = saved;
        double before = th_rel_err_ff(pert, base, t * V, 1e-6);
        CHECK(before <= 1e-5, "perturbing token %d changed earlier logits (rel %.2e)", t, before);
        double after = th_rel_err_ff(pert + t * V, base + t * V, (T - t) * V, 1e-6);
        CHECK(after > 1e-4, "perturbing token %d changed nothing at or after it", t);
    }
    /* bf16 matmuls track f32 within bf16 accuracy. */
    zaya_model mb;
    CHECK(zaya_model_init(&mb, &c, ZAYA_DTYPE_BF16) == ZAYA_OK, "init bf16");
    memcpy(mb.params, m.params, sizeof(float) * (size_t)m.nfloats);
    zaya_model_sync_weights(&mb);
    zaya_model_plan(&mb, 1, T);
    zaya_model_logits(&mb, ids, NULL, pert);
    double e = th_rel_err_ff(pert, base, T * V, 1e-6);
    printf("bf16 vs f32 logits: rel err %.3e\n", e);
    /* Without CCA's L2 norm the randomized q/k give sharp softmaxes that amplify bf16 rounding. */
    const double tol = att == ZAYA_ATTENTION_CCA ? 5e-2 : 1e-1;
    CHECK(e < tol && e > 0, "bf16 logits differ from f32 by %.3e", e);
    int32_t bad[12];
    memcpy(bad, ids, sizeof bad);
    bad[3] = (int32_t)V;
    CHECK(zaya_model_logits(&m, bad, NULL, pert) == ZAYA_ERANGE && strstr(zaya_error_message(), "position 3"),
          "out-of-vocab id rejected: %s", zaya_error_message());
    free(base);
    free(pert);
    zaya_model_free(&m);
    zaya_model_free(&mb);
}

/* A sequence's logits do not depend on the other sequences of its batch, bit for bit: every op is
 * row- or sequence-local, and the expert GEMMs, whose row counts change with the batch, compute each
 * row the same whatever the count (run-time-shape primitives, padded below ZAYA_EXPERT_MIN_ROWS).
 * Context and data parallelism rely on it. Both dtypes, experts receiving from a few rows to many. */
static void test_batch_invariance(void) {
    zaya_config c;
    tiny_config(&c);
    c.hidden_size = 32;
    c.moe_intermediate_size = 24;
    for (int dt = 0; dt < 2; dt++) {
        zaya_model m;
        CHECK(zaya_model_init(&m, &c, dt ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32) == ZAYA_OK, "init");
        zaya_model_init_weights(&m, 21);
        th_randomize_model(&m, 22);
        zaya_model_sync_weights(&m);
        const int64_t B = 5, T = 24, V = c.vocab_size;
        int32_t ids[5 * 24];
        for (int64_t i = 0; i < B * T; i++) ids[i] = (int32_t)((i * 7 + i / 5) % V);
        float *all = malloc(sizeof(float) * (size_t)(B * T * V)), *one = malloc(sizeof(float) * (size_t)(T * V));
        CHECK(zaya_model_plan(&m, B, T) == ZAYA_OK, "plan B");
        CHECK(zaya_model_logits(&m, ids, NULL, all) == ZAYA_OK, "logits B");
        int64_t lo = B * T, hi = 0;
        for (int64_t e = 0; e < c.num_experts; e++) {
            const int64_t n = m.acts[0].off[e + 1] - m.acts[0].off[e];
            lo = n < lo ? n : lo, hi = n > hi ? n : hi;
        }
        CHECK(zaya_model_plan(&m, 1, T) == ZAYA_OK, "plan 1");
        for (int64_t b = 0; b < B; b++) {
            CHECK(zaya_model_logits(&m, ids + b * T, NULL, one) == ZAYA_OK, "logits 1");
            const double e = th_rel_err_ff(one, all + b * T * V, T * V, 1e-6);
            /* Known defect on hosts without AVX-512 (oneDNN's gemm:jit kernels): an expert's rows there
             * depend on how many rows it has, by a few 1e-7; checked to 1e-6 there until it is fixed. */
            if (zaya_matmul_has_native_bf16())
                CHECK(!memcmp(one, all + b * T * V, sizeof(float) * (size_t)(T * V)),
                      "%s: sequence %lld alone differs from its logits in a batch of %lld (rel %.3e; experts of %lld..%lld "
                      "rows in the batch)", dt ? "bf16" : "f32", (long long)b, (long long)B, e, (long long)lo,
                      (long long)hi);
            else
                CHECK(e <= 1e-6, "%s: sequence %lld alone vs in a batch of %lld: rel %.3e (AVX2 host: bound 1e-6)",
                      dt ? "bf16" : "f32", (long long)b, (long long)B, e);
        }
        free(all), free(one);
        zaya_model_free(&m);
    }
}

/* The phase profile: attached, a forward and backward charge every phase that has work, the phases
 * add up to the passes' wall time, and the projection FLOPs are exactly the model's; detached, the
 * record stays as it was. */
static void test_profile(void) {
    zaya_config c;
    tiny_config(&c);
    zaya_model m;
    CHECK(zaya_model_init(&m, &c, ZAYA_DTYPE_F32) == ZAYA_OK, "init");
    zaya_model_init_weights(&m, 3);
    const int64_t B = 2, T = 16, N = B * T, V = c.vocab_size;
    CHECK(zaya_model_plan(&m, B, T) == ZAYA_OK, "plan");
    int32_t ids[32], tg[32];
    for (int64_t i = 0; i < N; i++) ids[i] = (int32_t)(i % V), tg[i] = (int32_t)((i * 5 + 1) % V);
    zaya_model_profile p;
    memset(&p, 0, sizeof p);
    zaya_model_profile_attach(&m, &p);
    const double t0 = zaya_now_s();
    CHECK(zaya_model_forward(&m, ids, tg, 1, NULL) == ZAYA_OK, "forward");
    const double t1 = zaya_now_s();
    zaya_model_backward(&m);
    const double t2 = zaya_now_s();
    zaya_model_profile_attach(&m, NULL);
    double sum[2] = {0, 0};
    for (int ph = 0; ph < ZAYA_PROF_NPHASES; ph++) {
        sum[0] += p.s[0][ph], sum[1] += p.s[1][ph];
        CHECK(p.s[0][ph] > 0, "forward phase %s not charged", zaya_prof_phase_name((zaya_prof_phase)ph));
        if (ph != ZAYA_PROF_HEAD) /* the head's backward runs in the backward-ready forward */
            CHECK(p.s[1][ph] > 0, "backward phase %s not charged", zaya_prof_phase_name((zaya_prof_phase)ph));
        CHECK(p.gemm_s[0][ph] <= p.s[0][ph] && p.gemm_s[1][ph] <= p.s[1][ph], "phase %s: matmul time above its wall",
              zaya_prof_phase_name((zaya_prof_phase)ph));
    }
    CHECK(sum[0] <= t1 - t0 && sum[0] > 0.9 * (t1 - t0) - 1e-4, "forward phases %.6f s of a %.6f s pass", sum[0], t1 - t0);
    CHECK(sum[1] <= t2 - t1 && sum[1] > 0.9 * (t2 - t1) - 1e-4, "backward phases %.6f s of a %.6f s pass", sum[1], t2 - t1);
    const double D = (double)c.hidden_size, qd = (double)zaya_config_q_dim(&c), kvd = (double)zaya_config_kv_dim(&c);
    const double proj = 2.0 * (double)N * (D * (qd + kvd) + D * kvd + qd * D) * (double)c.num_hidden_layers;
    CHECK(p.flop[0][ZAYA_PROF_ATTN_PROJ] == proj, "forward projection FLOPs %.0f, want %.0f", p.flop[0][ZAYA_PROF_ATTN_PROJ], proj);
    CHECK(p.flop[1][ZAYA_PROF_ATTN_PROJ] == 2 * proj, "backward projection FLOPs %.0f, want %.0f",
          p.flop[1][ZAYA_PROF_ATTN_PROJ], 2 * proj);
    /* head: logits, their input gradient and the tied weight's gradient */
    CHECK(p.flop[0][ZAYA_PROF_HEAD] == 3 * 2.0 * (double)N * D * (double)V, "head FLOPs %.0f", p.flop[0][ZAYA_PROF_HEAD]);
    const zaya_model_profile before = p;
    CHECK(zaya_model_forward(&m, ids, tg, 0, NULL) == ZAYA_OK, "forward detached");
    CHECK(!memcmp(&before, &p, sizeof p), "a detached profile changed");
    CHECK(!strcmp(zaya_prof_phase_name(ZAYA_PROF_EXPERTS), "experts") && !strcmp(zaya_prof_phase_name(ZAYA_PROF_NPHASES), "?"),
          "phase names");
    zaya_model_free(&m);
}

int main(void) {
    zaya_threads_init(2);
    test_counts();
    test_config_errors();
    test_finite_differences(ZAYA_SKIP_IDENTITY, ZAYA_ATTENTION_CCA);
    test_finite_differences(ZAYA_SKIP_ZERO, ZAYA_ATTENTION_CCA);
    test_finite_differences(ZAYA_SKIP_IDENTITY, ZAYA_ATTENTION_GQA);
    test_finite_differences(ZAYA_SKIP_ZERO, ZAYA_ATTENTION_MHA);
    test_variant_config_errors();
    test_variant_layouts();
    test_variant_counts();
    test_variant_finite_differences();
    test_variant_routing_and_threads();
    test_causality_and_dtypes(ZAYA_ATTENTION_CCA);
    test_causality_and_dtypes(ZAYA_ATTENTION_GQA);
    test_batch_invariance();
    test_profile();
    return th_finish("test_model");
}

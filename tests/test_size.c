/* zaya size: exact parameter counts against the published configs (independent shape arithmetic and
 * the published totals), classic MoE calculator bugs, FLOPs / KV / memory formulas, sizing rules, GEMM
 * and collective models, predictor sanity, the search at ZAYA1's budget, and bad inputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/config.h"
#include "zaya/json.h"
#include "zaya/model.h"
#include "zaya/optim.h"
#include "zaya/size.h"

static const char *data_dir(void) {
    const char *d = getenv("ZAYA_TEST_DATA");
    return d ? d : "tests";
}

static void load(const char *name, zaya_size_arch *a) {
    char path[1024];
    snprintf(path, sizeof path, "%s/fixtures/size/%s", data_dir(), name);
    zaya_status s = zaya_size_arch_load(path, a);
    if (s != ZAYA_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, zaya_error_message());
        exit(1);
    }
}

static cJSON *load_json(const char *name) {
    char path[1024];
    snprintf(path, sizeof path, "%s/fixtures/size/%s", data_dir(), name);
    cJSON *root = NULL;
    if (zaya_json_load_file(path, &root) != ZAYA_OK) exit(1);
    return root;
}

static const zaya_size_param_row *row(const zaya_size_params *p, const char *name) {
    for (int i = 0; i < p->nrows; i++)
        if (!strcmp(p->rows[i].name, name)) return &p->rows[i];
    return NULL;
}

static int64_t row_each(const zaya_size_params *p, const char *name) {
    const zaya_size_param_row *r = row(p, name);
    return r ? r->each : -1;
}

/* |computed/published - 1| <= 0.5 %. */
static void check_pub(const char *what, double computed, double published) {
    double rel = fabs(computed / published - 1);
    CHECK(rel <= 0.005, "%s: computed %.0f vs published %.3g (%.2f%%)", what, computed, published, 100 * rel);
}

/* Figures published with two significant digits (1.3B): the computed count must print as that figure
 * when rounded or truncated to the published digit. */
static void check_pub_digits(const char *what, double computed, double published, double unit) {
    double r = round(computed / unit) * unit, t = floor(computed / unit) * unit;
    CHECK(fabs(r - published) < unit / 2 || fabs(t - published) < unit / 2, "%s: computed %.0f does not print as %.3g",
          what, computed, published);
}

static void test_zaya1(void) {
    const char *files[] = {"zaya1-8b.json", "zaya1-8b-hf.json"};
    for (int f = 0; f < 2; f++) {
        zaya_size_arch a;
        load(files[f], &a);
        zaya_size_params p;
        zaya_size_count_params(&a, &p);
        CHECK(a.layers == 40 && a.heads == 8 && a.kv_heads == 2 && a.expert_ffn == 2048 && a.top_k == 1 &&
                  a.router_hidden == 256 && a.router_classes == 17 && a.attn == ZAYA_SIZE_ATTN_CCA,
              "%s: parsed shape", files[f]);
        CHECK(p.non_embedding == 8303355728LL, "%s: non-embedding %lld", files[f], (long long)p.non_embedding);
        CHECK(p.active_non_embedding == 753608528LL, "%s: active %lld", files[f], (long long)p.active_non_embedding);
        CHECK(p.total == 8840488784LL, "%s: total %lld", files[f], (long long)p.total);
        CHECK(p.embedding == 262272LL * 2048, "%s: embedding", files[f]);
        /* per-block breakdown of the reference (section 5.2) */
        int64_t attn = row_each(&p, "attn.q_proj") + row_each(&p, "attn.k_proj") + row_each(&p, "attn.v_proj_current") +
                       row_each(&p, "attn.v_proj_delayed") + row_each(&p, "attn.conv_depthwise.weight") +
                       row_each(&p, "attn.conv_depthwise.bias") + row_each(&p, "attn.conv_grouped.weight") +
                       row_each(&p, "attn.conv_grouped.bias") + row_each(&p, "attn.temp") + row_each(&p, "attn.o_proj");
        CHECK(attn == 5575682, "%s: attention per block %lld", files[f], (long long)attn);
        CHECK(row_each(&p, "attn.q_proj") == 2097152 && row_each(&p, "attn.k_proj") == 524288 &&
                  row_each(&p, "attn.v_proj_current") == 262144 && row_each(&p, "attn.v_proj_delayed") == 262144 &&
                  row_each(&p, "attn.conv_depthwise.weight") == 2560 && row_each(&p, "attn.conv_depthwise.bias") == 1280 &&
                  row_each(&p, "attn.conv_grouped.weight") == 327680 && row_each(&p, "attn.conv_grouped.bias") == 1280 &&
                  row_each(&p, "attn.temp") == 2 && row_each(&p, "attn.o_proj") == 2097152,
              "%s: attention components", files[f]);
        int64_t router = row_each(&p, "router.down_proj") + row_each(&p, "router.down_proj.bias") +
                         row_each(&p, "router.norm") + row_each(&p, "router.fc1") + row_each(&p, "router.fc1.bias") +
                         row_each(&p, "router.fc2") + row_each(&p, "router.fc2.bias") + row_each(&p, "router.out_proj") +
                         row_each(&p, "router.eda_scale");
        CHECK(router == 660992, "%s: router per block (with EDA) %lld", files[f], (long long)router);
        CHECK(row(&p, "router.eda_scale")->instances == 39, "EDA on blocks >= 1 only");
        CHECK(row_each(&p, "experts.gate_up") + row_each(&p, "experts.down") == 12582912, "one expert");
        CHECK(row(&p, "experts.gate_up")->instances == 640 && row(&p, "experts.gate_up")->active == 40 * 8388608LL,
              "16 experts x 40 layers, 1 active");
        CHECK(row_each(&p, "input_layernorm") + row_each(&p, "post_attention_layernorm") == 4096, "norms per block");
        CHECK(row_each(&p, "post_attention_residual_scale") + row_each(&p, "post_mlp_residual_scale") == 16384,
              "residual scales per block");
        CHECK(zaya_size_kv_bytes_per_token(&a, 2) == 40960.0, "KV 40 KiB/token");
        CHECK(zaya_size_kv_state_bytes(&a, 2) == 40.0 * (1280 * 2 + 128) * 2, "conv + delayed-value state");
        /* training FLOPs at 4K: 6 x matmul weights (incl. tied head) + 3 x causal latent attention */
        int64_t mm_block = 2097152 + 524288 + 2 * 262144 + 2560 + 327680 + 2097152 + (524288 + 2 * 65536 + 17 * 256) +
                           12582912;
        double mm = 40.0 * mm_block + 262272.0 * 2048;
        double attn_f = 40.0 * 4 * 1024 * (4096 + 1) / 2.0;
        zaya_size_flops fl;
        zaya_size_count_flops(&a, 4096, &fl);
        CHECK(fabs(fl.train - 3 * (2 * mm + attn_f)) < 1, "training FLOPs %.0f vs %.0f", fl.train, 3 * (2 * mm + attn_f));
        CHECK(fabs(fl.train / 1e9 - 8.75) < 0.01, "8.75 GFLOP/token (reference derivation): %.4f", fl.train / 1e9);
    }
}

static void test_published(void) {
    zaya_size_arch a;
    zaya_size_params p;
    /* Llama-3-8B: 8.03B */
    load("llama-3-8b.json", &a);
    zaya_size_count_params(&a, &p);
    int64_t D = 4096, V = 128256, L = 32;
    int64_t layer = D * D * 2 + 2 * D * 1024 + 3 * D * 14336 + 2 * D;
    CHECK(p.total == 2 * V * D + L * layer + D, "llama exact %lld", (long long)p.total);
    check_pub("llama-3-8b total", (double)p.total, 8.03e9);
    CHECK(p.active == p.total && a.attn == ZAYA_SIZE_ATTN_GQA, "llama dense GQA");
    CHECK(zaya_size_kv_bytes_per_token(&a, 2) == 32.0 * 2 * 8 * 128 * 2, "llama KV");

    /* Mixtral-8x7B: 46.7B / 12.9B */
    load("mixtral-8x7b.json", &a);
    zaya_size_count_params(&a, &p);
    V = 32000;
    int64_t attn = 2 * D * D + 2 * D * 1024, expert = 3 * D * 14336;
    CHECK(p.total == 2 * V * D + L * (attn + 8 * expert + 8 * D + 2 * D) + D, "mixtral exact");
    CHECK(p.active == 2 * V * D + L * (attn + 2 * expert + 8 * D + 2 * D) + D, "mixtral active exact");
    check_pub("mixtral total", (double)p.total, 46.7e9);
    check_pub("mixtral active", (double)p.active, 12.9e9);

    /* OLMoE-1B-7B: 6.9B / 1.3B; q/k norms over the full width */
    load("olmoe-1b-7b.json", &a);
    zaya_size_count_params(&a, &p);
    D = 2048;
    V = 50304;
    L = 16;
    attn = 4 * D * D + 2 * D;
    expert = 3 * D * 1024;
    CHECK(p.total == 2 * V * D + L * (attn + 64 * expert + 64 * D + 2 * D) + D, "olmoe exact %lld", (long long)p.total);
    CHECK(p.active == 2 * V * D + L * (attn + 8 * expert + 64 * D + 2 * D) + D, "olmoe active exact");
    check_pub("olmoe total", (double)p.total, 6.9e9);
    check_pub_digits("olmoe active", (double)p.active, 1.3e9, 0.1e9);
    CHECK(row_each(&p, "attn.q_norm") == 2048 && row_each(&p, "attn.k_norm") == 2048, "olmoe full-width qk-norm");

    /* Qwen3-30B-A3B: 30.5B / 3.3B; head_dim 128 != 2048/32, per-head qk-norm */
    load("qwen3-30b-a3b.json", &a);
    zaya_size_count_params(&a, &p);
    V = 151936;
    L = 48;
    attn = D * 4096 * 2 + 2 * D * 512 + 2 * 128;
    expert = 3 * D * 768;
    CHECK(p.total == 2 * V * D + L * (attn + 128 * expert + 128 * D + 2 * D) + D, "qwen3-moe exact %lld", (long long)p.total);
    CHECK(p.active == 2 * V * D + L * (attn + 8 * expert + 128 * D + 2 * D) + D, "qwen3-moe active exact");
    check_pub("qwen3-30b-a3b total", (double)p.total, 30.5e9);
    check_pub_digits("qwen3-30b-a3b active", (double)p.active, 3.3e9, 0.1e9);
    CHECK(a.head_dim == 128 && row_each(&p, "attn.q_proj") == 4096 * 2048, "qwen3 head_dim != hidden/heads");
    CHECK(row_each(&p, "attn.q_norm") == 128 && row_each(&p, "attn.k_norm") == 128, "qwen3 per-head qk-norm");
    CHECK(row(&p, "mlp.gate_up") == NULL, "no dense MLP in an all-MoE qwen3_moe");

    /* Qwen3-0.6B (dense, tied): 0.44B non-embedding */
    load("qwen3-0.6b.json", &a);
    zaya_size_count_params(&a, &p);
    CHECK(p.non_embedding == 28 * (1024 * 2048 * 2 + 2 * 1024 * 1024 + 256 + 3 * 1024 * 3072 + 2 * 1024) + 1024,
          "qwen3-0.6b exact");
    check_pub_digits("qwen3-0.6b non-embedding", (double)p.non_embedding, 0.44e9, 0.01e9);
    check_pub_digits("qwen3-0.6b total", (double)p.total, 0.6e9, 0.1e9);

    /* Qwen2.5-0.5B: q/k/v biases, tied: 0.49B / 0.36B non-embedding */
    load("qwen2.5-0.5b.json", &a);
    zaya_size_count_params(&a, &p);
    CHECK(p.non_embedding == 24 * (896 * 896 + 896 + 2 * (896 * 128 + 128) + 896 * 896 + 3 * 896 * 4864 + 2 * 896) + 896,
          "qwen2 exact %lld", (long long)p.non_embedding);
    check_pub_digits("qwen2.5-0.5b total", (double)p.total, 0.49e9, 0.01e9);
    check_pub_digits("qwen2.5-0.5b non-embedding", (double)p.non_embedding, 0.36e9, 0.01e9);

    /* Qwen1.5-MoE-A2.7B: shared expert + its sigmoid gate, 14.3B / 2.7B */
    load("qwen1.5-moe-a2.7b.json", &a);
    zaya_size_count_params(&a, &p);
    V = 151936;
    L = 24;
    attn = 4 * D * D + 3 * D;
    expert = 3 * D * 1408;
    int64_t shared = 3 * D * 5632 + D;
    CHECK(p.total == 2 * V * D + L * (attn + 60 * expert + shared + 60 * D + 2 * D) + D, "qwen2-moe exact");
    CHECK(p.active == 2 * V * D + L * (attn + 4 * expert + shared + 60 * D + 2 * D) + D, "qwen2-moe active exact");
    check_pub_digits("qwen1.5-moe total", (double)p.total, 14.3e9, 0.1e9);
    check_pub_digits("qwen1.5-moe active", (double)p.active, 2.7e9, 0.1e9);
}

/* Families added with MLA, shared experts, dense-first layers, MTP, sinks, local attention and nested
 * text configs; every fixture names its source (model card / config.json) in its "_source" key. */
static void test_families(void) {
    zaya_size_arch a;
    zaya_size_params p;
    /* DeepSeek-V2-Lite (huggingface.co/deepseek-ai/DeepSeek-V2-Lite): 15.7B total, 2.4B activated; no q LoRA */
    load("deepseek-v2-lite.json", &a);
    zaya_size_count_params(&a, &p);
    CHECK(a.attn == ZAYA_SIZE_ATTN_MLA && a.n_moe_layers == 26 && a.shared_experts == 2 && row(&p, "attn.q_a_proj") == NULL,
          "v2-lite shape");
    {
        int64_t D = 2048, H = 16, att = H * 192 * D + 576 * D + 512 + H * 256 * 512 + D * H * 128;
        int64_t exact = 2 * 102400 * D + D + 27 * (att + 2 * D) + 3 * D * 10944 + 26 * (66 * 3 * D * 1408 + 64 * D);
        CHECK(p.total == exact, "v2-lite exact %lld vs %lld", (long long)p.total, (long long)exact);
    }
    check_pub_digits("deepseek-v2-lite total", (double)p.total, 15.7e9, 0.1e9);
    check_pub_digits("deepseek-v2-lite active", (double)p.active_compute, 2.4e9, 0.1e9);
    CHECK(zaya_size_kv_bytes_per_token(&a, 2) == 27.0 * (512 + 64) * 2, "MLA caches the latent + rope key: %.0f",
          zaya_size_kv_bytes_per_token(&a, 2));
    /* DeepSeek-V2 (deepseek-ai/DeepSeek-V2): 236B / 21B */
    load("deepseek-v2.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub("deepseek-v2 total", (double)p.total, 236e9);
    check_pub_digits("deepseek-v2 active", (double)p.active_compute, 21e9, 1e9);
    CHECK(row_each(&p, "attn.q_a_proj") == 1536 * 5120 && row_each(&p, "attn.q_b_proj") == 128 * 192 * 1536, "v2 q LoRA");
    /* DeepSeek-V3 (deepseek-ai/DeepSeek-V3): 671B main + 14B MTP = 685B, 37B activated */
    load("deepseek-v3.json", &a);
    zaya_size_count_params(&a, &p);
    CHECK(a.n_moe_layers == 58 && a.mtp_layers == 1 && a.router_bias, "v3 shape");
    check_pub("deepseek-v3 total", (double)p.total, 671e9);
    check_pub_digits("deepseek-v3 active", (double)p.active_compute, 37e9, 1e9);
    check_pub("deepseek-v3 checkpoint incl. MTP", (double)p.checkpoint, 685e9);
    CHECK(p.mtp > 11e9 && p.mtp < 12e9, "MTP module apart from the total: %lld", (long long)p.mtp);
    /* gpt-oss (openai/gpt-oss-20b, -120b model cards): 20.91B / 3.61B and 116.83B / 5.13B */
    load("gpt-oss-20b.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("gpt-oss-20b total", (double)p.total, 20.91e9, 0.01e9);
    check_pub_digits("gpt-oss-20b active", (double)p.active_compute, 3.61e9, 0.01e9);
    CHECK(row_each(&p, "attn.sinks") == 64 && row_each(&p, "experts.gate_up.bias") == 2 * 2880 &&
              row_each(&p, "router.gate.bias") == 32 && row_each(&p, "attn.o_bias") == 2880, "sinks and biases");
    CHECK(a.n_window_layers == 12 && a.window == 128, "alternating sliding layers");
    /* local layers cap their cache at the window */
    double kv1 = zaya_size_kv_bytes(&a, 100, 2), kvT = zaya_size_kv_bytes(&a, 100000, 2);
    CHECK(kv1 == 24.0 * 2 * 8 * 64 * 2 * 100, "below the window every layer holds T");
    CHECK(kvT == 2.0 * 8 * 64 * 2 * (12.0 * 100000 + 12.0 * 128), "above it: %.0f", kvT);
    load("gpt-oss-120b.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("gpt-oss-120b total", (double)p.total, 116.83e9, 0.01e9);
    check_pub_digits("gpt-oss-120b active", (double)p.active_compute, 5.13e9, 0.01e9);
    /* Mistral-7B-v0.1: 7.24B, sliding window 4096 on every layer */
    load("mistral-7b-v0.1.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("mistral-7b total", (double)p.total, 7.24e9, 0.01e9);
    CHECK(a.n_window_layers == 32 && zaya_size_kv_bytes(&a, 32768, 2) == zaya_size_kv_bytes(&a, 4096, 2), "mistral KV capped");
    /* Gemma-2-9B: 9.24B; Gemma-3 technical report table 1: 1B 698M non-embedding, 4B 3,209M + 675M */
    load("gemma-2-9b.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("gemma-2-9b total", (double)p.total, 9.24e9, 0.01e9);
    CHECK(a.tied_embeddings && a.n_window_layers == 21 && row_each(&p, "pre/post_feedforward_layernorm") == 2 * 3584, "gemma2 pattern");
    load("gemma-3-1b.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("gemma-3-1b non-embedding", (double)p.non_embedding, 698e6, 1e6);
    CHECK(a.n_window_layers == 26 - 4 && a.qk_norm == ZAYA_SIZE_QK_NORM_HEAD, "gemma3 5:1 local/global");
    load("gemma-3-4b.json", &a);
    zaya_size_count_params(&a, &p);
    CHECK(a.text_only && !strcmp(a.family, "gemma3_text") && a.heads == 8 && a.kv_heads == 4, "text_config with class defaults");
    check_pub_digits("gemma-3-4b non-embedding", (double)p.non_embedding, 3209e6, 1e6);
    CHECK(p.embedding == 262208LL * 2560 && p.active_compute == p.total, "gemma-3-4b tied table (the report prints 675M)");
    /* Phi-3.5-MoE: 41.9B / 6.6B (LayerNorm with bias, all attention biases, head bias) */
    load("phi-3.5-moe.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("phi-3.5-moe total", (double)p.total, 41.9e9, 0.1e9);
    check_pub_digits("phi-3.5-moe active", (double)p.active, 6.6e9, 0.1e9);
    CHECK(row_each(&p, "lm_head.bias") == 32064 && row_each(&p, "input_layernorm (+bias)") == 2 * 4096, "phimoe biases");
    /* DBRX: 132B / 36B (nested attn_config / ffn_config) */
    load("dbrx.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub("dbrx total", (double)p.total, 132e9);
    check_pub_digits("dbrx active", (double)p.active, 36e9, 1e9);
    /* Granite-3.0-3B-A800M: 3.3B / 800M */
    load("granite-3.0-3b-a800m.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("granite total", (double)p.total, 3.3e9, 0.1e9);
    check_pub_digits("granite active", (double)p.active_non_embedding, 800e6, 100e6);
    /* GLM-4.5-Air: 106B / 12B (first layer dense, shared expert, MTP apart) */
    load("glm-4.5-air.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("glm-4.5-air total", (double)p.total, 106e9, 1e9);
    check_pub_digits("glm-4.5-air active", (double)p.active_compute, 12e9, 1e9);
    CHECK(a.n_moe_layers == 45 && a.mtp_layers == 1, "glm layout");
    /* Llama-4-Scout: 17B active (the 109B total includes the vision encoder, not counted here) */
    load("llama-4-scout.json", &a);
    zaya_size_count_params(&a, &p);
    check_pub_digits("llama-4-scout active", (double)p.active, 17e9, 1e9);
    CHECK(a.text_only && a.n_moe_layers == 48 && a.shared_experts == 1 && a.n_window_layers == 36, "llama4 layout");
}

/* Memory as a constraint: per-device need, the largest term and the smallest change that fits. */
static void test_fit(void) {
    zaya_size_arch a;
    load("mixtral-8x7b.json", &a);
    zaya_size_mem_opts o;
    zaya_size_mem_opts_default(&o);
    o.dp = 8;
    o.zero_stage = 1;
    CHECK(zaya_size_mem_bytes_per_param(&o) == 18, "default 18 B/param");
    zaya_size_fit f;
    zaya_size_train_fit(&a, &o, 80e9, &f);
    CHECK(!f.fits && f.need / 1073741824.0 > 350 && f.need / 1073741824.0 < 360, "mixtral DP 8 ZeRO-1 ~356 GiB: %.1f",
          f.need / 1073741824.0);
    CHECK(!strcmp(f.largest, "gradients") && strstr(f.advice, "ZeRO-3 at DP >= "), "largest %s, advice %s", f.largest, f.advice);
    /* the advice is itself a layout that fits, and one fewer rank does not */
    int dp = 0;
    sscanf(strstr(f.advice, "DP >= ") + 6, "%d", &dp);
    zaya_size_mem_opts t = o;
    t.zero_stage = 3;
    t.dp = dp;
    zaya_size_fit g;
    zaya_size_train_fit(&a, &t, 80e9, &g);
    CHECK(g.fits, "advised DP %d fits", dp);
    /* ZeRO paper convention: bf16 gradients -> 16 B/param */
    o.grad_bytes = 2;
    CHECK(zaya_size_mem_bytes_per_param(&o) == 16, "16 B/param");
    zaya_size_mem m;
    o.dp = 1;
    o.zero_stage = 0;
    zaya_size_train_memory(&a, &o, &m);
    zaya_size_params p;
    zaya_size_count_params(&a, &p);
    CHECK(m.weights + m.master + m.grads + m.optimizer == 16.0 * (double)p.total, "16 B x params");
    /* a higher stage is the first advice when it suffices */
    load("llama-3-8b.json", &a);
    zaya_size_mem_opts_default(&o);
    o.dp = 8;
    o.zero_stage = 0;
    o.recompute = 1;
    zaya_size_train_fit(&a, &o, 80e9, &f);
    CHECK(!f.fits && strstr(f.advice, "fits with ZeRO-1"), "llama-8b DP8 ZeRO-0: %s", f.advice);
    /* inference: weights alone over the device */
    load("deepseek-v3.json", &a);
    zaya_size_infer_fit(&a, 1, 4096, 2, 80e9, &f);
    CHECK(!f.fits && !strcmp(f.largest, "weights") && strstr(f.advice, "the weights alone"), "v3 on one GPU: %s", f.advice);
    load("llama-3-8b.json", &a);
    zaya_size_infer_fit(&a, 64, 8192, 2, 80e9, &f);
    CHECK(!f.fits && strstr(f.advice, "fits at batch <= "), "KV-bound: %s", f.advice);
    int64_t bmax = 0;
    sscanf(strstr(f.advice, "<= ") + 3, "%lld", (long long *)&bmax);
    zaya_size_infer_fit(&a, bmax, 8192, 2, 80e9, &f);
    CHECK(f.fits && bmax > 1, "batch %lld fits", (long long)bmax);
    zaya_size_infer_fit(&a, bmax + 1, 8192, 2, 80e9, &f);
    CHECK(!f.fits, "batch %lld does not", (long long)(bmax + 1));
}

/* The classic MoE calculator bugs, each provoked on purpose. */
/* Inference weight formats: per-tensor bytes by hand, the tensors each rule quantizes, gpt-oss's
 * published MXFP4 checkpoints (model card: 60.8 GiB and 12.8 GiB) and the one-80-GB-device fit. */
static void test_quantized(void) {
    zaya_size_arch a;
    load("gpt-oss-120b.json", &a);
    zaya_size_params p;
    zaya_size_count_params(&a, &p);
    zaya_size_weights w[6];
    static const char *const names[6] = {NULL, "bf16", "fp8", "int8", "int4", "mxfp4"};
    for (int i = 0; i < 6; i++)
        CHECK(zaya_size_weights_parse(names[i], NULL, &w[i]) == ZAYA_OK && (int)w[i].format == i, "parse %s", names[i] ? names[i] : "NULL");
    zaya_size_weights bad;
    CHECK(zaya_size_weights_parse("nf4", NULL, &bad) != ZAYA_OK && strstr(zaya_error_message(), "'nf4'"), "nf4 refused");
    CHECK(zaya_size_weights_parse("int4", "embeddings", &bad) != ZAYA_OK, "scope refused");
    /* one [out 256, in 300] matrix by hand */
    zaya_size_param_row r = {.name = "attn.q_proj", .each = 256 * 300, .instances = 1, .matrix = 1, .matmul = 1,
                             .rows_ = 256, .cols_ = 300};
    CHECK(zaya_size_weights_row_bytes(&w[1], &a, &r, 2) == 153600, "bf16");
    CHECK(zaya_size_weights_row_bytes(&w[2], &a, &r, 2) == 76800 + 4, "fp8: 1 byte + one fp32 scale");
    CHECK(zaya_size_weights_row_bytes(&w[3], &a, &r, 2) == 76800 + 2 * 256, "int8: + bf16 per output channel");
    zaya_size_weights lin;
    zaya_size_weights_parse("int4", "linear", &lin);
    CHECK(zaya_size_weights_row_bytes(&lin, &a, &r, 2) == 38400 + 256 * 3 * 2, "int4: 3 groups of <= 128 per row");
    zaya_size_weights_parse("mxfp4", "linear", &lin);
    CHECK(zaya_size_weights_row_bytes(&lin, &a, &r, 2) == 38400 + 256 * 10, "mxfp4: 10 blocks of <= 32 per row");
    /* auto mxfp4 on an MoE: experts only (attention stays bf16), as gpt-oss publishes it */
    CHECK(zaya_size_weights_scope(&w[5], &a) == ZAYA_SIZE_WQ_EXPERTS && zaya_size_weights_row_bytes(&w[5], &a, &r, 2) == 153600,
          "mxfp4 auto keeps attention bf16");
    CHECK(zaya_size_weights_quantizes(&w[5], &a, row(&p, "experts.gate_up")) &&
              !zaya_size_weights_quantizes(&w[5], &a, row(&p, "experts.gate_up.bias")) &&
              !zaya_size_weights_quantizes(&w[4], &a, row(&p, "router.gate")) &&
              !zaya_size_weights_quantizes(&w[4], &a, row(&p, "embed_tokens")) &&
              !zaya_size_weights_quantizes(&w[4], &a, row(&p, "lm_head")) &&
              zaya_size_weights_quantizes(&w[4], &a, row(&p, "attn.o_proj")),
          "which tensors are quantized");
    zaya_size_weight_bytes wb;
    zaya_size_weights_bytes(&a, &w[5], 2, &wb);
    const double gibf = 1024.0 * 1024 * 1024;
    CHECK(fabs(wb.total / gibf - 60.8) < 0.1, "gpt-oss-120b mxfp4 checkpoint %.2f GiB, published 60.8", wb.total / gibf);
    CHECK(fabs(wb.bits_per_quantized - 4.25) < 1e-9 && wb.quantized_params + wb.kept_params == (double)p.total,
          "4.25 bits on %.4gB expert params", wb.quantized_params / 1e9);
    zaya_size_weights_bytes(&a, &w[0], 2, &wb);
    CHECK(wb.total == 2.0 * (double)p.total, "default = 2 bytes per parameter");
    zaya_size_hw hw;
    CHECK(zaya_size_hw_get("h100", NULL, &hw) == ZAYA_OK, "h100");
    zaya_size_fit f;
    zaya_size_infer_fit_weights(&a, 1, 4096, 2, &w[5], hw.mem_bytes, &f);
    CHECK(f.fits && f.need < 80e9, "gpt-oss-120b in MXFP4 fits one 80 GB device: %.1f GB", f.need / 1e9);
    zaya_size_infer_fit_weights(&a, 1, 4096, 2, &w[1], hw.mem_bytes, &f);
    CHECK(!f.fits, "in bf16 it does not");
    /* decode reads the dense tensors and the touched experts in their stored bytes */
    zaya_size_infer_pred pb, pq;
    zaya_size_predict_infer_weights(&a, &hw, 1, 4096, &w[1], &pb);
    zaya_size_predict_infer_weights(&a, &hw, 1, 4096, &w[5], &pq);
    const zaya_size_param_row *gu = row(&p, "experts.gate_up"), *dn = row(&p, "experts.down");
    const double per_expert_bf16 = 2.0 * (double)(gu->each + dn->each);
    const double per_expert_mx = zaya_size_weights_row_bytes(&w[5], &a, gu, 2) + zaya_size_weights_row_bytes(&w[5], &a, dn, 2);
    const double touched = (double)a.top_k * (double)a.n_moe_layers; /* batch 1: top_k experts per MoE layer */
    CHECK(fabs((pb.decode_weight_bytes - pq.decode_weight_bytes) - touched * (per_expert_bf16 - per_expert_mx)) <
              1e-6 * pb.decode_weight_bytes,
          "decode bytes differ by the touched experts' saving: %.6g vs %.6g", pb.decode_weight_bytes - pq.decode_weight_bytes,
          touched * (per_expert_bf16 - per_expert_mx));
    CHECK(pq.decode_s < pb.decode_s && pq.decode_kv_bytes == pb.decode_kv_bytes, "faster decode, same KV");
    zaya_size_hw_free(&hw);
    load("gpt-oss-20b.json", &a);
    zaya_size_weights_bytes(&a, &w[5], 2, &wb);
    CHECK(fabs(wb.total / gibf - 12.8) < 0.1, "gpt-oss-20b mxfp4 checkpoint %.2f GiB, published 12.8", wb.total / gibf);
    /* a dense model: auto mxfp4 quantizes the linear weights */
    load("llama-3-8b.json", &a);
    zaya_size_count_params(&a, &p);
    CHECK(zaya_size_weights_scope(&w[5], &a) == ZAYA_SIZE_WQ_LINEAR &&
              zaya_size_weights_quantizes(&w[5], &a, row(&p, "mlp.down")), "dense mxfp4: linear");
    zaya_size_weights_bytes(&a, &w[4], 2, &wb);
    const double emb = 2.0 * 2 * (double)a.vocab * (double)a.hidden; /* untied: table + head, bf16 */
    CHECK(wb.kept_bytes > emb && wb.kept_bytes < emb * 1.01, "int4 llama keeps embeddings + norms: %.4g vs %.4g",
          wb.kept_bytes, emb);
}

static void test_moe_bugs(void) {
    cJSON *cfg = load_json("qwen3-30b-a3b.json");
    zaya_size_arch a, b;
    zaya_size_params p, q;
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_OK, "parse");
    zaya_size_count_params(&a, &p);
    /* expert width vs dense width: intermediate_size (6144) must not enter an all-MoE model */
    CHECK(row_each(&p, "experts.gate_up") == 2 * 768 * 2048, "expert width is moe_intermediate_size");
    /* one dense layer via mlp_only_layers: exactly one layer swaps its experts + router for a 6144 MLP */
    cJSON_ReplaceItemInObject(cfg, "mlp_only_layers", cJSON_CreateIntArray((const int[]){0}, 1));
    CHECK(zaya_size_arch_from_config(cfg, &b) == ZAYA_OK && b.n_moe_layers == 47, "mlp_only_layers");
    zaya_size_count_params(&b, &q);
    CHECK(p.total - q.total == 128LL * 3 * 2048 * 768 + 128 * 2048 - 3LL * 2048 * 6144, "dense layer delta %lld",
          (long long)(p.total - q.total));
    cJSON_Delete(cfg);

    /* top-k: active grows by exactly one expert per MoE layer per extra k; total does not move */
    cfg = load_json("mixtral-8x7b.json");
    cJSON_ReplaceItemInObject(cfg, "num_experts_per_tok", cJSON_CreateNumber(1));
    CHECK(zaya_size_arch_from_config(cfg, &b) == ZAYA_OK, "parse top-1");
    load("mixtral-8x7b.json", &a);
    zaya_size_count_params(&a, &p);
    zaya_size_count_params(&b, &q);
    CHECK(p.total == q.total && p.active - q.active == 32LL * 3 * 4096 * 14336, "top-k delta");
    /* FLOPs follow active, not total */
    zaya_size_flops fa, fb;
    zaya_size_count_flops(&a, 1, &fa);
    zaya_size_count_flops(&b, 1, &fb);
    CHECK(fabs((fa.linear_fwd - fb.linear_fwd) - 2.0 * 32 * 3 * 4096 * 14336) < 1, "top-k FLOPs");
    cJSON_Delete(cfg);

    /* shared experts are always active, routed ones only top-k */
    load("qwen1.5-moe-a2.7b.json", &a);
    zaya_size_count_params(&a, &p);
    const zaya_size_param_row *sh = row(&p, "shared_expert.gate_up");
    CHECK(sh && sh->active == sh->total && sh->each == 2 * 5632 * 2048, "shared expert fully active");
    const zaya_size_param_row *ex = row(&p, "experts.gate_up");
    CHECK(ex && ex->active * 15 == ex->total, "routed: 4 of 60 active");
}

static void test_memory(void) {
    zaya_size_arch a;
    load("llama-3-8b.json", &a);
    zaya_size_params p;
    zaya_size_count_params(&a, &p);
    double P = (double)p.total;
    zaya_size_mem_opts o;
    zaya_size_mem_opts_default(&o);
    zaya_size_mem m;
    o.zero_stage = 0;
    o.dp = 8;
    zaya_size_train_memory(&a, &o, &m);
    CHECK(fabs(m.weights + m.master + m.grads + m.optimizer - 18 * P) < 1, "ZeRO-0 AdamW 18 B/param");
    o.zero_stage = 1;
    zaya_size_train_memory(&a, &o, &m);
    CHECK(fabs(m.weights + m.grads + (m.master + m.optimizer) * 8 - 18 * P) < 1, "ZeRO-1 shards master+states");
    o.zero_stage = 3;
    zaya_size_train_memory(&a, &o, &m);
    CHECK(fabs((m.weights + m.master + m.grads + m.optimizer) * 8 - 18 * P) < 1, "ZeRO-3 shards everything");
    o.zero_stage = 0;
    o.optimizer = ZAYA_SIZE_OPT_MUON;
    zaya_size_train_memory(&a, &o, &m);
    CHECK(fabs(m.optimizer - 4 * ((double)p.matrix_total + 2 * (P - (double)p.matrix_total))) < 1, "Muon: 1 state on matrices");
    CHECK((double)p.matrix_total == P - 2.0 * 128256 * 4096 - 65.0 * 4096, "matrices exclude embeddings and norms");
    CHECK(m.act_recompute < m.act_full, "recomputation saves activations");
}

static void test_rules(void) {
    zaya_size_hw hw;
    CHECK(zaya_size_hw_get("mi300x", NULL, &hw) == ZAYA_OK && hw.compute_units == 304 && hw.peak_bf16 == 1307.4e12 &&
              hw.mem_bw == 5.3e12 && hw.mem_bytes == 192e9,
          "mi300x spec");
    zaya_size_arch a;
    load("zaya1-8b.json", &a);
    zaya_size_run run = {4, 4096, 1};
    zaya_size_rule_hit h[256];
    int n = zaya_size_check_rules(&a, &hw, &run, h, 256);
    for (int i = 0; i < n && i < 256; i++)
        CHECK(strcmp(h[i].rule_id, "head_dim") && strcmp(h[i].rule_id, "width_tile") && strcmp(h[i].rule_id, "vocab_128"),
              "ZAYA1 obeys the structural rules: %s %s", h[i].rule_id, h[i].detail);
    /* violations with their nearest compliant values */
    zaya_size_arch b = a;
    b.head_dim = 96;
    b.vocab = 262145;
    b.hidden = 2000;
    b.kv_heads = 2;
    zaya_size_run r3 = {4, 4096, 3};
    n = zaya_size_check_rules(&b, &hw, &r3, h, 256);
    int hd = 0, voc = 0, wid = 0, tp = 0;
    for (int i = 0; i < n && i < 256; i++) {
        if (!strcmp(h[i].rule_id, "head_dim")) hd = h[i].severity == 2 && !strcmp(h[i].fix, "head_dim 64 or 128");
        if (!strcmp(h[i].rule_id, "vocab_128")) voc = !strcmp(h[i].fix, "vocab 262272 (pad 127 rows)");
        if (!strcmp(h[i].rule_id, "width_tile") && !strcmp(h[i].what, "hidden")) wid = !strcmp(h[i].fix, "hidden 1920 or 2048");
        if (!strcmp(h[i].rule_id, "kv_heads_tp")) tp = h[i].severity == 2 && !strcmp(h[i].fix, "TP in {1,2,4,8}");
    }
    CHECK(hd && voc && wid && tp, "rule hits head_dim %d vocab %d width %d tp %d", hd, voc, wid, tp);
    zaya_size_run r4 = {4, 4096, 4};
    n = zaya_size_check_rules(&a, &hw, &r4, h, 256);
    int adv = 0;
    for (int i = 0; i < n && i < 256; i++)
        if (!strcmp(h[i].rule_id, "kv_heads_tp")) adv = h[i].severity == 1;
    CHECK(adv, "TP 4 over 2 KV heads: replication advisory");
    CHECK(zaya_size_round_to(2000, 128) == 2048 && zaya_size_round_to(1900, 128) == 1920 && zaya_size_round_to(5, 128) == 128,
          "round_to");

    /* tile and wave quantization */
    zaya_size_gemm_est e;
    zaya_size_hw fast = hw; /* compute-bound everywhere; K of 3 tiles rules out split-K */
    fast.mem_bw = 1e18;
    zaya_size_gemm_estimate(&fast, 256 * 304, 128, 192, &e);
    CHECK(e.waves == 1 && fabs(e.wave_eff - 1) < 1e-12 && e.tile_eff == 1, "exactly one full wave");
    zaya_size_gemm_est e2;
    zaya_size_gemm_estimate(&fast, 256 * 305, 128, 192, &e2);
    CHECK(e2.waves == 2 && fabs(e2.wave_eff - 305.0 / 608) < 1e-12 && e2.time_s - hw.launch_s > 1.99 * (e.time_s - hw.launch_s),
          "one tile past a wave costs a wave: %lld waves, %.3f", (long long)e2.waves, e2.wave_eff);
    zaya_size_gemm_estimate(&hw, 8192, 129, 4096, &e);
    CHECK(fabs(e.tile_eff - 129.0 / 256) < 1e-12, "tile quantization 129 of 256");
    /* a weight gradient with a small output and long K uses split-K instead of idling the GPU */
    zaya_size_gemm_estimate(&hw, 256, 2048, 16384, &e);
    CHECK(e.split > 1 && e.wave_eff > 0.8, "split-K %lld, wave %.2f", (long long)e.split, e.wave_eff);
    zaya_size_hw_free(&hw);
}

static void test_predict(void) {
    zaya_size_hw hw;
    zaya_size_hw_get("mi300x", NULL, &hw);
    zaya_size_arch a;
    load("zaya1-8b.json", &a);
    zaya_size_step_opts o;
    zaya_size_step_opts_default(&o);
    double prev_step = 0, prev_tps = 0;
    for (int64_t b = 1; b <= 16; b *= 2) {
        o.batch = b;
        zaya_size_step_pred p;
        CHECK(zaya_size_predict_step(&a, &hw, &o, &p) == ZAYA_OK, "predict");
        CHECK(p.step_s > prev_step, "step time grows with batch (%lld: %.4f)", (long long)b, p.step_s);
        CHECK(p.tokens_per_s_rank >= prev_tps * 0.999, "throughput does not fall with batch");
        CHECK(p.mfu > 0.05 && p.mfu < 0.70, "MFU plausible: %.3f", p.mfu);
        prev_step = p.step_s;
        prev_tps = p.tokens_per_s_rank;
    }
    o.batch = 4;
    zaya_size_step_pred p1, p2, p8, p16, p64;
    o.dp = 1;
    zaya_size_predict_step(&a, &hw, &o, &p1);
    o.dp = 2;
    zaya_size_predict_step(&a, &hw, &o, &p2);
    o.dp = 8;
    zaya_size_predict_step(&a, &hw, &o, &p8);
    o.dp = 16;
    zaya_size_predict_step(&a, &hw, &o, &p16);
    o.dp = 64;
    zaya_size_predict_step(&a, &hw, &o, &p64);
    CHECK(p1.comm_s == 0 && p2.comm_s > 0 && p8.comm_s > p2.comm_s && p16.comm_s > 4 * p8.comm_s && p64.comm_s > p16.comm_s,
          "comm grows with DP and jumps off-node: %.4f %.4f %.4f %.4f", p2.comm_s, p8.comm_s, p16.comm_s, p64.comm_s);
    /* ring bandwidth term: reduce-scatter of fp32 grads + all-gather of bf16 weights over the NIC */
    zaya_size_params pc;
    zaya_size_count_params(&a, &pc);
    double P = (double)pc.total, want = (4 * P + 2 * P) * (63.0 / 64) / (0.8 * 50e9);
    CHECK(fabs(p64.comm_s - want) / want < 0.01, "DP 64 comm %.4f vs %.4f", p64.comm_s, want);
    o.overlap = 1;
    zaya_size_predict_step(&a, &hw, &o, &p64);
    CHECK(p64.comm_exposed_s < p64.comm_s, "overlap hides communication");

    zaya_size_infer_pred i1, i8, ilong;
    zaya_size_predict_infer(&a, &hw, 1, 4096, &i1);
    zaya_size_predict_infer(&a, &hw, 8, 4096, &i8);
    zaya_size_predict_infer(&a, &hw, 1, 65536, &ilong);
    CHECK(i8.decode_s > i1.decode_s && i8.decode_tokens_per_s > i1.decode_tokens_per_s, "batching: slower step, more tokens/s");
    CHECK(ilong.decode_kv_bytes == 16 * i1.decode_kv_bytes - 15 * zaya_size_kv_state_bytes(&a, 2) &&
              ilong.decode_s > i1.decode_s, "KV grows with context");
    /* batch 1 reads one expert per layer: all non-expert weights + 40 experts + the tied head */
    double expected = (double)(pc.active_non_embedding + 262272LL * 2048) * 2;
    CHECK(fabs(i1.decode_weight_bytes - expected) < 1, "decode weights at batch 1 %.0f vs %.0f", i1.decode_weight_bytes, expected);
    CHECK(i1.prefill_s > 0 && i8.prefill_s > i1.prefill_s, "prefill");
    zaya_size_hw_free(&hw);
}

static const char *profile_json =
    "{\"format\":\"zaya-profile\",\"version\":1,\"machine\":{\"hostname\":\"box\",\"cores\":2},"
    "\"gemm\":[{\"dtype\":\"f32\",\"m\":512,\"n\":512,\"k\":512,\"gflops\":50},"
    "{\"dtype\":\"f32\",\"m\":4096,\"n\":4096,\"k\":4096,\"gflops\":100}],"
    "\"gemm_peak_gflops\":{\"f32\":100,\"bf16\":0},"
    "\"memory\":{\"copy_GBps\":10,\"scale_GBps\":10,\"add_GBps\":12,\"triad_GBps\":12,\"read_GBps\":15,\"write_GBps\":8},"
    "\"collectives\":{\"allreduce\":[{\"ranks\":2,\"bytes\":1000000,\"time_us\":100,\"algbw_GBps\":10,\"busbw_GBps\":10},"
    "{\"ranks\":2,\"bytes\":100000000,\"time_us\":5000,\"algbw_GBps\":20,\"busbw_GBps\":20}],"
    "\"reduce_scatter\":[],\"all_gather\":[],\"broadcast\":[]}}";

static void test_profile(void) {
    cJSON *root;
    CHECK(zaya_json_parse(profile_json, "profile", &root) == ZAYA_OK, "parse");
    zaya_size_hw hw;
    CHECK(zaya_size_hw_from_profile_json(root, "p.json", &hw) == ZAYA_OK, "load: %s", zaya_error_message());
    CHECK(!hw.is_gpu && hw.compute_units == 2 && hw.mem_bw == 12e9 && hw.peak_f32 == 100e9 && !hw.act_bf16, "host fields");
    /* log-log interpolation between measured points: 100 us * 50^(1/2) at 10 MB */
    double t = zaya_size_coll_time(&hw, ZAYA_SIZE_COLL_ALLREDUCE, 2, 1e7);
    CHECK(fabs(t - 100e-6 * sqrt(50.0)) < 1e-9, "allreduce interpolation %.3e", t);
    CHECK(fabs(zaya_size_coll_time(&hw, ZAYA_SIZE_COLL_ALLREDUCE, 2, 1e9) - 0.05) < 1e-9, "bandwidth-bound extrapolation");
    CHECK(zaya_size_coll_time(&hw, ZAYA_SIZE_COLL_REDUCE_SCATTER, 2, 1e7) < 0, "no reduce-scatter curve, no link model");
    zaya_size_gemm_est e;
    zaya_size_gemm_estimate(&hw, 4000, 4000, 4000, &e);
    CHECK(fabs(e.flops / (e.time_s - hw.launch_s) - 100e9) / 100e9 < 1e-9, "measured GEMM rate of the nearest shape");
    zaya_size_arch a;
    load("zaya1-8b.json", &a);
    zaya_size_step_opts o;
    zaya_size_step_opts_default(&o);
    o.dp = 2;
    o.zero_stage = 0;
    zaya_size_step_pred p;
    CHECK(zaya_size_predict_step(&a, &hw, &o, &p) == ZAYA_OK && p.comm_s > 0, "host prediction with a measured allreduce");
    o.zero_stage = 1;
    CHECK(zaya_size_predict_step(&a, &hw, &o, &p) == ZAYA_EUNSUPPORTED &&
              strstr(zaya_error_message(), "no collective measurements for 2 ranks"),
          "missing curve: %s", zaya_error_message());
    /* Muon on a CPU (src/optim/muon.c): the matrices of one Newton-Schulz shape run in equal batches of
     * up to compute_units x ZAYA_MUON_THREAD_FLOATS floats, each product one batched call on the whole
     * pool: every matrix at the profiled rate (50 GFLOP/s at the 512^3 point), plus one launch per batch,
     * iteration and product. (The former model serialised every matrix below 2e10 FLOPs on one thread,
     * 1/compute_units of the rate: muon.c no longer runs them so.) */
    zaya_size_arch sm;
    zaya_size_arch_zaya_like(&sm, 256, 2, 4, 256, 1, 4096);
    zaya_size_params pc;
    zaya_size_count_params(&sm, &pc);
    double nsf = 0;
    int64_t shape_s[ZAYA_SIZE_MAX_ROWS], shape_l[ZAYA_SIZE_MAX_ROWS], shape_n[ZAYA_SIZE_MAX_ROWS];
    int nshapes = 0;
    for (int i = 0; i < pc.nrows; i++)
        if (pc.rows[i].matrix && !pc.rows[i].embedding) {
            double r = (double)pc.rows[i].rows_, c = (double)pc.rows[i].cols_, m = r < c ? r : c, l = r < c ? c : r;
            nsf += (double)pc.rows[i].instances * 5 * (4 * m * m * l + 2 * m * m * m);
            int g = 0;
            while (g < nshapes && (shape_s[g] != (int64_t)m || shape_l[g] != (int64_t)l)) g++;
            if (g == nshapes) shape_s[g] = (int64_t)m, shape_l[g] = (int64_t)l, shape_n[g] = 0, nshapes++;
            shape_n[g] += pc.rows[i].instances;
        }
    int64_t batches = 0, experts_batches = -1;
    for (int g = 0; g < nshapes; g++) {
        int64_t fit = 2 * ZAYA_MUON_THREAD_FLOATS / (shape_s[g] * shape_l[g]);
        fit = fit > 0 ? fit : 1;
        batches += (shape_n[g] + fit - 1) / fit;
        if (shape_s[g] == 256 && shape_l[g] == 512) experts_batches = (shape_n[g] + fit - 1) / fit;
    }
    /* the 8 expert gate|up matrices (2 layers x 4, 256 x 512 = one thread's floats) in 4 batches of 2 */
    CHECK(experts_batches == 4, "expert gate|up batches %lld", (long long)experts_batches);
    zaya_size_step_opts_default(&o);
    o.optimizer = ZAYA_SIZE_OPT_MUON;
    o.seq = 128;
    CHECK(zaya_size_predict_step(&sm, &hw, &o, &p) == ZAYA_OK, "muon host prediction");
    double want = nsf / 50e9 + 15.0 * (double)batches * hw.launch_s;
    CHECK(nsf > 0 && fabs(p.optimizer_ns_s - want) / want < 0.05, "batched Newton-Schulz %.4f s vs %.4f s", p.optimizer_ns_s, want);
    CHECK(zaya_size_hw_set_dtype(&hw, "fp8") == ZAYA_EINVAL && strstr(zaya_error_message(), "'fp8'"), "dtype name");
    CHECK(zaya_size_hw_set_dtype(&hw, "bf16") == ZAYA_EINVAL && strstr(zaya_error_message(), "has no bf16 GEMM peak"), "no bf16");
    CHECK(zaya_size_hw_set_dtype(&hw, "f32") == ZAYA_OK && !hw.act_bf16, "f32");
    zaya_size_hw_free(&hw);
    /* validation */
    cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(root, "gemm"), 1), "gflops", cJSON_CreateNumber(-1));
    CHECK(zaya_size_hw_from_profile_json(root, "p.json", &hw) == ZAYA_EINVAL &&
              !strcmp(zaya_error_message(), "p.json: gemm[1]: key 'gflops' must be positive (got -1)"),
          "bad gflops: %s", zaya_error_message());
    cJSON_ReplaceItemInObject(root, "version", cJSON_CreateNumber(2));
    CHECK(zaya_size_hw_from_profile_json(root, "p.json", &hw) != ZAYA_OK && strstr(zaya_error_message(), "version 2"), "version");
    cJSON_ReplaceItemInObject(root, "format", cJSON_CreateString("other"));
    CHECK(zaya_size_hw_from_profile_json(root, "p.json", &hw) != ZAYA_OK &&
              !strcmp(zaya_error_message(), "p.json: format 'other' is not 'zaya-profile'"), "format: %s", zaya_error_message());
    cJSON_Delete(root);
    CHECK(zaya_size_hw_get("host", "/nonexistent/profile.json", &hw) == ZAYA_EIO && strstr(zaya_error_message(), "zaya bench all"),
          "host without profile: %s", zaya_error_message());
    CHECK(zaya_size_hw_get("tpu9", NULL, &hw) == ZAYA_EINVAL && strstr(zaya_error_message(), "unknown hardware profile 'tpu9'"),
          "unknown hw");
}

static void test_search(void) {
    zaya_size_hw hw;
    zaya_size_hw_get("mi300x", NULL, &hw);
    zaya_size_search_opts o;
    zaya_size_search_opts_default(&o);
    o.total_params = 8.3e9;
    o.active_params = 760e6;
    load("zaya1-8b.json", &o.ref);
    o.ref_valid = 1;
    zaya_size_search_result r;
    CHECK(zaya_size_search(&hw, &o, &r) == ZAYA_OK && r.n > 0, "search at ZAYA1's budget");
    int found = -1, front_zaya = 0;
    for (int i = 0; i < r.n; i++) {
        const zaya_size_candidate *c = &r.c[i];
        CHECK(fabs(c->total / 8.3e9 - 1) <= 0.03 && fabs(c->active / 760e6 - 1) <= 0.03, "within budget");
        if (c->hidden == 2048 && c->expert_ffn == 2048 && c->experts == 16 && c->top_k == 1 && c->layers == 40) found = i;
        if (c->pareto && c->hidden == 2048 && c->expert_ffn == 2048) front_zaya = 1;
        if (i) CHECK(c->train_tok_s <= r.c[i - 1].train_tok_s, "sorted");
    }
    CHECK(found >= 0, "ZAYA1's exact shape is a candidate");
    if (found >= 0) CHECK(r.c[found].total == 8303355728.0 && r.c[found].active == 753608528.0, "its counts are ZAYA1's");
    char buf[8192] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    zaya_size_search_explain(&hw, &o, &r, f);
    fclose(f);
    int explained = strstr(buf, "reference shape: hidden 2048, 40 layers, 16 experts x 2048, top-1") != NULL &&
                    (strstr(buf, "ON the Pareto front") || (strstr(buf, "preferred instead") && strstr(buf, "train tokens/s/rank") &&
                                                           strstr(buf, "decode ms/token")));
    CHECK(front_zaya || explained, "ZAYA1 shape on the front or explained:\n%s", buf);
    CHECK(explained && strstr(buf, "why: "), "explanation names the reference with numbers:\n%s", buf);
    /* the printed step difference is the sum of the printed terms */
    const char *why = strstr(buf, "why: ");
    double pd = 0, t1 = 0, t2 = 0, t3 = 0, t4 = 0;
    char dir[16] = "";
    int got = why ? sscanf(strstr(why, "step is"), "step is %lf ms %15s = GEMMs %lf + attention/memory-bound ops %lf + optimizer %lf + "
                                               "exposed DP comm %lf", &pd, dir, &t1, &t2, &t3, &t4) : 0;
    double signed_pd = !strcmp(dir, "longer") ? -pd : pd;
    CHECK(got == 6 && fabs(signed_pd - (t1 + t2 + t3 + t4)) <= 0.25, "why line adds up (%d fields): %.1f vs %.1f+%.1f+%.1f+%.1f",
          got, signed_pd, t1, t2, t3, t4);
    /* candidate and reference are evaluated under the same settings as the ranking, and the terms of the
     * difference add up exactly */
    for (int i = 0; i < r.n && i < 5 && found >= 0; i++) {
        zaya_size_arch ca, ra;
        const zaya_size_candidate *c = &r.c[i], *rc = &r.c[found];
        zaya_size_arch_zaya_like(&ca, c->hidden, c->layers, c->experts, c->expert_ffn, c->top_k, o.vocab);
        zaya_size_arch_zaya_like(&ra, rc->hidden, rc->layers, rc->experts, rc->expert_ffn, rc->top_k, o.vocab);
        zaya_size_step_pred sc, sr;
        zaya_size_infer_pred ic, ir;
        int recc = -1, recr = -1;
        CHECK(zaya_size_search_eval(&hw, &o, &ca, &recc, &sc, &ic) == ZAYA_OK &&
                  zaya_size_search_eval(&hw, &o, &ra, &recr, &sr, &ir) == ZAYA_OK, "eval");
        CHECK(sc.tokens_per_s_rank == c->train_tok_s && recc == c->recompute && ic.decode_s == c->decode_s,
              "candidate %d re-evaluates to its ranking (%.1f vs %.1f tok/s)", i, sc.tokens_per_s_rank, c->train_tok_s);
        CHECK(sr.tokens_per_s_rank == rc->train_tok_s && recr == rc->recompute, "reference re-evaluates to its ranking");
        zaya_size_step_diff d;
        zaya_size_diff_step(&sc, &sr, &d);
        CHECK(fabs(d.step - (sr.step_s - sc.step_s)) <= 1e-12 * sr.step_s, "terms add up: %.9f vs %.9f", d.step,
              sr.step_s - sc.step_s);
    }
    zaya_size_search_result_free(&r);

    /* impossible budgets name the tightest constraint */
    o.total_params = 1e9;
    o.active_params = 2e9;
    CHECK(zaya_size_search(&hw, &o, &r) == ZAYA_OK && r.n == 0 &&
              !strcmp(r.fail, "no candidate satisfies active params 2.00B <= total params 1.00B"), "active > total: %s", r.fail);
    o.total_params = 100e12;
    o.active_params = 1e9;
    CHECK(zaya_size_search(&hw, &o, &r) == ZAYA_OK && r.n == 0 &&
              !strncmp(r.fail, "no candidate satisfies total params 100.00T +/-3% (hidden 1024..8192, <= 128 layers); closest: hidden 8192",
                       98), "too large: %s", r.fail);
    o.total_params = 8.3e9;
    o.active_params = 10e6;
    CHECK(zaya_size_search(&hw, &o, &r) == ZAYA_OK && r.n == 0 &&
              !strncmp(r.fail, "no candidate satisfies active params 10.0M +/-3% at total 8.30B; closest of", 74),
          "too sparse: %s", r.fail);
    zaya_size_hw_free(&hw);
}

static void test_bad_inputs(void) {
    cJSON *cfg;
    zaya_size_arch a;
    CHECK(zaya_json_parse("{\"model_type\":\"gpt2\",\"n_embd\":768}", "c", &cfg) == ZAYA_OK, "json");
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EUNSUPPORTED &&
              !strncmp(zaya_error_message(), "unknown model_type 'gpt2' (supported: zaya, llama, mistral, qwen2, qwen3, ", 72) &&
              strstr(zaya_error_message(), "deepseek_v3") && strstr(zaya_error_message(), "gemma3_text"),
          "unknown family: %s", zaya_error_message());
    cJSON_Delete(cfg);
    CHECK(zaya_json_parse("{\"hidden_size\":768}", "c", &cfg) == ZAYA_OK, "json");
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL && !strcmp(zaya_error_message(), "missing required key 'model_type'"),
          "no model_type: %s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("llama-3-8b.json");
    cJSON_DeleteItemFromObject(cfg, "hidden_size");
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL &&
              !strcmp(zaya_error_message(), "model_type 'llama': missing required key 'hidden_size'"),
          "missing key: %s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("mixtral-8x7b.json");
    cJSON_DeleteItemFromObject(cfg, "num_local_experts");
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL &&
              !strcmp(zaya_error_message(), "model_type 'mixtral': missing required key 'num_local_experts'"),
          "missing MoE key: %s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("mixtral-8x7b.json");
    cJSON_ReplaceItemInObject(cfg, "num_experts_per_tok", cJSON_CreateNumber(9));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL &&
              !strcmp(zaya_error_message(), "model_type 'mixtral': num_experts_per_tok 9 exceeds the 8 experts of num_local_experts"),
          "top-k > E: %s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("llama-3-8b.json");
    cJSON_ReplaceItemInObject(cfg, "hidden_size", cJSON_CreateNumber(4e15));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_ERANGE &&
              !strcmp(zaya_error_message(), "model_type 'llama': key 'hidden_size' = 4000000000000000 is out of range (0..1073741824)"),
          "huge: %s", zaya_error_message());
    /* products out of range are caught before any count is formed */
    cJSON_ReplaceItemInObject(cfg, "hidden_size", cJSON_CreateNumber(1 << 24));
    cJSON_ReplaceItemInObject(cfg, "intermediate_size", cJSON_CreateNumber(1 << 30));
    cJSON_ReplaceItemInObject(cfg, "num_hidden_layers", cJSON_CreateNumber(1 << 20));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_ERANGE && strstr(zaya_error_message(), "model sizes are out of range"),
          "product: %s", zaya_error_message());
    cJSON_ReplaceItemInObject(cfg, "intermediate_size", cJSON_CreateNumber(14336));
    /* 2^50 layers: refused at read time, no loop over them; 1e300 never reaches an integer conversion */
    cJSON_ReplaceItemInObject(cfg, "num_hidden_layers", cJSON_CreateNumber(1125899906842624.0));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_ERANGE && strstr(zaya_error_message(), "key 'num_hidden_layers'"), "2^50 layers: %s",
          zaya_error_message());
    cJSON_ReplaceItemInObject(cfg, "num_hidden_layers", cJSON_CreateNumber(1e300));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL && strstr(zaya_error_message(), "num_hidden_layers"), "1e300: %s",
          zaya_error_message());
    cJSON_ReplaceItemInObject(cfg, "hidden_size", cJSON_CreateNumber(4096));
    cJSON_ReplaceItemInObject(cfg, "hidden_size", cJSON_CreateNumber(4096));
    cJSON_ReplaceItemInObject(cfg, "num_hidden_layers", cJSON_CreateNumber(-3));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_ERANGE &&
              !strcmp(zaya_error_message(), "model_type 'llama': key 'num_hidden_layers' = -3 is out of range (1..1048576)"),
          "negative: %s", zaya_error_message());
    cJSON_ReplaceItemInObject(cfg, "num_hidden_layers", cJSON_CreateNumber(32));
    cJSON_ReplaceItemInObject(cfg, "num_key_value_heads", cJSON_CreateNumber(0));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL &&
              !strcmp(zaya_error_message(), "model_type 'llama': num_key_value_heads must be positive (got 0)"),
          "zero kv heads, named by its config key: %s", zaya_error_message());
    cJSON_ReplaceItemInObject(cfg, "num_key_value_heads", cJSON_CreateString("8"));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL && strstr(zaya_error_message(), "num_key_value_heads"), "string kv: %s",
          zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("zaya1-8b.json");
    cJSON_DeleteItemFromObject(cfg, "ffn_hidden_size");
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL &&
              !strcmp(zaya_error_message(), "model_type 'zaya': missing required key 'ffn_hidden_size'"),
          "legacy zaya without ffn_hidden_size: %s", zaya_error_message());
    cJSON_Delete(cfg);
    /* unmodelled features are named */
    CHECK(zaya_json_parse("{\"model_type\":\"qwen3_next\",\"hidden_size\":2048}", "c", &cfg) == ZAYA_OK, "json");
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EUNSUPPORTED &&
              strstr(zaya_error_message(), "model_type 'qwen3_next': key 'layer_types' is not modelled"), "%s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("gpt-oss-20b.json");
    cJSON *lt = cJSON_GetObjectItemCaseSensitive(cfg, "layer_types");
    cJSON_ReplaceItemInArray(lt, 3, cJSON_CreateString("linear_attention"));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EUNSUPPORTED &&
              !strcmp(zaya_error_message(), "model_type 'gpt_oss': key 'layer_types': 'linear_attention' layers are not modelled"),
          "%s", zaya_error_message());
    cJSON_DeleteItemFromArray(lt, 3);
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL && strstr(zaya_error_message(), "lists 23 layers but num_hidden_layers is 24"),
          "%s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("llama-3-8b.json");
    cJSON_AddBoolToObject(cfg, "mlp_bias", 1);
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EUNSUPPORTED &&
              !strcmp(zaya_error_message(), "model_type 'llama': key 'mlp_bias' is not modelled (biases on the MLP projections)"),
          "%s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("deepseek-v3.json");
    cJSON_ReplaceItemInObject(cfg, "attention_bias", cJSON_CreateTrue());
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EUNSUPPORTED && strstr(zaya_error_message(), "model_type 'deepseek_v3': key 'attention_bias' is not modelled"),
          "%s", zaya_error_message());
    cJSON_Delete(cfg);
    /* qwen MoE layer lists: indices bounded, duplicates counted once */
    cfg = load_json("qwen3-30b-a3b.json");
    cJSON_ReplaceItemInObject(cfg, "mlp_only_layers", cJSON_Parse("[0, 0, 47]"));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_OK && a.n_moe_layers == 46, "mlp_only_layers: %lld", (long long)a.n_moe_layers);
    cJSON_ReplaceItemInObject(cfg, "mlp_only_layers", cJSON_Parse("[1e300]"));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_EINVAL && strstr(zaya_error_message(), "mlp_only_layers"), "%s", zaya_error_message());
    cJSON_Delete(cfg);
    /* legacy ZAYA lists with huge entries */
    cfg = load_json("zaya1-8b.json");
    cJSON_ReplaceItemInObject(cfg, "ffn_hidden_size", cJSON_Parse("[0, 1e300]"));
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_ERANGE && strstr(zaya_error_message(), "ffn_hidden_size"), "%s", zaya_error_message());
    cJSON_Delete(cfg);
    /* duplicate keys anywhere are refused */
    CHECK(zaya_json_parse("{\"model_type\":\"dbrx\",\"ffn_config\":{\"moe_top_k\":1,\"moe_top_k\":4}}", "c", &cfg) == ZAYA_OK, "json");
    CHECK(zaya_json_check_unique_keys(cfg) == ZAYA_EFORMAT && strstr(zaya_error_message(), "duplicate key 'moe_top_k'"), "%s",
          zaya_error_message());
    cJSON_Delete(cfg);
    CHECK(zaya_size_arch_load(data_dir(), &a) == ZAYA_EINVAL && strstr(zaya_error_message(), "is a directory"), "dir: %s", zaya_error_message());
    double v;
    CHECK(zaya_size_parse_count("8.3B", &v) == ZAYA_OK && fabs(v - 8.3e9) < 1e-3, "8.3B");
    CHECK(zaya_size_parse_count("760M", &v) == ZAYA_OK && v == 760e6, "760M");
    CHECK(zaya_size_parse_count("7e9", &v) == ZAYA_OK && v == 7e9, "7e9");
    CHECK(zaya_size_parse_count("1.5t", &v) == ZAYA_OK && fabs(v - 1.5e12) < 1e-3, "1.5t");
    CHECK(zaya_size_parse_count("12x", &v) == ZAYA_EINVAL && !strcmp(zaya_error_message(), "'12x': unknown suffix 'x' (use K, M, B or T)"),
          "bad suffix");
    CHECK(zaya_size_parse_count("8BB", &v) == ZAYA_EINVAL, "trailing");
}

/* One reader: `zaya size` reads model_type "zaya" through the model's own config reader, so the sizing
 * counts equal the model's stored and active counts, FLOPs and KV bytes for every preset and both file
 * layouts. */
static void test_one_reader(void) {
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s/fixtures/size/zaya1-8b.json", data_dir());
    snprintf(p2, sizeof p2, "%s/fixtures/size/zaya1-8b-hf.json", data_dir());
    const char *specs[] = {"zaya1-8b", "zaya1-small", "zaya1-tiny", p1, p2};
    for (int i = 0; i < 5; i++) {
        zaya_config c;
        zaya_size_arch a;
        CHECK(zaya_config_resolve(specs[i], &c) == ZAYA_OK, "model reader %s: %s", specs[i], zaya_error_message());
        CHECK(zaya_size_arch_load(specs[i], &a) == ZAYA_OK, "size reader %s: %s", specs[i], zaya_error_message());
        zaya_size_params sp;
        zaya_size_count_params(&a, &sp);
        zaya_param_counts mp = zaya_model_count_params(&c);
        CHECK(sp.total == mp.total && sp.non_embedding == mp.non_embedding &&
                  sp.active_non_embedding == mp.active_non_embedding,
              "%s: size total %lld / non-emb %lld / active %lld vs model %lld / %lld / %lld", specs[i], (long long)sp.total,
              (long long)sp.non_embedding, (long long)sp.active_non_embedding, (long long)mp.total,
              (long long)mp.non_embedding, (long long)mp.active_non_embedding);
        CHECK(a.max_seq == c.max_position_embeddings && a.cca_time0 == c.cca_time0 && a.router_hidden == c.router_hidden_size,
              "%s: shape fields", specs[i]);
        /* one FLOP / byte accounting: size's family-neutral counts of the mapped config equal the
         * model's own (matmuls + CCA convolutions, attention at length T, KV cache per token) */
        for (int64_t T = 1; T <= 4096; T *= 64) {
            zaya_size_flops sf;
            zaya_size_count_flops(&a, T, &sf);
            zaya_model_costs mc = zaya_model_costs_at(&c, T, 2);
            const double lin = mc.matmul_flops + mc.conv_flops;
            CHECK(fabs(sf.linear_fwd - lin) <= 1e-12 * lin && fabs(sf.attn_fwd - mc.attention_flops) <= 1e-12 * mc.attention_flops &&
                      fabs(sf.train - mc.training_flops) <= 1e-12 * mc.training_flops,
                  "%s T=%lld: size linear %.9g attention %.9g train %.9g vs model %.9g / %.9g / %.9g", specs[i], (long long)T,
                  sf.linear_fwd, sf.attn_fwd, sf.train, lin, mc.attention_flops, mc.training_flops);
        }
        CHECK(zaya_size_kv_bytes_per_token(&a, 2) == (double)zaya_model_costs_at(&c, 16, 2).kv_bytes_per_token,
              "%s: KV bytes per token size %.0f vs model %lld", specs[i], zaya_size_kv_bytes_per_token(&a, 2),
              (long long)zaya_model_costs_at(&c, 16, 2).kv_bytes_per_token);
    }
    /* the legacy EDA switch is zaya_router "zaya_no_eda" (same counts in both readers); the same refusals:
     * a legacy list entry too large, a missing legacy width */
    cJSON *cfg = load_json("zaya1-8b.json");
    cJSON_ReplaceItemInObject(cfg, "zaya_use_eda", cJSON_CreateFalse());
    zaya_config c;
    zaya_size_arch a;
    CHECK(zaya_config_from_json(cfg, &c) == ZAYA_OK && c.router == ZAYA_ROUTER_NO_EDA, "model: %s", zaya_error_message());
    CHECK(zaya_size_arch_from_config(cfg, &a) == ZAYA_OK && a.router_eda == 0, "size: %s", zaya_error_message());
    {
        zaya_size_params sp;
        zaya_size_count_params(&a, &sp);
        zaya_param_counts mp = zaya_model_count_params(&c);
        CHECK(sp.total == mp.total && mp.total == 8840488784ll - 39 * 256, "no EDA: size %lld vs model %lld",
              (long long)sp.total, (long long)mp.total);
    }
    cJSON_AddItemToObject(cfg, "zaya_router", cJSON_CreateString("zaya"));
    CHECK(zaya_config_from_json(cfg, &c) == ZAYA_EINVAL && strstr(zaya_error_message(), "zaya_use_eda"),
          "contradicting router keys: %s", zaya_error_message());
    cJSON_Delete(cfg);
    cfg = load_json("zaya1-8b.json");
    cJSON_ReplaceItemInObject(cfg, "ffn_hidden_size", cJSON_Parse("[0, 4096, 0]"));
    CHECK(zaya_config_from_json(cfg, &c) == ZAYA_OK && c.moe_intermediate_size == 2048, "legacy list: %s", zaya_error_message());
    cJSON_DeleteItemFromObject(cfg, "ffn_hidden_size");
    CHECK(zaya_config_from_json(cfg, &c) == ZAYA_EINVAL && strstr(zaya_error_message(), "missing required key 'ffn_hidden_size'"),
          "model legacy without width: %s", zaya_error_message());
    cJSON_Delete(cfg);
}

/* Context parallelism: per-rank activations, ZeRO over DP x CP, the exchanges' bytes and the busiest
 * rank's attention share, each against its formula. */
static void test_cp(void) {
    zaya_size_arch a;
    load("zaya1-8b.json", &a);
    zaya_size_mem_opts mo;
    zaya_size_mem_opts_default(&mo);
    mo.seq = 32768;
    mo.zero_stage = 1;
    zaya_size_mem m1, m8;
    zaya_size_train_memory(&a, &mo, &m1);
    mo.cp = 8;
    zaya_size_train_memory(&a, &mo, &m8);
    const double kv = (double)a.kv_heads * (double)a.head_dim, T = 32768;
    CHECK(fabs(m8.act_per_layer * 8 - m1.act_per_layer) < 1e-6 * m1.act_per_layer, "per-layer activations / CP");
    CHECK(fabs(m8.cp_buffers - 4.0 * (6 * T * kv + 2 * T / 8 * kv)) < 1, "gathered K/V buffers %.0f", m8.cp_buffers);
    CHECK(fabs(m8.master * 8 - m1.master) < 1 && fabs(m8.optimizer * 8 - m1.optimizer) < 1, "ZeRO-1 over DP x CP");
    CHECK(m1.cp_buffers == 0, "no CP buffers without CP");
    zaya_size_hw hw;
    CHECK(zaya_size_hw_get("h200", NULL, &hw) == ZAYA_OK, "h200");
    zaya_size_step_opts o;
    zaya_size_step_opts_default(&o);
    o.seq = 32768;
    o.cp = 8;
    zaya_size_step_pred p;
    CHECK(zaya_size_predict_step(&a, &hw, &o, &p) == ZAYA_OK, "predict cp 8: %s", zaya_error_message());
    const double buf = T * 2 * kv * 4;
    CHECK(fabs(p.cp_gather_bytes - 2 * buf * 7 / 8) < 1 && fabs(p.cp_scatter_bytes - buf * 7 / 8) < 1, "gather/scatter bytes");
    CHECK(fabs(p.cp_mha_gather_bytes / p.cp_gather_bytes - (double)a.hidden / kv) < 1e-9, "MHA comparison");
    CHECK(p.cp_attn_imbalance == 1.0 && p.cp_comm_s > 0, "zig-zag: balanced");
    o.cp_contiguous = 1;
    CHECK(zaya_size_predict_step(&a, &hw, &o, &p) == ZAYA_OK && fabs(p.cp_attn_imbalance - 15.0 / 8) < 1e-12,
          "contiguous: the last chunk's share");
    o.cp = 3;
    CHECK(zaya_size_predict_step(&a, &hw, &o, &p) == ZAYA_EINVAL && strstr(zaya_error_message(), "not divisible by cp 3"),
          "seq not divisible: %s", zaya_error_message());
    zaya_size_hw_free(&hw);
}

int main(void) {
    test_cp();
    test_zaya1();
    test_one_reader();
    test_published();
    test_families();
    test_fit();
    test_moe_bugs();
    test_quantized();
    test_memory();
    test_rules();
    test_predict();
    test_profile();
    test_search();
    test_bad_inputs();
    return th_finish("test_size");
}

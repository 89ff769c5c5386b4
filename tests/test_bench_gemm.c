/* Benchmark plumbing: the timer's statistics, the model GEMM list (its FLOPs per step against an
 * independent parameter count and against the model's own FLOP accounting, and shape by shape against
 * the sizing list it comes from), reading the model config
 * through the model's reader, efficiency flags and one real measurement. */
#include <string.h>
#include <time.h>

#include "testutil.h"
#include "zaya/bench_gemm.h"
#include "zaya/json.h"
#include "zaya/model.h"
#include "zaya/size.h"
#include "zaya/timer.h"

/* Spins for a fixed time so the timer has a known answer. */
static zaya_status spin_call(void *ctx) {
    double us = *(double *)ctx;
    uint64_t t0 = zaya_now_ns();
    while ((double)(zaya_now_ns() - t0) < us * 1e3) {
    }
    return ZAYA_OK;
}

static zaya_status sleep_call(void *ctx) {
    (void)ctx;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    return ZAYA_OK;
}

static int g_calls;
static zaya_status failing_call(void *ctx) {
    (void)ctx;
    return ++g_calls >= 4 ? zaya_error_set(ZAYA_EBACKEND, "deliberate failure") : ZAYA_OK;
}

static void test_timer(void) {
    double us = 200;
    zaya_bench_opts o = {1, 7, 1e-3, 0};
    zaya_bench_stats st;
    CHECK(zaya_bench_time(spin_call, &us, &o, &st) == ZAYA_OK, "%s", zaya_error_message());
    CHECK(st.reps == 7, "reps %d", st.reps);
    CHECK(st.inner >= 5, "inner %lld: a 200 us call needs >= 5 per 1 ms sample", (long long)st.inner);
    CHECK(st.best_s >= 199e-6 && st.best_s < 2e-3, "best %.3g s for a 200 us spin", st.best_s);
    CHECK(st.best_s <= st.median_s && st.median_s <= 0.1, "best %.3g median %.3g", st.best_s, st.median_s);
    double us2 = 50;
    zaya_bench_stats a, b;
    CHECK(zaya_bench_time_pair(spin_call, &us, spin_call, &us2, &o, &a, &b) == ZAYA_OK, "%s", zaya_error_message());
    CHECK(a.best_s > 2.5 * b.best_s, "pair: 200 us side %.3g vs 50 us side %.3g", a.best_s, b.best_s);
    /* The thread CPU clock does not count time spent asleep (or descheduled); the wall clock does. */
    zaya_bench_opts oc = {1, 3, 1e-3, 1};
    CHECK(zaya_bench_time(sleep_call, NULL, &oc, &st) == ZAYA_OK, "%s", zaya_error_message());
    CHECK(st.best_s < 1e-4, "thread CPU time of a 1 ms sleep: %.3g s", st.best_s);
    oc.thread_cpu = 0;
    CHECK(zaya_bench_time(sleep_call, NULL, &oc, &st) == ZAYA_OK, "%s", zaya_error_message());
    CHECK(st.best_s >= 0.99e-3, "wall time of a 1 ms sleep: %.3g s", st.best_s);
    oc.thread_cpu = 1;
    CHECK(zaya_bench_time(spin_call, &us, &oc, &st) == ZAYA_OK && st.best_s >= 150e-6 && st.best_s < 2e-3,
          "thread CPU time of a 200 us spin: %.3g s", st.best_s);
    g_calls = 0;
    CHECK(zaya_bench_time(failing_call, NULL, &o, &st) == ZAYA_EBACKEND, "a failing callable must stop the timer");
}

/* FLOPs per step = 6 * tokens * (dense linear parameters) + 6 * routed rows * expert parameters:
 * every linear's three GEMMs cost 2 * rows * in * out each. */
static double expected_step_flops(const zaya_config *m, int64_t tokens) {
    double h = (double)m->hidden_size, hd = (double)m->head_dim, rh = (double)m->router_hidden_size;
    double attn = h * (double)m->num_attention_heads * hd * 2 /* q, o */ + h * (double)m->num_key_value_heads * hd /* k */ +
                  2 * h * (double)(m->num_key_value_heads / 2) * hd /* v_cur, v_del */;
    double router = h * rh + 2 * rh * rh + rh * (double)(m->num_experts + 1);
    double expert = h * 2 * (double)m->moe_intermediate_size + (double)m->moe_intermediate_size * h;
    double te = (double)((tokens + m->num_experts - 1) / m->num_experts);
    double L = (double)m->num_hidden_layers;
    return 6.0 * (double)tokens * (L * (attn + router) + h * (double)m->vocab_size) +
           6.0 * te * L * (double)m->num_experts * expert;
}

static double shapes_flops(const zaya_gemm_shape *s, int n) {
    double f = 0;
    for (int i = 0; i < n; i++) f += s[i].count * 2.0 * (double)s[i].m * (double)s[i].n * (double)s[i].k;
    return f;
}

/* The model GEMM list of bench gemm --from-config is the sizing layer's (zaya_size_gemm_model_shapes):
 * 10 linears x 3 passes for ZAYA1 (the two value halves and the router's two square layers are one row
 * each, counted twice per layer). */
static void test_model_shapes(void) {
    zaya_config m;
    CHECK(zaya_config_preset("zaya1-8b", &m) == ZAYA_OK, "preset");
    int n = zaya_size_gemm_model_shapes(&m, 4096, ZAYA_DTYPE_BF16, NULL, 0);
    CHECK(n == 30, "10 linears x 3 passes, got %d", n);
    zaya_gemm_shape s[96];
    CHECK(zaya_size_gemm_model_shapes(&m, 4096, ZAYA_DTYPE_BF16, s, 96) == n, "count mismatch");
    CHECK(zaya_size_gemm_model_shapes(&m, 4096, ZAYA_DTYPE_BF16, s, 5) == n, "a short buffer still counts all");
    double want = expected_step_flops(&m, 4096), got = shapes_flops(s, n);
    CHECK(fabs(got - want) <= 1e-12 * want, "step FLOPs %.6g, want %.6g", got, want);
    /* ZAYA1-8B at 4096 tokens: 753.6M active non-embedding params minus norms, conv, scales; the
     * dense GEMM parameter count (attention 5,242,880 + router 659,712 per layer + one expert
     * 12,582,912) times 40, plus the 537M head. */
    double per_token_params = 40.0 * (5242880 + 659712 + 12582912) + 2048.0 * 262272;
    CHECK(fabs(got - 6.0 * 4096 * per_token_params) <= 1e-9 * got, "ZAYA1-8B FLOPs %.6g vs 6*N*T %.6g", got,
          6.0 * 4096 * per_token_params);
    /* Spot checks: expert fc1 forward at 4096/16 = 256 rows, 40 layers x 16 experts; the LM head weight
     * gradient; the router's out projection to 16 experts + the skip class; both value halves. */
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(s[i].name, "experts.gate_up") && !strcmp(s[i].pass, "fwd"))
            found += s[i].m == 256 && s[i].n == 4096 && s[i].k == 2048 && s[i].trans_b == 1 && s[i].count == 640 &&
                     !strcmp(s[i].group, "expert");
        if (!strcmp(s[i].name, "lm_head") && !strcmp(s[i].pass, "wgrad"))
            found += s[i].m == 262272 && s[i].n == 2048 && s[i].k == 4096 && s[i].trans_a == 1 && s[i].beta == 1 &&
                     !strcmp(s[i].group, "head");
        if (!strcmp(s[i].name, "router.out_proj") && !strcmp(s[i].pass, "fwd")) found += s[i].n == 17 && s[i].k == 256;
        if (!strcmp(s[i].name, "attn.v_proj (x2 halves)") && !strcmp(s[i].pass, "dgrad"))
            found += s[i].m == 4096 && s[i].n == 2048 && s[i].k == 128 && s[i].count == 80 && s[i].trans_b == 0;
        CHECK(s[i].dtype == ZAYA_DTYPE_BF16, "dtype");
    }
    CHECK(found == 4, "spot checks matched %d of 4", found);
    /* Uneven routing: 1000 tokens over 16 experts -> 63 rows per expert. */
    zaya_size_gemm_model_shapes(&m, 1000, ZAYA_DTYPE_F32, s, 96);
    CHECK(fabs(shapes_flops(s, n) - expected_step_flops(&m, 1000)) <= 1e-12 * shapes_flops(s, n), "1000 tokens");
    CHECK(zaya_gemm_sweep_shapes(1, ZAYA_DTYPE_F32, NULL, 0) < zaya_gemm_sweep_shapes(0, ZAYA_DTYPE_F32, NULL, 0),
          "quick sweep is smaller");
}

static void config_from_text(const char *text, zaya_config *c) {
    cJSON *cfg = NULL;
    CHECK(zaya_json_parse(text, "t", &cfg) == ZAYA_OK, "parse %s", text);
    CHECK(zaya_config_from_json(cfg, c) == ZAYA_OK, "%s: %s", text, zaya_error_message());
    cJSON_Delete(cfg);
}

/* The configs the list is checked on: every preset, an odd number of KV heads (the value halves split
 * kv_dim = 192 into 96 + 96), and the variants (linear router, dense MLP, GQA attention). */
#define NVARIANTS 4
static const char *const k_variants[NVARIANTS] = {
    "{\"num_attention_heads\": 6, \"num_key_value_heads\": 3, \"head_dim\": 64}",
    "{\"hidden_size\": 256, \"num_hidden_layers\": 3, \"num_experts\": 4, \"moe_intermediate_size\": 128, \"zaya_router\": \"linear\"}",
    "{\"hidden_size\": 256, \"num_hidden_layers\": 3, \"zaya_mlp\": \"dense\", \"zaya_dense_intermediate_size\": 384}",
    "{\"hidden_size\": 256, \"num_hidden_layers\": 3, \"zaya_attention\": \"gqa\", \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 64}"
};

static int load_case(int i, zaya_config *c) {
    const char *const *names = zaya_config_preset_names();
    int np = 0;
    while (names[np]) np++;
    if (i < np) {
        CHECK(zaya_config_preset(names[i], c) == ZAYA_OK, "preset %s", names[i]);
        return 1;
    }
    if (i >= np + NVARIANTS) return 0;
    config_from_text(k_variants[i - np], c);
    return 1;
}

/* One accounting: with the experts dividing the routed tokens, the GEMM list of a training step costs
 * exactly 3 x tokens x the model's forward matmul FLOPs per token (zaya_model_costs_at). */
static void test_model_accounting(void) {
    zaya_gemm_shape s[96];
    zaya_config c;
    int checked = 0;
    for (int i = 0; load_case(i, &c); i++) {
        const int64_t tokens = 64 * c.num_experts;
        int n = zaya_size_gemm_model_shapes(&c, tokens, ZAYA_DTYPE_F32, s, 96);
        const double want = 3.0 * (double)tokens * zaya_model_costs_at(&c, 128, 2).matmul_flops, got = shapes_flops(s, n);
        CHECK(n > 0 && n <= 96 && fabs(got - want) <= 1e-12 * want, "case %d (%s): GEMM list %.9g FLOPs, accounting %.9g",
              i, c.name, got, want);
        checked++;
    }
    CHECK(checked == 3 + NVARIANTS, "cases %d", checked);
    load_case(3, &c);
    int n = zaya_size_gemm_model_shapes(&c, 4096, ZAYA_DTYPE_F32, s, 96);
    int halves = 0;
    for (int i = 0; i < n; i++)
        if (!strcmp(s[i].name, "attn.v_proj (x2 halves)") && !strcmp(s[i].pass, "fwd"))
            halves += s[i].n == 3 * 64 / 2 && s[i].count == 2.0 * (double)c.num_hidden_layers;
    CHECK(halves == 1, "odd kv heads: one value-half row of width 96, two per layer");
}

/* bench gemm's list and the sizing list `zaya size check` rates are one list: shape by shape (name, pass,
 * m, n, k, count = launches x groups), for every preset and variant, at an even and an uneven token
 * count; only the CCA grouped convolution (a convolution kernel on the CPU) is the sizing list's alone. */
static void test_model_shapes_match_size(void) {
    zaya_gemm_shape s[96];
    zaya_size_gemm_shape g[ZAYA_SIZE_MAX_GEMMS];
    zaya_config c;
    for (int i = 0; load_case(i, &c); i++) {
        for (int64_t tokens = 1000; tokens <= 4096; tokens += 3096) {
            zaya_size_arch a;
            zaya_size_arch_from_zaya_config(&c, &a);
            zaya_size_run run = {1, tokens, 1};
            int ng = zaya_size_list_gemms(&a, &run, g, ZAYA_SIZE_MAX_GEMMS), nf = ng / 3;
            int n = zaya_size_gemm_model_shapes(&c, tokens, ZAYA_DTYPE_F32, s, 96), at = 0, convs = 0;
            CHECK(ng % 3 == 0 && ng > 0, "case %d: %d sizing GEMMs", i, ng);
            for (int f = 0; f < nf; f++) {
                if (g[f].conv) {
                    convs++;
                    CHECK(!strcmp(g[f].name, "attn.conv_grouped"), "case %d: conv row '%s'", i, g[f].name);
                    continue;
                }
                const zaya_size_gemm_shape *ref[3] = {&g[f], &g[nf + 2 * f], &g[nf + 2 * f + 1]};
                for (int p = 0; p < 3; p++, at++) {
                    CHECK(at < n, "case %d: bench list ends at %d", i, n);
                    const zaya_gemm_shape *b = &s[at];
                    CHECK(!strcmp(b->name, ref[p]->name) && !strcmp(b->pass, ref[p]->pass) && b->m == ref[p]->m &&
                              b->n == ref[p]->n && b->k == ref[p]->k &&
                              b->count == (double)ref[p]->count * (double)ref[p]->groups,
                          "case %d tokens %lld: bench %s %s %lldx%lldx%lld x%g vs size %s %s %lldx%lldx%lld x%lld x%lld groups",
                          i, (long long)tokens, b->name, b->pass, (long long)b->m, (long long)b->n, (long long)b->k,
                          b->count, ref[p]->name, ref[p]->pass, (long long)ref[p]->m, (long long)ref[p]->n,
                          (long long)ref[p]->k, (long long)ref[p]->count, (long long)ref[p]->groups);
                    /* y = x W^T, dx = dy W, dW += dy^T x */
                    CHECK(b->trans_a == (p == 2) && b->trans_b == (p == 0) && b->beta == (p == 2 ? 1.0f : 0.0f),
                          "case %d: %s %s transposes / beta", i, b->name, b->pass);
                }
            }
            CHECK(at == n, "case %d: bench list has %d shapes, the sizing list's linears %d", i, n, at);
            CHECK(convs == (c.attention == ZAYA_ATTENTION_CCA), "case %d: %d conv rows", i, convs);
        }
    }
}

static void expect_config_error(const char *text, const char *needle) {
    cJSON *cfg = NULL;
    CHECK(zaya_json_parse(text, "test", &cfg) == ZAYA_OK, "parse %s", text);
    zaya_config m;
    zaya_status s = zaya_config_from_json(cfg, &m);
    CHECK(s == ZAYA_EINVAL && strstr(zaya_error_message(), needle), "config %s: status %d message '%s' lacks '%s'", text,
          (int)s, zaya_error_message(), needle);
    cJSON_Delete(cfg);
}

static void test_config(void) {
    cJSON *cfg = NULL;
    CHECK(zaya_json_parse("{\"hidden_size\": 512, \"num_experts\": 4, \"model_type\": \"zaya\"}", "t", &cfg) == ZAYA_OK, "parse");
    zaya_config m;
    CHECK(zaya_config_from_json(cfg, &m) == ZAYA_OK, "%s", zaya_error_message());
    CHECK(m.hidden_size == 512 && m.num_experts == 4 && m.num_hidden_layers == 40 && m.vocab_size == 262272,
          "values over defaults");
    cJSON_Delete(cfg);
    expect_config_error("{\"hidden_size\": \"2048\"}", "'hidden_size'");
    expect_config_error("{\"num_experts\": 0}", "'num_experts'");
    expect_config_error("{\"head_dim\": 12.5}", "'head_dim'");
    expect_config_error("{\"vocab_size\": -3}", "'vocab_size'");
    expect_config_error("{\"num_attention_heads\": 6, \"num_key_value_heads\": 4}", "'num_attention_heads'");
}

static void test_flags_and_run(void) {
    zaya_gemm_result r = {0};
    r.s.m = 128, r.s.n = 256, r.s.k = 64, r.pct_peak = 80;
    zaya_gemm_flags(&r, r.flags, sizeof r.flags);
    CHECK(!strcmp(r.flags, ""), "aligned fast shape flagged '%s'", r.flags);
    r.s.n = 17, r.pct_peak = 10;
    zaya_gemm_flags(&r, r.flags, sizeof r.flags);
    CHECK(!strcmp(r.flags, "slow dim%16"), "flags '%s'", r.flags);
    r.s.n = 96, r.pct_peak = 60;
    zaya_gemm_flags(&r, r.flags, sizeof r.flags);
    CHECK(!strcmp(r.flags, "dim%64"), "flags '%s'", r.flags);

    zaya_gemm_shape s = {.group = "t", .name = "x", .dtype = ZAYA_DTYPE_F32, .trans_b = 1, .m = 64, .n = 48, .k = 32, .count = 1};
    zaya_bench_opts o = {1, 3, 1e-4, 0};
    CHECK(zaya_gemm_run_shape(&s, &o, 100.0, &r) == ZAYA_OK, "%s", zaya_error_message());
    CHECK(fabs(r.gflop - 2.0 * 64 * 48 * 32 * 1e-9) < 1e-15, "gflop %g", r.gflop);
    CHECK(r.gflops > 0 && r.direct_gflops > 0 && r.ratio > 0, "rates %g %g", r.gflops, r.direct_gflops);
    CHECK(fabs(r.pct_peak - r.gflops) < 1e-9 * r.gflops, "pct of a 100 GFLOP/s peak");
    CHECK(strstr(r.impl, "") && r.impl[0], "impl name recorded");
    s.m = 0;
    CHECK(zaya_gemm_run_shape(&s, &o, 100.0, &r) == ZAYA_EINVAL && strstr(zaya_error_message(), "m must be positive"),
          "bad shape: %s", zaya_error_message());
    zaya_matmul_cache_clear();
}

/* --only: whole comma-separated group names, order kept; a prefix of a name is not that name. */
static void test_keep_groups(void) {
    zaya_gemm_shape s[256], all[256];
    int n = zaya_gemm_sweep_shapes(1, ZAYA_DTYPE_BF16, s, 256);
    CHECK(n > 0 && n <= 256, "sweep shapes %d", n);
    memcpy(all, s, sizeof s);
    int want = 0;
    for (int i = 0; i < n; i++) want += !strcmp(all[i].group, "square") || !strcmp(all[i].group, "align_m");
    CHECK(want > 0 && want < n, "square + align_m are %d of %d", want, n);
    int k = zaya_gemm_shapes_keep_groups(s, n, "align_m,square");
    CHECK(k == want, "kept %d, want %d", k, want);
    for (int i = 0, j = 0; i < n && j < k; i++)
        if (!strcmp(all[i].group, "square") || !strcmp(all[i].group, "align_m")) {
            CHECK(s[j].m == all[i].m && s[j].n == all[i].n && s[j].k == all[i].k && !strcmp(s[j].group, all[i].group),
                  "shape %d out of order", j);
            j++;
        }
    memcpy(s, all, sizeof s);
    CHECK(zaya_gemm_shapes_keep_groups(s, n, "squ") == 0, "a prefix selected shapes");
    CHECK(zaya_gemm_shapes_keep_groups(s, n, "") == 0, "an empty list selected shapes");
}

int main(void) {
    test_timer();
    test_keep_groups();
    test_model_shapes();
    test_model_accounting();
    test_model_shapes_match_size();
    test_config();
    test_flags_and_run();
    return th_finish("test_bench_gemm");
}

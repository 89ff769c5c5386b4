/* Where the time of one training step goes: the step of `zaya bench train` (zero_grad, forward,
 * backward, global gradient norm, clipped Muon + AdamW update, bf16 shadow refresh) timed phase by
 * phase, on the same deterministic weights and synthetic tokens.
 * usage: bench_step [--threads N] [--steps S] [--batch B] [--seq T] [--dtype f32|bf16] [--ns-batch FLOATS]
 *                   [-o DIR] CONFIG
 * --ns-batch sets zaya_optim_config.muon_batch_floats (0: the default).
 * CONFIG is a preset or a config.json. Prints the median of each phase over S steps (after one warm-up
 * step) and its share of the median step; Muon's Newton-Schulz is shown separately (the optimizer's own
 * timers). Forward and backward run on the training engine over the CPU backend (the trainer's step;
 * the optimizer phases are src/optim's on the same blocks, timed apart). Before that, the engine's
 * profile of the median step (zaya_engine_profile_attach): forward
 * and backward by op class (embedding, norms, projections, CCA convolutions, QK norm + RoPE, attention,
 * router, dispatch, experts, head), with each class's matmul time and rate, the bf16 operand staging,
 * and how many oneDNN primitives the timed steps created. With -o writes DIR/bench_step.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/config.h"
#include "zaya/engine.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/matmul.h"
#include "zaya/model.h"
#include "zaya/optim.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

enum { P_ZERO, P_FWD, P_BWD, P_NORM, P_ADAMW, P_MUON, P_NS, P_SYNC, P_STEP, NP };
static const char *const g_names[NP] = {"zero_grad",   "forward", "backward", "grad norm", "AdamW",
                                        "Muon (all)", "  of which Newton-Schulz", "bf16 shadow", "step"};
static const char *const g_keys[NP] = {"zero_grad_s", "forward_s", "backward_s", "grad_norm_s", "adamw_s",
                                       "muon_s",      "muon_ns_s", "sync_s",     "step_s"};

static int fail(const char *what) {
    fprintf(stderr, "bench_step: error: %s: %s\n", what, zaya_error_message());
    return 1;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    int threads = 0, steps = 5;
    int64_t B = 8, T = 256, ns_batch = 0;
    const char *out = NULL, *config = NULL, *dts = "bf16";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc) B = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--seq") && i + 1 < argc) T = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) dts = argv[++i];
        else if (!strcmp(argv[i], "--ns-batch") && i + 1 < argc) ns_batch = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] != '-' && !config) config = argv[i];
        else config = NULL, i = argc;
    }
    if (!config || steps < 1 || steps > 1000 || B < 1 || T < 1 || (strcmp(dts, "f32") && strcmp(dts, "bf16"))) {
        fprintf(stderr, "usage: bench_step [--threads N] [--steps S (1..1000)] [--batch B] [--seq T] "
                        "[--dtype f32|bf16] [--ns-batch FLOATS] [-o DIR] CONFIG\n");
        return 2;
    }
    const zaya_dtype dt = strcmp(dts, "bf16") ? ZAYA_DTYPE_F32 : ZAYA_DTYPE_BF16;
    threads = zaya_threads_init(threads);
    zaya_config cfg;
    if (zaya_config_resolve(config, &cfg) != ZAYA_OK) return fail(config);
    if (T > cfg.max_position_embeddings) {
        fprintf(stderr, "bench_step: error: --seq %lld exceeds max_position_embeddings %lld\n", (long long)T,
                (long long)cfg.max_position_embeddings);
        return 2;
    }
    zaya_model m;
    if (zaya_model_init(&m, &cfg, dt) != ZAYA_OK) return fail("model");
    zaya_model_init_weights(&m, 1234);
    zaya_model_sync_weights(&m);
    zaya_backend *be = NULL;
    zaya_engine *eng = NULL;
    if (zaya_backend_cpu_init(&be) != ZAYA_OK || zaya_engine_init(&eng, be, &m) != ZAYA_OK) return fail("engine");
    if (zaya_engine_plan(eng, B, T) != ZAYA_OK) return fail("plan");
    const int64_t n = B * T;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)n), *tgt = malloc(sizeof(int32_t) * (size_t)n);
    double *t = calloc((size_t)(NP * (steps + 1)), sizeof(double));
    if (!ids || !tgt || !t) {
        fprintf(stderr, "bench_step: error: out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < n; i++) { /* the tokens of `zaya bench train` */
        ids[i] = (int32_t)((i * 2654435761u) % (uint64_t)cfg.vocab_size);
        tgt[i] = (int32_t)((i * 40503u + 7) % (uint64_t)cfg.vocab_size);
    }
    zaya_optim_plan plan;
    zaya_optim opt;
    zaya_optim_config oc;
    zaya_optim_config_default(&oc);
    oc.muon_ns_dtype = dt;
    oc.muon_batch_floats = ns_batch;
    if (zaya_optim_plan_build(m.tensors, m.ntensors, 1, 0, &plan) != ZAYA_OK ||
        zaya_optim_init(&opt, &plan, &oc, 0) != ZAYA_OK)
        return fail("optimizer");
    double ns_gflop = 0;
    int nmuon = 0;
    for (int i = 0; i < plan.nunits; i++)
        if (plan.units[i].kind == ZAYA_UNIT_MUON) {
            ns_gflop += zaya_muon_ns_flops(plan.units[i].rows, plan.units[i].cols, oc.muon_ns_steps) * 1e-9;
            nmuon++;
        }
    int prims_warm = 0; /* oneDNN primitives cached after the warm-up step */
    /* per-phase model profile of the timed steps (step 0 is a warm-up) */
    zaya_model_profile prof, *pstep = calloc((size_t)steps + 1, sizeof *pstep);
    if (!pstep) {
        fprintf(stderr, "bench_step: error: out of memory\n");
        return 1;
    }
    for (int s = 0; s <= steps; s++) { /* s = 0 warms up (primitive creation, first touch) */
        double *ts = t + (size_t)s * NP, c[8];
        float loss = 0;
        zaya_engine_profile_attach(eng, &pstep[s]);
        c[0] = zaya_now_s();
        if (zaya_engine_zero_grad(eng) != ZAYA_OK) return fail("zero_grad");
        c[1] = zaya_now_s();
        if (zaya_engine_forward(eng, ids, tgt, 1, &loss) != ZAYA_OK) return fail("forward");
        c[2] = zaya_now_s();
        if (zaya_engine_backward(eng) != ZAYA_OK) return fail("backward");
        c[3] = zaya_now_s();
        double sq = 0;
        if (zaya_optim_grad_sqnorm_local(&opt, m.grads, &sq) != ZAYA_OK) return fail("grad norm");
        const double scale = zaya_optim_clip_scale(sqrt(sq), 1.0);
        c[4] = zaya_now_s();
        zaya_optim_step_adamw(&opt, m.params, m.grads, 1e-4, scale);
        c[5] = zaya_now_s();
        zaya_optim_step_muon(&opt, m.params, m.grads, 1e-4, scale);
        c[6] = zaya_now_s();
        zaya_model_sync_weights(&m);
        c[7] = zaya_now_s();
        for (int p = 0; p < 7; p++) ts[p < P_NS ? p : p + 1] = c[p + 1] - c[p];
        ts[P_NS] = opt.muon_ns_s;
        ts[P_STEP] = c[7] - c[0];
        zaya_engine_profile_attach(eng, NULL);
        if (s == 0) prims_warm = zaya_matmul_cache_size();
    }
    /* the profile of the median step (by step time) stands for the run */
    {
        int best = 1;
        double col[1001];
        for (int s = 1; s <= steps; s++) col[s - 1] = t[(size_t)s * NP + P_STEP];
        const double mstep = median(col, steps);
        for (int s = 1; s <= steps; s++)
            if (fabs(t[(size_t)s * NP + P_STEP] - mstep) < fabs(t[(size_t)best * NP + P_STEP] - mstep)) best = s;
        prof = pstep[best];
        printf("# engine profile of the median step (step %d): wall ms per phase, of which matmul calls (bf16\n"
               "# staging included) and their rate; the head's backward GEMMs run in the forward pass\n", best);
        printf("%-18s %9s %9s %9s %9s %9s %9s %9s\n", "phase", "fwd ms", "gemm ms", "GFLOP/s", "bwd ms", "gemm ms",
               "GFLOP/s", "share");
        double tot[2] = {0, 0}, g[2] = {0, 0}, fl[2] = {0, 0}, st[2] = {0, 0};
        for (int p = 0; p < ZAYA_PROF_NPHASES; p++)
            for (int d = 0; d < 2; d++) {
                tot[d] += prof.s[d][p], g[d] += prof.gemm_s[d][p], fl[d] += prof.flop[d][p];
                st[d] += prof.stage_s[d][p];
            }
        for (int p = 0; p < ZAYA_PROF_NPHASES; p++) {
            double r[2];
            for (int d = 0; d < 2; d++) r[d] = prof.gemm_s[d][p] > 0 ? prof.flop[d][p] / prof.gemm_s[d][p] * 1e-9 : 0;
            printf("%-18s %9.2f %9.2f %9.1f %9.2f %9.2f %9.1f %8.1f%%\n", zaya_prof_phase_name((zaya_prof_phase)p),
                   prof.s[0][p] * 1e3, prof.gemm_s[0][p] * 1e3, r[0], prof.s[1][p] * 1e3, prof.gemm_s[1][p] * 1e3, r[1],
                   100 * (prof.s[0][p] + prof.s[1][p]) / (tot[0] + tot[1]));
        }
        printf("%-18s %9.2f %9.2f %9.1f %9.2f %9.2f %9.1f\n", "total", tot[0] * 1e3, g[0] * 1e3,
               g[0] > 0 ? fl[0] / g[0] * 1e-9 : 0, tot[1] * 1e3, g[1] * 1e3, g[1] > 0 ? fl[1] / g[1] * 1e-9 : 0);
        printf("# bf16 operand staging: %.2f ms forward, %.2f ms backward; outside matmul calls: %.2f ms\n",
               st[0] * 1e3, st[1] * 1e3, (tot[0] - g[0] + tot[1] - g[1]) * 1e3);
    }
    printf("# matmul primitives: %d after the warm-up step, %d after the timed steps (each new one is created in "
           "a step)\n", prims_warm, zaya_matmul_cache_size());
    static const char *const sched_name[] = {"auto", "pool", "threads"};
    printf("# Muon schedule of the last step: %s\n", sched_name[opt.muon_last_schedule]);
    double med[NP], col[1001];
    for (int p = 0; p < NP; p++) {
        for (int s = 0; s < steps; s++) col[s] = t[(size_t)(s + 1) * NP + p];
        med[p] = median(col, steps);
    }
    printf("# bench_step %s, %s, batch %lld x seq %lld = %lld tokens, %d threads, median of %d steps\n", cfg.name, dts,
           (long long)B, (long long)T, (long long)n, threads, steps);
    printf("# Muon: %d matrices, Newton-Schulz %.2f GFLOP per step (%.1f GFLOP/s)\n", nmuon, ns_gflop,
           med[P_NS] > 0 ? ns_gflop / med[P_NS] : ns_gflop / med[P_MUON]);
    printf("%-26s %10s %8s\n", "phase", "ms", "share");
    for (int p = 0; p < NP; p++) {
        if (p == P_NS && med[p] == 0) { /* an optimizer without Newton-Schulz timers */
            printf("%-26s %10s %8s\n", g_names[p], "-", "-");
            continue;
        }
        printf("%-26s %10.2f %7.1f%%\n", g_names[p], med[p] * 1e3, 100 * med[p] / med[P_STEP]);
    }
    printf("tokens/s %.0f\n", (double)n / med[P_STEP]);
    if (out) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "config", cfg.name);
        cJSON_AddStringToObject(root, "dtype", dts);
        cJSON_AddNumberToObject(root, "batch", (double)B);
        cJSON_AddNumberToObject(root, "seq", (double)T);
        cJSON_AddNumberToObject(root, "threads", threads);
        cJSON_AddNumberToObject(root, "steps", steps);
        cJSON_AddNumberToObject(root, "ns_gflop", ns_gflop);
        for (int p = 0; p < NP; p++) cJSON_AddNumberToObject(root, g_keys[p], med[p]);
        cJSON *ph = cJSON_AddArrayToObject(root, "model_phases");
        for (int p = 0; p < ZAYA_PROF_NPHASES; p++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "phase", zaya_prof_phase_name((zaya_prof_phase)p));
            cJSON_AddNumberToObject(o, "forward_s", prof.s[0][p]);
            cJSON_AddNumberToObject(o, "forward_gemm_s", prof.gemm_s[0][p]);
            cJSON_AddNumberToObject(o, "forward_gemm_flop", prof.flop[0][p]);
            cJSON_AddNumberToObject(o, "backward_s", prof.s[1][p]);
            cJSON_AddNumberToObject(o, "backward_gemm_s", prof.gemm_s[1][p]);
            cJSON_AddNumberToObject(o, "backward_gemm_flop", prof.flop[1][p]);
            cJSON_AddItemToArray(ph, o);
        }
        cJSON_AddNumberToObject(root, "tokens_per_s", (double)n / med[P_STEP]);
        char path[1024];
        if (zaya_mkdir_p(out) != ZAYA_OK || zaya_path_join(path, sizeof path, out, "bench_step.json") != ZAYA_OK ||
            zaya_json_write_file(path, root, 1) != ZAYA_OK)
            return fail("writing results");
        cJSON_Delete(root);
    }
    zaya_optim_free(&opt);
    zaya_optim_plan_free(&plan);
    zaya_engine_free(eng);
    zaya_backend_free(be);
    zaya_model_free(&m);
    free(ids), free(tgt), free(t), free(pstep);
    return 0;
}

/* Time of one optimizer step (Muon + AdamW + gradient norm) at a model's shapes, f32 and bf16
 * Newton-Schulz, against the oneDNN f32 / bf16 matmul peak measured in the same run.
 * usage: bench_optim [--threads N] [--reps R] [--ns-batch FLOATS] [-o DIR] [CONFIG...]
 *   CONFIG: a preset or a config.json (default: zaya1-tiny zaya1-small); --ns-batch sets
 *   zaya_optim_config.muon_batch_floats (0: the default).
 * Prints a table; with -o writes DIR/bench_optim.json. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/bench.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/optim.h"
#include "zaya/rng.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

static int fail(const char *what) {
    fprintf(stderr, "bench_optim: error: %s: %s\n", what, zaya_error_message());
    return 1;
}

typedef struct result {
    double norm_s, adamw_s, muon_s, step_s, ns_gflop, ns_rate;
} result;

static double best_of(double a, double b) { return a < b ? a : b; }

static int run(const char *preset, zaya_dtype ns_dtype, int64_t ns_batch, int reps, result *res) {
    zaya_config c;
    if (zaya_config_resolve(preset, &c) != ZAYA_OK) return fail(preset);
    zaya_tensor_info *t = NULL;
    int n = 0;
    int64_t nf = 0;
    if (zaya_layout_build_public(&c, &t, &n, &nf) != ZAYA_OK) return fail("layout");
    zaya_optim_plan plan;
    zaya_optim opt;
    zaya_optim_config cfg;
    zaya_optim_config_default(&cfg);
    cfg.muon_ns_dtype = ns_dtype;
    cfg.muon_batch_floats = ns_batch;
    if (zaya_optim_plan_build(t, n, 1, 0, &plan) != ZAYA_OK || zaya_optim_init(&opt, &plan, &cfg, 0) != ZAYA_OK)
        return fail("optimizer");
    float *p = zaya_malloc(sizeof(float) * (size_t)nf), *g = zaya_malloc(sizeof(float) * (size_t)nf);
    if (!p || !g) {
        fprintf(stderr, "bench_optim: error: cannot allocate 2 x %lld floats\n", (long long)nf);
        return 1;
    }
    zaya_rng_fill_uniform(p, (size_t)nf, 1, 1, 0, -0.05f, 0.05f);
    zaya_rng_fill_uniform(g, (size_t)nf, 1, 2, 0, -1e-3f, 1e-3f);
    res->ns_gflop = 0;
    for (int i = 0; i < plan.nunits; i++)
        if (plan.units[i].kind == ZAYA_UNIT_MUON)
            res->ns_gflop += zaya_muon_ns_flops(plan.units[i].rows, plan.units[i].cols, cfg.muon_ns_steps) * 1e-9;
    res->norm_s = res->adamw_s = res->muon_s = res->step_s = INFINITY;
    for (int r = 0; r <= reps; r++) { /* r = 0 warms up (oneDNN primitive creation, page faults) */
        double t0 = zaya_now_s(), sq;
        if (zaya_optim_grad_sqnorm_local(&opt, g, &sq) != ZAYA_OK) return fail("grad norm");
        double t1 = zaya_now_s();
        zaya_optim_step_adamw(&opt, p, g, 1e-3, zaya_optim_clip_scale(sqrt(sq), 1.0));
        double t2 = zaya_now_s();
        zaya_optim_step_muon(&opt, p, g, 1e-3, 1.0);
        double t3 = zaya_now_s();
        if (r == 0) continue;
        res->norm_s = best_of(res->norm_s, t1 - t0);
        res->adamw_s = best_of(res->adamw_s, t2 - t1);
        res->muon_s = best_of(res->muon_s, t3 - t2);
        res->step_s = best_of(res->step_s, t3 - t0);
    }
    res->ns_rate = res->ns_gflop / res->muon_s;
    zaya_free(p);
    zaya_free(g);
    zaya_optim_free(&opt);
    zaya_optim_plan_free(&plan);
    free(t);
    return 0;
}

int main(int argc, char **argv) {
    int threads = 0, reps = 3;
    int64_t ns_batch = 0;
    const char *out = NULL;
    const char *presets[8];
    int np = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ns-batch") && i + 1 < argc) ns_batch = atoll(argv[++i]);
        else if (!strcmp(argv[i], "-o") && i + 1 < argc) out = argv[++i];
        else if (argv[i][0] != '-' && np < 8) presets[np++] = argv[i];
        else {
            fprintf(stderr, "usage: bench_optim [--threads N] [--reps R] [--ns-batch FLOATS] [-o DIR] [CONFIG...]\n");
            return 2;
        }
    }
    if (np == 0) {
        presets[np++] = "zaya1-tiny";
        presets[np++] = "zaya1-small";
    }
    if (reps < 1) reps = 1;
    threads = zaya_threads_init(threads);
    double peak[2] = {zaya_bench_matmul_peak_gflops(ZAYA_DTYPE_F32), zaya_bench_matmul_peak_gflops(ZAYA_DTYPE_BF16)};
    printf("optimizer step, %d threads, best of %d (matmul peak f32 %.1f GFLOP/s, bf16 %.1f GFLOP/s)\n", threads, reps,
           peak[0], peak[1]);
    printf("%-12s %-5s %10s %10s %10s %10s %10s %10s %8s\n", "preset", "ns", "step ms", "muon ms", "adamw ms", "norm ms",
           "NS GFLOP", "NS GF/s", "of peak");
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "threads", threads);
    cJSON_AddNumberToObject(root, "peak_f32_gflops", peak[0]);
    cJSON_AddNumberToObject(root, "peak_bf16_gflops", peak[1]);
    cJSON *arr = cJSON_AddArrayToObject(root, "results");
    for (int pi = 0; pi < np; pi++)
        for (int d = 0; d < 2; d++) {
            result r;
            if (run(presets[pi], d ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, ns_batch, reps, &r)) return 1;
            printf("%-12s %-5s %10.1f %10.1f %10.1f %10.1f %10.2f %10.1f %7.0f%%\n", presets[pi], d ? "bf16" : "f32",
                   r.step_s * 1e3, r.muon_s * 1e3, r.adamw_s * 1e3, r.norm_s * 1e3, r.ns_gflop, r.ns_rate,
                   peak[d] > 0 ? 100 * r.ns_rate / peak[d] : 0.0);
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "preset", presets[pi]);
            cJSON_AddStringToObject(o, "ns_dtype", d ? "bf16" : "f32");
            cJSON_AddNumberToObject(o, "step_s", r.step_s);
            cJSON_AddNumberToObject(o, "muon_s", r.muon_s);
            cJSON_AddNumberToObject(o, "adamw_s", r.adamw_s);
            cJSON_AddNumberToObject(o, "grad_norm_s", r.norm_s);
            cJSON_AddNumberToObject(o, "ns_gflop", r.ns_gflop);
            cJSON_AddNumberToObject(o, "ns_gflops_rate", r.ns_rate);
            cJSON_AddItemToArray(arr, o);
        }
    if (out) {
        char path[1024];
        if (zaya_mkdir_p(out) != ZAYA_OK || zaya_path_join(path, sizeof path, out, "bench_optim.json") != ZAYA_OK ||
            zaya_json_write_file(path, root, 1) != ZAYA_OK)
            return fail("writing results");
        printf("results in %s\n", path);
    }
    cJSON_Delete(root);
    return 0;
}

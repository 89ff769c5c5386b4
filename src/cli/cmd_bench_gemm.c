/* zaya bench gemm: flags over zaya_bench_gemm_run (src/bench/gemm_run.c). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/bench_gemm.h"
#include "zaya/size.h"

int zaya_cmd_bench_gemm(int argc, char **argv) {
    zaya_bench_gemm_opts g = {.dtype = "all", .out = "out/bench-gemm", .iters = 10, .warmup = 2, .batch = 1, .seq = 2048,
                             .model_shapes = zaya_size_gemm_model_shapes};
    const zaya_flag flags[] = {
        {"dtype", 'd', ZAYA_FLAG_STRING, &g.dtype, "f32|bf16|all", "input dtype (bf16: f32 accumulation/output; --device cuda also f16, tf32 = f32) (default: all)"},
        {"device", 0, ZAYA_FLAG_STRING, &g.device, "cpu|cuda[:N]", "where the GEMMs run: oneDNN on the CPU or cuBLASLt on a CUDA device (default: cpu)"},
        {"iters", 'n', ZAYA_FLAG_INT, &g.iters, "N", "timed samples per shape (default: 10)"},
        {"warmup", 'w', ZAYA_FLAG_INT, &g.warmup, "N", "untimed calls per shape first (default: 2)"},
        {"quick", 0, ZAYA_FLAG_BOOL, &g.quick, NULL, "fewer and smaller shapes (default: off)"},
        {"cpu-time", 0, ZAYA_FLAG_BOOL, &g.thread_cpu, NULL, "time with the thread CPU clock (needs --threads 1): ignores time descheduled on a shared machine (default: wall clock)"},
        {"only", 0, ZAYA_FLAG_STRING, &g.only, "GROUPS", "comma-separated shape groups to run: square,align,align_m,model (sweep) or attn,router,expert,mlp,head (--from-config) (default: all)"},
        {"from-config", 0, ZAYA_FLAG_STRING, &g.config, "CONFIG", "benchmark every GEMM of the model in this HF config.json (or a preset: zaya1-8b, zaya1-small, zaya1-tiny)"},
        {"batch", 0, ZAYA_FLAG_I64, &g.batch, "B", "sequences per step with --from-config (default: 1)"},
        {"seq", 0, ZAYA_FLAG_I64, &g.seq, "T", "tokens per sequence with --from-config (default: 2048)"},
        ZAYA_FLAG_THREADS(&g.threads),
        ZAYA_FLAG_OUTDIR(&g.out, "out/bench-gemm"),
    };
    const zaya_cmd_spec spec = {
        "bench gemm", "GEMM throughput (zaya matmul vs oneDNN direct, % of measured peak) over shapes or a model's GEMMs",
        "[options]",
        "Without --from-config: square sizes, alignment perturbations (multiples of 64/128/256 and +-1, odd sizes),\n"
        "routed-token counts for the expert GEMM, and ZAYA1 projection shapes. With --from-config: the forward,\n"
        "input-gradient and weight-gradient GEMM of every linear layer (attention projections, router, experts at\n"
        "B*T*top_k/num_experts tokens, or the dense MLP; tied LM head) from the GEMM list `zaya size check` rates,\n"
        "and the predicted GEMM time per training step.\n"
        "Peak = best oneDNN matmul rate at large square shapes measured in the same run. ratio = zaya / oneDNN\n"
        "called directly at the same shape (best samples). Writes gemm.json, gemm.csv and PNG plots to -o DIR.\n"
        "--device cuda[:N]: the same shapes through cuBLASLt (bf16, f16, tf32; f32 accumulation and output), the\n"
        "heuristic's algorithm per shape, % of the peak measured at 8192^3 / 16384^3 and of the datasheet peak,\n"
        "each result checked on 64 sampled entries against an f32 reference kernel (docs/gpu.md).",
        flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos > 0) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    zaya_device dev = {ZAYA_DEVICE_CPU, 0};
    if (zaya_device_parse(g.device ? g.device : "cpu", &dev) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "option '--device': %s", zaya_error_message());
    if (dev.kind == ZAYA_DEVICE_CUDA) {
        zaya_gpu_dtype t;
        if (strcmp(g.dtype, "all") && zaya_gpu_dtype_parse(g.dtype, &t) != ZAYA_OK)
            return zaya_flags_usage_error(&spec, "option '--dtype': '%s' is not bf16, f16, tf32, f32 or all", g.dtype);
        if (g.thread_cpu) return zaya_flags_usage_error(&spec, "--cpu-time does not apply to --device cuda (events time the device)");
    } else if (strcmp(g.dtype, "f32") && strcmp(g.dtype, "bf16") && strcmp(g.dtype, "all"))
        return zaya_flags_usage_error(&spec, "option '--dtype': '%s' is not f32, bf16 or all", g.dtype);
    if (g.iters < 1) return zaya_flags_usage_error(&spec, "option '-n': must be >= 1, got %d", g.iters);
    if (g.warmup < 0) return zaya_flags_usage_error(&spec, "option '-w': must be >= 0, got %d", g.warmup);
    if (g.batch < 1 || g.batch > (1 << 20)) return zaya_flags_usage_error(&spec, "option '--batch': must be in [1, 1048576], got %lld", (long long)g.batch);
    if (g.seq < 1 || g.seq > (1 << 24)) return zaya_flags_usage_error(&spec, "option '--seq': must be in [1, 16777216], got %lld", (long long)g.seq);
    if (g.batch * g.seq > (1 << 24)) return zaya_flags_usage_error(&spec, "--batch x --seq = %lld tokens is more than 16M", (long long)(g.batch * g.seq));
    if (g.thread_cpu && g.threads != 1) return zaya_flags_usage_error(&spec, "--cpu-time needs --threads 1 (all work on the timing thread)");
    if (zaya_bench_gemm_run(&g, stdout) != ZAYA_OK) return zaya_cli_error("bench gemm", NULL);
    return 0;
}

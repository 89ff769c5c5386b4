/* zaya bench model / bench train: flags over zaya_bench_model_run (src/bench/model_bench.c). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/bench_model.h"
#include "zaya/gpu.h"

#define TORCH_PYTHON ZAYA_BENCH_MODEL_PYTHON

static const char *g_details_train =
    "Like `zaya bench model`, but the second measurement is a whole training step: zero_grad, forward,\n"
    "backward, global gradient norm, clipped Muon (hidden matrices, every expert separately, Newton-Schulz\n"
    "in the model's dtype) + AdamW update and the bf16 shadow refresh. The PyTorch reference runs the same\n"
    "step (torch.optim.AdamW and Muon from its formula, Newton-Schulz batched over each expert stack).\n"
    "MFU counts model FLOPs only (the\n"
    "optimizer's Newton-Schulz FLOPs are overhead). Writes train.json and train.csv.";

static const char *g_details =
    "Times the training engine's forward (with the loss) and forward + backward (zero_grad, forward,\n"
    "backward) over the CPU backend (or --device's) on\n"
    "deterministic weights (zaya_model_init_weights) and synthetic tokens; best of -n samples after a\n"
    "warm-up. FLOPs come from zaya_model_costs_at (training = 3x forward); MFU divides by the oneDNN\n"
    "matmul peak of the same dtype measured at the start of this run. The PyTorch reference\n"
    "(tests/ref/zaya_ref.py --bench: same architecture, same thread count, fused causal attention) runs\n"
    "as a subprocess of --torch-python, by default the source tree's build/hfvenv (PyTorch >= 2.6 from\n"
    "PyPI: scripts/setup.sh --hf), else " TORCH_PYTHON " (Debian's PyTorch 1.13 on OpenBLAS, labelled a\n"
    "fallback); without one only zaya is reported. The peer runs eager f32, eager under bf16 autocast\n"
    "(beside zaya bf16) and torch.compile of both (--no-compile skips it; each variant has\n"
    "--torch-timeout seconds, compilation included), and prints its own torch.mm rate beside zaya's\n"
    "measured peak. Ratios are torch time / zaya time (> 1: zaya faster). Writes model.json and model.csv.";

static int bench_model_or_train(int argc, char **argv, int train) {
    const char *name = train ? "bench train" : "bench model";
    const char *config = "zaya1-tiny", *dtype_s = "both", *outdir = train ? "out/bench-train" : "out/bench-model";
    const char *script = NULL, *python = NULL, *optimizer = "muon";
    int64_t B = 8, T = 256;
    int reps = 3, no_torch = 0, threads = 0, no_compile = 0, torch_timeout = 600;
    const char *device = NULL;
    int engine = 0;
    zaya_flag flags[] = {
        {"config", 'c', ZAYA_FLAG_STRING, &config, "C", "preset (zaya1-tiny, zaya1-small, zaya1-8b) or config.json (default zaya1-tiny)"},
        {"batch", 'b', ZAYA_FLAG_I64, &B, "B", "sequences per step (default 8)"},
        {"seq", 't', ZAYA_FLAG_I64, &T, "T", "tokens per sequence (default 256)"},
        {"dtype", 0, ZAYA_FLAG_STRING, &dtype_s, "D", "f32, bf16 or both (default both)"},
        {"iters", 'n', ZAYA_FLAG_INT, &reps, "N", "timed samples, best reported (default 3)"},
        {"no-torch", 0, ZAYA_FLAG_BOOL, &no_torch, NULL, "skip the PyTorch reference"},
        {"torch-script", 0, ZAYA_FLAG_STRING, &script, "PATH", "the reference script (default: the source tree's tests/ref/zaya_ref.py)"},
        {"torch-python", 0, ZAYA_FLAG_STRING, &python, "PATH", "the peer's interpreter (default: build/hfvenv/bin/python of the source tree, else " TORCH_PYTHON ")"},
        {"no-compile", 0, ZAYA_FLAG_BOOL, &no_compile, NULL, "skip the torch.compile variants of the peer"},
        {"torch-timeout", 0, ZAYA_FLAG_INT, &torch_timeout, "S", "seconds per peer variant, compilation included (default 600)"},
        ZAYA_FLAG_THREADS(&threads),
        {"device", 0, ZAYA_FLAG_STRING, &device, "cpu|cuda[:N]", "the engine's backend for zaya's steps: the CPU one, or a CUDA device with the peer on the same GPU (default: cpu)"},
        {"engine", 0, ZAYA_FLAG_BOOL, &engine, NULL, "deprecated, does nothing: zaya's steps always run on the engine"},
        {"out", 'o', ZAYA_FLAG_STRING, &outdir, "DIR", "output directory (default: out/bench-model or out/bench-train)"},
        {"optimizer", 0, ZAYA_FLAG_STRING, &optimizer, "muon|adamw",
         "bench train: Muon for hidden matrices + AdamW, or AdamW everywhere, in zaya and the peer (default: muon)"},
    };
    const int nflags = (int)(sizeof flags / sizeof flags[0]) - !train; /* --optimizer: bench train only */
    zaya_cmd_spec spec = {name,
                          train ? "training steps (forward, backward, clipped Muon + AdamW update) vs PyTorch eager"
                                : "ZAYA1 forward/backward time, tokens/s, GFLOP/s and MFU vs PyTorch eager",
                          "[options]", train ? g_details_train : g_details, flags, nflags};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (B < 1 || B > 4096) return zaya_flags_usage_error(&spec, "--batch must be in 1..4096 (got %lld)", (long long)B);
    if (T < 1 || T > 1 << 20) return zaya_flags_usage_error(&spec, "--seq must be >= 1 (got %lld)", (long long)T);
    if (reps < 1 || reps > 1000) return zaya_flags_usage_error(&spec, "--iters must be in 1..1000 (got %d)", reps);
    if (threads < 0) return zaya_flags_usage_error(&spec, "--threads must be >= 0 (got %d)", threads);
    if (torch_timeout < 1 || torch_timeout > 86400)
        return zaya_flags_usage_error(&spec, "--torch-timeout must be in 1..86400 seconds (got %d)", torch_timeout);
    if (strcmp(optimizer, "muon") && strcmp(optimizer, "adamw"))
        return zaya_flags_usage_error(&spec, "--optimizer must be muon or adamw, got '%s'", optimizer);
    int want[2] = {!strcmp(dtype_s, "f32") || !strcmp(dtype_s, "both"), !strcmp(dtype_s, "bf16") || !strcmp(dtype_s, "both")};
    if (!want[0] && !want[1]) return zaya_flags_usage_error(&spec, "--dtype: unknown dtype '%s' (f32, bf16 or both)", dtype_s);
    zaya_bench_model_opts o = {.train = train, .config = config, .out = outdir, .torch_script = script, .batch = B, .seq = T,
                               .iters = reps, .no_torch = no_torch, .threads = threads, .f32 = want[0], .bf16 = want[1],
                               .torch_python = python, .no_compile = no_compile, .torch_timeout_s = torch_timeout,
                               .adamw_only = !strcmp(optimizer, "adamw"), .device = device, .engine = engine};
    if (device) {
        zaya_device dv;
        if (zaya_device_parse(device, &dv) != ZAYA_OK)
            return zaya_flags_usage_error(&spec, "--device must be cpu, cuda or cuda:N, got '%s'", device);
        if (dv.kind != ZAYA_DEVICE_CPU && engine)
            return zaya_flags_usage_error(&spec, "--engine selects the engine on the CPU; with --device %s it is implied", device);
    }
    if (zaya_bench_model_run(&o, stdout) != ZAYA_OK) return zaya_cli_error(name, NULL);
    return 0;
}

int zaya_cmd_bench_model(int argc, char **argv) { return bench_model_or_train(argc, argv, 0); }
int zaya_cmd_bench_train(int argc, char **argv) { return bench_model_or_train(argc, argv, 1); }

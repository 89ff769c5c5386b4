/* zaya bench kernels: flags over zaya_bench_kernels_run (src/bench/kernels.c). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/bench_kernels.h"

static const char *g_details =
    "Shape sets: zaya1-small (B=4, T=512) and an 8b-like block (hidden 2048, 8x128 q heads, 2x128 kv heads,\n"
    "expert width 2048, B=2, T=2048; attention also at T=512 and 1024). --quick uses T=256 / 512 and\n"
    "fewer samples. Compute-bound rows (attention, convolutions, matmul) give GFLOP/s and the fraction of\n"
    "the peak (best oneDNN matmul called directly at square n, f32 and bf16 separately, measured now);\n"
    "each kernel's samples alternate with samples of oneDNN at the peak shape. Memory-bound rows give\n"
    "GB/s (reads + writes, no write-allocate traffic) and the fraction of a STREAM triad (double arrays\n"
    ">= 4x the last-level cache) whose samples alternate with the kernel's; attention_decode (one row per\n"
    "sequence against its KV cache) counts as memory-bound, and rows whose bytes fit in the LLC are marked\n"
    "as cache figures. Acceptance: the matmul\n"
    "wrapper >= 95% of oneDNN called directly at the same shapes; memory-bound kernels >= 50% of triad.\n"
    "Writes kernels.json and kernels.csv.";

int zaya_cmd_bench_kernels(int argc, char **argv) {
    zaya_bench_kernels_opts ko = {.out = "out/bench-kernels"};
    zaya_flag flags[] = {
        ZAYA_FLAG_THREADS(&ko.threads),
        {"quick", 0, ZAYA_FLAG_BOOL, &ko.quick, NULL, "smaller shapes and fewer samples (seconds, for tests)"},
        {"reps", 'n', ZAYA_FLAG_INT, &ko.reps, "N", "timed samples per kernel (default 5, quick 2)"},
        {"only", 0, ZAYA_FLAG_STRING, &ko.only, "TEXT", "run only kernels whose name contains TEXT (default: all)"},
        ZAYA_FLAG_OUTDIR(&ko.out, "out/bench-kernels"),
    };
    zaya_cmd_spec spec = {"bench kernels", "every CPU kernel at ZAYA1 shapes vs the measured matmul peak and STREAM triad",
                          "[options]", g_details, flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (ko.threads < 0) return zaya_flags_usage_error(&spec, "--threads must be >= 0 (got %d)", ko.threads);
    if (ko.reps < 0 || ko.reps > 1000) return zaya_flags_usage_error(&spec, "--reps must be in 1..1000 (got %d)", ko.reps);
    if (zaya_bench_kernels_run(&ko, stdout) != ZAYA_OK) return zaya_cli_error("bench kernels", NULL);
    return 0;
}

/* zaya ckpt bench: flags over zaya_ckpt_bench_run (src/ckpt/bench.c). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/ckpt.h"

int zaya_cmd_ckpt_bench(int argc, char **argv) {
    zaya_ckpt_bench_opts o = {.out = "out/ckpt-bench", .config = "zaya1-small", .ranks = 2, .repeats = 3};
    zaya_flag flags[] = {
        ZAYA_FLAG_OUTDIR(&o.out, "out/ckpt-bench"),
        {"config", 'c', ZAYA_FLAG_STRING, &o.config, "SPEC", "model whose parameter block is saved (default: zaya1-small)"},
        {"dir", 0, ZAYA_FLAG_STRING, &o.dir, "DIR", "where checkpoints are written (default: OUT/scratch)"},
        {"ranks", 'r', ZAYA_FLAG_INT, &o.ranks, "N", "in-process ranks writing in parallel (default: 2)"},
        {"repeats", 0, ZAYA_FLAG_INT, &o.repeats, "N", "repetitions of every measurement; the best is reported (default: 3)"},
        ZAYA_FLAG_THREADS(&o.threads),
    };
    zaya_cmd_spec spec = {"ckpt bench", "checkpoint save throughput vs disk write throughput, async stall, naive baseline",
                          "[options]",
                          "State: the model's f32 parameter block plus AdamW m and v (3 x 4 bytes per parameter), m and v "
                          "sharded over the ranks. Every write is fsynced. Results: table on stdout, ckpt_bench.json, "
                          "ckpt_bench.csv and ckpt_bench.png in OUT.",
                          flags, 6};
    zaya_args a;
    int rc = zaya_flags_parse(&spec, argc, argv, &a);
    if (rc >= 0) return rc;
    if (a.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", a.pos[0]);
    if (o.ranks < 1 || o.ranks > 64) return zaya_flags_usage_error(&spec, "--ranks must be in [1, 64]");
    if (o.repeats < 1 || o.repeats > 20) return zaya_flags_usage_error(&spec, "--repeats must be in [1, 20]");
    if (zaya_ckpt_bench_run(&o, stdout) != ZAYA_OK) return zaya_cli_error("ckpt bench", NULL);
    return 0;
}

/* zaya bench infer: flags over zaya_infer_bench_run (src/infer/bench.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/infer_bench.h"

#define MAXL ZAYA_INFER_BENCH_MAX_LIST

static int parse_list(const char *s, int64_t *out, int max) {
    int n = 0;
    while (*s && n < max) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v < 0) return -1;
        out[n++] = v;
        s = end;
        if (*s == ',') s++;
        else if (*s) return -1;
    }
    return n;
}

int zaya_cmd_bench_infer(int argc, char **argv) {
    const char *config = "zaya1-small", *checkpoint = NULL, *dtypes = "f32,bf16", *plist = "128", *dlist = "0,512", *blist = "1,4", *out = "results/bench-infer";
    int64_t ntg = 32, triad_mib = 128;
    int reps = 3, threads = 0, gemv_only = 0;
    zaya_flag flags[] = {
        {"config", 'c', ZAYA_FLAG_STRING, &config, "SPEC", "preset or config.json (default: zaya1-small)"},
        {"checkpoint", 0, ZAYA_FLAG_STRING, &checkpoint, "PATH", "model checkpoint instead of random weights"},
        {"dtype", 0, ZAYA_FLAG_STRING, &dtypes, "LIST", "weight dtypes (default: f32,bf16)"},
        {"prompt", 'p', ZAYA_FLAG_STRING, &plist, "LIST", "prompt lengths for prefill (default: 128)"},
        {"gen", 'n', ZAYA_FLAG_I64, &ntg, "N", "decoded tokens per decode test (default: 32)"},
        {"depth", 'd', ZAYA_FLAG_STRING, &dlist, "LIST", "context already cached before each test (default: 0,512)"},
        {"batch", 'b', ZAYA_FLAG_STRING, &blist, "LIST", "sequences per step (default: 1,4)"},
        {"reps", 'r', ZAYA_FLAG_INT, &reps, "R", "repetitions, mean +- stddev (default: 3)"},
        {"triad-mib", 0, ZAYA_FLAG_I64, &triad_mib, "MIB", "size of each STREAM triad array (default: 128)"},
        {"gemv-only", 0, ZAYA_FLAG_BOOL, &gemv_only, NULL, "decode with the own GEMV only (skip the oneDNN M=1 rows)"},
        ZAYA_FLAG_OUTDIR(&out, "results/bench-infer"),
        ZAYA_FLAG_THREADS(&threads),
    };
    zaya_cmd_spec spec = {"bench infer", "prefill and decode tokens/s vs the memory-bandwidth bound", "[options]",
                          "pp<P>: prefill P tokens per sequence; tg<N>: N decode steps; both after <depth> cached "
                          "tokens. Decode rows report the bound = batch / ((active weight bytes + KV bytes read) / "
                          "triad bandwidth) and the fraction of it achieved, with the own GEMV and with oneDNN at M=1.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    int64_t P[MAXL], Dp[MAXL], Bs[MAXL];
    int np = parse_list(plist, P, MAXL), nd = parse_list(dlist, Dp, MAXL), nb = parse_list(blist, Bs, MAXL);
    if (np <= 0 || nd <= 0 || nb <= 0) return zaya_flags_usage_error(&spec, "-p, -d and -b take comma-separated integers");
    for (int i = 0; i < nb; i++)
        if (Bs[i] < 1) return zaya_flags_usage_error(&spec, "batch sizes must be >= 1");
    for (int i = 0; i < np; i++)
        if (P[i] < 1) return zaya_flags_usage_error(&spec, "prompt lengths must be >= 1");
    if (2 * nb * nd * (np + 2) > 1024) return zaya_flags_usage_error(&spec, "too many combinations of -p, -d and -b");
    if (ntg < 1 || reps < 1 || triad_mib < 1) return zaya_flags_usage_error(&spec, "-n, -r and --triad-mib must be >= 1");
    zaya_infer_bench_opts o = {.checkpoint = checkpoint, .config = config, .f32 = strstr(dtypes, "f32") != NULL,
                               .bf16 = strstr(dtypes, "bf16") != NULL, .prompt = P, .nprompt = np, .depth = Dp, .ndepth = nd,
                               .batch = Bs, .nbatch = nb, .gen = ntg, .reps = reps, .triad_mib = triad_mib,
                               .gemv_only = gemv_only, .threads = threads, .out = out};
    if (!o.f32 && !o.bf16) return zaya_flags_usage_error(&spec, "--dtype takes f32, bf16 or f32,bf16");
    if (zaya_infer_bench_run(&o, stdout) != ZAYA_OK) return zaya_cli_error("bench infer", NULL);
    return 0;
}

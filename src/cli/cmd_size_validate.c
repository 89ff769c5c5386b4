/* zaya size validate: flags over zaya_size_validate_step (src/size/validate.c). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/size.h"

int zaya_cmd_size_validate(int argc, char **argv) {
    zaya_size_validate_opts o = {.out = "results/size-validate", .dtype = "bf16", .optimizer = "muon", .batch = 32,
                                 .seq = 128, .steps = 12, .warmup = 4};
    const zaya_flag flags[] = {
        {"hw", 0, ZAYA_FLAG_STRING, &o.hw, "PROFILE", "host | path/to/profile.json from `zaya bench all` (required)"},
        {"profile", 0, ZAYA_FLAG_STRING, &o.profile, "FILE", "profile.json for --hw host"},
        {"data", 'd', ZAYA_FLAG_STRING, &o.data, "DIR", "token shards + tokenizer.json matching CONFIG's vocabulary (required)"},
        {"batch", 0, ZAYA_FLAG_I64, &o.batch, "B", "sequences per optimizer step (default 32)"},
        {"seq", 0, ZAYA_FLAG_I64, &o.seq, "T", "sequence length (default 128)"},
        {"micro-batch", 0, ZAYA_FLAG_I64, &o.micro_batch, "N", "sequences per forward/backward, dividing B (default: B)"},
        {"steps", 0, ZAYA_FLAG_I64, &o.steps, "N", "training steps to run (default 12)"},
        {"warmup", 0, ZAYA_FLAG_I64, &o.warmup, "N", "first steps left out of the measurement (default 4)"},
        {"dtype", 0, ZAYA_FLAG_STRING, &o.dtype, "bf16|f32", "GEMM precision of both the run and the model (default bf16)"},
        {"optimizer", 0, ZAYA_FLAG_STRING, &o.optimizer, "NAME", "muon | adamw (default muon)"},
        ZAYA_FLAG_THREADS(&o.threads),
        ZAYA_FLAG_OUTDIR(&o.out, "results/size-validate"),
    };
    const zaya_cmd_spec spec = {"size validate", "predicted vs measured `zaya train` step time on this machine",
                                "--hw PROFILE --data DIR [options] CONFIG", NULL, flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos != 1) return zaya_flags_usage_error(&spec, "expected one CONFIG (a config.json), got %d arguments", args.npos);
    o.config = args.pos[0];
    if (!o.hw) return zaya_flags_usage_error(&spec, "--hw is required");
    if (!o.data) return zaya_flags_usage_error(&spec, "--data is required");
    if (o.micro_batch == 0) o.micro_batch = o.batch;
    if (o.batch <= 0 || o.seq < 2 || o.steps <= 0 || o.steps > ZAYA_SIZE_VALIDATE_MAX_STEPS || o.micro_batch <= 0 ||
        o.batch % o.micro_batch)
        return zaya_flags_usage_error(&spec, "need --batch > 0, --seq >= 2, 0 < --steps <= %d and a --micro-batch dividing --batch",
                                      ZAYA_SIZE_VALIDATE_MAX_STEPS);
    if (o.warmup < 0 || o.warmup >= o.steps) return zaya_flags_usage_error(&spec, "--warmup must be in [0, --steps)");
    if (strcmp(o.optimizer, "muon") && strcmp(o.optimizer, "adamw"))
        return zaya_flags_usage_error(&spec, "--optimizer '%s' (use adamw or muon)", o.optimizer);
    if (strcmp(o.dtype, "bf16") && strcmp(o.dtype, "f32")) return zaya_flags_usage_error(&spec, "--dtype '%s' (use bf16 or f32)", o.dtype);
    if (zaya_size_validate_step(&o, stdout) != ZAYA_OK) return zaya_cli_error("size validate", NULL);
    return 0;
}

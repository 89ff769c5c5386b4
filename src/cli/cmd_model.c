/* zaya model info: flags over zaya_model_info_report (src/model/info.c). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/model.h"

int zaya_cmd_model_info(int argc, char **argv) {
    const char *config = "zaya1-8b", *out = NULL;
    int64_t seq = 4096;
    int json = 0;
    zaya_flag flags[] = {
        {"config", 'c', ZAYA_FLAG_STRING, &config, "SPEC", "preset (zaya1-8b, zaya1-small, zaya1-tiny) or config.json (default: zaya1-8b)"},
        {"seq", 0, ZAYA_FLAG_I64, &seq, "T", "sequence length for the attention FLOP term (default: 4096)"},
        {"json", 0, ZAYA_FLAG_BOOL, &json, NULL, "print JSON instead of the table"},
        {"out", 'o', ZAYA_FLAG_STRING, &out, "DIR", "also write model_info.json into DIR (default: none)"},
    };
    zaya_cmd_spec spec = {"model info", "parameter counts, per-component breakdown, KV cache and FLOPs of a ZAYA1 model",
                          "[options]", NULL, flags, 4};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (seq <= 0) return zaya_flags_usage_error(&spec, "--seq must be positive");

    return zaya_model_info_report(config, seq, json, out, stdout) == ZAYA_OK ? 0 : zaya_cli_error("model info", NULL);
}

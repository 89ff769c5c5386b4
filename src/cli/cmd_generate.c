/* zaya generate: flags over zaya_infer_generate_run (src/infer/generate_run.c). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/infer_generate.h"

#define MAX_PROMPTS ZAYA_INFER_GENERATE_MAX_PROMPTS
#define MAX_STOPS 16

int zaya_cmd_generate(int argc, char **argv) {
    const char *tok_path = NULL, *prompts[MAX_PROMPTS], *stops[MAX_STOPS];
    zaya_flag_list prompt_list = {prompts, MAX_PROMPTS, 0}, stop_list = {stops, MAX_STOPS, 0};
    zaya_infer_model_opts mo = {.random_init = -1, .dtype = "f32"};
    int64_t max_tokens = 128, top_k = 0, seed = 0;
    double temperature = 0.8, top_p = 1.0;
    int threads = 0, ignore_eos = 0, no_gemv = 0, bandwidth = 0, no_bos = 0;
    zaya_flag flags[] = {
        {"prompt", 'p', ZAYA_FLAG_LIST, &prompt_list, "TEXT", "prompt text, one sequence of the batch each (required)"},
        {"tokenizer", 't', ZAYA_FLAG_STRING, &tok_path, "FILE", "tokenizer.json (required)"},
        {"checkpoint", 0, ZAYA_FLAG_STRING, &mo.checkpoint, "PATH", "model checkpoint"},
        {"config", 'c', ZAYA_FLAG_STRING, &mo.config, "SPEC", "preset or config.json, with --random-init"},
        {"random-init", 0, ZAYA_I64_IN(&mo.random_init, 0, ZAYA_FLAG_NO_MAX), "SEED", "random weights from SEED (smoke tests)"},
        {"dtype", 0, ZAYA_FLAG_STRING, &mo.dtype, "T", "f32 or bf16 weights (default: f32)"},
        {"max-tokens", 'n', ZAYA_I64_IN(&max_tokens, 0, ZAYA_FLAG_NO_MAX), "N", "tokens to generate per prompt (default: 128)"},
        {"temperature", 0, ZAYA_FLAG_DOUBLE, &temperature, "T", "sampling temperature, 0 = greedy (default: 0.8)"},
        {"top-k", 0, ZAYA_I64_IN(&top_k, 0, ZAYA_FLAG_NO_MAX), "K", "keep the K most likely tokens, 0 = off (default: 0)"},
        {"top-p", 0, ZAYA_FLAG_DOUBLE, &top_p, "P", "nucleus sampling mass, 1 = off (default: 1)"},
        {"seed", 's', ZAYA_FLAG_I64, &seed, "S", "sampling seed (default: 0)"},
        {"stop", 0, ZAYA_FLAG_LIST, &stop_list, "STR", "stop when the completion contains STR"},
        {"ignore-eos", 0, ZAYA_FLAG_BOOL, &ignore_eos, NULL, "do not stop at the tokenizer's eos token"},
        {"no-bos", 0, ZAYA_FLAG_BOOL, &no_bos, NULL, "do not put the tokenizer's bos token before each prompt (default: it is prepended, as at training)"},
        {"no-gemv", 0, ZAYA_FLAG_BOOL, &no_gemv, NULL, "use oneDNN for single-row projections too"},
        {"bandwidth", 0, ZAYA_FLAG_BOOL, &bandwidth, NULL,
         "measure a STREAM triad after decoding: decode tok/s as % of the memory-bandwidth bound"},
        ZAYA_FLAG_THREADS(&threads),
    };
    zaya_cmd_spec spec = {"generate", "generate text from prompts (streamed to stdout)", "[options]",
                          "With one prompt the completion streams as it is produced; with several, each is printed "
                          "when it ends. Each prompt is encoded after the tokenizer's bos token when it has one (training "
                          "documents start with it; --no-bos turns that off). Timing of prefill and decode goes to stderr.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const int np = prompt_list.n, ns = stop_list.n;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (np == 0) return zaya_flags_usage_error(&spec, "--prompt is required");
    if (!tok_path) return zaya_flags_usage_error(&spec, "--tokenizer is required");
    if (max_tokens < 0) return zaya_flags_usage_error(&spec, "--max-tokens must be >= 0");
    if (temperature < 0 || top_p < 0 || top_k < 0)
        return zaya_flags_usage_error(&spec, "--temperature, --top-k and --top-p must be >= 0");
    for (int k = 0; k < ns; k++)
        if (!stops[k][0]) return zaya_flags_usage_error(&spec, "--stop needs a non-empty string");
    zaya_infer_generate_opts o = {.model = mo, .tokenizer = tok_path, .prompts = prompts, .nprompts = np, .stops = stops,
                                  .nstops = ns, .max_tokens = max_tokens, .temperature = temperature, .top_k = top_k,
                                  .top_p = top_p, .seed = seed, .ignore_eos = ignore_eos, .no_gemv = no_gemv,
                                  .bandwidth = bandwidth, .threads = threads, .no_bos = no_bos};
    return zaya_infer_generate_run(&o, stdout) == ZAYA_OK ? 0 : zaya_cli_error("generate", NULL);
}

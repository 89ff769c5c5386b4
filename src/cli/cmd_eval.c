/* zaya eval: flags over zaya_infer_eval_run (src/infer/eval_run.c). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/infer_eval.h"

#define MAX_TASKS ZAYA_INFER_EVAL_MAX_TASKS

int zaya_cmd_eval(int argc, char **argv) {
    zaya_infer_model_opts mo = {.random_init = -1, .dtype = "f32"};
    const char *tok_path = NULL, *shard = NULL, *text = NULL, *out = "results/eval", *format = "auto";
    const char *tasks[MAX_TASKS];
    zaya_flag_list task_list = {tasks, MAX_TASKS, 0};
    int64_t window = 0, batch = 4, max_tokens = 0;
    int threads = 0;
    zaya_flag flags[] = {
        {"checkpoint", 0, ZAYA_FLAG_STRING, &mo.checkpoint, "PATH", "model checkpoint"},
        {"config", 'c', ZAYA_FLAG_STRING, &mo.config, "SPEC", "preset or config.json, with --random-init"},
        {"random-init", 0, ZAYA_I64_IN(&mo.random_init, 0, ZAYA_FLAG_NO_MAX), "SEED", "random weights from SEED (smoke tests)"},
        {"dtype", 0, ZAYA_FLAG_STRING, &mo.dtype, "T", "f32 or bf16 weights (default: f32)"},
        {"tokenizer", 't', ZAYA_FLAG_STRING, &tok_path, "FILE", "tokenizer.json (needed for --text, --task, bpb)"},
        {"shard", 0, ZAYA_FLAG_STRING, &shard, "FILE", "token shard (.ztok) for perplexity"},
        {"text", 0, ZAYA_FLAG_STRING, &text, "FILE", "text file for perplexity and bits per byte"},
        {"task", 0, ZAYA_FLAG_LIST, &task_list, "FILE", "multiple-choice or LAMBADA task file (JSONL, JSON or MMLU CSV)"},
        {"format", 0, ZAYA_FLAG_STRING, &format, "F", "task layout: auto, zaya, hellaswag, arc, piqa, winogrande, mmlu, lambada (default: auto)"},
        {"ctx", 0, ZAYA_FLAG_I64, &window, "N", "perplexity window (default: max_position_embeddings)"},
        {"max-tokens", 0, ZAYA_FLAG_I64, &max_tokens, "N", "evaluate at most N tokens of the shard/text (default: all)"},
        {"batch", 'b', ZAYA_I64_IN(&batch, 1, ZAYA_FLAG_NO_MAX), "B", "sequences scored at once (default: 4)"},
        ZAYA_FLAG_OUTDIR(&out, "results/eval"),
        ZAYA_FLAG_THREADS(&threads),
    };
    zaya_cmd_spec spec = {"eval", "perplexity / bits per byte and multiple-choice accuracy", "[options]",
                          "acc picks the choice with the largest summed log-likelihood given the context; acc_norm "
                          "divides it by the choice's length in bytes (lm-eval-harness); +- is the standard error. Task "
                          "layouts are detected from their fields. Writes eval.json and items-K.jsonl (per-choice "
                          "log-likelihoods of task K). LAMBADA ({\"text\": ...} lines) reports lm-eval lambada_openai's acc "
                          "(every token of \" <last word>\" is the argmax) and perplexity (exp of minus the mean "
                          "log-likelihood per document).",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const int nt = task_list.n;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (!shard && !text && nt == 0) return zaya_flags_usage_error(&spec, "nothing to evaluate: give --shard, --text or --task");
    if (shard && text) return zaya_flags_usage_error(&spec, "give --shard or --text, not both");
    if ((text || nt) && !tok_path) return zaya_flags_usage_error(&spec, "--text and --task need --tokenizer");
    if (batch < 1 || window < 0 || max_tokens < 0) return zaya_flags_usage_error(&spec, "--batch must be >= 1, --ctx and --max-tokens >= 0");
    zaya_mc_format fmt = ZAYA_MC_AUTO;
    if (zaya_mc_format_parse(format, &fmt) != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    zaya_infer_eval_opts o = {.model = mo, .tokenizer = tok_path, .shard = shard, .text = text, .tasks = tasks, .ntasks = nt,
                              .format = fmt, .window = window, .batch = batch, .max_tokens = max_tokens, .threads = threads,
                              .out = out};
    return zaya_infer_eval_run(&o, stdout) == ZAYA_OK ? 0 : zaya_cli_error("eval", NULL);
}

#include "cli/commands.h"

#include <stdio.h>
#include <string.h>

const zaya_group zaya_groups[] = {
    {"model", "inspect ZAYA1 model configurations"},
    {"data", "token shards: inspect, validate, loader benchmark"},
    {"size", "model sizing: calculators, rules, prediction, MoE shape search"},
    {"tokenizer", "byte-level BPE tokenizer: train, encode, decode, bench"},
    {"bench", "benchmarks of this machine and of zaya itself"},
    {"ckpt", "checkpoints: inspect, verify, reshape, consolidate, HF export/import, bench"},
    {0},
};

/* One line per command, so that additions never collide. */
const zaya_command zaya_commands[] = {
    {NULL, "train", "pretrain a ZAYA1 model through a curriculum run (default: the built-in CPU run)", zaya_cmd_train},
    {NULL, "study", "controlled architecture comparisons (router, attention, MoE, residual, optimizer) over seeds", zaya_cmd_study},
    {NULL, "supervise", "run a training job under automated fault tolerance (restart on crash/hang)", zaya_cmd_supervise},
    {"model", "info", "parameter counts, components, KV cache and FLOPs of a config", zaya_cmd_model_info},
    {"data", "prepare", "tokenize text, directories and JSONL into token shards with a validation split", zaya_cmd_data_prepare},
    {"data", "inspect", "show a token shard's header, counts, checksum and first tokens", zaya_cmd_data_inspect},
    {"data", "validate", "fully validate token shards and run files", zaya_cmd_data_validate},
    {"data", "bench", "loader throughput from mmap vs a sequential copy", zaya_cmd_data_bench},
    {"size", "info", "exact parameter table, FLOPs, KV cache and training memory of a config", zaya_cmd_size_info},
    {"size", "check", "sizing rules and per-GEMM efficiency on a hardware profile", zaya_cmd_size_check},
    {"size", "predict", "training step time and inference latency on a hardware profile", zaya_cmd_size_predict},
    {"size", "search", "MoE shape search at a parameter budget (Pareto front)", zaya_cmd_size_search},
    {"size", "validate", "predicted vs measured `zaya train` step time on this machine", zaya_cmd_size_validate},
    {"tokenizer", "train", "train a byte-level BPE tokenizer (HF tokenizer.json)", zaya_cmd_tokenizer_train},
    {"tokenizer", "encode", "encode text to token ids", zaya_cmd_tokenizer_encode},
    {"tokenizer", "decode", "decode token ids to text", zaya_cmd_tokenizer_decode},
    {"tokenizer", "bench", "encoding MB/s of zaya vs HF tokenizers", zaya_cmd_tokenizer_bench},
    {"bench", "coll", "collective bandwidth and correctness under mpirun (nccl-tests style)", zaya_cmd_bench_coll},
    {"bench", "mem", "memory bandwidth: STREAM kernels, thread sweep, working-set sweep", zaya_cmd_bench_mem},
    {NULL, "generate", "generate text from prompts with the inference engine (streamed)", zaya_cmd_generate},
    {NULL, "eval", "perplexity, bits per byte and multiple-choice accuracy", zaya_cmd_eval},
    {"bench", "infer", "prefill and decode tokens/s vs the memory-bandwidth bound", zaya_cmd_bench_infer},
    {"bench", "gemm", "GEMM throughput vs the measured oneDNN peak; sweeps or a model's GEMMs", zaya_cmd_bench_gemm},
    {"ckpt", "info", "summary of a checkpoint (step, sections, files, tensors)", zaya_cmd_ckpt_info},
    {"ckpt", "verify", "check completeness, shapes and every checksum of a checkpoint", zaya_cmd_ckpt_verify},
    {"ckpt", "consolidate", "rewrite a checkpoint as one file set (world size 1)", zaya_cmd_ckpt_consolidate},
    {"ckpt", "reshape", "re-slice per-rank arrays of a checkpoint for another world size", zaya_cmd_ckpt_reshape},
    {"ckpt", "export-hf", "export the model in the Hugging Face layout (safetensors shards + config.json)", zaya_cmd_ckpt_export_hf},
    {"ckpt", "import-hf", "import a Hugging Face directory (HF or original layout) as a checkpoint", zaya_cmd_ckpt_import_hf},
    {"ckpt", "bench", "checkpoint save throughput vs disk write, async stall, naive baseline", zaya_cmd_ckpt_bench},
    {"bench", "kernels", "every CPU kernel at ZAYA1 shapes vs the measured matmul peak and STREAM triad", zaya_cmd_bench_kernels},
    {"bench", "model", "ZAYA1 forward/backward time, tokens/s and MFU vs PyTorch eager", zaya_cmd_bench_model},
    {"bench", "train", "training steps incl. the optimizer: tokens/s and MFU vs PyTorch eager", zaya_cmd_bench_train},
    {"bench", "all", "short run of mem, gemm and coll; writes the machine profile.json", zaya_cmd_bench_all},
    {0},
};

static int same(const char *a, const char *b) { return (a == NULL && b == NULL) || (a && b && !strcmp(a, b)); }

static int group_has_commands(const char *g) {
    for (const zaya_command *c = zaya_commands; c->name; c++)
        if (same(c->group, g)) return 1;
    return 0;
}

static void print_list(FILE *f, const char *group) {
    fprintf(f, "usage: zaya %s%s<command> [options]\n\ncommands:\n", group ? group : "", group ? " " : "");
    if (!group) {
        for (const zaya_command *c = zaya_commands; c->name; c++)
            if (!c->group) fprintf(f, "  %-12s %s\n", c->name, c->summary);
        for (const zaya_group *g = zaya_groups; g->name; g++)
            if (group_has_commands(g->name)) fprintf(f, "  %-12s %s\n", g->name, g->summary);
    } else {
        for (const zaya_command *c = zaya_commands; c->name; c++)
            if (same(c->group, group)) fprintf(f, "  %-12s %s\n", c->name, c->summary);
    }
    fprintf(f, "\nrun 'zaya %s%s<command> --help' for its options\n", group ? group : "", group ? " " : "");
}

static int is_help(const char *a) { return !strcmp(a, "help") || !strcmp(a, "--help") || !strcmp(a, "-h"); }

/* Resolves argv against the tables: `group name args...` or `name args...`. */
static int dispatch(const char *group, int argc, char **argv) {
    if (argc < 1 || is_help(argv[0])) {
        if (argc >= 2 && !strcmp(argv[0], "help")) {
            /* `zaya help bench gemm` == `zaya bench gemm --help` */
            char *args[64];
            int n = 0;
            for (int i = 1; i < argc && n < 62; i++) args[n++] = argv[i];
            args[n++] = "--help";
            return dispatch(group, n, args);
        }
        print_list(argc < 1 ? stderr : stdout, group);
        return argc < 1 ? 2 : 0;
    }
    for (const zaya_command *c = zaya_commands; c->name; c++)
        if (same(c->group, group) && !strcmp(c->name, argv[0])) return c->run(argc - 1, argv + 1);
    if (!group && group_has_commands(argv[0])) {
        for (const zaya_group *g = zaya_groups; g->name; g++)
            if (!strcmp(g->name, argv[0])) return dispatch(g->name, argc - 1, argv + 1);
    }
    if (argv[0][0] == '-')
        fprintf(stderr, "zaya%s%s: unknown option '%s'\n", group ? " " : "", group ? group : "", argv[0]);
    else
        fprintf(stderr, "zaya: unknown command '%s%s%s'\n", group ? group : "", group ? " " : "", argv[0]);
    print_list(stderr, group);
    return 2;
}

int zaya_cli_main(int argc, char **argv) { return dispatch(NULL, argc, argv); }

/* zaya tokenizer bench: flags over zaya_tokenizer_bench_run (src/tokenizer/bench.c). */
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/tokenizer.h"

int zaya_cmd_tokenizer_bench(int argc, char **argv) {
    zaya_tokenizer_bench_opts o = {.out = "bench-tokenizer", .python = "/usr/bin/python3", .repeat = 3, .doc_bytes = 4096};
    zaya_flag flags[] = {
        {"doc-bytes", 0, ZAYA_FLAG_BYTES, &o.doc_bytes, "SIZE", "cut documents at the first newline after this many bytes (default: 4K)"},
        {"tokenizer", 't', ZAYA_FLAG_STRING, &o.tokenizer, "FILE", "tokenizer.json to use (required)"},
        {"repeat", 0, ZAYA_FLAG_INT, &o.repeat, "N", "timed runs; the best is reported (default: 3)"},
        {"max-bytes", 0, ZAYA_FLAG_BYTES, &o.max_bytes, "SIZE", "use at most this much input (default: all)"},
        {"python", 0, ZAYA_FLAG_STRING, &o.python, "EXE", "Python with the `tokenizers` package (default: /usr/bin/python3)"},
        {"no-hf", 0, ZAYA_FLAG_BOOL, &o.no_hf, NULL, "skip the HF tokenizers measurement (default: off)"},
        ZAYA_FLAG_OUTDIR(&o.out, "bench-tokenizer"),
    };
    zaya_cmd_spec spec = {"tokenizer bench", "encoding throughput (MB/s) of zaya and HF tokenizers on the same input",
                          "[options] PATH...",
                          "PATH files and directories are concatenated (sorted order) and cut into documents at newlines.\n"
                          "Both sides encode the documents on one thread (zaya: one encoder with its word cache; HF:\n"
                          "encode_batch with TOKENIZERS_PARALLELISM=false); ids are compared exactly. Writes\n"
                          "DIR/bench.json.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (!o.tokenizer) return zaya_flags_usage_error(&spec, "--tokenizer is required");
    if (args.npos < 1) return zaya_flags_usage_error(&spec, "give at least one input PATH");
    if (o.repeat < 1) return zaya_flags_usage_error(&spec, "--repeat must be >= 1");

    if (zaya_tokenizer_bench_run(&o, (const char *const *)args.pos, args.npos, stdout) != ZAYA_OK)
        return zaya_cli_error("tokenizer bench", NULL);
    return 0;
}

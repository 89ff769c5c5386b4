/* zaya data prepare: text files, directories and JSONL (plain, .gz, .zst) -> token shards with a
 * held-out split. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/corpus.h"
#include "zaya/fs.h"
#include "zaya/threads.h"

#define MAX_FILTERS 16

static void print_summary(const char *name, const char *out, const zaya_prepare_stats *st) {
    const uint64_t tokens = st->train_tokens + st->val_tokens;
    const double dt = st->seconds > 0 ? st->seconds : 1e-9;
    printf("source %s: %" PRIu64 " files (%" PRIu64 " skipped), %.1f MB of text (%.1f MB on disk), %" PRIu64
           " documents, %" PRIu64 " tokens\n",
           name, st->files, st->skipped_files, (double)st->bytes / 1e6, (double)st->file_bytes / 1e6, st->docs, tokens);
    printf("  train %" PRIu64 " docs, %" PRIu64 " tokens in %d shards; validation %" PRIu64 " docs, %" PRIu64
           " tokens in %d shards\n",
           st->train_docs, st->train_tokens, st->train_shards, st->val_docs, st->val_tokens, st->val_shards);
    if (st->jsonl_lines) {
        uint64_t skipped = 0;
        for (int r = 1; r < ZAYA_SKIP_LINE_NREASONS; r++) skipped += st->skipped_lines[r];
        printf("  JSONL: %" PRIu64 " lines, %" PRIu64 " skipped", st->jsonl_lines, skipped);
        const char *sep = " (";
        for (int r = 1; r < ZAYA_SKIP_LINE_NREASONS; r++)
            if (st->skipped_lines[r]) {
                printf("%s%s %" PRIu64, sep, zaya_prepare_skip_name((zaya_prepare_skip)r), st->skipped_lines[r]);
                sep = ", ";
            }
        printf("%s\n", skipped ? ")" : "");
        if (st->first_bad_line[0]) printf("  first broken line: %s\n", st->first_bad_line);
    }
    printf("  %.2f s on %d threads: %.1f MB/s of text, %.2fM tokens/s; shards in %s\n", st->seconds, st->threads,
           (double)st->bytes / 1e6 / dt, (double)tokens / 1e6 / dt, out);
}

int zaya_cmd_data_prepare(int argc, char **argv) {
    const char *tokenizer = NULL, *out = "out/data", *name = NULL, *delim = NULL, *ext = NULL, *key = NULL;
    const char *filters[MAX_FILTERS];
    zaya_flag_list filter_list = {filters, MAX_FILTERS, 0};
    double val = 0.01;
    int64_t seed = 1234, shard_tokens = 0, max_line = 0, max_expansion = -1;
    int overwrite = 0, strict = 0, quiet = 0, threads = 0;
    zaya_flag flags[] = {
        {"tokenizer", 't', ZAYA_FLAG_STRING, &tokenizer, "FILE", "tokenizer.json (required)"},
        {"name", 'n', ZAYA_FLAG_STRING, &name, "NAME", "source name: shards NAME-train-*.ztok, NAME-val-*.ztok (required)"},
        ZAYA_FLAG_OUTDIR(&out, "out/data"),
        {"val-fraction", 0, ZAYA_FLAG_DOUBLE, &val, "F", "fraction of documents held out for validation (default 0.01)"},
        {"seed", 0, ZAYA_FLAG_I64, &seed, "N", "seed of the train/validation split (default 1234)"},
        {"doc-delimiter", 0, ZAYA_FLAG_STRING, &delim, "LINE", "a line equal to LINE separates documents in text files (default: one document per file)"},
        {"extensions", 0, ZAYA_FLAG_STRING, &ext, "LIST", "comma list of file endings read when walking directories, e.g. txt,jsonl.zst (default: all)"},
        {"jsonl-key", 0, ZAYA_FLAG_STRING, &key, "PATH", "dotted path of the JSONL field holding the text, e.g. meta.body (default: text)"},
        {"jsonl-filter", 0, ZAYA_FLAG_LIST, &filter_list, "KEY=VALUE", "keep only JSONL records whose dotted KEY equals VALUE (KEY!=VALUE: differs); all must hold"},
        {"strict", 0, ZAYA_FLAG_BOOL, &strict, NULL, "a broken JSONL line is an error (default: skipped, counted, reported with file:line)"},
        {"shard-tokens", 0, ZAYA_FLAG_I64, &shard_tokens, "N", "tokens per shard (default 64M)"},
        {"overwrite", 0, ZAYA_FLAG_BOOL, &overwrite, NULL, "replace existing shards of this source"},
        {"max-line-bytes", 0, ZAYA_FLAG_BYTES, &max_line, "BYTES", "a longer JSONL line is an error, found while decompressing (default 1G)"},
        {"max-expansion", 0, ZAYA_FLAG_I64, &max_expansion, "N", "a .gz/.zst input that decompresses to more than N times its size is an error (default 1000; 0: no limit)"},
        {"quiet", 'q', ZAYA_FLAG_BOOL, &quiet, NULL, "no progress line"},
        ZAYA_FLAG_THREADS(&threads),
    };
    zaya_cmd_spec spec = {"data prepare", "tokenize text files, directories and JSONL into token shards",
                          "[options] INPUT...",
                          "*.jsonl, *.jsonl.gz and *.jsonl.zst inputs are streamed (decompressed as read) with one JSON "
                          "object per line and the text under --jsonl-key; other files are text. Directories are walked "
                          "recursively in sorted order. Documents are tokenized in parallel and written in input order: "
                          "the shards are identical for any --threads. A truncated or corrupt compressed file is an error "
                          "naming the file and byte offset, and no shard of the run is left.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (!tokenizer) return zaya_flags_usage_error(&spec, "--tokenizer is required");
    if (!name) return zaya_flags_usage_error(&spec, "--name is required");
    if (args.npos == 0) return zaya_flags_usage_error(&spec, "no INPUT given");
    if (val < 0 || val > 0.5) return zaya_flags_usage_error(&spec, "--val-fraction must be in [0, 0.5]");
    if (shard_tokens < 0) return zaya_flags_usage_error(&spec, "--shard-tokens must be >= 0");
    if (key && !*key) return zaya_flags_usage_error(&spec, "--jsonl-key must name a field (got an empty string)");
    if (max_line < 0 || max_line > (1ll << 40)) return zaya_flags_usage_error(&spec, "--max-line-bytes must be in [1, 1T]");
    if (max_expansion < -1) return zaya_flags_usage_error(&spec, "--max-expansion must be >= 0");
    for (int i = 0; i < filter_list.n; i++) {
        const char *f = filters[i], *eq = strchr(f, '=');
        if (!eq || eq == f || (eq == f + 1 && f[0] == '!'))
            return zaya_flags_usage_error(&spec, "--jsonl-filter '%s' must be KEY=VALUE or KEY!=VALUE", f);
    }
    zaya_threads_init(threads);
    if (zaya_mkdir_p(out) != ZAYA_OK) {
        return zaya_cli_error("data prepare", NULL);
    }
    zaya_prepare_opts o = {.name = name, .out_dir = out, .val_fraction = val, .seed = (uint64_t)seed,
                           .shard_tokens = (uint64_t)shard_tokens, .doc_delimiter = delim, .extensions = ext,
                           .jsonl_key = key, .jsonl_filters = filters, .njsonl_filters = filter_list.n,
                           .strict = strict, .progress = !quiet, .overwrite = overwrite,
                           .max_line_bytes = (uint64_t)max_line,
                           .max_expansion = max_expansion == 0 ? UINT64_MAX : max_expansion < 0 ? 0 : (uint64_t)max_expansion};
    zaya_prepare_stats st = {0};
    if (zaya_corpus_prepare(tokenizer, (const char *const *)args.pos, args.npos, &o, &st) != ZAYA_OK) {
        return zaya_cli_error("data prepare", NULL);
    }
    print_summary(name, out, &st);
    return 0;
}

/* zaya data prepare: text files, directories and JSONL -> token shards with a held-out split. */
#include <inttypes.h>
#include <stdio.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/corpus.h"
#include "zaya/fs.h"
#include "zaya/timer.h"

int zaya_cmd_data_prepare(int argc, char **argv) {
    const char *tokenizer = NULL, *out = "out/data", *name = NULL, *delim = NULL, *ext = NULL, *key = NULL;
    double val = 0.01;
    int64_t seed = 1234, shard_tokens = 0;
    int overwrite = 0;
    zaya_flag flags[] = {
        {"tokenizer", 't', ZAYA_FLAG_STRING, &tokenizer, "FILE", "tokenizer.json (required)"},
        {"name", 'n', ZAYA_FLAG_STRING, &name, "NAME", "source name: shards NAME-train-*.ztok, NAME-val-*.ztok (required)"},
        ZAYA_FLAG_OUTDIR(&out, "out/data"),
        {"val-fraction", 0, ZAYA_FLAG_DOUBLE, &val, "F", "fraction of documents held out for validation (default 0.01)"},
        {"seed", 0, ZAYA_FLAG_I64, &seed, "N", "seed of the train/validation split (default 1234)"},
        {"doc-delimiter", 0, ZAYA_FLAG_STRING, &delim, "LINE", "a line equal to LINE separates documents in text files (default: one document per file)"},
        {"extensions", 0, ZAYA_FLAG_STRING, &ext, "LIST", "comma list of file endings read when walking directories (default: all)"},
        {"jsonl-key", 0, ZAYA_FLAG_STRING, &key, "KEY", "JSONL field holding the text (default: text)"},
        {"shard-tokens", 0, ZAYA_FLAG_I64, &shard_tokens, "N", "tokens per shard (default 64M)"},
        {"overwrite", 0, ZAYA_FLAG_BOOL, &overwrite, NULL, "replace existing shards of this source"},
    };
    zaya_cmd_spec spec = {"data prepare", "tokenize text files, directories and JSONL into token shards",
                          "[options] INPUT...",
                          "*.jsonl inputs hold one JSON object per line with the text under --jsonl-key; other files "
                          "are text. Directories are walked recursively in sorted order.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (!tokenizer) return zaya_flags_usage_error(&spec, "--tokenizer is required");
    if (!name) return zaya_flags_usage_error(&spec, "--name is required");
    if (args.npos == 0) return zaya_flags_usage_error(&spec, "no INPUT given");
    if (val < 0 || val > 0.5) return zaya_flags_usage_error(&spec, "--val-fraction must be in [0, 0.5]");
    if (zaya_mkdir_p(out) != ZAYA_OK) {
        fprintf(stderr, "zaya data prepare: error: %s\n", zaya_error_message());
        return 1;
    }
    zaya_prepare_opts o = {.name = name, .out_dir = out, .val_fraction = val, .seed = (uint64_t)seed,
                           .shard_tokens = (uint64_t)shard_tokens, .doc_delimiter = delim, .extensions = ext,
                           .jsonl_key = key, .overwrite = overwrite};
    zaya_prepare_stats st = {0};
    double t0 = zaya_now_s();
    if (zaya_corpus_prepare(tokenizer, (const char *const *)args.pos, args.npos, &o, &st) != ZAYA_OK) {
        fprintf(stderr, "zaya data prepare: error: %s\n", zaya_error_message());
        return 1;
    }
    double dt = zaya_now_s() - t0;
    printf("source %s: %" PRIu64 " files (%" PRIu64 " skipped), %.1f MB, %" PRIu64 " documents\n", name, st.files,
           st.skipped_files, (double)st.bytes / 1e6, st.docs);
    printf("  train %" PRIu64 " docs, %" PRIu64 " tokens in %d shards; validation %" PRIu64 " docs, %" PRIu64
           " tokens in %d shards\n",
           st.train_docs, st.train_tokens, st.train_shards, st.val_docs, st.val_tokens, st.val_shards);
    printf("  %.2f s, %.1f MB/s; shards in %s\n", dt, (double)st.bytes / 1e6 / (dt > 0 ? dt : 1e-9), out);
    return 0;
}

/* `zaya tokenizer train|encode|decode|bench`: BPE tokenizers stored as HF tokenizer.json. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/timer.h"
#include "zaya/tokenizer.h"

/* ---- train ---- */

int zaya_cmd_tokenizer_train(int argc, char **argv) {
    int64_t vocab = 0, min_freq = 2, max_bytes = 0;
    const char *bos = NULL, *eos = NULL, *pad = NULL, *outdir = "tokenizer";
    zaya_flag flags[] = {
        {"vocab-size", 0, ZAYA_FLAG_I64, &vocab, "N", "target vocabulary size incl. 256 bytes and special tokens (required)"},
        {"bos", 0, ZAYA_FLAG_STRING, &bos, "S", "beginning-of-sequence token text, e.g. '<|bos|>' (default: none)"},
        {"eos", 0, ZAYA_FLAG_STRING, &eos, "S", "end-of-sequence token text (default: none)"},
        {"pad", 0, ZAYA_FLAG_STRING, &pad, "S", "padding token text (default: none)"},
        {"min-frequency", 0, ZAYA_FLAG_I64, &min_freq, "N", "never merge pairs seen fewer times (default: 2)"},
        {"max-bytes", 0, ZAYA_FLAG_BYTES, &max_bytes, "SIZE", "read at most this much input, e.g. 512M (default: all)"},
        ZAYA_FLAG_OUTDIR(&outdir, "tokenizer"),
    };
    zaya_cmd_spec spec = {"tokenizer train", "train a byte-level BPE tokenizer on text files and directories",
                          "[options] PATH...",
                          "Files are read as raw bytes (directories recursively, in sorted order) and split with the\n"
                          "GPT-2 pre-tokenizer. Writes DIR/tokenizer.json (Hugging Face format), DIR/tokenizer_config.json\n"
                          "(special-token roles) and DIR/train_stats.json.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (vocab <= 0) return zaya_flags_usage_error(&spec, "--vocab-size is required");
    if (args.npos < 1) return zaya_flags_usage_error(&spec, "give at least one input PATH");

    zaya_bpe_train_opts opts = {.vocab_size = vocab, .bos = bos, .eos = eos, .pad = pad, .min_frequency = min_freq,
                                .max_bytes = max_bytes};
    zaya_tokenizer *t;
    zaya_bpe_train_stats st;
    if (zaya_tokenizer_train_with_stats((const char *const *)args.pos, args.npos, &opts, &t, &st) != ZAYA_OK)
        return zaya_cli_error("tokenizer train", NULL);
    char path[4096];
    if (zaya_mkdir_p(outdir) != ZAYA_OK || zaya_path_join(path, sizeof path, outdir, "tokenizer.json") != ZAYA_OK ||
        zaya_tokenizer_save(t, path) != ZAYA_OK) {
        zaya_tokenizer_free(t);
        return zaya_cli_error("tokenizer train", NULL);
    }
    double secs = st.seconds_count + st.seconds_merge;
    printf("input            %.2f MB (%" PRId64 " pre-tokens, %" PRId64 " unique)\n", st.bytes / 1e6, st.pretokens,
           st.unique_words);
    printf("merges           %" PRId64 "\n", st.merges);
    printf("vocab size       %" PRId64 " (target %" PRId64 ")\n", st.vocab_size, vocab);
    printf("training time    %.3f s (counting %.3f s, %.1f MB/s; merging %.3f s)\n", secs, st.seconds_count,
           st.seconds_count > 0 ? st.bytes / 1e6 / st.seconds_count : 0.0, st.seconds_merge);
    if (st.vocab_size < vocab)
        printf("note             no pair occurs >= %" PRId64 " times any more: stopped below the target size\n", min_freq);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "bytes", (double)st.bytes);
    cJSON_AddNumberToObject(j, "pretokens", (double)st.pretokens);
    cJSON_AddNumberToObject(j, "unique_words", (double)st.unique_words);
    cJSON_AddNumberToObject(j, "merges", (double)st.merges);
    cJSON_AddNumberToObject(j, "vocab_size", (double)st.vocab_size);
    cJSON_AddNumberToObject(j, "target_vocab_size", (double)vocab);
    cJSON_AddNumberToObject(j, "seconds_count", st.seconds_count);
    cJSON_AddNumberToObject(j, "seconds_merge", st.seconds_merge);
    zaya_status s = zaya_path_join(path, sizeof path, outdir, "train_stats.json");
    if (s == ZAYA_OK) s = zaya_json_write_file(path, j, 1);
    cJSON_Delete(j);
    zaya_tokenizer_free(t);
    if (s != ZAYA_OK) return zaya_cli_error("tokenizer train", NULL);
    printf("wrote            %s/tokenizer.json\n", outdir);
    return 0;
}

/* ---- encode ---- */

int zaya_cmd_tokenizer_encode(int argc, char **argv) {
    const char *tok_path = NULL, *text = NULL;
    int count_only = 0, add_special = 0, parse_special = 0, pre_tokens = 0;
    zaya_flag flags[] = {
        {"tokenizer", 't', ZAYA_FLAG_STRING, &tok_path, "FILE", "tokenizer.json to use (required)"},
        {"text", 0, ZAYA_FLAG_STRING, &text, "STR", "text to encode (default: read FILE)"},
        {"add-special", 0, ZAYA_FLAG_BOOL, &add_special, NULL,
         "add the post_processor template's BOS/EOS ids (HF add_special_tokens; default: off)"},
        {"parse-special", 0, ZAYA_FLAG_BOOL, &parse_special, NULL,
         "special-token text in the input becomes its id, as HF by default (default: off, encoded as text)"},
        {"pre-tokens", 0, ZAYA_FLAG_BOOL, &pre_tokens, NULL,
         "print the byte lengths of the regex pre-tokenizer's pieces instead of ids (default: off)"},
        {"count-only", 0, ZAYA_FLAG_BOOL, &count_only, NULL, "print only the token count and throughput (default: off)"},
    };
    zaya_cmd_spec spec = {"tokenizer encode", "encode text to token ids", "[options] (--text STR | FILE)",
                          "Prints the ids separated by spaces. Inputs of 1 MB or more also report encoding MB/s on\n"
                          "stderr. Special-token text in the input is encoded as ordinary text unless --parse-special.\n"
                          "The file's truncation and padding settings apply, as in HF's encode().",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (!tok_path) return zaya_flags_usage_error(&spec, "--tokenizer is required");
    if ((text != NULL) == (args.npos == 1) || args.npos > 1) return zaya_flags_usage_error(&spec, "give either --text STR or one FILE");
    zaya_tokenizer *t;
    if (zaya_tokenizer_load(tok_path, &t) != ZAYA_OK) return zaya_cli_error("tokenizer encode", NULL);
    char *data = NULL;
    size_t len;
    if (text) {
        len = strlen(text);
    } else if (zaya_read_file(args.pos[0], &data, &len) != ZAYA_OK) {
        zaya_tokenizer_free(t);
        return zaya_cli_error("tokenizer encode", NULL);
    }
    if (pre_tokens) {
        size_t *lens = NULL, np = 0;
        zaya_status ps = zaya_tokenizer_pretokenize(t, text ? text : data, len, &lens, &np);
        for (size_t i = 0; ps == ZAYA_OK && i < np; i++) printf(i ? " %zu" : "%zu", lens[i]);
        if (ps == ZAYA_OK) printf("\n");
        free(lens);
        free(data);
        zaya_tokenizer_free(t);
        return ps == ZAYA_OK ? 0 : zaya_cli_error("tokenizer encode", NULL);
    }
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    double t0 = zaya_now_s();
    /* As HF's encode(): the file's truncation and padding apply here (not in data prepare). */
    int eflags = (add_special ? ZAYA_ENCODE_ADD_SPECIAL : 0) | (parse_special ? ZAYA_ENCODE_PARSE_SPECIAL : 0) |
                 ZAYA_ENCODE_TRUNCATE_PAD;
    zaya_status s = zaya_tokenizer_encode_flags(t, text ? text : data, len, eflags, &ids, &n, &cap);
    double dt = zaya_now_s() - t0;
    if (s == ZAYA_OK) {
        if (count_only) {
            printf("%zu\n", n);
        } else {
            for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
            printf("\n");
        }
        if (len >= 1000000 || count_only)
            fprintf(stderr, "encoded %.2f MB into %zu tokens in %.3f s: %.1f MB/s (%.2f bytes/token)\n", len / 1e6, n, dt,
                    dt > 0 ? len / 1e6 / dt : 0.0, n ? (double)len / (double)n : 0.0);
    }
    free(ids);
    free(data);
    zaya_tokenizer_free(t);
    return s == ZAYA_OK ? 0 : zaya_cli_error("tokenizer encode", NULL);
}

/* ---- decode ---- */

static zaya_status parse_ids(const char *s, int32_t **ids, size_t *n, size_t *cap) {
    while (*s) {
        if (*s == ' ' || *s == ',' || *s == '\n' || *s == '\t' || *s == '\r' || *s == '[' || *s == ']') {
            s++;
            continue;
        }
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s || errno || v < INT32_MIN || v > INT32_MAX)
            return zaya_error_set(ZAYA_EINVAL, "'%.20s' is not a token id", s);
        if (*n == *cap) {
            size_t c = *cap ? 2 * *cap : 256;
            int32_t *p = realloc(*ids, c * sizeof *p);
            if (!p) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
            *ids = p, *cap = c;
        }
        (*ids)[(*n)++] = (int32_t)v;
        s = end;
    }
    return ZAYA_OK;
}

static zaya_status read_stream(FILE *f, char **out) {
    size_t n = 0, cap = 4096;
    char *buf = malloc(cap);
    if (!buf) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) { free(buf); return zaya_error_set(ZAYA_ENOMEM, "out of memory"); }
            buf = b;
        }
    }
    buf[n] = '\0';
    *out = buf;
    return ZAYA_OK;
}

int zaya_cmd_tokenizer_decode(int argc, char **argv) {
    const char *tok_path = NULL;
    zaya_flag flags[] = {
        {"tokenizer", 't', ZAYA_FLAG_STRING, &tok_path, "FILE", "tokenizer.json to use (required)"},
    };
    zaya_cmd_spec spec = {"tokenizer decode", "decode token ids to text", "[options] [IDS...]",
                          "IDS are integers separated by spaces or commas; without IDS they are read from stdin.\n"
                          "Writes the exact decoded bytes to stdout.",
                          flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (!tok_path) return zaya_flags_usage_error(&spec, "--tokenizer is required");
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    zaya_status s = ZAYA_OK;
    for (int i = 0; s == ZAYA_OK && i < args.npos; i++) s = parse_ids(args.pos[i], &ids, &n, &cap);
    if (s == ZAYA_OK && args.npos == 0) {
        char *in = NULL;
        s = read_stream(stdin, &in);
        if (s == ZAYA_OK) {
            s = parse_ids(in, &ids, &n, &cap);
            free(in);
        }
    }
    if (s != ZAYA_OK) {
        free(ids);
        return zaya_cli_error("tokenizer decode", NULL);
    }
    zaya_tokenizer *t;
    if (zaya_tokenizer_load(tok_path, &t) != ZAYA_OK) {
        free(ids);
        return zaya_cli_error("tokenizer decode", NULL);
    }
    char *text;
    size_t len;
    s = zaya_tokenizer_decode(t, ids, n, &text, &len);
    if (s == ZAYA_OK) {
        fwrite(text, 1, len, stdout);
        free(text);
    }
    free(ids);
    zaya_tokenizer_free(t);
    return s == ZAYA_OK ? 0 : zaya_cli_error("tokenizer decode", NULL);
}

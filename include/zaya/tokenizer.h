/* BPE tokenizers stored as Hugging Face `tokenizer.json`. zaya trains and writes GPT-2-style byte-level
 * BPE (encoding any byte string and decoding the ids gives back exactly the same bytes) and reads the
 * common families with the same ids as HF `tokenizers`: byte-level BPE (GPT-2), SentencePiece-style
 * BPE with byte fallback, Metaspace and normalizers (Llama-2, Gemma), tiktoken-style regex
 * pre-tokenizers (Llama-3), added tokens and TemplateProcessing. docs/tokenizer.md lists the
 * supported pieces; anything else is a load error naming its JSON path. */
#ifndef ZAYA_TOKENIZER_H
#define ZAYA_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_tokenizer zaya_tokenizer;

/* Budgets (docs/limits.md). A pre-token (the unit the BPE model merges; with SentencePiece-style
 * tokenizers without a pre-tokenizer, a whole document) longer than ZAYA_TOKENIZER_MAX_WORD bytes is
 * an encoding error naming its length and offset: its work arrays take about 36 bytes per byte. The
 * normalizer's output for a piece of n bytes is at most NORM_GROWTH * n + NORM_SLACK bytes, else an
 * error. */
#define ZAYA_TOKENIZER_MAX_WORD (16u << 20)
#define ZAYA_TOKENIZER_NORM_GROWTH 16u
#define ZAYA_TOKENIZER_NORM_SLACK 4096u

typedef struct zaya_bpe_train_opts {
    int64_t vocab_size;    /* target size including the 256 byte tokens and the special tokens */
    const char *bos, *eos, *pad; /* special-token strings, e.g. "<|bos|>"; NULL for none */
    int64_t min_frequency; /* pairs seen fewer times are never merged (default 2) */
    int64_t max_bytes;     /* stop reading input after this many bytes (0 = all) */
} zaya_bpe_train_opts;

/* Trains on files and/or directories (walked recursively; files read as raw bytes). */
zaya_status zaya_tokenizer_train(const char *const *paths, int npaths, const zaya_bpe_train_opts *opts,
                                 zaya_tokenizer **out);
typedef struct zaya_bpe_train_stats {
    int64_t bytes, pretokens, unique_words, merges, vocab_size;
    double seconds_count, seconds_merge; /* reading + pre-tokenizing; pair counting + merging */
} zaya_bpe_train_stats;
zaya_status zaya_tokenizer_train_with_stats(const char *const *paths, int npaths, const zaya_bpe_train_opts *opts,
                                            zaya_tokenizer **out, zaya_bpe_train_stats *stats);
/* Trains on in-memory texts (each one a document). */
zaya_status zaya_tokenizer_train_buffers(const char *const *texts, const size_t *lens, int n,
                                         const zaya_bpe_train_opts *opts, zaya_tokenizer **out);
/* Saving also writes tokenizer_config.json (bos/eos/pad token strings, the HF convention) next to the
 * file when the tokenizer has special-token roles; loading reads it back when present. */
zaya_status zaya_tokenizer_load(const char *path, zaya_tokenizer **out);
zaya_status zaya_tokenizer_save(const zaya_tokenizer *t, const char *path);
void zaya_tokenizer_free(zaya_tokenizer *t);

int64_t zaya_tokenizer_vocab_size(const zaya_tokenizer *t);
/* Id of a special token ("bos", "eos", "pad"), or -1 when the tokenizer has none. */
int32_t zaya_tokenizer_special_id(const zaya_tokenizer *t, const char *which);

/* Appends the ids of text[0..len) to the growable array (*ids, *n, *cap), realloc'ing as needed.
 * Special-token strings in the text are encoded as ordinary bytes (never injected). */
zaya_status zaya_tokenizer_encode(const zaya_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n,
                                  size_t *cap);
/* Encoding flags. ADD_SPECIAL: apply the post-processor template (BOS/EOS), as HF's
 * add_special_tokens=True. PARSE_SPECIAL: special-token text in the input becomes the special id, as
 * HF by default; without it special tokens are encoded as ordinary text (HF's
 * encode_special_tokens=True), so data can never inject them. Non-special added tokens are always
 * split out, as HF does. */
enum { ZAYA_ENCODE_ADD_SPECIAL = 1, ZAYA_ENCODE_PARSE_SPECIAL = 2, ZAYA_ENCODE_TRUNCATE_PAD = 4 };
/* TRUNCATE_PAD applies the file's "truncation" and "padding" as HF's encode() does: the text's ids are
 * cut to max_length (less the template's ids with ADD_SPECIAL; from the end, or the start with
 * direction Left), the template is added, then pad_id fills up to the Fixed length or, for
 * BatchLongest, the encoding's own length, rounded up to pad_to_multiple_of (Right or Left). Without
 * the flag both are ignored (data preparation encodes whole documents). */
zaya_status zaya_tokenizer_encode_flags(const zaya_tokenizer *t, const char *text, size_t len, int flags, int32_t **ids,
                                        size_t *n, size_t *cap);

/* Decodes ids into a malloc'd byte string (*text, *len; NUL-terminated for convenience) through the
 * file's decoder, as HF decode(ids, skip_special_tokens=False). Special tokens decode to their
 * strings; ids out of range are an error naming the position. Where HF would print U+FFFD for byte
 * tokens that are not valid UTF-8, zaya gives the raw bytes. */
zaya_status zaya_tokenizer_decode(const zaya_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len);

/* An encoder keeps scratch buffers and (with use_cache) a cache of word -> ids (about 11 MiB) across
 * calls: use one per thread for many documents. It reads t, which must outlive it. */
typedef struct zaya_tokenizer_encoder zaya_tokenizer_encoder;
zaya_status zaya_tokenizer_encoder_init(const zaya_tokenizer *t, int use_cache, zaya_tokenizer_encoder **out);
zaya_status zaya_tokenizer_encoder_encode(zaya_tokenizer_encoder *e, const char *text, size_t len, int32_t **ids,
                                          size_t *n, size_t *cap);
zaya_status zaya_tokenizer_encoder_encode_flags(zaya_tokenizer_encoder *e, const char *text, size_t len, int flags,
                                                int32_t **ids, size_t *n, size_t *cap);
void zaya_tokenizer_encoder_free(zaya_tokenizer_encoder *e);

/* Byte lengths of the pre-tokens of text[0..len) under the file's regex pre-tokenizer alone (GPT-2
 * ByteLevel, Llama-3 or o200k Split; no added tokens, no normalizer), as a malloc'd array. Other
 * pre-tokenizers give ZAYA_EUNSUPPORTED. */
zaya_status zaya_tokenizer_pretokenize(const zaya_tokenizer *t, const char *text, size_t len, size_t **lens, size_t *n);

/* 1 when decode(encode(bytes)) == bytes for every input (byte-level vocabularies without whitespace-
 * stripping added tokens); normalizers, byte fallback to unk etc. make it 0. */
int zaya_tokenizer_is_byte_exact(const zaya_tokenizer *t);

/* Number of merges (the BPE model's rank table). */
int64_t zaya_tokenizer_merge_count(const zaya_tokenizer *t);
/* Raw bytes of token id (for added tokens, their content); NULL when id is out of range. */
const uint8_t *zaya_tokenizer_token_bytes(const zaya_tokenizer *t, int32_t id, size_t *len);

/* ---- `zaya tokenizer bench`: one-thread encoding throughput of zaya and, in the same run on the same
 * documents, of the Hugging Face `tokenizers` package run by `python` (skipped with a note when it is
 * missing), with an exact comparison of the ids. The inputs (files and directories, sorted) are
 * concatenated and cut into documents at the first newline after every doc_bytes bytes. Table to out,
 * OUT/bench.json. */
typedef struct zaya_tokenizer_bench_opts {
    const char *tokenizer; /* tokenizer.json */
    const char *out;       /* results directory */
    const char *python;    /* NULL: /usr/bin/python3 */
    int repeat;            /* timed runs, >= 1; the best is reported */
    int no_hf;             /* 1: zaya only */
    int64_t max_bytes;     /* 0: all input */
    int64_t doc_bytes;     /* 0: one document */
} zaya_tokenizer_bench_opts;
zaya_status zaya_tokenizer_bench_run(const zaya_tokenizer_bench_opts *o, const char *const *paths, int npaths, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

/* Token-level data pipeline: sources of shards, packing into fixed-length sequences, a deterministic
 * shuffle per epoch, a weighted mixture of sources, rank-disjoint slices of every global batch, a
 * resumable loader state, the held-out validation split and text -> shard preparation.
 * Policies (packing, mixture, re-split on a new world size) are documented in docs/data-format.md. */
#ifndef ZAYA_DATA_H
#define ZAYA_DATA_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "zaya/shard.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_DATA_MAX_SOURCES 8
#define ZAYA_DATA_NAME_MAX 32

/* ---- sources ---- */

/* A named list of shards read as one stream of documents (in path order). */
typedef struct zaya_data_source {
    char name[ZAYA_DATA_NAME_MAX];
    int nshards;
    zaya_shard *shards;
    uint64_t *stream_base; /* nshards+1: packed-stream position (tokens + separators) where shard i starts */
    uint64_t ntokens, ndocs;
    uint64_t vocab_size;
    uint32_t eos_id;
    uint64_t fingerprint; /* hash of the shards' checksums and sizes: detects a changed source on resume */
} zaya_data_source;

/* Expands files, directories (every *.ztok inside, sorted) and glob patterns into a sorted list of
 * paths; a pattern that matches nothing is an error naming it. */
zaya_status zaya_data_expand(const char *const *patterns, int npatterns, char ***paths, int *npaths);
void zaya_data_paths_free(char **paths, int npaths);

/* Opens and validates every shard (verify_checksum hashes their payloads too). All shards must agree
 * on vocab size and eos id, and must have an eos id (packing needs a separator). */
zaya_status zaya_data_source_open(zaya_data_source *src, const char *name, const char *const *patterns,
                                  int npatterns, int verify_checksum);
/* The same with zaya_shard_open_ext's options: sources may then name Megatron indexed datasets and
 * llm.c token files (docs/data-format.md), which need opts->vocab_size and opts->eos_id. */
zaya_status zaya_data_source_open_ext(zaya_data_source *src, const char *name, const char *const *patterns,
                                      int npatterns, const zaya_shard_open_opts *opts);
void zaya_data_source_free(zaya_data_source *src);

/* Packing: documents are joined as doc0 eos doc1 eos ... (one stream of ntokens + ndocs ids);
 * sequence i is stream[i*T, i*T + T + 1): inputs are its first T ids, targets its last T. */
uint64_t zaya_data_source_sequences(const zaya_data_source *src, int64_t seq_len);
/* Writes seq_len + 1 ids; index < zaya_data_source_sequences(src, seq_len). */
void zaya_data_source_read_sequence(const zaya_data_source *src, int64_t seq_len, uint64_t index, int32_t *dst);

typedef struct zaya_dataset {
    int nsources;
    zaya_data_source src[ZAYA_DATA_MAX_SOURCES];
} zaya_dataset;

/* Adds a source; its vocab size and eos id must match the sources already present. */
zaya_status zaya_dataset_add(zaya_dataset *ds, const char *name, const char *const *patterns, int npatterns,
                             int verify_checksum);
zaya_status zaya_dataset_add_ext(zaya_dataset *ds, const char *name, const char *const *patterns, int npatterns,
                                 const zaya_shard_open_opts *opts);
int zaya_dataset_find(const zaya_dataset *ds, const char *name); /* index or -1 */
void zaya_dataset_free(zaya_dataset *ds);

/* ---- shuffle and split ---- */

/* A bijection of [0, n) keyed by (seed, stream): a 4-round Feistel network on the smallest even
 * number of bits covering n, with cycle walking. O(1) memory, any index computable directly. */
uint64_t zaya_data_permute(uint64_t n, uint64_t seed, uint64_t stream, uint64_t i);

/* Held-out split by document: document number `ordinal` (in prepare's walk order) is validation data
 * iff a Philox draw keyed by (seed, ordinal) falls below val_fraction. */
int zaya_data_split_is_val(uint64_t seed, uint64_t ordinal, double val_fraction);

/* ---- loader ---- */

typedef struct zaya_loader_source_state {
    char name[ZAYA_DATA_NAME_MAX];
    uint64_t fingerprint; /* of the source the state was produced over */
    double weight;        /* current mixture weight (unnormalised; 0 = not drawn) */
    uint64_t drawn;       /* sequences drawn from this source under the current mixture */
    uint64_t epoch;       /* completed passes over the source */
    uint64_t cursor;      /* next position in this epoch's permutation */
    int64_t seq_len;      /* length the cursor counts in (0 = never drawn) */
} zaya_loader_source_state;

/* Everything needed to continue exactly: identical on every rank (the state is indexed by global
 * batch, so it also continues on a different number of ranks). */
typedef struct zaya_loader_state {
    uint32_t version;
    uint64_t seed;
    int64_t seq_len;    /* current packing length T */
    uint64_t sequences; /* sequences served so far, all ranks together */
    uint64_t batches;   /* global batches served */
    uint64_t mix_drawn; /* sequences drawn under the current mixture */
    int nsources;
    zaya_loader_source_state src[ZAYA_DATA_MAX_SOURCES];
} zaya_loader_state;

#define ZAYA_LOADER_STATE_VERSION 1u

typedef struct zaya_loader {
    const zaya_dataset *ds;         /* borrowed */
    int map[ZAYA_DATA_MAX_SOURCES]; /* state source -> dataset source */
    uint64_t nseq[ZAYA_DATA_MAX_SOURCES];   /* sequences per source at st.seq_len */
    uint64_t stream[ZAYA_DATA_MAX_SOURCES]; /* permutation stream of the current epoch */
    zaya_loader_state st;
} zaya_loader;

zaya_status zaya_loader_init(zaya_loader *l, const zaya_dataset *ds, uint64_t seed);
/* Sets sequence length and mixture weights (sources not named get weight 0). A no-op when both are
 * unchanged (as after a resume); otherwise the mixture counters restart, and a source already read
 * at another length starts a new epoch at the new one. */
zaya_status zaya_loader_set_mixture(zaya_loader *l, int64_t seq_len, const char *const *names, const double *weights,
                                    int n);
/* Draws the next global batch of global_batch sequences and writes this rank's contiguous slice,
 * rows [rank*G/world, (rank+1)*G/world), each seq_len + 1 ids, into dst. src_of_row (optional)
 * receives each row's source index in the dataset. global_batch must be divisible by world. */
zaya_status zaya_loader_next(zaya_loader *l, int64_t global_batch, int rank, int world, int32_t *dst,
                             int *src_of_row);
/* Continues from a saved state; sources are matched by name and must have the same fingerprint. */
zaya_status zaya_loader_restore(zaya_loader *l, const zaya_loader_state *st);

zaya_status zaya_loader_state_to_json(const zaya_loader_state *st, cJSON **out);
zaya_status zaya_loader_state_from_json(const cJSON *json, zaya_loader_state *st);
/* Fixed-size little-endian encoding with a checksum (ZAYA_LOADER_STATE_BYTES bytes). */
#define ZAYA_LOADER_STATE_BYTES (64 + ZAYA_DATA_MAX_SOURCES * 80 + 8)
void zaya_loader_state_to_bytes(const zaya_loader_state *st, uint8_t out[ZAYA_LOADER_STATE_BYTES]);
zaya_status zaya_loader_state_from_bytes(const uint8_t *buf, size_t len, zaya_loader_state *st);

/* ---- preparation: text -> shards ---- */

/* Text -> ids, appended to the growable array (*ids, *n, *cap) like zaya_tokenizer_encode. */
typedef zaya_status (*zaya_encode_fn)(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap);

typedef struct zaya_prepare_opts {
    const char *name;      /* source name: files <out_dir>/<name>-{train,val}-NNNNN.ztok */
    const char *out_dir;
    uint64_t vocab_size;
    uint32_t eos_id;
    uint64_t tokenizer_hash; /* stored in every shard header; 0 = unknown */
    double val_fraction;     /* fraction of documents held out, in [0, 0.5]; 0 = none */
    uint64_t seed;           /* for the split */
    uint64_t shard_tokens;   /* start a new shard after this many tokens (0: 64M) */
    const char *doc_delimiter; /* text files: a line equal to this separates documents (e.g. "%");
                                  NULL: one document per file */
    const char *extensions;  /* comma list of file name endings to read when walking directories
                                ("h,c", "jsonl.gz"); NULL: all. Files named explicitly are always read. */
    const char *jsonl_key;   /* dotted path of the JSONL field holding the text, e.g. "meta.body"
                                (NULL: "text") */
    const char *const *jsonl_filters; /* "KEY=VALUE" / "KEY!=VALUE", KEY dotted: a record is kept when all
                                         hold (strings compare as is; numbers, true, false, null by value) */
    int njsonl_filters;
    int strict;              /* a malformed JSONL line is an error; by default it is skipped, counted
                                and reported with file:line */
    int progress;            /* a progress line on stderr: MB/s, tokens/s, ETA */
    int overwrite;           /* replace existing shards of this source; otherwise they are an error */
    uint64_t max_line_bytes; /* JSONL: a longer line is an error (0: 1 GiB; docs/limits.md) */
    uint64_t max_expansion;  /* .gz/.zst: decompressed bytes per compressed byte before it is an error
                                (0: 1000; UINT64_MAX: no limit) */
} zaya_prepare_opts;

/* Why a JSONL line gave no document. */
typedef enum zaya_prepare_skip {
    ZAYA_SKIP_LINE_NONE = 0,
    ZAYA_SKIP_LINE_MALFORMED,  /* not valid JSON */
    ZAYA_SKIP_LINE_NOT_OBJECT, /* valid JSON, but not an object */
    ZAYA_SKIP_LINE_NO_KEY,     /* the text field is absent */
    ZAYA_SKIP_LINE_NOT_STRING, /* the text field is not a string */
    ZAYA_SKIP_LINE_FILTERED,   /* a metadata filter did not hold */
    ZAYA_SKIP_LINE_BLANK,      /* empty line, or text of whitespace only */
    ZAYA_SKIP_LINE_NREASONS
} zaya_prepare_skip;
/* "malformed_json", "not_an_object", "missing_key", "key_not_a_string", "filtered", "blank". */
const char *zaya_prepare_skip_name(zaya_prepare_skip r);
/* The first four reasons: broken data, as opposed to lines filtered out or blank. */
static inline int zaya_prepare_skip_is_bad(zaya_prepare_skip r) {
    return r >= ZAYA_SKIP_LINE_MALFORMED && r <= ZAYA_SKIP_LINE_NOT_STRING;
}

typedef struct zaya_prepare_stats {
    uint64_t files, skipped_files;
    uint64_t bytes;      /* text read: decompressed for .gz / .zst */
    uint64_t file_bytes; /* of the input files on disk */
    uint64_t docs;
    uint64_t train_docs, val_docs, train_tokens, val_tokens;
    int train_shards, val_shards;
    uint64_t jsonl_lines;
    uint64_t skipped_lines[ZAYA_SKIP_LINE_NREASONS]; /* by reason */
    char first_bad_line[512]; /* "FILE:LINE: reason" of the first broken JSONL line ("" if none) */
    int threads;              /* encoding threads used */
    double seconds;
} zaya_prepare_stats;

/* Walks inputs (files and directories, recursively, in sorted order). Files ending in .jsonl,
 * .jsonl.gz (gzip) or .jsonl.zst (zstd) are streamed as JSONL, one object per line with the text
 * at opts->jsonl_key; everything else is text. Documents are encoded in batches on nctx threads
 * (encode is called concurrently, thread t with ctxs[t]) and written in input order, so the shards
 * do not depend on nctx. Each document goes to train or validation by zaya_data_split_is_val;
 * shards plus <out_dir>/<name>.json (a manifest) are written. JSONL problems name the file and
 * line; a truncated or corrupt compressed file is an error naming the file and byte offset. On any
 * error no shard of the run is left. */
zaya_status zaya_data_prepare(const char *const *inputs, int ninputs, const zaya_prepare_opts *opts,
                              zaya_encode_fn encode, void *const *ctxs, int nctx, zaya_prepare_stats *stats);

/* `zaya data bench`: one source per path (equal weights); for sequence lengths 128..8192 (while every
 * source holds a sequence) the loader's tokens/s against a sequential int32 copy of the same shards,
 * each for at least min_s seconds after a warm-up batch of G sequences. Table to f, OUT/data-bench.json
 * and OUT/data-bench.png. */
zaya_status zaya_data_bench_run(const char *const *paths, int npaths, int64_t batch, double min_s, const char *out,
                                FILE *f);

#ifdef __cplusplus
}
#endif

#endif

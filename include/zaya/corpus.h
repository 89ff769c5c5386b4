/* Text -> token shards with a tokenizer: the bridge between the tokenizer and the data pipeline,
 * used by `zaya data prepare` and by the trainer's built-in data set. */
#ifndef ZAYA_CORPUS_H
#define ZAYA_CORPUS_H

#include <stdint.h>

#include "zaya/data.h"
#include "zaya/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* xxh3-64 of the tokenizer file's bytes: stored in every shard so that shards and tokenizer can be
 * matched later. */
zaya_status zaya_corpus_tokenizer_hash(const char *tokenizer_path, uint64_t *hash);

/* zaya_data_prepare with the tokenizer as the encoder, one encoder per OpenMP thread
 * (omp_get_max_threads()); opts->vocab_size, eos_id and tokenizer_hash are filled from the tokenizer
 * (eos must exist). */
zaya_status zaya_corpus_prepare(const char *tokenizer_path, const char *const *inputs, int ninputs,
                                zaya_prepare_opts *opts, zaya_prepare_stats *stats);

#ifdef __cplusplus
}
#endif

#endif

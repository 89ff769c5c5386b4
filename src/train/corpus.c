#include "zaya/corpus.h"

#include <omp.h>
#include <stdlib.h>
#include <xxhash.h>

#include "zaya/fs.h"

zaya_status zaya_corpus_tokenizer_hash(const char *tokenizer_path, uint64_t *hash) {
    char *data;
    size_t len;
    ZAYA_TRY(zaya_read_file(tokenizer_path, &data, &len));
    *hash = XXH3_64bits(data, len);
    free(data);
    return ZAYA_OK;
}

static zaya_status encode_with(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap) {
    return zaya_tokenizer_encoder_encode((zaya_tokenizer_encoder *)ctx, text, len, ids, n, cap);
}

zaya_status zaya_corpus_prepare(const char *tokenizer_path, const char *const *inputs, int ninputs,
                                zaya_prepare_opts *opts, zaya_prepare_stats *stats) {
    zaya_tokenizer *tok = NULL;
    ZAYA_TRY(zaya_tokenizer_load(tokenizer_path, &tok));
    zaya_status s = ZAYA_OK;
    int32_t eos = zaya_tokenizer_special_id(tok, "eos");
    if (eos < 0) {
        s = zaya_error_set(ZAYA_EINVAL, "tokenizer '%s' has no eos token; packing needs a document separator",
                           tokenizer_path);
        goto done;
    }
    opts->vocab_size = (uint64_t)zaya_tokenizer_vocab_size(tok);
    opts->eos_id = (uint32_t)eos;
    s = zaya_corpus_tokenizer_hash(tokenizer_path, &opts->tokenizer_hash);
    if (s != ZAYA_OK) goto done;
    /* one encoder (with its word cache) per thread: documents are encoded in parallel */
    int nt = omp_get_max_threads();
    zaya_tokenizer_encoder **enc = calloc((size_t)nt, sizeof *enc);
    if (!enc) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
    for (int i = 0; s == ZAYA_OK && i < nt; i++) s = zaya_tokenizer_encoder_init(tok, 1, &enc[i]);
    if (s == ZAYA_OK) s = zaya_data_prepare(inputs, ninputs, opts, encode_with, (void *const *)enc, nt, stats);
    for (int i = 0; enc && i < nt; i++) zaya_tokenizer_encoder_free(enc[i]);
    free(enc);
done:
    zaya_tokenizer_free(tok);
    return s;
}

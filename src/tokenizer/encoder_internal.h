/* The per-thread encoder: word cache and BPE scratch (bpe_encode.c), shared with the pipeline around
 * the model (encode_pipeline.c). */
#ifndef ZAYA_TOKENIZER_ENCODER_INTERNAL_H
#define ZAYA_TOKENIZER_ENCODER_INTERNAL_H

#include "tokenizer/tokenizer_internal.h"

#define CACHE_SLOTS (1u << 17)
#define CACHE_MAX_WORD 48
#define CACHE_BYTES (4u << 20)
#define CACHE_IDS (1u << 20)

typedef struct cache_slot {
    uint64_t hash;
    uint32_t byte_off, id_off;
    uint16_t len, n_ids; /* len 0 = empty */
} cache_slot;

typedef struct symbol {
    int32_t id, prev, next;
} symbol;

/* A candidate merge: its rank and the left symbol (the pair is merge_a/merge_b[rank]). */
typedef struct heap_item {
    int32_t rank, left;
} heap_item;

struct zaya_tokenizer_encoder {
    const zaya_tokenizer *t;
    cache_slot *slots;
    uint8_t *cache_bytes;
    int32_t *cache_ids;
    uint32_t bytes_used, ids_used, n_cached;
    symbol *syms;
    heap_item *heap;
    size_t work_cap; /* symbols capacity; the heap holds at most 3 per symbol (n-1 + 2 per merge) */
    int use_cache;
    const uint8_t *text; /* the caller's text during an encode call (error messages name offsets in it) */
    size_t text_len;
};

/* Appends the ids of one word (a pre-token: raw bytes for byte-level vocabularies, text for raw ones)
 * through the BPE model, with the cache. A word longer than ZAYA_TOKENIZER_MAX_WORD is an error naming
 * its length and offset; so is a failed allocation of the work arrays. */
zaya_status zaya_tok_append_word(zaya_tokenizer_encoder *e, const uint8_t *w, size_t n, int32_t **ids, size_t *nids,
                                 size_t *cap);
/* Makes room for `more` ids. */
zaya_status zaya_tok_ids_reserve(int32_t **ids, size_t *n, size_t *cap, size_t more);
/* The GPT-2 byte-level loop (no added tokens, no normalizer): pre-tokenize and encode each word. */
zaya_status zaya_tok_encode_words(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int32_t **ids, size_t *n,
                                  size_t *cap);
/* The full pipeline: added tokens, normalizer, pre-tokenizer, model, template (encode_pipeline.c). */
zaya_status zaya_tok_encode_pipeline(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int flags, int32_t **ids,
                                     size_t *n, size_t *cap);

#endif

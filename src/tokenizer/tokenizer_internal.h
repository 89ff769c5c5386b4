/* Internal layout of zaya_tokenizer, shared by the trainer, the encoder and the JSON reader/writer. */
#ifndef ZAYA_TOKENIZER_INTERNAL_H
#define ZAYA_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/tokenizer.h"

/* Added tokens (HF "added_tokens"): their content is raw text, not byte-level characters. */
typedef struct zaya_added_token {
    int32_t id;
    uint8_t special, single_word, lstrip, rstrip, normalized;
} zaya_added_token;

struct zaya_tokenizer {
    int32_t n_vocab; /* ids are 0..n_vocab-1 */
    /* Raw bytes of every id (for added tokens: their content), in one arena. */
    uint8_t *tok_bytes;
    uint64_t *tok_off;
    uint32_t *tok_len;
    uint8_t *in_model;   /* listed in model.vocab (HF keeps added tokens there too when trained) */
    int32_t *added_idx;  /* index into added[] or -1 */
    int32_t byte_id[256];

    /* Byte string -> id for every model-vocab token written in the byte-level alphabet. */
    int32_t *vmap;
    uint64_t vmap_mask;

    /* Merges by rank: (a, b) -> merged. The pair map gives rank + 1 (0 = no merge). */
    int32_t n_merges;
    int32_t *merge_a, *merge_b, *merge_id;
    uint64_t *pmap_key;
    int32_t *pmap_rank;
    uint64_t pmap_mask;

    int32_t n_added;
    zaya_added_token *added;
    int32_t bos, eos, pad;
    int use_regex, ignore_merges;
};

uint64_t zaya_tok_hash_bytes(const uint8_t *s, size_t n);
static inline uint64_t zaya_tok_pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

/* Builds vmap and pmap from the token and merge arrays (called after train or load). Fails when a
 * merge is listed twice. */
zaya_status zaya_tok_build_maps(zaya_tokenizer *t);
int32_t zaya_tok_lookup(const zaya_tokenizer *t, const uint8_t *s, size_t n);
/* Multiplicative hash; folding the high half down makes the low (slot) bits depend on both ids. */
static inline uint64_t zaya_tok_pair_slot(uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29) ^ (h >> 41);
}
/* Rank of merge (a, b), or -1. */
static inline int32_t zaya_tok_merge_rank(const zaya_tokenizer *t, int32_t a, int32_t b) {
    uint64_t key = zaya_tok_pair_key(a, b);
    for (uint64_t i = zaya_tok_pair_slot(key) & t->pmap_mask;; i = (i + 1) & t->pmap_mask) {
        int32_t r = t->pmap_rank[i];
        if (r == 0) return -1;
        if (t->pmap_key[i] == key) return r - 1;
    }
}

/* Byte-level text (GPT-2 alphabet, UTF-8) -> raw bytes; returns the byte count or -1 when a character
 * is outside the alphabet or the UTF-8 is invalid. out needs strlen(s) bytes. */
int64_t zaya_bytelevel_decode(const char *s, uint8_t *out);
/* Raw bytes -> byte-level UTF-8 text (malloc'd, NUL-terminated). */
char *zaya_bytelevel_encode(const uint8_t *s, size_t n);

/* Allocates the per-id arrays for n ids and `bytes` arena bytes (zeroed; added_idx = -1). */
zaya_status zaya_tok_alloc(zaya_tokenizer *t, int32_t n, uint64_t bytes);
const char *zaya_tok_role_name(const zaya_tokenizer *t, int32_t id);

#endif

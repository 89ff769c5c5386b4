/* Internal layout of zaya_tokenizer, shared by the trainer, the encoder and the JSON reader/writer. */
#ifndef ZAYA_TOKENIZER_INTERNAL_H
#define ZAYA_TOKENIZER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/json.h"
#include "zaya/tokenizer.h"

/* Added tokens (HF "added_tokens"): their content is raw text, not byte-level characters. */
typedef struct zaya_added_token {
    int32_t id;
    uint8_t special, single_word, lstrip, rstrip, normalized;
} zaya_added_token;

/* The pipeline pieces of a tokenizer.json beyond plain byte-level BPE (docs/tokenizer.md lists them). */
typedef enum zaya_tok_pre_kind {
    ZAYA_PRE_NONE = 0,   /* null: each piece between added tokens is one word */
    ZAYA_PRE_BYTELEVEL,  /* ByteLevel (use_regex: the GPT-2 pattern) */
    ZAYA_PRE_SPLIT,      /* Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)] */
    ZAYA_PRE_METASPACE,  /* Metaspace */
    ZAYA_PRE_DIGITS,     /* Sequence[Digits(individual_digits), ByteLevel(use_regex either)] (SmolLM, StarCoder) */
} zaya_tok_pre_kind;
typedef enum zaya_tok_split_pattern { ZAYA_SPLIT_LLAMA3 = 1, ZAYA_SPLIT_O200K, ZAYA_SPLIT_QWEN2, ZAYA_SPLIT_STRING } zaya_tok_split_pattern;
/* Split behaviours (HF SplitDelimiterBehavior). */
typedef enum zaya_tok_split_behavior {
    ZAYA_SPLIT_ISOLATED = 0, ZAYA_SPLIT_REMOVED, ZAYA_SPLIT_MERGED_PREV, ZAYA_SPLIT_MERGED_NEXT, ZAYA_SPLIT_CONTIGUOUS
} zaya_tok_split_behavior;
typedef enum zaya_tok_prepend { ZAYA_PREPEND_NEVER = 0, ZAYA_PREPEND_FIRST, ZAYA_PREPEND_ALWAYS } zaya_tok_prepend;

/* Normalizer steps (Sequence flattened): Replace(String), Prepend and the Unicode forms. */
typedef enum zaya_tok_norm_kind { ZAYA_NORM_REPLACE = 1, ZAYA_NORM_PREPEND, ZAYA_NORM_UNICODE } zaya_tok_norm_kind;
typedef struct zaya_tok_norm {
    int kind;
    int form;        /* ZAYA_NORM_UNICODE: zaya_unicode_form */
    char *from, *to; /* Replace: from -> to; Prepend: to */
    size_t from_len, to_len;
} zaya_tok_norm;

/* Decoder steps (Sequence flattened), applied to the list of token strings like HF's decode_chain. */
typedef enum zaya_tok_dec_kind {
    ZAYA_DEC_REPLACE = 1, ZAYA_DEC_BYTEFALLBACK, ZAYA_DEC_FUSE, ZAYA_DEC_STRIP, ZAYA_DEC_METASPACE
} zaya_tok_dec_kind;
typedef struct zaya_tok_dec {
    int kind;
    char *from, *to; /* Replace */
    size_t from_len, to_len;
    uint8_t ch[4];   /* Strip content / Metaspace replacement (one character, UTF-8) */
    int ch_len;
    int start, stop; /* Strip */
    int prepend;     /* Metaspace: zaya_tok_prepend */
} zaya_tok_dec;

/* Aho-Corasick automaton over added-token contents, for leftmost-longest matching (HF's
 * AddedVocabulary) in time linear in the text. Edges (node, byte) -> child live in one open-addressing
 * table; term[node] = added index + 1 or 0; fail[node] is the longest proper suffix that is a trie
 * node; out[node] the longest suffix (itself included) that ends a token, or 0; depth[node] its
 * length in bytes. */
typedef struct zaya_tok_trie {
    uint64_t *edge_key;
    int32_t *edge_child; /* 0 = empty slot (the root is node 0 and never a child) */
    uint64_t edge_mask;
    int32_t *term, *fail, *out, *depth;
    int32_t n_nodes;
    uint8_t first[256];  /* bytes that start some token */
    int any;
} zaya_tok_trie;

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
    int digits_individual; /* ZAYA_PRE_DIGITS: each digit alone (else runs of digits) */
    /* ZAYA_PRE_SPLIT: behaviour, invert, the String pattern (split_pattern ZAYA_SPLIT_STRING), and
     * what follows: ByteLevel (split_bytelevel; its use_regex is use_regex) or nothing (raw vocab). */
    int split_behavior, split_invert, split_bytelevel;
    char *split_str;
    size_t split_str_len;

    /* Beyond GPT-2 byte-level BPE. vocab_raw: model.vocab keys are the token text itself (UTF-8,
     * SentencePiece style) rather than GPT-2 byte-level characters. */
    int vocab_raw;
    int pre_kind, split_pattern;
    uint8_t ms_rep[4];  /* Metaspace replacement character (UTF-8) */
    int ms_rep_len, ms_prepend, ms_split;
    int n_norm, n_dec, has_decoder;
    zaya_tok_norm *norm;
    zaya_tok_dec *dec;
    int byte_fallback, fuse_unk;
    int32_t unk_id;        /* -1: none */
    int32_t fallback_id[256]; /* id of "<0xNN>" or -1 */
    int32_t char1_id[256]; /* id of the one-byte model token, or -1 (raw vocabularies) */
    /* Added tokens split out of the text: raw (normalized=false) and normalized (normalized=true, by
     * their normalized content). */
    zaya_tok_trie trie_raw, trie_norm;
    /* TemplateProcessing "single": ids before and after $A. */
    int32_t *tpl_pre, *tpl_post;
    int n_tpl_pre, n_tpl_post, has_template;
    int n_plain_added; /* added tokens with special=false (always split out of the text, as HF does) */
    /* Normalized contents of added tokens with normalized=true (NULL where none, or no normalizer):
     * what HF decodes such a token to. */
    uint8_t **added_norm;
    size_t *added_norm_len;
    /* HF "truncation" and "padding" (applied only with ZAYA_ENCODE_TRUNCATE_PAD). */
    int has_trunc, trunc_left, has_pad, pad_left;
    int64_t trunc_max, pad_fixed, pad_multiple; /* pad_fixed 0: BatchLongest (a batch of one) */
    int32_t pad_id;
};

uint64_t zaya_tok_hash_bytes(const uint8_t *s, size_t n);
static inline uint64_t zaya_tok_pair_key(int32_t a, int32_t b) { return ((uint64_t)(uint32_t)a << 32) | (uint32_t)b; }

/* Builds vmap and pmap from the token and merge arrays (called after train or load). Fails when a
 * merge is listed twice. */
zaya_status zaya_tok_build_maps(zaya_tokenizer *t);
/* The parts: the vocabulary map; an empty pair map sized for n merges and its insertion (returns the
 * rank already there for (a, b), or -1 after inserting), so a reader finds a repeat as it reads. */
zaya_status zaya_tok_build_vmap(zaya_tokenizer *t);
zaya_status zaya_tok_pmap_alloc(zaya_tokenizer *t, uint64_t n);
int32_t zaya_tok_pmap_insert(zaya_tokenizer *t, int32_t a, int32_t b, int32_t rank);
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

/* Pipeline (tokenizer_json_pipeline.c): reads normalizer, pre_tokenizer, decoder, post_processor and
 * the model flags; errors name the JSON path of what is not supported. */
zaya_status zaya_tok_read_pipeline(const cJSON *root, zaya_tokenizer *t);
zaya_status zaya_tok_read_template(const cJSON *root, zaya_tokenizer *t);
/* Builds the added-token tries once ids and the normalizer are known. */
zaya_status zaya_tok_build_tries(zaya_tokenizer *t);
void zaya_tok_free_pipeline(zaya_tokenizer *t);
/* Applies the normalizer to s[0..n): a malloc'd result in *out / *out_len (n bytes or more). */
zaya_status zaya_tok_normalize(const zaya_tokenizer *t, const uint8_t *s, size_t n, uint8_t **out, size_t *out_len);
/* Leftmost-longest added-token match in s[0..n) starting at or after `from`: returns the added index
 * and sets *at / *len, or -1. */
int32_t zaya_tok_trie_find(const zaya_tok_trie *tr, const uint8_t *s, size_t n, size_t from, size_t *at, size_t *len);
/* Bytes an id decodes from: an added token with normalized=true gives its normalized content. */
static inline const uint8_t *zaya_tok_decode_bytes(const zaya_tokenizer *t, int32_t id, size_t *len) {
    int32_t a = t->added_idx[id];
    if (a >= 0 && t->added_norm && t->added_norm[a]) {
        *len = t->added_norm_len[a];
        return t->added_norm[a];
    }
    *len = t->tok_len[id];
    return t->tok_bytes + t->tok_off[id];
}
/* 1 when the decoder is plain concatenation of the token bytes (GPT-2 byte-level). */
static inline int zaya_tok_plain_decode(const zaya_tokenizer *t) { return !t->vocab_raw; }

#endif

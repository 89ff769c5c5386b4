/* Tokenizer object: per-id byte strings, lookup tables, special tokens, decoding. */
#include "tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "tokenizer/unicode.h"

uint64_t zaya_tok_hash_bytes(const uint8_t *s, size_t n) { return XXH3_64bits(s, n); }

zaya_status zaya_tok_alloc(zaya_tokenizer *t, int32_t n, uint64_t bytes) {
    t->n_vocab = n;
    t->tok_bytes = malloc(bytes ? bytes : 1);
    t->tok_off = calloc((size_t)n + 1, sizeof *t->tok_off);
    t->tok_len = calloc((size_t)n + 1, sizeof *t->tok_len);
    t->in_model = calloc((size_t)n + 1, 1);
    t->added_idx = malloc(((size_t)n + 1) * sizeof *t->added_idx);
    if (!t->tok_bytes || !t->tok_off || !t->tok_len || !t->in_model || !t->added_idx)
        return zaya_error_set(ZAYA_ENOMEM, "tokenizer: cannot allocate %d tokens", n);
    for (int32_t i = 0; i < n; i++) t->added_idx[i] = -1;
    for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
    t->bos = t->eos = t->pad = -1;
    return ZAYA_OK;
}

static uint64_t table_size(uint64_t n) {
    uint64_t cap = 64;
    while (cap < 2 * n) cap <<= 1;
    return cap;
}

int32_t zaya_tok_lookup(const zaya_tokenizer *t, const uint8_t *s, size_t n) {
    for (uint64_t i = zaya_tok_hash_bytes(s, n) & t->vmap_mask;; i = (i + 1) & t->vmap_mask) {
        int32_t id = t->vmap[i];
        if (id < 0) return -1;
        if (t->tok_len[id] == n && !memcmp(t->tok_bytes + t->tok_off[id], s, n)) return id;
    }
}

zaya_status zaya_tok_build_maps(zaya_tokenizer *t) {
    free(t->vmap);
    free(t->pmap_key);
    free(t->pmap_rank);
    uint64_t vcap = table_size((uint64_t)t->n_vocab), pcap = table_size((uint64_t)t->n_merges);
    t->vmap = malloc(vcap * sizeof *t->vmap);
    t->pmap_key = malloc(pcap * sizeof *t->pmap_key);
    t->pmap_rank = calloc(pcap, sizeof *t->pmap_rank);
    if (!t->vmap || !t->pmap_key || !t->pmap_rank) return zaya_error_set(ZAYA_ENOMEM, "tokenizer: cannot allocate lookup tables");
    t->vmap_mask = vcap - 1;
    t->pmap_mask = pcap - 1;
    memset(t->vmap, 0xFF, vcap * sizeof *t->vmap);
    for (int32_t id = 0; id < t->n_vocab; id++) {
        /* Added tokens that are not plain byte strings of the model never come out of a merge. */
        if (!t->in_model[id]) continue;
        const uint8_t *s = t->tok_bytes + t->tok_off[id];
        uint32_t n = t->tok_len[id];
        uint64_t i = zaya_tok_hash_bytes(s, n) & t->vmap_mask;
        for (; t->vmap[i] >= 0; i = (i + 1) & t->vmap_mask) {
            int32_t o = t->vmap[i];
            if (t->tok_len[o] == n && !memcmp(t->tok_bytes + t->tok_off[o], s, n))
                return zaya_error_set(ZAYA_EFORMAT, "ids %d and %d are the same token", o, id);
        }
        t->vmap[i] = id;
        if (t->tok_len[id] == 1 && t->added_idx[id] < 0) t->byte_id[s[0]] = id;
    }
    for (int32_t r = 0; r < t->n_merges; r++) {
        uint64_t key = zaya_tok_pair_key(t->merge_a[r], t->merge_b[r]);
        uint64_t i = zaya_tok_pair_slot(key) & t->pmap_mask;
        for (; t->pmap_rank[i]; i = (i + 1) & t->pmap_mask)
            if (t->pmap_key[i] == key) return zaya_error_set(ZAYA_EFORMAT, "merge %d repeats merge %d", r, t->pmap_rank[i] - 1);
        t->pmap_key[i] = key;
        t->pmap_rank[i] = r + 1;
    }
    return ZAYA_OK;
}

void zaya_tokenizer_free(zaya_tokenizer *t) {
    if (!t) return;
    free(t->tok_bytes);
    free(t->tok_off);
    free(t->tok_len);
    free(t->in_model);
    free(t->added_idx);
    free(t->vmap);
    free(t->merge_a);
    free(t->merge_b);
    free(t->merge_id);
    free(t->pmap_key);
    free(t->pmap_rank);
    free(t->added);
    free(t);
}

int64_t zaya_tokenizer_vocab_size(const zaya_tokenizer *t) { return t->n_vocab; }

int32_t zaya_tokenizer_special_id(const zaya_tokenizer *t, const char *which) {
    if (!strcmp(which, "bos")) return t->bos;
    if (!strcmp(which, "eos")) return t->eos;
    if (!strcmp(which, "pad")) return t->pad;
    return -1;
}

const char *zaya_tok_role_name(const zaya_tokenizer *t, int32_t id) {
    if (id == t->bos) return "bos";
    if (id == t->eos) return "eos";
    if (id == t->pad) return "pad";
    return NULL;
}

zaya_status zaya_tokenizer_decode(const zaya_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return zaya_error_set(ZAYA_ERANGE, "decode: id %d at position %zu is outside the vocabulary [0, %d)", ids[i], i,
                                  t->n_vocab);
        total += t->tok_len[ids[i]];
    }
    char *out = malloc(total + 1);
    if (!out) return zaya_error_set(ZAYA_ENOMEM, "decode: cannot allocate %zu bytes", total + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(out + o, t->tok_bytes + t->tok_off[ids[i]], t->tok_len[ids[i]]);
        o += t->tok_len[ids[i]];
    }
    out[o] = '\0';
    *text = out;
    *len = o;
    return ZAYA_OK;
}

int64_t zaya_bytelevel_decode(const char *s, uint8_t *out) {
    const uint8_t *p = (const uint8_t *)s;
    size_t n = strlen(s);
    int64_t o = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = zaya_utf8_decode(p + i, n - i, &cp);
        if (cp == UINT32_MAX) return -1;
        int b = zaya_cp_to_byte(cp);
        if (b < 0) return -1;
        out[o++] = (uint8_t)b;
        i += (size_t)len;
    }
    return o;
}

char *zaya_bytelevel_encode(const uint8_t *s, size_t n) {
    char *out = malloc(2 * n + 1); /* every alphabet character takes 1 or 2 UTF-8 bytes */
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) o += (size_t)zaya_utf8_encode(zaya_byte_to_cp[s[i]], (uint8_t *)out + o);
    out[o] = '\0';
    return out;
}

int64_t zaya_tokenizer_merge_count(const zaya_tokenizer *t) { return t->n_merges; }

const uint8_t *zaya_tokenizer_token_bytes(const zaya_tokenizer *t, int32_t id, size_t *len) {
    if (id < 0 || id >= t->n_vocab) return NULL;
    *len = t->tok_len[id];
    return t->tok_bytes + t->tok_off[id];
}

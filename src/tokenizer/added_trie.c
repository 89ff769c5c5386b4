/* Added-token matching (HF's AddedVocabulary): a byte trie of the token contents, searched
 * leftmost-longest. Tokens with normalized=false are matched in the raw text; normalized=true ones by
 * their normalized content in the normalized text. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

static inline uint64_t edge_hash(uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

static int32_t edge_get(const zaya_tok_trie *tr, int32_t node, uint8_t b) {
    uint64_t key = ((uint64_t)(uint32_t)node << 8) | b;
    for (uint64_t i = edge_hash(key) & tr->edge_mask;; i = (i + 1) & tr->edge_mask) {
        if (!tr->edge_child[i]) return 0;
        if (tr->edge_key[i] == key) return tr->edge_child[i];
    }
}

static zaya_status trie_init(zaya_tok_trie *tr, uint64_t total_bytes) {
    uint64_t cap = 64;
    while (cap < 2 * (total_bytes + 1)) cap <<= 1;
    tr->edge_key = malloc(cap * sizeof *tr->edge_key);
    tr->edge_child = calloc(cap, sizeof *tr->edge_child);
    tr->term = calloc(total_bytes + 1, sizeof *tr->term);
    if (!tr->edge_key || !tr->edge_child || !tr->term) return zaya_error_set(ZAYA_ENOMEM, "added tokens: out of memory");
    tr->edge_mask = cap - 1;
    tr->n_nodes = 1;
    return ZAYA_OK;
}

static void trie_insert(zaya_tok_trie *tr, const uint8_t *s, size_t n, int32_t idx) {
    int32_t node = 0;
    for (size_t k = 0; k < n; k++) {
        int32_t c = edge_get(tr, node, s[k]);
        if (!c) {
            uint64_t key = ((uint64_t)(uint32_t)node << 8) | s[k];
            uint64_t i = edge_hash(key) & tr->edge_mask;
            while (tr->edge_child[i]) i = (i + 1) & tr->edge_mask;
            c = tr->n_nodes++;
            tr->edge_key[i] = key;
            tr->edge_child[i] = c;
        }
        node = c;
    }
    if (!tr->term[node]) tr->term[node] = idx + 1; /* a repeated content: the first entry wins */
    tr->first[s[0]] = 1;
    tr->any = 1;
}

int32_t zaya_tok_trie_find(const zaya_tok_trie *tr, const uint8_t *s, size_t n, size_t from, size_t *at, size_t *len) {
    if (!tr->any) return -1;
    for (size_t i = from; i < n; i++) {
        if (!tr->first[s[i]]) continue;
        int32_t node = 0, best = -1;
        size_t best_len = 0;
        for (size_t j = i; j < n; j++) {
            node = edge_get(tr, node, s[j]);
            if (!node) break;
            if (tr->term[node]) {
                best = tr->term[node] - 1;
                best_len = j + 1 - i;
            }
        }
        if (best >= 0) {
            *at = i;
            *len = best_len;
            return best;
        }
    }
    return -1;
}

zaya_status zaya_tok_build_tries(zaya_tokenizer *t) {
    uint64_t raw_bytes = 0, norm_bytes = 0;
    uint8_t **normed = calloc((size_t)t->n_added + 1, sizeof *normed);
    size_t *normed_len = calloc((size_t)t->n_added + 1, sizeof *normed_len);
    zaya_status s = normed && normed_len ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "added tokens: out of memory");
    for (int32_t a = 0; s == ZAYA_OK && a < t->n_added; a++) {
        int32_t id = t->added[a].id;
        const uint8_t *c = t->tok_bytes + t->tok_off[id];
        size_t n = t->tok_len[id];
        if (t->added[a].normalized && t->n_norm) {
            s = zaya_tok_normalize(t, c, n, &normed[a], &normed_len[a]);
            norm_bytes += normed_len[a];
        } else if (t->added[a].normalized) {
            norm_bytes += n;
        } else {
            raw_bytes += n;
        }
    }
    if (s == ZAYA_OK) s = trie_init(&t->trie_raw, raw_bytes);
    if (s == ZAYA_OK) s = trie_init(&t->trie_norm, norm_bytes);
    for (int32_t a = 0; s == ZAYA_OK && a < t->n_added; a++) {
        int32_t id = t->added[a].id;
        const uint8_t *c = normed[a] ? normed[a] : t->tok_bytes + t->tok_off[id];
        size_t n = normed[a] ? normed_len[a] : t->tok_len[id];
        if (n) trie_insert(t->added[a].normalized ? &t->trie_norm : &t->trie_raw, c, n, a);
    }
    for (int32_t a = 0; normed && a < t->n_added; a++) free(normed[a]);
    free(normed);
    free(normed_len);
    return s;
}

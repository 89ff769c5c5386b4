/* Added-token matching (HF's AddedVocabulary): an Aho-Corasick automaton over the token contents,
 * searched leftmost-longest. Tokens with normalized=false are matched in the raw text; normalized=true ones by
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
    size_t nodes = (size_t)total_bytes + 1;
    tr->edge_key = malloc(cap * sizeof *tr->edge_key);
    tr->edge_child = calloc(cap, sizeof *tr->edge_child);
    tr->term = calloc(nodes, sizeof *tr->term);
    tr->fail = calloc(nodes, sizeof *tr->fail);
    tr->out = calloc(nodes, sizeof *tr->out);
    tr->depth = calloc(nodes, sizeof *tr->depth);
    if (!tr->edge_key || !tr->edge_child || !tr->term || !tr->fail || !tr->out || !tr->depth)
        return zaya_error_set(ZAYA_ENOMEM, "added tokens: cannot allocate the matcher for %llu bytes of token text",
                              (unsigned long long)total_bytes);
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
            tr->depth[c] = tr->depth[node] + 1;
        }
        node = c;
    }
    if (!tr->term[node]) tr->term[node] = idx + 1; /* a repeated normalized content: the first entry wins */
    tr->first[s[0]] = 1;
    tr->any = 1;
}

/* The automaton's transition: the longest suffix of (node's string + b) that is a trie node. */
static int32_t goto_next(const zaya_tok_trie *tr, int32_t node, uint8_t b) {
    for (;;) {
        int32_t c = edge_get(tr, node, b);
        if (c || node == 0) return c;
        node = tr->fail[node];
    }
}

/* Failure and output links, parents before children (breadth first by depth): O(total bytes). */
static zaya_status trie_link(zaya_tok_trie *tr) {
    int32_t n = tr->n_nodes, maxd = 0;
    for (int32_t v = 0; v < n; v++) maxd = tr->depth[v] > maxd ? tr->depth[v] : maxd;
    int32_t *start = calloc((size_t)maxd + 2, sizeof *start), *order = malloc((size_t)n * sizeof *order);
    int32_t *parent = malloc((size_t)n * sizeof *parent);
    uint8_t *byte = malloc((size_t)n);
    if (!start || !order || !parent || !byte) {
        free(start), free(order), free(parent), free(byte);
        return zaya_error_set(ZAYA_ENOMEM, "added tokens: out of memory building the matcher");
    }
    for (uint64_t i = 0; i <= tr->edge_mask; i++) {
        int32_t c = tr->edge_child[i];
        if (!c) continue;
        parent[c] = (int32_t)(tr->edge_key[i] >> 8);
        byte[c] = (uint8_t)tr->edge_key[i];
    }
    for (int32_t v = 0; v < n; v++) start[tr->depth[v] + 1]++;
    for (int32_t d = 1; d <= maxd + 1; d++) start[d] += start[d - 1];
    for (int32_t v = 0; v < n; v++) order[start[tr->depth[v]]++] = v;
    tr->fail[0] = 0;
    tr->out[0] = 0;
    for (int32_t k = 1; k < n; k++) {
        int32_t v = order[k], p = parent[v];
        tr->fail[v] = p == 0 ? 0 : goto_next(tr, tr->fail[p], byte[v]);
        tr->out[v] = tr->term[v] ? v : tr->out[tr->fail[v]];
    }
    free(start), free(order), free(parent), free(byte);
    return ZAYA_OK;
}

/* Leftmost-longest: scan with the automaton from `from`; the longest token ending at each position is
 * out[state], starting depth[out] bytes back. Once a match starting at `bs` is known, the scan goes on
 * only while a token in progress could still start at or before bs (the state's depth reaches back
 * that far), so a match is final after at most one token length past it. */
int32_t zaya_tok_trie_find(const zaya_tok_trie *tr, const uint8_t *s, size_t n, size_t from, size_t *at, size_t *len) {
    if (!tr->any) return -1;
    int32_t state = 0, best = -1;
    size_t bs = 0, bl = 0;
    for (size_t p = from; p < n; p++) {
        if (state == 0 && !tr->first[s[p]]) {
            if (best >= 0) break;
            continue;
        }
        state = goto_next(tr, state, s[p]);
        size_t end = p + 1;
        if (best >= 0 && end - (size_t)tr->depth[state] > bs) break;
        int32_t o = tr->out[state];
        if (o) {
            size_t ol = (size_t)tr->depth[o], st = end - ol;
            if (best < 0 || st < bs || (st == bs && ol > bl)) {
                best = tr->term[o] - 1;
                bs = st;
                bl = ol;
            }
        }
    }
    if (best < 0) return -1;
    *at = bs;
    *len = bl;
    return best;
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
    if (s == ZAYA_OK) s = trie_link(&t->trie_raw);
    if (s == ZAYA_OK) s = trie_link(&t->trie_norm);
    /* Kept for decoding (zaya_tok_decode_bytes). */
    if (s == ZAYA_OK) {
        t->added_norm = normed;
        t->added_norm_len = normed_len;
        return ZAYA_OK;
    }
    for (int32_t a = 0; normed && a < t->n_added; a++) free(normed[a]);
    free(normed);
    free(normed_len);
    return s;
}

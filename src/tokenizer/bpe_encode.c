/* Encoding: pre-tokenize, then apply merges to each word by rank (lowest rank first, leftmost on
 * ties, exactly as HF's BPE model), with a cache of frequent words per encoder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/encoder_internal.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

zaya_status zaya_tokenizer_encoder_init(const zaya_tokenizer *t, int use_cache, zaya_tokenizer_encoder **out) {
    zaya_tokenizer_encoder *e = calloc(1, sizeof *e);
    if (!e) return zaya_error_set(ZAYA_ENOMEM, "tokenizer: cannot allocate an encoder");
    e->t = t;
    e->use_cache = use_cache;
    if (use_cache) {
        e->slots = calloc(CACHE_SLOTS, sizeof *e->slots);
        e->cache_bytes = malloc(CACHE_BYTES);
        e->cache_ids = malloc(CACHE_IDS * sizeof *e->cache_ids);
    }
    e->work_cap = 256;
    e->syms = malloc(e->work_cap * sizeof *e->syms);
    e->heap = malloc(3 * e->work_cap * sizeof *e->heap);
    if ((use_cache && (!e->slots || !e->cache_bytes || !e->cache_ids)) || !e->syms || !e->heap) {
        zaya_tokenizer_encoder_free(e);
        return zaya_error_set(ZAYA_ENOMEM, "tokenizer: cannot allocate an encoder");
    }
    *out = e;
    return ZAYA_OK;
}

void zaya_tokenizer_encoder_free(zaya_tokenizer_encoder *e) {
    if (!e) return;
    free(e->slots);
    free(e->cache_bytes);
    free(e->cache_ids);
    free(e->syms);
    free(e->heap);
    free(e);
}

static inline int heap_less(const heap_item *x, const heap_item *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->left < y->left);
}

static void heap_push(heap_item *h, size_t *n, heap_item it) {
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&it, &h[p])) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = it;
}

static heap_item heap_pop(heap_item *h, size_t *n) {
    heap_item top = h[0], last = h[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && heap_less(&h[c + 1], &h[c])) c++;
        if (!heap_less(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

static void push_pair(const zaya_tokenizer *t, heap_item *h, size_t *nh, const symbol *s, int32_t left) {
    int32_t right = s[left].next;
    if (right < 0) return;
    int32_t r = zaya_tok_merge_rank(t, s[left].id, s[right].id);
    if (r >= 0) heap_push(h, nh, (heap_item){r, left});
}

/* Where a word lies, for error messages: a byte offset of the caller's text, or the normalized text. */
static void word_place(const zaya_tokenizer_encoder *e, const uint8_t *w, char *buf, size_t n) {
    if (e->text && w >= e->text && w < e->text + e->text_len)
        snprintf(buf, n, "at byte %zu of the input", (size_t)(w - e->text));
    else
        snprintf(buf, n, "in the normalized text");
}

/* Grows the symbol and heap arrays to n symbols; the pre-token length was checked against
 * ZAYA_TOKENIZER_MAX_WORD by the caller. */
static zaya_status ensure_work(zaya_tokenizer_encoder *e, const uint8_t *w, size_t n) {
    if (n <= e->work_cap) return ZAYA_OK;
    size_t cap = e->work_cap;
    while (cap < n) cap *= 2;
    symbol *s = realloc(e->syms, cap * sizeof *s);
    if (s) e->syms = s;
    heap_item *h = s ? realloc(e->heap, 3 * cap * sizeof *h) : NULL;
    if (h) e->heap = h;
    if (!s || !h) {
        char where[64];
        word_place(e, w, where, sizeof where);
        return zaya_error_set(ZAYA_ENOMEM, "encode: cannot allocate %zu bytes of BPE work space for a pre-token of %zu bytes %s",
                              cap * (sizeof *s + 3 * sizeof *h), n, where);
    }
    e->work_cap = cap;
    return ZAYA_OK;
}

/* Merges the m symbols in e->syms (ids set, linked in order) by rank; writes the ids to out. */
static size_t merge_symbols(zaya_tokenizer_encoder *e, size_t m, int32_t *out) {
    const zaya_tokenizer *t = e->t;
    if (m == 0) return 0;
    symbol *s = e->syms;
    heap_item *h = e->heap;
    size_t nh = 0;
    for (size_t i = 0; i < m; i++) {
        s[i].prev = (int32_t)i - 1;
        s[i].next = i + 1 < m ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < m; i++) push_pair(t, h, &nh, s, (int32_t)i);
    while (nh) {
        heap_item it = heap_pop(h, &nh);
        int32_t left = it.left, right = s[left].next;
        /* Stale unless the pair is still the one of this rank (a rank names exactly one pair). */
        if (right < 0 || s[left].id != t->merge_a[it.rank] || s[right].id != t->merge_b[it.rank]) continue;
        s[left].id = t->merge_id[it.rank];
        int32_t next = s[right].next;
        s[left].next = next;
        if (next >= 0) s[next].prev = left;
        s[right].id = -1;
        if (s[left].prev >= 0) push_pair(t, h, &nh, s, s[left].prev);
        push_pair(t, h, &nh, s, left);
    }
    size_t k = 0;
    for (int32_t i = 0; i >= 0; i = s[i].next) out[k++] = s[i].id;
    return k;
}

/* BPE on one word of n >= 2 bytes (byte-level vocabulary); writes at most n ids to out. */
static zaya_status bpe_word(zaya_tokenizer_encoder *e, const uint8_t *w, size_t n, int32_t *out, size_t *k) {
    const zaya_tokenizer *t = e->t;
    if (t->ignore_merges) {
        int32_t id = zaya_tok_lookup(t, w, n);
        if (id >= 0) { out[0] = id; *k = 1; return ZAYA_OK; }
    }
    ZAYA_TRY(ensure_work(e, w, n));
    for (size_t i = 0; i < n; i++) e->syms[i].id = t->byte_id[w[i]];
    *k = merge_symbols(e, n, out);
    return ZAYA_OK;
}

/* BPE on one word of a raw (SentencePiece-style) vocabulary, as HF's BPE::merge_word: each character
 * is its token, else its "<0xNN>" byte tokens (byte_fallback), else unk (fused when fuse_unk), else
 * dropped. Bytes that are not valid UTF-8 count as one-byte characters (so they fall back to bytes). */
static zaya_status raw_word(zaya_tokenizer_encoder *e, const uint8_t *w, size_t n, int32_t *out, size_t *k) {
    const zaya_tokenizer *t = e->t;
    if (t->ignore_merges) {
        int32_t id = zaya_tok_lookup(t, w, n);
        if (id >= 0) { out[0] = id; *k = 1; return ZAYA_OK; }
    }
    ZAYA_TRY(ensure_work(e, w, n));
    symbol *s = e->syms;
    size_t m = 0;
    int unk_pending = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = w[i] < 0x80 ? 1 : zaya_utf8_decode(w + i, n - i, &cp);
        int32_t id = len == 1 ? t->char1_id[w[i]] : zaya_tok_lookup(t, w + i, (size_t)len);
        if (id >= 0) {
            if (unk_pending) s[m++].id = t->unk_id;
            unk_pending = 0;
            s[m++].id = id;
        } else {
            int all = t->byte_fallback;
            for (int k = 0; all && k < len; k++) all = t->fallback_id[w[i + k]] >= 0;
            if (all) {
                /* As HF: a pending unk is not flushed before the byte tokens. */
                for (int k = 0; k < len; k++) s[m++].id = t->fallback_id[w[i + k]];
            } else if (t->unk_id >= 0) {
                if (unk_pending && !t->fuse_unk) s[m++].id = t->unk_id;
                unk_pending = 1;
            }
        }
        i += (size_t)len;
    }
    if (unk_pending) s[m++].id = t->unk_id;
    *k = merge_symbols(e, m, out);
    return ZAYA_OK;
}

static zaya_status model_word(zaya_tokenizer_encoder *e, const uint8_t *w, size_t n, int32_t *out, size_t *k) {
    return e->t->vocab_raw ? raw_word(e, w, n, out, k) : bpe_word(e, w, n, out, k);
}

/* Ids of one word into out (room for n ids); *k receives their count. */
static zaya_status encode_word(zaya_tokenizer_encoder *e, const uint8_t *w, size_t n, int32_t *out, size_t *k) {
    *k = 0;
    if (n == 0) return ZAYA_OK;
    if (n == 1 && !e->t->vocab_raw) {
        out[0] = e->t->byte_id[w[0]];
        *k = 1;
        return ZAYA_OK;
    }
    if (n > CACHE_MAX_WORD || !e->use_cache) return model_word(e, w, n, out, k);
    uint64_t hash = zaya_tok_hash_bytes(w, n);
    uint32_t i = (uint32_t)hash & (CACHE_SLOTS - 1);
    for (int probe = 0; probe < 8; probe++, i = (i + 1) & (CACHE_SLOTS - 1)) {
        cache_slot *c = &e->slots[i];
        if (c->len == 0) break;
        if (c->hash == hash && c->len == n && !memcmp(e->cache_bytes + c->byte_off, w, n)) {
            memcpy(out, e->cache_ids + c->id_off, c->n_ids * sizeof *out);
            *k = c->n_ids;
            return ZAYA_OK;
        }
    }
    ZAYA_TRY(model_word(e, w, n, out, k));
    /* Insert while there is room; once the arenas fill, later words are simply not cached. */
    if (e->slots[i].len == 0 && e->bytes_used + n <= CACHE_BYTES && e->ids_used + *k <= CACHE_IDS &&
        e->n_cached < CACHE_SLOTS / 2) {
        e->slots[i] = (cache_slot){hash, e->bytes_used, e->ids_used, (uint16_t)n, (uint16_t)*k};
        memcpy(e->cache_bytes + e->bytes_used, w, n);
        memcpy(e->cache_ids + e->ids_used, out, *k * sizeof *out);
        e->bytes_used += (uint32_t)n;
        e->ids_used += (uint32_t)*k;
        e->n_cached++;
    }
    return ZAYA_OK;
}

zaya_status zaya_tok_append_word(zaya_tokenizer_encoder *e, const uint8_t *w, size_t n, int32_t **ids, size_t *nids,
                                 size_t *cap) {
    if (n > ZAYA_TOKENIZER_MAX_WORD) {
        char where[64];
        word_place(e, w, where, sizeof where);
        return zaya_error_set(ZAYA_ERANGE,
                              "encode: a pre-token of %zu bytes %s is longer than the limit of %u bytes (split the document; "
                              "docs/limits.md)",
                              n, where, (unsigned)ZAYA_TOKENIZER_MAX_WORD);
    }
    ZAYA_TRY(zaya_tok_ids_reserve(ids, nids, cap, n));
    size_t k;
    ZAYA_TRY(encode_word(e, w, n, *ids + *nids, &k));
    *nids += k;
    return ZAYA_OK;
}

zaya_status zaya_tok_ids_reserve(int32_t **ids, size_t *n, size_t *cap, size_t more) {
    if (*n + more <= *cap) return ZAYA_OK;
    size_t c = *cap ? *cap : 1024;
    while (c < *n + more) c *= 2;
    int32_t *p = realloc(*ids, c * sizeof *p);
    if (!p) return zaya_error_set(ZAYA_ENOMEM, "encode: cannot grow the id array to %zu ids", c);
    *ids = p;
    *cap = c;
    return ZAYA_OK;
}

zaya_status zaya_tok_encode_words(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int32_t **ids, size_t *n,
                                  size_t *cap) {
    size_t i = 0;
    while (i < len) {
        size_t end = e->t->use_regex ? zaya_pretok_next(s, len, i) : len;
        ZAYA_TRY(zaya_tok_append_word(e, s + i, end - i, ids, n, cap));
        i = end;
    }
    return ZAYA_OK;
}

/* HF's encode() with truncation and padding: the text's ids, cut to max_length less the template,
 * then the template, then padding (see ZAYA_ENCODE_TRUNCATE_PAD). */
static zaya_status encode_truncate_pad(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int flags, int32_t **ids,
                                       size_t *n, size_t *cap) {
    const zaya_tokenizer *t = e->t;
    int add = (flags & ZAYA_ENCODE_ADD_SPECIAL) && t->has_template;
    size_t n0 = *n, extra = add ? (size_t)(t->n_tpl_pre + t->n_tpl_post) : 0;
    ZAYA_TRY(zaya_tok_encode_pipeline(e, s, len, flags & ZAYA_ENCODE_PARSE_SPECIAL, ids, n, cap));
    size_t body = *n - n0;
    if (t->has_trunc) {
        size_t max = (size_t)t->trunc_max > extra ? (size_t)t->trunc_max - extra : 0;
        if (body > max) {
            if (t->trunc_left) memmove(*ids + n0, *ids + n0 + (body - max), max * sizeof **ids);
            body = max;
            *n = n0 + body;
        }
    }
    if (add) {
        ZAYA_TRY(zaya_tok_ids_reserve(ids, n, cap, extra));
        int32_t *b = *ids + n0;
        memmove(b + t->n_tpl_pre, b, body * sizeof *b);
        if (t->n_tpl_pre) memcpy(b, t->tpl_pre, (size_t)t->n_tpl_pre * sizeof *b);
        if (t->n_tpl_post) memcpy(b + t->n_tpl_pre + body, t->tpl_post, (size_t)t->n_tpl_post * sizeof *b);
        *n += extra;
    }
    if (t->has_pad) {
        size_t have = *n - n0, want = t->pad_fixed ? (size_t)t->pad_fixed : have;
        if (t->pad_multiple > 0 && want % (size_t)t->pad_multiple) want += (size_t)t->pad_multiple - want % (size_t)t->pad_multiple;
        if (want > have) {
            size_t pad = want - have;
            ZAYA_TRY(zaya_tok_ids_reserve(ids, n, cap, pad));
            int32_t *b = *ids + n0;
            if (t->pad_left) memmove(b + pad, b, have * sizeof *b);
            for (size_t i = 0; i < pad; i++) b[t->pad_left ? i : have + i] = t->pad_id;
            *n += pad;
        }
    }
    return ZAYA_OK;
}

zaya_status zaya_tokenizer_encoder_encode_flags(zaya_tokenizer_encoder *e, const char *text, size_t len, int flags,
                                                int32_t **ids, size_t *n, size_t *cap) {
    const zaya_tokenizer *t = e->t;
    const uint8_t *s = (const uint8_t *)text;
    e->text = s;
    e->text_len = len;
    zaya_status st;
    if ((flags & ZAYA_ENCODE_TRUNCATE_PAD) && (t->has_trunc || t->has_pad)) {
        st = encode_truncate_pad(e, s, len, flags, ids, n, cap);
        e->text = NULL;
        e->text_len = 0;
        return st;
    }
    /* GPT-2 byte-level with nothing to split out: the plain loop. */
    if (t->pre_kind == ZAYA_PRE_BYTELEVEL && !t->n_norm && !t->n_plain_added &&
        !(flags & (ZAYA_ENCODE_PARSE_SPECIAL | ZAYA_ENCODE_ADD_SPECIAL)))
        st = zaya_tok_encode_words(e, s, len, ids, n, cap);
    else
        st = zaya_tok_encode_pipeline(e, s, len, flags, ids, n, cap);
    e->text = NULL;
    e->text_len = 0;
    return st;
}

zaya_status zaya_tokenizer_encoder_encode(zaya_tokenizer_encoder *e, const char *text, size_t len, int32_t **ids,
                                          size_t *n, size_t *cap) {
    return zaya_tokenizer_encoder_encode_flags(e, text, len, 0, ids, n, cap);
}

zaya_status zaya_tokenizer_encode(const zaya_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n,
                                  size_t *cap) {
    return zaya_tokenizer_encode_flags(t, text, len, 0, ids, n, cap);
}

zaya_status zaya_tokenizer_encode_flags(const zaya_tokenizer *t, const char *text, size_t len, int flags, int32_t **ids,
                                        size_t *n, size_t *cap) {
    zaya_tokenizer_encoder *e;
    /* The word cache pays off only on inputs long enough to repeat words many times. */
    ZAYA_TRY(zaya_tokenizer_encoder_init(t, len >= (64u << 10), &e));
    zaya_status st = zaya_tokenizer_encoder_encode_flags(e, text, len, flags, ids, n, cap);
    zaya_tokenizer_encoder_free(e);
    return st;
}

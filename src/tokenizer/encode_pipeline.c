/* The encoding pipeline around the BPE model, in HF `tokenizers` order: added tokens with
 * normalized=false are split out of the raw text; each remaining piece is normalized; added tokens with
 * normalized=true are split out of the normalized piece; the rest is pre-tokenized (ByteLevel, Split
 * regex + ByteLevel, Metaspace or none) and each word goes through the model; the template adds
 * BOS/EOS around the whole. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/encoder_internal.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

/* ---- normalizer ---- */

/* Replaces every non-overlapping occurrence of from (left to right) by to, in time linear in n
 * (memmem); a result longer than `limit` bytes is an error before anything is allocated. */
static zaya_status replace_all(const uint8_t *s, size_t n, const char *from, size_t fl, const char *to, size_t tl,
                               size_t limit, uint8_t **out, size_t *out_len) {
    size_t count = 0;
    for (const uint8_t *p = s, *end = s + n; fl && p + fl <= end;) {
        const uint8_t *q = memmem(p, (size_t)(end - p), from, fl);
        if (!q) break;
        count++;
        p = q + fl;
    }
    /* n - count*fl + count*tl without overflow: count*fl <= n. */
    size_t grow = tl > fl ? tl - fl : 0, shrink = fl > tl ? fl - tl : 0;
    if (grow && count > (limit - (n < limit ? n : limit)) / grow)
        return zaya_error_set(ZAYA_ERANGE, "normalizer: Replace would turn %zu bytes into more than %zu (the limit is %u x the "
                              "input + %u bytes; docs/limits.md)", n, limit, (unsigned)ZAYA_TOKENIZER_NORM_GROWTH,
                              (unsigned)ZAYA_TOKENIZER_NORM_SLACK);
    size_t total = n + count * grow - count * shrink;
    uint8_t *o = malloc(total + 1);
    if (!o) return zaya_error_set(ZAYA_ENOMEM, "normalizer: cannot allocate %zu bytes", total + 1);
    size_t k = 0;
    const uint8_t *p = s, *end = s + n;
    while (count) {
        const uint8_t *q = memmem(p, (size_t)(end - p), from, fl);
        memcpy(o + k, p, (size_t)(q - p));
        k += (size_t)(q - p);
        memcpy(o + k, to, tl);
        k += tl;
        p = q + fl;
        count--;
    }
    memcpy(o + k, p, (size_t)(end - p));
    k += (size_t)(end - p);
    *out = o;
    *out_len = k;
    return ZAYA_OK;
}

/* The normalizer's output budget for an input of n bytes. */
static size_t norm_limit(size_t n) {
    if (n > (SIZE_MAX - ZAYA_TOKENIZER_NORM_SLACK) / ZAYA_TOKENIZER_NORM_GROWTH) return SIZE_MAX;
    return n * ZAYA_TOKENIZER_NORM_GROWTH + ZAYA_TOKENIZER_NORM_SLACK;
}

zaya_status zaya_tok_normalize(const zaya_tokenizer *t, const uint8_t *s, size_t n, uint8_t **out, size_t *out_len) {
    size_t limit = norm_limit(n);
    uint8_t *cur = malloc(n + 1);
    if (!cur) return zaya_error_set(ZAYA_ENOMEM, "normalizer: cannot allocate %zu bytes", n + 1);
    memcpy(cur, s, n);
    size_t len = n;
    for (int i = 0; i < t->n_norm; i++) {
        const zaya_tok_norm *st = &t->norm[i];
        uint8_t *next = NULL;
        size_t nl = 0;
        zaya_status r;
        if (st->kind == ZAYA_NORM_REPLACE) {
            r = replace_all(cur, len, st->from, st->from_len, st->to, st->to_len, limit, &next, &nl);
        } else if (st->kind == ZAYA_NORM_UNICODE) {
            static const char *const names[] = {"", "NFC", "NFD", "NFKC", "NFKD"};
            int u = zaya_unicode_normalize((zaya_unicode_form)st->form, cur, len, limit, &next, &nl);
            r = u == 0 ? ZAYA_OK
                : u == -2 ? zaya_error_set(ZAYA_ERANGE, "normalizer: %s would turn %zu bytes into more than %zu (docs/limits.md)",
                                           names[st->form], n, limit)
                          : zaya_error_set(ZAYA_ENOMEM, "normalizer: %s: out of memory", names[st->form]);
        } else { /* Prepend: only to a non-empty string */
            if (len == 0) continue;
            if (st->to_len > limit - len) {
                r = zaya_error_set(ZAYA_ERANGE, "normalizer: Prepend would turn %zu bytes into more than %zu (docs/limits.md)",
                                   n, limit);
            } else {
                next = malloc(len + st->to_len + 1);
                r = next ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "normalizer: out of memory");
            }
            if (next) {
                memcpy(next, st->to, st->to_len);
                memcpy(next + st->to_len, cur, len);
                nl = len + st->to_len;
            }
        }
        free(cur);
        if (r != ZAYA_OK) return zaya_error_context(r, "normalizer step %d", i);
        cur = next;
        len = nl;
    }
    *out = cur;
    *out_len = len;
    return ZAYA_OK;
}

/* ---- pre-tokenizers ---- */

static size_t (*split_fn(const zaya_tokenizer *t))(const uint8_t *, size_t, size_t) {
    switch (t->split_pattern) {
    case ZAYA_SPLIT_O200K: return zaya_pretok_next_o200k;
    case ZAYA_SPLIT_QWEN2: return zaya_pretok_next_qwen2;
    default: return zaya_pretok_next_llama3;
    }
}

/* The next match of the Split pattern at or after i: [*ms, *me), or 0. The regex scanners cover the
 * text, so their match starts at i. */
static int split_match(const zaya_tokenizer *t, const uint8_t *s, size_t len, size_t i, size_t *ms, size_t *me) {
    if (i >= len) return 0;
    if (t->split_pattern == ZAYA_SPLIT_STRING) {
        const uint8_t *q = memmem(s + i, len - i, t->split_str, t->split_str_len);
        if (!q) return 0;
        *ms = (size_t)(q - s);
        *me = *ms + t->split_str_len;
        return 1;
    }
    *ms = i;
    *me = split_fn(t)(s, len, i);
    return 1;
}

typedef zaya_status (*piece_fn)(void *ctx, const uint8_t *s, size_t len);

/* One piece of the Split: through ByteLevel's GPT-2 regex when it follows with use_regex, else one word. */
static zaya_status split_piece(const zaya_tokenizer *t, const uint8_t *s, size_t a, size_t b, piece_fn fn, void *ctx) {
    if (b <= a) return ZAYA_OK;
    if (!(t->split_bytelevel && t->use_regex)) return fn(ctx, s + a, b - a);
    for (size_t i = a; i < b;) {
        size_t end = zaya_pretok_next(s, b, i);
        ZAYA_TRY(fn(ctx, s + i, end - i));
        i = end;
    }
    return ZAYA_OK;
}

/* HF's Split: matches and the gaps between them (flipped by invert) become pieces by the behaviour:
 * Isolated (each its own), Removed (matches dropped), MergedWithPrevious / MergedWithNext (a match
 * joins the gap before / after it), Contiguous (adjacent segments of the same kind joined: after
 * invert, runs of delimiters too). Streams with one pending
 * piece [pa, pb) so that memory stays constant. */
static zaya_status split_walk(const zaya_tokenizer *t, const uint8_t *s, size_t len, piece_fn fn, void *ctx) {
    int beh = t->split_behavior, inv = t->split_invert;
    size_t pa = 0, pb = 0, i = 0;
    int pend = 0, pend_match = 0; /* a pending piece and whether it is (or ends with) a match */
    while (i < len) {
        size_t ms, me;
        int found = split_match(t, s, len, i, &ms, &me);
        if (!found) ms = me = len;
        /* Up to two segments: the gap [i, ms) and the match [ms, me). */
        for (int k = 0; k < 2; k++) {
            size_t a = k ? ms : i, b = k ? me : ms;
            if (b <= a) continue;
            int m = k ^ inv; /* is this segment a "match" after invert */
            if (beh == ZAYA_SPLIT_REMOVED) {
                if (!m) ZAYA_TRY(split_piece(t, s, a, b, fn, ctx));
                continue;
            }
            if (beh == ZAYA_SPLIT_ISOLATED) {
                ZAYA_TRY(split_piece(t, s, a, b, fn, ctx));
                continue;
            }
            int join = 0;
            if (beh == ZAYA_SPLIT_MERGED_PREV) join = m && pend && !pend_match;
            else if (beh == ZAYA_SPLIT_MERGED_NEXT) join = !m && pend && pend_match;
            else join = pend && m == pend_match; /* Contiguous: runs of segments of one kind */
            if (join) {
                pb = b;
                /* Contiguous keeps the run's kind (a run of gaps after invert stays one) */
                pend_match = beh == ZAYA_SPLIT_MERGED_NEXT ? 0 : beh == ZAYA_SPLIT_MERGED_PREV ? 1 : m;
                if (beh == ZAYA_SPLIT_MERGED_NEXT) { /* match + following gap is complete */
                    ZAYA_TRY(split_piece(t, s, pa, pb, fn, ctx));
                    pend = 0;
                }
                continue;
            }
            if (pend) ZAYA_TRY(split_piece(t, s, pa, pb, fn, ctx));
            pa = a, pb = b, pend = 1, pend_match = m;
        }
        i = me > i ? me : len;
    }
    if (pend) ZAYA_TRY(split_piece(t, s, pa, pb, fn, ctx));
    return ZAYA_OK;
}

typedef struct word_sink {
    zaya_tokenizer_encoder *e;
    int32_t **ids;
    size_t *n, *cap;
} word_sink;

static zaya_status sink_word(void *ctx, const uint8_t *s, size_t len) {
    word_sink *w = ctx;
    return zaya_tok_append_word(w->e, s, len, w->ids, w->n, w->cap);
}

static zaya_status encode_split(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int32_t **ids, size_t *n,
                                size_t *cap) {
    const zaya_tokenizer *t = e->t;
    if (t->split_pattern != ZAYA_SPLIT_STRING && t->split_behavior == ZAYA_SPLIT_ISOLATED && !t->split_invert &&
        !t->use_regex) { /* the tiktoken style: each regex match is a word */
        size_t (*next)(const uint8_t *, size_t, size_t) = split_fn(t);
        for (size_t i = 0; i < len;) {
            size_t end = next(s, len, i);
            ZAYA_TRY(zaya_tok_append_word(e, s + i, end - i, ids, n, cap));
            i = end;
        }
        return ZAYA_OK;
    }
    word_sink w = {e, ids, n, cap};
    return split_walk(t, s, len, sink_word, &w);
}

static zaya_status encode_digits(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int32_t **ids, size_t *n,
                                 size_t *cap) {
    const zaya_tokenizer *t = e->t;
    for (size_t i = 0; i < len;) {
        size_t end = zaya_pretok_next_digits(s, len, i, t->digits_individual, t->use_regex);
        ZAYA_TRY(zaya_tok_append_word(e, s + i, end - i, ids, n, cap));
        i = end;
    }
    return ZAYA_OK;
}

/* Metaspace: spaces become the replacement, which is prepended per prepend_scheme ("first": only to
 * the piece at the start of the input); with split, each replacement starts a new word. */
static zaya_status encode_metaspace(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int at_start,
                                    int32_t **ids, size_t *n, size_t *cap) {
    const zaya_tokenizer *t = e->t;
    const char *rep = (const char *)t->ms_rep;
    size_t rl = (size_t)t->ms_rep_len;
    uint8_t *w;
    size_t wl;
    ZAYA_TRY(replace_all(s, len, " ", 1, rep, rl, SIZE_MAX, &w, &wl)); /* at most 4x */
    int prepend = t->ms_prepend == ZAYA_PREPEND_ALWAYS || (t->ms_prepend == ZAYA_PREPEND_FIRST && at_start);
    if (prepend && wl > 0 && !(wl >= rl && !memcmp(w, rep, rl))) {
        uint8_t *p = malloc(wl + rl + 1);
        if (!p) {
            free(w);
            return zaya_error_set(ZAYA_ENOMEM, "encode: out of memory");
        }
        memcpy(p, rep, rl);
        memcpy(p + rl, w, wl);
        free(w);
        w = p;
        wl += rl;
    }
    zaya_status st = ZAYA_OK;
    for (size_t i = 0; st == ZAYA_OK && i < wl;) {
        size_t end = wl;
        if (t->ms_split) /* MergedWithNext: the next word starts at the next replacement */
            for (end = i + (i + rl <= wl && !memcmp(w + i, rep, rl) ? rl : 1); end < wl; end++)
                if (end + rl <= wl && !memcmp(w + end, rep, rl)) break;
        st = zaya_tok_append_word(e, w + i, end - i, ids, n, cap);
        i = end;
    }
    free(w);
    return st;
}

/* Pre-tokenizes normalized text and encodes each word. */
static zaya_status encode_words(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int at_start, int32_t **ids,
                                size_t *n, size_t *cap) {
    if (len == 0) return ZAYA_OK;
    switch (e->t->pre_kind) {
    case ZAYA_PRE_BYTELEVEL: return zaya_tok_encode_words(e, s, len, ids, n, cap);
    case ZAYA_PRE_SPLIT: return encode_split(e, s, len, ids, n, cap);
    case ZAYA_PRE_DIGITS: return encode_digits(e, s, len, ids, n, cap);
    case ZAYA_PRE_METASPACE: return encode_metaspace(e, s, len, at_start, ids, n, cap);
    default: return zaya_tok_append_word(e, s, len, ids, n, cap);
    }
}

/* ---- added tokens ---- */

static int is_space_at(const uint8_t *s, size_t n, size_t i, int *len) {
    uint32_t cp;
    *len = zaya_utf8_decode(s + i, n - i, &cp);
    return zaya_unicode_class(cp) == ZAYA_CHAR_SPACE;
}

/* Start of the whitespace run that ends at `end` (HF lstrip: \s*$). */
static size_t spaces_before(const uint8_t *s, size_t n, size_t end, size_t floor) {
    size_t i = end;
    while (i > floor) {
        size_t j = i - 1;
        while (j > floor && (s[j] & 0xC0) == 0x80 && i - j < 4) j--;
        int len;
        if (!is_space_at(s, n, j, &len) || j + (size_t)len != i) break;
        i = j;
    }
    return i;
}

static size_t spaces_after(const uint8_t *s, size_t n, size_t i) {
    int len;
    while (i < n && is_space_at(s, n, i, &len)) i += (size_t)len;
    return i;
}

typedef zaya_status (*gap_fn)(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int at_start, int32_t **ids,
                              size_t *n, size_t *cap);

/* Splits s on the tokens of trie (HF find_matches): matches become their ids, the gaps go to fn.
 * Special tokens are skipped (left in the text) without PARSE_SPECIAL. */
static zaya_status split_added(zaya_tokenizer_encoder *e, const zaya_tok_trie *tr, const uint8_t *s, size_t len,
                               int at_start, int flags, gap_fn fn, int32_t **ids, size_t *n, size_t *cap) {
    const zaya_tokenizer *t = e->t;
    size_t gap = 0, from = 0, at, ml;
    int32_t a;
    while ((a = zaya_tok_trie_find(tr, s, len, from, &at, &ml)) >= 0) {
        const zaya_added_token *x = &t->added[a];
        size_t start = at, stop = at + ml;
        from = stop;
        if (x->special && !(flags & ZAYA_ENCODE_PARSE_SPECIAL)) continue;
        if (x->lstrip) start = spaces_before(s, len, start, gap);
        if (x->rstrip) stop = spaces_after(s, len, stop);
        if (start > gap) ZAYA_TRY(fn(e, s + gap, start - gap, at_start && gap == 0, ids, n, cap));
        ZAYA_TRY(zaya_tok_ids_reserve(ids, n, cap, 1));
        (*ids)[(*n)++] = x->id;
        gap = from = stop;
    }
    if (len > gap) ZAYA_TRY(fn(e, s + gap, len - gap, at_start && gap == 0, ids, n, cap));
    return ZAYA_OK;
}

/* A piece between raw added tokens: normalize, split normalized added tokens, encode the rest. */
static zaya_status encode_piece(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int at_start, int flags,
                                int32_t **ids, size_t *n, size_t *cap) {
    const zaya_tokenizer *t = e->t;
    uint8_t *norm = NULL;
    size_t nl = len;
    if (t->n_norm) ZAYA_TRY(zaya_tok_normalize(t, s, len, &norm, &nl));
    const uint8_t *p = norm ? norm : s;
    zaya_status st = t->trie_norm.any ? split_added(e, &t->trie_norm, p, nl, at_start, flags, encode_words, ids, n, cap)
                                      : encode_words(e, p, nl, at_start, ids, n, cap);
    free(norm);
    return st;
}

static zaya_status piece_plain(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int at_start, int32_t **ids,
                               size_t *n, size_t *cap) {
    return encode_piece(e, s, len, at_start, 0, ids, n, cap);
}

static zaya_status piece_parse(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int at_start, int32_t **ids,
                               size_t *n, size_t *cap) {
    return encode_piece(e, s, len, at_start, ZAYA_ENCODE_PARSE_SPECIAL, ids, n, cap);
}

zaya_status zaya_tok_encode_pipeline(zaya_tokenizer_encoder *e, const uint8_t *s, size_t len, int flags, int32_t **ids,
                                     size_t *n, size_t *cap) {
    const zaya_tokenizer *t = e->t;
    int add = (flags & ZAYA_ENCODE_ADD_SPECIAL) && t->has_template;
    if (add && t->n_tpl_pre) { /* a special token with "ids": [] adds nothing (and *ids may still be NULL) */
        ZAYA_TRY(zaya_tok_ids_reserve(ids, n, cap, (size_t)t->n_tpl_pre));
        memcpy(*ids + *n, t->tpl_pre, (size_t)t->n_tpl_pre * sizeof **ids);
        *n += (size_t)t->n_tpl_pre;
    }
    gap_fn fn = (flags & ZAYA_ENCODE_PARSE_SPECIAL) ? piece_parse : piece_plain;
    if (t->trie_raw.any) ZAYA_TRY(split_added(e, &t->trie_raw, s, len, 1, flags, fn, ids, n, cap));
    else ZAYA_TRY(fn(e, s, len, 1, ids, n, cap));
    if (add && t->n_tpl_post) {
        ZAYA_TRY(zaya_tok_ids_reserve(ids, n, cap, (size_t)t->n_tpl_post));
        memcpy(*ids + *n, t->tpl_post, (size_t)t->n_tpl_post * sizeof **ids);
        *n += (size_t)t->n_tpl_post;
    }
    return ZAYA_OK;
}

typedef struct len_sink {
    size_t *out, k;
} len_sink;

static zaya_status sink_len(void *ctx, const uint8_t *s, size_t len) {
    len_sink *l = ctx;
    l->out[l->k++] = len;
    return ZAYA_OK;
}

static zaya_status pretokenize_split(const zaya_tokenizer *t, const uint8_t *s, size_t len, size_t **lens, size_t *n) {
    len_sink l = {malloc((len + 1) * sizeof(size_t)), 0};
    if (!l.out) return zaya_error_set(ZAYA_ENOMEM, "pre-tokens: out of memory");
    split_walk(t, s, len, sink_len, &l);
    *lens = l.out;
    *n = l.k;
    return ZAYA_OK;
}

zaya_status zaya_tokenizer_pretokenize(const zaya_tokenizer *t, const char *text, size_t len, size_t **lens, size_t *n) {
    size_t (*next)(const uint8_t *, size_t, size_t) = NULL;
    if (t->pre_kind == ZAYA_PRE_SPLIT) return pretokenize_split(t, (const uint8_t *)text, len, lens, n);
    if (t->pre_kind == ZAYA_PRE_BYTELEVEL && t->use_regex) next = zaya_pretok_next;
    if (!next && t->pre_kind != ZAYA_PRE_DIGITS)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "pre-tokens: the tokenizer has no regex pre-tokenizer");
    size_t *out = malloc((len + 1) * sizeof *out), k = 0;
    if (!out) return zaya_error_set(ZAYA_ENOMEM, "pre-tokens: out of memory");
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < len;) {
        size_t end = next ? next(s, len, i) : zaya_pretok_next_digits(s, len, i, t->digits_individual, t->use_regex);
        out[k++] = end - i;
        i = end;
    }
    *lens = out;
    *n = k;
    return ZAYA_OK;
}

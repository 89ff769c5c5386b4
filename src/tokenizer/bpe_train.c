/* BPE training. Pre-token words are counted once; then each step merges the most frequent adjacent
 * pair. Pair counts are updated incrementally: every pair knows the words that contain it, and a merge
 * only revisits those words, subtracting their old pairs and adding their new ones (weighted by the
 * word's count). A lazy max-heap picks the next pair: entries whose count went stale are re-pushed
 * with the current count when popped.
 *
 * Tie-breaking (deterministic): highest count first, then the smallest (left id, right id), where the
 * 256 byte tokens have id = byte value and merged tokens take ids in creation order. Occurrences in a
 * word merge left to right without overlap ("aaa" with a+a -> "aa" "a"), as in HF's trainer. A merge
 * whose result already exists (reached by another split) reuses that id; one whose result would equal
 * a special token's text is never made. Layout: bytes 0..255, merges, then bos, eos, pad. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/corpus.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/strtab.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"
#include "zaya/timer.h"

typedef struct pair_info {
    int32_t a, b;
    int64_t count, delta;
    uint32_t *where; /* words containing the pair (may hold words that no longer do) */
    uint32_t n_where, cap_where;
    uint8_t touched, banned;
} pair_info;

typedef struct heap_entry {
    int64_t count;
    int32_t a, b;
    uint32_t pair;
} heap_entry;

typedef struct trainer {
    zaya_strtab words;
    int64_t *word_count;
    uint32_t word_count_cap;
    int64_t n_pretokens;

    zaya_strtab tokens; /* id -> bytes while training */
    int32_t *sym;       /* symbols of every word, concatenated */
    uint64_t *sym_off;
    uint32_t *sym_len;

    pair_info *pairs;
    uint32_t n_pairs, cap_pairs;
    uint32_t *pair_slots; /* pair index + 1 */
    uint64_t pair_nslots;
    uint32_t *touched;
    uint32_t n_touched, cap_touched;

    heap_entry *heap;
    uint64_t n_heap, cap_heap;
} trainer;

static zaya_status count_words(void *ctx, const char *path, const uint8_t *data, size_t len) {
    trainer *tr = ctx;
    for (size_t i = 0; i < len;) {
        size_t end = zaya_pretok_next(data, len, i);
        uint32_t idx;
        int added;
        zaya_status s = zaya_strtab_intern(&tr->words, data + i, end - i, zaya_tok_hash_bytes(data + i, end - i), &idx, &added);
        if (s != ZAYA_OK) return path ? zaya_error_context(s, "%s", path) : s;
        if (idx >= tr->word_count_cap) {
            uint32_t cap = tr->word_count_cap ? tr->word_count_cap * 2 : 4096;
            int64_t *c = realloc(tr->word_count, cap * sizeof *c);
            if (!c) return zaya_error_set(ZAYA_ENOMEM, "out of memory counting words");
            memset(c + tr->word_count_cap, 0, (cap - tr->word_count_cap) * sizeof *c);
            tr->word_count = c;
            tr->word_count_cap = cap;
        }
        tr->word_count[idx]++;
        tr->n_pretokens++;
        i = end;
    }
    return ZAYA_OK;
}

static inline int heap_above(const heap_entry *x, const heap_entry *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

static zaya_status heap_push(trainer *tr, heap_entry e) {
    if (tr->n_heap == tr->cap_heap) {
        uint64_t cap = tr->cap_heap ? 2 * tr->cap_heap : 4096;
        heap_entry *h = realloc(tr->heap, cap * sizeof *h);
        if (!h) return zaya_error_set(ZAYA_ENOMEM, "out of memory growing the pair heap");
        tr->heap = h;
        tr->cap_heap = cap;
    }
    uint64_t i = tr->n_heap++;
    while (i > 0) {
        uint64_t p = (i - 1) / 2;
        if (!heap_above(&e, &tr->heap[p])) break;
        tr->heap[i] = tr->heap[p];
        i = p;
    }
    tr->heap[i] = e;
    return ZAYA_OK;
}

static heap_entry heap_pop(trainer *tr) {
    heap_entry *h = tr->heap, top = h[0], last = h[--tr->n_heap];
    uint64_t i = 0, n = tr->n_heap;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_above(&h[c + 1], &h[c])) c++;
        if (!heap_above(&h[c], &last)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = last;
    return top;
}

static zaya_status pair_get(trainer *tr, int32_t a, int32_t b, uint32_t *out) {
    uint64_t key = zaya_tok_pair_key(a, b);
    if (2 * ((uint64_t)tr->n_pairs + 1) > tr->pair_nslots) {
        uint64_t ns = tr->pair_nslots ? 2 * tr->pair_nslots : 1 << 16;
        uint32_t *slots = calloc(ns, sizeof *slots);
        if (!slots) return zaya_error_set(ZAYA_ENOMEM, "out of memory growing the pair table");
        for (uint32_t p = 0; p < tr->n_pairs; p++) {
            uint64_t i = zaya_tok_pair_slot(zaya_tok_pair_key(tr->pairs[p].a, tr->pairs[p].b)) & (ns - 1);
            while (slots[i]) i = (i + 1) & (ns - 1);
            slots[i] = p + 1;
        }
        free(tr->pair_slots);
        tr->pair_slots = slots;
        tr->pair_nslots = ns;
    }
    uint64_t i = zaya_tok_pair_slot(key) & (tr->pair_nslots - 1);
    for (; tr->pair_slots[i]; i = (i + 1) & (tr->pair_nslots - 1)) {
        uint32_t p = tr->pair_slots[i] - 1;
        if (tr->pairs[p].a == a && tr->pairs[p].b == b) {
            *out = p;
            return ZAYA_OK;
        }
    }
    if (tr->n_pairs == tr->cap_pairs) {
        uint32_t cap = tr->cap_pairs ? 2 * tr->cap_pairs : 1 << 14;
        pair_info *p = realloc(tr->pairs, cap * sizeof *p);
        if (!p) return zaya_error_set(ZAYA_ENOMEM, "out of memory growing the pair table");
        tr->pairs = p;
        tr->cap_pairs = cap;
    }
    tr->pairs[tr->n_pairs] = (pair_info){.a = a, .b = b};
    tr->pair_slots[i] = tr->n_pairs + 1;
    *out = tr->n_pairs++;
    return ZAYA_OK;
}

static zaya_status where_add(pair_info *p, uint32_t w) {
    if (p->n_where && p->where[p->n_where - 1] == w) return ZAYA_OK;
    if (p->n_where == p->cap_where) {
        uint32_t cap = p->cap_where ? 2 * p->cap_where : 4;
        uint32_t *x = realloc(p->where, cap * sizeof *x);
        if (!x) return zaya_error_set(ZAYA_ENOMEM, "out of memory tracking pair positions");
        p->where = x;
        p->cap_where = cap;
    }
    p->where[p->n_where++] = w;
    return ZAYA_OK;
}

static zaya_status add_delta(trainer *tr, uint32_t p, int64_t d) {
    pair_info *pi = &tr->pairs[p];
    pi->delta += d;
    if (pi->touched) return ZAYA_OK;
    pi->touched = 1;
    if (tr->n_touched == tr->cap_touched) {
        uint32_t cap = tr->cap_touched ? 2 * tr->cap_touched : 1024;
        uint32_t *x = realloc(tr->touched, cap * sizeof *x);
        if (!x) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        tr->touched = x;
        tr->cap_touched = cap;
    }
    tr->touched[tr->n_touched++] = p;
    return ZAYA_OK;
}

static zaya_status apply_deltas(trainer *tr) {
    for (uint32_t k = 0; k < tr->n_touched; k++) {
        pair_info *p = &tr->pairs[tr->touched[k]];
        p->count += p->delta;
        int grew = p->delta > 0;
        p->delta = 0;
        p->touched = 0;
        if (grew) ZAYA_TRY(heap_push(tr, (heap_entry){p->count, p->a, p->b, tr->touched[k]}));
    }
    tr->n_touched = 0;
    return ZAYA_OK;
}

static zaya_status init_pairs(trainer *tr) {
    uint64_t total = 0;
    for (uint32_t w = 0; w < tr->words.n; w++) total += tr->words.len[w];
    tr->sym = malloc((total + 1) * sizeof *tr->sym);
    tr->sym_off = malloc(((size_t)tr->words.n + 1) * sizeof *tr->sym_off);
    tr->sym_len = malloc(((size_t)tr->words.n + 1) * sizeof *tr->sym_len);
    if (!tr->sym || !tr->sym_off || !tr->sym_len) return zaya_error_set(ZAYA_ENOMEM, "out of memory (%llu symbols)", (unsigned long long)total);
    uint64_t off = 0;
    for (uint32_t w = 0; w < tr->words.n; w++) {
        const uint8_t *s = tr->words.bytes + tr->words.off[w];
        uint32_t n = tr->words.len[w];
        tr->sym_off[w] = off;
        tr->sym_len[w] = n;
        for (uint32_t i = 0; i < n; i++) tr->sym[off + i] = s[i];
        for (uint32_t i = 0; i + 1 < n; i++) {
            uint32_t p;
            ZAYA_TRY(pair_get(tr, s[i], s[i + 1], &p));
            tr->pairs[p].count += tr->word_count[w];
            ZAYA_TRY(where_add(&tr->pairs[p], w));
        }
        off += n;
    }
    for (uint32_t p = 0; p < tr->n_pairs; p++)
        ZAYA_TRY(heap_push(tr, (heap_entry){tr->pairs[p].count, tr->pairs[p].a, tr->pairs[p].b, p}));
    return ZAYA_OK;
}

/* Replaces every (a, b) in word w by id, updating pair counts (nothing when w has no (a, b)). */
static zaya_status merge_word(trainer *tr, uint32_t w, int32_t a, int32_t b, int32_t id) {
    int32_t *s = tr->sym + tr->sym_off[w];
    uint32_t n = tr->sym_len[w];
    int64_t c = tr->word_count[w];
    int found = 0;
    for (uint32_t i = 0; i + 1 < n && !found; i++) found = s[i] == a && s[i + 1] == b;
    if (!found) return ZAYA_OK;
    uint32_t p;
    for (uint32_t i = 0; i + 1 < n; i++) {
        ZAYA_TRY(pair_get(tr, s[i], s[i + 1], &p));
        ZAYA_TRY(add_delta(tr, p, -c));
    }
    uint32_t j = 0;
    for (uint32_t i = 0; i < n;) {
        if (i + 1 < n && s[i] == a && s[i + 1] == b) {
            s[j++] = id;
            i += 2;
        } else {
            s[j++] = s[i++];
        }
    }
    tr->sym_len[w] = n = j;
    for (uint32_t i = 0; i + 1 < n; i++) {
        ZAYA_TRY(pair_get(tr, s[i], s[i + 1], &p));
        ZAYA_TRY(add_delta(tr, p, c));
        if (s[i] == id || s[i + 1] == id) ZAYA_TRY(where_add(&tr->pairs[p], w));
    }
    return ZAYA_OK;
}

typedef struct special {
    const char *text;
    uint8_t *bytes; /* byte-level reading of the text, when it has one */
    int64_t nbytes;
} special;

static int is_special_bytes(const special *sp, int nsp, const uint8_t *s, size_t n) {
    for (int i = 0; i < nsp; i++)
        if (sp[i].nbytes == (int64_t)n && !memcmp(sp[i].bytes, s, n)) return 1;
    return 0;
}

static zaya_status run_merges(trainer *tr, int64_t target, int64_t min_freq, const special *sp, int nsp,
                              int32_t **ma, int32_t **mb, int32_t **mid, int32_t *n_merges) {
    uint32_t *stamp = calloc((size_t)tr->words.n + 1, sizeof *stamp);
    uint8_t *buf = NULL;
    size_t buf_cap = 0;
    int32_t cap = 1024, nm = 0;
    *ma = malloc(cap * sizeof **ma);
    *mb = malloc(cap * sizeof **mb);
    *mid = malloc(cap * sizeof **mid);
    zaya_status s = (stamp && *ma && *mb && *mid) ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "out of memory");
    while (s == ZAYA_OK && tr->tokens.n < target && tr->n_heap) {
        heap_entry top = heap_pop(tr);
        pair_info *p = &tr->pairs[top.pair];
        if (p->banned) continue;
        if (top.count != p->count) {
            /* Stale: the count fell since this entry was pushed (a rise pushes a fresh entry). */
            if (p->count > 0 && p->count < top.count) s = heap_push(tr, (heap_entry){p->count, p->a, p->b, top.pair});
            continue;
        }
        if (top.count < min_freq || top.count <= 0) break;
        int32_t a = p->a, b = p->b;
        size_t la = tr->tokens.len[a], lb = tr->tokens.len[b];
        if (la + lb > buf_cap) {
            buf_cap = 2 * (la + lb);
            uint8_t *nb = realloc(buf, buf_cap);
            if (!nb) { s = zaya_error_set(ZAYA_ENOMEM, "out of memory"); break; }
            buf = nb;
        }
        memcpy(buf, tr->tokens.bytes + tr->tokens.off[a], la);
        memcpy(buf + la, tr->tokens.bytes + tr->tokens.off[b], lb);
        if (is_special_bytes(sp, nsp, buf, la + lb)) {
            p->banned = 1;
            continue;
        }
        uint32_t id;
        int added;
        s = zaya_strtab_intern(&tr->tokens, buf, la + lb, zaya_tok_hash_bytes(buf, la + lb), &id, &added);
        if (s != ZAYA_OK) break;
        if (nm == cap) {
            cap *= 2;
            int32_t *x = realloc(*ma, cap * sizeof *x), *y = x ? realloc(*mb, cap * sizeof *y) : NULL;
            if (x) *ma = x;
            if (y) *mb = y;
            int32_t *z = y ? realloc(*mid, cap * sizeof *z) : NULL;
            if (z) *mid = z;
            if (!z) { s = zaya_error_set(ZAYA_ENOMEM, "out of memory"); break; }
        }
        (*ma)[nm] = a;
        (*mb)[nm] = b;
        (*mid)[nm] = (int32_t)id;
        nm++;
        /* Detach the word list: merge_word may grow the pair table (moving p). */
        uint32_t *ws = p->where, nw = p->n_where;
        p->where = NULL;
        p->n_where = p->cap_where = 0;
        for (uint32_t k = 0; k < nw && s == ZAYA_OK; k++) {
            uint32_t w = ws[k];
            if (stamp[w] == (uint32_t)nm) continue;
            stamp[w] = (uint32_t)nm;
            s = merge_word(tr, w, a, b, (int32_t)id);
        }
        free(ws);
        if (s == ZAYA_OK) s = apply_deltas(tr);
    }
    free(stamp);
    free(buf);
    *n_merges = nm;
    return s;
}

static void trainer_free(trainer *tr) {
    zaya_strtab_free(&tr->words);
    zaya_strtab_free(&tr->tokens);
    free(tr->word_count);
    free(tr->sym);
    free(tr->sym_off);
    free(tr->sym_len);
    for (uint32_t p = 0; p < tr->n_pairs; p++) free(tr->pairs[p].where);
    free(tr->pairs);
    free(tr->pair_slots);
    free(tr->touched);
    free(tr->heap);
}

static zaya_status check_opts(const zaya_bpe_train_opts *o, special *sp, int *nsp, int32_t *role_idx) {
    const char *texts[3] = {o->bos, o->eos, o->pad}, *names[3] = {"bos", "eos", "pad"};
    *nsp = 0;
    for (int r = 0; r < 3; r++) {
        role_idx[r] = -1;
        const char *x = texts[r];
        if (!x) continue;
        if (!x[0]) return zaya_error_set(ZAYA_EINVAL, "%s token is empty", names[r]);
        for (size_t i = 0, n = strlen(x); i < n;) {
            uint32_t cp;
            i += (size_t)zaya_utf8_decode((const uint8_t *)x + i, n - i, &cp);
            if (cp == UINT32_MAX) return zaya_error_set(ZAYA_EINVAL, "%s token \"%s\" is not valid UTF-8", names[r], x);
        }
        for (int k = 0; k < *nsp; k++)
            if (!strcmp(sp[k].text, x)) role_idx[r] = k; /* one token may serve two roles */
        if (role_idx[r] >= 0) continue;
        uint8_t *b = malloc(strlen(x) + 1);
        if (!b) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        int64_t nb = zaya_bytelevel_decode(x, b);
        sp[*nsp] = (special){x, b, nb};
        if (nb == 1) return zaya_error_set(ZAYA_EINVAL, "%s token \"%s\" is the same text as a byte token", names[r], x);
        role_idx[r] = (*nsp)++;
    }
    int64_t min_size = 256 + *nsp;
    if (o->vocab_size < min_size || o->vocab_size > (1 << 24))
        return zaya_error_set(ZAYA_EINVAL, "vocab size %lld must be in [%lld, %d] (256 bytes + %d special tokens)",
                              (long long)o->vocab_size, (long long)min_size, 1 << 24, *nsp);
    return ZAYA_OK;
}

static zaya_status build_tokenizer(trainer *tr, const special *sp, int nsp, const int32_t *role_idx, int32_t *ma,
                                   int32_t *mb, int32_t *mid, int32_t nm, zaya_tokenizer **out) {
    zaya_tokenizer *t = calloc(1, sizeof *t);
    if (!t) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    uint64_t bytes = tr->tokens.nbytes;
    for (int i = 0; i < nsp; i++) bytes += strlen(sp[i].text);
    zaya_status s = zaya_tok_alloc(t, (int32_t)tr->tokens.n + nsp, bytes);
    t->added = calloc((size_t)nsp + 1, sizeof *t->added);
    if (s == ZAYA_OK && !t->added) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
    if (s != ZAYA_OK) {
        zaya_tokenizer_free(t);
        free(ma), free(mb), free(mid);
        return s;
    }
    memcpy(t->tok_bytes, tr->tokens.bytes, tr->tokens.nbytes);
    uint64_t off = tr->tokens.nbytes;
    for (uint32_t id = 0; id < tr->tokens.n; id++) {
        t->tok_off[id] = tr->tokens.off[id];
        t->tok_len[id] = tr->tokens.len[id];
        t->in_model[id] = 1;
    }
    for (int i = 0; i < nsp; i++) {
        int32_t id = (int32_t)tr->tokens.n + i;
        size_t n = strlen(sp[i].text);
        memcpy(t->tok_bytes + off, sp[i].text, n);
        t->tok_off[id] = off;
        t->tok_len[id] = (uint32_t)n;
        t->in_model[id] = 1; /* as HF's trainer: special tokens are in model.vocab too */
        t->added_idx[id] = i;
        t->added[i] = (zaya_added_token){.id = id, .special = 1};
        off += n;
    }
    t->n_added = nsp;
    t->merge_a = ma, t->merge_b = mb, t->merge_id = mid;
    t->n_merges = nm;
    t->use_regex = 1;
    t->pre_kind = ZAYA_PRE_BYTELEVEL;
    t->has_decoder = 1;
    int32_t *roles[3] = {&t->bos, &t->eos, &t->pad};
    for (int r = 0; r < 3; r++) *roles[r] = role_idx[r] >= 0 ? (int32_t)tr->tokens.n + role_idx[r] : -1;
    s = zaya_tok_build_maps(t);
    if (s == ZAYA_OK) s = zaya_tok_build_tries(t);
    if (s != ZAYA_OK) {
        zaya_tokenizer_free(t);
        return s;
    }
    *out = t;
    return ZAYA_OK;
}

static zaya_status train(const char *const *paths, int npaths, const uint8_t *const *bufs, const size_t *lens, int nbufs,
                         const zaya_bpe_train_opts *opts, zaya_tokenizer **out, zaya_bpe_train_stats *stats) {
    special sp[3] = {{0}};
    int nsp = 0;
    int32_t role_idx[3];
    trainer tr = {0};
    int32_t *ma = NULL, *mb = NULL, *mid = NULL, nm = 0;
    double t0 = zaya_now_s();
    int64_t bytes = 0;
    zaya_status s = check_opts(opts, sp, &nsp, role_idx);
    if (s == ZAYA_OK && paths) s = zaya_corpus_walk(paths, npaths, opts->max_bytes, count_words, &tr, &bytes);
    for (int i = 0; s == ZAYA_OK && i < nbufs; i++) {
        s = count_words(&tr, NULL, bufs[i], lens[i]);
        bytes += (int64_t)lens[i];
    }
    for (int b = 0; s == ZAYA_OK && b < 256; b++) {
        uint32_t id;
        int added;
        uint8_t c = (uint8_t)b;
        s = zaya_strtab_intern(&tr.tokens, &c, 1, zaya_tok_hash_bytes(&c, 1), &id, &added);
    }
    double t1 = zaya_now_s();
    if (s == ZAYA_OK) s = init_pairs(&tr);
    int64_t min_freq = opts->min_frequency > 0 ? opts->min_frequency : 2;
    if (s == ZAYA_OK) s = run_merges(&tr, opts->vocab_size - nsp, min_freq, sp, nsp, &ma, &mb, &mid, &nm);
    if (s == ZAYA_OK) {
        s = build_tokenizer(&tr, sp, nsp, role_idx, ma, mb, mid, nm, out);
    } else {
        free(ma), free(mb), free(mid);
    }
    if (s == ZAYA_OK && stats) {
        *stats = (zaya_bpe_train_stats){.bytes = bytes, .pretokens = tr.n_pretokens, .unique_words = tr.words.n,
                                        .merges = nm, .vocab_size = (*out)->n_vocab, .seconds_count = t1 - t0,
                                        .seconds_merge = zaya_now_s() - t1};
    }
    trainer_free(&tr);
    for (int i = 0; i < 3; i++) free(sp[i].bytes);
    return s == ZAYA_OK ? s : zaya_error_context(s, "training tokenizer");
}

zaya_status zaya_tokenizer_train_with_stats(const char *const *paths, int npaths, const zaya_bpe_train_opts *opts,
                                            zaya_tokenizer **out, zaya_bpe_train_stats *stats) {
    return train(paths, npaths, NULL, NULL, 0, opts, out, stats);
}

zaya_status zaya_tokenizer_train(const char *const *paths, int npaths, const zaya_bpe_train_opts *opts,
                                 zaya_tokenizer **out) {
    return train(paths, npaths, NULL, NULL, 0, opts, out, NULL);
}

zaya_status zaya_tokenizer_train_buffers(const char *const *texts, const size_t *lens, int n,
                                         const zaya_bpe_train_opts *opts, zaya_tokenizer **out) {
    return train(NULL, 0, (const uint8_t *const *)texts, lens, n, opts, out, NULL);
}

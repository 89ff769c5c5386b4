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
    for (int b = 0; b < 256; b++) t->byte_id[b] = t->fallback_id[b] = t->char1_id[b] = -1;
    t->bos = t->eos = t->pad = t->unk_id = -1;
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

zaya_status zaya_tok_build_vmap(zaya_tokenizer *t) {
    free(t->vmap);
    uint64_t vcap = table_size((uint64_t)t->n_vocab);
    t->vmap = malloc(vcap * sizeof *t->vmap);
    if (!t->vmap) return zaya_error_set(ZAYA_ENOMEM, "tokenizer: cannot allocate lookup tables");
    t->vmap_mask = vcap - 1;
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
    return ZAYA_OK;
}

zaya_status zaya_tok_pmap_alloc(zaya_tokenizer *t, uint64_t n) {
    free(t->pmap_key);
    free(t->pmap_rank);
    uint64_t pcap = table_size(n);
    t->pmap_key = malloc(pcap * sizeof *t->pmap_key);
    t->pmap_rank = calloc(pcap, sizeof *t->pmap_rank);
    if (!t->pmap_key || !t->pmap_rank) return zaya_error_set(ZAYA_ENOMEM, "tokenizer: cannot allocate the merge table for %llu merges",
                                                             (unsigned long long)n);
    t->pmap_mask = pcap - 1;
    return ZAYA_OK;
}

int32_t zaya_tok_pmap_insert(zaya_tokenizer *t, int32_t a, int32_t b, int32_t rank) {
    uint64_t key = zaya_tok_pair_key(a, b);
    uint64_t i = zaya_tok_pair_slot(key) & t->pmap_mask;
    for (; t->pmap_rank[i]; i = (i + 1) & t->pmap_mask)
        if (t->pmap_key[i] == key) return t->pmap_rank[i] - 1;
    t->pmap_key[i] = key;
    t->pmap_rank[i] = rank + 1;
    return -1;
}

zaya_status zaya_tok_build_maps(zaya_tokenizer *t) {
    ZAYA_TRY(zaya_tok_build_vmap(t));
    ZAYA_TRY(zaya_tok_pmap_alloc(t, (uint64_t)t->n_merges));
    for (int32_t r = 0; r < t->n_merges; r++) {
        int32_t prev = zaya_tok_pmap_insert(t, t->merge_a[r], t->merge_b[r], r);
        if (prev >= 0) return zaya_error_set(ZAYA_EFORMAT, "merge %d repeats merge %d", r, prev);
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
    zaya_tok_free_pipeline(t);
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

/* A list of token strings in one arena, the unit HF's decoders work on (decode_chain). */
typedef struct tok_list {
    uint8_t *buf;
    size_t len, cap;
    size_t *off, *sz;
    size_t n, ncap;
} tok_list;

static void tl_free(tok_list *l) {
    free(l->buf);
    free(l->off);
    free(l->sz);
    memset(l, 0, sizeof *l);
}

/* Appends bytes to the current (last) token, or starts a new one when `fresh`. */
static int tl_put(tok_list *l, const uint8_t *p, size_t n, int fresh) {
    if (l->len + n + 1 > l->cap) {
        size_t c = l->cap ? l->cap : 256;
        while (c < l->len + n + 1) c *= 2;
        uint8_t *b = realloc(l->buf, c);
        if (!b) return 0;
        l->buf = b, l->cap = c;
    }
    if (fresh || l->n == 0) {
        if (l->n == l->ncap) {
            size_t c = l->ncap ? 2 * l->ncap : 64;
            size_t *o = realloc(l->off, c * sizeof *o);
            if (o) l->off = o;
            size_t *z = realloc(l->sz, c * sizeof *z);
            if (z) l->sz = z;
            if (!o || !z) return 0;
            l->ncap = c;
        }
        l->off[l->n] = l->len;
        l->sz[l->n++] = 0;
    }
    if (n) memcpy(l->buf + l->len, p, n);
    l->len += n;
    l->sz[l->n - 1] += n;
    return 1;
}

static int valid_utf8(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = zaya_utf8_decode(p + i, n - i, &cp);
        if (cp == UINT32_MAX) return 0;
        i += (size_t)k;
    }
    return 1;
}

static int hex_val(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "<0xNN>" (as Rust's u8::from_str_radix on the two characters, which also takes "+N"). */
static int byte_token(const uint8_t *p, size_t n) {
    if (n != 6 || memcmp(p, "<0x", 3) || p[5] != '>') return -1;
    int a = hex_val(p[3]), b = hex_val(p[4]);
    if (p[3] == '+' && b >= 0) return b;
    return a >= 0 && b >= 0 ? a * 16 + b : -1;
}

/* One decoder step from `in` to `out` (HF decode_chain of that decoder). */
static int dec_step(const zaya_tok_dec *d, const tok_list *in, tok_list *out) {
    if (d->kind == ZAYA_DEC_FUSE) {
        if (!tl_put(out, NULL, 0, 1)) return 0;
        for (size_t i = 0; i < in->n; i++)
            if (!tl_put(out, in->buf + in->off[i], in->sz[i], 0)) return 0;
        return 1;
    }
    if (d->kind == ZAYA_DEC_BYTEFALLBACK) {
        uint8_t *grp = malloc(in->n + 1);
        size_t g = 0;
        int ok = grp != NULL;
        for (size_t i = 0; ok && i <= in->n; i++) {
            int b = i < in->n ? byte_token(in->buf + in->off[i], in->sz[i]) : -1;
            if (b >= 0) {
                grp[g++] = (uint8_t)b;
                continue;
            }
            if (g) { /* valid UTF-8: one token; else one token per byte (HF: U+FFFD each, zaya: the byte) */
                int valid = valid_utf8(grp, g);
                for (size_t k = 0; ok && k < (valid ? 1 : g); k++) ok = tl_put(out, valid ? grp : grp + k, valid ? g : 1, 1);
                g = 0;
            }
            if (ok && i < in->n) ok = tl_put(out, in->buf + in->off[i], in->sz[i], 1);
        }
        free(grp);
        return ok;
    }
    for (size_t i = 0; i < in->n; i++) {
        const uint8_t *p = in->buf + in->off[i];
        size_t n = in->sz[i];
        if (!tl_put(out, NULL, 0, 1)) return 0;
        if (d->kind == ZAYA_DEC_STRIP) {
            size_t cl = (size_t)d->ch_len, a = 0, b = n;
            for (int k = 0; k < d->start && a + cl <= b && !memcmp(p + a, d->ch, cl); k++) a += cl;
            for (int k = 0; k < d->stop && b >= a + cl && !memcmp(p + b - cl, d->ch, cl); k++) b -= cl;
            if (!tl_put(out, p + a, b - a, 0)) return 0;
            continue;
        }
        const uint8_t *from = d->kind == ZAYA_DEC_REPLACE ? (const uint8_t *)d->from : d->ch;
        size_t fl = d->kind == ZAYA_DEC_REPLACE ? d->from_len : (size_t)d->ch_len;
        const uint8_t *to = d->kind == ZAYA_DEC_REPLACE ? (const uint8_t *)d->to : (const uint8_t *)" ";
        size_t tl = d->kind == ZAYA_DEC_REPLACE ? d->to_len : 1;
        if (d->kind == ZAYA_DEC_METASPACE && i == 0 && d->prepend != ZAYA_PREPEND_NEVER) tl = 0;
        for (size_t j = 0; j < n;) {
            if (j + fl <= n && !memcmp(p + j, from, fl)) {
                if (!tl_put(out, to, tl, 0)) return 0;
                j += fl;
            } else {
                if (!tl_put(out, p + j, 1, 0)) return 0;
                j++;
            }
        }
    }
    return 1;
}

static zaya_status decode_chain(const zaya_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    tok_list a = {0}, b = {0};
    int ok = 1;
    for (size_t i = 0; ok && i < n; i++) {
        size_t l;
        const uint8_t *b = zaya_tok_decode_bytes(t, ids[i], &l);
        ok = tl_put(&a, b, l, 1);
    }
    for (int k = 0; ok && k < t->n_dec; k++) {
        b.len = b.n = 0;
        ok = dec_step(&t->dec[k], &a, &b);
        tok_list tmp = a;
        a = b;
        b = tmp;
    }
    /* No decoder: HF joins the tokens with spaces. */
    size_t total = a.len + (t->has_decoder || a.n == 0 ? 0 : a.n - 1);
    char *out = ok ? malloc(total + 1) : NULL;
    if (out) {
        size_t o = 0;
        for (size_t i = 0; i < a.n; i++) {
            if (i && !t->has_decoder) out[o++] = ' ';
            memcpy(out + o, a.buf + a.off[i], a.sz[i]);
            o += a.sz[i];
        }
        out[o] = '\0';
        *text = out;
        *len = o;
    }
    tl_free(&a);
    tl_free(&b);
    return out ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "decode: out of memory");
}

zaya_status zaya_tokenizer_decode(const zaya_tokenizer *t, const int32_t *ids, size_t n, char **text, size_t *len) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return zaya_error_set(ZAYA_ERANGE, "decode: id %d at position %zu is outside the vocabulary [0, %d)", ids[i], i,
                                  t->n_vocab);
        size_t l;
        zaya_tok_decode_bytes(t, ids[i], &l);
        total += l;
    }
    if (!zaya_tok_plain_decode(t)) return decode_chain(t, ids, n, text, len);
    char *out = malloc(total + 1);
    if (!out) return zaya_error_set(ZAYA_ENOMEM, "decode: cannot allocate %zu bytes", total + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l;
        const uint8_t *b = zaya_tok_decode_bytes(t, ids[i], &l);
        memcpy(out + o, b, l);
        o += l;
    }
    out[o] = '\0';
    *text = out;
    *len = o;
    return ZAYA_OK;
}

int zaya_tokenizer_is_byte_exact(const zaya_tokenizer *t) {
    if (t->vocab_raw || t->n_norm) return 0;
    for (int32_t a = 0; a < t->n_added; a++)
        if (t->added[a].lstrip || t->added[a].rstrip) return 0;
    return 1;
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

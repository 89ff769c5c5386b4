/* Multiple-choice items: each choice's (context, continuation) text from mc_formats.c tokenized as
 * lm-eval-harness does, validated against the model's context before anything is scored. */
#include <stdlib.h>
#include <string.h>

#include "zaya/infer.h"
#include "zaya/tokenizer.h"

static void item_free(zaya_mc_item *it) {
    for (int c = 0; c < it->nchoices && it->seq; c++) free(it->seq[c]);
    free(it->seq);
    free(it->nseq);
    free(it->nctx);
    free(it->norm_bytes);
    memset(it, 0, sizeof *it);
}

void zaya_mc_free(zaya_mc_set *set) {
    for (int64_t i = 0; i < set->n; i++) item_free(&set->items[i]);
    free(set->items);
    set->items = NULL;
    set->n = 0;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

/* Trailing whitespace of the context moves to the continuation; context + continuation is encoded
 * whole and the tokens past the context's own encoding are the continuation. */
static zaya_status encode_pair(const zaya_tokenizer *tok, const char *ctx, const char *cont, int32_t **seq,
                               int64_t *nseq, int64_t *nctx) {
    size_t lc = strlen(ctx), lk = strlen(cont);
    while (lc && is_space(ctx[lc - 1])) lc--;
    char *whole = malloc(strlen(ctx) + lk + 1);
    if (!whole) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    memcpy(whole, ctx, strlen(ctx));
    memcpy(whole + strlen(ctx), cont, lk + 1);
    int32_t *ids = NULL;
    size_t n = 0, cap = 0, nc = 0, cap2 = 0;
    *seq = NULL;
    zaya_status s = zaya_tokenizer_encode(tok, whole, strlen(whole), seq, &n, &cap);
    if (s == ZAYA_OK) s = zaya_tokenizer_encode(tok, whole, lc, &ids, &nc, &cap2);
    free(ids);
    free(whole);
    *nseq = (int64_t)n;
    *nctx = (int64_t)nc;
    return s;
}

static zaya_status tokenize_doc(const zaya_mc_doc *d, const zaya_tokenizer *tok, int64_t max_len, zaya_mc_item *it) {
    it->line = d->line;
    it->label = d->label;
    it->seq = calloc((size_t)d->nchoices, sizeof(int32_t *));
    it->nseq = calloc((size_t)d->nchoices, sizeof(int64_t));
    it->nctx = calloc((size_t)d->nchoices, sizeof(int64_t));
    it->norm_bytes = calloc((size_t)d->nchoices, sizeof(int64_t));
    if (!it->seq || !it->nseq || !it->nctx || !it->norm_bytes) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    for (int c = 0; c < d->nchoices; c++) {
        it->nchoices = c + 1;
        it->norm_bytes[c] = d->norm_bytes[c] > 0 ? d->norm_bytes[c] : 1;
        ZAYA_TRY(encode_pair(tok, d->ctx[c], d->cont[c], &it->seq[c], &it->nseq[c], &it->nctx[c]));
        if (it->nctx[c] == 0) return zaya_error_set(ZAYA_EFORMAT, "the context of choice %d has no tokens", c);
        if (it->nseq[c] <= it->nctx[c])
            return zaya_error_set(ZAYA_EFORMAT, "choice %d has no tokens after the context", c);
        if (it->nseq[c] > max_len)
            return zaya_error_set(ZAYA_ERANGE, "context + choice %d is %lld tokens, longer than the model's context %lld",
                                  c, (long long)it->nseq[c], (long long)max_len);
    }
    /* shared prefix: equal in every sequence and inside every context */
    int64_t common = it->nctx[0];
    for (int c = 1; c < it->nchoices; c++) {
        int64_t k = 0;
        const int64_t lim = common < it->nctx[c] ? common : it->nctx[c];
        while (k < lim && it->seq[c][k] == it->seq[0][k]) k++;
        common = k;
    }
    it->common = common;
    return ZAYA_OK;
}

zaya_status zaya_mc_tokenize(const zaya_mc_docs *docs, const char *path, const zaya_tokenizer *tok, int64_t max_len,
                             zaya_mc_set *out) {
    out->items = NULL;
    out->n = 0;
    zaya_mc_set set = {calloc((size_t)docs->n, sizeof(zaya_mc_item)), 0};
    if (!set.items) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    zaya_status s = ZAYA_OK;
    for (int64_t i = 0; i < docs->n && s == ZAYA_OK; i++) {
        s = tokenize_doc(&docs->docs[i], tok, max_len, &set.items[i]);
        set.n = i + 1;
        if (s != ZAYA_OK) s = zaya_error_context(s, "%s:%lld", path, (long long)docs->docs[i].line);
    }
    if (s != ZAYA_OK) {
        zaya_mc_free(&set);
        return s;
    }
    *out = set;
    return ZAYA_OK;
}

zaya_status zaya_mc_load(const char *path, zaya_mc_format fmt, const zaya_tokenizer *tok, int64_t max_len,
                         zaya_mc_set *out, zaya_mc_format *format_out) {
    out->items = NULL;
    out->n = 0;
    zaya_mc_docs docs;
    ZAYA_TRY(zaya_mc_read(path, fmt, &docs));
    zaya_status s = zaya_mc_tokenize(&docs, path, tok, max_len, out);
    if (s == ZAYA_OK && format_out) *format_out = docs.format;
    zaya_mc_docs_free(&docs);
    return s;
}

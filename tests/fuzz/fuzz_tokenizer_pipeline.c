/* The normalizer / added-token / pre-tokenizer / model pipeline on fuzzed text, over fixed tokenizers
 * of every supported family (GPT-2 byte-level trained by zaya, Llama-3 and o200k regex splits,
 * SentencePiece-style legacy and Metaspace with byte fallback; tests/fixtures/tokenizer/). Input:
 * byte 0 picks the tokenizer, byte 1 the flags (parse / add special), the rest is the text. Checked:
 * encoding succeeds (the text is within every budget of docs/limits.md), ids are in range, the cached
 * and uncached encoders agree, pre-token lengths cover the text, decoding succeeds, and the text comes
 * back exactly: always for byte-level tokenizers, and for SentencePiece-style ones whenever the text
 * is valid UTF-8 with no U+2581 and no added-token content in it and no character went to unk
 * (or to byte tokens that the decoder keeps as "<0xNN>"). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"

#ifndef ZAYA_FUZZ_SOURCE_DIR
#define ZAYA_FUZZ_SOURCE_DIR "."
#endif

enum { N_TOK = 5 };
static zaya_tokenizer *g_tok[N_TOK];
static zaya_tokenizer_encoder *g_enc[N_TOK];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fuzz_quiet();
    static const char *const names[] = {"llama3", "o200k", "sp-legacy", "sp-metaspace"};
    zaya_status s = fuzz_make_tokenizer(&g_tok[0]);
    for (int i = 0; s == ZAYA_OK && i < N_TOK - 1; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/tests/fixtures/tokenizer/%s.json", ZAYA_FUZZ_SOURCE_DIR, names[i]);
        s = zaya_tokenizer_load(p, &g_tok[i + 1]);
    }
    for (int i = 0; s == ZAYA_OK && i < N_TOK; i++) s = zaya_tokenizer_encoder_init(g_tok[i], 1, &g_enc[i]);
    if (s != ZAYA_OK) {
        fprintf(stderr, "fuzz_tokenizer_pipeline: %s\n", zaya_error_message());
        abort();
    }
    return 0;
}

static int valid_utf8(const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)zaya_utf8_decode(p + i, n - i, &cp);
        if (cp == UINT32_MAX) return 0;
    }
    return 1;
}

/* 1 when decode(encode(text)) must give the text back. */
static int must_round_trip(const zaya_tokenizer *t, const uint8_t *s, size_t n, int flags) {
    if (flags & ZAYA_ENCODE_ADD_SPECIAL && t->has_template) return 0;
    if (!t->vocab_raw) return zaya_tokenizer_is_byte_exact(t);
    if (!valid_utf8(s, n) || memmem(s, n, "\xe2\x96\x81", 3)) return 0;
    for (int32_t a = 0; a < t->n_added; a++) {
        int32_t id = t->added[a].id;
        if (memmem(s, n, t->tok_bytes + t->tok_off[id], t->tok_len[id])) return 0;
    }
    /* Metaspace with prepend_scheme "first" drops a leading space on decode. */
    return !(t->pre_kind == ZAYA_PRE_METASPACE && n && s[0] == ' ');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_quiet();
    fuzz_accept();
    if (size < 2) return 0;
    int k = data[0] % N_TOK, flags = data[1] & (ZAYA_ENCODE_ADD_SPECIAL | ZAYA_ENCODE_PARSE_SPECIAL);
    const zaya_tokenizer *t = g_tok[k];
    const uint8_t *s = data + 2;
    size_t n = size - 2;
    int32_t *ids = NULL, *ids2 = NULL;
    size_t nid = 0, cap = 0, nid2 = 0, cap2 = 0, len = 0;
    zaya_status st = zaya_tokenizer_encoder_encode_flags(g_enc[k], (const char *)s, n, flags, &ids, &nid, &cap);
    if (st != ZAYA_OK) fprintf(stderr, "encode: %s\n", zaya_error_message());
    FUZZ_ASSERT(st == ZAYA_OK);
    for (size_t i = 0; i < nid; i++) FUZZ_ASSERT(ids[i] >= 0 && ids[i] < t->n_vocab);
    FUZZ_ASSERT(zaya_tokenizer_encode_flags(t, (const char *)s, n, flags, &ids2, &nid2, &cap2) == ZAYA_OK);
    FUZZ_ASSERT(nid2 == nid && (nid == 0 || !memcmp(ids, ids2, nid * sizeof *ids)));
    size_t *lens = NULL, np = 0, sum = 0;
    if (zaya_tokenizer_pretokenize(t, (const char *)s, n, &lens, &np) == ZAYA_OK) {
        for (size_t i = 0; i < np; i++) {
            FUZZ_ASSERT(lens[i] > 0);
            sum += lens[i];
        }
        FUZZ_ASSERT(sum == n);
        free(lens);
    }
    zaya_error_clear();
    char *text = NULL;
    FUZZ_ASSERT(zaya_tokenizer_decode(t, ids, nid, &text, &len) == ZAYA_OK);
    /* Ids whose text the decoder does not turn back into the input: unk, and byte-fallback tokens
     * without a ByteFallback decoder (sp-metaspace decodes them as "<0xNN>", as HF does). */
    int unk = 0, bf = 0;
    for (int d = 0; d < t->n_dec; d++) bf |= t->dec[d].kind == ZAYA_DEC_BYTEFALLBACK;
    for (size_t i = 0; i < nid; i++) {
        unk |= ids[i] == t->unk_id;
        for (int b = 0; t->vocab_raw && !bf && b < 256; b++) unk |= ids[i] == t->fallback_id[b];
    }
    if (!unk && must_round_trip(t, s, n, flags)) {
        if (len != n || (n && memcmp(text, s, n))) fprintf(stderr, "round trip: %zu bytes back for %zu\n", len, n);
        FUZZ_ASSERT(len == n && (n == 0 || !memcmp(text, s, n)));
    }
    free(text);
    free(ids);
    free(ids2);
    return 0;
}

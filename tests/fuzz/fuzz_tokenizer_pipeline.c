/* The normalizer / added-token / pre-tokenizer / model pipeline on fuzzed text, over fixed tokenizers
 * of every supported family (GPT-2 byte-level trained by zaya, Llama-3 and o200k regex splits,
 * SentencePiece-style legacy and Metaspace with byte fallback; tests/fixtures/tokenizer/) and three
 * variants of them (Qwen2: NFC + single-digit split; SmolLM: Digits + ByteLevel; NFKC before the
 * legacy normalizer). Input:
 * byte 0 picks the tokenizer, byte 1 the flags (parse / add special), the rest is the text. Checked:
 * encoding succeeds (the text is within every budget of docs/limits.md), ids are in range, the cached
 * and uncached encoders agree, pre-token lengths cover the text, decoding succeeds, and the text comes
 * back exactly: always for byte-level tokenizers (as its NFC form for the Qwen2 variant), and for SentencePiece-style ones whenever the text
 * is valid UTF-8 with no U+2581 and no added-token content in it and no character went to unk
 * (or to byte tokens that the decoder keeps as "<0xNN>"). */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "zaya/json.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"

#ifndef ZAYA_FUZZ_SOURCE_DIR
#define ZAYA_FUZZ_SOURCE_DIR "."
#endif

enum { N_TOK = 8 };
static zaya_tokenizer *g_tok[N_TOK];
static zaya_tokenizer_encoder *g_enc[N_TOK];

/* A fixture with its normalizer and/or pre-tokenizer replaced (JSON text; NULL keeps the original). */
static zaya_status variant(const char *fixture, const char *norm, const char *pre, zaya_tokenizer **out) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tests/fixtures/tokenizer/%s.json", ZAYA_FUZZ_SOURCE_DIR, fixture);
    cJSON *j = NULL;
    ZAYA_TRY(zaya_json_load_file(p, &j));
    if (norm) cJSON_ReplaceItemInObject(j, "normalizer", cJSON_Parse(norm));
    if (pre) cJSON_ReplaceItemInObject(j, "pre_tokenizer", cJSON_Parse(pre));
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    if (!text) return zaya_error_set(ZAYA_ENOMEM, "variant of %s", fixture);
    const char *path = fuzz_write("variant.json", text, strlen(text));
    free(text);
    return zaya_tokenizer_load(path, out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    fuzz_quiet();
    static const char *const names[] = {"llama3", "o200k", "sp-legacy", "sp-metaspace"};
    zaya_status s = fuzz_make_tokenizer(&g_tok[0]);
    for (int i = 0; s == ZAYA_OK && i < 4; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/tests/fixtures/tokenizer/%s.json", ZAYA_FUZZ_SOURCE_DIR, names[i]);
        s = zaya_tokenizer_load(p, &g_tok[i + 1]);
    }
    /* Qwen2 (NFC + single-digit regex), SmolLM (Digits + ByteLevel), NFKC before the legacy normalizer. */
    if (s == ZAYA_OK)
        s = variant("llama3", "{\"type\":\"NFC\"}",
                    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
                    "\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"
                    "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},\"behavior\":\"Isolated\",\"invert\":false},"
                    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]}",
                    &g_tok[5]);
    if (s == ZAYA_OK)
        s = variant("llama3", NULL,
                    "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Digits\",\"individual_digits\":true},"
                    "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}]}",
                    &g_tok[6]);
    if (s == ZAYA_OK)
        s = variant("sp-legacy",
                    "{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFKC\"},{\"type\":\"Prepend\",\"prepend\":\"\u2581\"},"
                    "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\u2581\"}]}",
                    NULL, &g_tok[7]);
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

static int has_added_text(const zaya_tokenizer *t, const uint8_t *s, size_t n) {
    for (int32_t a = 0; a < t->n_added; a++) {
        int32_t id = t->added[a].id;
        if (memmem(s, n, t->tok_bytes + t->tok_off[id], t->tok_len[id])) return 1;
    }
    return 0;
}

/* Byte-level with only Unicode normalizers and no added-token text: decoding gives the normalized
 * text exactly (*want, malloc'd); 0 when that does not apply. */
static int normalized_text(const zaya_tokenizer *t, const uint8_t *s, size_t n, uint8_t **want, size_t *wl) {
    if (t->vocab_raw || !t->n_norm || has_added_text(t, s, n)) return 0;
    for (int i = 0; i < t->n_norm; i++)
        if (t->norm[i].kind != ZAYA_NORM_UNICODE) return 0;
    FUZZ_ASSERT(zaya_tok_normalize(t, s, n, want, wl) == ZAYA_OK);
    return 1;
}

/* 1 when decode(encode(text)) must give the text back. */
static int must_round_trip(const zaya_tokenizer *t, const uint8_t *s, size_t n, int flags) {
    if (flags & ZAYA_ENCODE_ADD_SPECIAL && t->has_template) return 0;
    if (!t->vocab_raw) return zaya_tokenizer_is_byte_exact(t);
    for (int i = 0; i < t->n_norm; i++)
        if (t->norm[i].kind == ZAYA_NORM_UNICODE) return 0; /* NFx changes the text by design */
    if (!valid_utf8(s, n) || memmem(s, n, "\xe2\x96\x81", 3) || has_added_text(t, s, n)) return 0;
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
    uint8_t *want = NULL;
    size_t wl = 0;
    if (!(flags & ZAYA_ENCODE_ADD_SPECIAL) && normalized_text(t, s, n, &want, &wl)) {
        if (len != wl || (wl && memcmp(text, want, wl))) fprintf(stderr, "normalized round trip: %zu bytes for %zu\n", len, wl);
        FUZZ_ASSERT(len == wl && (wl == 0 || !memcmp(text, want, wl)));
    }
    free(want);
    free(text);
    free(ids);
    free(ids2);
    return 0;
}

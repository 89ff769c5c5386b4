/* Byte-level BPE tokenizer: GPT-2 byte alphabet, pre-tokenizer against HF outputs, Unicode classes,
 * training against a naive full-recount trainer, encoding against a naive merge loop, exact round
 * trips of random bytes, save/load stability and rejection of malformed tokenizer.json files. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"
#include "zaya/fs.h"
#include "zaya/rng.h"
#include "zaya/tokenizer.h"

static char tmpdir[] = "/tmp/zaya_test_tokenizer_XXXXXX";

/* ---- byte alphabet and classes ---- */

static void test_byte_alphabet(void) {
    /* GPT-2's construction: printable bytes keep their code point, the rest take 256, 257, ... in
     * byte order. */
    int printable[256] = {0};
    for (int b = '!'; b <= '~'; b++) printable[b] = 1;
    for (int b = 0xA1; b <= 0xAC; b++) printable[b] = 1;
    for (int b = 0xAE; b <= 0xFF; b++) printable[b] = 1;
    int next = 256, ok = 1;
    for (int b = 0; b < 256; b++) {
        int want = printable[b] ? b : next++;
        if (zaya_byte_to_cp[b] != want || zaya_cp_to_byte((uint32_t)want) != b) ok = 0;
    }
    CHECK(ok && next == 256 + 68, "byte alphabet differs from GPT-2's bytes_to_unicode");
    CHECK(zaya_byte_to_cp[' '] == 0x120, "space maps to U+0120 ('G' with dot)");
    CHECK(zaya_byte_to_cp['\n'] == 0x10A, "newline maps to U+010A");
    CHECK(zaya_cp_to_byte(0x20) == -1 && zaya_cp_to_byte(0x144) == -1 && zaya_cp_to_byte(0xAD) == -1,
          "code points outside the alphabet are rejected");
}

static void test_unicode_classes(void) {
    struct { uint32_t cp; zaya_char_class c; } cases[] = {
        {'a', ZAYA_CHAR_LETTER},    {0xE9, ZAYA_CHAR_LETTER},   {0x3B6, ZAYA_CHAR_LETTER}, {0x6771, ZAYA_CHAR_LETTER},
        {0x30FC, ZAYA_CHAR_LETTER}, {'7', ZAYA_CHAR_NUMBER},    {0x663, ZAYA_CHAR_NUMBER}, {0xBD, ZAYA_CHAR_NUMBER},
        {0x216B, ZAYA_CHAR_NUMBER}, {' ', ZAYA_CHAR_SPACE},     {0x85, ZAYA_CHAR_SPACE},   {0xA0, ZAYA_CHAR_SPACE},
        {0x3000, ZAYA_CHAR_SPACE},  {0x2028, ZAYA_CHAR_SPACE},  {0x1C, ZAYA_CHAR_OTHER},   {0x200B, ZAYA_CHAR_OTHER},
        {0x1F600, ZAYA_CHAR_OTHER}, {'_', ZAYA_CHAR_OTHER},     {0, ZAYA_CHAR_OTHER},      {UINT32_MAX, ZAYA_CHAR_OTHER},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(zaya_unicode_class(cases[i].cp) == cases[i].c, "class of U+%04X is %d, want %d", cases[i].cp,
              zaya_unicode_class(cases[i].cp), cases[i].c);

    struct { const char *s; int len; uint32_t cp; } utf8[] = {
        {"\xc3\xa9", 2, 0xE9},          {"\xf0\x9f\x98\x80", 4, 0x1F600}, {"\xc0\x80", 1, UINT32_MAX}, /* overlong */
        {"\xed\xa0\x80", 1, UINT32_MAX}, /* surrogate */                  {"\xf4\x90\x80\x80", 1, UINT32_MAX},
        {"\xe2\x82", 1, UINT32_MAX},     /* truncated */                  {"\x80", 1, UINT32_MAX},
        {"\xff", 1, UINT32_MAX},         {"\xe2\x28\xa1", 1, UINT32_MAX},
    };
    for (size_t i = 0; i < sizeof utf8 / sizeof utf8[0]; i++) {
        uint32_t cp;
        int len = zaya_utf8_decode((const uint8_t *)utf8[i].s, strlen(utf8[i].s), &cp);
        CHECK(len == utf8[i].len && cp == utf8[i].cp, "utf8 case %zu: len %d cp %X", i, len, cp);
    }
}

/* ---- pre-tokenizer ---- */

/* Splits s and joins the pieces with '|'. */
static void pretok_join(const char *s, size_t n, char *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t e = zaya_pretok_next((const uint8_t *)s, n, i);
        if (i) out[o++] = '|';
        memcpy(out + o, s + i, e - i);
        o += e - i;
        i = e;
    }
    out[o] = '\0';
}

static void test_pretokenizer(void) {
    /* Expected splits produced by HF tokenizers 0.23.3 (pre_tokenizers.ByteLevel(add_prefix_space=False,
     * use_regex=True).pre_tokenize_str, pieces mapped back to bytes). */
    static const char *hf[][2] = {
        {"Hello world", "Hello| world"},
        {"it's I'll we've they're I'm he'd don't", "it|'s| I|'ll| we|'ve| they|'re| I|'m| he|'d| don|'t"},
        {"'S 's ''s x's", "'|S| '|s| ''|s| x|'s"},
        {"abc123def 4567", "abc|123|def| 4567"},
        {"a, b!! c... (d)", "a|,| b|!!| c|...| (|d|)"},
        {"a   b", "a|  | b"},
        {"a \n\n b", "a| \n\n| b"},
        {"x\n\ny", "x|\n|\n|y"},
        {"line1\nline2\n", "line|1|\n|line|2|\n"},
        {"\t\tx", "\t|\t|x"},
        {"tab\t\ty", "tab|\t|\t|y"},
        {"end   ", "end|   "},
        {"   ", "   "},
        {"na\xc3\xafve caf\xc3\xa9 \xce\x96\xce\xb5\xcf\x8d\xcf\x82", "na\xc3\xafve| caf\xc3\xa9| \xce\x96\xce\xb5\xcf\x8d\xcf\x82"},
        {"\xe6\x9d\xb1\xe4\xba\xac \xe3\x82\xbf\xe3\x83\xaf\xe3\x83\xbc", "\xe6\x9d\xb1\xe4\xba\xac| \xe3\x82\xbf\xe3\x83\xaf\xe3\x83\xbc"},
        {"\xd9\xa1\xd9\xa2\xd9\xa3 \xc2\xbd", "\xd9\xa1\xd9\xa2\xd9\xa3| \xc2\xbd"},
        {"hi \xf0\x9f\x98\x80\xf0\x9f\x98\x80 ok", "hi| \xf0\x9f\x98\x80\xf0\x9f\x98\x80| ok"},
        {"\xe3\x80\x80\xe3\x80\x80x", "\xe3\x80\x80|\xe3\x80\x80|x"},
        {"a\xc2\xa0" "b", "a|\xc2\xa0|b"},
        {"$100 -5", "$|100| -|5"},
        {"__init__", "__|init|__"},
        /* Invalid UTF-8 (zaya's rule, HF cannot take such input): each bad byte is a symbol character. */
        {"a\xff\xfe" "b", "a|\xff\xfe|b"},
        {" \x80x", " \x80|x"},
        {"\xc3(", "\xc3("},
        {"ab\xe2\x82", "ab|\xe2\x82"},
        {"x\xc0\x80y", "x|\xc0\x80|y"},
        {"1\xff" "2", "1|\xff|2"},
        {"\xed\xa0\x80!", "\xed\xa0\x80!"},
        {"  \xff", " | \xff"},
    };
    char out[512];
    for (size_t i = 0; i < sizeof hf / sizeof hf[0]; i++) {
        pretok_join(hf[i][0], strlen(hf[i][0]), out);
        CHECK(!strcmp(out, hf[i][1]), "pre-tokens of case %zu: got '%s', want '%s'", i, out, hf[i][1]);
    }
    /* NUL is a control character (class other). */
    pretok_join("a\0b", 3, out);
    CHECK(!memcmp(out, "a|\0|b", 6), "NUL splits as a symbol");
}

/* ---- training ---- */

static zaya_tokenizer *train_texts(const char *const *texts, int n, int64_t vocab, int64_t min_freq) {
    size_t lens[64];
    for (int i = 0; i < n; i++) lens[i] = strlen(texts[i]);
    zaya_bpe_train_opts o = {.vocab_size = vocab, .bos = "<|bos|>", .eos = "<|eos|>", .pad = "<|pad|>", .min_frequency = min_freq};
    zaya_tokenizer *t = NULL;
    zaya_status s = zaya_tokenizer_train_buffers(texts, lens, n, &o, &t);
    CHECK(s == ZAYA_OK, "training failed: %s", zaya_error_message());
    return t;
}

static int token_is(const zaya_tokenizer *t, int32_t id, const char *s) {
    size_t n;
    const uint8_t *b = zaya_tokenizer_token_bytes(t, id, &n);
    return b && n == strlen(s) && !memcmp(b, s, n);
}

static void test_first_merges(void) {
    /* Pre-tokens: "low", " lower", " lowest", " low" x2. Pair counts: l+o 5, o+w 5 (tie: smaller ids
     * (108, 111) win), then lo+w 5, " "+low 4, " low"+e 2; every other pair is seen once. */
    const char *texts[] = {"low lower lowest low low"};
    zaya_tokenizer *t = train_texts(texts, 1, 1000, 2);
    if (!t) return;
    CHECK(t->n_merges == 4, "merges %d, want 4 (min frequency 2 stops training)", t->n_merges);
    const char *want[] = {"lo", "low", " low", " lowe"};
    for (int r = 0; r < 4 && r < t->n_merges; r++)
        CHECK(token_is(t, t->merge_id[r], want[r]) && t->merge_id[r] == 256 + r, "merge %d", r);
    CHECK(zaya_tokenizer_vocab_size(t) == 263, "vocab %lld", (long long)zaya_tokenizer_vocab_size(t));
    CHECK(zaya_tokenizer_special_id(t, "bos") == 260 && zaya_tokenizer_special_id(t, "eos") == 261 &&
              zaya_tokenizer_special_id(t, "pad") == 262 && zaya_tokenizer_special_id(t, "unk") == -1,
          "special ids follow the merges");
    zaya_tokenizer_free(t);

    /* Overlapping pairs merge left to right: "aaaaa" -> aa aa a. */
    const char *texts2[] = {"aaaaa aaaaa"};
    t = train_texts(texts2, 1, 257 + 3, 2);
    if (!t) return;
    CHECK(t->n_merges >= 1 && token_is(t, t->merge_id[0], "aa"), "first merge aa");
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    zaya_tokenizer_encode(t, "aaaaa", 5, &ids, &n, &cap);
    CHECK(n == 3 && ids[0] == t->merge_id[0] && ids[1] == t->merge_id[0] && ids[2] == 'a', "aaaaa -> aa aa a (n=%zu)", n);
    free(ids);
    zaya_tokenizer_free(t);
}

/* Reference trainer: recounts every pair from scratch before each merge, same tie rule. */
typedef struct naive_word {
    int32_t sym[64];
    int n;
    int64_t count;
} naive_word;

static void test_train_vs_naive(void) {
    /* A corpus of random words over a small alphabet, so pairs repeat and counts tie often. */
    enum { NWORDS = 3000 };
    static char text[NWORDS * 12];
    size_t o = 0;
    zaya_rng r = zaya_rng_make(7, 1);
    for (int i = 0; i < NWORDS; i++) {
        int len = 1 + (int)zaya_rng_next_below(&r, 7);
        if (zaya_rng_next_below(&r, 4)) text[o++] = ' ';
        for (int k = 0; k < len; k++) text[o++] = "abcde"[zaya_rng_next_below(&r, zaya_rng_next_below(&r, 2) ? 2 : 5)];
        if (!zaya_rng_next_below(&r, 9)) text[o++] = ',';
    }
    text[o] = '\0';
    const char *texts[] = {text};
    zaya_tokenizer *t = train_texts(texts, 1, 600, 2);
    if (!t) return;

    /* Naive: words from the same pre-tokenizer, counted in a flat list. */
    static naive_word words[NWORDS * 2];
    int nw = 0;
    for (size_t i = 0; i < o;) {
        size_t e = zaya_pretok_next((const uint8_t *)text, o, i);
        int found = -1;
        for (int w = 0; w < nw && found < 0; w++) {
            if (words[w].n != (int)(e - i)) continue;
            int same = 1;
            for (size_t k = 0; k < e - i; k++) same &= words[w].sym[k] == (uint8_t)text[i + k];
            if (same) found = w;
        }
        if (found < 0) {
            found = nw++;
            words[found].n = (int)(e - i);
            for (size_t k = 0; k < e - i; k++) words[found].sym[k] = (uint8_t)text[i + k];
        }
        words[found].count++;
        i = e;
    }
    static char tok[600][64];
    static int tok_len[600];
    int ntok = 256;
    for (int b = 0; b < 256; b++) tok[b][0] = (char)b, tok_len[b] = 1;
    int matched = 0, nm = 0;
    static int64_t cnt[600][600]; /* ids stay below the target vocab of 600 */
    while (ntok < 600 - 3) {
        memset(cnt, 0, sizeof cnt);
        int64_t best = 0;
        int ba = -1, bb = -1;
        for (int w = 0; w < nw; w++)
            for (int k = 0; k + 1 < words[w].n; k++) cnt[words[w].sym[k]][words[w].sym[k + 1]] += words[w].count;
        for (int a = 0; a < ntok; a++)
            for (int b = 0; b < ntok; b++)
                if (cnt[a][b] > best) best = cnt[a][b], ba = a, bb = b;
        if (best < 2) break;
        char nt[64];
        int nl = tok_len[ba] + tok_len[bb];
        memcpy(nt, tok[ba], tok_len[ba]);
        memcpy(nt + tok_len[ba], tok[bb], tok_len[bb]);
        int id = -1;
        for (int k = 0; k < ntok; k++)
            if (tok_len[k] == nl && !memcmp(tok[k], nt, nl)) id = k;
        if (id < 0) {
            id = ntok++;
            memcpy(tok[id], nt, nl);
            tok_len[id] = nl;
        }
        if (nm < t->n_merges && t->merge_a[nm] == ba && t->merge_b[nm] == bb && t->merge_id[nm] == id) matched++;
        nm++;
        for (int w = 0; w < nw; w++) {
            int j = 0;
            for (int k = 0; k < words[w].n;) {
                if (k + 1 < words[w].n && words[w].sym[k] == ba && words[w].sym[k + 1] == bb) words[w].sym[j++] = id, k += 2;
                else words[w].sym[j++] = words[w].sym[k++];
            }
            words[w].n = j;
        }
    }
    CHECK(nm > 100 && nm == t->n_merges && matched == nm, "incremental trainer: %d of %d merges match the naive one (zaya made %d)",
          matched, nm, t->n_merges);
    zaya_tokenizer_free(t);
}

/* ---- encoding ---- */

/* Reference encoder for one word: repeatedly merge the lowest-rank adjacent pair (leftmost on ties). */
static size_t naive_encode_word(const zaya_tokenizer *t, const uint8_t *w, size_t n, int32_t *out) {
    for (size_t i = 0; i < n; i++) out[i] = w[i];
    for (;;) {
        int32_t best = -1;
        size_t at = 0;
        for (size_t i = 0; i + 1 < n; i++) {
            for (int32_t r = 0; r < t->n_merges; r++)
                if (t->merge_a[r] == out[i] && t->merge_b[r] == out[i + 1]) {
                    if (best < 0 || r < best) best = r, at = i;
                    break;
                }
        }
        if (best < 0) return n;
        out[at] = t->merge_id[best];
        memmove(out + at + 1, out + at + 2, (n - at - 2) * sizeof *out);
        n--;
    }
}

static zaya_tokenizer *train_on_licenses(int64_t vocab) {
    const char *paths[] = {"/usr/share/common-licenses"};
    zaya_bpe_train_opts o = {.vocab_size = vocab, .eos = "<|endoftext|>", .max_bytes = 400000};
    zaya_tokenizer *t = NULL;
    zaya_status s = zaya_tokenizer_train(paths, 1, &o, &t);
    CHECK(s == ZAYA_OK, "train on /usr/share/common-licenses: %s", zaya_error_message());
    return t;
}

static void test_encode_and_round_trip(zaya_tokenizer *t) {
    /* Encoder vs the naive merge loop, on real text. */
    char *text;
    size_t len;
    if (zaya_read_file("/usr/share/common-licenses/GPL-3", &text, &len) != ZAYA_OK) {
        CHECK(0, "read GPL-3: %s", zaya_error_message());
        return;
    }
    if (len > 20000) len = 20000;
    int32_t *ids = NULL, ref[4096];
    size_t n = 0, cap = 0, nref = 0;
    CHECK(zaya_tokenizer_encode(t, text, len, &ids, &n, &cap) == ZAYA_OK, "encode");
    int same = 1;
    for (size_t i = 0; i < len;) {
        size_t e = zaya_pretok_next((const uint8_t *)text, len, i);
        int32_t w[4096];
        size_t k = naive_encode_word(t, (const uint8_t *)text + i, e - i, w);
        for (size_t j = 0; j < k; j++, nref++) same &= nref < n && ids[nref] == w[j];
        i = e;
    }
    CHECK(same && nref == n, "encoder differs from the naive merge loop (%zu vs %zu ids)", n, nref);
    CHECK(n < len / 3, "BPE compresses licence text: %zu ids for %zu bytes", n, len);
    (void)ref;
    free(text);

    /* Round trips of random byte strings (NUL, 0xFF, broken UTF-8) and of random valid UTF-8 mixes,
     * through the cached encoder (long input) and the uncached one (short input). */
    zaya_tokenizer_encoder *enc;
    CHECK(zaya_tokenizer_encoder_init(t, 1, &enc) == ZAYA_OK, "encoder");
    static const char *pieces[] = {"the ", "License", " ", "  ", "\n", "\t", "\xc3\xa9", "\xe6\x9d\xb1", "\xf0\x9f\x98\x80",
                                   "'s", "123", "...", "\xff", "\x00", "\x80", "\xc3", "<|endoftext|>"};
    zaya_rng r = zaya_rng_make(11, 2);
    int bad = 0;
    uint8_t buf[3000];
    for (int trial = 0; trial < 400; trial++) {
        size_t bl = zaya_rng_next_below(&r, trial < 10 ? 3 : 2500);
        for (size_t i = 0; i < bl;) {
            if (trial % 2) {
                buf[i++] = (uint8_t)zaya_rng_next_below(&r, 256);
            } else {
                const char *p = pieces[zaya_rng_next_below(&r, sizeof pieces / sizeof pieces[0])];
                size_t pl = p[0] ? strlen(p) : 1;
                for (size_t k = 0; k < pl && i < bl; k++) buf[i++] = (uint8_t)p[k];
            }
        }
        n = 0;
        zaya_status s = (trial % 3) ? zaya_tokenizer_encoder_encode(enc, (const char *)buf, bl, &ids, &n, &cap)
                                    : zaya_tokenizer_encode(t, (const char *)buf, bl, &ids, &n, &cap);
        char *dec = NULL;
        size_t dl = 0;
        if (s == ZAYA_OK) s = zaya_tokenizer_decode(t, ids, n, &dec, &dl);
        if (s != ZAYA_OK || dl != bl || memcmp(dec, buf, bl) != 0) bad++;
        for (size_t i = 0; i < n; i++)
            if (ids[i] == zaya_tokenizer_special_id(t, "eos")) bad++; /* special text is never injected */
        free(dec);
    }
    CHECK(bad == 0, "%d of 400 random byte strings failed to round-trip exactly", bad);
    zaya_tokenizer_encoder_free(enc);

    /* Decoding: special tokens give their text; out-of-range ids name the position. */
    int32_t eos = zaya_tokenizer_special_id(t, "eos");
    int32_t seq[3] = {'h', eos, 'i'};
    char *dec;
    size_t dl;
    CHECK(zaya_tokenizer_decode(t, seq, 3, &dec, &dl) == ZAYA_OK && dl == 15 && !memcmp(dec, "h<|endoftext|>i", 15), "decode special");
    if (dl == 15) free(dec);
    seq[2] = (int32_t)zaya_tokenizer_vocab_size(t);
    CHECK(zaya_tokenizer_decode(t, seq, 3, &dec, &dl) == ZAYA_ERANGE && strstr(zaya_error_message(), "position 2"),
          "out-of-range id: %s", zaya_error_message());
    free(ids);
}

/* ---- save / load ---- */

static void path_in_tmp(char *out, const char *name) { snprintf(out, 512, "%s/%s", tmpdir, name); }

static void test_save_load(zaya_tokenizer *t) {
    char a[512], b[512], cfg[512];
    snprintf(a, sizeof a, "%s/a", tmpdir);
    snprintf(b, sizeof b, "%s/b", tmpdir);
    zaya_mkdir_p(a);
    zaya_mkdir_p(b);
    strcat(a, "/tokenizer.json");
    strcat(b, "/tokenizer.json");
    CHECK(zaya_tokenizer_save(t, a) == ZAYA_OK, "save: %s", zaya_error_message());
    zaya_tokenizer *u = NULL;
    CHECK(zaya_tokenizer_load(a, &u) == ZAYA_OK, "load: %s", zaya_error_message());
    if (!u) return;
    /* An existing tokenizer_config.json keeps its other keys; the role keys are replaced. */
    char bcfg[600];
    snprintf(bcfg, sizeof bcfg, "%s/b/tokenizer_config.json", tmpdir);
    const char *prior = "{\"model_max_length\": 1024, \"eos_token\": \"old\"}";
    zaya_write_file_atomic(bcfg, prior, strlen(prior));
    CHECK(zaya_tokenizer_save(u, b) == ZAYA_OK, "save again");
    char *cfg_text;
    size_t cfg_len;
    if (zaya_read_file(bcfg, &cfg_text, &cfg_len) == ZAYA_OK) {
        CHECK(strstr(cfg_text, "\"model_max_length\":\t1024") && strstr(cfg_text, "\"eos_token\":\t\"<|endoftext|>\"") &&
                  !strstr(cfg_text, "old"),
              "tokenizer_config.json merged: %s", cfg_text);
        free(cfg_text);
    }
    char *x, *y;
    size_t xl, yl;
    CHECK(zaya_read_file(a, &x, &xl) == ZAYA_OK && zaya_read_file(b, &y, &yl) == ZAYA_OK, "read back");
    CHECK(xl == yl && !memcmp(x, y, xl), "save -> load -> save is byte-stable (%zu vs %zu bytes)", xl, yl);
    CHECK(strstr(x, "\"pre_tokenizer\":") && strstr(x, "\"ByteLevel\"") && strstr(x, "\"merges\":"), "HF layout");
    free(y);
    snprintf(cfg, sizeof cfg, "%s/a/tokenizer_config.json", tmpdir);
    CHECK(access(cfg, F_OK) == 0, "tokenizer_config.json written next to tokenizer.json");
    CHECK(zaya_tokenizer_vocab_size(u) == zaya_tokenizer_vocab_size(t) && u->n_merges == t->n_merges &&
              zaya_tokenizer_special_id(u, "eos") == zaya_tokenizer_special_id(t, "eos"),
          "sizes and roles survive the round trip");
    const char *sample = "The licenses for most software are designed to take away your freedom \xf0\x9f\x98\x80 \xff!";
    int32_t *i1 = NULL, *i2 = NULL;
    size_t n1 = 0, n2 = 0, c1 = 0, c2 = 0;
    zaya_tokenizer_encode(t, sample, strlen(sample), &i1, &n1, &c1);
    zaya_tokenizer_encode(u, sample, strlen(sample), &i2, &n2, &c2);
    CHECK(n1 == n2 && !memcmp(i1, i2, n1 * sizeof *i1), "loaded tokenizer encodes identically");
    free(i1), free(i2);
    zaya_tokenizer_free(u);

    /* Legacy merges ("a b" strings) load to the same tokenizer. */
    char *legacy = malloc(2 * xl + 1);
    size_t o = 0;
    const char *m = strstr(x, "\"merges\":");
    memcpy(legacy, x, (size_t)(m - x));
    o = (size_t)(m - x);
    for (const char *p = m; *p;) {
        /* ["a", "b"] -> "a b" (tokens have no spaces or brackets inside quotes that matter here). */
        if (*p == '[' && p != strchr(m, '[')) {
            const char *q1 = strchr(p, '"'), *q2 = strchr(q1 + 1, '"');
            const char *q3 = strchr(q2 + 1, '"'), *q4 = strchr(q3 + 1, '"');
            while (q2[-1] == '\\' && q2[-2] != '\\') q2 = strchr(q2 + 1, '"'), q3 = strchr(q2 + 1, '"'), q4 = strchr(q3 + 1, '"');
            while (q4[-1] == '\\' && q4[-2] != '\\') q4 = strchr(q4 + 1, '"');
            o += (size_t)sprintf(legacy + o, "\"%.*s %.*s\"", (int)(q2 - q1 - 1), q1 + 1, (int)(q4 - q3 - 1), q3 + 1);
            p = strchr(q4, ']') + 1;
        } else {
            legacy[o++] = *p++;
        }
    }
    legacy[o] = '\0';
    char lp[512];
    path_in_tmp(lp, "legacy.json");
    zaya_write_file_atomic(lp, legacy, o);
    CHECK(zaya_tokenizer_load(lp, &u) == ZAYA_OK, "legacy merges: %s", zaya_error_message());
    if (u) {
        CHECK(u->n_merges == t->n_merges && !memcmp(u->merge_id, t->merge_id, t->n_merges * sizeof(int32_t)),
              "legacy merges give the same ranks");
        zaya_tokenizer_free(u);
    }
    free(legacy);
    free(x);
}

/* Writes text to a file and expects the loader to fail with code and a message containing `want`. */
static void expect_reject(const char *name, const char *text, zaya_status code, const char *want) {
    char p[512];
    path_in_tmp(p, name);
    zaya_write_file_atomic(p, text, strlen(text));
    zaya_tokenizer *t = NULL;
    zaya_status s = zaya_tokenizer_load(p, &t);
    CHECK(s == code && strstr(zaya_error_message(), want) && !t, "%s: status %d, message '%s' (want '%s')", name, s,
          zaya_error_message(), want);
    zaya_tokenizer_free(t);
}

/* A minimal valid file: 256 byte tokens, one merge "a b" -> "ab" (id 256), one added token. */
static char *minimal_json(const char *extra_vocab, const char *merges, const char *added) {
    static char buf[65536];
    size_t o = (size_t)sprintf(buf, "{\"version\":\"1.0\",\"added_tokens\":[%s],\"normalizer\":null,"
                                    "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":true},"
                                    "\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"BPE\",\"vocab\":{",
                               added);
    for (int b = 0; b < 256; b++) {
        char *k = zaya_bytelevel_encode(&(uint8_t){(uint8_t)b}, 1);
        o += (size_t)sprintf(buf + o, "%s\"%s%s\":%d", b ? "," : "", (b == '"' || b == '\\') ? "\\" : "", k, b);
        free(k);
    }
    sprintf(buf + o, "%s},\"merges\":[%s]}}", extra_vocab, merges);
    return buf;
}

static void test_malformed(void) {
    char good[65536];
    snprintf(good, sizeof good, "%s", minimal_json(",\"ab\":256,\"<|eos|>\":257", "\"a b\"",
                                                   "{\"id\":257,\"content\":\"<|eos|>\",\"special\":true}"));
    char p[512];
    path_in_tmp(p, "good.json");
    zaya_write_file_atomic(p, good, strlen(good));
    zaya_tokenizer *t = NULL;
    CHECK(zaya_tokenizer_load(p, &t) == ZAYA_OK, "minimal file loads: %s", zaya_error_message());
    if (t) {
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        zaya_tokenizer_encode(t, "ab a", 4, &ids, &n, &cap);
        CHECK(n == 3 && ids[0] == 256 && ids[1] == ' ' && ids[2] == 'a', "minimal encode");
        CHECK(zaya_tokenizer_special_id(t, "eos") == 257, "eos guessed from its name");
        free(ids);
        zaya_tokenizer_free(t);
    }

    expect_reject("truncated.json", "{\"version\":\"1.0\",\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":", ZAYA_EFORMAT,
                  "malformed JSON");
    char *cut = strndup(good, strlen(good) / 2);
    expect_reject("truncated2.json", cut, ZAYA_EFORMAT, "malformed JSON at line 1");
    free(cut);
    expect_reject("no_model.json", "{\"version\":\"1.0\",\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}", ZAYA_EFORMAT,
                  "model: missing");
    expect_reject("unknown_merge.json", minimal_json(",\"ab\":256", "\"a zz\"", ""), ZAYA_EFORMAT,
                  "model.merges[0]: unknown token \"zz\"");
    expect_reject("merged_missing.json", minimal_json(",\"ab\":256", "\"a b\",\"b c\"", ""), ZAYA_EFORMAT,
                  "model.merges[1]: merged token \"bc\" is not in model.vocab");
    expect_reject("bad_merge_form.json", minimal_json(",\"ab\":256", "\"ab\"", ""), ZAYA_EFORMAT,
                  "model.merges[0]: \"ab\" is not two tokens");
    expect_reject("dup_merge.json", minimal_json(",\"ab\":256", "[\"a\",\"b\"],\"a b\"", ""), ZAYA_EFORMAT,
                  "model.merges[1]: \"a b\" repeats model.merges[0]");
    expect_reject("dup_id.json", minimal_json(",\"ab\":97", "", ""), ZAYA_EFORMAT, "duplicate id 97");
    expect_reject("sparse_id.json", minimal_json(",\"ab\":300", "", ""), ZAYA_ERANGE, "id 300 of \"ab\" is outside [0, 257)");
    expect_reject("dup_token.json", minimal_json(",\"\\u0061\":256", "", ""), ZAYA_EFORMAT, "are the same token");
    expect_reject("not_bytelevel.json", minimal_json(",\"a b\":256", "", ""), ZAYA_EFORMAT,
                  "\"a b\" (id 256) is neither byte-level text");
    expect_reject("added_mismatch.json", minimal_json(",\"<x>\":256", "", "{\"id\":3,\"content\":\"<x>\",\"special\":true}"),
                  ZAYA_EFORMAT, "added_tokens[0] \"<x>\" has id 3 but model.vocab says 256");
    expect_reject("added_bad.json", minimal_json("", "", "{\"content\":\"<x>\"}"), ZAYA_EINVAL,
                  "added_tokens[0]: missing required key 'id'");
    expect_reject("id_type.json", minimal_json(",\"ab\":\"x\"", "", ""), ZAYA_EFORMAT, "value of \"ab\" must be an integer");
    char nobyte[65536];
    snprintf(nobyte, sizeof nobyte, "%s", minimal_json("", "", ""));
    char *open_brace = strstr(nobyte, "\"{\":123");
    memmove(open_brace + 8, open_brace + 7, strlen(open_brace + 7) + 1);
    memcpy(open_brace, "\"ab\":123", 8); /* ids stay dense, byte 0x7B ('{') has no token */
    expect_reject("no_byte.json", nobyte, ZAYA_EFORMAT, "missing the byte token \"{\" for byte 0x7B");
    char norm[65536];
    snprintf(norm, sizeof norm, "%s", minimal_json("", "", ""));
    char *nn = strstr(norm, "\"normalizer\":null");
    memcpy(nn, "\"normalizer\":   1", 17);
    expect_reject("normalizer.json", norm, ZAYA_EFORMAT, "normalizer: expected an object");
    snprintf(norm, sizeof norm, "%s", minimal_json("", "", ""));
    nn = strstr(norm, "\"normalizer\":null");
    char nfkc[65600];
    snprintf(nfkc, sizeof nfkc, "%.*s\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Prepend\","
             "\"prepend\":\"x\"},{\"type\":\"Lowercase\"}]}%s", (int)(nn - norm), norm, nn + 17);
    expect_reject("nfkc.json", nfkc, ZAYA_EUNSUPPORTED, "normalizer.normalizers[1].type: 'Lowercase' is not supported");
    char split[65600];
    char *pt = strstr(norm, "\"pre_tokenizer\":{");
    char *pe = strstr(pt, "},") + 1;
    snprintf(split, sizeof split, "%.*s\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\","
             "\"pattern\":{\"Regex\":\"\\\\w+\"},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\","
             "\"use_regex\":false}]}%s", (int)(pt - norm), norm, pe);
    expect_reject("split.json", split, ZAYA_EUNSUPPORTED, "pre_tokenizer.pretokenizers[0].pattern.Regex: unsupported pattern");
    char pre[65536];
    snprintf(pre, sizeof pre, "%s", minimal_json("", "", ""));
    char *ap = strstr(pre, "\"add_prefix_space\":false");
    memcpy(ap, "\"add_prefix_space\":true ", 24);
    expect_reject("prefix.json", pre, ZAYA_EUNSUPPORTED, "pre_tokenizer.add_prefix_space");
    expect_reject("wordpiece.json", "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"model\":{\"type\":\"WordPiece\"}}",
                  ZAYA_EUNSUPPORTED, "model.type is \"WordPiece\"");
    expect_reject("array.json", "[1,2,3]", ZAYA_EFORMAT, "top level is not a JSON object");
}



/* NFC / NFD / NFKC / NFKD against values from Python's unicodedata (and HF's Unicode 9.0 data). */
static void check_norm(zaya_unicode_form f, const char *in, const char *want) {
    uint8_t *out = NULL;
    size_t len = 0;
    int r = zaya_unicode_normalize(f, (const uint8_t *)in, strlen(in), 1 << 20, &out, &len);
    CHECK(r == 0 && len == strlen(want) && !memcmp(out, want, len), "normalize form %d of '%s': got '%.*s'", (int)f, in,
          (int)len, out ? (const char *)out : "");
    free(out);
}

static void test_normalizers(void) {
    check_norm(ZAYA_NFC, "e\xcc\x81", "\xc3\xa9");                       /* e + acute -> e-acute */
    check_norm(ZAYA_NFD, "\xc3\xa9", "e\xcc\x81");
    check_norm(ZAYA_NFD, "\xea\xb0\x81", "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"); /* Hangul GAG -> L V T */
    check_norm(ZAYA_NFC, "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8", "\xea\xb0\x81");
    check_norm(ZAYA_NFKC, "\xef\xac\x81", "fi");                          /* fi ligature */
    check_norm(ZAYA_NFC, "\xef\xac\x81", "\xef\xac\x81");
    /* q + dot below (220) + acute (230) in either order: one canonical order, composition blocked for q */
    check_norm(ZAYA_NFD, "q\xcc\x81\xcc\xa3", "q\xcc\xa3\xcc\x81");
    check_norm(ZAYA_NFC, "a\xcc\x81\xcc\xa3", "\xe1\xba\xa1\xcc\x81"); /* a + acute + dot below -> a-dot-below + acute */
    check_norm(ZAYA_NFKD, "\xe2\x84\xab", "A\xcc\x8a");                  /* angstrom sign */
    check_norm(ZAYA_NFC, "\xe2\x84\xab", "\xc3\x85");
    /* U+32FF (Unicode 12.1) has no decomposition in HF's Unicode 9.0 data. */
    check_norm(ZAYA_NFKC, "\xe3\x8b\xbf", "\xe3\x8b\xbf");
    /* Invalid bytes pass through and block composition. */
    check_norm(ZAYA_NFC, "e\xff\xcc\x81", "e\xff\xcc\x81");
    uint8_t *out = NULL;
    size_t len = 0;
    const char *lig = "\xef\xb7\xba"; /* U+FDFA: 18 characters under NFKD */
    CHECK(zaya_unicode_normalize(ZAYA_NFKD, (const uint8_t *)lig, 3, 10, &out, &len) == -2 && !out, "NFKD past the limit");
    CHECK(zaya_unicode_normalize(ZAYA_NFKD, (const uint8_t *)lig, 3, 64, &out, &len) == 0 && len == 33, "NFKD of U+FDFA: %zu bytes",
          len);
    free(out);
    /* A long run of marks in reverse class order is ordered in linear time (counting sort). */
    size_t nm = 200000;
    char *marks = malloc(4 * nm + 2);
    size_t o = 0;
    marks[o++] = 'a';
    for (size_t i = 0; i < nm; i++) {
        memcpy(marks + o, i % 2 ? "\xcc\xa3" : "\xcc\x81", 2); /* acute 230, dot below 220 */
        o += 2;
    }
    out = NULL;
    CHECK(zaya_unicode_normalize(ZAYA_NFC, (const uint8_t *)marks, o, 1 << 24, &out, &len) == 0 && len == o &&
              !memcmp(out, "\xe1\xba\xa1", 3), "long mark run: %zu bytes", len);
    free(out);
    free(marks);
    CHECK(zaya_unicode_class(0x1C89) == ZAYA_CHAR_LETTER, "U+1C89 is a letter (Unicode %s)", zaya_unicode_version);
    CHECK(!strcmp(zaya_unicode_version, "16.0.0") && !strcmp(zaya_unicode_norm_version, "9.0"), "table versions %s / %s",
          zaya_unicode_version, zaya_unicode_norm_version);
}

/* ---- budgets (docs/limits.md) ---- */

/* base with the first occurrence of `old` replaced by `new` (malloc'd). */
static char *json_sub(const char *base, const char *old, const char *new) {
    const char *at = strstr(base, old);
    if (!at) return strdup(base);
    size_t a = (size_t)(at - base), ol = strlen(old), nl = strlen(new), bl = strlen(base);
    char *o = malloc(bl - ol + nl + 1);
    memcpy(o, base, a);
    memcpy(o + a, new, nl);
    memcpy(o + a + nl, at + ol, bl - a - ol + 1);
    return o;
}

static zaya_tokenizer *load_text(const char *name, const char *text) {
    char p[512];
    path_in_tmp(p, name);
    zaya_write_file_atomic(p, text, strlen(text));
    zaya_tokenizer *t = NULL;
    CHECK(zaya_tokenizer_load(p, &t) == ZAYA_OK, "%s loads: %s", name, zaya_error_message());
    return t;
}

/* Leftmost-longest match of any of the k tokens at or after `from`, the slow way. */
static int naive_find(char toks[][8], int k, const char *s, size_t n, size_t from, size_t *at, size_t *len) {
    for (size_t i = from; i < n; i++) {
        int best = -1;
        size_t bl = 0;
        for (int j = 0; j < k; j++) {
            size_t l = strlen(toks[j]);
            if (l > bl && i + l <= n && !memcmp(s + i, toks[j], l)) best = j, bl = l;
        }
        if (best >= 0) {
            *at = i;
            *len = bl;
            return best;
        }
    }
    return -1;
}

static void test_added_matcher(void) {
    zaya_rng rng = zaya_rng_make(33, 0);
    int cases = 0, agree = 0;
    for (int trial = 0; trial < 200; trial++) {
        /* Up to 6 distinct tokens of 2..7 characters over {a, b, c} (one byte is a model token): heavy overlap. */
        char toks[6][8];
        int k = 1 + (int)(zaya_rng_next_below(&rng, 6)), m = 0;
        while (m < k) {
            int l = 2 + (int)(zaya_rng_next_below(&rng, 6)), dup = 0;
            for (int i = 0; i < l; i++) toks[m][i] = (char)('a' + zaya_rng_next_below(&rng, 3));
            toks[m][l] = 0;
            for (int j = 0; j < m; j++) dup |= !strcmp(toks[j], toks[m]);
            if (!dup) m++;
        }
        char added[1024], vocab[256];
        size_t o = 0;
        for (int j = 0; j < k; j++)
            o += (size_t)snprintf(added + o, sizeof added - o, "%s{\"id\":%d,\"content\":\"%s\",\"special\":false}", j ? "," : "",
                                  256 + j, toks[j]);
        vocab[0] = 0;
        char *json = strdup(minimal_json(vocab, "", added));
        char p[512];
        path_in_tmp(p, "matcher.json");
        zaya_write_file_atomic(p, json, strlen(json));
        free(json);
        zaya_tokenizer *t = NULL;
        if (zaya_tokenizer_load(p, &t) != ZAYA_OK) {
            CHECK(0, "matcher tokenizer loads: %s", zaya_error_message());
            return;
        }
        char text[64];
        size_t n = 1 + zaya_rng_next_below(&rng, 60);
        for (size_t i = 0; i < n; i++) text[i] = (char)('a' + zaya_rng_next_below(&rng, 3));
        for (size_t from = 0; from <= n; from++) {
            size_t at1 = 0, l1 = 0, at2 = 0, l2 = 0;
            int32_t a1 = zaya_tok_trie_find(&t->trie_raw, (const uint8_t *)text, n, from, &at1, &l1);
            int a2 = naive_find(toks, k, text, n, from, &at2, &l2);
            cases++;
            agree += a1 == a2 && (a1 < 0 || (at1 == at2 && l1 == l2));
        }
        zaya_tokenizer_free(t);
    }
    CHECK(agree == cases, "added-token matcher: %d of %d searches agree with the naive leftmost-longest", agree, cases);

    /* One 4,000-byte token over 400 KB of its own prefix: linear (this took ~10 s per 100 KB before). */
    size_t tl = 4000, n = 400000;
    char *tok = malloc(tl + 1), *text = malloc(n);
    memset(tok, 'q', tl);
    tok[tl - 1] = 'z';
    tok[tl] = 0;
    for (size_t i = 0; i < n; i++) text[i] = (i % tl == tl - 1 && i % (3 * tl) == 3 * tl - 1) ? 'z' : 'q';
    char *added = malloc(tl + 100);
    snprintf(added, tl + 100, "{\"id\":256,\"content\":\"%s\",\"special\":false}", tok);
    char *json = strdup(minimal_json("", "", added));
    zaya_tokenizer *t = load_text("long_added.json", json);
    if (t) {
        int32_t *ids = NULL;
        size_t nid = 0, cap = 0;
        CHECK(zaya_tokenizer_encode(t, text, n, &ids, &nid, &cap) == ZAYA_OK, "long added token encodes");
        size_t hits = 0;
        for (size_t i = 0; i < nid; i++) hits += ids[i] == 256;
        CHECK(hits == n / (3 * tl), "long added token matched %zu times (want %zu)", hits, n / (3 * tl));
        free(ids);
        zaya_tokenizer_free(t);
    }
    free(json), free(added), free(tok), free(text);
}

static void test_budgets(void) {
    char base[65536];
    snprintf(base, sizeof base, "%s", minimal_json(",\"ab\":256", "\"a b\"", ""));

    /* 40 chained Replace a -> aa: 2^40 growth stops at the normalizer budget, at once. */
    char norm[8192];
    size_t o = (size_t)snprintf(norm, sizeof norm, "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":[");
    for (int i = 0; i < 40; i++)
        o += (size_t)snprintf(norm + o, sizeof norm - o, "%s{\"type\":\"Replace\",\"pattern\":{\"String\":\"a\"},\"content\":\"aa\"}",
                              i ? "," : "");
    snprintf(norm + o, sizeof norm - o, "]}");
    char *j = json_sub(base, "\"normalizer\":null", norm);
    zaya_tokenizer *t = load_text("chain.json", j);
    free(j);
    if (t) {
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        zaya_status s = zaya_tokenizer_encode(t, "a b a", 5, &ids, &n, &cap);
        CHECK(s == ZAYA_ERANGE && strstr(zaya_error_message(), "normalizer") && strstr(zaya_error_message(), "docs/limits.md"),
              "chained Replace: status %d, '%s'", s, zaya_error_message());
        free(ids);
        zaya_tokenizer_free(t);
    }
    /* One Replace whose content is 200,000 characters, over 20,000 spaces. */
    size_t big = 200000;
    char *content = malloc(big + 200);
    o = (size_t)snprintf(content, 100, "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"");
    memset(content + o, 'x', big);
    snprintf(content + o + big, 100, "\"}");
    j = json_sub(base, "\"normalizer\":null", content);
    free(content);
    t = load_text("bigreplace.json", j);
    free(j);
    if (t) {
        char *spaces = malloc(20000);
        memset(spaces, ' ', 20000);
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        zaya_status s = zaya_tokenizer_encode(t, spaces, 20000, &ids, &n, &cap);
        CHECK(s == ZAYA_ERANGE && strstr(zaya_error_message(), "Replace would turn 20000 bytes into more than"),
              "big Replace: status %d, '%s'", s, zaya_error_message());
        free(ids);
        free(spaces);
        zaya_tokenizer_free(t);
    }
    j = json_sub(base, "\"normalizer\":null",
                 "\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"String\":\"b\"},\"content\":\"a b\"}");
    t = load_text("okreplace.json", j);
    free(j);
    if (t) {
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        char *back = NULL;
        size_t bl = 0;
        CHECK(zaya_tokenizer_encode(t, "bb", 2, &ids, &n, &cap) == ZAYA_OK && zaya_tokenizer_decode(t, ids, n, &back, &bl) == ZAYA_OK &&
                  bl == 6 && !memcmp(back, "a ba b", 6), "Replace b -> 'a b' within the budget: %zu ids", n);
        free(back);
        free(ids);
        zaya_tokenizer_free(t);
    }

    /* A pre-token over ZAYA_TOKENIZER_MAX_WORD bytes is an error naming its length and offset. */
    size_t big_word = (size_t)ZAYA_TOKENIZER_MAX_WORD + 1;
    char *letters = malloc(big_word + 2);
    letters[0] = '1';
    letters[1] = ' ';
    memset(letters + 2, 'a', big_word);
    t = load_text("longword.json", base);
    if (t) {
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        zaya_status s = zaya_tokenizer_encode(t, letters, big_word + 2, &ids, &n, &cap);
        char want[128];
        snprintf(want, sizeof want, "a pre-token of %zu bytes at byte 1 of the input is longer than", big_word + 1);
        CHECK(s == ZAYA_ERANGE && strstr(zaya_error_message(), want), "long pre-token: status %d, '%s'", s, zaya_error_message());
        /* Just under the limit encodes. */
        n = 0;
        s = zaya_tokenizer_encode(t, letters + 2, (size_t)ZAYA_TOKENIZER_MAX_WORD, &ids, &n, &cap);
        CHECK(s == ZAYA_OK && n == (size_t)ZAYA_TOKENIZER_MAX_WORD, "a pre-token at the limit encodes: %d, %zu ids", s, n);
        free(ids);
        zaya_tokenizer_free(t);
    }
    free(letters);

    /* TemplateProcessing whose special token has "ids": []: adds nothing (was memcpy with NULL). */
    j = json_sub(base, "\"normalizer\":null",
                 "\"normalizer\":null,\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":"
                 "{\"id\":\"E\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}}],\"pair\":[],\"special_tokens\":"
                 "{\"E\":{\"id\":\"E\",\"ids\":[],\"tokens\":[]}}}");
    t = load_text("empty_ids.json", j);
    free(j);
    if (t) {
        int32_t *ids = NULL;
        size_t n = 0, cap = 0;
        CHECK(zaya_tokenizer_encode_flags(t, "", 0, ZAYA_ENCODE_ADD_SPECIAL, &ids, &n, &cap) == ZAYA_OK && n == 0,
              "empty template ids on empty text: %zu ids", n);
        CHECK(zaya_tokenizer_encode_flags(t, "ab", 2, ZAYA_ENCODE_ADD_SPECIAL, &ids, &n, &cap) == ZAYA_OK && n == 1 &&
                  ids[0] == 256, "empty template ids: %zu ids", n);
        free(ids);
        zaya_tokenizer_free(t);
    }

    /* The same content under a second added id. */
    expect_reject("dup_added.json",
                  minimal_json(",\"<s>\":256,\"<t>\":257", "",
                               "{\"id\":256,\"content\":\"<s>\",\"special\":true},{\"id\":257,\"content\":\"<s>\",\"special\":true}"),
                  ZAYA_EFORMAT, "added_tokens[1]: content \"<s>\" (id 257) repeats added_tokens[0] (id 256)");

    /* tokenizer_config.json: broken JSON and a role of the wrong type are errors naming the key; a
     * role that is not an added token loads with a warning. */
    char sub[600], p[700], cp[700];
    snprintf(sub, sizeof sub, "%s/cfg", tmpdir);
    mkdir(sub, 0755);
    snprintf(p, sizeof p, "%s/tokenizer.json", sub);
    snprintf(cp, sizeof cp, "%s/tokenizer_config.json", sub);
    const char *eos = minimal_json(",\"<e>\":256", "", "{\"id\":256,\"content\":\"<e>\",\"special\":true}");
    zaya_write_file_atomic(p, eos, strlen(eos));
    static const struct {
        const char *cfg;
        zaya_status code;
        const char *want;
    } cfgs[] = {
        {"{\"eos_token\": \"<e>\"", ZAYA_EFORMAT, "tokenizer_config.json"},
        {"{\"eos_token\": 7}", ZAYA_EFORMAT, "eos_token: expected a string"},
        {"{\"bos_token\": {\"content\": 1}}", ZAYA_EFORMAT, "bos_token: expected a string"},
        {"[1]", ZAYA_EFORMAT, "expected a JSON object"},
        {"{\"eos_token\": \"<e>\", \"bos_token\": \"<nope>\", \"pad_token\": null}", ZAYA_OK, ""},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) {
        zaya_write_file_atomic(cp, cfgs[i].cfg, strlen(cfgs[i].cfg));
        t = NULL;
        zaya_status s = zaya_tokenizer_load(p, &t);
        CHECK(s == cfgs[i].code && (s == ZAYA_OK || strstr(zaya_error_message(), cfgs[i].want)),
              "tokenizer_config %s: status %d, '%s'", cfgs[i].cfg, s, zaya_error_message());
        if (t) CHECK(zaya_tokenizer_special_id(t, "eos") == 256 && zaya_tokenizer_special_id(t, "bos") == -1, "roles from config");
        zaya_tokenizer_free(t);
    }
    unlink(cp);
    unlink(p);
    rmdir(sub);
}

static void test_bad_train_opts(void) {
    const char *texts[] = {"hello"};
    size_t lens[] = {5};
    zaya_tokenizer *t = NULL;
    zaya_bpe_train_opts o = {.vocab_size = 100};
    CHECK(zaya_tokenizer_train_buffers(texts, lens, 1, &o, &t) == ZAYA_EINVAL && strstr(zaya_error_message(), "vocab size 100"),
          "tiny vocab rejected: %s", zaya_error_message());
    o = (zaya_bpe_train_opts){.vocab_size = 300, .bos = "x"};
    CHECK(zaya_tokenizer_train_buffers(texts, lens, 1, &o, &t) == ZAYA_EINVAL && strstr(zaya_error_message(), "byte token"),
          "single-byte special rejected: %s", zaya_error_message());
    const char *paths[] = {"/nonexistent/corpus"};
    o = (zaya_bpe_train_opts){.vocab_size = 300};
    CHECK(zaya_tokenizer_train(paths, 1, &o, &t) == ZAYA_EIO && strstr(zaya_error_message(), "/nonexistent/corpus"),
          "missing input named: %s", zaya_error_message());
    /* A special token's text is never produced by a merge, even when it is frequent in the corpus. */
    const char *spam[] = {"<s><s><s><s><s><s> <s> <s> <s>"};
    zaya_bpe_train_opts o2 = {.vocab_size = 300, .bos = "<s>"};
    size_t sl[] = {strlen(spam[0])};
    CHECK(zaya_tokenizer_train_buffers(spam, sl, 1, &o2, &t) == ZAYA_OK, "train with special text in corpus");
    if (t) {
        int ok = 1;
        for (int32_t r = 0; r < t->n_merges; r++) ok &= !token_is(t, t->merge_id[r], "<s>");
        CHECK(ok, "no merge creates the special text");
        zaya_tokenizer_free(t);
    }
}

/* The tokenizer.json families of tests/fixtures/tokenizer (written by HF tokenizers 0.23.3); the
 * expected ids and text are HF's (tests/tokenizer_families.py checks many more texts). */
static void check_family(const char *name, const char *text, int flags, const int32_t *want, size_t nwant,
                         const char *want_text) {
    const char *dir = getenv("ZAYA_TEST_DATA");
    char p[1024];
    snprintf(p, sizeof p, "%s/fixtures/tokenizer/%s.json", dir ? dir : "tests", name);
    zaya_tokenizer *t = NULL;
    CHECK(zaya_tokenizer_load(p, &t) == ZAYA_OK, "%s loads: %s", name, zaya_error_message());
    if (!t) return;
    int32_t *ids = NULL;
    size_t n = 0, cap = 0, len = 0;
    char *dec = NULL;
    CHECK(zaya_tokenizer_encode_flags(t, text, strlen(text), flags, &ids, &n, &cap) == ZAYA_OK, "%s encodes", name);
    int same = n == nwant;
    for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
    CHECK(same, "%s: '%s' flags %d: %zu ids as HF (want %zu)", name, text, flags, n, nwant);
    CHECK(zaya_tokenizer_decode(t, ids, n, &dec, &len) == ZAYA_OK && len == strlen(want_text) && !memcmp(dec, want_text, len),
          "%s: decode gives '%s' (want '%s')", name, dec ? dec : "", want_text);
    free(dec);
    free(ids);
    zaya_tokenizer_free(t);
}

/* Pre-token byte lengths of the regex scanners, as HF's pre_tokenize_str. */
static void check_pretokens(const char *name, const char *text, const size_t *want, size_t nwant) {
    const char *dir = getenv("ZAYA_TEST_DATA");
    char p[1024];
    snprintf(p, sizeof p, "%s/fixtures/tokenizer/%s.json", dir ? dir : "tests", name);
    zaya_tokenizer *t = NULL;
    CHECK(zaya_tokenizer_load(p, &t) == ZAYA_OK, "%s loads: %s", name, zaya_error_message());
    if (!t) return;
    size_t *lens = NULL, n = 0;
    CHECK(zaya_tokenizer_pretokenize(t, text, strlen(text), &lens, &n) == ZAYA_OK, "%s pre-tokenizes", name);
    int same = n == nwant;
    for (size_t i = 0; same && i < n; i++) same = lens[i] == want[i];
    CHECK(same, "%s: %zu pre-tokens as HF (want %zu)", name, n, nwant);
    free(lens);
    zaya_tokenizer_free(t);
}

static void test_families(void) {
    const int A = ZAYA_ENCODE_ADD_SPECIAL | ZAYA_ENCODE_PARSE_SPECIAL;
    const char *hello = "Hello  world's 12345 \xe6\x9d\xb1\xe4\xba\xac\xf0\x9f\x98\x80";
    static const int32_t leg[] = {1, 416, 298, 315, 322, 322, 325, 416, 416, 333, 325, 328, 322, 314, 271, 329, 416, 281,
                                  282, 283, 284, 285, 416, 431, 425, 453};
    check_family("sp-legacy", hello, A, leg, sizeof leg / sizeof *leg, "<s> Hello  world's 12345 \xe6\x9d\xb1\xe4\xba\xac\xf0\x9f\x98\x80");
    static const int32_t leg2[] = {1, 1, 416, 318, 319, 416, 292, 323, 311, 329, 321, 294, 416, 334, 292, 330, 325, 325,
                                   322, 294, 416, 416, 335};
    check_family("sp-legacy", "<s>hi <mask> x<tool>  y", A, leg2, sizeof leg2 / sizeof *leg2, "<s><s> hi <mask> x<tool>  y");
    static const int32_t ms[] = {1, 318, 319, 454, 416, 334, 455, 335}; /* <mask> lstrip, <tool> rstrip */
    check_family("sp-metaspace", "<s>hi <mask> x<tool>  y", A, ms, sizeof ms / sizeof *ms, "<s>hi<mask> x<tool>y");
    static const int32_t ms0[] = {416, 292, 329, 294, 318, 319, 416, 292, 323, 311, 329, 321, 294, 416, 334, 455, 335};
    check_family("sp-metaspace", "<s>hi <mask> x<tool>  y", 0, ms0, sizeof ms0 / sizeof *ms0, "<s>hi <mask> x<tool>y");
    static const int32_t l3[] = {0, 720, 226, 799, 314, 226, 310, 320, 226, 563, 507, 124, 111, 271, 252, 228};
    check_family("llama3", hello, A, l3, sizeof l3 / sizeof *l3, "<|begin_of_text|>Hello  world's 12345 \xe6\x9d\xb1\xe4\xba\xac\xf0\x9f\x98\x80");
    /* Case changes, the long s of a contraction, titlecase + modifier letters, digits and '/'. */
    const char *cases = "HelloWORLDfoo \xe4\xb8\xad" "A x'\xc5\xbfup \xc7\x85" "A\xca\xb0 12345/\n\n  a";
    static const size_t o2_pre[] = {5, 8, 4, 1, 5, 2, 6, 1, 3, 2, 3, 1, 2};
    check_pretokens("o200k", cases, o2_pre, sizeof o2_pre / sizeof *o2_pre);
    static const size_t l3_pre[] = {13, 5, 2, 3, 2, 6, 1, 3, 2, 3, 1, 2};
    check_pretokens("llama3", cases, l3_pre, sizeof l3_pre / sizeof *l3_pre);
    static const int32_t o2[] = {758, 759, 75, 84, 84, 382, 38, 708, 288, 747, 226, 320, 330, 20, 269, 226, 293};
    check_family("o200k", cases, 0, o2, sizeof o2 / sizeof *o2, cases);
    check_family("llama3", hello, 0, l3 + 1, sizeof l3 / sizeof *l3 - 1, "Hello  world's 12345 \xe6\x9d\xb1\xe4\xba\xac\xf0\x9f\x98\x80");
}

int main(void) {
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_byte_alphabet();
    test_unicode_classes();
    test_pretokenizer();
    test_first_merges();
    test_train_vs_naive();
    zaya_tokenizer *t = train_on_licenses(1200);
    if (t) {
        test_encode_and_round_trip(t);
        test_save_load(t);
        zaya_tokenizer_free(t);
    }
    test_malformed();
    test_families();
    test_normalizers();
    test_added_matcher();
    test_budgets();
    test_bad_train_opts();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return th_finish("test_tokenizer");
}

/* tokenizer.json pipeline pieces: normalizer, pre_tokenizer, decoder, post_processor and the BPE model
 * flags. Only what zaya reproduces exactly is accepted; anything else is an error that names its JSON
 * path (e.g. "normalizer.normalizers[1].type: 'NFKC' is not supported"). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"

#define MAX_STEPS 64

static const cJSON *item(const cJSON *o, const char *key) { return cJSON_GetObjectItemCaseSensitive(o, key); }
static int absent(const cJSON *v) { return !v || cJSON_IsNull(v); }

static zaya_status get_type(const cJSON *o, const char *path, const char **type) {
    if (!cJSON_IsObject(o)) return zaya_error_set(ZAYA_EFORMAT, "%s: expected an object", path);
    const cJSON *ty = item(o, "type");
    if (!cJSON_IsString(ty)) return zaya_error_set(ZAYA_EFORMAT, "%s.type: missing or not a string", path);
    *type = ty->valuestring;
    return ZAYA_OK;
}

static zaya_status unsupported_type(const char *path, const char *type) {
    return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.type: '%s' is not supported", path, type);
}

static zaya_status get_string(const cJSON *o, const char *path, const char *key, const char **out) {
    const cJSON *v = item(o, key);
    if (!cJSON_IsString(v)) return zaya_error_set(ZAYA_EFORMAT, "%s.%s: missing or not a string", path, key);
    *out = v->valuestring;
    return ZAYA_OK;
}

/* Optional boolean: absent keeps *out. */
static zaya_status get_bool(const cJSON *o, const char *path, const char *key, int *out) {
    const cJSON *v = item(o, key);
    if (absent(v)) return ZAYA_OK;
    if (!cJSON_IsBool(v)) return zaya_error_set(ZAYA_EFORMAT, "%s.%s: expected true or false", path, key);
    *out = cJSON_IsTrue(v);
    return ZAYA_OK;
}

/* A value that must be false/absent (a feature zaya does not implement). */
static zaya_status require_false(const cJSON *o, const char *path, const char *key) {
    int v = 0;
    ZAYA_TRY(get_bool(o, path, key, &v));
    if (v) return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.%s: true is not supported", path, key);
    return ZAYA_OK;
}

/* {"String": "x"} patterns only; {"Regex": ...} in Replace is not supported. */
static zaya_status get_string_pattern(const cJSON *o, const char *path, const char **out) {
    const cJSON *p = item(o, "pattern");
    if (!cJSON_IsObject(p)) return zaya_error_set(ZAYA_EFORMAT, "%s.pattern: missing or not an object", path);
    const cJSON *s = item(p, "String");
    if (!cJSON_IsString(s)) {
        if (item(p, "Regex")) return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.pattern.Regex: only String patterns are supported here", path);
        return zaya_error_set(ZAYA_EFORMAT, "%s.pattern: expected {\"String\": ...}", path);
    }
    if (!s->valuestring[0]) return zaya_error_set(ZAYA_EFORMAT, "%s.pattern.String: empty", path);
    *out = s->valuestring;
    return ZAYA_OK;
}

/* One character (as HF's `char` fields): its UTF-8 bytes. */
static zaya_status get_char(const cJSON *o, const char *path, const char *key, uint8_t ch[4], int *len) {
    const char *s = "";
    ZAYA_TRY(get_string(o, path, key, &s));
    size_t n = strlen(s);
    uint32_t cp;
    int l = n ? zaya_utf8_decode((const uint8_t *)s, n, &cp) : 0;
    if (n == 0 || cp == UINT32_MAX || (size_t)l != n)
        return zaya_error_set(ZAYA_EFORMAT, "%s.%s: expected exactly one character, got \"%s\"", path, key, s);
    memcpy(ch, s, n);
    *len = l;
    return ZAYA_OK;
}

static zaya_status dup_str(const char *s, char **out, size_t *len) {
    *len = strlen(s);
    *out = strdup(s);
    if (!*out) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    return ZAYA_OK;
}

/* Metaspace options (pre-tokenizer and decoder): prepend_scheme, or the older add_prefix_space. */
static zaya_status read_prepend(const cJSON *o, const char *path, int *prepend) {
    const cJSON *ps = item(o, "prepend_scheme");
    if (absent(ps)) {
        int aps = 1;
        ZAYA_TRY(get_bool(o, path, "add_prefix_space", &aps));
        *prepend = aps ? ZAYA_PREPEND_ALWAYS : ZAYA_PREPEND_NEVER;
        return ZAYA_OK;
    }
    if (!cJSON_IsString(ps)) return zaya_error_set(ZAYA_EFORMAT, "%s.prepend_scheme: expected a string", path);
    if (!strcmp(ps->valuestring, "always")) *prepend = ZAYA_PREPEND_ALWAYS;
    else if (!strcmp(ps->valuestring, "first")) *prepend = ZAYA_PREPEND_FIRST;
    else if (!strcmp(ps->valuestring, "never")) *prepend = ZAYA_PREPEND_NEVER;
    else return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.prepend_scheme: '%s' is not supported", path, ps->valuestring);
    return ZAYA_OK;
}

/* ---- normalizer ---- */

static zaya_status read_norm(const cJSON *o, const char *path, zaya_tokenizer *t, int depth) {
    const char *type = "";
    ZAYA_TRY(get_type(o, path, &type));
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = item(o, "normalizers");
        if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "%s.normalizers: missing or not an array", path);
        if (depth > 4) return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: Sequence nested too deeply", path);
        int i = 0;
        for (const cJSON *c = arr->child; c; c = c->next, i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.normalizers[%d]", path, i);
            ZAYA_TRY(read_norm(c, sub, t, depth + 1));
        }
        return ZAYA_OK;
    }
    if (t->n_norm >= MAX_STEPS) return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: more than %d normalizer steps", path, MAX_STEPS);
    zaya_tok_norm *n = &t->norm[t->n_norm];
    if (!strcmp(type, "Replace")) {
        const char *from = "", *to = "";
        ZAYA_TRY(get_string_pattern(o, path, &from));
        ZAYA_TRY(get_string(o, path, "content", &to));
        n->kind = ZAYA_NORM_REPLACE;
        ZAYA_TRY(dup_str(from, &n->from, &n->from_len));
        t->n_norm++;
        return dup_str(to, &n->to, &n->to_len);
    }
    static const char *const forms[] = {"NFC", "NFD", "NFKC", "NFKD"};
    static const int form_ids[] = {ZAYA_NFC, ZAYA_NFD, ZAYA_NFKC, ZAYA_NFKD};
    for (int f = 0; f < 4; f++)
        if (!strcmp(type, forms[f])) {
            n->kind = ZAYA_NORM_UNICODE;
            n->form = form_ids[f];
            t->n_norm++;
            return ZAYA_OK;
        }
    if (!strcmp(type, "Prepend")) {
        const char *to = "";
        ZAYA_TRY(get_string(o, path, "prepend", &to));
        n->kind = ZAYA_NORM_PREPEND;
        t->n_norm++;
        return dup_str(to, &n->to, &n->to_len);
    }
    return unsupported_type(path, type);
}

/* ---- pre_tokenizer ---- */

/* The regexes recognised exactly (each has a hand-written scanner in pretokenize.c). */
static const struct {
    const char *pattern;
    int id;
} known_patterns[] = {
    /* Llama-3 (HF conversion of tiktoken's cl100k_base). */
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     ZAYA_SPLIT_LLAMA3},
    /* tiktoken's own spelling of cl100k_base (possessive forms; same matches). */
    {"'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
     ZAYA_SPLIT_LLAMA3},
    /* Qwen2 / Qwen2.5 / Qwen3: the Llama-3 pattern with single digits. */
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     ZAYA_SPLIT_QWEN2},
    /* o200k_base (GPT-4o), tiktoken's pattern as HF conversions store it. */
    {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
     "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
     "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     ZAYA_SPLIT_O200K},
};

static zaya_status read_split(const cJSON *o, const char *path, zaya_tokenizer *t) {
    const cJSON *p = item(o, "pattern");
    if (!cJSON_IsObject(p)) return zaya_error_set(ZAYA_EFORMAT, "%s.pattern: missing or not an object", path);
    const cJSON *re = item(p, "Regex"), *str = item(p, "String");
    t->split_pattern = 0;
    if (cJSON_IsString(str)) {
        if (!str->valuestring[0]) return zaya_error_set(ZAYA_EFORMAT, "%s.pattern.String: empty", path);
        t->split_pattern = ZAYA_SPLIT_STRING;
        ZAYA_TRY(dup_str(str->valuestring, &t->split_str, &t->split_str_len));
    } else if (cJSON_IsString(re)) {
        for (size_t i = 0; i < sizeof known_patterns / sizeof known_patterns[0]; i++)
            if (!strcmp(re->valuestring, known_patterns[i].pattern)) t->split_pattern = known_patterns[i].id;
        if (!t->split_pattern) return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.pattern.Regex: unsupported pattern", path);
    } else {
        return zaya_error_set(ZAYA_EFORMAT, "%s.pattern: expected {\"Regex\": ...} or {\"String\": ...}", path);
    }
    static const char *const names[] = {"Isolated", "Removed", "MergedWithPrevious", "MergedWithNext", "Contiguous"};
    const char *behavior = "";
    ZAYA_TRY(get_string(o, path, "behavior", &behavior));
    t->split_behavior = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(behavior, names[i])) t->split_behavior = i;
    if (t->split_behavior < 0)
        return zaya_error_set(ZAYA_EFORMAT, "%s.behavior: '%s' is not one of Isolated, Removed, MergedWithPrevious, "
                              "MergedWithNext, Contiguous", path, behavior);
    t->split_invert = 0;
    return get_bool(o, path, "invert", &t->split_invert);
}

static zaya_status read_bytelevel_pre(const cJSON *o, const char *path, int *use_regex) {
    ZAYA_TRY(require_false(o, path, "add_prefix_space"));
    *use_regex = 1;
    return get_bool(o, path, "use_regex", use_regex);
}

static zaya_status read_pre(const cJSON *o, zaya_tokenizer *t) {
    const char *path = "pre_tokenizer", *type = "";
    if (absent(o)) {
        t->pre_kind = ZAYA_PRE_NONE;
        return ZAYA_OK;
    }
    ZAYA_TRY(get_type(o, path, &type));
    if (!strcmp(type, "ByteLevel")) {
        t->pre_kind = ZAYA_PRE_BYTELEVEL;
        return read_bytelevel_pre(o, path, &t->use_regex);
    }
    if (!strcmp(type, "Metaspace")) {
        t->pre_kind = ZAYA_PRE_METASPACE;
        ZAYA_TRY(get_char(o, path, "replacement", t->ms_rep, &t->ms_rep_len));
        ZAYA_TRY(read_prepend(o, path, &t->ms_prepend));
        t->ms_split = 1;
        return get_bool(o, path, "split", &t->ms_split);
    }
    if (!strcmp(type, "Split")) { /* alone: a raw (SentencePiece-style) vocabulary */
        ZAYA_TRY(read_split(o, path, t));
        t->pre_kind = ZAYA_PRE_SPLIT;
        t->split_bytelevel = 0;
        return ZAYA_OK;
    }
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = item(o, "pretokenizers");
        if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "pre_tokenizer.pretokenizers: missing or not an array");
        const cJSON *a = arr->child, *b = a ? a->next : NULL;
        const char *ta = NULL, *tb = NULL;
        if (a) ZAYA_TRY(get_type(a, "pre_tokenizer.pretokenizers[0]", &ta));
        if (b) ZAYA_TRY(get_type(b, "pre_tokenizer.pretokenizers[1]", &tb));
        if (a && b && !b->next && !strcmp(ta, "Digits") && !strcmp(tb, "ByteLevel")) {
            t->digits_individual = 0;
            ZAYA_TRY(get_bool(a, "pre_tokenizer.pretokenizers[0]", "individual_digits", &t->digits_individual));
            ZAYA_TRY(read_bytelevel_pre(b, "pre_tokenizer.pretokenizers[1]", &t->use_regex));
            t->pre_kind = ZAYA_PRE_DIGITS;
            return ZAYA_OK;
        }
        if (!a || !b || b->next || strcmp(ta, "Split") || strcmp(tb, "ByteLevel"))
            return zaya_error_set(ZAYA_EUNSUPPORTED,
                                  "pre_tokenizer.pretokenizers: only [Split, ByteLevel] and [Digits, ByteLevel] are supported");
        ZAYA_TRY(read_split(a, "pre_tokenizer.pretokenizers[0]", t));
        ZAYA_TRY(read_bytelevel_pre(b, "pre_tokenizer.pretokenizers[1]", &t->use_regex));
        t->pre_kind = ZAYA_PRE_SPLIT;
        t->split_bytelevel = 1;
        return ZAYA_OK;
    }
    return unsupported_type(path, type);
}

/* ---- decoder ---- */

static zaya_status read_dec(const cJSON *o, const char *path, zaya_tokenizer *t, int *bytelevel, int depth) {
    const char *type = "";
    ZAYA_TRY(get_type(o, path, &type));
    if (!strcmp(type, "Sequence")) {
        const cJSON *arr = item(o, "decoders");
        if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "%s.decoders: missing or not an array", path);
        if (depth > 4) return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: Sequence nested too deeply", path);
        int i = 0;
        for (const cJSON *c = arr->child; c; c = c->next, i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.decoders[%d]", path, i);
            ZAYA_TRY(read_dec(c, sub, t, bytelevel, depth + 1));
        }
        return ZAYA_OK;
    }
    if (!strcmp(type, "ByteLevel")) {
        if (t->vocab_raw || t->n_dec || depth > 0)
            return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: ByteLevel is supported only as the whole decoder of a byte-level "
                                  "pre-tokenizer", path);
        *bytelevel = 1;
        return ZAYA_OK;
    }
    if (*bytelevel || !t->vocab_raw)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.type: '%s' with a byte-level vocabulary is not supported", path, type);
    if (t->n_dec >= MAX_STEPS) return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: more than %d decoder steps", path, MAX_STEPS);
    zaya_tok_dec *d = &t->dec[t->n_dec];
    if (!strcmp(type, "Replace")) {
        const char *from = "", *to = "";
        ZAYA_TRY(get_string_pattern(o, path, &from));
        ZAYA_TRY(get_string(o, path, "content", &to));
        d->kind = ZAYA_DEC_REPLACE;
        t->n_dec++;
        ZAYA_TRY(dup_str(from, &d->from, &d->from_len));
        return dup_str(to, &d->to, &d->to_len);
    }
    if (!strcmp(type, "ByteFallback") || !strcmp(type, "Fuse")) {
        d->kind = type[0] == 'B' ? ZAYA_DEC_BYTEFALLBACK : ZAYA_DEC_FUSE;
        t->n_dec++;
        return ZAYA_OK;
    }
    if (!strcmp(type, "Strip")) {
        ZAYA_TRY(get_char(o, path, "content", d->ch, &d->ch_len));
        int vals[2] = {0, 0};
        const char *keys[2] = {"start", "stop"};
        for (int k = 0; k < 2; k++) {
            const cJSON *v = item(o, keys[k]);
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble <= 1e6) || v->valuedouble != (double)(int)v->valuedouble)
                return zaya_error_set(ZAYA_EFORMAT, "%s.%s: expected a count in [0, 1000000]", path, keys[k]);
            vals[k] = (int)v->valuedouble;
        }
        d->kind = ZAYA_DEC_STRIP;
        d->start = vals[0];
        d->stop = vals[1];
        t->n_dec++;
        return ZAYA_OK;
    }
    if (!strcmp(type, "Metaspace")) {
        ZAYA_TRY(get_char(o, path, "replacement", d->ch, &d->ch_len));
        ZAYA_TRY(read_prepend(o, path, &d->prepend));
        d->kind = ZAYA_DEC_METASPACE;
        t->n_dec++;
        return ZAYA_OK;
    }
    return unsupported_type(path, type);
}

/* ---- post_processor ---- */

static zaya_status check_post(const cJSON *o, const char *path, int depth, int *templates) {
    const char *type = "";
    ZAYA_TRY(get_type(o, path, &type));
    if (!strcmp(type, "ByteLevel")) return ZAYA_OK; /* offsets only */
    if (!strcmp(type, "TemplateProcessing")) {
        (*templates)++;
        return ZAYA_OK;
    }
    if (!strcmp(type, "Sequence") && depth == 0) {
        const cJSON *arr = item(o, "processors");
        if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "%s.processors: missing or not an array", path);
        int i = 0;
        for (const cJSON *c = arr->child; c; c = c->next, i++) {
            char sub[512];
            snprintf(sub, sizeof sub, "%s.processors[%d]", path, i);
            ZAYA_TRY(check_post(c, sub, depth + 1, templates));
        }
        return ZAYA_OK;
    }
    return unsupported_type(path, type);
}

/* ---- truncation and padding ---- */

/* An integer in [lo, hi] at o.key (absent: keeps *out unless required). */
static zaya_status get_count(const cJSON *o, const char *path, const char *key, int64_t lo, int64_t hi, int required,
                             int64_t *out) {
    const cJSON *v = item(o, key);
    if (absent(v)) {
        if (required) return zaya_error_set(ZAYA_EFORMAT, "%s.%s: missing", path, key);
        return ZAYA_OK;
    }
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= (double)lo && v->valuedouble <= (double)hi) ||
        v->valuedouble != (double)(int64_t)v->valuedouble)
        return zaya_error_set(ZAYA_EFORMAT, "%s.%s: expected an integer in [%lld, %lld]", path, key, (long long)lo, (long long)hi);
    *out = (int64_t)v->valuedouble;
    return ZAYA_OK;
}

static zaya_status get_direction(const cJSON *o, const char *path, int *left) {
    const cJSON *v = item(o, "direction");
    *left = 0;
    if (absent(v)) return ZAYA_OK;
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "Right")) return ZAYA_OK;
    if (cJSON_IsString(v) && !strcmp(v->valuestring, "Left")) {
        *left = 1;
        return ZAYA_OK;
    }
    return zaya_error_set(ZAYA_EFORMAT, "%s.direction: expected \"Right\" or \"Left\"", path);
}

static zaya_status read_truncation(const cJSON *o, zaya_tokenizer *t) {
    const char *path = "truncation";
    if (absent(o)) return ZAYA_OK;
    if (!cJSON_IsObject(o)) return zaya_error_set(ZAYA_EFORMAT, "%s: expected an object or null", path);
    ZAYA_TRY(get_count(o, path, "max_length", 0, INT32_MAX, 1, &t->trunc_max));
    int64_t stride = 0; /* only shapes HF's overflowing encodings, which zaya does not produce */
    ZAYA_TRY(get_count(o, path, "stride", 0, INT32_MAX, 0, &stride));
    const cJSON *st = item(o, "strategy");
    if (!absent(st) && !(cJSON_IsString(st) && (!strcmp(st->valuestring, "LongestFirst") || !strcmp(st->valuestring, "OnlyFirst") ||
                                               !strcmp(st->valuestring, "OnlySecond"))))
        return zaya_error_set(ZAYA_EFORMAT, "%s.strategy: expected \"LongestFirst\", \"OnlyFirst\" or \"OnlySecond\"", path);
    ZAYA_TRY(get_direction(o, path, &t->trunc_left));
    t->has_trunc = 1;
    return ZAYA_OK;
}

static zaya_status read_padding(const cJSON *o, zaya_tokenizer *t) {
    const char *path = "padding";
    if (absent(o)) return ZAYA_OK;
    if (!cJSON_IsObject(o)) return zaya_error_set(ZAYA_EFORMAT, "%s: expected an object or null", path);
    const cJSON *st = item(o, "strategy");
    t->pad_fixed = 0;
    if (cJSON_IsObject(st) && item(st, "Fixed")) {
        ZAYA_TRY(get_count(st, "padding.strategy", "Fixed", 0, INT32_MAX, 1, &t->pad_fixed));
    } else if (!absent(st) && !(cJSON_IsString(st) && !strcmp(st->valuestring, "BatchLongest"))) {
        return zaya_error_set(ZAYA_EFORMAT, "%s.strategy: expected \"BatchLongest\" or {\"Fixed\": N}", path);
    }
    ZAYA_TRY(get_direction(o, path, &t->pad_left));
    t->pad_multiple = 0;
    ZAYA_TRY(get_count(o, path, "pad_to_multiple_of", 0, INT32_MAX, 0, &t->pad_multiple));
    int64_t id = 0;
    ZAYA_TRY(get_count(o, path, "pad_id", 0, INT32_MAX, 0, &id));
    t->pad_id = (int32_t)id; /* checked against the vocabulary in zaya_tok_read_template */
    t->has_pad = 1;
    return ZAYA_OK;
}

zaya_status zaya_tok_read_pipeline(const cJSON *root, zaya_tokenizer *t) {
    ZAYA_TRY(read_truncation(item(root, "truncation"), t));
    ZAYA_TRY(read_padding(item(root, "padding"), t));
    t->norm = calloc(MAX_STEPS, sizeof *t->norm);
    t->dec = calloc(MAX_STEPS, sizeof *t->dec);
    if (!t->norm || !t->dec) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    const cJSON *pre = item(root, "pre_tokenizer");
    if (!item(root, "pre_tokenizer"))
        return zaya_error_set(ZAYA_EFORMAT, "pre_tokenizer: missing (use null for none, or {\"type\": \"ByteLevel\", ...})");
    ZAYA_TRY(read_pre(pre, t));
    t->vocab_raw = t->pre_kind != ZAYA_PRE_BYTELEVEL && !(t->pre_kind == ZAYA_PRE_SPLIT && t->split_bytelevel) &&
                   t->pre_kind != ZAYA_PRE_DIGITS;
    const cJSON *norm = item(root, "normalizer");
    if (!absent(norm)) ZAYA_TRY(read_norm(norm, "normalizer", t, 0));
    const cJSON *dec = item(root, "decoder");
    t->has_decoder = !absent(dec);
    int bytelevel = 0;
    if (t->has_decoder) ZAYA_TRY(read_dec(dec, "decoder", t, &bytelevel, 0));
    const cJSON *post = item(root, "post_processor");
    int templates = 0;
    if (!absent(post)) ZAYA_TRY(check_post(post, "post_processor", 0, &templates));
    if (templates > 1) return zaya_error_set(ZAYA_EUNSUPPORTED, "post_processor: more than one TemplateProcessing");

    const cJSON *model = item(root, "model");
    if (!cJSON_IsObject(model)) return zaya_error_set(ZAYA_EFORMAT, "model: missing or not an object");
    const cJSON *dropout = item(model, "dropout");
    if (!absent(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0.0))
        return zaya_error_set(ZAYA_EUNSUPPORTED, "model.dropout: only null is supported (deterministic encoding)");
    const char *str_keys[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = item(model, str_keys[i]);
        if (!absent(v) && !(cJSON_IsString(v) && !v->valuestring[0]))
            return zaya_error_set(ZAYA_EUNSUPPORTED, "model.%s: only null is supported", str_keys[i]);
    }
    ZAYA_TRY(get_bool(model, "model", "byte_fallback", &t->byte_fallback));
    ZAYA_TRY(get_bool(model, "model", "fuse_unk", &t->fuse_unk));
    ZAYA_TRY(get_bool(model, "model", "ignore_merges", &t->ignore_merges));
    if (t->byte_fallback && !t->vocab_raw)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "model.byte_fallback: true with a byte-level pre-tokenizer is not supported");
    return ZAYA_OK;
}

/* Resolves the template ids (after the vocabulary is read). */
zaya_status zaya_tok_read_template(const cJSON *root, zaya_tokenizer *t) {
    if (t->has_pad && t->pad_id >= t->n_vocab)
        return zaya_error_set(ZAYA_ERANGE, "padding.pad_id: %d is outside the vocabulary [0, %d)", t->pad_id, t->n_vocab);
    const cJSON *post = item(root, "post_processor"), *tpl = NULL;
    const char *path = "post_processor";
    char buf[512];
    if (absent(post)) return ZAYA_OK;
    const cJSON *ty = item(post, "type");
    if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "TemplateProcessing")) {
        tpl = post;
    } else if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "Sequence")) {
        int i = 0;
        for (const cJSON *c = item(post, "processors")->child; c; c = c->next, i++) {
            const cJSON *cty = item(c, "type");
            if (cJSON_IsString(cty) && !strcmp(cty->valuestring, "TemplateProcessing")) {
                tpl = c;
                snprintf(buf, sizeof buf, "post_processor.processors[%d]", i);
                path = buf;
            }
        }
    }
    if (!tpl) return ZAYA_OK;
    const cJSON *single = item(tpl, "single"), *specials = item(tpl, "special_tokens");
    if (!cJSON_IsArray(single)) return zaya_error_set(ZAYA_EFORMAT, "%s.single: missing or not an array", path);
    if (!absent(specials) && !cJSON_IsObject(specials))
        return zaya_error_set(ZAYA_EFORMAT, "%s.special_tokens: expected an object", path);
    int cap = 0;
    for (const cJSON *c = single->child; c; c = c->next) {
        const cJSON *sp = item(c, "SpecialToken");
        const cJSON *ids = sp && cJSON_IsString(item(sp, "id")) && specials ? item(item(specials, item(sp, "id")->valuestring), "ids") : NULL;
        cap += cJSON_IsArray(ids) ? cJSON_GetArraySize(ids) : 1;
    }
    t->tpl_pre = calloc((size_t)cap + 1, sizeof *t->tpl_pre);
    t->tpl_post = calloc((size_t)cap + 1, sizeof *t->tpl_post);
    if (!t->tpl_pre || !t->tpl_post) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    int seen_a = 0, i = 0;
    for (const cJSON *c = single->child; c; c = c->next, i++) {
        const cJSON *seq = item(c, "Sequence"), *sp = item(c, "SpecialToken");
        if (cJSON_IsObject(seq)) {
            const cJSON *id = item(seq, "id");
            if (!cJSON_IsString(id) || strcmp(id->valuestring, "A") || seen_a)
                return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.single[%d].Sequence: only one sequence \"A\" is supported", path, i);
            seen_a = 1;
            continue;
        }
        if (!cJSON_IsObject(sp) || !cJSON_IsString(item(sp, "id")))
            return zaya_error_set(ZAYA_EFORMAT, "%s.single[%d]: expected {\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}",
                                  path, i);
        const char *name = item(sp, "id")->valuestring;
        const cJSON *def = specials ? item(specials, name) : NULL;
        const cJSON *ids = def ? item(def, "ids") : NULL;
        if (!cJSON_IsArray(ids))
            return zaya_error_set(ZAYA_EFORMAT, "%s.special_tokens: \"%s\" (used by single[%d]) is missing or has no ids", path,
                                  name, i);
        int k = 0;
        for (const cJSON *v = ids->child; v; v = v->next, k++) {
            if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0 && v->valuedouble < t->n_vocab) ||
                v->valuedouble != (double)(int32_t)v->valuedouble)
                return zaya_error_set(ZAYA_ERANGE, "%s.special_tokens.%s.ids[%d]: not an id in [0, %d)", path, name, k, t->n_vocab);
            int32_t id = (int32_t)v->valuedouble;
            if (seen_a) t->tpl_post[t->n_tpl_post++] = id;
            else t->tpl_pre[t->n_tpl_pre++] = id;
        }
    }
    if (!seen_a) return zaya_error_set(ZAYA_EFORMAT, "%s.single: no {\"Sequence\": {\"id\": \"A\"}} entry", path);
    t->has_template = 1;
    return ZAYA_OK;
}

void zaya_tok_free_pipeline(zaya_tokenizer *t) {
    for (int i = 0; t->norm && i < t->n_norm; i++) free(t->norm[i].from), free(t->norm[i].to);
    for (int i = 0; t->dec && i < t->n_dec; i++) free(t->dec[i].from), free(t->dec[i].to);
    free(t->norm);
    free(t->dec);
    free(t->tpl_pre);
    free(t->tpl_post);
    free(t->split_str);
    for (int32_t a = 0; t->added_norm && a < t->n_added; a++) free(t->added_norm[a]);
    free(t->added_norm);
    free(t->added_norm_len);
    zaya_tok_trie *tries[2] = {&t->trie_raw, &t->trie_norm};
    for (int k = 0; k < 2; k++) {
        free(tries[k]->edge_key);
        free(tries[k]->edge_child);
        free(tries[k]->term);
        free(tries[k]->fail);
        free(tries[k]->out);
        free(tries[k]->depth);
    }
}

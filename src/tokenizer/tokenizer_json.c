/* Hugging Face tokenizer.json reader (BPE models: byte-level or raw SentencePiece-style vocabularies)
 * and writer (byte-level BPE). The reader validates every entry (ids unique and dense, merges over
 * known tokens, merged tokens present, all 256 byte tokens for byte-level vocabularies); the pipeline
 * pieces are read by tokenizer_json_pipeline.c, which rejects what zaya cannot reproduce exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "tokenizer/tokenizer_internal.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"

static zaya_status check_type(const cJSON *obj, const char *where, const char *want) {
    const char *type = NULL;
    zaya_status s = zaya_json_get_str(obj, "type", &type, 1);
    if (s != ZAYA_OK) return zaya_error_context(s, "%s", where);
    if (strcmp(type, want) != 0)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "%s.type is \"%s\"; zaya supports only \"%s\"", where, type, want);
    return ZAYA_OK;
}

static zaya_status check_model(const cJSON *model) {
    if (!cJSON_IsObject(model)) return zaya_error_set(ZAYA_EFORMAT, "model: missing or not an object");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (type) ZAYA_TRY(check_type(model, "model", "BPE"));
    return ZAYA_OK;
}

/* The added tokens' content strings (pointers into the JSON tree) and a content -> first index hash
 * table, so that every lookup is O(1): a file with thousands of added tokens loads in linear time. */
typedef struct added_map {
    const char **content; /* [n] */
    int32_t *slots;       /* index + 1; 0 = empty */
    uint64_t mask;
} added_map;

static void added_map_free(added_map *m) {
    free(m->content);
    free(m->slots);
    memset(m, 0, sizeof *m);
}

static int find_added(const added_map *m, const char *content) {
    if (!m->slots) return -1;
    size_t len = strlen(content);
    for (uint64_t i = zaya_tok_hash_bytes((const uint8_t *)content, len) & m->mask;; i = (i + 1) & m->mask) {
        int32_t k = m->slots[i];
        if (k == 0) return -1;
        if (!strcmp(m->content[k - 1], content)) return k - 1;
    }
}

static zaya_status added_map_build(added_map *m, const zaya_tokenizer *t, int n) {
    uint64_t cap = 64;
    while (cap < 2 * (uint64_t)n) cap <<= 1;
    m->slots = calloc(cap, sizeof *m->slots);
    if (!m->slots) return zaya_error_set(ZAYA_ENOMEM, "added_tokens: out of memory");
    m->mask = cap - 1;
    for (int k = 0; k < n; k++) {
        const char *c = m->content[k];
        uint64_t i = zaya_tok_hash_bytes((const uint8_t *)c, strlen(c)) & m->mask;
        for (; m->slots[i]; i = (i + 1) & m->mask) {
            int j = m->slots[i] - 1;
            if (!strcmp(m->content[j], c)) /* HF keeps one id per content: a second id is a broken file */
                return zaya_error_set(ZAYA_EFORMAT, "added_tokens[%d]: content \"%s\" (id %d) repeats added_tokens[%d] (id %d)", k,
                                      c, t->added[k].id, j, t->added[j].id);
        }
        m->slots[i] = k + 1;
    }
    return ZAYA_OK;
}

static zaya_status read_added(const cJSON *root, zaya_tokenizer *t, added_map *m) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    if (!arr || cJSON_IsNull(arr)) return ZAYA_OK;
    if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "added_tokens: expected an array");
    int n = cJSON_GetArraySize(arr);
    t->added = calloc((size_t)n + 1, sizeof *t->added);
    m->content = calloc((size_t)n + 1, sizeof *m->content);
    if (!t->added || !m->content) return zaya_error_set(ZAYA_ENOMEM, "added_tokens: cannot allocate %d entries", n);
    int i = 0;
    for (const cJSON *a = arr->child; a; a = a->next, i++) {
        zaya_added_token *x = &t->added[i];
        int id = -1, special = 0, single = 0, lstrip = 0, rstrip = 0, normalized = 0;
        const char *content = NULL;
        zaya_status s = cJSON_IsObject(a) ? ZAYA_OK : zaya_error_set(ZAYA_EFORMAT, "expected an object");
        if (s == ZAYA_OK) s = zaya_json_get_int(a, "id", &id, 1);
        if (s == ZAYA_OK) s = zaya_json_get_str(a, "content", &content, 1);
        if (s == ZAYA_OK) s = zaya_json_get_bool(a, "special", &special, 0);
        if (s == ZAYA_OK) s = zaya_json_get_bool(a, "single_word", &single, 0);
        if (s == ZAYA_OK) s = zaya_json_get_bool(a, "lstrip", &lstrip, 0);
        if (s == ZAYA_OK) s = zaya_json_get_bool(a, "rstrip", &rstrip, 0);
        if (s == ZAYA_OK) s = zaya_json_get_bool(a, "normalized", &normalized, 0);
        if (s == ZAYA_OK && id < 0) s = zaya_error_set(ZAYA_ERANGE, "id %d is negative", id);
        if (s == ZAYA_OK && !content[0]) s = zaya_error_set(ZAYA_EFORMAT, "content is empty");
        if (s == ZAYA_OK && single) s = zaya_error_set(ZAYA_EUNSUPPORTED, "single_word: true is not supported");
        if (s != ZAYA_OK) return zaya_error_context(s, "added_tokens[%d]", i);
        *x = (zaya_added_token){id, (uint8_t)special, (uint8_t)single, (uint8_t)lstrip, (uint8_t)rstrip, (uint8_t)normalized};
        m->content[i] = content;
        if (!special) t->n_plain_added++;
    }
    t->n_added = n;
    return added_map_build(m, t, n);
}

/* Assigns every id its bytes: model.vocab entries (byte-level text or added-token content) plus added
 * tokens absent from the model. Ids must be unique and cover 0..N-1. */
static zaya_status read_vocab(const added_map *am, const cJSON *model, zaya_tokenizer *t) {
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    if (!cJSON_IsObject(vocab)) return zaya_error_set(ZAYA_EFORMAT, "model.vocab: missing or not an object");
    int nv = cJSON_GetArraySize(vocab);
    int *added_in_vocab = calloc((size_t)t->n_added + 1, sizeof *added_in_vocab);
    if (!added_in_vocab) return zaya_error_set(ZAYA_ENOMEM, "model.vocab: out of memory");
    uint64_t bytes = 0;
    int extra = t->n_added;
    for (const cJSON *v = vocab->child; v; v = v->next) {
        bytes += strlen(v->string) + 1;
        int a = find_added(am, v->string);
        if (a >= 0 && !added_in_vocab[a]) {
            added_in_vocab[a] = 1;
            extra--;
        }
    }
    for (int i = 0; i < t->n_added; i++) bytes += strlen(am->content[i]);
    int64_t n = (int64_t)nv + extra;
    zaya_status s = ZAYA_OK;
    if (n > (1 << 30)) s = zaya_error_set(ZAYA_ERANGE, "model.vocab: %lld tokens is too many", (long long)n);
    if (s == ZAYA_OK) s = zaya_tok_alloc(t, (int32_t)n, bytes);
    char **owner = s == ZAYA_OK ? calloc((size_t)n + 1, sizeof *owner) : NULL;
    if (s == ZAYA_OK && !owner) s = zaya_error_set(ZAYA_ENOMEM, "model.vocab: out of memory");
    uint64_t off = 0;
    for (const cJSON *v = vocab->child; s == ZAYA_OK && v; v = v->next) {
        if (!cJSON_IsNumber(v)) {
            s = zaya_error_set(ZAYA_EFORMAT, "model.vocab: value of \"%s\" must be an integer id", v->string);
            break;
        }
        /* Range first: converting a double outside int64 (1e300) to an integer is undefined behaviour. */
        double idd = v->valuedouble;
        if (!(idd >= 0 && idd < (double)n)) {
            s = zaya_error_set(ZAYA_ERANGE, "model.vocab: id %.17g of \"%s\" is outside [0, %lld) (ids must be dense)", idd,
                               v->string, (long long)n);
            break;
        }
        if (idd != floor(idd)) {
            s = zaya_error_set(ZAYA_EFORMAT, "model.vocab: value of \"%s\" must be an integer id, got %.17g", v->string, idd);
            break;
        }
        int32_t id = (int32_t)idd;
        if (owner[id]) {
            s = zaya_error_set(ZAYA_EFORMAT, "model.vocab: duplicate id %d (\"%s\" and \"%s\")", id, owner[id], v->string);
            break;
        }
        owner[id] = v->string;
        int a = find_added(am, v->string);
        int64_t len;
        if (t->vocab_raw && a < 0) {
            /* cJSON strings end at NUL: the key "\u0000" arrives empty, and means that one byte. */
            len = (int64_t)strlen(v->string);
            if (len == 0) t->tok_bytes[off] = 0, len = 1;
            else memcpy(t->tok_bytes + off, v->string, (size_t)len);
        } else if (a >= 0) {
            if (t->added[a].id != id) {
                s = zaya_error_set(ZAYA_EFORMAT, "added_tokens[%d] \"%s\" has id %d but model.vocab says %d", a, v->string,
                                   t->added[a].id, id);
                break;
            }
            /* cJSON strings end at NUL: the key "\u0000" arrives empty, and means that one byte. */
            len = (int64_t)strlen(v->string);
            if (len == 0) t->tok_bytes[off] = 0, len = 1;
            else memcpy(t->tok_bytes + off, v->string, (size_t)len);
            t->added_idx[id] = a;
        } else {
            len = zaya_bytelevel_decode(v->string, t->tok_bytes + off);
            if (len <= 0) {
                s = zaya_error_set(ZAYA_EFORMAT,
                                   "model.vocab: \"%s\" (id %d) is neither byte-level text (GPT-2 alphabet) nor an added token",
                                   v->string, id);
                break;
            }
        }
        t->in_model[id] = 1;
        t->tok_off[id] = off;
        t->tok_len[id] = (uint32_t)len;
        off += (uint64_t)len;
    }
    for (int i = 0; s == ZAYA_OK && i < t->n_added; i++) {
        if (added_in_vocab[i]) continue;
        int32_t id = t->added[i].id;
        const char *c = am->content[i];
        if (id >= n) {
            s = zaya_error_set(ZAYA_ERANGE, "added_tokens[%d] \"%s\": id %d is outside [0, %lld) (ids must be dense)", i, c, id,
                               (long long)n);
        } else if (owner[id]) {
            s = zaya_error_set(ZAYA_EFORMAT, "added_tokens[%d] \"%s\": duplicate id %d (also \"%s\")", i, c, id, owner[id]);
        } else {
            owner[id] = (char *)c;
            size_t len = strlen(c);
            memcpy(t->tok_bytes + off, c, len);
            t->tok_off[id] = off;
            t->tok_len[id] = (uint32_t)len;
            t->added_idx[id] = i;
            off += len;
        }
    }
    free(owner);
    free(added_in_vocab);
    if (s != ZAYA_OK) return s;
    s = zaya_tok_build_vmap(t); /* merges not read yet */
    if (s != ZAYA_OK) return zaya_error_context(s, "model.vocab");
    for (int b = 0; !t->vocab_raw && b < 256; b++)
        if (t->byte_id[b] < 0) {
            char *name = zaya_bytelevel_encode((const uint8_t *)&(uint8_t){(uint8_t)b}, 1);
            s = zaya_error_set(ZAYA_EFORMAT, "model.vocab: missing the byte token \"%s\" for byte 0x%02X", name ? name : "?", b);
            free(name);
            return s;
        }
    return ZAYA_OK;
}

static zaya_status merge_side(const zaya_tokenizer *t, const char *tok, int i, int32_t *id) {
    size_t n = strlen(tok);
    if (t->vocab_raw) {
        *id = zaya_tok_lookup(t, n ? (const uint8_t *)tok : (const uint8_t *)"", n ? n : 1); /* "\u0000" */
        if (*id < 0) return zaya_error_set(ZAYA_EFORMAT, "model.merges[%d]: unknown token \"%s\"", i, tok);
        return ZAYA_OK;
    }
    uint8_t *buf = malloc(n + 1);
    if (!buf) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    int64_t len = zaya_bytelevel_decode(tok, buf);
    *id = len > 0 ? zaya_tok_lookup(t, buf, (size_t)len) : -1;
    free(buf);
    if (*id < 0) return zaya_error_set(ZAYA_EFORMAT, "model.merges[%d]: unknown token \"%s\"", i, tok);
    return ZAYA_OK;
}

static zaya_status read_merges(const cJSON *model, zaya_tokenizer *t) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!arr || cJSON_IsNull(arr)) return zaya_tok_pmap_alloc(t, 0);
    if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "model.merges: expected an array");
    int n = cJSON_GetArraySize(arr);
    ZAYA_TRY(zaya_tok_pmap_alloc(t, (uint64_t)n));
    t->merge_a = malloc(((size_t)n + 1) * sizeof(int32_t));
    t->merge_b = malloc(((size_t)n + 1) * sizeof(int32_t));
    t->merge_id = malloc(((size_t)n + 1) * sizeof(int32_t));
    if (!t->merge_a || !t->merge_b || !t->merge_id) return zaya_error_set(ZAYA_ENOMEM, "model.merges: out of memory");
    uint8_t *buf = NULL;
    size_t buf_cap = 0;
    int i = 0;
    zaya_status s = ZAYA_OK;
    for (const cJSON *m = arr->child; m && s == ZAYA_OK; m = m->next, i++) {
        char *left = NULL;
        const char *right = NULL;
        /* Two encodings: "a b" (older files) and ["a", "b"] (tokenizers >= 0.20). */
        if (cJSON_IsString(m)) {
            const char *sp = strchr(m->valuestring, ' ');
            if (!sp || sp == m->valuestring || !sp[1] || strchr(sp + 1, ' ')) {
                s = zaya_error_set(ZAYA_EFORMAT, "model.merges[%d]: \"%s\" is not two tokens separated by one space", i,
                                   m->valuestring);
                break;
            }
            left = strndup(m->valuestring, (size_t)(sp - m->valuestring));
            right = sp + 1;
        } else if (cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) &&
                   cJSON_IsString(m->child->next)) {
            left = strdup(m->child->valuestring);
            right = m->child->next->valuestring;
        } else {
            s = zaya_error_set(ZAYA_EFORMAT, "model.merges[%d]: expected \"a b\" or [\"a\", \"b\"]", i);
            break;
        }
        if (!left) { s = zaya_error_set(ZAYA_ENOMEM, "out of memory"); break; }
        int32_t a = -1, b = -1;
        s = merge_side(t, left, i, &a);
        if (s == ZAYA_OK) s = merge_side(t, right, i, &b);
        if (s == ZAYA_OK) {
            size_t la = t->tok_len[a], lb = t->tok_len[b];
            if (la + lb > buf_cap) {
                buf_cap = 2 * (la + lb);
                uint8_t *nb = realloc(buf, buf_cap);
                if (!nb) { free(left); s = zaya_error_set(ZAYA_ENOMEM, "out of memory"); break; }
                buf = nb;
            }
            memcpy(buf, t->tok_bytes + t->tok_off[a], la);
            memcpy(buf + la, t->tok_bytes + t->tok_off[b], lb);
            int32_t id = zaya_tok_lookup(t, buf, la + lb);
            if (id < 0) s = zaya_error_set(ZAYA_EFORMAT, "model.merges[%d]: merged token \"%s%s\" is not in model.vocab", i, left, right);
            int32_t prev = s == ZAYA_OK ? zaya_tok_pmap_insert(t, a, b, i) : -1;
            if (prev >= 0) s = zaya_error_set(ZAYA_EFORMAT, "model.merges[%d]: \"%s %s\" repeats model.merges[%d]", i, left, right, prev);
            t->merge_a[i] = a;
            t->merge_b[i] = b;
            t->merge_id[i] = id;
        }
        free(left);
    }
    free(buf);
    if (s != ZAYA_OK) return s;
    t->n_merges = n;
    return ZAYA_OK;
}

/* unk_token, the "<0xNN>" byte-fallback tokens and the one-byte tokens of a raw vocabulary. */
static zaya_status resolve_model_ids(const cJSON *model, zaya_tokenizer *t) {
    const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
    if (unk && !cJSON_IsNull(unk)) {
        if (!cJSON_IsString(unk)) return zaya_error_set(ZAYA_EFORMAT, "model.unk_token: expected a string or null");
        t->unk_id = zaya_tok_lookup(t, (const uint8_t *)unk->valuestring, strlen(unk->valuestring));
        if (t->unk_id < 0 && t->vocab_raw)
            return zaya_error_set(ZAYA_EFORMAT, "model.unk_token: \"%s\" is not in model.vocab", unk->valuestring);
    }
    if (!t->vocab_raw) return ZAYA_OK;
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->fallback_id[b] = zaya_tok_lookup(t, (const uint8_t *)name, 6);
        uint8_t c = (uint8_t)b;
        t->char1_id[b] = zaya_tok_lookup(t, &c, 1);
    }
    return ZAYA_OK;
}

/* Roles: HF keeps them in tokenizer_config.json next to tokenizer.json (bos_token, eos_token,
 * pad_token as strings or {"content": ...}, or null); without it, guess from common special-token
 * names. A config that is not JSON, or a role of another type, is an error naming the key; a role
 * that is not an added token is a warning (it is ignored). */
static zaya_status role_from_config(const cJSON *cfg, const char *cfg_path, const char *key, const zaya_tokenizer *t,
                                    const added_map *am, int32_t *id) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(cfg, key);
    *id = -1;
    if (!v || cJSON_IsNull(v)) return ZAYA_OK;
    if (cJSON_IsObject(v)) v = cJSON_GetObjectItemCaseSensitive(v, "content");
    if (!cJSON_IsString(v))
        return zaya_error_set(ZAYA_EFORMAT, "'%s': %s: expected a string, {\"content\": string} or null", cfg_path, key);
    int a = find_added(am, v->valuestring);
    if (a < 0) {
        ZAYA_WARN("'%s': %s \"%s\" is not an added token of the tokenizer; ignored", cfg_path, key, v->valuestring);
        return ZAYA_OK;
    }
    *id = t->added[a].id;
    return ZAYA_OK;
}

static zaya_status assign_roles(const char *path, const added_map *am, zaya_tokenizer *t) {
    char dir[4096], cfg_path[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0'; else snprintf(dir, sizeof dir, ".");
    snprintf(cfg_path, sizeof cfg_path, "%s/tokenizer_config.json", dir);
    struct stat st;
    if (stat(cfg_path, &st) == 0) {
        cJSON *cfg = NULL;
        ZAYA_TRY(zaya_json_load_file(cfg_path, &cfg));
        zaya_status s = cJSON_IsObject(cfg) ? ZAYA_OK : zaya_error_set(ZAYA_EFORMAT, "'%s': expected a JSON object", cfg_path);
        if (s == ZAYA_OK) s = role_from_config(cfg, cfg_path, "bos_token", t, am, &t->bos);
        if (s == ZAYA_OK) s = role_from_config(cfg, cfg_path, "eos_token", t, am, &t->eos);
        if (s == ZAYA_OK) s = role_from_config(cfg, cfg_path, "pad_token", t, am, &t->pad);
        cJSON_Delete(cfg);
        return s;
    }
    for (int i = 0; i < t->n_added; i++) {
        if (!t->added[i].special) continue;
        const char *c = am->content[i];
        int32_t id = t->added[i].id;
        if (t->bos < 0 && (strcasestr(c, "bos") || !strcmp(c, "<s>") || strcasestr(c, "begin_of_text"))) t->bos = id;
        else if (t->eos < 0 && (strcasestr(c, "eos") || !strcmp(c, "</s>") || !strcmp(c, "<|endoftext|>") ||
                                strcasestr(c, "end_of_text")))
            t->eos = id;
        else if (t->pad < 0 && strcasestr(c, "pad")) t->pad = id;
    }
    return ZAYA_OK;
}

zaya_status zaya_tokenizer_load(const char *path, zaya_tokenizer **out) {
    cJSON *root;
    ZAYA_TRY(zaya_json_load_file(path, &root));
    zaya_tokenizer *t = calloc(1, sizeof *t);
    zaya_status s = t ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "out of memory");
    if (s == ZAYA_OK && !cJSON_IsObject(root)) s = zaya_error_set(ZAYA_EFORMAT, "top level is not a JSON object");
    const cJSON *model = s == ZAYA_OK ? cJSON_GetObjectItemCaseSensitive(root, "model") : NULL;
    if (s == ZAYA_OK) s = check_model(model);
    if (s == ZAYA_OK) s = zaya_tok_read_pipeline(root, t);
    added_map am = {0};
    if (s == ZAYA_OK) s = read_added(root, t, &am);
    if (s == ZAYA_OK) s = read_vocab(&am, model, t);
    if (s == ZAYA_OK) s = read_merges(model, t);
    if (s == ZAYA_OK) s = resolve_model_ids(model, t);
    if (s == ZAYA_OK) s = zaya_tok_read_template(root, t);
    if (s == ZAYA_OK) s = zaya_tok_build_tries(t);
    if (s == ZAYA_OK) s = assign_roles(path, &am, t);
    added_map_free(&am);
    cJSON_Delete(root);
    if (s != ZAYA_OK) {
        zaya_tokenizer_free(t);
        return zaya_error_context(s, "loading tokenizer '%s'", path);
    }
    *out = t;
    return ZAYA_OK;
}

/* The model.vocab key of an id: byte-level text, or the raw content of an added token. */
static char *vocab_key(const zaya_tokenizer *t, int32_t id) {
    const uint8_t *b = t->tok_bytes + t->tok_off[id];
    if (t->added_idx[id] >= 0) return strndup((const char *)b, t->tok_len[id]);
    return zaya_bytelevel_encode(b, t->tok_len[id]);
}

static cJSON *byte_level_object(int add_prefix_space, int trim_offsets) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "ByteLevel");
    cJSON_AddBoolToObject(o, "add_prefix_space", add_prefix_space);
    cJSON_AddBoolToObject(o, "trim_offsets", trim_offsets);
    cJSON_AddBoolToObject(o, "use_regex", 1);
    return o;
}

static zaya_status build_json(const zaya_tokenizer *t, cJSON **out) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
    for (int32_t id = 0; id < t->n_vocab; id++) {
        int a = t->added_idx[id];
        if (a < 0) continue;
        const zaya_added_token *x = &t->added[a];
        cJSON *o = cJSON_CreateObject();
        char *c = vocab_key(t, id);
        cJSON_AddNumberToObject(o, "id", id);
        cJSON_AddStringToObject(o, "content", c ? c : "");
        free(c);
        cJSON_AddBoolToObject(o, "single_word", x->single_word);
        cJSON_AddBoolToObject(o, "lstrip", x->lstrip);
        cJSON_AddBoolToObject(o, "rstrip", x->rstrip);
        cJSON_AddBoolToObject(o, "normalized", x->normalized);
        cJSON_AddBoolToObject(o, "special", x->special);
        cJSON_AddItemToArray(added, o);
    }
    cJSON_AddNullToObject(root, "normalizer");
    cJSON *pre = byte_level_object(0, 1);
    cJSON_ReplaceItemInObject(pre, "use_regex", cJSON_CreateBool(t->use_regex));
    cJSON_AddItemToObject(root, "pre_tokenizer", pre);
    cJSON_AddItemToObject(root, "post_processor", byte_level_object(0, 1));
    cJSON_AddItemToObject(root, "decoder", byte_level_object(0, 1));
    cJSON *model = cJSON_AddObjectToObject(root, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", 0);
    cJSON_AddBoolToObject(model, "byte_fallback", 0);
    cJSON_AddBoolToObject(model, "ignore_merges", t->ignore_merges);
    cJSON *vocab = cJSON_AddObjectToObject(model, "vocab");
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    int ok = root && added && pre && model && vocab && merges;
    for (int32_t id = 0; ok && id < t->n_vocab; id++) {
        if (!t->in_model[id]) continue;
        char *k = vocab_key(t, id);
        ok = k && cJSON_AddNumberToObject(vocab, k, id);
        free(k);
    }
    for (int32_t r = 0; ok && r < t->n_merges; r++) {
        char *a = vocab_key(t, t->merge_a[r]), *b = vocab_key(t, t->merge_b[r]);
        cJSON *pair = cJSON_CreateArray();
        ok = a && b && pair;
        if (ok) {
            cJSON_AddItemToArray(pair, cJSON_CreateString(a));
            cJSON_AddItemToArray(pair, cJSON_CreateString(b));
            cJSON_AddItemToArray(merges, pair);
        } else {
            cJSON_Delete(pair);
        }
        free(a);
        free(b);
    }
    if (!ok) {
        cJSON_Delete(root);
        return zaya_error_set(ZAYA_ENOMEM, "out of memory building tokenizer JSON");
    }
    *out = root;
    return ZAYA_OK;
}

static zaya_status save_roles(const zaya_tokenizer *t, const char *path) {
    if (t->bos < 0 && t->eos < 0 && t->pad < 0) return ZAYA_OK;
    char dir[4096], cfg_path[4200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0'; else snprintf(dir, sizeof dir, ".");
    snprintf(cfg_path, sizeof cfg_path, "%s/tokenizer_config.json", dir);
    /* An existing config (e.g. from transformers) keeps its other keys; only the roles are set. */
    cJSON *cfg = NULL;
    char *old;
    size_t old_len;
    if (zaya_read_file(cfg_path, &old, &old_len) == ZAYA_OK) {
        cfg = cJSON_Parse(old);
        free(old);
        if (cfg && !cJSON_IsObject(cfg)) {
            cJSON_Delete(cfg);
            cfg = NULL;
        }
    }
    zaya_error_clear();
    if (!cfg) {
        cfg = cJSON_CreateObject();
        cJSON_AddStringToObject(cfg, "tokenizer_class", "PreTrainedTokenizerFast");
    }
    const char *keys[3] = {"bos_token", "eos_token", "pad_token"};
    int32_t ids[3] = {t->bos, t->eos, t->pad};
    for (int i = 0; i < 3; i++) {
        if (ids[i] < 0) continue;
        char *c = vocab_key(t, ids[i]);
        cJSON_DeleteItemFromObjectCaseSensitive(cfg, keys[i]);
        cJSON_AddStringToObject(cfg, keys[i], c ? c : "");
        free(c);
    }
    zaya_status s = zaya_json_write_file(cfg_path, cfg, 1);
    cJSON_Delete(cfg);
    return s;
}

zaya_status zaya_tokenizer_save(const zaya_tokenizer *t, const char *path) {
    cJSON *root = NULL;
    if (t->vocab_raw || t->n_norm || t->pre_kind != ZAYA_PRE_BYTELEVEL || t->has_template)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "saving tokenizer '%s': zaya writes GPT-2 byte-level BPE only (copy the "
                              "original tokenizer.json instead)", path);
    ZAYA_TRY(build_json(t, &root));
    zaya_status s = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    if (s == ZAYA_OK) s = save_roles(t, path);
    if (s != ZAYA_OK) return zaya_error_context(s, "saving tokenizer '%s'", path);
    return ZAYA_OK;
}

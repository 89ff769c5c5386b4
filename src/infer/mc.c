/* Multiple-choice task files: JSONL, one item per line, validated and tokenized up front so that a
 * bad line stops the run before anything is scored. */
#include <stdlib.h>
#include <string.h>

#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/json.h"
#include "zaya/tokenizer.h"

static void item_free(zaya_mc_item *it) {
    free(it->ctx);
    for (int c = 0; c < it->nchoices && it->choice; c++) free(it->choice[c]);
    free(it->choice);
    free(it->nchoice);
    free(it->choice_bytes);
    memset(it, 0, sizeof *it);
}

void zaya_mc_free(zaya_mc_set *set) {
    for (int64_t i = 0; i < set->n; i++) item_free(&set->items[i]);
    free(set->items);
    set->items = NULL;
    set->n = 0;
}

static zaya_status encode(const zaya_tokenizer *tok, const char *text, int32_t **ids, int64_t *n) {
    size_t len = 0, cap = 0;
    *ids = NULL;
    zaya_status s = zaya_tokenizer_encode(tok, text, strlen(text), ids, &len, &cap);
    *n = (int64_t)len;
    return s;
}

/* Parses one line into it (zeroed on entry); errors do not name the line (the caller adds it). */
static zaya_status parse_item(const char *line, const zaya_tokenizer *tok, int64_t max_len, zaya_mc_item *it) {
    cJSON *o = NULL;
    ZAYA_TRY(zaya_json_parse(line, "item", &o));
    zaya_status s = ZAYA_OK;
    const char *ctx = NULL;
    int64_t label = -1;
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(o, "choices");
    if (!cJSON_IsObject(o)) s = zaya_error_set(ZAYA_EFORMAT, "not a JSON object");
    if (s == ZAYA_OK) s = zaya_json_get_str(o, "context", &ctx, 1);
    if (s == ZAYA_OK) s = zaya_json_get_i64(o, "label", &label, 1);
    if (s == ZAYA_OK && !cJSON_IsArray(choices))
        s = zaya_error_set(ZAYA_EFORMAT, "'choices' must be an array of strings");
    const int nc = s == ZAYA_OK ? cJSON_GetArraySize(choices) : 0;
    if (s == ZAYA_OK && nc < 1) s = zaya_error_set(ZAYA_EFORMAT, "'choices' is empty");
    if (s == ZAYA_OK && (label < 0 || label >= nc))
        s = zaya_error_set(ZAYA_ERANGE, "label %lld is out of range for %d choices", (long long)label, nc);
    if (s == ZAYA_OK) {
        it->label = (int)label;
        it->choice = calloc((size_t)nc, sizeof(int32_t *));
        it->nchoice = calloc((size_t)nc, sizeof(int64_t));
        it->choice_bytes = calloc((size_t)nc, sizeof(int64_t));
        if (!it->choice || !it->nchoice || !it->choice_bytes) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
    }
    if (s == ZAYA_OK) s = encode(tok, ctx, &it->ctx, &it->nctx);
    if (s == ZAYA_OK && it->nctx == 0) s = zaya_error_set(ZAYA_EFORMAT, "'context' is empty");
    for (int c = 0; c < nc && s == ZAYA_OK; c++) {
        const cJSON *ch = cJSON_GetArrayItem(choices, c);
        if (!cJSON_IsString(ch)) {
            s = zaya_error_set(ZAYA_EFORMAT, "choice %d is not a string", c);
            break;
        }
        it->nchoices = c + 1;
        it->choice_bytes[c] = (int64_t)strlen(ch->valuestring);
        s = encode(tok, ch->valuestring, &it->choice[c], &it->nchoice[c]);
        if (s == ZAYA_OK && it->nchoice[c] == 0) s = zaya_error_set(ZAYA_EFORMAT, "choice %d is empty", c);
        if (s == ZAYA_OK && it->nctx + it->nchoice[c] > max_len)
            s = zaya_error_set(ZAYA_ERANGE, "context + choice %d is %lld tokens, longer than the model's context %lld",
                               c, (long long)(it->nctx + it->nchoice[c]), (long long)max_len);
    }
    cJSON_Delete(o);
    return s;
}

zaya_status zaya_mc_load(const char *path, const zaya_tokenizer *tok, int64_t max_len, zaya_mc_set *out) {
    out->items = NULL;
    out->n = 0;
    char *data = NULL;
    size_t len = 0;
    zaya_status s = zaya_read_file(path, &data, &len);
    if (s != ZAYA_OK) return s;
    int64_t cap = 0, lineno = 0;
    zaya_mc_set set = {0};
    for (char *p = data; p < data + len && s == ZAYA_OK;) {
        char *nl = memchr(p, '\n', (size_t)(data + len - p));
        char *end = nl ? nl : data + len;
        *end = '\0';
        lineno++;
        char *q = p;
        while (*q == ' ' || *q == '\t' || *q == '\r') q++;
        if (*q) {
            if (set.n == cap) {
                cap = cap ? 2 * cap : 64;
                zaya_mc_item *grown = realloc(set.items, (size_t)cap * sizeof *grown);
                if (!grown) {
                    s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
                    break;
                }
                set.items = grown;
            }
            zaya_mc_item *it = &set.items[set.n];
            memset(it, 0, sizeof *it);
            it->line = lineno;
            s = parse_item(q, tok, max_len, it);
            if (s != ZAYA_OK) {
                item_free(it);
                s = zaya_error_context(s, "%s:%lld", path, (long long)lineno);
            } else {
                set.n++;
            }
        }
        p = end + 1;
    }
    free(data);
    if (s == ZAYA_OK && set.n == 0) s = zaya_error_set(ZAYA_EFORMAT, "%s: no items", path);
    if (s != ZAYA_OK) {
        zaya_mc_free(&set);
        return s;
    }
    *out = set;
    return ZAYA_OK;
}

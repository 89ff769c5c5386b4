/* JSONL record selection for data prepare (see jsonl.h). */
#include "data/jsonl.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

const char *zaya_prepare_skip_name(zaya_prepare_skip r) {
    switch (r) {
    case ZAYA_SKIP_LINE_NONE: return "none";
    case ZAYA_SKIP_LINE_MALFORMED: return "malformed_json";
    case ZAYA_SKIP_LINE_NOT_OBJECT: return "not_an_object";
    case ZAYA_SKIP_LINE_NO_KEY: return "missing_key";
    case ZAYA_SKIP_LINE_NOT_STRING: return "key_not_a_string";
    case ZAYA_SKIP_LINE_FILTERED: return "filtered";
    case ZAYA_SKIP_LINE_BLANK: return "blank";
    default: return "?";
    }
}

void zaya_jsonl_spec_free(zaya_jsonl_spec *s) {
    for (int i = 0; i < s->nfilters; i++) {
        free(s->filters[i].path);
        free(s->filters[i].value);
    }
    free(s->filters);
    memset(s, 0, sizeof *s);
}

zaya_status zaya_jsonl_spec_init(zaya_jsonl_spec *s, const char *key, const char *const *filters, int nfilters) {
    memset(s, 0, sizeof *s);
    if (key && !*key) return zaya_error_set(ZAYA_EINVAL, "the JSONL key (--jsonl-key) is empty; name the field holding the text");
    s->key = key ? key : "text";
    if (nfilters <= 0) return ZAYA_OK;
    s->filters = calloc((size_t)nfilters, sizeof *s->filters);
    if (!s->filters) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    for (int i = 0; i < nfilters; i++) {
        const char *f = filters[i], *eq = strchr(f, '=');
        if (!eq || eq == f || (eq == f + 1 && f[0] == '!'))
            return zaya_error_set(ZAYA_EINVAL, "JSONL filter '%s' must be KEY=VALUE or KEY!=VALUE (KEY a dotted path)", f);
        zaya_jsonl_filter *o = &s->filters[i];
        o->negate = eq[-1] == '!';
        size_t klen = (size_t)(eq - f) - (size_t)o->negate;
        o->path = strndup(f, klen);
        o->value = strdup(eq + 1);
        s->nfilters = i + 1;
        if (!o->path || !o->value) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    }
    return ZAYA_OK;
}

/* A dotted path: the whole remaining path is tried as one key first, so that keys holding dots
 * still match; then each dot in turn splits it into an object key and the rest. */
static const cJSON *lookup(const cJSON *o, const char *path) {
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, path);
    if (it) return it;
    char key[512];
    for (const char *dot = strchr(path, '.'); dot; dot = strchr(dot + 1, '.')) {
        size_t n = (size_t)(dot - path);
        if (n == 0 || n >= sizeof key) continue;
        memcpy(key, path, n);
        key[n] = '\0';
        const cJSON *child = cJSON_GetObjectItemCaseSensitive(o, key);
        if (cJSON_IsObject(child) && (it = lookup(child, dot + 1))) return it;
    }
    return NULL;
}

static int value_matches(const cJSON *v, const char *want) {
    if (!v) return 0;
    if (cJSON_IsString(v)) return !strcmp(v->valuestring, want);
    if (cJSON_IsTrue(v)) return !strcmp(want, "true");
    if (cJSON_IsFalse(v)) return !strcmp(want, "false");
    if (cJSON_IsNull(v)) return !strcmp(want, "null");
    if (cJSON_IsNumber(v)) {
        char *end;
        double d = strtod(want, &end);
        return *want && !*end && d == v->valuedouble;
    }
    return 0;
}

static int all_blank(const char *t, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (t[i] != ' ' && t[i] != '\n' && t[i] != '\t' && t[i] != '\r') return 0;
    return 1;
}

zaya_prepare_skip zaya_jsonl_select(const zaya_jsonl_spec *s, const char *line, size_t len, char **text, size_t *tlen) {
    *text = NULL;
    *tlen = 0;
    if (all_blank(line, len)) return ZAYA_SKIP_LINE_BLANK;
    cJSON *j = cJSON_ParseWithLength(line, len);
    if (!j) return ZAYA_SKIP_LINE_MALFORMED;
    zaya_prepare_skip r = ZAYA_SKIP_LINE_NONE;
    cJSON *t = NULL;
    if (!cJSON_IsObject(j)) r = ZAYA_SKIP_LINE_NOT_OBJECT;
    for (int i = 0; r == ZAYA_SKIP_LINE_NONE && i < s->nfilters; i++)
        if (value_matches(lookup(j, s->filters[i].path), s->filters[i].value) == s->filters[i].negate)
            r = ZAYA_SKIP_LINE_FILTERED;
    if (r == ZAYA_SKIP_LINE_NONE) {
        t = (cJSON *)lookup(j, s->key);
        if (!t) r = ZAYA_SKIP_LINE_NO_KEY;
        else if (!cJSON_IsString(t) || !t->valuestring) r = ZAYA_SKIP_LINE_NOT_STRING;
    }
    if (r == ZAYA_SKIP_LINE_NONE) {
        size_t n = strlen(t->valuestring);
        if (all_blank(t->valuestring, n)) r = ZAYA_SKIP_LINE_BLANK;
        else {
            *text = t->valuestring; /* taken over: cJSON_Delete skips a NULL valuestring */
            *tlen = n;
            t->valuestring = NULL;
        }
    }
    cJSON_Delete(j);
    return r;
}

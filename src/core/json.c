#include "zaya/json.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zaya/fs.h"

zaya_status zaya_json_parse(const char *text, const char *what, cJSON **out) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root) {
        /* Report the line and column of the first byte the parser could not accept. */
        const char *at = end ? end : cJSON_GetErrorPtr();
        long line = 1, col = 1;
        for (const char *p = text; at && p < at && *p; p++) {
            if (*p == '\n') { line++; col = 1; } else col++;
        }
        return zaya_error_set(ZAYA_EFORMAT, "%s: malformed JSON at line %ld, column %ld", what, line, col);
    }
    *out = root;
    return ZAYA_OK;
}

zaya_status zaya_json_load_file(const char *path, cJSON **out) {
    char *text;
    size_t len;
    ZAYA_TRY(zaya_read_file(path, &text, &len));
    if (strlen(text) != len) {
        free(text);
        return zaya_error_set(ZAYA_EFORMAT, "%s: contains a NUL byte; not a JSON text file", path);
    }
    zaya_status s = zaya_json_parse(text, path, out);
    free(text);
    return s;
}

zaya_status zaya_json_load_file_max(const char *path, uint64_t max_bytes, const char *what, cJSON **out) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes)
        return zaya_error_set(ZAYA_ERANGE, "%s: %llu bytes is too large for %s (at most %llu MiB)", path,
                              (unsigned long long)st.st_size, what, (unsigned long long)(max_bytes >> 20));
    return zaya_json_load_file(path, out);
}

zaya_status zaya_json_load_config(const char *path, cJSON **out) {
    struct stat st;
    if (stat(path, &st) != 0) return zaya_error_set(ZAYA_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return zaya_error_set(ZAYA_EINVAL, "%s is a directory; pass the config.json inside it", path);
    if (!S_ISREG(st.st_mode))
        return zaya_error_set(ZAYA_EINVAL, "%s is not a regular file (a pipe or a device); save the config to a file first", path);
    if (st.st_size > ZAYA_JSON_CONFIG_MAX_BYTES)
        return zaya_error_set(ZAYA_ERANGE, "%s: %lld bytes is too large for a model config (at most %d MiB)", path,
                              (long long)st.st_size, ZAYA_JSON_CONFIG_MAX_BYTES >> 20);
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_file(path, &root));
    zaya_status s = zaya_json_check_unique_keys(root);
    if (s != ZAYA_OK) {
        cJSON_Delete(root);
        return zaya_error_context(s, "%s", path);
    }
    *out = root;
    return ZAYA_OK;
}

zaya_status zaya_json_write_file(const char *path, const cJSON *root, int pretty) {
    char *text = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    if (!text) return zaya_error_set(ZAYA_ENOMEM, "cannot serialize JSON for '%s'", path);
    size_t len = strlen(text);
    char *with_nl = realloc(text, len + 2);
    if (!with_nl) {
        free(text);
        return zaya_error_set(ZAYA_ENOMEM, "cannot serialize JSON for '%s'", path);
    }
    with_nl[len] = '\n';
    with_nl[len + 1] = '\0';
    zaya_status s = zaya_write_file_atomic(path, with_nl, len + 1);
    free(with_nl);
    return s;
}

static zaya_status lookup(const cJSON *obj, const char *key, int required, const cJSON **item) {
    *item = NULL;
    if (!cJSON_IsObject(obj)) return zaya_error_set(ZAYA_EFORMAT, "expected a JSON object when reading key '%s'", key);
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!it || cJSON_IsNull(it)) {
        if (required) return zaya_error_set(ZAYA_EINVAL, "missing required key '%s'", key);
        return ZAYA_OK;
    }
    *item = it;
    return ZAYA_OK;
}

zaya_status zaya_json_get_f64(const cJSON *obj, const char *key, double *out, int required) {
    const cJSON *it;
    ZAYA_TRY(lookup(obj, key, required, &it));
    if (!it) return ZAYA_OK;
    if (!cJSON_IsNumber(it)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be a number", key);
    if (!isfinite(it->valuedouble)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be finite", key);
    *out = it->valuedouble;
    return ZAYA_OK;
}

const char *zaya_json_number_text(double v, char *buf, size_t cap) {
    if (!cap) return buf;
    if (isfinite(v) && v == floor(v) && fabs(v) < 1e300) {
        snprintf(buf, cap, "%.0f", v); /* every integral double printed digit for digit */
        return buf;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

zaya_status zaya_json_get_i64(const cJSON *obj, const char *key, int64_t *out, int required) {
    const cJSON *it;
    ZAYA_TRY(lookup(obj, key, required, &it));
    if (!it) return ZAYA_OK;
    if (!cJSON_IsNumber(it)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be an integer", key);
    double v = it->valuedouble;
    if (v != floor(v) || fabs(v) > 9007199254740992.0) {
        char num[400];
        return zaya_error_set(ZAYA_EINVAL, "key '%s' must be an integer (got %s)%s", key, zaya_json_number_text(v, num, sizeof num),
                              v == floor(v) ? "; integers beyond 2^53 are not exact in JSON" : "");
    }
    *out = (int64_t)v;
    return ZAYA_OK;
}

zaya_status zaya_json_get_int(const cJSON *obj, const char *key, int *out, int required) {
    int64_t v = *out;
    ZAYA_TRY(zaya_json_get_i64(obj, key, &v, required));
    if (v < -2147483647 - 1 || v > 2147483647)
        return zaya_error_set(ZAYA_EINVAL, "key '%s' out of 32-bit range (%lld)", key, (long long)v);
    *out = (int)v;
    return ZAYA_OK;
}

zaya_status zaya_json_get_bool(const cJSON *obj, const char *key, int *out, int required) {
    const cJSON *it;
    ZAYA_TRY(lookup(obj, key, required, &it));
    if (!it) return ZAYA_OK;
    if (!cJSON_IsBool(it)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be true or false", key);
    *out = cJSON_IsTrue(it);
    return ZAYA_OK;
}

zaya_status zaya_json_get_str(const cJSON *obj, const char *key, const char **out, int required) {
    const cJSON *it;
    ZAYA_TRY(lookup(obj, key, required, &it));
    if (!it) return ZAYA_OK;
    if (!cJSON_IsString(it)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be a string", key);
    *out = it->valuestring;
    return ZAYA_OK;
}

/* Objects with a repeated key are refused: cJSON keeps the first, Python's json the last. */
zaya_status zaya_json_check_unique_keys(const cJSON *t) {
    /* iterative walk (no recursion depth limit beyond cJSON's own nesting limit) */
    const cJSON *stack[1100];
    int sp = 0;
    stack[sp++] = t;
    while (sp > 0) {
        const cJSON *o = stack[--sp];
        if (!cJSON_IsObject(o) && !cJSON_IsArray(o)) continue;
        int isobj = cJSON_IsObject(o), n = 0;
        for (const cJSON *x = o->child; x; x = x->next, n++) {
            if (isobj && n < 4096)
                for (const cJSON *y = o->child; y != x; y = y->next)
                    if (x->string && y->string && !strcmp(x->string, y->string))
                        return zaya_error_set(ZAYA_EFORMAT, "duplicate key '%.64s' (JSON readers disagree on which value wins)",
                                              x->string);
            if (isobj && n >= 4096) return zaya_error_set(ZAYA_ERANGE, "an object with more than 4096 keys is not a model config");
            if ((cJSON_IsObject(x) || cJSON_IsArray(x)) && x->child) {
                if (sp >= (int)(sizeof stack / sizeof *stack)) return zaya_error_set(ZAYA_ERANGE, "JSON nested too deeply");
                stack[sp++] = x;
            }
        }
    }
    return ZAYA_OK;
}

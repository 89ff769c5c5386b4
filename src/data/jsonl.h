/* One JSONL record -> the document text of `zaya data prepare`: the text field by a dotted path
 * ("meta.body"), optional metadata filters ("lang=en", "meta.source!=web"), and the reason a line
 * gives no document. */
#ifndef ZAYA_DATA_JSONL_H
#define ZAYA_DATA_JSONL_H

#include <stddef.h>

#include "zaya/data.h"

typedef struct zaya_jsonl_filter {
    char *path;  /* dotted */
    char *value; /* compared with a string field as is; with numbers, true/false and null by their JSON text */
    int negate;  /* KEY!=VALUE */
} zaya_jsonl_filter;

typedef struct zaya_jsonl_spec {
    const char *key; /* dotted path of the text (NULL: "text") */
    zaya_jsonl_filter *filters;
    int nfilters;
} zaya_jsonl_spec;

/* Parses "KEY=VALUE" / "KEY!=VALUE" filters; an error names the malformed one. */
zaya_status zaya_jsonl_spec_init(zaya_jsonl_spec *s, const char *key, const char *const *filters, int nfilters);
void zaya_jsonl_spec_free(zaya_jsonl_spec *s);

/* Parses one line and selects its text: on ZAYA_SKIP_LINE_NONE, *text (NUL-terminated, *len bytes) is
 * owned by the caller (free()). Thread-safe. */
zaya_prepare_skip zaya_jsonl_select(const zaya_jsonl_spec *s, const char *line, size_t len, char **text, size_t *tlen);

#endif

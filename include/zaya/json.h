/* Thin helpers over cJSON: load a file with errors that name the path and key, typed getters that
 * validate, and an atomic writer (temp file + fsync + rename). */
#ifndef ZAYA_JSON_H
#define ZAYA_JSON_H

#include <stdint.h>
#include <cjson/cJSON.h>
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

zaya_status zaya_json_load_file(const char *path, cJSON **out);
/* A model config file: a regular file of at most ZAYA_JSON_CONFIG_MAX_BYTES with no repeated keys
 * (directories, pipes and oversized files get a plain message). The one loader of config.json files. */
#define ZAYA_JSON_CONFIG_MAX_BYTES (16 * 1024 * 1024)
zaya_status zaya_json_load_config(const char *path, cJSON **out);
/* zaya_json_load_file for a file of at most max_bytes (a larger one is an error naming `what`, the
 * size and the cap, before anything is read): cJSON takes up to ~50 bytes of memory per input byte
 * (an array of small numbers), so every JSON loader without a natural bound gets one (docs/limits.md). */
zaya_status zaya_json_load_file_max(const char *path, uint64_t max_bytes, const char *what, cJSON **out);
#define ZAYA_JSON_RUN_MAX_BYTES ((uint64_t)16 << 20)   /* run files */
#define ZAYA_JSON_INDEX_MAX_BYTES ((uint64_t)64 << 20) /* model.safetensors.index.json */
zaya_status zaya_json_parse(const char *text, const char *what, cJSON **out);
/* Writes JSON text atomically; `pretty` selects indented output. */
zaya_status zaya_json_write_file(const char *path, const cJSON *root, int pretty);

/* Getters. `required` = 1: a missing key is an error naming it. Missing optional keys leave *out
 * untouched (so callers preset defaults). Wrong types and out-of-range values are always errors. */
zaya_status zaya_json_get_i64(const cJSON *obj, const char *key, int64_t *out, int required);
/* A JSON number as error messages print it: integral values exactly in full ("1152921504606846976",
 * not "1.15292e+18"), others in the fewest digits that read back to the same double. Returns buf. */
const char *zaya_json_number_text(double v, char *buf, size_t cap);
zaya_status zaya_json_get_int(const cJSON *obj, const char *key, int *out, int required);
zaya_status zaya_json_get_f64(const cJSON *obj, const char *key, double *out, int required);
zaya_status zaya_json_get_bool(const cJSON *obj, const char *key, int *out, int required);
/* Returns a pointer into the cJSON tree (valid while it lives). */
zaya_status zaya_json_get_str(const cJSON *obj, const char *key, const char **out, int required);
/* Error when `tree` holds an object with a repeated key (JSON readers disagree on which one wins). */
zaya_status zaya_json_check_unique_keys(const cJSON *tree);

#ifdef __cplusplus
}
#endif

#endif

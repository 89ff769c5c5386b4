/* The machine profile's "memory" object: STREAM figures in GB/s. */
#include <string.h>

#include "zaya/bench_mem.h"
#include "zaya/json.h"

static const char *g_keys[ZAYA_MEM_KERNELS] = {"copy_GBps", "scale_GBps", "add_GBps",
                                               "triad_GBps", "read_GBps", "write_GBps"};

cJSON *zaya_bench_mem_profile_json(const zaya_stream_result *r) {
    cJSON *o = cJSON_CreateObject();
    for (int k = 0; k < ZAYA_MEM_KERNELS; k++) cJSON_AddNumberToObject(o, g_keys[k], r->best_GBps[k]);
    cJSON_AddNumberToObject(o, "threads", r->threads);
    cJSON_AddNumberToObject(o, "array_bytes", (double)r->elems * 8.0);
    cJSON_AddBoolToObject(o, "validated", r->validated);
    return o;
}

zaya_status zaya_bench_mem_profile_parse(const cJSON *memory, zaya_stream_result *out) {
    memset(out, 0, sizeof *out);
    if (!cJSON_IsObject(memory)) return zaya_error_set(ZAYA_EFORMAT, "profile: 'memory' must be an object");
    for (int k = 0; k < ZAYA_MEM_KERNELS; k++) {
        zaya_status st = zaya_json_get_f64(memory, g_keys[k], &out->best_GBps[k], 1);
        if (st != ZAYA_OK) return zaya_error_context(st, "profile: memory");
        if (out->best_GBps[k] < 0)
            return zaya_error_set(ZAYA_EFORMAT, "profile: memory.%s must be >= 0 (got %g)", g_keys[k], out->best_GBps[k]);
    }
    int64_t bytes = 0;
    ZAYA_TRY(zaya_json_get_int(memory, "threads", &out->threads, 0));
    ZAYA_TRY(zaya_json_get_i64(memory, "array_bytes", &bytes, 0));
    ZAYA_TRY(zaya_json_get_bool(memory, "validated", &out->validated, 0));
    out->elems = bytes / 8;
    return ZAYA_OK;
}

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

/* `zaya bench mem --device cuda` (zaya_bench_mem_gpu_run): BabelStream's copy / mul / add / triad /
 * dot on device arrays by STREAM's rules, and host<->device copies from pinned and pageable memory,
 * against the datasheet HBM bandwidth (src/gpu/stream.cu does the device work). */
#include <stdio.h>
#include <string.h>

#include "zaya/bench_mem.h"
#include "zaya/fs.h"
#include "zaya/json.h"

zaya_status zaya_bench_mem_gpu_run(const zaya_mem_gpu_plan *plan, const char *outdir, FILE *out) {
    ZAYA_TRY(zaya_gpu_select(plan->device));
    zaya_gpu_props p;
    ZAYA_TRY(zaya_gpu_props_get(plan->device.index, &p));
    const zaya_gpu_datasheet *ds = zaya_gpu_datasheet_find(p.name);
    int64_t bytes = plan->array_bytes;
    if (bytes <= 0) {
        bytes = 4 * p.l2_bytes; /* STREAM: each array >= 4x the last-level cache */
        if (bytes < (256ll << 20)) bytes = 256ll << 20;
    }
    int64_t n = bytes / 8;
    double sheet = ds ? ds->hbm_GBps : 0;
    fprintf(out, "# device cuda:%d %s: %d SMs, L2 %.1f MiB, datasheet HBM %s\n", plan->device.index, p.name, p.sm_count,
            (double)p.l2_bytes / (1 << 20), ds ? "" : "unknown (no % of datasheet)");
    if (ds) fprintf(out, "#   %.0f GB/s (%s)\n", sheet, ds->name);
    fprintf(out, "# BabelStream: 3 arrays of %lld doubles (%.1f MiB each%s), %d times, first excluded, best shown\n",
            (long long)n, (double)n * 8 / (1 << 20), n * 8 < 4 * p.l2_bytes ? ", NON-CONFORMING: < 4 x L2" : "",
            plan->ntimes);
    zaya_gpu_stream_result r;
    ZAYA_TRY(zaya_gpu_stream_run(n, plan->ntimes, &r));
    fprintf(out, "%-8s %12s %10s %10s %9s\n", "Function", "MBytes/sec", "Min (sec)", "Avg (sec)", "%sheet");
    for (int k = 0; k < ZAYA_GPU_KERNEL_COUNT; k++)
        fprintf(out, "%-8s %12.1f %10.6f %10.6f %9.1f\n", zaya_gpu_stream_kernel_name((zaya_gpu_stream_kernel)k),
                r.best_GBps[k] * 1e3, r.best_s[k], r.mean_s[k], sheet > 0 ? 100 * r.best_GBps[k] / sheet : 0.0);
    fprintf(out, "# validation: max relative error %.3e (%s), block %d threads\n", r.max_rel_err,
            r.validated ? "validated" : "FAILED", r.block);

    /* Host <-> device: pinned and pageable, both directions. */
    static const char *names[2][2] = {{"h2d_pageable", "h2d_pinned"}, {"d2h_pageable", "d2h_pinned"}};
    double copy[2][2] = {{0}};
    size_t cb = plan->copy_bytes > 0 ? (size_t)plan->copy_bytes : (size_t)256 << 20;
    for (int dir = 0; dir < 2; dir++)
        for (int pin = 0; pin < 2; pin++) {
            ZAYA_TRY(zaya_gpu_copy_bandwidth(cb, pin, dir ? ZAYA_GPU_D2H : ZAYA_GPU_H2D, plan->ntimes, &copy[dir][pin]));
            fprintf(out, "%-13s %9.2f GB/s (%zu bytes, best of %d, first excluded)\n", names[dir][pin], copy[dir][pin], cb,
                    plan->ntimes - 1);
        }

    ZAYA_TRY(zaya_mkdir_p(outdir));
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "benchmark", "mem");
    cJSON_AddStringToObject(root, "device", "cuda");
    cJSON *g = cJSON_AddObjectToObject(root, "gpu");
    cJSON_AddStringToObject(g, "name", p.name);
    cJSON_AddNumberToObject(g, "index", p.index);
    cJSON_AddNumberToObject(g, "l2_bytes", (double)p.l2_bytes);
    cJSON_AddStringToObject(g, "datasheet", ds ? ds->name : "unknown");
    cJSON_AddNumberToObject(g, "datasheet_hbm_GBps", sheet);
    cJSON *st = cJSON_AddObjectToObject(root, "stream");
    cJSON_AddNumberToObject(st, "array_elems", (double)n);
    cJSON_AddNumberToObject(st, "ntimes", plan->ntimes);
    cJSON_AddNumberToObject(st, "block", r.block);
    cJSON_AddBoolToObject(st, "validated", r.validated);
    cJSON_AddNumberToObject(st, "max_rel_err", r.max_rel_err);
    for (int k = 0; k < ZAYA_GPU_KERNEL_COUNT; k++) {
        cJSON *e = cJSON_AddObjectToObject(st, zaya_gpu_stream_kernel_name((zaya_gpu_stream_kernel)k));
        cJSON_AddNumberToObject(e, "GBps", r.best_GBps[k]);
        cJSON_AddNumberToObject(e, "min_s", r.best_s[k]);
        cJSON_AddNumberToObject(e, "avg_s", r.mean_s[k]);
        cJSON_AddNumberToObject(e, "pct_datasheet", sheet > 0 ? 100 * r.best_GBps[k] / sheet : 0.0);
    }
    cJSON *c = cJSON_AddObjectToObject(root, "host_copy_GBps");
    cJSON_AddNumberToObject(c, "bytes", (double)cb);
    for (int dir = 0; dir < 2; dir++)
        for (int pin = 0; pin < 2; pin++) cJSON_AddNumberToObject(c, names[dir][pin], copy[dir][pin]);
    char path[4096];
    zaya_status s = zaya_path_join(path, sizeof path, outdir, "mem.json");
    if (s == ZAYA_OK) s = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    ZAYA_TRY(s);
    fprintf(out, "# results written to %s/mem.json\n", outdir);
    if (!r.validated)
        return zaya_error_set(ZAYA_ENUMERIC, "bench mem: device arrays failed validation (max relative error %.3e)",
                              r.max_rel_err);
    return ZAYA_OK;
}

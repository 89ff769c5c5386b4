/* `zaya bench mem` as a library: the STREAM thread sweep, the working-set sweep, the printed table
 * and mem.json / mem.csv / mem_ws.csv / plots. */
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "zaya/bench_mem.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/plot.h"

void zaya_mem_plan_default(zaya_mem_plan *p) {
    memset(p, 0, sizeof *p);
    p->max_threads = 0;
    p->ntimes = 10;
    p->ws_sweep = 1;
    p->ws_threads = 1;
    p->ws_min = 16 << 10;
    p->ws_max = 1ll << 30;
}

zaya_status zaya_bench_mem_run(const zaya_mem_plan *p, zaya_mem_run *out, FILE *table) {
    memset(out, 0, sizeof *out);
    if (p->ntimes < 2 || p->ntimes > 64) return zaya_error_set(ZAYA_EINVAL, "bench mem: ntimes must be in 2..64 (got %d)", p->ntimes);
    if (p->ws_sweep && (p->ws_min < 1024 || p->ws_max < p->ws_min))
        return zaya_error_set(ZAYA_EINVAL, "bench mem: working sets must satisfy 1K <= min <= max");
    int maxt = p->max_threads > 0 ? p->max_threads : omp_get_num_procs();
    int64_t llc = zaya_mem_llc_bytes();
    int64_t elems = p->array_elems > 0 ? p->array_elems : zaya_mem_stream_elems();
    int conforming = llc == 0 || elems * 8 >= 4 * llc;
    out->llc_bytes = llc;
    if (table) {
        fprintf(table, "# zaya bench mem: STREAM kernels, %lld doubles per array (%.1f MiB each, %.1fx the %.1f MiB "
                       "last-level cache)%s, NTIMES %d (best after the first)\n",
                (long long)elems, (double)elems * 8 / (1 << 20), llc ? (double)elems * 8 / (double)llc : 0.0,
                (double)llc / (1 << 20),
                conforming ? "" : " -- NON-CONFORMING (arrays < 4x LLC): a variant, not STREAM", p->ntimes);
        fprintf(table, "# %7s  %-8s %16s %12s %12s %12s %12s\n", "threads", "Function", "Best Rate MB/s", "GB/s",
                "Avg time", "Min time", "Max time");
    }
    /* Thread counts 1, 2, 4, ... and finally maxt itself. */
    for (int t = 1; out->nstream < 32 && t <= maxt; t = (t * 2 > maxt && t < maxt) ? maxt : t * 2) {
        zaya_stream_result *res = &out->stream[out->nstream];
        zaya_status st = zaya_bench_stream(t, elems, p->ntimes, res);
        if (st != ZAYA_OK) return zaya_error_context(st, "%d threads", t);
        if (table) {
            for (int k = 0; k < ZAYA_MEM_KERNELS; k++)
                fprintf(table, "  %7d  %-8s %16.1f %12.3f %12.6f %12.6f %12.6f\n", t,
                        zaya_mem_kernel_name((zaya_mem_kernel)k), res->best_GBps[k] * 1e3, res->best_GBps[k],
                        res->avg_s[k], res->min_s[k], res->max_s[k]);
            fprintf(table, "# %d threads: Solution Validates: avg error less than 1.000000e-13 on all three arrays "
                           "(max %.2e; read sum %.2e)\n",
                    t, res->max_rel_err, res->read_rel_err);
            fflush(table);
        }
        if (res->best_GBps[ZAYA_MEM_TRIAD] > out->stream[out->best].best_GBps[ZAYA_MEM_TRIAD]) out->best = out->nstream;
        out->nstream++;
        if (t == maxt) break;
    }
    out->ws_threads = p->ws_threads > 0 ? p->ws_threads : maxt;
    if (!p->ws_sweep) return ZAYA_OK;
    for (int64_t b = p->ws_min; b <= p->ws_max && out->nws < 64; b *= 2) out->ws[out->nws++] = b;
    ZAYA_TRY(zaya_bench_mem_ws(out->ws_threads, ZAYA_MEM_TRIAD, out->ws, out->nws, out->ws_triad));
    ZAYA_TRY(zaya_bench_mem_ws(out->ws_threads, ZAYA_MEM_READ, out->ws, out->nws, out->ws_read));
    if (table) {
        fprintf(table, "# working-set sweep, %d thread%s (total bytes of the arrays a kernel touches; best of 5)\n",
                out->ws_threads, out->ws_threads == 1 ? "" : "s");
        fprintf(table, "# %14s %12s %12s\n", "bytes", "triad GB/s", "read GB/s");
        for (int i = 0; i < out->nws; i++)
            fprintf(table, "  %14lld %12.2f %12.2f\n", (long long)out->ws[i], out->ws_triad[i], out->ws_read[i]);
    }
    return ZAYA_OK;
}

zaya_status zaya_bench_mem_write(const zaya_mem_run *r, const char *dir) {
    const zaya_stream_result *res = r->stream;
    int nres = r->nstream, nws = r->nws;
    const int64_t *ws = r->ws;
    const double *ws_triad = r->ws_triad, *ws_read = r->ws_read;
    if (nres < 1) return zaya_error_set(ZAYA_EINVAL, "bench mem: no results to write");
    ZAYA_TRY(zaya_mkdir_p(dir));
    char path[4096];
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "zaya-bench-mem");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddNumberToObject(root, "llc_bytes", (double)r->llc_bytes);
    cJSON_AddNumberToObject(root, "array_elems", (double)res[0].elems);
    cJSON_AddNumberToObject(root, "ntimes", res[0].ntimes);
    cJSON *arr = cJSON_AddArrayToObject(root, "stream");
    for (int i = 0; i < nres; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "threads", res[i].threads);
        cJSON_AddBoolToObject(e, "validated", res[i].validated);
        cJSON_AddNumberToObject(e, "max_rel_err", res[i].max_rel_err);
        cJSON_AddNumberToObject(e, "read_rel_err", res[i].read_rel_err);
        cJSON *ks = cJSON_AddObjectToObject(e, "kernels");
        for (int k = 0; k < ZAYA_MEM_KERNELS; k++) {
            cJSON *kk = cJSON_AddObjectToObject(ks, zaya_mem_kernel_name((zaya_mem_kernel)k));
            cJSON_AddNumberToObject(kk, "best_GBps", res[i].best_GBps[k]);
            cJSON_AddNumberToObject(kk, "avg_s", res[i].avg_s[k]);
            cJSON_AddNumberToObject(kk, "min_s", res[i].min_s[k]);
            cJSON_AddNumberToObject(kk, "max_s", res[i].max_s[k]);
        }
        cJSON_AddItemToArray(arr, e);
    }
    cJSON_AddNumberToObject(root, "ws_threads", r->ws_threads);
    cJSON *sw = cJSON_AddArrayToObject(root, "ws_sweep");
    for (int i = 0; i < nws; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "bytes", (double)ws[i]);
        cJSON_AddNumberToObject(e, "triad_GBps", ws_triad[i]);
        cJSON_AddNumberToObject(e, "read_GBps", ws_read[i]);
        cJSON_AddItemToArray(sw, e);
    }
    cJSON_AddItemToObject(root, "memory", zaya_bench_mem_profile_json(&res[r->best]));
    zaya_status st = zaya_path_join(path, sizeof path, dir, "mem.json");
    if (st == ZAYA_OK) st = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    ZAYA_TRY(st);

    char buf[16384];
    size_t len = (size_t)snprintf(buf, sizeof buf, "threads,kernel,best_GBps,avg_s,min_s,max_s\n");
    for (int i = 0; i < nres; i++)
        for (int k = 0; k < ZAYA_MEM_KERNELS && len < sizeof buf - 200; k++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%d,%s,%.4f,%.6e,%.6e,%.6e\n", res[i].threads,
                                    zaya_mem_kernel_name((zaya_mem_kernel)k), res[i].best_GBps[k], res[i].avg_s[k],
                                    res[i].min_s[k], res[i].max_s[k]);
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "mem.csv"));
    ZAYA_TRY(zaya_write_file_atomic(path, buf, len));
    len = (size_t)snprintf(buf, sizeof buf, "bytes,triad_GBps,read_GBps\n");
    for (int i = 0; i < nws && len < sizeof buf - 100; i++)
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%lld,%.4f,%.4f\n", (long long)ws[i], ws_triad[i], ws_read[i]);
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, "mem_ws.csv"));
    ZAYA_TRY(zaya_write_file_atomic(path, buf, len));

    /* Plots are optional output: a missing gnuplot only warns. */
    double tx[64], ty[ZAYA_MEM_KERNELS][64];
    zaya_plot_series s[ZAYA_MEM_KERNELS];
    for (int i = 0; i < nres && i < 64; i++) tx[i] = res[i].threads;
    for (int k = 0; k < ZAYA_MEM_KERNELS; k++) {
        for (int i = 0; i < nres && i < 64; i++) ty[k][i] = res[i].best_GBps[k];
        s[k] = (zaya_plot_series){zaya_mem_kernel_name((zaya_mem_kernel)k), tx, ty[k], nres < 64 ? nres : 64};
    }
    zaya_plot_opts o = {"STREAM best bandwidth vs threads", "threads", "GB/s (1e9 B/s)", 0, 0, 1};
    if (zaya_path_join(path, sizeof path, dir, "mem_threads.png") == ZAYA_OK &&
        zaya_plot_lines(path, &o, s, ZAYA_MEM_KERNELS) != ZAYA_OK)
        ZAYA_WARN("plot skipped: %s", zaya_error_message());
    if (nws > 0) {
        double wx[64];
        for (int i = 0; i < nws && i < 64; i++) wx[i] = (double)ws[i];
        zaya_plot_series w[2] = {{"triad", wx, ws_triad, nws}, {"read", wx, ws_read, nws}};
        zaya_plot_opts ow = {"Bandwidth vs working set (cache plateaus)", "working set (bytes)", "GB/s (1e9 B/s)", 2, 0, 1};
        if (zaya_path_join(path, sizeof path, dir, "mem_ws.png") == ZAYA_OK && zaya_plot_lines(path, &ow, w, 2) != ZAYA_OK)
            ZAYA_WARN("plot skipped: %s", zaya_error_message());
    }
    return ZAYA_OK;
}


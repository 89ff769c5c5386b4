/* zaya bench mem: STREAM by STREAM's rules across thread counts, plus a working-set sweep. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/bench_mem.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/plot.h"
#include "zaya/threads.h"

static const char *g_details =
    "STREAM rules: 8-byte elements, each array >= 4x the last-level cache (read from sysfs), NTIMES\n"
    "repetitions with the first discarded and the best reported, bytes counted as STREAM does (copy,\n"
    "scale 16 B/element; add, triad 24; read, write 8; no write-allocate traffic), MB = 1e6 bytes,\n"
    "results validated. Thread counts 1, 2, 4, ... up to --threads. The working-set sweep runs triad\n"
    "and read (--ws-threads threads) on total array sizes from --ws-min to --ws-max (x2), showing the\n"
    "L1/L2/L3/DRAM plateaus. Writes mem.json, mem.csv, mem_ws.csv, mem_threads.png, mem_ws.png.";

static zaya_status write_outputs(const char *dir, const zaya_stream_result *res, int nres, int best,
                                 const int64_t *ws, const double *ws_triad, const double *ws_read, int nws,
                                 int64_t llc, int ws_threads) {
    ZAYA_TRY(zaya_mkdir_p(dir));
    char path[4096];
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "zaya-bench-mem");
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddNumberToObject(root, "llc_bytes", (double)llc);
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
    cJSON_AddNumberToObject(root, "ws_threads", ws_threads);
    cJSON *sw = cJSON_AddArrayToObject(root, "ws_sweep");
    for (int i = 0; i < nws; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "bytes", (double)ws[i]);
        cJSON_AddNumberToObject(e, "triad_GBps", ws_triad[i]);
        cJSON_AddNumberToObject(e, "read_GBps", ws_read[i]);
        cJSON_AddItemToArray(sw, e);
    }
    cJSON_AddItemToObject(root, "memory", zaya_bench_mem_profile_json(&res[best]));
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

int zaya_cmd_bench_mem(int argc, char **argv) {
    int threads = 0, ntimes = 10, sweep = 1, ws_threads = 1;
    int64_t array_bytes = 0, ws_min = 16 << 10, ws_max = 1ll << 30;
    const char *outdir = "out/bench-mem";
    zaya_flag flags[] = {
        ZAYA_FLAG_THREADS(&threads),
        {"ntimes", 0, ZAYA_FLAG_INT, &ntimes, "N", "STREAM repetitions, first discarded (default 10, min 2)"},
        {"array-bytes", 0, ZAYA_FLAG_BYTES, &array_bytes, "SIZE",
         "bytes per array (default: max(80M, 4 x last-level cache)); smaller than 4 x LLC is flagged non-conforming"},
        {"ws-sweep", 0, ZAYA_FLAG_INT, &sweep, "0|1", "run the working-set sweep (default 1)"},
        {"ws-threads", 0, ZAYA_FLAG_INT, &ws_threads, "N",
         "threads of the working-set sweep (default 1: one core's L1/L2 plateaus; 0 = --threads)"},
        {"ws-min", 0, ZAYA_FLAG_BYTES, &ws_min, "SIZE", "smallest working set (default 16K)"},
        {"ws-max", 0, ZAYA_FLAG_BYTES, &ws_max, "SIZE", "largest working set (default 1G)"},
        ZAYA_FLAG_OUTDIR(&outdir, "out/bench-mem"),
    };
    zaya_cmd_spec spec = {"bench mem", "memory bandwidth: STREAM copy/scale/add/triad + read/write, thread and "
                                       "working-set sweeps",
                          "[options]", g_details, flags, (int)(sizeof flags / sizeof flags[0])};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (ntimes < 2 || ntimes > 64) return zaya_flags_usage_error(&spec, "--ntimes must be in 2..64 (got %d)", ntimes);
    if (ws_min < 1024 || ws_max < ws_min) return zaya_flags_usage_error(&spec, "--ws-min must be >= 1K and <= --ws-max");
    if (ws_threads < 0) return zaya_flags_usage_error(&spec, "--ws-threads must be >= 0");
    if (array_bytes != 0 && array_bytes < 8 * 1024)
        return zaya_flags_usage_error(&spec, "--array-bytes must be at least 8K");

    int maxt = zaya_threads_init(threads);
    int64_t llc = zaya_mem_llc_bytes();
    int64_t elems = array_bytes ? array_bytes / 8 : zaya_mem_stream_elems();
    int conforming = llc == 0 || elems * 8 >= 4 * llc;
    printf("# zaya bench mem: STREAM kernels, %lld doubles per array (%.1f MiB each, %.1fx the %.1f MiB last-level "
           "cache)%s, NTIMES %d (best after the first)\n",
           (long long)elems, (double)elems * 8 / (1 << 20), llc ? (double)elems * 8 / (double)llc : 0.0,
           (double)llc / (1 << 20), conforming ? "" : " -- NON-CONFORMING (arrays < 4x LLC): a variant, not STREAM",
           ntimes);
    printf("# %7s  %-8s %16s %12s %12s %12s %12s\n", "threads", "Function", "Best Rate MB/s", "GB/s", "Avg time",
           "Min time", "Max time");
    zaya_stream_result res[32];
    int nres = 0, best = 0;
    for (int t = 1; nres < 32; t = t * 2 > maxt && t < maxt ? maxt : t * 2) {
        if (t > maxt) break;
        zaya_status st = zaya_bench_stream(t, elems, ntimes, &res[nres]);
        if (st != ZAYA_OK) {
            fprintf(stderr, "zaya bench mem: error: %d threads: %s\n", t, zaya_error_message());
            return 1;
        }
        for (int k = 0; k < ZAYA_MEM_KERNELS; k++)
            printf("  %7d  %-8s %16.1f %12.3f %12.6f %12.6f %12.6f\n", t, zaya_mem_kernel_name((zaya_mem_kernel)k),
                   res[nres].best_GBps[k] * 1e3, res[nres].best_GBps[k], res[nres].avg_s[k], res[nres].min_s[k],
                   res[nres].max_s[k]);
        printf("# %d threads: Solution Validates: avg error less than 1.000000e-13 on all three arrays (max %.2e; "
               "read sum %.2e)\n",
               t, res[nres].max_rel_err, res[nres].read_rel_err);
        fflush(stdout);
        if (res[nres].best_GBps[ZAYA_MEM_TRIAD] > res[best].best_GBps[ZAYA_MEM_TRIAD]) best = nres;
        nres++;
        if (t == maxt) break;
    }

    int64_t ws[64];
    double ws_triad[64], ws_read[64];
    int nws = 0;
    int wst = ws_threads > 0 ? ws_threads : maxt;
    if (sweep) {
        for (int64_t b = ws_min; b <= ws_max && nws < 64; b *= 2) ws[nws++] = b;
        if (zaya_bench_mem_ws(wst, ZAYA_MEM_TRIAD, ws, nws, ws_triad) != ZAYA_OK ||
            zaya_bench_mem_ws(wst, ZAYA_MEM_READ, ws, nws, ws_read) != ZAYA_OK) {
            fprintf(stderr, "zaya bench mem: error: %s\n", zaya_error_message());
            return 1;
        }
        printf("# working-set sweep, %d thread%s (total bytes of the arrays a kernel touches; best of 5)\n", wst,
               wst == 1 ? "" : "s");
        printf("# %14s %12s %12s\n", "bytes", "triad GB/s", "read GB/s");
        for (int i = 0; i < nws; i++) printf("  %14lld %12.2f %12.2f\n", (long long)ws[i], ws_triad[i], ws_read[i]);
    }
    zaya_status st = write_outputs(outdir, res, nres, best, ws, ws_triad, ws_read, nws, llc, wst);
    if (st != ZAYA_OK) {
        fprintf(stderr, "zaya bench mem: error: %s\n", zaya_error_message());
        return 1;
    }
    printf("# results written to %s (mem.json, mem.csv, mem_ws.csv, plots)\n", outdir);
    return 0;
}

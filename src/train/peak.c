/* The matmul peak MFU is computed against, and where it came from. The per-run start-up measurement
 * moves with the machine's load (656, 100 and 1,617 GFLOP/s on three runs of one loaded host), so a
 * run takes, in this order: --peak-gflops; the machine profile `zaya bench all` wrote (--profile or
 * ZAYA_PROFILE); the peak cached for this host (ZAYA_PEAK_CACHE, else $XDG_CACHE_HOME/zaya or
 * ~/.cache/zaya, file matmul-peak-HOST.json, one entry per dtype with its date and source). Only
 * when none is there is the peak measured now, labelled so, and cached for the runs that follow
 * (the MFU of two runs on one host is then computed against the same number). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/internal.h"
#include "zaya/bench.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/profile.h"

static int cache_path(char *out, size_t cap, const char *host) {
    const char *dir = getenv("ZAYA_PEAK_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir && *dir) n = snprintf(out, cap, "%s/matmul-peak-%s.json", dir, host);
    else if (xdg && *xdg) n = snprintf(out, cap, "%s/zaya/matmul-peak-%s.json", xdg, host);
    else if (home && *home) n = snprintf(out, cap, "%s/.cache/zaya/matmul-peak-%s.json", home, host);
    else return 0;
    return n > 0 && (size_t)n < cap;
}

static void parent_dir(char *path) {
    char *slash = strrchr(path, '/');
    if (slash && slash != path) *slash = 0;
}

zaya_status zaya_train_peak_resolve(const zaya_train_opts *o, int rank, double *gflops, char *source, size_t cap) {
    const char *dt = o->dtype == ZAYA_DTYPE_BF16 ? "bf16" : "f32";
    const int bf16 = o->dtype == ZAYA_DTYPE_BF16;
    if (o->peak_gflops > 0) {
        *gflops = o->peak_gflops;
        snprintf(source, cap, "given by --peak-gflops");
        return ZAYA_OK;
    }
    const char *prof = o->profile && *o->profile ? o->profile : getenv("ZAYA_PROFILE");
    if (prof && *prof) {
        zaya_profile p;
        zaya_status s = zaya_profile_read_file(prof, &p);
        if (s != ZAYA_OK) return zaya_error_context(s, "machine profile for MFU (--profile / ZAYA_PROFILE)");
        double g = p.peak_gflops[bf16];
        if (g > 0) {
            *gflops = g;
            snprintf(source, cap, "%s GEMM peak of the machine profile %s (zaya bench all on %s, %s)", dt, prof,
                     p.machine.hostname[0] ? p.machine.hostname : "?", p.machine.created[0] ? p.machine.created : "undated");
        }
        zaya_profile_free(&p);
        if (g > 0) return ZAYA_OK;
        return zaya_error_set(ZAYA_EINVAL, "machine profile %s has no %s GEMM peak (gemm_peak_gflops.%s)", prof, dt, dt);
    }
    char host[128] = "host", path[4096];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "host");
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == '/' || *c == '"' || *c == '\\') *c = '_';
    const int have_path = cache_path(path, sizeof path, host);
    cJSON *cache = NULL;
    if (have_path && access(path, F_OK) == 0 && zaya_json_load_file(path, &cache) != ZAYA_OK) {
        ZAYA_WARN("ignoring the peak cache %s: %s", path, zaya_error_message());
        cache = NULL;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(cache, dt);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(e, "gflops"), *when = cJSON_GetObjectItemCaseSensitive(e, "measured");
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(e, "source");
    if (cJSON_IsNumber(g) && g->valuedouble > 0) {
        *gflops = g->valuedouble;
        snprintf(source, cap, "cached for host %s: measured %s by %s; %s (delete it to measure again)", host,
                 cJSON_IsString(when) ? when->valuestring : "(undated)", cJSON_IsString(src) ? src->valuestring : "?", path);
        cJSON_Delete(cache);
        return ZAYA_OK;
    }
    /* the fallback: measure now */
    *gflops = zaya_bench_matmul_peak_gflops(o->dtype);
    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", &tm);
    int cached = 0;
    if (rank == 0 && have_path && *gflops > 0) {
        if (!cache) cache = cJSON_CreateObject();
        cJSON_DeleteItemFromObjectCaseSensitive(cache, dt);
        cJSON *ne = cJSON_AddObjectToObject(cache, dt);
        cJSON_AddNumberToObject(ne, "gflops", *gflops);
        cJSON_AddStringToObject(ne, "measured", stamp);
        cJSON_AddStringToObject(ne, "source", "zaya train's start-up measurement (oneDNN matmul)");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path);
        parent_dir(dir);
        cached = zaya_mkdir_p(dir) == ZAYA_OK && zaya_json_write_file(path, cache, 1) == ZAYA_OK;
        if (!cached) ZAYA_WARN("could not cache the matmul peak in %s: %s", path, zaya_error_message());
    }
    cJSON_Delete(cache);
    snprintf(source, cap, "measured at start-up, %s: moves with the machine's load; %s%s; `zaya bench all` and "
             "--profile give a stable one", stamp, cached ? "cached for later runs in " : "not cached", cached ? path : "");
    return ZAYA_OK;
}

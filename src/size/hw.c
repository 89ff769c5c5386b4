/* Hardware profiles: built-in GPUs from public specifications and this machine's profile.json as written
 * by `zaya bench all`. The efficiency constants of the built-ins (best GEMM fraction of peak, attention
 * kernel fraction, achievable HBM fraction, launch overhead) are stated assumptions, not measurements;
 * a measured profile replaces them with its own tables. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/json.h"
#include "zaya/size.h"

static void gpu_common(zaya_size_hw *h, const char *name) {
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, "%s", name);
    snprintf(h->source, sizeof h->source, "built-in (public spec)");
    h->is_gpu = 1;
    h->tiles_per_cu = 1;
    h->tile_k = 64;
    h->align = 128;
    h->mem_eff = 0.80;
    h->ranks_per_node = 8;
    h->inter_bw = 400e9 / 8; /* one 400 Gb/s NIC per GPU */
    h->link_latency_s = 5e-6;
    h->act_bf16 = 1;
}

static void hw_mi300x(zaya_size_hw *h) {
    gpu_common(h, "mi300x");
    h->compute_units = 304;
    h->tile_m = 256; /* large bf16 macro tiles of hipBLASLt; 304 of them form one wave */
    h->tile_n = 128;
    h->peak_bf16 = 1307.4e12;
    h->peak_f32 = 163.4e12;
    h->gemm_eff_max = 0.70;
    h->attn_eff = 0.40;
    h->mem_bw = 5.3e12;
    h->mem_bytes = 192e9;
    h->launch_s = 4e-6;
    h->intra_bw = 7 * 64e9; /* fully connected xGMI mesh: 7 links x 64 GB/s per direction */
}

static void hw_hopper(zaya_size_hw *h, const char *name, double bw, double cap) {
    gpu_common(h, name);
    h->compute_units = 132;
    h->tile_m = 128; /* CUTLASS/cuBLAS 128x256 bf16 tiles, one CTA per SM */
    h->tile_n = 256;
    h->peak_bf16 = 989.4e12;
    h->peak_f32 = 66.9e12;
    h->gemm_eff_max = 0.75;
    h->attn_eff = 0.55;
    h->mem_bw = bw;
    h->mem_bytes = cap;
    h->launch_s = 3e-6;
    h->intra_bw = 450e9; /* NVLink 4: 900 GB/s bidirectional */
}

void zaya_size_hw_free(zaya_size_hw *hw) {
    free(hw->gemm);
    hw->gemm = NULL;
    for (int c = 0; c < ZAYA_SIZE_COLL_N; c++) {
        free(hw->coll[c]);
        hw->coll[c] = NULL;
    }
}

static zaya_status pos_num(const cJSON *o, const char *key, double *out) {
    ZAYA_TRY(zaya_json_get_f64(o, key, out, 1));
    if (!(*out > 0)) return zaya_error_set(ZAYA_EINVAL, "key '%s' must be positive (got %g)", key, *out);
    return ZAYA_OK;
}

static zaya_status read_gemm(const cJSON *arr, zaya_size_hw *hw) {
    if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "key 'gemm' must be a list");
    int n = cJSON_GetArraySize(arr);
    hw->gemm = calloc((size_t)(n > 0 ? n : 1), sizeof *hw->gemm);
    if (!hw->gemm) return zaya_error_set(ZAYA_ENOMEM, "gemm table of %d entries", n);
    const cJSON *e;
    int i = 0;
    cJSON_ArrayForEach(e, arr) {
        zaya_size_gemm_point *g = &hw->gemm[i];
        const char *dt = NULL;
        zaya_status s = zaya_json_get_str(e, "dtype", &dt, 1);
        if (s == ZAYA_OK && strcmp(dt, "bf16") && strcmp(dt, "f32"))
            s = zaya_error_set(ZAYA_EINVAL, "dtype '%s' is neither 'f32' nor 'bf16'", dt);
        if (s == ZAYA_OK) s = zaya_json_get_i64(e, "m", &g->m, 1);
        if (s == ZAYA_OK) s = zaya_json_get_i64(e, "n", &g->n, 1);
        if (s == ZAYA_OK) s = zaya_json_get_i64(e, "k", &g->k, 1);
        if (s == ZAYA_OK && (g->m <= 0 || g->n <= 0 || g->k <= 0))
            s = zaya_error_set(ZAYA_EINVAL, "m, n, k must be positive");
        if (s == ZAYA_OK) s = pos_num(e, "gflops", &g->gflops);
        if (s != ZAYA_OK) return zaya_error_context(s, "gemm[%d]", i);
        g->bf16 = !strcmp(dt, "bf16");
        i++;
    }
    hw->ngemm = i;
    return ZAYA_OK;
}

static zaya_status read_coll(const cJSON *obj, zaya_size_hw *hw) {
    /* The profile writer (docs/profile-format.md) names them as `zaya bench coll` does; the
     * underscored spellings are accepted too. */
    static const char *names[ZAYA_SIZE_COLL_N] = {"allreduce", "reducescatter", "allgather", "broadcast"};
    static const char *alias[ZAYA_SIZE_COLL_N] = {"all_reduce", "reduce_scatter", "all_gather", "bcast"};
    if (!cJSON_IsObject(obj)) return zaya_error_set(ZAYA_EFORMAT, "key 'collectives' must be an object");
    for (int c = 0; c < ZAYA_SIZE_COLL_N; c++) {
        const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, names[c]);
        if (!arr) arr = cJSON_GetObjectItemCaseSensitive(obj, alias[c]);
        if (!arr || cJSON_IsNull(arr)) continue;
        if (!cJSON_IsArray(arr)) return zaya_error_set(ZAYA_EFORMAT, "collectives.%s must be a list", names[c]);
        int n = cJSON_GetArraySize(arr);
        hw->coll[c] = calloc((size_t)(n > 0 ? n : 1), sizeof(zaya_size_coll_point));
        if (!hw->coll[c]) return zaya_error_set(ZAYA_ENOMEM, "collectives.%s", names[c]);
        const cJSON *e;
        int i = 0;
        cJSON_ArrayForEach(e, arr) {
            zaya_size_coll_point *p = &hw->coll[c][i];
            int64_t ranks = 0;
            double bytes = 0, algbw = 0, busbw = 0;
            zaya_status s = zaya_json_get_i64(e, "ranks", &ranks, 1);
            if (s == ZAYA_OK && ranks < 1) s = zaya_error_set(ZAYA_EINVAL, "key 'ranks' must be >= 1");
            if (s == ZAYA_OK) s = zaya_json_get_f64(e, "bytes", &bytes, 1);
            if (s == ZAYA_OK && bytes < 0) s = zaya_error_set(ZAYA_EINVAL, "key 'bytes' must be >= 0");
            if (s == ZAYA_OK) s = pos_num(e, "time_us", &p->time_us);
            if (s == ZAYA_OK) s = zaya_json_get_f64(e, "algbw_GBps", &algbw, 1);
            if (s == ZAYA_OK) s = zaya_json_get_f64(e, "busbw_GBps", &busbw, 1);
            if (s != ZAYA_OK) return zaya_error_context(s, "collectives.%s[%d]", names[c], i);
            p->ranks = (int)ranks;
            p->bytes = bytes;
            i++;
        }
        hw->ncoll[c] = i;
    }
    return ZAYA_OK;
}

static zaya_status read_profile(const cJSON *root, zaya_size_hw *hw) {
    const char *fmt = NULL;
    int64_t version = 0;
    ZAYA_TRY(zaya_json_get_str(root, "format", &fmt, 1));
    if (strcmp(fmt, "zaya-profile")) return zaya_error_set(ZAYA_EFORMAT, "format '%s' is not 'zaya-profile'", fmt);
    ZAYA_TRY(zaya_json_get_i64(root, "version", &version, 1));
    if (version != 1) return zaya_error_set(ZAYA_EUNSUPPORTED, "profile version %lld (this build reads version 1)", (long long)version);
    const cJSON *machine = cJSON_GetObjectItemCaseSensitive(root, "machine");
    if (!cJSON_IsObject(machine)) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'machine'");
    const char *mname = NULL;
    ZAYA_TRY(zaya_json_get_str(machine, "hostname", &mname, 0));
    ZAYA_TRY(zaya_json_get_str(machine, "name", &mname, 0));
    snprintf(hw->name, sizeof hw->name, "%s", mname ? mname : "host");
    static const char *core_keys[] = {"cores", "physical_cores", "threads", "logical_cpus"};
    for (int i = 0; i < 4 && hw->compute_units <= 0; i++) {
        int64_t v = 0;
        ZAYA_TRY(zaya_json_get_i64(machine, core_keys[i], &v, 0));
        hw->compute_units = (int)v;
    }
    if (hw->compute_units <= 0) hw->compute_units = 1;
    ZAYA_TRY(zaya_json_get_f64(machine, "mem_bytes", &hw->mem_bytes, 0));
    int64_t rpn = 0;
    ZAYA_TRY(zaya_json_get_i64(machine, "ranks_per_node", &rpn, 0));
    hw->ranks_per_node = rpn > 0 ? (int)rpn : 1;

    const cJSON *gemm = cJSON_GetObjectItemCaseSensitive(root, "gemm");
    if (!gemm) return zaya_error_set(ZAYA_EFORMAT, "missing required key 'gemm'");
    ZAYA_TRY(read_gemm(gemm, hw));
    const cJSON *peak = cJSON_GetObjectItemCaseSensitive(root, "gemm_peak_gflops");
    if (!cJSON_IsObject(peak)) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'gemm_peak_gflops'");
    double pf = 0, pb = 0;
    ZAYA_TRY(zaya_json_get_f64(peak, "f32", &pf, 1));
    ZAYA_TRY(zaya_json_get_f64(peak, "bf16", &pb, 1));
    if (pf < 0 || pb < 0 || (pf == 0 && pb == 0))
        return zaya_error_set(ZAYA_EINVAL, "gemm_peak_gflops: f32 and bf16 must be >= 0 and not both 0");
    hw->peak_f32 = pf * 1e9;
    hw->peak_bf16 = pb * 1e9;
    int has_bf16 = 0, has_f32 = 0;
    for (int i = 0; i < hw->ngemm; i++) {
        if (hw->gemm[i].bf16) has_bf16 = 1;
        else has_f32 = 1;
    }
    /* The model computes in the dtype the table measured best. */
    hw->act_bf16 = has_bf16 && (!has_f32 || pb >= pf);
    if ((hw->act_bf16 ? pb : pf) <= 0)
        return zaya_error_set(ZAYA_EINVAL, "gemm_peak_gflops.%s must be positive", hw->act_bf16 ? "bf16" : "f32");

    const cJSON *mem = cJSON_GetObjectItemCaseSensitive(root, "memory");
    if (!cJSON_IsObject(mem)) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'memory'");
    static const char *mkeys[] = {"copy_GBps", "scale_GBps", "add_GBps", "triad_GBps", "read_GBps", "write_GBps"};
    double mv[6];
    for (int i = 0; i < 6; i++) {
        zaya_status s = pos_num(mem, mkeys[i], &mv[i]);
        if (s != ZAYA_OK) return zaya_error_context(s, "memory");
    }
    hw->mem_bw = mv[3] * 1e9; /* triad: two reads and a write, like most elementwise ops */
    hw->mem_eff = 1.0;
    const cJSON *coll = cJSON_GetObjectItemCaseSensitive(root, "collectives");
    if (!coll) return zaya_error_set(ZAYA_EFORMAT, "missing required object 'collectives'");
    ZAYA_TRY(read_coll(coll, hw));

    hw->is_gpu = 0;
    hw->tiles_per_cu = 1;
    hw->tile_m = hw->tile_n = 64; /* CPU register/cache blocking granularity */
    hw->tile_k = 64;
    hw->align = 64;
    hw->gemm_eff_max = 1.0; /* the table is the achieved rate */
    hw->attn_eff = 0.5;     /* relative to the measured GEMM rate at the attention shape */
    hw->launch_s = 2e-6;    /* one OpenMP parallel region */
    hw->intra_bw = hw->inter_bw = 0;
    hw->link_latency_s = 0;
    return ZAYA_OK;
}

zaya_status zaya_size_hw_from_profile_json(const cJSON *root, const char *what, zaya_size_hw *hw) {
    memset(hw, 0, sizeof *hw);
    zaya_status s = read_profile(root, hw);
    if (s != ZAYA_OK) {
        zaya_size_hw_free(hw);
        return zaya_error_context(s, "%s", what);
    }
    snprintf(hw->source, sizeof hw->source, "%s", what);
    return ZAYA_OK;
}

static zaya_status load_profile(const char *path, zaya_size_hw *hw) {
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_file(path, &root));
    zaya_status s = zaya_size_hw_from_profile_json(root, path, hw);
    cJSON_Delete(root);
    return s;
}

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

zaya_status zaya_size_hw_get(const char *name, const char *profile_path, zaya_size_hw *hw) {
    memset(hw, 0, sizeof *hw);
    if (!name || !*name) return zaya_error_set(ZAYA_EINVAL, "no hardware profile given (use --hw mi300x|h100|h200|host)");
    if (!strcmp(name, "mi300x")) { hw_mi300x(hw); return ZAYA_OK; }
    if (!strcmp(name, "h100")) { hw_hopper(hw, "h100", 3.35e12, 80e9); return ZAYA_OK; }
    if (!strcmp(name, "h200")) { hw_hopper(hw, "h200", 4.8e12, 141e9); return ZAYA_OK; }
    if (ends_with(name, ".json")) return load_profile(name, hw);
    if (strcmp(name, "host"))
        return zaya_error_set(ZAYA_EINVAL, "unknown hardware profile '%s' (use mi300x, h100, h200, host, or a profile.json path)", name);
    const char *path = profile_path;
    if (!path || !*path) path = getenv("ZAYA_PROFILE");
    if (!path || !*path) path = "profile.json";
    FILE *f = fopen(path, "rb");
    if (!f)
        return zaya_error_set(ZAYA_EIO,
                              "no machine profile for --hw host: '%s' not found; run `zaya bench all -o DIR` and pass "
                              "--profile DIR/profile.json (or set ZAYA_PROFILE)", path);
    fclose(f);
    return load_profile(path, hw);
}

zaya_status zaya_size_hw_set_dtype(zaya_size_hw *hw, const char *dtype) {
    int bf16;
    if (!strcmp(dtype, "bf16")) bf16 = 1;
    else if (!strcmp(dtype, "f32")) bf16 = 0;
    else return zaya_error_set(ZAYA_EINVAL, "dtype '%s' (use bf16 or f32)", dtype);
    if ((bf16 ? hw->peak_bf16 : hw->peak_f32) <= 0)
        return zaya_error_set(ZAYA_EINVAL, "profile '%s' has no %s GEMM peak", hw->name, dtype);
    hw->act_bf16 = bf16;
    return ZAYA_OK;
}

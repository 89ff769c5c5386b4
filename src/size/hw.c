/* Hardware profiles: built-in GPUs from public specifications and this machine's profile.json as written
 * by `zaya bench all` (read by the profile module, zaya/profile.h). The efficiency constants of the built-ins (best GEMM fraction of peak, attention
 * kernel fraction, achievable HBM fraction, launch overhead) are stated assumptions, not measurements;
 * a measured profile replaces them with its own tables. */
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "zaya/profile.h"
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

/* A measured profile (read by the profile module, zaya/profile.h) as the model's hardware. */
static zaya_status from_profile(const zaya_profile *p, zaya_size_hw *hw) {
    snprintf(hw->name, sizeof hw->name, "%.63s", p->machine.hostname[0] ? p->machine.hostname : "host");
    hw->compute_units = p->machine.cores > 0 ? p->machine.cores : p->machine.threads > 0 ? p->machine.threads : 1;
    hw->mem_bytes = p->machine.mem_bytes;
    hw->ranks_per_node = p->machine.ranks_per_node > 0 ? p->machine.ranks_per_node : 1;

    hw->gemm = calloc((size_t)(p->ngemm > 0 ? p->ngemm : 1), sizeof *hw->gemm);
    if (!hw->gemm) return zaya_error_set(ZAYA_ENOMEM, "gemm table of %d entries", p->ngemm);
    int has_bf16 = 0, has_f32 = 0;
    for (int i = 0; i < p->ngemm; i++) {
        const zaya_profile_gemm *g = &p->gemm[i];
        hw->gemm[i] = (zaya_size_gemm_point){.m = g->m, .n = g->n, .k = g->k, .gflops = g->gflops, .bf16 = g->bf16};
        if (g->bf16) has_bf16 = 1;
        else has_f32 = 1;
    }
    hw->ngemm = p->ngemm;
    double pf = p->peak_gflops[0], pb = p->peak_gflops[1];
    hw->peak_f32 = pf * 1e9;
    hw->peak_bf16 = pb * 1e9;
    /* The model computes in the dtype the table measured best. */
    hw->act_bf16 = has_bf16 && (!has_f32 || pb >= pf);
    if ((hw->act_bf16 ? pb : pf) <= 0)
        return zaya_error_set(ZAYA_EINVAL, "gemm_peak_gflops.%s must be positive", hw->act_bf16 ? "bf16" : "f32");
    hw->mem_bw = p->memory.best_GBps[ZAYA_MEM_TRIAD] * 1e9; /* two reads and a write, like most elementwise ops */
    hw->mem_eff = 1.0;

    /* The collectives the step model uses, all measured rows of each. */
    static const char *names[ZAYA_SIZE_COLL_N] = {"allreduce", "reducescatter", "allgather", "broadcast"};
    for (int c = 0; c < ZAYA_SIZE_COLL_N; c++) {
        int n = 0;
        for (int i = 0; i < p->collectives.n; i++)
            if (!strcmp(zaya_coll_name(p->collectives.rows[i].coll), names[c])) n++;
        if (!n) continue;
        hw->coll[c] = calloc((size_t)n, sizeof(zaya_size_coll_point));
        if (!hw->coll[c]) return zaya_error_set(ZAYA_ENOMEM, "collectives.%s", names[c]);
        for (int i = 0; i < p->collectives.n; i++) {
            const zaya_coll_result *r = &p->collectives.rows[i];
            if (strcmp(zaya_coll_name(r->coll), names[c])) continue;
            hw->coll[c][hw->ncoll[c]++] =
                (zaya_size_coll_point){.ranks = r->nranks, .bytes = (double)r->bytes, .time_us = r->oop.time_us};
        }
    }

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

zaya_status zaya_size_hw_from_profile(const zaya_profile *p, const char *what, zaya_size_hw *hw) {
    memset(hw, 0, sizeof *hw);
    zaya_status s = from_profile(p, hw);
    if (s != ZAYA_OK) {
        zaya_size_hw_free(hw);
        return zaya_error_context(s, "%s", what);
    }
    snprintf(hw->source, sizeof hw->source, "%s", what);
    return ZAYA_OK;
}

zaya_status zaya_size_hw_from_profile_json(const cJSON *root, const char *what, zaya_size_hw *hw) {
    memset(hw, 0, sizeof *hw);
    zaya_profile p;
    ZAYA_TRY(zaya_profile_from_json(root, what, &p));
    zaya_status s = zaya_size_hw_from_profile(&p, what, hw);
    zaya_profile_free(&p);
    return s;
}

static zaya_status load_profile(const char *path, zaya_size_hw *hw) {
    zaya_profile p;
    ZAYA_TRY(zaya_profile_read_file(path, &p));
    zaya_status s = zaya_size_hw_from_profile(&p, path, hw);
    zaya_profile_free(&p);
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
    struct stat sb;
    if (stat(path, &sb) != 0)
        return zaya_error_set(ZAYA_EIO,
                              "no machine profile for --hw host: '%s' not found; run `zaya bench all -o DIR` and pass "
                              "--profile DIR/profile.json (or set ZAYA_PROFILE)", path);
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

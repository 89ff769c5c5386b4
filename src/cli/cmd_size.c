/* `zaya size info|check|predict|search`: calculators, sizing rules, step-time / latency prediction and
 * the MoE shape search over a hardware profile. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/plot.h"
#include "zaya/size.h"

static int one_config(const zaya_cmd_spec *spec, const zaya_args *args, const char **path) {
    if (args->npos != 1) return zaya_flags_usage_error(spec, "expected one CONFIG (an HF config.json), got %d arguments", args->npos);
    *path = args->pos[0];
    return -1;
}

/* Largest --seq any command accepts: beyond it every figure is an extrapolation of nothing. */
#define SEQ_MAX ((int64_t)1 << 26)

static double gib(double b) { return b / (1024.0 * 1024 * 1024); }

/* --seq against the config: past max_position_embeddings the model was never trained; warn. */
static void check_seq(const char *cmd, const zaya_size_arch *a, int64_t seq) {
    if (a->max_seq > 0 && seq > a->max_seq)
        fprintf(stderr, "zaya size %s: warning: --seq %lld exceeds the config's max_position_embeddings %lld\n", cmd,
                (long long)seq, (long long)a->max_seq);
}

/* Memory layout flags shared by info, check and predict. */
typedef struct mem_flags {
    int dp, zero, recompute;
    int64_t micro_batch;
    const char *grad, *master, *optimizer;
} mem_flags;

static zaya_status mem_from_flags(const mem_flags *m, int64_t seq, zaya_size_mem_opts *o) {
    zaya_size_mem_opts_default(o);
    if (m->dp <= 0) return zaya_error_set(ZAYA_EINVAL, "--dp must be positive");
    if (m->zero < 0 || m->zero > 3) return zaya_error_set(ZAYA_EINVAL, "--zero must be 0..3");
    if (m->micro_batch <= 0 || m->micro_batch > (1 << 20)) return zaya_error_set(ZAYA_EINVAL, "--micro-batch/--batch must be 1..1048576");
    o->dp = m->dp;
    o->zero_stage = m->zero;
    o->micro_batch = m->micro_batch;
    o->recompute = m->recompute;
    o->seq = seq;
    ZAYA_TRY(zaya_size_mem_parse_dtype(m->grad, 0, &o->grad_bytes));
    ZAYA_TRY(zaya_size_mem_parse_dtype(m->master, 1, &o->master_bytes));
    if (!strcmp(m->optimizer, "adamw")) o->optimizer = ZAYA_SIZE_OPT_ADAMW;
    else if (!strcmp(m->optimizer, "muon")) o->optimizer = ZAYA_SIZE_OPT_MUON;
    else return zaya_error_set(ZAYA_EINVAL, "--optimizer '%s' (use adamw or muon)", m->optimizer);
    return ZAYA_OK;
}

/* Prints the fit verdict of the training layout; returns 1 when it fits. */
static int print_train_fit(const zaya_size_arch *a, const zaya_size_mem_opts *mo, const zaya_size_hw *hw, FILE *f, cJSON *j) {
    zaya_size_fit fit;
    zaya_size_train_fit(a, mo, hw->mem_bytes, &fit);
    if (!(hw->mem_bytes > 0)) {
        fprintf(f, "training memory: %.1f GiB per rank (the profile states no device memory: not checked)\n", gib(fit.need));
    } else if (fit.fits) {
        fprintf(f, "training memory: %.1f GiB per rank of %.1f GiB: fits (largest term: %s %.1f GiB)\n", gib(fit.need),
                gib(fit.cap), fit.largest, gib(fit.largest_bytes));
    } else {
        fprintf(f, "training memory: DOES NOT FIT: %.1f GiB per rank > %.1f GiB on %s (largest term: %s %.1f GiB); %s\n",
                gib(fit.need), gib(fit.cap), hw->name, fit.largest, gib(fit.largest_bytes), fit.advice);
    }
    if (j) {
        cJSON *m = cJSON_AddObjectToObject(j, "train_memory");
        cJSON_AddNumberToObject(m, "need_bytes", fit.need);
        cJSON_AddNumberToObject(m, "device_bytes", fit.cap);
        cJSON_AddBoolToObject(m, "fits", fit.fits);
        cJSON_AddStringToObject(m, "largest_term", fit.largest);
        cJSON_AddStringToObject(m, "advice", fit.advice);
        cJSON_AddNumberToObject(m, "bytes_per_param", zaya_size_mem_bytes_per_param(mo));
    }
    return fit.fits;
}

#define MEM_FLAGS(m)                                                                                                      \
    {"dp", 0, ZAYA_FLAG_INT, &(m).dp, "N", "data-parallel degree (default 1)"},                                           \
        {"zero", 0, ZAYA_FLAG_INT, &(m).zero, "S", "ZeRO stage 0..3 (default 1)"},                                        \
        {"grad-dtype", 0, ZAYA_FLAG_STRING, &(m).grad, "fp32|bf16", "gradient dtype (default fp32: 18 B/param; bf16: the ZeRO paper's 16)"}, \
        {"master-dtype", 0, ZAYA_FLAG_STRING, &(m).master, "fp32|none", "master weight copy (default fp32)"},            \
        {"optimizer", 0, ZAYA_FLAG_STRING, &(m).optimizer, "NAME", "adamw | muon (default adamw)"},                       \
        {"recompute", 0, ZAYA_FLAG_BOOL, &(m).recompute, NULL, "full activation recomputation"}

static zaya_status write_json(const char *dir, const char *name, cJSON *root, char *path, size_t cap) {
    ZAYA_TRY(zaya_mkdir_p(dir));
    ZAYA_TRY(zaya_path_join(path, cap, dir, name));
    return zaya_json_write_file(path, root, 1);
}

/* ------------------------------------------------------------------ info */

int zaya_cmd_size_info(int argc, char **argv) {
    int64_t seq = 4096;
    const char *out = NULL;
    mem_flags mf = {1, 1, 0, 1, "fp32", "fp32", "adamw"};
    const zaya_flag flags[] = {
        {"seq", 0, ZAYA_FLAG_I64, &seq, "T", "sequence length for the attention FLOPs and memory (default 4096)"},
        {"micro-batch", 0, ZAYA_FLAG_I64, &mf.micro_batch, "B", "sequences per rank for the activation memory (default 1)"},
        MEM_FLAGS(mf),
        ZAYA_FLAG_OUTDIR(&out, "none: also write info.json there"),
    };
    const zaya_cmd_spec spec = {"size info", "exact parameter table, FLOPs, KV cache and training memory of a config",
                                "[options] CONFIG", "CONFIG is an HF config.json; the families are listed in docs/size.md.",
                                flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const char *path = NULL;
    if ((rc = one_config(&spec, &args, &path)) >= 0) return rc;
    if (seq <= 0 || seq > SEQ_MAX) return zaya_flags_usage_error(&spec, "--seq must be 1..%lld", (long long)SEQ_MAX);
    zaya_size_mem_opts mo;
    zaya_status s = mem_from_flags(&mf, seq, &mo);
    if (s != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    zaya_size_arch a;
    s = zaya_size_arch_load(path, &a);
    if (s != ZAYA_OK) return zaya_cli_error("size info", NULL);
    check_seq("info", &a, seq);
    zaya_size_print_info_opts(&a, &mo, stdout);
    if (out) {
        cJSON *j = zaya_size_info_json(&a, seq);
        char p[1024];
        s = write_json(out, "info.json", j, p, sizeof p);
        cJSON_Delete(j);
        if (s != ZAYA_OK) return zaya_cli_error("size info", NULL);
        printf("\nwrote %s\n", p);
    }
    return 0;
}

/* ------------------------------------------------------------------ check */

int zaya_cmd_size_check(int argc, char **argv) {
    const char *hwname = NULL, *profile = NULL, *out = NULL;
    int64_t batch = 1, seq = 4096;
    int tp = 1;
    mem_flags mf = {1, 1, 0, 1, "fp32", "fp32", "adamw"};
    const zaya_flag flags[] = {
        {"hw", 0, ZAYA_FLAG_STRING, &hwname, "PROFILE", "mi300x | h100 | h200 | host | path/to/profile.json (required)"},
        {"profile", 0, ZAYA_FLAG_STRING, &profile, "FILE", "profile.json for --hw host (default $ZAYA_PROFILE or ./profile.json)"},
        {"batch", 0, ZAYA_FLAG_I64, &batch, "B", "micro-batch in sequences per rank (default 1)"},
        {"seq", 0, ZAYA_FLAG_I64, &seq, "T", "sequence length (default 4096)"},
        {"tp", 0, ZAYA_FLAG_INT, &tp, "N", "intended tensor-parallel degree for the KV-head rule (default 1)"},
        MEM_FLAGS(mf),
        ZAYA_FLAG_OUTDIR(&out, "none: also write check.json there"),
    };
    const zaya_cmd_spec spec = {"size check", "sizing rules and per-GEMM efficiency of a config on a hardware profile",
                                "--hw PROFILE [options] CONFIG", NULL, flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const char *path = NULL;
    if ((rc = one_config(&spec, &args, &path)) >= 0) return rc;
    if (!hwname) return zaya_flags_usage_error(&spec, "--hw is required");
    if (batch <= 0 || tp <= 0) return zaya_flags_usage_error(&spec, "--batch and --tp must be positive");
    if (seq <= 0 || seq > SEQ_MAX) return zaya_flags_usage_error(&spec, "--seq must be 1..%lld", (long long)SEQ_MAX);
    mf.micro_batch = batch;
    zaya_size_mem_opts mo;
    zaya_status s = mem_from_flags(&mf, seq, &mo);
    if (s != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    zaya_size_arch a;
    zaya_size_hw hw;
    s = zaya_size_arch_load(path, &a);
    if (s != ZAYA_OK) return zaya_cli_error("size check", NULL);
    check_seq("check", &a, seq);
    if ((s = zaya_size_hw_get(hwname, profile, &hw)) != ZAYA_OK) return zaya_cli_error("size check", NULL);
    zaya_size_run run = {batch, seq, tp};
    printf("%s on %s (%s): %d %s, tile %dx%dx%d, wave %d tiles, align %d; batch %lld x seq %lld, TP %d\n\n", path, hw.name,
           hw.source, hw.compute_units, hw.is_gpu ? "compute units" : "cores", hw.tile_m, hw.tile_n, hw.tile_k,
           hw.compute_units * hw.tiles_per_cu, hw.align, (long long)batch, (long long)seq, tp);
    printf("rules:\n");
    for (int i = 0; i < zaya_size_nrules; i++)
        printf("  %-12s %s\n  %-12s   why: %s\n", zaya_size_rules[i].id, zaya_size_rules[i].statement, "",
               zaya_size_rules[i].rationale);
    zaya_size_rule_hit hits[256];
    int nh = zaya_size_check_rules(&a, &hw, &run, hits, 256);
    int shown = nh < 256 ? nh : 256, nviol = 0;
    printf("\nfindings (%d):\n", nh);
    for (int i = 0; i < shown; i++) {
        nviol += hits[i].severity >= 2;
        printf("  [%s] %-12s %s: %s\n  %-21s nearest compliant: %s\n", hits[i].severity >= 2 ? "VIOLATION" : "advice",
               hits[i].rule_id, hits[i].what, hits[i].detail, "", hits[i].fix[0] ? hits[i].fix : "-");
    }
    zaya_size_gemm_shape g[ZAYA_SIZE_MAX_GEMMS];
    int ng = zaya_size_list_gemms(&a, &run, g, ZAYA_SIZE_MAX_GEMMS);
    printf("\nper GEMM (one layer's launch; x = launches per step):\n");
    printf("  %-24s %-5s %7s %7s %7s %4s %4s %5s %7s %6s %6s %6s %7s %s\n", "gemm", "pass", "M", "N", "K", "grp", "x", "splitK", "tiles",
           "tile%", "wave%", "eff%", "bound", "ms/step  rules violated");
    cJSON *jg = cJSON_CreateArray();
    double total_t = 0, total_f = 0;
    for (int i = 0; i < ng; i++) {
        zaya_size_gemm_est e;
        zaya_size_gemm_estimate_grouped(&hw, g[i].groups, g[i].m, g[i].n, g[i].k, &e);
        double t = e.time_s * (double)g[i].count;
        total_t += t;
        total_f += e.flops * (double)g[i].count;
        char prefix[64], viol[64] = "";
        snprintf(prefix, sizeof prefix, "%.39s %.5s (", g[i].name, g[i].pass);
        for (int h = 0; h < shown; h++)
            if (!strncmp(hits[h].what, prefix, strlen(prefix)) && strlen(viol) + strlen(hits[h].rule_id) + 2 < sizeof viol)
                snprintf(viol + strlen(viol), sizeof viol - strlen(viol), "%s%s", viol[0] ? "," : "", hits[h].rule_id);
        printf("  %-24s %-5s %7lld %7lld %7lld %4lld %4lld %5lld %7lld %6.1f %6.1f %6.1f %7s %10.3f  %s\n", g[i].name, g[i].pass,
               (long long)g[i].m, (long long)g[i].n, (long long)g[i].k, (long long)g[i].groups, (long long)g[i].count,
               (long long)e.split, (long long)e.tiles, 100 * e.tile_eff * e.k_eff, 100 * e.wave_eff, 100 * e.eff,
               e.mem_bound ? "memory" : "compute", 1e3 * t, viol[0] ? viol : "-");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", g[i].name);
        cJSON_AddStringToObject(o, "pass", g[i].pass);
        cJSON_AddNumberToObject(o, "m", (double)g[i].m);
        cJSON_AddNumberToObject(o, "n", (double)g[i].n);
        cJSON_AddNumberToObject(o, "k", (double)g[i].k);
        cJSON_AddNumberToObject(o, "groups", (double)g[i].groups);
        cJSON_AddNumberToObject(o, "count", (double)g[i].count);
        cJSON_AddNumberToObject(o, "efficiency", e.eff);
        cJSON_AddNumberToObject(o, "tile_eff", e.tile_eff * e.k_eff);
        cJSON_AddNumberToObject(o, "wave_eff", e.wave_eff);
        cJSON_AddNumberToObject(o, "time_s", t);
        cJSON_AddItemToArray(jg, o);
    }
    double peak = hw.act_bf16 ? hw.peak_bf16 : hw.peak_f32;
    printf("\nall GEMMs of one step: %.1f ms, %.1f%% of peak (FLOP-weighted); %d violation(s)\n", 1e3 * total_t,
           100 * total_f / (total_t * peak), nviol);
    printf("\nmemory (DP %d, ZeRO-%d, %s%s, %.0f B/param):\n  ", mo.dp, mo.zero_stage, mf.optimizer,
           mo.recompute ? ", recompute" : "", zaya_size_mem_bytes_per_param(&mo));
    cJSON *jm = cJSON_CreateObject();
    print_train_fit(&a, &mo, &hw, stdout, jm);
    if (out) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddItemToObject(root, "memory", jm);
        jm = NULL;
        cJSON_AddStringToObject(root, "config", path);
        cJSON_AddStringToObject(root, "hw", hw.name);
        cJSON *jh = cJSON_AddArrayToObject(root, "findings");
        for (int i = 0; i < shown; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddStringToObject(o, "rule", hits[i].rule_id);
            cJSON_AddStringToObject(o, "severity", hits[i].severity >= 2 ? "violation" : "advice");
            cJSON_AddStringToObject(o, "what", hits[i].what);
            cJSON_AddStringToObject(o, "detail", hits[i].detail);
            cJSON_AddStringToObject(o, "nearest", hits[i].fix);
            cJSON_AddItemToArray(jh, o);
        }
        cJSON_AddItemToObject(root, "gemms", jg);
        jg = NULL;
        char p[1024];
        s = write_json(out, "check.json", root, p, sizeof p);
        cJSON_Delete(root);
        if (s != ZAYA_OK) { zaya_size_hw_free(&hw); return zaya_cli_error("size check", NULL); }
        printf("wrote %s\n", p);
    }
    cJSON_Delete(jg);
    cJSON_Delete(jm);
    zaya_size_hw_free(&hw);
    return 0;
}

/* ------------------------------------------------------------------ predict */

int zaya_cmd_size_predict(int argc, char **argv) {
    const char *hwname = NULL, *profile = NULL, *out = NULL, *dtype = NULL;
    int64_t batch = 1, seq = 4096, max_batch = 64;
    mem_flags mf = {1, 1, 0, 1, "fp32", "fp32", "adamw"};
    double overlap = 0;
    const zaya_flag flags[] = {
        {"hw", 0, ZAYA_FLAG_STRING, &hwname, "PROFILE", "mi300x | h100 | h200 | host | path/to/profile.json (required)"},
        {"profile", 0, ZAYA_FLAG_STRING, &profile, "FILE", "profile.json for --hw host"},
        {"batch", 0, ZAYA_FLAG_I64, &batch, "B", "training micro-batch in sequences per rank (default 1)"},
        {"seq", 0, ZAYA_FLAG_I64, &seq, "T", "sequence length / decode context (default 4096)"},
        MEM_FLAGS(mf),
        {"dtype", 0, ZAYA_FLAG_STRING, &dtype, "bf16|f32", "GEMM precision (default: bf16, the trainer's, where the profile has it)"},
        {"overlap", 0, ZAYA_FLAG_DOUBLE, &overlap, "F", "fraction of DP communication hidden behind backward (default 0)"},
        {"max-batch", 0, ZAYA_FLAG_I64, &max_batch, "N", "largest inference batch in the latency table (default 64)"},
        ZAYA_FLAG_OUTDIR(&out, "none: also write predict.json there"),
    };
    const zaya_cmd_spec spec = {"size predict", "training step time and inference latency of a config on a profile",
                                "--hw PROFILE [options] CONFIG", NULL, flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    const char *path = NULL;
    if ((rc = one_config(&spec, &args, &path)) >= 0) return rc;
    if (!hwname) return zaya_flags_usage_error(&spec, "--hw is required");
    if (batch <= 0 || max_batch <= 0 || max_batch > (1 << 20)) return zaya_flags_usage_error(&spec, "--batch and --max-batch must be positive (--max-batch at most 1048576)");
    if (seq <= 0 || seq > SEQ_MAX) return zaya_flags_usage_error(&spec, "--seq must be 1..%lld", (long long)SEQ_MAX);
    if (!(overlap >= 0 && overlap <= 1)) return zaya_flags_usage_error(&spec, "--overlap must be in [0, 1]");
    mf.micro_batch = batch;
    zaya_size_mem_opts mo;
    zaya_status s = mem_from_flags(&mf, seq, &mo);
    if (s != ZAYA_OK) return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    int dp = mo.dp, zero = mo.zero_stage, recompute = mo.recompute;
    const char *optname = mf.optimizer;
    zaya_size_step_opts so;
    zaya_size_step_opts_default(&so);
    so.optimizer = mo.optimizer;
    so.batch = batch;
    so.seq = seq;
    so.dp = dp;
    so.zero_stage = zero;
    so.recompute = recompute;
    so.overlap = overlap;
    so.grad_comm_bytes = mo.grad_bytes;
    zaya_size_arch a;
    zaya_size_hw hw;
    if ((s = zaya_size_arch_load(path, &a)) != ZAYA_OK) return zaya_cli_error("size predict", NULL);
    check_seq("predict", &a, seq);
    if ((s = zaya_size_hw_get(hwname, profile, &hw)) != ZAYA_OK) return zaya_cli_error("size predict", NULL);
    if (!dtype) dtype = hw.peak_bf16 > 0 ? "bf16" : "f32";
    zaya_size_step_pred p;
    if ((s = zaya_size_hw_set_dtype(&hw, dtype)) != ZAYA_OK || (s = zaya_size_predict_step(&a, &hw, &so, &p)) != ZAYA_OK) {
        zaya_size_hw_free(&hw);
        return zaya_cli_error("size predict", NULL);
    }
    cJSON *root = cJSON_CreateObject();
    printf("%s on %s (%s)\n", path, hw.name, hw.source);
    int fits = print_train_fit(&a, &mo, &hw, stdout, root);
    printf("training step%s: batch %lld x seq %lld per rank, DP %d, ZeRO-%d, %s, %s GEMMs%s\n",
           fits ? "" : " (only if it fitted; see above)", (long long)batch, (long long)seq, dp, zero, optname, dtype,
           recompute ? ", recompute" : "");
    printf("  %-28s %10.2f ms  (%.1f%% of peak)\n", "GEMMs (fwd+dgrad+wgrad)", 1e3 * p.gemm_s, 100 * p.gemm_eff);
    printf("  %-28s %10.2f ms\n", "attention", 1e3 * p.attn_s);
    printf("  %-28s %10.2f ms\n", "memory-bound ops", 1e3 * p.memop_s);
    printf("  %-28s %10.2f ms  (Newton-Schulz %.2f ms)\n", "optimizer step", 1e3 * p.optimizer_s, 1e3 * p.optimizer_ns_s);
    printf("  %-28s %10.2f ms  (exposed %.2f ms)\n", "DP communication", 1e3 * p.comm_s, 1e3 * p.comm_exposed_s);
    printf("  %-28s %10.2f ms\n", "step", 1e3 * p.step_s);
    printf("  tokens/s: %.0f per rank, %.0f global; MFU %.1f%%\n", p.tokens_per_s_rank, p.tokens_per_s_global, 100 * p.mfu);
    zaya_size_fit inf1;
    zaya_size_infer_fit(&a, 1, seq, hw.act_bf16 ? 2 : 4, hw.mem_bytes, &inf1);
    printf("\ninference at context %lld (%s weights, all experts resident: %.1f GiB at batch 1 of %.1f GiB%s):\n", (long long)seq,
           hw.act_bf16 ? "bf16" : "f32", gib(inf1.need), gib(hw.mem_bytes), hw.mem_bytes > 0 ? "" : " (unknown: not checked)");
    if (!inf1.fits) printf("  DOES NOT FIT on one %s: %s (largest term: %s %.1f GiB)\n", hw.name, inf1.advice, inf1.largest,
                          gib(inf1.largest_bytes));
    printf("  %6s %12s %14s %12s %12s %14s\n", "batch", "prefill ms", "decode ms/tok", "weights MB", "KV MB", "decode tok/s");
    cJSON *st = cJSON_AddObjectToObject(root, "step");
    cJSON_AddNumberToObject(st, "gemm_s", p.gemm_s);
    cJSON_AddNumberToObject(st, "attention_s", p.attn_s);
    cJSON_AddNumberToObject(st, "memory_ops_s", p.memop_s);
    cJSON_AddNumberToObject(st, "optimizer_s", p.optimizer_s);
    cJSON_AddNumberToObject(st, "newton_schulz_s", p.optimizer_ns_s);
    cJSON_AddStringToObject(st, "dtype", dtype);
    cJSON_AddNumberToObject(st, "comm_s", p.comm_s);
    cJSON_AddNumberToObject(st, "comm_exposed_s", p.comm_exposed_s);
    cJSON_AddNumberToObject(st, "step_s", p.step_s);
    cJSON_AddNumberToObject(st, "tokens_per_s_rank", p.tokens_per_s_rank);
    cJSON_AddNumberToObject(st, "mfu", p.mfu);
    cJSON *inf = cJSON_AddArrayToObject(root, "inference");
    for (int64_t b = 1; b <= max_batch; b *= 2) {
        zaya_size_infer_pred ip;
        zaya_size_predict_infer(&a, &hw, b, seq, &ip);
        zaya_size_fit fb;
        zaya_size_infer_fit(&a, b, seq, hw.act_bf16 ? 2 : 4, hw.mem_bytes, &fb);
        printf("  %6lld %12.2f %14.3f %12.1f %12.1f %14.0f%s\n", (long long)b, 1e3 * ip.prefill_s, 1e3 * ip.decode_s,
               ip.decode_weight_bytes / 1e6, ip.decode_kv_bytes / 1e6, ip.decode_tokens_per_s,
               fb.fits ? "" : "  does not fit");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "fits", fb.fits);
        cJSON_AddNumberToObject(o, "memory_bytes", fb.need);
        cJSON_AddNumberToObject(o, "batch", (double)b);
        cJSON_AddNumberToObject(o, "prefill_s", ip.prefill_s);
        cJSON_AddNumberToObject(o, "decode_s", ip.decode_s);
        cJSON_AddNumberToObject(o, "decode_tokens_per_s", ip.decode_tokens_per_s);
        cJSON_AddItemToArray(inf, o);
    }
    if (out) {
        char pth[1024];
        s = write_json(out, "predict.json", root, pth, sizeof pth);
        if (s != ZAYA_OK) { cJSON_Delete(root); zaya_size_hw_free(&hw); return zaya_cli_error("size predict", NULL); }
        printf("wrote %s\n", pth);
    }
    cJSON_Delete(root);
    zaya_size_hw_free(&hw);
    return 0;
}

/* ------------------------------------------------------------------ search */

static void plot_front(const char *dir, const zaya_size_search_result *r, const zaya_size_search_opts *o) {
    int nf = 0;
    for (int i = 0; i < r->n; i++) nf += r->c[i].pareto;
    double *x = malloc(sizeof(double) * (size_t)(2 * nf + 2)), *y = x ? x + nf + 1 : NULL;
    if (!x) return;
    int j = 0;
    for (int i = 0; i < r->n; i++)
        if (r->c[i].pareto) { x[j] = 1e3 * r->c[i].decode_s; y[j] = r->c[i].train_tok_s; j++; }
    zaya_plot_series s[2] = {{"Pareto front", x, y, nf}, {0}};
    int ns = 1;
    double rx = 0, ry = 0;
    if (o->ref_valid) {
        for (int i = 0; i < r->n; i++) {
            const zaya_size_candidate *c = &r->c[i];
            if (c->hidden == o->ref.hidden && c->experts == o->ref.experts && c->expert_ffn == o->ref.expert_ffn &&
                c->top_k == o->ref.top_k && llabs(c->layers - o->ref.layers) <= 1) {
                rx = 1e3 * c->decode_s;
                ry = c->train_tok_s;
                s[1] = (zaya_plot_series){"reference shape", &rx, &ry, 1};
                ns = 2;
                break;
            }
        }
    }
    zaya_plot_opts po = {"MoE shapes at the parameter budget", "decode latency, batch 1 (ms/token)",
                         "training tokens/s per rank", 0, 0, 1};
    char png[1024];
    if (zaya_path_join(png, sizeof png, dir, "pareto.png") == ZAYA_OK) {
        if (zaya_plot_lines(png, &po, s, ns) == ZAYA_OK) printf("wrote %s\n", png);
        else fprintf(stderr, "zaya size search: warning: no plot: %s\n", zaya_error_message());
    }
    free(x);
}

int zaya_cmd_size_search(int argc, char **argv) {
    const char *hwname = NULL, *profile = NULL, *out = "results/size-search", *total = NULL, *active = NULL, *ref = NULL;
    zaya_size_search_opts o;
    zaya_size_search_opts_default(&o);
    int top = 15;
    double tol_pct = 3;
    const zaya_flag flags[] = {
        {"hw", 0, ZAYA_FLAG_STRING, &hwname, "PROFILE", "mi300x | h100 | h200 | host | path/to/profile.json (required)"},
        {"profile", 0, ZAYA_FLAG_STRING, &profile, "FILE", "profile.json for --hw host"},
        {"total-params", 0, ZAYA_FLAG_STRING, &total, "X", "non-embedding total budget, e.g. 8.3B (required)"},
        {"active-params", 0, ZAYA_FLAG_STRING, &active, "Y", "non-embedding active budget, e.g. 760M (required)"},
        {"tolerance", 0, ZAYA_FLAG_DOUBLE, &tol_pct, "PCT", "allowed deviation from each budget in percent (default 3)"},
        {"seq", 0, ZAYA_FLAG_I64, &o.seq, "T", "training sequence length and decode context (default 4096)"},
        {"batch", 0, ZAYA_FLAG_I64, &o.batch, "B", "training micro-batch in sequences per rank (default 4)"},
        {"dp", 0, ZAYA_FLAG_INT, &o.dp, "N", "data-parallel degree (default 1)"},
        {"vocab", 0, ZAYA_FLAG_I64, &o.vocab, "V", "vocabulary (default 262272, ZAYA1's)"},
        {"compare", 0, ZAYA_FLAG_STRING, &ref, "CONFIG", "explain the choice against this config's shape"},
        {"top", 0, ZAYA_FLAG_INT, &top, "N", "rows of the ranking to print (default 15)"},
        ZAYA_FLAG_OUTDIR(&out, "results/size-search"),
    };
    const zaya_cmd_spec spec = {"size search", "search MoE shapes at a parameter budget: Pareto front of training "
                                "tokens/s vs decode latency", "--hw PROFILE --total-params X --active-params Y [options]",
                                "Candidates use the ZAYA1 block (CCA, ZAYA1 router, top-k experts, head_dim 128) and "
                                "obey the sizing rules; budgets exclude embeddings.", flags, (int)(sizeof flags / sizeof *flags)};
    zaya_args args;
    int rc = zaya_flags_parse(&spec, argc, argv, &args);
    if (rc >= 0) return rc;
    if (args.npos) return zaya_flags_usage_error(&spec, "unexpected argument '%s'", args.pos[0]);
    if (!hwname || !total || !active) return zaya_flags_usage_error(&spec, "--hw, --total-params and --active-params are required");
    if (zaya_size_parse_count(total, &o.total_params) != ZAYA_OK ||
        zaya_size_parse_count(active, &o.active_params) != ZAYA_OK)
        return zaya_flags_usage_error(&spec, "%s", zaya_error_message());
    if (o.seq <= 0 || o.batch <= 0 || o.dp <= 0 || o.vocab <= 0 || top < 0 || !(tol_pct > 0 && tol_pct < 50))
        return zaya_flags_usage_error(&spec, "--seq, --batch, --dp, --vocab must be positive and --tolerance in (0, 50)");
    o.tolerance = tol_pct / 100;
    zaya_status s;
    if (ref) {
        if ((s = zaya_size_arch_load(ref, &o.ref)) != ZAYA_OK) return zaya_cli_error("size search", NULL);
        o.ref_valid = 1;
    }
    zaya_size_hw hw;
    if ((s = zaya_size_hw_get(hwname, profile, &hw)) != ZAYA_OK) return zaya_cli_error("size search", NULL);
    zaya_size_search_result r;
    if ((s = zaya_size_search(&hw, &o, &r)) != ZAYA_OK) { zaya_size_hw_free(&hw); return zaya_cli_error("size search", NULL); }
    if (r.n == 0) {
        zaya_cli_error("size search", "%s", r.fail);
        zaya_size_search_result_free(&r);
        zaya_size_hw_free(&hw);
        return 1;
    }
    int nf = 0;
    for (int i = 0; i < r.n; i++) nf += r.c[i].pareto;
    char b1[32], b2[32];
    printf("%s (%s): %d candidates within %.0f%% of total %s / active %s (non-embedding), %lld width combinations "
           "examined; batch %lld x seq %lld, DP %d\n\n", hw.name, hw.source, r.n, tol_pct,
           zaya_size_fmt_count(o.total_params, b1, sizeof b1), zaya_size_fmt_count(o.active_params, b2, sizeof b2),
           (long long)r.examined, (long long)o.batch, (long long)o.seq, o.dp);
    const char *hdr = "  %4s %6s %6s %7s %7s %5s %9s %9s %11s %9s %6s %7s %s\n";
    const char *row = "  %4d %6lld %6lld %7lld %7lld %5lld %9s %9s %11.0f %9.3f %5.1f%% %7.1f %s\n";
    printf("Pareto front (%d): training tokens/s/rank vs decode latency at batch 1, context %lld\n", nf, (long long)o.seq);
    printf(hdr, "rank", "hidden", "layers", "experts", "exp_ffn", "top_k", "total", "active", "train tok/s", "decode ms",
           "gemm", "mem GB", "");
    cJSON *root = cJSON_CreateObject(), *jc = cJSON_AddArrayToObject(root, "candidates");
    for (int i = 0; i < r.n; i++) {
        const zaya_size_candidate *c = &r.c[i];
        if (c->pareto)
            printf(row, i + 1, (long long)c->hidden, (long long)c->layers, (long long)c->experts, (long long)c->expert_ffn,
                   (long long)c->top_k, zaya_size_fmt_count(c->total, b1, sizeof b1),
                   zaya_size_fmt_count(c->active, b2, sizeof b2), c->train_tok_s, 1e3 * c->decode_s, 100 * c->gemm_eff,
                   c->mem_gb, "");
        cJSON *j = cJSON_CreateObject();
        cJSON_AddNumberToObject(j, "hidden", (double)c->hidden);
        cJSON_AddNumberToObject(j, "layers", (double)c->layers);
        cJSON_AddNumberToObject(j, "experts", (double)c->experts);
        cJSON_AddNumberToObject(j, "expert_ffn", (double)c->expert_ffn);
        cJSON_AddNumberToObject(j, "top_k", (double)c->top_k);
        cJSON_AddNumberToObject(j, "heads", (double)c->heads);
        cJSON_AddNumberToObject(j, "kv_heads", (double)c->kv_heads);
        cJSON_AddNumberToObject(j, "total_params", c->total);
        cJSON_AddNumberToObject(j, "active_params", c->active);
        cJSON_AddNumberToObject(j, "train_tokens_per_s_rank", c->train_tok_s);
        cJSON_AddNumberToObject(j, "decode_s", c->decode_s);
        cJSON_AddNumberToObject(j, "gemm_eff", c->gemm_eff);
        cJSON_AddNumberToObject(j, "train_mem_gb", c->mem_gb);
        cJSON_AddBoolToObject(j, "pareto", c->pareto);
        cJSON_AddItemToArray(jc, j);
    }
    printf("\ntop %d by training throughput:\n", top < r.n ? top : r.n);
    printf(hdr, "rank", "hidden", "layers", "experts", "exp_ffn", "top_k", "total", "active", "train tok/s", "decode ms",
           "gemm", "mem GB", "");
    for (int i = 0; i < r.n && i < top; i++) {
        const zaya_size_candidate *c = &r.c[i];
        printf(row, i + 1, (long long)c->hidden, (long long)c->layers, (long long)c->experts, (long long)c->expert_ffn,
               (long long)c->top_k, zaya_size_fmt_count(c->total, b1, sizeof b1), zaya_size_fmt_count(c->active, b2, sizeof b2),
               c->train_tok_s, 1e3 * c->decode_s, 100 * c->gemm_eff, c->mem_gb, c->pareto ? "front" : "");
    }
    zaya_size_search_explain(&hw, &o, &r, stdout);
    cJSON_AddStringToObject(root, "hw", hw.name);
    cJSON_AddNumberToObject(root, "total_params_budget", o.total_params);
    cJSON_AddNumberToObject(root, "active_params_budget", o.active_params);
    cJSON_AddNumberToObject(root, "tolerance", o.tolerance);
    cJSON_AddNumberToObject(root, "seq", (double)o.seq);
    cJSON_AddNumberToObject(root, "batch", (double)o.batch);
    cJSON_AddNumberToObject(root, "dp", o.dp);
    char p[1024];
    s = write_json(out, "search.json", root, p, sizeof p);
    cJSON_Delete(root);
    if (s != ZAYA_OK) { zaya_size_search_result_free(&r); zaya_size_hw_free(&hw); return zaya_cli_error("size search", NULL); }
    printf("\nwrote %s\n", p);
    plot_front(out, &r, &o);
    zaya_size_search_result_free(&r);
    zaya_size_hw_free(&hw);
    return 0;
}

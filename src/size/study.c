/* The reports of `zaya size info|check|predict|search`: the size table, rules and per-GEMM efficiency, step time and
 * inference latency, the MoE shape search; each printed and, with an output directory, written as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/plot.h"
#include "zaya/size.h"

static double gib(double b) { return b / (1024.0 * 1024 * 1024); }

/* --seq against the config: past max_position_embeddings the model was never trained; warn. */
void zaya_size_warn_seq(const char *cmd, const zaya_size_arch *a, int64_t seq) {
    if (a->max_seq > 0 && seq > a->max_seq)
        fprintf(stderr, "zaya size %s: warning: --seq %lld exceeds the config's max_position_embeddings %lld\n", cmd,
                (long long)seq, (long long)a->max_seq);
}

/* Prints the fit verdict of the training layout; returns 1 when it fits. */
int zaya_size_print_train_fit(const zaya_size_arch *a, const zaya_size_mem_opts *mo, const zaya_size_hw *hw, FILE *f, cJSON *j) {
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

/* The inference memory of one sequence at `seq` in weight format w: the format and what it quantizes,
 * weights (all experts resident) + KV cache against the device; its "inference_memory" object into j. */
static int print_infer_memory(const zaya_size_arch *a, const zaya_size_hw *hw, const zaya_size_weights *w, int64_t seq,
                              FILE *f, cJSON *j) {
    const int elt = hw->act_bf16 ? 2 : 4;
    char desc[200];
    zaya_size_weights_describe(w, a, desc, sizeof desc);
    zaya_size_weight_bytes wb;
    zaya_size_weights_bytes(a, w, elt, &wb);
    zaya_size_fit fit;
    zaya_size_infer_fit_weights(a, 1, seq, elt, w, hw->mem_bytes, &fit);
    char fmt[16];
    snprintf(fmt, sizeof fmt, "%s", w->format == ZAYA_SIZE_WF_DEFAULT ? (elt == 2 ? "bf16" : "f32") : zaya_size_weights_name(w));
    fprintf(f, "inference memory (weights %s: %s):\n  weights %.1f GiB", fmt, desc, gib(wb.total));
    if (wb.quantized_params > 0)
        fprintf(f, " (%.2fB params at %.3f bits + %.2fB at %d bits)", wb.quantized_params / 1e9, wb.bits_per_quantized,
                wb.kept_params / 1e9, 8 * (w->format == ZAYA_SIZE_WF_DEFAULT ? elt : 2));
    fprintf(f, " + KV cache of 1 x %lld tokens %.2f GiB = %.1f GiB", (long long)seq, gib(fit.need - wb.total), gib(fit.need));
    if (!(hw->mem_bytes > 0)) fprintf(f, " (device memory unknown: not checked)\n");
    else if (fit.fits) fprintf(f, " of %.1f GiB: fits one %s\n", gib(hw->mem_bytes), hw->name);
    else fprintf(f, " of %.1f GiB: DOES NOT FIT on one %s: %s\n", gib(hw->mem_bytes), hw->name, fit.advice);
    if (j) {
        cJSON *m = cJSON_AddObjectToObject(j, "inference_memory");
        cJSON_AddStringToObject(m, "weights", fmt);
        cJSON_AddStringToObject(m, "rule", desc);
        cJSON_AddNumberToObject(m, "weight_bytes", wb.total);
        cJSON_AddNumberToObject(m, "quantized_params", wb.quantized_params);
        cJSON_AddNumberToObject(m, "quantized_bytes", wb.quantized_bytes);
        cJSON_AddNumberToObject(m, "bits_per_quantized_param", wb.bits_per_quantized);
        cJSON_AddNumberToObject(m, "kept_params", wb.kept_params);
        cJSON_AddNumberToObject(m, "kept_bytes", wb.kept_bytes);
        cJSON_AddNumberToObject(m, "context", (double)seq);
        cJSON_AddNumberToObject(m, "need_bytes", fit.need);
        cJSON_AddNumberToObject(m, "device_bytes", fit.cap);
        cJSON_AddBoolToObject(m, "fits", fit.fits);
        cJSON_AddStringToObject(m, "advice", fit.advice);
    }
    return fit.fits;
}

static zaya_status write_json(const char *dir, const char *name, cJSON *root, char *path, size_t cap) {
    ZAYA_TRY(zaya_mkdir_p(dir));
    ZAYA_TRY(zaya_path_join(path, cap, dir, name));
    return zaya_json_write_file(path, root, 1);
}

zaya_status zaya_size_info_report(const char *path, const zaya_size_mem_opts *mo, const char *out, FILE *f) {
    zaya_size_arch a;
    ZAYA_TRY(zaya_size_arch_load(path, &a));
    zaya_size_warn_seq("info", &a, mo->seq);
    zaya_size_print_info_opts(&a, mo, f);
    if (out) {
        cJSON *j = zaya_size_info_json(&a, mo->seq);
        char p[1024];
        zaya_status s = write_json(out, "info.json", j, p, sizeof p);
        cJSON_Delete(j);
        ZAYA_TRY(s);
        fprintf(f, "\nwrote %s\n", p);
    }
    return ZAYA_OK;
}

zaya_status zaya_size_check_report(const zaya_size_check_opts *o, FILE *f) {
    const char *path = o->config, *hwname = o->hw, *profile = o->profile, *out = o->out;
    const int64_t batch = o->batch, seq = o->seq;
    const int tp = o->tp;
    const zaya_size_mem_opts mo = o->mem;
    const struct { const char *optimizer; } mf = {o->mem.optimizer == ZAYA_SIZE_OPT_MUON ? "muon" : "adamw"};
    zaya_status s;
    zaya_size_arch a;
    zaya_size_hw hw;
    s = zaya_size_arch_load(path, &a);
    if (s != ZAYA_OK) return s;
    zaya_size_warn_seq("check", &a, seq);
    if ((s = zaya_size_hw_get(hwname, profile, &hw)) != ZAYA_OK) return s;
    zaya_size_run run = {batch, seq, tp};
    fprintf(f, "%s on %s (%s): %d %s, tile %dx%dx%d, wave %d tiles, align %d; batch %lld x seq %lld, TP %d\n\n", path, hw.name,
           hw.source, hw.compute_units, hw.is_gpu ? "compute units" : "cores", hw.tile_m, hw.tile_n, hw.tile_k,
           hw.compute_units * hw.tiles_per_cu, hw.align, (long long)batch, (long long)seq, tp);
    fprintf(f, "rules:\n");
    for (int i = 0; i < zaya_size_nrules; i++)
        fprintf(f, "  %-12s %s\n  %-12s   why: %s\n", zaya_size_rules[i].id, zaya_size_rules[i].statement, "",
               zaya_size_rules[i].rationale);
    zaya_size_rule_hit hits[256];
    int nh = zaya_size_check_rules(&a, &hw, &run, hits, 256);
    int shown = nh < 256 ? nh : 256, nviol = 0;
    fprintf(f, "\nfindings (%d):\n", nh);
    for (int i = 0; i < shown; i++) {
        nviol += hits[i].severity >= 2;
        fprintf(f, "  [%s] %-12s %s: %s\n  %-21s nearest compliant: %s\n", hits[i].severity >= 2 ? "VIOLATION" : "advice",
               hits[i].rule_id, hits[i].what, hits[i].detail, "", hits[i].fix[0] ? hits[i].fix : "-");
    }
    zaya_size_gemm_shape g[ZAYA_SIZE_MAX_GEMMS];
    int ng = zaya_size_list_gemms(&a, &run, g, ZAYA_SIZE_MAX_GEMMS);
    fprintf(f, "\nper GEMM (one layer's launch; x = launches per step):\n");
    fprintf(f, "  %-24s %-5s %7s %7s %7s %4s %4s %5s %7s %6s %6s %6s %7s %s\n", "gemm", "pass", "M", "N", "K", "grp", "x", "splitK", "tiles",
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
        fprintf(f, "  %-24s %-5s %7lld %7lld %7lld %4lld %4lld %5lld %7lld %6.1f %6.1f %6.1f %7s %10.3f  %s\n", g[i].name, g[i].pass,
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
    fprintf(f, "\nall GEMMs of one step: %.1f ms, %.1f%% of peak (FLOP-weighted); %d violation(s)\n", 1e3 * total_t,
           100 * total_f / (total_t * peak), nviol);
    fprintf(f, "\nmemory (DP %d, ZeRO-%d, %s%s, %.0f B/param):\n  ", mo.dp, mo.zero_stage, mf.optimizer,
           mo.recompute ? ", recompute" : "", zaya_size_mem_bytes_per_param(&mo));
    cJSON *jm = cJSON_CreateObject();
    zaya_size_print_train_fit(&a, &mo, &hw, f, jm);
    print_infer_memory(&a, &hw, &o->weights, seq, f, jm);
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
        if (s != ZAYA_OK) { zaya_size_hw_free(&hw); return s; }
        fprintf(f, "wrote %s\n", p);
    }
    cJSON_Delete(jg);
    cJSON_Delete(jm);
    zaya_size_hw_free(&hw);
    return ZAYA_OK;
}

zaya_status zaya_size_predict_report(const zaya_size_predict_opts *o, FILE *f) {
    const char *path = o->config, *hwname = o->hw, *profile = o->profile, *out = o->out, *dtype = o->dtype;
    const int64_t batch = o->batch, seq = o->seq, max_batch = o->max_batch;
    const double overlap = o->overlap;
    const zaya_size_mem_opts mo = o->mem;
    const struct { const char *optimizer; } mf = {o->mem.optimizer == ZAYA_SIZE_OPT_MUON ? "muon" : "adamw"};
    zaya_status s;
    int dp = mo.dp, zero = mo.zero_stage, recompute = mo.recompute;
    const char *optname = mf.optimizer;
    zaya_size_step_opts so;
    zaya_size_step_opts_default(&so);
    so.optimizer = mo.optimizer;
    so.batch = batch;
    so.seq = seq;
    so.dp = dp;
    so.cp = mo.cp;
    so.cp_contiguous = o->cp_contiguous;
    so.zero_stage = zero;
    so.recompute = recompute;
    so.overlap = overlap;
    so.grad_comm_bytes = mo.grad_bytes;
    zaya_size_arch a;
    zaya_size_hw hw;
    if ((s = zaya_size_arch_load(path, &a)) != ZAYA_OK) return s;
    zaya_size_warn_seq("predict", &a, seq);
    if ((s = zaya_size_hw_get(hwname, profile, &hw)) != ZAYA_OK) return s;
    if (!dtype) dtype = hw.peak_bf16 > 0 ? "bf16" : "f32";
    zaya_size_step_pred p;
    if ((s = zaya_size_hw_set_dtype(&hw, dtype)) != ZAYA_OK || (s = zaya_size_predict_step(&a, &hw, &so, &p)) != ZAYA_OK) {
        zaya_size_hw_free(&hw);
        return s;
    }
    cJSON *root = cJSON_CreateObject();
    fprintf(f, "%s on %s (%s)\n", path, hw.name, hw.source);
    int fits = zaya_size_print_train_fit(&a, &mo, &hw, f, root);
    char cpnote[96] = "";
    if (so.cp > 1)
        snprintf(cpnote, sizeof cpnote, " x CP %d (%s, %lld tokens per rank)", so.cp, so.cp_contiguous ? "contiguous" : "zig-zag",
                 (long long)(seq / so.cp));
    fprintf(f, "training step%s: batch %lld x seq %lld per rank, DP %d%s, ZeRO-%d, %s, %s GEMMs%s\n",
           fits ? "" : " (only if it fitted; see above)", (long long)batch, (long long)seq, dp, cpnote, zero, optname, dtype,
           recompute ? ", recompute" : "");
    fprintf(f, "  %-28s %10.2f ms  (%.1f%% of peak)\n", "GEMMs (fwd+dgrad+wgrad)", 1e3 * p.gemm_s, 100 * p.gemm_eff);
    fprintf(f, "  %-28s %10.2f ms\n", "attention", 1e3 * p.attn_s);
    fprintf(f, "  %-28s %10.2f ms\n", "memory-bound ops", 1e3 * p.memop_s);
    fprintf(f, "  %-28s %10.2f ms  (Newton-Schulz %.2f ms)\n", "optimizer step", 1e3 * p.optimizer_s, 1e3 * p.optimizer_ns_s);
    fprintf(f, "  %-28s %10.2f ms  (exposed %.2f ms)\n", "DP communication", 1e3 * p.comm_s, 1e3 * p.comm_exposed_s);
    if (so.cp > 1) {
        fprintf(f, "  %-28s %10.2f ms  (busiest rank's attention %.2fx the mean)\n", "CP exchanges", 1e3 * p.cp_comm_s,
                p.cp_attn_imbalance);
        fprintf(f, "    per layer and step, bytes one rank receives: K/V all-gather %.2f MB (fwd + bwd), dK/dV "
                   "reduce-scatter %.2f MB, halo %.1f KB; an MHA of the same width would gather %.2f MB\n",
                p.cp_gather_bytes / 1e6, p.cp_scatter_bytes / 1e6, p.cp_halo_bytes / 1e3, p.cp_mha_gather_bytes / 1e6);
    }
    fprintf(f, "  %-28s %10.2f ms\n", "step", 1e3 * p.step_s);
    fprintf(f, "  tokens/s: %.0f per rank, %.0f global; MFU %.1f%%\n", p.tokens_per_s_rank, p.tokens_per_s_global, 100 * p.mfu);
    const zaya_size_weights *wf = &o->weights;
    zaya_size_fit inf1;
    zaya_size_infer_fit_weights(&a, 1, seq, hw.act_bf16 ? 2 : 4, wf, hw.mem_bytes, &inf1);
    fprintf(f, "\n");
    print_infer_memory(&a, &hw, wf, seq, f, root);
    fprintf(f, "inference at context %lld (%s weights, all experts resident: %.1f GiB at batch 1 of %.1f GiB%s):\n", (long long)seq,
           wf->format == ZAYA_SIZE_WF_DEFAULT ? (hw.act_bf16 ? "bf16" : "f32") : zaya_size_weights_name(wf), gib(inf1.need),
           gib(hw.mem_bytes), hw.mem_bytes > 0 ? "" : " (unknown: not checked)");
    if (!inf1.fits) fprintf(f, "  DOES NOT FIT on one %s: %s (largest term: %s %.1f GiB)\n", hw.name, inf1.advice, inf1.largest,
                          gib(inf1.largest_bytes));
    fprintf(f, "  %6s %12s %14s %12s %12s %14s\n", "batch", "prefill ms", "decode ms/tok", "weights MB", "KV MB", "decode tok/s");
    cJSON *st = cJSON_AddObjectToObject(root, "step");
    cJSON_AddNumberToObject(st, "gemm_s", p.gemm_s);
    cJSON_AddNumberToObject(st, "attention_s", p.attn_s);
    cJSON_AddNumberToObject(st, "memory_ops_s", p.memop_s);
    cJSON_AddNumberToObject(st, "optimizer_s", p.optimizer_s);
    cJSON_AddNumberToObject(st, "newton_schulz_s", p.optimizer_ns_s);
    cJSON_AddStringToObject(st, "dtype", dtype);
    cJSON_AddNumberToObject(st, "comm_s", p.comm_s);
    cJSON_AddNumberToObject(st, "comm_exposed_s", p.comm_exposed_s);
    cJSON_AddNumberToObject(st, "cp", so.cp);
    if (so.cp > 1) {
        cJSON_AddNumberToObject(st, "cp_comm_s", p.cp_comm_s);
        cJSON_AddNumberToObject(st, "cp_gather_bytes_per_layer", p.cp_gather_bytes);
        cJSON_AddNumberToObject(st, "cp_scatter_bytes_per_layer", p.cp_scatter_bytes);
        cJSON_AddNumberToObject(st, "cp_halo_bytes_per_layer", p.cp_halo_bytes);
        cJSON_AddNumberToObject(st, "cp_mha_gather_bytes_per_layer", p.cp_mha_gather_bytes);
        cJSON_AddNumberToObject(st, "cp_attention_imbalance", p.cp_attn_imbalance);
    }
    cJSON_AddNumberToObject(st, "step_s", p.step_s);
    cJSON_AddNumberToObject(st, "tokens_per_s_rank", p.tokens_per_s_rank);
    cJSON_AddNumberToObject(st, "mfu", p.mfu);
    cJSON *inf = cJSON_AddArrayToObject(root, "inference");
    for (int64_t b = 1; b <= max_batch; b *= 2) {
        zaya_size_infer_pred ip;
        zaya_size_predict_infer_weights(&a, &hw, b, seq, wf, &ip);
        zaya_size_fit fb;
        zaya_size_infer_fit_weights(&a, b, seq, hw.act_bf16 ? 2 : 4, wf, hw.mem_bytes, &fb);
        fprintf(f, "  %6lld %12.2f %14.3f %12.1f %12.1f %14.0f%s\n", (long long)b, 1e3 * ip.prefill_s, 1e3 * ip.decode_s,
               ip.decode_weight_bytes / 1e6, ip.decode_kv_bytes / 1e6, ip.decode_tokens_per_s,
               fb.fits ? "" : "  does not fit");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddBoolToObject(o, "fits", fb.fits);
        cJSON_AddNumberToObject(o, "memory_bytes", fb.need);
        cJSON_AddNumberToObject(o, "batch", (double)b);
        cJSON_AddNumberToObject(o, "prefill_s", ip.prefill_s);
        cJSON_AddNumberToObject(o, "decode_s", ip.decode_s);
        cJSON_AddNumberToObject(o, "decode_tokens_per_s", ip.decode_tokens_per_s);
        cJSON_AddNumberToObject(o, "decode_weight_bytes", ip.decode_weight_bytes);
        cJSON_AddItemToArray(inf, o);
    }
    if (out) {
        char pth[1024];
        s = write_json(out, "predict.json", root, pth, sizeof pth);
        if (s != ZAYA_OK) { cJSON_Delete(root); zaya_size_hw_free(&hw); return s; }
        fprintf(f, "wrote %s\n", pth);
    }
    cJSON_Delete(root);
    zaya_size_hw_free(&hw);
    return ZAYA_OK;
}

static void plot_front(const char *dir, const zaya_size_search_result *r, const zaya_size_search_opts *o, FILE *f) {
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
        if (zaya_plot_lines(png, &po, s, ns) == ZAYA_OK) fprintf(f, "wrote %s\n", png);
        else fprintf(stderr, "zaya size search: warning: no plot: %s\n", zaya_error_message());
    }
    free(x);
}

zaya_status zaya_size_search_report(const zaya_size_search_report_opts *ro, FILE *f) {
    const char *hwname = ro->hw, *profile = ro->profile, *out = ro->out, *ref = ro->compare;
    zaya_size_search_opts o = ro->search;
    const int top = ro->top;
    const double tol_pct = ro->tolerance_pct;
    o.tolerance = tol_pct / 100;
    zaya_status s;
    if (ref) {
        if ((s = zaya_size_arch_load(ref, &o.ref)) != ZAYA_OK) return s;
        o.ref_valid = 1;
    }
    zaya_size_hw hw;
    if ((s = zaya_size_hw_get(hwname, profile, &hw)) != ZAYA_OK) return s;
    zaya_size_search_result r;
    if ((s = zaya_size_search(&hw, &o, &r)) != ZAYA_OK) { zaya_size_hw_free(&hw); return s; }
    if (r.n == 0) {
        s = zaya_error_set(ZAYA_EINVAL, "%s", r.fail);
        zaya_size_search_result_free(&r);
        zaya_size_hw_free(&hw);
        return s;
    }
    int nf = 0;
    for (int i = 0; i < r.n; i++) nf += r.c[i].pareto;
    char b1[32], b2[32];
    fprintf(f, "%s (%s): %d candidates within %.0f%% of total %s / active %s (non-embedding), %lld width combinations "
           "examined; batch %lld x seq %lld, DP %d\n\n", hw.name, hw.source, r.n, tol_pct,
           zaya_size_fmt_count(o.total_params, b1, sizeof b1), zaya_size_fmt_count(o.active_params, b2, sizeof b2),
           (long long)r.examined, (long long)o.batch, (long long)o.seq, o.dp);
    const char *hdr = "  %4s %6s %6s %7s %7s %5s %9s %9s %11s %9s %6s %7s %s\n";
    const char *row = "  %4d %6lld %6lld %7lld %7lld %5lld %9s %9s %11.0f %9.3f %5.1f%% %7.1f %s\n";
    fprintf(f, "Pareto front (%d): training tokens/s/rank vs decode latency at batch 1, context %lld\n", nf, (long long)o.seq);
    fprintf(f, hdr, "rank", "hidden", "layers", "experts", "exp_ffn", "top_k", "total", "active", "train tok/s", "decode ms",
           "gemm", "mem GB", "");
    cJSON *root = cJSON_CreateObject(), *jc = cJSON_AddArrayToObject(root, "candidates");
    for (int i = 0; i < r.n; i++) {
        const zaya_size_candidate *c = &r.c[i];
        if (c->pareto)
            fprintf(f, row, i + 1, (long long)c->hidden, (long long)c->layers, (long long)c->experts, (long long)c->expert_ffn,
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
    fprintf(f, "\ntop %d by training throughput:\n", top < r.n ? top : r.n);
    fprintf(f, hdr, "rank", "hidden", "layers", "experts", "exp_ffn", "top_k", "total", "active", "train tok/s", "decode ms",
           "gemm", "mem GB", "");
    for (int i = 0; i < r.n && i < top; i++) {
        const zaya_size_candidate *c = &r.c[i];
        fprintf(f, row, i + 1, (long long)c->hidden, (long long)c->layers, (long long)c->experts, (long long)c->expert_ffn,
               (long long)c->top_k, zaya_size_fmt_count(c->total, b1, sizeof b1), zaya_size_fmt_count(c->active, b2, sizeof b2),
               c->train_tok_s, 1e3 * c->decode_s, 100 * c->gemm_eff, c->mem_gb, c->pareto ? "front" : "");
    }
    zaya_size_search_explain(&hw, &o, &r, f);
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
    if (s != ZAYA_OK) { zaya_size_search_result_free(&r); zaya_size_hw_free(&hw); return s; }
    fprintf(f, "\nwrote %s\n", p);
    plot_front(out, &r, &o, f);
    zaya_size_search_result_free(&r);
    zaya_size_hw_free(&hw);
    return ZAYA_OK;
}

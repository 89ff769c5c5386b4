/* Human and JSON reports of an architecture's size: summary, per-component parameter table, FLOPs,
 * KV cache and training memory. Shared by `zaya size info` and `zaya model info`. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/size.h"

zaya_status zaya_size_parse_count(const char *s, double *out) {
    if (!s || !*s) return zaya_error_set(ZAYA_EINVAL, "empty parameter count");
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) || v < 0)
        return zaya_error_set(ZAYA_EINVAL, "'%s' is not a parameter count (examples: 8.3B, 760M, 7e9)", s);
    double mult = 1;
    switch (toupper((unsigned char)*end)) {
    case '\0': break;
    case 'K': mult = 1e3; end++; break;
    case 'M': mult = 1e6; end++; break;
    case 'B': case 'G': mult = 1e9; end++; break;
    case 'T': mult = 1e12; end++; break;
    default: return zaya_error_set(ZAYA_EINVAL, "'%s': unknown suffix '%s' (use K, M, B or T)", s, end);
    }
    if (*end) return zaya_error_set(ZAYA_EINVAL, "'%s': trailing characters '%s'", s, end);
    *out = v * mult;
    return ZAYA_OK;
}

const char *zaya_size_fmt_count(double v, char *buf, size_t cap) {
    double a = fabs(v);
    if (a >= 1e12) snprintf(buf, cap, "%.2fT", v / 1e12);
    else if (a >= 1e9) snprintf(buf, cap, "%.2fB", v / 1e9);
    else if (a >= 1e6) snprintf(buf, cap, "%.1fM", v / 1e6);
    else if (a >= 1e3) snprintf(buf, cap, "%.1fK", v / 1e3);
    else snprintf(buf, cap, "%.0f", v);
    return buf;
}

static const char *router_name(zaya_size_router_kind r) {
    return r == ZAYA_SIZE_ROUTER_ZAYA ? "ZAYA1 MLP router (EDA, bias balancing)" : r == ZAYA_SIZE_ROUTER_LINEAR ? "linear" : "none";
}

static double gib(double b) { return b / (1024.0 * 1024 * 1024); }

void zaya_size_print_info(const zaya_size_arch *a, int64_t seq, FILE *f) {
    zaya_size_mem_opts mo;
    zaya_size_mem_opts_default(&mo);
    mo.seq = seq;
    zaya_size_print_info_opts(a, &mo, f);
}

void zaya_size_print_info_opts(const zaya_size_arch *a, const zaya_size_mem_opts *opts, FILE *f) {
    int64_t seq = opts->seq;
    zaya_size_params p;
    zaya_size_count_params(a, &p);
    fprintf(f, "model_type %s: %lld layers, hidden %lld, vocab %lld%s\n", a->family, (long long)a->layers,
            (long long)a->hidden, (long long)a->vocab, a->tied_embeddings ? " (tied head)" : "");
    if (a->text_only) fprintf(f, "(the text_config of a multimodal config: the vision encoder is not counted)\n");
    fprintf(f, "attention %s: %lld query / %lld KV heads x head_dim %lld", zaya_size_attn_kind_name(a->attn), (long long)a->heads,
            (long long)a->kv_heads, (long long)a->head_dim);
    if (a->attn == ZAYA_SIZE_ATTN_CCA)
        fprintf(f, " (latent %lld / %lld; convs k=%lld,%lld; value shift)", (long long)(a->heads * a->head_dim),
                (long long)(a->kv_heads * a->head_dim), (long long)a->cca_time0, (long long)a->cca_time1);
    if (a->mla)
        fprintf(f, " (MLA: q_lora_rank %lld, kv_lora_rank %lld, qk nope/rope %lld/%lld, v_head_dim %lld)", (long long)a->q_lora_rank,
                (long long)a->kv_lora_rank, (long long)a->qk_nope_dim, (long long)a->qk_rope_dim, (long long)a->v_head_dim);
    if (a->qk_norm) fprintf(f, ", qk-norm %s", a->qk_norm == ZAYA_SIZE_QK_NORM_HEAD ? "per head" : "full width");
    if (a->attn_sinks) fprintf(f, ", attention sinks");
    if (a->qkv_bias) fprintf(f, ", q/k/v%s biases", a->o_bias ? "/o" : "");
    fprintf(f, "\n");
    if (a->n_window_layers > 0)
        fprintf(f, "local attention on %lld/%lld layers (window %lld tokens), full context on the rest\n",
                (long long)a->n_window_layers, (long long)a->layers, (long long)a->window);
    if (a->experts > 0) {
        fprintf(f, "MoE on %lld/%lld layers: %lld experts of width %lld, top-%lld", (long long)a->n_moe_layers,
                (long long)a->layers, (long long)a->experts, (long long)a->expert_ffn, (long long)a->top_k);
        if (a->shared_experts) fprintf(f, ", %lld shared of width %lld", (long long)a->shared_experts, (long long)a->shared_ffn);
        fprintf(f, ", router %s", router_name(a->router));
        if (a->router == ZAYA_SIZE_ROUTER_ZAYA) fprintf(f, " latent %lld, %lld classes", (long long)a->router_hidden, (long long)a->router_classes);
        fprintf(f, "\n");
    }
    if (a->layers > a->n_moe_layers) fprintf(f, "dense SwiGLU MLP width %lld on %lld layers\n", (long long)a->dense_ffn,
                                             (long long)(a->layers - a->n_moe_layers));
    fprintf(f, "\n%-34s %14s %9s %16s %16s\n", "component", "each", "x", "total", "active");
    for (int i = 0; i < p.nrows; i++) {
        const zaya_size_param_row *r = &p.rows[i];
        fprintf(f, "%-34s %14lld %9lld %16lld %16lld\n", r->name, (long long)r->each, (long long)r->instances,
                (long long)r->total, (long long)r->active);
    }
    char b1[32], b2[32];
    fprintf(f, "%-34s %14s %9s %16lld %16lld  (%s / %s)\n", "non-embedding", "", "", (long long)p.non_embedding,
            (long long)p.active_non_embedding, zaya_size_fmt_count((double)p.non_embedding, b1, sizeof b1),
            zaya_size_fmt_count((double)p.active_non_embedding, b2, sizeof b2));
    fprintf(f, "%-34s %14s %9s %16lld %16lld  (%s / %s)\n", "total", "", "", (long long)p.total, (long long)p.active,
            zaya_size_fmt_count((double)p.total, b1, sizeof b1), zaya_size_fmt_count((double)p.active, b2, sizeof b2));
    fprintf(f, "%-34s %14s %9s %16s %16lld  (%s; without the embedding lookup)\n", "active compute", "", "", "",
            (long long)p.active_compute, zaya_size_fmt_count((double)p.active_compute, b1, sizeof b1));
    if (p.mtp > 0)
        fprintf(f, "%-34s %14s %9s %16lld %16s  (%s; checkpoint with its embedding/head copies: %s)\n", "MTP modules (apart)", "",
                "", (long long)p.mtp, "", zaya_size_fmt_count((double)p.mtp, b1, sizeof b1),
                zaya_size_fmt_count((double)p.checkpoint, b2, sizeof b2));
    zaya_size_flops fl;
    zaya_size_count_flops(a, seq, &fl);
    fprintf(f, "\nFLOPs per token at T=%lld: forward %.3f GFLOP (matmuls %.3f incl. head and convs, attention %.3f, causal "
               "average context (T+1)/2); training %.3f (3x), %.3f with recomputation (4x)\n",
            (long long)seq, fl.fwd / 1e9, fl.linear_fwd / 1e9, fl.attn_fwd / 1e9, fl.train / 1e9, fl.train_recompute / 1e9);
    double kv = zaya_size_kv_bytes_per_token(a, 2), st = zaya_size_kv_state_bytes(a, 2);
    fprintf(f, "KV cache (bf16%s): %.0f bytes/token = %.2f KiB/token", a->mla ? ", compressed latent + RoPE key" : "", kv, kv / 1024);
    if (a->n_window_layers > 0) fprintf(f, " while T <= %lld", (long long)a->window);
    if (st > 0) fprintf(f, ", plus %.0f bytes constant conv/value-shift state per sequence", st);
    fprintf(f, "; %.2f GiB at T=%lld", gib(zaya_size_kv_bytes(a, seq, 2)), (long long)seq);
    if (a->n_window_layers > 0 && seq > a->window)
        fprintf(f, " (%lld local layers hold %lld tokens)", (long long)a->n_window_layers, (long long)a->window);
    fprintf(f, "\n");
    char wd[8], gd[8], md[8];
    snprintf(wd, sizeof wd, "%s", opts->weight_bytes == 4 ? "fp32" : "bf16");
    snprintf(gd, sizeof gd, "%s", opts->grad_bytes == 4 ? "fp32" : "bf16");
    snprintf(md, sizeof md, "%s", opts->master_bytes == 4 ? "fp32" : opts->master_bytes ? "bf16" : "none");
    fprintf(f, "\ntraining memory per rank (GiB; micro-batch %lld x T=%lld; %s weights, %s master, %s grads, fp32 states = "
               "%.0f B/param before sharding; flash attention, bf16 activations, fp32 logits):\n",
            (long long)opts->micro_batch, (long long)seq, wd, md, gd, zaya_size_mem_bytes_per_param(opts));
    if (opts->cp > 1)
        fprintf(f, "context parallel: CP %d, each rank holds %lld tokens of every sequence, ZeRO shards over DP x CP; "
                   "activations include %.2f GiB of gathered K/V and their gradients\n",
                opts->cp, (long long)(seq / opts->cp), gib(zaya_size_cp_buffer_bytes(a, opts)));
    fprintf(f, "  %-14s %4s %9s %9s %9s %9s %11s %13s\n", "optimizer", "ZeRO", "weights", "master", "grads", "states",
            "act (full)", "act (recomp)");
    int dps[] = {1, opts->dp > 1 ? opts->dp : 8};
    for (int opt = 0; opt < 2; opt++)
        for (int di = 0; di < 2; di++)
            for (int z = 0; z <= 3; z++) {
                if (dps[di] == 1 && z > 0) continue;
                zaya_size_mem_opts mo = *opts;
                mo.optimizer = opt ? ZAYA_SIZE_OPT_MUON : ZAYA_SIZE_OPT_ADAMW;
                mo.zero_stage = z;
                mo.dp = dps[di];
                zaya_size_mem m;
                zaya_size_train_memory(a, &mo, &m);
                int sel = mo.zero_stage == opts->zero_stage && mo.dp == (opts->dp > 0 ? opts->dp : 1) && mo.optimizer == opts->optimizer;
                fprintf(f, "  %-6s DP %-4d %4d %9.2f %9.2f %9.2f %9.2f %11.2f %13.2f%s\n", opt ? "Muon" : "AdamW", dps[di], z,
                        gib(m.weights), gib(m.master), gib(m.grads), gib(m.optimizer), gib(m.act_full), gib(m.act_recompute),
                        sel ? "  <- selected" : "");
            }
    zaya_size_mem m;
    zaya_size_train_memory(a, opts, &m);
    char cpn[24] = "";
    if (opts->cp > 1) snprintf(cpn, sizeof cpn, " x CP %d", opts->cp);
    fprintf(f, "selected layout (%s, DP %d%s, ZeRO-%d%s): %.2f GiB per rank\n", opts->optimizer == ZAYA_SIZE_OPT_MUON ? "Muon" : "AdamW",
            opts->dp, cpn, opts->zero_stage, opts->recompute ? ", recompute" : "", gib(opts->recompute ? m.total_recompute : m.total));
}

cJSON *zaya_size_info_json(const zaya_size_arch *a, int64_t seq) {
    zaya_size_params p;
    zaya_size_count_params(a, &p);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "model_type", a->family);
    cJSON_AddNumberToObject(root, "layers", (double)a->layers);
    cJSON_AddNumberToObject(root, "hidden", (double)a->hidden);
    cJSON_AddNumberToObject(root, "vocab", (double)a->vocab);
    cJSON_AddStringToObject(root, "attention", zaya_size_attn_kind_name(a->attn));
    cJSON_AddNumberToObject(root, "heads", (double)a->heads);
    cJSON_AddNumberToObject(root, "kv_heads", (double)a->kv_heads);
    cJSON_AddNumberToObject(root, "head_dim", (double)a->head_dim);
    cJSON_AddNumberToObject(root, "experts", (double)a->experts);
    cJSON_AddNumberToObject(root, "expert_ffn", (double)a->expert_ffn);
    cJSON_AddNumberToObject(root, "top_k", (double)a->top_k);
    cJSON *params = cJSON_AddObjectToObject(root, "params");
    cJSON_AddNumberToObject(params, "total", (double)p.total);
    cJSON_AddNumberToObject(params, "active", (double)p.active);
    cJSON_AddNumberToObject(params, "embedding", (double)p.embedding);
    cJSON_AddNumberToObject(params, "non_embedding", (double)p.non_embedding);
    cJSON_AddNumberToObject(params, "active_non_embedding", (double)p.active_non_embedding);
    cJSON_AddNumberToObject(params, "active_compute", (double)p.active_compute);
    cJSON_AddNumberToObject(params, "mtp", (double)p.mtp);
    cJSON_AddNumberToObject(params, "checkpoint", (double)p.checkpoint);
    cJSON *rows = cJSON_AddArrayToObject(params, "components");
    for (int i = 0; i < p.nrows; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "name", p.rows[i].name);
        cJSON_AddNumberToObject(r, "each", (double)p.rows[i].each);
        cJSON_AddNumberToObject(r, "instances", (double)p.rows[i].instances);
        cJSON_AddNumberToObject(r, "total", (double)p.rows[i].total);
        cJSON_AddNumberToObject(r, "active", (double)p.rows[i].active);
        cJSON_AddItemToArray(rows, r);
    }
    zaya_size_flops fl;
    zaya_size_count_flops(a, seq, &fl);
    cJSON *fj = cJSON_AddObjectToObject(root, "flops_per_token");
    cJSON_AddNumberToObject(fj, "seq", (double)seq);
    cJSON_AddNumberToObject(fj, "forward", fl.fwd);
    cJSON_AddNumberToObject(fj, "attention_forward", fl.attn_fwd);
    cJSON_AddNumberToObject(fj, "training", fl.train);
    cJSON_AddNumberToObject(fj, "training_recompute", fl.train_recompute);
    cJSON_AddNumberToObject(root, "kv_bytes_per_token_bf16", zaya_size_kv_bytes_per_token(a, 2));
    cJSON_AddNumberToObject(root, "kv_bytes_at_seq_bf16", zaya_size_kv_bytes(a, seq, 2));
    cJSON_AddNumberToObject(root, "window", (double)a->window);
    cJSON_AddNumberToObject(root, "window_layers", (double)a->n_window_layers);
    cJSON_AddNumberToObject(root, "kv_state_bytes_bf16", zaya_size_kv_state_bytes(a, 2));
    return root;
}

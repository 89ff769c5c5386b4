/* `zaya model info` (zaya_model_info_report): parameter counts, per-component breakdown, KV cache and FLOPs of a ZAYA1 config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/model.h"

static const char *with_commas(int64_t v, char *buf, size_t cap) {
    char digits[32];
    snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v));
    size_t n = strlen(digits), o = 0;
    if (v < 0 && o + 1 < cap) buf[o++] = '-';
    for (size_t i = 0; i < n && o + 2 < cap; i++) {
        buf[o++] = digits[i];
        if ((n - i - 1) % 3 == 0 && i + 1 < n) buf[o++] = ',';
    }
    buf[o] = '\0';
    return buf;
}

enum { COMP_EMBED, COMP_INPUT, COMP_ATTN, COMP_ROUTER, COMP_EXPERTS, COMP_NORMS, COMP_RESID, COMP_BUFFERS, NCOMP };
static const char *comp_names[NCOMP] = {"embedding (tied head)", "input affine", "attention (CCA)", "router",
                                        "experts", "norms", "residual scales", "balancing biases (buffer)"};

static int component_of(const zaya_tensor_info *t) {
    if (t->opt == ZAYA_OPT_NONE) return COMP_BUFFERS;
    if (t->embedding) return COMP_EMBED;
    if (strstr(t->name, "input_hidden_states")) return COMP_INPUT;
    if (strstr(t->name, "self_attn")) return COMP_ATTN;
    /* the dense MLP (zaya_mlp "dense") counts as the experts' component */
    if (strstr(t->name, "mlp.gate_proj") || strstr(t->name, "mlp.up_proj") || strstr(t->name, "mlp.down_proj"))
        return COMP_EXPERTS;
    if (strstr(t->name, "mlp.gate")) return COMP_ROUTER;
    if (strstr(t->name, "mlp.experts")) return COMP_EXPERTS;
    if (strstr(t->name, "residual_scale")) return COMP_RESID;
    return COMP_NORMS;
}

zaya_status zaya_model_info_report(const char *config, int64_t seq, int json, const char *out, FILE *outf) {
    if (seq <= 0) return zaya_error_set(ZAYA_EINVAL, "model info: seq must be positive (got %lld)", (long long)seq);
    zaya_config c;
    ZAYA_TRY(zaya_config_resolve(config, &c));
    zaya_tensor_info *t = NULL;
    int nt = 0;
    int64_t nf = 0;
    ZAYA_TRY(zaya_layout_build_public(&c, &t, &nt, &nf));
    int64_t comp[NCOMP] = {0}, comp_active[NCOMP] = {0};
    for (int i = 0; i < nt; i++) {
        int k = component_of(&t[i]);
        comp[k] += t[i].numel;
        comp_active[k] += t[i].nmatrix > 0 ? t[i].numel / t[i].nmatrix : t[i].numel;
    }
    free(t);
    zaya_param_counts pc = zaya_model_count_params(&c);
    zaya_model_costs k16 = zaya_model_costs_at(&c, seq, 2), k32 = zaya_model_costs_at(&c, seq, 4);

    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", c.name);
    cJSON_AddItemToObject(o, "config", zaya_config_to_json(&c));
    cJSON *p = cJSON_AddObjectToObject(o, "parameters");
    cJSON_AddNumberToObject(p, "total", (double)pc.total);
    cJSON_AddNumberToObject(p, "embedding", (double)pc.embedding);
    cJSON_AddNumberToObject(p, "non_embedding", (double)pc.non_embedding);
    cJSON_AddNumberToObject(p, "active_non_embedding", (double)pc.active_non_embedding);
    cJSON_AddNumberToObject(p, "buffers", (double)pc.buffers);
    cJSON *cj = cJSON_AddObjectToObject(o, "components");
    for (int i = 0; i < NCOMP; i++) cJSON_AddNumberToObject(cj, comp_names[i], (double)comp[i]);
    cJSON *f = cJSON_AddObjectToObject(o, "per_token");
    cJSON_AddNumberToObject(f, "seq", (double)seq);
    cJSON_AddNumberToObject(f, "forward_flops", k16.forward_flops);
    cJSON_AddNumberToObject(f, "training_flops", k16.training_flops);
    cJSON_AddNumberToObject(f, "attention_flops", k16.attention_flops);
    cJSON_AddNumberToObject(f, "kv_cache_bytes_bf16", (double)k16.kv_bytes_per_token);
    cJSON_AddNumberToObject(f, "kv_cache_bytes_f32", (double)k32.kv_bytes_per_token);
    cJSON_AddNumberToObject(f, "sequence_state_bytes_bf16", (double)k16.state_bytes_per_seq);

    if (json) {
        char *s = cJSON_Print(o);
        fprintf(outf, "%s\n", s);
        free(s);
    } else {
        char b1[40], b2[40];
        char att[64], mlp[128];
        if (c.mlp == ZAYA_MLP_DENSE)
            snprintf(mlp, sizeof mlp, "a dense SwiGLU MLP of width %lld", (long long)zaya_config_dense_ffn(&c));
        else if (c.router == ZAYA_ROUTER_LINEAR)
            snprintf(mlp, sizeof mlp, "%lld experts of width %lld, top-1, linear router", (long long)c.num_experts,
                     (long long)c.moe_intermediate_size);
        else
            snprintf(mlp, sizeof mlp, "%lld experts (+1 skip class) of width %lld, top-1, router width %lld",
                     (long long)c.num_experts, (long long)c.moe_intermediate_size, (long long)c.router_hidden_size);
        if (c.attention == ZAYA_ATTENTION_CCA)
            snprintf(att, sizeof att, "CCA convs %lld/%lld", (long long)c.cca_time0, (long long)c.cca_time1);
        else
            snprintf(att, sizeof att, "%s softmax attention (zaya_attention)", c.attention == ZAYA_ATTENTION_MHA ? "MHA" : "GQA");
        fprintf(outf, "model %s: vocab %lld, hidden %lld, %lld blocks, %lld query heads and %lld KV heads of %lld,\n"
                "  %s, %s, RoPE theta %g on %lld of %lld dims\n\n",
                c.name, (long long)c.vocab_size, (long long)c.hidden_size, (long long)c.num_hidden_layers,
                (long long)c.num_attention_heads, (long long)c.num_key_value_heads, (long long)c.head_dim, mlp, att,
                c.rope_theta, (long long)zaya_config_rot_dims(&c), (long long)c.head_dim);
        if (!zaya_config_is_zaya1(&c))
            fprintf(outf, "variant: zaya_router \"%s\", zaya_mlp \"%s\" (dense width %lld), zaya_residual_scaling %s\n\n",
                    zaya_router_name(c.router), zaya_mlp_name(c.mlp), (long long)zaya_config_dense_ffn(&c),
                    c.residual == ZAYA_RESIDUAL_SCALED ? "true" : "false");
        fprintf(outf, "parameters\n");
        fprintf(outf, "  %-30s %18s\n", "stored in total", with_commas(pc.total, b1, sizeof b1));
        fprintf(outf, "  %-30s %18s\n", "embedding (tied LM head)", with_commas(pc.embedding, b1, sizeof b1));
        fprintf(outf, "  %-30s %18s\n", "non-embedding", with_commas(pc.non_embedding, b1, sizeof b1));
        fprintf(outf, "  %-30s %18s\n", "active non-embedding (top-1)", with_commas(pc.active_non_embedding, b1, sizeof b1));
        fprintf(outf, "\n  %-30s %18s %18s\n", "component", "parameters", "active");
        for (int i = 0; i < NCOMP; i++)
            fprintf(outf, "  %-30s %18s %18s\n",
                    i == COMP_ATTN && c.attention != ZAYA_ATTENTION_CCA
                        ? (c.attention == ZAYA_ATTENTION_MHA ? "attention (MHA)" : "attention (GQA)")
                        : comp_names[i], with_commas(comp[i], b1, sizeof b1),
                   with_commas(i == COMP_BUFFERS ? 0 : comp_active[i], b2, sizeof b2));
        fprintf(outf, "\nKV cache per token: %lld bytes = %.1f KiB in bf16 (%.1f KiB in f32); per-sequence conv/value state %.1f KiB (bf16)\n",
               (long long)k16.kv_bytes_per_token, (double)k16.kv_bytes_per_token / 1024.0,
               (double)k32.kv_bytes_per_token / 1024.0, (double)k16.state_bytes_per_seq / 1024.0);
        fprintf(outf, "FLOPs per token at T=%lld: forward %.4g (matmul %.4g, conv %.4g, attention %.4g), training %.4g\n",
               (long long)seq, k16.forward_flops, k16.matmul_flops, k16.conv_flops, k16.attention_flops,
               k16.training_flops);
    }
    zaya_status status = ZAYA_OK;
    if (out) {
        char path[4096];
        if ((status = zaya_mkdir_p(out)) == ZAYA_OK &&
            (status = zaya_path_join(path, sizeof path, out, "model_info.json")) == ZAYA_OK &&
            (status = zaya_json_write_file(path, o, 1)) == ZAYA_OK)
            fprintf(stderr, "wrote %s\n", path);
    }
    cJSON_Delete(o);
    return status;
}

/* The GEMMs of one training step on one rank: every forward matmul (M = tokens it sees, N = output
 * width, K = input width) and its two backward GEMMs, input gradient (M, K, N) and weight gradient
 * (N, K, M). Experts are one grouped launch per layer with the balanced share of tokens each. The list
 * is the one source of a model's GEMMs: the sizing rules and the step model read it, and
 * `zaya bench gemm --from-config` times it (zaya_size_gemm_model_shapes). */
#include <string.h>

#include "zaya/bench_gemm.h"
#include "zaya/config.h"
#include "zaya/size.h"

typedef struct list {
    zaya_size_gemm_shape *g;
    int n, cap;
} list;

static zaya_size_gemm_shape *push(list *l, const char *name, int64_t m, int64_t n, int64_t k, int64_t groups,
                                  int64_t count, const char *dm, const char *dn, const char *dk) {
    if (count <= 0 || groups <= 0 || m <= 0 || n <= 0 || k <= 0 || l->n >= l->cap) return NULL;
    zaya_size_gemm_shape *s = &l->g[l->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->pass = "fwd";
    s->m = m;
    s->n = n;
    s->k = k;
    s->groups = groups;
    s->count = count;
    s->dim[0] = dm;
    s->dim[1] = dn;
    s->dim[2] = dk;
    return s;
}

int zaya_size_list_gemms(const zaya_size_arch *a, const zaya_size_run *run, zaya_size_gemm_shape *g, int cap) {
    list l = {g, 0, cap / 3};
    int64_t T = run->batch * run->seq, L = a->layers, D = a->hidden, d = a->head_dim;
    int64_t q = a->heads * d, kv = a->kv_heads * d, M = a->n_moe_layers;
    if (a->mla) {
        int64_t H = a->heads, qk = a->qk_nope_dim + a->qk_rope_dim;
        if (a->q_lora_rank > 0) {
            push(&l, "attn.q_a_proj", T, a->q_lora_rank, D, 1, L, "tokens", "q_lora_rank", "hidden");
            push(&l, "attn.q_b_proj", T, H * qk, a->q_lora_rank, 1, L, "tokens", "heads*qk_head_dim", "q_lora_rank");
        } else {
            push(&l, "attn.q_proj", T, H * qk, D, 1, L, "tokens", "heads*qk_head_dim", "hidden");
        }
        push(&l, "attn.kv_a_proj_with_mqa", T, a->kv_lora_rank + a->qk_rope_dim, D, 1, L, "tokens", "kv_lora_rank+rope",
             "hidden");
        push(&l, "attn.kv_b_proj", T, H * (a->qk_nope_dim + a->v_head_dim), a->kv_lora_rank, 1, L, "tokens",
             "heads*(nope+v_head_dim)", "kv_lora_rank");
        push(&l, "attn.o_proj", T, D, H * a->v_head_dim, 1, L, "tokens", "hidden", "heads*v_head_dim");
    } else {
        push(&l, "attn.q_proj", T, q, D, 1, L, "tokens", "heads*head_dim", "hidden");
        push(&l, "attn.k_proj", T, kv, D, 1, L, "tokens", "kv_heads*head_dim", "hidden");
        if (a->attn == ZAYA_SIZE_ATTN_CCA) {
            push(&l, "attn.v_proj (x2 halves)", T, kv / 2, D, 1, 2 * L, "tokens", "kv_heads*head_dim/2", "hidden");
            /* grouped conv: per head a (T, d) x (d*k1, d) product */
            zaya_size_gemm_shape *conv = push(&l, "attn.conv_grouped", T, d, d * a->cca_time1, a->heads + a->kv_heads, L,
                                              "tokens", "head_dim", "head_dim*cca_time1");
            if (conv) conv->conv = 1;
        } else {
            push(&l, "attn.v_proj", T, kv, D, 1, L, "tokens", "kv_heads*head_dim", "hidden");
        }
        push(&l, "attn.o_proj", T, D, q, 1, L, "tokens", "hidden", "heads*head_dim");
    }
    if (M > 0 && a->experts > 0) {
        if (a->router == ZAYA_SIZE_ROUTER_ZAYA) {
            int64_t R = a->router_hidden;
            push(&l, "router.down_proj", T, R, D, 1, M, "tokens", "router_hidden", "hidden");
            push(&l, "router.fc1+fc2", T, R, R, 1, 2 * M, "tokens", "router_hidden", "router_hidden");
            push(&l, "router.out_proj", T, a->router_classes, R, 1, M, "tokens", "experts+1", "router_hidden");
        } else {
            push(&l, "router.gate", T, a->experts, D, 1, M, "tokens", "experts", "hidden");
        }
        int64_t per = (T * a->top_k + a->experts - 1) / a->experts;
        push(&l, "experts.gate_up", per, 2 * a->expert_ffn, D, a->experts, M, "tokens/expert", "2*expert_ffn", "hidden");
        push(&l, "experts.down", per, D, a->expert_ffn, a->experts, M, "tokens/expert", "hidden", "expert_ffn");
        if (a->shared_experts > 0) {
            push(&l, "shared_expert.gate_up", T, 2 * a->shared_ffn, D, a->shared_experts, M, "tokens", "2*shared_ffn", "hidden");
            push(&l, "shared_expert.down", T, D, a->shared_ffn, a->shared_experts, M, "tokens", "hidden", "shared_ffn");
        }
    }
    if (L - M > 0) {
        push(&l, "mlp.gate_up", T, 2 * a->dense_ffn, D, 1, L - M, "tokens", "2*intermediate", "hidden");
        push(&l, "mlp.down", T, D, a->dense_ffn, 1, L - M, "tokens", "hidden", "intermediate");
    }
    push(&l, "lm_head", T, a->vocab, D, 1, 1, "tokens", "vocab", "hidden");
    int nf = l.n;
    for (int i = 0; i < nf; i++) {
        zaya_size_gemm_shape f = g[i];
        zaya_size_gemm_shape *dg = &g[l.n++], *wg;
        *dg = f;
        dg->pass = "dgrad";
        dg->n = f.k;
        dg->k = f.n;
        dg->dim[1] = f.dim[2];
        dg->dim[2] = f.dim[1];
        wg = &g[l.n++];
        *wg = f;
        wg->pass = "wgrad";
        wg->m = f.n;
        wg->n = f.k;
        wg->k = f.m;
        wg->dim[0] = f.dim[1];
        wg->dim[1] = f.dim[2];
        wg->dim[2] = f.dim[0];
    }
    return l.n;
}

/* The part of the model a GEMM belongs to, from its name's prefix (bench gemm's --only groups). */
static const char *gemm_group(const char *name) {
    static const struct { const char *prefix, *group; } parts[] = {
        {"attn.", "attn"}, {"router.", "router"}, {"experts.", "expert"}, {"shared_expert.", "expert"},
        {"mlp.", "mlp"}, {"lm_head", "head"}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (!strncmp(name, parts[i].prefix, strlen(parts[i].prefix))) return parts[i].group;
    return "other";
}

int zaya_size_gemm_model_shapes(const zaya_config *config, int64_t tokens, zaya_dtype dtype, zaya_gemm_shape *out,
                                int cap) {
    zaya_size_arch a;
    zaya_size_arch_from_zaya_config(config, &a);
    zaya_size_run run = {1, tokens, 1};
    zaya_size_gemm_shape g[ZAYA_SIZE_MAX_GEMMS];
    int n = zaya_size_list_gemms(&a, &run, g, ZAYA_SIZE_MAX_GEMMS), nf = n / 3, total = 0;
    /* y[t, out] = x[t, in] W[out, in]^T, dx = dy W, dW += dy^T x: (transpose A, transpose B, beta) per pass */
    static const int ta[3] = {0, 0, 1}, tb[3] = {1, 0, 0};
    static const float beta[3] = {0, 0, 1};
    for (int i = 0; i < nf; i++) {
        if (g[i].conv) continue;
        const zaya_size_gemm_shape *pass[3] = {&g[i], &g[nf + 2 * i], &g[nf + 2 * i + 1]};
        for (int p = 0; p < 3; p++, total++) {
            if (total >= cap) continue;
            zaya_gemm_shape *s = &out[total];
            memset(s, 0, sizeof *s);
            snprintf(s->group, sizeof s->group, "%s", gemm_group(g[i].name));
            snprintf(s->name, sizeof s->name, "%.39s", g[i].name);
            snprintf(s->pass, sizeof s->pass, "%s", pass[p]->pass);
            s->dtype = dtype;
            s->trans_a = ta[p];
            s->trans_b = tb[p];
            s->m = pass[p]->m;
            s->n = pass[p]->n;
            s->k = pass[p]->k;
            s->beta = beta[p];
            s->count = (double)pass[p]->count * (double)pass[p]->groups;
        }
    }
    return total;
}

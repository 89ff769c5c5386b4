/* Training memory per rank: model state under ZeRO stages and activations with and without full
 * recomputation. Assumptions (printed by `zaya size info`): bf16 working weights, fp32 master weights,
 * fp32 gradient accumulation, fp32 optimizer states; flash-style attention (no T x T score matrix is
 * kept, only the per-row log-sum-exp); activations stored in bf16, the ZAYA residual stream in fp32;
 * fp32 logits for the loss. */
#include <string.h>

#include "zaya/size.h"

void zaya_mem_opts_default(zaya_mem_opts *o) {
    memset(o, 0, sizeof *o);
    o->zero_stage = 1;
    o->dp = 1;
    o->optimizer = ZAYA_OPT_ADAMW;
    o->weight_bytes = 2;
    o->master_bytes = 4;
    o->grad_bytes = 4;
    o->state_bytes = 4;
    o->micro_batch = 1;
    o->seq = 4096;
}

/* Activation bytes one token leaves for the backward pass in one layer (averaged over dense and MoE
 * layers). */
static double act_bytes_per_token_layer(const zaya_arch *a) {
    const double h = 2, f32 = 4;
    double D = (double)a->hidden, d = (double)a->head_dim;
    double q = (double)a->heads * d, kv = (double)a->kv_heads * d;
    double res = a->residual_scales ? f32 : h;
    /* attention half: residual input, normed input, q, k, v, attention output, log-sum-exp */
    double attn = res * D + h * D + h * (q + 2 * kv) + h * q + f32 * (double)a->heads;
    if (a->attn == ZAYA_ATTN_CCA) attn += h * 3 * (q + kv); /* pre-conv q|k, depthwise output, pre-norm q|k */
    /* feed-forward half: residual input and normed input */
    double ffn = res * D + h * D;
    double moe = 0, dense = 0;
    if (a->experts > 0) {
        double F = (double)a->expert_ffn;
        if (a->router == ZAYA_ROUTER_ZAYA) moe += f32 * (4.0 * a->router_hidden + a->router_classes);
        else moe += f32 * (double)a->experts;
        /* per chosen expert: dispatched input, gate, up, SwiGLU product */
        moe += (double)a->top_k * h * (D + 3 * F);
        if (a->shared_experts) moe += (double)a->shared_experts * h * 3 * (double)a->shared_ffn;
    }
    if (a->dense_ffn > 0) dense = h * 3 * (double)a->dense_ffn;
    double frac_moe = (double)a->n_moe_layers / (double)a->layers;
    ffn += frac_moe * moe + (1 - frac_moe) * dense;
    if (a->residual_scales) ffn += res * 2 * D; /* merge inputs for the scale gradients */
    return attn + ffn;
}

void zaya_size_train_memory(const zaya_arch *a, const zaya_mem_opts *o, zaya_mem *m) {
    memset(m, 0, sizeof *m);
    zaya_params p;
    zaya_size_count_params(a, &p);
    double P = (double)p.total, dp = o->dp > 0 ? o->dp : 1;
    double states = o->optimizer == ZAYA_OPT_MUON ? 1.0 * (double)p.matrix_total + 2.0 * (P - (double)p.matrix_total)
                                                  : 2.0 * P;
    m->weights = P * o->weight_bytes / (o->zero_stage >= 3 ? dp : 1);
    m->master = P * o->master_bytes / (o->zero_stage >= 1 ? dp : 1);
    m->grads = P * o->grad_bytes / (o->zero_stage >= 2 ? dp : 1);
    m->optimizer = states * o->state_bytes / (o->zero_stage >= 1 ? dp : 1);
    double tokens = (double)o->micro_batch * (double)o->seq;
    m->act_per_layer = act_bytes_per_token_layer(a) * tokens;
    m->logits = tokens * (double)a->vocab * 4.0;
    double res = a->residual_scales ? 4 : 2;
    m->act_full = m->act_per_layer * (double)a->layers + m->logits;
    /* full recomputation keeps each layer's input and re-creates one layer at a time */
    m->act_recompute = res * (double)a->hidden * tokens * (double)a->layers + m->act_per_layer + m->logits;
    double state = m->weights + m->master + m->grads + m->optimizer;
    m->total = state + m->act_full;
    m->total_recompute = state + m->act_recompute;
}

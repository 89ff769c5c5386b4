/* Training memory per rank: model state under ZeRO stages and activations with and without full
 * recomputation. Assumptions (printed by `zaya size info`): bf16 working weights, fp32 master weights,
 * fp32 gradient accumulation, fp32 optimizer states; flash-style attention (no T x T score matrix is
 * kept, only the per-row log-sum-exp); activations stored in bf16, the ZAYA residual stream in fp32;
 * fp32 logits for the loss. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zaya/size.h"

void zaya_size_mem_opts_default(zaya_size_mem_opts *o) {
    memset(o, 0, sizeof *o);
    o->zero_stage = 1;
    o->dp = 1;
    o->cp = 1;
    o->optimizer = ZAYA_SIZE_OPT_ADAMW;
    o->weight_bytes = 2;
    o->master_bytes = 4;
    o->grad_bytes = 4;
    o->state_bytes = 4;
    o->micro_batch = 1;
    o->seq = 4096;
}

/* Activation bytes one token leaves for the backward pass in one layer (averaged over dense and MoE
 * layers). */
static double act_bytes_per_token_layer(const zaya_size_arch *a) {
    const double h = 2, f32 = 4;
    double D = (double)a->hidden, d = (double)a->head_dim;
    double q = (double)a->heads * d, kv = (double)a->kv_heads * d;
    double res = a->residual_scales ? f32 : h;
    /* attention half: residual input, normed input, q, k, v, attention output, log-sum-exp */
    double attn = res * D + h * D + h * (q + 2 * kv) + h * q + f32 * (double)a->heads;
    if (a->attn == ZAYA_SIZE_ATTN_CCA) attn += h * 3 * (q + kv); /* pre-conv q|k, depthwise output, pre-norm q|k */
    /* feed-forward half: residual input and normed input */
    double ffn = res * D + h * D;
    double moe = 0, dense = 0;
    if (a->experts > 0) {
        double F = (double)a->expert_ffn;
        if (a->router == ZAYA_SIZE_ROUTER_ZAYA) moe += f32 * (4.0 * a->router_hidden + a->router_classes);
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

double zaya_size_cp_buffer_bytes(const zaya_size_arch *a, const zaya_size_mem_opts *o) {
    zaya_size_mem m;
    zaya_size_train_memory(a, o, &m);
    return m.cp_buffers;
}

void zaya_size_train_memory(const zaya_size_arch *a, const zaya_size_mem_opts *o, zaya_size_mem *m) {
    memset(m, 0, sizeof *m);
    zaya_size_params p;
    zaya_size_count_params(a, &p);
    /* ZeRO shards over the whole world, data- and context-parallel ranks alike (as the trainer does) */
    const double cp = o->cp > 0 ? o->cp : 1;
    double P = (double)(p.total + p.mtp), dp = (o->dp > 0 ? o->dp : 1) * cp; /* MTP modules are trained too */
    double states = o->optimizer == ZAYA_SIZE_OPT_MUON ? 1.0 * (double)p.matrix_total + 2.0 * (P - (double)p.matrix_total)
                                                  : 2.0 * P;
    m->weights = P * o->weight_bytes / (o->zero_stage >= 3 ? dp : 1);
    m->master = P * o->master_bytes / (o->zero_stage >= 1 ? dp : 1);
    m->grads = P * o->grad_bytes / (o->zero_stage >= 2 ? dp : 1);
    m->optimizer = states * o->state_bytes / (o->zero_stage >= 1 ? dp : 1);
    double tokens = (double)o->micro_batch * (double)o->seq / cp; /* this rank's chunk */
    m->act_per_layer = act_bytes_per_token_layer(a) * tokens;
    if (cp > 1) { /* gathered K, V, their gradients, and the staging of both exchanges: f32 */
        const double kv = (double)a->kv_heads * (double)a->head_dim, whole = (double)o->micro_batch * (double)o->seq;
        m->cp_buffers = 4.0 * (4 * whole * kv + 2 * whole * kv + 2 * tokens * kv);
    }
    m->logits = tokens * (double)a->vocab * 4.0;
    double res = a->residual_scales ? 4 : 2;
    m->act_full = m->act_per_layer * (double)a->layers + m->logits + m->cp_buffers;
    /* full recomputation keeps each layer's input and re-creates one layer at a time */
    m->act_recompute = res * (double)a->hidden * tokens * (double)a->layers + m->act_per_layer + m->logits + m->cp_buffers;
    double state = m->weights + m->master + m->grads + m->optimizer;
    m->total = state + m->act_full;
    m->total_recompute = state + m->act_recompute;
}

double zaya_size_mem_bytes_per_param(const zaya_size_mem_opts *o) {
    return (double)(o->weight_bytes + o->master_bytes + o->grad_bytes + 2 * o->state_bytes);
}

zaya_status zaya_size_mem_parse_dtype(const char *s, int allow_none, int *bytes) {
    if (!strcmp(s, "fp32") || !strcmp(s, "f32")) *bytes = 4;
    else if (!strcmp(s, "bf16") || !strcmp(s, "fp16")) *bytes = 2;
    else if (allow_none && !strcmp(s, "none")) *bytes = 0;
    else return zaya_error_set(ZAYA_EINVAL, "dtype '%s' (use fp32 or bf16%s)", s, allow_none ? " or none" : "");
    return ZAYA_OK;
}

static double gib(double b) { return b / (1024.0 * 1024 * 1024); }

static double need_of(const zaya_size_arch *a, const zaya_size_mem_opts *o, zaya_size_mem *m) {
    zaya_size_train_memory(a, o, m);
    return o->recompute ? m->total_recompute : m->total;
}

void zaya_size_train_fit(const zaya_size_arch *a, const zaya_size_mem_opts *o, double cap, zaya_size_fit *f) {
    memset(f, 0, sizeof *f);
    zaya_size_mem m;
    f->need = need_of(a, o, &m);
    f->cap = cap;
    f->fits = !(cap > 0) || f->need <= cap;
    const char *names[] = {"weights", "master weights", "gradients", "optimizer states", "activations"};
    double vals[] = {m.weights, m.master, m.grads, m.optimizer, o->recompute ? m.act_recompute : m.act_full};
    for (int i = 0; i < 5; i++)
        if (vals[i] > f->largest_bytes) {
            f->largest_bytes = vals[i];
            snprintf(f->largest, sizeof f->largest, "%s", names[i]);
        }
    if (f->fits) return;
    /* single changes, least disruptive first: a higher ZeRO stage, recomputation, a smaller micro-batch */
    zaya_size_mem_opts t;
    zaya_size_mem tm;
    if (o->dp > 1)
        for (int z = o->zero_stage + 1; z <= 3; z++) {
            t = *o;
            t.zero_stage = z;
            if (need_of(a, &t, &tm) <= cap) {
                snprintf(f->advice, sizeof f->advice, "fits with ZeRO-%d (--zero %d): %.1f GiB", z, z, gib(need_of(a, &t, &tm)));
                return;
            }
        }
    if (!o->recompute) {
        t = *o;
        t.recompute = 1;
        if (need_of(a, &t, &tm) <= cap) {
            snprintf(f->advice, sizeof f->advice, "fits with activation recomputation (--recompute): %.1f GiB", gib(need_of(a, &t, &tm)));
            return;
        }
    }
    for (int64_t b = o->micro_batch / 2; b >= 1; b /= 2) {
        t = *o;
        t.micro_batch = b;
        if (need_of(a, &t, &tm) <= cap) {
            snprintf(f->advice, sizeof f->advice, "fits at micro-batch %lld (--batch %lld, gradient accumulation for the rest): %.1f GiB",
                     (long long)b, (long long)b, gib(need_of(a, &t, &tm)));
            return;
        }
    }
    /* more ranks: the sharded state shrinks as 1/DP, what is not sharded stays */
    t = *o;
    t.zero_stage = 3;
    t.recompute = 1;
    t.micro_batch = 1;
    t.dp = 1;
    zaya_size_train_memory(a, &t, &tm);
    double state = tm.weights + tm.master + tm.grads + tm.optimizer, fixed = tm.act_recompute;
    if (fixed >= cap) {
        snprintf(f->advice, sizeof f->advice,
                 "does not fit on any number of ranks here: the activations of one sequence alone need %.1f GiB "
                 "(a shorter --seq, or tensor/pipeline parallelism, which this model does not size)", gib(fixed));
        return;
    }
    double dp = ceil(state / (cap - fixed));
    if (dp < 2) dp = 2;
    /* ZeRO-3 at the current recompute / micro-batch if that is enough, else name the extra changes */
    t = *o;
    t.zero_stage = 3;
    t.dp = (int)(dp < 1e9 ? dp : 1e9);
    for (int tries = 0; tries < 64 && need_of(a, &t, &tm) > cap && t.dp < 1000000000; tries++) t.dp = t.dp * 5 / 4 + 1;
    if (need_of(a, &t, &tm) <= cap) {
        int more = t.dp - o->dp;
        snprintf(f->advice, sizeof f->advice, "needs ZeRO-3 at DP >= %d (%d more GPUs%s): %.1f GiB", t.dp, more > 0 ? more : 0,
                 o->zero_stage == 3 ? "" : ", --zero 3", gib(need_of(a, &t, &tm)));
        return;
    }
    t.recompute = 1;
    t.micro_batch = 1;
    t.dp = (int)(dp < 1e9 ? dp : 1e9);
    for (int tries = 0; tries < 64 && need_of(a, &t, &tm) > cap && t.dp < 1000000000; tries++) t.dp = t.dp * 5 / 4 + 1;
    snprintf(f->advice, sizeof f->advice, "needs ZeRO-3 + recomputation at micro-batch 1 and DP >= %d: %.1f GiB", t.dp,
             gib(need_of(a, &t, &tm)));
}

void zaya_size_infer_fit(const zaya_size_arch *a, int64_t batch, int64_t context, int bytes_per_value, double cap, zaya_size_fit *f) {
    zaya_size_infer_fit_weights(a, batch, context, bytes_per_value, NULL, cap, f);
}

void zaya_size_infer_fit_weights(const zaya_size_arch *a, int64_t batch, int64_t context, int bytes_per_value,
                                 const zaya_size_weights *wf, double cap, zaya_size_fit *f) {
    memset(f, 0, sizeof *f);
    double w;
    if (wf && wf->format != ZAYA_SIZE_WF_DEFAULT) {
        zaya_size_weight_bytes wb;
        zaya_size_weights_bytes(a, wf, bytes_per_value, &wb);
        w = wb.total;
    } else {
        zaya_size_params p;
        zaya_size_count_params(a, &p);
        w = (double)p.total * bytes_per_value;
    }
    double kv = (zaya_size_kv_bytes(a, context, bytes_per_value) + zaya_size_kv_state_bytes(a, bytes_per_value)) * (double)batch;
    f->need = w + kv;
    f->cap = cap;
    f->fits = !(cap > 0) || f->need <= cap;
    snprintf(f->largest, sizeof f->largest, "%s", w >= kv ? "weights" : "KV cache");
    f->largest_bytes = w >= kv ? w : kv;
    if (f->fits) return;
    if (w >= cap) {
        snprintf(f->advice, sizeof f->advice, "the weights alone need %.1f GiB: at least %d devices (tensor/expert parallel)",
                 gib(w), (int)ceil(f->need / cap));
        return;
    }
    double per_seq = kv / (double)batch;
    int64_t bmax = (int64_t)((cap - w) / per_seq);
    if (bmax >= 1)
        snprintf(f->advice, sizeof f->advice, "fits at batch <= %lld (KV %.2f GiB per sequence)", (long long)bmax, gib(per_seq));
    else
        snprintf(f->advice, sizeof f->advice, "one sequence's KV cache (%.1f GiB) does not fit beside the weights: a shorter context or %d devices",
                 gib(per_seq), (int)ceil(f->need / cap));
}

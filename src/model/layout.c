/* Parameter layout: the tensor table (HF names, shapes, offsets) and pointer binding.
 * Tensors whose matmuls are fused are placed adjacently: q_proj|k_proj and v_proj_current|
 * v_proj_delayed, so one GEMM computes both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/internal.h"

typedef struct layout_builder {
    zaya_tensor_info *t; /* NULL while counting */
    int n;
    int64_t off;
    int fuse_next; /* set before adding the first tensor of a fused pair */
} layout_builder;

static int64_t add(layout_builder *b, const char *name, int layer, zaya_opt_class opt, int ndim, int64_t d0,
                   int64_t d1, int64_t d2) {
    int64_t numel = d0 * (ndim > 1 ? d1 : 1) * (ndim > 2 ? d2 : 1);
    if (b->t) {
        zaya_tensor_info *t = &b->t[b->n];
        memset(t, 0, sizeof *t);
        snprintf(t->name, sizeof t->name, "%s", name);
        t->ndim = ndim;
        t->shape[0] = d0;
        t->shape[1] = ndim > 1 ? d1 : 0;
        t->shape[2] = ndim > 2 ? d2 : 0;
        t->offset = b->off;
        t->numel = numel;
        t->opt = opt;
        t->layer = layer;
        t->nmatrix = strstr(name, ".experts.") ? (int)d0 : 1; /* experts are separate matrices */
    }
    b->n++;
    int64_t at = b->off;
    /* 16-float alignment keeps every tensor 64-byte aligned for vector loads and oneDNN, except
     * where the next tensor must follow without a gap (fused q|k and v_current|v_delayed GEMMs). */
    b->off += b->fuse_next ? numel : (numel + 15) / 16 * 16;
    b->fuse_next = 0;
    return at;
}

/* The tensor added next is followed by the one after it with no gap: the pair forms one
 * [rows1 + rows2, in] matrix. */
static void fuse_with_next(layout_builder *b) { b->fuse_next = 1; }

/* Names are formatted only in the filling pass (the counting pass needs none). */
#define LN(buf, l, suffix) (b->t ? (snprintf(buf, sizeof buf, "model.layers.%d.%.60s", l, suffix), buf) : "")

static void build(const zaya_config *c, layout_builder *b) {
    const int64_t D = c->hidden_size, V = c->vocab_size, R = c->router_hidden_size, E = c->num_experts;
    const int64_t F = c->moe_intermediate_size, hd = c->head_dim;
    const int64_t qd = zaya_config_q_dim(c), kvd = zaya_config_kv_dim(c), C = qd + kvd;
    const int64_t Fd = zaya_config_dense_ffn(c);
    const int scaled = c->residual == ZAYA_RESIDUAL_SCALED;
    char nm[96];
    add(b, "model.embed_tokens.weight", -1, ZAYA_OPT_ADAMW, 2, V, D, 0);
    if (b->t) b->t[b->n - 1].embedding = 1;
    add(b, "model.input_hidden_states_scale", -1, ZAYA_OPT_ADAMW, 1, D, 0, 0);
    add(b, "model.input_hidden_states_bias", -1, ZAYA_OPT_ADAMW, 1, D, 0, 0);
    for (int l = 0; l < (int)c->num_hidden_layers; l++) {
        add(b, LN(nm, l, "input_layernorm.weight"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
        if (c->attention != ZAYA_ATTENTION_CCA) {
            /* GQA / MHA: standard projections, q|k adjacent for one GEMM (RoPE rotates both at once). */
            fuse_with_next(b);
            add(b, LN(nm, l, "self_attn.q_proj.weight"), l, ZAYA_OPT_MUON, 2, qd, D, 0);
            add(b, LN(nm, l, "self_attn.k_proj.weight"), l, ZAYA_OPT_MUON, 2, kvd, D, 0);
            add(b, LN(nm, l, "self_attn.v_proj.weight"), l, ZAYA_OPT_MUON, 2, kvd, D, 0);
            add(b, LN(nm, l, "self_attn.o_proj.weight"), l, ZAYA_OPT_MUON, 2, D, qd, 0);
        } else {
            fuse_with_next(b);
            add(b, LN(nm, l, "self_attn.qkv_proj.q_proj.weight"), l, ZAYA_OPT_MUON, 2, qd, D, 0);
            add(b, LN(nm, l, "self_attn.qkv_proj.k_proj.weight"), l, ZAYA_OPT_MUON, 2, kvd, D, 0);
            fuse_with_next(b);
            add(b, LN(nm, l, "self_attn.qkv_proj.v_proj_current.weight"), l, ZAYA_OPT_MUON, 2, kvd / 2, D, 0);
            add(b, LN(nm, l, "self_attn.qkv_proj.v_proj_delayed.weight"), l, ZAYA_OPT_MUON, 2, kvd / 2, D, 0);
            add(b, LN(nm, l, "self_attn.qkv_proj.conv_qk_depthwise.weight"), l, ZAYA_OPT_ADAMW, 3, C, 1, c->cca_time0);
            add(b, LN(nm, l, "self_attn.qkv_proj.conv_qk_depthwise.bias"), l, ZAYA_OPT_ADAMW, 1, C, 0, 0);
            add(b, LN(nm, l, "self_attn.qkv_proj.conv_qk_grouped.weight"), l, ZAYA_OPT_ADAMW, 3, C, hd, c->cca_time1);
            add(b, LN(nm, l, "self_attn.qkv_proj.conv_qk_grouped.bias"), l, ZAYA_OPT_ADAMW, 1, C, 0, 0);
            add(b, LN(nm, l, "self_attn.qk_norm.temp"), l, ZAYA_OPT_ADAMW, 1, c->num_key_value_heads, 0, 0);
            add(b, LN(nm, l, "self_attn.o_proj.weight"), l, ZAYA_OPT_MUON, 2, D, qd, 0);
        }
        if (scaled) {
            add(b, LN(nm, l, "post_attention_residual_scale.hidden_states_scale"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
            add(b, LN(nm, l, "post_attention_residual_scale.hidden_states_bias"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
            add(b, LN(nm, l, "post_attention_residual_scale.residual_scale"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
            add(b, LN(nm, l, "post_attention_residual_scale.residual_bias"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
        }
        add(b, LN(nm, l, "post_attention_layernorm.weight"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
        if (c->mlp == ZAYA_MLP_DENSE) {
            /* gate_proj|up_proj adjacent: one [2 Fd, D] GEMM, rows as an expert's gate_up_proj */
            fuse_with_next(b);
            add(b, LN(nm, l, "mlp.gate_proj.weight"), l, ZAYA_OPT_MUON, 2, Fd, D, 0);
            add(b, LN(nm, l, "mlp.up_proj.weight"), l, ZAYA_OPT_MUON, 2, Fd, D, 0);
            add(b, LN(nm, l, "mlp.down_proj.weight"), l, ZAYA_OPT_MUON, 2, D, Fd, 0);
        } else {
            if (c->router == ZAYA_ROUTER_LINEAR) {
                add(b, LN(nm, l, "mlp.gate.weight"), l, ZAYA_OPT_MUON, 2, E, D, 0);
            } else {
                add(b, LN(nm, l, "mlp.gate.down_proj.weight"), l, ZAYA_OPT_MUON, 2, R, D, 0);
                add(b, LN(nm, l, "mlp.gate.down_proj.bias"), l, ZAYA_OPT_ADAMW, 1, R, 0, 0);
                if (l > 0 && zaya_config_has_eda(c))
                    add(b, LN(nm, l, "mlp.gate.router_states_scale"), l, ZAYA_OPT_ADAMW, 1, R, 0, 0);
                add(b, LN(nm, l, "mlp.gate.router_mlp.norm.weight"), l, ZAYA_OPT_ADAMW, 1, R, 0, 0);
                add(b, LN(nm, l, "mlp.gate.router_mlp.fc1.weight"), l, ZAYA_OPT_MUON, 2, R, R, 0);
                add(b, LN(nm, l, "mlp.gate.router_mlp.fc1.bias"), l, ZAYA_OPT_ADAMW, 1, R, 0, 0);
                add(b, LN(nm, l, "mlp.gate.router_mlp.fc2.weight"), l, ZAYA_OPT_MUON, 2, R, R, 0);
                add(b, LN(nm, l, "mlp.gate.router_mlp.fc2.bias"), l, ZAYA_OPT_ADAMW, 1, R, 0, 0);
                add(b, LN(nm, l, "mlp.gate.router_mlp.out_proj.weight"), l, ZAYA_OPT_MUON, 2, E + 1, R, 0);
            }
            /* E + 1 entries for every router (a linear router never selects the last, skip, column) */
            add(b, LN(nm, l, "mlp.gate.balancing_biases"), l, ZAYA_OPT_NONE, 1, E + 1, 0, 0);
            add(b, LN(nm, l, "mlp.experts.gate_up_proj"), l, ZAYA_OPT_MUON, 3, E, 2 * F, D);
            add(b, LN(nm, l, "mlp.experts.down_proj"), l, ZAYA_OPT_MUON, 3, E, D, F);
        }
        if (scaled) {
            add(b, LN(nm, l, "post_mlp_residual_scale.hidden_states_scale"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
            add(b, LN(nm, l, "post_mlp_residual_scale.hidden_states_bias"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
            add(b, LN(nm, l, "post_mlp_residual_scale.residual_scale"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
            add(b, LN(nm, l, "post_mlp_residual_scale.residual_bias"), l, ZAYA_OPT_ADAMW, 1, D, 0, 0);
        }
    }
    add(b, "model.norm.weight", -1, ZAYA_OPT_ADAMW, 1, D, 0, 0);
}

zaya_status zaya_layout_build(const zaya_config *c, zaya_tensor_info **tensors, int *ntensors, int64_t *nfloats) {
    /* The bounds checked there keep every size and offset below int64 overflow. */
    ZAYA_TRY(zaya_config_validate(c));
    layout_builder b = {0};
    build(c, &b);
    zaya_tensor_info *t = calloc((size_t)b.n, sizeof *t);
    if (!t) return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the tensor table (%d tensors)", b.n);
    layout_builder b2 = {t, 0, 0, 0};
    build(c, &b2);
    *tensors = t;
    *ntensors = b2.n;
    *nfloats = b2.off;
    return ZAYA_OK;
}

/* Tensor order within a block is fixed by build(); binding walks the same order. */
void zaya_layout_bind(const zaya_model *m, float *base, zaya_params *p) {
    const zaya_tensor_info *t = m->tensors;
    const zaya_config *c = &m->cfg;
    const int scaled = c->residual == ZAYA_RESIDUAL_SCALED;
    int i = 0;
#define NEXT() (base + t[i++].offset)
    p->embed = NEXT();
    p->in_scale = NEXT();
    p->in_bias = NEXT();
    for (int l = 0; l < (int)m->cfg.num_hidden_layers; l++) {
        zaya_layer_params *L = &p->layers[l];
        memset(L, 0, sizeof *L); /* tensors a variant lacks stay NULL */
        L->in_norm = NEXT();
        if (m->cfg.attention != ZAYA_ATTENTION_CCA) {
            L->wqk = NEXT();
            i++; /* k_proj: adjacent to q_proj, addressed through wqk */
            L->wv = NEXT();
            L->wo = NEXT();
        } else {
            L->wqk = NEXT();
            i++; /* k_proj: adjacent to q_proj, addressed through wqk */
            L->wv = NEXT();
            i++; /* v_proj_delayed: adjacent to v_proj_current */
            L->conv0_w = NEXT();
            L->conv0_b = NEXT();
            L->conv1_w = NEXT();
            L->conv1_b = NEXT();
            L->temp = NEXT();
            L->wo = NEXT();
        }
        if (scaled) {
            L->att_hs = NEXT();
            L->att_hb = NEXT();
            L->att_rs = NEXT();
            L->att_rb = NEXT();
        }
        L->post_norm = NEXT();
        if (c->mlp == ZAYA_MLP_DENSE) {
            L->gate_up = NEXT();
            i++; /* up_proj: adjacent to gate_proj, addressed through gate_up */
            L->down = NEXT();
        } else {
            if (c->router == ZAYA_ROUTER_LINEAR) {
                L->r_lin_w = NEXT();
            } else {
                L->r_down_w = NEXT();
                L->r_down_b = NEXT();
                L->r_eda = l > 0 && zaya_config_has_eda(c) ? NEXT() : NULL;
                L->r_norm = NEXT();
                L->r_fc1_w = NEXT();
                L->r_fc1_b = NEXT();
                L->r_fc2_w = NEXT();
                L->r_fc2_b = NEXT();
                L->r_out_w = NEXT();
            }
            L->bal_bias = NEXT();
            L->gate_up = NEXT();
            L->down = NEXT();
        }
        if (scaled) {
            L->mlp_hs = NEXT();
            L->mlp_hb = NEXT();
            L->mlp_rs = NEXT();
            L->mlp_rb = NEXT();
        }
    }
    p->final_norm = NEXT();
#undef NEXT
    ZAYA_ASSERT(i == m->ntensors);
}

zaya_param_counts zaya_model_count_params(const zaya_config *c) {
    zaya_param_counts pc = {0};
    zaya_tensor_info *t = NULL;
    int n = 0;
    int64_t nf = 0;
    if (zaya_layout_build(c, &t, &n, &nf) != ZAYA_OK) return pc;
    int64_t expert_inactive = 0;
    for (int i = 0; i < n; i++) {
        if (t[i].opt == ZAYA_OPT_NONE) {
            pc.buffers += t[i].numel;
            continue;
        }
        pc.total += t[i].numel;
        if (t[i].embedding) pc.embedding += t[i].numel;
        if (t[i].nmatrix > 1) expert_inactive += t[i].numel / t[i].nmatrix * (t[i].nmatrix - 1);
    }
    pc.non_embedding = pc.total - pc.embedding;
    pc.active_non_embedding = pc.non_embedding - expert_inactive;
    free(t);
    return pc;
}

zaya_status zaya_layout_build_public(const zaya_config *c, zaya_tensor_info **tensors, int *ntensors, int64_t *nfloats) {
    return zaya_layout_build(c, tensors, ntensors, nfloats);
}

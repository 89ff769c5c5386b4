/* A small synthetic tensor table covering every optimizer case (shared by test_optim.c and
 * ref/optim_ref.c): a decayed embedding, a norm, a conv kernel, a wide and a tall matrix, stacked
 * experts and a balancing-bias buffer. */
#ifndef ZAYA_OPTIM_FIXTURE_H
#define ZAYA_OPTIM_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "zaya/model.h"

typedef struct fx_table {
    zaya_tensor_info t[16];
    int n;
    int64_t nfloats;
} fx_table;

static inline void fx_add(fx_table *f, const char *name, zaya_opt_class opt, int ndim, int64_t d0, int64_t d1,
                          int64_t d2, int layer) {
    zaya_tensor_info *t = &f->t[f->n++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->ndim = ndim;
    t->shape[0] = d0;
    t->shape[1] = d1;
    t->shape[2] = d2;
    t->numel = d0 * (ndim > 1 ? d1 : 1) * (ndim > 2 ? d2 : 1);
    t->offset = f->nfloats;
    t->opt = opt;
    t->layer = layer;
    t->nmatrix = strstr(name, "experts") ? (int)d0 : 1;
    t->embedding = strstr(name, "embed") != NULL;
    f->nfloats += (t->numel + 15) / 16 * 16;
}

static inline void fx_build(fx_table *f) {
    memset(f, 0, sizeof *f);
    fx_add(f, "model.embed_tokens.weight", ZAYA_OPT_ADAMW, 2, 50, 16, 0, -1);
    fx_add(f, "model.layers.0.input_layernorm.weight", ZAYA_OPT_ADAMW, 1, 16, 0, 0, 0);
    fx_add(f, "model.layers.0.self_attn.qkv_proj.conv_qk_depthwise.weight", ZAYA_OPT_ADAMW, 3, 8, 1, 2, 0);
    fx_add(f, "model.layers.0.self_attn.qkv_proj.q_proj.weight", ZAYA_OPT_MUON, 2, 24, 40, 0, 0);
    fx_add(f, "model.layers.0.self_attn.o_proj.weight", ZAYA_OPT_MUON, 2, 48, 16, 0, 0);
    fx_add(f, "model.layers.0.mlp.gate.balancing_biases", ZAYA_OPT_NONE, 1, 4, 0, 0, 0);
    fx_add(f, "model.layers.0.mlp.experts.gate_up_proj", ZAYA_OPT_MUON, 3, 3, 20, 12, 0);
    fx_add(f, "model.norm.weight", ZAYA_OPT_ADAMW, 1, 16, 0, 0, -1);
}

#endif

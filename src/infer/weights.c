/* Inference weight store: layout, binding, model views and deterministic random weights. Loading
 * from checkpoints is in weights_load.c. */
#include <stdlib.h>
#include <string.h>

#include "infer/weights_internal.h"
#include "zaya/alloc.h"
#include "zaya/bf16.h"

int zaya_infer_is_matrix(const zaya_tensor_info *t) { return t->ndim >= 2 && !strstr(t->name, "conv_qk"); }

static int64_t esize(zaya_dtype dt) { return dt == ZAYA_DTYPE_BF16 ? 2 : 4; }

/* Tensor order within a block is the layout's (src/model/layout.c). */
static void bind(zaya_infer_weights *w) {
    const void **d = w->data;
    const zaya_config *c = &w->cfg;
    const int scaled = c->residual == ZAYA_RESIDUAL_SCALED;
    int i = 0;
#define NEXT_V() ((const float *)d[i++])
#define NEXT_M() (d[i++])
    w->embed = NEXT_M();
    w->in_scale = NEXT_V();
    w->in_bias = NEXT_V();
    for (int l = 0; l < (int)w->cfg.num_hidden_layers; l++) {
        zaya_infer_layer_w *L = &w->layers[l];
        memset(L, 0, sizeof *L); /* tensors a variant lacks stay NULL */
        L->in_norm = NEXT_V();
        L->wq = NEXT_M();
        L->wk = NEXT_M();
        L->wv_cur = NEXT_M();
        L->wv_del = NEXT_M();
        L->conv0_w = NEXT_V();
        L->conv0_b = NEXT_V();
        L->conv1_w = NEXT_V();
        L->conv1_b = NEXT_V();
        L->temp = NEXT_V();
        L->wo = NEXT_M();
        if (scaled) {
            L->att_hs = NEXT_V();
            L->att_hb = NEXT_V();
            L->att_rs = NEXT_V();
            L->att_rb = NEXT_V();
        }
        L->post_norm = NEXT_V();
        if (c->mlp == ZAYA_MLP_DENSE) {
            L->gate_up = NEXT_M(); /* gate_proj, up_proj adjacent (one [2 Fd, D] matrix in the model's block) */
            L->up = NEXT_M();
            L->down = NEXT_M();
        } else {
            if (c->router == ZAYA_ROUTER_LINEAR) {
                L->r_lin_w = NEXT_M();
            } else {
                L->r_down_w = NEXT_M();
                L->r_down_b = NEXT_V();
                L->r_eda = l > 0 && zaya_config_has_eda(c) ? NEXT_V() : NULL;
                L->r_norm = NEXT_V();
                L->r_fc1_w = NEXT_M();
                L->r_fc1_b = NEXT_V();
                L->r_fc2_w = NEXT_M();
                L->r_fc2_b = NEXT_V();
                L->r_out_w = NEXT_M();
            }
            L->bal_bias = NEXT_V();
            L->gate_up = NEXT_M();
            L->down = NEXT_M();
        }
        if (scaled) {
            L->mlp_hs = NEXT_V();
            L->mlp_hb = NEXT_V();
            L->mlp_rs = NEXT_V();
            L->mlp_rb = NEXT_V();
        }
    }
    w->final_norm = NEXT_V();
#undef NEXT_V
#undef NEXT_M
    ZAYA_ASSERT(i == w->ntensors);
}

zaya_status zaya_infer_weights_table(zaya_infer_weights *w, const zaya_config *cfg, zaya_dtype dtype) {
    memset(w, 0, sizeof *w);
    /* The engine's attention is CCA's (conv state, delayed values, compressed KV cache). */
    if (cfg->attention != ZAYA_ATTENTION_CCA)
        return zaya_error_set(ZAYA_EUNSUPPORTED,
                              "key 'zaya_attention' is \"%s\": inference (generate, eval, bench infer) supports only \"cca\"; "
                              "GQA / MHA are training-study variants",
                              zaya_config_attention_name(cfg->attention));
    w->cfg = *cfg;
    w->dtype = dtype;
    int64_t nfloats;
    ZAYA_TRY(zaya_layout_build_public(cfg, &w->tensors, &w->ntensors, &nfloats));
    w->data = calloc((size_t)w->ntensors, sizeof *w->data);
    w->layers = calloc((size_t)cfg->num_hidden_layers, sizeof *w->layers);
    if (!w->data || !w->layers) {
        zaya_infer_weights_free(w);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the weight table");
    }
    for (int i = 0; i < w->ntensors; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        if (zaya_infer_is_matrix(t)) w->matrix_bytes += t->numel * esize(dtype);
        else w->vector_bytes += t->numel * (int64_t)sizeof(float);
    }
    return ZAYA_OK;
}

/* Rounded up so that every tensor starts 64-byte aligned. */
static int64_t padded(int64_t bytes) { return (bytes + ZAYA_ALIGN - 1) / ZAYA_ALIGN * ZAYA_ALIGN; }

zaya_status zaya_infer_weights_alloc(zaya_infer_weights *w, const unsigned char *mapped) {
    int64_t vb = 0, mb = 0;
    for (int i = 0; i < w->ntensors; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        if (!zaya_infer_is_matrix(t)) vb += padded(t->numel * (int64_t)sizeof(float));
        else if (!mapped || !mapped[i]) mb += padded(t->numel * esize(w->dtype));
    }
    w->vec = zaya_malloc((size_t)vb);
    w->mat = mb ? zaya_malloc_huge((size_t)mb) : NULL;
    if (!w->vec || (mb && !w->mat))
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the weights (%.1f MiB of matrices in %s, %.1f MiB of "
                              "vectors)", (double)mb / 1048576.0, w->dtype == ZAYA_DTYPE_BF16 ? "bf16" : "f32", (double)vb / 1048576.0);
    w->owned_bytes = vb + mb;
    char *v = (char *)w->vec, *m = w->mat;
    for (int i = 0; i < w->ntensors; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        if (!zaya_infer_is_matrix(t)) {
            w->data[i] = v;
            v += padded(t->numel * (int64_t)sizeof(float));
        } else if (!mapped || !mapped[i]) {
            w->data[i] = m;
            m += padded(t->numel * esize(w->dtype));
        }
    }
    return ZAYA_OK;
}

zaya_status zaya_infer_weights_finish(zaya_infer_weights *w) {
    for (int i = 0; i < w->ntensors; i++) ZAYA_ASSERT(w->data[i] != NULL);
    bind(w);
    if (zaya_rope_table_init(&w->rope_own, w->cfg.max_position_embeddings, zaya_config_rot_dims(&w->cfg),
                             w->cfg.rope_theta) != 0)
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate the RoPE table");
    w->rope = &w->rope_own;
    return ZAYA_OK;
}

zaya_status zaya_infer_weights_view(zaya_infer_weights *w, const zaya_model *m) {
    ZAYA_TRY(zaya_infer_weights_table(w, &m->cfg, m->dtype));
    for (int i = 0; i < w->ntensors; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        const int bf = m->dtype == ZAYA_DTYPE_BF16 && zaya_infer_is_matrix(t);
        w->data[i] = bf ? (const void *)(m->params_bf16 + t->offset) : (const void *)(m->params + t->offset);
    }
    bind(w);
    w->rope = &m->rope;
    return ZAYA_OK;
}

/* Pieces of at most this many f32 values pass through the conversion buffer. */
#define CHUNK ((int64_t)1 << 20)

zaya_status zaya_infer_weights_random(zaya_infer_weights *w, const zaya_config *cfg, zaya_dtype dtype, uint64_t seed) {
    ZAYA_TRY(zaya_infer_weights_table(w, cfg, dtype));
    zaya_status s = zaya_infer_weights_alloc(w, NULL);
    float *buf = s == ZAYA_OK && dtype == ZAYA_DTYPE_BF16 ? zaya_malloc((size_t)CHUNK * sizeof(float)) : NULL;
    if (s == ZAYA_OK && dtype == ZAYA_DTYPE_BF16 && !buf) s = zaya_error_set(ZAYA_ENOMEM, "conversion buffer");
    for (int i = 0; i < w->ntensors && s == ZAYA_OK; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        if (dtype == ZAYA_DTYPE_F32 || !zaya_infer_is_matrix(t)) {
            zaya_model_init_tensor(cfg, t, i, seed, 0, t->numel, (float *)w->data[i]);
            continue;
        }
        uint16_t *dst = (uint16_t *)w->data[i];
        for (int64_t at = 0; at < t->numel; at += CHUNK) {
            const int64_t n = t->numel - at < CHUNK ? t->numel - at : CHUNK;
            zaya_model_init_tensor(cfg, t, i, seed, at, n, buf);
            zaya_f32_to_bf16_n(dst + at, buf, (size_t)n);
        }
    }
    zaya_free(buf);
    if (s == ZAYA_OK) s = zaya_infer_weights_finish(w);
    if (s != ZAYA_OK) zaya_infer_weights_free(w);
    return s;
}

void zaya_infer_weights_free(zaya_infer_weights *w) {
    if (!w) return;
    zaya_infer_weights_close_sources(w);
    zaya_free(w->vec);
    zaya_free(w->mat);
    free(w->tensors);
    free(w->data);
    free(w->layers);
    zaya_rope_table_free(&w->rope_own);
    memset(w, 0, sizeof *w);
}

double zaya_infer_weights_token_bytes(const zaya_infer_weights *w, double experts) {
    double bytes = 0;
    for (int i = 0; i < w->ntensors; i++) {
        const zaya_tensor_info *t = &w->tensors[i];
        const double esz = zaya_infer_is_matrix(t) ? (double)esize(w->dtype) : 4.0;
        if (t->nmatrix > 1) bytes += (double)t->numel / (double)t->nmatrix * experts * esz;
        else bytes += (double)t->numel * esz;
        if (t->embedding) bytes += (double)t->shape[1] * esz; /* the looked-up row */
    }
    return bytes;
}

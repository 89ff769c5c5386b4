/* Standard softmax attention (the "gqa" and "mha" values of zaya_attention), forward and backward for
 * one block: q|k = xn [Wq;Wk]^T (one GEMM), v = xn Wv^T, partial rotate-half RoPE on q and k, causal
 * GQA flash attention with scale 1/sqrt(head_dim), o_proj. No convolutions, value shift, QK norm or
 * temperatures (those are CCA's, cca.c). */
#include <math.h>
#include <string.h>

#include "model/internal.h"

void zaya_softmax_attn_forward(zaya_model *m, int l, const float *xn, float *a_out) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    const int64_t B = m->B, T = m->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads, qd = Hq * hd, kvd = Hkv * hd;

    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_forward2(m, A->qk, P->wqk, qd + kvd, A->v, P->wv, kvd, xn, N, D);
    zaya_prof_mark(m, ZAYA_PROF_QKNORM_ROPE);
    zaya_rope_forward(A->qk, &m->rope, m->work->pos, N, Hq + Hkv, hd);
    zaya_qk_split(A->q, A->k, A->qk, N, qd, kvd);
    zaya_prof_mark(m, ZAYA_PROF_ATTENTION);
    zaya_attn_chunk_forward(m, A);
    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_forward(m, a_out, A->att, P->wo, N, qd, D, 0.0f);
}

void zaya_softmax_attn_backward(zaya_model *m, int l, const float *da, float *dxn) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_params *G = &m->g.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    zaya_model_work *w = m->work;
    const int64_t B = m->B, T = m->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads, qd = Hq * hd, kvd = Hkv * hd;

    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_backward(m, w->datt, 0.0f, G->wo, da, A->att, P->wo, N, qd, D);
    zaya_prof_mark(m, ZAYA_PROF_ATTENTION);
    zaya_attn_chunk_backward(m, A);
    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_backward(m, dxn, 0.0f, G->wv, w->dv, A->xn, P->wv, N, D, kvd);
    zaya_prof_mark(m, ZAYA_PROF_QKNORM_ROPE);
    zaya_qk_merge(w->dqk2, w->dq, w->dk, N, qd, kvd);
    zaya_rope_backward(w->dqk2, &m->rope, w->pos, N, Hq + Hkv, hd);
    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_backward(m, dxn, 1.0f, G->wqk, w->dqk2, A->xn, P->wqk, N, D, qd + kvd);
}

/* Compressed Convolutional Attention (CCA), forward and backward for one block.
 * Math: docs/model.md and ../shared/reference/zaya1-architecture.md §5.4. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "model/internal.h"

/* The skip terms' per-row sums live on the stack of the kernels (zaya/model_ops.h). */
_Static_assert(ZAYA_CONFIG_MAX_HEAD_DIM <= ZAYA_QK_SKIP_MAX_HEAD_DIM, "head_dim above the QK-mean skip kernels' bound");

static void set_qk_mult(zaya_model *m, const float *temp) {
    const int64_t Hq = m->cfg.num_attention_heads, Hkv = m->cfg.num_key_value_heads;
    for (int64_t i = 0; i < Hq; i++) m->work->qk_mult[i] = 1.0f;
    for (int64_t j = 0; j < Hkv; j++) m->work->qk_mult[Hq + j] = temp[j];
}

void zaya_cca_forward(zaya_model *m, int l, const float *xn, float *a_out) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    const int64_t B = m->B, T = m->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const int64_t qd = Hq * hd, kvd = Hkv * hd, C = qd + kvd, k0 = c->cca_time0, k1 = c->cca_time1;

    const int cp = m->cp.size > 1;
    /* under context parallelism each of this rank's pieces is a run of its own (Bp of Tp rows) */
    const int64_t npc = cp ? zaya_cp_pieces(&m->cp) : 1, Bp = B * npc, Tp = T / npc;
    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_forward2(m, A->qk_pre, P->wqk, C, A->vv, P->wv, kvd, xn, N, D);
    zaya_prof_mark(m, ZAYA_PROF_CONV);
    zaya_value_shift_forward(A->v, A->vv, Bp, Tp, kvd);

    if (cp) { /* [the previous chunk's last H rows | this piece], no padding */
        zaya_cp_exchange_inputs(m, l, A->qk_pre, A->vv, A->v);
        const int64_t H = zaya_cp_halo_rows(c); /* 0 with 1-tap kernels: no left context */
        zaya_conv1d_depthwise_forward(A->conv0, H > 0 ? m->work->cp_ext : A->qk_pre, P->conv0_w, P->conv0_b, Bp, Tp + H,
                                      C, k0, 0);
    } else {
        zaya_conv1d_depthwise_forward(A->conv0, A->qk_pre, P->conv0_w, P->conv0_b, B, T, C, k0, (k0 - 1) + (k1 - 1));
    }
    zaya_conv1d_grouped_forward_dt(m->dtype, A->qk_raw, A->conv0, P->conv1_w, P->conv1_b, Bp, Tp + k1 - 1, C, Hq + Hkv,
                                   k1, 0, m->work->conv_ws);
    zaya_qk_mean_skip_forward(A->qk_raw, A->qk_pre, N, Hq, Hkv, hd);

    zaya_prof_mark(m, ZAYA_PROF_QKNORM_ROPE);
    set_qk_mult(m, P->temp);
    zaya_l2norm_forward(A->qk, A->inv_norm, A->qk_raw, m->work->qk_mult, sqrtf((float)hd), N, Hq + Hkv, hd, FLT_EPSILON);
    zaya_rope_forward(A->qk, &m->rope, m->work->pos, N, Hq + Hkv, hd);
    zaya_qk_split(A->q, A->k, A->qk, N, qd, kvd);

    zaya_prof_mark(m, ZAYA_PROF_ATTENTION);
    zaya_attn_chunk_forward(m, A);
    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_forward(m, a_out, A->att, P->wo, N, qd, D, 0.0f);
}

void zaya_cca_backward(zaya_model *m, int l, const float *da, float *dxn) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_params *G = &m->g.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    zaya_model_work *w = m->work;
    const int64_t B = m->B, T = m->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const int64_t qd = Hq * hd, kvd = Hkv * hd, C = qd + kvd, k0 = c->cca_time0, k1 = c->cca_time1;

    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_backward(m, w->datt, 0.0f, G->wo, da, A->att, P->wo, N, qd, D);
    zaya_prof_mark(m, ZAYA_PROF_ATTENTION);
    zaya_attn_chunk_backward(m, A);

    zaya_prof_mark(m, ZAYA_PROF_CONV);
    const int cp = m->cp.size > 1;
    const int64_t npc = cp ? zaya_cp_pieces(&m->cp) : 1, Bp = B * npc, Tp = T / npc;
    zaya_value_shift_backward(w->dvv, w->dv, Bp, Tp, kvd);
    if (!cp) {
        zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
        zaya_lin_backward(m, dxn, 0.0f, G->wv, w->dvv, A->xn, P->wv, N, D, kvd);
    }

    zaya_prof_mark(m, ZAYA_PROF_QKNORM_ROPE);
    zaya_qk_merge(w->dqk2, w->dq, w->dk, N, qd, kvd);
    zaya_rope_backward(w->dqk2, &m->rope, w->pos, N, Hq + Hkv, hd);
    set_qk_mult(m, P->temp);
    memset(w->dqk_mult, 0, (size_t)(Hq + Hkv) * sizeof(float));
    zaya_l2norm_backward(w->dqk, w->dqk_mult, w->dqk2, A->qk_raw, A->inv_norm, w->qk_mult, sqrtf((float)hd), N,
                         Hq + Hkv, hd);
    for (int64_t j = 0; j < Hkv; j++) G->temp[j] += w->dqk_mult[Hq + j];
    zaya_prof_mark(m, ZAYA_PROF_CONV);

    zaya_conv1d_grouped_backward_dt(m->dtype, w->dconv0, G->conv1_w, G->conv1_b, w->dqk, A->conv0, P->conv1_w, Bp,
                                    Tp + k1 - 1, C, Hq + Hkv, k1, 0, w->conv_ws);
    if (cp) {
        /* the halo rows' gradients and each piece's first delayed value belong to the previous chunk;
         * the value projection's backward waits for the next chunk's share of dvv */
        const int64_t H = zaya_cp_halo_rows(c);
        if (H > 0) {
            zaya_cp_build_ext(m, l);
            zaya_conv1d_depthwise_backward(w->cp_dext, G->conv0_w, G->conv0_b, w->dconv0, w->cp_ext, P->conv0_w, Bp,
                                           Tp + H, C, k0, 0);
        } else {
            zaya_conv1d_depthwise_backward(w->dqk2, G->conv0_w, G->conv0_b, w->dconv0, A->qk_pre, P->conv0_w, Bp, Tp, C,
                                           k0, 0);
        }
        zaya_cp_return_boundaries(m, w->cp_dext, w->dv, w->dqk2, w->dvv);
        zaya_lin_backward(m, dxn, 0.0f, G->wv, w->dvv, A->xn, P->wv, N, D, kvd);
    } else {
        zaya_conv1d_depthwise_backward(w->dqk2, G->conv0_w, G->conv0_b, w->dconv0, A->qk_pre, P->conv0_w, B, T, C, k0,
                                       (k0 - 1) + (k1 - 1));
    }
    zaya_qk_mean_skip_backward(w->dqk2, w->dqk, N, Hq, Hkv, hd);

    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_backward(m, dxn, 1.0f, G->wqk, w->dqk2, A->xn, P->wqk, N, D, C);
}

/* Compressed Convolutional Attention (CCA), forward and backward for one block.
 * Math: docs/model.md and ../shared/reference/zaya1-architecture.md §5.4. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "model/internal.h"

/* qk rows are [q head 0 .. q head Hq-1 | k head 0 .. k head Hkv-1], head_dim channels each. Both
 * passes run over heads with the channel loop innermost (contiguous, vectorized); the group sums
 * over q heads accumulate in head order, as before. */
void zaya_cca_qk_mean_skip_forward(const zaya_config *c, float *qk_raw, const float *qk_pre, int64_t N) {
    const int64_t hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads, G = Hq / Hkv;
    const int64_t C = (Hq + Hkv) * hd;
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        const float *pre = qk_pre + n * C;
        float *out = qk_raw + n * C;
        float sum[ZAYA_CONFIG_MAX_HEAD_DIM];
        for (int64_t j = 0; j < Hkv; j++) {
            const float *kp = pre + (Hq + j) * hd;
            float *ko = out + (Hq + j) * hd;
            for (int64_t d = 0; d < hd; d++) sum[d] = 0.0f;
            for (int64_t i = j * G; i < (j + 1) * G; i++) {
                const float *qp = pre + i * hd;
                float *qo = out + i * hd;
#pragma omp simd
                for (int64_t d = 0; d < hd; d++) {
                    qo[d] += 0.5f * (qp[d] + kp[d]);
                    sum[d] += qp[d];
                }
            }
#pragma omp simd
            for (int64_t d = 0; d < hd; d++) ko[d] += 0.5f * (sum[d] / (float)G + kp[d]);
        }
    }
}

/* d(qk_pre) += contributions of the skip terms given d(qk_raw) = g. */
static void qk_mean_skip_backward(const zaya_config *c, float *dpre, const float *g, int64_t N) {
    const int64_t hd = c->head_dim, Hq = c->num_attention_heads, Hkv = c->num_key_value_heads, G = Hq / Hkv;
    const int64_t C = (Hq + Hkv) * hd;
#pragma omp parallel for schedule(static) if (N > 64)
    for (int64_t n = 0; n < N; n++) {
        const float *gr = g + n * C;
        float *dr = dpre + n * C;
        float sq[ZAYA_CONFIG_MAX_HEAD_DIM];
        for (int64_t j = 0; j < Hkv; j++) {
            const float *gk = gr + (Hq + j) * hd;
            float *dk = dr + (Hq + j) * hd;
            for (int64_t d = 0; d < hd; d++) sq[d] = 0.0f;
            /* qm_i = (q_i + k_j)/2 ; km_j = (mean_i q_i + k_j)/2 */
            for (int64_t i = j * G; i < (j + 1) * G; i++) {
                const float *gq = gr + i * hd;
                float *dq = dr + i * hd;
#pragma omp simd
                for (int64_t d = 0; d < hd; d++) {
                    sq[d] += gq[d];
                    dq[d] += 0.5f * gq[d] + 0.5f * gk[d] / (float)G;
                }
            }
#pragma omp simd
            for (int64_t d = 0; d < hd; d++) dk[d] += 0.5f * sq[d] + 0.5f * gk[d];
        }
    }
}

/* Values: the first half of the value channels is the current token's projection, the second half
 * the previous token's (zero at the start of each sequence). */
static void value_shift_forward(float *v, const float *vv, int64_t B, int64_t T, int64_t kvd) {
    const int64_t h = kvd / 2;
#pragma omp parallel for schedule(static) if (B * T > 64)
    for (int64_t n = 0; n < B * T; n++) {
        memcpy(v + n * kvd, vv + n * kvd, (size_t)h * sizeof(float));
        if (n % T == 0) memset(v + n * kvd + h, 0, (size_t)h * sizeof(float));
        else memcpy(v + n * kvd + h, vv + (n - 1) * kvd + h, (size_t)h * sizeof(float));
    }
}

static void value_shift_backward(float *dvv, const float *dv, int64_t B, int64_t T, int64_t kvd) {
    const int64_t h = kvd / 2;
#pragma omp parallel for schedule(static) if (B * T > 64)
    for (int64_t n = 0; n < B * T; n++) {
        memcpy(dvv + n * kvd, dv + n * kvd, (size_t)h * sizeof(float));
        if (n % T == T - 1) memset(dvv + n * kvd + h, 0, (size_t)h * sizeof(float));
        else memcpy(dvv + n * kvd + h, dv + (n + 1) * kvd + h, (size_t)h * sizeof(float));
    }
}

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
    value_shift_forward(A->v, A->vv, Bp, Tp, kvd);

    if (cp) { /* [the previous chunk's last H rows | this piece], no padding */
        zaya_cp_exchange_inputs(m, l, A->qk_pre, A->vv, A->v);
        const int64_t H = zaya_cp_halo_rows(c); /* 0 with 1-tap kernels: no left context */
        zaya_conv1d_depthwise_forward(A->conv0, H > 0 ? m->work->cp_ext : A->qk_pre, P->conv0_w, P->conv0_b, Bp, Tp + H,
                                      C, k0, 0);
    } else {
        zaya_conv1d_depthwise_forward(A->conv0, A->qk_pre, P->conv0_w, P->conv0_b, B, T, C, k0, (k0 - 1) + (k1 - 1));
    }
    zaya_conv1d_grouped_forward_ws(A->qk_raw, A->conv0, P->conv1_w, P->conv1_b, Bp, Tp + k1 - 1, C, Hq + Hkv, k1, 0,
                                   m->work->conv_ws);
    zaya_cca_qk_mean_skip_forward(c, A->qk_raw, A->qk_pre, N);

    zaya_prof_mark(m, ZAYA_PROF_QKNORM_ROPE);
    set_qk_mult(m, P->temp);
    zaya_l2norm_forward(A->qk, A->inv_norm, A->qk_raw, m->work->qk_mult, sqrtf((float)hd), N, Hq + Hkv, hd, FLT_EPSILON);
    zaya_rope_forward(A->qk, &m->rope, m->work->pos, N, Hq + Hkv, hd);
    zaya_ops_split_qk(A->q, A->k, A->qk, N, qd, kvd);

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
    value_shift_backward(w->dvv, w->dv, Bp, Tp, kvd);
    if (!cp) {
        zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
        zaya_lin_backward(m, dxn, 0.0f, G->wv, w->dvv, A->xn, P->wv, N, D, kvd);
    }

    zaya_prof_mark(m, ZAYA_PROF_QKNORM_ROPE);
    zaya_ops_merge_qk(w->dqk2, w->dq, w->dk, N, qd, kvd);
    zaya_rope_backward(w->dqk2, &m->rope, w->pos, N, Hq + Hkv, hd);
    set_qk_mult(m, P->temp);
    memset(w->dqk_mult, 0, (size_t)(Hq + Hkv) * sizeof(float));
    zaya_l2norm_backward(w->dqk, w->dqk_mult, w->dqk2, A->qk_raw, A->inv_norm, w->qk_mult, sqrtf((float)hd), N,
                         Hq + Hkv, hd);
    for (int64_t j = 0; j < Hkv; j++) G->temp[j] += w->dqk_mult[Hq + j];
    zaya_prof_mark(m, ZAYA_PROF_CONV);

    zaya_conv1d_grouped_backward_ws(w->dconv0, G->conv1_w, G->conv1_b, w->dqk, A->conv0, P->conv1_w, Bp, Tp + k1 - 1,
                                    C, Hq + Hkv, k1, 0, w->conv_ws);
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
    qk_mean_skip_backward(c, w->dqk2, w->dqk, N);

    zaya_prof_mark(m, ZAYA_PROF_ATTN_PROJ);
    zaya_lin_backward(m, dxn, 1.0f, G->wqk, w->dqk2, A->xn, P->wqk, N, D, C);
}

/* Whole-model forward (with the fused, chunked tied-head cross-entropy) and backward. */
#include <string.h>

#include "model/internal.h"

zaya_status zaya_model_check_tokens(const zaya_config *c, const int32_t *ids, const int32_t *targets, int64_t N) {
    const int64_t V = c->vocab_size;
    for (int64_t i = 0; i < N; i++) {
        if (ids[i] < 0 || ids[i] >= V)
            return zaya_error_set(ZAYA_ERANGE, "token id %d at position %lld is outside the vocabulary [0, %lld)",
                                  ids[i], (long long)i, (long long)V);
        if (targets && targets[i] >= V)
            return zaya_error_set(ZAYA_ERANGE, "target id %d at position %lld is outside the vocabulary [0, %lld)",
                                  targets[i], (long long)i, (long long)V);
    }
    return ZAYA_OK;
}

static void blocks_forward(zaya_model *m) {
    const zaya_config *c = &m->cfg;
    const int L = (int)c->num_hidden_layers;
    const int64_t N = m->B * m->T, D = c->hidden_size;
    const float eps = (float)c->rms_norm_eps;
    for (int l = 0; l < L; l++) {
        zaya_layer_acts *A = &m->acts[l];
        const zaya_layer_params *P = &m->p.layers[l];
        zaya_prof_mark(m, ZAYA_PROF_NORM);
        zaya_rmsnorm_forward(A->xn, A->rstd_in, A->x, P->in_norm, N, D, eps);
        if (c->attention == ZAYA_ATTENTION_CCA) zaya_cca_forward(m, l, A->xn, A->a);
        else zaya_softmax_attn_forward(m, l, A->xn, A->a);
        zaya_prof_mark(m, ZAYA_PROF_NORM);
        zaya_merge_forward(A->h, A->a, P->att_hb, P->att_hs, A->x, P->att_rb, P->att_rs, N, D);
        zaya_rmsnorm_forward(A->z, A->rstd_post, A->h, P->post_norm, N, D, eps);
        zaya_moe_forward(m, l, l > 0 ? m->acts[l - 1].r : NULL);
        float *next = l + 1 < L ? m->acts[l + 1].x : m->work->x_final;
        zaya_prof_mark(m, ZAYA_PROF_NORM);
        zaya_merge_forward(next, A->m, P->mlp_hb, P->mlp_hs, A->h, P->mlp_rb, P->mlp_rs, N, D);
    }
    zaya_rmsnorm_forward(m->work->y_final, m->work->rstd_final, m->work->x_final, m->p.final_norm, N, D, eps);
}

zaya_status zaya_model_forward(zaya_model *m, const int32_t *ids, const int32_t *targets, int backward_ready,
                               float *loss) {
    ZAYA_ASSERT(m->work != NULL); /* zaya_model_plan first */
    ZAYA_TRY(zaya_model_check_tokens(&m->cfg, ids, targets, m->B * m->T));
    zaya_model_work *w = m->work;
    const int64_t N = m->B * m->T, D = m->cfg.hidden_size, V = m->cfg.vocab_size;
    memcpy(w->ids, ids, (size_t)N * sizeof(int32_t));
    w->has_targets = targets != NULL;
    if (targets) memcpy(w->targets, targets, (size_t)N * sizeof(int32_t));
    if (backward_ready && !targets) return zaya_error_set(ZAYA_EINVAL, "a backward-ready forward needs targets");

    m->cp_status = ZAYA_OK;
    zaya_prof_begin(m, 0, ZAYA_PROF_EMBED);
    zaya_embed_forward(m->acts[0].x, m->p.embed, ids, m->p.in_bias, m->p.in_scale, N, D);
    blocks_forward(m);
    zaya_prof_mark(m, ZAYA_PROF_HEAD);
    if (m->cp_status != ZAYA_OK || !targets) {
        zaya_prof_mark(m, -1);
        return m->cp_status; /* an exchange failed: the message names it */
    }

    int64_t ntok = 0;
    for (int64_t i = 0; i < N; i++) ntok += targets[i] >= 0;
    if (ntok == 0) {
        zaya_prof_mark(m, -1);
        return zaya_error_set(ZAYA_EINVAL, "the batch has no targets to score (all are ignored)");
    }
    const float scale = 1.0f / (float)ntok;
    /* Logits exist one chunk of rows at a time; the cross-entropy turns each chunk into its gradient in
     * place, which is immediately pushed through the tied head. */
    for (int64_t r0 = 0; r0 < N; r0 += w->chunk_rows) {
        int64_t rows = N - r0 < w->chunk_rows ? N - r0 : w->chunk_rows;
        const float *y = w->y_final + r0 * D;
        zaya_lin_forward(m, w->logits, y, m->p.embed, rows, D, V, 0.0f);
        zaya_xent_forward_backward(w->logits, w->losses + r0, targets + r0, rows, V, backward_ready ? scale : 0.0f);
        if (backward_ready) {
            zaya_lin_backward(m, w->dy_final + r0 * D, 0.0f, m->g.embed, w->logits, y, m->p.embed, rows, D, V);
        }
    }
    double sum = 0;
    for (int64_t i = 0; i < N; i++) sum += w->losses[i];
    m->last_loss = (float)(sum / (double)ntok);
    m->last_tokens = ntok;
    if (loss) *loss = m->last_loss;
    zaya_prof_mark(m, -1);
    return ZAYA_OK;
}

void zaya_model_backward(zaya_model *m) {
    const zaya_config *c = &m->cfg;
    zaya_model_work *w = m->work;
    ZAYA_ASSERT(w && w->has_targets);
    m->cp_status = ZAYA_OK;
    const int L = (int)c->num_hidden_layers;
    const int64_t N = m->B * m->T, D = c->hidden_size, R = c->router_hidden_size;

    zaya_prof_begin(m, 1, ZAYA_PROF_NORM);
    zaya_rmsnorm_backward(w->dx, m->g.final_norm, w->dy_final, w->x_final, m->p.final_norm, w->rstd_final, N, D);
    if (m->on_grads_ready) m->on_grads_ready(m->on_grads_ready_ctx, L);
    memset(w->dr_carry, 0, (size_t)(N * R) * sizeof(float));
    for (int l = L - 1; l >= 0; l--) {
        zaya_layer_acts *A = &m->acts[l];
        const zaya_layer_params *P = &m->p.layers[l];
        zaya_layer_params *G = &m->g.layers[l];
        /* x_{l+1} = (m + hb)*hs + (h + rb)*rs */
        zaya_prof_mark(m, ZAYA_PROF_NORM);
        zaya_merge_backward(w->da, w->dh, 0, w->dx, A->m, P->mlp_hb, P->mlp_hs, A->h, P->mlp_rb, P->mlp_rs, G->mlp_hb,
                            G->mlp_hs, G->mlp_rb, G->mlp_rs, N, D);
        zaya_moe_backward(m, l, w->da, l > 0 ? m->acts[l - 1].r : NULL, w->dr_carry, w->dz);
        zaya_prof_mark(m, ZAYA_PROF_NORM);
        zaya_rmsnorm_backward(w->dxn, G->post_norm, w->dz, A->h, P->post_norm, A->rstd_post, N, D);
#pragma omp parallel for schedule(static) if (N * D > 32768)
        for (int64_t i = 0; i < N * D; i++) w->dh[i] += w->dxn[i];
        /* h = (a + hb)*hs + (x + rb)*rs */
        zaya_merge_backward(w->da, w->dx, 0, w->dh, A->a, P->att_hb, P->att_hs, A->x, P->att_rb, P->att_rs, G->att_hb,
                            G->att_hs, G->att_rb, G->att_rs, N, D);
        if (c->attention == ZAYA_ATTENTION_CCA) zaya_cca_backward(m, l, w->da, w->dxn);
        else zaya_softmax_attn_backward(m, l, w->da, w->dxn);
        zaya_prof_mark(m, ZAYA_PROF_NORM);
        zaya_rmsnorm_backward(w->dz, G->in_norm, w->dxn, A->x, P->in_norm, A->rstd_in, N, D);
#pragma omp parallel for schedule(static) if (N * D > 32768)
        for (int64_t i = 0; i < N * D; i++) w->dx[i] += w->dz[i];
        if (m->on_grads_ready) m->on_grads_ready(m->on_grads_ready_ctx, l);
    }
    /* x_0 = (e + b_in) * s_in with e = embed[ids] */
    zaya_prof_mark(m, ZAYA_PROF_EMBED);
    zaya_embed_backward(m->g.embed, m->g.in_bias, m->g.in_scale, w->dxn, w->dx, m->p.embed, w->ids, m->p.in_bias,
                        m->p.in_scale, N, D, c->vocab_size);
    zaya_prof_mark(m, -1);
    if (m->on_grads_ready) m->on_grads_ready(m->on_grads_ready_ctx, -1);
}

zaya_status zaya_model_logits(zaya_model *m, const int32_t *ids, const uint8_t *row_mask, float *logits) {
    ZAYA_TRY(zaya_model_forward(m, ids, NULL, 0, NULL));
    zaya_model_work *w = m->work;
    const int64_t N = m->B * m->T, D = m->cfg.hidden_size, V = m->cfg.vocab_size;
    if (!row_mask) {
        zaya_lin_forward(m, logits, w->y_final, m->p.embed, N, D, V, 0.0f);
        return ZAYA_OK;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < N; i++)
        if (row_mask[i]) memcpy(w->dxn + (n++) * D, w->y_final + i * D, (size_t)D * sizeof(float));
    zaya_lin_forward(m, logits, w->dxn, m->p.embed, n, D, V, 0.0f);
    return ZAYA_OK;
}

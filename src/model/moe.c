/* ZAYA1 MoE block: router (down-projection, exponential depth averaging, RMSNorm, 3-layer GELU MLP,
 * softmax over experts + skip, biased top-1) and top-1 SwiGLU experts with grouped dispatch. */
#include <math.h>
#include <string.h>

#include "model/internal.h"

/* Counting sort of tokens by chosen class: one GEMM per expert over contiguous rows. The order
 * within a class is token order, so dispatch is deterministic. */
static void dispatch(zaya_layer_acts *A, int64_t N, int64_t E1, int64_t *counts) {
    for (int64_t e = 0; e <= E1; e++) A->off[e] = 0;
    for (int64_t i = 0; i < N; i++) A->off[A->idx[i] + 1]++;
    for (int64_t e = 0; e < E1; e++) {
        counts[e] = A->off[e + 1];
        A->off[e + 1] += A->off[e];
    }
    int64_t fill[E1 > 0 ? E1 : 1];
    for (int64_t e = 0; e < E1; e++) fill[e] = A->off[e];
    for (int64_t i = 0; i < N; i++) {
        int64_t r = fill[A->idx[i]]++;
        A->perm[r] = (int32_t)i;
        A->row_of[i] = (int32_t)r;
    }
}

/* The ZAYA routers' scores: probs [N, E+1] over the experts and the skip class. */
static void zaya_router_forward(zaya_model *m, int l, const float *r_prev) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    zaya_model_work *w = m->work;
    const int64_t N = m->B * m->T, D = c->hidden_size, R = c->router_hidden_size, E1 = c->num_experts + 1;

    zaya_lin_forward(m, A->r, A->z, P->r_down_w, N, D, R, 0.0f);
    zaya_bias_add(A->r, P->r_down_b, N, R);
    if (P->r_eda) { /* EDA: from the second MoE block on, unless zaya_router "zaya_no_eda" */
        zaya_eda_forward(A->r, P->r_eda, r_prev, N, R);
    }
    zaya_rmsnorm_forward(A->rn, A->rstd_r, A->r, P->r_norm, N, R, (float)c->rms_norm_eps);
    zaya_lin_forward(m, A->a1, A->rn, P->r_fc1_w, N, R, R, 0.0f);
    zaya_bias_add(A->a1, P->r_fc1_b, N, R);
    zaya_gelu_forward(A->g1, A->a1, N * R);
    zaya_lin_forward(m, A->a2, A->g1, P->r_fc2_w, N, R, R, 0.0f);
    zaya_bias_add(A->a2, P->r_fc2_b, N, R);
    zaya_gelu_forward(A->g2, A->a2, N * R);
    zaya_lin_forward(m, w->dprobs, A->g2, P->r_out_w, N, R, E1, 0.0f); /* dprobs: logits scratch here */
    zaya_softmax_forward(A->probs, w->dprobs, N, E1);
}

/* The linear router (zaya_router "linear"): probs = softmax(z W^T) over the E experts, written into
 * the first E columns of the [N, E+1] score rows; the skip column is 0 and never selected. */
static void linear_router_forward(zaya_model *m, int l) {
    const zaya_config *c = &m->cfg;
    zaya_layer_acts *A = &m->acts[l];
    float *logits = m->work->dprobs; /* [N, E] scratch */
    const int64_t N = m->B * m->T, D = c->hidden_size, E = c->num_experts, E1 = E + 1;
    zaya_lin_forward(m, logits, A->z, m->p.layers[l].r_lin_w, N, D, E, 0.0f);
#pragma omp parallel for schedule(static) if (N * E > 32768)
    for (int64_t i = 0; i < N; i++) {
        zaya_softmax_forward(A->probs + i * E1, logits + i * E, 1, E);
        A->probs[i * E1 + E] = 0.0f;
    }
}

/* Dense SwiGLU MLP (zaya_mlp "dense"): m = down(SiLU(gate z) * up z), every token, no gate. */
static void dense_forward(zaya_model *m, int l) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    const int64_t N = m->B * m->T, D = c->hidden_size, F = zaya_config_dense_ffn(c);
    zaya_lin_forward(m, A->gu, A->z, P->gate_up, N, D, 2 * F, 0.0f);
    zaya_swiglu_forward(A->act, A->gu, N, F);
    zaya_lin_forward(m, A->m, A->act, P->down, N, F, D, 0.0f);
}

void zaya_moe_forward(zaya_model *m, int l, const float *r_prev) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    const int64_t N = m->B * m->T, D = c->hidden_size, E = c->num_experts, E1 = E + 1;
    const int64_t F = c->moe_intermediate_size;

    if (c->mlp == ZAYA_MLP_DENSE) { /* no routing: no statistics, no route hook */
        zaya_prof_mark(m, ZAYA_PROF_EXPERTS);
        dense_forward(m, l);
        memset(m->route_counts + (int64_t)l * E1, 0, sizeof(int64_t) * (size_t)E1);
        memset(m->route_psum + (int64_t)l * E, 0, sizeof(double) * (size_t)E);
        m->route_spread[l] = 0.0;
        return;
    }
    zaya_prof_mark(m, ZAYA_PROF_ROUTER);
    if (c->router == ZAYA_ROUTER_LINEAR) linear_router_forward(m, l);
    else zaya_router_forward(m, l, r_prev);
    /* the spread of the scores: sqrt(spread / (N E)) is the balancer's unit of bias step */
    zaya_route_stats(m->route_psum + (int64_t)l * E, &m->route_spread[l], A->probs, E1, N, E);
    if (m->route_hook) m->route_hook(m->route_hook_ctx, m, l);
    zaya_prof_mark(m, ZAYA_PROF_DISPATCH);
    zaya_top1_biased_ld(A->idx, A->gate, A->probs, E1, P->bal_bias, N, zaya_config_router_classes(c));
    dispatch(A, N, E1, m->route_counts + (int64_t)l * E1);

    zaya_rows_gather(A->xe, A->z, A->perm, N, D);
    zaya_prof_mark(m, ZAYA_PROF_EXPERTS);
    for (int64_t e = 0; e < E; e++) {
        int64_t o = A->off[e], ne = A->off[e + 1] - o;
        if (ne == 0) continue;
        zaya_lin_expert_forward(m, A->gu + o * 2 * F, A->xe + o * D, P->gate_up + e * 2 * F * D, ne, D, 2 * F);
        zaya_swiglu_forward(A->act + o * F, A->gu + o * 2 * F, ne, F);
        zaya_lin_expert_forward(m, A->ye + o * D, A->act + o * F, P->down + e * D * F, ne, F, D);
    }
    const int identity = c->skip_mode == ZAYA_SKIP_IDENTITY;
    zaya_prof_mark(m, ZAYA_PROF_DISPATCH);
    zaya_moe_combine_forward(A->m, A->ye, A->z, A->idx, A->gate, A->row_of, N, D, E, identity);
}

static void dense_backward(zaya_model *m, int l, const float *dm, float *dz) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_params *G = &m->g.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    zaya_model_work *w = m->work;
    const int64_t N = m->B * m->T, D = c->hidden_size, F = zaya_config_dense_ffn(c);
    zaya_lin_backward(m, w->dact, 0.0f, G->down, dm, A->act, P->down, N, F, D);
    zaya_swiglu_backward(w->dgu, w->dact, A->gu, N, F);
    zaya_lin_backward(m, dz, 0.0f, G->gate_up, w->dgu, A->z, P->gate_up, N, D, 2 * F);
}

/* Linear router: d(logit_e) = p_e * dgate * ([e == idx] - p_idx) over the E experts; dz += dlogits W. */
static void linear_router_backward(zaya_model *m, int l, float *dz) {
    const zaya_config *c = &m->cfg;
    zaya_layer_acts *A = &m->acts[l];
    zaya_model_work *w = m->work;
    const int64_t N = m->B * m->T, D = c->hidden_size, E = c->num_experts, E1 = E + 1;
    float *dl_all = w->dprobs; /* [N, E] */
    zaya_router_dlogits(dl_all, A->probs, E1, w->dgate, A->idx, N, E);
    zaya_lin_backward(m, dz, 1.0f, m->g.layers[l].r_lin_w, dl_all, A->z, m->p.layers[l].r_lin_w, N, D, E);
}

static void zaya_router_backward(zaya_model *m, int l, const float *r_prev, float *dr_prev_out, float *dz);

void zaya_moe_backward(zaya_model *m, int l, const float *dm, const float *r_prev, float *dr_prev_out, float *dz) {
    const zaya_config *c = &m->cfg;
    if (c->mlp == ZAYA_MLP_DENSE) {
        zaya_prof_mark(m, ZAYA_PROF_EXPERTS);
        dense_backward(m, l, dm, dz);
        return;
    }
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_params *G = &m->g.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    zaya_model_work *w = m->work;
    const int64_t N = m->B * m->T, D = c->hidden_size, E = c->num_experts;
    const int64_t F = c->moe_intermediate_size;
    const int identity = c->skip_mode == ZAYA_SKIP_IDENTITY;

    /* Gate: m_i = gate_i * out_i, so d(out_i) = gate_i * dm_i and d(gate_i) = <dm_i, out_i>. */
    zaya_prof_mark(m, ZAYA_PROF_DISPATCH);
    zaya_moe_combine_backward(w->dye, dz, w->dgate, dm, A->ye, A->z, A->idx, A->gate, A->row_of, N, D, E, identity);
    zaya_prof_mark(m, ZAYA_PROF_EXPERTS);
    for (int64_t e = 0; e < E; e++) {
        int64_t o = A->off[e], ne = A->off[e + 1] - o;
        if (ne == 0) continue;
        const float *Wd = P->down + e * D * F, *Wgu = P->gate_up + e * 2 * F * D;
        zaya_lin_expert_backward(m, w->dact + o * F, G->down + e * D * F, w->dye + o * D, A->act + o * F, Wd, ne, F, D);
        zaya_swiglu_backward(w->dgu + o * 2 * F, w->dact + o * F, A->gu + o * 2 * F, ne, F);
        zaya_lin_expert_backward(m, w->dxe + o * D, G->gate_up + e * 2 * F * D, w->dgu + o * 2 * F, A->xe + o * D, Wgu, ne, D, 2 * F);
    }
    zaya_prof_mark(m, ZAYA_PROF_DISPATCH);
    zaya_rows_scatter(dz, w->dxe, A->idx, A->row_of, N, D, E);
    zaya_prof_mark(m, ZAYA_PROF_ROUTER);
    if (c->router == ZAYA_ROUTER_LINEAR) linear_router_backward(m, l, dz);
    else zaya_router_backward(m, l, r_prev, dr_prev_out, dz);
}

/* The ZAYA routers' backward from w->dgate (dz += the router's input gradient). */
static void zaya_router_backward(zaya_model *m, int l, const float *r_prev, float *dr_prev_out, float *dz) {
    const zaya_config *c = &m->cfg;
    const zaya_layer_params *P = &m->p.layers[l];
    zaya_layer_params *G = &m->g.layers[l];
    zaya_layer_acts *A = &m->acts[l];
    zaya_model_work *w = m->work;
    const int64_t N = m->B * m->T, D = c->hidden_size, R = c->router_hidden_size, E1 = c->num_experts + 1;

    /* Only the chosen probability receives a gradient: through the softmax,
     * d(logit_e) = p_e * dgate * ([e == idx] - p_idx). Selection itself (argmax with biases) is
     * piecewise constant and has no gradient. */
    zaya_router_dlogits(w->dprobs, A->probs, E1, w->dgate, A->idx, N, E1);
    zaya_lin_backward(m, w->dg2, 0.0f, G->r_out_w, w->dprobs, A->g2, P->r_out_w, N, R, E1);
    zaya_gelu_backward(w->dg, w->dg2, A->a2, N * R);
    zaya_colsum_add(G->r_fc2_b, w->dg, N, R);
    zaya_lin_backward(m, w->dg2, 0.0f, G->r_fc2_w, w->dg, A->g1, P->r_fc2_w, N, R, R);
    zaya_gelu_backward(w->dg, w->dg2, A->a1, N * R);
    zaya_colsum_add(G->r_fc1_b, w->dg, N, R);
    zaya_lin_backward(m, w->drn, 0.0f, G->r_fc1_w, w->dg, A->rn, P->r_fc1_w, N, R, R);
    zaya_rmsnorm_backward(w->dr, G->r_norm, w->drn, A->r, P->r_norm, A->rstd_r, N, R);

    /* The router state r_l also feeds block l+1's EDA: add the gradient it sent back (w->dr_carry). */
    if (zaya_config_has_eda(c)) {
        const float *carry = w->dr_carry;
#pragma omp parallel for schedule(static) if (N * R > 32768)
        for (int64_t i = 0; i < N * R; i++) w->dr[i] += carry[i];
    }
    if (P->r_eda) {
        /* r_l = W z + b + gamma_l * r_{l-1}: d(gamma_l) = sum_rows dr * r_{l-1}; d(r_{l-1}) = dr * gamma_l. */
        zaya_eda_backward(w->drn, dr_prev_out, w->dr, r_prev, P->r_eda, N, R);
        zaya_colsum_add(G->r_eda, w->drn, N, R);
    }
    zaya_colsum_add(G->r_down_b, w->dr, N, R);
    zaya_lin_backward(m, dz, 1.0f, G->r_down_w, w->dr, A->z, P->r_down_w, N, D, R);
}

void zaya_model_route_count_layer(const zaya_model *m, int l, int64_t *counts) {
    const int64_t E1 = m->cfg.num_experts + 1;
    memset(counts, 0, sizeof(int64_t) * (size_t)E1); /* dense blocks route nothing; a linear router never skips */
    if (!zaya_config_is_moe(&m->cfg)) return;
    zaya_top1_biased_count_ld(counts, m->acts[l].probs, E1, m->p.layers[l].bal_bias, m->B * m->T,
                              zaya_config_router_classes(&m->cfg));
}

void zaya_model_route_recount(const zaya_model *m, int64_t *counts) {
    const int64_t L = m->cfg.num_hidden_layers, E1 = m->cfg.num_experts + 1;
    for (int64_t l = 0; l < L; l++) zaya_model_route_count_layer(m, (int)l, counts + l * E1);
}

/* The engine's blocks: CCA attention and the MoE (router, dispatch, experts), forward and backward, in
 * the order of src/model/cca.c and src/model/moe.c. Dispatch (the counting sort of tokens by class)
 * runs on the host: the selection comes down ([N] ints), the permutation goes up, and the per-class
 * row counts the expert GEMMs need are then known on the host. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "engine/internal.h"

/* qk_mult = [1 (q heads, set at plan time) | temperature (k heads)] of block l */
static void set_qk_mult(zaya_engine *e, const float *temp) {
    const int64_t Hq = e->c->num_attention_heads, Hkv = e->c->num_key_value_heads;
    e->be->copy(e->be, e->qk_mult + Hq, temp, sizeof(float) * (size_t)Hkv);
}

void zaya_engine_cca_forward(zaya_engine *e, int l) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t B = e->B, T = e->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const int64_t qd = Hq * hd, kvd = Hkv * hd, C = qd + kvd, k0 = c->cca_time0, k1 = c->cca_time1;

    /* q|k and v projections of the same normed input (x staged once in bf16 on the CPU; twice here) */
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_forward(e, A->qk_pre, A->xn, P->wqk, N, D, C, 0.0f, 0);
    zaya_engine_lin_forward(e, A->vv, A->xn, P->wv, N, D, kvd, 0.0f, 0);
    zaya_engine_prof_mark(e, ZAYA_PROF_CONV);
    be->value_shift_forward(be, A->v, A->vv, B, T, kvd);
    be->conv_dw_forward(be, A->conv0, A->qk_pre, P->conv0_w, P->conv0_b, B, T, C, k0, (k0 - 1) + (k1 - 1));
    be->conv_grouped_forward(be, e->dt, A->qk_raw, A->conv0, P->conv1_w, P->conv1_b, B, T + k1 - 1, C, Hq + Hkv, k1, 0);
    be->qk_mean_skip_forward(be, A->qk_raw, A->qk_pre, N, Hq, Hkv, hd);
    zaya_engine_prof_mark(e, ZAYA_PROF_QKNORM_ROPE);
    set_qk_mult(e, P->temp);
    be->l2norm_forward(be, A->qk, A->inv_norm, A->qk_raw, e->qk_mult, sqrtf((float)hd), N, Hq + Hkv, hd, FLT_EPSILON);
    be->rope_forward(be, A->qk, e->rope_cos, e->rope_sin, e->host->rope.rot_dims, e->pos, N, Hq + Hkv, hd);
    be->split_qk(be, A->q, A->k, A->qk, N, qd, kvd);
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTENTION);
    be->attention_forward(be, e->dt, A->att, A->lse, A->q, A->k, A->v, B, T, Hq, Hkv, hd, 1.0f / sqrtf((float)hd));
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_forward(e, A->a, A->att, P->wo, N, qd, D, 0.0f, 0);
}

void zaya_engine_cca_backward(zaya_engine *e, int l, const float *da, float *dxn) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_layer_params *G = &e->g.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t B = e->B, T = e->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads;
    const int64_t qd = Hq * hd, kvd = Hkv * hd, C = qd + kvd, k0 = c->cca_time0, k1 = c->cca_time1;

    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_backward(e, e->datt, 0.0f, G->wo, da, A->att, P->wo, N, qd, D, 0);
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTENTION);
    be->attention_backward(be, e->dt, e->dq, e->dk, e->dv, e->datt, A->q, A->k, A->v, A->att, A->lse, B, T, Hq, Hkv, hd,
                           1.0f / sqrtf((float)hd));
    zaya_engine_prof_mark(e, ZAYA_PROF_CONV);
    be->value_shift_backward(be, e->dvv, e->dv, B, T, kvd);
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_backward(e, dxn, 0.0f, G->wv, e->dvv, A->xn, P->wv, N, D, kvd, 0);

    zaya_engine_prof_mark(e, ZAYA_PROF_QKNORM_ROPE);
    be->merge_qk(be, e->dqk2, e->dq, e->dk, N, qd, kvd);
    be->rope_backward(be, e->dqk2, e->rope_cos, e->rope_sin, e->host->rope.rot_dims, e->pos, N, Hq + Hkv, hd);
    set_qk_mult(e, P->temp);
    be->zero(be, e->dqk_mult, sizeof(float) * (size_t)(Hq + Hkv));
    be->l2norm_backward(be, e->dqk, e->dqk_mult, e->dqk2, A->qk_raw, A->inv_norm, e->qk_mult, sqrtf((float)hd), N,
                        Hq + Hkv, hd);
    be->add(be, G->temp, e->dqk_mult + Hq, Hkv);
    zaya_engine_prof_mark(e, ZAYA_PROF_CONV);
    be->conv_grouped_backward(be, e->dt, e->dconv0, G->conv1_w, G->conv1_b, e->dqk, A->conv0, P->conv1_w, B, T + k1 - 1, C,
                              Hq + Hkv, k1, 0);
    be->conv_dw_backward(be, e->dqk2, G->conv0_w, G->conv0_b, e->dconv0, A->qk_pre, P->conv0_w, B, T, C, k0,
                         (k0 - 1) + (k1 - 1));
    be->qk_mean_skip_backward(be, e->dqk2, e->dqk, N, Hq, Hkv, hd);
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_backward(e, dxn, 1.0f, G->wqk, e->dqk2, A->xn, P->wqk, N, D, C, 0);
}

/* GQA / MHA (zaya_attention "gqa" | "mha", src/model/softmax_attn.c): q|k and v projections, RoPE on
 * q and k, causal attention, o_proj; no convolutions, value shift, QK norm or temperatures. */
void zaya_engine_softmax_attn_forward(zaya_engine *e, int l) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t B = e->B, T = e->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads, qd = Hq * hd, kvd = Hkv * hd;
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_forward(e, A->qk, A->xn, P->wqk, N, D, qd + kvd, 0.0f, 0);
    zaya_engine_lin_forward(e, A->v, A->xn, P->wv, N, D, kvd, 0.0f, 0);
    zaya_engine_prof_mark(e, ZAYA_PROF_QKNORM_ROPE);
    be->rope_forward(be, A->qk, e->rope_cos, e->rope_sin, e->host->rope.rot_dims, e->pos, N, Hq + Hkv, hd);
    be->split_qk(be, A->q, A->k, A->qk, N, qd, kvd);
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTENTION);
    be->attention_forward(be, e->dt, A->att, A->lse, A->q, A->k, A->v, B, T, Hq, Hkv, hd, 1.0f / sqrtf((float)hd));
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_forward(e, A->a, A->att, P->wo, N, qd, D, 0.0f, 0);
}

void zaya_engine_softmax_attn_backward(zaya_engine *e, int l, const float *da, float *dxn) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_layer_params *G = &e->g.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t B = e->B, T = e->T, N = B * T, D = c->hidden_size, hd = c->head_dim;
    const int64_t Hq = c->num_attention_heads, Hkv = c->num_key_value_heads, qd = Hq * hd, kvd = Hkv * hd;
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_backward(e, e->datt, 0.0f, G->wo, da, A->att, P->wo, N, qd, D, 0);
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTENTION);
    be->attention_backward(be, e->dt, e->dq, e->dk, e->dv, e->datt, A->q, A->k, A->v, A->att, A->lse, B, T, Hq, Hkv, hd,
                           1.0f / sqrtf((float)hd));
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_backward(e, dxn, 0.0f, G->wv, e->dv, A->xn, P->wv, N, D, kvd, 0);
    zaya_engine_prof_mark(e, ZAYA_PROF_QKNORM_ROPE);
    be->merge_qk(be, e->dqk2, e->dq, e->dk, N, qd, kvd);
    be->rope_backward(be, e->dqk2, e->rope_cos, e->rope_sin, e->host->rope.rot_dims, e->pos, N, Hq + Hkv, hd);
    zaya_engine_prof_mark(e, ZAYA_PROF_ATTN_PROJ);
    zaya_engine_lin_backward(e, dxn, 1.0f, G->wqk, e->dqk2, A->xn, P->wqk, N, D, qd + kvd, 0);
}

/* ---------------------------------------------------------------- router */

/* The linear router (zaya_router "linear"): probs = softmax(z W^T) over the E experts in the first E
 * columns of the [N, E + 1] score rows, the skip column 0 (never selected). */
static void linear_router_forward(zaya_engine *e, int l) {
    const zaya_config *c = e->c;
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, E = c->num_experts;
    zaya_engine_lin_forward(e, e->dprobs, A->z, e->p.layers[l].r_lin_w, N, D, E, 0.0f, 0); /* [N, E] logits */
    e->be->softmax_ld_forward(e->be, A->probs, E + 1, e->dprobs, N, E);
}

/* d(logit_e) = p_e dgate ([e == idx] - p_idx) over the E experts; dz += dlogits W. */
static void linear_router_backward(zaya_engine *e, int l, float *dz) {
    const zaya_config *c = e->c;
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, E = c->num_experts;
    e->be->router_dlogits(e->be, e->dprobs, A->probs, E + 1, e->dgate, A->idx, N, E);
    zaya_engine_lin_backward(e, dz, 1.0f, e->g.layers[l].r_lin_w, e->dprobs, A->z, e->p.layers[l].r_lin_w, N, D, E, 0);
}

static void zaya_router_forward(zaya_engine *e, int l) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, R = c->router_hidden_size, E1 = c->num_experts + 1;
    zaya_engine_lin_forward(e, A->r, A->z, P->r_down_w, N, D, R, 0.0f, 0);
    be->add_bias(be, A->r, P->r_down_b, N, R);
    if (P->r_eda) be->eda_forward(be, A->r, P->r_eda, e->L[l - 1].r, N, R);
    be->rmsnorm_forward(be, A->rn, A->rstd_r, A->r, P->r_norm, N, R, (float)c->rms_norm_eps);
    zaya_engine_lin_forward(e, A->a1, A->rn, P->r_fc1_w, N, R, R, 0.0f, 0);
    be->add_bias(be, A->a1, P->r_fc1_b, N, R);
    be->gelu_forward(be, A->g1, A->a1, N * R);
    zaya_engine_lin_forward(e, A->a2, A->g1, P->r_fc2_w, N, R, R, 0.0f, 0);
    be->add_bias(be, A->a2, P->r_fc2_b, N, R);
    be->gelu_forward(be, A->g2, A->a2, N * R);
    zaya_engine_lin_forward(e, e->dprobs, A->g2, P->r_out_w, N, R, E1, 0.0f, 0); /* logits scratch */
    be->softmax_forward(be, A->probs, e->dprobs, N, E1);
}

static zaya_status dispatch(zaya_engine *e, zaya_engine_layer *A, int l) {
    const int64_t N = e->B * e->T, E1 = e->c->num_experts + 1;
    zaya_backend *be = e->be;
    ZAYA_TRY(be->download(be, e->h_idx, A->idx, sizeof(int32_t) * (size_t)N));
    int64_t *off = A->off, *counts = e->route_counts + (int64_t)l * E1;
    for (int64_t k = 0; k <= E1; k++) off[k] = 0;
    for (int64_t i = 0; i < N; i++) {
        if (e->h_idx[i] < 0 || e->h_idx[i] >= E1)
            return zaya_error_set(ZAYA_EBACKEND, "%s: block %d's selection of token %lld is class %d (of %lld)", be->name,
                                  l, (long long)i, e->h_idx[i], (long long)E1);
        off[e->h_idx[i] + 1]++;
    }
    for (int64_t k = 0; k < E1; k++) {
        counts[k] = off[k + 1];
        off[k + 1] += off[k];
    }
    int32_t *fill = e->h_fill;
    for (int64_t k = 0; k < E1; k++) fill[k] = (int32_t)off[k];
    for (int64_t i = 0; i < N; i++) {
        const int32_t r = fill[e->h_idx[i]]++;
        e->h_perm[r] = (int32_t)i;
        e->h_row_of[i] = r;
    }
    ZAYA_TRY(be->upload(be, A->perm, e->h_perm, sizeof(int32_t) * (size_t)N));
    return be->upload(be, A->row_of, e->h_row_of, sizeof(int32_t) * (size_t)N);
}

/* The statistics of block l's scores for the balancer (route_spread, route_psum), on the host. */
static zaya_status route_stats(zaya_engine *e, int l) {
    const int64_t N = e->B * e->T, E = e->c->num_experts;
    zaya_backend *be = e->be;
    be->route_stats(be, e->stats, e->stats + E, e->L[l].probs, E + 1, N, E);
    double h[E + 1];
    ZAYA_TRY(be->download(be, h, e->stats, sizeof(double) * (size_t)(E + 1)));
    memcpy(e->route_psum + (int64_t)l * E, h, sizeof(double) * (size_t)E);
    e->route_spread[l] = h[E];
    return ZAYA_OK;
}

static void dense_forward(zaya_engine *e, int l) {
    const zaya_config *c = e->c;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, F = zaya_config_dense_ffn(c);
    zaya_engine_lin_forward(e, A->gu, A->z, P->gate_up, N, D, 2 * F, 0.0f, 0);
    e->be->swiglu_forward(e->be, A->act, A->gu, N, F);
    zaya_engine_lin_forward(e, A->m, A->act, P->down, N, F, D, 0.0f, 0);
}

zaya_status zaya_engine_moe_forward(zaya_engine *e, int l) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, E = c->num_experts, E1 = E + 1, F = c->moe_intermediate_size;
    if (c->mlp == ZAYA_MLP_DENSE) {
        zaya_engine_prof_mark(e, ZAYA_PROF_EXPERTS);
        dense_forward(e, l);
        memset(e->route_counts + (int64_t)l * E1, 0, sizeof(int64_t) * (size_t)E1);
        memset(e->route_psum + (int64_t)l * E, 0, sizeof(double) * (size_t)E);
        e->route_spread[l] = 0.0;
        return ZAYA_OK;
    }
    zaya_engine_prof_mark(e, ZAYA_PROF_ROUTER);
    if (c->router == ZAYA_ROUTER_LINEAR) linear_router_forward(e, l);
    else zaya_router_forward(e, l);
    ZAYA_TRY(route_stats(e, l));
    if (e->route_hook) e->route_hook(e->route_hook_ctx, e, l);
    zaya_engine_prof_mark(e, ZAYA_PROF_DISPATCH);
    ZAYA_TRY(zaya_engine_push_bias(e, l));
    be->top1(be, A->idx, A->gate, A->probs, E1, P->bal_bias, N, zaya_config_router_classes(c));
    ZAYA_TRY(dispatch(e, A, l));
    be->gather_rows(be, A->xe, A->z, A->perm, N, D);
    zaya_engine_prof_mark(e, ZAYA_PROF_EXPERTS);
    for (int64_t x = 0; x < E; x++) {
        const int64_t o = A->off[x], ne = A->off[x + 1] - o;
        if (ne == 0) continue;
        zaya_engine_lin_forward(e, A->gu + o * 2 * F, A->xe + o * D, P->gate_up + x * 2 * F * D, ne, D, 2 * F, 0.0f, 1);
        be->swiglu_forward(be, A->act + o * F, A->gu + o * 2 * F, ne, F);
        zaya_engine_lin_forward(e, A->ye + o * D, A->act + o * F, P->down + x * D * F, ne, F, D, 0.0f, 1);
    }
    zaya_engine_prof_mark(e, ZAYA_PROF_DISPATCH);
    be->moe_combine_forward(be, A->m, A->ye, A->z, A->idx, A->gate, A->row_of, N, D, E,
                            c->skip_mode == ZAYA_SKIP_IDENTITY);
    return ZAYA_OK;
}

static void dense_backward(zaya_engine *e, int l, const float *dm, float *dz) {
    const zaya_config *c = e->c;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_layer_params *G = &e->g.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, F = zaya_config_dense_ffn(c);
    zaya_engine_lin_backward(e, e->dact, 0.0f, G->down, dm, A->act, P->down, N, F, D, 0);
    e->be->swiglu_backward(e->be, e->dgu, e->dact, A->gu, N, F);
    zaya_engine_lin_backward(e, dz, 0.0f, G->gate_up, e->dgu, A->z, P->gate_up, N, D, 2 * F, 0);
}

/* The ZAYA router's backward from dgate (dz += its input gradient); the router state's gradient for
 * the previous block's EDA goes to dr_carry. */
static void zaya_router_backward(zaya_engine *e, int l, float *dz) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_layer_params *G = &e->g.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, R = c->router_hidden_size, E1 = c->num_experts + 1;
    be->router_dlogits(be, e->dprobs, A->probs, E1, e->dgate, A->idx, N, E1);
    zaya_engine_lin_backward(e, e->dg2, 0.0f, G->r_out_w, e->dprobs, A->g2, P->r_out_w, N, R, E1, 0);
    be->gelu_backward(be, e->dg, e->dg2, A->a2, N * R);
    be->colsum_add(be, G->r_fc2_b, e->dg, N, R);
    zaya_engine_lin_backward(e, e->dg2, 0.0f, G->r_fc2_w, e->dg, A->g1, P->r_fc2_w, N, R, R, 0);
    be->gelu_backward(be, e->dg, e->dg2, A->a1, N * R);
    be->colsum_add(be, G->r_fc1_b, e->dg, N, R);
    zaya_engine_lin_backward(e, e->drn, 0.0f, G->r_fc1_w, e->dg, A->rn, P->r_fc1_w, N, R, R, 0);
    be->rmsnorm_backward(be, e->dr, G->r_norm, e->drn, A->r, P->r_norm, A->rstd_r, N, R);
    if (zaya_config_has_eda(c)) be->add(be, e->dr, e->dr_carry, N * R);
    if (P->r_eda) {
        /* r_l = W z + b + gamma_l r_{l-1}: d(gamma_l) = colsum(dr r_{l-1}); d(r_{l-1}) = dr gamma_l, which
         * block l-1 adds to its own router-state gradient */
        be->eda_backward(be, e->drn, e->dr_carry, e->dr, e->L[l - 1].r, P->r_eda, N, R);
        be->colsum_add(be, G->r_eda, e->drn, N, R);
    }
    be->colsum_add(be, G->r_down_b, e->dr, N, R);
    zaya_engine_lin_backward(e, dz, 1.0f, G->r_down_w, e->dr, A->z, P->r_down_w, N, D, R, 0);
}

void zaya_engine_moe_backward(zaya_engine *e, int l, const float *dm, float *dz) {
    const zaya_config *c = e->c;
    zaya_backend *be = e->be;
    if (c->mlp == ZAYA_MLP_DENSE) {
        zaya_engine_prof_mark(e, ZAYA_PROF_EXPERTS);
        dense_backward(e, l, dm, dz);
        return;
    }
    const zaya_layer_params *P = &e->p.layers[l];
    zaya_layer_params *G = &e->g.layers[l];
    zaya_engine_layer *A = &e->L[l];
    const int64_t N = e->B * e->T, D = c->hidden_size, E = c->num_experts, F = c->moe_intermediate_size;
    zaya_engine_prof_mark(e, ZAYA_PROF_DISPATCH);
    be->moe_combine_backward(be, e->dye, dz, e->dgate, dm, A->ye, A->z, A->idx, A->gate, A->row_of, N, D, E,
                             c->skip_mode == ZAYA_SKIP_IDENTITY);
    zaya_engine_prof_mark(e, ZAYA_PROF_EXPERTS);
    for (int64_t x = 0; x < E; x++) {
        const int64_t o = A->off[x], ne = A->off[x + 1] - o;
        if (ne == 0) continue;
        const float *Wd = P->down + x * D * F, *Wgu = P->gate_up + x * 2 * F * D;
        zaya_engine_lin_backward(e, e->dact + o * F, 0.0f, G->down + x * D * F, e->dye + o * D, A->act + o * F, Wd, ne,
                                 F, D, 1);
        be->swiglu_backward(be, e->dgu + o * 2 * F, e->dact + o * F, A->gu + o * 2 * F, ne, F);
        zaya_engine_lin_backward(e, e->dxe + o * D, 0.0f, G->gate_up + x * 2 * F * D, e->dgu + o * 2 * F, A->xe + o * D,
                                 Wgu, ne, D, 2 * F, 1);
    }
    zaya_engine_prof_mark(e, ZAYA_PROF_DISPATCH);
    be->scatter_rows(be, dz, e->dxe, A->idx, A->row_of, N, D, E);
    zaya_engine_prof_mark(e, ZAYA_PROF_ROUTER);
    if (c->router == ZAYA_ROUTER_LINEAR) linear_router_backward(e, l, dz);
    else zaya_router_backward(e, l, dz);
}

/* ---------------------------------------------------------------- recounts */

zaya_status zaya_engine_route_count_layer(zaya_engine *e, int l, int64_t *counts) {
    const int64_t E1 = e->c->num_experts + 1;
    memset(counts, 0, sizeof(int64_t) * (size_t)E1);
    if (!zaya_config_is_moe(e->c)) return ZAYA_OK;
    ZAYA_TRY(zaya_engine_push_bias(e, l));
    zaya_backend *be = e->be;
    be->top1_count(be, e->counts, e->L[l].probs, E1, e->p.layers[l].bal_bias, e->B * e->T,
                   zaya_config_router_classes(e->c));
    const int64_t k = zaya_config_router_classes(e->c);
    return be->download(be, counts, e->counts, sizeof(int64_t) * (size_t)k);
}

zaya_status zaya_engine_route_recount(zaya_engine *e, int64_t *counts) {
    const int64_t L = e->c->num_hidden_layers, E1 = e->c->num_experts + 1;
    for (int64_t l = 0; l < L; l++) ZAYA_TRY(zaya_engine_route_count_layer(e, (int)l, counts + l * E1));
    return ZAYA_OK;
}

/* MoE block of one step: the router (with exponential depth averaging over the previous MoE layer's
 * router state of the same token), biased top-1, and the experts over the rows routed to each, as in
 * src/model/moe.c but without the activations training saves. */
#include "infer/internal.h"

static void add_bias(float *y, const float *b, int64_t n, int64_t d) {
    for (int64_t i = 0; i < n; i++)
#pragma omp simd
        for (int64_t j = 0; j < d; j++) y[i * d + j] += b[j];
}

/* Dense SwiGLU MLP (zaya_mlp "dense"): every row through gate|up, SwiGLU, down; no gate. */
static void dense(zaya_infer *e, const zaya_infer_layer_w *P, int64_t N) {
    const zaya_config *c = &e->w->cfg;
    const int64_t D = c->hidden_size, F = zaya_config_dense_ffn(c);
    zaya_infer_lin2(e, e->gu, e->z, P->gate_up, F, P->up, F, N, D);
    zaya_swiglu_forward(e->act, e->gu, N, F);
    zaya_infer_lin(e, e->mo, e->act, P->down, N, F, D);
}

void zaya_infer_moe(zaya_infer *e, int l, int64_t N) {
    const zaya_config *c = &e->w->cfg;
    const zaya_infer_layer_w *P = &e->w->layers[l];
    const int64_t D = c->hidden_size, R = c->router_hidden_size, E = c->num_experts, E1 = E + 1;
    const int64_t F = c->moe_intermediate_size;

    if (c->mlp == ZAYA_MLP_DENSE) {
        dense(e, P, N);
        return;
    }
    if (c->router == ZAYA_ROUTER_LINEAR) {
        /* softmax over the E experts in the first E columns; the skip column is never selected */
        zaya_infer_lin(e, e->elog, e->z, P->r_lin_w, N, D, E);
        for (int64_t i = 0; i < N; i++) {
            zaya_softmax_forward(e->probs + i * E1, e->elog + i * E, 1, E);
            e->probs[i * E1 + E] = 0.0f;
        }
    } else {
        zaya_infer_lin(e, e->r, e->z, P->r_down_w, N, D, R);
        add_bias(e->r, P->r_down_b, N, R);
        if (P->r_eda)
            for (int64_t i = 0; i < N * R; i++) e->r[i] += P->r_eda[i % R] * e->rprev[i];
        zaya_rmsnorm_forward(e->rn, e->rstd, e->r, P->r_norm, N, R, (float)c->rms_norm_eps);
        zaya_infer_lin(e, e->t1, e->rn, P->r_fc1_w, N, R, R);
        add_bias(e->t1, P->r_fc1_b, N, R);
        zaya_gelu_forward(e->t2, e->t1, N * R);
        zaya_infer_lin(e, e->t1, e->t2, P->r_fc2_w, N, R, R);
        add_bias(e->t1, P->r_fc2_b, N, R);
        zaya_gelu_forward(e->t2, e->t1, N * R);
        zaya_infer_lin(e, e->elog, e->t2, P->r_out_w, N, R, E1);
        zaya_softmax_forward(e->probs, e->elog, N, E1);
    }
    zaya_top1_biased_ld(e->idx, e->gate, e->probs, E1, P->bal_bias, N, zaya_config_router_classes(c));

    /* group rows by expert (token order within an expert) */
    for (int64_t k = 0; k <= E1; k++) e->off[k] = 0;
    for (int64_t i = 0; i < N; i++) e->off[e->idx[i] + 1]++;
    for (int64_t k = 0; k < E1; k++) e->off[k + 1] += e->off[k];
    for (int64_t i = 0; i < N; i++) {
        int64_t k = e->idx[i], r = e->off[k]++;
        e->perm[r] = (int32_t)i;
        e->rowof[i] = (int32_t)r;
    }
    for (int64_t k = E1; k > 0; k--) e->off[k] = e->off[k - 1];
    e->off[0] = 0;

    for (int64_t r = 0; r < e->off[E]; r++) memcpy(e->xe + r * D, e->z + (int64_t)e->perm[r] * D, (size_t)D * sizeof(float));
    for (int64_t k = 0; k < E; k++) {
        const int64_t o = e->off[k], ne = e->off[k + 1] - o;
        if (ne == 0) continue;
        zaya_infer_lin(e, e->gu + o * 2 * F, e->xe + o * D, zaya_infer_mat_at(e, P->gate_up, k, 2 * F * D), ne, D,
                       2 * F);
        zaya_swiglu_forward(e->act + o * F, e->gu + o * 2 * F, ne, F);
        zaya_infer_lin(e, e->ye + o * D, e->act + o * F, zaya_infer_mat_at(e, P->down, k, D * F), ne, F, D);
    }
    const int identity = c->skip_mode == ZAYA_SKIP_IDENTITY;
    for (int64_t i = 0; i < N; i++) {
        float g = e->gate[i], *mi = e->mo + i * D;
        const float *src = e->idx[i] < E ? e->ye + (int64_t)e->rowof[i] * D : e->z + i * D;
        if (e->idx[i] == E && !identity) g = 0.0f;
#pragma omp simd
        for (int64_t j = 0; j < D; j++) mi[j] = g * src[j];
    }
}

/* Private pieces of the training engine shared by its source files. Every float / int pointer below
 * is the backend's memory unless its comment says "host". */
#ifndef ZAYA_ENGINE_INTERNAL_H
#define ZAYA_ENGINE_INTERNAL_H

#include <stdint.h>

#include "zaya/engine.h"
#include "zaya/timer.h"

/* Saved activations of one block (the fields of src/model/internal.h's zaya_layer_acts). */
typedef struct zaya_engine_layer {
    float *x, *rstd_in, *xn, *qk_pre, *conv0, *qk_raw, *inv_norm, *qk, *q, *k, *vv, *v, *att, *lse, *a, *h;
    float *rstd_post, *z, *r, *rstd_r, *rn, *a1, *g1, *a2, *g2, *probs, *gate, *xe, *gu, *act, *ye, *m;
    int32_t *idx, *perm, *row_of;
    int64_t *off; /* host: [E + 2] start of each class in perm (dispatch runs on the host) */
} zaya_engine_layer;

struct zaya_engine {
    zaya_backend *be;
    zaya_model *host;
    const zaya_config *c;
    zaya_dtype dt;
    /* parameter, gradient blocks and the bf16 shadow (bf16 only), laid out as the host's */
    float *params, *grads;
    uint16_t *params_bf16;
    zaya_params p, g;
    /* RoPE table of the host's current theta: [max_pos, rot_dims / 2] each */
    float *rope_cos, *rope_sin;
    double rope_theta;
    /* the plan */
    int64_t B, T;
    void *arena;
    size_t arena_bytes;
    zaya_engine_layer *L;
    int32_t *pos, *ids, *targets;
    float *x_final, *rstd_final, *y_final, *dy_final, *logits, *losses;
    int64_t chunk_rows;
    float *qk_mult, *dqk_mult; /* [Hq + Hkv] */
    float *dx, *dh, *dz, *da, *dxn, *dqk, *dqk2, *dconv0, *dq, *dk, *dv, *dvv, *datt;
    float *dr, *dr_carry, *drn, *dg, *dg2, *dprobs, *dgate, *dye, *dxe, *dgu, *dact;
    uint16_t *bf_a, *bf_b; /* bf16 operand staging, bf_cap elements each */
    int64_t bf_cap;
    int32_t *emb_sorted, *emb_seg; /* the embedding gradient's token order (backend.h embed_backward) */
    int64_t emb_nseg;
    double *stats;   /* [E + 1]: route_stats' psum and spread */
    int64_t *counts; /* [E + 1] */
    /* host scratch of the plan */
    int32_t *h_idx, *h_perm, *h_row_of, *h_sorted, *h_seg, *h_fill; /* one allocation at h_idx */
    int32_t *h_cnt; /* [65537] radix-sort digit counts */
    float *h_losses;
    int backward_ready; /* the last forward left what a backward needs */
    /* routing of the last forward (host) */
    int64_t *route_counts;
    double *route_spread, *route_psum;
    void (*route_hook)(void *ctx, zaya_engine *e, int layer);
    void *route_hook_ctx;
    float last_loss;
    int64_t last_tokens;
    /* the optimizer (optim.c) */
    zaya_optim *opt;
    float *state;          /* as opt->state_block */
    double *unit_sums;     /* [nunits] */
    double *h_unit_sums;   /* host [nunits] */
    float *ns_x, *ns_y, *ns_a, *ns_b, *ns_u; /* Newton-Schulz batch iterates, Gram matrices, a unit's update */
    uint16_t *ns_xh, *ns_ah, *ns_bh;
    float *exchange; /* ZeRO-1: [nfloats] the owned units' new values, zeros elsewhere */
    /* host backends: params, grads, the bf16 shadow and the optimizer state are the host's own blocks */
    int aliased;
    /* the phase profile (zaya_engine_profile_attach): as zaya_model's */
    zaya_model_profile *prof;
    int prof_pass, prof_phase;
    uint64_t prof_t0;
};

/* Phase profile marks (as src/model/internal.h's zaya_prof_mark / zaya_prof_begin): charges the span
 * since the last mark to the phase being timed, then times `phase` (-1: stop). On a device backend a
 * mark first waits for the queued operations, so that each span holds its own phase's work. */
static inline void zaya_engine_prof_mark(zaya_engine *e, int phase) {
    if (!e->prof) return;
    if (!e->be->is_host) (void)e->be->sync(e->be);
    const uint64_t t = zaya_now_ns();
    if (e->prof_phase >= 0) e->prof->s[e->prof_pass][e->prof_phase] += (double)(t - e->prof_t0) * 1e-9;
    e->prof_phase = phase;
    e->prof_t0 = t;
}
static inline void zaya_engine_prof_begin(zaya_engine *e, int pass, int phase) {
    if (!e->prof) return;
    e->prof_pass = pass;
    e->prof_phase = -1;
    zaya_engine_prof_mark(e, phase);
}

/* Linear layers (forward.c), as src/model/linear.c: y = x W^T (+ y with beta 1); backward dx (=, or +=
 * with beta 1; NULL: none) = dy W and dW += dy^T x. vary: an expert's changing row count. */
void zaya_engine_lin_forward(zaya_engine *e, float *y, const float *x, const float *W, int64_t n, int64_t in,
                             int64_t out, float beta, int vary);
void zaya_engine_lin_backward(zaya_engine *e, float *dx, float beta, float *dW, const float *dy, const float *x,
                              const float *W, int64_t n, int64_t in, int64_t out, int vary);

/* Blocks (blocks.c). */
void zaya_engine_cca_forward(zaya_engine *e, int l);
void zaya_engine_cca_backward(zaya_engine *e, int l, const float *da, float *dxn);
void zaya_engine_softmax_attn_forward(zaya_engine *e, int l);
void zaya_engine_softmax_attn_backward(zaya_engine *e, int l, const float *da, float *dxn);
zaya_status zaya_engine_moe_forward(zaya_engine *e, int l);
void zaya_engine_moe_backward(zaya_engine *e, int l, const float *dm, float *dz);
/* Uploads block l's balancing biases from the host master. */
zaya_status zaya_engine_push_bias(zaya_engine *e, int l);

/* The RoPE table for the host's current theta (uploaded when it changed). */
zaya_status zaya_engine_sync_rope(zaya_engine *e);
void zaya_engine_optim_free(zaya_engine *e);
/* Re-rounds the bf16 shadow from the f32 parameters (bf16 only). */
void zaya_engine_refresh_shadow(zaya_engine *e);

#endif

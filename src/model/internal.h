/* Private pieces of the model shared by its source files. */
#ifndef ZAYA_MODEL_INTERNAL_H
#define ZAYA_MODEL_INTERNAL_H

#include <stdint.h>

#include "zaya/model.h"
#include "zaya/model_ops.h" /* the model's elementwise pieces, as kernels */
#include "zaya/timer.h"

/* Saved activations of one block for a planned (B, T); N = B*T rows. */
struct zaya_layer_acts {
    float *x;        /* [N, D] block input (residual stream) */
    float *rstd_in;  /* [N] */
    float *xn;       /* [N, D] input_layernorm output */
    float *qk_pre;   /* [N, C] q|k projections before the convolutions */
    float *conv0;    /* [B, T + k1 - 1, C] depthwise output */
    float *qk_raw;   /* [N, C] after the grouped conv and the QK-mean skip terms (pre-norm) */
    float *inv_norm; /* [N, Hq + Hkv] */
    float *qk;       /* [N, C] normed, temperature-scaled, rotated */
    float *q, *k;    /* [N, q_dim], [N, kv_dim]: qk split for the attention kernel */
    float *vv;       /* [N, kv_dim] v_proj_current | v_proj_delayed outputs (before the shift) */
    float *v;        /* [N, kv_dim] values seen by attention */
    float *att;      /* [N, q_dim] attention output */
    float *lse;      /* [B, Hq, T] */
    float *a;        /* [N, D] o_proj output */
    float *h;        /* [N, D] after the post-attention merge */
    float *rstd_post;/* [N] */
    float *z;        /* [N, D] post_attention_layernorm output = MoE input */
    float *r;        /* [N, R] router state after EDA, before its norm */
    float *rstd_r;   /* [N] */
    float *rn;       /* [N, R] */
    float *a1, *g1;  /* [N, R] fc1 pre/post GELU */
    float *a2, *g2;  /* [N, R] fc2 pre/post GELU */
    float *probs;    /* [N, E+1] */
    int32_t *idx;    /* [N] chosen class */
    float *gate;     /* [N] probability of the chosen class */
    int32_t *perm;   /* [N] rows grouped by class: perm[j] = token of permuted row j */
    int32_t *row_of; /* [N] inverse: permuted row of each token */
    int64_t *off;    /* [E + 2] start of each class in perm */
    float *xe;       /* [N, D] MoE inputs gathered in perm order (routed rows only are used) */
    float *gu;       /* [N, 2F] */
    float *act;      /* [N, F] */
    float *ye;       /* [N, D] expert outputs before the gate */
    float *m;        /* [N, D] MoE branch output */
    float *halo;     /* context parallelism: [B, H, C] the previous rank's last H pre-conv q|k rows */
};

/* Scratch reused across blocks (forward and backward). */
typedef struct zaya_model_work {
    int32_t *pos;           /* [N] position of each row within its sequence */
    float *x_final;         /* [N, D] residual stream after the last block */
    float *rstd_final;      /* [N] */
    float *y_final;         /* [N, D] final norm output */
    float *dy_final;        /* [N, D] d(loss)/d(y_final), filled by a backward-ready forward */
    float *logits;          /* [chunk, V] */
    float *losses;          /* [N] */
    int64_t chunk_rows;
    float *qk_mult;         /* [Hq + Hkv] per-head multipliers: 1 for q, temp for k */
    float *dqk_mult;        /* [Hq + Hkv] */
    /* backward scratch */
    float *dx, *dh, *dz, *da, *dxn; /* [N, D] */
    float *dqk, *dqk2;      /* [N, C] */
    float *dconv0;          /* [B, T + k1 - 1, C] */
    float *dq, *dk, *dv, *dvv; /* [N, q_dim], [N, kv_dim] x3 */
    float *datt;            /* [N, q_dim] */
    float *dr, *dr_carry, *drn, *dg, *dg2; /* [N, R] */
    float *dprobs;          /* [N, E+1] */
    float *dgate;           /* [N] */
    float *dye, *dxe;       /* [N, D] */
    float *dgu;             /* [N, 2F] */
    float *dact;            /* [N, F] */
    /* bf16 operand staging for bf16 matmuls */
    uint16_t *bf_a, *bf_b;
    int64_t bf_cap;
    /* an expert call of fewer than ZAYA_EXPERT_MIN_ROWS rows runs on these zero-padded copies */
    float *pad_in, *pad_out; /* [ZAYA_EXPERT_MIN_ROWS, widest] */
    float *conv_ws;          /* CCA: the grouped convolution's GEMM workspace (zaya_conv1d_grouped_ws_floats) */
    /* context parallelism (cp.c): P pieces of Tp = T / P rows per sequence, H = cca_time0 + cca_time1
     * - 2 halo rows, h = kv_dim / 2, M = H * C + h floats of boundary state per piece and sequence */
    float *cp_ext, *cp_dext;      /* [B * P, Tp + H, C] each piece's halo rows then its pre-conv q|k rows */
    float *cp_send, *cp_recv;     /* [P, B, M] boundary state out / in, by the receiving piece */
    float *cp_kv, *cp_kv_all;     /* [B, T, 2 kv_dim] k|v rows, and [size, B, T, 2 kv_dim] gathered */
    float *cp_gk, *cp_gv;         /* [B, S, kv_dim] every position's keys / values (S = size * T) */
    float *cp_dgk, *cp_dgv;       /* [B, S, kv_dim] their gradients from this rank's queries */
    float *cp_tk, *cp_tv;         /* [S, kv_dim] one piece's share of those */
    int32_t *ids;           /* [N] copy of the last forward's ids */
    int32_t *targets;       /* [N] */
    int has_targets;
} zaya_model_work;

zaya_status zaya_layout_build(const zaya_config *c, zaya_tensor_info **tensors, int *ntensors, int64_t *nfloats);
void zaya_layout_bind(const zaya_model *m, float *base, zaya_params *p);

/* Linear layers y = x W^T with W [out, in] as stored (PyTorch layout), in the model's dtype.
 * Wb is the bf16 shadow of W (ignored in f32). */
void zaya_lin_forward(zaya_model *m, float *y, const float *x, const float *W, int64_t n, int64_t in, int64_t out,
                      float beta);
/* Two projections of the same input (y1 = x W1^T, y2 = x W2^T), x converted to bf16 once. */
void zaya_lin_forward2(zaya_model *m, float *y1, const float *W1, int64_t out1, float *y2, const float *W2,
                       int64_t out2, const float *x, int64_t n, int64_t in);
/* Backward: dx (=, or += with beta 1) = dy W and dW += dy^T x, with dy converted to bf16 once. */
void zaya_lin_backward(zaya_model *m, float *dx, float beta, float *dW, const float *dy, const float *x, const float *W,
                       int64_t n, int64_t in, int64_t out);
/* The same two for an expert's rows, whose count n changes from call to call (one primitive for
 * every n; forward and input gradient overwrite). A row's result does not depend on n: oneDNN's
 * run-time-shape kernels switch to other code below 16 rows, so such calls run on a copy padded with
 * zero rows to ZAYA_EXPERT_MIN_ROWS (tests/test_model.c checks the rows bit for bit). */
#define ZAYA_EXPERT_MIN_ROWS 16
void zaya_lin_expert_forward(zaya_model *m, float *y, const float *x, const float *W, int64_t n, int64_t in,
                             int64_t out);
void zaya_lin_expert_backward(zaya_model *m, float *dx, float *dW, const float *dy, const float *x, const float *W,
                              int64_t n, int64_t in, int64_t out);

/* Context parallelism (src/model/cp.c): the exchanges of one attention block. */
void zaya_cp_plan(zaya_model *m, zaya_arena *a);
/* Rows of the convolution outputs the plan keeps per batch: T + P * (cca_time1 - 1) per sequence. */
int64_t zaya_cp_conv_rows(const zaya_model *m);
/* Forward, once qk_pre [N, C] and vv [N, kv_dim] are final and the in-piece value shift is done: the
 * boundary state of every piece (its last H pre-conv q|k rows, its last row's delayed values) goes to
 * the holder of the next chunk; the received state becomes the block's halo (A->halo), the convolution
 * input w->cp_ext, and each piece's first delayed-value row of v. */
void zaya_cp_exchange_inputs(zaya_model *m, int l, const float *qk_pre, const float *vv, float *v);
/* Rebuilds w->cp_ext of block l (backward) from A->halo and A->qk_pre. */
void zaya_cp_build_ext(zaya_model *m, int l);
/* Backward of both boundaries: dext [B * P, Tp + H, C] -> dqk_pre [N, C] (=), and dvv gets each piece's
 * last-row delayed-value gradient; the halo rows' gradients and each piece's first-row dv (second
 * half) go back to the holder of the previous chunk, the next chunk's come in and are added. */
void zaya_cp_return_boundaries(zaya_model *m, const float *dext, const float *dv, float *dqk_pre, float *dvv);
/* A->att, A->lse from A->q, A->k, A->v (whole sequences, or this rank's pieces against every chunk's
 * K/V; lse then [B, P, Hq, Tp]), and back: w->dq, w->dk, w->dv from w->datt. */
void zaya_attn_chunk_forward(zaya_model *m, zaya_layer_acts *A);
void zaya_attn_chunk_backward(zaya_model *m, zaya_layer_acts *A);

/* Blocks (src/model/cca.c, src/model/moe.c). */
void zaya_cca_forward(zaya_model *m, int l, const float *xn, float *a_out);
void zaya_cca_backward(zaya_model *m, int l, const float *da, float *dxn);
/* GQA / MHA blocks (zaya_attention "gqa" | "mha", src/model/softmax_attn.c). */
void zaya_softmax_attn_forward(zaya_model *m, int l, const float *xn, float *a_out);
void zaya_softmax_attn_backward(zaya_model *m, int l, const float *da, float *dxn);
void zaya_moe_forward(zaya_model *m, int l, const float *r_prev);
void zaya_moe_backward(zaya_model *m, int l, const float *dm, const float *r_prev, float *dr_prev_out, float *dz);

/* Phase profile (zaya_model_profile_attach): charges the span since the last mark to the phase being
 * timed, then times `phase` (-1: stop). Passes start with zaya_prof_begin. Free when no record. */
static inline void zaya_prof_mark(zaya_model *m, int phase) {
    if (!m->prof) return;
    const uint64_t t = zaya_now_ns();
    if (m->prof_phase >= 0) m->prof->s[m->prof_pass][m->prof_phase] += (double)(t - m->prof_t0) * 1e-9;
    m->prof_phase = phase;
    m->prof_t0 = t;
}
static inline void zaya_prof_begin(zaya_model *m, int pass, int phase) {
    if (!m->prof) return;
    m->prof_pass = pass;
    m->prof_phase = -1;
    zaya_prof_mark(m, phase);
}


#endif

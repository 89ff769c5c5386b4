/* Private state of the inference engine (src/infer/). */
#ifndef ZAYA_INFER_INTERNAL_H
#define ZAYA_INFER_INTERNAL_H

#include <string.h>

#include "model/internal.h"
#include "zaya/infer.h"
#include "zaya/infer_weights.h"

/* Projections with at most this many rows use the GEMV kernel (when enabled). */
#define ZAYA_INFER_GEMV_ROWS 8

/* One piece of a step: `n` new tokens of slot `slot`, starting at row `row0` of the step. */
typedef struct zaya_infer_seg {
    int64_t slot, n, row0, pos0;
} zaya_infer_seg;

struct zaya_infer {
    const zaya_infer_weights *w;
    zaya_infer_weights view; /* the weights of a model given to zaya_infer_init */
    int own_view;
    int kv_bf16;             /* K/V caches in bf16 (bf16 weights), else f32 */
    int64_t kv_esz;          /* bytes per cached K/V element */
    int64_t bytes_read;      /* weights + KV read by the steps so far (zaya_infer_bytes_read) */
    int64_t S, Tmax, cap, W; /* slots, max length, rows per step, conv window (k0-1)+(k1-1) */
    int gemv;
    int64_t *len;            /* [S] tokens cached per slot */
    void **kc, **vc;         /* per layer [S, Tmax, kv_dim] (f32 or bf16) */
    float **conv;            /* per layer [S, W, C] */
    float **vdel;            /* per layer [S, kv_dim/2] */
    float *mult;             /* [L, Hq + Hkv]: 1 for q heads, temperature for k heads */
    void *cache_block;
    zaya_arena arena;        /* step scratch */
    /* step scratch ([cap, width] unless noted) */
    int32_t *ids, *pos;
    float *x, *xn, *rstd, *qkpre, *qkraw, *qk, *inv, *q, *vv, *v, *att, *a, *h, *z;
    float *win;              /* [cap + S*W, C] per-segment windows: state rows then new rows */
    float *conv0;            /* [cap + S*(k1-1), C] */
    float *r, *rprev, *rn, *t1, *t2, *elog, *probs, *gate;
    int32_t *idx, *perm, *rowof;
    int64_t *off;            /* [E + 2] */
    float *xe, *gu, *act, *ye, *mo, *y;
    float *ylast, *lglast;   /* [S, D], [S, V] */
    float *xr;               /* [GEMV_ROWS, max in] bf16-rounded activations */
    float *pa, *pb;          /* [cap, max(q_dim, kv_dim)]: the two halves of a split projection */
    uint16_t *bf;            /* bf16 staging */
    int64_t bf_cap;
    zaya_infer_seg *seg;     /* [S] */
    const void **kp, **vp;   /* [S] */
    int64_t *apos, *arows;   /* [S] */
    int64_t kv_bytes, state_bytes, total_bytes;
};

/* y [n, out] = x [n, in] W^T, W in the weights' dtype. */
void zaya_infer_lin(zaya_infer *e, float *y, const float *x, const void *W, int64_t n, int64_t in, int64_t out);
/* y [n, out1 + out2] = x [W1; W2]^T: one product when W2 follows W1 in memory, else two. */
void zaya_infer_lin2(zaya_infer *e, float *y, const float *x, const void *W1, int64_t out1, const void *W2,
                     int64_t out2, int64_t n, int64_t in);
/* Row `index` of matrix stack W (elements of `per` each) in the weights' dtype. */
const void *zaya_infer_mat_at(const zaya_infer *e, const void *W, int64_t index, int64_t per);
/* Attention of the step's rows against bf16 caches (the f32 engine uses zaya_attention_decode). */
void zaya_infer_attention_bf16(float *out, const float *q, const uint16_t *const *k_cache,
                               const uint16_t *const *v_cache, const int64_t *pos, const int64_t *n_rows, int64_t nseq,
                               int64_t Hq, int64_t Hkv, int64_t D, float scale);
void zaya_infer_cca(zaya_infer *e, int l, int64_t N, int64_t nseg);
void zaya_infer_moe(zaya_infer *e, int l, int64_t N);

#endif

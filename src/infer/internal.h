/* Private state of the inference engine (src/infer/). */
#ifndef ZAYA_INFER_INTERNAL_H
#define ZAYA_INFER_INTERNAL_H

#include <string.h>

#include "model/internal.h"
#include "zaya/infer.h"

/* Projections with at most this many rows use the GEMV kernel (when enabled). */
#define ZAYA_INFER_GEMV_ROWS 8

/* One piece of a step: `n` new tokens of slot `slot`, starting at row `row0` of the step. */
typedef struct zaya_infer_seg {
    int64_t slot, n, row0, pos0;
} zaya_infer_seg;

struct zaya_infer {
    zaya_model *m;
    int64_t S, Tmax, cap, W; /* slots, max length, rows per step, conv window (k0-1)+(k1-1) */
    int gemv;
    int64_t *len;            /* [S] tokens cached per slot */
    float **kc, **vc;        /* per layer [S, Tmax, kv_dim] */
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
    uint16_t *bf;            /* bf16 staging */
    int64_t bf_cap;
    zaya_infer_seg *seg;     /* [S] */
    const float **kp, **vp;  /* [S] */
    int64_t *apos, *arows;   /* [S] */
    int64_t kv_bytes, state_bytes, total_bytes;
};

void zaya_infer_lin(zaya_infer *e, float *y, const float *x, const float *W, int64_t n, int64_t in, int64_t out);
void zaya_infer_cca(zaya_infer *e, int l, int64_t N, int64_t nseg);
void zaya_infer_moe(zaya_infer *e, int l, int64_t N);

#endif

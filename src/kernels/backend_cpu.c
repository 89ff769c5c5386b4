/* The CPU reference compute backend (zaya/backend.h): every operation is the CPU kernel it is named
 * after (kernels.h, attention.h, matmul.h, model_ops.h) on host memory, run at once on the calling
 * thread's OpenMP pool. It is what the other backends are checked against (tests/backend_check.c),
 * and it lets the device engine run in a CPU-only build.
 *
 * Memory is host memory (zaya_malloc, zero-filled); upload / download / copy are memcpy and every
 * operation is finished when it returns, so sync() only reports the first pending error (the only
 * operations that can fail at run time are the GEMMs, whose oneDNN status is kept). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/attention.h"
#include "zaya/backend.h"
#include "zaya/bf16.h"
#include "zaya/kernels.h"
#include "zaya/matmul.h"
#include "zaya/model_ops.h"
#include "zaya/status.h"

/* Elementwise operations run in blocks of this many elements, one block per OpenMP iteration: each
 * element goes through the same operations wherever the block boundaries fall, so the results equal
 * the serial loop bit for bit. Below two blocks the loop stays on the calling thread. */
#define BLOCK 16384

/* Expert GEMMs run as src/model/linear.c runs them, so that the engine over this backend gives the CPU
 * model's bits: the token dimension left to run time (M of a forward or input-gradient product, K of a
 * weight-gradient one), and a call of fewer than DYN_MIN_ROWS (= ZAYA_EXPERT_MIN_ROWS) rows on a copy
 * padded with zero rows (oneDNN's run-time-shape kernels switch code below 16 rows). */
#define DYN_MIN_ROWS 16

typedef struct cpu_be {
    void *scratch; /* reserve()d: padded expert operands, the grouped convolution's GEMM workspace */
    size_t scratch_bytes;
    zaya_status err; /* first failure since the last sync / download */
    char errmsg[512];
} cpu_be;

static cpu_be *ctx_of(zaya_backend *be) { return (cpu_be *)be->ctx; }

static void fail(zaya_backend *be, const char *op) {
    cpu_be *c = ctx_of(be);
    if (c->err != ZAYA_OK) return;
    c->err = ZAYA_EBACKEND;
    snprintf(c->errmsg, sizeof c->errmsg, "cpu backend: %s: %s", op, zaya_error_message());
}

/* The pending error, as a status with its message; clears it. */
static zaya_status take_error(zaya_backend *be) {
    cpu_be *c = ctx_of(be);
    if (c->err == ZAYA_OK) return ZAYA_OK;
    zaya_status s = c->err;
    c->err = ZAYA_OK;
    return zaya_error_set(s, "%s", c->errmsg);
}

/* ---- memory ---- */
static zaya_status cpu_alloc(zaya_backend *be, void **p, size_t bytes) {
    (void)be;
    *p = NULL;
    if (bytes == 0) return ZAYA_OK;
    *p = zaya_malloc(bytes);
    if (!*p) return zaya_error_set(ZAYA_ENOMEM, "cpu backend: cannot allocate %zu bytes", bytes);
    memset(*p, 0, bytes);
    return ZAYA_OK;
}
static void cpu_free(zaya_backend *be, void *p) {
    (void)be;
    zaya_free(p);
}
static zaya_status cpu_upload(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memcpy(dst, src, bytes);
    return ZAYA_OK;
}
static zaya_status cpu_download(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    if (bytes) memcpy(dst, src, bytes);
    return take_error(be);
}
static zaya_status cpu_copy(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    (void)be;
    if (bytes) memmove(dst, src, bytes);
    return ZAYA_OK;
}
static zaya_status cpu_zero(zaya_backend *be, void *p, size_t bytes) {
    (void)be;
    if (bytes) memset(p, 0, bytes);
    return ZAYA_OK;
}
static zaya_status cpu_sync(zaya_backend *be) { return take_error(be); }
static zaya_status cpu_reserve(zaya_backend *be, size_t bytes) {
    cpu_be *c = ctx_of(be);
    if (bytes <= c->scratch_bytes) return ZAYA_OK;
    void *p = zaya_malloc(bytes);
    if (!p) return zaya_error_set(ZAYA_ENOMEM, "cpu backend: cannot reserve %zu bytes of scratch", bytes);
    memset(p, 0, bytes);
    zaya_free(c->scratch);
    c->scratch = p;
    c->scratch_bytes = bytes;
    return ZAYA_OK;
}
static void cpu_destroy(zaya_backend *be) {
    cpu_be *c = ctx_of(be);
    if (c) zaya_free(c->scratch);
    free(c);
    free(be);
}

/* ---- GEMM ---- */
/* C = beta * C when there is nothing to multiply (oneDNN rejects empty dimensions). */
static void scale_c(float *c, int64_t count, float beta) {
    if (beta == 0.0f && count > 0) memset(c, 0, (size_t)count * sizeof(float));
}

/* zaya_matmul_dynamic's descriptor, with its status kept instead of asserted. */
static void cpu_gemm(zaya_backend *be, zaya_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *a,
                     const void *b, float *c, float beta, int vary_m) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {
        scale_c(c, M * N, beta);
        return;
    }
    if (vary_m && !ta && M < DYN_MIN_ROWS) { /* A's rows and C's through zero-padded copies in the scratch */
        cpu_be *cx = ctx_of(be);
        const size_t es = dt == ZAYA_DTYPE_BF16 ? 2 : 4, abytes = (size_t)(DYN_MIN_ROWS * K) * es;
        const size_t need = abytes + (size_t)(DYN_MIN_ROWS * N) * sizeof(float) + 64;
        if (cx->scratch_bytes < need) {
            zaya_error_set(ZAYA_EINVAL, "a padded expert product needs %zu bytes of scratch, %zu reserved", need,
                           cx->scratch_bytes);
            fail(be, "gemm");
            return;
        }
        char *pa = cx->scratch;
        float *pc = (float *)(pa + (abytes + 63) / 64 * 64);
        memcpy(pa, a, (size_t)(M * K) * es);
        memset(pa + (size_t)(M * K) * es, 0, (size_t)((DYN_MIN_ROWS - M) * K) * es);
        if (beta != 0.0f) memcpy(pc, c, (size_t)(M * N) * sizeof(float));
        zaya_matmul_desc d = {.dtype = dt, .trans_a = 0, .trans_b = tb, .m = DYN_MIN_ROWS, .n = N, .k = K, .beta = beta,
                              .dynamic = ZAYA_MATMUL_DYN_M};
        if (zaya_matmul(&d, pa, b, pc) != ZAYA_OK) fail(be, "gemm");
        else memcpy(c, pc, (size_t)(M * N) * sizeof(float));
        return;
    }
    zaya_matmul_desc d = {.dtype = dt, .trans_a = ta, .trans_b = tb, .m = M, .n = N, .k = K, .beta = beta,
                          .dynamic = !vary_m ? 0 : ta ? ZAYA_MATMUL_DYN_K : ZAYA_MATMUL_DYN_M};
    if (zaya_matmul(&d, a, b, c) != ZAYA_OK) fail(be, "gemm");
}

/* zaya_matmul_batched's descriptor with the caller's strides (the dense ones are its defaults).
 * alpha 0 would read as 1 in a descriptor: C = beta C is done here. */
static void cpu_gemm_batched(zaya_backend *be, zaya_dtype dt, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                             int64_t K, const void *a, int64_t sa, const void *b, int64_t sb, float *c, int64_t sc,
                             float alpha, float beta) {
    if (batch <= 0 || M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.0f) {
        for (int64_t i = 0; i < batch; i++) scale_c(c + i * sc, M * N, beta);
        return;
    }
    zaya_matmul_desc d = {.dtype = dt, .trans_a = ta, .trans_b = tb, .m = M, .n = N, .k = K, .batch = batch,
                          .stride_a = sa, .stride_b = sb, .stride_c = sc, .alpha = alpha, .beta = beta};
    if (zaya_matmul(&d, a, b, c) != ZAYA_OK) fail(be, "gemm_batched");
}

static void cpu_to_bf16(zaya_backend *be, uint16_t *dst, const float *src, int64_t n) {
    (void)be;
    if (n > 0) zaya_f32_to_bf16_n(dst, src, (size_t)n);
}

/* ---- norms, activations, elementwise ---- */
static void cpu_rmsnorm_forward(zaya_backend *be, float *y, float *rstd, const float *x, const float *w, int64_t n,
                                int64_t d, float eps) {
    (void)be;
    zaya_rmsnorm_forward(y, rstd, x, w, n, d, eps);
}
static void cpu_rmsnorm_backward(zaya_backend *be, float *dx, float *dw, const float *dy, const float *x,
                                 const float *w, const float *rstd, int64_t n, int64_t d) {
    (void)be;
    zaya_rmsnorm_backward(dx, dw, dy, x, w, rstd, n, d);
}
static void cpu_gelu_forward(zaya_backend *be, float *y, const float *x, int64_t n) {
    (void)be;
    zaya_gelu_forward(y, x, n);
}
static void cpu_gelu_backward(zaya_backend *be, float *dx, const float *dy, const float *x, int64_t n) {
    (void)be;
    zaya_gelu_backward(dx, dy, x, n);
}
static void cpu_swiglu_forward(zaya_backend *be, float *y, const float *gu, int64_t n, int64_t d) {
    (void)be;
    zaya_swiglu_forward(y, gu, n, d);
}
static void cpu_swiglu_backward(zaya_backend *be, float *dgu, const float *dy, const float *gu, int64_t n, int64_t d) {
    (void)be;
    zaya_swiglu_backward(dgu, dy, gu, n, d);
}
static void cpu_softmax_forward(zaya_backend *be, float *y, const float *x, int64_t n, int64_t d) {
    (void)be;
    zaya_softmax_forward(y, x, n, d);
}
static void cpu_softmax_ld_forward(zaya_backend *be, float *y, int64_t ldy, const float *x, int64_t n, int64_t d) {
    (void)be;
#pragma omp parallel for schedule(static) if (n * d > 32768)
    for (int64_t i = 0; i < n; i++) {
        zaya_softmax_forward(y + i * ldy, x + i * d, 1, d);
        for (int64_t j = d; j < ldy; j++) y[i * ldy + j] = 0.0f;
    }
}
static void cpu_add(zaya_backend *be, float *y, const float *x, int64_t n) {
    (void)be;
#pragma omp parallel for schedule(static) if (n >= 2 * BLOCK)
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}
static void cpu_scale(zaya_backend *be, float *x, float s, int64_t n) {
    (void)be;
#pragma omp parallel for schedule(static) if (n >= 2 * BLOCK)
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}
static void cpu_add_bias(zaya_backend *be, float *y, const float *b, int64_t n, int64_t d) {
    (void)be;
    zaya_bias_add(y, b, n, d);
}
static void cpu_colsum_add(zaya_backend *be, float *dst, const float *src, int64_t n, int64_t d) {
    (void)be;
    zaya_colsum_add(dst, src, n, d);
}
static void cpu_merge_forward(zaya_backend *be, float *y, const float *a, const float *ab, const float *as,
                              const float *b, const float *bb, const float *bs, int64_t n, int64_t d) {
    (void)be;
    zaya_merge_forward(y, a, ab, as, b, bb, bs, n, d);
}
static void cpu_merge_backward(zaya_backend *be, float *da, float *db, int accumulate_b, const float *dy,
                               const float *a, const float *ab, const float *as, const float *b, const float *bb,
                               const float *bs, float *dab, float *das, float *dbb, float *dbs, int64_t n, int64_t d) {
    (void)be;
    zaya_merge_backward(da, db, accumulate_b, dy, a, ab, as, b, bb, bs, dab, das, dbb, dbs, n, d);
}

/* ---- embedding ---- */
static void cpu_embed_forward(zaya_backend *be, float *x, const float *table, const int32_t *ids, const float *bias,
                              const float *scale, int64_t n, int64_t d) {
    (void)be;
    zaya_embed_forward(x, table, ids, bias, scale, n, d);
}
/* sorted / seg are not needed here: zaya_embedding_backward walks the tokens in order for every
 * column slice, so each row of dtable receives its tokens' rows in token order, which is the order
 * of the sorted lists (token order within an id). The ids are int32, hence below 2^31. */
static void cpu_embed_backward(zaya_backend *be, float *dtable, float *dbias, float *dscale, float *de,
                               const float *dx, const float *table, const int32_t *ids, const float *bias,
                               const float *scale, const int32_t *sorted, const int32_t *seg, int64_t nseg, int64_t n,
                               int64_t d) {
    (void)be;
    (void)sorted;
    (void)seg;
    (void)nseg;
    zaya_embed_backward(dtable, dbias, dscale, de, dx, table, ids, bias, scale, n, d, (int64_t)INT32_MAX + 1);
}

/* ---- CCA pieces ---- */
static void cpu_conv_dw_forward(zaya_backend *be, float *y, const float *x, const float *w, const float *bias,
                                int64_t B, int64_t t_in, int64_t C, int64_t k, int64_t pad) {
    (void)be;
    zaya_conv1d_depthwise_forward(y, x, w, bias, B, t_in, C, k, pad);
}
static void cpu_conv_dw_backward(zaya_backend *be, float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                 const float *w, int64_t B, int64_t t_in, int64_t C, int64_t k, int64_t pad) {
    (void)be;
    zaya_conv1d_depthwise_backward(dx, dw, dbias, dy, x, w, B, t_in, C, k, pad);
}
/* The grouped convolution on its GEMM workspace when the scratch holds it (as the CPU model plans it),
 * else the tiled kernels: the same results to rounding. */
static float *conv_ws(zaya_backend *be, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad) {
    const cpu_be *c = ctx_of(be);
    const int64_t need = zaya_conv1d_grouped_ws_floats(B, t_in, C, groups, k, pad);
    return c->scratch && (size_t)need * sizeof(float) <= c->scratch_bytes ? c->scratch : NULL;
}
/* bf16 products need the workspace: without it the call is refused (the error names the scratch). */
static int conv_bf16_ok(zaya_backend *be, const char *op, zaya_dtype dt, const float *ws) {
    if (ws || dt == ZAYA_DTYPE_F32) return 1;
    zaya_error_set(ZAYA_EINVAL, "bf16 needs the grouped convolution's workspace in the reserved scratch");
    fail(be, op);
    return 0;
}
static void cpu_conv_grouped_forward(zaya_backend *be, zaya_dtype dtype, float *y, const float *x, const float *w,
                                     const float *bias, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                     int64_t pad) {
    float *ws = conv_ws(be, B, t_in, C, groups, k, pad);
    if (!conv_bf16_ok(be, "conv_grouped_forward", dtype, ws)) return;
    zaya_conv1d_grouped_forward_dt(dtype, y, x, w, bias, B, t_in, C, groups, k, pad, ws);
}
static void cpu_conv_grouped_backward(zaya_backend *be, zaya_dtype dtype, float *dx, float *dw, float *dbias,
                                      const float *dy, const float *x, const float *w, int64_t B, int64_t t_in,
                                      int64_t C, int64_t groups, int64_t k, int64_t pad) {
    float *ws = conv_ws(be, B, t_in, C, groups, k, pad);
    if (!conv_bf16_ok(be, "conv_grouped_backward", dtype, ws)) return;
    zaya_conv1d_grouped_backward_dt(dtype, dx, dw, dbias, dy, x, w, B, t_in, C, groups, k, pad, ws);
}
static void cpu_qk_mean_skip_forward(zaya_backend *be, float *qk_raw, const float *qk_pre, int64_t N, int64_t Hq,
                                     int64_t Hkv, int64_t hd) {
    (void)be;
    zaya_qk_mean_skip_forward(qk_raw, qk_pre, N, Hq, Hkv, hd);
}
static void cpu_qk_mean_skip_backward(zaya_backend *be, float *dpre, const float *g, int64_t N, int64_t Hq,
                                      int64_t Hkv, int64_t hd) {
    (void)be;
    zaya_qk_mean_skip_backward(dpre, g, N, Hq, Hkv, hd);
}
static void cpu_value_shift_forward(zaya_backend *be, float *v, const float *vv, int64_t B, int64_t T, int64_t kvd) {
    (void)be;
    zaya_value_shift_forward(v, vv, B, T, kvd);
}
static void cpu_value_shift_backward(zaya_backend *be, float *dvv, const float *dv, int64_t B, int64_t T,
                                     int64_t kvd) {
    (void)be;
    zaya_value_shift_backward(dvv, dv, B, T, kvd);
}
static void cpu_l2norm_forward(zaya_backend *be, float *y, float *inv_norm, const float *x, const float *mult,
                               float scale, int64_t n, int64_t heads, int64_t hd, float eps) {
    (void)be;
    zaya_l2norm_forward(y, inv_norm, x, mult, scale, n, heads, hd, eps);
}
static void cpu_l2norm_backward(zaya_backend *be, float *dx, float *dmult, const float *dy, const float *x,
                                const float *inv_norm, const float *mult, float scale, int64_t n, int64_t heads,
                                int64_t hd) {
    (void)be;
    zaya_l2norm_backward(dx, dmult, dy, x, inv_norm, mult, scale, n, heads, hd);
}

/* A zaya_rope_table over the caller's cos / sin. The kernels (src/kernels/rope.c) read only rot_dims,
 * cos and sin, and max_pos in the bounds assertion p < max_pos: every int32 position passes it (the
 * caller sized the arrays), and theta is used only by zaya_rope_table_init. The kernels never write
 * the arrays (the casts drop const for the struct's field types only). */
static zaya_rope_table rope_view(const float *cos, const float *sin, int64_t rot_dims) {
    zaya_rope_table t = {.max_pos = (int64_t)INT32_MAX + 1, .rot_dims = rot_dims, .theta = 0.0,
                         .cos = (float *)(uintptr_t)cos, .sin = (float *)(uintptr_t)sin};
    return t;
}
static void cpu_rope_forward(zaya_backend *be, float *x, const float *cos, const float *sin, int64_t rot_dims,
                             const int32_t *pos, int64_t n, int64_t heads, int64_t hd) {
    (void)be;
    zaya_rope_table t = rope_view(cos, sin, rot_dims);
    zaya_rope_forward(x, &t, pos, n, heads, hd);
}
static void cpu_rope_backward(zaya_backend *be, float *dx, const float *cos, const float *sin, int64_t rot_dims,
                              const int32_t *pos, int64_t n, int64_t heads, int64_t hd) {
    (void)be;
    zaya_rope_table t = rope_view(cos, sin, rot_dims);
    zaya_rope_backward(dx, &t, pos, n, heads, hd);
}
static void cpu_split_qk(zaya_backend *be, float *q, float *k, const float *qk, int64_t N, int64_t qd, int64_t kvd) {
    (void)be;
    zaya_qk_split(q, k, qk, N, qd, kvd);
}
static void cpu_merge_qk(zaya_backend *be, float *qk, const float *q, const float *k, int64_t N, int64_t qd,
                         int64_t kvd) {
    (void)be;
    zaya_qk_merge(qk, q, k, N, qd, kvd);
}
static void cpu_attention_forward(zaya_backend *be, zaya_dtype dtype, float *out, float *lse, const float *q,
                                  const float *k, const float *v, int64_t B, int64_t T, int64_t Hq, int64_t Hkv,
                                  int64_t D, float scale) {
    (void)be;
    zaya_attention_forward_dtype(dtype, out, lse, q, k, v, B, T, T, 0, Hq, Hkv, D, scale);
}
static void cpu_attention_backward(zaya_backend *be, zaya_dtype dtype, float *dq, float *dk, float *dv,
                                   const float *dout, const float *q, const float *k, const float *v, const float *out,
                                   const float *lse, int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t D,
                                   float scale) {
    (void)be;
    zaya_attention_backward_dtype(dtype, dq, dk, dv, dout, q, k, v, out, lse, B, T, T, 0, Hq, Hkv, D, scale);
}

/* ---- router and experts ---- */
static void cpu_eda_forward(zaya_backend *be, float *r, const float *g, const float *r_prev, int64_t n, int64_t R) {
    (void)be;
    zaya_eda_forward(r, g, r_prev, n, R);
}
static void cpu_eda_backward(zaya_backend *be, float *prod, float *dr_prev, const float *dr, const float *r_prev,
                             const float *g, int64_t n, int64_t R) {
    (void)be;
    zaya_eda_backward(prod, dr_prev, dr, r_prev, g, n, R);
}
static void cpu_top1(zaya_backend *be, int32_t *idx, float *gate, const float *probs, int64_t ld, const float *bias,
                     int64_t n, int64_t e) {
    (void)be;
    zaya_top1_biased_ld(idx, gate, probs, ld, bias, n, e);
}
static void cpu_top1_count(zaya_backend *be, int64_t *counts, const float *probs, int64_t ld, const float *bias,
                           int64_t n, int64_t e) {
    (void)be;
    zaya_top1_biased_count_ld(counts, probs, ld, bias, n, e);
}
static void cpu_route_stats(zaya_backend *be, double *psum, double *spread, const float *probs, int64_t ld, int64_t n,
                            int64_t E) {
    (void)be;
    zaya_route_stats(psum, spread, probs, ld, n, E);
}
static void cpu_router_dlogits(zaya_backend *be, float *dl, const float *probs, int64_t ld, const float *dgate,
                               const int32_t *idx, int64_t n, int64_t ncols) {
    (void)be;
    zaya_router_dlogits(dl, probs, ld, dgate, idx, n, ncols);
}
static void cpu_gather_rows(zaya_backend *be, float *dst, const float *src, const int32_t *perm, int64_t n,
                            int64_t d) {
    (void)be;
    zaya_rows_gather(dst, src, perm, n, d);
}
static void cpu_moe_combine_forward(zaya_backend *be, float *m, const float *ye, const float *z, const int32_t *idx,
                                    const float *gate, const int32_t *row_of, int64_t n, int64_t d, int64_t E,
                                    int identity) {
    (void)be;
    zaya_moe_combine_forward(m, ye, z, idx, gate, row_of, n, d, E, identity);
}
static void cpu_moe_combine_backward(zaya_backend *be, float *dye, float *dz, float *dgate, const float *dm,
                                     const float *ye, const float *z, const int32_t *idx, const float *gate,
                                     const int32_t *row_of, int64_t n, int64_t d, int64_t E, int identity) {
    (void)be;
    zaya_moe_combine_backward(dye, dz, dgate, dm, ye, z, idx, gate, row_of, n, d, E, identity);
}
static void cpu_scatter_rows(zaya_backend *be, float *dz, const float *dxe, const int32_t *idx, const int32_t *row_of,
                             int64_t n, int64_t d, int64_t E) {
    (void)be;
    zaya_rows_scatter(dz, dxe, idx, row_of, n, d, E);
}

/* ---- loss ---- */
static void cpu_xent(zaya_backend *be, float *logits, float *losses, const int32_t *targets, int64_t n, int64_t V,
                     float grad_scale) {
    (void)be;
    (void)zaya_xent_forward_backward(logits, losses, targets, n, V, grad_scale);
}

/* ---- optimizer ---- */
static void cpu_adamw(zaya_backend *be, float *p, const float *g, float *m, float *v, int64_t n, float gs, float w1,
                      float b2, float w2, float neg_step, float bc2_sqrt, float eps, float decay) {
    (void)be;
    const int64_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (nb > 1)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t o = b * BLOCK, len = n - o < BLOCK ? n - o : BLOCK;
        zaya_adamw_update(p + o, g + o, m + o, v + o, len, gs, w1, b2, w2, neg_step, bc2_sqrt, eps, decay);
    }
}
/* w is muon.c's (float)(1.0 - momentum), rounded from the config's double by the caller. */
static void cpu_muon_momentum(zaya_backend *be, float *u, float *buf, const float *g, int64_t n, float gs, float beta,
                              float w, int nesterov) {
    (void)be;
    const int64_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (nb > 1)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t o = b * BLOCK, len = n - o < BLOCK ? n - o : BLOCK;
        zaya_muon_momentum(u + o, buf + o, g + o, len, gs, beta, w, nesterov);
    }
}
static void cpu_sqnorm(zaya_backend *be, double *out, const float *x, int64_t n) {
    (void)be;
    out[0] = zaya_sumsq_f64(x, n);
}
/* muon.c's newton_schulz: denom = (float)(sqrt(sumsq) + eps) per matrix in double, then x / denom (as
 * prep_x divides on the first iteration). */
static void cpu_normalize_batched(zaya_backend *be, float *x, int64_t batch, int64_t mn, double eps) {
    (void)be;
#pragma omp parallel for schedule(static) if (batch > 1 && batch * mn >= 2 * BLOCK)
    for (int64_t j = 0; j < batch; j++) {
        float *xj = x + j * mn;
        const float denom = (float)(sqrt(zaya_sumsq_f64(xj, mn)) + eps);
        for (int64_t i = 0; i < mn; i++) xj[i] = xj[i] / denom;
    }
}
static void cpu_lincomb(zaya_backend *be, float *y, float a, const float *x, float b, const float *z, int64_t n) {
    (void)be;
#pragma omp parallel for schedule(static) if (n >= 2 * BLOCK)
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i] + b * z[i];
}
/* 32 x 32 tiles: both the reads and the writes stay within a few cache lines per tile row. */
static void cpu_transpose(zaya_backend *be, float *dst, const float *src, int64_t rows, int64_t cols) {
    (void)be;
    const int64_t TB = 32, rb = (rows + TB - 1) / TB, cb = (cols + TB - 1) / TB;
#pragma omp parallel for schedule(static) if (rows * cols >= 2 * BLOCK)
    for (int64_t t = 0; t < rb * cb; t++) {
        const int64_t r0 = (t / cb) * TB, c0 = (t % cb) * TB;
        const int64_t r1 = r0 + TB < rows ? r0 + TB : rows, c1 = c0 + TB < cols ? c0 + TB : cols;
        for (int64_t c = c0; c < c1; c++)
            for (int64_t r = r0; r < r1; r++) dst[c * rows + r] = src[r * cols + c];
    }
}
static void cpu_muon_apply(zaya_backend *be, float *p, const float *x, int64_t n, float decay, float neg) {
    (void)be;
    const int64_t nb = (n + BLOCK - 1) / BLOCK;
#pragma omp parallel for schedule(static) if (nb > 1)
    for (int64_t b = 0; b < nb; b++) {
        const int64_t o = b * BLOCK, len = n - o < BLOCK ? n - o : BLOCK;
        zaya_muon_apply(p + o, x + o, len, decay, neg);
    }
}

zaya_status zaya_backend_cpu_init(zaya_backend **out) {
    *out = NULL;
    zaya_backend *be = calloc(1, sizeof *be);
    cpu_be *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return zaya_error_set(ZAYA_ENOMEM, "cpu backend: cannot allocate its state");
    }
    snprintf(be->name, sizeof be->name, "cpu");
    be->is_host = 1;
    be->version = ZAYA_BACKEND_VERSION;
    be->ctx = c;
    be->alloc = cpu_alloc;
    be->free = cpu_free;
    be->upload = cpu_upload;
    be->download = cpu_download;
    be->copy = cpu_copy;
    be->zero = cpu_zero;
    be->sync = cpu_sync;
    be->reserve = cpu_reserve;
    be->destroy = cpu_destroy;
#define CPU_SLOT(name, params) be->name = cpu_##name;
    ZAYA_BACKEND_OPS(CPU_SLOT)
#undef CPU_SLOT
    *out = be;
    return ZAYA_OK;
}

void zaya_backend_free(zaya_backend *be) {
    if (be) be->destroy(be);
}

const char *zaya_backend_op_name(zaya_backend_op op) {
    static const char *const names[] = {
#define OP_NAME(name, params) #name,
        ZAYA_BACKEND_OPS(OP_NAME)
#undef OP_NAME
    };
    return (int)op >= 0 && op < ZAYA_BACKEND_NOPS ? names[op] : NULL;
}

int zaya_backend_supports(const zaya_backend *be, zaya_backend_op op) {
    if (!be) return 0;
    switch (op) {
#define OP_FILLED(name, params) \
    case ZAYA_OP_##name: return be->name != NULL;
        ZAYA_BACKEND_OPS(OP_FILLED)
#undef OP_FILLED
    default: return 0;
    }
}

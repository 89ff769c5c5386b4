/* Compute backends: the operations one training step of the ZAYA1 model and its optimizer is made of,
 * over memory a backend owns (ggml-style: one interface, one implementation per folder).
 *
 *   CPU  (src/kernels/backend_cpu.c, zaya_backend_cpu_init): the CPU kernels of kernels.h,
 *        attention.h and matmul.h on host memory. It is the reference every other backend is
 *        tested against, and it lets the device engine (src/engine) run in a CPU-only build.
 *   CUDA (src/gpu/be_*.cu, zaya_gpu_backend_init in gpu.h): the same operations as CUDA kernels and
 *        cuBLASLt GEMMs on one device and one stream; a build without CUDA answers "built without
 *        CUDA".
 *
 * Semantics. Every operation computes exactly what the CPU function it is named after computes (the
 * comment names it); tensors are row-major and contiguous, pointers are the backend's memory (device
 * pointers for CUDA), counts are elements unless a name says bytes. Backward operations WRITE input
 * gradients and ACCUMULATE (+=) parameter gradients, as in kernels.h. Outputs never alias inputs
 * unless "in place" is said.
 *
 * Ordering and errors. Operations run in call order on one stream and may be asynchronous: their
 * results are visible to later operations and to download(). Operations return nothing; the first
 * failure (a launch error, a device fault) is kept and returned by the next sync() or download(), with
 * a message naming the operation. Memory calls (alloc, upload, ...) return their own status.
 *
 * Determinism. Every reduction (column sums, parameter gradients, norms, scatter-adds) runs in an
 * order fixed by the shapes alone, so the same inputs give the same bits run to run. No backend
 * allocates in an operation: scratch is sized by reserve() at plan time. */
#ifndef ZAYA_BACKEND_H
#define ZAYA_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/dtype.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_backend zaya_backend;

/* The table's version: raised whenever an operation is added, removed or changes its parameters, so
 * that a backend built against another list is refused (zaya_engine_init) instead of misread. */
#define ZAYA_BACKEND_VERSION 2

/* The operations, declared once: X(name, (parameters)). This list generates the table's slots below,
 * the operation ids (zaya_backend_op, ZAYA_OP_<name>), their names (zaya_backend_op_name), the CPU
 * backend's table (src/kernels/backend_cpu.c: slot <name> is cpu_<name>) and the backend check's
 * coverage (tests/backend_check.c: every operation has a check). Every operation returns nothing
 * (errors: see "Ordering and errors" above). */
#define ZAYA_BACKEND_OPS(X)                                                                                  \
    /* ---- GEMM ---- C[M,N] = op(A) op(B) (+ C when beta == 1; beta is 0 or 1), row-major, lda etc. the              \
     * natural ones: A is [M,K] ([K,M] with ta), B is [K,N] ([N,K] with tb). dt F32: float operands,                  \
     * f32 math (no TF32); dt BF16: uint16_t bf16 operands, f32 accumulation and output. vary_m: the token            \
     * dimension changes from call to call (an expert's rows): M of a forward or input-gradient product,              \
     * K of a weight-gradient product (ta). The CPU backend then runs src/model/linear.c's expert path                \
     * (run-time-shape primitives, calls below 16 rows on zero-padded copies in its reserve()d scratch:               \
     * 16 x (K + N) floats), so that the engine reproduces the CPU model's bits. */                                   \
    X(gemm, (zaya_backend *be, zaya_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *a,         \
        const void *b, float *c, float beta, int vary_m))                                                             \
    /* `batch` GEMMs of the same shape, operand i at a + i*sa etc. (strides in elements):                             \
     * C_i = alpha op(A_i) op(B_i) + beta C_i (beta 0 or 1; zaya_matmul_batched) */                                   \
    X(gemm_batched, (zaya_backend *be, zaya_dtype dt, int ta, int tb, int64_t batch, int64_t M, int64_t N,            \
        int64_t K, const void *a, int64_t sa, const void *b, int64_t sb, float *c, int64_t sc, float alpha,           \
        float beta))                                                                                                  \
    /* dst[i] = bf16(src[i]) round-to-nearest-even (zaya_f32_to_bf16_n) */                                            \
    X(to_bf16, (zaya_backend *be, uint16_t *dst, const float *src, int64_t n))                                        \
                                                                                                                      \
    /* ---- norms, activations, elementwise (kernels.h) ---- */                                                       \
    X(rmsnorm_forward, (zaya_backend *be, float *y, float *rstd, const float *x, const float *w, int64_t n,           \
        int64_t d, float eps))                                                                                        \
    X(rmsnorm_backward, (zaya_backend *be, float *dx, float *dw, const float *dy, const float *x, const float *w,     \
        const float *rstd, int64_t n, int64_t d))                                                                     \
    X(gelu_forward, (zaya_backend *be, float *y, const float *x, int64_t n))                                          \
    X(gelu_backward, (zaya_backend *be, float *dx, const float *dy, const float *x, int64_t n))                       \
    X(swiglu_forward, (zaya_backend *be, float *y, const float *gu, int64_t n, int64_t d))                            \
    X(swiglu_backward, (zaya_backend *be, float *dgu, const float *dy, const float *gu, int64_t n, int64_t d))        \
    X(softmax_forward, (zaya_backend *be, float *y, const float *x, int64_t n, int64_t d))                            \
    /* y[i, :d] = softmax(x[i, :d]) (zaya_softmax_forward row by row) with the rows of y ldy >= d apart and           \
     * y[i, d:ldy] = 0: the linear router's scores over E experts in [n, E + 1] rows, the skip class 0 */             \
    X(softmax_ld_forward, (zaya_backend *be, float *y, int64_t ldy, const float *x, int64_t n, int64_t d))            \
    X(add, (zaya_backend *be, float *y, const float *x, int64_t n)) /* y += x */                                      \
    X(scale, (zaya_backend *be, float *x, float s, int64_t n)) /* x *= s, in place */                                 \
    X(add_bias, (zaya_backend *be, float *y, const float *b, int64_t n, int64_t d)) /* y[i,:] += b */                 \
    /* dst[j] += sum_i src[i, j], rows in order (zaya_ops_colsum_add) */                                              \
    X(colsum_add, (zaya_backend *be, float *dst, const float *src, int64_t n, int64_t d))                             \
    /* y = (a + ab) * as + (b + bb) * bs; as == NULL: y = a + b (zaya_ops_merge_forward) */                           \
    X(merge_forward, (zaya_backend *be, float *y, const float *a, const float *ab, const float *as,                   \
        const float *b, const float *bb, const float *bs, int64_t n, int64_t d))                                      \
    /* zaya_ops_merge_backward */                                                                                     \
    X(merge_backward, (zaya_backend *be, float *da, float *db, int accumulate_b, const float *dy, const float *a,     \
        const float *ab, const float *as, const float *b, const float *bb, const float *bs, float *dab,               \
        float *das, float *dbb, float *dbs, int64_t n, int64_t d))                                                    \
                                                                                                                      \
    /* ---- embedding with the input affine x = (table[ids] + bias) * scale ---- */                                   \
    X(embed_forward, (zaya_backend *be, float *x, const float *table, const int32_t *ids, const float *bias,          \
        const float *scale, int64_t n, int64_t d))                                                                    \
    /* From dx [n, d]: de = dx * scale (written to de [n, d]), dbias += colsum(de), dscale += colsum(dx *             \
     * (table[ids] + bias)), then dtable[ids[i]] += de[i] for every i. The scatter-add is deterministic:              \
     * sorted [n] lists the token indices grouped by id (ascending id, token order within an id), and                 \
     * seg [nseg + 1] the start of each id's run in it (the caller builds both from the host's ids). */               \
    X(embed_backward, (zaya_backend *be, float *dtable, float *dbias, float *dscale, float *de, const float *dx,      \
        const float *table, const int32_t *ids, const float *bias, const float *scale, const int32_t *sorted,         \
        const int32_t *seg, int64_t nseg, int64_t n, int64_t d))                                                      \
                                                                                                                      \
    /* ---- CCA pieces (zaya_cca_*, src/model/cca.c) ---- */                                                          \
    /* conv1d (kernels.h): depthwise w [C, k]; grouped w [C, C/groups, k] */                                          \
    X(conv_dw_forward, (zaya_backend *be, float *y, const float *x, const float *w, const float *bias, int64_t B,     \
        int64_t t_in, int64_t C, int64_t k, int64_t pad))                                                             \
    X(conv_dw_backward, (zaya_backend *be, float *dx, float *dw, float *dbias, const float *dy, const float *x,       \
        const float *w, int64_t B, int64_t t_in, int64_t C, int64_t k, int64_t pad))                                  \
    /* (kernels.h: zaya_conv1d_grouped_forward_dt / _backward_dt; bf16: the products take bf16-rounded                \
     * operands) */                                                                                                   \
    X(conv_grouped_forward, (zaya_backend *be, zaya_dtype dtype, float *y, const float *x, const float *w,            \
        const float *bias, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad))               \
    X(conv_grouped_backward, (zaya_backend *be, zaya_dtype dtype, float *dx, float *dw, float *dbias,                 \
        const float *dy, const float *x, const float *w, int64_t B, int64_t t_in, int64_t C, int64_t groups,          \
        int64_t k, int64_t pad))                                                                                      \
    /* qk rows [N, (Hq + Hkv) * hd]: qk_raw += skip terms of qk_pre (zaya_cca_qk_mean_skip_forward); the              \
     * backward adds the terms' gradient given g = d(qk_raw) into dpre (+=) */                                        \
    X(qk_mean_skip_forward, (zaya_backend *be, float *qk_raw, const float *qk_pre, int64_t N, int64_t Hq,             \
        int64_t Hkv, int64_t hd))                                                                                     \
    X(qk_mean_skip_backward, (zaya_backend *be, float *dpre, const float *g, int64_t N, int64_t Hq, int64_t Hkv,      \
        int64_t hd))                                                                                                  \
    /* v[n] = [vv[n, :h] | vv[n-1, h:]] (zero at each sequence start), h = kvd / 2; backward the transpose */         \
    X(value_shift_forward, (zaya_backend *be, float *v, const float *vv, int64_t B, int64_t T, int64_t kvd))          \
    X(value_shift_backward, (zaya_backend *be, float *dvv, const float *dv, int64_t B, int64_t T, int64_t kvd))       \
    /* zaya_l2norm_forward / _backward (mult [heads] may not be NULL here; dmult +=) */                               \
    X(l2norm_forward, (zaya_backend *be, float *y, float *inv_norm, const float *x, const float *mult,                \
        float scale, int64_t n, int64_t heads, int64_t hd, float eps))                                                \
    X(l2norm_backward, (zaya_backend *be, float *dx, float *dmult, const float *dy, const float *x,                   \
        const float *inv_norm, const float *mult, float scale, int64_t n, int64_t heads, int64_t hd))                 \
    /* zaya_rope_forward / _backward in place, with the table's cos, sin [max_pos, rot_dims / 2] in the               \
     * backend's memory */                                                                                            \
    X(rope_forward, (zaya_backend *be, float *x, const float *cos, const float *sin, int64_t rot_dims,                \
        const int32_t *pos, int64_t n, int64_t heads, int64_t hd))                                                    \
    X(rope_backward, (zaya_backend *be, float *dx, const float *cos, const float *sin, int64_t rot_dims,              \
        const int32_t *pos, int64_t n, int64_t heads, int64_t hd))                                                    \
    /* zaya_ops_split_qk / zaya_ops_merge_qk */                                                                       \
    X(split_qk, (zaya_backend *be, float *q, float *k, const float *qk, int64_t N, int64_t qd, int64_t kvd))          \
    X(merge_qk, (zaya_backend *be, float *qk, const float *q, const float *k, int64_t N, int64_t qd, int64_t kvd))    \
    /* causal GQA attention in a dtype (attention.h: zaya_attention_forward_dtype / _backward_dtype over              \
     * whole sequences, q0 = 0, Tq = Tkv = T; bf16: the products take bf16-rounded operands) */                       \
    X(attention_forward, (zaya_backend *be, zaya_dtype dtype, float *out, float *lse, const float *q,                 \
        const float *k, const float *v, int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t D, float scale))       \
    X(attention_backward, (zaya_backend *be, zaya_dtype dtype, float *dq, float *dk, float *dv,                       \
        const float *dout, const float *q, const float *k, const float *v, const float *out, const float *lse,        \
        int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t D, float scale))                                       \
                                                                                                                      \
    /* ---- router and experts (src/model/moe.c) ---- */                                                              \
    /* r += g * r_prev (EDA, g [R] broadcast over n rows) */                                                          \
    X(eda_forward, (zaya_backend *be, float *r, const float *g, const float *r_prev, int64_t n, int64_t R))           \
    /* prod = dr * r_prev, dr_prev = dr * g (both written) */                                                         \
    X(eda_backward, (zaya_backend *be, float *prod, float *dr_prev, const float *dr, const float *r_prev,             \
        const float *g, int64_t n, int64_t R))                                                                        \
    /* zaya_top1_biased_ld: idx, gate [n] from probs rows ld apart, first e columns; bias [e] or NULL */              \
    X(top1, (zaya_backend *be, int32_t *idx, float *gate, const float *probs, int64_t ld, const float *bias,          \
        int64_t n, int64_t e))                                                                                        \
    /* zaya_top1_biased_count_ld: counts [e] (written, int64) */                                                      \
    X(top1_count, (zaya_backend *be, int64_t *counts, const float *probs, int64_t ld, const float *bias,              \
        int64_t n, int64_t e))                                                                                        \
    /* The balancer's statistics of score rows probs [n, ld] over the first E columns: psum[e] = sum_i                \
     * p[i,e] and spread[0] = sum_i sum_e (p[i,e] - psum[e]/n)^2, in double (score_spread in moe.c) */                \
    X(route_stats, (zaya_backend *be, double *psum, double *spread, const float *probs, int64_t ld, int64_t n,        \
        int64_t E))                                                                                                   \
    /* dl[i, e] = p[i,e] * dgate[i] * ([e == idx[i]] - p[i, idx[i]]) for e < ncols (probs rows ld apart,              \
     * dl rows ncols apart): the gradient of the chosen probability through the softmax */                            \
    X(router_dlogits, (zaya_backend *be, float *dl, const float *probs, int64_t ld, const float *dgate,               \
        const int32_t *idx, int64_t n, int64_t ncols))                                                                \
    /* dst[r, :] = src[perm[r], :] for r < n */                                                                       \
    X(gather_rows, (zaya_backend *be, float *dst, const float *src, const int32_t *perm, int64_t n, int64_t d))       \
    /* m[i] = g_i * (idx[i] < E ? ye[row_of[i]] : z[i]), g_i = gate[i] except 0 for a skipped token                   \
     * unless identity (zaya_moe_forward's combine) */                                                                \
    X(moe_combine_forward, (zaya_backend *be, float *m, const float *ye, const float *z, const int32_t *idx,          \
        const float *gate, const int32_t *row_of, int64_t n, int64_t d, int64_t E, int identity))                     \
    /* zaya_moe_backward's gate step: dye[row_of[i]] = gate_i dm_i and dgate_i = <dm_i, ye[row_of[i]]> for            \
     * routed tokens; identity skips: dz_i = gate_i dm_i, dgate_i = <dm_i, z_i>; other skips: dz_i = 0,               \
     * dgate_i = 0. dz rows of routed tokens are left alone (scatter_rows writes them). */                            \
    X(moe_combine_backward, (zaya_backend *be, float *dye, float *dz, float *dgate, const float *dm,                  \
        const float *ye, const float *z, const int32_t *idx, const float *gate, const int32_t *row_of, int64_t n,     \
        int64_t d, int64_t E, int identity))                                                                          \
    /* dz[i] = dxe[row_of[i]] for tokens with idx[i] < E */                                                           \
    X(scatter_rows, (zaya_backend *be, float *dz, const float *dxe, const int32_t *idx, const int32_t *row_of,        \
        int64_t n, int64_t d, int64_t E))                                                                             \
                                                                                                                      \
    /* ---- loss ---- zaya_xent_forward_backward in place over logits [n, V]; losses [n]; targets < 0                 \
     * ignored; grad_scale 0: losses only */                                                                          \
    X(xent, (zaya_backend *be, float *logits, float *losses, const int32_t *targets, int64_t n, int64_t V,            \
        float grad_scale))                                                                                            \
                                                                                                                      \
    /* ---- optimizer ---- */                                                                                         \
    /* AdamW over n elements exactly as zaya_optim_step_adamw's inner loop: g = grad * gs; m += w1 (g - m);           \
     * v = v b2 + w2 g^2; p = p * decay + neg_step * m / (sqrt(v) / bc2_sqrt + eps) (all f32) */                      \
    X(adamw, (zaya_backend *be, float *p, const float *g, float *m, float *v, int64_t n, float gs, float w1,          \
        float b2, float w2, float neg_step, float bc2_sqrt, float eps, float decay))                                  \
    /* Muon's momentum exactly as muon.c's pack_momentum, in the unit's own layout: gk = g * gs;                      \
     * buf += w (gk - buf); u = nesterov ? gk + beta (buf - gk) : buf (u [n] written) */                              \
    X(muon_momentum, (zaya_backend *be, float *u, float *buf, const float *g, int64_t n, float gs, float beta,        \
        float w, int nesterov)) /* w = (float)(1.0 - momentum), rounded from double as muon.c */                      \
    /* out[0] = sum x[i]^2 in double (a fixed-order reduction); out in the backend's memory */                        \
    X(sqnorm, (zaya_backend *be, double *out, const float *x, int64_t n))                                             \
    /* batch matrices of mn floats each: x_b = x_b / (float)(sqrt(sum of squares of x_b, in double) + eps)            \
     * (muon.c's newton_schulz; eps 1e-7) */                                                                          \
    X(normalize_batched, (zaya_backend *be, float *x, int64_t batch, int64_t mn, double eps))                         \
    /* y = a x + b z (elementwise; y may alias x or z) */                                                             \
    X(lincomb, (zaya_backend *be, float *y, float a, const float *x, float b, const float *z, int64_t n))             \
    /* dst [cols, rows] = src [rows, cols]^T */                                                                       \
    X(transpose, (zaya_backend *be, float *dst, const float *src, int64_t rows, int64_t cols))                        \
    /* p = p * decay + neg * x (Muon's parameter update, neg = -lr 0.2 sqrt(max(rows, cols))) */                      \
    X(muon_apply, (zaya_backend *be, float *p, const float *x, int64_t n, float decay, float neg))                    \
    /* end of the list */

typedef enum zaya_backend_op {
#define ZAYA_BACKEND_OP_ENUM(name, params) ZAYA_OP_##name,
    ZAYA_BACKEND_OPS(ZAYA_BACKEND_OP_ENUM)
#undef ZAYA_BACKEND_OP_ENUM
    ZAYA_BACKEND_NOPS
} zaya_backend_op;

struct zaya_backend {
    char name[32]; /* "cpu", "cuda:0" */
    int is_host;   /* 1 when its memory is host memory (plain pointers) */
    int version;   /* ZAYA_BACKEND_VERSION: the table layout the backend was built against */
    void *ctx;     /* the implementation's state */

    /* ---- memory (status returned at once) ---- */
    zaya_status (*alloc)(zaya_backend *be, void **p, size_t bytes); /* zero-filled; bytes 0: NULL */
    void (*free)(zaya_backend *be, void *p);                        /* NULL is fine */
    zaya_status (*upload)(zaya_backend *be, void *dst, const void *host_src, size_t bytes);
    zaya_status (*download)(zaya_backend *be, void *host_dst, const void *src, size_t bytes); /* waits */
    zaya_status (*copy)(zaya_backend *be, void *dst, const void *src, size_t bytes);         /* within */
    zaya_status (*zero)(zaya_backend *be, void *p, size_t bytes);
    zaya_status (*sync)(zaya_backend *be); /* waits for every operation; the first pending error */
    /* Scratch the operations may use (GEMM workspace, partial sums), at least `bytes`; called at plan
     * time, before the operations that need it. */
    zaya_status (*reserve)(zaya_backend *be, size_t bytes);
    void (*destroy)(zaya_backend *be); /* frees the backend and its memory bookkeeping (not the caller's buffers) */
    /* ---- the operations (ZAYA_BACKEND_OPS above); NULL: not implemented by this backend ---- */
#define ZAYA_BACKEND_OP_SLOT(name, params) void(*name) params;
    ZAYA_BACKEND_OPS(ZAYA_BACKEND_OP_SLOT)
#undef ZAYA_BACKEND_OP_SLOT
};

/* "gemm", "attention_forward", ... (NULL outside the list). */
const char *zaya_backend_op_name(zaya_backend_op op);
/* 1 when the backend implements op (its slot is filled), 0 when not or op is outside the list. */
int zaya_backend_supports(const zaya_backend *be, zaya_backend_op op);

/* The CPU reference backend (src/kernels/backend_cpu.c) on the calling thread's OpenMP pool. */
zaya_status zaya_backend_cpu_init(zaya_backend **out);
/* Frees a backend of any kind (NULL is fine). */
void zaya_backend_free(zaya_backend *be);

#ifdef __cplusplus
}
#endif

#endif

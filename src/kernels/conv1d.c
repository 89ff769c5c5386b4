/* Causal depthwise and grouped 1-D convolutions along time, PyTorch Conv1d semantics:
 * cross-correlation over the input left-padded with `pad` zero rows, bias at every output row.
 * Activations are [B, t, C] with channels contiguous, so the inner loops run over channels. */
#include <string.h>

#include "kernel_util.h"
#include "zaya/bf16.h"
#include "zaya/matmul.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

/* Channels per task in the weight-gradient passes; each task owns its dw/dbias entries. */
#define CONV_CH_BLOCK 64

static int64_t conv_t_out(int64_t t_in, int64_t k, int64_t pad) {
    ZAYA_ASSERT(k >= 1 && pad >= 0 && t_in >= 0);
    int64_t t_out = t_in + pad - k + 1;
    return t_out > 0 ? t_out : 0;
}

void zaya_conv1d_depthwise_forward(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                   int64_t t_in, int64_t C, int64_t k, int64_t pad) {
    const int64_t t_out = conv_t_out(t_in, k, pad);
#pragma omp parallel for schedule(static) if (B * t_out * C * k >= ZAYA_PAR_MIN_WORK)
    for (int64_t row = 0; row < B * t_out; row++) {
        int64_t b = row / t_out, t = row % t_out;
        float *yr = y + row * C;
#pragma omp simd
        for (int64_t c = 0; c < C; c++) yr[c] = bias ? bias[c] : 0.0f;
        for (int64_t j = 0; j < k; j++) {
            int64_t s = t + j - pad; /* input row read by tap j; padding rows contribute 0 */
            if (s < 0 || s >= t_in) continue;
            const float *xr = x + (b * t_in + s) * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) yr[c] += w[c * k + j] * xr[c];
        }
    }
}

void zaya_conv1d_depthwise_backward(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                    const float *w, int64_t B, int64_t t_in, int64_t C, int64_t k, int64_t pad) {
    const int64_t t_out = conv_t_out(t_in, k, pad);
    const int64_t nblk = (C + CONV_CH_BLOCK - 1) / CONV_CH_BLOCK;
#pragma omp parallel if (B * (t_in + t_out) * C * k >= ZAYA_PAR_MIN_WORK)
    {
        /* dx[s] = sum_j w[:, j] * dy[s + pad - j]: every dx row is written by exactly one task. */
#pragma omp for schedule(static) nowait
        for (int64_t row = 0; row < B * t_in; row++) {
            int64_t b = row / t_in, s = row % t_in;
            float *dxr = dx + row * C;
#pragma omp simd
            for (int64_t c = 0; c < C; c++) dxr[c] = 0.0f;
            for (int64_t j = 0; j < k; j++) {
                int64_t t = s + pad - j;
                if (t < 0 || t >= t_out) continue;
                const float *dyr = dy + (b * t_out + t) * C;
#pragma omp simd
                for (int64_t c = 0; c < C; c++) dxr[c] += w[c * k + j] * dyr[c];
            }
        }
        /* dw[c, j] += sum_{b,t} dy[b,t,c] * xpad[b,t+j,c]; dbias[c] += sum dy[b,t,c]. */
#pragma omp for schedule(static)
        for (int64_t blk = 0; blk < nblk; blk++) {
            int64_t c0 = blk * CONV_CH_BLOCK, nc = C - c0 < CONV_CH_BLOCK ? C - c0 : CONV_CH_BLOCK;
            float acc[CONV_CH_BLOCK];
            for (int64_t j = -1; j < k; j++) { /* j = -1: the bias */
                if (j < 0 && !dbias) continue;
                for (int64_t c = 0; c < nc; c++) acc[c] = 0.0f;
                for (int64_t b = 0; b < B; b++) {
                    for (int64_t t = 0; t < t_out; t++) {
                        const float *dyr = dy + (b * t_out + t) * C + c0;
                        if (j < 0) {
#pragma omp simd
                            for (int64_t c = 0; c < nc; c++) acc[c] += dyr[c];
                            continue;
                        }
                        int64_t s = t + j - pad;
                        if (s < 0 || s >= t_in) continue;
                        const float *xr = x + (b * t_in + s) * C + c0;
#pragma omp simd
                        for (int64_t c = 0; c < nc; c++) acc[c] += dyr[c] * xr[c];
                    }
                }
                if (j < 0)
                    for (int64_t c = 0; c < nc; c++) dbias[c0 + c] += acc[c];
                else
                    for (int64_t c = 0; c < nc; c++) dw[(c0 + c) * k + j] += acc[c];
            }
        }
    }
}

/* ---- Grouped convolution ----
 * Within one group both passes that produce activations are small matrix products:
 *   forward  y[t, o]  = bias[o] + sum_{j, i} x[t + j - pad, i] * w[o, i, j]
 *   backward dx[s, i] =           sum_{j, o} dy[s + pad - j, o] * w[o, i, j]
 * i.e. out[r, q] (+)= sum_{j, m} in[r + off_j, m] * W[j, m, q] over the group's cg columns. A task
 * owns TILE_Q = 16 output columns q of one group and a block of rows. It first copies its slice of
 * W into a stack tile laid out [j][m][q] so that the inner loop is a contiguous 16-wide
 * multiply-add, then sweeps rows four at a time (four independent accumulators hide FMA latency;
 * the tile row is reused four times). Input columns m are taken in chunks of TILE_M so the tile
 * stays bounded (and in L1/L2) for any cg and k. */
#define TILE_Q 16
#define TILE_ELEMS 8192 /* floats in the stack tile: 32 KiB */
#define GROUP_ROW_BLOCK 64

typedef struct {
    const float *in;  /* group's first input column of batch b: in[row * C + m] */
    int64_t in_rows;  /* valid input rows are [0, in_rows); others are zero padding */
    float *out;       /* first output column of the task for batch b: out[row * C + q] */
    int64_t C, k, nq; /* nq <= TILE_Q columns written */
    int64_t off0, off_step; /* input row of output row r for tap j: r + off0 + j * off_step */
} group_job;

/* Adds (or with init != NULL first sets to init) rows [r0, r1) of out from the tile covering the nm
 * input columns starting at jb->in: tile[(j * nm + m) * TILE_Q + q]. */
static void group_rows(const group_job *jb, const float *tile, int64_t nm, const float *init, int64_t r0, int64_t r1) {
    const int64_t C = jb->C;
    for (int64_t r = r0; r < r1; r += 4) {
        const int64_t nr = r1 - r < 4 ? r1 - r : 4;
        float acc[4][TILE_Q];
        for (int64_t a = 0; a < 4; a++)
            for (int64_t q = 0; q < TILE_Q; q++)
                acc[a][q] = a >= nr ? 0.0f : init ? (q < jb->nq ? init[q] : 0.0f) : q < jb->nq ? jb->out[(r + a) * C + q] : 0.0f;
        for (int64_t j = 0; j < jb->k; j++) {
            const float *src[4];
            int all = nr == 4;
            for (int64_t a = 0; a < 4; a++) {
                int64_t s = r + a + jb->off0 + j * jb->off_step;
                src[a] = (a < nr && s >= 0 && s < jb->in_rows) ? jb->in + s * C : NULL;
                all &= src[a] != NULL;
            }
            const float *tj = tile + j * nm * TILE_Q;
            if (all) {
                for (int64_t m = 0; m < nm; m++) {
                    const float *tw = tj + m * TILE_Q;
                    const float x0 = src[0][m], x1 = src[1][m], x2 = src[2][m], x3 = src[3][m];
#pragma omp simd
                    for (int64_t q = 0; q < TILE_Q; q++) {
                        acc[0][q] += x0 * tw[q];
                        acc[1][q] += x1 * tw[q];
                        acc[2][q] += x2 * tw[q];
                        acc[3][q] += x3 * tw[q];
                    }
                }
            } else { /* rows touching the padding or the end of the block */
                for (int64_t a = 0; a < nr; a++) {
                    if (!src[a]) continue;
                    for (int64_t m = 0; m < nm; m++) {
                        const float xa = src[a][m], *tw = tj + m * TILE_Q;
#pragma omp simd
                        for (int64_t q = 0; q < TILE_Q; q++) acc[a][q] += xa * tw[q];
                    }
                }
            }
        }
        for (int64_t a = 0; a < nr; a++)
            for (int64_t q = 0; q < jb->nq; q++) jb->out[(r + a) * C + q] = acc[a][q];
    }
}

/* transpose_w = 0 (forward): tile[j][m][q] = w[(q0 + q), (m0 + m), j] (q = output channel).
 * transpose_w = 1 (backward dx): tile[j][m][q] = w[(m0 + m), (q0 + q), j] (m = output channel).
 * Indices are relative to the group; columns q >= nq are zero. */
static void group_tile(float *tile, const float *wg, int64_t cg, int64_t k, int64_t q0, int64_t nq, int64_t m0,
                       int64_t nm, int transpose_w) {
    for (int64_t j = 0; j < k; j++)
        for (int64_t m = 0; m < nm; m++)
            for (int64_t q = 0; q < TILE_Q; q++) {
                float v = 0.0f;
                if (q < nq)
                    v = transpose_w ? wg[((m0 + m) * cg + q0 + q) * k + j] : wg[((q0 + q) * cg + m0 + m) * k + j];
                tile[(j * nm + m) * TILE_Q + q] = v;
            }
}

/* Runs every (batch, row block, group, column block) task of one grouped product. */
static void group_product(float *out, int64_t out_rows, const float *in, int64_t in_rows, const float *w,
                          const float *bias, int64_t B, int64_t C, int64_t groups, int64_t k, int64_t off0,
                          int64_t off_step, int transpose_w) {
    const int64_t cg = C / groups, qblk = (cg + TILE_Q - 1) / TILE_Q;
    const int64_t rblk = (out_rows + GROUP_ROW_BLOCK - 1) / GROUP_ROW_BLOCK;
    int64_t mchunk = TILE_ELEMS / (TILE_Q * k);
    ZAYA_ASSERT(mchunk >= 1); /* k <= 512 */
    if (mchunk > cg) mchunk = cg;
    const int64_t ntask = B * rblk * groups * qblk;
#pragma omp parallel for schedule(static) if (B * out_rows * C * cg * k >= ZAYA_PAR_MIN_WORK)
    for (int64_t task = 0; task < ntask; task++) {
        int64_t qb = task % qblk, rest = task / qblk;
        int64_t g = rest % groups;
        rest /= groups;
        int64_t rb = rest % rblk, b = rest / rblk;
        int64_t q0 = qb * TILE_Q, nq = cg - q0 < TILE_Q ? cg - q0 : TILE_Q;
        int64_t r0 = rb * GROUP_ROW_BLOCK, r1 = r0 + GROUP_ROW_BLOCK < out_rows ? r0 + GROUP_ROW_BLOCK : out_rows;
        float tile[TILE_ELEMS];
        float zero[TILE_Q] = {0};
        group_job jb = {NULL, in_rows, out + b * out_rows * C + g * cg + q0, C, k, nq,
                        off0, off_step};
        for (int64_t m0 = 0; m0 < cg; m0 += mchunk) {
            int64_t nm = cg - m0 < mchunk ? cg - m0 : mchunk;
            jb.in = in + b * in_rows * C + g * cg + m0;
            group_tile(tile, w + g * cg * cg * k, cg, k, q0, nq, m0, nm, transpose_w);
            const float *init = m0 > 0 ? NULL : bias ? bias + g * cg + q0 : zero;
            group_rows(&jb, tile, nm, init, r0, r1);
        }
    }
}

/* ---- Grouped convolution as GEMMs (a planned workspace) ----
 * On the input padded to tp = t_in + pad rows per sequence, all sequences stacked, output row r
 * (sequence b, time t: r = b tp + t) is sum_j X[r + j] W_j per group, W_j the group's [cg_in, cg_out]
 * tap-j matrix: one oneDNN matmul per (group, tap) over every row of the batch. Rows whose taps
 * straddle two sequences are computed and dropped (k - 1 per sequence). Backward uses the output
 * gradient laid out on the same grid (k - 1 leading zero rows, each sequence's t_out rows followed by
 * k - 1 zero rows), so dX = sum_j dY[r - j] W_j^T and dW_j = sum_r dY[r]^T X[r + j] never mix
 * sequences. Workspace, in floats: two repacked weight blocks (k C cg each), the stacked grid
 * ((k - 1 + B tp) C) and, with pad > 0, the padded input and its gradient (B tp C each); then the
 * bf16 copies of the repacked weights, the grid and the (padded) input, for the bf16 products. */
static int64_t half_floats(int64_t n) { return (n + 31) / 32 * 16; } /* n bf16 values, 64-byte steps */

int64_t zaya_conv1d_grouped_ws_floats(int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad) {
    ZAYA_ASSERT(groups >= 1 && C % groups == 0 && k >= 1 && pad >= 0);
    const int64_t cg = C / groups, tp = t_in + pad;
    return 2 * k * C * cg + (k - 1 + B * tp) * C + (pad > 0 ? 2 * B * tp * C : 0) + half_floats(k * C * cg) +
           half_floats((k - 1 + B * tp) * C) + half_floats(B * tp * C);
}

typedef struct {
    float *wp, *dws, *grid, *xp, *dxp;
    zaya_bf16 *wpb, *gridb, *xb; /* bf16 copies: repacked weights, grid, (padded) input */
} grouped_ws;

static grouped_ws ws_split(float *ws, int64_t B, int64_t tp, int64_t C, int64_t cg, int64_t k, int64_t pad) {
    grouped_ws w;
    w.wp = ws;
    w.dws = w.wp + k * C * cg;
    w.grid = w.dws + k * C * cg;
    w.xp = pad > 0 ? w.grid + (k - 1 + B * tp) * C : NULL;
    w.dxp = pad > 0 ? w.xp + B * tp * C : NULL;
    float *h = w.grid + (k - 1 + B * tp) * C + (pad > 0 ? 2 * B * tp * C : 0);
    w.wpb = (zaya_bf16 *)h;
    h += half_floats(k * C * cg);
    w.gridb = (zaya_bf16 *)h;
    h += half_floats((k - 1 + B * tp) * C);
    w.xb = (zaya_bf16 *)h;
    return w;
}

/* wp[j][g][i][o] = w[(g cg + o) cg + i][j]: each (tap, group) a dense [cg_in, cg_out] matrix. */
static void repack_taps(float *wp, const float *w, int64_t C, int64_t cg, int64_t k) {
    const int64_t G = C / cg;
#pragma omp parallel for schedule(static) if (k * C * cg >= ZAYA_PAR_MIN_WORK)
    for (int64_t jg = 0; jg < k * G; jg++) {
        const int64_t j = jg / G, g = jg % G;
        float *dst = wp + jg * cg * cg;
        for (int64_t i = 0; i < cg; i++)
            for (int64_t o = 0; o < cg; o++) dst[i * cg + o] = w[((g * cg + o) * cg + i) * k + j];
    }
}

/* x [B, t_in, C] -> xp [B, t_in + pad, C] with pad zero rows in front of each sequence. */
static void pad_input(float *xp, const float *x, int64_t B, int64_t t_in, int64_t C, int64_t pad) {
    const int64_t tp = t_in + pad;
#pragma omp parallel for schedule(static) if (B * tp * C >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < B * tp; r++) {
        const int64_t b = r / tp, u = r % tp;
        if (u < pad) memset(xp + r * C, 0, (size_t)C * sizeof(float));
        else memcpy(xp + r * C, x + (b * t_in + u - pad) * C, (size_t)C * sizeof(float));
    }
}

static void gemm_dt(zaya_dtype dt, int ta, int tb, int64_t m, int64_t n, int64_t kk, const void *a, int64_t lda,
                    const void *b, int64_t ldb, float *c, int64_t ldc, float beta) {
    zaya_matmul_desc d = {.dtype = dt, .trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = kk,
                          .lda = lda, .ldb = ldb, .ldc = ldc, .beta = beta};
    zaya_status st = zaya_matmul(&d, a, b, c);
    ZAYA_ASSERT(st == ZAYA_OK);
}

/* An operand of the (group, tap) products: the f32 matrix, or its bf16 copy at the same offset. */
static const void *operand(zaya_dtype dt, const float *f, const zaya_bf16 *h, int64_t off) {
    return dt == ZAYA_DTYPE_BF16 ? (const void *)(h + off) : (const void *)(f + off);
}

static void grouped_forward_gemm(zaya_dtype dt, float *y, const float *x, const float *w, const float *bias, int64_t B,
                                 int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad, float *ws) {
    const int64_t cg = C / groups, tp = t_in + pad, t_out = conv_t_out(t_in, k, pad), rows = B * tp - (k - 1);
    if (B * t_out == 0) return;
    grouped_ws W = ws_split(ws, B, tp, C, cg, k, pad);
    repack_taps(W.wp, w, C, cg, k);
    const float *X = x;
    if (pad > 0) {
        pad_input(W.xp, x, B, t_in, C, pad);
        X = W.xp;
    }
    if (dt == ZAYA_DTYPE_BF16) {
        zaya_f32_to_bf16_n(W.wpb, W.wp, (size_t)(k * C * cg));
        zaya_f32_to_bf16_n(W.xb, X, (size_t)(B * tp * C));
    }
    for (int64_t g = 0; g < groups; g++)
        for (int64_t j = 0; j < k; j++)
            gemm_dt(dt, 0, 0, rows, cg, cg, operand(dt, X, W.xb, j * C + g * cg), C,
                    operand(dt, W.wp, W.wpb, (j * groups + g) * cg * cg), cg, W.grid + g * cg, C, j > 0 ? 1.0f : 0.0f);
#pragma omp parallel for schedule(static) if (B * t_out * C >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < B * t_out; r++) {
        const float *src = W.grid + ((r / t_out) * tp + r % t_out) * C;
        float *dst = y + r * C;
        if (bias) {
#pragma omp simd
            for (int64_t c = 0; c < C; c++) dst[c] = src[c] + bias[c];
        } else {
            memcpy(dst, src, (size_t)C * sizeof(float));
        }
    }
}

static void grouped_backward_gemm(zaya_dtype dt, float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                  const float *w, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                  int64_t pad, float *ws) {
    const int64_t cg = C / groups, tp = t_in + pad, t_out = conv_t_out(t_in, k, pad), h = k - 1;
    grouped_ws W = ws_split(ws, B, tp, C, cg, k, pad);
    repack_taps(W.wp, w, C, cg, k);
    /* dY on the grid: h zero rows, then per sequence its t_out rows and tp - t_out (= h when t_out > 0) zeros */
    float *grid = W.grid;
    memset(grid, 0, (size_t)(h * C) * sizeof(float));
#pragma omp parallel for schedule(static) if (B * tp * C >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < B * tp; r++) {
        const int64_t b = r / tp, t = r % tp;
        float *dst = grid + (h + r) * C;
        if (t < t_out) memcpy(dst, dy + (b * t_out + t) * C, (size_t)C * sizeof(float));
        else memset(dst, 0, (size_t)C * sizeof(float));
    }
    const float *X = x;
    if (pad > 0) {
        pad_input(W.xp, x, B, t_in, C, pad);
        X = W.xp;
    }
    float *DX = pad > 0 ? W.dxp : dx;
    if (dt == ZAYA_DTYPE_BF16) {
        zaya_f32_to_bf16_n(W.wpb, W.wp, (size_t)(k * C * cg));
        zaya_f32_to_bf16_n(W.gridb, grid, (size_t)((h + B * tp) * C));
        zaya_f32_to_bf16_n(W.xb, X, (size_t)(B * tp * C));
    }
    for (int64_t g = 0; g < groups; g++)
        for (int64_t j = 0; j < k; j++) {
            const void *wj = operand(dt, W.wp, W.wpb, (j * groups + g) * cg * cg);
            /* dX[u] += dY[u - j] W_j^T over the B tp padded-input rows */
            gemm_dt(dt, 0, 1, B * tp, cg, cg, operand(dt, grid, W.gridb, (h - j) * C + g * cg), C, wj, cg, DX + g * cg,
                    C, j > 0 ? 1.0f : 0.0f);
            /* dW_j (as [o][i]) = sum_r dY[r]^T X[r + j] over rows whose taps stay in the grid */
            if (B * tp - h > 0)
                gemm_dt(dt, 1, 0, cg, cg, B * tp - h, operand(dt, grid, W.gridb, h * C + g * cg), C,
                        operand(dt, X, W.xb, j * C + g * cg), C, W.dws + (j * groups + g) * cg * cg, cg, 0.0f);
            else
                memset(W.dws + (j * groups + g) * cg * cg, 0, (size_t)(cg * cg) * sizeof(float));
        }
    if (pad > 0) {
#pragma omp parallel for schedule(static) if (B * t_in * C >= ZAYA_PAR_MIN_WORK)
        for (int64_t r = 0; r < B * t_in; r++)
            memcpy(dx + r * C, DX + ((r / t_in) * tp + pad + r % t_in) * C, (size_t)C * sizeof(float));
    }
#pragma omp parallel for schedule(static) if (k * C * cg >= ZAYA_PAR_MIN_WORK)
    for (int64_t o = 0; o < C; o++) {
        const int64_t g = o / cg, ol = o % cg;
        for (int64_t i = 0; i < cg; i++)
            for (int64_t j = 0; j < k; j++) dw[(o * cg + i) * k + j] += W.dws[((j * groups + g) * cg + ol) * cg + i];
    }
    if (dbias) { /* column sums in row order per channel block: thread-count invariant */
        const int64_t nblk = (C + CONV_CH_BLOCK - 1) / CONV_CH_BLOCK;
#pragma omp parallel for schedule(static) if (B * t_out * C >= ZAYA_PAR_MIN_WORK)
        for (int64_t blk = 0; blk < nblk; blk++) {
            const int64_t c0 = blk * CONV_CH_BLOCK, nc = C - c0 < CONV_CH_BLOCK ? C - c0 : CONV_CH_BLOCK;
            float acc[CONV_CH_BLOCK] = {0};
            for (int64_t r = 0; r < B * t_out; r++) {
                const float *d = dy + r * C + c0;
#pragma omp simd
                for (int64_t c = 0; c < nc; c++) acc[c] += d[c];
            }
            for (int64_t c = 0; c < nc; c++) dbias[c0 + c] += acc[c];
        }
    }
}

void zaya_conv1d_grouped_forward(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                 int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad) {
    zaya_conv1d_grouped_forward_ws(y, x, w, bias, B, t_in, C, groups, k, pad, NULL);
}

void zaya_conv1d_grouped_forward_ws(float *y, const float *x, const float *w, const float *bias, int64_t B,
                                    int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad, float *ws) {
    zaya_conv1d_grouped_forward_dt(ZAYA_DTYPE_F32, y, x, w, bias, B, t_in, C, groups, k, pad, ws);
}

void zaya_conv1d_grouped_forward_dt(zaya_dtype dtype, float *y, const float *x, const float *w, const float *bias,
                                    int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k, int64_t pad,
                                    float *ws) {
    ZAYA_ASSERT(groups >= 1 && C % groups == 0);
    ZAYA_ASSERT(ws || dtype == ZAYA_DTYPE_F32); /* bf16 products run on the workspace's GEMMs */
    if (ws) {
        grouped_forward_gemm(dtype, y, x, w, bias, B, t_in, C, groups, k, pad, ws);
        return;
    }
    const int64_t t_out = conv_t_out(t_in, k, pad);
    group_product(y, t_out, x, t_in, w, bias, B, C, groups, k, -pad, 1, 0);
}

/* dw[o, i, j] += sum_{b,t} dy[b,t,o] * x[b, t+j-pad, i] per group. A task owns TILE_Q output
 * channels o and a chunk of input channels i of one group and accumulates in a stack tile laid out
 * [j][o][i] (contiguous in i), four rows of dy at a time; it writes its own dw entries at the end,
 * so there are no races and the sum order is independent of the thread count. */
static void grouped_dw(float *dw, float *dbias, const float *dy, const float *x, int64_t B, int64_t t_in,
                       int64_t t_out, int64_t C, int64_t groups, int64_t k, int64_t pad) {
    const int64_t cg = C / groups, oblk = (cg + TILE_Q - 1) / TILE_Q;
    int64_t ichunk = TILE_ELEMS / (TILE_Q * k);
    ZAYA_ASSERT(ichunk >= 1);
    if (ichunk > cg) ichunk = cg;
    const int64_t iblk = (cg + ichunk - 1) / ichunk, ntask = groups * oblk * iblk;
#pragma omp parallel for schedule(static) if (B * t_out * C * cg * k >= ZAYA_PAR_MIN_WORK)
    for (int64_t task = 0; task < ntask; task++) {
        int64_t ib = task % iblk, ob = (task / iblk) % oblk, g = task / (iblk * oblk);
        int64_t o0 = g * cg + ob * TILE_Q, no = cg - ob * TILE_Q < TILE_Q ? cg - ob * TILE_Q : TILE_Q;
        int64_t i0 = ib * ichunk, ni = cg - i0 < ichunk ? cg - i0 : ichunk;
        float acc[TILE_ELEMS]; /* [j][o][i], k * TILE_Q * ni <= TILE_ELEMS */
        memset(acc, 0, (size_t)(k * TILE_Q * ni) * sizeof(float));
        float bacc[TILE_Q] = {0};
        for (int64_t b = 0; b < B; b++)
            for (int64_t t = 0; t < t_out; t++) {
                const float *dyr = dy + (b * t_out + t) * C + o0;
                if (dbias && ib == 0)
                    for (int64_t o = 0; o < no; o++) bacc[o] += dyr[o];
                for (int64_t j = 0; j < k; j++) {
                    int64_t s = t + j - pad;
                    if (s < 0 || s >= t_in) continue;
                    const float *xr = x + (b * t_in + s) * C + g * cg + i0;
                    for (int64_t o = 0; o < no; o++) {
                        const float d = dyr[o];
                        float *a = acc + (j * TILE_Q + o) * ni;
#pragma omp simd
                        for (int64_t i = 0; i < ni; i++) a[i] += d * xr[i];
                    }
                }
            }
        for (int64_t o = 0; o < no; o++)
            for (int64_t i = 0; i < ni; i++)
                for (int64_t j = 0; j < k; j++) dw[((o0 + o) * cg + i0 + i) * k + j] += acc[(j * TILE_Q + o) * ni + i];
        if (dbias && ib == 0)
            for (int64_t o = 0; o < no; o++) dbias[o0 + o] += bacc[o];
    }
}

void zaya_conv1d_grouped_backward(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                  const float *w, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                  int64_t pad) {
    zaya_conv1d_grouped_backward_ws(dx, dw, dbias, dy, x, w, B, t_in, C, groups, k, pad, NULL);
}

void zaya_conv1d_grouped_backward_ws(float *dx, float *dw, float *dbias, const float *dy, const float *x,
                                     const float *w, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                     int64_t pad, float *ws) {
    zaya_conv1d_grouped_backward_dt(ZAYA_DTYPE_F32, dx, dw, dbias, dy, x, w, B, t_in, C, groups, k, pad, ws);
}

void zaya_conv1d_grouped_backward_dt(zaya_dtype dtype, float *dx, float *dw, float *dbias, const float *dy,
                                     const float *x, const float *w, int64_t B, int64_t t_in, int64_t C,
                                     int64_t groups, int64_t k, int64_t pad, float *ws) {
    ZAYA_ASSERT(groups >= 1 && C % groups == 0);
    ZAYA_ASSERT(ws || dtype == ZAYA_DTYPE_F32);
    if (ws) {
        grouped_backward_gemm(dtype, dx, dw, dbias, dy, x, w, B, t_in, C, groups, k, pad, ws);
        return;
    }
    const int64_t t_out = conv_t_out(t_in, k, pad);
    /* dx[s] reads dy[s + pad - j]: the same product with the weight transposed within the group. */
    group_product(dx, t_in, dy, t_out, w, NULL, B, C, groups, k, pad, -1, 1);
    grouped_dw(dw, dbias, dy, x, B, t_in, t_out, C, groups, k, pad);
}

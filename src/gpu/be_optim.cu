// The CUDA backend's optimizer and elementwise operations (include/zaya/backend.h): AdamW, Muon's
// momentum, normalisation and update, the sum of squares, and the adds, scales, column sums and
// residual merges of the model.
//
// Same bits as the CPU. Every per-element formula is written with the _rn intrinsics (__fmul_rn,
// __fadd_rn, ...), which the compiler never contracts into an FMA: the CPU build is ISO C17, where
// GCC does not contract either, so each element goes through the same roundings in the same order
// as the loop of adamw.c, muon.c or ops.c it mirrors.
//
// Reductions are fixed by the shapes alone (no atomics):
//   sqnorm / normalize_batched: exactly zaya_optim_sumsq (optim.c): blocks of 4096 elements, each
//     summed in 8 lanes (8 threads) and combined ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)), then one thread
//     adds the block sums in order. Bit-identical to the CPU.
//   colsum_add / merge_backward: each thread owns a column and adds rows in order, as zaya_ops_*
//     do (bit-identical). When the columns are too few to fill the device (d < 65536 / 2 ...), the
//     rows are cut into a fixed number of chunks, each summed in order, and the chunk sums are then
//     added in chunk order: the CPU adds rows strictly in order, so such f32 sums differ from it by
//     rounding only (well within 1e-5 relative), and they are the same bits run to run.
#include <math.h>
#include <stdio.h>

#include <initializer_list>

#include "gpu/be_cuda.h"

#define SUM_BLOCK 4096 /* ZAYA_OPTIM_SUM_BLOCK (src/optim/internal.h) */
#define SUM_LANES 8

/* Column sums: at most COL_CHUNKS row chunks of at least COL_MIN_ROWS rows, aiming at COL_THREADS
 * threads in all. */
#define COL_CHUNKS 64
#define COL_MIN_ROWS 64
#define COL_THREADS 65536

#define GRID_STRIDE(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* A NULL operand of a non-empty operation is recorded instead of faulting on the device, so the
 * error names the operation and the device stays usable. */
static bool args_ok(zaya_backend *be, const char *op, int64_t n, std::initializer_list<const void *> ptrs) {
    if (n < 0) {
        zaya_cuda_be_failf(be, op, ZAYA_EINVAL, "negative size %lld", (long long)n);
        return false;
    }
    if (n == 0) return false;
    int i = 0;
    for (const void *p : ptrs) {
        if (!p) {
            zaya_cuda_be_failf(be, op, ZAYA_EINVAL, "NULL operand %d (n = %lld)", i, (long long)n);
            return false;
        }
        i++;
    }
    return true;
}

#define LAUNCH(be, op, n, kernel, ...)                                                                   \
    do {                                                                                                 \
        zaya_cuda_be *c_ = zaya_cuda_be_of(be);                                                          \
        kernel<<<zaya_cuda_be_blocks((be), (n), 0), c_->block, 0, c_->stream>>>(__VA_ARGS__);            \
        zaya_cuda_be_check_launch((be), (op));                                                           \
    } while (0)

/* ---- optimizer ---- */

__global__ static void adamw_kernel(float *p, const float *g, float *m, float *v, int64_t n, float gs, float w1,
                                    float b2, float w2, float neg_step, float bc2_sqrt, float eps, float decay) {
    GRID_STRIDE(j, n) {
        const float gj = __fmul_rn(g[j], gs);
        const float mo = m[j];
        const float mj = __fadd_rn(mo, __fmul_rn(w1, __fsub_rn(gj, mo)));
        const float vj = __fadd_rn(__fmul_rn(v[j], b2), __fmul_rn(__fmul_rn(w2, gj), gj));
        m[j] = mj;
        v[j] = vj;
        const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(vj), bc2_sqrt), eps);
        p[j] = __fadd_rn(__fmul_rn(p[j], decay), __fmul_rn(neg_step, __fdiv_rn(mj, denom)));
    }
}

static void be_adamw(zaya_backend *be, float *p, const float *g, float *m, float *v, int64_t n, float gs, float w1,
                     float b2, float w2, float neg_step, float bc2_sqrt, float eps, float decay) {
    if (!args_ok(be, "adamw", n, {p, g, m, v})) return;
    LAUNCH(be, "adamw", n, adamw_kernel, p, g, m, v, n, gs, w1, b2, w2, neg_step, bc2_sqrt, eps, decay);
}

/* w is muon.c's lerp weight (float)(1.0 - momentum), rounded from double by the caller. */
__global__ static void muon_momentum_kernel(float *u, float *buf, const float *g, int64_t n, float gs, float beta,
                                            float w, int nesterov) {
    GRID_STRIDE(k, n) {
        const float gk = __fmul_rn(g[k], gs);
        const float bo = buf[k];
        const float mk = __fadd_rn(bo, __fmul_rn(w, __fsub_rn(gk, bo)));
        buf[k] = mk;
        u[k] = nesterov ? __fadd_rn(gk, __fmul_rn(beta, __fsub_rn(mk, gk))) : mk;
    }
}

static void be_muon_momentum(zaya_backend *be, float *u, float *buf, const float *g, int64_t n, float gs, float beta,
                             float w, int nesterov) {
    if (!args_ok(be, "muon_momentum", n, {u, buf, g})) return;
    LAUNCH(be, "muon_momentum", n, muon_momentum_kernel, u, buf, g, n, gs, beta, w, nesterov);
}

/* Pass 1 of zaya_optim_sumsq over matrices of mn floats: sum block q of matrix j (global block
 * index B = j * bpm + q, for B in [B0, B0 + nb)) into partial[B - B0]. 8 adjacent threads are one
 * block's 8 lanes; lane 0 also takes the tail that does not fill 8 lanes, after its main loop (as
 * the CPU adds it to s[0] last). blockDim.x is a multiple of 8. */
__global__ static void sumsq_blocks_kernel(const float *x, int64_t mn, int64_t bpm, int64_t B0, int64_t nb,
                                           double *partial) {
    extern __shared__ double lanes[];
    const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t rel = t / SUM_LANES;
    const int lane = (int)(t % SUM_LANES);
    double s = 0.0;
    if (rel < nb) {
        const int64_t B = B0 + rel, j = B / bpm, q = B % bpm;
        const float *xm = x + j * mn;
        const int64_t i0 = q * SUM_BLOCK, i1 = i0 + SUM_BLOCK < mn ? i0 + SUM_BLOCK : mn;
        int64_t i = i0;
        /* (double)f * (double)f is exact, so a contracted FMA rounds the same as the CPU's add. */
        for (; i + SUM_LANES <= i1; i += SUM_LANES) {
            const double v = (double)xm[i + lane];
            s = __dadd_rn(s, __dmul_rn(v, v));
        }
        if (lane == 0)
            for (; i < i1; i++) {
                const double v = (double)xm[i];
                s = __dadd_rn(s, __dmul_rn(v, v));
            }
    }
    lanes[threadIdx.x] = s;
    __syncthreads();
    if (rel < nb && lane == 0) {
        const double *l = lanes + threadIdx.x;
        partial[rel] = __dadd_rn(__dadd_rn(__dadd_rn(l[0], l[1]), __dadd_rn(l[2], l[3])),
                                 __dadd_rn(__dadd_rn(l[4], l[5]), __dadd_rn(l[6], l[7])));
    }
}

static void launch_sumsq_blocks(zaya_backend *be, const char *op, const float *x, int64_t mn, int64_t bpm, int64_t B0,
                                int64_t nb) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    const int threads = c->block; /* 8 x the warp size: a multiple of 8 */
    const int64_t blocks = (nb * SUM_LANES + threads - 1) / threads;
    sumsq_blocks_kernel<<<(unsigned)blocks, threads, (size_t)threads * sizeof(double), c->stream>>>(x, mn, bpm, B0, nb,
                                                                                                   c->partials);
    zaya_cuda_be_check_launch(be, op);
}

/* Pass 2 of sqnorm: one thread adds the block sums in order onto the running total. */
__global__ static void sumsq_total_kernel(double *out, const double *partial, int64_t nb, int first) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    double t = first ? 0.0 : out[0];
    for (int64_t b = 0; b < nb; b++) t = __dadd_rn(t, partial[b]);
    out[0] = t;
}

static void be_sqnorm(zaya_backend *be, double *out, const float *x, int64_t n) {
    if (n < 0 || !out || (n > 0 && !x)) {
        zaya_cuda_be_failf(be, "sqnorm", ZAYA_EINVAL, "bad operands (n = %lld)", (long long)n);
        return;
    }
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    const int64_t nblocks = (n + SUM_BLOCK - 1) / SUM_BLOCK, cap = (int64_t)c->partials_count;
    int64_t B0 = 0;
    do { /* one pass in practice (cap blocks are 4 Gi elements); n == 0 writes 0 */
        const int64_t nb = nblocks - B0 < cap ? nblocks - B0 : cap;
        if (nb > 0) launch_sumsq_blocks(be, "sqnorm", x, n, nblocks, B0, nb);
        sumsq_total_kernel<<<1, 1, 0, c->stream>>>(out, c->partials, nb, B0 == 0);
        zaya_cuda_be_check_launch(be, "sqnorm");
        B0 += nb;
    } while (B0 < nblocks);
}

/* normalize_batched pass 2: matrix j's sum of squares (its bpm block sums in order) to its divisor,
 * (float)(sqrt(s) + eps) in double, as muon.c's newton_schulz. */
__global__ static void norm_denom_kernel(float *denom, const double *partial, int64_t mats, int64_t bpm, double eps) {
    GRID_STRIDE(j, mats) {
        double t = 0.0;
        for (int64_t q = 0; q < bpm; q++) t = __dadd_rn(t, partial[j * bpm + q]);
        denom[j] = __double2float_rn(__dadd_rn(__dsqrt_rn(t), eps));
    }
}

__global__ static void norm_scale_kernel(float *x, const float *denom, int64_t mn, int64_t total) {
    GRID_STRIDE(i, total) x[i] = __fdiv_rn(x[i], denom[i / mn]);
}

static void be_normalize_batched(zaya_backend *be, float *x, int64_t batch, int64_t mn, double eps) {
    if (batch < 0 || mn < 0) {
        zaya_cuda_be_failf(be, "normalize_batched", ZAYA_EINVAL, "bad shape %lld x %lld", (long long)batch,
                           (long long)mn);
        return;
    }
    if (!args_ok(be, "normalize_batched", batch * mn, {x})) return;
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    const int64_t bpm = (mn + SUM_BLOCK - 1) / SUM_BLOCK;
    /* Groups of matrices whose block sums and divisors fit the partials: bpm doubles and one float
     * divisor (in a double's room) per matrix. */
    const int64_t per_group = (int64_t)c->partials_count / (bpm + 1);
    if (per_group < 1) {
        zaya_cuda_be_failf(be, "normalize_batched", ZAYA_EUNSUPPORTED, "a matrix of %lld elements exceeds the scratch",
                           (long long)mn);
        return;
    }
    for (int64_t j0 = 0; j0 < batch; j0 += per_group) {
        const int64_t g = batch - j0 < per_group ? batch - j0 : per_group;
        float *xg = x + j0 * mn;
        float *denom = (float *)(c->partials + g * bpm);
        launch_sumsq_blocks(be, "normalize_batched", xg, mn, bpm, 0, g * bpm);
        LAUNCH(be, "normalize_batched", g, norm_denom_kernel, denom, c->partials, g, bpm, eps);
        LAUNCH(be, "normalize_batched", g * mn, norm_scale_kernel, xg, denom, mn, g * mn);
    }
}

__global__ static void lincomb_kernel(float *y, float a, const float *x, float b, const float *z, int64_t n) {
    GRID_STRIDE(i, n) y[i] = __fadd_rn(__fmul_rn(a, x[i]), __fmul_rn(b, z[i])); /* y may be x or z */
}

static void be_lincomb(zaya_backend *be, float *y, float a, const float *x, float b, const float *z, int64_t n) {
    if (!args_ok(be, "lincomb", n, {y, x, z})) return;
    LAUNCH(be, "lincomb", n, lincomb_kernel, y, a, x, b, z, n);
}

/* 32 x 32 tiles through shared memory (one padding column against bank conflicts), so both the read
 * of src rows and the write of dst rows are coalesced. The tile loops depend on blockIdx only, so
 * every thread of a block reaches each __syncthreads. */
#define TILE 32
#define TILE_ROWS 8
__global__ static void transpose_kernel(float *dst, const float *src, int64_t rows, int64_t cols) {
    __shared__ float tile[TILE][TILE + 1];
    const int64_t ntr = (rows + TILE - 1) / TILE, ntc = (cols + TILE - 1) / TILE;
    for (int64_t tr = blockIdx.y; tr < ntr; tr += gridDim.y)
        for (int64_t tc = blockIdx.x; tc < ntc; tc += gridDim.x) {
            const int64_t r0 = tr * TILE, c0 = tc * TILE;
            for (int k = threadIdx.y; k < TILE; k += TILE_ROWS) {
                const int64_t r = r0 + k, cc = c0 + threadIdx.x;
                if (r < rows && cc < cols) tile[k][threadIdx.x] = src[r * cols + cc];
            }
            __syncthreads();
            for (int k = threadIdx.y; k < TILE; k += TILE_ROWS) {
                const int64_t cc = c0 + k, r = r0 + threadIdx.x;
                if (cc < cols && r < rows) dst[cc * rows + r] = tile[threadIdx.x][k];
            }
            __syncthreads();
        }
}

static void be_transpose(zaya_backend *be, float *dst, const float *src, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) {
        zaya_cuda_be_failf(be, "transpose", ZAYA_EINVAL, "bad shape %lld x %lld", (long long)rows, (long long)cols);
        return;
    }
    if (!args_ok(be, "transpose", rows * cols, {dst, src})) return;
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    const int64_t ntr = (rows + TILE - 1) / TILE, ntc = (cols + TILE - 1) / TILE;
    dim3 grid((unsigned)(ntc < 65535 ? ntc : 65535), (unsigned)(ntr < 65535 ? ntr : 65535));
    transpose_kernel<<<grid, dim3(TILE, TILE_ROWS), 0, c->stream>>>(dst, src, rows, cols);
    zaya_cuda_be_check_launch(be, "transpose");
}

__global__ static void muon_apply_kernel(float *p, const float *x, int64_t n, float decay, float neg) {
    GRID_STRIDE(k, n) p[k] = __fadd_rn(__fmul_rn(p[k], decay), __fmul_rn(neg, x[k]));
}

static void be_muon_apply(zaya_backend *be, float *p, const float *x, int64_t n, float decay, float neg) {
    if (!args_ok(be, "muon_apply", n, {p, x})) return;
    LAUNCH(be, "muon_apply", n, muon_apply_kernel, p, x, n, decay, neg);
}

/* ---- elementwise ---- */

__global__ static void add_kernel(float *y, const float *x, int64_t n) { GRID_STRIDE(i, n) y[i] = __fadd_rn(y[i], x[i]); }

static void be_add(zaya_backend *be, float *y, const float *x, int64_t n) {
    if (!args_ok(be, "add", n, {y, x})) return;
    LAUNCH(be, "add", n, add_kernel, y, x, n);
}

__global__ static void scale_kernel(float *x, float s, int64_t n) { GRID_STRIDE(i, n) x[i] = __fmul_rn(x[i], s); }

static void be_scale(zaya_backend *be, float *x, float s, int64_t n) {
    if (!args_ok(be, "scale", n, {x})) return;
    LAUNCH(be, "scale", n, scale_kernel, x, s, n);
}

__global__ static void add_bias_kernel(float *y, const float *b, int64_t total, int64_t d) {
    GRID_STRIDE(i, total) y[i] = __fadd_rn(y[i], b[i % d]);
}

static void be_add_bias(zaya_backend *be, float *y, const float *b, int64_t n, int64_t d) {
    if (n < 0 || d < 0) {
        zaya_cuda_be_failf(be, "add_bias", ZAYA_EINVAL, "bad shape %lld x %lld", (long long)n, (long long)d);
        return;
    }
    if (!args_ok(be, "add_bias", n * d, {y, b})) return;
    LAUNCH(be, "add_bias", n * d, add_bias_kernel, y, b, n * d, d);
}

/* y = a + b (as == NULL), else y = (a + ab) * as + (b + bb) * bs with the vectors over columns. */
__global__ static void merge_forward_kernel(float *y, const float *a, const float *ab, const float *as, const float *b,
                                            const float *bb, const float *bs, int64_t total, int64_t d) {
    GRID_STRIDE(i, total) {
        if (!as) {
            y[i] = __fadd_rn(a[i], b[i]);
        } else {
            const int64_t j = i % d;
            y[i] = __fadd_rn(__fmul_rn(__fadd_rn(a[i], ab[j]), as[j]), __fmul_rn(__fadd_rn(b[i], bb[j]), bs[j]));
        }
    }
}

static void be_merge_forward(zaya_backend *be, float *y, const float *a, const float *ab, const float *as,
                             const float *b, const float *bb, const float *bs, int64_t n, int64_t d) {
    if (n < 0 || d < 0) {
        zaya_cuda_be_failf(be, "merge_forward", ZAYA_EINVAL, "bad shape %lld x %lld", (long long)n, (long long)d);
        return;
    }
    if (as ? !args_ok(be, "merge_forward", n * d, {y, a, ab, as, b, bb, bs}) : !args_ok(be, "merge_forward", n * d, {y, a, b}))
        return;
    LAUNCH(be, "merge_forward", n * d, merge_forward_kernel, y, a, ab, as, b, bb, bs, n * d, d);
}

/* ---- column sums (colsum_add, merge_backward) ----
 * A functor F adds row i's contribution at column j to its K accumulators (add) and applies the
 * finished sums to its outputs (finish). Pass 1 runs one thread per (column, row chunk); with one
 * chunk it finishes at once (the CPU's exact order), otherwise pass 2 adds the chunk sums in order. */

struct colsum_f {
    enum { K = 1 };
    float *dst;
    const float *src;
    int64_t d;
    __device__ void add(float *acc, int64_t i, int64_t j) const { acc[0] = __fadd_rn(acc[0], src[i * d + j]); }
    __device__ void finish(const float *acc, int64_t j) const { dst[j] = __fadd_rn(dst[j], acc[0]); }
};

/* zaya_ops_merge_backward's column sums: s_as += g (a + ab), s_bs += g (b + bb), s_dy += g; then
 * das += s_as, dab += s_dy as, dbs += s_bs, dbb += s_dy bs. */
struct merge_cols_f {
    enum { K = 3 };
    const float *dy, *a, *ab, *as, *b, *bb, *bs;
    float *dab, *das, *dbb, *dbs;
    int64_t d;
    __device__ void add(float *acc, int64_t i, int64_t j) const {
        const float g = dy[i * d + j];
        acc[0] = __fadd_rn(acc[0], __fmul_rn(g, __fadd_rn(a[i * d + j], ab[j])));
        acc[1] = __fadd_rn(acc[1], __fmul_rn(g, __fadd_rn(b[i * d + j], bb[j])));
        acc[2] = __fadd_rn(acc[2], g);
    }
    __device__ void finish(const float *acc, int64_t j) const {
        das[j] = __fadd_rn(das[j], acc[0]);
        dab[j] = __fadd_rn(dab[j], __fmul_rn(acc[2], as[j]));
        dbs[j] = __fadd_rn(dbs[j], acc[1]);
        dbb[j] = __fadd_rn(dbb[j], __fmul_rn(acc[2], bs[j]));
    }
};

template <class F>
__global__ static void colsum_chunk_kernel(F f, int64_t n, int64_t d, int64_t rows_per_chunk, int64_t nchunks,
                                           float *partial) {
    const int64_t j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, ch = blockIdx.y;
    if (j >= d) return;
    const int64_t i0 = ch * rows_per_chunk, i1 = i0 + rows_per_chunk < n ? i0 + rows_per_chunk : n;
    float acc[F::K];
    for (int k = 0; k < F::K; k++) acc[k] = 0.0f;
    for (int64_t i = i0; i < i1; i++) f.add(acc, i, j);
    if (nchunks == 1) {
        f.finish(acc, j);
        return;
    }
    for (int k = 0; k < F::K; k++) partial[(k * nchunks + ch) * d + j] = acc[k];
}

template <class F>
__global__ static void colsum_finish_kernel(F f, int64_t d, int64_t nchunks, const float *partial) {
    GRID_STRIDE(j, d) {
        float acc[F::K];
        for (int k = 0; k < F::K; k++) {
            acc[k] = 0.0f;
            for (int64_t ch = 0; ch < nchunks; ch++) acc[k] = __fadd_rn(acc[k], partial[(k * nchunks + ch) * d + j]);
        }
        f.finish(acc, j);
    }
}

template <class F> static void colsum_run(zaya_backend *be, const char *op, const F &f, int64_t n, int64_t d) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    if (d == 0) return;
    /* The chunking is a function of (n, d) and the fixed scratch size only. */
    int64_t nchunks = (COL_THREADS + d - 1) / d;
    if (nchunks > COL_CHUNKS) nchunks = COL_CHUNKS;
    if (nchunks > n / COL_MIN_ROWS) nchunks = n / COL_MIN_ROWS;
    const int64_t cap_floats = (int64_t)c->partials_count * 2; /* the double scratch holds twice as many floats */
    if (nchunks * F::K * d > cap_floats) nchunks = cap_floats / (F::K * d);
    if (nchunks < 1) nchunks = 1;
    const int64_t rows_per_chunk = nchunks == 1 ? n : (n + nchunks - 1) / nchunks;
    if (nchunks > 1) nchunks = (n + rows_per_chunk - 1) / rows_per_chunk; /* no empty chunk */
    const int threads = c->block;
    const int64_t bx = (d + threads - 1) / threads;
    if (bx > 0x7fffffff) {
        zaya_cuda_be_failf(be, op, ZAYA_EUNSUPPORTED, "%lld columns", (long long)d);
        return;
    }
    float *partial = (float *)c->partials;
    colsum_chunk_kernel<F><<<dim3((unsigned)bx, (unsigned)nchunks), threads, 0, c->stream>>>(f, n, d, rows_per_chunk,
                                                                                           nchunks, partial);
    zaya_cuda_be_check_launch(be, op);
    if (nchunks > 1) {
        colsum_finish_kernel<F><<<zaya_cuda_be_blocks(be, d, threads), threads, 0, c->stream>>>(f, d, nchunks, partial);
        zaya_cuda_be_check_launch(be, op);
    }
}

static void be_colsum_add(zaya_backend *be, float *dst, const float *src, int64_t n, int64_t d) {
    if (n < 0 || d < 0) {
        zaya_cuda_be_failf(be, "colsum_add", ZAYA_EINVAL, "bad shape %lld x %lld", (long long)n, (long long)d);
        return;
    }
    if (d == 0) return;
    if (!dst || (n > 0 && !src)) {
        zaya_cuda_be_failf(be, "colsum_add", ZAYA_EINVAL, "NULL operand (%lld x %lld)", (long long)n, (long long)d);
        return;
    }
    colsum_f f = {dst, src, d};
    colsum_run(be, "colsum_add", f, n, d);
}

__global__ static void merge_backward_kernel(float *da, float *db, int accumulate_b, const float *dy, const float *as,
                                             const float *bs, int64_t total, int64_t d) {
    GRID_STRIDE(i, total) {
        const float base = accumulate_b ? db[i] : 0.0f;
        if (!as) {
            da[i] = dy[i];
            db[i] = __fadd_rn(base, dy[i]);
        } else {
            const int64_t j = i % d;
            da[i] = __fmul_rn(dy[i], as[j]);
            db[i] = __fadd_rn(base, __fmul_rn(dy[i], bs[j]));
        }
    }
}

static void be_merge_backward(zaya_backend *be, float *da, float *db, int accumulate_b, const float *dy, const float *a,
                              const float *ab, const float *as, const float *b, const float *bb, const float *bs,
                              float *dab, float *das, float *dbb, float *dbs, int64_t n, int64_t d) {
    const char *op = "merge_backward";
    if (n < 0 || d < 0) {
        zaya_cuda_be_failf(be, op, ZAYA_EINVAL, "bad shape %lld x %lld", (long long)n, (long long)d);
        return;
    }
    if (d == 0) return;
    if (as) {
        /* The parameter gradients are += even for n == 0 (the CPU adds its zero sums). */
        if (!ab || !bb || !bs || !dab || !das || !dbb || !dbs || (n > 0 && (!da || !db || !dy || !a || !b))) {
            zaya_cuda_be_failf(be, op, ZAYA_EINVAL, "NULL operand (%lld x %lld)", (long long)n, (long long)d);
            return;
        }
        if (n > 0) LAUNCH(be, op, n * d, merge_backward_kernel, da, db, accumulate_b, dy, as, bs, n * d, d);
        merge_cols_f f = {dy, a, ab, as, b, bb, bs, dab, das, dbb, dbs, d};
        colsum_run(be, op, f, n, d);
        return;
    }
    if (!args_ok(be, op, n * d, {da, db, dy})) return;
    LAUNCH(be, op, n * d, merge_backward_kernel, da, db, accumulate_b, dy, (const float *)NULL, (const float *)NULL,
           n * d, d);
}

extern "C" void zaya_cuda_be_install_optim(zaya_backend *be) {
    be->adamw = be_adamw;
    be->muon_momentum = be_muon_momentum;
    be->sqnorm = be_sqnorm;
    be->normalize_batched = be_normalize_batched;
    be->lincomb = be_lincomb;
    be->transpose = be_transpose;
    be->muon_apply = be_muon_apply;
    be->add = be_add;
    be->scale = be_scale;
    be->add_bias = be_add_bias;
    be->colsum_add = be_colsum_add;
    be->merge_forward = be_merge_forward;
    be->merge_backward = be_merge_backward;
}

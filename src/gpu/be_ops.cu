// The CUDA backend's norms, activations, embedding, router, experts and loss (include/zaya/backend.h):
// each kernel computes what the CPU function named in backend.h computes, element by element in the
// same float operation order. This file is compiled with --fmad=false (CMakeLists.txt), as the CPU
// code is compiled without contraction (ISO C17: -ffp-contract=off): an explicit fmaf() is the only
// fused operation on either side, so elementwise results are the CPU's bits. zaya_vexpf and
// zaya_verfcf of src/kernels/kernel_util.h are repeated below operation for operation.
//
// Reductions. A row reduction (RMSNorm, softmax, cross-entropy, dot products) is one block per row:
// each thread sums a strided slice of the row serially, then a fixed tree over the block combines the
// partials (blockDim a power of two chosen from the row width alone; no warp-synchronous step, so
// nothing depends on the warp width). Column sums (dw of RMSNorm, the input affine's dbias and
// dscale) give each column COL_CHUNKS fixed row ranges, summed in row order, then added in chunk
// order. The embedding's scatter-add walks each id's tokens in token order. No floating-point
// atomics: every result is a function of the shapes and inputs alone, the same bits run to run. The
// rounding differs from the CPU's serial (or 16-lane) sums: about 1e-7 relative.
//
// Nothing here allocates; no operation needs reserve()d scratch. Indices are 64-bit throughout and
// every kernel loops grid-stride, so any grid the launcher picks is correct.
#include <math.h>
#include <stdint.h>

#include "gpu/be_cuda.h"

#define COL_TILE 32   // columns per block of a column sum (blockDim.x)
#define COL_CHUNKS 32 // row chunks per column (blockDim.y): 1024 threads per block
#define MAX_THREADS 1024

// ---- the CPU's vectorizable exp / erfc, operation for operation (src/kernels/kernel_util.h) ----

__device__ static inline float vexpf(float x) {
    const float log2e = 1.44269504088896341f;
    const float ln2_hi = 0.693145751953125f;
    const float ln2_lo = 1.42860676533018704e-06f;
    const float round_magic = 12582912.0f;
    float xc = x > -104.0f ? x : -104.0f;
    xc = xc < 89.0f ? xc : 89.0f;
    float t = fmaf(xc, log2e, round_magic);
    float n = t - round_magic;
    float r = fmaf(-n, ln2_hi, xc);
    r = fmaf(-n, ln2_lo, r);
    float p = 1.382942079e-03f;
    p = fmaf(p, r, 8.374771103e-03f);
    p = fmaf(p, r, 4.166835919e-02f);
    p = fmaf(p, r, 1.666642129e-01f);
    p = fmaf(p, r, 4.999999106e-01f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    uint32_t u = __float_as_uint(t);
    u = u - 0x4b400000u + 150u;
    uint32_t ua = u >> 1, ub = u - ua;
    float e = p * __uint_as_float((ua + 52u) << 23) * __uint_as_float((ub + 52u) << 23);
    return x == x ? e : x;
}

__device__ static inline float vsigmoidf(float x) { return 1.0f / (1.0f + vexpf(-x)); }

__device__ static inline float verfcf(float x) {
    const float z = fabsf(x), t = 1.0f / fmaf(0.5f, z, 1.0f);
    float p = 0.17087277f;
    p = fmaf(p, t, -0.82215223f);
    p = fmaf(p, t, 1.48851587f);
    p = fmaf(p, t, -1.13520398f);
    p = fmaf(p, t, 0.27886807f);
    p = fmaf(p, t, -0.18628806f);
    p = fmaf(p, t, 0.09678418f);
    p = fmaf(p, t, 0.37409196f);
    p = fmaf(p, t, 1.00002368f);
    p = fmaf(p, t, -1.26551223f);
    const float r = t * vexpf(fmaf(-z, z, p));
    return x >= 0.0f ? r : (x < 0.0f ? 2.0f - r : x);
}

// ---- block reductions: a fixed tree over blockDim.x (a power of two); every thread gets the result.
// Called by all threads of the block (uniform control flow); sh holds blockDim.x values. ----

template <typename T> __device__ static T block_sum(T v, T *sh) {
    sh[threadIdx.x] = v;
    for (unsigned off = blockDim.x / 2; off > 0; off /= 2) {
        __syncthreads();
        if (threadIdx.x < off) sh[threadIdx.x] += sh[threadIdx.x + off];
    }
    __syncthreads();
    T r = sh[0];
    __syncthreads(); // sh is free again for the caller's next reduction
    return r;
}

// The CPU's `m = x > m ? x : m`: a NaN never replaces the running maximum.
__device__ static float block_max(float v, float *sh) {
    sh[threadIdx.x] = v;
    for (unsigned off = blockDim.x / 2; off > 0; off /= 2) {
        __syncthreads();
        if (threadIdx.x < off) {
            float o = sh[threadIdx.x + off];
            sh[threadIdx.x] = o > sh[threadIdx.x] ? o : sh[threadIdx.x];
        }
    }
    __syncthreads();
    float r = sh[0];
    __syncthreads();
    return r;
}

// ---- launch helpers ----

// Threads per block of a row reduction over rows of d elements: the smallest power of two >= d in
// [32, cap] (a function of the shape only, so the reduction tree is too).
static int row_threads(int64_t d, int cap) {
    int t = 32;
    while (t < cap && t < d) t *= 2;
    return t;
}

static int ew_threads(zaya_backend *be) {
    int b = zaya_cuda_be_of(be)->block;
    return b > 0 && b <= MAX_THREADS ? b : 256;
}

#define GRID_STRIDE(i, n)                                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)
#define ROW_STRIDE(r, n) for (int64_t r = blockIdx.x; r < (n); r += gridDim.x)

// ---- column sums: dst[j] += sum_i term(i, j), COL_CHUNKS fixed row ranges per column ----

// blockDim (COL_TILE, COL_CHUNKS): thread (x, y) sums column tile*COL_TILE + x over rows
// [n y / COL_CHUNKS, n (y+1) / COL_CHUNKS) in row order; thread (x, 0) then adds the chunks' sums in
// chunk order and adds the total into dst.
template <typename Term>
__global__ static void __launch_bounds__(COL_TILE *COL_CHUNKS)
colsum_kernel(float *dst, Term term, int64_t n, int64_t d) {
    __shared__ float part[COL_CHUNKS][COL_TILE + 1];
    const int64_t ntiles = (d + COL_TILE - 1) / COL_TILE;
    const int64_t r0 = n * threadIdx.y / COL_CHUNKS, r1 = n * (threadIdx.y + 1) / COL_CHUNKS;
    for (int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
        const int64_t j = tile * COL_TILE + threadIdx.x;
        float acc = 0.0f;
        if (j < d)
            for (int64_t i = r0; i < r1; i++) acc += term(i, j);
        part[threadIdx.y][threadIdx.x] = acc;
        __syncthreads();
        if (threadIdx.y == 0 && j < d) {
            float s = part[0][threadIdx.x];
            for (int c = 1; c < COL_CHUNKS; c++) s += part[c][threadIdx.x];
            dst[j] += s;
        }
        __syncthreads(); // part is rewritten by the next tile
    }
}

template <typename Term>
static void colsum(zaya_backend *be, const char *op, float *dst, Term term, int64_t n, int64_t d) {
    if (n <= 0 || d <= 0) return;
    dim3 block(COL_TILE, COL_CHUNKS);
    colsum_kernel<<<zaya_cuda_be_blocks(be, (d + COL_TILE - 1) / COL_TILE, 1), block, 0, zaya_cuda_be_of(be)->stream>>>(
        dst, term, n, d);
    zaya_cuda_be_check_launch(be, op);
}

// ---- RMSNorm (src/kernels/rmsnorm.c) ----

__global__ static void __launch_bounds__(MAX_THREADS)
rmsnorm_forward_kernel(float *y, float *rstd, const float *x, const float *w, int64_t n, int64_t d, float eps) {
    __shared__ float sh[MAX_THREADS];
    ROW_STRIDE(r, n) {
        const float *xr = x + r * d;
        float *yr = y + r * d;
        float ss = 0.0f;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += xr[i] * xr[i];
        ss = block_sum(ss, sh);
        const float rs = 1.0f / sqrtf(ss / (float)d + eps);
        if (threadIdx.x == 0) rstd[r] = rs;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = xr[i] * rs * w[i];
    }
}

static void be_rmsnorm_forward(zaya_backend *be, float *y, float *rstd, const float *x, const float *w, int64_t n,
                               int64_t d, float eps) {
    if (n <= 0) return;
    rmsnorm_forward_kernel<<<zaya_cuda_be_blocks(be, n, 1), row_threads(d, 256), 0, zaya_cuda_be_of(be)->stream>>>(
        y, rstd, x, w, n, d, eps);
    zaya_cuda_be_check_launch(be, "rmsnorm_forward");
}

// dx_j = rstd (w_j dy_j - x_j c), c = rstd^2 mean_i(w_i dy_i x_i) (rmsnorm.c's dx_row)
__global__ static void __launch_bounds__(MAX_THREADS)
rmsnorm_dx_kernel(float *dx, const float *dy, const float *x, const float *w, const float *rstd, int64_t n, int64_t d) {
    __shared__ float sh[MAX_THREADS];
    ROW_STRIDE(r, n) {
        const float *xr = x + r * d, *dyr = dy + r * d;
        float *dxr = dx + r * d;
        const float rs = rstd[r];
        float dot = 0.0f;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dot += w[i] * dyr[i] * xr[i];
        dot = block_sum(dot, sh);
        const float c = rs * rs * dot / (float)d;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) dxr[i] = rs * (w[i] * dyr[i] - xr[i] * c);
    }
}

struct rms_dw_term { // dy_ij x_ij rstd_i
    const float *dy, *x, *rstd;
    int64_t d;
    __device__ float operator()(int64_t i, int64_t j) const { return dy[i * d + j] * x[i * d + j] * rstd[i]; }
};

static void be_rmsnorm_backward(zaya_backend *be, float *dx, float *dw, const float *dy, const float *x,
                                const float *w, const float *rstd, int64_t n, int64_t d) {
    if (n <= 0 || d <= 0) return;
    rmsnorm_dx_kernel<<<zaya_cuda_be_blocks(be, n, 1), row_threads(d, 256), 0, zaya_cuda_be_of(be)->stream>>>(
        dx, dy, x, w, rstd, n, d);
    zaya_cuda_be_check_launch(be, "rmsnorm_backward");
    colsum(be, "rmsnorm_backward", dw, rms_dw_term{dy, x, rstd, d}, n, d);
}

// ---- activations (src/kernels/activations.c) ----

__global__ static void gelu_forward_kernel(float *y, const float *x, int64_t n) {
    const float inv_sqrt2 = 0.70710678118654752f;
    GRID_STRIDE(i, n) y[i] = 0.5f * x[i] * verfcf(-x[i] * inv_sqrt2);
}

__global__ static void gelu_backward_kernel(float *dx, const float *dy, const float *x, int64_t n) {
    const float inv_sqrt2 = 0.70710678118654752f, inv_sqrt2pi = 0.39894228040143268f;
    GRID_STRIDE(i, n) {
        const float v = x[i];
        const float cdf = 0.5f * verfcf(-v * inv_sqrt2);
        const float pdf = inv_sqrt2pi * vexpf(-0.5f * v * v);
        dx[i] = dy[i] * (cdf + v * pdf);
    }
}

// gu rows are [gate | up], 2d wide
__global__ static void swiglu_forward_kernel(float *y, const float *gu, int64_t n, int64_t d) {
    GRID_STRIDE(k, n * d) {
        const int64_t r = k / d, i = k - r * d;
        const float g = gu[r * 2 * d + i], u = gu[r * 2 * d + d + i];
        y[k] = g * u / (1.0f + vexpf(-g));
    }
}

__global__ static void swiglu_backward_kernel(float *dgu, const float *dy, const float *gu, int64_t n, int64_t d) {
    GRID_STRIDE(k, n * d) {
        const int64_t r = k / d, i = k - r * d;
        const float g = gu[r * 2 * d + i], u = gu[r * 2 * d + d + i], dyk = dy[k];
        const float s = vsigmoidf(g);
        dgu[r * 2 * d + d + i] = dyk * g * s;
        dgu[r * 2 * d + i] = dyk * u * s * (1.0f + g * (1.0f - s));
    }
}

static void be_gelu_forward(zaya_backend *be, float *y, const float *x, int64_t n) {
    if (n <= 0) return;
    const int t = ew_threads(be);
    gelu_forward_kernel<<<zaya_cuda_be_blocks(be, n, t), t, 0, zaya_cuda_be_of(be)->stream>>>(y, x, n);
    zaya_cuda_be_check_launch(be, "gelu_forward");
}

static void be_gelu_backward(zaya_backend *be, float *dx, const float *dy, const float *x, int64_t n) {
    if (n <= 0) return;
    const int t = ew_threads(be);
    gelu_backward_kernel<<<zaya_cuda_be_blocks(be, n, t), t, 0, zaya_cuda_be_of(be)->stream>>>(dx, dy, x, n);
    zaya_cuda_be_check_launch(be, "gelu_backward");
}

static void be_swiglu_forward(zaya_backend *be, float *y, const float *gu, int64_t n, int64_t d) {
    if (n <= 0 || d <= 0) return;
    const int t = ew_threads(be);
    swiglu_forward_kernel<<<zaya_cuda_be_blocks(be, n * d, t), t, 0, zaya_cuda_be_of(be)->stream>>>(y, gu, n, d);
    zaya_cuda_be_check_launch(be, "swiglu_forward");
}

static void be_swiglu_backward(zaya_backend *be, float *dgu, const float *dy, const float *gu, int64_t n, int64_t d) {
    if (n <= 0 || d <= 0) return;
    const int t = ew_threads(be);
    swiglu_backward_kernel<<<zaya_cuda_be_blocks(be, n * d, t), t, 0, zaya_cuda_be_of(be)->stream>>>(dgu, dy, gu, n,
                                                                                                      d);
    zaya_cuda_be_check_launch(be, "swiglu_backward");
}

// ---- softmax (src/kernels/softmax.c) ----

__global__ static void __launch_bounds__(MAX_THREADS)
softmax_forward_kernel(float *y, int64_t ldy, const float *x, int64_t n, int64_t d) {
    __shared__ float sh[MAX_THREADS];
    ROW_STRIDE(r, n) {
        const float *xr = x + r * d;
        float *yr = y + r * ldy;
        float m = -INFINITY;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) m = xr[i] > m ? xr[i] : m;
        m = block_max(m, sh);
        if (m == -INFINITY) m = 0.0f; // a row of -inf: 0/0 = NaN flags it, as on the CPU
        float sum = 0.0f;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
            const float e = vexpf(xr[i] - m);
            yr[i] = e;
            sum += e;
        }
        sum = block_sum(sum, sh);
        const float inv = 1.0f / sum;
        for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] *= inv; // the thread's own writes
        for (int64_t i = d + threadIdx.x; i < ldy; i += blockDim.x) yr[i] = 0.0f; // columns past d (ld rows)
    }
}

static void be_softmax_forward(zaya_backend *be, float *y, const float *x, int64_t n, int64_t d) {
    if (n <= 0) return;
    softmax_forward_kernel<<<zaya_cuda_be_blocks(be, n, 1), row_threads(d, 256), 0, zaya_cuda_be_of(be)->stream>>>(
        y, d, x, n, d);
    zaya_cuda_be_check_launch(be, "softmax_forward");
}

static void be_softmax_ld_forward(zaya_backend *be, float *y, int64_t ldy, const float *x, int64_t n, int64_t d) {
    if (n <= 0) return;
    softmax_forward_kernel<<<zaya_cuda_be_blocks(be, n, 1), row_threads(d, 256), 0, zaya_cuda_be_of(be)->stream>>>(
        y, ldy, x, n, d);
    zaya_cuda_be_check_launch(be, "softmax_ld_forward");
}

// ---- embedding with the input affine x = (table[ids] + bias) * scale (src/model/forward.c) ----

__global__ static void embed_forward_kernel(float *x, const float *table, const int32_t *ids, const float *bias,
                                            const float *scale, int64_t n, int64_t d) {
    GRID_STRIDE(k, n * d) {
        const int64_t i = k / d, j = k - i * d;
        x[k] = (table[(int64_t)ids[i] * d + j] + bias[j]) * scale[j];
    }
}

static void be_embed_forward(zaya_backend *be, float *x, const float *table, const int32_t *ids, const float *bias,
                             const float *scale, int64_t n, int64_t d) {
    if (n <= 0 || d <= 0) return;
    const int t = ew_threads(be);
    embed_forward_kernel<<<zaya_cuda_be_blocks(be, n * d, t), t, 0, zaya_cuda_be_of(be)->stream>>>(x, table, ids, bias,
                                                                                                    scale, n, d);
    zaya_cuda_be_check_launch(be, "embed_forward");
}

__global__ static void embed_de_kernel(float *de, const float *dx, const float *scale, int64_t n, int64_t d) {
    GRID_STRIDE(k, n * d) {
        const int64_t i = k / d, j = k - i * d;
        de[k] = dx[k] * scale[j];
    }
}

struct rows_term { // src_ij
    const float *src;
    int64_t d;
    __device__ float operator()(int64_t i, int64_t j) const { return src[i * d + j]; }
};

struct embed_dscale_term { // dx_ij (table[ids_i]_j + bias_j)
    const float *dx, *table, *bias;
    const int32_t *ids;
    int64_t d;
    __device__ float operator()(int64_t i, int64_t j) const {
        return dx[i * d + j] * (table[(int64_t)ids[i] * d + j] + bias[j]);
    }
};

// One block per id (segment s of sorted): dtable[id] += de[t] for its tokens t in token order, the
// CPU's zaya_embedding_backward order (each add rounds into the row as there).
__global__ static void embed_scatter_kernel(float *dtable, const float *de, const int32_t *ids, const int32_t *sorted,
                                            const int32_t *seg, int64_t nseg, int64_t d) {
    ROW_STRIDE(s, nseg) {
        const int64_t a = seg[s], b = seg[s + 1];
        if (a >= b) continue;
        float *dst = dtable + (int64_t)ids[sorted[a]] * d;
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
            float acc = dst[j];
            for (int64_t t = a; t < b; t++) acc += de[(int64_t)sorted[t] * d + j];
            dst[j] = acc;
        }
    }
}

static void be_embed_backward(zaya_backend *be, float *dtable, float *dbias, float *dscale, float *de, const float *dx,
                              const float *table, const int32_t *ids, const float *bias, const float *scale,
                              const int32_t *sorted, const int32_t *seg, int64_t nseg, int64_t n, int64_t d) {
    if (n <= 0 || d <= 0) return;
    gpuStream_t st = zaya_cuda_be_of(be)->stream;
    const int t = ew_threads(be);
    embed_de_kernel<<<zaya_cuda_be_blocks(be, n * d, t), t, 0, st>>>(de, dx, scale, n, d);
    zaya_cuda_be_check_launch(be, "embed_backward");
    colsum(be, "embed_backward", dbias, rows_term{de, d}, n, d);
    colsum(be, "embed_backward", dscale, embed_dscale_term{dx, table, bias, ids, d}, n, d);
    if (nseg <= 0) return;
    embed_scatter_kernel<<<zaya_cuda_be_blocks(be, nseg, 1), row_threads(d, 256), 0, st>>>(dtable, de, ids, sorted,
                                                                                             seg, nseg, d);
    zaya_cuda_be_check_launch(be, "embed_backward");
}

// ---- router (src/model/moe.c, src/kernels/top1.c) ----

// r += g * r_prev
__global__ static void eda_forward_kernel(float *r, const float *g, const float *r_prev, int64_t n, int64_t R) {
    GRID_STRIDE(k, n * R) {
        const int64_t j = k % R;
        r[k] += g[j] * r_prev[k];
    }
}

__global__ static void eda_backward_kernel(float *prod, float *dr_prev, const float *dr, const float *r_prev,
                                           const float *g, int64_t n, int64_t R) {
    GRID_STRIDE(k, n * R) {
        const int64_t j = k % R;
        prod[k] = dr[k] * r_prev[k];
        dr_prev[k] = dr[k] * g[j];
    }
}

static void be_eda_forward(zaya_backend *be, float *r, const float *g, const float *r_prev, int64_t n, int64_t R) {
    if (n <= 0 || R <= 0) return;
    const int t = ew_threads(be);
    eda_forward_kernel<<<zaya_cuda_be_blocks(be, n * R, t), t, 0, zaya_cuda_be_of(be)->stream>>>(r, g, r_prev, n, R);
    zaya_cuda_be_check_launch(be, "eda_forward");
}

static void be_eda_backward(zaya_backend *be, float *prod, float *dr_prev, const float *dr, const float *r_prev,
                            const float *g, int64_t n, int64_t R) {
    if (n <= 0 || R <= 0) return;
    const int t = ew_threads(be);
    eda_backward_kernel<<<zaya_cuda_be_blocks(be, n * R, t), t, 0, zaya_cuda_be_of(be)->stream>>>(prod, dr_prev, dr,
                                                                                                   r_prev, g, n, R);
    zaya_cuda_be_check_launch(be, "eda_backward");
}

// argmax_j (p[j] + bias[j]) with a strict '>' (ties: the lowest index), top1.c's select_biased
__device__ static int64_t select_biased(const float *p, const float *bias, int64_t e) {
    int64_t best = 0;
    float best_v = p[0] + (bias ? bias[0] : 0.0f);
    for (int64_t j = 1; j < e; j++) {
        const float v = p[j] + (bias ? bias[j] : 0.0f);
        if (v > best_v) {
            best_v = v;
            best = j;
        }
    }
    return best;
}

__global__ static void top1_kernel(int32_t *idx, float *gate, const float *probs, int64_t ld, const float *bias,
                                   int64_t n, int64_t e) {
    GRID_STRIDE(r, n) {
        const int64_t best = select_biased(probs + r * ld, bias, e);
        idx[r] = (int32_t)best;
        gate[r] = probs[r * ld + best];
    }
}

// Integer counts: the atomic adds are exact, so their order does not matter.
__global__ static void top1_count_kernel(int64_t *counts, const float *probs, int64_t ld, const float *bias, int64_t n,
                                         int64_t e) {
    GRID_STRIDE(r, n) atomicAdd((unsigned long long *)&counts[select_biased(probs + r * ld, bias, e)], 1ull);
}

static void be_top1(zaya_backend *be, int32_t *idx, float *gate, const float *probs, int64_t ld, const float *bias,
                    int64_t n, int64_t e) {
    if (n <= 0 || e <= 0) return;
    const int t = ew_threads(be);
    top1_kernel<<<zaya_cuda_be_blocks(be, n, t), t, 0, zaya_cuda_be_of(be)->stream>>>(idx, gate, probs, ld, bias, n, e);
    zaya_cuda_be_check_launch(be, "top1");
}

static void be_top1_count(zaya_backend *be, int64_t *counts, const float *probs, int64_t ld, const float *bias,
                          int64_t n, int64_t e) {
    if (e <= 0) return;
    gpuStream_t st = zaya_cuda_be_of(be)->stream;
    gpuError_t err = gpuMemsetAsync(counts, 0, sizeof(int64_t) * (size_t)e, st);
    if (err != gpuSuccess) {
        zaya_cuda_be_fail(be, "top1_count", err);
        return;
    }
    if (n <= 0) return;
    const int t = ew_threads(be);
    top1_count_kernel<<<zaya_cuda_be_blocks(be, n, t), t, 0, st>>>(counts, probs, ld, bias, n, e);
    zaya_cuda_be_check_launch(be, "top1_count");
}

// route_stats, pass 1: one block per column, psum[e] = sum_i p[i, e] in double (thread-strided rows,
// then the tree).
#define STATS_THREADS 256
__global__ static void __launch_bounds__(STATS_THREADS)
route_psum_kernel(double *psum, const float *probs, int64_t ld, int64_t n, int64_t E) {
    __shared__ double sh[STATS_THREADS];
    ROW_STRIDE(e, E) {
        double acc = 0.0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += (double)probs[i * ld + e];
        acc = block_sum(acc, sh);
        if (threadIdx.x == 0) psum[e] = acc;
    }
}

// Pass 2, one block: spread = sum_i sum_e (p[i, e] - mean[e])^2 with mean[e] = psum[e] / n (score_spread's
// formulas), the columns taken MEAN_COLS at a time with their means in shared memory.
#define MEAN_COLS 1024
__global__ static void __launch_bounds__(MAX_THREADS)
route_spread_kernel(double *spread, const double *psum, const float *probs, int64_t ld, int64_t n, int64_t E) {
    __shared__ double mean[MEAN_COLS];
    __shared__ double sh[MAX_THREADS];
    const double nn = (double)(n > 0 ? n : 1);
    double acc = 0.0;
    for (int64_t e0 = 0; e0 < E; e0 += MEAN_COLS) {
        const int64_t ne = E - e0 < MEAN_COLS ? E - e0 : MEAN_COLS;
        for (int64_t e = threadIdx.x; e < ne; e += blockDim.x) mean[e] = psum[e0 + e] / nn;
        __syncthreads();
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            for (int64_t e = 0; e < ne; e++) {
                const double dd = (double)probs[i * ld + e0 + e] - mean[e];
                acc += dd * dd;
            }
        __syncthreads(); // mean is rewritten by the next column range
    }
    acc = block_sum(acc, sh);
    if (threadIdx.x == 0) spread[0] = acc;
}

static void be_route_stats(zaya_backend *be, double *psum, double *spread, const float *probs, int64_t ld, int64_t n,
                           int64_t E) {
    gpuStream_t st = zaya_cuda_be_of(be)->stream;
    if (E > 0) {
        route_psum_kernel<<<zaya_cuda_be_blocks(be, E, 1), STATS_THREADS, 0, st>>>(psum, probs, ld, n, E);
        zaya_cuda_be_check_launch(be, "route_stats");
    }
    route_spread_kernel<<<1, MAX_THREADS, 0, st>>>(spread, psum, probs, ld, n, E);
    zaya_cuda_be_check_launch(be, "route_stats");
}

// dl[i, e] = p[i,e] * dgate[i] * ([e == idx[i]] - p[i, idx[i]])
__global__ static void router_dlogits_kernel(float *dl, const float *probs, int64_t ld, const float *dgate,
                                             const int32_t *idx, int64_t n, int64_t ncols) {
    GRID_STRIDE(k, n * ncols) {
        const int64_t i = k / ncols, e = k - i * ncols;
        const float *p = probs + i * ld;
        const float g = dgate[i], pk = p[idx[i]];
        dl[k] = p[e] * g * ((e == idx[i] ? 1.0f : 0.0f) - pk);
    }
}

static void be_router_dlogits(zaya_backend *be, float *dl, const float *probs, int64_t ld, const float *dgate,
                              const int32_t *idx, int64_t n, int64_t ncols) {
    if (n <= 0 || ncols <= 0) return;
    const int t = ew_threads(be);
    router_dlogits_kernel<<<zaya_cuda_be_blocks(be, n * ncols, t), t, 0, zaya_cuda_be_of(be)->stream>>>(
        dl, probs, ld, dgate, idx, n, ncols);
    zaya_cuda_be_check_launch(be, "router_dlogits");
}

// ---- experts: dispatch and combine (src/model/moe.c) ----

__global__ static void gather_rows_kernel(float *dst, const float *src, const int32_t *perm, int64_t n, int64_t d) {
    GRID_STRIDE(k, n * d) {
        const int64_t r = k / d, j = k - r * d;
        dst[k] = src[(int64_t)perm[r] * d + j];
    }
}

static void be_gather_rows(zaya_backend *be, float *dst, const float *src, const int32_t *perm, int64_t n, int64_t d) {
    if (n <= 0 || d <= 0) return;
    const int t = ew_threads(be);
    gather_rows_kernel<<<zaya_cuda_be_blocks(be, n * d, t), t, 0, zaya_cuda_be_of(be)->stream>>>(dst, src, perm, n, d);
    zaya_cuda_be_check_launch(be, "gather_rows");
}

// m[i] = g_i * (routed ? ye[row_of[i]] : z[i]); a skipped token's g is 0 unless identity
__global__ static void moe_combine_forward_kernel(float *m, const float *ye, const float *z, const int32_t *idx,
                                                  const float *gate, const int32_t *row_of, int64_t n, int64_t d,
                                                  int64_t E, int identity) {
    GRID_STRIDE(k, n * d) {
        const int64_t i = k / d, j = k - i * d;
        float g = gate[i];
        const float *src = idx[i] < E ? ye + (int64_t)row_of[i] * d : z + i * d;
        if (idx[i] == E && !identity) g = 0.0f;
        m[k] = g * src[j];
    }
}

static void be_moe_combine_forward(zaya_backend *be, float *m, const float *ye, const float *z, const int32_t *idx,
                                   const float *gate, const int32_t *row_of, int64_t n, int64_t d, int64_t E,
                                   int identity) {
    if (n <= 0 || d <= 0) return;
    const int t = ew_threads(be);
    moe_combine_forward_kernel<<<zaya_cuda_be_blocks(be, n * d, t), t, 0, zaya_cuda_be_of(be)->stream>>>(
        m, ye, z, idx, gate, row_of, n, d, E, identity);
    zaya_cuda_be_check_launch(be, "moe_combine_forward");
}

// One block per token; the branch depends on the token only, so each block reduces uniformly.
__global__ static void __launch_bounds__(MAX_THREADS)
moe_combine_backward_kernel(float *dye, float *dz, float *dgate, const float *dm, const float *ye, const float *z,
                            const int32_t *idx, const float *gate, const int32_t *row_of, int64_t n, int64_t d,
                            int64_t E, int identity) {
    __shared__ float sh[MAX_THREADS];
    ROW_STRIDE(i, n) {
        const float *dmi = dm + i * d;
        const float g = gate[i];
        if (idx[i] < E || identity) {
            const int64_t row = idx[i] < E ? (int64_t)row_of[i] : i;
            const float *src = (idx[i] < E ? ye : z) + row * d;
            float *dst = (idx[i] < E ? dye : dz) + row * d;
            float s = 0.0f;
            for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
                dst[j] = g * dmi[j];
                s += dmi[j] * src[j];
            }
            s = block_sum(s, sh);
            if (threadIdx.x == 0) dgate[i] = s;
        } else {
            for (int64_t j = threadIdx.x; j < d; j += blockDim.x) dz[i * d + j] = 0.0f;
            if (threadIdx.x == 0) dgate[i] = 0.0f;
        }
    }
}

static void be_moe_combine_backward(zaya_backend *be, float *dye, float *dz, float *dgate, const float *dm,
                                    const float *ye, const float *z, const int32_t *idx, const float *gate,
                                    const int32_t *row_of, int64_t n, int64_t d, int64_t E, int identity) {
    if (n <= 0) return;
    moe_combine_backward_kernel<<<zaya_cuda_be_blocks(be, n, 1), row_threads(d, 256), 0,
                                  zaya_cuda_be_of(be)->stream>>>(dye, dz, dgate, dm, ye, z, idx, gate, row_of, n, d,
                                                                 E, identity);
    zaya_cuda_be_check_launch(be, "moe_combine_backward");
}

__global__ static void scatter_rows_kernel(float *dz, const float *dxe, const int32_t *idx, const int32_t *row_of,
                                           int64_t n, int64_t d, int64_t E) {
    GRID_STRIDE(k, n * d) {
        const int64_t i = k / d, j = k - i * d;
        if (idx[i] < E) dz[k] = dxe[(int64_t)row_of[i] * d + j];
    }
}

static void be_scatter_rows(zaya_backend *be, float *dz, const float *dxe, const int32_t *idx, const int32_t *row_of,
                            int64_t n, int64_t d, int64_t E) {
    if (n <= 0 || d <= 0) return;
    const int t = ew_threads(be);
    scatter_rows_kernel<<<zaya_cuda_be_blocks(be, n * d, t), t, 0, zaya_cuda_be_of(be)->stream>>>(dz, dxe, idx, row_of,
                                                                                                   n, d, E);
    zaya_cuda_be_check_launch(be, "scatter_rows");
}

// ---- loss (src/kernels/xent.c) ----

// One block per row, three sweeps: the max, the sum of e_i = exp(x_i - m), then (with a gradient)
// x_i = e_i * (grad_scale / S), recomputing e_i (the same bits as the CPU's stored e_i, one write
// instead of two), and grad_scale subtracted at the target. x[target] is read before any write.
__global__ static void __launch_bounds__(MAX_THREADS)
xent_kernel(float *logits, float *losses, const int32_t *targets, int64_t n, int64_t V, float grad_scale) {
    __shared__ float sh[MAX_THREADS];
    const int write_grad = grad_scale != 0.0f;
    ROW_STRIDE(r, n) {
        float *x = logits + r * V;
        const int64_t tgt = targets[r];
        if (tgt < 0) {
            if (threadIdx.x == 0) losses[r] = 0.0f;
            if (write_grad)
                for (int64_t i = threadIdx.x; i < V; i += blockDim.x) x[i] = 0.0f;
            continue;
        }
        const float xt = x[tgt];
        float m = -INFINITY;
        for (int64_t i = threadIdx.x; i < V; i += blockDim.x) m = x[i] > m ? x[i] : m;
        m = block_max(m, sh);
        float sum = 0.0f;
        for (int64_t i = threadIdx.x; i < V; i += blockDim.x) sum += vexpf(x[i] - m);
        sum = block_sum(sum, sh); // its barriers also order every read of x[tgt] before the writes
        if (write_grad) {
            const float scale = grad_scale / sum;
            for (int64_t i = threadIdx.x; i < V; i += blockDim.x) {
                float v = vexpf(x[i] - m) * scale;
                if (i == tgt) v -= grad_scale;
                x[i] = v;
            }
        }
        if (threadIdx.x == 0) losses[r] = (float)((double)m + log((double)sum) - (double)xt);
    }
}

static void be_xent(zaya_backend *be, float *logits, float *losses, const int32_t *targets, int64_t n, int64_t V,
                    float grad_scale) {
    if (n <= 0) return;
    xent_kernel<<<zaya_cuda_be_blocks(be, n, 1), row_threads(V, MAX_THREADS), 0, zaya_cuda_be_of(be)->stream>>>(
        logits, losses, targets, n, V, grad_scale);
    zaya_cuda_be_check_launch(be, "xent");
}

extern "C" void zaya_cuda_be_install_ops(zaya_backend *be) {
    be->rmsnorm_forward = be_rmsnorm_forward;
    be->rmsnorm_backward = be_rmsnorm_backward;
    be->gelu_forward = be_gelu_forward;
    be->gelu_backward = be_gelu_backward;
    be->swiglu_forward = be_swiglu_forward;
    be->swiglu_backward = be_swiglu_backward;
    be->softmax_forward = be_softmax_forward;
    be->softmax_ld_forward = be_softmax_ld_forward;
    be->embed_forward = be_embed_forward;
    be->embed_backward = be_embed_backward;
    be->eda_forward = be_eda_forward;
    be->eda_backward = be_eda_backward;
    be->top1 = be_top1;
    be->top1_count = be_top1_count;
    be->route_stats = be_route_stats;
    be->router_dlogits = be_router_dlogits;
    be->gather_rows = be_gather_rows;
    be->moe_combine_forward = be_moe_combine_forward;
    be->moe_combine_backward = be_moe_combine_backward;
    be->scatter_rows = be_scatter_rows;
    be->xent = be_xent;
}

// The CCA pieces of the CUDA backend (include/zaya/backend.h): the causal depthwise and grouped
// convolutions (src/kernels/conv1d.c), the qk mean skip and the value shift (src/model/cca.c), the
// per-head L2 norm (src/kernels/l2norm.c), rotary embedding (src/kernels/rope.c) and the qk
// split/merge (src/model/ops.c). Attention is in be_attention.cu.
//
// Every kernel computes what the CPU function computes, element for element and in the CPU's
// operation order where it is cheap to keep (tap order, head order). Reductions that produce a
// parameter gradient (dw, dbias, dmult) run in an order fixed by the shapes alone: each output is
// owned by one block, which walks the rows in a fixed order (per-thread row slices combined by a
// shared-memory tree for the per-channel sums, rows in order for the grouped weight); the per-head
// dmult goes through the backend's partials scratch (row blocks, then a second pass over them). No
// float atomics, no warp-width assumption (only __syncthreads between steps), no allocation.
#include <math.h>
#include <stdint.h>

#include "gpu/be_cuda.h"

#define CCA_THREADS 256

static gpuStream_t cca_stream(zaya_backend *be) { return zaya_cuda_be_of(be)->stream; }

static int cca_threads(zaya_backend *be) {
    const int t = zaya_cuda_be_of(be)->block;
    return t > 0 ? t : CCA_THREADS;
}

// Grid-stride index over n elements.
#define GRID_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

// ---- conv1d: t_out = t_in + pad - k + 1 (0 when negative) ----

static int64_t conv_t_out(int64_t t_in, int64_t k, int64_t pad) {
    const int64_t t = t_in + pad - k + 1;
    return t > 0 ? t : 0;
}

// y[b,t,c] = bias[c] + sum_j w[c,j] x[b, t+j-pad, c], taps in order as the CPU loop.
__global__ static void conv_dw_forward_kernel(float *y, const float *x, const float *w, const float *bias, int64_t t_in,
                                              int64_t t_out, int64_t C, int64_t k, int64_t pad, int64_t n) {
    GRID_LOOP(idx, n) {
        const int64_t c = idx % C, row = idx / C, t = row % t_out, b = row / t_out;
        float acc = bias ? bias[c] : 0.0f;
        for (int64_t j = 0; j < k; j++) {
            const int64_t s = t + j - pad; // padding rows contribute 0
            if (s >= 0 && s < t_in) acc += w[c * k + j] * x[(b * t_in + s) * C + c];
        }
        y[idx] = acc;
    }
}

// dx[b,s,c] = sum_j w[c,j] dy[b, s+pad-j, c]
__global__ static void conv_dw_dx_kernel(float *dx, const float *dy, const float *w, int64_t t_in, int64_t t_out,
                                         int64_t C, int64_t k, int64_t pad, int64_t n) {
    GRID_LOOP(idx, n) {
        const int64_t c = idx % C, row = idx / C, s = row % t_in, b = row / t_in;
        float acc = 0.0f;
        for (int64_t j = 0; j < k; j++) {
            const int64_t t = s + pad - j;
            if (t >= 0 && t < t_out) acc += w[c * k + j] * dy[(b * t_out + t) * C + c];
        }
        dx[idx] = acc;
    }
}

// Per-channel parameter gradients of a convolution, one block per (32 channels, tap):
//   tap < k:  dw[c*k + tap] += sum_{b,t} dy[b,t,c] * x[b, t+tap-pad, c]   (the depthwise weight)
//   tap == k: dbias[c]      += sum_{b,t} dy[b,t,c]                        (the bias, any conv)
// Thread (tx, ty) sums rows ty, ty + RED_ROWS, ... of its channel in double; the RED_ROWS partials
// are then added by a fixed tree. Loads are coalesced along channels.
#define RED_CH 32
#define RED_ROWS 16
__global__ static void __launch_bounds__(RED_CH * RED_ROWS)
    conv_param_grad_kernel(float *dw, float *dbias, const float *dy, const float *x, int64_t B, int64_t t_in,
                           int64_t t_out, int64_t C, int64_t k, int64_t pad, int64_t tap0) {
    __shared__ double part[RED_ROWS][RED_CH];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int64_t c = (int64_t)blockIdx.x * RED_CH + tx, tap = tap0 + blockIdx.y, rows = B * t_out;
    double acc = 0.0;
    if (c < C) {
        for (int64_t r = ty; r < rows; r += RED_ROWS) {
            const float g = dy[r * C + c];
            if (tap == k) {
                acc += (double)g;
                continue;
            }
            const int64_t b = r / t_out, s = r % t_out + tap - pad;
            if (s >= 0 && s < t_in) acc += (double)g * (double)x[(b * t_in + s) * C + c];
        }
    }
    part[ty][tx] = acc;
    for (int off = RED_ROWS / 2; off > 0; off /= 2) {
        __syncthreads();
        if (ty < off) part[ty][tx] += part[ty + off][tx];
    }
    if (ty == 0 && c < C) {
        const float v = (float)part[0][tx];
        if (tap == k) dbias[c] += v;
        else dw[c * k + tap] += v;
    }
}

static void launch_param_grad(zaya_backend *be, float *dw, float *dbias, const float *dy, const float *x, int64_t B,
                              int64_t t_in, int64_t t_out, int64_t C, int64_t k, int64_t pad, int64_t tap0,
                              int64_t ntaps) {
    if (ntaps <= 0 || C <= 0) return;
    const dim3 grid((unsigned)((C + RED_CH - 1) / RED_CH), (unsigned)ntaps), block(RED_CH, RED_ROWS);
    conv_param_grad_kernel<<<grid, block, 0, cca_stream(be)>>>(dw, dbias, dy, x, B, t_in, t_out, C, k, pad, tap0);
}

static int conv_args_ok(zaya_backend *be, const char *op, int64_t k, int64_t pad) {
    if (k >= 1 && k < 65535 && pad >= 0) return 1; /* k + 1 taps fit a grid dimension */
    zaya_cuda_be_fail(be, op, gpuErrorInvalidValue);
    return 0;
}

static void cuda_conv_dw_forward(zaya_backend *be, float *y, const float *x, const float *w, const float *bias,
                                 int64_t B, int64_t t_in, int64_t C, int64_t k, int64_t pad) {
    if (!conv_args_ok(be, "conv_dw_forward", k, pad)) return;
    const int64_t t_out = conv_t_out(t_in, k, pad), n = B * t_out * C;
    if (n <= 0) return;
    const int th = cca_threads(be);
    conv_dw_forward_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(y, x, w, bias, t_in, t_out, C, k,
                                                                                       pad, n);
    zaya_cuda_be_check_launch(be, "conv_dw_forward");
}

static void cuda_conv_dw_backward(zaya_backend *be, float *dx, float *dw, float *dbias, const float *dy,
                                  const float *x, const float *w, int64_t B, int64_t t_in, int64_t C, int64_t k,
                                  int64_t pad) {
    if (!conv_args_ok(be, "conv_dw_backward", k, pad)) return;
    const int64_t t_out = conv_t_out(t_in, k, pad), n = B * t_in * C;
    const int th = cca_threads(be);
    if (n > 0)
        conv_dw_dx_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(dx, dy, w, t_in, t_out, C, k, pad,
                                                                                      n);
    if (B * t_out > 0) launch_param_grad(be, dw, dbias, dy, x, B, t_in, t_out, C, k, pad, 0, k + (dbias ? 1 : 0));
    zaya_cuda_be_check_launch(be, "conv_dw_backward");
}

// ---- Grouped convolution ----
// Both activation passes are one product per group, as group_product in conv1d.c:
//   out[b, r, g cg + q] = init + sum_j sum_m in[b, r + off0 + j step, g cg + m] W(j, m, q)
// forward:  in = x,  r = t, off0 = -pad, step = +1, W(j, m, q) = w[g cg + q, m, j], init = bias
// dx:       in = dy, r = s, off0 = +pad, step = -1, W(j, m, q) = w[g cg + m, q, j], init = 0
// A block owns 32 output channels q of one group and 32 rows of one sequence; each thread 4 rows of
// one channel. Per (tap, 32-channel input chunk) the block stages the input rows [32 x 32] and the
// weight slice [32 m x 32 q] in shared memory; padding rows and channels past cg are zeros.
#define GP_T 32 // tile edge: rows, output channels and input channels
#define GP_RPT 4 // rows per thread: 256 threads = 32 channels x 8 row lanes x 4 rows
#define GP_THREADS (GP_T * GP_T / GP_RPT)
template <bool TRANSPOSE_W>
__global__ static void __launch_bounds__(GP_THREADS)
    grouped_product_kernel(float *out, int64_t out_rows, const float *in, int64_t in_rows, const float *w,
                           const float *bias, int64_t C, int64_t cg, int64_t k, int64_t off0, int64_t step, int rnd) {
    __shared__ float xs[GP_T][GP_T + 1]; // [row][m]
    __shared__ float ws[GP_T][GP_T + 1]; // [m][q]
    const int nthreads = GP_THREADS, tx = threadIdx.x % GP_T, ty = threadIdx.x / GP_T;
    const int64_t qtiles = (cg + GP_T - 1) / GP_T, g = blockIdx.x / qtiles, q0 = (blockIdx.x % qtiles) * GP_T;
    const int64_t r0 = (int64_t)blockIdx.y * GP_T, b = blockIdx.z, q = q0 + tx;
    const float *inb = in + b * in_rows * C + g * cg, *wg = w + g * cg * cg * k;
    const float init = (bias && q < cg) ? bias[g * cg + q] : 0.0f;
    float acc[GP_RPT];
    for (int a = 0; a < GP_RPT; a++) acc[a] = init;
    for (int64_t j = 0; j < k; j++)
        for (int64_t m0 = 0; m0 < cg; m0 += GP_T) {
            __syncthreads(); // the previous chunk's readers are done
            for (int e = threadIdx.x; e < GP_T * GP_T; e += nthreads) {
                const int rr = e / GP_T, mm = e % GP_T;
                const int64_t s = r0 + rr + off0 + j * step, m = m0 + mm;
                const float xv = (s >= 0 && s < in_rows && m < cg) ? inb[s * C + m] : 0.0f;
                xs[rr][mm] = rnd ? zaya_cuda_round_bf16(xv) : xv;
                // the weight index that varies fastest in memory goes with the thread index
                const int wm = TRANSPOSE_W ? e / GP_T : e % GP_T, wq = TRANSPOSE_W ? e % GP_T : e / GP_T;
                const int64_t mg = m0 + wm, qg = q0 + wq;
                float v = 0.0f;
                if (mg < cg && qg < cg) v = TRANSPOSE_W ? wg[(mg * cg + qg) * k + j] : wg[(qg * cg + mg) * k + j];
                ws[wm][wq] = rnd ? zaya_cuda_round_bf16(v) : v;
            }
            __syncthreads();
            for (int mm = 0; mm < GP_T; mm++) {
                const float wv = ws[mm][tx];
                for (int a = 0; a < GP_RPT; a++) acc[a] += xs[ty + a * (GP_T / GP_RPT)][mm] * wv;
            }
        }
    if (q >= cg) return;
    for (int a = 0; a < GP_RPT; a++) {
        const int64_t r = r0 + ty + a * (GP_T / GP_RPT);
        if (r < out_rows) out[(b * out_rows + r) * C + g * cg + q] = acc[a];
    }
}

static void launch_grouped_product(zaya_backend *be, int transpose_w, float *out, int64_t out_rows, const float *in,
                                   int64_t in_rows, const float *w, const float *bias, int64_t B, int64_t C,
                                   int64_t groups, int64_t k, int64_t off0, int64_t step, int rnd) {
    const int64_t cg = C / groups;
    if (B <= 0 || out_rows <= 0 || cg <= 0) return;
    const dim3 grid((unsigned)(groups * ((cg + GP_T - 1) / GP_T)), (unsigned)((out_rows + GP_T - 1) / GP_T),
                    (unsigned)B);
    const int threads = GP_THREADS;
    if (transpose_w)
        grouped_product_kernel<true><<<grid, threads, 0, cca_stream(be)>>>(out, out_rows, in, in_rows, w, bias, C, cg,
                                                                           k, off0, step, rnd);
    else
        grouped_product_kernel<false><<<grid, threads, 0, cca_stream(be)>>>(out, out_rows, in, in_rows, w, bias, C,
                                                                            cg, k, off0, step, rnd);
}

// dw[g cg + o, i, j] += sum_{b,t} dy[b, t, g cg + o] x[b, t+j-pad, g cg + i]: one block per
// (group, 32 o, 32 i, tap) owns its 1024 entries and streams every (b, t) row in order, 32 rows at a
// time through shared memory; thread (i, lane) keeps 4 o accumulators.
__global__ static void __launch_bounds__(GP_THREADS)
    grouped_dw_kernel(float *dw, const float *dy, const float *x, int64_t B, int64_t t_in, int64_t t_out, int64_t C,
                      int64_t cg, int64_t k, int64_t pad, int rnd) {
    __shared__ float ys[GP_T][GP_T + 1]; // [row][o]
    __shared__ float xs[GP_T][GP_T + 1]; // [row][i]
    const int nthreads = GP_THREADS, tx = threadIdx.x % GP_T, ty = threadIdx.x / GP_T;
    const int64_t otiles = (cg + GP_T - 1) / GP_T, g = blockIdx.x / otiles, o0 = (blockIdx.x % otiles) * GP_T;
    const int64_t i0 = (int64_t)blockIdx.y * GP_T, j = blockIdx.z, rows = B * t_out;
    float acc[GP_RPT] = {0.0f};
    for (int64_t r0 = 0; r0 < rows; r0 += GP_T) {
        __syncthreads();
        for (int e = threadIdx.x; e < GP_T * GP_T; e += nthreads) {
            const int rr = e / GP_T, cc = e % GP_T;
            const int64_t r = r0 + rr;
            float yv = 0.0f, xv = 0.0f;
            if (r < rows) {
                const int64_t b = r / t_out, s = r % t_out + j - pad;
                if (o0 + cc < cg) yv = dy[r * C + g * cg + o0 + cc];
                if (i0 + cc < cg && s >= 0 && s < t_in) xv = x[(b * t_in + s) * C + g * cg + i0 + cc];
            }
            ys[rr][cc] = rnd ? zaya_cuda_round_bf16(yv) : yv;
            xs[rr][cc] = rnd ? zaya_cuda_round_bf16(xv) : xv;
        }
        __syncthreads();
        for (int rr = 0; rr < GP_T; rr++) {
            const float xv = xs[rr][tx];
            for (int a = 0; a < GP_RPT; a++) acc[a] += ys[rr][ty + a * (GP_T / GP_RPT)] * xv;
        }
    }
    const int64_t i = i0 + tx;
    if (i >= cg) return;
    for (int a = 0; a < GP_RPT; a++) {
        const int64_t o = o0 + ty + a * (GP_T / GP_RPT);
        if (o < cg) dw[((g * cg + o) * cg + i) * k + j] += acc[a];
    }
}

static int grouped_args_ok(zaya_backend *be, const char *op, int64_t C, int64_t groups, int64_t k) {
    if (groups >= 1 && C % groups == 0 && k >= 1 && k < 65535) return 1;
    zaya_cuda_be_fail(be, op, gpuErrorInvalidValue);
    return 0;
}

static void cuda_conv_grouped_forward(zaya_backend *be, zaya_dtype dtype, float *y, const float *x, const float *w,
                                      const float *bias, int64_t B, int64_t t_in, int64_t C, int64_t groups, int64_t k,
                                      int64_t pad) {
    const int rnd = dtype == ZAYA_DTYPE_BF16;
    if (!grouped_args_ok(be, "conv_grouped_forward", C, groups, k) || !conv_args_ok(be, "conv_grouped_forward", k, pad))
        return;
    const int64_t t_out = conv_t_out(t_in, k, pad);
    launch_grouped_product(be, 0, y, t_out, x, t_in, w, bias, B, C, groups, k, -pad, 1, rnd);
    zaya_cuda_be_check_launch(be, "conv_grouped_forward");
}

static void cuda_conv_grouped_backward(zaya_backend *be, zaya_dtype dtype, float *dx, float *dw, float *dbias,
                                       const float *dy, const float *x, const float *w, int64_t B, int64_t t_in,
                                       int64_t C, int64_t groups, int64_t k, int64_t pad) {
    const int rnd = dtype == ZAYA_DTYPE_BF16;
    if (!grouped_args_ok(be, "conv_grouped_backward", C, groups, k) ||
        !conv_args_ok(be, "conv_grouped_backward", k, pad))
        return;
    const int64_t t_out = conv_t_out(t_in, k, pad), cg = C / groups;
    // dx[s] reads dy[s + pad - j]: the same product with the weight transposed within the group
    // (with t_out == 0 every input row is padding and dx is written as zeros)
    launch_grouped_product(be, 1, dx, t_in, dy, t_out, w, NULL, B, C, groups, k, pad, -1, rnd);
    if (B * t_out > 0 && cg > 0) {
        const dim3 grid((unsigned)(groups * ((cg + GP_T - 1) / GP_T)), (unsigned)((cg + GP_T - 1) / GP_T),
                        (unsigned)k);
        grouped_dw_kernel<<<grid, GP_THREADS, 0, cca_stream(be)>>>(dw, dy, x, B, t_in, t_out, C, cg, k, pad, rnd);
        if (dbias) launch_param_grad(be, NULL, dbias, dy, NULL, B, t_in, t_out, C, k, pad, k, 1);
    }
    zaya_cuda_be_check_launch(be, "conv_grouped_backward");
}

// ---- qk mean skip (cca.c): rows [N, (Hq + Hkv) hd], one thread per (row, kv head, channel) ----
// q_i += (q_i + k_j) / 2 for the group's query heads i; k_j += (mean_i q_i + k_j) / 2.
__global__ static void qk_mean_skip_forward_kernel(float *qk_raw, const float *qk_pre, int64_t Hq, int64_t Hkv,
                                                   int64_t hd, int64_t n) {
    const int64_t G = Hq / Hkv, C = (Hq + Hkv) * hd;
    GRID_LOOP(idx, n) {
        const int64_t d = idx % hd, j = idx / hd % Hkv, row = idx / (hd * Hkv);
        const float *pre = qk_pre + row * C;
        float *out = qk_raw + row * C;
        const float kp = pre[(Hq + j) * hd + d];
        float sum = 0.0f;
        for (int64_t i = j * G; i < (j + 1) * G; i++) {
            const float qp = pre[i * hd + d];
            out[i * hd + d] += 0.5f * (qp + kp);
            sum += qp;
        }
        out[(Hq + j) * hd + d] += 0.5f * (sum / (float)G + kp);
    }
}

__global__ static void qk_mean_skip_backward_kernel(float *dpre, const float *g, int64_t Hq, int64_t Hkv, int64_t hd,
                                                    int64_t n) {
    const int64_t G = Hq / Hkv, C = (Hq + Hkv) * hd;
    GRID_LOOP(idx, n) {
        const int64_t d = idx % hd, j = idx / hd % Hkv, row = idx / (hd * Hkv);
        const float *gr = g + row * C;
        float *dr = dpre + row * C;
        const float gk = gr[(Hq + j) * hd + d];
        float sq = 0.0f;
        for (int64_t i = j * G; i < (j + 1) * G; i++) {
            const float gq = gr[i * hd + d];
            sq += gq;
            dr[i * hd + d] += 0.5f * gq + 0.5f * gk / (float)G;
        }
        dr[(Hq + j) * hd + d] += 0.5f * sq + 0.5f * gk;
    }
}

static int qk_args_ok(zaya_backend *be, const char *op, int64_t Hq, int64_t Hkv) {
    if (Hq > 0 && Hkv > 0 && Hq % Hkv == 0) return 1;
    zaya_cuda_be_fail(be, op, gpuErrorInvalidValue);
    return 0;
}

static void cuda_qk_mean_skip_forward(zaya_backend *be, float *qk_raw, const float *qk_pre, int64_t N, int64_t Hq,
                                      int64_t Hkv, int64_t hd) {
    if (!qk_args_ok(be, "qk_mean_skip_forward", Hq, Hkv)) return;
    const int64_t n = N * Hkv * hd;
    if (n <= 0) return;
    const int th = cca_threads(be);
    qk_mean_skip_forward_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(qk_raw, qk_pre, Hq, Hkv,
                                                                                            hd, n);
    zaya_cuda_be_check_launch(be, "qk_mean_skip_forward");
}

static void cuda_qk_mean_skip_backward(zaya_backend *be, float *dpre, const float *g, int64_t N, int64_t Hq,
                                       int64_t Hkv, int64_t hd) {
    if (!qk_args_ok(be, "qk_mean_skip_backward", Hq, Hkv)) return;
    const int64_t n = N * Hkv * hd;
    if (n <= 0) return;
    const int th = cca_threads(be);
    qk_mean_skip_backward_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(dpre, g, Hq, Hkv, hd, n);
    zaya_cuda_be_check_launch(be, "qk_mean_skip_backward");
}

// ---- value shift (cca.c): v[n] = [vv[n, :h] | vv[n-1, h:2h]], zero at each sequence start ----
// Columns from 2h on (an odd kvd's last one) are not written, as the CPU's two h-wide copies.
__global__ static void value_shift_forward_kernel(float *v, const float *vv, int64_t T, int64_t kvd, int64_t n) {
    const int64_t h = kvd / 2;
    GRID_LOOP(idx, n) {
        const int64_t c = idx % kvd, row = idx / kvd;
        if (c < h) v[idx] = vv[idx];
        else if (c < 2 * h) v[idx] = row % T == 0 ? 0.0f : vv[idx - kvd];
    }
}

// the transpose: dvv[n, h:2h] = dv[n+1, h:2h], zero at each sequence end
__global__ static void value_shift_backward_kernel(float *dvv, const float *dv, int64_t T, int64_t kvd, int64_t n) {
    const int64_t h = kvd / 2;
    GRID_LOOP(idx, n) {
        const int64_t c = idx % kvd, row = idx / kvd;
        if (c < h) dvv[idx] = dv[idx];
        else if (c < 2 * h) dvv[idx] = row % T == T - 1 ? 0.0f : dv[idx + kvd];
    }
}

static void cuda_value_shift_forward(zaya_backend *be, float *v, const float *vv, int64_t B, int64_t T, int64_t kvd) {
    const int64_t n = B * T * kvd;
    if (n <= 0) return;
    const int th = cca_threads(be);
    value_shift_forward_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(v, vv, T, kvd, n);
    zaya_cuda_be_check_launch(be, "value_shift_forward");
}

static void cuda_value_shift_backward(zaya_backend *be, float *dvv, const float *dv, int64_t B, int64_t T,
                                      int64_t kvd) {
    const int64_t n = B * T * kvd;
    if (n <= 0) return;
    const int th = cca_threads(be);
    value_shift_backward_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(dvv, dv, T, kvd, n);
    zaya_cuda_be_check_launch(be, "value_shift_backward");
}

// ---- L2 norm per head (l2norm.c) ----
// A block of L2_THREADS works on L2_THREADS / tpr row-heads at a time, tpr threads (a power of two)
// each; the sums over head_dim are strided partials added by a tree within each tpr-thread slot.
#define L2_THREADS 256
#define L2_MAX_HEADS 256 // as L2NORM_MAX_HEADS in l2norm.c
#define L2_MAX_PARTS 1024 // row blocks of the dmult reduction

static int l2_tpr(int64_t hd) {
    int tpr = 1;
    while (tpr < hd && tpr < 128) tpr *= 2;
    return tpr;
}

// Sum of v over the tpr threads of the caller's slot (lane = t % tpr), in a fixed order. Every
// thread of the block calls it (it synchronizes the block).
__device__ static float slot_sum(float *red, float v, int lane, int tpr) {
    const int t = threadIdx.x;
    __syncthreads(); // earlier readers of red are done
    red[t] = v;
    for (int off = tpr / 2; off > 0; off /= 2) {
        __syncthreads();
        if (lane < off) red[t] += red[t + off];
    }
    __syncthreads();
    return red[t - lane];
}

__global__ static void __launch_bounds__(L2_THREADS)
    l2norm_forward_kernel(float *y, float *inv_norm, const float *x, const float *mult, float scale, int64_t rows,
                          int64_t heads, int64_t hd, float eps, int tpr) {
    __shared__ float red[L2_THREADS];
    const int lane = threadIdx.x % tpr, slot = threadIdx.x / tpr, slots = L2_THREADS / tpr;
    for (int64_t base = (int64_t)blockIdx.x * slots; base < rows; base += (int64_t)gridDim.x * slots) {
        const int64_t rh = base + slot;
        const bool ok = rh < rows;
        const float *xr = x + rh * hd;
        float ss = 0.0f;
        if (ok)
            for (int64_t i = lane; i < hd; i += tpr) ss += xr[i] * xr[i];
        ss = slot_sum(red, ss, lane, tpr);
        if (!ok) continue;
        const float norm = sqrtf(ss), inv = 1.0f / (norm > eps ? norm : eps);
        if (lane == 0) inv_norm[rh] = inv;
        const float a = scale * (mult ? mult[rh % heads] : 1.0f) * inv;
        for (int64_t i = lane; i < hd; i += tpr) y[rh * hd + i] = a * xr[i];
    }
}

// dx = s m inv (dy - x c), c = inv^2 (x . dy) unless the norm was clamped (then c = 0); the row-head's
// dmult term s inv (x . dy) is added, in double and in row-head order, to the block's per-head sums,
// which go to partials[block, head]. Block p owns rows [p n / P, (p + 1) n / P).
__global__ static void __launch_bounds__(L2_THREADS)
    l2norm_backward_kernel(float *dx, double *partials, const float *dy, const float *x, const float *inv_norm,
                           const float *mult, float scale, int64_t n, int64_t heads, int64_t hd, int tpr) {
    __shared__ float red[L2_THREADS];
    __shared__ double val[L2_THREADS];
    __shared__ double dm[L2_MAX_HEADS];
    const int lane = threadIdx.x % tpr, slot = threadIdx.x / tpr, slots = L2_THREADS / tpr;
    const int64_t P = gridDim.x, n0 = (int64_t)blockIdx.x * n / P, n1 = ((int64_t)blockIdx.x + 1) * n / P;
    const int64_t end = n1 * heads;
    for (int64_t h = threadIdx.x; h < heads; h += L2_THREADS) dm[h] = 0.0;
    for (int64_t base = n0 * heads; base < end; base += slots) {
        const int64_t rh = base + slot;
        const bool ok = rh < end;
        const float *xr = x + rh * hd, *dyr = dy + rh * hd;
        float pd = 0.0f, ps = 0.0f;
        if (ok)
            for (int64_t i = lane; i < hd; i += tpr) {
                pd += xr[i] * dyr[i];
                ps += xr[i] * xr[i];
            }
        const float dot = slot_sum(red, pd, lane, tpr);
        const float ss = slot_sum(red, ps, lane, tpr);
        if (ok) {
            const int64_t h = rh % heads;
            const float inv = inv_norm[rh], a = scale * (mult ? mult[h] : 1.0f) * inv;
            // unclamped rows have ||x|| inv = 1; clamped ones < 1 (see l2norm.c)
            const float c = (sqrtf(ss) * inv > 0.99999f) ? inv * inv * dot : 0.0f;
            for (int64_t i = lane; i < hd; i += tpr) dx[rh * hd + i] = a * (dyr[i] - xr[i] * c);
            if (lane == 0) val[slot] = (double)scale * inv * dot;
        }
        __syncthreads();
        if (threadIdx.x == 0)
            for (int s = 0; s < slots && base + s < end; s++) dm[(base + s) % heads] += val[s];
        // the next slot_sum's leading barrier keeps val alive until thread 0 is done
    }
    __syncthreads();
    if (partials)
        for (int64_t h = threadIdx.x; h < heads; h += L2_THREADS) partials[(int64_t)blockIdx.x * heads + h] = dm[h];
}

// dmult[h] += sum over row blocks p (in order) of partials[p, h]
__global__ static void l2norm_dmult_kernel(float *dmult, const double *partials, int64_t P, int64_t heads) {
    GRID_LOOP(h, heads) {
        double s = 0.0;
        for (int64_t p = 0; p < P; p++) s += partials[p * heads + h];
        dmult[h] += (float)s;
    }
}

static void cuda_l2norm_forward(zaya_backend *be, float *y, float *inv_norm, const float *x, const float *mult,
                                float scale, int64_t n, int64_t heads, int64_t hd, float eps) {
    const int64_t rows = n * heads;
    if (rows <= 0) return;
    if (hd <= 0) {
        zaya_cuda_be_fail(be, "l2norm_forward", gpuErrorInvalidValue);
        return;
    }
    const int tpr = l2_tpr(hd);
    l2norm_forward_kernel<<<zaya_cuda_be_blocks(be, rows, L2_THREADS / tpr), L2_THREADS, 0, cca_stream(be)>>>(
        y, inv_norm, x, mult, scale, rows, heads, hd, eps, tpr);
    zaya_cuda_be_check_launch(be, "l2norm_forward");
}

static void cuda_l2norm_backward(zaya_backend *be, float *dx, float *dmult, const float *dy, const float *x,
                                 const float *inv_norm, const float *mult, float scale, int64_t n, int64_t heads,
                                 int64_t hd) {
    zaya_cuda_be *cb = zaya_cuda_be_of(be);
    if (n <= 0 || heads <= 0) return;
    if (hd <= 0 || heads > L2_MAX_HEADS) {
        zaya_cuda_be_fail(be, "l2norm_backward", gpuErrorInvalidValue);
        return;
    }
    // The row-block count (and so the summation order) depends on the shape and the size of the
    // partials scratch only.
    int64_t P = n < L2_MAX_PARTS ? n : L2_MAX_PARTS;
    if (dmult) {
        const int64_t cap = cb->partials ? (int64_t)(cb->partials_count / (size_t)heads) : 0;
        if (cap < 1) {
            zaya_cuda_be_fail(be, "l2norm_backward (partials scratch too small)", gpuErrorInvalidValue);
            return;
        }
        if (P > cap) P = cap;
    }
    const int tpr = l2_tpr(hd);
    l2norm_backward_kernel<<<(unsigned)P, L2_THREADS, 0, cb->stream>>>(dx, dmult ? cb->partials : NULL, dy, x, inv_norm,
                                                                       mult, scale, n, heads, hd, tpr);
    if (dmult) l2norm_dmult_kernel<<<1, L2_THREADS, 0, cb->stream>>>(dmult, cb->partials, P, heads);
    zaya_cuda_be_check_launch(be, "l2norm_backward");
}

// ---- rotary embedding (rope.c), in place: one thread per rotated pair (i, i + rot_dims/2) ----
__global__ static void rope_kernel(float *x, const float *cos_t, const float *sin_t, int64_t half,
                                   const int32_t *pos, int64_t heads, int64_t hd, float sign, int64_t n) {
    GRID_LOOP(idx, n) {
        const int64_t i = idx % half, rh = idx / half, r = rh / heads;
        const int64_t p = pos[r];
        const float c = cos_t[p * half + i], si = sign * sin_t[p * half + i];
        float *x1 = x + rh * hd, *x2 = x1 + half;
        const float a = x1[i], b = x2[i];
        x1[i] = a * c - b * si;
        x2[i] = b * c + a * si;
    }
}

static void rope_launch(zaya_backend *be, const char *op, float *x, const float *cos_t, const float *sin_t,
                        int64_t rot_dims, const int32_t *pos, int64_t n, int64_t heads, int64_t hd, float sign) {
    if (rot_dims <= 0 || rot_dims % 2 != 0 || rot_dims > hd) {
        zaya_cuda_be_fail(be, op, gpuErrorInvalidValue);
        return;
    }
    const int64_t half = rot_dims / 2, total = n * heads * half;
    if (total <= 0) return;
    const int th = cca_threads(be);
    rope_kernel<<<zaya_cuda_be_blocks(be, total, th), th, 0, cca_stream(be)>>>(x, cos_t, sin_t, half, pos, heads, hd,
                                                                                sign, total);
    zaya_cuda_be_check_launch(be, op);
}

static void cuda_rope_forward(zaya_backend *be, float *x, const float *cos_t, const float *sin_t, int64_t rot_dims,
                              const int32_t *pos, int64_t n, int64_t heads, int64_t hd) {
    rope_launch(be, "rope_forward", x, cos_t, sin_t, rot_dims, pos, n, heads, hd, 1.0f);
}

// R is orthogonal: R^T dy is the rotation by the negated angle
static void cuda_rope_backward(zaya_backend *be, float *dx, const float *cos_t, const float *sin_t, int64_t rot_dims,
                               const int32_t *pos, int64_t n, int64_t heads, int64_t hd) {
    rope_launch(be, "rope_backward", dx, cos_t, sin_t, rot_dims, pos, n, heads, hd, -1.0f);
}

// ---- qk split / merge (ops.c): rows [N, qd + kvd] <-> q [N, qd], k [N, kvd] ----
__global__ static void split_qk_kernel(float *q, float *k, const float *qk, int64_t qd, int64_t kvd, int64_t n) {
    const int64_t w = qd + kvd;
    GRID_LOOP(idx, n) {
        const int64_t row = idx / w, c = idx % w;
        if (c < qd) q[row * qd + c] = qk[idx];
        else k[row * kvd + c - qd] = qk[idx];
    }
}

__global__ static void merge_qk_kernel(float *qk, const float *q, const float *k, int64_t qd, int64_t kvd, int64_t n) {
    const int64_t w = qd + kvd;
    GRID_LOOP(idx, n) {
        const int64_t row = idx / w, c = idx % w;
        qk[idx] = c < qd ? q[row * qd + c] : k[row * kvd + c - qd];
    }
}

static void cuda_split_qk(zaya_backend *be, float *q, float *k, const float *qk, int64_t N, int64_t qd, int64_t kvd) {
    const int64_t n = N * (qd + kvd);
    if (n <= 0) return;
    const int th = cca_threads(be);
    split_qk_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(q, k, qk, qd, kvd, n);
    zaya_cuda_be_check_launch(be, "split_qk");
}

static void cuda_merge_qk(zaya_backend *be, float *qk, const float *q, const float *k, int64_t N, int64_t qd,
                          int64_t kvd) {
    const int64_t n = N * (qd + kvd);
    if (n <= 0) return;
    const int th = cca_threads(be);
    merge_qk_kernel<<<zaya_cuda_be_blocks(be, n, th), th, 0, cca_stream(be)>>>(qk, q, k, qd, kvd, n);
    zaya_cuda_be_check_launch(be, "merge_qk");
}

extern "C" void zaya_cuda_be_install_cca(zaya_backend *be) {
    be->conv_dw_forward = cuda_conv_dw_forward;
    be->conv_dw_backward = cuda_conv_dw_backward;
    be->conv_grouped_forward = cuda_conv_grouped_forward;
    be->conv_grouped_backward = cuda_conv_grouped_backward;
    be->qk_mean_skip_forward = cuda_qk_mean_skip_forward;
    be->qk_mean_skip_backward = cuda_qk_mean_skip_backward;
    be->value_shift_forward = cuda_value_shift_forward;
    be->value_shift_backward = cuda_value_shift_backward;
    be->l2norm_forward = cuda_l2norm_forward;
    be->l2norm_backward = cuda_l2norm_backward;
    be->rope_forward = cuda_rope_forward;
    be->rope_backward = cuda_rope_backward;
    be->split_qk = cuda_split_qk;
    be->merge_qk = cuda_merge_qk;
    zaya_cuda_be_install_attention(be);
}

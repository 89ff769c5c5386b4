// Causal grouped-query attention of the CUDA backend (zaya_attention_forward / _backward,
// src/kernels/attention.c): q [B, T, Hq, D], k, v [B, T, Hkv, D], out [B, T, Hq, D], lse [B, Hq, T]
// = m + log(l), the natural-log log-sum-exp of the scaled logits scale * q.k of each query row.
// Query head h reads kv head h / (Hq / Hkv).
//
// Flash-style in f32 on the SIMT cores: square tiles of BT = 16 A query rows and BT keys, staged in
// shared memory; 256 threads as a 16 x 16 grid, thread (ty, tx) owning rows ty + 16 a (a < A) of
// every product and, of a [BT, D] result, the columns tx + 16 c (c < NC, NC = D rounded up to 16
// over 16). Memory is O(T) (lse and the outputs); no T x T matrix exists.
//   forward   one block per (query tile, query head, batch): streams the key tiles up to the
//             diagonal with an online softmax (running max and sum per row), writes out and lse.
//   backward  two kernels, so that every output is written by one block and summed in a fixed
//             order (no atomics): dq per (query tile, query head, batch) streaming the key tiles;
//             dk, dv per (key tile, kv head, batch) looping over the group's query heads in order
//             and, for each, over the query tiles from the diagonal on. P is recomputed from q, k
//             and lse; delta = rowsum(dout * out) is recomputed per query tile.
// bf16 (dtype ZAYA_DTYPE_BF16): the operands of every product are rounded to bf16 values as they are
// staged (q, k, v, dout; P after its row sums are taken; dS), products accumulate in f32, delta uses the
// f32 dout, as the CPU kernels' bf16 mode (zaya_attention_forward_dtype / _backward_dtype).
// Instances: D <= 64 (NC 4, A 4), D <= 128 (NC 8, A 4), D <= 256 (NC 16, A 2); columns past D are
// zero in the tiles and never stored. Dynamic shared memory above 48 KiB is opted into per launch.
#include <math.h>
#include <stdint.h>

#include "gpu/be_cuda.h"

#define ATT_THREADS 256
#define ATT_MAX_D 256 // ZAYA_ATTENTION_MAX_HEAD_DIM of zaya/attention.h (a layer gpu does not include)
#define ATT_RED 17 // row stride of the per-row partials (16 column lanes, padded)

static gpuStream_t att_stream(zaya_backend *be) { return zaya_cuda_be_of(be)->stream; }

// rows [0, rows) of dst (row stride ld) from src rows `stride` floats apart; rows >= nvalid zero;
// rounded to bf16 values when rnd. Consecutive threads read consecutive floats of a row.
__device__ static void load_rows(float *dst, int ld, const float *src, int64_t stride, int rows, int nvalid, int D,
                                 int rnd) {
    for (int e = threadIdx.x; e < rows * D; e += ATT_THREADS) {
        const int r = e / D, d = e - r * D;
        const float x = r < nvalid ? src[(int64_t)r * stride + d] : 0.0f;
        dst[r * ld + d] = rnd ? zaya_cuda_round_bf16(x) : x;
    }
}

// acc[a][b] = X[ty + 16a, :] . Y[tx + 16b, :] over D columns (both tiles row stride ld).
template <int A>
__device__ static void tile_dots(float (&acc)[A][A], const float *X, const float *Y, int ld, int D, int ty, int tx) {
#pragma unroll
    for (int a = 0; a < A; a++)
#pragma unroll
        for (int b = 0; b < A; b++) acc[a][b] = 0.0f;
    for (int d = 0; d < D; d++) {
        float xv[A], yv[A];
#pragma unroll
        for (int a = 0; a < A; a++) xv[a] = X[(ty + 16 * a) * ld + d];
#pragma unroll
        for (int b = 0; b < A; b++) yv[b] = Y[(tx + 16 * b) * ld + d];
#pragma unroll
        for (int a = 0; a < A; a++)
#pragma unroll
            for (int b = 0; b < A; b++) acc[a][b] += xv[a] * yv[b];
    }
}

// Keys of the tile starting at j0 (nj of them) that query position pos may see.
__device__ static int causal_valid(int64_t pos, int64_t j0, int nj) {
    const int64_t v = pos - j0 + 1;
    return v <= 0 ? 0 : (v >= nj ? nj : (int)v);
}

// ---- forward ----

static size_t fwd_smem_floats(int A, int D) {
    const int BT = 16 * A, ld = D + 1;
    return (size_t)(2 * BT * ld + BT * (BT + 1) + BT * ATT_RED + 2 * BT);
}

template <int NC, int A>
__global__ static void __launch_bounds__(ATT_THREADS)
    attention_forward_kernel(float *out, float *lse, const float *q, const float *k, const float *v, int64_t T,
                             int64_t Hq, int64_t Hkv, int D, float scale, int rnd) {
    constexpr int BT = 16 * A, LS = BT + 1;
    extern __shared__ float smem[];
    const int ld = D + 1;
    float *Qs = smem, *KVs = Qs + BT * ld, *Ss = KVs + BT * ld, *red = Ss + BT * LS, *m_s = red + BT * ATT_RED,
          *l_s = m_s + BT;
    const int t = threadIdx.x, ty = t / 16, tx = t % 16;
    const int64_t ntiles = (T + BT - 1) / BT, it = ntiles - 1 - blockIdx.x; // the longest rows first
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / (Hq / Hkv), i0 = it * BT;
    const int ni = (int)(T - i0 < BT ? T - i0 : BT);
    const int64_t ldq = Hq * D, ldkv = Hkv * D;
    const float *kb = k + (b * T * Hkv + hk) * D, *vb = v + (b * T * Hkv + hk) * D;

    load_rows(Qs, ld, q + ((b * T + i0) * Hq + h) * D, ldq, BT, ni, D, rnd);
    if (t < BT) m_s[t] = -INFINITY, l_s[t] = 0.0f;
    float o[A][NC];
#pragma unroll
    for (int a = 0; a < A; a++)
#pragma unroll
        for (int c = 0; c < NC; c++) o[a][c] = 0.0f;

    const int64_t kend = i0 + ni; // keys [0, kend) are visible to some row of the tile
    for (int64_t j0 = 0; j0 < kend; j0 += BT) {
        const int nj = (int)(kend - j0 < BT ? kend - j0 : BT);
        __syncthreads(); // the previous tile's readers of KVs, Ss and red are done
        load_rows(KVs, ld, kb + j0 * ldkv, ldkv, BT, nj, D, rnd);
        __syncthreads();
        float s[A][A];
        tile_dots<A>(s, Qs, KVs, ld, D, ty, tx);
        int valid[A];
#pragma unroll
        for (int a = 0; a < A; a++) {
            valid[a] = causal_valid(i0 + ty + 16 * a, j0, nj);
            float mx = -INFINITY; // scale > 0: max(scale s) = scale max(s)
#pragma unroll
            for (int bb = 0; bb < A; bb++)
                if (tx + 16 * bb < valid[a]) mx = fmaxf(mx, s[a][bb] * scale);
            red[(ty + 16 * a) * ATT_RED + tx] = mx;
        }
        __syncthreads(); // K is no longer read: V may take its place
        load_rows(KVs, ld, vb + j0 * ldkv, ldkv, BT, nj, D, rnd);
        float mnew[A], alpha[A], psum[A];
#pragma unroll
        for (int a = 0; a < A; a++) {
            const int r = ty + 16 * a;
            float mx = -INFINITY;
            for (int u = 0; u < 16; u++) mx = fmaxf(mx, red[r * ATT_RED + u]);
            const float mold = m_s[r];
            mnew[a] = fmaxf(mold, mx);
            const bool none = mnew[a] == -INFINITY; // nothing visible yet: keep the zero state
            alpha[a] = none ? 1.0f : expf(mold - mnew[a]); // 0 on the row's first keys (mold = -inf)
            psum[a] = 0.0f;
#pragma unroll
            for (int bb = 0; bb < A; bb++) {
                const int j = tx + 16 * bb;
                const float p = (!none && j < valid[a]) ? expf(s[a][bb] * scale - mnew[a]) : 0.0f;
                Ss[r * LS + j] = rnd ? zaya_cuda_round_bf16(p) : p; // P rounded after its sum is taken
                psum[a] += p;
            }
        }
        __syncthreads(); // every thread has read the maxima
#pragma unroll
        for (int a = 0; a < A; a++) red[(ty + 16 * a) * ATT_RED + tx] = psum[a];
        __syncthreads(); // P, V and the partial sums are in place
        if (tx == 0)
#pragma unroll
            for (int a = 0; a < A; a++) {
                const int r = ty + 16 * a;
                float sum = 0.0f;
                for (int u = 0; u < 16; u++) sum += red[r * ATT_RED + u];
                l_s[r] = l_s[r] * alpha[a] + sum;
                m_s[r] = mnew[a];
            }
#pragma unroll
        for (int a = 0; a < A; a++)
#pragma unroll
            for (int c = 0; c < NC; c++) o[a][c] *= alpha[a];
        for (int j = 0; j < nj; j++) {
            float p[A], vv[NC];
#pragma unroll
            for (int a = 0; a < A; a++) p[a] = Ss[(ty + 16 * a) * LS + j];
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const int d = tx + 16 * c;
                vv[c] = d < D ? KVs[j * ld + d] : 0.0f;
            }
#pragma unroll
            for (int a = 0; a < A; a++)
#pragma unroll
                for (int c = 0; c < NC; c++) o[a][c] += p[a] * vv[c];
        }
    }
    __syncthreads(); // the last l_s, m_s updates are visible
    if (t < ni && lse) lse[(b * Hq + h) * T + i0 + t] = m_s[t] + logf(l_s[t]);
#pragma unroll
    for (int a = 0; a < A; a++) {
        const int r = ty + 16 * a;
        if (r >= ni) continue;
        const float inv = 1.0f / l_s[r];
        float *orow = out + ((b * T + i0 + r) * Hq + h) * D;
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int d = tx + 16 * c;
            if (d < D) orow[d] = o[a][c] * inv;
        }
    }
}

// ---- backward ----

// One query tile of head h: Qs <- q, dOs <- dout, lse_s, delta_s (rowsum(dout * out), computed
// from out staged in Qs first). Every thread calls it; it ends with a barrier.
__device__ static void load_query_tile(float *Qs, float *dOs, float *red, float *lse_s, float *delta_s, const float *q,
                                       const float *dout, const float *out, const float *lse, int64_t b, int64_t h,
                                       int64_t i0, int ni, int BT, int64_t T, int64_t Hq, int D, int rnd) {
    const int ld = D + 1, t = threadIdx.x, tpr = ATT_THREADS / BT; // threads per row for delta
    const int64_t off = ((b * T + i0) * Hq + h) * D, ldq = Hq * D;
    load_rows(Qs, ld, out + off, ldq, BT, ni, D, 0);
    load_rows(dOs, ld, dout + off, ldq, BT, ni, D, 0);
    if (t < BT) lse_s[t] = t < ni ? lse[(b * Hq + h) * T + i0 + t] : 0.0f;
    __syncthreads();
    {
        const int r = t / tpr, part = t % tpr;
        float acc = 0.0f;
        for (int d = part; d < D; d += tpr) acc += dOs[r * ld + d] * Qs[r * ld + d];
        red[r * ATT_RED + part] = acc;
    }
    __syncthreads(); // out is no longer read
    if (t < BT) {
        float delta = 0.0f;
        for (int u = 0; u < tpr; u++) delta += red[t * ATT_RED + u];
        delta_s[t] = delta;
    }
    load_rows(Qs, ld, q + off, ldq, BT, ni, D, rnd);
    if (rnd) // delta has used the f32 dout: the products take it rounded
        for (int e = t; e < BT * D; e += ATT_THREADS) {
            float *x = dOs + (e / D) * ld + e % D;
            *x = zaya_cuda_round_bf16(*x);
        }
    __syncthreads();
}

// P = exp(scale s - lse) and dS = scale P (dP - delta) of the thread's A x A entries of the tile
// (query rows i0 + ty + 16a, keys j0 + tx + 16b); zero where masked or outside T.
template <int A>
__device__ static void tile_p_ds(float (&p)[A][A], float (&ds)[A][A], const float *Qs, const float *dOs,
                                 const float *Ks, const float *Vs, const float *lse_s, const float *delta_s,
                                 int64_t i0, int ni, int64_t j0, int nj, int D, float scale, int ty, int tx) {
    const int ld = D + 1;
    float dp[A][A];
    tile_dots<A>(p, Qs, Ks, ld, D, ty, tx);
    tile_dots<A>(dp, dOs, Vs, ld, D, ty, tx);
#pragma unroll
    for (int a = 0; a < A; a++) {
        const int r = ty + 16 * a;
        const int valid = r < ni ? causal_valid(i0 + r, j0, nj) : 0;
#pragma unroll
        for (int bb = 0; bb < A; bb++) {
            const bool ok = tx + 16 * bb < valid;
            const float pv = ok ? expf(p[a][bb] * scale - lse_s[r]) : 0.0f;
            p[a][bb] = pv;
            ds[a][bb] = ok ? scale * pv * (dp[a][bb] - delta_s[r]) : 0.0f;
        }
    }
}

static size_t bwd_smem_floats(int A, int D, int with_p) {
    const int BT = 16 * A, ld = D + 1;
    return (size_t)(4 * BT * ld + (with_p ? 2 : 1) * BT * (BT + 1) + BT * ATT_RED + 2 * BT);
}

template <int NC, int A>
__global__ static void __launch_bounds__(ATT_THREADS)
    attention_dq_kernel(float *dq, const float *dout, const float *q, const float *k, const float *v, const float *out,
                        const float *lse, int64_t T, int64_t Hq, int64_t Hkv, int D, float scale, int rnd) {
    constexpr int BT = 16 * A, LS = BT + 1;
    extern __shared__ float smem[];
    const int ld = D + 1;
    float *Qs = smem, *dOs = Qs + BT * ld, *Ks = dOs + BT * ld, *Vs = Ks + BT * ld, *dSs = Vs + BT * ld,
          *red = dSs + BT * LS, *lse_s = red + BT * ATT_RED, *delta_s = lse_s + BT;
    const int t = threadIdx.x, ty = t / 16, tx = t % 16;
    const int64_t ntiles = (T + BT - 1) / BT, it = ntiles - 1 - blockIdx.x;
    const int64_t h = blockIdx.y, b = blockIdx.z, hk = h / (Hq / Hkv), i0 = it * BT;
    const int ni = (int)(T - i0 < BT ? T - i0 : BT);
    const int64_t ldkv = Hkv * D;
    const float *kb = k + (b * T * Hkv + hk) * D, *vb = v + (b * T * Hkv + hk) * D;

    load_query_tile(Qs, dOs, red, lse_s, delta_s, q, dout, out, lse, b, h, i0, ni, BT, T, Hq, D, rnd);
    float acc[A][NC];
#pragma unroll
    for (int a = 0; a < A; a++)
#pragma unroll
        for (int c = 0; c < NC; c++) acc[a][c] = 0.0f;
    const int64_t kend = i0 + ni;
    for (int64_t j0 = 0; j0 < kend; j0 += BT) {
        const int nj = (int)(kend - j0 < BT ? kend - j0 : BT);
        __syncthreads(); // the previous tile's readers of Ks, Vs and dSs are done
        load_rows(Ks, ld, kb + j0 * ldkv, ldkv, BT, nj, D, rnd);
        load_rows(Vs, ld, vb + j0 * ldkv, ldkv, BT, nj, D, rnd);
        __syncthreads();
        float p[A][A], ds[A][A];
        tile_p_ds<A>(p, ds, Qs, dOs, Ks, Vs, lse_s, delta_s, i0, ni, j0, nj, D, scale, ty, tx);
#pragma unroll
        for (int a = 0; a < A; a++)
#pragma unroll
            for (int bb = 0; bb < A; bb++)
                dSs[(ty + 16 * a) * LS + tx + 16 * bb] = rnd ? zaya_cuda_round_bf16(ds[a][bb]) : ds[a][bb];
        __syncthreads();
        // dq[i] += sum_j dS[i, j] k[j]
        for (int j = 0; j < nj; j++) {
            float dsv[A], kv[NC];
#pragma unroll
            for (int a = 0; a < A; a++) dsv[a] = dSs[(ty + 16 * a) * LS + j];
#pragma unroll
            for (int c = 0; c < NC; c++) {
                const int d = tx + 16 * c;
                kv[c] = d < D ? Ks[j * ld + d] : 0.0f;
            }
#pragma unroll
            for (int a = 0; a < A; a++)
#pragma unroll
                for (int c = 0; c < NC; c++) acc[a][c] += dsv[a] * kv[c];
        }
    }
#pragma unroll
    for (int a = 0; a < A; a++) {
        const int r = ty + 16 * a;
        if (r >= ni) continue;
        float *drow = dq + ((b * T + i0 + r) * Hq + h) * D;
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int d = tx + 16 * c;
            if (d < D) drow[d] = acc[a][c];
        }
    }
}

template <int NC, int A>
__global__ static void __launch_bounds__(ATT_THREADS)
    attention_dkdv_kernel(float *dk, float *dv, const float *dout, const float *q, const float *k, const float *v,
                          const float *out, const float *lse, int64_t T, int64_t Hq, int64_t Hkv, int D, float scale,
                          int rnd) {
    constexpr int BT = 16 * A, LS = BT + 1;
    extern __shared__ float smem[];
    const int ld = D + 1;
    float *Qs = smem, *dOs = Qs + BT * ld, *Ks = dOs + BT * ld, *Vs = Ks + BT * ld, *Ps = Vs + BT * ld,
          *dSs = Ps + BT * LS, *red = dSs + BT * LS, *lse_s = red + BT * ATT_RED, *delta_s = lse_s + BT;
    const int t = threadIdx.x, ty = t / 16, tx = t % 16;
    const int64_t jt = blockIdx.x, hk = blockIdx.y, b = blockIdx.z, G = Hq / Hkv, j0 = jt * BT;
    const int nj = (int)(T - j0 < BT ? T - j0 : BT);
    const int64_t ldkv = Hkv * D;
    load_rows(Ks, ld, k + ((b * T + j0) * Hkv + hk) * D, ldkv, BT, nj, D, rnd);
    load_rows(Vs, ld, v + ((b * T + j0) * Hkv + hk) * D, ldkv, BT, nj, D, rnd);
    // key rows ty + 16a, columns tx + 16c
    float adk[A][NC], adv[A][NC];
#pragma unroll
    for (int a = 0; a < A; a++)
#pragma unroll
        for (int c = 0; c < NC; c++) adk[a][c] = 0.0f, adv[a][c] = 0.0f;
    for (int64_t g = 0; g < G; g++) {
        const int64_t h = hk * G + g;
        // query tiles before the key tile's own see none of its keys
        for (int64_t i0 = j0; i0 < T; i0 += BT) {
            const int ni = (int)(T - i0 < BT ? T - i0 : BT);
            __syncthreads(); // the previous tile's readers of Qs, dOs, Ps and dSs are done
            load_query_tile(Qs, dOs, red, lse_s, delta_s, q, dout, out, lse, b, h, i0, ni, BT, T, Hq, D, rnd);
            float p[A][A], ds[A][A];
            tile_p_ds<A>(p, ds, Qs, dOs, Ks, Vs, lse_s, delta_s, i0, ni, j0, nj, D, scale, ty, tx);
#pragma unroll
            for (int a = 0; a < A; a++)
#pragma unroll
                for (int bb = 0; bb < A; bb++) {
                    Ps[(ty + 16 * a) * LS + tx + 16 * bb] = rnd ? zaya_cuda_round_bf16(p[a][bb]) : p[a][bb];
                    dSs[(ty + 16 * a) * LS + tx + 16 * bb] = rnd ? zaya_cuda_round_bf16(ds[a][bb]) : ds[a][bb];
                }
            __syncthreads();
            // dv[j] += sum_i P[i, j] dout[i], dk[j] += sum_i dS[i, j] q[i], rows i in order
            for (int i = 0; i < ni; i++) {
                float pv[A], dsv[A], dov[NC], qv[NC];
#pragma unroll
                for (int a = 0; a < A; a++) {
                    pv[a] = Ps[i * LS + ty + 16 * a];
                    dsv[a] = dSs[i * LS + ty + 16 * a];
                }
#pragma unroll
                for (int c = 0; c < NC; c++) {
                    const int d = tx + 16 * c;
                    dov[c] = d < D ? dOs[i * ld + d] : 0.0f;
                    qv[c] = d < D ? Qs[i * ld + d] : 0.0f;
                }
#pragma unroll
                for (int a = 0; a < A; a++)
#pragma unroll
                    for (int c = 0; c < NC; c++) {
                        adv[a][c] += pv[a] * dov[c];
                        adk[a][c] += dsv[a] * qv[c];
                    }
            }
        }
    }
#pragma unroll
    for (int a = 0; a < A; a++) {
        const int j = ty + 16 * a;
        if (j >= nj) continue;
        float *dkr = dk + ((b * T + j0 + j) * Hkv + hk) * D, *dvr = dv + ((b * T + j0 + j) * Hkv + hk) * D;
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const int d = tx + 16 * c;
            if (d < D) dkr[d] = adk[a][c], dvr[d] = adv[a][c];
        }
    }
}

// ---- launches ----

static int att_args_ok(zaya_backend *be, const char *op, int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int64_t D,
                       float scale) {
    if (Hq > 0 && Hkv > 0 && Hq % Hkv == 0 && D > 0 && D <= ATT_MAX_D && scale > 0.0f &&
        Hq <= 65535 && B <= 65535 && T <= (int64_t)INT32_MAX)
        return 1;
    zaya_cuda_be_fail(be, op, gpuErrorInvalidValue);
    return 0;
}

// Sets the kernel's dynamic shared-memory limit (above the 48 KiB default) and reports a refusal.
static int att_smem(zaya_backend *be, const char *op, const void *kernel, size_t bytes) {
    const gpuError_t e = gpuFuncSetAttribute(kernel, gpuFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e == gpuSuccess) return 1;
    zaya_cuda_be_fail(be, op, e);
    return 0;
}

template <int NC, int A>
static void att_forward(zaya_backend *be, float *out, float *lse, const float *q, const float *k, const float *v,
                        int64_t B, int64_t T, int64_t Hq, int64_t Hkv, int D, float scale, int rnd) {
    const int BT = 16 * A;
    const size_t smem = fwd_smem_floats(A, D) * sizeof(float);
    if (!att_smem(be, "attention_forward", (const void *)attention_forward_kernel<NC, A>, smem)) return;
    const dim3 grid((unsigned)((T + BT - 1) / BT), (unsigned)Hq, (unsigned)B);
    attention_forward_kernel<NC, A><<<grid, ATT_THREADS, smem, att_stream(be)>>>(out, lse, q, k, v, T, Hq, Hkv, D,
                                                                                 scale, rnd);
}

template <int NC, int A>
static void att_backward(zaya_backend *be, float *dq, float *dk, float *dv, const float *dout, const float *q,
                         const float *k, const float *v, const float *out, const float *lse, int64_t B, int64_t T,
                         int64_t Hq, int64_t Hkv, int D, float scale, int rnd) {
    const int BT = 16 * A;
    const unsigned tiles = (unsigned)((T + BT - 1) / BT);
    const size_t smem_q = bwd_smem_floats(A, D, 0) * sizeof(float), smem_kv = bwd_smem_floats(A, D, 1) * sizeof(float);
    if (!att_smem(be, "attention_backward", (const void *)attention_dq_kernel<NC, A>, smem_q) ||
        !att_smem(be, "attention_backward", (const void *)attention_dkdv_kernel<NC, A>, smem_kv))
        return;
    attention_dq_kernel<NC, A><<<dim3(tiles, (unsigned)Hq, (unsigned)B), ATT_THREADS, smem_q, att_stream(be)>>>(
        dq, dout, q, k, v, out, lse, T, Hq, Hkv, D, scale, rnd);
    attention_dkdv_kernel<NC, A><<<dim3(tiles, (unsigned)Hkv, (unsigned)B), ATT_THREADS, smem_kv, att_stream(be)>>>(
        dk, dv, dout, q, k, v, out, lse, T, Hq, Hkv, D, scale, rnd);
}

static void cuda_attention_forward(zaya_backend *be, zaya_dtype dtype, float *out, float *lse, const float *q,
                                   const float *k, const float *v, int64_t B, int64_t T, int64_t Hq, int64_t Hkv,
                                   int64_t D, float scale) {
    const int rnd = dtype == ZAYA_DTYPE_BF16;
    if (!att_args_ok(be, "attention_forward", B, T, Hq, Hkv, D, scale)) return;
    if (B <= 0 || T <= 0) return;
    if (D <= 64) att_forward<4, 4>(be, out, lse, q, k, v, B, T, Hq, Hkv, (int)D, scale, rnd);
    else if (D <= 128) att_forward<8, 4>(be, out, lse, q, k, v, B, T, Hq, Hkv, (int)D, scale, rnd);
    else att_forward<16, 2>(be, out, lse, q, k, v, B, T, Hq, Hkv, (int)D, scale, rnd);
    zaya_cuda_be_check_launch(be, "attention_forward");
}

static void cuda_attention_backward(zaya_backend *be, zaya_dtype dtype, float *dq, float *dk, float *dv,
                                    const float *dout, const float *q, const float *k, const float *v,
                                    const float *out, const float *lse, int64_t B, int64_t T, int64_t Hq, int64_t Hkv,
                                    int64_t D, float scale) {
    const int rnd = dtype == ZAYA_DTYPE_BF16;
    if (!att_args_ok(be, "attention_backward", B, T, Hq, Hkv, D, scale)) return;
    if (B <= 0 || T <= 0) return;
    if (D <= 64) att_backward<4, 4>(be, dq, dk, dv, dout, q, k, v, out, lse, B, T, Hq, Hkv, (int)D, scale, rnd);
    else if (D <= 128) att_backward<8, 4>(be, dq, dk, dv, dout, q, k, v, out, lse, B, T, Hq, Hkv, (int)D, scale, rnd);
    else att_backward<16, 2>(be, dq, dk, dv, dout, q, k, v, out, lse, B, T, Hq, Hkv, (int)D, scale, rnd);
    zaya_cuda_be_check_launch(be, "attention_backward");
}

extern "C" void zaya_cuda_be_install_attention(zaya_backend *be) {
    be->attention_forward = cuda_attention_forward;
    be->attention_backward = cuda_attention_backward;
}

// cuBLASLt GEMM of `zaya bench gemm --device cuda` and its reference check: row-major D[m,n] =
// A[m,k] x B[k,n] in bf16 / f16 (f32 accumulate and output) or f32 inputs on TF32 tensor cores.
#define ZAYA_GPU_BLASLT 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_rt.h"
#include "zaya/gpu.h"

struct zaya_gpu_gemm {
    zaya_gpu_dtype t;
    int ta, tb;
    int64_t m, n, k;
    void *a, *b;
    float *d;
    void *ws;
    size_t ws_bytes;
    gpublasLtHandle_t lt;
    gpublasLtMatmulDesc_t op;
    gpublasLtMatrixLayout_t la, lb, ld;
    gpublasLtMatmulHeuristicResult_t algo;
    zaya_gpu_stream *stream;
    zaya_gpu_event *e0, *e1;
    char algo_desc[128];
};

static zaya_status blas_check(gpublasStatus_t s, const char *call) {
    if (s == GPUBLAS_STATUS_SUCCESS) return ZAYA_OK;
    return zaya_error_set(ZAYA_EBACKEND, "%s: cuBLASLt status %d", call, (int)s);
}
#define BLAS_TRY(call) ZAYA_TRY(blas_check((call), #call))

static int block_threads(void) {
    int dev = 0, warp = 0;
    gpuGetDevice(&dev);
    if (gpuDeviceGetAttribute(&warp, gpuDevAttrWarpSize, dev) != gpuSuccess || warp <= 0) warp = 64;
    return 8 * warp; /* whole warps on every target (32 or 64 lanes) */
}

__device__ static float uniform_at(uint64_t seed, uint64_t i) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 1; /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (2.0f / 16777216.0f) - 1.0f; /* [-1, 1), 24 bits */
}

template <typename T> __device__ static T from_f32(float x);
template <> __device__ gpu_bf16 from_f32<gpu_bf16>(float x) { return __float2bfloat16(x); }
template <> __device__ gpu_f16 from_f32<gpu_f16>(float x) { return __float2half(x); }
template <> __device__ float from_f32<float>(float x) { return x; }
__device__ static float to_f32(gpu_bf16 x) { return __bfloat162float(x); }
__device__ static float to_f32(gpu_f16 x) { return __half2float(x); }
__device__ static float to_f32(float x) { return x; }

template <typename T> __global__ static void fill_kernel(T *p, int64_t n, uint64_t seed) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        p[i] = from_f32<T>(uniform_at(seed, (uint64_t)i));
}

// One sampled entry per thread: f32-accumulated dot product of row i of A and column j of B, and
// the error of D(i, j) relative to sum |a b|.
template <typename T>
__global__ static void reference_kernel(const T *a, const T *b, const float *d, const int64_t *rows, const int64_t *cols,
                                        int ns, int64_t m, int64_t n, int64_t k, int ta, int tb, double *err) {
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= ns) return;
    int64_t i = rows[s], j = cols[s];
    float acc = 0.0f, mag = 0.0f;
    for (int64_t p = 0; p < k; p++) {
        float x = to_f32(ta ? a[p * m + i] : a[i * k + p]);
        float y = to_f32(tb ? b[j * k + p] : b[p * n + j]);
        acc = fmaf(x, y, acc);
        mag += fabsf(x * y);
    }
    float got = d[i * n + j];
    err[s] = (double)fabsf(got - acc) / (mag > 0 ? (double)mag : 1.0);
}

static size_t elem_size(zaya_gpu_dtype t) { return t == ZAYA_GPU_TF32 ? 4 : 2; }

template <typename T> static zaya_status fill(void *p, int64_t n, uint64_t seed, gpuStream_t s) {
    int bt = block_threads();
    int64_t blocks = (n + bt - 1) / bt;
    if (blocks > 65535) blocks = 65535;
    if (blocks < 1) blocks = 1;
    fill_kernel<T><<<(unsigned)blocks, bt, 0, s>>>((T *)p, n, seed);
    return zaya_gpu_check(gpuGetLastError(), "fill kernel launch");
}

zaya_status zaya_gpu_gemm_init(zaya_gpu_gemm **out, zaya_gpu_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k,
                               uint64_t seed) {
    *out = NULL;
    if (t < 0 || t >= ZAYA_GPU_DTYPE_COUNT) return zaya_error_set(ZAYA_EINVAL, "GEMM: bad dtype %d", (int)t);
    if (m < 1 || n < 1 || k < 1 || m > (1 << 24) || n > (1 << 24) || k > (1 << 24))
        return zaya_error_set(ZAYA_EINVAL, "GEMM: bad shape %lldx%lldx%lld", (long long)m, (long long)n, (long long)k);
    zaya_gpu_gemm *g = (zaya_gpu_gemm *)calloc(1, sizeof *g);
    if (!g) return zaya_error_set(ZAYA_ENOMEM, "GEMM: out of memory");
    *out = g;
    g->t = t;
    g->ta = ta;
    g->tb = tb;
    g->m = m;
    g->n = n;
    g->k = k;
    size_t es = elem_size(t);
    g->ws_bytes = 32u << 20;
    ZAYA_TRY(zaya_gpu_stream_init(&g->stream));
    ZAYA_TRY(zaya_gpu_event_init(&g->e0));
    ZAYA_TRY(zaya_gpu_event_init(&g->e1));
    ZAYA_TRY(zaya_gpu_malloc(&g->a, (size_t)(m * k) * es));
    ZAYA_TRY(zaya_gpu_malloc(&g->b, (size_t)(k * n) * es));
    ZAYA_TRY(zaya_gpu_malloc((void **)&g->d, (size_t)(m * n) * sizeof(float)));
    ZAYA_TRY(zaya_gpu_malloc(&g->ws, g->ws_bytes));
    gpuStream_t s = (gpuStream_t)zaya_gpu_stream_native(g->stream);
    switch (t) {
    case ZAYA_GPU_BF16:
        ZAYA_TRY(fill<gpu_bf16>(g->a, m * k, seed, s));
        ZAYA_TRY(fill<gpu_bf16>(g->b, k * n, seed + 1, s));
        break;
    case ZAYA_GPU_F16:
        ZAYA_TRY(fill<gpu_f16>(g->a, m * k, seed, s));
        ZAYA_TRY(fill<gpu_f16>(g->b, k * n, seed + 1, s));
        break;
    default:
        ZAYA_TRY(fill<float>(g->a, m * k, seed, s));
        ZAYA_TRY(fill<float>(g->b, k * n, seed + 1, s));
        break;
    }
    ZAYA_TRY(zaya_gpu_memset(g->d, 0, (size_t)(m * n) * sizeof(float), g->stream));

    BLAS_TRY(gpublasLtCreate(&g->lt));
    gpublasComputeType_t ct = t == ZAYA_GPU_TF32 ? GPUBLAS_COMPUTE_32F_FAST_TF32 : GPUBLAS_COMPUTE_32F;
    gpuDataType_t it = t == ZAYA_GPU_BF16 ? GPU_R_16BF : t == ZAYA_GPU_F16 ? GPU_R_16F : GPU_R_32F;
    BLAS_TRY(gpublasLtMatmulDescCreate(&g->op, ct, GPU_R_32F));
    // Row-major D = A B is column-major D^T = B^T A^T: cuBLASLt's first operand is our B.
    gpublasOperation_t opa = tb ? GPUBLAS_OP_T : GPUBLAS_OP_N, opb = ta ? GPUBLAS_OP_T : GPUBLAS_OP_N;
    BLAS_TRY(gpublasLtMatmulDescSetAttribute(g->op, GPUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa));
    BLAS_TRY(gpublasLtMatmulDescSetAttribute(g->op, GPUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb));
    if (tb) BLAS_TRY(gpublasLtMatrixLayoutCreate(&g->la, it, (uint64_t)k, (uint64_t)n, k));
    else BLAS_TRY(gpublasLtMatrixLayoutCreate(&g->la, it, (uint64_t)n, (uint64_t)k, n));
    if (ta) BLAS_TRY(gpublasLtMatrixLayoutCreate(&g->lb, it, (uint64_t)m, (uint64_t)k, m));
    else BLAS_TRY(gpublasLtMatrixLayoutCreate(&g->lb, it, (uint64_t)k, (uint64_t)m, k));
    BLAS_TRY(gpublasLtMatrixLayoutCreate(&g->ld, GPU_R_32F, (uint64_t)n, (uint64_t)m, n));
    gpublasLtMatmulPreference_t pref;
    BLAS_TRY(gpublasLtMatmulPreferenceCreate(&pref));
    zaya_status st = blas_check(gpublasLtMatmulPreferenceSetAttribute(pref, GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                      &g->ws_bytes, sizeof g->ws_bytes),
                                "cublasLtMatmulPreferenceSetAttribute");
    int found = 0;
    if (st == ZAYA_OK)
        st = blas_check(gpublasLtMatmulAlgoGetHeuristic(g->lt, g->op, g->la, g->lb, g->ld, g->ld, pref, 1, &g->algo, &found),
                        "cublasLtMatmulAlgoGetHeuristic");
    gpublasLtMatmulPreferenceDestroy(pref);
    ZAYA_TRY(st);
    if (found < 1)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "cublasLtMatmulAlgoGetHeuristic: no algorithm for %s %lldx%lldx%lld",
                              zaya_gpu_dtype_name(t), (long long)m, (long long)n, (long long)k);
    gpublasLtAlgoDescribe(&g->algo, g->algo_desc, sizeof g->algo_desc);
    return zaya_gpu_stream_sync(g->stream);
}

void zaya_gpu_gemm_free(zaya_gpu_gemm *g) {
    if (!g) return;
    if (g->ld) gpublasLtMatrixLayoutDestroy(g->ld);
    if (g->lb) gpublasLtMatrixLayoutDestroy(g->lb);
    if (g->la) gpublasLtMatrixLayoutDestroy(g->la);
    if (g->op) gpublasLtMatmulDescDestroy(g->op);
    if (g->lt) gpublasLtDestroy(g->lt);
    zaya_gpu_free(g->a);
    zaya_gpu_free(g->b);
    zaya_gpu_free(g->d);
    zaya_gpu_free(g->ws);
    zaya_gpu_event_free(g->e0);
    zaya_gpu_event_free(g->e1);
    zaya_gpu_stream_free(g->stream);
    free(g);
}

const char *zaya_gpu_gemm_algo(const zaya_gpu_gemm *g) { return g ? g->algo_desc : "none"; }

static zaya_status run_once(zaya_gpu_gemm *g) {
    const float alpha = 1.0f, beta = 0.0f;
    gpuStream_t s = (gpuStream_t)zaya_gpu_stream_native(g->stream);
    return blas_check(gpublasLtMatmul(g->lt, g->op, &alpha, g->b, g->la, g->a, g->lb, &beta, g->d, g->ld, g->d, g->ld,
                                      &g->algo.algo, g->ws, g->ws_bytes, s),
                      "cublasLtMatmul");
}

void zaya_gpu_gemm_buffers(const zaya_gpu_gemm *g, const void **a, const void **b, const float **d) {
    *a = g->a;
    *b = g->b;
    *d = g->d;
}

zaya_status zaya_gpu_gemm_run(zaya_gpu_gemm *g) {
    ZAYA_TRY(run_once(g));
    return zaya_gpu_stream_sync(g->stream);
}

zaya_status zaya_gpu_gemm_time(zaya_gpu_gemm *g, int warmup, int iters, double *best_ms, double *mean_ms) {
    if (iters < 1) return zaya_error_set(ZAYA_EINVAL, "GEMM timing: iters must be >= 1");
    for (int i = 0; i < warmup; i++) ZAYA_TRY(run_once(g));
    double best = 1e30, sum = 0;
    for (int i = 0; i < iters; i++) {
        ZAYA_TRY(zaya_gpu_event_record(g->e0, g->stream));
        ZAYA_TRY(run_once(g));
        ZAYA_TRY(zaya_gpu_event_record(g->e1, g->stream));
        ZAYA_TRY(zaya_gpu_event_sync(g->e1));
        double ms = 0;
        ZAYA_TRY(zaya_gpu_event_elapsed_ms(g->e0, g->e1, &ms));
        best = ms < best ? ms : best;
        sum += ms;
    }
    *best_ms = best;
    *mean_ms = sum / iters;
    return ZAYA_OK;
}

zaya_status zaya_gpu_gemm_verify(zaya_gpu_gemm *g, int samples, double *max_rel, int64_t *bad) {
    if (samples < 4) samples = 4;
    *max_rel = 0;
    *bad = 0;
    ZAYA_TRY(run_once(g));
    int64_t *hr = (int64_t *)malloc(sizeof(int64_t) * 2 * (size_t)samples);
    double *herr = (double *)malloc(sizeof(double) * (size_t)samples);
    void *dev = NULL;
    zaya_status st = (hr && herr) ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "GEMM verify: out of memory");
    if (st == ZAYA_OK) {
        int64_t *hc = hr + samples;
        int64_t corners[4][2] = {{0, 0}, {0, g->n - 1}, {g->m - 1, 0}, {g->m - 1, g->n - 1}};
        uint64_t z = 0x2545F4914F6CDD1Dull;
        for (int s = 0; s < samples; s++) {
            if (s < 4) {
                hr[s] = corners[s][0];
                hc[s] = corners[s][1];
                continue;
            }
            z ^= z << 13, z ^= z >> 7, z ^= z << 17; /* xorshift64 */
            hr[s] = (int64_t)(z % (uint64_t)g->m);
            hc[s] = (int64_t)((z >> 20) % (uint64_t)g->n);
        }
        st = zaya_gpu_malloc(&dev, sizeof(int64_t) * 2 * (size_t)samples + sizeof(double) * (size_t)samples);
    }
    if (st == ZAYA_OK)
        st = zaya_gpu_memcpy(dev, hr, sizeof(int64_t) * 2 * (size_t)samples, ZAYA_GPU_H2D, g->stream);
    if (st == ZAYA_OK) {
        gpuStream_t s = (gpuStream_t)zaya_gpu_stream_native(g->stream);
        const int64_t *dr = (const int64_t *)dev, *dc = dr + samples;
        double *derr = (double *)(dr + 2 * samples);
        int bt = block_threads(), blocks = (samples + bt - 1) / bt;
        if (g->t == ZAYA_GPU_BF16)
            reference_kernel<gpu_bf16><<<blocks, bt, 0, s>>>((const gpu_bf16 *)g->a, (const gpu_bf16 *)g->b, g->d, dr, dc,
                                                            samples, g->m, g->n, g->k, g->ta, g->tb, derr);
        else if (g->t == ZAYA_GPU_F16)
            reference_kernel<gpu_f16><<<blocks, bt, 0, s>>>((const gpu_f16 *)g->a, (const gpu_f16 *)g->b, g->d, dr, dc,
                                                           samples, g->m, g->n, g->k, g->ta, g->tb, derr);
        else
            reference_kernel<float><<<blocks, bt, 0, s>>>((const float *)g->a, (const float *)g->b, g->d, dr, dc, samples,
                                                         g->m, g->n, g->k, g->ta, g->tb, derr);
        st = zaya_gpu_check(gpuGetLastError(), "reference kernel launch");
        if (st == ZAYA_OK) st = zaya_gpu_memcpy(herr, derr, sizeof(double) * (size_t)samples, ZAYA_GPU_D2H, g->stream);
        if (st == ZAYA_OK) st = zaya_gpu_stream_sync(g->stream);
    }
    if (st == ZAYA_OK) {
        /* bf16 / f16 inputs are exact in f32: only the summation order differs (k roundings of 2^-24
         * each at most, doubled). TF32 rounds both inputs to 10 mantissa bits first. */
        double bound = (double)g->k * ldexp(1.0, -23) + (g->t == ZAYA_GPU_TF32 ? ldexp(1.0, -9) : 0.0);
        for (int s = 0; s < samples; s++) {
            double e = herr[s];
            if (!(e <= bound)) (*bad)++; /* NaN counts */
            if (e > *max_rel || e != e) *max_rel = e;
        }
    }
    zaya_gpu_free(dev);
    free(hr);
    free(herr);
    return st;
}

// The CUDA compute backend's core (include/zaya/backend.h, src/gpu/be_cuda.h): its state on one
// device and one non-blocking stream, the first pending error, memory, the cuBLASLt GEMMs and the
// bf16 conversion. The optimizer's and the elementwise operations are in be_optim.cu; be_ops.cu and
// be_cca.cu install the model's kernels. Operations launch on the calling thread's current device,
// which init selects; the memory calls select the backend's device again when another is current.
//
// GEMM. Row-major C[M,N] = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, so cuBLASLt's first
// operand is our B and its second our A, with the transposes swapped (as in gemm.cu). F32 runs
// CUBLAS_COMPUTE_32F on f32 operands (no TF32: the CPU comparison bound is 1e-5); BF16 has bf16
// operands, f32 accumulation and an f32 C. Matmul descriptors, layouts and the heuristic's algorithm
// are created at the first call of a shape and kept in a fixed table of GEMM_CACHE entries (LRU), so
// the training loop, whose shapes repeat every step, creates nothing. A vary_m GEMM (an expert's
// rows) keeps one entry for every M: its layouts are re-dimensioned per call and the heuristic is
// asked again whenever M differs from the entry's previous call (a query, no allocation).
// cuBLASLt's split-K reductions are ordered (its in-place scheme uses counters that "guarantee the
// sequentiality"), so a shape's results are the same bits run to run.
#define ZAYA_GPU_BLASLT 1
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/be_cuda.h"
#include "zaya/gpu.h"

#define GEMM_CACHE 256
#define GEMM_WS_BYTES ((size_t)32 << 20)
/* Partial sums of the two-pass reductions (be_optim.cu): 1 Mi doubles, 8 MiB. */
#define PARTIALS_COUNT ((size_t)1 << 20)

typedef struct gemm_key {
    int dt, ta, tb, vary_m, beta1;
    int align_a, align_b, align_c; /* bytes, a power of two up to 256 */
    int64_t m, n, k, batch, sa, sb, sc; /* m is -1 for a vary_m entry */
} gemm_key;

typedef struct gemm_entry {
    gemm_key key;
    int used;
    uint64_t stamp; /* last use (LRU eviction) */
    gpublasLtMatmulDesc_t op;
    gpublasLtMatrixLayout_t lx, ly, ld; /* cuBLASLt A (our B), B (our A), C = D */
    gpublasLtMatmulHeuristicResult_t algo;
    int64_t cur_m; /* M the layouts and the algorithm are set for (vary_m entries) */
} gemm_entry;

/* The backend, its public state (be_cuda.h) and the GEMM table in one allocation; be->ctx points at
 * `cu`, the first member, so zaya_cuda_be_of works in every file. */
typedef struct core_state {
    zaya_cuda_be cu;
    zaya_backend be;
    gpublasLtMatmulPreference_t pref;
    uint64_t clock;
    gemm_entry cache[GEMM_CACHE];
} core_state;

static core_state *state_of(zaya_backend *be) { return (core_state *)be->ctx; }

/* ---- errors ---- */

extern "C" void zaya_cuda_be_failf(zaya_backend *be, const char *op, zaya_status code, const char *fmt, ...) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    if (c->err != ZAYA_OK) return; /* the first failure is the one worth reading */
    char what[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    c->err = code;
    snprintf(c->errmsg, sizeof c->errmsg, "backend %s: %s: %s", be->name, op, what);
}

extern "C" void zaya_cuda_be_fail(zaya_backend *be, const char *op, gpuError_t e) {
    zaya_cuda_be_failf(be, op, ZAYA_EBACKEND, "%s: %s", gpuGetErrorName(e), gpuGetErrorString(e));
}

extern "C" void zaya_cuda_be_check_launch(zaya_backend *be, const char *op) {
    gpuError_t e = gpuGetLastError();
    if (e != gpuSuccess) zaya_cuda_be_fail(be, op, e);
}

extern "C" int zaya_cuda_be_blocks(zaya_backend *be, int64_t n, int threads) {
    if (threads <= 0) threads = zaya_cuda_be_of(be)->block;
    int64_t b = (n + threads - 1) / threads;
    return b < 1 ? 1 : b > 65535 ? 65535 : (int)b;
}

/* The pending error as the status of sync() / download(), cleared. */
static zaya_status take_error(zaya_cuda_be *c) {
    if (c->err == ZAYA_OK) return ZAYA_OK;
    zaya_status st = zaya_error_set(c->err, "%s", c->errmsg);
    c->err = ZAYA_OK;
    c->errmsg[0] = 0;
    return st;
}

/* A memory call's own status: "backend cuda:0: upload (4096 bytes): cudaMemcpyAsync: name: message". */
static zaya_status mem_check(zaya_backend *be, gpuError_t e, const char *what, size_t bytes, const char *call) {
    if (e == gpuSuccess) return ZAYA_OK;
    (void)gpuGetLastError();
    return zaya_error_set(ZAYA_EBACKEND, "backend %s: %s (%zu bytes): %s: %s: %s", be->name, what, bytes, call,
                          gpuGetErrorName(e), gpuGetErrorString(e));
}

/* The calling thread may have made another device current since init. */
static gpuError_t use_device(zaya_cuda_be *c) {
    int cur = -1;
    if (gpuGetDevice(&cur) == gpuSuccess && cur == c->device) return gpuSuccess;
    return gpuSetDevice(c->device);
}

/* ---- memory ---- */

static zaya_status be_alloc(zaya_backend *be, void **p, size_t bytes) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    *p = NULL;
    if (bytes == 0) return ZAYA_OK;
    ZAYA_TRY(mem_check(be, use_device(c), "alloc", bytes, "cudaSetDevice"));
    void *q = NULL;
    ZAYA_TRY(mem_check(be, gpuMalloc(&q, bytes), "alloc", bytes, "cudaMalloc"));
    zaya_status st = mem_check(be, gpuMemsetAsync(q, 0, bytes, c->stream), "alloc", bytes, "cudaMemsetAsync");
    if (st != ZAYA_OK) {
        gpuFree(q);
        return st;
    }
    *p = q;
    return ZAYA_OK;
}

static void be_free(zaya_backend *be, void *p) {
    if (!p) return;
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    (void)use_device(c);
    /* Operations queued on the stream may still read p. */
    gpuError_t e = gpuStreamSynchronize(c->stream);
    if (e != gpuSuccess) zaya_cuda_be_fail(be, "free", e);
    gpuFree(p);
}

static zaya_status be_upload(zaya_backend *be, void *dst, const void *host_src, size_t bytes) {
    if (bytes == 0) return ZAYA_OK;
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    ZAYA_TRY(mem_check(be, use_device(c), "upload", bytes, "cudaSetDevice"));
    ZAYA_TRY(mem_check(be, gpuMemcpyAsync(dst, host_src, bytes, gpuMemcpyHostToDevice, c->stream), "upload", bytes,
                       "cudaMemcpyAsync"));
    /* The host buffer is pageable and the caller may reuse it as soon as we return. */
    return mem_check(be, gpuStreamSynchronize(c->stream), "upload", bytes, "cudaStreamSynchronize");
}

static zaya_status be_download(zaya_backend *be, void *host_dst, const void *src, size_t bytes) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    gpuError_t e = use_device(c);
    const char *call = "cudaSetDevice";
    if (e == gpuSuccess && bytes) {
        e = gpuMemcpyAsync(host_dst, src, bytes, gpuMemcpyDeviceToHost, c->stream);
        call = "cudaMemcpyAsync";
    }
    if (e == gpuSuccess) {
        e = gpuStreamSynchronize(c->stream);
        call = "cudaStreamSynchronize";
    }
    /* An operation's failure came first: it is the one to report. */
    if (c->err != ZAYA_OK) {
        (void)gpuGetLastError();
        return take_error(c);
    }
    return mem_check(be, e, "download", bytes, call);
}

static zaya_status be_copy(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    if (bytes == 0) return ZAYA_OK;
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    return mem_check(be, gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, c->stream), "copy", bytes,
                     "cudaMemcpyAsync");
}

static zaya_status be_zero(zaya_backend *be, void *p, size_t bytes) {
    if (bytes == 0) return ZAYA_OK;
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    return mem_check(be, gpuMemsetAsync(p, 0, bytes, c->stream), "zero", bytes, "cudaMemsetAsync");
}

static zaya_status be_sync(zaya_backend *be) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    gpuError_t e = use_device(c);
    if (e == gpuSuccess) e = gpuStreamSynchronize(c->stream);
    /* An asynchronous fault surfaces here without the operation that caused it (CUDA_LAUNCH_BLOCKING=1
     * makes every launch wait, so check_launch names it). */
    if (e != gpuSuccess) {
        zaya_cuda_be_fail(be, "sync", e);
        (void)gpuGetLastError();
    }
    return take_error(c);
}

static zaya_status be_reserve(zaya_backend *be, size_t bytes) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    if (bytes <= c->ws_bytes) return ZAYA_OK;
    ZAYA_TRY(mem_check(be, use_device(c), "reserve", bytes, "cudaSetDevice"));
    /* Operations queued before may still use the old scratch. */
    ZAYA_TRY(mem_check(be, gpuStreamSynchronize(c->stream), "reserve", bytes, "cudaStreamSynchronize"));
    gpuFree(c->ws);
    c->ws = NULL;
    c->ws_bytes = 0;
    void *q = NULL;
    ZAYA_TRY(mem_check(be, gpuMalloc(&q, bytes), "reserve", bytes, "cudaMalloc"));
    c->ws = q;
    c->ws_bytes = bytes;
    return ZAYA_OK;
}

static void gemm_entry_clear(gemm_entry *e) {
    if (e->ld) gpublasLtMatrixLayoutDestroy(e->ld);
    if (e->ly) gpublasLtMatrixLayoutDestroy(e->ly);
    if (e->lx) gpublasLtMatrixLayoutDestroy(e->lx);
    if (e->op) gpublasLtMatmulDescDestroy(e->op);
    memset(e, 0, sizeof *e);
}

static void be_destroy(zaya_backend *be) {
    if (!be) return;
    core_state *s = state_of(be);
    zaya_cuda_be *c = &s->cu;
    (void)use_device(c);
    if (c->stream) gpuStreamSynchronize(c->stream);
    (void)gpuGetLastError();
    for (int i = 0; i < GEMM_CACHE; i++) gemm_entry_clear(&s->cache[i]);
    if (s->pref) gpublasLtMatmulPreferenceDestroy(s->pref);
    if (c->lt) gpublasLtDestroy((gpublasLtHandle_t)c->lt);
    gpuFree(c->ws);
    gpuFree(c->gemm_ws);
    gpuFree(c->partials);
    if (c->stream) gpuStreamDestroy(c->stream);
    (void)gpuGetLastError();
    free(s);
}

/* ---- GEMM ---- */

static const char *dt_name(int dt) { return dt == ZAYA_DTYPE_BF16 ? "bf16" : "f32"; }

/* The alignment cuBLASLt may assume of an operand: its address's, and every batch element's. */
static int align_of(const void *p, int64_t stride_bytes) {
    uint64_t a = (uint64_t)(uintptr_t)p | (uint64_t)stride_bytes | 256u;
    return (int)(a & (~a + 1)); /* lowest set bit */
}

#define LT_TRY(call)                                                                                    \
    do {                                                                                                \
        gpublasStatus_t lt_s_ = (call);                                                                 \
        if (lt_s_ != GPUBLAS_STATUS_SUCCESS) {                                                          \
            zaya_cuda_be_failf(be, opname, ZAYA_EBACKEND, "%s: cuBLASLt status %d (%s %lldx%lldx%lld)", \
                               #call, (int)lt_s_, dt_name(k->dt), (long long)m, (long long)k->n,        \
                               (long long)k->k);                                                        \
            return 0;                                                                                   \
        }                                                                                               \
    } while (0)

/* Sets the per-M dimensions of an entry's layouts: our A ([M,K], or [K,M] with ta: then its leading
 * dimension is M) and C ([M,N]). */
static int gemm_set_m(zaya_backend *be, const char *opname, gemm_entry *e, int64_t m) {
    const gemm_key *k = &e->key;
    uint64_t um = (uint64_t)m;
    int64_t ldm = m;
    if (k->ta) {
        LT_TRY(gpublasLtMatrixLayoutSetAttribute(e->ly, GPUBLASLT_MATRIX_LAYOUT_ROWS, &um, sizeof um));
        LT_TRY(gpublasLtMatrixLayoutSetAttribute(e->ly, GPUBLASLT_MATRIX_LAYOUT_LD, &ldm, sizeof ldm));
    } else {
        LT_TRY(gpublasLtMatrixLayoutSetAttribute(e->ly, GPUBLASLT_MATRIX_LAYOUT_COLS, &um, sizeof um));
    }
    LT_TRY(gpublasLtMatrixLayoutSetAttribute(e->ld, GPUBLASLT_MATRIX_LAYOUT_COLS, &um, sizeof um));
    return 1;
}

static int gemm_pick_algo(zaya_backend *be, const char *opname, gemm_entry *e, int64_t m) {
    core_state *s = state_of(be);
    const gemm_key *k = &e->key;
#if GPUBLASLT_HAS_ALIGNMENT_PREF
    uint32_t ax = (uint32_t)k->align_b, ay = (uint32_t)k->align_a, ac = (uint32_t)k->align_c;
    LT_TRY(gpublasLtMatmulPreferenceSetAttribute(s->pref, GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &ax, sizeof ax));
    LT_TRY(gpublasLtMatmulPreferenceSetAttribute(s->pref, GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &ay, sizeof ay));
    LT_TRY(gpublasLtMatmulPreferenceSetAttribute(s->pref, GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &ac, sizeof ac));
    LT_TRY(gpublasLtMatmulPreferenceSetAttribute(s->pref, GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &ac, sizeof ac));
#endif
    int found = 0;
    LT_TRY(gpublasLtMatmulAlgoGetHeuristic((gpublasLtHandle_t)s->cu.lt, e->op, e->lx, e->ly, e->ld, e->ld, s->pref, 1,
                                           &e->algo, &found));
    if (found < 1) {
        zaya_cuda_be_failf(be, opname, ZAYA_EUNSUPPORTED, "no cuBLASLt algorithm for %s %lldx%lldx%lld ta=%d tb=%d",
                           dt_name(k->dt), (long long)m, (long long)k->n, (long long)k->k, k->ta, k->tb);
        return 0;
    }
    e->cur_m = m;
    return 1;
}

/* Creates the descriptors of a new entry for key k (M = m for the first call). */
static int gemm_entry_make(zaya_backend *be, const char *opname, gemm_entry *e, const gemm_key *k, int64_t m) {
    memset(e, 0, sizeof *e);
    e->key = *k;
    const gpuDataType_t it = k->dt == ZAYA_DTYPE_BF16 ? GPU_R_16BF : GPU_R_32F;
    const uint64_t um = (uint64_t)m, un = (uint64_t)k->n, uk = (uint64_t)k->k;
    LT_TRY(gpublasLtMatmulDescCreate(&e->op, GPUBLAS_COMPUTE_32F, GPU_R_32F));
    gpublasOperation_t opx = k->tb ? GPUBLAS_OP_T : GPUBLAS_OP_N, opy = k->ta ? GPUBLAS_OP_T : GPUBLAS_OP_N;
    LT_TRY(gpublasLtMatmulDescSetAttribute(e->op, GPUBLASLT_MATMUL_DESC_TRANSA, &opx, sizeof opx));
    LT_TRY(gpublasLtMatmulDescSetAttribute(e->op, GPUBLASLT_MATMUL_DESC_TRANSB, &opy, sizeof opy));
    /* Our B: [K,N] row-major is N x K column-major (ld N); [N,K] (tb) is K x N (ld K), transposed. */
    if (k->tb) LT_TRY(gpublasLtMatrixLayoutCreate(&e->lx, it, uk, un, (int64_t)uk));
    else LT_TRY(gpublasLtMatrixLayoutCreate(&e->lx, it, un, uk, (int64_t)un));
    /* Our A: [M,K] is K x M (ld K); [K,M] (ta) is M x K (ld M), transposed. */
    if (k->ta) LT_TRY(gpublasLtMatrixLayoutCreate(&e->ly, it, um, uk, (int64_t)um));
    else LT_TRY(gpublasLtMatrixLayoutCreate(&e->ly, it, uk, um, (int64_t)uk));
    /* C [M,N] is N x M (ld N). */
    LT_TRY(gpublasLtMatrixLayoutCreate(&e->ld, GPU_R_32F, un, um, (int64_t)un));
    if (k->batch > 1) {
        const int32_t nb = (int32_t)k->batch;
        gpublasLtMatrixLayout_t ls[3] = {e->lx, e->ly, e->ld};
        const int64_t strides[3] = {k->sb, k->sa, k->sc};
        for (int i = 0; i < 3; i++) {
            LT_TRY(gpublasLtMatrixLayoutSetAttribute(ls[i], GPUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &nb, sizeof nb));
            LT_TRY(gpublasLtMatrixLayoutSetAttribute(ls[i], GPUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i],
                                                     sizeof strides[i]));
        }
    }
    if (!gemm_pick_algo(be, opname, e, m)) return 0;
    e->used = 1;
    return 1;
}

/* The entry for k (created, evicting the least recently used, on a miss), ready for M = m; NULL on a
 * failure, which is recorded. */
static gemm_entry *gemm_lookup(zaya_backend *be, const char *opname, const gemm_key *k, int64_t m) {
    core_state *s = state_of(be);
    gemm_entry *victim = &s->cache[0];
    for (int i = 0; i < GEMM_CACHE; i++) {
        gemm_entry *e = &s->cache[i];
        if (e->used && !memcmp(&e->key, k, sizeof *k)) {
            e->stamp = ++s->clock;
            if (k->vary_m && e->cur_m != m) {
                if (!gemm_set_m(be, opname, e, m) || !gemm_pick_algo(be, opname, e, m)) {
                    gemm_entry_clear(e);
                    return NULL;
                }
            }
            return e;
        }
        if (!e->used) {
            if (victim->used) victim = e;
        } else if (victim->used && e->stamp < victim->stamp) {
            victim = e;
        }
    }
    gemm_entry_clear(victim);
    if (!gemm_entry_make(be, opname, victim, k, m)) {
        gemm_entry_clear(victim);
        return NULL;
    }
    victim->stamp = ++s->clock;
    return victim;
}

__global__ static void zero_strided_kernel(float *c, int64_t batch, int64_t mn, int64_t sc) {
    const int64_t total = batch * mn;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x)
        c[(i / mn) * sc + i % mn] = 0.0f;
}

static void gemm_run(zaya_backend *be, const char *opname, zaya_dtype dt, int ta, int tb, int64_t batch, int64_t M,
                     int64_t N, int64_t K, const void *a, int64_t sa, const void *b, int64_t sb, float *c, int64_t sc,
                     float alpha, float beta, int vary_m) {
    zaya_cuda_be *cu = zaya_cuda_be_of(be);
    if (dt != ZAYA_DTYPE_F32 && dt != ZAYA_DTYPE_BF16) {
        zaya_cuda_be_failf(be, opname, ZAYA_EINVAL, "bad dtype %d", (int)dt);
        return;
    }
    if (M < 0 || N < 0 || K < 0 || batch < 0 || batch > INT32_MAX) {
        zaya_cuda_be_failf(be, opname, ZAYA_EINVAL, "bad shape %lldx%lldx%lld batch %lld", (long long)M, (long long)N,
                           (long long)K, (long long)batch);
        return;
    }
    if (beta != 0.0f && beta != 1.0f) {
        zaya_cuda_be_failf(be, opname, ZAYA_EINVAL, "beta %g (0 or 1)", (double)beta);
        return;
    }
    if (M == 0 || N == 0 || batch == 0) return;
    if (!c || (K > 0 && (!a || !b))) {
        zaya_cuda_be_failf(be, opname, ZAYA_EINVAL, "NULL operand (%lldx%lldx%lld)", (long long)M, (long long)N,
                           (long long)K);
        return;
    }
    if (batch > 1 && (sc < M * N || (K > 0 && (sa < 0 || sb < 0)))) {
        zaya_cuda_be_failf(be, opname, ZAYA_EINVAL, "batch strides %lld %lld %lld below one matrix", (long long)sa,
                           (long long)sb, (long long)sc);
        return;
    }
    if (K == 0) { /* op(A) op(B) is 0: C = beta C */
        if (beta != 0.0f) return;
        if (batch == 1) {
            gpuError_t e = gpuMemsetAsync(c, 0, (size_t)(M * N) * sizeof(float), cu->stream);
            if (e != gpuSuccess) zaya_cuda_be_fail(be, opname, e);
        } else {
            zero_strided_kernel<<<zaya_cuda_be_blocks(be, batch * M * N, 0), cu->block, 0, cu->stream>>>(c, batch, M * N,
                                                                                                          sc);
            zaya_cuda_be_check_launch(be, opname);
        }
        return;
    }
    const int64_t es = dt == ZAYA_DTYPE_BF16 ? 2 : 4;
    gemm_key k;
    memset(&k, 0, sizeof k); /* padding too: keys compare with memcmp */
    k.dt = (int)dt;
    k.ta = ta ? 1 : 0;
    k.tb = tb ? 1 : 0;
    k.vary_m = vary_m && batch == 1 && !ta ? 1 : 0; /* a weight gradient's varying K: one entry per K */
    k.beta1 = beta != 0.0f;
    k.m = k.vary_m ? -1 : M;
    k.n = N;
    k.k = K;
    k.batch = batch;
    if (batch > 1) {
        k.sa = sa;
        k.sb = sb;
        k.sc = sc;
    }
    k.align_a = align_of(a, batch > 1 ? sa * es : 0);
    k.align_b = align_of(b, batch > 1 ? sb * es : 0);
    k.align_c = align_of(c, batch > 1 ? sc * 4 : 0);
    gemm_entry *e = gemm_lookup(be, opname, &k, M);
    if (!e) return;
    gpublasStatus_t st = gpublasLtMatmul((gpublasLtHandle_t)cu->lt, e->op, &alpha, b, e->lx, a, e->ly, &beta, c, e->ld,
                                         c, e->ld, &e->algo.algo, cu->gemm_ws, cu->gemm_ws_bytes, cu->stream);
    if (st != GPUBLAS_STATUS_SUCCESS)
        zaya_cuda_be_failf(be, opname, ZAYA_EBACKEND, "cublasLtMatmul: cuBLASLt status %d (%s %lldx%lldx%lld batch %lld)",
                           (int)st, dt_name(dt), (long long)M, (long long)N, (long long)K, (long long)batch);
}

static void be_gemm(zaya_backend *be, zaya_dtype dt, int ta, int tb, int64_t M, int64_t N, int64_t K, const void *a,
                    const void *b, float *c, float beta, int vary_m) {
    gemm_run(be, "gemm", dt, ta, tb, 1, M, N, K, a, 0, b, 0, c, 0, 1.0f, beta, vary_m);
}

static void be_gemm_batched(zaya_backend *be, zaya_dtype dt, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                            int64_t K, const void *a, int64_t sa, const void *b, int64_t sb, float *c, int64_t sc,
                            float alpha, float beta) {
    gemm_run(be, "gemm_batched", dt, ta, tb, batch, M, N, K, a, sa, b, sb, c, sc, alpha, beta, 0);
}

/* bf16 rounding bit for bit as zaya_f32_to_bf16 (zaya_cuda_bf16_bits, be_cuda.h). */
__global__ static void to_bf16_kernel(uint16_t *dst, const float *src, int64_t n) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        dst[i] = zaya_cuda_bf16_bits(src[i]);
}

static void be_to_bf16(zaya_backend *be, uint16_t *dst, const float *src, int64_t n) {
    if (n <= 0) return;
    if (!dst || !src) {
        zaya_cuda_be_failf(be, "to_bf16", ZAYA_EINVAL, "NULL operand (n = %lld)", (long long)n);
        return;
    }
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    to_bf16_kernel<<<zaya_cuda_be_blocks(be, n, 0), c->block, 0, c->stream>>>(dst, src, n);
    zaya_cuda_be_check_launch(be, "to_bf16");
}

extern "C" void zaya_cuda_be_install_core(zaya_backend *be) {
    be->alloc = be_alloc;
    be->free = be_free;
    be->upload = be_upload;
    be->download = be_download;
    be->copy = be_copy;
    be->zero = be_zero;
    be->sync = be_sync;
    be->reserve = be_reserve;
    be->destroy = be_destroy;
    be->gemm = be_gemm;
    be->gemm_batched = be_gemm_batched;
    be->to_bf16 = be_to_bf16;
    zaya_cuda_be_install_optim(be);
}

/* ---- init ---- */

static zaya_status init_fail(zaya_backend *be, gpuError_t e, const char *call) {
    zaya_status st = zaya_error_set(ZAYA_EBACKEND, "backend %s: %s: %s: %s", be->name, call, gpuGetErrorName(e),
                                    gpuGetErrorString(e));
    (void)gpuGetLastError();
    be_destroy(be);
    return st;
}

extern "C" zaya_status zaya_gpu_backend_init(zaya_device d, zaya_backend **out) {
    *out = NULL;
    ZAYA_TRY(zaya_gpu_select(d)); /* "device cuda:1: 1 CUDA device visible" */
    core_state *s = (core_state *)calloc(1, sizeof *s);
    if (!s) return zaya_error_set(ZAYA_ENOMEM, "backend cuda:%d: out of memory", d.index);
    zaya_cuda_be *c = &s->cu;
    zaya_backend *be = &s->be;
    be->ctx = c;
    be->is_host = 0;
    be->version = ZAYA_BACKEND_VERSION;
    zaya_device_format(d, be->name, sizeof be->name);
    c->device = d.index;
    c->err = ZAYA_OK;
    int warp = 0, sms = 0;
    if (gpuDeviceGetAttribute(&warp, gpuDevAttrWarpSize, d.index) != gpuSuccess || warp <= 0) warp = 32;
    if (gpuDeviceGetAttribute(&sms, gpuDevAttrMultiProcessorCount, d.index) != gpuSuccess || sms <= 0) sms = 1;
    (void)gpuGetLastError();
    c->block = 8 * warp; /* whole warps on every target (256 threads on 32 lanes) */
    c->sm_count = sms;
    gpuError_t e = gpuStreamCreateWithFlags(&c->stream, gpuStreamNonBlocking);
    if (e != gpuSuccess) {
        c->stream = NULL;
        return init_fail(be, e, "cudaStreamCreateWithFlags");
    }
    gpublasLtHandle_t lt = NULL;
    gpublasStatus_t bs = gpublasLtCreate(&lt);
    if (bs != GPUBLAS_STATUS_SUCCESS) {
        zaya_status st = zaya_error_set(ZAYA_EBACKEND, "backend %s: cublasLtCreate: cuBLASLt status %d", be->name, (int)bs);
        be_destroy(be);
        return st;
    }
    c->lt = lt;
    bs = gpublasLtMatmulPreferenceCreate(&s->pref);
    c->gemm_ws_bytes = GEMM_WS_BYTES;
    if (bs == GPUBLAS_STATUS_SUCCESS)
        bs = gpublasLtMatmulPreferenceSetAttribute(s->pref, GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &c->gemm_ws_bytes,
                                                   sizeof c->gemm_ws_bytes);
    if (bs != GPUBLAS_STATUS_SUCCESS) {
        zaya_status st = zaya_error_set(ZAYA_EBACKEND, "backend %s: cuBLASLt matmul preference: status %d", be->name,
                                        (int)bs);
        be_destroy(be);
        return st;
    }
    if ((e = gpuMalloc(&c->gemm_ws, c->gemm_ws_bytes)) != gpuSuccess) {
        c->gemm_ws = NULL;
        return init_fail(be, e, "cudaMalloc(cuBLASLt workspace)");
    }
    c->partials_count = PARTIALS_COUNT;
    if ((e = gpuMalloc((void **)&c->partials, c->partials_count * sizeof(double))) != gpuSuccess) {
        c->partials = NULL;
        return init_fail(be, e, "cudaMalloc(reduction partials)");
    }
    zaya_cuda_be_install_core(be);
    zaya_cuda_be_install_ops(be);
    zaya_cuda_be_install_cca(be);
    *out = be;
    return ZAYA_OK;
}

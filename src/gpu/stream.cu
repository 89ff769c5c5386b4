// `zaya bench mem --device cuda`: BabelStream's five kernels on device arrays of doubles (STREAM
// rules: best of N with the first iteration excluded, arrays validated against a host replay), and
// host<->device copy bandwidth from pinned and pageable memory.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu_rt.h"
#include "zaya/gpu.h"

/* The module's own monotonic clock (zaya_now_ns is the host's: the module calls nothing in it). */
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const double k_scalar = 0.4, k_init_a = 0.1, k_init_b = 0.2, k_init_c = 0.0;

__global__ static void init_kernel(double *a, double *b, double *c, int64_t n, double va, double vb, double vc) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        a[i] = va;
        b[i] = vb;
        c[i] = vc;
    }
}
__global__ static void copy_kernel(const double *a, double *c, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i];
}
__global__ static void mul_kernel(double *b, const double *c, double s, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = s * c[i];
}
__global__ static void add_kernel(const double *a, const double *b, double *c, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
__global__ static void triad_kernel(double *a, const double *b, const double *c, double s, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = b[i] + s * c[i];
}
// Grid-stride partial sums, reduced in shared memory by a tree over the block (blockDim a power of
// two): no warp-synchronous step, so nothing depends on the warp width.
__global__ static void dot_kernel(const double *a, const double *b, double *partial, int64_t n) {
    extern __shared__ double sum[];
    double acc = 0.0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        acc += a[i] * b[i];
    sum[threadIdx.x] = acc;
    for (unsigned off = blockDim.x / 2; off > 0; off /= 2) {
        __syncthreads();
        if (threadIdx.x < off) sum[threadIdx.x] += sum[threadIdx.x + off];
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = sum[0];
}

typedef struct stream_ctx {
    double *a, *b, *c, *partial, *host_partial;
    zaya_gpu_stream *s;
    zaya_gpu_event *e0, *e1;
} stream_ctx;

static void ctx_free(stream_ctx *x) {
    zaya_gpu_free(x->a);
    zaya_gpu_free(x->b);
    zaya_gpu_free(x->c);
    zaya_gpu_free(x->partial);
    zaya_gpu_host_free(x->host_partial);
    zaya_gpu_event_free(x->e0);
    zaya_gpu_event_free(x->e1);
    zaya_gpu_stream_free(x->s);
}

static zaya_status run_stream(stream_ctx *x, int64_t n, int ntimes, zaya_gpu_stream_result *r, double *dot_out) {
    int dev = 0, warp = 0, sms = 0;
    gpuGetDevice(&dev);
    if (gpuDeviceGetAttribute(&warp, gpuDevAttrWarpSize, dev) != gpuSuccess || warp <= 0) warp = 64;
    gpuDeviceProp q;
    ZAYA_TRY(zaya_gpu_check(gpuGetDeviceProperties(&q, dev), "cudaGetDeviceProperties"));
    sms = q.multiProcessorCount;
    int bt = 1;
    while (bt < 8 * warp) bt *= 2; /* a power of two holding whole warps: 256 for 32 lanes, 512 for 64 */
    r->block = bt;
    int dot_blocks = 4 * (sms > 0 ? sms : 1);
    size_t bytes = (size_t)n * sizeof(double);
    ZAYA_TRY(zaya_gpu_stream_init(&x->s));
    ZAYA_TRY(zaya_gpu_event_init(&x->e0));
    ZAYA_TRY(zaya_gpu_event_init(&x->e1));
    ZAYA_TRY(zaya_gpu_malloc((void **)&x->a, bytes));
    ZAYA_TRY(zaya_gpu_malloc((void **)&x->b, bytes));
    ZAYA_TRY(zaya_gpu_malloc((void **)&x->c, bytes));
    ZAYA_TRY(zaya_gpu_malloc((void **)&x->partial, sizeof(double) * (size_t)dot_blocks));
    ZAYA_TRY(zaya_gpu_host_malloc((void **)&x->host_partial, sizeof(double) * (size_t)dot_blocks));
    gpuStream_t s = (gpuStream_t)zaya_gpu_stream_native(x->s);
    unsigned blocks = (unsigned)((n + bt - 1) / bt);
    init_kernel<<<blocks, bt, 0, s>>>(x->a, x->b, x->c, n, k_init_a, k_init_b, k_init_c);
    ZAYA_TRY(zaya_gpu_check(gpuGetLastError(), "BabelStream kernel launch"));
    ZAYA_TRY(zaya_gpu_stream_sync(x->s));
    for (int k = 0; k < ZAYA_GPU_KERNEL_COUNT; k++) {
        r->best_s[k] = 1e30;
        r->mean_s[k] = 0;
    }
    for (int it = 0; it < ntimes; it++) {
        for (int k = 0; k < ZAYA_GPU_KERNEL_COUNT; k++) {
            ZAYA_TRY(zaya_gpu_event_record(x->e0, x->s));
            switch (k) {
            case ZAYA_GPU_COPY: copy_kernel<<<blocks, bt, 0, s>>>(x->a, x->c, n); break;
            case ZAYA_GPU_MUL: mul_kernel<<<blocks, bt, 0, s>>>(x->b, x->c, k_scalar, n); break;
            case ZAYA_GPU_ADD: add_kernel<<<blocks, bt, 0, s>>>(x->a, x->b, x->c, n); break;
            case ZAYA_GPU_TRIAD: triad_kernel<<<blocks, bt, 0, s>>>(x->a, x->b, x->c, k_scalar, n); break;
            default:
                dot_kernel<<<dot_blocks, bt, bt * sizeof(double), s>>>(x->a, x->b, x->partial, n);
                ZAYA_TRY(zaya_gpu_memcpy(x->host_partial, x->partial, sizeof(double) * (size_t)dot_blocks, ZAYA_GPU_D2H,
                                         x->s));
                break;
            }
            ZAYA_TRY(zaya_gpu_check(gpuGetLastError(), "BabelStream kernel launch"));
            ZAYA_TRY(zaya_gpu_event_record(x->e1, x->s));
            ZAYA_TRY(zaya_gpu_event_sync(x->e1));
            double ms = 0;
            ZAYA_TRY(zaya_gpu_event_elapsed_ms(x->e0, x->e1, &ms));
            if (k == ZAYA_GPU_DOT) {
                double d = 0;
                for (int i = 0; i < dot_blocks; i++) d += x->host_partial[i];
                *dot_out = d;
            }
            if (it == 0) continue; /* STREAM: the first iteration is not counted */
            double sec = ms * 1e-3;
            if (sec < r->best_s[k]) r->best_s[k] = sec;
            r->mean_s[k] += sec / (ntimes - 1);
        }
    }
    for (int k = 0; k < ZAYA_GPU_KERNEL_COUNT; k++)
        r->best_GBps[k] = (double)zaya_gpu_stream_kernel_bytes((zaya_gpu_stream_kernel)k) * (double)n / r->best_s[k] / 1e9;
    return ZAYA_OK;
}

// Every element of each array must equal the host replay of the same sequence (the operations are
// element-wise, so one scalar replay stands for all of them); the dot against n * a * b.
static zaya_status validate(stream_ctx *x, int64_t n, int ntimes, double dot, zaya_gpu_stream_result *r) {
    double ga = k_init_a, gb = k_init_b, gc = k_init_c;
    for (int it = 0; it < ntimes; it++) {
        gc = ga;
        gb = k_scalar * gc;
        gc = ga + gb;
        ga = gb + k_scalar * gc;
    }
    double gdot = ga * gb * (double)n;
    size_t bytes = (size_t)n * sizeof(double);
    double *h = (double *)malloc(bytes);
    if (!h) return zaya_error_set(ZAYA_ENOMEM, "bench mem: out of memory for validation (%zu bytes)", bytes);
    const double *arrs[3] = {x->a, x->b, x->c};
    const double gold[3] = {ga, gb, gc};
    double worst = 0;
    zaya_status st = ZAYA_OK;
    for (int k = 0; k < 3 && st == ZAYA_OK; k++) {
        st = zaya_gpu_memcpy(h, arrs[k], bytes, ZAYA_GPU_D2H, x->s);
        if (st == ZAYA_OK) st = zaya_gpu_stream_sync(x->s);
        for (int64_t i = 0; st == ZAYA_OK && i < n; i++) {
            double e = fabs(h[i] - gold[k]) / fabs(gold[k]);
            if (e != e) e = INFINITY; /* NaN (an unwritten element) is the worst error */
            if (e > worst) worst = e;
        }
    }
    free(h);
    ZAYA_TRY(st);
    double edot = fabs(dot - gdot) / fabs(gdot);
    if (edot != edot) edot = INFINITY;
    if (edot > worst) worst = edot;
    r->max_rel_err = worst;
    r->validated = worst <= 1e-8; /* BabelStream's bound for doubles */
    return ZAYA_OK;
}

zaya_status zaya_gpu_stream_run(int64_t n, int ntimes, zaya_gpu_stream_result *r) {
    memset(r, 0, sizeof *r);
    if (ntimes < 2) return zaya_error_set(ZAYA_EINVAL, "bench mem: --ntimes must be >= 2 (the first is not counted)");
    if (n < 1024) return zaya_error_set(ZAYA_EINVAL, "bench mem: arrays of %lld doubles are too small", (long long)n);
    stream_ctx x = {0};
    double dot = 0;
    zaya_status st = run_stream(&x, n, ntimes, r, &dot);
    if (st == ZAYA_OK) st = validate(&x, n, ntimes, dot, r);
    ctx_free(&x);
    return st;
}

zaya_status zaya_gpu_copy_bandwidth(size_t bytes, int pinned, zaya_gpu_copy kind, int ntimes, double *best_GBps) {
    *best_GBps = 0;
    if (kind != ZAYA_GPU_H2D && kind != ZAYA_GPU_D2H)
        return zaya_error_set(ZAYA_EINVAL, "copy bandwidth: host<->device only");
    if (ntimes < 2) return zaya_error_set(ZAYA_EINVAL, "copy bandwidth: ntimes must be >= 2");
    void *host = NULL, *dev = NULL;
    zaya_gpu_stream *s = NULL;
    zaya_status st = pinned ? zaya_gpu_host_malloc(&host, bytes) : ZAYA_OK;
    if (!pinned) {
        host = malloc(bytes);
        if (!host) st = zaya_error_set(ZAYA_ENOMEM, "copy bandwidth: cannot allocate %zu pageable bytes", bytes);
        else memset(host, 1, bytes); /* fault the pages in: the copy, not the first touch, is measured */
    }
    if (st == ZAYA_OK) st = zaya_gpu_malloc(&dev, bytes);
    if (st == ZAYA_OK) st = zaya_gpu_stream_init(&s);
    double best = 1e30;
    for (int it = 0; st == ZAYA_OK && it < ntimes; it++) {
        uint64_t t0 = now_ns();
        st = kind == ZAYA_GPU_H2D ? zaya_gpu_memcpy(dev, host, bytes, kind, s) : zaya_gpu_memcpy(host, dev, bytes, kind, s);
        if (st == ZAYA_OK) st = zaya_gpu_stream_sync(s);
        double sec = (double)(now_ns() - t0) * 1e-9;
        if (it > 0 && sec < best) best = sec;
    }
    if (st == ZAYA_OK) *best_GBps = (double)bytes / best / 1e9;
    zaya_gpu_stream_free(s);
    zaya_gpu_free(dev);
    if (pinned) zaya_gpu_host_free(host);
    else free(host);
    return st;
}

/* Internal: the CUDA module's interface (docs/gpu.md, "The CUDA module").
 *
 * The CUDA code (the .cu files of src/gpu, cuda_module.c and the NCCL communicator src/dist/nccl.c) is built into
 * one shared module, libzaya_cuda.so, that links libcudart, libcublasLt and libnccl; the zaya binary
 * links none of them. src/gpu/loader.c opens the module with dlopen the first time a command asks
 * for a device, calls its one exported symbol (ZAYA_GPU_MODULE_ENTRY) and forwards every function of
 * zaya/gpu.h (and the NCCL part of zaya/dist.h, through src/dist/nccl_host.c) to the table below.
 *
 * The table is the module's only contract with the host: plain C types, no CUDA type, a version that
 * both sides check. The module calls nothing in the host but the error setter it is handed (so it
 * links with -z defs and needs no symbol of the executable). Member `x` is the function `zaya_x`
 * (gpu_malloc is zaya_gpu_malloc); NCCL dtypes and reduction ops travel as the int values of
 * zaya_dist_dtype and zaya_redop (zaya/dist.h belongs to the layer above this one). */
#ifndef ZAYA_GPU_MODULE_H
#define ZAYA_GPU_MODULE_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/gpu.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raised whenever the table below changes shape or meaning. */
#define ZAYA_GPU_MODULE_ABI 1
#define ZAYA_GPU_MODULE_ENTRY "zaya_gpu_module_entry"
#define ZAYA_GPU_MODULE_FILE "libzaya_cuda.so"
/* Environment variable naming the module's path (overrides the search next to the executable). */
#define ZAYA_GPU_MODULE_ENV "ZAYA_CUDA_MODULE"

struct zaya_nccl;

/* What the host hands the module: the host's zaya_error_set, so that messages set inside the module
 * land in the caller's thread-local error buffer. */
typedef struct zaya_gpu_host {
    uint32_t abi;
    zaya_status (*error_set)(zaya_status code, const char *fmt, ...);
} zaya_gpu_host;

/* The functions of zaya/gpu.h that return a status: X(member, what, params, args, clear), where
 * `what` names the request in the "built without CUDA" message and `clear` resets the out-parameter
 * when the module cannot serve it. */
#define ZAYA_GPU_MODULE_STATUS_FUNCS(X)                                                                       \
    X(gpu_props_get, "device properties", (int index, zaya_gpu_props *p), (index, p), (void)0)               \
    X(gpu_malloc, "device memory", (void **p, size_t bytes), (p, bytes), *p = NULL)                           \
    X(gpu_host_malloc, "pinned host memory", (void **p, size_t bytes), (p, bytes), *p = NULL)                 \
    X(gpu_memcpy, "device copy", (void *dst, const void *src, size_t bytes, zaya_gpu_copy kind, zaya_gpu_stream *s), \
      (dst, src, bytes, kind, s), (void)0)                                                                    \
    X(gpu_memset, "device memset", (void *p, int value, size_t bytes, zaya_gpu_stream *s), (p, value, bytes, s), \
      (void)0)                                                                                                \
    X(gpu_sync, "device synchronize", (void), (), (void)0)                                                    \
    X(gpu_stream_init, "streams", (zaya_gpu_stream **s), (s), *s = NULL)                                      \
    X(gpu_stream_sync, "streams", (zaya_gpu_stream *s), (s), (void)0)                                         \
    X(gpu_event_init, "events", (zaya_gpu_event **e), (e), *e = NULL)                                         \
    X(gpu_event_record, "events", (zaya_gpu_event *e, zaya_gpu_stream *s), (e, s), (void)0)                   \
    X(gpu_event_sync, "events", (zaya_gpu_event *e), (e), (void)0)                                            \
    X(gpu_event_elapsed_ms, "events", (zaya_gpu_event *start, zaya_gpu_event *end, double *ms), (start, end, ms), \
      (void)0)                                                                                                \
    X(gpu_gemm_init, "cuBLASLt GEMM",                                                                         \
      (zaya_gpu_gemm **g, zaya_gpu_dtype t, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, uint64_t seed), \
      (g, t, trans_a, trans_b, m, n, k, seed), *g = NULL)                                                     \
    X(gpu_gemm_run, "cuBLASLt GEMM", (zaya_gpu_gemm *g), (g), (void)0)                                        \
    X(gpu_gemm_time, "cuBLASLt GEMM", (zaya_gpu_gemm *g, int warmup, int iters, double *best_ms, double *mean_ms), \
      (g, warmup, iters, best_ms, mean_ms), (void)0)                                                          \
    X(gpu_gemm_verify, "cuBLASLt GEMM", (zaya_gpu_gemm *g, int samples, double *max_rel, int64_t *bad),        \
      (g, samples, max_rel, bad), (void)0)                                                                    \
    X(gpu_stream_run, "device memory bandwidth", (int64_t n, int ntimes, zaya_gpu_stream_result *r), (n, ntimes, r), \
      (void)0)                                                                                                \
    X(gpu_copy_bandwidth, "host<->device bandwidth",                                                          \
      (size_t bytes, int pinned, zaya_gpu_copy kind, int ntimes, double *best_GBps),                          \
      (bytes, pinned, kind, ntimes, best_GBps), (void)0)                                                      \
    X(gpu_backend_init, "the CUDA compute backend", (zaya_device d, zaya_backend **out), (d, out), *out = NULL)

/* The functions of zaya/gpu.h that release what the module gave out: X(member, params, args). */
#define ZAYA_GPU_MODULE_VOID_FUNCS(X)                           \
    X(gpu_free, (void *p), (p))                                 \
    X(gpu_host_free, (void *p), (p))                            \
    X(gpu_stream_free, (zaya_gpu_stream *s), (s))               \
    X(gpu_event_free, (zaya_gpu_event *e), (e))                 \
    X(gpu_gemm_free, (zaya_gpu_gemm *g), (g))

/* The NCCL communicator's collectives (zaya/dist.h): X(member, params, args). */
#define ZAYA_GPU_MODULE_NCCL_FUNCS(X)                                                                          \
    X(nccl_allreduce, (const struct zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, int t, int op), \
      (n, local, sb, rb, count, t, op))                                                                        \
    X(nccl_reduce_scatter,                                                                                     \
      (const struct zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, int t, int op),          \
      (n, local, sb, rb, count, t, op))                                                                        \
    X(nccl_allgather, (const struct zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, int t),   \
      (n, local, sb, rb, count, t))                                                                            \
    X(nccl_broadcast,                                                                                          \
      (const struct zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, int t, int root),        \
      (n, local, sb, rb, count, t, root))                                                                      \
    X(nccl_reduce,                                                                                             \
      (const struct zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, int t, int op, int root), \
      (n, local, sb, rb, count, t, op, root))                                                                  \
    X(nccl_alltoall, (const struct zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, int t),    \
      (n, local, sb, rb, count, t))                                                                            \
    X(nccl_sendrecv,                                                                                           \
      (const struct zaya_nccl *n, int local, const void *sb, int dst, void *rb, int src, int64_t count, int t), \
      (n, local, sb, dst, rb, src, count, t))

#define ZAYA_GPU_MODULE_MEMBER_STATUS(m, what, params, args, clear) zaya_status (*m) params;
#define ZAYA_GPU_MODULE_MEMBER_VOID(m, params, args) void (*m) params;
#define ZAYA_GPU_MODULE_MEMBER_NCCL(m, params, args) zaya_status (*m) params;

typedef struct zaya_gpu_module {
    uint32_t abi;  /* ZAYA_GPU_MODULE_ABI of the module's build */
    uint32_t size; /* sizeof(zaya_gpu_module) of the module's build */
    const char *name; /* "cuda" */

    /* ---- zaya/gpu.h ---- */
    int (*gpu_device_count)(void);
    zaya_status (*gpu_select)(zaya_device d);
    void *(*gpu_stream_native)(zaya_gpu_stream *s);
    const char *(*gpu_gemm_algo)(const zaya_gpu_gemm *g);
    void (*gpu_gemm_buffers)(const zaya_gpu_gemm *g, const void **a, const void **b, const float **d);
    ZAYA_GPU_MODULE_STATUS_FUNCS(ZAYA_GPU_MODULE_MEMBER_STATUS)
    ZAYA_GPU_MODULE_VOID_FUNCS(ZAYA_GPU_MODULE_MEMBER_VOID)

    /* ---- the NCCL communicator (src/dist/nccl.c); every member NULL in a module built without NCCL ---- */
    const char *(*nccl_version)(void);
    /* Rank 0's ncclUniqueId into id (cap bytes, at least ZAYA_GPU_NCCL_ID_BYTES); *len its size. */
    zaya_status (*nccl_unique_id)(void *id, size_t cap, size_t *len);
    /* One communicator rank per local device: ranks rank0 .. rank0 + ndev - 1 of nranks, from the id
     * every process received. */
    zaya_status (*nccl_init_ranks)(int ndev, const int *devices, int nranks, int rank0, const void *id, size_t len,
                                   struct zaya_nccl **out);
    void (*nccl_free)(struct zaya_nccl *n);
    int (*nccl_size)(const struct zaya_nccl *n);
    int (*nccl_local_count)(const struct zaya_nccl *n);
    int (*nccl_rank)(const struct zaya_nccl *n, int local);
    int (*nccl_device)(const struct zaya_nccl *n, int local);
    zaya_gpu_stream *(*nccl_stream)(const struct zaya_nccl *n, int local);
    zaya_status (*nccl_group_start)(void);
    zaya_status (*nccl_group_end)(void);
    ZAYA_GPU_MODULE_NCCL_FUNCS(ZAYA_GPU_MODULE_MEMBER_NCCL)
} zaya_gpu_module;

/* ncclUniqueId's size (NCCL_UNIQUE_ID_BYTES); the host's buffer for it. */
#define ZAYA_GPU_NCCL_ID_BYTES 128

/* The module's exported entry: its table, or NULL when host->abi differs from the module's. */
typedef const zaya_gpu_module *(*zaya_gpu_module_entry_fn)(const zaya_gpu_host *host);

/* ---- host side (src/gpu/loader.c) ---- */
/* The loaded module's table (loading it on first use), or the reason there is none: "built without
 * CUDA", or the dynamic loader's message naming the module or the CUDA library it could not open. */
zaya_status zaya_gpu_module_get(const zaya_gpu_module **out);
/* 1 when this build's module has the NCCL communicator (known without loading it). */
int zaya_gpu_module_nccl_built(void);

#ifdef __cplusplus
}
#endif

#endif

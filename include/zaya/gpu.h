/* Device layer (src/gpu, docs/gpu.md): device selection, device and pinned host memory, streams,
 * events, the datasheet table, and the device benchmarks' building blocks (a cuBLASLt GEMM with its
 * reference check, BabelStream kernels, host<->device copies).
 *
 * No CUDA type appears here: streams and events are opaque handles, device pointers are void *, so
 * CPU-only code includes this header. The CUDA code is a module (libzaya_cuda.so) that the zaya
 * binary does not link: the functions below open it with dlopen the first time one of them needs the
 * device (zaya_gpu_load), so a CPU command never maps the CUDA libraries and a binary built with CUDA
 * runs on a machine without them. Where the module or a CUDA library is missing, a request fails
 * with ZAYA_EBACKEND and the dynamic loader's message naming it, and zaya_gpu_device_count() is 0. A
 * build without CUDA (-DZAYA_CUDA=OFF, or no nvcc) has no module: requests fail with
 * ZAYA_EUNSUPPORTED and "built without CUDA". Errors name the runtime call that failed and its
 * message ("cudaMalloc(1073741824 bytes): out of memory"). One thread drives one device at a time:
 * the current device is per thread, as in the CUDA runtime. */
#ifndef ZAYA_GPU_H
#define ZAYA_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/backend.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- device selection: --device cpu|cuda[:N] ---- */
typedef enum zaya_device_kind { ZAYA_DEVICE_CPU = 0, ZAYA_DEVICE_CUDA = 1 } zaya_device_kind;
typedef struct zaya_device {
    zaya_device_kind kind;
    int index; /* CUDA device ordinal (0 for "cuda"); 0 for the CPU */
} zaya_device;

/* "cpu", "cuda" (= cuda:0) or "cuda:N" (N a decimal ordinal 0..1023); anything else is ZAYA_EINVAL
 * naming the string. Parsing does not look at the hardware (zaya_gpu_select does). */
zaya_status zaya_device_parse(const char *s, zaya_device *out);
/* "cpu" or "cuda:N" into buf (always terminated). */
void zaya_device_format(zaya_device d, char *buf, size_t cap);

/* ---- runtime ---- */
int zaya_gpu_built(void);                /* 1 when this build has the CUDA backend (module or not) */
const char *zaya_gpu_backend_name(void); /* "cuda" or "none" */
/* Opens the CUDA module unless it is open: ZAYA_OK, or why it cannot be (built without CUDA; the
 * module not found: the paths searched; a CUDA library missing: the dynamic loader's message naming
 * it). The path is $ZAYA_CUDA_MODULE when set, else libzaya_cuda.so next to the executable, in
 * ../lib from it, or in its parent folder. Tried once per process; the outcome is kept. */
zaya_status zaya_gpu_load(void);
int zaya_gpu_loaded(void);              /* 1 once the module is open */
const char *zaya_gpu_module_path(void); /* the open module's path; "" before */
/* Visible devices: 0 when built without CUDA, without a driver, or with no device (never an error,
 * so tests can skip). */
int zaya_gpu_device_count(void);
/* Makes d the calling thread's current device; d must be a CUDA device below the count. */
zaya_status zaya_gpu_select(zaya_device d);

typedef struct zaya_gpu_props {
    char name[256];
    int index, cc_major, cc_minor;
    int sm_count, warp_size, max_threads_per_block;
    int64_t total_mem, l2_bytes;
    int mem_bus_bits;
    double mem_clock_khz, sm_clock_khz; /* 0 when the runtime does not report them */
    int runtime_version, driver_version; /* 13000 = 13.0 */
} zaya_gpu_props;
zaya_status zaya_gpu_props_get(int index, zaya_gpu_props *p);

/* Device memory (zeroed is not promised), pinned host memory, copies, memset. Copies run on stream
 * s (NULL: the default stream) and may be asynchronous for pinned host memory. */
zaya_status zaya_gpu_malloc(void **p, size_t bytes);
void zaya_gpu_free(void *p);
zaya_status zaya_gpu_host_malloc(void **p, size_t bytes);
void zaya_gpu_host_free(void *p);

typedef struct zaya_gpu_stream zaya_gpu_stream;
typedef struct zaya_gpu_event zaya_gpu_event;
typedef enum zaya_gpu_copy { ZAYA_GPU_H2D = 0, ZAYA_GPU_D2H, ZAYA_GPU_D2D } zaya_gpu_copy;

zaya_status zaya_gpu_memcpy(void *dst, const void *src, size_t bytes, zaya_gpu_copy kind, zaya_gpu_stream *s);
zaya_status zaya_gpu_memset(void *p, int value, size_t bytes, zaya_gpu_stream *s);
zaya_status zaya_gpu_sync(void); /* the current device */

zaya_status zaya_gpu_stream_init(zaya_gpu_stream **s);
void zaya_gpu_stream_free(zaya_gpu_stream *s);
zaya_status zaya_gpu_stream_sync(zaya_gpu_stream *s);
/* The runtime's stream handle (cudaStream_t) as an opaque pointer, for NCCL in src/dist. */
void *zaya_gpu_stream_native(zaya_gpu_stream *s);

zaya_status zaya_gpu_event_init(zaya_gpu_event **e);
void zaya_gpu_event_free(zaya_gpu_event *e);
zaya_status zaya_gpu_event_record(zaya_gpu_event *e, zaya_gpu_stream *s);
zaya_status zaya_gpu_event_sync(zaya_gpu_event *e);
/* Milliseconds between two recorded, completed events. */
zaya_status zaya_gpu_event_elapsed_ms(zaya_gpu_event *start, zaya_gpu_event *end, double *ms);

/* ---- datasheet peaks (CPU code, every build) ----
 * Dense (no sparsity) tensor-core TFLOP/s and HBM GB/s (1e9) from the vendors' datasheets. A device
 * name matches an entry when it contains the entry's `match` (case-insensitive; the table is ordered
 * so longer, more specific names come first: "H100 NVL" before "H100"). */
typedef struct zaya_gpu_datasheet {
    const char *match; /* substring of the runtime's device name */
    const char *name;  /* the product, e.g. "NVIDIA H200 SXM" */
    double bf16_tflops, f16_tflops, tf32_tflops, f32_tflops;
    double hbm_GBps;
} zaya_gpu_datasheet;
const zaya_gpu_datasheet *zaya_gpu_datasheet_find(const char *device_name); /* NULL when unknown */
int zaya_gpu_datasheet_count(void);
const zaya_gpu_datasheet *zaya_gpu_datasheet_at(int i);

/* ---- GEMM (cuBLASLt) ----
 * D = A op B in column-major cuBLAS terms, written for row-major callers: D[m,n] = A[m,k] x B[k,n]
 * (trans_a: A stored [k,m]; trans_b: B stored [n,k]). Inputs in the dtype, output and accumulation
 * in f32 (ZAYA_GPU_TF32: f32 inputs, TF32 tensor-core compute). */
typedef enum zaya_gpu_dtype { ZAYA_GPU_BF16 = 0, ZAYA_GPU_F16, ZAYA_GPU_TF32, ZAYA_GPU_DTYPE_COUNT } zaya_gpu_dtype;
const char *zaya_gpu_dtype_name(zaya_gpu_dtype t); /* "bf16", "f16", "tf32" */
zaya_status zaya_gpu_dtype_parse(const char *s, zaya_gpu_dtype *t);
double zaya_gpu_datasheet_tflops(const zaya_gpu_datasheet *d, zaya_gpu_dtype t);

typedef struct zaya_gpu_gemm zaya_gpu_gemm;
/* Allocates A, B, D on the current device, fills A and B with uniform [-1, 1) values from
 * Philox(seed) and asks the cuBLASLt heuristic for the best algorithm. */
zaya_status zaya_gpu_gemm_init(zaya_gpu_gemm **g, zaya_gpu_dtype t, int trans_a, int trans_b, int64_t m, int64_t n,
                               int64_t k, uint64_t seed);
void zaya_gpu_gemm_free(zaya_gpu_gemm *g);
/* The chosen algorithm: "algo 23 tile 256x128 stages 4 splitk 1 ws 0" (cuBLASLt's config attributes). */
const char *zaya_gpu_gemm_algo(const zaya_gpu_gemm *g);
/* Device pointers of A ([m,k], or [k,m] with trans_a), B ([k,n], or [n,k] with trans_b), both in the
 * input dtype, and D ([m,n], f32), for tests that read them back. */
void zaya_gpu_gemm_buffers(const zaya_gpu_gemm *g, const void **a, const void **b, const float **d);
/* One call (D = A B) on the GEMM's stream, synchronized. */
zaya_status zaya_gpu_gemm_run(zaya_gpu_gemm *g);
/* warmup untimed calls, then iters calls each timed with events: best and mean milliseconds. */
zaya_status zaya_gpu_gemm_time(zaya_gpu_gemm *g, int warmup, int iters, double *best_ms, double *mean_ms);
/* Runs the GEMM once and recomputes `samples` entries (spread over the output, corners included)
 * with a plain f32-accumulate kernel on the same inputs. Each entry's error is divided by
 * sum_p |a_ip b_pj|; *bad counts entries above the dtype's bound (TF32 rounds its inputs to 10
 * mantissa bits: 2^-10; bf16/f16 inputs are exact in f32: k x 2^-23). */
zaya_status zaya_gpu_gemm_verify(zaya_gpu_gemm *g, int samples, double *max_rel, int64_t *bad);

/* ---- the CUDA compute backend (zaya/backend.h; src/gpu/be_*.cu) ----
 * Selects d (a CUDA device), creates a stream, a cuBLASLt handle and the scratch tables; *out is then
 * freed with zaya_backend_free. Without CUDA: ZAYA_EUNSUPPORTED, "built without CUDA"; without the
 * module or a CUDA library: ZAYA_EBACKEND naming it (zaya_gpu_load). */
zaya_status zaya_gpu_backend_init(zaya_device d, zaya_backend **out);

/* ---- memory bandwidth (BabelStream kernels on f64 arrays of n elements) ---- */
typedef enum zaya_gpu_stream_kernel {
    ZAYA_GPU_COPY = 0, ZAYA_GPU_MUL, ZAYA_GPU_ADD, ZAYA_GPU_TRIAD, ZAYA_GPU_DOT, ZAYA_GPU_KERNEL_COUNT
} zaya_gpu_stream_kernel;
const char *zaya_gpu_stream_kernel_name(zaya_gpu_stream_kernel k);
/* Bytes a kernel moves per element (STREAM counting: copy/mul 2 x 8, add/triad 3 x 8, dot 2 x 8). */
int zaya_gpu_stream_kernel_bytes(zaya_gpu_stream_kernel k);
typedef struct zaya_gpu_stream_result {
    double best_s[ZAYA_GPU_KERNEL_COUNT], mean_s[ZAYA_GPU_KERNEL_COUNT]; /* over iterations 2..ntimes */
    double best_GBps[ZAYA_GPU_KERNEL_COUNT];
    double max_rel_err; /* of a, b, c and the dot against the host replay of the same sequence */
    int validated;
    int block;          /* threads per block used (a multiple of the warp size) */
} zaya_gpu_stream_result;
/* BabelStream's sequence (copy, mul, add, triad, dot) ntimes (>= 2) over arrays of n doubles on the
 * current device; the first iteration is excluded (STREAM's rule) and the arrays are then checked. */
zaya_status zaya_gpu_stream_run(int64_t n, int ntimes, zaya_gpu_stream_result *r);
/* Host<->device copy bandwidth, best of ntimes (first excluded) for `bytes`, pinned or pageable. */
zaya_status zaya_gpu_copy_bandwidth(size_t bytes, int pinned, zaya_gpu_copy kind, int ntimes, double *best_GBps);

#ifdef __cplusplus
}
#endif

#endif

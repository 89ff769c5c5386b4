// The CUDA emulator's host side (tests/emu/emu.h says what it models and what it cannot): the fiber
// scheduler behind emu_launch, the runtime calls on host memory, a plain cuBLASLt, and
// zaya_emu_backend_init, the real zaya_gpu_backend_init (be_core.cu, renamed) over all of them.
// Compiled with the same -D renames as the rewritten be_*.cu files (tests/emu.cmake), so the
// names defined here are the emulated backend's and never clash with libzaya_gpu's.
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#include <map>
#include <vector>

#include "emu_backend.h"
#include "gpu/be_cuda.h"
#include "zaya/gpu.h"

/* ---- the scheduler ---- */

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;
void *emu_dyn_smem;

static gpuError_t last_error;
static int grid_cap, warp_size = 32;
static const size_t STACK_BYTES = 256 << 10;
static const size_t SMEM_DEFAULT = 48 << 10, SMEM_MAX = 232448; /* H100/H200: 227 KiB opt-in */
static std::map<const void *, size_t> smem_limit;                /* per kernel, gpuFuncSetAttribute */
static std::vector<std::pair<void *, size_t>> shared_arrays;     /* static __shared__, registered */

enum { RUNNABLE, AT_BARRIER, DONE };
struct fiber {
    ucontext_t ctx;
    char *stack;
    int state, line;
};
static std::vector<fiber> fibers;
/* The fiber stacks live as long as the process; given back at exit (leak checkers see no loss). */
static struct stacks_release {
    ~stacks_release() {
        for (auto &f : fibers) free(f.stack);
        fibers.clear();
    }
} g_stacks_release;
static ucontext_t sched_ctx;
static int cur;
static const std::function<void()> *cur_body;
static long launch_count;
static const char *cur_kernel;

static void fiber_entry() {
    (*cur_body)();
    fibers[cur].state = DONE;
    swapcontext(&fibers[cur].ctx, &sched_ctx);
}

static bool direct; /* the current thread runs as a plain call, not on a fiber (see emu_launch) */

void emu_syncthreads(int line) {
    if (direct) {
        fprintf(stderr, "emu: %s: block (%u,%u,%u): thread %d reaches __syncthreads (line %d), another thread of "
                "the block returned without one\n", cur_kernel, blockIdx.x, blockIdx.y, blockIdx.z, cur, line);
        abort();
    }
    fibers[cur].state = AT_BARRIER;
    fibers[cur].line = line;
    swapcontext(&fibers[cur].ctx, &sched_ctx);
}

int emu_grid_cap(int blocks) { return grid_cap > 0 && blocks > grid_cap ? grid_cap : blocks; }

bool emu_shared_register(void *p, size_t bytes) {
    shared_arrays.push_back({p, bytes});
    memset(p, 0xff, bytes); /* this block's copy too: it registered after the block's refill */
    return true;
}

static void fail_launch(const char *fn, const char *why) {
    fprintf(stderr, "emu: launch in %s: %s\n", fn, why);
    if (last_error == gpuSuccess) last_error = gpuErrorLaunchFailure;
}

void emu_launch(dim3 g, dim3 b, size_t smem_bytes, const void *fn, const char *caller,
                const std::function<void()> &body) {
    char why[256];
    const long n = (long)b.x * b.y * b.z;
    const size_t limit = smem_limit.count(fn) ? smem_limit[fn] : SMEM_DEFAULT;
    if (n <= 0 || n > 1024 || b.z > 64 || g.x == 0 || g.y == 0 || g.z == 0 || g.y > 65535 || g.z > 65535) {
        snprintf(why, sizeof why, "bad configuration grid (%u,%u,%u) block (%u,%u,%u)", g.x, g.y, g.z, b.x, b.y, b.z);
        return fail_launch(caller, why);
    }
    if (smem_bytes > limit) {
        snprintf(why, sizeof why, "%zu bytes of dynamic shared memory above the kernel's limit %zu", smem_bytes, limit);
        return fail_launch(caller, why);
    }
    launch_count++;
    cur_body = &body;
    cur_kernel = caller;
    gridDim = g;
    blockDim = b;
    while ((long)fibers.size() < n) {
        fiber f = {};
        f.stack = (char *)malloc(STACK_BYTES);
        fibers.push_back(f);
    }
    std::vector<char> dyn(smem_bytes + 16);
    std::vector<int> order(n);
    for (unsigned bz = 0; bz < g.z; bz++)
        for (unsigned by = 0; by < g.y; by++)
            for (unsigned bx = 0; bx < g.x; bx++) {
                blockIdx = {bx, by, bz};
                /* nothing may rely on shared memory's content at the start of a block */
                memset(dyn.data(), 0xff, dyn.size());
                emu_dyn_smem = dyn.data();
                for (auto &s : shared_arrays) memset(s.first, 0xff, s.second);
                for (long t = 0; t < n; t++) {
                    fiber &f = fibers[t];
                    getcontext(&f.ctx);
                    f.ctx.uc_stack.ss_sp = f.stack;
                    f.ctx.uc_stack.ss_size = STACK_BYTES;
                    f.ctx.uc_link = &sched_ctx;
                    makecontext(&f.ctx, fiber_entry, 0);
                    f.state = RUNNABLE;
                }
                for (int pass = 0;; pass++) {
                    /* a different order of threads each pass and launch: a race shows as a difference */
                    const long mode = (launch_count + pass + bx + by) % 3;
                    const long stride = n % 97 ? 97 : 1;
                    for (long i = 0; i < n; i++) order[i] = mode == 0 ? i : mode == 1 ? n - 1 - i : (i * stride + 13) % n;
                    for (long i = 0; i < n; i++) {
                        const int t = order[i];
                        if (fibers[t].state == DONE) continue;
                        fibers[t].state = RUNNABLE;
                        cur = t;
                        threadIdx = {(unsigned)(t % b.x), (unsigned)(t / b.x % b.y), (unsigned)(t / ((long)b.x * b.y))};
                        if (direct) {
                            (*cur_body)();
                            fibers[t].state = DONE;
                            continue;
                        }
                        swapcontext(&sched_ctx, &fibers[t].ctx);
                        /* The first thread returned without a barrier, so in a correct kernel no thread of
                         * the block has one: the others run as plain calls (no context switches), and one
                         * that reaches a barrier aborts. */
                        if (pass == 0 && i == 0 && fibers[t].state == DONE) direct = true;
                    }
                    direct = false;
                    long done = 0, waiting = 0, line = -1, lines_differ = 0;
                    for (long t = 0; t < n; t++) {
                        if (fibers[t].state == DONE) {
                            done++;
                        } else {
                            waiting++;
                            if (line >= 0 && fibers[t].line != line) lines_differ = 1;
                            line = fibers[t].line;
                        }
                    }
                    if (done == n) break;
                    if (done > 0 || lines_differ) {
                        /* on the device this hangs or is undefined: stop here with the place */
                        fprintf(stderr,
                                "emu: %s: block (%u,%u,%u): __syncthreads not reached by every thread (%ld returned, "
                                "%ld waiting%s, line %ld)\n",
                                cur_kernel, bx, by, bz, done, waiting, lines_differ ? " at different lines" : "", line);
                        abort();
                    }
                }
            }
    emu_dyn_smem = NULL;
}

/* ---- runtime: device memory is host memory, tracked so copies and GEMM operands can be checked ---- */

static std::map<uintptr_t, size_t> allocations; /* start -> bytes */
struct emu_stream {
    int live;
};

static bool is_device(const void *p, size_t bytes) {
    const uintptr_t a = (uintptr_t)p;
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return false;
    --it;
    return a >= it->first && a + bytes <= it->first + it->second;
}

gpuError_t gpuGetLastError(void) {
    gpuError_t e = last_error;
    last_error = gpuSuccess;
    return e;
}
const char *gpuGetErrorName(gpuError_t e) {
    static const char *names[] = {"gpuSuccess", "gpuErrorInvalidValue", "gpuErrorLaunchFailure",
                                  "gpuErrorMemoryAllocation"};
    return e >= 0 && e < 4 ? names[e] : "gpuErrorUnknown";
}
const char *gpuGetErrorString(gpuError_t e) {
    static const char *what[] = {"no error", "invalid argument", "launch failure (emulator)", "out of memory"};
    return e >= 0 && e < 4 ? what[e] : "unknown error";
}
gpuError_t gpuGetDevice(int *d) { *d = 0; return gpuSuccess; }
gpuError_t gpuSetDevice(int d) { return d == 0 ? gpuSuccess : gpuErrorInvalidValue; }
gpuError_t gpuDeviceGetAttribute(int *v, int attr, int device) {
    if (device != 0) return gpuErrorInvalidValue;
    if (attr == gpuDevAttrWarpSize) *v = warp_size;
    else if (attr == gpuDevAttrMultiProcessorCount) *v = 132;
    else return gpuErrorInvalidValue;
    return gpuSuccess;
}
gpuError_t gpuMalloc(void **p, size_t bytes) {
    *p = NULL;
    if (bytes == 0) return gpuSuccess;
    void *q = aligned_alloc(256, (bytes + 255) / 256 * 256);
    if (!q) return gpuErrorMemoryAllocation;
    memset(q, 0xff, bytes); /* never-written device memory reads as NaN */
    allocations[(uintptr_t)q] = bytes;
    *p = q;
    return gpuSuccess;
}
gpuError_t gpuFree(void *p) {
    if (!p) return gpuSuccess;
    auto it = allocations.find((uintptr_t)p);
    if (it == allocations.end()) {
        fprintf(stderr, "emu: gpuFree of %p, not an allocation\n", p);
        return gpuErrorInvalidValue;
    }
    allocations.erase(it);
    free(p);
    return gpuSuccess;
}
static bool stream_ok(gpuStream_t s) { return !s || s->live; }
gpuError_t gpuMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, gpuStream_t s) {
    const bool dd = is_device(dst, bytes), sd = is_device(src, bytes);
    const bool ok = kind == gpuMemcpyHostToDevice ? dd && !sd : kind == gpuMemcpyDeviceToHost ? !dd && sd
                    : kind == gpuMemcpyDeviceToDevice ? dd && sd : false;
    if (!ok || !stream_ok(s)) {
        fprintf(stderr, "emu: gpuMemcpyAsync kind %d of %zu bytes: dst %s, src %s\n", kind, bytes,
                dd ? "device" : "host", sd ? "device" : "host");
        return gpuErrorInvalidValue;
    }
    memmove(dst, src, bytes);
    return gpuSuccess;
}
gpuError_t gpuMemsetAsync(void *p, int v, size_t bytes, gpuStream_t s) {
    if (!is_device(p, bytes) || !stream_ok(s)) {
        fprintf(stderr, "emu: gpuMemsetAsync of %zu bytes outside device memory\n", bytes);
        return gpuErrorInvalidValue;
    }
    memset(p, v, bytes);
    return gpuSuccess;
}
gpuError_t gpuStreamCreateWithFlags(gpuStream_t *s, unsigned flags) {
    *s = new emu_stream{1};
    return gpuSuccess;
}
gpuError_t gpuStreamSynchronize(gpuStream_t s) { return stream_ok(s) ? gpuSuccess : gpuErrorInvalidValue; }
gpuError_t gpuStreamDestroy(gpuStream_t s) {
    if (s) s->live = 0; /* kept: a later use is reported, not a crash */
    return gpuSuccess;
}
gpuError_t gpuFuncSetAttribute(const void *fn, int attr, int value) {
    if (attr != gpuFuncAttributeMaxDynamicSharedMemorySize || value < 0 || (size_t)value > SMEM_MAX)
        return gpuErrorInvalidValue;
    smem_limit[fn] = (size_t)value;
    return gpuSuccess;
}

/* ---- cuBLASLt: column-major D = alpha op(A) op(B) + beta C, a plain loop with f32 accumulation ---- */

struct emu_lt {
    int live;
};
struct emu_lt_desc {
    int compute, scale, ta, tb;
};
struct emu_lt_layout {
    int type;
    uint64_t rows, cols;
    int64_t ld, stride;
    int32_t batch;
};
struct emu_lt_pref {
    uint64_t ws;
};

gpublasStatus_t gpublasLtCreate(gpublasLtHandle_t *h) { *h = new emu_lt{1}; return GPUBLAS_STATUS_SUCCESS; }
gpublasStatus_t gpublasLtDestroy(gpublasLtHandle_t h) { delete h; return GPUBLAS_STATUS_SUCCESS; }
gpublasStatus_t gpublasLtMatmulDescCreate(gpublasLtMatmulDesc_t *d, gpublasComputeType_t compute, gpuDataType_t scale) {
    *d = new emu_lt_desc{compute, scale, GPUBLAS_OP_N, GPUBLAS_OP_N};
    return GPUBLAS_STATUS_SUCCESS;
}
gpublasStatus_t gpublasLtMatmulDescDestroy(gpublasLtMatmulDesc_t d) { delete d; return GPUBLAS_STATUS_SUCCESS; }
gpublasStatus_t gpublasLtMatmulDescSetAttribute(gpublasLtMatmulDesc_t d, int attr, const void *v, size_t n) {
    if (n != sizeof(int32_t)) return GPUBLAS_STATUS_INVALID_VALUE;
    int32_t x;
    memcpy(&x, v, n);
    if (x != GPUBLAS_OP_N && x != GPUBLAS_OP_T) return GPUBLAS_STATUS_INVALID_VALUE;
    if (attr == GPUBLASLT_MATMUL_DESC_TRANSA) d->ta = x;
    else if (attr == GPUBLASLT_MATMUL_DESC_TRANSB) d->tb = x;
    else return GPUBLAS_STATUS_INVALID_VALUE;
    return GPUBLAS_STATUS_SUCCESS;
}
gpublasStatus_t gpublasLtMatrixLayoutCreate(gpublasLtMatrixLayout_t *l, gpuDataType_t t, uint64_t rows, uint64_t cols,
                                            int64_t ld) {
    *l = new emu_lt_layout{t, rows, cols, ld, 0, 1};
    return GPUBLAS_STATUS_SUCCESS;
}
gpublasStatus_t gpublasLtMatrixLayoutDestroy(gpublasLtMatrixLayout_t l) { delete l; return GPUBLAS_STATUS_SUCCESS; }
/* Each attribute with the size cuBLASLt documents for it: a value of another width is refused. */
gpublasStatus_t gpublasLtMatrixLayoutSetAttribute(gpublasLtMatrixLayout_t l, int attr, const void *v, size_t n) {
    switch (attr) {
    case GPUBLASLT_MATRIX_LAYOUT_ROWS:
    case GPUBLASLT_MATRIX_LAYOUT_COLS:
        if (n != sizeof(uint64_t)) return GPUBLAS_STATUS_INVALID_VALUE;
        memcpy(attr == GPUBLASLT_MATRIX_LAYOUT_ROWS ? &l->rows : &l->cols, v, n);
        return GPUBLAS_STATUS_SUCCESS;
    case GPUBLASLT_MATRIX_LAYOUT_LD:
    case GPUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
        if (n != sizeof(int64_t)) return GPUBLAS_STATUS_INVALID_VALUE;
        memcpy(attr == GPUBLASLT_MATRIX_LAYOUT_LD ? &l->ld : &l->stride, v, n);
        return GPUBLAS_STATUS_SUCCESS;
    case GPUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
        if (n != sizeof(int32_t)) return GPUBLAS_STATUS_INVALID_VALUE;
        memcpy(&l->batch, v, n);
        return l->batch >= 1 ? GPUBLAS_STATUS_SUCCESS : GPUBLAS_STATUS_INVALID_VALUE;
    }
    return GPUBLAS_STATUS_INVALID_VALUE;
}
gpublasStatus_t gpublasLtMatmulPreferenceCreate(gpublasLtMatmulPreference_t *p) {
    *p = new emu_lt_pref{0};
    return GPUBLAS_STATUS_SUCCESS;
}
gpublasStatus_t gpublasLtMatmulPreferenceDestroy(gpublasLtMatmulPreference_t p) { delete p; return GPUBLAS_STATUS_SUCCESS; }
gpublasStatus_t gpublasLtMatmulPreferenceSetAttribute(gpublasLtMatmulPreference_t p, int attr, const void *v, size_t n) {
    if (attr == GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES) {
        if (n != sizeof(uint64_t)) return GPUBLAS_STATUS_INVALID_VALUE;
        memcpy(&p->ws, v, n);
        return GPUBLAS_STATUS_SUCCESS;
    }
    if (attr >= GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES && attr <= GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES) {
        if (n != sizeof(uint32_t)) return GPUBLAS_STATUS_INVALID_VALUE;
        uint32_t a;
        memcpy(&a, v, n);
        return a && !(a & (a - 1)) ? GPUBLAS_STATUS_SUCCESS : GPUBLAS_STATUS_INVALID_VALUE;
    }
    return GPUBLAS_STATUS_INVALID_VALUE;
}

/* The shapes of a product: op(A) m x k, op(B) k x n, C = D m x n, one batch count, leading dimensions
 * at least the rows, supported types. Returns a reason, or NULL when consistent. */
static const char *lt_check(const emu_lt_desc *d, const emu_lt_layout *a, const emu_lt_layout *b,
                            const emu_lt_layout *c, const emu_lt_layout *dd, uint64_t *m, uint64_t *n, uint64_t *k) {
    if (d->compute != GPUBLAS_COMPUTE_32F || d->scale != GPU_R_32F) return "compute / scale type not 32F";
    if (a->type != b->type || (a->type != GPU_R_32F && a->type != GPU_R_16BF)) return "A / B types";
    if (c->type != GPU_R_32F || dd->type != GPU_R_32F) return "C / D not f32";
    *m = dd->rows;
    *n = dd->cols;
    *k = d->ta ? a->rows : a->cols;
    if ((d->ta ? a->cols : a->rows) != *m) return "op(A) rows != D rows";
    if ((d->tb ? b->cols : b->rows) != *k) return "op(B) rows != op(A) cols";
    if ((d->tb ? b->rows : b->cols) != *n) return "op(B) cols != D cols";
    if (c->rows != *m || c->cols != *n) return "C and D shapes differ";
    const emu_lt_layout *ls[4] = {a, b, c, dd};
    for (auto l : ls) {
        if (l->ld < (int64_t)l->rows || l->ld < 1) return "leading dimension below the rows";
        if (l->batch != dd->batch) return "batch counts differ";
    }
    return NULL;
}

static size_t lt_extent(const emu_lt_layout *l) { /* elements a matrix (all batches) spans */
    if (!l->rows || !l->cols) return 0;
    return (size_t)(l->batch - 1) * (size_t)l->stride + (size_t)(l->cols - 1) * (size_t)l->ld + l->rows;
}

gpublasStatus_t gpublasLtMatmulAlgoGetHeuristic(gpublasLtHandle_t h, gpublasLtMatmulDesc_t d, gpublasLtMatrixLayout_t a,
                                                gpublasLtMatrixLayout_t b, gpublasLtMatrixLayout_t c,
                                                gpublasLtMatrixLayout_t dd, gpublasLtMatmulPreference_t p, int requested,
                                                gpublasLtMatmulHeuristicResult_t *results, int *found) {
    uint64_t m = 0, n = 0, k = 0;
    const char *why = lt_check(d, a, b, c, dd, &m, &n, &k);
    *found = 0;
    if (why) {
        fprintf(stderr, "emu: cublasLtMatmulAlgoGetHeuristic: %s\n", why);
        return GPUBLAS_STATUS_INVALID_VALUE;
    }
    if (requested < 1) return GPUBLAS_STATUS_INVALID_VALUE;
    memset(results, 0, sizeof *results);
    results->wavesCount = 1.0f;
    *found = 1;
    return GPUBLAS_STATUS_SUCCESS;
}

static float lt_load(const void *p, int type, size_t i) {
    if (type == GPU_R_32F) return ((const float *)p)[i];
    return __uint_as_float((uint32_t)((const uint16_t *)p)[i] << 16);
}

gpublasStatus_t gpublasLtMatmul(gpublasLtHandle_t h, gpublasLtMatmulDesc_t d, const void *alpha, const void *a,
                                gpublasLtMatrixLayout_t la, const void *b, gpublasLtMatrixLayout_t lb, const void *beta,
                                const void *c, gpublasLtMatrixLayout_t lc, void *dd, gpublasLtMatrixLayout_t ld,
                                const gpublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes, gpuStream_t s) {
    uint64_t m = 0, n = 0, k = 0;
    const char *why = lt_check(d, la, lb, lc, ld, &m, &n, &k);
    const size_t ea = la->type == GPU_R_32F ? 4 : 2;
    if (!why && (!h || !h->live || !algo || !stream_ok(s))) why = "handle, algorithm or stream";
    if (!why && ws_bytes && !is_device(ws, ws_bytes)) why = "workspace outside device memory";
    if (!why && k && (!is_device(a, lt_extent(la) * ea) || !is_device(b, lt_extent(lb) * ea)))
        why = "A or B extends past its device allocation";
    if (!why && !is_device(dd, lt_extent(ld) * 4)) why = "D extends past its device allocation";
    const float al = *(const float *)alpha, be = *(const float *)beta;
    if (!why && be != 0.0f && !is_device(c, lt_extent(lc) * 4)) why = "C extends past its device allocation";
    if (why) {
        fprintf(stderr, "emu: cublasLtMatmul %llux%llux%llu: %s\n", (unsigned long long)m, (unsigned long long)n,
                (unsigned long long)k, why);
        return GPUBLAS_STATUS_INVALID_VALUE;
    }
    for (int32_t bi = 0; bi < ld->batch; bi++)
        for (uint64_t j = 0; j < n; j++)
            for (uint64_t i = 0; i < m; i++) {
                float acc = 0.0f;
                for (uint64_t l = 0; l < k; l++) {
                    const size_t ia = (size_t)bi * la->stride + (d->ta ? i * la->ld + l : l * la->ld + i);
                    const size_t ib = (size_t)bi * lb->stride + (d->tb ? l * lb->ld + j : j * lb->ld + l);
                    acc += lt_load(a, la->type, ia) * lt_load(b, lb->type, ib);
                }
                float *out = (float *)dd + (size_t)bi * ld->stride + j * ld->ld + i;
                /* beta = 0: C is not read (it may hold NaN), as cuBLASLt */
                const float cv = be != 0.0f ? ((const float *)c)[(size_t)bi * lc->stride + j * lc->ld + i] : 0.0f;
                *out = be != 0.0f ? al * acc + be * cv : al * acc;
            }
    return GPUBLAS_STATUS_SUCCESS;
}

/* ---- the device layer calls be_core.cu makes (renamed, so libzaya_gpu's stay untouched) ---- */

extern "C" zaya_status zaya_gpu_select(zaya_device d) {
    if (d.kind != ZAYA_DEVICE_CUDA || d.index != 0)
        return zaya_error_set(ZAYA_EINVAL, "emulated CUDA: one device, cuda:0");
    return ZAYA_OK;
}

extern "C" zaya_status zaya_emu_backend_init(zaya_backend **out) {
    const zaya_device d = {ZAYA_DEVICE_CUDA, 0};
    return zaya_gpu_backend_init(d, out);
}

extern "C" long zaya_emu_launch_count(void) { return launch_count; }
extern "C" void zaya_emu_set_grid_cap(int blocks) { grid_cap = blocks; }
extern "C" void zaya_emu_set_warp_size(int lanes) { warp_size = lanes; }

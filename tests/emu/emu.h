/* A CPU emulator of the CUDA subset the compute backend (src/gpu/be_*.cu) uses, for
 * tests/emu/test_cuda_emulated.c: tests/emu/rewrite.py turns each be_*.cu into C++ that g++ compiles
 * with this header forced in (-include emu.h); tests/emu/gpu/gpu_rt.h stands in for src/gpu/gpu_rt.h,
 * so the runtime and cuBLASLt calls land on the host fakes of emu.cpp.
 *
 * Execution model. A launch runs its blocks one after another; each CUDA thread of a block is a
 * ucontext fiber on the one host thread. The scheduler runs every fiber up to its next __syncthreads
 * (or its end), then the next pass, until all have returned: a barrier is a real barrier, shared
 * memory is one copy per block, and the order in which the fibers of a pass run changes from pass to
 * pass and launch to launch (forward, backward, strided), so a result that depends on the order of
 * threads between two barriers (a race) differs between two runs. Shared memory (static and dynamic)
 * is filled with 0xff bytes (NaN, -1) before every block, global scratch from gpuMalloc likewise.
 * When a block's first thread returns without reaching a barrier, the others run as plain calls (no
 * context switches); one of them reaching a barrier then aborts. A test may cap the grids of
 * grid-stride launches (zaya_emu_set_grid_cap) and set the reported warp size (64 as on MI300X).
 *
 * What it catches: wrong indexing and bounds (with the bounds of the launch: a block above 1024
 * threads, a grid above 65535 in y / z, dynamic shared memory above 48 KiB without
 * gpuFuncSetAttribute or above 227 KiB), a missing barrier between a shared write and another
 * thread's read (as a run-to-run difference or a NaN), a __syncthreads not reached by every thread
 * of the block or reached at different call sites (abort with the line), reductions whose order
 * depends on scheduling, reading shared memory or scratch never written, memory copies in the wrong
 * direction (host vs device ranges are tracked), and cuBLASLt layouts inconsistent with the product.
 *
 * What it cannot: real warp timing or any warp-level behaviour (there are no lanes executing in
 * lock step: code that relies on implicit warp synchrony would pass here and fail there, as would
 * shuffles, which the files do not use); the memory model (every access is immediately visible to
 * every later fiber: missing __threadfence or volatile, and races between blocks of one launch,
 * which run one after another here, go unseen); out-of-bounds accesses that stay inside host memory
 * (no sanitizer on global memory); float results bit for bit as the device gives them: g++ does not
 * contract a*b+c (-ffp-contract=off) where nvcc may (be_attention.cu is compiled with FMAs), and
 * expf / erfcf / tanhf come from the host libm, not CUDA's, so transcendental results differ in the
 * last bits; performance, occupancy, register spills, and the real cuBLASLt (its algorithms, split-K
 * orders and precision; here a plain f32 loop). */
#ifndef ZAYA_TESTS_EMU_H
#define ZAYA_TESTS_EMU_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
/* The running fiber's coordinates (the scheduler sets them before it resumes a fiber). */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
extern void *emu_dyn_smem; /* the block's dynamic shared memory */

/* A launch: every thread of grid x block runs body(); fn identifies the kernel (its shared-memory limit). */
void emu_launch(dim3 grid, dim3 block, size_t smem_bytes, const void *fn, const char *name,
                const std::function<void()> &body);
void emu_syncthreads(int line);
/* A grid-stride kernel's block count, at most the cap zaya_emu_set_grid_cap() set (0: no cap). */
int emu_grid_cap(int blocks);
/* Static __shared__ arrays are registered once (their first use) and refilled before every block. */
bool emu_shared_register(void *p, size_t bytes);

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __syncthreads() emu_syncthreads(__LINE__)

/* Device intrinsics: IEEE round-to-nearest float / double operations (the host's SSE arithmetic). */
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return sqrtf(a); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return sqrt(a); }
static inline float __double2float_rn(double a) { return (float)a; }
static inline unsigned __float_as_uint(float f) {
    unsigned u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float __uint_as_float(unsigned u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}
/* Integer atomics: the fibers never run concurrently, so a plain read-modify-write is atomic. */
static inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
static inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) {
    unsigned long long o = *p;
    *p = o + v;
    return o;
}
static inline int atomicMax(int *p, int v) { int o = *p; if (v > o) *p = v; return o; }
static inline int atomicMin(int *p, int v) { int o = *p; if (v < o) *p = v; return o; }
/* bf16 as the files use it: raw uint16_t bits; these two convert like cuda_bf16.h (nearest even). */
typedef struct {
    uint16_t x;
} __nv_bfloat16;
static inline float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((unsigned)b.x << 16); }
static inline __nv_bfloat16 __float2bfloat16(float f) {
    unsigned u = __float_as_uint(f);
    __nv_bfloat16 b;
    if ((u & 0x7fffffffu) > 0x7f800000u) b.x = 0x7fff; /* the canonical NaN */
    else b.x = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    return b;
}

#endif

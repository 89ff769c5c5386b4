/* The CUDA compute backend (include/zaya/backend.h) inside the device layer: its state and the pieces
 * each be_*.cu file contributes. be_core.cu owns the state (stream, cuBLASLt handle, workspace, the
 * first pending error) and the memory, GEMM and optimizer operations; be_ops.cu the norms,
 * activations, embedding, router, experts and loss; be_cca.cu the CCA pieces and attention;
 * be_optim.cu the optimizer's and the elementwise operations of the core. Each file installs its
 * operations into the table (zaya_cuda_be_install_*), called by zaya_gpu_backend_init.
 *
 * Errors: an operation never returns one. A launch or runtime failure is recorded by
 * zaya_cuda_be_fail (only the first is kept, with the operation's name) and returned by the next
 * sync() or download(). Only .cu files include this header. */
#ifndef ZAYA_GPU_BE_CUDA_H
#define ZAYA_GPU_BE_CUDA_H

#include "gpu/gpu_rt.h"
#include "zaya/backend.h"

typedef struct zaya_cuda_be {
    int device;
    gpuStream_t stream;
    void *lt;            /* cuBLASLt handle (be_core.cu) */
    void *ws;            /* reserve()d scratch, device memory */
    size_t ws_bytes;
    void *gemm_ws;       /* cuBLASLt workspace */
    size_t gemm_ws_bytes;
    double *partials;    /* fixed-size device scratch for two-pass reductions (be_core.cu sizes it) */
    size_t partials_count;
    zaya_status err;     /* first failure since the last sync (ZAYA_OK: none) */
    char errmsg[512];
    int block;           /* default threads per block (a multiple of the warp size) */
    int sm_count;
} zaya_cuda_be;

static inline zaya_cuda_be *zaya_cuda_be_of(zaya_backend *be) { return (zaya_cuda_be *)be->ctx; }

/* f32 -> bf16 bits bit for bit as zaya_f32_to_bf16 (bf16.h): nearest, ties to even; a NaN keeps its
 * sign and high payload with the quiet bit forced (cvt.rn.bf16 would give the canonical NaN). */
__device__ static inline uint16_t zaya_cuda_bf16_bits(float x) {
    uint32_t u = __float_as_uint(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
/* x rounded to the nearest bf16 value (zaya_f32_to_bf16 then back): the bf16 modes' operand staging. */
__device__ static inline float zaya_cuda_round_bf16(float x) {
    return __uint_as_float((uint32_t)zaya_cuda_bf16_bits(x) << 16);
}

#ifdef __cplusplus
extern "C" {
#endif
/* Records the first failure: `op` is the backend operation ("rmsnorm_forward"), e the runtime error. */
void zaya_cuda_be_fail(zaya_backend *be, const char *op, gpuError_t e);
/* After a launch: records gpuGetLastError() if it is not success. */
void zaya_cuda_be_check_launch(zaya_backend *be, const char *op);
/* Records the first failure that is not a runtime error (a NULL operand, a bad dtype, a cuBLASLt
 * status): "backend cuda:0: op: <message>" with status code. */
void zaya_cuda_be_failf(zaya_backend *be, const char *op, zaya_status code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Blocks of `threads` (<= 0: the backend's default block) for n work items: ceil(n / threads), at
 * least 1 and at most 65535, so kernels loop grid-stride over what one grid does not cover. */
int zaya_cuda_be_blocks(zaya_backend *be, int64_t n, int threads);

void zaya_cuda_be_install_core(zaya_backend *be);
void zaya_cuda_be_install_optim(zaya_backend *be); /* called by install_core */
void zaya_cuda_be_install_ops(zaya_backend *be);
void zaya_cuda_be_install_cca(zaya_backend *be);
void zaya_cuda_be_install_attention(zaya_backend *be); /* be_attention.cu, called by install_cca */
#ifdef __cplusplus
}
#endif

#endif

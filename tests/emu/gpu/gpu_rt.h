/* Stands in for src/gpu/gpu_rt.h when tests/emu builds the CUDA backend's sources for the CPU (it is
 * found first on the include path): the gpu* runtime calls and the gpublasLt* calls the be_*.cu files
 * make, declared here and implemented on host memory by tests/emu/emu.cpp (see tests/emu/emu.h). */
#ifndef ZAYA_GPU_RT_H
#define ZAYA_GPU_RT_H

#include <stddef.h>
#include <stdint.h>

#include "emu.h"
#include "zaya/status.h"

typedef int gpuError_t;
enum { gpuSuccess = 0, gpuErrorInvalidValue = 1, gpuErrorLaunchFailure = 2, gpuErrorMemoryAllocation = 3 };
typedef struct emu_stream *gpuStream_t;
enum { gpuStreamNonBlocking = 1 };
enum { gpuMemcpyHostToDevice = 1, gpuMemcpyDeviceToHost = 2, gpuMemcpyDeviceToDevice = 3 };
enum { gpuDevAttrWarpSize = 10, gpuDevAttrMultiProcessorCount = 16 };
enum { gpuFuncAttributeMaxDynamicSharedMemorySize = 8 };

gpuError_t gpuGetLastError(void);
const char *gpuGetErrorName(gpuError_t e);
const char *gpuGetErrorString(gpuError_t e);
gpuError_t gpuGetDevice(int *d);
gpuError_t gpuSetDevice(int d);
gpuError_t gpuDeviceGetAttribute(int *v, int attr, int device);
gpuError_t gpuMalloc(void **p, size_t bytes);
gpuError_t gpuFree(void *p);
gpuError_t gpuMemcpyAsync(void *dst, const void *src, size_t bytes, int kind, gpuStream_t s);
gpuError_t gpuMemsetAsync(void *p, int v, size_t bytes, gpuStream_t s);
gpuError_t gpuStreamCreateWithFlags(gpuStream_t *s, unsigned flags);
gpuError_t gpuStreamSynchronize(gpuStream_t s);
gpuError_t gpuStreamDestroy(gpuStream_t s);
gpuError_t gpuFuncSetAttribute(const void *fn, int attr, int value);
/* Kernels are plain C++ functions here: any function pointer identifies one. */
template <typename F> static inline gpuError_t gpuFuncSetAttribute(F *fn, int attr, int value) {
    return gpuFuncSetAttribute((const void *)fn, attr, value);
}

/* cuBLASLt, as far as src/gpu/be_core.cu uses it. */
typedef int gpublasStatus_t;
enum { GPUBLAS_STATUS_SUCCESS = 0, GPUBLAS_STATUS_INVALID_VALUE = 7, GPUBLAS_STATUS_NOT_SUPPORTED = 15 };
typedef struct emu_lt *gpublasLtHandle_t;
typedef struct emu_lt_desc *gpublasLtMatmulDesc_t;
typedef struct emu_lt_layout *gpublasLtMatrixLayout_t;
typedef struct emu_lt_pref *gpublasLtMatmulPreference_t;
typedef struct {
    int id;
} gpublasLtMatmulAlgo_t;
typedef struct {
    gpublasLtMatmulAlgo_t algo;
    size_t workspaceSize;
    int state;
    float wavesCount;
} gpublasLtMatmulHeuristicResult_t;
typedef int gpublasOperation_t;
enum { GPUBLAS_OP_N = 0, GPUBLAS_OP_T = 1 };
typedef int gpublasComputeType_t;
enum { GPUBLAS_COMPUTE_32F = 68, GPUBLAS_COMPUTE_32F_FAST_TF32 = 77 };
typedef int gpuDataType_t;
enum { GPU_R_32F = 0, GPU_R_16F = 2, GPU_R_16BF = 14 };
enum { GPUBLASLT_MATMUL_DESC_TRANSA = 3, GPUBLASLT_MATMUL_DESC_TRANSB = 4 };
enum {
    GPUBLASLT_MATRIX_LAYOUT_ROWS = 2,
    GPUBLASLT_MATRIX_LAYOUT_COLS = 3,
    GPUBLASLT_MATRIX_LAYOUT_LD = 4,
    GPUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,
    GPUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6
};
#define GPUBLASLT_HAS_ALIGNMENT_PREF 1
enum {
    GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,
    GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,
    GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8
};
gpublasStatus_t gpublasLtCreate(gpublasLtHandle_t *h);
gpublasStatus_t gpublasLtDestroy(gpublasLtHandle_t h);
gpublasStatus_t gpublasLtMatmulDescCreate(gpublasLtMatmulDesc_t *d, gpublasComputeType_t compute, gpuDataType_t scale);
gpublasStatus_t gpublasLtMatmulDescDestroy(gpublasLtMatmulDesc_t d);
gpublasStatus_t gpublasLtMatmulDescSetAttribute(gpublasLtMatmulDesc_t d, int attr, const void *v, size_t n);
gpublasStatus_t gpublasLtMatrixLayoutCreate(gpublasLtMatrixLayout_t *l, gpuDataType_t t, uint64_t rows, uint64_t cols,
                                            int64_t ld);
gpublasStatus_t gpublasLtMatrixLayoutDestroy(gpublasLtMatrixLayout_t l);
gpublasStatus_t gpublasLtMatrixLayoutSetAttribute(gpublasLtMatrixLayout_t l, int attr, const void *v, size_t n);
gpublasStatus_t gpublasLtMatmulPreferenceCreate(gpublasLtMatmulPreference_t *p);
gpublasStatus_t gpublasLtMatmulPreferenceDestroy(gpublasLtMatmulPreference_t p);
gpublasStatus_t gpublasLtMatmulPreferenceSetAttribute(gpublasLtMatmulPreference_t p, int attr, const void *v, size_t n);
gpublasStatus_t gpublasLtMatmulAlgoGetHeuristic(gpublasLtHandle_t h, gpublasLtMatmulDesc_t d, gpublasLtMatrixLayout_t a,
                                                gpublasLtMatrixLayout_t b, gpublasLtMatrixLayout_t c,
                                                gpublasLtMatrixLayout_t dd, gpublasLtMatmulPreference_t p, int requested,
                                                gpublasLtMatmulHeuristicResult_t *results, int *found);
gpublasStatus_t gpublasLtMatmul(gpublasLtHandle_t h, gpublasLtMatmulDesc_t d, const void *alpha, const void *a,
                                gpublasLtMatrixLayout_t la, const void *b, gpublasLtMatrixLayout_t lb, const void *beta,
                                const void *c, gpublasLtMatrixLayout_t lc, void *dd, gpublasLtMatrixLayout_t ld,
                                const gpublasLtMatmulAlgo_t *algo, void *ws, size_t ws_bytes, gpuStream_t s);

#ifdef __cplusplus
extern "C" {
#endif
zaya_status zaya_gpu_check(gpuError_t e, const char *call);
#ifdef __cplusplus
}
#endif

#endif

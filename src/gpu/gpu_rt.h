/* The one place CUDA-specific names appear (docs/gpu.md): the device code in src/gpu (the .cu files) and the
 * NCCL communicator in src/dist use the gpu* / gpublasLt* / gpuccl names below. A HIP build
 * (ZAYA_HIP) swaps this header: hip_runtime.h, hipBLASLt and RCCL provide the same calls under
 * hip* / hipblasLt* / nccl* (RCCL keeps NCCL's names). Nothing in the code assumes a warp of 32
 * lanes: the warp size comes from the device (gpuDeviceProp.warpSize; 64 on MI300X). */
#ifndef ZAYA_GPU_RT_H
#define ZAYA_GPU_RT_H

#if defined(ZAYA_HIP)
#include <hip/hip_runtime.h>
#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuGetErrorString hipGetErrorString
#define gpuGetErrorName hipGetErrorName
#define gpuGetLastError hipGetLastError
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuGetDevice hipGetDevice
#define gpuDeviceProp hipDeviceProp_t
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrClockRate hipDeviceAttributeClockRate
#define gpuDevAttrMemoryClockRate hipDeviceAttributeMemoryClockRate
#define gpuDevAttrWarpSize hipDeviceAttributeWarpSize
#define gpuDevAttrMultiProcessorCount hipDeviceAttributeMultiprocessorCount
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuHostAlloc(p, n) hipHostMalloc((p), (n), hipHostMallocDefault)
#define gpuFreeHost hipHostFree
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuStream_t hipStream_t
#define gpuStreamCreate hipStreamCreate
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuEvent_t hipEvent_t
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuErrorInvalidValue hipErrorInvalidValue
#define gpuFuncSetAttribute hipFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize hipFuncAttributeMaxDynamicSharedMemorySize
#else
#include <cuda_runtime_api.h>
#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuGetErrorString cudaGetErrorString
#define gpuGetErrorName cudaGetErrorName
#define gpuGetLastError cudaGetLastError
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuGetDevice cudaGetDevice
#define gpuDeviceProp struct cudaDeviceProp
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrClockRate cudaDevAttrClockRate
#define gpuDevAttrMemoryClockRate cudaDevAttrMemoryClockRate
#define gpuDevAttrWarpSize cudaDevAttrWarpSize
#define gpuDevAttrMultiProcessorCount cudaDevAttrMultiProcessorCount
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuHostAlloc(p, n) cudaHostAlloc((p), (n), cudaHostAllocDefault)
#define gpuFreeHost cudaFreeHost
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuStream_t cudaStream_t
#define gpuStreamCreate cudaStreamCreate
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuEvent_t cudaEvent_t
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuErrorInvalidValue cudaErrorInvalidValue
#define gpuFuncSetAttribute cudaFuncSetAttribute
#define gpuFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#endif

/* cuBLASLt <-> hipBLASLt, for the GEMM (src/gpu/gemm.cu defines ZAYA_GPU_BLASLT before including). */
#if defined(ZAYA_GPU_BLASLT)
#if defined(ZAYA_HIP)
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hipblaslt/hipblaslt.h>
#define gpublasStatus_t hipblasStatus_t
#define GPUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define gpublasLtHandle_t hipblasLtHandle_t
#define gpublasLtCreate hipblasLtCreate
#define gpublasLtDestroy hipblasLtDestroy
#define gpublasLtMatmul hipblasLtMatmul
#define gpublasLtMatmulDesc_t hipblasLtMatmulDesc_t
#define gpublasLtMatmulDescCreate hipblasLtMatmulDescCreate
#define gpublasLtMatmulDescDestroy hipblasLtMatmulDescDestroy
#define gpublasLtMatmulDescSetAttribute hipblasLtMatmulDescSetAttribute
#define gpublasLtMatrixLayout_t hipblasLtMatrixLayout_t
#define gpublasLtMatrixLayoutCreate hipblasLtMatrixLayoutCreate
#define gpublasLtMatrixLayoutDestroy hipblasLtMatrixLayoutDestroy
#define gpublasLtMatrixLayoutSetAttribute hipblasLtMatrixLayoutSetAttribute
#define GPUBLASLT_MATRIX_LAYOUT_ROWS HIPBLASLT_MATRIX_LAYOUT_ROWS
#define GPUBLASLT_MATRIX_LAYOUT_COLS HIPBLASLT_MATRIX_LAYOUT_COLS
#define GPUBLASLT_MATRIX_LAYOUT_LD HIPBLASLT_MATRIX_LAYOUT_LD
#define GPUBLASLT_MATRIX_LAYOUT_BATCH_COUNT HIPBLASLT_MATRIX_LAYOUT_BATCH_COUNT
#define GPUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET HIPBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET
/* hipBLASLt has no minimum-alignment preferences: its heuristic is not told the pointers' alignment. */
#define GPUBLASLT_HAS_ALIGNMENT_PREF 0
#define gpublasLtMatmulPreference_t hipblasLtMatmulPreference_t
#define gpublasLtMatmulPreferenceCreate hipblasLtMatmulPreferenceCreate
#define gpublasLtMatmulPreferenceDestroy hipblasLtMatmulPreferenceDestroy
#define gpublasLtMatmulPreferenceSetAttribute hipblasLtMatmulPreferenceSetAttribute
#define gpublasLtMatmulHeuristicResult_t hipblasLtMatmulHeuristicResult_t
#define gpublasLtMatmulAlgoGetHeuristic hipblasLtMatmulAlgoGetHeuristic
#define GPUBLASLT_MATMUL_DESC_TRANSA HIPBLASLT_MATMUL_DESC_TRANSA
#define GPUBLASLT_MATMUL_DESC_TRANSB HIPBLASLT_MATMUL_DESC_TRANSB
#define GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define gpublasOperation_t hipblasOperation_t
#define GPUBLAS_OP_N HIPBLAS_OP_N
#define GPUBLAS_OP_T HIPBLAS_OP_T
#define gpublasComputeType_t hipblasComputeType_t
#define GPUBLAS_COMPUTE_32F HIPBLAS_COMPUTE_32F
#define GPUBLAS_COMPUTE_32F_FAST_TF32 HIPBLAS_COMPUTE_32F_FAST_TF32
#define gpuDataType_t hipDataType
#define GPU_R_32F HIP_R_32F
#define GPU_R_16F HIP_R_16F
#define GPU_R_16BF HIP_R_16BF
#define gpu_bf16 __hip_bfloat16
#define gpu_f16 __half
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cublasLt.h>
#define gpublasStatus_t cublasStatus_t
#define GPUBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define gpublasLtHandle_t cublasLtHandle_t
#define gpublasLtCreate cublasLtCreate
#define gpublasLtDestroy cublasLtDestroy
#define gpublasLtMatmul cublasLtMatmul
#define gpublasLtMatmulDesc_t cublasLtMatmulDesc_t
#define gpublasLtMatmulDescCreate cublasLtMatmulDescCreate
#define gpublasLtMatmulDescDestroy cublasLtMatmulDescDestroy
#define gpublasLtMatmulDescSetAttribute cublasLtMatmulDescSetAttribute
#define gpublasLtMatrixLayout_t cublasLtMatrixLayout_t
#define gpublasLtMatrixLayoutCreate cublasLtMatrixLayoutCreate
#define gpublasLtMatrixLayoutDestroy cublasLtMatrixLayoutDestroy
#define gpublasLtMatrixLayoutSetAttribute cublasLtMatrixLayoutSetAttribute
#define GPUBLASLT_MATRIX_LAYOUT_ROWS CUBLASLT_MATRIX_LAYOUT_ROWS
#define GPUBLASLT_MATRIX_LAYOUT_COLS CUBLASLT_MATRIX_LAYOUT_COLS
#define GPUBLASLT_MATRIX_LAYOUT_LD CUBLASLT_MATRIX_LAYOUT_LD
#define GPUBLASLT_MATRIX_LAYOUT_BATCH_COUNT CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT
#define GPUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET
#define GPUBLASLT_HAS_ALIGNMENT_PREF 1
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES
#define GPUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES
#define gpublasLtMatmulPreference_t cublasLtMatmulPreference_t
#define gpublasLtMatmulPreferenceCreate cublasLtMatmulPreferenceCreate
#define gpublasLtMatmulPreferenceDestroy cublasLtMatmulPreferenceDestroy
#define gpublasLtMatmulPreferenceSetAttribute cublasLtMatmulPreferenceSetAttribute
#define gpublasLtMatmulHeuristicResult_t cublasLtMatmulHeuristicResult_t
#define gpublasLtMatmulAlgoGetHeuristic cublasLtMatmulAlgoGetHeuristic
#define GPUBLASLT_MATMUL_DESC_TRANSA CUBLASLT_MATMUL_DESC_TRANSA
#define GPUBLASLT_MATMUL_DESC_TRANSB CUBLASLT_MATMUL_DESC_TRANSB
#define GPUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define gpublasOperation_t cublasOperation_t
#define GPUBLAS_OP_N CUBLAS_OP_N
#define GPUBLAS_OP_T CUBLAS_OP_T
#define gpublasComputeType_t cublasComputeType_t
#define GPUBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define GPUBLAS_COMPUTE_32F_FAST_TF32 CUBLAS_COMPUTE_32F_FAST_TF32
#define gpuDataType_t cudaDataType_t
#define GPU_R_32F CUDA_R_32F
#define GPU_R_16F CUDA_R_16F
#define GPU_R_16BF CUDA_R_16BF
#define gpu_bf16 __nv_bfloat16
#define gpu_f16 __half
#endif
#include <stdio.h>
/* The chosen algorithm in words: cuBLASLt's config attributes (hipBLASLt has no such query: waves
 * and workspace only). */
static inline void gpublasLtAlgoDescribe(const gpublasLtMatmulHeuristicResult_t *h, char *buf, size_t cap) {
#if defined(ZAYA_HIP)
    snprintf(buf, cap, "waves %.2f ws %zu", (double)h->wavesCount, (size_t)h->workspaceSize);
#else
    int id = -1, tile = -1, stages = -1, splitk = -1;
    size_t w = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&h->algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&h->algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&h->algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages, &w);
    cublasLtMatmulAlgoConfigGetAttribute(&h->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk, &w);
    snprintf(buf, cap, "algo %d tile %d stages %d splitk %d waves %.2f ws %zu", id, tile, stages, splitk,
             (double)h->wavesCount, (size_t)h->workspaceSize);
#endif
}
#endif

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif
/* ZAYA_EBACKEND with "CALL: name: message" for a failed runtime call (ZAYA_OK when e is success). */
zaya_status zaya_gpu_check(gpuError_t e, const char *call);
#ifdef __cplusplus
}
#endif

#endif

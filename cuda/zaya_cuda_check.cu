// Home of the future GPU backend: compiled (never run) under -DZAYA_CUDA_CHECK=ON so the toolchain,
// flags and the bf16 layout shared with the CPU code stay buildable.
#include <cuda_bf16.h>
#include <cstdint>

extern "C" __global__ void zaya_cuda_bf16_to_f32(float *dst, const uint16_t *src, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        uint32_t u = (uint32_t)src[i] << 16;
        dst[i] = __uint_as_float(u);
    }
}

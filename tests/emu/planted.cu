// Planted kernel bugs the emulator must catch (tests/emu/emu.h), run by test_emu_planted.cpp: a
// check on the CUDA backend through the emulator is only worth something if the emulator fails these.
// Rewritten by rewrite.py like the backend's own be_*.cu files.
#include <stdint.h>

#include "gpu/gpu_rt.h"

#define PT 64

// Correct: a tree reduction with a barrier between every step.
__global__ static void sum_ok(float *out, const float *x) {
    __shared__ float sh[PT];
    sh[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    for (int s = PT / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

// Race: no barrier between the shared writes and the reads of other threads' slots.
__global__ static void sum_race(float *out, const float *x) {
    __shared__ float sh[PT];
    sh[threadIdx.x] = x[threadIdx.x];
    for (int s = PT / 2; s > 0; s >>= 1) {
        if ((int)threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    }
    if (threadIdx.x == 0) out[blockIdx.x] = sh[0];
}

// Reads a shared slot nobody wrote (only the first half is stored).
__global__ static void sum_uninit(float *out, const float *x) {
    extern __shared__ float dyn[];
    if (threadIdx.x < PT / 2) dyn[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.0f;
        for (int i = 0; i < PT; i++) s += dyn[i];
        out[0] = s;
    }
}

// A barrier only some threads reach.
__global__ static void divergent_barrier(float *out) {
    if (threadIdx.x < PT / 2) __syncthreads();
    out[threadIdx.x] = 1.0f;
}

extern "C" float emu_planted_sum(int which, const float *x) { /* x: PT floats of host memory */
    float *dx = NULL, *dout = NULL, out = 0.0f;
    gpuMalloc((void **)&dx, PT * sizeof(float));
    gpuMalloc((void **)&dout, PT * sizeof(float));
    gpuMemcpyAsync(dx, x, PT * sizeof(float), gpuMemcpyHostToDevice, NULL);
    if (which == 0) sum_ok<<<1, PT>>>(dout, dx);
    if (which == 1) sum_race<<<1, PT>>>(dout, dx);
    if (which == 2) sum_uninit<<<1, PT, PT * sizeof(float)>>>(dout, dx);
    if (which == 3) divergent_barrier<<<1, PT>>>(dout);
    if (which == 4) sum_uninit<<<1, PT, 64 << 10>>>(dout, dx); // above 48 KiB without gpuFuncSetAttribute
    gpuMemcpyAsync(&out, dout, sizeof(float), gpuMemcpyDeviceToHost, NULL);
    gpuFree(dx);
    gpuFree(dout);
    return out;
}

// A copy whose kind says host to device but whose destination is host memory.
extern "C" int emu_planted_bad_copy(void) {
    float h[4] = {0}, g[4] = {0};
    return gpuMemcpyAsync(h, g, sizeof h, gpuMemcpyHostToDevice, NULL) != gpuSuccess;
}

extern "C" int emu_planted_last_error(void) { return gpuGetLastError() != gpuSuccess; }

// TEMPORARY: the pieces of be_core.cu / be_cca.cu that be_ops.cu and tests/gpu/test_be_ops.c need,
// so that they compile, link and run on their own. Dropped when the real be_core.cu and be_cca.cu
// are merged (they define every symbol below).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/be_cuda.h"
#include "zaya/gpu.h"

extern "C" void zaya_cuda_be_fail(zaya_backend *be, const char *op, gpuError_t e) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    if (c->err != ZAYA_OK) return;
    c->err = ZAYA_EBACKEND;
    snprintf(c->errmsg, sizeof c->errmsg, "%s: %s: %s", op, gpuGetErrorName(e), gpuGetErrorString(e));
}

extern "C" void zaya_cuda_be_check_launch(zaya_backend *be, const char *op) {
    gpuError_t e = gpuGetLastError();
    if (e != gpuSuccess) zaya_cuda_be_fail(be, op, e);
}

extern "C" int zaya_cuda_be_blocks(zaya_backend *be, int64_t n, int threads) {
    (void)be;
    int64_t b = (n + threads - 1) / threads;
    return b < 1 ? 1 : b > 65535 ? 65535 : (int)b;
}

extern "C" void zaya_cuda_be_install_core(zaya_backend *be) { (void)be; }
extern "C" void zaya_cuda_be_install_cca(zaya_backend *be) { (void)be; }

// A minimal backend: memory calls on the stream and sync; every other entry stays NULL.
static zaya_status pending(zaya_backend *be) {
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    zaya_status s = c->err;
    if (s == ZAYA_OK) return ZAYA_OK;
    c->err = ZAYA_OK;
    return zaya_error_set(s, "%s", c->errmsg);
}
static zaya_status glue_sync(zaya_backend *be) {
    ZAYA_TRY(zaya_gpu_check(gpuStreamSynchronize(zaya_cuda_be_of(be)->stream), "cudaStreamSynchronize"));
    return pending(be);
}
static zaya_status glue_alloc(zaya_backend *be, void **p, size_t bytes) {
    *p = NULL;
    if (bytes == 0) return ZAYA_OK;
    ZAYA_TRY(zaya_gpu_check(gpuMalloc(p, bytes), "cudaMalloc"));
    ZAYA_TRY(zaya_gpu_check(gpuMemsetAsync(*p, 0, bytes, zaya_cuda_be_of(be)->stream), "cudaMemsetAsync"));
    return glue_sync(be);
}
static void glue_free(zaya_backend *be, void *p) {
    (void)be;
    if (p) gpuFree(p);
}
static zaya_status glue_upload(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    ZAYA_TRY(zaya_gpu_check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyHostToDevice, zaya_cuda_be_of(be)->stream),
                            "cudaMemcpyAsync"));
    return glue_sync(be);
}
static zaya_status glue_download(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    ZAYA_TRY(zaya_gpu_check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToHost, zaya_cuda_be_of(be)->stream),
                            "cudaMemcpyAsync"));
    return glue_sync(be);
}
static zaya_status glue_copy(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    ZAYA_TRY(zaya_gpu_check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, zaya_cuda_be_of(be)->stream),
                            "cudaMemcpyAsync"));
    return ZAYA_OK;
}
static zaya_status glue_zero(zaya_backend *be, void *p, size_t bytes) {
    return zaya_gpu_check(gpuMemsetAsync(p, 0, bytes, zaya_cuda_be_of(be)->stream), "cudaMemsetAsync");
}
static zaya_status glue_reserve(zaya_backend *be, size_t bytes) {
    (void)be;
    (void)bytes;
    return ZAYA_OK;
}
static void glue_destroy(zaya_backend *be) {
    if (!be) return;
    zaya_cuda_be *c = zaya_cuda_be_of(be);
    if (c) {
        gpuStreamSynchronize(c->stream);
        gpuStreamDestroy(c->stream);
        free(c);
    }
    free(be);
}

extern "C" zaya_status zaya_gpu_backend_init(zaya_device d, zaya_backend **out) {
    *out = NULL;
    ZAYA_TRY(zaya_gpu_select(d));
    zaya_backend *be = (zaya_backend *)calloc(1, sizeof *be);
    zaya_cuda_be *c = (zaya_cuda_be *)calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return zaya_error_set(ZAYA_ENOMEM, "the CUDA backend's state");
    }
    c->device = d.index;
    c->block = 256;
    zaya_status s = zaya_gpu_check(gpuStreamCreate(&c->stream), "cudaStreamCreate");
    if (s != ZAYA_OK) {
        free(be);
        free(c);
        return s;
    }
    snprintf(be->name, sizeof be->name, "cuda:%d", d.index);
    be->ctx = c;
    be->alloc = glue_alloc;
    be->free = glue_free;
    be->upload = glue_upload;
    be->download = glue_download;
    be->copy = glue_copy;
    be->zero = glue_zero;
    be->sync = glue_sync;
    be->reserve = glue_reserve;
    be->destroy = glue_destroy;
    zaya_cuda_be_install_core(be);
    zaya_cuda_be_install_ops(be);
    zaya_cuda_be_install_cca(be);
    *out = be;
    return ZAYA_OK;
}

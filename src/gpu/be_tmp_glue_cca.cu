// TEMPORARY glue so that be_cca.cu and be_attention.cu compile, link and can be tested before
// be_core.cu exists: the error bookkeeping, the block-count helper, empty core/ops installers and a
// minimal zaya_gpu_backend_init (stream, memory calls, a partials scratch). be_core.cu owns all of
// this; drop this file when it lands.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/be_cuda.h"
#include "zaya/gpu.h"

#define GLUE_PARTIALS (1 << 20)

extern "C" void zaya_cuda_be_fail(zaya_backend *be, const char *op, gpuError_t e) {
    zaya_cuda_be *cb = zaya_cuda_be_of(be);
    if (cb->err != ZAYA_OK) return;
    cb->err = ZAYA_EBACKEND;
    snprintf(cb->errmsg, sizeof cb->errmsg, "%s: %s: %s", op, gpuGetErrorName(e), gpuGetErrorString(e));
}

extern "C" void zaya_cuda_be_check_launch(zaya_backend *be, const char *op) {
    const gpuError_t e = gpuGetLastError();
    if (e != gpuSuccess) zaya_cuda_be_fail(be, op, e);
}

extern "C" int zaya_cuda_be_blocks(zaya_backend *be, int64_t n, int threads) {
    (void)be;
    int64_t b = threads > 0 ? (n + threads - 1) / threads : 1;
    if (b > 65535) b = 65535;
    return b < 1 ? 1 : (int)b;
}

extern "C" void zaya_cuda_be_install_core(zaya_backend *be) { (void)be; }
extern "C" void zaya_cuda_be_install_ops(zaya_backend *be) { (void)be; }

static zaya_status glue_pending(zaya_cuda_be *cb) {
    if (cb->err == ZAYA_OK) return ZAYA_OK;
    const zaya_status st = zaya_error_set(cb->err, "%s", cb->errmsg);
    cb->err = ZAYA_OK;
    cb->errmsg[0] = 0;
    return st;
}

static zaya_status glue_alloc(zaya_backend *be, void **p, size_t bytes) {
    *p = NULL;
    if (bytes == 0) return ZAYA_OK;
    ZAYA_TRY(zaya_gpu_check(gpuMalloc(p, bytes), "cudaMalloc"));
    return zaya_gpu_check(gpuMemsetAsync(*p, 0, bytes, zaya_cuda_be_of(be)->stream), "cudaMemsetAsync");
}
static void glue_free(zaya_backend *be, void *p) {
    (void)be;
    if (p) gpuFree(p);
}
static zaya_status glue_sync(zaya_backend *be) {
    zaya_cuda_be *cb = zaya_cuda_be_of(be);
    const gpuError_t e = gpuStreamSynchronize(cb->stream);
    if (e != gpuSuccess) zaya_cuda_be_fail(be, "sync", e);
    return glue_pending(cb);
}
static zaya_status glue_upload(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    ZAYA_TRY(zaya_gpu_check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyHostToDevice, zaya_cuda_be_of(be)->stream),
                            "cudaMemcpyAsync"));
    return zaya_gpu_check(gpuStreamSynchronize(zaya_cuda_be_of(be)->stream), "cudaStreamSynchronize");
}
static zaya_status glue_download(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    ZAYA_TRY(zaya_gpu_check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToHost, zaya_cuda_be_of(be)->stream),
                            "cudaMemcpyAsync"));
    return glue_sync(be);
}
static zaya_status glue_copy(zaya_backend *be, void *dst, const void *src, size_t bytes) {
    return zaya_gpu_check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, zaya_cuda_be_of(be)->stream),
                          "cudaMemcpyAsync");
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
    zaya_cuda_be *cb = zaya_cuda_be_of(be);
    if (cb) {
        if (cb->stream) gpuStreamSynchronize(cb->stream);
        if (cb->partials) gpuFree(cb->partials);
        if (cb->stream) gpuStreamDestroy(cb->stream);
        free(cb);
    }
    free(be);
}

extern "C" zaya_status zaya_gpu_backend_init(zaya_device d, zaya_backend **out) {
    *out = NULL;
    ZAYA_TRY(zaya_gpu_select(d));
    zaya_backend *be = (zaya_backend *)calloc(1, sizeof *be);
    zaya_cuda_be *cb = (zaya_cuda_be *)calloc(1, sizeof *cb);
    if (!be || !cb) {
        free(be);
        free(cb);
        return zaya_error_set(ZAYA_ENOMEM, "cuda backend: out of host memory");
    }
    be->ctx = cb;
    snprintf(be->name, sizeof be->name, "cuda:%d", d.index);
    cb->device = d.index;
    cb->block = 256;
    be->alloc = glue_alloc;
    be->free = glue_free;
    be->upload = glue_upload;
    be->download = glue_download;
    be->copy = glue_copy;
    be->zero = glue_zero;
    be->sync = glue_sync;
    be->reserve = glue_reserve;
    be->destroy = glue_destroy;
    zaya_status st = zaya_gpu_check(gpuStreamCreate(&cb->stream), "cudaStreamCreate");
    if (st == ZAYA_OK) st = zaya_gpu_check(gpuMalloc((void **)&cb->partials, GLUE_PARTIALS * sizeof(double)), "cudaMalloc");
    if (st != ZAYA_OK) {
        glue_destroy(be);
        return st;
    }
    cb->partials_count = GLUE_PARTIALS;
    zaya_cuda_be_install_core(be);
    zaya_cuda_be_install_ops(be);
    zaya_cuda_be_install_cca(be);
    *out = be;
    return ZAYA_OK;
}

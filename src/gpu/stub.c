/* The device layer of a build without CUDA (-DZAYA_CUDA=OFF, or no nvcc at configure time): every
 * call that needs the runtime fails with ZAYA_EUNSUPPORTED and says so; the device count is 0, so
 * GPU tests skip. Replaced by runtime.cu, gemm.cu and stream.cu when CUDA is built. */
#include "zaya/gpu.h"

#define NO_CUDA(what) zaya_error_set(ZAYA_EUNSUPPORTED, "%s: zaya was built without CUDA (reconfigure with nvcc " \
                                     "on PATH and -DZAYA_CUDA=ON)", what)

int zaya_gpu_built(void) { return 0; }
const char *zaya_gpu_backend_name(void) { return "none"; }
int zaya_gpu_device_count(void) { return 0; }
zaya_status zaya_gpu_select(zaya_device d) {
    if (d.kind == ZAYA_DEVICE_CPU) return zaya_error_set(ZAYA_EINVAL, "device cpu is not a GPU");
    return NO_CUDA("selecting a CUDA device");
}
zaya_status zaya_gpu_props_get(int index, zaya_gpu_props *p) { return NO_CUDA("device properties"); }
zaya_status zaya_gpu_malloc(void **p, size_t bytes) {
    *p = NULL;
    return NO_CUDA("device memory");
}
void zaya_gpu_free(void *p) {}
zaya_status zaya_gpu_host_malloc(void **p, size_t bytes) {
    *p = NULL;
    return NO_CUDA("pinned host memory");
}
void zaya_gpu_host_free(void *p) {}
zaya_status zaya_gpu_memcpy(void *dst, const void *src, size_t bytes, zaya_gpu_copy kind, zaya_gpu_stream *s) {
    return NO_CUDA("device copy");
}
zaya_status zaya_gpu_memset(void *p, int value, size_t bytes, zaya_gpu_stream *s) { return NO_CUDA("device memset"); }
zaya_status zaya_gpu_sync(void) { return NO_CUDA("device synchronize"); }
zaya_status zaya_gpu_stream_init(zaya_gpu_stream **s) {
    *s = NULL;
    return NO_CUDA("streams");
}
void zaya_gpu_stream_free(zaya_gpu_stream *s) {}
zaya_status zaya_gpu_stream_sync(zaya_gpu_stream *s) { return NO_CUDA("streams"); }
void *zaya_gpu_stream_native(zaya_gpu_stream *s) { return NULL; }
zaya_status zaya_gpu_event_init(zaya_gpu_event **e) {
    *e = NULL;
    return NO_CUDA("events");
}
void zaya_gpu_event_free(zaya_gpu_event *e) {}
zaya_status zaya_gpu_event_record(zaya_gpu_event *e, zaya_gpu_stream *s) { return NO_CUDA("events"); }
zaya_status zaya_gpu_event_sync(zaya_gpu_event *e) { return NO_CUDA("events"); }
zaya_status zaya_gpu_event_elapsed_ms(zaya_gpu_event *a, zaya_gpu_event *b, double *ms) { return NO_CUDA("events"); }

zaya_status zaya_gpu_gemm_init(zaya_gpu_gemm **g, zaya_gpu_dtype t, int trans_a, int trans_b, int64_t m, int64_t n,
                               int64_t k, uint64_t seed) {
    *g = NULL;
    return NO_CUDA("cuBLASLt GEMM");
}
void zaya_gpu_gemm_free(zaya_gpu_gemm *g) {}
void zaya_gpu_gemm_buffers(const zaya_gpu_gemm *g, const void **a, const void **b, const float **d) {
    *a = *b = NULL;
    *d = NULL;
}
zaya_status zaya_gpu_gemm_run(zaya_gpu_gemm *g) { return NO_CUDA("cuBLASLt GEMM"); }
const char *zaya_gpu_gemm_algo(const zaya_gpu_gemm *g) { return "none"; }
zaya_status zaya_gpu_gemm_time(zaya_gpu_gemm *g, int warmup, int iters, double *best_ms, double *mean_ms) {
    return NO_CUDA("cuBLASLt GEMM");
}
zaya_status zaya_gpu_gemm_verify(zaya_gpu_gemm *g, int samples, double *max_rel, int64_t *bad) {
    return NO_CUDA("cuBLASLt GEMM");
}
zaya_status zaya_gpu_stream_run(int64_t n, int ntimes, zaya_gpu_stream_result *r) {
    return NO_CUDA("device memory bandwidth");
}
zaya_status zaya_gpu_copy_bandwidth(size_t bytes, int pinned, zaya_gpu_copy kind, int ntimes, double *best_GBps) {
    return NO_CUDA("host<->device bandwidth");
}

zaya_status zaya_gpu_backend_init(zaya_device d, zaya_backend **out) {
    (void)d;
    *out = NULL;
    return NO_CUDA("the CUDA compute backend");
}

// The device runtime over CUDA (through the names of gpu_rt.h): device selection and properties,
// memory, streams, events, and errors that name the failed call.
#include <stdio.h>
#include <string.h>

#include "gpu/gpu_rt.h"
#include "zaya/gpu.h"

struct zaya_gpu_stream { gpuStream_t s; };
struct zaya_gpu_event { gpuEvent_t e; };

static gpuStream_t native(zaya_gpu_stream *s) { return s ? s->s : (gpuStream_t)0; }

extern "C" zaya_status zaya_gpu_check(gpuError_t e, const char *call) {
    if (e == gpuSuccess) return ZAYA_OK;
    (void)gpuGetLastError(); /* clear a sticky-free error so the next call starts clean */
    return zaya_error_set(ZAYA_EBACKEND, "%s: %s: %s", call, gpuGetErrorName(e), gpuGetErrorString(e));
}

int zaya_gpu_built(void) { return 1; }
const char *zaya_gpu_backend_name(void) {
#if defined(ZAYA_HIP)
    return "hip";
#else
    return "cuda";
#endif
}

int zaya_gpu_device_count(void) {
    int n = 0;
    if (gpuGetDeviceCount(&n) != gpuSuccess) {
        (void)gpuGetLastError();
        return 0; /* no driver or no device: nothing visible */
    }
    return n;
}

zaya_status zaya_gpu_select(zaya_device d) {
    if (d.kind != ZAYA_DEVICE_CUDA) return zaya_error_set(ZAYA_EINVAL, "device cpu is not a GPU");
    int n = zaya_gpu_device_count();
    if (d.index >= n)
        return zaya_error_set(ZAYA_EINVAL, "device cuda:%d: %d CUDA device%s visible", d.index, n, n == 1 ? "" : "s");
    char call[48];
    snprintf(call, sizeof call, "cudaSetDevice(%d)", d.index);
    return zaya_gpu_check(gpuSetDevice(d.index), call);
}

zaya_status zaya_gpu_props_get(int index, zaya_gpu_props *p) {
    memset(p, 0, sizeof *p);
    gpuDeviceProp q;
    char call[64];
    snprintf(call, sizeof call, "cudaGetDeviceProperties(%d)", index);
    ZAYA_TRY(zaya_gpu_check(gpuGetDeviceProperties(&q, index), call));
    snprintf(p->name, sizeof p->name, "%s", q.name);
    p->index = index;
    p->cc_major = q.major;
    p->cc_minor = q.minor;
    p->sm_count = q.multiProcessorCount;
    p->warp_size = q.warpSize;
    p->max_threads_per_block = q.maxThreadsPerBlock;
    p->total_mem = (int64_t)q.totalGlobalMem;
    p->l2_bytes = q.l2CacheSize;
    p->mem_bus_bits = q.memoryBusWidth;
    int v = 0;
    if (gpuDeviceGetAttribute(&v, gpuDevAttrClockRate, index) == gpuSuccess) p->sm_clock_khz = v;
    if (gpuDeviceGetAttribute(&v, gpuDevAttrMemoryClockRate, index) == gpuSuccess) p->mem_clock_khz = v;
    (void)gpuGetLastError();
    gpuRuntimeGetVersion(&p->runtime_version);
    gpuDriverGetVersion(&p->driver_version);
    return ZAYA_OK;
}

zaya_status zaya_gpu_malloc(void **p, size_t bytes) {
    *p = NULL;
    char call[64];
    snprintf(call, sizeof call, "cudaMalloc(%zu bytes)", bytes);
    return zaya_gpu_check(gpuMalloc(p, bytes ? bytes : 1), call);
}
void zaya_gpu_free(void *p) {
    if (p) gpuFree(p);
}
zaya_status zaya_gpu_host_malloc(void **p, size_t bytes) {
    *p = NULL;
    char call[64];
    snprintf(call, sizeof call, "cudaHostAlloc(%zu bytes)", bytes);
    return zaya_gpu_check(gpuHostAlloc(p, bytes ? bytes : 1), call);
}
void zaya_gpu_host_free(void *p) {
    if (p) gpuFreeHost(p);
}

zaya_status zaya_gpu_memcpy(void *dst, const void *src, size_t bytes, zaya_gpu_copy kind, zaya_gpu_stream *s) {
    static const char *names[3] = {"HostToDevice", "DeviceToHost", "DeviceToDevice"};
    if ((int)kind < 0 || kind > ZAYA_GPU_D2D) return zaya_error_set(ZAYA_EINVAL, "bad copy kind %d", (int)kind);
    const auto k = kind == ZAYA_GPU_H2D ? gpuMemcpyHostToDevice : kind == ZAYA_GPU_D2H ? gpuMemcpyDeviceToHost
                                                                                   : gpuMemcpyDeviceToDevice;
    char call[80];
    snprintf(call, sizeof call, "cudaMemcpyAsync(%zu bytes, %s)", bytes, names[kind]);
    return zaya_gpu_check(gpuMemcpyAsync(dst, src, bytes, k, native(s)), call);
}

zaya_status zaya_gpu_memset(void *p, int value, size_t bytes, zaya_gpu_stream *s) {
    char call[64];
    snprintf(call, sizeof call, "cudaMemsetAsync(%zu bytes)", bytes);
    return zaya_gpu_check(gpuMemsetAsync(p, value, bytes, native(s)), call);
}

zaya_status zaya_gpu_sync(void) { return zaya_gpu_check(gpuDeviceSynchronize(), "cudaDeviceSynchronize"); }

zaya_status zaya_gpu_stream_init(zaya_gpu_stream **out) {
    *out = NULL;
    zaya_gpu_stream *s = (zaya_gpu_stream *)calloc(1, sizeof *s);
    if (!s) return zaya_error_set(ZAYA_ENOMEM, "out of memory for a stream");
    zaya_status st = zaya_gpu_check(gpuStreamCreate(&s->s), "cudaStreamCreate");
    if (st != ZAYA_OK) {
        free(s);
        return st;
    }
    *out = s;
    return ZAYA_OK;
}
void zaya_gpu_stream_free(zaya_gpu_stream *s) {
    if (!s) return;
    gpuStreamDestroy(s->s);
    free(s);
}
zaya_status zaya_gpu_stream_sync(zaya_gpu_stream *s) {
    return zaya_gpu_check(gpuStreamSynchronize(native(s)), "cudaStreamSynchronize");
}
void *zaya_gpu_stream_native(zaya_gpu_stream *s) { return (void *)native(s); }

zaya_status zaya_gpu_event_init(zaya_gpu_event **out) {
    *out = NULL;
    zaya_gpu_event *e = (zaya_gpu_event *)calloc(1, sizeof *e);
    if (!e) return zaya_error_set(ZAYA_ENOMEM, "out of memory for an event");
    zaya_status st = zaya_gpu_check(gpuEventCreate(&e->e), "cudaEventCreate");
    if (st != ZAYA_OK) {
        free(e);
        return st;
    }
    *out = e;
    return ZAYA_OK;
}
void zaya_gpu_event_free(zaya_gpu_event *e) {
    if (!e) return;
    gpuEventDestroy(e->e);
    free(e);
}
zaya_status zaya_gpu_event_record(zaya_gpu_event *e, zaya_gpu_stream *s) {
    return zaya_gpu_check(gpuEventRecord(e->e, native(s)), "cudaEventRecord");
}
zaya_status zaya_gpu_event_sync(zaya_gpu_event *e) {
    return zaya_gpu_check(gpuEventSynchronize(e->e), "cudaEventSynchronize");
}
zaya_status zaya_gpu_event_elapsed_ms(zaya_gpu_event *a, zaya_gpu_event *b, double *ms) {
    float f = 0;
    ZAYA_TRY(zaya_gpu_check(gpuEventElapsedTime(&f, a->e, b->e), "cudaEventElapsedTime"));
    *ms = f;
    return ZAYA_OK;
}

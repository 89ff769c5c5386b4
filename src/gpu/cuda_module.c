/* The CUDA module's entry (libzaya_cuda.so; gpu/module.h): the table of the device layer's CUDA
 * functions (runtime.cu, gemm.cu, stream.cu, be_core.cu) and of the NCCL communicator (src/dist/nccl.c),
 * and the one host function the module's code calls, zaya_error_set, routed to the host's own.
 * Compiled into the module only; every symbol but the entry stays inside it (cuda_module.map). */
#include <stdarg.h>
#include <stdio.h>

#include "gpu/module.h"
#include "zaya/gpu.h"

/* Set by the entry before the host can call anything else. */
static const zaya_gpu_host *g_host;

/* The module's zaya_error_set: formatted here, stored by the host in the calling thread's buffer
 * (the module must not keep a second one that zaya_error_message() would never read). */
zaya_status zaya_error_set(zaya_status code, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return g_host ? g_host->error_set(code, "%s", msg) : code;
}

#if defined(ZAYA_GPU_MODULE_NCCL)
/* src/dist/nccl.c fills the NCCL members (it owns the communicator; this layer does not know zaya/dist.h). */
void zaya_nccl_module_install(zaya_gpu_module *m);
#endif

#define MEMBER_STATUS(name, what, params, args, clear) .name = zaya_##name,
#define MEMBER_VOID(name, params, args) .name = zaya_##name,
static zaya_gpu_module g_module = {
    .abi = ZAYA_GPU_MODULE_ABI,
    .size = sizeof(zaya_gpu_module),
    .name = "cuda",
    .gpu_device_count = zaya_gpu_device_count,
    .gpu_select = zaya_gpu_select,
    .gpu_stream_native = zaya_gpu_stream_native,
    .gpu_gemm_algo = zaya_gpu_gemm_algo,
    .gpu_gemm_buffers = zaya_gpu_gemm_buffers,
    ZAYA_GPU_MODULE_STATUS_FUNCS(MEMBER_STATUS)
    ZAYA_GPU_MODULE_VOID_FUNCS(MEMBER_VOID)
};

/* The one exported symbol (ZAYA_GPU_MODULE_ENTRY). */
const zaya_gpu_module *zaya_gpu_module_entry(const zaya_gpu_host *host);
const zaya_gpu_module *zaya_gpu_module_entry(const zaya_gpu_host *host) {
    if (!host || host->abi != ZAYA_GPU_MODULE_ABI || !host->error_set) return NULL;
    g_host = host;
#if defined(ZAYA_GPU_MODULE_NCCL)
    zaya_nccl_module_install(&g_module);
#endif
    return &g_module;
}

/* The device layer's host side (every build): zaya/gpu.h forwarded to the CUDA module, which is
 * opened with dlopen the first time a command asks for a device (docs/gpu.md, "The CUDA module").
 *
 * Where the module is looked for: the path in $ZAYA_CUDA_MODULE when it is set (and nowhere else),
 * otherwise libzaya_cuda.so next to the executable, in ../lib from it (an installed tree), and in its
 * parent folder (the tests and benchmark programs of a build tree sit one folder below the module).
 * The first file that exists is opened; a failure is the dynamic loader's own message, which names
 * the library that is missing ("libcudart.so.13: cannot open shared object file"). The outcome is
 * kept: the module is opened at most once per process and never closed.
 *
 * A build without CUDA (ZAYA_GPU_MODULE_BUILT undefined) has no module: every request answers
 * ZAYA_EUNSUPPORTED "built without CUDA" and the device count is 0, as the stub of earlier builds did. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(ZAYA_GPU_MODULE_BUILT)
#include <dlfcn.h>
#endif

#include "gpu/module.h"
#include "zaya/gpu.h"

#define NO_CUDA(what) zaya_error_set(ZAYA_EUNSUPPORTED, "%s: zaya was built without CUDA (reconfigure with nvcc " \
                                     "on PATH and -DZAYA_CUDA=ON)", what)

static _Atomic(const zaya_gpu_module *) g_module;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_load_error[4 * PATH_MAX + 512];
static char g_module_path[PATH_MAX + 64];

#if defined(ZAYA_GPU_MODULE_BUILT)
static const zaya_gpu_host g_host = {ZAYA_GPU_MODULE_ABI, zaya_error_set};

/* The folder of the running executable, without the trailing slash ("" when unknown). */
static void exe_dir(char *buf, size_t cap) {
    buf[0] = 0;
    ssize_t n = readlink("/proc/self/exe", buf, cap - 1);
    if (n <= 0) {
        buf[0] = 0;
        return;
    }
    buf[n] = 0;
    char *slash = strrchr(buf, '/');
    if (slash) *slash = 0;
    else buf[0] = 0;
}

static void try_open(const char *path, const char *how) {
    snprintf(g_module_path, sizeof g_module_path, "%s", path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(g_load_error, sizeof g_load_error, "loading the CUDA module %s%s: %s", path, how,
                 e ? e : "dlopen failed");
        return;
    }
    zaya_gpu_module_entry_fn entry;
    void *sym = dlsym(h, ZAYA_GPU_MODULE_ENTRY);
    memcpy(&entry, &sym, sizeof entry); /* object pointer -> function pointer without a cast ISO C forbids */
    if (!sym) {
        snprintf(g_load_error, sizeof g_load_error, "loading the CUDA module %s%s: no symbol %s (not a zaya module)",
                 path, how, ZAYA_GPU_MODULE_ENTRY);
        return;
    }
    const zaya_gpu_module *m = entry(&g_host);
    if (!m || m->abi != ZAYA_GPU_MODULE_ABI || m->size != sizeof(zaya_gpu_module)) {
        snprintf(g_load_error, sizeof g_load_error,
                 "loading the CUDA module %s%s: interface version %u (%u bytes), this zaya needs version %d "
                 "(%zu bytes): the module comes from another build",
                 path, how, m ? (unsigned)m->abi : 0u, m ? (unsigned)m->size : 0u, ZAYA_GPU_MODULE_ABI,
                 sizeof(zaya_gpu_module));
        return;
    }
    atomic_store(&g_module, m);
}

static void load_once(void) {
    const char *env = getenv(ZAYA_GPU_MODULE_ENV);
    if (env && *env) {
        try_open(env, " (" ZAYA_GPU_MODULE_ENV ")");
        return;
    }
    char dir[PATH_MAX];
    exe_dir(dir, sizeof dir);
    static const char *const rel[] = {"/", "/../lib/", "/../"};
    char searched[3 * (PATH_MAX + 72)] = "";
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        char path[PATH_MAX + 64];
        snprintf(path, sizeof path, "%s%s%s", dir, rel[i], ZAYA_GPU_MODULE_FILE);
        if (access(path, F_OK) == 0) {
            try_open(path, "");
            return;
        }
        size_t used = strlen(searched);
        snprintf(searched + used, sizeof searched - used, "%s%s", used ? ", " : "", path);
    }
    snprintf(g_load_error, sizeof g_load_error,
             "the CUDA module %s was not found (searched %s; set " ZAYA_GPU_MODULE_ENV " to its path)",
             ZAYA_GPU_MODULE_FILE, searched);
}
#else
static void load_once(void) { snprintf(g_load_error, sizeof g_load_error, "zaya was built without CUDA"); }
#endif

/* The module, or NULL with the reason in g_load_error. */
static const zaya_gpu_module *module(void) {
    pthread_once(&g_once, load_once);
    return atomic_load(&g_module);
}

/* The error for a request (`what`, NULL: none named) the module cannot serve. */
static zaya_status unavailable(const char *what) {
#if defined(ZAYA_GPU_MODULE_BUILT)
    if (!what) return zaya_error_set(ZAYA_EBACKEND, "%s", g_load_error);
    return zaya_error_set(ZAYA_EBACKEND, "%s: %s", what, g_load_error);
#else
    return NO_CUDA(what ? what : "the CUDA backend");
#endif
}

zaya_status zaya_gpu_module_get(const zaya_gpu_module **out) {
    *out = module();
    return *out ? ZAYA_OK : unavailable(NULL);
}

int zaya_gpu_module_nccl_built(void) {
#if defined(ZAYA_GPU_MODULE_BUILT) && defined(ZAYA_GPU_MODULE_NCCL)
    return 1;
#else
    return 0;
#endif
}

zaya_status zaya_gpu_load(void) {
    const zaya_gpu_module *m;
    return zaya_gpu_module_get(&m);
}

int zaya_gpu_loaded(void) { return atomic_load(&g_module) != NULL; }

const char *zaya_gpu_module_path(void) { return zaya_gpu_loaded() ? g_module_path : ""; }

int zaya_gpu_built(void) {
#if defined(ZAYA_GPU_MODULE_BUILT)
    return 1;
#else
    return 0;
#endif
}

const char *zaya_gpu_backend_name(void) { return zaya_gpu_built() ? "cuda" : "none"; }

/* Visible devices: 0 as well when the module cannot be loaded (callers that need a device then ask
 * for it and get the loader's message). */
int zaya_gpu_device_count(void) {
    const zaya_gpu_module *m = zaya_gpu_built() ? module() : NULL;
    return m ? m->gpu_device_count() : 0;
}

zaya_status zaya_gpu_select(zaya_device d) {
    if (d.kind == ZAYA_DEVICE_CPU) return zaya_error_set(ZAYA_EINVAL, "device cpu is not a GPU");
    const zaya_gpu_module *m = module();
    return m ? m->gpu_select(d) : unavailable("selecting a CUDA device");
}

/* What the module handed out is released by the module; without it nothing was handed out. */
void *zaya_gpu_stream_native(zaya_gpu_stream *s) {
    const zaya_gpu_module *m = atomic_load(&g_module);
    return m && s ? m->gpu_stream_native(s) : NULL;
}

const char *zaya_gpu_gemm_algo(const zaya_gpu_gemm *g) {
    const zaya_gpu_module *m = atomic_load(&g_module);
    return m && g ? m->gpu_gemm_algo(g) : "none";
}

void zaya_gpu_gemm_buffers(const zaya_gpu_gemm *g, const void **a, const void **b, const float **d) {
    const zaya_gpu_module *m = atomic_load(&g_module);
    if (m && g) {
        m->gpu_gemm_buffers(g, a, b, d);
        return;
    }
    *a = *b = NULL;
    *d = NULL;
}

#define FORWARD_STATUS(name, what, params, args, clear) \
    zaya_status zaya_##name params {                    \
        const zaya_gpu_module *mod_ = module();         \
        if (mod_) return mod_->name args;               \
        clear;                                          \
        return unavailable(what);                       \
    }
ZAYA_GPU_MODULE_STATUS_FUNCS(FORWARD_STATUS)
#undef FORWARD_STATUS

#define FORWARD_VOID(name, params, args)                        \
    void zaya_##name params {                                   \
        const zaya_gpu_module *m = atomic_load(&g_module);      \
        if (m) m->name args;                                    \
    }
ZAYA_GPU_MODULE_VOID_FUNCS(FORWARD_VOID)
#undef FORWARD_VOID

/* The CUDA module is opened only when a device is asked for (docs/gpu.md, "The CUDA module"): after
 * the CPU-side calls of zaya/gpu.h (device strings, datasheet, built?) no CUDA library is mapped in
 * this process (/proc/self/maps); zaya_gpu_load() then maps the module and, through it, libcudart and
 * libcublasLt, or fails naming what it could not open. Without CUDA in the build, loading fails with
 * "built without CUDA" and nothing is mapped either. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/dist.h"
#include "zaya/gpu.h"

/* 1 when a mapping of this process has `name` in its path. */
static int mapped(const char *name) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, name) != NULL;
    fclose(f);
    return found;
}

static const char *const k_cuda_libs[] = {"libzaya_cuda.so", "libcudart", "libcublas", "libnccl", "libcudnn"};

static void none_mapped(const char *when) {
    for (size_t i = 0; i < sizeof k_cuda_libs / sizeof k_cuda_libs[0]; i++)
        CHECK(mapped(k_cuda_libs[i]) == 0, "%s: %s is mapped", when, k_cuda_libs[i]);
}

int main(void) {
    CHECK(mapped("libc.so") == 1, "/proc/self/maps does not list libc: the check cannot see mappings");
    zaya_device d;
    CHECK(zaya_device_parse("cuda:1", &d) == ZAYA_OK && d.index == 1, "parse");
    CHECK(zaya_gpu_datasheet_find("NVIDIA H200") != NULL, "datasheet");
    CHECK(zaya_gpu_dtype_parse("bf16", &(zaya_gpu_dtype){0}) == ZAYA_OK, "dtype");
    const int built = zaya_gpu_built();
    (void)zaya_nccl_built();
    CHECK(!zaya_gpu_loaded() && !strcmp(zaya_gpu_module_path(), ""), "loaded before any device request");
    /* Releasing nothing and asking for the CPU load nothing either. */
    zaya_gpu_free(NULL);
    zaya_gpu_stream_free(NULL);
    CHECK(zaya_gpu_select((zaya_device){ZAYA_DEVICE_CPU, 0}) == ZAYA_EINVAL, "cpu is not a GPU");
    none_mapped("before a device request");
    CHECK(!zaya_gpu_loaded(), "loaded by a CPU-side call");

    zaya_status st = zaya_gpu_load();
    if (!built) {
        CHECK(st == ZAYA_EUNSUPPORTED && strstr(zaya_error_message(), "built without CUDA"), "load without CUDA: %d %s",
              (int)st, zaya_error_message());
        CHECK(zaya_gpu_device_count() == 0, "devices without CUDA");
        none_mapped("built without CUDA");
    } else if (st == ZAYA_OK) {
        CHECK(zaya_gpu_loaded() && strstr(zaya_gpu_module_path(), "libzaya_cuda.so"), "path '%s'",
              zaya_gpu_module_path());
        CHECK(mapped("libzaya_cuda.so") == 1, "the module is not mapped after zaya_gpu_load");
        CHECK(mapped("libcudart") == 1 && mapped("libcublasLt") == 1, "the module's CUDA libraries are not mapped");
        CHECK(zaya_gpu_load() == ZAYA_OK, "a second load");
        CHECK(zaya_gpu_device_count() >= 0, "device count");
        /* Errors set inside the module reach this thread's message. */
        int n = zaya_gpu_device_count();
        CHECK(zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, n}) == ZAYA_EINVAL &&
                  strstr(zaya_error_message(), "CUDA device"),
              "select past the last device: %s", zaya_error_message());
        /* The NCCL calls reach the module too: a device past the last is refused before any NCCL call. */
        if (zaya_nccl_built()) {
            zaya_nccl *nc = (zaya_nccl *)&nc;
            char want[64];
            snprintf(want, sizeof want, "NCCL: device cuda:%d: %d CUDA device", n, n);
            CHECK(zaya_nccl_init(NULL, 1, &n, &nc) == ZAYA_EINVAL && nc == NULL && strstr(zaya_error_message(), want),
                  "nccl init past the last device: %s", zaya_error_message());
            CHECK(strcmp(zaya_nccl_version(), "none") != 0, "NCCL version from the module: %s", zaya_nccl_version());
        }
    } else {
        /* CUDA built but the libraries absent here: the message names what is missing. */
        CHECK(st == ZAYA_EBACKEND && strstr(zaya_error_message(), "libzaya_cuda.so"), "load: %d %s", (int)st,
              zaya_error_message());
        CHECK(zaya_gpu_device_count() == 0, "devices without the module");
        printf("the CUDA module did not load here: %s\n", zaya_error_message());
    }
    return th_finish("gpu_module");
}

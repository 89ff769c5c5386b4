/* The CUDA compute backend against the CPU reference backend: every operation of zaya/backend.h on
 * the same inputs, within each check's bound (tests/backend_check.c; the table of errors goes to
 * stdout). Exits 77 (ctest: skipped) when no CUDA device is visible. */
#include <stdio.h>

#include "backend_check.h"
#include "zaya/gpu.h"

int main(void) {
    if (zaya_gpu_device_count() == 0) {
        printf("backend_cuda: no CUDA device (%s build): skipped\n", zaya_gpu_backend_name());
        return 77;
    }
    zaya_backend *gpu = NULL, *cpu = NULL;
    const zaya_device dev = {ZAYA_DEVICE_CUDA, 0};
    if (zaya_gpu_backend_init(dev, &gpu) != ZAYA_OK) {
        fprintf(stderr, "backend_cuda: zaya_gpu_backend_init: %s\n", zaya_error_message());
        return 1;
    }
    if (zaya_backend_cpu_init(&cpu) != ZAYA_OK) {
        fprintf(stderr, "backend_cuda: zaya_backend_cpu_init: %s\n", zaya_error_message());
        zaya_backend_free(gpu);
        return 1;
    }
    const int failed = zaya_backend_check_all(gpu, cpu, stdout);
    zaya_backend_free(gpu);
    zaya_backend_free(cpu);
    printf("backend_cuda: %d of %d checks failed\n", failed, zaya_backend_check_count());
    return failed ? 1 : 0;
}

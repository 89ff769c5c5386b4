/* Device layer, CPU side (every build): --device strings, dtype names, the datasheet table, and the
 * errors of a machine without a usable GPU: the stub's "built without CUDA" when CUDA is off (the
 * sanitizer build), the device count and selection error when it is on but no device is visible. */
#include <string.h>

#include "testutil.h"
#include "zaya/gpu.h"

static void test_device_parse(void) {
    zaya_device d = {ZAYA_DEVICE_CUDA, 7};
    CHECK(zaya_device_parse("cpu", &d) == ZAYA_OK && d.kind == ZAYA_DEVICE_CPU && d.index == 0, "cpu");
    CHECK(zaya_device_parse("cuda", &d) == ZAYA_OK && d.kind == ZAYA_DEVICE_CUDA && d.index == 0, "cuda");
    CHECK(zaya_device_parse("cuda:3", &d) == ZAYA_OK && d.kind == ZAYA_DEVICE_CUDA && d.index == 3, "cuda:3");
    CHECK(zaya_device_parse("cuda:1023", &d) == ZAYA_OK && d.index == 1023, "cuda:1023");
    const char *bad[] = {"", "gpu", "CUDA", "cuda:", "cuda:-1", "cuda:1x", "cuda:1024", "cuda:99999999", "cpu:0", "cuda 0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zaya_device e = {ZAYA_DEVICE_CPU, 42};
        zaya_status st = zaya_device_parse(bad[i], &e);
        CHECK(st == ZAYA_EINVAL, "'%s' accepted", bad[i]);
        CHECK(strstr(zaya_error_message(), bad[i]) != NULL, "message '%s' does not name '%s'", zaya_error_message(), bad[i]);
        CHECK(e.index == 42, "'%s': output written on error", bad[i]);
    }
    CHECK(zaya_device_parse(NULL, &d) == ZAYA_EINVAL, "NULL accepted");
    char buf[32];
    zaya_device_format((zaya_device){ZAYA_DEVICE_CUDA, 5}, buf, sizeof buf);
    CHECK(!strcmp(buf, "cuda:5"), "format %s", buf);
    zaya_device_format((zaya_device){ZAYA_DEVICE_CPU, 0}, buf, sizeof buf);
    CHECK(!strcmp(buf, "cpu"), "format %s", buf);
}

static void test_dtypes(void) {
    zaya_gpu_dtype t;
    CHECK(zaya_gpu_dtype_parse("bf16", &t) == ZAYA_OK && t == ZAYA_GPU_BF16, "bf16");
    CHECK(zaya_gpu_dtype_parse("f16", &t) == ZAYA_OK && t == ZAYA_GPU_F16, "f16");
    CHECK(zaya_gpu_dtype_parse("tf32", &t) == ZAYA_OK && t == ZAYA_GPU_TF32, "tf32");
    CHECK(zaya_gpu_dtype_parse("f32", &t) == ZAYA_OK && t == ZAYA_GPU_TF32, "f32 runs on TF32");
    CHECK(zaya_gpu_dtype_parse("fp8", &t) == ZAYA_EINVAL && strstr(zaya_error_message(), "'fp8'"), "fp8");
    CHECK(!strcmp(zaya_gpu_dtype_name(ZAYA_GPU_F16), "f16") && !strcmp(zaya_gpu_dtype_name(ZAYA_GPU_DTYPE_COUNT), "?"),
          "names");
    CHECK(zaya_gpu_stream_kernel_bytes(ZAYA_GPU_COPY) == 16 && zaya_gpu_stream_kernel_bytes(ZAYA_GPU_TRIAD) == 24 &&
              zaya_gpu_stream_kernel_bytes(ZAYA_GPU_ADD) == 24 && zaya_gpu_stream_kernel_bytes(ZAYA_GPU_DOT) == 16 &&
              zaya_gpu_stream_kernel_bytes(ZAYA_GPU_KERNEL_COUNT) == 0,
          "STREAM byte counts");
    CHECK(!strcmp(zaya_gpu_stream_kernel_name(ZAYA_GPU_TRIAD), "triad"), "triad");
}

static void test_datasheet(void) {
    const zaya_gpu_datasheet *d = zaya_gpu_datasheet_find("NVIDIA H200");
    CHECK(d && d->bf16_tflops == 989.4 && d->hbm_GBps == 4800.0 && d->tf32_tflops == 494.7, "H200");
    CHECK(d && zaya_gpu_datasheet_tflops(d, ZAYA_GPU_BF16) == 989.4 && zaya_gpu_datasheet_tflops(d, ZAYA_GPU_TF32) == 494.7,
          "H200 by dtype");
    d = zaya_gpu_datasheet_find("NVIDIA H200 NVL");
    CHECK(d && d->bf16_tflops == 835.0 && strstr(d->name, "NVL"), "H200 NVL must not match the SXM entry");
    d = zaya_gpu_datasheet_find("NVIDIA H100 80GB HBM3");
    CHECK(d && d->bf16_tflops == 989.4 && d->hbm_GBps == 3350.0, "H100 SXM");
    d = zaya_gpu_datasheet_find("NVIDIA H100 PCIe");
    CHECK(d && d->bf16_tflops == 756.0 && d->hbm_GBps == 2000.0, "H100 PCIe");
    d = zaya_gpu_datasheet_find("nvidia a100-sxm4-80gb");
    CHECK(d && d->hbm_GBps == 2039.0, "case-insensitive A100 80 GB");
    d = zaya_gpu_datasheet_find("AMD Instinct MI300X");
    CHECK(d && d->bf16_tflops == 1307.4 && d->hbm_GBps == 5300.0, "MI300X");
    CHECK(zaya_gpu_datasheet_find("Some Future GPU") == NULL && zaya_gpu_datasheet_find(NULL) == NULL, "unknown");
    CHECK(zaya_gpu_datasheet_tflops(NULL, ZAYA_GPU_BF16) == 0, "NULL sheet");
    /* Every entry is reachable: no earlier, shorter match shadows a later one. */
    for (int i = 0; i < zaya_gpu_datasheet_count(); i++) {
        const zaya_gpu_datasheet *e = zaya_gpu_datasheet_at(i);
        CHECK(zaya_gpu_datasheet_find(e->match) == e, "entry '%s' shadowed", e->match);
        CHECK(e->hbm_GBps > 0 && e->f16_tflops > 0, "entry '%s' incomplete", e->match);
    }
    CHECK(zaya_gpu_datasheet_at(-1) == NULL && zaya_gpu_datasheet_at(zaya_gpu_datasheet_count()) == NULL, "bounds");
}

static void test_no_device(void) {
    int n = zaya_gpu_device_count();
    if (!zaya_gpu_built()) {
        CHECK(n == 0, "stub: device count %d", n);
        CHECK(!strcmp(zaya_gpu_backend_name(), "none"), "stub backend name");
        void *p = (void *)1;
        CHECK(zaya_gpu_malloc(&p, 64) == ZAYA_EUNSUPPORTED && p == NULL, "stub malloc");
        CHECK(strstr(zaya_error_message(), "built without CUDA") != NULL, "stub message: %s", zaya_error_message());
        zaya_gpu_gemm *g = (zaya_gpu_gemm *)1;
        CHECK(zaya_gpu_gemm_init(&g, ZAYA_GPU_BF16, 0, 0, 64, 64, 64, 1) == ZAYA_EUNSUPPORTED && g == NULL, "stub gemm");
        CHECK(strstr(zaya_error_message(), "cuBLASLt GEMM: zaya was built without CUDA") != NULL, "stub gemm message: %s",
              zaya_error_message());
        zaya_gpu_stream_result r;
        CHECK(zaya_gpu_stream_run(1 << 20, 3, &r) == ZAYA_EUNSUPPORTED, "stub stream");
        CHECK(zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, 0}) == ZAYA_EUNSUPPORTED, "stub select");
    } else {
        CHECK(!strcmp(zaya_gpu_backend_name(), "cuda"), "backend name %s", zaya_gpu_backend_name());
        CHECK(n >= 0, "count %d", n);
        zaya_status st = zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, n});
        CHECK(st == ZAYA_EINVAL, "selecting cuda:%d of %d devices", n, n);
        char want[64];
        snprintf(want, sizeof want, "device cuda:%d: %d CUDA device", n, n);
        CHECK(strstr(zaya_error_message(), want) != NULL, "select message: %s", zaya_error_message());
    }
    CHECK(zaya_gpu_select((zaya_device){ZAYA_DEVICE_CPU, 0}) == ZAYA_EINVAL, "cpu is not a GPU");
}

int main(void) {
    test_device_parse();
    test_dtypes();
    test_datasheet();
    test_no_device();
    return th_finish("gpu");
}

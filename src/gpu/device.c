/* Device strings (--device cpu|cuda[:N]), GPU dtype names and the datasheet table: CPU code, built
 * with and without CUDA. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/gpu.h"

zaya_status zaya_device_parse(const char *s, zaya_device *out) {
    if (!s) return zaya_error_set(ZAYA_EINVAL, "device: empty (use cpu, cuda or cuda:N)");
    if (!strcmp(s, "cpu")) {
        *out = (zaya_device){ZAYA_DEVICE_CPU, 0};
        return ZAYA_OK;
    }
    if (!strcmp(s, "cuda")) {
        *out = (zaya_device){ZAYA_DEVICE_CUDA, 0};
        return ZAYA_OK;
    }
    if (!strncmp(s, "cuda:", 5)) {
        const char *p = s + 5;
        int n = 0, digits = 0;
        for (; *p && isdigit((unsigned char)*p) && digits < 5; p++, digits++) n = n * 10 + (*p - '0');
        if (digits > 0 && !*p && n <= 1023) {
            *out = (zaya_device){ZAYA_DEVICE_CUDA, n};
            return ZAYA_OK;
        }
        return zaya_error_set(ZAYA_EINVAL, "device '%s': the ordinal after 'cuda:' must be a number 0..1023", s);
    }
    return zaya_error_set(ZAYA_EINVAL, "unknown device '%s' (use cpu, cuda or cuda:N)", s);
}

void zaya_device_format(zaya_device d, char *buf, size_t cap) {
    if (!cap) return;
    if (d.kind == ZAYA_DEVICE_CPU) snprintf(buf, cap, "cpu");
    else snprintf(buf, cap, "cuda:%d", d.index);
}

static const char *g_dtype_names[ZAYA_GPU_DTYPE_COUNT] = {"bf16", "f16", "tf32"};

const char *zaya_gpu_dtype_name(zaya_gpu_dtype t) {
    return (t >= 0 && t < ZAYA_GPU_DTYPE_COUNT) ? g_dtype_names[t] : "?";
}

zaya_status zaya_gpu_dtype_parse(const char *s, zaya_gpu_dtype *t) {
    for (int i = 0; i < ZAYA_GPU_DTYPE_COUNT; i++)
        if (s && !strcmp(s, g_dtype_names[i])) {
            *t = (zaya_gpu_dtype)i;
            return ZAYA_OK;
        }
    if (s && !strcmp(s, "f32")) { /* f32 GEMMs on the device run on TF32 tensor cores */
        *t = ZAYA_GPU_TF32;
        return ZAYA_OK;
    }
    return zaya_error_set(ZAYA_EINVAL, "unknown GPU dtype '%s' (use bf16, f16, tf32 or f32)", s ? s : "");
}

/* Dense tensor-core peaks (no 2:4 sparsity) and HBM bandwidth from the vendors' datasheets, at the
 * boost clock. f32 is the non-tensor (CUDA core) rate, or the matrix-core rate on AMD. A 0 is "not
 * supported". More specific names first: the first entry whose `match` the device name contains wins. */
static const zaya_gpu_datasheet g_sheets[] = {
    {"H200 NVL", "NVIDIA H200 NVL", 835.0, 835.0, 417.5, 60.0, 4800.0},
    {"GH200", "NVIDIA GH200 (H100 96 GB)", 989.4, 989.4, 494.7, 66.9, 4000.0},
    {"H200", "NVIDIA H200 SXM", 989.4, 989.4, 494.7, 66.9, 4800.0},
    {"H100 NVL", "NVIDIA H100 NVL", 835.0, 835.0, 417.5, 60.0, 3900.0},
    {"H100 PCIe", "NVIDIA H100 PCIe", 756.0, 756.0, 378.0, 51.2, 2000.0},
    {"H100", "NVIDIA H100 SXM", 989.4, 989.4, 494.7, 66.9, 3350.0},
    {"B200", "NVIDIA B200", 2250.0, 2250.0, 1100.0, 75.0, 8000.0},
    {"A100-SXM4-80GB", "NVIDIA A100 SXM 80 GB", 312.0, 312.0, 156.0, 19.5, 2039.0},
    {"A100 80GB PCIe", "NVIDIA A100 PCIe 80 GB", 312.0, 312.0, 156.0, 19.5, 1935.0},
    {"A100", "NVIDIA A100 40 GB", 312.0, 312.0, 156.0, 19.5, 1555.0},
    {"L40S", "NVIDIA L40S", 362.1, 362.1, 183.0, 91.6, 864.0},
    {"L4", "NVIDIA L4", 121.0, 121.0, 60.0, 30.3, 300.0},
    {"RTX 4090", "NVIDIA GeForce RTX 4090", 165.2, 165.2, 82.6, 82.6, 1008.0},
    {"V100", "NVIDIA V100 SXM2", 0.0, 125.0, 0.0, 15.7, 900.0},
    {"MI300X", "AMD Instinct MI300X", 1307.4, 1307.4, 653.7, 163.4, 5300.0},
    {"MI250X", "AMD Instinct MI250X", 383.0, 383.0, 0.0, 95.7, 3276.8},
};

int zaya_gpu_datasheet_count(void) { return (int)(sizeof g_sheets / sizeof g_sheets[0]); }

const zaya_gpu_datasheet *zaya_gpu_datasheet_at(int i) {
    return (i >= 0 && i < zaya_gpu_datasheet_count()) ? &g_sheets[i] : NULL;
}

static int contains_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] && tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == n) return 1;
    }
    return 0;
}

const zaya_gpu_datasheet *zaya_gpu_datasheet_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < zaya_gpu_datasheet_count(); i++)
        if (contains_ci(name, g_sheets[i].match)) return &g_sheets[i];
    return NULL;
}

double zaya_gpu_datasheet_tflops(const zaya_gpu_datasheet *d, zaya_gpu_dtype t) {
    if (!d) return 0;
    switch (t) {
    case ZAYA_GPU_BF16: return d->bf16_tflops;
    case ZAYA_GPU_F16: return d->f16_tflops;
    case ZAYA_GPU_TF32: return d->tf32_tflops;
    default: return 0;
    }
}

static const char *g_kernel_names[ZAYA_GPU_KERNEL_COUNT] = {"copy", "mul", "add", "triad", "dot"};
static const int g_kernel_bytes[ZAYA_GPU_KERNEL_COUNT] = {16, 16, 24, 24, 16};

const char *zaya_gpu_stream_kernel_name(zaya_gpu_stream_kernel k) {
    return (k >= 0 && k < ZAYA_GPU_KERNEL_COUNT) ? g_kernel_names[k] : "?";
}
int zaya_gpu_stream_kernel_bytes(zaya_gpu_stream_kernel k) {
    return (k >= 0 && k < ZAYA_GPU_KERNEL_COUNT) ? g_kernel_bytes[k] : 0;
}

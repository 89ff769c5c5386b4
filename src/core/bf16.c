#include "zaya/bf16.h"

void zaya_f32_to_bf16_n(zaya_bf16 *dst, const float *src, size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) dst[i] = zaya_f32_to_bf16(src[i]);
}

void zaya_bf16_to_f32_n(float *dst, const zaya_bf16 *src, size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) dst[i] = zaya_bf16_to_f32(src[i]);
}

void zaya_round_bf16_n(float *x, size_t n) {
#pragma omp parallel for schedule(static) if (n > 65536)
    for (size_t i = 0; i < n; i++) x[i] = zaya_bf16_to_f32(zaya_f32_to_bf16(x[i]));
}

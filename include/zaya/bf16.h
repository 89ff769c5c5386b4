/* bfloat16 <-> float32. Rounding is to nearest, ties to even; NaN stays NaN (quiet bit forced so a
 * NaN payload that lives only in the low bits does not round to Inf). */
#ifndef ZAYA_BF16_H
#define ZAYA_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t zaya_bf16;

static inline zaya_bf16 zaya_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (zaya_bf16)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (zaya_bf16)(u >> 16);
}

static inline float zaya_bf16_to_f32(zaya_bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Bulk conversions, OpenMP-parallel. */
void zaya_f32_to_bf16_n(zaya_bf16 *dst, const float *src, size_t n);
void zaya_bf16_to_f32_n(float *dst, const zaya_bf16 *src, size_t n);
/* Rounds f32 values to the nearest bf16 value in place (what a bf16 cast does to the data). */
void zaya_round_bf16_n(float *x, size_t n);

#ifdef __cplusplus
}
#endif

#endif

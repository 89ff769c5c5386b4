/* The AMX-BF16 implementation of bf16 attention (attention_amx.c), called by attention.c when the
 * host has the tile unit. Same arguments and semantics as zaya_attention_forward_chunk /
 * _backward_chunk with dtype ZAYA_DTYPE_BF16 (see zaya/attention.h). */
#ifndef ZAYA_ATTENTION_AMX_H
#define ZAYA_ATTENTION_AMX_H

#include <stdint.h>

/* 1 when the file was compiled with the AMX instruction sets (the build decides; the host is probed
 * separately by attention.c). */
int zaya_attention_amx_built(void);

/* Each returns 1 when it computed the result, 0 when it did nothing (no workspace could be
 * allocated, or head_dim is not a multiple of 32): the caller then runs the portable kernel. */
int zaya_attention_amx_forward(float *out, float *lse, const float *q, const float *k, const float *v, int64_t B,
                               int64_t Tq, int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale);
int zaya_attention_amx_backward(float *dq, float *dk, float *dv, const float *dout, const float *q, const float *k,
                                const float *v, const float *out, const float *lse, int64_t B, int64_t Tq,
                                int64_t Tkv, int64_t q0, int64_t Hq, int64_t Hkv, int64_t D, float scale);

#endif

/* What the engine tests share (tests/test_engine.c on the CPU backend, tests/emu/test_cuda_emulated.c
 * on the emulated CUDA backend): the small ZAYA1 config both compare on, their error metric and their
 * batches. */
#ifndef ZAYA_TEST_ENGINE_CASES_H
#define ZAYA_TEST_ENGINE_CASES_H

#include <math.h>
#include <stdint.h>

#include "zaya/config.h"
#include "zaya/rng.h"

/* Every path of the block at a few hundred parameters: hidden 18 (not a multiple of the vector width),
 * 3 blocks (EDA from the second on), 4 q / 2 kv heads, 3 experts + skip, tall and wide Muon matrices. */
static inline void engine_small_config(zaya_config *c) {
    zaya_config_preset("zaya1-tiny", c);
    c->hidden_size = 18;
    c->num_hidden_layers = 3;
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->head_dim = 8;
    c->num_experts = 3;
    c->moe_intermediate_size = 10;
    c->router_hidden_size = 8;
    c->vocab_size = 29;
    c->max_position_embeddings = 32;
}

/* The study variants (zaya study) over the small config: each changes one part of the step. */
enum { V_ZAYA1, V_GQA, V_MHA, V_LINEAR_ROUTER, V_NO_EDA, V_DENSE, V_PLAIN_RESIDUAL, V_COUNT };
static inline const char *variant_name(int v) {
    static const char *const names[V_COUNT] = {"zaya1", "gqa", "mha", "linear-router", "no-eda", "dense-mlp",
                                               "plain-residual"};
    return v >= 0 && v < V_COUNT ? names[v] : "?";
}

static inline void variant_config(int v, zaya_config *c) {
    engine_small_config(c);
    if (v == V_GQA) c->attention = ZAYA_ATTENTION_GQA;
    if (v == V_MHA) c->attention = ZAYA_ATTENTION_MHA, c->num_key_value_heads = c->num_attention_heads;
    if (v == V_LINEAR_ROUTER) c->router = ZAYA_ROUTER_LINEAR;
    if (v == V_NO_EDA) c->router = ZAYA_ROUTER_NO_EDA;
    if (v == V_DENSE) c->mlp = ZAYA_MLP_DENSE;
    if (v == V_PLAIN_RESIDUAL) c->residual = ZAYA_RESIDUAL_PLAIN;
}

/* Largest |a - b| over a tensor divided by its largest |b| (the difference alone for an all-zero b);
 * a NaN anywhere is an infinite error. */
static inline double engine_tensor_err(const float *a, const float *b, int64_t n) {
    double d = 0, s = 0;
    for (int64_t i = 0; i < n; i++) {
        const double x = fabs((double)a[i] - (double)b[i]);
        if (x != x) d = INFINITY;
        else if (x > d) d = x;
        if (fabs((double)b[i]) > s) s = fabs((double)b[i]);
    }
    return s > 0 ? d / s : d;
}

/* Ids and targets from (seed); every 7th target (i % 7 == 3) ignored. */
static inline void engine_batch(int32_t *ids, int32_t *tg, int64_t N, int64_t V, uint64_t seed) {
    for (int64_t i = 0; i < N; i++) {
        ids[i] = (int32_t)(zaya_rng_u32_at(seed, 0, (uint64_t)i) % (uint32_t)V);
        tg[i] = i % 7 == 3 ? -1 : (int32_t)(zaya_rng_u32_at(seed, 1, (uint64_t)i) % (uint32_t)V);
    }
}

#endif

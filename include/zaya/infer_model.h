/* The model an inference run reads (`zaya generate`, `zaya eval`, `zaya bench infer`): weights from a
 * checkpoint, or a config with deterministic random weights (smoke tests, benchmarks). */
#ifndef ZAYA_INFER_MODEL_H
#define ZAYA_INFER_MODEL_H

#include <stdint.h>

#include "zaya/infer_weights.h"
#include "zaya/model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_infer_model_opts {
    const char *checkpoint; /* --checkpoint PATH */
    const char *config;     /* --config SPEC (with --random-init) */
    int64_t random_init;    /* --random-init SEED; < 0: not given */
    const char *dtype;      /* "f32" or "bf16" */
} zaya_infer_model_opts;

/* f32: a zaya_model (as training builds it) and a view of it; bf16: an inference weight store only
 * (bf16 matrices, mapped from bf16 shards where possible; no f32 copy, no gradients). */
typedef struct zaya_infer_model {
    zaya_model m;
    int has_model;
    zaya_infer_weights w; /* what the engine reads */
} zaya_infer_model;

/* Exactly one of checkpoint / (config + random_init) must be given; errors say which is missing. */
zaya_status zaya_infer_model_open(const zaya_infer_model_opts *o, zaya_infer_model *cm);
void zaya_infer_model_close(zaya_infer_model *cm);

#ifdef __cplusplus
}
#endif

#endif

/* Model setup shared by `zaya generate`, `zaya eval` and `zaya bench infer`: weights from a checkpoint,
 * or a config with deterministic random weights (smoke tests, benchmarks). */
#ifndef ZAYA_CLI_INFER_MODEL_H
#define ZAYA_CLI_INFER_MODEL_H

#include <stdint.h>

#include "zaya/infer_weights.h"
#include "zaya/model.h"

typedef struct zaya_cli_model_opts {
    const char *checkpoint; /* --checkpoint PATH */
    const char *config;     /* --config SPEC (with --random-init) */
    int64_t random_init;    /* --random-init SEED; < 0: not given */
    const char *dtype;      /* "f32" or "bf16" */
} zaya_cli_model_opts;

/* f32: a zaya_model (as training builds it) and a view of it; bf16: an inference weight store only
 * (bf16 matrices, mapped from bf16 shards where possible; no f32 copy, no gradients). */
typedef struct zaya_cli_model {
    zaya_model m;
    int has_model;
    zaya_infer_weights w; /* what the engine reads */
} zaya_cli_model;

/* Exactly one of checkpoint / (config + random_init) must be given; errors say which is missing. */
zaya_status zaya_cli_model_open(const zaya_cli_model_opts *o, zaya_cli_model *cm);
void zaya_cli_model_close(zaya_cli_model *cm);

#endif

/* `zaya bench model` and `zaya bench train`: forward and forward+backward (bench train: whole training
 * steps with the optimizer update) of the ZAYA1 model on deterministic weights and synthetic tokens,
 * tokens/s, GFLOP/s and MFU against the matmul peak measured in the same run, and the same for the
 * independent PyTorch reference (tests/ref/zaya_ref.py --bench) on the same thread count: eager f32, eager
 * under bf16 autocast and torch.compile of both, with PyTorch's own torch.mm rate printed beside them. */
#ifndef ZAYA_BENCH_MODEL_H
#define ZAYA_BENCH_MODEL_H

#include <stdint.h>
#include <stdio.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The interpreter of the PyTorch reference: --torch-python, else the source tree's build/hfvenv (PyTorch
 * >= 2.6 from PyPI, `scripts/setup.sh --hf`), else this fallback (Debian's PyTorch 1.13 on OpenBLAS,
 * labelled as such in the output). */
#define ZAYA_BENCH_MODEL_PYTHON "/usr/bin/python3"

typedef struct zaya_bench_model_opts {
    int train;                /* 1: `bench train` (steps include the optimizer), train.json / train.csv */
    const char *config;       /* preset or config.json */
    const char *out;          /* model.json, model.csv (train: train.json, train.csv) */
    const char *torch_script; /* NULL: the source tree's tests/ref/zaya_ref.py */
    int64_t batch, seq;       /* >= 1; seq at most the config's max_position_embeddings */
    int iters;                /* timed samples, best reported */
    int no_torch;             /* 1: skip the PyTorch reference */
    const char *torch_python; /* NULL: build/hfvenv/bin/python of the source tree when present, else ZAYA_BENCH_MODEL_PYTHON */
    int no_compile;           /* 1: skip the torch.compile variants */
    int torch_timeout_s;      /* per peer variant, compilation included (0: 600) */
    int threads;              /* 0: all cores */
    int f32, bf16;            /* which dtypes zaya runs (at least one) */
    int adamw_only;           /* train: AdamW for every tensor (as `zaya train --optimizer adamw`), 0: Muon + AdamW */
    const char *device;       /* NULL or "cpu": the CPU model; "cuda[:N]": the engine on that device (peer on it too) */
    int engine;               /* with device cpu: the engine over the CPU reference backend */
} zaya_bench_model_opts;

/* The table goes to out, progress to stderr. A missing PyTorch reference is a note, not an error. */
zaya_status zaya_bench_model_run(const zaya_bench_model_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

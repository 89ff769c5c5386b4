/* `zaya bench kernels`: every CPU kernel forward and backward at ZAYA1 shapes (zaya1-small and an
 * 8b-like block), compute-bound rows against the oneDNN matmul peak measured now, memory-bound rows
 * against a STREAM triad, each interleaved sample by sample with its peer; plus the matmul wrapper
 * against oneDNN called directly at the same shapes. */
#ifndef ZAYA_BENCH_KERNELS_H
#define ZAYA_BENCH_KERNELS_H

#include <stdio.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_bench_kernels_opts {
    int quick;        /* smaller shapes and fewer samples (seconds) */
    int threads;      /* 0: all cores */
    int reps;         /* timed samples per kernel, 0..1000 (0: 5, quick 2) */
    const char *only; /* run only kernels whose name contains this (NULL: all) */
    const char *out;  /* kernels.json, kernels.csv */
} zaya_bench_kernels_opts;

/* The table and the acceptance summary go to out, progress to stderr. */
zaya_status zaya_bench_kernels_run(const zaya_bench_kernels_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

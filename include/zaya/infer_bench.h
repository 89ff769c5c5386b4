/* `zaya bench infer`: llama-bench-style prefill (pp) and decode (tg) throughput of the inference engine
 * at several context depths and batch sizes, against the memory-bandwidth bound of decoding (bytes of
 * active weights + KV cache read per decode step over a STREAM triad bandwidth measured in the same
 * run, next to every repetition). Fixed token ids are fed: no tokenization, no sampling. */
#ifndef ZAYA_INFER_BENCH_H
#define ZAYA_INFER_BENCH_H

#include <stdint.h>
#include <stdio.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_INFER_BENCH_MAX_LIST 16 /* entries per list (prompt lengths, depths, batch sizes) */

typedef struct zaya_infer_bench_opts {
    const char *checkpoint;   /* weights from a checkpoint, or NULL: */
    const char *config;       /* a preset / config.json with deterministic random weights (seed 0) */
    int f32, bf16;            /* weight dtypes measured (at least one) */
    const int64_t *prompt;    /* prefill lengths (>= 1) */
    int nprompt;
    const int64_t *depth;     /* context cached before each test */
    int ndepth;
    const int64_t *batch;     /* sequences per step (>= 1) */
    int nbatch;
    int64_t gen;              /* decode steps per decode test */
    int reps;                 /* repetitions: mean +- stddev */
    int64_t triad_mib;        /* size of each STREAM triad array */
    int gemv_only;            /* decode with the own GEMV only (no oneDNN M=1 rows) */
    int threads;              /* 0: all cores */
    const char *out;          /* infer.json, infer.csv, decode.png */
} zaya_infer_bench_opts;

/* The table goes to out, progress to stderr. */
zaya_status zaya_infer_bench_run(const zaya_infer_bench_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

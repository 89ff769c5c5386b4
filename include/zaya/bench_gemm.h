/* `zaya bench gemm`: GEMM throughput over swept shapes and over every GEMM a ZAYA model performs.
 *
 * A shape list is either the built-in sweep (square sizes, alignment perturbations around multiples
 * of 64/128/256, model-like projections) or derived from a model config: for every linear layer the
 * forward GEMM y = x W^T, the input gradient dx = dy W and the weight gradient dW += dy^T x, with a
 * count of how often it runs per training step. Each shape is timed through zaya_matmul and through
 * oneDNN directly; rates are divided by the peak measured in the same run. */
#ifndef ZAYA_BENCH_GEMM_H
#define ZAYA_BENCH_GEMM_H

#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "zaya/bench.h"
#include "zaya/config.h"
#include "zaya/gpu.h"
#include "zaya/matmul.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_gemm_shape {
    char group[16]; /* "square", "align", "align_m", "model", or the model part ("attn", "router", "expert", "head") */
    char name[40];  /* e.g. "q_proj", "1024+1" */
    char pass[8];   /* "fwd", "dgrad", "wgrad" or "" */
    zaya_dtype dtype;
    int trans_a, trans_b;
    int64_t m, n, k;
    float beta;
    double count; /* executions per training step (model shapes), 1 otherwise */
} zaya_gemm_shape;

/* Fills up to cap shapes and returns how many there are in total (call with cap 0 to count). */
int zaya_gemm_sweep_shapes(int quick, zaya_dtype dtype, zaya_gemm_shape *out, int cap);
/* A model's GEMM list: the GEMMs of one training step of config `c` at `tokens` = batch * seq, each
 * linear layer's forward, input-gradient and weight-gradient GEMM with its count per step; fills up to
 * cap shapes and returns how many there are. The list has one source, the sizing layer's
 * (zaya_size_gemm_model_shapes in zaya/size.h), which sits above this layer: callers of
 * zaya_bench_gemm_run pass it in zaya_bench_gemm_opts.model_shapes. */
typedef int (*zaya_gemm_model_fn)(const zaya_config *c, int64_t tokens, zaya_dtype dtype, zaya_gemm_shape *out,
                                  int cap);
/* Keeps, in order, the shapes whose group is one of the comma-separated names in `groups` (--only);
 * returns how many are left at the front of shapes. */
int zaya_gemm_shapes_keep_groups(zaya_gemm_shape *shapes, int n, const char *groups);
/* A shape's fields in a gemm.json result row (group, name, pass, trans_a, trans_b, m, n, k, beta,
 * count), shared by the CPU and the device reports. */
void zaya_gemm_shape_add_json(cJSON *row, const zaya_gemm_shape *s);

typedef struct zaya_gemm_result {
    zaya_gemm_shape s;
    zaya_bench_stats wrap, direct;
    double gflop;         /* per call */
    double gflops;        /* wrapper, best sample */
    double direct_gflops; /* oneDNN directly, best sample */
    double ratio;         /* wrapper / direct (best samples) */
    double pct_peak;      /* 100 * gflops / peak of the dtype */
    char impl[48];
    char flags[48]; /* "slow", "dim%16", "dim%64", space separated */
} zaya_gemm_result;

zaya_matmul_desc zaya_gemm_shape_desc(const zaya_gemm_shape *s);
/* Times one shape (wrapper and direct, interleaved) and fills r; peak > 0 enables pct/flags and caps
 * shapes expected to take over 0.25 s per call at 3 samples after 1 warmup. */
zaya_status zaya_gemm_run_shape(const zaya_gemm_shape *s, const zaya_bench_opts *o, double peak, zaya_gemm_result *r);
/* Efficiency flags: below half the peak, or a dimension not a multiple of 16 / 64. */
void zaya_gemm_flags(const zaya_gemm_result *r, char *out, int cap);

/* ---- `zaya bench gemm`: the sweep (or every GEMM of a model config) through zaya_matmul and oneDNN
 * called directly, against the peak measured before and after; table and summary to out, gemm.json,
 * gemm.csv and PNG plots in o->out. */
typedef struct zaya_bench_gemm_opts {
    const char *dtype;  /* "f32", "bf16" or "all" */
    const char *out;
    const char *config; /* HF config.json or preset name: the model's GEMMs (NULL: the sweep) */
    zaya_gemm_model_fn model_shapes; /* the model's GEMM list, required with config (zaya_size_gemm_model_shapes) */
    const char *only;   /* comma-separated shape groups (NULL: all) */
    int iters, warmup, quick, threads;
    int thread_cpu;     /* time with the thread CPU clock (needs threads == 1) */
    int64_t batch, seq; /* tokens of a step with config */
    const char *device; /* "cpu" (NULL) or "cuda[:N]": zaya_bench_gemm_gpu_run */
} zaya_bench_gemm_opts;
zaya_status zaya_bench_gemm_run(const zaya_bench_gemm_opts *o, FILE *out);
/* The same shape lists on a CUDA device through cuBLASLt (src/bench/gemm_gpu.c): dtype "bf16", "f16",
 * "tf32" ("f32") or "all"; rates against the best of two large squares measured first and against
 * the datasheet (zaya_gpu_datasheet_find); every shape verified on 64 sampled entries (a wrong entry
 * fails the run with ZAYA_ENUMERIC). Writes gemm.json and gemm.csv to o->out. Device GEMMs run with
 * beta = 0 (the CPU path's wgrad accumulates with beta = 1). */
zaya_status zaya_bench_gemm_gpu_run(const zaya_bench_gemm_opts *o, zaya_device dev, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

/* Measurement helpers shared by the benchmarks.
 *
 * Timing: a callable runs `warmup` times untimed, then `reps` timed samples. A sample repeats the
 * call `inner` times when one call is shorter than min_sample_s, so clock resolution and loop
 * overhead stay negligible; reported times are per call. Two callables can be timed with their
 * samples interleaved, so that noise from other processes on a shared machine hits both alike.
 *
 * Matmul: the "machine peak" is the best oneDNN matmul rate at large square shapes, measured now;
 * other benchmarks divide by it. oneDNN can also be timed called directly (own engine, primitive
 * and memory objects created once, bare execute loop) to measure what zaya's wrapper costs. */
#ifndef ZAYA_BENCH_H
#define ZAYA_BENCH_H

#include <stdint.h>

#include "zaya/matmul.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_bench_opts {
    int warmup;          /* untimed calls first (default 2) */
    int reps;            /* timed samples (default 10) */
    double min_sample_s; /* a sample lasts at least this long (default 1e-3) */
    int thread_cpu;      /* 1: time with the calling thread's CPU clock instead of wall time. Only
                            meaningful when all work runs on that thread (1 thread): time spent
                            descheduled by other tenants of a shared machine is then not counted */
} zaya_bench_opts;

typedef struct zaya_bench_stats {
    double best_s, median_s, mean_s; /* per call */
    int reps;
    int64_t inner; /* calls per sample */
} zaya_bench_stats;

typedef zaya_status (*zaya_bench_fn)(void *ctx);

/* opts may be NULL (defaults). A failing call stops the measurement and returns its status. */
zaya_status zaya_bench_time(zaya_bench_fn fn, void *ctx, const zaya_bench_opts *opts, zaya_bench_stats *out);
/* Times two callables with alternating samples (a, b, a, b, ...); each gets its own inner count. */
zaya_status zaya_bench_time_pair(zaya_bench_fn fa, void *ca, zaya_bench_fn fb, void *cb, const zaya_bench_opts *opts,
                                 zaya_bench_stats *sa, zaya_bench_stats *sb);

/* 2*m*n*k*batch. */
double zaya_matmul_flops(const zaya_matmul_desc *d);

/* zaya_matmul(d) and oneDNN called directly with the same layout, on the same random buffers,
 * samples interleaved. Either output may be NULL to skip that side. */
zaya_status zaya_bench_matmul_compare(const zaya_matmul_desc *d, const zaya_bench_opts *opts, zaya_bench_stats *wrapper,
                                      zaya_bench_stats *direct);
/* oneDNN alone, called directly. */
zaya_status zaya_bench_matmul_direct(const zaya_matmul_desc *d, const zaya_bench_opts *opts, zaya_bench_stats *out);

/* oneDNN called directly on one shape, as a zaya_bench_fn: the peer that other measurements are
 * interleaved with (zaya_bench_time_pair) so that load from other processes hits both alike. */
typedef struct zaya_bench_matmul_peer zaya_bench_matmul_peer;
zaya_status zaya_bench_matmul_peer_init(const zaya_matmul_desc *d, zaya_bench_matmul_peer **out);
zaya_status zaya_bench_matmul_peer_call(void *peer);
double zaya_bench_matmul_peer_flops(const zaya_bench_matmul_peer *p);
void zaya_bench_matmul_peer_free(zaya_bench_matmul_peer *p);

/* Best oneDNN matmul rate (GFLOP/s, best sample) over square n in {1024, 1536, 2048}, measured now
 * on the current thread pool. Returns <= 0 on failure (message in zaya_error_message()). */
double zaya_bench_matmul_peak_gflops(zaya_dtype dtype);
/* Same with the shape that achieved it and a choice of sizes (NULL/0: the defaults above). */
zaya_status zaya_bench_matmul_peak(zaya_dtype dtype, const int64_t *sizes, int nsizes, const zaya_bench_opts *opts,
                                   double *gflops, int64_t *best_n);

#ifdef __cplusplus
}
#endif

#endif

/* Memory bandwidth (`zaya bench mem`), callable as a library: STREAM's four kernels by STREAM's
 * rules plus read-only and write-only kernels, a thread sweep, and a working-set sweep.
 *
 * STREAM rules followed (stream.c 5.10): double (8-byte) elements; each array >= 4x the last-level
 * cache; NTIMES repetitions, the first discarded, the best time reported; bytes counted without
 * write-allocate traffic (copy, scale: 2 words per element; add, triad: 3; read, write: 1); GB/s are
 * 1e9 bytes/s; results validated against the scalar recurrence STREAM's checkSTREAMresults uses. */
#ifndef ZAYA_BENCH_MEM_H
#define ZAYA_BENCH_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "zaya/gpu.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_mem_kernel {
    ZAYA_MEM_COPY = 0, /* c = a */
    ZAYA_MEM_SCALE,    /* b = s c */
    ZAYA_MEM_ADD,      /* c = a + b */
    ZAYA_MEM_TRIAD,    /* a = b + s c */
    ZAYA_MEM_READ,     /* sum += a (one word read per element) */
    ZAYA_MEM_WRITE,    /* c = s (one word written per element) */
    ZAYA_MEM_KERNELS
} zaya_mem_kernel;

const char *zaya_mem_kernel_name(zaya_mem_kernel k); /* "copy", ... */
int zaya_mem_kernel_words(zaya_mem_kernel k);        /* 8-byte words counted per element */

/* Last-level cache size from /sys/devices/system/cpu/cpu0/cache (largest level, sum over the
 * distinct caches of that level); 0 when unknown. */
int64_t zaya_mem_llc_bytes(void);
/* Elements per array: max(10M, 4 x LLC / 8) as STREAM requires. */
int64_t zaya_mem_stream_elems(void);

typedef struct zaya_stream_result {
    int threads;
    int64_t elems; /* per array */
    int ntimes;
    double best_GBps[ZAYA_MEM_KERNELS];
    double avg_s[ZAYA_MEM_KERNELS], min_s[ZAYA_MEM_KERNELS], max_s[ZAYA_MEM_KERNELS];
    int validated;       /* 1 when every array matched the expected values */
    double max_rel_err;  /* STREAM arrays a, b, c: average relative error (limit 1e-13) */
    double read_rel_err; /* read kernel's sum vs n * a[j] (limit 1e-9: a long sum rounds) */
} zaya_stream_result;

/* Runs the six kernels ntimes (>= 2) with `threads` OpenMP threads on arrays of elems doubles. A
 * validation failure is ZAYA_ENUMERIC naming the array and its error. */
zaya_status zaya_bench_stream(int threads, int64_t elems, int ntimes, zaya_stream_result *out);
/* Best triad GB/s by the STREAM rules (threads <= 0: all); the bandwidth peer of other benchmarks.
 * Returns a negative value on failure (message in zaya_error_message()). */
double zaya_bench_stream_triad_gbps(int threads);

/* A triad probe planned up front, for benchmarks that interleave bandwidth samples with their own
 * (bench kernels, bench infer): three arrays of n doubles allocated and first-touched in parallel by
 * init; one pass is a = b + 3c over all of them (STREAM's bytes: 24 per element). */
typedef struct zaya_mem_triad {
    double *a, *b, *c;
    int64_t n;
} zaya_mem_triad;
zaya_status zaya_mem_triad_init(zaya_mem_triad *t, int64_t n);
void zaya_mem_triad_free(zaya_mem_triad *t);
void zaya_mem_triad_pass(zaya_mem_triad *t);
/* Best GB/s of `reps` passes. */
double zaya_mem_triad_gbps(zaya_mem_triad *t, int reps);

/* Working-set sweep: best GB/s of `kernel` (triad or read) with total array bytes ws[i]. */
zaya_status zaya_bench_mem_ws(int threads, zaya_mem_kernel kernel, const int64_t *ws, int n, double *gbps);

/* The whole benchmark: STREAM at 1, 2, 4, ... max_threads, then the working-set sweep. */
typedef struct zaya_mem_plan {
    int max_threads;     /* <= 0: all cores */
    int ntimes;          /* 2..64 (STREAM default 10) */
    int64_t array_elems; /* per array; 0: zaya_mem_stream_elems() */
    int ws_sweep, ws_threads;
    int64_t ws_min, ws_max;
} zaya_mem_plan;
void zaya_mem_plan_default(zaya_mem_plan *p); /* all cores, 10 times, sweep 16K..1G on 1 thread */

typedef struct zaya_mem_run {
    zaya_stream_result stream[32];
    int nstream, best; /* best: index with the highest triad rate (the profile's figures) */
    int64_t llc_bytes;
    int ws_threads, nws;
    int64_t ws[64];
    double ws_triad[64], ws_read[64];
} zaya_mem_run;

/* `table` (may be NULL) receives the STREAM-style table as it runs. */
zaya_status zaya_bench_mem_run(const zaya_mem_plan *p, zaya_mem_run *out, FILE *table);
/* mem.json (including the profile's "memory" object), mem.csv, mem_ws.csv, mem_threads.png,
 * mem_ws.png in dir; a missing gnuplot only warns. */
zaya_status zaya_bench_mem_write(const zaya_mem_run *r, const char *dir);

/* The machine profile's "memory" object (docs/profile-format.md) from a STREAM result; the profile
 * module (zaya/profile.h) writes it into profile.json and reads it back. */
cJSON *zaya_bench_mem_profile_json(const zaya_stream_result *r);

/* `zaya bench mem --device cuda` (src/bench/mem_gpu.c): BabelStream copy / mul / add / triad / dot on
 * three device arrays (array_bytes each; 0: max(256 MiB, 4 x L2)), ntimes with the first excluded and
 * the best reported, validated; then host->device and device->host copies of copy_bytes (0: 256 MiB)
 * from pinned and pageable memory; % of the datasheet HBM bandwidth. Writes mem.json to outdir. */
typedef struct zaya_mem_gpu_plan {
    zaya_device device;
    int64_t array_bytes, copy_bytes;
    int ntimes;
} zaya_mem_gpu_plan;
zaya_status zaya_bench_mem_gpu_run(const zaya_mem_gpu_plan *plan, const char *outdir, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

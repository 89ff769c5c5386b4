/* Collective microbenchmark (`zaya bench coll`), callable as a library so `zaya bench all` and the
 * machine profile can run it.
 *
 * Conventions follow nccl-tests: a row's `bytes` is the whole buffer S (for reduce-scatter,
 * all-gather and all-to-all: per-rank block x ranks, the block rounded down to 16 bytes), count =
 * S / element size (for those three: the per-rank count, the block), algbw = S / t
 * (GB/s, 1e9 bytes), busbw = algbw x factor (see zaya_coll_busbw_factor). Timing is per operation:
 * each rank's mean over the timed samples (a sample is agg_iters operations back to back, divided by
 * agg_iters); time_us is what -a selects over ranks (rank 0's, the average, min or max: nccl-tests
 * -a 0..3, default the average); min/max/avg/rank0 are all kept; p50/p99 are over samples of the
 * slowest rank's time in that sample. */
#ifndef ZAYA_BENCH_COLL_H
#define ZAYA_BENCH_COLL_H

#include <stdint.h>
#include <stdio.h>
#include <cjson/cJSON.h>

#include "zaya/dist.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_coll {
    ZAYA_COLL_ALLREDUCE = 0,
    ZAYA_COLL_REDUCESCATTER,
    ZAYA_COLL_ALLGATHER,
    ZAYA_COLL_BROADCAST,
    ZAYA_COLL_REDUCE,
    ZAYA_COLL_ALLTOALL,
    ZAYA_COLL_SENDRECV,
    ZAYA_COLL_COUNT
} zaya_coll;

const char *zaya_coll_name(zaya_coll c);      /* "allreduce", ... (profile keys, --coll values) */
const char *zaya_coll_perf_name(zaya_coll c); /* "all_reduce_perf", ... (nccl-tests binary names) */
int zaya_coll_is_reduction(zaya_coll c);
int zaya_coll_is_rooted(zaya_coll c);
/* "allreduce,broadcast" or "all" -> bit mask (1 << zaya_coll); unknown names are an error. */
zaya_status zaya_coll_parse_list(const char *s, unsigned *mask);

/* nccl-tests doc/PERFORMANCE.md: allreduce 2(n-1)/n; reducescatter, allgather, alltoall (n-1)/n;
 * broadcast, reduce 1; sendrecv 1 (point-to-point: each rank's one link). */
double zaya_coll_busbw_factor(zaya_coll c, int nranks);
double zaya_coll_algbw_gbps(int64_t bytes, double time_us);

/* Buffer shape of one row: bytes is rounded down so blocks divide evenly (and, for the blocked
 * collectives, each block is a multiple of 16 bytes, as in nccl-tests). */
typedef struct zaya_coll_shape {
    int64_t bytes, count;            /* S, and the count nccl-tests prints (S / element size; per rank
                                        for reduce-scatter, all-gather and all-to-all) */
    int64_t send_count, recv_count;  /* elements of each rank's send and receive buffers */
    int64_t block;                   /* per-rank block (reduce-scatter, all-gather, all-to-all) */
} zaya_coll_shape;
zaya_coll_shape zaya_coll_shape_for(zaya_coll c, int64_t bytes, int nranks, zaya_dist_dtype t);

/* ---- exact correctness check ----
 * Input element i of rank r is v = m / 8 with m a small integer drawn from Philox(seed, r, i):
 * |m| <= min(128, 256 / nranks) for sum/avg (every partial sum, in any order, is an integer of
 * magnitude <= 256, exact in bf16 and f32), m in {+-4, +-8, +-16} for prod (v = +-1/2, +-1, +-2: every
 * product is a power of two), |m| <= 128 otherwise. The expected results are therefore exact, and
 * avg's expected value applies the documented rounding of dist.h. */
float zaya_coll_input_value(uint64_t seed, int rank, int64_t index, zaya_redop op, int nranks);
/* Writes rank's input. in_place selects the in-place layout (all-gather: own block at rank*block
 * inside a recv_count buffer; all others: the send layout). */
void zaya_coll_fill_input(zaya_coll c, const zaya_coll_shape *s, void *buf, int in_place, zaya_dist_dtype t,
                          zaya_redop op, int root, int rank, int nranks, uint64_t seed);
/* Fills n elements with NaN so outputs a collective failed to write are counted wrong. */
void zaya_coll_poison(void *buf, int64_t n, zaya_dist_dtype t);
/* Expected value of output element j of `rank`. */
float zaya_coll_expected(zaya_coll c, const zaya_coll_shape *s, int64_t j, zaya_dist_dtype t, zaya_redop op,
                         int root, int rank, int nranks, uint64_t seed);
/* Number of wrong output elements on this rank (0 for non-root ranks of reduce). */
int64_t zaya_coll_count_wrong(zaya_coll c, const zaya_coll_shape *s, const void *out, zaya_dist_dtype t,
                              zaya_redop op, int root, int rank, int nranks, uint64_t seed);

/* ---- running ---- */
typedef struct zaya_coll_timing {
    double time_us;                  /* the reported time: -a's choice of the four below */
    double min_us, max_us, avg_us, rank0_us; /* over ranks of each rank's mean */
    double p50_us, p99_us;
    double algbw, busbw;             /* from time_us */
    int64_t calls;                   /* operations this rank timed (samples x agg_iters) */
    int64_t wrong;                   /* -1: not checked */
} zaya_coll_timing;

/* Where a row's group of ranks sits (zaya_coll_result.spread): the first k ranks, k ranks world/k
 * apart, every rank of one host, or the first rank of each host (--placement hosts). */
enum {
    ZAYA_COLL_PLACE_PACKED = 0,
    ZAYA_COLL_PLACE_SPREAD = 1,
    ZAYA_COLL_PLACE_INTRA_HOST = 2,
    ZAYA_COLL_PLACE_INTER_HOST = 3,
    ZAYA_COLL_PLACE_COUNT = 4
};
const char *zaya_coll_placement_name(int placement); /* "packed", "spread", "intra-host", "inter-host" */
int zaya_coll_placement_parse(const char *name);     /* -1 when unknown */

typedef struct zaya_coll_result {
    zaya_coll coll;
    int nranks, spread; /* spread: the placement (ZAYA_COLL_PLACE_*; 0 packed, 1 spread) */
    zaya_dist_dtype dtype;
    zaya_redop op;
    int root;            /* -1 for collectives without a root */
    int64_t bytes, count;
    int blocking;        /* the -z mode the row was timed in */
    int cycle;           /* 1-based cycle of -N (run_cycles) */
    zaya_coll_timing oop, ip;
    double bare_us;      /* the same operation as a bare MPI loop (out-of-place); 0 when not run */
} zaya_coll_result;

/* One timed rank's device (the `# Using devices` lines and the -J report). */
typedef struct zaya_coll_device {
    int rank;       /* MPI rank (mpi) or NCCL rank (nccl) */
    int pid;
    char host[64];
    char kind[8];   /* "cpu" or "cuda" */
    int index;      /* the CPU the rank ran on at start, or the CUDA device */
    char name[96];  /* CPU model or GPU name */
} zaya_coll_device;

typedef struct zaya_coll_results {
    zaya_coll_result *rows;
    int n, cap;
    zaya_coll_device *devices; /* rank 0: every timed rank's device; NULL elsewhere */
    int ndevices;
    int cycles;                /* cycles run (-N; a stopped -N 0 run counts its completed cycles) */
    int stopped;               /* -N 0 ended by SIGINT / SIGTERM */
} zaya_coll_results;
void zaya_coll_results_free(zaya_coll_results *r);

typedef struct zaya_coll_opts {
    int64_t min_bytes, max_bytes;
    double step_factor;  /* > 1: multiply; otherwise step_bytes is added */
    int64_t step_bytes;
    int iters, warmup, check_iters;
    int blocking;        /* 0: non-blocking start + wait (MPI_I* + MPI_Wait, Open MPI's libnbc: not the path
                            OSU / IMB time), 1: blocking calls (what OSU / IMB time), 2: both, one
                            sweep each (zaya_bench_coll_run only) */
    int bare;            /* run the bare MPI overhead check */
    int average;         /* reported time over ranks (nccl-tests -a): 0 rank 0, 1 average (default), 2 min,
                            3 max */
    int agg_iters;       /* operations per timed sample (nccl-tests -m; default 1); MPI back to back, NCCL
                            in one group */
    int report_cputime;  /* nccl-tests -C: MPI: the process's CPU time (every thread) during the calls
                            instead of wall time; NCCL: host time to enqueue the operations */
    int inject_wrong;    /* self-test: the last rank corrupts one output element before each check */
    uint64_t seed;
} zaya_coll_opts;
void zaya_coll_opts_default(zaya_coll_opts *o); /* 8 B .. 1 MiB, x2, 20 iters, 5 warmup, 1 check, -a 1 -m 1 */
const char *zaya_coll_average_name(int average); /* "rank0", "avg", "min", "max" */

enum { ZAYA_COLL_BACKEND_MPI = 0, ZAYA_COLL_BACKEND_NCCL = 1 };
enum { ZAYA_COLL_CYCLES_UNTIL_STOPPED = -1 };

typedef struct zaya_coll_plan {
    unsigned colls;           /* mask of zaya_coll */
    unsigned dtypes;          /* mask of 1 << zaya_dist_dtype */
    unsigned ops;             /* mask of 1 << zaya_redop (reductions only) */
    int root;
    int sweep;                /* rank counts 2, 4, ..., world (else world only) */
    unsigned placements;      /* bit 0 packed, bit 1 spread (used for sub-groups), bit 2 hosts: also the
                                 intra-host and inter-host groups (ZAYA_COLL_PLACE_INTRA/INTER_HOST) */
    int backend;              /* ZAYA_COLL_BACKEND_MPI (host buffers) or _NCCL (device buffers) */
    int ngpus;                /* NCCL: GPUs driven by each process (nccl-tests -g; 0 = 1) */
    int nthreads;             /* nccl-tests -t: threads per process; only 1 (0 = 1: one thread drives every GPU) */
    int cudagraph;            /* nccl-tests -G: CUDA graph launches; only 0 (event timing, no graphs) */
    int cycles;               /* nccl-tests -N: times the whole plan runs, each printed (0 or 1: once);
                                 ZAYA_COLL_CYCLES_UNTIL_STOPPED (-N 0): until SIGINT / SIGTERM, then a
                                 clean end after the cycle in progress */
    const char *report_path;  /* nccl-tests -J: the JSON report (NULL: none) */
    int argc;                 /* the command line recorded in the report */
    char **argv;
    zaya_coll_opts opts;
} zaya_coll_plan;

/* Checks the plan's options against each other and the backend; a bad one is ZAYA_EINVAL with a
 * message naming the flag (short/long nccl-tests spelling) and its value. */
zaya_status zaya_coll_plan_check(const zaya_coll_plan *plan);

/* Runs the whole plan; collective over `world`. On rank 0, `table` (may be NULL) receives the
 * nccl-tests style output and `out` every row (other ranks get the rows of groups they joined). */
zaya_status zaya_bench_coll_run(const zaya_comm *world, const zaya_coll_plan *plan, zaya_coll_results *out,
                                FILE *table);
/* One size sweep of one collective on communicator c (every rank of c calls). */
zaya_status zaya_bench_coll_sweep(const zaya_comm *c, zaya_coll coll, zaya_dist_dtype t, zaya_redop op, int root,
                                  int spread, const zaya_coll_opts *o, zaya_coll_results *out, FILE *table);

/* Summary over the rows of one (coll, ranks, placement, dtype, op) group. */
typedef struct zaya_coll_summary {
    zaya_coll coll;
    int nranks, spread;
    zaya_dist_dtype dtype;
    zaya_redop op;
    int blocking;
    int cycle;                   /* -N cycle (groups of different cycles are summarised apart) */
    int64_t latency_bytes;       /* smallest size */
    double latency_us;           /* mean time at the smallest size */
    double latency_p50_us;       /* its median over iterations (robust to preemption) */
    double peak_busbw;
    int64_t peak_bytes;
    int64_t saturation_bytes;    /* smallest size reaching 90% of peak busbw */
    double overhead_ratio;       /* median over sizes of zaya / bare time; 0 when not measured */
    double overhead_ratio_large; /* the same over sizes >= 64 KiB (0 if none) */
    int64_t wrong;
} zaya_coll_summary;
/* Fills up to cap summaries (one per group, in row order); returns how many. */
int zaya_coll_summarize(const zaya_coll_results *r, zaya_coll_summary *s, int cap);
void zaya_coll_print_summary(FILE *f, const zaya_coll_summary *s, int n);

/* coll.json, coll.csv and PNG plots in dir (rank 0 only). Plot failures only warn. */
zaya_status zaya_bench_coll_write(const zaya_coll_results *r, const zaya_coll_plan *plan, int world_size,
                                  const char *dir);
/* The -J report (rank 0): coll.json's fields plus the run's context: hostname(s), MPI and NCCL
 * library versions, every timed rank's device, the relevant environment variables (NCCL_*,
 * OMPI_MCA_*, UCX_*, CUDA_* ...), start and end time (UTC, ISO 8601) and the command line
 * (plan->argv). Fields: docs/bench.md. */
zaya_status zaya_bench_coll_write_report(const zaya_coll_results *r, const zaya_coll_plan *plan, int world_size,
                                         double start_unix_s, double end_unix_s, const char *path);

/* The machine profile's "collectives" object (docs/profile-format.md): one array per collective
 * of {ranks, bytes, time_us, algbw_GBps, busbw_GBps, dtype, op, placement} (out-of-place); the
 * profile module (zaya/profile.h) writes it into profile.json and reads it back. */
cJSON *zaya_bench_coll_profile_json(const zaya_coll_results *r);

/* `zaya bench coll`: joins the MPI world, runs the plan (rank 0 prints the nccl-tests table, the
 * summary, with `stats` the per-iteration table, and the count of wrong values to out, and writes
 * coll.json, coll.csv and plots to outdir, and the -J report when plan->report_path is set), leaves
 * MPI. *wrong counts the wrong output values seen by the exact checks (on rank 0; the command fails
 * when it is not 0). A root outside the world is ZAYA_EINVAL; an unwritable -J directory is ZAYA_EIO
 * before anything runs. */
zaya_status zaya_bench_coll_main(const zaya_coll_plan *plan, int stats, const char *outdir, FILE *out, int64_t *wrong);

#ifdef __cplusplus
}
#endif

#endif

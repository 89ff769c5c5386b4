/* `zaya bench all`: a short run of the machine benchmarks (collectives, memory, GEMM) that writes the
 * machine profile (zaya/profile.h, docs/profile-format.md) the sizing tool reads. */
#ifndef ZAYA_BENCH_ALL_H
#define ZAYA_BENCH_ALL_H

#include <stdio.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_bench_all_opts {
    const char *outdir; /* profile.json, gemm.csv, mem/, coll/, coll-npN/ and their logs */
    const char *mpirun; /* mpirun to use; NULL: the one on PATH */
    int mpi;            /* 1: launch the 2- and 4-rank collective runs under mpirun (outside mpirun) */
    int quick;          /* shorter sweeps and fewer samples (about a minute) */
    int threads;        /* 0: all cores */
} zaya_bench_all_opts;

/* Runs the whole sequence, printing progress and tables to out. Outside mpirun, the collectives
 * first run as `zaya bench coll` children under `mpirun -np 2` and `-np 4 --oversubscribe` (a failing
 * child only warns), then world 1 in-process; under mpirun every rank joins the collective part and
 * rank 0 alone goes on. An explicit mpirun that is not an executable is ZAYA_EINVAL. */
zaya_status zaya_bench_all_run(const zaya_bench_all_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

/* Pieces of `zaya bench coll` shared by the MPI loop (coll_run.c) and the NCCL loop (coll_nccl.c). */
#ifndef ZAYA_BENCH_COLL_INTERNAL_H
#define ZAYA_BENCH_COLL_INTERNAL_H

#include <stdio.h>

#include "zaya/bench_coll.h"

zaya_status zaya_coll_results_push(zaya_coll_results *r, const zaya_coll_result *row);
/* Per-iteration times (seconds) of this rank -> the row's timing over the ranks of c (microseconds);
 * times is overwritten (max over ranks, sorted). */
void zaya_coll_time_stats(const zaya_comm *c, double *times, int iters, zaya_coll_timing *tm);
/* nccl-tests' block header; `timed` says what the columns time. */
void zaya_coll_print_header(FILE *f, int nranks, const char *backend, const char *timed, zaya_coll coll,
                            zaya_dist_dtype t, zaya_redop op, int spread, const zaya_coll_opts *o);
void zaya_coll_print_variant(FILE *f, const zaya_coll_timing *tm);
/* The size after b in a sweep (-f factor or -i step). */
int64_t zaya_coll_next_size(int64_t b, const zaya_coll_opts *o);
/* A barrier that sleeps instead of spinning. */
zaya_status zaya_coll_idle_barrier(const zaya_comm *world);
/* The NCCL backend of zaya_bench_coll_run (coll_nccl.c). */
zaya_status zaya_bench_coll_nccl_run(const zaya_comm *world, const zaya_coll_plan *p, zaya_coll_results *out,
                                     FILE *table);

#endif

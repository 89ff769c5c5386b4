/* Pieces of `zaya bench coll` shared by the MPI loop (coll_run.c) and the NCCL loop (coll_nccl.c). */
#ifndef ZAYA_BENCH_COLL_INTERNAL_H
#define ZAYA_BENCH_COLL_INTERNAL_H

#include <signal.h>
#include <stdio.h>

#include "zaya/bench_coll.h"

zaya_status zaya_coll_results_push(zaya_coll_results *r, const zaya_coll_result *row);
/* Per-sample times (seconds per operation) of this rank -> the row's timing over the ranks of c
 * (microseconds; time_us chosen by `average`, -a); times is overwritten (max over ranks, sorted). */
void zaya_coll_time_stats(const zaya_comm *c, double *times, int iters, int average, zaya_coll_timing *tm);
/* nccl-tests' block header; `timed` says what the columns time. */
void zaya_coll_print_header(FILE *f, int nranks, int ngpus, const char *backend, const char *timed, zaya_coll coll,
                            zaya_dist_dtype t, zaya_redop op, int spread, const zaya_coll_opts *o);
void zaya_coll_print_variant(FILE *f, const zaya_coll_timing *tm);
/* One block of the table (one sweep): its rows, then the nccl-tests footer (wrong values, average
 * busbw over the timed variants). has_ip = 0: the in-place variant was not run (counted in neither). */
typedef struct zaya_coll_block {
    int64_t wrong;
    double busbw_sum;
    int nvariants;
} zaya_coll_block;
void zaya_coll_block_row(FILE *f, zaya_coll_block *b, const zaya_coll_result *row, int has_ip);
void zaya_coll_block_end(FILE *f, const zaya_coll_block *b);
/* The size after b in a sweep (-f factor or -i step). */
int64_t zaya_coll_next_size(int64_t b, const zaya_coll_opts *o);
/* A barrier that sleeps instead of spinning. */
zaya_status zaya_coll_idle_barrier(const zaya_comm *world);
/* This process's device entry; the entries of every process gathered into out->devices on world rank 0
 * (n per process, the same n everywhere); the `# Using devices` lines. */
void zaya_coll_device_self(zaya_coll_device *d, int rank, const char *kind, int index, const char *name);
zaya_status zaya_coll_devices_gather(const zaya_comm *world, const zaya_coll_device *mine, int n,
                                     zaya_coll_results *out);
void zaya_coll_devices_print(FILE *f, const zaya_coll_results *r);
/* -N: with cycles 0, SIGINT / SIGTERM set a stop request between begin and end (a second one
 * terminates); zaya_coll_cycle_next (collective over world) says whether another cycle runs after
 * `done` of them, recording cycles / stopped in out; cycle_print is the table's cycle line. */
typedef struct zaya_coll_stop {
    int on;
    struct sigaction old_int, old_term;
} zaya_coll_stop;
void zaya_coll_stop_begin(zaya_coll_stop *s, int cycles);
void zaya_coll_stop_end(zaya_coll_stop *s);
int zaya_coll_cycle_next(const zaya_comm *world, int cycles, int done, zaya_coll_results *out);
void zaya_coll_cycle_print(FILE *f, int cycle, int cycles);
/* --placement hosts: this rank's intra-host group (every rank with its hostname) and, on the first
 * rank of each host, the inter-host group (NULL elsewhere); collective over world. */
typedef struct zaya_coll_hosts {
    zaya_comm *intra, *inter;
    int nhosts;
} zaya_coll_hosts;
zaya_status zaya_coll_host_groups(const zaya_comm *world, zaya_coll_hosts *h);
void zaya_coll_hosts_free(zaya_coll_hosts *h);
/* The NCCL backend of zaya_bench_coll_run (coll_nccl.c). */
zaya_status zaya_bench_coll_nccl_run(const zaya_comm *world, const zaya_coll_plan *p, zaya_coll_results *out,
                                     FILE *table);

#endif

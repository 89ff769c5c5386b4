/* Timing loop of `zaya bench coll`: per-iteration times of the zaya call (and, interleaved
 * iteration by iteration, the same operation as a bare MPI call), then the exact check. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>

#include "dist/dist_mpi.h"
#include "zaya/sysinfo.h"
#include "zaya/alloc.h"
#include "zaya/bench_coll.h"
#include "zaya/timer.h"
#include "zaya/progress.h"
#include "bench/coll_internal.h"

void zaya_coll_opts_default(zaya_coll_opts *o) {
    memset(o, 0, sizeof *o);
    o->min_bytes = 8;
    o->max_bytes = 1 << 20;
    o->step_factor = 2.0;
    o->step_bytes = 1 << 20;
    o->iters = 20;
    o->warmup = 5;
    o->check_iters = 1;
    o->blocking = 0;
    o->bare = 1;
    o->average = 1;
    o->agg_iters = 1;
    o->seed = 1234;
}

const char *zaya_coll_average_name(int average) {
    static const char *names[4] = {"rank0", "avg", "min", "max"};
    return average >= 0 && average < 4 ? names[average] : "?";
}

zaya_status zaya_coll_plan_check(const zaya_coll_plan *p) {
    const zaya_coll_opts *o = &p->opts;
    int nccl = p->backend == ZAYA_COLL_BACKEND_NCCL;
    if (o->average < 0 || o->average > 3)
        return zaya_error_set(ZAYA_EINVAL, "-a/--average takes 0 (rank 0), 1 (average), 2 (min) or 3 (max); got %d",
                              o->average);
    if (o->agg_iters < 1 || o->agg_iters > 1000000)
        return zaya_error_set(ZAYA_EINVAL, "-m/--agg_iters must be in 1..1000000 (got %d)", o->agg_iters);
    if (o->report_cputime != 0 && o->report_cputime != 1)
        return zaya_error_set(ZAYA_EINVAL, "-C/--report_cputime takes 0 or 1 (got %d)", o->report_cputime);
    if (p->cycles < ZAYA_COLL_CYCLES_UNTIL_STOPPED)
        return zaya_error_set(ZAYA_EINVAL, "-N/--run_cycles must be >= 0 (got %d; 0 runs until SIGINT/SIGTERM)",
                              p->cycles);
    int ngpus = p->ngpus ? p->ngpus : 1, nthreads = p->nthreads ? p->nthreads : 1;
    if (ngpus < 1 || ngpus > 64) return zaya_error_set(ZAYA_EINVAL, "-g/--ngpus must be in 1..64 (got %d)", ngpus);
    if (ngpus > 1 && !nccl)
        return zaya_error_set(ZAYA_EINVAL, "-g/--ngpus %d needs --backend nccl (the MPI backend times host buffers)",
                              ngpus);
    if (nthreads != 1)
        return zaya_error_set(ZAYA_EINVAL,
                              "-t/--nthreads %d: only 1 (one thread drives every local GPU of a process; for more "
                              "NCCL ranks per process use -g N)",
                              nthreads);
    if (p->cudagraph < 0) return zaya_error_set(ZAYA_EINVAL, "-G/--cudagraph must be >= 0 (got %d)", p->cudagraph);
    if (p->cudagraph > 0)
        return zaya_error_set(ZAYA_EINVAL,
                              nccl ? "-G/--cudagraph %d: CUDA graphs are not supported (the NCCL backend times every "
                                     "iteration with a device event pair, no graphs); use -G 0"
                                   : "-G/--cudagraph %d: CUDA graphs are a GPU option (--backend nccl, where only 0 is "
                                     "supported); use -G 0",
                              p->cudagraph);
    if (p->report_path && !*p->report_path) return zaya_error_set(ZAYA_EINVAL, "-J/--output_file: empty file name");
    if (nccl && (p->sweep || o->blocking == 2))
        return zaya_error_set(ZAYA_EINVAL, "--sweep and -z 2 are MPI-only (--backend mpi)");
    return ZAYA_OK;
}

void zaya_coll_results_free(zaya_coll_results *r) {
    free(r->rows);
    free(r->devices);
    memset(r, 0, sizeof *r);
}

zaya_status zaya_coll_results_push(zaya_coll_results *r, const zaya_coll_result *row) {
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        zaya_coll_result *rows = realloc(r->rows, (size_t)cap * sizeof *rows);
        if (!rows) return zaya_error_set(ZAYA_ENOMEM, "bench coll: out of memory for results");
        r->rows = rows;
        r->cap = cap;
    }
    r->rows[r->n++] = *row;
    return ZAYA_OK;
}

/* One call of the collective through the zaya layer. */
static zaya_status run_zaya(const zaya_comm *c, zaya_coll coll, const zaya_coll_shape *s, const void *sb, void *rb,
                            zaya_dist_dtype t, zaya_redop op, int root, int blocking) {
    zaya_dist_request req;
    int n = c->size, r = c->rank;
    switch (coll) {
    case ZAYA_COLL_ALLREDUCE:
        if (blocking) return zaya_allreduce(c, sb, rb, s->count, t, op);
        ZAYA_TRY(zaya_iallreduce(c, sb, rb, s->count, t, op, &req));
        return zaya_dist_wait(&req);
    case ZAYA_COLL_REDUCESCATTER:
        if (blocking) return zaya_reduce_scatter(c, sb, rb, s->block, t, op);
        ZAYA_TRY(zaya_ireduce_scatter(c, sb, rb, s->block, t, op, &req));
        return zaya_dist_wait(&req);
    case ZAYA_COLL_ALLGATHER:
        if (blocking) return zaya_allgather(c, sb, rb, s->block, t);
        ZAYA_TRY(zaya_iallgather(c, sb, rb, s->block, t, &req));
        return zaya_dist_wait(&req);
    case ZAYA_COLL_BROADCAST:
        if (blocking) return zaya_broadcast(c, rb, s->count, t, root);
        ZAYA_TRY(zaya_ibroadcast(c, rb, s->count, t, root, &req));
        return zaya_dist_wait(&req);
    case ZAYA_COLL_REDUCE: return zaya_reduce(c, sb, rb, s->count, t, op, root);
    case ZAYA_COLL_ALLTOALL: return zaya_alltoall(c, sb, rb, s->block, t);
    case ZAYA_COLL_SENDRECV: return zaya_sendrecv(c, sb, (r + 1) % n, rb, (r - 1 + n) % n, s->count, t, 7);
    default: return zaya_error_set(ZAYA_EINVAL, "bad collective %d", (int)coll);
    }
}

/* The same operation written directly against MPI: the reference for the overhead check. */
static int run_bare(const zaya_comm *c, zaya_coll coll, const zaya_coll_shape *s, const void *sb, void *rb,
                    zaya_dist_dtype t, zaya_redop op, int root, int blocking) {
    MPI_Datatype dt = zaya_dist_mpi_dtype(t);
    MPI_Op mop = zaya_dist_mpi_op(t, op);
    MPI_Request req;
    int n = c->size, r = c->rank, rc;
    switch (coll) {
    case ZAYA_COLL_ALLREDUCE:
        if (blocking) return MPI_Allreduce(sb, rb, (int)s->count, dt, mop, c->comm);
        rc = MPI_Iallreduce(sb, rb, (int)s->count, dt, mop, c->comm, &req);
        return rc ? rc : MPI_Wait(&req, MPI_STATUS_IGNORE);
    case ZAYA_COLL_REDUCESCATTER:
        if (blocking) return MPI_Reduce_scatter_block(sb, rb, (int)s->block, dt, mop, c->comm);
        rc = MPI_Ireduce_scatter_block(sb, rb, (int)s->block, dt, mop, c->comm, &req);
        return rc ? rc : MPI_Wait(&req, MPI_STATUS_IGNORE);
    case ZAYA_COLL_ALLGATHER:
        if (blocking) return MPI_Allgather(sb, (int)s->block, dt, rb, (int)s->block, dt, c->comm);
        rc = MPI_Iallgather(sb, (int)s->block, dt, rb, (int)s->block, dt, c->comm, &req);
        return rc ? rc : MPI_Wait(&req, MPI_STATUS_IGNORE);
    case ZAYA_COLL_BROADCAST:
        if (blocking) return MPI_Bcast(rb, (int)s->count, dt, root, c->comm);
        rc = MPI_Ibcast(rb, (int)s->count, dt, root, c->comm, &req);
        return rc ? rc : MPI_Wait(&req, MPI_STATUS_IGNORE);
    case ZAYA_COLL_REDUCE: return MPI_Reduce(sb, rb, (int)s->count, dt, mop, root, c->comm);
    case ZAYA_COLL_ALLTOALL: return MPI_Alltoall(sb, (int)s->block, dt, rb, (int)s->block, dt, c->comm);
    case ZAYA_COLL_SENDRECV:
        return MPI_Sendrecv(sb, (int)s->count, dt, (r + 1) % n, 7, rb, (int)s->count, dt, (r - 1 + n) % n, 7, c->comm,
                            MPI_STATUS_IGNORE);
    default: return MPI_ERR_OTHER;
    }
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Reduces per-sample times (seconds per operation) over ranks into the timing fields (microseconds);
 * time_us is the average mode's choice (nccl-tests -a). */
void zaya_coll_time_stats(const zaya_comm *c, double *times, int iters, int average, zaya_coll_timing *tm) {
    double mean = 0;
    for (int i = 0; i < iters; i++) mean += times[i];
    mean /= iters;
    double mn, mx, sum, r0 = mean;
    MPI_Allreduce(&mean, &mn, 1, MPI_DOUBLE, MPI_MIN, c->comm);
    MPI_Allreduce(&mean, &mx, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    MPI_Allreduce(&mean, &sum, 1, MPI_DOUBLE, MPI_SUM, c->comm);
    MPI_Bcast(&r0, 1, MPI_DOUBLE, 0, c->comm);
    /* An iteration is as slow as its slowest rank. */
    MPI_Allreduce(MPI_IN_PLACE, times, iters, MPI_DOUBLE, MPI_MAX, c->comm);
    qsort(times, (size_t)iters, sizeof *times, cmp_double);
    int i50 = (iters * 50 + 99) / 100 - 1, i99 = (iters * 99 + 99) / 100 - 1;
    tm->avg_us = sum / c->size * 1e6;
    tm->min_us = mn * 1e6;
    tm->max_us = mx * 1e6;
    tm->rank0_us = r0 * 1e6;
    const double pick[4] = {tm->rank0_us, tm->avg_us, tm->min_us, tm->max_us};
    tm->time_us = pick[average >= 0 && average < 4 ? average : 1];
    tm->p50_us = times[i50 < 0 ? 0 : i50] * 1e6;
    tm->p99_us = times[i99 < 0 ? 0 : i99] * 1e6;
}

/* The clock of the timed loop: wall time, or (-C 1) the CPU time of the whole process (every thread,
 * MPI's progress threads included). */
static uint64_t clock_ns(int cputime) {
    if (!cputime) return zaya_now_ns();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

typedef struct variant_ctx {
    const zaya_comm *c;
    zaya_coll coll;
    zaya_dist_dtype t;
    zaya_redop op;
    int root;
    const zaya_coll_opts *o;
    void *sendbuf, *recvbuf;
    double *times, *bare_times;
} variant_ctx;

static zaya_status run_variant(variant_ctx *v, const zaya_coll_shape *s, int in_place, zaya_coll_timing *tm,
                               double *bare_us) {
    const zaya_comm *c = v->c;
    const zaya_coll_opts *o = v->o;
    /* Broadcast has one buffer in MPI: both variants broadcast in place. */
    int ip_layout = in_place || v->coll == ZAYA_COLL_BROADCAST;
    void *in = ip_layout ? v->recvbuf : v->sendbuf;
    const void *sb = in_place ? v->recvbuf : v->sendbuf;
    if (v->coll == ZAYA_COLL_ALLGATHER && in_place)
        sb = (char *)v->recvbuf + (size_t)c->rank * (size_t)s->block * zaya_dist_dtype_size(v->t);
    zaya_coll_fill_input(v->coll, s, in, ip_layout, v->t, v->op, v->root, c->rank, c->size, o->seed);

    int bare = o->bare && !in_place;
    /* Warm every path that is timed below (the zaya call, the bare MPI call, the clock) at this size,
     * so no timed iteration pays a first call's one-off cost. */
    for (int i = 0; i < o->warmup; i++) {
        (void)clock_ns(o->report_cputime);
        ZAYA_TRY(run_zaya(c, v->coll, s, sb, v->recvbuf, v->t, v->op, v->root, o->blocking));
        if (bare) {
            int rc = run_bare(c, v->coll, s, sb, v->recvbuf, v->t, v->op, v->root, o->blocking);
            if (rc != MPI_SUCCESS)
                return zaya_error_set(ZAYA_EMPI, "bare MPI %s of %lld bytes failed (code %d)", zaya_coll_name(v->coll),
                                      (long long)s->bytes, rc);
        }
    }
    ZAYA_TRY(zaya_comm_barrier(c));
    int agg = o->agg_iters > 0 ? o->agg_iters : 1;
    int64_t calls = 0;
    for (int i = 0; i < o->iters; i++) {
        /* The first call of a pair also absorbs the ranks' arrival skew: alternate which goes first
         * so neither side of the overhead ratio carries that bias. A sample is agg operations back
         * to back (-m), reported per operation. */
        for (int k = 0; k < 1 + bare; k++) {
            int is_bare = bare && ((i + k) % 2 == 1);
            uint64_t t0 = clock_ns(o->report_cputime);
            for (int a = 0; a < agg; a++) {
                if (is_bare) {
                    int rc = run_bare(c, v->coll, s, sb, v->recvbuf, v->t, v->op, v->root, o->blocking);
                    if (rc != MPI_SUCCESS)
                        return zaya_error_set(ZAYA_EMPI, "bare MPI %s of %lld bytes failed (code %d)",
                                              zaya_coll_name(v->coll), (long long)s->bytes, rc);
                } else {
                    ZAYA_TRY(run_zaya(c, v->coll, s, sb, v->recvbuf, v->t, v->op, v->root, o->blocking));
                    calls++;
                }
            }
            uint64_t t1 = clock_ns(o->report_cputime);
            (is_bare ? v->bare_times : v->times)[i] = (double)(t1 - t0) * 1e-9 / agg;
        }
    }
    zaya_coll_time_stats(c, v->times, o->iters, o->average, tm);
    tm->calls = calls;
    if (bare) {
        zaya_coll_timing bt;
        zaya_coll_time_stats(c, v->bare_times, o->iters, o->average, &bt);
        *bare_us = bt.time_us;
    }
    tm->algbw = zaya_coll_algbw_gbps(s->bytes, tm->time_us);
    tm->busbw = tm->algbw * zaya_coll_busbw_factor(v->coll, c->size);

    tm->wrong = -1;
    if (o->check_iters > 0) {
        int64_t wrong = 0;
        for (int k = 0; k < o->check_iters; k++) {
            zaya_coll_fill_input(v->coll, s, in, ip_layout, v->t, v->op, v->root, c->rank, c->size, o->seed + (uint64_t)k);
            if (!ip_layout) zaya_coll_poison(v->recvbuf, s->recv_count, v->t);
            ZAYA_TRY(run_zaya(c, v->coll, s, sb, v->recvbuf, v->t, v->op, v->root, o->blocking));
            /* The self-test corrupts one element on a rank whose output is checked: the root of reduce
             * (the only rank with a result), the last rank otherwise. */
            int corrupt_rank = v->coll == ZAYA_COLL_REDUCE ? v->root : c->size - 1;
            if (o->inject_wrong && c->rank == corrupt_rank) {
                if (v->t == ZAYA_DIST_BF16) ((uint16_t *)v->recvbuf)[0] ^= 0x0100; /* flips one exponent bit */
                else ((float *)v->recvbuf)[0] += 1.0f;
            }
            wrong += zaya_coll_count_wrong(v->coll, s, v->recvbuf, v->t, v->op, v->root, c->rank, c->size,
                                           o->seed + (uint64_t)k);
        }
        long long w = wrong, total = 0;
        MPI_Allreduce(&w, &total, 1, MPI_LONG_LONG, MPI_SUM, c->comm);
        tm->wrong = total;
    }
    return ZAYA_OK;
}

static void fmt_time(char *buf, size_t cap, double us) {
    if (us < 1e4) snprintf(buf, cap, "%7.2f", us);
    else if (us < 1e5) snprintf(buf, cap, "%7.1f", us);
    else snprintf(buf, cap, "%7.0f", us);
}

void zaya_coll_print_variant(FILE *f, const zaya_coll_timing *tm) {
    char t[32], w[32];
    fmt_time(t, sizeof t, tm->time_us);
    if (tm->wrong < 0) snprintf(w, sizeof w, "N/A");
    else snprintf(w, sizeof w, "%lld", (long long)tm->wrong);
    fprintf(f, "  %7s  %6.2f  %6.2f  %6s", t, tm->algbw, tm->busbw, w);
}

void zaya_coll_block_row(FILE *f, zaya_coll_block *b, const zaya_coll_result *row, int has_ip) {
    b->wrong += (row->oop.wrong > 0 ? row->oop.wrong : 0) + (has_ip && row->ip.wrong > 0 ? row->ip.wrong : 0);
    b->busbw_sum += row->oop.busbw + (has_ip ? row->ip.busbw : 0);
    b->nvariants += 1 + (has_ip != 0);
    if (!f) return;
    fprintf(f, "%12lld  %12lld  %8s  %6s  %6d", (long long)row->bytes, (long long)row->count,
            zaya_dist_dtype_name(row->dtype), zaya_coll_is_reduction(row->coll) ? zaya_redop_name(row->op) : "none",
            row->root);
    zaya_coll_print_variant(f, &row->oop);
    zaya_coll_print_variant(f, &row->ip);
    fprintf(f, "\n");
    fflush(f);
}

void zaya_coll_block_end(FILE *f, const zaya_coll_block *b) {
    if (!f) return;
    fprintf(f, "# Out of bounds values : %lld %s\n", (long long)b->wrong, b->wrong ? "FAILED" : "OK");
    fprintf(f, "# Avg bus bandwidth    : %g \n#\n", b->nvariants ? b->busbw_sum / b->nvariants : 0.0);
    fflush(f);
}

void zaya_coll_print_header(FILE *f, int nranks, int ngpus, const char *backend, const char *timed, zaya_coll coll,
                            zaya_dist_dtype t, zaya_redop op, int spread, const zaya_coll_opts *o) {
    fprintf(f, "# Collective test starting: %s\n", zaya_coll_perf_name(coll));
    if (o->step_factor > 1)
        fprintf(f, "# nThread 1 nGpus %d minBytes %lld maxBytes %lld step: %g(factor) warmup iters: %d iters: %d "
                   "agg iters: %d validation: %d graph: 0\n",
                ngpus, (long long)o->min_bytes, (long long)o->max_bytes, o->step_factor, o->warmup, o->iters,
                o->agg_iters, o->check_iters > 0);
    else
        fprintf(f, "# nThread 1 nGpus %d minBytes %lld maxBytes %lld step: %lld(bytes) warmup iters: %d iters: %d "
                   "agg iters: %d validation: %d graph: 0\n",
                ngpus, (long long)o->min_bytes, (long long)o->max_bytes, (long long)o->step_bytes, o->warmup, o->iters,
                o->agg_iters, o->check_iters > 0);
    fprintf(f, "# ranks: %d (%s group)  backend: %s  blocking: %d  dtype: %s  redop: %s\n", nranks,
            zaya_coll_placement_name(spread), backend, o->blocking, zaya_dist_dtype_name(t),
            zaya_coll_is_reduction(coll) ? zaya_redop_name(op) : "none");
    fprintf(f, "# timed calls: %s\n", timed);
    const char *clk = !o->report_cputime ? "wall time (-C 0)"
                      : !strncmp(backend, "nccl", 4) ? "host time to enqueue, not device time (-C 1: CPU time)"
                                                      : "CPU time of the process, every thread (-C 1: CPU time)";
    fprintf(f, "# reported time: per operation, %s over ranks of each rank's mean (-a %d); %s; %d operation%s per "
               "sample (-m %d)\n#\n",
            o->average == 0 ? "rank 0's" : zaya_coll_average_name(o->average), o->average, clk, o->agg_iters,
            o->agg_iters == 1 ? "" : "s", o->agg_iters);
    fprintf(f, "#                                                              out-of-place                       "
               "in-place          \n");
    fprintf(f, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   "
               "algbw   busbw #wrong\n");
    fprintf(f, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
               "(GB/s)  (GB/s)       \n");
}

int64_t zaya_coll_next_size(int64_t b, const zaya_coll_opts *o) {
    if (o->step_factor > 1) {
        int64_t nb = (int64_t)((double)b * o->step_factor);
        return nb > b ? nb : b + 1;
    }
    return b + (o->step_bytes > 0 ? o->step_bytes : 1);
}

/* Sizes a sweep of coll on n ranks times (those that split evenly and differ from the previous). */
static int64_t count_sizes(zaya_coll coll, zaya_dist_dtype t, int n, const zaya_coll_opts *o) {
    int64_t k = 0, prev = -1;
    for (int64_t b = o->min_bytes; b <= o->max_bytes; b = zaya_coll_next_size(b, o)) {
        zaya_coll_shape s = zaya_coll_shape_for(coll, b, n, t);
        if (s.count == 0 || s.bytes == prev) continue;
        prev = s.bytes;
        k++;
    }
    return k;
}

static zaya_status sweep(const zaya_comm *c, zaya_coll coll, zaya_dist_dtype t, zaya_redop op, int root, int spread,
                         const zaya_coll_opts *o, zaya_coll_results *out, FILE *table, zaya_progress *prog,
                         int64_t *done);

zaya_status zaya_bench_coll_sweep(const zaya_comm *c, zaya_coll coll, zaya_dist_dtype t, zaya_redop op, int root,
                                  int spread, const zaya_coll_opts *o, zaya_coll_results *out, FILE *table) {
    return sweep(c, coll, t, op, root, spread, o, out, table, NULL, NULL);
}

static zaya_status sweep(const zaya_comm *c, zaya_coll coll, zaya_dist_dtype t, zaya_redop op, int root, int spread,
                         const zaya_coll_opts *o, zaya_coll_results *out, FILE *table, zaya_progress *prog,
                         int64_t *done) {
    if (o->iters < 1) return zaya_error_set(ZAYA_EINVAL, "bench coll: iterations must be >= 1 (got %d)", o->iters);
    if (o->min_bytes < 1 || o->max_bytes < o->min_bytes)
        return zaya_error_set(ZAYA_EINVAL, "bench coll: bad size range %lld..%lld bytes", (long long)o->min_bytes,
                              (long long)o->max_bytes);
    if (zaya_coll_is_rooted(coll) && (root < 0 || root >= c->size))
        return zaya_error_set(ZAYA_EINVAL, "bench coll: root %d outside a group of %d ranks", root, c->size);
    if (!zaya_coll_is_rooted(coll)) root = -1;
    if (!zaya_coll_is_reduction(coll)) op = ZAYA_REDOP_SUM;

    zaya_coll_shape big = zaya_coll_shape_for(coll, o->max_bytes, c->size, t);
    int64_t elems = big.send_count > big.recv_count ? big.send_count : big.recv_count;
    size_t bytes = (size_t)(elems > 0 ? elems : 1) * zaya_dist_dtype_size(t);
    variant_ctx v = {c, coll, t, op, root < 0 ? 0 : root, o, zaya_malloc(bytes), zaya_malloc(bytes),
                     zaya_malloc((size_t)o->iters * sizeof(double)), zaya_malloc((size_t)o->iters * sizeof(double))};
    zaya_status st = ZAYA_OK;
    if (!v.sendbuf || !v.recvbuf || !v.times || !v.bare_times) {
        st = zaya_error_set(ZAYA_ENOMEM, "bench coll: cannot allocate 2 x %zu bytes of buffers", bytes);
        goto done;
    }
    memset(v.sendbuf, 0, bytes);
    memset(v.recvbuf, 0, bytes);
    memset(v.times, 0, (size_t)o->iters * sizeof(double));
    memset(v.bare_times, 0, (size_t)o->iters * sizeof(double));
    FILE *tf = c->world_rank == 0 ? table : NULL;
    if (tf) {
        /* reduce, alltoall and sendrecv have only the blocking form in zaya's dist layer. */
        int nb = coll == ZAYA_COLL_ALLREDUCE || coll == ZAYA_COLL_REDUCESCATTER || coll == ZAYA_COLL_ALLGATHER ||
                 coll == ZAYA_COLL_BROADCAST;
        const char *timed = o->blocking ? "blocking MPI collectives (-z 1: the calls OSU and IMB time)"
                            : nb ? "MPI_I* start + MPI_Wait (-z 0: Open MPI's libnbc path, not what OSU/IMB time; "
                                   "-z 1 blocking, -z 2 both)"
                                 : "blocking MPI collective (-z 0: this collective has no non-blocking form here)";
        zaya_coll_print_header(tf, c->size, 1, zaya_dist_backend_name(), timed, coll, t, op, spread, o);
    }
    int64_t prev_bytes = -1;
    int first = 1;
    zaya_coll_block blk = {0};
    for (int64_t b = o->min_bytes; b <= o->max_bytes; b = zaya_coll_next_size(b, o)) {
        zaya_coll_shape s = zaya_coll_shape_for(coll, b, c->size, t);
        if (s.count == 0 || s.bytes == prev_bytes) continue; /* too small to split, or a repeat */
        prev_bytes = s.bytes;
        zaya_coll_result row = {.coll = coll, .nranks = c->size, .spread = spread, .dtype = t, .op = op,
                                .root = root, .bytes = s.bytes, .count = s.count, .blocking = o->blocking};
        if (first) {
            /* The sweep's first size also carries the run's one-off costs (the first collective on
             * this communicator, page faults of the timing arrays, lazy connection setup): one
             * discarded pass of the whole measurement absorbs them before the row is measured. */
            zaya_coll_timing discard;
            double discard_bare = 0;
            st = run_variant(&v, &s, 0, &discard, &discard_bare);
            if (st != ZAYA_OK) {
                zaya_error_context(st, "%s, %d ranks, %lld bytes", zaya_coll_name(coll), c->size, (long long)s.bytes);
                goto done;
            }
            first = 0;
        }
        st = run_variant(&v, &s, 0, &row.oop, &row.bare_us);
        if (st == ZAYA_OK) st = run_variant(&v, &s, 1, &row.ip, &row.bare_us);
        if (st != ZAYA_OK) {
            zaya_error_context(st, "%s, %d ranks, %lld bytes", zaya_coll_name(coll), c->size, (long long)s.bytes);
            goto done;
        }
        if (!o->bare) row.bare_us = 0;
        if ((st = zaya_coll_results_push(out, &row)) != ZAYA_OK) goto done;
        if (prog && c->world_rank == 0) {
            char note[96];
            snprintf(note, sizeof note, "%s %d ranks %s %lld B", zaya_coll_name(coll), c->size, zaya_dist_dtype_name(t),
                     (long long)s.bytes);
            zaya_progress_update(prog, ++*done, note);
        }
        zaya_coll_block_row(tf, &blk, &row, 1);
    }
    zaya_coll_block_end(tf, &blk);
done:
    zaya_free(v.sendbuf);
    zaya_free(v.recvbuf);
    zaya_free(v.times);
    zaya_free(v.bare_times);
    return st;
}

/* Ranks outside the current group wait here without spinning, so they do not steal cores from the
 * ranks being measured (this matters when ranks outnumber cores). */
zaya_status zaya_coll_idle_barrier(const zaya_comm *world) {
    MPI_Request req;
    int rc = MPI_Ibarrier(world->comm, &req);
    if (rc != MPI_SUCCESS) return zaya_error_set(ZAYA_EMPI, "bench coll: barrier failed (code %d)", rc);
    for (;;) {
        int done = 0;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (done) return ZAYA_OK;
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    }
}

/* ---- the timed ranks' devices ---- */

void zaya_coll_device_self(zaya_coll_device *d, int rank, const char *kind, int index, const char *name) {
    memset(d, 0, sizeof *d);
    d->rank = rank;
    d->pid = (int)getpid();
    if (gethostname(d->host, sizeof d->host - 1) != 0) snprintf(d->host, sizeof d->host, "?");
    snprintf(d->kind, sizeof d->kind, "%s", kind);
    d->index = index;
    snprintf(d->name, sizeof d->name, "%s", name);
}

zaya_status zaya_coll_devices_gather(const zaya_comm *world, const zaya_coll_device *mine, int n,
                                     zaya_coll_results *out) {
    int bytes = n * (int)sizeof *mine;
    zaya_coll_device *all = NULL;
    if (world->rank == 0) {
        all = calloc((size_t)n * (size_t)world->size, sizeof *all);
        if (!all) return zaya_error_set(ZAYA_ENOMEM, "bench coll: out of memory for the device list");
    }
    MPI_Gather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, 0, world->comm);
    if (world->rank == 0) {
        free(out->devices);
        out->devices = all;
        out->ndevices = n * world->size;
    }
    return ZAYA_OK;
}

void zaya_coll_devices_print(FILE *f, const zaya_coll_results *r) {
    if (!f) return;
    fprintf(f, "# Using devices\n");
    for (int i = 0; i < r->ndevices; i++) {
        const zaya_coll_device *d = &r->devices[i];
        fprintf(f, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", d->rank, d->pid, d->host, d->index,
                d->kind, d->name);
    }
    fprintf(f, "#\n");
}

/* ---- -N: cycles, and the stop request of -N 0 ---- */

static volatile sig_atomic_t g_stop;

static void on_stop(int sig) {
    if (g_stop) { /* a second request: the default action (terminate) */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    g_stop = 1;
}

void zaya_coll_stop_begin(zaya_coll_stop *s, int cycles) {
    memset(s, 0, sizeof *s);
    s->on = cycles == ZAYA_COLL_CYCLES_UNTIL_STOPPED;
    if (!s->on) return;
    g_stop = 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &s->old_int);
    sigaction(SIGTERM, &sa, &s->old_term);
}

void zaya_coll_stop_end(zaya_coll_stop *s) {
    if (!s->on) return;
    sigaction(SIGINT, &s->old_int, NULL);
    sigaction(SIGTERM, &s->old_term, NULL);
    s->on = 0;
}

int zaya_coll_cycle_next(const zaya_comm *world, int cycles, int done, zaya_coll_results *out) {
    out->cycles = done;
    if (cycles != ZAYA_COLL_CYCLES_UNTIL_STOPPED) return done < (cycles > 0 ? cycles : 1);
    /* -N 0: a request on any rank stops every rank here, between two cycles. */
    int mine = g_stop != 0, any = 0;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, world->comm);
    if (any) out->stopped = 1;
    return !any;
}

void zaya_coll_cycle_print(FILE *f, int cycle, int cycles) {
    if (!f || cycles == 0 || cycles == 1) return;
    if (cycles > 0) fprintf(f, "# cycle %d of %d (-N %d)\n#\n", cycle, cycles, cycles);
    else fprintf(f, "# cycle %d (-N 0: until SIGINT or SIGTERM, then ends after this cycle)\n#\n", cycle);
    fflush(f);
}

static void set_cycle(zaya_coll_results *out, int from, int cycle) {
    for (int i = from; i < out->n; i++) out->rows[i].cycle = cycle;
}

/* Rows one group of k ranks times. */
static int64_t group_rows(const zaya_coll_plan *p, int k) {
    int64_t total = 0;
    for (int coll = 0; coll < ZAYA_COLL_COUNT; coll++) {
        if (!(p->colls & (1u << coll))) continue;
        int nops = 0;
        for (int op = 0; op < ZAYA_REDOP_COUNT; op++) nops += (p->ops >> op) & 1u;
        if (!zaya_coll_is_reduction((zaya_coll)coll)) nops = 1;
        for (int t = 0; t < 2; t++)
            if (p->dtypes & (1u << t))
                total += count_sizes((zaya_coll)coll, (zaya_dist_dtype)t, k, &p->opts) * nops *
                         (p->opts.blocking == 2 ? 2 : 1);
    }
    return total;
}

/* Rows one cycle of the plan times (for the progress line; the host groups estimated at the world's
 * size). */
static int64_t cycle_rows(const zaya_coll_plan *p, const int *counts, int ncounts, int n) {
    int64_t total = 0;
    for (int ci = 0; ci < ncounts; ci++)
        for (int spread = 0; spread < 2; spread++) {
            if (!(p->placements & (1u << spread))) continue;
            if (spread && (counts[ci] == n || counts[ci] == 1) && (p->placements & 1u)) continue;
            total += group_rows(p, counts[ci]);
        }
    if (p->placements & 4u) total += 2 * group_rows(p, n);
    return total;
}

/* Every collective, dtype, op and -z mode of the plan on one group (sub: NULL on ranks outside it),
 * then the group freed and the world's ranks agreeing that nobody failed. */
static zaya_status run_group(const zaya_comm *world, const zaya_coll_plan *p, zaya_comm *sub, int placement,
                             zaya_coll_results *out, FILE *table, zaya_progress *prog, int64_t *done) {
    zaya_status st = ZAYA_OK;
    int k = sub ? sub->size : 0;
    for (int coll = 0; st == ZAYA_OK && sub && coll < ZAYA_COLL_COUNT; coll++) {
        if (!(p->colls & (1u << coll))) continue;
        for (int t = 0; st == ZAYA_OK && t < 2; t++) {
            if (!(p->dtypes & (1u << t))) continue;
            for (int op = 0; st == ZAYA_OK && op < ZAYA_REDOP_COUNT; op++) {
                if (!(p->ops & (1u << op))) continue;
                /* A sub-group smaller than the root index uses its rank 0 as root. */
                int root = p->root < k ? p->root : 0;
                /* -z 2: each sweep non-blocking, then blocking, so the two paths compare row by row. */
                for (int z = 0; st == ZAYA_OK && z < 2; z++) {
                    zaya_coll_opts o = p->opts;
                    if (p->opts.blocking != 2 && z != p->opts.blocking) continue;
                    o.blocking = z;
                    st = sweep(sub, (zaya_coll)coll, (zaya_dist_dtype)t, (zaya_redop)op, root, placement, &o, out,
                               table, prog, done);
                }
                if (!zaya_coll_is_reduction((zaya_coll)coll)) break; /* op does not apply */
            }
        }
    }
    zaya_comm_free(sub);
    /* A failure on one rank must not leave the others waiting forever. */
    int bad = st != ZAYA_OK, any_bad = 0;
    zaya_status bst = zaya_coll_idle_barrier(world);
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, world->comm);
    if (st != ZAYA_OK) return st;
    if (bst != ZAYA_OK) return bst;
    if (any_bad) return zaya_error_set(ZAYA_EMPI, "bench coll: another rank failed (see its message)");
    return ZAYA_OK;
}

/* One cycle of the MPI plan: every group size and placement, collective, dtype, op and -z mode; with
 * --placement hosts then every host's ranks (the hosts at once, rank 0's host reported) and the first
 * rank of each host. */
static zaya_status run_cycle(const zaya_comm *world, const zaya_coll_plan *p, const int *counts, int ncounts,
                             zaya_coll_results *out, FILE *table, zaya_progress *prog, int64_t *done) {
    int n = world->size;
    for (int ci = 0; ci < ncounts; ci++) {
        int k = counts[ci];
        for (int spread = 0; spread < 2; spread++) {
            if (!(p->placements & (1u << spread))) continue;
            /* With all ranks (or one) packed and spread are the same group: run it once. */
            if (spread && (k == n || k == 1) && (p->placements & 1u)) continue;
            zaya_comm *sub = NULL;
            zaya_status st = spread ? zaya_comm_strided(world, k, &sub) : zaya_comm_first(world, k, &sub);
            if (st != ZAYA_OK) return st;
            ZAYA_TRY(run_group(world, p, sub, spread && k < n, out, table, prog, done));
        }
    }
    if (!(p->placements & 4u)) return ZAYA_OK;
    zaya_coll_hosts h;
    ZAYA_TRY(zaya_coll_host_groups(world, &h));
    FILE *tf = world->rank == 0 ? table : NULL;
    if (tf)
        fprintf(tf, "# --placement hosts: %d host%s (ranks grouped by hostname); intra-host: the ranks of each host "
                    "at once, host 0's reported; inter-host: the first rank of each host\n#\n",
                h.nhosts, h.nhosts == 1 ? "" : "s");
    /* Every rank knows the sizes: the intra-host group of rank 0 and the host count. */
    int intra0 = h.intra ? h.intra->size : 0;
    MPI_Bcast(&intra0, 1, MPI_INT, 0, world->comm);
    zaya_status st = ZAYA_OK;
    if (intra0 > 1) st = run_group(world, p, h.intra, ZAYA_COLL_PLACE_INTRA_HOST, out, table, prog, done);
    else zaya_comm_free(h.intra);
    h.intra = NULL;
    if (st == ZAYA_OK && h.nhosts > 1) st = run_group(world, p, h.inter, ZAYA_COLL_PLACE_INTER_HOST, out, table, prog, done);
    else zaya_comm_free(h.inter);
    h.inter = NULL;
    if (tf && st == ZAYA_OK && (intra0 <= 1 || h.nhosts <= 1))
        fprintf(tf, "# --placement hosts: %s\n#\n",
                h.nhosts <= 1 ? "one host: no inter-host group" : "one rank per host: no intra-host group");
    return st;
}

zaya_status zaya_bench_coll_run(const zaya_comm *world, const zaya_coll_plan *p, zaya_coll_results *out, FILE *table) {
    ZAYA_TRY(zaya_coll_plan_check(p));
    if (p->backend == ZAYA_COLL_BACKEND_NCCL) return zaya_bench_coll_nccl_run(world, p, out, table);
    int n = world->size;
    int counts[40], ncounts = 0;
    if (p->sweep)
        for (int k = 2; k < n && ncounts < 38; k *= 2) counts[ncounts++] = k;
    counts[ncounts++] = n;
    FILE *tf = world->rank == 0 ? table : NULL;
    char model[96];
    zaya_sysinfo_cpu_model(model, sizeof model);
    zaya_coll_device me;
    zaya_coll_device_self(&me, world->rank, "cpu", sched_getcpu(), model);
    ZAYA_TRY(zaya_coll_devices_gather(world, &me, 1, out));
    if (tf) {
        fprintf(tf, "# zaya bench coll: %d ranks, backend %s\n#\n", world->size, zaya_dist_backend_name());
        zaya_coll_devices_print(tf, out);
    }
    /* Overall progress (rank 0, on stderr): rows done of all rows of the plan, with an ETA (per
     * cycle under -N 0, whose length is open). */
    int64_t per_cycle = cycle_rows(p, counts, ncounts, n), done = 0;
    zaya_progress prog;
    zaya_progress_init(&prog, "bench coll", "size", p->cycles > 0 ? per_cycle * p->cycles : per_cycle);
    zaya_coll_stop stop;
    zaya_coll_stop_begin(&stop, p->cycles);
    zaya_status st = ZAYA_OK;
    for (int cycle = 1; st == ZAYA_OK && zaya_coll_cycle_next(world, p->cycles, cycle - 1, out); cycle++) {
        if (p->cycles == ZAYA_COLL_CYCLES_UNTIL_STOPPED && cycle > 1) {
            zaya_progress_init(&prog, "bench coll", "size", per_cycle);
            done = 0;
        }
        zaya_coll_cycle_print(tf, cycle, p->cycles);
        int from = out->n;
        st = run_cycle(world, p, counts, ncounts, out, table, &prog, &done);
        set_cycle(out, from, cycle);
    }
    zaya_coll_stop_end(&stop);
    ZAYA_TRY(st);
    if (world->rank == 0) zaya_progress_finish(&prog, NULL);
    if (tf && out->stopped)
        fprintf(tf, "# stopped by a signal after %d cycle%s (-N 0)\n", out->cycles, out->cycles == 1 ? "" : "s");
    return ZAYA_OK;
}

/* `zaya bench coll --backend nccl`: the same sweep, table, busbw factors and exact check as the MPI
 * loop (coll_run.c) on device buffers through the NCCL communicator of src/dist, one NCCL rank per
 * GPU (-g N local GPUs per process; mpirun -np P makes P x N ranks). Each iteration is timed with
 * a pair of device events around it on every local GPU's stream (no CUDA graphs, no host sync
 * between iterations); an iteration lasts as long as its slowest GPU. -m N puts N operations in one
 * NCCL group per iteration (as nccl-tests), -C 1 reports the host time spent enqueuing them. */
#include <stdlib.h>
#include <string.h>

#include "zaya/timer.h"

#include "bench/coll_internal.h"
#include "dist/dist_mpi.h"
#include "zaya/gpu.h"

typedef struct local_gpu {
    void *send, *recv;
    zaya_gpu_event **e0, **e1;
} local_gpu;

typedef struct nccl_ctx {
    const zaya_comm *world;
    zaya_nccl *nc;
    int nd, n; /* local GPUs, NCCL ranks */
    local_gpu *g;
    void *host;
    size_t buf_bytes;
    double *times, *host_times;
    const zaya_coll_opts *o;
} nccl_ctx;

static zaya_status select_local(const nccl_ctx *x, int d) {
    return zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, zaya_nccl_device(x->nc, d)});
}

/* Pointers of one call on local GPU d (see the MPI loop: in place follows NCCL, whose in-place
 * reduce-scatter result is the rank's own block of the full buffer). */
static void pointers(const nccl_ctx *x, int d, zaya_coll coll, const zaya_coll_shape *s, zaya_dist_dtype t,
                     int in_place, const void **sb, void **rb) {
    int r = zaya_nccl_rank(x->nc, d);
    size_t es = zaya_dist_dtype_size(t);
    *sb = in_place ? x->g[d].recv : x->g[d].send;
    *rb = x->g[d].recv;
    if (coll == ZAYA_COLL_ALLGATHER && in_place) *sb = (char *)x->g[d].recv + (size_t)r * (size_t)s->block * es;
    if (coll == ZAYA_COLL_REDUCESCATTER && in_place) *rb = (char *)x->g[d].recv + (size_t)r * (size_t)s->block * es;
    if (coll == ZAYA_COLL_BROADCAST) *sb = x->g[d].recv; /* in place in both columns, as with MPI */
}

/* reps operations of coll on every local GPU, in one NCCL group. */
static zaya_status launch(const nccl_ctx *x, zaya_coll coll, const zaya_coll_shape *s, zaya_dist_dtype t, zaya_redop op,
                          int root, int in_place, int reps) {
    ZAYA_TRY(zaya_nccl_group_start());
    zaya_status st = ZAYA_OK;
    for (int k = 0; k < reps * x->nd && st == ZAYA_OK; k++) {
        int d = k % x->nd;
        const void *sb;
        void *rb;
        pointers(x, d, coll, s, t, in_place, &sb, &rb);
        int r = zaya_nccl_rank(x->nc, d), n = x->n;
        switch (coll) {
        case ZAYA_COLL_ALLREDUCE: st = zaya_nccl_allreduce(x->nc, d, sb, rb, s->count, t, op); break;
        case ZAYA_COLL_REDUCESCATTER: st = zaya_nccl_reduce_scatter(x->nc, d, sb, rb, s->block, t, op); break;
        case ZAYA_COLL_ALLGATHER: st = zaya_nccl_allgather(x->nc, d, sb, rb, s->block, t); break;
        case ZAYA_COLL_BROADCAST: st = zaya_nccl_broadcast(x->nc, d, sb, rb, s->count, t, root); break;
        case ZAYA_COLL_REDUCE: st = zaya_nccl_reduce(x->nc, d, sb, rb, s->count, t, op, root); break;
        case ZAYA_COLL_ALLTOALL: st = zaya_nccl_alltoall(x->nc, d, sb, rb, s->block, t); break;
        case ZAYA_COLL_SENDRECV: st = zaya_nccl_sendrecv(x->nc, d, sb, (r + 1) % n, rb, (r - 1 + n) % n, s->count, t); break;
        default: st = zaya_error_set(ZAYA_EINVAL, "bad collective %d", (int)coll);
        }
    }
    zaya_status e = zaya_nccl_group_end();
    return st != ZAYA_OK ? st : e;
}

static zaya_status sync_all(const nccl_ctx *x) {
    for (int d = 0; d < x->nd; d++) ZAYA_TRY(zaya_gpu_stream_sync(zaya_nccl_stream(x->nc, d)));
    return ZAYA_OK;
}

/* Writes every local rank's input (and poisons out-of-place outputs) on the host, then copies it up. */
static zaya_status upload_inputs(const nccl_ctx *x, zaya_coll coll, const zaya_coll_shape *s, zaya_dist_dtype t,
                                 zaya_redop op, int root, int ip_layout, uint64_t seed) {
    size_t es = zaya_dist_dtype_size(t);
    int64_t elems = s->send_count > s->recv_count ? s->send_count : s->recv_count;
    for (int d = 0; d < x->nd; d++) {
        ZAYA_TRY(select_local(x, d));
        zaya_gpu_stream *st = zaya_nccl_stream(x->nc, d);
        zaya_coll_fill_input(coll, s, x->host, ip_layout, t, op, root, zaya_nccl_rank(x->nc, d), x->n, seed);
        ZAYA_TRY(zaya_gpu_memcpy(ip_layout ? x->g[d].recv : x->g[d].send, x->host, (size_t)elems * es, ZAYA_GPU_H2D, st));
        ZAYA_TRY(zaya_gpu_stream_sync(st));
        if (!ip_layout) {
            zaya_coll_poison(x->host, s->recv_count, t);
            ZAYA_TRY(zaya_gpu_memcpy(x->g[d].recv, x->host, (size_t)s->recv_count * es, ZAYA_GPU_H2D, st));
            ZAYA_TRY(zaya_gpu_stream_sync(st));
        }
    }
    return ZAYA_OK;
}

static zaya_status run_variant(nccl_ctx *x, zaya_coll coll, const zaya_coll_shape *s, zaya_dist_dtype t, zaya_redop op,
                               int root, int in_place, int extra_warm, zaya_coll_timing *tm) {
    const zaya_coll_opts *o = x->o;
    memset(tm, 0, sizeof *tm);
    tm->wrong = -1;
    int ip_layout = in_place || coll == ZAYA_COLL_BROADCAST;
    ZAYA_TRY(upload_inputs(x, coll, s, t, op, root, ip_layout, o->seed));
    for (int i = 0; i < o->warmup * (1 + extra_warm) + extra_warm; i++)
        ZAYA_TRY(launch(x, coll, s, t, op, root, in_place, 1));
    ZAYA_TRY(sync_all(x));
    ZAYA_TRY(zaya_comm_barrier(x->world));
    int agg = o->agg_iters > 0 ? o->agg_iters : 1;
    for (int i = 0; i < o->iters; i++) {
        for (int d = 0; d < x->nd; d++) ZAYA_TRY(zaya_gpu_event_record(x->g[d].e0[i], zaya_nccl_stream(x->nc, d)));
        uint64_t h0 = zaya_now_ns();
        ZAYA_TRY(launch(x, coll, s, t, op, root, in_place, agg));
        x->host_times[i] = (double)(zaya_now_ns() - h0) * 1e-9 / agg;
        for (int d = 0; d < x->nd; d++) ZAYA_TRY(zaya_gpu_event_record(x->g[d].e1[i], zaya_nccl_stream(x->nc, d)));
    }
    ZAYA_TRY(sync_all(x));
    for (int i = 0; i < o->iters; i++) {
        double worst = 0;
        for (int d = 0; d < x->nd; d++) {
            double ms = 0;
            ZAYA_TRY(zaya_gpu_event_elapsed_ms(x->g[d].e0[i], x->g[d].e1[i], &ms));
            worst = ms > worst ? ms : worst;
        }
        x->times[i] = o->report_cputime ? x->host_times[i] : worst * 1e-3 / agg;
    }
    zaya_coll_time_stats(x->world, x->times, o->iters, o->average, tm);
    tm->calls = (int64_t)o->iters * agg;
    tm->algbw = zaya_coll_algbw_gbps(s->bytes, tm->time_us);
    tm->busbw = tm->algbw * zaya_coll_busbw_factor(coll, x->n);
    if (o->check_iters <= 0) return ZAYA_OK;
    long long wrong = 0;
    size_t es = zaya_dist_dtype_size(t);
    for (int k = 0; k < o->check_iters; k++) {
        uint64_t seed = o->seed + (uint64_t)k;
        ZAYA_TRY(upload_inputs(x, coll, s, t, op, root, ip_layout, seed));
        ZAYA_TRY(launch(x, coll, s, t, op, root, in_place, 1));
        ZAYA_TRY(sync_all(x));
        for (int d = 0; d < x->nd; d++) {
            const void *sb;
            void *rb;
            pointers(x, d, coll, s, t, in_place, &sb, &rb);
            void *outp = coll == ZAYA_COLL_REDUCESCATTER ? rb : x->g[d].recv;
            ZAYA_TRY(select_local(x, d));
            ZAYA_TRY(zaya_gpu_memcpy(x->host, outp, (size_t)s->recv_count * es, ZAYA_GPU_D2H, zaya_nccl_stream(x->nc, d)));
            ZAYA_TRY(zaya_gpu_stream_sync(zaya_nccl_stream(x->nc, d)));
            int r = zaya_nccl_rank(x->nc, d);
            int corrupt = coll == ZAYA_COLL_REDUCE ? root : x->n - 1; /* as in the MPI loop */
            if (o->inject_wrong && r == corrupt) {
                if (t == ZAYA_DIST_BF16) ((uint16_t *)x->host)[0] ^= 0x0100;
                else ((float *)x->host)[0] += 1.0f;
            }
            wrong += zaya_coll_count_wrong(coll, s, x->host, t, op, root, r, x->n, seed);
        }
    }
    long long total = 0;
    MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, x->world->comm);
    tm->wrong = total;
    return ZAYA_OK;
}

static zaya_status sweep(nccl_ctx *x, zaya_coll coll, zaya_dist_dtype t, zaya_redop op, int root, zaya_coll_results *out,
                         FILE *tf) {
    const zaya_coll_opts *o = x->o;
    if (!zaya_coll_is_rooted(coll)) root = -1;
    if (!zaya_coll_is_reduction(coll)) op = ZAYA_REDOP_SUM;
    int r0 = root < 0 ? 0 : root;
    if (tf) {
        char backend[64];
        snprintf(backend, sizeof backend, "nccl %s", zaya_nccl_version());
        zaya_coll_print_header(tf, x->n, x->nd, backend, "NCCL on device buffers, a cudaEvent pair per iteration per GPU",
                               coll, t, op, 0, o);
    }
    int64_t prev = -1;
    int first = 1;
    zaya_coll_block blk = {0};
    for (int64_t b = o->min_bytes; b <= o->max_bytes; b = zaya_coll_next_size(b, o)) {
        zaya_coll_shape s = zaya_coll_shape_for(coll, b, x->n, t);
        if (s.count == 0 || s.bytes == prev) continue;
        prev = s.bytes;
        zaya_coll_result row = {.coll = coll, .nranks = x->n, .dtype = t, .op = op, .root = root, .bytes = s.bytes,
                                .count = s.count};
        zaya_status st = run_variant(x, coll, &s, t, op, r0, 0, first, &row.oop);
        /* NCCL's grouped send/recv cannot run in place on one buffer: alltoall / sendrecv in-place N/A. */
        int ip = coll != ZAYA_COLL_ALLTOALL && coll != ZAYA_COLL_SENDRECV;
        if (st == ZAYA_OK && ip) st = run_variant(x, coll, &s, t, op, r0, 1, 0, &row.ip);
        else if (!ip) row.ip.wrong = -1;
        first = 0;
        if (st != ZAYA_OK)
            return zaya_error_context(st, "nccl %s, %d ranks, %lld bytes", zaya_coll_name(coll), x->n, (long long)s.bytes);
        ZAYA_TRY(zaya_coll_results_push(out, &row));
        zaya_coll_block_row(tf, &blk, &row, ip);
    }
    zaya_coll_block_end(tf, &blk);
    return ZAYA_OK;
}

static void ctx_free(nccl_ctx *x) {
    for (int d = 0; x->g && d < x->nd; d++) {
        if (x->nc) select_local(x, d);
        zaya_gpu_free(x->g[d].send);
        zaya_gpu_free(x->g[d].recv);
        for (int i = 0; i < x->o->iters; i++) {
            if (x->g[d].e0) zaya_gpu_event_free(x->g[d].e0[i]);
            if (x->g[d].e1) zaya_gpu_event_free(x->g[d].e1[i]);
        }
        free(x->g[d].e0);
        free(x->g[d].e1);
    }
    free(x->g);
    zaya_gpu_host_free(x->host);
    free(x->times);
    free(x->host_times);
    zaya_nccl_free(x->nc);
}

static zaya_status setup(nccl_ctx *x, const zaya_coll_plan *p) {
    int nd = p->ngpus > 0 ? p->ngpus : 1;
    /* Local rank on this node: GPUs local_rank x nd .. + nd - 1. */
    MPI_Comm node;
    int local = 0;
    if (MPI_Comm_split_type(x->world->comm, MPI_COMM_TYPE_SHARED, x->world->rank, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_rank(node, &local);
        MPI_Comm_free(&node);
    }
    ZAYA_TRY(zaya_gpu_load()); /* the CUDA module, or the library it cannot open, named */
    int have = zaya_gpu_device_count();
    if ((local + 1) * nd > have)
        return zaya_error_set(ZAYA_EINVAL, "bench coll --backend nccl: local rank %d needs GPUs %d..%d, %d CUDA device%s visible",
                              local, local * nd, (local + 1) * nd - 1, have, have == 1 ? "" : "s");
    int devs[64];
    if (nd > 64) return zaya_error_set(ZAYA_EINVAL, "bench coll: -g %d is more than 64 GPUs per process", nd);
    for (int d = 0; d < nd; d++) devs[d] = local * nd + d;
    ZAYA_TRY(zaya_nccl_init(x->world, nd, devs, &x->nc));
    x->nd = nd;
    x->n = zaya_nccl_size(x->nc);
    if (p->root < 0 || p->root >= x->n)
        return zaya_error_set(ZAYA_EINVAL, "bench coll: root %d outside the %d NCCL ranks", p->root, x->n);
    size_t biggest = 0;
    for (int c = 0; c < ZAYA_COLL_COUNT; c++)
        for (int t = 0; t < 2; t++) {
            if (!(p->colls & (1u << c)) || !(p->dtypes & (1u << t))) continue;
            zaya_coll_shape s = zaya_coll_shape_for((zaya_coll)c, p->opts.max_bytes, x->n, (zaya_dist_dtype)t);
            int64_t e = s.send_count > s.recv_count ? s.send_count : s.recv_count;
            size_t b = (size_t)e * zaya_dist_dtype_size((zaya_dist_dtype)t);
            biggest = b > biggest ? b : biggest;
        }
    x->buf_bytes = biggest > 64 ? biggest : 64;
    x->g = calloc((size_t)nd, sizeof *x->g);
    x->times = calloc((size_t)p->opts.iters, sizeof *x->times);
    x->host_times = calloc((size_t)p->opts.iters, sizeof *x->host_times);
    if (!x->g || !x->times || !x->host_times) return zaya_error_set(ZAYA_ENOMEM, "bench coll: out of memory");
    ZAYA_TRY(zaya_gpu_host_malloc(&x->host, x->buf_bytes));
    for (int d = 0; d < nd; d++) {
        ZAYA_TRY(select_local(x, d));
        ZAYA_TRY(zaya_gpu_malloc(&x->g[d].send, x->buf_bytes));
        ZAYA_TRY(zaya_gpu_malloc(&x->g[d].recv, x->buf_bytes));
        x->g[d].e0 = calloc((size_t)p->opts.iters, sizeof(zaya_gpu_event *));
        x->g[d].e1 = calloc((size_t)p->opts.iters, sizeof(zaya_gpu_event *));
        if (!x->g[d].e0 || !x->g[d].e1) return zaya_error_set(ZAYA_ENOMEM, "bench coll: out of memory for events");
        for (int i = 0; i < p->opts.iters; i++) {
            ZAYA_TRY(zaya_gpu_event_init(&x->g[d].e0[i]));
            ZAYA_TRY(zaya_gpu_event_init(&x->g[d].e1[i]));
        }
    }
    return ZAYA_OK;
}

zaya_status zaya_bench_coll_nccl_run(const zaya_comm *world, const zaya_coll_plan *p, zaya_coll_results *out,
                                     FILE *table) {
    if (!zaya_gpu_built() || !zaya_nccl_built())
        return zaya_error_set(ZAYA_EUNSUPPORTED, "bench coll --backend nccl: zaya was built without %s",
                              zaya_gpu_built() ? "NCCL (nccl.h was not found at configure time)" : "CUDA");
    if (p->sweep) return zaya_error_set(ZAYA_EINVAL, "bench coll --backend nccl: --sweep is MPI-only");
    if (p->opts.iters < 1) return zaya_error_set(ZAYA_EINVAL, "bench coll: iterations must be >= 1");
    nccl_ctx x = {.world = world, .o = &p->opts};
    zaya_status st = setup(&x, p);
    /* A rank that could not set up must not leave the others waiting in a collective. */
    int setup_bad = st != ZAYA_OK, setup_any = 0;
    MPI_Allreduce(&setup_bad, &setup_any, 1, MPI_INT, MPI_MAX, world->comm);
    if (st == ZAYA_OK && setup_any) st = zaya_error_set(ZAYA_EMPI, "bench coll: another rank failed to set up NCCL");
    FILE *tf = world->rank == 0 ? table : NULL;
    if (st == ZAYA_OK) {
        /* Every process's GPUs (the same -g everywhere), gathered to rank 0. */
        zaya_coll_device mine[64];
        for (int d = 0; d < x.nd; d++) {
            zaya_gpu_props pr;
            int dev = zaya_nccl_device(x.nc, d);
            if (zaya_gpu_props_get(dev, &pr) != ZAYA_OK) snprintf(pr.name, sizeof pr.name, "?");
            zaya_coll_device_self(&mine[d], zaya_nccl_rank(x.nc, d), "cuda", dev, pr.name);
        }
        st = zaya_coll_devices_gather(world, mine, x.nd, out);
    }
    if (st == ZAYA_OK && tf) {
        fprintf(tf, "# zaya bench coll: %d NCCL ranks (%d processes x %d GPUs), NCCL %s\n#\n", x.n, world->size, x.nd,
                zaya_nccl_version());
        zaya_coll_devices_print(tf, out);
    }
    zaya_coll_stop stop;
    zaya_coll_stop_begin(&stop, p->cycles);
    for (int cycle = 1; st == ZAYA_OK && zaya_coll_cycle_next(world, p->cycles, cycle - 1, out); cycle++) {
        zaya_coll_cycle_print(tf, cycle, p->cycles);
        int from = out->n;
        for (int c = 0; st == ZAYA_OK && c < ZAYA_COLL_COUNT; c++) {
            if (!(p->colls & (1u << c))) continue;
            for (int t = 0; st == ZAYA_OK && t < 2; t++) {
                if (!(p->dtypes & (1u << t))) continue;
                for (int op = 0; st == ZAYA_OK && op < ZAYA_REDOP_COUNT; op++) {
                    if (!(p->ops & (1u << op))) continue;
                    st = sweep(&x, (zaya_coll)c, (zaya_dist_dtype)t, (zaya_redop)op, p->root, out, tf);
                    if (!zaya_coll_is_reduction((zaya_coll)c)) break;
                }
            }
        }
        for (int i = from; i < out->n; i++) out->rows[i].cycle = cycle;
    }
    zaya_coll_stop_end(&stop);
    if (st == ZAYA_OK && tf && out->stopped)
        fprintf(tf, "# stopped by a signal after %d cycle%s (-N 0)\n", out->cycles, out->cycles == 1 ? "" : "s");
    ctx_free(&x);
    int bad = st != ZAYA_OK, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, world->comm);
    if (st != ZAYA_OK) return st;
    if (any) return zaya_error_set(ZAYA_EMPI, "bench coll: another rank failed (see its message)");
    return ZAYA_OK;
}

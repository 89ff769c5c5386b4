/* NCCL communicator over device buffers (include/zaya/dist.h): one NCCL rank per local device. Built
 * into the CUDA module (libzaya_cuda.so, src/gpu/module.h) when NCCL is found, never into the zaya
 * binary: the host side (src/dist/nccl_host.c) broadcasts rank 0's unique id over MPI and forwards
 * every call here through the module's table. The CUDA names come through src/gpu/gpu_rt.h (RCCL
 * keeps NCCL's names: a HIP build swaps only that header). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "gpu/gpu_rt.h"
#include "gpu/module.h"
#include "zaya/dist.h"
#include "zaya/gpu.h"

struct zaya_nccl {
    int ndev, nranks, rank0;
    int *devices;
    ncclComm_t *comms;
    zaya_gpu_stream **streams;
};

static zaya_status nccl_check(ncclResult_t r, const char *call) {
    if (r == ncclSuccess) return ZAYA_OK;
    return zaya_error_set(ZAYA_EBACKEND, "%s: %s (%s)", call, ncclGetErrorString(r), ncclGetLastError(NULL));
}

static const char *module_version(void) {
    static char buf[32];
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return "?";
    snprintf(buf, sizeof buf, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    return buf;
}

void zaya_nccl_free(zaya_nccl *n) {
    if (!n) return;
    for (int i = 0; i < n->ndev; i++) {
        if (n->comms && n->comms[i]) ncclCommDestroy(n->comms[i]);
        if (n->streams) zaya_gpu_stream_free(n->streams[i]);
    }
    free(n->comms);
    free(n->streams);
    free(n->devices);
    free(n);
}

static zaya_status module_unique_id(void *id, size_t cap, size_t *len) {
    *len = 0;
    if (cap < sizeof(ncclUniqueId))
        return zaya_error_set(ZAYA_EINVAL, "NCCL: a unique id needs %zu bytes, given %zu", sizeof(ncclUniqueId), cap);
    ncclUniqueId u;
    ZAYA_TRY(nccl_check(ncclGetUniqueId(&u), "ncclGetUniqueId"));
    memcpy(id, &u, sizeof u);
    *len = sizeof u;
    return ZAYA_OK;
}

static zaya_status module_init(int ndev, const int *devices, int nranks, int rank0, const void *id_bytes, size_t len,
                               zaya_nccl **out) {
    *out = NULL;
    if (ndev < 1) return zaya_error_set(ZAYA_EINVAL, "NCCL: %d local devices", ndev);
    if (len < sizeof(ncclUniqueId))
        return zaya_error_set(ZAYA_EINVAL, "NCCL: a unique id of %zu bytes (needs %zu)", len, sizeof(ncclUniqueId));
    int have = zaya_gpu_device_count();
    for (int i = 0; i < ndev; i++)
        if (devices[i] < 0 || devices[i] >= have)
            return zaya_error_set(ZAYA_EINVAL, "NCCL: device cuda:%d: %d CUDA device%s visible", devices[i], have,
                                  have == 1 ? "" : "s");
    zaya_nccl *n = calloc(1, sizeof *n);
    if (!n) return zaya_error_set(ZAYA_ENOMEM, "NCCL: out of memory");
    n->ndev = ndev;
    n->devices = calloc((size_t)ndev, sizeof *n->devices);
    n->comms = calloc((size_t)ndev, sizeof *n->comms);
    n->streams = calloc((size_t)ndev, sizeof *n->streams);
    if (!n->devices || !n->comms || !n->streams) {
        zaya_nccl_free(n);
        return zaya_error_set(ZAYA_ENOMEM, "NCCL: out of memory");
    }
    memcpy(n->devices, devices, sizeof(int) * (size_t)ndev);
    n->nranks = nranks;
    n->rank0 = rank0;
    ncclUniqueId id;
    memcpy(&id, id_bytes, sizeof id);
    zaya_status st = ZAYA_OK;
    for (int i = 0; st == ZAYA_OK && i < ndev; i++) {
        st = zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, devices[i]});
        if (st == ZAYA_OK) st = zaya_gpu_stream_init(&n->streams[i]);
    }
    if (st == ZAYA_OK) {
        st = nccl_check(ncclGroupStart(), "ncclGroupStart");
        for (int i = 0; st == ZAYA_OK && i < ndev; i++) {
            gpuSetDevice(devices[i]);
            char call[80];
            snprintf(call, sizeof call, "ncclCommInitRank(rank %d of %d, cuda:%d)", n->rank0 + i, n->nranks, devices[i]);
            st = nccl_check(ncclCommInitRank(&n->comms[i], n->nranks, id, n->rank0 + i), call);
        }
        zaya_status e = nccl_check(ncclGroupEnd(), "ncclGroupEnd (communicator init)");
        if (st == ZAYA_OK) st = e;
    }
    if (st != ZAYA_OK) {
        zaya_nccl_free(n);
        return st;
    }
    *out = n;
    return ZAYA_OK;
}

int zaya_nccl_size(const zaya_nccl *n) { return n->nranks; }
int zaya_nccl_local_count(const zaya_nccl *n) { return n->ndev; }
int zaya_nccl_rank(const zaya_nccl *n, int local) { return n->rank0 + local; }
int zaya_nccl_device(const zaya_nccl *n, int local) { return n->devices[local]; }
zaya_gpu_stream *zaya_nccl_stream(const zaya_nccl *n, int local) { return n->streams[local]; }

zaya_status zaya_nccl_group_start(void) { return nccl_check(ncclGroupStart(), "ncclGroupStart"); }
zaya_status zaya_nccl_group_end(void) { return nccl_check(ncclGroupEnd(), "ncclGroupEnd"); }

/* zaya_dist_dtype and zaya_redop arrive as ints (the module's table, gpu/module.h). */
static ncclDataType_t nccl_dtype(int t) { return t == ZAYA_DIST_BF16 ? ncclBfloat16 : ncclFloat32; }
static const char *dtype_name(int t) { return t == ZAYA_DIST_BF16 ? "bf16" : "float"; }
static size_t dtype_size(int t) { return t == ZAYA_DIST_BF16 ? 2 : 4; }
static ncclRedOp_t nccl_op(int op) {
    switch (op) {
    case ZAYA_REDOP_PROD: return ncclProd;
    case ZAYA_REDOP_MIN: return ncclMin;
    case ZAYA_REDOP_MAX: return ncclMax;
    case ZAYA_REDOP_AVG: return ncclAvg;
    default: return ncclSum;
    }
}
static gpuStream_t strm(const zaya_nccl *n, int local) {
    return (gpuStream_t)zaya_gpu_stream_native(n->streams[local]);
}

#define NCCL_CALL(name, expr)                                                                                   \
    do {                                                                                                        \
        char call_[96];                                                                                         \
        snprintf(call_, sizeof call_, "%s(%lld x %s, rank %d)", name, (long long)count, dtype_name(t), \
                 n->rank0 + local);                                                                             \
        return nccl_check((expr), call_);                                                                       \
    } while (0)

static zaya_status n_allreduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                int t, int op) {
    NCCL_CALL("ncclAllReduce", ncclAllReduce(sb, rb, (size_t)count, nccl_dtype(t), nccl_op(op), n->comms[local], strm(n, local)));
}
static zaya_status n_reduce_scatter(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                     int t, int op) {
    NCCL_CALL("ncclReduceScatter",
              ncclReduceScatter(sb, rb, (size_t)count, nccl_dtype(t), nccl_op(op), n->comms[local], strm(n, local)));
}
static zaya_status n_allgather(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                int t) {
    NCCL_CALL("ncclAllGather", ncclAllGather(sb, rb, (size_t)count, nccl_dtype(t), n->comms[local], strm(n, local)));
}
static zaya_status n_broadcast(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                int t, int root) {
    NCCL_CALL("ncclBroadcast", ncclBroadcast(sb, rb, (size_t)count, nccl_dtype(t), root, n->comms[local], strm(n, local)));
}
static zaya_status n_reduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, int t,
                             int op, int root) {
    NCCL_CALL("ncclReduce",
              ncclReduce(sb, rb, (size_t)count, nccl_dtype(t), nccl_op(op), root, n->comms[local], strm(n, local)));
}
static zaya_status n_alltoall(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                               int t) {
    size_t bytes = (size_t)count * dtype_size(t);
    ZAYA_TRY(nccl_check(ncclGroupStart(), "ncclGroupStart (alltoall)"));
    zaya_status st = ZAYA_OK;
    for (int r = 0; st == ZAYA_OK && r < n->nranks; r++) {
        st = nccl_check(ncclSend((const char *)sb + (size_t)r * bytes, (size_t)count, nccl_dtype(t), r, n->comms[local],
                                 strm(n, local)),
                        "ncclSend (alltoall)");
        if (st == ZAYA_OK)
            st = nccl_check(ncclRecv((char *)rb + (size_t)r * bytes, (size_t)count, nccl_dtype(t), r, n->comms[local],
                                     strm(n, local)),
                            "ncclRecv (alltoall)");
    }
    zaya_status e = nccl_check(ncclGroupEnd(), "ncclGroupEnd (alltoall)");
    return st != ZAYA_OK ? st : e;
}
static zaya_status n_sendrecv(const zaya_nccl *n, int local, const void *sb, int dst, void *rb, int src, int64_t count,
                               int t) {
    ZAYA_TRY(nccl_check(ncclGroupStart(), "ncclGroupStart (sendrecv)"));
    zaya_status st = nccl_check(ncclSend(sb, (size_t)count, nccl_dtype(t), dst, n->comms[local], strm(n, local)), "ncclSend");
    if (st == ZAYA_OK)
        st = nccl_check(ncclRecv(rb, (size_t)count, nccl_dtype(t), src, n->comms[local], strm(n, local)), "ncclRecv");
    zaya_status e = nccl_check(ncclGroupEnd(), "ncclGroupEnd (sendrecv)");
    return st != ZAYA_OK ? st : e;
}

void zaya_nccl_module_install(zaya_gpu_module *m);
void zaya_nccl_module_install(zaya_gpu_module *m) {
    m->nccl_version = module_version;
    m->nccl_unique_id = module_unique_id;
    m->nccl_init_ranks = module_init;
    m->nccl_free = zaya_nccl_free;
    m->nccl_size = zaya_nccl_size;
    m->nccl_local_count = zaya_nccl_local_count;
    m->nccl_rank = zaya_nccl_rank;
    m->nccl_device = zaya_nccl_device;
    m->nccl_stream = zaya_nccl_stream;
    m->nccl_group_start = zaya_nccl_group_start;
    m->nccl_group_end = zaya_nccl_group_end;
    m->nccl_allreduce = n_allreduce;
    m->nccl_reduce_scatter = n_reduce_scatter;
    m->nccl_allgather = n_allgather;
    m->nccl_broadcast = n_broadcast;
    m->nccl_reduce = n_reduce;
    m->nccl_alltoall = n_alltoall;
    m->nccl_sendrecv = n_sendrecv;
}

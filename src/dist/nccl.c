/* NCCL communicator over device buffers (include/zaya/dist.h): one NCCL rank per local device, the
 * unique id from rank 0 over MPI. The CUDA names come through src/gpu/gpu_rt.h (RCCL keeps NCCL's
 * names: a HIP build swaps only that header). Without NCCL the functions fail with "built without
 * NCCL". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist_mpi.h"
#include "zaya/dist.h"
#include "zaya/gpu.h"

#if defined(ZAYA_HAVE_NCCL)
#include <nccl.h>

#include "gpu/gpu_rt.h"

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

int zaya_nccl_built(void) { return 1; }

const char *zaya_nccl_version(void) {
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

zaya_status zaya_nccl_init(const zaya_comm *c, int ndev, const int *devices, zaya_nccl **out) {
    *out = NULL;
    if (ndev < 1) return zaya_error_set(ZAYA_EINVAL, "NCCL: %d local devices", ndev);
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
    int world = c ? c->size : 1, me = c ? c->rank : 0;
    n->nranks = world * ndev;
    n->rank0 = me * ndev;
    ncclUniqueId id;
    zaya_status st = ZAYA_OK;
    if (me == 0) st = nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    /* Every rank learns whether rank 0 got an id before anyone waits on it. */
    int ok = st == ZAYA_OK;
    if (c && world > 1) {
        MPI_Bcast(&ok, 1, MPI_INT, 0, c->comm);
        if (ok && MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, c->comm) != MPI_SUCCESS)
            st = zaya_error_set(ZAYA_EMPI, "NCCL: broadcasting the unique id over MPI failed");
        if (!ok && st == ZAYA_OK) st = zaya_error_set(ZAYA_EBACKEND, "NCCL: rank 0 could not create the unique id");
    }
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

static ncclDataType_t nccl_dtype(zaya_dist_dtype t) { return t == ZAYA_DIST_BF16 ? ncclBfloat16 : ncclFloat32; }
static ncclRedOp_t nccl_op(zaya_redop op) {
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
        snprintf(call_, sizeof call_, "%s(%lld x %s, rank %d)", name, (long long)count, zaya_dist_dtype_name(t), \
                 n->rank0 + local);                                                                             \
        return nccl_check((expr), call_);                                                                       \
    } while (0)

zaya_status zaya_nccl_allreduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t, zaya_redop op) {
    NCCL_CALL("ncclAllReduce", ncclAllReduce(sb, rb, (size_t)count, nccl_dtype(t), nccl_op(op), n->comms[local], strm(n, local)));
}
zaya_status zaya_nccl_reduce_scatter(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                     zaya_dist_dtype t, zaya_redop op) {
    NCCL_CALL("ncclReduceScatter",
              ncclReduceScatter(sb, rb, (size_t)count, nccl_dtype(t), nccl_op(op), n->comms[local], strm(n, local)));
}
zaya_status zaya_nccl_allgather(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t) {
    NCCL_CALL("ncclAllGather", ncclAllGather(sb, rb, (size_t)count, nccl_dtype(t), n->comms[local], strm(n, local)));
}
zaya_status zaya_nccl_broadcast(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t, int root) {
    NCCL_CALL("ncclBroadcast", ncclBroadcast(sb, rb, (size_t)count, nccl_dtype(t), root, n->comms[local], strm(n, local)));
}
zaya_status zaya_nccl_reduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, zaya_dist_dtype t,
                             zaya_redop op, int root) {
    NCCL_CALL("ncclReduce",
              ncclReduce(sb, rb, (size_t)count, nccl_dtype(t), nccl_op(op), root, n->comms[local], strm(n, local)));
}
zaya_status zaya_nccl_alltoall(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                               zaya_dist_dtype t) {
    size_t bytes = (size_t)count * zaya_dist_dtype_size(t);
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
zaya_status zaya_nccl_sendrecv(const zaya_nccl *n, int local, const void *sb, int dst, void *rb, int src, int64_t count,
                               zaya_dist_dtype t) {
    ZAYA_TRY(nccl_check(ncclGroupStart(), "ncclGroupStart (sendrecv)"));
    zaya_status st = nccl_check(ncclSend(sb, (size_t)count, nccl_dtype(t), dst, n->comms[local], strm(n, local)), "ncclSend");
    if (st == ZAYA_OK)
        st = nccl_check(ncclRecv(rb, (size_t)count, nccl_dtype(t), src, n->comms[local], strm(n, local)), "ncclRecv");
    zaya_status e = nccl_check(ncclGroupEnd(), "ncclGroupEnd (sendrecv)");
    return st != ZAYA_OK ? st : e;
}

#else /* no NCCL */

#define NO_NCCL zaya_error_set(ZAYA_EUNSUPPORTED, "NCCL: zaya was built without NCCL (needs CUDA and nccl.h at configure time)")
int zaya_nccl_built(void) { return 0; }
const char *zaya_nccl_version(void) { return "none"; }
zaya_status zaya_nccl_init(const zaya_comm *c, int ndev, const int *devices, zaya_nccl **out) {
    *out = NULL;
    return NO_NCCL;
}
void zaya_nccl_free(zaya_nccl *n) {}
int zaya_nccl_size(const zaya_nccl *n) { return 0; }
int zaya_nccl_local_count(const zaya_nccl *n) { return 0; }
int zaya_nccl_rank(const zaya_nccl *n, int local) { return -1; }
int zaya_nccl_device(const zaya_nccl *n, int local) { return -1; }
zaya_gpu_stream *zaya_nccl_stream(const zaya_nccl *n, int local) { return NULL; }
zaya_status zaya_nccl_group_start(void) { return NO_NCCL; }
zaya_status zaya_nccl_group_end(void) { return NO_NCCL; }
zaya_status zaya_nccl_allreduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t, zaya_redop op) { return NO_NCCL; }
zaya_status zaya_nccl_reduce_scatter(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                     zaya_dist_dtype t, zaya_redop op) { return NO_NCCL; }
zaya_status zaya_nccl_allgather(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t) { return NO_NCCL; }
zaya_status zaya_nccl_broadcast(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t, int root) { return NO_NCCL; }
zaya_status zaya_nccl_reduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, zaya_dist_dtype t,
                             zaya_redop op, int root) { return NO_NCCL; }
zaya_status zaya_nccl_alltoall(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                               zaya_dist_dtype t) { return NO_NCCL; }
zaya_status zaya_nccl_sendrecv(const zaya_nccl *n, int local, const void *sb, int dst, void *rb, int src, int64_t count,
                               zaya_dist_dtype t) { return NO_NCCL; }
#endif

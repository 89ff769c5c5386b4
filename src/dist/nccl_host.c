/* The NCCL communicator's host side (include/zaya/dist.h): rank 0's unique id broadcast over MPI,
 * and every zaya_nccl_* call forwarded to the NCCL code inside the CUDA module (src/dist/nccl.c in
 * libzaya_cuda.so, src/gpu/module.h), which is opened on the first call. No NCCL or CUDA name here:
 * the zaya binary links neither. Without NCCL in the build the calls fail with "built without NCCL". */
#include <string.h>

#include "dist/dist_mpi.h"
#include "gpu/module.h"
#include "zaya/dist.h"
#include "zaya/gpu.h"

#define NO_NCCL \
    zaya_error_set(ZAYA_EUNSUPPORTED, "NCCL: zaya was built without NCCL (needs CUDA and nccl.h at configure time)")

int zaya_nccl_built(void) { return zaya_gpu_module_nccl_built(); }

/* The module's table when it has NCCL; otherwise the error (not built, or not loadable). */
static zaya_status nccl_module(const zaya_gpu_module **out) {
    *out = NULL;
    if (!zaya_nccl_built()) return NO_NCCL;
    const zaya_gpu_module *m;
    ZAYA_TRY(zaya_gpu_module_get(&m));
    if (!m->nccl_init_ranks) return NO_NCCL;
    *out = m;
    return ZAYA_OK;
}

/* The module, for calls on a communicator it made (so it is open); NULL without NCCL. */
static const zaya_gpu_module *opened(void) {
    const zaya_gpu_module *m = NULL;
    return nccl_module(&m) == ZAYA_OK ? m : NULL;
}

const char *zaya_nccl_version(void) {
    const zaya_gpu_module *m = NULL;
    if (nccl_module(&m) != ZAYA_OK) return "none";
    return m->nccl_version();
}

zaya_status zaya_nccl_init(const zaya_comm *c, int ndev, const int *devices, zaya_nccl **out) {
    *out = NULL;
    if (ndev < 1) return zaya_error_set(ZAYA_EINVAL, "NCCL: %d local devices", ndev);
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    /* The devices first: no NCCL call for a device that is not there. */
    const int have = zaya_gpu_device_count();
    for (int i = 0; i < ndev; i++)
        if (devices[i] < 0 || devices[i] >= have)
            return zaya_error_set(ZAYA_EINVAL, "NCCL: device cuda:%d: %d CUDA device%s visible", devices[i], have,
                                  have == 1 ? "" : "s");
    int world = c ? c->size : 1, me = c ? c->rank : 0;
    unsigned char id[ZAYA_GPU_NCCL_ID_BYTES];
    memset(id, 0, sizeof id);
    size_t len = 0;
    zaya_status st = ZAYA_OK;
    if (me == 0) st = m->nccl_unique_id(id, sizeof id, &len);
    /* Every rank learns whether rank 0 got an id before anyone waits on it. */
    int ok = st == ZAYA_OK;
    if (c && world > 1) {
        MPI_Bcast(&ok, 1, MPI_INT, 0, c->comm);
        if (ok && MPI_Bcast(id, (int)sizeof id, MPI_BYTE, 0, c->comm) != MPI_SUCCESS)
            st = zaya_error_set(ZAYA_EMPI, "NCCL: broadcasting the unique id over MPI failed");
        if (!ok && st == ZAYA_OK) st = zaya_error_set(ZAYA_EBACKEND, "NCCL: rank 0 could not create the unique id");
    }
    if (st != ZAYA_OK) return st;
    return m->nccl_init_ranks(ndev, devices, world * ndev, me * ndev, id, sizeof id, out);
}

void zaya_nccl_free(zaya_nccl *n) {
    if (!n) return;
    const zaya_gpu_module *m = opened();
    if (m) m->nccl_free(n);
}

/* Without a communicator (NCCL not built, or init failed) the stub's answers: 0, -1, NULL. */
int zaya_nccl_size(const zaya_nccl *n) {
    const zaya_gpu_module *m = n ? opened() : NULL;
    return m ? m->nccl_size(n) : 0;
}
int zaya_nccl_local_count(const zaya_nccl *n) {
    const zaya_gpu_module *m = n ? opened() : NULL;
    return m ? m->nccl_local_count(n) : 0;
}
int zaya_nccl_rank(const zaya_nccl *n, int local) {
    const zaya_gpu_module *m = n ? opened() : NULL;
    return m ? m->nccl_rank(n, local) : -1;
}
int zaya_nccl_device(const zaya_nccl *n, int local) {
    const zaya_gpu_module *m = n ? opened() : NULL;
    return m ? m->nccl_device(n, local) : -1;
}
zaya_gpu_stream *zaya_nccl_stream(const zaya_nccl *n, int local) {
    const zaya_gpu_module *m = n ? opened() : NULL;
    return m ? m->nccl_stream(n, local) : NULL;
}

zaya_status zaya_nccl_group_start(void) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_group_start();
}
zaya_status zaya_nccl_group_end(void) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_group_end();
}

zaya_status zaya_nccl_allreduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t, zaya_redop op) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_allreduce(n, local, sb, rb, count, (int)t, (int)op);
}
zaya_status zaya_nccl_reduce_scatter(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                     zaya_dist_dtype t, zaya_redop op) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_reduce_scatter(n, local, sb, rb, count, (int)t, (int)op);
}
zaya_status zaya_nccl_allgather(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_allgather(n, local, sb, rb, count, (int)t);
}
zaya_status zaya_nccl_broadcast(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                                zaya_dist_dtype t, int root) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_broadcast(n, local, sb, rb, count, (int)t, root);
}
zaya_status zaya_nccl_reduce(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count, zaya_dist_dtype t,
                             zaya_redop op, int root) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_reduce(n, local, sb, rb, count, (int)t, (int)op, root);
}
zaya_status zaya_nccl_alltoall(const zaya_nccl *n, int local, const void *sb, void *rb, int64_t count,
                               zaya_dist_dtype t) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_alltoall(n, local, sb, rb, count, (int)t);
}
zaya_status zaya_nccl_sendrecv(const zaya_nccl *n, int local, const void *sb, int dst, void *rb, int src, int64_t count,
                               zaya_dist_dtype t) {
    const zaya_gpu_module *m;
    ZAYA_TRY(nccl_module(&m));
    return m->nccl_sendrecv(n, local, sb, dst, rb, src, count, (int)t);
}

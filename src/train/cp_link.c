/* zaya_cp_ops over zaya_dist (zaya/cp_link.h). */
#include "zaya/cp_link.h"

#include <string.h>

#include "zaya/timer.h"

#define CP_TAG 7100 /* + slot */

static zaya_status halo_start(void *ctx, int slot, int dst, const float *send, int src, float *recv, int64_t count) {
    zaya_cp_link *k = ctx;
    const int S = zaya_comm_size(k->comm);
    if (slot < 0 || slot >= ZAYA_CP_LINK_SLOTS || dst >= S || src >= S)
        return zaya_error_set(ZAYA_EINVAL, "context parallelism: halo slot %d, destination %d, source %d (group of %d)",
                              slot, dst, src, S);
    memset(k->req[slot], 0, sizeof k->req[slot]);
    if (src >= 0) ZAYA_TRY(zaya_irecv(k->comm, recv, count, ZAYA_DIST_F32, src, CP_TAG + slot, &k->req[slot][1]));
    if (dst >= 0) ZAYA_TRY(zaya_isend(k->comm, send, count, ZAYA_DIST_F32, dst, CP_TAG + slot, &k->req[slot][0]));
    return ZAYA_OK;
}

static zaya_status halo_wait(void *ctx, int slot) {
    zaya_cp_link *k = ctx;
    const double t0 = zaya_now_s();
    zaya_status s = zaya_dist_waitall(k->req[slot], 2);
    k->wait_s += zaya_now_s() - t0;
    return s;
}

static zaya_status allgather(void *ctx, const float *send, float *recv, int64_t count) {
    zaya_cp_link *k = ctx;
    const double t0 = zaya_now_s();
    zaya_status s = zaya_allgather(k->comm, send, recv, count, ZAYA_DIST_F32);
    k->wait_s += zaya_now_s() - t0;
    return s;
}

static zaya_status reduce_scatter(void *ctx, const float *send, float *recv, int64_t count) {
    zaya_cp_link *k = ctx;
    const double t0 = zaya_now_s();
    zaya_status s = zaya_reduce_scatter(k->comm, send, recv, count, ZAYA_DIST_F32, ZAYA_REDOP_SUM);
    k->wait_s += zaya_now_s() - t0;
    return s;
}

void zaya_cp_link_init(zaya_cp_link *link, const zaya_comm *comm, int zigzag, zaya_cp_ops *ops) {
    memset(link, 0, sizeof *link);
    link->comm = comm;
    *ops = (zaya_cp_ops){.rank = zaya_comm_rank(comm),
                         .zigzag = zigzag,
                         .size = zaya_comm_size(comm),
                         .ctx = link,
                         .halo_start = halo_start,
                         .halo_wait = halo_wait,
                         .allgather = allgather,
                         .reduce_scatter = reduce_scatter};
}

/* The context-parallel exchanges of the model (zaya_cp_ops, zaya/model.h) over a zaya_dist
 * communicator: halos by non-blocking send/receive to the neighbour ranks, K/V by all-gather, their
 * gradients by reduce-scatter (f32). The trainer builds one per CP group; tests use it directly. */
#ifndef ZAYA_CP_LINK_H
#define ZAYA_CP_LINK_H

#include "zaya/dist.h"
#include "zaya/model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_CP_LINK_SLOTS 4

typedef struct zaya_cp_link {
    const zaya_comm *comm;           /* the CP group, ranks in sequence order (not owned) */
    zaya_dist_request req[ZAYA_CP_LINK_SLOTS][2]; /* per halo slot: send, receive */
    double wait_s;                   /* seconds spent waiting in the exchanges */
} zaya_cp_link;

/* ops gets rank and size of comm, the layout (zigzag 0: contiguous chunks, 1: zig-zag pairs) and the
 * four exchanges bound to link. */
void zaya_cp_link_init(zaya_cp_link *link, const zaya_comm *comm, int zigzag, zaya_cp_ops *ops);

#ifdef __cplusplus
}
#endif

#endif

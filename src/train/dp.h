/* Data parallelism for the trainer over the communicator layer (include/zaya/dist.h).
 *
 * The parameter block is cut into buckets in the order backward finishes them: the final norm, each
 * block from the last to the first, then the embedding and input affine. Each bucket's optimizer units
 * are split into `world` contiguous segments (balanced by estimated optimizer cost, whole Muon
 * matrices never split); rank r owns segment r of every bucket.
 *
 * ZeRO-1 (default): as soon as a bucket's gradients are final, a non-blocking reduce-scatter gives
 * each rank the global sum of its segment while backward continues; after backward the owned
 * segments are scaled to the global mean, each rank updates only its units (optimizer state exists
 * only for them), and the updated parameters are all-gathered bucket by bucket.
 * All-reduce mode: non-blocking all-reduce of every bucket, every rank updates every unit. */
#ifndef ZAYA_TRAIN_DP_H
#define ZAYA_TRAIN_DP_H

#include <stdint.h>

#include "zaya/dist.h"
#include "zaya/model.h"
#include "zaya/optim.h"

typedef enum zaya_dp_mode { ZAYA_DP_ZERO1 = 0, ZAYA_DP_ALLREDUCE = 1 } zaya_dp_mode;

typedef struct zaya_dp_bucket {
    int64_t offset, len; /* float range of the parameter block */
    int *counts, *displs; /* [world] segment of each rank, displs relative to offset */
    zaya_dist_request req;
    int launched;
} zaya_dp_bucket;

typedef struct zaya_dp {
    zaya_comm *comm; /* borrowed */
    int rank, world;
    zaya_dp_mode mode;
    zaya_model *model;
    int nbuckets;
    zaya_dp_bucket *b;
    int *layer_bucket; /* [L + 2]: bucket of layer -1 .. L (index layer + 1) */
    float *recv;       /* reduce-scatter landing buffer, one owned segment per bucket */
    int64_t *recv_off; /* [nbuckets] */
    int armed;         /* launch reductions from the backward hook (last micro-batch only) */
    double wait_s, issue_s, gather_s; /* of the current step */
} zaya_dp;

/* Builds buckets and sets each unit's owner in `plan` (ZeRO-1) or leaves every unit to every rank
 * (all-reduce). Call before zaya_optim_init. */
zaya_status zaya_dp_init(zaya_dp *dp, zaya_comm *comm, zaya_dp_mode mode, zaya_model *m, zaya_optim_plan *plan);
void zaya_dp_free(zaya_dp *dp);
/* Arms the backward hook for the next backward pass (the last micro-batch of a step). */
void zaya_dp_arm(zaya_dp *dp);
/* Waits for every reduction and leaves global-mean gradients (ZeRO-1: in the owned segments). */
zaya_status zaya_dp_finish_grads(zaya_dp *dp);
/* After the optimizer step: replicate the owned parameter segments (ZeRO-1; no-op otherwise). */
zaya_status zaya_dp_gather_params(zaya_dp *dp);
/* Sums of small host arrays over ranks, in place and exact in their own type: f64 (loss, squared
 * norms) and i64 (routing counts). Neither allocates. */
zaya_status zaya_dp_allreduce_sum_f64(zaya_dp *dp, double *x, int n);
zaya_status zaya_dp_allreduce_counts(zaya_dp *dp, int64_t *counts, int n);
/* Times the bucket collectives once, blocking, on the current gradients (for the overlap figure). */
double zaya_dp_blocking_comm_seconds(zaya_dp *dp);

#endif

#include "train/dp.h"

#include <stdlib.h>
#include <string.h>

#include "zaya/log.h"
#include "zaya/timer.h"

/* Bucket boundaries in parameter-block order: [0, first block) = embedding + input affine, one bucket
 * per block, [end of the last block, nfloats) = final norm. */
static zaya_status build_buckets(zaya_dp *dp) {
    zaya_model *m = dp->model;
    const int L = (int)m->cfg.num_hidden_layers;
    dp->nbuckets = L + 2;
    dp->b = calloc((size_t)dp->nbuckets, sizeof *dp->b);
    dp->layer_bucket = calloc((size_t)(L + 2), sizeof(int));
    if (!dp->b || !dp->layer_bucket) return zaya_error_set(ZAYA_ENOMEM, "data-parallel buckets");
    int64_t *start = calloc((size_t)(L + 2), sizeof(int64_t));
    if (!start) return zaya_error_set(ZAYA_ENOMEM, "data-parallel buckets");
    for (int l = 0; l <= L + 1; l++) start[l] = -1;
    start[0] = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        if (t->layer >= 0 && start[t->layer + 1] < 0) start[t->layer + 1] = t->offset;
        if (t->layer < 0 && i > 0 && start[L + 1] < 0 && m->tensors[i - 1].layer == L - 1) start[L + 1] = t->offset;
    }
    zaya_status s = ZAYA_OK;
    for (int k = 0; k < dp->nbuckets && s == ZAYA_OK; k++) {
        dp->b[k].offset = start[k];
        dp->b[k].len = (k + 1 < dp->nbuckets ? start[k + 1] : m->nfloats) - start[k];
        dp->b[k].counts = calloc((size_t)dp->world, sizeof(int));
        dp->b[k].displs = calloc((size_t)dp->world, sizeof(int));
        if (!dp->b[k].counts || !dp->b[k].displs) s = zaya_error_set(ZAYA_ENOMEM, "data-parallel buckets");
        else if (dp->b[k].len > 2147483647)
            s = zaya_error_set(ZAYA_ERANGE, "a data-parallel bucket of %lld floats exceeds the backend's int limit",
                               (long long)dp->b[k].len);
    }
    free(start);
    if (s != ZAYA_OK) return s;
    /* bucket of "layer" -1 (embedding) is 0, of block l is l + 1, of the final norm (layer L) is L + 1 */
    for (int l = -1; l <= L; l++) dp->layer_bucket[l + 1] = l + 1;
    return ZAYA_OK;
}

/* Splits every bucket's units into world contiguous segments of about equal optimizer cost. Segment
 * boundaries are unit starts, so a Muon matrix is never split; padding and buffers ride along. */
static zaya_status assign_segments(zaya_dp *dp, zaya_optim_plan *plan) {
    const int W = dp->world;
    int64_t *cut = calloc((size_t)W + 1, sizeof(int64_t)); /* segment r = [cut[r], cut[r+1]) */
    if (!cut) return zaya_error_set(ZAYA_ENOMEM, "data-parallel segments for %d ranks", W);
    for (int k = 0; k < dp->nbuckets; k++) {
        zaya_dp_bucket *bk = &dp->b[k];
        double total = 0;
        for (int u = 0; u < plan->nunits; u++)
            if (plan->units[u].offset >= bk->offset && plan->units[u].offset < bk->offset + bk->len)
                total += plan->units[u].cost;
        cut[0] = bk->offset;
        for (int r = 1; r <= W; r++) cut[r] = bk->offset + bk->len;
        double acc = 0;
        int r = 0;
        for (int u = 0; u < plan->nunits; u++) {
            zaya_optim_unit *un = &plan->units[u];
            if (un->offset < bk->offset || un->offset >= bk->offset + bk->len) continue;
            /* move to the next rank once this one has its share (cumulative cost midpoint rule) */
            while (r + 1 < W && acc + 0.5 * un->cost > total * (double)(r + 1) / W) cut[++r] = un->offset;
            un->owner = dp->mode == ZAYA_DP_ZERO1 ? r : dp->rank;
            acc += un->cost;
        }
        for (int q = r + 1; q < W; q++) cut[q] = bk->offset + bk->len;
        for (int q = 0; q < W; q++) {
            bk->displs[q] = (int)(cut[q] - bk->offset);
            bk->counts[q] = (int)(cut[q + 1] - cut[q]);
        }
    }
    free(cut);
    /* per-rank totals for the assignment table */
    for (int q = 0; q < plan->world_size; q++) {
        plan->rank_cost[q] = 0;
        plan->rank_elems[q] = 0;
        plan->rank_units[q] = 0;
    }
    for (int u = 0; u < plan->nunits; u++) {
        int o = plan->units[u].owner;
        if (o < 0 || o >= plan->world_size) continue;
        plan->rank_cost[o] += plan->units[u].cost;
        plan->rank_elems[o] += plan->units[u].numel;
        plan->rank_units[o]++;
    }
    return ZAYA_OK;
}

static void on_grads_ready(void *ctx, int layer) {
    zaya_dp *dp = ctx;
    if (!dp->armed) return;
    zaya_dp_bucket *bk = &dp->b[dp->layer_bucket[layer + 1]];
    float *g = dp->model->grads + bk->offset;
    double t0 = zaya_now_s();
    zaya_status s;
    if (dp->mode == ZAYA_DP_ZERO1)
        s = zaya_ireduce_scatterv(dp->comm, g, dp->recv + dp->recv_off[bk - dp->b], bk->counts, ZAYA_DIST_F32,
                                  ZAYA_REDOP_SUM, &bk->req);
    else
        s = zaya_iallreduce(dp->comm, g, g, bk->len, ZAYA_DIST_F32, ZAYA_REDOP_SUM, &bk->req);
    ZAYA_ASSERT(s == ZAYA_OK); /* arguments come from the plan; the backend failing here is fatal */
    bk->launched = 1;
    dp->issue_s += zaya_now_s() - t0;
}

zaya_status zaya_dp_init(zaya_dp *dp, zaya_comm *comm, zaya_dp_mode mode, zaya_model *m, zaya_optim_plan *plan) {
    memset(dp, 0, sizeof *dp);
    dp->comm = comm;
    dp->rank = zaya_comm_rank(comm);
    dp->world = zaya_comm_size(comm);
    dp->mode = mode;
    dp->model = m;
    if (plan->world_size != (mode == ZAYA_DP_ZERO1 ? dp->world : 1) && mode == ZAYA_DP_ZERO1)
        return zaya_error_set(ZAYA_EINVAL, "optimizer plan built for %d ranks, world has %d", plan->world_size, dp->world);
    ZAYA_TRY(build_buckets(dp));
    if (mode == ZAYA_DP_ZERO1) {
        ZAYA_TRY(assign_segments(dp, plan));
    } else {
        /* every rank updates everything; the receive buffer only serves the blocking-time calibration */
        for (int k = 0; k < dp->nbuckets; k++)
            for (int q = 0; q < dp->world; q++) dp->b[k].counts[q] = (int)dp->b[k].len;
    }
    dp->recv_off = calloc((size_t)(unsigned)dp->nbuckets, sizeof(int64_t));
    if (!dp->recv_off) return zaya_error_set(ZAYA_ENOMEM, "data-parallel receive offsets");
    size_t total = 0;
    for (int k = 0; k < dp->nbuckets; k++) {
        dp->recv_off[k] = (int64_t)total;
        total += (size_t)dp->b[k].counts[dp->rank];
    }
    dp->recv = malloc(sizeof(float) * (total > 0 ? total : 1));
    if (!dp->recv || !dp->recv_off) return zaya_error_set(ZAYA_ENOMEM, "data-parallel receive buffer");
    m->on_grads_ready = on_grads_ready;
    m->on_grads_ready_ctx = dp;
    return ZAYA_OK;
}

void zaya_dp_free(zaya_dp *dp) {
    if (dp->model) {
        dp->model->on_grads_ready = NULL;
        dp->model->on_grads_ready_ctx = NULL;
    }
    for (int k = 0; k < dp->nbuckets && dp->b; k++) {
        free(dp->b[k].counts);
        free(dp->b[k].displs);
    }
    free(dp->b);
    free(dp->layer_bucket);
    free(dp->recv);
    free(dp->recv_off);
    memset(dp, 0, sizeof *dp);
}

void zaya_dp_arm(zaya_dp *dp) {
    dp->armed = 1;
    dp->wait_s = dp->issue_s = dp->gather_s = 0;
}

zaya_status zaya_dp_finish_grads(zaya_dp *dp) {
    dp->armed = 0;
    const float inv = 1.0f / (float)dp->world;
    double t0 = zaya_now_s();
    for (int k = 0; k < dp->nbuckets; k++) {
        zaya_dp_bucket *bk = &dp->b[k];
        if (!bk->launched) return zaya_error_set(ZAYA_EINVAL, "bucket %d was never reduced (backward hook not armed)", k);
        ZAYA_TRY(zaya_dist_wait(&bk->req));
        bk->launched = 0;
    }
    dp->wait_s += zaya_now_s() - t0;
    float *g = dp->model->grads;
    for (int k = 0; k < dp->nbuckets; k++) {
        zaya_dp_bucket *bk = &dp->b[k];
        if (dp->mode == ZAYA_DP_ZERO1) {
            float *dst = g + bk->offset + bk->displs[dp->rank];
            const float *src = dp->recv + dp->recv_off[k];
            for (int64_t i = 0; i < bk->counts[dp->rank]; i++) dst[i] = src[i] * inv;
        } else {
            float *x = g + bk->offset;
            for (int64_t i = 0; i < bk->len; i++) x[i] *= inv;
        }
    }
    return ZAYA_OK;
}

zaya_status zaya_dp_gather_params(zaya_dp *dp) {
    if (dp->mode != ZAYA_DP_ZERO1 || dp->world == 1) return ZAYA_OK;
    double t0 = zaya_now_s();
    for (int k = 0; k < dp->nbuckets; k++) {
        zaya_dp_bucket *bk = &dp->b[k];
        ZAYA_TRY(zaya_iallgatherv(dp->comm, dp->model->params + bk->offset, bk->counts, bk->displs, ZAYA_DIST_F32, &bk->req));
    }
    for (int k = 0; k < dp->nbuckets; k++) ZAYA_TRY(zaya_dist_wait(&dp->b[k].req));
    dp->gather_s += zaya_now_s() - t0;
    return ZAYA_OK;
}

/* In place, in the value's own type on the wire (no f32 round trip, no staging buffer): the sums are
 * those of doubles and exact 64-bit integer counts. */
zaya_status zaya_dp_allreduce_sum_f64(zaya_dp *dp, double *x, int n) {
    if (dp->world == 1) return ZAYA_OK;
    return zaya_allreduce_f64(dp->comm, x, x, n, ZAYA_REDOP_SUM);
}

zaya_status zaya_dp_allreduce_counts(zaya_dp *dp, int64_t *counts, int n) {
    if (dp->world == 1) return ZAYA_OK;
    return zaya_allreduce_i64(dp->comm, counts, counts, n, ZAYA_REDOP_SUM);
}

double zaya_dp_blocking_comm_seconds(zaya_dp *dp) {
    if (dp->world == 1) return 0;
    double t0 = zaya_now_s();
    for (int k = 0; k < dp->nbuckets; k++) {
        zaya_dp_bucket *bk = &dp->b[k];
        float *g = dp->model->grads + bk->offset;
        if (dp->mode == ZAYA_DP_ZERO1) {
            if (zaya_ireduce_scatterv(dp->comm, g, dp->recv + dp->recv_off[k], bk->counts, ZAYA_DIST_F32, ZAYA_REDOP_SUM,
                                      &bk->req) == ZAYA_OK)
                zaya_dist_wait(&bk->req);
        } else {
            zaya_allreduce(dp->comm, g, dp->recv + dp->recv_off[k], bk->len, ZAYA_DIST_F32, ZAYA_REDOP_SUM);
        }
    }
    return zaya_now_s() - t0;
}

/* Optimizers: Muon for hidden matrices, AdamW for everything else, over UNITS of the parameter block.
 *
 * A unit is a contiguous float range of the parameter block with a kind:
 *   - MUON: one 2-D matrix (a 2-D tensor, or ONE expert of a stacked [E, r, c] tensor). Newton-Schulz
 *     always runs on a whole matrix, so a unit is never split.
 *   - ADAMW: a whole small tensor, or a row range of a large one (the embedding), so that its
 *     elementwise work can be spread over ranks.
 * Buffers (ZAYA_OPT_NONE: the balancing biases) are never units.
 *
 * zaya_optim_plan_build() lists the units and gives each an owner rank, balancing an estimated cost
 * greedily (largest first onto the least loaded rank). zaya_optim_init() allocates state (AdamW m, v;
 * Muon momentum) and Newton-Schulz scratch for the units owned by one rank only; a step updates only
 * those units, reading only their gradients. Single process: world 1, rank 0. Under ZeRO-1 (issue 5)
 * each rank needs fully reduced gradients of its units and all-gathers the updated parameters.
 *
 * Weight decay (decoupled, p <- p * (1 - lr * wd)) applies to matrices: every Muon unit and the
 * embedding. Norm gains, biases, residual scales, EDA scales, conv kernels and temperatures are not
 * decayed: they set scales or offsets whose pull toward 0 has no regularising meaning (a zero gain or
 * temperature disables its path), and the conv kernels are tiny per-channel filters.
 *
 * Muon (KellerJordan/Muon with Moonshot's RMS matching): buf <- b*buf + (1-b)*g; u = (1-b)*g + b*buf
 * (Nesterov) or buf; X = u / (||u||_F + 1e-7), transposed when rows > cols; 5 quintic Newton-Schulz
 * iterations A = X X^T, X <- a X + (b A + c A^2) X with (a, b, c) = (3.4445, -4.7750, 2.0315);
 * p <- p * (1 - lr*wd) - lr * 0.2 * sqrt(max(rows, cols)) * X. The 0.2*sqrt(max) factor makes the
 * update RMS match AdamW's, so both kinds share one lr and wd.
 *
 * AdamW (as torch.optim.AdamW): p <- p*(1 - lr*wd); m <- b1 m + (1-b1) g; v <- b2 v + (1-b2) g^2;
 * p <- p - (lr / (1 - b1^t)) * m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
#ifndef ZAYA_OPTIM_H
#define ZAYA_OPTIM_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "zaya/matmul.h"
#include "zaya/model.h"
#include "zaya/state.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum zaya_unit_kind { ZAYA_UNIT_ADAMW = 0, ZAYA_UNIT_MUON = 1 } zaya_unit_kind;

typedef struct zaya_optim_unit {
    zaya_unit_kind kind;
    int tensor;          /* index in the tensor table */
    int expert;          /* matrix index within a stacked tensor, -1 otherwise */
    char tensor_name[96];
    int64_t offset;      /* floats from the start of the parameter block */
    int64_t numel;
    int64_t rows, cols;  /* Muon: the matrix; AdamW: rows of this range x elements per row */
    int64_t start;       /* AdamW row split: element offset of the range within its tensor (else 0) */
    int64_t full_numel;  /* elements of the whole state tensor this unit belongs to */
    int decay;           /* weight decay applies */
    double cost;         /* estimated work (FLOP equivalents) */
    int owner;
} zaya_optim_unit;

typedef struct zaya_optim_plan {
    int world_size;
    int nunits;
    zaya_optim_unit *units; /* in parameter-block order */
    double *rank_cost;      /* [world_size] */
    int64_t *rank_elems;    /* [world_size] */
    int *rank_units;        /* [world_size] */
    int nbuffers;           /* ZAYA_OPT_NONE tensors (not units) */
    int64_t buffer_elems;
} zaya_optim_plan;

/* AdamW tensors larger than this many elements are split into row ranges of about this size. */
#define ZAYA_OPTIM_ADAMW_SPLIT_DEFAULT (1 << 20)

/* Builds the units and the owner of each. adamw_split: see above (0 = default, < 0 = never split). */
zaya_status zaya_optim_plan_build(const zaya_tensor_info *tensors, int ntensors, int world_size, int64_t adamw_split,
                                  zaya_optim_plan *plan);
void zaya_optim_plan_free(zaya_optim_plan *plan);
/* max / min per-rank cost (1 = perfect; ranks without units make it infinite). */
double zaya_optim_plan_imbalance(const zaya_optim_plan *plan);
/* The assignment table: per-class counts (Muon matrices, AdamW ranges with/without decay, buffers)
 * and per-rank units, elements, cost share. The trainer prints it at start (rank 0). */
void zaya_optim_plan_print(const zaya_optim_plan *plan, FILE *f);
/* Newton-Schulz FLOPs of one rows x cols matrix (5 iterations, multiply-add = 2). */
double zaya_muon_ns_flops(int64_t rows, int64_t cols, int steps);

/* Newton-Schulz runs the owned Muon matrices of one shape in batches, each GEMM one batched oneDNN
 * call on the whole thread pool. By default a batch holds up to this many iterate floats per thread
 * (one 256 x 512 matrix: a thread's matrices and their Gram matrices stay in its L2 cache through the
 * five iterations); a shape with more matrices runs in several batches of equal size. */
#define ZAYA_MUON_THREAD_FLOATS ((int64_t)1 << 17)

/* How the Newton-Schulz batches share the threads (same bits either way):
 *  POOL: batches of threads x ZAYA_MUON_THREAD_FLOATS, one after another, every GEMM a batched call on
 *        the whole pool (fast when the threads run together; one barrier per GEMM and pass);
 *  THREADS: batches of ZAYA_MUON_THREAD_FLOATS, one per thread at a time, single-threaded with the
 *        GEMMs serialised (no barrier: robust when other processes share the cores);
 *  AUTO (default): the one measured faster on this run, re-checked every 16 steps. */
typedef enum zaya_muon_schedule {
    ZAYA_MUON_SCHEDULE_AUTO = 0,
    ZAYA_MUON_SCHEDULE_POOL = 1,
    ZAYA_MUON_SCHEDULE_THREADS = 2
} zaya_muon_schedule;

typedef struct zaya_optim_config {
    double weight_decay;          /* decoupled, on decayed units of both kinds (default 0.1) */
    double adam_beta1, adam_beta2; /* 0.9, 0.95 */
    double adam_eps;              /* 1e-8 */
    double muon_momentum;         /* 0.95 */
    int muon_nesterov;            /* 1 */
    int muon_ns_steps;            /* 5 */
    double muon_lr_scale;         /* Muon lr = lr * this (1: shared lr thanks to RMS matching) */
    zaya_dtype muon_ns_dtype;     /* F32 (default) or BF16 GEMM inputs in Newton-Schulz */
    int64_t muon_batch_floats;    /* most iterate floats per Newton-Schulz batch; 0 (default): threads x
                                     ZAYA_MUON_THREAD_FLOATS (pool) or ZAYA_MUON_THREAD_FLOATS
                                     (per thread). At least one matrix per batch. */
    int muon_schedule;            /* zaya_muon_schedule (default AUTO) */
} zaya_optim_config;

void zaya_optim_config_default(zaya_optim_config *c);

/* Owned Muon matrices of one Newton-Schulz shape: m x n with m <= n (a tall matrix is transposed), in
 * block order, orthogonalised `batch` at a time (the last batch may be smaller). */
typedef struct zaya_ns_group {
    int64_t m, n;
    int count, batch, tbatch; /* batch: pool schedule; tbatch: per-thread schedule */
    int *units; /* [count] indices into plan.units */
} zaya_ns_group;

/* One batch of the per-thread schedule: matrices [first, first + mats) of a group. */
typedef struct zaya_ns_task {
    int group, first, mats;
    double cost;
} zaya_ns_task;

/* Newton-Schulz scratch for the largest batch of any group: iterates x, y [batch, m, n], Gram matrices
 * a, b [batch, m, m], their bf16 copies (bf16 Newton-Schulz only) and per-matrix norms. */
typedef struct zaya_ns_scratch {
    float *x, *y, *a, *b;
    uint16_t *xh, *ah, *bh;
    float *denom;
    int64_t cap_mn, cap_mm;
    int cap_mats;
} zaya_ns_scratch;

typedef struct zaya_optim {
    zaya_optim_config cfg;
    zaya_optim_plan plan; /* own copy */
    int rank;
    int64_t adamw_steps, muon_steps; /* completed steps (bias correction uses adamw_steps + 1) */
    /* per owned unit (indexed like plan.units; NULL for units of other ranks) */
    float **exp_avg, **exp_avg_sq, **momentum;
    float *state_block; /* one allocation backing every state array */
    int64_t state_floats;
    /* owned Muon units grouped by Newton-Schulz shape (first appearance in block order) */
    zaya_ns_group *ns_groups;
    int nns_groups;
    int *ns_units; /* backs every group's units */
    zaya_ns_scratch ns;        /* pool schedule (and zaya_muon_orthogonalize) */
    zaya_ns_scratch *ns_slots; /* per-thread schedule: one per thread (none on one thread) */
    int nns_slots;
    zaya_ns_task *ns_tasks; /* per-thread schedule's batches, by decreasing cost */
    int nns_tasks;
    double muon_sched_s[2]; /* last measured Muon step time of the pool and per-thread schedules */
    int muon_last_schedule; /* schedule of the last Muon step */
    int *adamw_order;   /* owned AdamW units by decreasing size (dynamic schedule, one unit per thread) */
    int nadamw;
    double *unit_sums;  /* [nunits] per-unit squared gradient norms */
    double muon_ns_s;   /* seconds the last Muon step spent in Newton-Schulz (profiling) */
} zaya_optim;

/* Allocates state and scratch for the units `rank` owns (copies the plan). */
zaya_status zaya_optim_init(zaya_optim *opt, const zaya_optim_plan *plan, const zaya_optim_config *cfg, int rank);
void zaya_optim_free(zaya_optim *opt);

/* Updates the owned units of `params` from `grads` (both full parameter blocks) with this step's
 * lr and g <- grad_scale * grad (the clipping factor; 1 for none). Never allocates. */
void zaya_optim_step_adamw(zaya_optim *opt, float *params, const float *grads, double lr, double grad_scale);
void zaya_optim_step_muon(zaya_optim *opt, float *params, const float *grads, double lr, double grad_scale);
/* Both. */
void zaya_optim_step(zaya_optim *opt, float *params, const float *grads, double lr, double grad_scale);

/* Sum of squared gradients over the owned units (double, deterministic for any thread count). Under
 * MPI the trainer all-reduces the partial sums; at world 1 it is the full squared norm. A NaN or Inf
 * gradient returns ZAYA_ENUMERIC with a message naming the first offending tensor (in block order),
 * the expert and the element; *sqnorm is then NaN or Inf. */
zaya_status zaya_optim_grad_sqnorm_local(zaya_optim *opt, const float *grads, double *sqnorm);
/* Clipping factor for a global norm: min(1, max_norm / (norm + 1e-6)) (as torch clip_grad_norm_);
 * max_norm <= 0 disables clipping (1). */
double zaya_optim_clip_scale(double norm, double max_norm);

/* Newton-Schulz on one rows x cols matrix g (row-major) into out (same shape), using opt's scratch
 * (the matrix must fit the largest owned Muon unit). Exposed for tests and benchmarks. */
void zaya_muon_orthogonalize(zaya_optim *opt, const float *g, int64_t rows, int64_t cols, float *out);

/* Checkpoint hooks. Export appends the state of every owned unit to `set` as pieces
 * "optim.<tensor>[.<expert>].exp_avg" / ".exp_avg_sq" (AdamW) or ".momentum" (Muon), whose `start`
 * locates row-split ranges within the whole tensor's state; copy = 1 snapshots. The scalars (step
 * counters, config) go into a new JSON object. Import fills a freshly initialised optimizer: every
 * owned piece must be present with the same full size (errors name the unit); the step counters come
 * from the JSON. */
zaya_status zaya_optim_state_export(const zaya_optim *opt, zaya_state_set *set, int copy, cJSON **scalars);
zaya_status zaya_optim_state_import(zaya_optim *opt, const zaya_state_set *set, const cJSON *scalars);

#ifdef __cplusplus
}
#endif

#endif

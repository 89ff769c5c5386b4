/* Private state of the trainer, shared by trainer.c (the loop) and report.c (logs, plots, samples). */
#ifndef ZAYA_TRAIN_INTERNAL_H
#define ZAYA_TRAIN_INTERNAL_H

#include <stdio.h>

#include "train/dp.h"
#include "zaya/balance.h"
#include "zaya/ckpt.h"
#include "zaya/curriculum.h"
#include "zaya/data.h"
#include "zaya/engine.h"
#include "zaya/cp_link.h"
#include "zaya/model.h"
#include "zaya/optim.h"
#include "zaya/spike.h"
#include "zaya/tokenizer.h"
#include "zaya/train.h"

/* Expert load of one step over all MoE layers: the worst layer's largest and smallest expert share
 * and MaxVio, the mean normalised entropy, and per layer its load statistics and expert shares
 * (point into the trainer). */
typedef struct zaya_balance_stats {
    double max_share, min_share, max_vio, entropy;
    const double *layer_max_share;
    const zaya_load_stats *layer; /* [L] */
    const double *expert_share;   /* [L * E] share of the layer's expert-routed tokens */
} zaya_balance_stats;

typedef struct zaya_step_metrics {
    double loss, grad_norm, lr, seconds;
    int64_t tokens;
    int skipped;
    zaya_balance_stats balance;
    double comm_wait_s, gather_s; /* data parallel: waiting for gradient reductions, parameter gather */
    int cp;                        /* context-parallel ranks per sequence */
    zaya_cp_traffic cp_traffic;    /* bytes this rank received in the CP exchanges of the step */
    double cp_wait_s;              /* seconds it waited in them (part of comm_wait_s) */
} zaya_step_metrics;

/* Growable series kept for the end-of-run plots. */
typedef struct zaya_series {
    double *x, *y;
    int n, cap;
} zaya_series;

typedef struct zaya_train_history {
    zaya_series loss, lr, tok_s;
    zaya_series val[ZAYA_DATA_MAX_SOURCES];
    zaya_series val_mean;
    zaya_series *layer_max_share; /* per MoE layer */
    int nlayers;
    /* expert shares of every logged step for the heatmap: rows of nlayers * num_experts */
    double *share_rows, *share_steps;
    int nshare, share_cap, num_experts;
} zaya_train_history;

typedef struct zaya_trainer {
    const zaya_train_opts *opts;
    int rank, world;
    zaya_comm *comm;
    zaya_dp dp;
    /* context parallelism of the current phase: cp consecutive ranks share each sequence; the loader
     * serves dp_size = world / cp data-parallel groups, this rank's is dp_rank = rank / cp */
    int cp, dp_rank, dp_size;
    zaya_comm *cp_comm; /* the CP group (NULL when cp == 1) */
    zaya_cp_link cp_link;
    double comm_wait_s, gather_s; /* totals */
    char data_dir[4096];
    char tokenizer_path[4096];
    zaya_run run;
    zaya_dataset train_ds, val_ds;
    zaya_loader loader;
    zaya_tokenizer *tokenizer;
    zaya_model model;
    /* the step on the engine (device.c): NULL for the CPU trainer */
    zaya_backend *be;
    zaya_engine *eng;
    zaya_nccl *nccl; /* the engine's data parallelism on GPUs (world > 1) */
    int64_t plan_T; /* tokens per sequence of the current plan (this rank's share under CP) */
    zaya_optim_plan plan;
    zaya_optim opt;
    zaya_balancer balancer;
    zaya_spike_guard guard_loss, guard_gnorm;
    double *layer_max_share; /* [layers] of the current step */
    zaya_load_stats *layer_load; /* [layers] of the current step */
    double *expert_share;        /* [layers * E] of the current step */
    int64_t step, skipped;
    int64_t micro, accum; /* micro-batch size and micro-batches per step */
    int64_t planned_batch; /* global batch the buffers and the model plan were made for */
    int32_t *batch, *inputs, *targets;
    size_t batch_cap;
    int64_t *route_counts; /* summed over the micro-batches of a step */
    /* [L spread sums | L * E expert-score sums] (zaya_model.route_spread / route_psum), same
     * summation, one all-reduce */
    double *route_stats;
    double *route_sigma;   /* [L] the balancer's step unit of this step */
    int64_t *recount;      /* [L * (E + 1)] selection recounted by the balancer's inner iterations */
    /* balancing in the forward (ZAYA_BALANCE_FORWARD): the balancer's update count when the step
     * began, the micro-batch in flight, and the first error of a hook (checked after the forward) */
    double *bal_scratch;   /* [2E + 2] the hook's all-reduce */
    int bal_iters;         /* opts->balance_iters resolved for the mode */
    int64_t bal_t0;
    double bal_wait_s;     /* seconds in the hook's all-reduces this step (world > 1) */
    int64_t bal_mb;
    zaya_status bal_status;
    double peak_gflops;
    FILE *metrics;
    zaya_train_history hist;
    /* checkpoints */
    char ckpt_dir[4096];
    struct zaya_ckpt_writer *ckpt_pending; /* async save in flight */
    int64_t ckpt_pending_step;             /* ... of this step */
    zaya_ckpt_snapshot snapshot;
    zaya_ckpt_resolution ckpt_res; /* how the resumed checkpoint compares with `latest` */
    int lock_fd, ckpt_lock_fd;     /* rank 0: flocks of the output and checkpoint directories (-1: none) */
    double ckpt_stall_s;
    int64_t ckpt_saves;
} zaya_trainer;

/* device.c: the engine and its backend when the options ask for them (after a resume), the device's
 * matmul peak in GFLOP/s for MFU (0: the caller measures the CPU's). */
zaya_status zaya_train_engine_start(zaya_trainer *t);
/* Before anything else is prepared: the device the options name exists (cheap, no allocation). */
zaya_status zaya_train_engine_probe(const zaya_train_opts *o);
zaya_status zaya_train_engine_peak(zaya_trainer *t, double *gflops);
/* peak.c: the matmul peak for MFU when the engine names none, and its source in words:
 * --peak-gflops, the machine profile (--profile, ZAYA_PROFILE), the host's cached peak, or (labelled,
 * then cached by rank 0) a start-up measurement. */
zaya_status zaya_train_peak_resolve(const zaya_train_opts *o, int rank, double *gflops, char *source, size_t cap);
/* device.c: the data-parallel gradient reduction (armed before the last micro-batch's backward,
 * finished after it) and the parameter sharing after the optimizer step, for the step's memory. */
void zaya_train_grads_arm(zaya_trainer *t);
zaya_status zaya_train_grads_finish(zaya_trainer *t);
zaya_status zaya_train_params_share(zaya_trainer *t);
/* The engine's in-place data-parallel sum (zaya_engine_allreduce_fn; ctx is the trainer). */
zaya_status zaya_train_engine_allreduce(void *ctx, float *buf, int64_t n);
zaya_status zaya_train_checkpoint_save(zaya_trainer *t, int64_t step, int64_t tokens);
zaya_status zaya_train_checkpoint_wait(zaya_trainer *t);
/* After a step: a background save that has finished is joined; its failure is returned then. */
zaya_status zaya_train_checkpoint_poll(zaya_trainer *t);
zaya_status zaya_train_checkpoint_resume(zaya_trainer *t, int64_t *tokens, int *found);

/* lifeline.c: rank 0 locks the output (and checkpoint) directory; collective. */
zaya_status zaya_train_lock_outputs(zaya_trainer *t);
void zaya_train_unlock_outputs(zaya_trainer *t);

zaya_status zaya_train_validate(zaya_trainer *t, const zaya_step_info *si, double *per_source, double *mean);
/* report.c records a validation the trainer ran (history, metrics.jsonl, the validation line). */
void zaya_train_log_eval(zaya_trainer *t, const double *per_source, double mean, double seconds, double run_t0);
void zaya_train_log_step(zaya_trainer *t, const zaya_step_info *si, const zaya_step_metrics *sm, int64_t tokens,
                         double run_t0);
zaya_status zaya_train_report(zaya_trainer *t, const zaya_step_info *last);
void zaya_train_history_free(zaya_train_history *h);
void zaya_train_history_summary(const zaya_train_history *h, zaya_train_result *res);
/* A resumed run: its history before step START from the metrics.jsonl at PATH (rank 0). */
void zaya_train_history_load(zaya_trainer *t, const char *path, int64_t start);

#endif

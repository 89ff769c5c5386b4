/* The trainer: one curriculum run of a ZAYA1 model (data, model, optimizers, balancing, metrics).
 * `zaya train` is a thin CLI over this. */
#ifndef ZAYA_TRAIN_H
#define ZAYA_TRAIN_H

#include <stdint.h>

#include "zaya/dtype.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_train_opts {
    const char *config;   /* model preset or config.json (default zaya1-tiny) */
    const char *run_path; /* run file; NULL = the built-in 3-phase run */
    const char *data_dir; /* shards + tokenizer.json; NULL = build the built-in corpus in <out>/data */
    const char *out_dir;
    zaya_dtype dtype;
    int threads;
    int64_t max_steps;     /* stop after this many steps (0 = the whole run) */
    int64_t micro_batch;   /* sequences per forward/backward (0 = the whole local batch) */
    int optimizer_muon;    /* 1: Muon for hidden matrices + AdamW (default); 0: AdamW everywhere */
    double lr_scale;       /* multiplies the run's learning rates (default 1) */
    double weight_decay;
    double clip;           /* global grad-norm clip (0 = none) */
    double spike_z;        /* robust z-score above which an update is skipped (0 = off) */
    double balance_lr;     /* step size of the balancing-bias controller (in balance_units) */
    int64_t balance_warmup;/* steps over which that step size ramps up linearly from 0 (default 0) */
    int balance_rule;      /* zaya_balance_rule: ZAYA1's Adam rule (default) or the sign rule */
#define ZAYA_TRAIN_BALANCE_ITERS_FORWARD 512
#define ZAYA_TRAIN_BALANCE_ITERS_STEP 8
    int balance_iters;     /* iterations on a batch's own scores: per MoE block and forward (mode forward: the
                              update, then at most balance_iters - 1 refinement recounts, default 512; the
                              refinement usually stops far earlier, once balanced) or per step (mode step:
                              updates, default 8); 0 = the mode's default */
    double balance_drift;  /* gain of the controller's drift compensation (default 1, 0 = off) */
    int balance_units;     /* zaya_balance_units: step in score-spread units (default) or absolute */
    int balance_mode;      /* zaya_balance_mode: in every training forward on the batch (default) or after the step */
    int64_t eval_every;    /* steps between validation passes (0 = only at start and end) */
    int64_t eval_batches;  /* batches per source per validation pass */
    int64_t log_every;
    int64_t samples;       /* generated samples at the end */
    int64_t sample_tokens;
    double peak_gflops;    /* matmul peak for MFU; 0 = the machine profile, the host's cached peak, or measured */
    int64_t seed;          /* >= 0: the run's seed (data order, initialization) instead of the run file's; -1: the file's */
    const char *profile;   /* machine profile (zaya bench all's profile.json) for that peak; NULL: ZAYA_PROFILE */
    int dp_allreduce;      /* data parallel: 0 = ZeRO-1 (default), 1 = plain all-reduce */
    int cp;                /* context-parallel ranks per sequence for phases whose run file sets no "cp"
                              (0 or 1: none); the world is DP x CP, CP groups are consecutive ranks */
    int cp_contiguous;     /* CP layout: 0 = zig-zag (rank r holds chunks r and 2 CP - 1 - r: balanced causal
                              attention, default), 1 = one contiguous chunk per rank */
    const char *ckpt_dir;  /* checkpoints (default OUT/ckpt); the run resumes from its latest */
    int64_t save_every;    /* steps between checkpoints (0 = only at the end) */
    int keep_last, keep_every;
    int async_save;        /* single process: write checkpoints on a background thread */
    int no_resume;         /* start fresh even when a checkpoint exists */
    int quiet;
    const char *device;    /* "cpu" (NULL: the same) or "cuda[:N]": the step on that device's engine */
    int engine;            /* with device cpu: the engine over the CPU reference backend (checks the device path) */
} zaya_train_opts;

void zaya_train_opts_default(zaya_train_opts *o);

/* Summary of a finished run. */
typedef struct zaya_train_result {
    int64_t steps, tokens, skipped_updates; /* in this invocation (attempt) */
    int64_t run_steps, run_tokens, start_step; /* of the whole run; start_step: where this attempt resumed (0: fresh) */
    int preempted; /* stopped early on SIGTERM/SIGINT after saving a checkpoint (exit ZAYA_EXIT_PREEMPTED) */
    double first_val_loss, last_val_loss;     /* of the whole run, a resumed one included (its metrics.jsonl) */
    double first_train_loss, last_train_loss; /* likewise */
    double seconds, tokens_per_s, mfu;
    int world, rank;
    int dp_size, cp; /* the last phase's split of the world: data-parallel groups x context-parallel ranks */
    double comm_wait_s, comm_blocking_s, gather_s; /* summed over steps (rank 0) */
    double checkpoint_stall_s; /* mean training stall per checkpoint save */
} zaya_train_result;

zaya_status zaya_train_run(const zaya_train_opts *o, zaya_train_result *res);

/* Stop requests (SIGINT, SIGTERM). The first asks the running training to checkpoint at the end of its
 * step and return with res->preempted set; a second terminates the process. zaya_train_run installs
 * the handler. A request stays pending until zaya_train_stop_clear, so one that arrives after a run's
 * last step or between two runs in one process is not lost: a caller that runs several trainings
 * (zaya study) installs the handler for its whole duration and checks zaya_train_stop_requested()
 * before each run; a training started with a request pending stops after its first step. */
void zaya_train_stop_handler_install(void);
int zaya_train_stop_requested(void);
void zaya_train_stop_clear(void);

/* Builds the built-in corpus in dir (idempotent): a 4096-token byte-level BPE trained on the fortunes
 * package's English text and C headers from /usr/include, and shards of both ("prose", "code"). */
zaya_status zaya_train_prepare_builtin_data(const char *dir, int64_t vocab_size);

#ifdef __cplusplus
}
#endif

#endif

/* Training curriculum: a run is a list of phases, each with a token budget, a mixture of data
 * sources, a sequence length, a global batch (optionally ramped), a RoPE theta and its segment of
 * the learning-rate schedule. Run files are JSON (format in docs/data-format.md); the trainer maps
 * every step to its phase and hyper-parameters with zaya_run_step(). */
#ifndef ZAYA_CURRICULUM_H
#define ZAYA_CURRICULUM_H

#include <stdint.h>
#include <cjson/cJSON.h>

#include "zaya/data.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_RUN_MAX_PHASES 16
#define ZAYA_RUN_MAX_PATTERNS 8
/* Upper bounds of the integer keys: with them batch * seq_len and every token and step total of a
 * run fit int64 with room to spare (errors name the key and the bound). */
#define ZAYA_RUN_MAX_SEQ_LEN (1ll << 22) /* seq_len, seq_multiple (as ZAYA_CONFIG_MAX_POSITIONS) */
#define ZAYA_RUN_MAX_BATCH (1ll << 24)   /* batch, batch.from, batch_multiple (sequences) */
#define ZAYA_RUN_MAX_TOKENS (1ll << 50)  /* tokens, batch.ramp_tokens, lr.warmup_tokens of a phase */

typedef enum zaya_lr_decay { ZAYA_LR_COSINE, ZAYA_LR_WSD } zaya_lr_decay;

typedef struct zaya_phase {
    char name[ZAYA_DATA_NAME_MAX];
    int64_t tokens; /* token budget; the phase ends at the first step that reaches it */
    int nsources;
    char source[ZAYA_DATA_MAX_SOURCES][ZAYA_DATA_NAME_MAX];
    double weight[ZAYA_DATA_MAX_SOURCES]; /* >= 0, not all zero */
    int64_t seq_len;
    int64_t batch;            /* global batch in sequences once any ramp is over */
    int64_t batch_from;       /* ramp start (== batch without a ramp) */
    int64_t batch_ramp_tokens; /* linear ramp length in tokens (0 = none) */
    double rope_theta;
    int64_t cp;               /* context-parallel ranks per sequence (0: not set, the trainer's --cp) */
    double lr_peak, lr_final;
    int64_t warmup_tokens;    /* linear warmup from 0 at the start of the phase */
    zaya_lr_decay decay;
    double decay_fraction;    /* wsd: last fraction of the post-warmup tokens spent decaying */
    /* derived by zaya_run_resolve */
    int64_t first_step, steps;
    int64_t first_token;      /* run tokens before the phase */
    int64_t ramp_steps;       /* steps whose batch is still ramping */
    int64_t *ramp_tokens;     /* ramp_steps + 1 entries: phase tokens before each ramp step */
} zaya_phase;

/* Where a named source's shards live: explicit train/validation patterns or, by default,
 * <data_dir>/<name>-train-*.ztok and <data_dir>/<name>-val-*.ztok. */
typedef struct zaya_run_source {
    char name[ZAYA_DATA_NAME_MAX];
    int ntrain, nval;
    char *train[ZAYA_RUN_MAX_PATTERNS];
    char *val[ZAYA_RUN_MAX_PATTERNS];
    uint64_t vocab_size; /* for Megatron / llm.c token files (0: not given) */
    uint32_t eos_id;     /* their document separator (ZAYA_SHARD_NO_EOS: not given) */
} zaya_run_source;

typedef struct zaya_run {
    char name[64];
    uint64_t seed;
    char *data_dir;
    int64_t seq_multiple;   /* every seq_len is a multiple of this (context-parallel split, kernels) */
    int64_t batch_multiple; /* every global batch is a multiple of this; world sizes must divide it */
    int nsources;
    zaya_run_source sources[ZAYA_DATA_MAX_SOURCES]; /* union of the phases' sources */
    int nphases;
    zaya_phase phases[ZAYA_RUN_MAX_PHASES];
    int64_t total_steps, total_tokens;
} zaya_run;

/* Parses and validates (errors name the phase index and key), resolves defaults and derives the
 * step plan. `what` names the input in messages (a path). */
zaya_status zaya_run_parse(const cJSON *json, const char *what, zaya_run *run);
zaya_status zaya_run_load(const char *path, zaya_run *run);
/* The built-in 3-phase run modelled on the paper (broad text; upweighted code; context extension),
 * sized for a small CPU run over sources "prose" and "code" in data_dir. */
zaya_status zaya_run_default(const char *data_dir, zaya_run *run);
extern const char zaya_run_default_json[];
void zaya_run_free(zaya_run *run);

/* The resolved run (every default filled in, plus the step plan) as JSON; parsing it gives the same run. */
zaya_status zaya_run_to_json(const zaya_run *run, cJSON **out);
/* Writes <dir>/run.json atomically. */
zaya_status zaya_run_write_resolved(const zaya_run *run, const char *dir);

/* Errors unless world_size (the data-parallel ranks: the world / CP) divides every global batch of the run. */
zaya_status zaya_run_check_world(const zaya_run *run, int world_size);

typedef struct zaya_step_info {
    int phase;
    int64_t step_in_phase;
    int64_t seq_len;
    int64_t global_batch;   /* sequences */
    double rope_theta;
    int64_t cp;             /* the phase's "cp" (0: not set) */
    double lr;
    int64_t tokens_before;  /* run tokens consumed before this step */
    int64_t phase_tokens_before;
    int phase_start;        /* first step of its phase: the loader's mixture and length change here */
} zaya_step_info;

/* Maps step in [0, total_steps) to its phase and hyper-parameters. */
zaya_status zaya_run_step(const zaya_run *run, int64_t step, zaya_step_info *out);

/* Points the loader at a phase: its sequence length and source weights (a no-op when they are already
 * in effect, as after a resume). Call at every step whose info has phase_start set, and after restore. */
zaya_status zaya_run_set_loader_phase(const zaya_run *run, int phase, zaya_loader *loader);

/* Opens the training (val = 0) or validation (val = 1) shards of every source of the run. */
zaya_status zaya_run_open_dataset(const zaya_run *run, int val, int verify_checksum, zaya_dataset *ds);

#ifdef __cplusplus
}
#endif

#endif

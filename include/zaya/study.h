/* Controlled architecture comparisons: `zaya study`. A study is a base config plus variants; a variant
 * is a set of config.json key overrides (and trainer options). Every variant trains through the real
 * trainer (zaya_train_run, the code path of `zaya train`) once per seed, at equal tokens, and the study
 * reports mean and spread of the final validation loss over the seeds (docs/study.md). */
#ifndef ZAYA_STUDY_H
#define ZAYA_STUDY_H

#include <stdint.h>
#include <stdio.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_STUDY_MAX_VARIANTS 8
#define ZAYA_STUDY_MAX_SELECTED 16

typedef struct zaya_study_variant {
    const char *name;
    const char *overrides; /* JSON object of config.json keys applied over the study's base */
    int optimizer_muon;    /* trainer option: 1 Muon + AdamW, 0 AdamW everywhere */
    const char *note;      /* one line for --list and the table */
} zaya_study_variant;

typedef struct zaya_study_def {
    const char *name;
    const char *question;       /* what the study compares */
    const char *base_preset;    /* model preset the base starts from */
    const char *base_overrides; /* JSON object applied to the preset (the study's small model) */
    int nvariants;
    zaya_study_variant variants[ZAYA_STUDY_MAX_VARIANTS];
    int64_t steps;              /* default steps per run */
    double seconds_per_run;     /* measured wall time per run at the default steps (this 2-core machine, docs/study.md) */
} zaya_study_def;

/* The built-in studies (router, attention, moe, residual, optimizer). */
const zaya_study_def *zaya_study_builtin(int *n);
const zaya_study_def *zaya_study_find(const char *name);
/* The --list text: every study, its variants, runs and expected wall time for `seeds` seeds. */
void zaya_study_print_list(FILE *f, int seeds);
/* The check every variant passes before any run: the base with the variant's overrides must load, and
 * every override key must come back unchanged through the config reader (a key it does not read, or a
 * value it changes, is an error naming the key). */
zaya_status zaya_study_check_variant(const zaya_study_def *d, const zaya_study_variant *v);

/* Tokens per step of a study run (sequence length x batch of the study's run file). */
#define ZAYA_STUDY_SEQ_LEN 128
#define ZAYA_STUDY_BATCH 8

typedef struct zaya_study_opts {
    const char *studies;  /* comma-separated study names (required) */
    const char *variants; /* comma-separated variant names to keep (NULL: all of each study) */
    const char *out_dir;  /* per-run directories and the tables */
    const char *data_dir; /* shards + tokenizer.json; NULL: the built-in corpus in OUT/data */
    int seeds;            /* >= 2 */
    int64_t steps;        /* 0: each study's default */
    int threads;
    int list;             /* print the list and return */
} zaya_study_opts;

void zaya_study_opts_default(zaya_study_opts *o);

typedef struct zaya_study_result {
    int usage_error; /* the failure was bad input on the command line (unknown study / variant name, counts) */
    int preempted;   /* stopped by SIGINT/SIGTERM: rerun with the same -o to resume */
    int between_runs; /* ... before starting a run (none was in progress); else the running one checkpointed */
    int runs_total, runs_done, runs_skipped; /* skipped: finished in an earlier invocation */
    double seconds;
} zaya_study_result;

/* Validates every selected variant against the config reader before any run starts, then runs the
 * missing runs (resuming interrupted ones from their checkpoints, skipping finished ones whose saved
 * settings match), and writes OUT/<study>/table.{txt,json,csv} and val_loss.png plus OUT/study.json
 * and OUT/study.csv; the text tables go to stdout. */
zaya_status zaya_study_run(const zaya_study_opts *o, zaya_study_result *res);

#ifdef __cplusplus
}
#endif

#endif

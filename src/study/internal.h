/* Private pieces of the study layer shared by its source files. */
#ifndef ZAYA_STUDY_INTERNAL_H
#define ZAYA_STUDY_INTERNAL_H

#include <stdio.h>

#include "zaya/config.h"
#include "zaya/json.h"
#include "zaya/study.h"

#define ZAYA_STUDY_MAX_SEEDS 16
#define ZAYA_STUDY_MAX_CURVE 256
#define ZAYA_STUDY_MAX_SOURCES 16

/* One (variant, seed) run. */
typedef struct zaya_study_run_rec {
    int seed, done;
    double final_val_loss, first_val_loss, seconds, tokens_per_s;
    int64_t tokens;
    int ncurve;
    double curve_step[ZAYA_STUDY_MAX_CURVE], curve_loss[ZAYA_STUDY_MAX_CURVE];
} zaya_study_run_rec;

/* One selected study with its kept variants. */
typedef struct zaya_study_sel {
    const zaya_study_def *def;
    int nvariants;
    const zaya_study_variant *variant[ZAYA_STUDY_MAX_VARIANTS];
    cJSON *config[ZAYA_STUDY_MAX_VARIANTS]; /* config.json of each variant (validated) */
    zaya_config cfg[ZAYA_STUDY_MAX_VARIANTS];
    int64_t steps;
    zaya_study_run_rec runs[ZAYA_STUDY_MAX_VARIANTS][ZAYA_STUDY_MAX_SEEDS];
} zaya_study_sel;

typedef struct zaya_study_plan {
    int nstudies;
    zaya_study_sel s[ZAYA_STUDY_MAX_SELECTED];
} zaya_study_plan;

/* Tables (text to `text`, OUT/<study>/table.{txt,json,csv}, OUT/study.{json,csv}) and the overlaid
 * validation-loss curves (OUT/<study>/val_loss.png). */
zaya_status zaya_study_write_tables(const zaya_study_opts *o, const zaya_study_plan *plan, FILE *text);

#endif

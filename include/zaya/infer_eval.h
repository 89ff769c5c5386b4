/* `zaya eval`: perplexity and bits per byte on a token shard or a text file, and multiple-choice tasks
 * (zaya JSONL or the released HellaSwag / ARC / PIQA / Winogrande / MMLU files) scored by
 * log-likelihood (acc and byte-length-normalised acc_norm, with standard errors). Every input is read
 * and validated before anything is scored; a failure reports no result. */
#ifndef ZAYA_INFER_EVAL_H
#define ZAYA_INFER_EVAL_H

#include <stdint.h>
#include <stdio.h>

#include "zaya/infer.h"
#include "zaya/infer_model.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_INFER_EVAL_MAX_TASKS 32

typedef struct zaya_infer_eval_opts {
    zaya_infer_model_opts model;
    const char *tokenizer;    /* needed for text, tasks and bits per byte */
    const char *shard, *text; /* perplexity input: at most one */
    const char *const *tasks; /* multiple-choice task files */
    int ntasks;               /* 0..ZAYA_INFER_EVAL_MAX_TASKS */
    zaya_mc_format format;
    int64_t window;           /* perplexity window; 0: the model's context */
    int64_t batch;            /* sequences scored at once */
    int64_t max_tokens;       /* 0: all of the shard / text */
    int threads;              /* 0: all cores */
    const char *out;          /* eval.json, items-K.jsonl */
} zaya_infer_eval_opts;

/* The result table goes to out, the peak RSS to stderr. */
zaya_status zaya_infer_eval_run(const zaya_infer_eval_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

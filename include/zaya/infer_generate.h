/* `zaya generate`: text generation from prompts with the inference engine. With one prompt the
 * completion streams as it is produced; with several, each is printed when it ends. Timing of prefill
 * and decode (and, on request, decode throughput against the STREAM-triad bound) goes to stderr. */
#ifndef ZAYA_INFER_GENERATE_H
#define ZAYA_INFER_GENERATE_H

#include <stdint.h>
#include <stdio.h>

#include "zaya/infer_model.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_INFER_GENERATE_MAX_PROMPTS 64

typedef struct zaya_infer_generate_opts {
    zaya_infer_model_opts model;
    const char *tokenizer;
    const char *const *prompts; /* one sequence of the batch each (1..ZAYA_INFER_GENERATE_MAX_PROMPTS) */
    int nprompts;
    const char *const *stops;   /* a sequence ends when its completion contains one (non-empty) */
    int nstops;
    int64_t max_tokens;         /* per prompt */
    double temperature;         /* 0: greedy */
    int64_t top_k;              /* 0: off */
    double top_p;               /* 1: off */
    int64_t seed;
    int ignore_eos;             /* do not stop at the tokenizer's eos token */
    int no_bos;                 /* do not put the tokenizer's bos token before each prompt (the default does,
                                   as training documents start with it) */
    int no_gemv;                /* oneDNN for single-row projections too */
    int bandwidth;              /* measure a STREAM triad afterwards */
    int threads;                /* 0: all cores */
} zaya_infer_generate_opts;

/* Prompts and completions are written to out. */
zaya_status zaya_infer_generate_run(const zaya_infer_generate_opts *o, FILE *out);

#ifdef __cplusplus
}
#endif

#endif

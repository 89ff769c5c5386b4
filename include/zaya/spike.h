/* Spike guard: skip an optimizer update when the loss (or the gradient norm) jumps far above its
 * recent level. The score is a robust z-score over a sliding window of accepted values,
 * z = (x - median) / (1.4826 * MAD), so earlier spikes do not inflate the scale the way a standard
 * deviation would. Only upward jumps count (a sudden drop is no reason to skip). Non-finite values
 * are always rejected. The first `warmup` accepted values only fill the window (no decisions). A
 * skipped value does not enter the window; after `max_consecutive` skips in a row the next value is
 * accepted anyway, so a genuine level shift (a new curriculum phase) cannot block training. The
 * trainer keeps one guard for the loss and one for the gradient norm. */
#ifndef ZAYA_SPIKE_H
#define ZAYA_SPIKE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_SPIKE_MAX_WINDOW 1024

typedef struct zaya_spike_config {
    int window;          /* values in the window (default 64, <= ZAYA_SPIKE_MAX_WINDOW) */
    int warmup;          /* accepted values before any decision (default 20) */
    double threshold;    /* skip when z > threshold (default 6) */
    int max_consecutive; /* accept after this many skips in a row (default 5; 0 = never force) */
} zaya_spike_config;

void zaya_spike_config_default(zaya_spike_config *c);

typedef struct zaya_spike_guard {
    zaya_spike_config cfg;
    double hist[ZAYA_SPIKE_MAX_WINDOW]; /* ring buffer of accepted values */
    int count, head;
    int64_t checks, accepted, skipped, nonfinite, forced;
    int consecutive;
    double last_z; /* score of the last checked value (0 during warmup) */
} zaya_spike_guard;

zaya_status zaya_spike_guard_init(zaya_spike_guard *g, const zaya_spike_config *cfg);
/* 1: skip this update; 0: apply it (the value joins the window). */
int zaya_spike_guard_check(zaya_spike_guard *g, double value);
/* Forgets the window (keeps counters), e.g. at a deliberate change of regime. */
void zaya_spike_guard_reset(zaya_spike_guard *g);

/* The whole state (config, window in order, counters) as JSON and back; doubles round-trip exactly. */
cJSON *zaya_spike_guard_to_json(const zaya_spike_guard *g);
zaya_status zaya_spike_guard_from_json(zaya_spike_guard *g, const cJSON *j);

#ifdef __cplusplus
}
#endif

#endif

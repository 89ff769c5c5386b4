/* Progress of long work: on a terminal, one self-rewriting line with a bar, rate and ETA; otherwise
 * (pipes, CI, log files) one JSON object per update on stderr, at most every `min_interval_s`. */
#ifndef ZAYA_PROGRESS_H
#define ZAYA_PROGRESS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_progress {
    const char *label;
    const char *unit; /* what `done` counts, e.g. "step", "test" */
    int64_t total;
    double scale; /* done and total are shown divided by this (1 after init; e.g. 1e6 for bytes as MB) */
    double t_start, t_last;
    double min_interval_s;
    int tty;
    int enabled;
} zaya_progress;

void zaya_progress_init(zaya_progress *p, const char *label, const char *unit, int64_t total);
/* `note` (may be NULL) is appended to the line / added as "note" in JSON. */
void zaya_progress_update(zaya_progress *p, int64_t done, const char *note);
void zaya_progress_finish(zaya_progress *p, const char *note);
/* The last line of work that stopped early (interrupted, failed): shows `done`, not the total. */
void zaya_progress_stop(zaya_progress *p, int64_t done, const char *note);

#ifdef __cplusplus
}
#endif

#endif

/* Trainer side of fault tolerance (docs/fault-tolerance.md): heartbeats and numeric events for
 * `zaya supervise` (heartbeat.c), environment-driven fault injection and preemption (faults.c).
 * Everything here is a no-op unless its environment variable is set, except the SIGTERM/SIGINT
 * handler, which always turns a termination request into "checkpoint at the end of this step and
 * exit ZAYA_FT_EXIT_PREEMPTED". */
#ifndef ZAYA_TRAIN_FT_H
#define ZAYA_TRAIN_FT_H

#include <stdint.h>

#include "zaya/ft_protocol.h"

struct zaya_trainer;


/* heartbeat.c: the channel. Without ZAYA_HEARTBEAT_DIR these do nothing. */
void zaya_hb_open(int rank, int world);
void zaya_hb_section(zaya_ft_section s, int64_t step);
/* The step regime (curriculum phase, sequence length) carried by the next records: the supervisor
 * calibrates step-time timeouts per regime. */
void zaya_hb_regime(int64_t phase, int64_t seq_len);
/* Progress inside a long section (an evaluation batch): rewrites the record, same section. */
void zaya_hb_tick(void);
/* A finished step: wall seconds and busy seconds (not waiting on other ranks). */
void zaya_hb_step(int64_t step, double seconds, double busy);
/* One JSON line in this rank's event log: kind, step, and a short detail. */
void zaya_hb_event(const char *kind, int64_t step, const char *detail);
void zaya_hb_close(void);

/* lifeline.c: under a supervisor, die with it (PR_SET_PDEATHSIG + a watcher on its pid). */
void zaya_ft_lifeline_start(void);

/* faults.c: the hooks the step loop calls. */
void zaya_ft_init(struct zaya_trainer *t);
void zaya_ft_enter(struct zaya_trainer *t, zaya_ft_section s); /* heartbeat + crash/hang/slow/kill-save */
void zaya_ft_inject_grads(struct zaya_trainer *t);              /* NaN or spike into the reduced gradients */
void zaya_ft_resumed(struct zaya_trainer *t, int found);
void zaya_ft_step_done(struct zaya_trainer *t, double seconds, double busy, int skipped, double loss, double grad_norm);
void zaya_ft_saving(struct zaya_trainer *t, int64_t step); /* before a checkpoint save (kill-save fault) */
void zaya_ft_saved(struct zaya_trainer *t, int64_t step);  /* after it was issued (corrupt fault) */
/* Collective: 1 on every rank when any rank was asked to stop (SIGTERM/SIGINT). */
int zaya_ft_stop_agreed(struct zaya_trainer *t);
void zaya_ft_finish(struct zaya_trainer *t, int completed);
int zaya_ft_preempted(void);
/* Rollback after a numeric fault (ZAYA_SKIP_STEPS, ZAYA_LR_LOWER): skip this step's update / LR factor. */
int zaya_ft_skip_forced(struct zaya_trainer *t);
double zaya_ft_lr_factor(const struct zaya_trainer *t);

#endif

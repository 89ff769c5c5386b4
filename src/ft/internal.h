/* Private state of the supervisor: what the heartbeat channel says about each rank (monitor.c),
 * and the incident log (incidents.c). */
#ifndef ZAYA_FT_INTERNAL_H
#define ZAYA_FT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "zaya/ft.h"
#include "zaya/proc.h"

#define ZAYA_FT_MAX_RANKS 1024
#define ZAYA_FT_SAMPLES 256

typedef struct zaya_ft_rank {
    int seen, pid, world;
    long long seq, steps_done, events_off;
    int64_t step, phase, seq_len;  /* regime of the last record */
    zaya_ft_section section; /* ZAYA_FT_STARTUP until the first record */
    char host[64];
    double last_change;           /* supervisor clock when seq last changed */
    double hb_time;               /* the rank's wall clock in that record */
    double step_time, busy_time, train_time;
    double busy_hist[32];         /* recent busy times, for stragglers */
    int nbusy;
    int straggler_reported;
} zaya_ft_rank;

typedef struct zaya_ft_monitor {
    char dir[4096];
    zaya_ft_rank ranks[ZAYA_FT_MAX_RANKS];
    int nranks;                   /* highest rank seen + 1 */
    /* recent step times, all ranks and attempts, each with its regime (phase, sequence length) */
    double samples[ZAYA_FT_SAMPLES];
    int64_t sample_phase[ZAYA_FT_SAMPLES], sample_seq[ZAYA_FT_SAMPLES];
    int nsamples, sample_head;
    double eval_gap_max;          /* longest observed wait between two records of a rank in 'eval' */
} zaya_ft_monitor;

/* A numeric or checkpoint event read from a rank's event log. */
typedef struct zaya_ft_event {
    char kind[32], detail[600];
    int rank, attempt;
    int64_t step;
    double time; /* the rank's wall clock */
} zaya_ft_event;

typedef void (*zaya_ft_event_fn)(void *ctx, const zaya_ft_event *e);

void zaya_ft_monitor_reset(zaya_ft_monitor *m, const char *dir); /* keeps the step-time samples */
/* Re-reads every heartbeat and new event lines; now is the supervisor's clock. */
void zaya_ft_monitor_poll(zaya_ft_monitor *m, double now, zaya_ft_event_fn fn, void *ctx);
double zaya_ft_monitor_median_step(const zaya_ft_monitor *m);
/* Median step time of one regime and how many samples it has (*n). */
double zaya_ft_monitor_median_regime(const zaya_ft_monitor *m, int64_t phase, int64_t seq_len, int *n);

/* incidents.c: the incident log (JSONL, one line per incident once its figures are known). */
typedef struct zaya_ft_incident {
    char kind[32], detail[700];
    int rank, attempt, pending; /* pending: waits for the restarted job's first step */
    int64_t step, reached, steps_lost; /* reached: steps completed when the failure hit */
    double detected_at, latency_s, recovery_s; /* -1: not applicable / not known */
} zaya_ft_incident;

typedef struct zaya_ft_log {
    zaya_ft_incident *v;
    int n, cap;
    FILE *f;
} zaya_ft_log;

zaya_status zaya_ft_log_open(zaya_ft_log *l, const char *path);
void zaya_ft_log_close(zaya_ft_log *l);
zaya_ft_incident *zaya_ft_log_add(zaya_ft_log *l, const char *kind, int attempt, int rank, int64_t step, double detected_at,
                                  double latency_s, const char *detail);
void zaya_ft_log_write(zaya_ft_log *l, const zaya_ft_incident *I);
void zaya_ft_log_print(const zaya_ft_log *l, const zaya_supervise_result *r, FILE *out);
zaya_status zaya_ft_write_summary(const zaya_supervise_result *r, const char *out_dir);

/* process.c: files of a job (processes: zaya/proc.h). */
void zaya_ft_log_tail(const char *path, char *out, size_t cap, int lines);
void zaya_ft_clear_dir(const char *dir);

double zaya_ft_wall_s(void);
double zaya_ft_median(double *v, int n); /* sorts v */

#endif

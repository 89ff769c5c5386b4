/* Automated fault tolerance: `zaya supervise -- CMD...` launches a training job in its own process
 * group, watches its exit status and the ranks' heartbeats (src/train/heartbeat.c), and recovers
 * from crashes and hangs by terminating the whole job and restarting it (the trainer resumes from
 * its last good checkpoint). Numeric faults, loss spikes, stragglers and checkpoint fallbacks are
 * recorded as incidents. See docs/fault-tolerance.md for the channel, policies and exit codes. */
#ifndef ZAYA_FT_H
#define ZAYA_FT_H

#include <stdint.h>

#include "zaya/ft_protocol.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_supervise_opts {
    char **argv; /* the job's command, NULL-terminated */
    const char *out_dir;       /* incidents.jsonl, summary.json, attempt-NNN.log, heartbeat/ */
    int max_restarts;          /* restarts after failures before giving up (default 10) */
    int same_step_limit;       /* K failures at the same step in a row stop the run (default 3) */
    double backoff_s, backoff_max_s; /* restart delay, doubled per failure without progress (1, 30) */
    double hang_factor;        /* section timeout = hang_factor x median step time of the rank's regime ... (default 10) */
    double hang_floor_s, hang_cap_s; /* ... clamped to [floor, cap] (default 10, 600) */
    double startup_timeout_s;  /* first heartbeat and startup section, and the first steps of a regime
                                  (phase, sequence length) before 3 of its steps calibrate it (default: cap) */
    double eval_timeout_s;     /* eval section: the calibrated step timeout of its regime (each eval batch
                                  is a heartbeat), never above this; before calibration this (default 300, <= cap) */
    double save_timeout_s;     /* checkpoint section (default: cap) */
    double grace_s;            /* SIGTERM -> SIGKILL (default 10) */
    double preempt_timeout_s;  /* a preempted job must save and exit within this (default 300) */
    double straggler_factor;   /* busy time > factor x median of the other ranks (default 2) */
    double poll_s;             /* heartbeat polling period (default 0.05) */
    int health_check;          /* GEMM + collective self-test before every (re)start */
    int rollback;              /* numeric faults: 0 = record (the trainer skipped the update), 1 = roll back
                                  to the checkpoint before the fault and skip that step's update */
    double lr_lower;           /* with rollback: LR factor for lr_lower_steps steps after the fault (1 = off) */
    int64_t lr_lower_steps;
    int quiet;
    /* --hosts FILE: an elastic job over the hosts of an Open MPI hostfile (src/ft/hosts.c): each attempt
       runs on the hosts that pass the check, the supervisor choosing the launcher's -np and --host */
    const char *hosts_file;
    int min_hosts;             /* fewer healthy hosts: stop with a diagnosis (default 1) */
    double host_wait_s;        /* after a host loss, wait up to this for it before restarting smaller (default 0) */
    const char *host_check;    /* the check: `CMD HOST` (exit 0 = healthy); NULL: LAUNCHER --host HOST:1 -np 1 ZAYA supervise --help */
    double host_check_timeout_s; /* a check without an answer within this fails (default 20) */
    double host_probe_s;       /* while smaller, a lost host is checked again every this (default 2) */
    int grow_back;             /* a lost host healthy again: checkpoint (the preemption path) and restart on all (default 1) */
} zaya_supervise_opts;

typedef struct zaya_supervise_result {
    int completed, preempted, gave_up;
    int attempts, incidents;
    int64_t final_step;
    double wall_s, useful_s, goodput;
    char diagnosis[1024];
} zaya_supervise_result;

void zaya_supervise_opts_default(zaya_supervise_opts *o);
zaya_status zaya_supervise_run(const zaya_supervise_opts *o, zaya_supervise_result *r);

/* Exact-integer GEMM self-test through the library's matmul (f32 and bf16 paths): small integer
 * matrices whose products and sums are exactly representable, compared with an int64 reference. */
zaya_status zaya_health_check_gemm(void);

#ifdef __cplusplus
}
#endif

#endif

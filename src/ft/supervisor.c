/* The supervisor loop: launch the job in its own process group, poll its exit status and the
 * heartbeat channel, classify what went wrong, terminate the whole job (SIGTERM, SIGKILL after the
 * grace period, then any orphan it left: the supervisor is a child subreaper), and restart it with
 * bounded retries and backoff. The trainer resumes from its last good checkpoint by itself. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ft/internal.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/proc.h"
#include "zaya/timer.h"
#include "hosts.h"

void zaya_supervise_opts_default(zaya_supervise_opts *o) {
    memset(o, 0, sizeof *o);
    o->out_dir = "out/supervise";
    o->max_restarts = 10;
    o->same_step_limit = 3;
    o->backoff_s = 1;
    o->backoff_max_s = 30;
    o->hang_factor = 10;
    o->hang_floor_s = 10;
    o->hang_cap_s = 600;
    o->eval_timeout_s = 300;
    o->grace_s = 10;
    o->preempt_timeout_s = 300;
    o->straggler_factor = 2;
    o->poll_s = 0.05;
    o->lr_lower = 1;
    o->min_hosts = 1;
    o->host_check_timeout_s = 20;
    o->host_probe_s = 2;
    o->grow_back = 1;
}

typedef zaya_ft_incident incident;

#define ZAYA_FT_HEALTH_ARGS 128

typedef struct sup {
    const zaya_supervise_opts *o;
    zaya_supervise_result *res;
    zaya_ft_monitor *mon;
    char host[64];
    zaya_ft_log log;
    double t0;
    int attempt;
    /* this attempt */
    int64_t resume_step;
    int resumed, done, preempted, first_step_seen;
    /* the previous failed attempt, for goodput once we know where the next one resumed */
    int prev_pending;
    double prev_train_time;
    int64_t prev_start, prev_steps;
    /* rollback of numeric faults */
    int64_t skips[64], rollback_to;
    int nskips;
    incident *rollback_incident;
    /* the job's trainer found its output directory locked by another run */
    int locked;
    char locked_msg[700];
    pid_t job; /* the current attempt's direct child (its process group) */
    pid_t self;
    long long self_start;
    int lock_fd;
    /* --hosts: the host list, this attempt's command, the background check of a lost host */
    zaya_ft_hosts *hosts;
    int grow_sent;
    pid_t probe_pid;
    int probe_host;
    double probe_t0, next_probe;
} sup;

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig) { stop_signal = sig; }

static double now_s(void) { return zaya_now_s(); }

static void say(sup *S, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(sup *S, const char *fmt, ...) {
    if (S->o->quiet) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "zaya supervise [%7.1f s]: ", now_s() - S->t0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static incident *incident_add(sup *S, const char *kind, int rank, int64_t step, double latency, const char *detail) {
    return zaya_ft_log_add(&S->log, kind, S->attempt, rank, step, now_s() - S->t0, latency, detail);
}

static void incident_write(sup *S, const incident *I) { zaya_ft_log_write(&S->log, I); }

/* Trainer events: numeric faults and fallbacks are incidents of their own; the rest is state. */
static void on_event(void *ctx, const zaya_ft_event *e) {
    sup *S = ctx;
    if (e->attempt != S->attempt) return;
    double latency = fmax(0, zaya_ft_wall_s() - e->time);
    if (!strcmp(e->kind, ZAYA_FT_EV_NONFINITE) || !strcmp(e->kind, ZAYA_FT_EV_SPIKE)) {
        incident *I = incident_add(S, !strcmp(e->kind, ZAYA_FT_EV_SPIKE) ? "loss_spike" : "nonfinite", e->rank, e->step, latency, e->detail);
        if (!I) return;
        if (S->o->rollback && !S->rollback_incident && S->nskips < 64) {
            S->rollback_incident = I; /* run_attempt stops the job; the next attempt starts before e->step */
            S->skips[S->nskips++] = e->step;
            S->rollback_to = e->step;
            say(S, "%s at step %lld: %s; rolling back to the checkpoint before it", I->kind, (long long)e->step, e->detail);
            return;
        }
        I->recovery_s = 0; /* the trainer skipped the update: nothing to recover, the batch is lost */
        I->steps_lost = 0;
        say(S, "%s at step %lld: %s (recorded; the trainer skipped the batch)", I->kind, (long long)e->step, e->detail);
        incident_write(S, I);
    } else if (!strcmp(e->kind, ZAYA_FT_EV_ROLLBACK_SKIP)) {
        say(S, "step %lld: update skipped after the rollback", (long long)e->step);
    } else if (!strcmp(e->kind, ZAYA_FT_EV_RESUMED)) {
        S->resume_step = e->step;
        S->resumed = 1;
    } else if (!strcmp(e->kind, ZAYA_FT_EV_CKPT_FALLBACK)) {
        incident *I = incident_add(S, "corrupt_checkpoint", e->rank, e->step, latency, e->detail);
        if (!I) return;
        I->recovery_s = 0;
        /* the steps between the checkpoint used and the unusable one (which existed: someone got there) */
        int64_t from = S->resumed ? S->resume_step : -1;
        I->steps_lost = from >= 0 && e->step > from ? e->step - from : 0;
        say(S, "corrupt checkpoint at restart: %s", e->detail);
        incident_write(S, I);
    } else if (!strcmp(e->kind, ZAYA_FT_EV_LATEST_REPAIRED)) {
        incident *I = incident_add(S, "latest_repaired", e->rank, e->step, latency, e->detail);
        if (!I) return;
        I->recovery_s = 0;
        I->steps_lost = 0; /* the newest complete checkpoint was used */
        say(S, "checkpoint pointer repaired at restart: %s", e->detail);
        incident_write(S, I);
    } else if (!strcmp(e->kind, ZAYA_FT_EV_OUTPUT_LOCKED)) {
        S->locked = 1;
        snprintf(S->locked_msg, sizeof S->locked_msg, "%s", e->detail);
    } else if (!strcmp(e->kind, ZAYA_FT_EV_DONE)) {
        S->done = 1;
    } else if (!strcmp(e->kind, ZAYA_FT_EV_PREEMPTED)) {
        S->preempted = 1;
    } else if (!strcmp(e->kind, ZAYA_FT_EV_FAULT_INJECTED)) {
        say(S, "drill: rank %d injected '%s' at step %lld", e->rank, e->detail, (long long)e->step);
    }
}

/* The first completed step of an attempt closes the incidents that caused the restart. */
static void complete_pending(sup *S) {
    const zaya_ft_rank *r0 = &S->mon->ranks[0];
    if (S->first_step_seen || !r0->seen || r0->steps_done < 1) return;
    S->first_step_seen = 1;
    double t = now_s() - S->t0;
    int64_t start = S->resumed ? S->resume_step : 0;
    for (int i = 0; i < S->log.n; i++) {
        incident *I = &S->log.v[i];
        if (!I->pending) continue;
        I->pending = 0;
        I->recovery_s = t - I->detected_at;
        I->steps_lost = I->reached > start ? I->reached - start : 0;
        incident_write(S, I);
    }
    if (S->prev_pending) {
        int64_t useful = start - S->prev_start;
        if (useful > S->prev_steps) useful = S->prev_steps;
        if (useful > 0 && S->prev_steps > 0) S->res->useful_s += S->prev_train_time * (double)useful / (double)S->prev_steps;
        S->prev_pending = 0;
    }
}

static int local_rank(const sup *S, const zaya_ft_rank *r) { return r->seen && r->pid > 0 && !strcmp(r->host, S->host); }

/* Seconds since the rank last reported progress: by its own clock when it runs on this host (exact),
 * else by when we saw its record change (immune to clock skew, late by up to one poll). */
static double since_progress(const sup *S, const zaya_ft_rank *r, double now) {
    if (local_rank(S, r) && r->hb_time > 0) return fmax(0, zaya_ft_wall_s() - r->hb_time);
    return now - r->last_change;
}

static void signal_ranks(sup *S, int sig) {
    for (int i = 0; i < S->mon->nranks; i++)
        if (local_rank(S, &S->mon->ranks[i]) && S->mon->ranks[i].section != ZAYA_FT_DONE) kill(S->mon->ranks[i].pid, sig);
}

/* SIGTERM to the process group and the local ranks, SIGKILL after the grace period. */
static int terminate_job(sup *S, pid_t pid, int *status) {
    kill(-pid, SIGTERM);
    signal_ranks(S, SIGTERM);
    double t = now_s();
    int exited = 0;
    while (now_s() - t < S->o->grace_s) {
        if (waitpid(pid, status, WNOHANG) == pid) {
            exited = 1;
            break;
        }
        usleep(20000);
    }
    if (!exited) {
        say(S, "job did not exit within %.1f s of SIGTERM: SIGKILL", S->o->grace_s);
        kill(-pid, SIGKILL);
        signal_ranks(S, SIGKILL);
        waitpid(pid, status, 0);
    }
    kill(-pid, SIGKILL); /* whatever else is left in the group */
    for (int i = 0; i < 50 && zaya_proc_reap_orphans(); i++) usleep(10000);
    return exited;
}

/* The whole job tree: local ranks named in the heartbeats that are not done (launched outside our
 * tree, e.g. by a resource manager), the process group, and every descendant, all reaped. */
static void kill_job_tree(sup *S) {
    for (int i = 0; i < S->mon->nranks; i++) {
        const zaya_ft_rank *r = &S->mon->ranks[i];
        if (local_rank(S, r) && r->section != ZAYA_FT_DONE && zaya_proc_pid_alive(r->pid)) kill(r->pid, SIGKILL);
    }
    if (S->job > 0) kill(-S->job, SIGKILL);
    /* what a finished job leaves (Open MPI's singleton orted ends a moment after its rank) gets up to
     * a second to exit by itself before it counts as a leftover */
    for (int i = 0; i < 100 && zaya_proc_count_descendants() > 0; i++) usleep(10000);
    char names[600];
    int n = zaya_proc_kill_descendants_named(names, sizeof names);
    if (n > 0) say(S, "killed and reaped %d leftover process%s of attempt %d: %s", n, n == 1 ? "" : "es", S->attempt, names);
    S->job = 0;
}

/* The timeout of the section a rank is in. In-step sections: hang_factor x the median step time of
 * the rank's regime (phase, sequence length), clamped to [floor, cap], once 3 steps of that regime
 * were seen (in any attempt); a new phase or sequence length starts uncalibrated. Startup and
 * uncalibrated steps: --startup-timeout. Eval: the step timeout of the regime (each eval batch is a
 * heartbeat; at least hang_factor x the longest gap seen between eval batches), capped by
 * --eval-timeout, which is also the value before calibration. Checkpoint: --save-timeout. */
static double section_timeout(const sup *S, const zaya_ft_rank *r) {
    const zaya_supervise_opts *o = S->o;
    const zaya_ft_section section = r->section;
    double startup = o->startup_timeout_s > 0 ? o->startup_timeout_s : o->hang_cap_s;
    double save = o->save_timeout_s > 0 ? o->save_timeout_s : o->hang_cap_s;
    double eval = o->eval_timeout_s > 0 ? fmin(o->eval_timeout_s, o->hang_cap_s) : o->hang_cap_s;
    if (section == ZAYA_FT_STARTUP) return startup;
    if (section == ZAYA_FT_CHECKPOINT) return save;
    int n = 0;
    double med = zaya_ft_monitor_median_regime(S->mon, r->phase, r->seq_len, &n);
    double step = n >= 3 ? fmin(fmax(o->hang_factor * med, o->hang_floor_s), o->hang_cap_s) : -1;
    if (section == ZAYA_FT_EVAL) {
        if (step < 0) return eval;
        return fmin(fmax(step, o->hang_factor * S->mon->eval_gap_max), eval);
    }
    return step > 0 ? step : startup;
}

static void check_stragglers(sup *S) {
    zaya_ft_monitor *m = S->mon;
    if (m->nranks < 2) return;
    double med[ZAYA_FT_MAX_RANKS];
    for (int i = 0; i < m->nranks; i++) {
        double v[32];
        int n = m->ranks[i].nbusy < 32 ? m->ranks[i].nbusy : 32;
        if (n < 5) return;
        memcpy(v, m->ranks[i].busy_hist, sizeof(double) * (size_t)n);
        med[i] = zaya_ft_median(v, n);
    }
    for (int i = 0; i < m->nranks; i++) {
        if (m->ranks[i].straggler_reported) continue;
        double others[ZAYA_FT_MAX_RANKS];
        int n = 0;
        for (int k = 0; k < m->nranks; k++)
            if (k != i) others[n++] = med[k];
        double ref = zaya_ft_median(others, n);
        if (med[i] > S->o->straggler_factor * ref && med[i] - ref > 0.02) {
            char d[400];
            const zaya_ft_rank *r = &m->ranks[i];
            double st = r->step_time > 0 ? r->step_time : 0, busy = r->busy_time < st ? r->busy_time : st;
            snprintf(d, sizeof d,
                     "median busy time %.3f s per step vs %.3f s on the other ranks (%.1fx), host %s; its last step %.3f s: "
                     "%.0f%% compute, %.0f%% waiting: reported, not killed",
                     med[i], ref, med[i] / ref, r->host[0] ? r->host : "?", st, st > 0 ? 100 * busy / st : 0,
                     st > 0 ? 100 * (st - busy) / st : 0);
            incident *I = incident_add(S, "straggler", i, m->ranks[i].step, -1, d);
            if (!I) return;
            I->recovery_s = 0;
            I->steps_lost = 0;
            m->ranks[i].straggler_reported = 1;
            say(S, "straggler: rank %d %s", i, d);
            incident_write(S, I);
        }
    }
}

typedef enum { OUT_DONE, OUT_PREEMPTED, OUT_EXTERNAL_PREEMPT, OUT_FAILED, OUT_ROLLBACK } outcome;

/* One attempt in flight: the job's direct child and what watching it has found so far. */
typedef struct attempt {
    pid_t pid;
    char hbdir[4096], logpath[4096];
    double launch, forwarded; /* supervisor clock at the launch / at the forwarded stop request (-1: none) */
    int status, exited;
} attempt;

/* Launch: a fresh heartbeat directory, the job in its own process group that dies with us (and whose
 * ranks watch our pid and start time: src/train/lifeline.c), its output appended to attempt-NNN.log. */
static int attempt_launch(sup *S, attempt *A, incident **fail) {
    const zaya_supervise_opts *o = S->o;
    char name[64];
    memset(A, 0, sizeof *A);
    A->forwarded = -1;
    snprintf(name, sizeof name, "heartbeat/attempt-%03d", S->attempt);
    zaya_path_join(A->hbdir, sizeof A->hbdir, o->out_dir, name);
    snprintf(name, sizeof name, "attempt-%03d.log", S->attempt);
    zaya_path_join(A->logpath, sizeof A->logpath, o->out_dir, name);
    zaya_mkdir_p(A->hbdir);
    zaya_ft_clear_dir(A->hbdir);
    zaya_ft_monitor_reset(S->mon, A->hbdir);
    S->resumed = S->done = S->preempted = S->first_step_seen = 0;
    S->resume_step = 0;
    *fail = NULL;

    /* the environment of the protocol (zaya/ft_protocol.h) */
    char e_pid[64], e_start[64], e_hb[4200], e_att[48], e_skip[64 * 24 + 32], e_lr[96], e_rb[64];
    const char *env[12];
    int ne = 0;
    snprintf(e_pid, sizeof e_pid, ZAYA_ENV_SUPERVISOR_PID "=%d", (int)S->self);
    snprintf(e_start, sizeof e_start, ZAYA_ENV_SUPERVISOR_START "=%lld", S->self_start);
    snprintf(e_hb, sizeof e_hb, ZAYA_ENV_HEARTBEAT_DIR "=%s", A->hbdir);
    snprintf(e_att, sizeof e_att, ZAYA_ENV_ATTEMPT "=%d", S->attempt);
    env[ne++] = e_pid;
    env[ne++] = e_start;
    env[ne++] = e_hb;
    env[ne++] = e_att;
    if (S->nskips) {
        int n = snprintf(e_skip, sizeof e_skip, ZAYA_ENV_SKIP_STEPS "=");
        for (int i = 0; i < S->nskips && n < (int)sizeof e_skip; i++)
            n += snprintf(e_skip + n, sizeof e_skip - (size_t)n, "%s%lld", i ? "," : "", (long long)S->skips[i]);
        env[ne++] = e_skip;
        if (o->lr_lower != 1 && o->lr_lower_steps > 0) {
            snprintf(e_lr, sizeof e_lr, ZAYA_ENV_LR_LOWER "=%g:%lld", o->lr_lower, (long long)o->lr_lower_steps);
            env[ne++] = e_lr;
        }
    }
    if (S->rollback_to >= 0) {
        snprintf(e_rb, sizeof e_rb, ZAYA_ENV_ROLLBACK_TO "=%lld", (long long)S->rollback_to);
        env[ne++] = e_rb;
    }
    env[ne] = NULL;
    /* appended: a rerun of the same command keeps the earlier run's logs above a separator */
    char banner[200], when[64] = "?";
    time_t now = time(NULL);
    struct tm tmv;
    if (localtime_r(&now, &tmv)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tmv);
    snprintf(banner, sizeof banner, "==== zaya supervise (pid %d): attempt %d, %s ====\n", (int)S->self, S->attempt, when);
    zaya_proc_opts po = {.log_path = A->logpath, .log_append = 1, .log_banner = banner, .new_group = 1, .die_with_parent = 1,
                         .env = env};
    A->launch = now_s();
    char *const *argv = S->hosts ? S->hosts->argv : o->argv;
    if (zaya_proc_spawn(argv, &po, &A->pid, NULL) != ZAYA_OK) {
        *fail = incident_add(S, "launch", -1, -1, 0, zaya_error_message());
        return -1;
    }
    S->job = A->pid;
    S->rollback_to = -1; /* only this attempt rolls back */
    S->grow_sent = 0;
    if (S->hosts)
        say(S, "attempt %d: launched '%s %s ...' (pid %d, world %d on %d of %d hosts), output in %s", S->attempt, argv[0],
            S->hosts->plan, (int)A->pid, S->hosts->world, S->hosts->used_hosts, S->hosts->n, A->logpath);
    else say(S, "attempt %d: launched '%s' (pid %d), output in %s", S->attempt, o->argv[0], (int)A->pid, A->logpath);
    return 0;
}

/* The rank that stopped reporting first (the one to blame), or -1. */
static int first_stopped(const sup *S) {
    int rank = -1;
    for (int i = 0; i < S->mon->nranks; i++)
        if (S->mon->ranks[i].seen && S->mon->ranks[i].section != ZAYA_FT_DONE &&
            (rank < 0 || S->mon->ranks[i].last_change < S->mon->ranks[rank].last_change))
            rank = i;
    return rank;
}

/* A hang: every rank that is not done has been in its section past its timeout. */
static incident *find_hang(sup *S, double now) {
    zaya_ft_monitor *m = S->mon;
    char d[900];
    int hung = 1, culprit = -1;
    double newest = -1, timeout = 0;
    for (int i = 0; i < m->nranks && hung; i++) {
        zaya_ft_rank *r = &m->ranks[i];
        if (!r->seen || r->section == ZAYA_FT_DONE) continue;
        double to = section_timeout(S, r);
        if (now - r->last_change <= to) hung = 0;
        if (r->last_change > newest) newest = r->last_change, timeout = to;
        /* the culprit: the rank that stopped first outside a collective */
        if (culprit < 0 || (r->section != ZAYA_FT_COMM &&
                            (m->ranks[culprit].section == ZAYA_FT_COMM || r->last_change < m->ranks[culprit].last_change)))
            culprit = i;
    }
    if (!hung || culprit < 0) return NULL;
    zaya_ft_rank *r = &m->ranks[culprit];
    snprintf(d, sizeof d, "no progress for %.1f s (timeout %.1f s); rank %d (host %s) stuck in section '%s' of step %lld",
             now - newest, timeout, culprit, r->host[0] ? r->host : "?", zaya_ft_section_name(r->section), (long long)r->step);
    double lat = 0;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].seen && m->ranks[i].section != ZAYA_FT_DONE) {
            double sp = since_progress(S, &m->ranks[i], now);
            lat = lat == 0 || sp < lat ? sp : lat;
        }
    return incident_add(S, "hang", culprit, r->step, lat, d);
}

/* --hosts, while the job runs on fewer hosts than the file lists: check one lost host at a time in the
 * background; when one passes and --grow-back is on, ask the job to checkpoint and exit (the
 * preemption path: the trainer saves after its current step and exits 75) so that the next attempt
 * runs on every healthy host. */
static void grow_poll(sup *S, double now) {
    zaya_ft_hosts *H = S->hosts;
    if (!S->o->grow_back || S->grow_sent || !S->first_step_seen) return;
    if (S->probe_pid > 0) {
        int v = zaya_ft_hosts_probe_poll(S->probe_pid, S->probe_t0, now, S->o->host_check_timeout_s);
        if (v < 0) return;
        S->probe_pid = 0;
        S->next_probe = now + S->o->host_probe_s;
        if (v == 0) return;
        zaya_ft_host *h = &H->h[S->probe_host];
        h->healthy = 1;
        char d[300];
        snprintf(d, sizeof d, "host %s passes the check again: checkpointing to grow back", h->name);
        incident *I = incident_add(S, "host_back", -1, S->mon->ranks[0].step, 0, d);
        if (I) incident_write(S, I);
        say(S, "%s", d);
        S->grow_sent = 1;
        signal_ranks(S, SIGTERM);
        return;
    }
    if (now < S->next_probe) return;
    for (int k = 1; k <= H->n; k++) {
        int i = (S->probe_host + k) % H->n;
        if (H->h[i].healthy) continue;
        char log[4200];
        zaya_path_join(log, sizeof log, S->o->out_dir, "host-check.log");
        if (zaya_ft_hosts_probe_start(H, i, S->o, log, &S->probe_pid) != ZAYA_OK) S->probe_pid = 0;
        S->probe_host = i;
        S->probe_t0 = now;
        break;
    }
}

typedef enum { POLL_CONTINUE, POLL_STOP, POLL_RETURN } poll_verdict;

/* One look at the job: its exit, the heartbeats and events, a forwarded stop request, vanished ranks,
 * hangs and stragglers. POLL_STOP: it exited or *fail was found; POLL_RETURN: the attempt ends with *oc. */
static poll_verdict attempt_poll(sup *S, attempt *A, incident **fail, outcome *oc) {
    const zaya_supervise_opts *o = S->o;
    char d[900];
    usleep((useconds_t)(o->poll_s * 1e6));
    double now = now_s();
    if (waitpid(A->pid, &A->status, WNOHANG) == A->pid) {
        A->exited = 1;
        return POLL_STOP;
    }
    zaya_ft_monitor_poll(S->mon, now, on_event, S);
    complete_pending(S);
    zaya_ft_monitor *m = S->mon;
    if (S->hosts && A->forwarded < 0) grow_poll(S, now);
    if (S->rollback_incident && A->forwarded < 0) {
        incident *I = S->rollback_incident;
        S->rollback_incident = NULL;
        I->pending = 1;
        I->reached = (S->resumed ? S->resume_step : 0) + m->ranks[0].steps_done;
        S->prev_train_time = m->ranks[0].train_time;
        S->prev_start = S->resumed ? S->resume_step : 0;
        S->prev_steps = m->ranks[0].steps_done;
        S->prev_pending = 1;
        terminate_job(S, A->pid, &A->status);
        *oc = OUT_ROLLBACK;
        return POLL_RETURN;
    }
    if (stop_signal && A->forwarded < 0) {
        A->forwarded = now;
        if (m->nranks > 0) signal_ranks(S, SIGTERM);
        else kill(-A->pid, SIGTERM);
        say(S, "received %s: asked the job to checkpoint and exit", strsignal(stop_signal)); /* after the kill: a reader of this line knows the job has it */
    }
    if (A->forwarded >= 0) {
        if (now - A->forwarded > o->preempt_timeout_s) {
            say(S, "the job did not stop within %.0f s of the request: terminating it", o->preempt_timeout_s);
            terminate_job(S, A->pid, &A->status);
            *oc = OUT_PREEMPTED;
            return POLL_RETURN;
        }
        return POLL_CONTINUE;
    }
    /* a rank process that vanished before finishing (faster than waiting for mpirun) */
    for (int i = 0; i < m->nranks; i++) {
        zaya_ft_rank *r = &m->ranks[i];
        /* our direct child is left to waitpid, which also tells how it ended */
        if (!local_rank(S, r) || r->pid == (int)A->pid || r->section == ZAYA_FT_DONE || zaya_proc_pid_alive(r->pid)) continue;
        zaya_ft_monitor_poll(S->mon, now, on_event, S); /* it may have just finished */
        if (r->section == ZAYA_FT_DONE || S->preempted) continue;
        snprintf(d, sizeof d, "rank %d (pid %d) died in section '%s' of step %lld", i, r->pid, zaya_ft_section_name(r->section),
                 (long long)r->step);
        *fail = incident_add(S, "crash", i, r->step, since_progress(S, r, now), d);
        return POLL_STOP;
    }
    if (m->nranks == 0) { /* not a heartbeat yet */
        double to = o->startup_timeout_s > 0 ? o->startup_timeout_s : o->hang_cap_s;
        if (now - A->launch > to) {
            snprintf(d, sizeof d, "no heartbeat within %.1f s of the launch", to);
            *fail = incident_add(S, "hang", -1, -1, now - A->launch - to, d);
            if (*fail) (*fail)->latency_s = now - A->launch;
            return POLL_STOP;
        }
        return POLL_CONTINUE;
    }
    if ((*fail = find_hang(S, now))) return POLL_STOP;
    check_stragglers(S);
    return POLL_CONTINUE;
}

/* Classify how the attempt ended: done, preempted (ours or external), or a failure to recover from
 * (then the job is terminated if it still runs). */
static outcome attempt_classify(sup *S, attempt *A, incident **fail) {
    char d[900];
    zaya_ft_monitor_poll(S->mon, now_s(), on_event, S);
    complete_pending(S);
    const zaya_ft_rank *r0 = &S->mon->ranks[0];
    int64_t start = S->resumed ? S->resume_step : 0;
    S->prev_train_time = r0->train_time;
    S->prev_start = start;
    S->prev_steps = r0->steps_done;
    int64_t reached = start + r0->steps_done;
    if (A->exited && !*fail) {
        int code = WIFEXITED(A->status) ? WEXITSTATUS(A->status) : -1;
        if (A->forwarded >= 0 && code != 0) { /* we asked it to stop: whatever it managed to save stands */
            S->res->final_step = reached;
            if (S->preempted) S->res->useful_s += r0->train_time; /* it saved after its last step */
            return OUT_PREEMPTED;
        }
        if (S->preempted || code == ZAYA_FT_EXIT_PREEMPTED) {
            S->res->final_step = reached;
            if (stop_signal) {
                S->res->useful_s += r0->train_time; /* it saved after its last step */
                return OUT_PREEMPTED;
            }
            S->prev_pending = 1;
            return OUT_EXTERNAL_PREEMPT;
        }
        if (code == 0) {
            S->res->useful_s += r0->train_time;
            S->res->final_step = reached;
            return OUT_DONE;
        }
        int rank = first_stopped(S);
        char tail[sizeof((incident *)0)->detail - 64]; /* the prefix below and the tail fit in an incident */
        zaya_ft_log_tail(A->logpath, tail, sizeof tail, 3);
        if (WIFSIGNALED(A->status))
            snprintf(d, sizeof d, "job killed by signal %d (%s); log: %s", WTERMSIG(A->status), strsignal(WTERMSIG(A->status)), tail);
        else snprintf(d, sizeof d, "job exited with status %d; log: %s", code, tail);
        double lat = rank >= 0 ? since_progress(S, &S->mon->ranks[rank], now_s()) : 0;
        *fail = incident_add(S, "crash", rank, rank >= 0 ? S->mon->ranks[rank].step : -1, lat, d);
    }
    if (*fail) {
        (*fail)->pending = 1;
        (*fail)->reached = reached;
        S->prev_pending = 1;
        say(S, "%s detected after %.2f s: %s", (*fail)->kind, (*fail)->latency_s, (*fail)->detail);
        if (!A->exited) terminate_job(S, A->pid, &A->status);
    }
    return OUT_FAILED;
}

/* One attempt: launch, watch, classify. Fills *fail for OUT_FAILED. */
static outcome run_attempt(sup *S, incident **fail) {
    attempt A;
    if (attempt_launch(S, &A, fail) != 0) return OUT_FAILED;
    for (;;) {
        outcome oc = OUT_FAILED;
        poll_verdict v = attempt_poll(S, &A, fail, &oc);
        if (v == POLL_RETURN) return oc;
        if (v == POLL_STOP) break;
    }
    return attempt_classify(S, &A, fail);
}

/* The collective half of the health check: the job's launcher prefix (everything before the zaya
 * executable, e.g. `mpirun -np 4 ...`) runs `zaya bench coll` on a few small all-reduces with an exact
 * check. Returns 1 when it passed or there is no launcher (one process: nothing to check). */
static int health_collective(sup *S, char *why, size_t cap) {
    const zaya_supervise_opts *o = S->o;
    int k = -1, n = 0;
    while (o->argv[n]) n++;
    for (int i = 1; i < n && k < 0; i++) {
        const char *base = strrchr(o->argv[i], '/');
        if (!strcmp(base ? base + 1 : o->argv[i], "zaya")) k = i;
    }
    if (k < 0) return 1;
    char out[4096], logpath[4096];
    zaya_path_join(out, sizeof out, o->out_dir, "health-coll");
    zaya_path_join(logpath, sizeof logpath, o->out_dir, "health-coll.log");
    char *argv[ZAYA_FT_HEALTH_ARGS];
    const char *tail[] = {"bench", "coll", "-b", "8", "-e", "4K", "-n", "1", "-w", "1", "-c", "1", "--bare", "0", "--out", out, NULL};
    int m = 0;
    for (int i = 0; i <= k && m < ZAYA_FT_HEALTH_ARGS - 20; i++) argv[m++] = o->argv[i];
    for (int i = 0; tail[i]; i++) argv[m++] = (char *)tail[i];
    argv[m] = NULL;
    const char *env[] = {ZAYA_ENV_HEARTBEAT_DIR, NULL}; /* not a rank of the job: no heartbeats */
    zaya_proc_opts po = {.log_path = logpath, .new_group = 1, .die_with_parent = 1, .env = env};
    double limit = fmin(o->hang_cap_s, 120);
    zaya_proc_result r;
    if (zaya_proc_run(argv, &po, limit, &r) != ZAYA_OK) return snprintf(why, cap, "%s", zaya_error_message()), 0;
    if (r.timed_out) {
        zaya_proc_reap_orphans();
        return snprintf(why, cap, "collective self-test did not finish within %.0f s (log %.300s)", limit, logpath), 0;
    }
    if (zaya_proc_ok(&r)) return 1;
    char t[400];
    zaya_ft_log_tail(logpath, t, sizeof t, 2);
    snprintf(why, cap, "collective self-test (%s ... zaya bench coll) failed: %s", argv[0], t);
    return 0;
}

/* --hosts, before an attempt: every host checked; on the first attempt all must pass (an unreachable
 * host is an error before training), later a failing one is a host_lost incident and the job runs on
 * the others (after waiting up to --host-wait for the lost ones). 0: stop (diagnosis set). */
static int hosts_before_attempt(sup *S) {
    zaya_ft_hosts *H = S->hosts;
    const zaya_supervise_opts *o = S->o;
    char log[4200], d[700];
    zaya_path_join(log, sizeof log, o->out_dir, "host-check.log");
    if (S->probe_pid > 0) {
        kill(-S->probe_pid, SIGKILL);
        waitpid(S->probe_pid, NULL, 0);
        S->probe_pid = 0;
    }
    double until = now_s() + (S->attempt > 1 ? o->host_wait_s : 0);
    int lost;
    for (;;) {
        lost = 0;
        for (int i = 0; i < H->n; i++) {
            int was = S->attempt == 1 || H->h[i].healthy;
            int ok = zaya_ft_hosts_check(H, i, o, log);
            if (!ok) lost++;
            if (S->attempt == 1 && !ok) {
                snprintf(S->res->diagnosis, sizeof S->res->diagnosis,
                         "--hosts %s:%d: host %s is unreachable: %s (log: %.300s); nothing was started", o->hosts_file,
                         H->h[i].line, H->h[i].name, H->h[i].why, log);
                return 0;
            }
            if (was && !ok) {
                snprintf(d, sizeof d, "host %s lost: %s", H->h[i].name, H->h[i].why);
                incident *I = incident_add(S, "host_lost", -1, S->res->final_step, 0, d);
                if (I) incident_write(S, I);
                say(S, "%s", d);
            }
        }
        if (!lost || now_s() >= until || stop_signal) break;
        usleep(200000);
    }
    zaya_status st = zaya_ft_hosts_plan(H, o->argv, o->min_hosts);
    if (st != ZAYA_OK) {
        snprintf(S->res->diagnosis, sizeof S->res->diagnosis, "--hosts %s: %s; the checkpoints are left as they are",
                 o->hosts_file, zaya_error_message());
        return 0;
    }
    S->next_probe = now_s() + o->host_probe_s;
    return 1;
}

zaya_status zaya_supervise_run(const zaya_supervise_opts *o, zaya_supervise_result *res) {
    memset(res, 0, sizeof *res);
    if (!o->argv || !o->argv[0]) return zaya_error_set(ZAYA_EINVAL, "no command to supervise");
    ZAYA_TRY(zaya_mkdir_p(o->out_dir));
    sup S;
    memset(&S, 0, sizeof S);
    /* one supervisor per output directory: a second one would treat the first one's job as its own */
    ZAYA_TRY(zaya_dir_lock(o->out_dir, "supervise.lock", "zaya-supervise", &S.lock_fd));
    S.self = getpid();
    S.self_start = zaya_proc_start_time((int)S.self);
    S.o = o;
    S.res = res;
    S.t0 = now_s();
    S.mon = calloc(1, sizeof *S.mon);
    char path[4096];
    ZAYA_TRY(zaya_path_join(path, sizeof path, o->out_dir, "incidents.jsonl"));
    if (!S.mon) {
        zaya_dir_unlock(S.lock_fd);
        return zaya_error_set(ZAYA_ENOMEM, "supervisor state");
    }
    zaya_status st = zaya_ft_log_open(&S.log, path);
    if (st != ZAYA_OK) {
        free(S.mon);
        zaya_dir_unlock(S.lock_fd);
        return st;
    }
    if (gethostname(S.host, sizeof S.host) != 0) snprintf(S.host, sizeof S.host, "?");
    S.host[sizeof S.host - 1] = 0;
    for (char *c = S.host; *c; c++)
        if (*c == '"' || *c == '\\') *c = '_';
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    stop_signal = 0;
    struct sigaction sa, old_term, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGINT, &sa, &old_int);

    int failures = 0, no_progress = 0, external = 0, rollbacks = 0;
    S.rollback_to = -1;
    int64_t best = -1;
    int64_t *fail_steps = calloc((size_t)o->max_restarts + 2, sizeof(int64_t));
    zaya_ft_hosts *hosts = NULL;
    if (o->hosts_file) {
        hosts = calloc(1, sizeof *hosts);
        st = hosts ? zaya_ft_hosts_load(hosts, o->hosts_file, o->argv) : zaya_error_set(ZAYA_ENOMEM, "--hosts");
        if (st != ZAYA_OK) {
            snprintf(res->diagnosis, sizeof res->diagnosis, "%s", zaya_error_message());
            res->gave_up = 1;
        }
        S.hosts = hosts;
    }
    for (; !res->gave_up;) {
        S.attempt++;
        res->attempts = S.attempt;
        if (S.hosts && !hosts_before_attempt(&S)) {
            res->gave_up = 1;
            break;
        }
        if (o->health_check) {
            char why[900] = "";
            zaya_status hs = zaya_health_check_gemm();
            if (hs != ZAYA_OK) snprintf(why, sizeof why, "%s", zaya_error_message());
            if (hs != ZAYA_OK || !health_collective(&S, why, sizeof why)) {
                incident *I = incident_add(&S, "health_check", -1, -1, 0, why);
                if (I) incident_write(&S, I);
                snprintf(res->diagnosis, sizeof res->diagnosis, "health check failed (supervisor on %s): %s", S.host, why);
                res->gave_up = 1;
                break;
            }
            say(&S, "health check passed (exact-integer GEMM f32 and bf16; collective through the job's launcher)");
        }
        incident *f = NULL;
        outcome oc = run_attempt(&S, &f);
        /* before anything else (a restart above all): nothing of this attempt may survive it, even
         * when its direct child is already gone (mpirun killed, ranks re-parented to us) */
        kill_job_tree(&S);
        if (S.locked) {
            snprintf(res->diagnosis, sizeof res->diagnosis, "the job's output directory is held by another run: %s", S.locked_msg);
            res->gave_up = 1;
            if (f) f->pending = 0, incident_write(&S, f);
            break;
        }
        if (oc == OUT_DONE) {
            res->completed = 1;
            say(&S, "job completed at step %lld", (long long)res->final_step);
            break;
        }
        if (oc == OUT_PREEMPTED) {
            res->preempted = 1;
            snprintf(res->diagnosis, sizeof res->diagnosis,
                     "preempted: the job saved a checkpoint at step %lld; run the same command again to resume",
                     (long long)res->final_step);
            say(&S, "%s", res->diagnosis);
            break;
        }
        if (oc == OUT_ROLLBACK && ++rollbacks > o->max_restarts) {
            snprintf(res->diagnosis, sizeof res->diagnosis, "%d numeric-fault rollbacks (--max-restarts): the run keeps diverging",
                     rollbacks);
            res->gave_up = 1;
            break;
        }
        if (oc == OUT_ROLLBACK) continue;
        if (oc == OUT_EXTERNAL_PREEMPT && ++external > o->max_restarts) {
            snprintf(res->diagnosis, sizeof res->diagnosis, "the job was preempted from outside %d times (--max-restarts)", external);
            res->gave_up = 1;
            break;
        }
        if (oc == OUT_EXTERNAL_PREEMPT && S.grow_sent) {
            external--; /* asked by us: not a preemption from outside */
            say(&S, "the job checkpointed at step %lld: restarting on the healthy hosts", (long long)res->final_step);
            continue;
        }
        if (oc == OUT_EXTERNAL_PREEMPT) {
            incident *I = incident_add(&S, "preempted", 0, res->final_step, 0, "the job was stopped from outside after saving a checkpoint");
            if (I) I->pending = 1, I->reached = res->final_step;
            say(&S, "the job was preempted from outside: restarting it");
            continue;
        }
        /* a failure */
        int64_t reached = S.prev_start + S.prev_steps;
        if (reached > res->final_step) res->final_step = reached;
        if (f && S.mon->nranks == 0 && strstr(f->detail, "exited with status 127")) {
            snprintf(res->diagnosis, sizeof res->diagnosis, "the command could not be started: %s", f->detail);
            res->gave_up = 1;
            break;
        }
        if (reached > best) best = reached, no_progress = 0;
        else no_progress++;
        fail_steps[failures++] = f ? f->step : -1;
        int K = o->same_step_limit, same = K > 0 && failures >= K;
        for (int i = failures - K; same && i < failures; i++) same = fail_steps[i] == fail_steps[failures - 1];
        if (same) {
            snprintf(res->diagnosis, sizeof res->diagnosis,
                     "deterministic failure: %d %s incidents in a row at step %lld (%s); restarting again would loop, stopping. "
                     "Last: %s",
                     K, f ? f->kind : "?", (long long)fail_steps[failures - 1], f && f->rank >= 0 ? "see the attempt logs" : "before the first heartbeat",
                     f ? f->detail : "");
            res->gave_up = 1;
            break;
        }
        if (failures > o->max_restarts) {
            snprintf(res->diagnosis, sizeof res->diagnosis, "gave up after %d restarts (--max-restarts); last failure: %s",
                     o->max_restarts, f ? f->detail : "?");
            res->gave_up = 1;
            break;
        }
        double delay = fmin(o->backoff_s * pow(2.0, no_progress), o->backoff_max_s);
        say(&S, "restart %d/%d in %.1f s from the last good checkpoint", failures, o->max_restarts, delay);
        double until = now_s() + delay;
        while (now_s() < until && !stop_signal) usleep(10000);
        if (stop_signal) {
            res->preempted = 1;
            snprintf(res->diagnosis, sizeof res->diagnosis, "stopped between attempts; the last good checkpoint stands: run again to resume");
            break;
        }
    }
    res->wall_s = now_s() - S.t0;
    res->goodput = res->wall_s > 0 ? res->useful_s / res->wall_s : 0;
    res->incidents = S.log.n;
    for (int i = 0; i < S.log.n; i++)
        if (S.log.v[i].pending) incident_write(&S, &S.log.v[i]); /* never recovered */
    if (!o->quiet) zaya_ft_log_print(&S.log, res, stdout);
    zaya_ft_write_summary(res, o->out_dir);
    if (res->gave_up) say(&S, "%s", res->diagnosis);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGINT, &old_int, NULL);
    free(fail_steps);
    if (hosts) zaya_ft_hosts_free(hosts);
    free(hosts);
    free(S.mon);
    zaya_ft_log_close(&S.log);
    zaya_dir_unlock(S.lock_fd);
    return ZAYA_OK;
}

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
#include "zaya/timer.h"

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
    if (!strcmp(e->kind, "nonfinite") || !strcmp(e->kind, "spike")) {
        incident *I = incident_add(S, !strcmp(e->kind, "spike") ? "loss_spike" : "nonfinite", e->rank, e->step, latency, e->detail);
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
    } else if (!strcmp(e->kind, "rollback_skip")) {
        say(S, "step %lld: update skipped after the rollback", (long long)e->step);
    } else if (!strcmp(e->kind, "resumed")) {
        S->resume_step = e->step;
        S->resumed = 1;
    } else if (!strcmp(e->kind, "ckpt_fallback")) {
        incident *I = incident_add(S, "corrupt_checkpoint", e->rank, e->step, latency, e->detail);
        if (!I) return;
        I->recovery_s = 0;
        /* the steps between the checkpoint used and the unusable one (which existed: someone got there) */
        int64_t from = S->resumed ? S->resume_step : -1;
        I->steps_lost = from >= 0 && e->step > from ? e->step - from : 0;
        say(S, "corrupt checkpoint at restart: %s", e->detail);
        incident_write(S, I);
    } else if (!strcmp(e->kind, "latest_repaired")) {
        incident *I = incident_add(S, "latest_repaired", e->rank, e->step, latency, e->detail);
        if (!I) return;
        I->recovery_s = 0;
        I->steps_lost = 0; /* the newest complete checkpoint was used */
        say(S, "checkpoint pointer repaired at restart: %s", e->detail);
        incident_write(S, I);
    } else if (!strcmp(e->kind, "output_locked")) {
        S->locked = 1;
        snprintf(S->locked_msg, sizeof S->locked_msg, "%s", e->detail);
    } else if (!strcmp(e->kind, "done")) {
        S->done = 1;
    } else if (!strcmp(e->kind, "preempted")) {
        S->preempted = 1;
    } else if (!strcmp(e->kind, "fault_injected")) {
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
        if (local_rank(S, &S->mon->ranks[i]) && strcmp(S->mon->ranks[i].section, "done")) kill(S->mon->ranks[i].pid, sig);
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
    for (int i = 0; i < 50 && zaya_ft_reap_orphans(); i++) usleep(10000);
    return exited;
}

/* The whole job tree: local ranks named in the heartbeats that are not done (launched outside our
 * tree, e.g. by a resource manager), the process group, and every descendant, all reaped. */
static void kill_job_tree(sup *S) {
    for (int i = 0; i < S->mon->nranks; i++) {
        const zaya_ft_rank *r = &S->mon->ranks[i];
        if (local_rank(S, r) && strcmp(r->section, "done") && zaya_ft_pid_alive(r->pid)) kill(r->pid, SIGKILL);
    }
    if (S->job > 0) kill(-S->job, SIGKILL);
    int n = zaya_ft_kill_tree();
    if (n > 0) say(S, "killed and reaped %d leftover process%s of attempt %d", n, n == 1 ? "" : "es", S->attempt);
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
    const char *section = r->section;
    double startup = o->startup_timeout_s > 0 ? o->startup_timeout_s : o->hang_cap_s;
    double save = o->save_timeout_s > 0 ? o->save_timeout_s : o->hang_cap_s;
    double eval = o->eval_timeout_s > 0 ? fmin(o->eval_timeout_s, o->hang_cap_s) : o->hang_cap_s;
    if (!strcmp(section, "startup")) return startup;
    if (!strcmp(section, "checkpoint")) return save;
    int n = 0;
    double med = zaya_ft_monitor_median_regime(S->mon, r->phase, r->seq_len, &n);
    double step = n >= 3 ? fmin(fmax(o->hang_factor * med, o->hang_floor_s), o->hang_cap_s) : -1;
    if (!strcmp(section, "eval")) {
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
            char d[200];
            snprintf(d, sizeof d, "median busy time %.3f s per step vs %.3f s on the other ranks (%.1fx): reported, not killed",
                     med[i], ref, med[i] / ref);
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

/* One attempt: launch, watch, and (on a failure) terminate. Fills *fail for OUT_FAILED. */
static outcome run_attempt(sup *S, incident **fail) {
    const zaya_supervise_opts *o = S->o;
    char hbdir[4096], logpath[4096], name[64];
    snprintf(name, sizeof name, "heartbeat/attempt-%03d", S->attempt);
    zaya_path_join(hbdir, sizeof hbdir, o->out_dir, name);
    snprintf(name, sizeof name, "attempt-%03d.log", S->attempt);
    zaya_path_join(logpath, sizeof logpath, o->out_dir, name);
    zaya_mkdir_p(hbdir);
    zaya_ft_clear_dir(hbdir);
    zaya_ft_monitor_reset(S->mon, hbdir);
    S->resumed = S->done = S->preempted = S->first_step_seen = 0;
    S->resume_step = 0;
    *fail = NULL;
    fflush(NULL);
    double launch = now_s();
    pid_t pid = fork();
    if (pid < 0) {
        *fail = incident_add(S, "launch", -1, -1, 0, strerror(errno));
        return OUT_FAILED;
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* the job dies with us: the kernel SIGKILLs it when this process exits (kill -9 included),
         * and its ranks watch our pid and start time (src/train/lifeline.c) */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != S->self) _exit(127);
        char att[16], spid[24], sstart[32];
        snprintf(spid, sizeof spid, "%d", (int)S->self);
        snprintf(sstart, sizeof sstart, "%lld", S->self_start);
        setenv(ZAYA_ENV_SUPERVISOR_PID, spid, 1);
        setenv(ZAYA_ENV_SUPERVISOR_START, sstart, 1);
        snprintf(att, sizeof att, "%d", S->attempt);
        setenv("ZAYA_HEARTBEAT_DIR", hbdir, 1);
        setenv("ZAYA_ATTEMPT", att, 1);
        if (S->nskips) {
            char list[64 * 24] = "", num[48];
            for (int i = 0; i < S->nskips; i++) {
                snprintf(num, sizeof num, "%s%lld", i ? "," : "", (long long)S->skips[i]);
                strcat(list, num);
            }
            setenv("ZAYA_SKIP_STEPS", list, 1);
            if (o->lr_lower != 1 && o->lr_lower_steps > 0) {
                snprintf(num, sizeof num, "%g:%lld", o->lr_lower, (long long)o->lr_lower_steps);
                setenv("ZAYA_LR_LOWER", num, 1);
            }
        }
        if (S->rollback_to >= 0) {
            char to[24];
            snprintf(to, sizeof to, "%lld", (long long)S->rollback_to);
            setenv("ZAYA_ROLLBACK_TO", to, 1);
        }
        /* appended: a rerun of the same command keeps the earlier run's logs above a separator */
        int fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            char sep[200];
            time_t now = time(NULL);
            struct tm tmv;
            char when[64] = "?";
            if (localtime_r(&now, &tmv)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tmv);
            int n = snprintf(sep, sizeof sep, "==== zaya supervise (pid %d): attempt %d, %s ====\n", (int)S->self, S->attempt, when);
            if (write(fd, sep, (size_t)n) != n) { /* the log is best effort */
            }
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        execvp(o->argv[0], o->argv);
        fprintf(stderr, "zaya supervise: cannot run '%s': %s\n", o->argv[0], strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);
    S->job = pid;
    S->rollback_to = -1; /* only this attempt rolls back */
    say(S, "attempt %d: launched '%s' (pid %d), output in %s", S->attempt, o->argv[0], (int)pid, logpath);
    int status = 0, exited = 0;
    double forwarded = -1;
    char d[900];
    for (;;) {
        usleep((useconds_t)(o->poll_s * 1e6));
        double now = now_s();
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = 1;
            break;
        }
        zaya_ft_monitor_poll(S->mon, now, on_event, S);
        complete_pending(S);
        zaya_ft_monitor *m = S->mon;
        if (S->rollback_incident && forwarded < 0) {
            incident *I = S->rollback_incident;
            S->rollback_incident = NULL;
            I->pending = 1;
            I->reached = (S->resumed ? S->resume_step : 0) + m->ranks[0].steps_done;
            S->prev_train_time = m->ranks[0].train_time;
            S->prev_start = S->resumed ? S->resume_step : 0;
            S->prev_steps = m->ranks[0].steps_done;
            S->prev_pending = 1;
            terminate_job(S, pid, &status);
            return OUT_ROLLBACK;
        }
        if (stop_signal && forwarded < 0) {
            say(S, "received %s: asking the job to checkpoint and exit", strsignal(stop_signal));
            forwarded = now;
            if (m->nranks > 0) signal_ranks(S, SIGTERM);
            else kill(-pid, SIGTERM);
        }
        if (forwarded >= 0) {
            if (now - forwarded > o->preempt_timeout_s) {
                say(S, "the job did not stop within %.0f s of the request: terminating it", o->preempt_timeout_s);
                terminate_job(S, pid, &status);
                return OUT_PREEMPTED;
            }
            continue;
        }
        /* a rank process that vanished before finishing (faster than waiting for mpirun) */
        for (int i = 0; i < m->nranks; i++) {
            zaya_ft_rank *r = &m->ranks[i];
            /* our direct child is left to waitpid, which also tells how it ended */
            if (!local_rank(S, r) || r->pid == (int)pid || !strcmp(r->section, "done") || zaya_ft_pid_alive(r->pid)) continue;
            zaya_ft_monitor_poll(S->mon, now, on_event, S); /* it may have just finished */
            if (!strcmp(r->section, "done") || S->preempted) continue;
            snprintf(d, sizeof d, "rank %d (pid %d) died in section '%s' of step %lld", i, r->pid, r->section, (long long)r->step);
            *fail = incident_add(S, "crash", i, r->step, since_progress(S, r, now), d);
            break;
        }
        if (*fail) break;
        /* hang: no rank made progress within its section's timeout */
        if (m->nranks == 0) {
            double to = o->startup_timeout_s > 0 ? o->startup_timeout_s : o->hang_cap_s;
            if (now - launch > to) {
                snprintf(d, sizeof d, "no heartbeat within %.1f s of the launch", to);
                *fail = incident_add(S, "hang", -1, -1, now - launch - to, d);
                (*fail)->latency_s = now - launch;
                break;
            }
            continue;
        }
        int hung = 1, culprit = -1;
        double newest = -1, timeout = 0;
        for (int i = 0; i < m->nranks && hung; i++) {
            zaya_ft_rank *r = &m->ranks[i];
            if (!r->seen) continue;
            if (!strcmp(r->section, "done")) continue;
            double to = section_timeout(S, r);
            if (now - r->last_change <= to) hung = 0;
            if (r->last_change > newest) newest = r->last_change, timeout = to;
            /* the culprit: the rank that stopped first outside a collective */
            if (culprit < 0 || (strcmp(r->section, "communication") &&
                                (!strcmp(m->ranks[culprit].section, "communication") || r->last_change < m->ranks[culprit].last_change)))
                culprit = i;
        }
        if (hung && culprit >= 0) {
            zaya_ft_rank *r = &m->ranks[culprit];
            snprintf(d, sizeof d, "no progress for %.1f s (timeout %.1f s); rank %d stuck in section '%s' of step %lld",
                     now - newest, timeout, culprit, r->section, (long long)r->step);
            double lat = 0;
            for (int i = 0; i < m->nranks; i++)
                if (m->ranks[i].seen && strcmp(m->ranks[i].section, "done")) {
                    double sp = since_progress(S, &m->ranks[i], now);
                    lat = lat == 0 || sp < lat ? sp : lat;
                }
            *fail = incident_add(S, "hang", culprit, r->step, lat, d);
            break;
        }
        check_stragglers(S);
    }
    zaya_ft_monitor_poll(S->mon, now_s(), on_event, S);
    complete_pending(S);
    const zaya_ft_rank *r0 = &S->mon->ranks[0];
    int64_t start = S->resumed ? S->resume_step : 0;
    S->prev_train_time = r0->train_time;
    S->prev_start = start;
    S->prev_steps = r0->steps_done;
    int64_t reached = start + r0->steps_done;
    if (exited && !*fail) {
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (forwarded >= 0 && code != 0) { /* we asked it to stop: whatever it managed to save stands */
            S->res->final_step = reached;
            if (S->preempted) S->res->useful_s += r0->train_time; /* it saved after its last step */
            return OUT_PREEMPTED;
        }
        if (S->preempted || code == ZAYA_SUPERVISE_EXIT_PREEMPTED) {
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
        /* attribute the failure to the rank that stopped reporting first */
        int rank = -1;
        for (int i = 0; i < S->mon->nranks; i++)
            if (S->mon->ranks[i].seen && strcmp(S->mon->ranks[i].section, "done") &&
                (rank < 0 || S->mon->ranks[i].last_change < S->mon->ranks[rank].last_change))
                rank = i;
        char tail[sizeof((incident *)0)->detail - 64]; /* the prefix below and the tail fit in an incident */
        zaya_ft_log_tail(logpath, tail, sizeof tail, 3);
        if (WIFSIGNALED(status))
            snprintf(d, sizeof d, "job killed by signal %d (%s); log: %s", WTERMSIG(status), strsignal(WTERMSIG(status)), tail);
        else snprintf(d, sizeof d, "job exited with status %d; log: %s", code, tail);
        double lat = rank >= 0 ? since_progress(S, &S->mon->ranks[rank], now_s()) : 0;
        *fail = incident_add(S, "crash", rank, rank >= 0 ? S->mon->ranks[rank].step : -1, lat, d);
    }
    if (*fail) {
        (*fail)->pending = 1;
        (*fail)->reached = reached;
        S->prev_pending = 1;
        say(S, "%s detected after %.2f s: %s", (*fail)->kind, (*fail)->latency_s, (*fail)->detail);
        if (!exited) terminate_job(S, pid, &status);
    }
    return OUT_FAILED;
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
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return snprintf(why, cap, "fork: %s", strerror(errno)), 0;
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2), close(fd);
        unsetenv("ZAYA_HEARTBEAT_DIR");
        execvp(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid);
    double t0 = now_s(), limit = fmin(o->hang_cap_s, 120);
    int status = 0;
    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (now_s() - t0 > limit) {
            kill(-pid, SIGKILL);
            waitpid(pid, &status, 0);
            zaya_ft_reap_orphans();
            return snprintf(why, cap, "collective self-test did not finish within %.0f s (log %.300s)", limit, logpath), 0;
        }
        usleep(20000);
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return 1;
    char t[400];
    zaya_ft_log_tail(logpath, t, sizeof t, 2);
    snprintf(why, cap, "collective self-test (%s ... zaya bench coll) failed: %s", argv[0], t);
    return 0;
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
    S.self_start = zaya_ft_proc_start_time((int)S.self);
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
    for (;;) {
        S.attempt++;
        res->attempts = S.attempt;
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
    free(S.mon);
    zaya_ft_log_close(&S.log);
    zaya_dir_unlock(S.lock_fd);
    return ZAYA_OK;
}

/* Fault injection for drills and the fault-tolerance tests, and preemption. Faults are read from
 * the environment once (docs/fault-tolerance.md) and fire only while ZAYA_ATTEMPT <=
 * ZAYA_FAULT_ATTEMPTS (default 1), so the run that `zaya supervise` restarts completes:
 *   ZAYA_FAULT_CRASH=R:S[:SECTION]  rank R exits with status 3 on entering SECTION (default data) of step S
 *   ZAYA_FAULT_HANG=R:S[:SECTION]   rank R sleeps forever on entering SECTION (default forward) of step S
 *   ZAYA_FAULT_NAN=S                the reduced gradients of step S become NaN
 *   ZAYA_FAULT_SPIKE=S[:FACTOR]     the reduced gradients of step S are multiplied by FACTOR (1000)
 *   ZAYA_FAULT_CORRUPT_CKPT=S       once checkpoint S has landed, one byte of its model file is flipped
 *   ZAYA_FAULT_KILL_SAVE=R:S        rank R SIGKILLs itself while checkpoint S is being written
 *   ZAYA_FAULT_SLOW=R:SECONDS[:S]   rank R sleeps SECONDS in the data section of every step (from step S)
 * a handshake for drills that inject faults from outside (it injects nothing itself):
 *   ZAYA_PAUSE_AT=S[:SECTION] with ZAYA_PAUSE_FILE=PATH: every rank, on entering SECTION (default data)
 *                                   of step S, creates PATH.rRRRRR (its step and section) and waits,
 *                                   its heartbeat ticking, until that file is removed (first
 *                                   attempt only)
 * and the supervisor's rollback of numeric faults:
 *   ZAYA_ROLLBACK_TO=S              before resuming, checkpoints after step S are moved aside
 *   ZAYA_SKIP_STEPS=S1,S2,...       the updates of these steps are skipped (their batches consumed)
 *   ZAYA_LR_LOWER=X:N               the LR is multiplied by X for N steps from each skipped step */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/ft.h"
#include "train/internal.h"
#include "zaya/fs.h"
#include "zaya/log.h"

typedef struct fault {
    int on, rank;
    int64_t step;
    zaya_ft_section section;
    double value;
} fault;

static struct {
    int armed; /* this attempt injects faults */
    fault crash, hang, nan, spike, corrupt, kill_save, slow, pause;
    char pause_file[4096];
    int pause_armed; /* the pause holds the first attempt only, whatever ZAYA_FAULT_ATTEMPTS says */
    char ckpt_dir[4096];
    int64_t skip[64];
    int nskip;
    double lr_lower;
    int64_t lr_lower_steps;
} ft;

static volatile sig_atomic_t stop_requested;
static int preempted;

/* The first SIGTERM/SIGINT asks for a checkpoint at the end of the step; a second one means "now". */
static void on_stop_signal(int sig) {
    if (stop_requested) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    stop_requested = 1;
}

void zaya_train_stop_handler_install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

int zaya_train_stop_requested(void) { return stop_requested != 0; }

void zaya_train_stop_clear(void) { stop_requested = 0; }

static zaya_ft_section parse_section(const char *s, zaya_ft_section dflt) {
    if (!s || !*s) return dflt;
    for (int i = 0; i < ZAYA_FT_NSECTIONS; i++)
        if (!strcmp(s, zaya_ft_section_name((zaya_ft_section)i))) return (zaya_ft_section)i;
    ZAYA_WARN("fault injection: unknown section '%s', using '%s'", s, zaya_ft_section_name(dflt));
    return dflt;
}

/* "R:S[:SECTION]" (with_rank) or "S[:VALUE]". */
static void parse_fault(const char *env, fault *f, int with_rank, zaya_ft_section dflt, double dflt_value) {
    const char *v = getenv(env);
    if (!v || !*v) return;
    char buf[128], *save = NULL;
    snprintf(buf, sizeof buf, "%s", v);
    char *a = strtok_r(buf, ":", &save), *b = strtok_r(NULL, ":", &save), *c = strtok_r(NULL, ":", &save);
    f->on = 1;
    f->section = dflt;
    f->value = dflt_value;
    if (with_rank) {
        f->rank = a ? atoi(a) : 0;
        f->step = b ? atoll(b) : 0;
        f->section = parse_section(c, dflt);
    } else {
        f->step = a ? atoll(a) : 0;
        if (b) f->value = atof(b);
    }
}

/* Rollback: checkpoints newer than step `to` are moved aside (kept, renamed rolledback-step-N-PID)
 * and latest names the newest one left, so the resume that follows starts before the fault. Rank 0
 * does it; the others wait for it before they resume. */
static void rollback(zaya_trainer *t, int64_t to) {
    if (t->rank == 0) {
        int64_t best = -1;
        DIR *d = opendir(t->ckpt_dir);
        struct dirent *e;
        char from[4400], aside[4400];
        while (d && (e = readdir(d))) {
            long long n;
            char extra;
            if (strlen(e->d_name) != 13 || sscanf(e->d_name, "step-%lld%c", &n, &extra) != 1) continue;
            if (n > to) {
                snprintf(from, sizeof from, "%s/%s", t->ckpt_dir, e->d_name);
                snprintf(aside, sizeof aside, "%s/rolledback-%s-%d", t->ckpt_dir, e->d_name, (int)getpid());
                if (rename(from, aside) == 0) ZAYA_INFO("rollback before step %lld: moved %s aside", (long long)to, from);
            } else if (n > best) {
                best = n;
            }
        }
        if (d) closedir(d);
        char latest[4400], name[32];
        snprintf(latest, sizeof latest, "%s/latest", t->ckpt_dir);
        if (best >= 0) {
            int n = snprintf(name, sizeof name, "step-%08lld\n", (long long)best);
            if (zaya_write_file_atomic(latest, name, (size_t)n) != ZAYA_OK) ZAYA_WARN("%s", zaya_error_message());
        } else {
            unlink(latest); /* nothing saved before the fault: start over */
        }
    }
    char done = 1;
    if (t->world > 1) zaya_bcast_bytes(t->comm, &done, 1);
}

int zaya_ft_skip_forced(zaya_trainer *t) {
    for (int i = 0; i < ft.nskip; i++)
        if (ft.skip[i] == t->step) {
            if (t->rank == 0) ZAYA_WARN("step %lld: update skipped (rolled back past a numeric fault here)", (long long)t->step);
            return 1;
        }
    return 0;
}

double zaya_ft_lr_factor(const zaya_trainer *t) {
    for (int i = 0; i < ft.nskip; i++)
        if (t->step > ft.skip[i] && t->step <= ft.skip[i] + ft.lr_lower_steps) return ft.lr_lower;
    return 1;
}

void zaya_ft_init(zaya_trainer *t) {
    memset(&ft, 0, sizeof ft);
    snprintf(ft.ckpt_dir, sizeof ft.ckpt_dir, "%s", t->ckpt_dir);
    const char *att = getenv(ZAYA_ENV_ATTEMPT), *upto = getenv("ZAYA_FAULT_ATTEMPTS");
    int attempt = att ? atoi(att) : 1, n = upto ? atoi(upto) : 1;
    ft.armed = n <= 0 || attempt <= n;
    ft.pause_armed = attempt == 1;
    parse_fault("ZAYA_FAULT_CRASH", &ft.crash, 1, ZAYA_FT_DATA, 0);
    parse_fault("ZAYA_FAULT_HANG", &ft.hang, 1, ZAYA_FT_FORWARD, 0);
    parse_fault("ZAYA_FAULT_NAN", &ft.nan, 0, ZAYA_FT_DATA, 0);
    parse_fault("ZAYA_FAULT_SPIKE", &ft.spike, 0, ZAYA_FT_DATA, 1000);
    parse_fault("ZAYA_FAULT_CORRUPT_CKPT", &ft.corrupt, 0, ZAYA_FT_CHECKPOINT, 0);
    parse_fault("ZAYA_FAULT_KILL_SAVE", &ft.kill_save, 1, ZAYA_FT_CHECKPOINT, 0);
    const char *pf = getenv("ZAYA_PAUSE_FILE");
    if (pf && *pf) {
        snprintf(ft.pause_file, sizeof ft.pause_file, "%s.r%05d", pf, t->rank);
        parse_fault("ZAYA_PAUSE_AT", &ft.pause, 0, ZAYA_FT_DATA, 0);
        const char *pa = getenv("ZAYA_PAUSE_AT"), *c = pa ? strchr(pa, ':') : NULL;
        if (c) ft.pause.section = parse_section(c + 1, ZAYA_FT_DATA);
    }
    const char *slow = getenv("ZAYA_FAULT_SLOW");
    if (slow && *slow) { /* R:SECONDS[:FROM_STEP], every step (from FROM_STEP on) */
        ft.slow.on = 1;
        ft.slow.rank = atoi(slow);
        const char *c = strchr(slow, ':');
        ft.slow.value = c ? atof(c + 1) : 0.5;
        const char *f = c ? strchr(c + 1, ':') : NULL;
        ft.slow.step = f ? atoll(f + 1) : 0;
    }
    const char *sk = getenv(ZAYA_ENV_SKIP_STEPS);
    for (const char *p = sk; p && *p && ft.nskip < 64;) {
        ft.skip[ft.nskip++] = atoll(p);
        p = strchr(p, ',');
        if (p) p++;
    }
    const char *lr = getenv(ZAYA_ENV_LR_LOWER);
    ft.lr_lower = 1;
    if (lr && *lr) {
        ft.lr_lower = atof(lr);
        const char *c = strchr(lr, ':');
        ft.lr_lower_steps = c ? atoll(c + 1) : 0;
    }
    const char *rb = getenv(ZAYA_ENV_ROLLBACK_TO);
    if (rb && *rb) rollback(t, atoll(rb));
    /* a stop request that arrived before this run (between two runs of one process) stays pending */
    preempted = 0;
    zaya_train_stop_handler_install();
    zaya_hb_open(t->rank, t->world);
}

static int fires(const fault *f, int rank, int64_t step) {
    return ft.armed && f->on && f->rank == rank && f->step == step;
}

/* The pause handshake: announce the step and section in the pause file (written whole by a rename),
 * then wait until the drill removes it; the heartbeat keeps ticking, so no timeout fires meanwhile. */
static void pause_here(int64_t step, zaya_ft_section s) {
    if (!ft.pause_armed || !ft.pause.on || ft.pause.step != step || ft.pause.section != s) return;
    ft.pause.on = 0; /* once */
    char tmp[4200], body[96];
    snprintf(tmp, sizeof tmp, "%s.tmp", ft.pause_file);
    int n = snprintf(body, sizeof body, "{\"step\":%lld,\"section\":\"%s\",\"pid\":%d}\n", (long long)step,
                     zaya_ft_section_name(s), (int)getpid());
    FILE *f = fopen(tmp, "w");
    int ok = f && fwrite(body, 1, (size_t)n, f) == (size_t)n;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, ft.pause_file) != 0) {
        ZAYA_WARN("pause handshake: cannot create '%s'; not pausing", ft.pause_file);
        return;
    }
    struct timespec ts = {0, 5000000};
    while (access(ft.pause_file, F_OK) == 0) {
        zaya_hb_tick();
        nanosleep(&ts, NULL);
    }
}

void zaya_ft_enter(zaya_trainer *t, zaya_ft_section s) {
    zaya_hb_section(s, t->step);
    pause_here(t->step, s);
    if (s == ZAYA_FT_DATA && ft.slow.on && ft.armed && ft.slow.rank == t->rank && ft.slow.value > 0 && t->step >= ft.slow.step) {
        struct timespec ts = {(time_t)ft.slow.value, (long)((ft.slow.value - floor(ft.slow.value)) * 1e9)};
        nanosleep(&ts, NULL);
    }
    if (fires(&ft.crash, t->rank, t->step) && ft.crash.section == s) {
        zaya_hb_event(ZAYA_FT_EV_FAULT_INJECTED, t->step, "crash");
        fprintf(stderr, "zaya train: injected crash of rank %d at step %lld (%s)\n", t->rank, (long long)t->step,
                zaya_ft_section_name(s));
        _exit(3);
    }
    if (fires(&ft.hang, t->rank, t->step) && ft.hang.section == s) {
        zaya_hb_event(ZAYA_FT_EV_FAULT_INJECTED, t->step, "hang");
        fprintf(stderr, "zaya train: injected hang of rank %d at step %lld (%s)\n", t->rank, (long long)t->step,
                zaya_ft_section_name(s));
        for (;;) pause(); /* only SIGKILL ends this */
    }
}

void zaya_ft_inject_grads(zaya_trainer *t) {
    if (ft.armed && ft.nan.on && ft.nan.step == t->step) {
        if (t->rank == 0) zaya_hb_event(ZAYA_FT_EV_FAULT_INJECTED, t->step, "nan");
        zaya_engine_scale_grads(t->eng, NAN); /* every gradient NaN on the backend */
    }
    if (ft.armed && ft.spike.on && ft.spike.step == t->step) {
        if (t->rank == 0) zaya_hb_event(ZAYA_FT_EV_FAULT_INJECTED, t->step, "spike");
        const float f = (float)ft.spike.value;
        zaya_engine_scale_grads(t->eng, f);
    }
}

/* After a resume, rank 0 makes the directory agree with what was loaded: every step directory newer
 * than it that did not open or verify is moved aside (unusable-step-N-PID, kept for inspection until
 * the run commits step N again), and latest is rewritten when it was missing, garbage, behind,
 * pointing nowhere or at a bad checkpoint. Both are incidents: ckpt_fallback (a bad checkpoint cost
 * steps) or latest_repaired (latest alone was wrong; nothing lost). */
void zaya_ft_resumed(zaya_trainer *t, int found) {
    if (!found || t->rank != 0) return;
    const zaya_ckpt_resolution *r = &t->ckpt_res;
    char d[1400];
    snprintf(d, sizeof d, "resumed from step-%08lld", (long long)t->step);
    zaya_hb_event(ZAYA_FT_EV_RESUMED, t->step, d);
    if (r->latest == ZAYA_CKPT_LATEST_OK && r->nunusable == 0) return;
    for (int i = 0; i < r->nunusable; i++) {
        char bad[4300], aside[4300];
        snprintf(bad, sizeof bad, "%s/step-%08lld", t->ckpt_dir, (long long)r->unusable[i]);
        snprintf(aside, sizeof aside, "%s/unusable-step-%08lld-%d", t->ckpt_dir, (long long)r->unusable[i], (int)getpid());
        if (rename(bad, aside) == 0) ZAYA_WARN("moved the unusable checkpoint %s to %s", bad, aside);
    }
    char latest[4300], name[32];
    snprintf(latest, sizeof latest, "%s/latest", t->ckpt_dir);
    int n = snprintf(name, sizeof name, "step-%08lld\n", (long long)t->step);
    if (r->latest != ZAYA_CKPT_LATEST_OK) {
        if (zaya_write_file_atomic(latest, name, (size_t)n) != ZAYA_OK) ZAYA_WARN("%s", zaya_error_message());
        else ZAYA_WARN("latest was %s (%s): rewritten to step-%08lld from the step directories", zaya_ckpt_latest_state_name(r->latest),
                       r->detail, (long long)t->step);
    }
    if (r->nunusable > 0) {
        snprintf(d, sizeof d, "step-%08lld unusable: fell back to step-%08lld (latest %s; %s)", (long long)r->unusable[0],
                 (long long)t->step, zaya_ckpt_latest_state_name(r->latest), r->detail);
        zaya_hb_event(ZAYA_FT_EV_CKPT_FALLBACK, r->unusable[0], d);
    } else {
        snprintf(d, sizeof d, "latest %s: reconstructed as step-%08lld from the step directories (%s)",
                 zaya_ckpt_latest_state_name(r->latest), (long long)t->step, r->detail);
        zaya_hb_event(ZAYA_FT_EV_LATEST_REPAIRED, t->step, d);
    }
}

void zaya_ft_step_done(zaya_trainer *t, double seconds, double busy, int skipped, double loss, double grad_norm) {
    zaya_hb_step(t->step, seconds, busy);
    if (!skipped || t->rank != 0) return; /* every rank made the same decision: rank 0 reports it */
    char d[160];
    snprintf(d, sizeof d, "loss %.6g grad_norm %.6g: update skipped", loss, grad_norm);
    const char *kind = skipped == 2 ? ZAYA_FT_EV_ROLLBACK_SKIP : isfinite(loss) && isfinite(grad_norm) ? ZAYA_FT_EV_SPIKE : ZAYA_FT_EV_NONFINITE;
    zaya_hb_event(kind, t->step, d);
}

/* Kill-during-save: a watcher SIGKILLs the process once the staging directory of the checkpoint
 * exists, i.e. after the save started and before its rename commits it. */
static void *kill_watch(void *arg) {
    char prefix[64], committed[4200];
    snprintf(prefix, sizeof prefix, "step-%08lld.tmp-", (long long)(intptr_t)arg);
    snprintf(committed, sizeof committed, "%s/step-%08lld", ft.ckpt_dir, (long long)(intptr_t)arg);
    for (int i = 0; i < 200000; i++) { /* ~20 s at 100 us */
        DIR *d = opendir(ft.ckpt_dir);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (!strncmp(e->d_name, prefix, strlen(prefix))) {
                fprintf(stderr, "zaya train: injected SIGKILL during the write of checkpoint %s\n", e->d_name);
                kill(getpid(), SIGKILL);
            }
        if (d) closedir(d);
        if (access(committed, F_OK) == 0) { /* the save was faster than our polling: still crash */
            fprintf(stderr, "zaya train: injected SIGKILL just after the write of checkpoint %s\n", committed);
            kill(getpid(), SIGKILL);
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void zaya_ft_saving(zaya_trainer *t, int64_t step) {
    zaya_hb_section(ZAYA_FT_CHECKPOINT, step);
    pause_here(step, ZAYA_FT_CHECKPOINT);
    if (!fires(&ft.kill_save, t->rank, step)) return;
    zaya_hb_event(ZAYA_FT_EV_FAULT_INJECTED, step, "kill_save");
    pthread_t th;
    if (pthread_create(&th, NULL, kill_watch, (void *)(intptr_t)step) == 0) pthread_detach(th);
}

void zaya_ft_saved(zaya_trainer *t, int64_t step) {
    if (t->rank != 0 || !ft.armed || !ft.corrupt.on || ft.corrupt.step != step) return;
    if (zaya_train_checkpoint_wait(t) != ZAYA_OK) return;
    char path[4300];
    snprintf(path, sizeof path, "%s/step-%08lld/model-r00000.safetensors", t->ckpt_dir, (long long)step);
    FILE *f = fopen(path, "r+b");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long mid = ftell(f) / 2;
    fseek(f, mid, SEEK_SET);
    int c = fgetc(f);
    fseek(f, mid, SEEK_SET);
    fputc(c ^ 0xFF, f);
    fclose(f);
    zaya_hb_event(ZAYA_FT_EV_FAULT_INJECTED, step, "corrupt_ckpt");
    fprintf(stderr, "zaya train: injected corruption into %s\n", path);
}

int zaya_ft_stop_agreed(zaya_trainer *t) {
    double flag = stop_requested ? 1.0 : 0.0;
    if (t->world > 1 && zaya_dp_allreduce_sum_f64(&t->dp, &flag, 1) != ZAYA_OK) return 0;
    if (flag > 0 && !preempted) {
        preempted = 1;
        if (t->rank == 0) ZAYA_INFO("stop requested: checkpoint at step %lld, then exit", (long long)t->step + 1);
        zaya_hb_event(ZAYA_FT_EV_PREEMPT, t->step + 1, "stop requested: saving and exiting");
    }
    return flag > 0;
}

void zaya_ft_finish(zaya_trainer *t, int completed) {
    /* a failed rank keeps its last section: the supervisor attributes the failure to it */
    if (completed || preempted) zaya_hb_section(ZAYA_FT_DONE, t->step);
    if (t->rank == 0) zaya_hb_event(preempted ? ZAYA_FT_EV_PREEMPTED : completed ? ZAYA_FT_EV_DONE : ZAYA_FT_EV_FAILED, t->step, "");
    zaya_hb_close();
}

int zaya_ft_preempted(void) { return preempted; }

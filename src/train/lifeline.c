/* Who owns a training run. (1) The output directory: rank 0 holds an flock on OUT/train.lock (and on
 * CKPT/train.lock when --ckpt-dir is elsewhere) for the whole run, so a second trainer on the same
 * directory stops at once with an error naming the holder's pid; every rank learns the outcome, so no
 * rank waits forever. (2) Under `zaya supervise` (ZAYA_SUPERVISOR_PID/START in the environment) the
 * trainer dies with the supervisor: PR_SET_PDEATHSIG(SIGKILL) ties it to its parent (the supervisor,
 * or mpirun's launcher for MPI ranks) and a watcher thread SIGKILLs it within 0.1 s of the supervisor
 * process disappearing (pid and start time, so a reused pid does not count as alive). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "train/ft.h"
#include "train/internal.h"
#include "zaya/fs.h"
#include "zaya/ft_protocol.h"
#include "zaya/log.h"
#include "zaya/proc.h"

static int sup_pid;
static long long sup_start;

static void *watch_main(void *arg) {
    (void)arg;
    for (;;) {
        if (!zaya_proc_alive(sup_pid, sup_start)) {
            fprintf(stderr, "zaya train: the supervisor (pid %d) is gone: stopping this rank (pid %d)\n", sup_pid, (int)getpid());
            kill(getpid(), SIGKILL);
        }
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    return NULL;
}

void zaya_ft_lifeline_start(void) {
    const char *pid = getenv(ZAYA_ENV_SUPERVISOR_PID), *start = getenv(ZAYA_ENV_SUPERVISOR_START);
    if (!pid || !*pid || sup_pid) return;
    sup_pid = atoi(pid);
    sup_start = start ? atoll(start) : 0;
    if (sup_pid <= 0) return;
    /* the parent (supervisor or launcher) dying kills us; if it already died, the watcher sees it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (!zaya_proc_alive(sup_pid, sup_start)) {
        fprintf(stderr, "zaya train: the supervisor (pid %d) is gone before the start: exiting\n", sup_pid);
        _exit(1);
    }
    pthread_t th;
    if (pthread_create(&th, NULL, watch_main, NULL) == 0) pthread_detach(th);
}

zaya_status zaya_train_lock_outputs(zaya_trainer *t) {
    zaya_status s = ZAYA_OK;
    t->lock_fd = t->ckpt_lock_fd = -1;
    char msg[1024] = "";
    if (t->rank == 0) {
        s = zaya_dir_lock(t->opts->out_dir, "train.lock", "zaya-train", &t->lock_fd);
        char inside[4200];
        zaya_path_join(inside, sizeof inside, t->opts->out_dir, "ckpt");
        if (s == ZAYA_OK && strcmp(inside, t->ckpt_dir))
            s = zaya_dir_lock(t->ckpt_dir, "train.lock", "zaya-train", &t->ckpt_lock_fd);
        if (s != ZAYA_OK) {
            snprintf(msg, sizeof msg, "%s", zaya_error_message());
            zaya_hb_event(ZAYA_FT_EV_OUTPUT_LOCKED, 0, msg);
        }
    }
    if (t->world > 1) {
        char flag = s == ZAYA_OK ? 0 : 1;
        ZAYA_TRY(zaya_bcast_bytes(t->comm, &flag, 1));
        if (flag && t->rank != 0) return zaya_error_set(ZAYA_EBUSY, "rank 0 could not lock the output directory '%s'", t->opts->out_dir);
    }
    if (s != ZAYA_OK) return zaya_error_set(s, "%s", msg);
    return ZAYA_OK;
}

void zaya_train_unlock_outputs(zaya_trainer *t) {
    zaya_dir_unlock(t->lock_fd);
    zaya_dir_unlock(t->ckpt_lock_fd);
    t->lock_fd = t->ckpt_lock_fd = -1;
}

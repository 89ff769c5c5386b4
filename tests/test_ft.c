/* Fault-tolerance building blocks: the exact-integer GEMM health check, the robust median, the
 * supervisor's reading of the heartbeat channel written by the trainer's heartbeat writer (same
 * process here: the writer is driven through its environment variables), per-regime step samples,
 * the output-directory lock, process identity and the job-tree kill. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft/internal.h"
#include "testutil.h"
#include "train/ft.h"
#include "zaya/fs.h"

typedef struct seen {
    int n, nonfinite;
    int64_t step;
    char detail[600];
} seen;

static void on_event(void *ctx, const zaya_ft_event *e) {
    seen *s = ctx;
    s->n++;
    if (!strcmp(e->kind, ZAYA_FT_EV_NONFINITE)) {
        s->nonfinite++;
        s->step = e->step;
        snprintf(s->detail, sizeof s->detail, "%s", e->detail);
    }
}

int main(void) {
    CHECK(zaya_health_check_gemm() == ZAYA_OK, "GEMM self-test: %s", zaya_error_message());

    double v[] = {5, 1, 4, 2, 3}, w[] = {4, 1, 3, 2};
    CHECK(zaya_ft_median(v, 5) == 3, "median of 5 values");
    CHECK(zaya_ft_median(w, 4) == 2.5, "median of 4 values");

    char dir[64];
    snprintf(dir, sizeof dir, "/tmp/zaya_test_ft_%d", (int)getpid());
    CHECK(zaya_mkdir_p(dir) == ZAYA_OK, "mkdir");
    setenv("ZAYA_HEARTBEAT_DIR", dir, 1);
    setenv("ZAYA_ATTEMPT", "2", 1);
    zaya_hb_open(3, 4);
    zaya_ft_monitor *m = calloc(1, sizeof *m);
    zaya_ft_monitor_reset(m, dir);
    seen s = {0};
    zaya_ft_monitor_poll(m, 1.0, on_event, &s);
    CHECK(m->nranks == 4 && m->ranks[3].seen && m->ranks[3].section == ZAYA_FT_STARTUP, "startup heartbeat of rank 3");
    /* the protocol's section names round-trip; a record naming no section is not taken */
    for (int k = 0; k < ZAYA_FT_NSECTIONS; k++)
        CHECK(zaya_ft_section_parse(zaya_ft_section_name((zaya_ft_section)k)) == k, "section %d round trip", k);
    CHECK(zaya_ft_section_parse("bogus") == -1 && zaya_ft_section_parse(NULL) == -1, "unknown section");
    {
        char bad[256];
        snprintf(bad, sizeof bad, "%s/" ZAYA_FT_HB_RANK_FILE, dir, 1);
        FILE *f = fopen(bad, "w");
        CHECK(f != NULL, "write a foreign record");
        if (f) {
            fputs("{\"seq\":1,\"rank\":1,\"section\":\"bogus\",\"seq_end\":1}\n", f);
            fclose(f);
        }
        zaya_ft_monitor_poll(m, 1.5, on_event, &s);
        CHECK(!m->ranks[1].seen, "a record with an unknown section is ignored");
        unlink(bad);
    }
    CHECK(m->ranks[3].pid == (int)getpid() && m->ranks[3].world == 4, "pid %d world %d", m->ranks[3].pid, m->ranks[3].world);
    for (int step = 0; step < 4; step++) {
        zaya_hb_section(ZAYA_FT_FORWARD, step);
        zaya_hb_step(step, 0.25 * (step + 1), 0.2);
        zaya_ft_monitor_poll(m, 2.0 + step, on_event, &s);
    }
    CHECK(m->ranks[3].steps_done == 4 && m->ranks[3].step == 4, "steps_done %lld step %lld", m->ranks[3].steps_done,
          (long long)m->ranks[3].step);
    CHECK(m->nsamples == 4 && zaya_ft_monitor_median_step(m) == 0.625, "step-time samples %d, median %g", m->nsamples,
          zaya_ft_monitor_median_step(m));
    CHECK(m->ranks[3].last_change == 5.0, "progress time is the supervisor's clock (%g)", m->ranks[3].last_change);
    zaya_ft_monitor_poll(m, 9.0, on_event, &s); /* nothing new: progress time unchanged */
    CHECK(m->ranks[3].last_change == 5.0, "no change without a new record");
    zaya_hb_event("nonfinite", 7, "loss \"nan\"");
    zaya_ft_monitor_poll(m, 10.0, on_event, &s);
    zaya_ft_monitor_poll(m, 11.0, on_event, &s); /* events are delivered once */
    CHECK(s.nonfinite == 1 && s.step == 7 && !strcmp(s.detail, "loss 'nan'"), "nonfinite event: %d, step %lld, '%s'",
          s.nonfinite, (long long)s.step, s.detail);
    /* a new regime (phase 1, sequence length 64) starts uncalibrated; the old one keeps its samples */
    zaya_hb_regime(1, 64);
    for (int step = 4; step < 6; step++) {
        zaya_hb_section(ZAYA_FT_FORWARD, step);
        zaya_hb_step(step, 10.0, 9.0);
        zaya_ft_monitor_poll(m, 12.0 + step, on_event, &s);
    }
    int n0 = 0, n1 = 0;
    double med0 = zaya_ft_monitor_median_regime(m, 0, 0, &n0), med1 = zaya_ft_monitor_median_regime(m, 1, 64, &n1);
    CHECK(n0 == 4 && med0 == 0.625 && n1 == 2 && med1 == 10.0, "per-regime samples: %d at %g, %d at %g", n0, med0, n1, med1);
    CHECK(m->ranks[3].phase == 1 && m->ranks[3].seq_len == 64, "regime in the record");
    /* eval: each batch is a record; the longest gap between two of them is kept */
    zaya_hb_section(ZAYA_FT_EVAL, 6);
    zaya_ft_monitor_poll(m, 20.0, on_event, &s);
    zaya_hb_tick();
    zaya_ft_monitor_poll(m, 23.5, on_event, &s);
    zaya_hb_tick();
    zaya_ft_monitor_poll(m, 24.0, on_event, &s);
    CHECK(m->eval_gap_max == 3.5 && m->ranks[3].last_change == 24.0, "eval gap %g", m->eval_gap_max);
    zaya_hb_close();

    /* one lock per directory: the second taker is refused with the holder's pid */
    int fd1 = -1, fd2 = -1;
    CHECK(zaya_dir_lock(dir, "x.lock", "zaya-test", &fd1) == ZAYA_OK && fd1 >= 0, "lock: %s", zaya_error_message());
    char pid[32];
    snprintf(pid, sizeof pid, "pid %d (zaya-test", (int)getpid());
    CHECK(zaya_dir_lock(dir, "x.lock", "zaya-test", &fd2) == ZAYA_EBUSY && strstr(zaya_error_message(), pid) &&
              strstr(zaya_error_message(), "x.lock") && fd2 < 0,
          "second lock refused: %s", zaya_error_message());
    zaya_dir_unlock(fd1);
    CHECK(zaya_dir_lock(dir, "x.lock", "zaya-test", &fd2) == ZAYA_OK, "lock again after unlock");
    zaya_dir_unlock(fd2);

    /* process identity: a pid with another start time is not the same process */
    long long st = zaya_proc_start_time((int)getpid());
    CHECK(st > 0 && zaya_proc_alive((int)getpid(), st) && !zaya_proc_alive((int)getpid(), st + 1),
          "start time %lld identifies this process", st);
    /* the job tree: a child and its grandchild (in another session) are both killed, the child reaped */
    pid_t child = fork();
    if (child == 0) {
        if (fork() == 0) {
            setsid();
            for (;;) pause();
        }
        for (;;) pause();
    }
    usleep(100000);
    CHECK(zaya_proc_alive((int)child, 0), "child runs");
    int killed = zaya_proc_kill_descendants();
    CHECK(killed >= 2 && !zaya_proc_alive((int)child, 0) && waitpid(-1, NULL, WNOHANG) < 0, "tree killed (%d)", killed);
    /* the log tail of a diagnosis keeps the last line (the error) when the lines do not fit */
    char logp[128], tail[64], lg[400];
    snprintf(logp, sizeof logp, "%s/job.log", dir);
    int n = snprintf(lg, sizeof lg, "first line\n");
    for (int i = 0; i < 3; i++) n += snprintf(lg + n, sizeof lg - (size_t)n, "zaya warn: checkpoint step-%08d unusable: checksum\n", 4 * i);
    n += snprintf(lg + n, sizeof lg - (size_t)n, "zaya train: error: no loadable checkpoint\n\n");
    CHECK(zaya_write_file_atomic(logp, lg, (size_t)n) == ZAYA_OK, "job log");
    zaya_ft_log_tail(logp, tail, sizeof tail, 3);
    CHECK(strlen(tail) == sizeof tail - 1 && !strncmp(tail, "...", 3) && strstr(tail, "|zaya train: error: no loadable checkpoint") &&
              tail[strlen(tail) - 1] == 't',
          "long tail keeps its end: '%s'", tail);
    char wide[400];
    zaya_ft_log_tail(logp, wide, sizeof wide, 2);
    CHECK(!strcmp(wide, "zaya warn: checkpoint step-00000008 unusable: checksum|zaya train: error: no loadable checkpoint"),
          "short tail whole: '%s'", wide);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
    free(m);
    return th_finish("ft");
}

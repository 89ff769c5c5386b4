/* Kill during save: a child process saves large checkpoints in a loop and is SIGKILLed at random
 * instants (the first trial: stopped while its staging directory exists, so at least one kill lands
 * mid-save however loaded the machine); after every kill the root must still load (latest or a fallback), verify, and hold
 * exactly the data of the step it names. Usage: ckpt_kill [trials] [floats_per_array] */
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/alloc.h"
#include "zaya/ckpt.h"
#include "zaya/log.h"
#include "zaya/rng.h"
#include "zaya/timer.h"

static int64_t g_n;

static float value(int64_t step, int a, int64_t i) { return (float)(step * 1000 + a * 100) + (float)(i % 97); }

static void fill(float *x, int64_t step, int a) {
    for (int64_t i = 0; i < g_n; i++) x[i] = value(step, a, i);
}

static zaya_status save(const char *root, int64_t step, float *bufs[3]) {
    zaya_ckpt_options o = zaya_ckpt_default_options();
    o.keep_last = 2;
    zaya_ckpt_writer *w;
    ZAYA_TRY(zaya_ckpt_writer_init(&w, root, step, step, &o, NULL));
    for (int a = 0; a < 3; a++) fill(bufs[a], step, a);
    int64_t sh[1] = {g_n};
    zaya_ckpt_writer_add_model(w, "model.a", 1, sh, bufs[0]);
    zaya_ckpt_writer_add_model(w, "model.b", 1, sh, bufs[1]);
    zaya_ckpt_writer_add_shard(w, "opt.m", ZAYA_ST_F32, 1, sh, 0, g_n, bufs[2]);
    return zaya_ckpt_writer_commit(w, NULL);
}

/* Loads the root and checks the data against the step it claims. Returns the step or -1. */
static int64_t check_root(const char *root, float *tmp) {
    zaya_ckpt *c;
    if (zaya_ckpt_open_latest(&c, root, 1) != ZAYA_OK) {
        CHECK(0, "root does not load: %s", zaya_error_message());
        return -1;
    }
    const char *names[3] = {"model.a", "model.b", "opt.m"};
    int ok = 1;
    for (int a = 0; a < 3; a++) {
        ok &= zaya_ckpt_read_f32(c, names[a], 0, g_n, tmp) == ZAYA_OK;
        for (int64_t i = 0; i < g_n && ok; i += 4093) ok &= tmp[i] == value(c->step, a, i);
        ok &= tmp[g_n - 1] == value(c->step, a, g_n - 1);
    }
    CHECK(ok, "data of step %lld", (long long)c->step);
    int64_t s = c->step;
    zaya_ckpt_close(c);
    return s;
}

static int has_staging(const char *root) {
    DIR *d = opendir(root);
    struct dirent *e;
    int found = 0;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp-")) found = 1;
    if (d) closedir(d);
    return found;
}

/* Stops the child while a staging directory exists (checked with the child stopped), at most ~60 s. */
static void stop_mid_save(pid_t pid, const char *root) {
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 60000; i++) {
        if (has_staging(root)) {
            kill(pid, SIGSTOP);
            int st;
            waitpid(pid, &st, WUNTRACED);
            if (has_staging(root)) return;
            kill(pid, SIGCONT);
        }
        nanosleep(&ms, NULL);
    }
}

int main(int argc, char **argv) {
    int trials = argc > 1 ? atoi(argv[1]) : 10;
    g_n = argc > 2 ? atoll(argv[2]) : 8 << 20;
    zaya_log_set_level(ZAYA_LOG_ERROR);
    char root[256];
    snprintf(root, sizeof root, "/tmp/zaya_test_ckpt_kill_%d", (int)getpid());
    float *bufs[3];
    for (int a = 0; a < 3; a++) bufs[a] = zaya_malloc((size_t)g_n * 4);
    float *tmp = zaya_malloc((size_t)g_n * 4);
    double t0 = zaya_now_s();
    CHECK(save(root, 1, bufs) == ZAYA_OK, "first save: %s", zaya_error_message());
    double save_s = zaya_now_s() - t0;
    printf("one save of %.0f MB takes %.3f s\n", 3.0 * (double)g_n * 4 / 1e6, save_s);
    int64_t next = 2, mid_save = 0;
    for (int t = 0; t < trials; t++) {
        int64_t before = check_root(root, tmp);
        pid_t pid = fork();
        if (pid == 0) {
            for (int64_t s = next;; s++)
                if (save(root, s, bufs) != ZAYA_OK) _exit(3);
        }
        /* a random instant within roughly the first 2.5 saves of the child */
        double delay = save_s * 2.5 * zaya_rng_uniform_at(42, (uint64_t)t, 0);
        struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
        if (t == 0) stop_mid_save(pid, root), delay = 0;
        else nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child was killed (status %d)", status);
        char cmd[400];
        snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp-", root);
        int had_tmp = system(cmd) == 0;
        mid_save += had_tmp;
        int64_t after = check_root(root, tmp);
        CHECK(after >= before, "step went backwards: %lld -> %lld", (long long)before, (long long)after);
        printf("trial %2d: killed after %.3f s, %s, loads step %lld\n", t + 1, delay,
               had_tmp ? "mid-save (temp dir left)" : "between saves", (long long)after);
        next = after + 1;
        while (1) { /* steps the child committed but that retention or the kill made unreachable */
            char p[400];
            snprintf(p, sizeof p, "%s/step-%08lld", root, (long long)next);
            if (access(p, F_OK) != 0) break;
            next++;
        }
    }
    /* the next save cleans up what the killed children left behind */
    CHECK(save(root, next + 100, bufs) == ZAYA_OK, "save after kills: %s", zaya_error_message());
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls %s | grep -q tmp-", root);
    CHECK(system(cmd) != 0, "temp directories of dead writers removed");
    CHECK(check_root(root, tmp) == next + 100, "final step");
    printf("%lld of %d kills hit a save in progress\n", (long long)mid_save, trials);
    CHECK(mid_save > 0, "at least one kill landed mid-save (test must exercise the window)");
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    if (system(cmd)) {}
    for (int a = 0; a < 3; a++) zaya_free(bufs[a]);
    zaya_free(tmp);
    return th_finish("ckpt_kill");
}

/* core/proc.c: argv passed verbatim (no shell), exit codes and signals, exec failure, captured output,
 * environment changes, log files with a banner, timeouts that kill the child's group; core/fs.c: the
 * two halves of an atomic write. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "zaya/fs.h"
#include "zaya/proc.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void test_args_and_codes(void) {
    char *out = NULL;
    size_t len = 0;
    zaya_proc_result r;
    /* arguments with spaces, quotes and shell syntax arrive unchanged */
    char *a1[] = {"printf", "[%s]", "a b", "'q'", "$(x); rm -rf /", NULL};
    CHECK(zaya_proc_capture(a1, NULL, 4096, &out, &len, &r) == ZAYA_OK, "capture: %s", zaya_error_message());
    CHECK(zaya_proc_ok(&r) && !strcmp(out, "[a b]['q'][$(x); rm -rf /]"), "verbatim argv: '%s'", out);
    free(out);
    char *a2[] = {"sh", "-c", "exit 3", NULL};
    CHECK(zaya_proc_run(a2, NULL, 0, &r) == ZAYA_OK && r.exited && r.code == 3 && !zaya_proc_ok(&r), "exit 3: %d", r.code);
    char why[32];
    CHECK(!strcmp(zaya_proc_describe(&r, why, sizeof why), "exit 3"), "describe: %s", why);
    char *a3[] = {"sh", "-c", "kill -9 $$", NULL};
    CHECK(zaya_proc_run(a3, NULL, 0, &r) == ZAYA_OK && r.signaled && r.sig == SIGKILL, "signal: %d", r.sig);
    CHECK(!strcmp(zaya_proc_describe(&r, why, sizeof why), "signal 9"), "describe: %s", why);
    char *a4[] = {"/nonexistent/zaya-no-such-program", NULL};
    CHECK(zaya_proc_run(a4, NULL, 0, &r) == ZAYA_OK && r.exited && r.code == 127, "exec failure: %d", r.code);
    /* capture bound: the rest is drained, the child is not blocked */
    char *a5[] = {"sh", "-c", "i=0; while [ $i -lt 2000 ]; do echo 0123456789; i=$((i+1)); done", NULL};
    CHECK(zaya_proc_capture(a5, NULL, 100, &out, &len, &r) == ZAYA_OK && zaya_proc_ok(&r) && len == 100 && strlen(out) == 100,
          "bounded capture: %zu", len);
    free(out);
    CHECK(zaya_proc_which("sh", NULL, 0) == 1, "sh in PATH");
    char path[4096];
    CHECK(zaya_proc_which("sh", path, sizeof path) == 1 && path[0] == '/', "which: %s", path);
    CHECK(zaya_proc_which("zaya-no-such-program", NULL, 0) == 0, "absent program");
    CHECK(zaya_proc_run((char *[]){NULL}, NULL, 0, &r) == ZAYA_EINVAL, "empty argv");
}

static void test_env_log_timeout(const char *dir) {
    setenv("ZAYA_TEST_PROC_GONE", "present", 1);
    const char *env[] = {"ZAYA_TEST_PROC_SET=x y", "ZAYA_TEST_PROC_GONE", NULL};
    zaya_proc_opts o = {.env = env, .capture_stderr = 1};
    char *a1[] = {"sh", "-c", "echo \"$ZAYA_TEST_PROC_SET|${ZAYA_TEST_PROC_GONE-unset}\"; echo err >&2", NULL};
    char *out = NULL;
    zaya_proc_result r;
    CHECK(zaya_proc_capture(a1, &o, 4096, &out, NULL, &r) == ZAYA_OK && zaya_proc_ok(&r), "env run");
    CHECK(out && !strcmp(out, "x y|unset\nerr\n"), "env and stderr capture: '%s'", out ? out : "");
    free(out);
    CHECK(!strcmp(getenv("ZAYA_TEST_PROC_GONE"), "present"), "the parent's environment is untouched");

    char log[4096];
    zaya_path_join(log, sizeof log, dir, "child.log");
    zaya_proc_opts lo = {.log_path = log, .log_banner = "== banner ==\n"};
    char *a2[] = {"sh", "-c", "echo out; echo err >&2", NULL};
    CHECK(zaya_proc_run(a2, &lo, 0, &r) == ZAYA_OK && zaya_proc_ok(&r), "log run");
    lo.log_append = 1;
    lo.log_banner = NULL;
    CHECK(zaya_proc_run(a2, &lo, 0, &r) == ZAYA_OK && zaya_proc_ok(&r), "log append");
    char *text = NULL;
    size_t len = 0;
    CHECK(zaya_read_file(log, &text, &len) == ZAYA_OK && !strcmp(text, "== banner ==\nout\nerr\nout\nerr\n"), "log: '%s'",
          text ? text : "");
    free(text);

    /* a timeout kills the whole group: the grandchild (sleep) must be gone too */
    char pidf[4096];
    zaya_path_join(pidf, sizeof pidf, dir, "grandchild.pid");
    char script[8400];
    snprintf(script, sizeof script, "sleep 30 & echo $! > '%s'; wait", pidf);
    char *a3[] = {"sh", "-c", script, NULL};
    zaya_proc_opts go = {.new_group = 1};
    double t0 = now_s();
    CHECK(zaya_proc_run(a3, &go, 0.5, &r) == ZAYA_OK && r.timed_out && !zaya_proc_ok(&r), "timeout");
    double dt = now_s() - t0;
    CHECK(dt < 5, "killed after %.2f s", dt);
    CHECK(zaya_read_file(pidf, &text, &len) == ZAYA_OK, "grandchild pid");
    int gpid = text ? atoi(text) : 0;
    free(text);
    int alive = 1;
    for (int i = 0; i < 100 && alive; i++) {
        alive = gpid > 0 && kill(gpid, 0) == 0;
        if (alive) usleep(20000);
    }
    CHECK(gpid > 0 && !alive, "grandchild %d killed with the group", gpid);
}

static void test_atomic_halves(const char *dir) {
    char path[4096], tmp[4096];
    zaya_path_join(path, sizeof path, dir, "atomic.bin");
    CHECK(zaya_atomic_tmp_name(path, tmp, sizeof tmp) == ZAYA_OK && strstr(tmp, ".tmp.") != NULL, "tmp name: %s", tmp);
    char small[8];
    CHECK(zaya_atomic_tmp_name(path, small, sizeof small) == ZAYA_EINVAL, "too long");
    FILE *f = fopen(tmp, "wb");
    CHECK(f && fwrite("abc", 1, 3, f) == 3 && fclose(f) == 0, "write tmp");
    CHECK(zaya_atomic_publish(tmp, path) == ZAYA_OK, "publish: %s", zaya_error_message());
    struct stat st;
    CHECK(stat(path, &st) == 0 && st.st_size == 3 && stat(tmp, &st) != 0, "published, tmp gone");
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/no-such-dir/x", dir);
    f = fopen(tmp, "wb");
    if (f) fclose(f);
    CHECK(zaya_atomic_publish(tmp, missing) == ZAYA_EIO && strstr(zaya_error_message(), "rename"), "failed publish: %s",
          zaya_error_message());
    CHECK(stat(tmp, &st) != 0, "a failed publish removes its tmp");
    CHECK(zaya_fsync_dir(dir) == ZAYA_OK && zaya_fsync_parent(path) == ZAYA_OK, "fsync dir");
    CHECK(zaya_fsync_dir(missing) == ZAYA_EIO && strstr(zaya_error_message(), "no-such-dir"), "fsync missing: %s",
          zaya_error_message());
}

int main(void) {
    char dir[] = "/tmp/zaya_test_proc_XXXXXX";
    if (!mkdtemp(dir)) return 1;
    test_args_and_codes();
    test_env_log_timeout(dir);
    test_atomic_halves(dir);
    char *rm[] = {"rm", "-rf", dir, NULL};
    zaya_proc_result r;
    zaya_proc_run(rm, NULL, 0, &r);
    return th_finish("test_proc");
}

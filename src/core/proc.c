#include "zaya/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Child side, between fork and exec: only plain system calls and the environment. */
static void child_setup(const zaya_proc_opts *o, pid_t parent, int pipe_w, int pipe_r) {
    if (o->new_group) setpgid(0, 0);
    if (o->die_with_parent) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(127); /* the parent died before the request took effect */
    }
    if (o->log_path) {
        int fd = open(o->log_path, O_WRONLY | O_CREAT | (o->log_append ? O_APPEND : O_TRUNC), 0644);
        if (fd >= 0) {
            if (o->log_banner) {
                size_t n = strlen(o->log_banner);
                if (write(fd, o->log_banner, n) != (ssize_t)n) { /* the banner is best effort */
                }
            }
            dup2(fd, 1);
            dup2(fd, 2);
            if (fd > 2) close(fd);
        }
    }
    if (pipe_w >= 0) {
        close(pipe_r);
        dup2(pipe_w, 1);
        if (o->capture_stderr) dup2(pipe_w, 2);
        if (pipe_w > 2) close(pipe_w);
    }
    for (const char *const *e = o->env; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq) {
            unsetenv(*e);
            continue;
        }
        char name[256];
        size_t n = (size_t)(eq - *e);
        if (n == 0 || n >= sizeof name) continue;
        memcpy(name, *e, n);
        name[n] = 0;
        setenv(name, eq + 1, 1);
    }
    signal(SIGTERM, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
}

zaya_status zaya_proc_spawn(char *const argv[], const zaya_proc_opts *opts, pid_t *pid, int *out_fd) {
    static const zaya_proc_opts none = {0};
    const zaya_proc_opts *o = opts ? opts : &none;
    if (!argv || !argv[0]) return zaya_error_set(ZAYA_EINVAL, "no program to run");
    int fds[2] = {-1, -1};
    if (o->capture_stdout && pipe2(fds, O_CLOEXEC) != 0)
        return zaya_error_set(ZAYA_EIO, "cannot create a pipe for '%s': %s", argv[0], strerror(errno));
    pid_t parent = getpid();
    fflush(NULL);
    pid_t p = fork();
    if (p < 0) {
        int e = errno;
        if (fds[0] >= 0) close(fds[0]), close(fds[1]);
        return zaya_error_set(ZAYA_EIO, "cannot start '%s': fork: %s", argv[0], strerror(e));
    }
    if (p == 0) {
        child_setup(o, parent, fds[1], fds[0]);
        execvp(argv[0], argv);
        fprintf(stderr, "cannot run '%s': %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    if (o->new_group) setpgid(p, p); /* also here: no race with a kill of the group right after */
    if (fds[1] >= 0) close(fds[1]);
    if (out_fd) *out_fd = fds[0];
    else if (fds[0] >= 0) close(fds[0]);
    *pid = p;
    return ZAYA_OK;
}

static void fill(zaya_proc_result *r, int st) {
    r->exited = WIFEXITED(st);
    r->code = r->exited ? WEXITSTATUS(st) : 0;
    r->signaled = WIFSIGNALED(st);
    r->sig = r->signaled ? WTERMSIG(st) : 0;
}

zaya_status zaya_proc_wait(pid_t pid, double timeout_s, int group, zaya_proc_result *r) {
    memset(r, 0, sizeof *r);
    int st = 0;
    if (timeout_s <= 0) {
        while (waitpid(pid, &st, 0) < 0)
            if (errno != EINTR) return zaya_error_set(ZAYA_EIO, "waitpid(%d): %s", (int)pid, strerror(errno));
        fill(r, st);
        return ZAYA_OK;
    }
    double t0 = now_s();
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return zaya_error_set(ZAYA_EIO, "waitpid(%d): %s", (int)pid, strerror(errno));
        if (now_s() - t0 > timeout_s) {
            kill(group ? -pid : pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            }
            fill(r, st);
            r->timed_out = 1;
            return ZAYA_OK;
        }
        usleep(20000);
    }
    fill(r, st);
    return ZAYA_OK;
}

zaya_status zaya_proc_run(char *const argv[], const zaya_proc_opts *opts, double timeout_s, zaya_proc_result *r) {
    pid_t pid = -1;
    ZAYA_TRY(zaya_proc_spawn(argv, opts, &pid, NULL));
    return zaya_proc_wait(pid, timeout_s, opts && opts->new_group, r);
}

zaya_status zaya_proc_capture(char *const argv[], const zaya_proc_opts *opts, size_t max, char **out, size_t *len,
                              zaya_proc_result *r) {
    zaya_proc_opts o = opts ? *opts : (zaya_proc_opts){0};
    o.capture_stdout = 1;
    char *buf = malloc(max + 1);
    if (!buf) return zaya_error_set(ZAYA_ENOMEM, "cannot allocate %zu bytes for the output of '%s'", max, argv[0]);
    pid_t pid = -1;
    int fd = -1;
    zaya_status s = zaya_proc_spawn(argv, &o, &pid, &fd);
    if (s != ZAYA_OK) {
        free(buf);
        return s;
    }
    size_t n = 0;
    char drop[4096];
    for (;;) {
        ssize_t k = n < max ? read(fd, buf + n, max - n) : read(fd, drop, sizeof drop);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        if (n < max) n += (size_t)k;
    }
    close(fd);
    buf[n] = 0;
    s = zaya_proc_wait(pid, 0, o.new_group, r);
    if (s != ZAYA_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    if (len) *len = n;
    return ZAYA_OK;
}

int zaya_proc_ok(const zaya_proc_result *r) { return r->exited && r->code == 0 && !r->timed_out; }

const char *zaya_proc_describe(const zaya_proc_result *r, char *buf, size_t cap) {
    if (r->timed_out) snprintf(buf, cap, "timed out");
    else if (r->signaled) snprintf(buf, cap, "signal %d", r->sig);
    else snprintf(buf, cap, "exit %d", r->code);
    return buf;
}

int zaya_proc_which(const char *name, char *path_out, size_t cap) {
    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0) return 0;
        if (path_out) snprintf(path_out, cap, "%s", name);
        return 1;
    }
    const char *path = getenv("PATH");
    if (!path) path = "/usr/local/bin:/usr/bin:/bin";
    char dir[4096];
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        if (n > 0 && n + strlen(name) + 2 < sizeof dir) {
            memcpy(dir, p, n);
            dir[n] = '/';
            strcpy(dir + n + 1, name);
            struct stat st;
            if (stat(dir, &st) == 0 && S_ISREG(st.st_mode) && access(dir, X_OK) == 0) {
                if (path_out) snprintf(path_out, cap, "%s", dir);
                return 1;
            }
        }
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- processes by pid (/proc) */

/* The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses, so
 * they start after the last ')'), read into buf; NULL when the process is gone or unreadable. */
static const char *proc_stat_fields(int pid, char *buf, size_t cap) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

int zaya_proc_pid_alive(int pid) {
    if (pid <= 0) return 1;
    if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
    char buf[512];
    const char *p = proc_stat_fields(pid, buf, sizeof buf);
    return !(p && p[0] == 'Z');
}

long long zaya_proc_start_time(int pid) {
    char buf[1024];
    const char *p = proc_stat_fields(pid, buf, sizeof buf);
    if (!p) return 0;
    /* fields from 3 (state): 4 ppid, ... 22 starttime */
    int field = 3;
    for (const char *c = p; *c; c++)
        if (*c == ' ' && ++field == 22) return atoll(c + 1);
    return 0;
}

int zaya_proc_alive(int pid, long long start) {
    if (pid <= 0 || !zaya_proc_pid_alive(pid)) return 0;
    return start <= 0 || zaya_proc_start_time(pid) == start;
}

/* Parent pid of pid (0 when it is gone or unreadable). */
static int proc_ppid(int pid) {
    char buf[512], st;
    int ppid = 0;
    const char *p = proc_stat_fields(pid, buf, sizeof buf);
    return p && sscanf(p, "%c %d", &st, &ppid) == 2 ? ppid : 0;
}

/* Every descendant of this process (children, their children, ...), from /proc's parent links. */
static int list_descendants(int *out, int cap) {
    enum { MAXP = 65536 };
    static int pids[MAXP], ppids[MAXP];
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < MAXP) {
        int pid = atoi(e->d_name), ppid = pid > 0 ? proc_ppid(pid) : 0;
        if (ppid > 0) pids[n] = pid, ppids[n++] = ppid;
    }
    if (d) closedir(d);
    /* breadth first from ourselves: out[0] is this process, then every generation below it */
    int total = 0;
    out[total++] = (int)getpid();
    for (int i = 0; i < total && total < cap; i++)
        for (int j = 0; j < n && total < cap; j++)
            if (ppids[j] == out[i]) out[total++] = pids[j];
    memmove(out, out + 1, sizeof *out * (size_t)(total - 1));
    return total - 1;
}

int zaya_proc_kill_descendants(void) { return zaya_proc_kill_descendants_named(NULL, 0); }

int zaya_proc_count_descendants(void) {
    static int pids[4096];
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    int n = list_descendants(pids, 4096), alive = 0;
    for (int i = 0; i < n; i++) {
        char buf[512];
        const char *p = proc_stat_fields(pids[i], buf, sizeof buf);
        alive += p && p[0] != 'Z';
    }
    return alive;
}

int zaya_proc_kill_descendants_named(char *names, size_t cap) {
    static int pids[4096];
    int found = 0;
    size_t used = 0;
    if (names && cap) names[0] = 0;
    for (int round = 0; round < 200; round++) {
        int n = list_descendants(pids, 4096);
        for (int i = 0; i < n; i++) {
            /* a zombie has already exited: reaping it is not killing a leftover */
            char buf[512], comm[64] = "?", st = '?';
            const char *p = proc_stat_fields(pids[i], buf, sizeof buf);
            const char *lp = strchr(buf, '(');
            if (p) st = p[0];
            if (p && lp && p - 2 > lp + 1) snprintf(comm, sizeof comm, "%.*s", (int)(p - 2 - lp - 1), lp + 1);
            if (st != 'Z' && round == 0) {
                found++;
                if (names && used + 80 < cap)
                    used += (size_t)snprintf(names + used, cap - used, "%s%s (pid %d)", used ? ", " : "", comm, pids[i]);
            }
            kill(pids[i], SIGKILL);
        }
        int reaped = 0;
        while (waitpid(-1, NULL, WNOHANG) > 0) reaped++;
        if (n == 0) break;
        if (!reaped) usleep(5000);
    }
    return found;
}

int zaya_proc_reap_orphans(void) {
    int found = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int pid = atoi(e->d_name);
        if (pid > 0 && proc_ppid(pid) == (int)getpid()) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            found++;
        }
    }
    if (d) closedir(d);
    return found;
}

/* Processes and files of a supervised job: liveness (zombies count as dead), orphans re-parented to
 * the supervisor (a child subreaper), the tail of a job log, a heartbeat directory's cleanup. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ft/internal.h"
#include "zaya/fs.h"

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

int zaya_ft_pid_alive(int pid) {
    if (pid <= 0) return 1;
    if (kill(pid, 0) != 0 && errno == ESRCH) return 0;
    char buf[512];
    const char *p = proc_stat_fields(pid, buf, sizeof buf);
    return !(p && p[0] == 'Z');
}

long long zaya_ft_proc_start_time(int pid) {
    char buf[1024];
    const char *p = proc_stat_fields(pid, buf, sizeof buf);
    if (!p) return 0;
    /* fields from 3 (state): 4 ppid, ... 22 starttime */
    int field = 3;
    for (const char *c = p; *c; c++)
        if (*c == ' ' && ++field == 22) return atoll(c + 1);
    return 0;
}

int zaya_ft_process_alive(int pid, long long start) {
    if (pid <= 0 || !zaya_ft_pid_alive(pid)) return 0;
    return start <= 0 || zaya_ft_proc_start_time(pid) == start;
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

int zaya_ft_kill_tree(void) {
    int pids[4096], found = 0;
    for (int round = 0; round < 200; round++) {
        int n = list_descendants(pids, 4096);
        for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
        int reaped = 0;
        while (waitpid(-1, NULL, WNOHANG) > 0) reaped++;
        found += n;
        if (n == 0) break;
        if (!reaped) usleep(5000);
    }
    return found;
}

/* Children the job orphaned were re-parented to us (subreaper): kill and reap them. */
int zaya_ft_reap_orphans(void) {
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

/* Last lines of a job log, for diagnoses. When they do not fit, their end is kept ("..." + the last
 * cap - 4 bytes): the error that stopped the job is the last line. */
void zaya_ft_log_tail(const char *path, char *out, size_t cap, int lines) {
    out[0] = 0;
    if (cap < 8) return;
    char *data = NULL;
    size_t len = 0;
    if (zaya_read_file(path, &data, &len) != ZAYA_OK) return;
    size_t i = len;
    while (i > 0 && (data[i - 1] == '\n')) i--;
    size_t end = i;
    for (int n = 0; i > 0 && n < lines; i--)
        if (data[i - 1] == '\n' && ++n == lines) break;
    if (end - i > cap - 1) snprintf(out, cap, "...%.*s", (int)(cap - 4), data + end - (cap - 4));
    else snprintf(out, cap, "%.*s", (int)(end - i), data + i);
    for (char *c = out; *c; c++)
        if (*c == '\n') *c = '|';
    free(data);
}

void zaya_ft_clear_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
}


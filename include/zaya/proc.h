/* Child processes: one way to start them (fork + exec of an argv, never a shell, so no argument is
 * ever quoted or split), with the options zaya's callers need (log file, captured stdout, own process
 * group, death with the parent, environment changes), and one way to wait for them with a timeout. */
#ifndef ZAYA_PROC_H
#define ZAYA_PROC_H

#include <stddef.h>
#include <sys/types.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_proc_opts {
    const char *log_path;       /* stdout and stderr into this file (NULL: inherited) */
    int log_append;             /* append to log_path instead of truncating it */
    const char *log_banner;     /* written to the log first (NULL: none) */
    int capture_stdout;         /* stdout into a pipe whose read end zaya_proc_spawn returns */
    int capture_stderr;         /* with capture_stdout: stderr into the same pipe */
    int new_group;              /* the child leads its own process group (killed as a group) */
    int die_with_parent;        /* SIGKILL when this process exits (PR_SET_PDEATHSIG) */
    const char *const *env;     /* NULL-terminated: "NAME=VALUE" sets, "NAME" removes */
} zaya_proc_opts;

typedef struct zaya_proc_result {
    int exited, code;   /* normal exit and its status */
    int signaled, sig;  /* killed by a signal */
    int timed_out;      /* the wait's limit passed; the child (its group with new_group) was killed */
} zaya_proc_result;

/* Starts argv (argv[0] looked up in PATH when it has no '/'). With capture_stdout, *out_fd is the
 * read end of the pipe (the caller closes it); otherwise out_fd may be NULL. An exec failure makes the
 * child exit 127 with a message on its stderr. */
zaya_status zaya_proc_spawn(char *const argv[], const zaya_proc_opts *opts, pid_t *pid, int *out_fd);
/* Waits for pid; timeout_s <= 0 waits without a limit. On timeout the child (its group when `group`)
 * gets SIGKILL and is reaped. Errors only when waiting itself fails. */
zaya_status zaya_proc_wait(pid_t pid, double timeout_s, int group, zaya_proc_result *r);
/* Spawn + wait. */
zaya_status zaya_proc_run(char *const argv[], const zaya_proc_opts *opts, double timeout_s, zaya_proc_result *r);
/* Spawn with stdout captured (at most max bytes kept; the rest is read and dropped) + wait. *out is
 * malloc'd and NUL-terminated. */
zaya_status zaya_proc_capture(char *const argv[], const zaya_proc_opts *opts, size_t max, char **out, size_t *len,
                              zaya_proc_result *r);
/* 1 when the result is a clean exit 0. */
int zaya_proc_ok(const zaya_proc_result *r);
/* "exit 3", "signal 9", "timed out" into buf. */
const char *zaya_proc_describe(const zaya_proc_result *r, char *buf, size_t cap);
/* 1 when `name` is an executable file in PATH (or a path to one); its path into `path` when not NULL. */
int zaya_proc_which(const char *name, char *path, size_t cap);

/* Processes by pid, from /proc. Liveness: a zombie counts as dead; pid <= 0 counts as alive. */
int zaya_proc_pid_alive(int pid);
/* The start time of pid (clock ticks since boot, /proc/PID/stat field 22; 0 when unknown) and whether
 * pid is that same process, alive (start <= 0: any process with that pid). Together they identify a
 * process across pid reuse (the supervisor's lifeline, src/train/lifeline.c). */
long long zaya_proc_start_time(int pid);
int zaya_proc_alive(int pid, long long start);
/* SIGKILL every descendant of this process (all generations, from /proc's parent links) and reap
 * them; returns how many were found. */
int zaya_proc_kill_descendants(void);
/* The same; counts only processes still running when found (zombies are reaped, not counted) and
 * names them in names ("comm (pid N), ..."; may be NULL). */
int zaya_proc_kill_descendants_named(char *names, size_t cap);
/* Reaps exited children and returns how many descendants are still running. */
int zaya_proc_count_descendants(void);
/* SIGKILL and reap the processes re-parented to this one (a child subreaper); returns how many. */
int zaya_proc_reap_orphans(void);

#ifdef __cplusplus
}
#endif

#endif

/* `zaya supervise --hosts FILE`: the host list of an elastic job (hosts.c). The file is an Open MPI
 * hostfile (`HOST [slots=N] [max_slots=N]`, `#` comments); before every attempt each host is checked
 * (a probe through the job's launcher), the world is the slots of the healthy ones (cut down to a
 * multiple of the run's --cp), and the launcher gets `-np W --host H1:S1,...` of those. */
#ifndef ZAYA_FT_HOSTS_H
#define ZAYA_FT_HOSTS_H

#include <sys/types.h>

#include "zaya/ft.h"

#define ZAYA_FT_MAX_HOSTS 256

typedef struct zaya_ft_host {
    char name[128];
    int slots;
    int line;
    int healthy;     /* the last check's verdict */
    int ever_lost;
    char why[256];   /* why the last check failed */
} zaya_ft_host;

typedef struct zaya_ft_hosts {
    zaya_ft_host h[ZAYA_FT_MAX_HOSTS];
    int n;
    int cp;          /* the job's --cp (1 without) */
    int launcher_at; /* argv index of the launcher (mpirun) */
    int zaya_at;     /* argv index of the zaya executable */
    char **argv;     /* this attempt's command (owned) */
    int world, used_hosts;
    char plan[512];  /* "-np W --host ...", for the log */
} zaya_ft_hosts;

/* Reads and validates FILE (unknown keys, slots < 1, duplicates, names that do not resolve: errors
 * naming the file and line) and the job's command (a launcher first, no -np/--host/--hostfile of its
 * own, the zaya executable and its --cp found). */
zaya_status zaya_ft_hosts_load(zaya_ft_hosts *H, const char *path, char **job_argv);
void zaya_ft_hosts_free(zaya_ft_hosts *H);
/* Checks host i (the probe command, bounded by timeout_s); sets healthy / why; returns healthy. */
int zaya_ft_hosts_check(zaya_ft_hosts *H, int i, const zaya_supervise_opts *o, const char *logpath);
/* The attempt's command from the healthy hosts: the slots of each host in file order, the world cut
 * to a multiple of cp (slots dropped from the last hosts); ZAYA_EINVAL when fewer than min_hosts are
 * healthy or no world is left. */
zaya_status zaya_ft_hosts_plan(zaya_ft_hosts *H, char **job_argv, int min_hosts);
/* The same check started in the background (while the job runs: is a lost host back?); poll: 1
 * healthy, 0 failed (or past timeout_s: killed), -1 still running. */
zaya_status zaya_ft_hosts_probe_start(zaya_ft_hosts *H, int i, const zaya_supervise_opts *o, const char *logpath, pid_t *pid);
int zaya_ft_hosts_probe_poll(pid_t pid, double started, double now, double timeout_s);

#endif

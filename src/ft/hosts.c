/* The host list of `zaya supervise --hosts FILE` (hosts.h, docs/fault-tolerance.md "Hosts"). */
#include "hosts.h"

#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <signal.h>
#include <sys/wait.h>

#include "zaya/proc.h"

static const char *base(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int is_launcher(const char *a) {
    const char *b = base(a);
    return !strcmp(b, "mpirun") || !strcmp(b, "mpiexec") || !strcmp(b, "orterun") || !strcmp(b, "prterun");
}

static int is_zaya(const char *a) { return !strcmp(base(a), "zaya"); }

/* Launcher options the supervisor owns under --hosts. */
static const char *owned_option(const char *a) {
    static const char *own[] = {"-np", "-n", "-c", "--np", "--n", "-H", "--host", "-host", "--hostfile", "-hostfile",
                                "--machinefile", "-machinefile", "--default-hostfile", NULL};
    for (int i = 0; own[i]; i++) {
        size_t n = strlen(own[i]);
        if (!strncmp(a, own[i], n) && (a[n] == 0 || a[n] == '=')) return own[i];
    }
    return NULL;
}

static zaya_status parse_line(zaya_ft_hosts *H, const char *path, int lineno, char *s) {
    char *hash = strchr(s, '#');
    if (hash) *hash = 0;
    char *tok = strtok(s, " \t\r\n");
    if (!tok) return ZAYA_OK;
    if (H->n == ZAYA_FT_MAX_HOSTS) return zaya_error_set(ZAYA_EINVAL, "%s:%d: more than %d hosts", path, lineno, ZAYA_FT_MAX_HOSTS);
    if (strlen(tok) >= sizeof H->h[0].name)
        return zaya_error_set(ZAYA_EINVAL, "%s:%d: host name '%.40s...' is too long", path, lineno, tok);
    zaya_ft_host *h = &H->h[H->n];
    memset(h, 0, sizeof *h);
    snprintf(h->name, sizeof h->name, "%s", tok);
    h->slots = 1;
    h->line = lineno;
    while ((tok = strtok(NULL, " \t\r\n"))) {
        char *eq = strchr(tok, '=');
        if (!eq) return zaya_error_set(ZAYA_EINVAL, "%s:%d: '%s' is not KEY=VALUE (slots=N, max_slots=N)", path, lineno, tok);
        *eq = 0;
        const char *v = eq + 1;
        char *end = NULL;
        long n = strtol(v, &end, 10);
        int numeric = *v && end && !*end && isdigit((unsigned char)*v);
        if (!strcmp(tok, "slots")) {
            if (!numeric) return zaya_error_set(ZAYA_EINVAL, "%s:%d: host %s: slots='%s' is not a number", path, lineno, h->name, v);
            if (n < 1) return zaya_error_set(ZAYA_EINVAL, "%s:%d: host %s has no slots (slots=%ld)", path, lineno, h->name, n);
            if (n > 4096) return zaya_error_set(ZAYA_EINVAL, "%s:%d: host %s: slots=%ld is more than 4096", path, lineno, h->name, n);
            h->slots = (int)n;
        } else if (!strcmp(tok, "max_slots") || !strcmp(tok, "max-slots")) {
            if (!numeric) return zaya_error_set(ZAYA_EINVAL, "%s:%d: host %s: %s='%s' is not a number", path, lineno, h->name, tok, v);
        } else {
            return zaya_error_set(ZAYA_EINVAL, "%s:%d: host %s: unknown key '%s' (slots, max_slots)", path, lineno, h->name, tok);
        }
    }
    for (int i = 0; i < H->n; i++)
        if (!strcmp(H->h[i].name, h->name))
            return zaya_error_set(ZAYA_EINVAL, "%s:%d: host %s is listed twice (lines %d and %d)", path, lineno, h->name,
                                  H->h[i].line, lineno);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    int rc = getaddrinfo(h->name, NULL, &hints, &ai);
    if (rc != 0) return zaya_error_set(ZAYA_EINVAL, "%s:%d: unknown host '%s' (%s)", path, lineno, h->name, gai_strerror(rc));
    freeaddrinfo(ai);
    H->n++;
    return ZAYA_OK;
}

zaya_status zaya_ft_hosts_load(zaya_ft_hosts *H, const char *path, char **argv) {
    memset(H, 0, sizeof *H);
    H->cp = 1;
    H->launcher_at = H->zaya_at = -1;
    FILE *f = fopen(path, "r");
    if (!f) return zaya_error_set(ZAYA_EIO, "--hosts %s: cannot open: %s", path, strerror(errno));
    char line[1024];
    int lineno = 0;
    zaya_status st = ZAYA_OK;
    while (st == ZAYA_OK && fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f)) st = zaya_error_set(ZAYA_EINVAL, "%s:%d: line longer than %zu bytes", path, lineno, sizeof line - 2);
        else st = parse_line(H, path, lineno, line);
    }
    fclose(f);
    ZAYA_TRY(st);
    if (H->n == 0) return zaya_error_set(ZAYA_EINVAL, "--hosts %s: no host in the file", path);
    /* the job: LAUNCHER [options] ... zaya train ... [--cp N] */
    for (int i = 0; argv[i]; i++) {
        if (H->launcher_at < 0 && is_launcher(argv[i])) H->launcher_at = i;
        else if (H->launcher_at >= 0 && H->zaya_at < 0 && is_zaya(argv[i])) H->zaya_at = i;
        if (H->launcher_at >= 0 && H->zaya_at < 0) {
            const char *own = owned_option(argv[i]);
            if (own)
                return zaya_error_set(ZAYA_EINVAL, "--hosts: the job's launcher option '%s' is the supervisor's to choose "
                                                   "(it passes -np and --host of the healthy hosts): remove it", argv[i]);
        }
        if (H->zaya_at >= 0 && i > H->zaya_at && (!strcmp(argv[i], "--cp") || !strncmp(argv[i], "--cp=", 5))) {
            const char *v = argv[i][4] == '=' ? argv[i] + 5 : argv[i + 1];
            int cp = v ? atoi(v) : 0;
            if (cp < 1) return zaya_error_set(ZAYA_EINVAL, "--hosts: the job's --cp '%s' is not a positive number", v ? v : "");
            H->cp = cp;
        }
    }
    if (H->launcher_at < 0)
        return zaya_error_set(ZAYA_EINVAL, "--hosts: the job must start with its launcher (mpirun ... zaya train ...): "
                                           "'%s' is not mpirun, mpiexec, orterun or prterun", argv[0]);
    if (H->zaya_at < 0) return zaya_error_set(ZAYA_EINVAL, "--hosts: no zaya executable after the launcher in the job's command");
    return ZAYA_OK;
}

void zaya_ft_hosts_free(zaya_ft_hosts *H) {
    if (H->argv) {
        for (int i = 0; H->argv[i]; i++) free(H->argv[i]);
        free(H->argv);
    }
    H->argv = NULL;
}

zaya_status zaya_ft_hosts_plan(zaya_ft_hosts *H, char **argv, int min_hosts) {
    int slots[ZAYA_FT_MAX_HOSTS], world = 0, healthy = 0;
    for (int i = 0; i < H->n; i++) {
        slots[i] = H->h[i].healthy ? H->h[i].slots : 0;
        world += slots[i];
        healthy += H->h[i].healthy;
    }
    if (healthy < min_hosts)
        return zaya_error_set(ZAYA_EINVAL, "%d of %d hosts healthy, fewer than --min-hosts %d", healthy, H->n, min_hosts);
    /* the world must divide into CP groups: drop slots from the last hosts */
    int drop = world % H->cp;
    for (int i = H->n - 1; i >= 0 && drop > 0; i--) {
        int d = slots[i] < drop ? slots[i] : drop;
        slots[i] -= d, drop -= d, world -= d;
    }
    if (world < 1)
        return zaya_error_set(ZAYA_EINVAL, "the %d healthy host%s (%d slot%s) cannot hold one CP group of --cp %d", healthy,
                              healthy == 1 ? "" : "s", world + world % H->cp, world == 1 ? "" : "s", H->cp);
    zaya_ft_hosts_free(H);
    int argc = 0;
    while (argv[argc]) argc++;
    H->argv = calloc((size_t)argc + 5, sizeof(char *));
    if (!H->argv) return zaya_error_set(ZAYA_ENOMEM, "--hosts: the job's command");
    char np[16], hosts[ZAYA_FT_MAX_HOSTS * 140] = "";
    snprintf(np, sizeof np, "%d", world);
    size_t off = 0;
    H->used_hosts = 0;
    for (int i = 0; i < H->n; i++)
        if (slots[i] > 0) {
            off += (size_t)snprintf(hosts + off, sizeof hosts - off, "%s%s:%d", off ? "," : "", H->h[i].name, slots[i]);
            H->used_hosts++;
        }
    int k = 0;
    for (int i = 0; i < argc; i++) {
        H->argv[k++] = strdup(argv[i]);
        if (i == H->launcher_at) {
            H->argv[k++] = strdup("-np");
            H->argv[k++] = strdup(np);
            H->argv[k++] = strdup("--host");
            H->argv[k++] = strdup(hosts);
        }
    }
    H->argv[k] = NULL;
    for (int i = 0; i < k; i++)
        if (!H->argv[i]) return zaya_error_set(ZAYA_ENOMEM, "--hosts: the job's command");
    H->world = world;
    snprintf(H->plan, sizeof H->plan, "-np %d --host %s", world, hosts);
    return ZAYA_OK;
}

/* The check's command: CMD HOST (--host-check), or the job's own launcher with its options (as root,
 * binding, MCA settings, ...) running `ZAYA supervise --help` as one process on the host. argv holds
 * up to ZAYA_FT_CHECK_ARGS entries. */
#define ZAYA_FT_CHECK_ARGS 256
static char **check_argv(zaya_ft_hosts *H, int i, const zaya_supervise_opts *o, char *hostarg, size_t cap, char **argv) {
    zaya_ft_host *h = &H->h[i];
    snprintf(hostarg, cap, "%s:1", h->name);
    int n = 0;
    if (o->host_check && o->host_check[0]) {
        argv[n++] = (char *)o->host_check;
        argv[n++] = h->name;
    } else {
        for (int k = H->launcher_at; k < H->zaya_at && n < ZAYA_FT_CHECK_ARGS - 8; k++) argv[n++] = o->argv[k];
        argv[n++] = "--host";
        argv[n++] = hostarg;
        argv[n++] = "-np";
        argv[n++] = "1";
        argv[n++] = o->argv[H->zaya_at];
        argv[n++] = "supervise";
        argv[n++] = "--help";
    }
    argv[n] = NULL;
    return argv;
}

zaya_status zaya_ft_hosts_probe_start(zaya_ft_hosts *H, int i, const zaya_supervise_opts *o, const char *logpath, pid_t *pid) {
    char hostarg[160], *argv[ZAYA_FT_CHECK_ARGS];
    zaya_proc_opts po = {.log_path = logpath, .log_append = 1, .new_group = 1, .die_with_parent = 1};
    return zaya_proc_spawn(check_argv(H, i, o, hostarg, sizeof hostarg, argv), &po, pid, NULL);
}

int zaya_ft_hosts_probe_poll(pid_t pid, double started, double now, double timeout_s) {
    int status = 0;
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 1 : 0;
    if (w < 0) return 0;
    if (timeout_s > 0 && now - started > timeout_s) {
        kill(-pid, SIGKILL);
        waitpid(pid, &status, 0);
        return 0;
    }
    return -1;
}

int zaya_ft_hosts_check(zaya_ft_hosts *H, int i, const zaya_supervise_opts *o, const char *logpath) {
    zaya_ft_host *h = &H->h[i];
    char hostarg[160], *argv[ZAYA_FT_CHECK_ARGS];
    zaya_proc_opts po = {.log_path = logpath, .log_append = 1, .new_group = 1, .die_with_parent = 1};
    zaya_proc_result r;
    zaya_status st = zaya_proc_run(check_argv(H, i, o, hostarg, sizeof hostarg, argv), &po, o->host_check_timeout_s, &r);
    char d[64];
    if (st != ZAYA_OK) snprintf(h->why, sizeof h->why, "check not started: %s", zaya_error_message());
    else if (r.timed_out) snprintf(h->why, sizeof h->why, "no answer within %.0f s (--host-check-timeout)", o->host_check_timeout_s);
    else if (!zaya_proc_ok(&r)) snprintf(h->why, sizeof h->why, "check failed (%s)", zaya_proc_describe(&r, d, sizeof d));
    else h->why[0] = 0;
    h->healthy = st == ZAYA_OK && zaya_proc_ok(&r);
    if (!h->healthy) h->ever_lost = 1;
    return h->healthy;
}


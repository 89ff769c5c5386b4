/* Directory housekeeping: listing step directories, retention, stale temp directories. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/internal.h"
#include "zaya/log.h"
#include "zaya/proc.h"

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

int ck_remove_tree(const char *path) { return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

void ck_parallel_copy(void *dst, const void *src, size_t bytes) {
    const size_t chunk = 8u << 20;
    long n = (long)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        size_t off = (size_t)i * chunk, len = bytes - off < chunk ? bytes - off : chunk;
        memcpy((char *)dst + off, (const char *)src + off, len);
    }
}

int64_t ck_parse_step_name(const char *name) {
    if (strncmp(name, "step-", 5) != 0 || strlen(name) != 13) return -1;
    int64_t v = 0;
    for (int i = 5; i < 13; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        v = v * 10 + (name[i] - '0');
    }
    return v;
}

int ck_list_steps(const char *root, char ***names_out, int64_t **steps_out) {
    *names_out = NULL;
    *steps_out = NULL;
    DIR *d = opendir(root);
    if (!d) return 0;
    int n = 0, cap = 0;
    char **names = NULL;
    int64_t *steps = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        int64_t s = ck_parse_step_name(e->d_name);
        if (s < 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = realloc(names, (size_t)cap * sizeof *names);
            steps = realloc(steps, (size_t)cap * sizeof *steps);
            if (!names || !steps) abort();
        }
        names[n] = strdup(e->d_name);
        steps[n] = s;
        n++;
    }
    closedir(d);
    for (int a = 1; a < n; a++) /* newest first */
        for (int b = a; b > 0 && steps[b] > steps[b - 1]; b--) {
            int64_t ts = steps[b];
            steps[b] = steps[b - 1];
            steps[b - 1] = ts;
            char *tn = names[b];
            names[b] = names[b - 1];
            names[b - 1] = tn;
        }
    *names_out = names;
    *steps_out = steps;
    return n;
}

void ck_free_list(char **names, int64_t *steps, int n) {
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    free(steps);
}

/* The writer of a temp file is gone: no such process, or a zombie (killed, never reaped: its parent died
 * and init does not reap in every container), which will never finish the write. */
static int dead_pid(long pid) { return pid > 0 && pid <= INT_MAX && !zaya_proc_alive((int)pid, 0); }

void ck_cleanup_stale_tmp(const char *root) {
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strncmp(e->d_name, "latest.tmp.", 11)) { /* a latest rewrite killed before its rename */
            if (!dead_pid(strtol(e->d_name + 11, NULL, 10))) continue;
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", root, e->d_name);
            ZAYA_INFO("removing the abandoned %s", path);
            unlink(path);
            continue;
        }
        const char *t = strstr(e->d_name, ".tmp-");
        if (strncmp(e->d_name, "step-", 5) != 0 || !t) continue;
        long pid = strtol(t + 5, NULL, 10);
        if (!dead_pid(pid)) continue; /* alive (or not ours to judge) */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        ZAYA_INFO("removing the abandoned checkpoint temp directory %s", path);
        ck_remove_tree(path);
    }
    closedir(d);
}

/* unusable-step-N-PID (moved aside at a fallback) and rolledback-step-N-PID (a numeric rollback) are
 * kept for inspection until the run has committed step N or a later one again. */
void ck_cleanup_quarantine(const char *root, int64_t committed) {
    DIR *d = opendir(root);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *rest = !strncmp(e->d_name, "unusable-", 9) ? e->d_name + 9 : !strncmp(e->d_name, "rolledback-", 11) ? e->d_name + 11 : NULL;
        char name[16];
        if (!rest || strlen(rest) < 14 || rest[13] != '-') continue;
        memcpy(name, rest, 13);
        name[13] = 0;
        int64_t step = ck_parse_step_name(name);
        if (step < 0 || step > committed) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        ZAYA_INFO("removing %s: step %lld has been committed again", path, (long long)committed);
        ck_remove_tree(path);
    }
    closedir(d);
}

zaya_status zaya_ckpt_apply_retention(const char *root, int keep_last, int keep_every) {
    char **names;
    int64_t *steps;
    int n = ck_list_steps(root, &names, &steps);
    zaya_status s = ZAYA_OK;
    for (int i = 0; i < n; i++) {
        int keep = keep_last <= 0 || i < keep_last || (keep_every > 0 && steps[i] % keep_every == 0);
        if (keep) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, names[i]);
        /* Renaming first makes the removal atomic from a reader's point of view. */
        char dead[4200];
        snprintf(dead, sizeof dead, "%s.tmp-%d.deleting", path, (int)getpid());
        if (rename(path, dead) != 0 || ck_remove_tree(dead) != 0)
            s = zaya_error_set(ZAYA_EIO, "cannot remove old checkpoint '%s': %s", path, strerror(errno));
    }
    int64_t newest = n > 0 ? steps[0] : -1;
    ck_free_list(names, steps, n);
    ck_cleanup_stale_tmp(root);
    if (keep_last > 0 && newest >= 0) ck_cleanup_quarantine(root, newest);
    return s;
}

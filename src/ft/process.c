/* Files of a supervised job: the tail of a job log, a heartbeat directory's cleanup (process liveness,
 * the job-tree kill and the orphan reaper are core/proc.c's). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ft/internal.h"
#include "zaya/fs.h"

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


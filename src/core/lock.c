/* One exclusive lock per output directory (flock on DIR/NAME), so that two runs never write the same
 * checkpoints, logs or metrics. The lock file records its holder ("pid host what") for the error a
 * second run gets; the kernel drops the lock when the holder exits, however it exits. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "zaya/fs.h"

zaya_status zaya_dir_lock(const char *dir, const char *name, const char *what, int *out) {
    *out = -1;
    char path[4096];
    ZAYA_TRY(zaya_mkdir_p(dir));
    ZAYA_TRY(zaya_path_join(path, sizeof path, dir, name));
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return zaya_error_set(ZAYA_EIO, "cannot open the lock file '%s': %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[256] = "";
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        close(fd);
        if (e != EWOULDBLOCK) return zaya_error_set(ZAYA_EIO, "cannot lock '%s': %s", path, strerror(e));
        holder[n > 0 ? n : 0] = 0;
        holder[strcspn(holder, "\n")] = 0;
        int pid = 0;
        char host[128] = "?", role[64] = "?";
        sscanf(holder, "%d %127s %63s", &pid, host, role);
        return zaya_error_set(ZAYA_EBUSY,
                              "output directory '%s' is in use by pid %d (%s on host %s; lock file %s): stop that run "
                              "or choose another output directory",
                              dir, pid, role, host, path);
    }
    char host[128] = "?", line[320];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
    host[sizeof host - 1] = 0;
    for (char *c = host; *c; c++)
        if (*c == ' ' || *c == '\n') *c = '_';
    int n = snprintf(line, sizeof line, "%d %s %s\n", (int)getpid(), host, what);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)n, 0) != n) { /* the lock holds without the note */
    }
    *out = fd;
    return ZAYA_OK;
}

void zaya_dir_unlock(int fd) {
    if (fd < 0) return;
    flock(fd, LOCK_UN);
    close(fd);
}

#include "zaya/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

zaya_status zaya_mkdir_p(const char *path) {
    char buf[4096];
    size_t len = strlen(path);
    if (len == 0 || len >= sizeof buf) return zaya_error_set(ZAYA_EINVAL, "bad directory path '%s'", path);
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return zaya_error_set(ZAYA_EIO, "cannot create directory '%s': %s", buf, strerror(errno));
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return zaya_error_set(ZAYA_EIO, "cannot create directory '%s': %s", buf, strerror(errno));
    struct stat st;
    if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
        return zaya_error_set(ZAYA_EIO, "'%s' exists and is not a directory", buf);
    return ZAYA_OK;
}

zaya_status zaya_path_join(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap) return zaya_error_set(ZAYA_EINVAL, "path too long: '%s/%s'", dir, name);
    return ZAYA_OK;
}

zaya_status zaya_fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return zaya_error_set(ZAYA_EIO, "cannot open directory '%s': %s", dir, strerror(errno));
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0) return zaya_error_set(ZAYA_EIO, "fsync of directory '%s' failed: %s", dir, strerror(e));
    return ZAYA_OK;
}

zaya_status zaya_fsync_parent(const char *path) {
    char buf[4096];
    if ((size_t)snprintf(buf, sizeof buf, "%s", path) >= sizeof buf) return zaya_error_set(ZAYA_EINVAL, "path too long: '%s'", path);
    return zaya_fsync_dir(dirname(buf));
}

zaya_status zaya_atomic_tmp_name(const char *path, char *out, size_t cap) {
    if ((size_t)snprintf(out, cap, "%s.tmp.%d", path, (int)getpid()) >= cap)
        return zaya_error_set(ZAYA_EINVAL, "path too long: '%s'", path);
    return ZAYA_OK;
}

zaya_status zaya_atomic_publish(const char *tmp, const char *path) {
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return zaya_error_set(ZAYA_EIO, "rename '%s' -> '%s' failed: %s", tmp, path, strerror(e));
    }
    return zaya_fsync_parent(path);
}

zaya_status zaya_write_file_atomic(const char *path, const void *data, size_t len) {
    char tmp[4096];
    ZAYA_TRY(zaya_atomic_tmp_name(path, tmp, sizeof tmp));
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return zaya_error_set(ZAYA_EIO, "cannot create '%s': %s", tmp, strerror(errno));
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            unlink(tmp);
            return zaya_error_set(ZAYA_EIO, "writing '%s' failed: %s", tmp, strerror(e));
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        return zaya_error_set(ZAYA_EIO, "fsync of '%s' failed: %s", tmp, strerror(e));
    }
    if (close(fd) != 0) {
        int e = errno;
        unlink(tmp);
        return zaya_error_set(ZAYA_EIO, "closing '%s' failed: %s", tmp, strerror(e));
    }
    return zaya_atomic_publish(tmp, path);
}

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "of an unknown kind";
}

zaya_status zaya_open_regular(const char *path, int *fd_out, uint64_t *size) {
    *fd_out = -1;
    if (size) *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return zaya_error_set(ZAYA_EIO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return zaya_error_set(ZAYA_EIO, "cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return zaya_error_set(ZAYA_EIO, "'%s' is %s, not a regular file (loaders read regular files only)", path, file_kind(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return zaya_error_set(ZAYA_EIO, "cannot set '%s' to blocking reads: %s", path, strerror(e));
    }
    *fd_out = fd;
    if (size) *size = (uint64_t)st.st_size;
    return ZAYA_OK;
}

zaya_status zaya_fopen_regular(const char *path, FILE **f, uint64_t *size) {
    *f = NULL;
    int fd;
    ZAYA_TRY(zaya_open_regular(path, &fd, size));
    if (!(*f = fdopen(fd, "rb"))) {
        int e = errno;
        close(fd);
        return zaya_error_set(ZAYA_EIO, "cannot open '%s': %s", path, strerror(e));
    }
    return ZAYA_OK;
}

zaya_status zaya_read_file(const char *path, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    int fd;
    uint64_t size;
    ZAYA_TRY(zaya_open_regular(path, &fd, &size));
    if (size >= (uint64_t)SIZE_MAX / 2) {
        close(fd);
        return zaya_error_set(ZAYA_ERANGE, "'%s': %llu bytes is too large to read into memory", path, (unsigned long long)size);
    }
    size_t cap = (size_t)size + 1 > 4096 ? (size_t)size + 1 : 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate %zu bytes to read '%s'", cap, path);
    }
    for (;;) {
        if (n + 1 == cap) { /* the file grew past its stat size (or reports none, as under /proc) */
            char *b = cap < SIZE_MAX / 4 ? realloc(buf, cap * 2) : NULL;
            if (!b) {
                free(buf);
                close(fd);
                return zaya_error_set(ZAYA_ENOMEM, "cannot allocate %zu bytes to read '%s'", cap * 2, path);
            }
            buf = b;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return zaya_error_set(ZAYA_EIO, "reading '%s' failed after %zu bytes: %s", path, n, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *data = buf;
    *len = n;
    return ZAYA_OK;
}

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

zaya_status zaya_read_file(const char *path, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return zaya_error_set(ZAYA_EIO, "cannot open '%s': %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return zaya_error_set(ZAYA_EIO, "cannot seek '%s'", path);
    }
    long size = ftell(f);
    if (size < 0) {
        fclose(f);
        return zaya_error_set(ZAYA_EIO, "cannot size '%s' (is it a directory?)", path);
    }
    rewind(f);
    char *buf = malloc((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return zaya_error_set(ZAYA_ENOMEM, "cannot allocate %ld bytes for '%s'", size, path);
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    if (got != (size_t)size) {
        free(buf);
        return zaya_error_set(ZAYA_EIO, "short read of '%s': %zu of %ld bytes", path, got, size);
    }
    buf[size] = '\0';
    *data = buf;
    *len = (size_t)size;
    return ZAYA_OK;
}

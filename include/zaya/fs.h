/* Small file-system helpers used by every command that writes results. */
#ifndef ZAYA_FS_H
#define ZAYA_FS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

zaya_status zaya_mkdir_p(const char *path);
/* Joins dir and name into out (size cap); errors if it does not fit. */
zaya_status zaya_path_join(char *out, size_t cap, const char *dir, const char *name);
/* Atomic writes, in two halves for writers that stream: write and fsync the file named by
 * zaya_atomic_tmp_name (path.tmp.<pid>; ckpt retention removes those of dead processes), close it, then
 * zaya_atomic_publish renames it over path and fsyncs the directory (on failure tmp is removed). */
zaya_status zaya_atomic_tmp_name(const char *path, char *out, size_t cap);
zaya_status zaya_atomic_publish(const char *tmp, const char *path);
/* Writes bytes to path atomically: path.tmp, fsync, rename, fsync of the directory. */
zaya_status zaya_write_file_atomic(const char *path, const void *data, size_t len);
/* fsync of a directory (its entries: renames, creations) / of the directory holding `path`. */
zaya_status zaya_fsync_dir(const char *dir);
zaya_status zaya_fsync_parent(const char *path);
/* Opens path for reading only when it is a regular file: the open is O_NONBLOCK (a FIFO or a device
 * cannot block it), fstat refuses FIFOs, devices, sockets and directories with an error naming the
 * path and what it is, then O_NONBLOCK is cleared. *size (may be NULL) is the file's size. Every
 * loader of untrusted files opens them through this (or zaya_fopen_regular). */
zaya_status zaya_open_regular(const char *path, int *fd, uint64_t *size);
/* The same as a stdio stream (mode "rb"). */
zaya_status zaya_fopen_regular(const char *path, FILE **f, uint64_t *size);
/* Reads a whole regular file (malloc'd, NUL-terminated for convenience). Memory: the file plus at
 * most as much again while it grows past its stat size (files under /proc report 0). */
zaya_status zaya_read_file(const char *path, char **data, size_t *len);

/* An exclusive flock on DIR/NAME (created; holds "pid host what"), kept until zaya_dir_unlock or exit
 * (the descriptor is close-on-exec, so children never hold it). When another process holds it the
 * error names the directory, the holder's pid, host and role, and the lock file. */
zaya_status zaya_dir_lock(const char *dir, const char *name, const char *what, int *fd);
void zaya_dir_unlock(int fd);

#ifdef __cplusplus
}
#endif

#endif

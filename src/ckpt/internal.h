/* Helpers shared by the checkpoint sources. */
#ifndef ZAYA_CKPT_INTERNAL_H
#define ZAYA_CKPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/ckpt.h"

/* rm -rf (does not follow symlinks); returns 0 on success. */
int ck_remove_tree(const char *path);
/* Removes ROOT/step-*.tmp-<pid> directories and ROOT/latest.tmp.<pid> files whose process is gone. */
void ck_cleanup_stale_tmp(const char *root);
/* Removes ROOT/unusable-step-N-* and ROOT/rolledback-step-N-* with N <= committed. */
void ck_cleanup_quarantine(const char *root, int64_t committed);
/* memcpy split over the OpenMP pool (snapshot stalls are memory-bandwidth bound). */
void ck_parallel_copy(void *dst, const void *src, size_t bytes);
/* Parses "step-XXXXXXXX" (exactly 8 digits, nothing after); -1 otherwise. */
int64_t ck_parse_step_name(const char *name);
/* Step directories of root, newest first (malloc'd names). */
int ck_list_steps(const char *root, char ***names, int64_t **steps);
void ck_free_list(char **names, int64_t *steps, int n);

#endif

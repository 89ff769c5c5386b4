/* Walks training inputs: each regular file (directories recursively, entries in sorted order) is read
 * whole and handed to fn, until max_bytes (0 = no limit) have been delivered. */
#ifndef ZAYA_TOKENIZER_CORPUS_H
#define ZAYA_TOKENIZER_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/status.h"

typedef zaya_status (*zaya_corpus_fn)(void *ctx, const char *path, const uint8_t *data, size_t len);
zaya_status zaya_corpus_walk(const char *const *paths, int npaths, int64_t max_bytes, zaya_corpus_fn fn, void *ctx,
                             int64_t *bytes_read);

#endif

/* Named float arrays for checkpoints: the optimizer, the balancer and other stateful components
 * export their state as pieces of named tensors and import it back.
 *
 * A piece is elements [start, start + numel) of the flattened state tensor `name`, whose full size is
 * full_numel. A tensor may be split into several pieces (row ranges of a large AdamW tensor, or one
 * piece per rank under ZeRO-1); (name, start) identifies a piece. Import looks up, for every piece it
 * needs, a stored piece of the same name covering that range, so state saved with one split (or world
 * size) loads into another. */
#ifndef ZAYA_STATE_H
#define ZAYA_STATE_H

#include <stdint.h>

#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_state_array {
    char name[192];
    int64_t start, numel, full_numel;
    float *data; /* borrowed (points into live state) unless owned */
    int owned;
} zaya_state_array;

typedef struct zaya_state_set {
    int n, cap;
    zaya_state_array *a;
} zaya_state_set;

void zaya_state_set_init(zaya_state_set *s);
void zaya_state_set_free(zaya_state_set *s); /* frees owned data */
/* Appends a piece. copy = 1 snapshots the data (owned), 0 stores the pointer (zero-copy export). */
zaya_status zaya_state_set_add(zaya_state_set *s, const char *name, int64_t start, int64_t numel, int64_t full_numel,
                               float *data, int copy);
/* The piece of `name` that covers [start, start + numel), or NULL. */
const zaya_state_array *zaya_state_set_find(const zaya_state_set *s, const char *name, int64_t start, int64_t numel);
/* Copies [start, start + numel) of `name` into dst; errors name the array and the mismatch (missing,
 * different full size). */
zaya_status zaya_state_set_read(const zaya_state_set *s, const char *name, int64_t start, int64_t numel,
                                int64_t full_numel, float *dst);

#ifdef __cplusplus
}
#endif

#endif

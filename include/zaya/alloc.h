/* 64-byte aligned allocation and bump arenas.
 *
 * Memory for a training step is planned up front: a caller first runs its layout in "measure" mode
 * (an arena with no backing store just counts bytes), allocates once, then replays the same layout.
 * Nothing inside a step calls malloc. */
#ifndef ZAYA_ALLOC_H
#define ZAYA_ALLOC_H

#include <stddef.h>
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZAYA_ALIGN 64

void *zaya_malloc(size_t bytes);              /* aligned; NULL on failure (bytes==0 -> NULL) */
void *zaya_calloc(size_t count, size_t size); /* aligned, zeroed, overflow-checked */
void zaya_free(void *p);
/* For large buffers read in long streams (inference weights): 2 MiB aligned and, where the kernel
 * offers transparent huge pages on request (madvise mode), backed by them, so the hardware
 * prefetchers are not stopped at every 4 KiB page and the TLB covers the stream. Freed with
 * zaya_free. Falls back to zaya_malloc's alignment when huge pages are unavailable. */
void *zaya_malloc_huge(size_t bytes);

typedef struct zaya_arena {
    char *base;      /* NULL in measure mode */
    size_t capacity; /* bytes available (0 in measure mode) */
    size_t used;     /* bytes handed out so far, including alignment padding */
    size_t peak;
    int owns_base;
} zaya_arena;

void zaya_arena_init_measure(zaya_arena *a);
zaya_status zaya_arena_init(zaya_arena *a, size_t capacity);        /* allocates its own block */
void zaya_arena_init_from(zaya_arena *a, void *base, size_t capacity); /* caller-owned block */
/* Returns a 64-byte aligned block (NULL in measure mode, only `used` advances). Exhausting a real
 * arena is a planning bug and asserts. */
void *zaya_arena_alloc(zaya_arena *a, size_t bytes);
float *zaya_arena_floats(zaya_arena *a, size_t count);
void zaya_arena_reset(zaya_arena *a);
void zaya_arena_free(zaya_arena *a);

#ifdef __cplusplus
}
#endif

#endif

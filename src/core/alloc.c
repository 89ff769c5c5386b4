#include "zaya/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void *zaya_malloc(size_t bytes) {
    if (bytes == 0) return NULL;
    size_t rounded = (bytes + ZAYA_ALIGN - 1) / ZAYA_ALIGN * ZAYA_ALIGN;
    if (rounded < bytes) return NULL;
    return aligned_alloc(ZAYA_ALIGN, rounded);
}

void *zaya_calloc(size_t count, size_t size) {
    if (size != 0 && count > SIZE_MAX / size) return NULL;
    void *p = zaya_malloc(count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void *zaya_malloc_huge(size_t bytes) {
    const size_t huge = (size_t)2 << 20;
    if (bytes < huge) return zaya_malloc(bytes);
    size_t rounded = (bytes + huge - 1) / huge * huge;
    if (rounded < bytes) return NULL;
    void *p = aligned_alloc(huge, rounded);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only: without THP the pages stay 4 KiB */
#endif
    return p;
}

void zaya_free(void *p) { free(p); }

void zaya_arena_init_measure(zaya_arena *a) { memset(a, 0, sizeof *a); }

zaya_status zaya_arena_init(zaya_arena *a, size_t capacity) {
    memset(a, 0, sizeof *a);
    if (capacity == 0) return ZAYA_OK;
    a->base = zaya_malloc(capacity);
    if (!a->base) return zaya_error_set(ZAYA_ENOMEM, "arena: cannot allocate %zu bytes", capacity);
    a->capacity = capacity;
    a->owns_base = 1;
    return ZAYA_OK;
}

void zaya_arena_init_from(zaya_arena *a, void *base, size_t capacity) {
    memset(a, 0, sizeof *a);
    ZAYA_ASSERT(((uintptr_t)base % ZAYA_ALIGN) == 0);
    a->base = base;
    a->capacity = capacity;
}

void *zaya_arena_alloc(zaya_arena *a, size_t bytes) {
    size_t start = (a->used + ZAYA_ALIGN - 1) / ZAYA_ALIGN * ZAYA_ALIGN;
    size_t end = start + (bytes + ZAYA_ALIGN - 1) / ZAYA_ALIGN * ZAYA_ALIGN;
    ZAYA_ASSERT(end >= start);
    a->used = end;
    if (a->used > a->peak) a->peak = a->used;
    if (!a->base) return NULL; /* measure mode */
    ZAYA_ASSERT(end <= a->capacity);
    return a->base + start;
}

float *zaya_arena_floats(zaya_arena *a, size_t count) {
    ZAYA_ASSERT(count <= SIZE_MAX / sizeof(float));
    return (float *)zaya_arena_alloc(a, count * sizeof(float));
}

void zaya_arena_reset(zaya_arena *a) { a->used = 0; }

void zaya_arena_free(zaya_arena *a) {
    if (a->owns_base) zaya_free(a->base);
    memset(a, 0, sizeof *a);
}

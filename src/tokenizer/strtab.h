/* A growable set of byte strings (index = insertion order) with an open-addressing hash index. Used
 * for the trainer's word counts and its token table. */
#ifndef ZAYA_TOKENIZER_STRTAB_H
#define ZAYA_TOKENIZER_STRTAB_H

#include <stddef.h>
#include <stdint.h>

#include "zaya/status.h"

typedef struct zaya_strtab {
    uint8_t *bytes;
    uint64_t nbytes, bytes_cap;
    uint64_t *off, *hash;
    uint32_t *len;
    uint32_t n, cap;
    uint32_t *slots; /* entry index + 1; 0 = empty */
    uint64_t nslots;
} zaya_strtab;

/* Index of s, or -1. */
int64_t zaya_strtab_find(const zaya_strtab *t, const uint8_t *s, size_t n, uint64_t hash);
/* Finds s or appends it; *idx receives its index and *added whether it is new. */
zaya_status zaya_strtab_intern(zaya_strtab *t, const uint8_t *s, size_t n, uint64_t hash, uint32_t *idx, int *added);
void zaya_strtab_free(zaya_strtab *t);

#endif

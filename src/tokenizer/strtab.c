#include "tokenizer/strtab.h"

#include <stdlib.h>
#include <string.h>

int64_t zaya_strtab_find(const zaya_strtab *t, const uint8_t *s, size_t n, uint64_t hash) {
    if (!t->nslots) return -1;
    for (uint64_t i = hash & (t->nslots - 1);; i = (i + 1) & (t->nslots - 1)) {
        uint32_t e = t->slots[i];
        if (!e) return -1;
        e--;
        if (t->hash[e] == hash && t->len[e] == n && !memcmp(t->bytes + t->off[e], s, n)) return e;
    }
}

static zaya_status rehash(zaya_strtab *t, uint64_t nslots) {
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots) return zaya_error_set(ZAYA_ENOMEM, "out of memory growing a string table to %llu slots", (unsigned long long)nslots);
    for (uint32_t e = 0; e < t->n; e++) {
        uint64_t i = t->hash[e] & (nslots - 1);
        while (slots[i]) i = (i + 1) & (nslots - 1);
        slots[i] = e + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return ZAYA_OK;
}

static int grow(void **p, size_t elem, uint64_t cap) {
    void *q = realloc(*p, elem * cap);
    if (!q) return 0;
    *p = q;
    return 1;
}

zaya_status zaya_strtab_intern(zaya_strtab *t, const uint8_t *s, size_t n, uint64_t hash, uint32_t *idx, int *added) {
    int64_t e = zaya_strtab_find(t, s, n, hash);
    *added = e < 0;
    if (e >= 0) {
        *idx = (uint32_t)e;
        return ZAYA_OK;
    }
    if (t->n == UINT32_MAX - 1) return zaya_error_set(ZAYA_ERANGE, "string table full");
    if (t->n == t->cap) {
        uint32_t cap = t->cap ? t->cap * 2 : 1024;
        if (!grow((void **)&t->off, sizeof *t->off, cap) || !grow((void **)&t->hash, sizeof *t->hash, cap) ||
            !grow((void **)&t->len, sizeof *t->len, cap))
            return zaya_error_set(ZAYA_ENOMEM, "out of memory growing a string table to %u entries", cap);
        t->cap = cap;
    }
    if (t->nbytes + n > t->bytes_cap) {
        uint64_t cap = t->bytes_cap ? t->bytes_cap : 1 << 16;
        while (cap < t->nbytes + n) cap *= 2;
        if (!grow((void **)&t->bytes, 1, cap)) return zaya_error_set(ZAYA_ENOMEM, "out of memory growing a string table");
        t->bytes_cap = cap;
    }
    if (2 * ((uint64_t)t->n + 1) > t->nslots) ZAYA_TRY(rehash(t, t->nslots ? 2 * t->nslots : 2048));
    memcpy(t->bytes + t->nbytes, s, n);
    t->off[t->n] = t->nbytes;
    t->len[t->n] = (uint32_t)n;
    t->hash[t->n] = hash;
    t->nbytes += n;
    uint64_t i = hash & (t->nslots - 1);
    while (t->slots[i]) i = (i + 1) & (t->nslots - 1);
    t->slots[i] = t->n + 1;
    *idx = t->n++;
    return ZAYA_OK;
}

void zaya_strtab_free(zaya_strtab *t) {
    free(t->bytes);
    free(t->off);
    free(t->hash);
    free(t->len);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* Sources (named shard lists), packing into fixed-length sequences, the shuffle permutation and the
 * held-out split rule. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "zaya/data.h"
#include "zaya/rng.h"

/* ---------------------------------------------------------------- path expansion */

typedef struct path_list {
    char **v;
    int n, cap;
} path_list;

static zaya_status list_push(path_list *l, const char *p) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return zaya_error_set(ZAYA_ENOMEM, "out of memory listing shards");
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(p))) return zaya_error_set(ZAYA_ENOMEM, "out of memory listing shards");
    l->n++;
    return ZAYA_OK;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int has_suffix(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static zaya_status expand_dir(const char *dir, path_list *l) {
    DIR *d = opendir(dir);
    if (!d) return zaya_error_set(ZAYA_EIO, "cannot open directory '%s': %s", dir, strerror(errno));
    int first = l->n;
    struct dirent *e;
    zaya_status s = ZAYA_OK;
    char path[4096];
    while (s == ZAYA_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_suffix(e->d_name, ZAYA_SHARD_EXT)) continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path)
            s = zaya_error_set(ZAYA_EINVAL, "path too long in '%s'", dir);
        else
            s = list_push(l, path);
    }
    closedir(d);
    if (s == ZAYA_OK && l->n == first)
        return zaya_error_set(ZAYA_EINVAL, "directory '%s' holds no *%s shards", dir, ZAYA_SHARD_EXT);
    qsort(l->v + first, (size_t)(l->n - first), sizeof *l->v, cmp_str);
    return s;
}

zaya_status zaya_data_expand(const char *const *patterns, int npatterns, char ***paths, int *npaths) {
    path_list l = {0};
    zaya_status s = ZAYA_OK;
    for (int i = 0; i < npatterns && s == ZAYA_OK; i++) {
        struct stat st;
        if (stat(patterns[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            s = expand_dir(patterns[i], &l);
            continue;
        }
        glob_t g;
        int rc = glob(patterns[i], 0, NULL, &g);
        if (rc == GLOB_NOMATCH && zaya_shard_detect(patterns[i]) == ZAYA_SHARD_MEGATRON)
            s = list_push(&l, patterns[i]); /* a Megatron prefix: PREFIX.idx and PREFIX.bin */
        else if (rc == GLOB_NOMATCH)
            s = zaya_error_set(ZAYA_EINVAL, "no shard matches '%s'", patterns[i]);
        else if (rc != 0)
            s = zaya_error_set(ZAYA_EIO, "cannot expand '%s'", patterns[i]);
        for (size_t k = 0; rc == 0 && k < g.gl_pathc && s == ZAYA_OK; k++) s = list_push(&l, g.gl_pathv[k]);
        if (rc == 0) globfree(&g);
    }
    if (s != ZAYA_OK) {
        zaya_data_paths_free(l.v, l.n);
        return s;
    }
    *paths = l.v;
    *npaths = l.n;
    return ZAYA_OK;
}

void zaya_data_paths_free(char **paths, int npaths) {
    for (int i = 0; i < npaths; i++) free(paths[i]);
    free(paths);
}

/* ---------------------------------------------------------------- sources */

/* A glob such as data/corpus* lists both halves of a Megatron dataset, PREFIX.bin then PREFIX.idx:
 * they are one dataset, opened once. */
static int same_megatron_dataset(const char *prev, const char *cur) {
    size_t n = strlen(cur);
    return has_suffix(cur, ".idx") && has_suffix(prev, ".bin") && strlen(prev) == n && !strncmp(prev, cur, n - 4) &&
           zaya_shard_detect(cur) == ZAYA_SHARD_MEGATRON;
}

zaya_status zaya_data_source_open(zaya_data_source *src, const char *name, const char *const *patterns,
                                  int npatterns, int verify_checksum) {
    zaya_shard_open_opts o = {.verify_checksum = verify_checksum, .eos_id = ZAYA_SHARD_NO_EOS};
    return zaya_data_source_open_ext(src, name, patterns, npatterns, &o);
}

zaya_status zaya_data_source_open_ext(zaya_data_source *src, const char *name, const char *const *patterns,
                                      int npatterns, const zaya_shard_open_opts *opts) {
    memset(src, 0, sizeof *src);
    if (!name || !*name || strlen(name) >= ZAYA_DATA_NAME_MAX)
        return zaya_error_set(ZAYA_EINVAL, "source name '%s' must have 1 to %d characters", name ? name : "",
                              ZAYA_DATA_NAME_MAX - 1);
    snprintf(src->name, sizeof src->name, "%s", name);
    char **paths;
    int n;
    ZAYA_TRY(zaya_error_context(zaya_data_expand(patterns, npatterns, &paths, &n), "source '%s'", name));
    src->shards = calloc((size_t)n, sizeof *src->shards);
    src->stream_base = calloc((size_t)n + 1, sizeof *src->stream_base);
    zaya_status s = (src->shards && src->stream_base) ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "out of memory");
    XXH3_state_t *fp = XXH3_createState();
    if (!fp && s == ZAYA_OK) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
    if (fp) XXH3_64bits_reset(fp);
    for (int j = 0; j < n && s == ZAYA_OK; j++) {
        if (j > 0 && same_megatron_dataset(paths[j - 1], paths[j])) continue;
        const int i = src->nshards;
        s = zaya_shard_open_ext(paths[j], opts, &src->shards[i]);
        if (s != ZAYA_OK) break;
        src->nshards = i + 1;
        const zaya_shard_header *h = &src->shards[i].hdr;
        if (i == 0) {
            src->vocab_size = h->vocab_size;
            src->eos_id = h->eos_id;
        }
        if (h->eos_id == ZAYA_SHARD_NO_EOS)
            s = zaya_error_set(ZAYA_EFORMAT, "shard '%s' has no eos id; packing needs a document separator", paths[j]);
        else if (h->vocab_size != src->vocab_size || h->eos_id != src->eos_id)
            s = zaya_error_set(ZAYA_EFORMAT, "shard '%s' (vocab %llu, eos %u) disagrees with '%s' (vocab %llu, eos %u)",
                               paths[j], (unsigned long long)h->vocab_size, h->eos_id, src->shards[0].path,
                               (unsigned long long)src->vocab_size, src->eos_id);
        src->stream_base[i + 1] = src->stream_base[i] + h->token_count + h->doc_count;
        src->ntokens += h->token_count;
        src->ndocs += h->doc_count;
        uint64_t id[3] = {h->payload_xxh3, h->token_count, h->doc_count};
        XXH3_64bits_update(fp, id, sizeof id);
    }
    if (fp) {
        src->fingerprint = XXH3_64bits_digest(fp);
        XXH3_freeState(fp);
    }
    zaya_data_paths_free(paths, n);
    if (s != ZAYA_OK) {
        zaya_data_source_free(src);
        return zaya_error_context(s, "source '%s'", name);
    }
    return ZAYA_OK;
}

void zaya_data_source_free(zaya_data_source *src) {
    for (int i = 0; i < src->nshards; i++) zaya_shard_close(&src->shards[i]);
    free(src->shards);
    free(src->stream_base);
    memset(src, 0, sizeof *src);
}

uint64_t zaya_data_source_sequences(const zaya_data_source *src, int64_t seq_len) {
    uint64_t len = src->ntokens + src->ndocs;
    if (seq_len <= 0 || len < (uint64_t)seq_len + 1) return 0;
    return (len - 1) / (uint64_t)seq_len; /* the last id of a sequence is the first of the next */
}

void zaya_data_source_read_sequence(const zaya_data_source *src, int64_t seq_len, uint64_t index, int32_t *dst) {
    ZAYA_ASSERT(index < zaya_data_source_sequences(src, seq_len));
    uint64_t pos = index * (uint64_t)seq_len, need = (uint64_t)seq_len + 1;
    /* Last shard whose stream starts at or before pos (it is never an empty one; see data-format.md). */
    int lo = 0, hi = src->nshards - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (src->stream_base[mid] <= pos) lo = mid; else hi = mid - 1;
    }
    int sh = lo;
    const zaya_shard *s = &src->shards[sh];
    uint64_t local = pos - src->stream_base[sh];
    /* Document d of the shard starts at stream offset index[d] + d (one separator per earlier doc). */
    uint64_t a = 0, b = s->hdr.doc_count - 1;
    while (a < b) {
        uint64_t mid = (a + b + 1) / 2;
        if (s->doc_index[mid] + mid <= local) a = mid; else b = mid - 1;
    }
    uint64_t doc = a, off = local - (s->doc_index[doc] + doc);
    while (need > 0) {
        uint64_t start = s->doc_index[doc], len = s->doc_index[doc + 1] - start;
        if (off < len) {
            uint64_t m = len - off < need ? len - off : need;
            zaya_shard_read(s, zaya_shard_doc_start(s, doc) + off, m, dst);
            dst += m;
            need -= m;
        }
        if (need == 0) break;
        *dst++ = (int32_t)src->eos_id;
        if (--need == 0) break;
        off = 0;
        if (++doc == s->hdr.doc_count) {
            do { /* skip shards without documents; index < sequences() keeps this inside the source */
                ZAYA_ASSERT(sh + 1 < src->nshards);
                s = &src->shards[++sh];
            } while (s->hdr.doc_count == 0);
            doc = 0;
        }
    }
}

/* ---------------------------------------------------------------- datasets */

zaya_status zaya_dataset_add(zaya_dataset *ds, const char *name, const char *const *patterns, int npatterns,
                             int verify_checksum) {
    zaya_shard_open_opts o = {.verify_checksum = verify_checksum, .eos_id = ZAYA_SHARD_NO_EOS};
    return zaya_dataset_add_ext(ds, name, patterns, npatterns, &o);
}

zaya_status zaya_dataset_add_ext(zaya_dataset *ds, const char *name, const char *const *patterns, int npatterns,
                                 const zaya_shard_open_opts *opts) {
    if (ds->nsources == ZAYA_DATA_MAX_SOURCES)
        return zaya_error_set(ZAYA_ERANGE, "too many data sources (at most %d)", ZAYA_DATA_MAX_SOURCES);
    if (zaya_dataset_find(ds, name) >= 0) return zaya_error_set(ZAYA_EINVAL, "data source '%s' given twice", name);
    zaya_data_source *src = &ds->src[ds->nsources];
    ZAYA_TRY(zaya_data_source_open_ext(src, name, patterns, npatterns, opts));
    const zaya_data_source *ref = &ds->src[0];
    if (ds->nsources > 0 && (src->vocab_size != ref->vocab_size || src->eos_id != ref->eos_id)) {
        zaya_status s = zaya_error_set(ZAYA_EFORMAT,
                                       "source '%s' (vocab %llu, eos %u) disagrees with source '%s' (vocab %llu, eos %u)",
                                       name, (unsigned long long)src->vocab_size, src->eos_id, ref->name,
                                       (unsigned long long)ref->vocab_size, ref->eos_id);
        zaya_data_source_free(src);
        return s;
    }
    ds->nsources++;
    return ZAYA_OK;
}

int zaya_dataset_find(const zaya_dataset *ds, const char *name) {
    for (int i = 0; i < ds->nsources; i++)
        if (!strcmp(ds->src[i].name, name)) return i;
    return -1;
}

void zaya_dataset_free(zaya_dataset *ds) {
    for (int i = 0; i < ds->nsources; i++) zaya_data_source_free(&ds->src[i]);
    ds->nsources = 0;
}

/* ---------------------------------------------------------------- permutation and split */

uint64_t zaya_data_permute(uint64_t n, uint64_t seed, uint64_t stream, uint64_t i) {
    ZAYA_ASSERT(i < n);
    if (n <= 1) return 0;
    int bits = 64 - __builtin_clzll(n - 1); /* 2^bits >= n */
    int half = (bits + 1) / 2;
    uint64_t mask = (1ull << half) - 1;
    uint64_t x = i;
    do { /* cycle walking: re-apply the bijection of [0, 4^half) until the value lands in [0, n) */
        uint64_t l = x >> half, r = x & mask;
        for (uint64_t round = 0; round < 4; round++) {
            zaya_u32x4 f = zaya_philox4x32(seed, stream, (round << 32) | r);
            uint64_t nl = r, nr = l ^ ((((uint64_t)f.v[1] << 32) | f.v[0]) & mask);
            l = nl;
            r = nr;
        }
        x = (l << half) | r;
    } while (x >= n);
    return x;
}

enum { SPLIT_STREAM = 0x5350u }; /* "SP": the split's own Philox stream */

int zaya_data_split_is_val(uint64_t seed, uint64_t ordinal, double val_fraction) {
    if (val_fraction <= 0) return 0;
    double u = (double)zaya_rng_u32_at(seed, SPLIT_STREAM, ordinal) * (1.0 / 4294967296.0);
    return u < val_fraction;
}

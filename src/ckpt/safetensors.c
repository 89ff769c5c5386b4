/* safetensors reader (validating, mmap) and streaming writer. See include/zaya/safetensors.h. */
#include "zaya/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "zaya/bf16.h"
#include "zaya/fs.h"

static const char *const dtype_names[ZAYA_ST_NDTYPES] = {"BOOL", "U8",  "I8",  "I16", "U16", "F16", "BF16",
                                                         "I32",  "U32", "F32", "I64", "U64", "F64"};
static const int dtype_sizes[ZAYA_ST_NDTYPES] = {1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};

const char *zaya_st_dtype_name(zaya_st_dtype d) { return d < ZAYA_ST_NDTYPES ? dtype_names[d] : "?"; }
int zaya_st_dtype_size(zaya_st_dtype d) { return d < ZAYA_ST_NDTYPES ? dtype_sizes[d] : 0; }
int zaya_st_dtype_parse(const char *name, zaya_st_dtype *d) {
    for (int i = 0; i < ZAYA_ST_NDTYPES; i++)
        if (!strcmp(name, dtype_names[i])) {
            *d = (zaya_st_dtype)i;
            return 0;
        }
    return -1;
}

/* ---------------- reader ---------------- */

static int cmp_begin(const void *a, const void *b) {
    const zaya_st_tensor *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int cmp_name_idx(const void *a, const void *b, void *ctx) {
    const zaya_st_tensor *t = ctx;
    return strcmp(t[*(const int *)a].name, t[*(const int *)b].name);
}

/* A JSON number that is a non-negative integer below 2^53 (exact in a double). */
static int json_u64(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return -1;
    double v = j->valuedouble;
    if (!(v >= 0) || v > 9007199254740992.0 || v != (double)(uint64_t)v) return -1;
    *out = (uint64_t)v;
    return 0;
}

static zaya_status parse_entry(const char *what, const cJSON *e, zaya_st_tensor *t, uint64_t data_size) {
    const char *nm = e->string;
    if (!cJSON_IsObject(e)) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': entry is not an object", what, nm);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    if (!cJSON_IsString(dt)) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': missing string 'dtype'", what, nm);
    if (zaya_st_dtype_parse(dt->valuestring, &t->dtype))
        return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': unknown dtype '%.16s'", what, nm, dt->valuestring);
    if (!cJSON_IsArray(sh)) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': missing array 'shape'", what, nm);
    int nd = cJSON_GetArraySize(sh);
    if (nd > ZAYA_ST_MAX_DIMS)
        return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': %d dimensions (at most %d)", what, nm, nd, ZAYA_ST_MAX_DIMS);
    t->ndim = nd;
    uint64_t numel = 1;
    int i = 0;
    for (const cJSON *d = sh->child; d; d = d->next, i++) {
        uint64_t v;
        if (json_u64(d, &v)) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': shape[%d] is not a size", what, nm, i);
        t->shape[i] = (int64_t)v;
        if (v && numel > UINT64_MAX / 8 / v)
            return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': shape overflows", what, nm);
        numel *= v;
    }
    t->numel = (int64_t)numel;
    if (!cJSON_IsArray(of) || cJSON_GetArraySize(of) != 2 || json_u64(of->child, &t->begin) ||
        json_u64(of->child->next, &t->end))
        return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': 'data_offsets' must be [begin, end]", what, nm);
    if (t->begin > t->end || t->end > data_size)
        return zaya_error_set(ZAYA_EFORMAT,
                              "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64 "] outside the data section of %" PRIu64
                              " bytes",
                              what, nm, t->begin, t->end, data_size);
    if (t->end - t->begin != numel * (uint64_t)dtype_sizes[t->dtype])
        return zaya_error_set(ZAYA_EFORMAT,
                              "%s: tensor '%s': %" PRIu64 " bytes at offset %" PRIu64 " but shape x %s needs %" PRIu64, what,
                              nm, t->end - t->begin, t->begin, dtype_names[t->dtype], numel * (uint64_t)dtype_sizes[t->dtype]);
    return ZAYA_OK;
}

static zaya_status parse_header(zaya_st_file *f, const char *what) {
    const uint8_t *p = f->map;
    if (f->size < 8) return zaya_error_set(ZAYA_EFORMAT, "%s: %zu bytes, too short for the 8-byte header length", what, f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | p[i];
    if (n > ZAYA_ST_MAX_HEADER || n > f->size - 8)
        return zaya_error_set(ZAYA_EFORMAT, "%s: header length %" PRIu64 " at offset 0 exceeds the file (%zu bytes) or the %u-byte cap",
                              what, n, f->size, ZAYA_ST_MAX_HEADER);
    if (n < 2 || p[8] != '{') return zaya_error_set(ZAYA_EFORMAT, "%s: header at offset 8 is not a JSON object", what);
    f->data_start = 8 + n;
    uint64_t data_size = f->size - f->data_start;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts((const char *)p + 8, (size_t)n, &end, 0);
    if (!root) {
        const char *ep = cJSON_GetErrorPtr();
        size_t at = ep && ep >= (const char *)p ? (size_t)(ep - (const char *)p) : 8;
        return zaya_error_set(ZAYA_EFORMAT, "%s: malformed JSON header near byte offset %zu", what, at);
    }
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return zaya_error_set(ZAYA_EFORMAT, "%s: header at offset 8 is not a JSON object", what);
    }
    /* Only trailing spaces (padding) may follow the JSON object inside the header. */
    for (const char *q = end; q && q < (const char *)p + 8 + n; q++)
        if (*q != ' ' && *q != '\0') {
            cJSON_Delete(root);
            return zaya_error_set(ZAYA_EFORMAT, "%s: garbage after the JSON header at byte offset %zu", what,
                                  (size_t)(q - (const char *)p));
        }
    int count = 0;
    for (const cJSON *e = root->child; e; e = e->next) count++;
    f->tensors = calloc((size_t)count + 1, sizeof *f->tensors);
    f->by_name = calloc((size_t)count + 1, sizeof *f->by_name);
    zaya_status s = ZAYA_OK;
    if (!f->tensors || !f->by_name) s = zaya_error_set(ZAYA_ENOMEM, "%s: %d tensors", what, count);
    for (const cJSON *e = root->child; e && s == ZAYA_OK; e = e->next) {
        if (!strcmp(e->string, "__metadata__")) {
            if (f->meta_keys) {
                s = zaya_error_set(ZAYA_EFORMAT, "%s: duplicate __metadata__", what);
                break;
            }
            if (!cJSON_IsObject(e)) {
                s = zaya_error_set(ZAYA_EFORMAT, "%s: __metadata__ is not an object", what);
                break;
            }
            int m = cJSON_GetArraySize(e);
            f->meta_keys = calloc((size_t)m + 1, sizeof(char *));
            f->meta_vals = calloc((size_t)m + 1, sizeof(char *));
            if (!f->meta_keys || !f->meta_vals) {
                s = zaya_error_set(ZAYA_ENOMEM, "%s: metadata", what);
                break;
            }
            for (const cJSON *kv = e->child; kv; kv = kv->next) {
                if (!cJSON_IsString(kv)) {
                    s = zaya_error_set(ZAYA_EFORMAT, "%s: __metadata__ value of '%.64s' is not a string", what, kv->string);
                    break;
                }
                f->meta_keys[f->nmeta] = strdup(kv->string);
                f->meta_vals[f->nmeta] = strdup(kv->valuestring);
                f->nmeta++;
            }
            continue;
        }
        zaya_st_tensor *t = &f->tensors[f->ntensors];
        t->name = strdup(e->string);
        f->ntensors++;
        if (!t->name) s = zaya_error_set(ZAYA_ENOMEM, "%s: tensor names", what);
        else s = parse_entry(what, e, t, data_size);
    }
    cJSON_Delete(root);
    if (s != ZAYA_OK) return s;
    qsort(f->tensors, (size_t)f->ntensors, sizeof *f->tensors, cmp_begin);
    uint64_t at = 0;
    for (int i = 0; i < f->ntensors; i++) {
        zaya_st_tensor *t = &f->tensors[i];
        if (t->begin != at)
            return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' starts at data offset %" PRIu64 " but the previous ends at %" PRIu64
                                  " (%s)", what, t->name, t->begin, at, t->begin < at ? "overlap" : "gap");
        at = t->end;
        t->file_offset = f->data_start + t->begin;
        t->data = (const uint8_t *)f->map + t->file_offset;
    }
    if (at != data_size)
        return zaya_error_set(ZAYA_EFORMAT, "%s: tensors cover %" PRIu64 " of the %" PRIu64 " data bytes (file truncated or padded?)",
                              what, at, data_size);
    for (int i = 0; i < f->ntensors; i++) f->by_name[i] = i;
    qsort_r(f->by_name, (size_t)f->ntensors, sizeof *f->by_name, cmp_name_idx, f->tensors);
    for (int i = 1; i < f->ntensors; i++)
        if (!strcmp(f->tensors[f->by_name[i]].name, f->tensors[f->by_name[i - 1]].name))
            return zaya_error_set(ZAYA_EFORMAT, "%s: duplicate tensor '%s'", what, f->tensors[f->by_name[i]].name);
    return ZAYA_OK;
}

zaya_status zaya_st_parse(zaya_st_file *f, const void *buf, size_t size, const char *what) {
    memset(f, 0, sizeof *f);
    f->path = strdup(what);
    f->map = (void *)buf;
    f->size = size;
    zaya_status s = parse_header(f, what);
    if (s != ZAYA_OK) zaya_st_close(f);
    return s;
}

zaya_status zaya_st_open(zaya_st_file *f, const char *path) {
    memset(f, 0, sizeof *f);
    int fd;
    uint64_t fsize;
    ZAYA_TRY(zaya_open_regular(path, &fd, &fsize));
    f->path = strdup(path);
    f->size = (size_t)fsize;
    if (f->size > 0) {
        f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (f->map == MAP_FAILED) {
            f->map = NULL;
            close(fd);
            zaya_st_close(f);
            return zaya_error_set(ZAYA_EIO, "cannot map '%s': %s", path, strerror(errno));
        }
        f->mapped = 1;
    }
    close(fd);
    zaya_status s = parse_header(f, path);
    if (s != ZAYA_OK) zaya_st_close(f);
    return s;
}

void zaya_st_close(zaya_st_file *f) {
    if (f->mapped && f->map) munmap(f->map, f->size);
    for (int i = 0; i < f->ntensors; i++) free(f->tensors[i].name);
    for (int i = 0; i < f->nmeta; i++) {
        free(f->meta_keys[i]);
        free(f->meta_vals[i]);
    }
    free(f->meta_keys);
    free(f->meta_vals);
    free(f->tensors);
    free(f->by_name);
    free(f->path);
    memset(f, 0, sizeof *f);
}

const zaya_st_tensor *zaya_st_find(const zaya_st_file *f, const char *name) {
    int lo = 0, hi = f->ntensors - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const zaya_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (!c) return t;
        if (c < 0) hi = mid - 1;
        else lo = mid + 1;
    }
    return NULL;
}

const char *zaya_st_meta(const zaya_st_file *f, const char *key) {
    for (int i = 0; i < f->nmeta; i++)
        if (!strcmp(f->meta_keys[i], key)) return f->meta_vals[i];
    return NULL;
}

static float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;
    if (e == 0) {
        if (m == 0) u = sign;
        else { /* subnormal: normalise */
            int sh = 0;
            while (!(m & 1024)) {
                m <<= 1;
                sh++;
            }
            u = sign | (uint32_t)(113 - sh) << 23 | (m & 1023) << 13;
        }
    } else if (e == 31) u = sign | 0x7f800000u | m << 13;
    else u = sign | (e + 112) << 23 | m << 13;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

zaya_status zaya_st_read_f32(const zaya_st_file *f, const zaya_st_tensor *t, int64_t start, int64_t count, float *dst) {
    if (start < 0 || count < 0 || start > t->numel || count > t->numel - start)
        return zaya_error_set(ZAYA_ERANGE, "%s: tensor '%s': elements [%lld, +%lld) outside %lld", f->path, t->name,
                              (long long)start, (long long)count, (long long)t->numel);
    const uint8_t *p = t->data;
    switch (t->dtype) {
    case ZAYA_ST_F32: memcpy(dst, p + start * 4, (size_t)count * 4); break;
    case ZAYA_ST_BF16:
    case ZAYA_ST_F16:
        for (int64_t i = 0; i < count; i++) {
            uint16_t h;
            memcpy(&h, p + (start + i) * 2, 2);
            dst[i] = t->dtype == ZAYA_ST_BF16 ? zaya_bf16_to_f32(h) : f16_to_f32(h);
        }
        break;
    default:
        return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: tensor '%s': dtype %s is not a float type", f->path, t->name,
                              dtype_names[t->dtype]);
    }
    return ZAYA_OK;
}

/* ---------------- writer ---------------- */

static _Atomic int64_t g_fail_after = -1;

void zaya_st_inject_write_failure(int64_t bytes) { atomic_store(&g_fail_after, bytes); }

zaya_status zaya_st_write_all(int fd, const void *buf, size_t len, const char *path) {
    const char *p = buf;
    while (len > 0) {
        size_t chunk = len > (64u << 20) ? (64u << 20) : len;
        int64_t lim = atomic_load(&g_fail_after);
        ssize_t w;
        if (lim >= 0) {
            int64_t left = atomic_fetch_sub(&g_fail_after, (int64_t)chunk);
            if (left < (int64_t)chunk) {
                atomic_store(&g_fail_after, 0);
                errno = ENOSPC;
                w = -1;
                goto fail;
            }
        }
        w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
    fail:
        if (w < 0) return zaya_error_set(ZAYA_EIO, "writing '%s' failed: %s", path, strerror(errno));
        if (w == 0) return zaya_error_set(ZAYA_EIO, "writing '%s' failed: no progress (disk full?)", path);
        p += w;
        len -= (size_t)w;
    }
    return ZAYA_OK;
}

typedef struct st_item {
    char *name;
    zaya_st_dtype dtype, src_dtype;
    int ndim;
    int64_t shape[ZAYA_ST_MAX_DIMS];
    int64_t numel;
    const void *src;
    zaya_st_fill_fn fill; /* when set, the values come from fill(ctx) instead of src */
    void *ctx;
} st_item;

struct zaya_st_writer {
    char *path, *tmp;
    int atomic;
    int n, cap;
    st_item *items;
    cJSON *meta;
};

zaya_status zaya_st_writer_init(zaya_st_writer **out, const char *path, int atomic) {
    zaya_st_writer *w = calloc(1, sizeof *w);
    if (!w) return zaya_error_set(ZAYA_ENOMEM, "safetensors writer");
    w->path = strdup(path);
    w->atomic = atomic;
    size_t tl = strlen(path) + 32;
    w->tmp = malloc(tl);
    if (!w->path || !w->tmp) {
        zaya_st_writer_abort(w);
        return zaya_error_set(ZAYA_ENOMEM, "safetensors writer");
    }
    zaya_status s = atomic ? zaya_atomic_tmp_name(path, w->tmp, tl) : ZAYA_OK;
    if (!atomic) snprintf(w->tmp, tl, "%s", path);
    if (s != ZAYA_OK) {
        zaya_st_writer_abort(w);
        return s;
    }
    *out = w;
    return ZAYA_OK;
}

zaya_status zaya_st_writer_meta(zaya_st_writer *w, const char *key, const char *value) {
    if (!w->meta) w->meta = cJSON_CreateObject();
    cJSON_DeleteItemFromObjectCaseSensitive(w->meta, key);
    cJSON_AddStringToObject(w->meta, key, value);
    return ZAYA_OK;
}

zaya_status zaya_st_writer_add(zaya_st_writer *w, const char *name, zaya_st_dtype dtype, int ndim, const int64_t *shape,
                               const void *src, zaya_st_dtype src_dtype) {
    if (dtype != src_dtype && !(dtype == ZAYA_ST_BF16 && src_dtype == ZAYA_ST_F32))
        return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: tensor '%s': cannot store %s data as %s", w->path, name,
                              dtype_names[src_dtype], dtype_names[dtype]);
    if (ndim < 0 || ndim > ZAYA_ST_MAX_DIMS || !strcmp(name, "__metadata__") || !*name)
        return zaya_error_set(ZAYA_EINVAL, "%s: tensor '%s': bad name or %d dimensions", w->path, name, ndim);
    if (w->n == w->cap) {
        int nc = w->cap ? 2 * w->cap : 64;
        st_item *ni = realloc(w->items, (size_t)nc * sizeof *ni);
        if (!ni) return zaya_error_set(ZAYA_ENOMEM, "safetensors writer");
        w->items = ni;
        w->cap = nc;
    }
    st_item *it = &w->items[w->n];
    memset(it, 0, sizeof *it);
    it->name = strdup(name);
    it->dtype = dtype;
    it->src_dtype = src_dtype;
    it->ndim = ndim;
    it->numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return zaya_error_set(ZAYA_EINVAL, "%s: tensor '%s': negative dimension", w->path, name);
        it->shape[i] = shape[i];
        it->numel *= shape[i];
    }
    it->src = src;
    w->n++;
    return ZAYA_OK;
}

zaya_status zaya_st_writer_add_source(zaya_st_writer *w, const char *name, zaya_st_dtype dtype, int ndim,
                                      const int64_t *shape, zaya_st_fill_fn fill, void *ctx) {
    if (dtype != ZAYA_ST_F32 && dtype != ZAYA_ST_BF16)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: tensor '%s': a streamed tensor is stored as F32 or BF16, not %s",
                              w->path, name, dtype_names[dtype]);
    if (!fill) return zaya_error_set(ZAYA_EINVAL, "%s: tensor '%s': no source", w->path, name);
    ZAYA_TRY(zaya_st_writer_add(w, name, dtype, ndim, shape, NULL, ZAYA_ST_F32));
    w->items[w->n - 1].fill = fill;
    w->items[w->n - 1].ctx = ctx;
    return ZAYA_OK;
}

void zaya_st_writer_abort(zaya_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->items[i].name);
    free(w->items);
    cJSON_Delete(w->meta);
    free(w->path);
    free(w->tmp);
    free(w);
}

/* A streamed tensor: pieces of scratch_n values from its source, converted when stored as BF16. */
static zaya_status write_source(int fd, const char *path, const st_item *it, XXH3_state_t *h, uint16_t *scratch,
                                float *piece, size_t scratch_n) {
    for (int64_t i = 0; i < it->numel; i += (int64_t)scratch_n) {
        size_t len = (size_t)(it->numel - i) < scratch_n ? (size_t)(it->numel - i) : scratch_n;
        zaya_status s = it->fill(it->ctx, i, (int64_t)len, piece);
        if (s != ZAYA_OK) return zaya_error_context(s, "%s: tensor '%s'", path, it->name);
        const void *out = piece;
        size_t bytes = len * sizeof(float);
        if (it->dtype == ZAYA_ST_BF16) {
            zaya_f32_to_bf16_n(scratch, piece, len);
            out = scratch;
            bytes = len * 2;
        }
        XXH3_64bits_update(h, out, bytes);
        ZAYA_TRY(zaya_st_write_all(fd, out, bytes, path));
    }
    return ZAYA_OK;
}

static zaya_status write_tensor(int fd, const char *path, const st_item *it, XXH3_state_t *h, uint16_t *scratch,
                                float *piece, size_t scratch_n) {
    XXH3_64bits_reset(h);
    if (it->fill) return write_source(fd, path, it, h, scratch, piece, scratch_n);
    if (it->dtype == it->src_dtype) {
        size_t bytes = (size_t)it->numel * (size_t)dtype_sizes[it->dtype];
        const char *p = it->src;
        for (size_t off = 0; off < bytes; off += 64u << 20) {
            size_t len = bytes - off < (64u << 20) ? bytes - off : (64u << 20);
            XXH3_64bits_update(h, p + off, len);
            ZAYA_TRY(zaya_st_write_all(fd, p + off, len, path));
        }
        return ZAYA_OK;
    }
    const float *x = it->src; /* F32 -> BF16 in chunks */
    for (int64_t i = 0; i < it->numel; i += (int64_t)scratch_n) {
        size_t len = (size_t)(it->numel - i) < scratch_n ? (size_t)(it->numel - i) : scratch_n;
        zaya_f32_to_bf16_n(scratch, x + i, len);
        XXH3_64bits_update(h, scratch, len * 2);
        ZAYA_TRY(zaya_st_write_all(fd, scratch, len * 2, path));
    }
    return ZAYA_OK;
}

zaya_status zaya_st_writer_finish(zaya_st_writer *w, uint64_t *checksums, uint64_t *offsets, uint64_t *bytes) {
    cJSON *hdr = cJSON_CreateObject();
    if (w->meta) cJSON_AddItemReferenceToObject(hdr, "__metadata__", w->meta);
    uint64_t at = 0;
    for (int i = 0; i < w->n; i++) {
        const st_item *it = &w->items[i];
        cJSON *e = cJSON_AddObjectToObject(hdr, it->name);
        cJSON_AddStringToObject(e, "dtype", dtype_names[it->dtype]);
        cJSON *sh = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < it->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)it->shape[d]));
        uint64_t len = (uint64_t)it->numel * (uint64_t)dtype_sizes[it->dtype];
        cJSON *of = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)at));
        cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(at + len)));
        at += len;
    }
    char *json = cJSON_PrintUnformatted(hdr);
    cJSON_Delete(hdr);
    zaya_status s = ZAYA_OK;
    if (!json) {
        zaya_st_writer_abort(w);
        return zaya_error_set(ZAYA_ENOMEM, "safetensors header");
    }
    /* Pad with spaces so that the data section starts 64-byte aligned. */
    size_t jl = strlen(json), n = (8 + jl + 63) / 64 * 64 - 8;
    uint8_t *head = malloc(8 + n);
    uint16_t *scratch = malloc((1u << 20) * sizeof(uint16_t));
    int streamed = 0;
    for (int i = 0; i < w->n; i++) streamed |= w->items[i].fill != NULL;
    float *piece = streamed ? malloc((1u << 20) * sizeof(float)) : NULL;
    XXH3_state_t *h = XXH3_createState();
    int fd = -1;
    if (!head || !scratch || !h || (streamed && !piece)) {
        s = zaya_error_set(ZAYA_ENOMEM, "safetensors writer buffers");
        goto done;
    }
    for (int i = 0; i < 8; i++) head[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(head + 8, json, jl);
    memset(head + 8 + jl, ' ', n - jl);
    fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        s = zaya_error_set(ZAYA_EIO, "cannot create '%s': %s", w->tmp, strerror(errno));
        goto done;
    }
    s = zaya_st_write_all(fd, head, 8 + n, w->tmp);
    uint64_t pos = 8 + n;
    for (int i = 0; i < w->n && s == ZAYA_OK; i++) {
        s = write_tensor(fd, w->tmp, &w->items[i], h, scratch, piece, 1u << 20);
        if (checksums) checksums[i] = XXH3_64bits_digest(h);
        if (offsets) offsets[i] = pos;
        pos += (uint64_t)w->items[i].numel * (uint64_t)dtype_sizes[w->items[i].dtype];
    }
    if (s == ZAYA_OK && fsync(fd) != 0) s = zaya_error_set(ZAYA_EIO, "fsync of '%s' failed: %s", w->tmp, strerror(errno));
    if (close(fd) != 0 && s == ZAYA_OK) s = zaya_error_set(ZAYA_EIO, "closing '%s' failed: %s", w->tmp, strerror(errno));
    fd = -1;
    if (s == ZAYA_OK && w->atomic) s = zaya_atomic_publish(w->tmp, w->path);
    if (s == ZAYA_OK && bytes) *bytes = pos;
done:
    if (fd >= 0) close(fd);
    if (s != ZAYA_OK) unlink(w->tmp);
    if (h) XXH3_freeState(h);
    free(scratch);
    free(piece);
    free(head);
    free(json);
    zaya_st_writer_abort(w);
    return s;
}

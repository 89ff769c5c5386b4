/* Checkpoint writer: per-rank safetensors files, a manifest assembled on rank 0, atomic commit
 * (temp directory, fsync, rename, fsync, latest), optional background thread. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/internal.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/model.h"
#include "zaya/timer.h"

typedef struct ck_item {
    char *name;
    int model;
    zaya_st_dtype dtype; /* of data */
    int ndim;
    int64_t shape[ZAYA_ST_MAX_DIMS];
    int64_t numel, start, count;
    const void *data;
    int owner; /* writing rank */
} ck_item;

struct zaya_ckpt_writer {
    char root[400];
    int64_t step, tokens;
    zaya_ckpt_options opt;
    zaya_ckpt_comm comm;
    cJSON *sections, *rank_sections;
    ck_item *items;
    int n, cap;
    int assigned;
    zaya_status fail; /* set by zaya_ckpt_writer_set_error: this rank reports failure at commit */
    char fail_msg[512];
    pthread_t thread;
    int async;
    zaya_status async_status;
    int async_done; /* set (release) by the writer thread as it ends */
    char async_msg[1024];
    zaya_ckpt_save_stats stats;
};

static const char *const reserved[] = {"format", "format_version", "step", "tokens", "world_size", "options",
                                       "files", "tensors", "ranks", "created_unix", "manifest_xxh3", NULL};

zaya_ckpt_options zaya_ckpt_default_options(void) { return (zaya_ckpt_options){ZAYA_ST_F32, 1, 0, 0}; }

zaya_status zaya_ckpt_snapshot_reserve(zaya_ckpt_snapshot *s, size_t bytes) {
    if (s->cap >= bytes) return ZAYA_OK;
    zaya_free(s->buf);
    s->buf = zaya_malloc(bytes);
    s->cap = s->buf ? bytes : 0;
    if (!s->buf) return zaya_error_set(ZAYA_ENOMEM, "checkpoint snapshot of %zu bytes", bytes);
    const size_t chunk = 8u << 20;
    long n = (long)((bytes + chunk - 1) / chunk);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; i++) {
        size_t off = (size_t)i * chunk;
        memset((char *)s->buf + off, 0, bytes - off < chunk ? bytes - off : chunk);
    }
    return ZAYA_OK;
}

void zaya_ckpt_snapshot_free(zaya_ckpt_snapshot *s) {
    zaya_free(s->buf);
    s->buf = NULL;
    s->cap = 0;
}

static zaya_status single_gather(void *ctx, const void *buf, size_t len, char **all, size_t *lens) {
    *all = malloc(len + 1);
    if (!*all) return zaya_error_set(ZAYA_ENOMEM, "gather");
    memcpy(*all, buf, len);
    lens[0] = len;
    return ZAYA_OK;
}
static zaya_status single_bcast(void *ctx, void *buf, size_t len) { return ZAYA_OK; }

zaya_status zaya_ckpt_writer_init(zaya_ckpt_writer **out, const char *root, int64_t step, int64_t tokens,
                                  const zaya_ckpt_options *opt, const zaya_ckpt_comm *comm) {
    if (step < 0 || step > 99999999) return zaya_error_set(ZAYA_EINVAL, "checkpoint step %lld outside [0, 99999999]", (long long)step);
    if (strlen(root) >= 400) return zaya_error_set(ZAYA_EINVAL, "checkpoint root path too long");
    zaya_ckpt_options o = opt ? *opt : zaya_ckpt_default_options();
    if (o.model_dtype != ZAYA_ST_F32 && o.model_dtype != ZAYA_ST_BF16)
        return zaya_error_set(ZAYA_EINVAL, "model dtype must be F32 or BF16, got %s", zaya_st_dtype_name(o.model_dtype));
    zaya_ckpt_writer *w = calloc(1, sizeof *w);
    if (!w) return zaya_error_set(ZAYA_ENOMEM, "checkpoint writer");
    snprintf(w->root, sizeof w->root, "%s", root);
    w->step = step;
    w->tokens = tokens;
    w->opt = o;
    w->comm = comm ? *comm : (zaya_ckpt_comm){0, 1, NULL, single_gather, single_bcast};
    ZAYA_ASSERT(w->comm.rank >= 0 && w->comm.rank < w->comm.world);
    w->sections = cJSON_CreateObject();
    w->rank_sections = cJSON_CreateObject();
    *out = w;
    return ZAYA_OK;
}

void zaya_ckpt_writer_set_error(zaya_ckpt_writer *w, zaya_status s, const char *msg) {
    w->fail = s == ZAYA_OK ? ZAYA_EINVAL : s;
    snprintf(w->fail_msg, sizeof w->fail_msg, "%s", msg);
}

void zaya_ckpt_writer_free(zaya_ckpt_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->items[i].name);
    free(w->items);
    cJSON_Delete(w->sections);
    cJSON_Delete(w->rank_sections);
    free(w);
}

static zaya_status add_json(cJSON *dst, const char *name, const cJSON *json) {
    for (int i = 0; reserved[i]; i++)
        if (!strcmp(name, reserved[i])) return zaya_error_set(ZAYA_EINVAL, "checkpoint section name '%s' is reserved", name);
    cJSON *copy = cJSON_Duplicate(json, 1);
    if (!copy) return zaya_error_set(ZAYA_ENOMEM, "section '%s'", name);
    cJSON_DeleteItemFromObjectCaseSensitive(dst, name);
    cJSON_AddItemToObject(dst, name, copy);
    return ZAYA_OK;
}

zaya_status zaya_ckpt_writer_add_section(zaya_ckpt_writer *w, const char *name, const cJSON *json) {
    return add_json(w->sections, name, json);
}
zaya_status zaya_ckpt_writer_add_rank_section(zaya_ckpt_writer *w, const char *name, const cJSON *json) {
    return add_json(w->rank_sections, name, json);
}

static zaya_status push(zaya_ckpt_writer *w, const char *name, int model, zaya_st_dtype dtype, int ndim,
                        const int64_t *shape, int64_t start, int64_t count, const void *data) {
    if (!*name || strlen(name) > 200 || strchr(name, '@'))
        return zaya_error_set(ZAYA_EINVAL, "checkpoint tensor name '%.64s' is empty, too long or contains '@'", name);
    if (ndim < 0 || ndim > ZAYA_ST_MAX_DIMS) return zaya_error_set(ZAYA_EINVAL, "tensor '%s': %d dimensions", name, ndim);
    if (w->n == w->cap) {
        int nc = w->cap ? 2 * w->cap : 256;
        ck_item *ni = realloc(w->items, (size_t)nc * sizeof *ni);
        if (!ni) return zaya_error_set(ZAYA_ENOMEM, "checkpoint writer");
        w->items = ni;
        w->cap = nc;
    }
    ck_item *it = &w->items[w->n];
    memset(it, 0, sizeof *it);
    it->numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) return zaya_error_set(ZAYA_EINVAL, "tensor '%s': negative dimension", name);
        it->shape[i] = shape[i];
        it->numel *= shape[i];
    }
    if (!model && (start < 0 || count < 0 || start > it->numel || count > it->numel - start))
        return zaya_error_set(ZAYA_ERANGE, "array '%s': range [%lld, +%lld) outside its %lld elements", name,
                              (long long)start, (long long)count, (long long)it->numel);
    it->name = strdup(name);
    if (!it->name) return zaya_error_set(ZAYA_ENOMEM, "checkpoint writer");
    it->model = model;
    it->dtype = dtype;
    it->ndim = ndim;
    it->start = model ? 0 : start;
    it->count = model ? it->numel : count;
    it->data = data;
    it->owner = w->comm.rank;
    w->n++;
    w->assigned = 0;
    return ZAYA_OK;
}

zaya_status zaya_ckpt_writer_add_model(zaya_ckpt_writer *w, const char *name, int ndim, const int64_t *shape,
                                       const float *data) {
    return push(w, name, 1, ZAYA_ST_F32, ndim, shape, 0, 0, data);
}

zaya_status zaya_ckpt_writer_add_shard(zaya_ckpt_writer *w, const char *name, zaya_st_dtype dtype, int ndim,
                                       const int64_t *global_shape, int64_t start, int64_t count, const void *data) {
    if (dtype >= ZAYA_ST_NDTYPES) return zaya_error_set(ZAYA_EINVAL, "array '%s': bad dtype", name);
    return push(w, name, 0, dtype, ndim, global_shape, start, count, data);
}

zaya_status zaya_ckpt_writer_add_model_params(zaya_ckpt_writer *w, const zaya_model *m) {
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        ZAYA_TRY(zaya_ckpt_writer_add_model(w, t->name, t->ndim, t->shape, m->params + t->offset));
    }
    cJSON *cfg = zaya_config_to_json(&m->cfg);
    zaya_status s = zaya_ckpt_writer_add_section(w, ZAYA_CKPT_SECTION_MODEL, cfg);
    cJSON_Delete(cfg);
    return s;
}

/* Model tensors go to the rank with the fewest bytes so far, largest first (deterministic: every
 * rank added the same list). */
static void assign_owners(zaya_ckpt_writer *w) {
    if (w->assigned) return;
    int world = w->comm.world;
    uint64_t *load = calloc((size_t)world, sizeof *load);
    int *order = malloc((size_t)(w->n + 1) * sizeof *order);
    ZAYA_ASSERT(load && order);
    int nm = 0;
    for (int i = 0; i < w->n; i++)
        if (w->items[i].model) order[nm++] = i;
    /* insertion-free selection: sort indices by size descending, stable by index */
    for (int a = 1; a < nm; a++) {
        int x = order[a], b = a - 1;
        while (b >= 0 && w->items[order[b]].numel < w->items[x].numel) {
            order[b + 1] = order[b];
            b--;
        }
        order[b + 1] = x;
    }
    for (int k = 0; k < nm; k++) {
        ck_item *it = &w->items[order[k]];
        int best = 0;
        if (w->opt.split_model)
            for (int r = 1; r < world; r++)
                if (load[r] < load[best]) best = r;
        it->owner = best;
        load[best] += (uint64_t)it->numel;
    }
    free(order);
    free(load);
    w->assigned = 1;
}

static size_t item_bytes(const ck_item *it) { return (size_t)it->count * (size_t)zaya_st_dtype_size(it->dtype); }

/* ---------------- the commit protocol ---------------- */

typedef struct ck_msg {
    int32_t status;
    char name[128];
    char text[1024];
} ck_msg;

static void hex64(char out[17], uint64_t v) { snprintf(out, 17, "%016" PRIx64, v); }

/* Writes this rank's files into tmp and describes them as JSON for rank 0. */
static zaya_status write_rank_files(zaya_ckpt_writer *w, const char *tmp, cJSON *desc, uint64_t *bytes_out, int *files_out) {
    int r = w->comm.rank;
    cJSON *files = cJSON_AddArrayToObject(desc, "files");
    cJSON *pieces = cJSON_AddArrayToObject(desc, "pieces");
    for (int pass = 0; pass < 2; pass++) { /* 0: model file, 1: state file */
        int cnt = 0;
        for (int i = 0; i < w->n; i++)
            if (w->items[i].model == !pass && w->items[i].owner == r) cnt++;
        if (!cnt) continue;
        char fname[64], path[600];
        snprintf(fname, sizeof fname, "%s-r%05d.safetensors", pass == 0 ? "model" : "state", r);
        ZAYA_TRY(zaya_path_join(path, sizeof path, tmp, fname));
        zaya_st_writer *sw;
        ZAYA_TRY(zaya_st_writer_init(&sw, path, 0));
        zaya_st_writer_meta(sw, "format", "pt");
        int *idx = malloc((size_t)cnt * sizeof *idx);
        uint64_t *sums = malloc((size_t)cnt * sizeof *sums), *offs = malloc((size_t)cnt * sizeof *offs);
        zaya_status s = (idx && sums && offs) ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "file table");
        int k = 0;
        for (int i = 0; i < w->n && s == ZAYA_OK; i++) {
            ck_item *it = &w->items[i];
            if (it->model != !pass || it->owner != r) continue;
            char key[256];
            if (it->model) snprintf(key, sizeof key, "%s", it->name);
            else snprintf(key, sizeof key, "%s@%lld", it->name, (long long)it->start);
            int64_t flat = it->count;
            zaya_st_dtype sd = it->model ? w->opt.model_dtype : it->dtype;
            s = it->model ? zaya_st_writer_add(sw, key, sd, it->ndim, it->shape, it->data, ZAYA_ST_F32)
                          : zaya_st_writer_add(sw, key, sd, 1, &flat, it->data, it->dtype);
            idx[k++] = i;
        }
        uint64_t fbytes = 0;
        if (s == ZAYA_OK) s = zaya_st_writer_finish(sw, sums, offs, &fbytes);
        else zaya_st_writer_abort(sw);
        if (s == ZAYA_OK) {
            cJSON *f = cJSON_CreateObject();
            cJSON_AddStringToObject(f, "name", fname);
            cJSON_AddNumberToObject(f, "rank", r);
            cJSON_AddNumberToObject(f, "bytes", (double)fbytes);
            cJSON_AddItemToArray(files, f);
            *bytes_out += fbytes;
            (*files_out)++;
            for (int j = 0; j < k; j++) {
                ck_item *it = &w->items[idx[j]];
                cJSON *p = cJSON_CreateObject();
                char key[256], hx[17];
                if (it->model) snprintf(key, sizeof key, "%s", it->name);
                else snprintf(key, sizeof key, "%s@%lld", it->name, (long long)it->start);
                cJSON_AddStringToObject(p, "name", it->name);
                cJSON_AddBoolToObject(p, "model", it->model);
                cJSON_AddStringToObject(p, "dtype", zaya_st_dtype_name(it->model ? w->opt.model_dtype : it->dtype));
                cJSON *sh = cJSON_AddArrayToObject(p, "shape");
                for (int d = 0; d < it->ndim; d++) cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)it->shape[d]));
                cJSON_AddNumberToObject(p, "rank", r);
                cJSON_AddStringToObject(p, "file", fname);
                cJSON_AddStringToObject(p, "key", key);
                cJSON_AddNumberToObject(p, "start", (double)it->start);
                cJSON_AddNumberToObject(p, "count", (double)it->count);
                cJSON_AddNumberToObject(p, "offset", (double)offs[j]);
                hex64(hx, sums[j]);
                cJSON_AddStringToObject(p, "xxh3", hx);
                cJSON_AddItemToArray(pieces, p);
            }
        }
        free(idx);
        free(sums);
        free(offs);
        if (s != ZAYA_OK) return s;
    }
    return ZAYA_OK;
}

static int cmp_piece(const void *a, const void *b) {
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    int c = strcmp(cJSON_GetObjectItem(x, "name")->valuestring, cJSON_GetObjectItem(y, "name")->valuestring);
    if (c) return c;
    double s1 = cJSON_GetObjectItem(x, "start")->valuedouble, s2 = cJSON_GetObjectItem(y, "start")->valuedouble;
    return (s1 > s2) - (s1 < s2);
}

/* Rank 0: merges the ranks' descriptions into the manifest; checks that the pieces of every entry
 * agree on dtype and shape and tile it exactly. */
static zaya_status build_manifest(zaya_ckpt_writer *w, cJSON **descs, cJSON **out) {
    int world = w->comm.world;
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "format", ZAYA_CKPT_FORMAT);
    cJSON_AddNumberToObject(m, "format_version", ZAYA_CKPT_VERSION);
    cJSON_AddNumberToObject(m, "step", (double)w->step);
    cJSON_AddNumberToObject(m, "tokens", (double)w->tokens);
    cJSON_AddNumberToObject(m, "world_size", world);
    cJSON_AddNumberToObject(m, "created_unix", (double)time(NULL));
    cJSON *o = cJSON_AddObjectToObject(m, "options");
    cJSON_AddStringToObject(o, "model_dtype", zaya_st_dtype_name(w->opt.model_dtype));
    cJSON_AddBoolToObject(o, "split_model", w->opt.split_model);
    for (cJSON *s = w->sections->child; s; s = s->next) cJSON_AddItemToObject(m, s->string, cJSON_Duplicate(s, 1));
    cJSON *files = cJSON_AddArrayToObject(m, "files");
    cJSON *ranks = cJSON_AddArrayToObject(m, "ranks");
    int np = 0;
    for (int r = 0; r < world; r++) {
        for (cJSON *f = cJSON_GetObjectItem(descs[r], "files")->child; f; f = f->next)
            cJSON_AddItemToArray(files, cJSON_Duplicate(f, 1));
        np += cJSON_GetArraySize(cJSON_GetObjectItem(descs[r], "pieces"));
        cJSON *rk = cJSON_CreateObject();
        cJSON_AddNumberToObject(rk, "rank", r);
        cJSON *sec = cJSON_GetObjectItem(descs[r], "sections");
        cJSON_AddItemToObject(rk, "sections", sec ? cJSON_Duplicate(sec, 1) : cJSON_CreateObject());
        cJSON_AddItemToArray(ranks, rk);
    }
    cJSON **all = malloc((size_t)(np + 1) * sizeof *all);
    if (!all) {
        cJSON_Delete(m);
        return zaya_error_set(ZAYA_ENOMEM, "manifest");
    }
    int k = 0;
    for (int r = 0; r < world; r++)
        for (cJSON *p = cJSON_GetObjectItem(descs[r], "pieces")->child; p; p = p->next) all[k++] = p;
    qsort(all, (size_t)np, sizeof *all, cmp_piece);
    cJSON *tensors = cJSON_AddArrayToObject(m, "tensors");
    zaya_status s = ZAYA_OK;
    for (int i = 0; i < np && s == ZAYA_OK;) {
        const cJSON *first = all[i];
        const char *name = cJSON_GetObjectItem(first, "name")->valuestring;
        char *shape0 = cJSON_PrintUnformatted(cJSON_GetObjectItem(first, "shape"));
        const char *dt0 = cJSON_GetObjectItem(first, "dtype")->valuestring;
        int model = cJSON_IsTrue(cJSON_GetObjectItem(first, "model"));
        int64_t numel = 1;
        for (cJSON *d = cJSON_GetObjectItem(first, "shape")->child; d; d = d->next) numel *= (int64_t)d->valuedouble;
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", name);
        cJSON_AddStringToObject(t, "kind", model ? "model" : "shard");
        cJSON_AddStringToObject(t, "dtype", dt0);
        cJSON_AddItemToObject(t, "shape", cJSON_Duplicate(cJSON_GetObjectItem(first, "shape"), 1));
        cJSON *pcs = cJSON_AddArrayToObject(t, "pieces");
        cJSON_AddItemToArray(tensors, t);
        int64_t at = 0;
        int j = i;
        for (; j < np && !strcmp(cJSON_GetObjectItem(all[j], "name")->valuestring, name); j++) {
            const cJSON *p = all[j];
            char *shp = cJSON_PrintUnformatted(cJSON_GetObjectItem(p, "shape"));
            int same = !strcmp(shp, shape0) && !strcmp(cJSON_GetObjectItem(p, "dtype")->valuestring, dt0) &&
                       cJSON_IsTrue(cJSON_GetObjectItem(p, "model")) == model;
            free(shp);
            int64_t st = (int64_t)cJSON_GetObjectItem(p, "start")->valuedouble;
            int64_t cnt = (int64_t)cJSON_GetObjectItem(p, "count")->valuedouble;
            int rk = (int)cJSON_GetObjectItem(p, "rank")->valuedouble;
            if (!same) {
                s = zaya_error_set(ZAYA_EINVAL, "array '%s': rank %d declares another dtype, shape or kind than the other ranks", name, rk);
                break;
            }
            if (st != at) {
                s = zaya_error_set(ZAYA_EINVAL, "array '%s': rank %d's range starts at element %lld but the ranges before end at %lld (%s)",
                                   name, rk, (long long)st, (long long)at, st < at ? "overlap" : "gap");
                break;
            }
            at += cnt;
            cJSON *q = cJSON_CreateObject();
            static const char *const keep[] = {"rank", "file", "key", "start", "count", "offset", "xxh3"};
            for (int c = 0; c < 7; c++) cJSON_AddItemToObject(q, keep[c], cJSON_Duplicate(cJSON_GetObjectItem(p, keep[c]), 1));
            cJSON_AddItemToArray(pcs, q);
        }
        if (s == ZAYA_OK && at != numel)
            s = zaya_error_set(ZAYA_EINVAL, "array '%s': ranks store %lld of its %lld elements", name, (long long)at, (long long)numel);
        free(shape0);
        i = j;
    }
    free(all);
    if (s == ZAYA_OK) s = zaya_ckpt_manifest_seal(m); /* last: covers everything above */
    if (s != ZAYA_OK) {
        cJSON_Delete(m);
        return s;
    }
    *out = m;
    return ZAYA_OK;
}

/* Rank 0's finish: manifest into tmp, fsync, rename, fsync root, latest, retention. */
static zaya_status finish_rank0(zaya_ckpt_writer *w, const char *tmp, const char *final, const char *dirname_,
                                cJSON **descs) {
    cJSON *man = NULL;
    ZAYA_TRY(build_manifest(w, descs, &man));
    char path[600];
    zaya_status s = zaya_path_join(path, sizeof path, tmp, "manifest.json");
    if (s == ZAYA_OK) {
        /* Written directly (no extra rename): the directory rename is the commit point. */
        char *txt = cJSON_Print(man);
        int fd = txt ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
        if (!txt) s = zaya_error_set(ZAYA_ENOMEM, "manifest text");
        else if (fd < 0) s = zaya_error_set(ZAYA_EIO, "cannot create '%s': %s", path, strerror(errno));
        else {
            s = zaya_st_write_all(fd, txt, strlen(txt), path);
            if (s == ZAYA_OK && fsync(fd)) s = zaya_error_set(ZAYA_EIO, "fsync of '%s' failed: %s", path, strerror(errno));
        }
        if (fd >= 0) close(fd);
        free(txt);
    }
    cJSON_Delete(man);
    if (s == ZAYA_OK) s = zaya_fsync_dir(tmp);
    /* The commit. A step being redone (a resume from an older step, --no-resume) replaces the
     * existing directory with one atomic exchange, so step-N is complete at every instant; the old
     * one, now under the temp name, is removed after latest points at the new one. */
    struct stat sb;
    int replace = s == ZAYA_OK && lstat(final, &sb) == 0;
    char old[640] = "";
    if (s == ZAYA_OK && !replace && rename(tmp, final) != 0)
        s = zaya_error_set(ZAYA_EIO, "rename '%s' -> '%s' failed: %s", tmp, final, strerror(errno));
    if (s == ZAYA_OK && replace) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, final, RENAME_EXCHANGE) == 0) {
            snprintf(old, sizeof old, "%s", tmp);
        } else if (errno == EINVAL || errno == ENOSYS) { /* filesystem without exchange: brief gap, readers fall back */
            snprintf(old, sizeof old, "%s.replaced", tmp);
            if (rename(final, old) != 0 || rename(tmp, final) != 0)
                s = zaya_error_set(ZAYA_EIO, "replacing '%s' failed: %s", final, strerror(errno));
        } else
            s = zaya_error_set(ZAYA_EIO, "exchange '%s' <-> '%s' failed: %s", tmp, final, strerror(errno));
        if (s == ZAYA_OK) ZAYA_INFO("checkpoint %s existed (a step redone): replaced atomically", final);
    }
    if (s != ZAYA_OK) return s;
    ZAYA_TRY(zaya_fsync_dir(w->root));
    char latest[600], line[80];
    ZAYA_TRY(zaya_path_join(latest, sizeof latest, w->root, "latest"));
    snprintf(line, sizeof line, "%s\n", dirname_);
    ZAYA_TRY(zaya_write_file_atomic(latest, line, strlen(line)));
    if (*old && ck_remove_tree(old) != 0) ZAYA_WARN("cannot remove the replaced checkpoint %s: %s", old, strerror(errno));
    if (w->opt.keep_last > 0 || w->opt.keep_every > 0) {
        zaya_status rs = zaya_ckpt_apply_retention(w->root, w->opt.keep_last, w->opt.keep_every);
        if (rs != ZAYA_OK) ZAYA_WARN("checkpoint retention: %s", zaya_error_message()); /* the save itself succeeded */
    }
    return ZAYA_OK;
}

static zaya_status commit_run(zaya_ckpt_writer *w, zaya_ckpt_save_stats *st) {
    double t0 = zaya_now_s();
    int rank = w->comm.rank, world = w->comm.world;
    assign_owners(w);
    char dirname_[64], final[600], tmp[600];
    snprintf(dirname_, sizeof dirname_, "step-%08lld", (long long)w->step);
    ck_msg *msg = calloc(1, sizeof *msg);
    if (!msg) return zaya_error_set(ZAYA_ENOMEM, "checkpoint message");
    /* 1. rank 0 creates the temp directory and tells everyone its name */
    if (rank == 0) {
        zaya_status s = zaya_mkdir_p(w->root);
        if (s == ZAYA_OK) s = zaya_path_join(final, sizeof final, w->root, dirname_);
        if (s == ZAYA_OK) {
            ck_cleanup_stale_tmp(w->root);
            snprintf(msg->name, sizeof msg->name, "%s.tmp-%d", dirname_, (int)getpid());
            s = zaya_path_join(tmp, sizeof tmp, w->root, msg->name);
            if (s == ZAYA_OK && mkdir(tmp, 0755) != 0)
                s = zaya_error_set(ZAYA_EIO, "cannot create '%s': %s", tmp, strerror(errno));
        }
        msg->status = s;
        if (s != ZAYA_OK) snprintf(msg->text, sizeof msg->text, "%s", zaya_error_message());
    }
    zaya_status cs = w->comm.bcast(w->comm.ctx, msg, sizeof *msg);
    if (cs != ZAYA_OK) {
        free(msg);
        return cs;
    }
    if (msg->status != ZAYA_OK) {
        zaya_status s = zaya_error_set((zaya_status)msg->status, "%s", msg->text);
        free(msg);
        return s;
    }
    snprintf(tmp, sizeof tmp, "%s/%s", w->root, msg->name);
    snprintf(final, sizeof final, "%s/%s", w->root, dirname_);
    /* 2. every rank writes its files */
    uint64_t bytes = 0;
    int nfiles = 0;
    cJSON *desc = cJSON_CreateObject();
    cJSON_AddNumberToObject(desc, "rank", rank);
    zaya_status s = w->fail != ZAYA_OK ? zaya_error_set(w->fail, "%s", w->fail_msg)
                                       : write_rank_files(w, tmp, desc, &bytes, &nfiles);
    cJSON_AddBoolToObject(desc, "ok", s == ZAYA_OK);
    cJSON_AddNumberToObject(desc, "status", s);
    cJSON_AddNumberToObject(desc, "bytes", (double)bytes);
    if (s != ZAYA_OK) cJSON_AddStringToObject(desc, "error", zaya_error_message());
    cJSON_AddItemToObject(desc, "sections", cJSON_Duplicate(w->rank_sections, 1));
    char *txt = cJSON_PrintUnformatted(desc);
    cJSON_Delete(desc);
    /* 3. rank 0 gathers the file tables, commits or cleans up */
    char *all = NULL;
    size_t *lens = calloc((size_t)world, sizeof *lens);
    cs = w->comm.gather(w->comm.ctx, txt, strlen(txt), &all, lens);
    free(txt);
    uint64_t bytes_all = bytes;
    if (rank == 0) {
        zaya_status fs = cs;
        cJSON **descs = calloc((size_t)world, sizeof *descs);
        size_t at = 0;
        for (int r = 0; r < world && fs == ZAYA_OK; r++) {
            descs[r] = cJSON_ParseWithLength(all + at, lens[r]);
            at += lens[r];
            if (!descs[r]) fs = zaya_error_set(ZAYA_EFORMAT, "rank %d sent an unreadable file table", r);
            else if (!cJSON_IsTrue(cJSON_GetObjectItem(descs[r], "ok"))) {
                const cJSON *e = cJSON_GetObjectItem(descs[r], "error");
                fs = zaya_error_set((zaya_status)cJSON_GetObjectItem(descs[r], "status")->valueint, "rank %d: %s", r,
                                    cJSON_IsString(e) ? e->valuestring : "failed");
            } else if (r > 0) bytes_all += (uint64_t)cJSON_GetObjectItem(descs[r], "bytes")->valuedouble;
        }
        if (fs == ZAYA_OK) fs = finish_rank0(w, tmp, final, dirname_, descs);
        if (fs != ZAYA_OK) {
            snprintf(msg->text, sizeof msg->text, "saving checkpoint %s: %s", final, zaya_error_message());
            ck_remove_tree(tmp); /* whatever was written of this step */
        }
        msg->status = fs;
        for (int r = 0; r < world; r++) cJSON_Delete(descs[r]);
        free(descs);
    }
    free(all);
    free(lens);
    cs = w->comm.bcast(w->comm.ctx, msg, sizeof *msg);
    zaya_status result = cs != ZAYA_OK ? cs : (zaya_status)msg->status;
    if (result != ZAYA_OK && cs == ZAYA_OK) zaya_error_set(result, "%s", msg->text);
    free(msg);
    if (st) {
        st->write_s = zaya_now_s() - t0;
        st->total_s = st->snapshot_s + st->write_s;
        st->bytes = bytes;
        st->bytes_all = bytes_all;
        st->files = nfiles;
        snprintf(st->dir, sizeof st->dir, "%s", final);
    }
    return result;
}

zaya_status zaya_ckpt_writer_commit(zaya_ckpt_writer *w, zaya_ckpt_save_stats *st) {
    zaya_ckpt_save_stats local = {0};
    zaya_status s = commit_run(w, &local);
    if (st) *st = local;
    zaya_ckpt_writer_free(w);
    return s;
}

static void *async_main(void *arg) {
    zaya_ckpt_writer *w = arg;
    w->async_status = commit_run(w, &w->stats);
    if (w->async_status != ZAYA_OK) {
        snprintf(w->async_msg, sizeof w->async_msg, "%s", zaya_error_message());
        ZAYA_ERROR("the background checkpoint save failed: %s", w->async_msg); /* now, not at the next save */
    }
    __atomic_store_n(&w->async_done, 1, __ATOMIC_RELEASE);
    return NULL;
}

zaya_status zaya_ckpt_writer_commit_async(zaya_ckpt_writer *w, zaya_ckpt_snapshot *snap, double *stall_s) {
    double t0 = zaya_now_s();
    assign_owners(w);
    size_t total = 0;
    for (int i = 0; i < w->n; i++)
        if (w->items[i].owner == w->comm.rank) total += (item_bytes(&w->items[i]) + 63) / 64 * 64;
    ZAYA_TRY(zaya_ckpt_snapshot_reserve(snap, total));
    char *dst = snap->buf;
    for (int i = 0; i < w->n; i++) {
        ck_item *it = &w->items[i];
        if (it->owner != w->comm.rank) continue;
        size_t b = item_bytes(it);
        ck_parallel_copy(dst, it->data, b);
        it->data = dst;
        dst += (b + 63) / 64 * 64;
    }
    memset(&w->stats, 0, sizeof w->stats);
    w->stats.snapshot_s = zaya_now_s() - t0;
    if (stall_s) *stall_s = w->stats.snapshot_s;
    if (pthread_create(&w->thread, NULL, async_main, w) != 0)
        return zaya_error_set(ZAYA_EIO, "cannot start the checkpoint writer thread");
    w->async = 1;
    return ZAYA_OK;
}

int zaya_ckpt_writer_done(const zaya_ckpt_writer *w) {
    return w->async && __atomic_load_n(&w->async_done, __ATOMIC_ACQUIRE);
}

zaya_status zaya_ckpt_writer_wait(zaya_ckpt_writer *w, zaya_ckpt_save_stats *st) {
    if (!w->async) {
        zaya_ckpt_writer_free(w);
        return zaya_error_set(ZAYA_EINVAL, "no asynchronous checkpoint save in flight");
    }
    pthread_join(w->thread, NULL);
    zaya_status s = w->async_status;
    if (s != ZAYA_OK) zaya_error_set(s, "%s", w->async_msg);
    w->stats.total_s = w->stats.snapshot_s + w->stats.write_s;
    if (s == ZAYA_OK && w->comm.rank == 0)
        ZAYA_INFO("checkpoint %s: stall %.3f s (snapshot), background write %.3f s, %.3f GB", w->stats.dir,
                  w->stats.snapshot_s, w->stats.write_s, w->stats.bytes_all / 1e9);
    if (st) *st = w->stats;
    zaya_ckpt_writer_free(w);
    return s;
}

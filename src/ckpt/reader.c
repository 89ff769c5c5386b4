/* Checkpoint reader: manifest, file and piece validation, checksums, range reads, fallback to the
 * newest good checkpoint. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "ckpt/internal.h"
#include "zaya/bf16.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/config.h"
#include "zaya/model.h"

void zaya_ckpt_close(zaya_ckpt *c) {
    if (!c) return;
    for (int i = 0; i < c->nfiles; i++) {
        zaya_st_close(&c->files[i]);
        free(c->file_names[i]);
    }
    for (int i = 0; i < c->nentries; i++) {
        for (int j = 0; j < c->entries[i].npieces; j++) free(c->entries[i].pieces[j].key);
        free(c->entries[i].pieces);
        free(c->entries[i].name);
    }
    free(c->files);
    free(c->file_names);
    free(c->entries);
    cJSON_Delete(c->manifest);
    free(c);
}

static int find_file(const zaya_ckpt *c, const char *name) {
    for (int i = 0; i < c->nfiles; i++)
        if (!strcmp(c->file_names[i], name)) return i;
    return -1;
}

/* A JSON non-negative integer. */
static int get_u(const cJSON *o, const char *key, int64_t *v) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(j) || j->valuedouble < 0 || j->valuedouble > 9007199254740992.0 ||
        j->valuedouble != (double)(int64_t)j->valuedouble)
        return -1;
    *v = (int64_t)j->valuedouble;
    return 0;
}

zaya_status zaya_ckpt_manifest_checksum(cJSON *m, char out[17]) {
    cJSON *own = cJSON_DetachItemFromObjectCaseSensitive(m, "manifest_xxh3");
    char *txt = cJSON_PrintUnformatted(m);
    if (own) cJSON_AddItemToObject(m, "manifest_xxh3", own);
    if (!txt) return zaya_error_set(ZAYA_ENOMEM, "manifest text");
    snprintf(out, 17, "%016" PRIx64, (uint64_t)XXH3_64bits(txt, strlen(txt)));
    free(txt);
    return ZAYA_OK;
}

zaya_status zaya_ckpt_manifest_seal(cJSON *m) {
    char hx[17];
    cJSON_DeleteItemFromObjectCaseSensitive(m, "manifest_xxh3");
    ZAYA_TRY(zaya_ckpt_manifest_checksum(m, hx));
    if (!cJSON_AddStringToObject(m, "manifest_xxh3", hx)) return zaya_error_set(ZAYA_ENOMEM, "manifest");
    return ZAYA_OK;
}

/* Version 2 manifests carry the checksum of their own content; version 1 predates it. A manifest
 * cannot switch its own check off by claiming version 1: one without a checksum opens only when the
 * caller asks for it (ZAYA_CKPT_OPEN_ACCEPT_V1, `--accept-v1`). */
static zaya_status check_manifest_sum(cJSON *m, int version, const char *mpath, int accept_v1) {
    const cJSON *own = cJSON_GetObjectItemCaseSensitive(m, "manifest_xxh3");
    if (version < 2 && !own) {
        if (!accept_v1)
            return zaya_error_set(ZAYA_EFORMAT,
                                  "%s: format_version %d manifest without 'manifest_xxh3': its content cannot be checked; "
                                  "`zaya ckpt info|verify --accept-v1` reads it if it is an old checkpoint you trust "
                                  "(docs/checkpoints.md)",
                                  mpath, version);
        ZAYA_WARN("%s: format_version %d manifest without a checksum, accepted as asked (--accept-v1)", mpath, version);
        return ZAYA_OK;
    }
    if (!cJSON_IsString(own) || strlen(own->valuestring) != 16)
        return zaya_error_set(ZAYA_EFORMAT, "%s: missing or malformed 'manifest_xxh3' (format_version %d requires it)", mpath, version);
    char hx[17];
    ZAYA_TRY(zaya_ckpt_manifest_checksum(m, hx));
    if (strcmp(hx, own->valuestring))
        return zaya_error_set(ZAYA_EFORMAT,
                              "%s: manifest checksum %s != stored manifest_xxh3 %s (the manifest's JSON was modified or "
                              "corrupted; after a deliberate edit reseal it)",
                              mpath, hx, own->valuestring);
    return ZAYA_OK;
}

static zaya_status load_entries(zaya_ckpt *c, const char *mpath) {
    const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(c->manifest, "tensors");
    if (!cJSON_IsArray(tensors)) return zaya_error_set(ZAYA_EFORMAT, "%s: missing array 'tensors'", mpath);
    int n = cJSON_GetArraySize(tensors);
    c->entries = calloc((size_t)n + 1, sizeof *c->entries);
    if (!c->entries) return zaya_error_set(ZAYA_ENOMEM, "%d tensors", n);
    int i = 0;
    for (const cJSON *t = tensors->child; t; t = t->next, i++) {
        zaya_ckpt_entry *e = &c->entries[i];
        c->nentries = i + 1;
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(t, "name"), *dt = cJSON_GetObjectItemCaseSensitive(t, "dtype");
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(t, "kind"), *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
        const cJSON *pcs = cJSON_GetObjectItemCaseSensitive(t, "pieces");
        if (!cJSON_IsString(nm) || !cJSON_IsString(dt) || !cJSON_IsString(kind) || !cJSON_IsArray(sh) || !cJSON_IsArray(pcs))
            return zaya_error_set(ZAYA_EFORMAT, "%s: tensors[%d] lacks name, kind, dtype, shape or pieces", mpath, i);
        e->name = strdup(nm->valuestring);
        e->model = !strcmp(kind->valuestring, "model");
        if (zaya_st_dtype_parse(dt->valuestring, &e->dtype))
            return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': unknown dtype '%s'", mpath, e->name, dt->valuestring);
        e->ndim = cJSON_GetArraySize(sh);
        if (e->ndim > ZAYA_ST_MAX_DIMS) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': too many dimensions", mpath, e->name);
        e->numel = 1;
        int d = 0;
        for (const cJSON *x = sh->child; x; x = x->next, d++) {
            if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 1e15)
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': bad shape", mpath, e->name);
            e->shape[d] = (int64_t)x->valuedouble;
            if (__builtin_mul_overflow(e->numel, e->shape[d], &e->numel))
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': the shape's element count overflows int64", mpath,
                                      e->name);
        }
        e->npieces = cJSON_GetArraySize(pcs);
        e->pieces = calloc((size_t)e->npieces + 1, sizeof *e->pieces);
        if (!e->pieces) return zaya_error_set(ZAYA_ENOMEM, "pieces");
        int64_t at = 0;
        int j = 0;
        int esz = zaya_st_dtype_size(e->dtype);
        for (const cJSON *p = pcs->child; p; p = p->next, j++) {
            zaya_ckpt_piece *q = &e->pieces[j];
            const cJSON *file = cJSON_GetObjectItemCaseSensitive(p, "file"), *key = cJSON_GetObjectItemCaseSensitive(p, "key");
            const cJSON *xx = cJSON_GetObjectItemCaseSensitive(p, "xxh3");
            int64_t rank, off;
            if (!cJSON_IsString(file) || !cJSON_IsString(key) || !cJSON_IsString(xx) || get_u(p, "start", &q->start) ||
                get_u(p, "count", &q->count) || get_u(p, "offset", &off) || get_u(p, "rank", &rank))
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': piece %d is malformed", mpath, e->name, j);
            if (rank >= c->world)
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': piece %d is on rank %lld, outside world_size %d", mpath,
                                      e->name, j, (long long)rank, c->world);
            q->rank = (int)rank;
            q->offset = (uint64_t)off;
            q->key = strdup(key->valuestring);
            char *endp;
            q->xxh3 = strtoull(xx->valuestring, &endp, 16);
            if (*endp || strlen(xx->valuestring) != 16)
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': piece %d: bad xxh3 '%s'", mpath, e->name, j, xx->valuestring);
            if (q->start != at)
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': piece %d starts at element %lld, expected %lld", mpath,
                                      e->name, j, (long long)q->start, (long long)at);
            at += q->count;
            q->file = find_file(c, file->valuestring);
            if (q->file < 0)
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': file '%s' is not in the file table", mpath, e->name,
                                      file->valuestring);
            const zaya_st_file *f = &c->files[q->file];
            const zaya_st_tensor *st = zaya_st_find(f, q->key);
            if (!st) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' (key '%s') is missing", f->path, e->name, q->key);
            if (st->dtype != e->dtype || st->numel != q->count || st->file_offset != q->offset)
                return zaya_error_set(ZAYA_EFORMAT,
                                      "%s: tensor '%s': stored as %s x %lld at offset %" PRIu64 ", manifest says %s x %lld at %" PRIu64,
                                      f->path, q->key, zaya_st_dtype_name(st->dtype), (long long)st->numel, st->file_offset,
                                      zaya_st_dtype_name(e->dtype), (long long)q->count, q->offset);
            if (e->model) {
                if (st->ndim != e->ndim || memcmp(st->shape, e->shape, sizeof(int64_t) * (size_t)e->ndim))
                    return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': shape differs from the manifest", f->path, q->key);
            }
            (void)esz;
        }
        if (at != e->numel)
            return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': pieces hold %lld of %lld elements (incomplete)", mpath,
                                  e->name, (long long)at, (long long)e->numel);
    }
    return ZAYA_OK;
}

static int cmp_entry_name(const void *a, const void *b) {
    return strcmp((*(const zaya_ckpt_entry *const *)a)->name, (*(const zaya_ckpt_entry *const *)b)->name);
}

/* Every tensor name once in the tensor table (sorted copy: n log n). */
static zaya_status check_unique_entries(const zaya_ckpt *c, const char *mpath) {
    if (c->nentries < 2) return ZAYA_OK;
    const zaya_ckpt_entry **v = malloc((size_t)c->nentries * sizeof *v);
    if (!v) return zaya_error_set(ZAYA_ENOMEM, "%s: tensor table of %d entries", mpath, c->nentries);
    for (int i = 0; i < c->nentries; i++) v[i] = &c->entries[i];
    qsort(v, (size_t)c->nentries, sizeof *v, cmp_entry_name);
    zaya_status s = ZAYA_OK;
    for (int i = 1; i < c->nentries && s == ZAYA_OK; i++)
        if (!strcmp(v[i]->name, v[i - 1]->name))
            s = zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' is listed twice in 'tensors'", mpath, v[i]->name);
    free(v);
    return s;
}

zaya_status zaya_ckpt_open(zaya_ckpt **out, const char *dir, int verify) {
    *out = NULL;
    zaya_ckpt *c = calloc(1, sizeof *c);
    if (!c) return zaya_error_set(ZAYA_ENOMEM, "checkpoint");
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    char mpath[700];
    zaya_status s = zaya_path_join(mpath, sizeof mpath, dir, "manifest.json");
    if (s == ZAYA_OK) {
        struct stat sb;
        if (stat(mpath, &sb) != 0) s = zaya_error_set(ZAYA_EIO, "missing manifest '%s' (not a checkpoint directory?)", mpath);
    }
    if (s == ZAYA_OK) s = zaya_json_load_file(mpath, &c->manifest);
    const char *fmt = NULL;
    int version = 0, world = 0;
    if (s == ZAYA_OK) s = zaya_json_get_str(c->manifest, "format", &fmt, 1);
    if (s == ZAYA_OK && strcmp(fmt, ZAYA_CKPT_FORMAT))
        s = zaya_error_set(ZAYA_EFORMAT, "format '%s' is not '%s'", fmt, ZAYA_CKPT_FORMAT);
    if (s == ZAYA_OK) s = zaya_json_get_int(c->manifest, "format_version", &version, 1);
    if (s == ZAYA_OK && (version < 1 || version > ZAYA_CKPT_VERSION))
        s = zaya_error_set(ZAYA_EUNSUPPORTED, "format_version %d (this build reads 1 to %d)", version, ZAYA_CKPT_VERSION);
    if (s == ZAYA_OK) {
        s = check_manifest_sum(c->manifest, version, mpath, (verify & ZAYA_CKPT_OPEN_ACCEPT_V1) != 0);
        if (s != ZAYA_OK) { /* the message names the manifest already */
            zaya_ckpt_close(c);
            return s;
        }
    }
    if (s == ZAYA_OK) s = zaya_json_get_i64(c->manifest, "step", &c->step, 1);
    if (s == ZAYA_OK) s = zaya_json_get_i64(c->manifest, "tokens", &c->tokens, 1);
    if (s == ZAYA_OK) s = zaya_json_get_int(c->manifest, "world_size", &world, 1);
    if (s == ZAYA_OK && world < 1) s = zaya_error_set(ZAYA_EFORMAT, "world_size %d", world);
    c->world = world;
    const cJSON *files = s == ZAYA_OK ? cJSON_GetObjectItemCaseSensitive(c->manifest, "files") : NULL;
    if (s == ZAYA_OK && !cJSON_IsArray(files)) s = zaya_error_set(ZAYA_EFORMAT, "missing array 'files'");
    if (s != ZAYA_OK) {
        zaya_error_context(s, "%s", mpath);
        zaya_ckpt_close(c);
        return s;
    }
    int nf = cJSON_GetArraySize(files);
    c->files = calloc((size_t)nf + 1, sizeof *c->files);
    c->file_names = calloc((size_t)nf + 1, sizeof *c->file_names);
    for (const cJSON *f = files->child; f && s == ZAYA_OK; f = f->next) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(f, "name");
        int64_t bytes;
        if (!cJSON_IsString(nm) || strchr(nm->valuestring, '/') || get_u(f, "bytes", &bytes)) {
            s = zaya_error_set(ZAYA_EFORMAT, "%s: files[%d] is malformed", mpath, c->nfiles);
            break;
        }
        char path[800];
        s = zaya_path_join(path, sizeof path, dir, nm->valuestring);
        if (s == ZAYA_OK) s = zaya_st_open(&c->files[c->nfiles], path);
        if (s != ZAYA_OK) break;
        c->file_names[c->nfiles++] = strdup(nm->valuestring);
        if ((int64_t)c->files[c->nfiles - 1].size != bytes)
            s = zaya_error_set(ZAYA_EFORMAT, "%s: %zu bytes, manifest says %lld (truncated?)", path,
                               c->files[c->nfiles - 1].size, (long long)bytes);
    }
    for (int i = 0; i < c->nfiles && s == ZAYA_OK; i++)
        for (int k = 0; k < i && s == ZAYA_OK; k++)
            if (!strcmp(c->file_names[i], c->file_names[k]))
                s = zaya_error_set(ZAYA_EFORMAT, "%s: file '%s' is listed twice in 'files'", mpath, c->file_names[i]);
    if (s == ZAYA_OK) s = load_entries(c, mpath);
    if (s == ZAYA_OK) s = check_unique_entries(c, mpath);
    if (s == ZAYA_OK && (verify & ZAYA_CKPT_OPEN_VERIFY)) s = zaya_ckpt_verify(c);
    if (s != ZAYA_OK) {
        zaya_ckpt_close(c);
        return s;
    }
    *out = c;
    return ZAYA_OK;
}

zaya_status zaya_ckpt_verify(const zaya_ckpt *c) {
    for (int i = 0; i < c->nentries; i++) {
        const zaya_ckpt_entry *e = &c->entries[i];
        for (int j = 0; j < e->npieces; j++) {
            const zaya_ckpt_piece *p = &e->pieces[j];
            const zaya_st_file *f = &c->files[p->file];
            uint64_t h = XXH3_64bits((const char *)f->map + p->offset, (size_t)p->count * (size_t)zaya_st_dtype_size(e->dtype));
            if (h != p->xxh3)
                return zaya_error_set(ZAYA_EFORMAT,
                                      "%s: tensor '%s' at offset %" PRIu64 ": checksum %016" PRIx64 " != manifest %016" PRIx64
                                      " (corrupted data)",
                                      f->path, p->key, p->offset, h, p->xxh3);
        }
    }
    return ZAYA_OK;
}

static int cmp_entry_key(const void *key, const void *e) {
    return strcmp((const char *)key, (*(const zaya_ckpt_entry *const *)e)->name);
}

zaya_status zaya_ckpt_check_model(const zaya_ckpt *c) {
    const cJSON *sec = zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL);
    if (!sec)
        return zaya_error_set(ZAYA_EFORMAT, "%s: no '%s' section: the tensor set cannot be checked against a model", c->dir,
                              ZAYA_CKPT_SECTION_MODEL);
    zaya_config cfg;
    zaya_status s = zaya_config_from_json(sec, &cfg);
    if (s != ZAYA_OK) return zaya_error_context(s, "%s: section '%s'", c->dir, ZAYA_CKPT_SECTION_MODEL);
    zaya_tensor_info *t = NULL;
    int n = 0;
    int64_t nf = 0;
    s = zaya_layout_build_public(&cfg, &t, &n, &nf);
    if (s != ZAYA_OK) return zaya_error_context(s, "%s: section '%s'", c->dir, ZAYA_CKPT_SECTION_MODEL);
    const zaya_ckpt_entry **v = malloc(((size_t)c->nentries + 1) * sizeof *v);
    char *used = calloc((size_t)c->nentries + 1, 1);
    if (!v || !used) s = zaya_error_set(ZAYA_ENOMEM, "%s: tensor table of %d entries", c->dir, c->nentries);
    for (int i = 0; s == ZAYA_OK && i < c->nentries; i++) v[i] = &c->entries[i];
    if (s == ZAYA_OK && c->nentries > 1) qsort(v, (size_t)c->nentries, sizeof *v, cmp_entry_name);
    for (int i = 0; s == ZAYA_OK && i < n; i++) {
        const zaya_ckpt_entry **hit = c->nentries ? bsearch(t[i].name, v, (size_t)c->nentries, sizeof *v, cmp_entry_key) : NULL;
        if (!hit) {
            s = zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' of the model in '%s' is missing (%d tensors stored, the model has %d)",
                               c->dir, t[i].name, ZAYA_CKPT_SECTION_MODEL, c->nentries, n);
            break;
        }
        const zaya_ckpt_entry *e = *hit;
        used[e - c->entries] = 1;
        if (!e->model || e->ndim != t[i].ndim || memcmp(e->shape, t[i].shape, sizeof(int64_t) * (size_t)t[i].ndim)) {
            char got[128] = "", want[128] = "";
            for (int d = 0; d < e->ndim; d++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "", (long long)e->shape[d]);
            for (int d = 0; d < t[i].ndim; d++)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "," : "", (long long)t[i].shape[d]);
            s = zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' is stored as a %s tensor of shape [%s]; the model in '%s' needs a model tensor of [%s]",
                               c->dir, e->name, e->model ? "model" : "sharded", got, ZAYA_CKPT_SECTION_MODEL, want);
        }
    }
    for (int i = 0; s == ZAYA_OK && i < c->nentries; i++)
        if (c->entries[i].model && !used[i])
            s = zaya_error_set(ZAYA_EFORMAT, "%s: model tensor '%s' is not a tensor of the model in '%s'", c->dir,
                               c->entries[i].name, ZAYA_CKPT_SECTION_MODEL);
    free(used);
    free(v);
    free(t);
    return s;
}

static const char *const latest_names[] = {"ok", "missing", "garbage", "behind", "absent", "unusable"};
const char *zaya_ckpt_latest_state_name(zaya_ckpt_latest_state s) {
    return s >= 0 && s <= ZAYA_CKPT_LATEST_UNUSABLE ? latest_names[s] : "?";
}

int zaya_ckpt_root_has_checkpoints(const char *root) {
    char buf[1024];
    struct stat sb;
    snprintf(buf, sizeof buf, "%s/latest", root);
    if (stat(buf, &sb) == 0) return 1;
    char **names;
    int64_t *steps;
    int n = ck_list_steps(root, &names, &steps);
    ck_free_list(names, steps, n);
    return n > 0;
}

/* The step latest names (-1: missing or not a step name; *state says which). */
static int64_t read_latest(const char *root, zaya_ckpt_latest_state *state, char *why, size_t cap) {
    char buf[1024], *txt = NULL;
    size_t len;
    snprintf(buf, sizeof buf, "%s/latest", root);
    if (zaya_read_file(buf, &txt, &len) != ZAYA_OK) {
        *state = ZAYA_CKPT_LATEST_MISSING;
        snprintf(why, cap, "%.600s", zaya_error_message());
        return -1;
    }
    while (len && (txt[len - 1] == '\n' || txt[len - 1] == ' ' || txt[len - 1] == '\r')) txt[--len] = '\0';
    int64_t step = ck_parse_step_name(txt);
    if (step < 0) {
        *state = ZAYA_CKPT_LATEST_GARBAGE;
        snprintf(why, cap, "'%.500s' holds '%.40s', not a step directory name", buf, txt);
    }
    free(txt);
    return step;
}

zaya_status zaya_ckpt_open_newest(zaya_ckpt **out, const char *path, int verify, zaya_ckpt_resolution *res) {
    zaya_ckpt_resolution local;
    zaya_ckpt_resolution *r = res ? res : &local;
    memset(r, 0, sizeof *r);
    r->latest_step = r->step = -1;
    *out = NULL;
    char buf[1024];
    struct stat sb;
    snprintf(buf, sizeof buf, "%s/manifest.json", path);
    if (stat(buf, &sb) == 0) {
        ZAYA_TRY(zaya_ckpt_open(out, path, verify));
        r->step = r->latest_step = (*out)->step;
        return ZAYA_OK;
    }
    char why[700] = "";
    r->latest = ZAYA_CKPT_LATEST_OK;
    r->latest_step = read_latest(path, &r->latest, why, sizeof why);
    char **names;
    int64_t *steps;
    int n = ck_list_steps(path, &names, &steps);
    char first_err[700] = "";
    int latest_exists = 0, latest_failed = 0;
    for (int i = 0; i < n && !*out; i++) {
        char dir[800];
        snprintf(dir, sizeof dir, "%s/%s", path, names[i]);
        if (steps[i] == r->latest_step) latest_exists = 1;
        if (zaya_ckpt_open(out, dir, verify) == ZAYA_OK) {
            r->step = steps[i];
            break;
        }
        *out = NULL;
        if (steps[i] == r->latest_step) latest_failed = 1;
        if (!*first_err) snprintf(first_err, sizeof first_err, "%.690s", zaya_error_message());
        if (r->nunusable < ZAYA_CKPT_MAX_UNUSABLE) r->unusable[r->nunusable++] = steps[i];
        ZAYA_WARN("checkpoint %s unusable: %s", dir, zaya_error_message());
    }
    for (int i = 0; i < n && r->latest_step >= 0 && !latest_exists; i++) latest_exists = steps[i] == r->latest_step;
    ck_free_list(names, steps, n);
    if (r->latest == ZAYA_CKPT_LATEST_OK && r->latest_step != r->step) {
        if (!latest_exists) {
            r->latest = ZAYA_CKPT_LATEST_ABSENT;
            snprintf(why, sizeof why, "latest names step-%08lld, which does not exist", (long long)r->latest_step);
        } else if (latest_failed) {
            r->latest = ZAYA_CKPT_LATEST_UNUSABLE;
            snprintf(why, sizeof why, "latest names step-%08lld, which is unusable", (long long)r->latest_step);
        } else {
            r->latest = ZAYA_CKPT_LATEST_BEHIND;
            snprintf(why, sizeof why, "latest names step-%08lld, older than the newest complete step (a commit stopped before rewriting latest)",
                     (long long)r->latest_step);
        }
    }
    if (*first_err) snprintf(r->detail, sizeof r->detail, "%.400s; newest unusable: %.580s", why, first_err);
    else snprintf(r->detail, sizeof r->detail, "%s", why);
    if (!*out) return zaya_error_set(ZAYA_EIO, "no loadable checkpoint in '%s' (%s)", path, *r->detail ? r->detail : "no step directories");
    return ZAYA_OK;
}

zaya_status zaya_ckpt_open_latest(zaya_ckpt **out, const char *path, int verify) {
    zaya_ckpt_resolution r;
    ZAYA_TRY(zaya_ckpt_open_newest(out, path, verify, &r));
    if (r.latest != ZAYA_CKPT_LATEST_OK || r.nunusable)
        ZAYA_WARN("latest checkpoint disagrees with the step directories (%s: %s); using %s", zaya_ckpt_latest_state_name(r.latest),
                  r.detail, (*out)->dir);
    return ZAYA_OK;
}

zaya_status zaya_ckpt_require_world(const zaya_ckpt *c, int world) {
    if (c->world == world) return ZAYA_OK;
    return zaya_error_set(ZAYA_EMPI, "%s was saved by %d ranks but this run has %d; convert it first: zaya ckpt reshape %s -o NEW --world-size %d",
                          c->dir, c->world, world, c->dir, world);
}

const cJSON *zaya_ckpt_section(const zaya_ckpt *c, const char *name) {
    return cJSON_GetObjectItemCaseSensitive(c->manifest, name);
}

const cJSON *zaya_ckpt_rank_section(const zaya_ckpt *c, int rank, const char *name) {
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(c->manifest, "ranks");
    for (const cJSON *r = ranks ? ranks->child : NULL; r; r = r->next) {
        const cJSON *rk = cJSON_GetObjectItemCaseSensitive(r, "rank");
        if (cJSON_IsNumber(rk) && rk->valueint == rank)
            return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "sections"), name);
    }
    return NULL;
}

const zaya_ckpt_entry *zaya_ckpt_find(const zaya_ckpt *c, const char *name) {
    for (int i = 0; i < c->nentries; i++)
        if (!strcmp(c->entries[i].name, name)) return &c->entries[i];
    return NULL;
}

/* Walks the pieces overlapping [start, start+count) and hands each part to fn. */
static zaya_status read_range(const zaya_ckpt *c, const char *name, int64_t start, int64_t count, void *dst, int to_f32) {
    const zaya_ckpt_entry *e = zaya_ckpt_find(c, name);
    if (!e) return zaya_error_set(ZAYA_EINVAL, "%s: no tensor '%s' in the checkpoint", c->dir, name);
    if (start < 0 || count < 0 || start > e->numel || count > e->numel - start)
        return zaya_error_set(ZAYA_ERANGE, "%s: tensor '%s': elements [%lld, +%lld) outside %lld", c->dir, name,
                              (long long)start, (long long)count, (long long)e->numel);
    int esz = zaya_st_dtype_size(e->dtype);
    for (int j = 0; j < e->npieces; j++) {
        const zaya_ckpt_piece *p = &e->pieces[j];
        int64_t lo = start > p->start ? start : p->start;
        int64_t hi = start + count < p->start + p->count ? start + count : p->start + p->count;
        if (lo >= hi) continue;
        const zaya_st_file *f = &c->files[p->file];
        if (to_f32) {
            const zaya_st_tensor *t = zaya_st_find(f, p->key);
            ZAYA_TRY(zaya_st_read_f32(f, t, lo - p->start, hi - lo, (float *)dst + (lo - start)));
        } else
            memcpy((char *)dst + (lo - start) * esz, (const char *)f->map + p->offset + (uint64_t)(lo - p->start) * (uint64_t)esz,
                   (size_t)(hi - lo) * (size_t)esz);
    }
    return ZAYA_OK;
}

zaya_status zaya_ckpt_read_f32(const zaya_ckpt *c, const char *name, int64_t start, int64_t count, float *dst) {
    return read_range(c, name, start, count, dst, 1);
}
zaya_status zaya_ckpt_read_raw(const zaya_ckpt *c, const char *name, int64_t start, int64_t count, void *dst) {
    return read_range(c, name, start, count, dst, 0);
}

void zaya_ckpt_print_info(const zaya_ckpt *c, FILE *f, int list_tensors) {
    fprintf(f, "checkpoint  %s\nstep        %lld\ntokens      %lld\nworld size  %d\n", c->dir, (long long)c->step,
            (long long)c->tokens, c->world);
    fprintf(f, "sections   ");
    static const char *const skip[] = {"format", "format_version", "step", "tokens", "world_size", "options",
                                       "files", "tensors", "ranks", "created_unix", "manifest_xxh3", NULL};
    for (const cJSON *s = c->manifest->child; s; s = s->next) {
        int k = 0;
        for (int i = 0; skip[i]; i++) k |= !strcmp(skip[i], s->string);
        if (!k) fprintf(f, " %s", s->string);
    }
    fprintf(f, "\n");
    uint64_t total = 0, model = 0, state = 0;
    for (int i = 0; i < c->nfiles; i++) total += c->files[i].size;
    for (int i = 0; i < c->nentries; i++) {
        uint64_t b = (uint64_t)c->entries[i].numel * (uint64_t)zaya_st_dtype_size(c->entries[i].dtype);
        if (c->entries[i].model) model += b;
        else state += b;
    }
    fprintf(f, "files       %d, %.3f GB\nmodel       %.3f GB\nstate       %.3f GB\ntensors     %d\n", c->nfiles, total / 1e9,
            model / 1e9, state / 1e9, c->nentries);
    for (int i = 0; i < c->nfiles; i++) fprintf(f, "  %-28s %14zu bytes, %d tensors\n", c->file_names[i], c->files[i].size, c->files[i].ntensors);
    if (!list_tensors) return;
    for (int i = 0; i < c->nentries; i++) {
        const zaya_ckpt_entry *e = &c->entries[i];
        fprintf(f, "  %-5s %-4s %-64s [", e->model ? "model" : "shard", zaya_st_dtype_name(e->dtype), e->name);
        for (int d = 0; d < e->ndim; d++) fprintf(f, "%s%lld", d ? "," : "", (long long)e->shape[d]);
        fprintf(f, "] %d piece%s\n", e->npieces, e->npieces == 1 ? "" : "s");
    }
}

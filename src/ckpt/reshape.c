/* Re-slicing a checkpoint onto another number of ranks (and consolidation = one rank). One thread
 * per new rank runs the ordinary writer through an in-process comm, so the result is committed
 * atomically exactly like a training save. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/internal.h"
#include "zaya/alloc.h"
#include "zaya/log.h"

typedef struct reshape_job {
    const zaya_ckpt *src;
    const char *dst_root;
    zaya_ckpt_local_group *group;
    int rank, world;
    zaya_ckpt_options opt;
    float **model_data; /* per entry (model entries only), shared by all ranks */
    int64_t *cuts;      /* per shard entry: world+1 cut points, row-major [entry][world+1] */
    zaya_status status;
    char msg[1024];
} reshape_job;

static const char *const reserved[] = {"format", "format_version", "step", "tokens", "world_size", "options",
                                       "files", "tensors", "ranks", "created_unix", "manifest_xxh3", NULL};

static void *rank_main(void *arg) {
    reshape_job *j = arg;
    const zaya_ckpt *c = j->src;
    zaya_ckpt_comm comm = zaya_ckpt_local_comm(j->group, j->rank);
    zaya_ckpt_writer *w = NULL;
    void **bufs = calloc((size_t)c->nentries + 1, sizeof *bufs);
    zaya_status s = zaya_ckpt_writer_init(&w, j->dst_root, c->step, c->tokens, &j->opt, &comm);
    for (const cJSON *sec = c->manifest->child; sec && s == ZAYA_OK; sec = sec->next) {
        int skip = 0;
        for (int i = 0; reserved[i]; i++) skip |= !strcmp(reserved[i], sec->string);
        if (!skip) s = zaya_ckpt_writer_add_section(w, sec->string, sec);
    }
    if (s == ZAYA_OK) {
        cJSON *from = cJSON_CreateObject();
        cJSON_AddNumberToObject(from, "world_size", c->world);
        cJSON_AddStringToObject(from, "dir", c->dir);
        const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(c->manifest, "ranks");
        if (ranks) cJSON_AddItemToObject(from, "ranks", cJSON_Duplicate(ranks, 1));
        s = zaya_ckpt_writer_add_section(w, "reshaped_from", from);
        cJSON_Delete(from);
    }
    for (int i = 0, k = 0; i < c->nentries && s == ZAYA_OK; i++) {
        const zaya_ckpt_entry *e = &c->entries[i];
        if (e->model) {
            s = zaya_ckpt_writer_add_model(w, e->name, e->ndim, e->shape, j->model_data[i]);
            continue;
        }
        const int64_t *cut = j->cuts + (size_t)k++ * (size_t)(j->world + 1);
        int64_t lo = cut[j->rank], hi = cut[j->rank + 1];
        if (hi <= lo) continue;
        size_t esz = (size_t)zaya_st_dtype_size(e->dtype);
        bufs[i] = zaya_malloc((size_t)(hi - lo) * esz);
        if (!bufs[i]) s = zaya_error_set(ZAYA_ENOMEM, "reshape buffer");
        if (s == ZAYA_OK) s = zaya_ckpt_read_raw(c, e->name, lo, hi - lo, bufs[i]);
        if (s == ZAYA_OK) s = zaya_ckpt_writer_add_shard(w, e->name, e->dtype, e->ndim, e->shape, lo, hi - lo, bufs[i]);
    }
    /* Even after a local failure this rank must take part in the collective commit, or the others
     * would wait forever. */
    if (s != ZAYA_OK) {
        snprintf(j->msg, sizeof j->msg, "%s", zaya_error_message());
        j->status = s;
        if (w) zaya_ckpt_writer_set_error(w, s, j->msg);
    }
    if (w) {
        zaya_status cs = zaya_ckpt_writer_commit(w, NULL);
        if (j->status == ZAYA_OK && cs != ZAYA_OK) {
            j->status = cs;
            snprintf(j->msg, sizeof j->msg, "%s", zaya_error_message());
        }
    }
    for (int i = 0; i < c->nentries; i++) zaya_free(bufs[i]);
    free(bufs);
    return NULL;
}

/* Cut points of [0, n) into `world` parts near equal size, only at allowed boundaries when given. */
static void plan_cuts(int64_t n, int world, const cJSON *units, int64_t *cut) {
    int nb = units ? cJSON_GetArraySize(units) : 0;
    cut[0] = 0;
    cut[world] = n;
    for (int r = 1; r < world; r++) {
        int64_t target = n * r / world, best = target;
        if (nb) {
            best = cut[r - 1];
            int64_t bestd = INT64_MAX;
            for (const cJSON *b = units->child; b; b = b->next) {
                int64_t v = (int64_t)b->valuedouble;
                if (v < cut[r - 1] || v > n) continue;
                int64_t d = v > target ? v - target : target - v;
                if (d < bestd) {
                    bestd = d;
                    best = v;
                }
            }
        }
        cut[r] = best < cut[r - 1] ? cut[r - 1] : best;
    }
}

zaya_status zaya_ckpt_reshape(const char *src_path, const char *dst_root, int new_world, int split_model) {
    if (new_world < 1 || new_world > 4096) return zaya_error_set(ZAYA_EINVAL, "world size %d outside [1, 4096]", new_world);
    zaya_ckpt *c;
    ZAYA_TRY(zaya_ckpt_open_latest(&c, src_path, 1));
    zaya_ckpt_options opt = zaya_ckpt_default_options();
    opt.split_model = split_model;
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c->manifest, "options"), "model_dtype");
    if (cJSON_IsString(o) && !strcmp(o->valuestring, "BF16")) opt.model_dtype = ZAYA_ST_BF16;
    const cJSON *units = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(c->manifest, "optimizer"), "units");
    float **model_data = calloc((size_t)c->nentries + 1, sizeof *model_data);
    int nshard = 0;
    for (int i = 0; i < c->nentries; i++) nshard += !c->entries[i].model;
    int64_t *cuts = calloc((size_t)(nshard + 1) * (size_t)(new_world + 1), sizeof *cuts);
    zaya_status s = model_data && cuts ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "reshape tables");
    for (int i = 0, k = 0; i < c->nentries && s == ZAYA_OK; i++) {
        const zaya_ckpt_entry *e = &c->entries[i];
        if (!e->model) {
            plan_cuts(e->numel, new_world, cJSON_GetObjectItemCaseSensitive(units, e->name), cuts + (size_t)k++ * (size_t)(new_world + 1));
            continue;
        }
        model_data[i] = zaya_malloc((size_t)(e->numel ? e->numel : 1) * sizeof(float));
        if (!model_data[i]) s = zaya_error_set(ZAYA_ENOMEM, "model tensor '%s'", e->name);
        else s = zaya_ckpt_read_f32(c, e->name, 0, e->numel, model_data[i]);
    }
    zaya_ckpt_local_group *g = NULL;
    reshape_job *jobs = calloc((size_t)new_world, sizeof *jobs);
    pthread_t *th = calloc((size_t)new_world, sizeof *th);
    if (s == ZAYA_OK && (!jobs || !th)) s = zaya_error_set(ZAYA_ENOMEM, "reshape jobs");
    if (s == ZAYA_OK) s = zaya_ckpt_local_group_new(&g, new_world);
    if (s == ZAYA_OK) {
        for (int r = 0; r < new_world; r++) {
            jobs[r] = (reshape_job){c, dst_root, g, r, new_world, opt, model_data, cuts, ZAYA_OK, ""};
            if (pthread_create(&th[r], NULL, rank_main, &jobs[r]) != 0) abort(); /* peers would deadlock */
        }
        for (int r = 0; r < new_world; r++) pthread_join(th[r], NULL);
        for (int r = 0; r < new_world && s == ZAYA_OK; r++)
            if (jobs[r].status != ZAYA_OK) s = zaya_error_set(jobs[r].status, "new rank %d: %s", r, jobs[r].msg);
    }
    zaya_ckpt_local_group_free(g);
    for (int i = 0; i < c->nentries; i++) zaya_free(model_data[i]);
    free(model_data);
    free(cuts);
    free(jobs);
    free(th);
    zaya_ckpt_close(c);
    return s;
}

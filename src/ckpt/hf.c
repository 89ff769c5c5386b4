/* Hugging Face interchange: export a checkpoint's model to the HF layout (sharded safetensors +
 * index + config.json + tokenizer.json), import HF directories in the current layout or the
 * original 80-half-layer layout, and fill a zaya_model from either source. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/internal.h"
#include "zaya/alloc.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/model.h"

static int exists(const char *dir, const char *name) {
    char p[1200];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return stat(p, &sb) == 0;
}

static int is_zaya_ckpt(const char *path) { return exists(path, "manifest.json") || exists(path, "latest"); }

/* ---------------- reading an HF directory ---------------- */

typedef struct hf_dir {
    char dir[800];
    int nfiles;
    zaya_st_file *files;
    int original; /* 80-half-layer names */
} hf_dir;

static void hf_close(hf_dir *h) {
    for (int i = 0; i < h->nfiles; i++) zaya_st_close(&h->files[i]);
    free(h->files);
    memset(h, 0, sizeof *h);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A tensor name and the shard (index into h->files) holding it. */
typedef struct hf_name {
    const char *name;
    int file;
} hf_name;

static int cmp_hf_name(const void *a, const void *b) {
    return strcmp(((const hf_name *)a)->name, ((const hf_name *)b)->name);
}

static const char *base_name(const char *path) {
    const char *sl = strrchr(path, '/');
    return sl ? sl + 1 : path;
}

/* Every tensor in one shard only, and, when model.safetensors.index.json is there, its weight_map
 * names every tensor exactly once with the shard that holds it, and metadata.total_size (when given)
 * is the shards' tensor bytes. Memory: one entry per tensor, time n log n. */
static zaya_status hf_check_shards(const hf_dir *h) {
    size_t n = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < h->nfiles; i++) n += (size_t)h->files[i].ntensors;
    hf_name *v = malloc((n + 1) * sizeof *v);
    char *seen = calloc(n + 1, 1);
    zaya_status s = v && seen ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "%s: table of %zu tensors", h->dir, n);
    size_t k = 0;
    for (int i = 0; i < h->nfiles && s == ZAYA_OK; i++)
        for (int j = 0; j < h->files[i].ntensors; j++) {
            const zaya_st_tensor *t = &h->files[i].tensors[j];
            v[k++] = (hf_name){t->name, i};
            bytes += t->end - t->begin;
        }
    if (s == ZAYA_OK && n > 1) qsort(v, n, sizeof *v, cmp_hf_name);
    for (size_t i = 1; i < n && s == ZAYA_OK; i++)
        if (!strcmp(v[i].name, v[i - 1].name))
            s = zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' is in two shards, '%s' and '%s'", h->dir, v[i].name,
                               base_name(h->files[v[i - 1].file].path), base_name(h->files[v[i].file].path));
    char ipath[1200];
    snprintf(ipath, sizeof ipath, "%s/model.safetensors.index.json", h->dir);
    struct stat sb;
    cJSON *idx = NULL;
    if (s == ZAYA_OK && lstat(ipath, &sb) == 0) s = zaya_json_load_file_max(ipath, ZAYA_JSON_INDEX_MAX_BYTES, "a safetensors index", &idx);
    if (s == ZAYA_OK && idx) {
        const cJSON *wm = cJSON_GetObjectItemCaseSensitive(idx, "weight_map");
        const cJSON *meta = cJSON_GetObjectItemCaseSensitive(idx, "metadata");
        const cJSON *total = cJSON_IsObject(meta) ? cJSON_GetObjectItemCaseSensitive(meta, "total_size") : NULL;
        if (!cJSON_IsObject(idx) || !cJSON_IsObject(wm))
            s = zaya_error_set(ZAYA_EFORMAT, "%s: expected an object with an object 'weight_map'", ipath);
        else if (meta && !cJSON_IsObject(meta))
            s = zaya_error_set(ZAYA_EFORMAT, "%s: key 'metadata' must be an object", ipath);
        for (const cJSON *e = s == ZAYA_OK ? wm->child : NULL; e && s == ZAYA_OK; e = e->next) {
            if (!cJSON_IsString(e)) {
                s = zaya_error_set(ZAYA_EFORMAT, "%s: weight_map['%.200s'] must be a shard file name", ipath, e->string);
                break;
            }
            hf_name key = {e->string, 0};
            hf_name *hit = n ? bsearch(&key, v, n, sizeof *v, cmp_hf_name) : NULL;
            if (!hit)
                s = zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%.200s' is missing: weight_map puts it in '%.200s', which does not hold it",
                                   ipath, e->string, e->valuestring);
            else if (seen[hit - v])
                s = zaya_error_set(ZAYA_EFORMAT, "%s: weight_map names tensor '%.200s' twice", ipath, e->string);
            else if (strcmp(base_name(h->files[hit->file].path), e->valuestring))
                s = zaya_error_set(ZAYA_EFORMAT, "%s: weight_map puts tensor '%.200s' in '%.200s', but it is in '%s'", ipath,
                                   e->string, e->valuestring, base_name(h->files[hit->file].path));
            else seen[hit - v] = 1;
        }
        for (size_t i = 0; i < n && s == ZAYA_OK; i++)
            if (!seen[i])
                s = zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' of '%s' is missing from weight_map", ipath, v[i].name,
                                   base_name(h->files[v[i].file].path));
        if (s == ZAYA_OK && total) {
            char num[400];
            const double tv = cJSON_IsNumber(total) ? total->valuedouble : -1;
            if (!(tv >= 0 && tv <= 9007199254740992.0 && tv == (double)(uint64_t)tv))
                s = zaya_error_set(ZAYA_EFORMAT, "%s: key 'metadata.total_size' must be a byte count (got %s)", ipath,
                                   cJSON_IsNumber(total) ? zaya_json_number_text(total->valuedouble, num, sizeof num) : "not a number");
            else if ((uint64_t)tv != bytes)
                s = zaya_error_set(ZAYA_EFORMAT,
                                   "%s: metadata.total_size is %s bytes, but the %d shards hold %" PRIu64 " bytes of tensors",
                                   ipath, zaya_json_number_text(tv, num, sizeof num), h->nfiles, bytes);
        }
    }
    cJSON_Delete(idx);
    free(seen);
    free(v);
    return s;
}

static zaya_status hf_open(hf_dir *h, const char *dir) {
    memset(h, 0, sizeof *h);
    snprintf(h->dir, sizeof h->dir, "%s", dir);
    char **names = NULL;
    int n = 0;
    DIR *d = opendir(dir);
    if (!d) return zaya_error_set(ZAYA_EIO, "cannot open directory '%s'", dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l > 12 && !strcmp(e->d_name + l - 12, ".safetensors")) {
            char **nn = n < 100000 ? realloc(names, (size_t)(n + 1) * sizeof *names) : NULL;
            char *dup = nn ? strdup(e->d_name) : NULL;
            if (nn) names = nn;
            if (!dup) {
                closedir(d);
                for (int i = 0; i < n; i++) free(names[i]);
                free(names);
                return zaya_error_set(ZAYA_ENOMEM, "'%s': cannot list more than %d *.safetensors files", dir, n);
            }
            names[n++] = dup;
        }
    }
    closedir(d);
    if (!n) return zaya_error_set(ZAYA_EFORMAT, "'%s' has no *.safetensors files", dir);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    h->files = calloc((size_t)n, sizeof *h->files);
    zaya_status s = h->files ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "files");
    for (int i = 0; i < n && s == ZAYA_OK; i++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        s = zaya_st_open(&h->files[i], p);
        if (s == ZAYA_OK) h->nfiles++;
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (s != ZAYA_OK) {
        hf_close(h);
        return s;
    }
    if ((s = hf_check_shards(h)) != ZAYA_OK) {
        hf_close(h);
        return s;
    }
    for (int i = 0; i < h->nfiles; i++)
        if (zaya_st_find(&h->files[i], "model.final_norm.weight") || zaya_st_find(&h->files[i], "model.layers.0.input_norm.weight"))
            h->original = 1;
    return ZAYA_OK;
}

static const zaya_st_tensor *hf_find(const hf_dir *h, const char *name, const zaya_st_file **f) {
    for (int i = 0; i < h->nfiles; i++) {
        const zaya_st_tensor *t = zaya_st_find(&h->files[i], name);
        if (t) {
            *f = &h->files[i];
            return t;
        }
    }
    return NULL;
}

typedef struct orig_rule {
    const char *hf;   /* suffix after model.layers.L. */
    int half;         /* 0: half-layer 2L, 1: 2L+1, 2: 2L+2 (final merge for the last block) */
    const char *orig; /* suffix after model.layers.N. (%d = expert) */
} orig_rule;

static const orig_rule rules[] = {
    {"input_layernorm.weight", 0, "input_norm.weight"},
    {"self_attn.qkv_proj.q_proj.weight", 0, "self_attn.qkv.linear_q.weight"},
    {"self_attn.qkv_proj.k_proj.weight", 0, "self_attn.qkv.linear_k.weight"},
    {"self_attn.qkv_proj.v_proj_current.weight", 0, "self_attn.qkv.val_proj1.weight"},
    {"self_attn.qkv_proj.v_proj_delayed.weight", 0, "self_attn.qkv.val_proj2.weight"},
    {"self_attn.qkv_proj.conv_qk_depthwise.weight", 0, "self_attn.qkv.conv_qk.0.weight"},
    {"self_attn.qkv_proj.conv_qk_depthwise.bias", 0, "self_attn.qkv.conv_qk.0.bias"},
    {"self_attn.qkv_proj.conv_qk_grouped.weight", 0, "self_attn.qkv.conv_qk.1.weight"},
    {"self_attn.qkv_proj.conv_qk_grouped.bias", 0, "self_attn.qkv.conv_qk.1.bias"},
    {"self_attn.qk_norm.temp", 0, "self_attn.qkv.temp"},
    {"self_attn.o_proj.weight", 0, "self_attn.o_proj.weight"},
    {"post_attention_residual_scale.", 1, "res_scale."},
    {"post_attention_layernorm.weight", 1, "input_norm.weight"},
    {"mlp.gate.down_proj.weight", 1, "zaya_block.router.down_proj.weight"},
    {"mlp.gate.down_proj.bias", 1, "zaya_block.router.down_proj.bias"},
    {"mlp.gate.router_states_scale", 1, "zaya_block.router.router_states_scale"},
    {"mlp.gate.router_mlp.norm.weight", 1, "zaya_block.router.rmsnorm_eda.weight"},
    {"mlp.gate.router_mlp.fc1.weight", 1, "zaya_block.router.router_mlp.0.weight"},
    {"mlp.gate.router_mlp.fc1.bias", 1, "zaya_block.router.router_mlp.0.bias"},
    {"mlp.gate.router_mlp.fc2.weight", 1, "zaya_block.router.router_mlp.2.weight"},
    {"mlp.gate.router_mlp.fc2.bias", 1, "zaya_block.router.router_mlp.2.bias"},
    {"mlp.gate.router_mlp.out_proj.weight", 1, "zaya_block.router.router_mlp.4.weight"},
    {"mlp.gate.balancing_biases", 1, "zaya_block.router.balancing_biases"},
    {"mlp.experts.gate_up_proj", 1, "zaya_block.experts.local_experts.%d.linear_fc1.weight"},
    {"mlp.experts.down_proj", 1, "zaya_block.experts.local_experts.%d.linear_fc2.weight"},
    {"post_mlp_residual_scale.", 2, "res_scale."},
};

/* The original-layout name of an HF tensor (a printf pattern with %d for stacked experts). */
static int map_original(const char *hf, int64_t nlayers, char *out, size_t cap, int *stacked) {
    *stacked = 0;
    if (!strcmp(hf, "model.embed_tokens.weight")) return snprintf(out, cap, "%s", hf), 0;
    if (!strcmp(hf, "model.norm.weight")) return snprintf(out, cap, "model.final_norm.weight"), 0;
    if (!strncmp(hf, "model.input_hidden_states_", 26))
        return snprintf(out, cap, "model.layers.0.res_scale.hidden_states_%s", hf + 26), 0;
    int L, n = 0;
    if (sscanf(hf, "model.layers.%d.%n", &L, &n) != 1 || n == 0) return -1;
    const char *suf = hf + n;
    for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
        size_t rl = strlen(rules[i].hf);
        int prefix = rules[i].hf[rl - 1] == '.';
        if (prefix ? strncmp(suf, rules[i].hf, rl) : strcmp(suf, rules[i].hf)) continue;
        const char *rest = prefix ? suf + rl : "";
        *stacked = strstr(rules[i].orig, "%d") != NULL;
        if (rules[i].half == 2 && L == nlayers - 1) return snprintf(out, cap, "model.res_scale.%s", rest), 0;
        return snprintf(out, cap, "model.layers.%d.%s%s", 2 * L + rules[i].half, rules[i].orig, rest), 0;
    }
    return -1;
}

static zaya_status shape_error(const zaya_st_file *f, const zaya_st_tensor *t, const int64_t *shape, int ndim) {
    char got[128] = "", want[128] = "";
    for (int d = 0; d < t->ndim; d++) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? "," : "", (long long)t->shape[d]);
    for (int d = 0; d < ndim; d++) snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "," : "", (long long)shape[d]);
    return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' has shape [%s], the model needs [%s]", f->path, t->name, got, want);
}

static int same_shape(const zaya_st_tensor *t, const int64_t *shape, int ndim) {
    if (t->ndim != ndim) return 0;
    for (int d = 0; d < ndim; d++)
        if (t->shape[d] != shape[d]) return 0;
    return 1;
}

static zaya_status hf_load_tensor(const hf_dir *h, const zaya_tensor_info *ti, int64_t nlayers, float *dst) {
    const zaya_st_file *f;
    if (!h->original) {
        const zaya_st_tensor *t = hf_find(h, ti->name, &f);
        if (!t) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' is missing", h->dir, ti->name);
        if (!same_shape(t, ti->shape, ti->ndim)) return shape_error(f, t, ti->shape, ti->ndim);
        return zaya_st_read_f32(f, t, 0, t->numel, dst);
    }
    char pat[256], name[256];
    int stacked;
    if (map_original(ti->name, nlayers, pat, sizeof pat, &stacked))
        return zaya_error_set(ZAYA_EUNSUPPORTED, "no original-layout name for '%s'", ti->name);
    int64_t nexp = stacked ? ti->shape[0] : 1;
    int64_t per = ti->numel / nexp;
    for (int64_t e = 0; e < nexp; e++) {
        snprintf(name, sizeof name, pat, (int)e);
        const zaya_st_tensor *t = hf_find(h, name, &f);
        if (!t) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' (for '%s') is missing", h->dir, name, ti->name);
        const int64_t *want = stacked ? ti->shape + 1 : ti->shape;
        int nd = stacked ? ti->ndim - 1 : ti->ndim;
        if (!same_shape(t, want, nd)) return shape_error(f, t, want, nd);
        ZAYA_TRY(zaya_st_read_f32(f, t, 0, t->numel, dst + e * per));
    }
    return ZAYA_OK;
}

/* Fills block (layout of tensors) from an HF directory. */
static zaya_status hf_load_block(const char *dir, const zaya_config *cfg, const zaya_tensor_info *tensors, int n,
                                 float *block, int *original) {
    hf_dir h;
    ZAYA_TRY(hf_open(&h, dir));
    if (original) *original = h.original;
    zaya_status s = ZAYA_OK;
    for (int i = 0; i < n && s == ZAYA_OK; i++)
        s = hf_load_tensor(&h, &tensors[i], cfg->num_hidden_layers, block + tensors[i].offset);
    hf_close(&h);
    return s;
}

/* ---------------- public entry points ---------------- */

/* config.json of an HF directory. Without "zaya_skip_mode" the model follows transformers' Zaya,
 * which outputs zero for skip-routed tokens (zaya's own default, identity, is the original training
 * code's). *from_config tells whether the key was there. */
static zaya_status hf_config_load(const char *dir, zaya_config *cfg, int *from_config) {
    char p[1200];
    snprintf(p, sizeof p, "%s/config.json", dir);
    cJSON *root = NULL;
    ZAYA_TRY(zaya_json_load_file(p, &root));
    const int has = cJSON_GetObjectItemCaseSensitive(root, "zaya_skip_mode") != NULL;
    cJSON_Delete(root);
    ZAYA_TRY(zaya_config_load(p, cfg));
    if (cfg->attention != ZAYA_ATTENTION_CCA)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "%s: key 'zaya_attention' is \"%s\"; HF directories hold \"cca\" models only", p,
                              zaya_config_attention_name(cfg->attention));
    if (!has) cfg->skip_mode = ZAYA_SKIP_ZERO;
    if (from_config) *from_config = has;
    return ZAYA_OK;
}

zaya_status zaya_ckpt_load_config(const char *path, zaya_config *cfg) {
    if (is_zaya_ckpt(path)) {
        zaya_ckpt *c;
        ZAYA_TRY(zaya_ckpt_open_latest(&c, path, 0));
        const cJSON *sec = zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL);
        zaya_status s = sec ? zaya_config_from_json(sec, cfg)
                            : zaya_error_set(ZAYA_EFORMAT, "%s: no '%s' section in the manifest", c->dir, ZAYA_CKPT_SECTION_MODEL);
        if (s != ZAYA_OK) zaya_error_context(s, "%s", c->dir);
        zaya_ckpt_close(c);
        return s;
    }
    return hf_config_load(path, cfg, NULL);
}

static zaya_status load_from_ckpt(zaya_ckpt *c, const zaya_tensor_info *tensors, int n, float *block) {
    for (int i = 0; i < n; i++) {
        const zaya_tensor_info *t = &tensors[i];
        const zaya_ckpt_entry *e = zaya_ckpt_find(c, t->name);
        if (!e) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' is missing", c->dir, t->name);
        if (!e->model || e->ndim != t->ndim || memcmp(e->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim))
            return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': kind or shape differs from the model (config mismatch?)",
                                  c->dir, t->name);
        ZAYA_TRY(zaya_ckpt_read_f32(c, t->name, 0, t->numel, block + t->offset));
    }
    return ZAYA_OK;
}

zaya_status zaya_ckpt_load_model(const char *path, zaya_model *m) {
    zaya_status s;
    if (is_zaya_ckpt(path)) {
        zaya_ckpt *c;
        ZAYA_TRY(zaya_ckpt_open_latest(&c, path, 1));
        s = load_from_ckpt(c, m->tensors, m->ntensors, m->params);
        zaya_ckpt_close(c);
    } else {
        s = hf_load_block(path, &m->cfg, m->tensors, m->ntensors, m->params, NULL);
    }
    if (s == ZAYA_OK) zaya_model_sync_weights(m);
    return s;
}

/* ---------------- model sources (one tensor at a time) ---------------- */

struct zaya_model_source {
    zaya_ckpt *ckpt; /* zaya checkpoint, or */
    hf_dir hf;       /* HF directory */
};

zaya_status zaya_model_source_open(zaya_model_source **out, const char *path) {
    *out = NULL;
    zaya_model_source *s = calloc(1, sizeof *s);
    if (!s) return zaya_error_set(ZAYA_ENOMEM, "model source");
    zaya_status st = is_zaya_ckpt(path) ? zaya_ckpt_open_latest(&s->ckpt, path, 1) : hf_open(&s->hf, path);
    if (st != ZAYA_OK) {
        free(s);
        return st;
    }
    *out = s;
    return ZAYA_OK;
}

void zaya_model_source_close(zaya_model_source *s) {
    if (!s) return;
    if (s->ckpt) zaya_ckpt_close(s->ckpt);
    else hf_close(&s->hf);
    free(s);
}

/* The one stored tensor that holds t (NULL *st with ZAYA_OK: stored as several, original experts). */
static zaya_status source_tensor(const zaya_model_source *s, const zaya_tensor_info *t, int64_t nlayers,
                                 const zaya_st_file **f, const zaya_st_tensor **st) {
    *f = NULL, *st = NULL;
    if (s->ckpt) {
        const zaya_ckpt *c = s->ckpt;
        const zaya_ckpt_entry *e = zaya_ckpt_find(c, t->name);
        if (!e) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' is missing", c->dir, t->name);
        if (!e->model || e->ndim != t->ndim || memcmp(e->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim))
            return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': kind or shape differs from the model (config mismatch?)",
                                  c->dir, t->name);
        if (e->npieces == 1 && e->pieces[0].start == 0 && e->pieces[0].count == t->numel) {
            *f = &c->files[e->pieces[0].file];
            *st = zaya_st_find(*f, e->pieces[0].key);
            /* the piece table was checked against the file at open */
            if (!*st || (*st)->numel != t->numel || (*st)->dtype != e->dtype)
                return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s': stored piece does not match the manifest", c->dir,
                                      t->name);
        }
        return ZAYA_OK;
    }
    const hf_dir *h = &s->hf;
    if (!h->original) {
        *st = hf_find(h, t->name, f);
        if (!*st) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' is missing", h->dir, t->name);
        if (!same_shape(*st, t->shape, t->ndim)) return shape_error(*f, *st, t->shape, t->ndim);
        return ZAYA_OK;
    }
    char pat[256], name[256];
    int stacked;
    if (map_original(t->name, nlayers, pat, sizeof pat, &stacked))
        return zaya_error_set(ZAYA_EUNSUPPORTED, "no original-layout name for '%s'", t->name);
    const int64_t nexp = stacked ? t->shape[0] : 1;
    for (int64_t e = 0; e < nexp; e++) { /* every piece present with its shape */
        snprintf(name, sizeof name, pat, (int)e);
        const zaya_st_file *ef;
        const zaya_st_tensor *et = hf_find(h, name, &ef);
        if (!et) return zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' (for '%s') is missing", h->dir, name, t->name);
        const int64_t *want = stacked ? t->shape + 1 : t->shape;
        const int nd = stacked ? t->ndim - 1 : t->ndim;
        if (!same_shape(et, want, nd)) return shape_error(ef, et, want, nd);
        if (!stacked) *f = ef, *st = et;
    }
    return ZAYA_OK;
}

zaya_status zaya_model_source_find(const zaya_model_source *s, const zaya_tensor_info *t, int64_t nlayers,
                                   zaya_st_dtype *dtype, const void **raw) {
    const zaya_st_file *f;
    const zaya_st_tensor *st;
    *raw = NULL;
    ZAYA_TRY(source_tensor(s, t, nlayers, &f, &st));
    if (st) {
        *raw = st->data;
        *dtype = st->dtype;
    }
    return ZAYA_OK;
}

zaya_status zaya_model_source_read_f32(const zaya_model_source *s, const zaya_tensor_info *t, int64_t nlayers,
                                       int64_t start, int64_t count, float *dst) {
    if (start < 0 || count < 0 || start > t->numel || count > t->numel - start)
        return zaya_error_set(ZAYA_ERANGE, "tensor '%s': elements [%lld, +%lld) outside %lld", t->name,
                              (long long)start, (long long)count, (long long)t->numel);
    if (s->ckpt) return zaya_ckpt_read_f32(s->ckpt, t->name, start, count, dst);
    const zaya_st_file *f;
    const zaya_st_tensor *st;
    ZAYA_TRY(source_tensor(s, t, nlayers, &f, &st));
    if (st) return zaya_st_read_f32(f, st, start, count, dst);
    /* original layout, one tensor per expert */
    char pat[256], name[256];
    int stacked;
    map_original(t->name, nlayers, pat, sizeof pat, &stacked);
    const int64_t per = t->numel / t->shape[0];
    for (int64_t at = start; at < start + count;) {
        const int64_t e = at / per, lo = at - e * per;
        const int64_t n = per - lo < start + count - at ? per - lo : start + count - at;
        snprintf(name, sizeof name, pat, (int)e);
        const zaya_st_tensor *et = hf_find(&s->hf, name, &f);
        ZAYA_TRY(zaya_st_read_f32(f, et, lo, n, dst + (at - start)));
        at += n;
    }
    return ZAYA_OK;
}

static zaya_status copy_file(const char *src, const char *dst) {
    char *data;
    size_t len;
    ZAYA_TRY(zaya_read_file(src, &data, &len));
    zaya_status s = zaya_write_file_atomic(dst, data, len);
    free(data);
    return s;
}

/* Where exported values come from: a checkpoint's tensors, or the deterministic random init. */
typedef struct export_source {
    const zaya_config *cfg;
    zaya_ckpt *ckpt;  /* NULL: random */
    uint64_t seed;
} export_source;

typedef struct export_item {
    const export_source *src;
    const zaya_tensor_info *t;
    int index;
} export_item;

static zaya_status export_fill(void *ctx, int64_t start, int64_t count, float *dst) {
    const export_item *it = ctx;
    if (it->src->ckpt) return zaya_ckpt_read_f32(it->src->ckpt, it->t->name, start, count, dst);
    zaya_model_init_tensor(it->src->cfg, it->t, it->index, it->src->seed, start, count, dst);
    return ZAYA_OK;
}

/* Shards in layout order, each tensor streamed from its source in pieces (memory: one piece). */
static zaya_status export_model(const export_source *src, const char *out_dir, const zaya_hf_export_opts *o,
                                int *nshards_out) {
    zaya_hf_export_opts opt = o ? *o : (zaya_hf_export_opts){ZAYA_ST_F32, 0, NULL};
    if (opt.shard_bytes <= 0) opt.shard_bytes = 5ll << 30;
    if (opt.dtype != ZAYA_ST_F32 && opt.dtype != ZAYA_ST_BF16) return zaya_error_set(ZAYA_EINVAL, "export dtype must be f32 or bf16");
    const zaya_config *cfg = src->cfg;
    /* transformers' Zaya has none of the architecture variants: refuse before anything is written */
    if (!zaya_config_is_zaya1(cfg))
        return zaya_error_set(ZAYA_EUNSUPPORTED,
                              "the model is a zaya architecture variant (zaya_router \"%s\", zaya_mlp \"%s\", "
                              "zaya_residual_scaling %s) that transformers' Zaya cannot load; only the ZAYA1 defaults "
                              "(\"zaya\", \"moe\", true) export to the Hugging Face layout",
                              zaya_router_name(cfg->router), zaya_mlp_name(cfg->mlp),
                              cfg->residual == ZAYA_RESIDUAL_SCALED ? "true" : "false");
    /* transformers' Zaya has CCA only: a GQA / MHA study model has no HF layout to export to */
    if (cfg->attention != ZAYA_ATTENTION_CCA)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "key 'zaya_attention' is \"%s\"; HF export supports only \"cca\" "
                              "(transformers' Zaya)", zaya_config_attention_name(cfg->attention));
    zaya_tensor_info *t = NULL;
    int n = 0;
    int64_t nf = 0;
    zaya_status s = zaya_layout_build_public(cfg, &t, &n, &nf);
    for (int i = 0; i < n && s == ZAYA_OK && src->ckpt; i++) { /* every tensor present before anything is written */
        const zaya_ckpt_entry *e = zaya_ckpt_find(src->ckpt, t[i].name);
        if (!e || e->numel != t[i].numel)
            s = zaya_error_set(ZAYA_EFORMAT, "%s: tensor '%s' missing or of another size than its config says",
                               src->ckpt->dir, t[i].name);
    }
    if (s == ZAYA_OK) s = zaya_mkdir_p(out_dir);
    int *shard_of = s == ZAYA_OK ? calloc((size_t)n, sizeof *shard_of) : NULL;
    export_item *items = s == ZAYA_OK ? calloc((size_t)n, sizeof *items) : NULL;
    if (s == ZAYA_OK && (!shard_of || !items)) s = zaya_error_set(ZAYA_ENOMEM, "export table");
    int nshards = 0;
    int64_t total = 0;
    if (s == ZAYA_OK) {
        int64_t cur = 0;
        nshards = 1;
        for (int i = 0; i < n; i++) {
            int64_t b = t[i].numel * zaya_st_dtype_size(opt.dtype);
            if (cur > 0 && cur + b > opt.shard_bytes) {
                nshards++;
                cur = 0;
            }
            shard_of[i] = nshards - 1;
            cur += b;
            total += b;
            items[i] = (export_item){src, &t[i], i};
        }
    }
    cJSON *index = cJSON_CreateObject();
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(index, "metadata"), "total_size", (double)total);
    cJSON *wmap = cJSON_AddObjectToObject(index, "weight_map");
    for (int k = 0, i0 = 0; k < nshards && s == ZAYA_OK; k++) {
        char fname[96], path[1200];
        snprintf(fname, sizeof fname, "model-%05d-of-%05d.safetensors", k + 1, nshards);
        snprintf(path, sizeof path, "%s/%s", out_dir, fname);
        zaya_st_writer *w = NULL;
        s = zaya_st_writer_init(&w, path, 1);
        if (s == ZAYA_OK) zaya_st_writer_meta(w, "format", "pt");
        int i = i0;
        for (; i < n && shard_of[i] == k && s == ZAYA_OK; i++) {
            s = zaya_st_writer_add_source(w, t[i].name, opt.dtype, t[i].ndim, t[i].shape, export_fill, &items[i]);
            cJSON_AddStringToObject(wmap, t[i].name, fname);
        }
        if (w && s == ZAYA_OK) s = zaya_st_writer_finish(w, NULL, NULL, NULL);
        else zaya_st_writer_abort(w);
        i0 = i;
    }
    char path[1200];
    if (s == ZAYA_OK) {
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", out_dir);
        s = zaya_json_write_file(path, index, 1);
    }
    if (s == ZAYA_OK) {
        cJSON *cj = zaya_config_to_json(cfg);
        cJSON_AddStringToObject(cj, "dtype", opt.dtype == ZAYA_ST_BF16 ? "bfloat16" : "float32");
        snprintf(path, sizeof path, "%s/config.json", out_dir);
        s = zaya_json_write_file(path, cj, 1);
        cJSON_Delete(cj);
    }
    if (s == ZAYA_OK && opt.tokenizer) {
        snprintf(path, sizeof path, "%s/tokenizer.json", out_dir);
        s = copy_file(opt.tokenizer, path);
        char side[1200];
        snprintf(side, sizeof side, "%s", opt.tokenizer);
        char *slash = strrchr(side, '/');
        snprintf(slash ? slash + 1 : side, sizeof side - (size_t)(slash ? slash + 1 - side : 0), "tokenizer_config.json");
        struct stat sb;
        if (s == ZAYA_OK && stat(side, &sb) == 0) {
            snprintf(path, sizeof path, "%s/tokenizer_config.json", out_dir);
            s = copy_file(side, path);
        }
    }
    cJSON_Delete(index);
    free(items);
    free(shard_of);
    free(t);
    if (nshards_out) *nshards_out = nshards;
    return s;
}

zaya_status zaya_ckpt_export_hf(const char *ckpt, const char *out_dir, const zaya_hf_export_opts *o, int *nshards_out) {
    zaya_ckpt *c;
    ZAYA_TRY(zaya_ckpt_open_latest(&c, ckpt, 1));
    zaya_config cfg;
    const cJSON *sec = zaya_ckpt_section(c, ZAYA_CKPT_SECTION_MODEL);
    zaya_status s = sec ? zaya_config_from_json(sec, &cfg) : zaya_error_set(ZAYA_EFORMAT, "%s: no '%s' section", c->dir, ZAYA_CKPT_SECTION_MODEL);
    if (s == ZAYA_OK) {
        const export_source src = {&cfg, c, 0};
        s = export_model(&src, out_dir, o, nshards_out);
        if (s != ZAYA_OK) zaya_error_context(s, "%s", c->dir);
    }
    zaya_ckpt_close(c);
    return s;
}

zaya_status zaya_ckpt_export_hf_random(const zaya_config *cfg, uint64_t seed, const char *out_dir,
                                       const zaya_hf_export_opts *o, int *nshards_out) {
    ZAYA_TRY(zaya_config_validate(cfg));
    const export_source src = {cfg, NULL, seed};
    return export_model(&src, out_dir, o, nshards_out);
}

zaya_status zaya_ckpt_import_hf(const char *hf_dir_path, const char *out_root, const zaya_hf_import_opts *o,
                                zaya_hf_import_result *r) {
    const int want_skip = o ? o->skip_mode : -1;
    if (want_skip != -1 && want_skip != ZAYA_SKIP_IDENTITY && want_skip != ZAYA_SKIP_ZERO)
        return zaya_error_set(ZAYA_EINVAL, "import skip mode %d is not identity (0) or zero (1)", want_skip);
    zaya_config cfg;
    char p[1200];
    int from_config = 0;
    ZAYA_TRY(hf_config_load(hf_dir_path, &cfg, &from_config));
    const char *skip_source = from_config ? "config.json" : "default";
    if (want_skip != -1) {
        cfg.skip_mode = (zaya_skip_mode)want_skip;
        skip_source = "option";
    }
    zaya_tensor_info *t = NULL;
    int n = 0;
    int64_t nf = 0;
    ZAYA_TRY(zaya_layout_build_public(&cfg, &t, &n, &nf));
    float *block = zaya_calloc((size_t)nf, sizeof(float));
    zaya_status s = block ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "parameter block of %lld floats", (long long)nf);
    int original = 0;
    if (s == ZAYA_OK) s = hf_load_block(hf_dir_path, &cfg, t, n, block, &original);
    zaya_ckpt_writer *w = NULL;
    zaya_ckpt_options opt = zaya_ckpt_default_options();
    if (s == ZAYA_OK) s = zaya_ckpt_writer_init(&w, out_root, 0, 0, &opt, NULL);
    for (int i = 0; i < n && s == ZAYA_OK; i++) s = zaya_ckpt_writer_add_model(w, t[i].name, t[i].ndim, t[i].shape, block + t[i].offset);
    if (s == ZAYA_OK) {
        cJSON *cj = zaya_config_to_json(&cfg);
        s = zaya_ckpt_writer_add_section(w, ZAYA_CKPT_SECTION_MODEL, cj);
        cJSON_Delete(cj);
        cJSON *src = cJSON_CreateObject();
        cJSON_AddStringToObject(src, "source", hf_dir_path);
        cJSON_AddStringToObject(src, "layout", original ? "original-half-layers" : "hf");
        cJSON_AddStringToObject(src, "skip_mode_source", skip_source);
        if (s == ZAYA_OK) s = zaya_ckpt_writer_add_section(w, "import", src);
        cJSON_Delete(src);
    }
    zaya_ckpt_save_stats st;
    if (s == ZAYA_OK) {
        s = zaya_ckpt_writer_commit(w, &st);
        w = NULL;
        if (s == ZAYA_OK && r) {
            snprintf(r->step_dir, sizeof r->step_dir, "%s", st.dir);
            r->skip_mode = (int)cfg.skip_mode;
            r->skip_source = skip_source;
            r->original_layout = original;
        }
    }
    zaya_ckpt_writer_free(w);
    if (s == ZAYA_OK && exists(hf_dir_path, "tokenizer.json")) {
        char dst[1200];
        snprintf(p, sizeof p, "%s/tokenizer.json", hf_dir_path);
        snprintf(dst, sizeof dst, "%s/tokenizer.json", out_root);
        s = copy_file(p, dst);
    }
    zaya_free(block);
    free(t);
    return s;
}

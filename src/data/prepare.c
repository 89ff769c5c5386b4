/* Text -> token shards: walks files and directories, splits them into documents (whole files,
 * delimiter lines, or JSONL records), encodes each through a caller-supplied function, routes it to
 * the train or validation split and writes shards plus a manifest. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zaya/data.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"

typedef struct file_list {
    char **v;
    int n, cap;
} file_list;

static zaya_status files_push(file_list *l, const char *p) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
        l->v = v;
        l->cap = cap;
    }
    if (!(l->v[l->n] = strdup(p))) return zaya_error_set(ZAYA_ENOMEM, "out of memory");
    l->n++;
    return ZAYA_OK;
}

static void files_free(file_list *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
}

static int ext_ok(const char *name, const char *exts) {
    if (!exts || !*exts) return 1;
    const char *dot = strrchr(name, '.');
    if (!dot) return 0;
    size_t n = strlen(dot + 1);
    for (const char *p = exts; *p;) {
        const char *e = strchr(p, ',');
        size_t m = e ? (size_t)(e - p) : strlen(p);
        if (m == n && !strncmp(p, dot + 1, n)) return 1;
        p += m + (e ? 1 : 0);
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Depth-first, names sorted, hidden entries skipped: the same tree always gives the same order. */
static zaya_status walk_dir(const char *dir, const char *exts, file_list *out) {
    DIR *d = opendir(dir);
    if (!d) return zaya_error_set(ZAYA_EIO, "cannot open directory '%s': %s", dir, strerror(errno));
    file_list names = {0};
    struct dirent *e;
    zaya_status s = ZAYA_OK;
    while (s == ZAYA_OK && (e = readdir(d)))
        if (e->d_name[0] != '.') s = files_push(&names, e->d_name);
    closedir(d);
    if (names.n) qsort(names.v, (size_t)names.n, sizeof *names.v, cmp_str);
    char path[4096];
    for (int i = 0; i < names.n && s == ZAYA_OK; i++) {
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, names.v[i]) >= sizeof path) {
            s = zaya_error_set(ZAYA_EINVAL, "path too long under '%s'", dir);
            break;
        }
        struct stat st;
        if (stat(path, &st) != 0) continue; /* dangling link */
        if (S_ISDIR(st.st_mode)) s = walk_dir(path, exts, out);
        else if (S_ISREG(st.st_mode) && ext_ok(names.v[i], exts)) s = files_push(out, path);
    }
    files_free(&names);
    return s;
}

typedef struct prep {
    const zaya_prepare_opts *o;
    zaya_encode_fn encode;
    void *ctx;
    zaya_prepare_stats *st;
    zaya_shard_writer *w[2]; /* train, val */
    int nshards[2];
    cJSON *lists[2];
    uint64_t shard_tokens;
    int32_t *ids;
    size_t nids, cap;
} prep;

static const char *split_name(int val) { return val ? "val" : "train"; }

static zaya_status close_shard(prep *p, int val) {
    if (!p->w[val]) return ZAYA_OK;
    zaya_shard_writer *w = p->w[val];
    p->w[val] = NULL;
    return zaya_shard_writer_finish(w);
}

static zaya_status emit_doc(prep *p, const char *text, size_t len) {
    size_t k = 0;
    while (k < len && (text[k] == ' ' || text[k] == '\n' || text[k] == '\t' || text[k] == '\r')) k++;
    if (k == len) return ZAYA_OK; /* blank documents carry nothing to learn */
    p->nids = 0;
    ZAYA_TRY(p->encode(p->ctx, text, len, &p->ids, &p->nids, &p->cap));
    uint64_t ordinal = p->st->docs++;
    int val = zaya_data_split_is_val(p->o->seed, ordinal, p->o->val_fraction);
    if (!p->w[val]) {
        char name[256], path[4096];
        snprintf(name, sizeof name, "%s-%s-%05d%s", p->o->name, split_name(val), p->nshards[val], ZAYA_SHARD_EXT);
        ZAYA_TRY(zaya_path_join(path, sizeof path, p->o->out_dir, name));
        ZAYA_TRY(zaya_shard_writer_open(path, p->o->vocab_size, 0, p->o->eos_id, p->o->tokenizer_hash, &p->w[val]));
        cJSON_AddItemToArray(p->lists[val], cJSON_CreateString(name));
        p->nshards[val]++;
    }
    ZAYA_TRY(zaya_shard_writer_add(p->w[val], p->ids, p->nids));
    if (val) {
        p->st->val_docs++;
        p->st->val_tokens += p->nids;
    } else {
        p->st->train_docs++;
        p->st->train_tokens += p->nids;
    }
    if (zaya_shard_writer_tokens(p->w[val]) >= p->shard_tokens) ZAYA_TRY(close_shard(p, val));
    return ZAYA_OK;
}

static zaya_status do_text(prep *p, const char *text, size_t len) {
    const char *delim = p->o->doc_delimiter;
    if (!delim) return emit_doc(p, text, len);
    size_t dl = strlen(delim), start = 0;
    for (size_t i = 0; i <= len;) {
        const char *nl = i < len ? memchr(text + i, '\n', len - i) : NULL;
        size_t end = nl ? (size_t)(nl - text) : len; /* line is text[i, end) */
        if (end - i == dl && !memcmp(text + i, delim, dl)) {
            ZAYA_TRY(emit_doc(p, text + start, i - start));
            start = nl ? end + 1 : len;
        }
        if (!nl) break;
        i = end + 1;
    }
    return emit_doc(p, text + start, len - start);
}

static zaya_status do_jsonl(prep *p, const char *path, const char *text, size_t len) {
    const char *key = p->o->jsonl_key ? p->o->jsonl_key : "text";
    size_t line = 0;
    for (size_t i = 0; i < len;) {
        line++;
        const char *nl = memchr(text + i, '\n', len - i);
        size_t end = nl ? (size_t)(nl - text) : len, k = i;
        while (k < end && (text[k] == ' ' || text[k] == '\t' || text[k] == '\r')) k++;
        if (k < end) {
            cJSON *j = cJSON_ParseWithLength(text + i, end - i);
            const cJSON *t = cJSON_IsObject(j) ? cJSON_GetObjectItemCaseSensitive(j, key) : NULL;
            zaya_status s = ZAYA_OK;
            if (!j) s = zaya_error_set(ZAYA_EFORMAT, "%s:%zu: malformed JSON", path, line);
            else if (!cJSON_IsObject(j)) s = zaya_error_set(ZAYA_EFORMAT, "%s:%zu: expected a JSON object", path, line);
            else if (!cJSON_IsString(t))
                s = zaya_error_set(ZAYA_EFORMAT, "%s:%zu: missing string field '%s'", path, line, key);
            else
                s = zaya_error_context(emit_doc(p, t->valuestring, strlen(t->valuestring)), "%s:%zu", path, line);
            cJSON_Delete(j);
            ZAYA_TRY(s);
        }
        i = end + 1;
    }
    return ZAYA_OK;
}

static size_t suffix_len(const char *s, const char *suf) {
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

static zaya_status do_file(prep *p, const char *path) {
    char *text;
    size_t len;
    ZAYA_TRY(zaya_read_file(path, &text, &len));
    zaya_status s = ZAYA_OK;
    p->st->files++;
    p->st->bytes += len;
    if (memchr(text, 0, len)) {
        ZAYA_WARN("data prepare: skipping '%s': contains NUL bytes (binary file?)", path);
        p->st->skipped_files++;
    } else if (suffix_len(path, ".jsonl")) {
        s = do_jsonl(p, path, text, len);
    } else {
        s = zaya_error_context(do_text(p, text, len), "%s", path);
    }
    free(text);
    return s;
}

/* Refuses to mix new shards with older ones of the same source unless asked to replace them. */
static zaya_status clear_old(const zaya_prepare_opts *o) {
    for (int val = 0; val < 2; val++) {
        char pat[4096];
        snprintf(pat, sizeof pat, "%s/%s-%s-*%s", o->out_dir, o->name, split_name(val), ZAYA_SHARD_EXT);
        glob_t g;
        if (glob(pat, 0, NULL, &g) != 0) continue;
        zaya_status s = ZAYA_OK;
        for (size_t i = 0; i < g.gl_pathc && s == ZAYA_OK; i++) {
            if (!o->overwrite)
                s = zaya_error_set(ZAYA_EINVAL, "'%s' already exists; remove the old shards of source '%s' or overwrite",
                                   g.gl_pathv[i], o->name);
            else if (unlink(g.gl_pathv[i]) != 0)
                s = zaya_error_set(ZAYA_EIO, "cannot remove '%s': %s", g.gl_pathv[i], strerror(errno));
        }
        globfree(&g);
        ZAYA_TRY(s);
    }
    return ZAYA_OK;
}

static zaya_status write_manifest(prep *p, const char *const *inputs, int n) {
    const zaya_prepare_opts *o = p->o;
    const zaya_prepare_stats *st = p->st;
    cJSON *j = cJSON_CreateObject();
    char hash[32], path[4096];
    cJSON_AddStringToObject(j, "name", o->name);
    cJSON_AddNumberToObject(j, "vocab_size", (double)o->vocab_size);
    cJSON_AddNumberToObject(j, "eos_id", o->eos_id);
    snprintf(hash, sizeof hash, "%016" PRIx64, o->tokenizer_hash);
    cJSON_AddStringToObject(j, "tokenizer_hash", hash);
    cJSON_AddNumberToObject(j, "val_fraction", o->val_fraction);
    cJSON_AddNumberToObject(j, "seed", (double)o->seed);
    cJSON *in = cJSON_AddArrayToObject(j, "inputs");
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(in, cJSON_CreateString(inputs[i]));
    cJSON_AddNumberToObject(j, "files", (double)st->files);
    cJSON_AddNumberToObject(j, "skipped_files", (double)st->skipped_files);
    cJSON_AddNumberToObject(j, "bytes", (double)st->bytes);
    cJSON_AddNumberToObject(j, "train_docs", (double)st->train_docs);
    cJSON_AddNumberToObject(j, "train_tokens", (double)st->train_tokens);
    cJSON_AddNumberToObject(j, "val_docs", (double)st->val_docs);
    cJSON_AddNumberToObject(j, "val_tokens", (double)st->val_tokens);
    cJSON_AddItemToObject(j, "train", p->lists[0]);
    cJSON_AddItemToObject(j, "val", p->lists[1]);
    p->lists[0] = p->lists[1] = NULL;
    char fname[256];
    snprintf(fname, sizeof fname, "%s.json", o->name);
    zaya_status s = zaya_path_join(path, sizeof path, o->out_dir, fname);
    if (s == ZAYA_OK) s = zaya_json_write_file(path, j, 1);
    cJSON_Delete(j);
    return s;
}

static zaya_status prepare(prep *p, const char *const *inputs, int n) {
    const zaya_prepare_opts *o = p->o;
    if (!o->name || !*o->name || strlen(o->name) >= ZAYA_DATA_NAME_MAX || strchr(o->name, '/'))
        return zaya_error_set(ZAYA_EINVAL, "source name '%s' must have 1 to %d characters and no '/'",
                              o->name ? o->name : "", ZAYA_DATA_NAME_MAX - 1);
    if (!(o->val_fraction >= 0 && o->val_fraction <= 0.5))
        return zaya_error_set(ZAYA_EINVAL, "validation fraction %g must be in [0, 0.5]", o->val_fraction);
    if (o->eos_id >= o->vocab_size)
        return zaya_error_set(ZAYA_EINVAL, "eos id %u must be below the vocab size %" PRIu64, o->eos_id, o->vocab_size);
    if (n < 1) return zaya_error_set(ZAYA_EINVAL, "no input files or directories");
    ZAYA_TRY(zaya_mkdir_p(o->out_dir));
    ZAYA_TRY(clear_old(o));
    file_list files = {0};
    zaya_status s = ZAYA_OK;
    for (int i = 0; i < n && s == ZAYA_OK; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0) s = zaya_error_set(ZAYA_EIO, "cannot read input '%s': %s", inputs[i], strerror(errno));
        else if (S_ISDIR(st.st_mode)) s = walk_dir(inputs[i], o->extensions, &files);
        else s = files_push(&files, inputs[i]);
    }
    for (int i = 0; i < files.n && s == ZAYA_OK; i++) s = do_file(p, files.v[i]);
    files_free(&files);
    for (int val = 0; val < 2 && s == ZAYA_OK; val++) s = close_shard(p, val);
    ZAYA_TRY(s);
    if (p->st->train_docs == 0) return zaya_error_set(ZAYA_EINVAL, "the inputs hold no non-blank documents for training");
    if (o->val_fraction > 0 && p->st->val_docs == 0)
        ZAYA_WARN("data prepare: source '%s': no document fell into the validation split (%" PRIu64 " documents)", o->name,
                  p->st->docs);
    p->st->train_shards = p->nshards[0];
    p->st->val_shards = p->nshards[1];
    return write_manifest(p, inputs, n);
}

zaya_status zaya_data_prepare(const char *const *inputs, int ninputs, const zaya_prepare_opts *opts,
                              zaya_encode_fn encode, void *ctx, zaya_prepare_stats *stats) {
    zaya_prepare_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    prep p = {.o = opts, .encode = encode, .ctx = ctx, .st = stats};
    p.shard_tokens = opts->shard_tokens ? opts->shard_tokens : 64ull << 20;
    p.lists[0] = cJSON_CreateArray();
    p.lists[1] = cJSON_CreateArray();
    zaya_status s = (p.lists[0] && p.lists[1]) ? prepare(&p, inputs, ninputs) : zaya_error_set(ZAYA_ENOMEM, "out of memory");
    for (int val = 0; val < 2; val++) {
        zaya_shard_writer_abort(p.w[val]); /* only left open on failure */
        /* A failed run removes the shards it already published: no partial source is left behind. */
        for (const cJSON *it = p.lists[val] ? p.lists[val]->child : NULL; s != ZAYA_OK && it; it = it->next) {
            char path[4096];
            if (zaya_path_join(path, sizeof path, opts->out_dir, it->valuestring) == ZAYA_OK) unlink(path);
        }
        cJSON_Delete(p.lists[val]);
    }
    free(p.ids);
    return s == ZAYA_OK ? ZAYA_OK : zaya_error_context(s, "data prepare (source '%s')", opts->name ? opts->name : "");
}

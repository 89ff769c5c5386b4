/* Text -> token shards: walks files and directories, splits them into documents (whole files,
 * delimiter lines, or JSONL records streamed from plain, gzip or zstd files), encodes them in
 * parallel batches through a caller-supplied function, routes each to the train or validation split
 * in input order and writes shards plus a manifest. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "data/jsonl.h"
#include "data/text_stream.h"
#include "zaya/data.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/progress.h"
#include "zaya/timer.h"

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

/* The name ends in "." + one of the comma-separated endings ("c", "jsonl.gz"). */
static int ext_ok(const char *name, const char *exts) {
    if (!exts || !*exts) return 1;
    size_t n = strlen(name);
    for (const char *p = exts; *p;) {
        const char *e = strchr(p, ',');
        size_t m = e ? (size_t)(e - p) : strlen(p);
        if (m > 0 && n > m && name[n - m - 1] == '.' && !strncmp(name + n - m, p, m)) return 1;
        p += m + (e ? 1 : 0);
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The (device, inode) pairs already taken: a directory reached twice (a symlink to an ancestor, or a
 * second link) is walked once and a file reached twice is read once. Open addressing, grown at 1/2. */
typedef struct inode_set {
    struct inode_key { uint64_t dev, ino; int used; } *v;
    size_t cap, n;
} inode_set;

static size_t inode_slot(const inode_set *h, uint64_t dev, uint64_t ino) {
    uint64_t x = (dev * 0x9E3779B97F4A7C15ull) ^ (ino * 0xC2B2AE3D27D4EB4Full);
    size_t i = (size_t)(x ^ (x >> 29)) & (h->cap - 1);
    while (h->v[i].used && !(h->v[i].dev == dev && h->v[i].ino == ino)) i = (i + 1) & (h->cap - 1);
    return i;
}

/* 1: newly added; 0: was there already; -1: out of memory. */
static int inode_add(inode_set *h, const struct stat *st) {
    if (2 * (h->n + 1) > h->cap) {
        inode_set g = {calloc(h->cap ? 2 * h->cap : 256, sizeof *g.v), h->cap ? 2 * h->cap : 256, h->n};
        if (!g.v) return -1;
        for (size_t i = 0; i < h->cap; i++)
            if (h->v[i].used) g.v[inode_slot(&g, h->v[i].dev, h->v[i].ino)] = h->v[i];
        free(h->v);
        *h = g;
    }
    size_t i = inode_slot(h, (uint64_t)st->st_dev, (uint64_t)st->st_ino);
    if (h->v[i].used) return 0;
    h->v[i] = (struct inode_key){(uint64_t)st->st_dev, (uint64_t)st->st_ino, 1};
    h->n++;
    return 1;
}

/* A file once: 0 and a warning when it was taken already (under another name or link). */
static zaya_status take_file(inode_set *seen, const char *path, const struct stat *st, file_list *out) {
    int r = inode_add(seen, st);
    if (r < 0) return zaya_error_set(ZAYA_ENOMEM, "out of memory walking the inputs");
    if (r == 0) {
        ZAYA_WARN("data prepare: skipping '%s': the same file was already taken under another name", path);
        return ZAYA_OK;
    }
    return files_push(out, path);
}

/* Depth-first, names sorted, hidden entries skipped: the same tree always gives the same order.
 * Symlinks are followed; a directory already walked (a symlink cycle) is skipped with a warning. */
static zaya_status walk_dir(const char *dir, const struct stat *dst, const char *exts, inode_set *seen, file_list *out) {
    int r = inode_add(seen, dst);
    if (r < 0) return zaya_error_set(ZAYA_ENOMEM, "out of memory walking '%s'", dir);
    if (r == 0) {
        ZAYA_WARN("data prepare: skipping directory '%s': already walked (a symlink cycle or a second link to it)", dir);
        return ZAYA_OK;
    }
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
        if (S_ISDIR(st.st_mode)) s = walk_dir(path, &st, exts, seen, out);
        else if (S_ISREG(st.st_mode) && ext_ok(names.v[i], exts)) s = take_file(seen, path, &st, out);
    }
    files_free(&names);
    return s;
}

/* Documents are gathered into batches (their bytes in one arena per batch) and go through three
 * stages: read (JSONL lines or text documents copied in), encode (all threads), write (in input
 * order). While the team encodes batch k, the master thread writes batch k-1 and reads batch k+1,
 * then joins the encoding: the shards are the same for any number of threads. */
enum { BATCH_DOCS = 4096, MAX_REPORTED_LINES = 10, NBATCH = 3 };
#define BATCH_BYTES ((size_t)4 << 20)

enum { SLOT_TEXT, SLOT_JSONL };

typedef struct doc_slot {
    int kind;
    int file;      /* index into the file list */
    uint64_t line; /* JSONL line number */
    size_t off, len;
    zaya_prepare_skip skip;
    zaya_status status; /* of encoding; err holds its message */
    char *err;
    int32_t *ids;
    size_t nids, cap;
} doc_slot;

typedef struct batch {
    char *arena;
    size_t alen, acap;
    doc_slot *slots; /* BATCH_DOCS, reused: their id buffers keep their capacity */
    int n;
} batch;

/* Where reading stands: the open JSONL stream or the text file being split. */
typedef struct reader {
    int next_file;
    zaya_text_stream *ts;
    int file;
    char *text; /* text file in memory */
    size_t tlen, pos, start;
    int end;    /* all input read */
} reader;

typedef struct prep {
    const zaya_prepare_opts *o;
    zaya_encode_fn encode;
    void *const *ctxs;
    int nctx;
    zaya_prepare_stats *st;
    zaya_jsonl_spec spec;
    const file_list *files;
    zaya_shard_writer *w[2]; /* train, val */
    int nshards[2];
    cJSON *lists[2];
    uint64_t shard_tokens;
    batch b[NBATCH];
    reader r;
    uint64_t reported;
    /* progress */
    zaya_progress prog;
    uint64_t disk_total, disk_done;
    double t0;
} prep;

static const char *split_name(int val) { return val ? "val" : "train"; }

static zaya_status close_shard(prep *p, int val) {
    if (!p->w[val]) return ZAYA_OK;
    zaya_shard_writer *w = p->w[val];
    p->w[val] = NULL;
    return zaya_shard_writer_finish(w);
}

static int is_blank(const char *t, size_t n) {
    for (size_t k = 0; k < n; k++)
        if (t[k] != ' ' && t[k] != '\n' && t[k] != '\t' && t[k] != '\r') return 0;
    return 1;
}

/* ---- read ---- */

static int batch_full(const batch *b, size_t next_len) {
    return b->n == BATCH_DOCS || (b->alen > 0 && b->alen + next_len > BATCH_BYTES);
}

static zaya_status push_doc(batch *b, int kind, int file, uint64_t line, const char *text, size_t len) {
    if (b->alen + len > b->acap) {
        size_t cap = b->acap ? b->acap : BATCH_BYTES;
        while (cap < b->alen + len) cap *= 2;
        char *a = realloc(b->arena, cap);
        if (!a) return zaya_error_set(ZAYA_ENOMEM, "out of memory (document of %zu bytes)", len);
        b->arena = a;
        b->acap = cap;
    }
    if (len) memcpy(b->arena + b->alen, text, len); /* an empty document may come with no arena yet */
    doc_slot *d = &b->slots[b->n++];
    d->kind = kind;
    d->file = file;
    d->line = line;
    d->off = b->alen;
    d->len = len;
    b->alen += len;
    return ZAYA_OK;
}

static void show_progress(prep *p) {
    if (!p->o->progress) return;
    const reader *r = &p->r;
    uint64_t off = r->ts ? zaya_text_stream_file_offset(r->ts) : 0;
    uint64_t bytes = p->st->bytes + (r->ts ? zaya_text_stream_data_bytes(r->ts) : 0);
    double el = zaya_now_s() - p->t0;
    uint64_t tokens = p->st->train_tokens + p->st->val_tokens;
    char note[160];
    snprintf(note, sizeof note, "%.1f MB/s text, %.2fM tokens/s, %" PRIu64 " docs", el > 0 ? (double)bytes / 1e6 / el : 0.0,
             el > 0 ? (double)tokens / 1e6 / el : 0.0, p->st->docs);
    zaya_progress_update(&p->prog, (int64_t)(p->disk_done + off), note);
}

static void end_file(prep *p, int file) {
    struct stat st;
    if (stat(p->files->v[file], &st) == 0) p->disk_done += (uint64_t)st.st_size;
}

/* Opens the next input: a JSONL stream, or a text file read whole. */
static zaya_status open_next(prep *p) {
    reader *r = &p->r;
    const char *path = p->files->v[r->next_file];
    r->file = r->next_file++;
    p->st->files++;
    size_t base = zaya_stream_base_len(path);
    if (base >= 6 && !strncmp(path + base - 6, ".jsonl", 6)) {
        ZAYA_TRY(zaya_text_stream_open(path, &r->ts));
        const uint64_t ratio = p->o->max_expansion == UINT64_MAX ? 0 : p->o->max_expansion ? p->o->max_expansion : ZAYA_TEXT_STREAM_MAX_RATIO;
        zaya_text_stream_set_limits(r->ts, (size_t)p->o->max_line_bytes, ratio);
        return ZAYA_OK;
    }
    if (zaya_stream_codec_of(path) != ZAYA_STREAM_PLAIN)
        return zaya_error_set(ZAYA_EUNSUPPORTED, "'%s': compressed input is read for JSONL only (*.jsonl.gz, *.jsonl.zst)", path);
    ZAYA_TRY(zaya_read_file(path, &r->text, &r->tlen));
    p->st->bytes += r->tlen;
    r->pos = r->start = 0;
    if (memchr(r->text, 0, r->tlen)) {
        ZAYA_WARN("data prepare: skipping '%s': contains NUL bytes (binary file?)", path);
        p->st->skipped_files++;
        free(r->text);
        r->text = NULL;
        end_file(p, r->file);
    }
    return ZAYA_OK;
}

/* Next document of the text file in memory (whole file, or the pieces between delimiter lines);
 * *got = 0 once the file is done. */
static void next_text_doc(prep *p, const char **doc, size_t *len, int *got) {
    reader *r = &p->r;
    const char *delim = p->o->doc_delimiter, *t = r->text;
    *got = 0;
    if (r->start > r->tlen) return;
    if (!delim) {
        *doc = t;
        *len = r->tlen;
        r->start = r->tlen + 1;
        *got = 1;
        return;
    }
    size_t dl = strlen(delim);
    while (r->pos <= r->tlen) {
        const char *nl = r->pos < r->tlen ? memchr(t + r->pos, '\n', r->tlen - r->pos) : NULL;
        size_t end = nl ? (size_t)(nl - t) : r->tlen, i = r->pos; /* line is t[i, end) */
        r->pos = nl ? end + 1 : r->tlen + 1;
        if (end - i == dl && !memcmp(t + i, delim, dl)) {
            *doc = t + r->start;
            *len = i - r->start;
            r->start = nl ? end + 1 : r->tlen;
            *got = 1;
            return;
        }
        if (!nl) break;
    }
    *doc = t + r->start; /* the rest after the last delimiter */
    *len = r->tlen - r->start;
    r->start = r->tlen + 1;
    *got = 1;
}

/* Reads into b until it is full or the input ends (then p->r.end is set). */
static zaya_status fill_batch(prep *p, batch *b) {
    reader *r = &p->r;
    b->n = 0;
    b->alen = 0;
    uint64_t lines = 0;
    while (!r->end) {
        if (r->ts) {
            const char *line;
            size_t len;
            if (batch_full(b, 0)) break;
            ZAYA_TRY(zaya_text_stream_next(r->ts, &line, &len));
            if (!line) {
                p->st->bytes += zaya_text_stream_data_bytes(r->ts);
                zaya_text_stream_close(r->ts);
                r->ts = NULL;
                end_file(p, r->file);
                continue;
            }
            p->st->jsonl_lines++;
            if (is_blank(line, len)) p->st->skipped_lines[ZAYA_SKIP_LINE_BLANK]++;
            else ZAYA_TRY(push_doc(b, SLOT_JSONL, r->file, zaya_text_stream_line_no(r->ts), line, len));
            if ((++lines & 4095) == 0) show_progress(p);
        } else if (r->text) {
            const char *doc;
            size_t len;
            if (batch_full(b, 0)) break;
            int got;
            next_text_doc(p, &doc, &len, &got);
            if (got) {
                zaya_status s = push_doc(b, SLOT_TEXT, r->file, 0, doc, len);
                if (s != ZAYA_OK) return zaya_error_context(s, "%s", p->files->v[r->file]);
            } else {
                free(r->text);
                r->text = NULL;
                end_file(p, r->file);
            }
        } else if (r->next_file < p->files->n) {
            ZAYA_TRY(open_next(p));
            show_progress(p);
        } else {
            r->end = 1;
        }
    }
    return ZAYA_OK;
}

/* ---- encode (any thread) ---- */

static void encode_slot(const prep *p, doc_slot *d, const char *arena, void *ctx) {
    const char *text = arena + d->off;
    size_t len = d->len;
    char *owned = NULL;
    d->nids = 0;
    d->status = ZAYA_OK;
    d->skip = ZAYA_SKIP_LINE_NONE;
    if (d->kind == SLOT_JSONL) {
        d->skip = zaya_jsonl_select(&p->spec, text, len, &owned, &len);
        if (d->skip != ZAYA_SKIP_LINE_NONE) return;
        text = owned;
    } else if (is_blank(text, len)) {
        d->skip = ZAYA_SKIP_LINE_BLANK; /* blank documents carry nothing to learn */
        return;
    }
    d->status = p->encode(ctx, text, len, &d->ids, &d->nids, &d->cap);
    if (d->status != ZAYA_OK) d->err = strdup(zaya_error_message());
    free(owned);
}

/* ---- write (master thread, input order) ---- */

/* Routes one encoded document to its split and shard. */
static zaya_status write_doc(prep *p, const int32_t *ids, size_t n) {
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
    ZAYA_TRY(zaya_shard_writer_add(p->w[val], ids, n));
    if (val) {
        p->st->val_docs++;
        p->st->val_tokens += n;
    } else {
        p->st->train_docs++;
        p->st->train_tokens += n;
    }
    if (zaya_shard_writer_tokens(p->w[val]) >= p->shard_tokens) ZAYA_TRY(close_shard(p, val));
    return ZAYA_OK;
}

static const char *skip_text(const prep *p, zaya_prepare_skip r, char *buf, size_t cap) {
    switch (r) {
    case ZAYA_SKIP_LINE_MALFORMED: return "malformed JSON";
    case ZAYA_SKIP_LINE_NOT_OBJECT: return "expected a JSON object";
    case ZAYA_SKIP_LINE_NO_KEY: snprintf(buf, cap, "missing field '%s'", p->spec.key); return buf;
    case ZAYA_SKIP_LINE_NOT_STRING: snprintf(buf, cap, "field '%s' is not a string", p->spec.key); return buf;
    default: return zaya_prepare_skip_name(r);
    }
}

static zaya_status write_batch(prep *p, batch *b) {
    zaya_status s = ZAYA_OK;
    for (int i = 0; i < b->n && s == ZAYA_OK; i++) {
        doc_slot *d = &b->slots[i];
        const char *path = p->files->v[d->file];
        if (d->status != ZAYA_OK) {
            s = zaya_error_set(d->status, "%s", d->err ? d->err : "encoding failed");
            s = d->kind == SLOT_JSONL ? zaya_error_context(s, "%s:%" PRIu64, path, d->line) : zaya_error_context(s, "%s", path);
            break;
        }
        if (d->kind == SLOT_JSONL) p->st->skipped_lines[d->skip]++;
        if (d->kind == SLOT_JSONL && zaya_prepare_skip_is_bad(d->skip)) {
            char why[300];
            const char *reason = skip_text(p, d->skip, why, sizeof why);
            if (p->o->strict) {
                s = zaya_error_set(ZAYA_EFORMAT, "%s:%" PRIu64 ": %s", path, d->line, reason);
                break;
            }
            if (!p->st->first_bad_line[0])
                snprintf(p->st->first_bad_line, sizeof p->st->first_bad_line, "%.300s:%" PRIu64 ": %.160s", path, d->line,
                         reason);
            if (p->reported++ < MAX_REPORTED_LINES)
                ZAYA_WARN("data prepare: %s:%" PRIu64 ": %s; line skipped", path, d->line, reason);
            else if (p->reported == MAX_REPORTED_LINES + 1)
                ZAYA_WARN("data prepare: more broken JSONL lines follow; counted in the summary, not shown");
        }
        if (d->skip == ZAYA_SKIP_LINE_NONE) s = write_doc(p, d->ids, d->nids);
    }
    for (int i = 0; i < b->n; i++) {
        free(b->slots[i].err);
        b->slots[i].err = NULL;
    }
    b->n = 0;
    return s;
}

/* The pipeline: batch `enc` is encoded by the team while the master writes `wr` and reads `rd`. */
static zaya_status run_pipeline(prep *p) {
    batch *rd = &p->b[0], *enc = &p->b[1], *wr = &p->b[2];
    zaya_status s = fill_batch(p, enc);
    while (s == ZAYA_OK && (enc->n > 0 || wr->n > 0)) {
        zaya_status ms = ZAYA_OK;
        const int n = enc->n;
        const char *arena = enc->arena;
        doc_slot *slots = enc->slots;
#pragma omp parallel num_threads(p->nctx)
        {
#pragma omp master
            {
                ms = write_batch(p, wr);
                if (ms == ZAYA_OK) ms = fill_batch(p, rd);
            }
#pragma omp for schedule(dynamic, 1) nowait
            for (int i = 0; i < n; i++) encode_slot(p, &slots[i], arena, p->ctxs[omp_get_thread_num()]);
        }
        s = ms;
        batch *t = wr; /* written: reused for reading */
        wr = enc;
        enc = rd;
        rd = t;
    }
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
    cJSON_AddNumberToObject(j, "file_bytes", (double)st->file_bytes);
    cJSON_AddNumberToObject(j, "jsonl_lines", (double)st->jsonl_lines);
    cJSON *sk = cJSON_AddObjectToObject(j, "skipped_lines");
    for (int r = 1; r < ZAYA_SKIP_LINE_NREASONS; r++)
        cJSON_AddNumberToObject(sk, zaya_prepare_skip_name((zaya_prepare_skip)r), (double)st->skipped_lines[r]);
    if (st->first_bad_line[0]) cJSON_AddStringToObject(j, "first_bad_line", st->first_bad_line);
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
    if (o->max_line_bytes > ((uint64_t)1 << 40))
        return zaya_error_set(ZAYA_EINVAL, "line cap of %" PRIu64 " bytes is above 1 TiB", o->max_line_bytes);
    ZAYA_TRY(zaya_mkdir_p(o->out_dir));
    ZAYA_TRY(clear_old(o));
    file_list files = {0};
    inode_set seen = {0};
    zaya_status s = ZAYA_OK;
    for (int i = 0; i < n && s == ZAYA_OK; i++) {
        struct stat st;
        if (stat(inputs[i], &st) != 0) s = zaya_error_set(ZAYA_EIO, "cannot read input '%s': %s", inputs[i], strerror(errno));
        else if (S_ISDIR(st.st_mode)) s = walk_dir(inputs[i], &st, o->extensions, &seen, &files);
        else s = take_file(&seen, inputs[i], &st, &files); /* not a regular file: refused when opened */
    }
    free(seen.v);
    for (int i = 0; i < files.n; i++) {
        struct stat st;
        if (stat(files.v[i], &st) == 0) p->disk_total += (uint64_t)st.st_size;
    }
    p->st->file_bytes = p->disk_total;
    p->files = &files;
    p->t0 = zaya_now_s();
    if (o->progress) {
        zaya_progress_init(&p->prog, "data prepare", "MB", (int64_t)p->disk_total);
        p->prog.scale = 1e6;
    }
    if (s == ZAYA_OK) s = run_pipeline(p);
    if (p->r.ts) zaya_text_stream_close(p->r.ts);
    free(p->r.text);
    p->r.ts = NULL;
    p->r.text = NULL;
    p->files = NULL;
    files_free(&files);
    for (int val = 0; val < 2 && s == ZAYA_OK; val++) s = close_shard(p, val);
    p->st->seconds = zaya_now_s() - p->t0;
    ZAYA_TRY(s);
    if (o->progress) {
        char note[160];
        double el = p->st->seconds > 0 ? p->st->seconds : 1e-9;
        snprintf(note, sizeof note, "%.1f MB/s text, %.2fM tokens/s, %" PRIu64 " docs", (double)p->st->bytes / 1e6 / el,
                 (double)(p->st->train_tokens + p->st->val_tokens) / 1e6 / el, p->st->docs);
        zaya_progress_finish(&p->prog, note);
    }
    uint64_t bad = 0;
    for (int r = 1; r < ZAYA_SKIP_LINE_NREASONS; r++)
        if (zaya_prepare_skip_is_bad((zaya_prepare_skip)r)) bad += p->st->skipped_lines[r];
    if (bad) ZAYA_WARN("data prepare: %" PRIu64 " broken JSONL lines skipped (first: %s)", bad, p->st->first_bad_line);
    if (p->st->train_docs == 0)
        return zaya_error_set(ZAYA_EINVAL, "the inputs hold no non-blank documents for training (%" PRIu64 " JSONL lines, %" PRIu64
                              " of them broken%s%s)", p->st->jsonl_lines, bad, bad ? "; first: " : "", p->st->first_bad_line);
    if (o->val_fraction > 0 && p->st->val_docs == 0)
        ZAYA_WARN("data prepare: source '%s': no document fell into the validation split (%" PRIu64 " documents)", o->name,
                  p->st->docs);
    p->st->train_shards = p->nshards[0];
    p->st->val_shards = p->nshards[1];
    return write_manifest(p, inputs, n);
}

zaya_status zaya_data_prepare(const char *const *inputs, int ninputs, const zaya_prepare_opts *opts,
                              zaya_encode_fn encode, void *const *ctxs, int nctx, zaya_prepare_stats *stats) {
    zaya_prepare_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    if (!ctxs || nctx < 1) return zaya_error_set(ZAYA_EINVAL, "data prepare needs at least one encoder context");
    stats->threads = nctx;
    prep p = {.o = opts, .encode = encode, .ctxs = ctxs, .nctx = nctx, .st = stats};
    p.shard_tokens = opts->shard_tokens ? opts->shard_tokens : 64ull << 20;
    p.lists[0] = cJSON_CreateArray();
    p.lists[1] = cJSON_CreateArray();
    int have = p.lists[0] && p.lists[1];
    for (int k = 0; k < NBATCH; k++) have &= (p.b[k].slots = calloc(BATCH_DOCS, sizeof *p.b[k].slots)) != NULL;
    zaya_status s = have ? ZAYA_OK : zaya_error_set(ZAYA_ENOMEM, "out of memory");
    if (s == ZAYA_OK) s = zaya_jsonl_spec_init(&p.spec, opts->jsonl_key, opts->jsonl_filters, opts->njsonl_filters);
    if (s == ZAYA_OK) s = prepare(&p, inputs, ninputs);
    for (int val = 0; val < 2; val++) {
        zaya_shard_writer_abort(p.w[val]); /* only left open on failure */
        /* A failed run removes the shards it already published: no partial source is left behind. */
        for (const cJSON *it = p.lists[val] ? p.lists[val]->child : NULL; s != ZAYA_OK && it; it = it->next) {
            char path[4096];
            if (zaya_path_join(path, sizeof path, opts->out_dir, it->valuestring) == ZAYA_OK) unlink(path);
        }
        cJSON_Delete(p.lists[val]);
    }
    for (int k = 0; k < NBATCH; k++) {
        for (int i = 0; p.b[k].slots && i < BATCH_DOCS; i++) {
            free(p.b[k].slots[i].ids);
            free(p.b[k].slots[i].err);
        }
        free(p.b[k].slots);
        free(p.b[k].arena);
    }
    zaya_jsonl_spec_free(&p.spec);
    return s == ZAYA_OK ? ZAYA_OK : zaya_error_context(s, "data prepare (source '%s')", opts->name ? opts->name : "");
}

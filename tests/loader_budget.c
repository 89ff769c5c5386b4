/* The loaders' budgets (docs/limits.md): each loader of untrusted files runs in a child process on
 * generated adversarial inputs of 1, 10 and 100 MB, and its peak RSS (getrusage of the child, above
 * the RSS of an idle child) and CPU time (user + system of the child: not stretched by a loaded
 * machine, so no timing flakes) must stay within a bound linear in the input. The bounds are
 * generous (memory about 2x, time about 10x what the loaders need on an idle machine), so the test
 * measures budgets, not speed. Usage: loader_budget [--max-mb N] [--scale K] [--only SUBSTRING] (K
 * multiplies the bounds, for the sanitizer build; --only runs the loaders whose name contains it). Prints one line per case: the measured figures docs/limits.md quotes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <xxhash.h>
#include <zstd.h>

#include "zaya/ckpt.h"
#include "zaya/config.h"
#include "zaya/curriculum.h"
#include "zaya/data.h"
#include "zaya/fs.h"
#include "zaya/infer.h"
#include "zaya/json.h"
#include "zaya/log.h"
#include "zaya/safetensors.h"

static char g_dir[128];
static int g_failed;

/* ---- streaming writers (plain, gzip, zstd): generation never holds the input in memory ---- */

typedef struct out {
    FILE *f;
    gzFile gz;
    ZSTD_CStream *zs;
    unsigned char zbuf[1 << 16];
} out;

static void out_open(out *o, const char *path) {
    memset(o, 0, sizeof *o);
    size_t n = strlen(path);
    if (n > 3 && !strcmp(path + n - 3, ".gz")) o->gz = gzopen(path, "wb1");
    else {
        o->f = fopen(path, "wb");
        if (n > 4 && !strcmp(path + n - 4, ".zst")) {
            o->zs = ZSTD_createCStream();
            ZSTD_initCStream(o->zs, 1);
        }
    }
    if (!o->gz && !o->f) abort();
}

static void out_put(out *o, const void *p, size_t n) {
    if (o->gz) {
        if (n && gzwrite(o->gz, p, (unsigned)n) != (int)n) abort();
    } else if (o->zs) {
        ZSTD_inBuffer in = {p, n, 0};
        while (in.pos < in.size) {
            ZSTD_outBuffer ob = {o->zbuf, sizeof o->zbuf, 0};
            if (ZSTD_isError(ZSTD_compressStream(o->zs, &ob, &in))) abort();
            if (fwrite(o->zbuf, 1, ob.pos, o->f) != ob.pos) abort();
        }
    } else if (n && fwrite(p, 1, n, o->f) != n) abort();
}

static void out_str(out *o, const char *s) { out_put(o, s, strlen(s)); }

/* n bytes of the repeated pattern. */
static void out_fill(out *o, const char *pat, size_t n) {
    static char chunk[1 << 16];
    size_t pl = strlen(pat);
    for (size_t i = 0; i < sizeof chunk; i++) chunk[i] = pat[i % pl];
    const size_t whole = sizeof chunk - sizeof chunk % pl;
    while (n > 0) {
        size_t k = n < whole ? n : whole;
        out_put(o, chunk, k);
        n -= k;
    }
}

/* n bytes of pseudo-random lowercase words: text that compresses about as well as real text. */
static void out_fill_words(out *o, size_t n) {
    static char chunk[1 << 16];
    uint64_t x = 0x9E3779B97F4A7C15ull;
    while (n > 0) {
        for (size_t i = 0; i < sizeof chunk; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const unsigned r = (unsigned)(x >> 59);
            chunk[i] = r < 5 ? ' ' : (char)('a' + (x >> 33) % 26);
        }
        size_t k = n < sizeof chunk ? n : sizeof chunk;
        out_put(o, chunk, k);
        n -= k;
    }
}

static void out_close(out *o) {
    if (o->gz) gzclose(o->gz);
    if (o->zs) {
        size_t left;
        do {
            ZSTD_outBuffer ob = {o->zbuf, sizeof o->zbuf, 0};
            left = ZSTD_endStream(o->zs, &ob);
            if (ZSTD_isError(left) || fwrite(o->zbuf, 1, ob.pos, o->f) != ob.pos) abort();
        } while (left);
        ZSTD_freeCStream(o->zs);
    }
    if (o->f) fclose(o->f);
}

static const char *path_of(const char *name) {
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return p;
}

/* ---- inputs ---- */

/* One JSONL line holding a document of S bytes, plain / gzip / zstd. */
static void gen_jsonl_line(const char *name, size_t S) {
    out o;
    out_open(&o, path_of(name));
    out_str(&o, "{\"text\": \"");
    out_fill_words(&o, S);
    out_str(&o, "\"}\n");
    out_close(&o);
}

/* S newlines and one record: the decompression bomb when compressed. */
static void gen_newlines(const char *name, size_t S) {
    out o;
    out_open(&o, path_of(name));
    out_fill(&o, "\n", S);
    out_str(&o, "{\"text\": \"x\"}\n");
    out_close(&o);
}

static void gen_text(const char *name, size_t S) {
    out o;
    out_open(&o, path_of(name));
    out_fill(&o, "word ", S);
    out_close(&o);
}

/* JSON whose bulk is an array of small numbers: cJSON's worst case (a node per two input bytes). */
static void gen_json_numbers(const char *name, const char *head, size_t S) {
    out o;
    out_open(&o, path_of(name));
    out_str(&o, head);
    out_str(&o, "\"zz_pad\": [0");
    out_fill(&o, ",0", S);
    out_str(&o, "]}");
    out_close(&o);
}

/* An HF directory: one shard whose header lists S/2 bytes of empty tensors, and an index naming them. */
static void gen_hf_dir(size_t S) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/hf", g_dir);
    zaya_mkdir_p(dir);
    const size_t per = 64, n = S / 2 / per + 1;
    char p[600];
    snprintf(p, sizeof p, "%s/model-00001-of-00001.safetensors", dir);
    out o;
    out_open(&o, p);
    const uint64_t hlen = (uint64_t)n * per + 1;
    unsigned char le[8];
    for (int i = 0; i < 8; i++) le[i] = (unsigned char)(hlen >> (8 * i));
    out_put(&o, le, 8);
    char rec[128];
    for (size_t i = 0; i < n; i++) { /* every record exactly `per` bytes */
        int k = snprintf(rec, sizeof rec, "%c\"t%09zu\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}", i ? ',' : '{', i);
        while (k < (int)per) rec[k++] = ' ';
        out_put(&o, rec, per);
    }
    out_str(&o, "}");
    out_close(&o);
    snprintf(p, sizeof p, "%s/model.safetensors.index.json", dir);
    out_open(&o, p);
    out_str(&o, "{\"metadata\": {\"total_size\": 0}, \"weight_map\": {");
    for (size_t i = 0; i < n; i++) {
        snprintf(rec, sizeof rec, "%s\"t%09zu\": \"model-00001-of-00001.safetensors\"", i ? ", " : "", i);
        out_str(&o, rec);
    }
    out_str(&o, "}}");
    out_close(&o);
}

/* A checkpoint step whose manifest lists S bytes of tensors, each one piece of the same stored tensor. */
static void gen_manifest(size_t S) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ck/step-00000001", g_dir);
    zaya_mkdir_p(dir);
    char p[600];
    snprintf(p, sizeof p, "%s/model-r00000.safetensors", dir);
    zaya_st_writer *w = NULL;
    float one = 1.0f;
    int64_t shape[1] = {1};
    if (zaya_st_writer_init(&w, p, 0) != ZAYA_OK || zaya_st_writer_add(w, "a", ZAYA_ST_F32, 1, shape, &one, ZAYA_ST_F32) != ZAYA_OK ||
        zaya_st_writer_finish(w, NULL, NULL, NULL) != ZAYA_OK)
        abort();
    zaya_st_file f;
    if (zaya_st_open(&f, p) != ZAYA_OK) abort();
    const zaya_st_tensor *t = zaya_st_find(&f, "a");
    char xx[17];
    snprintf(xx, sizeof xx, "%016" PRIx64, (uint64_t)XXH3_64bits(t->data, 4));
    const uint64_t off = t->file_offset, bytes = f.size;
    zaya_st_close(&f);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "format", ZAYA_CKPT_FORMAT);
    cJSON_AddNumberToObject(m, "format_version", ZAYA_CKPT_VERSION);
    cJSON_AddNumberToObject(m, "step", 1);
    cJSON_AddNumberToObject(m, "tokens", 1);
    cJSON_AddNumberToObject(m, "world_size", 1);
    cJSON *files = cJSON_AddArrayToObject(m, "files"), *fe = cJSON_CreateObject();
    cJSON_AddStringToObject(fe, "name", "model-r00000.safetensors");
    cJSON_AddNumberToObject(fe, "rank", 0);
    cJSON_AddNumberToObject(fe, "bytes", (double)bytes);
    cJSON_AddItemToArray(files, fe);
    cJSON *ts = cJSON_AddArrayToObject(m, "tensors");
    const size_t per = 190;
    for (size_t i = 0; i < S / per + 1; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%zu", i);
        cJSON *e = cJSON_CreateObject(), *pc = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "name", name);
        cJSON_AddStringToObject(e, "kind", "shard");
        cJSON_AddStringToObject(e, "dtype", "F32");
        cJSON_AddItemToObject(e, "shape", cJSON_CreateIntArray((const int[]){1}, 1));
        cJSON_AddNumberToObject(pc, "rank", 0);
        cJSON_AddStringToObject(pc, "file", "model-r00000.safetensors");
        cJSON_AddStringToObject(pc, "key", "a");
        cJSON_AddNumberToObject(pc, "start", 0);
        cJSON_AddNumberToObject(pc, "count", 1);
        cJSON_AddNumberToObject(pc, "offset", (double)off);
        cJSON_AddStringToObject(pc, "xxh3", xx);
        cJSON *pcs = cJSON_AddArrayToObject(e, "pieces");
        cJSON_AddItemToArray(pcs, pc);
        cJSON_AddItemToArray(ts, e);
    }
    if (zaya_ckpt_manifest_seal(m) != ZAYA_OK) abort();
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    if (zaya_json_write_file(p, m, 0) != ZAYA_OK) abort();
    cJSON_Delete(m);
}

/* An eval task file of S bytes of small multiple-choice records (the most records per byte). */
static void gen_eval(size_t S) {
    out o;
    out_open(&o, path_of("task.jsonl"));
    static const char rec[] = "{\"context\": \"a b\", \"choices\": [\" c\", \" d\"], \"label\": 1}\n";
    for (size_t at = 0; at < S; at += sizeof rec - 1) out_str(&o, rec);
    out_close(&o);
}

/* ---- loaders (in the child) ---- */

static zaya_status one_token(void *ctx, const char *text, size_t len, int32_t **ids, size_t *n, size_t *cap) {
    (void)ctx, (void)text, (void)len;
    if (*cap < 1) {
        int32_t *p = realloc(*ids, 16 * sizeof *p);
        if (!p) return zaya_error_set(ZAYA_ENOMEM, "ids");
        *ids = p;
        *cap = 16;
    }
    (*ids)[(*n)++] = 1;
    return ZAYA_OK;
}

static zaya_status run_prepare(const char *name) {
    int calls = 0;
    void *ctx[1] = {&calls};
    char outdir[512];
    snprintf(outdir, sizeof outdir, "%s/prep-out", g_dir);
    zaya_prepare_opts o = {.name = "b", .out_dir = outdir, .vocab_size = 16, .eos_id = 0, .overwrite = 1};
    const char *in[1] = {path_of(name)};
    return zaya_data_prepare(in, 1, &o, one_token, ctx, 1, NULL);
}

static zaya_status run_run_file(void) {
    zaya_run r;
    zaya_status s = zaya_run_load(path_of("run.json"), &r);
    if (s == ZAYA_OK) zaya_run_free(&r);
    return s;
}

static zaya_status run_config(void) {
    zaya_config c;
    return zaya_config_load(path_of("config.json"), &c);
}

static zaya_status run_hf(void) {
    zaya_model_source *src = NULL;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/hf", g_dir);
    zaya_status s = zaya_model_source_open(&src, dir);
    zaya_model_source_close(src);
    return s;
}

static zaya_status run_eval(void) {
    zaya_mc_docs d;
    zaya_status s = zaya_mc_read(path_of("task.jsonl"), ZAYA_MC_AUTO, &d);
    if (s == ZAYA_OK) zaya_mc_docs_free(&d);
    return s;
}

static zaya_status run_manifest(void) {
    zaya_ckpt *c = NULL;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ck/step-00000001", g_dir);
    zaya_status s = zaya_ckpt_open(&c, dir, ZAYA_CKPT_OPEN_VERIFY);
    zaya_ckpt_close(c);
    return s;
}

/* ---- the harness ---- */

typedef enum { L_JSONL, L_JSONL_GZ, L_JSONL_ZST, L_BOMB_ZST, L_TEXT, L_RUN, L_CONFIG, L_HF, L_MANIFEST, L_EVAL, L_N } loader;

static const struct {
    const char *name;
    double mem_per_byte, mem_fixed_mb; /* bound: mem_per_byte * input + fixed */
    double s_per_mb, s_fixed;          /* bound: s_per_mb * MB + fixed */
} spec[L_N] = {
    [L_JSONL] = {"jsonl: one line", 8, 96, 0.5, 5},
    [L_JSONL_GZ] = {"jsonl.gz: one line", 8, 96, 0.5, 5},
    [L_JSONL_ZST] = {"jsonl.zst: one line", 8, 96, 0.5, 5},
    [L_BOMB_ZST] = {"jsonl.zst: newlines", 0, 96, 0.5, 5},
    [L_TEXT] = {"text file", 6, 96, 0.5, 5},
    [L_RUN] = {"run file", 64, 96, 1.0, 5},
    [L_CONFIG] = {"model config", 64, 96, 1.0, 5},
    [L_HF] = {"HF directory", 16, 96, 1.0, 5},
    [L_MANIFEST] = {"checkpoint manifest", 24, 96, 1.0, 5},
    [L_EVAL] = {"eval task file", 32, 96, 1.0, 5},
};

static void generate(loader l, size_t S) {
    switch (l) {
    case L_JSONL: gen_jsonl_line("one.jsonl", S); break;
    case L_JSONL_GZ: gen_jsonl_line("one.jsonl.gz", S); break;
    case L_JSONL_ZST: gen_jsonl_line("one.jsonl.zst", S); break;
    case L_BOMB_ZST: gen_newlines("nl.jsonl.zst", S); break;
    case L_TEXT: gen_text("doc.txt", S); break;
    case L_RUN: gen_json_numbers("run.json", "{", S); break;
    case L_CONFIG: gen_json_numbers("config.json", "{", S); break;
    case L_HF: gen_hf_dir(S); break;
    case L_MANIFEST: gen_manifest(S); break;
    case L_EVAL: gen_eval(S); break;
    default: break;
    }
}

static zaya_status load(loader l) {
    switch (l) {
    case L_JSONL: return run_prepare("one.jsonl");
    case L_JSONL_GZ: return run_prepare("one.jsonl.gz");
    case L_JSONL_ZST: return run_prepare("one.jsonl.zst");
    case L_BOMB_ZST: return run_prepare("nl.jsonl.zst");
    case L_TEXT: return run_prepare("doc.txt");
    case L_RUN: return run_run_file();
    case L_CONFIG: return run_config();
    case L_HF: return run_hf();
    case L_MANIFEST: return run_manifest();
    case L_EVAL: return run_eval();
    default: return ZAYA_OK;
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs fn(l) in a child; returns its exit code (-1: killed) with its peak RSS (MB) and CPU seconds. */
static int in_child(int gen, loader l, size_t S, double *rss_mb, double *secs) {
    const double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) abort();
    if (pid == 0) {
        zaya_log_set_level(ZAYA_LOG_ERROR);
        if (gen) {
            generate(l, S);
            _exit(0);
        }
        zaya_status s = load(l);
        if (s != ZAYA_OK) fprintf(stderr, "    (%s: %.300s)\n", spec[l].name, zaya_error_message());
        _exit(s == ZAYA_OK ? 0 : 1);
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {}
    (void)t0;
    *secs = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_sec +
            1e-6 * (double)ru.ru_stime.tv_usec; /* CPU time: a loaded machine does not stretch it */
    *rss_mb = (double)ru.ru_maxrss / 1024.0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv) {
    int max_mb = 100;
    double scale = 1;
    const char *only = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--max-mb")) max_mb = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--scale")) scale = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--only")) only = argv[i + 1];
    }
    snprintf(g_dir, sizeof g_dir, "/tmp/zaya_budget_XXXXXX");
    if (!mkdtemp(g_dir)) return 1;
    double base = 0, t;
    in_child(1, L_N, 0, &base, &t); /* an idle child: the RSS every child starts with */
    printf("idle child: %.1f MB RSS\n", base);
    printf("%-22s %7s %10s %8s %10s %8s  %s\n", "loader", "input", "peak MB", "bound", "CPU s", "bound", "result");
    static const int sizes[3] = {1, 10, 100};
    for (int l = 0; l < L_N; l++)
        for (int k = 0; k < 3; k++) {
            if (sizes[k] > max_mb || (only && !strstr(spec[l].name, only))) continue;
            const size_t S = (size_t)sizes[k] << 20;
            double rss, secs, grss, gsecs;
            char cmd[300];
            snprintf(cmd, sizeof cmd, "rm -rf %s/*", g_dir);
            if (system(cmd)) {}
            if (in_child(1, (loader)l, S, &grss, &gsecs) != 0) {
                printf("FAIL %s: generating %d MB\n", spec[l].name, sizes[k]);
                g_failed++;
                continue;
            }
            const int rc = in_child(0, (loader)l, S, &rss, &secs);
            const double used = rss - base > 0 ? rss - base : 0;
            const double mbound = scale * (spec[l].mem_per_byte * sizes[k] + spec[l].mem_fixed_mb);
            const double tbound = scale * (spec[l].s_per_mb * sizes[k] + spec[l].s_fixed);
            const int ok = rc >= 0 && used <= mbound && secs <= tbound;
            printf("%-22s %5d MB %10.1f %8.0f %10.2f %8.0f  %s%s\n", spec[l].name, sizes[k], used, mbound, secs, tbound,
                   rc == 0 ? "loaded" : rc == 1 ? "refused" : "CRASHED", ok ? "" : "  FAIL");
            fflush(stdout);
            if (!ok) g_failed++;
        }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
    if (system(cmd)) {}
    printf("loader_budget: %d failed\n", g_failed);
    return g_failed != 0;
}

/* `zaya tokenizer bench` (zaya_tokenizer_bench_run): encoding throughput of zaya and, in the same run on the same documents, of
 * the Hugging Face `tokenizers` package (encode_batch with TOKENIZERS_PARALLELISM=false, i.e. one
 * thread like ours), with an exact comparison of the ids. The input is cut into documents at the first
 * newline after every --doc-bytes bytes, as a data pipeline feeds documents; HF is very slow on one
 * multi-megabyte string, which would flatter zaya. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/corpus.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/proc.h"
#include "zaya/timer.h"
#include "zaya/tokenizer.h"

/* Process CPU time: on a shared machine it is steadier than wall time (both sides run one thread). */
static double cpu_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct buffer {
    char *data;
    size_t len, cap;
} buffer;

static zaya_status append(void *ctx, const char *path, const uint8_t *data, size_t len) {
    buffer *b = ctx;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 20;
        while (cap < b->len + len + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return zaya_error_set(ZAYA_ENOMEM, "out of memory reading '%s'", path);
        b->data = d, b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return ZAYA_OK;
}

/* Timed with the same repeat count as zaya (best of N); the ids go to a file for an exact comparison. */
static const char hf_script[] =
    "import json, sys, time\n"
    "import tokenizers\n"
    "import array\n"
    "tok_path, text_path, cuts_path, ids_path = sys.argv[1:5]\n"
    "repeat = int(sys.argv[5])\n"
    "tok = tokenizers.Tokenizer.from_file(tok_path)\n"
    "raw = open(text_path, 'rb').read()\n"
    "cuts = array.array('q')\n"
    "cuts.frombytes(open(cuts_path, 'rb').read())\n"
    "# HF takes str: invalid UTF-8 cannot be passed as is (reported, and the ids then differ)\n"
    "docs = [raw[a:b].decode('utf-8', 'replace') for a, b in zip(cuts[:-1], cuts[1:])]\n"
    "valid = all(len(d.encode('utf-8')) == b - a for d, a, b in zip(docs, cuts[:-1], cuts[1:]))\n"
    "best = cpu = None\n"
    "for _ in range(repeat):\n"
    "    t0, c0 = time.perf_counter(), time.process_time()\n"
    "    encs = tok.encode_batch(docs, add_special_tokens=False)\n"
    "    dt, dc = time.perf_counter() - t0, time.process_time() - c0\n"
    "    best = dt if best is None else min(best, dt)\n"
    "    cpu = dc if cpu is None else min(cpu, dc)\n"
    "ids = array.array('i')\n"
    "for e in encs:\n"
    "    ids.extend(e.ids)\n"
    "ids.tofile(open(ids_path, 'wb'))\n"
    "print(json.dumps({'seconds': best, 'cpu_seconds': cpu, 'tokens': len(ids), 'version': tokenizers.__version__,\n"
    "                  'valid_utf8': valid}))\n";

typedef struct hf_result {
    int ok;
    double seconds, cpu_seconds;
    int64_t tokens;
    char version[64];
    int valid_utf8;
    int64_t first_diff; /* -1: identical ids */
} hf_result;

static void run_hf(const char *python, const char *tok_path, const char *outdir, const buffer *in, const int64_t *cuts,
                   size_t ndocs, int repeat, const int32_t *ids, size_t n, hf_result *r) {
    char script[4096], text[4096], idsf[4096], cutsf[4096];
    memset(r, 0, sizeof *r);
    if (zaya_path_join(script, sizeof script, outdir, "hf_bench.py") != ZAYA_OK ||
        zaya_path_join(text, sizeof text, outdir, "bench_input.tmp") != ZAYA_OK ||
        zaya_path_join(cutsf, sizeof cutsf, outdir, "bench_cuts.tmp") != ZAYA_OK ||
        zaya_path_join(idsf, sizeof idsf, outdir, "hf_ids.tmp") != ZAYA_OK ||
        zaya_write_file_atomic(script, hf_script, strlen(hf_script)) != ZAYA_OK ||
        zaya_write_file_atomic(text, in->data, in->len) != ZAYA_OK ||
        zaya_write_file_atomic(cutsf, cuts, (ndocs + 1) * sizeof *cuts) != ZAYA_OK) {
        fprintf(stderr, "zaya tokenizer bench: warning: cannot prepare the HF run: %s\n", zaya_error_message());
        return;
    }
    char srep[16];
    snprintf(srep, sizeof srep, "%d", repeat);
    char *argv[] = {(char *)python, script, (char *)tok_path, text, cutsf, idsf, srep, NULL};
    const char *env[] = {"TOKENIZERS_PARALLELISM=false", NULL};
    zaya_proc_opts po = {.env = env};
    zaya_proc_result pr;
    char *outp = NULL, line[1024] = "";
    if (zaya_proc_capture(argv, &po, sizeof line - 1, &outp, NULL, &pr) == ZAYA_OK) {
        if (zaya_proc_ok(&pr)) snprintf(line, sizeof line, "%.*s", (int)strcspn(outp, "\n"), outp);
        free(outp);
    }
    cJSON *j = line[0] ? cJSON_Parse(line) : NULL;
    if (j) {
        const char *v = "?";
        r->ok = zaya_json_get_f64(j, "seconds", &r->seconds, 1) == ZAYA_OK &&
                zaya_json_get_f64(j, "cpu_seconds", &r->cpu_seconds, 1) == ZAYA_OK &&
                zaya_json_get_i64(j, "tokens", &r->tokens, 1) == ZAYA_OK;
        zaya_json_get_str(j, "version", &v, 0);
        zaya_json_get_bool(j, "valid_utf8", &r->valid_utf8, 0);
        snprintf(r->version, sizeof r->version, "%s", v);
        cJSON_Delete(j);
    }
    if (r->ok) {
        char *hf;
        size_t len;
        r->first_diff = -1;
        if (zaya_read_file(idsf, &hf, &len) == ZAYA_OK) {
            size_t m = len / sizeof(int32_t);
            const int32_t *h = (const int32_t *)(void *)hf;
            size_t k = 0;
            while (k < m && k < n && h[k] == ids[k]) k++;
            if (k < m || k < n) r->first_diff = (int64_t)k;
            free(hf);
        }
    } else {
        fprintf(stderr, "zaya tokenizer bench: note: HF tokenizers not measured (is the `tokenizers` package installed for %s?)\n",
                python);
    }
    remove(text);
    remove(cutsf);
    remove(idsf);
    zaya_error_clear();
}

zaya_status zaya_tokenizer_bench_run(const zaya_tokenizer_bench_opts *o, const char *const *paths, int npaths, FILE *out) {
    const char *tok_path = o->tokenizer, *outdir = o->out, *python = o->python ? o->python : "/usr/bin/python3";
    int repeat = o->repeat, no_hf = o->no_hf;
    int64_t max_bytes = o->max_bytes, doc_bytes = o->doc_bytes;
    if (!tok_path) return zaya_error_set(ZAYA_EINVAL, "no tokenizer given");
    if (repeat < 1) return zaya_error_set(ZAYA_EINVAL, "repeat must be >= 1 (got %d)", repeat);
    zaya_tokenizer *t;
    ZAYA_TRY(zaya_tokenizer_load(tok_path, &t));
    buffer in = {0};
    zaya_status s = zaya_corpus_walk(paths, npaths, max_bytes, append, &in, NULL);
    if (s == ZAYA_OK && in.len == 0) s = zaya_error_set(ZAYA_EINVAL, "the inputs are empty");
    if (s == ZAYA_OK) s = zaya_mkdir_p(outdir);
    /* Document boundaries: cuts[0] = 0 < cuts[1] < ... < cuts[ndocs] = len. */
    size_t ndocs = 0;
    int64_t *cuts = malloc((in.len / (doc_bytes > 0 ? (size_t)doc_bytes : in.len + 1) + 2) * sizeof *cuts);
    if (s == ZAYA_OK && !cuts) s = zaya_error_set(ZAYA_ENOMEM, "out of memory");
    if (s == ZAYA_OK) {
        cuts[0] = 0;
        for (size_t at = 0; at < in.len;) {
            size_t end = doc_bytes > 0 && at + (size_t)doc_bytes < in.len ? at + (size_t)doc_bytes : in.len;
            const char *nl = end < in.len ? memchr(in.data + end, '\n', in.len - end) : NULL;
            end = nl ? (size_t)(nl - in.data) + 1 : in.len;
            cuts[++ndocs] = (int64_t)end;
            at = end;
        }
    }
    int32_t *ids = NULL;
    size_t n = 0, cap = 0;
    double best = 1e30, best_cpu = 1e30;
    for (int r = 0; s == ZAYA_OK && r < repeat; r++) {
        n = 0;
        zaya_tokenizer_encoder *enc = NULL;
        double t0 = zaya_now_s(), c0 = cpu_now_s();
        s = zaya_tokenizer_encoder_init(t, 1, &enc);
        for (size_t d = 0; s == ZAYA_OK && d < ndocs; d++)
            s = zaya_tokenizer_encoder_encode(enc, in.data + cuts[d], (size_t)(cuts[d + 1] - cuts[d]), &ids, &n, &cap);
        zaya_tokenizer_encoder_free(enc);
        double dt = zaya_now_s() - t0, dc = cpu_now_s() - c0;
        if (dt < best) best = dt;
        if (dc < best_cpu) best_cpu = dc;
    }
    if (s != ZAYA_OK) {
        free(in.data), free(ids), free(cuts), zaya_tokenizer_free(t);
        return s;
    }
    hf_result hf = {0};
    if (!no_hf) run_hf(python, tok_path, outdir, &in, cuts, ndocs, repeat, ids, n, &hf);

    double mb = in.len / 1e6, zaya_mbs = mb / best;
    fprintf(out, "input: %.2f MB in %zu documents, vocab %" PRId64 ", best of %d, 1 thread each\n", mb, ndocs,
           zaya_tokenizer_vocab_size(t), repeat);
    fprintf(out, "%-22s %10s %10s %10s %10s %10s\n", "encoder", "tokens", "wall s", "MB/s", "cpu s", "MB/s cpu");
    fprintf(out, "%-22s %10zu %10.3f %10.1f %10.3f %10.1f\n", "zaya", n, best, zaya_mbs, best_cpu, mb / best_cpu);
    if (hf.ok) {
        char name[96];
        snprintf(name, sizeof name, "hf tokenizers %s", hf.version);
        fprintf(out, "%-22s %10" PRId64 " %10.3f %10.1f %10.3f %10.1f\n", name, hf.tokens, hf.seconds, mb / hf.seconds,
               hf.cpu_seconds, mb / hf.cpu_seconds);
        fprintf(out, "zaya / hf throughput: %.2fx wall, %.2fx cpu\n", hf.seconds / best, hf.cpu_seconds / best_cpu);
        if (hf.first_diff < 0) fprintf(out, "ids: identical\n");
        else fprintf(out, "ids: DIFFER from position %" PRId64 "%s\n", hf.first_diff,
                    hf.valid_utf8 ? "" : " (input is not valid UTF-8: HF saw U+FFFD replacements)");
    }
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "tokenizer", tok_path);
    cJSON_AddNumberToObject(j, "bytes", (double)in.len);
    cJSON_AddNumberToObject(j, "documents", (double)ndocs);
    cJSON_AddNumberToObject(j, "repeat", repeat);
    cJSON_AddNumberToObject(j, "zaya_tokens", (double)n);
    cJSON_AddNumberToObject(j, "zaya_seconds", best);
    cJSON_AddNumberToObject(j, "zaya_mb_per_s", zaya_mbs);
    cJSON_AddNumberToObject(j, "zaya_cpu_seconds", best_cpu);
    if (hf.ok) {
        cJSON_AddStringToObject(j, "hf_version", hf.version);
        cJSON_AddNumberToObject(j, "hf_tokens", (double)hf.tokens);
        cJSON_AddNumberToObject(j, "hf_seconds", hf.seconds);
        cJSON_AddNumberToObject(j, "hf_mb_per_s", mb / hf.seconds);
        cJSON_AddNumberToObject(j, "hf_cpu_seconds", hf.cpu_seconds);
        cJSON_AddNumberToObject(j, "zaya_over_hf", hf.seconds / best);
        cJSON_AddNumberToObject(j, "zaya_over_hf_cpu", hf.cpu_seconds / best_cpu);
        cJSON_AddBoolToObject(j, "ids_identical", hf.first_diff < 0);
    }
    char path[4096];
    s = zaya_path_join(path, sizeof path, outdir, "bench.json");
    if (s == ZAYA_OK) s = zaya_json_write_file(path, j, 1);
    cJSON_Delete(j);
    free(in.data), free(ids), free(cuts), zaya_tokenizer_free(t);
    ZAYA_TRY(s);
    fprintf(out, "results in %s/bench.json\n", outdir);
    return ZAYA_OK;
}

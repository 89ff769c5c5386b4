/* `zaya data bench` (zaya_data_bench_run): the loader's throughput (shuffled, packed batches from mmap,
 * one thread) against a sequential copy of the same shards, at sequence lengths 128..8192. */
#include <inttypes.h>
#include <stdio.h>

#include "zaya/alloc.h"
#include "zaya/data.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/plot.h"
#include "zaya/timer.h"

/* Both measurements run whole batches until min_s has passed, after one warm-up batch. */
static double bench_loader(const zaya_dataset *ds, int64_t T, int64_t G, double min_s, int32_t *buf) {
    zaya_loader l;
    const char *names[ZAYA_DATA_MAX_SOURCES];
    double w[ZAYA_DATA_MAX_SOURCES];
    for (int i = 0; i < ds->nsources; i++) names[i] = ds->src[i].name, w[i] = 1;
    if (zaya_loader_init(&l, ds, 1) != ZAYA_OK || zaya_loader_set_mixture(&l, T, names, w, ds->nsources) != ZAYA_OK) return -1;
    zaya_loader_next(&l, G, 0, 1, buf, NULL);
    int64_t n = 0;
    double t0 = zaya_now_s(), t;
    do {
        zaya_loader_next(&l, G, 0, 1, buf, NULL);
        n++;
    } while ((t = zaya_now_s() - t0) < min_s);
    return (double)(n * G * T) / t;
}

/* The peer: batches of the same size widened to int32 by a sequential pass over the shards. */
static double bench_sequential(const zaya_dataset *ds, int64_t T, int64_t G, double min_s, int32_t *buf) {
    uint64_t chunk = (uint64_t)(G * (T + 1)), pos = 0;
    int s = 0, sh = 0;
    int64_t n = -1; /* the first batch is the warm-up */
    double t0 = 0, t = 0;
    while (n < 0 || (t = zaya_now_s() - t0) < min_s) {
        uint64_t left = chunk;
        while (left > 0) {
            const zaya_shard *z = &ds->src[s].shards[sh];
            uint64_t m = z->hdr.token_count - pos < left ? z->hdr.token_count - pos : left;
            zaya_shard_read(z, pos, m, buf + (chunk - left));
            left -= m;
            pos += m;
            if (pos == z->hdr.token_count) {
                pos = 0;
                if (++sh == ds->src[s].nshards) sh = 0, s = (s + 1) % ds->nsources;
            }
        }
        if (++n == 0) t0 = zaya_now_s();
    }
    return (double)(n * G * T) / t;
}

zaya_status zaya_data_bench_run(const char *const *paths, int npaths, int64_t G, double min_s, const char *out, FILE *f) {
    if (npaths < 1 || npaths > ZAYA_DATA_MAX_SOURCES || G < 1 || !(min_s > 0))
        return zaya_error_set(ZAYA_EINVAL, "data bench: 1..%d sources, batch >= 1 and seconds > 0", ZAYA_DATA_MAX_SOURCES);
    zaya_dataset ds = {0};
    for (int i = 0; i < npaths; i++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", i);
        const char *p = paths[i];
        zaya_status as = zaya_dataset_add(&ds, name, &p, 1, 0);
        if (as != ZAYA_OK) {
            zaya_dataset_free(&ds);
            return as;
        }
    }
    zaya_status ms = zaya_mkdir_p(out);
    if (ms != ZAYA_OK) {
        zaya_dataset_free(&ds);
        return ms;
    }
    enum { NT = 7 };
    const int64_t lens[NT] = {128, 256, 512, 1024, 2048, 4096, 8192};
    double x[NT], yl[NT], ys[NT];
    int n = 0;
    int32_t *buf = zaya_malloc(sizeof(int32_t) * (size_t)G * (8192 + 1));
    cJSON *res = cJSON_CreateArray();
    fprintf(f, "%8s %6s %16s %16s %14s %7s\n", "seq_len", "batch", "loader tok/s", "seq-copy tok/s", "loader seq/s", "ratio");
    for (int k = 0; k < NT && buf; k++) {
        int ok = 1;
        for (int i = 0; i < ds.nsources; i++) ok &= zaya_data_source_sequences(&ds.src[i], lens[k]) > 0;
        if (!ok) break;
        double lt = bench_loader(&ds, lens[k], G, min_s, buf), st = bench_sequential(&ds, lens[k], G, min_s, buf);
        x[n] = (double)lens[k];
        yl[n] = lt / 1e6;
        ys[n] = st / 1e6;
        n++;
        fprintf(f, "%8" PRId64 " %6" PRId64 " %16.3e %16.3e %14.3e %7.2f\n", lens[k], G, lt, st, lt / (double)lens[k], lt / st);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "seq_len", (double)lens[k]);
        cJSON_AddNumberToObject(o, "batch", (double)G);
        cJSON_AddNumberToObject(o, "loader_tokens_per_s", lt);
        cJSON_AddNumberToObject(o, "sequential_tokens_per_s", st);
        cJSON_AddNumberToObject(o, "loader_sequences_per_s", lt / (double)lens[k]);
        cJSON_AddItemToArray(res, o);
    }
    zaya_free(buf);
    uint64_t tokens = 0;
    for (int i = 0; i < ds.nsources; i++) tokens += ds.src[i].ntokens;
    zaya_dataset_free(&ds);
    if (n == 0) {
        cJSON_Delete(res);
        return zaya_error_set(ZAYA_EINVAL, "the sources are shorter than one sequence of 128 tokens");
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "source_tokens", (double)tokens);
    cJSON_AddNumberToObject(root, "seconds_per_case", min_s);
    cJSON_AddItemToObject(root, "results", res);
    char path[4096];
    zaya_status s = zaya_path_join(path, sizeof path, out, "data-bench.json");
    if (s == ZAYA_OK) s = zaya_json_write_file(path, root, 1);
    cJSON_Delete(root);
    ZAYA_TRY(s);
    zaya_plot_series ser[2] = {{"loader (shuffled, packed)", x, yl, n}, {"sequential copy", x, ys, n}};
    zaya_plot_opts po = {"data loader throughput from mmap", "sequence length", "Mtokens/s", 2, 0, 1};
    if (zaya_path_join(path, sizeof path, out, "data-bench.png") == ZAYA_OK &&
        zaya_plot_lines(path, &po, ser, 2) != ZAYA_OK)
        fprintf(stderr, "zaya data bench: warning: no plot: %s\n", zaya_error_message());
    fprintf(f, "results in %s/\n", out);
    return ZAYA_OK;
}

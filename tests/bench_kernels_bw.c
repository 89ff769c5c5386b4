/* Bandwidth of the memory-bound kernels at ZAYA1 shapes against STREAM triad measured in the same
 * run. Bytes counted as STREAM does: every element read once plus every element written once (no
 * write-allocate traffic). Usage: bench_kernels_bw [-o DIR] [--threads N]; prints a table and, with
 * -o, writes DIR/kernels_bw.json. */
#include <cjson/cJSON.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/kernels.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

#define REPS 12

typedef struct {
    const char *name, *shape;
    double bytes, best_s, median_s;
    double triad_s; /* best triad interleaved with this kernel's runs */
} row_t;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One warm-up, then REPS timed runs of stmt, each preceded by a timed STREAM triad: on a shared
 * machine the best triad and the best kernel run then come from the same stretch of time, so the
 * ratio stays meaningful when absolute figures are not. */
#define TIME_IT(row, stmt)                                        \
    do {                                                          \
        double ts_[REPS];                                         \
        stmt;                                                     \
        for (int rep_ = 0; rep_ < REPS; rep_++) {                 \
            double t0_ = zaya_now_s();                            \
            triad(a, b, c, 0.5f, big);                            \
            double t1_ = zaya_now_s();                            \
            stmt;                                                 \
            ts_[rep_] = zaya_now_s() - t1_;                       \
            if (t1_ - t0_ < (row)->triad_s) (row)->triad_s = t1_ - t0_; \
        }                                                         \
        qsort(ts_, REPS, sizeof(double), cmp_d);                  \
        (row)->best_s = ts_[0];                                   \
        (row)->median_s = ts_[REPS / 2];                          \
    } while (0)

static float *fbuf(int64_t n, float v) {
    float *p = zaya_malloc((size_t)n * sizeof(float));
    if (!p) {
        fprintf(stderr, "bench_kernels_bw: out of memory\n");
        exit(1);
    }
    /* First touch in parallel with the same static schedule the kernels use. */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) p[i] = v + (float)(i % 97) * 1e-3f;
    return p;
}

static void triad(float *a, const float *b, const float *c, float s, int64_t n) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

int main(int argc, char **argv) {
    const char *outdir = NULL;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) outdir = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_kernels_bw [-o DIR] [--threads N]\n");
            return 2;
        }
    }
    threads = zaya_threads_init(threads);

    const int64_t T = 4096, D = 2048, F = 2048; /* tokens, hidden, expert intermediate */
    const int64_t big = T * 2 * F;              /* the largest tensor: fused gate|up */
    float *a = fbuf(big, 0.0f), *b = fbuf(big, 0.5f), *c = fbuf(big, -0.25f);
    float *w = fbuf(D, 1.0f), *rstd = fbuf(T, 0.0f);
    row_t rows[6];
    int nr = 0;

    row_t *r = &rows[nr++];
    *r = (row_t){"stream_triad", "3 x 16M f32", 3.0 * 4 * big, 0, 0, 1e30};
    TIME_IT(r, triad(a, b, c, 0.5f, big));

    r = &rows[nr++];
    *r = (row_t){"rmsnorm_forward", "[4096, 2048]", 2.0 * 4 * T * D + 4.0 * (D + T), 0, 0, 1e30};
    TIME_IT(r, zaya_rmsnorm_forward(a, rstd, b, w, T, D, 1e-5f));

    /* RoPE in place on q [T, 8 heads x 128], first 64 dims of each head: the rotated half of every
     * head is read and written, plus one cos/sin row per token. */
    zaya_rope_table tab;
    if (zaya_rope_table_init(&tab, T, 64, 5e6) != 0) return 1;
    int32_t *pos = malloc((size_t)T * sizeof(int32_t));
    for (int64_t i = 0; i < T; i++) pos[i] = (int32_t)i;
    const int64_t qrows = 4 * T; /* 4 sequences of 4096 tokens: 64 MiB of q, beyond the caches */
    int32_t *pos4 = malloc((size_t)qrows * sizeof(int32_t));
    for (int64_t i = 0; i < qrows; i++) pos4[i] = pos[i % T];
    r = &rows[nr++];
    *r = (row_t){"rope_forward", "[16384, 8x128] rot 64", 2.0 * 4 * qrows * 8 * 64 + 2.0 * 4 * qrows * 32, 0, 0, 1e30};
    TIME_IT(r, zaya_rope_forward(a, &tab, pos4, qrows, 8, 128));

    r = &rows[nr++];
    *r = (row_t){"silu_forward", "[4096, 4096]", 2.0 * 4 * T * 2 * F, 0, 0, 1e30};
    TIME_IT(r, zaya_silu_forward(a, b, T * 2 * F));

    r = &rows[nr++];
    *r = (row_t){"swiglu_forward", "[4096, 2x2048]", 3.0 * 4 * T * F, 0, 0, 1e30};
    TIME_IT(r, zaya_swiglu_forward(a, b, T, F));

    r = &rows[nr++];
    *r = (row_t){"swiglu_backward", "[4096, 2x2048]", 5.0 * 4 * T * F, 0, 0, 1e30};
    TIME_IT(r, zaya_swiglu_backward(a, c, b, T, F));

    const double triad_bytes = 3.0 * 4 * big;
    double triad_gbs = triad_bytes / rows[0].best_s * 1e-9;
    printf("memory-bound kernels, %d threads (best of %d; bytes = reads + writes, STREAM convention)\n", threads, REPS);
    printf("%-18s %-24s %8s %9s %8s %11s %9s\n", "kernel", "shape", "MB", "best ms", "GB/s", "triad GB/s", "of triad");
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "kernels");
    cJSON_AddNumberToObject(root, "threads", threads);
    cJSON_AddNumberToObject(root, "triad_gbs_best", triad_gbs);
    for (int i = 0; i < nr; i++) {
        double gbs = rows[i].bytes / rows[i].best_s * 1e-9, tgbs = triad_bytes / rows[i].triad_s * 1e-9;
        printf("%-18s %-24s %8.1f %9.3f %8.1f %11.1f %8.0f%%\n", rows[i].name, rows[i].shape, rows[i].bytes * 1e-6,
               rows[i].best_s * 1e3, gbs, tgbs, 100.0 * gbs / tgbs);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", rows[i].name);
        cJSON_AddStringToObject(o, "shape", rows[i].shape);
        cJSON_AddNumberToObject(o, "bytes", rows[i].bytes);
        cJSON_AddNumberToObject(o, "best_s", rows[i].best_s);
        cJSON_AddNumberToObject(o, "median_s", rows[i].median_s);
        cJSON_AddNumberToObject(o, "gbs", gbs);
        cJSON_AddNumberToObject(o, "triad_gbs", tgbs);
        cJSON_AddNumberToObject(o, "fraction_of_triad", gbs / tgbs);
        cJSON_AddItemToArray(arr, o);
    }
    int rc = 0;
    if (outdir) {
        char path[4096];
        if (zaya_mkdir_p(outdir) != ZAYA_OK || zaya_path_join(path, sizeof path, outdir, "kernels_bw.json") != ZAYA_OK ||
            zaya_json_write_file(path, root, 1) != ZAYA_OK) {
            fprintf(stderr, "bench_kernels_bw: error: %s\n", zaya_error_message());
            rc = 1;
        } else {
            printf("results written to %s\n", path);
        }
    }
    cJSON_Delete(root);
    zaya_rope_table_free(&tab);
    free(pos), free(pos4);
    zaya_free(a), zaya_free(b), zaya_free(c), zaya_free(w), zaya_free(rstd);
    return rc;
}

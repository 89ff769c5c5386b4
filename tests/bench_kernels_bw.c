/* Bandwidth of the memory-bound kernels at ZAYA1 shapes against STREAM triad measured in the same
 * run. Bytes are counted as STREAM does: every element read once plus every element written once
 * (no write-allocate traffic).
 *  - "GB/s" runs the kernel on DRAM-sized tensors with all threads; each timed run is preceded by
 *    a timed triad, so the kernel and the triad figures come from the same stretch of time and the
 *    ratio stays meaningful on a shared machine.
 *  - "in-cache GB/s" runs the same kernel on 4 rows (L2-resident, one thread): the compute ceiling.
 *    A kernel whose ceiling is far above the triad is limited by memory, not by arithmetic.
 * Usage: bench_kernels_bw [-o DIR] [--threads N] [--reps N]; prints a table, with -o also writes
 * DIR/kernels_bw.json. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zaya/alloc.h"
#include "zaya/fs.h"
#include "zaya/json.h"
#include "zaya/kernels.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

enum { K_TRIAD, K_RMSNORM, K_ROPE, K_SILU, K_SWIGLU_F, K_SWIGLU_B, K_COUNT };
static const char *k_name[K_COUNT] = {"stream_triad", "rmsnorm_forward", "rope_forward", "silu_forward",
                                      "swiglu_forward", "swiglu_backward"};
static const char *k_shape[K_COUNT] = {"3 x [4096, 4096]", "[4096, 2048]", "[16384, 8x128] rot 64", "[4096, 4096]",
                                       "[4096, 2x2048]", "[4096, 2x2048]"};
/* Model rows per kernel at full size (tokens; RoPE uses 4 sequences so q exceeds the caches). */
static const int64_t k_rows[K_COUNT] = {4096, 4096, 16384, 4096, 4096, 4096};

typedef struct {
    float *a, *b, *c, *w, *rstd;
    int32_t *pos;
    zaya_rope_table rope;
} bufs_t;

/* Runs kernel k over `rows` rows; returns the bytes it moves (reads + writes). */
static double run_kernel(int k, bufs_t *B, int64_t rows) {
    const int64_t D = 2048, F = 2048;
    switch (k) {
    case K_TRIAD: {
        /* Blocks of one row, each an `omp simd` loop, as the kernels are written (a combined
         * `parallel for simd` over the whole range compiles to much slower code with GCC 12). */
        const int64_t n = rows * 2 * F, bl = 2 * F;
        float *restrict a = B->a;
        const float *restrict b = B->b, *restrict c = B->c;
#pragma omp parallel for schedule(static) if (n > 32768)
        for (int64_t r = 0; r < rows; r++) {
#pragma omp simd
            for (int64_t i = r * bl; i < (r + 1) * bl; i++) a[i] = b[i] + 0.5f * c[i];
        }
        return 3.0 * 4 * n;
    }
    case K_RMSNORM:
        zaya_rmsnorm_forward(B->a, B->rstd, B->b, B->w, rows, D, 1e-5f);
        return 2.0 * 4 * rows * D + 4.0 * (D + rows);
    case K_ROPE: /* rotated half of each of 8 heads read and written, one cos/sin row per token */
        zaya_rope_forward(B->a, &B->rope, B->pos, rows, 8, 128);
        return 2.0 * 4 * rows * 8 * 64 + 2.0 * 4 * rows * 32;
    case K_SILU:
        zaya_silu_forward(B->a, B->b, rows * 2 * F);
        return 2.0 * 4 * rows * 2 * F;
    case K_SWIGLU_F:
        zaya_swiglu_forward(B->a, B->b, rows, F);
        return 3.0 * 4 * rows * F;
    default:
        zaya_swiglu_backward(B->a, B->c, B->b, rows, F);
        return 5.0 * 4 * rows * F;
    }
}

static float *fbuf(int64_t n, float v) {
    float *p = zaya_malloc((size_t)n * sizeof(float));
    if (!p) {
        fprintf(stderr, "bench_kernels_bw: error: out of memory\n");
        exit(1);
    }
    /* First touch in parallel with the static schedule the kernels use. */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++) p[i] = v + (float)(i % 97) * 1e-3f;
    return p;
}

int main(int argc, char **argv) {
    const char *outdir = NULL;
    int threads = 0, reps = 15;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc) outdir = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_kernels_bw [-o DIR] [--threads N] [--reps N]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    threads = zaya_threads_init(threads);

    const int64_t big = 16384 * 8 * 128; /* = 4096 x 4096, the largest tensor */
    bufs_t B = {fbuf(big, 0.0f), fbuf(big, 0.5f), fbuf(big, -0.25f), fbuf(2048, 1.0f), fbuf(16384, 0.0f), NULL, {0}};
    B.pos = malloc(16384 * sizeof(int32_t));
    for (int64_t i = 0; i < 16384; i++) B.pos[i] = (int32_t)(i % 4096);
    if (!B.pos || zaya_rope_table_init(&B.rope, 4096, 64, 5e6) != 0) {
        fprintf(stderr, "bench_kernels_bw: error: setup failed\n");
        return 1;
    }

    double best[K_COUNT], triad_best[K_COUNT], cache_best[K_COUNT], bytes[K_COUNT], cache_bytes[K_COUNT];
    for (int k = 0; k < K_COUNT; k++) {
        best[k] = triad_best[k] = cache_best[k] = 1e30;
        bytes[k] = run_kernel(k, &B, k_rows[k]); /* warm-up */
        for (int r = 0; r < reps; r++) {
            double t0 = zaya_now_s();
            run_kernel(K_TRIAD, &B, k_rows[K_TRIAD]);
            double t1 = zaya_now_s();
            run_kernel(k, &B, k_rows[k]);
            double t2 = zaya_now_s();
            if (t1 - t0 < triad_best[k]) triad_best[k] = t1 - t0;
            if (t2 - t1 < best[k]) best[k] = t2 - t1;
        }
        /* Compute ceiling: 4 rows stay in L2 and run serially (below the kernels' parallel
         * threshold); many short repetitions, best batch. */
        cache_bytes[k] = run_kernel(k, &B, 4);
        for (int r = 0; r < 20 * reps; r++) {
            double t0 = zaya_now_s();
            for (int q = 0; q < 20; q++) run_kernel(k, &B, 4);
            double t = (zaya_now_s() - t0) / 20;
            if (t < cache_best[k]) cache_best[k] = t;
        }
    }

    const double triad_bytes = bytes[K_TRIAD];
    printf("memory-bound kernels, %d threads, best of %d (bytes = reads + writes, STREAM convention)\n", threads, reps);
    printf("%-16s %-22s %7s %8s %7s %7s %9s %15s\n", "kernel", "shape", "MB", "best ms", "GB/s", "triad", "of triad",
           "in-cache GB/s");
    cJSON *root = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(root, "kernels");
    cJSON_AddNumberToObject(root, "threads", threads);
    cJSON_AddNumberToObject(root, "reps", reps);
    for (int k = 0; k < K_COUNT; k++) {
        double gbs = bytes[k] / best[k] * 1e-9, tgbs = triad_bytes / triad_best[k] * 1e-9;
        double cgbs = cache_bytes[k] / cache_best[k] * 1e-9;
        printf("%-16s %-22s %7.1f %8.3f %7.1f %7.1f %8.0f%% %15.1f\n", k_name[k], k_shape[k], bytes[k] * 1e-6,
               best[k] * 1e3, gbs, tgbs, 100.0 * gbs / tgbs, cgbs);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", k_name[k]);
        cJSON_AddStringToObject(o, "shape", k_shape[k]);
        cJSON_AddNumberToObject(o, "bytes", bytes[k]);
        cJSON_AddNumberToObject(o, "best_s", best[k]);
        cJSON_AddNumberToObject(o, "gbs", gbs);
        cJSON_AddNumberToObject(o, "triad_gbs", tgbs);
        cJSON_AddNumberToObject(o, "fraction_of_triad", gbs / tgbs);
        cJSON_AddNumberToObject(o, "in_cache_1thread_gbs", cgbs);
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
    zaya_rope_table_free(&B.rope);
    free(B.pos);
    zaya_free(B.a), zaya_free(B.b), zaya_free(B.c), zaya_free(B.w), zaya_free(B.rstd);
    return rc;
}

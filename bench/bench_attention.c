/* Times zaya attention forward and forward+backward at one shape, in f32 or bf16 (zaya_attention_*_dtype:
 * bf16 operands, on the AMX tile kernel where the host has one); prints one JSON object.
 * usage: bench_attention B T Hq Hkv D threads reps [f32|bf16]
 * Causal FLOPs: forward 4*T*T*D*Hq/2 per batch row (QK^T and PV), backward 2.5x that.
 * For scale, it also times oneDNN sgemm on the dense per-head score product (T x D) . (D x T), the
 * building block of an attention that materialises the scores: a machine-peak reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>

#include "zaya/alloc.h"
#include "zaya/attention.h"
#include "zaya/rng.h"
#include "zaya/threads.h"
#include "zaya/timer.h"

static float *random_tensor(size_t n, uint64_t stream) {
    float *x = zaya_malloc(n * sizeof(float));
    if (!x) {
        fprintf(stderr, "bench_attention: error: out of memory (%zu floats)\n", n);
        exit(1);
    }
    zaya_rng_fill_uniform(x, n, 42, stream, 0, -1.0f, 1.0f);
    return x;
}

int main(int argc, char **argv) {
    if (argc != 8 && argc != 9) {
        fprintf(stderr, "usage: bench_attention B T Hq Hkv D threads reps [f32|bf16]\n");
        return 2;
    }
    const int bf16 = argc == 9 && !strcmp(argv[8], "bf16");
    if (argc == 9 && !bf16 && strcmp(argv[8], "f32")) {
        fprintf(stderr, "bench_attention: error: dtype '%s' is not f32 or bf16\n", argv[8]);
        return 2;
    }
    const zaya_dtype dt = bf16 ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
    const int64_t B = atoll(argv[1]), T = atoll(argv[2]), Hq = atoll(argv[3]), Hkv = atoll(argv[4]), D = atoll(argv[5]);
    const int threads = atoi(argv[6]), reps = atoi(argv[7]);
    if (B < 1 || T < 1 || Hq < 1 || Hkv < 1 || Hq % Hkv || D < 1 || D > ZAYA_ATTENTION_MAX_HEAD_DIM || reps < 1) {
        fprintf(stderr, "bench_attention: error: invalid shape or reps\n");
        return 2;
    }
    zaya_threads_init(threads);
    const size_t nq = (size_t)(B * T * Hq * D), nkv = (size_t)(B * T * Hkv * D);
    float *q = random_tensor(nq, 1), *k = random_tensor(nkv, 2), *v = random_tensor(nkv, 3), *dout = random_tensor(nq, 4);
    float *out = random_tensor(nq, 5), *lse = random_tensor((size_t)(B * Hq * T), 6);
    float *dq = random_tensor(nq, 7), *dk = random_tensor(nkv, 8), *dv = random_tensor(nkv, 9);
    const float scale = 1.0f / sqrtf((float)D);
    double best_fwd = 1e30, best_fb = 1e30;
    for (int r = 0; r <= reps; r++) { /* rep 0 warms caches and the thread pool */
        double t0 = zaya_now_s();
        zaya_attention_forward_dtype(dt, out, lse, q, k, v, B, T, T, 0, Hq, Hkv, D, scale);
        double t1 = zaya_now_s();
        zaya_attention_backward_dtype(dt, dq, dk, dv, dout, q, k, v, out, lse, B, T, T, 0, Hq, Hkv, D, scale);
        double t2 = zaya_now_s();
        if (r > 0 && t1 - t0 < best_fwd) best_fwd = t1 - t0;
        if (r > 0 && t2 - t0 < best_fb) best_fb = t2 - t0;
    }
    /* oneDNN sgemm S = Q K^T for every (batch, head), Q read in place with row stride Hq*D. */
    float *scores = zaya_malloc((size_t)(T * T) * sizeof(float));
    double best_gemm = 1e30;
    for (int r = 0; r <= reps; r++) {
        double t0 = zaya_now_s();
        for (int64_t b = 0; b < B; b++)
            for (int64_t h = 0; h < Hq; h++)
                dnnl_sgemm('N', 'T', T, T, D, 1.0f, q + (b * T * Hq + h) * D, Hq * D,
                           k + (b * T * Hkv + h / (Hq / Hkv)) * D, Hkv * D, 0.0f, scores, T);
        double t1 = zaya_now_s();
        if (r > 0 && t1 - t0 < best_gemm) best_gemm = t1 - t0;
    }
    zaya_free(scores);
    const double gemm_gflops = 2.0 * (double)T * (double)T * (double)D * (double)Hq * (double)B / best_gemm * 1e-9;
    const double fwd_flops = 4.0 * (double)T * (double)T * (double)D * (double)Hq / 2.0 * (double)B;
    printf("{\"dtype\": \"%s\", \"kernel\": \"%s\", \"fwd_s\": %.6e, \"fwdbwd_s\": %.6e, \"fwd_gflops\": %.3f, "
           "\"fwdbwd_gflops\": %.3f, \"onednn_sgemm_gflops\": %.3f}\n",
           bf16 ? "bf16" : "f32", bf16 ? zaya_attention_bf16_impl(D) : "f32", best_fwd, best_fb,
           fwd_flops / best_fwd * 1e-9, 3.5 * fwd_flops / best_fb * 1e-9, gemm_gflops);
    zaya_free(q), zaya_free(k), zaya_free(v), zaya_free(dout), zaya_free(out), zaya_free(lse);
    zaya_free(dq), zaya_free(dk), zaya_free(dv);
    return 0;
}

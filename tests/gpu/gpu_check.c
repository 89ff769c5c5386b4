/* Device tests (ctest label gpu): exit 77 (skipped) when no CUDA device is visible, so CI on CPU
 * stays green. With a device: cuBLASLt GEMMs against a double-precision CPU reference (bf16 and
 * TF32, every transpose combination, odd shapes) and the sampled reference check of big shapes;
 * the BabelStream kernels' values; host<->device copies round trip; errors that name the call; a
 * NCCL all-reduce over every visible GPU checked exactly (tests/gpu/CMakeLists: gpu_check ARG). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/bench_coll.h"
#include "zaya/bf16.h"
#include "zaya/dist.h"
#include "zaya/gpu.h"

static void test_gemm_vs_cpu(zaya_gpu_dtype t, int ta, int tb, int64_t m, int64_t n, int64_t k) {
    zaya_gpu_gemm *g = NULL;
    zaya_status st = zaya_gpu_gemm_init(&g, t, ta, tb, m, n, k, 77);
    CHECK(st == ZAYA_OK, "gemm init: %s", zaya_error_message());
    if (st != ZAYA_OK) return;
    CHECK(zaya_gpu_gemm_run(g) == ZAYA_OK, "gemm run: %s", zaya_error_message());
    const void *da, *db;
    const float *dd;
    zaya_gpu_gemm_buffers(g, &da, &db, &dd);
    size_t es = t == ZAYA_GPU_TF32 ? 4 : 2;
    void *ha = malloc((size_t)(m * k) * es), *hb = malloc((size_t)(k * n) * es);
    float *hd = malloc(sizeof(float) * (size_t)(m * n));
    CHECK(zaya_gpu_memcpy(ha, da, (size_t)(m * k) * es, ZAYA_GPU_D2H, NULL) == ZAYA_OK &&
              zaya_gpu_memcpy(hb, db, (size_t)(k * n) * es, ZAYA_GPU_D2H, NULL) == ZAYA_OK &&
              zaya_gpu_memcpy(hd, dd, sizeof(float) * (size_t)(m * n), ZAYA_GPU_D2H, NULL) == ZAYA_OK &&
              zaya_gpu_sync() == ZAYA_OK,
          "read back: %s", zaya_error_message());
    double worst = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0, mag = 0;
            for (int64_t p = 0; p < k; p++) {
                int64_t ia = ta ? p * m + i : i * k + p, ib = tb ? j * k + p : p * n + j;
                double x = es == 4 ? ((float *)ha)[ia] : zaya_bf16_to_f32(((uint16_t *)ha)[ia]);
                double y = es == 4 ? ((float *)hb)[ib] : zaya_bf16_to_f32(((uint16_t *)hb)[ib]);
                acc += x * y;
                mag += fabs(x * y);
            }
            double e = fabs(hd[i * n + j] - acc) / (mag > 0 ? mag : 1);
            if (e != e) e = INFINITY;
            if (e > worst) worst = e;
        }
    /* bf16 inputs are exact in f32 (f32 accumulation only); TF32 rounds the inputs to 10 bits. */
    double tol = t == ZAYA_GPU_TF32 ? ldexp(1.0, -9) : (double)k * ldexp(1.0, -23);
    CHECK(worst <= tol, "%s %lldx%lldx%lld ta=%d tb=%d: error %.3e > %.3e", zaya_gpu_dtype_name(t), (long long)m,
          (long long)n, (long long)k, ta, tb, worst, tol);
    double rel = 1;
    int64_t bad = -1;
    CHECK(zaya_gpu_gemm_verify(g, 64, &rel, &bad) == ZAYA_OK && bad == 0 && rel <= tol, "sampled check: %lld bad, %.3e",
          (long long)bad, rel);
    free(ha);
    free(hb);
    free(hd);
    zaya_gpu_gemm_free(g);
}

static void test_gemm_big(void) {
    for (int t = 0; t < ZAYA_GPU_DTYPE_COUNT; t++) {
        zaya_gpu_gemm *g = NULL;
        CHECK(zaya_gpu_gemm_init(&g, (zaya_gpu_dtype)t, 0, 1, 2048, 1536, 4096, 5) == ZAYA_OK, "init %s", zaya_error_message());
        if (!g) continue;
        double best = 0, mean = 0, rel = 1;
        int64_t bad = -1;
        CHECK(zaya_gpu_gemm_time(g, 1, 3, &best, &mean) == ZAYA_OK && best > 0 && mean >= best, "time");
        CHECK(zaya_gpu_gemm_verify(g, 256, &rel, &bad) == ZAYA_OK && bad == 0, "%s: %lld of 256 sampled entries wrong",
              zaya_gpu_dtype_name((zaya_gpu_dtype)t), (long long)bad);
        CHECK(strncmp(zaya_gpu_gemm_algo(g), "algo", 4) == 0, "algo '%s'", zaya_gpu_gemm_algo(g));
        zaya_gpu_gemm_free(g);
    }
}

static void test_stream(void) {
    zaya_gpu_stream_result r;
    CHECK(zaya_gpu_stream_run(1 << 22, 3, &r) == ZAYA_OK, "stream: %s", zaya_error_message());
    CHECK(r.validated && r.max_rel_err <= 1e-8, "stream values: max rel err %.3e", r.max_rel_err);
    for (int k = 0; k < ZAYA_GPU_KERNEL_COUNT; k++) CHECK(r.best_GBps[k] > 0 && r.mean_s[k] >= r.best_s[k], "kernel %d", k);
    zaya_gpu_props p;
    CHECK(zaya_gpu_props_get(0, &p) == ZAYA_OK && p.warp_size > 0 && r.block % p.warp_size == 0, "block %d, warp %d",
          r.block, p.warp_size);
    CHECK(zaya_gpu_stream_run(1 << 22, 1, &r) == ZAYA_EINVAL, "ntimes 1 accepted");
}

static void test_copies_and_errors(void) {
    size_t n = 1 << 20;
    float *h = NULL, *back = malloc(n * sizeof(float));
    void *d = NULL;
    CHECK(zaya_gpu_host_malloc((void **)&h, n * sizeof(float)) == ZAYA_OK && zaya_gpu_malloc(&d, n * sizeof(float)) == ZAYA_OK,
          "alloc");
    for (size_t i = 0; i < n; i++) h[i] = (float)i * 0.5f;
    CHECK(zaya_gpu_memcpy(d, h, n * 4, ZAYA_GPU_H2D, NULL) == ZAYA_OK &&
              zaya_gpu_memcpy(back, d, n * 4, ZAYA_GPU_D2H, NULL) == ZAYA_OK && zaya_gpu_sync() == ZAYA_OK,
          "round trip");
    CHECK(!memcmp(h, back, n * 4), "round trip changed data");
    double gbps = 0;
    CHECK(zaya_gpu_copy_bandwidth(16 << 20, 1, ZAYA_GPU_H2D, 3, &gbps) == ZAYA_OK && gbps > 0, "pinned h2d");
    CHECK(zaya_gpu_copy_bandwidth(16 << 20, 0, ZAYA_GPU_D2H, 3, &gbps) == ZAYA_OK && gbps > 0, "pageable d2h");
    void *huge = NULL;
    CHECK(zaya_gpu_malloc(&huge, (size_t)1 << 52) != ZAYA_OK && strstr(zaya_error_message(), "cudaMalloc("),
          "huge malloc message: %s", zaya_error_message());
    zaya_gpu_event *a = NULL, *b = NULL;
    zaya_gpu_stream *s = NULL;
    double ms = -1;
    CHECK(zaya_gpu_stream_init(&s) == ZAYA_OK && zaya_gpu_event_init(&a) == ZAYA_OK && zaya_gpu_event_init(&b) == ZAYA_OK,
          "stream/events");
    CHECK(zaya_gpu_event_record(a, s) == ZAYA_OK && zaya_gpu_memset(d, 0, n * 4, s) == ZAYA_OK &&
              zaya_gpu_event_record(b, s) == ZAYA_OK && zaya_gpu_event_sync(b) == ZAYA_OK &&
              zaya_gpu_event_elapsed_ms(a, b, &ms) == ZAYA_OK && ms >= 0,
          "event timing");
    zaya_gpu_event_free(a);
    zaya_gpu_event_free(b);
    zaya_gpu_stream_free(s);
    zaya_gpu_free(d);
    zaya_gpu_host_free(h);
    free(back);
}

/* NCCL all-reduce (sum, f32 and bf16) over every visible GPU in this process: exact at each size. */
static void test_nccl(void) {
    if (!zaya_nccl_built()) return;
    int nd = zaya_gpu_device_count(), devs[16];
    if (nd > 16) nd = 16;
    for (int i = 0; i < nd; i++) devs[i] = i;
    zaya_nccl *nc = NULL;
    CHECK(zaya_nccl_init(NULL, nd, devs, &nc) == ZAYA_OK, "nccl init: %s", zaya_error_message());
    if (!nc) return;
    for (int t = 0; t < 2; t++)
        for (int64_t bytes = 64; bytes <= (64 << 20); bytes *= 16) {
            zaya_coll_shape s = zaya_coll_shape_for(ZAYA_COLL_ALLREDUCE, bytes, nd, (zaya_dist_dtype)t);
            size_t es = zaya_dist_dtype_size((zaya_dist_dtype)t), b = (size_t)s.count * es;
            void *host = malloc(b), *buf[16] = {0};
            for (int d = 0; d < nd; d++) {
                zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, d});
                CHECK(zaya_gpu_malloc(&buf[d], b) == ZAYA_OK, "alloc");
                zaya_coll_fill_input(ZAYA_COLL_ALLREDUCE, &s, host, 1, (zaya_dist_dtype)t, ZAYA_REDOP_SUM, 0, d, nd, 9);
                CHECK(zaya_gpu_memcpy(buf[d], host, b, ZAYA_GPU_H2D, NULL) == ZAYA_OK && zaya_gpu_sync() == ZAYA_OK, "up");
            }
            CHECK(zaya_nccl_group_start() == ZAYA_OK, "group");
            for (int d = 0; d < nd; d++)
                CHECK(zaya_nccl_allreduce(nc, d, buf[d], buf[d], s.count, (zaya_dist_dtype)t, ZAYA_REDOP_SUM) == ZAYA_OK,
                      "allreduce: %s", zaya_error_message());
            CHECK(zaya_nccl_group_end() == ZAYA_OK, "group end: %s", zaya_error_message());
            for (int d = 0; d < nd; d++) {
                zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, d});
                CHECK(zaya_gpu_stream_sync(zaya_nccl_stream(nc, d)) == ZAYA_OK, "sync");
                CHECK(zaya_gpu_memcpy(host, buf[d], b, ZAYA_GPU_D2H, NULL) == ZAYA_OK && zaya_gpu_sync() == ZAYA_OK, "down");
                int64_t w = zaya_coll_count_wrong(ZAYA_COLL_ALLREDUCE, &s, host, (zaya_dist_dtype)t, ZAYA_REDOP_SUM, 0, d,
                                                  nd, 9);
                CHECK(w == 0, "nccl allreduce %s %lld bytes on GPU %d: %lld wrong", t ? "bf16" : "f32", (long long)bytes, d,
                      (long long)w);
                zaya_gpu_free(buf[d]);
            }
            free(host);
        }
    zaya_nccl_free(nc);
}

int main(void) {
    if (zaya_gpu_device_count() == 0) {
        printf("no CUDA device visible (%s backend): skipped\n", zaya_gpu_backend_name());
        return 77;
    }
    CHECK(zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, 0}) == ZAYA_OK, "select: %s", zaya_error_message());
    const int64_t shapes[][3] = {{64, 64, 64}, {37, 53, 71}, {128, 96, 200}};
    for (int t = 0; t < ZAYA_GPU_DTYPE_COUNT; t++) {
        if (t == ZAYA_GPU_F16) continue; /* f16: the sampled reference check below */
        for (int s = 0; s < 3; s++)
            for (int tr = 0; tr < 4; tr++)
                test_gemm_vs_cpu((zaya_gpu_dtype)t, tr & 1, tr >> 1, shapes[s][0], shapes[s][1], shapes[s][2]);
    }
    test_gemm_big();
    test_stream();
    test_copies_and_errors();
    test_nccl();
    zaya_gpu_select((zaya_device){ZAYA_DEVICE_CUDA, 0});
    return th_finish("gpu_check");
}

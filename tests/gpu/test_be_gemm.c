/* The CUDA backend's GEMMs (ctest label gpu; exit 77, skipped, without a device): gemm and
 * gemm_batched against a double-precision host reference for every transpose, both dtypes, beta 0
 * and 1, odd shapes, padded batch strides (whose padding must stay untouched), misaligned expert-row
 * slices with vary_m, K = 0; the same bits on a repeated call; to_bf16 against zaya_f32_to_bf16; and
 * the pending-error path: an operation with a NULL operand is reported by the next sync() or
 * download(), naming it, and then cleared. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/backend.h"
#include "zaya/bf16.h"
#include "zaya/gpu.h"

static zaya_backend *be;

static void *dev_alloc_upload(const void *host, size_t bytes) {
    void *p = NULL;
    zaya_status st = be->alloc(be, &p, bytes);
    CHECK(st == ZAYA_OK && p != NULL, "alloc %zu bytes: %s", bytes, zaya_error_message());
    if (p && host) CHECK(be->upload(be, p, host, bytes) == ZAYA_OK, "upload: %s", zaya_error_message());
    return p;
}

static void download(void *host, const void *dev, size_t bytes) {
    zaya_status st = be->download(be, host, dev, bytes);
    CHECK(st == ZAYA_OK, "download: %s", zaya_error_message());
}

/* Operand values: uniform [-1, 1), rounded to bf16 for BF16 (the reference reads the same values). */
static void *make_operand(zaya_dtype dt, int64_t n, uint64_t seed, double *vals) {
    float *f = th_alloc(n);
    th_fill(f, n, seed, 0, -1.0f, 1.0f);
    void *h;
    if (dt == ZAYA_DTYPE_BF16) {
        uint16_t *b = malloc(sizeof(uint16_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            b[i] = zaya_f32_to_bf16(f[i]);
            vals[i] = zaya_bf16_to_f32(b[i]);
        }
        free(f);
        h = b;
    } else {
        for (int64_t i = 0; i < n; i++) vals[i] = f[i];
        h = f;
    }
    return h;
}

/* C_i = alpha op(A_i) op(B_i) + beta C_i for i < batch, with pa, pb, pc elements of padding after each
 * matrix (batched strides) and A starting a_off elements into its allocation (an expert's rows).
 * batched 0: be->gemm (batch 1, alpha 1) with vary_m. */
static void check_gemm(zaya_dtype dt, int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K, int64_t pa,
                       int64_t pb, int64_t pc, int64_t a_off, float alpha, float beta, int batched, int vary_m) {
    const size_t es = dt == ZAYA_DTYPE_BF16 ? 2 : 4;
    const int64_t sa = M * K + pa, sb = K * N + pb, sc = M * N + pc;
    const int64_t na = a_off + batch * sa, nb = batch * sb, nc = batch * sc;
    double *va = th_alloc_d(na + 1), *vb = th_alloc_d(nb + 1);
    void *ha = make_operand(dt, na + 1, 11 + (uint64_t)M, va), *hb = make_operand(dt, nb + 1, 23 + (uint64_t)N, vb);
    float *c0 = th_alloc(nc + 1), *got = th_alloc(nc + 1);
    th_fill(c0, nc + 1, 37, 0, -1.0f, 1.0f);
    char *da = dev_alloc_upload(ha, (size_t)(na + 1) * es);
    void *db = dev_alloc_upload(hb, (size_t)(nb + 1) * es);
    float *dc = dev_alloc_upload(c0, (size_t)(nc + 1) * sizeof(float));
    if (!da || !db || !dc) goto out;
    if (batched)
        be->gemm_batched(be, dt, ta, tb, batch, M, N, K, da + (size_t)a_off * es, sa, db, sb, dc, sc, alpha, beta);
    else
        be->gemm(be, dt, ta, tb, M, N, K, da + (size_t)a_off * es, db, dc, beta, vary_m);
    download(got, dc, (size_t)(nc + 1) * sizeof(float));
    double worst = 0;
    int64_t pad_changed = 0;
    for (int64_t bi = 0; bi < batch; bi++) {
        const double *A = va + a_off + bi * sa, *B = vb + bi * sb;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0, mag = 0;
                for (int64_t p = 0; p < K; p++) {
                    double x = ta ? A[p * M + i] : A[i * K + p], y = tb ? B[j * K + p] : B[p * N + j];
                    acc += x * y;
                    mag += fabs(x * y);
                }
                const int64_t ci = bi * sc + i * N + j;
                const double ref = (double)alpha * acc + (double)beta * c0[ci];
                mag = fabs((double)alpha) * mag + fabs((double)beta * c0[ci]);
                double e = fabs(got[ci] - ref) / (mag > 0 ? mag : 1.0);
                if (e != e) e = INFINITY;
                if (e > worst) worst = e;
            }
        for (int64_t q = M * N; q < sc; q++) pad_changed += got[bi * sc + q] != c0[bi * sc + q];
    }
    pad_changed += got[nc] != c0[nc];
    /* f32 accumulation of exact products (bf16 products are exact in f32; f32 ones round once): K + 2
     * roundings of 2^-24 at most, doubled. TF32 (rounding inputs to 10 bits) would be ~1e-3 off. */
    const double tol = (double)(K + 2) * ldexp(1.0, -23);
    CHECK(worst <= tol && pad_changed == 0,
          "%s %s ta=%d tb=%d batch %lld %lldx%lldx%lld alpha %g beta %g vary_m %d a_off %lld: error %.3e (> %.3e?), "
          "%lld padding floats changed",
          batched ? "gemm_batched" : "gemm", dt == ZAYA_DTYPE_BF16 ? "bf16" : "f32", ta, tb, (long long)batch,
          (long long)M, (long long)N, (long long)K, (double)alpha, (double)beta, vary_m, (long long)a_off, worst, tol,
          (long long)pad_changed);
out:
    be->free(be, da);
    be->free(be, db);
    be->free(be, dc);
    free(va);
    free(vb);
    free(ha);
    free(hb);
    free(c0);
    free(got);
}

static void test_gemm_shapes(void) {
    const int64_t shapes[][3] = {{17, 33, 65}, {64, 48, 32}, {1, 1, 1}, {3, 130, 7}};
    for (int dt = 0; dt < 2; dt++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int beta = 0; beta < 2; beta++)
                    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                        check_gemm((zaya_dtype)dt, ta, tb, 1, shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, 0, 0, 1.0f,
                                   (float)beta, 0, 0);
}

/* Expert rows: M changes every call, A is a slice at an odd row offset (2-byte aligned in bf16). */
static void test_gemm_vary_m(void) {
    const int64_t ms[] = {17, 1, 40, 17, 5, 64};
    for (int dt = 0; dt < 2; dt++)
        for (int ta = 0; ta < 2; ta++)
            for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
                check_gemm((zaya_dtype)dt, ta, (int)(i & 1), 1, ms[i], 33, 65, 0, 0, 0, (int64_t)(3 * i + 1), 1.0f,
                           (float)(i % 2), 0, 1);
}

static void test_gemm_batched(void) {
    for (int dt = 0; dt < 2; dt++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int beta = 0; beta < 2; beta++) {
                    check_gemm((zaya_dtype)dt, ta, tb, 3, 17, 33, 65, 3, 1, 2, 0, 0.5f, (float)beta, 1, 0); /* padded */
                    check_gemm((zaya_dtype)dt, ta, tb, 4, 16, 16, 24, 0, 0, 0, 0, -1.25f, (float)beta, 1, 0); /* dense */
                }
}

/* K = 0: C = beta C (beta 0 zeroes it); M = 0 or N = 0: nothing at all. */
static void test_gemm_empty(void) {
    float h[6] = {1, 2, 3, 4, 5, 6}, got[6];
    float *dc = dev_alloc_upload(h, sizeof h);
    float *dx = dev_alloc_upload(h, sizeof h);
    if (!dc || !dx) return;
    be->gemm(be, ZAYA_DTYPE_F32, 0, 0, 2, 3, 0, dx, dx, dc, 1.0f, 0);
    download(got, dc, sizeof got);
    CHECK(!memcmp(got, h, sizeof h), "K = 0, beta 1 changed C");
    be->gemm(be, ZAYA_DTYPE_BF16, 0, 0, 0, 3, 4, dx, dx, dc, 0.0f, 0);
    be->gemm(be, ZAYA_DTYPE_F32, 1, 1, 2, 0, 4, dx, dx, dc, 0.0f, 1);
    download(got, dc, sizeof got);
    CHECK(!memcmp(got, h, sizeof h), "M = 0 / N = 0 changed C");
    be->gemm_batched(be, ZAYA_DTYPE_F32, 0, 0, 2, 1, 2, 0, dx, 0, dx, 0, dc, 3, 2.0f, 0.0f);
    download(got, dc, sizeof got);
    CHECK(got[0] == 0 && got[1] == 0 && got[2] == 3 && got[3] == 0 && got[4] == 0 && got[5] == 6,
          "batched K = 0, beta 0: %g %g %g %g %g %g", got[0], got[1], got[2], got[3], got[4], got[5]);
    be->gemm(be, ZAYA_DTYPE_F32, 0, 0, 2, 3, 0, dx, dx, dc, 0.0f, 0);
    download(got, dc, sizeof got);
    int zero = 1;
    for (int i = 0; i < 6; i++) zero &= got[i] == 0.0f;
    CHECK(zero, "K = 0, beta 0 did not zero C");
    CHECK(be->sync(be) == ZAYA_OK, "sync: %s", zaya_error_message());
    be->free(be, dc);
    be->free(be, dx);
}

/* A shape run twice (the cached descriptor and algorithm) gives the same bits. */
static void test_gemm_repeat(void) {
    const int64_t M = 96, N = 80, K = 200;
    float *ha = th_alloc(M * K), *hb = th_alloc(K * N), *r1 = th_alloc(M * N), *r2 = th_alloc(M * N);
    th_fill(ha, M * K, 5, 0, -1, 1);
    th_fill(hb, K * N, 6, 0, -1, 1);
    float *da = dev_alloc_upload(ha, sizeof(float) * (size_t)(M * K)), *db = dev_alloc_upload(hb, sizeof(float) * (size_t)(K * N));
    float *dc = dev_alloc_upload(NULL, sizeof(float) * (size_t)(M * N));
    if (da && db && dc) {
        be->gemm(be, ZAYA_DTYPE_F32, 0, 1, M, N, K / 2, da, db, dc, 0.0f, 0); /* another shape in between */
        be->gemm(be, ZAYA_DTYPE_F32, 0, 0, M, N, K, da, db, dc, 0.0f, 0);
        download(r1, dc, sizeof(float) * (size_t)(M * N));
        be->gemm(be, ZAYA_DTYPE_F32, 0, 0, M, N, K, da, db, dc, 0.0f, 0);
        download(r2, dc, sizeof(float) * (size_t)(M * N));
        CHECK(!memcmp(r1, r2, sizeof(float) * (size_t)(M * N)), "repeated gemm differs");
    }
    be->free(be, da);
    be->free(be, db);
    be->free(be, dc);
    free(ha);
    free(hb);
    free(r1);
    free(r2);
}

static void test_to_bf16(void) {
    enum { N = 4096 };
    static const uint32_t bits[] = {0x3f808000u, 0x3f818000u, 0x3f80ffffu, 0x7fc00001u, 0xffa00000u, 0x7f800001u,
                                    0x7f800000u, 0xff800000u, 0x80000000u, 0x7f7fffffu, 0x00000001u, 0x807fffffu};
    float *h = th_alloc(N);
    th_fill(h, N, 9, 0, -100.0f, 100.0f);
    for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++) memcpy(&h[i], &bits[i], sizeof(float));
    uint16_t got[N];
    float *dx = dev_alloc_upload(h, sizeof(float) * N);
    uint16_t *dy = dev_alloc_upload(NULL, sizeof(uint16_t) * N);
    if (dx && dy) {
        be->to_bf16(be, dy, dx, N);
        download(got, dy, sizeof got);
        int64_t bad = 0, first = -1;
        for (int i = 0; i < N; i++)
            if (got[i] != zaya_f32_to_bf16(h[i])) {
                if (first < 0) first = i;
                bad++;
            }
        CHECK(bad == 0, "to_bf16: %lld values differ from zaya_f32_to_bf16 (first %lld: 0x%04x, want 0x%04x)", (long long)bad,
              (long long)first, first >= 0 ? got[first] : 0, first >= 0 ? zaya_f32_to_bf16(h[first]) : 0);
    }
    be->free(be, dx);
    be->free(be, dy);
    free(h);
}

/* The first failure is kept, reported by sync() / download() with the operation's name, then cleared;
 * the backend keeps working. */
static void test_pending_error(void) {
    float h[16] = {0}, got[16];
    float *dx = dev_alloc_upload(h, sizeof h);
    if (!dx) return;
    be->adamw(be, NULL, dx, dx, dx, 16, 1, 0.1f, 0.99f, 0.01f, -1e-3f, 1, 1e-8f, 1);
    be->scale(be, NULL, 2.0f, 16); /* a second failure: not the one reported */
    zaya_status st = be->sync(be);
    CHECK(st != ZAYA_OK, "sync after a NULL operand returned OK");
    CHECK(strstr(zaya_error_message(), "backend cuda:0: adamw:") != NULL, "sync message: %s", zaya_error_message());
    CHECK(be->sync(be) == ZAYA_OK, "the error was not cleared: %s", zaya_error_message());
    be->gemm(be, ZAYA_DTYPE_F32, 0, 0, 4, 4, 4, NULL, dx, dx, 0.0f, 0);
    st = be->download(be, got, dx, sizeof got);
    CHECK(st != ZAYA_OK && strstr(zaya_error_message(), "gemm:") != NULL, "download after a failed gemm: %d %s", (int)st,
          zaya_error_message());
    CHECK(be->download(be, got, dx, sizeof got) == ZAYA_OK, "download after the reported error: %s", zaya_error_message());
    be->free(be, dx);
    check_gemm(ZAYA_DTYPE_F32, 0, 0, 1, 17, 33, 65, 0, 0, 0, 0, 1.0f, 0.0f, 0, 0); /* still working */
}

int main(void) {
    if (zaya_gpu_device_count() == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    zaya_status st = zaya_gpu_backend_init((zaya_device){ZAYA_DEVICE_CUDA, 0}, &be);
    CHECK(st == ZAYA_OK && be, "backend init: %s", zaya_error_message());
    if (!be) return th_finish("be_gemm");
    CHECK(!strcmp(be->name, "cuda:0") && be->is_host == 0, "name %s is_host %d", be->name, be->is_host);
    CHECK(be->reserve(be, 1 << 20) == ZAYA_OK && be->reserve(be, 1 << 10) == ZAYA_OK, "reserve: %s", zaya_error_message());
    test_gemm_shapes();
    test_gemm_vary_m();
    test_gemm_batched();
    test_gemm_empty();
    test_gemm_repeat();
    test_to_bf16();
    test_pending_error();
    CHECK(be->sync(be) == ZAYA_OK, "final sync: %s", zaya_error_message());
    be->destroy(be);
    return th_finish("be_gemm");
}

/* zaya_matmul against a double-precision reference: transposes, awkward sizes, padded leading
 * dimensions, batches with gaps between matrices, alpha, beta = 1, bf16 inputs, the primitive cache
 * and every rejected descriptor. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/bf16.h"
#include "zaya/matmul.h"
#include "zaya/threads.h"

/* Reference on the stored (row-major, strided) operands: C = alpha op(A) op(B) + beta C. */
static void ref_matmul(const zaya_matmul_desc *r, const double *a, const double *b, double *c) {
    for (int64_t bt = 0; bt < r->batch; bt++) {
        const double *A = a + bt * r->stride_a, *B = b + bt * r->stride_b;
        double *C = c + bt * r->stride_c;
        for (int64_t i = 0; i < r->m; i++)
            for (int64_t j = 0; j < r->n; j++) {
                double acc = 0;
                for (int64_t p = 0; p < r->k; p++) {
                    double av = r->trans_a ? A[p * r->lda + i] : A[i * r->lda + p];
                    double bv = r->trans_b ? B[j * r->ldb + p] : B[p * r->ldb + j];
                    acc += av * bv;
                }
                C[i * r->ldc + j] = r->alpha * acc + r->beta * C[i * r->ldc + j];
            }
    }
}

static int64_t extent(int64_t batch, int64_t stride, int64_t rows, int64_t ld) {
    return (batch - 1) * stride + rows * ld;
}

/* Runs one descriptor on random data and compares every element of C (including the gaps, which
 * must stay untouched) with the reference. Returns the relative error. */
static double run_case(const zaya_matmul_desc *d, uint64_t seed) {
    zaya_matmul_desc r;
    zaya_status st = zaya_matmul_resolve(d, &r);
    CHECK(st == ZAYA_OK, "resolve: %s", zaya_error_message());
    if (st != ZAYA_OK) return 1e9;
    int64_t na = extent(r.batch, r.stride_a, r.trans_a ? r.k : r.m, r.lda);
    int64_t nb = extent(r.batch, r.stride_b, r.trans_b ? r.n : r.k, r.ldb);
    int64_t nc = extent(r.batch, r.stride_c, r.m, r.ldc);
    float *a = th_alloc(na), *b = th_alloc(nb), *c = th_alloc(nc);
    th_fill(a, na, seed, 1, -1, 1);
    th_fill(b, nb, seed, 2, -1, 1);
    th_fill(c, nc, seed, 3, -1, 1);
    double *ad = th_alloc_d(na), *bd = th_alloc_d(nb), *cd = th_alloc_d(nc);
    uint16_t *a16 = NULL, *b16 = NULL;
    if (r.dtype == ZAYA_DTYPE_BF16) {
        /* The reference sees exactly the values the bf16 kernel sees. */
        a16 = malloc((size_t)na * 2);
        b16 = malloc((size_t)nb * 2);
        zaya_f32_to_bf16_n(a16, a, (size_t)na);
        zaya_f32_to_bf16_n(b16, b, (size_t)nb);
        zaya_round_bf16_n(a, (size_t)na);
        zaya_round_bf16_n(b, (size_t)nb);
    }
    th_to_double(ad, a, na);
    th_to_double(bd, b, nb);
    th_to_double(cd, c, nc);
    ref_matmul(&r, ad, bd, cd);
    st = zaya_matmul(d, a16 ? (const void *)a16 : a, b16 ? (const void *)b16 : b, c);
    CHECK(st == ZAYA_OK, "matmul: %s", zaya_error_message());
    double err = th_rel_err(c, cd, nc, 1.0);
    free(a), free(b), free(c), free(ad), free(bd), free(cd), free(a16), free(b16);
    return err;
}

/* f32 accumulation over k terms of magnitude <= 1: relative error grows ~ k * eps / scale; inputs
 * are exact in both paths, so the same bound applies to bf16 inputs. */
static double tol_for(int64_t k) { return 1e-6 * (double)(k > 16 ? k : 16); }

static void test_transposes_and_sizes(void) {
    const int64_t sizes[][3] = {{1, 1, 1}, {3, 17, 5}, {17, 3, 129}, {129, 17, 3}, {33, 65, 47}, {64, 48, 96}, {1, 129, 17}, {130, 1, 31}};
    for (int dt = 0; dt < 2; dt++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
                    zaya_matmul_desc d = {.dtype = (zaya_dtype)dt, .trans_a = ta, .trans_b = tb, .m = sizes[s][0],
                                          .n = sizes[s][1], .k = sizes[s][2]};
                    char label[128];
                    snprintf(label, sizeof label, "%s ta=%d tb=%d m=%lld n=%lld k=%lld", dt ? "bf16" : "f32", ta, tb,
                             (long long)d.m, (long long)d.n, (long long)d.k);
                    CHECK_ERR(label, run_case(&d, 100 + s), tol_for(d.k));
                }
}

static void test_padded_ld_batch_alpha_beta(void) {
    for (int dt = 0; dt < 2; dt++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                int64_t m = 19, n = 33, k = 40;
                zaya_matmul_desc d = {.dtype = (zaya_dtype)dt, .trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k};
                d.lda = (ta ? m : k) + 7;
                d.ldb = (tb ? k : n) + 3;
                d.ldc = n + 5;
                char label[128];
                snprintf(label, sizeof label, "%s ta=%d tb=%d padded ld", dt ? "bf16" : "f32", ta, tb);
                CHECK_ERR(label, run_case(&d, 7), tol_for(k));

                d.batch = 3;
                d.stride_a = (ta ? k : m) * d.lda + 11;
                d.stride_b = (tb ? n : k) * d.ldb + 2;
                d.stride_c = m * d.ldc + 13;
                snprintf(label, sizeof label, "%s ta=%d tb=%d batched strided", dt ? "bf16" : "f32", ta, tb);
                CHECK_ERR(label, run_case(&d, 8), tol_for(k));

                d.beta = 1;
                snprintf(label, sizeof label, "%s ta=%d tb=%d batched beta=1", dt ? "bf16" : "f32", ta, tb);
                CHECK_ERR(label, run_case(&d, 9), tol_for(k));

                d.alpha = -0.375f;
                snprintf(label, sizeof label, "%s ta=%d tb=%d batched beta=1 alpha", dt ? "bf16" : "f32", ta, tb);
                CHECK_ERR(label, run_case(&d, 10), tol_for(k));

                d.beta = 0;
                d.batch = 1;
                d.alpha = 2.5f;
                snprintf(label, sizeof label, "%s ta=%d tb=%d alpha=2.5", dt ? "bf16" : "f32", ta, tb);
                CHECK_ERR(label, run_case(&d, 11), tol_for(k));
            }
    /* Dense batched default strides. */
    zaya_matmul_desc d = {.dtype = ZAYA_DTYPE_F32, .m = 5, .n = 7, .k = 9, .batch = 4};
    CHECK_ERR("batched dense default strides", run_case(&d, 12), tol_for(9));
}

/* beta = 1 accumulates exactly: two products into one buffer equal their sum. */
static void test_accumulation(void) {
    int64_t m = 17, n = 23, k = 31;
    float *a = th_alloc(m * k), *b1 = th_alloc(k * n), *b2 = th_alloc(k * n), *c = th_alloc(m * n);
    th_fill(a, m * k, 5, 1, -1, 1);
    th_fill(b1, k * n, 5, 2, -1, 1);
    th_fill(b2, k * n, 5, 3, -1, 1);
    th_fill(c, m * n, 5, 4, 100, 200); /* garbage that beta = 0 must overwrite */
    zaya_matmul_f32(0, 0, m, n, k, a, b1, c, 0);
    zaya_matmul_f32(0, 0, m, n, k, a, b2, c, 1);
    double *ref = th_alloc_d(m * n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += (double)a[i * k + p] * ((double)b1[p * n + j] + (double)b2[p * n + j]);
            ref[i * n + j] = s;
        }
    CHECK_ERR("beta=0 then beta=1", th_rel_err(c, ref, m * n, 1.0), tol_for(2 * k));
    free(a), free(b1), free(b2), free(c), free(ref);
}

static void test_cache(void) {
    zaya_matmul_cache_clear();
    CHECK(zaya_matmul_cache_size() == 0, "cache not empty after clear: %d", zaya_matmul_cache_size());
    int64_t m = 21, n = 13, k = 8;
    float *a = th_alloc(m * k), *b = th_alloc(k * n), *c = th_alloc(m * n);
    th_fill(a, m * k, 6, 1, -1, 1);
    th_fill(b, k * n, 6, 2, -1, 1);
    zaya_matmul_f32(0, 0, m, n, k, a, b, c, 0);
    CHECK(zaya_matmul_cache_size() == 1, "first call: cache size %d, want 1", zaya_matmul_cache_size());
    zaya_matmul_f32(0, 0, m, n, k, a, b, c, 0);
    CHECK(zaya_matmul_cache_size() == 1, "same shape: cache size %d, want 1", zaya_matmul_cache_size());
    /* An explicit ld equal to the dense default and alpha = 1 are the same primitive as 0. */
    zaya_matmul_desc d = {.m = m, .n = n, .k = k, .lda = k, .ldb = n, .ldc = n, .alpha = 1.0f, .batch = 1};
    CHECK(zaya_matmul(&d, a, b, c) == ZAYA_OK, "%s", zaya_error_message());
    CHECK(zaya_matmul_cache_size() == 1, "canonical desc: cache size %d, want 1", zaya_matmul_cache_size());
    zaya_matmul_f32(0, 0, m, n, k, a, b, c, 1);
    CHECK(zaya_matmul_cache_size() == 2, "beta=1 is a new primitive: size %d", zaya_matmul_cache_size());
    zaya_matmul_f32(1, 0, k, n, m, a, b, c, 0);
    CHECK(zaya_matmul_cache_size() == 3, "transpose is a new primitive: size %d", zaya_matmul_cache_size());
    const char *impl = NULL;
    CHECK(zaya_matmul_impl_name(&d, &impl) == ZAYA_OK && impl && *impl, "impl name");
    CHECK(zaya_matmul_cache_size() == 3, "impl query of a cached shape: size %d", zaya_matmul_cache_size());

    /* Both memory-object paths give bitwise identical results. */
    float *c2 = th_alloc(m * n);
    zaya_matmul_set_reuse_memory(0);
    zaya_matmul_f32(0, 0, m, n, k, a, b, c2, 0);
    zaya_matmul_set_reuse_memory(1);
    zaya_matmul_f32(0, 0, m, n, k, a, b, c, 0);
    CHECK(!memcmp(c, c2, sizeof(float) * (size_t)(m * n)), "reuse and per-call memory objects differ");
    zaya_matmul_cache_clear();
    CHECK(zaya_matmul_cache_size() == 0, "cache not empty after clear");
    free(a), free(b), free(c), free(c2);
}

static void expect_einval(zaya_matmul_desc d, const char *field) {
    float x[64] = {0};
    zaya_status s = zaya_matmul(&d, x, x, x);
    CHECK(s == ZAYA_EINVAL, "%s: status %s, want EINVAL", field, zaya_status_name(s));
    CHECK(strstr(zaya_error_message(), field) != NULL, "message '%s' does not name '%s'", zaya_error_message(), field);
}

static void test_invalid(void) {
    zaya_matmul_desc ok = {.m = 2, .n = 3, .k = 4};
    zaya_matmul_desc d;
    d = ok, d.m = 0, expect_einval(d, "m must be positive");
    d = ok, d.n = -1, expect_einval(d, "n must be positive");
    d = ok, d.k = 0, expect_einval(d, "k must be positive");
    d = ok, d.lda = 3, expect_einval(d, "lda");
    d = ok, d.trans_a = 1, d.lda = 1, expect_einval(d, "lda");
    d = ok, d.ldb = 2, expect_einval(d, "ldb");
    d = ok, d.trans_b = 1, d.ldb = 3, expect_einval(d, "ldb");
    d = ok, d.ldc = 2, expect_einval(d, "ldc");
    d = ok, d.beta = 0.5f, expect_einval(d, "beta");
    d = ok, d.beta = -1.0f, expect_einval(d, "beta");
    d = ok, d.alpha = NAN, expect_einval(d, "alpha");
    d = ok, d.batch = -2, expect_einval(d, "batch");
    d = ok, d.batch = 2, d.stride_a = 7, expect_einval(d, "stride_a");
    d = ok, d.batch = 2, d.stride_b = 11, expect_einval(d, "stride_b");
    d = ok, d.batch = 2, d.stride_c = 5, expect_einval(d, "stride_c");
    d = ok, d.trans_a = 2, expect_einval(d, "trans_a");
    d = ok, d.trans_b = -1, expect_einval(d, "trans_b");
    d = ok, d.dtype = (zaya_dtype)7, expect_einval(d, "dtype");
    float x[16] = {0};
    CHECK(zaya_matmul(&ok, NULL, x, x) == ZAYA_EINVAL && strstr(zaya_error_message(), "a is NULL"), "NULL a");
    CHECK(zaya_matmul(&ok, x, NULL, x) == ZAYA_EINVAL && strstr(zaya_error_message(), "b is NULL"), "NULL b");
    CHECK(zaya_matmul(&ok, x, x, NULL) == ZAYA_EINVAL && strstr(zaya_error_message(), "c is NULL"), "NULL c");
    CHECK(zaya_matmul(NULL, x, x, x) == ZAYA_EINVAL, "NULL desc");
    /* Rejected descriptors never reach the cache. */
    CHECK(zaya_matmul_cache_size() == 0, "invalid descriptors created %d primitives", zaya_matmul_cache_size());
}

/* Concurrent callers of one shape: one holds the entry's memory objects, the others must fall back
 * to their own; every result must still be right. */
typedef struct worker {
    const float *a, *b;
    float *c;
    int64_t m, n, k;
    int fails;
} worker;

static void *worker_run(void *p) {
    worker *w = p;
    for (int it = 0; it < 50; it++) {
        zaya_matmul_desc d = {.trans_b = 1, .m = w->m, .n = w->n, .k = w->k};
        if (zaya_matmul(&d, w->a, w->b, w->c) != ZAYA_OK) w->fails++;
    }
    return NULL;
}

static void test_threads(void) {
    int64_t m = 33, n = 40, k = 64;
    float *a = th_alloc(m * k), *b = th_alloc(n * k);
    th_fill(a, m * k, 21, 1, -1, 1);
    th_fill(b, n * k, 21, 2, -1, 1);
    double *ref = th_alloc_d(m * n);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t p = 0; p < k; p++) s += (double)a[i * k + p] * (double)b[j * k + p];
            ref[i * n + j] = s;
        }
    enum { NT = 4 };
    worker w[NT];
    pthread_t t[NT];
    for (int i = 0; i < NT; i++) {
        w[i] = (worker){a, b, th_alloc(m * n), m, n, k, 0};
        CHECK(pthread_create(&t[i], NULL, worker_run, &w[i]) == 0, "pthread_create");
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(t[i], NULL);
        CHECK(w[i].fails == 0, "thread %d: %d failed calls", i, w[i].fails);
        CHECK_ERR("concurrent same-shape calls", th_rel_err(w[i].c, ref, m * n, 1.0), tol_for(k));
        free(w[i].c);
    }
    free(a), free(b), free(ref);
}

/* zaya_matmul_batched: against the double reference (small shapes, both dtypes, alpha and beta = 1), and
 * bit for bit against one zaya_matmul per matrix at the Newton-Schulz shapes of a hidden-256 model
 * (X X^T on 256 x 512 and 256 x 256 iterates, A A, B X), on 1 and 2 threads: Muon batches its
 * matrices on the strength of this identity. */
static void test_batched(void) {
    for (int dt = 0; dt < 2; dt++) {
        const int64_t G = 5, m = 24, n = 40, k = 33;
        float *a = th_alloc(G * m * k), *b = th_alloc(G * n * k), *c = th_alloc(G * m * n);
        double *ad = th_alloc_d(G * m * k), *bd = th_alloc_d(G * n * k), *cd = th_alloc_d(G * m * n);
        uint16_t *a16 = malloc(sizeof(uint16_t) * (size_t)(G * m * k)), *b16 = malloc(sizeof(uint16_t) * (size_t)(G * n * k));
        th_fill(a, G * m * k, 9, 1, -1, 1);
        th_fill(b, G * n * k, 9, 2, -1, 1);
        th_fill(c, G * m * n, 9, 3, -1, 1);
        if (dt) {
            zaya_f32_to_bf16_n(a16, a, (size_t)(G * m * k));
            zaya_f32_to_bf16_n(b16, b, (size_t)(G * n * k));
            zaya_round_bf16_n(a, (size_t)(G * m * k));
            zaya_round_bf16_n(b, (size_t)(G * n * k));
        }
        th_to_double(ad, a, G * m * k);
        th_to_double(bd, b, G * n * k);
        th_to_double(cd, c, G * m * n);
        zaya_matmul_desc r = {.dtype = (zaya_dtype)dt, .trans_b = 1, .m = m, .n = n, .k = k, .lda = k, .ldb = k,
                              .ldc = n, .batch = G, .stride_a = m * k, .stride_b = n * k, .stride_c = m * n,
                              .alpha = -1.5f, .beta = 1};
        ref_matmul(&r, ad, bd, cd);
        zaya_matmul_batched((zaya_dtype)dt, 0, 1, G, m, n, k, dt ? (const void *)a16 : a, dt ? (const void *)b16 : b, c,
                            -1.5f, 1.0f);
        CHECK_ERR(dt ? "batched bf16 vs double" : "batched f32 vs double", th_rel_err(c, cd, G * m * n, 1.0),
                  tol_for(k));
        free(a), free(b), free(c), free(ad), free(bd), free(cd), free(a16), free(b16);
    }
    /* {trans_b, m, n, k, alpha, beta} */
    const struct { int tb; int64_t m, n, k; float alpha, beta; } sh[] = {
        {1, 256, 256, 512, 1.0f, 0.0f}, {1, 256, 256, 256, 1.0f, 0.0f}, {0, 256, 256, 256, 2.0315f, 1.0f},
        {0, 256, 512, 256, 1.0f, 1.0f}, {0, 64, 256, 64, 1.0f, 1.0f}};
    const int64_t G = 8;
    for (int thr = 1; thr <= 2; thr++) {
        zaya_threads_init(thr);
        for (int dt = 0; dt < 2; dt++)
            for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++) {
                const int64_t m = sh[s].m, n = sh[s].n, k = sh[s].k, na = m * k, nb = k * n, nc = m * n;
                const size_t es = dt ? sizeof(uint16_t) : sizeof(float);
                float *af = th_alloc(G * na), *bf = th_alloc(G * nb), *c1 = th_alloc(G * nc), *c2 = th_alloc(G * nc);
                uint16_t *ah = malloc(sizeof(uint16_t) * (size_t)(G * na)), *bh = malloc(sizeof(uint16_t) * (size_t)(G * nb));
                th_fill(af, G * na, 11, (uint64_t)s, -1, 1);
                th_fill(bf, G * nb, 12, (uint64_t)s, -1, 1);
                th_fill(c1, G * nc, 13, (uint64_t)s, -1, 1);
                memcpy(c2, c1, sizeof(float) * (size_t)(G * nc));
                zaya_f32_to_bf16_n(ah, af, (size_t)(G * na));
                zaya_f32_to_bf16_n(bh, bf, (size_t)(G * nb));
                const char *A = dt ? (const char *)ah : (const char *)af, *B = dt ? (const char *)bh : (const char *)bf;
                zaya_matmul_desc d = {.dtype = (zaya_dtype)dt, .trans_b = sh[s].tb, .m = m, .n = n, .k = k,
                                      .alpha = sh[s].alpha, .beta = sh[s].beta};
                for (int64_t i = 0; i < G; i++)
                    CHECK(zaya_matmul(&d, A + es * (size_t)(i * na), B + es * (size_t)(i * nb), c1 + i * nc) == ZAYA_OK,
                          "single matmul: %s", zaya_error_message());
                zaya_matmul_batched((zaya_dtype)dt, 0, sh[s].tb, G, m, n, k, A, B, c2, sh[s].alpha, sh[s].beta);
                CHECK(!memcmp(c1, c2, sizeof(float) * (size_t)(G * nc)),
                      "%d threads %s tb=%d %lldx%lldx%lld: batched differs from one product per matrix", thr,
                      dt ? "bf16" : "f32", sh[s].tb, (long long)m, (long long)n, (long long)k);
                free(af), free(bf), free(c1), free(c2), free(ah), free(bh);
            }
    }
    zaya_threads_init(2);
}

/* A product's bits do not depend on the thread count, nor on whether it is called from inside a parallel
 * region (one thread): shapes with small outputs and a long k (some oneDNN kernels split k over
 * threads there), a Newton-Schulz-like batch, both dtypes, fixed and run-time shapes. */
static void test_thread_counts(void) {
    const struct { int tb, dyn; int64_t batch, m, n, k; } sh[] = {
        {1, 0, 1, 64, 64, 256}, {1, 0, 1, 32, 32, 96}, {1, 0, 4, 64, 64, 256}, {1, 0, 1, 256, 256, 768},
        {0, 0, 1, 64, 256, 64}, {1, 0, 1, 8, 8, 4096}, {0, ZAYA_MATMUL_DYN_K, 1, 64, 64, 3000},
        {0, 0, 7, 18, 18, 18}, {0, 0, 3, 18, 36, 18}, {0, 0, 3, 8, 24, 8}};
    for (int dt = 0; dt < 2; dt++)
        for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++) {
            const int64_t G = sh[s].batch, m = sh[s].m, n = sh[s].n, k = sh[s].k, na = m * k, nb = k * n, nc = m * n;
            float *af = th_alloc(G * na), *bf = th_alloc(G * nb), *c0 = th_alloc(G * nc), *c[5];
            uint16_t *ah = malloc(sizeof(uint16_t) * (size_t)(G * na)), *bh = malloc(sizeof(uint16_t) * (size_t)(G * nb));
            th_fill(af, G * na, 21, (uint64_t)s, -1, 1);
            th_fill(bf, G * nb, 22, (uint64_t)s, -1, 1);
            th_fill(c0, G * nc, 23, (uint64_t)s, -1, 1);
            zaya_f32_to_bf16_n(ah, af, (size_t)(G * na));
            zaya_f32_to_bf16_n(bh, bf, (size_t)(G * nb));
            const void *A = dt ? (const void *)ah : af, *B = dt ? (const void *)bh : bf;
            zaya_matmul_desc d = {.dtype = (zaya_dtype)dt, .trans_b = sh[s].tb, .m = m, .n = n, .k = k, .batch = G,
                                  .beta = 1, .dynamic = sh[s].dyn};
            for (int v = 0; v < 5; v++) { /* 1, 2, 3, 4 threads, then nested in a 2-thread region */
                c[v] = th_alloc(G * nc);
                memcpy(c[v], c0, sizeof(float) * (size_t)(G * nc));
                zaya_status st = ZAYA_OK;
                if (v < 4) {
                    zaya_threads_init(v + 1);
                    st = zaya_matmul(&d, A, B, c[v]);
                } else {
                    zaya_threads_init(2);
#pragma omp parallel num_threads(2)
                    {
#pragma omp single
                        st = zaya_matmul(&d, A, B, c[v]);
                    }
                }
                CHECK(st == ZAYA_OK, "thread counts: %s", zaya_error_message());
                if (v > 0)
                    CHECK(!memcmp(c[0], c[v], sizeof(float) * (size_t)(G * nc)),
                          "%s tb=%d batch %lld %lldx%lldx%lld%s: %s gives other bits than 1 thread", dt ? "bf16" : "f32",
                          sh[s].tb, (long long)G, (long long)m, (long long)n, (long long)k, sh[s].dyn ? " (run-time k)" : "",
                          v < 4 ? (v == 1 ? "2 threads" : v == 2 ? "3 threads" : "4 threads") : "a nested call");
            }
            if (G > 1) { /* and the bits of one product per matrix */
                float *cs = th_alloc(G * nc);
                memcpy(cs, c0, sizeof(float) * (size_t)(G * nc));
                zaya_matmul_desc one = d;
                one.batch = 1;
                const size_t es = dt ? sizeof(uint16_t) : sizeof(float);
                for (int64_t i = 0; i < G; i++)
                    CHECK(zaya_matmul(&one, (const char *)A + es * (size_t)(i * na), (const char *)B + es * (size_t)(i * nb),
                                      cs + i * nc) == ZAYA_OK, "single: %s", zaya_error_message());
                CHECK(!memcmp(c[0], cs, sizeof(float) * (size_t)(G * nc)), "%s tb=%d batch %lld %lldx%lldx%lld: batched differs from one product per matrix",
                      dt ? "bf16" : "f32", sh[s].tb, (long long)G, (long long)m, (long long)n, (long long)k);
                free(cs);
            }
            for (int v = 0; v < 5; v++) free(c[v]);
            free(af), free(bf), free(c0), free(ah), free(bh);
        }
    zaya_threads_init(2);
}

/* Dimensions left to run time: every (m, k) the expert GEMMs see, both dtypes and the three
 * model-side layouts (forward, input gradient, weight gradient with beta 1), against the reference;
 * one cache entry per layout whatever the sizes; the results equal, bit for bit, a second call with
 * the same shape (a function of the shape alone); unknown bits and batches refused. */
static void test_dynamic(void) {
    const int64_t rows[] = {1, 7, 64, 129, 511};
    for (int dt = 0; dt < 2; dt++) {
        zaya_matmul_cache_clear();
        for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
            const int64_t r = rows[i];
            const zaya_matmul_desc cases[3] = {
                {.dtype = dt ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, .trans_b = 1, .m = r, .n = 48, .k = 40,
                 .dynamic = ZAYA_MATMUL_DYN_M},
                {.dtype = dt ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, .m = r, .n = 40, .k = 48, .dynamic = ZAYA_MATMUL_DYN_M},
                {.dtype = dt ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, .trans_a = 1, .m = 48, .n = 40, .k = r, .beta = 1.0f,
                 .dynamic = ZAYA_MATMUL_DYN_K}};
            for (int c = 0; c < 3; c++) {
                char label[96];
                snprintf(label, sizeof label, "dynamic %s case %d rows %lld", dt ? "bf16" : "f32", c, (long long)r);
                CHECK_ERR(label, run_case(&cases[c], 900 + (uint64_t)r), tol_for(cases[c].k));
            }
        }
        CHECK(zaya_matmul_cache_size() == 3, "dynamic %s: %d cache entries for 3 layouts x 5 sizes, want 3",
              dt ? "bf16" : "f32", zaya_matmul_cache_size());
    }
    /* the same shape twice: identical bits */
    const int64_t m = 77, n = 33, k = 50;
    float *a = th_alloc(m * k), *b = th_alloc(k * n), *c1 = th_alloc(m * n), *c2 = th_alloc(m * n);
    th_fill(a, m * k, 5, 1, -1, 1);
    th_fill(b, k * n, 5, 2, -1, 1);
    zaya_matmul_dynamic(ZAYA_DTYPE_F32, ZAYA_MATMUL_DYN_M, 0, 0, m, n, k, a, b, c1, 0.0f);
    zaya_matmul_dynamic(ZAYA_DTYPE_F32, ZAYA_MATMUL_DYN_M, 0, 0, 3, n, k, a, b, c2, 0.0f);
    zaya_matmul_dynamic(ZAYA_DTYPE_F32, ZAYA_MATMUL_DYN_M, 0, 0, m, n, k, a, b, c2, 0.0f);
    CHECK(!memcmp(c1, c2, sizeof(float) * (size_t)(m * n)), "dynamic: the same shape gave different bits");
    free(a), free(b), free(c1), free(c2);
    float x = 0;
    zaya_matmul_desc bad = {.m = 2, .n = 2, .k = 2, .dynamic = 8};
    CHECK(zaya_matmul(&bad, &x, &x, &x) == ZAYA_EINVAL && strstr(zaya_error_message(), "dynamic"),
          "unknown dynamic bit accepted: %s", zaya_error_message());
    bad = (zaya_matmul_desc){.m = 2, .n = 2, .k = 2, .batch = 2, .dynamic = ZAYA_MATMUL_DYN_M};
    CHECK(zaya_matmul(&bad, &x, &x, &x) == ZAYA_EINVAL && strstr(zaya_error_message(), "batch"),
          "dynamic batch accepted: %s", zaya_error_message());
}

int main(void) {
    test_transposes_and_sizes();
    test_padded_ld_batch_alpha_beta();
    test_accumulation();
    test_cache();
    test_invalid();
    test_threads();
    test_batched();
    test_thread_counts();
    test_dynamic();
    zaya_matmul_cache_clear();
    return th_finish("test_matmul");
}

/* The CPU compute backend (src/kernels/backend_cpu.c): every entry of the table is filled, the memory
 * calls behave, and every operation computes what its CPU function computes. The operations that wrap
 * kernels tested elsewhere (norms, activations, convolutions, RoPE, attention, top-1, cross-entropy)
 * are compared with a direct kernel call, bit for bit; the rest (the moved model and optimizer pieces,
 * the GEMMs, the plain elementwise operations) against double-precision references written here.
 * Shapes are odd on purpose (no multiple of 8), and the reductions run above the OpenMP thresholds. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/attention.h"
#include "zaya/backend.h"
#include "zaya/bf16.h"
#include "zaya/kernels.h"
#include "zaya/model_ops.h"

static zaya_backend *be;
static uint64_t g_stream = 1;

static float *rnd(int64_t n, float lo, float hi) {
    float *x = th_alloc(n);
    th_fill(x, n, 2024, g_stream++, lo, hi);
    return x;
}
static float *dup(const float *x, int64_t n) {
    float *y = th_alloc(n);
    memcpy(y, x, (size_t)n * sizeof(float));
    return y;
}
static void rel(const char *label, const float *a, const double *ref, int64_t n, double tol) {
    CHECK_ERR(label, th_rel_err(a, ref, n, 1e-3), tol);
}
/* For updates p = f(p0) that change p by little: the error of the change, relative to the change. */
static void rel_delta(const char *label, const float *p, const float *p0, const double *ref, int64_t n, double tol) {
    double maxd = 1e-30, maxe = 0;
    for (int64_t i = 0; i < n; i++) {
        double want = ref[i] - p0[i], got = (double)p[i] - p0[i];
        if (fabs(want) > maxd) maxd = fabs(want);
        if (!(fabs(got - want) <= maxe)) maxe = fabs(got - want);
    }
    CHECK_ERR(label, maxe / maxd, tol);
}
static void same(const char *label, const void *a, const void *b, size_t bytes) {
    CHECK(memcmp(a, b, bytes) == 0, "%s: differs from the kernel's result", label);
}
static int32_t *ids_rand(int64_t n, int64_t hi, uint64_t stream) {
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    float *u = th_alloc(n);
    th_fill(u, n, 99, stream, 0.0f, (float)hi);
    for (int64_t i = 0; i < n; i++) {
        ids[i] = (int32_t)u[i];
        if (ids[i] >= hi) ids[i] = (int32_t)hi - 1;
    }
    free(u);
    return ids;
}

#define TOL 1e-5

static void test_table_and_memory(void) {
    /* every operation and memory call is set: the table from alloc on is all function pointers */
    const char *base = (const char *)be + offsetof(zaya_backend, alloc);
    const size_t nptr = (sizeof(zaya_backend) - offsetof(zaya_backend, alloc)) / sizeof(void *);
    int missing = 0;
    for (size_t i = 0; i < nptr; i++) {
        void *p;
        memcpy(&p, base + i * sizeof(void *), sizeof p);
        missing += p == NULL;
    }
    CHECK(nptr >= 60 && missing == 0, "%d of %zu table entries are NULL", missing, nptr);
    CHECK(strcmp(be->name, "cpu") == 0 && be->is_host == 1, "name '%s', is_host %d", be->name, be->is_host);

    void *p = (void *)1;
    CHECK(be->alloc(be, &p, 0) == ZAYA_OK && p == NULL, "alloc(0) gives NULL");
    be->free(be, NULL);
    const size_t bytes = 4099;
    unsigned char *q = NULL, *r = NULL;
    CHECK(be->alloc(be, (void **)&q, bytes) == ZAYA_OK && q, "alloc");
    CHECK(be->alloc(be, (void **)&r, bytes) == ZAYA_OK && r, "alloc");
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; i++) nonzero += q[i] != 0;
    CHECK(nonzero == 0, "alloc is zero-filled (%zu non-zero bytes)", nonzero);
    unsigned char *host = malloc(bytes), *back = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) host[i] = (unsigned char)(i * 131 + 7);
    CHECK(be->upload(be, q, host, bytes) == ZAYA_OK, "upload");
    CHECK(be->copy(be, r, q, bytes) == ZAYA_OK, "copy");
    memset(back, 0, bytes);
    CHECK(be->download(be, back, r, bytes) == ZAYA_OK && memcmp(back, host, bytes) == 0, "upload/copy/download");
    CHECK(be->zero(be, r + 1, bytes - 2) == ZAYA_OK, "zero");
    CHECK(be->download(be, back, r, bytes) == ZAYA_OK, "download");
    nonzero = 0;
    for (size_t i = 1; i + 1 < bytes; i++) nonzero += back[i] != 0;
    CHECK(nonzero == 0 && back[0] == host[0] && back[bytes - 1] == host[bytes - 1], "zero clears exactly its range");
    CHECK(be->reserve(be, 1 << 20) == ZAYA_OK && be->reserve(be, 1000) == ZAYA_OK && be->reserve(be, 3 << 20) == ZAYA_OK,
          "reserve grows (and a smaller request keeps it)");
    CHECK(be->sync(be) == ZAYA_OK, "sync with nothing pending");
    /* a failing operation is kept and reported once by the next sync */
    float c[4] = {0};
    be->gemm(be, (zaya_dtype)77, 0, 0, 2, 2, 1, c, c, c, 0.0f, 0);
    zaya_status s = be->sync(be);
    CHECK(s != ZAYA_OK && strstr(zaya_error_message(), "gemm") != NULL, "a failed gemm is reported by sync (%s)",
          zaya_error_message());
    CHECK(be->sync(be) == ZAYA_OK, "the error is reported once");
    be->free(be, q);
    be->free(be, r);
    free(host);
    free(back);
}

/* ---- GEMM ---- */
static double elem(const float *x, const uint16_t *xh, int64_t i) { return xh ? (double)zaya_bf16_to_f32(xh[i]) : (double)x[i]; }

/* C [M, N] (+)= alpha op(A) op(B) in double, A [M,K] or [K,M] (ta), B [K,N] or [N,K] (tb). */
static void gemm_ref(double *ref, const float *c0, int ta, int tb, int64_t M, int64_t N, int64_t K, const float *a,
                     const uint16_t *ah, const float *b, const uint16_t *bh, double alpha, float beta) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0;
            for (int64_t k = 0; k < K; k++)
                s += elem(a, ah, ta ? k * M + i : i * K + k) * elem(b, bh, tb ? j * K + k : k * N + j);
            ref[i * N + j] = alpha * s + (beta != 0.0f ? (double)c0[i * N + j] : 0.0);
        }
}

static void test_gemm(void) {
    const int64_t Ms[2] = {37, 7}, N = 29, K = 45;
    for (int dt = 0; dt < 2; dt++)
        for (int mi = 0; mi < 2; mi++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++)
                    for (int bi = 0; bi < 2; bi++)
                        for (int vary = 0; vary < 2; vary++) {
                            const int64_t M = Ms[mi];
                            float *a = rnd(M * K, -1, 1), *b = rnd(K * N, -1, 1), *c0 = rnd(M * N, -1, 1);
                            float *c = dup(c0, M * N);
                            uint16_t *ah = NULL, *bh = NULL;
                            if (dt) {
                                ah = malloc(2 * (size_t)(M * K));
                                bh = malloc(2 * (size_t)(K * N));
                                zaya_f32_to_bf16_n(ah, a, (size_t)(M * K));
                                zaya_f32_to_bf16_n(bh, b, (size_t)(K * N));
                            }
                            const float beta = (float)bi;
                            be->gemm(be, dt ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, ta, tb, M, N, K,
                                     dt ? (const void *)ah : a, dt ? (const void *)bh : b, c, beta, vary);
                            double *ref = th_alloc_d(M * N);
                            gemm_ref(ref, c0, ta, tb, M, N, K, dt ? NULL : a, ah, dt ? NULL : b, bh, 1.0, beta);
                            char label[96];
                            snprintf(label, sizeof label, "gemm %s M=%lld ta=%d tb=%d beta=%d vary_m=%d",
                                     dt ? "bf16" : "f32", (long long)M, ta, tb, bi, vary);
                            rel(label, c, ref, M * N, TOL);
                            free(a), free(b), free(c0), free(c), free(ah), free(bh), free(ref);
                        }
    CHECK(be->sync(be) == ZAYA_OK, "gemm: no pending error (%s)", zaya_error_message());
}

static void test_gemm_batched(void) {
    const int64_t batch = 3, M = 13, N = 19, K = 23;
    for (int dt = 0; dt < 2; dt++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int bi = 0; bi < 2; bi++)
                    for (int pad = 0; pad < 2; pad++) {
                        /* strides: dense, or with a gap between the matrices */
                        const int64_t sa = M * K + 5 * pad, sb = K * N + 3 * pad, sc = M * N + 7 * pad;
                        float *a = rnd(batch * sa, -1, 1), *b = rnd(batch * sb, -1, 1), *c0 = rnd(batch * sc, -1, 1);
                        float *c = dup(c0, batch * sc);
                        uint16_t *ah = NULL, *bh = NULL;
                        if (dt) {
                            ah = malloc(2 * (size_t)(batch * sa));
                            bh = malloc(2 * (size_t)(batch * sb));
                            zaya_f32_to_bf16_n(ah, a, (size_t)(batch * sa));
                            zaya_f32_to_bf16_n(bh, b, (size_t)(batch * sb));
                        }
                        const float alpha = 0.7f, beta = (float)bi;
                        be->gemm_batched(be, dt ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32, ta, tb, batch, M, N, K,
                                         dt ? (const void *)ah : a, sa, dt ? (const void *)bh : b, sb, c, sc, alpha,
                                         beta);
                        double *ref = th_alloc_d(batch * sc);
                        for (int64_t i = 0; i < batch * sc; i++) ref[i] = c0[i]; /* the gaps stay as they were */
                        for (int64_t i = 0; i < batch; i++)
                            gemm_ref(ref + i * sc, c0 + i * sc, ta, tb, M, N, K, dt ? NULL : a + i * sa,
                                     dt ? ah + i * sa : NULL, dt ? NULL : b + i * sb, dt ? bh + i * sb : NULL,
                                     (double)alpha, beta);
                        char label[96];
                        snprintf(label, sizeof label, "gemm_batched %s ta=%d tb=%d beta=%d gaps=%d", dt ? "bf16" : "f32",
                                 ta, tb, bi, pad);
                        rel(label, c, ref, batch * sc, TOL);
                        free(a), free(b), free(c0), free(c), free(ah), free(bh), free(ref);
                    }
    CHECK(be->sync(be) == ZAYA_OK, "gemm_batched: no pending error (%s)", zaya_error_message());
}

/* ---- operations that are kernels tested elsewhere: the same bits as the direct call ---- */
static void test_kernel_wrappers(void) {
    const int64_t n = 37, d = 53;
    { /* to_bf16 */
        float *x = rnd(n * d, -3, 3);
        uint16_t *h1 = malloc(2 * (size_t)(n * d)), *h2 = malloc(2 * (size_t)(n * d));
        be->to_bf16(be, h1, x, n * d);
        zaya_f32_to_bf16_n(h2, x, (size_t)(n * d));
        same("to_bf16", h1, h2, 2 * (size_t)(n * d));
        free(x), free(h1), free(h2);
    }
    { /* rmsnorm */
        float *x = rnd(n * d, -2, 2), *w = rnd(d, 0.5f, 1.5f), *dy = rnd(n * d, -1, 1), *dw0 = rnd(d, -1, 1);
        float *y1 = th_alloc(n * d), *y2 = th_alloc(n * d), *r1 = th_alloc(n), *r2 = th_alloc(n);
        be->rmsnorm_forward(be, y1, r1, x, w, n, d, 1e-6f);
        zaya_rmsnorm_forward(y2, r2, x, w, n, d, 1e-6f);
        same("rmsnorm_forward y", y1, y2, 4 * (size_t)(n * d));
        same("rmsnorm_forward rstd", r1, r2, 4 * (size_t)n);
        float *dx1 = th_alloc(n * d), *dx2 = th_alloc(n * d), *dw1 = dup(dw0, d), *dw2 = dup(dw0, d);
        be->rmsnorm_backward(be, dx1, dw1, dy, x, w, r1, n, d);
        zaya_rmsnorm_backward(dx2, dw2, dy, x, w, r2, n, d);
        same("rmsnorm_backward dx", dx1, dx2, 4 * (size_t)(n * d));
        same("rmsnorm_backward dw", dw1, dw2, 4 * (size_t)d);
        free(x), free(w), free(dy), free(dw0), free(y1), free(y2), free(r1), free(r2), free(dx1), free(dx2), free(dw1),
            free(dw2);
    }
    { /* gelu, swiglu, softmax */
        float *x = rnd(n * 2 * d, -4, 4), *dy = rnd(n * 2 * d, -1, 1);
        float *a = th_alloc(n * 2 * d), *b = th_alloc(n * 2 * d);
        be->gelu_forward(be, a, x, n * d);
        zaya_gelu_forward(b, x, n * d);
        same("gelu_forward", a, b, 4 * (size_t)(n * d));
        be->gelu_backward(be, a, dy, x, n * d);
        zaya_gelu_backward(b, dy, x, n * d);
        same("gelu_backward", a, b, 4 * (size_t)(n * d));
        be->swiglu_forward(be, a, x, n, d);
        zaya_swiglu_forward(b, x, n, d);
        same("swiglu_forward", a, b, 4 * (size_t)(n * d));
        be->swiglu_backward(be, a, dy, x, n, d);
        zaya_swiglu_backward(b, dy, x, n, d);
        same("swiglu_backward", a, b, 8 * (size_t)(n * d));
        be->softmax_forward(be, a, x, n, d);
        zaya_softmax_forward(b, x, n, d);
        same("softmax_forward", a, b, 4 * (size_t)(n * d));
        free(x), free(dy), free(a), free(b);
    }
    { /* convolutions: depthwise and grouped, with padding */
        const int64_t B = 2, T = 11, C = 12, k = 3, groups = 4, pad = 2, cg = C / groups, tout = T + pad - k + 1;
        float *x = rnd(B * T * C, -1, 1), *wd = rnd(C * k, -1, 1), *wg = rnd(C * cg * k, -1, 1), *bias = rnd(C, -1, 1);
        float *dy = rnd(B * tout * C, -1, 1);
        float *y1 = th_alloc(B * tout * C), *y2 = th_alloc(B * tout * C);
        float *dx1 = th_alloc(B * T * C), *dx2 = th_alloc(B * T * C);
        float *dw1 = rnd(C * cg * k, -1, 1), *dw2 = dup(dw1, C * cg * k), *db1 = rnd(C, -1, 1), *db2 = dup(db1, C);
        be->conv_dw_forward(be, y1, x, wd, bias, B, T, C, k, pad);
        zaya_conv1d_depthwise_forward(y2, x, wd, bias, B, T, C, k, pad);
        same("conv_dw_forward", y1, y2, 4 * (size_t)(B * tout * C));
        be->conv_dw_backward(be, dx1, dw1, db1, dy, x, wd, B, T, C, k, pad);
        zaya_conv1d_depthwise_backward(dx2, dw2, db2, dy, x, wd, B, T, C, k, pad);
        same("conv_dw_backward dx", dx1, dx2, 4 * (size_t)(B * T * C));
        same("conv_dw_backward dw", dw1, dw2, 4 * (size_t)(C * k));
        same("conv_dw_backward dbias", db1, db2, 4 * (size_t)C);
        /* the backend runs the GEMM form on its scratch when the 3 MiB reserved above hold the workspace
         * (as the CPU model does), else the tiled kernels: the reference takes the same path */
        const int64_t wsf = zaya_conv1d_grouped_ws_floats(B, T, C, groups, k, pad);
        float *ws = (size_t)wsf * sizeof(float) <= (size_t)(3 << 20) ? th_alloc(wsf) : NULL;
        for (int bf = 0; bf < (ws ? 2 : 1); bf++) { /* bf16 runs on the workspace only */
            const zaya_dtype dt = bf ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
            be->conv_grouped_forward(be, dt, y1, x, wg, bias, B, T, C, groups, k, pad);
            zaya_conv1d_grouped_forward_dt(dt, y2, x, wg, bias, B, T, C, groups, k, pad, ws);
            same("conv_grouped_forward", y1, y2, 4 * (size_t)(B * tout * C));
            memset(dw1, 0, 4 * (size_t)(C * cg * k)), memset(dw2, 0, 4 * (size_t)(C * cg * k));
            memset(db1, 0, 4 * (size_t)C), memset(db2, 0, 4 * (size_t)C);
            be->conv_grouped_backward(be, dt, dx1, dw1, db1, dy, x, wg, B, T, C, groups, k, pad);
            zaya_conv1d_grouped_backward_dt(dt, dx2, dw2, db2, dy, x, wg, B, T, C, groups, k, pad, ws);
            same("conv_grouped_backward dx", dx1, dx2, 4 * (size_t)(B * T * C));
            same("conv_grouped_backward dw", dw1, dw2, 4 * (size_t)(C * cg * k));
            same("conv_grouped_backward dbias", db1, db2, 4 * (size_t)C);
        }
        free(ws);
        free(x), free(wd), free(wg), free(bias), free(dy), free(y1), free(y2), free(dx1), free(dx2), free(dw1),
            free(dw2), free(db1), free(db2);
    }
    { /* l2norm and rope */
        const int64_t heads = 5, hd = 14, rot = 8;
        float *x = rnd(n * heads * hd, -1, 1), *mult = rnd(heads, 0.5f, 2), *dy = rnd(n * heads * hd, -1, 1);
        float *y1 = th_alloc(n * heads * hd), *y2 = th_alloc(n * heads * hd), *i1 = th_alloc(n * heads),
              *i2 = th_alloc(n * heads);
        float *dm1 = rnd(heads, -1, 1), *dm2 = dup(dm1, heads);
        be->l2norm_forward(be, y1, i1, x, mult, 3.7f, n, heads, hd, 1e-6f);
        zaya_l2norm_forward(y2, i2, x, mult, 3.7f, n, heads, hd, 1e-6f);
        same("l2norm_forward y", y1, y2, 4 * (size_t)(n * heads * hd));
        same("l2norm_forward inv_norm", i1, i2, 4 * (size_t)(n * heads));
        be->l2norm_backward(be, y1, dm1, dy, x, i1, mult, 3.7f, n, heads, hd);
        zaya_l2norm_backward(y2, dm2, dy, x, i2, mult, 3.7f, n, heads, hd);
        same("l2norm_backward dx", y1, y2, 4 * (size_t)(n * heads * hd));
        same("l2norm_backward dmult", dm1, dm2, 4 * (size_t)heads);
        zaya_rope_table t;
        CHECK(zaya_rope_table_init(&t, 64, rot, 10000.0) == 0, "rope table");
        int32_t *pos = ids_rand(n, 64, 5);
        memcpy(y1, x, 4 * (size_t)(n * heads * hd));
        memcpy(y2, x, 4 * (size_t)(n * heads * hd));
        be->rope_forward(be, y1, t.cos, t.sin, rot, pos, n, heads, hd);
        zaya_rope_forward(y2, &t, pos, n, heads, hd);
        same("rope_forward", y1, y2, 4 * (size_t)(n * heads * hd));
        be->rope_backward(be, y1, t.cos, t.sin, rot, pos, n, heads, hd);
        zaya_rope_backward(y2, &t, pos, n, heads, hd);
        same("rope_backward", y1, y2, 4 * (size_t)(n * heads * hd));
        zaya_rope_table_free(&t);
        free(x), free(mult), free(dy), free(y1), free(y2), free(i1), free(i2), free(dm1), free(dm2), free(pos);
    }
    for (int bf = 0; bf < 2; bf++) { /* attention, f32 and bf16 (D = 32: the AMX kernel where the host has it) */
        const zaya_dtype dt = bf ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
        const int64_t B = 2, T = 13, Hq = 4, Hkv = 2, D = bf ? 32 : 10;
        const int64_t nq = B * T * Hq * D, nk = B * T * Hkv * D;
        float *q = rnd(nq, -1, 1), *k = rnd(nk, -1, 1), *v = rnd(nk, -1, 1), *dout = rnd(nq, -1, 1);
        float *o1 = th_alloc(nq), *o2 = th_alloc(nq), *l1 = th_alloc(B * Hq * T), *l2 = th_alloc(B * Hq * T);
        be->attention_forward(be, dt, o1, l1, q, k, v, B, T, Hq, Hkv, D, 0.3f);
        zaya_attention_forward_dtype(dt, o2, l2, q, k, v, B, T, T, 0, Hq, Hkv, D, 0.3f);
        same("attention_forward out", o1, o2, 4 * (size_t)nq);
        same("attention_forward lse", l1, l2, 4 * (size_t)(B * Hq * T));
        float *dq1 = th_alloc(nq), *dq2 = th_alloc(nq), *dk1 = th_alloc(nk), *dk2 = th_alloc(nk), *dv1 = th_alloc(nk),
              *dv2 = th_alloc(nk);
        be->attention_backward(be, dt, dq1, dk1, dv1, dout, q, k, v, o1, l1, B, T, Hq, Hkv, D, 0.3f);
        zaya_attention_backward_dtype(dt, dq2, dk2, dv2, dout, q, k, v, o2, l2, B, T, T, 0, Hq, Hkv, D, 0.3f);
        same("attention_backward dq", dq1, dq2, 4 * (size_t)nq);
        same("attention_backward dk", dk1, dk2, 4 * (size_t)nk);
        same("attention_backward dv", dv1, dv2, 4 * (size_t)nk);
        free(q), free(k), free(v), free(dout), free(o1), free(o2), free(l1), free(l2), free(dq1), free(dq2), free(dk1),
            free(dk2), free(dv1), free(dv2);
    }
    { /* top1, top1_count (rows wider than the classes), xent */
        const int64_t e = 5, ld = 7, V = 41;
        float *p = rnd(n * ld, 0, 1), *bias = rnd(e, -0.2f, 0.2f);
        int32_t i1[64], i2[64];
        float g1[64], g2[64];
        int64_t c1[8], c2[8];
        be->top1(be, i1, g1, p, ld, bias, n, e);
        zaya_top1_biased_ld(i2, g2, p, ld, bias, n, e);
        same("top1 idx", i1, i2, 4 * (size_t)n);
        same("top1 gate", g1, g2, 4 * (size_t)n);
        be->top1_count(be, c1, p, ld, NULL, n, e);
        zaya_top1_biased_count_ld(c2, p, ld, NULL, n, e);
        same("top1_count", c1, c2, 8 * (size_t)e);
        float *lg = rnd(n * V, -3, 3), *lg2 = dup(lg, n * V), *ls1 = th_alloc(n), *ls2 = th_alloc(n);
        int32_t *tg = ids_rand(n, V, 6);
        tg[3] = -1; /* an ignored row */
        be->xent(be, lg, ls1, tg, n, V, 0.25f);
        zaya_xent_forward_backward(lg2, ls2, tg, n, V, 0.25f);
        same("xent logits", lg, lg2, 4 * (size_t)(n * V));
        same("xent losses", ls1, ls2, 4 * (size_t)n);
        free(p), free(bias), free(lg), free(lg2), free(ls1), free(ls2), free(tg);
    }
}

/* ---- elementwise and the moved model pieces, against double references ---- */
static void test_elementwise(void) {
    const int64_t n = 301, d = 131; /* n * d above the parallel thresholds */
    const int64_t nd = n * d;
    float *x = rnd(nd, -2, 2), *z = rnd(nd, -2, 2), *b = rnd(d, -1, 1);
    double *ref = th_alloc_d(nd), *refd = th_alloc_d(d);
    { /* add, scale, add_bias, lincomb (also in place) */
        float *y = rnd(nd, -1, 1), *y0 = dup(y, nd);
        be->add(be, y, x, nd);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)y0[i] + x[i];
        rel("add", y, ref, nd, TOL);
        memcpy(y, y0, 4 * (size_t)nd);
        be->scale(be, y, -0.37f, nd);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)y0[i] * -0.37;
        rel("scale", y, ref, nd, TOL);
        memcpy(y, y0, 4 * (size_t)nd);
        be->add_bias(be, y, b, n, d);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)y0[i] + b[i % d];
        rel("add_bias", y, ref, nd, TOL);
        be->lincomb(be, y, 0.3f, x, -1.7f, z, nd);
        for (int64_t i = 0; i < nd; i++) ref[i] = 0.3 * x[i] - 1.7 * z[i];
        rel("lincomb", y, ref, nd, TOL);
        memcpy(y, x, 4 * (size_t)nd);
        be->lincomb(be, y, 0.3f, y, -1.7f, z, nd); /* y aliases x */
        rel("lincomb in place", y, ref, nd, TOL);
        free(y), free(y0);
    }
    { /* colsum_add */
        float *dst = rnd(d, -1, 1), *dst0 = dup(dst, d);
        be->colsum_add(be, dst, x, n, d);
        for (int64_t j = 0; j < d; j++) {
            refd[j] = dst0[j];
            for (int64_t i = 0; i < n; i++) refd[j] += x[i * d + j];
        }
        rel("colsum_add", dst, refd, d, TOL);
        free(dst), free(dst0);
    }
    { /* merge_forward / _backward, with and without the scales */
        float *ab = rnd(d, -1, 1), *as = rnd(d, 0.5f, 1.5f), *bb = rnd(d, -1, 1), *bs = rnd(d, 0.5f, 1.5f);
        float *y = th_alloc(nd), *dy = rnd(nd, -1, 1);
        be->merge_forward(be, y, x, ab, as, z, bb, bs, n, d);
        for (int64_t i = 0; i < nd; i++) {
            int64_t j = i % d;
            ref[i] = ((double)x[i] + ab[j]) * as[j] + ((double)z[i] + bb[j]) * bs[j];
        }
        rel("merge_forward", y, ref, nd, TOL);
        be->merge_forward(be, y, x, NULL, NULL, z, NULL, NULL, n, d);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)x[i] + z[i];
        rel("merge_forward plain", y, ref, nd, TOL);
        for (int scaled = 0; scaled < 2; scaled++)
            for (int acc = 0; acc < 2; acc++) {
                float *da = th_alloc(nd), *db = rnd(nd, -1, 1), *db0 = dup(db, nd);
                float *g[4], *g0[4];
                for (int t = 0; t < 4; t++) g[t] = rnd(d, -1, 1), g0[t] = dup(g[t], d);
                be->merge_backward(be, da, db, acc, dy, x, scaled ? ab : NULL, scaled ? as : NULL, z,
                                   scaled ? bb : NULL, scaled ? bs : NULL, g[0], g[1], g[2], g[3], n, d);
                double *rdb = th_alloc_d(nd), rg[4][131];
                for (int t = 0; t < 4; t++)
                    for (int64_t j = 0; j < d; j++) rg[t][j] = g0[t][j];
                for (int64_t i = 0; i < nd; i++) {
                    int64_t j = i % d;
                    double sa = scaled ? as[j] : 1.0, sb = scaled ? bs[j] : 1.0;
                    ref[i] = dy[i] * sa;
                    rdb[i] = (acc ? (double)db0[i] : 0.0) + dy[i] * sb;
                    if (scaled) {
                        rg[0][j] += dy[i] * (double)as[j];                 /* dab */
                        rg[1][j] += dy[i] * ((double)x[i] + ab[j]);         /* das */
                        rg[2][j] += dy[i] * (double)bs[j];                 /* dbb */
                        rg[3][j] += dy[i] * ((double)z[i] + bb[j]);         /* dbs */
                    }
                }
                char label[96];
                snprintf(label, sizeof label, "merge_backward scaled=%d acc=%d da", scaled, acc);
                rel(label, da, ref, nd, TOL);
                snprintf(label, sizeof label, "merge_backward scaled=%d acc=%d db", scaled, acc);
                rel(label, db, rdb, nd, TOL);
                for (int t = 0; t < 4; t++) {
                    snprintf(label, sizeof label, "merge_backward scaled=%d acc=%d param %d", scaled, acc, t);
                    rel(label, g[t], rg[t], d, TOL);
                }
                free(da), free(db), free(db0), free(rdb);
                for (int t = 0; t < 4; t++) free(g[t]), free(g0[t]);
            }
        free(ab), free(as), free(bb), free(bs), free(y), free(dy);
    }
    { /* eda */
        float *r = rnd(nd, -1, 1), *r0 = dup(r, nd), *prod = th_alloc(nd), *drp = th_alloc(nd);
        be->eda_forward(be, r, b, x, n, d);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)r0[i] + (double)b[i % d] * x[i];
        rel("eda_forward", r, ref, nd, TOL);
        be->eda_backward(be, prod, drp, z, x, b, n, d);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)z[i] * x[i];
        rel("eda_backward prod", prod, ref, nd, TOL);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)z[i] * b[i % d];
        rel("eda_backward dr_prev", drp, ref, nd, TOL);
        free(r), free(r0), free(prod), free(drp);
    }
    { /* transpose (exact), muon_apply */
        float *t = th_alloc(nd);
        be->transpose(be, t, x, n, d);
        int bad = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < d; j++) bad += t[j * n + i] != x[i * d + j];
        CHECK(bad == 0, "transpose: %d elements misplaced", bad);
        float *p = rnd(nd, -1, 1), *p0 = dup(p, nd);
        be->muon_apply(be, p, x, nd, 0.99f, -0.2f);
        for (int64_t i = 0; i < nd; i++) ref[i] = (double)p0[i] * (double)0.99f + (double)-0.2f * x[i];
        rel_delta("muon_apply", p, p0, ref, nd, TOL);
        free(t), free(p), free(p0);
    }
    free(x), free(z), free(b), free(ref), free(refd);
}

static void test_embedding(void) {
    const int64_t n = 257, d = 131, V = 23; /* repeated ids */
    float *table = rnd(V * d, -1, 1), *bias = rnd(d, -0.5f, 0.5f), *scale = rnd(d, 0.5f, 1.5f), *dx = rnd(n * d, -1, 1);
    int32_t *ids = ids_rand(n, V, 8);
    float *x = th_alloc(n * d);
    double *ref = th_alloc_d(V * d > n * d ? V * d : n * d);
    be->embed_forward(be, x, table, ids, bias, scale, n, d);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < d; j++) ref[i * d + j] = ((double)table[ids[i] * d + j] + bias[j]) * scale[j];
    rel("embed_forward", x, ref, n * d, TOL);
    /* the sorted lists the interface passes (the CPU backend does not need them) */
    int32_t *sorted = malloc(4 * (size_t)n), seg[24];
    int64_t nseg = 0, k = 0;
    for (int32_t id = 0; id < V; id++) {
        int64_t start = k;
        for (int64_t i = 0; i < n; i++)
            if (ids[i] == id) sorted[k++] = (int32_t)i;
        if (k > start) seg[nseg++] = (int32_t)start;
    }
    seg[nseg] = (int32_t)k;
    float *dt = rnd(V * d, -1, 1), *dt0 = dup(dt, V * d), *db = rnd(d, -1, 1), *db0 = dup(db, d), *ds = rnd(d, -1, 1),
          *ds0 = dup(ds, d), *de = th_alloc(n * d);
    be->embed_backward(be, dt, db, ds, de, dx, table, ids, bias, scale, sorted, seg, nseg, n, d);
    double rdb[131], rds[131];
    for (int64_t j = 0; j < d; j++) rdb[j] = db0[j], rds[j] = ds0[j];
    for (int64_t i = 0; i < V * d; i++) ref[i] = dt0[i];
    double *rde = th_alloc_d(n * d);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < d; j++) {
            double g = dx[i * d + j];
            rde[i * d + j] = g * scale[j];
            rds[j] += g * ((double)table[ids[i] * d + j] + bias[j]);
            rdb[j] += g * scale[j];
            ref[ids[i] * d + j] += g * scale[j];
        }
    rel("embed_backward de", de, rde, n * d, TOL);
    rel("embed_backward dbias", db, rdb, d, TOL);
    rel("embed_backward dscale", ds, rds, d, TOL);
    rel("embed_backward dtable", dt, ref, V * d, TOL);
    free(table), free(bias), free(scale), free(dx), free(ids), free(x), free(ref), free(sorted), free(dt), free(dt0),
        free(db), free(db0), free(ds), free(ds0), free(de), free(rde);
}

static void test_cca_pieces(void) {
    const int64_t N = 67, Hq = 6, Hkv = 2, hd = 13, G = Hq / Hkv, C = (Hq + Hkv) * hd;
    float *pre = rnd(N * C, -1, 1), *raw = rnd(N * C, -1, 1), *raw0 = dup(raw, N * C);
    double *ref = th_alloc_d(N * C);
    be->qk_mean_skip_forward(be, raw, pre, N, Hq, Hkv, hd);
    for (int64_t r = 0; r < N; r++)
        for (int64_t j = 0; j < Hkv; j++)
            for (int64_t c = 0; c < hd; c++) {
                double kj = pre[r * C + (Hq + j) * hd + c], mean = 0;
                for (int64_t i = j * G; i < (j + 1) * G; i++) {
                    double qi = pre[r * C + i * hd + c];
                    mean += qi / (double)G;
                    ref[r * C + i * hd + c] = raw0[r * C + i * hd + c] + 0.5 * (qi + kj);
                }
                ref[r * C + (Hq + j) * hd + c] = raw0[r * C + (Hq + j) * hd + c] + 0.5 * (mean + kj);
            }
    rel("qk_mean_skip_forward", raw, ref, N * C, TOL);
    /* backward: the transpose of that linear map, dpre += J^T g */
    float *g = rnd(N * C, -1, 1), *dp = rnd(N * C, -1, 1), *dp0 = dup(dp, N * C);
    be->qk_mean_skip_backward(be, dp, g, N, Hq, Hkv, hd);
    for (int64_t i = 0; i < N * C; i++) ref[i] = dp0[i];
    for (int64_t r = 0; r < N; r++)
        for (int64_t j = 0; j < Hkv; j++)
            for (int64_t c = 0; c < hd; c++) {
                const int64_t kk = r * C + (Hq + j) * hd + c;
                const double gk = g[kk];
                for (int64_t i = j * G; i < (j + 1) * G; i++) {
                    const int64_t qq = r * C + i * hd + c;
                    ref[qq] += 0.5 * g[qq] + 0.5 * gk / (double)G; /* q_i feeds its own term and the mean */
                    ref[kk] += 0.5 * g[qq];                        /* k_j feeds every q term of its group */
                }
                ref[kk] += 0.5 * gk;
            }
    rel("qk_mean_skip_backward", dp, ref, N * C, TOL);
    free(pre), free(raw), free(raw0), free(g), free(dp), free(dp0), free(ref);

    /* value shift: exact copies */
    const int64_t B = 3, T = 11, kvd = 26, h = kvd / 2;
    float *vv = rnd(B * T * kvd, -1, 1), *v = rnd(B * T * kvd, -1, 1), *dvv = rnd(B * T * kvd, -1, 1);
    be->value_shift_forward(be, v, vv, B, T, kvd);
    int bad = 0;
    for (int64_t r = 0; r < B * T; r++)
        for (int64_t c = 0; c < kvd; c++) {
            float want = c < h ? vv[r * kvd + c] : (r % T == 0 ? 0.0f : vv[(r - 1) * kvd + c]);
            bad += v[r * kvd + c] != want;
        }
    CHECK(bad == 0, "value_shift_forward: %d wrong", bad);
    be->value_shift_backward(be, dvv, v, B, T, kvd);
    bad = 0;
    for (int64_t r = 0; r < B * T; r++)
        for (int64_t c = 0; c < kvd; c++) {
            float want = c < h ? v[r * kvd + c] : (r % T == T - 1 ? 0.0f : v[(r + 1) * kvd + c]);
            bad += dvv[r * kvd + c] != want;
        }
    CHECK(bad == 0, "value_shift_backward: %d wrong", bad);
    /* split / merge of q|k rows */
    const int64_t qd = 21, kd = 10;
    float *qk = rnd(N * (qd + kd), -1, 1), *q = th_alloc(N * qd), *k = th_alloc(N * kd), *qk2 = th_alloc(N * (qd + kd));
    be->split_qk(be, q, k, qk, N, qd, kd);
    bad = 0;
    for (int64_t r = 0; r < N; r++) {
        for (int64_t c = 0; c < qd; c++) bad += q[r * qd + c] != qk[r * (qd + kd) + c];
        for (int64_t c = 0; c < kd; c++) bad += k[r * kd + c] != qk[r * (qd + kd) + qd + c];
    }
    CHECK(bad == 0, "split_qk: %d wrong", bad);
    be->merge_qk(be, qk2, q, k, N, qd, kd);
    CHECK(memcmp(qk2, qk, 4 * (size_t)(N * (qd + kd))) == 0, "merge_qk inverts split_qk");
    free(vv), free(v), free(dvv), free(qk), free(q), free(k), free(qk2);
}

/* Tokens routed to E experts or skipped (idx == E), dispatched in expert order: perm lists the
 * routed tokens expert by expert, row_of[i] is token i's row there. */
static int64_t dispatch(const int32_t *idx, int64_t n, int64_t E, int32_t *perm, int32_t *row_of) {
    int64_t r = 0;
    for (int64_t e = 0; e < E; e++)
        for (int64_t i = 0; i < n; i++)
            if (idx[i] == e) {
                perm[r] = (int32_t)i;
                row_of[i] = (int32_t)r++;
            }
    for (int64_t i = 0; i < n; i++)
        if (idx[i] == E) row_of[i] = (int32_t)r++; /* the skip class's rows (not read) */
    return r;
}

static void test_router_experts(void) {
    const int64_t n = 263, E = 4, E1 = E + 1, d = 131;
    float *probs = rnd(n * E1, 0.01f, 1), *dgate = rnd(n, -1, 1);
    int32_t *idx = ids_rand(n, E1, 9);
    { /* route_stats: double, serial */
        double psum[5], spread = 0, rp[5] = {0}, rs = 0;
        be->route_stats(be, psum, &spread, probs, E1, n, E);
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = 0; e < E; e++) rp[e] += probs[i * E1 + e];
        for (int64_t i = 0; i < n; i++)
            for (int64_t e = 0; e < E; e++) rs += pow(probs[i * E1 + e] - rp[e] / (double)n, 2);
        double err = fabs(spread - rs) / rs;
        for (int64_t e = 0; e < E; e++) err = fmax(err, fabs(psum[e] - rp[e]) / rp[e]);
        CHECK_ERR("route_stats", err, 1e-12);
    }
    { /* router_dlogits over all E + 1 columns and over the first E (the linear router) */
        for (int64_t ncols = E; ncols <= E1; ncols++) {
            float *dl = th_alloc(n * ncols);
            double *ref = th_alloc_d(n * ncols);
            be->router_dlogits(be, dl, probs, E1, dgate, idx, n, ncols);
            for (int64_t i = 0; i < n; i++)
                for (int64_t e = 0; e < ncols; e++)
                    ref[i * ncols + e] = (double)probs[i * E1 + e] * dgate[i] *
                                         ((e == idx[i] ? 1.0 : 0.0) - (double)probs[i * E1 + idx[i]]);
            rel(ncols == E ? "router_dlogits (E columns)" : "router_dlogits (E+1 columns)", dl, ref, n * ncols, TOL);
            free(dl), free(ref);
        }
    }
    int32_t *perm = malloc(4 * (size_t)n), *row_of = malloc(4 * (size_t)n);
    const int64_t rows = dispatch(idx, n, E, perm, row_of);
    int64_t routed = 0;
    for (int64_t i = 0; i < n; i++) routed += idx[i] < E;
    CHECK(rows == n && routed > 0 && routed < n, "test routing has routed (%lld) and skipped tokens", (long long)routed);
    float *z = rnd(n * d, -1, 1), *gate = rnd(n, 0.1f, 1), *ye = rnd(n * d, -1, 1), *dm = rnd(n * d, -1, 1);
    double *ref = th_alloc_d(n * d);
    { /* gather_rows: exact */
        float *xe = rnd(n * d, -1, 1);
        be->gather_rows(be, xe, z, perm, routed, d);
        int bad = 0;
        for (int64_t r = 0; r < routed; r++)
            for (int64_t j = 0; j < d; j++) bad += xe[r * d + j] != z[perm[r] * d + j];
        CHECK(bad == 0, "gather_rows: %d wrong", bad);
        free(xe);
    }
    for (int identity = 0; identity < 2; identity++) {
        float *m = th_alloc(n * d);
        be->moe_combine_forward(be, m, ye, z, idx, gate, row_of, n, d, E, identity);
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < d; j++) {
                double g = idx[i] < E || identity ? gate[i] : 0.0;
                ref[i * d + j] = g * (idx[i] < E ? ye[row_of[i] * d + j] : z[i * d + j]);
            }
        rel(identity ? "moe_combine_forward identity" : "moe_combine_forward zero-skip", m, ref, n * d, TOL);
        /* backward: dye rows of routed tokens, dz rows of skipped ones; routed dz rows stay as they were */
        float *dye = rnd(n * d, -1, 1), *dz = rnd(n * d, -1, 1), *dz0 = dup(dz, n * d), *dg = rnd(n, -1, 1);
        be->moe_combine_backward(be, dye, dz, dg, dm, ye, z, idx, gate, row_of, n, d, E, identity);
        double err_dye = 0, err_dz = 0, err_dg = 0;
        int touched = 0;
        for (int64_t i = 0; i < n; i++) {
            double s = 0;
            for (int64_t j = 0; j < d; j++) {
                if (idx[i] < E) {
                    err_dye = fmax(err_dye, fabs(dye[row_of[i] * d + j] - (double)gate[i] * dm[i * d + j]));
                    s += (double)dm[i * d + j] * ye[row_of[i] * d + j];
                    touched += dz[i * d + j] != dz0[i * d + j];
                } else {
                    double want = identity ? (double)gate[i] * dm[i * d + j] : 0.0;
                    err_dz = fmax(err_dz, fabs(dz[i * d + j] - want));
                    if (identity) s += (double)dm[i * d + j] * z[i * d + j];
                }
            }
            err_dg = fmax(err_dg, fabs(dg[i] - s) / 10.0); /* |dgate| ~ sqrt(d) / 2: relative to ~10 */
        }
        CHECK_ERR(identity ? "moe_combine_backward dye (identity)" : "moe_combine_backward dye", err_dye, TOL);
        CHECK_ERR(identity ? "moe_combine_backward dz (identity)" : "moe_combine_backward dz", err_dz, TOL);
        CHECK_ERR(identity ? "moe_combine_backward dgate (identity)" : "moe_combine_backward dgate", err_dg, TOL);
        CHECK(touched == 0, "moe_combine_backward: %d dz entries of routed tokens changed", touched);
        /* scatter_rows fills exactly the routed tokens' dz rows */
        memcpy(dz0, dz, 4 * (size_t)(n * d));
        be->scatter_rows(be, dz, dye, idx, row_of, n, d, E);
        int bad = 0;
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < d; j++)
                bad += dz[i * d + j] != (idx[i] < E ? dye[row_of[i] * d + j] : dz0[i * d + j]);
        CHECK(bad == 0, "scatter_rows: %d wrong", bad);
        free(m), free(dye), free(dz), free(dz0), free(dg);
    }
    free(probs), free(dgate), free(idx), free(perm), free(row_of), free(z), free(gate), free(ye), free(dm), free(ref);
}

static void test_optimizer(void) {
    const int64_t n = 40013; /* several blocks of the parallel loops and of the sum of squares */
    float *p = rnd(n, -1, 1), *g = rnd(n, -2, 2), *m = rnd(n, -0.1f, 0.1f), *v = rnd(n, 0, 0.01f);
    float *p0 = dup(p, n), *m0 = dup(m, n), *v0 = dup(v, n);
    double *rp = th_alloc_d(n), *rm = th_alloc_d(n), *rv = th_alloc_d(n);
    const float gs = 0.8f, w1 = 0.1f, b2 = 0.95f, w2 = 0.05f, neg = -0.003f, bc2 = 0.3f, eps = 1e-8f, decay = 0.999f;
    be->adamw(be, p, g, m, v, n, gs, w1, b2, w2, neg, bc2, eps, decay);
    for (int64_t i = 0; i < n; i++) {
        double gi = (double)g[i] * gs;
        rm[i] = m0[i] + w1 * (gi - m0[i]);
        rv[i] = v0[i] * (double)b2 + w2 * gi * gi;
        rp[i] = p0[i] * (double)decay + neg * (rm[i] / (sqrt(rv[i]) / bc2 + eps));
    }
    rel_delta("adamw p", p, p0, rp, n, TOL);
    rel("adamw m", m, rm, n, TOL);
    rel("adamw v", v, rv, n, TOL);
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        float *buf = rnd(n, -1, 1), *buf0 = dup(buf, n), *u = th_alloc(n);
        const float beta = 0.95f;
        be->muon_momentum(be, u, buf, g, n, gs, beta, (float)(1.0 - 0.95), nesterov);
        for (int64_t i = 0; i < n; i++) {
            double gk = (double)g[i] * gs;
            rm[i] = buf0[i] + (1.0 - beta) * (gk - buf0[i]);
            rp[i] = nesterov ? gk + beta * (rm[i] - gk) : rm[i];
        }
        rel(nesterov ? "muon_momentum buf (nesterov)" : "muon_momentum buf", buf, rm, n, TOL);
        rel(nesterov ? "muon_momentum u (nesterov)" : "muon_momentum u", u, rp, n, TOL);
        free(buf), free(buf0), free(u);
    }
    { /* sqnorm into backend memory */
        double out = -1, s = 0;
        be->sqnorm(be, &out, g, n);
        for (int64_t i = 0; i < n; i++) s += (double)g[i] * g[i];
        CHECK_ERR("sqnorm", fabs(out - s) / s, 1e-12);
        CHECK(out == zaya_sumsq_f64(g, n), "sqnorm is zaya_sumsq_f64 bit for bit");
    }
    { /* normalize_batched: every matrix to unit Frobenius norm (plus eps) */
        const int64_t batch = 3, mn = 1007;
        float *x = rnd(batch * mn, -3, 3), *x0 = dup(x, batch * mn);
        double *ref = th_alloc_d(batch * mn);
        be->normalize_batched(be, x, batch, mn, 1e-7);
        for (int64_t b = 0; b < batch; b++) {
            double s = 0;
            for (int64_t i = 0; i < mn; i++) s += (double)x0[b * mn + i] * x0[b * mn + i];
            for (int64_t i = 0; i < mn; i++) ref[b * mn + i] = x0[b * mn + i] / (sqrt(s) + 1e-7);
        }
        rel("normalize_batched", x, ref, batch * mn, TOL);
        free(x), free(x0), free(ref);
    }
    free(p), free(g), free(m), free(v), free(p0), free(m0), free(v0), free(rp), free(rm), free(rv);
}

int main(void) {
    CHECK(zaya_backend_cpu_init(&be) == ZAYA_OK && be, "zaya_backend_cpu_init: %s", zaya_error_message());
    if (!be) return th_finish("backend_cpu");
    test_table_and_memory();
    test_gemm();
    test_gemm_batched();
    test_kernel_wrappers();
    test_elementwise();
    test_embedding();
    test_cca_pieces();
    test_router_experts();
    test_optimizer();
    CHECK(be->sync(be) == ZAYA_OK, "no pending error at the end (%s)", zaya_error_message());
    zaya_backend_free(be);
    zaya_backend_free(NULL);
    return th_finish("backend_cpu");
}

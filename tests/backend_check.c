/* Every operation of zaya/backend.h on two backends with the same inputs (backend_check.h).
 *
 * Bounds (largest error of an output over max(max |ref|, 1e-3)):
 *   exact (0)  copies and layouts (value shift, split / merge of q|k, gather / scatter, transpose),
 *              bf16 conversion (round to nearest even is one answer), integer outputs (top-1 indices
 *              and counts) and the chosen gates, the memory calls
 *   1e-5       f32 elementwise work, norms, activations, softmax, convolutions, RoPE, L2 norm,
 *              cross-entropy, the column sums and other reductions (another summation order over a
 *              few hundred rows moves a sum by ~1e-6 of its scale), f32 GEMMs (no TF32: f32 math,
 *              K <= 45), the optimizer updates, the route statistics (double over f32 inputs)
 *   1e-4       bf16 GEMMs: both sides multiply the same bf16 operands with f32 accumulation, so only
 *              the accumulation order differs (~1e-6); the bound leaves room for the device's
 *              tensor-core accumulation while an output rounded to bf16 (~4e-3) would still fail
 *   1e-4       attention: online softmax with exp over tiles of another size
 *   1e-10      sqnorm: a double sum of squares in another (fixed) order */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_check.h"
#include "testutil.h"
#include "zaya/bf16.h"
#include "zaya/status.h"

#define MAXBUF 32

typedef struct dbuf {
    void *p[2]; /* [0] the backend under test, [1] the reference */
    size_t bytes;
} dbuf;

typedef struct hc {
    zaya_backend *be[2];
    void *owned[2][MAXBUF];
    int nowned;
    uint64_t stream;
    zaya_status st; /* first failed memory call */
    double err;     /* largest error over the compared outputs */
} hc;

static void note(hc *c, zaya_status s) {
    if (s != ZAYA_OK && c->st == ZAYA_OK) c->st = s;
}

/* A buffer on both backends holding host (zeroed when host is NULL). */
static dbuf hc_buf(hc *c, const void *host, size_t bytes) {
    dbuf b = {{NULL, NULL}, bytes};
    if (c->nowned >= MAXBUF) {
        note(c, zaya_error_set(ZAYA_EINVAL, "backend check: more than %d buffers in one check", MAXBUF));
        return b;
    }
    for (int s = 0; s < 2; s++) {
        note(c, c->be[s]->alloc(c->be[s], &b.p[s], bytes));
        c->owned[s][c->nowned] = b.p[s];
        if (host && b.p[s]) note(c, c->be[s]->upload(c->be[s], b.p[s], host, bytes));
    }
    c->nowned++;
    return b;
}

static float *host_rand(hc *c, int64_t n, float lo, float hi) {
    float *x = th_alloc(n);
    th_fill(x, n, 4321, c->stream++, lo, hi);
    return x;
}
static dbuf hc_rand(hc *c, int64_t n, float lo, float hi) {
    float *x = host_rand(c, n, lo, hi);
    dbuf b = hc_buf(c, x, (size_t)n * sizeof(float));
    free(x);
    return b;
}
static dbuf hc_bf16(hc *c, int64_t n) {
    float *x = host_rand(c, n, -1, 1);
    uint16_t *h = malloc(sizeof(uint16_t) * (size_t)n);
    zaya_f32_to_bf16_n(h, x, (size_t)n);
    dbuf b = hc_buf(c, h, (size_t)n * sizeof(uint16_t));
    free(x);
    free(h);
    return b;
}
static dbuf hc_zero(hc *c, size_t bytes) { return hc_buf(c, NULL, bytes); }
/* n ints in [0, hi) */
static int32_t *host_ints(hc *c, int64_t n, int64_t hi) {
    int32_t *v = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
    float *u = host_rand(c, n, 0, (float)hi);
    for (int64_t i = 0; i < n; i++) v[i] = u[i] < (float)hi ? (int32_t)u[i] : (int32_t)hi - 1;
    free(u);
    return v;
}
static dbuf hc_ints(hc *c, const int32_t *v, int64_t n) { return hc_buf(c, v, sizeof(int32_t) * (size_t)n); }

/* Downloads both copies of b into host memory (NULL on a failed call). */
static int fetch(hc *c, dbuf b, void **t, void **r) {
    *t = malloc(b.bytes ? b.bytes : 1);
    *r = malloc(b.bytes ? b.bytes : 1);
    if (!b.p[0] || !b.p[1]) return 0;
    zaya_status s0 = c->be[0]->download(c->be[0], *t, b.p[0], b.bytes);
    zaya_status s1 = c->be[1]->download(c->be[1], *r, b.p[1], b.bytes);
    note(c, s0);
    note(c, s1);
    return s0 == ZAYA_OK && s1 == ZAYA_OK;
}
static void hc_cmp_f32(hc *c, dbuf b, int64_t n) {
    void *t, *r;
    if (fetch(c, b, &t, &r)) {
        const double e = th_rel_err_ff(t, r, n, 1e-3);
        if (!(e <= c->err)) c->err = isnan(e) ? INFINITY : e;
    }
    free(t);
    free(r);
}
static void hc_cmp_f64(hc *c, dbuf b, int64_t n) {
    void *t, *r;
    if (fetch(c, b, &t, &r)) {
        const double *a = t, *ref = r;
        double maxref = 1e-3, maxd = 0;
        for (int64_t i = 0; i < n; i++) {
            if (fabs(ref[i]) > maxref) maxref = fabs(ref[i]);
            double d = fabs(a[i] - ref[i]);
            if (!(d <= maxd)) maxd = isnan(d) ? INFINITY : d;
        }
        if (maxd / maxref > c->err) c->err = maxd / maxref;
    }
    free(t);
    free(r);
}
static void hc_cmp_exact(hc *c, dbuf b) {
    void *t, *r;
    if (fetch(c, b, &t, &r) && memcmp(t, r, b.bytes) != 0) c->err = INFINITY;
    free(t);
    free(r);
}

/* Runs an operation on both backends; inside, F(b) etc. are buffer b on the current side. */
#define BOTH(OP, ...)                                                                  \
    do {                                                                               \
        for (int s_ = 0; s_ < 2; s_++) c->be[s_]->OP(c->be[s_], __VA_ARGS__);          \
    } while (0)
#define F(b) ((float *)(b).p[s_])
#define I(b) ((int32_t *)(b).p[s_])
#define D(b) ((double *)(b).p[s_])
#define H(b) ((uint16_t *)(b).p[s_])
#define L(b) ((int64_t *)(b).p[s_])

/* Shapes: odd on purpose, and above the CPU kernels' parallel thresholds where rows are reduced. */
enum { NR = 301, ND = 131 };

/* ---- the checks ---- */
static void ck_memory(hc *c) {
    /* on the backend under test only: zero-filled alloc, upload / copy / zero / download */
    zaya_backend *be = c->be[0];
    const size_t bytes = 10007;
    unsigned char *h = malloc(bytes), *back = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) h[i] = (unsigned char)(i * 151 + 3);
    void *a = NULL, *b = NULL;
    note(c, be->alloc(be, &a, bytes));
    note(c, be->alloc(be, &b, bytes));
    if (a && b) {
        note(c, be->download(be, back, a, bytes));
        for (size_t i = 0; i < bytes; i++)
            if (back[i] != 0) c->err = INFINITY;
        note(c, be->upload(be, a, h, bytes));
        note(c, be->copy(be, b, a, bytes));
        note(c, be->download(be, back, b, bytes));
        if (memcmp(back, h, bytes) != 0) c->err = INFINITY;
        note(c, be->zero(be, b, bytes / 2));
        note(c, be->download(be, back, b, bytes));
        for (size_t i = 0; i < bytes; i++)
            if (back[i] != (i < bytes / 2 ? 0 : h[i])) c->err = INFINITY;
        note(c, be->reserve(be, (size_t)1 << 20));
        note(c, be->sync(be));
    }
    be->free(be, a);
    be->free(be, b);
    free(h);
    free(back);
}

static void gemm_all(hc *c, int bf16) {
    const int64_t Ms[2] = {37, 7}, N = 29, K = 45;
    const zaya_dtype dt = bf16 ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
    /* vary_m products below 16 rows run on padded copies in the scratch (backend.h), as at plan time */
    for (int s = 0; s < 2; s++) note(c, c->be[s]->reserve(c->be[s], (size_t)1 << 20));
    for (int mi = 0; mi < 2; mi++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int beta = 0; beta < 2; beta++)
                    for (int vary = 0; vary < 2; vary++) {
                        const int64_t M = Ms[mi];
                        c->nowned = 0; /* released below, per shape */
                        dbuf a = bf16 ? hc_bf16(c, M * K) : hc_rand(c, M * K, -1, 1);
                        dbuf b = bf16 ? hc_bf16(c, K * N) : hc_rand(c, K * N, -1, 1);
                        dbuf o = hc_rand(c, M * N, -1, 1);
                        BOTH(gemm, dt, ta, tb, M, N, K, a.p[s_], b.p[s_], F(o), (float)beta, vary);
                        hc_cmp_f32(c, o, M * N);
                        for (int s = 0; s < 2; s++)
                            for (int j = 0; j < c->nowned; j++) c->be[s]->free(c->be[s], c->owned[s][j]);
                        c->nowned = 0;
                    }
}
static void ck_gemm_f32(hc *c) { gemm_all(c, 0); }
static void ck_gemm_bf16(hc *c) { gemm_all(c, 1); }

static void gemm_batched_all(hc *c, int bf16) {
    const int64_t batch = 3, M = 13, N = 19, K = 23;
    const zaya_dtype dt = bf16 ? ZAYA_DTYPE_BF16 : ZAYA_DTYPE_F32;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int beta = 0; beta < 2; beta++)
                for (int gap = 0; gap < 2; gap++) {
                    const int64_t sa = M * K + 5 * gap, sb = K * N + 3 * gap, sc = M * N + 7 * gap;
                    c->nowned = 0;
                    dbuf a = bf16 ? hc_bf16(c, batch * sa) : hc_rand(c, batch * sa, -1, 1);
                    dbuf b = bf16 ? hc_bf16(c, batch * sb) : hc_rand(c, batch * sb, -1, 1);
                    dbuf o = hc_rand(c, batch * sc, -1, 1);
                    BOTH(gemm_batched, dt, ta, tb, batch, M, N, K, a.p[s_], sa, b.p[s_], sb, F(o), sc, 0.7f,
                         (float)beta);
                    hc_cmp_f32(c, o, batch * sc);
                    for (int s = 0; s < 2; s++)
                        for (int j = 0; j < c->nowned; j++) c->be[s]->free(c->be[s], c->owned[s][j]);
                    c->nowned = 0;
                }
}
static void ck_gemm_batched_f32(hc *c) { gemm_batched_all(c, 0); }
static void ck_gemm_batched_bf16(hc *c) { gemm_batched_all(c, 1); }

static void ck_to_bf16(hc *c) {
    const int64_t n = 4099;
    dbuf x = hc_rand(c, n, -100, 100), h = hc_zero(c, 2 * (size_t)n);
    BOTH(to_bf16, H(h), F(x), n);
    hc_cmp_exact(c, h);
}

static void ck_rmsnorm_forward(hc *c) {
    dbuf x = hc_rand(c, NR * ND, -2, 2), w = hc_rand(c, ND, 0.5f, 1.5f);
    dbuf y = hc_zero(c, 4 * NR * ND), r = hc_zero(c, 4 * NR);
    BOTH(rmsnorm_forward, F(y), F(r), F(x), F(w), NR, ND, 1e-6f);
    hc_cmp_f32(c, y, NR * ND);
    hc_cmp_f32(c, r, NR);
}
static void ck_rmsnorm_backward(hc *c) {
    dbuf x = hc_rand(c, NR * ND, -2, 2), w = hc_rand(c, ND, 0.5f, 1.5f), dy = hc_rand(c, NR * ND, -1, 1);
    dbuf r = hc_rand(c, NR, 0.5f, 2), dx = hc_zero(c, 4 * NR * ND), dw = hc_rand(c, ND, -1, 1);
    BOTH(rmsnorm_backward, F(dx), F(dw), F(dy), F(x), F(w), F(r), NR, ND);
    hc_cmp_f32(c, dx, NR * ND);
    hc_cmp_f32(c, dw, ND);
}
static void ck_gelu_forward(hc *c) {
    dbuf x = hc_rand(c, NR * ND, -5, 5), y = hc_zero(c, 4 * NR * ND);
    BOTH(gelu_forward, F(y), F(x), NR * ND);
    hc_cmp_f32(c, y, NR * ND);
}
static void ck_gelu_backward(hc *c) {
    dbuf x = hc_rand(c, NR * ND, -5, 5), dy = hc_rand(c, NR * ND, -1, 1), dx = hc_zero(c, 4 * NR * ND);
    BOTH(gelu_backward, F(dx), F(dy), F(x), NR * ND);
    hc_cmp_f32(c, dx, NR * ND);
}
static void ck_swiglu_forward(hc *c) {
    dbuf gu = hc_rand(c, NR * 2 * ND, -5, 5), y = hc_zero(c, 4 * NR * ND);
    BOTH(swiglu_forward, F(y), F(gu), NR, ND);
    hc_cmp_f32(c, y, NR * ND);
}
static void ck_swiglu_backward(hc *c) {
    dbuf gu = hc_rand(c, NR * 2 * ND, -5, 5), dy = hc_rand(c, NR * ND, -1, 1), dgu = hc_zero(c, 8 * NR * ND);
    BOTH(swiglu_backward, F(dgu), F(dy), F(gu), NR, ND);
    hc_cmp_f32(c, dgu, NR * 2 * ND);
}
static void ck_softmax_forward(hc *c) {
    dbuf x = hc_rand(c, NR * ND, -8, 8), y = hc_zero(c, 4 * NR * ND);
    BOTH(softmax_forward, F(y), F(x), NR, ND);
    hc_cmp_f32(c, y, NR * ND);
}
static void ck_softmax_ld_forward(hc *c) {
    /* rows 3 floats longer than the softmax: those columns come back zero over a non-zero start */
    const int64_t ld = ND + 3;
    dbuf x = hc_rand(c, NR * ND, -8, 8), y = hc_rand(c, NR * ld, -1, 1);
    BOTH(softmax_ld_forward, F(y), ld, F(x), NR, ND);
    hc_cmp_f32(c, y, NR * ld);
}
static void ck_add(hc *c) {
    dbuf x = hc_rand(c, NR * ND, -1, 1), y = hc_rand(c, NR * ND, -1, 1);
    BOTH(add, F(y), F(x), NR * ND);
    hc_cmp_f32(c, y, NR * ND);
}
static void ck_scale(hc *c) {
    dbuf x = hc_rand(c, NR * ND, -1, 1);
    BOTH(scale, F(x), -0.37f, NR * ND);
    hc_cmp_f32(c, x, NR * ND);
}
static void ck_add_bias(hc *c) {
    dbuf y = hc_rand(c, NR * ND, -1, 1), b = hc_rand(c, ND, -1, 1);
    BOTH(add_bias, F(y), F(b), NR, ND);
    hc_cmp_f32(c, y, NR * ND);
}
static void ck_colsum_add(hc *c) {
    dbuf src = hc_rand(c, NR * ND, -1, 1), dst = hc_rand(c, ND, -1, 1);
    BOTH(colsum_add, F(dst), F(src), NR, ND);
    hc_cmp_f32(c, dst, ND);
}
static void ck_merge_forward(hc *c) {
    dbuf a = hc_rand(c, NR * ND, -1, 1), b = hc_rand(c, NR * ND, -1, 1), y = hc_zero(c, 4 * NR * ND),
         y2 = hc_zero(c, 4 * NR * ND);
    dbuf ab = hc_rand(c, ND, -1, 1), as = hc_rand(c, ND, 0.5f, 1.5f), bb = hc_rand(c, ND, -1, 1),
         bs = hc_rand(c, ND, 0.5f, 1.5f);
    BOTH(merge_forward, F(y), F(a), F(ab), F(as), F(b), F(bb), F(bs), NR, ND);
    BOTH(merge_forward, F(y2), F(a), NULL, NULL, F(b), NULL, NULL, NR, ND);
    hc_cmp_f32(c, y, NR * ND);
    hc_cmp_f32(c, y2, NR * ND);
}
static void ck_merge_backward(hc *c) {
    dbuf a = hc_rand(c, NR * ND, -1, 1), b = hc_rand(c, NR * ND, -1, 1), dy = hc_rand(c, NR * ND, -1, 1);
    dbuf ab = hc_rand(c, ND, -1, 1), as = hc_rand(c, ND, 0.5f, 1.5f), bb = hc_rand(c, ND, -1, 1),
         bs = hc_rand(c, ND, 0.5f, 1.5f);
    dbuf da = hc_zero(c, 4 * NR * ND), db = hc_rand(c, NR * ND, -1, 1), da2 = hc_zero(c, 4 * NR * ND),
         db2 = hc_rand(c, NR * ND, -1, 1);
    dbuf g0 = hc_rand(c, ND, -1, 1), g1 = hc_rand(c, ND, -1, 1), g2 = hc_rand(c, ND, -1, 1), g3 = hc_rand(c, ND, -1, 1);
    BOTH(merge_backward, F(da), F(db), 1, F(dy), F(a), F(ab), F(as), F(b), F(bb), F(bs), F(g0), F(g1), F(g2), F(g3),
         NR, ND);
    BOTH(merge_backward, F(da2), F(db2), 0, F(dy), F(a), NULL, NULL, F(b), NULL, NULL, NULL, NULL, NULL, NULL, NR, ND);
    hc_cmp_f32(c, da, NR * ND);
    hc_cmp_f32(c, db, NR * ND);
    hc_cmp_f32(c, da2, NR * ND);
    hc_cmp_f32(c, db2, NR * ND);
    hc_cmp_f32(c, g0, ND);
    hc_cmp_f32(c, g1, ND);
    hc_cmp_f32(c, g2, ND);
    hc_cmp_f32(c, g3, ND);
}

enum { VOCAB = 23 };
static void ck_embed_forward(hc *c) {
    int32_t *ids = host_ints(c, NR, VOCAB);
    dbuf id = hc_ints(c, ids, NR), t = hc_rand(c, VOCAB * ND, -1, 1), bias = hc_rand(c, ND, -0.5f, 0.5f),
         sc = hc_rand(c, ND, 0.5f, 1.5f), x = hc_zero(c, 4 * NR * ND);
    BOTH(embed_forward, F(x), F(t), I(id), F(bias), F(sc), NR, ND);
    hc_cmp_f32(c, x, NR * ND);
    free(ids);
}
static void ck_embed_backward(hc *c) {
    int32_t *ids = host_ints(c, NR, VOCAB), *sorted = malloc(4 * NR), seg[VOCAB + 1];
    int64_t nseg = 0, k = 0;
    for (int32_t v = 0; v < VOCAB; v++) {
        const int64_t start = k;
        for (int64_t i = 0; i < NR; i++)
            if (ids[i] == v) sorted[k++] = (int32_t)i;
        if (k > start) seg[nseg++] = (int32_t)start;
    }
    seg[nseg] = (int32_t)k;
    dbuf id = hc_ints(c, ids, NR), so = hc_ints(c, sorted, NR), sg = hc_ints(c, seg, nseg + 1);
    dbuf t = hc_rand(c, VOCAB * ND, -1, 1), bias = hc_rand(c, ND, -0.5f, 0.5f), sc = hc_rand(c, ND, 0.5f, 1.5f);
    dbuf dx = hc_rand(c, NR * ND, -1, 1), dt = hc_rand(c, VOCAB * ND, -1, 1), db = hc_rand(c, ND, -1, 1),
         ds = hc_rand(c, ND, -1, 1), de = hc_zero(c, 4 * NR * ND);
    BOTH(embed_backward, F(dt), F(db), F(ds), F(de), F(dx), F(t), I(id), F(bias), F(sc), I(so), I(sg), nseg, NR, ND);
    hc_cmp_f32(c, dt, VOCAB * ND);
    hc_cmp_f32(c, db, ND);
    hc_cmp_f32(c, ds, ND);
    hc_cmp_f32(c, de, NR * ND);
    free(ids);
    free(sorted);
}

/* convolutions: B sequences of T rows, C channels, k taps, left padding */
enum { CB = 2, CT = 37, CC = 36, CK = 4, CG = 9, CPAD = 3, CTOUT = CT + CPAD - CK + 1 };
static void ck_conv_dw_forward(hc *c) {
    dbuf x = hc_rand(c, CB * CT * CC, -1, 1), w = hc_rand(c, CC * CK, -1, 1), b = hc_rand(c, CC, -1, 1),
         y = hc_zero(c, 4 * CB * CTOUT * CC);
    BOTH(conv_dw_forward, F(y), F(x), F(w), F(b), CB, CT, CC, CK, CPAD);
    hc_cmp_f32(c, y, CB * CTOUT * CC);
}
static void ck_conv_dw_backward(hc *c) {
    dbuf x = hc_rand(c, CB * CT * CC, -1, 1), w = hc_rand(c, CC * CK, -1, 1), dy = hc_rand(c, CB * CTOUT * CC, -1, 1);
    dbuf dx = hc_zero(c, 4 * CB * CT * CC), dw = hc_rand(c, CC * CK, -1, 1), db = hc_rand(c, CC, -1, 1);
    BOTH(conv_dw_backward, F(dx), F(dw), F(db), F(dy), F(x), F(w), CB, CT, CC, CK, CPAD);
    hc_cmp_f32(c, dx, CB * CT * CC);
    hc_cmp_f32(c, dw, CC * CK);
    hc_cmp_f32(c, db, CC);
}
static void conv_grouped_forward_dt(hc *c, zaya_dtype dt) {
    const int64_t cg = CC / CG;
    dbuf x = hc_rand(c, CB * CT * CC, -1, 1), w = hc_rand(c, CC * cg * CK, -1, 1), b = hc_rand(c, CC, -1, 1),
         y = hc_zero(c, 4 * CB * CTOUT * CC);
    BOTH(conv_grouped_forward, dt, F(y), F(x), F(w), F(b), CB, CT, CC, CG, CK, CPAD);
    hc_cmp_f32(c, y, CB * CTOUT * CC);
}
static void conv_grouped_backward_dt(hc *c, zaya_dtype dt) {
    const int64_t cg = CC / CG;
    dbuf x = hc_rand(c, CB * CT * CC, -1, 1), w = hc_rand(c, CC * cg * CK, -1, 1),
         dy = hc_rand(c, CB * CTOUT * CC, -1, 1);
    dbuf dx = hc_zero(c, 4 * CB * CT * CC), dw = hc_rand(c, CC * cg * CK, -1, 1), db = hc_rand(c, CC, -1, 1);
    BOTH(conv_grouped_backward, dt, F(dx), F(dw), F(db), F(dy), F(x), F(w), CB, CT, CC, CG, CK, CPAD);
    hc_cmp_f32(c, dx, CB * CT * CC);
    hc_cmp_f32(c, dw, CC * cg * CK);
    hc_cmp_f32(c, db, CC);
}
static void ck_conv_grouped_forward(hc *c) { conv_grouped_forward_dt(c, ZAYA_DTYPE_F32); }
static void ck_conv_grouped_backward(hc *c) { conv_grouped_backward_dt(c, ZAYA_DTYPE_F32); }
static void ck_conv_grouped_forward_bf16(hc *c) { conv_grouped_forward_dt(c, ZAYA_DTYPE_BF16); }
static void ck_conv_grouped_backward_bf16(hc *c) { conv_grouped_backward_dt(c, ZAYA_DTYPE_BF16); }

/* CCA rows: N rows of (Hq + Hkv) heads of HD channels */
enum { QN = 67, QHQ = 6, QHKV = 2, QHD = 13, QC = (QHQ + QHKV) * QHD };
static void ck_qk_mean_skip_forward(hc *c) {
    dbuf pre = hc_rand(c, QN * QC, -1, 1), raw = hc_rand(c, QN * QC, -1, 1);
    BOTH(qk_mean_skip_forward, F(raw), F(pre), QN, QHQ, QHKV, QHD);
    hc_cmp_f32(c, raw, QN * QC);
}
static void ck_qk_mean_skip_backward(hc *c) {
    dbuf g = hc_rand(c, QN * QC, -1, 1), dp = hc_rand(c, QN * QC, -1, 1);
    BOTH(qk_mean_skip_backward, F(dp), F(g), QN, QHQ, QHKV, QHD);
    hc_cmp_f32(c, dp, QN * QC);
}
static void ck_value_shift_forward(hc *c) {
    dbuf vv = hc_rand(c, 3 * 11 * 26, -1, 1), v = hc_rand(c, 3 * 11 * 26, -1, 1);
    BOTH(value_shift_forward, F(v), F(vv), 3, 11, 26);
    hc_cmp_exact(c, v);
}
static void ck_value_shift_backward(hc *c) {
    dbuf dv = hc_rand(c, 3 * 11 * 26, -1, 1), dvv = hc_rand(c, 3 * 11 * 26, -1, 1);
    BOTH(value_shift_backward, F(dvv), F(dv), 3, 11, 26);
    hc_cmp_exact(c, dvv);
}
static void ck_l2norm_forward(hc *c) {
    dbuf x = hc_rand(c, QN * QC, -1, 1), m = hc_rand(c, QHQ + QHKV, 0.5f, 2), y = hc_zero(c, 4 * QN * QC),
         inv = hc_zero(c, 4 * QN * (QHQ + QHKV));
    BOTH(l2norm_forward, F(y), F(inv), F(x), F(m), 3.6f, QN, QHQ + QHKV, QHD, 1.1920929e-7f);
    hc_cmp_f32(c, y, QN * QC);
    hc_cmp_f32(c, inv, QN * (QHQ + QHKV));
}
static void ck_l2norm_backward(hc *c) {
    const int64_t H = QHQ + QHKV;
    dbuf x = hc_rand(c, QN * QC, -1, 1), m = hc_rand(c, H, 0.5f, 2), dy = hc_rand(c, QN * QC, -1, 1),
         inv = hc_rand(c, QN * H, 0.5f, 2), dx = hc_zero(c, 4 * QN * QC), dm = hc_rand(c, H, -1, 1);
    BOTH(l2norm_backward, F(dx), F(dm), F(dy), F(x), F(inv), F(m), 3.6f, QN, H, QHD);
    hc_cmp_f32(c, dx, QN * QC);
    hc_cmp_f32(c, dm, H);
}
enum { RPOS = 97, RROT = 8 };
static void rope_check(hc *c, int backward) {
    const int64_t half = RROT / 2, H = QHQ + QHKV;
    float *cs = malloc(sizeof(float) * RPOS * half), *sn = malloc(sizeof(float) * RPOS * half);
    for (int64_t p = 0; p < RPOS; p++)
        for (int64_t i = 0; i < half; i++) {
            const double a = (double)p * pow(10000.0, -2.0 * (double)i / RROT);
            cs[p * half + i] = (float)cos(a);
            sn[p * half + i] = (float)sin(a);
        }
    int32_t *pos = host_ints(c, QN, RPOS);
    dbuf dc = hc_buf(c, cs, sizeof(float) * RPOS * half), ds = hc_buf(c, sn, sizeof(float) * RPOS * half),
         dp = hc_ints(c, pos, QN), x = hc_rand(c, QN * QC, -1, 1);
    if (backward) BOTH(rope_backward, F(x), F(dc), F(ds), RROT, I(dp), QN, H, QHD);
    else BOTH(rope_forward, F(x), F(dc), F(ds), RROT, I(dp), QN, H, QHD);
    hc_cmp_f32(c, x, QN * QC);
    free(cs);
    free(sn);
    free(pos);
}
static void ck_rope_forward(hc *c) { rope_check(c, 0); }
static void ck_rope_backward(hc *c) { rope_check(c, 1); }
static void ck_split_qk(hc *c) {
    dbuf qk = hc_rand(c, QN * 31, -1, 1), q = hc_zero(c, 4 * QN * 21), k = hc_zero(c, 4 * QN * 10);
    BOTH(split_qk, F(q), F(k), F(qk), QN, 21, 10);
    hc_cmp_exact(c, q);
    hc_cmp_exact(c, k);
}
static void ck_merge_qk(hc *c) {
    dbuf qk = hc_zero(c, 4 * QN * 31), q = hc_rand(c, QN * 21, -1, 1), k = hc_rand(c, QN * 10, -1, 1);
    BOTH(merge_qk, F(qk), F(q), F(k), QN, 21, 10);
    hc_cmp_exact(c, qk);
}

/* attention: B sequences of T tokens, Hq query heads over Hkv KV heads of D channels; f32 at a head_dim
 * no tile kernel takes, bf16 at one the CPU's AMX kernel takes (where the host has it) */
enum { AB = 2, AT = 45, AHQ = 4, AHKV = 2 };
static void attention_forward_dt(hc *c, zaya_dtype dt, int64_t AD) {
    const int64_t ANQ = AB * AT * AHQ * AD, ANK = AB * AT * AHKV * AD;
    dbuf q = hc_rand(c, ANQ, -1, 1), k = hc_rand(c, ANK, -1, 1), v = hc_rand(c, ANK, -1, 1), o = hc_zero(c, 4 * ANQ),
         lse = hc_zero(c, 4 * AB * AHQ * AT);
    BOTH(attention_forward, dt, F(o), F(lse), F(q), F(k), F(v), AB, AT, AHQ, AHKV, AD, 0.2f);
    hc_cmp_f32(c, o, ANQ);
    hc_cmp_f32(c, lse, AB * AHQ * AT);
}
static void attention_backward_dt(hc *c, zaya_dtype dt, int64_t AD) {
    /* out and lse from the reference's forward, uploaded to both, so that both differentiate the same point */
    const int64_t ANQ = AB * AT * AHQ * AD, ANK = AB * AT * AHKV * AD;
    dbuf q = hc_rand(c, ANQ, -1, 1), k = hc_rand(c, ANK, -1, 1), v = hc_rand(c, ANK, -1, 1), o = hc_zero(c, 4 * ANQ),
         lse = hc_zero(c, 4 * AB * AHQ * AT), dout = hc_rand(c, ANQ, -1, 1);
    zaya_backend *r = c->be[1];
    r->attention_forward(r, dt, o.p[1], lse.p[1], q.p[1], k.p[1], v.p[1], AB, AT, AHQ, AHKV, AD, 0.2f);
    float *ho = malloc((size_t)(4 * ANQ)), *hl = malloc(4 * AB * AHQ * AT);
    note(c, r->download(r, ho, o.p[1], 4 * ANQ));
    note(c, r->download(r, hl, lse.p[1], 4 * AB * AHQ * AT));
    note(c, c->be[0]->upload(c->be[0], o.p[0], ho, 4 * ANQ));
    note(c, c->be[0]->upload(c->be[0], lse.p[0], hl, 4 * AB * AHQ * AT));
    free(ho);
    free(hl);
    dbuf dq = hc_zero(c, 4 * ANQ), dk = hc_zero(c, 4 * ANK), dv = hc_zero(c, 4 * ANK);
    BOTH(attention_backward, dt, F(dq), F(dk), F(dv), F(dout), F(q), F(k), F(v), F(o), F(lse), AB, AT, AHQ, AHKV, AD,
         0.2f);
    hc_cmp_f32(c, dq, ANQ);
    hc_cmp_f32(c, dk, ANK);
    hc_cmp_f32(c, dv, ANK);
}
static void ck_attention_forward(hc *c) { attention_forward_dt(c, ZAYA_DTYPE_F32, 24); }
static void ck_attention_backward(hc *c) { attention_backward_dt(c, ZAYA_DTYPE_F32, 24); }
static void ck_attention_forward_bf16(hc *c) { attention_forward_dt(c, ZAYA_DTYPE_BF16, 32); }
static void ck_attention_backward_bf16(hc *c) { attention_backward_dt(c, ZAYA_DTYPE_BF16, 32); }

/* router and experts: n tokens, E experts and the skip class, rows of width d */
enum { EN = 263, EE = 4, EE1 = EE + 1, ELD = 7 };
static void ck_eda_forward(hc *c) {
    dbuf r = hc_rand(c, NR * ND, -1, 1), g = hc_rand(c, ND, -1, 1), rp = hc_rand(c, NR * ND, -1, 1);
    BOTH(eda_forward, F(r), F(g), F(rp), NR, ND);
    hc_cmp_f32(c, r, NR * ND);
}
static void ck_eda_backward(hc *c) {
    dbuf dr = hc_rand(c, NR * ND, -1, 1), g = hc_rand(c, ND, -1, 1), rp = hc_rand(c, NR * ND, -1, 1),
         prod = hc_zero(c, 4 * NR * ND), drp = hc_zero(c, 4 * NR * ND);
    BOTH(eda_backward, F(prod), F(drp), F(dr), F(rp), F(g), NR, ND);
    hc_cmp_f32(c, prod, NR * ND);
    hc_cmp_f32(c, drp, NR * ND);
}
static void ck_top1(hc *c) {
    dbuf p = hc_rand(c, EN * ELD, 0, 1), b = hc_rand(c, EE1, -0.2f, 0.2f), idx = hc_zero(c, 4 * EN),
         gate = hc_zero(c, 4 * EN), idx2 = hc_zero(c, 4 * EN), gate2 = hc_zero(c, 4 * EN);
    BOTH(top1, I(idx), F(gate), F(p), ELD, F(b), EN, EE1);
    BOTH(top1, I(idx2), F(gate2), F(p), ELD, NULL, EN, EE);
    hc_cmp_exact(c, idx);
    hc_cmp_exact(c, gate);
    hc_cmp_exact(c, idx2);
    hc_cmp_exact(c, gate2);
}
static void ck_top1_count(hc *c) {
    dbuf p = hc_rand(c, EN * ELD, 0, 1), b = hc_rand(c, EE1, -0.2f, 0.2f), n1 = hc_zero(c, 8 * EE1),
         n2 = hc_zero(c, 8 * EE1);
    BOTH(top1_count, L(n1), F(p), ELD, F(b), EN, EE1);
    BOTH(top1_count, L(n2), F(p), ELD, NULL, EN, EE);
    hc_cmp_exact(c, n1);
    hc_cmp_exact(c, n2);
}
static void ck_route_stats(hc *c) {
    dbuf p = hc_rand(c, EN * EE1, 0, 1), ps = hc_zero(c, 8 * EE), sp = hc_zero(c, 8);
    BOTH(route_stats, D(ps), D(sp), F(p), EE1, EN, EE);
    hc_cmp_f64(c, ps, EE);
    hc_cmp_f64(c, sp, 1);
}
static void ck_router_dlogits(hc *c) {
    int32_t *ix = host_ints(c, EN, EE1);
    dbuf p = hc_rand(c, EN * EE1, 0, 1), dg = hc_rand(c, EN, -1, 1), idx = hc_ints(c, ix, EN),
         dl = hc_zero(c, 4 * EN * EE1), dl2 = hc_zero(c, 4 * EN * EE);
    for (int64_t i = 0; i < EN; i++)
        if (ix[i] == EE) ix[i] = 0; /* the linear router never picks the skip column */
    dbuf idx2 = hc_ints(c, ix, EN);
    BOTH(router_dlogits, F(dl), F(p), EE1, F(dg), I(idx), EN, EE1);
    BOTH(router_dlogits, F(dl2), F(p), EE1, F(dg), I(idx2), EN, EE);
    hc_cmp_f32(c, dl, EN * EE1);
    hc_cmp_f32(c, dl2, EN * EE);
    free(ix);
}

/* A routing: idx over E experts and the skip class; perm the routed tokens expert by expert,
 * row_of[i] token i's row (skipped tokens after them). Returns the routed count. */
static int64_t routing(hc *c, int32_t **idx, int32_t **perm, int32_t **row_of) {
    *idx = host_ints(c, EN, EE1);
    *perm = malloc(4 * EN);
    *row_of = malloc(4 * EN);
    int64_t r = 0;
    for (int64_t e = 0; e <= EE; e++)
        for (int64_t i = 0; i < EN; i++)
            if ((*idx)[i] == e) {
                (*perm)[r] = (int32_t)i;
                (*row_of)[i] = (int32_t)r++;
            }
    int64_t routed = 0;
    for (int64_t i = 0; i < EN; i++) routed += (*idx)[i] < EE;
    return routed;
}
static void ck_gather_rows(hc *c) {
    int32_t *ix, *pm, *ro;
    const int64_t routed = routing(c, &ix, &pm, &ro);
    dbuf src = hc_rand(c, EN * ND, -1, 1), perm = hc_ints(c, pm, EN), dst = hc_rand(c, EN * ND, -1, 1);
    BOTH(gather_rows, F(dst), F(src), I(perm), routed, ND);
    hc_cmp_exact(c, dst);
    free(ix), free(pm), free(ro);
}
static void ck_moe_combine_forward(hc *c) {
    int32_t *ix, *pm, *ro;
    (void)routing(c, &ix, &pm, &ro);
    dbuf idx = hc_ints(c, ix, EN), row = hc_ints(c, ro, EN), ye = hc_rand(c, EN * ND, -1, 1), z = hc_rand(c, EN * ND, -1, 1),
         gate = hc_rand(c, EN, 0.1f, 1), m0 = hc_zero(c, 4 * EN * ND), m1 = hc_zero(c, 4 * EN * ND);
    BOTH(moe_combine_forward, F(m0), F(ye), F(z), I(idx), F(gate), I(row), EN, ND, EE, 0);
    BOTH(moe_combine_forward, F(m1), F(ye), F(z), I(idx), F(gate), I(row), EN, ND, EE, 1);
    hc_cmp_f32(c, m0, EN * ND);
    hc_cmp_f32(c, m1, EN * ND);
    free(ix), free(pm), free(ro);
}
static void ck_moe_combine_backward(hc *c) {
    int32_t *ix, *pm, *ro;
    (void)routing(c, &ix, &pm, &ro);
    dbuf idx = hc_ints(c, ix, EN), row = hc_ints(c, ro, EN), ye = hc_rand(c, EN * ND, -1, 1), z = hc_rand(c, EN * ND, -1, 1),
         gate = hc_rand(c, EN, 0.1f, 1), dm = hc_rand(c, EN * ND, -1, 1);
    for (int identity = 0; identity < 2; identity++) {
        /* dz starts random and equal on both sides: rows of routed tokens must stay as they are */
        dbuf dye = hc_rand(c, EN * ND, -1, 1), dz = hc_rand(c, EN * ND, -1, 1), dg = hc_rand(c, EN, -1, 1);
        BOTH(moe_combine_backward, F(dye), F(dz), F(dg), F(dm), F(ye), F(z), I(idx), F(gate), I(row), EN, ND, EE,
             identity);
        hc_cmp_f32(c, dye, EN * ND);
        hc_cmp_f32(c, dz, EN * ND);
        hc_cmp_f32(c, dg, EN);
    }
    free(ix), free(pm), free(ro);
}
static void ck_scatter_rows(hc *c) {
    int32_t *ix, *pm, *ro;
    (void)routing(c, &ix, &pm, &ro);
    dbuf idx = hc_ints(c, ix, EN), row = hc_ints(c, ro, EN), dxe = hc_rand(c, EN * ND, -1, 1),
         dz = hc_rand(c, EN * ND, -1, 1);
    BOTH(scatter_rows, F(dz), F(dxe), I(idx), I(row), EN, ND, EE);
    hc_cmp_exact(c, dz);
    free(ix), free(pm), free(ro);
}

static void ck_xent(hc *c) {
    const int64_t n = 67, V = 517;
    int32_t *t = host_ints(c, n, V);
    t[5] = -1; /* an ignored row */
    dbuf tg = hc_ints(c, t, n), lg = hc_rand(c, n * V, -6, 6), ls = hc_zero(c, 4 * n), lg2 = hc_rand(c, n * V, -6, 6),
         ls2 = hc_zero(c, 4 * n);
    BOTH(xent, F(lg), F(ls), I(tg), n, V, 1.0f / 66);
    BOTH(xent, F(lg2), F(ls2), I(tg), n, V, 0.0f); /* losses only: logits left alone */
    hc_cmp_f32(c, lg, n * V);
    hc_cmp_f32(c, ls, n);
    hc_cmp_exact(c, lg2);
    hc_cmp_f32(c, ls2, n);
    free(t);
}

enum { ON = 40013 };
static void ck_adamw(hc *c) {
    dbuf p = hc_rand(c, ON, -1, 1), g = hc_rand(c, ON, -2, 2), m = hc_rand(c, ON, -0.1f, 0.1f), v = hc_rand(c, ON, 0, 0.01f);
    BOTH(adamw, F(p), F(g), F(m), F(v), ON, 0.8f, 0.1f, 0.95f, 0.05f, -0.3f, 0.3f, 1e-8f, 0.999f);
    hc_cmp_f32(c, p, ON);
    hc_cmp_f32(c, m, ON);
    hc_cmp_f32(c, v, ON);
}
static void ck_muon_momentum(hc *c) {
    dbuf g = hc_rand(c, ON, -2, 2);
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        dbuf buf = hc_rand(c, ON, -1, 1), u = hc_zero(c, 4 * ON);
        BOTH(muon_momentum, F(u), F(buf), F(g), ON, 0.8f, 0.95f, (float)(1.0 - 0.95), nesterov);
        hc_cmp_f32(c, u, ON);
        hc_cmp_f32(c, buf, ON);
    }
}
static void ck_sqnorm(hc *c) {
    dbuf x = hc_rand(c, ON, -2, 2), o = hc_zero(c, 8);
    BOTH(sqnorm, D(o), F(x), ON);
    hc_cmp_f64(c, o, 1);
}
static void ck_normalize_batched(hc *c) {
    dbuf x = hc_rand(c, 5 * 1007, -3, 3);
    BOTH(normalize_batched, F(x), 5, 1007, 1e-7);
    hc_cmp_f32(c, x, 5 * 1007);
}
static void ck_lincomb(hc *c) {
    dbuf x = hc_rand(c, ON, -1, 1), z = hc_rand(c, ON, -1, 1), y = hc_zero(c, 4 * ON);
    BOTH(lincomb, F(y), 0.3f, F(x), -1.7f, F(z), ON);
    BOTH(lincomb, F(x), 0.9f, F(x), 0.2f, F(z), ON); /* in place */
    hc_cmp_f32(c, y, ON);
    hc_cmp_f32(c, x, ON);
}
static void ck_transpose(hc *c) {
    dbuf s = hc_rand(c, NR * ND, -1, 1), d = hc_zero(c, 4 * NR * ND);
    BOTH(transpose, F(d), F(s), NR, ND);
    hc_cmp_exact(c, d);
}
static void ck_muon_apply(hc *c) {
    dbuf p = hc_rand(c, ON, -1, 1), x = hc_rand(c, ON, -1, 1);
    BOTH(muon_apply, F(p), F(x), ON, 0.99f, -0.2f);
    hc_cmp_f32(c, p, ON);
}

typedef struct check {
    const char *name;
    void (*run)(hc *c);
    double bound;
} check;

#define EXACT 0.0
#define F32 1e-5
static const check g_checks[] = {
    {"memory", ck_memory, EXACT},
    {"gemm_f32", ck_gemm_f32, F32},
    {"gemm_bf16", ck_gemm_bf16, 1e-4},
    {"gemm_batched_f32", ck_gemm_batched_f32, F32},
    {"gemm_batched_bf16", ck_gemm_batched_bf16, 1e-4},
    {"to_bf16", ck_to_bf16, EXACT},
    {"rmsnorm_forward", ck_rmsnorm_forward, F32},
    {"rmsnorm_backward", ck_rmsnorm_backward, F32},
    {"gelu_forward", ck_gelu_forward, F32},
    {"gelu_backward", ck_gelu_backward, F32},
    {"swiglu_forward", ck_swiglu_forward, F32},
    {"swiglu_backward", ck_swiglu_backward, F32},
    {"softmax_forward", ck_softmax_forward, F32},
    {"softmax_ld_forward", ck_softmax_ld_forward, F32},
    {"add", ck_add, F32},
    {"scale", ck_scale, F32},
    {"add_bias", ck_add_bias, F32},
    {"colsum_add", ck_colsum_add, F32},
    {"merge_forward", ck_merge_forward, F32},
    {"merge_backward", ck_merge_backward, F32},
    {"embed_forward", ck_embed_forward, F32},
    {"embed_backward", ck_embed_backward, F32},
    {"conv_dw_forward", ck_conv_dw_forward, F32},
    {"conv_dw_backward", ck_conv_dw_backward, F32},
    {"conv_grouped_forward", ck_conv_grouped_forward, F32},
    {"conv_grouped_backward", ck_conv_grouped_backward, F32},
    /* bf16 operands on both sides: exact products of rounded values, f32 sums in two orders */
    {"conv_grouped_forward_bf16", ck_conv_grouped_forward_bf16, F32},
    {"conv_grouped_backward_bf16", ck_conv_grouped_backward_bf16, F32},
    {"qk_mean_skip_forward", ck_qk_mean_skip_forward, F32},
    {"qk_mean_skip_backward", ck_qk_mean_skip_backward, F32},
    {"value_shift_forward", ck_value_shift_forward, EXACT},
    {"value_shift_backward", ck_value_shift_backward, EXACT},
    {"l2norm_forward", ck_l2norm_forward, F32},
    {"l2norm_backward", ck_l2norm_backward, F32},
    {"rope_forward", ck_rope_forward, F32},
    {"rope_backward", ck_rope_backward, F32},
    {"split_qk", ck_split_qk, EXACT},
    {"merge_qk", ck_merge_qk, EXACT},
    {"attention_forward", ck_attention_forward, 1e-4},
    {"attention_backward", ck_attention_backward, 1e-4},
    /* bf16 operands: P and dS rounded from f32 values that differ in their last bits can land one bf16
     * ulp (2^-8 relative) apart */
    {"attention_forward_bf16", ck_attention_forward_bf16, 5e-3},
    {"attention_backward_bf16", ck_attention_backward_bf16, 5e-3},
    {"eda_forward", ck_eda_forward, F32},
    {"eda_backward", ck_eda_backward, F32},
    {"top1", ck_top1, EXACT},
    {"top1_count", ck_top1_count, EXACT},
    {"route_stats", ck_route_stats, F32},
    {"router_dlogits", ck_router_dlogits, F32},
    {"gather_rows", ck_gather_rows, EXACT},
    {"moe_combine_forward", ck_moe_combine_forward, F32},
    {"moe_combine_backward", ck_moe_combine_backward, F32},
    {"scatter_rows", ck_scatter_rows, EXACT},
    {"xent", ck_xent, F32},
    {"adamw", ck_adamw, F32},
    {"muon_momentum", ck_muon_momentum, F32},
    {"sqnorm", ck_sqnorm, 1e-10},
    {"normalize_batched", ck_normalize_batched, F32},
    {"lincomb", ck_lincomb, F32},
    {"transpose", ck_transpose, EXACT},
    {"muon_apply", ck_muon_apply, F32},
};
#define NCHECKS ((int)(sizeof g_checks / sizeof g_checks[0]))

int zaya_backend_check_count(void) { return NCHECKS; }
const char *zaya_backend_check_name(int i) { return i >= 0 && i < NCHECKS ? g_checks[i].name : NULL; }

/* The operation of the list (zaya/backend.h) a check is named after: the longest operation name that
 * is the check's name or its prefix before a '_' suffix ("gemm_batched_bf16": gemm_batched). */
int zaya_backend_check_op_of(int i) {
    const char *name = zaya_backend_check_name(i);
    int best = -1;
    size_t best_len = 0;
    for (int op = 0; name && op < ZAYA_BACKEND_NOPS; op++) {
        const char *o = zaya_backend_op_name((zaya_backend_op)op);
        const size_t n = strlen(o);
        if (strncmp(name, o, n) == 0 && (name[n] == 0 || name[n] == '_') && n > best_len) best = op, best_len = n;
    }
    return best;
}

int zaya_backend_check_uncovered(void) {
    for (int op = 0; op < ZAYA_BACKEND_NOPS; op++) {
        int covered = 0;
        for (int i = 0; i < NCHECKS && !covered; i++) covered = zaya_backend_check_op_of(i) == op;
        if (!covered) return op;
    }
    return -1;
}

int zaya_backend_check_op(zaya_backend *test, zaya_backend *ref, int i, double *err, double *bound) {
    *err = INFINITY;
    *bound = i >= 0 && i < NCHECKS ? g_checks[i].bound : 0.0;
    if (i < 0 || i >= NCHECKS) return -1;
    const int op = zaya_backend_check_op_of(i);
    for (int s = 0; s < 2 && op >= 0; s++)
        if (!zaya_backend_supports(s ? ref : test, (zaya_backend_op)op)) {
            zaya_error_set(ZAYA_EUNSUPPORTED, "backend %s does not implement %s", (s ? ref : test)->name,
                           zaya_backend_op_name((zaya_backend_op)op));
            return -1;
        }
    hc c = {.be = {test, ref}, .stream = 1000 * (uint64_t)(i + 1)};
    g_checks[i].run(&c);
    for (int s = 0; s < 2; s++) note(&c, c.be[s]->sync(c.be[s]));
    for (int s = 0; s < 2; s++)
        for (int j = 0; j < c.nowned; j++) c.be[s]->free(c.be[s], c.owned[s][j]);
    if (c.st != ZAYA_OK) return -1;
    *err = c.err;
    return c.err <= *bound;
}

int zaya_backend_check_all(zaya_backend *test, zaya_backend *ref, FILE *log) {
    int failed = 0;
    if (log) fprintf(log, "%-24s %12s %10s  %s (%s against %s)\n", "operation", "max rel err", "bound", "result",
                     test->name, ref->name);
    for (int i = 0; i < NCHECKS; i++) {
        double err, bound;
        const int r = zaya_backend_check_op(test, ref, i, &err, &bound);
        failed += r != 1;
        if (!log) continue;
        if (r < 0) fprintf(log, "%-24s %12s %10.0e  ERROR %s\n", g_checks[i].name, "-", bound, zaya_error_message());
        else fprintf(log, "%-24s %12.3e %10.0e  %s\n", g_checks[i].name, err, bound, r ? "ok" : "FAIL");
    }
    if (log) fprintf(log, "%d of %d checks failed\n", failed, NCHECKS);
    return failed;
}

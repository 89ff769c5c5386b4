/* The CUDA backend's norm, activation, embedding, router, expert and loss operations (src/gpu/be_ops.cu)
 * against the CPU functions they are named after (ctest be_ops, label gpu; exit 77, skipped, without
 * a CUDA device). Random inputs, shapes that are not multiples of 32, a 50k vocabulary for the loss.
 * Floats within 1e-5 (per element where the operation is elementwise or its only reduction is a
 * positive sum; relative to the tensor's largest value where a reduction may cancel), integers and
 * copies exact, and every operation run twice gives the same bits. The reference of the model-level
 * pieces (EDA, combine, score statistics, the router's logit gradient) is the CPU model's own
 * function (zaya/model_ops.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "zaya/backend.h"
#include "zaya/model_ops.h"
#include "zaya/gpu.h"
#include "zaya/kernels.h"

static zaya_backend *be;
static uint64_t rng_state = 12345;

static uint32_t rnd(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* Every buffer of one test case, device and host, freed together by release(). */
static void *dev_bufs[64], *host_bufs[128];
static int ndev, nhost;

static void *dev_alloc(size_t bytes) {
    void *p = NULL;
    if (be->alloc(be, &p, bytes) != ZAYA_OK || (bytes && !p) || ndev == 64) {
        fprintf(stderr, "device alloc of %zu bytes: %s\n", bytes, zaya_error_message());
        exit(1);
    }
    dev_bufs[ndev++] = p;
    return p;
}
static void *halloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p || nhost == 128) abort();
    host_bufs[nhost++] = p;
    return p;
}
static void release(void) {
    while (ndev) be->free(be, dev_bufs[--ndev]);
    while (nhost) free(host_bufs[--nhost]);
}
static void up(void *dev, const void *host, size_t bytes) {
    CHECK(be->upload(be, dev, host, bytes) == ZAYA_OK, "upload: %s", zaya_error_message());
}
static void *dev_from(const void *host, size_t bytes) {
    void *p = dev_alloc(bytes);
    up(p, host, bytes);
    return p;
}
static void down(void *host, const void *dev, size_t bytes) {
    CHECK(be->download(be, host, dev, bytes) == ZAYA_OK, "download: %s", zaya_error_message());
}
static void *hcopy(const void *src, size_t bytes) {
    void *p = halloc(bytes);
    memcpy(p, src, bytes);
    return p;
}

static double max_abs(const float *r, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++)
        if (fabs(r[i]) > m) m = fabs(r[i]);
    return m;
}

/* Elementwise: max_i |got - ref| / max(|ref_i|, 1e-6 max|ref|); also reports how many differ in bits. */
static void check_elem(const char *label, const float *got, const float *ref, int64_t n, double tol) {
    const double floor = 1e-6 * max_abs(ref, n) + 1e-37;
    double worst = 0;
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &ref[i], sizeof(float)) != 0) differ++;
        double m = fabs(ref[i]) > floor ? fabs(ref[i]) : floor;
        double e = fabs((double)got[i] - (double)ref[i]) / m;
        if (!(e <= worst)) worst = e; /* NaN fails */
    }
    printf("  %-32s rel %.2e, %lld of %lld differ in bits from the reference\n", label, worst, (long long)differ,
           (long long)n);
    CHECK(worst <= tol, "%s: elementwise error %.3e > %.1e", label, worst, tol);
}

/* Relative to the tensor's largest value (reductions whose terms may cancel). */
static void check_tensor(const char *label, const float *got, const float *ref, int64_t n, double tol) {
    double e = th_rel_err_ff(got, ref, n, 1e-30);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++) differ += memcmp(&got[i], &ref[i], sizeof(float)) != 0;
    printf("  %-32s rel %.2e of the largest, %lld of %lld differ in bits from the reference\n", label, e,
           (long long)differ, (long long)n);
    CHECK(e <= tol, "%s: error %.3e > %.1e", label, e, tol);
}

static void check_exact(const char *label, const void *got, const void *ref, size_t bytes) {
    CHECK(memcmp(got, ref, bytes) == 0, "%s: not identical to the CPU", label);
}
static void check_same_runs(const char *label, const void *a, const void *b, size_t bytes) {
    CHECK(memcmp(a, b, bytes) == 0, "%s: two runs differ in bits", label);
}

#define F(n) ((float *)halloc(sizeof(float) * (size_t)(n)))
#define I32(n) ((int32_t *)halloc(sizeof(int32_t) * (size_t)(n)))
#define DEV(host, n) dev_from((host), sizeof *(host) * (size_t)(n))
#define DOWN(host, dev, n) down((host), (dev), sizeof *(host) * (size_t)(n))
#define UP(dev, host, n) up((dev), (host), sizeof *(host) * (size_t)(n))

static float *rand_f(int64_t n, uint64_t stream, float lo, float hi) {
    float *x = F(n);
    th_fill(x, n, 77, stream, lo, hi);
    return x;
}


/* ops.c's zaya_ops_colsum_add: dst[j] += (sum over rows in order) */
static void colsum_add_ref(float *dst, const float *src, int64_t n, int64_t d) {
    for (int64_t j = 0; j < d; j++) {
        float acc = 0.0f;
        for (int64_t i = 0; i < n; i++) acc += src[i * d + j];
        dst[j] += acc;
    }
}

/* ---- RMSNorm ---- */
static void test_rmsnorm(int64_t n, int64_t d) {
    printf("rmsnorm n=%lld d=%lld\n", (long long)n, (long long)d);
    const float eps = 1e-5f;
    float *x = rand_f(n * d, 1, -2, 2), *w = rand_f(d, 2, 0.5f, 1.5f), *dy = rand_f(n * d, 3, -1, 1);
    float *dw0 = rand_f(d, 4, -1, 1);
    float *y = F(n * d), *rstd = F(n), *dx = F(n * d), *dw = hcopy(dw0, sizeof(float) * (size_t)d);
    zaya_rmsnorm_forward(y, rstd, x, w, n, d, eps);
    zaya_rmsnorm_backward(dx, dw, dy, x, w, rstd, n, d);

    float *x_ = DEV(x, n * d), *w_ = DEV(w, d), *dy_ = DEV(dy, n * d);
    float *rs_cpu_ = DEV(rstd, n); /* the backward runs on the CPU's rstd: the same inputs */
    float *y_ = dev_alloc(sizeof(float) * n * d), *rs_ = dev_alloc(sizeof(float) * n);
    float *dx_ = dev_alloc(sizeof(float) * n * d), *dw_ = dev_alloc(sizeof(float) * d);
    float *gy[2], *grs[2], *gdx[2], *gdw[2];
    for (int run = 0; run < 2; run++) {
        gy[run] = F(n * d), grs[run] = F(n), gdx[run] = F(n * d), gdw[run] = F(d);
        be->rmsnorm_forward(be, y_, rs_, x_, w_, n, d, eps);
        UP(dw_, dw0, d);
        be->rmsnorm_backward(be, dx_, dw_, dy_, x_, w_, rs_cpu_, n, d);
        DOWN(gy[run], y_, n * d);
        DOWN(grs[run], rs_, n);
        DOWN(gdx[run], dx_, n * d);
        DOWN(gdw[run], dw_, d);
    }
    check_elem("rmsnorm_forward y", gy[0], y, n * d, 1e-5);
    check_elem("rmsnorm_forward rstd", grs[0], rstd, n, 1e-5);
    check_tensor("rmsnorm_backward dx", gdx[0], dx, n * d, 1e-5);
    check_tensor("rmsnorm_backward dw (+=)", gdw[0], dw, d, 1e-5);
    check_same_runs("rmsnorm_forward y", gy[0], gy[1], sizeof(float) * n * d);
    check_same_runs("rmsnorm_forward rstd", grs[0], grs[1], sizeof(float) * n);
    check_same_runs("rmsnorm_backward dx", gdx[0], gdx[1], sizeof(float) * n * d);
    check_same_runs("rmsnorm_backward dw", gdw[0], gdw[1], sizeof(float) * d);
    release();
}

/* ---- GELU, SwiGLU ---- */
static void test_gelu(int64_t n) {
    printf("gelu n=%lld\n", (long long)n);
    float *x = rand_f(n, 5, -8, 8), *dy = rand_f(n, 6, -1, 1), *y = F(n), *dx = F(n);
    zaya_gelu_forward(y, x, n);
    zaya_gelu_backward(dx, dy, x, n);
    float *x_ = DEV(x, n), *dy_ = DEV(dy, n), *y_ = dev_alloc(sizeof(float) * n), *dx_ = dev_alloc(sizeof(float) * n);
    float *gy[2], *gdx[2];
    for (int run = 0; run < 2; run++) {
        gy[run] = F(n), gdx[run] = F(n);
        be->gelu_forward(be, y_, x_, n);
        be->gelu_backward(be, dx_, dy_, x_, n);
        DOWN(gy[run], y_, n);
        DOWN(gdx[run], dx_, n);
    }
    check_elem("gelu_forward", gy[0], y, n, 1e-5);
    check_elem("gelu_backward", gdx[0], dx, n, 1e-5);
    check_same_runs("gelu_forward", gy[0], gy[1], sizeof(float) * n);
    check_same_runs("gelu_backward", gdx[0], gdx[1], sizeof(float) * n);
    release();
}

static void test_swiglu(int64_t n, int64_t d) {
    printf("swiglu n=%lld d=%lld\n", (long long)n, (long long)d);
    float *gu = rand_f(n * 2 * d, 7, -6, 6), *dy = rand_f(n * d, 8, -1, 1), *y = F(n * d), *dgu = F(n * 2 * d);
    zaya_swiglu_forward(y, gu, n, d);
    zaya_swiglu_backward(dgu, dy, gu, n, d);
    float *gu_ = DEV(gu, n * 2 * d), *dy_ = DEV(dy, n * d);
    float *y_ = dev_alloc(sizeof(float) * n * d), *dgu_ = dev_alloc(sizeof(float) * n * 2 * d);
    float *gy[2], *gdgu[2];
    for (int run = 0; run < 2; run++) {
        gy[run] = F(n * d), gdgu[run] = F(n * 2 * d);
        be->swiglu_forward(be, y_, gu_, n, d);
        be->swiglu_backward(be, dgu_, dy_, gu_, n, d);
        DOWN(gy[run], y_, n * d);
        DOWN(gdgu[run], dgu_, n * 2 * d);
    }
    check_elem("swiglu_forward", gy[0], y, n * d, 1e-5);
    check_elem("swiglu_backward", gdgu[0], dgu, n * 2 * d, 1e-5);
    check_same_runs("swiglu_forward", gy[0], gy[1], sizeof(float) * n * d);
    check_same_runs("swiglu_backward", gdgu[0], gdgu[1], sizeof(float) * n * 2 * d);
    release();
}

/* ---- softmax (some -inf entries: masked logits) ---- */
static void test_softmax(int64_t n, int64_t d) {
    printf("softmax n=%lld d=%lld\n", (long long)n, (long long)d);
    float *x = rand_f(n * d, 9, -10, 10), *y = F(n * d);
    for (int64_t k = 3; k < n * d; k += 7) x[k] = -INFINITY;
    zaya_softmax_forward(y, x, n, d);
    float *x_ = DEV(x, n * d), *y_ = dev_alloc(sizeof(float) * n * d);
    float *gy[2];
    for (int run = 0; run < 2; run++) {
        gy[run] = F(n * d);
        be->softmax_forward(be, y_, x_, n, d);
        DOWN(gy[run], y_, n * d);
    }
    check_elem("softmax_forward", gy[0], y, n * d, 1e-5);
    check_same_runs("softmax_forward", gy[0], gy[1], sizeof(float) * n * d);
    release();
}

/* ---- embedding with the input affine (forward.c's embed_forward and the tail of its backward) ---- */
static void test_embed(int64_t vocab, int64_t n, int64_t d) {
    printf("embed vocab=%lld n=%lld d=%lld\n", (long long)vocab, (long long)n, (long long)d);
    int32_t *ids = I32(n);
    for (int64_t i = 0; i < n; i++) ids[i] = rnd() % 4 == 0 ? 7 : (int32_t)(rnd() % (uint32_t)vocab); /* a long run */
    float *table = rand_f(vocab * d, 10, -1, 1), *bias = rand_f(d, 11, -0.5f, 0.5f), *scale = rand_f(d, 12, 0.5f, 2);
    float *x = F(n * d);
    zaya_embedding_forward(x, table, ids, n, d);
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < d; j++) x[i * d + j] = (x[i * d + j] + bias[j]) * scale[j];

    float *dx = rand_f(n * d, 13, -1, 1), *dtable0 = rand_f(vocab * d, 14, -1, 1);
    float *dbias0 = rand_f(d, 15, -1, 1), *dscale0 = rand_f(d, 16, -1, 1);
    float *dtable = hcopy(dtable0, sizeof(float) * vocab * d), *dbias = hcopy(dbias0, sizeof(float) * d);
    float *dscale = hcopy(dscale0, sizeof(float) * d), *prod = F(n * d), *de = F(n * d);
    for (int64_t i = 0; i < n; i++) {
        const float *e = table + (int64_t)ids[i] * d;
        for (int64_t j = 0; j < d; j++) {
            prod[i * d + j] = dx[i * d + j] * (e[j] + bias[j]);
            de[i * d + j] = dx[i * d + j] * scale[j];
        }
    }
    colsum_add_ref(dscale, prod, n, d);
    colsum_add_ref(dbias, de, n, d);
    zaya_embedding_backward(dtable, de, ids, n, d, vocab);

    /* sorted / seg as the caller builds them: tokens grouped by ascending id, token order within */
    int32_t *start = I32(vocab + 1), *sorted = I32(n), *seg = I32(n + 1);
    for (int64_t i = 0; i < n; i++) start[ids[i] + 1]++;
    for (int64_t v = 0; v < vocab; v++) start[v + 1] += start[v];
    int64_t nseg = 0;
    for (int64_t v = 0; v < vocab; v++)
        if (start[v + 1] > start[v]) seg[nseg++] = start[v];
    seg[nseg] = (int32_t)n;
    for (int64_t i = 0; i < n; i++) sorted[start[ids[i]]++] = (int32_t)i;

    float *table_ = DEV(table, vocab * d), *bias_ = DEV(bias, d), *scale_ = DEV(scale, d), *dx_ = DEV(dx, n * d);
    int32_t *ids_ = DEV(ids, n), *sorted_ = DEV(sorted, n), *seg_ = DEV(seg, nseg + 1);
    float *x_ = dev_alloc(sizeof(float) * n * d), *de_ = dev_alloc(sizeof(float) * n * d);
    float *dtable_ = dev_alloc(sizeof(float) * vocab * d), *dbias_ = dev_alloc(sizeof(float) * d);
    float *dscale_ = dev_alloc(sizeof(float) * d);
    float *gx[2], *gde[2], *gdt[2], *gdb[2], *gds[2];
    for (int run = 0; run < 2; run++) {
        gx[run] = F(n * d), gde[run] = F(n * d), gdt[run] = F(vocab * d), gdb[run] = F(d), gds[run] = F(d);
        be->embed_forward(be, x_, table_, ids_, bias_, scale_, n, d);
        UP(dtable_, dtable0, vocab * d);
        UP(dbias_, dbias0, d);
        UP(dscale_, dscale0, d);
        be->embed_backward(be, dtable_, dbias_, dscale_, de_, dx_, table_, ids_, bias_, scale_, sorted_, seg_, nseg, n,
                           d);
        DOWN(gx[run], x_, n * d);
        DOWN(gde[run], de_, n * d);
        DOWN(gdt[run], dtable_, vocab * d);
        DOWN(gdb[run], dbias_, d);
        DOWN(gds[run], dscale_, d);
    }
    check_elem("embed_forward", gx[0], x, n * d, 1e-5);
    check_elem("embed_backward de", gde[0], de, n * d, 1e-5);
    check_tensor("embed_backward dtable (+=)", gdt[0], dtable, vocab * d, 1e-5);
    check_tensor("embed_backward dbias (+=)", gdb[0], dbias, d, 1e-5);
    check_tensor("embed_backward dscale (+=)", gds[0], dscale, d, 1e-5);
    check_same_runs("embed_forward", gx[0], gx[1], sizeof(float) * n * d);
    check_same_runs("embed_backward de", gde[0], gde[1], sizeof(float) * n * d);
    check_same_runs("embed_backward dtable", gdt[0], gdt[1], sizeof(float) * vocab * d);
    check_same_runs("embed_backward dbias", gdb[0], gdb[1], sizeof(float) * d);
    check_same_runs("embed_backward dscale", gds[0], gds[1], sizeof(float) * d);
    release();
}

/* ---- EDA (moe.c: r += g r_prev; backward prod = dr r_prev, dr_prev = dr g) ---- */
static void test_eda(int64_t n, int64_t R) {
    printf("eda n=%lld R=%lld\n", (long long)n, (long long)R);
    float *r0 = rand_f(n * R, 17, -1, 1), *g = rand_f(R, 18, -1, 1), *rp = rand_f(n * R, 19, -1, 1);
    float *dr = rand_f(n * R, 20, -1, 1), *r = hcopy(r0, sizeof(float) * n * R), *prod = F(n * R), *drp = F(n * R);
    zaya_eda_forward(r, g, rp, n, R);
    zaya_eda_backward(prod, drp, dr, rp, g, n, R);
    float *r_ = dev_alloc(sizeof(float) * n * R), *g_ = DEV(g, R), *rp_ = DEV(rp, n * R), *dr_ = DEV(dr, n * R);
    float *prod_ = dev_alloc(sizeof(float) * n * R), *drp_ = dev_alloc(sizeof(float) * n * R);
    float *gr[2], *gp[2], *gd[2];
    for (int run = 0; run < 2; run++) {
        gr[run] = F(n * R), gp[run] = F(n * R), gd[run] = F(n * R);
        UP(r_, r0, n * R);
        be->eda_forward(be, r_, g_, rp_, n, R);
        be->eda_backward(be, prod_, drp_, dr_, rp_, g_, n, R);
        DOWN(gr[run], r_, n * R);
        DOWN(gp[run], prod_, n * R);
        DOWN(gd[run], drp_, n * R);
    }
    check_elem("eda_forward", gr[0], r, n * R, 1e-5);
    check_elem("eda_backward prod", gp[0], prod, n * R, 1e-5);
    check_elem("eda_backward dr_prev", gd[0], drp, n * R, 1e-5);
    check_same_runs("eda_forward", gr[0], gr[1], sizeof(float) * n * R);
    check_same_runs("eda_backward prod", gp[0], gp[1], sizeof(float) * n * R);
    check_same_runs("eda_backward dr_prev", gd[0], gd[1], sizeof(float) * n * R);
    release();
}

/* ---- top-1 selection and counts (probabilities on a coarse grid, so that ties happen) ---- */
static void test_top1(int64_t n, int64_t e, int64_t ld, int with_bias) {
    printf("top1 n=%lld e=%lld ld=%lld bias=%d\n", (long long)n, (long long)e, (long long)ld, with_bias);
    float *probs = F(n * ld), *bias = with_bias ? F(e) : NULL;
    for (int64_t k = 0; k < n * ld; k++) probs[k] = (float)(rnd() % 9) / 8.0f;
    for (int64_t j = 0; with_bias && j < e; j++) bias[j] = (float)((int)(rnd() % 5) - 2) / 16.0f;
    int32_t *idx = I32(n);
    float *gate = F(n);
    int64_t *counts = halloc(sizeof(int64_t) * e), *garbage = halloc(sizeof(int64_t) * e);
    zaya_top1_biased_ld(idx, gate, probs, ld, bias, n, e);
    zaya_top1_biased_count_ld(counts, probs, ld, bias, n, e);
    int64_t ties = 0;
    for (int64_t r = 0; r < n; r++)
        for (int64_t j = idx[r] + 1; j < e; j++)
            ties += probs[r * ld + j] + (bias ? bias[j] : 0.0f) ==
                    probs[r * ld + idx[r]] + (bias ? bias[idx[r]] : 0.0f);
    CHECK(ties > 0, "the case has no ties to break");
    memset(garbage, 0x5a, sizeof(int64_t) * e);

    float *probs_ = DEV(probs, n * ld), *bias_ = with_bias ? DEV(bias, e) : NULL, *gate_ = dev_alloc(sizeof(float) * n);
    int32_t *idx_ = dev_alloc(sizeof(int32_t) * n);
    int64_t *counts_ = dev_alloc(sizeof(int64_t) * e);
    int32_t *gi[2];
    float *gg[2];
    int64_t *gc[2];
    for (int run = 0; run < 2; run++) {
        gi[run] = I32(n), gg[run] = F(n), gc[run] = halloc(sizeof(int64_t) * e);
        be->top1(be, idx_, gate_, probs_, ld, bias_, n, e);
        UP(counts_, garbage, e); /* counts are written, not added to */
        be->top1_count(be, counts_, probs_, ld, bias_, n, e);
        DOWN(gi[run], idx_, n);
        DOWN(gg[run], gate_, n);
        DOWN(gc[run], counts_, e);
    }
    check_exact("top1 idx", gi[0], idx, sizeof(int32_t) * n);
    check_exact("top1 gate", gg[0], gate, sizeof(float) * n);
    check_exact("top1_count", gc[0], counts, sizeof(int64_t) * e);
    check_same_runs("top1 idx", gi[0], gi[1], sizeof(int32_t) * n);
    check_same_runs("top1 gate", gg[0], gg[1], sizeof(float) * n);
    check_same_runs("top1_count", gc[0], gc[1], sizeof(int64_t) * e);
    release();
}

/* ---- the balancer's statistics (moe.c's score_spread, rows ld apart) ---- */
static void test_route_stats(int64_t n, int64_t ld, int64_t E) {
    printf("route_stats n=%lld ld=%lld E=%lld\n", (long long)n, (long long)ld, (long long)E);
    float *probs = rand_f(n * ld, 21, 0, 1);
    double *psum = halloc(sizeof(double) * E), spread = 0;
    zaya_route_stats(psum, &spread, probs, ld, n, E);
    float *probs_ = DEV(probs, n * ld);
    double *psum_ = dev_alloc(sizeof(double) * E), *spread_ = dev_alloc(sizeof(double));
    double *gp[2], gs[2];
    for (int run = 0; run < 2; run++) {
        gp[run] = halloc(sizeof(double) * E);
        be->route_stats(be, psum_, spread_, probs_, ld, n, E);
        DOWN(gp[run], psum_, E);
        DOWN(&gs[run], spread_, 1);
    }
    /* relative error; an exact 0 (one row: no spread) must come out 0 */
    double worst = 0;
    for (int64_t e = 0; e < E; e++) {
        double r = fabs(gp[0][e] - psum[e]) / (psum[e] != 0 ? fabs(psum[e]) : 1.0);
        if (!(r <= worst)) worst = r;
    }
    double rs = fabs(gs[0] - spread) / (spread != 0 ? fabs(spread) : 1.0);
    printf("  %-32s rel %.2e, spread rel %.2e\n", "route_stats psum", worst, rs);
    CHECK(worst <= 1e-12, "route_stats psum: error %.3e", worst);
    CHECK(rs <= 1e-12, "route_stats spread: %.17g vs %.17g", gs[0], spread);
    check_same_runs("route_stats psum", gp[0], gp[1], sizeof(double) * E);
    check_same_runs("route_stats spread", &gs[0], &gs[1], sizeof(double));
    release();
}

/* ---- the router's logit gradient (moe.c, ZAYA and linear routers) ---- */
static void test_router_dlogits(int64_t n, int64_t ld, int64_t ncols) {
    printf("router_dlogits n=%lld ld=%lld ncols=%lld\n", (long long)n, (long long)ld, (long long)ncols);
    float *probs = rand_f(n * ld, 22, 0, 1), *dgate = rand_f(n, 23, -1, 1), *dl = F(n * ncols);
    int32_t *idx = I32(n);
    for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)(rnd() % (uint32_t)ncols);
    zaya_router_dlogits(dl, probs, ld, dgate, idx, n, ncols);
    float *probs_ = DEV(probs, n * ld), *dgate_ = DEV(dgate, n), *dl_ = dev_alloc(sizeof(float) * n * ncols);
    int32_t *idx_ = DEV(idx, n);
    float *gd[2];
    for (int run = 0; run < 2; run++) {
        gd[run] = F(n * ncols);
        be->router_dlogits(be, dl_, probs_, ld, dgate_, idx_, n, ncols);
        DOWN(gd[run], dl_, n * ncols);
    }
    check_elem("router_dlogits", gd[0], dl, n * ncols, 1e-5);
    check_same_runs("router_dlogits", gd[0], gd[1], sizeof(float) * n * ncols);
    release();
}

/* ---- expert dispatch and combine (moe.c) ---- */
static void test_moe_rows(int64_t n, int64_t d, int64_t E, int identity) {
    printf("gather/combine/scatter n=%lld d=%lld E=%lld identity=%d\n", (long long)n, (long long)d, (long long)E,
           identity);
    const int64_t E1 = E + 1;
    int32_t *idx = I32(n), *row_of = I32(n), *perm = I32(n), *off = I32(E1 + 1), *fill = I32(E1);
    for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)(rnd() % (uint32_t)E1); /* idx == E: skipped */
    for (int64_t i = 0; i < n; i++) off[idx[i] + 1]++;                         /* moe.c's dispatch */
    for (int64_t e = 0; e < E1; e++) off[e + 1] += off[e];
    for (int64_t e = 0; e < E1; e++) fill[e] = off[e];
    for (int64_t i = 0; i < n; i++) {
        int32_t r = fill[idx[i]]++;
        perm[r] = (int32_t)i;
        row_of[i] = r;
    }
    float *z = rand_f(n * d, 24, -1, 1), *ye = rand_f(n * d, 25, -1, 1), *gate = rand_f(n, 26, 0, 1);
    float *dm = rand_f(n * d, 27, -1, 1), *dxe = rand_f(n * d, 28, -1, 1);
    float *xe = F(n * d), *m = F(n * d), *dye = F(n * d), *dz = F(n * d), *dgate = F(n), *dz2 = F(n * d);
    zaya_rows_gather(xe, z, perm, n, d);
    zaya_moe_combine_forward(m, ye, z, idx, gate, row_of, n, d, E, identity);
    /* sentinels: rows an operation must leave alone keep them */
    float *dye0 = F(n * d), *dz0 = F(n * d), *dgate0 = F(n), *dz20 = F(n * d);
    for (int64_t k = 0; k < n * d; k++) dye0[k] = 7.0f, dz0[k] = 3.0f, dz20[k] = 5.0f;
    for (int64_t i = 0; i < n; i++) dgate0[i] = 9.0f;
    memcpy(dye, dye0, sizeof(float) * n * d);
    memcpy(dz, dz0, sizeof(float) * n * d);
    memcpy(dz2, dz20, sizeof(float) * n * d);
    zaya_moe_combine_backward(dye, dz, dgate, dm, ye, z, idx, gate, row_of, n, d, E, identity);
    zaya_rows_scatter(dz2, dxe, idx, row_of, n, d, E);

    float *z_ = DEV(z, n * d), *ye_ = DEV(ye, n * d), *gate_ = DEV(gate, n), *dm_ = DEV(dm, n * d);
    float *dxe_ = DEV(dxe, n * d);
    int32_t *idx_ = DEV(idx, n), *row_of_ = DEV(row_of, n), *perm_ = DEV(perm, n);
    float *xe_ = dev_alloc(sizeof(float) * n * d), *m_ = dev_alloc(sizeof(float) * n * d);
    float *dye_ = dev_alloc(sizeof(float) * n * d), *dz_ = dev_alloc(sizeof(float) * n * d);
    float *dgate_ = dev_alloc(sizeof(float) * n), *dz2_ = dev_alloc(sizeof(float) * n * d);
    float *gxe[2], *gm[2], *gdye[2], *gdz[2], *gdg[2], *gdz2[2];
    for (int run = 0; run < 2; run++) {
        gxe[run] = F(n * d), gm[run] = F(n * d), gdye[run] = F(n * d), gdz[run] = F(n * d), gdg[run] = F(n);
        gdz2[run] = F(n * d);
        be->gather_rows(be, xe_, z_, perm_, n, d);
        be->moe_combine_forward(be, m_, ye_, z_, idx_, gate_, row_of_, n, d, E, identity);
        UP(dye_, dye0, n * d);
        UP(dz_, dz0, n * d);
        UP(dgate_, dgate0, n);
        UP(dz2_, dz20, n * d);
        be->moe_combine_backward(be, dye_, dz_, dgate_, dm_, ye_, z_, idx_, gate_, row_of_, n, d, E, identity);
        be->scatter_rows(be, dz2_, dxe_, idx_, row_of_, n, d, E);
        DOWN(gxe[run], xe_, n * d);
        DOWN(gm[run], m_, n * d);
        DOWN(gdye[run], dye_, n * d);
        DOWN(gdz[run], dz_, n * d);
        DOWN(gdg[run], dgate_, n);
        DOWN(gdz2[run], dz2_, n * d);
    }
    check_exact("gather_rows", gxe[0], xe, sizeof(float) * n * d);
    check_elem("moe_combine_forward", gm[0], m, n * d, 1e-5);
    check_elem("moe_combine_backward dye", gdye[0], dye, n * d, 1e-5);
    check_elem("moe_combine_backward dz", gdz[0], dz, n * d, 1e-5);
    check_tensor("moe_combine_backward dgate", gdg[0], dgate, n, 1e-5);
    check_exact("scatter_rows", gdz2[0], dz2, sizeof(float) * n * d);
    check_same_runs("gather_rows", gxe[0], gxe[1], sizeof(float) * n * d);
    check_same_runs("moe_combine_forward", gm[0], gm[1], sizeof(float) * n * d);
    check_same_runs("moe_combine_backward dye", gdye[0], gdye[1], sizeof(float) * n * d);
    check_same_runs("moe_combine_backward dz", gdz[0], gdz[1], sizeof(float) * n * d);
    check_same_runs("moe_combine_backward dgate", gdg[0], gdg[1], sizeof(float) * n);
    check_same_runs("scatter_rows", gdz2[0], gdz2[1], sizeof(float) * n * d);
    release();
}

/* ---- cross-entropy in place (a row with large logits, an ignored row; losses only leaves logits) ---- */
static void test_xent(int64_t n, int64_t V) {
    printf("xent n=%lld V=%lld\n", (long long)n, (long long)V);
    const float gs = 1.0f / 3.0f;
    float *logits0 = rand_f(n * V, 30, -8, 8);
    for (int64_t i = 0; i < V && n > 1; i++) logits0[V + i] += 40.0f;
    int32_t *tg = I32(n);
    for (int64_t r = 0; r < n; r++) tg[r] = (int32_t)(rnd() % (uint32_t)V);
    if (n > 2) tg[2] = -1;
    tg[0] = (int32_t)(V - 1);
    float *grad = hcopy(logits0, sizeof(float) * n * V), *loss = F(n), *lg0 = hcopy(logits0, sizeof(float) * n * V);
    float *loss0 = F(n);
    zaya_xent_forward_backward(grad, loss, tg, n, V, gs);
    zaya_xent_forward_backward(lg0, loss0, tg, n, V, 0.0f);
    float *lg_ = dev_alloc(sizeof(float) * n * V), *loss_ = dev_alloc(sizeof(float) * n);
    int32_t *tg_ = DEV(tg, n);
    float *gg[2], *gl[2], *gu[2], *gl0[2];
    for (int run = 0; run < 2; run++) {
        gg[run] = F(n * V), gl[run] = F(n), gu[run] = F(n * V), gl0[run] = F(n);
        UP(lg_, logits0, n * V);
        be->xent(be, lg_, loss_, tg_, n, V, gs);
        DOWN(gg[run], lg_, n * V);
        DOWN(gl[run], loss_, n);
        UP(lg_, logits0, n * V);
        be->xent(be, lg_, loss_, tg_, n, V, 0.0f);
        DOWN(gu[run], lg_, n * V);
        DOWN(gl0[run], loss_, n);
    }
    /* The CPU sums a row's V terms in 16 f32 lanes, V/16 terms each: at V = 262144 its own sum is off
     * by up to ~3e-5 (measured), while the device's 1024 partial sums of V/1024 terms stay near 1e-6.
     * So both are also held to a double-precision softmax, and the CPU comparison allows the CPU's
     * error above 64k columns. */
    const double tol_cpu = V <= 65536 ? 1e-5 : 1e-4;
    check_elem("xent gradient", gg[0], grad, n * V, tol_cpu);
    check_elem("xent losses", gl[0], loss, n, tol_cpu);
    check_elem("xent losses (grad_scale 0)", gl0[0], loss0, n, tol_cpu);
    float *gref = F(n * V), *lref = F(n);
    for (int64_t r = 0; r < n; r++) {
        const float *x = logits0 + r * V;
        if (tg[r] < 0) continue; /* gradient 0, loss 0 */
        double m = -INFINITY, sum = 0;
        for (int64_t i = 0; i < V; i++) m = x[i] > m ? x[i] : m;
        for (int64_t i = 0; i < V; i++) sum += exp((double)x[i] - m);
        for (int64_t i = 0; i < V; i++)
            gref[r * V + i] = (float)(exp((double)x[i] - m) / sum * gs - (i == tg[r] ? (double)gs : 0.0));
        lref[r] = (float)(m + log(sum) - x[tg[r]]);
    }
    check_elem("xent gradient vs double", gg[0], gref, n * V, 1e-5);
    check_elem("xent losses vs double", gl[0], lref, n, 1e-5);
    check_elem("(CPU xent gradient vs double)", grad, gref, n * V, tol_cpu);
    check_exact("xent grad_scale 0 leaves the logits", gu[0], logits0, sizeof(float) * n * V);
    check_same_runs("xent gradient", gg[0], gg[1], sizeof(float) * n * V);
    check_same_runs("xent losses", gl[0], gl[1], sizeof(float) * n);
    check_same_runs("xent losses (grad_scale 0)", gl0[0], gl0[1], sizeof(float) * n);
    release();
}

/* ---- 64-bit indexing: n * d above 2^31 elements (sampled rows against the CPU) ---- */
static void test_big_rows(void) {
    zaya_gpu_props p;
    if (zaya_gpu_props_get(0, &p) != ZAYA_OK || p.total_mem < ((int64_t)40 << 30)) {
        printf("big rows: skipped (device memory)\n");
        return;
    }
    const int64_t vocab = 11, d = 513, n = ((int64_t)1 << 22) + 5; /* n d = 2.15e9 > 2^31 */
    printf("big rows n=%lld d=%lld (n d = %lld)\n", (long long)n, (long long)d, (long long)(n * d));
    int32_t *ids = I32(n);
    for (int64_t i = 0; i < n; i++) ids[i] = (int32_t)(rnd() % (uint32_t)vocab);
    float *table = rand_f(vocab * d, 31, -3, 3), *bias = rand_f(d, 32, -0.5f, 0.5f), *scale = rand_f(d, 33, 0.5f, 2);
    float *table_ = DEV(table, vocab * d), *bias_ = DEV(bias, d), *scale_ = DEV(scale, d);
    int32_t *ids_ = DEV(ids, n);
    float *x_ = dev_alloc(sizeof(float) * n * d), *y_ = dev_alloc(sizeof(float) * n * d);
    be->embed_forward(be, x_, table_, ids_, bias_, scale_, n, d);
    be->gelu_forward(be, y_, x_, n * d);
    const int64_t rows[] = {0, ((int64_t)1 << 31) / d - 1, ((int64_t)1 << 31) / d, ((int64_t)1 << 31) / d + 1, n - 1};
    float *gx = F(d), *gy = F(d), *x = F(d), *y = F(d);
    double worst = 0;
    for (int k = 0; k < 5; k++) {
        const int64_t r = rows[k];
        down(gx, x_ + r * d, sizeof(float) * (size_t)d);
        down(gy, y_ + r * d, sizeof(float) * (size_t)d);
        for (int64_t j = 0; j < d; j++) x[j] = (table[(int64_t)ids[r] * d + j] + bias[j]) * scale[j];
        zaya_gelu_forward(y, x, d);
        double ex = th_rel_err_ff(gx, x, d, 1e-30), ey = th_rel_err_ff(gy, y, d, 1e-30);
        if (ex > worst) worst = ex;
        if (ey > worst) worst = ey;
    }
    printf("  %-32s rel %.2e\n", "embed_forward + gelu, sampled", worst);
    CHECK(worst <= 1e-6, "rows past 2^31 elements: error %.3e", worst);
    release();
}

int main(void) {
    if (zaya_gpu_device_count() == 0) {
        printf("no CUDA device visible (%s backend): skipped\n", zaya_gpu_backend_name());
        return 77;
    }
    zaya_status st = zaya_gpu_backend_init((zaya_device){ZAYA_DEVICE_CUDA, 0}, &be);
    CHECK(st == ZAYA_OK, "backend init: %s", zaya_error_message());
    if (st != ZAYA_OK) return th_finish("be_ops");
    const void *ops[] = {be->rmsnorm_forward, be->rmsnorm_backward, be->gelu_forward, be->gelu_backward,
                         be->swiglu_forward, be->swiglu_backward, be->softmax_forward, be->embed_forward,
                         be->embed_backward, be->eda_forward, be->eda_backward, be->top1, be->top1_count,
                         be->route_stats, be->router_dlogits, be->gather_rows, be->moe_combine_forward,
                         be->moe_combine_backward, be->scatter_rows, be->xent};
    int missing = 0;
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) missing += ops[i] == NULL;
    CHECK(missing == 0, "%d operations not installed", missing);
    if (missing) return th_finish("be_ops");

    test_rmsnorm(333, 1000);
    test_rmsnorm(5, 77);     /* fewer rows than the column sum's row chunks */
    test_rmsnorm(37, 2085);  /* rows wider than the block */
    test_rmsnorm(1001, 4100); /* the CPU's wide-row dw path */
    test_gelu(100003);
    test_swiglu(97, 333);
    test_softmax(301, 17);
    test_softmax(45, 1500);
    test_embed(1000, 555, 300);
    test_embed(50, 3, 1031);
    test_eda(333, 77);
    test_top1(777, 17, 18, 1);
    test_top1(777, 17, 18, 0);
    test_top1(501, 16, 17, 1); /* the linear router: the experts only */
    test_route_stats(777, 18, 17);
    test_route_stats(1, 5, 4);
    test_router_dlogits(333, 18, 18);
    test_router_dlogits(333, 18, 17);
    test_moe_rows(500, 300, 8, 0);
    test_moe_rows(500, 300, 8, 1);
    test_moe_rows(77, 1031, 3, 0);
    test_xent(6, 50000);
    test_xent(3, 262147);
    test_xent(40, 37);
    test_big_rows();
    CHECK(be->sync(be) == ZAYA_OK, "sync: %s", zaya_error_message());
    be->destroy(be);
    return th_finish("be_ops");
}

/* GELU (erf), SiLU, SwiGLU and the vectorizable exp behind SiLU/softmax/xent. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "kernels/kernel_util.h"
#include "zaya/kernels.h"

static void test_vexpf(void) {
    double worst = 0;
    for (double x = -87.0; x <= 88.7; x += 0.001) {
        float xf = (float)x;
        double ref = exp((double)xf), got = zaya_vexpf(xf);
        worst = fmax(worst, fabs(got - ref) / ref);
    }
    CHECK_ERR("vexpf relative error on [-87, 88.7]", worst, 3e-7);
    /* Subnormal results: absolute error within a couple of subnormal steps. */
    double sub = 0;
    for (double x = -103.9; x < -87.4; x += 0.01) sub = fmax(sub, fabs(zaya_vexpf((float)x) - exp((double)(float)x)));
    CHECK(sub <= 4 * 1.4013e-45 + 1e-7 * 1.2e-38, "vexpf subnormal range: abs error %.3e", sub);
    CHECK(zaya_vexpf(0.0f) == 1.0f, "exp(0) = 1");
    CHECK(zaya_vexpf(-200.0f) == 0.0f && zaya_vexpf(-INFINITY) == 0.0f, "underflow to 0");
    CHECK(isinf(zaya_vexpf(89.0f)) && isinf(zaya_vexpf(INFINITY)), "overflow to +Inf");
    CHECK(zaya_vexpf(88.7f) < INFINITY && zaya_vexpf(88.7f) > 3.0e38f, "exp(88.7) finite");
    CHECK(isnan(zaya_vexpf(NAN)), "NaN propagates");
}

typedef struct {
    int kind; /* 0 gelu, 1 silu, 2 swiglu */
    float *x, *y, *r;
    int64_t n, d;
} ctx_t;

static double loss(void *p) {
    ctx_t *c = p;
    if (c->kind == 0) zaya_gelu_forward(c->y, c->x, c->n);
    if (c->kind == 1) zaya_silu_forward(c->y, c->x, c->n);
    if (c->kind == 2) zaya_swiglu_forward(c->y, c->x, c->n, c->d);
    return th_dot(c->y, c->r, c->kind == 2 ? c->n * c->d : c->n);
}

static double sig(double x) { return 1.0 / (1.0 + exp(-x)); }

static void run_pointwise(int kind, int64_t n, uint64_t seed) {
    char label[64];
    snprintf(label, sizeof label, "%s n=%lld", kind ? "silu" : "gelu", (long long)n);
    float *x = th_alloc(n), *y = th_alloc(n), *r = th_alloc(n), *dx = th_alloc(n);
    double *yref = th_alloc_d(n), *dref = th_alloc_d(n);
    th_fill(x, n, seed, 1, -8.0f, 8.0f);
    th_fill(r, n, seed, 2, -1.0f, 1.0f);
    if (n > 4) x[0] = -30.0f, x[1] = 30.0f, x[2] = 0.0f, x[3] = -1e-6f;
    if (kind == 0) {
        zaya_gelu_forward(y, x, n);
        zaya_gelu_backward(dx, r, x, n);
    } else {
        zaya_silu_forward(y, x, n);
        zaya_silu_backward(dx, r, x, n);
    }
    for (int64_t i = 0; i < n; i++) {
        double v = x[i];
        if (kind == 0) {
            double cdf = 0.5 * erfc(-v / sqrt(2.0));
            yref[i] = v * cdf;
            dref[i] = r[i] * (cdf + v * exp(-0.5 * v * v) / sqrt(2.0 * M_PI));
        } else {
            double s = sig(v);
            yref[i] = v * s;
            dref[i] = r[i] * (s + v * s * (1.0 - s));
        }
    }
    /* Elementwise relative error: the forward is accurate to a few ulp everywhere. The derivative
     * is a sum of O(1) terms that cancel near its zero (x ~ -1.28 for SiLU, -0.75 for GELU), so
     * its error is judged against max(|ref|, 0.1 |dy|). */
    double fe = 0, be = 0;
    for (int64_t i = 0; i < n; i++) {
        fe = fmax(fe, fabs(y[i] - yref[i]) / fmax(fabs(yref[i]), 1e-30));
        be = fmax(be, fabs(dx[i] - dref[i]) / fmax(fabs(dref[i]), 0.1 * fabs(r[i])));
    }
    /* GELU's far negative tail magnifies the f32 rounding of x/sqrt2 by ~x^2 (3.8e-6 at x = -8). */
    CHECK_ERR(label, fe, kind == 0 ? 1e-5 : 2e-6);
    CHECK_ERR(label, be, 2e-6);
    ctx_t c = {kind, x, y, r, n, 1};
    kc_fd_check(label, loss, &c, x, n, dx, 24, 1e-3, 1e-3, seed);
    free(x), free(y), free(r), free(dx), free(yref), free(dref);
}

static void test_silu_extremes(void) {
    float x[6] = {-1e4f, 1e4f, -100.0f, 100.0f, -FLT_MAX, FLT_MAX}, y[6], dx[6], one[6] = {1, 1, 1, 1, 1, 1};
    zaya_silu_forward(y, x, 6);
    zaya_silu_backward(dx, one, x, 6);
    int finite = 1;
    for (int i = 0; i < 6; i++) finite &= isfinite(y[i]) && isfinite(dx[i]);
    CHECK(finite, "silu finite at extremes");
    CHECK(y[0] == 0.0f && y[1] == 1e4f && y[3] == 100.0f && y[5] == FLT_MAX, "silu saturates exactly (%g %g %g)",
          y[0], y[1], y[3]);
    CHECK(dx[0] == 0.0f && dx[1] == 1.0f, "silu' saturates to 0 and 1 (%g %g)", dx[0], dx[1]);
}

static void run_swiglu(int64_t n, int64_t d, uint64_t seed) {
    char label[64];
    snprintf(label, sizeof label, "swiglu n=%lld d=%lld", (long long)n, (long long)d);
    float *gu = th_alloc(2 * n * d), *y = th_alloc(n * d), *r = th_alloc(n * d), *dgu = th_alloc(2 * n * d);
    double *yref = th_alloc_d(n * d), *dref = th_alloc_d(2 * n * d);
    th_fill(gu, 2 * n * d, seed, 1, -6.0f, 6.0f);
    th_fill(r, n * d, seed, 2, -1.0f, 1.0f);
    zaya_swiglu_forward(y, gu, n, d);
    zaya_swiglu_backward(dgu, r, gu, n, d);
    for (int64_t row = 0; row < n; row++)
        for (int64_t i = 0; i < d; i++) {
            double g = gu[row * 2 * d + i], u = gu[row * 2 * d + d + i], s = sig(g), dy = r[row * d + i];
            yref[row * d + i] = g * s * u;
            dref[row * 2 * d + i] = dy * u * (s + g * s * (1.0 - s));
            dref[row * 2 * d + d + i] = dy * g * s;
        }
    CHECK_ERR(label, th_rel_err(y, yref, n * d, 1e-6), 2e-6);
    CHECK_ERR(label, th_rel_err(dgu, dref, 2 * n * d, 1e-6), 2e-6);
    ctx_t c = {2, gu, y, r, n, d};
    kc_fd_check(label, loss, &c, gu, 2 * n * d, dgu, 32, 1e-3, 1e-3, seed);
    free(gu), free(y), free(r), free(dgu), free(yref), free(dref);
}

int main(void) {
    test_vexpf();
    const int64_t ns[] = {1, 3, 17, 129, 1000, 70001};
    for (int kind = 0; kind < 2; kind++)
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) run_pointwise(kind, ns[i], 10 + i);
    test_silu_extremes();
    const int64_t sh[][2] = {{1, 1}, {3, 17}, {17, 3}, {5, 129}, {32, 2048}};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) run_swiglu(sh[i][0], sh[i][1], 30 + i);
    return th_finish("test_activations");
}

/* RMSNorm forward/backward against double references and finite differences. */
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "zaya/kernels.h"

typedef struct {
    float *x, *w, *y, *rstd, *r;
    int64_t n, d;
    float eps;
} ctx_t;

static double loss(void *p) {
    ctx_t *c = p;
    zaya_rmsnorm_forward(c->y, c->rstd, c->x, c->w, c->n, c->d, c->eps);
    return th_dot(c->y, c->r, c->n * c->d);
}

static void run(int64_t n, int64_t d, uint64_t seed) {
    char label[64];
    snprintf(label, sizeof label, "rmsnorm n=%lld d=%lld", (long long)n, (long long)d);
    const float eps = 1e-5f;
    int64_t nd = n * d;
    float *x = th_alloc(nd), *w = th_alloc(d), *y = th_alloc(nd), *rstd = th_alloc(n), *r = th_alloc(nd);
    float *dx = th_alloc(nd), *dw = th_alloc(d), *dw0 = th_alloc(d);
    th_fill(x, nd, seed, 1, -2.0f, 2.0f);
    th_fill(w, d, seed, 2, 0.5f, 1.5f);
    th_fill(r, nd, seed, 3, -1.0f, 1.0f);
    th_fill(dw0, d, seed, 4, -0.5f, 0.5f);
    for (int64_t i = 0; i < d; i++) dw[i] = dw0[i];

    zaya_rmsnorm_forward(y, rstd, x, w, n, d, eps);
    zaya_rmsnorm_backward(dx, dw, r, x, w, rstd, n, d);

    double *yref = th_alloc_d(nd), *rref = th_alloc_d(n), *dxref = th_alloc_d(nd), *dwref = th_alloc_d(d);
    for (int64_t i = 0; i < d; i++) dwref[i] = dw0[i];
    for (int64_t row = 0; row < n; row++) {
        const float *xr = x + row * d, *dyr = r + row * d;
        double ss = 0, dot = 0;
        for (int64_t i = 0; i < d; i++) ss += (double)xr[i] * xr[i];
        double rs = 1.0 / sqrt(ss / (double)d + eps);
        rref[row] = rs;
        for (int64_t i = 0; i < d; i++) {
            yref[row * d + i] = (double)w[i] * xr[i] * rs;
            dot += (double)w[i] * dyr[i] * xr[i];
            dwref[i] += (double)dyr[i] * xr[i] * rs;
        }
        for (int64_t i = 0; i < d; i++)
            dxref[row * d + i] = rs * ((double)w[i] * dyr[i] - xr[i] * rs * rs * dot / (double)d);
    }
    CHECK_ERR(label, th_rel_err(y, yref, nd, 1e-6), 2e-6);
    CHECK_ERR(label, th_rel_err(rstd, rref, n, 1e-6), 2e-6);
    /* dx is a difference of two terms of size ~rstd*|w*dy| that nearly cancel when d is tiny (d = 1:
     * dx = rstd w dy eps/(x^2+eps)); f32 error is relative to the terms, not to the difference. */
    double term = 1e-6;
    for (int64_t row = 0; row < n; row++)
        for (int64_t i = 0; i < d; i++) term = fmax(term, rref[row] * fabs((double)w[i] * r[row * d + i]));
    CHECK_ERR(label, th_rel_err(dx, dxref, nd, term), 1e-5);
    CHECK_ERR(label, th_rel_err(dw, dwref, d, 1e-6), 1e-5);

    /* Finite differences of L = sum(y * r): dL/dx = dx, dL/dw = dw - dw0. */
    float *gw = th_alloc(d);
    for (int64_t i = 0; i < d; i++) gw[i] = dw[i] - dw0[i];
    ctx_t c = {x, w, y, rstd, r, n, d, eps};
    kc_fd_check(label, loss, &c, x, nd, dx, 24, 1e-3, 2e-2, seed);
    kc_fd_check(label, loss, &c, w, d, gw, 24, 1e-3, 2e-2, seed + 1);

    free(x), free(w), free(y), free(rstd), free(r), free(dx), free(dw), free(dw0), free(gw);
    free(yref), free(rref), free(dxref), free(dwref);
}

/* dw is reduced per column in row order, so it must not depend on the thread count. */
static void test_thread_invariance(void) {
    const int64_t n = 300, d = 384;
    float *x = th_alloc(n * d), *w = th_alloc(d), *dy = th_alloc(n * d), *y = th_alloc(n * d), *rstd = th_alloc(n);
    float *dx = th_alloc(n * d), *dw1 = th_alloc(d), *dw2 = th_alloc(d);
    th_fill(x, n * d, 5, 1, -1, 1);
    th_fill(w, d, 5, 2, -1, 1);
    th_fill(dy, n * d, 5, 3, -1, 1);
    zaya_rmsnorm_forward(y, rstd, x, w, n, d, 1e-5f);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    zaya_rmsnorm_backward(dx, dw1, dy, x, w, rstd, n, d);
    omp_set_num_threads(3);
    zaya_rmsnorm_backward(dx, dw2, dy, x, w, rstd, n, d);
    omp_set_num_threads(saved);
    CHECK(memcmp(dw1, dw2, (size_t)d * sizeof(float)) == 0, "rmsnorm dw differs between 1 and 3 threads");
    free(x), free(w), free(dy), free(y), free(rstd), free(dx), free(dw1), free(dw2);
}

int main(void) {
    test_thread_invariance();
    const int64_t shapes[][2] = {{1, 1}, {1, 3}, {3, 17}, {17, 129}, {5, 31}, {2, 256}, {64, 2048}, {7, 1000}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) run(shapes[i][0], shapes[i][1], 100 + i);
    return th_finish("test_rmsnorm");
}

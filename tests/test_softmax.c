/* Row softmax forward/backward against double references and finite differences. */
#include <stdlib.h>

#include "kernel_check.h"
#include "zaya/kernels.h"

typedef struct {
    float *x, *y, *r;
    int64_t n, d;
} ctx_t;

static double loss(void *p) {
    ctx_t *c = p;
    zaya_softmax_forward(c->y, c->x, c->n, c->d);
    return th_dot(c->y, c->r, c->n * c->d);
}

static void run(int64_t n, int64_t d, float spread, uint64_t seed) {
    char label[80];
    snprintf(label, sizeof label, "softmax n=%lld d=%lld spread=%g", (long long)n, (long long)d, spread);
    int64_t m = n * d;
    float *x = th_alloc(m), *y = th_alloc(m), *r = th_alloc(m), *dx = th_alloc(m);
    double *yref = th_alloc_d(m), *dref = th_alloc_d(m);
    th_fill(x, m, seed, 1, -spread, spread);
    th_fill(r, m, seed, 2, -1.0f, 1.0f);
    zaya_softmax_forward(y, x, n, d);
    zaya_softmax_backward(dx, r, y, n, d);
    for (int64_t row = 0; row < n; row++) {
        const float *xr = x + row * d;
        double mx = -INFINITY, s = 0, dot = 0;
        for (int64_t i = 0; i < d; i++) mx = fmax(mx, xr[i]);
        for (int64_t i = 0; i < d; i++) s += exp((double)xr[i] - mx);
        for (int64_t i = 0; i < d; i++) {
            yref[row * d + i] = exp((double)xr[i] - mx) / s;
            dot += yref[row * d + i] * r[row * d + i];
        }
        for (int64_t i = 0; i < d; i++) dref[row * d + i] = yref[row * d + i] * (r[row * d + i] - dot);
    }
    CHECK_ERR(label, th_rel_err(y, yref, m, 1e-6), 2e-6);
    CHECK_ERR(label, th_rel_err(dx, dref, m, 1e-6), 1e-5);
    if (spread <= 8.0f) {
        ctx_t c = {x, y, r, n, d};
        kc_fd_check(label, loss, &c, x, m, dx, 24, 1e-2, 1e-2, seed);
    }
    free(x), free(y), free(r), free(dx), free(yref), free(dref);
}

int main(void) {
    const int64_t sh[][2] = {{1, 1}, {3, 17}, {17, 129}, {5, 3}, {2, 31}, {64, 1000}};
    for (size_t i = 0; i < sizeof sh / sizeof sh[0]; i++) run(sh[i][0], sh[i][1], 4.0f, 1 + i);
    run(9, 17, 1e4f, 20); /* extreme logits: exp underflows to 0 except at the max, no NaN */
    float x[4] = {7, 7, 7, 7}, y[4];
    zaya_softmax_forward(y, x, 1, 4);
    CHECK(y[0] == 0.25f && y[3] == 0.25f, "constant row is uniform (%g)", y[0]);
    return th_finish("test_softmax");
}

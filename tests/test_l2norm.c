/* L2 normalisation to a scale with per-head multiplier: forward, dx, dmult, eps clamp. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "zaya/kernels.h"

typedef struct {
    float *x, *y, *inv, *mult, *r;
    float scale, eps;
    int64_t n, heads, hd;
} ctx_t;

static double loss(void *p) {
    ctx_t *c = p;
    zaya_l2norm_forward(c->y, c->inv, c->x, c->mult, c->scale, c->n, c->heads, c->hd, c->eps);
    return th_dot(c->y, c->r, c->n * c->heads * c->hd);
}

static void run(int64_t n, int64_t heads, int64_t hd, int use_mult, int clamp_one, uint64_t seed) {
    char label[96];
    snprintf(label, sizeof label, "l2norm n=%lld heads=%lld hd=%lld mult=%d clamp=%d", (long long)n, (long long)heads,
             (long long)hd, use_mult, clamp_one);
    const int64_t m = n * heads * hd, rows = n * heads;
    const float scale = sqrtf((float)hd), eps = 1e-4f;
    float *x = th_alloc(m), *y = th_alloc(m), *inv = th_alloc(rows), *r = th_alloc(m), *dx = th_alloc(m);
    float *mult = use_mult ? th_alloc(heads) : NULL, *dm = th_alloc(heads), *dm0 = th_alloc(heads);
    th_fill(x, m, seed, 1, -1.0f, 1.0f);
    th_fill(r, m, seed, 2, -1.0f, 1.0f);
    if (mult) th_fill(mult, heads, seed, 3, 0.5f, 4.0f);
    th_fill(dm0, heads, seed, 4, -1.0f, 1.0f);
    memcpy(dm, dm0, (size_t)heads * sizeof(float));
    if (clamp_one) /* one head of the last row has norm below eps: y = scale m x / eps */
        for (int64_t i = 0; i < hd; i++) x[m - hd + i] *= 1e-5f / sqrtf((float)hd);

    zaya_l2norm_forward(y, inv, x, mult, scale, n, heads, hd, eps);
    zaya_l2norm_backward(dx, use_mult ? dm : NULL, r, x, inv, mult, scale, n, heads, hd);

    double term = 1e-6; /* dx = a (dy - u (u . dy)) cancels (exactly 0 when hd = 1): judge vs a |dy| */
    double *yref = th_alloc_d(m), *iref = th_alloc_d(rows), *dxref = th_alloc_d(m), *dmref = th_alloc_d(heads);
    for (int64_t h = 0; h < heads; h++) dmref[h] = dm0[h];
    for (int64_t rh = 0; rh < rows; rh++) {
        const float *xr = x + rh * hd, *dyr = r + rh * hd;
        int64_t h = rh % heads;
        double ss = 0, dot = 0, mh = mult ? mult[h] : 1.0;
        for (int64_t i = 0; i < hd; i++) ss += (double)xr[i] * xr[i], dot += (double)xr[i] * dyr[i];
        double norm = sqrt(ss), iv = 1.0 / fmax(norm, eps), a = scale * mh * iv;
        iref[rh] = iv;
        for (int64_t i = 0; i < hd; i++) term = fmax(term, fabs(a * dyr[i]));
        for (int64_t i = 0; i < hd; i++) {
            yref[rh * hd + i] = a * xr[i];
            dxref[rh * hd + i] = norm > eps ? a * (dyr[i] - xr[i] * iv * iv * dot) : a * dyr[i];
        }
        dmref[h] += scale * iv * dot;
    }
    CHECK_ERR(label, th_rel_err(y, yref, m, 1e-6), 2e-6);
    CHECK_ERR(label, th_rel_err(inv, iref, rows, 1e-6), 2e-6);
    CHECK_ERR(label, th_rel_err(dx, dxref, m, term), 1e-5);
    if (use_mult)
        CHECK_ERR(label, th_rel_err(dm, dmref, heads, 1e-6), 1e-5);
    else
        CHECK(memcmp(dm, dm0, (size_t)heads * sizeof(float)) == 0, "%s: dmult NULL must not be touched", label);

    if (!clamp_one) {
        ctx_t c = {x, y, inv, mult, r, scale, eps, n, heads, hd};
        kc_fd_check(label, loss, &c, x, m, dx, 24, 1e-3, 2e-2, seed);
        if (use_mult) {
            float *g = th_alloc(heads);
            for (int64_t h = 0; h < heads; h++) g[h] = dm[h] - dm0[h];
            kc_fd_check(label, loss, &c, mult, heads, g, (int)heads, 1e-2, 1e-3, seed + 1);
            free(g);
        }
    }
    free(x), free(y), free(inv), free(r), free(dx), free(mult), free(dm), free(dm0);
    free(yref), free(iref), free(dxref), free(dmref);
}

int main(void) {
    for (int use_mult = 0; use_mult < 2; use_mult++) {
        run(1, 1, 1, use_mult, 0, 1);
        run(3, 2, 17, use_mult, 0, 2);
        run(17, 3, 129, use_mult, 0, 3);
        run(4, 8, 128, use_mult, 0, 4);
        run(2, 1, 3, use_mult, 0, 5);
        run(5, 2, 16, use_mult, 1, 6);
        run(64, 10, 128, use_mult, 0, 7); /* parallel path */
    }
    return th_finish("test_l2norm");
}

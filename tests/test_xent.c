/* Fused in-place softmax cross-entropy: losses against double log-softmax, gradient against
 * (softmax - onehot) * scale and finite differences, ignored rows, grad_scale = 0, extreme logits. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "zaya/kernels.h"

typedef struct {
    float *logits, *buf, *losses;
    const int32_t *tgt;
    int64_t n, V;
} ctx_t;

/* Sum of the per-row losses (grad_scale 0: the kernel leaves buf untouched). */
static double loss(void *p) {
    ctx_t *c = p;
    memcpy(c->buf, c->logits, (size_t)(c->n * c->V) * sizeof(float));
    zaya_xent_forward_backward(c->buf, c->losses, c->tgt, c->n, c->V, 0.0f);
    double s = 0;
    for (int64_t i = 0; i < c->n; i++) s += c->losses[i];
    return s;
}

static void run(int64_t n, int64_t V, float spread, float gs, uint64_t seed) {
    char label[96];
    snprintf(label, sizeof label, "xent n=%lld V=%lld spread=%g scale=%g", (long long)n, (long long)V, spread, gs);
    int64_t m = n * V;
    float *x = th_alloc(m), *g = th_alloc(m), *loss_k = th_alloc(n), *loss0 = th_alloc(n), *buf = th_alloc(m);
    int32_t *tgt = malloc((size_t)n * sizeof(int32_t));
    double *lref = th_alloc_d(n), *gref = th_alloc_d(m);
    th_fill(x, m, seed, 1, -spread, spread);
    int64_t expect = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = zaya_rng_u32_at(seed, 2, (uint64_t)i);
        tgt[i] = (n > 1 && u % 4 == 0) ? -1 : (int32_t)(u % (uint64_t)V); /* ~1/4 of rows ignored */
        expect += tgt[i] >= 0;
    }
    if (n > 2) tgt[0] = -100; /* any negative target is ignored */
    expect -= n > 2 && zaya_rng_u32_at(seed, 2, 0) % 4 != 0;
    for (int64_t i = 0; i < n; i++) {
        const float *xr = x + i * V;
        if (tgt[i] < 0) continue;
        double mx = -INFINITY, s = 0;
        for (int64_t j = 0; j < V; j++) mx = fmax(mx, xr[j]);
        for (int64_t j = 0; j < V; j++) s += exp((double)xr[j] - mx);
        double lse = mx + log(s);
        lref[i] = lse - xr[tgt[i]];
        for (int64_t j = 0; j < V; j++) gref[i * V + j] = gs * (exp((double)xr[j] - lse) - (j == tgt[i]));
    }

    /* grad_scale 0: losses only, logits bit-identical afterwards. */
    memcpy(buf, x, (size_t)m * sizeof(float));
    int64_t cnt0 = zaya_xent_forward_backward(buf, loss0, tgt, n, V, 0.0f);
    CHECK(memcmp(buf, x, (size_t)m * sizeof(float)) == 0, "%s: grad_scale 0 leaves logits untouched", label);
    CHECK(cnt0 == expect, "%s: counted %lld rows, expected %lld", label, (long long)cnt0, (long long)expect);

    memcpy(g, x, (size_t)m * sizeof(float));
    int64_t cnt = zaya_xent_forward_backward(g, loss_k, tgt, n, V, gs);
    CHECK(cnt == expect, "%s: counted %lld rows, expected %lld", label, (long long)cnt, (long long)expect);
    double lerr = 0;
    int finite = 1;
    for (int64_t i = 0; i < n; i++) {
        lerr = fmax(lerr, fabs(loss_k[i] - lref[i]) / fmax(1.0, fabs(lref[i])));
        lerr = fmax(lerr, fabs(loss0[i] - lref[i]) / fmax(1.0, fabs(lref[i])));
    }
    for (int64_t i = 0; i < m; i++) finite &= isfinite(g[i]);
    CHECK(finite, "%s: gradient finite", label);
    CHECK_ERR(label, lerr, 2e-6);
    int zero_rows = 1; /* ignored rows: loss 0 always, gradient row 0 unless grad_scale is 0 */
    for (int64_t i = 0; i < n; i++)
        if (tgt[i] < 0) {
            zero_rows &= loss_k[i] == 0.0f && loss0[i] == 0.0f;
            for (int64_t j = 0; j < V && gs != 0.0f; j++) zero_rows &= g[i * V + j] == 0.0f;
        }
    CHECK(zero_rows, "%s: ignored rows have zero loss and gradient", label);
    if (gs == 0.0f) {
        CHECK(memcmp(g, x, (size_t)m * sizeof(float)) == 0, "%s: grad_scale 0 leaves logits untouched", label);
    } else {
        CHECK_ERR(label, th_rel_err(g, gref, m, 1e-6), 2e-6);
        if (spread < 100.0f) {
            /* dL/dx = g / grad_scale. */
            float *gu = th_alloc(m);
            for (int64_t i = 0; i < m; i++) gu[i] = g[i] / gs;
            ctx_t c = {x, buf, loss0, tgt, n, V};
            kc_fd_check(label, loss, &c, x, m, gu, 24, 1e-2, 2e-3, seed);
            free(gu);
        }
    }
    free(x), free(g), free(loss_k), free(loss0), free(buf), free(tgt), free(lref), free(gref);
}

static void test_extremes(void) {
    /* Logits at +-1e4: the target far below the max gives loss 2e4 exactly, nothing overflows. */
    const int64_t V = 37;
    float x[2 * 37];
    int32_t tgt[2] = {5, 6};
    float losses[2];
    for (int64_t j = 0; j < V; j++) {
        x[j] = j == 0 ? 1e4f : -1e4f;      /* row 0: one maximum at 0, target 5 at -1e4 */
        x[V + j] = j % 2 ? -1e4f : 1e4f;  /* row 1: 19 equal maxima at even j, target 6 among them */
    }
    int64_t cnt = zaya_xent_forward_backward(x, losses, tgt, 2, V, 1.0f);
    CHECK(cnt == 2, "extremes: both rows counted");
    CHECK(losses[0] == 2e4f, "extremes: loss of a -1e4 target under a +1e4 logit is 2e4 (got %g)", losses[0]);
    CHECK(fabsf(losses[1] - logf(19.0f)) < 1e-5f, "extremes: loss log(19) (got %g)", losses[1]);
    int finite = 1;
    for (int64_t j = 0; j < 2 * V; j++) finite &= isfinite(x[j]);
    CHECK(finite, "extremes: finite gradient");
    CHECK(x[0] == 1.0f && x[5] == -1.0f && x[1] == 0.0f, "extremes: row 0 gradient (%g, %g, %g)", x[0], x[5], x[1]);
    CHECK(fabsf(x[V + 6] - (1.0f / 19.0f - 1.0f)) < 1e-6f && fabsf(x[V] - 1.0f / 19.0f) < 1e-6f && x[V + 1] == 0.0f,
          "extremes: row 1 gradient (%g, %g)", x[V + 6], x[V]);
}

int main(void) {
    run(1, 1, 1.0f, 1.0f, 1);
    run(3, 3, 2.0f, 1.0f, 2);
    run(17, 17, 4.0f, 0.5f, 3);
    run(5, 129, 4.0f, 1.0f / 5, 4);
    run(4, 1000, 8.0f, 1.0f, 5);
    run(3, 50001, 3.0f, 0.25f, 6);  /* parallel path, V not a multiple of the vector width */
    run(6, 257, 1e4f, 1.0f, 7);     /* extreme random logits */
    run(8, 64, 2.0f, 0.0f, 8);      /* grad_scale 0 with ignored rows */
    test_extremes();
    return th_finish("test_xent");
}

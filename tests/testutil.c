#include "testutil.h"

#include <stdlib.h>
#include <string.h>

#include "zaya/model.h"
#include "zaya/rng.h"

int th_failures = 0;
int th_checks = 0;

int th_finish(const char *name) {
    printf("%s: %d checks, %d failed\n", name, th_checks, th_failures);
    return th_failures ? 1 : 0;
}

void th_fill(float *x, int64_t n, uint64_t seed, uint64_t stream, float lo, float hi) {
    zaya_rng_fill_uniform(x, (size_t)n, seed, stream, 0, lo, hi);
}

float *th_alloc(int64_t n) {
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    if (!p) abort();
    return p;
}

double *th_alloc_d(int64_t n) {
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!p) abort();
    return p;
}

void th_to_double(double *dst, const float *src, int64_t n) {
    for (int64_t i = 0; i < n; i++) dst[i] = src[i];
}

double th_rel_err(const float *a, const double *ref, int64_t n, double floor) {
    double maxref = floor, maxdiff = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(ref[i]) > maxref) maxref = fabs(ref[i]);
        double d = fabs((double)a[i] - ref[i]);
        if (!(d <= maxdiff)) maxdiff = d; /* NaN propagates as failure */
    }
    return maxdiff / maxref;
}

double th_rel_err_ff(const float *a, const float *b, int64_t n, double floor) {
    double maxref = floor, maxdiff = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(b[i]) > maxref) maxref = fabs(b[i]);
        double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= maxdiff)) maxdiff = d;
    }
    return maxdiff / maxref;
}

double th_fd(th_loss_fn loss, void *ctx, float *x, int64_t i, double h) {
    float saved = x[i];
    x[i] = (float)(saved + h);
    double lp = loss(ctx);
    x[i] = (float)(saved - h);
    double lm = loss(ctx);
    x[i] = saved;
    /* Use the step actually representable in float for the denominator. */
    double step = (double)(float)(saved + h) - (double)(float)(saved - h);
    return (lp - lm) / step;
}

double th_dot(const float *y, const float *r, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += (double)y[i] * r[i];
    return s;
}

void th_randomize_model(struct zaya_model *m, uint64_t seed) {
    for (int i = 0; i < m->ntensors; i++) {
        const zaya_tensor_info *t = &m->tensors[i];
        float *w = m->params + t->offset;
        for (int64_t j = 0; j < t->numel; j++) {
            float u = zaya_rng_uniform_at(seed, (uint64_t)i, (uint64_t)j) * 2.0f - 1.0f;
            if (t->opt == ZAYA_OPT_NONE) w[j] = 0.02f * u;
            else if (t->ndim == 1 && strstr(t->name, "bias")) w[j] = 0.2f * u;
            else if (t->ndim == 1) w[j] = 1.0f + 0.3f * u;
            else w[j] = 0.4f * u;
        }
    }
    zaya_model_sync_weights(m);
}

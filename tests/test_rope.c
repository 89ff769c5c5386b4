/* Partial rotate-half RoPE: table accuracy, forward against double, backward = inverse rotation,
 * finite differences, untouched tail dims. */
#include <stdlib.h>
#include <string.h>

#include "kernel_check.h"
#include "zaya/kernels.h"

typedef struct {
    const zaya_rope_table *t;
    const int32_t *pos;
    float *x, *buf, *r;
    int64_t n, heads, hd;
} ctx_t;

static double loss(void *p) {
    ctx_t *c = p;
    int64_t m = c->n * c->heads * c->hd;
    memcpy(c->buf, c->x, (size_t)m * sizeof(float));
    zaya_rope_forward(c->buf, c->t, c->pos, c->n, c->heads, c->hd);
    return th_dot(c->buf, c->r, m);
}

/* Rotation by sign * angle in double. */
static void rope_ref(double *out, const float *x, const int32_t *pos, int64_t n, int64_t heads, int64_t hd,
                     int64_t rot, double theta, double sign) {
    int64_t half = rot / 2;
    for (int64_t row = 0; row < n; row++)
        for (int64_t h = 0; h < heads; h++) {
            const float *xr = x + (row * heads + h) * hd;
            double *o = out + (row * heads + h) * hd;
            for (int64_t i = 0; i < hd; i++) o[i] = xr[i];
            for (int64_t i = 0; i < half; i++) {
                double ang = sign * pos[row] * pow(theta, -2.0 * (double)i / (double)rot);
                o[i] = xr[i] * cos(ang) - xr[i + half] * sin(ang);
                o[i + half] = xr[i + half] * cos(ang) + xr[i] * sin(ang);
            }
        }
}

static void run(int64_t n, int64_t heads, int64_t hd, int64_t rot, double theta, uint64_t seed) {
    char label[96];
    snprintf(label, sizeof label, "rope n=%lld heads=%lld hd=%lld rot=%lld", (long long)n, (long long)heads,
             (long long)hd, (long long)rot);
    const int64_t max_pos = 4096, m = n * heads * hd;
    zaya_rope_table t;
    CHECK(zaya_rope_table_init(&t, max_pos, rot, theta) == 0, "%s: table init", label);
    int32_t *pos = malloc((size_t)n * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) pos[i] = (int32_t)(zaya_rng_u32_at(seed, 9, (uint64_t)i) % max_pos);
    pos[n - 1] = (int32_t)(max_pos - 1);
    float *x = th_alloc(m), *y = th_alloc(m), *r = th_alloc(m), *g = th_alloc(m), *buf = th_alloc(m);
    double *ref = th_alloc_d(m);
    th_fill(x, m, seed, 1, -1.0f, 1.0f);
    th_fill(r, m, seed, 2, -1.0f, 1.0f);

    memcpy(y, x, (size_t)m * sizeof(float));
    zaya_rope_forward(y, &t, pos, n, heads, hd);
    rope_ref(ref, x, pos, n, heads, hd, rot, theta, 1.0);
    CHECK_ERR(label, th_rel_err(y, ref, m, 1e-6), 1e-6);
    int tail_same = 1;
    for (int64_t rh = 0; rh < n * heads; rh++)
        for (int64_t i = rot; i < hd; i++) tail_same &= y[rh * hd + i] == x[rh * hd + i];
    CHECK(tail_same, "%s: dims >= rot_dims must be untouched", label);

    /* Backward is R^T: against the double rotation by -angle, and it undoes the forward. */
    memcpy(g, r, (size_t)m * sizeof(float));
    zaya_rope_backward(g, &t, pos, n, heads, hd);
    rope_ref(ref, r, pos, n, heads, hd, rot, theta, -1.0);
    CHECK_ERR(label, th_rel_err(g, ref, m, 1e-6), 1e-6);
    zaya_rope_backward(y, &t, pos, n, heads, hd);
    CHECK_ERR(label, th_rel_err_ff(y, x, m, 1e-6), 1e-6);

    ctx_t c = {&t, pos, x, buf, r, n, heads, hd};
    kc_fd_check(label, loss, &c, x, m, g, 24, 1e-2, 1e-3, seed);

    zaya_rope_table_free(&t);
    free(pos), free(x), free(y), free(r), free(g), free(buf), free(ref);
}

static void test_table(void) {
    /* Angles are formed in double, so even the last of 131072 positions is accurate to f32 rounding. */
    zaya_rope_table t;
    CHECK(zaya_rope_table_init(&t, 131072, 64, 5e6) == 0, "table init");
    double err = 0;
    for (int64_t p = 131000; p < 131072; p++)
        for (int64_t i = 0; i < 32; i++) {
            double ang = (double)p * pow(5e6, -2.0 * (double)i / 64.0);
            err = fmax(err, fabs(t.cos[p * 32 + i] - cos(ang)));
            err = fmax(err, fabs(t.sin[p * 32 + i] - sin(ang)));
        }
    CHECK_ERR("rope table at large positions", err, 1e-7);
    CHECK(t.cos[0] == 1.0f && t.sin[0] == 0.0f, "position 0 is the identity");
    zaya_rope_table_free(&t);
    CHECK(zaya_rope_table_init(&t, 16, 3, 1e4) != 0 && t.cos == NULL, "odd rot_dims rejected");
    CHECK(zaya_rope_table_init(&t, 0, 4, 1e4) != 0, "max_pos 0 rejected");
}

int main(void) {
    test_table();
    run(1, 1, 2, 2, 1e4, 1);
    run(3, 2, 8, 4, 1e4, 2);
    run(17, 3, 10, 6, 1e6, 3);
    run(5, 8, 128, 64, 5e6, 4);
    run(4, 1, 34, 34, 1e4, 5);
    run(129, 2, 20, 18, 1e4, 6);
    run(64, 10, 128, 64, 5e6, 7); /* large enough to run the parallel path */
    return th_finish("test_rope");
}

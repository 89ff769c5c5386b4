/* Partial rotary position embedding, rotate-half pairing (i, i + rot_dims/2) within each head. */
#include <math.h>

#include "kernel_util.h"
#include "zaya/alloc.h"
#include "zaya/kernels.h"
#include "zaya/status.h"

int zaya_rope_table_init(zaya_rope_table *t, int64_t max_pos, int64_t rot_dims, double theta) {
    memset(t, 0, sizeof *t);
    if (max_pos <= 0 || rot_dims <= 0 || rot_dims % 2 != 0 || !(theta > 1.0)) {
        zaya_error_set(ZAYA_EINVAL, "rope table: need max_pos > 0, even rot_dims > 0, theta > 1 (got %lld, %lld, %g)",
                       (long long)max_pos, (long long)rot_dims, theta);
        return -1;
    }
    int64_t half = rot_dims / 2;
    if (max_pos > INT64_MAX / 8 / half) {
        zaya_error_set(ZAYA_ERANGE, "rope table: %lld x %lld entries overflow", (long long)max_pos, (long long)half);
        return -1;
    }
    size_t count = (size_t)(max_pos * half);
    t->cos = zaya_malloc(count * sizeof(float));
    t->sin = zaya_malloc(count * sizeof(float));
    if (!t->cos || !t->sin) {
        zaya_rope_table_free(t);
        zaya_error_set(ZAYA_ENOMEM, "rope table: cannot allocate 2 x %zu floats", count);
        return -1;
    }
    t->max_pos = max_pos;
    t->rot_dims = rot_dims;
    t->theta = theta;
    /* Angles in double: at position 1e5 an f32 angle would already be off by ~0.004 rad. */
#pragma omp parallel if (count >= (size_t)ZAYA_PAR_MIN_WORK)
    for (int64_t i = 0; i < half; i++) {
        double inv_freq = pow(theta, -2.0 * (double)i / (double)rot_dims);
#pragma omp for schedule(static) nowait
        for (int64_t p = 0; p < max_pos; p++) {
            double angle = (double)p * inv_freq;
            t->cos[p * half + i] = (float)cos(angle);
            t->sin[p * half + i] = (float)sin(angle);
        }
    }
    return 0;
}

void zaya_rope_table_free(zaya_rope_table *t) {
    zaya_free(t->cos);
    zaya_free(t->sin);
    t->cos = t->sin = NULL;
    t->max_pos = t->rot_dims = 0;
}

/* Rotates every head of every row by +angle (sign = 1) or by -angle (sign = -1, the transpose). */
static void rope_apply(float *x, const zaya_rope_table *t, const int32_t *pos, int64_t n, int64_t heads,
                       int64_t head_dim, float sign) {
    const int64_t half = t->rot_dims / 2;
    ZAYA_ASSERT(t->rot_dims <= head_dim);
#pragma omp parallel for schedule(static) if (n * heads * t->rot_dims >= ZAYA_PAR_MIN_WORK)
    for (int64_t r = 0; r < n; r++) {
        int64_t p = pos[r];
        ZAYA_ASSERT(p >= 0 && p < t->max_pos);
        const float *c = t->cos + p * half, *s = t->sin + p * half;
        for (int64_t h = 0; h < heads; h++) {
            float *x1 = x + (r * heads + h) * head_dim, *x2 = x1 + half;
#pragma omp simd
            for (int64_t i = 0; i < half; i++) {
                float a = x1[i], b = x2[i], si = sign * s[i];
                x1[i] = a * c[i] - b * si;
                x2[i] = b * c[i] + a * si;
            }
        }
    }
}

void zaya_rope_forward(float *x, const zaya_rope_table *t, const int32_t *pos, int64_t n, int64_t heads,
                       int64_t head_dim) {
    rope_apply(x, t, pos, n, heads, head_dim, 1.0f);
}

/* R is orthogonal, so R^T dy is the rotation by the negated angle. */
void zaya_rope_backward(float *dx, const zaya_rope_table *t, const int32_t *pos, int64_t n, int64_t heads,
                        int64_t head_dim) {
    rope_apply(dx, t, pos, n, heads, head_dim, -1.0f);
}

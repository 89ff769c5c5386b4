/* Gradient checks shared by the kernel tests (header-only; tests/test_*.c include it). */
#ifndef ZAYA_KERNEL_CHECK_H
#define ZAYA_KERNEL_CHECK_H

#include <math.h>
#include <stdint.h>

#include "testutil.h"
#include "zaya/rng.h"

/* Compares grad[i] with the central difference of loss() for `samples` indices of param (always the
 * first and last, the rest drawn at random), all against the largest |grad| seen (floor 1e-3):
 * fails when max |fd - grad| / scale > tol. Returns that error. */
static inline double kc_fd_check(const char *label, th_loss_fn loss, void *ctx, float *param, int64_t count,
                                 const float *grad, int samples, double h, double tol, uint64_t seed) {
    double scale = 1e-3, maxdiff = 0;
    for (int64_t i = 0; i < count; i++)
        if (fabs(grad[i]) > scale) scale = fabs(grad[i]);
    int64_t worst = -1;
    double worst_fd = 0;
    for (int s = 0; s < samples && s < count; s++) {
        int64_t i = s == 0 ? 0 : s == 1 ? count - 1 : (int64_t)(zaya_rng_u32_at(seed, 77, (uint64_t)s) % (uint64_t)count);
        double fd = th_fd(loss, ctx, param, i, h);
        double diff = fabs(fd - grad[i]);
        if (!(diff <= maxdiff)) {
            maxdiff = diff;
            worst = i;
            worst_fd = fd;
        }
    }
    double err = maxdiff / scale;
    CHECK(err <= tol, "%s: finite-difference error %.3e exceeds %.1e (index %lld: fd %.6g vs grad %.6g)", label, err,
          tol, (long long)worst, worst_fd, worst >= 0 ? (double)grad[worst] : 0.0);
    return err;
}

/* For "+=" outputs: the kernel ran on a buffer holding `before`; returns after - before into out. */
static inline void kc_delta(float *out, const float *after, const float *before, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = after[i] - before[i];
}

#endif

/* Minimal test harness shared by every tests/test_*.c: checks that count failures, random data from
 * the counter-based RNG, error metrics against double-precision references, and central finite
 * differences. A test's main() returns th_finish(), non-zero when any check failed. */
#ifndef ZAYA_TESTUTIL_H
#define ZAYA_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

extern int th_failures;
extern int th_checks;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        th_checks++;                                                              \
        if (!(cond)) {                                                            \
            th_failures++;                                                        \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
        }                                                                         \
    } while (0)

/* Fails when err > tol; prints the label and both numbers either way at verbose level. */
#define CHECK_ERR(label, err, tol) CHECK((err) <= (tol), "%s: error %.3e exceeds %.1e", (label), (double)(err), (double)(tol))

int th_finish(const char *name);

/* Uniform in [lo, hi) from (seed, stream). */
void th_fill(float *x, int64_t n, uint64_t seed, uint64_t stream, float lo, float hi);
float *th_alloc(int64_t n);              /* zeroed, aborts on failure */
double *th_alloc_d(int64_t n);           /* zeroed */
void th_to_double(double *dst, const float *src, int64_t n);

/* max_i |a_i - ref_i| / max(max_i |ref_i|, floor): error relative to the tensor's magnitude. */
double th_rel_err(const float *a, const double *ref, int64_t n, double floor);
double th_rel_err_ff(const float *a, const float *b, int64_t n, double floor);

/* Central difference of loss() with respect to x[i]: (L(x+h) - L(x-h)) / 2h, restoring x[i]. */
typedef double (*th_loss_fn)(void *ctx);
double th_fd(th_loss_fn loss, void *ctx, float *x, int64_t i, double h);

/* Random projection loss helper: sum_i y[i] * r[i] in double. */
double th_dot(const float *y, const float *r, int64_t n);

/* Every parameter and buffer of a model random and non-trivial (scales around 1, biases, key
 * temperatures, balancing biases), so that a wrong index or a missing term shows in some output. */
struct zaya_model;
void th_randomize_model(struct zaya_model *m, uint64_t seed);

#endif

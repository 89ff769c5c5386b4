/* Matrix multiplication through oneDNN.
 *
 *   C[b] = alpha * op(A[b]) * op(B[b]) + beta * C[b]      for b in 0..batch-1
 *
 * op(X) is X or X^T (trans flags). All matrices are row-major; lda/ldb/ldc are the row strides
 * (in elements) of the matrices as stored, so lda >= (trans_a ? m : k) etc. A and B share one
 * input dtype (f32, or bf16 with f32 accumulation); C is always f32. beta is 0 (overwrite) or 1
 * (accumulate: gradient accumulation). Batched operands are `stride_*` elements apart (0 selects
 * the dense default rows*ld); a stride must cover one whole matrix so batch elements never overlap.
 * op(A)/op(B) and the strides are expressed in oneDNN memory descriptors: nothing is copied.
 *
 * oneDNN primitives are created once per distinct descriptor and cached, so the creation cost is
 * paid on the first call of each shape only. The cache is process-wide and thread-safe; calls run on
 * the OpenMP pool (zaya_threads_init). */
#ifndef ZAYA_MATMUL_H
#define ZAYA_MATMUL_H

#include <stdint.h>

#include "zaya/dtype.h"
#include "zaya/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zaya_matmul_desc {
    zaya_dtype dtype;
    int trans_a, trans_b;
    int64_t m, n, k;
    int64_t lda, ldb, ldc; /* 0 selects the dense default */
    int64_t batch;         /* 0 or 1: single product */
    int64_t stride_a, stride_b, stride_c;
    float alpha; /* 0 is treated as 1 so that a zero-initialised desc is a plain product */
    float beta;  /* 0 or 1 */
    /* ZAYA_MATMUL_DYN_* bits: dimensions that change from call to call (an expert's token count).
     * The primitive is created with those dimensions left to run time, so one cache entry serves
     * every value (no primitive creation in the training loop); 0: every dimension fixed (the faster
     * kernels where the shape repeats). Single products only (batch <= 1). The results of a call are
     * then a function of its shape alone, as for fixed shapes. */
    int dynamic;
} zaya_matmul_desc;
enum { ZAYA_MATMUL_DYN_M = 1, ZAYA_MATMUL_DYN_N = 2, ZAYA_MATMUL_DYN_K = 4 };

zaya_status zaya_matmul(const zaya_matmul_desc *d, const void *a, const void *b, float *c);

/* Shorthand for the common dense f32 case: C(m x n) = op(A) op(B) + beta*C. Asserts on failure
 * (shapes come from the program, not the user). */
void zaya_matmul_f32(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const float *a, const float *b,
                     float *c, float beta);
/* Same with bf16 inputs (uint16_t storage, see bf16.h) and f32 output. */
void zaya_matmul_bf16(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const uint16_t *a,
                      const uint16_t *b, float *c, float beta);

/* zaya_matmul_f32 / zaya_matmul_bf16 (dtype) with the dimensions in `dynamic` (ZAYA_MATMUL_DYN_*)
 * left to run time: one cached primitive for every value of them. */
void zaya_matmul_dynamic(zaya_dtype dtype, int dynamic, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                         const void *a, const void *b, float *c, float beta);

/* Dense batched product: C[i] = alpha op(A[i]) op(B[i]) + beta C[i] for i < batch, the matrices of each
 * operand packed back to back (strides m*k, k*n, m*n); dtype F32 (float inputs) or BF16 (uint16_t
 * inputs), C in f32. One oneDNN call on the whole thread pool. Each C[i] equals, bit for bit, the single
 * product on the same operands (oneDNN's matmul kernels keep one matrix's k reduction in one place and
 * order whatever the batch; tests/test_matmul.c checks it at the Newton-Schulz shapes). Asserts on
 * failure (shapes come from the program). */
void zaya_matmul_batched(zaya_dtype dtype, int trans_a, int trans_b, int64_t batch, int64_t m, int64_t n, int64_t k,
                         const void *a, const void *b, float *c, float alpha, float beta);

/* Validates d and writes a copy with every default resolved (ld, strides, batch >= 1, alpha).
 * Invalid descriptors give ZAYA_EINVAL naming the field. */
zaya_status zaya_matmul_resolve(const zaya_matmul_desc *d, zaya_matmul_desc *out);
/* Name of the oneDNN implementation chosen for d (e.g. "brg:avx512_core"); creates and caches the
 * primitive if needed. The string lives as long as the cache entry. */
zaya_status zaya_matmul_impl_name(const zaya_matmul_desc *d, const char **name);

/* Per-call memory objects: 1 (default) reuses memory objects cached with each primitive and swaps
 * the data pointers in; 0 creates and destroys them on every call. Exposed so the benchmark can
 * measure the difference; both are correct under concurrent calls. */
void zaya_matmul_set_reuse_memory(int on);

/* 1 when this host's oneDNN has a bf16 matmul (AVX-512 or AMX hosts); 0 when bf16 descriptors run
 * on the f32 kernels with their operands widened first (same products, f32 sums: see matmul.c). */
int zaya_matmul_has_native_bf16(void);

/* Number of cached primitives (for tests and the benchmark), and a way to drop them. */
int zaya_matmul_cache_size(void);
void zaya_matmul_cache_clear(void);

#ifdef __cplusplus
}
#endif

#endif

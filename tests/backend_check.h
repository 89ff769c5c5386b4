/* Backend-generic operation check (tests/backend_check.c): every operation of zaya/backend.h run on a
 * backend under test and on a reference backend (the CPU one) with the same random inputs, uploaded
 * to each; the outputs are downloaded and compared. Each check reports the largest error over its
 * outputs, max |test - ref| / max(max |ref|, 1e-3) per output tensor, against a bound of its own
 * (integer outputs and copies: exact). Used by tests/gpu/test_backend_cuda.c (CUDA against CPU) and
 * tests/backend_check_cpu.c (the harness against itself, with one operation broken on purpose). */
#ifndef ZAYA_TESTS_BACKEND_CHECK_H
#define ZAYA_TESTS_BACKEND_CHECK_H

#include <stdio.h>

#include "zaya/backend.h"

/* Number of checks; the name of check i (an operation of the table, "memory" for the memory calls,
 * a suffix where one operation has several: "gemm_bf16"). */
int zaya_backend_check_count(void);
const char *zaya_backend_check_name(int i);
/* Runs check i on both backends: *err is its largest error, *bound its bound. Returns 1 when the
 * error is within the bound, 0 when not, -1 when a backend call failed (zaya_error_message()). */
/* The operation (zaya_backend_op) check i covers, -1 for "memory"; the first operation of the list no
 * check covers, -1 when every one is. A check of an operation a backend does not implement (its slot
 * empty) fails with a message naming both. */
int zaya_backend_check_op_of(int i);
int zaya_backend_check_uncovered(void);
int zaya_backend_check_op(zaya_backend *test, zaya_backend *ref, int i, double *err, double *bound);
/* Every check, one table row each (name, error, bound, ok / FAIL) to log (NULL: silent); returns the
 * number of checks that failed or could not run. */
int zaya_backend_check_all(zaya_backend *test, zaya_backend *ref, FILE *log);

#endif

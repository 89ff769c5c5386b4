/* Monotonic wall-clock time. Out of line (src/core/timer.c): CLOCK_MONOTONIC is POSIX, not ISO C, so
 * this header needs no feature-test macro from its includer. */
#ifndef ZAYA_TIMER_H
#define ZAYA_TIMER_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t zaya_now_ns(void);
static inline double zaya_now_s(void) { return (double)zaya_now_ns() * 1e-9; }

#ifdef __cplusplus
}
#endif

#endif

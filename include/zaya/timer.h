/* Monotonic wall-clock time. */
#ifndef ZAYA_TIMER_H
#define ZAYA_TIMER_H

#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline uint64_t zaya_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static inline double zaya_now_s(void) { return (double)zaya_now_ns() * 1e-9; }

#ifdef __cplusplus
}
#endif

#endif

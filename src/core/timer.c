/* zaya/timer.h: the monotonic clock (POSIX clock_gettime; the build defines _GNU_SOURCE). */
#include "zaya/timer.h"

uint64_t zaya_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#include "zaya/threads.h"

#include <omp.h>

static int g_threads = 0;

int zaya_threads_init(int n) {
    if (n <= 0) n = omp_get_num_procs();
    if (n < 1) n = 1;
    /* oneDNN built on OpenMP reads omp_get_max_threads() at execution time, so this one call sets
     * the pool for zaya's loops and for every matmul primitive. */
    omp_set_num_threads(n);
    g_threads = n;
    return n;
}

int zaya_threads_get(void) { return g_threads > 0 ? g_threads : omp_get_max_threads(); }

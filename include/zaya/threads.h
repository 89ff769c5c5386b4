/* One thread pool: zaya's kernels and oneDNN both run on the same OpenMP runtime, so the thread
 * count set here governs both. */
#ifndef ZAYA_THREADS_H
#define ZAYA_THREADS_H

#ifdef __cplusplus
extern "C" {
#endif

/* n <= 0 selects all available cores. Returns the count in effect. */
int zaya_threads_init(int n);
int zaya_threads_get(void);

#ifdef __cplusplus
}
#endif

#endif

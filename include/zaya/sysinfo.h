/* Facts about the machine that results files record. */
#ifndef ZAYA_SYSINFO_H
#define ZAYA_SYSINFO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "model name" from /proc/cpuinfo, or "unknown". */
void zaya_sysinfo_cpu_model(char *buf, size_t cap);
/* Peak resident set size of this process so far (getrusage ru_maxrss), in bytes; -1 if unknown. */
int64_t zaya_sysinfo_peak_rss_bytes(void);

#ifdef __cplusplus
}
#endif

#endif

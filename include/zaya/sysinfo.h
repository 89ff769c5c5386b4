/* Facts about the machine that results files record. */
#ifndef ZAYA_SYSINFO_H
#define ZAYA_SYSINFO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "model name" from /proc/cpuinfo, or "unknown". */
void zaya_sysinfo_cpu_model(char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif
